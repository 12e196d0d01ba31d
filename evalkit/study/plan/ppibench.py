"""Prediction-powered inference measured on simulated studies (scripts/ppibench.py, tests/test_ppi.py): whole studies
drawn from plan/model.py, a pool of pooled pairs of which the raters rate a uniformly random subset, a simulated rule
pre-screen on every pooled output, and the gate's own functions (stats.ppi_pool_difference, gate.fidelity_ok,
gate.raters_ok; beside them the raters-only interval, stats.paired_difference, on the same rated pairs).

The pre-screen: each output's pre-screen answer is its true status with probability `prescreen_truth` (independently
per output; a pair of identical texts gets one answer on both sides, as a rule on the same text must), and a bias
towards assisted passes that many more of the assisted outputs whose texts differ (a share of the assisted outputs
it would fail, chosen so that its pass rate there rises by `bias`). `prescreen_agreement` is its agreement with one
rater of accuracy q when raters have no effects: a q + (1 - a)(1 - q).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from ..gate import GENERAL, Gate
from ...task.prompts import CRITERIA
from .model import StudyModel, simulate_answers
from .search import RATINGS_PER_CHUNK, Rate


def truth_accuracy(agreement: float, rater_accuracy: float) -> float:
    """The pre-screen's accuracy on the truth that gives this agreement with a rater of this accuracy."""
    a = (agreement - (1 - rater_accuracy)) / (2 * rater_accuracy - 1)
    if not 0 <= a <= 1:
        raise ValueError(f"a pre-screen agreement of {agreement} is impossible with rater accuracy {rater_accuracy}")
    return a


def simulate_prescreen(y_o, y_a, same, accuracy: float, bias: float, rng):
    """The pre-screen's (ordinary, assisted) pass answers on outputs of true status y_o, y_a (see the module)."""
    import numpy as np

    n = len(y_o)
    s_o = y_o ^ (rng.random(n, dtype=np.float32) >= accuracy)
    s_a = np.where(same, s_o, y_a ^ (rng.random(n, dtype=np.float32) >= accuracy))
    if bias:
        differ = ~same
        fails = max(1.0 - float(s_a[differ].mean()) if differ.any() else 1.0, 1e-9)
        s_a = s_a | (differ & (rng.random(n, dtype=np.float32) < bias / fails))
    return s_o, s_a


def simulate_screened(model: StudyModel, rated: int, unrated: int, studies: int, drops: dict, rng,
                      prescreen_truth: float, bias: float = 0.0, criteria=CRITERIA) -> dict:
    """Studies of `rated` rated pairs (model.raters_per_pair ratings each, or a second for some) and `unrated` pooled pairs nobody rated,
    both drawn alike (the rated ones are a random subset of the pool). Returns the arrays ppi_paired_difference
    takes: per rating pair, rater and x per criterion (rated pairs 0 .. studies * rated - 1), per pair its study
    and the pre-screen's difference f per criterion, and "same" (per pair: identical outputs)."""
    import numpy as np

    sim = simulate_answers(model, rated, studies, drops, rng, criteria)
    # the unrated pairs need only their truth: one cheap rating each, never used
    pool = simulate_answers(replace(model, raters_per_pair=1, second_rating_share=0.0, raters=1), unrated, studies,
                            drops, rng, criteria) \
        if unrated else None
    pair_study = np.r_[sim["pair_study"], pool["pair_study"] if pool else np.zeros(0, np.int64)]
    out = {"pair": sim["pair"], "rater": sim["rater"], "pair_study": pair_study, "x": {}, "f": {},
           "same": np.r_[sim["same"], pool["same"] if pool else np.zeros(0, bool)]}
    for c in criteria:
        o, a = sim["seen"][c]
        out["x"][c] = a.astype(np.int8) - o.astype(np.int8)
        truth = [sim["truth"][c]] + ([pool["truth"][c]] if pool else [])
        same = [sim["same"]] + ([pool["same"]] if pool else [])
        y_o, y_a, same = (np.concatenate(v) for v in ([t[0] for t in truth], [t[1] for t in truth], same))
        s_o, s_a = simulate_prescreen(y_o, y_a, same, prescreen_truth, bias, rng)
        out["f"][c] = s_a.astype(np.float64) - s_o.astype(np.float64)
    return out


@dataclass
class Design:
    pass_rate: float = 0.8
    rater_accuracy: float = 0.95
    raters: int = 10
    raters_per_pair: int = 3
    second_rating_share: float = 0.0  # with one rating per pair: the share of pairs rated twice
    rater_sd: float = 0.5
    rater_path_sd: float = 0.0
    pair_correlation: float = 0.5
    identical_share: float = 0.0
    rated: int = 600  # rated pairs (the decision sample)
    pool: int = 4000  # pooled pairs, rated ones included
    prescreen_agreement: float = 0.9  # with one rater (no rater effects)
    prescreen_bias: float = 0.0  # towards assisted, in pass rate on the assisted outputs whose texts differ
    margin: float = 0.05
    confidence: float = 0.95
    claim: str = GENERAL
    min_raters: int = Gate.min_raters
    resamples: int = 2000
    notes: list[str] = field(default_factory=list)

    def model(self) -> StudyModel:
        m = StudyModel(pass_rates={c: self.pass_rate for c in CRITERIA}, rater_accuracy=self.rater_accuracy,
                       identical_share=self.identical_share, raters_per_pair=self.raters_per_pair,
                       second_rating_share=self.second_rating_share, raters=self.raters,
                       pair_correlation=self.pair_correlation, rater_sd=self.rater_sd, rater_path_sd=self.rater_path_sd)
        m.check()
        return m


def passes(design: Design, studies: int, drops: dict, seed, criteria=CRITERIA) -> dict:
    """Per criterion and study, whether the gate's condition holds with prediction-powered inference ("ppi") and with
    the raters' answers alone on the same rated pairs ("rated")."""
    import numpy as np

    from ..gate import enough_raters_for, fidelity_ok
    from .model import rated_pairs
    from ...stats import paired_difference

    model = design.model()
    truth = truth_accuracy(design.prescreen_agreement, design.rater_accuracy)
    gate = {"claim": design.claim, "min_raters": design.min_raters}
    general = design.claim == GENERAL
    unrated = design.pool - design.rated
    chunk = max(1, RATINGS_PER_CHUNK // (design.rated * design.raters_per_pair + unrated))
    out = {c: {"ppi": [], "rated": []} for c in criteria}
    for i, start in enumerate(range(0, studies, chunk)):
        size = min(chunk, studies - start)
        sim = simulate_screened(model, design.rated, unrated, size, drops, np.random.default_rng([*seed, i]), truth,
                                design.prescreen_bias, criteria)
        n_rated_pairs = size * design.rated
        # the gate's rule (as plan and errorbench take it): a study whose rated pairs are all identical needs no rater
        rated = rated_pairs({"pair_study": sim["pair_study"][:n_rated_pairs], "identical": sim["same"][:n_rated_pairs]},
                            size)
        for c in criteria:
            res = ppi_interval(sim, c, size, design)
            # identical pairs are exact zeros in the raters' interval, as the verdict counts them (errorbench too)
            alone = paired_difference(sim["x"][c], sim["pair"], sim["rater"], sim["pair_study"][:n_rated_pairs], size,
                                      design.confidence, design.resamples, raters_in_general=general,
                                      identical=sim["same"][:n_rated_pairs])
            enough = enough_raters_for(alone["raters"], rated, gate)
            # without a rated pair whose texts differ PPI has no interval: the gate's row keeps the raters' (ppi.apply)
            low = np.where(np.isnan(res["low"]), alone["low"], res["low"])
            out[c]["ppi"].append(fidelity_ok(low, design.margin) & enough)
            out[c]["rated"].append(fidelity_ok(alone["low"], design.margin) & enough)
    return {c: {k: np.concatenate(v) for k, v in parts.items()} for c, parts in out.items()}


def ppi_interval(sim: dict, criterion: str, studies: int, design: Design) -> dict:
    """The prediction-powered interval of each simulated study (simulate_screened's arrays) as the gate computes it
    (stats.ppi_pool_difference, what aggregate.ppi.apply runs): identical pairs, never rated, leave the pre-screen's
    population and scale the estimate and both ends by the differing pairs' share of the pool. Taken as unrated pairs
    of difference 0 instead (before 2026-12-06), they diluted only the pre-screen's term, not the raters' part."""
    from ...stats.ppi import ppi_pool_difference

    return ppi_pool_difference(sim["x"][criterion], sim["pair"], sim["rater"], sim["pair_study"], sim["f"][criterion],
                               sim["same"], studies, design.confidence, design.claim == GENERAL, design.min_raters)


def run(design: Design, studies: int, seed: int = 0, drops=(0.0, 1.0)) -> list[dict]:
    """KEEP rates (every criterion passes) with and without PPI when nothing drops (power) and when one criterion
    truly drops by each of `drops` margins; and that criterion's own pass rate. Criteria are independent in the
    model: the three that do not drop are drawn once, in the no-drop run, and shared."""
    import numpy as np

    first, others = CRITERIA[0], CRITERIA[1:]
    base = passes(design, studies, {}, [seed, 0], CRITERIA)
    rows = []
    for j, drop in enumerate(drops):
        dropping = base[first] if drop == 0 else passes(design, studies, {first: drop * design.margin},
                                                        [seed, 1 + j], (first,))[first]
        row = {"design": {k: v for k, v in asdict(design).items() if k != "notes"}, "drop": drop}
        for kind in ("ppi", "rated"):
            keep = np.logical_and.reduce([dropping[kind], *(base[c][kind] for c in others)])
            row[f"{kind}_keep"] = asdict(Rate.of(keep))
            row[f"{kind}_criterion"] = asdict(Rate.of(dropping[kind]))
        rows.append(row)
    return rows
