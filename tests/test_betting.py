"""Betting confidence sequences (issue #20 item 5; evalkit.stats.betting): the same bounds as the reference package
confseq on the same data, time-uniform coverage by simulation, a running intersection, predictable bets, and clear
errors for bad input."""

import numpy as np
import pytest

from evalkit.errors import EvalkitError
from evalkit.stats.betting import betting_cs, betting_lower, plugin_bets


def _confseq():
    """confseq 0.0.11's `betting_lower_cs` and `betting_cs` (its current release, the source the module matched: bets
    `lambda_predmix_eb` with prior mean 1/2, prior variance 1/4 and one fake observation, truncation trunc_scale / m,
    grid `breaks`, lower end = first grid mean not rejected - 1 / breaks). It annotates with np.float_, removed in
    NumPy 2: the alias exists only while it is imported."""
    added = not hasattr(np, "float_")
    if added:
        np.float_ = np.float64
    try:
        from confseq.betting import betting_cs as reference_cs
        from confseq.betting import betting_lower_cs as reference_lower
    finally:
        if added:
            del np.float_
    return reference_lower, reference_cs


def _sequences():
    rng = np.random.default_rng(20)
    return {
        "bernoulli-0.3": rng.binomial(1, 0.3, 300).astype(float),
        "bernoulli-0.9": rng.binomial(1, 0.9, 250).astype(float),
        "beta-2-5": rng.beta(2, 5, 400),
        "beta-20-20": rng.beta(20, 20, 300),
        # mapped pair-mean differences (d + 1) / 2: mostly ties, as with identical or equally good outputs
        "pair-differences": (rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.05, 0.1, 0.7, 0.1, 0.05], size=350) + 1) / 2,
    }


SEQUENCES = _sequences()
# (sequence, alpha, truncation, breaks): every sequence with the defaults, two with the other settings
CASES = [(name, 0.05, 0.5, 1000) for name in sorted(SEQUENCES)] + [
    ("beta-2-5", 0.1, 0.75, 500), ("pair-differences", 0.2, 0.75, 2000)]


def _agree(mine, reference, breaks):
    """Equal to the reference's grid resolution everywhere, and exactly equal almost everywhere (a bound that differs
    by one grid step throughout is a different method, not rounding)."""
    assert np.abs(mine - reference).max() <= 1 / breaks + 1e-12
    assert np.mean(np.abs(mine - reference) < 1e-12) >= 0.99


@pytest.mark.parametrize("name, alpha, truncation, breaks", CASES)
def test_lower_bound_equals_confseq(name, alpha, truncation, breaks):
    reference_lower, _ = _confseq()
    x = SEQUENCES[name]
    reference = reference_lower(x, alpha=alpha, breaks=breaks, running_intersection=True, trunc_scale=truncation)
    _agree(betting_lower(x, alpha, truncation=truncation, breaks=breaks), reference, breaks)


@pytest.mark.parametrize("name, alpha, truncation, breaks", CASES)
def test_two_sided_sequence_equals_confseq(name, alpha, truncation, breaks):
    _, reference_cs = _confseq()
    x = SEQUENCES[name]
    ref_low, ref_high = reference_cs(x, alpha=alpha, breaks=breaks, running_intersection=True, theta=0.5,
                                     trunc_scale=truncation)
    low, high = betting_cs(x, alpha, truncation=truncation, breaks=breaks)
    _agree(low, ref_low, breaks)
    _agree(high, ref_high, breaks)


def test_studies_at_once_equal_one_at_a_time_and_padding_is_ignored():
    """The vectorised path (several studies, NaN-padded to one length) gives each study's own bounds, whatever the
    window of tracked grid points (a speed setting only)."""
    studies = [SEQUENCES["beta-2-5"], SEQUENCES["bernoulli-0.3"][:120], SEQUENCES["pair-differences"][:7]]
    n = max(len(s) for s in studies)
    x = np.full((len(studies), n), np.nan)
    for i, s in enumerate(studies):
        x[i, : len(s)] = s
    for window in (1, 5, 16, 64):
        low = betting_lower(x, 0.05, window=window)
        both = betting_cs(x, 0.05, window=window)
        for i, s in enumerate(studies):
            np.testing.assert_array_equal(low[i, : len(s)], betting_lower(s, 0.05))
            assert np.isnan(low[i, len(s):]).all()
            for side, alone in zip(both, betting_cs(s, 0.05)):
                np.testing.assert_array_equal(side[i, : len(s)], alone)


def _ever_above(low, mu):
    return np.mean((low > mu).any(axis=1))


@pytest.mark.parametrize("values, p", [
    ([0.0, 1.0], [0.7, 0.3]),
    # mapped pair-mean differences with a mean at a non-inferiority boundary (-0.075) and little variance
    ([0.0, 0.25, 0.5, 0.75], [0.05, 0.1, 0.8, 0.05]),
])
def test_coverage_holds_uniformly_over_time(values, p):
    """2,000 studies of 500 observations at the true mean, looked at after every observation: the share whose lower
    bound ever passes the mean stays within alpha (plus three Monte-Carlo standard errors); the two-sided sequence
    ever misses with at most alpha too."""
    rng = np.random.default_rng(5)
    x = rng.choice(values, p=p, size=(2000, 500))
    mu = float(np.dot(values, p))
    alpha = 0.1
    slack = 3 * np.sqrt(alpha * (1 - alpha) / len(x))
    assert _ever_above(betting_lower(x, alpha), mu) <= alpha + slack
    low, high = betting_cs(x, alpha)
    assert np.mean(((low > mu) | (high < mu)).any(axis=1)) <= alpha + slack


def test_bounds_only_tighten_and_more_data_narrows():
    rng = np.random.default_rng(9)
    x = rng.beta(3, 3, (200, 1000))
    low, high = betting_cs(x, 0.05)
    assert (np.diff(low, axis=1) >= 0).all() and (np.diff(high, axis=1) <= 0).all()
    assert (low <= high).all()
    width = high - low
    assert (width[:, 999] < width[:, 99]).all()
    assert np.median(width[:, 999]) < 0.5 * np.median(width[:, 99])
    one_sided = betting_lower(x, 0.05)
    assert (np.diff(one_sided, axis=1) >= 0).all()
    assert (one_sided >= low).all()  # alpha on one side beats alpha / 2


def test_bets_are_predictable_and_bounds_do_not_look_ahead():
    rng = np.random.default_rng(3)
    x = rng.beta(2, 2, 200)
    changed = x.copy()
    changed[100:] = rng.beta(8, 1, 100)
    np.testing.assert_array_equal(plugin_bets(x, 0.05)[:101], plugin_bets(changed, 0.05)[:101])
    assert not np.array_equal(plugin_bets(x, 0.05)[101:], plugin_bets(changed, 0.05)[101:])
    np.testing.assert_array_equal(betting_lower(x, 0.05)[:100], betting_lower(changed, 0.05)[:100])


def test_identical_answers_do_not_collapse_the_sequence():
    """Every pair mean the same (no discordance) still leaves an interval: the prior variance 1/4 in the bets."""
    low, high = betting_cs(np.full(100, 0.5), 0.05)
    assert low[-1] < 0.48 and high[-1] > 0.52
    assert betting_lower(np.ones(300), 0.05)[-1] > 0.9
    assert betting_lower(np.zeros(300), 0.05)[-1] == 0


@pytest.mark.parametrize("x, alpha, words", [
    ([0.2, 1.2, 0.5], 0.05, ["x[1] = 1.2", "outside [0, 1]", "(d + 1) / 2"]),
    ([[0.2, 0.5], [-0.1, 0.3]], 0.05, ["x[1, 0] = -0.1", "outside [0, 1]"]),
    ([0.2, np.inf], 0.05, ["inf", "outside [0, 1]"]),
    ([[0.2, np.nan, 0.4]], 0.05, ["study 0", "position 1", "pad"]),
    ([0.2, 0.5], 0.0, ["alpha = 0.0", "between 0 and 1"]),
    ([0.2, 0.5], 1.0, ["alpha = 1.0"]),
    ([0.2, 0.5], "5%", ["alpha = '5%'"]),
    ([], 0.05, ["shape (0,)"]),
    ([["a", "b"]], 0.05, ["not numbers"]),
])
def test_bad_input_is_a_clear_error(x, alpha, words):
    for call in (betting_lower, betting_cs):
        with pytest.raises(EvalkitError) as err:
            call(x, alpha)
        assert all(w in str(err.value) for w in words), str(err.value)
        assert err.value.fix


def test_bad_settings_are_clear_errors():
    with pytest.raises(EvalkitError, match="theta = 1"):
        betting_cs([0.5], 0.05, theta=1)
    with pytest.raises(EvalkitError, match="truncation = 1"):
        betting_lower([0.5], 0.05, truncation=1)
    with pytest.raises(EvalkitError, match="breaks = 1"):
        betting_lower([0.5], 0.05, breaks=1)
    with pytest.raises(EvalkitError, match="window = 0"):
        betting_lower([0.5], 0.05, window=0)
