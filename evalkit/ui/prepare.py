"""Before serving: make sure there is a pair pool to rate. An empty database gets one built from the
config (the demo models are built on first use, with a progress bar in the terminal)."""

from __future__ import annotations

from pathlib import Path

from ..config import Config
from ..store import open_db


def ensure_pool(cfg: Config, db_path: Path, echo=print) -> int:
    """The number of pairs in the pool (gold check pairs included: what raters' queues hold), building one
    first when there is none."""
    from ..pairs import build_pool

    db = open_db(db_path)
    try:
        n = db["pairs"].count
        if n:
            echo(f"pair pool: {n} pairs in {db_path}")
            return n
        echo(f"no pairs in {db_path}: building the pool ({cfg.pool.samples} samples per prompt per path)…")
        result = build_pool(cfg, db, progress=True, echo=echo)
        echo(f"pair pool: {result.pairs} pairs from {result.prompts} prompts, and {result.gold} gold (check) "
             f"pair{'' if result.gold == 1 else 's'} (pool.gold_rate = {cfg.pool.gold_rate})")
        return result.pairs + result.gold
    finally:
        db.conn.close()
