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


def expected_tokens_per_pass(alpha: float, gamma: float) -> float:
    """Leviathan et al. 2023: E[tokens per target pass] = (1 - a^(g+1)) / (1 - a)."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def theoretical_speedup(alpha: float, gamma: float, cost_ratio: float) -> float:
    """Leviathan et al. 2023: speed-up ~ E[tokens per pass] / (gamma * c + 1)."""
    return expected_tokens_per_pass(alpha, gamma) / (gamma * cost_ratio + 1)
