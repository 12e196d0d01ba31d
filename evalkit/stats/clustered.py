"""Cluster-aware inference for ratings: the units of evidence are the pair and the rater; see the README's "The
decision". Tango's score interval, the exact pair bootstrap, cluster-robust variances (CR1; two-way CR2 with its
degrees of freedom and skewness), and the fidelity gate's paired difference, vectorised over studies so that
`evalkit plan` and `scripts/errorbench.py` run the very same function."""

from __future__ import annotations

import math

from .descriptive import t_quantile, wilson_array, z_for


# Two-way clustering (pairs and raters) needs enough raters for the rater dimension to carry a variance:
# cluster-robust variances are unreliable with fewer than about ten clusters (Cameron & Miller 2015).
MIN_RATERS_TWO_WAY = 10


def tango_interval(b, c, n, z: float = 1.959964, iterations: int = 60):
    """Tango's (1998) score interval for a paired difference of proportions, vectorised.

    b: pairs where only the first member passed (here: assisted passed, ordinary did not), c: pairs where only
    the second did, n: pairs; the difference is (b - c) / n. Counts may be fractional: with several raters per
    pair evalkit passes rater-averaged counts, and Tango's variance, (p_b + p_c - d^2) / n, then bounds the true
    variance of the pair means from above (exactly right when a pair's raters agree), so the interval stays
    valid whatever the correlation within a pair. Unlike a Wald or bootstrap interval it does not collapse
    when no pair is discordant: b = c = 0 gives a lower end of -z^2 / (n + z^2). NaN where n <= 0."""
    import numpy as np

    b, c, n = np.broadcast_arrays(*(np.asarray(v, float) for v in (b, c, n)))
    ok = n > 0
    n_ = np.where(ok, n, 1.0)
    est = np.where(ok, (b - c) / n_, 0.0)

    def score(delta):
        # constrained maximum-likelihood estimate of P(only the second member passes) given the difference
        w = -b - c + (2 * n_ - b + c) * delta
        p21 = (np.sqrt(np.clip(w * w + 8 * n_ * c * delta * (1 - delta), 0, None)) - w) / (4 * n_)
        var = n_ * (2 * p21 + delta * (1 - delta))
        num = b - c - n_ * delta
        with np.errstate(divide="ignore", invalid="ignore"):
            out = num / np.sqrt(np.clip(var, 0, None))
        return np.where(var > 1e-300, out, np.where(num > 0, np.inf, np.where(num < 0, -np.inf, 0.0)))

    lo_a, lo_b = np.full_like(est, -1.0), est.copy()  # score(-1) = +inf >= z, score(est) = 0 < z
    hi_a, hi_b = est.copy(), np.full_like(est, 1.0)   # score(est) = 0 > -z, score(1) = -inf
    for _ in range(iterations):
        mid = (lo_a + lo_b) / 2
        above = score(mid) > z
        lo_a, lo_b = np.where(above, mid, lo_a), np.where(above, lo_b, mid)
        mid = (hi_a + hi_b) / 2
        below = score(mid) < -z
        hi_a, hi_b = np.where(below, hi_a, mid), np.where(below, mid, hi_b)
    lo, hi = lo_b, hi_a
    lo = np.where(est <= -1, -1.0, lo)
    hi = np.where(est >= 1, 1.0, hi)
    return np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)


def lattice_bootstrap_interval(hist, scale: int, confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
                               max_points: int = 1 << 23):
    """Percentile interval of a mean over pairs under the pair (cluster) bootstrap, computed exactly.

    hist: (studies, 2 * scale + 1) counts of pairs whose value is (k - scale) / scale, k = 0 .. 2 * scale
    (pair means of rater answers lie on such a lattice). Resampling n pairs with replacement gives a sum
    distributed as the n-fold convolution of the empirical distribution: evalkit computes it with one FFT per
    study (the ideal bootstrap, no Monte-Carlo noise, same answer every run), on a window around the mean wide
    enough that Hoeffding's bound leaves less than 1e-12 of the mass outside it, falling back to `resamples`
    multinomial draws only when that window would exceed max_points. Returns (low, high) per study."""
    import numpy as np

    hist = np.atleast_2d(np.asarray(hist, float))
    studies, width = hist.shape
    n = hist.sum(axis=1)
    alpha = 1 - confidence
    lo, hi = np.full(studies, np.nan), np.full(studies, np.nan)
    ok = n > 0
    if not ok.any():
        return lo, hi
    nmax = int(n[ok].max())
    span = width - 1  # range of one draw in lattice steps
    full = nmax * span + 1  # support of the sum of lattice indices
    # P(|sum - mean| >= t) <= 2 exp(-2 t^2 / (n span^2)) < 1e-12 (Hoeffding)
    half = int(math.ceil(span * math.sqrt(nmax * math.log(2e12) / 2))) + 2
    length = min(full, 2 * half + 1)
    if length <= max_points:
        nfft = 1 << (length - 1).bit_length()
        steps = np.arange(width)
        chunk = max(1, (1 << 21) // nfft)
        idx = np.flatnonzero(ok)
        for start in range(0, len(idx), chunk):
            sel = idx[start:start + chunk]
            ns = n[sel, None]
            q = hist[sel] / ns
            spec = np.fft.rfft(q, nfft, axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                power = np.exp(ns * np.log(spec))  # |spec| <= 1: the n-th power, tiny values stay tiny
            power[~np.isfinite(power)] = 0
            dist = np.fft.irfft(power, nfft, axis=1)  # P(sum = j modulo nfft)
            # read the circle as the window [base, base + nfft) around each study's mean sum
            base = np.rint(ns[:, 0] * (q @ steps)).astype(np.int64) - nfft // 2
            base = np.clip(base, 0, None) if length == full else base
            cols = (base[:, None] + np.arange(nfft)) % nfft
            window = np.take_along_axis(dist, cols, axis=1)
            cdf = np.cumsum(np.clip(window, 0, None), axis=1)
            cdf /= cdf[:, -1:]
            eps = 1e-9  # FFT round-off: a CDF that reaches alpha/2 exactly counts as reaching it
            k_lo = base + np.argmax(cdf >= alpha / 2 - eps, axis=1)
            k_hi = base + np.argmax(cdf >= 1 - alpha / 2 - eps, axis=1)
            denom = ns[:, 0] * span / 2
            lo[sel], hi[sel] = k_lo / denom - 1, k_hi / denom - 1
        return lo, hi
    rng = np.random.default_rng(seed)
    values = (np.arange(width) - span / 2) / (span / 2)
    for i in np.flatnonzero(ok):
        counts = rng.multinomial(int(n[i]), hist[i] / n[i], size=resamples)
        means = counts @ values / n[i]
        lo[i], hi[i] = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return lo, hi


def cluster_variance(e, group, n_groups: int, pair_key, rater_key, min_raters: int = MIN_RATERS_TWO_WAY):
    """Cluster-robust variance of linear estimators theta_g = sum_j w_j y_j, one per group g.

    e: per rating, w_j * (y_j - theta_g) (the estimator's influence); group: per rating, its group; pair_key,
    rater_key: per rating, small non-negative cluster ids, each id within one group only (callers offset ids
    by group). One-way over pairs, and where a group has at least `min_raters` raters the two-way variance of
    Cameron, Gelbach & Miller (2011): pairs + raters - their intersection (one rating), never below the
    one-way value. Each part carries the G / (G - 1) small-sample factor. Returns (variance, pairs, raters,
    two_way_used) per group."""
    import numpy as np

    e = np.asarray(e, float)
    group = np.asarray(group, np.int64)

    def part(key):
        key = np.asarray(key, np.int64)
        size = int(key.max()) + 1 if len(key) else 0
        sums = np.bincount(key, weights=e, minlength=size)
        used = np.bincount(key, minlength=size) > 0
        key_group = np.zeros(size, np.int64)
        key_group[key] = group
        count = np.bincount(key_group[used], minlength=n_groups).astype(float)
        ss = np.bincount(key_group[used], weights=sums[used] ** 2, minlength=n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count > 1, ss * count / (count - 1), 0.0), count

    v_pair, n_pairs = part(pair_key)
    v_rater, n_raters = part(rater_key)
    n_ratings = np.bincount(group, minlength=n_groups).astype(float)
    ss = np.bincount(group, weights=e * e, minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        v_one = np.where(n_ratings > 1, ss * n_ratings / (n_ratings - 1), 0.0)
    two_way = n_raters >= min_raters
    v = np.where(two_way, np.maximum(v_pair + v_rater - v_one, v_pair), v_pair)
    return v, n_pairs, n_raters, two_way


def proportions_from_counts(k_pair, m_pair, pair_group, k_rater, m_rater, rater_group, n_groups: int,
                            z: float = 1.959964, min_raters: int = MIN_RATERS_TWO_WAY) -> dict:
    """Share of "yes" answers per group with a cluster-aware Wilson interval (Korn & Graubard 1998), from counts
    per cluster: k_pair / m_pair are the yes answers / answers of each pair cluster, pair_group its group, and
    likewise for rater clusters. The interval is Wilson's at the effective sample size p(1 - p) / Var, with Var the
    cluster-robust variance of the share (as cluster_variance: pairs; two-way with raters when a group has at
    least `min_raters`). When every answer agrees (p = 0 or 1) there is no variance to estimate and the effective
    size is the number of pairs: a pair's ratings count as one. It never exceeds the number of ratings."""
    import numpy as np

    k_pair, m_pair = np.asarray(k_pair, float), np.asarray(m_pair, float)
    k_rater, m_rater = np.asarray(k_rater, float), np.asarray(m_rater, float)
    pair_group, rater_group = np.asarray(pair_group, np.int64), np.asarray(rater_group, np.int64)
    n = np.bincount(pair_group, weights=m_pair, minlength=n_groups)
    k = np.bincount(pair_group, weights=k_pair, minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, k / n, np.nan)

    def part(kc, mc, g):
        used = mc > 0
        g = g[used]
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (kc[used] - mc[used] * p[g]) / n[g]  # the cluster's summed influence on the share
        count = np.bincount(g, minlength=n_groups).astype(float)
        ss = np.bincount(g, weights=s * s, minlength=n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count > 1, ss * count / (count - 1), 0.0), count

    v_pair, pairs = part(k_pair, m_pair, pair_group)
    v_rater, raters = part(k_rater, m_rater, rater_group)
    with np.errstate(divide="ignore", invalid="ignore"):
        v_one = np.where(n > 1, p * (1 - p) / (n - 1), 0.0)  # one rating per cluster, with its N / (N - 1)
    two_way = raters >= min_raters
    var = np.where(two_way, np.maximum(v_pair + v_rater - v_one, v_pair), v_pair)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(var > 0, p * (1 - p) / var, pairs)
    n_eff = np.where(n > 0, np.clip(n_eff, 1.0, np.maximum(n, 1.0)), 0.0)
    lo, hi = wilson_array(p * n_eff, n_eff, z)
    with np.errstate(invalid="ignore"):  # p * n_eff / n_eff need not be p to the last bit: the interval holds p
        lo, hi = np.where(n > 0, np.minimum(lo, p), lo), np.where(n > 0, np.maximum(hi, p), hi)
    return {"n": n, "k": k, "p": p, "pairs": pairs, "raters": raters, "n_eff": n_eff, "low": lo, "high": hi,
            "two_way": two_way, "variance": var}


def clustered_proportions(y, group, n_groups: int, pair_key, rater_key, z: float = 1.959964,
                          min_raters: int = MIN_RATERS_TWO_WAY) -> dict:
    """proportions_from_counts from per-rating answers: y (0/1 per rating), its group, and pair / rater cluster
    ids that are each within one group (callers offset ids by group)."""
    import numpy as np

    y = np.asarray(y, float)
    group = np.asarray(group, np.int64)

    def counts(key):
        key = np.asarray(key, np.int64)
        size = int(key.max()) + 1 if len(key) else 0
        key_group = np.zeros(size, np.int64)
        key_group[key] = group
        return np.bincount(key, weights=y, minlength=size), np.bincount(key, minlength=size), key_group

    return proportions_from_counts(*counts(pair_key), *counts(rater_key), n_groups, z, min_raters)


def cr2_two_way(e, w, pair, rater, study, n_studies: int) -> dict:
    """Two-way (pairs x raters) cluster-robust variance of weighted means theta_s = sum_i w_i x_i (weights summing
    to 1 within each study), with the CR2 small-sample correction of Bell & McCaffrey (2002), and the degrees of
    freedom of its rater part. Vectorised over studies.

    e: per rating, x_i - theta_s (the residual); w: its weight; pair, rater: per rating, cluster ids unique across
    studies; study: per rating, its study. For the weighted mean (an intercept-only weighted regression, working
    covariance inverse to the weights) the CR2 adjustment of a cluster with weight share s is a factor 1 / (1 - s)
    on its squared weighted residual sum, so each one-way part is sum_g (sum_{i in g} w_i e_i)^2 / (1 - s_g): pairs
    (s = 1 / n, the same as CR1), raters (s_j the rater's share of the weight) and single ratings (HC2). The two-way
    variance is pairs + raters - single ratings (Cameron, Gelbach & Miller 2011), never below either one-way part.
    `df` is Bell & McCaffrey's Satterthwaite degrees of freedom of the rater part under working independence,
    1 / sum_gh B_gh^2 with B_gg = s_g, B_gh = -s_g s_h / sqrt((1 - s_g)(1 - s_h)): G - 1 when the G raters carry
    equal shares, fewer when a few raters carry most of the weight. Since the pair part has many more degrees of
    freedom, t on `df` is conservative for the sum. A study with one rater has no rater variance to estimate:
    infinite variance, df 0.

    `skewness` is that of the estimate, kappa_3 / variance^1.5, with kappa_3 from the same pairs + raters - single
    ratings decomposition of the cubed cluster sums, each with the small-sample factor 1 / ((1 - s)(1 - 2 s))
    (G^2 / ((G - 1)(G - 2)) for equal shares). Skewed rater effects (a few raters much harsher on one side) skew
    the estimate, and with few raters a symmetric t interval then misses on one side (see paired_difference)."""
    import numpy as np

    e, w = np.asarray(e, float), np.asarray(w, float)
    study = np.asarray(study, np.int64)
    we = w * e
    pairs = _cluster_sums(pair, w, we, study, n_studies)
    raters = _cluster_sums(rater, w, we, study, n_studies)
    return _cr2_combine(pairs, raters, _cr2_part(w, we * we, we * we * we, study, n_studies), n_studies)


def _cluster_sums(key, w, we, study, n_studies: int):
    """The _cr2_part (variance, third cumulant, clusters per study) of these clusters, then each cluster's weight
    share and study."""
    import numpy as np

    key = np.asarray(key, np.int64)
    size = int(key.max()) + 1 if len(key) else 0
    s = np.bincount(key, weights=w, minlength=size)
    t = np.bincount(key, weights=we, minlength=size)
    used = np.bincount(key, minlength=size) > 0
    owner = np.zeros(size, np.int64)
    owner[key] = study
    s, t, owner = s[used], t[used], owner[used]
    return _cr2_part(s, t * t, t * t * t, owner, n_studies) + (s, owner)


def _cr2_part(share, t2, t3, owner, n_studies: int):
    """One clustering's CR2 variance and third cumulant per study from each cluster's weight share and squared /
    cubed weighted residual sum (t2, t3 may be sums over clusters that share one weight, as single ratings of a
    pair do). A cluster that holds the whole study (its residual sum is 0) adds nothing."""
    import numpy as np

    alone = share >= 1 - 1e-12
    s_cap = np.minimum(share, 0.45)  # the third-moment factor needs s < 1/2; beyond, one cluster is most of the study
    v = np.bincount(owner, weights=np.where(alone, 0.0, t2 / np.where(alone, 1.0, 1 - share)), minlength=n_studies)
    k3 = np.bincount(owner, weights=np.where(alone, 0.0, t3 / ((1 - s_cap) * (1 - 2 * s_cap))), minlength=n_studies)
    return v, k3, np.bincount(owner, minlength=n_studies).astype(float)


# The rater part's variance is known to within its Bell-McCaffrey degrees of freedom; the t interval takes the
# raters' share of the variance at the upper end of this one-sided range (chi-square, 99%) when it sets its df.
DF_SHARE_LEVEL = 0.01


def chi2_quantile(q: float, df):
    """The q-quantile of chi-square with df degrees of freedom, Wilson & Hilferty's (1931) cube-root normal
    approximation, vectorised, numpy only. At q = 0.01 it lies below the exact quantile (checked against scipy in
    tests/test_stats.py: within 2.3% from 9 df on, the gate's min_raters of 10; 35% below at 3 df), so the upper
    bound it gives is, if anything, too high: the pessimistic side. Where it is not positive (df below about 2 at
    q = 0.01) it returns 0: the caller then reads the variance's upper bound as infinite."""
    from statistics import NormalDist

    import numpy as np

    df = np.asarray(df, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = 2 / (9 * df)
        base = 1 - c + NormalDist().inv_cdf(q) * np.sqrt(c)
    return np.where((df > 0) & (base > 0), df * np.clip(base, 0, None) ** 3, 0.0)


def _pessimistic_df(v, v_pair, v_rater, v_one, df_rater, n_pairs):
    """Degrees of freedom of the two-way variance v for the t interval: Satterthwaite's for two parts, the raters'
    excess over single ratings (share f, df_rater degrees of freedom) and the rest (n - 1),
    1 / (f^2 / df_rater + (1 - f)^2 / (n - 1)), with f taken pessimistically. The plug-in share is smallest in the
    studies whose rater variance came out too small, the very studies whose interval is then too narrow, so a
    plug-in df is liberal (measured: a criterion that truly drops by the margin passed in 2.6-3.8% of studies with
    10 raters and rater x path sd 0.5, against 1.6% on df_rater); f here uses the rater part's upper 99% bound,
    v_rater df_rater / chi2_0.01(df_rater). So the df stays near df_rater (G - 1) while the data cannot rule out
    that raters matter, and grows towards n - 1 only where they show the raters add little. Never below df_rater."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        chi = chi2_quantile(DF_SHARE_LEVEL, df_rater)
        upper = np.where(chi > 0, v_rater * df_rater / np.where(chi > 0, chi, 1.0), np.inf)
        excess = np.clip(v_rater - v_one, 0, v)
        excess_hi = np.clip(upper - v_one, 0, None)
        rest = np.clip(v - excess, 0, None)
        f = np.where(np.isfinite(excess_hi), excess_hi / (rest + excess_hi), 1.0)
        f = np.where(np.isnan(f), 1.0, f)  # 0 / 0: no variance at all
        inv = f * f / np.where(df_rater > 0, df_rater, np.nan) + (1 - f) ** 2 / np.maximum(n_pairs - 1, 1)
        out = np.where(inv > 0, 1 / inv, np.inf)
    return np.maximum(np.where(np.isnan(out), df_rater, out), df_rater)


def _cr2_combine(pairs, raters, single, n_studies: int) -> dict:
    import numpy as np

    v_pair, k3_pair = pairs[:2]
    v_rater, k3_rater, _count, s, owner = raters
    v_one, k3_one = single[:2]
    count = np.bincount(owner, minlength=n_studies).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.maximum(np.maximum(v_pair + v_rater - v_one, v_pair), v_rater)
        skewness = np.where(v > 0, (k3_pair + k3_rater - k3_one) / v ** 1.5, 0.0)
        # shares within the rater part: where identical pairs (no raters) hold part of the weight, the raters'
        # shares sum to less than 1, and the rater part's degrees of freedom depend only on how it is spread
        total = np.bincount(owner, weights=s, minlength=n_studies)
        s_n = s / np.where(total[owner] > 0, total[owner], 1.0)
        alone_n = s_n >= 1 - 1e-12
        q = np.where(alone_n, 0.0, s_n * s_n / np.where(alone_n, 1.0, 1 - s_n))
        sum_b2 = (np.bincount(owner, weights=s_n * s_n, minlength=n_studies)
                  + np.bincount(owner, weights=q, minlength=n_studies) ** 2
                  - np.bincount(owner, weights=q * q, minlength=n_studies))
        df = np.where(count >= 2, 1 / sum_b2, 0.0)
        df_total = _pessimistic_df(v, v_pair, v_rater, v_one, df, pairs[2])
    return {"variance": np.where(count >= 2, v, np.inf), "pair": v_pair, "rater": v_rater, "rating": v_one,
            "raters": count, "df": df, "df_total": np.where(count >= 2, df_total, 0.0),
            "skewness": np.where(count >= 2, skewness, 0.0)}


def _cr2_pair_means(x, pair, rater, pair_study, n, r_p, d_p, diff, n_studies: int, counted=None) -> dict:
    """cr2_two_way for paired_difference's estimator (w_i = 1 / (n_s R_p)), with the pair and single-rating parts
    summed per pair (x is -1, 0 or 1, so x^2 = |x| and x^3 = x): the same numbers, a third of the work.

    counted: per pair, does it count (default: rated). A counted pair without ratings (identical outputs, decided
    without raters: d_p = 0) is one pseudo-rating in a cluster of its own on both dimensions; its rater and
    single-rating terms cancel, so it enters the pair part only."""
    import numpy as np

    rated = r_p > 0
    counted = rated if counted is None else counted
    p_study = pair_study[counted]
    n_s = n[p_study]
    dev = d_p[counted] - diff[p_study]  # the pair's residual sum is dev / n_s
    pairs = _cr2_part(1 / n_s, (dev / n_s) ** 2, (dev / n_s) ** 3, p_study, n_studies)
    # single ratings of a pair: weight w = 1 / (n_s R); sum of e^2 and e^3 over the pair's ratings from its counts
    p_study, n_s = pair_study[rated], n[pair_study[rated]]
    r = r_p[rated]
    w = 1 / (n_s * r)
    sum_x = d_p[rated] * r
    study_of_rating = pair_study[pair]
    sum_abs = np.bincount(pair, weights=np.abs(x), minlength=len(r_p))[rated]
    m = diff[p_study]
    e2 = sum_abs - 2 * m * sum_x + r * m * m
    e3 = sum_x - 3 * m * sum_abs + 3 * m * m * sum_x - r * m ** 3
    single = _cr2_part(w, w * w * e2, w ** 3 * e3, p_study, n_studies)[:2] + (
        np.bincount(study_of_rating, minlength=n_studies).astype(float),)  # clusters: the ratings
    w_rating = 1 / (n[study_of_rating] * r_p[pair])
    raters = _cluster_sums(rater, w_rating, w_rating * (x - diff[study_of_rating]), study_of_rating, n_studies)
    return _cr2_combine(pairs, raters, single, n_studies)


def score_floor(d_p, pair_study, n_studies: int, z: float = 1.959964, counted=None):
    """Tango's score interval on the first two moments of the pair means: the counts b', c' of a pair-level
    trinomial (assisted only / ordinary only) with the same mean m1 and second moment m2 as the pair means d_p,
    b' - c' = n m1 and b' + c' = n max(m2, |m1|). Where a pair's raters agree (d_p in {-1, 0, 1}) this is Tango's
    interval on the true counts. Where they disagree it uses E[d^2], not the bound E|d| that Tango on
    rater-averaged counts uses (a pair mean of 1/3 counts 1/9, not 1/3), so it is about as wide as a Wald interval
    on the pair means where discordance is common; where it is rare its variance is taken under the null, not
    from the few discordant pairs seen, and it never collapses: when every answer agrees (m1 = m2 = 0) its lower
    end is -z^2 / (n + z^2) (Tango 1998), the floor that keeps the t interval from a width of zero."""
    import numpy as np

    d_p = np.asarray(d_p, float)
    counted = np.ones(len(d_p), bool) if counted is None else counted
    owner = np.asarray(pair_study, np.int64)[counted]
    n = np.bincount(owner, minlength=n_studies).astype(float)
    m1 = np.bincount(owner, weights=d_p[counted], minlength=n_studies)
    m2 = np.bincount(owner, weights=d_p[counted] ** 2, minlength=n_studies)
    spread = np.maximum(m2, np.abs(m1))
    return tango_interval((spread + m1) / 2, (spread - m1) / 2, n, z)


# The fidelity gate's interval (gate key `interval`): the default is the two-way CR2 t interval on the pair means
# with Satterthwaite degrees of freedom, floored by the score interval on their moments (score_floor); UNION is the
# previous version's, the union of Tango on rater-averaged counts, the pair bootstrap and the CR2 part on the rater
# part's degrees of freedom, which studies frozen under it keep.
T_FLOOR = "t with score floor"
UNION = "union with tango"
INTERVALS = (T_FLOOR, UNION)


def paired_difference(x, pair, rater, pair_study, n_studies: int, confidence: float = 0.95,
                      resamples: int = 2000, min_raters: int = MIN_RATERS_TWO_WAY,
                      raters_in_general: bool = True, identical=None, interval: str = T_FLOOR,
                      bootstrap: bool = True) -> dict:
    """The fidelity gate's interval for assisted - ordinary pass rate, one per study (vectorised so that
    `evalkit plan` can run thousands of simulated studies through this very function).

    x: per rating, (assisted passed) - (ordinary passed) in {-1, 0, 1}; pair: per rating, a pair index
    0 .. P-1 unique across studies; rater: per rating, a rater index unique across studies (offset each
    study's raters); pair_study: per pair, its study. Every pair counts once: its value is the mean of its
    raters' x. identical: per pair, are its two outputs the same tokens? Such a pair counts with the value 0
    whatever its ratings (it has none when the queue never served it): blind raters cannot tell its sides apart,
    so its difference is exactly zero on every criterion.

    The parts, each in its own keys:
    t_*      the two-way (pairs x raters) CR2 variance of the pair means (cr2_two_way) with Student's t on the
             Satterthwaite degrees of freedom of the parts (t_df: the pairs' n - 1 where the rater part is
             negligible, the rater part's Bell-McCaffrey df where it dominates, never below the latter); where
             the estimate is skewed (gamma, cr2_two_way's skewness) the end on the long tail's side moves out by
             the Cornish-Fisher term of the studentised mean, gamma (2 t^2 + 1) / 6 (Johnson 1978; Hall 1992).
             For the claim about these raters only: the CR1 variance over pairs (two-way from `min_raters`
             raters) with t on n - 1.
    score_*  score_floor: Tango's score interval on the pair means' first two moments.
    two_way_* the CR2 part as the previous version had it: the same variance, t on the rater part's df
             (two_way_df); for these raters CR1, normal quantile, only from `min_raters` raters.
    tango_*  Tango's score interval on the rater-averaged discordant counts (conservative when raters disagree).
    bootstrap_* the exact pair bootstrap percentile interval (bootstrap=False: skipped, NaN).
    low, high: `interval` T_FLOOR, the union of t and score (the t interval where the data carry a variance, the
    score floor where they carry little, as when every answer agrees); UNION, the previous version's union of
    tango, bootstrap and two_way.

    With raters_in_general (the gate's default claim, about raters like these) the rater part is always there, so
    rater-to-rater differences, also in how raters judge each path, are in the interval even with few raters (a
    study with one rater gets [-1, 1] from the t part)."""
    import math

    import numpy as np

    if interval not in INTERVALS:
        raise ValueError(f"interval {interval!r} is not one of {INTERVALS}")
    x = np.asarray(x, np.int64)
    pair = np.asarray(pair, np.int64)
    rater = np.asarray(rater, np.int64)
    pair_study = np.asarray(pair_study, np.int64)
    n_pairs_total = len(pair_study)
    if identical is not None:
        identical = np.asarray(identical, bool)
        if identical.any():  # their ratings (from before identical pairs left the queue) do not count
            keep = ~identical[pair]
            x, pair, rater = x[keep], pair[keep], rater[keep]
    z = z_for(confidence)
    r_p = np.bincount(pair, minlength=n_pairs_total).astype(float)
    a_p = np.bincount(pair, weights=(x == 1), minlength=n_pairs_total)
    o_p = np.bincount(pair, weights=(x == -1), minlength=n_pairs_total)
    rated = r_p > 0
    counted = rated | identical if identical is not None else rated
    r_safe = np.where(rated, r_p, 1.0)
    d_p = (a_p - o_p) / r_safe
    n = np.bincount(pair_study, weights=counted.astype(float), minlength=n_studies)
    b = np.bincount(pair_study, weights=a_p / r_safe, minlength=n_studies)
    c = np.bincount(pair_study, weights=o_p / r_safe, minlength=n_studies)
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.where(n > 0, (b - c) / n, np.nan)
    t_lo, t_hi = tango_interval(b, c, n, z)
    s_lo, s_hi = score_floor(d_p, pair_study, n_studies, z, counted)

    # pair bootstrap on the lattice of pair means: common denominator of the raters-per-pair counts
    b_lo = b_hi = np.full(n_studies, np.nan)
    if bootstrap or interval == UNION:
        counts = np.unique(r_p[rated]).astype(int)
        scale = 1
        for r in counts:
            scale = scale * int(r) // math.gcd(scale, int(r))
        k = np.rint(d_p * scale).astype(np.int64) + scale
        width = 2 * scale + 1
        hist = np.bincount(pair_study[counted] * width + k[counted],
                           minlength=n_studies * width).reshape(n_studies, width)
        b_lo, b_hi = lattice_bootstrap_interval(hist, scale, confidence, resamples)

    study_of_rating = pair_study[pair]
    q = 1 - (1 - confidence) / 2

    def around(var, quantile, skew=None):  # diff -/+ the quantile's multiple of the standard error, in [-1, 1]
        with np.errstate(invalid="ignore"):
            se = np.sqrt(var)
            shift = (2 * quantile * quantile + 1) / 6
            lean = np.zeros_like(diff) if skew is None else skew
            below = (quantile + np.where(lean < 0, shift * -lean, 0.0)) * se
            above = (quantile + np.where(lean > 0, shift * lean, 0.0)) * se
        return (np.where(n > 0, np.maximum(diff - below, -1.0), np.nan),
                np.where(n > 0, np.minimum(diff + above, 1.0), np.nan))

    if raters_in_general:
        cr2 = _cr2_pair_means(x, pair, rater, pair_study, n, r_p, d_p, diff, n_studies, counted)
        raters, df, skew = cr2["raters"], cr2["df"], cr2["skewness"]
        # no rated pair (every pair identical): each d is exactly 0 whoever rates, so no rater variance is missing
        # and the score floor alone bounds the pool's share of differing pairs; one rater of rated pairs gets [-1, 1]
        unrated = np.bincount(pair_study, weights=rated.astype(float), minlength=n_studies) == 0
        var = np.where(raters >= 2, cr2["variance"], np.where(unrated, 0.0, np.inf))
        t_df = cr2["df_total"]
        one = (raters < 2) & ~unrated  # no rater variance to estimate: [-1, 1]
        w_lo, w_hi = around(var, np.where(one, np.inf, t_quantile(q, np.where(df > 0, df, 1.0))), skew)
        c_lo, c_hi = around(var, np.where(one, np.inf, t_quantile(q, np.where(t_df > 0, t_df, 1.0))), skew)
        parts = {"var_pair": cr2["pair"], "var_rater": cr2["rater"], "var_rating": cr2["rating"], "var": var,
                 "skewness": skew}
    else:
        w = 1.0 / (n[study_of_rating] * r_p[pair])
        resid = x - diff[study_of_rating]
        # identical pairs: each a cluster of its own with residual -diff / n, in the pair part only
        n_ident = n - np.bincount(pair_study, weights=rated.astype(float), minlength=n_studies)
        var, _pairs, raters, two_way = cluster_variance(w * resid, study_of_rating, n_studies, pair, rater, min_raters)
        with np.errstate(divide="ignore", invalid="ignore"):
            var = var + np.where(n > 1, n_ident * (diff / n) ** 2 * n / (n - 1), 0.0)
        w_lo, w_hi = around(var, z)
        w_lo, w_hi = np.where(two_way, w_lo, np.nan), np.where(two_way, w_hi, np.nan)
        df = np.where(two_way, np.inf, np.nan)
        t_df = np.maximum(n - 1, 1.0)
        c_lo, c_hi = around(var, t_quantile(q, t_df))
        parts = {"var": var}
    with np.errstate(invalid="ignore"):
        if interval == T_FLOOR:
            low, high = np.fmin(c_lo, s_lo), np.fmax(c_hi, s_hi)
        else:
            low = np.fmin(np.fmin(t_lo, b_lo), w_lo)
            high = np.fmax(np.fmax(t_hi, b_hi), w_hi)
    return {"pairs": n, "ratings": np.bincount(study_of_rating, minlength=n_studies), "raters": raters,
            "identical": np.bincount(pair_study, weights=counted & ~rated, minlength=n_studies).astype(int),
            "difference": diff, "low": low, "high": high, "t_low": c_lo, "t_high": c_hi, "t_df": t_df,
            "score_low": s_lo, "score_high": s_hi, "tango_low": t_lo, "tango_high": t_hi,
            "bootstrap_low": b_lo, "bootstrap_high": b_hi, "two_way_low": w_lo, "two_way_high": w_hi,
            "two_way_df": df, "assisted_only": b, "ordinary_only": c, **parts}
