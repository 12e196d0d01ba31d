"""The planned sample size: how many rated pairs the fidelity gate needs, found by simulating whole studies
through the very function the gate runs (stats.paired_difference, then gate.fidelity_ok on every criterion).

The simulated study: each pair's ordinary output truly passes a criterion with probability p (the pass rate);
its assisted output is the same text with probability `identical_share` (greedy decoding gives identical
outputs) and otherwise an independent draw that passes with probability p - drop'; each of R raters gives the
true answer with probability `rater_accuracy` (independently per output). A rated drop of `margin` means
drop' = margin / ((1 - identical_share) * (2 * accuracy - 1)), because rater errors shrink true differences.
Criteria are simulated independently; KEEP needs all four, so each is planned at about power^(1/4).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from .errors import EvalkitError
from .prompts import CRITERIA

DEFAULT_PASS_RATE = 0.8  # with no database: most outputs pass (pass rates near 0.5 need the most pairs)
DEFAULT_ACCURACY = 0.95  # with no ratings: raters agree on about 90% of answers
DEFAULT_RATERS = 10


@dataclass
class StudyModel:
    # per criterion: share of outputs that truly pass
    pass_rates: dict[str, float]
    # probability that a rater's pass / not-pass answer is the true one
    rater_accuracy: float = DEFAULT_ACCURACY
    # share of pairs whose two outputs are the same text
    identical_share: float = 0.0
    raters_per_pair: int = 3
    # raters in the study (assigned round-robin); the gate adds the two-way interval from 10 raters on
    raters: int = DEFAULT_RATERS
    # pairs come in whole rounds of the prompt set (one sample of every prompt)
    prompts: int = 5
    # where each number came from, for the printout
    sources: dict[str, str] = field(default_factory=dict)

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
        if self.raters < self.raters_per_pair:
            raise EvalkitError(f"{self.raters} raters cannot give {self.raters_per_pair} ratings to each pair",
                               "pass --raters at least --raters-per-pair")

    def true_drop(self, rated_drop: float) -> float:
        return rated_drop / ((1 - self.identical_share) * (2 * self.rater_accuracy - 1))


@dataclass
class PlanRow:
    pairs: int
    ratings: int
    keep_rate: float  # simulated studies with no true drop that end with every criterion inside the margin
    per_criterion: dict[str, float]


@dataclass
class Plan:
    margin: float
    confidence: float
    power: float
    studies: int
    model: StudyModel
    rows: list[PlanRow]
    recommended_pairs: int | None
    # simulated KEEP rate when one criterion truly drops by the margin (the others do not), worst criterion
    false_keep_rate: float | None = None
    false_keep_criterion: str | None = None
    notes: list[str] = field(default_factory=list)

    def gate_line(self) -> str | None:
        return None if self.recommended_pairs is None else f"planned_pairs = {self.recommended_pairs}"

    def to_json(self) -> dict:
        d = asdict(self)
        d["gate_line"] = self.gate_line()
        return d


def simulate_answers(model: StudyModel, pairs: int, studies: int, drops: dict[str, float], rng,
                     criteria: tuple[str, ...] = CRITERIA) -> dict:
    """Raters' pass / not-pass answers in `studies` simulated studies of `pairs` pairs each: per criterion the
    true status of both outputs of every pair ("truth": (ordinary, assisted)) and the answers of every rating
    ("seen": (ordinary, assisted)), with the index arrays stats.paired_difference takes (ratings of a pair
    are consecutive; raters are assigned round robin, R distinct raters per pair)."""
    import numpy as np

    r, k = model.raters_per_pair, model.raters
    n_total = studies * pairs
    pair = np.repeat(np.arange(n_total, dtype=np.int64), r)
    slot = np.tile(np.arange(r, dtype=np.int64), n_total)
    within = np.repeat(np.tile(np.arange(pairs, dtype=np.int64), studies), r)
    rater = (pair // pairs) * k + (within * r + slot) % k
    # a pair's two outputs are the same text (for every criterion) or independent draws
    same = rng.random(n_total, dtype=np.float32) < model.identical_share
    out = {"pair": pair, "rater": rater, "pair_study": np.arange(n_total, dtype=np.int64) // pairs,
           "same": same, "truth": {}, "seen": {}}
    q = model.rater_accuracy
    for c in criteria:
        p = model.pass_rates[c]
        p_a = p - model.true_drop(drops.get(c, 0.0))
        if p_a < 0:
            raise EvalkitError(f"a rated drop of {drops[c]} on {c} is impossible at pass rate {p}",
                               "use a smaller margin or a higher pass rate")
        y_o = rng.random(n_total, dtype=np.float32) < p
        y_a = np.where(same, y_o, rng.random(n_total, dtype=np.float32) < p_a)
        seen_o = np.repeat(y_o, r) ^ (rng.random(n_total * r, dtype=np.float32) >= q)
        seen_a = np.repeat(y_a, r) ^ (rng.random(n_total * r, dtype=np.float32) >= q)
        out["truth"][c], out["seen"][c] = (y_o, y_a), (seen_o, seen_a)
    return out


def simulate(model: StudyModel, pairs: int, studies: int, drops: dict[str, float], rng,
             criteria: tuple[str, ...] = CRITERIA) -> dict:
    """simulate_answers reduced to what the gate reads: per criterion x = assisted pass - ordinary pass."""
    import numpy as np

    sim = simulate_answers(model, pairs, studies, drops, rng, criteria)
    sim["x"] = {c: a.astype(np.int8) - o.astype(np.int8) for c, (o, a) in sim.pop("seen").items()}
    sim.pop("truth")
    sim.pop("same")
    return sim


def criterion_passes(sim: dict, studies: int, margin: float, confidence: float, resamples: int) -> dict:
    """Per criterion, per simulated study: does the gate's fidelity condition hold?"""
    from .gate import fidelity_ok
    from .stats import paired_difference

    return {c: fidelity_ok(paired_difference(x, sim["pair"], sim["rater"], sim["pair_study"], studies, confidence,
                                             resamples)["low"], margin)
            for c, x in sim["x"].items()}


def normal_guess(model: StudyModel, margin: float, confidence: float, power: float) -> int:
    """Pairs a normal approximation needs (a starting point for the simulation): Tango's variance is about
    the discordance rate per rating, and each criterion must pass with probability power^(1/4)."""
    from .stats import z_for

    q, rho = model.rater_accuracy, model.identical_share
    worst = 0.0
    for p in model.pass_rates.values():
        seen = q * p + (1 - q) * (1 - p)
        worst = max(worst, rho * 2 * q * (1 - q) + (1 - rho) * 2 * seen * (1 - seen))
    per_criterion = power ** (1 / len(model.pass_rates))
    z = z_for(confidence) + z_for(2 * per_criterion - 1)
    return max(model.prompts, math.ceil(z * z * worst / margin**2))


def plan_study(model: StudyModel, margin: float, confidence: float = 0.95, power: float = 0.8,
               resamples: int = 2000, studies: int = 400, seed: int = 0) -> Plan:
    """Smallest number of pairs (a whole number of prompt rounds) whose simulated KEEP rate with no true drop
    reaches `power`, walking in steps of about 10% from the normal approximation; then the false-KEEP rate
    there when one criterion truly drops by the margin (the others do not)."""
    import numpy as np

    model.check()
    if not 0 < margin < 1:
        raise EvalkitError(f"margin {margin} must be between 0 and 1", "pass --margin as a fraction, e.g. 0.05")
    if not 0 < power < 1:
        raise EvalkitError(f"power {power} must be between 0 and 1", "pass --power as a fraction, e.g. 0.8")
    if studies < 50:
        raise EvalkitError(f"--studies {studies} is too few to estimate a rate", "simulate at least 50 studies per size")
    step = model.prompts

    def rounded(n: float) -> int:
        return max(step, int(math.ceil(n / step)) * step)

    guess = normal_guess(model, margin, confidence, power)
    rows: dict[int, PlanRow] = {}
    cache: dict[int, dict] = {}

    def run(n: int) -> PlanRow:
        if n not in rows:
            rng = np.random.default_rng([seed, n])
            sim = simulate(model, n, studies, {}, rng)
            passes = criterion_passes(sim, studies, margin, confidence, resamples)
            cache[n] = passes
            keep = np.logical_and.reduce(list(passes.values()))
            rows[n] = PlanRow(pairs=n, ratings=n * model.raters_per_pair, keep_rate=float(keep.mean()),
                              per_criterion={c: float(v.mean()) for c, v in passes.items()})
        return rows[n]

    # walk from the normal approximation in steps of about 10% until the KEEP rate crosses the target
    n = rounded(guess)
    if run(n).keep_rate >= power:
        while n > step and len(rows) < 12:
            smaller = rounded(n / 1.1) if rounded(n / 1.1) < n else n - step
            if run(smaller).keep_rate < power:
                break
            n = smaller
    else:
        while run(n).keep_rate < power and n < 1_000_000 and len(rows) < 20:
            n = rounded(n * (1.1 if len(rows) < 6 else 1.5))

    def smallest_reaching() -> int | None:  # from which every larger simulated size also reaches the target
        best = None
        for r in sorted(rows.values(), key=lambda r: -r.pairs):
            if r.keep_rate < power:
                break
            best = r.pairs
        return best

    recommended = smallest_reaching()
    for _ in range(2):  # halve the last step where it was wide (more than 4%)
        below = [n for n in rows if recommended is not None and n < recommended]
        if recommended is None or not below or recommended - max(below) <= max(step, 0.04 * recommended):
            break
        run(rounded((recommended + max(below)) / 2))
        recommended = smallest_reaching()
    if recommended is not None:  # context: what half the size would give
        run(rounded(recommended * 0.5))
        recommended = smallest_reaching()
    rows_list = sorted(rows.values(), key=lambda r: r.pairs)
    plan = Plan(margin=margin, confidence=confidence, power=power, studies=studies, model=model, rows=rows_list,
                recommended_pairs=recommended)
    if recommended is not None:
        worst, worst_c = -1.0, None
        for c in CRITERIA:
            rng = np.random.default_rng([seed, recommended, 1 + CRITERIA.index(c)])
            sim = simulate(model, recommended, studies, {c: margin}, rng, criteria=(c,))
            failing = criterion_passes(sim, studies, margin, confidence, resamples)[c]
            others = [v for k, v in cache[recommended].items() if k != c]
            rate = float(np.logical_and.reduce([failing, *others]).mean())
            if rate > worst:
                worst, worst_c = rate, c
        plan.false_keep_rate, plan.false_keep_criterion = worst, worst_c
    half = 1.96 * math.sqrt(power * (1 - power) / studies)
    plan.notes.append(f"each rate is from {studies} simulated studies (Monte-Carlo error about ±{half:.3f} at {power:.0%})")
    plan.notes.append(f"nominal false-KEEP rate per criterion: {(1 - confidence) / 2:.3f} (one-sided, the lower end of the "
                      f"{confidence:.0%} interval)")
    return plan


def model_from_db(db, raters_per_pair: int, pass_rate: float | None = None, raters: int | None = None,
                  prompts: int | None = None) -> StudyModel:
    """The study model from what the database holds: the rule pre-screen's pass rate per criterion on the pair
    pool, the share of pairs with identical outputs, the raters' observed agreement (turned into an accuracy:
    two raters agree with probability a^2 + (1 - a)^2) and the number of raters. Defaults where it holds
    nothing; --pass-rate and --raters override."""
    import numpy as np

    from .fidelity import RULES_VERSION, screen_all

    sources = {}
    model = StudyModel(pass_rates={c: DEFAULT_PASS_RATE for c in CRITERIA}, raters_per_pair=raters_per_pair)
    sources["pass_rates"] = f"default {DEFAULT_PASS_RATE}"
    sources["rater_accuracy"] = f"default {DEFAULT_ACCURACY}"
    sources["identical_share"] = "default 0 (no pair pool)"
    sources["raters"] = f"default {DEFAULT_RATERS}"
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
        same, n = db.execute(
            """SELECT SUM(o.token_hash = a.token_hash), COUNT(*) FROM pairs p
               JOIN generations o ON o.id = p.ordinary_generation_id JOIN generations a ON a.id = p.assisted_generation_id"""
        ).fetchone()
        if n:
            model.identical_share = min(float(same or 0) / n, 0.99)
            sources["identical_share"] = f"pair pool: {same or 0} of {n} pairs have identical outputs"
        model.prompts = prompts or int(db.execute("SELECT COUNT(DISTINCT prompt_id) FROM pairs").fetchone()[0])
        from .aggregate import load_ratings
        from .records import COMPARED

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
            if n_raters >= raters_per_pair:
                model.raters = n_raters
                sources["raters"] = f"database: {n_raters} raters so far"
    if prompts:
        model.prompts = prompts
    if pass_rate is not None:
        model.pass_rates = {c: pass_rate for c in CRITERIA}
        sources["pass_rates"] = "--pass-rate"
    if raters is not None:
        model.raters = raters
        sources["raters"] = "--raters"
    model.sources = sources
    return model


def format_plan(plan: Plan) -> str:
    m = plan.model
    lines = [
        f"Planned sample size for the fidelity gate: margin {plan.margin:.3f}, {plan.confidence:.0%} interval, "
        f"target power {plan.power:.0%}",
        "",
        "study model (simulated):",
        *(f"  pass rate {c:<22} {p:.3f}" for c, p in m.pass_rates.items()),
        f"    from: {m.sources.get('pass_rates', '')}",
        f"  rater accuracy               {m.rater_accuracy:.3f}  ({m.sources.get('rater_accuracy', '')})",
        f"  identical outputs            {m.identical_share:.3f}  ({m.sources.get('identical_share', '')})",
        f"  raters per pair              {m.raters_per_pair}",
        f"  raters                       {m.raters}  ({m.sources.get('raters', '')})",
        "",
        f"{'pairs':>7} {'ratings':>8} {'KEEP rate, no true drop':>24}   per criterion",
    ]
    for r in plan.rows:
        mark = " <- planned" if r.pairs == plan.recommended_pairs else ""
        per = "  ".join(f"{v:.2f}" for v in r.per_criterion.values())
        lines.append(f"{r.pairs:>7} {r.ratings:>8} {r.keep_rate:>24.3f}   {per}{mark}")
    lines.append("")
    if plan.recommended_pairs is None:
        lines.append("no size in the search reached the target power: widen the margin or lower --power")
    else:
        lines.append(f"false KEEP rate when {plan.false_keep_criterion} truly drops by the margin: "
                     f"{plan.false_keep_rate:.3f}")
        samples = math.ceil(plan.recommended_pairs / m.prompts)
        lines += ["", "Put this line in the gate file before rating starts (it is frozen with the experiment):",
                  f"  {plan.gate_line()}",
                  f"and build a pool of that size: evalkit generate --samples {samples} ({m.prompts} prompts)"]
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)
