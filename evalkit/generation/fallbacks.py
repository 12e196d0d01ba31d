"""Why assisted runs fell back: the failed attempts' error class, stage and message, read from the stored records.

A fallback (paths.run_assisted) is stored with `fallback_of`, the failed assisted record it replaced, which keeps the
error. Every report of a fallback count (bench, tune, generate, aggregate) gives the cause beside it: a count alone
sent the user to sqlite3 for the reason (audit, 2026-12-04)."""

from __future__ import annotations

from dataclasses import dataclass

MESSAGE_CHARS = 240  # a traceback's first line is enough to recognise the cause; the record keeps it whole


@dataclass
class FallbackCause:
    """One cause of fallbacks: the failed attempts that share their error class, stage and message."""

    error_class: str
    stage: str
    message: str
    runs: int


def fallback_causes(db, experiment_ids: list[int]) -> list[FallbackCause]:
    """The causes of the fallbacks stored in these experiments, the most frequent first."""
    if not experiment_ids:
        return []
    marks = ", ".join("?" * len(experiment_ids))
    rows = db.execute(
        f"""SELECT f.error_class, f.error_stage, f.error_message, COUNT(*) FROM generations g
            JOIN generations f ON f.id = g.fallback_of
            WHERE g.experiment_id IN ({marks}) AND g.path = 'fallback'
            GROUP BY f.error_class, f.error_stage, f.error_message ORDER BY COUNT(*) DESC, MIN(g.id)""",
        list(experiment_ids)).fetchall()
    return [FallbackCause(c or "", s or "", m or "", n) for c, s, m, n in rows]


def cause_text(causes: list[FallbackCause]) -> str:
    """One line for the causes: the most frequent in full (its first line, cut at MESSAGE_CHARS), how many of the
    fallbacks it explains, and how many other causes there are. Empty without a cause."""
    if not causes:
        return ""
    top, total = causes[0], sum(c.runs for c in causes)
    message = (top.message.strip().splitlines() or [""])[0]
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS - 1] + "…"
    where = f" at stage {top.stage}" if top.stage else ""
    share = "every one" if top.runs == total else f"{top.runs} of {total}"
    others = "" if len(causes) == 1 else f"; {len(causes) - 1} other cause(s) (generations.error_message)"
    return f"cause ({share}): {top.error_class or 'error'}{where}: {message}{others}"


def experiment_cause(db, experiment_ids: list[int]) -> str:
    return cause_text(fallback_causes(db, experiment_ids))


def experiment_cause_at(db_path, experiment_id: int) -> str:
    """experiment_cause for a caller that has closed its connection (the pool's summary, printed after its merge)."""
    from ..store import open_db

    db = open_db(db_path, migrate_schema=False)
    try:
        return experiment_cause(db, [experiment_id])
    finally:
        db.close()
