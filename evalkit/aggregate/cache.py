"""A cached aggregate for servers: recomputed only when the data it reads has changed.

The Results tab is opened by every rater; without a cache each opening re-reads and re-aggregates every rating.
The cache is keyed by a cheap version of the data (the largest row id of each table the aggregate reads, plus
the gate file's modification time): the tables are append-only, so any new rating, correction, skip, pair,
generation, benchmark or experiment raises a key. Concurrent requests for the same version wait for one
computation instead of each starting their own.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

# Tables the aggregate reads (the pre-screen is derived from generations, and the aggregate itself fills it in,
# so it is left out). MAX(rowid) is an index lookup in SQLite, so the version costs microseconds.
# raters, hub_revokes and results_seen: who can still take the pairs a look waits for (its note, rating.queue.untakeable);
# pair_give_ups: a pair given up counts at the worst and the look goes on (aggregate.give_up), with no other row added.
VERSIONED_TABLES = ("ratings", "pairs", "experiments", "generations", "timing_runs", "bench_processes", "studies",
                    "decisions", "raters", "results_seen", "pair_give_ups", "hub_revokes")


def data_version(db) -> tuple:
    """A key that changes whenever a table the aggregate reads gains a row (or the gate file is edited)."""
    parts = db.execute("SELECT " + ", ".join(f"(SELECT MAX(rowid) FROM {t})" for t in VERSIONED_TABLES)
                       + ", (SELECT COUNT(revoked_at) FROM raters), (SELECT COUNT(lifted_at) FROM hub_revokes)"
                       ).fetchone()  # a revocation (a lift) adds no row
    gate_path = None
    row = (db.execute("SELECT gate_json FROM studies WHERE gate_hash != '' ORDER BY id DESC LIMIT 1").fetchone()
           or db.execute("SELECT gate_json FROM experiments WHERE gate_hash != '' ORDER BY id DESC LIMIT 1").fetchone())
    if row:
        import json

        gate_path = json.loads(row[0]).get("path")
    try:
        gate_mtime = os.stat(gate_path).st_mtime_ns if gate_path else None
    except OSError:
        gate_mtime = None
    return tuple(parts) + (gate_mtime,)


@dataclass
class AggregateCache:
    """One per server (not module state): get() returns the aggregate of the database as it is now, computing
    it at most once per data version, however many requests ask at the same time."""

    computations: int = 0  # how many times the aggregate was computed (for tests and logs)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _key: tuple | None = field(default=None, repr=False)
    _value: object = field(default=None, repr=False)

    def get(self, db, tolerance: float | None = None, resamples: int | None = None, compute=None,
            study: str | None = None, waiting=None):
        """waiting(), when given, is called when another request's computation is under way and this one waits for
        it (a page says so: its own steps would otherwise show nothing for as long)."""
        from ..store.database import identity
        from . import aggregate

        compute = compute or aggregate
        key = (identity(db), tolerance, resamples, study, data_version(db))
        if not self._lock.acquire(blocking=False):
            if waiting is not None:
                waiting()
            self._lock.acquire()
        try:  # one computation at a time; a waiter finds the fresh value when its key matches
            if self._key != key:
                self._value = compute(db, tolerance, resamples) if study is None else compute(db, tolerance,
                                                                                               resamples, study)
                self._key = key
                self.computations += 1
            return self._value
        finally:
            self._lock.release()


