"""The gate's looks at the data (study.monitoring): which looks a study has reached, each criterion's interval at the
level the look allows, and whether a look stops the study.

A fixed design has one look, at planned_pairs. A group-sequential design (or a confidence sequence) has a look each
time about look_every more ratings are in, the last at planned_pairs. At each look every criterion's interval is
computed on the look's sample (the first decided pairs, as the decision sample always is) at the look's level. A
criterion whose lower end clears -margin at a look with the raters the claim needs (min_raters) has passed its own
sequential test; for a claim about raters in general it stays passed (the chance that a criterion which truly drops by
the margin passes at any look is the one-sided level, so KEEP, which needs every criterion, inherits it), and for a
claim about these raters, which is about the deciding look's raters, it must pass at the deciding look itself. The
study stops with KEEP once every criterion has passed and speed and memory hold, or with DROP once some criterion's
upper end is below -margin. The last look decides as a fixed design does.

walk() takes the looks in order, each on the data as they were when it was reached (the caller's `state`: the
current ratings for a live look, the stored history as of the look's completing rating for the frozen decision), and
stops at the first look that decides.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Look:
    index: int  # 1-based
    of: int  # looks at most
    pairs: int  # decided pairs in its sample
    level: float  # two-sided confidence of each criterion's interval at this look
    final: bool  # the look at planned_pairs

    def to_json(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        if self.of == 1:
            return f"the planned sample of {self.pairs} decided pairs"
        return f"look {self.index} of at most {self.of}, at {self.pairs} decided pairs ({self.level:.4%} interval)"


def schedule(values: dict | None) -> list[Look]:
    """The gate's looks, from its frozen values alone (never from answers)."""
    from ..study.monitoring import look_levels, look_sizes

    if not values:
        return []
    sizes = look_sizes(values)
    levels = look_levels(values, sizes)
    return [Look(i + 1, len(sizes), n, lvl, i == len(sizes) - 1) for i, (n, lvl) in enumerate(zip(sizes, levels))]


@dataclass
class Walk:
    """Where the looks stand: the last look taken (None: none reached), its rows and verdict, and what it rested on."""

    look: Look | None
    rows: list[dict]
    verdict: object  # aggregate.verdict.Verdict
    sample: object  # RatingData of the look's sample
    decided: int  # decided pairs in the data the look saw
    context: object = None  # the caller's (freeze: the completing rating and the raters left out)


def each_look(_sample, _row, look_index: int) -> int:
    """walk's `carry` for a claim about these raters: every look's quantity is its own (a pass stands at its look)."""
    return look_index


def walk(values: dict, state, analyse, decide_look, carry=None) -> Walk | None:
    """Take the reached looks in order until one decides. state(look) -> (ratings, context) or None when the look
    is not reached; analyse(ratings, look, context) -> (rows, sample, decided); decide_look(rows, decided, ratings,
    look, context) -> Verdict. Returns the last look taken, or None when no look is reached.

    carry(sample, row, look index) -> what a pass is about: a pass stands while it stays the same. For a claim about
    raters in general, nothing changes (None: the raters are sampled, and a later look is more data about the same
    population); for a claim about these raters, each look (each_look): that claim is about the deciding look's
    raters' own (fixed) effects in their shares of its sample, so a pass at an earlier look, on other raters or other
    shares of them, tested another quantity, and every criterion must clear at the deciding look itself, at its level
    (README "May a study stop early?"; scripts/errorbench.py --joined measures the rules)."""
    from ..study.gate import GENERAL, enough_raters

    if carry is None:
        carry = (lambda *_: None) if values.get("claim", GENERAL) == GENERAL else each_look
    passed: dict[str, int] = {}
    passed_raters: dict[str, int] = {}  # the raters of the look a criterion passed at
    passed_on: dict = {}  # what each pass was about (carry)
    last = None
    for look in schedule(values):
        got = state(look)
        if got is None:
            break
        if look.level >= 1 - 1e-12:  # the spending gives this look (almost) nothing: it cannot stop the study
            continue
        ratings, context = got
        rows, sample, decided = analyse(ratings, look, context)
        for r in rows:
            c = r["criterion"]
            if c in passed and carry(sample, r, look.index) != passed_on[c]:  # about another quantity: judged again
                del passed[c], passed_raters[c], passed_on[c]
            # a pass counts only at a look with the raters the claim needs (min_raters), as at the deciding look and
            # in the simulation (study.plan.designs): an interval from 4 raters is no test of raters in general, and
            # a pass there would stay passed (sequential audit, 2026-12-04: a stored KEEP rested on a look of 4 raters)
            if r["ok"] and c not in passed and enough_raters(r, values):
                passed[c] = look.index
                passed_raters[c] = int(r["raters"])
                passed_on[c] = carry(sample, r, look.index)
            r["look"] = look.index
            r["look_level"] = look.level
            r["passed_at_look"] = passed.get(c)
            r["passed_raters"] = passed_raters.get(c)
        verdict = decide_look(rows, decided, ratings, look, context)
        last = Walk(look, rows, verdict, sample, decided, context)
        if not verdict.interim:
            break
    return last


def standing(rows: list[dict], margin: float) -> list[dict]:
    """Each criterion against its boundary at the last look: its lower and upper ends, the margin, and whether it
    has passed (and at which look), is below the margin for good, or is still open."""
    out = []
    for r in rows:
        if r.get("passed_at_look"):
            state = f"passed at look {r['passed_at_look']}"
        elif r["ci_high"] < -margin:
            state = "below the margin: DROP"
        else:
            state = "open"
        out.append({"criterion": r["criterion"], "look": r.get("look"), "level": r.get("look_level"),
                    "ci_low": r["ci_low"], "ci_high": r["ci_high"], "boundary": -margin,
                    "needs": max(0.0, -margin - r["ci_low"]), "state": state, "passed_at": r.get("passed_at_look")})
    return out


def sequence_row(row: dict, sample, criterion: str, confidence: float) -> dict:
    """monitoring = "confidence sequence": the row's interval becomes the betting confidence sequence's at this
    look (stats.betting, two-sided at 1 - confidence), run over the rated pairs' mean differences in the queue's
    random order, mapped to [0, 1]; identical pairs, decided without raters, scale it
    by the differing pairs' share of the sample, as for PPI. The t interval is kept beside it (rated_low,
    rated_high)."""
    import numpy as np

    from ..stats.betting import betting_cs
    from .quality import _x

    x, valid = _x(sample, criterion)
    valid = valid & ~sample.identical[sample.pair]
    pair, x, rid = sample.pair[valid], x[valid], sample.rating_id[valid]
    row.setdefault("rated_low", row["ci_low"])
    row.setdefault("rated_high", row["ci_high"])
    if not len(pair):
        return row
    r_p = np.bincount(pair, minlength=sample.n_pairs)
    mean = np.bincount(pair, weights=x, minlength=sample.n_pairs) / np.maximum(r_p, 1)
    done = np.zeros(sample.n_pairs, np.int64)
    np.maximum.at(done, pair, rid)
    rated = np.flatnonzero(r_p > 0)
    # the queue's random order (its ranks), fixed before any answer, not the order pairs happened to complete (a
    # skipped pair completes late); a pool made before ranks were stored keeps the order of completion
    rank = sample.rank[rated]
    order = rated[np.lexsort((done[rated], np.where(np.isnan(rank), np.inf, rank)))]
    low, high = betting_cs(((mean[order] + 1) / 2)[None, :], 1 - confidence)
    share = len(rated) / (len(rated) + int(sample.identical.sum()))
    row["ci_low"] = share * (2 * float(low[0, -1]) - 1)
    row["ci_high"] = share * (2 * float(high[0, -1]) - 1)
    row["sequence"] = True
    return row
