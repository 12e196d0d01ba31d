"""Anytime-valid confidence sequences for the mean of observations bounded in [0, 1], by betting
(Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by betting", JRSS-B 86(1)).

For a candidate mean m, a gambler who bets that the mean exceeds m holds the capital

    K+_t(m) = prod_{i <= t} (1 + lambda_i(m) (x_i - m)),   lambda_i(m) = min(lambda_i, c / m),

with the predictable plug-in bet (the paper's lambda^PrPl-EB, confseq's `lambda_predmix_eb`)

    lambda_i = sqrt(2 log(1 / a) / (sigma2_{i-1} i log(1 + i))),
    mu_t = (1/2 + sum_{j <= t} x_j) / (t + 1),   sigma2_t = (1/4 + sum_{j <= t} (x_j - mu_j)^2) / (t + 1),

so lambda_i uses x_1 .. x_{i-1} only (sigma2_0 = 1/4), and the truncation c = 1/2 keeps every factor at least
1 - c > 0. Where the mean is m, K+_t(m) is a nonnegative martingale starting at 1, so by Ville's inequality it ever
reaches 1/alpha with probability at most alpha. The lower confidence sequence is therefore
{m : K+_s(m) < 1/alpha for every s <= t} (the running intersection), and its lower end L_t satisfies

    P(there is a t with mu < L_t) <= alpha.

K+_t(m) does not increase with m, so the rejected means form an interval [0, L_t). The two-sided sequence is the
hedged capital max(theta K+_t(m), (1 - theta) K-_t(m)) of the paper with K-_t(m) = prod (1 - min(lambda_i, c / (1 - m))
(x_i - m)) and bets at level theta alpha and (1 - theta) alpha: a lower sequence at theta alpha and an upper one at
(1 - theta) alpha, each a running intersection, jointly covering with probability at least 1 - alpha.

What it assumes: observations in [0, 1] that share one conditional mean mu given everything seen before them, for
example pair means (or mapped pair-mean differences (d + 1) / 2) of pairs served in an order drawn at random from a
fixed pool, each pair rated by raters whose ratings do not depend on the order. Independence of the observations is
not needed beyond that (a martingale-difference condition), nor any distributional shape.

What it guarantees: coverage uniformly over time, so the bound may be looked at after every observation and a study
stopped whenever it says so (an optional stopping time keeps the level), with no alpha spending.

What it does not cover: rater-to-rater differences. With a rater x path effect, pair means rated by the same few raters
share those raters' leanings, so they are not exchangeable draws around the population mean of raters in general:
the sequence covers the mean for these raters (the pairs' conditional mean given the raters), not for raters like
them. A claim about raters in general needs the rater as a unit (stats.clustered).

How it is computed (vectorised over studies): on the grid m = g / breaks, g = 0 .. breaks, exactly as confseq's
`betting_lower_cs` / `betting_cs` (version 0.0.11) do, the reported lower end is the grid point just below the first
mean not rejected (conservative by at most 1 / breaks). Instead of the whole grid, each study keeps the capital of a
window of `window` grid points starting at its first never-rejected point; as K+_t(m) is monotone in m, a point above
the window cannot be rejected while the window's top is not, and a window that is wholly rejected is refilled from
the study's history. The work is about studies x (n x window + the history replayed at refills, which grows with
breaks); 2,000 studies of 1,500 observations took 1.4-1.7 s of CPU for `betting_lower` and 3.5-4.2 s for `betting_cs`
(breaks 1,000, window 16; mapped pair-mean differences and Bernoulli(0.3); one core of an AMD EPYC, numpy 2.4.6).
"""

from __future__ import annotations

import math
import numbers

from evalkit.errors import EvalkitError

BREAKS = 1000  # grid points per unit of the mean (confseq's default): the lower end is conservative by at most 1e-3
TRUNCATION = 0.5  # c: bets are at most c / m (c / (1 - m) on the upper side), as in the paper and confseq
WINDOW = 16  # grid points whose capital each study keeps up to date (a speed setting; results do not depend on it)


def plugin_bets(x, alpha: float):
    """The predictable plug-in bets lambda_t (studies x n) before truncation: sqrt(2 log(1 / alpha) / (sigma2_{t-1} t
    log(1 + t))) with the regularised running mean and variance (prior mean 1/2, prior variance 1/4, one fake
    observation), as confseq's `lambda_predmix_eb` with its defaults. lambda_t uses x_1 .. x_{t-1} only."""
    import numpy as np

    x = np.asarray(x, float)
    t = np.arange(1, x.shape[-1] + 1)
    mu = np.minimum((0.5 + np.cumsum(x, axis=-1)) / (t + 1), 1.0)
    s2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    s2_prev = np.concatenate([np.full(x.shape[:-1] + (1,), 0.25), s2[..., :-1]], axis=-1)
    return np.sqrt(2 * math.log(1 / alpha) / (t * np.log1p(t) * s2_prev))


def betting_lower(x, alpha: float = 0.05, *, truncation: float = TRUNCATION, breaks: int = BREAKS,
                  window: int = WINDOW):
    """The one-sided lower confidence sequence for the mean, at level alpha (no split): after each observation, the
    running lower end L_t with P(exists t: mu < L_t) <= alpha.

    x: observations in [0, 1], one study (1-D) or studies x n (2-D); a study shorter than n is padded with NaN at the
    end and its bounds are NaN there. Returns an array of x's shape, nondecreasing along each study."""
    x = _observations(x)
    _check(alpha, truncation, breaks, window)
    two_d = x if x.ndim == 2 else x[None, :]
    low = _lower(two_d, plugin_bets(two_d, alpha), alpha, truncation, breaks, window)
    return low if x.ndim == 2 else low[0]


def betting_cs(x, alpha: float = 0.05, *, theta: float = 0.5, truncation: float = TRUNCATION, breaks: int = BREAKS,
               window: int = WINDOW):
    """The two-sided confidence sequence (lower, upper) of the hedged capital process at level alpha, theta splitting
    it between the sides (1/2 as in the paper): P(exists t: mu outside [L_t, U_t]) <= alpha. Running intersections;
    x as for `betting_lower`. Where the two ends cross (the data contradict every mean; probability at most alpha)
    they are returned crossed, where confseq reports [0, 1] for that step."""
    x = _observations(x)
    _check(alpha, truncation, breaks, window)
    if not _inside_unit(theta):
        raise EvalkitError(f"betting confidence sequence: theta = {theta!r} is not strictly between 0 and 1",
                           "theta splits alpha between the lower and the upper side; use 0.5 (the paper's choice)")
    two_d = x if x.ndim == 2 else x[None, :]
    low = _lower(two_d, plugin_bets(two_d, alpha * theta), alpha * theta, truncation, breaks, window)
    # The upper side is the lower side of 1 - x: its bets (the variance estimate) are the same, computed from x as
    # confseq does, and the grid is symmetric.
    high = 1 - _lower(1 - two_d, plugin_bets(two_d, alpha * (1 - theta)), alpha * (1 - theta), truncation, breaks,
                      window)
    return (low, high) if x.ndim == 2 else (low[0], high[0])


def _lower(x, lam, alpha, truncation, breaks, window):
    """Running lower ends for studies x n (NaN-padded at the end), grid resolution 1 / breaks."""
    import numpy as np

    studies, n = x.shape
    pad = np.isnan(x)
    # a padded step bets nothing (lambda 0), so it leaves the capital as it was; time-major for contiguous steps
    x_t = np.where(pad, 0.0, x).T.copy()
    lam_t = np.where(pad, 0.0, lam).T.copy()
    threshold = math.log(1 / alpha)
    k = np.arange(window)
    base = np.zeros(studies, dtype=np.int64)  # grid index of each study's window's first point
    first = np.zeros(studies, dtype=np.int64)  # each study's first grid point never rejected
    m = np.minimum(base[:, None] + k, breaks) / breaks
    cap = _cap(m, truncation)
    log_k = np.zeros((studies, window))
    low = np.empty((n, studies))
    bet, gain = np.empty_like(log_k), np.empty_like(log_k)  # scratch, reused every step
    for t in range(n):
        np.minimum(lam_t[t, :, None], cap, out=bet)
        np.subtract(x_t[t, :, None], m, out=gain)
        bet *= gain
        log_k += np.log1p(bet, out=bet)
        rejected = log_k >= threshold
        rows = np.flatnonzero(rejected.all(axis=1))
        while rows.size:  # windows wholly rejected: move them up and replay the history
            base[rows] += window
            m[rows] = np.minimum(base[rows, None] + k, breaks) / breaks
            cap[rows] = _cap(m[rows], truncation)
            log_k[rows] = _replay(x_t[: t + 1, rows], lam_t[: t + 1, rows], m[rows], cap[rows])
            rejected[rows] = log_k[rows] >= threshold
            rows = rows[rejected[rows].all(axis=1)]
        np.maximum(first, base + (~rejected).argmax(axis=1), out=first)
        low[t] = first
    low = np.maximum(low.T - 1, 0) / breaks
    low[pad] = np.nan
    return low


def _cap(m, truncation):
    """The truncation c / m of the bet on "mean > m" (infinite at m = 0: no truncation there)."""
    import numpy as np

    with np.errstate(divide="ignore"):
        return truncation / m


def _replay(x, lam, m, cap, block: int = 64, budget: int = 4_000_000):
    """log K+_t(m) from the start of the history (t x rows) for a few studies and their windows' grid points: products
    over blocks of `block` steps (each factor lies in [1 - c, 1 + lambda], so a block neither overflows nor
    underflows) and a log per block, in chunks of rows that keep t x rows x window under `budget` numbers."""
    import numpy as np

    t, rows = x.shape
    out = np.zeros(m.shape)
    chunk = max(1, budget // max(1, min(t, block) * m.shape[1]))
    for i in range(0, rows, chunk):
        r = slice(i, i + chunk)
        for j in range(0, t, block):
            s = slice(j, j + block)
            factors = 1 + np.minimum(lam[s, r, None], cap[None, r]) * (x[s, r, None] - m[None, r])
            out[r] += np.log(factors.prod(axis=0))
    return out


def _observations(x):
    import numpy as np

    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise EvalkitError(f"betting confidence sequence: the observations are not numbers ({exc})",
                           "pass an array of numbers in [0, 1], one row per study") from None
    if x.ndim not in (1, 2) or x.shape[-1] == 0:
        raise EvalkitError(f"betting confidence sequence: observations of shape {x.shape}",
                           "pass one study as a 1-D array or several as studies x n (NaN-padded at the end)")
    two_d = x if x.ndim == 2 else x[None, :]
    bad = ~np.isnan(two_d) & ~((two_d >= 0) & (two_d <= 1))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])[-x.ndim:]
        raise EvalkitError(
            f"betting confidence sequence: observation x{list(where)} = {float(x[where])!r} lies outside [0, 1]",
            "bound the observations in [0, 1]; map a pair-mean difference d in [-1, 1] to (d + 1) / 2 first")
    gaps = np.isnan(two_d[:, :-1]) & ~np.isnan(two_d[:, 1:])
    if gaps.any():
        row, col = (int(i) for i in np.argwhere(gaps)[0])
        raise EvalkitError(f"betting confidence sequence: study {row} has a NaN at position {col} followed by an "
                           "observation", "NaN may only pad a study's end; drop missing observations instead")
    return x


def _inside_unit(value) -> bool:
    """Whether value is a number strictly between 0 and 1."""
    try:
        return 0 < float(value) < 1
    except (TypeError, ValueError):
        return False


def _check(alpha, truncation, breaks, window):
    if not _inside_unit(alpha):
        raise EvalkitError(f"betting confidence sequence: alpha = {alpha!r} is not strictly between 0 and 1",
                           "give the error rate as a probability, e.g. alpha = 0.05 for 95% coverage")
    if not _inside_unit(truncation):
        raise EvalkitError(f"betting confidence sequence: truncation = {truncation!r} is not strictly between 0 and 1",
                           "use 0.5 (the paper's and confseq's choice) or 0.75")
    for name, value, example in (("breaks", breaks, 1000), ("window", window, 16)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < (2 if name == "breaks" else 1):
            raise EvalkitError(f"betting confidence sequence: {name} = {value!r}",
                               f"give a whole number of grid points, e.g. {name} = {example}")
