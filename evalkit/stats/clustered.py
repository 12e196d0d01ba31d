"""Cluster-aware inference for ratings: the unit of evidence is the pair (and, with enough raters, the rater); see
the README's "The decision". Tango's score interval, the exact pair bootstrap, cluster-robust variances, and the
fidelity gate's paired difference, vectorised over studies so that `evalkit plan` runs the very same function."""

from __future__ import annotations

import math

from .descriptive import wilson_array, z_for


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


def paired_difference(x, pair, rater, pair_study, n_studies: int, confidence: float = 0.95,
                      resamples: int = 2000, min_raters: int = MIN_RATERS_TWO_WAY) -> dict:
    """The fidelity gate's interval for assisted - ordinary pass rate, one per study (vectorised so that
    `evalkit plan` can run thousands of simulated studies through this very function).

    x: per rating, (assisted passed) - (ordinary passed) in {-1, 0, 1}; pair: per rating, a pair index
    0 .. P-1 unique across studies; rater: per rating, a rater index unique across studies (offset each
    study's raters); pair_study: per pair, its study. Every pair counts once: its value is the mean of its raters' x. The interval is the union
    of (1) Tango's score interval on the rater-averaged discordant counts, (2) the exact pair bootstrap
    percentile interval and (3) where a study has enough raters, a Wald interval with the two-way (pairs x
    raters) cluster-robust variance: its lower end is the lowest of the three."""
    import math

    import numpy as np

    x = np.asarray(x, np.int64)
    pair = np.asarray(pair, np.int64)
    pair_study = np.asarray(pair_study, np.int64)
    n_pairs_total = len(pair_study)
    z = z_for(confidence)
    r_p = np.bincount(pair, minlength=n_pairs_total).astype(float)
    a_p = np.bincount(pair, weights=(x == 1), minlength=n_pairs_total)
    o_p = np.bincount(pair, weights=(x == -1), minlength=n_pairs_total)
    rated = r_p > 0
    r_safe = np.where(rated, r_p, 1.0)
    d_p = (a_p - o_p) / r_safe
    study_w = np.where(rated, 1.0, 0.0)
    n = np.bincount(pair_study, weights=study_w, minlength=n_studies)
    b = np.bincount(pair_study, weights=a_p / r_safe, minlength=n_studies)
    c = np.bincount(pair_study, weights=o_p / r_safe, minlength=n_studies)
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.where(n > 0, (b - c) / n, np.nan)
    t_lo, t_hi = tango_interval(b, c, n, z)

    # pair bootstrap on the lattice of pair means: common denominator of the raters-per-pair counts
    counts = np.unique(r_p[rated]).astype(int)
    scale = 1
    for r in counts:
        scale = scale * int(r) // math.gcd(scale, int(r))
    k = np.rint(d_p * scale).astype(np.int64) + scale
    width = 2 * scale + 1
    hist = np.bincount(pair_study[rated] * width + k[rated], minlength=n_studies * width).reshape(n_studies, width)
    b_lo, b_hi = lattice_bootstrap_interval(hist, scale, confidence, resamples)

    # two-way cluster-robust Wald interval (pair-mean estimator: w_j = 1 / (n_s * R_p))
    study_of_rating = pair_study[pair]
    w = 1.0 / (n[study_of_rating] * r_p[pair])
    e = w * (x - diff[study_of_rating])
    var, _pairs, raters, two_way = cluster_variance(e, study_of_rating, n_studies, pair, rater, min_raters)
    half = z * np.sqrt(var)
    w_lo = np.where(two_way, diff - half, np.nan)
    w_hi = np.where(two_way, diff + half, np.nan)
    with np.errstate(invalid="ignore"):
        low = np.fmin(np.fmin(t_lo, b_lo), w_lo)
        high = np.fmax(np.fmax(t_hi, b_hi), w_hi)
    return {"pairs": n, "ratings": np.bincount(study_of_rating, minlength=n_studies), "raters": raters,
            "difference": diff, "low": low, "high": high, "tango_low": t_lo, "tango_high": t_hi,
            "bootstrap_low": b_lo, "bootstrap_high": b_hi, "two_way_low": w_lo, "two_way_high": w_hi,
            "assisted_only": b, "ordinary_only": c}
