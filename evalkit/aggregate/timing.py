"""Timing, memory and the speed-up behind the verdict: from every benchmark of the study's pair (the protocol), their
rounds pooled, when there is one, else from the pair pool's single runs (said so; with the gate's speed_source
"benchmark" they are reported, never deciding). The speed-up is evalkit.generation.speed's, the benchmark summary's own
computation, over all prompts and per prompt. Beside it, the batch table: the ordinary path at each batch size
against assisted at batch 1, from the latest benchmark that measured batch sizes (`evalkit bench --batch-sizes`) of
the pair the study rates, on its deployment device (the gate's speed_device)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from ..generation import registry
from ..records import GenerationPath
from ..generation.speed import BatchComparison, batch_requests, compare_batches, measure_speed
from ..stats import median
from .data import (ALL, PAIR_STORED, bench_mismatch, deciding_benches, deployment_device, device_kinds, other_device,
                   run_on, study_pool, unknown_device)
from .notes import note

POOL_SOURCE = "pair pool (single runs, not the benchmark protocol)"


@dataclass
class Speed:
    """The speed figure the verdict weighs, and where it comes from."""

    source: str | None  # "benchmark", POOL_SOURCE, or None when nothing was timed
    experiment_id: int | None  # the benchmark's (None for the pool)
    speedup: float | None
    speedup_ci95: list[float] | None  # [low, high]
    comparable_pairs: int
    matched_pairs: int
    identical_outputs: float | None
    extra_memory_mb: float | None  # what loading the draft adds (benchmark only)
    fallback_runs: int
    # assisted / ordinary tokens per second over every matched pair (no selection), its interval, and whether the
    # two intervals are apart (evalkit.generation.speed)
    throughput_ratio: float | None = None
    throughput_ci95: list[float] | None = None
    throughput_pairs: int = 0
    selection_gap: bool | None = None
    batch_experiment_id: int | None = None  # the benchmark the batch table comes from (None: no batch measured)
    batch_answer: str | None = None  # from which batch size ordinary's total throughput beats assisted's, if any
    notes: list[str] = field(default_factory=list)  # prompts left out of a figure that cannot be formed for them
    extra_memory_basis: str | None = None  # what extra_memory_mb measured (timing._extra_memory)
    # Leviathan et al.'s prediction beside the measured speed-up (benchmark only: stats.theoretical_speedup from the
    # tokens per target pass, the mean draft length and the draft/target cost ratio measured in the same run), and
    # whether the two independent acceptance counts agreed on every assisted run
    theoretical_speedup: float | None = None
    counts_agree: bool | None = None
    fallback_cause: str = ""  # why the fallbacks fell back (generation.fallbacks.cause_text), when there are some
    memory_note: str = ""  # why extra_memory_mb is None although a benchmark exists ("" when none does)
    # every benchmark of the study's pair stored by then whose rounds the figure pools (data.deciding_benches), and
    # the rounds over all of them; why they cannot be judged together ('' when they can)
    benchmark_ids: list[int] = field(default_factory=list)
    rounds: int = 0
    devices_disagree: str = ""
    # where assisted runs of the benchmarks fell back: the speed-up with each fallback counted on the assisted side at
    # its whole wait (generation.speed.deployed_speedup), which the speed condition needs too; None without fallbacks
    deployed_speedup: float | None = None
    deployed_ci95: list[float] | None = None
    # the gate's speed_rounds (0: every round pooled, a study frozen before the key), and the rounds measured after
    # the deciding ones, with their benchmarks: reported, never weighed (timing._deciding)
    rounds_planned: int = 0
    rounds_further: int = 0
    further_benchmark_ids: list[int] = field(default_factory=list)
    # the gate's speed_source is "benchmark": only benchmark rounds decide, so a figure from the pool's single runs is
    # reported, not deciding (False: the pool decides until a benchmark is stored, a gate frozen before the key)
    bench_only: bool = False
    # the benchmark whose extra memory the condition weighs, and the benchmarks whose figures it is the largest of
    # (_largest_extra_memory: every benchmark of the pair, deciding rounds or not; empty: none measured, or a decision
    # frozen before they were kept)
    memory_benchmark_id: int | None = None
    memory_benchmark_ids: list[int] = field(default_factory=list)
    # the device kind whose benchmarks decide (the gate's speed_device: data.deployment_device); '' where any does
    deploy_device: str = ""
    # why that cannot be known (data.unknown_device: the gate's "pool" and a pool that recorded none, or several):
    # the placements seen, or data.UNRECORDED; '' where it can. Then speed and memory are not judged
    device_unknown: str = ""
    pool_id: int | None = None  # the study's first pool, which device_unknown is about
    # a figure from the pool's single runs: the pools among them that recorded no untimed warm-up of both paths
    # (study.pairs.WARMED_UP; made before evalkit ran one), [] where every one did; None for a benchmark's figure
    pools_unwarmed: list[int] | None = None

    def to_json(self) -> dict:
        return asdict(self)

    def keyed_json(self) -> dict:
        """The notes among its fields with the key and figures of each (notes.keyed), which to_json's plain text
        loses: a decision stores them beside it, so that its Chinese reads them again (from_json)."""
        from .notes import keyed

        return {"notes": [keyed(n) for n in self.notes], "fallback_cause": keyed(self.fallback_cause),
                "memory_note": keyed(self.memory_note)}

    @classmethod
    def from_json(cls, stored: dict) -> "Speed":
        """A Speed from to_json's dict, its notes Notes again where keyed_json was stored beside it (`keyed`); a
        decision frozen by an older evalkit stored plain text, which stays plain text."""
        from .notes import unkeyed

        speed = cls(**{k: v for k, v in stored.items() if k in cls.__dataclass_fields__})
        if keys := stored.get("keyed"):
            if len(keys.get("notes") or []) == len(speed.notes):
                speed.notes = [unkeyed(k, n) for k, n in zip(keys["notes"], speed.notes)]
            speed.fallback_cause = unkeyed(keys.get("fallback_cause"), speed.fallback_cause)
            speed.memory_note = unkeyed(keys.get("memory_note"), speed.memory_note)
        return speed


@dataclass
class Rounds:
    """Which benchmark rounds the speed figure weighs (timing._deciding): the gate's planned number (0: every round,
    the rule of a study frozen before speed_rounds), the deciding ones found, and those measured after them."""

    planned: int = 0
    deciding: int = 0
    further: int = 0
    further_benchmarks: list[int] = field(default_factory=list)


def _runs(db, study_id: int | None = None, before: str | None = None, speed_rounds: int = 0, speed_device: str = "any",
          through: int | None = None) -> tuple[list[dict], str | None, list[int], list[str], Rounds]:
    """The timed runs the speed-up rests on, their source, the benchmarks (their memory figures count even when they
    stored no timed run and the pool's runs stand in), notes and which rounds decide. The benchmark measures the
    model pair, whichever study is rated; the pool's runs are the study's own pairs. `before`: only what was stored by
    then (the decision frozen at completion). Every benchmark that measures what the study rates counts
    (data.deciding_benches), in the order they were stored: each is a fresh process per path, the interval's unit,
    so each benchmark's round keeps its own number (1, 2, ... over all of them in that order), and the first
    `speed_rounds` of them decide (_deciding), from benchmarks on the gate's speed_device only."""
    benches, notes = deciding_benches(db, study_id, before, speed_device, through)
    ids = [b["id"] for b in benches]
    rows = []
    for bench_id in ids:
        rows += db.query(
            """SELECT t.experiment_id, t.path, t.prompt_id, t.round, t.rep, t.new_tokens, t.stop_reason, t.seconds,
                      t.decode_seconds, t.tokens_per_second, t.device, g.token_hash, g.peak_rss_mb, g.draft_proposed, g.draft_accepted,
                      g.draft_rounds, g.target_passes, g.counts_agree
               FROM timing_runs t JOIN generations g ON g.id = t.generation_id WHERE t.experiment_id = ?
               ORDER BY t.round, t.id""", [bench_id])
    if rows:
        number: dict = {}
        for r in rows:  # the stored number kept: a failed worker is recorded against it
            r["stored_round"] = r["round"]
            r["round"] = number.setdefault((r["experiment_id"], r["round"]), len(number) + 1)
        rows, rounds = _deciding(db, rows, ids, speed_rounds)
        return rows, "benchmark", ids, notes + _order_imbalance(rows), rounds
    pool_rows = list(db.query(
        f"""SELECT p.id AS pair, p.experiment_id, p.prompt_id, g.path, g.new_tokens, g.stop_reason, g.generate_seconds AS seconds,
                  g.new_tokens / g.generate_seconds AS tokens_per_second, g.device, g.token_hash, g.peak_rss_mb,
                  g.draft_proposed, g.draft_accepted
           FROM pairs p JOIN generations g ON g.id IN (p.ordinary_generation_id, p.assisted_generation_id)
           WHERE p.kind = 'study' AND (:study IS NULL OR p.experiment_id IN
                 (SELECT id FROM experiments WHERE study_id = :study))
             AND (:before IS NULL OR {PAIR_STORED.format(p='p.')} <= :before)""",
        {"study": study_id, "before": before}))
    for r in pool_rows:  # pair index plays the role of (round, rep)
        r["round"], r["rep"] = 1, r.pop("pair")
    return pool_rows, (POOL_SOURCE if pool_rows else None), ids, notes, Rounds(speed_rounds)


def _deciding(db, rows: list[dict], bench_ids: list[int], planned: int) -> tuple[list[dict], Rounds]:
    """The rows of the first `planned` whole rounds (both paths timed, no worker of the round failed), in storage
    order, and what was measured after them. Fixed in advance, so looking after each `evalkit bench` and stopping
    once the interval clears the bar cannot raise the false-pass rate: rounds stored after the deciding ones never
    enter (tests/test_speed_selection.py simulates that policy). planned 0: every round (a study frozen before
    speed_rounds)."""
    if not planned:
        return rows, Rounds(0, len({r["round"] for r in rows}))
    marks = ",".join("?" * len(bench_ids))
    failed = {tuple(k) for k in db.execute(f"SELECT experiment_id, round FROM bench_processes WHERE experiment_id IN "
                                           f"({marks}) AND status = 'failed'", bench_ids)}
    paths: dict[int, set] = {}
    for r in rows:
        paths.setdefault(r["round"], set()).add(r["path"])
    whole = {r["round"] for r in rows if (r["experiment_id"], r["stored_round"]) not in failed
             and GenerationPath.ORDINARY in paths[r["round"]]
             and paths[r["round"]] & {GenerationPath.ASSISTED, GenerationPath.FALLBACK}}
    deciding = set(sorted(whole)[:planned])
    last = max(deciding, default=0)
    after = [r for r in rows if r["round"] > last]
    return ([r for r in rows if r["round"] in deciding],
            Rounds(planned, len(deciding), len({r["round"] for r in after}),
                   sorted({r["experiment_id"] for r in after})))


def _order_imbalance(rows: list[dict]) -> list[str]:
    """A note where the deciding rounds start the paths in one order more often than in the other: a benchmark runs
    its rounds ABBA (bench.run.round_orders: an odd stored round in the paths' order, an even one reversed), balanced
    over an even count, but an odd speed_rounds, or a failed worker that drops a round, leaves one order ahead, and a
    drift in the machine's speed over the rounds can then favour one path. Said, never weighed: the rule fixed before
    the first benchmark chose the rounds."""
    rounds = {(r["experiment_id"], r["stored_round"]) for r in rows}
    given = sum(1 for _, n in rounds if n % 2)
    if given == len(rounds) - given:
        return []
    return [note("order imbalance", rounds=len(rounds), given=given, reversed=len(rounds) - given)]


def _devices_disagree(rows: list[dict], source: str | None) -> str:
    """The benchmarks of the study's pair per device kind, 'cpu: benchmark(s) 3; cuda: benchmark(s) 5', when there
    are several kinds ('' when one): their timings never pool, and choosing one would let the organiser choose the
    figure, so the speed condition is not judged (verdict.speed_condition)."""
    from ..generation.speed import device_kind

    if source != "benchmark":
        return ""
    kinds: dict[str, set] = {}
    for r in rows:
        if r.get("device"):
            kinds.setdefault(device_kind(r["device"]), set()).add(r["experiment_id"])
    if len(kinds) < 2:
        return ""
    return "; ".join(f"{kind}: benchmark(s) {', '.join(map(str, sorted(ids)))}" for kind, ids in sorted(kinds.items()))


def memory_source(speed) -> str:
    """Which benchmark's figure the memory condition weighs where several measured it ('' for one), for the card (the
    verdict's extra_memory_basis ends with the same words)."""
    compared = getattr(speed, "memory_benchmark_ids", None) or []
    return _largest_of(len(compared), speed.memory_benchmark_id) if len(compared) > 1 else ""


def _largest_of(compared: int, bench_id: int) -> str:
    return f"the largest of {compared} benchmarks' figures, benchmark {bench_id}'s"


def bench_basis(speed) -> str:
    """What the speed figure rests on, for the verdict, report, card and Results tab: 'benchmark 4, 4 rounds' or
    '2 benchmarks (4, 7), 8 rounds pooled' (a decision frozen before the count was kept: 'benchmark 4'), the device
    kind they ran on where the gate fixes it (', on cpu'), and the rounds measured after the deciding ones ('; 4 further rounds measured (benchmark 9), not deciding')."""
    single = getattr(speed, "experiment_id", None)
    ids = getattr(speed, "benchmark_ids", None) or ([single] if single is not None else [])
    warm = f"; {w}" if (w := warmup_words(speed)) else ""
    if speed.source == POOL_SOURCE and getattr(speed, "bench_only", False):
        return f"{POOL_SOURCE}, reported, not deciding{warm}"
    if speed.source != "benchmark" or not ids:
        return str(speed.source) + warm
    rounds = getattr(speed, "rounds", 0)
    if len(ids) == 1:
        text = f"benchmark {ids[0]}" + (f", {rounds} rounds" if rounds else "")
    else:
        text = f"{len(ids)} benchmarks ({', '.join(map(str, ids))}), {rounds} rounds pooled"
    if device := getattr(speed, "deploy_device", ""):  # the hardware the claim is about (the gate's speed_device)
        text += f", on {device}"
    if further := getattr(speed, "rounds_further", 0):
        others = getattr(speed, "further_benchmark_ids", [])
        text += (f"; {further} further round{'s' if further > 1 else ''} measured (benchmark"
                 f"{'s' if len(others) > 1 else ''} {', '.join(map(str, others))}), not deciding")
    return text


def without_fallbacks(speed, make=None) -> str:
    """Words for the tokens-per-second ratio where assisted runs fell back ('' where none did): it pairs assisted runs
    only, so it leaves them out, as the speed-up does; the speed-up as deployed (verdict._as_deployed) counts them.
    `make`: as speed_line's."""
    from .data import _text

    make = make or _text
    n = getattr(speed, "fallback_runs", 0) or 0
    return make("excluding one" if n == 1 else "excluding many", n=n) if n else make("line empty")


def left_out_words(speed, make=None) -> str:
    """What the speed-up over comparable pairs leaves out, where it is printed apart from the verdict's reason (the
    card's figure, the SPEED line): the matched pairs whose outputs were not comparable, and the assisted runs that
    fell back (never paired, never assisted), with the speed-up as deployed that counts them; '' when nothing was.
    The card said "over 10 comparable pairs" of 40 matched, with fallbacks, and no word of the rest (speed audit,
    2026-12-06). `make`: as speed_line's."""
    from ..generation.speed import joined
    from ..stats.speedup import ratio_text
    from .data import _text

    make = make or _text
    parts = []
    if (n := (speed.matched_pairs or 0) - (speed.comparable_pairs or 0)) > 0:
        parts.append(make("left out not comparable", n=n, matched=speed.matched_pairs))
    if fell := getattr(speed, "fallback_runs", 0) or 0:
        parts.append(make("left out fell one" if fell == 1 else "left out fell many", fell=fell))
    if not parts:
        return ""
    after = make("line empty")
    if fell and (deployed := getattr(speed, "deployed_speedup", None)) is not None:
        ci = getattr(speed, "deployed_ci95", None)
        after = make("left out deployed", ratio=ratio_text(deployed),
                     ci=make("left out deployed ci", low=ratio_text(ci[0]), high=ratio_text(ci[1])) if ci
                     else make("line empty"))
    elif fell:
        after = make("left out overstates")
    return make("left out", parts=joined(parts, make, "left out parts"), after=after)


def rounds_needed(speed) -> int:
    """The benchmark rounds still missing before the gate's speed_rounds decide (0 once they do, or without a plan;
    without a benchmark, 0 where the pool's runs decide, a gate frozen before speed_source)."""
    if speed.source != "benchmark":
        return getattr(speed, "rounds_planned", 0) if getattr(speed, "bench_only", False) else 0
    return max(getattr(speed, "rounds_planned", 0) - getattr(speed, "rounds", 0), 0)


def runs_version(db, study_id: int | None = None, before: str | None = None, speed_device: str = "any",
                 through: int | None = None) -> tuple:
    """What the speed figure rests on, cheaply: the benchmarks and the number of the study's pool pairs stored by
    `before` (a frozen decision reuses the speed figure of now when nothing was stored since)."""
    benches, _notes = deciding_benches(db, study_id, before, speed_device, through)
    pairs = db.execute(f"""SELECT COUNT(*) FROM pairs p WHERE p.kind = 'study' AND (:study IS NULL OR p.experiment_id IN
                              (SELECT id FROM experiments WHERE study_id = :study))
                            AND (:before IS NULL OR {PAIR_STORED.format(p='p.')} <= :before)""",
                       {"study": study_id, "before": before}).fetchone()[0]
    return (tuple(b["id"] for b in benches), pairs)


def gate_speed(values: dict | None) -> dict:
    """timing's keywords from a study's frozen gate values: which rounds decide (speed_rounds), and whether only
    benchmark rounds do (speed_source), and on which device kind (speed_device). No gate: every round, the pool
    standing in, any device (no decision is made then)."""
    from ..study.gate import ANY_DEVICE, POOL_THEN_BENCHMARK

    values = values or {}
    return {"speed_rounds": values.get("speed_rounds", 0),
            "bench_only": values.get("speed_source", POOL_THEN_BENCHMARK) == "benchmark",
            "speed_device": values.get("speed_device", ANY_DEVICE)}


def timing(db, tolerance: float, resamples: int, *, study_id: int | None = None, before: str | None = None,
           speed_rounds: int = 0, bench_only: bool = False, speed_device: str = "any", through: int | None = None):
    """Per path timing and memory (a table, every registered path that ran), the speed-up per prompt and over all
    prompts of each path compared with ordinary, each on its own rows (a table with a `path` column: assisted's
    first, then e.g. prompt lookup's, never pooled; with the ratio of tokens per second over every matched pair
    beside it), and the speed figure the verdict weighs (assisted's), all on the first `speed_rounds` benchmark
    rounds (the study's frozen gate; 0: every round). bench_only (the gate's speed_source "benchmark"): a figure from
    the pool's single runs is marked not deciding (the speed condition waits for the rounds, rounds_needed).
    speed_device (the gate's): the device kind whose benchmarks decide (data.deciding_benches; "any": every kind).
    through: the last benchmark taken, in the order they were stored (data.deciding_benches)."""
    import pandas as pd

    # what the figure rests on, read BEFORE its rows: a benchmark or pairs stored while the bootstrap runs make a
    # version that differs from it, so a decision frozen meanwhile recomputes its speed instead of reusing this one
    # (decision.walk_history; durability audit 2026-12-02: it froze KEEP on a figure that missed a benchmark)
    version = runs_version(db, study_id, before, speed_device, through)
    rows, source, bench_ids, left_out, rounds = _runs(db, study_id, before, speed_rounds, speed_device, through)
    paths = []
    for path in registry.order({r["path"] for r in rows}):
        rs = [r for r in rows if r["path"] == path]
        paths.append({"path": str(path), "runs": len(rs), "median_seconds": median([r["seconds"] for r in rs]),
                      "median_tokens_per_second": median([r["tokens_per_second"] for r in rs]),
                      "median_new_tokens": median([r["new_tokens"] for r in rs]),
                      "median_peak_rss_mb": median([r["peak_rss_mb"] for r in rs])})
    speed_rows = []
    present = {r["path"] for r in rows}
    versus = [GenerationPath.ASSISTED] + [p for p in registry.versus_ordinary()
                                          if p != GenerationPath.ASSISTED and p in present]
    for path in versus:
        for prompt_id in [ALL] + sorted({r["prompt_id"] for r in rows}):
            fig = measure_speed(rows if prompt_id == ALL else [r for r in rows if r["prompt_id"] == prompt_id],
                                tolerance, resamples, path, processes=source == "benchmark", make=note)
            if path != GenerationPath.ASSISTED and not fig.matched_pairs:
                continue
            speed_rows.append({
                "prompt_id": prompt_id, "path": str(path), "matched_pairs": fig.matched_pairs, "comparable_pairs": fig.comparable_pairs,
                "speedup": fig.speedup, "ci_low": fig.ci95[0] if fig.ci95 else None,
                "ci_high": fig.ci95[1] if fig.ci95 else None,
                "identical_outputs": fig.identical_outputs, "acceptance_rate": fig.acceptance_rate,
                "tps_ratio": fig.throughput_ratio, "tps_ci_low": fig.throughput_ci95[0] if fig.throughput_ci95 else None,
                "tps_ci_high": fig.throughput_ci95[1] if fig.throughput_ci95 else None,
                "selection_gap": fig.selection_gap,
            })
            if prompt_id == ALL and path == GenerationPath.ASSISTED:
                everything = fig
    overall = speed_rows[0]
    memory, memory_basis, memory_bench = _largest_extra_memory(db, bench_ids)
    timed = [b for b in bench_ids if b in {r["experiment_id"] for r in rows}] if source == "benchmark" else []
    theory, agree = _theory(db, timed, rows) if timed else (None, None)
    exp_id = (timed or bench_ids or [None])[-1]  # the latest deciding one: what a single figure names
    speed = Speed(source=source, experiment_id=exp_id, speedup=overall["speedup"],
                  speedup_ci95=[overall["ci_low"], overall["ci_high"]] if overall["ci_low"] is not None else None,
                  comparable_pairs=overall["comparable_pairs"], matched_pairs=overall["matched_pairs"],
                  identical_outputs=overall["identical_outputs"], extra_memory_mb=memory,
                  extra_memory_basis=memory_basis, theoretical_speedup=theory, counts_agree=agree,
                  fallback_runs=(sum(1 for r in rows if r["path"] == GenerationPath.FALLBACK) if source != POOL_SOURCE
                                 else _pool_fallbacks(db, study_id, before)),
                  throughput_ratio=everything.throughput_ratio,
                  throughput_ci95=list(everything.throughput_ci95) if everything.throughput_ci95 else None,
                  throughput_pairs=everything.throughput_pairs, selection_gap=everything.selection_gap,
                  notes=list(getattr(everything, "notes", [])) + _failed_workers(db, timed, source) + left_out,
                  benchmark_ids=timed, rounds=len({r["round"] for r in rows}) if timed else 0,
                  devices_disagree=_devices_disagree(rows, source), rounds_planned=rounds.planned,
                  rounds_further=rounds.further, further_benchmark_ids=rounds.further_benchmarks,
                  bench_only=bench_only, memory_benchmark_id=memory_bench,
                  deploy_device=deployment_device(db, pool := study_pool(db, study_id), speed_device),
                  device_unknown=unknown_device(db, pool, speed_device), pool_id=pool["id"] if pool else None,
                  memory_benchmark_ids=list(bench_ids) if memory is not None else [])
    if source == POOL_SOURCE:
        speed.pools_unwarmed = _unwarmed(db, {r["experiment_id"] for r in rows})
    if speed.fallback_runs and source == "benchmark":
        speed.deployed_speedup, speed.deployed_ci95 = _deployed(rows, tolerance)
    if speed.fallback_runs:
        from ..generation.fallbacks import experiment_cause

        speed.fallback_cause = experiment_cause(db, timed if source != POOL_SOURCE else _pool_ids(db, study_id),
                                                make=note)
    if memory is None and bench_ids:
        speed.memory_note = _memory_notes(db, bench_ids)
    speed.version = version  # not a field: it stays out of every published figure
    return pd.DataFrame(paths), pd.DataFrame(speed_rows), speed


def _deployed(rows: list[dict], tolerance: float) -> tuple[float | None, list[float] | None]:
    """The benchmarks' speed-up as deployed: their fallback runs counted as assisted at their whole wait."""
    from ..generation.speed import device_kind, deployed_speedup

    if len({device_kind(r["device"]) for r in rows if r.get("device")}) > 1:
        return None, None  # never pooled (measure_speed): the condition is not judged then anyway
    point, ci = deployed_speedup(rows, tolerance)
    return point, (list(ci) if ci else None)


def _theory(db, bench_ids: list[int], rows: list[dict]) -> tuple[float | None, bool | None]:
    """The benchmarks' Leviathan et al. prediction and its acceptance cross-check, as `evalkit bench` prints them."""
    from ..generation.speed import drafting
    from ..stats import alpha_from_tokens_per_pass, theoretical_speedup

    assisted = [r for r in rows if r["path"] == GenerationPath.ASSISTED]
    if not assisted:
        return None, None
    per_pass, length = drafting(assisted)
    marks = ",".join("?" * len(bench_ids))
    procs = list(db.query("SELECT target_seconds_per_token, draft_seconds_per_token FROM bench_processes "
                          f"WHERE experiment_id IN ({marks}) AND status = 'ok'", bench_ids))
    t_spt = median([p["target_seconds_per_token"] for p in procs])
    d_spt = median([p["draft_seconds_per_token"] for p in procs])
    alpha = alpha_from_tokens_per_pass(per_pass, length)
    cost = d_spt / t_spt if (t_spt and d_spt) else None
    theory = theoretical_speedup(alpha, length, cost) if None not in (alpha, length, cost) else None
    checked = [bool(r["counts_agree"]) for r in assisted if r["counts_agree"] is not None]  # NULL: not counted
    return theory, (all(checked) if checked else None)


def _failed_workers(db, bench_ids: list[int], source: str | None) -> list[str]:
    """A benchmark stores the runs of the workers that finished, then its failed workers, and raises: its speed-up
    then rests on part of the protocol (an ABBA round may be missing), which must be said (of each benchmark)."""
    if source != "benchmark":
        return []
    return [n for b in bench_ids for n in _failed_workers_of(db, b)]


def _failed_workers_of(db, bench_id: int) -> list[str]:
    failed, total = db.execute("SELECT SUM(status = 'failed'), COUNT(*) FROM bench_processes WHERE experiment_id = ?",
                               [bench_id]).fetchone()
    if not failed:
        return []
    return [note("workers failed", failed=failed, bench=bench_id, total=total)]


def _unwarmed(db, pool_ids: set[int]) -> list[int]:
    """The pools (of those timed) whose runs had no untimed warm-up of both paths: their note is not WARMED_UP."""
    from ..study.pairs import WARMED_UP

    return sorted(i for i in pool_ids if db.execute("SELECT note FROM experiments WHERE id = ?", [i]).fetchone()[0]
                  != WARMED_UP)


def warmup_words(speed) -> str:
    """Whether the pool's timed runs had the untimed warm-up of both paths, for wherever its figure is shown ('' for
    a benchmark's figure, or a decision frozen before this was kept)."""
    cold = getattr(speed, "pools_unwarmed", None)
    if cold is None or speed.source != POOL_SOURCE:
        return ""
    if not cold:
        return "each path warmed up untimed first, the paths taking turns going first"
    return (f"no untimed warm-up recorded for pool{'s' if len(cold) > 1 else ''} {', '.join(map(str, cold))} (made "
            "before evalkit ran one: the process's first call, an ordinary run, carried its one-time costs, and "
            "ordinary always ran first)")


def _pool_ids(db, study_id: int | None) -> list[int]:
    return [r[0] for r in db.execute("SELECT id FROM experiments WHERE kind = 'pool' AND (:study IS NULL OR "
                                     "study_id = :study)", {"study": study_id})]


NEVER_RAN = "assisted path never ran"  # in Speed.memory_note when every assisted run fell back (ui.verdictzh reads it)


def _memory_note(db, bench_id: int) -> str:
    """Why benchmark `bench_id` measured no extra memory of the draft: its assisted path never ran (every assisted
    run fell back, with the cause), or it stored no timed run of a path."""
    from ..generation.fallbacks import experiment_cause

    runs = dict(db.execute("SELECT path, COUNT(*) FROM timing_runs WHERE experiment_id = ? GROUP BY path",
                           [bench_id]).fetchall())
    if not runs.get(GenerationPath.ASSISTED) and runs.get(GenerationPath.FALLBACK):
        cause = experiment_cause(db, [bench_id], make=note)
        return note("memory never ran", bench=bench_id, runs=runs[GenerationPath.FALLBACK],
                    cause=note("memory cause", cause=cause) if cause else note("memory no cause"))
    return note("memory no readings", bench=bench_id)


def _memory_notes(db, bench_ids: list[int]) -> str:
    """_memory_note of each benchmark, one after the other ('; ')."""
    from ..generation.speed import joined

    return joined([_memory_note(db, b) for b in bench_ids], note, "memory whys")


def _pool_fallbacks(db, study_id: int | None, before: str | None) -> int:
    """The pool's fallbacks: never paired (so not in the pool's timed rows), but the speed-up taken from the pool
    rests only on the samples whose assisted run did not fail, and the note must say how many did."""
    return db.execute(
        """SELECT COUNT(*) FROM generations g JOIN experiments e ON e.id = g.experiment_id
           WHERE e.kind = 'pool' AND g.path = 'fallback' AND (:study IS NULL OR e.study_id = :study)
             AND (:before IS NULL OR COALESCE((SELECT MIN(p.stored_at) FROM pairs p WHERE p.experiment_id = e.id),
                                              g.created_at) <= :before)""",
        {"study": study_id, "before": before}).fetchone()[0]


def _largest_extra_memory(db, bench_ids: list[int]) -> tuple[float | None, str | None, int | None]:
    """The largest extra memory any benchmark of the study's pair measured, what it measured, and which benchmark
    measured it: the memory condition must not pass because a later benchmark happened to measure less (speed audit,
    2026-12-06)."""
    measured = [(mb, basis, b) for b in bench_ids for mb, basis in [_extra_memory(db, b)] if mb is not None]
    if not measured:
        return None, None, None
    mb, basis, b = max(measured, key=lambda m: m[0])
    return mb, (basis if len(bench_ids) == 1 else f"{basis}; {_largest_of(len(bench_ids), b)}"), b


def _extra_memory(db, bench_id) -> tuple[float | None, str | None]:
    """Memory the draft adds, assisted minus ordinary, each path in its own processes (benchmark), and what was
    measured. Where a process put weights on a CUDA device: the CUDA memory allocated after load, over the devices
    used. Otherwise the process's peak RSS over its timed runs (median per path): RSS right after load leaves out
    weights that Transformers maps lazily from their files until a call reads them (a 219 MB draft added 4 MB after
    load, 237 MB after one call), and a GPU machine running the models on its CPU reports 0 MB allocated on CUDA,
    which is no measurement of the draft."""
    if bench_id is None:
        return None, None
    procs = list(db.query("SELECT * FROM bench_processes WHERE experiment_id = ? AND status = 'ok'", [bench_id]))

    def on_cuda(p):
        cuda = json.loads(p["cuda_after_load"] or "{}")
        return sum(d.get("allocated_mb") or 0 for d in cuda.values())

    if any(on_cuda(p) > 0 for p in procs):
        o = median([on_cuda(p) for p in procs if p["path"] == GenerationPath.ORDINARY])
        a = median([on_cuda(p) for p in procs if p["path"] == GenerationPath.ASSISTED])
        basis = "CUDA memory allocated after load"
    else:
        peaks = {path: [r["peak_rss_mb"] for r in db.query(
            """SELECT g.peak_rss_mb FROM timing_runs t JOIN generations g ON g.id = t.generation_id
               WHERE t.experiment_id = ? AND t.path = ? AND g.peak_rss_mb IS NOT NULL""", [bench_id, path])]
            for path in (GenerationPath.ORDINARY, GenerationPath.ASSISTED)}
        o, a = median(peaks[GenerationPath.ORDINARY]), median(peaks[GenerationPath.ASSISTED])
        basis = "peak process RSS during the timed runs"
    return ((a - o), basis) if (o is not None and a is not None) else (None, None)


BATCH_COLUMNS = ["path", "batch_size", "calls", "requests", "seconds_per_request", "tokens_per_second_per_request",
                 "total_tokens_per_second", "total_ci_low", "total_ci_high", "vs_assisted", "vs_assisted_ci_low",
                 "vs_assisted_ci_high", "winner", "identical_to_unbatched", "peak_rss_mb", "peak_cuda_allocated_mb"]


def batch_bench(db, study_id: int | None = None, speed_device: str = "any") -> tuple[int | None, list[str]]:
    """The benchmark the batch comparison comes from, and a note for each later one left out: the latest with batch
    runs that measures what the study rates (data.bench_mismatch against its first pool, data.study_pool, as for the
    speed-up: a benchmark of another draft length or sampling setting answers for another pair) on the study's
    deployment device (the gate's speed_device, as for the speed-up: a GPU's batch figure beside a CPU speed-up
    answers for other hardware); without a study or a pool, the latest."""
    pool = study_pool(db, study_id)
    device = deployment_device(db, pool, speed_device)
    notes = []
    for bench in db.query("SELECT * FROM experiments WHERE id IN (SELECT DISTINCT experiment_id FROM batch_runs) "
                          "ORDER BY id DESC"):
        why = bench_mismatch(db, bench, pool) if pool is not None else None
        if why is None and (elsewhere := other_device(device_kinds(db, bench), device, speed_device, note)):
            notes.append(note("batch other device", bench=bench["id"], elsewhere=elsewhere, run=run_on(device, note)))
            continue
        if why is None:
            return bench["id"], notes
        notes.append(note("batch mismatch", bench=bench["id"], why=why))
    return None, notes


def batches(db, study_id: int | None = None, speed_device: str = "any"):
    """The batch table (one row per path and batch size) from the benchmark batch_bench chooses, its comparison, that
    benchmark's id and the notes on those left out; an empty table and None when no benchmark measured a batch size
    (of the study's pair, on its deployment device: the gate's speed_device)."""
    import pandas as pd

    exp_id, notes = batch_bench(db, study_id, speed_device)
    if exp_id is None:
        return pd.DataFrame(columns=BATCH_COLUMNS), None, None, notes
    config = json.loads(db.execute("SELECT config_json FROM experiments WHERE id = ?", [exp_id]).fetchone()[0])
    timing_rows = list(db.query(
        """SELECT t.id, t.path, t.prompt_id, t.round, t.rep, t.new_tokens, t.seconds, t.device, g.token_hash,
                  g.peak_rss_mb, g.cuda_memory
           FROM timing_runs t JOIN generations g ON g.id = t.generation_id WHERE t.experiment_id = ?""", [exp_id]))
    batch_rows = list(db.query(
        """SELECT b.path, b.batch_size, b.process_id, b.batch_call, b.slot, b.prompt_id, b.round, b.rep, b.new_tokens,
                  b.seconds, b.device, g.token_hash, g.peak_rss_mb, g.cuda_memory
           FROM batch_runs b JOIN generations g ON g.id = b.generation_id WHERE b.experiment_id = ? AND b.status = 'ok'""",
        [exp_id]))
    greedy = config.get("decoding", {}).get("mode") == "greedy"
    not_run = {r["batch_size"]: r["error"] for r in db.query(
        "SELECT batch_size, error FROM batch_runs WHERE experiment_id = ? AND status = 'failed'", [exp_id])}
    comparison = compare_batches(batch_requests(timing_rows, batch_rows, compare_outputs=greedy), not_run=not_run,
                                 make=note)
    return batch_table(comparison), comparison, exp_id, notes


def bench_devices(db, exp_id: int) -> list[str]:
    """The devices a benchmark's timed and batched runs were taken on: a figure measured on a GPU must not read as if
    a laptop had measured it."""
    return sorted({row[0] for row in db.execute(
        "SELECT device FROM batch_runs WHERE experiment_id = ? UNION SELECT device FROM timing_runs WHERE experiment_id = ?",
        [exp_id, exp_id]) if row[0]})

def batch_table(comparison: BatchComparison):
    import pandas as pd

    rows = []
    for r in comparison.rows:
        total, vs = r.total_ci95 or (None, None), r.vs_assisted_ci95 or (None, None)
        rows.append({"path": r.path, "batch_size": r.batch_size, "calls": r.calls, "requests": r.requests,
                     "seconds_per_request": r.seconds_per_request,
                     "tokens_per_second_per_request": r.tokens_per_second_per_request,
                     "total_tokens_per_second": r.total_tokens_per_second, "total_ci_low": total[0],
                     "total_ci_high": total[1], "vs_assisted": r.vs_assisted, "vs_assisted_ci_low": vs[0],
                     "vs_assisted_ci_high": vs[1], "winner": r.winner, "identical_to_unbatched": r.identical_to_unbatched,
                     "peak_rss_mb": r.peak_rss_mb, "peak_cuda_allocated_mb": r.peak_cuda_allocated_mb})
    return pd.DataFrame(rows, columns=BATCH_COLUMNS)
