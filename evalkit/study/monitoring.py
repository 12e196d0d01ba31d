"""When the fidelity gate may look, and at what level: the gate's `monitoring`.

    fixed                 one look, at planned_pairs decided pairs, at the gate's confidence (the design before #20)
    group sequential      a look each time about `look_every` more human ratings are in, the last at planned_pairs
                          (the maximum); each look's interval at the level the O'Brien-Fleming-type Lan-DeMets
                          alpha-spending function leaves it (stats.sequential), so the chance that a criterion
                          which truly drops by the margin passes at ANY look stays the one-sided level
    confidence sequence   the same looks, each criterion judged on an anytime-valid betting confidence sequence of
                          the pair means (stats.betting): valid at every look without spending

The looks are counted in decided pairs, like planned_pairs: look m at ceil(m x look_every / r) decided pairs, r the
ratings a rated pair gets (min_ratings_per_pair; with 1, plus the second_rating_share of pairs rated twice). With no
identical outputs that is a look every look_every ratings; identical pairs (decided without raters) make the looks
come after fewer ratings. The schedule depends on the frozen gate alone, never on answers, so the levels can be
computed before any look: what the spending needs. The information fraction of look m is its decided pairs over
planned_pairs (information proportional to sample size: pairs are served in a random order, independent of answers).

At each permitted look the fidelity condition can stop the study: KEEP when every criterion's lower end is at or above
-margin (and speed and memory hold), DROP when some criterion's upper end is below -margin; otherwise the look is
interim. At the last look (planned_pairs) the fixed rule applies: KEEP or DROP. Stopping for DROP never raises the
false-KEEP rate (it only removes chances to KEEP), so the spending is on the KEEP side alone.
"""

from __future__ import annotations

import math

FIXED, GROUP_SEQUENTIAL, CONFIDENCE_SEQUENCE = "fixed", "group sequential", "confidence sequence"
MONITORING = (FIXED, GROUP_SEQUENTIAL, CONFIDENCE_SEQUENCE)


def ratings_per_rated_pair(values: dict) -> float:
    """Human ratings a pair whose outputs differ gets under this gate (on average: the doubled share)."""
    k = int(values.get("min_ratings_per_pair", 3))
    return k + (float(values.get("second_rating_share", 0.0)) if k == 1 else 0.0)


def look_sizes(values: dict) -> list[int]:
    """Decided pairs at each permitted look, the last planned_pairs (empty when nothing is planned)."""
    planned = int(values.get("planned_pairs", 0))
    if planned <= 0:
        return []
    if values.get("monitoring", FIXED) == FIXED:
        return [planned]
    every = float(values.get("look_every", 50)) / ratings_per_rated_pair(values)
    sizes, m = [], 1
    while (n := math.ceil(m * every - 1e-9)) < planned:
        if not sizes or n > sizes[-1]:
            sizes.append(n)
        m += 1
    return sizes + [planned]


def look_levels(values: dict, sizes: list[int] | None = None) -> list[float]:
    """The two-sided confidence each look's interval is computed at: the gate's for a fixed design and for a
    confidence sequence (anytime-valid at its nominal level); for a group-sequential design, the level whose normal
    quantile is the look's spending boundary (each side spends only what the function allots by then)."""
    sizes = look_sizes(values) if sizes is None else sizes
    confidence = float(values.get("confidence", 0.95))
    if values.get("monitoring", FIXED) != GROUP_SEQUENTIAL or not sizes:
        return [confidence] * len(sizes)
    return group_sequential_levels(tuple(sizes), int(values["planned_pairs"]), confidence)


def group_sequential_levels(sizes: tuple[int, ...], planned: int, confidence: float) -> list[float]:
    from ..stats.sequential import boundaries, confidence_for

    fractions = [min(n / planned, 1.0) for n in sizes]
    return [float(confidence_for(c)) for c in boundaries(fractions, (1 - confidence) / 2)]


def stops(rows: list[dict], margin: float) -> str | None:
    """What a look's fidelity rows say on their own: "KEEP" when every criterion's lower end is at or above -margin,
    "DROP" when some criterion's upper end is below -margin, None otherwise."""
    from .gate import fidelity_ok

    if not rows:
        return None
    if all(bool(fidelity_ok(r["ci_low"], margin)) for r in rows):
        return "KEEP"
    if any(r["ci_high"] < -margin - 1e-12 for r in rows):
        return "DROP"
    return None


def describe(values: dict) -> str:
    """One line for the verdict and the Results tab: the monitoring and its looks."""
    sizes = look_sizes(values)
    kind = values.get("monitoring", FIXED)
    if kind == FIXED or not sizes:
        return f"fixed design: one look at {values.get('planned_pairs', 0)} decided pairs"
    spend = ("O'Brien-Fleming-type Lan-DeMets alpha spending" if kind == GROUP_SEQUENTIAL
             else "an anytime-valid betting confidence sequence")
    # every look where there are few, else the first two and the last two: the last step can be shorter than the
    # others (organiser audit L3: "4, 8, … up to 12" hid a look at 11)
    shown = ", ".join(map(str, sizes)) if len(sizes) <= 5 else (f"{sizes[0]}, {sizes[1]}, …, {sizes[-2]}, "
                                                                 f"{sizes[-1]}")
    return (f"{kind}: up to {len(sizes)} looks, one each {values.get('look_every', 50)} ratings or so (decided "
            f"pairs {shown}), {spend}")
