"""The study model from what the database holds (a pilot): pass rates from the rule pre-screen of the pair pool,
the share of identical outputs, rater accuracy from the raters' agreement, and from the ratings themselves the
within-pair correlation of the two sides, the raters' leniency (rater main effect) and how differently raters
judge the two paths (rater x path effect). Every number says where it came from; options override them."""

from __future__ import annotations

import math
from dataclasses import replace

from ..gate import GENERAL, Gate
from ...task.criteria import CRITERIA
from .model import DEFAULT_ACCURACY, DEFAULT_PASS_RATE, DEFAULT_RATERS, StudyModel, expit, normal_nodes

MIN_PILOT_RATERS = 3  # fewer raters carry no spread worth estimating
MIN_PILOT_PAIRS = 10  # pairs (whose texts differ) with at least two ratings


def rater_spread(y, pair, rater) -> tuple[float, int]:
    """Variance of raters' own effects on y, pair effects removed: the additive two-way fit y = a_pair + b_rater
    by least squares (b from the reduced normal equations C b = q, C = diag(n_j) - N diag(1 / n_p) N', N the
    raters x pairs incidence), then the between-rater variance of b minus its sampling part, sigma^2 tr(C^+) /
    (G - 1), sigma^2 the residual variance: a moment (ANOVA-type) estimate, unbiased for any design in which
    raters share pairs (connected), and not floored (it can be negative: average several before flooring at 0).
    Only pairs with at least two ratings inform it. Returns (variance, raters)."""
    import numpy as np

    y = np.asarray(y, float)
    pair = np.unique(np.asarray(pair), return_inverse=True)[1]
    keep = np.bincount(pair)[pair] >= 2
    if not keep.any():
        return 0.0, 0
    y = y[keep]
    pair = np.unique(pair[keep], return_inverse=True)[1]
    rater = np.unique(np.asarray(rater)[keep], return_inverse=True)[1]
    g, n_pairs = int(rater.max()) + 1, int(pair.max()) + 1
    if g < 2:
        return 0.0, g
    n_j = np.bincount(rater, minlength=g).astype(float)
    n_p = np.bincount(pair, minlength=n_pairs).astype(float)
    pair_mean = np.bincount(pair, weights=y) / n_p
    # C's off-diagonal part, sum_p v_p v_p' / n_p (v_p: the pair's raters), from the pairs of ratings of one pair
    order = np.argsort(pair, kind="stable")
    p_sorted, r_sorted = pair[order], rater[order]
    c = np.diag(n_j)
    for shift in range(-int(n_p.max()) + 1, int(n_p.max())):
        i = np.arange(max(0, -shift), len(order) - max(0, shift))
        same = p_sorted[i] == p_sorted[i + shift]
        np.add.at(c, (r_sorted[i[same]], r_sorted[i[same] + shift]), -1 / n_p[p_sorted[i[same]]])
    c_plus = np.linalg.pinv(c)
    b = c_plus @ np.bincount(rater, weights=y - pair_mean[pair], minlength=g)
    a = pair_mean - np.bincount(pair, weights=b[rater], minlength=n_pairs) / n_p
    resid = y - a[pair] - b[rater]
    dof = len(y) - n_pairs - np.linalg.matrix_rank(c)
    if dof <= 0:
        return 0.0, g
    sigma2 = float(resid @ resid) / dof
    centred = np.eye(g) - 1 / g
    between = float(np.sum((b - b.mean()) ** 2)) / (g - 1)
    noise = sigma2 * float(np.trace(centred @ c_plus @ centred)) / (g - 1)
    return between - noise, g


def _solve(f, target: float, hi: float = 10.0) -> float:
    """The x in [0, hi] with f(x) = target for an increasing f (bisection); 0 when f(0) >= target."""
    lo = 0.0
    if f(lo) >= target:
        return 0.0
    if f(hi) <= target:
        return hi
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def leniency_sd(model: StudyModel, criterion: str, variance: float) -> float:
    """Logit-scale rater main effect whose spread of a rater's ordinary pass rate has this variance."""
    p = model.pass_rates[criterion]
    big = min(model.logit_accuracy, 60.0)
    nodes, weights = normal_nodes(48)

    def var(sd):
        rated = p * expit(big + sd * nodes) + (1 - p) * expit(-big + sd * nodes)
        return float(weights @ (rated - weights @ rated) ** 2)

    return _solve(var, variance)


def path_sd(model: StudyModel, criterion: str, variance: float) -> float:
    """Logit-scale rater x path effect whose spread of a rater's own assisted - ordinary difference (texts that
    differ) has this variance, given the model's rater main effect."""
    from ...errors import EvalkitError

    base = replace(model, identical_share=0.0)

    def var(sd):
        try:
            return replace(base, rater_path_sd=sd).rater_effect_sd(criterion) ** 2
        except EvalkitError:  # so large a spread cannot keep the pass rates: larger than any estimate
            return math.inf

    return _solve(var, variance, hi=6.0)


def normal_cdf2(h1: float, h2: float, rho: float) -> float:
    """P(Z1 < h1, Z2 < h2) for standard normals with correlation rho >= 0 (one shared factor, Gauss-Hermite)."""
    import numpy as np

    nodes, weights = normal_nodes(64)
    erf = np.vectorize(math.erf)
    s = math.sqrt(max(1 - rho, 1e-12))

    def cdf(x):
        return 0.5 * (1 + erf(x / math.sqrt(2)))

    return float(weights @ (cdf((h1 - math.sqrt(rho) * nodes) / s) * cdf((h2 - math.sqrt(rho) * nodes) / s)))


def latent_correlation(p1: float, p2: float, both: float) -> float:
    """The correlation of two thresholded normals (pass when below the cut) with pass rates p1, p2 and P(both pass)
    = both (tetrachoric), in [0, 0.99]."""
    from statistics import NormalDist

    h1, h2 = NormalDist().inv_cdf(p1), NormalDist().inv_cdf(p2)
    return _solve(lambda r: normal_cdf2(h1, h2, r), both, hi=0.99)


def pilot_effects(model: StudyModel, rated, identical) -> tuple[dict, dict]:
    """pair_correlation, rater_sd and rater_path_sd estimated from the ratings (RatingData) and a per-pair flag of
    identical texts; returns (values, sources) for those it could estimate."""
    import numpy as np

    from ...records import COMPARED

    ordinary, assisted = (str(p) for p in COMPARED)
    raters = np.unique(rated.rater).size
    differ = ~identical[rated.pair]
    pairs_two = int((np.bincount(rated.pair[differ], minlength=rated.n_pairs) >= 2).sum())
    if raters < MIN_PILOT_RATERS or pairs_two < MIN_PILOT_PAIRS:
        why = (f"pilot too small ({raters} raters, {pairs_two} pairs with different texts and two or more ratings; "
               f"needs {MIN_PILOT_RATERS} and {MIN_PILOT_PAIRS})")
        return {}, {k: f"default 0 ({why})" for k in ("pair_correlation", "rater_sd", "rater_path_sd")}
    q = model.rater_accuracy
    v_lenient, v_path, corr = [], [], []
    for c in CRITERIA:
        o = rated.passed(ordinary, c).astype(float)
        a = rated.passed(assisted, c).astype(float)
        v_o, _ = rater_spread(o, rated.pair, rated.rater)
        v_lenient.append(v_o)
        v_path.append(rater_spread((a - o)[differ], rated.pair[differ], rated.rater[differ])[0])
        # pair means of each side (texts differ); shared raters' leniency adds v_o / R to their covariance
        n = np.bincount(rated.pair[differ], minlength=rated.n_pairs).astype(float)
        has = n > 0
        o_p = np.bincount(rated.pair[differ], weights=o[differ], minlength=rated.n_pairs)[has] / n[has]
        a_p = np.bincount(rated.pair[differ], weights=a[differ], minlength=rated.n_pairs)[has] / n[has]
        cov = float(np.cov(o_p, a_p)[0, 1]) - max(v_o, 0.0) * float(np.mean(1 / n[has]))
        true_o, true_a = ((float(m.mean()) - (1 - q)) / (2 * q - 1) for m in (o_p, a_p))
        true_o, true_a = (min(max(v, 0.02), 0.98) for v in (true_o, true_a))
        both = true_o * true_a + max(cov, 0.0) / (2 * q - 1) ** 2
        corr.append(latent_correlation(true_o, true_a, min(both, min(true_o, true_a))))
    # the spreads' moment estimates are averaged over criteria before they are floored at 0 (no upward bias), and
    # turned into logit-scale sds at the criteria's mean pass rate
    typical = replace(model, pass_rates={c: float(np.mean(list(model.pass_rates.values()))) for c in CRITERIA})
    u = leniency_sd(typical, CRITERIA[0], max(float(np.mean(v_lenient)), 0.0))
    v = path_sd(replace(typical, rater_sd=u), CRITERIA[0], max(float(np.mean(v_path)), 0.0))
    where = f"pilot: {len(rated)} ratings by {raters} raters ({pairs_two} pairs with different texts rated twice or more)"
    values = {"pair_correlation": float(np.mean(corr)), "rater_sd": u, "rater_path_sd": v}
    sources = {"pair_correlation": f"{where}: two sides' pass rates per pair, less rater noise, mean over criteria",
               "rater_sd": f"{where}: raters' spread on ordinary outputs, pair effects removed",
               "rater_path_sd": f"{where}: raters' spread of assisted - ordinary, pair effects removed"}
    return values, sources


def identical_pairs(db, rated):
    """Per pair of `rated` (RatingData): are its two outputs the same tokens?"""
    import numpy as np

    from ...records import COMPARED

    ordinary, assisted = (str(p) for p in COMPARED)
    gens = np.concatenate([rated.pair_generation[ordinary], rated.pair_generation[assisted]])
    if not len(gens):
        return np.zeros(0, bool)
    hashes = dict(db.execute(
        """SELECT id, token_hash FROM generations WHERE id IN (
               SELECT ordinary_generation_id FROM pairs UNION ALL SELECT assisted_generation_id FROM pairs)""").fetchall())
    from ...generation.speed import identical

    o = [{"token_hash": hashes.get(int(g))} for g in rated.pair_generation[ordinary]]
    a = [{"token_hash": hashes.get(int(g))} for g in rated.pair_generation[assisted]]
    return np.array([identical(x, y) for x, y in zip(o, a)], bool)


def model_from_db(db, raters_per_pair: int, pass_rate: float | None = None, raters: int | None = None,
                  prompts: int | None = None, pair_correlation: float | None = None, rater_sd: float | None = None,
                  rater_path_sd: float | None = None, claim: str = GENERAL,
                  min_raters: int = Gate.min_raters, second_rating_share: float = 0.0) -> StudyModel:
    """The study model from what the database holds: the rule pre-screen's pass rate per criterion on the pair
    pool, the share of pairs with identical outputs, the raters' observed agreement (turned into an accuracy:
    two raters agree with probability a^2 + (1 - a)^2), the pilot's pair correlation and rater effects
    (pilot_effects), and the number of raters: for a claim about raters in general at least the gate's
    min_raters. Defaults where it holds nothing; the options override. second_rating_share: with one rating per pair,
    the share of pairs rated twice (the gate's)."""
    import numpy as np

    from ...aggregate.quality import screen_all
    from ...task.fidelity import RULES_VERSION

    sources = {}
    model = StudyModel(pass_rates={c: DEFAULT_PASS_RATE for c in CRITERIA}, raters_per_pair=raters_per_pair,
                       second_rating_share=second_rating_share)
    sources["pass_rates"] = f"default {DEFAULT_PASS_RATE}"
    sources["rater_accuracy"] = f"default {DEFAULT_ACCURACY}"
    sources["identical_share"] = "default 0 (no pair pool)"
    for k in ("pair_correlation", "rater_sd", "rater_path_sd"):
        sources[k] = "default 0 (no ratings)"
    n_raters = 0
    if db is not None and db["pairs"].count:
        screen_all(db)
        rows = db.execute(
            """SELECT s.criterion, AVG(s.passed), COUNT(*) FROM prescreen s
               WHERE s.rules_version = ? AND s.generation_id IN (
                   SELECT ordinary_generation_id FROM pairs UNION ALL SELECT assisted_generation_id FROM pairs)
               GROUP BY s.criterion""", [RULES_VERSION]).fetchall()
        rates = {c: float(p) for c, p, _n in rows}
        if rates:
            # keep away from 0 and 1: a rate of exactly 1 in a small pool is not a promise
            model.pass_rates = {c: min(max(rates.get(c, DEFAULT_PASS_RATE), 0.02), 0.98) for c in CRITERIA}
            sources["pass_rates"] = f"rule pre-screen of the pair pool ({rows[0][2]} outputs)"
        from ...generation.speed import identical_share

        pooled = [({"token_hash": o}, {"token_hash": a}) for o, a in db.execute(
            """SELECT o.token_hash, a.token_hash FROM pairs p
               JOIN generations o ON o.id = p.ordinary_generation_id JOIN generations a ON a.id = p.assisted_generation_id"""
        ).fetchall()]
        share = identical_share(pooled)  # the one computation of the identical share (evalkit.generation.speed)
        if share is not None:
            n = len(pooled)
            model.identical_share = min(share, 0.99)
            sources["identical_share"] = f"pair pool: {round(share * n)} of {n} pairs have identical outputs"
        model.prompts = prompts or int(db.execute("SELECT COUNT(DISTINCT prompt_id) FROM pairs").fetchone()[0])
        from ...aggregate import load_ratings
        from ...records import COMPARED

        rated = load_ratings(db)
        if len(rated):
            n_raters = len(rated.raters)
            paths = COMPARED
            # pass / not pass per (criterion, path) column; units are (pair, column)
            values = np.stack([rated.passed(p, c) for c in CRITERIA for p in paths], axis=1).astype(float)
            units = rated.pair[:, None] * values.shape[1] + np.arange(values.shape[1])
            m = np.bincount(units.ravel(), minlength=int(units.max()) + 1).astype(float)
            k = np.bincount(units.ravel(), weights=values.ravel(), minlength=int(units.max()) + 1)
            agree = (k * (k - 1) + (m - k) * (m - k - 1)) / 2
            total = m * (m - 1) / 2
            if total.sum() > 0:
                a = float(agree.sum() / total.sum())
                acc = (1 + math.sqrt(max(2 * a - 1, 0.0))) / 2
                model.rater_accuracy = min(max(acc, 0.6), 1.0)
                sources["rater_accuracy"] = (f"observed agreement {a:.3f} between raters of the same output "
                                             f"({int(total.sum())} rater pairs)")
            found, where = pilot_effects(model, rated, identical_pairs(db, rated))
            for key, value in found.items():
                setattr(model, key, value)
            sources.update(where)
    if prompts:
        model.prompts = prompts
    if pass_rate is not None:
        model.pass_rates = {c: pass_rate for c in CRITERIA}
        sources["pass_rates"] = "--pass-rate"
    for key, value in (("pair_correlation", pair_correlation), ("rater_sd", rater_sd),
                       ("rater_path_sd", rater_path_sd)):
        if value is not None:
            setattr(model, key, value)
            sources[key] = f"--{key.replace('_', '-')}"
    model.raters = DEFAULT_RATERS
    sources["raters"] = f"default {DEFAULT_RATERS}"
    if n_raters >= model.max_ratings_per_pair:
        model.raters = n_raters
        sources["raters"] = f"database: {n_raters} raters so far"
    if claim == GENERAL and model.raters < min_raters:
        sources["raters"] = (f"the gate's min_raters ({min_raters}) for a claim about raters in general"
                             + (f"; the database has {n_raters} so far" if n_raters else ""))
        model.raters = min_raters
    if raters is not None:
        model.raters = raters
        sources["raters"] = "--raters"
    model.sources = sources
    return model
