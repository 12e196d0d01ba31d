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
    # the interval holds p exactly; rounding put the upper end of 4 of 4 at 0.9999999999999999 (57 of n = 1..200)
    return min(max(0.0, centre - half), p), max(min(1.0, centre + half), p)


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
    # the interval holds p exactly, whatever rounding does to its ends (wilson)
    inside = np.isfinite(p)
    lo, hi = np.where(inside, np.minimum(lo, np.clip(p, 0, 1)), lo), np.where(inside, np.maximum(hi, np.clip(p, 0, 1)), hi)
    lo[bad] = hi[bad] = np.nan
    return lo, hi



def _betainc(a, b, x, iterations: int = 400):
    """Regularised incomplete beta I_x(a, b), vectorised (Lentz's continued fraction, Numerical Recipes 6.4)."""
    import math

    import numpy as np

    a, b, x = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, x)))
    lgamma = np.vectorize(math.lgamma, otypes=[float])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_front = lgamma(a + b) - lgamma(a) - lgamma(b) + a * np.log(x) + b * np.log1p(-x)
    flip = x >= (a + 1) / (a + b + 2)  # the fraction converges fast below this point: use the symmetry above it
    aa, bb, xx = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1 - x, x)
    tiny = 1e-300
    c = np.ones_like(xx)
    d = 1 - (aa + bb) * xx / (aa + 1)
    d = 1 / np.where(np.abs(d) < tiny, tiny, d)
    h = d.copy()
    for m in range(1, iterations + 1):
        for num in (m * (bb - m) * xx / ((aa + 2 * m - 1) * (aa + 2 * m)),
                    -(aa + m) * (aa + bb + m) * xx / ((aa + 2 * m) * (aa + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / np.where(np.abs(d) < tiny, tiny, d)
            c = 1 + num / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            step = d * c
            h = h * step
        # a few ulps, not 1e-16: below 1 a double's spacing is 1.1e-16, so a converged step can stay one ulp off 1
        # and a tolerance under that ran every call to `iterations` (12x the work of the t quantile)
        if np.all(np.abs(step - 1) < 1e-15):
            break
    with np.errstate(over="ignore", invalid="ignore"):
        part = np.exp(log_front) * h / aa
    out = np.where(flip, 1 - part, part)
    return np.where(x <= 0, 0.0, np.where(x >= 1, 1.0, out))


def t_quantile(p, df):
    """Quantile of Student's t with `df` degrees of freedom (real, > 0), vectorised, numpy only (scipy is a test
    extra). The CDF is 1 - I_{df / (df + t^2)}(df / 2, 1 / 2) / 2 for t >= 0; bisection on t = tan(u), u in
    [0, pi / 2), brackets the quantile, then Newton steps with the density finish it. Infinite df gives the
    normal quantile; NaN where df <= 0 or is NaN."""
    import numpy as np

    p, df = np.broadcast_arrays(np.asarray(p, float), np.asarray(df, float))
    flat_p, flat_df = p.ravel(), df.ravel()
    out = np.full(flat_p.shape, np.nan)
    normal = np.isinf(flat_df) | (flat_df > 1e7)
    if normal.any():
        from statistics import NormalDist

        out[normal] = [NormalDist().inv_cdf(float(q)) for q in flat_p[normal]]
    finite = ~normal & (flat_df > 0) & (flat_p > 0) & (flat_p < 1)
    if finite.any():
        # solve once per distinct (p, df): simulated studies share a handful of values, and calls repeat them
        keys, inverse = np.unique(np.stack([flat_p[finite], flat_df[finite]]), axis=1, return_inverse=True)
        pairs = [(float(q), float(nu)) for q, nu in keys.T]
        new = [k for k in pairs if k not in _T_QUANTILES]
        solved = {k: _T_QUANTILES[k] for k in pairs if k in _T_QUANTILES}
        if new:  # (a data-dependent df, one per study, can bring more than the cache holds: read them from here)
            q, nu = np.array(new).T
            solved.update(zip(new, _t_quantile_solve(q, nu).tolist()))
            _T_QUANTILES.update(solved)
            while len(_T_QUANTILES) > 4096:
                _T_QUANTILES.pop(next(iter(_T_QUANTILES)))
        out[finite] = np.array([solved[k] for k in pairs])[inverse.ravel()]
    return out.reshape(p.shape)


_T_QUANTILES: dict[tuple[float, float], float] = {}  # solved (p, df) -> quantile; the gate asks the same few


def _t_quantile_solve(q, nu):
    """t_quantile for arrays of probabilities q in (0, 1) and finite df nu > 0.

    Newton's method on the exact CDF from the Cornish-Fisher start (Abramowitz & Stegun 26.7.5, four terms in
    1 / nu): the upper quantile's CDF is concave, so the iterates close in monotonically, four or five CDF calls
    where bisection took thirty (simulated studies bring one data-dependent df each). Where the start is poor (df
    below 3) or Newton has not met the CDF to 1e-14, bisection on t = tan(u), u in [0, pi / 2), brackets the
    quantile and Newton steps inside the bracket finish it."""
    import math
    from statistics import NormalDist

    import numpy as np

    upper = np.maximum(q, 1 - q)  # solve for the upper quantile, mirror for p < 1/2
    lgamma = np.vectorize(math.lgamma, otypes=[float])

    def cdf(t, nu):
        return 1 - 0.5 * _betainc(nu / 2, 0.5, nu / (nu + t * t))

    def density(t, nu):
        log_norm = lgamma((nu + 1) / 2) - lgamma(nu / 2) - 0.5 * np.log(nu * np.pi)
        return np.exp(log_norm - (nu + 1) / 2 * np.log1p(t * t / nu))

    levels, where = np.unique(upper, return_inverse=True)
    x = np.array([NormalDist().inv_cdf(float(v)) for v in levels])[where.ravel()].reshape(upper.shape)
    x2 = x * x
    t = x * (1 + (x2 + 1) / (4 * nu) + (5 * x2 * x2 + 16 * x2 + 3) / (96 * nu ** 2)
             + (3 * x2 ** 3 + 19 * x2 * x2 + 17 * x2 - 15) / (384 * nu ** 3)
             + (79 * x2 ** 4 + 776 * x2 ** 3 + 1482 * x2 * x2 - 1920 * x2 - 945) / (92160 * nu ** 4))
    t = np.where(upper == 0.5, 0.0, t)
    done = np.zeros(upper.shape, bool)
    near = (nu >= 3) & (upper > 0.5)
    if near.any():
        tn, nn, un = t[near], nu[near], upper[near]
        for _ in range(6):
            step = (cdf(tn, nn) - un) / density(tn, nn)
            tn = tn - step
            if np.all(np.abs(step) <= 1e-13 * np.maximum(tn, 1.0)):
                break
        ok = (np.abs(cdf(tn, nn) - un) <= 1e-14) & (tn > 0)
        t[near] = np.where(ok, tn, t[near])
        done[near] = ok
    done |= upper == 0.5
    rest = ~done
    if rest.any():
        nr, ur = nu[rest], upper[rest]
        lo, hi = np.zeros_like(ur), np.full_like(ur, np.pi / 2)
        for _ in range(24):
            mid = (lo + hi) / 2
            below = cdf(np.tan(mid), nr) < ur
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        t_lo, t_hi = np.tan(lo), np.tan(hi)
        tr = (t_lo + t_hi) / 2
        for _ in range(8):  # Newton inside the bracket (the CDF is concave there): quadratic convergence
            tr = np.clip(tr - (cdf(tr, nr) - ur) / density(tr, nr), t_lo, t_hi)
        t[rest] = tr
    return np.where(q < 0.5, -t, t)
