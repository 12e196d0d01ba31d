"""evalkit's statistics against reference implementations installed only as test extras (scipy, statsmodels,
krippendorff): random inputs, agreement to 1e-8. And the cases that matter for the gate: an interval that does
not collapse when every answer agrees."""

import math

import numpy as np
import pytest

from evalkit import stats

# reference implementations: test extras only (pip install -e '.[test]')
import krippendorff
import statsmodels.api as sm
import statsmodels.stats.sandwich_covariance as sandwich
from scipy.optimize import brentq
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

Z95 = 1.959963984540054


def test_wilson_matches_statsmodels():
    rng = np.random.default_rng(1)
    n = rng.integers(1, 400, 2000)
    k = rng.integers(0, n + 1)
    lo_ref, hi_ref = proportion_confint(k, n, alpha=0.05, method="wilson")
    lo, hi = stats.wilson_array(k, n, Z95)
    assert np.abs(lo - lo_ref).max() < 1e-8 and np.abs(hi - hi_ref).max() < 1e-8
    for i in range(0, 2000, 97):  # the scalar version too
        assert stats.wilson(int(k[i]), int(n[i]), Z95) == pytest.approx((lo_ref[i], hi_ref[i]), abs=1e-8)


def test_exact_mcnemar_matches_statsmodels_and_scipy():
    rng = np.random.default_rng(2)
    for _ in range(2000):
        b, c = (int(v) for v in rng.integers(0, 60, 2))
        ref = mcnemar([[int(rng.integers(0, 50)), b], [c, int(rng.integers(0, 50))]], exact=True).pvalue
        assert stats.mcnemar_exact(b, c) == pytest.approx(ref, abs=1e-8)
    # beyond 1,000 discordant pairs the sum runs in log space
    for b, c in ((400, 700), (1500, 1600), (20000, 20500), (700, 700), (5, 3000)):
        assert stats.mcnemar_exact(b, c) == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue, abs=1e-8, rel=1e-8)


def test_cohen_kappa_matches_statsmodels():
    rng = np.random.default_rng(3)
    for _ in range(2000):
        n = int(rng.integers(2, 60))
        a = rng.random(n) < rng.random()
        b = np.where(rng.random(n) < rng.random(), a, rng.random(n) < 0.5)
        table = np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]], float)
        p_e = ((table.sum(1) * table.sum(0)).sum()) / n**2
        if p_e == 1:
            assert stats.cohen_kappa(list(a), list(b)) is None and stats.cohen_kappa_binary(a, b) is None
            continue
        ref = cohens_kappa(table, return_results=False)
        assert stats.cohen_kappa(list(a), list(b)) == pytest.approx(ref, abs=1e-8)
        assert stats.cohen_kappa_binary(a, b) == pytest.approx(ref, abs=1e-8)


def test_krippendorff_alpha_matches_the_krippendorff_package():
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(2000):
        raters, units, cats = int(rng.integers(2, 6)), int(rng.integers(2, 25)), int(rng.integers(2, 4))
        data = rng.integers(0, cats, (raters, units)).astype(float)
        agree = rng.random(units) < rng.random()  # some units agree fully, others are noise
        data[:, agree] = data[0, agree]
        data[rng.random((raters, units)) < 0.2] = np.nan
        units_lists = [[int(v) for v in col if not np.isnan(v)] for col in data.T]
        counts = np.array([[u.count(c) for c in range(cats)] for u in units_lists])
        mine = stats.krippendorff_alpha_nominal(units_lists)
        mine_vec = stats.krippendorff_alpha_counts(counts)
        if mine is None:
            assert mine_vec is None
            continue
        try:
            ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        except ValueError:  # the package refuses some degenerate inputs that evalkit calls undefined
            continue
        assert mine == pytest.approx(ref, abs=1e-8)
        assert mine_vec == pytest.approx(ref, abs=1e-8)
        checked += 1
    assert checked > 1500


def _tango_reference(b, c, n, z=Z95):
    """Tango's interval found independently: the constrained MLE by root-finding on the score equation of the
    multinomial likelihood, the limits by root-finding on the score statistic."""

    def p21(delta):
        lo, hi = max(0.0, -delta), (1 - delta) / 2
        def dlog(p):  # derivative of the log-likelihood in p21 (cells: b ~ p21 + delta, c ~ p21, rest)
            return (b / (p + delta) if b else 0) + (c / p if c else 0) - (2 * (n - b - c) / (1 - 2 * p - delta) if n - b - c else 0)
        eps = 1e-15
        if dlog(lo + eps) <= 0:
            return lo
        if dlog(hi - eps) >= 0:
            return hi
        return brentq(dlog, lo + eps, hi - eps, xtol=1e-16, rtol=1e-15)

    def score(delta):
        return (b - c - n * delta) / math.sqrt(n * (2 * p21(delta) + delta * (1 - delta)))

    est = (b - c) / n
    lo = -1.0 if est <= -1 else brentq(lambda d: score(d) - z, -1 + 1e-13, est - 1e-12, xtol=1e-15)
    hi = 1.0 if est >= 1 else brentq(lambda d: score(d) + z, est + 1e-12, 1 - 1e-13, xtol=1e-15)
    return lo, hi


def test_tango_matches_an_independent_implementation():
    rng = np.random.default_rng(5)
    cases = [(int(rng.integers(0, 8)), int(rng.integers(0, 8)), int(rng.integers(15, 120))) for _ in range(150)]
    cases += [(0, 0, 20), (0, 5, 40), (5, 0, 40), (3.5, 1.25, 30)]  # fractional: rater-averaged counts
    for b, c, n in cases:
        ref = _tango_reference(b, c, n)
        got = stats.tango_interval(b, c, n, Z95)
        assert float(got[0]) == pytest.approx(ref[0], abs=1e-8) and float(got[1]) == pytest.approx(ref[1], abs=1e-8)


def test_all_agree_interval_does_not_collapse():
    """20 pairs, 3 raters each, every answer 'pass' on both sides: a bootstrap alone gives [0, 0]; the gate's
    interval reaches Tango's -z^2 / (n + z^2) = -0.161, far beyond a 0.05 margin."""
    pairs, raters = 20, 3
    pair = np.repeat(np.arange(pairs), raters)
    rater = np.tile(np.arange(raters), pairs)
    res = stats.paired_difference(np.zeros(pairs * raters, np.int8), pair, rater, np.zeros(pairs, np.int64), 1)
    assert res["bootstrap_low"][0] == 0 and res["bootstrap_high"][0] == 0
    assert res["low"][0] == pytest.approx(-Z95**2 / (pairs + Z95**2), abs=1e-9)
    assert res["low"][0] == pytest.approx(-0.161, abs=1e-3) and res["high"][0] == pytest.approx(0.161, abs=1e-3)


def test_pair_bootstrap_is_the_exact_bootstrap_distribution():
    """The FFT lattice bootstrap against direct repeated convolution (small n: exact) and against Monte Carlo."""
    rng = np.random.default_rng(6)
    for _ in range(30):
        scale = int(rng.integers(1, 5))
        width = 2 * scale + 1
        n = int(rng.integers(3, 30))
        values = rng.integers(0, width, n)
        hist = np.bincount(values, minlength=width)
        q = hist / n
        dist = np.array([1.0])
        for _ in range(n):
            dist = np.convolve(dist, q)
        cdf = np.cumsum(dist)
        lo_k, hi_k = np.argmax(cdf >= 0.025 - 1e-9), np.argmax(cdf >= 0.975 - 1e-9)
        lo, hi = stats.lattice_bootstrap_interval(hist[None], scale)
        assert lo[0] == pytest.approx(lo_k / (n * scale) - 1, abs=1e-12)
        assert hi[0] == pytest.approx(hi_k / (n * scale) - 1, abs=1e-12)
        mc_lo, mc_hi = stats.lattice_bootstrap_interval(hist[None], scale, max_points=1, resamples=20000)
        assert abs(mc_lo[0] - lo[0]) <= 2 / (n * scale) + 1e-9 and abs(mc_hi[0] - hi[0]) <= 2 / (n * scale) + 1e-9


def test_cluster_variance_matches_statsmodels_one_and_two_way():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n_pairs, n_raters = int(rng.integers(20, 80)), int(rng.integers(10, 20))
        cells = rng.choice(n_pairs * n_raters, size=int(n_pairs * n_raters * 0.4), replace=False)
        pair, rater = cells // n_raters, cells % n_raters  # each rater rates a pair at most once
        y = (rng.random(len(cells)) < 0.3 + 0.05 * (rater % 5)).astype(float)
        ols = sm.OLS(y, np.ones(len(y))).fit()
        both, one_pair, _one_rater = sandwich.cov_cluster_2groups(ols, pair, rater)
        e = (y - y.mean()) / len(y)
        group = np.zeros(len(y), np.int64)
        v, _, _, two_way = stats.cluster_variance(e, group, 1, pair, rater)
        assert two_way[0]
        assert v[0] == pytest.approx(max(both[0, 0], one_pair[0, 0]), rel=1e-8)
        v1, *_ = stats.cluster_variance(e, group, 1, pair, rater, min_raters=10**6)  # one-way
        assert v1[0] == pytest.approx(sandwich.cov_cluster(ols, pair)[0, 0], rel=1e-8)
        # the proportions version, from counts, gives the same variance
        prop = stats.clustered_proportions(y, group, 1, pair, rater)
        assert prop["variance"][0] == pytest.approx(v[0], rel=1e-8)


def test_cluster_aware_share_counts_a_pair_once_when_all_agree():
    """12 pairs x 5 raters, all pass: the per-rating Wilson interval claims 60 observations; the cluster-aware one
    has 12 (one per pair)."""
    pair = np.repeat(np.arange(12), 5)
    rater = np.tile(np.arange(5), 12)
    res = stats.clustered_proportions(np.ones(60), np.zeros(60, np.int64), 1, pair, rater)
    assert res["n_eff"][0] == 12
    assert res["low"][0] == pytest.approx(stats.wilson(12, 12)[0], abs=1e-9)
    assert res["low"][0] < stats.wilson(60, 60)[0]


def test_paired_difference_is_vectorised_over_studies():
    """Several studies in one call give the same intervals as one call per study (what `evalkit plan` relies on)."""
    rng = np.random.default_rng(8)
    studies, pairs, raters = 5, 40, 3
    x = rng.choice([-1, 0, 1], size=studies * pairs * raters, p=[0.15, 0.7, 0.15]).astype(np.int8)
    pair = np.repeat(np.arange(studies * pairs), raters)
    rater = np.repeat(np.arange(studies), pairs * raters) * 12 + rng.integers(0, 12, studies * pairs * raters)
    pair_study = np.repeat(np.arange(studies), pairs)
    together = stats.paired_difference(x, pair, rater, pair_study, studies)
    for s in range(studies):
        sel = slice(s * pairs * raters, (s + 1) * pairs * raters)
        alone = stats.paired_difference(x[sel], pair[sel] - s * pairs, rater[sel], np.zeros(pairs, np.int64), 1)
        for key in ("difference", "low", "high", "tango_low", "bootstrap_low", "two_way_low"):
            assert together[key][s] == pytest.approx(alone[key][0], abs=1e-12, nan_ok=True)


def test_t_quantile_matches_scipy():
    from scipy.stats import t as student_t

    rng = np.random.default_rng(9)
    df = np.r_[np.exp(rng.uniform(np.log(0.5), np.log(1e4), 200)), 2e5, 3e6]
    p = np.r_[rng.uniform(0.0005, 0.9995, 200), 0.975, 0.025]
    got = stats.t_quantile(p, df)
    ref = student_t.ppf(p, df)
    assert np.max(np.abs(got - ref) / np.maximum(1, np.abs(ref))) < 1e-8
    assert stats.t_quantile(0.975, 9.0) == pytest.approx(2.2621571627, abs=1e-9)
    assert stats.t_quantile(0.975, np.inf) == pytest.approx(Z95, abs=1e-12) and np.isnan(stats.t_quantile(0.975, 0))


def _cr2_direct(x, w, cluster):
    """CR2 of the weighted mean from explicit matrices (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018 for
    WLS, working covariance W^-1): in the whitened space X~ = W^1/2 1, e~ = W^1/2 e, each cluster's adjustment
    is the symmetric inverse square root of I - H~_gg."""
    xt = np.sqrt(w)[:, None]
    m = 1 / float((xt.T @ xt)[0, 0])
    beta = m * float(xt[:, 0] @ (np.sqrt(w) * x))
    et = np.sqrt(w) * (x - beta)
    h = xt @ xt.T * m
    meat = 0.0
    for g in np.unique(cluster):
        i = cluster == g
        val, vec = np.linalg.eigh(np.eye(i.sum()) - h[np.ix_(i, i)])
        adjust = vec @ np.diag(1 / np.sqrt(np.clip(val, 1e-300, None))) @ vec.T
        meat += float((xt[i].T @ adjust @ et[i])[0]) ** 2
    return m * meat * m, beta


def _bm_df_direct(w, cluster):
    """Bell-McCaffrey degrees of freedom of the one-way CR2 variance under working independence: tr(B)^2 / tr(B^2),
    B = C' (I - H) (I - H)' C, C the adjusted, scaled cluster columns (explicit N x N matrices)."""
    xt = np.sqrt(w)[:, None]
    m = 1 / float((xt.T @ xt)[0, 0])
    n = len(w)
    h = xt @ xt.T * m
    groups = np.unique(cluster)
    c = np.zeros((n, len(groups)))
    for k, g in enumerate(groups):
        i = cluster == g
        val, vec = np.linalg.eigh(np.eye(i.sum()) - h[np.ix_(i, i)])
        c[i, k] = (vec @ np.diag(1 / np.sqrt(val)) @ vec.T @ xt[i])[:, 0] * m
    rest = np.eye(n) - h
    b = c.T @ rest @ rest.T @ c
    return np.trace(b) ** 2 / np.trace(b @ b)


def _random_study(rng, unequal=True):
    n_pairs, n_raters = int(rng.integers(15, 40)), int(rng.integers(3, 12))
    pair, rater = [], []
    for p in range(n_pairs):
        size = int(rng.integers(1, 4)) if unequal else 3
        chosen = rng.choice(n_raters, size=min(size, n_raters), replace=False)
        pair += [p] * len(chosen)
        rater += list(chosen)
    pair, rater = np.array(pair), np.array(rater)
    x = rng.choice([-1, 0, 1], size=len(pair), p=[0.2, 0.6, 0.2]).astype(float)
    return x, pair, rater, n_pairs


def test_cr2_two_way_matches_direct_matrices_and_statsmodels():
    """Each part of the two-way CR2 variance against the explicit-matrix CR2 (pairs, raters) and statsmodels' HC2
    (single ratings); the rater degrees of freedom against the explicit Bell-McCaffrey formula; the skewness against
    the cubed cluster sums; unequal raters per pair and unequal rater loads (weights differ within a study)."""
    rng = np.random.default_rng(10)
    for _ in range(12):
        x, pair, rater, n_pairs = _random_study(rng)
        r_p = np.bincount(pair)
        w = 1 / (n_pairs * r_p[pair])
        d = stats.paired_difference(x, pair, rater, np.zeros(n_pairs, np.int64), 1)["difference"][0]
        got = stats.cr2_two_way(x - d, w, pair, rater, np.zeros(len(x), np.int64), 1)
        v_pair, beta = _cr2_direct(x, w, pair)
        v_rater, _ = _cr2_direct(x, w, rater)
        v_one, _ = _cr2_direct(x, w, np.arange(len(x)))
        hc2 = sm.WLS(x, np.ones(len(x)), weights=w).fit(cov_type="HC2").cov_params()[0, 0]
        assert beta == pytest.approx(d, abs=1e-12)
        assert got["pair"][0] == pytest.approx(v_pair, rel=1e-9)
        assert got["rater"][0] == pytest.approx(v_rater, rel=1e-9)
        assert got["rating"][0] == pytest.approx(v_one, rel=1e-9) and v_one == pytest.approx(hc2, rel=1e-9)
        assert got["variance"][0] == pytest.approx(max(v_pair + v_rater - v_one, v_pair, v_rater), rel=1e-9)
        assert got["df"][0] == pytest.approx(_bm_df_direct(w, rater), rel=1e-9)
        k3 = 0.0
        for key, sign in ((pair, 1), (rater, 1), (np.arange(len(x)), -1)):
            for g in np.unique(key):
                i = key == g
                s = min(w[i].sum(), 0.45)
                k3 += sign * float((w[i] * (x[i] - d)).sum()) ** 3 / ((1 - s) * (1 - 2 * s))
        assert got["skewness"][0] == pytest.approx(k3 / got["variance"][0] ** 1.5, rel=1e-9, abs=1e-12)


def test_cr2_equals_cr1_when_raters_share_the_work_equally():
    """Every rater rates every pair once: each rater carries 1/G of the weight, so CR2's 1 / (1 - s) is CR1's
    G / (G - 1), and the two-way variance equals statsmodels' two-way cluster-robust one; df = G - 1."""
    rng = np.random.default_rng(11)
    n_pairs, n_raters = 30, 10
    pair = np.repeat(np.arange(n_pairs), n_raters)
    rater = np.tile(np.arange(n_raters), n_pairs)
    x = rng.choice([-1, 0, 1], size=len(pair), p=[0.25, 0.5, 0.25]).astype(float)
    w = np.full(len(x), 1 / len(x))
    got = stats.cr2_two_way(x - x.mean(), w, pair, rater, np.zeros(len(x), np.int64), 1)
    both, _one_pair, _one_rater = sandwich.cov_cluster_2groups(sm.OLS(x, np.ones(len(x))).fit(), pair, rater)
    # statsmodels' CR1 single-rating part carries N / (N - 1); HC2's is 1 / (1 - 1/N): the same factor
    assert got["variance"][0] == pytest.approx(max(both[0, 0], got["pair"][0]), rel=1e-9)
    assert got["df"][0] == pytest.approx(n_raters - 1, rel=1e-12)


def test_paired_difference_rater_part_is_cr2_with_t_and_the_skew_correction():
    """paired_difference's two-way part for raters in general, recomputed from cr2_two_way: Student's t on its
    df, the long tail's side moved out by (2 t^2 + 1) / 6 times the skewness. Several studies in one call."""
    rng = np.random.default_rng(12)
    xs, pairs, raters, pair_study, offset = [], [], [], [], 0
    for s in range(6):
        x, pair, rater, n_pairs = _random_study(rng)
        xs.append(x)
        pairs.append(pair + offset)
        raters.append(rater + 100 * s)
        pair_study += [s] * n_pairs
        offset += n_pairs
    x, pair, rater, pair_study = map(np.concatenate, (xs, pairs, raters, [pair_study]))
    res = stats.paired_difference(x, pair, rater, pair_study, 6)
    r_p = np.bincount(pair)
    n = np.bincount(pair_study)
    study = pair_study[pair]
    w = 1 / (n[study] * r_p[pair])
    d = res["difference"]
    ref = stats.cr2_two_way(x - d[study], w, pair, rater, study, 6)
    from scipy.stats import t as student_t

    t = student_t.ppf(0.975, ref["df"])
    shift = (2 * t * t + 1) / 6
    lo = np.maximum(d - (t + shift * np.maximum(-ref["skewness"], 0)) * np.sqrt(ref["variance"]), -1)
    hi = np.minimum(d + (t + shift * np.maximum(ref["skewness"], 0)) * np.sqrt(ref["variance"]), 1)
    assert np.allclose(res["two_way_low"], lo, atol=1e-8) and np.allclose(res["two_way_high"], hi, atol=1e-8)
    assert np.allclose(res["two_way_df"], ref["df"]) and (res["raters"] == ref["raters"]).all()
    union = stats.paired_difference(x, pair, rater, pair_study, 6, interval=stats.UNION)
    assert np.allclose(union["low"], np.minimum(np.minimum(res["two_way_low"], res["tango_low"]), res["bootstrap_low"]))
    # the default interval: the same variance and skew term on the Satterthwaite df, and the score floor
    t = student_t.ppf(0.975, ref["df_total"])
    shift = (2 * t * t + 1) / 6
    lo = np.maximum(d - (t + shift * np.maximum(-ref["skewness"], 0)) * np.sqrt(ref["variance"]), -1)
    assert np.allclose(res["t_low"], lo, atol=1e-8) and (ref["df_total"] >= ref["df"] - 1e-9).all()
    assert np.allclose(res["low"], np.minimum(res["t_low"], res["score_low"]))


def test_one_rater_says_nothing_about_raters_in_general():
    pair = np.arange(30)
    res = stats.paired_difference(np.zeros(30), pair, np.zeros(30, np.int64), np.zeros(30, np.int64), 1)
    assert res["two_way_low"][0] == -1 and res["two_way_high"][0] == 1 and res["low"][0] == -1
    these = stats.paired_difference(np.zeros(30), pair, np.zeros(30, np.int64), np.zeros(30, np.int64), 1,
                                    raters_in_general=False)
    assert these["low"][0] == pytest.approx(-Z95**2 / (30 + Z95**2), abs=1e-9)  # Tango's, the rater part left out


def test_raters_who_judge_the_paths_differently_widen_the_interval_for_raters_in_general():
    """Five raters whose own assisted - ordinary difference varies (rater x path sd 1.5 on the logit scale), a true
    population drop equal to the margin: the interval for these raters (today's: no rater dimension below 10
    raters) lets the criterion pass far more often than its 2.5%; the interval for raters in general (the CR2 t
    part near 4 df) stays under 5% (3.5% measured; the union with Tango 2.0%). With five raters no interval here
    holds 2.5%: the gate's default min_raters = 10 refuses such a study outright."""
    from evalkit.study.plan import StudyModel, criterion_passes, simulate
    from evalkit.task.prompts import CRITERIA

    c = CRITERIA[0]
    model = StudyModel(pass_rates={c: 0.8}, rater_accuracy=0.95, raters=5, rater_path_sd=1.5, raters_per_pair=3)
    sim = simulate(model, 300, 400, {c: 0.1}, np.random.default_rng(1), criteria=(c,))
    these = criterion_passes(sim, 400, 0.1, 0.95, 2000, claim="these raters")[c].mean()
    general = criterion_passes(sim, 400, 0.1, 0.95, 2000, min_raters=2)[c].mean()
    assert these > 0.08 and general < 0.05
    assert criterion_passes(sim, 400, 0.1, 0.95, 2000)[c].sum() == 0  # min_raters = 10: never


def test_score_floor_is_tango_where_raters_agree_and_never_collapses():
    """The floor of the gate's interval: Tango's score interval on the pair means' first two moments. Pair means in
    {-1, 0, 1} (raters agree): Tango's interval on the true counts. Every answer agrees: -z^2 / (n + z^2), while the
    t part alone has width 0 (no variance to estimate): the floor is what keeps the gate's interval open."""
    rng = np.random.default_rng(21)
    for _ in range(50):
        n = int(rng.integers(10, 300))
        d = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.1, 0.8, 0.1])
        got = stats.score_floor(d, np.zeros(n, np.int64), 1, Z95)
        ref = stats.tango_interval((d == 1).sum(), (d == -1).sum(), n, Z95)
        assert np.allclose(np.ravel(got), np.ravel(ref), rtol=0, atol=1e-10)
    # raters who disagree: E[d^2] instead of Tango's bound E|d| on rater-averaged counts, so narrower
    d = rng.choice([-1 / 3, 0.0, 1 / 3], size=300, p=[0.15, 0.75, 0.1])
    lo, _hi = stats.score_floor(d, np.zeros(300, np.int64), 1, Z95)
    t_lo, _ = stats.tango_interval(300 * (d > 0).mean() / 3, 300 * (d < 0).mean() / 3, 300, Z95)
    assert float(t_lo) < lo[0] < d.mean()
    pairs, raters = 1855, 3
    pair = np.repeat(np.arange(pairs), raters)
    res = stats.paired_difference(np.zeros(pairs * raters, np.int8), pair, np.arange(pairs * raters) % 10,
                                  np.zeros(pairs, np.int64), 1)
    assert res["t_low"][0] == 0 and res["t_high"][0] == 0
    assert res["low"][0] == pytest.approx(-Z95**2 / (pairs + Z95**2), abs=1e-12) and res["low"][0] < -0.002


def test_identical_pairs_are_exact_zeros_and_a_cluster_of_their_own():
    """A pair with identical outputs counts as an exact zero without ratings (any ratings of it are ignored). In the
    two-way variance it is a pseudo-rating in a pair cluster and a rater cluster of its own, whose rater and
    single-rating terms cancel: the same variance as one rating x = 0 by a rater seen nowhere else. The pair part,
    the regression of the pair means (zeros included) on a constant, is statsmodels' HC2."""
    rng = np.random.default_rng(22)
    x, pair, rater, n_pairs = _random_study(rng)
    n_same = 25
    identical = np.r_[np.zeros(n_pairs, bool), np.ones(n_same, bool)]
    stray = np.array([0, 1, 0])  # ratings of identical pairs (from before they left the queue): ignored
    got = stats.paired_difference(np.r_[x, stray], np.r_[pair, n_pairs + np.arange(3)], np.r_[rater, [0, 1, 2]],
                                  np.zeros(n_pairs + n_same, np.int64), 1, identical=identical)
    ref = stats.paired_difference(np.r_[x, np.zeros(n_same)], np.r_[pair, n_pairs + np.arange(n_same)],
                                  np.r_[rater, 1000 + np.arange(n_same)], np.zeros(n_pairs + n_same, np.int64), 1)
    assert got["pairs"][0] == n_pairs + n_same and got["identical"][0] == n_same and got["ratings"][0] == len(x)
    for key in ("difference", "var", "var_pair", "score_low", "tango_low", "bootstrap_low"):
        assert got[key][0] == pytest.approx(ref[key][0], rel=1e-12, abs=1e-15), key
    assert got["raters"][0] == len(np.unique(rater))  # identical pairs bring no rater
    d_p = np.r_[np.bincount(pair, weights=x) / np.bincount(pair), np.zeros(n_same)]
    hc2 = sm.OLS(d_p, np.ones(len(d_p))).fit(cov_type="HC2").cov_params()[0, 0]
    assert got["var_pair"][0] == pytest.approx(hc2, rel=1e-10)
    # one-way clustering by rater of the same mean: statsmodels' cluster-robust variance (CR1), taken back to CR0
    # and compared with the rater part without CR2's factors, on a study where raters share the work equally
    x, pair, rater, n_pairs = _random_study(rng, unequal=False)
    res = stats.paired_difference(x, pair, rater, np.zeros(n_pairs, np.int64), 1)
    w = 1 / (n_pairs * np.bincount(pair)[pair])
    e = w * (x - res["difference"][0])
    cr0 = (np.bincount(rater, weights=e) ** 2).sum()
    fit = sm.WLS(x, np.ones(len(x)), weights=w).fit(cov_type="cluster", cov_kwds={"groups": rater, "use_correction": False})
    assert fit.params[0] == pytest.approx(res["difference"][0], rel=1e-12)
    assert fit.cov_params()[0, 0] == pytest.approx(cr0 / (w.sum() ** 2) * 1.0, rel=1e-9)


def test_the_t_part_takes_the_raters_share_pessimistically():
    """t_df against the formula written out with scipy's chi-square: Satterthwaite's df for two parts,
    1 / (f^2 / df_r + (1 - f)^2 / (n - 1)), f the raters' excess share at the rater part's upper 99% bound, never
    below df_r. And Wilson-Hilferty's chi-square quantile against scipy's."""
    from scipy.stats import chi2

    for df in (1, 2, 3, 5, 9, 12, 19, 40, 200):  # below the exact quantile (the pessimistic side); close from 9 df
        ratio = float(stats.clustered.chi2_quantile(0.01, df)) / chi2.ppf(0.01, df)
        assert ratio <= 1 and (df < 9 or ratio > 0.97)
    rng = np.random.default_rng(23)
    for _ in range(20):
        x, pair, rater, n_pairs = _random_study(rng)
        res = stats.paired_difference(x, pair, rater, np.zeros(n_pairs, np.int64), 1)
        df_r, v = res["two_way_df"][0], res["var"][0]
        chi = float(stats.clustered.chi2_quantile(0.01, df_r))
        upper = res["var_rater"][0] * df_r / chi if chi > 0 else math.inf
        excess = min(max(res["var_rater"][0] - res["var_rating"][0], 0), v)
        hi = max(upper - res["var_rating"][0], 0)
        f = 1.0 if math.isinf(hi) or v - excess + hi <= 0 else hi / (v - excess + hi)
        want = max(1 / (f * f / df_r + (1 - f) ** 2 / (n_pairs - 1)), df_r)
        assert res["t_df"][0] == pytest.approx(want, rel=1e-9)
    # a study whose raters add nothing: the df grows beyond G - 1, and the t interval is narrower than the
    # CR2 part on G - 1 (the previous version's) on the same variance
    n, g = 2000, 10
    pair = np.repeat(np.arange(n), 3)
    rater = (pair + np.tile(np.arange(3), n)) % g
    x = rng.choice([-1, 0, 1], size=3 * n, p=[0.05, 0.9, 0.05])
    res = stats.paired_difference(x, pair, rater, np.zeros(n, np.int64), 1)
    assert res["t_df"][0] > 2 * (g - 1) and res["t_low"][0] > res["two_way_low"][0]


def test_speedup_leaves_out_a_prompt_whose_ratio_cannot_be_formed():
    """A prompt whose denominator is 0 (an ordinary output with 0 new tokens: 0 tokens per second) has no ratio:
    it is left out of the point and the interval, and named, instead of dividing by zero; a prompt with only some
    zero denominators too, since a resample of its pairs can have a median of 0 (an infinite or undefined ratio that
    would reach the interval). The other prompts' figure is what it would be without that prompt."""
    from evalkit.stats.speedup import speedup_over_prompts, speedup_with_left_out, unformed_prompts

    good = {"a": ([2.0, 2.2, 1.9, 2.1], [1.0, 1.1, 0.9, 1.0]), "b": ([3.0, 3.3, 2.9], [1.4, 1.6, 1.5])}
    empty = {"empty": ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])}  # both outputs empty: 0 / 0
    some = {"some": ([40.0, 41.0, 39.0, 42.0, 40.0], [20.0, 0.0, 21.0, 19.0, 20.0])}
    assert unformed_prompts({**good, **empty, **some}) == {"empty": 3, "some": 1}
    point, ci, left_out = speedup_with_left_out({**good, **empty, **some}, resamples=500)
    assert left_out == {"empty": 3, "some": 1}
    assert (point, ci) == speedup_over_prompts(good, resamples=500)
    assert all(math.isfinite(v) for v in (point, *ci))
    assert speedup_over_prompts(empty, resamples=500) == (None, None)
    assert speedup_over_prompts({"n": ([1.0, float("nan")], [1.0, 1.0])}) == (None, None)


def test_the_speed_up_s_intervals_agree_with_scipy_where_they_overlap():
    """The speed-up's two intervals against scipy on the same numbers (sceptic audit, 2026-12-06). The unit of the
    pair bootstrap is the pair (an ordinary and an assisted run of one prompt, round and seed), never the token: with
    one prompt the median over prompts is that prompt's ratio of medians, and the interval is scipy.stats.bootstrap's
    paired percentile interval of median(ordinary) / median(assisted) (both Monte Carlo: agreement to the draws'
    noise). The between-rounds interval is Student's t on the logarithms of the rounds' own speed-ups: around their
    geometric mean it is scipy's one-sample t interval of those logarithms, exponentiated (so it is on the ratio's
    log scale, never symmetric in the ratio)."""
    from scipy import stats as sps

    from evalkit.stats.speedup import between_rounds_interval, speedup_with_left_out

    rng = np.random.default_rng(7)
    ordinary = rng.lognormal(np.log(2.0), 0.15, 40)
    assisted = ordinary / rng.lognormal(np.log(1.4), 0.2, 40)  # paired: the same request's two runs
    point, ci, _ = speedup_with_left_out({"p": (list(ordinary), list(assisted))}, resamples=20000, seed=3)
    assert point == pytest.approx(np.median(ordinary) / np.median(assisted))
    ref = sps.bootstrap((ordinary, assisted), lambda o, a, axis: np.median(o, axis=axis) / np.median(a, axis=axis),
                        paired=True, vectorized=True, method="percentile", n_resamples=20000, rng=np.random.default_rng(4))
    lo, hi = ref.confidence_interval
    assert ci == pytest.approx((lo, hi), rel=0.02)

    rounds = [1.31, 1.52, 1.44, 1.29, 1.47]
    logs = np.log(rounds)
    centre = float(np.exp(logs.mean()))
    ref_t = sps.ttest_1samp(logs, 0.0).confidence_interval(0.95)
    assert between_rounds_interval(centre, rounds) == pytest.approx((np.exp(ref_t.low), np.exp(ref_t.high)), rel=1e-9)
