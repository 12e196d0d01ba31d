"""Medians, quartiles, proportions and their intervals, and the exact McNemar test."""

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
    """Two-sided exact McNemar p-value from the discordant counts b and c (binomial, p = 1/2). Exact integer
    arithmetic up to 1,000 discordant pairs; beyond, the same sum in log space (relative error ~1e-10)."""
    from math import comb, exp, log

    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    if n <= 1000:
        tail = sum(comb(n, i) for i in range(0, k + 1)) / 2**n
        return min(1.0, 2 * tail)
    import numpy as np

    i = np.arange(1, k + 1, dtype=float)
    log_comb = np.concatenate([[0.0], np.cumsum(np.log(n - i + 1) - np.log(i))])  # log C(n, 0..k)
    top = log_comb.max()
    log_tail = top + log(float(np.exp(log_comb - top).sum())) - n * log(2)
    return min(1.0, 2 * exp(log_tail))


def z_for(confidence: float) -> float:
    """Two-sided normal quantile: 1.959964 for 0.95."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_array(successes, n, z: float = 1.959964):
    """Wilson score interval, vectorised; counts may be fractional (an effective sample size). NaN where n <= 0."""
    import numpy as np

    s, n = np.asarray(successes, float), np.asarray(n, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = s / n
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(np.clip(p * (1 - p) / n + z * z / (4 * n * n), 0, None)) / denom
    bad = ~(n > 0)
    lo, hi = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
    lo[bad] = hi[bad] = np.nan
    return lo, hi
