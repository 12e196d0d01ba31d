"""Blind A/B ratings: assignment, validation, submission, correction, skip and the reveal.

The side assignment lives in the pairs table and is only read here; what reaches a rater before
submitting is a `PairView` (texts and the prompt), never a path name, timing or token count. A gold (check)
pair gives the same PairView, from the same query, and says what it is only in the reveal.

The reveal waits for the pair to close. One person may hold several identities (open sign-up, a passcode, two
invitations); if a rating showed its pair's sides and timings at once, a second identity could rate the pair, read
the reveal, and let the first rate it knowing which side is which. So a pair's reveal is shown to the raters who
rated it only once no identity can rate it any more: it has its quota of current ratings (the pair's own, stored when
the pool's queue order was drawn from the study's gate: min_ratings_per_pair, or 2 for a pair drawn for a second
rating, a gold pair alike; the app's `ratings_per_pair` for a pool made before quotas were stored), checked
under the write lock of the rating that fills it, and the closing is recorded (store `closed_pairs`), so the pair never
opens again (not even when the quota is raised later). Until then the rater sees "revealed once this pair is
closed" and the list of their pending reveals, which fills in as their pairs close. A correction made before the
pair closes is still blind and counts; one made after is kept with blind = 0.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from ..config import AppConfig
from ..errors import EvalkitError
from .identity import InputError, clean_name, clean_text
from ..task.criteria import CRITERIA, title
from ..records import GenerationPath
from ..store import SHARE_COUNTS, VIEWED_BEFORE, PairFull, ShareReached, StudyDecided, claim_pair, insert_rating, now, recheck_hold
from ..store import HoldDisplaced as _Displaced
from ..study.pairs import IDENTICAL

VALUES = ("pass", "fail", "unsure")
PREFERENCES = ("A", "B", "tie")


class RatingError(EvalkitError):
    """A submission that cannot be stored as it is; nothing was written."""


class PairTaken(RatingError):
    """The pair reached its quota while this rater was working on it (others rated it): nothing was written."""


class StudyClosed(PairTaken):
    """The pair's study reached its decision while the rater worked on it (a look settled it): nothing was written,
    and nothing in the study is left to rate."""


class TextMet(PairTaken):
    """The pair holds a text of a pair this rater rated (greedy copies, _MET_TEXT): the queue serves her no such
    pair, and one her session held from before (another tab, a hold that ran out) is refused too; nothing was
    written."""


class HoldDisplaced(PairTaken):
    """The rater's hold on the pair counted for nobody (_CAP_LAPSED) and the pair was served to a rater whose hold
    counts, who can always store her rating (_DISPLACED): this rater's rating of it is refused; nothing was written."""


class AlreadyRated(RatingError):
    """This rater has already rated or skipped the pair (in another tab, say): nothing was written."""


@dataclass
class PairView:
    """Everything a rater may see before submitting: no path, no timing, no token count."""

    pair_id: str
    prompt_id: str
    text_a: str
    text_b: str
    # The request the two outputs answered, as stored with their generations: a prompt file edited since the pool
    # was built must not put other material beside them. None where nothing is stored, or where the two sides'
    # stored requests differ (taken from one side, it would show which output answered what is on screen).
    material: str | None = None
    task: str | None = None
    # and the criteria's wording stored with them ({id: {"zh", "en"}}), so that every rater of a study answers the
    # questions of its pool, not a wording edited mid-study (sceptic audit, 2026-12-06); None for an older pool
    criteria: dict | None = None


@dataclass
class Reveal:
    pair_id: str
    a_path: str
    b_path: str
    a_seconds: float
    b_seconds: float
    a_tokens: int
    b_tokens: int
    a_tokens_per_second: float | None
    b_tokens_per_second: float | None
    comparable: bool
    speedup: float | None  # ordinary seconds / assisted seconds, only when the outputs are comparable
    note: str = ""


@dataclass
class GoldReveal:
    """The reveal of a gold (check) pair: two reference outputs with known answers, no path and no timing."""

    pair_id: str
    a_expected: dict[str, str]  # criterion id -> pass / fail
    b_expected: dict[str, str]
    a_note: str = ""  # what is wrong with the output, from the prompt file
    b_note: str = ""


@dataclass
class Pending:
    """A reveal not shown yet: the pair, or a copy of its texts (open_copies), can still be rated by other identities."""

    pair_id: str
    needed: int  # current ratings the pair still needs before it closes
    copies: int = 0  # closed, but this many open study pairs hold one of its texts (open_copies)
    unsaved: bool = False  # closed, but its closing is not yet in a snapshot the Space's sync pushed (saved_closing)


@dataclass
class RatedPair:
    """One pair in a rater's list of reveals: their n-th rated pair, its prompt, and its reveal or Pending."""

    n: int
    prompt_id: str
    reveal: "Reveal | GoldReveal | Pending"


@dataclass
class RatingInput:
    pair_id: str
    rater: str
    a: dict[str, str] = field(default_factory=dict)  # criterion id -> pass / fail / unsure
    b: dict[str, str] = field(default_factory=dict)
    preference: str = ""
    comment: str = ""
    client_token: str | None = None  # one per rendered form: a replay of the same submission is refused
    submission: str | None = None  # the page's random id for this Submit (ui.rate._SENDING): stored with the row
    # (rater id, code hash) the session signed in with: checked again under the write lock (roster.check_current), so
    # a revoke or re-issue that commits after the session's own check still stores nothing of hers; None: not checked
    signed_in: tuple[int | None, str] | None = None


def _pair(db, pair_id: str) -> dict:
    row = next(db.query("SELECT * FROM pairs WHERE id = ?", [pair_id]), None) if isinstance(pair_id, str) else None
    if row is None:
        raise RatingError(f"pair '{pair_id}' does not exist", "reload the page to get a pair from the queue")
    return row


# A pair's quota of current ratings: its own (pairs.wanted_ratings, drawn with the queue order), else the app's
# (:quota) for a pool made before quotas were stored.
QUOTA = "COALESCE({p}wanted_ratings, :quota)"
_P_QUOTA = QUOTA.format(p="p.")
_PAIR_QUOTA = f"(SELECT {QUOTA.format(p='')} FROM pairs WHERE id = :pair)"

# The pairs still open to a rater, with their current rating counts and quotas: not met by this rater (rated or
# skipped) and below the pair's quota. One statement, so a request makes few SQLite calls (each row fetched releases
# and re-takes the interpreter lock, which costs most when the app is busy).
# Only the latest study's pairs are served (evalkit.study.studies): a new study's raters never spend ratings on an earlier one.
_LATEST_STUDY = """(SELECT study_id FROM experiments WHERE id = p.experiment_id) IS (SELECT MAX(id) FROM studies)"""
# Pairs whose two outputs are the same tokens are decided without raters (each criterion's difference is exactly 0;
# aggregate.verdict counts them): no rater's time is spent on them.
_IDENTICAL = IDENTICAL.format(p="p.")
# A pool being made (its queue seed stored when it starts, its ranks and quotas once every pair is in: study.pairs) is
# not served: a pair served before its quota is drawn would be closed at the app's quota and never reach its own.
# A pool made before queue seeds were stored has neither, and is served.
_READY = "(p.queue_rank IS NOT NULL OR (SELECT queue_seed FROM experiments WHERE id = p.experiment_id) IS NULL)"
# How long a pair shown to a rater stays theirs before it may be offered to someone else: from its showing, or from
# the page's latest sign that she is still at work on it (keep_hold).
HOLD_MINUTES = 30
_HELD = "COALESCE(a.alive_at, a.shown_at) > :since"
# Signs of work renew a hold for at most this long from its showing (keep_hold): a rating takes minutes, and one pair
# kept for good at the head of the queue's order stalls the decision, whose sample is that head (attacker audit,
# 2026-12-05). A rater who kept a pair by signs of work to within a hold of the cap, and let it go without rating it,
# is not served it again: it goes to the others (her organisers see her name: long_holds).
HOLD_CAP_HOURS = 2.0
_KEPT_DAYS = (HOLD_CAP_HOURS * 60 - HOLD_MINUTES) / 1440  # renewed this long after its showing: kept to the cap


def _kept(a: str) -> str:
    """The assignment `a` (its table's alias) was renewed by signs of work to within a hold of the cap."""
    return f"{a}.alive_at IS NOT NULL AND julianday({a}.alive_at) - julianday({a}.shown_at) >= {_KEPT_DAYS!r}"


_KEPT = _kept("a")
_KEPT_TO_CAP = f"""(SELECT a.pair_id FROM assignments a WHERE a.rater = :rater AND {_KEPT}
    AND julianday('now') - julianday(a.alive_at) >= {HOLD_MINUTES / 1440!r})"""
# The pairs whose hold this rater lost to one that counts (_DISPLACED): not served to her again, nor resumed.
_DISPLACED_FROM = "(SELECT pair_id FROM assignments WHERE rater = :rater AND displaced_at IS NOT NULL)"

# A pair holding a text of a pair this rater rated is not hers to meet: greedy decoding gives every sample of a prompt
# the same two texts (in half precision they can differ between the paths, alike in every sample), and the reveal of
# the one she rated told her which path wrote each; a gold pair's unedited output is such a copy too, and would tell
# her the pair is a check. The inner query is uncorrelated, so SQLite gathers her texts once per statement.
_MET_TEXT = """EXISTS (SELECT 1 FROM (SELECT text FROM generations WHERE id IN ({p}a_generation_id, {p}b_generation_id)
                                 UNION ALL SELECT text FROM reference_outputs
                                 WHERE id IN ({p}a_reference_id, {p}b_reference_id)) t
    WHERE t.text IN (SELECT m.text FROM ratings r JOIN pairs q ON q.id = r.pair_id
                     JOIN generations m ON m.id IN (q.a_generation_id, q.b_generation_id)
                     WHERE r.rater = :rater AND r.kind = 'rating'
                     UNION ALL SELECT m.text FROM ratings r JOIN pairs q ON q.id = r.pair_id
                     JOIN reference_outputs m ON m.id IN (q.a_reference_id, q.b_reference_id)
                     WHERE r.rater = :rater AND r.kind = 'rating'))"""
# What keeps an open pair from this rater, whatever its count: she rated or skipped it, kept it to the cap, lost its
# hold to a rater whose hold counts, or rated one of its texts; or she was shown results that told its sides.
_NOT_HERS_UNVIEWED = f"""p.id NOT IN (SELECT pair_id FROM ratings WHERE rater = :rater) AND p.id NOT IN {_KEPT_TO_CAP}
      AND p.id NOT IN {_DISPLACED_FROM} AND NOT {_MET_TEXT.format(p="p.")}"""
_NOT_HERS = f"{_NOT_HERS_UNVIEWED} AND NOT {VIEWED_BEFORE}"
_OPEN_ANYONE = f"""
    SELECT p.id, COALESCE(c.n, 0) AS n, {_P_QUOTA} AS quota FROM pairs p
    LEFT JOIN (SELECT pair_id, COUNT(*) AS n FROM current_ratings GROUP BY pair_id) c ON c.pair_id = p.id
    WHERE COALESCE(c.n, 0) < {_P_QUOTA} AND {_LATEST_STUDY} AND {_READY}
      AND p.id NOT IN (SELECT pair_id FROM closed_pairs) AND NOT {_IDENTICAL}"""
_OPEN = f"{_OPEN_ANYONE} AND {_NOT_HERS}"

# A hold takes a pair only from a rater whose rating could fill its quota: not an organiser whose ratings in the
# study no longer count (results_seen: opening the Results to watch held the head of the queue for 30 minutes), nor
# a revoked code (organiser audit H2: the last two pairs sat on those two screens while raters were told to wait).
# Nor, for a day, a name that kept a pair to the cap and let it go unrated: it was not served that pair again, but held
# the next one as long, and the next (attacker audit round 3: one name kept the head of the order for 2.5 hours a pair).
# It still gets pairs and rates them, but the pair is another's once it is served to a rater whose hold counts
# (_DISPLACED).
CAP_LAPSE_HOURS = 24.0


def _revoked(column: str) -> str:
    """SQL: the rater named in `column` is revoked, by her code (raters.revoked_at) or, a Hugging Face account, by an
    organiser's standing revoke of her username (hub_revokes, compared without case as the Hub's usernames are)."""
    return (f"({column} IN (SELECT name FROM raters WHERE revoked_at IS NOT NULL) OR "
            f"lower({column}) IN (SELECT lower(name) FROM hub_revokes WHERE lifted_at IS NULL))")


_CAP_LAPSED = f"""(SELECT k.rater FROM assignments k WHERE {_kept("k")}
    AND julianday('now') - julianday(k.alive_at) BETWEEN {HOLD_MINUTES / 1440!r} AND {CAP_LAPSE_HOURS / 24!r}
    AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.pair_id = k.pair_id AND r.rater = k.rater))"""
_HOLD_COUNTS = f"""a.rater NOT IN (SELECT rater FROM results_seen WHERE study_id = (SELECT MAX(id) FROM studies))
                 AND NOT {_revoked("a.rater")}
                 AND a.rater NOT IN {_CAP_LAPSED}"""

# A pair served to a rater whose hold counts displaces the unrated holds on it of names in _CAP_LAPSED (marked by
# store.claim_pair under the serving's write lock): their later rating of it is refused (store.insert_rating), so it
# never fills the quota under the rater served it in good faith ("pair taken", her work lost: the known limit of the
# rule above). Only those: an organiser's rating after results_seen fills no quota, and a revoked code rates nothing.
_DISPLACED = f"""(SELECT k.rater FROM {_CAP_LAPSED} k
    WHERE EXISTS (SELECT 1 FROM (SELECT :rater AS rater) a WHERE {_HOLD_COUNTS}))"""

# The same, counting the pairs other raters hold on screen (an unexpired assignment they have not answered) as
# taken: raters arriving at once are spread over pairs instead of all getting the one that needs a rating.
_OFFERABLE = f"""
    SELECT o.id, o.n + COALESCE(h.n, 0) AS n FROM ({_OPEN}) o
    LEFT JOIN (SELECT a.pair_id, COUNT(*) AS n FROM assignments a
               WHERE a.rater != :rater AND {_HELD} AND {_HOLD_COUNTS}
                 AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.pair_id = a.pair_id AND r.rater = a.rater)
               GROUP BY a.pair_id) h ON h.pair_id = o.id
    WHERE o.n + COALESCE(h.n, 0) < o.quota"""

# One pair of _OFFERABLE, checked again under the write lock before it is held.
_STILL_FREE = f"""
    SELECT (SELECT COUNT(*) FROM current_ratings WHERE pair_id = :pair)
         + (SELECT COUNT(*) FROM assignments a WHERE a.pair_id = :pair AND a.rater != :rater AND {_HELD}
              AND {_HOLD_COUNTS} AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.pair_id = a.pair_id AND r.rater = a.rater)) < {_PAIR_QUOTA}
       AND NOT EXISTS (SELECT 1 FROM ratings WHERE rater = :rater AND pair_id = :pair)
       AND :pair NOT IN {_KEPT_TO_CAP} AND :pair NOT IN {_DISPLACED_FROM}
       AND NOT (SELECT {_MET_TEXT.format(p="")} FROM pairs WHERE id = :pair)
       AND NOT (SELECT {VIEWED_BEFORE} FROM pairs p WHERE p.id = :pair)"""



def _since() -> str:
    return (datetime.now(timezone.utc) - timedelta(minutes=HOLD_MINUTES)).isoformat(timespec="milliseconds")


def given_ratings(db, rater: str) -> int:
    """The ratings (originals, gold pairs' too; no corrections or skips) this rater has given in the study the app
    serves: what app.max_ratings_per_rater counts."""
    return db.execute(f"""SELECT COUNT(*) FROM ratings r JOIN pairs p ON p.id = r.pair_id
                          WHERE r.rater = ? AND {SHARE_COUNTS} AND {_LATEST_STUDY}""",
                      [rater]).fetchone()[0]


def all_identical(db) -> bool:
    """Whether the study the app serves has pairs and every one is identical (so no gold pairs either): the study is
    decided without raters, and a rater's empty queue should say so rather than "no pairs left"."""
    study, differing = db.execute(
        f"""SELECT COUNT(*), COALESCE(SUM(NOT {_IDENTICAL}), 0) FROM pairs p WHERE {_LATEST_STUDY}""").fetchone()
    return bool(study) and not differing


def note_results_seen(db, rater: str, ratings_per_pair: int, pool_timing: bool = False, latest: bool = True) -> bool:
    """Record that this rater (an organiser: the only identity shown the Results while they can still rate) is being
    shown results while a study pair they could still be served has ratings: per-path tables over few pairs can tell
    that pair's sides, so from now on their ratings in this study are kept but not counted (store.insert_rating).
    `pool_timing`: the speed tables come from the pool's own runs (no benchmark), which time every pooled pair by path,
    rated or not, so any study pair they could still be served counts, ratings or none. Whatever study is shown
    (`latest`: the one the queue serves), a pair they could be served whose text the Results show elsewhere under its
    path (shown_texts_of_open_pairs: a closed or rated copy, a benchmark's run) counts too. So does a pair of the
    served study they rated that is still open (_RATED_OPEN): a correction of it before it closes counts.
    Returns whether their ratings in that study no longer count (now or since before)."""
    from ..store import insert_results_seen

    if results_seen(db, rater):
        return True
    args = {"rater": rater, "quota": ratings_per_pair, "timed": int(pool_timing)}
    informative = latest and db.execute(f"SELECT EXISTS (SELECT 1 FROM ({_OPEN}) o JOIN pairs q ON q.id = o.id "
                                        "WHERE (o.n > 0 OR :timed) AND q.kind = 'study') "
                                        f"OR EXISTS ({_RATED_OPEN})", args).fetchone()[0]
    # read only: most views of a study under way take no write lock
    if not informative and not shown_texts_of_open_pairs(db, rater, ratings_per_pair):
        return False
    insert_results_seen(db, rater)
    return True


# The study pairs of the served study that this rater rated and that are still open: her rating of one counts, and a
# correction of it before it closes counts too, so what the Results tell of its sides (per-path tables hold her own
# answers: 'A passes, B fails' is one path's pass rate) would steer a counted answer (attacker audit, 2026-12-05).
_RATED_OPEN = f"""SELECT q.id FROM pairs q WHERE q.kind = 'study' AND {_LATEST_STUDY.replace("p.", "q.")}
                      AND q.id IN (SELECT pair_id FROM ratings WHERE rater = :rater AND kind = 'rating')
                      AND q.id NOT IN (SELECT pair_id FROM closed_pairs) AND NOT {IDENTICAL.format(p="q.")}"""


def shown_texts_of_open_pairs(db, rater: str, ratings_per_pair: int) -> bool:
    """Whether a study pair this rater could still be served (or rated, still open) holds a text that the Results can
    show elsewhere, under the path that wrote it: any stored run (not live) outside the open pairs nobody has rated
    yet. Greedy decoding
    writes every sample of a prompt, and a benchmark of it, as the same two texts: a closed or rated copy of the pair
    (its ratings per path in the tables, its two points in the time-against-length plot), an unpaired extra sample or
    a benchmark's run (tokens per path and prompt) tells which of the pair's texts is which path (attacker audit,
    2026-12-05). With sampling, texts rarely repeat and this is rarely so."""
    args = {"rater": rater, "quota": ratings_per_pair}
    texts = [r[0] for r in db.execute(  # the pairs she could still be served, and those she rated that are open
        f"""SELECT DISTINCT g.text FROM pairs q JOIN generations g ON g.id IN (q.a_generation_id, q.b_generation_id)
            WHERE q.kind = 'study' AND (q.id IN (SELECT id FROM ({_OPEN})) OR q.id IN ({_RATED_OPEN}))
              AND g.text != ''""", args)]  # an empty output (a failed run's) tells nothing of a path
    # the runs nothing shows: the two outputs of each pair still open that has no rating
    unshown = """SELECT g FROM (SELECT a_generation_id AS g, id AS pair FROM pairs
                                UNION ALL SELECT b_generation_id, id FROM pairs)
                 WHERE g IS NOT NULL AND pair NOT IN (SELECT pair_id FROM closed_pairs)
                   AND pair NOT IN (SELECT pair_id FROM current_ratings)"""
    for i in range(0, len(texts), 400):
        chunk = texts[i:i + 400]
        if db.execute(f"""SELECT EXISTS (SELECT 1 FROM generations WHERE live = 0
                                         AND text IN ({",".join("?" * len(chunk))}) AND id NOT IN ({unshown}))""",
                      chunk).fetchone()[0]:
            return True
    return False


# A hold kept longer than this by signs of work is no rater at work on one pair (a rating takes minutes): the decision
# sample is the head of the queue's order, so a pair held there for good stalls the decision (attacker audit, 2026-12-05)
LONG_HOLD_HOURS = HOLD_CAP_HOURS


def long_holds(db, hours: float = LONG_HOLD_HOURS) -> list[tuple[str, str]]:
    """The raters holding a pair of the served study they were shown over `hours` ago, unrated and open (kept by
    signs of work all along: a hold that lapses and is served again starts anew), and those who kept one so to the
    cap and let it go (_KEPT_TO_CAP: no longer served it), with the oldest such showing: what the organiser's Results
    name, since a name at this again and again is better revoked."""
    old = (datetime.now(timezone.utc) - timedelta(hours=hours)).isoformat(timespec="milliseconds")
    return [(r[0], r[1]) for r in db.execute(
        f"""SELECT a.rater, MIN(a.shown_at) FROM assignments a JOIN pairs p ON p.id = a.pair_id
            WHERE {_LATEST_STUDY}
              AND (({_HELD} AND a.shown_at <= :old) OR ({_KEPT}))
              AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.pair_id = a.pair_id AND r.rater = a.rater)
              AND a.pair_id NOT IN (SELECT pair_id FROM closed_pairs)
              AND NOT {_revoked("a.rater")}
            GROUP BY a.rater ORDER BY MIN(a.shown_at)""", {"since": _since(), "old": old})]


def hold_ends(db, raters: list[str]) -> list[float]:
    """The seconds until each pair these raters hold on screen is let go, unless a sign of work renews it: holds not run
    out, not displaced, unrated, on an open pair of the served study (what keeps a pair from the other raters).
    For the app's bound on the pairs one client's sign-up names hold at once (evalkit.ui.auth.Doorman)."""
    if not raters:
        return []
    names = {f"r{i}": name for i, name in enumerate(raters)}
    rows = db.execute(
        f"""SELECT (julianday(COALESCE(a.alive_at, a.shown_at)) - julianday(:since)) * 86400 FROM assignments a
            JOIN pairs p ON p.id = a.pair_id
            WHERE a.rater IN ({", ".join(":" + k for k in names)}) AND {_HELD} AND a.displaced_at IS NULL
              AND {_LATEST_STUDY} AND a.pair_id NOT IN (SELECT pair_id FROM closed_pairs)
              AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.pair_id = a.pair_id AND r.rater = a.rater)""",
        names | {"since": _since()}).fetchall()
    return sorted(max(0.0, r[0]) for r in rows)


def keep_hold(db, rater: str, pair_id: str, signed_in: tuple[int | None, str] | None = None) -> bool:
    """The page's sign that this rater is still at work on the pair she holds: the hold counts from now (a hold that
    ran out is not renewed: the pair may be another's). Returns whether it was renewed. `signed_in`: as
    RatingInput's, checked under the write lock that renews it (roster.SignInError once revoked or re-issued)."""
    from ..store import renew_hold

    capped = (datetime.now(timezone.utc) - timedelta(hours=HOLD_CAP_HOURS)).isoformat(timespec="milliseconds")
    return renew_hold(db, rater, pair_id, _since(), shown_after=capped, admit=code_check(signed_in))


def note_results_shown(db, rater: str) -> None:
    """Record that a rater (not an organiser) was shown the latest study's results. Results open to a rater only once
    nothing of the study is open (results_open), so nothing she could rate then was in them; but a later pool can
    add pairs to the same study (`evalkit generate`), and her ratings of those would be given knowing the per-path
    tables (attacker audit F5). So from now on the app serves her no pair of this study (evalkit.ui.rate), and a
    rating she stores anyway is kept uncounted (store.insert_rating), as an organiser's after note_results_seen.
    Read first: most views come after the first and take no write lock."""
    from ..store import insert_results_seen

    if not results_seen(db, rater):
        insert_results_seen(db, rater)


def note_results_view(db, rater: str, study_id: int) -> None:
    """Record that this rater or organiser was shown this study's results, whatever they told (note_results_seen and
    note_results_shown record what they made uncounted): no pair stored in it later is hers (store.VIEWED_BEFORE).
    Read first: most views come after the first and take no write lock."""
    from ..store import insert_results_view

    if not db.execute("SELECT 1 FROM results_views WHERE rater = ? AND study_id = ?", [rater, study_id]).fetchone():
        insert_results_view(db, rater, study_id)


def results_view_rows(db, rater: str, study_id: int) -> dict[str, int]:
    """The rowids of what this person's views of the results recorded ({table: rowid}): her first view of this study
    (note_results_view) and her view of the served study's while it counts her ratings no more (note_results_seen,
    note_results_shown). The Results tab of a Space whose crash loses what the sync has not pushed waits for them."""
    rows = {"results_views": db.execute("SELECT rowid FROM results_views WHERE rater = ? AND study_id = ?",
                                        [rater, study_id]).fetchone(),
            "results_seen": db.execute("SELECT rowid FROM results_seen WHERE rater = ? AND study_id = "
                                       "(SELECT MAX(id) FROM studies)", [rater]).fetchone()}
    return {table: row[0] for table, row in rows.items() if row is not None}


def is_counted(db, rating_id: int) -> bool:
    """Whether a stored rating or correction is blind, so counts (as long as no blind correction replaces it)."""
    row = db.execute("SELECT blind FROM ratings WHERE id = ?", [rating_id]).fetchone()
    return bool(row and row[0])


def rating_counts(db, rater: str, pair_id: str) -> bool:
    """Whether this rater's rating of the pair counts: a blind one is stored (a correction after the reveal leaves the
    blind rating counting; an organiser who saw the results while rating has none)."""
    return bool(db.execute("SELECT 1 FROM ratings WHERE rater = ? AND pair_id = ? AND blind = 1 AND kind != 'skip'",
                           [rater, pair_id]).fetchone())


def results_seen(db, rater: str) -> bool:
    """Whether this rater's ratings in the study the app serves are kept but not counted (note_results_seen)."""
    return bool(db.execute("SELECT 1 FROM results_seen WHERE rater = ? AND study_id = (SELECT MAX(id) FROM studies)",
                           [rater]).fetchone())


def current_raters(db, share: int = 0) -> list[str]:
    """The names the served study's queue could still count a rating from: invited or signed up (the raters table)
    or having rated in it, not revoked, not an organiser whose ratings there no longer count (results_seen), and
    below their `share` (app.max_ratings_per_rater; 0 = no limit)."""
    names = [r[0] for r in db.execute(
        f"""SELECT name FROM (SELECT name FROM raters WHERE revoked_at IS NULL
            UNION SELECT DISTINCT r.rater FROM ratings r JOIN pairs p ON p.id = r.pair_id WHERE {_LATEST_STUDY}
            EXCEPT SELECT rater FROM results_seen WHERE study_id = (SELECT MAX(id) FROM studies))
            WHERE NOT {_revoked("name")}""")]
    return sorted(n for n in names if not share_reached(db, n, share))


# Of the open pairs :ids, those the queue could serve this rater (what _OPEN asks of a pair, for these pairs only).
_HERS_TO_TAKE = f"""SELECT p.id FROM pairs p WHERE p.id IN (SELECT value FROM json_each(:ids))
    AND p.id NOT IN (SELECT pair_id FROM closed_pairs) AND {_READY}
    AND (SELECT COUNT(*) FROM current_ratings c WHERE c.pair_id = p.id) < {_P_QUOTA} AND {_NOT_HERS}"""


def untakeable(db, pair_ids: list[str], ratings_per_pair: int, share: int = 0) -> tuple[list[str], int]:
    """Of these pairs of the served study, the open ones that no current rater (current_raters) can be served: each
    has rated or skipped it, met one of its texts, kept it to the cap or lost its hold, or reached her share; and
    how many current raters there are. A look that needs such a pair waits for a rater who is not there yet
    (aggregate's note says so and what to do)."""
    import json

    left = [p for p, in db.execute(f"""SELECT p.id FROM pairs p WHERE p.id IN (SELECT value FROM json_each(?))
                                       AND p.id NOT IN (SELECT pair_id FROM closed_pairs) AND {_LATEST_STUDY}""",
                                   [json.dumps(list(pair_ids))])]
    raters = current_raters(db, share)
    for rater in raters:
        if not left:
            break
        takes = {p for p, in db.execute(_HERS_TO_TAKE, {"ids": json.dumps(left), "rater": rater,
                                                         "quota": ratings_per_pair})}
        left = [p for p in left if p not in takes]
    return left, len(raters)


def share_reached(db, rater: str, share: int) -> bool:
    """Whether this rater has given their share (app.max_ratings_per_rater; 0 = no limit)."""
    return bool(share) and given_ratings(db, rater) >= share


def next_pair(db, rater: str, ratings_per_pair: int, share: int = 0,
              signed_in: tuple[int | None, str] | None = None) -> PairView | None:
    """The pair this rater should see: the one they already hold on screen (a reload resumes it), else the open pair
    (below its own quota; `ratings_per_pair` for a pair without one) they have not met yet with the lowest queue rank
    (drawn at random when the pool was made, store `draw_queue_order`), counting pairs others hold as taken; None when
    nothing is left. The pair shown is recorded (the assignment: a hold, and the start of the time on task).

    Serving the pool in its random order, each pair until its quota, makes the pairs rated at any look a uniformly
    random subset of the pool, whatever the texts say: the assumption prediction-powered inference rests on
    (evalkit.stats.ppi). Pairs without a rank (a pool made before ranks were stored) come after every ranked pair,
    least-rated first, the choice among equally rated pairs spread by a hash of (rater, pair).

    A rater who has given their `share` (app.max_ratings_per_rater) gets no new pair: the plan's roster assumes raters
    share the ratings about evenly. A pair already on their screen stays theirs to finish only while below the share.

    `signed_in`: as RatingInput's, checked under the write lock that records a new pair's hold (roster.SignInError): a
    revoke that commits after the session's own check serves no new pair's texts. A pair she holds is served again
    (a reload, a sign-in, Check again) only past the same check under the write lock (store.recheck_hold): a revoke
    committing between the session's check and the resume serves its texts no more either (attacker audit, round 11)."""
    args = {"rater": rater, "quota": ratings_per_pair, "since": _since()}
    if share_reached(db, rater, share):
        return None

    def held() -> str | None:
        row = db.execute(f"""SELECT a.pair_id FROM assignments a JOIN ({_OPEN}) o ON o.id = a.pair_id
                             WHERE a.rater = :rater AND {_HELD} ORDER BY a.shown_at DESC, a.rowid DESC LIMIT 1""",
                         args).fetchone()
        return row[0] if row else None

    if held() is not None:  # read again under the lock, after her code (it may have gone meanwhile)
        pair_id = recheck_hold(db, held, code_check(signed_in))
        if pair_id is not None:
            return pair_view(db, pair_id)

    def pick() -> str | None:
        ranked = db.execute(f"""WITH open AS ({_OFFERABLE}) SELECT o.id FROM open o JOIN pairs p ON p.id = o.id
                                 WHERE p.queue_rank IS NOT NULL ORDER BY p.queue_rank, p.id LIMIT 1""", args).fetchone()
        if ranked:
            return ranked[0]
        least = [r[0] for r in db.execute(
            f"WITH open AS ({_OFFERABLE}) SELECT id FROM open WHERE n = (SELECT MIN(n) FROM open)", args)]
        return min(least, key=lambda pid: hashlib.sha256(f"{rater}\0{pid}".encode()).hexdigest()) if least else None

    def still_free(pair_id: str) -> bool:  # under the write lock: nobody took it since it was picked
        return bool(db.execute(_STILL_FREE, args | {"pair": pair_id}).fetchone()[0])

    pair_id = claim_pair(db, rater, pick(), still_free, pick, displaced=_DISPLACED, admit=code_check(signed_in))
    return None if pair_id is None else pair_view(db, pair_id)


# One statement for study and gold pairs alike: a pair's texts come from its generations or its reference outputs.
# The request stored with a study pair's own generation; a gold pair's (reference outputs) with its pool's generations.
_VIEW = """SELECT p.id, p.prompt_id, COALESCE(ga.text, ra.text), COALESCE(gb.text, rb.text),
    CASE WHEN ga.id IS NULL THEN (SELECT json_extract(g.effective_config, '$.prompt') FROM generations g
                                  WHERE g.prompt_id = p.prompt_id AND g.experiment_id = p.experiment_id AND g.live = 0
                                  LIMIT 1)
         WHEN json_extract(ga.effective_config, '$.prompt') IS json_extract(gb.effective_config, '$.prompt')
         THEN json_extract(ga.effective_config, '$.prompt') END
    FROM pairs p
    LEFT JOIN generations ga ON ga.id = p.a_generation_id LEFT JOIN generations gb ON gb.id = p.b_generation_id
    LEFT JOIN reference_outputs ra ON ra.id = p.a_reference_id LEFT JOIN reference_outputs rb ON rb.id = p.b_reference_id
    WHERE p.id = ?"""


def pair_view(db, pair_id: str) -> PairView:
    import json

    row = None if not isinstance(pair_id, str) else db.execute(_VIEW, [pair_id]).fetchone()
    if row is None:
        raise RatingError(f"pair '{pair_id}' does not exist", "reload the page to get a pair from the queue")
    stored = json.loads(row[4]) if row[4] else {}
    text = (lambda k: stored.get(k) if isinstance(stored.get(k), str) else None)
    return PairView(pair_id=row[0], prompt_id=row[1], text_a=row[2], text_b=row[3], material=text("material"),
                    task=text("task"), criteria=_stored_criteria(stored.get("criteria")))


def _stored_criteria(value) -> dict | None:
    """The criteria's wording as stored with a pair's generations, when it is whole (every registered id, both
    languages); None otherwise, and the prompt file's wording is shown."""
    ok = isinstance(value, dict) and set(value) == set(CRITERIA) and all(
        isinstance(w, dict) and all(isinstance(w.get(lang), str) and w[lang] for lang in ("zh", "en"))
        for w in value.values())
    return {c: {"zh": value[c]["zh"], "en": value[c]["en"]} for c in CRITERIA} if ok else None


def pair_prompt(db, pair_id: str | None) -> str | None:
    """The prompt id of a pair (None for no pair or an unknown one): what the form's labels on screen depend on."""
    if not isinstance(pair_id, str):
        return None
    row = db.execute("SELECT prompt_id FROM pairs WHERE id = ?", [pair_id]).fetchone()
    return row[0] if row else None


@dataclass(frozen=True)
class Progress:
    """A rater's progress: pairs finished (rated or skipped), that plus the pairs still open to them (no more than
    their share allows), and how many of the finished ones were skipped. Shown as "7 / 20 (1 skipped)"."""

    done: int
    total: int
    skipped: int

    def counts(self) -> tuple[int, int]:
        return self.done, self.total


def progress(db, rater: str, ratings_per_pair: int, share: int = 0) -> Progress:
    """This rater's Progress in the study the queue serves. A skipped pair leaves her queue as a rated one does, so it
    counts as done, and the count of skips says so (rater audit F17: "7 / 20" read as seven rated)."""
    done, skipped, still_open = db.execute(
        f"""SELECT (SELECT COUNT(DISTINCT r.pair_id) FROM ratings r JOIN pairs p ON p.id = r.pair_id
                    WHERE r.rater = :rater AND {_LATEST_STUDY}),
                   (SELECT COUNT(DISTINCT r.pair_id) FROM ratings r JOIN pairs p ON p.id = r.pair_id
                    WHERE r.rater = :rater AND r.kind = 'skip' AND {_LATEST_STUDY}),
                   (SELECT COUNT(*) FROM ({_OPEN}))""",
        {"rater": rater, "quota": ratings_per_pair}).fetchone()
    if share:
        still_open = min(still_open, max(share - given_ratings(db, rater), 0))
    return Progress(done, done + still_open, skipped)


def kept_by_results_view(db, rater: str, ratings_per_pair: int) -> int:
    """Open pairs that would be this rater's but for results she was shown (store.VIEWED_BEFORE: this study's, before
    they were stored, or another study's whose texts they repeat): others rate them. progress() counts them neither
    done nor open, so her empty queue says why (rate.RateHandlers.done_words), not that others rated every pair."""
    return db.execute(f"SELECT COUNT(*) FROM ({_OPEN_ANYONE} AND {_NOT_HERS_UNVIEWED} AND {VIEWED_BEFORE})",
                      {"rater": rater, "quota": ratings_per_pair}).fetchone()[0]


def results_open(db, rater: str, ratings_per_pair: int, skip_allowance: int, share: int = 0) -> tuple[bool, str]:
    """Whether a rater may see the aggregates, and why not. Only once no pair is left for them to meet (their
    queue is empty whoever holds what), they have skipped at most `skip_allowance` pairs (skipping is not a way to the
    results), and no pair of the study is open to anyone else either. Per-path tables over a few pairs can tell the
    sides of a pair, and a pair this rater met can still be open to another name (a second one of hers, with open
    sign-up or a second invitation): she knows her own answers on it, so the tables' per-prompt counts can decode
    it. Once her queue is empty, every pair still open is one she met, so she waits for those to be closed. A rater
    who has given their share waits like the others: the share is a setting an organiser may raise, and then they
    rate again."""
    args = {"rater": rater, "quota": ratings_per_pair}
    rated, skipped, still_open = db.execute(
        f"""SELECT (SELECT COUNT(DISTINCT r.pair_id) FROM ratings r JOIN pairs p ON p.id = r.pair_id
                    WHERE r.rater = :rater AND r.kind = 'rating' AND {_LATEST_STUDY}),
                   (SELECT COUNT(*) FROM ratings r JOIN pairs p ON p.id = r.pair_id
                    WHERE r.rater = :rater AND r.kind = 'skip' AND {_LATEST_STUDY}),
                   (SELECT COUNT(*) FROM ({_OPEN}))""", args).fetchone()
    if still_open and share_reached(db, rater, share):
        return False, (f"you have given your share of {share} ratings; results open once no pair is left for you "
                       "to rate")
    if still_open:
        return False, f"you have {still_open} pair(s) left to rate"
    if skipped > skip_allowance:
        return False, (f"you skipped {skipped} pairs and rated {rated}; results open to raters who rated their "
                       f"pairs (at most {skip_allowance} skipped)")
    # open to anyone: no identity has the empty name (names are cleaned to at least one character)
    waiting = db.execute(f"SELECT COUNT(*) FROM ({_OPEN})", args | {"rater": ""}).fetchone()[0]
    if waiting:
        return False, (f"you have rated your pairs; results open once the study's last {waiting} pair(s) have "
                       "their ratings from other raters")
    return True, ""


def study_decided(db) -> bool:
    """Whether the study the queue serves has its decision stored: its pairs are all closed (store.insert_decision),
    and nothing in it is left to rate."""
    return db.execute("SELECT EXISTS (SELECT 1 FROM decisions WHERE study_id = (SELECT MAX(id) FROM studies))"
                      ).fetchone()[0] == 1


def unclosed_pairs(db, gold: bool = True) -> int:
    """Pairs of the study the queue serves that a rater may still be shown: not closed (store `closed_pairs`: the
    rating that fills a pair's quota closes it) and not decided without raters (identical outputs have no sides to
    tell). While any is left, what shows a pair's sides (the export's pairs table, the report's plots and tables)
    can tell a rater which side of that pair is which path. No quota is needed: a pair below its quota is open.
    gold=False: study pairs only, for the report, which tells nothing of a gold pair (it has no sides); the export
    counts them, since its reference outputs say which pair is a check and what was changed."""
    return db.execute(f"SELECT COUNT(*) FROM pairs p WHERE {_LATEST_STUDY} AND NOT {_IDENTICAL} "
                      + ("" if gold else "AND p.kind != 'gold' ")
                      + "AND p.id NOT IN (SELECT pair_id FROM closed_pairs)").fetchone()[0]


def _text(value, what: str, limit: int) -> str:
    try:
        return clean_text(value if value is not None else "", what, limit)
    except InputError as e:
        raise RatingError(e.what, e.fix) from e


def clean_comment(comment: str | None, app: AppConfig) -> str:
    """The comment as it is stored."""
    return _text(comment, "comment", app.max_comment_chars)


def clean_rater(rater: str) -> str:
    """A rater name as stored with a rating (identities are checked at sign-in; this only normalises)."""
    try:
        return clean_name(rater or "")
    except InputError as e:
        raise RatingError("rater " + e.what.removeprefix("the "), e.fix) from e


def _sent(value) -> str:
    """What a client sent, as a refusal quotes it: at most 40 characters (a raw request can send 60 KB as one answer,
    and the refusal, in two languages, sent it back twice)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _validate(inp: RatingInput, app: AppConfig) -> dict:
    for side, answers in (("A", inp.a), ("B", inp.b)):
        if not isinstance(answers, dict):
            raise RatingError(f"output {side}: answers must be a mapping of criterion to value", "answer every criterion")
        unknown = sorted(set(answers) - set(CRITERIA))
        if unknown:
            raise RatingError(f"output {side}: unknown criterion id(s) {', '.join(unknown)}", f"use {', '.join(CRITERIA)}")
        for c in CRITERIA:
            v = answers.get(c)
            if v not in VALUES:
                raise RatingError(
                    f"output {side}: “{title(c)}” has no valid answer ({_sent(v)})", "choose pass, fail or unsure for every question"
                )
    if inp.preference not in PREFERENCES:
        raise RatingError(f"preference {_sent(inp.preference)} is not A, B or tie", "pick A, B or tie")
    return {"comment": clean_comment(inp.comment, app)}


def _row(inp: RatingInput, pair: dict, rater: str, comment: str, supersedes: int | None) -> dict:
    """The stored row. A gold pair has no paths: its answers are kept per side only, and the path columns
    (what every comparison of the paths reads) stay empty."""
    gold = pair["kind"] == "gold"
    ordinary_is_a = pair["ordinary_side"] == "A"
    empty = dict.fromkeys(CRITERIA)
    ordinary, assisted = (empty, empty) if gold else (inp.a, inp.b) if ordinary_is_a else (inp.b, inp.a)
    pref_path = None if gold else "tie" if inp.preference == "tie" else (
        GenerationPath.ORDINARY if (inp.preference == "A") == ordinary_is_a else GenerationPath.ASSISTED
    )
    row = {
        "pair_id": pair["id"], "rater": rater, "created_at": now(), "kind": "rating",
        "preference": inp.preference, "preferred_path": pref_path, "comment": comment,
        "supersedes": supersedes, "client_token": inp.client_token or None, "submission_id": inp.submission or None,
    }
    for c in CRITERIA:
        row[f"a_{c}"], row[f"b_{c}"] = inp.a[c], inp.b[c]
        row[f"ordinary_{c}"], row[f"assisted_{c}"] = ordinary[c], assisted[c]
    return row


def code_check(signed_in: tuple[int | None, str] | None) -> Callable | None:
    """The store's `admit` for a write of this session's rater: her code (signed_in: rater id, code hash, and a Hugging
    Face identity's username) checked under the write lock (roster.check_current), so a revoke or re-issue that
    commits after the session's own check lets nothing of hers be written after it; None (nothing checked) without
    `signed_in`, or with neither a code nor a Hub username, so that a write with nothing to check takes no lock for it
    (store.recheck_hold)."""
    from .roster import check_current

    hub = signed_in[2] if signed_in is not None and len(signed_in) > 2 else None
    if signed_in is None or (signed_in[0] is None and not hub):
        return None
    return lambda db: check_current(db, *signed_in)


def _insert(db, row: dict, quota: int | None = None, share: int = 0,
            signed_in: tuple[int | None, str] | None = None) -> int:
    """Store one row (store.insert_rating: with `quota` and `share`, and the rater's code when `signed_in` is given,
    checked under the write lock) and say what a refused one means to the rater."""
    try:
        return insert_rating(db, row, quota, share or None, code_check(signed_in))
    except ShareReached as e:
        raise RatingError(f"you have given your share of {e.share} ratings in this study (app.max_ratings_per_rater); "
                          "this one was not stored", "thank you: there is nothing more for you to rate unless the "
                          "organiser raises the share") from e
    except _Displaced as e:
        raise HoldDisplaced(
            "this pair went to another rater: a pair you kept to the hold's cap and left unrated means your holds keep "
            f"no pair from others for {CAP_LAPSE_HOURS:g} hours, and this one was served to a rater whose hold counts; "
            "your answers were not stored", "ask for another pair") from e
    except StudyDecided as e:
        raise StudyClosed("this study reached its decision while you were rating this pair: no more ratings are "
                          "needed, and your answers were not stored", "thank you: there is nothing left to rate "
                          "in this study") from e
    except PairFull as e:
        if row.get("kind") == "skip":
            raise PairTaken("other raters finished this pair while you were working; your skip was not stored (the "
                            "pair needs nothing more)", "ask for another pair") from e
        raise PairTaken(
            f"this pair already has its {e.quota} ratings (other raters finished it while you were "
            "working); your answers were not stored", "ask for another pair") from e
    except sqlite3.IntegrityError as e:
        msg = str(e)
        if "client_token" in msg or "submission_id" in msg:
            raise RatingError("this submission was already received", "nothing to do: it is stored once") from e
        if "pair_id, ratings.rater" in msg or "ratings.pair_id" in msg:
            raise AlreadyRated(
                f"rater '{row['rater']}' has already rated or skipped pair '{row['pair_id']}'",
                "a rating is locked after submit: use Correct to add a correction",
            ) from e
        if "supersedes" in msg:
            raise RatingError("that rating was already corrected", "correct the newest version") from e
        raise


def refuse_met_text(db, rater: str, pair_id: str) -> None:
    """Raise TextMet when this pair holds a text of a pair the rater rated (not this one: that is AlreadyRated). The
    queue serves her no such pair, but a session can hold one from before: a tab was served it, its hold ran out,
    another tab was served the copy and rated it, and that reveal told the sides (attacker audit). The app's submit
    asks this before storing; read before the write lock, which is enough: a rating stored after this read was sent
    before the other's reveal could be seen. (Not in submit_rating, whose callers include recorded fixtures.)"""
    if db.execute(f"""SELECT 1 FROM pairs WHERE id = :pair AND {_MET_TEXT.format(p='')}
                      AND NOT EXISTS (SELECT 1 FROM ratings WHERE rater = :rater AND pair_id = :pair)""",
                  {"rater": rater, "pair": pair_id}).fetchone():
        raise TextMet("you rated a pair holding a text of this one, and its reveal can tell this pair's sides: it is "
                      "not yours to rate; your answers were not stored", "ask for another pair")


def submit_rating(db, app: AppConfig, inp: RatingInput) -> int:
    """Store one rating in one transaction; returns its id. Refuses a second original for the same rater and pair."""
    rater = clean_rater(inp.rater)
    pair = _pair(db, inp.pair_id)
    extra = _validate(inp, app)
    return _insert(db, _row(inp, pair, rater, extra["comment"], None), quota=app.ratings_per_pair,
                   share=app.max_ratings_per_rater, signed_in=inp.signed_in)


def correct_rating(db, app: AppConfig, rating_id: int, inp: RatingInput, *, after_reveal: bool | None = None) -> int:
    """Add a correction: a new row superseding `rating_id` (the rater's own, newest version). History is kept.

    A correction made once the reveal can be seen (the pair is closed; `after_reveal` says so explicitly) is stored
    with blind = 0: kept and exported, never counted; the last blind version stays the rating the aggregate and
    the verdict use. Before that, no identity has seen the pair's reveal, and the correction counts."""
    rater = clean_rater(inp.rater)
    old = next(db.query("SELECT * FROM ratings WHERE id = ?", [rating_id]), None)
    if old is None or old["kind"] != "rating":
        raise RatingError(f"rating {rating_id} does not exist", "submit a rating first")
    if old["rater"] != rater or old["pair_id"] != inp.pair_id:
        raise RatingError(f"rating {rating_id} belongs to another rater or pair", "you can only correct your own rating")
    pair = _pair(db, inp.pair_id)
    extra = _validate(inp, app)
    row = _row(inp, pair, rater, extra["comment"], rating_id)
    if after_reveal is None:
        after_reveal = is_closed(db, inp.pair_id, app.ratings_per_pair)
    row["blind"] = 0 if after_reveal or not old["blind"] else 1
    return _insert(db, row, signed_in=inp.signed_in)


def skip_pair(db, app: AppConfig, rater: str, pair_id: str, reason: str, client_token: str | None = None,
              signed_in: tuple[int | None, str] | None = None) -> int:
    rater = clean_rater(rater)
    pair = _pair(db, pair_id)
    reason = _text(reason, "skip reason", app.max_comment_chars)
    if not reason:
        raise RatingError("a skip needs a reason", "say briefly why (e.g. 'both outputs empty', 'cannot judge English')")
    return _insert(db, {"pair_id": pair["id"], "rater": rater, "created_at": now(), "kind": "skip",
                        "skip_reason": reason, "client_token": client_token or None}, signed_in=signed_in)


def is_closed(db, pair_id: str, quota: int) -> bool:
    """Whether no identity can rate this pair any more: its closing is recorded, or it has its quota of current
    ratings (its own; `quota` for a pair without one; a pair filled before closings were recorded)."""
    return bool(db.execute(
        "SELECT EXISTS (SELECT 1 FROM closed_pairs WHERE pair_id = :pair) "
        f"OR (SELECT COUNT(*) FROM current_ratings WHERE pair_id = :pair) >= {_PAIR_QUOTA}",
        {"pair": pair_id, "quota": quota}).fetchone()[0])


def pair_quota(db, pair_id: str, quota: int) -> int:
    """The current ratings this pair wants before it closes: its own quota, else `quota` (the app's)."""
    row = db.execute(f"SELECT {_PAIR_QUOTA}", {"pair": pair_id, "quota": quota}).fetchone()
    return quota if row is None or row[0] is None else int(row[0])


def open_copies(db, pair_ids, closed_after: int | None = None) -> dict[str, int]:
    """For each of these study pairs that has any, how many open study pairs (of the study the queue serves, not
    closed, outputs differ) hold one of its texts: greedy copies, whose sides its reveal tells too. The met-text rule
    keeps a rater from being served such a copy, but only under the name she rated with, and one person can hold
    several names (open sign-up): so the reveal of a closed pair waits for its copies to close as well (attacker
    audit: mallory-2 rated X, read its reveal, and mallory rated X's copy Y knowing its sides, counted). Asked once
    for a rater's whole list of reveals. With `closed_after` (a closed_pairs rowid): the copies closed after it
    instead, those whose closing a crash on a Space's own disk would undo (saved_closing)."""
    ids = [i for i in dict.fromkeys(pair_ids) if isinstance(i, str)]
    if not ids:
        return {}
    # in steps, each an index lookup or one pass: SQLite has no index on the texts, and a join on them scanned the
    # generations once for every pair (5 ms a pair over 2,000 pairs; this takes about 4 ms for a list of 50)
    owners: dict[str, set] = {}  # text -> the listed pairs holding it
    for i in range(0, len(ids), 400):
        chunk = ids[i:i + 400]
        for pid, text in db.execute(
                f"""SELECT p.id, g.text FROM pairs p JOIN generations g ON g.id IN (p.a_generation_id, p.b_generation_id)
                    WHERE p.id IN ({",".join("?" * len(chunk))}) AND p.kind = 'study'""", chunk):
            owners.setdefault(text, set()).add(pid)
    if not owners:
        return {}
    texts = list(owners)
    held: dict[int, str] = {}  # generation id -> its text, for every generation holding one of those texts
    for i in range(0, len(texts), 400):
        chunk = texts[i:i + 400]
        held |= dict(db.execute(f"SELECT id, text FROM generations WHERE text IN ({','.join('?' * len(chunk))})", chunk))
    found: dict[str, set] = {}
    still_open = ("q.id NOT IN (SELECT pair_id FROM closed_pairs)" if closed_after is None else
                  f"q.id IN (SELECT pair_id FROM closed_pairs WHERE rowid > {int(closed_after)})")
    gens = list(held)
    for i in range(0, len(gens), 400):
        chunk, marks = gens[i:i + 400], ",".join("?" * len(gens[i:i + 400]))
        for qid, a, b in db.execute(
                f"""SELECT q.id, q.a_generation_id, q.b_generation_id FROM pairs q
                    WHERE q.kind = 'study' AND (q.a_generation_id IN ({marks}) OR q.b_generation_id IN ({marks}))
                      AND {still_open} AND NOT {IDENTICAL.format(p="q.")}
                      AND (SELECT study_id FROM experiments WHERE id = q.experiment_id) IS (SELECT MAX(id) FROM studies)""",
                chunk + chunk):
            for gid in (a, b):
                for pid in owners.get(held.get(gid), ()):
                    if pid != qid:
                        found.setdefault(pid, set()).add(qid)
    return {pid: len(q) for pid, q in found.items()}


def saved_closing(db, pair_id: str, saved: dict[str, int], late: dict[str, int] | None = None) -> bool:
    """Whether the closing of this closed pair is inside the snapshot the Space's sync last pushed (`saved`: the largest
    rowid of ratings and closed_pairs in it, publish.sync.MARKED): a crash that restores that snapshot keeps the pair
    closed. Its recorded closing, else (closed by its count) its last rating; rows are only added. Its copies'
    closings too (its reveal waited for them: open_copies), given as `late` (open_copies with closed_after) for a
    list, else asked here."""
    if (late if late is not None else open_copies(db, [pair_id], saved.get("closed_pairs", 0))).get(pair_id):
        return False
    row = db.execute("SELECT rowid FROM closed_pairs WHERE pair_id = ?", [pair_id]).fetchone()
    if row is not None:
        return row[0] <= saved.get("closed_pairs", 0)
    last = db.execute("SELECT MAX(id) FROM ratings WHERE pair_id = ? AND kind = 'rating'", [pair_id]).fetchone()[0]
    return (last or 0) <= saved.get("ratings", 0)


def rater_reveal(db, rater: str, pair_id: str, quota: int, tolerance: float = 0.1,
                 copies: dict[str, int] | None = None, saved: dict[str, int] | None = None,
                 late: dict[str, int] | None = None) -> Reveal | GoldReveal | Pending:
    """What this rater may see of a pair they rated: its reveal once the pair is closed and no open study pair holds
    one of its texts (open_copies), else Pending. `saved` (a Space whose crash loses what was stored since the sync's
    last push: publish.sync.losable) holds the reveal until the pair's closing is pushed too (saved_closing): else a
    crash reopens the pair and serves it again to the rater whose rating was lost, who saw its sides."""
    if not isinstance(pair_id, str) or db.execute(
            "SELECT 1 FROM ratings WHERE rater = ? AND pair_id = ? AND kind = 'rating'", [rater, pair_id]).fetchone() is None:
        raise RatingError("the reveal follows your rating of the pair", "rate the pair first")
    if not is_closed(db, pair_id, quota):
        n = db.execute("SELECT COUNT(*) FROM current_ratings WHERE pair_id = ?", [pair_id]).fetchone()[0]
        return Pending(pair_id, max(1, pair_quota(db, pair_id, quota) - n))
    if n := (open_copies(db, [pair_id]) if copies is None else copies).get(pair_id, 0):
        return Pending(pair_id, 0, n)
    if saved is not None and not saved_closing(db, pair_id, saved, late):
        return Pending(pair_id, 0, unsaved=True)
    return reveal(db, pair_id, tolerance)


def rated_pairs(db, rater: str, quota: int, tolerance: float = 0.1, limit: int = 50,
                saved: dict[str, int] | None = None) -> list[RatedPair]:
    """The pairs this rater rated, newest first (at most `limit`), each with its reveal or Pending: the list that
    fills in as their pairs close (and, with `saved`, as their closings are pushed: rater_reveal)."""
    rows = db.execute(
        """SELECT r.pair_id, p.prompt_id,
                  (SELECT COUNT(*) FROM ratings x WHERE x.rater = r.rater AND x.kind = 'rating' AND x.supersedes IS NULL
                     AND x.id <= r.id) AS n
           FROM ratings r JOIN pairs p ON p.id = r.pair_id
           WHERE r.rater = ? AND r.kind = 'rating' AND r.supersedes IS NULL ORDER BY r.id DESC LIMIT ?""",
        [rater, limit]).fetchall()
    copies = open_copies(db, [r[0] for r in rows])  # once for the list (rater_reveal's own check, a query each)
    late = None if saved is None else open_copies(db, [r[0] for r in rows], saved.get("closed_pairs", 0))
    return [RatedPair(n, prompt_id, rater_reveal(db, rater, pair_id, quota, tolerance, copies, saved, late))
            for pair_id, prompt_id, n in rows]


def reveal(db, pair_id: str, tolerance: float = 0.1) -> Reveal | GoldReveal:
    """Which side was which path and how long each took; for a gold pair, that it was a check pair and the
    expected answers. The app shows it to a rater only through rater_reveal (rated, and the pair closed)."""
    p = _pair(db, pair_id)
    if p["kind"] == "gold":
        import json

        refs = {r["id"]: r for r in db.query("SELECT id, expected, note FROM reference_outputs WHERE id IN (?, ?)",
                                             [p["a_reference_id"], p["b_reference_id"]])}
        ra, rb = refs[p["a_reference_id"]], refs[p["b_reference_id"]]
        return GoldReveal(pair_id=pair_id, a_expected=json.loads(ra["expected"]), b_expected=json.loads(rb["expected"]),
                          a_note=ra["note"], b_note=rb["note"])
    gens = {g["id"]: g for g in db.query("SELECT * FROM generations WHERE id IN (?, ?)", [p["a_generation_id"], p["b_generation_id"]])}
    ga, gb = gens[p["a_generation_id"]], gens[p["b_generation_id"]]
    o, a = (ga, gb) if p["ordinary_side"] == "A" else (gb, ga)
    from ..generation.speed import comparable as comparable_outputs, pair_speedup, tokens_per_second

    comparable = comparable_outputs(o, a, tolerance)  # the config's bench.length_tolerance

    def tps(g):
        return tokens_per_second(g["new_tokens"], g["generate_seconds"])

    return Reveal(
        pair_id=pair_id,
        a_path=ga["path"], b_path=gb["path"],
        a_seconds=ga["generate_seconds"], b_seconds=gb["generate_seconds"],
        a_tokens=ga["new_tokens"], b_tokens=gb["new_tokens"],
        a_tokens_per_second=tps(ga), b_tokens_per_second=tps(gb),
        comparable=comparable,
        speedup=pair_speedup(dict(o, seconds=o["generate_seconds"]), dict(a, seconds=a["generate_seconds"]), tolerance),
        note="" if comparable else (
            f"outputs not comparable (stop {o['stop_reason']} vs {a['stop_reason']}, "
            f"{o['new_tokens']} vs {a['new_tokens']} tokens): no speed-up for this pair; compare tokens/s"
        ),
    )


def latest_shown(db, rater: str, limit: int = 10) -> list[PairView]:
    """The pairs last shown to this rater (their texts as shown), newest hold first, rated or not: the Rate tab tells a
    rater whose page reloaded onto another pair what became of the answers she had given on one of them."""
    rows = db.execute("SELECT pair_id FROM assignments WHERE rater = ? ORDER BY shown_at DESC, rowid DESC LIMIT ?",
                      [rater, limit]).fetchall()
    return [pair_view(db, r[0]) for r in rows]


def current_rating(db, rater: str, pair_id: str) -> dict | None:
    """The rater's newest version of their rating of this pair (after corrections, blind or not): what Correct
    starts from. The version that counts is in the current_ratings view."""
    return next(db.query(
        "SELECT * FROM ratings r WHERE rater = ? AND pair_id = ? AND kind = 'rating' "
        "AND NOT EXISTS (SELECT 1 FROM ratings s WHERE s.supersedes = r.id) ORDER BY id DESC LIMIT 1",
        [rater, pair_id]), None)


def stored_submission(db, rater: str, submission: str) -> dict | None:
    """The row the submission with this page-made id stored (a rating or a correction: its `supersedes` says), or None
    when none did. Only `rater`'s own: asked about another's id, it finds nothing (the id is bound to its rater)."""
    if not submission:
        return None
    return next(db.query("SELECT id, kind, supersedes FROM ratings WHERE submission_id = ? AND rater = ?",
                         [submission, rater]), None)


def note_refused(db, rater: str, submission: str, what: str, fix: str,
                 signed_in: tuple[int | None, str] | None = None) -> None:
    """Keep in the database that the submission with this page-made id was refused, and why: a reload after a restart
    says so (refused_submission), not that it never reached the server. `signed_in`: as RatingInput's (a revoke
    since the session's check records nothing of hers)."""
    from ..store import insert_refusal

    if submission:
        insert_refusal(db, rater, submission, what, fix, code_check(signed_in))


def refused_submission(db, rater: str, submission: str) -> tuple | None:
    """("refused", what, fix) for `rater`'s submission with this id that was refused, else None (another rater's id
    finds nothing, as in stored_submission)."""
    if not submission:
        return None
    row = next(db.query("SELECT what, fix FROM submission_refusals WHERE submission_id = ? AND rater = ?",
                        [submission, rater]), None)
    return ("refused", row["what"], row["fix"]) if row else None


def answers_from_row(row: dict) -> tuple[dict, dict]:
    return {c: row[f"a_{c}"] for c in CRITERIA}, {c: row[f"b_{c}"] for c in CRITERIA}


def counts(db, ratings_per_pair: int) -> dict:
    """Progress numbers for everyone on the Results tab (a pair is complete at its own quota, else at
    `ratings_per_pair`): nothing per path (a tally of preferred paths, seen while pairs are still to rate, would
    hint which side is which). Gold (check) pairs are counted in, with their part under "gold"."""
    in_study = f"pair_id IN (SELECT p.id FROM pairs p WHERE {_LATEST_STUDY})"  # the study the queue serves
    n_pairs = db.execute(f"SELECT COUNT(*) FROM pairs p WHERE {_LATEST_STUDY}").fetchone()[0]
    per_pair = {r[0]: r[1] for r in db.execute(
        f"SELECT pair_id, COUNT(*) FROM current_ratings WHERE {in_study} GROUP BY pair_id")}
    quotas = {r[0]: r[1] for r in db.execute(
        f"SELECT p.id, p.wanted_ratings FROM pairs p WHERE {_LATEST_STUDY} AND p.wanted_ratings IS NOT NULL")}
    wanted_sql = (f"SELECT {_P_QUOTA}, COUNT(*) FROM pairs p WHERE {_LATEST_STUDY} AND NOT {_IDENTICAL} {{}} "
                  "GROUP BY 1 ORDER BY 1")
    wanted = dict(db.execute(wanted_sql.format(""), {"quota": ratings_per_pair}).fetchall())
    gold = {r[0] for r in db.execute(f"SELECT p.id FROM pairs p WHERE {_LATEST_STUDY} AND p.kind = 'gold'")}
    complete = {pid for pid, n in per_pair.items() if n >= quotas.get(pid, ratings_per_pair)}
    return {
        "pairs": n_pairs,
        "ratings": db.execute(f"SELECT COUNT(*) FROM current_ratings WHERE {in_study}").fetchone()[0],
        "corrections": db.execute(f"SELECT COUNT(*) FROM ratings WHERE supersedes IS NOT NULL AND {in_study}").fetchone()[0],
        "skips": db.execute(f"SELECT COUNT(*) FROM ratings WHERE kind = 'skip' AND {in_study}").fetchone()[0],
        "raters": db.execute(f"SELECT COUNT(DISTINCT rater) FROM ratings WHERE {in_study}").fetchone()[0],
        "pairs_complete": len(complete),
        "identical": db.execute(f"SELECT COUNT(*) FROM pairs p WHERE {_LATEST_STUDY} AND {_IDENTICAL}").fetchone()[0],
        "wanted": wanted,  # ratings a pair wants -> served pairs (study and gold, outputs differ) that want that many
        # the gold (check) pairs' part of the above (`evalkit aggregate` counts study pairs, and gold pairs apart)
        "gold": {"pairs": len(gold), "ratings": sum(n for pid, n in per_pair.items() if pid in gold),
                 "pairs_complete": len(complete & gold),
                 "wanted": dict(db.execute(wanted_sql.format("AND p.kind = 'gold'"),
                                           {"quota": ratings_per_pair}).fetchall())},
    }
