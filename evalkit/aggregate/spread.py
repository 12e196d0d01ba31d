"""How the ratings spread over raters, against the roster the plan assumed.

For a claim about raters in general the interval's raters' part has about G - 1 degrees of freedom when G raters
share the ratings evenly, and fewer when a few raters give most of them (stats.clustered: Bell & McCaffrey's df).
`evalkit plan --compare` sized the study for a roster (the gate's planned_raters); with fewer raters, or the same
raters spread unevenly, the level holds and the power falls. The organiser should know while raters can still be
invited, so the aggregate says where the spread stands."""

from __future__ import annotations

from dataclasses import dataclass

from ..study.gate import GENERAL


def effective_raters(per_rater) -> float:
    """Kish's effective number of raters, (sum c)^2 / sum c^2 over each rater's count of ratings: G when G raters
    give as many ratings each, fewer when the ratings are spread unevenly. 0 with no ratings. Within a few percent
    of the raters' part's Bell-McCaffrey degrees of freedom + 1 (tests/test_roster_spread.py)."""
    counts = [float(c) for c in per_rater if c > 0]
    squares = sum(c * c for c in counts)
    return sum(counts) ** 2 / squares if squares else 0.0


def roster_note(per_rater, values: dict | None, decided: bool = False) -> str:
    """A note for the verdict when the gate states the roster its power assumes (planned_raters, claim about raters
    in general): how many raters have rated, how evenly, and, while the study runs with fewer than planned, what
    that means. '' otherwise."""
    if not values or values.get("claim", GENERAL) != GENERAL or not values.get("planned_raters"):
        return ""
    planned = int(values["planned_raters"])
    rated = sum(1 for c in per_rater if c > 0)
    if not rated:
        return ""
    from .notes import note

    even = effective_raters(per_rater)
    spread = (note("raters spread", rated=rated, even=even, dof=max(even - 1, 0)) if rated > 1 else note("one rater"))
    # decided: nothing to advise, the verdict stands with the power it had
    key = "roster as planned" if even >= 0.95 * planned else "roster decided" if decided else "roster short"
    return note(key, spread=spread, planned=planned)


# From a rater x path spread of 0.75 (logit-scale sd of raters' own extra leniency towards one path) the interval for
# raters in general was measured to pass a criterion that drops by the margin in more than the one-sided 2.5% of
# studies (README, "Where raters disagree widely about one path": 2.88% at 0.75 with 10 raters, 0.95-1.47% from 0.2
# to 0.4), in errorbench's scenario (pass rate 0.8, rater accuracy 0.95, raters' leniency sd 0.5). The note reads the
# spread on the probability scale, where the ratings measure it without a model: the sd of a rater's own
# assisted - ordinary pass rate.
WIDE_LOGIT_SD = 0.75
MIN_SPREAD_RATINGS = 100  # fewer ratings say too little about how raters differ to be worth a note


def wide_spread() -> float:
    """WIDE_LOGIT_SD on the probability scale: the sd of a rater's own assisted - ordinary pass rate in the scenario
    where the level was measured (evalkit.study.plan.errorbench.Grid's defaults) at that spread
    (evalkit.study.plan.model.StudyModel.rater_effect_sd; about 0.048)."""
    from ..study.plan.errorbench import Grid
    from ..study.plan.model import DEFAULT_PASS_RATE, StudyModel
    from ..task.criteria import CRITERIA

    model = StudyModel(pass_rates={c: DEFAULT_PASS_RATE for c in CRITERIA}, rater_accuracy=Grid.rater_accuracy,
                       rater_sd=Grid.rater_sd, rater_path_sd=WIDE_LOGIT_SD)
    return model.rater_effect_sd(CRITERIA[0])


# The note needs the raters' differences to be there beyond chance too (a permutation test of the pooled one-way F
# ratio, at this level): at an early look the estimate alone reaches the limit in one study in six where raters do
# not differ at all.
SPREAD_TEST_LEVEL = 0.01
PERMUTATIONS = 499  # a p-value of 0.01 then means at most 4 permutations at or above the observed ratio


@dataclass
class PathSpread:
    """How widely raters differ in their own assisted - ordinary pass rate: its sd over raters per criterion and on
    average over the criteria (the mean variance, floored at 0, as an sd), the one-way F ratio pooled over the
    criteria, and its permutation p-value (raters differ beyond chance where it is at most SPREAD_TEST_LEVEL)."""

    per_criterion: dict[str, float]
    mean: float
    f_ratio: float
    p_value: float

    @property
    def beyond_chance(self) -> bool:
        return self.p_value <= SPREAD_TEST_LEVEL


def rater_path_spreads(ratings, permutations: int = PERMUTATIONS, seed: int = 0,
                       test_from: float = 0.0) -> PathSpread | None:
    """PathSpread from the study's own ratings of pairs whose texts differ: per criterion the one-way moment estimate
    of the variance over raters of x = assisted - ordinary passed (plan.pilot.rater_spread_oneway, every rating; pair
    effects are noise within a rater, since the queue serves pairs in a random order). The pooled F ratio is the mean
    MS_between over the mean MS_within; its p-value comes from giving the ratings' rows to the raters at random
    (each rater keeping her count), which is what the queue's random order makes of no rater x path effect. A
    rating's answers move together, so answers correlated across criteria need no assumption. Fixed seed: the same
    answer on every reading. The test (a tenth of a second) runs only where the mean reaches test_from;
    elsewhere, and with permutations=0, p_value is NaN. None with fewer than three raters or MIN_SPREAD_RATINGS
    ratings."""
    import math

    import numpy as np

    from ..records import COMPARED
    from ..study.plan.pilot import oneway_by_rater
    from ..task.criteria import CRITERIA

    if not len(ratings):
        return None
    differ = ~ratings.identical[ratings.pair]
    rater = np.unique(ratings.rater[differ], return_inverse=True)[1]
    g = int(rater.max()) + 1 if len(rater) else 0
    if differ.sum() < MIN_SPREAD_RATINGS or g < 3:
        return None
    ordinary, assisted = (str(p) for p in COMPARED)
    x = np.stack([ratings.passed(assisted, c)[differ].astype(float) - ratings.passed(ordinary, c)[differ].astype(float)
                  for c in CRITERIA], axis=1)
    fits = [oneway_by_rater(x[:, k], rater) for k in range(len(CRITERIA))]
    own = {c: (b - w) / n0 for c, (b, w, n0, _g) in zip(CRITERIA, fits)}
    between = sum(f[0] for f in fits) / len(fits)
    within = sum(f[1] for f in fits) / len(fits)
    # the mean before the floor (no upward bias), as the plan's pilot averages them
    mean = math.sqrt(max(sum(own.values()) / len(own), 0.0))
    p_value = math.nan
    if permutations and mean >= test_from:
        # with the counts per rater fixed, the pooled F ratio grows with sum_j sum_c S_jc^2 / n_j (S: a rater's sums)
        n = np.bincount(rater, minlength=g).astype(float)

        def statistic(rows):
            sums = np.stack([np.bincount(rater, weights=rows[:, k], minlength=g) for k in range(rows.shape[1])], 1)
            return float(((sums ** 2).sum(axis=1) / n).sum())

        observed = statistic(x)
        rng = np.random.default_rng(seed)
        above = sum(statistic(x[rng.permutation(len(x))]) >= observed * (1 - 1e-12) for _ in range(permutations))
        p_value = (1 + above) / (1 + permutations)
    return PathSpread(per_criterion={c: math.sqrt(max(v, 0.0)) for c, v in own.items()}, mean=mean,
                      f_ratio=between / within if within > 0 else math.inf, p_value=p_value)


def disagreement_note(ratings, values: dict | None, spread: PathSpread | None = None) -> str:
    """A note for the verdict where a claim about raters in general rests on ratings whose raters differ widely about
    one path: rater_path_spreads' mean over the criteria at or above wide_spread(), and beyond chance. There the
    interval's level was measured to slip, so a KEEP is weaker than its stated error rate. Judged on the mean, as the
    measurements set the spread on every criterion alike: one criterion's estimate alone is too noisy with ten raters
    (at no spread at all, one of four criteria would reach the limit in about one study in nine). spread: these
    ratings' rater_path_spreads with test_from=wide_spread(), where the caller has it already. '' otherwise."""
    if not values or values.get("claim", GENERAL) != GENERAL:
        return ""
    limit = wide_spread()
    spread = spread if spread is not None else rater_path_spreads(ratings, test_from=limit)
    if spread is None or spread.mean < limit or not spread.beyond_chance:
        return ""
    from .notes import note

    each = ", ".join(f"{c} {100 * s:.1f}" for c, s in spread.per_criterion.items())
    return note("raters differ", mean=100 * spread.mean, each=each, f=spread.f_ratio, p=spread.p_value,
                limit=100 * limit, logit=WIDE_LOGIT_SD)
