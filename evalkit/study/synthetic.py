"""Synthetic studies in a real evalkit database: pairs, generations, pre-screen rows, ratings and (optionally)
a benchmark with timing runs and memory, written in bulk through the real schema (store.open_db).

For the aggregation benchmark (scripts/aggbench.py) and for tests that run the real gate on studies of a
known truth; nothing here is used by a real study. Answers come from the planning model
(plan.simulate_answers), so a synthetic study is one draw of what `evalkit plan` simulates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..task.criteria import CRITERIA
from ..records import COMPARED, GenerationPath

PROMPTS = ("writing-01", "writing-02", "writing-03", "writing-04", "writing-05")


@dataclass
class SyntheticStudy:
    pairs: int
    raters_per_pair: int = 3
    # with raters_per_pair = 1: share of pairs rated twice (drawn at random, as the planning model draws it)
    second_rating_share: float = 0.0
    raters: int = 10
    # per criterion share of outputs that truly pass (1.0: everything passes)
    pass_rate: float = 0.8
    # probability a rater's answer is the true one
    rater_accuracy: float = 0.95
    identical_share: float = 0.0
    # rated drop (assisted - ordinary) per criterion; {} = no true drop
    drops: dict[str, float] = field(default_factory=dict)
    # share of answers turned into "unsure" (counted as not passing, as the aggregate does)
    unsure_share: float = 0.0
    # the planning model's pair effects and rater effects (evalkit.study.plan.model): correlation of a pair's two
    # outputs, raters' leniency and their extra leniency towards assisted outputs (logit-scale sds)
    pair_correlation: float = 0.0
    rater_sd: float = 0.0
    rater_path_sd: float = 0.0
    seed: int = 0
    # a benchmark experiment: speed-up of the assisted path and the memory its draft adds
    bench: bool = True
    speedup: float = 2.0
    extra_memory_mb: float = 200.0
    bench_reps: int = 5
    # rounds of the benchmark (a fresh process per path each), and the log-normal sd of the factor each process's
    # state puts on all its times (0: none; drawn only when above 0, so the default draws stay as they were)
    bench_rounds: int = 2
    bench_drift: float = 0.0
    gate_path: str | None = None
    # a new study of this name (store.attach_pool); None: the database's latest study (or its first)
    study: str | None = None
    # pooled pairs nobody rated (after the rated ones), judged by the pre-screen only
    unrated_pairs: int = 0
    # give the pairs queue ranks (the rated pairs the lowest) and their wanted ratings (the ratings the simulation gave
    # each), as a pool made by `evalkit generate` has
    queue_order: bool = False
    # the pre-screen's answer is the true status with this probability, independently per output
    prescreen_accuracy: float = 0.9
    # share of assisted outputs (where the texts differ) the pre-screen passes in addition: a bias towards assisted
    prescreen_bias: float = 0.0
    # the device the pool and the benchmark ran on, as their compatibility records and timed runs store it ("": none
    # stored, as an older evalkit's pool: the gate's speed_device "pool" cannot judge speed or memory then)
    device: str = "cpu"


def _insert_many(db, table: str, rows: list[tuple], columns: list[str]) -> None:
    from ..store import insert_rows

    insert_rows(db, table, columns, rows)


def _generation_rows(start_id: int, exp_id: int, prompt_ids, path: str, seconds, tokens, now: str,
                     token_hashes=None, peak_rss_mb: float = 500.0) -> list[tuple]:
    return [
        (start_id + i, exp_id, now, prompt_ids[i], path, "ok", f"synthetic {path} output {start_id + i}", "[]",
         token_hashes[i] if token_hashes is not None else f"h{start_id + i}", 40, int(tokens[i]), "eos",
         float(seconds[i]), 0.001, peak_rss_mb, peak_rss_mb, "{}", "sample", "{}", "", "", "", 0)
        for i in range(len(prompt_ids))
    ]


GEN_COLUMNS = ["id", "experiment_id", "created_at", "prompt_id", "path", "status", "text", "token_ids", "token_hash",
               "prompt_tokens", "new_tokens", "stop_reason", "generate_seconds", "decode_seconds", "peak_rss_mb",
               "rss_mb", "cuda_memory", "decoding", "effective_config", "error_class", "error_stage", "error_message",
               "live"]


def build_study(db, spec: SyntheticStudy) -> dict:
    """Write one synthetic study into `db` (an open evalkit database) in one transaction; returns counts."""
    import numpy as np

    from ..task.fidelity import RULES_VERSION
    from .gate import gate_snapshot
    from .plan import StudyModel, simulate_answers
    from ..store import insert_experiment, insert_together, now, set_queue_seed

    rng = np.random.default_rng(spec.seed)
    model = StudyModel(pass_rates={c: spec.pass_rate for c in CRITERIA}, rater_accuracy=spec.rater_accuracy,
                       identical_share=spec.identical_share, raters_per_pair=spec.raters_per_pair,
                       second_rating_share=spec.second_rating_share, raters=spec.raters,
                       pair_correlation=spec.pair_correlation, rater_sd=spec.rater_sd, rater_path_sd=spec.rater_path_sd)
    sim = simulate_answers(model, spec.pairs + spec.unrated_pairs, 1, spec.drops, rng)
    rated = sim["pair"] < spec.pairs
    if not rated.all():  # the unrated pairs' ratings are never given
        sim["pair"], sim["rater"] = sim["pair"][rated], sim["rater"][rated]
        sim["seen"] = {c: (o[rated], a[rated]) for c, (o, a) in sim["seen"].items()}
    stamp = now()
    gate = gate_snapshot(spec.gate_path)
    n = spec.pairs + spec.unrated_pairs

    def write(db) -> int:
        if spec.bench:
            _bench(db, spec, rng, stamp, gate)
        exp = insert_experiment(db, "pool", {}, _compat(spec.device), note="synthetic study", gate=gate,
                                new_study=spec.study)
        first = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM generations").fetchone()[0]
        prompt_ids = [PROMPTS[i % len(PROMPTS)] for i in range(n)]
        tokens = rng.integers(120, 200, n)
        o_ids, a_ids = first + np.arange(n), first + n + np.arange(n)
        o_sec = rng.lognormal(np.log(2.0), 0.1, n)
        a_sec = o_sec / spec.speedup * rng.lognormal(0, 0.05, n)
        a_hash = [f"h{o_ids[i]}" if sim["same"][i] else f"h{a_ids[i]}" for i in range(n)]  # same text, same tokens
        _insert_many(db, "generations", _generation_rows(first, exp, prompt_ids, GenerationPath.ORDINARY, o_sec, tokens, stamp), GEN_COLUMNS)
        _insert_many(db, "generations", _generation_rows(first + n, exp, prompt_ids, GenerationPath.ASSISTED, a_sec, tokens, stamp, a_hash),
                     GEN_COLUMNS)
        # the rule pre-screen agrees with the truth most of the time
        pre = []
        for c in CRITERIA:
            y_o, y_a = sim["truth"][c]
            flip = rng.random(2 * n) < 1 - spec.prescreen_accuracy
            passed = np.concatenate([y_o, y_a]) ^ flip
            if spec.prescreen_bias:
                passed[n:] |= ~sim["same"] & (rng.random(n) < spec.prescreen_bias / max(1 - passed[n:].mean(), 1e-9))
            pre += [(int(g), c, int(p), "synthetic", RULES_VERSION) for g, p in zip(np.concatenate([o_ids, a_ids]), passed)]
        _insert_many(db, "prescreen", pre, ["generation_id", "criterion", "passed", "evidence", "rules_version"])
        sides = np.where(rng.random(n) < 0.5, "A", "B")
        pair_ids = [f"s{spec.seed:x}x{exp}x{i:x}" for i in range(n)]
        # the pairs are drawn independently, so the rated ones (the first) are a random subset: the lowest ranks
        ranks = np.sort(np.random.default_rng([spec.seed, 17]).random(n)) if spec.queue_order else None
        pairs = [(pair_ids[i], exp, stamp, prompt_ids[i], i // len(PROMPTS), int(o_ids[i]), int(a_ids[i]),
                  int(o_ids[i] if sides[i] == "A" else a_ids[i]), int(a_ids[i] if sides[i] == "A" else o_ids[i]),
                  str(sides[i]), i, float(ranks[i]) if ranks is not None else None,
                  int(sim["wanted"][i]) if ranks is not None else None) for i in range(n)]
        _insert_many(db, "pairs", pairs, ["id", "experiment_id", "created_at", "prompt_id", "sample",
                                          "ordinary_generation_id", "assisted_generation_id", "a_generation_id",
                                          "b_generation_id", "ordinary_side", "work_index", "queue_rank",
                                          "wanted_ratings"])
        if ranks is not None:
            set_queue_seed(db, exp, spec.seed)
        _ratings(db, spec, sim, pair_ids, sides, rng, now())  # rated after the experiments started
        return exp

    exp = insert_together(db, write)
    return {"experiment_id": exp, "pairs": n, "ratings": len(sim["pair"])}


def _ratings(db, spec: SyntheticStudy, sim: dict, pair_ids, sides, rng, stamp: str) -> None:
    import numpy as np

    total = len(sim["pair"])  # identical pairs and unrated pairs have no ratings

    def answers(seen):
        out = np.where(seen, "pass", "fail").astype(object)
        if spec.unsure_share:
            out[rng.random(total) < spec.unsure_share] = "unsure"
        return out

    ordinary = {c: answers(sim["seen"][c][0]) for c in CRITERIA}
    assisted = {c: answers(sim["seen"][c][1]) for c in CRITERIA}
    o_pass = sum((ordinary[c] == "pass").astype(int) for c in CRITERIA)
    a_pass = sum((assisted[c] == "pass").astype(int) for c in CRITERIA)
    coin = rng.random(total)
    preferred = np.where(a_pass > o_pass, "assisted", np.where(a_pass < o_pass, "ordinary",
                         np.where(coin < 0.5, "tie", np.where(coin < 0.75, "assisted", "ordinary"))))
    pair_of = sim["pair"]
    side = sides[pair_of]
    o_is_a = side == "A"
    pref_letter = np.where(preferred == "tie", "tie", np.where((preferred == "ordinary") == o_is_a, "A", "B"))
    rater_names = [f"rater{int(x):05d}" for x in range(spec.raters)]
    columns = ["pair_id", "rater", "created_at", "kind", "preference", "preferred_path"]
    for c in CRITERIA:
        columns += [f"ordinary_{c}", f"assisted_{c}", f"a_{c}", f"b_{c}"]
    cols = [np.asarray(pair_ids, dtype=object)[pair_of], np.asarray(rater_names, dtype=object)[sim["rater"]],
            np.full(total, stamp, dtype=object), np.full(total, "rating", dtype=object), pref_letter.astype(object),
            preferred.astype(object)]
    for c in CRITERIA:
        cols += [ordinary[c], assisted[c], np.where(o_is_a, ordinary[c], assisted[c]), np.where(o_is_a, assisted[c], ordinary[c])]
    chunk = 100_000
    for start in range(0, total, chunk):
        rows = list(zip(*(col[start:start + chunk].tolist() for col in cols)))
        _insert_many(db, "ratings", rows, columns)


def add_bench(db, speedup: float, extra_memory_mb: float = 200.0, seed: int = 0, reps: int = 5, rounds: int = 2,
              drift: float = 0.0, prompts: tuple[str, ...] = PROMPTS, device: str = "cpu") -> int:
    """Another benchmark of the synthetic pair, as a rerun of `evalkit bench` stores it (its id): a second measurement
    of the same pair and settings, which the verdict must pool with the first, not prefer (on `device`, in its
    compatibility record and timed runs)."""
    import numpy as np

    from ..store import now

    spec = SyntheticStudy(pairs=0, speedup=speedup, extra_memory_mb=extra_memory_mb, bench_reps=reps,
                          bench_rounds=rounds, bench_drift=drift, device=device)
    return _bench(db, spec, np.random.default_rng(seed), now(), {}, prompts)


def _bench(db, spec: SyntheticStudy, rng, stamp: str, gate: dict, prompts: tuple[str, ...] = PROMPTS) -> int:
    """A benchmark experiment as `evalkit bench` stores it: one process per path and round (memory after load),
    and per prompt, round and repetition one timed run on each path with the same length and stop reason."""
    from ..records import ProcessRecord
    from ..store import insert_bench_process, insert_experiment

    exp = insert_experiment(db, "bench", {"bench": {"length_tolerance": 0.1, "bootstrap": 2000}}, _compat(spec.device),
                            note="synthetic benchmark", gate=gate)
    procs = {}
    rounds = range(1, spec.bench_rounds + 1)
    state = {(path, rnd): float(rng.lognormal(0, spec.bench_drift)) if spec.bench_drift else 1.0
             for rnd in rounds for path in COMPARED}
    for path in COMPARED:
        for rnd in rounds:
            rss = 500.0 + (spec.extra_memory_mb if path == GenerationPath.ASSISTED else 0.0)
            process = ProcessRecord(path=path, round=rnd, order=COMPARED.index(path), rss_after_load_mb=rss,
                                    warmup_count=1)
            procs[(path, rnd)] = insert_bench_process(db, exp, process, [])
    first = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM generations").fetchone()[0]
    gens, runs = [], []
    gid = first
    for prompt in prompts:
        for rnd in rounds:
            for rep in range(spec.bench_reps):
                tokens = int(rng.integers(120, 200))
                o_sec = float(rng.lognormal(0.7, 0.05))
                for path, sec in zip(COMPARED, (o_sec * state[(GenerationPath.ORDINARY, rnd)], o_sec / spec.speedup
                                                * float(rng.lognormal(0, 0.03)) * state[(GenerationPath.ASSISTED, rnd)])):
                    gens += _generation_rows(gid, exp, [prompt], path, [sec], [tokens], stamp, peak_rss_mb=500.0 + (
                        spec.extra_memory_mb if path == GenerationPath.ASSISTED else 0.0))
                    runs.append((exp, procs[(path, rnd)], gid, path, prompt, rnd, rep, rep, tokens, "eos", sec,
                                 tokens / sec, "ok", spec.device))
                    gid += 1
    _insert_many(db, "generations", gens, GEN_COLUMNS)
    _insert_many(db, "timing_runs", runs, ["experiment_id", "process_id", "generation_id", "path", "prompt_id", "round",
                                           "rep", "seed", "new_tokens", "stop_reason", "seconds", "tokens_per_second",
                                           "status", "device"])
    return exp


def _compat(device: str) -> dict:
    """The part of a compatibility record a synthetic experiment stores: the device it ran on, where one is given."""
    return {"device": device} if device else {}


def gate_file_text(planned_pairs: int, margin: float = 0.05, confidence: float = 0.95, min_ratings_per_pair: int = 3,
                   min_speedup_ci_low: float = 1.1, max_extra_memory_mb: float = 1024, claim: str | None = None,
                   min_raters: int | None = None, ppi: str | None = None, interval: str | None = None,
                   monitoring: str | None = None, look_every: int | None = None,
                   second_rating_share: float | None = None, speed_rounds: int = 2) -> str:
    """A gate file for synthetic studies and tests (claim, min_raters, ppi, interval, monitoring, look_every,
    second_rating_share: the gate's defaults unless given; speed_rounds: the 2 rounds a synthetic benchmark measures,
    _bench)."""
    return "\n".join([
        f"min_speedup_ci_low = {min_speedup_ci_low}",
        f"speed_rounds = {speed_rounds}",
        f"margin = {margin}",
        f"confidence = {confidence}",
        f"max_extra_memory_mb = {max_extra_memory_mb}",
        f"min_ratings_per_pair = {min_ratings_per_pair}",
        f"planned_pairs = {planned_pairs}",
        *([f'claim = "{claim}"'] if claim is not None else []),
        *([f"min_raters = {min_raters}"] if min_raters is not None else []),
        *([f'ppi = "{ppi}"'] if ppi is not None else []),
        *([f'interval = "{interval}"'] if interval is not None else []),
        *([f'monitoring = "{monitoring}"'] if monitoring is not None else []),
        *([f"look_every = {look_every}"] if look_every is not None else []),
        *([f"second_rating_share = {second_rating_share}"] if second_rating_share is not None else []),
        "",
    ])


def summary(db) -> dict:
    return json.loads(json.dumps({t: db[t].count for t in ("pairs", "generations", "ratings", "prescreen", "timing_runs")}))
