"""The planned sample size: how many rated pairs the fidelity gate needs, found by simulating whole studies (the
model in plan/model.py) through the very functions the gate runs (stats.paired_difference, gate.fidelity_ok and
gate.raters_ok on every criterion). Criteria are simulated independently; KEEP needs all of them.

The search runs `studies` simulated studies per size; the size it settles on is then confirmed on at least 2,000
fresh studies (power with its Monte-Carlo interval), and the false-KEEP rate there, when one criterion truly drops
by the margin, is checked against the one-sided level: a plan whose false-KEEP rate exceeds it beyond Monte-Carlo
error is refused, and gives no planned_pairs line.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from ...errors import EvalkitError
from ..gate import GENERAL, Gate
from ...task.criteria import CRITERIA
from .model import StudyModel, rated_pairs, simulate

MIN_CONFIRM = 2000  # fresh simulated studies behind the confirmed power and the false-KEEP check
RATINGS_PER_CHUNK = 3_000_000  # simulated ratings held at once (about 100 MB per criterion)
# The search's ceiling (--max-pairs): a pilot whose rater spreads came out wide walked it to tens of thousands of pairs
# for many minutes (organiser audit); 20,000 pairs at 3 ratings are 6,000 ratings for each of 10 raters, beyond what
# a roster gives. Past it the plan is refused, naming the estimate that drives the size.
MAX_PAIRS = 20_000


def check_confirm(confirm: int) -> None:
    """Fresh studies enough to confirm a power and check a 2.5% error rate (plan, and plan --compare)."""
    if confirm < MIN_CONFIRM:
        raise EvalkitError(f"--confirm {confirm} is too few to check a 2.5% error rate",
                           f"confirm on at least {MIN_CONFIRM} fresh simulated studies")


def percent(p: float) -> str:
    """A power as a percentage with as few decimals as show it (80%, 99.9%): below 1 it never reads 100% (plan audit
    L1: --power 0.999 read "target power 100%")."""
    for digits in range(4):
        if abs(round(p * 100, digits) - p * 100) < 1e-9:
            return f"{p * 100:.{digits}f}%"
    return f"{math.floor(p * 100_000) / 1000:.3f}%"  # cut, not rounded: 0.9999999 is not 100%


@dataclass
class PlanRow:
    pairs: int  # decided pairs, identical ones included (the gate's planned_pairs)
    ratings: int  # expected human ratings: the pairs whose texts differ, times the raters per pair
    keep_rate: float  # simulated studies with no true drop that end with every criterion inside the margin
    per_criterion: dict[str, float]


@dataclass
class Rate:
    """A rate from simulated studies with its 95% Monte-Carlo (Wilson) interval."""

    rate: float
    low: float
    high: float
    studies: int

    @classmethod
    def of(cls, hits) -> "Rate":
        import numpy as np

        from ...stats import wilson

        hits = np.asarray(hits, bool)
        lo, hi = wilson(int(hits.sum()), len(hits))
        return cls(float(hits.mean()), lo, hi, len(hits))

    def text(self) -> str:
        return f"{self.rate:.3f} (95% Monte-Carlo interval {self.low:.3f}-{self.high:.3f}, {self.studies} studies)"


@dataclass
class Plan:
    margin: float
    confidence: float
    power: float
    studies: int
    model: StudyModel
    rows: list[PlanRow]
    recommended_pairs: int | None
    claim: str = GENERAL
    min_raters: int = Gate.min_raters
    interval: str = Gate.interval  # the gate's interval the simulated studies are judged on
    # KEEP rate with no true drop on fresh studies, at confirmed_pairs (the recommended size when it holds)
    confirmed_power: Rate | None = None
    confirmed_pairs: int | None = None
    # KEEP rate at the recommended size when one criterion truly drops by the margin (the others do not), worst
    # criterion; and that criterion's own non-inferiority pass rate
    false_keep: Rate | None = None
    false_keep_criterion: str | None = None
    false_pass: Rate | None = None
    # why no planned_pairs line may be frozen (None: it may)
    refused: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def false_keep_rate(self) -> float | None:
        return None if self.false_keep is None else self.false_keep.rate

    @property
    def level(self) -> float:
        return (1 - self.confidence) / 2

    def gate_line(self) -> str | None:
        if self.recommended_pairs is None or self.refused:
            return None
        return f"planned_pairs = {self.recommended_pairs}"

    def gate_lines(self) -> list[str]:
        """planned_pairs and every gate key the size was simulated with, so that the gate the study freezes is the
        one it was sized for (plan audit, 2026-12-04: `plan --margin 0.1 --raters-per-pair 3` wrote planned_pairs
        alone, and under the gate file's margin 0.05 and 1 rating a pair the study had about 7% power). The gate's
        ppi and monitoring are not written: this size is for the raters' answers at one look, which asks for more
        than either needs. expected_ratings is: the ratings this size takes at one look, the most a study of it
        needs (the gate file's own figure was for another size, and the Results tab counts what remains from it)."""
        if self.gate_line() is None:
            return []
        m = self.model
        return ([self.gate_line(), f"margin = {self.margin:g}", f"min_ratings_per_pair = {m.raters_per_pair}"]
                + ([f"second_rating_share = {m.second_rating_share:g}"] if m.raters_per_pair == 1 else [])
                + [f'interval = "{self.interval}"', f"expected_ratings = {m.expected_ratings(self.recommended_pairs)}"])

    def to_json(self) -> dict:
        d = asdict(self)
        d["gate_line"] = self.gate_line()
        d["gate_lines"] = self.gate_lines()
        d["false_keep_rate"] = self.false_keep_rate
        d["level"] = self.level
        return d


def criterion_passes(sim: dict, studies: int, margin: float, confidence: float, resamples: int,
                     claim: str = GENERAL, min_raters: int = Gate.min_raters, interval: str = Gate.interval) -> dict:
    """Per criterion, per simulated study: does the gate's fidelity condition hold (the interval's lower end at
    or above -margin, and enough raters for the claim)? Identical pairs (sim["identical"]) are exact zeros."""
    from ..gate import enough_raters_for, fidelity_ok
    from ...stats import paired_difference

    out, rated = {}, rated_pairs(sim, studies)  # a study of identical pairs alone needs no rater, as at the gate
    for c, x in sim["x"].items():
        res = paired_difference(x, sim["pair"], sim["rater"], sim["pair_study"], studies, confidence, resamples,
                                raters_in_general=claim == GENERAL, identical=sim.get("identical"),
                                interval=interval, bootstrap=False)
        out[c] = fidelity_ok(res["low"], margin) & enough_raters_for(res["raters"], rated,
                                                                     {"claim": claim, "min_raters": min_raters})
    return out


def run_studies(model: StudyModel, pairs: int, studies: int, drops: dict[str, float], seed, margin: float,
                confidence: float, resamples: int, claim: str = GENERAL, min_raters: int = Gate.min_raters,
                criteria: tuple[str, ...] = CRITERIA, interval: str = Gate.interval) -> dict:
    """criterion_passes over `studies` simulated studies, in chunks that hold at most RATINGS_PER_CHUNK ratings."""
    import numpy as np

    chunk = max(1, RATINGS_PER_CHUNK // max(1, pairs * model.raters_per_pair))
    parts: dict[str, list] = {c: [] for c in criteria}
    for i, start in enumerate(range(0, studies, chunk)):
        size = min(chunk, studies - start)
        rng = np.random.default_rng([*np.atleast_1d(seed).tolist(), i])
        sim = simulate(model, pairs, size, drops, rng, criteria)
        for c, ok in criterion_passes(sim, size, margin, confidence, resamples, claim, min_raters, interval).items():
            parts[c].append(ok)
    return {c: np.concatenate(v) for c, v in parts.items()}


def normal_guess(model: StudyModel, margin: float, confidence: float, power: float) -> int:
    """Pairs a normal approximation needs (a starting point for the simulation): Tango's variance is about
    the discordance rate per rating, each criterion must pass with probability power^(1/4), and the raters' own
    differences add a part that more pairs do not shrink."""
    from ...stats import z_for

    q, rho = model.rater_accuracy, model.identical_share
    worst, rater_var = 0.0, 0.0
    for c, p in model.pass_rates.items():
        seen = q * p + (1 - q) * (1 - p)
        worst = max(worst, (1 - rho) * 2 * seen * (1 - seen))  # identical pairs are exact zeros
        rater_var = max(rater_var, model.rater_effect_sd(c) ** 2 / model.raters)
    per_criterion = power ** (1 / len(model.pass_rates))
    z = z_for(confidence) + z_for(2 * per_criterion - 1)
    room = (margin / z) ** 2 - rater_var
    if room <= 0:
        return 10**6
    return max(model.prompts, math.ceil(worst / room))


def rater_limit(model: StudyModel, margin: float, confidence: float, power: float) -> str | None:
    """Why no number of pairs can reach the power with these raters, or None. With infinitely many pairs the
    estimate still varies with the raters drawn: mean 0 and standard deviation s / sqrt(G), s the rater effect's
    spread; the interval is at least t_{G-1} s / sqrt(G) wide on each side."""
    from statistics import NormalDist

    from ...stats import t_quantile

    per_criterion = power ** (1 / len(model.pass_rates))
    g = model.raters
    t = float(t_quantile(1 - (1 - confidence) / 2, g - 1))
    for c in model.pass_rates:
        s = model.rater_effect_sd(c) / math.sqrt(g)
        if s > 0 and NormalDist().cdf((margin - t * s) / s) < per_criterion:
            need = g
            while need < 100_000:
                need += max(1, math.ceil(need * 0.05))
                s_need = model.rater_effect_sd(c) / math.sqrt(need)
                t_need = float(t_quantile(1 - (1 - confidence) / 2, need - 1))
                if NormalDist().cdf((margin - t_need * s_need) / s_need) >= per_criterion:
                    break
            return (f"with {g} raters whose own assisted - ordinary difference on {c} varies with standard deviation "
                    f"{model.rater_effect_sd(c):.3f} (rater x path spread {model.rater_path_sd:g} on the logit scale), "
                    f"no number of pairs reaches {percent(power)} power for raters in general: even with unlimited pairs "
                    f"it takes at least about {need} raters (--raters), or guidelines under which raters judge the "
                    "paths alike" + _pilot_fix(model.sources.get("rater_path_sd", "")))
    return None


def size_driver(model: StudyModel, margin: float, confidence: float, power: float) -> tuple[str, bool, int]:
    """Which of the model's numbers drives the size: the one whose no-pilot default (rater spreads 0, the default
    accuracy) lowers the normal approximation most, with its value, where it came from and the size without it
    ("" where none lowers it); whether a pilot gave it; and that size (the approximation's own where none does)."""
    from .model import DEFAULT_ACCURACY

    base = normal_guess(model, margin, confidence, power)
    best = None
    for key, name, default in (("rater_path_sd", "rater x path sd", 0.0), ("rater_sd", "rater sd", 0.0),
                               ("rater_accuracy", "rater accuracy", DEFAULT_ACCURACY)):
        if getattr(model, key) == default:
            continue
        without = normal_guess(replace(model, **{key: default}), margin, confidence, power)
        if without < base and (best is None or without < best[0]):
            best = (without, key, name, default)
    if best is None:
        return "", False, base
    without, key, name, default = best
    source = model.sources.get(key, "")
    return (f"what drives it: the {name} {getattr(model, key):.3f} ({source or 'as given'}); at {default:g} the "
            f"normal approximation asks for about {without:,} pairs"), source.startswith(("pilot", "observed")), without


def _pilot_fix(source: str) -> str:
    """What a refusal adds where a pilot gave the spread: where it came from, and that more pilot ratings or the
    number passed explicitly replace it (a spread from 3 raters can come out wide where raters do not differ)."""
    if not source.startswith("pilot"):
        return ""
    return (f"; that spread is the pilot's estimate ({source}), only as sure as its ratings: rate more of the pilot "
            "(more raters, more pairs rated twice) and re-run `evalkit plan --db`, or pass the spread you expect "
            "(--rater-path-sd)")


def check_plan(model: StudyModel, margin: float, power: float, claim: str, min_raters: int) -> None:
    """What every plan (plan_study, and each design of `plan --compare`) needs of its numbers: the model's, the
    margin and the power as fractions, and the roster a claim about raters in general requires."""
    model.check()
    if not 0 < margin < 1:
        raise EvalkitError(f"margin {margin} must be between 0 and 1", "pass --margin as a fraction, e.g. 0.05")
    if not 0 < power < 1:
        raise EvalkitError(f"power {power} must be between 0 and 1", "pass --power as a fraction, e.g. 0.8")
    for c in model.pass_rates:  # the false-KEEP check's drop, refused before the search rather than after it
        model.true_rates(c, margin)
    if claim == GENERAL and model.raters < min_raters:
        raise EvalkitError(f"{model.raters} raters: the gate's claim about raters in general needs at least "
                           f"{min_raters} (min_raters)", f"plan for at least {min_raters} raters (--raters), or freeze "
                           "claim = \"these raters\" in the gate before rating starts")


def plan_study(model: StudyModel, margin: float, confidence: float = 0.95, power: float = 0.8,
               resamples: int = 2000, studies: int = 400, seed: int = 0, confirm: int = MIN_CONFIRM,
               claim: str = GENERAL, min_raters: int = Gate.min_raters, interval: str = Gate.interval,
               max_pairs: int = MAX_PAIRS) -> Plan:
    """Smallest number of pairs (a whole number of prompt rounds) whose simulated KEEP rate with no true drop
    reaches `power`, walking in steps of about 10% from the normal approximation, at most max_pairs (a plan that
    needs more is refused, naming what drives the size: size_driver); confirmed on `confirm` fresh
    studies (a size that falls short there is stepped up); then the false-KEEP rate there when one criterion truly
    drops by the margin, checked against the one-sided level. claim, min_raters: the gate's. Each batch of simulated
    studies is a step of a progress bar on stderr (progress.bar)."""
    check_plan(model, margin, power, claim, min_raters)
    if studies < 50:
        raise EvalkitError(f"--studies {studies} is too few to estimate a rate", "simulate at least 50 studies per size")
    check_confirm(confirm)
    if max_pairs < model.prompts:
        raise EvalkitError(f"--max-pairs {max_pairs} is less than one round of the {model.prompts} prompts",
                           f"pass --max-pairs of at least {model.prompts}, e.g. {MAX_PAIRS}")
    notes = list(model.notes)  # what the pilot could not support (pilot.model_from_db)
    if claim == GENERAL and (source := model.sources.get("rater_path_sd", "")).startswith("default"):
        # a pilot whose ratings are too few is not "no pilot" (plan audit F6: the note said so beside the pilot's
        # agreement); its own counts are in the source
        small = "pilot too small" in source
        notes.append(("the pilot is too small to show how raters judge the paths" if small else "no pilot")
                     + ": raters are assumed to judge both paths alike (rater x path sd 0), which no study has shown; "
                     + ("rate more of the pilot" if small else "rate a pilot") + " (3+ raters, 10+ pairs rated twice) "
                     "and re-run `evalkit plan --db`, or pass --rater-path-sd")
    if claim != GENERAL and (model.rater_sd or model.rater_path_sd):
        notes.append("claim about these raters only: their effects are fixed, so the simulation leaves rater effects out")
        model = replace(model, rater_sd=0.0, rater_path_sd=0.0)
    step = model.prompts
    level = (1 - confidence) / 2

    def passes(n: int, count: int, drops: dict, tag, criteria=CRITERIA) -> dict:
        # each batch of simulated studies on the progress bar (stderr): a pilot with wide rater spreads can take the
        # search to large sizes and many minutes, which showed nothing until the end (organiser audit)
        what = ("search" if tag[0] == 0 else "confirm" if tag[0] == 1 else f"false KEEP ({', '.join(drops)} drops)")
        shown.set_postfix_str(f"{what}: {count} studies of {n:,} pairs", refresh=True)
        out = run_studies(model, n, count, drops, [seed, n, *tag], margin, confidence, resamples, claim, min_raters,
                          criteria, interval)
        shown.update(1)
        return out

    plan = Plan(margin=margin, confidence=confidence, power=power, studies=studies, model=model, rows=[],
                recommended_pairs=None, claim=claim, min_raters=min_raters, notes=notes, interval=interval)
    if claim == GENERAL and (why := rater_limit(model, margin, confidence, power)):
        plan.refused = why
        return _finish(plan, studies, power)
    from ...progress import bar

    shown = bar(total=None, desc="plan: sizes simulated", unit="size")
    try:
        return _search(plan, model, margin, confidence, power, studies, confirm, claim, level, step, passes,
                       max_pairs)
    finally:
        shown.close()


def _search(plan: Plan, model: StudyModel, margin: float, confidence: float, power: float, studies: int, confirm: int,
            claim: str, level: float, step: int, passes, max_pairs: int = MAX_PAIRS) -> Plan:
    """plan_study's search, confirmation and false-KEEP check; passes(n, count, drops, tag[, criteria]) simulates."""
    import numpy as np

    def rounded(n: float) -> int:
        return max(step, int(math.ceil(n / step)) * step)

    rows: dict[int, PlanRow] = {}

    def run(n: int) -> PlanRow:
        if n not in rows:
            res = passes(n, studies, {}, [0])
            keep = np.logical_and.reduce(list(res.values()))
            rows[n] = PlanRow(pairs=n, ratings=model.expected_ratings(n), keep_rate=float(keep.mean()),
                              per_criterion={c: float(v.mean()) for c, v in res.items()})
        return rows[n]

    # walk from the normal approximation in steps of about 10% until the KEEP rate crosses the target, at most to the
    # ceiling (whole prompt rounds): where the approximation is past it, the ceiling is the one size simulated
    ceiling = max(step, max_pairs // step * step)
    n = min(rounded(normal_guess(model, margin, confidence, power)), ceiling)
    if run(n).keep_rate >= power:
        while n > step and len(rows) < 12:
            smaller = rounded(n / 1.1) if rounded(n / 1.1) < n else n - step
            if run(smaller).keep_rate < power:
                break
            n = smaller
    # far short where the approximation pointed (10 Monte-Carlo sds at 400 studies), it misses what drives the size (a
    # wide rater spread): a ceiling short of the power too ends the search there, not a walk of minutes to the same end
    elif not (run(n).keep_rate < power - 0.2 and run(ceiling).keep_rate < power):
        while run(n).keep_rate < power and n < ceiling and len(rows) < 20:
            n = min(rounded(n * (1.1 if len(rows) < 6 else 1.5)), ceiling)

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
    plan.rows = sorted(rows.values(), key=lambda r: r.pairs)
    if recommended is None and ceiling in rows:
        driver, from_pilot, _without = size_driver(model, margin, confidence, power)
        plan.refused = (f"no size up to the ceiling of {ceiling:,} pairs (--max-pairs) reaches {percent(power)} power "
                        f"(KEEP rate {rows[ceiling].keep_rate:.3f} there, where each of {model.raters} raters would "
                        f"already give about {model.expected_ratings(ceiling) / model.raters:,.0f} ratings)"
                        + (f"; {driver}" if driver else "")
                        + (". A pilot's estimate is only as sure as its ratings: rate more of the pilot (more raters, "
                           "more pairs rated twice) and re-run `evalkit plan --db`, or pass the number you expect "
                           "(e.g. --rater-path-sd, --rater-sd), or plan for" if from_pilot else ". Plan for")
                        + " more raters (--raters) or a wider margin (--margin); --max-pairs to search further")
    if recommended is None:
        return _finish(plan, studies, power)

    # confirm on fresh studies; a size whose fresh KEEP rate falls short of the target is stepped up
    for attempt in range(4):
        if attempt:
            bigger = max(rounded(recommended * 1.05), recommended + step)
            if bigger > ceiling:  # the ceiling holds here too: --max-pairs 1000 planned 1,105 pairs
                plan.refused = (f"no size up to the ceiling of {ceiling:,} pairs (--max-pairs) confirmed "
                                f"{percent(power)} power on {confirm} fresh studies (last: {recommended} pairs, "
                                f"{plan.confirmed_power.text()}): --max-pairs to search further, lower --power, or "
                                "widen the margin (--margin)")
                return _finish(plan, studies, power)
            plan.notes.append(f"{recommended} pairs gave power {plan.confirmed_power.rate:.3f} on {confirm} fresh "
                              "studies, short of the target: one step (5%) up")
            recommended = bigger
        confirmed = passes(recommended, confirm, {}, [1, attempt])
        plan.confirmed_pairs = recommended
        plan.confirmed_power = Rate.of(np.logical_and.reduce(list(confirmed.values())))
        if plan.confirmed_power.rate >= power:
            break
    else:
        plan.refused = (f"no size confirmed {percent(power)} power on {confirm} fresh studies (last: {recommended} "
                        f"pairs, {plan.confirmed_power.text()}): lower --power, or widen the margin (--margin)")
        return _finish(plan, studies, power)
    plan.recommended_pairs = recommended
    driver, from_pilot, without = size_driver(model, margin, confidence, power)
    if from_pilot and 2 * without <= recommended:
        # a size twice or more what it would be without one pilot estimate rests on it (organiser audit: a 3-rater
        # pilot's rater x path sd of 0.5 took the plan from about 1,800 pairs to 8,330, without a word)
        plan.notes.insert(0, f"this size rests on one pilot estimate: {driver.removeprefix('what drives it: ')}; a "
                             "pilot's estimate is only as sure as its ratings: rate more of the pilot (more raters, "
                             "more pairs rated twice) and re-run `evalkit plan --db`, or pass the number you expect")

    # false KEEP: one criterion truly drops by the margin, the others (from the confirmation, independent) do not
    worst = None
    alone = None  # the dropping criterion's own pass rate, whatever the others do
    for i, c in enumerate(CRITERIA):
        failing = passes(recommended, confirm, {c: margin}, [2, i], criteria=(c,))[c]
        others = [v for k, v in confirmed.items() if k != c]
        keep, own = Rate.of(np.logical_and.reduce([failing, *others])), Rate.of(failing)
        if worst is None or keep.rate > worst[0].rate:
            worst = (keep, c, own)
        if alone is None or own.rate > alone[0].rate:
            alone = (own, c)
    plan.false_keep, plan.false_keep_criterion, plan.false_pass = worst
    if plan.false_keep.low > level:
        plan.refused = (f"false-KEEP rate {plan.false_keep.text()} when {plan.false_keep_criterion} truly drops by the "
                        f"margin exceeds the one-sided level {level:.3f} beyond Monte-Carlo error: with this study "
                        "model the gate's interval does not hold its level; more raters (--raters) or a wider margin")
    elif alone[0].low > level:
        # the others failed with it here (the same wide rater spread hits every criterion in the model); in a study
        # whose other criteria pass readily this criterion's own error is the false-KEEP rate
        plan.refused = (f"{alone[1]} alone passes in {alone[0].text()} of studies where it truly drops by the margin, "
                        f"above the one-sided level {level:.3f} beyond Monte-Carlo error (the other criteria failed "
                        "with it here, which a study cannot count on): with this study model the gate's interval does "
                        "not hold its level; a wider margin, or the claim about these raters")
    return _finish(plan, studies, power)


def _finish(plan: Plan, studies: int, power: float) -> Plan:
    half = 1.96 * math.sqrt(power * (1 - power) / studies)
    plan.notes.append(f"the search's rates are from {studies} simulated studies each (Monte-Carlo error about "
                      f"±{half:.3f} at {percent(power)})")
    plan.notes.append(f"nominal false-KEEP rate per criterion: {plan.level:.3f} (one-sided, the lower end of the "
                      f"{plan.confidence:.0%} interval)")
    return plan


def format_plan(plan: Plan) -> str:
    m = plan.model
    who = ("raters in general (rater differences in the interval)" if plan.claim == GENERAL
           else "these raters only")
    lines = [
        f"Planned sample size for the fidelity gate: margin {plan.margin:.3f}, {plan.confidence:.0%} interval "
        f"({plan.interval}), target power {percent(plan.power)}, claim about {who}",
        "",
        "study model (simulated):",
        *(f"  pass rate {c:<22} {p:.3f}" for c, p in m.pass_rates.items()),
        f"    from: {m.sources.get('pass_rates', '')}",
        f"  rater accuracy               {m.rater_accuracy:.3f}  ({m.sources.get('rater_accuracy', '')})",
        f"  identical outputs            {m.identical_share:.3f}  ({m.sources.get('identical_share', '')})",
        f"  pair correlation             {m.pair_correlation:.3f}  ({m.sources.get('pair_correlation', '')})",
        f"  rater sd (logit)             {m.rater_sd:.3f}  ({m.sources.get('rater_sd', '')})",
        f"  rater x path sd (logit)      {m.rater_path_sd:.3f}  ({m.sources.get('rater_path_sd', '')})",
        f"  raters per pair              {m.raters_per_pair}"
        + (f"  (and a second on {m.second_rating_share:.0%} of pairs)" if m.doubles else ""),
        f"  raters                       {m.raters}  ({m.sources.get('raters', '')})",
        "",
    ]
    if plan.rows:
        lines.append(f"{'pairs':>7} {'ratings':>8} {'KEEP rate, no true drop':>24}   per criterion"
                     + ("   (pairs: decided pairs, identical ones included; ratings: expected, identical pairs need "
                        "none)" if m.identical_share else ""))
    for r in plan.rows:
        mark = " <- planned" if r.pairs == plan.recommended_pairs else ""
        per = "  ".join(f"{v:.2f}" for v in r.per_criterion.values())
        lines.append(f"{r.pairs:>7} {r.ratings:>8} {r.keep_rate:>24.3f}   {per}{mark}")
    lines.append("")
    if plan.confirmed_power is not None:
        lines.append(f"power at {plan.confirmed_pairs} pairs, confirmed on fresh studies: "
                     f"{plan.confirmed_power.text()}")
    if plan.false_keep is not None:
        lines.append(f"false KEEP when {plan.false_keep_criterion} truly drops by the margin: {plan.false_keep.text()}; "
                     f"that criterion passes in {plan.false_pass.rate:.3f}; one-sided level {plan.level:.3f}")
    if plan.refused:
        lines += ["", f"REFUSED: {plan.refused}.", "No planned_pairs line: do not freeze this plan."]
    elif plan.recommended_pairs is None:
        lines.append("no size in the search reached the target power: widen the margin or lower --power")
    else:
        samples = math.ceil(plan.recommended_pairs / m.prompts)
        rated = int(round(plan.recommended_pairs * (1 - m.identical_share)))
        # only where some pairs need no rater: "with 0% identical outputs about 0 are decided without raters" said
        # nothing (plan audit L4)
        unrated = (f"{plan.recommended_pairs} decided pairs: with {m.identical_share:.0%} identical outputs about "
                   f"{plan.recommended_pairs - rated} are decided without raters, and "
                   if rated < plan.recommended_pairs else "")
        lines += ["", "Set these keys in the gate file before rating starts, replacing its lines for them (frozen "
                      "with the study's first pool):",
                  *(f"  {line}" for line in plan.gate_lines()),
                  f"({unrated}{rated} rated pairs need {m.expected_ratings(plan.recommended_pairs)} ratings)",
                  "and build the pool: `evalkit generate --until-planned` (the planned pairs plus a 10% reserve, or "
                  "the gate's planned_pool when larger), or exactly that size with `evalkit generate --samples "
                  f"{samples}` ({m.prompts} prompts, no reserve for skipped pairs); in a database that holds a study "
                  "already, add --new-study NAME (its gate is frozen)"]
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)
