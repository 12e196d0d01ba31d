"""`evalkit run`: one prompt through one registered path (or the ordinary path in one batched call), stored as an
experiment of kind "run". One library call, so the command line stays a thin shell."""

from __future__ import annotations

from pathlib import Path

from ..config import Config
from ..errors import EvalkitError
from ..records import GenerationPath, GenerationRecord


def run_one(cfg: Config, db_path: Path | str, prompt_id: str, path: str, *, seed: int | None = None,
            batch_size: int | None = None) -> list[GenerationRecord]:
    """Run `prompt_id` through `path` and store the record(s) (an assisted failure gives two: the failure and its
    separate fallback). `batch_size` (default decoding.batch_size) above 1 sends the prompt that many times in one
    left-padded generate() call, on the ordinary path only: any other is refused before a model loads, as is an
    unknown or switched-off path. Nothing is stored when the run fails."""
    import sqlite3

    from . import registry
    from .batch import refuse_assisted_batch
    from .models import load_pair
    from .paths import check_runnable, check_switched_on, run_batch, run_path
    from ..store import insert_experiment, insert_generations, insert_together, open_db
    from ..task.prompts import load_prompts

    spec = registry.get(path)
    if seed is not None and not 0 <= seed < 2**32:  # numpy's and torch's seeds; found before a model loads
        raise EvalkitError(f"--seed {seed} must be between 0 and 2**32 - 1", "pass a seed from 0 to 4294967295, e.g. 7")
    if batch_size is not None:
        if batch_size < 1:
            raise EvalkitError(f"--batch-size {batch_size} must be at least 1", "pass a positive number")
        cfg.decoding.batch_size = batch_size
    check_switched_on(cfg, spec)  # before any model loads
    if spec.name != GenerationPath.ORDINARY:
        refuse_assisted_batch(cfg.decoding.batch_size, f"`evalkit run --path {spec.name} --batch-size {cfg.decoding.batch_size}`")
    prompt = load_prompts(ids=[prompt_id])[0]
    if Path(db_path).exists():  # one that cannot be used is found before the models load, not after them
        open_db(db_path).conn.close()  # (a new one is made only once there is a record to store)
    pair = load_pair(cfg)
    check_runnable(pair, spec)
    seed = cfg.decoding.seed if seed is None else seed
    records = (run_batch(pair, [prompt] * cfg.decoding.batch_size, seed) if cfg.decoding.batch_size > 1
               else run_path(pair, prompt, spec.name, seed))

    def store(db) -> None:
        insert_generations(db, records, insert_experiment(db, "run", cfg.to_dict(), pair.compat))

    db = open_db(db_path)
    try:  # the experiment and its records land together or not at all
        insert_together(db, store)
    except sqlite3.OperationalError as e:  # the lock held past the busy timeout, or a full disk: nothing was stored
        raise EvalkitError(f"could not store the run in {db_path} ({e}); nothing was stored",
                           "retry once the other process writing to it is done (or free disk space)") from e
    finally:
        db.conn.close()
    return records
