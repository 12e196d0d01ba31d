"""SQLite storage: every write and every transaction of evalkit is here.

Callers hand values (records, rows, snapshots), never file paths to read; each write runs in one write
transaction (write_transaction: BEGIN IMMEDIATE, a savepoint inside a caller's transaction), so a failure
mid-write leaves the database unchanged. Reads stay with the modules that use them (the rating queue in
evalkit.rating.queue, the aggregate's arrays in evalkit.aggregate).

    database    the connection (open_db; open_reader, read-only), write_transaction, migrate
    migrations  the schema: named, append-only migrations with literal DDL
    runs        experiments, generations, benchmark processes, tuning trials, pre-screen verdicts
    pool        study pairs, reference outputs, gold pairs, the merge of accelerate shards
    studies     studies (one frozen gate each), the pools they hold, their decisions frozen at completion
    ratings     assignments, ratings, corrections and skips
    raters      identities and their codes; organisers' revokes of Hub raters
    limits      failed sign-ins and Live runs per client, kept across restarts
"""

from .database import migrate, move_database, now, open_db, open_reader, restore_file, snapshot, write_transaction
from .migrations import MIGRATIONS
from .pool import draw_queue_order, insert_gold_pairs, set_queue_seed, insert_pairs, insert_shard_items, new_pair_id, reference_hash, store_references
from .limits import add_failure, count_event, failure_count
from .raters import (NameAmbiguous, NameTaken, hub_revoked, insert_rater, lift_hub_revoke, look_alikes, rater_by_key,
                     replace_secret, revoke_hub, revoke_rater, signups_since)
from .ratings import (
    SHARE_COUNTS, VIEWED_BEFORE, HoldDisplaced, PairFull, ShareReached, StudyDecided, claim_pair, insert_rating, insert_refusal, insert_results_seen, insert_results_view, recheck_hold, renew_hold,
)
from .studies import FIRST_STUDY, attach_pool, gate_mismatch, insert_decision, insert_give_ups, insert_push_while_rating
from .runs import (
    copy_experiment, discard_bench_experiment, discard_pool_experiment, generation, insert_bench_process, insert_bench_processes, insert_experiment, insert_generations, insert_live_run,
    insert_prescreen, insert_rows, insert_together, insert_tune_trials, json_hash,
)

__all__ = [
    "FIRST_STUDY", "attach_pool", "claim_pair", "recheck_hold", "draw_queue_order", "gate_mismatch", "insert_decision", "insert_give_ups", "insert_push_while_rating", "set_queue_seed",
    "HoldDisplaced", "MIGRATIONS", "add_failure", "count_event", "failure_count", "NameAmbiguous", "NameTaken", "PairFull", "SHARE_COUNTS", "VIEWED_BEFORE", "ShareReached", "StudyDecided", "copy_experiment", "discard_bench_experiment", "discard_pool_experiment",
    "generation", "insert_bench_process",
    "insert_bench_processes", "insert_experiment", "insert_generations", "insert_live_run", "insert_gold_pairs", "insert_pairs",
    "insert_prescreen", "insert_rater", "insert_rating", "insert_refusal", "insert_results_seen", "insert_results_view", "renew_hold", "insert_rows", "insert_shard_items",
    "insert_together", "insert_tune_trials", "json_hash",
    "migrate", "new_pair_id", "now", "open_db", "open_reader", "rater_by_key", "reference_hash",
    "move_database", "replace_secret", "restore_file", "revoke_rater", "hub_revoked", "lift_hub_revoke", "revoke_hub", "snapshot", "store_references",
    "write_transaction",
]
