"""Per-client limits a restart must not forgive (failed sign-ins, Live runs per hour): a Space restarts often, and
each restart gave an attacker fresh guesses at personal codes. Keys are the callers' keyed hashes (never an address:
evalkit.rating.seal's tag); rows older than what their limit looks back on are pruned at each write, so the tables
stay as small as the traffic of one window. Never exported (the export names its tables)."""

from __future__ import annotations

from .database import write_transaction


def failure_count(db, kind: str, key: str) -> tuple[int, float]:
    """(failures, when the last was) kept for this key; (0, 0.0) for none."""
    row = db.execute("SELECT count, last_at FROM limit_counts WHERE kind = ? AND key = ?", [kind, key]).fetchone()
    return (row[0], row[1]) if row else (0, 0.0)


def add_failure(db, kind: str, key: str, at: float, forgive_after: float) -> None:
    """One more failure for this key at `at`; a key quiet for `forgive_after` seconds starts again from one (its row,
    like every other that old, is pruned first)."""
    with write_transaction(db):
        db.conn.execute("DELETE FROM limit_counts WHERE last_at < ?", [at - forgive_after])
        db.conn.execute("INSERT INTO limit_counts (kind, key, count, last_at) VALUES (?, ?, 1, ?) ON CONFLICT(kind, key) "
                        "DO UPDATE SET count = count + 1, last_at = excluded.last_at", [kind, key, at])


def count_event(db, kind: str, keys: list[str], at: float, window: float, limit: int,
                count: bool = True) -> tuple[str, int, float] | None:
    """A sliding-window limit kept in the database: (key, events in the window, when the one that frees a place
    happened) for the first key at `limit`, counting nothing; else None, having counted one event for every key under
    one write lock (unless `count` is False). A refusal is read without the write lock: a flood at its limit takes the
    lock no more than it writes (attacker audit, round 8). Events past the window are pruned at each write."""
    full = _first_full(db, kind, keys, at, window, limit)
    if full is not None or not count:
        return full
    with write_transaction(db):
        db.conn.execute("DELETE FROM limit_events WHERE kind = ? AND at <= ?", [kind, at - window])
        full = _first_full(db, kind, keys, at, window, limit)  # again under the lock: another may have counted since
        if full is None:
            db.conn.executemany("INSERT INTO limit_events (kind, key, at) VALUES (?, ?, ?)",
                                [[kind, key, at] for key in keys])
    return full


def _first_full(db, kind: str, keys: list[str], at: float, window: float, limit: int):
    for key in keys:
        times = [r[0] for r in db.conn.execute("SELECT at FROM limit_events WHERE kind = ? AND key = ? AND at > ? "
                                               "ORDER BY at", [kind, key, at - window])]
        if len(times) >= limit:
            return key, len(times), times[-limit]
    return None
