"""Agreement between raters: Krippendorff's alpha (nominal) and Cohen's kappa, each as a readable reference
implementation and a vectorised one that the aggregate uses (tests/test_stats.py checks them against each other
and against the krippendorff package and statsmodels)."""

from __future__ import annotations


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


def krippendorff_alpha_counts(counts):
    """Krippendorff's alpha (nominal) from a units x categories matrix of value counts, vectorised; the same
    number as krippendorff_alpha_nominal on the same units. None when undefined."""
    import numpy as np

    counts = np.asarray(counts, float)
    m = counts.sum(axis=1)
    keep = m >= 2
    counts, m = counts[keep], m[keep]
    if not len(counts):
        return None
    scaled = counts / (m - 1)[:, None]
    o = counts.T @ scaled - np.diag(scaled.sum(axis=0))  # coincidence matrix
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n < 2:
        return None
    d_o = n - np.trace(o)
    d_e = n * n - (n_c * n_c).sum()
    if d_e <= 0:
        return None
    return float(1 - (n - 1) * d_o / d_e)


def cohen_kappa_binary(a, b) -> float | None:
    """Cohen's kappa for two boolean arrays, vectorised; the same number as cohen_kappa."""
    import numpy as np

    a, b = np.asarray(a, bool), np.asarray(b, bool)
    n = len(a)
    if n == 0 or len(b) != n:
        return None
    p_o = float((a == b).mean())
    pa, pb = a.mean(), b.mean()
    p_e = float(pa * pb + (1 - pa) * (1 - pb))
    if p_e >= 1:
        return None
    return (p_o - p_e) / (1 - p_e)
