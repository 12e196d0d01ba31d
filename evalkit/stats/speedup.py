"""The speed-up's statistics: the median over prompts of each prompt's median time ratio with its pair bootstrap,
and Leviathan et al.'s (2023) prediction from the acceptance."""

from __future__ import annotations

from .descriptive import median


def ratio_text(x: float | None) -> str:
    """A ratio (a speed-up, an end of its interval) for print: two decimals, except below 0.1, where two decimals
    would print a positive lower end as 0.00 (a wide interval from few benchmark rounds), so two significant
    digits; 'n/a' for None."""
    if x is None:
        return "n/a"
    return format(x, ".2f") if abs(x) >= 0.1 else format(x, ".2g")


def _resampled_median_ratios(rng, a, b, resamples: int, chunk: int = 64):
    """median(a[i]) / median(b[i]) for `resamples` index draws i of len(a) pairs. Drawn and reduced in chunks of
    rows: the same numbers as one (resamples x n) draw (the generator's stream is consumed in the same order),
    without holding it, and partitions that stay in cache (about 3x faster for thousands of pairs)."""
    import numpy as np

    out = np.empty(resamples)
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        idx = rng.integers(0, len(a), size=(rows, len(a)))
        out[start:start + rows] = (np.median(a[idx], axis=1, overwrite_input=True)
                                   / np.median(b[idx], axis=1, overwrite_input=True))
    return out


def unformed_prompts(groups: dict[str, tuple[list[float], list[float]]]) -> dict[str, int]:
    """The prompts whose ratio of medians cannot be formed in every resample: prompt -> how many of its pairs have a
    denominator (second list) that is not a positive number, or a numerator (first list) that is not a finite
    number. A denominator of 0 (an output with 0 new tokens, so 0 tokens per second; a time of 0) makes the
    prompt's median, or the median of some resample of its pairs, 0, and the ratio infinite or undefined."""
    import math
    from numbers import Real

    def number(x) -> bool:
        return isinstance(x, Real) and math.isfinite(x)

    out = {}
    for prompt, (num, den) in groups.items():
        bad = sum(1 for x, y in zip(num, den) if not (number(x) and x >= 0 and number(y) and y > 0))
        if bad:
            out[prompt] = bad
    return out


def speedup_with_left_out(groups: dict[str, tuple[list[float], list[float]]], resamples: int = 2000, seed: int = 0
                          ) -> tuple[float | None, tuple[float, float] | None, dict[str, int]]:
    """speedup_over_prompts, and the prompts it left out (unformed_prompts: prompt -> its pairs that cannot form
    the ratio), for the caller to name them."""
    import numpy as np

    groups = {k: v for k, v in groups.items() if v[0]}
    left_out = unformed_prompts(groups)
    # A prompt is left out whole, point and interval alike (never some of its pairs: that would choose pairs by
    # their outputs), so the interval rests on the same prompts as the point and never holds inf or NaN.
    groups = {k: v for k, v in groups.items() if k not in left_out}
    if not groups:
        return None, None, left_out
    point = point_over_prompts(groups)
    # The interval resamples pairs within each prompt, so a prompt with a single pair adds none of its spread: its
    # ratio would enter every resample as if known exactly (a pool of one sample per prompt gave an interval of zero
    # width, e.g. [0.21, 0.21], which the gate weighed). No interval then (single_pair_prompts names them).
    if single_pair_prompts(groups):
        return point, None, left_out
    rng = np.random.default_rng(seed)
    per_prompt = []
    for o, a in groups.values():
        per_prompt.append(_resampled_median_ratios(rng, np.asarray(o, float), np.asarray(a, float), resamples))
    overall = np.median(np.stack(per_prompt, axis=1), axis=1)
    lo, hi = np.percentile(overall, [2.5, 97.5])
    if not (np.isfinite(lo) and np.isfinite(hi)):  # cannot happen with positive denominators; never print one
        return point, None, left_out
    return point, (float(lo), float(hi)), left_out


def single_pair_prompts(groups: dict[str, tuple[list[float], list[float]]]) -> list[str]:
    """The prompts with fewer than 2 pairs: resampling pairs within a prompt shows nothing of a single pair's spread,
    so speedup_with_left_out gives no interval while there is one."""
    return sorted(k for k, (o, _) in groups.items() if len(o) < 2)


def point_over_prompts(groups: dict[str, tuple[list[float], list[float]]]) -> float | None:
    """The speed-up's point estimate alone: the median over prompts of median(first) / median(second) (None without
    a prompt). The caller leaves out the prompts whose ratio cannot be formed (unformed_prompts)."""
    ratios = [median(o) / median(a) for o, a in groups.values() if o and a]
    return median(ratios) if ratios else None


def between_rounds_interval(point: float | None, per_round: list[float | None], confidence: float = 0.95
                            ) -> tuple[float, float] | None:
    """The speed-up's interval with the benchmark's round as the unit: Student's t on the logarithms of the rounds'
    own speed-ups (each round runs every path in a fresh worker process), around the log of `point`, with R - 1
    degrees of freedom for R rounds. A process's state (where its memory landed, the clock, what else the machine
    ran meanwhile) moves all its timings together, so the repetitions inside one process are not independent
    evidence of the speed-up: a bootstrap over them alone covered the true speed-up about half the time when that
    drift is a few percent (tests/test_stats.py simulates it). With 2 rounds the t quantile on 1 degree of freedom is
    12.7, so the interval is narrow only where the rounds agree closely; more rounds (`bench.rounds`) narrow it.
    None with fewer than 2 rounds that have a positive speed-up, or without a point."""
    import math

    from .descriptive import t_quantile

    logs = [math.log(x) for x in per_round if x is not None and math.isfinite(x) and x > 0]
    if point is None or not point > 0 or len(logs) < 2:
        return None
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1))
    half = float(t_quantile(0.5 + confidence / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    return math.exp(math.log(point) - half), math.exp(math.log(point) + half)


def speedup_over_prompts(groups: dict[str, tuple[list[float], list[float]]], resamples: int = 2000,
                         seed: int = 0) -> tuple[float | None, tuple[float, float] | None]:
    """The speed-up across prompts and its 95% percentile interval.

    groups: prompt -> (ordinary seconds, assisted seconds) of its comparable pairs, in pair order. Each
    prompt's ratio is median(ordinary) / median(assisted), the brief's time ratio for one sample; the
    speed-up is the median of those ratios over prompts. Pooling every prompt's runs into one median
    instead would compare different prompts (a short summary against a long e-mail) whenever the two
    paths' medians fall on different prompts. The interval resamples pairs within each prompt.

    A prompt with a pair whose denominator is not positive (or a value that is not a finite number) is left out
    of both (unformed_prompts; speedup_with_left_out also returns which): its ratio, or a resample's, would be
    infinite or undefined. None where no prompt is left.
    """
    point, ci, _left_out = speedup_with_left_out(groups, resamples, seed)
    return point, ci


def expected_tokens_per_pass(alpha: float, gamma: float) -> float:
    """Leviathan et al. 2023: E[tokens per target pass] = (1 - a^(g+1)) / (1 - a)."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def theoretical_speedup(alpha: float, gamma: float, cost_ratio: float) -> float:
    """Leviathan et al. 2023: speed-up ~ E[tokens per pass] / (gamma * c + 1)."""
    return expected_tokens_per_pass(alpha, gamma) / (gamma * cost_ratio + 1)


def alpha_from_tokens_per_pass(tokens_per_pass: float, gamma: float) -> float | None:
    """Per-token acceptance probability alpha (Leviathan et al.) that explains the measured tokens per target
    pass at draft length gamma: solves (1 - a^(g+1)) / (1 - a) = tokens_per_pass by bisection.

    The plain share of drafted tokens kept (accepted / proposed) is lower: once a draft token is rejected the
    rest of that round's draft is discarded unchecked, so it is not an estimate of alpha."""
    if tokens_per_pass is None or gamma is None or gamma <= 0 or tokens_per_pass < 1:
        return None
    if tokens_per_pass >= gamma + 1:
        return 1.0
    lo, hi = 0.0, 1.0 - 1e-12
    for _ in range(100):
        mid = (lo + hi) / 2
        if expected_tokens_per_pass(mid, gamma) < tokens_per_pass:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
