"""Group-sequential boundaries by alpha spending: looks that may stop a study early with the error rate intact.

A study looked at K times, each time testing at the fixed-design level, rejects a true null far more often than
that level. Lan and DeMets (1983) fix this with an alpha-spending function alpha(t): a non-decreasing function of
the information fraction t (the share of the planned information gathered so far) with alpha(0) = 0 and
alpha(1) = alpha. At the look at fraction t_k the upper critical value c_k is set so that, under the null, the
chance of crossing for the first time at that look is the alpha newly spent there:

    P(Z_1 < c_1, ..., Z_{k-1} < c_{k-1}, Z_k >= c_k) = alpha(t_k) - alpha(t_{k-1}),

so the chance of ever crossing is alpha(t_K) <= alpha. Each c_k depends only on the looks made so far, so neither
the number of looks nor their timing has to be planned: only the spending function is frozen (with the plan). A
study that ends at a look before its maximum spends alpha(t_K), a little less than alpha. The timing of a look must
not depend on the data seen so far.

The O'Brien-Fleming type (`obf_spending`), alpha(t) = 2 (1 - Phi(z_{1 - alpha/2} / sqrt(t))), spends almost nothing
early (1e-12 at t = 0.1, 1.5e-3 at t = 0.5 for alpha = 0.025), so an early stop needs overwhelming evidence and the
final look's critical value stays close to the fixed design's (2.03 instead of 1.96 with five equal looks): a study
that runs to the end loses almost no power, one with a clear answer stops early.

The values come from the canonical joint distribution (Jennison and Turnbull 2000, ch. 3): Z_k = B(t_k) / sqrt(t_k)
for a Brownian motion B with drift theta, so Z_k ~ N(theta sqrt(t_k), 1) and corr(Z_j, Z_k) = sqrt(t_j / t_k). It
holds, at least approximately, when the statistic is a sum of independent contributions (here the pairs: each
pair's difference enters once and pairs are independent, so the increments between looks are independent) and the
information is proportional to the sample size (the variance of a pair's contribution does not drift over the
study). Information fractions are then sample sizes over the planned size (`look_fractions`).

The crossing probabilities are computed by the recursive numerical integration of Armitage, McPherson and Rowe
(1969) as set out by Jennison and Turnbull (2000), ch. 19: the sub-density of Z_k on the continuation region
(-inf, c_k) is carried from look to look at the points of a grid with Simpson's weights, each step a Gaussian
convolution, and each c_k is solved by Newton steps (safeguarded by bisection) on the exact crossing probability,
whose derivative is minus the sub-density at c_k. The grid differs from theirs in one respect, for a measured
reason: Jennison and Turnbull's grid (fine within 3 sds of the mean, coarser beyond) integrates even an untruncated
normal density only to about 2e-8 at r = 32, an error that adds up over many looks; equal Simpson panels (0.05 on
the z scale, narrower where looks are close together) integrate it to rounding, so the error left is the one at the
truncation point, which grows with the density there. Compared with a grid 8 times finer, the boundaries' crossing
probabilities come within 1e-9 of their targets and those under a drift within about 1e-8 per look (up to 200 looks
tried); 40 looks take about 0.1 s. tests/test_sequential.py checks the boundaries against
rpact (to 1e-6), SAS PROC SEQDESIGN and gsDesign, the crossing probabilities against scipy's bivariate normal, and
the level and power against Monte-Carlo simulations of Brownian paths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from ..errors import EvalkitError

# The grid (see _grid): Simpson panels of width PANEL on the z scale, narrower (SD_SHARE of the sd) where the step
# to or from a neighbouring look is short, so that the transition kernel stays resolved; never below MIN_PANEL
# (about 10^5 looks). The sub-density is carried TAIL sds either side of its mean (the rest holds < 1e-17).
PANEL = 0.05
SD_SHARE = 0.2
MIN_PANEL = 0.002
TAIL = 8.5
# Old grid points farther than this many kernel sds from a new point are left out of its sum (phi(8.5) = 8e-17).
KERNEL_SDS = 8.5
# An alpha increment below this cannot be told from rounding: the look gets c = +inf (it cannot stop the study).
MIN_INCREMENT = 1e-15
# Newton stops when the crossing probability is this close to its target, relative to the target.
PROB_REL_TOL = 1e-11

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _np():
    import numpy as np

    return np


def _upper_tail(x):
    """1 - Phi(x), accurate far into the upper tail (math.erfc element by element; numpy has no erfc)."""
    np = _np()
    return 0.5 * np.asarray(np.frompyfunc(math.erfc, 1, 1)(np.asarray(x, float) / _SQRT2), dtype=float)


def _pdf(x):
    np = _np()
    return _INV_SQRT_2PI * np.exp(-0.5 * np.asarray(x, float) ** 2)


def _check_alpha(alpha) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        a = float("nan")
    if not (0.0 < a < 0.5):
        raise EvalkitError(f"alpha = {alpha!r}: a one-sided level must lie strictly between 0 and 0.5",
                           "give the one-sided error rate of the study, for example 0.025 or 0.05")
    return a


def _check_fractions(fractions) -> tuple[float, ...]:
    try:
        ts = tuple(float(t) for t in fractions)
    except (TypeError, ValueError):
        raise EvalkitError(f"information fractions {fractions!r}: expected a list of numbers",
                           "give the looks' information fractions in (0, 1], for example [0.25, 0.5, 1.0]") from None
    if not ts:
        raise EvalkitError("information fractions []: at least one look is needed",
                           "give the looks' information fractions in (0, 1], for example [0.25, 0.5, 1.0]")
    for t in ts:
        if not (0.0 < t <= 1.0):  # also rejects NaN
            raise EvalkitError(f"information fraction {t!r} in {list(ts)}: each must lie in (0, 1]",
                               "divide each look's sample size by the planned size and cap it at 1 "
                               "(evalkit.stats.look_fractions does this)")
    for a, b in zip(ts, ts[1:]):
        if not b > a:
            raise EvalkitError(f"information fractions {list(ts)}: {b!r} follows {a!r}; they must be strictly "
                               "increasing", "list each look once, in the order they are made "
                               "(evalkit.stats.look_fractions drops repeats)")
    return ts


def obf_spending(t, alpha: float):
    """Lan-DeMets O'Brien-Fleming-type alpha spent by information fraction t (scalar or array) for a one-sided
    level alpha: 2 (1 - Phi(z_{1 - alpha/2} / sqrt(t))); 0 at t = 0, alpha at t = 1."""
    np = _np()
    alpha = _check_alpha(alpha)
    tt = np.asarray(t, float)
    if np.any(~((tt >= 0) & (tt <= 1))):
        raise EvalkitError(f"information fraction(s) {t!r}: each must lie in [0, 1]",
                           "pass the share of the planned information gathered at the look")
    z = NormalDist().inv_cdf(1 - alpha / 2)
    with np.errstate(divide="ignore"):
        x = np.where(tt > 0, z / np.sqrt(np.where(tt > 0, tt, 1.0)), np.inf)
    spent = np.where(tt > 0, 2 * _upper_tail(np.where(np.isfinite(x), x, 0.0)), 0.0)
    spent = np.where(tt >= 1, alpha, spent)  # exact at t = 1
    return float(spent) if spent.ndim == 0 else spent


def pocock_spending(t, alpha: float):
    """Lan-DeMets Pocock-type spending, alpha log(1 + (e - 1) t): much alpha early. For comparison (and as the
    wrong spending a test must catch); the gate uses O'Brien-Fleming."""
    np = _np()
    alpha = _check_alpha(alpha)
    tt = np.asarray(t, float)
    spent = alpha * np.log1p((math.e - 1) * np.clip(tt, 0, 1))
    return float(spent) if spent.ndim == 0 else spent


@dataclass(frozen=True)
class HwangShihDeCani:
    """Hwang, Shih and DeCani's (1990) family, alpha (1 - exp(-gamma t)) / (1 - exp(-gamma)) (alpha t at gamma 0):
    gamma -4 spends about as O'Brien-Fleming does, 1 about as Pocock. For comparing designs (`evalkit plan`'s floor);
    hashable, so boundaries() caches it like the named functions."""

    gamma: float

    @property
    def __name__(self) -> str:
        return f"Hwang-Shih-DeCani gamma {self.gamma:g}"

    def __call__(self, t, alpha: float):
        np = _np()
        alpha = _check_alpha(alpha)
        tt = np.clip(np.asarray(t, float), 0, 1)
        g = self.gamma
        spent = alpha * tt if abs(g) < 1e-12 else alpha * -np.expm1(-g * tt) / -math.expm1(-g)
        return float(spent) if spent.ndim == 0 else spent


def _grid(mean: float, upper: float, panel: float):
    """Simpson's rule on (-inf, upper] for a sub-density no larger than the N(mean, 1) density: equal panels of
    width at most `panel` from TAIL below the mean (or below `upper` when that is lower) to `upper` or TAIL above
    the mean, each with its midpoint. Returns (points, weights), increasing."""
    np = _np()
    hi = min(upper, mean + TAIL)
    lo = min(mean, hi) - TAIL
    n = max(2, math.ceil((hi - lo) / panel))
    d = (hi - lo) / n
    z = np.linspace(lo, hi, 2 * n + 1)
    w = np.full(2 * n + 1, 2 * d / 6)
    w[1::2] = 4 * d / 6
    w[0] = w[-1] = d / 6
    return z, w


class _Recursion:
    """The sub-density of Z_k on the continuation region, carried from look to look. `mass` holds
    weight * density at the grid points `z` of the last look (information `info`); before any look it is a unit
    point mass at 0 with information 0."""

    def __init__(self, drift: float):
        np = _np()
        self.drift = drift
        self.z = np.zeros(1)
        self.mass = np.ones(1)
        self.info = 0.0

    def _standardised(self, c: float, info: float):
        delta = info - self.info
        return (c * math.sqrt(info) - self.z * math.sqrt(self.info) - self.drift * delta) / math.sqrt(delta)

    def crossing(self, c: float, info: float) -> float:
        """P(no crossing before, Z >= c at the look with information `info`). erfc (a Python-level call per
        point) is evaluated only where 1 - Phi(u) is neither 1 nor 0 to double precision."""
        if c == math.inf:
            return 0.0
        u = self._standardised(c, info)
        sure = u < -9.0  # 1 - Phi(u) = 1 - O(1e-19)
        mid = ~sure & (u < 39.0)  # beyond, 1 - Phi(u) underflows
        return float(self.mass[sure].sum() + self.mass[mid] @ _upper_tail(u[mid]))

    def density(self, c: float, info: float) -> float:
        """The sub-density of Z at c at that look (minus the derivative of `crossing`)."""
        delta = info - self.info
        return float(self.mass @ _pdf(self._standardised(c, info))) * math.sqrt(info / delta)

    def advance(self, c: float, info: float, next_info: float | None = None) -> None:
        """Move to the look with information `info` and critical value c (the study continues below c); the grid
        there is fine enough for the step to `next_info`."""
        np = _np()
        sd = math.sqrt((info - self.info) / info)  # the kernel that smoothed the last truncation, on this scale
        if next_info is not None:
            sd = min(sd, math.sqrt((next_info - info) / info))  # the kernel of the next step
        panel = max(min(PANEL, SD_SHARE * sd), MIN_PANEL)
        z, w = _grid(self.drift * math.sqrt(info), c, panel)
        if len(z) and len(self.z):
            self.mass = w * self._transition(z, info)
        else:
            self.mass = np.zeros(len(z))
        self.z, self.info = z, info

    def _transition(self, z, info: float):
        """The sub-density at the new points z: sum_j mass_j * kernel(z_i | z_j). Only the old points within
        KERNEL_SDS standard deviations of each new point contribute (the rest add < 1e-17), so each row sums over
        a band of the sorted old grid; with narrow steps between looks the band is a small part of the grid."""
        np = _np()
        delta = info - self.info
        a, b, shift, sd = math.sqrt(info), math.sqrt(self.info), self.drift * delta, math.sqrt(delta)
        scale = math.sqrt(info / delta)
        if b == 0.0:  # the first look: the old "grid" is the point mass at 0
            return _pdf((z * a - shift) / sd) * float(self.mass.sum()) * scale
        centre = (z * a - shift) / b  # the old point each new one is centred on
        lo = np.searchsorted(self.z, centre - KERNEL_SDS * sd / b, side="left")
        hi = np.searchsorted(self.z, centre + KERNEL_SDS * sd / b, side="right")
        width = int((hi - lo).max()) if len(z) else 0
        if width == 0:
            return np.zeros(len(z))
        j = lo[:, None] + np.arange(width)[None, :]
        inside = j < hi[:, None]
        j = np.minimum(j, len(self.z) - 1)
        u = (z[:, None] * a - self.z[j] * b - shift) / sd
        return (np.where(inside, _pdf(u), 0.0) * self.mass[j]).sum(axis=1) * scale


def _solve(rec: _Recursion, target: float, info: float) -> float:
    """The c with rec.crossing(c, info) == target (crossing is decreasing in c), by Newton steps kept inside a
    bracket that bisection shrinks when a step would leave it."""
    # P(first crossing at c) <= P(Z >= c), so c lies below the marginal quantile; the loop guards against rounding.
    hi = NormalDist().inv_cdf(1 - target)
    while rec.crossing(hi, info) > target:
        hi += 0.5
    lo = hi - 1.0
    while rec.crossing(lo, info) < target:
        lo -= 1.0
    c = hi
    for _ in range(200):
        f = rec.crossing(c, info) - target
        if abs(f) <= PROB_REL_TOL * target or hi - lo < 1e-13:
            return c
        if f > 0:
            lo = c
        else:
            hi = c
        d = rec.density(c, info)
        step = c + f / d if d > 0 else math.nan
        c = step if lo < step < hi else (lo + hi) / 2
    return c


def _compute(fractions: tuple[float, ...], alpha: float, spending) -> tuple[float, ...]:
    rec = _Recursion(0.0)
    spent_before = 0.0
    out = []
    for k, t in enumerate(fractions):
        spent = float(spending(t, alpha))
        increment = spent - spent_before
        if not (math.isfinite(spent) and spent <= alpha * (1 + 1e-12)) or increment < -1e-15:
            raise EvalkitError(f"spending function {getattr(spending, '__name__', spending)!r} gives {spent!r} at "
                               f"t = {t} after {spent_before!r}: it must be non-decreasing and at most alpha = {alpha}",
                               "use a spending function such as evalkit.stats.obf_spending")
        c = math.inf if increment < MIN_INCREMENT else _solve(rec, increment, t)
        out.append(c)
        rec.advance(c, t, fractions[k + 1] if k + 1 < len(fractions) else None)
        spent_before = max(spent, spent_before)
    return tuple(out)


@lru_cache(maxsize=256)
def _cached(fractions: tuple[float, ...], alpha: float, spending) -> tuple[float, ...]:
    return _compute(fractions, alpha, spending)


def boundaries(fractions, alpha: float, spending=obf_spending):
    """Upper z critical values c_1..c_K for looks at the strictly increasing information fractions in (0, 1]:
    under the null the chance of first crossing at look k is spending(t_k) - spending(t_{k-1}). A look whose
    increment is below 1e-15 gets +inf. Results are cached by schedule (fractions rounded to 12 digits), so a
    simulation of thousands of studies with one look schedule computes them once. Returns a new numpy array."""
    np = _np()
    alpha = _check_alpha(alpha)
    key = _check_fractions(tuple(round(t, 12) for t in _check_fractions(fractions)))
    return np.array(_cached(key, alpha, spending))


def crossing_probabilities(fractions, bounds, drift: float = 0.0):
    """P(first crossing at look k), k = 1..K, for upper critical values `bounds` (+inf: no stop at that look) when
    Z_k ~ N(drift sqrt(t_k), 1) with the canonical Brownian covariance. Their sum is the power (or, at drift 0,
    the level); sum_k t_k P_k + t_K (1 - sum) is the expected share of the maximum sample size."""
    np = _np()
    ts = _check_fractions(fractions)
    cs = [float(c) for c in np.atleast_1d(np.asarray(bounds, float))]
    if len(cs) != len(ts):
        raise EvalkitError(f"{len(cs)} critical values for {len(ts)} looks",
                           "give one critical value per look (evalkit.stats.boundaries computes them)")
    if any(math.isnan(c) or c == -math.inf for c in cs):
        raise EvalkitError(f"critical values {cs}: each must be a number or +inf",
                           "use the output of evalkit.stats.boundaries")
    if not math.isfinite(float(drift)):
        raise EvalkitError(f"drift = {drift!r}: expected a finite number", "give the mean of Z at t = 1")
    rec = _Recursion(float(drift))
    out = []
    for k, (t, c) in enumerate(zip(ts, cs)):
        out.append(rec.crossing(c, t))
        rec.advance(c, t, ts[k + 1] if k + 1 < len(ts) else None)
    return np.array(out)


def confidence_for(c):
    """The two-sided confidence level whose normal quantile is c: 2 Phi(c) - 1 (1.0 for c = +inf), so that a
    criterion's interval at a look can be drawn at the level the look's boundary implies. Scalar or array."""
    np = _np()
    cc = np.asarray(c, float)
    if np.any(np.isnan(cc)) or np.any(cc < 0):
        raise EvalkitError(f"critical value(s) {c!r}: each must be >= 0 (or +inf)",
                           "pass an upper critical value from evalkit.stats.boundaries")
    level = 1.0 - 2.0 * _upper_tail(np.where(np.isfinite(cc), cc, 0.0))
    level = np.where(np.isinf(cc), 1.0, level)
    return float(level) if level.ndim == 0 else level


def look_fractions(sizes, planned) -> tuple[float, ...]:
    """Information fractions from the sample sizes at the looks (for example decided pairs at each look) and the
    planned size: size / planned, capped at 1, repeats dropped, looks at size 0 dropped (nothing can be decided
    there). Sizes must not decrease (samples only grow)."""
    try:
        n = [float(s) for s in sizes]
    except (TypeError, ValueError):
        raise EvalkitError(f"look sizes {sizes!r}: expected a list of sample sizes",
                           "give the number of decided pairs at each look, for example [100, 200, 300]") from None
    try:
        p = float(planned)
    except (TypeError, ValueError):
        p = float("nan")
    if not (p > 0 and math.isfinite(p)):
        raise EvalkitError(f"planned size {planned!r}: expected a positive number",
                           "give the planned number of pairs (evalkit plan reports it)")
    if not n:
        raise EvalkitError("look sizes []: at least one look is needed",
                           "give the number of decided pairs at each look, for example [100, 200, 300]")
    shown = "[" + ", ".join(f"{s:g}" for s in n) + "]"
    for s in n:
        if not (s >= 0 and math.isfinite(s)):
            raise EvalkitError(f"look size {s:g} in {shown}: sizes must be non-negative numbers",
                               "give the number of decided pairs at each look")
    for a, b in zip(n, n[1:]):
        if b < a:
            raise EvalkitError(f"look sizes {shown}: {b:g} follows {a:g}; sizes at successive looks must "
                               "not decrease", "list the looks in the order they were made, with cumulative sizes")
    out: list[float] = []
    for s in n:
        t = min(s / p, 1.0)
        if t > 0 and (not out or t > out[-1]):
            out.append(t)
    if not out:
        raise EvalkitError(f"look sizes {shown}: every look is at size 0",
                           "make the first look after some pairs are decided")
    return tuple(out)
