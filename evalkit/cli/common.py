"""What every command shares: the clear-error wrapper and the --config / --db options."""

from __future__ import annotations

import functools
import sys

import click

from ..errors import EvalkitError


def database_error(e: Exception) -> EvalkitError:
    """An sqlite3 error that reached a command (a file made read-only, a table dropped by hand), said with the
    command's database, what it means and a fix, instead of a traceback."""
    params = click.get_current_context(silent=True)
    path = db_file(params.params.get("db_path") if params is not None else None)
    text = str(e)
    if "readonly" in text or "read-only" in text:
        from ..store.database import read_only

        return read_only(path, text)
    if text.startswith(("no such table", "no such column")):
        return EvalkitError(f"database {path} lacks part of evalkit's tables ({text}), though its migrations say "
                            "they are all there: the file was changed outside evalkit",
                            "restore it from a backup, or pass --db a new file to start again")
    return EvalkitError(f"database {path}: {text}", "check that the file is an evalkit database and has free space; "
                        "move it aside to start a new one")


def _errors_as(label: str):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            import sqlite3

            from ..progress import close_bars

            try:
                return fn(*args, **kwargs)
            except EvalkitError as e:
                close_bars()  # the message on a line of its own, not at the end of a bar's
                click.echo(f"{label}: {e}", err=True)
                sys.exit(1)
            except sqlite3.OperationalError as e:  # a file it cannot use as it is, not a bug (those keep their trace)
                close_bars()
                click.echo(f"{label}: {database_error(e)}", err=True)
                sys.exit(1)

        return wrapper

    return decorate


# Library errors, and a database the command cannot use as it is, become one clear message and exit code 1; nothing
# else is swallowed.
fail_clearly = _errors_as("Error")


config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), default=None,
    help="Config TOML (default: configs/demo.toml, the offline demo pair; env EVALKIT_CONFIG).",
)
db_option = click.option(
    "--db", "db_path", type=click.Path(dir_okay=False), default=None,
    help="SQLite file (default: results/evalkit.db; env EVALKIT_DB or EVALKIT_DATA_DIR).",
)


def load_cfg(config_path):
    from ..config import load_config

    return load_config(config_path)


def db_file(db_path):
    """The database file a command works on: --db, else the default (locations.db_path)."""
    from pathlib import Path

    from ..locations import db_path as default_db_path

    return Path(db_path) if db_path else default_db_path()


def open_study_db(db_path, must_exist: bool = False):
    from ..store import open_db

    path = db_file(db_path)
    if must_exist and not path.exists():  # reading a study: a typo must not become a new, empty database
        raise EvalkitError(f"database {path} does not exist",
                           "pass --db (or set EVALKIT_DB) with the study's database; `evalkit generate` creates one")
    if must_exist and path.is_file() and path.stat().st_size == 0:  # SQLite would take it as new and fill it
        raise EvalkitError(f"database {path} is an empty file, not a study's database",
                           "pass --db (or set EVALKIT_DB) with the study's database; `evalkit generate` creates one")
    return open_db(path)


def csv_of(kind):
    """A click callback: comma-separated values of one type."""

    def parse(_ctx, _param, value):
        if value is None:  # the option was not given: the config decides
            return None
        try:
            return [kind(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise click.BadParameter(f"expected comma-separated {kind.__name__} values, got {value!r}")

    return parse
