"""Prediction-powered inference (PPI++; Angelopoulos, Duchi & Zrnic 2023) for the gate's paired difference: the
rule pre-screen judges every pooled pair for free, the raters a uniformly random subset of them, and the raters'
answers correct the pre-screen's errors, so that its answers narrow the interval without ever biasing it.

The unit is the pair. For pair i, f_i = (pre-screen passes the assisted output) - (it passes the ordinary one), in
{-1, 0, 1}; on the n rated pairs Y_i is the mean over the pair's raters of (assisted passed) - (ordinary passed).
With the N unrated pooled pairs as the unlabelled set,

    theta = lambda * mean_N(f) + mean_n(Y - lambda * f)

is unbiased for E[Y] whatever the pre-screen's accuracy or bias, for any fixed lambda, because the rated pairs are a
uniformly random subset of the pool (the queue serves pairs in an order drawn at random when the pool was made) and
the pre-screen is a fixed function of the texts. lambda is tuned to minimise the variance (PPI++'s power tuning,
clipped to [0, 1] as ppi-python does): lambda = cov_n(Y, f) / ((1 + n / N) var(f)). A pre-screen that agrees with
nothing gets lambda near 0 and the classical estimate back.

The variance has two independent parts: lambda^2 var(f) / N from the unrated pairs, and the variance of the rated
part's mean, computed on the ratings (x_ij - lambda f_i, a pair-mean estimator) with the same clustering as the gate's
other intervals: for a claim about raters in general the two-way (pairs x raters) CR2 variance with Student's t on
the raters-only interval's pessimistic Satterthwaite degrees of freedom (between the rater part's Bell-McCaffrey df
and the pairs' n - 1) and the Cornish-Fisher skew term (stats.clustered); for the
claim about these raters, the two-way CR1 variance from 10 raters on, else the pairs' variance as ppi-python
computes it (then the interval equals `ppi_py.ppi_mean_ci`). The unrated part has no rater in it.

The interval never collapses: each end lies at least z^2 / (n + z^2) from the estimate, the half-width of Tango's
interval for n pairs of which none is discordant, so a study in which every answer agrees still cannot rule out a
drop that n rated pairs cannot rule out.
"""

from __future__ import annotations

from .clustered import MIN_RATERS_TWO_WAY, cluster_variance, cr2_two_way
from .descriptive import t_quantile, z_for


def ppi_mean(y, yhat, yhat_unlabelled, confidence: float = 0.95, lam: float | None = None) -> dict:
    """PPI++ for one mean with independent labelled units (no clustering): the estimate, lambda and the normal
    interval, computed as `ppi_py.ppi_mean_ci` does (lambda from the lambda = 1 estimate's gradients, variances with
    divisor n and N). The reference the clustered version reduces to with one rater per pair."""
    import numpy as np

    y, yhat, yu = (np.asarray(v, float) for v in (y, yhat, yhat_unlabelled))
    n, big_n = len(y), len(yu)
    if lam is None:
        lam = _lambda(y.mean(), yhat.mean(), (y * yhat).mean(), np.r_[yhat, yu].var(ddof=1) if n + big_n > 1 else 0.0,
                      n, big_n)
    theta = lam * yu.mean() + (y - lam * yhat).mean()
    se = np.sqrt((lam * yu).var() / big_n + (y - lam * yhat).var() / n)
    z = z_for(confidence)
    return {"estimate": float(theta), "lambda": float(lam), "se": float(se),
            "low": float(theta - z * se), "high": float(theta + z * se)}


def _lambda(m_y, m_f, m_yf, var_f_all, n, big_n):
    """PPI++'s power-tuned lambda for a mean, clipped to [0, 1] (vectorised): cov_n(Y, f) / ((1 + n / N) var(f)),
    var(f) over labelled and unlabelled units together with divisor count - 1. 0 where it is undefined."""
    import numpy as np

    cov = m_yf - m_y * m_f
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1 + n / big_n) * var_f_all)
    ok = (np.asarray(big_n) > 0) & (np.asarray(var_f_all) > 0) & np.isfinite(lam)
    return np.where(ok, np.clip(lam, 0.0, 1.0), 0.0)


def ppi_paired_difference(x, pair, rater, pair_study, f, n_studies: int, confidence: float = 0.95,
                          raters_in_general: bool = True, min_raters: int = MIN_RATERS_TWO_WAY) -> dict:
    """The prediction-powered interval of assisted - ordinary pass rate, one per study (vectorised, so that the
    plan and scripts/errorbench.py run this very function on thousands of simulated studies).

    x: per rating, (assisted passed) - (ordinary passed) in {-1, 0, 1}; pair: per rating, a pair index 0 .. P-1
    unique across studies; rater: per rating, a rater index unique across studies; pair_study: per pair, its study;
    f: per pair, the pre-screen's difference (NaN: not screened, left out). A pair with ratings is labelled, a
    screened pair without ratings unlabelled. A rated pair must be screened (else NaN for its study).

    Returns per study: difference (theta), low, high, lambda, df (inf for the normal quantile), rated and unrated
    pairs, raters, and the rated part's classical mean for reference."""
    import numpy as np

    x = np.asarray(x, float)
    pair = np.asarray(pair, np.int64)
    rater = np.asarray(rater, np.int64)
    pair_study = np.asarray(pair_study, np.int64)
    f = np.asarray(f, float)
    P = len(pair_study)
    z = z_for(confidence)

    r_p = np.bincount(pair, minlength=P).astype(float)
    rated = r_p > 0
    screened = ~np.isnan(f)
    f0 = np.where(screened, f, 0.0)
    # the pool is much larger than the rated pairs: three passes over it, the rest over the rated pairs only
    idx = np.flatnonzero(rated)
    study_r = pair_study[idx]

    def rated_sum(values):
        return np.bincount(study_r, weights=values, minlength=n_studies)

    y = np.bincount(pair, weights=x, minlength=P)[idx] / r_p[idx]  # pair means of the rated pairs
    f_r = f0[idx]
    n = np.bincount(study_r, minlength=n_studies).astype(float)
    missing = rated_sum(~screened[idx])  # a rated pair the pre-screen did not judge
    s_all = np.bincount(pair_study, weights=f0, minlength=n_studies)  # screened pairs (f0 = 0 elsewhere)
    ss_all = np.bincount(pair_study, weights=f0 * f0, minlength=n_studies)
    big_n = np.bincount(pair_study, weights=screened, minlength=n_studies) - (n - missing)  # screened, unrated
    with np.errstate(divide="ignore", invalid="ignore"):
        m_y = rated_sum(y) / n
        s_f = rated_sum(f_r)
        m_f = s_f / n
        m_yf = rated_sum(y * f_r) / n
        m_fu = (s_all - s_f) / big_n
        total = n + big_n
        var_all = np.where(total > 1, (ss_all - s_all * s_all / total) / (total - 1), 0.0)
        var_fu = np.where(big_n > 0, (ss_all - rated_sum(f_r * f_r)) / big_n - m_fu ** 2, 0.0)
    lam = _lambda(m_y, m_f, m_yf, var_all, n, big_n)
    rect = m_y - lam * m_f  # the rated part: mean of Y - lambda f
    theta = np.where(big_n > 0, lam * np.nan_to_num(m_fu), 0.0) + rect
    with np.errstate(divide="ignore", invalid="ignore"):
        v_unrated = np.where(big_n > 0, lam * lam * np.clip(var_fu, 0, None) / big_n, 0.0)

    # the rated part's variance, on the ratings: x_ij - lambda f_i, each pair weighing 1 / n
    study_of_rating = pair_study[pair]
    lam_r = lam[study_of_rating]
    resid = x - lam_r * f0[pair] - rect[study_of_rating]
    w = 1.0 / (n[study_of_rating] * r_p[pair])
    skew_term_low = skew_term_high = np.zeros(n_studies)
    if raters_in_general:
        cr2 = cr2_two_way(resid, w, pair, rater, study_of_rating, n_studies)
        # t on the same degrees of freedom as the raters-only interval (stats.paired_difference): Satterthwaite's for
        # the pair and rater parts with the raters' share taken at its upper 99% bound, never below the rater part's
        # Bell-McCaffrey df. The rater part's df alone (G - 1) ignored that most of the variance is the pairs'.
        v_rated, df, raters = cr2["variance"], cr2["df_total"], cr2["raters"]
        v = v_rated + v_unrated
        q = t_quantile(1 - (1 - confidence) / 2, np.where(df > 0, df, np.nan))
        with np.errstate(invalid="ignore", divide="ignore"):
            gamma = np.where(np.isfinite(v) & (v > 0), cr2["skewness"] * np.where(np.isfinite(v_rated), v_rated, 0.0)
                             ** 1.5 / v ** 1.5, 0.0)
        shift = (2 * q * q + 1) / 6
        skew_term_low, skew_term_high = shift * np.maximum(-gamma, 0), shift * np.maximum(gamma, 0)
        q = np.where(raters >= 2, q, np.inf)
    else:
        v_two, _pairs, raters, two_way = cluster_variance(w * resid, study_of_rating, n_studies, pair, rater,
                                                          min_raters)
        # pairs only: the rated part's variance as ppi-python computes it (divisor n)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = y - lam[study_r] * f_r - rect[study_r]
            v_pairs = rated_sum(d * d) / (n * n)
        v = np.where(two_way, v_two, v_pairs) + v_unrated
        q = np.full(n_studies, z)
        df = np.full(n_studies, np.inf)
    with np.errstate(invalid="ignore"):
        se = np.sqrt(v)
        below = np.where(np.isfinite(q), (q + skew_term_low) * se, np.inf)
        above = np.where(np.isfinite(q), (q + skew_term_high) * se, np.inf)
        floor = z * z / (n + z * z)  # Tango's half-width with no discordant pair: never collapse
        low = np.maximum(theta - np.maximum(below, floor), -1.0)
        high = np.minimum(theta + np.maximum(above, floor), 1.0)
    bad = (n == 0) | (missing > 0)
    nan = np.full(n_studies, np.nan)
    return {"difference": np.where(bad, nan, theta), "low": np.where(bad, nan, low), "high": np.where(bad, nan, high),
            "lambda": np.where(bad, nan, lam), "df": df, "rated_pairs": n, "unrated_pairs": big_n,
            "raters": raters, "rated_mean": np.where(n > 0, m_y, np.nan), "floor": floor}


def ppi_pool_difference(x, pair, rater, pair_study, f, identical, n_studies: int, confidence: float = 0.95,
                        raters_in_general: bool = True, min_raters: int = MIN_RATERS_TWO_WAY) -> dict:
    """The gate's prediction-powered interval over a pool in which some pairs' outputs are identical (the same
    tokens: never served, exact zeros): ppi_paired_difference on the pairs whose outputs differ, then the estimate
    and both ends scaled by their share of the pool (the pairs with a pre-screen answer, f not NaN), which is known,
    not estimated. The one weighting for the verdict (aggregate.ppi.apply), the plan (plan.designs) and
    scripts/ppibench.py. Arguments as ppi_paired_difference's, plus identical: bool per pair; ratings of identical
    pairs, if any, are left out. Returns its dict with difference, low and high scaled, and differing_share."""
    import numpy as np

    f = np.array(f, float)  # a copy: identical pairs leave the pre-screen's population below
    identical = np.asarray(identical, bool)
    pair_study = np.asarray(pair_study, np.int64)
    pool = ~np.isnan(f)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (np.bincount(pair_study, weights=pool & ~identical, minlength=n_studies)
                 / np.bincount(pair_study, weights=pool, minlength=n_studies))
    share = np.where(np.isfinite(share), share, 1.0)  # no pooled pair: nothing to scale
    f[identical] = np.nan
    keep = ~identical[np.asarray(pair, np.int64)]
    res = ppi_paired_difference(np.asarray(x)[keep], np.asarray(pair)[keep], np.asarray(rater)[keep], pair_study, f,
                                n_studies, confidence, raters_in_general, min_raters)
    for k in ("difference", "low", "high"):
        res[k] = share * res[k]
    res["differing_share"] = share
    return res
