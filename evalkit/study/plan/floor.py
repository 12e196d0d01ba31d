"""The floor no design of study.plan.designs can beat: what a test that knew every criterion's variance would need.

A design that must estimate the variances from its own ratings (and, for a claim about raters in general, the
raters' part from few raters) needs more; the distance from the floor is what estimating them costs. `evalkit plan
--compare` prints it beside its recommendation; `scripts/errorbench.py --designs --bound` is its shell, with the
same floor under other alpha-spending functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..gate import GENERAL
from ..monitoring import GROUP_SEQUENTIAL, look_sizes
from .designs import Scenario


@dataclass
class Floor:
    """What a test that knew every criterion's variance would need: PPI at its best weight, no rater uncertainty and
    no variance to estimate, one rating per pair (+ the doubled share), the same looks. No design of this family that
    must estimate them can need fewer ratings; the distance from it is what estimating them costs."""

    planned_pairs: int  # the smallest maximum reaching the power with looks
    expected_ratings: float
    power: float  # reached there, on the simulated paths
    fixed_pairs: float  # the same test at one fixed size (normal approximation)
    fixed_ratings: float
    variance_raters: float  # per decided pair, worst criterion: the raters' answers alone
    variance_ppi: float  # the same with the pre-screen at its best weight
    # the share of variance_ppi with no rater in it (the pre-screen on the unrated pool): the rest is what raters
    # who judge the paths differently would widen (raterprice: the price of a claim about raters in general)
    rater_free_share: float = 0.0
    # a pool ten times as large (more pairs generated: machine time, no rater time) and the one-look floor's ratings
    # with it: the pool's part of the variance is the one no rating shrinks, so only the pool's size lowers it
    larger_pool: int = 0
    larger_pool_fixed_ratings: float = 0.0


def floor(scenario: Scenario, power: float = 0.8, second_rating_share: float = 0.1, look_every: int = 50,
          seed: int = 0, pairs_per_criterion: int = 200_000, spending=None,
          futility: float | None = None, from_pairs: int | None = None) -> Floor | None:
    """The Floor of `scenario`: each criterion's PPI variance per decided pair from `pairs_per_criterion` simulated
    pairs (identical ones enter as zeros with no rating, as the gate counts them), then each criterion a Brownian
    motion with that variance known, O'Brien-Fleming boundaries at the looks every `look_every` ratings, KEEP once
    all have crossed; the smallest maximum (in steps of about 0.5%) whose KEEP rate on 10,000 paths reaches `power`.
    `spending`: another alpha-spending function for the same looks (the gate's is O'Brien-Fleming's), to see what
    the choice costs. `futility`: a study also stops, for DROP, at the first look where a criterion that has not
    crossed lies more than `futility` standard errors below its course where nothing drops (z below drift * sqrt(t) -
    futility), to see what stopping for lack of promise could save: the rule is non-binding (it only takes KEEPs
    away, so the level holds), and a study it stops counts its ratings to that look. `from_pairs`: a maximum below
    which no size reaches the power (the same scenario's floor without the futility rule: on the same simulated
    paths the rule only takes KEEPs away), where the scan may start; the result is the same. None when the pool
    leaves no size to try."""
    from statistics import NormalDist

    import numpy as np

    from ...stats.sequential import boundaries, look_fractions, obf_spending
    from .ppibench import simulate_screened, truth_accuracy

    model = replace(scenario.model, raters_per_pair=1, second_rating_share=second_rating_share)
    if scenario.claim != GENERAL:
        model = replace(model, rater_sd=0.0, rater_path_sd=0.0)
    rng = np.random.default_rng(seed)
    truth = truth_accuracy(scenario.prescreen_agreement, model.rater_accuracy)
    crits = tuple(model.pass_rates)
    sim = simulate_screened(model, pairs_per_criterion, 0, 1, {}, rng, truth, scenario.prescreen_bias, crits)
    n_pairs = len(sim["pair_study"])
    per_pair = np.bincount(sim["pair"], minlength=n_pairs)
    ratings_per_pair = float(per_pair.mean())
    parts = []
    for c in crits:
        y = np.bincount(sim["pair"], weights=sim["x"][c], minlength=n_pairs) / np.maximum(per_pair, 1)
        f = sim["f"][c]
        parts.append((y.var(), f.var(), float(np.cov(y, f)[0, 1])))
    pool = scenario.pool

    def variance(n, k, unrated_only=False, pool=pool):  # criterion k's PPI variance per decided pair, the best
        var_y, var_f, cov = parts[k]                      # lambda, pool - n unrated pairs (unrated_only: their part)
        if var_f <= 0 or pool <= n:
            return 0.0 if unrated_only else var_y
        lam = cov / ((1 + n / (pool - n)) * var_f)
        if unrated_only:
            return lam * lam * var_f * n / (pool - n)
        return var_y - 2 * lam * cov + lam * lam * var_f * (1 + n / (pool - n))

    def values(n):
        return {"planned_pairs": n, "min_ratings_per_pair": 1, "second_rating_share": second_rating_share,
                "monitoring": GROUP_SEQUENTIAL, "look_every": look_every, "confidence": scenario.confidence}

    most = len(look_sizes(values(pool)))  # no size below the pool has more looks
    paths = np.random.default_rng([seed, 1]).standard_normal((10_000, len(crits), most), dtype=np.float32)
    # scan up from below the fixed-size normal approximation, in steps of about half a percent of it
    z = NormalDist().inv_cdf((1 + scenario.confidence) / 2) + NormalDist().inv_cdf(power ** (1 / len(crits)))
    guess = max(variance(min(pool - 1, 1000), k) for k in range(len(crits))) * (z / scenario.margin) ** 2
    step = max(1, int(guess / 200))
    found = None
    start = max(2, int(0.7 * guess))
    if from_pairs is not None and from_pairs > start:  # the grid's last point at or below it
        start += (from_pairs - start) // step * step
    for n in range(start, max(pool, 3), step):
        frac = np.asarray(look_fractions(look_sizes(values(n)), n))
        bound = np.asarray(boundaries(tuple(frac), (1 - scenario.confidence) / 2, spending or obf_spending))
        drift = np.array([scenario.margin / math.sqrt(variance(n, k) / n) for k in range(len(crits))])
        steps = paths[:, :, :len(frac)] * np.sqrt(np.diff(np.r_[0.0, frac]))
        stat = (np.cumsum(steps, axis=2) + drift[None, :, None] * frac) / np.sqrt(frac)
        crossed = np.logical_or.accumulate(stat >= bound, axis=2)  # a criterion that crossed stays passed
        passed = crossed.all(axis=1)
        keep_at = np.where(passed.any(axis=1), np.argmax(passed, axis=1), len(frac))
        drop_at = np.full(len(paths), len(frac))
        if futility is not None:
            hopeless = ((stat < drift[None, :, None] * np.sqrt(frac) - futility) & ~crossed).any(axis=1)
            drop_at = np.where(hopeless.any(axis=1), np.argmax(hopeless, axis=1), len(frac))
        kept = (keep_at < len(frac)) & (keep_at <= drop_at)  # KEEP at a look where both would stop
        stop = np.minimum(np.minimum(keep_at, drop_at), len(frac) - 1)
        found = (n, float(kept.mean()), float((frac[stop] * n).mean() * ratings_per_pair))
        if found[1] >= power:
            break
    if found is None:  # no size below the pool to try (a pool too small for the margin)
        return None
    n, reached, ratings = found
    worst = max(range(len(crits)), key=lambda k: variance(n, k))
    fixed = variance(n, worst) * (z / scenario.margin) ** 2
    total = variance(n, worst)
    larger, m = 10 * pool, fixed
    for _ in range(20):  # the one-look size where the worst criterion's variance, with the larger pool, gives it
        m = max(variance(min(m, larger - 1), k, pool=larger) for k in range(len(crits))) * (z / scenario.margin) ** 2
    return Floor(n, ratings, reached, fixed, fixed * ratings_per_pair, float(parts[worst][0]), float(total),
                 float(variance(n, worst, unrated_only=True) / total) if total > 0 else 0.0,
                 larger, float(m * ratings_per_pair))
