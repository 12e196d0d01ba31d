"""The price of few raters (study.plan.raterprice): what a claim about raters in general costs any valid test, a
bound by the least favourable rater spread, checked against the Student t rule and against scipy."""

from statistics import NormalDist

import numpy as np
import pytest

from evalkit.study.plan.raterprice import rater_price, t_test_size

ALPHA = 0.025


@pytest.mark.parametrize("raters", [5, 10, 20])
@pytest.mark.parametrize("share", [0.0, 0.1, 0.4])
def test_the_t_rule_holds_its_level_however_differently_raters_judge_the_paths(raters, share):
    sizes = [t_test_size(raters, rho, 0.95, share) for rho in (0.0, 0.05, 0.3, 1.0, 3.0, 30.0, 3000.0)]
    assert max(sizes) <= ALPHA + 1e-4
    # exact where the raters dominate; without a pool's share, exact at every spread (T / sqrt(F) is Student's t)
    assert abs(sizes[-1] - ALPHA) < 1e-3
    if share == 0:
        assert max(abs(s - ALPHA) for s in sizes) < 1e-3
    else:
        assert sizes[0] < ALPHA - 1e-3  # a known part of the variance makes the t rule conservative


@pytest.mark.parametrize("raters", [6, 10, 20])
def test_the_t_rule_s_price_is_the_noncentral_t_s(raters):
    from scipy import optimize, stats

    power = 0.95
    k = raters - 1
    q = stats.t.ppf(1 - ALPHA, k)
    delta = optimize.brentq(lambda d: stats.nct.sf(q, k, d) - power, 0.1, 20)
    oracle = NormalDist().inv_cdf(1 - ALPHA) + NormalDist().inv_cdf(power)
    assert abs(rater_price(raters, power).t_test - (delta / oracle) ** 2) < 2e-3


def test_no_valid_rule_beats_the_bound_and_the_t_rule_nearly_meets_it():
    from scipy import optimize, stats

    prices = {g: rater_price(g, 0.95) for g in (10, 20, 40)}
    for p in prices.values():
        assert 1 < p.lower <= p.t_test
        assert p.t_test - p.lower < 0.03 * p.lower  # the bound is tight: the t rule is nearly the best there is
    assert prices[10].lower > prices[20].lower > prices[40].lower  # more raters, less to pay
    # another valid rule, the t rule on the variance never below the raters-free part (the truncated estimate):
    # valid, and it pays more than the bound
    k, power = 9, 0.95
    q = stats.t.ppf(1 - ALPHA, k)
    w = stats.chi2.ppf((np.arange(4000) + 0.5) / 4000, k) / k
    crit = q * np.sqrt(np.maximum(w, 1.0))
    delta = optimize.brentq(lambda d: stats.norm.cdf(d - crit).mean() - power, 0.1, 20)
    oracle = NormalDist().inv_cdf(1 - ALPHA) + NormalDist().inv_cdf(power)
    assert (delta / oracle) ** 2 > prices[10].lower
    # a pool's share of the variance holds no rater: it lowers the price; all of it, and there is none
    assert rater_price(10, 0.95, rater_free_share=0.2).lower < prices[10].lower
    assert rater_price(10, 0.95, rater_free_share=1.0).lower == 1.0


@pytest.mark.parametrize("alpha", [0.0, 1e-9, 0.025, 0.3, 0.999, 2.0])
def test_the_neyman_pearson_region_is_the_full_sort_s_prefix(alpha):
    """_np_region sorts only a band of the cells around the cut: the same cells, in the same order, as the full sort
    of the likelihood ratio it replaced, on grids whose region is empty, a few cells, most of them, or all (alpha
    above the total mass), with the band both narrow and wider than it sorts at once."""
    from evalkit.study.plan.raterprice import _np_region

    rng = np.random.default_rng(7)
    for n, top_heavy in ((50, False), (20_000, False), (20_000, True)):
        ratio = rng.lognormal(0.0, 2.0, n)
        mass = rng.dirichlet(np.full(n, 0.3))
        if top_heavy:  # the highest ratio holds most of the mass: the region is empty or that cell alone
            mass[np.argmax(ratio)] += 3.0
            mass /= mass.sum()
        order = np.argsort(-ratio)
        expected = order[:int(np.searchsorted(np.cumsum(mass[order]), alpha))]
        got = _np_region(ratio, mass, alpha)
        assert np.array_equal(got, expected)
