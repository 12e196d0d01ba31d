"""Small statistics used by the benchmark and the aggregation: medians, IQR, bootstrap intervals."""

from __future__ import annotations

import statistics


def median(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def iqr(xs) -> tuple[float, float] | None:
    import numpy as np

    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    q1, q3 = np.percentile(xs, [25, 75])
    return float(q1), float(q3)


def bootstrap_ratio_of_medians(num: list[float], den: list[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float] | None:
    """95% percentile interval of median(num) / median(den), resampling the PAIRS (num[i], den[i]) together."""
    import numpy as np

    if len(num) != len(den) or len(num) < 2:
        return None
    rng = np.random.default_rng(seed)
    a, b = np.asarray(num, float), np.asarray(den, float)
    idx = rng.integers(0, len(a), size=(resamples, len(a)))
    ratios = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def speedup_over_prompts(groups: dict[str, tuple[list[float], list[float]]], resamples: int = 2000,
                         seed: int = 0) -> tuple[float | None, tuple[float, float] | None]:
    """The speed-up across prompts and its 95% percentile interval.

    groups: prompt -> (ordinary seconds, assisted seconds) of its comparable pairs, in pair order. Each
    prompt's ratio is median(ordinary) / median(assisted), the brief's time ratio for one sample; the
    speed-up is the median of those ratios over prompts. Pooling every prompt's runs into one median
    instead would compare different prompts (a short summary against a long e-mail) whenever the two
    paths' medians fall on different prompts. The interval resamples pairs within each prompt.
    """
    import numpy as np

    groups = {k: v for k, v in groups.items() if v[0]}
    if not groups:
        return None, None
    point = median([median(o) / median(a) for o, a in groups.values()])
    if sum(len(o) for o, _ in groups.values()) < 2:
        return point, None
    rng = np.random.default_rng(seed)
    per_prompt = []
    for o, a in groups.values():
        o, a = np.asarray(o, float), np.asarray(a, float)
        idx = rng.integers(0, len(o), size=(resamples, len(o)))
        per_prompt.append(np.median(o[idx], axis=1) / np.median(a[idx], axis=1))
    overall = np.median(np.stack(per_prompt, axis=1), axis=1)
    lo, hi = np.percentile(overall, [2.5, 97.5])
    return point, (float(lo), float(hi))


def expected_tokens_per_pass(alpha: float, gamma: float) -> float:
    """Leviathan et al. 2023: E[tokens per target pass] = (1 - a^(g+1)) / (1 - a)."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def theoretical_speedup(alpha: float, gamma: float, cost_ratio: float) -> float:
    """Leviathan et al. 2023: speed-up ~ E[tokens per pass] / (gamma * c + 1)."""
    return expected_tokens_per_pass(alpha, gamma) / (gamma * cost_ratio + 1)


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """Wilson score 95% interval for a proportion; None when n == 0."""
    import math

    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c (binomial, p = 1/2)."""
    from math import comb

    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(0, min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def krippendorff_alpha_nominal(units: list[list]) -> float | None:
    """Krippendorff's alpha for nominal data. `units`: per item, the values given by its raters
    (missing values left out). Items with fewer than two values are not pairable and are ignored.
    None when undefined (fewer than two pairable values, or only one category ever used)."""
    from collections import Counter, defaultdict

    o: dict = defaultdict(float)
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs = nc * (nk - 1) if c == k else nc * nk
                o[(c, k)] += pairs / (m - 1)
    n_c: dict = defaultdict(float)
    for (c, _k), v in o.items():
        n_c[c] += v
    n = sum(n_c.values())
    if n < 2:
        return None
    d_o = sum(v for (c, k), v in o.items() if c != k)
    d_e = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if d_e == 0:
        return None
    return 1 - (n - 1) * d_o / d_e


def cohen_kappa(a: list, b: list) -> float | None:
    """Cohen's kappa between two raters' labels on the same items; None when undefined."""
    from collections import Counter

    if len(a) != len(b) or not a:
        return None
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if p_e == 1:
        return None
    return (p_o - p_e) / (1 - p_e)


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
