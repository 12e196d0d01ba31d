"""Writes of the rating app: which pair a rater was shown (the assignment), and ratings, corrections and skips."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from .database import now, write_transaction


class PairFull(Exception):
    """The pair already has its quota of current ratings; nothing was written."""

    def __init__(self, pair_id: str, quota: int | None = None):
        super().__init__(pair_id)
        self.pair_id, self.quota = pair_id, quota


class StudyDecided(PairFull):
    """The pair's study has its decision stored (insert_decision closed its pairs): no rating can add to it any more;
    nothing was written."""


class HoldDisplaced(Exception):
    """The rater's hold on the pair counted for nobody and was displaced by a rater whose hold counts (claim_pair's
    `displace`): her rating of it is refused; nothing was written."""

    def __init__(self, pair_id: str):
        super().__init__(pair_id)
        self.pair_id = pair_id


class ShareReached(Exception):
    """The rater has given their share of ratings in this study (app.max_ratings_per_rater); nothing was written."""

    def __init__(self, rater: str, share: int):
        super().__init__(rater)
        self.rater, self.share = rater, share


# Which of a rater's rows count towards their share (app.max_ratings_per_rater): originals, not corrections or skips.
# The one definition, for this check and the queue's (rating.queue.given_ratings).
SHARE_COUNTS = "r.kind = 'rating' AND r.supersedes IS NULL"
# Those rows of a rater on pairs of the study a pair belongs to.
RATER_STUDY_RATINGS = f"""
    SELECT COUNT(*) FROM ratings r JOIN pairs q ON q.id = r.pair_id JOIN experiments e ON e.id = q.experiment_id
    WHERE r.rater = :rater AND {SHARE_COUNTS}
      AND e.study_id IS (SELECT e2.study_id FROM pairs p2 JOIN experiments e2 ON e2.id = p2.experiment_id
                         WHERE p2.id = :pair)"""


# Whether a pair's study has its decision stored.
# The pair `p` (of the study the app serves) was stored after this rater (:rater) was first shown that study's results
# (results_views): whatever that view told of the pairs open then, its per-path tables describe this later pool's
# prompts, and greedy decoding repeats their texts. Not served to her (rating.queue), nor counted (insert_rating):
# a rater shown them was already (results_seen); an organiser shown them while nothing she could rate was open was
# not, and rated the later pool counted (attacker audit, round 12).
# Or a text of `p` stands in a run of another study whose results she was shown (its pool's, or a study-less
# benchmark's stored before her view): `evalkit generate --new-study NAME` starts a study whose pairs, under greedy
# decoding, repeat those texts, whose sides its tables and per-output plot told her (attacker audit, round 12). A new
# study's pair with texts of its own (sampling) is hers. The text list is uncorrelated: gathered once per statement.
# Times are kept to the millisecond, so a tie leaves the order unknown: a pair stored in the view's millisecond
# counts as after it, a run made in it as before it, the side that can tell her nothing (CI met such a tie).
VIEWED_BEFORE = """(EXISTS (SELECT 1 FROM results_views v WHERE v.rater = :rater
    AND v.study_id = (SELECT MAX(id) FROM studies) AND v.seen_at <= COALESCE(p.stored_at, p.created_at))
  OR EXISTS (SELECT 1 FROM generations t WHERE t.id IN (p.a_generation_id, p.b_generation_id) AND t.text != ''
    AND t.text IN (SELECT g.text FROM results_views v JOIN experiments e
                     ON e.study_id = v.study_id OR (e.study_id IS NULL AND e.created_at <= v.seen_at)
                   JOIN generations g ON g.experiment_id = e.id
                   WHERE v.rater = :rater AND v.study_id != (SELECT MAX(id) FROM studies) AND g.live = 0)))"""


PAIR_STUDY_DECIDED = """SELECT 1 FROM decisions d JOIN experiments e ON e.study_id = d.study_id
                        JOIN pairs p ON p.experiment_id = e.id WHERE p.id = ?"""


def claim_pair(db, rater: str, chosen: str | None, still_free: Callable[[str], bool],
               pick: Callable[[], str | None], displaced: str | None = None, admit: Callable | None = None) -> str | None:
    """Put a pair on this rater's screen (the assignment: a hold for a while, and the start of the time on task)
    under one write lock with the check that it is still free. `chosen` was picked before the lock (the lock is
    held briefly: under load every submit waits for it); if another rater took it meanwhile, `pick` chooses again
    under the lock. Raters arriving at once then never get the same pair where the quota allows only one of
    them. `displaced`: a SELECT of the raters (parameter :rater, this one) whose unrated holds on the pair this
    one displaces (rating.queue._DISPLACED), marked in the same transaction: their rating of it is refused
    (insert_rating). `admit(db)`, when given, runs first under the lock and raises to serve nothing (as insert_rating's:
    a revoke that commits while the pair is being chosen records no hold and sends no texts). Returns the pair id, or
    None when nothing is free."""
    with write_transaction(db):
        if admit is not None:
            admit(db)
        pair_id = chosen if chosen is not None and still_free(chosen) else pick()
        if pair_id is not None:
            at = now()
            db.conn.execute(
                "INSERT INTO assignments (pair_id, rater, shown_at) VALUES (?, ?, ?) "
                "ON CONFLICT (pair_id, rater) DO UPDATE SET shown_at = excluded.shown_at, alive_at = NULL",
                [pair_id, rater, at])
            if displaced:
                db.conn.execute(
                    f"""UPDATE assignments SET displaced_at = :now WHERE pair_id = :pair AND rater != :rater
                        AND displaced_at IS NULL AND rater IN {displaced}
                        AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.pair_id = :pair AND r.rater = assignments.rater)""",
                    {"pair": pair_id, "rater": rater, "now": at})
    return pair_id


def recheck_hold(db, held: Callable[[], str | None], admit: Callable | None = None) -> str | None:
    """The pair a rater already holds, served again (a reload, a sign-in, Check again): `held()` read under the write
    lock after `admit(db)` (claim_pair's), so a revoke that commits after the session's own check serves its texts no
    more, as it serves no new pair. Writes nothing; without `admit` nothing is checked, and no lock is taken."""
    if admit is None:
        return held()
    with write_transaction(db):
        admit(db)
        return held()


# A hold renewed more recently than this is left as it is (renew_hold).
RENEW_EVERY_SECONDS = 60


def renew_hold(db, rater: str, pair_id: str, since: str, shown_after: str | None = None,
               admit: Callable | None = None) -> bool:
    """The rater is still at work on the pair she holds (the page's sign of life): her hold counts from now
    (assignments.alive_at; shown_at stays the start of her time on task). Only a hold that has not run out (alive
    after `since`) is renewed, for a pair she has not rated and that is not closed: one that ran out may be another
    rater's by now. Returns whether it was. A hold renewed in the last RENEW_EVERY_SECONDS is left as it is, read without the
    write lock: a client sending signs of life in a loop takes no lock from the raters' submissions. So is one with
    nothing to renew (rated, maybe in another tab whose session still shows the pair, or closed): the write below would
    change nothing, leave the time as it was, and be tried again at the next sign (attacker audit: a loop from a tab
    whose pair was rated elsewhere took the lock on every call). With `shown_after`, a hold shown at or before it is
    not renewed either (rating.queue.HOLD_CAP_HOURS: signs of work keep a pair for a while, not for good). `admit(db)`,
    when given, runs first under the write lock and raises to renew nothing (claim_pair's)."""
    from datetime import datetime, timedelta, timezone

    last = db.conn.execute(
        """SELECT COALESCE(alive_at, shown_at), shown_at FROM assignments WHERE pair_id = :pair AND rater = :rater
           AND displaced_at IS NULL AND NOT EXISTS (SELECT 1 FROM ratings WHERE pair_id = :pair AND rater = :rater)
           AND NOT EXISTS (SELECT 1 FROM closed_pairs WHERE pair_id = :pair)""",
        {"pair": pair_id, "rater": rater}).fetchone()
    if last is None or last[0] <= since or (shown_after is not None and last[1] <= shown_after):
        return False
    if datetime.fromisoformat(last[0]) > datetime.now(timezone.utc) - timedelta(seconds=RENEW_EVERY_SECONDS):
        return True
    with write_transaction(db):
        if admit is not None:
            admit(db)
        return db.conn.execute(
            """UPDATE assignments SET alive_at = :now WHERE pair_id = :pair AND rater = :rater
               AND COALESCE(alive_at, shown_at) > :since
               AND NOT EXISTS (SELECT 1 FROM ratings WHERE pair_id = :pair AND rater = :rater)
               AND NOT EXISTS (SELECT 1 FROM closed_pairs WHERE pair_id = :pair)""",
            {"now": now(), "pair": pair_id, "rater": rater, "since": since}).rowcount > 0


def insert_rating(db, row: dict, quota: int | None = None, share: int | None = None,
                  admit: Callable | None = None) -> int:
    """One row of ratings (a rating, a correction or a skip) in one write transaction; returns its id. With `quota`,
    the pair's count of current ratings is checked against its quota (its own, pairs.wanted_ratings, drawn with the
    queue order; `quota` for a pair without one) under the same lock (raises PairFull), so a rating cannot
    overfill a pair however many raters submit at once; the time on task is taken from the pair's assignment.
    The schema's constraints (one original per rater and pair, one correction per rating, one row per client
    token) raise sqlite3.IntegrityError, for the caller to explain.

    With `share` (app.max_ratings_per_rater), a new rating from a rater who has given that many in the pair's study
    is refused under the same lock (raises ShareReached): two tabs submitting at once cannot pass it.

    The rating that fills a pair's quota closes it (closed_pairs, in the same transaction): from then on no identity
    can rate it, and its reveal may be shown (evalkit.rating.queue). A stored decision closes every pair of its study
    (store.insert_decision): a rating of one raises StudyDecided.

    A correction of a pair that is closed is stored with blind = 0 whatever the caller decided before the lock (the
    pair may have closed meanwhile, by its last rating or by the study's decision, and its reveal be on a screen).

    A rating or correction from a rater who has seen the pair's study's results while they could still rate
    (results_seen, written by rating.queue.note_results_seen) is stored with blind = 0: kept, never counted, and it
    fills no quota.

    A skip of a pair whose study is decided raises StudyDecided too, and one of a pair closed by its quota PairFull:
    nothing is stored.

    A rating (not a correction or a skip) of a pair whose hold on it was displaced (HoldDisplaced: claim_pair's
    `displace`) is refused under the same lock: the rater served the pair in good faith can always store hers.

    `admit(db)`, when given, runs first under the lock and raises to refuse the row (the rater's code still hers:
    a revoke that commits while the row is on its way leaves nothing of hers stored after it)."""
    with write_transaction(db):
        if admit is not None:
            admit(db)
        n = None
        if row.get("kind") == "rating" and row.get("supersedes") is None and db.conn.execute(
                "SELECT 1 FROM assignments WHERE pair_id = ? AND rater = ? AND displaced_at IS NOT NULL",
                [row["pair_id"], row["rater"]]).fetchone():
            raise HoldDisplaced(row["pair_id"])
        if row.get("kind") == "rating" and db.conn.execute(
                "SELECT 1 FROM results_seen WHERE rater = ? AND study_id IS (SELECT e.study_id FROM pairs p "
                "JOIN experiments e ON e.id = p.experiment_id WHERE p.id = ?)", [row["rater"], row["pair_id"]]).fetchone():
            row["blind"] = 0
        if row.get("kind") == "rating" and db.conn.execute(
                f"SELECT 1 FROM pairs p JOIN experiments e ON e.id = p.experiment_id WHERE p.id = :pair "
                f"AND e.study_id IS (SELECT MAX(id) FROM studies) AND {VIEWED_BEFORE}",
                {"rater": row["rater"], "pair": row["pair_id"]}).fetchone():
            row["blind"] = 0  # a pool stored after she was shown its study's results: kept, never counted
        if row.get("kind") == "rating" and row.get("supersedes") is not None and db.conn.execute(
                "SELECT 1 FROM closed_pairs WHERE pair_id = ?", [row["pair_id"]]).fetchone():
            row["blind"] = 0  # closed (its reveal may be on a screen) since the caller looked: kept, never counted
        if row.get("kind") == "skip" and db.conn.execute(PAIR_STUDY_DECIDED, [row["pair_id"]]).fetchone():
            # a skip of a decided study's pair says nothing a look could use, and a row stored after the decision
            # is one more thing every reader must date (aggregate.data reads passed-over pairs as of each look)
            raise StudyDecided(row["pair_id"], quota)
        if row.get("kind") == "skip" and db.conn.execute(
                "SELECT 1 FROM closed_pairs WHERE pair_id = ?", [row["pair_id"]]).fetchone():
            # closed by its quota while on her screen: others rated it, so no look waits for it and no rater was
            # chosen by her skip; stored, it counted as one in the Results, the rater's skips and her results' bar
            raise PairFull(row["pair_id"], db.conn.execute("SELECT wanted_ratings FROM pairs WHERE id = ?",
                                                          [row["pair_id"]]).fetchone()[0] or quota)
        if share and row.get("kind") == "rating" and row.get("supersedes") is None:
            given = db.conn.execute(RATER_STUDY_RATINGS, {"rater": row["rater"], "pair": row["pair_id"]}).fetchone()[0]
            if given >= share:
                raise ShareReached(row["rater"], share)
        if quota is not None:
            n, quota = db.conn.execute(
                "SELECT (SELECT COUNT(*) FROM current_ratings WHERE pair_id = :p), "
                "COALESCE((SELECT wanted_ratings FROM pairs WHERE id = :p), :q)", {"p": row["pair_id"], "q": quota}
            ).fetchone()
            if n >= quota or db.conn.execute("SELECT 1 FROM closed_pairs WHERE pair_id = ?",
                                             [row["pair_id"]]).fetchone():
                if db.conn.execute(PAIR_STUDY_DECIDED, [row["pair_id"]]).fetchone():
                    raise StudyDecided(row["pair_id"], quota)
                raise PairFull(row["pair_id"], quota)
            shown = db.conn.execute("SELECT shown_at FROM assignments WHERE pair_id = ? AND rater = ?",
                                    [row["pair_id"], row["rater"]]).fetchone()
            if shown:
                row["seconds_on_task"] = round((datetime.fromisoformat(row["created_at"])
                                                - datetime.fromisoformat(shown[0])).total_seconds(), 3)
        # a plain INSERT: sqlite-utils' insert() introspects the table on every call, the hot path here
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        rid = db.conn.execute(f"INSERT INTO ratings ({cols}) VALUES ({marks})", list(row.values())).lastrowid
        if n is not None and row.get("kind") == "rating" and row.get("blind", 1) and n + 1 >= quota:
            db.conn.execute("INSERT OR IGNORE INTO closed_pairs (pair_id, closed_at) VALUES (?, ?)",
                            [row["pair_id"], now()])
        return rid


def insert_refusal(db, rater: str, submission: str, what: str, fix: str, admit: Callable | None = None) -> None:
    """Record that the submission `submission` (its page-made id) of `rater` was refused, and why (rating.queue.
    note_refused); an id is recorded once. `admit(db)`, when given, runs first under the lock and raises to record
    nothing (insert_rating's)."""
    with write_transaction(db):
        if admit is not None:
            admit(db)
        db.conn.execute("INSERT OR IGNORE INTO submission_refusals (submission_id, rater, what, fix, refused_at) "
                        "VALUES (?, ?, ?, ?, ?)", [submission, rater, what, fix, now()])


def insert_results_view(db, rater: str, study_id: int) -> None:
    """Record that `rater` (anyone shown the Results) was shown this study's results, at her first view of it
    (rating.queue.note_results_view): no pair stored in the study after it is hers (VIEWED_BEFORE)."""
    with write_transaction(db):
        db.conn.execute("INSERT OR IGNORE INTO results_views (rater, study_id, seen_at) VALUES (?, ?, ?)",
                        [rater, study_id, now()])


def insert_results_seen(db, rater: str) -> None:
    """Record that `rater` was shown the latest study's results while they could still rate in it
    (rating.queue.note_results_seen): their ratings in it are stored uncounted from now on (insert_rating)."""
    with write_transaction(db):
        db.conn.execute("INSERT OR IGNORE INTO results_seen (rater, study_id, seen_at) "
                        "SELECT ?, MAX(id), ? FROM studies HAVING MAX(id) IS NOT NULL", [rater, now()])
