"""Writes of what runs produce: experiments, generations, benchmark processes and timing runs, tuning trials, and
the pre-screen's verdicts on stored outputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict

from ..errors import EvalkitError
from ..records import BatchRun, GenerationRecord, ProcessRecord, TimingRun
from .database import now, write_transaction


def json_hash(obj) -> str:
    """The short hash evalkit stores beside a config or compatibility record (experiments.config_hash)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _jsonify(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, (dict, list)):
            out[k] = json.dumps(v, ensure_ascii=False, sort_keys=isinstance(v, dict))
        elif isinstance(v, bool):
            out[k] = int(v)
        else:
            out[k] = v
    return out


def _plain(value) -> dict:
    """A typed record as the JSON it is stored as (a compatibility record), or the mapping itself."""
    return value.to_json() if hasattr(value, "to_json") else dict(value or {})


def insert_experiment(db, kind: str, config: dict, compat, note: str = "", gate: dict | None = None, *,
                      new_study: str | None = None, first_sample: int = 0, pool_samples: int | None = None,
                      sample_seed: int | None = None) -> int:
    """Record an experiment as it starts: its config, compatibility record and the release gate snapshot the caller
    froze for it (gate.gate_snapshot; {} or None: no gate). A pool experiment joins a study in the same transaction
    (studies.attach_pool: the latest study, whose frozen gate must be this one; or a new study `new_study`);
    its samples are `first_sample` to `first_sample + pool_samples - 1`, sample s generated with seed
    `sample_seed + s` (the pool's secret base, migration 019)."""
    from .studies import attach_pool

    compat = _plain(compat)
    gate = gate or {}
    with write_transaction(db):
        study_id = attach_pool(db, gate, new_study) if kind == "pool" else None
        db["experiments"].insert(
            {
                "study_id": study_id,
                "first_sample": first_sample,
                "pool_samples": pool_samples,
                "created_at": now(),
                "kind": kind,
                "config_json": json.dumps(config, ensure_ascii=False, sort_keys=True),
                "config_hash": json_hash(config),
                "compat_json": json.dumps(compat, ensure_ascii=False, sort_keys=True),
                "compat_hash": json_hash(compat),
                "note": note,
                "gate_json": json.dumps(gate, ensure_ascii=False, sort_keys=True),
                "gate_hash": gate.get("hash", ""),
                # only a pool has one (a database older than migration 019 is migrated before evalkit writes to it)
                **({"sample_seed": sample_seed} if sample_seed is not None else {}),
            }
        )
        return db.execute("SELECT last_insert_rowid()").fetchone()[0]


def discard_pool_experiment(db, experiment_id: int) -> str:
    """Remove a pool experiment that stored nothing (a `generate` that failed or was stopped before its first sample:
    a model that would not load, memory that ran out), and its study when the experiment was the study's only one,
    so that a failed start freezes no gate (audit, 2026-12-04). Anything that refers to the experiment (a generation,
    a pair) or to the study (a rating's decision) makes the foreign keys refuse, and nothing is removed. Returns
    what went: "", "experiment" or "study" (the experiment and its study)."""
    import sqlite3

    try:
        with write_transaction(db):
            row = db.execute("SELECT study_id FROM experiments WHERE id = ? AND kind = 'pool'",
                             [experiment_id]).fetchone()
            if row is None:
                return ""
            db.execute("DELETE FROM experiments WHERE id = ?", [experiment_id])
            if row[0] is None or db.execute("SELECT 1 FROM experiments WHERE study_id = ?", [row[0]]).fetchone():
                return "experiment"
            db.execute("DELETE FROM studies WHERE id = ?", [row[0]])
            return "study"
    except sqlite3.IntegrityError:
        return ""


def discard_bench_experiment(db, experiment_id: int) -> bool:
    """Remove a benchmark experiment that stored nothing (an `evalkit bench` stopped before its results were stored:
    they are stored all at once, at the end). Anything that refers to it makes the foreign keys refuse, and nothing
    is removed. Returns whether it went."""
    import sqlite3

    try:
        with write_transaction(db):
            return db.execute("DELETE FROM experiments WHERE id = ? AND kind = 'bench'", [experiment_id]).rowcount == 1
    except sqlite3.IntegrityError:
        return False


def copy_experiment(db, row: dict, study: dict | None = None) -> None:
    """An experiment row as it is in another database (a shard's copy of the main database's experiment, with its
    study, so that the shard's foreign keys hold)."""
    with write_transaction(db):
        if study is not None:
            db["studies"].insert(study, replace=True)
        db["experiments"].insert(row, replace=True)


def _insert_generation(db, record: GenerationRecord, experiment_id: int | None) -> int:
    from ..generation.registry import names

    if record.path not in names():  # the schema holds no list of paths (migration 014): the registry decides
        raise EvalkitError(f"generation record for '{record.prompt_id}' has the unregistered path {record.path!r}",
                           f"register it (evalkit.generation.registry.register) or use one of: {', '.join(names())}")
    row = _jsonify(record.row())
    row.update(experiment_id=experiment_id, created_at=now())
    db["generations"].insert(row)
    record.id = db.execute("SELECT last_insert_rowid()").fetchone()[0]
    return record.id


def insert_generations(db, records: list[GenerationRecord], experiment_id: int | None) -> list[int]:
    """Store records in one transaction. A fallback's `fallback_of` may point at an earlier record of the
    same list by negative index (-1 = the record just before), resolved here to the stored id."""
    ids: list[int] = []
    with write_transaction(db):
        for rec in records:
            if rec.fallback_of is not None and rec.fallback_of < 0:
                rec.fallback_of = ids[rec.fallback_of]
            ids.append(_insert_generation(db, rec, experiment_id))
    return ids


def insert_live_run(db, config: dict, compat, note: str, records: list[GenerationRecord],
                    admit: Callable | None = None) -> int:
    """A Live run: its experiment and its outputs (marked live) in one write transaction; returns the experiment id.
    `admit(db)`, when given, runs first under the lock and raises to store nothing (the rater's code still hers: a
    revoke that commits while the run is on its way stores nothing of it)."""
    with write_transaction(db):
        if admit is not None:
            admit(db)
        exp_id = insert_experiment(db, "live", config, compat, note=note)
        for rec in records:
            rec.live = True
        insert_generations(db, records, exp_id)
    return exp_id


def insert_bench_process(
    db, experiment_id: int, process: ProcessRecord, runs: list[tuple[TimingRun, list[GenerationRecord]]],
    batch_runs: list[tuple[BatchRun, GenerationRecord | None]] = (),
) -> int:
    """One worker process's results, all or nothing: the process row, every generation, every timing run, and the
    requests of its batched calls (`evalkit bench --batch-sizes`)."""
    with write_transaction(db):
        row = _jsonify(asdict(process))
        row["experiment_id"] = experiment_id
        row["stored_at"] = now()  # what a decision frozen at completion compares with (aggregate.data.latest_bench)
        db["bench_processes"].insert(row)
        pid = db.execute("SELECT last_insert_rowid()").fetchone()[0]
        for run, records in runs:
            ids = insert_generations(db, records, experiment_id)
            run.process_id = pid
            # the timed record is the last of the chain (assisted ok, or the fallback after a failure)
            run.generation_id = ids[-1]
            trow = _jsonify(asdict(run))
            trow["experiment_id"] = experiment_id
            db["timing_runs"].insert(trow)
        for batch_run, record in batch_runs:
            batch_run.process_id = pid
            if record is not None:  # a batch size that could not run has no generation
                (batch_run.generation_id,) = insert_generations(db, [record], experiment_id)
            brow = _jsonify(asdict(batch_run))
            brow["experiment_id"] = experiment_id
            db["batch_runs"].insert(brow)
    return pid


def insert_bench_processes(db, experiment_id: int, processes: list[tuple]) -> None:
    """Every worker process of a benchmark (every accelerate rank's), in run order, in one transaction: tuples of
    (ProcessRecord, [(TimingRun, [GenerationRecord])], optionally [(BatchRun, GenerationRecord)])."""
    with write_transaction(db):
        for process, runs, *batched in processes:
            insert_bench_process(db, experiment_id, process, runs, *batched)


def insert_tune_trials(db, rows: list[dict]) -> None:
    """The trials of one tuning sweep (columns of tune_trials), in one transaction."""
    with write_transaction(db):
        for row in rows:
            db["tune_trials"].insert(row)


def insert_prescreen(db, rows: list[dict]) -> None:
    """Pre-screen verdicts (generation_id, criterion, passed, evidence, rules_version), in one transaction."""
    if not rows:  # the aggregate calls this on every look: no write lock when there is nothing to write
        return
    with write_transaction(db):
        # a concurrent reader may have screened the same outputs meanwhile: its rows are the same (a pure function of
        # the text and the rules version), so they stay
        db["prescreen"].insert_all(rows, ignore=True)


def insert_rows(db, table: str, columns: list[str], rows: list[tuple]) -> None:
    """Many rows of one table at once, as tuples in `columns` order (synthetic studies and benchmarks write
    hundreds of thousands of rows; the callers name the table and columns, the SQL is written here)."""
    marks = ", ".join("?" for _ in columns)
    with write_transaction(db):
        db.conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def insert_together(db, write):
    """write(db), whose writes go through this package's functions, in one write transaction: a synthetic study
    lands whole or not at all. Returns what write returns."""
    with write_transaction(db):
        return write(db)


def generation(db, generation_id: int) -> dict:
    rows = list(db.query("SELECT * FROM generations WHERE id = ?", [generation_id]))
    if not rows:
        raise EvalkitError(f"generation {generation_id} does not exist", "check the id")
    return rows[0]
