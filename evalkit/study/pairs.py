"""The pair pool for blind rating: K samples per prompt per path, each ordinary/assisted pair stored with
a side assignment drawn at random once, here, and read from the database ever after.

It runs as one process or sharded under accelerate (`accelerate launch -m evalkit generate ...`): the
work list (prompt x sample; both paths of a sample stay together so they pair) is split with
`PartialState().split_between_processes`, each process writes its own shard database, and the main
process merges the shards into the main database in one transaction, in work-list order. Seeds are per
work item, so the content equals a single-process run with the same base. An interrupted run resumes with --resume.

The seeds are secret: each pool experiment draws a base when it is made (`secrets`, on the main process; stored with
the experiment, experiments.sample_seed, and read back by every process and by --resume), and sample s uses base + s.
A public base (the config's decoding.seed) would let anyone with the config and the models rebuild the pool offline
and read every pair's sides before rating. The generations' seed column keeps the seed used. Greedy decoding ignores
the seed: a greedy pool can be recomputed by anyone with the models (the README's Security section).

The work list holds a few extra samples per prompt (evalkit.study.gold.gold_samples: pool.gold_rate x study pairs):
their outputs are stored but not paired, and once every shard is merged the main process turns each into a gold
pair (one output changed by a controlled edit with a known answer), indistinguishable from a study pair until it
is rated. Last, it draws the queue's random order over the experiment's pairs (store.draw_queue_order), so that the
rated pairs are a uniformly random subset of the pool (what evalkit.stats.ppi rests on), and with it the ratings each
pair wants, from the study's frozen gate (draw_queue).
"""

from __future__ import annotations

import json
import logging
import math
import secrets
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..generation.speed import IDENTICAL_PAIR
from ..store.pool import WITHHELD
from ..errors import EvalkitError

log = logging.getLogger(__name__)


# Identical pairs, decided without raters: the one definition is generation/speed.IDENTICAL_PAIR.
IDENTICAL = IDENTICAL_PAIR
# A pool experiment's note since its processes warm both paths up untimed and let them take turns going first
# (warm_up, _run_item): a pool made before has no such note, and its timings carry the process's one-time costs on
# an ordinary run that always went first; the aggregate, report and card say which the pool's figure rests on.
WARMED_UP = "pool: one untimed call of each path before the timed runs; the paths take turns going first"
_WITHHELD = WITHHELD.format(p="p.")  # pairs no rater is served (revealed_copies)


@dataclass
class PoolResult:
    experiment_id: int | None  # None when --until-planned found the pool full already
    pairs: int
    fallbacks: int
    prompts: int
    skipped_done: int = 0
    gold: int = 0  # gold (check) pairs in this experiment
    study: str = ""  # the study the pool belongs to
    study_pairs: int = 0  # study pairs the study's pool holds now, every pool experiment of it together
    planned_pairs: int = 0  # the study's frozen planned_pairs
    planned_pool: int = 0  # and planned_pool (the pooled pairs the plan's power assumes)


def shard_path(db_path: Path, experiment_id: int, rank: int) -> Path:
    return db_path.with_name(f"{db_path.name}.shard-e{experiment_id}-r{rank}.db")


def shard_files(db_path: Path) -> dict[int, list[Path]]:
    """The shard databases (shard_path) beside the database, by experiment id, each experiment's in rank order."""
    import re

    name = re.compile(rf"{re.escape(db_path.name)}\.shard-e(\d+)-r(\d+)\.db")
    found: dict[int, list[tuple[int, Path]]] = {}
    for path in db_path.parent.glob(f"{db_path.name}.shard-e*-r*.db"):
        if m := name.fullmatch(path.name):
            found.setdefault(int(m[1]), []).append((int(m[2]), path))
    return {e: [p for _rank, p in sorted(ranks)] for e, ranks in sorted(found.items())}


def _remove_db_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _done_items(db, experiment_id: int, base_seed: int) -> set[tuple[str, int]]:
    """(prompt, sample) of the work items stored: a study pair, a fallback, or a gold sample's outputs (an item's
    records are stored together, so one of them means all)."""
    done = {(r["prompt_id"], r["sample"]) for r in db.query(
        "SELECT prompt_id, sample FROM pairs WHERE experiment_id = ? AND kind = 'study'", [experiment_id])}
    done |= {(r["prompt_id"], r["seed"] - base_seed) for r in db.query(
        "SELECT prompt_id, seed FROM generations WHERE experiment_id = ? AND path IN ('assisted', 'fallback')",
        [experiment_id])}
    return done


def merge_shards(db, db_path: Path, experiment_id: int) -> int:
    """Copy every shard of this experiment into the main database in ONE transaction, in work-list order,
    then delete the shard files. Returns the number of work items merged."""
    from ..store import insert_shard_items, open_db

    shards = shard_files(db_path).get(experiment_id, [])
    items: dict[int, dict] = {}
    for shard in shards:
        # Opened through the migrations: a rank killed while it was still creating its shard left part of the
        # schema (no work yet, since work is written only once the shard is open), and a shard from an older
        # evalkit has an older one. Either reads as the current schema.
        con = open_db(shard)
        try:
            for g in con.query("SELECT * FROM generations WHERE experiment_id = ? ORDER BY id", [experiment_id]):
                items.setdefault(g["work_index"], {"gens": [], "pairs": []})["gens"].append(g)
            for p in con.query("SELECT * FROM pairs WHERE experiment_id = ? AND kind = 'study'", [experiment_id]):
                items.setdefault(p["work_index"], {"gens": [], "pairs": []})["pairs"].append(p)
        finally:
            con.close()
    done = {(r[0], r[1]) for r in db.execute(
        "SELECT prompt_id, sample FROM pairs WHERE experiment_id = ? AND kind = 'study'", [experiment_id])}
    have = {(r[0], r[1], r[2]) for r in db.execute(
        "SELECT prompt_id, seed, path FROM generations WHERE experiment_id = ?", [experiment_id])}

    def merged(item: dict) -> bool:  # merged before an interruption of the merge's clean-up: not again
        if item["pairs"]:
            return any((p["prompt_id"], p["sample"]) in done for p in item["pairs"])
        return all((g["prompt_id"], g["seed"], g["path"]) in have for g in item["gens"])

    todo = [items[i] for i in sorted(items) if not merged(items[i])]
    merged = insert_shard_items(db, todo)
    for shard in shards:
        _remove_db_files(shard)
    return merged


def _run_item(pair, prompt, sample: int, index: int, cfg: Config, shard_db, exp_id: int,
              gold: bool = False, *, base: int) -> tuple[int, int]:
    """Both paths of one sample, stored as a pair (sides drawn once); a gold sample's outputs are stored unpaired
    (evalkit.study.gold makes them a gold pair), a failed assisted run's with its fallback. Seed: the pool's `base`
    (its secret experiments.sample_seed) + the sample."""
    from ..generation.paths import run_assisted, run_ordinary
    from ..store import insert_generations, insert_pairs

    seed = base + sample  # base: the pool's secret sample_seed
    # the paths take turns going first (the work index, so shards alike): the one run second met a machine the first
    # had just warmed on the same prompt, which always favoured assisted's seconds in the pool's speed figures
    if index % 2 == 0:
        ordinary = run_ordinary(pair, prompt, seed)
        assisted = run_assisted(pair, prompt, seed)
    else:
        assisted = run_assisted(pair, prompt, seed)
        ordinary = run_ordinary(pair, prompt, seed)
    for r in (ordinary, *assisted):
        r.work_index = index
    if len(assisted) > 1 or gold:  # fell back: kept, but not an assisted sample; gold: paired later
        insert_generations(shard_db, [ordinary, *assisted], exp_id)
        return 0, int(len(assisted) > 1)
    side = secrets.choice("AB")  # drawn once; the app reads it, never recomputes it
    insert_pairs(shard_db, exp_id, [{"prompt_id": prompt.id, "sample": sample, "ordinary": ordinary,
                                     "assisted": assisted[0], "ordinary_side": side, "work_index": index}])
    return 1, 0


def warm_up(pair, prompt, seed: int) -> None:
    """One untimed call of each path before the pool's first timed one, nothing stored: the process's first call pays
    one-time costs (kernels, allocator, caches) that the first pair's ordinary run, always first, carried alone, a
    speed-up for assisted that no request would see."""
    from ..generation.paths import run_assisted, run_ordinary

    run_ordinary(pair, prompt, seed)
    run_assisted(pair, prompt, seed)


def distributed_state(cfg: Config):
    """accelerate's PartialState; on a machine without CUDA it must be told to use the CPU (gloo),
    otherwise processes started by `accelerate launch` / torchrun would each run alone."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=cfg.models.device == "cpu" or not torch.cuda.is_available())


def _check_seeds(base: int, first: int, samples: int) -> None:
    from ..config import POOL_SEED_LIMIT

    if base + first + samples > POOL_SEED_LIMIT:  # live runs draw their seeds above the pool's
        raise EvalkitError(f"the pool's seeds (its base + samples {first} to {first + samples - 1}) exceed "
                           f"{POOL_SEED_LIMIT}", "use a smaller decoding.seed (a pool made before secret seeds), "
                           "or start a new database")


def _draw_sample_seed(db, cfg: Config, first: int, samples: int) -> int:
    """A new pool's secret base: its seeds base + first to base + first + samples - 1 stay below POOL_SEED_LIMIT
    (live runs draw above it) and meet no seed an earlier pool of the database used or planned (a repeated seed
    repeats an output raters may have seen; next_sample kept that true while the base was public)."""
    from ..config import POOL_SEED_LIMIT
    from .studies import pool_seeds_taken

    room = POOL_SEED_LIMIT - first - samples
    for _ in range(64) if room >= 0 else ():
        base = secrets.randbelow(room + 1)
        if not pool_seeds_taken(db, base + first, base + first + samples, cfg.decoding.seed):
            return base
    raise EvalkitError(f"no free range of {samples} pool seeds below {POOL_SEED_LIMIT} after sample {first}",
                       "start a new database for the new pool")


def latest_gate_hash(db_path: Path) -> set[str]:
    """The gate hash the latest study of an existing database froze ({} for none), read without creating or
    migrating the database: a pool that joins that study reads its gate file as that study's frozen gate."""
    import sqlite3

    if not Path(db_path).is_file():
        return set()
    try:
        con = sqlite3.connect(Path(db_path).resolve().as_uri() + "?mode=ro", uri=True)
        try:
            row = con.execute("SELECT gate_hash FROM studies ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            con.close()
    except sqlite3.Error:  # not a database of ours, or one from before studies: open_db says so later
        return set()
    return {row[0]} if row and row[0] else set()


def _study_for(db, gate: dict, new_study: str | None):
    """The study a new pool would join (the latest, when new_study is None), refusing a gate other than its frozen
    one before any model is loaded (store.attach_pool checks again, under the write lock)."""
    from ..store import gate_mismatch

    if new_study is not None:
        return None
    row = next(db.query("SELECT * FROM studies ORDER BY id DESC LIMIT 1"), None)
    if row is not None and row["gate_hash"] != gate.get("hash", ""):
        raise gate_mismatch(row, gate)
    return row


def _check_same_setting(db_path: Path, study_id: int, cfg: Config, compat, prompts: dict) -> None:
    """A pool joining a study is made with the settings of the study's first pool (aggregate.data.BENCH_MUST_MATCH:
    precision, decoding, drafting; the same weights). One made otherwise would put two settings' pairs in one study,
    and a benchmark of the new setting could decide the study's speed-up (verdict audit, 2026-12-04: a benchmark of
    a later pool's 20 draft tokens turned a DROP on the rated 5-token pairs into KEEP). Refused before any
    generation."""
    import json

    from ..aggregate.data import prompt_requests, request_mismatch, settings_mismatch, study_pool
    from ..store import open_db
    from ..task.prompts import criteria_hash

    db = open_db(db_path)
    try:
        first = study_pool(db, study_id)
        name = db.execute("SELECT name FROM studies WHERE id = ?", [study_id]).fetchone()[0]
        rated = prompt_requests(db, first["id"]) if first is not None else {}
        worded = prompt_requests(db, first["id"], "criteria_hash") if first is not None else {}
        # its prompts: the config's list, else those it stored once finished (an unfinished one stored only some)
        listed = (json.loads(first["config_json"] or "{}").get("pool") or {}).get("prompts") if first else None
        unfinished = first is not None and bool(db.execute(
            "SELECT 1 FROM pairs WHERE experiment_id = ? AND queue_rank IS NULL LIMIT 1", [first["id"]]).fetchone())
    finally:
        db.close()
    if first is None:
        return
    why = settings_mismatch(cfg.to_dict(), compat.to_json() if hasattr(compat, "to_json") else dict(compat or {}),
                            json.loads(first["config_json"] or "{}"), json.loads(first["compat_json"] or "{}"))
    # the requests too: a later pool of edited prompt files (or of other prompts) fills the decision sample where the
    # first pool runs out, with answers to another task under the same ids (sceptic audit, 2026-12-06)
    ids = set(listed) if listed else None if unfinished else set(rated)
    why = why or request_mismatch(_requests(prompts), rated if ids is None else {p: rated.get(p, set()) for p in ids},
                                  ids_too=ids is not None)
    # and the questions: the Rate tab asks each pair's raters the wording stored with it, so a reworded criterion
    # would split the study into two criteria under one id
    why = why or request_mismatch(_requests(prompts, criteria_hash), worded, False, what="wording of its criteria")
    if why:
        raise EvalkitError(
            f"study '{name}' rates pairs made as its first pool (experiment {first['id']}) made them, and this config "
            f"differs: {why}; a pool made so would put two settings' "
            "pairs in one study, and their benchmarks could decide each other's speed-up",
            "generate with the study's settings and prompt files (pool.prompts; the requests its pairs answered are "
            "stored with them), or start a study of this setting with --new-study NAME")


def _requests(prompts: dict, hashed=None) -> dict[str, set[str]]:
    """The requests a pool of these prompt files answers (`hashed`: task.prompts.prompt_hash, or criteria_hash for
    the questions), as aggregate.data.prompt_requests reads a stored pool's."""
    from ..task.prompts import prompt_hash

    return {pid: {(hashed or prompt_hash)(p)} for pid, p in prompts.items()}


# What a resume shares with the experiment it finishes, besides the weights and tokenizers: every setting that shapes
# a sample's output or says which samples the experiment holds, so that experiments.config_json describes every pair
# of it. A resume used to skip every check: one experiment then held float32 8-token samples and bfloat16 3-token
# ones (audit, 2026-12-04).
RESUME_MUST_MATCH = (("", "generation_path"), ("", "load_draft"), ("models", "dtype"), ("models", "quantization"),
                     ("models", "revision"), ("decoding", "mode"), ("decoding", "temperature"), ("decoding", "top_p"),
                     ("decoding", "top_k"), ("decoding", "max_new_tokens"), ("decoding", "prompt_format"),
                     ("decoding", "stop_strings"), ("assistant", "num_assistant_tokens"),
                     ("assistant", "num_assistant_tokens_schedule"), ("assistant", "assistant_confidence_threshold"),
                     ("assistant", "allow_different_tokenizer"), ("assistant", "prompt_lookup_num_tokens"),
                     ("pool", "prompts"), ("pool", "gold_rate"))
_SAMPLING = {"temperature", "top_p", "top_k"}  # greedy decoding reads none of them


def resume_mismatch(row: dict, cfg: Config, compat) -> list[str]:
    """How this config and compatibility record differ from those pool experiment `row` was made with (empty when
    a resume may finish it). A key an older experiment did not record is not compared."""
    stored, now = json.loads(row["config_json"] or "{}"), cfg.to_dict()
    greedy = (stored.get("decoding") or {}).get("mode") == now["decoding"]["mode"] == "greedy"
    keys = RESUME_MUST_MATCH + ((("decoding", "seed"),) if row["sample_seed"] is None else ())  # the old public base
    out = []
    for section, key in keys:
        was = stored.get(section) or {} if section else stored
        if key not in was or (greedy and section == "decoding" and key in _SAMPLING):
            continue
        value = now[section][key] if section else now[key]
        if value != was[key]:
            out.append(f"{section + '.' if section else ''}{key} = {value!r} where experiment {row['id']} has "
                       f"{was[key]!r}")
    was_compat, now_compat = json.loads(row["compat_json"] or "{}"), compat.to_json()
    for role in ("target", "draft"):
        for fact, what in (("weights_digest", "weights"), ("tokenizer", "tokenizer")):
            a, b = ((was_compat.get(role) or {}).get(fact)), ((now_compat.get(role) or {}).get(fact))
            if a and b and a != b:
                out.append(f"other {role} {what} than experiment {row['id']} was made with")
    return out


def _plan(cfg: Config, db_path: Path, prompts: dict, samples: int, resume: int | None, progress: bool,
          new_study: str | None = None, until_planned: float | None = None, previous: int | None = None,
          created: list | None = None) -> dict:
    """Main process: the experiment (new, or the one to resume) and the work items still to do. With
    `until_planned` (the reserve), as many samples per prompt as the study needs to hold its planned pairs plus the
    reserve; `previous`: the study pairs before the last round (a round that added none stops the filling);
    `created`: a new experiment's id is appended the moment it exists, so that a stop before the plan is returned
    can still remove it."""

    from ..generation.compat import assisted_allowed
    from .gate import gate_snapshot
    from ..generation.models import check_compat
    from ..store import insert_experiment, open_db, set_queue_seed
    from .studies import fill_target, next_sample

    # a bad gate file is refused before the database is opened: opening it would create a new, empty one (the
    # latest study's own gate, which a later pool joins, is read as frozen: gate.read_gate_file)
    gate = (gate_snapshot(cfg.gate_file or None, latest_gate_hash(db_path) if new_study is None else set())
            if resume is None else None)
    # a --resume whose database does not exist is refused before the models load (check_compat)
    if resume is not None and not Path(db_path).exists():  # opening it would create a new, empty database
        raise EvalkitError(f"--resume {resume}: database {db_path} does not exist, so it holds no pool to finish; "
                           "nothing was written", "pass the --db the stopped `evalkit generate` used (its --resume "
                           "line names the experiment in that database)")
    # a pair the pool cannot use is refused before the database is opened too (organiser audit: a draft `evalkit check` does not approve left a new,
    # empty database behind, which later commands then read as a study's)
    compat = check_compat(cfg, progress)
    if not assisted_allowed(cfg, compat):
        raise EvalkitError(
            "the pair pool needs both paths, but the assisted path is "
            + ("switched off" if not cfg.assisted_enabled else "not approved: " + "; ".join(compat.reasons))
            + f"; nothing was written to {db_path}",
            "set generation_path = 'assisted' and load_draft = true in the config" if not cfg.assisted_enabled else
            "fix what `evalkit check --config CONFIG` reports (the reasons above), then run generate again",
        )
    unfinished: dict[int, int] = {}
    db = open_db(db_path)
    try:
        if resume is not None:
            row = next(db.query("SELECT * FROM experiments WHERE id = ? AND kind = 'pool'", [resume]), None)
            if row is None:
                open_ids = unfinished_pools(db, db_path)
                raise EvalkitError(f"experiment {resume} is not a pair-pool experiment in {db_path}",
                                   "pass the id a stopped `evalkit generate` printed: "
                                   + (f"unfinished here: {', '.join(str(i) for i in open_ids)}" if open_ids else
                                      "this database holds no unfinished pool"))
            first, samples = row["first_sample"], row["pool_samples"] or samples
            from ..aggregate.data import prompt_requests

            # the requests its stored samples answered, and the criteria's wording stored with them
            answered, worded = prompt_requests(db, resume), prompt_requests(db, resume, "criteria_hash")
            study_id = row["study_id"]
            # the experiment's own base; a pool made before secret seeds (migration 019) used decoding.seed
            base = row["sample_seed"] if row["sample_seed"] is not None else cfg.decoding.seed
        else:
            unfinished = unfinished_pools(db, db_path)
            study = _study_for(db, gate, new_study)
            study_id = study["id"] if study is not None else None
            first = next_sample(db, cfg.decoding.seed)
            if until_planned is not None:
                planned = int(gate["values"].get("planned_pairs") or 0)
                if planned <= 0:
                    raise EvalkitError(f"--until-planned needs a planned size, and gate file {gate['path']} has "
                                       "planned_pairs = 0", "run `evalkit plan` and put its planned_pairs line in the "
                                       "gate file (before the study's first pool, or with --new-study NAME)")
                have = 0 if study is None else db.execute(
                    "SELECT COUNT(*) FROM pairs p JOIN experiments e ON e.id = p.experiment_id "
                    "WHERE e.study_id = ? AND p.kind = 'study'", [study_id]).fetchone()[0]
                target = fill_target(planned, until_planned, int(gate["values"].get("planned_pool") or 0))
                if have >= target:
                    return {"experiment_id": None, "todo": [], "skipped": 0, "have": have, "target": target,
                            "unfinished": unfinished}
                if previous is not None and have <= previous:
                    raise EvalkitError(
                        f"--until-planned stopped at {have} of {target} study pairs: its last round added none "
                        "(every assisted sample fell back)", "fix what `evalkit check` and the stored fallback "
                        "records report, then run `evalkit generate --until-planned` again")
                samples = math.ceil((target - have) / len(prompts))
            base = None
        span = samples + math.ceil(cfg.pool.gold_rate * samples)  # gold samples follow
        if base is None:  # a new pool experiment: a secret base, drawn here, on the main process only
            base = _draw_sample_seed(db, cfg, first, span)
        _check_seeds(base, first, span)
    finally:
        db.close()
    if resume is not None:
        from ..aggregate.data import request_mismatch
        from ..task.prompts import criteria_hash

        # a prompt file edited since the stop: the experiment's samples would answer two requests under one id
        them = f"experiment {resume}'s samples"
        why = resume_mismatch(row, cfg, compat) + [w for w in [
            request_mismatch(_requests(prompts), answered, False, them),
            request_mismatch(_requests(prompts, criteria_hash), worded, False, them, "wording of its criteria")] if w]
        if why:
            raise EvalkitError(
                f"--resume {resume}: this config differs from the one experiment {resume} was made with: "
                + "; ".join(why) + "; finishing it so would put two settings' samples in one experiment",
                f"resume with the config and prompt files experiment {resume} was made with (stored in the "
                "database: experiments.config_json, and each sample's request), or leave out --resume to make a new "
                "pool (with --new-study NAME for another setting)")
    elif study_id is not None:
        _check_same_setting(db_path, study_id, cfg, compat, prompts)
    db = open_db(db_path)
    try:
        if resume is not None:
            merge_shards(db, db_path, resume)  # what an interrupted run left in its shards
            exp_id = resume
        else:
            exp_id = insert_experiment(db, "pool", cfg.to_dict(), compat, note=WARMED_UP, gate=gate, new_study=new_study,
                                       first_sample=first, pool_samples=samples, sample_seed=base)
            if created is not None:
                created.append(exp_id)
            # the queue seed now, the ranks once every pair is in (draw_queue): the queue serves no pair of a pool
            # whose seed is stored and whose ranks are not (rating.queue), so raters never meet a pool half made
            # (merged, gold pairs missing, quotas not drawn), while `generate` runs beside the app or was stopped
            set_queue_seed(db, exp_id, secrets.randbits(62))
        done = _done_items(db, exp_id, base)
    finally:
        db.close()
    from .gold import gold_samples

    # each prompt's study samples, then its extra samples that become gold pairs (numbered after them)
    extra = gold_samples(list(prompts), samples, cfg.pool.gold_rate)
    items = [(pid, s) for pid in prompts for s in range(first, first + samples + extra[pid])]
    work = [(i, pid, s, s >= first + samples) for i, (pid, s) in enumerate(items)]
    todo = [w for w in work if (w[1], w[2]) not in done]
    return {"experiment_id": exp_id, "todo": todo, "skipped": len(work) - len(todo),
            "unfinished": unfinished}


def _make_items(cfg: Config, db_path: Path, state, plan: dict, prompts: dict, device, progress: bool):
    """This process's share of the work items, each stored in its own shard as it is made. Returns (made, fell back)."""
    from ..generation.models import load_pair
    from ..progress import bar as progress_bar
    from ..store import copy_experiment, open_db

    exp_id, made, fallbacks = plan["experiment_id"], 0, 0
    with state.split_between_processes(plan["todo"]) as mine:
        if mine:
            pair = load_pair(cfg, progress=progress and state.is_main_process, device=device, rank=state.process_index)
            shard = open_db(shard_path(db_path, exp_id, state.process_index))
            main_ro = open_db(db_path, migrate_schema=False)
            exp_row = next(main_ro.query("SELECT * FROM experiments WHERE id = ?", [exp_id]))
            # every process reads the base the main process stored (the plan's file beside the database never holds it)
            base = exp_row["sample_seed"] if exp_row["sample_seed"] is not None else cfg.decoding.seed
            study_row = next(main_ro.query("SELECT * FROM studies WHERE id = ?", [exp_row["study_id"]]), None)
            main_ro.close()
            copy_experiment(shard, exp_row, study_row)  # so the shard's foreign keys hold
            desc = "pair pool" if state.num_processes == 1 else f"pair pool (rank {state.process_index})"
            warm_up(pair, prompts[mine[0][1]], base)
            bar = progress_bar(total=len(mine), desc=desc, unit="pair", disable=not progress, position=state.process_index)
            try:
                for index, prompt_id, sample, gold in mine:
                    m, f = _run_item(pair, prompts[prompt_id], sample, index, cfg, shard, exp_id, gold, base=base)
                    made, fallbacks = made + m, fallbacks + f
                    bar.update(1)
            finally:
                bar.close()
                shard.close()
    return made, fallbacks


def _stored_items(db, db_path: Path, experiment_id: int) -> int:
    """Work items of a pool experiment stored so far: in the main database and in its shards."""
    from ..store import open_db

    base = db.execute("SELECT sample_seed FROM experiments WHERE id = ?", [experiment_id]).fetchone()
    n = len(_done_items(db, experiment_id, base[0] or 0)) if base is not None else 0
    for shard in shard_files(db_path).get(experiment_id, []):
        try:
            con = open_db(shard, migrate_schema=False)
            try:
                n += con.execute("SELECT COUNT(DISTINCT work_index) FROM generations WHERE experiment_id = ?",
                                 [experiment_id]).fetchone()[0]
            finally:
                con.close()
        except Exception:  # noqa: BLE001 - a shard a killed rank left half made holds no work
            continue
    return n


def unfinished_pools(db, db_path: Path) -> dict[int, int]:
    """Pool experiments a `generate` began and did not finish (stopped, killed, or running now), with the work items
    each stored: a shard left beside the database, or a queue seed with pairs not yet ranked (draw_queue, the last
    step of a pool, ranks them all), or nothing stored at all. Their pairs reach no rater until --resume finishes
    them."""
    ids = {r[0] for r in db.execute(
        """SELECT e.id FROM experiments e WHERE e.kind = 'pool' AND e.queue_seed IS NOT NULL AND (
               EXISTS (SELECT 1 FROM pairs p WHERE p.experiment_id = e.id AND p.queue_rank IS NULL)
               OR NOT EXISTS (SELECT 1 FROM generations g WHERE g.experiment_id = e.id))""")}
    known = {r[0] for r in db.execute("SELECT id FROM experiments WHERE kind = 'pool'")}
    ids |= known & set(shard_files(db_path))
    return {i: _stored_items(db, db_path, i) for i in sorted(ids)}


def resume_command(cfg: Config, db_path: Path, experiment_id: int) -> str:
    """The command that finishes pool experiment `experiment_id`, as a shell reads it (a path with a space is quoted:
    pasted as printed, it must name the same files)."""
    import shlex

    return (f"evalkit generate --resume {experiment_id} --db {shlex.quote(str(db_path))}"
            + (f" --config {shlex.quote(str(cfg.source))}" if cfg.source and Path(cfg.source).is_file() else ""))


def _after_stop(cfg: Config, db_path: Path, exp_id: int, items: int | None, *, created: bool, merge: bool,
                interrupted: bool, echo) -> None:
    """A pool run stopped by an error or Ctrl-C (main process). A new experiment that stored nothing goes, with the
    study it made: a failed start (a model that would not load, memory that ran out) must not freeze the gate
    (audit, 2026-12-04: the user's planned gate was then refused for a study with no pairs). Otherwise one process's
    shard is merged now (a later plain `generate` would leave it behind) and the user is told how to finish."""
    from ..store import discard_pool_experiment, open_db

    how = "interrupted" if interrupted else "stopped by the error below"
    try:
        db = open_db(db_path, migrate_schema=False)
        try:
            stored = _stored_items(db, db_path, exp_id)
            if stored == 0 and created:
                gone = discard_pool_experiment(db, exp_id)
                if gone:
                    for shard in shard_files(db_path).get(exp_id, []):
                        _remove_db_files(shard)  # ids are reused: a later experiment must not merge them
                    echo(f"generate {how} before any sample was stored: experiment {exp_id}"
                         + (" and the study it began were removed (no gate is frozen)" if gone == "study"
                            else " was removed"))
                    return
            if merge:
                merge_shards(db, db_path, exp_id)
        finally:
            db.close()
    except Exception as e:  # noqa: BLE001 - the cause of the stop is what the user must see, not this
        echo(f"(could not read what experiment {exp_id} kept: {type(e).__name__}: {e})")
        stored = None
    kept = ("" if stored is None else f"{stored} work items are stored; " if items is None  # stopped before its list
            else f"{stored} of {items} work items are stored; ")
    echo(f"generate {how}: experiment {exp_id} is unfinished; {kept}finish it with `{resume_command(cfg, db_path, exp_id)}`")


def build_pool(cfg: Config, db_path: Path | str | None = None, *, samples: int | None = None, resume: int | None = None,
               progress: bool = True, echo=print, new_study: str | None = None, until_planned: float | None = None,
               previous: int | None = None) -> PoolResult:
    """Add a pool experiment to the latest study (or to a new study `new_study`; or finish experiment `resume`):
    `samples` per prompt per path, numbered after the samples the database's pools already used. With `until_planned`
    (a reserve) one round of fill_pool: the samples the study still needs (none when it is full)."""
    from ..generation.handoff import share_decision
    from ..locations import db_path as default_db_path
    from ..task.prompts import load_prompts
    from ..store import open_db
    from ..store.studies import check_study_name

    samples = cfg.pool.samples if samples is None else samples  # --samples 0 is an error, not the default
    if samples < 1:
        raise EvalkitError(f"--samples {samples} must be at least 1", "pass a positive number")
    if new_study is not None:
        check_study_name(new_study)
    if db_path is not None and not isinstance(db_path, (str, Path)):  # an open database: use its file
        db_path = db_path.execute("PRAGMA database_list").fetchone()[2]
    db_path = Path(db_path) if db_path else default_db_path()
    prompts = {p.id: p for p in load_prompts(ids=cfg.pool.prompts or None)}
    if not db_path.exists():  # a missing model folder must not leave a new, empty database behind
        from ..generation.models import check_model_refs

        check_model_refs(cfg)
    state = distributed_state(cfg)
    if state.is_main_process:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    made_here: list[int] = []  # the experiment _plan made, known even where a stop lands before the plan is shared
    try:
        plan = share_decision(state, db_path.with_name(f"{db_path.name}.plan.json"),
                              lambda: _plan(cfg, db_path, prompts, samples, resume, progress, new_study, until_planned,
                                            previous, made_here))
    except BaseException as exc:
        if state.is_main_process and made_here:
            # a stop just after the experiment was made (its queue seed, the work list, the plan's hand-off) left it
            # empty, and every later generate named it unfinished: it goes, as at a stop before the first sample
            _after_stop(cfg, db_path, made_here[0], None, created=True, merge=False,
                        interrupted=isinstance(exc, KeyboardInterrupt), echo=echo)
        elif state.is_main_process and isinstance(exc, KeyboardInterrupt):
            # while the models are checked (loaded): the CLI's exit would otherwise be silent
            echo("generate interrupted before its first sample (while checking the models and planning the work): "
                 "no sample was stored"
                 + (f"; experiment {resume} is as it was" if resume is not None else ""))
        raise
    exp_id = plan["experiment_id"]
    try:  # from here every stop is the one below: a stop before _make_items began left an empty experiment too
        for old_id, stored in (plan.get("unfinished") or {}).items() if state.is_main_process else ():
            echo(f"experiment {old_id} of this database is unfinished ({stored} work items stored, none of them in "
                 f"the raters' queue): unless another `evalkit generate` is making it now, finish it with "
                 f"`{resume_command(cfg, db_path, int(old_id))}`")
        if exp_id is None:  # --until-planned: the study already holds its planned pairs and the reserve
            return _summary(db_path, PoolResult(None, 0, 0, len(prompts)), state)
        device = str(state.device) if state.num_processes > 1 and cfg.models.device == "auto" else None
        made, fallbacks = _make_items(cfg, db_path, state, plan, prompts, device, progress)
    except BaseException as exc:  # Ctrl-C too: the user learns what was kept and how to finish it
        if exp_id is None:
            raise
        if state.is_main_process:
            _after_stop(cfg, db_path, exp_id, len(plan["todo"]) + plan["skipped"], created=resume is None,
                        merge=state.num_processes == 1, interrupted=isinstance(exc, KeyboardInterrupt), echo=echo)
        raise
    state.wait_for_everyone()

    result = PoolResult(exp_id, made, fallbacks, len(prompts), plan["skipped"])
    if state.is_main_process:
        try:
            _finish_pool(cfg, db_path, exp_id, prompts, result, echo)
        except BaseException as exc:
            # Ctrl-C (or an error) while finishing: every sample is stored, and a --resume adds the gold pairs and the
            # queue's order; this stop printed only click's 'Aborted!' and left a pool that reaches no rater
            if _still_unfinished(db_path, exp_id):
                _after_stop(cfg, db_path, exp_id, len(plan["todo"]) + plan["skipped"], created=False, merge=False,
                            interrupted=isinstance(exc, KeyboardInterrupt), echo=echo)
            raise
    return _summary(db_path, result, state)


def _still_unfinished(db_path: Path, exp_id: int) -> bool:
    """Whether pool experiment `exp_id` still waits for a --resume (unfinished_pools), read after a stop; a stop after
    its queue's order was drawn left it finished."""
    from ..store import open_db

    try:
        db = open_db(db_path, migrate_schema=False)
        try:
            return exp_id in unfinished_pools(db, db_path)
        finally:
            db.close()
    except Exception:  # noqa: BLE001 - unreadable now: say how to finish it rather than nothing
        return True


def _finish_pool(cfg: Config, db_path: Path, exp_id: int, prompts: dict, result: PoolResult, echo) -> None:
    """Main process, once every work item is stored: merge the shards, add the gold pairs, draw the queue's order
    (each step idempotent, so a --resume of a pool stopped here finishes it), and say what the pool holds."""
    from ..store import open_db
    from .gold import add_gold_pairs, gold_count

    db = open_db(db_path, migrate_schema=False)
    try:
        merge_shards(db, db_path, exp_id)
        if withheld := revealed_copies(db, exp_id):
            echo(f"{len(withheld)} pair(s) of this pool repeat a text of a pair already closed (greedy decoding "
                 "repeats a prompt's outputs): its reveal and the Results told which path wrote it, and a person with "
                 "a second name could rate the copy knowing its sides, so no rater is served them; they keep their "
                 "place in the queue's random order and, where the decision sample reaches them, count at the worst "
                 "(which pairs repeat a revealed text depends on what they say, so leaving them out would lean the "
                 'sample); for new texts: decoding.mode = "sample", or more prompts')
        result.pairs = db.execute("SELECT COUNT(*) FROM pairs WHERE experiment_id = ? AND kind = 'study'",
                                  [exp_id]).fetchone()[0]
        # gold pairs per study pair a rater sees: identical pairs are decided without raters, withheld ones never shown
        differing = db.execute(f"SELECT COUNT(*) FROM pairs p WHERE experiment_id = ? AND kind = 'study' "
                               f"AND NOT {IDENTICAL.format(p='p.')}", [exp_id]).fetchone()[0] - len(withheld)
        wanted = gold_count(cfg.pool.gold_rate, differing)
        if wanted:
            add_gold_pairs(db, exp_id, list(prompts.values()), _target_tokenizer(cfg), limit=wanted)
        result.gold = db.execute("SELECT COUNT(*) FROM pairs WHERE experiment_id = ? AND kind = 'gold'",
                                 [exp_id]).fetchone()[0]
        # the queue's order, drawn once the pool is complete (study and gold pairs alike), stored with its seed,
        # and each pair's quota of ratings from the study's frozen gate
        from ..store.pool import rank_epoch

        epoch = rank_epoch(db, exp_id)
        if draw_queue(db, exp_id, withheld=withheld) and epoch:
            echo(f"the study has ratings already, so this pool's pairs follow every pair pooled before in the "
                 "queue's order: they count in the decision, and in the pre-screen's population, only where the "
                 "earlier pairs run out (a pool added after a look cannot re-draw the decision sample; to give "
                 "the pre-screen the planned pool, generate it before rating starts)")
        repeated_texts = texts_on_both_paths(db, exp_id)
        copies = pairs_sharing_a_text(db, exp_id)
        reach = rater_reach(db, exp_id) if copies else ""
        seen = db.execute("SELECT COUNT(*) FROM results_views WHERE study_id = (SELECT study_id FROM experiments "
                          "WHERE id = ?)", [exp_id]).fetchone()[0]
        if seen:  # rating.queue.note_results_view (store.VIEWED_BEFORE)
            echo(f"{seen} name(s) were shown this study's results before this pool: none of its new pairs is served "
                 "to them, organisers included (the per-path tables could colour them); to have them rate, start a "
                 "new study (`evalkit generate --new-study NAME`) whose texts are new to them: a pair repeating a "
                 "text of a study whose results they saw (greedy decoding) is not served to them either")
        result.fallbacks = db.execute(
            "SELECT COUNT(*) FROM generations WHERE experiment_id = ? AND path = 'fallback'", [exp_id]).fetchone()[0]
    finally:
        db.close()
    if result.fallbacks:
        from ..generation.fallbacks import experiment_cause_at  # the count alone sent users to sqlite3 (F6)
        echo(f"{result.fallbacks} assisted sample(s) failed and fell back: stored, but not made into pairs"
             + (f"; {cause}" if (cause := experiment_cause_at(db_path, exp_id)) else ""))
    for r in repeated_texts:
        echo(f"{r.prompt_id}: one output text is in {r.pairs} pairs, under the ordinary path in one and the "
             "assisted path in another; a rater who meets it twice learns little from its reveal "
             f"({r.text[:40]!r}…)")
    if copies:
        echo(f"{copies} study pairs share a text with another pair of this pool (greedy decoding gives every "
             "sample of a prompt the same texts): a rater is served at most one pair holding a text, since its "
             f"reveal tells which path wrote it, so {reach}; for more, use decoding.mode = \"sample\" or more "
             "prompts")
    if result.gold < wanted:
        echo(f"gold pairs: {result.gold} of the {wanted} that pool.gold_rate = {cfg.pool.gold_rate} asks for "
             f"({differing} study pairs whose outputs differ; a gold sample whose assisted run fell back makes "
             "none)")


def rater_reach(db, experiment_id: int) -> str:
    """What one_rater_reach means for the study's plan, as `evalkit generate` says it: the pairs one rater can be
    served, and the ratings the gate's planned roster can then give at most against those its planned pairs ask
    for (that part only where the gate plans pairs and a roster)."""
    from .studies import studies, study_pairs

    reach, to_rate = one_rater_reach(db, experiment_id)
    said = f"one rater can be served at most {reach} of the study's {to_rate} pairs to rate"
    sid = db.execute("SELECT study_id FROM experiments WHERE id = ?", [experiment_id]).fetchone()[0]
    study = next((s for s in studies(db) if s.id == sid), None)
    values = (study.gate.get("values") or {}) if study is not None else {}
    raters, planned = int(values.get("planned_raters") or 0), int(values.get("planned_pairs") or 0)
    total = study_pairs(db, study)
    if not raters or not planned or not total:
        return said
    k = int(values.get("min_ratings_per_pair") or 1)
    per_pair = k + (float(values.get("second_rating_share") or 0.0) if k == 1 else 0.0)
    # the planned pairs hold identical ones in the pool's proportion, which no rater rates
    need = round(planned * to_rate / total * per_pair)
    short = " (too few: the study cannot reach its planned pairs)" if reach * raters < need else ""
    return (f"{said}; the gate's {raters} planned raters can give at most {reach * raters} ratings, and its "
            f"{planned} planned pairs ask for about {need}{short}")


def draw_queue(db, experiment_id: int, seed: int | None = None, withheld=()) -> int:
    """store.draw_queue_order with the quotas of the experiment's study's frozen gate: min_ratings_per_pair per pair
    (with one, a second rating for second_rating_share of them), gold pairs alike; `withheld` pairs ranked and closed
    at once (revealed_copies). A pool whose study froze no gate keeps NULL quotas (the app's). Returns the number of
    pairs ranked."""
    from ..store import draw_queue_order
    from .studies import studies

    sid = db.execute("SELECT study_id FROM experiments WHERE id = ?", [experiment_id]).fetchone()
    study = next((s for s in studies(db) if sid is not None and s.id == sid[0]), None)
    values = (study.gate.get("values") or {}) if study is not None else {}
    if not values:
        return draw_queue_order(db, experiment_id, seed, withheld=withheld)
    per_pair = int(values["min_ratings_per_pair"])
    ranked = draw_queue_order(db, experiment_id, seed, per_pair, float(values["second_rating_share"]), withheld)
    _screen_after_join(db)
    _settle_after_join(db)
    return ranked


def _screen_after_join(db) -> None:
    """Screen the pool's outputs as it joins, under the rules of the evalkit that made it (aggregate.quality.screen_all):
    a study's looks read the answers of the rules version frozen with it (aggregate.ppi), and a pool first screened by
    the first reader found none of them once evalkit was upgraded in between, so PPI went unused. Outside the join's
    transaction, as the settle below; a failure leaves the screening to the next reader, as before."""
    from ..aggregate.quality import screen_all

    try:
        screen_all(db)
    except Exception:  # noqa: BLE001 - the join is stored; any reader screens the pool
        log.warning("could not pre-screen the pool as it joined; the next reader will", exc_info=True)


def _settle_after_join(db) -> None:
    """A pool of pairs that need no rating (identical, withheld) may reach a look as it joins: store the decision now
    if a look settles the study (aggregate.decision.settle, dated at the join), so the queue stops serving it at once
    rather than after one more rating, which could no longer count. Its own transaction, after the join's: the walk
    of the history may take seconds on a large study, too long to hold the write lock raters' submits wait on; settle
    is cheap while no new look is reached. The pool has joined whatever happens here; a failure leaves the decision to
    the next rating or reader, as before."""
    from ..aggregate.decision import settle

    try:
        settle(db)
    except Exception:  # noqa: BLE001 - the join is stored; any reader stores the decision later
        log.warning("could not check whether the pool's join settles the study; the next rating or reader will",
                    exc_info=True)


def _summary(db_path: Path, result: PoolResult, state) -> PoolResult:
    """The study the pool belongs to, its study pairs now and its planned pairs (main process)."""
    if not state.is_main_process:
        return result
    from ..store import open_db
    from .studies import choose, studies, study_pairs

    db = open_db(db_path, migrate_schema=False)
    try:
        study = choose(db)
        if result.experiment_id is not None:  # a resumed experiment may belong to an earlier study
            sid = db.execute("SELECT study_id FROM experiments WHERE id = ?", [result.experiment_id]).fetchone()[0]
            study = next((s for s in studies(db) if s.id == sid), study)
        result.study, result.study_pairs, result.planned_pairs = study.name, study_pairs(db, study), study.planned_pairs
        result.planned_pool = study.planned_pool
    finally:
        db.close()
    return result


def fill_pool(cfg: Config, db_path: Path | str | None = None, *, reserve: float, progress: bool = True, echo=print,
              new_study: str | None = None) -> list[PoolResult]:
    """`evalkit generate --until-planned`: pool rounds until the study holds its planned pairs plus `reserve`
    (a share of them). Each round is one pool experiment of the study, with its own progress bar; a second round
    happens only when samples of the first fell back. Returns the rounds (one with experiment_id None when the
    study held enough already)."""
    if not 0 <= reserve <= 1:
        raise EvalkitError(f"--reserve {reserve} is outside [0, 1]", "pass a share of the planned pairs, e.g. 0.1")
    rounds, previous = [], None
    while True:
        res = build_pool(cfg, db_path, progress=progress, echo=echo, new_study=new_study if not rounds else None,
                         until_planned=reserve, previous=previous)
        rounds.append(res)
        if res.experiment_id is None:
            return rounds
        previous = res.study_pairs - res.pairs  # before this round: the next round stops if this one added none


@dataclass
class RepeatedText:
    """One output text that stands on the ordinary side of one pair and the assisted side of another."""

    prompt_id: str
    pairs: int
    text: str


def texts_on_both_paths(db, experiment_id: int | None = None) -> list[RepeatedText]:
    """Texts that appear in more than one study pair, under both paths (greedy decoding, or a degenerate output,
    makes them). A rater who meets such a text twice sees it revealed once as each path, so one reveal says little
    about it; the pool reports them."""
    where = "" if experiment_id is None else "AND p.experiment_id = :e"
    rows = db.execute(
        f"""SELECT g.prompt_id, COUNT(DISTINCT p.id), g.text FROM pairs p
            JOIN generations g ON g.id IN (p.a_generation_id, p.b_generation_id)
            WHERE p.kind = 'study' {where}
            GROUP BY g.prompt_id, g.text HAVING COUNT(DISTINCT g.path) > 1 AND COUNT(DISTINCT p.id) > 1
            ORDER BY g.prompt_id""", {"e": experiment_id}).fetchall()
    return [RepeatedText(*r) for r in rows]


def revealed_copies(db, experiment_id: int) -> list[str]:
    """The study pairs of this pool, not ranked yet, that hold a text of a closed study pair of another pool (greedy
    decoding repeats a prompt's outputs in every pool). A closed pair's reveal has told its raters which path wrote
    each text, and the Results show it by path: the met-text rule keeps those raters from its copies only under the
    names they rated with, and a copy made after the pair closed never held its reveal back (open_copies), so a person
    with a second name could rate it knowing its sides, counted. So no rater may be served them (draw_queue withholds
    them). They used to be deleted, which made the pool's remaining pairs a choice by content: identical pairs never
    hold a revealed text (they are never rated), so the thinning kept every exact zero and dropped the differing pairs
    whose texts raters had met (under greedy decoding every prompt rated before), and where the earlier pools ran out
    the sample leaned to zeros, towards KEEP (sceptic audit, 2026-12-06). Kept in the random order and counted at the
    worst where the sample reaches them (aggregate.verdict._standing), the sample stays the pool's."""
    study = "p.kind = 'study' AND NOT " + IDENTICAL.format(p="p.")
    return [r[0] for r in db.execute(
        f"""SELECT DISTINCT p.id FROM pairs p JOIN generations g ON g.id IN (p.a_generation_id, p.b_generation_id)
            WHERE p.experiment_id = :e AND {study} AND p.queue_rank IS NULL
              AND g.text IN (SELECT g2.text FROM closed_pairs c JOIN pairs q ON q.id = c.pair_id
                             JOIN generations g2 ON g2.id IN (q.a_generation_id, q.b_generation_id)
                             WHERE q.kind = 'study' AND q.experiment_id != :e)
            ORDER BY p.id""", {"e": experiment_id}).fetchall()]


def pairs_sharing_a_text(db, experiment_id: int) -> int:
    """Study pairs of the experiment, raters' to rate (outputs differ), holding a text another of its pairs holds too:
    greedy decoding gives every sample of a prompt the same two texts. The queue serves a rater no pair holding a text
    of a pair she rated (its reveal told her which path wrote it), so such copies need a rater each."""
    shown = f"p.kind = 'study' AND p.experiment_id = :e AND NOT {IDENTICAL.format(p='p.')} AND NOT {_WITHHELD}"
    return db.execute(
        f"""SELECT COUNT(DISTINCT p.id) FROM pairs p JOIN generations g ON g.id IN (p.a_generation_id, p.b_generation_id)
            WHERE {shown} AND g.text IN (
                SELECT g.text FROM pairs p JOIN generations g ON g.id IN (p.a_generation_id, p.b_generation_id)
                WHERE {shown} GROUP BY g.text HAVING COUNT(DISTINCT p.id) > 1)""", {"e": experiment_id}).fetchone()[0]


def one_rater_reach(db, experiment_id: int) -> tuple[int, int]:
    """(the most pairs one rater can be served, the pairs to rate) over the study the experiment pools for: its
    study pairs whose outputs differ. The queue serves a rater no pair holding a text of a pair she rated, so where
    texts repeat (greedy decoding) she meets each text once: counted as the queue serves her, in its drawn order,
    a rater who rates every pair she is served."""
    rows = db.execute(
        f"""SELECT p.id, ga.text, gb.text FROM pairs p
            JOIN generations ga ON ga.id = p.a_generation_id JOIN generations gb ON gb.id = p.b_generation_id
            WHERE p.kind = 'study' AND NOT {IDENTICAL.format(p="p.")} AND NOT {_WITHHELD} AND p.experiment_id IN (
                SELECT id FROM experiments WHERE study_id = (SELECT study_id FROM experiments WHERE id = :e))
            ORDER BY p.queue_rank IS NULL, p.queue_rank, p.id""", {"e": experiment_id}).fetchall()
    met, reach = set(), 0
    for _, a, b in rows:
        if a not in met and b not in met:
            reach += 1
            met.update((a, b))
    return reach, len(rows)


def _target_tokenizer(cfg: Config):
    """The target's tokenizer (what the Live tab decodes with), for the token ids of the reference outputs."""
    from ..generation.models import load_tokenizer, resolve_ref

    ref = cfg.models.target_tokenizer or cfg.models.target
    return load_tokenizer(resolve_ref(ref, False), cfg, "target")


def has_pairs(db, prompt_id: str) -> bool:
    """Whether the pool holds a pair of this prompt (the Live tab then keeps greedy runs of it off: they would
    reproduce outputs that raters judge blind)."""
    return db.execute("SELECT 1 FROM pairs WHERE prompt_id = ? LIMIT 1", [prompt_id]).fetchone() is not None


def edited_prompts(db, prompts: dict) -> list[str]:
    """One line per prompt whose file differs from the request its pooled pairs answered (the hash stored with their
    latest generation): the rating app shows the stored material and task beside such pairs, and the Live tab runs
    the file's; and whose criteria's wording differs from the wording stored with them, which the app asks. Prompts
    without pairs, or whose generations stored no request, are not judged."""
    from ..task.prompts import criteria_hash, prompt_hash

    out = []
    for pid, stored, worded in db.execute(
            """SELECT g.prompt_id, json_extract(g.effective_config, '$.prompt.hash'),
                      json_extract(g.effective_config, '$.prompt.criteria_hash') FROM generations g
               WHERE g.id IN (SELECT MAX(p_a) FROM (SELECT a_generation_id AS p_a, prompt_id FROM pairs
                                                    WHERE a_generation_id IS NOT NULL) GROUP BY prompt_id)
               ORDER BY g.prompt_id"""):
        prompt = prompts.get(pid)
        if stored and prompt is not None and prompt_hash(prompt) != stored:
            out.append(f"prompt {pid}: its file (hash {prompt_hash(prompt)}) is not the request its pairs answered "
                       f"(hash {stored}); raters are shown the stored material and task, and the Live tab runs the "
                       "file's. To rate the file's version, start a new study (evalkit generate --new-study NAME)")
        if worded and prompt is not None and criteria_hash(prompt) != worded:
            out.append(f"prompt {pid}: the wording of its criteria in its file (hash {criteria_hash(prompt)}) is not "
                       f"the wording its pairs' raters are asked (hash {worded}); raters are asked the stored wording, "
                       "so that every rater of the study answers the same questions. To ask the file's, start a new "
                       "study (evalkit generate --new-study NAME)")
    return out


def pooled_token_ids(db, prompt_id: str | None = None) -> set[tuple[int, ...]]:
    """The new-token ids of every output that raters can be shown in a pair (both sides), the reference outputs
    of gold pairs included: of one prompt, or of every prompt when `prompt_id` is None (a live run shown under a
    path's name must not repeat any of them: a degenerate output can be the same text for two prompts)."""
    where = "" if prompt_id is None else "p.prompt_id = :p AND "
    return {tuple(json.loads(r[0])) for r in db.execute(
        "SELECT g.token_ids FROM pairs p JOIN generations g ON g.id IN (p.a_generation_id, p.b_generation_id) "
        f"WHERE {where}p.kind = 'study' "
        "UNION SELECT o.token_ids FROM pairs p JOIN reference_outputs o ON o.id IN (p.a_reference_id, p.b_reference_id) "
        f"WHERE {where}p.kind = 'gold' AND o.token_ids IS NOT NULL", {"p": prompt_id})}


def telling_prefixes(db) -> set[tuple[int, ...]]:
    """For each study pair, each side's new-token ids up to and including the first token where the two sides
    differ: the beginning that tells that side from the other. A live run, shown under its path's name, that begins
    so tells which path wrote that side of the pair, even where it then goes on in its own way (greedy decoding on
    material a little unlike a rated prompt's repeats the start of its outputs)."""
    out = set()
    for a, b in db.execute(
            "SELECT ga.token_ids, gb.token_ids FROM pairs p JOIN generations ga ON ga.id = p.a_generation_id "
            "JOIN generations gb ON gb.id = p.b_generation_id WHERE p.kind = 'study'"):
        a, b = json.loads(a or "[]"), json.loads(b or "[]")
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        out |= {tuple(ids[:same + 1]) for ids in (a, b) if len(ids) > same}
    return out


def _stored_samples(db_path, experiment: int) -> int | None:
    """The pool_samples experiment `experiment` was made with (None: no such file, experiment, or record: the
    resume's own checks word those). A file that is not a readable evalkit database is refused in the store's words,
    never taken for one whose samples differ."""
    from ..store import open_reader

    if not Path(db_path).exists():
        return None
    with open_reader(db_path) as conn:
        row = conn.execute("SELECT pool_samples FROM experiments WHERE id = ?", [experiment]).fetchone() \
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'experiments'").fetchone() else None
    return row[0] if row else None


def generate(cfg, db_path, samples: int | None = None, resume: int | None = None, until_planned: bool = False,
             reserve: float | None = None, new_study: str | None = None, echo=print) -> list[str]:
    """`evalkit generate`: one pool (or, with until_planned, pools until the study holds its planned pairs plus the
    reserve), checked options first. Returns the lines to print (none on a process other than the main one under
    accelerate); progress and the pool-short sentence go to echo."""
    from .studies import DEFAULT_RESERVE, fill_sentence, fill_target

    if until_planned and (samples is not None or resume is not None):
        raise EvalkitError("--until-planned decides the samples itself", "leave out --samples and --resume")
    if reserve is not None and not until_planned:
        raise EvalkitError("--reserve is for --until-planned", "add --until-planned, or leave out --reserve")
    if resume is not None and new_study is not None:
        raise EvalkitError("--resume finishes an experiment of its own study", "leave out --new-study")
    if resume is not None and samples is not None and samples != (_stored_samples(db_path, resume) or samples):
        # taken, and ignored: the pool keeps its stored pool_samples (the same number, as accelerate's shards pass
        # it on, says nothing false)
        raise EvalkitError(f"--samples {samples} does nothing with --resume: experiment {resume} finishes with the "
                           "samples it was made with", "leave out --samples; to add samples after it, run `evalkit "
                           "generate --samples K` once it is finished")
    reserve = DEFAULT_RESERVE if reserve is None else reserve
    if until_planned:
        rounds = fill_pool(cfg, db_path, reserve=reserve, echo=echo, new_study=new_study)
    else:
        rounds = [build_pool(cfg, db_path, samples=samples, resume=resume, echo=echo, new_study=new_study)]
    if not distributed_state(cfg).is_main_process:
        return []
    lines = [f"experiment {res.experiment_id}: {res.pairs} pairs over {res.prompts} prompts "
             f"({res.fallbacks} fell back), and {res.gold} gold (check) pair{'' if res.gold == 1 else 's'}"
             + (f"; {res.skipped_done} work items were already done" if res.skipped_done else "")
             + f"; study '{res.study}'" for res in rounds if res.experiment_id is not None]
    last = rounds[-1]
    if until_planned:
        target = fill_target(last.planned_pairs, reserve, last.planned_pool)
        lines.append(f"study '{last.study}': {last.study_pairs} study pairs in the pool, for {last.planned_pairs} "
                     + (f"planned pairs plus a {reserve:.0%} reserve ({target})"
                        if target == fill_target(last.planned_pairs, reserve) else
                        f"planned pairs and the {target} pooled pairs the plan's power assumes (gate planned_pool)"))
    elif short := fill_sentence(last.study_pairs, last.planned_pairs, pool=last.planned_pool):
        echo(f"study '{last.study}': {short}")
    return lines
