"""Designs compared by what they cost (`evalkit plan --compare`): each design of study.plan.designs sized for the
target power on simulated studies (size), judged there (evaluate: power, expected human ratings with the gold pairs'
ratings beside them, rater-hours, the false-KEEP rate at the margin), the cheapest that holds recommended with its
gate lines, then sized again for larger rosters, weighed against each rater's onboarding, with the share per rater
(app.max_ratings_per_rater) that keeps a roster as planned, and, for a claim about raters in general, sized once more
for the narrower claim about these raters (what scope the team would give up, and what it would save).
format_comparison() is the plan's text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ...task.criteria import CRITERIA
from ..gate import CHOICES, GENERAL
from ..monitoring import FIXED
from .designs import Design, Scenario, candidates, cost, normal_pairs, outcome, rater_share, simulate
from .search import check_confirm, percent

THESE = CHOICES["claim"][1]
MIN_STUDIES = 20  # simulated studies per size below which a power or error rate says nothing


@dataclass
class DesignRow:
    """One design in the comparison: its planned (maximum) size for the target power, the power reached, the
    expected human ratings and rater-hours to a decision when nothing drops, and the false-KEEP rate when one
    criterion truly drops by the margin."""

    design: Design
    planned_pairs: int | None
    power: object = None  # search.Rate
    expected_ratings: float | None = None  # of study pairs: what the gate's expected_ratings and the Results tab count
    rater_hours: float | None = None  # of every rating, gold ones included
    false_keep: object = None  # search.Rate
    # neither the false-KEEP rate nor the dropping criterion's own pass rate is above the one-sided level beyond
    # Monte-Carlo error: the second where the other criteria, which fail with the dropping one when the same wide
    # rater spread hits them all, might pass readily in a study (a criterion whose raters disagree most)
    holds: bool = False
    note: str = ""
    gold_ratings: float = 0.0  # expected ratings of the gold (check) pairs served by the decision
    raters: int | None = None  # the roster the row was judged with
    # the dropping criterion's own sequential test: passed at some look (its interval's one-sided error at the
    # margin, whatever the other criteria do; false_keep also needs them to pass)
    criterion_false_pass: object = None  # search.Rate
    # fresh simulated studies that confirmed this row (confirm()): its power, expected ratings and false-KEEP rate
    # are theirs, at the size they stepped up to; 0: the figures are the search's own, which chose the size and so
    # read optimistic (the smallest size whose noisy power reached the target)
    confirmed: int = 0
    search: tuple | None = None  # (planned pairs, power) the search chose, where confirm() stepped the size up

    @property
    def human_ratings(self) -> float | None:
        """Every rating the study costs to a decision: study pairs' and gold pairs'."""
        return None if self.expected_ratings is None else self.expected_ratings + self.gold_ratings

    def to_json(self) -> dict:
        from dataclasses import asdict

        d = asdict(self)
        d["design"] = {"name": self.design.name, **asdict(self.design)}
        d["human_ratings"] = self.human_ratings
        return d


@dataclass
class Comparison:
    scenario: Scenario
    power: float
    studies: int
    rows: list[DesignRow]
    recommended: int | None  # index into rows
    floor: object = None  # floor.Floor
    # the recommended design judged with other rosters (the study's own first); `roster` indexes the cheapest in
    # rater-hours with each rater's onboarding counted
    rosters: list[DesignRow] = field(default_factory=list)
    roster: int | None = None
    # for a claim about raters in general: the recommended design, same roster, sized for the claim about these
    # raters only, whose rater effects are fixed and need no degrees of freedom (a choice of scope, not of design)
    these_raters: DesignRow | None = None
    # for a claim about raters in general: what its roster (and each other roster) costs any valid analysis,
    # raterprice.RaterPrice, the study's own roster first
    prices: list = field(default_factory=list)
    confirm: int = 0  # fresh studies behind the recommended rows (0: none; the library's quick comparisons)
    # designs whose search figures pointed at them first and that fresh studies then did not bear out, with why
    unconfirmed: list = field(default_factory=list)

    def best(self) -> DesignRow | None:
        return None if self.recommended is None else self.rows[self.recommended]

    def gate_lines(self) -> list[str]:
        best = self.best()
        if best is None:
            return []
        return best.design.gate_lines(best.planned_pairs, int(round(best.expected_ratings)), self.planned_raters(best),
                                      self.scenario.pool, self.scenario.margin)

    def roster_gate_lines(self) -> list[str]:
        """The gate lines for the fewest-hours roster, where it is not the study's own ([] otherwise)."""
        if not self.roster:
            return []
        r = self.rosters[self.roster]
        return r.design.gate_lines(r.planned_pairs, int(round(r.expected_ratings)), self.planned_raters(r),
                                   self.scenario.pool, self.scenario.margin)

    def planned_raters(self, row: DesignRow) -> int | None:
        """The roster a row's power assumes, for the gate's planned_raters: only a claim about raters in general
        depends on it."""
        return row.raters if self.scenario.claim == GENERAL else None

    def rater_share(self, row: DesignRow) -> int:
        """app.max_ratings_per_rater for this row's design, size and roster."""
        return rater_share(row.design, self.scenario, row.planned_pairs, row.raters)

    def hours_with_onboarding(self, row: DesignRow) -> float:
        return row.rater_hours + row.raters * self.scenario.onboarding_minutes / 60.0

    def to_json(self) -> dict:
        def roster(r: DesignRow) -> dict:
            held = r.planned_pairs is not None
            return r.to_json() | {"rater_hours_with_onboarding": self.hours_with_onboarding(r) if held else None,
                                  "max_ratings_per_rater": self.rater_share(r) if held else None}

        best = self.best()
        return {"designs": [r.to_json() for r in self.rows], "recommended": self.recommended,
                "gate_lines": self.gate_lines(), "max_ratings_per_rater": self.rater_share(best) if best else None,
                "rosters": [roster(r) for r in self.rosters], "fewest_hours_roster": self.roster,
                # plan audit L5: a script that froze gate_lines could not see the roster the text marked
                "fewest_hours_gate_lines": self.roster_gate_lines(), "confirm": self.confirm,
                "unconfirmed": [{"design": was.design.name, "search_pairs": was.planned_pairs,
                                 "note": fresh.note or f"false KEEP {_false_keep(fresh)}"}
                                for was, fresh in self.unconfirmed],
                "these_raters": self.these_raters.to_json() if self.these_raters else None,
                "max_pairs": self.scenario.max_pairs,  # the ceiling a row's "no size up to" note names
                "rater_prices": [p.to_json() | {"expected_ratings_at_least": self.price_ratings(p)}
                                 for p in self.prices],
                # the lever no rater pays for: the one-look floor with a pool ten times as large (comparison._pool_lines)
                "larger_pool": None if self.floor is None else {
                    "pool": self.floor.larger_pool, "floor_fixed_ratings": self.floor.larger_pool_fixed_ratings,
                    "floor_fixed_ratings_now": self.floor.fixed_ratings,
                    "pool_share_of_variance": self.floor.rater_free_share}}

    def price_ratings(self, price) -> float | None:
        """The floor's expected ratings times the roster's price: about the fewest any valid analysis of a claim
        about raters in general could need with that roster (the price is exact for one criterion at one look)."""
        return None if self.floor is None else self.floor.expected_ratings * price.lower


FAR_SHORT = 0.2  # KEEP rate this far below the power where the approximation pointed: try the ceiling at once


def _ceiling(design: Design, scenario: Scenario) -> tuple[int, str]:
    """The largest size the design's search and confirmation try, and what a row's note says of it: --max-pairs
    (Scenario.max_pairs, in whole prompt rounds, as plain plan's search), or a PPI design's pool where smaller."""
    step = scenario.model.prompts
    cap = max(step, scenario.max_pairs // step * step)
    if design.ppi and scenario.pool < cap:
        return scenario.pool, f"the pool holds {scenario.pool:,}"
    return cap, f"the ceiling, --max-pairs {scenario.max_pairs:,}"


def size(design: Design, scenario: Scenario, power: float, studies: int, seed, on_size=None) -> DesignRow:
    """The design's smallest planned size (a whole number of prompt rounds) whose simulated KEEP rate with no true drop
    reaches `power`, searched from the normal approximation in steps of about 15%, judged there by evaluate(). Never
    past the ceiling (_ceiling): where the approximation's size is far short (FAR_SHORT) the ceiling is tried next,
    and where it is short too the design is reported so without a walk of minutes to the same end, as plain plan's
    search does (the approximation leaves out the raters' spreads, which a tiny pilot can estimate wide).
    on_size(pairs, keep_rate): called after each size is simulated, and with keep_rate None before the chosen size is
    judged where a criterion drops, so a bar can move within a design (minutes each where the pool is large)."""
    step = scenario.model.prompts
    seed = list(seed)
    cap, why = _ceiling(design, scenario)
    tried: dict[int, tuple] = {}

    def keep_at(n) -> float:
        if n not in tried:
            res = simulate(design, scenario, n, studies, {}, [*seed, n, 0])
            tried[n] = res, outcome(res)
            if on_size:
                on_size(n, float(tried[n][1]["keep"].mean()))
        return tried[n][1]["keep"].mean()

    n = min(max(step, int(math.ceil(normal_pairs(design, scenario, power) / step)) * step), cap)
    if not (keep_at(n) < power - FAR_SHORT and n < cap and keep_at(cap) < power):
        for _ in range(10):
            if keep_at(n) >= power:
                smaller = max(step, int(n / 1.15 / step) * step)
                if smaller in tried or smaller == n:
                    break
                n = smaller
            else:
                bigger = min(int(math.ceil(n * 1.15 / step)) * step, cap)
                if bigger == n:  # short at the ceiling
                    break
                if bigger in tried:
                    n = bigger
                    break
                n = bigger
    reaching = sorted(m for m in tried if keep_at(m) >= power)
    if not reaching:
        top = max(tried)
        return DesignRow(design, None, raters=scenario.model.raters,
                         note=f"no size up to {top:,} pairs reached {percent(power)} power (KEEP rate "
                              f"{keep_at(top):.2f} there)" + (f"; {why}" if top == cap else ""))
    if on_size:
        on_size(reaching[0], None)
    return evaluate(design, scenario, reaching[0], studies, studies, seed, tried[reaching[0]][0])


CONFIRM_STEP = 1.05  # a recommended size short of the power on fresh studies is stepped up by 5%, as plain plan's
CONFIRM_ATTEMPTS = 4
CONFIRM_DOWN = 2  # steps down from a search size that fresh studies find powered at once
MAX_CONFIRMED = 3  # designs judged on fresh studies at most, cheapest first by the search's figures


def confirm_row(row: DesignRow, scenario: Scenario, power: float, confirm: int, seed) -> DesignRow:
    """The row judged again on `confirm` fresh studies (and as many where the first criterion drops by the margin),
    its size stepped up by 5% while the fresh power falls short (at most CONFIRM_ATTEMPTS sizes; a PPI design no
    further than the pool), or, where the search's size reaches the power at once, down by 5% while it still does (at
    most CONFIRM_DOWN steps: the search's ladder is 15%, so its size can be a step larger than needed). The search
    chose the size from the very studies that measured its power, and compare() the design from ten such noisy
    figures: both read optimistic (plan audit, 2026-12-04: a printed power of 0.865 was 0.79 on fresh studies). A
    row that cannot be confirmed comes back with planned_pairs None and a note."""
    step = scenario.model.prompts

    def fresh_keep(n):
        base = simulate(row.design, scenario, n, confirm, {}, [*seed, 7919, n, 0])
        return base, outcome(base)["keep"].mean()

    n = row.planned_pairs
    cap, why = _ceiling(row.design, scenario)
    for attempt in range(CONFIRM_ATTEMPTS):
        if attempt:
            bigger = max(int(math.ceil(n * CONFIRM_STEP / step)) * step, n + step)
            if bigger > cap:
                break
            n = bigger
        base, keep = fresh_keep(n)
        if keep >= power:
            for _ in range(CONFIRM_DOWN if not attempt else 0):
                smaller = min(int(n / CONFIRM_STEP / step) * step, n - step)
                if smaller < step:
                    break
                lower, lower_keep = fresh_keep(smaller)
                if lower_keep < power:
                    break
                n, base = smaller, lower
            out = evaluate(row.design, scenario, n, confirm, confirm, [*seed, 7919], base)
            return replace(out, confirmed=confirm, search=(row.planned_pairs, row.power))
    return DesignRow(row.design, None, raters=row.raters, search=(row.planned_pairs, row.power),
                     note=f"not confirmed: {n:,} pairs gave power {keep:.3f} on {confirm:,} fresh studies, short of "
                          f"{percent(power)}" + (f"; {why}" if n + step > cap else ""))


def compare(scenario: Scenario, power: float = 0.8, studies: int = 200, designs: list[Design] | None = None,
            seed: int = 0, progress=None, rosters: tuple[int, ...] = (), confirm: int = 0) -> Comparison:
    """Each design sized for `power` (size()), with the expected human ratings to a decision there and the false-KEEP
    rate when the first criterion truly drops by the margin; the design whose false-KEEP rate (and the dropping
    criterion's own pass rate) holds with the fewest
    human ratings (study and gold) is recommended. Then the recommended design is sized again with each roster in
    `rosters` (numbers of raters sharing the ratings): a claim about raters in general pays for estimating the raters'
    part on few degrees of freedom, so more raters can need fewer ratings; the roster with the fewest rater-hours,
    each rater's onboarding counted, is marked. For a claim about raters in general the recommended design is last
    sized for the claim about these raters (same roster), so the plan shows what the wider claim costs.

    confirm: fresh simulated studies (at least search.MIN_CONFIRM) that judge the recommended design again, and the
    fewest-hours roster where it is another (confirm_row): the gate lines then rest on them. A recommended design that
    fresh studies do not bear out (short of the power, or its false-KEEP rate beyond the level) gives way to the next
    cheapest that holds. 0: no confirmation, the search's figures stand (quick comparisons in tests)."""
    from ...errors import EvalkitError
    from ...progress import bar
    from .floor import floor
    from .raterprice import rater_price

    scenario.check(power)
    if studies < MIN_STUDIES:
        raise EvalkitError(f"--studies {studies} is too few to compare designs",
                           f"simulate at least {MIN_STUDIES} studies per size (200 for figures to act on)")
    if confirm:  # 0: no confirmation (quick comparisons); `evalkit plan --compare` always confirms
        check_confirm(confirm)
    designs = designs or candidates(scenario.claim)
    for d in designs:
        if d.monitoring != FIXED and not d.look_every >= 1:
            raise EvalkitError(f"--look-every {d.look_every}: expected ratings between looks, 1 or more",
                               "give the ratings between looks, e.g. --look-every 50")
    rows = []
    own = scenario.model.raters
    extra = [g for g in dict.fromkeys(rosters) if g != own]
    narrower = scenario.claim == GENERAL
    shown = bar(total=len(designs) + len(extra) + 2 * narrower + bool(confirm), desc="designs compared",
                unit="design")
    for k, design in enumerate(designs):
        shown.set_postfix_str(design.name)
        def on_size(n, keep, name=design.name):  # a design's search takes minutes where the pool is large
            shown.set_postfix_str(f"{name}: {n:,} pairs, KEEP {keep:.2f}" if keep is not None else
                                  f"{name}: {n:,} pairs, judged where a criterion drops")

        rows.append(size(design, scenario, power, studies, [seed, k], on_size))
        shown.update(1)
        if progress:
            progress(rows[-1])
    ok = [i for i, r in enumerate(rows) if r.holds and r.expected_ratings is not None]
    best = min(ok, key=lambda i: rows[i].human_ratings) if ok else None
    c = Comparison(scenario, power, studies, rows, best, floor(scenario, power, look_every=designs[-1].look_every),
                   confirm=confirm)
    if confirm:
        # cheapest first by the search's figures. Each is judged on fresh studies until the next one's search figure
        # (optimistic) is no lower than the cheapest confirmed one's: a design the search ranked close behind may be
        # the cheaper once both are confirmed. A design that fresh studies do not bear out gives way to the next.
        chosen = None
        for i in sorted(ok, key=lambda i: rows[i].human_ratings)[:MAX_CONFIRMED]:
            if chosen is not None and rows[i].human_ratings >= rows[chosen].human_ratings:
                break
            shown.set_postfix_str(f"confirming {rows[i].design.name} on {confirm:,} fresh studies")
            fresh = confirm_row(rows[i], scenario, power, confirm, [seed, i])
            if fresh.planned_pairs is None or not fresh.holds:
                c.unconfirmed.append((rows[i], fresh))
                continue
            rows[i] = fresh
            if chosen is None or fresh.human_ratings < rows[chosen].human_ratings:
                chosen = i
        best = c.recommended = chosen
        shown.update(1)
    if narrower and c.floor is not None:
        # one criterion's share of the power: KEEP needs every criterion, as the floor assumes
        shown.set_postfix_str("the price of few raters")
        each = power ** (1 / len(scenario.model.pass_rates))
        c.prices = [rater_price(g, each, scenario.confidence, c.floor.rater_free_share) for g in [own, *extra]]
    shown.update(int(narrower))
    if best is not None and extra:
        c.rosters = [rows[best]]
        for g in extra:
            shown.set_postfix_str(f"{rows[best].design.name} with {g} raters")
            other = replace(scenario, model=replace(scenario.model, raters=g))
            c.rosters.append(size(rows[best].design, other, power, studies, [seed, best, g]))
            shown.update(1)
            if progress:
                progress(c.rosters[-1])
        usable = [i for i, r in enumerate(c.rosters) if r.holds and r.expected_ratings is not None]
        c.roster = min(usable, key=lambda i: c.hours_with_onboarding(c.rosters[i])) if usable else None
        if confirm and c.roster:  # its gate lines are printed too: they rest on fresh studies as the recommended's
            g = c.rosters[c.roster].raters
            shown.set_postfix_str(f"confirming {g} raters on {confirm:,} fresh studies")
            other = replace(scenario, model=replace(scenario.model, raters=g))
            c.rosters[c.roster] = fresh = confirm_row(c.rosters[c.roster], other, power, confirm, [seed, best, g])
            if fresh.planned_pairs is None or not fresh.holds:
                c.roster = None
    if best is not None and narrower:
        shown.set_postfix_str(f"{rows[best].design.name} for these raters")
        c.these_raters = size(rows[best].design, replace(scenario, claim=THESE), power, studies, [seed, best, 0])
        if progress:
            progress(c.these_raters)
    shown.update(int(narrower))
    shown.close()
    return c


def evaluate(design: Design, scenario: Scenario, pairs: int, studies: int, drop_studies: int, seed,
             base: dict | None = None) -> DesignRow:
    """One design at one (maximum) size: power and expected human ratings on `studies` studies with no true drop
    (`base`: such a run already made), and the false-KEEP rate on `drop_studies` studies in which the first criterion
    truly drops by the margin (criteria are alike in the scenario and independent: the others come from the no-drop
    studies, reused in turn where there are fewer of them)."""
    import numpy as np

    from .search import Rate

    seed = list(np.atleast_1d(seed))
    if base is None:
        base = simulate(design, scenario, pairs, studies, {}, [*seed, pairs, 0])
    out = outcome(base)
    first = CRITERIA[0]
    dropping = simulate(design, scenario, pairs, drop_studies, {first: scenario.margin}, [*seed, pairs, 1], (first,))
    reps = np.resize(np.arange(len(out["keep"])), drop_studies)
    others = {c: {k: v[reps] for k, v in base[c].items()} for c in CRITERIA if c != first}
    looks = {**others, first: dropping[first], "ratings": base["ratings"][reps], "sizes": base["sizes"],
             "claim": base["claim"]}
    false_keep = Rate.of(outcome(looks)["keep"])
    criterion_false_pass = Rate.of(dropping[first]["keep"].any(axis=1))
    ratings = float(out["ratings"].mean())
    gold = float(scenario.gold_ratings(design, out["pairs"].mean()))
    level = (1 - scenario.confidence) / 2
    return DesignRow(design, pairs, Rate.of(out["keep"]), ratings, cost(ratings + gold, scenario.minutes_per_rating),
                     false_keep, false_keep.low <= level and criterion_false_pass.low <= level,
                     gold_ratings=gold, raters=scenario.model.raters,
                     criterion_false_pass=criterion_false_pass)


def designs_look(c: Comparison) -> int:
    """The look spacing of the comparison's sequential designs (50 when it has none)."""
    return next((r.design.look_every for r in c.rows if r.design.monitoring != FIXED), 50)


def format_comparison(c: Comparison) -> str:
    s = c.scenario
    m = s.model
    lines = [f"Designs compared at {percent(c.power)} power, margin {s.margin}, {s.confidence:.0%} interval, claim about "
             f"{s.claim}: pass rate {', '.join(f'{v:.2f}' for v in m.pass_rates.values())}{_source(m, 'pass_rates')}, "
             f"rater accuracy {m.rater_accuracy:.2f}{_source(m, 'rater_accuracy')}, {m.raters} raters, pair correlation "
             f"{m.pair_correlation:.2f}, rater sd "
             f"{m.rater_sd:g}, rater x path sd {m.rater_path_sd:g}, identical outputs {m.identical_share:.0%}, "
             f"pre-screen agreement {s.prescreen_agreement:.2f} (bias {s.prescreen_bias:+.2f}), pool {s.pool:,} "
             f"pairs; {c.studies} simulated studies per size, {s.minutes_per_rating:g} min a rating", "",
             "| design | planned pairs (max) | power | expected ratings | + gold | rater-hours | false KEEP at the margin |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(c.rows):
        mark = (" ← recommended" if i == c.recommended else "") + (
            f" (fresh studies: {r.confirmed:,})" if r.confirmed else "")
        if r.planned_pairs is None:
            lines.append(f"| {r.design.name}{mark} | – | – | – | – | – | {r.note} |")
            continue
        lines.append(f"| {r.design.name}{mark} | {r.planned_pairs:,} | {r.power.rate:.2f} | "
                     f"{r.expected_ratings:,.0f} | {r.gold_ratings:,.0f} | {r.rater_hours:,.1f} | {_false_keep(r)} |")
    lines.append(f"(expected ratings: of study pairs, to a decision when nothing drops, what the gate's expected_ratings "
                 f"counts; + gold: ratings of the gold pairs served meanwhile at pool.gold_rate {s.gold_rate:g}; "
                 f"rater-hours: both)")
    lines += _confirmation_lines(c)
    if c.recommended is None:
        lines += ["", "No design reached the power with its false-KEEP rate within the level: widen the margin, add "
                      "raters or lower --power."]
    else:
        best = c.best()
        lines += ["", "Set these keys in the gate file before rating starts, replacing its lines for them (frozen with "
                      "the study's first pool):",
                  *(f"  {line}" for line in c.gate_lines()), _share_line(c, best)]
        if c.best().design.ppi:
            lines.append(f"and build a pool of at least {max(s.pool, best.planned_pairs):,} study pairs (the "
                         "pre-screen's unlabelled set; planned_pool above): `evalkit generate --until-planned` "
                         "builds it")
    if c.floor is not None and c.floor.power >= c.power:
        f, best = c.floor, c.best()
        gap = (f"; the recommended one needs {best.expected_ratings:,.0f} "
               f"({best.expected_ratings / f.expected_ratings - 1:+.0%})" if best is not None else "")
        lines.append(f"floor: a test that knew every variance (the pre-screen at its best weight, no rater uncertainty, "
                     f"1 rating per pair, looks every {designs_look(c)} ratings) would need {f.expected_ratings:,.0f} "
                     f"expected ratings ({f.planned_pairs:,} pairs at most), and no design here can need fewer{gap}. "
                     + ("For a claim about raters in general most of the gap is the raters' few degrees of freedom: "
                        "more raters sharing the same ratings narrow it (the rosters below; --raters, --rosters)"
                        if s.claim == GENERAL else "The gap is what estimating the variances and the pre-screen's "
                        "weight from the study's own ratings costs"))
    lines += _pool_lines(c)
    lines += _price_lines(c)
    lines += _roster_lines(c)
    lines += _these_raters_lines(c)
    lines += [f"note: {n}" for n in s.notes]
    lines.append(f"note: rates from {c.studies} simulated studies each (Monte-Carlo error about "
                 f"±{1.96 * math.sqrt(c.power * (1 - c.power) / c.studies):.3f} on the power"
                 + (f"; the recommended design's, and the marked roster's, from {c.confirm:,} fresh ones" if c.confirm
                    else "; not confirmed on fresh studies, so the recommended design's read optimistic") + "); a false-KEEP rate "
                 "marked ✗ exceeds the one-sided level beyond that error, or the dropping criterion alone passes "
                 "more often than that (what a criterion whose raters disagree most would let through where the "
                 "others pass readily); scripts/errorbench.py --designs measures "
                 "the recommended design on 2,000 studies per cell")
    return "\n".join(lines)


def _confirmation_lines(c: Comparison) -> list[str]:
    """What fresh studies said of the designs the search pointed at: the search's figures chose the size and the
    design, so they read optimistic, and the gate lines rest on the fresh ones."""
    if not c.confirm:
        return []
    lines = []
    for was, fresh in c.unconfirmed:
        why = fresh.note if fresh.planned_pairs is None else (
            f"at {fresh.planned_pairs:,} pairs its false-KEEP rate at the margin was {_false_keep(fresh)}")
        lines.append(f"{was.design.name}: the search's cheapest ({was.planned_pairs:,} pairs, power "
                     f"{was.power.rate:.2f}), {why}; the next cheapest was judged instead")
    best = c.best()
    if best is not None:
        n, p = best.search
        stepped = (f"; the search's {n:,} pairs reached {p.rate:.3f} on its own studies and were stepped "
                   f"{'up' if best.planned_pairs > n else 'down'} to {best.planned_pairs:,}" if n != best.planned_pairs
                   else f" at the search's {n:,} pairs (power {p.rate:.3f} on the search's own studies; 5% fewer fell "
                        "short on fresh studies)")
        others = [r for i, r in enumerate(c.rows) if r.confirmed and i != c.recommended]
        also = ("" if not others else "; also confirmed, and dearer: " + "; ".join(
            f"{r.design.name} ({r.human_ratings:,.0f} human ratings at {r.planned_pairs:,} pairs, power "
            f"{r.power.rate:.3f})" for r in others))
        lines.append(f"Confirmed on {c.confirm:,} fresh simulated studies, and {c.confirm:,} where one criterion drops "
                     f"by the margin: the recommended design has power {best.power.rate:.3f} ({best.power.low:.3f}–"
                     f"{best.power.high:.3f}){stepped}{also}. Rows marked with fresh studies give their figures, "
                     "the gate lines too; the other rows give the search's (each the smallest size whose noisy power "
                     "reached the target: optimistic)")
    return [""] + lines if lines else []


def _source(m, key: str) -> str:
    """Where the model's number came from (pilot.model_from_db), in brackets; nothing for a model built by hand."""
    return f" ({m.sources[key]})" if m.sources.get(key) else ""


def _false_keep(r: DesignRow) -> str:
    text = f"{r.false_keep.rate:.3f} ({r.false_keep.low:.3f}–{r.false_keep.high:.3f})"
    if r.holds:
        return text
    p = r.criterion_false_pass  # the row fails on either: say both
    alone = "" if p is None else f" (the dropping criterion alone passes {p.rate:.3f}, {p.low:.3f}–{p.high:.3f})"
    return f"{text} ✗{alone}"


POOL_SHARE_SAID = 0.02  # the pool's part of the floor's variance from which a larger pool is worth a line


def _pool_lines(c: Comparison) -> list[str]:
    """The lever that costs no rater time: with PPI the pre-screen's answers on the pooled pairs nobody rates are
    part of every criterion's variance, a part no rating shrinks and only a larger pool does (more pairs generated)."""
    f, s = c.floor, c.scenario
    best = c.best()
    if f is None or f.power < c.power or best is None or not best.design.ppi or f.rater_free_share < POOL_SHARE_SAID:
        return []
    line = (f"pool: the pre-screen's answers on the {s.pool - f.planned_pairs:,} pooled pairs nobody rates carry "
            f"{f.rater_free_share:.0%} of the floor's variance, a part no rating shrinks; a pool ten times as large "
            f"({f.larger_pool:,} pairs: generation time, no rater time) would take the floor at one fixed size from "
            f"{f.fixed_ratings:,.0f} to {f.larger_pool_fixed_ratings:,.0f} ratings "
            f"({f.larger_pool_fixed_ratings / f.fixed_ratings - 1:+.0%}); --pool {f.larger_pool} sizes every design "
            "for it, slowly (each simulated study holds the whole pool: one sequential design took over 20 minutes at "
            "50,000 pairs on 2 cores), and scripts/errorbench.py --designs --sizes RATERS:PAIRS --pool "
            f"{f.larger_pool} judges one design at a chosen maximum in minutes")
    if s.claim == GENERAL:  # the pool's part holds no rater, so each roster's price covers more of what is left
        line += (" (for a claim about raters in general each roster's price below then bears on more of the "
                 "variance: the pool's part held no rater)")
    return ["", line]


def _price_lines(c: Comparison) -> list[str]:
    """What each roster costs any analysis valid for raters in general, not only evalkit's (study.plan.raterprice)."""
    if not c.prices:
        return []
    return ["", "The price of few raters: for a claim about raters in general, no test whose level holds however "
                "differently raters judge the paths can need fewer than about (the floor times the bound; "
                "study.plan.raterprice):", *(
                f"  {p.raters} raters: {c.price_ratings(p):,.0f} expected ratings (at least {p.lower:.2f}× the floor; "
                f"the t rule on {p.raters - 1} df needs {p.t_test:.2f}×)" for p in c.prices),
            "(the bound is exact for one criterion at one look, raters sharing the ratings equally: ratings spread "
            "unevenly count as fewer raters)"]


def _roster_lines(c: Comparison) -> list[str]:
    """The recommended design with other rosters: the same ratings shared by more raters, each with onboarding."""
    if not c.rosters:
        return []
    s = c.scenario
    lines = ["", f"The recommended design with more raters sharing the ratings ({s.onboarding_minutes:g} min onboarding "
             "a rater, --onboarding-minutes):", "",
             "| raters | planned pairs (max) | power | expected ratings | + gold | ratings a rater | gold pairs a rater "
             "| rater-hours with onboarding | false KEEP at the margin |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(c.rosters):
        mark = (" ← fewest hours" if i == c.roster and len(c.rosters) > 1 else "") + (
            f" (fresh studies: {r.confirmed:,})" if r.confirmed else "")
        if r.planned_pairs is None:
            lines.append(f"| {r.raters}{mark} | – | – | – | – | – | – | – | {r.note} |")
            continue
        each = r.human_ratings / r.raters
        gold_pairs = r.gold_ratings / r.raters  # each gold rating is one rater meeting one gold pair
        lines.append(f"| {r.raters}{mark} | {r.planned_pairs:,} | {r.power.rate:.2f} | {r.expected_ratings:,.0f} | "
                     f"{r.gold_ratings:,.0f} | {each:,.0f} | {gold_pairs:,.1f} | {c.hours_with_onboarding(r):,.1f} | "
                     f"{_false_keep(r)} |")
    if c.roster is not None and c.roster > 0:
        r = c.rosters[c.roster]
        lines += ["", f"With {r.raters} raters, each rating about as many pairs as the others (ratings spread unevenly "
                      "count as fewer raters), the gate lines would be:",
                  *(f"  {line}" for line in c.roster_gate_lines()),
                  _share_line(c, r)]
    return lines


def _these_raters_lines(c: Comparison) -> list[str]:
    """What the claim about raters in general costs over the claim about these raters, same design and roster."""
    r, best = c.these_raters, c.best()
    if r is None or best is None:
        return []
    head = (f"For a claim about these {r.raters} raters only (gate claim = \"{THESE}\", frozen before rating: their "
            "leniency towards either path is then fixed, not sampled, and the verdict says the claim does not reach "
            f"other raters), the recommended design with the same roster")
    if r.planned_pairs is None:
        return ["", f"{head} did not reach the power: {r.note}."]
    saved = 1 - r.human_ratings / best.human_ratings
    return ["", f"{head} would need {r.expected_ratings:,.0f} expected ratings (+ {r.gold_ratings:,.0f} gold; "
                f"{r.planned_pairs:,} pairs at most, power {r.power.rate:.2f}, false KEEP at the margin {_false_keep(r)}"
                f"), {saved:.0%} {'fewer' if saved >= 0 else 'more'} human ratings than the claim about raters in "
                "general. Choose the claim by what the decision must cover, not by its cost."]


def _share_line(c: Comparison, row: DesignRow) -> str:
    return (f"and in the config, so that {row.raters} raters share the ratings as planned (a setting: raise it when "
            f"raters drop out): [app] max_ratings_per_rater = {c.rater_share(row)}")
