"""The speed-up of a path over the ordinary one (assisted's, and each other path `versus_ordinary` in the registry
on its own: prompt lookup's is never pooled with assisted's), the identical share and the acceptance, computed one
way everywhere: the benchmark summary, the aggregate's timing tables, the tuning sweep, the study plan's pilot, a
rater's reveal and the Live tab's table all use these functions. Beside the protocol's speed-up over comparable
pairs, the ratio of tokens per second over all matched pairs, which selects nothing, and a flag when the two
disagree beyond their intervals.

A run is a mapping with path, prompt_id, round, rep, stop_reason, new_tokens and seconds (a stored timing run, or
a pool generation with its pair standing in for round and repetition); token_hash, draft_proposed,
draft_accepted and device are read when present. Fallback runs never pair: they are not assisted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import GenerationPath


# Per pair (`p`: the pairs table's alias with its dot): 1 when its two outputs are the same tokens (their token
# hashes agree, and are not empty: a record without its tokens proves nothing; gold pairs, which have no
# generations, never are). Such a pair is decided without raters: blind
# raters cannot tell its sides apart, so each criterion's difference is exactly 0. rating/queue.py's queue leaves
# it out; aggregate/data.py marks it (RatingData.pair_identical) and the verdict counts it as an exact zero.
IDENTICAL_PAIR = """EXISTS (SELECT 1 FROM generations go JOIN generations ga ON ga.token_hash = go.token_hash
    WHERE go.id = {p}ordinary_generation_id AND ga.id = {p}assisted_generation_id AND go.token_hash != '')"""

# The notes a speed figure carries, each one template with its figures: `make` writes one (plain text by default: the
# benchmark's summary and the CLI print it; aggregate.notes.note in the aggregate, which keeps the key and figures so
# that the Chinese verdict says it with the same figures). A figure that is itself a sentence is written by `make` too.
SPEED_NOTES = {
    "figure speed-up": "speed-up",
    "figure tps": "tokens per second, {path} over ordinary",
    "prompt pairs": "{prompt} ({k} of its {n} pairs)",
    "prompts": "{one}, {rest}",
    "speed-up unformed": ("speed-up: left out, since the ratio of times cannot be formed where a time is 0 or not a "
                          "number: prompt(s) {prompts}"),
    "tps unformed": ("{what}: left out, since the ratio cannot be formed where ordinary's tokens per second is 0 (an "
                     "output with 0 new tokens) or not a number: prompt(s) {prompts}"),
    "one round": ("{what}: no interval, since its pairs come from {rounds} round(s) of worker processes and the "
                  "interval needs at least 2 (one process per path says nothing of how processes differ); run "
                  "`evalkit bench` again"),
    "spread of": "{what} [{low}, {high}]",
    "no spread": ("{figure}: zero-width 95% interval, since the timings carry no spread (every pair of a prompt has "
                  "the same times, as synthetic or rounded timings do), not because the figure is certain; time real "
                  "runs (`evalkit bench`) before weighing it"),
    "no spread both": ("{first} and {second}: zero-width 95% intervals, since the timings carry no spread (every pair "
                       "of a prompt has the same times, as synthetic or rounded timings do), not because the figure is "
                       "certain; time real runs (`evalkit bench`) before weighing it"),
    "single pair": ("{what}: no interval, since prompt(s) {prompts} have a single pair and the interval resamples "
                    "pairs within each prompt (one pair shows none of its spread); build the pool with `evalkit "
                    "generate --samples 2` or more, or run `evalkit bench`"),
    "single pair both": ("{what}: no interval, nor for {also}, since prompt(s) {prompts} have a single pair and the "
                         "interval resamples pairs within each prompt (one pair shows none of its spread); build the "
                         "pool with `evalkit generate --samples 2` or more, or run `evalkit bench`"),
    "pairs unformed": "{what}: {unformed} matched pair(s) without a time or a token count left out",
    "prompts unformed": "{what}: prompt(s) {prompts} left out: no matched pair has both times and token counts",
    # the batch comparison's answer (compare_batches): the answer, then what assisted's figures leave out, then the
    # batch sizes not compared, each a part
    "batch answer": "{main}{fell}{unrun}",
    "batch empty": "",
    "batch parts": "{one}{rest}",
    "batch no assisted": "no comparison with assisted: {why}",
    "batch all fell back": "every assisted run ({runs}) failed and fell back to the target alone",
    "batch assisted absent": "the assisted path did not run in this benchmark",
    "batch kinds": "runs come from different device kinds ({kinds})",
    "batch fell back": ("; assisted's figures leave out its {fell} of {total} run(s) that failed and fell back to the "
                        "target alone (never counted as assisted), so they overstate what the assisted configuration "
                        "delivers"),
    "batch partial": ("; batch size {size} not compared: it failed in some of the benchmark's worker processes ({why}), "
                      "so its runs cover only part of the protocol"),
    "batch not measured": "; batch size {size} not measured: {why}",
    "batch tps": "assisted at batch 1 delivers {tps} new tokens/s",
    "batch ratio": "{ratio}x [{low}, {high}]",
    "batch ratio one call": "{ratio}x (no interval: one call)",
    "batch no ordinary": "no comparison: the ordinary path has no timed run ({tps})",
    "batch ordinary everywhere": ("ordinary's total throughput beats assisted's at every batch size measured ({sizes}): "
                                  "ordinary / assisted total tokens/s {ratio} at {crossover}; {tps}"),
    "batch ordinary from": ("ordinary's total throughput beats assisted's from batch size {crossover} on: ordinary / "
                            "assisted total tokens/s {ratio} at {crossover}; below it assisted at batch 1 {held} "
                            "({below}); {tps}"),
    "batch held wins": "wins",
    "batch held ties": "wins or ties",
    "batch size ratio": "{size}: {ratio}",
    "batch size ratio unclear": "{size} {ratio}",
    "batch assisted everywhere": ("assisted at batch 1 wins at every batch size measured ({sizes}): ordinary / assisted "
                                  "total tokens/s {ratio} at {size}; {tps}"),
    "batch unclear": ("no batch size measured ({sizes}) from which ordinary clearly beats assisted at that size and "
                      "every larger one: at {unclear} the interval includes 1 or a larger size goes the other way; "
                      "{tps}; measure more repetitions or larger batch sizes"),
}


def _text(key: str, /, **figures) -> str:
    return SPEED_NOTES[key].format(**figures)


def joined(items: list, make=_text, key: str = "prompts") -> str:
    """Several parts one sentence names ('a, b, c'), each a part `make` wrote: nested (template `key`, "{one}, {rest}"
    or the like) so that each language joins them its own way."""
    out = items[-1]
    for item in reversed(items[:-1]):
        out = make(key, one=item, rest=out)
    return out


def device_kind(device: str) -> str:
    """"cuda:1" -> "cuda": timings from different kinds of device never pool."""
    return (device or "").split(":")[0]


def comparable(o: dict, a: dict, tolerance: float) -> bool:
    """Two outputs are comparable when they stopped for the same reason at about the same length."""
    return o["stop_reason"] == a["stop_reason"] and abs(o["new_tokens"] - a["new_tokens"]) <= tolerance * max(
        o["new_tokens"], a["new_tokens"], 1
    )


def speedup_of(reference_seconds: float | None, seconds: float | None) -> float | None:
    """How many times faster than the reference: reference seconds / these seconds (None when either is missing)."""
    return reference_seconds / seconds if reference_seconds and seconds else None


def tokens_per_second(new_tokens: int | None, seconds: float | None) -> float | None:
    return new_tokens / seconds if seconds and new_tokens is not None else None


def pair_speedup(o: dict, a: dict, tolerance: float) -> float | None:
    """One ordinary run against one run of another path (a rater's reveal, the Live tab): ordinary seconds / its
    seconds, only when the two outputs are comparable (None otherwise: one pair says nothing then)."""
    return speedup_of(o["seconds"], a["seconds"]) if comparable(o, a, tolerance) else None


def identical(o: dict, a: dict) -> bool:
    """Two outputs with the same tokens (by their token hashes; a missing hash is never identical)."""
    return o.get("token_hash") is not None and o.get("token_hash") == a.get("token_hash")


def identical_share(pairs: list[tuple[dict, dict]]) -> float | None:
    """The share of pairs whose two outputs have the same tokens (None without pairs)."""
    return sum(identical(o, a) for o, a in pairs) / len(pairs) if pairs else None


def acceptance_rate(runs: list[dict]) -> float | None:
    """Drafted tokens kept: accepted / proposed over these runs (None when nothing was proposed)."""
    proposed = sum(r.get("draft_proposed") or 0 for r in runs)
    return sum(r.get("draft_accepted") or 0 for r in runs) / proposed if proposed else None


def drafting(runs: list[dict]) -> tuple[float | None, float | None]:
    """Tokens per target pass and the mean draft length (tokens proposed per round) over these runs: the inputs of
    Leviathan et al.'s prediction (None where nothing was counted)."""
    passes = sum(r.get("target_passes") or 0 for r in runs)
    rounds = sum(r.get("draft_rounds") or 0 for r in runs)
    return (sum(r["new_tokens"] for r in runs) / passes if passes else None,
            sum(r.get("draft_proposed") or 0 for r in runs) / rounds if rounds else None)


def pair_runs(rows: list[dict], tolerance: float, path: str = GenerationPath.ASSISTED
              ) -> tuple[list[tuple[dict, dict]], list[tuple[dict, dict]]]:
    """Pair ordinary runs with `path`'s runs (assisted unless named) of the same prompt, round and repetition (same
    seed). Fallback runs never pair: they are not assisted. Returns (matched, comparable)."""
    ords = {(r["prompt_id"], r["round"], r["rep"]): r for r in rows if r["path"] == GenerationPath.ORDINARY}
    asss = {(r["prompt_id"], r["round"], r["rep"]): r for r in rows if r["path"] == path}
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
    time is missing or zero, or whose token count is missing, left out: measure_speed says so): the input of
    `stats.speedup_over_prompts` for the throughput ratio, whose median(first) / median(second) is then assisted over
    ordinary."""
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for o, a in pairs:
        if not o["seconds"] or not a["seconds"] or o["new_tokens"] is None or a["new_tokens"] is None:
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
    # what the figures above leave out and why, one sentence each, naming the prompts (a prompt whose ratio cannot be
    # formed: an output with 0 new tokens, a time of 0 or missing); empty when nothing is left out
    notes: list[str] = field(default_factory=list)

    @property
    def pooled_device_kinds(self) -> bool:
        return len(self.device_kinds) > 1


def _named(left_out: dict[str, int], groups: dict[str, tuple[list, list]], make=_text) -> str:
    """'writing-03 (2 of its 5 pairs), ...': each prompt left out and how many of its pairs cannot form the ratio."""
    return joined([make("prompt pairs", prompt=p, k=k, n=len(groups[p][0])) for p, k in sorted(left_out.items())],
                  make)


def _across_rounds(point, ci, pairs, grouping, keep, what: str, notes: list[str], make=_text):
    """A benchmark's interval: the pair bootstrap `ci` (within each process) and stats.speedup.between_rounds_interval
    (the round, a fresh process per path, as the unit), whichever reaches further on each side; None, with a note,
    when fewer than 2 rounds hold the figure's pairs (a failed worker: one process per path says nothing of how
    processes differ)."""
    from ..stats.speedup import between_rounds_interval, point_over_prompts

    if point is None:
        return ci
    rounds = sorted({o["round"] for o, _ in pairs})
    per_round = [point_over_prompts({p: g for p, g in grouping([x for x in pairs if x[0]["round"] == r]).items()
                                     if p in keep}) for r in rounds]
    between = between_rounds_interval(point, per_round)
    if between is None:
        notes.append(make("one round", what=what, rounds=len(rounds)))
        return None
    if ci is None:
        return between
    return min(ci[0], between[0]), max(ci[1], between[1])


def no_spread(ci: tuple[float, float] | None) -> bool:
    """Whether an interval has zero width: its timings carry no spread (every resampled pair, and every round, gives
    the same ratio, as synthetic or rounded timings do), which is no sign that the figure is certain."""
    return ci is not None and ci[1] - ci[0] <= 1e-12 * max(abs(ci[1]), 1.0)


def _no_spread_note(figures: list[tuple[str, tuple[float, float]]], make=_text) -> str:
    from ..stats.speedup import ratio_text

    named = [make("spread of", what=what, low=ratio_text(lo), high=ratio_text(hi)) for what, (lo, hi) in figures]
    return (make("no spread both", first=named[0], second=named[1]) if len(named) > 1
            else make("no spread", figure=named[0]))


def _single_pair_note(what: str, prompts: list[str], also: str = "", make=_text) -> str:
    """Why a figure (and `also`, a figure with the same single-pair prompts, said once: aggregate printed the same
    sentence for both) has no interval: some prompt has a single pair (stats.speedup.single_pair_prompts)."""
    named = joined(list(prompts), make)
    return (make("single pair both", what=what, also=also, prompts=named) if also
            else make("single pair", what=what, prompts=named))


def _deployed_point(rows: list[dict], tolerance: float) -> float | None:
    """The median over prompts of median(ordinary s) / ((1 - f) median(assisted s) + f median(fallback wait)), f the
    share of the prompt's assisted attempts that fell back (see deployed_speedup); None where nothing can be formed."""
    from ..stats import median

    matched, comp = pair_runs(rows, tolerance)
    fell, _ = pair_runs(rows, tolerance, GenerationPath.FALLBACK)
    ratios = []
    for prompt in sorted({o["prompt_id"] for o, _ in comp + fell}):
        a = [x["seconds"] for o, x in comp if o["prompt_id"] == prompt]
        fb = [x["seconds"] - (x.get("decode_seconds") or 0.0) for o, x in fell if o["prompt_id"] == prompt]
        tried = sum(1 for o, _ in matched if o["prompt_id"] == prompt) + len(fb)
        f = len(fb) / tried
        o = median([o["seconds"] for o, _ in comp + fell if o["prompt_id"] == prompt])
        wait = (1 - f) * (median(a) if a else 0.0) + f * (median(fb) if fb else 0.0)
        if o and wait > 0 and (a or f == 1):
            ratios.append(o / wait)
    return median(ratios) if ratios else None


def deployed_speedup(rows: list[dict], tolerance: float) -> tuple[float | None, tuple[float, float] | None]:
    """The speed-up as a user of the assisted configuration meets it, from a benchmark's runs: a fallback (assisted
    failed, ordinary ran in its place for the same prompt, round and seed) counted on the assisted side at its whole
    wait, the failed attempt and the ordinary rerun (less the rerun's decoding, timed apart on every path). Per prompt
    the expected wait mixes the two outcomes by how often each happened, (1 - f) x median(assisted) + f x
    median(fallback wait): the protocol's ratio of medians would hide any share of fallbacks under one half. Its
    interval takes the round as the unit (stats.speedup.between_rounds_interval), as the speed-up's does; None with
    fewer than 2 rounds. Equal to the protocol's point where nothing fell back."""
    from ..stats.speedup import between_rounds_interval

    point = _deployed_point(rows, tolerance)
    rounds = sorted({r["round"] for r in rows})
    per_round = [_deployed_point([r for r in rows if r["round"] == k], tolerance) for k in rounds]
    return point, between_rounds_interval(point, per_round)


def measure_speed(rows: list[dict], tolerance: float, resamples: int, path: str = GenerationPath.ASSISTED,
                  processes: bool = False, make=_text) -> SpeedFigure:
    """The speed figure of `path` (assisted unless named) against ordinary in these runs: pairs matched by prompt,
    round and repetition; comparable ones only; no speed-up at all when the runs come from different device kinds.
    Only ordinary's and `path`'s runs count: another path's never mix in. A prompt whose ratio cannot be formed
    (stats.speedup.unformed_prompts: a time of 0, or ordinary's 0 tokens per second from an output with 0 new
    tokens) is left out of that figure, point and interval, and a note names it.

    processes: the rows are a benchmark's, each round a fresh worker process per path; both intervals then also
    take the round as their unit (_across_rounds). Without it (the pool's single runs, whose two paths run
    one after the other in one process, so a process's drift moves both sides of a pair) the pair is the unit.
    make: writes each note from SPEED_NOTES (plain text by default)."""
    from ..stats import median
    from ..stats.speedup import single_pair_prompts, speedup_with_left_out

    rows = [r for r in rows if r["path"] in (GenerationPath.ORDINARY, path)]
    matched, comp = pair_runs(rows, tolerance, path)
    kinds = sorted({device_kind(r["device"]) for r in rows if r.get("device")})
    if len(kinds) > 1:
        comp = []
    notes = []
    groups = seconds_by_prompt(comp)
    point, ci, left_out = speedup_with_left_out(groups, resamples) if comp else (None, None, {})
    speed_up = make("figure speed-up")
    if left_out:
        notes.append(make("speed-up unformed", prompts=_named(left_out, groups, make)))
    single = single_pair_prompts({k: v for k, v in groups.items() if k not in left_out}) if comp else []
    at = len(notes)  # where its note goes, once the tokens per second's single-pair prompts are known
    if processes and comp:
        ci = _across_rounds(point, ci, comp, seconds_by_prompt, set(groups) - set(left_out), speed_up, notes, make)
    by_prompt = {}
    if comp:
        for prompt_id in sorted({o["prompt_id"] for o, _ in matched}):
            o_secs, a_secs = groups.get(prompt_id, ([], []))
            by_prompt[prompt_id] = PromptSpeed(
                comparable_pairs=len(o_secs), matched_pairs=sum(1 for o, _ in matched if o["prompt_id"] == prompt_id),
                # a prompt the figure left out (a time of 0) has no number here either, though its medians may
                speedup=speedup_of(median(o_secs), median(a_secs)) if o_secs and prompt_id not in left_out else None)
    both = matched if len(kinds) <= 1 else []
    throughput = tokens_per_second_by_prompt(both)
    t_point, t_ci, t_left_out = speedup_with_left_out(throughput, resamples) if throughput else (None, None, {})
    what = make("figure tps", path=path)
    t_single = (single_pair_prompts({k: v for k, v in throughput.items() if k not in t_left_out}) if throughput
                else [])
    if single and single == t_single:
        notes.insert(at, _single_pair_note(speed_up, single, also=what, make=make))
    else:
        if t_single:
            notes.append(_single_pair_note(what, t_single, make=make))
        if single:
            notes.insert(at, _single_pair_note(speed_up, single, make=make))
    if processes and throughput:
        t_ci = _across_rounds(t_point, t_ci, both, tokens_per_second_by_prompt, set(throughput) - set(t_left_out),
                              what, notes, make)
    if t_left_out:
        notes.append(make("tps unformed", what=what, prompts=_named(t_left_out, throughput, make)))
    if flat := [(w, c) for w, c in ((speed_up, ci), (what, t_ci)) if no_spread(c)]:
        notes.append(_no_spread_note(flat, make))
    if unformed := sum(1 for o, _ in both if o["prompt_id"] in throughput) - sum(len(g[0]) for g in throughput.values()):
        notes.append(make("pairs unformed", what=what, unformed=unformed))
    if missing := sorted({o["prompt_id"] for o, _ in both} - set(throughput)):
        notes.append(make("prompts unformed", what=what, prompts=joined(missing, make)))
    return SpeedFigure(
        speedup=point, ci95=ci, matched_pairs=len(matched), comparable_pairs=len(comp),
        identical_outputs=identical_share(matched),
        acceptance_rate=acceptance_rate([r for r in rows if r["path"] == path]),
        device_kinds=kinds, by_prompt=by_prompt, throughput_ratio=t_point, throughput_ci95=t_ci,
        throughput_pairs=sum(len(g[0]) for p, g in throughput.items() if p not in t_left_out),
        selection_gap=intervals_apart(ci, t_ci), notes=notes)


# ---------------------------------------------------------------- batches: ordinary at batch b against assisted at 1
#
# A request is a mapping with path, batch_size, call (the generate() call it ran in: requests of one call share it
# and its seconds), stratum (what the call served: the prompt, or a batched call's first prompt, which fixes its
# mix), new_tokens, seconds and device; token_hash and unbatched_hash (the same prompt's unbatched ordinary output
# of the same round and repetition) are read when present.

ORDINARY_WINS, ASSISTED_WINS, NO_CLEAR_DIFFERENCE = "ordinary", "assisted", "no clear difference"


@dataclass
class BatchRow:
    """One path at one batch size: what each request waits and what the server delivers."""

    path: str  # "ordinary" at every size; "assisted" at batch 1 only (Transformers' limit)
    batch_size: int
    calls: int  # generate() calls
    requests: int
    seconds_per_request: float | None  # median over requests of its call's seconds: the wait of each request
    tokens_per_second_per_request: float | None  # median over requests of its own new tokens / its call's seconds
    total_tokens_per_second: float | None  # all new tokens / all seconds of the calls: what a server delivers
    total_ci95: tuple[float, float] | None  # over generate() calls, within what each call served
    vs_assisted: float | None  # total tokens/s against assisted's at batch 1
    vs_assisted_ci95: tuple[float, float] | None
    winner: str | None  # ORDINARY_WINS / ASSISTED_WINS (interval of vs_assisted above / below 1), NO_CLEAR_DIFFERENCE
    identical_to_unbatched: float | None  # share of requests whose tokens equal the same prompt's unbatched output
    peak_rss_mb: float | None  # the highest process peak RSS over the calls
    peak_cuda_allocated_mb: float | None  # the highest CUDA peak allocated over the calls, summed over devices


@dataclass
class BatchComparison:
    """Ordinary's total throughput at each batch size against assisted's at batch 1, and the batch size from which
    ordinary wins (the smallest measured size from which every larger one has ordinary's interval above assisted's)."""

    rows: list[BatchRow]
    crossover: int | None  # None: no size from which ordinary clearly wins (see `answer`)
    answer: str  # the sentence a serving team reads
    device_kinds: list[str] = field(default_factory=list)
    not_run: dict[int, str] = field(default_factory=dict)  # batch size -> why it could not run (out of memory)
    fallbacks: int = 0  # assisted runs that failed and fell back: never assisted's, and left out of its figures


def _throughput(calls: dict) -> tuple[float | None, float | None, int]:
    """Total tokens / total seconds of these calls, the variance of its logarithm and its degrees of freedom. The
    ratio estimator is linearised (u = tokens - R x seconds per call) within each stratum (what a call served is fixed
    by the design, so it adds no variance): var(R) = sum over strata of n/(n-1) x sum (u - mean u)^2, over seconds^2."""
    tokens = sum(c[1] for c in calls.values())
    seconds = sum(c[2] for c in calls.values())
    if not seconds:
        return None, None, 0
    rate = tokens / seconds
    groups: dict = {}
    for stratum, t, s in calls.values():
        groups.setdefault(stratum, []).append(t - rate * s)
    spread, df = 0.0, 0
    for u in groups.values():
        if len(u) > 1:
            mean = sum(u) / len(u)
            spread += len(u) / (len(u) - 1) * sum((x - mean) ** 2 for x in u)
            df += len(u) - 1
    if not rate or not df:
        return rate, None, df
    return rate, spread / seconds ** 2 / rate ** 2, df


def _interval(log_point: float, variance: float, df: float, confidence: float) -> tuple[float, float]:
    import math

    from ..stats.tdist import t_quantile

    half = t_quantile(0.5 + confidence / 2, df) * math.sqrt(variance)
    return math.exp(log_point - half), math.exp(log_point + half)


def _cuda_allocated(request: dict) -> float | None:
    import json

    cuda = request.get("cuda_memory")
    cuda = json.loads(cuda) if isinstance(cuda, str) else (cuda or {})
    return sum(d.get("peak_allocated_mb") or 0.0 for d in cuda.values()) if cuda else None


def batch_requests(timing_rows: list[dict], batch_rows: list[dict], compare_outputs: bool = True) -> list[dict]:
    """The requests `compare_batches` reads, from a benchmark's stored rows: its timed unbatched runs (ordinary and
    assisted; a fallback is not assisted and stays out) and the requests of its batched calls, each batched one with
    the same prompt's unbatched ordinary output of the same round and repetition beside it. Timing rows carry id,
    path, prompt_id, round, rep, new_tokens, seconds, device, token_hash; batch rows process_id, batch_call, slot,
    batch_size and the same. `compare_outputs` false (sampling: other random draws) leaves the identity out. The
    fallbacks come along as their own path, for compare_batches to count, never to time as assisted."""
    unbatched = {(r["prompt_id"], r["round"], r["rep"]): r["token_hash"] for r in timing_rows
                 if r["path"] == GenerationPath.ORDINARY} if compare_outputs else {}
    out = [dict(r, batch_size=1, call=("run", r["id"]), stratum=r["prompt_id"]) for r in timing_rows
           if r["path"] in (GenerationPath.ORDINARY, GenerationPath.ASSISTED, GenerationPath.FALLBACK)]
    first = {(r["process_id"], r["batch_call"]): r["prompt_id"] for r in batch_rows if r["slot"] == 0}
    for r in batch_rows:
        call = (r["process_id"], r["batch_call"])
        out.append(dict(r, call=call, stratum=first.get(call, r["prompt_id"]),
                        unbatched_hash=unbatched.get((r["prompt_id"], r["round"], r["rep"]))))
    return out


def _calls(requests: list[dict]) -> dict:
    """call -> (stratum, tokens of its requests, its seconds)."""
    calls: dict = {}
    for r in requests:
        c = calls.setdefault(r["call"], [r["stratum"], 0, r["seconds"]])
        c[1] += r["new_tokens"]
    return calls


def compare_batches(requests: list[dict], confidence: float = 0.95, not_run: dict[int, str] | None = None,
                    make=_text) -> BatchComparison:
    """Per path and batch size: seconds per request, tokens/s per request, total tokens/s with its interval, and its
    ratio to assisted's at batch 1 with an interval; then the batch size from which ordinary's total throughput beats
    assisted's. The intervals are on the log scale with Student's t (Welch's degrees of freedom for the ratio), the
    variance from generate() calls within what they served (tests/test_batch.py simulates whole comparisons through
    this function: false crossovers and coverage). No comparison across device kinds. `not_run`: batch sizes that
    could not run (out of memory), said in the answer. `make` writes the answer from SPEED_NOTES (plain text by
    default)."""
    import math

    from ..stats import median

    # a fallback is the target alone, run because assisted failed: counted and said, never timed as assisted
    fell_back = sum(1 for r in requests if r["path"] == GenerationPath.FALLBACK)
    requests = [r for r in requests if r["path"] != GenerationPath.FALLBACK]
    kinds = sorted({device_kind(r["device"]) for r in requests if r.get("device")})
    keys = sorted({(r["path"], r["batch_size"]) for r in requests}, key=lambda k: (k[0] != GenerationPath.ASSISTED, k[1]))
    logs, rows = {}, []
    for path, size in keys:
        rs = [r for r in requests if r["path"] == path and r["batch_size"] == size]
        calls = _calls(rs)
        rate, variance, df = _throughput(calls)
        if variance is not None:
            logs[(path, size)] = (math.log(rate), variance, df)
        unbatched = [r for r in rs if r.get("unbatched_hash") is not None]
        rows.append(BatchRow(
            path=str(path), batch_size=size, calls=len(calls), requests=len(rs),
            seconds_per_request=median([r["seconds"] for r in rs]),
            tokens_per_second_per_request=median([r["new_tokens"] / r["seconds"] for r in rs if r["seconds"]]),
            total_tokens_per_second=rate,
            total_ci95=_interval(*logs[(path, size)], confidence) if (path, size) in logs else None,
            vs_assisted=None, vs_assisted_ci95=None, winner=None,
            identical_to_unbatched=(sum(r["token_hash"] == r["unbatched_hash"] for r in unbatched) / len(unbatched))
            if unbatched and size > 1 else None,
            peak_rss_mb=max((r["peak_rss_mb"] for r in rs if r.get("peak_rss_mb") is not None), default=None),
            peak_cuda_allocated_mb=max((_cuda_allocated(r) for r in rs if _cuda_allocated(r) is not None), default=None)))
    assisted = next((r for r in rows if r.path == GenerationPath.ASSISTED), None)
    a_log = logs.get((GenerationPath.ASSISTED, 1))
    ordinary = [r for r in rows if r.path == GenerationPath.ORDINARY]
    if assisted is None or not assisted.total_tokens_per_second or len(kinds) > 1:
        why = (make("batch all fell back", runs=fell_back) if assisted is None and fell_back
               else make("batch assisted absent") if assisted is None or not assisted.total_tokens_per_second
               else make("batch kinds", kinds=", ".join(kinds)))
        answer = make("batch answer", main=make("batch no assisted", why=why), fell=make("batch empty"),
                      unrun=_not_run(not_run, make=make))
        return BatchComparison(rows=rows, crossover=None, answer=answer,
                               device_kinds=kinds, not_run=dict(not_run or {}), fallbacks=fell_back)
    # a size that failed in one worker process (a round, an accelerate rank) but ran in another has timed part of the
    # protocol only (some rounds, some prompts): not compared with assisted's whole set, and said so
    partial = {row.batch_size for row in ordinary if row.batch_size in (not_run or {})}
    for row in ordinary:
        if row.total_tokens_per_second is None or row.batch_size in partial:
            continue
        row.vs_assisted = row.total_tokens_per_second / assisted.total_tokens_per_second
        o_log = logs.get((GenerationPath.ORDINARY, row.batch_size))
        if o_log is not None and a_log is not None:
            variance = o_log[1] + a_log[1]
            welch = variance ** 2 / (o_log[1] ** 2 / o_log[2] + a_log[1] ** 2 / a_log[2]) if variance else o_log[2] + a_log[2]
            lo, hi = _interval(o_log[0] - a_log[0], variance, welch, confidence)
            row.vs_assisted_ci95 = (lo, hi)
            row.winner = ORDINARY_WINS if lo > 1 else ASSISTED_WINS if hi < 1 else NO_CLEAR_DIFFERENCE
    return BatchComparison(rows=rows, crossover=_crossover([r for r in ordinary if r.vs_assisted is not None]),
                           answer=make("batch answer", main=_answer(ordinary, assisted, make),
                                       fell=_fell_back(fell_back, assisted.requests, make),
                                       unrun=_not_run(not_run, partial, make)),
                           device_kinds=kinds, not_run=dict(not_run or {}), fallbacks=fell_back)


def _fell_back(fell_back: int, assisted_runs: int, make=_text) -> str:
    """What assisted's figures leave out: the runs whose assisted call failed, which a user of the configuration waits
    through too (the failed attempt, then the target alone), so its throughput reads higher than it delivers."""
    if not fell_back:
        return make("batch empty")
    return make("batch fell back", fell=fell_back, total=fell_back + assisted_runs)


def _not_run(not_run: dict[int, str] | None, partial: set[int] = frozenset(), make=_text) -> str:
    """Each batch size not compared, and why (its error, as stored)."""
    parts = [make("batch partial" if b in partial else "batch not measured", size=b, why=why)
             for b, why in sorted((not_run or {}).items())]
    return joined(parts, make, "batch parts") if parts else make("batch empty")


def _crossover(ordinary: list[BatchRow]) -> int | None:
    """The smallest measured batch size from which ordinary wins at that size and every larger one."""
    found = None
    for row in sorted(ordinary, key=lambda r: r.batch_size, reverse=True):
        if row.winner != ORDINARY_WINS:
            break
        found = row.batch_size
    return found


def _ratio(row: BatchRow, make=_text) -> str:
    ci = row.vs_assisted_ci95
    from ..stats.speedup import ratio_text

    if ci:
        return make("batch ratio", ratio=ratio_text(row.vs_assisted), low=ratio_text(ci[0]), high=ratio_text(ci[1]))
    return make("batch ratio one call", ratio=ratio_text(row.vs_assisted))


def _answer(ordinary: list[BatchRow], assisted: BatchRow, make=_text) -> str:
    measured = [r for r in sorted(ordinary, key=lambda r: r.batch_size) if r.vs_assisted is not None]
    sizes = ", ".join(str(r.batch_size) for r in measured)
    tps = make("batch tps", tps=f"{assisted.total_tokens_per_second:.1f}")
    if not measured:
        return make("batch no ordinary", tps=tps)
    crossover = _crossover(measured)
    if crossover is not None:
        at = next(r for r in measured if r.batch_size == crossover)
        below = [r for r in measured if r.batch_size < crossover]
        if not below:
            return make("batch ordinary everywhere", sizes=sizes, ratio=_ratio(at, make), crossover=crossover, tps=tps)
        held = make("batch held wins" if all(r.winner == ASSISTED_WINS for r in below) else "batch held ties")
        return make("batch ordinary from", crossover=crossover, ratio=_ratio(at, make), held=held, tps=tps,
                    below=joined([make("batch size ratio", size=r.batch_size, ratio=_ratio(r, make)) for r in below],
                                 make))
    if all(r.winner == ASSISTED_WINS for r in measured):
        return make("batch assisted everywhere", sizes=sizes, ratio=_ratio(measured[-1], make),
                    size=measured[-1].batch_size, tps=tps)
    unclear = [r for r in measured if r.winner != ASSISTED_WINS]
    return make("batch unclear", sizes=sizes, tps=tps, unclear=joined(
        [make("batch size ratio unclear", size=r.batch_size, ratio=_ratio(r, make)) for r in unclear], make))
