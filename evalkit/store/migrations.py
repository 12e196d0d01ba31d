"""The schema, as named, append-only migrations: literal, frozen DDL.

Each migration runs once per database, in its own write transaction (store.database.migrate). A shipped
migration is never edited or reordered, and its DDL never reads a live constant (a criterion id, a path name):
an existing database must mean tomorrow what it meant when it was made. A new table or column is a new
migration appended to MIGRATIONS, named "NNN_<topic>" with NNN the number after the last entry's. One step is generated instead: a registered criterion's answer
columns in the wide ratings table (`criterion_columns`, run by migrate() after the named migrations; it only adds).

A migration that rebuilds a table other tables point at sets `foreign_keys_off = True` on its function: migrate()
turns foreign keys off around its transaction (SQLite ignores the pragma inside one) and checks them with
PRAGMA foreign_key_check before committing.
"""

from __future__ import annotations


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
    # The criterion columns are written out: a shipped migration never changes, whatever task.criteria.CRITERIA
    # becomes (a criterion registered later gets its columns from criterion_columns, below).
    db.execute(
        """CREATE TABLE ratings (
            id INTEGER PRIMARY KEY,
            pair_id TEXT NOT NULL REFERENCES pairs(id),
            rater TEXT NOT NULL,
            created_at TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('rating', 'skip')),
            a_schedule TEXT CHECK (a_schedule IN ('pass', 'fail', 'unsure')),
            a_read_only_vs_upload TEXT CHECK (a_read_only_vs_upload IN ('pass', 'fail', 'unsure')),
            a_unknown_restore_time TEXT CHECK (a_unknown_restore_time IN ('pass', 'fail', 'unsure')),
            a_no_added_promises TEXT CHECK (a_no_added_promises IN ('pass', 'fail', 'unsure')),
            b_schedule TEXT CHECK (b_schedule IN ('pass', 'fail', 'unsure')),
            b_read_only_vs_upload TEXT CHECK (b_read_only_vs_upload IN ('pass', 'fail', 'unsure')),
            b_unknown_restore_time TEXT CHECK (b_unknown_restore_time IN ('pass', 'fail', 'unsure')),
            b_no_added_promises TEXT CHECK (b_no_added_promises IN ('pass', 'fail', 'unsure')),
            ordinary_schedule TEXT CHECK (ordinary_schedule IN ('pass', 'fail', 'unsure')),
            ordinary_read_only_vs_upload TEXT CHECK (ordinary_read_only_vs_upload IN ('pass', 'fail', 'unsure')),
            ordinary_unknown_restore_time TEXT CHECK (ordinary_unknown_restore_time IN ('pass', 'fail', 'unsure')),
            ordinary_no_added_promises TEXT CHECK (ordinary_no_added_promises IN ('pass', 'fail', 'unsure')),
            assisted_schedule TEXT CHECK (assisted_schedule IN ('pass', 'fail', 'unsure')),
            assisted_read_only_vs_upload TEXT CHECK (assisted_read_only_vs_upload IN ('pass', 'fail', 'unsure')),
            assisted_unknown_restore_time TEXT CHECK (assisted_unknown_restore_time IN ('pass', 'fail', 'unsure')),
            assisted_no_added_promises TEXT CHECK (assisted_no_added_promises IN ('pass', 'fail', 'unsure')),
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
    db.execute("ALTER TABLE generations ADD COLUMN rank INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE generations ADD COLUMN host TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE generations ADD COLUMN device TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE timing_runs ADD COLUMN rank INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE timing_runs ADD COLUMN host TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE timing_runs ADD COLUMN device TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE bench_processes ADD COLUMN rank INTEGER NOT NULL DEFAULT 0")
    # position in the pool's work list (prompt x sample): shards merge back in single-process order
    db.execute("ALTER TABLE pairs ADD COLUMN work_index INTEGER")
    db.execute("ALTER TABLE generations ADD COLUMN work_index INTEGER")


def _m007_placement(db) -> None:
    # A target spread with device_map: MB of weights per device, for each model of a bench process.
    db.execute("ALTER TABLE bench_processes ADD COLUMN target_placement TEXT NOT NULL DEFAULT '{}'")
    db.execute("ALTER TABLE bench_processes ADD COLUMN draft_placement TEXT NOT NULL DEFAULT '{}'")


def _m008_identity(db) -> None:
    # Identities with credentials (evalkit.rating.roster): a personal code, stored as a hash; look-alike names share name_key.
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


def _m011_studies(db) -> None:
    # One study, one gate: a study is the pairs of its pool experiments and the ratings of those pairs, decided under
    # the gate frozen when its first pool was generated. A pool generated under another gate is refused, or starts
    # a new study (`evalkit generate --new-study NAME`) whose pairs and ratings never mix with another's.
    db.execute(
        """CREATE TABLE studies (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            gate_json TEXT NOT NULL,       -- the gate snapshot (path, text, hash, values) frozen with its first pool
            gate_hash TEXT NOT NULL
        )"""
    )
    db.execute("ALTER TABLE experiments ADD COLUMN study_id INTEGER REFERENCES studies(id)")
    # a pool experiment's samples: first_sample to first_sample + pool_samples - 1 per prompt; a study's later pools
    # continue the numbering (and so the seeds), an interrupted one's range included
    db.execute("ALTER TABLE experiments ADD COLUMN first_sample INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE experiments ADD COLUMN pool_samples INTEGER")
    # An existing database holds one study: its pools, under the gate frozen with the first of them.
    db.execute(
        """INSERT INTO studies (id, name, created_at, gate_json, gate_hash)
           SELECT 1, 'main', created_at, gate_json, gate_hash FROM experiments WHERE kind = 'pool'
           ORDER BY id LIMIT 1"""
    )
    db.execute("UPDATE experiments SET study_id = 1 WHERE kind = 'pool' AND EXISTS (SELECT 1 FROM studies)")
    # A study's gate never changes once frozen.
    db.execute(
        """CREATE TRIGGER studies_gate_frozen BEFORE UPDATE OF gate_json, gate_hash ON studies
           BEGIN SELECT RAISE(ABORT, 'a study keeps the gate frozen with its first pool'); END"""
    )
    # Frozen at completion: when the planned sample completes, what decided is stored once and never changes.
    db.execute(
        """CREATE TABLE decisions (
            study_id INTEGER PRIMARY KEY REFERENCES studies(id),
            decided_at TEXT NOT NULL,          -- when a look found the sample complete and stored this
            completed_at TEXT NOT NULL,        -- created_at of the rating that completed the planned sample
            completed_rating_id INTEGER NOT NULL,
            gate_hash TEXT NOT NULL,
            decision TEXT NOT NULL,            -- KEEP | DROP | INSUFFICIENT DATA
            sample_json TEXT NOT NULL,         -- JSON: the ids of the ratings in the decision sample
            excluded_json TEXT NOT NULL,       -- JSON: raters left out by the gold check, as of completion
            verdict_json TEXT NOT NULL,        -- JSON: the verdict (conditions, per-criterion rows, gate values)
            speed_json TEXT NOT NULL           -- JSON: the speed figure the verdict weighed
        )"""
    )
    db.execute(
        """CREATE TRIGGER decisions_never_change BEFORE UPDATE ON decisions
           BEGIN SELECT RAISE(ABORT, 'a frozen decision never changes'); END"""
    )
    db.execute(
        """CREATE TRIGGER decisions_never_go BEFORE DELETE ON decisions
           BEGIN SELECT RAISE(ABORT, 'a frozen decision never changes'); END"""
    )


# rebuilds pairs, which ratings and assignments point at: foreign keys off around it, checked before commit
_m010_gold_pairs.foreign_keys_off = True


def _m012_reveal_hold(db) -> None:
    # A pair closes when the rating that fills its quota is stored; only then is its reveal shown, and a closed pair
    # is never offered again (evalkit.rating.queue: one person with two identities must not read a reveal of a pair that
    # another of their identities can still rate).
    db.execute(
        """CREATE TABLE closed_pairs (
            pair_id TEXT PRIMARY KEY REFERENCES pairs(id),
            closed_at TEXT NOT NULL
        )"""
    )


def _m013_batch_runs(db) -> None:
    """The ordinary path measured at batch sizes above 1 (`evalkit bench --batch-sizes`): one row per request of a
    batched generate() call, its generation marked with the batch size it ran in."""
    db.execute(
        """CREATE TABLE batch_runs (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiments(id),
            process_id INTEGER REFERENCES bench_processes(id),
            generation_id INTEGER REFERENCES generations(id),
            path TEXT NOT NULL,
            batch_size INTEGER NOT NULL CHECK (batch_size >= 1),
            batch_call INTEGER NOT NULL,       -- the call's number within its process: its requests share it
            slot INTEGER NOT NULL,             -- the request's row in the batch
            prompt_id TEXT NOT NULL,
            round INTEGER NOT NULL,
            rep INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            new_tokens INTEGER NOT NULL,
            stop_reason TEXT NOT NULL,
            seconds REAL NOT NULL,             -- the call's generate() seconds: what each of its requests waited
            left_padding INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
            error TEXT NOT NULL DEFAULT '',    -- why a batch size could not run (out of memory)
            rank INTEGER NOT NULL DEFAULT 0,
            host TEXT NOT NULL DEFAULT '',
            device TEXT NOT NULL DEFAULT ''
        )"""
    )
    db.execute("CREATE INDEX batch_runs_experiment ON batch_runs(experiment_id, batch_size)")
    db.execute("ALTER TABLE generations ADD COLUMN batch_size INTEGER NOT NULL DEFAULT 1")

def _m014_paths_in_code(db) -> None:
    """generations.path without its CHECK list: the paths are registered objects (evalkit.generation.registry) and
    the store refuses an unregistered one in code (store.runs), so a new path needs no migration. A list in the
    schema would need a table rebuild for every new path; a table of path names would only copy the registry (which
    holds code: generate() arguments, switches) and would still need a row per new path. SQLite cannot drop a CHECK
    in place, so the table is rebuilt (its 12-step procedure; migrate() runs this with foreign keys off and checks
    them before committing). Columns, their order and every other constraint are those of 001 + 006 + 009 + 013."""
    db.execute(
        """CREATE TABLE generations_new (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER REFERENCES experiments(id),
            created_at TEXT NOT NULL,
            prompt_id TEXT NOT NULL,
            path TEXT NOT NULL,            -- a registered path (evalkit.generation.registry), checked by the store
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
            live INTEGER NOT NULL DEFAULT 0,
            rank INTEGER NOT NULL DEFAULT 0,
            host TEXT NOT NULL DEFAULT '',
            device TEXT NOT NULL DEFAULT '',
            work_index INTEGER,
            draft_tokens INTEGER,
            candidate_generator TEXT NOT NULL DEFAULT '',
            batch_size INTEGER NOT NULL DEFAULT 1
        )"""
    )
    db.execute("INSERT INTO generations_new SELECT id, experiment_id, created_at, prompt_id, path, status, text, "
               "token_ids, token_hash, prompt_tokens, new_tokens, stop_reason, generate_seconds, decode_seconds, "
               "peak_rss_mb, rss_mb, cuda_memory, draft_proposed, draft_accepted, draft_rounds, target_passes, "
               "tokens_per_target_pass, counts_agree, seed, decoding, effective_config, error_class, error_stage, "
               "error_message, fallback_of, total_wait_seconds, live, rank, host, device, work_index, draft_tokens, "
               "candidate_generator, batch_size FROM generations")
    db.execute("DROP TABLE generations")
    db.execute("ALTER TABLE generations_new RENAME TO generations")
    db.execute("CREATE INDEX generations_prompt_path ON generations(prompt_id, path)")


# rebuilds generations, which pairs, timing_runs, prescreen and batch_runs point at: foreign keys off around it
_m014_paths_in_code.foreign_keys_off = True

# The answer columns of one criterion in the wide ratings table: each rating keeps the rater's answer per side (a_, b_)
# and per path (ordinary_, assisted_; empty on a gold pair).
ANSWER_PREFIXES = ("a", "b", "ordinary", "assisted")


def criterion_columns(db, criterion_ids) -> list[str]:
    """The generic step after the named migrations: add the answer columns of every registered criterion that the
    ratings table lacks (002_ratings wrote out the first four). Generated, unlike the migrations above, because a
    criterion is one registered object (evalkit.task.criteria) and its columns follow from its id; only ever adds
    nullable columns, so an existing database means what it meant, and old ratings read as unanswered (NULL) on a
    criterion registered after them. Returns the columns added; the caller holds the write lock."""
    have = {r[1] for r in db.execute("PRAGMA table_info(ratings)").fetchall()}
    added = []
    for cid in criterion_ids:
        for prefix in ANSWER_PREFIXES:
            col = f"{prefix}_{cid}"
            if col not in have:  # ids are checked plain names (criteria.register): safe in DDL
                db.execute(f"ALTER TABLE ratings ADD COLUMN {col} TEXT CHECK ({col} IN ('pass', 'fail', 'unsure'))")
                added.append(col)
    return added


def _m015_queue_order(db) -> None:
    # The queue serves a pool's pairs in an order drawn at random when the pool was made (evalkit.rating.queue), so
    # that the rated pairs are a uniformly random subset of the pool at every look: what prediction-powered inference
    # (evalkit.stats.ppi) needs to use the pre-screen's answers on the unrated pairs. The seed is stored with the
    # experiment that drew it; a pair without a rank (a pool made before this) is served after every ranked pair.
    db.execute("ALTER TABLE pairs ADD COLUMN queue_rank REAL")
    db.execute("ALTER TABLE experiments ADD COLUMN queue_seed INTEGER")
    db.execute("CREATE INDEX pairs_queue_rank ON pairs(queue_rank)")


def _m016_ratings_wanted(db) -> None:
    # The ratings each pair wants, stored when the queue order is drawn (store.draw_queue_order) from the study's
    # frozen gate: min_ratings_per_pair, or with one rating per pair a second one for a random share of the pairs.
    # The queue serves a pair until it has them, the reveal waits for them, and the decision sample counts a pair
    # complete at them. NULL (a pool made before this): the app's configured quota, app.ratings_per_pair.
    db.execute("ALTER TABLE pairs ADD COLUMN wanted_ratings INTEGER CHECK (wanted_ratings IS NULL OR wanted_ratings >= 1)")


def _m017_results_seen(db) -> None:
    # An organiser sees the Results at any time, and may rate too. Once they have seen them while a pair they could
    # still be served had ratings (per-path tables over few pairs can tell that pair's sides), the ratings they give
    # in that study are stored with blind = 0: kept and exported, never counted (evalkit.rating.queue).
    db.execute(
        """CREATE TABLE results_seen (
            rater TEXT NOT NULL,
            study_id INTEGER NOT NULL REFERENCES studies(id),
            seen_at TEXT NOT NULL,
            PRIMARY KEY (rater, study_id)
        )"""
    )


# Append-only: never edit or reorder a shipped migration; add a new one at the end.
def _m018_bench_stored_at(db) -> None:
    # When a benchmark's results were stored (they are stored together, after every worker finished). A decision
    # frozen at completion weighs the benchmark stored by then: the experiment's created_at is when it started, so a
    # look during a running benchmark and one after it would have frozen different figures. Older rows: NULL (the
    # experiment's start stands in, as before).
    db.execute("ALTER TABLE bench_processes ADD COLUMN stored_at TEXT")


def _m019_pool_sample_seed(db) -> None:
    # A pool's samples were generated with the config's public decoding.seed + sample, so anyone with the config and
    # the (reproducible) models could rebuild the pool offline and read every pair's sides before rating. Each pool
    # experiment now draws a secret base when it is made (evalkit.study.pairs), sample s using base + s (the
    # generations' seed column keeps the seed used); a resume reuses it. NULL: a pool made before this, whose base
    # is its config's decoding.seed.
    db.execute("ALTER TABLE experiments ADD COLUMN sample_seed INTEGER")


def _m020_closed_before_012(db) -> None:
    # Migration 012 began recording closings (closed_pairs) but recorded none for the pairs already filled: in a
    # database rated before it, every such pair counted as open (rating.queue.unclosed_pairs), so a finished study's
    # export and report said pairs were still open to raters and its push was refused. Each pair whose quota was
    # filled by a rating stored before 012 was applied is closed as of that rating. Its quota: the pair's own, else the
    # app.ratings_per_pair its pool was made with (3, the default, where that config does not say).
    applied = db.execute("SELECT applied_at FROM _migrations WHERE name = '012_reveal_hold'").fetchone()
    if applied is None:
        return
    db.execute(
        """INSERT OR IGNORE INTO closed_pairs (pair_id, closed_at)
           SELECT pair_id, created_at FROM (
               SELECT r.pair_id, r.created_at,
                      ROW_NUMBER() OVER (PARTITION BY r.pair_id ORDER BY r.id) AS k,
                      COALESCE(p.wanted_ratings, json_extract(e.config_json, '$.app.ratings_per_pair'), 3) AS quota
               FROM current_ratings r JOIN pairs p ON p.id = r.pair_id
               JOIN experiments e ON e.id = p.experiment_id)
           WHERE k = quota AND created_at <= ?""", [applied[0]])


def _m021_closed_by_decision(db) -> None:
    # A stored decision now closes every pair of its study (store.insert_decision), so the queue stops serving a study
    # that is decided. A study decided before that still had open pairs, and its raters went on rating what could no
    # longer count: its pairs are closed as of its decision.
    db.execute("""INSERT OR IGNORE INTO closed_pairs (pair_id, closed_at)
                  SELECT p.id, d.decided_at FROM decisions d JOIN experiments e ON e.study_id = d.study_id
                  JOIN pairs p ON p.experiment_id = e.id""")


def _m022_export_salt(db) -> None:
    # The export's pseudonyms were salted by a file in the data folder, which was relative to where the command ran:
    # one database exported from two folders named its raters twice over. The salt now lives in the database it
    # names raters of (one row; never exported), adopted from the file where there is one (publish.scrub.export_salt).
    db.execute("""CREATE TABLE IF NOT EXISTS export_salt (
                  id INTEGER PRIMARY KEY CHECK (id = 1), salt TEXT NOT NULL, source TEXT NOT NULL,
                  created_at TEXT NOT NULL)""")


def _m023_hold_alive(db) -> None:
    # A hold counted from the pair's first showing only: a rater who took more than the hold's 30 minutes over a pair
    # found it given to another rater meanwhile, and her answers lost. The page now says she is still at work (after
    # her own input, every few minutes), and the hold counts from the latest such sign; shown_at stays the start of
    # the time on task.
    db.execute("ALTER TABLE assignments ADD COLUMN alive_at TEXT")


def _m024_pushes_while_rating(db) -> None:
    # `evalkit export --push-to-hub --while-rating` sent the sides of pairs still open to raters to a Hub repo and left
    # no trace: a later card or report of the study could not say that its ratings were given while an export that
    # tells the sides was on the Hub. Each such push is recorded (the study, the pairs open then, the repo), and the
    # study's provenance names it (publish.provenance).
    db.execute("""CREATE TABLE IF NOT EXISTS pushes_while_rating (
                  id INTEGER PRIMARY KEY, study_id INTEGER REFERENCES studies(id), pushed_at TEXT NOT NULL,
                  repo_id TEXT NOT NULL, private INTEGER NOT NULL, open_pairs INTEGER NOT NULL)""")


def _m025_hold_displaced(db) -> None:
    # A name that kept a pair to the hold cap holds nothing away from others for a day (rating.queue.CAP_LAPSE_HOURS):
    # its pair went to another rater at once, but its own later submit still filled the pair's quota, and the rater
    # served the pair in good faith was told "taken" and lost her work. Such a hold is now displaced when the pair is
    # served to a rater whose hold counts (store.claim_pair), and the displaced name's submit is refused.
    db.execute("ALTER TABLE assignments ADD COLUMN displaced_at TEXT")


def _m026_submission_ids(db) -> None:
    # What became of a submission (the random id its page made when Submit was pressed, ui.rate._SENDING) was kept in
    # the server's memory only: a restart forgot it, and so did the 10,000 newest kept; a reload then inferred it from
    # the pair. The id is now stored with the rating it stored, in the same row (so in the same transaction); an id
    # lands once. NULL: a row stored before this, a skip, or a rating from a caller of the API that sent no id.
    db.execute("ALTER TABLE ratings ADD COLUMN submission_id TEXT")
    db.execute("CREATE UNIQUE INDEX ratings_submission_id ON ratings(submission_id) WHERE submission_id IS NOT NULL")


def _m027_pair_stored_at(db) -> None:
    # When a pair joined its study (its queue rank was drawn, the pool complete: store.draw_queue_order). A pair's
    # created_at is when its sample was generated, hours before a long pool (or an accelerate shard merged at its end)
    # joins the study, so a decision rebuilt after such a pool joined counted it as stored by the completing rating (the
    # speed figure of a study without a benchmark, the pre-screen's population). NULL: a pair ranked before this, or
    # never ranked; its created_at stands in, as before.
    db.execute("ALTER TABLE pairs ADD COLUMN stored_at TEXT")


def _m028_references_kept(db) -> None:
    # A gold pair is scored against the reference outputs it was stored with (study.gold): each pool makes its own from
    # its own outputs, and store_references only refreshes a stored one's token ids. Nothing enforced that: a write to
    # a reference's text or expected answers rescored every answer already given on that check pair, moving which
    # raters the gold check leaves out (sceptic audit, 2026-12-06).
    db.execute(
        "CREATE TRIGGER reference_outputs_kept BEFORE UPDATE OF prompt_id, name, text, expected, note, content_hash "
        "ON reference_outputs BEGIN SELECT RAISE(ABORT, 'a gold pair''s reference output never changes once stored "
        "(reference_outputs: text, expected, note): other check pairs come from a new pool, `evalkit generate`'); END"
    )


def _m029_pair_withheld(db) -> None:
    # A pair withheld from every rater as its pool joined (it repeats a text a closed pair revealed: study.pairs.
    # revealed_copies) was known only by its closing bearing the instant it joined (closed_pairs.closed_at =
    # pairs.stored_at), so anything else closing a pair at that instant made it withheld, counted at the worst. Now a
    # column; the pairs so closed before are marked the same way, so an old study keeps its meaning.
    db.execute("ALTER TABLE pairs ADD COLUMN withheld INTEGER NOT NULL DEFAULT 0")
    db.execute("""UPDATE pairs SET withheld = 1 WHERE stored_at IS NOT NULL AND EXISTS (
                      SELECT 1 FROM closed_pairs w WHERE w.pair_id = pairs.id AND w.closed_at = pairs.stored_at)""")


def _m030_signup_client(db) -> None:
    # The new names one client made per hour and per day were counted in memory only: a restart (a Space restarts
    # often; an organiser restarts a local app) forgot them, and the client could make a day's names again. Each name
    # made by open sign-up now keeps its client, as a hash keyed by the server's key (never the address; the raters
    # table is not exported), and the limits are counted from these rows. NULL: invited, a Hub account, or before.
    db.execute("ALTER TABLE raters ADD COLUMN signup_client TEXT")
    db.execute("CREATE INDEX raters_signup_client ON raters(signup_client, created_at) WHERE signup_client IS NOT NULL")


def _m031_submission_refusals(db) -> None:
    # A refused submission's reason was kept in the server's memory only (ui.session._Submissions): after a restart, a
    # reload of a page that had not heard the refusal said the rating "had not reached the server", to submit again,
    # though it had reached it and been refused. One row per refused id, with its rater (only she is told) and the
    # refusal as the library wrote it; never exported.
    db.execute("CREATE TABLE submission_refusals (submission_id TEXT PRIMARY KEY, rater TEXT NOT NULL, "
               "what TEXT NOT NULL, fix TEXT NOT NULL, refused_at TEXT NOT NULL)")


def _m032_ratings_by_pair(db) -> None:
    # "Has this pair a rating?" (the frozen decision's count of pairs never rated, the queue's untakeable pairs) could
    # only use ratings_once_per_rater, a partial index (originals only), which a query that does not say so cannot use:
    # each pair scanned every rating, 20 s of a 0.6 s aggregate at 100,000 ratings (scripts/aggbench.py)
    db.execute("CREATE INDEX ratings_pair ON ratings(pair_id, kind)")


def _m033_pair_give_ups(db) -> None:
    # A pair at the head of the queue's order that no current rater can take (rating.queue.untakeable) held the next
    # look back for good. The organiser may now give it up (study.give_up): it keeps its place and counts at the worst,
    # as a passed-over pair does. One row per pair given up, when and why, so the frozen decision dates its completion
    # no earlier than the give-up that completed it (aggregate.decision._as_of).
    db.execute("CREATE TABLE pair_give_ups (pair_id TEXT PRIMARY KEY REFERENCES pairs(id), "
               "given_up_at TEXT NOT NULL, reason TEXT NOT NULL)")


def _m034_client_limits(db) -> None:
    # Failed sign-ins and Live runs per hour were counted in memory only: a restart (a Space restarts often) gave every
    # client fresh guesses at personal codes. Keyed by the keyed hash of the client (or claimed owner, or page), never
    # an address; pruned as they age (store.limits); never exported.
    db.execute("CREATE TABLE limit_counts (kind TEXT NOT NULL, key TEXT NOT NULL, count INTEGER NOT NULL, "
               "last_at REAL NOT NULL, PRIMARY KEY (kind, key))")
    db.execute("CREATE INDEX limit_counts_last ON limit_counts(last_at)")
    db.execute("CREATE TABLE limit_events (kind TEXT NOT NULL, key TEXT NOT NULL, at REAL NOT NULL)")
    db.execute("CREATE INDEX limit_events_key ON limit_events(kind, key, at)")
    db.execute("CREATE INDEX limit_events_at ON limit_events(kind, at)")


def _m035_study_prescreen_rules(db) -> None:
    # Prediction-powered inference needs a pre-screen fixed before rating, but every look screened the pool with the
    # running code's rules (task.fidelity.RULES_VERSION), so rules edited once ratings were in (fitted to them, say)
    # entered every look not yet frozen. A study keeps the rules version of its first pool; NULL (studies made before
    # this migration): the running code's, as before.
    db.execute("ALTER TABLE studies ADD COLUMN prescreen_rules TEXT")
    db.execute(
        """CREATE TRIGGER studies_prescreen_rules_frozen BEFORE UPDATE OF prescreen_rules ON studies
           WHEN OLD.prescreen_rules IS NOT NULL
           BEGIN SELECT RAISE(ABORT, 'a study keeps the pre-screen rules it started with'); END""")


def _m036_database_identity(db) -> None:
    # A long-running process keys its memos of a study's looks by the database it read (store.database.identity); the
    # instant of the first migration told two databases at one path apart only to the millisecond, so two made in the
    # same millisecond (tests, a script making many) shared it. A random token drawn once tells them apart; a copy of
    # the file keeps it, as it keeps everything else that makes it the same database. One row, never exported.
    import secrets

    db.execute("""CREATE TABLE database_identity (
                  id INTEGER PRIMARY KEY CHECK (id = 1), token TEXT NOT NULL)""")
    db.execute("INSERT INTO database_identity (id, token) VALUES (1, ?)", [secrets.token_hex(16)])
    db.execute("""CREATE TRIGGER database_identity_kept BEFORE UPDATE ON database_identity
                  BEGIN SELECT RAISE(ABORT, 'a database keeps the identity it was made with'); END""")


def _m037_hub_revokes(db) -> None:
    # A Hub rater (a Space's sign-in) has no raters row, so nothing revoked her short of editing the Space's config and
    # restarting it. An organiser's revoke of a Hub username is a row (who, when), lifted by filling in lifted_*; a
    # name has at most one standing revoke (Hub usernames differ by more than case: compared without it).
    db.execute("CREATE TABLE hub_revokes (id INTEGER PRIMARY KEY, name TEXT NOT NULL, revoked_by TEXT NOT NULL, "
               "revoked_at TEXT NOT NULL, lifted_by TEXT, lifted_at TEXT)")
    db.execute("CREATE UNIQUE INDEX hub_revokes_standing ON hub_revokes(name COLLATE NOCASE) WHERE lifted_at IS NULL")
    db.execute(
        """CREATE TRIGGER hub_revokes_kept BEFORE UPDATE ON hub_revokes
           WHEN OLD.lifted_at IS NOT NULL OR NEW.name IS NOT OLD.name OR NEW.revoked_by IS NOT OLD.revoked_by
                OR NEW.revoked_at IS NOT OLD.revoked_at
           BEGIN SELECT RAISE(ABORT, 'a Hub revoke is kept as it was made; only its lift is written, once'); END""")
    db.execute("CREATE TRIGGER hub_revokes_no_delete BEFORE DELETE ON hub_revokes "
               "BEGIN SELECT RAISE(ABORT, 'a Hub revoke is kept as it was made'); END")


def _m038_results_views(db) -> None:
    # Every name's first view of each study's results, whatever it told then (results_seen records only the views that
    # leave her ratings uncounted): a pool made after it, in that study or a later one whose texts repeat it, is not
    # hers (store.ratings.VIEWED_BEFORE). The views results_seen recorded stand in for those made before this.
    db.execute(
        """CREATE TABLE results_views (
            rater TEXT NOT NULL,
            study_id INTEGER NOT NULL REFERENCES studies(id),
            seen_at TEXT NOT NULL,
            PRIMARY KEY (rater, study_id)
        )"""
    )
    db.execute("INSERT INTO results_views (rater, study_id, seen_at) SELECT rater, study_id, seen_at FROM results_seen")


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
    ("011_studies", _m011_studies),
    ("012_reveal_hold", _m012_reveal_hold),
    ("013_batch_runs", _m013_batch_runs),
    ("014_paths_in_code", _m014_paths_in_code),
    ("015_queue_order", _m015_queue_order),
    ("016_ratings_wanted", _m016_ratings_wanted),
    ("017_results_seen", _m017_results_seen),
    ("018_bench_stored_at", _m018_bench_stored_at),
    ("019_pool_sample_seed", _m019_pool_sample_seed),
    ("020_closed_before_012", _m020_closed_before_012),
    ("021_closed_by_decision", _m021_closed_by_decision),
    ("022_export_salt", _m022_export_salt),
    ("023_hold_alive", _m023_hold_alive),
    ("024_pushes_while_rating", _m024_pushes_while_rating),
    ("025_hold_displaced", _m025_hold_displaced),
    ("026_submission_ids", _m026_submission_ids),
    ("027_pair_stored_at", _m027_pair_stored_at),
    ("028_references_kept", _m028_references_kept),
    ("029_pair_withheld", _m029_pair_withheld),
    ("030_signup_client", _m030_signup_client),
    ("031_submission_refusals", _m031_submission_refusals),
    ("032_ratings_by_pair", _m032_ratings_by_pair),
    ("033_pair_give_ups", _m033_pair_give_ups),
    ("034_client_limits", _m034_client_limits),
    ("035_study_prescreen_rules", _m035_study_prescreen_rules),
    ("036_database_identity", _m036_database_identity),
    ("037_hub_revokes", _m037_hub_revokes),
    ("038_results_views", _m038_results_views),
]
