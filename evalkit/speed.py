"""The speed-up of the assisted path over the ordinary one, computed one way everywhere: the benchmark summary,
the aggregate's timing tables, a rater's reveal and the Live tab's table all use these functions. Beside the
protocol's speed-up over comparable pairs, the ratio of tokens per second over all matched pairs, which selects
nothing, and a flag when the two disagree beyond their intervals.

A run is a mapping with path, prompt_id, round, rep, stop_reason, new_tokens and seconds (a stored timing run, or
a pool generation with its pair standing in for round and repetition); token_hash, draft_proposed,
draft_accepted and device are read when present. Fallback runs never pair: they are not assisted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .records import GenerationPath


def device_kind(device: str) -> str:
    """"cuda:1" -> "cuda": timings from different kinds of device never pool."""
    return (device or "").split(":")[0]


def comparable(o: dict, a: dict, tolerance: float) -> bool:
    """Two outputs are comparable when they stopped for the same reason at about the same length."""
    return o["stop_reason"] == a["stop_reason"] and abs(o["new_tokens"] - a["new_tokens"]) <= tolerance * max(
        o["new_tokens"], a["new_tokens"], 1
    )


def pair_runs(rows: list[dict], tolerance: float) -> tuple[list[tuple[dict, dict]], list[tuple[dict, dict]]]:
    """Pair ordinary and assisted runs of the same prompt, round and repetition (same seed).
    Fallback runs never pair: they are not assisted. Returns (matched, comparable)."""
    ords = {(r["prompt_id"], r["round"], r["rep"]): r for r in rows if r["path"] == GenerationPath.ORDINARY}
    asss = {(r["prompt_id"], r["round"], r["rep"]): r for r in rows if r["path"] == GenerationPath.ASSISTED}
    matched = [(ords[k], asss[k]) for k in sorted(ords) if k in asss]
    return matched, [(o, a) for o, a in matched if comparable(o, a, tolerance)]


def seconds_by_prompt(pairs: list[tuple[dict, dict]]) -> dict[str, tuple[list[float], list[float]]]:
    """prompt -> (ordinary seconds, assisted seconds) of its pairs, in pair order: the input of
    `stats.speedup_over_prompts`."""
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for o, a in pairs:
        g = groups.setdefault(o["prompt_id"], ([], []))
        g[0].append(o["seconds"])
        g[1].append(a["seconds"])
    return groups


def tokens_per_second_by_prompt(pairs: list[tuple[dict, dict]]) -> dict[str, tuple[list[float], list[float]]]:
    """prompt -> (assisted tokens per second, ordinary tokens per second) of its pairs, in pair order (a pair whose
    time is missing or zero left out): the input of `stats.speedup_over_prompts` for the throughput ratio, whose
    median(first) / median(second) is then assisted over ordinary."""
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for o, a in pairs:
        if not o["seconds"] or not a["seconds"]:
            continue
        g = groups.setdefault(o["prompt_id"], ([], []))
        g[0].append(a["new_tokens"] / a["seconds"])
        g[1].append(o["new_tokens"] / o["seconds"])
    return groups


def intervals_apart(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool | None:
    """Whether two intervals do not overlap (None when either is missing): a gap between two estimates larger than
    their intervals allow."""
    if a is None or b is None:
        return None
    return a[1] < b[0] or b[1] < a[0]


@dataclass
class PromptSpeed:
    """One prompt's point estimate: median ordinary seconds / median assisted seconds over its comparable pairs."""

    comparable_pairs: int
    matched_pairs: int
    speedup: float | None


@dataclass
class SpeedFigure:
    """The speed-up over paired runs and what is reported beside it."""

    speedup: float | None  # median over prompts of each prompt's median(ordinary s) / median(assisted s)
    ci95: tuple[float, float] | None  # bootstrap, pairs resampled within each prompt
    matched_pairs: int  # ordinary and assisted runs of one prompt, round and repetition
    comparable_pairs: int  # of those, the ones the speed-up rests on (0 when device kinds differ)
    identical_outputs: float | None  # share of matched pairs with token-identical outputs
    acceptance_rate: float | None  # drafted tokens kept (accepted / proposed) over every assisted run
    device_kinds: list[str] = field(default_factory=list)  # "cpu", "cuda", ...: more than one means no speed-up
    by_prompt: dict[str, PromptSpeed] = field(default_factory=dict)  # point estimates (when any pair is comparable)
    # Beside it, without selection: assisted over ordinary tokens per second over ALL matched pairs (no choice on
    # the assisted output's length or stop reason), the median over prompts of each prompt's ratio of medians, with
    # the same bootstrap; and whether the two intervals are apart (the comparable pairs then tell another story).
    throughput_ratio: float | None = None
    throughput_ci95: tuple[float, float] | None = None
    throughput_pairs: int = 0  # matched pairs it rests on
    selection_gap: bool | None = None

    @property
    def pooled_device_kinds(self) -> bool:
        return len(self.device_kinds) > 1


def measure_speed(rows: list[dict], tolerance: float, resamples: int) -> SpeedFigure:
    """The speed figure of these runs: pairs matched by prompt, round and repetition; comparable ones only; no
    speed-up at all when the runs come from different device kinds."""
    from .stats import median, speedup_over_prompts

    matched, comp = pair_runs(rows, tolerance)
    kinds = sorted({device_kind(r["device"]) for r in rows if r.get("device")})
    if len(kinds) > 1:
        comp = []
    groups = seconds_by_prompt(comp)
    point, ci = speedup_over_prompts(groups, resamples) if comp else (None, None)
    by_prompt = {}
    if comp:
        for prompt_id in sorted({o["prompt_id"] for o, _ in matched}):
            o_secs, a_secs = groups.get(prompt_id, ([], []))
            by_prompt[prompt_id] = PromptSpeed(
                comparable_pairs=len(o_secs), matched_pairs=sum(1 for o, _ in matched if o["prompt_id"] == prompt_id),
                speedup=median(o_secs) / median(a_secs) if o_secs else None)
    throughput = tokens_per_second_by_prompt(matched if len(kinds) <= 1 else [])
    t_point, t_ci = speedup_over_prompts(throughput, resamples) if throughput else (None, None)
    assisted = [r for r in rows if r["path"] == GenerationPath.ASSISTED]
    proposed = sum(r.get("draft_proposed") or 0 for r in assisted)
    return SpeedFigure(
        speedup=point, ci95=ci, matched_pairs=len(matched), comparable_pairs=len(comp),
        identical_outputs=(sum(o["token_hash"] == a["token_hash"] for o, a in matched) / len(matched)) if matched else None,
        acceptance_rate=(sum(r.get("draft_accepted") or 0 for r in assisted) / proposed) if proposed else None,
        device_kinds=kinds, by_prompt=by_prompt, throughput_ratio=t_point, throughput_ci95=t_ci,
        throughput_pairs=sum(len(g[0]) for g in throughput.values()), selection_gap=intervals_apart(ci, t_ci))
