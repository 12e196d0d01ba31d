"""Designs of the rating study, compared by what they cost (`evalkit plan`, scripts/errorbench.py).

A design is how the gate judges and when it may stop: the interval (the first design's union with Tango, or the t
interval with the score floor), prediction-powered inference with the pre-screen or not, the monitoring (fixed, group sequential,
confidence sequence; study.monitoring) and the ratings each pair gets (1, 2 or 3; with 1, a share of pairs rated
twice). simulate() runs whole studies of a design through the gate's own functions (stats.paired_difference,
stats.ppi_paired_difference, the betting sequence; study.monitoring's looks and levels; gate.fidelity_ok and
gate.raters_ok), one look after another on the first pairs served, and outcome() says where each study stops:
KEEP or DROP, and after how many human ratings.

The pairs a study serves are a prefix of its simulated pairs (the queue's random order); a look sees the first
look_sizes() decided pairs. With PPI, the pre-screen judges every pooled pair (`pool` pairs per study, the rated ones
among them), and at each look the pairs not yet rated are its unlabelled set. Identical pairs are decided without
raters: exact zeros for the raters-only intervals; PPI and the confidence sequence run on the pairs whose outputs
differ and scale by their share of the pool, as the aggregate does (aggregate.ppi).

What a design costs is every human rating to a decision: the study pairs' (what the gate's expected_ratings and the
Results tab count) and the gold pairs' served meanwhile (Scenario.gold_ratings: pool.gold_rate of the decided pairs
whose outputs differ, each rated as often as a study pair). study.plan.comparison sizes and compares designs by it, and for a claim about
raters in general also rosters: the same ratings shared by more raters give the raters' part more degrees of freedom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ...stats import T_FLOOR, UNION
from ...task.criteria import CRITERIA
from ..gate import GENERAL, Gate
from ..monitoring import CONFIDENCE_SEQUENCE, FIXED, GROUP_SEQUENTIAL, look_levels, look_sizes
from .model import StudyModel
from .search import MAX_PAIRS

MINUTE = 1.0  # minutes a rating takes when the study has no measured time on task
# Minutes a rater spends before their first counted rating (reading the guidelines, the sign-in, a first look at the
# form) when nothing better is known: what a larger roster costs beyond its ratings. A stated assumption
# (--onboarding-minutes), not a measurement.
ONBOARDING = 10.0
# The most minutes a rating may take in a plan: a pair's two outputs read and judged on four criteria take minutes, and
# more than two hours is a slip (seconds given as minutes, or a total), not a pace (plan audit L2: 1e9 was accepted
# and priced at 99,275,000,000 rater-hours).
MAX_MINUTES = 120.0


@dataclass(frozen=True)
class Design:
    interval: str = T_FLOOR
    ppi: bool = False
    monitoring: str = FIXED
    raters_per_pair: int = 3
    second_rating_share: float = 0.0  # with 1 rating per pair: the share of pairs rated twice
    look_every: int = 50  # ratings between looks (monitoring other than fixed)

    @property
    def name(self) -> str:
        parts = ["union with Tango" if self.interval == UNION else "t with score floor"]
        if self.ppi:
            parts.append("PPI")
        if self.monitoring != FIXED:
            parts.append(f"{self.monitoring} every {self.look_every} ratings")
        k = self.raters_per_pair
        raters = (f"1 rating per pair (+{self.second_rating_share:.0%} twice)" if k == 1 and self.second_rating_share
                  else f"{k} rating{'s' if k > 1 else ''} per pair")
        return " + ".join(parts) + ", " + raters

    def values(self, planned: int, margin: float = 0.05, confidence: float = 0.95, claim: str = GENERAL) -> dict:
        """The gate values this design freezes (the keys study.monitoring and the verdict read)."""
        return {"planned_pairs": planned, "margin": margin, "confidence": confidence, "claim": claim,
                "min_ratings_per_pair": self.raters_per_pair, "second_rating_share": self.second_rating_share,
                "monitoring": self.monitoring, "look_every": self.look_every, "interval": self.interval,
                "ppi": "on" if self.ppi else "off"}

    def gate_lines(self, planned: int, expected_ratings: int | None = None, raters: int | None = None,
                   pool: int | None = None, margin: float | None = None) -> list[str]:
        """The gate file's lines for this design at `planned` pairs; `raters`: the roster its power assumes (for a
        claim about raters in general, where the roster sets the cost); `pool`: the pooled pairs its power assumes
        (written with PPI, whose variance falls with them, so that `generate --until-planned` builds them);
        `margin`: the margin it was sized for (plan audit, 2026-12-04: `plan --compare --margin 0.1` wrote no margin
        line, and the gate file's 0.05 left the study about 1.5% power)."""
        lines = [f"planned_pairs = {planned}"] + ([f"margin = {margin:g}"] if margin is not None else []) + [
            f"min_ratings_per_pair = {self.raters_per_pair}"]
        if self.raters_per_pair == 1:
            lines.append(f"second_rating_share = {self.second_rating_share:g}")
        lines += [f'interval = "{self.interval}"', f'ppi = "{"on" if self.ppi else "off"}"',
                  f'monitoring = "{self.monitoring}"']
        if self.monitoring != FIXED:
            lines.append(f"look_every = {self.look_every}")
        if expected_ratings:
            lines.append(f"expected_ratings = {expected_ratings}")
        if raters:
            lines.append(f"planned_raters = {raters}")
        if pool and self.ppi:
            lines.append(f"planned_pool = {max(pool, planned)}")
        return lines


def candidates(claim: str = GENERAL, second_rating_share: float = 0.1, look_every: int = 50) -> list[Design]:
    """The designs the plan compares: the first one, before #20 (union with Tango, 3 ratings per pair, fixed), then
    the tighter interval, plus PPI, plus group-sequential looks, each with 1 (and a doubled share), 2 or 3 ratings per pair; the
    confidence sequence where the claim is about these raters only (it has no rater dimension)."""
    out = [Design(UNION, False, FIXED, 3)]
    for ppi, monitoring in ((False, FIXED), (True, FIXED), (True, GROUP_SEQUENTIAL)):
        for k in (1, 2, 3):
            out.append(Design(T_FLOOR, ppi, monitoring, k, second_rating_share if k == 1 else 0.0, look_every))
    if claim != GENERAL:
        out.append(Design(T_FLOOR, False, CONFIDENCE_SEQUENCE, 1, second_rating_share, look_every))
    return out


@dataclass
class Scenario:
    """The simulated world a design is judged in: the study model (its raters_per_pair is the design's), the pooled
    pairs the pre-screen judges, the pre-screen's agreement with one rater and its bias towards assisted, and the
    gate's margin, level and claim."""

    model: StudyModel
    pool: int = 5000
    prescreen_agreement: float = 0.9
    prescreen_bias: float = 0.0
    margin: float = 0.05
    confidence: float = 0.95
    claim: str = GENERAL
    min_raters: int = Gate.min_raters
    minutes_per_rating: float = MINUTE
    # gold (check) pairs per study pair whose outputs differ (the config's pool.gold_rate): they sit at random places
    # in the queue's order, so a study that has decided n pairs has served about gold_rate x n x (1 - identical share)
    # of them, each rated gold.gold_ratings(k, share) times (as a study pair)
    gold_rate: float = 0.1
    onboarding_minutes: float = ONBOARDING
    notes: list[str] = field(default_factory=list)
    # the largest planned size a design's search and confirmation try (--max-pairs, plain plan's ceiling too): past
    # it a design is reported as not reaching the power, not searched for minutes (organiser audit)
    max_pairs: int = MAX_PAIRS

    def check(self, power: float) -> None:
        """Every number of the scenario in its range (and the plan's, search.check_plan), or an EvalkitError naming
        the option and how to fix it (bad values would otherwise surface as a numpy error, a hang or a silently
        ignored bias)."""
        from ...errors import EvalkitError
        from .search import check_plan

        check_plan(self.model, self.margin, power, self.claim, self.min_raters)
        if self.max_pairs < self.model.prompts:
            raise EvalkitError(f"--max-pairs {self.max_pairs} is less than one round of the {self.model.prompts} "
                               "prompts", f"pass --max-pairs of at least {self.model.prompts}, e.g. {MAX_PAIRS}")
        if not (isinstance(self.pool, int) and self.pool >= 1):
            raise EvalkitError(f"--pool {self.pool}: expected the number of pooled pairs, 1 or more",
                               "give the pairs the pre-screen judges, e.g. --pool 5000")
        low, high = 1 - self.model.rater_accuracy, self.model.rater_accuracy
        if not low <= self.prescreen_agreement <= high:
            # a pre-screen that always answers the truth agrees with a rater as often as the rater is right
            raise EvalkitError(f"--prescreen-agreement {self.prescreen_agreement} is impossible with raters of accuracy "
                               f"{high:g}: agreement with one rater lies between {low:.2f} and {high:.2f}",
                               "give the pre-screen's agreement with one rater as a fraction, e.g. 0.9 (aggregate's "
                               "pre-screen table measures it)")
        if not 0 <= self.prescreen_bias < 1:
            raise EvalkitError(f"--prescreen-bias {self.prescreen_bias}: expected a bias towards assisted in [0, 1)",
                               "give the extra pass rate the pre-screen gives assisted outputs, e.g. 0.05; a bias "
                               "towards ordinary only makes KEEP harder, and is not simulated")
        if not self.minutes_per_rating > 0:
            raise EvalkitError(f"--minutes-per-rating {self.minutes_per_rating}: expected minutes, more than 0",
                               "give the minutes a rating takes, e.g. 1")
        if self.minutes_per_rating > MAX_MINUTES:
            raise EvalkitError(f"--minutes-per-rating {self.minutes_per_rating:g}: more than {MAX_MINUTES:g} minutes "
                               "a rating is not the time one rating takes", "give the minutes one rating takes (not "
                               f"seconds, not a total), e.g. 1; at most {MAX_MINUTES:g}")
        if not self.onboarding_minutes >= 0:
            raise EvalkitError(f"--onboarding-minutes {self.onboarding_minutes}: expected minutes, 0 or more",
                               "give a rater's time before their first rating, e.g. 10")

    def gold_ratings(self, design: Design, decided_pairs):
        """Human ratings of gold pairs served by the time `decided_pairs` are decided (mean or array)."""
        from ..gold import gold_ratings

        each = gold_ratings(design.raters_per_pair, design.second_rating_share)
        return self.gold_rate * decided_pairs * (1 - self.model.identical_share) * each

    def for_design(self, design: Design) -> StudyModel:
        model = replace(self.model, raters_per_pair=design.raters_per_pair)
        if hasattr(model, "second_rating_share"):
            model = replace(model, second_rating_share=design.second_rating_share if design.raters_per_pair == 1
                            else 0.0)
        if self.claim != GENERAL:  # the claim about these raters: their effects are fixed, not sampled
            model = replace(model, rater_sd=0.0, rater_path_sd=0.0)
        return model


def simulate(design: Design, scenario: Scenario, planned: int, studies: int, drops: dict, seed,
             criteria: tuple[str, ...] = CRITERIA) -> dict:
    """`studies` simulated studies of `design` with at most `planned` decided pairs: per criterion "keep" and "drop"
    (studies x looks: the look's lower end at or above -margin with enough raters; its upper end below -margin), and
    "ratings" (studies x looks: human ratings in the look's sample), "sizes" (decided pairs per look)."""
    import numpy as np

    from .search import RATINGS_PER_CHUNK

    values = design.values(planned, scenario.margin, scenario.confidence, scenario.claim)
    sizes = look_sizes(values)
    levels = look_levels(values, sizes)
    model = scenario.for_design(design)
    per_pair = design.raters_per_pair + design.second_rating_share
    extra = (scenario.pool - planned) if design.ppi else 0
    if extra < 0:
        raise ValueError(f"a pool of {scenario.pool} pairs cannot hold {planned} planned pairs")
    chunk = max(1, RATINGS_PER_CHUNK // int(planned * per_pair + extra + 1))
    parts = {c: {"keep": [], "drop": []} for c in criteria}
    ratings = []
    for i, start in enumerate(range(0, studies, chunk)):
        size = min(chunk, studies - start)
        rng = np.random.default_rng([*np.atleast_1d(seed).tolist(), i])
        looks = _chunk(design, scenario, model, planned, size, drops, rng, criteria, sizes, levels)
        for c in criteria:
            parts[c]["keep"].append(looks[c][0])
            parts[c]["drop"].append(looks[c][1])
        ratings.append(looks["ratings"])
    out = {c: {k: np.concatenate(v) for k, v in p.items()} for c, p in parts.items()}
    out["ratings"] = np.concatenate(ratings)
    out["sizes"] = sizes
    out["claim"] = scenario.claim  # how outcome() carries a pass, as the gate's walk does
    return out


def _chunk(design, scenario, model, planned, studies, drops, rng, criteria, sizes, levels) -> dict:
    import numpy as np

    from ..gate import fidelity_ok, raters_ok
    from .model import simulate as simulate_study
    from .ppibench import simulate_screened, truth_accuracy

    general = scenario.claim == GENERAL
    gate = {"claim": scenario.claim, "min_raters": scenario.min_raters}
    if design.ppi:
        truth = truth_accuracy(scenario.prescreen_agreement, model.rater_accuracy)
        sim = simulate_screened(model, planned, scenario.pool - planned, studies, drops, rng, truth,
                                scenario.prescreen_bias, criteria)
        same = sim["same"]
    else:
        sim = simulate_study(model, planned, studies, drops, rng, criteria)
        same = sim["identical"]
    pair, rater, pair_study = sim["pair"], sim["rater"], sim["pair_study"]
    n_rated_total = studies * planned
    local_rating = pair - (pair // planned) * planned  # rated pairs come first, study by study
    local_pair = np.arange(len(pair_study)) - pair_study * planned
    rated_slot = np.arange(len(pair_study)) < n_rated_total
    # the look each rating is first seen at, for the ratings count per look
    first_look = np.searchsorted(np.asarray(sizes), local_rating, side="right")
    counts = np.bincount(pair_study[pair] * (len(sizes) + 1) + first_look, minlength=studies * (len(sizes) + 1))
    ratings = np.cumsum(counts.reshape(studies, len(sizes) + 1)[:, :len(sizes)], axis=1)
    differing_share = None
    if design.monitoring == CONFIDENCE_SEQUENCE:  # PPI's share is stats.ppi_pool_difference's
        differing_share = (np.bincount(pair_study[rated_slot], weights=~same[rated_slot], minlength=studies)
                           / np.bincount(pair_study[rated_slot], minlength=studies))
    out = {"ratings": ratings}
    for c in criteria:
        keep = np.zeros((studies, len(sizes)), bool)
        drop = np.zeros((studies, len(sizes)), bool)
        x = sim["x"][c]
        if design.monitoring == CONFIDENCE_SEQUENCE:
            lows, highs, raters = _sequence_bounds(x, pair, rater, pair_study, same, studies, planned, sizes,
                                                   1 - scenario.confidence)
            lows, highs = differing_share[:, None] * lows, differing_share[:, None] * highs
            for j in range(len(sizes)):
                keep[:, j] = fidelity_ok(lows[:, j], scenario.margin) & raters_ok(raters[:, j], gate)
                drop[:, j] = highs[:, j] < -scenario.margin
            out[c] = (keep, drop)
            continue
        for j, (n, level) in enumerate(zip(sizes, levels)):
            if level >= 1 - 1e-12:  # a look the spending gives (almost) nothing: it cannot stop the study
                continue
            seen = local_rating < n
            if design.ppi:
                from ...stats.ppi import ppi_pool_difference

                res = ppi_pool_difference(x[seen], pair[seen], rater[seen], pair_study, sim["f"][c], same, studies,
                                          level, general, scenario.min_raters)
                low, high = res["low"], res["high"]
            else:
                from ...stats import paired_difference

                ident = same & (local_pair < n)
                res = paired_difference(x[seen], pair[seen], rater[seen], pair_study, studies, level,
                                        raters_in_general=general, identical=ident, interval=design.interval,
                                        bootstrap=False)
                low, high = res["low"], res["high"]
            enough = raters_ok(res["raters"], gate)
            keep[:, j] = fidelity_ok(low, scenario.margin) & enough
            with np.errstate(invalid="ignore"):
                drop[:, j] = (high < -scenario.margin) & enough
        out[c] = (keep, drop)
    return out


def _sequence_bounds(x, pair, rater, pair_study, same, studies, planned, sizes, alpha):
    """The betting confidence sequence's bounds at each look, on the pairs whose outputs differ (their pair means,
    in serving order), and the raters seen by then."""
    import numpy as np

    from ...stats.betting import betting_cs

    n_pairs = studies * planned
    r_p = np.bincount(pair, minlength=n_pairs)
    y = np.bincount(pair, weights=x, minlength=n_pairs) / np.maximum(r_p, 1)
    differ = ~same[:n_pairs]
    # ragged rows of differing pairs, padded with NaN at the end
    study = np.arange(n_pairs) // planned
    rank = np.cumsum(differ) - 1
    start = np.r_[0, np.cumsum(np.bincount(study[differ], minlength=studies))[:-1]]
    col = rank - start[study]
    width = int(col[differ].max()) + 1 if differ.any() else 1
    grid = np.full((studies, width), np.nan)
    grid[study[differ], col[differ]] = (y[differ] + 1) / 2
    low, high = betting_cs(grid, alpha)
    local = np.arange(n_pairs) - study * planned
    lows = np.full((studies, len(sizes)), -1.0)
    highs = np.full((studies, len(sizes)), 1.0)
    raters = np.zeros((studies, len(sizes)))
    local_rating = pair - (pair // planned) * planned
    for j, n in enumerate(sizes):
        count = np.bincount(study[differ & (local < n)], minlength=studies)
        at = np.clip(count - 1, 0, width - 1)
        got = count > 0
        lows[got, j] = 2 * low[got, at[got]] - 1
        highs[got, j] = 2 * high[got, at[got]] - 1
        seen = local_rating < n
        pairs_r = np.unique(pair_study[pair[seen]] * (rater.max() + 1) + rater[seen])
        raters[:, j] = np.bincount(pairs_r // (rater.max() + 1), minlength=studies)
    return lows, highs, raters


def outcome(looks: dict, criteria: tuple[str, ...] = CRITERIA) -> dict:
    """Where each simulated study stops: the first look by which every criterion has passed at some look (KEEP) or
    at which some criterion's upper end is below -margin (DROP), else the last look, where KEEP needs every criterion
    to have passed. Returns per
    study "keep" (bool), "ratings" (human ratings to the decision) and "look" (its index)."""
    import numpy as np

    # for a claim about raters in general a criterion that passed at a look stays passed (its own sequential test
    # has rejected): KEEP once all have; for one about these raters all must pass at one look (aggregate.looks.walk)
    carry = looks.get("claim", GENERAL) == GENERAL
    keep = np.logical_and.reduce([np.logical_or.accumulate(looks[c]["keep"], axis=1) if carry else looks[c]["keep"]
                                  for c in criteria])
    drop = np.logical_or.reduce([looks[c]["drop"] for c in criteria])
    last = keep.shape[1] - 1
    stop = keep | drop
    stop[:, last] = True
    at = np.argmax(stop, axis=1)
    rows = np.arange(len(at))
    return {"keep": keep[rows, at], "ratings": looks["ratings"][rows, at].astype(float),
            "pairs": np.asarray(looks["sizes"], float)[at], "look": at}


def combine(base: dict, dropping: dict, criterion: str) -> dict:
    """Looks of studies in which `criterion` is `dropping`'s and the others are `base`'s (criteria are independent in
    the model, so the ones that do not drop are drawn once and shared by every drop level)."""
    out = {c: (dropping[c] if c == criterion else base[c]) for c in CRITERIA}
    out["ratings"] = base["ratings"]
    out["sizes"] = base["sizes"]
    out["claim"] = base.get("claim", GENERAL)
    return out


SHARE_SPARE = 0.25  # the per-rater share's room over an even split: for raters who come late, rate less or not at all


def rater_share(design: Design, scenario: Scenario, planned: int, raters: int) -> int:
    """The app.max_ratings_per_rater that keeps `raters` raters sharing the ratings about evenly while letting the
    study reach its planned maximum: every rating there (study pairs whose outputs differ, and the gold pairs served
    meanwhile) over the raters, SHARE_SPARE more."""
    k = design.raters_per_pair + (design.second_rating_share if design.raters_per_pair == 1 else 0.0)
    most = planned * (1 - scenario.model.identical_share) * k + scenario.gold_ratings(design, planned)
    return math.ceil(most / raters * (1 + SHARE_SPARE))


def cost(ratings: float, minutes: float) -> float:
    """Rater-hours for a number of ratings."""
    return ratings * minutes / 60.0


def normal_pairs(design: Design, scenario: Scenario, power: float) -> int:
    """Pairs a normal approximation needs for a fixed design (a starting point for the search): the variance of a
    pair's difference shrinks with its raters and, with PPI, by the share the pre-screen explains."""
    from ...stats import z_for
    from .ppibench import truth_accuracy

    m = scenario.for_design(design)
    q, rho = m.rater_accuracy, m.identical_share
    per_criterion = power ** (1 / len(m.pass_rates))
    z = z_for(scenario.confidence) + z_for(2 * per_criterion - 1)
    worst = 0.0
    k = design.raters_per_pair + (design.second_rating_share if design.raters_per_pair == 1 else 0.0)
    for p in m.pass_rates.values():
        seen = q * p + (1 - q) * (1 - p)
        truth_var = 2 * p * (1 - p) * (1 - m.pair_correlation)
        noise = 2 * (seen * (1 - seen) - (2 * q - 1) ** 2 * p * (1 - p))
        var = (1 - rho) * (truth_var * (2 * q - 1) ** 2 + noise / k)
        if design.ppi:  # PPI leaves the share of the variance the pre-screen does not explain (1 - rho^2)
            a = truth_accuracy(scenario.prescreen_agreement, q)
            s_f = a * p + (1 - a) * (1 - p)
            var_f = (2 * a - 1) ** 2 * truth_var + 2 * (s_f * (1 - s_f) - (2 * a - 1) ** 2 * p * (1 - p))
            cov = (2 * a - 1) * (2 * q - 1) * truth_var
            var *= 1 - min(cov * cov / max(var_f * var / (1 - rho), 1e-12), 0.95)
        if design.interval == UNION:
            var = max(var, (1 - rho) * 2 * seen * (1 - seen))
        worst = max(worst, var)
    return max(m.prompts, math.ceil(worst * (z / scenario.margin) ** 2))
