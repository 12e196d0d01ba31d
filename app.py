"""The rating app: `python app.py` serves the blind A/B pairs on the embedded defaults.

    python app.py [--config PATH] [--db PATH] [--host HOST] [--port N] [--no-prepare]

On a Hugging Face Space (SPACE_ID set) raters sign in with Hugging Face; locally they type a name (and a
passcode when the config lists any)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _sign_in_hint(cfg, path: Path) -> str:
    """What an organiser needs to know at start: how raters (and they themselves) sign in."""
    from evalkit import raters
    from evalkit.store import open_db

    db = open_db(path)
    try:
        invited, organisers = raters.count(db, "invited"), sum(r["role"] == "organiser" for r in raters.listing(db))
    finally:
        db.conn.close()
    db_arg = f" --db {path}"
    lines = []
    if cfg.app.signup == "open":
        lines.append("evalkit: open sign-up: anyone who can reach this address may pick a name and rate "
                     "(app.signup = \"open\").")
    elif invited == 0:
        lines.append(f"evalkit: no raters yet. Invite each with `evalkit raters add NAME{db_arg}`: it prints their "
                     "personal code and sign-in link.")
    if organisers == 0:
        lines.append(f"evalkit: no organiser yet. `evalkit raters add YOUR-NAME --organiser{db_arg}` gives you results "
                     "at any time and the Live tab.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", help="config TOML (default: configs/demo.toml)")
    ap.add_argument("--db", help="SQLite database (default: results/evalkit.db, or $EVALKIT_DB)")
    ap.add_argument("--host", help="address to bind (default: the config's app.host)")
    ap.add_argument("--port", type=int, help="port (default: the config's app.port)")
    ap.add_argument("--no-prepare", action="store_true", help="do not build the pair pool when the database has none")
    args = ap.parse_args(argv)

    from evalkit.config import load_config
    from evalkit.errors import EvalkitError
    from evalkit.locations import db_path
    from evalkit.sync import from_environment

    sync = prep = None
    try:
        cfg = load_config(args.config)
        path = Path(args.db) if args.db else db_path()
        # On a Space the disk does not survive a restart: restore the database before anything opens it
        # (EVALKIT_SYNC_REPO switches this on), then push consistent snapshots while serving.
        sync = from_environment(path)
        if sync is not None:
            sync.restore_if_missing()
        if args.no_prepare and not path.exists():  # else a typo serves an empty study: "no pairs left"
            raise EvalkitError(f"database {path} does not exist",
                               "run without --no-prepare to build the pair pool there, or point --db / EVALKIT_DB "
                               "at the study's database")
        if not args.no_prepare:
            from evalkit.ui.prepare import Preparation, pool_size

            if pool_size(path) == 0:  # serve the page at once; it shows the preparation's progress
                print("evalkit: no pairs to rate yet: preparing them in a separate process (`evalkit prepare`); "
                      "the page shows the progress", file=sys.stderr)
                prep = Preparation(cfg, path)
        from evalkit.ui import build_app, launch

        demo = build_app(cfg, path, preparing=prep)
        if not os.environ.get("SPACE_ID"):
            print(_sign_in_hint(cfg, path), file=sys.stderr)
    except EvalkitError as e:
        if prep is not None:
            prep.stop()
        print(f"error: {e}", file=sys.stderr)
        return 1
    on_space = bool(os.environ.get("SPACE_ID"))
    host = args.host or (None if on_space else cfg.app.host)  # a Space sets GRADIO_SERVER_NAME itself
    port = args.port if args.port is not None else (cfg.app.port or None)
    if sync is not None:
        sync.start()
    try:
        launch(demo, server_name=host, server_port=None if on_space else port)
    finally:
        if prep is not None:
            prep.stop()
        if sync is not None:
            sync.stop(final_push=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
