"""What few raters cost any valid analysis, not only evalkit's: the price of a claim about raters in general.

For such a claim the interval must allow for raters who judge the paths differently (rater x path effects), a
variance only the raters can show. In the balanced normal model of one criterion at one look, with G raters sharing
the ratings equally and everything else known, the estimate T of the difference (in units of its standard error
when raters add nothing) and the raters' mean square F carry all the evidence:

    T ~ N(delta, a + (1 - a)(1 + rho)),    F ~ (1 + rho) chi2_k / k,    k = G - 1,

where rho >= 0 is the raters' share of the rated part's variance (relative to what it is without them) and a the
share of the variance that holds no rater (PPI's unrated pool). A test "KEEP when T > c(F)" must hold its level for
every rho, since nothing rules large rater effects out in advance; the question is how large delta must be for it
to reach the power when in truth rho = 0 (the scenario the plan sizes for).

- `t_test`: the Student t rule, c(F) = t_{k, 1-alpha} sqrt(a + (1 - a) F), needs (delta / delta_0)^2 times the
  pairs of a test that knew rho = 0 (delta_0 = z_{1-alpha} + z_power). Its level holds for every rho: it is exact
  where the raters dominate, and elsewhere its size, E Phi-bar(t sqrt(b + (1 - b) W)) with b in [0, a] and
  W ~ chi2_k / k, is at most b Phi-bar(t) + (1 - b) alpha <= alpha, since Phi-bar(t sqrt(w)) is convex in w.
- `lower`: no test of that form whose level holds for every rho can need fewer. For any mixture Lambda of rho's,
  a valid test has size at most alpha under the mixture, so its power at rho = 0 is at most that of the
  Neyman-Pearson test of rho = 0 against the mixture (Lehmann & Romano, 3.8); the mixture is made least
  favourable by multiplicative weights on the sizes (Elliott, Mueller & Watson 2015, "Nearly optimal tests when a
  nuisance parameter is present"). Any mixture gives a valid bound; the least favourable one the tightest.

Where the two nearly meet (they do: 1.26 against 1.27 with 10 raters and a = 0), the t rule is about as good as any
rule, and the price is a fact of the roster, not of evalkit's interval. Numpy only: `evalkit plan --compare` prints
it for each roster it weighs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from ...stats.descriptive import t_quantile


@dataclass
class RaterPrice:
    """For G raters: the factor on the pairs (and ratings) of a test that knew the raters add nothing."""

    raters: int
    rater_free_share: float  # a: the share of the variance without raters in it (PPI's unrated pool)
    lower: float  # no test valid for every rater spread can need fewer: a bound
    t_test: float  # the Student t rule on G - 1 degrees of freedom needs this (valid for every spread)
    least_favourable: float  # the rater spread rho where the bound puts most of its weight

    def to_json(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


def _chi2_grid(k: int, points: int = 2000):
    """W = chi2_k / k on a grid with its probabilities (midpoints of equal steps in log W, weights from the
    density, normalised): numpy only, accurate to about 1e-6 in the expectations used here."""
    import numpy as np

    lw = np.linspace(math.log(1e-4), math.log(40.0), points)
    w = np.exp(lw)
    # density of log W: k/2 log(k w / 2) - k w / 2 - lgamma(k / 2)
    logd = k / 2 * np.log(k * w / 2) - k * w / 2 - math.lgamma(k / 2)
    p = np.exp(logd)
    return w, p / p.sum()


def _normal_cdf(x):
    import numpy as np

    return 0.5 * np.frompyfunc(math.erfc, 1, 1)(-np.asarray(x, float) / math.sqrt(2)).astype(float)


def _np_region(ratio, mass, alpha: float):
    """The Neyman-Pearson region: the cells of the highest likelihood ratio, in decreasing order, up to (not
    including) the one at which their cumulative mass reaches alpha. The same cells in the same order as a full
    argsort of the ratio (for distinct ratios), but only a narrow band of it is sorted: a bisection on the ratio finds
    thresholds above which the mass falls short of alpha and below which it reaches it, and only the cells between
    them are sorted (a full sort of the grid was most of rater_price's time)."""
    import numpy as np

    neg = -ratio
    hi, lo = float(neg.min()), float(neg.max())  # in -ratio: cells <= hi are sure to be in, cells > lo sure out
    for _ in range(40):  # each step halves the band of -ratio where the cut lies
        if np.count_nonzero((neg > hi) & (neg <= lo)) <= 4096:
            break
        mid = 0.5 * (hi + lo)
        if mass[neg <= mid].sum() < alpha:
            hi = mid
        else:
            lo = mid
    sure = np.flatnonzero(neg <= hi)
    band = np.flatnonzero((neg > hi) & (neg <= lo))
    order = np.concatenate([sure[np.argsort(neg[sure])], band[np.argsort(neg[band])]])
    return order[:int(np.searchsorted(np.cumsum(mass[order]), alpha))]


def _solve(f, lo: float, hi: float, tol: float = 1e-5) -> float:
    """The root of an increasing f on [lo, hi] by bisection."""
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return (lo + hi) / 2


def t_test_size(raters: int, rho: float, confidence: float = 0.95, rater_free_share: float = 0.0) -> float:
    """The one-sided size of the t rule when the raters' share is rho (at most alpha for every rho: see above)."""
    import numpy as np

    k = raters - 1
    a = rater_free_share
    alpha = (1 - confidence) / 2
    q = float(t_quantile(1 - alpha, k))
    w, p = _chi2_grid(k)
    s = math.sqrt(a + (1 - a) * (1 + rho))
    return float(p @ (1 - _normal_cdf(q * np.sqrt(a + (1 - a) * (1 + rho) * w) / s)))


def rater_price(raters: int, power: float = 0.95, confidence: float = 0.95, rater_free_share: float = 0.0,
                iterations: int = 80) -> RaterPrice:
    """The price of a claim about raters in general with `raters` raters, for one criterion at one look:
    `power` is that criterion's (KEEP needing four criteria at 80% asks about 95% of each), `confidence` the gate's
    two-sided level (one-sided alpha = (1 - confidence) / 2). About two seconds on 2 cores."""
    import numpy as np

    if raters < 2:
        return RaterPrice(raters, rater_free_share, math.inf, math.inf, math.nan)
    k = raters - 1
    a = min(max(rater_free_share, 0.0), 1.0)
    alpha = (1 - confidence) / 2
    nd = NormalDist()
    oracle = nd.inv_cdf(1 - alpha) + nd.inv_cdf(power)
    if a >= 1:  # no rater in the variance at all
        return RaterPrice(raters, a, 1.0, 1.0, math.nan)

    # the t rule: E over W of P(Z + delta > q sqrt(a + (1 - a) W)) at rho = 0
    q = float(t_quantile(1 - alpha, k))
    w, p = _chi2_grid(k)
    crit = q * np.sqrt(a + (1 - a) * w)
    delta_t = _solve(lambda d: float(p @ _normal_cdf(d - crit)) - power, 0.0, 10 * oracle)

    # the bound: Neyman-Pearson against the least favourable mixture, on a grid of (T, log F)
    t = np.linspace(-8.0, delta_t + 8.0, 560)
    lf = np.linspace(math.log(0.01), math.log(60.0), 380)
    T, LF = np.meshgrid(t, lf, indexing="ij")
    F = np.exp(LF)
    cell = (t[1] - t[0]) * (lf[1] - lf[0])
    rhos = np.r_[0.0, np.geomspace(0.02, 30.0, 24)]

    def density(delta, rho):  # joint density of (T, log F) times the cell's area
        var = a + (1 - a) * (1 + rho)
        x = k * F / (1 + rho)
        log_f = k / 2 * np.log(x / 2) - x / 2 - math.lgamma(k / 2)  # density of log F
        return (np.exp(-(T - delta) ** 2 / (2 * var) + log_f) / math.sqrt(2 * math.pi * var) * cell).ravel()

    null = np.stack([density(0.0, r) for r in rhos])
    last = {}  # the alternative's density at the last delta: the weights' loop asks for one delta eighty times

    def np_test(delta, weights):  # the power at rho = 0 and the size under each rho of the NP test of the mixture
        if last.get("delta") != delta:
            last.update(delta=delta, alt=density(delta, 0.0))
        alt = last["alt"]
        mix = weights @ null
        region = _np_region(alt / np.maximum(mix, 1e-300), mix, alpha)
        return float(alt[region].sum()), null[:, region].sum(axis=1)

    weights = np.full(len(rhos), 1 / len(rhos))
    for _ in range(iterations):  # raise the weight of the spreads where the NP test's size exceeds alpha
        _power, sizes = np_test(delta_t, weights)
        weights = weights * np.exp(1.5 * (sizes / alpha - 1))
        weights /= weights.sum()
    # any weights give a valid bound: with these fixed, the delta at which the NP test's power reaches `power`
    delta_lo = _solve(lambda d: np_test(d, weights)[0] - power, 0.5 * oracle, delta_t + 1e-9)
    return RaterPrice(raters, a, (delta_lo / oracle) ** 2, (delta_t / oracle) ** 2,
                      float(rhos[int(np.argmax(weights))]))
