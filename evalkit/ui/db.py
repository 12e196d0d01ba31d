"""One database connection per request: SQLite connections belong to one thread, and Gradio runs events
on a thread pool. Opening is cheap (WAL, no migration after the first open)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..store import open_db


@contextlib.contextmanager
def connect(db_path: Path):
    db = open_db(db_path, migrate_schema=False)
    try:
        yield db
    finally:
        db.conn.close()
