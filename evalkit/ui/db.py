"""Database connections for request handlers: one per worker thread, opened once and reused.

SQLite connections belong to one thread and Gradio runs events on a thread pool; reusing the thread's
connection spares every request an open (and a WAL checkpoint on close)."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from ..store import open_db

_local = threading.local()


@contextlib.contextmanager
def connect(db_path: Path):
    cache = _local.__dict__.setdefault("dbs", {})
    key = str(db_path)
    db = cache.get(key)
    if db is None:
        db = cache[key] = open_db(db_path, migrate_schema=False)
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:  # never leave a half-done transaction on a reused connection
            db.conn.rollback()
        raise
