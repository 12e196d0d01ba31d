"""SQLite storage through sqlite-utils: named, append-only migrations; every multi-row write is atomic."""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import sqlite3
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from .errors import EvalkitError
from .records import GenerationRecord, ProcessRecord, TimingRun


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _m001_initial(db) -> None:
    db.execute(
        """CREATE TABLE experiments (
            id INTEGER PRIMARY KEY,
            created_at TEXT NOT NULL,
            kind TEXT NOT NULL,            -- bench | pool | live | tune | run
            config_json TEXT NOT NULL,     -- full effective config snapshot
            config_hash TEXT NOT NULL,
            compat_json TEXT NOT NULL,     -- compatibility record
            compat_hash TEXT NOT NULL,
            note TEXT NOT NULL DEFAULT ''
        )"""
    )
    db.execute(
        """CREATE TABLE generations (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER REFERENCES experiments(id),
            created_at TEXT NOT NULL,
            prompt_id TEXT NOT NULL,
            path TEXT NOT NULL CHECK (path IN ('ordinary', 'assisted', 'fallback', 'prompt_lookup')),
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
            text TEXT NOT NULL,
            token_ids TEXT NOT NULL,       -- JSON list of the new token ids
            token_hash TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            new_tokens INTEGER NOT NULL,
            stop_reason TEXT NOT NULL,
            generate_seconds REAL,
            decode_seconds REAL,
            peak_rss_mb REAL,
            rss_mb REAL,
            cuda_memory TEXT NOT NULL,     -- JSON: per device peak allocated / reserved MB
            draft_proposed INTEGER,
            draft_accepted INTEGER,
            draft_rounds INTEGER,
            target_passes INTEGER,
            tokens_per_target_pass REAL,
            counts_agree INTEGER,
            seed INTEGER,
            decoding TEXT NOT NULL,
            effective_config TEXT NOT NULL,
            error_class TEXT NOT NULL,
            error_stage TEXT NOT NULL,
            error_message TEXT NOT NULL,
            fallback_of INTEGER REFERENCES generations(id),
            total_wait_seconds REAL,
            live INTEGER NOT NULL DEFAULT 0
        )"""
    )
    db.execute("CREATE INDEX generations_prompt_path ON generations(prompt_id, path)")
    db.execute(
        """CREATE TABLE bench_processes (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            path TEXT NOT NULL,
            round INTEGER NOT NULL,
            "order" INTEGER NOT NULL,
            pid INTEGER, host TEXT, device TEXT,
            load_seconds REAL,
            rss_after_load_mb REAL,
            cuda_after_load TEXT NOT NULL,
            draft_extra_rss_mb REAL,
            first_call_seconds REAL,
            target_seconds_per_token REAL,
            draft_seconds_per_token REAL,
            warmup_count INTEGER NOT NULL,
            warmup_seconds TEXT NOT NULL,
            status TEXT NOT NULL,
            error TEXT NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE timing_runs (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            process_id INTEGER REFERENCES bench_processes(id),
            generation_id INTEGER REFERENCES generations(id),
            path TEXT NOT NULL,
            prompt_id TEXT NOT NULL,
            round INTEGER NOT NULL,
            rep INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            new_tokens INTEGER NOT NULL,
            stop_reason TEXT NOT NULL,
            seconds REAL NOT NULL,
            decode_seconds REAL,
            tokens_per_second REAL,
            status TEXT NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE pairs (
            id TEXT PRIMARY KEY,               -- unguessable: raters' requests name pairs by it
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            created_at TEXT NOT NULL,
            prompt_id TEXT NOT NULL,
            sample INTEGER NOT NULL,
            ordinary_generation_id INTEGER NOT NULL REFERENCES generations(id),
            assisted_generation_id INTEGER NOT NULL REFERENCES generations(id),
            a_generation_id INTEGER NOT NULL REFERENCES generations(id),
            b_generation_id INTEGER NOT NULL REFERENCES generations(id),
            ordinary_side TEXT NOT NULL CHECK (ordinary_side IN ('A', 'B'))
        )"""
    )


def _m002_ratings(db) -> None:
    from .prompts import CRITERIA

    crit_cols = ",\n".join(
        f"{side}_{c} TEXT CHECK ({side}_{c} IN ('pass', 'fail', 'unsure'))"
        for side in ("a", "b", "ordinary", "assisted")
        for c in CRITERIA
    )
    db.execute(
        f"""CREATE TABLE ratings (
            id INTEGER PRIMARY KEY,
            pair_id TEXT NOT NULL REFERENCES pairs(id),
            rater TEXT NOT NULL,
            created_at TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('rating', 'skip')),
            {crit_cols},
            preference TEXT CHECK (preference IN ('A', 'B', 'tie')),
            preferred_path TEXT CHECK (preferred_path IN ('ordinary', 'assisted', 'tie')),
            comment TEXT NOT NULL DEFAULT '',
            skip_reason TEXT NOT NULL DEFAULT '',
            supersedes INTEGER REFERENCES ratings(id),
            client_token TEXT
        )"""
    )
    # A rater meets a pair once (a correction is a new row that supersedes, never a second original) ...
    db.execute("CREATE UNIQUE INDEX ratings_once_per_rater ON ratings(pair_id, rater) WHERE supersedes IS NULL")
    # ... history is a line, not a tree ...
    db.execute("CREATE UNIQUE INDEX ratings_superseded_once ON ratings(supersedes) WHERE supersedes IS NOT NULL")
    # ... and a replayed submission (same client token) cannot land twice.
    db.execute("CREATE UNIQUE INDEX ratings_client_token ON ratings(client_token) WHERE client_token IS NOT NULL")
    db.execute(
        """CREATE VIEW current_ratings AS
           SELECT * FROM ratings r
           WHERE r.kind = 'rating' AND NOT EXISTS (SELECT 1 FROM ratings s WHERE s.supersedes = r.id)"""
    )


def _m003_prescreen(db) -> None:
    db.execute(
        """CREATE TABLE prescreen (
            generation_id INTEGER NOT NULL REFERENCES generations(id),
            criterion TEXT NOT NULL,
            passed INTEGER NOT NULL,
            evidence TEXT NOT NULL,
            rules_version TEXT NOT NULL,
            PRIMARY KEY (generation_id, criterion, rules_version)
        )"""
    )


def _m004_experiment_gate(db) -> None:
    # The release gate is frozen with the experiment: its text (to apply it later) and hash (to detect edits).
    db.execute("ALTER TABLE experiments ADD COLUMN gate_json TEXT NOT NULL DEFAULT '{}'")
    db.execute("ALTER TABLE experiments ADD COLUMN gate_hash TEXT NOT NULL DEFAULT ''")


def _m005_tune_trials(db) -> None:
    db.execute(
        """CREATE TABLE tune_trials (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            trial INTEGER NOT NULL,
            is_default INTEGER NOT NULL,
            settings TEXT NOT NULL,
            num_assistant_tokens INTEGER NOT NULL,
            num_assistant_tokens_schedule TEXT NOT NULL,
            assistant_confidence_threshold REAL NOT NULL,
            median_seconds_per_token_sum REAL,
            speedup_vs_default REAL,
            acceptance_rate REAL,
            fallbacks INTEGER NOT NULL
        )"""
    )


def _m006_where_it_ran(db) -> None:
    # Sharded runs (accelerate): every record says which process, host and device produced it.
    for table in ("generations", "timing_runs"):
        db.execute(f"ALTER TABLE {table} ADD COLUMN rank INTEGER NOT NULL DEFAULT 0")
        db.execute(f"ALTER TABLE {table} ADD COLUMN host TEXT NOT NULL DEFAULT ''")
        db.execute(f"ALTER TABLE {table} ADD COLUMN device TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE bench_processes ADD COLUMN rank INTEGER NOT NULL DEFAULT 0")
    # position in the pool's work list (prompt x sample): shards merge back in single-process order
    db.execute("ALTER TABLE pairs ADD COLUMN work_index INTEGER")
    db.execute("ALTER TABLE generations ADD COLUMN work_index INTEGER")


def _m007_placement(db) -> None:
    # A target spread with device_map: MB of weights per device, for each model of a bench process.
    db.execute("ALTER TABLE bench_processes ADD COLUMN target_placement TEXT NOT NULL DEFAULT '{}'")
    db.execute("ALTER TABLE bench_processes ADD COLUMN draft_placement TEXT NOT NULL DEFAULT '{}'")


def _m008_identity(db) -> None:
    # Identities with credentials (evalkit.raters): a personal code, stored as a hash; look-alike names share name_key.
    db.execute(
        """CREATE TABLE raters (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            name_key TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL CHECK (role IN ('rater', 'organiser')),
            source TEXT NOT NULL CHECK (source IN ('invited', 'signup', 'space')),
            secret_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            revoked_at TEXT
        )"""
    )
    # A pair shown to a rater is theirs for a while (a lease), so raters arriving at once are spread over pairs
    # instead of over-filling one; shown_at also gives the time on task.
    db.execute(
        """CREATE TABLE assignments (
            pair_id TEXT NOT NULL REFERENCES pairs(id),
            rater TEXT NOT NULL,
            shown_at TEXT NOT NULL,
            PRIMARY KEY (pair_id, rater)
        )"""
    )
    # blind = 0: a correction made after the reveal. It is kept (and exported) but never counts: the last blind
    # version of a rating is the one the verdict uses.
    db.execute("ALTER TABLE ratings ADD COLUMN blind INTEGER NOT NULL DEFAULT 1")
    db.execute("ALTER TABLE ratings ADD COLUMN seconds_on_task REAL")
    db.execute("DROP VIEW current_ratings")
    db.execute(
        """CREATE VIEW current_ratings AS
           SELECT * FROM ratings r
           WHERE r.kind = 'rating' AND r.blind = 1
             AND NOT EXISTS (SELECT 1 FROM ratings s WHERE s.supersedes = r.id AND s.blind = 1)"""
    )
    db.execute("CREATE INDEX ratings_rater ON ratings(rater)")


def _m009_token_spaces(db) -> None:
    # Different tokenizers (Universal Assisted Generation): the draft's own token count beside the target-space
    # acceptance counts, and which Transformers candidate generator really ran.
    db.execute("ALTER TABLE generations ADD COLUMN draft_tokens INTEGER")
    db.execute("ALTER TABLE generations ADD COLUMN candidate_generator TEXT NOT NULL DEFAULT ''")


def _m010_gold_pairs(db) -> None:
    # Reference outputs: texts written by the organisers with known criterion results (a prompt file's [[gold]]).
    # Not generations: a reference is no path's output and must never be counted as one. A row never changes:
    # an edited reference is a new row (new content hash), so a gold rating is always scored against the
    # answers it was checked against.
    db.execute(
        """CREATE TABLE reference_outputs (
            id INTEGER PRIMARY KEY,
            prompt_id TEXT NOT NULL,
            name TEXT NOT NULL,
            text TEXT NOT NULL,
            expected TEXT NOT NULL,            -- JSON: criterion id -> 'pass' | 'fail'
            note TEXT NOT NULL DEFAULT '',     -- what is wrong with it, shown in the reveal
            content_hash TEXT NOT NULL UNIQUE, -- sha256 of prompt id, name, text, expected and note
            token_ids TEXT,                    -- JSON: the text under the target tokenizer of the latest pool (Live guard)
            created_at TEXT NOT NULL
        )"""
    )
    # Gold pairs live in `pairs` (ratings and assignments keep their foreign key to pairs(id), and a rater's
    # queue treats them like any pair) with kind = 'gold', two reference outputs and no generations or path
    # side. SQLite cannot relax NOT NULL in place, so the table is rebuilt (its 12-step procedure; migrate()
    # runs this migration with foreign keys off and checks them before committing).
    db.execute(
        """CREATE TABLE pairs_new (
            id TEXT PRIMARY KEY,               -- unguessable: raters' requests name pairs by it
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            created_at TEXT NOT NULL,
            prompt_id TEXT NOT NULL,
            sample INTEGER,                    -- the pool sample (study pairs)
            ordinary_generation_id INTEGER REFERENCES generations(id),
            assisted_generation_id INTEGER REFERENCES generations(id),
            a_generation_id INTEGER REFERENCES generations(id),
            b_generation_id INTEGER REFERENCES generations(id),
            ordinary_side TEXT CHECK (ordinary_side IN ('A', 'B')),
            work_index INTEGER,
            kind TEXT NOT NULL DEFAULT 'study' CHECK (kind IN ('study', 'gold')),
            a_reference_id INTEGER REFERENCES reference_outputs(id),
            b_reference_id INTEGER REFERENCES reference_outputs(id),
            CHECK ((kind = 'study' AND sample IS NOT NULL AND ordinary_generation_id IS NOT NULL
                    AND assisted_generation_id IS NOT NULL AND a_generation_id IS NOT NULL
                    AND b_generation_id IS NOT NULL AND ordinary_side IS NOT NULL
                    AND a_reference_id IS NULL AND b_reference_id IS NULL)
                OR (kind = 'gold' AND a_reference_id IS NOT NULL AND b_reference_id IS NOT NULL
                    AND a_reference_id != b_reference_id AND sample IS NULL AND ordinary_generation_id IS NULL
                    AND assisted_generation_id IS NULL AND a_generation_id IS NULL AND b_generation_id IS NULL
                    AND ordinary_side IS NULL))
        )"""
    )
    db.execute(
        """INSERT INTO pairs_new (id, experiment_id, created_at, prompt_id, sample, ordinary_generation_id,
                                  assisted_generation_id, a_generation_id, b_generation_id, ordinary_side, work_index, kind)
           SELECT id, experiment_id, created_at, prompt_id, sample, ordinary_generation_id, assisted_generation_id,
                  a_generation_id, b_generation_id, ordinary_side, work_index, 'study' FROM pairs"""
    )
    db.execute("DROP TABLE pairs")
    db.execute("ALTER TABLE pairs_new RENAME TO pairs")
    db.execute("CREATE INDEX pairs_kind ON pairs(kind, prompt_id)")


# A migration that rebuilds a table others point at runs with foreign keys off (SQLite ignores the pragma inside
# a transaction, so migrate() sets it around the transaction) and PRAGMA foreign_key_check before committing.
_m010_gold_pairs.foreign_keys_off = True

# Append-only: never edit or reorder a shipped migration; add a new one at the end.
MIGRATIONS = [
    ("001_initial", _m001_initial),
    ("002_ratings", _m002_ratings),
    ("003_prescreen", _m003_prescreen),
    ("004_experiment_gate", _m004_experiment_gate),
    ("005_tune_trials", _m005_tune_trials),
    ("006_where_it_ran", _m006_where_it_ran),
    ("007_placement", _m007_placement),
    ("008_identity", _m008_identity),
    ("009_token_spaces", _m009_token_spaces),
    ("010_gold_pairs", _m010_gold_pairs),
]


def migrate(db) -> list[str]:
    """Apply the migrations not yet applied, each in its own transaction. Safe to call any number of times,
    and from several processes at once (accelerate ranks): each migration is checked again under the write
    lock (BEGIN IMMEDIATE), so exactly one process applies it."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {r[0] for r in db.execute("SELECT name FROM _migrations").fetchall()}
    applied = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        fk_off = getattr(fn, "foreign_keys_off", False)
        if fk_off and db.conn.in_transaction:
            raise EvalkitError(f"migration {name} cannot run inside an open transaction",
                               "open the database with store.open_db before starting a transaction")
        if fk_off:
            db.execute("PRAGMA foreign_keys = OFF")
        try:
            with write_transaction(db):
                if db.execute("SELECT 1 FROM _migrations WHERE name = ?", [name]).fetchone() is None:
                    if fk_off and (broken := db.execute("PRAGMA foreign_key_check").fetchall()):
                        raise EvalkitError(
                            f"migration {name} needs every foreign key intact, and {len(broken)} row(s) point at "
                            f"nothing (first: table {broken[0][0]}, row {broken[0][1]}, missing in {broken[0][2]})",
                            "the database is unchanged; remove or repair those rows (PRAGMA foreign_key_check lists "
                            "them) and open it again")
                    fn(db)
                    if fk_off and (broken := db.execute("PRAGMA foreign_key_check").fetchall()):
                        # raising rolls the migration back: the database stays as it was
                        raise EvalkitError(
                            f"migration {name} would break {len(broken)} foreign key(s), first: {tuple(broken[0])}",
                            "the database is unchanged; keep a copy and report this")
                    db.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", [name, now()])
                    applied.append(name)
        finally:
            if fk_off:
                db.execute("PRAGMA foreign_keys = ON")
    return applied


@contextlib.contextmanager
def write_transaction(db):
    """BEGIN IMMEDIATE: take the write lock before the first read, so that a check and the write it allows happen
    under one lock (a quota, a name's uniqueness), and concurrent writers wait (busy timeout) instead of failing
    with 'database is locked' when a deferred transaction that has read tries to write after another connection
    committed (WAL). Inside a caller's transaction it is a savepoint. All or nothing either way."""
    if db.conn.in_transaction:
        with db.atomic():
            yield
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.conn.rollback()
        raise
    db.conn.commit()


def open_db(path: Path | str | None = None, migrate_schema: bool = True):
    """Open (creating if needed) and migrate the database. WAL mode and a busy timeout for concurrent writers.

    A connection is meant for one thread: servers open one per request (cheap) and pass
    migrate_schema=False after the first open."""
    import sqlite_utils

    from .locations import db_path

    path = Path(path) if path else db_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        db = sqlite_utils.Database(conn)
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute("PRAGMA foreign_keys = ON")
        if db.conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.enable_wal()
        # In WAL mode NORMAL syncs at checkpoints, not on every commit: a committed rating survives the app
        # being killed (tests/test_crash.py); only an OS crash or power cut could lose the last commits.
        db.execute("PRAGMA synchronous = NORMAL")
        if migrate_schema:
            migrate(db)
    except sqlite3.DatabaseError as e:
        raise EvalkitError(
            f"database {path} cannot be opened: {e}",
            "if the file is corrupt, move it aside (keep it for recovery) and run again to start a new one; "
            "or point --db / EVALKIT_DB at another file",
        )
    except OSError as e:
        raise EvalkitError(f"database {path} cannot be created: {e}", "check the folder exists and is writable")
    return db


def _hash_json(obj) -> str:
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


def insert_experiment(db, kind: str, config: dict, compat: dict, note: str = "", gate: dict | None = None) -> int:
    """Record an experiment as it starts: config, compatibility record and the frozen release gate."""
    if gate is None and kind in ("bench", "pool"):
        from .gate import gate_snapshot

        gate = gate_snapshot(config.get("gate_file") or None)
    gate = gate or {}
    with db.atomic():
        db["experiments"].insert(
            {
                "created_at": now(),
                "kind": kind,
                "config_json": json.dumps(config, ensure_ascii=False, sort_keys=True),
                "config_hash": _hash_json(config),
                "compat_json": json.dumps(compat, ensure_ascii=False, sort_keys=True),
                "compat_hash": _hash_json(compat),
                "note": note,
                "gate_json": json.dumps(gate, ensure_ascii=False, sort_keys=True),
                "gate_hash": gate.get("hash", ""),
            }
        )
        return db.execute("SELECT last_insert_rowid()").fetchone()[0]


def _insert_generation(db, record: GenerationRecord, experiment_id: int | None) -> int:
    row = _jsonify(record.row())
    row.update(experiment_id=experiment_id, created_at=now())
    db["generations"].insert(row)
    record.id = db.execute("SELECT last_insert_rowid()").fetchone()[0]
    return record.id


def insert_generations(db, records: list[GenerationRecord], experiment_id: int | None) -> list[int]:
    """Store records in one transaction. A fallback's `fallback_of` may point at an earlier record of the
    same list by negative index (-1 = the record just before), resolved here to the stored id."""
    ids: list[int] = []
    with db.atomic():
        for rec in records:
            if rec.fallback_of is not None and rec.fallback_of < 0:
                rec.fallback_of = ids[rec.fallback_of]
            ids.append(_insert_generation(db, rec, experiment_id))
    return ids


def insert_bench_process(
    db, experiment_id: int, process: ProcessRecord, runs: list[tuple[TimingRun, list[GenerationRecord]]]
) -> int:
    """One worker process's results, all or nothing: the process row, every generation, every timing run."""
    with db.atomic():
        row = _jsonify(asdict(process))
        row["experiment_id"] = experiment_id
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
    return pid


def new_pair_id() -> str:
    return "p" + secrets.token_hex(8)


def insert_pairs(db, experiment_id: int, pairs: list[dict]) -> list[str]:
    """pairs: dicts with prompt_id, sample, ordinary (GenerationRecord), assisted (GenerationRecord), ordinary_side."""
    ids = []
    with db.atomic():
        for p in pairs:
            o, a = p["ordinary"], p["assisted"]
            insert_generations(db, [o, a], experiment_id)
            a_id, b_id = (o.id, a.id) if p["ordinary_side"] == "A" else (a.id, o.id)
            pair_id = new_pair_id()
            db["pairs"].insert(
                {
                    "id": pair_id,
                    "experiment_id": experiment_id,
                    "created_at": now(),
                    "prompt_id": p["prompt_id"],
                    "sample": p["sample"],
                    "ordinary_generation_id": o.id,
                    "assisted_generation_id": a.id,
                    "a_generation_id": a_id,
                    "b_generation_id": b_id,
                    "ordinary_side": p["ordinary_side"],
                    "work_index": p.get("work_index"),
                }
            )
            ids.append(pair_id)
    return ids


def reference_hash(prompt_id: str, ref) -> str:
    """The identity of a reference output: a changed text, expected answer or note is a new reference."""
    return hashlib.sha256(json.dumps(
        {"prompt_id": prompt_id, "name": ref.name, "text": ref.text, "expected": ref.expected, "note": ref.note},
        sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def store_references(db, refs: list[tuple[str, object, list[int] | None]]) -> dict[str, int]:
    """refs: (prompt_id, prompts.Reference, token ids or None). Stores the new ones (a stored reference never
    changes; only its token ids follow the latest pool's tokenizer) in one transaction. Returns hash -> id."""
    ids = {}
    with write_transaction(db):
        for prompt_id, ref, token_ids in refs:
            h = reference_hash(prompt_id, ref)
            db.conn.execute(
                "INSERT INTO reference_outputs (prompt_id, name, text, expected, note, content_hash, token_ids, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (content_hash) DO UPDATE SET "
                "token_ids = COALESCE(excluded.token_ids, token_ids)",
                [prompt_id, ref.name, ref.text, json.dumps(ref.expected, sort_keys=True), ref.note, h,
                 None if token_ids is None else json.dumps(token_ids), now()])
            ids[h] = db.conn.execute("SELECT id FROM reference_outputs WHERE content_hash = ?", [h]).fetchone()[0]
    return ids


def insert_gold_pairs(db, experiment_id: int, pairs: list[dict]) -> list[str]:
    """pairs: dicts with prompt_id, a_reference_id, b_reference_id (sides already drawn). Same id format as a
    study pair's: nothing in a pair id tells a gold pair from another."""
    ids = []
    with write_transaction(db):
        for p in pairs:
            pair_id = new_pair_id()
            db.conn.execute(
                "INSERT INTO pairs (id, experiment_id, created_at, prompt_id, kind, a_reference_id, b_reference_id) "
                "VALUES (?, ?, ?, ?, 'gold', ?, ?)",
                [pair_id, experiment_id, now(), p["prompt_id"], p["a_reference_id"], p["b_reference_id"]])
            ids.append(pair_id)
    return ids


def generation(db, generation_id: int) -> dict:
    rows = list(db.query("SELECT * FROM generations WHERE id = ?", [generation_id]))
    if not rows:
        raise EvalkitError(f"generation {generation_id} does not exist", "check the id")
    return rows[0]
