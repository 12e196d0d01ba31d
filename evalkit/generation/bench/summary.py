"""The benchmark summary, from stored rows only: nothing in it is estimated without a measurement. The speed-up,
identical share and acceptance come from evalkit.generation.speed, the one computation the aggregate uses too."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from ..compat import TokenSpace
from ...config import from_dict
from ...errors import EvalkitError
from ...records import GenerationPath
from .. import registry
from ..speed import (BatchComparison, BatchRow, PromptSpeed, SpeedFigure, batch_requests,
                     compare_batches, deployed_speedup, drafting, measure_speed)
from ...stats import alpha_from_tokens_per_pass, iqr, median, theoretical_speedup
from ...stats.speedup import ratio_text


@dataclass
class PathTiming:
    """One path's timed runs in a benchmark."""

    runs: int
    median_seconds: float | None
    iqr_seconds: tuple[float, float] | None
    median_tokens_per_second: float | None
    median_new_tokens: float | None
    peak_rss_mb: float | None
    peak_cuda_mb: dict[str, dict[str, float]]  # per CUDA device: peak allocated / reserved MB ({} without CUDA)


@dataclass
class Versus:
    """One path against ordinary, on its own (evalkit.generation.speed): its runs are never pooled with another
    path's. Every path the registry marks `versus_ordinary` that ran gets one (assisted's is also the summary's
    top-level figure)."""

    path: str
    speedup: float | None
    speedup_ci95: tuple[float, float] | None
    matched_pairs: int
    comparable_pairs: int
    identical_outputs: float | None
    acceptance_rate: float | None
    throughput_ratio: float | None  # its tokens/s over ordinary's, over all matched pairs (no selection)
    throughput_ci95: tuple[float, float] | None
    speedup_by_prompt: dict[str, PromptSpeed] = field(default_factory=dict)

    @classmethod
    def of(cls, path: str, fig: SpeedFigure) -> "Versus":
        return cls(path=path, speedup=fig.speedup, speedup_ci95=fig.ci95, matched_pairs=fig.matched_pairs,
                   comparable_pairs=fig.comparable_pairs, identical_outputs=fig.identical_outputs,
                   acceptance_rate=fig.acceptance_rate, throughput_ratio=fig.throughput_ratio,
                   throughput_ci95=fig.throughput_ci95, speedup_by_prompt=fig.by_prompt)

    @classmethod
    def from_json(cls, d: dict) -> "Versus":
        return cls(**{**d, "speedup_ci95": tuple(d["speedup_ci95"]) if d["speedup_ci95"] else None,
                      "throughput_ci95": tuple(d["throughput_ci95"]) if d["throughput_ci95"] else None,
                      "speedup_by_prompt": {k: PromptSpeed(**v) for k, v in d["speedup_by_prompt"].items()}})


@dataclass
class BenchSummary:
    """What `evalkit bench` reports. `to_json` is the "summary" of `evalkit bench --json`."""

    experiment_id: int
    decoding: str
    dtype: str
    route: str | None  # the compatibility verdict: same_tokenizer, different_tokenizer, not_approved
    token_space: str | None  # "shared", or "target": acceptance counted in the target's tokens
    paths: dict[str, PathTiming]
    matched_pairs: int
    comparable_pairs: int
    fallback_runs: int
    speedup: float | None
    speedup_ci95: tuple[float, float] | None
    notes: list[str]
    device_kinds: list[str]
    speedup_by_prompt: dict[str, PromptSpeed]
    identical_outputs: float | None
    acceptance_rate: float | None
    draft_tokens: int | None  # the draft's own count, in its own vocabulary
    candidate_generators: list[str]
    tokens_per_target_pass: float | None
    mean_draft_length: float | None
    counts_agree: bool | None
    cost_ratio: float | None  # draft / target seconds per token, each measured alone
    alpha: float | None  # Leviathan et al.'s per-token acceptance, solved from tokens per target pass
    theoretical_speedup: float | None
    processes: list[dict] = field(default_factory=list)
    # ordinary at each batch size against assisted at batch 1 (`--batch-sizes`); None when no batch size was asked
    batches: BatchComparison | None = None
    # every path compared with ordinary that ran (assisted, prompt lookup, ...), each on its own
    versus_ordinary: dict[str, Versus] = field(default_factory=dict)
    # the device kinds its target's and draft's weights sat on, one per rank ("cpu+cuda": split by a device_map or a
    # draft elsewhere): device_kinds names the main device only, and a study weighs a benchmark placed as its pool
    placements: list[str] = field(default_factory=list)
    # where assisted runs fell back: the speed-up as deployed (speed.deployed_speedup, each fallback counted at its
    # whole wait on the assisted side), which the speed-up above, over assisted's own runs, overstates; None without
    deployed_speedup: float | None = None
    deployed_ci95: tuple[float, float] | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "BenchSummary":
        """A summary read back from `evalkit bench --json`."""
        d = dict(data)
        d["paths"] = {k: PathTiming(**{**v, "iqr_seconds": tuple(v["iqr_seconds"]) if v["iqr_seconds"] else None})
                      for k, v in d["paths"].items()}
        d["speedup_by_prompt"] = {k: PromptSpeed(**v) for k, v in d["speedup_by_prompt"].items()}
        d["speedup_ci95"] = tuple(d["speedup_ci95"]) if d["speedup_ci95"] else None
        d["deployed_ci95"] = tuple(d["deployed_ci95"]) if d.get("deployed_ci95") else None
        if d.get("batches"):
            d["batches"] = batch_comparison_from_json(d["batches"])
        d["versus_ordinary"] = {k: Versus.from_json(v) for k, v in d.get("versus_ordinary", {}).items()}
        return cls(**d)


def batch_comparison_from_json(data: dict) -> BatchComparison:
    """A BatchComparison read back from JSON (its intervals as tuples again)."""
    rows = [BatchRow(**{**r, **{k: tuple(r[k]) if r[k] else None for k in ("total_ci95", "vs_assisted_ci95")}})
            for r in data["rows"]]
    return BatchComparison(**{**data, "rows": rows, "not_run": {int(k): v for k, v in data.get("not_run", {}).items()}})


def batch_comparison(db, experiment_id: int, timing_rows: list[dict], greedy: bool) -> BatchComparison | None:
    """The benchmark's batch comparison from its stored rows; None when it measured no batch size above 1."""
    batch_rows = list(db.query(
        """SELECT b.path, b.batch_size, b.process_id, b.batch_call, b.slot, b.prompt_id, b.round, b.rep, b.new_tokens,
                  b.seconds, b.device, g.token_hash, g.peak_rss_mb, g.cuda_memory
           FROM batch_runs b JOIN generations g ON g.id = b.generation_id
           WHERE b.experiment_id = ? AND b.status = 'ok' ORDER BY b.id""", [experiment_id]))
    not_run = {r["batch_size"]: r["error"] for r in db.query(
        "SELECT batch_size, error FROM batch_runs WHERE experiment_id = ? AND status = 'failed'", [experiment_id])}
    if not batch_rows and not not_run:
        return None
    return compare_batches(batch_requests(timing_rows, batch_rows, compare_outputs=greedy), not_run=not_run)


def _peak_cuda(rows: list[dict]) -> dict:
    """Per CUDA device, the highest peak allocated / reserved MB over these runs ({} without CUDA)."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        for device, m in json.loads(r.get("cuda_memory") or "{}").items():
            d = out.setdefault(device, {"peak_allocated_mb": 0.0, "peak_reserved_mb": 0.0})
            d["peak_allocated_mb"] = max(d["peak_allocated_mb"], m.get("peak_allocated_mb") or 0.0)
            d["peak_reserved_mb"] = max(d["peak_reserved_mb"], m.get("peak_reserved_mb") or 0.0)
    return out


def _path_timing(rs: list[dict]) -> PathTiming:
    secs = [r["seconds"] for r in rs]
    return PathTiming(
        runs=len(rs), median_seconds=median(secs), iqr_seconds=iqr(secs),
        median_tokens_per_second=median([r["tokens_per_second"] for r in rs]),
        median_new_tokens=median([r["new_tokens"] for r in rs]),
        peak_rss_mb=max((r["peak_rss_mb"] for r in rs if r["peak_rss_mb"] is not None), default=None),
        peak_cuda_mb=_peak_cuda(rs))


def _notes(fig, by_path: dict, tolerance: float, fallbacks: int, cause: str = "") -> list[str]:
    notes = []
    if fig.pooled_device_kinds:
        notes.append(
            f"runs come from different device kinds ({', '.join(fig.device_kinds)}): timings are not pooled and no "
            "speed-up is reported; benchmark each device kind separately")
    if fig.comparable_pairs:
        if fig.comparable_pairs < fig.matched_pairs:
            notes.append(
                f"{fig.matched_pairs - fig.comparable_pairs} of {fig.matched_pairs} pairs were not comparable "
                f"(different stop reason or length beyond {tolerance:.0%}) and are left out of the speed-up")
    elif GenerationPath.ASSISTED not in by_path and fallbacks:  # it ran, and failed every time: no missing path
        notes.append(f"every assisted run ({fallbacks}) failed and fell back to the target alone: no speed-up over "
                     "assisted's own runs is reported; fix the cause (`evalkit check`) and benchmark again"
                     + (f"; {cause}" if cause else ""))
    elif GenerationPath.ASSISTED not in by_path:
        notes.append("the assisted path did not run in this experiment: no assisted speed-up is reported")
    elif not fig.pooled_device_kinds:
        notes.append("no comparable ordinary/assisted pairs: no assisted speed-up is reported")
    if fig.selection_gap:
        notes.append("the speed-up over comparable pairs and the tokens/s ratio over every matched pair disagree beyond "
                     "their intervals: the comparable pairs tell another story than all of them (e.g. shorter assisted "
                     "outputs); the verdict needs both to reach its minimum")
    if fallbacks:
        notes.append(f"{fallbacks} assisted run(s) failed and fell back; they are not counted as assisted, so the "
                     "speed-up over assisted's own runs overstates what the configuration delivers: the speed-up as "
                     "deployed counts them"
                     + (f"; {cause}" if cause else ""))
    notes += [f"speed figure: {n}" for n in getattr(fig, "notes", [])]  # prompts whose ratio cannot be formed
    return notes


def summarize(db, experiment_id: int) -> BenchSummary:
    """The benchmark summary from stored raw runs only: nothing here is estimated without a measurement."""
    from ..fallbacks import experiment_cause

    from ...aggregate.data import device_kinds

    exp = next(db.query("SELECT * FROM experiments WHERE id = ?", [experiment_id]), None)
    if exp is None:
        raise EvalkitError(f"experiment {experiment_id} does not exist", "run `evalkit bench` first")
    cfg = from_dict(json.loads(exp["config_json"]))
    rows = list(
        db.query(
            """SELECT t.*, g.token_hash, g.draft_proposed, g.draft_accepted, g.draft_rounds, g.target_passes,
                      g.counts_agree, g.peak_rss_mb, g.cuda_memory, g.draft_tokens, g.candidate_generator
               FROM timing_runs t JOIN generations g ON g.id = t.generation_id
               WHERE t.experiment_id = ? ORDER BY t.id""",
            [experiment_id],
        )
    )
    procs = list(db.query("SELECT * FROM bench_processes WHERE experiment_id = ? ORDER BY id", [experiment_id]))
    by_path: dict[str, list[dict]] = {}
    for r in rows:
        by_path.setdefault(r["path"], []).append(r)
    fallbacks = len(by_path.get(GenerationPath.FALLBACK, []))
    tol = cfg.bench.length_tolerance
    fig = measure_speed(rows, tol, cfg.bench.bootstrap, processes=True)
    versus = {path: Versus.of(path, fig if path == GenerationPath.ASSISTED else
                              measure_speed(rows, tol, cfg.bench.bootstrap, path, processes=True))
              for path in registry.versus_ordinary() if path in by_path}
    compat = json.loads(exp["compat_json"] or "{}")
    ass = by_path.get(GenerationPath.ASSISTED, [])
    tokens_per_pass, mean_draft_length = drafting(ass)
    t_spt = median([p["target_seconds_per_token"] for p in procs])
    d_spt = median([p["draft_seconds_per_token"] for p in procs])
    cost_ratio = d_spt / t_spt if (t_spt and d_spt) else None
    # Leviathan et al.'s alpha is a per-token acceptance probability; it is estimated from the measured tokens
    # per target pass (the kept share undercounts it: drafts after a rejection are discarded unchecked).
    alpha = alpha_from_tokens_per_pass(tokens_per_pass, mean_draft_length)
    deployed, deployed_ci = deployed_speedup(rows, tol) if fallbacks else (None, None)
    return BenchSummary(
        experiment_id=experiment_id,
        decoding=cfg.decoding.mode,
        dtype=cfg.models.dtype,
        route=compat.get("verdict"),
        token_space=compat.get("token_space"),
        paths={path: _path_timing(by_path[path]) for path in registry.order(by_path)},
        matched_pairs=fig.matched_pairs,
        comparable_pairs=fig.comparable_pairs,
        fallback_runs=fallbacks,
        speedup=fig.speedup,
        speedup_ci95=fig.ci95,
        notes=_notes(fig, by_path, tol, fallbacks, experiment_cause(db, [experiment_id]) if fallbacks else ""),
        device_kinds=fig.device_kinds,
        speedup_by_prompt=fig.by_prompt,
        identical_outputs=fig.identical_outputs,
        acceptance_rate=fig.acceptance_rate,
        draft_tokens=sum(r["draft_tokens"] or 0 for r in ass) if ass else None,
        candidate_generators=sorted({r["candidate_generator"] for r in ass if r["candidate_generator"]}),
        tokens_per_target_pass=tokens_per_pass,
        mean_draft_length=mean_draft_length,
        counts_agree=all(bool(r["counts_agree"]) for r in ass) if ass else None,
        cost_ratio=cost_ratio,
        alpha=alpha,
        theoretical_speedup=theoretical_speedup(alpha, mean_draft_length, cost_ratio)
        if alpha is not None and mean_draft_length and cost_ratio else None,
        processes=[
            {k: p[k] for k in ("path", "round", "order", "rank", "device", "load_seconds", "rss_after_load_mb",
                               "draft_extra_rss_mb", "first_call_seconds", "warmup_count", "status")}
            | {k: json.loads(p[k] or "{}") for k in ("target_placement", "draft_placement")}
            for p in procs
        ],
        batches=batch_comparison(db, experiment_id, rows, cfg.decoding.mode == "greedy"),
        versus_ordinary=versus,
        placements=sorted(device_kinds(db, exp)),
        deployed_speedup=deployed,
        deployed_ci95=deployed_ci,
    )


def bench_json(db, summary: BenchSummary) -> dict:
    """`evalkit bench --json`: the summary, every timed run and every request of a batched call."""
    runs = list(
        db.query(
            "SELECT path, prompt_id, round, rep, seed, new_tokens, stop_reason, seconds, decode_seconds, "
            "tokens_per_second, generation_id FROM timing_runs WHERE experiment_id = ? ORDER BY id",
            [summary.experiment_id],
        )
    )
    batch_runs = list(db.query(
        "SELECT path, batch_size, process_id, batch_call, slot, prompt_id, round, rep, seed, new_tokens, stop_reason, "
        "seconds, left_padding, generation_id FROM batch_runs WHERE experiment_id = ? ORDER BY id", [summary.experiment_id]))
    return {"summary": summary.to_json(), "runs": runs, "batch_runs": batch_runs}


def format_summary(s: BenchSummary) -> str:
    def f(x, spec=".3f"):
        return "n/a" if x is None else format(x, spec)

    lines = [f"experiment {s.experiment_id}  decoding={s.decoding}  dtype={s.dtype}  route={s.route}"]
    lines.append(f"{'path':<14}{'runs':>6}{'median s':>11}{'IQR s':>20}{'tok/s':>9}{'tokens':>8}")
    for path, p in s.paths.items():
        q = p.iqr_seconds
        lines.append(
            f"{path:<14}{p.runs:>6}{f(p.median_seconds):>11}"
            f"{(f(q[0]) + ' - ' + f(q[1])) if q else 'n/a':>20}{f(p.median_tokens_per_second, '.1f'):>9}"
            f"{f(p.median_new_tokens, '.0f'):>8}"
        )
    ci = s.speedup_ci95
    if s.speedup is not None:
        lines.append(
            "per prompt (median ordinary s / median assisted s over its comparable pairs): "
            + ", ".join(f"{p} {ratio_text(v.speedup)}{'x' if v.speedup is not None else ''} "
                        f"({v.comparable_pairs}/{v.matched_pairs})"
                        for p, v in s.speedup_by_prompt.items())
        )
        lines.append(
            f"speed-up (median over prompts): {ratio_text(s.speedup)}x"
            f"  95% CI {ratio_text(ci and ci[0])} - {ratio_text(ci and ci[1])}"
            f"  over {s.comparable_pairs} of {s.matched_pairs} comparable pairs"
        )
    else:
        lines.append("speed-up: not reported (see notes)")
    if s.deployed_speedup is not None:  # what a user of the configuration waits, fallbacks included
        d = s.deployed_ci95
        lines.append(f"speed-up as deployed (its {s.fallback_runs} fallback(s) counted at their whole wait on the "
                     f"assisted side): {ratio_text(s.deployed_speedup)}x  95% CI {ratio_text(d and d[0])} - "
                     f"{ratio_text(d and d[1])}")
    mine = s.versus_ordinary.get(GenerationPath.ASSISTED)
    if mine is not None and mine.throughput_ratio is not None:
        t = mine.throughput_ci95
        lines.append(f"tokens/s ratio, assisted over ordinary, over all {mine.matched_pairs} matched pairs (no selection): "
                     f"{ratio_text(mine.throughput_ratio)}x  95% CI {ratio_text(t and t[0])} - "
                     f"{ratio_text(t and t[1])}")
    lines.append(
        f"identical outputs: {f(s.identical_outputs, '.0%') if s.identical_outputs is not None else 'n/a'}"
        f"   acceptance (drafted tokens kept): {f(s.acceptance_rate, '.2f')}   tokens/target pass: {f(s.tokens_per_target_pass, '.2f')}"
        f"   counts agree: {s.counts_agree}"
    )
    for v in s.versus_ordinary.values():
        if v.path != GenerationPath.ASSISTED:  # assisted's is the figure above; every other path on its own line
            lines.append(format_versus(v))
    if s.token_space == TokenSpace.TARGET:
        lines.append(
            f"token spaces differ ({', '.join(s.candidate_generators) or 'Universal Assisted Generation'}): "
            f"proposed/accepted are counted in the target's tokens; the draft itself wrote "
            f"{s.draft_tokens} tokens in its own vocabulary"
        )
    for path, p in s.paths.items():
        for device, m in p.peak_cuda_mb.items():
            lines.append(f"  {path} peak on {device}: {m['peak_allocated_mb']:.0f} MB allocated, {m['peak_reserved_mb']:.0f} MB reserved")
    lines.append(
        f"theory (Leviathan et al.): alpha {f(s.alpha, '.2f')} (from tokens/pass), draft length "
        f"{f(s.mean_draft_length, '.1f')}, cost ratio c {f(s.cost_ratio, '.3f')}"
        f" -> predicted speed-up {ratio_text(s.theoretical_speedup)}{'x' if s.theoretical_speedup is not None else ''}"
        + (f" vs measured {ratio_text(s.speedup)}x" if s.speedup is not None else "")
    )
    for p in s.processes:
        lines.append(
            f"  process r{p['round']} {p['path']:<9} load {f(p['load_seconds'], '.2f')} s, RSS after load "
            f"{f(p['rss_after_load_mb'], '.0f')} MB, first call {f(p['first_call_seconds'], '.3f')} s, warm-ups {p['warmup_count']}"
        )
        for role in ("target", "draft"):
            where = p.get(f"{role}_placement") or {}
            if len(where) > 1:  # only worth a line when a device_map spread the model
                lines.append(f"    {role} weights: " + ", ".join(f"{d} {mb:.1f} MB" for d, mb in where.items()))
    if any("+" in p for p in s.placements):  # the main device alone would read as a pair wholly on it
        lines.append(f"placement: {', '.join(s.placements)} (the target's or the draft's weights over several device "
                     "kinds: a study's speed condition weighs this benchmark only where its pool was placed so)")
    if s.batches is not None:
        lines += format_batches(s.batches)
    for n in s.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)


def format_versus(v: Versus) -> str:
    """One other path against ordinary, on its own line (never pooled with assisted's figures)."""
    def f(x, spec=".2f"):
        return "n/a" if x is None else format(x, spec)

    ci = v.speedup_ci95
    speed = (f"speed-up {ratio_text(v.speedup)}x  95% CI {ratio_text(ci and ci[0])} - {ratio_text(ci and ci[1])}  over "
             f"{v.comparable_pairs} of {v.matched_pairs} comparable pairs" if v.speedup is not None
             else f"speed-up not reported ({v.comparable_pairs} of {v.matched_pairs} pairs comparable)")
    return (f"{v.path} vs ordinary ({registry.label(v.path)}): {speed}; identical outputs "
            f"{f(v.identical_outputs, '.0%')}; acceptance (drafted tokens kept) {f(v.acceptance_rate)}; tokens/s ratio "
            f"over all matched pairs {f(v.throughput_ratio)}")


def format_batches(b: BatchComparison) -> list[str]:
    """The batch table: per path and batch size, what each request waits and what the server delivers."""
    def f(x, spec=".2f"):
        return "n/a" if x is None else format(x, spec)

    def ci(c):
        return f"[{c[0]:.1f}, {c[1]:.1f}]" if c else "n/a"

    lines = ["batches (each request waits for its whole call; total = all new tokens / all seconds of the calls):",
             f"  {'path':<10}{'batch':>6}{'calls':>7}{'s/request':>11}{'tok/s/request':>15}{'total tok/s':>13}"
             f"{'95% CI':>18}{'vs assisted':>13}{'95% CI':>16}{'  winner'}"]
    for r in b.rows:
        vs = r.vs_assisted_ci95
        lines.append(
            f"  {r.path:<10}{r.batch_size:>6}{r.calls:>7}{f(r.seconds_per_request, '.3f'):>11}"
            f"{f(r.tokens_per_second_per_request, '.1f'):>15}{f(r.total_tokens_per_second, '.1f'):>13}{ci(r.total_ci95):>18}"
            f"{(f(r.vs_assisted) + 'x') if r.vs_assisted is not None else '':>13}"
            f"{(f'[{ratio_text(vs[0])}, {ratio_text(vs[1])}]' if vs else ''):>16}  {r.winner or ''}")
    same = [f"{r.batch_size}: {r.identical_to_unbatched:.0%}" for r in b.rows if r.identical_to_unbatched is not None]
    if same:
        lines.append("  batched outputs identical to the same prompt's unbatched ordinary output: " + ", ".join(same))
    lines.append(f"batch answer: {b.answer}")
    return lines
