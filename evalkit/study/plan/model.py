"""The simulated study: what `evalkit plan`, `scripts/errorbench.py` and the synthetic studies of the tests draw.

Per pair and criterion, the ordinary output truly passes with probability p (the pass rate). The assisted output
is the same text with probability `identical_share`; otherwise it is its own output, which truly passes with
probability p_a, and the two sides share the pair's difficulty: their pass statuses are thresholds of two normal
variables with correlation `pair_correlation` (a prompt that is hard for one path is hard for the other).

Each pair whose texts differ gets raters_per_pair ratings; with one rating per pair, a random share
`second_rating_share` of the pairs gets a second (as the queue serves a pool whose quotas store.draw_queue_order drew:
which pairs are doubled is independent of their answers). Each rating is one rater's answer on each side. Rater j says "pass" with probability
expit(+-L + u_j + v_j [assisted side of a pair whose texts differ]), +L when the output truly passes, -L when it
does not, with L = logit(rater_accuracy): with no rater effects every rater is right with probability
`rater_accuracy`. u_j ~ N(0, rater_sd^2) is the rater's leniency (a main effect, on both sides alike) and
v_j ~ N(0, rater_path_sd^2) how much more (or less) the rater passes assisted outputs than ordinary ones (a rater x
path effect; blind raters cannot tell the paths apart on identical texts, so it applies only where the texts
differ). Rater effects are drawn per criterion, independently; so are the criteria.

A drop is the population's rated drop: E[assisted passed - ordinary passed] over pairs and over raters drawn from
the population, which is what the gate's interval claims to cover for raters in general. true_rates() finds the
p_a that gives exactly that drop (Gauss-Hermite quadrature over the rater effects).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from ...errors import EvalkitError
from ...task.criteria import CRITERIA

DEFAULT_PASS_RATE = 0.8  # with no database: most outputs pass (pass rates near 0.5 need the most pairs)
DEFAULT_ACCURACY = 0.95  # with no ratings: raters agree on about 90% of answers
DEFAULT_RATERS = 10


MAX_RATERS = 10_000  # --raters beyond this tried to allocate tens of GiB (plan audit, 2026-12-04)


@dataclass
class StudyModel:
    # per criterion: share of ordinary outputs that truly pass
    pass_rates: dict[str, float]
    # probability that a rater's pass / not-pass answer is the true one (with no rater effects)
    rater_accuracy: float = DEFAULT_ACCURACY
    # share of pairs whose two outputs are the same text
    identical_share: float = 0.0
    raters_per_pair: int = 3
    # with raters_per_pair = 1: share of pairs that get a second rating (the gate's second_rating_share), drawn at
    # random; ignored from 2 ratings per pair on
    second_rating_share: float = 0.0
    # raters in the study (assigned round-robin)
    raters: int = DEFAULT_RATERS
    # pairs come in whole rounds of the prompt set (one sample of every prompt)
    prompts: int = 5
    # correlation of the latent quality of a pair's two outputs (where they differ): shared difficulty
    pair_correlation: float = 0.0
    # standard deviation of raters' leniency, logit scale (rater main effect)
    rater_sd: float = 0.0
    # standard deviation of raters' extra leniency towards assisted outputs, logit scale (rater x path effect)
    rater_path_sd: float = 0.0
    # where each number came from, for the printout
    sources: dict[str, str] = field(default_factory=dict)
    # what the printout must add about these numbers (a pilot too small to estimate them), as the plan's notes
    notes: list[str] = field(default_factory=list)

    def check(self) -> None:
        for c, p in self.pass_rates.items():
            if not 0 < p < 1:
                raise EvalkitError(f"pass rate {p} for {c} is not between 0 and 1", "pass --pass-rate between 0 and 1, e.g. 0.8")
        if not 0.5 < self.rater_accuracy <= 1:
            raise EvalkitError(f"rater accuracy {self.rater_accuracy} must be above 0.5 and at most 1",
                               "raters who agree less than chance carry no evidence: check the guidelines")
        if not 0 <= self.identical_share < 1:
            raise EvalkitError(f"identical share {self.identical_share} must be in [0, 1)",
                               "with identical outputs on every pair there is nothing to compare: no study is needed")
        if self.raters_per_pair < 1:
            raise EvalkitError(f"--raters-per-pair {self.raters_per_pair} must be at least 1", "pass a positive number")
        if not 0 <= self.second_rating_share <= 1:
            raise EvalkitError(f"--second-rating-share {self.second_rating_share} must be in [0, 1]",
                               "pass the share of pairs rated twice as a fraction, e.g. 0.1")
        if self.raters > MAX_RATERS:  # the simulation holds a rater effect per rater and study: memory runs out
            raise EvalkitError(f"--raters {self.raters} is more than the plan simulates ({MAX_RATERS:,})",
                               f"pass the raters the study will have, at most {MAX_RATERS:,}")
        if self.raters < self.max_ratings_per_pair:
            raise EvalkitError(f"{self.raters} raters cannot give {self.max_ratings_per_pair} ratings to a pair",
                               "pass --raters at least --raters-per-pair (2 with a second rating share)")
        if not 0 <= self.pair_correlation < 1:
            raise EvalkitError(f"pair correlation {self.pair_correlation} must be in [0, 1)",
                               "pass --pair-correlation as a correlation, e.g. 0.3 (0: the sides are independent)")
        for name, v in (("rater-sd", self.rater_sd), ("rater-path-sd", self.rater_path_sd)):
            if not 0 <= v <= 10:
                raise EvalkitError(f"--{name} {v} must be between 0 and 10 (a standard deviation on the logit scale)",
                                   f"pass --{name} as a logit-scale standard deviation, e.g. 0.5")

    @property
    def doubles(self) -> bool:
        """Whether some pairs get a second rating (one rating per pair and a positive second_rating_share)."""
        return self.raters_per_pair == 1 and self.second_rating_share > 0

    @property
    def max_ratings_per_pair(self) -> int:
        return 2 if self.doubles else self.raters_per_pair

    @property
    def mean_ratings_per_pair(self) -> float:
        """Ratings a rated pair gets on average: raters_per_pair, or 1 + second_rating_share with one per pair."""
        return 1 + self.second_rating_share if self.doubles else float(self.raters_per_pair)

    def expected_ratings(self, pairs: int) -> int:
        """Human ratings a study of `pairs` decided pairs is expected to need: identical pairs need none; with one
        rating per pair, the pairs rated twice count twice."""
        rated = int(round(pairs * (1 - self.identical_share)))
        if not self.doubles:
            return rated * self.raters_per_pair
        return int(round(rated * self.mean_ratings_per_pair))

    @property
    def logit_accuracy(self) -> float:
        q = self.rater_accuracy
        return math.inf if q >= 1 else math.log(q / (1 - q))

    def answer_rates(self, sd: float) -> tuple[float, float]:
        """(P(pass | output passes), P(pass | output fails)) for a rater drawn from the population, when the
        rater's logit shift on that side has standard deviation sd."""
        return expected_expit(self.logit_accuracy, sd), expected_expit(-self.logit_accuracy, sd)

    def true_rates(self, criterion: str, rated_drop: float = 0.0) -> tuple[float, float]:
        """(p, p_a): the true pass rates of the ordinary and (where the texts differ) the assisted outputs that make
        the population's rated drop (assisted - ordinary) equal -rated_drop."""
        p = self.pass_rates[criterion]
        a_o, b_o = self.answer_rates(self.rater_sd)
        a_a, b_a = self.answer_rates(math.hypot(self.rater_sd, self.rater_path_sd))
        rated_o = p * a_o + (1 - p) * b_o
        rated_a = rated_o - (rated_drop / (1 - self.identical_share) if rated_drop else 0.0)  # share 1: no drop
        p_a = (rated_a - b_a) / (a_a - b_a)
        if not 0 <= p_a <= 1:
            raise self._impossible_drop(criterion, rated_drop, p)
        return p, p_a

    def _impossible_drop(self, criterion: str, rated_drop: float, p: float) -> EvalkitError:
        """Why no assisted pass rate makes this drop: identical pairs carry none of it, so the pairs that differ carry
        it all (a pool of greedy float32 pairs, nearly all identical, asked for a drop many times the margin)."""
        if self.identical_share > 0:
            source = self.sources.get("identical_share", "")
            return EvalkitError(
                f"a rated drop of {rated_drop:g} on {criterion} over all pairs is impossible at pass rate {p:g}: "
                f"{self.identical_share:.0%} of pairs have identical outputs" + (f" ({source})" if source else "")
                + f" and count as no difference, so the pairs that differ would have to drop by "
                f"{rated_drop / (1 - self.identical_share):.2f}",
                "a pool whose every pair is identical is decided without raters (The decision, in the README): no "
                "rating plan is needed; to plan a study whose outputs differ (sampled decoding, another dtype), build "
                "its pool first (`evalkit generate` on that config with a new --db) and plan with that --db")
        return EvalkitError(f"a rated drop of {rated_drop:g} on {criterion} is impossible at pass rate {p:g} with "
                            "these raters", "use a smaller margin (--margin) or a higher pass rate (--pass-rate)")

    def rater_effect_sd(self, criterion: str, rated_drop: float = 0.0) -> float:
        """Standard deviation, over raters drawn from the population, of a rater's own expected difference
        (assisted - ordinary passed): the part of the error that more pairs cannot shrink, only more raters."""
        if self.rater_path_sd == 0 and self.rater_sd == 0:
            return 0.0
        p, p_a = self.true_rates(criterion, rated_drop)
        nodes, weights = normal_nodes(48)
        u = self.rater_sd * nodes[:, None]
        v = self.rater_path_sd * nodes[None, :]
        big = min(self.logit_accuracy, 60.0)
        rated_o = p * expit(big + u) + (1 - p) * expit(-big + u)
        rated_a = p_a * expit(big + u + v) + (1 - p_a) * expit(-big + u + v)
        own = (1 - self.identical_share) * (rated_a - rated_o)
        w2 = weights[:, None] * weights[None, :]
        mean = float((w2 * own).sum())
        return math.sqrt(max(float((w2 * (own - mean) ** 2).sum()), 0.0))


@functools.lru_cache(maxsize=8)
def normal_nodes(count: int = 48):
    """Gauss-Hermite nodes and weights (summing to 1) for expectations over a standard normal."""
    import numpy as np

    nodes, weights = np.polynomial.hermite_e.hermegauss(count)
    return nodes, weights / weights.sum()


def expected_expit(mean: float, sd: float) -> float:
    """E[expit(mean + sd Z)], Z standard normal (Gauss-Hermite quadrature, 64 nodes)."""
    if math.isinf(mean):
        return 1.0 if mean > 0 else 0.0
    if sd == 0:
        return float(expit(mean))
    nodes, weights = normal_nodes(64)
    return float(weights @ expit(mean + sd * nodes))


def expit(x):
    import numpy as np

    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(float)
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))  # float32 stays float32: simulated answers need no more


def simulate_answers(model: StudyModel, pairs: int, studies: int, drops: dict[str, float], rng,
                     criteria: tuple[str, ...] = CRITERIA) -> dict:
    """Raters' pass / not-pass answers in `studies` simulated studies of `pairs` pairs each: per criterion the
    true status of both outputs of every pair ("truth": (ordinary, assisted)) and the answers of every rating
    ("seen": (ordinary, assisted)), with the index arrays stats.paired_difference takes (ratings of a pair
    are consecutive), and per pair the ratings it gets ("wanted": raters_per_pair, or 2 where a second rating was
    drawn). Pairs whose outputs are the same text ("same") get no ratings, as in the app, where the queue never
    serves them. Raters take turns: pair i of a study goes to raters i, i + 1, .., i + R - 1 (modulo the
    raters; a second rating of a pair goes to rater i + 1), so every rater rates about as many pairs, each with different partners (fixed teams of R would make a
    design in which raters' effects cannot be told from pairs'). drops: the population's rated drop per criterion
    (see the module's docstring)."""
    from statistics import NormalDist

    import numpy as np

    k = model.raters
    n_total = studies * pairs
    # a pair's two outputs are the same text (for every criterion) or two outputs of the same prompt
    same = rng.random(n_total, dtype=np.float32) < model.identical_share
    if model.doubles:  # one rating per pair, two for a random share of them (drawn independently of the answers)
        r = 1 + (rng.random(n_total, dtype=np.float32) < model.second_rating_share).astype(np.int64)
        pair = np.repeat(np.arange(n_total, dtype=np.int64), r)
        starts = np.cumsum(r) - r
        slot = np.arange(len(pair), dtype=np.int64) - np.repeat(starts, r)
    else:
        r = model.raters_per_pair
        pair = np.repeat(np.arange(n_total, dtype=np.int64), r)
        slot = np.tile(np.arange(r, dtype=np.int64), n_total)
    rater = (pair // pairs) * k + (pair % pairs + slot) % k
    total = len(pair)
    out = {"pair": pair, "rater": rater, "pair_study": np.arange(n_total, dtype=np.int64) // pairs,
           "same": same, "wanted": np.broadcast_to(np.asarray(r, np.int8), (n_total,)), "truth": {}, "seen": {}}
    q, rho = model.rater_accuracy, model.pair_correlation
    effects = model.rater_sd > 0 or model.rater_path_sd > 0
    for c in criteria:
        p, p_a = model.true_rates(c, drops.get(c, 0.0))
        if rho > 0:
            shared = rng.standard_normal(n_total, dtype=np.float32) * np.float32(math.sqrt(rho))
            own = np.float32(math.sqrt(1 - rho))
            cut_o, cut_a = (NormalDist().inv_cdf(min(max(v, 1e-12), 1 - 1e-12)) for v in (p, p_a))
            y_o = shared + own * rng.standard_normal(n_total, dtype=np.float32) < cut_o
            draw_a = shared + own * rng.standard_normal(n_total, dtype=np.float32) < cut_a
        else:
            y_o = rng.random(n_total, dtype=np.float32) < p
            draw_a = rng.random(n_total, dtype=np.float32) < p_a
        y_a = np.where(same, y_o, draw_a)
        if not effects:  # every rater right with probability q, independently per output
            seen_o = np.repeat(y_o, r) ^ (rng.random(total, dtype=np.float32) >= q)
            seen_a = np.repeat(y_a, r) ^ (rng.random(total, dtype=np.float32) >= q)
        else:
            big = np.float32(min(model.logit_accuracy, 60.0))
            u = (rng.standard_normal(studies * k, dtype=np.float32) * np.float32(model.rater_sd))[rater]
            v = (rng.standard_normal(studies * k, dtype=np.float32) * np.float32(model.rater_path_sd))[rater]
            logit_o = np.where(np.repeat(y_o, r), big, -big) + u
            logit_a = np.where(np.repeat(y_a, r), big, -big) + u + np.where(np.repeat(same, r), np.float32(0), v)
            seen_o = rng.random(total, dtype=np.float32) < expit(logit_o)
            seen_a = rng.random(total, dtype=np.float32) < expit(logit_a)
        out["truth"][c], out["seen"][c] = (y_o, y_a), (seen_o, seen_a)
    if model.identical_share > 0:  # identical pairs are decided without raters (the queue never serves them)
        rated = ~np.repeat(same, r)
        out["pair"], out["rater"] = pair[rated], rater[rated]
        for c in criteria:
            out["seen"][c] = tuple(v[rated] for v in out["seen"][c])
    return out


def simulate(model: StudyModel, pairs: int, studies: int, drops: dict[str, float], rng,
             criteria: tuple[str, ...] = CRITERIA) -> dict:
    """simulate_answers reduced to what the gate reads: per criterion x = assisted pass - ordinary pass."""
    import numpy as np

    sim = simulate_answers(model, pairs, studies, drops, rng, criteria)
    sim["x"] = {c: a.astype(np.int8) - o.astype(np.int8) for c, (o, a) in sim.pop("seen").items()}
    sim.pop("truth")
    sim["identical"] = sim.pop("same")  # exact zeros in the gate's paired difference, without ratings
    return sim


def rated_pairs(sim: dict, studies: int):
    """Per simulated study, its pairs that raters rate (not identical): gate.enough_raters_for's count."""
    import numpy as np

    same = sim.get("identical")
    unrated = np.zeros(len(sim["pair_study"]), bool) if same is None else np.asarray(same, bool)
    return np.bincount(sim["pair_study"], weights=~unrated, minlength=studies)
