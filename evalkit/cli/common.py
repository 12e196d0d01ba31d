"""What every command shares: the clear-error wrapper and the --config / --db options."""

from __future__ import annotations

import functools
import sys

import click

from ..errors import EvalkitError


def _errors_as(label: str):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except EvalkitError as e:
                click.echo(f"{label}: {e}", err=True)
                sys.exit(1)

        return wrapper

    return decorate


# Library errors become one clear message and exit code 1; nothing else is swallowed.
fail_clearly = _errors_as("Error")
# `evalkit serve` (and so `python app.py`) keeps the app's own form, one line `error: ...`, as it always printed it.
fail_as_the_app = _errors_as("error")


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
