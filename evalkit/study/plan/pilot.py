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
# A share estimated from n answers is known to about +-1/sqrt(n) (95%, at worst): under 100 that is wider than +-0.1,
# no better than the stated default, and the planned size turns on these numbers (a pass rate near 0.5, or a lower
# accuracy, asks for several times the pairs). Fewer outputs in the pool, or fewer rater pairs (two raters' answers
# on the same output and criterion: 13 pairs rated twice), and the plan keeps the default and says what the pilot gave.
MIN_POOL_OUTPUTS = 100
MIN_RATER_PAIRS = 100
PASS_RATE_BOUNDS = (0.02, 0.98)  # a rate of exactly 0 or 1 in a pool is not a promise


def oneway_by_rater(y, rater) -> tuple[float, float, float, int] | None:
    """The one-way ANOVA of y over raters: (MS_between, MS_within, n0, G), n0 = (N - sum n_j^2 / N) / (G - 1) the
    mean ratings per rater for unequal counts (Searle, Casella & McCulloch 1992, 3.6). None with fewer than two raters
    or no rater rating twice."""
    import numpy as np

    y = np.asarray(y, float)
    r = np.unique(np.asarray(rater), return_inverse=True)[1]
    g = int(r.max()) + 1 if len(r) else 0
    n_total = len(y)
    if g < 2 or n_total <= g:
        return None
    n = np.bincount(r, minlength=g).astype(float)
    means = np.bincount(r, weights=y, minlength=g) / n
    ms_between = float((n * (means - y.mean()) ** 2).sum()) / (g - 1)
    ms_within = float(((y - means[r]) ** 2).sum()) / (n_total - g)
    return ms_between, ms_within, (n_total - float((n * n).sum()) / n_total) / (g - 1), g


def rater_spread_oneway(y, rater) -> float:
    """Variance of raters' own effects on y from every rating, one rating per pair allowed: the one-way moment
    estimate (MS_between - MS_within) / n0 (oneway_by_rater). Pair effects enter as noise within raters, so it is
    unbiased where the pairs a rater sees are drawn at random (the queue serves them in a random stored order), and
    it uses all the ratings, not only pairs rated twice (as a two-way fit removing pair effects would): with one
    rating per pair and a tenth rated twice it is several times as precise. Not floored (it can be negative). NaN
    where oneway_by_rater is None."""
    fit = oneway_by_rater(y, rater)
    if fit is None:
        return math.nan
    ms_between, ms_within, n0, _g = fit
    return (ms_between - ms_within) / n0


def accuracy_from_agreement(rated) -> tuple[float, float, int] | None:
    """The raters' accuracy a from their agreement on the same output (two raters agree with probability
    a^2 + (1 - a)^2), over every criterion and both paths: (accuracy, agreement, rater pairs), or None where no
    output was rated twice."""
    import numpy as np

    from ...records import COMPARED

    values = np.stack([rated.passed(p, c) for c in CRITERIA for p in COMPARED], axis=1).astype(float)
    units = rated.pair[:, None] * values.shape[1] + np.arange(values.shape[1])
    m = np.bincount(units.ravel(), minlength=int(units.max()) + 1).astype(float)
    k = np.bincount(units.ravel(), weights=values.ravel(), minlength=int(units.max()) + 1)
    agree = (k * (k - 1) + (m - k) * (m - k - 1)) / 2
    total = m * (m - 1) / 2
    if total.sum() <= 0:
        return None
    a = float(agree.sum() / total.sum())
    return min(max((1 + math.sqrt(max(2 * a - 1, 0.0))) / 2, 0.6), 1.0), a, int(total.sum())


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
        # every rating, not only pairs rated twice (rater_spread_oneway): the same estimate the verdict's note on
        # raters who differ about one path reads (aggregate.spread), and several times as precise where most pairs
        # have one rating (at no spread, in 10-rater studies of the shipped design, the two-way fit on pairs rated
        # twice put the rater x path sd at 0.75 or more in 28 of 100, this one in none of 400; unbiased at 0.75)
        v_o = rater_spread_oneway(o, rated.rater)
        v_lenient.append(v_o)
        v_path.append(rater_spread_oneway((a - o)[differ], rated.rater[differ]))
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
               "rater_sd": f"{where}: raters' spread on ordinary outputs, every rating (one-way)",
               "rater_path_sd": f"{where}: raters' spread of assisted - ordinary, every rating (one-way)"}
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


def repeated_pairs(db) -> int:
    """Study pairs whose outputs differ and whose two texts another such pair holds as well (the copies beyond the
    first): greedy decoding makes one per extra sample of a prompt."""
    from ..pairs import IDENTICAL

    return db.execute(
        f"""SELECT COALESCE(SUM(n - 1), 0) FROM (
                SELECT COUNT(*) AS n FROM pairs p
                JOIN generations o ON o.id = p.ordinary_generation_id JOIN generations a ON a.id = p.assisted_generation_id
                WHERE p.kind = 'study' AND NOT {IDENTICAL.format(p="p.")} GROUP BY o.text, a.text)""").fetchone()[0]


def model_from_db(db, raters_per_pair: int, pass_rate: float | None = None, raters: int | None = None,
                  prompts: int | None = None, pair_correlation: float | None = None, rater_sd: float | None = None,
                  rater_path_sd: float | None = None, claim: str = GENERAL,
                  min_raters: int = Gate.min_raters, second_rating_share: float = 0.0) -> StudyModel:
    """The study model from what the database holds: the rule pre-screen's pass rate per criterion on the pair
    pool, the share of pairs with identical outputs, the raters' observed agreement (turned into an accuracy:
    two raters agree with probability a^2 + (1 - a)^2), the pilot's pair correlation and rater effects
    (pilot_effects), and the number of raters: for a claim about raters in general at least the gate's
    min_raters. Defaults where it holds nothing, or too little (MIN_POOL_OUTPUTS, MIN_RATER_PAIRS; model.notes says
    what the pilot gave); the options override. second_rating_share: with one rating per pair,
    the share of pairs rated twice (the gate's)."""
    from ...aggregate.quality import screen_all
    from ...task.fidelity import RULES_VERSION

    sources, notes = {}, []
    model = StudyModel(pass_rates={c: DEFAULT_PASS_RATE for c in CRITERIA}, raters_per_pair=raters_per_pair,
                       second_rating_share=second_rating_share)
    sources["pass_rates"] = f"default {DEFAULT_PASS_RATE}"
    sources["rater_accuracy"] = f"default {DEFAULT_ACCURACY}"
    sources["identical_share"] = "default 0 (no pair pool)"
    for k in ("pair_correlation", "rater_sd", "rater_path_sd"):
        sources[k] = "default 0 (no ratings)"
    n_raters = 0
    if db is not None and db["pairs"].count:
        # planning reads and never writes (a refused plan must leave the database as it was): outputs not screened
        # yet are screened here, in memory, beside the cached verdicts
        new = screen_all(db, store=False)
        pooled_ids = "SELECT ordinary_generation_id FROM pairs UNION SELECT assisted_generation_id FROM pairs"
        verdicts = {(g, c): p for g, c, p in db.execute(
            f"SELECT generation_id, criterion, passed FROM prescreen WHERE rules_version = ? AND generation_id IN "
            f"({pooled_ids})", [RULES_VERSION])}
        in_pool = {g for (g,) in db.execute(pooled_ids)}
        for r in new:  # what is cached stands; the rest as screened now
            if r["generation_id"] in in_pool:
                verdicts.setdefault((r["generation_id"], r["criterion"]), r["passed"])
        totals: dict[str, list] = {}
        for (_g, c), passed in verdicts.items():
            t = totals.setdefault(c, [0.0, 0])
            t[0], t[1] = t[0] + passed, t[1] + 1
        rates = {c: k / n for c, (k, n) in totals.items() if n}
        outputs = min((n for _k, n in totals.values()), default=0)
        if rates and outputs < MIN_POOL_OUTPUTS:
            shown = ", ".join(f"{c} {rates[c]:.3f}" for c in CRITERIA if c in rates)
            sources["pass_rates"] = (f"default {DEFAULT_PASS_RATE} (the pair pool's {outputs} outputs are fewer than "
                                     f"{MIN_POOL_OUTPUTS})")
            if pass_rate is None:
                notes.append(f"pass rates: the pair pool holds {outputs} outputs, fewer than the {MIN_POOL_OUTPUTS} a "
                             f"pass rate needs (one from n outputs is known to about ±1/√n): the plan uses the default "
                             f"{DEFAULT_PASS_RATE}, where the rule pre-screen of the pool gave {shown}; build a larger "
                             "pool, or pass --pass-rate")
        elif rates:
            low, high = PASS_RATE_BOUNDS
            model.pass_rates = {c: min(max(rates.get(c, DEFAULT_PASS_RATE), low), high) for c in CRITERIA}
            sources["pass_rates"] = f"rule pre-screen of the pair pool ({outputs} outputs)"
            held = [c for c in rates if rates[c] != model.pass_rates[c]]
            if held and pass_rate is None:
                notes.append("pass rates: " + ", ".join(f"{c} {rates[c]:.3f} in the pool" for c in held)
                             + f", held within [{low:g}, {high:g}] for the plan (it uses "
                             + ", ".join(f"{model.pass_rates[c]:g}" for c in held)
                             + f"): a rate of exactly 0 or 1 in {outputs} outputs is not a promise")
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
        copies = repeated_pairs(db)
        if copies:
            notes.append(f"copies: {copies} of the pool's pairs whose outputs differ repeat the two texts of another "
                         "(greedy decoding gives every sample of a prompt the same texts). The plan counts each as a "
                         "pair of its own, but a copy's ratings judge the same texts again, and a rater is served "
                         "at most one pair holding a text: with greedy decoding, plan on the prompts, or sample")
        model.prompts = prompts or int(db.execute("SELECT COUNT(DISTINCT prompt_id) FROM pairs").fetchone()[0])
        from ...aggregate import load_ratings

        rated = load_ratings(db)
        if len(rated):
            n_raters = len(rated.raters)
            agreed = accuracy_from_agreement(rated)
            if agreed is not None and agreed[2] < MIN_RATER_PAIRS:
                accuracy, a, rater_pairs = agreed
                sources["rater_accuracy"] = (f"default {DEFAULT_ACCURACY} (the pilot's {rater_pairs} rater pairs are "
                                             f"fewer than {MIN_RATER_PAIRS})")
                notes.append(f"rater accuracy: the pilot has {rater_pairs} rater pairs (two raters' answers on the same "
                             f"output and criterion), fewer than the {MIN_RATER_PAIRS} an agreement needs: the plan "
                             f"uses the default {DEFAULT_ACCURACY}, where their agreement {a:.3f} gives {accuracy:.3f}; "
                             "rate more pairs twice and re-run `evalkit plan --db`")
            elif agreed is not None:
                model.rater_accuracy, a, rater_pairs = agreed
                sources["rater_accuracy"] = (f"observed agreement {a:.3f} between raters of the same output "
                                             f"({rater_pairs} rater pairs)")
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
    model.notes = notes
    return model
