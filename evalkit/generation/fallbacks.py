"""Why assisted runs fell back: the failed attempts' error class, stage and message, read from the stored records.

A fallback (paths.run_assisted) is stored with `fallback_of`, the failed assisted record it replaced, which keeps the
error. Every report of a fallback count (bench, tune, generate, aggregate) gives the cause beside it: a count alone
sent the user to sqlite3 for the reason (audit, 2026-12-04)."""

from __future__ import annotations

from dataclasses import dataclass

MESSAGE_CHARS = 240  # a traceback's first line is enough to recognise the cause; the record keeps it whole

# The cause line, one template with its figures: `make` writes it (plain text by default: bench, tune and generate
# print it; aggregate.notes.note in the aggregate, so that the Chinese verdict says it around the same error class,
# stage and message, which are data and stay as stored)
CAUSE = {
    "cause": "cause ({share}): {error}{where}: {message}{others}",
    "cause every": "every one",
    "cause share": "{runs} of {total}",
    "cause stage": " at stage {stage}",
    "cause no stage": "",
    "cause no class": "error",
    "cause others": "; {others} other cause(s) (generations.error_message)",
    "cause no others": "",
}


def _text(key: str, /, **figures) -> str:
    return CAUSE[key].format(**figures)


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


def cause_text(causes: list[FallbackCause], make=_text) -> str:
    """One line for the causes: the most frequent in full (its first line, cut at MESSAGE_CHARS), how many of the
    fallbacks it explains, and how many other causes there are. Empty without a cause. `make`: as CAUSE's."""
    if not causes:
        return ""
    top, total = causes[0], sum(c.runs for c in causes)
    message = (top.message.strip().splitlines() or [""])[0]
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS - 1] + "…"
    where = make("cause stage", stage=top.stage) if top.stage else make("cause no stage")
    share = make("cause every") if top.runs == total else make("cause share", runs=top.runs, total=total)
    others = make("cause no others") if len(causes) == 1 else make("cause others", others=len(causes) - 1)
    error = top.error_class or make("cause no class")  # a class is data (quoted as stored); its absence is words
    return make("cause", share=share, error=error, where=where, message=message, others=others)


def experiment_cause(db, experiment_ids: list[int], make=_text) -> str:
    return cause_text(fallback_causes(db, experiment_ids), make)


def experiment_cause_at(db_path, experiment_id: int) -> str:
    """experiment_cause for a caller that has closed its connection (the pool's summary, printed after its merge)."""
    from ..store import open_db

    db = open_db(db_path, migrate_schema=False)
    try:
        return experiment_cause(db, [experiment_id])
    finally:
        db.close()
