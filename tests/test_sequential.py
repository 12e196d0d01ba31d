"""Group-sequential boundaries (evalkit.stats.sequential): published figures, a reference package, Monte Carlo."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from evalkit.errors import EvalkitError
from evalkit.stats import (
    boundaries, confidence_for, crossing_probabilities, look_fractions, obf_spending, pocock_spending,
)

N01 = NormalDist()


def increments(fractions, alpha):
    """alpha(t_k) - alpha(t_{k-1}), from the spending formula written out with statistics.NormalDist."""
    z = N01.inv_cdf(1 - alpha / 2)
    spent = [2 * (1 - N01.cdf(z / math.sqrt(t))) for t in fractions]
    return np.diff([0.0, *spent])


def brownian_z(fractions, n, drift, seed):
    """n paths of Z_k = B(t_k) / sqrt(t_k) for a Brownian motion with drift (Z_k ~ N(drift sqrt(t_k), 1))."""
    t = np.asarray(fractions, float)
    dt = np.diff(np.concatenate([[0.0], t]))
    rng = np.random.default_rng(seed)
    steps = rng.standard_normal((n, len(t))) * np.sqrt(dt) + drift * dt
    return np.cumsum(steps, axis=1) / np.sqrt(t)


def first_crossings(z, bounds):
    """Counts of paths whose first crossing of the bounds is at look k."""
    hit = z >= np.asarray(bounds)
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    return np.bincount(first[first >= 0], minlength=z.shape[1])


def wilson4(count, n):
    """A Wilson interval at 4 sds: a correct probability falls outside it about once in 16,000 checks."""
    z = 4.0
    p = count / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


# --- the spending function -------------------------------------------------------------------------------------

def test_obf_spending_is_zero_at_zero_alpha_at_one_and_matches_the_formula_and_rpact():
    t = np.array([0.0, 0.1, 0.25, 0.5, 0.8, 1.0])
    spent = obf_spending(t, 0.025)
    assert spent[0] == 0.0 and spent[-1] == 0.025
    assert np.all(np.diff(spent) > 0)
    assert np.allclose(np.cumsum(increments(t[1:], 0.025)), spent[1:], rtol=1e-9, atol=1e-15)
    assert isinstance(obf_spending(0.5, 0.025), float)  # a scalar in, a float out
    # rpact's alphaSpent for typeOfDesign = "asOF", alpha = 0.13 (the file cited in the next test)
    assert np.allclose(obf_spending([0.4, 0.75, 0.85, 1.0], 0.13), [0.016665509, 0.080406163, 0.10053322, 0.13],
                       rtol=1e-7)


# --- 1. published boundaries -----------------------------------------------------------------------------------

def test_boundaries_agree_with_rpact_to_1e6():
    # rpact's unit tests, github.com/rpact-com/rpact, tests/testthat/test-f_design_group_sequential.R (commit b6f635c7,
    # the release candidate of 2024-09-19; the tests left the repository later): getDesignGroupSequential(kMax = 3 or 4,
    # alpha = 0.13, typeOfDesign = "asOF", informationRates = ..., bindingFutility = FALSE) - with non-binding
    # futility the efficacy bounds are the pure alpha-spending bounds. rpact checks them to 1e-7.
    assert np.allclose(boundaries([0.4, 0.75, 1.0], 0.13), [2.1280732, 1.4368565, 1.2468994], atol=1e-6)
    assert np.allclose(boundaries([0.4, 0.75, 0.85, 1.0], 0.13), [2.1280732, 1.4368565, 1.422873, 1.2970881],
                       atol=1e-6)


def test_boundaries_agree_with_sas_and_gsdesign_figures():
    # SAS PROC SEQDESIGN, method=errfuncobf (Lan-DeMets O'Brien-Fleming), two-sided alpha 0.05 = one-sided 0.025 per
    # side, as kept in gsDesign's repository: github.com/keaven/gsDesign, tests/benchmarks/SAS_nsurv_01.htm (program
    # SAS_nsurv_01.sas). Four equal looks; and the ceiling-adjusted design with information 5.919645, 11.7509,
    # 16.86574, 22.36004 (unequal fractions). SAS prints 5 decimals; the lower bound of its symmetric two-sided
    # design changes the upper one by far less than 1e-3.
    assert np.allclose(boundaries([0.25, 0.5, 0.75, 1.0], 0.025), [4.33263, 2.96333, 2.35902, 2.01409], atol=1e-3)
    info = np.array([5.919645, 11.7509, 16.86574, 22.36004])
    assert np.allclose(boundaries(info / info[-1], 0.025), [4.20191, 2.88074, 2.35628, 2.01576], atol=1e-3)
    # rpact, getDesignGroupSequential(kMax = 2, typeOfDesign = "asOF", sided = 2, alpha = 0.05), as printed in
    # github.com/Lakens/statistical_inferences, docs/10-sequential.html ("Efficacy boundary (z-value scale)").
    assert np.allclose(boundaries([0.5, 1.0], 0.025), [2.963, 1.969], atol=1e-3)
    # gsDesign(k = 5, test.type = 1, sfu = sfLDOF): the figures quoted in the brief. They are not in a file
    # of gsDesign's or rpact's repositories that could be found; they agree with the cited cases above.
    assert np.allclose(boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.025), [4.8769, 3.3569, 2.6803, 2.2898, 2.0310],
                       atol=1e-3)


def test_the_published_figures_reject_pocock_spending():
    # The same check against another spending function fails: the figures test the spending, not just the method.
    assert not np.allclose(boundaries([0.25, 0.5, 0.75, 1.0], 0.025, spending=pocock_spending),
                           [4.33263, 2.96333, 2.35902, 2.01409], atol=1e-3)


# --- the exact crossing probabilities ---------------------------------------------------------------------------

@pytest.mark.parametrize("t1", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("drift", [0.0, 1.5, 3.0])
def test_two_look_crossing_probabilities_match_scipys_bivariate_normal(t1, drift):
    from scipy.stats import multivariate_normal

    fractions = [t1, 1.0]
    c = boundaries(fractions, 0.025)
    p = crossing_probabilities(fractions, c, drift)
    mean = drift * np.sqrt(fractions)
    rho = math.sqrt(t1)
    both_below = multivariate_normal(mean, [[1, rho], [rho, 1]]).cdf(c)
    first_below = N01.cdf(c[0] - mean[0])
    assert p[0] == pytest.approx(1 - first_below, abs=1e-12)
    # the grid's error at the truncation point grows with the density there: ~1e-9 under the null, 1e-8 with drift
    assert p[1] == pytest.approx(first_below - both_below, abs=1e-9 if drift == 0 else 2e-8)


def test_boundaries_spend_exactly_the_increments():
    for fractions in ([0.1, 0.25, 0.5, 0.8, 1.0], [0.33, 0.34, 0.9], list(np.arange(1, 41) / 40)):
        p = crossing_probabilities(fractions, boundaries(fractions, 0.025))
        assert np.allclose(p, increments(fractions, 0.025), rtol=0, atol=1e-9)
        assert p.sum() == pytest.approx(obf_spending(fractions[-1], 0.025), abs=1e-9)


# --- 2. the level, by Monte Carlo -------------------------------------------------------------------------------

def test_boundaries_hold_the_level_in_a_monte_carlo_of_brownian_paths():
    fractions = [0.1, 0.25, 0.5, 0.8, 1.0]
    c = boundaries(fractions, 0.025)
    n = 200_000
    counts = first_crossings(brownian_z(fractions, n, 0.0, seed=20), c)
    lo, hi = wilson4(counts.sum(), n)
    assert lo <= 0.025 <= hi, (counts.sum() / n, lo, hi)
    for k, target in enumerate(increments(fractions, 0.025)):
        lo, hi = wilson4(counts[k], n)
        assert lo <= target <= hi, (k, counts[k] / n, target, lo, hi)


# --- 3. edge cases of the look schedule -------------------------------------------------------------------------

def test_one_look_at_the_end_is_the_fixed_design():
    assert boundaries([1.0], 0.025)[0] == pytest.approx(1.959964, abs=1e-6)
    assert boundaries([1.0], 0.05)[0] == pytest.approx(1.644854, abs=1e-6)


def test_forty_looks_are_finite_decreasing_and_end_near_the_fixed_design():
    # looks every 50 ratings up to 2,000
    fractions = look_fractions(range(50, 2001, 50), 2000)
    c = boundaries(fractions, 0.025)
    assert len(c) == 40
    # O'Brien-Fleming spends < 1e-15 before t = 0.1 (alpha(0.075) = 3e-16): those looks cannot stop the study.
    early = np.array(fractions) < 0.08
    assert np.all(np.isinf(c[early])) and np.all(np.isfinite(c[~early]))
    assert np.all(np.diff(c[~early]) < 0)
    assert 1.96 < c[-1] < 2.2  # 2.155: each of 40 looks costs a little
    assert np.all(c[~early] < 8)


def test_a_study_that_ends_early_spends_only_alpha_of_its_last_fraction():
    full = boundaries([0.3, 0.6, 0.9, 1.0], 0.025)
    short = boundaries([0.3, 0.6, 0.9], 0.025)
    assert np.allclose(short, full[:3], atol=1e-12)  # a look's boundary depends only on the looks before it
    spent = crossing_probabilities([0.3, 0.6, 0.9], short).sum()
    assert spent == pytest.approx(obf_spending(0.9, 0.025), abs=1e-9)
    assert spent < 0.025


def test_a_look_with_nothing_to_spend_gets_an_infinite_boundary_and_changes_nothing():
    c = boundaries([0.01, 0.5, 1.0], 0.025)
    assert c[0] == math.inf
    assert np.allclose(c[1:], boundaries([0.5, 1.0], 0.025), atol=1e-7)
    assert crossing_probabilities([0.01, 0.5, 1.0], c)[0] == 0.0


def test_boundaries_are_cached_per_schedule_but_returned_as_copies():
    a = boundaries([0.5, 1.0], 0.025)
    a[0] = 99.0
    assert boundaries((0.5, 1.0), 0.025)[0] == pytest.approx(2.962588, abs=1e-6)


# --- 4. power under a drift -------------------------------------------------------------------------------------

def test_crossing_probabilities_under_drift_match_a_monte_carlo_of_the_same_design():
    fractions = [0.1, 0.25, 0.5, 0.8, 1.0]
    c = boundaries(fractions, 0.025)
    drift = 2.8  # about 80% power for the fixed design
    p = crossing_probabilities(fractions, c, drift)
    n = 200_000
    counts = first_crossings(brownian_z(fractions, n, drift, seed=21), c)
    for k in range(len(fractions)):
        lo, hi = wilson4(counts[k], n)
        assert lo <= p[k] <= hi, (k, counts[k] / n, p[k])
    lo, hi = wilson4(counts.sum(), n)
    assert lo <= p.sum() <= hi
    assert 0.75 < p.sum() < 0.80  # a little below the fixed design's power (0.80): the price of the looks
    # under the null the same function gives back the alpha spent
    assert crossing_probabilities(fractions, c, 0.0).sum() == pytest.approx(0.025, abs=1e-9)
    # a drift away from the alternative almost never crosses
    assert crossing_probabilities(fractions, c, -3.0).sum() < 1e-5


# --- helpers for the verdict ------------------------------------------------------------------------------------

def test_confidence_for_a_boundary():
    assert confidence_for(1.959964) == pytest.approx(0.95, abs=1e-6)
    assert confidence_for(math.inf) == 1.0
    assert confidence_for(0.0) == 0.0
    levels = confidence_for(boundaries([0.5, 1.0], 0.025))
    assert levels[0] == pytest.approx(1 - 2 * (1 - N01.cdf(2.962588)), abs=1e-6)
    assert 1 - confidence_for(7.0) == pytest.approx(2.559625e-12, rel=1e-5)  # the tail stays accurate


def test_look_fractions_cap_drop_repeats_and_zeros():
    assert look_fractions([100, 200, 300], 400) == (0.25, 0.5, 0.75)
    assert look_fractions([0, 100, 100, 400, 500], 400) == (0.25, 1.0)
    assert look_fractions([50], 50.0) == (1.0,)


# --- 5. bad input -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, named", [
    (lambda: boundaries([], 0.025), "[]"),
    (lambda: boundaries([0.5, 0.5, 1.0], 0.025), "strictly increasing"),
    (lambda: boundaries([0.6, 0.4], 0.025), "0.4"),
    (lambda: boundaries([0.0, 1.0], 0.025), "0.0"),
    (lambda: boundaries([0.5, 1.2], 0.025), "1.2"),
    (lambda: boundaries([float("nan")], 0.025), "nan"),
    (lambda: boundaries(0.5, 0.025), "0.5"),
    (lambda: boundaries([1.0], 0.5), "alpha = 0.5"),
    (lambda: boundaries([1.0], 0.0), "alpha = 0.0"),
    (lambda: boundaries([1.0], -0.1), "alpha = -0.1"),
    (lambda: boundaries([0.5, 1.0], 0.025, spending=lambda t, a: a * (1 - t)), "non-decreasing"),
    (lambda: obf_spending(1.5, 0.025), "1.5"),
    (lambda: crossing_probabilities([0.5, 1.0], [3.0]), "1 critical values for 2 looks"),
    (lambda: crossing_probabilities([0.5, 1.0], [3.0, float("nan")]), "nan"),
    (lambda: confidence_for(-1.0), "-1.0"),
    (lambda: look_fractions([], 100), "[]"),
    (lambda: look_fractions([100, 50], 100), "50 follows 100"),
    (lambda: look_fractions([0, 0], 100), "size 0"),
    (lambda: look_fractions([10], 0), "planned size 0"),
    (lambda: look_fractions([-5, 10], 100), "-5"),
])
def test_bad_input_names_the_value_and_the_fix(call, named):
    with pytest.raises(EvalkitError) as err:
        call()
    assert named in err.value.what, err.value.what
    assert err.value.fix


def test_hwang_shih_decani_spends_as_its_formula_and_its_boundaries_spend_it():
    from evalkit.stats.sequential import HwangShihDeCani

    alpha, ts = 0.025, [0.2, 0.45, 0.7, 1.0]
    for gamma in (-4.0, -2.0, 0.0, 1.0):
        f = HwangShihDeCani(gamma)
        spent = np.array([f(t, alpha) for t in ts])
        want = np.array([alpha * t if gamma == 0 else alpha * (1 - np.exp(-gamma * t)) / (1 - np.exp(-gamma))
                         for t in ts])
        assert np.allclose(spent, want, rtol=1e-12) and f(0.0, alpha) == 0 and abs(f(1.0, alpha) - alpha) < 1e-15
        # the boundaries' first-crossing probabilities under the null are the increments it spends
        probs = crossing_probabilities(ts, boundaries(ts, alpha, spending=f))
        assert np.allclose(probs, np.diff(np.r_[0.0, spent]), atol=1e-9)
    # gamma -4 spends about as O'Brien-Fleming does, gamma 1 about as Pocock does (the family's known neighbours)
    assert abs(HwangShihDeCani(-4.0)(0.5, alpha) - obf_spending(0.5, alpha)) < 0.002
    assert abs(HwangShihDeCani(1.0)(0.5, alpha) - pocock_spending(0.5, alpha)) < 0.001
    assert HwangShihDeCani(-2.0) == HwangShihDeCani(-2.0)  # hashable by value: boundaries() caches it
