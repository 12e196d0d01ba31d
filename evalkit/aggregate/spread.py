"""How the ratings spread over raters, against the roster the plan assumed.

For a claim about raters in general the interval's raters' part has about G - 1 degrees of freedom when G raters
share the ratings evenly, and fewer when a few raters give most of them (stats.clustered: Bell & McCaffrey's df).
`evalkit plan --compare` sized the study for a roster (the gate's planned_raters); with fewer raters, or the same
raters spread unevenly, the level holds and the power falls. The organiser should know while raters can still be
invited, so the aggregate says where the spread stands."""

from __future__ import annotations

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
    even = effective_raters(per_rater)
    spread = (f"{rated} raters have rated, their ratings spread as evenly as {even:.1f} raters sharing them (the "
              f"interval's raters' part has about {max(even - 1, 0):.0f} degrees of freedom)"
              if rated > 1 else "1 rater has rated")
    if even >= 0.95 * planned:
        return f"roster: {spread}; the plan's power assumed {planned} (gate planned_raters): as planned"
    if decided:  # nothing to advise: the verdict stands, with the power it had
        return f"roster: {spread}; the plan's power assumed {planned} sharing the ratings evenly (gate planned_raters)"
    return (f"roster: {spread}; the plan's power assumed {planned} sharing the ratings evenly (gate planned_raters). "
            "With fewer, or the same spread unevenly, the verdict's error rate holds but its power falls: invite "
            "more raters, and keep the share even with app.max_ratings_per_rater")
