"""Export the study as a `datasets.DatasetDict` (parquet + dataset card), and push it to the Hub only
when asked: private by default, rater names pseudonymised by default (salted hash)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ..errors import EvalkitError, cannot_write, check_folder, output_folder
from . import one_moment, refuse_to_replace, still_open_words
from .provenance import NOT_RECORDED, WITHHELD, Provenance, environment_line, model_line, scope_items
from .scrub import (export_salt, host_name, machine_names, pseudonym, pseudonyms, published_config, published_config_row,
                    shared_text, without_home, without_hosts)

SPLITS = ("experiments", "generations", "timing_runs", "batch_runs", "bench_processes", "prescreen", "pairs", "ratings",
          "reference_outputs", "studies", "decisions", "tune_trials")

COLUMNS = {
    "experiments": "one row per experiment as it started (Live-tab demo runs are not exported: what a visitor typed stays on the machine): kind (bench/pool/run), note (what started it; a pool whose processes ran each path once untimed before the timed runs, the paths taking turns going first, says so: a pool without that note had no warm-up), study_id (the study a pool belongs to), first_sample and pool_samples (the samples a pool drew), queue_seed and sample_seed (the seeds of the queue's order and of the pool's sampling, for reproducing them), the config snapshot (config_json: the full config, except that app.passcodes, a shared sign-in secret, and the access lists app.organisers, app.allowed_raters and app.allowed_orgs are replaced by their counts and never exported, rater names kept or not; config_hash is the sha256 of config_json as exported, first 16 hex), compatibility record (compat_json, compat_hash: its hash as exported), the release gate frozen with it (gate_json, gate_hash: the hash of its text). Paths under a home folder are written from ~ and other absolute paths cut to their last part (the user's name is not exported), app.host is withheld unless it names no machine, and the hashes are of the text as exported",
    "generations": "one row per generate() call: prompt_id, path ({paths}), status, text, token_ids (JSON: the new tokens' ids) and token_hash (their hash: two outputs of the same tokens share it), stop_reason, generate_seconds (device-synchronised; for a batched call, the call's), decode_seconds, peak_rss_mb, cuda_memory (JSON per device), draft_proposed/draft_accepted/draft_rounds (in the target's tokens), draft_tokens (the draft's own count, in its own vocabulary: equal to draft_proposed when the tokenizer is shared), candidate_generator (the Transformers class that ran), target_passes, tokens_per_target_pass, counts_agree, seed, effective_config (JSON: its config as in experiments.config_json, and under `prompt` the request as the model was given it: material, task, max_new_tokens and hash, and the criteria's wording its pair's raters were asked, `criteria` (criterion id -> zh and en), with `criteria_hash`, the first 16 hex of the sha256 of that object as JSON with sorted keys and non-ASCII kept: a study's pools all share one; and `devices`: the device kinds the target's and draft's weights sat on, e.g. cpu+cuda for a split pair, which decides which benchmarks a study's speed condition weighs), error_class/error_stage/error_message for failures, fallback_of (the failed attempt a fallback replaced), total_wait_seconds, live (always false: Live-tab runs are not exported), batch_size (requests in the call that produced it: 1 unless batched), prompt_tokens and new_tokens (the prompt's and the output's length in tokens), rss_mb (the process's resident memory after the call), decoding (greedy/sample), rank and work_index (the accelerate process and its share of the work), host (the machine, as a salted hash: runs on one machine share it), device",
    "timing_runs": "one row per timed benchmark repetition: path, prompt_id, round (ABBA), rep, seed, new_tokens, stop_reason, seconds, decode_seconds, tokens_per_second, generation_id, process_id (the bench_processes row it ran in), status, rank, host (salted hash), device",
    "batch_runs": "one row per request of a batched generate() call (`evalkit bench --batch-sizes`: the ordinary path at a batch size above 1, beside assisted at batch 1): path, batch_size, batch_call (the call's number in its process: its requests share it), slot, prompt_id, round, rep, seed, new_tokens, stop_reason, seconds (the call's: what each of its requests waited), left_padding, generation_id, process_id, status, error, rank, host (salted hash), device",
    "bench_processes": "one row per benchmark worker process (each path in its own, per ABBA round): path, round, order, pid, host (salted hash), device, load_seconds, rss_after_load_mb and cuda_after_load (JSON per device; the memory condition compares the paths' CUDA memory allocated after load where a process put weights on CUDA, else the median peak RSS of each path's timed runs, generations.peak_rss_mb: RSS right after load misses weights mapped lazily from their files), draft_extra_rss_mb, first_call_seconds, target/draft_seconds_per_token, warmup_count, warmup_seconds (JSON: each warm-up call's seconds), status and error (a worker that failed), rank, target_placement (JSON: MB of the target's weights per device) and draft_placement (JSON: the draft's), stored_at",
    "prescreen": "the rule-based pre-screen's answer on each pooled output (evalkit.task.criteria): generation_id, criterion, passed, evidence, rules_version. The gate's interval uses these answers on every pooled pair when prediction-powered inference is on (gate `ppi`)",
    "pairs": "blind A/B pairs: kind ('study': prompt_id, sample, ordinary_generation_id/assisted_generation_id, a_generation_id/b_generation_id and ordinary_side, drawn at random when the pool was made; queue_rank, the queue's random order (its whole part counts the pools made after rating began, each after the pairs before it): the decision sample is taken from its front, pair by pair as each holds its quota of ratings from raters the gold check keeps, so a pair rated only by a rater it leaves out is passed over (decisions.sample_json holds the sample's rating ids); wanted_ratings, each pair's quota of ratings; stored_at, when its pool joined the study (its order drawn; empty for a pair ranked before evalkit stored it, whose created_at stands in): what a decision frozen at completion counts as stored by then; withheld (true for a pair withheld from every rater as it joined, for repeating a text a closed pair revealed: it counts at the worst where the decision sample reaches it), passed_over (a rater was shown it and passed it over: a skip, or a hold let go unrated) and kept_from (the queue kept it from a rater while it was open, because she had rated another pair holding one of its texts), the last two as the decision reads them from rows not exported (the holds), and given_up (the organiser gave it up, `evalkit pairs give-up`, when no current rater could take it: it counts at the worst where the decision sample reaches it), empty on a gold pair; 'gold': a check pair of two reference outputs with known answers, a_reference_id/b_reference_id, no generations and no path, never part of the comparison)",
    "ratings": "every rating row, history included: rater (pseudonymised unless opted in), kind (rating/skip), a_*/b_* answers per criterion as shown, ordinary_*/assisted_* the same answers mapped to paths, preference (A/B/tie) and preferred_path, comment and skip_reason (what the rater typed: empty unless exported with --keep-comments), supersedes (the row a correction replaced), blind (false for a correction made after the rater saw the reveal, and for what an organiser gave in a study after seeing its results while she could still rate: kept, never counted), seconds_on_task (from the pair being shown to the stored rating), current (true for the version that counts: the last blind one; a skip is never replaced, so every skip row is current); on a gold pair the path columns and preferred_path are empty",
    "reference_outputs": "the texts of gold (check) pairs, pooled outputs made when the pool was built, one of each pair changed by a controlled edit (evalkit.study.gold): prompt_id, name (pool-<ordinary generation id>-<assisted generation id>, '-unedited' for the other), text, expected (JSON: criterion id -> pass/fail, only the results the edit made known), note (what the edit changed), content_hash, token_ids (JSON, under the target tokenizer of the latest pool)",
    "studies": "one row per study of the database, decided or not: name, created_at, the gate frozen with its first pool (gate_json: path, written from ~ under a home folder, text, hash, values; gate_hash), prescreen_rules (the pre-screen's rules version frozen with it, whose answers prediction-powered inference reads; empty for a study made before it was kept). experiments.study_id names each pool's study",
    "decisions": "one row per decided study, frozen when its planned sample completed (or a sequential design's look settled it: verdict_json's look) and never changed: study_id, decided_at, completed_at (when it completed: its completing rating's time, or where a later pool of pairs that need no rating completed it, the instant that pool joined, or where the organiser's give-up of pairs completed it, the instant of that give-up) and completed_rating_id (the last rating it rests on; 0 for a sample of identical pairs alone, which no rater rated: its speed and memory are those measured when it was frozen), gate_hash, decision (KEEP/DROP/INSUFFICIENT DATA), sample_json (the ids of the ratings in the decision sample), excluded_json (the raters the gold check left out then, pseudonymised as in ratings), verdict_json (every condition and per-criterion row), speed_json (the speed figure it weighed). A study with no row here has no decision: its looks were interim",
    "tune_trials": "`evalkit tune`'s summary per trial of draft settings, exploratory and never deciding (its calls are in "
                   "`generations` under its `tune` experiment, `experiment_id`): trial (0, is_default true, is "
                   "Transformers' default assisted settings, the yardstick), settings (JSON: the three settings of the "
                   "columns beside it), num_assistant_tokens, num_assistant_tokens_schedule, "
                   "assistant_confidence_threshold, median_seconds_per_token_sum (the sum over prompts of the median "
                   "seconds per new token), speedup_vs_default, acceptance_rate, fallbacks (runs whose assisted call "
                   "failed and the target alone redid: such a trial is never recommended). Numbers and settings only, "
                   "nothing that names a person or machine",
}


def column_notes(split: str) -> str:
    """A split's columns as the card lists them; the path names are the registered ones (evalkit.generation.registry)."""
    from ..generation import registry

    return COLUMNS[split].replace("{paths}", "/".join(registry.names()))


def path_notes() -> str:
    """One line per registered path for the card: its name and what it is."""
    from ..generation import registry

    return "\n".join(f"- `{s.name}`: {s.label}" + (" (compared with ordinary on its own)" if s.versus_ordinary else "")
                     for s in registry.all_paths())


# What each table exports: Live-tab demo runs stay on the machine (what a visitor typed is in their config and note).
_ROWS = {"experiments": "WHERE kind != 'live'", "generations": "WHERE live = 0",
         "prescreen": "WHERE generation_id IN (SELECT id FROM generations WHERE live = 0)"}
# The database's tables the export leaves out, and why: the card lists them, so a reader knows what is missing on
# purpose (tests/test_report_export.py checks that every table is exported or named here).
LEFT_OUT = {
    "raters": "the invited raters: their names, roles, personal codes' hashes and sign-up clients' keyed hashes "
              "(`ratings.rater` names each by pseudonym, or by name with --keep-rater-names)",
    "hub_revokes": "the organisers' revokes of Hub raters' access: who revoked whom, and when",
    "assignments": "which rater was shown which pair, and when (the holds): read into `pairs.passed_over` and "
                   "`pairs.kept_from`",
    "closed_pairs": "when each pair closed to raters: read into `pairs.passed_over` and `pairs.kept_from` with the "
                    "holds",
    "pair_give_ups": "the organiser's give-ups and her typed reasons: read into `pairs.given_up`",
    "results_seen": "which organiser saw a study's results while she could still rate, and when: her later ratings "
                    "there are stored with `ratings.blind` false",
    "results_views": "who was shown each study's results, and when (her first view): a pool stored later in it, or "
                     "repeating its texts, is not hers to rate",
    "pushes_while_rating": "pushes made while pairs were open to raters: named in the card's Notes (Provenance)",
    "export_salt": "the secret of the pseudonyms (whoever holds it can test a guessed name against one)",
    "submission_refusals": "the app's refused submissions, kept to tell their rater after a reload (no rating)",
    "limit_counts": "the app's rate limits' counters (no rating)",
    "limit_events": "the app's rate limits' events (no rating)",
    "_migrations": "the database's schema upgrades",
    "database_identity": "a random token telling this database from another at the same path (no rating)",
}


def left_out_markdown() -> str:
    return ("Left out on purpose: Live-tab demo runs (rows of `experiments` and `generations`: what a visitor typed "
            "stays on the machine), what raters typed unless exported with --keep-comments, the config's passcodes "
            "and access lists (see `experiments`), and these tables of the database:\n\n"
            + "\n".join(f"- `{name}`: {why}" for name, why in LEFT_OUT.items()))


# Columns that may hold a machine's paths (tracebacks, notes)
_FREE_TEXT = {"experiments": ("note",), "generations": ("error_message",), "batch_runs": ("error",),
              "bench_processes": ("error",),
              # a frozen decision's memory condition and speed figure quote the cause of a benchmark's fallbacks
              "decisions": ("verdict_json", "speed_json")}


# What raters typed (a rating's comment, a skip's reason) may name them or others: left out unless opted in, as
# rater names are pseudonymised unless opted in (the report never shows it either).
RATER_TEXT = ("comment", "skip_reason")

# Columns of ratings that are transport, not data, never exported: the rendered form's token (a replay is refused) and
# the page's id for a Submit (what a reload asks about: it is bound to its rater, and tells the data nothing).
INTERNAL_RATING_COLUMNS = ("client_token", "submission_id")


# Yes/no columns SQLite keeps as 0/1: exported as booleans, so that `blind == True` means what it says in any tool
FLAGS = {"ratings": ("blind",), "generations": ("live", "counts_agree"), "prescreen": ("passed",), "pairs": ("withheld",),
         "tune_trials": ("is_default",)}


def tables(db, keep_rater_names: bool = False, keep_comments: bool = False) -> dict[str, list[dict]]:
    from ..aggregate.data import STANDING, pair_standing
    from ..store.runs import json_hash

    out = {name: list(db.query(f"SELECT * FROM {name} {_ROWS.get(name, '')} ORDER BY rowid")) for name in SPLITS}
    salt = export_salt(db)
    hosts = machine_names(out)
    for name, rows in out.items():
        for r in rows:
            if "host" in r:
                r["host"] = host_name(r["host"], salt)
            for col in _FREE_TEXT.get(name, ()):
                r[col] = without_hosts(without_home(r[col]), hosts)
    for r in out["experiments"]:  # no passcode, and no username unless names are kept
        r["config_json"], r["config_hash"] = published_config_row(r["config_json"], r["config_hash"])
        compat = json.loads(r["compat_json"] or "null")
        if compat is not None and (homeless := without_home(compat)) != compat:
            r["compat_json"], r["compat_hash"] = json.dumps(homeless, ensure_ascii=False, sort_keys=True), json_hash(homeless)
    for r in (*out["experiments"], *out["studies"]):  # the frozen gate records the file it was read from
        gate = json.loads(r["gate_json"] or "null")
        if isinstance(gate, dict) and isinstance(gate.get("path"), str):
            # the path only: the text stays as frozen, so gate_hash (the hash of the text) still checks
            r["gate_json"] = json.dumps(gate | {"path": without_home(gate["path"])}, ensure_ascii=False)
    for r in out["generations"]:  # each generation stores the config in force too
        eff = json.loads(r["effective_config"] or "null")
        if isinstance(eff, dict):
            out_eff = without_home(eff)
            if isinstance(eff.get("config"), dict):
                out_eff["config"] = published_config(eff["config"])
            if out_eff != eff:
                r["effective_config"] = json.dumps(out_eff, ensure_ascii=False, sort_keys=True)
    standing = pair_standing(db)  # what the decision reads of a pair from rows not exported (holds, closings)
    for r in out["pairs"]:
        for flag in STANDING:
            r[flag] = r["id"] in standing[flag] if r["kind"] == "study" else None
    current = {r["id"] for r in db.query("SELECT id FROM current_ratings")}
    salt = None if keep_rater_names else salt
    for r in out["ratings"]:
        r["current"] = r["id"] in current or r["kind"] == "skip"
        for col in INTERNAL_RATING_COLUMNS:
            r.pop(col, None)
        if not keep_comments:
            for col in RATER_TEXT:
                r[col] = "" if r.get(col) is not None else r.get(col)
        if salt is not None:
            r["rater"] = pseudonym(r["rater"], salt)
    if salt is not None:  # the gold check's exclusions name raters too
        for r in out["decisions"]:
            r["excluded_json"] = json.dumps([pseudonym(n, salt) for n in json.loads(r["excluded_json"])])
    for name, cols in FLAGS.items():
        for r in out[name]:
            for col in cols:
                if col in r and r[col] is not None:
                    r[col] = bool(r[col])
    for name, rows in out.items():
        for r in rows:
            for col in [c for c in r if is_time(c)]:
                r[col] = utc_time(r[col], f"{name}.{col} of the row with id {r.get('id')}")
    for rows in out.values():  # JSON as every parser reads it: a missing figure is null, never a bare NaN
        for r in rows:
            for col, value in r.items():
                if (col.endswith("_json") or col in _JSON_COLUMNS) and isinstance(value, str) and (
                        "NaN" in value or "Infinity" in value):
                    r[col] = strict_json(value)
    return out


# Times: stored as ISO 8601 text in UTC (store.database.now), exported as timestamps, so that every reader compares and
# converts them as times (text compares by its characters, and an offset written another way sorts wrong)
TIME_TYPE = "timestamp[us, tz=UTC]"


def is_time(col: str) -> bool:
    return col.endswith("_at")


def utc_time(text, where: str):
    """A stored time as a timezone-aware UTC datetime (None stays None); a row stored without an offset is UTC too."""
    from datetime import datetime, timezone

    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text)
    except (TypeError, ValueError) as e:
        raise EvalkitError(f"{where} is {text!r}, not an ISO 8601 time, and the export writes times as UTC timestamps: "
                           "nothing was written",
                           "correct it in the database to its time in UTC written as 2026-12-05T14:14:00.338+00:00, "
                           "and export again") from e
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


# JSON columns whose names do not say so
_JSON_COLUMNS = {"effective_config", "cuda_memory", "cuda_after_load", "token_ids", "expected", "warmup_seconds",
                 "target_placement", "draft_placement", "settings"}


def strict_json(text: str) -> str:
    """JSON text with NaN and ±Infinity (which Python writes, and JavaScript, Go or DuckDB refuse) as null."""
    import math

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(json.loads(text)), ensure_ascii=False, allow_nan=False)


def studies_markdown(db) -> str:
    """The card's list of the database's studies, decided or not: a study left at an interim look is on the record
    beside a later one (study.studies.standings)."""
    from ..study.studies import standings

    rows = [f"| {_cell(st.study.name)} | {st.study.created_at} | `{st.study.gate_hash[:16]}` | {st.study.planned_pairs} "
            f"| {st.ratings} | " + (f"{st.decision}, frozen {st.settled()} ({st.completed_at})"
                                    if st.decision else "none: interim looks only") + " |" for st in standings(db)]
    if not rows:
        return "No study yet (no pool was generated)."
    return ("Every study of the database, decided or not (tables `studies` and `decisions`).\n\n"
            "| study | started | gate hash | planned pairs | current ratings of study pairs (every rater) | decision |\n"
            "| --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows))


def protocol_markdown(speed, now=None) -> str:
    """How the speed-ups the card prints were measured (`speed`: the decision's; `now`: the data's as it is now, when a
    decision is frozen): the benchmark's protocol only where a benchmark measured them."""
    from ..aggregate.timing import POOL_SOURCE, warmup_words

    bench = ("each path is measured in its own process (load, memory after load, first call, warm-up, N timed "
             "repetitions), with a second round in swapped order (ABBA). The clock wraps `generate()` only, between "
             "device synchronisations. Acceptance is counted from the candidate generator and cross-checked against "
             "the target's forward passes.")
    pool = ("the pair pool's single runs, one per path and pair, timed as the pool generated them (no separate "
            "processes, no ABBA rounds; `evalkit bench` measures it properly). The clock wraps `generate()` only.")

    def how(sp) -> str:
        warm = f" Warm-up: {w}." if (w := warmup_words(sp)) else ""  # pools made before it had none
        if sp.source == POOL_SOURCE and getattr(sp, "bench_only", False):  # the gate's speed_source "benchmark"
            return pool + warm + (" It is reported, not deciding: the gate decides the speed condition on benchmark "
                                  "rounds only, and none was stored.")
        return ("`evalkit bench`: " + bench if sp.source == "benchmark" else pool + warm if sp.source == POOL_SOURCE
                else "nothing: no benchmark and no comparable pooled runs.")

    text = f"The speed-up {'the decision weighed ' if now is not None else ''}comes from {how(speed)}"
    if now is not None and now.source != speed.source:
        text += f" The speed-up measured since the decision (\"speed-up now\") comes from {how(now)}"
    return text + (" A failed assisted call is its own record; its fallback is a separate `fallback` row and is never "
                   "counted as assisted. Speed-ups are computed over comparable outputs only (same stop reason, similar "
                   "length), each path against ordinary on its own.")


def method_markdown(agg, db=None) -> str:
    """How the card's verdict is computed from these tables, for an analyst with the dataset alone: which answers,
    ratings and pairs count, the interval the study's gate names, the looks, and the speed-up's estimator. Named for
    its study: with several, another study's decision is recomputed on that study's own gate (export audit D4)."""
    from ..stats.clustered import T_FLOOR, UNION

    g = getattr(getattr(agg, "verdict", None), "gate", None) or {}
    name = getattr(getattr(agg, "study", None), "name", None)
    studies = [r["name"] for r in db.query("SELECT name FROM studies ORDER BY id")] if db is not None else []
    whose = (f"For study '{name}', the one this card's verdict is of, on its gate (`studies.gate_json` of its row)."
             if name else "For the card's verdict, on its study's gate (`studies.gate_json`).")
    if len(studies) > 1:
        others = ", ".join(f"'{n}'" for n in studies if n != name)
        whose += (f" The database holds other studies ({others}): a `decisions` row of another `study_id` is "
                  "recomputed the same way on that study's own gate, whose `claim`, `interval`, `margin`, "
                  "`confidence`, `ppi` and `monitoring` may differ from these.")
    interval, claim = g.get("interval", T_FLOOR), g.get("claim", "raters in general")
    if interval == UNION:
        how = ("the union of Tango's score interval on the rater-averaged discordant counts, the exact pair "
               "bootstrap and the two-way cluster-robust (CR2) interval")
    elif claim == "these raters":
        how = ("Student's t on the pairs' n - 1 degrees of freedom with the cluster-robust variance of the pair means "
               "over pairs (CR1; two-way pairs x raters from 10 raters on), united with Tango's score interval on the "
               "pair means' first two moments (the floor where answers agree)")
    else:
        how = ("the two-way (pairs x raters) cluster-robust variance of the pair means with the CR2 correction (Bell & "
               "McCaffrey 2002), Student's t on Satterthwaite degrees of freedom that take the raters' share at its "
               "upper 99% bound (never below the raters' own), the end on the long tail's side moved out by the "
               "Cornish-Fisher skew term; united with Tango's score interval on the pair means' first two moments "
               "(the floor where answers agree). From a row's stored parts the t interval (`t_low`, `t_high`) is "
               "rebuilt so: `var` = max(`var_pair` + `var_rater` - `var_rating`, `var_pair`, `var_rater`) and se its "
               "root; the raters' own degrees of freedom `two_way_df` (Bell-McCaffrey's 1 / sum of B^2 over the "
               "raters' normalised shares of the pair means' weight); chi = the 0.01 quantile of chi-square on them "
               "by Wilson-Hilferty's approximation, up = `var_rater` x `two_way_df` / chi, hi = max(up - "
               "`var_rating`, 0), rest = `var` - min(max(`var_rater` - `var_rating`, 0), `var`), f = hi / (rest + "
               "hi), `t_df` = max(1 / (f^2 / `two_way_df` + (1 - f)^2 / (n - 1)), `two_way_df`) with n the row's "
               "`pairs`; q = Student's t quantile at 1 - (1 - confidence) / 2 on `t_df`, s = (2 q^2 + 1) / 6 and g "
               "= `skewness`: `t_low` = `difference` - (q + s max(-g, 0)) se and `t_high` = `difference` + (q + s "
               "max(g, 0)) se, within [-1, 1] (before PPI: `rated_difference`)")
    sequence = g.get("monitoring") == "confidence sequence"
    if sequence:  # the betting sequence decides, at every look at the gate's level (verdict audit 2, 2026-12-04)
        how = ("the hedged betting confidence sequence of Waudby-Smith & Ramdas (2024), two-sided at 1 - confidence "
               "(`evalkit.stats.betting.betting_cs`), run over the rated pairs' values in the queue's random order "
               "(`pairs.queue_rank`), mapped from [-1, 1] to [0, 1], its running intersection's ends mapped back and "
               "multiplied by the sample's share of pairs whose outputs differ; the rows' `sequence` is true. The t "
               f"interval ({how}) is kept beside it as `rated_*`, and does not decide")
    looks = ("one look, at `planned_pairs`" if g.get("monitoring", "fixed") == "fixed" else
             f"monitoring = \"{g.get('monitoring')}\": looks as the ratings come in, "
             + ("each at the gate's own level, since a confidence sequence holds at every look (no spending)"
                if sequence else "each at the level its spending allows (`look_level` in each criterion's row)"))
    return f"""{whose}

- **Answers.** Per rating and criterion, `ordinary_<criterion>` and `assisted_<criterion>` hold pass, fail or
  unsure; only "pass" counts as passed ("unsure" counts as not passed). A rating's difference is (assisted passed) -
  (ordinary passed), in {{-1, 0, 1}}.
- **Ratings.** A decided study's sample is the rating ids in `decisions.sample_json` (current blind versions:
  `ratings.current`; the raters the gold check left out, `decisions.excluded_json`, are already not in it); gold
  pairs (`pairs.kind` = gold) never count. An interim look has no `decisions` row, and its sample is not exported:
  it is the study pairs that hold their quota (`pairs.wanted_ratings`; where `pairs.wanted_ratings` is empty, the
  gate's `min_ratings_per_pair`) of current ratings (`ratings.current` and `kind` = "rating": every skip row is current
  too, and fills no quota) from the raters the gold check keeps (those it leaves out are named under "Sample scope"
  below), each with its first quota of them by rating id; so the Sample scope's count of current ratings, which
  counts every one, is larger.
- **Pairs.** A pair's value is the mean of its raters' differences. A pair whose two outputs are the same tokens
  (`generations.token_hash` equal for its `ordinary_generation_id` and `assisted_generation_id`) is decided without
  raters: its value is exactly 0, and such pairs enter beside the rated pairs in the pool's proportion,
  floor(rated x identical / differing + 0.5) (halves round up, not to even as `round()` does), at most the identical
  pairs there are, the first ones by pair id; counted per rating epoch, the whole part of `pairs.queue_rank` (one
  epoch unless a pool was added after rating began; an epoch with no differing pair enters whole once the rated
  pairs hold every pair of the earlier epochs).
- **Pairs without an outcome.** A study pair whose raters were chosen by what it shows has no outcome, and where
  the sample reaches it in the queue's order it keeps its place and counts at the worst: one withheld from every rater
  (`pairs.withheld`) that does not hold its quota, and one that held its quota until the gold check left raters out
  and was passed over or kept from a rater (`pairs.passed_over`, `pairs.kept_from`), and one the organiser gave up
  when no current rater could take it (`pairs.given_up`). In each criterion's row of `decisions.verdict_json`,
  `worst_case_pairs` = u of them (`given_up_pairs` of those the organiser's), and with n the other pairs each end becomes
  (n x end - u) / (n + u) for the lower, (n x end + u) / (n + u) for the upper (the estimate stays the rated pairs';
  `pairs` = n + u, and `ppi` is false).
- **Interval** (gate `interval` = "{interval}", `claim` = "{claim}", two-sided confidence {g.get('confidence', 0.95)}):
  {how}. In `decisions.verdict_json`, each criterion's row holds the deciding `ci_low` / `ci_high` and its parts
  (`t_*`, `score_*`; `rated_*`: {"the t interval" if sequence else "the raters' answers alone"}).
- **Pre-screen** (gate `ppi` = "{g.get('ppi', 'off')}"). Where a criterion's row has `ppi` true: PPI++ (Angelopoulos,
  Duchi & Zrnic 2023). The rule pre-screen's answers (`prescreen`, both sides of every pooled pair) on the pooled
  pairs outside the sample whose outputs differ (whatever ratings they hold: not yet rated in full, rated only by raters
  the gold check leaves out, or completed after the decision) are corrected by the raters' answers on the sample's
  pairs whose outputs differ, weighed by `ppi_lambda`
  (PPI++'s power tuning, cov(Y, f) / ((1 + n / N) var(f)) with var(f) over every screened pair, ddof 1, clipped to
  [0, 1]; n rated, N not in the sample); the rated part's variance is the t part above alone (no score union), on
  difference - lambda x pre-screen difference; each end lies at least z^2 / (n + z^2) from the estimate, and the
  estimate and both ends are then scaled by the share of pooled pairs whose outputs differ. With N = 0 the interval
  still differs a little from `rated_*`, which keeps the score union.
- **Looks and decision.** {looks}. KEEP needs every criterion's lower end at or above -margin ({g.get('margin', 0.05)})
  and the speed and memory conditions the verdict lists (thresholds in `studies.gate_json`).
- **Which timed runs.** With a benchmark stored, benchmark rounds only: those of the benchmarks that time the pair
  the study rates (its first pool's models and settings, and the prompts the first of them timed) on the gate's
  `speed_device` ("pool": the device kind its first pool ran on, `generations.device`; "any": every device; a kind or a split placement such as "cpu+cuda": exactly that),
  stored by the decision (`bench_processes.stored_at`), in the order they were stored (each benchmark's latest
  `bench_processes.stored_at`). Each benchmark's rounds (`timing_runs.round`) are numbered on over all of them in that
  order, and the first `speed_rounds` (gate) whole rounds decide (ordinary and assisted both timed, no worker of the
  round `failed` in `bench_processes.status`; `speed_rounds` = 0: every round); rounds after them are reported,
  never weighed. `decisions.speed_json` names them (`benchmark_ids`, `rounds`, `rounds_further`, `deploy_device`).
  Without a benchmark, the study pairs' own two generations (`generate_seconds`; a pair is a match), which decide
  only where the gate's `speed_source` allows it (`speed_json.bench_only`: reported, not deciding).
- **Speed-up.** Runs of ordinary and assisted are matched by prompt, round and repetition and kept where comparable
  (the same stop reason, new tokens within the benchmark's `bench.length_tolerance` share of the longer). Per
  prompt: the median of ordinary's seconds over the median of assisted's; the speed-up is the median of these over
  prompts. Its interval: a bootstrap of the matched pairs within each prompt (`bench.bootstrap` resamples, in
  `experiments.config_json`), and, for a benchmark, Student's t on the logarithms of each round's own speed-up (the
  round: a fresh process per path) with rounds - 1 degrees of freedom, centred on the log of the speed-up itself,
  whichever reaches further. The tokens-per-second ratio beside it takes the same estimator and intervals on every
  matched pair, comparable or not: per prompt, the median of assisted's tokens per second over the median of
  ordinary's; the median of these over prompts. Neither figure holds the assisted runs that failed and were rerun
  by the target alone (fallbacks): where there are some, the speed condition also weighs the speed-up as deployed,
  each fallback counted at its whole wait.
- **The code.** `evalkit.stats.clustered.paired_difference`, `evalkit.stats.ppi.ppi_paired_difference`{
    ", `evalkit.aggregate.looks.sequence_row`" if sequence else ""} and
  `evalkit.generation.speed.measure_speed` compute these on arrays; `evalkit aggregate` prints every row."""


def _citer(prov):
    """verdict_text's cite: the runs behind a condition, as the report names them; None when none is stored."""
    def cite(name: str, after: bool) -> str | None:
        ids = prov.for_condition(name, after)
        return prov.cite(ids) if ids else None

    return cite


def open_pairs_markdown(still_open: int) -> str:
    """The card's warning when pairs were still open to raters as the export was made ('' when none were)."""
    if not still_open:
        return ""
    return (f"> **Exported while rating was under way:** {still_open_words(still_open, 'this export')} (the `pairs` "
            "and `ratings` tables, and the reference outputs say which gold output was changed). The decision below "
            "is an interim look unless it says it is frozen.\n\n")


def interim_markdown(agg) -> str:
    """The card's first lines when the study shown has no frozen decision ('' once it has one): a Hub page shows
    them first, and the verdict's own 'interim look' is further down."""
    if agg is None or agg.frozen is not None:
        return ""
    name = f"study '{agg.study.name}'" if agg.study is not None else "the study"
    return (f"> **Interim export, not a decision:** {name} has no frozen decision (`decisions` has no row for it): "
            "the verdict below is a look at the ratings so far, and the study decides only when its planned sample "
            "is rated.\n\n")


def rater_text_count(db) -> dict[str, int]:
    """How many ratings carry each kind of rater text (RATER_TEXT), whether or not it is exported."""
    return {col: db.execute(f"SELECT COUNT(*) FROM ratings WHERE COALESCE({col}, '') != ''").fetchone()[0]
            for col in RATER_TEXT}


def _rater_text_words(db, keep_comments: bool) -> str:
    counts = rater_text_count(db)
    said = f"{counts['comment']} comment(s) and {counts['skip_reason']} skip reason(s)"
    if keep_comments:
        return f" What raters typed ({said}) is exported as typed (opt-in: `--keep-comments`)."
    return (f" What raters typed ({said}) is left out: `comment` and `skip_reason` are empty (it may name the rater "
            "or others; `--keep-comments` exports it as typed).")


def _card(db, rows: dict, files: dict, keep_rater_names: bool, repo_id: str | None, prov, out_dir: Path, agg=None,
          still_open: int = 0, keep_comments: bool = False, license: str | None = None) -> str:
    return without_home(_card_text(db, rows, files, keep_rater_names, repo_id, prov, out_dir, agg, still_open,
                                   keep_comments, license))


def check_license(license: str | None) -> None:
    """Refuse, before anything is written, a --license that is no Hub license id (the Hub refuses the card's header
    then, after the local export): lowercase letters, digits, '.' and '-', as in cc-by-4.0."""
    if license is not None and not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", license):
        raise EvalkitError(f"--license {license!r} is not a Hub license id: nothing was written",
                           "give the id the Hub lists for it (huggingface.co/docs/hub/repositories-licenses), e.g. "
                           "--license cc-by-4.0, --license apache-2.0 or --license mit")


def license_words(license: str | None) -> tuple[str, str]:
    """The card header's license lines and its License paragraph. Each export writes the card anew, so a license is
    stated with the export (--license), never by editing the card: the next export would undo the edit."""
    if license:
        return f"license: {license}\n", f"**License**: `{license}`, as stated by the exporter (`license` above)."
    return ("license: other\nlicense_name: not-stated\n",
            "**License**: not stated by the exporter (`license_name: not-stated` above): ask the dataset's owner before "
            "reusing its\nratings or texts; the owner states one by exporting again with `evalkit export --license ID` (a "
            "Hub license id, e.g. cc-by-4.0), since each export writes this card anew.")


def _languages(db) -> str:
    """The card's `language` tag: the languages of the prompts the database's pairs were written for (the bundled
    prompts' `language`), none when they cannot be read."""
    from ..task.prompts import load_prompts

    ids = {r[0] for r in db.execute("SELECT DISTINCT prompt_id FROM pairs").fetchall()}
    try:
        langs = sorted({p.language for p in load_prompts() if p.id in ids and p.language})
    except (EvalkitError, OSError):  # a card without the tag rather than no export
        langs = []
    return "language:\n" + "".join(f"- {lang}\n" for lang in langs) if langs else ""


def _card_text(db, rows: dict, files: dict, keep_rater_names: bool, repo_id: str | None, prov, out_dir: Path, agg,
               still_open: int, keep_comments: bool = False, license: str | None = None) -> str:
    from ..aggregate import verdict_text

    from ..aggregate.data import study_pool

    shared = shared_text(db)  # the verdict's notes and reasons may quote an error message naming a machine
    # the config of the study the card's verdict is about (its first pool: the settings it rates), else the latest
    study = getattr(agg, "study", None)
    exp = (study_pool(db, study.id) if study is not None else None) or next(
        db.query("SELECT * FROM experiments WHERE kind IN ('pool', 'bench') ORDER BY id DESC LIMIT 1"), None)
    config = (json.dumps(published_config(json.loads(exp["config_json"])), indent=2, ensure_ascii=False)
              if exp else "{}")
    # One config per table (a config has one schema); `datasets` cannot load a table with no rows,
    # so empty ones stay out of the loading configs.
    configs = "\n".join(
        f"- config_name: {s}\n  data_files:\n  - split: train\n    path: data/{files[s].name}" for s in SPLITS if rows[s]
    )
    counts = "\n".join(f"| {s} | {len(rows[s])} | `data/{files[s].name}`"
                       + ("" if rows[s] else " (no rows: no config to load it by)") + " |" for s in SPLITS)
    where = repo_id or f"path/to/{Path(out_dir).resolve().name}"  # never the exporter's own folders
    # before anyone has rated (an export made while rating is under way) `ratings` cannot be loaded by name: the
    # example loads a table that can be
    loadable = [s for s in ("ratings", *SPLITS) if rows[s]]
    example = "" if repo_id else "# path/to: the folder that holds this export where you keep it\n"
    example += "" if rows["ratings"] else "# no ratings yet: that table has no rows, so no config to load it by\n"
    example += (f'{loadable[0]} = load_dataset("{where}", "{loadable[0]}", split="train")' if loadable
                else "# every table is empty: nothing to load yet")
    cols = "\n".join(f"- **{s}**: {column_notes(s)}" for s in SPLITS)
    header, stated = license_words(license)
    return f"""---
{header}{_languages(db)}{CARD_MARK}
tags:
- evalkit
- assisted-generation
- speculative-decoding
- human-evaluation
configs:
{configs}
---

# evalkit study{f': {repo_id}' if repo_id else ''}

{interim_markdown(agg)}Does a small draft model (Transformers assisted generation) make writing requests faster without
hurting the content? Blind A/B ratings of ordinary vs assisted outputs on fixed writing prompts,
with every raw timing run. Rater names are {"kept as given (opt-in)" if keep_rater_names else
"pseudonymised with a salted hash: the same rater has the same pseudonym in every export of this database, wherever "
"it is exported from (the salt is kept in the database and never exported); an export of another database gives "
"other pseudonyms"}. Machine names are salted hashes too, and Live-tab demo runs are not
exported.{_rater_text_words(db, keep_comments)}

{stated}

{open_pairs_markdown(still_open)}## Verdict

```text
{shared(verdict_text(agg, _citer(prov), WITHHELD)) if agg is not None else "not computed"}
```

## Rows

| split | rows | file (name ends with the first 16 hex of its sha256) |
| --- | --- | --- |
{counts}

## Loading

```python
from datasets import load_dataset

{example}
```

Each table is its own config. Empty tables are saved as parquet with their schema but left out of the
configs (`datasets` cannot load a table with no rows): read one with `pyarrow.parquet.read_table`. Every
export names its files by their content, and the configs above point at exactly those files, so `datasets` caches each export under its own key: loading this folder (or the Hub repo) gives
the rows written by the latest export, never rows cached from an earlier export of the same name.

Times (the columns ending in `_at`) are timestamps in UTC (parquet `timestamp[us, tz=UTC]`, to the millisecond they
were stored with): `datasets` gives timezone-aware `datetime`s, pandas `datetime64[us, UTC]`. `*_json` columns
and those marked "(JSON" below are JSON text (`json.loads`). An answer a row does not have (a skip's, or the path
columns of a gold pair) is null.

## Columns

{cols}

## Not in this export

{left_out_markdown()}

## Recomputing the verdict

{method_markdown(agg, db) if agg is not None else "No verdict was computed."}

## Protocol

{protocol_markdown(agg.speed, agg.speed_now if agg.frozen is not None else None) if agg is not None else ""} The paths:

{path_notes()}

## Studies

{studies_markdown(db)}

## Provenance

{RERUN_POINTER}

{provenance_markdown(prov, latest_time(rows), None if keep_rater_names else lambda names: pseudonyms(names, db), shared)}

## Config{f" of the study's pool (experiment {exp['id']})" if study is not None and exp else f" of the latest experiment ({exp['id']}, {exp['kind']})" if exp else ""}

```json
{config}
```
"""


def features(db, name: str):
    """Typed columns from the SQLite schema, so even an empty split has a schema that reloads."""
    from datasets import Features, Value

    kinds = {"INTEGER": "int64", "REAL": "float64", "TEXT": "string"}
    cols = {c[1]: Value(TIME_TYPE if is_time(c[1]) else kinds.get(c[2].upper(), "string"))
            for c in db.execute(f"PRAGMA table_info({name})").fetchall()}
    if name == "ratings":
        for col in INTERNAL_RATING_COLUMNS:
            cols.pop(col, None)
        cols["current"] = Value("bool")
    if name == "pairs":
        from ..aggregate.data import STANDING

        cols.update({flag: Value("bool") for flag in STANDING})
    for col in FLAGS.get(name, ()):
        if col in cols:
            cols[col] = Value("bool")
    return Features(cols)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_OUR_FILE = re.compile(rf"({'|'.join(SPLITS)})(-[0-9a-f]{{16}})?\.parquet")


def split_file(out_dir: Path, split: str) -> Path:
    """The parquet file of one table in an export folder (its name carries a content hash)."""
    found = sorted(p for p in (Path(out_dir) / "data").glob(f"{split}-*.parquet") if _OUR_FILE.fullmatch(p.name))
    if len(found) != 1:
        raise EvalkitError(f"{out_dir} holds {len(found)} parquet files for '{split}', expected 1",
                           "export again into that folder (`evalkit export --out ...`)")
    return found[0]


# Where the card sends a reader who wants to run its experiments again (tests/test_provenance.py checks the section)
RERUN_SECTION = "Reproducing the runs from an export"
RERUN_POINTER = (f"To run these experiments again (the commit each ran from, its config, the commands): evalkit's README, "
                 f"section \"{RERUN_SECTION}\".")

# The card's line that says evalkit wrote it (an export refuses to replace a README.md without it).
CARD_MARK = "pretty_name: evalkit assisted-generation study"


def check_repo_id(repo_id: str) -> None:
    """Refuse a malformed Hub repo id before anything is exported (the Hub's own check, which runs offline): otherwise
    it surfaces after the local export, as a push failure whose fix says to log in."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not repo_id.strip():  # `--push-to-hub "$REPO"` with REPO unset: else a local export, and exit 0 as if pushed
        raise EvalkitError("--push-to-hub is empty: no Hub repo to push to, and nothing was written",
                           "give the Hub dataset repo as namespace/name, e.g. my-org/evalkit-study, or leave out "
                           "--push-to-hub to export locally")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise EvalkitError(f"--push-to-hub {repo_id!r} is not a Hub repo id: {e}",
                           "give it as namespace/name, e.g. my-org/evalkit-study (letters, digits, '-', '_', '.')") from e


def check_hub_token(api, repo_id: str) -> None:
    """Refuse a push with the real Hub client and no token, before anything is written: the Hub would refuse it only
    after the export, with a 401 or, on a machine that cannot reach it, a connection error. A substitute client (the
    tests') is not asked."""
    from huggingface_hub import get_token
    from huggingface_hub.hf_api import HfApi

    if isinstance(api, HfApi) and not (api.token or get_token()):
        raise EvalkitError(f"--push-to-hub '{repo_id}': no Hugging Face token found (HF_TOKEN is unset and no login "
                           "is stored): nothing was written",
                           "log in with `hf auth login` (or set HF_TOKEN to a token that can write to the repo's "
                           "namespace), then export again; or leave out --push-to-hub to export locally")


def export(db, out_dir: Path, *, push_to_hub: str | None = None, public: bool = False,
           keep_rater_names: bool = False, api=None, agg=None, study: str | None = None, while_rating: bool = False,
           keep_comments: bool = False, license: str | None = None):
    """Build the DatasetDict, save parquet + README.md to out_dir, push when asked. Returns the DatasetDict; after a
    push its `hub` attribute holds {"repo_id", "private"}: the visibility the Hub reports, not the one asked for.

    Files are named by their content (`data/ratings-<sha256[:16]>.parquet`) and the card's configs name
    them: `datasets` keys its cache of a local folder on the folder's name, the config and the card's
    configs, so with fixed file names a re-export (or another folder called the same) reloaded stale rows.
    The folder changes all at once or not at all (_write); files of earlier exports are removed only after the new
    card is in place. A push uploads exactly this export's files, and only to a private repo unless `public`.
    agg: the aggregate, when the caller has it (the card's verdict, figures and provenance come from it); else that of
    `study` (the latest when None), taken on the one copy every part of the export is read from (publish.one_moment).

    While pairs of the study being rated are still open to raters (rating.queue.unclosed_pairs), the export says so
    on its card (its tables tell each pair's sides), and a push is refused unless `while_rating`: a dataset on the
    Hub, private or not, can reach a rater; with `public` too it is refused, since a public repo reaches every
    rater. What raters typed (comments, skip reasons) is exported only with
    `keep_comments`; the card says how much there is either way. `license`: a Hub license id for the card's header
    (default: not stated)."""
    from datasets import Dataset, DatasetDict

    from ..aggregate import aggregate
    from ..progress import Steps
    from ..rating.queue import unclosed_pairs
    from ..store.database import check_copy_room
    from .provenance import build_provenance

    if push_to_hub is not None:  # "" too: a push asked for with no repo is refused, not skipped
        check_repo_id(push_to_hub)
    check_license(license)
    given = agg
    out_dir = Path(out_dir)
    refuse_to_replace(out_dir / "README.md", CARD_MARK, "a dataset card")
    for folder in (out_dir, out_dir / "data"):  # before the look below, which may write the decision; the card and
        check_folder(folder, "the export")      # the staging folder go into out_dir itself
    check_copy_room(db, "the export")  # so is the room for the copy every part is read from (one_moment)
    still_open = unclosed_pairs(db)
    if push_to_hub and still_open and (public or not while_rating):
        # the look may freeze a decision the study has reached, which closes its every pair: count after it
        if given is None:
            aggregate(db, study=study)
        still_open = unclosed_pairs(db)
    if push_to_hub and still_open and not while_rating:
        raise EvalkitError(
            f"{still_open} pair(s) of the study being rated are still open to raters, and the export says which side "
            f"of each pair is which path: pushed to {push_to_hub}, it could reach a rater before they rate",
            "push once every pair is complete (the Results tab's counts), export locally meanwhile (without "
            "--push-to-hub), or pass --while-rating to push it anyway to a repo no rater can read")
    if push_to_hub and still_open and public:  # --while-rating is for a repo no rater can read; a public one anyone can
        raise EvalkitError(
            f"--public with --while-rating: {still_open} pair(s) of the study being rated are still open to raters, and "
            f"a public {push_to_hub} would show every rater which side of each is which path: nothing was written "
            "or pushed",
            "leave out --public (the repo is then private: share it with those who may see it), or push --public "
            "once every pair is complete")
    if push_to_hub:  # after the refusal above: logging in would not make that push right
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        check_hub_token(api, push_to_hub)
    export_salt(db)  # stored here (a first export), so that the copy below names raters as every export does
    still_open = unclosed_pairs(db)
    if push_to_hub and still_open:  # the push is recorded once made: a database that cannot take it is refused first
        _check_push_recordable(db, push_to_hub)
    # The look, the provenance, the card and the tables are all read from one copy (publish.one_moment): a rating the
    # app stores meanwhile would otherwise be in some of them and not in others. A given aggregate is the caller's.
    shown = Steps("export", 3 + bool(push_to_hub))
    shown.step("the study's look")
    with one_moment(db, lambda view: given if given is not None else aggregate(view, study=study)) as (view, agg):
        still_open = unclosed_pairs(view)  # as the look left them: a decision it froze closed its study's pairs
        prov = build_provenance(view, agg)
        shown.step("tables")
        rows = tables(view, keep_rater_names, keep_comments)
        ds = DatasetDict({
            name: Dataset.from_list(rows[name], features=features(view, name)) if rows[name]
            else Dataset.from_dict({k: [] for k in features(view, name)}, features=features(view, name))
            for name in SPLITS
        })
        shown.step("parquet files and card")
        files = _write(ds, out_dir, lambda files: _card(view, rows, files, keep_rater_names, push_to_hub, prov,
                                                        out_dir, agg, still_open, keep_comments, license))
    ds.still_open = still_open
    if push_to_hub:
        shown.step(f"push to {push_to_hub}")
        private, unchanged = _push(api, push_to_hub, out_dir, files, public)
        ds.hub = {"repo_id": push_to_hub, "private": private, "unchanged": unchanged}
        if still_open:  # --while-rating: the sides of open pairs are on the Hub; the study's provenance says so
            from ..store import insert_push_while_rating

            insert_push_while_rating(db, push_to_hub, ds.hub["private"], still_open)
    shown.close()
    return ds


def _check_push_recordable(db, repo_id: str) -> None:
    """Refuse, before anything is written or pushed, a push made while pairs are open (--while-rating) to a database
    that cannot record it (store.insert_push_while_rating): the push would go through and then fail unrecorded."""
    from ..store.database import check_writable, db_file

    path = db_file(db) or "(in memory)"
    try:
        check_writable(db, path)
    except EvalkitError as e:
        raise EvalkitError(f"database {path} is read-only, and a push made while pairs are open to raters "
                           f"(--while-rating) is recorded there, so that the study's provenance names it: nothing was "
                           f"written or pushed to {repo_id}", e.fix) from e


def _new_folders(path: Path) -> list[Path]:
    """The folders mkdir(parents=True) would create for path, outermost first."""
    out = []
    for p in [path, *path.parents]:
        if p.exists():
            break
        out.append(p)
    return out[::-1]


def _write(ds, out_dir: Path, card) -> dict[str, Path]:
    """Write the export into out_dir, all or nothing: every file is built in a staging folder inside out_dir, then
    the new parquet files are moved into data/ and the card replaces README.md last, in one rename. Any failure
    (a full disk, a write error, an interruption) removes what this run put there, so out_dir is left as it was.
    Returns split -> the parquet file the card names."""
    import shutil
    import tempfile

    made = _new_folders(out_dir / "data")
    data = output_folder(out_dir / "data", "the export")
    stage, moved = None, []
    try:
        stage = Path(tempfile.mkdtemp(prefix=".evalkit-export-", dir=out_dir))
        staged, files = {}, {}
        import datasets

        shown = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()  # a dozen "Creating parquet" bars of a few rows each say nothing
        try:
            for name in SPLITS:
                staged[name] = stage / f"{name}.parquet"
                ds[name].to_parquet(str(staged[name]))
                files[name] = data / f"{name}-{_sha256(staged[name])[:16]}.parquet"
        finally:
            if shown:
                datasets.enable_progress_bars()
        (stage / "README.md").write_text(card(files), encoding="utf-8")
        for name in SPLITS:
            if not files[name].exists():  # else the same content, from an earlier export: kept as it is
                staged[name].replace(files[name])
                moved.append(files[name])
        (stage / "README.md").replace(out_dir / "README.md")  # the new export is in place
    except BaseException as e:
        for f in moved:
            f.unlink(missing_ok=True)
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        for folder in reversed(made):  # the folders this run created, innermost first
            try:
                folder.rmdir()
            except OSError:
                break
        if isinstance(e, OSError):  # a full disk, a folder made read-only: the folder stays as it was
            raise cannot_write(out_dir, "the export", e) from e
        raise
    shutil.rmtree(stage, ignore_errors=True)
    keep = set(files.values())
    try:
        for old in data.glob("*.parquet"):  # an earlier export's files: the card no longer names them
            if old not in keep and _OUR_FILE.fullmatch(old.name):
                old.unlink()
    except OSError as e:
        raise EvalkitError(f"the export is written to {out_dir}, but an earlier export's file in {data} cannot be "
                           f"removed: {e.strerror or e}",
                           f"delete the parquet files in {data} that README.md does not name") from e
    return files


def _push(api, repo_id: str, out_dir: Path, files: dict[str, Path], public: bool) -> bool:
    """Upload this export (README.md and its data/*.parquet files, nothing else in out_dir) to the Hub dataset
    repo_id, removing earlier exports' parquet files there in the same commit. An existing repo keeps its visibility
    (create_repo with exist_ok): unless `public`, a repo the Hub reports public is refused before anything is
    uploaded. Returns whether the repo is private, as the Hub reports it, and whether the repo already held this
    export byte for byte (the Hub then makes no commit)."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()

    def failed(e):
        # the fix for the cause: logging in does not help where the Hub cannot be reached, nor a token that may read
        # but not write to the namespace
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status == 403:
            what = (f"use a token with write access to '{repo_id.split('/')[0]}' (or a namespace of your own) and "
                    "export again")
        elif status is None and _unreachable(e):
            what = "the Hub could not be reached (network, proxy or firewall): export again once it can be"
        elif status == 429 or (isinstance(status, int) and status >= 500):  # the Hub's own trouble: a login is fine
            what = (f"the Hub answered {status} ({'too many requests' if status == 429 else 'its own error'}): "
                    "export again in a few minutes")
        elif status in (None, 401):
            what = "log in (`hf auth login` or HF_TOKEN) and export again"
        else:  # 400, 404, 409...: the Hub's message above says what it refused
            what = (f"the Hub refused it ({status}): check the repo id '{repo_id}' and the Hub's message above, then "
                    "export again")
        # upload_folder makes one commit of the export's dozen files (hf_xet's pipeline splits only past 256 files or
        # 100 MB of plain-text files): the repo holds all of this export or none of it, never a part (an answer lost
        # after the commit, a timeout, leaves it whole)
        return EvalkitError(f"push to the Hub dataset '{repo_id}' failed: {type(e).__name__}: {e} (a push is one "
                            "commit: the repo holds the whole export or, as before, none of it)",
                            f"the export is saved locally in {out_dir}; {what}")

    try:
        api.create_repo(repo_id, repo_type="dataset", private=not public, exist_ok=True)
        info = api.repo_info(repo_id, repo_type="dataset")
        private, head = info.private, getattr(info, "sha", None)
    except Exception as e:  # noqa: BLE001 - network, auth, permissions: one clear message
        raise failed(e) from e
    if not public and private is not True:
        raise EvalkitError(
            f"the Hub dataset '{repo_id}' is {'public' if private is False else 'of unknown visibility'}: nothing was "
            "pushed (an export is pushed private unless --public; an existing repo keeps its visibility)",
            f"the export is saved locally in {out_dir}; make '{repo_id}' private on the Hub (its Settings) and export "
            "again, or pass --public to publish it there")
    try:
        held = api.list_repo_files(repo_id, repo_type="dataset")  # what the repo holds now
    except Exception as e:  # noqa: BLE001 - network, auth, permissions: one clear message
        raise failed(e) from e
    _refuse_a_sync_repo(repo_id, held, out_dir)
    try:
        foreign = _foreign_content(api, repo_id, held)
    except Exception as e:  # noqa: BLE001
        raise failed(e) from e
    if foreign:
        raise EvalkitError(
            f"the Hub dataset '{repo_id}' holds {foreign}, which no evalkit export wrote: nothing was pushed (a push "
            "replaces the repo's README.md and removes every parquet file under data/)",
            f"the export is saved locally in {out_dir}; check the repo id, and push to a repo of its own (a new name, "
            f"e.g. '{repo_id}-evalkit'), or move those files out of '{repo_id}' first")
    try:
        commit = api.upload_folder(folder_path=str(out_dir), repo_id=repo_id, repo_type="dataset",
                          commit_message="evalkit export",
                          allow_patterns=["README.md"] + [f"data/{f.name}" for f in files.values()],
                          # the same on the Hub: earlier exports' parquet files go in the same commit
                          delete_patterns=["data/*.parquet"])
    except Exception as e:  # noqa: BLE001 - network, auth, permissions: one clear message
        raise failed(e) from e
    # the Hub skips a commit that changes nothing and answers with the head it had: the command must not say it pushed
    unchanged = head is not None and getattr(commit, "oid", None) == head
    return bool(private), unchanged


def _refuse_a_sync_repo(repo_id: str, files: list[str], out_dir: Path) -> None:
    """A push to the repo a Space keeps its database in (publish.sync: EVALKIT_SYNC_REPO, the natural repo id to type
    for "the study's dataset") is refused: the export would become its card, and the repo, once made public to
    publish it, would publish the database, names, comments and salt included."""
    from .sync import DB_IN_REPO, START_FILE

    if synced := [f for f in (DB_IN_REPO, START_FILE) if f in files]:
        raise EvalkitError(
            f"the Hub dataset '{repo_id}' is a Space's sync repo (it holds {', '.join(synced)}: the whole study "
            "database, rater names, comments and the pseudonyms' secret included): nothing was pushed (the export "
            "would become that repo's card, and publishing it would publish the database)",
            f"the export is saved locally in {out_dir}; push it to a dataset repo of its own (a new name, e.g. "
            f"'{repo_id}-export'), and keep '{repo_id}' private to the organisers")


def _foreign_content(api, repo_id: str, files: list[str]) -> str | None:
    """What in the Hub repo (holding `files`) a push would destroy that no evalkit export wrote (None: nothing): a
    README.md that is not an evalkit card, or parquet files under data/ not named as an export names them. The local
    folder's card is checked the same way (refuse_to_replace); a repo id mistyped into someone's dataset must not lose
    its files."""
    theirs = [f for f in files if f.startswith("data/") and f.endswith(".parquet") and not _OUR_FILE.fullmatch(f[5:])]
    if theirs:
        return f"{len(theirs)} parquet file(s) under data/ ({', '.join(theirs[:3])}{', ...' if len(theirs) > 3 else ''})"
    if "README.md" in files:
        card = Path(api.hf_hub_download(repo_id, "README.md", repo_type="dataset"))
        if CARD_MARK not in card.read_text(encoding="utf-8", errors="replace"):
            return "a README.md that is not an evalkit dataset card"
    return None


def _unreachable(e: Exception) -> bool:
    """A failure to reach the Hub at all (no answer came back): the OS's, or the Hub client's transport errors, found
    by class name since the client's HTTP library changes with its version (httpx, httpx2)."""
    return isinstance(e, (ConnectionError, TimeoutError)) or any(c.__name__ == "TransportError" for c in type(e).__mro__)


def _cell(text: str) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def latest_time(rows: dict) -> str:
    """The latest time in the exported tables (rows as tables() gives them): what the card says it is as of. Unlike
    the moment of the export it is the same for the same rows, so exporting (and pushing) unchanged data gives the same
    card, and it moves with every row added (a rating, its correction)."""
    times = [v for table in rows.values() for r in table for c, v in r.items() if is_time(c) and v is not None]
    return max(times).isoformat(timespec="milliseconds") if times else "no row stored yet"


def provenance_markdown(prov: Provenance, as_of: str, shown=None, text=lambda t: t) -> str:
    """The provenance block of the dataset card; `as_of`: latest_time of its tables, never the moment of the export;
    `text`: how the aggregate's words (figures, notes) are shared (scrub.shared_text)."""
    lines = [f"Built by evalkit {prov.evalkit} from the rows stored up to {as_of} (the latest time in its tables).",
             "", "### Figures and the runs behind them", ""]
    for f in prov.figures:
        lines.append(f"- **{f.name}**: {text(f.value if f.value is not None else f.note or WITHHELD)}"
                     + (f" — {prov.cite(f.experiments)}" if f.value is not None else ""))
    lines += ["", "### Experiments", "",
              "| id | kind | used for | started | ended | records | config hash | gate hash |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in prov.experiments:
        lines.append(f"| {e.id} | {e.kind} | {', '.join(e.used_for)} | {e.started} | {e.ended or 'no records'} | "
                     f"{e.records} | `{e.config_hash}` | `{e.gate_hash or 'none'}` |")
    lines += ["", "### Environment and models", ""]
    for e in prov.experiments:
        lines.append(f"- experiment {e.id}: {environment_line(e)}")
        for role, m in (("target", e.target), ("draft", e.draft)):
            lines.append(f"  - {role}: {model_line(m)}")
    of = f" (study '{prov.scope.study}')" if prov.scope.study else ""
    lines += ["", f"### Sample scope{of}", ""] + [f"- {k}: {v}" for k, v in scope_items(prov.scope, shown)]
    lines += ["", "### Prompts", "", "| id | hash | source | material | task |", "| --- | --- | --- | --- | --- |"]
    for p in prov.prompts:
        lines.append(f"| {p.id} | `{', '.join(p.hashes) or NOT_RECORDED}` | {p.source} | {_cell(p.material)} | {_cell(p.task)} |")
    if prov.gate:
        g = prov.gate
        scrubbed = without_home(g["text"]) != g["text"]  # the card is scrubbed as a whole; say so where it shows
        lines += ["", f"### Release gate (frozen with experiment {g['experiment_id']}, hash `{g['hash']}`"
                  f"{'' if g['hash_ok'] else ', DOES NOT MATCH its text'})", ""]
        lines += (["Paths in it are shortened here, so this text does not hash to the hash above; the frozen text, "
                   "which does, is `studies.gate_json`.", ""] if scrubbed else [])
        lines += ["```toml", g["text"].rstrip(), "```"]
    else:
        lines += ["", "### Release gate", "", "No experiment with a frozen release gate."]
    if prov.notes:
        lines += ["", "### Notes", ""] + [f"- {text(n)}" for n in prov.notes]
    return "\n".join(lines)
