"""A look that settles a study stops its raters (#20 item 5, the rater hours it is for): the decision is stored by
the rating that lets a look settle it, without waiting for a reader, and from then on the queue serves none of the
study's pairs, a rating of a pair held on screen is refused with nothing stored, the reveals of pairs nobody can
rate any more are shown, and no pool is added to the decided study. Through the real database, queue and app
handlers."""

from __future__ import annotations

import pytest

from evalkit.aggregate import aggregate
from evalkit.aggregate.decision import settle, stored
from evalkit.config import AppConfig
from evalkit.errors import EvalkitError
from evalkit.rating.queue import (
    Pending, Reveal, RatingInput, StudyClosed, next_pair, rater_reveal, results_open, study_decided, submit_rating,
)
from evalkit.store import attach_pool, open_db
from evalkit.study.gate import gate_snapshot
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.task.criteria import CRITERIA

GS = dict(margin=0.15, monitoring="group sequential", look_every=60, min_raters=10)
APP = AppConfig()


def _rating(pair_id: str, rater: str) -> RatingInput:
    every = {c: "pass" for c in CRITERIA}  # no difference between the paths: a clear KEEP, given enough pairs
    return RatingInput(pair_id=pair_id, rater=rater, a=dict(every), b=dict(every), preference="tie")


def _study(tmp_path, name: str, gate_text: str, rated: int, unrated: int):
    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_text)
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(pairs=rated, unrated_pairs=unrated, raters_per_pair=3, raters=12, pass_rate=0.8,
                                   rater_accuracy=0.95, seed=5, queue_order=True, gate_path=str(gate)))
    return db, gate


def _rate_until_settled(db, raters: list[str], limit: int):
    """Raters take pairs from the queue in turn and rate them as the app does (each stored rating then settle), until
    a look settles the study; returns (the decision, the ratings given)."""
    given = 0
    while given < limit:
        for rater in raters:
            view = next_pair(db, rater, APP.ratings_per_pair)
            assert view is not None, "the queue ran dry before any look settled the study"
            submit_rating(db, APP, _rating(view.pair_id, rater))
            given += 1
            if (done := settle(db)) is not None:
                return done, given
    raise AssertionError(f"no look settled the study in {limit} ratings")


def test_the_rating_that_lets_a_look_settle_the_study_stops_the_queue(tmp_path):
    db, gate = _study(tmp_path, "gs", gate_file_text(planned_pairs=300, **GS), rated=60, unrated=300)
    raters = [f"rater{i:05d}" for i in range(12)]
    assert settle(db) is None and stored(db, 1) is None  # 60 pairs: no look settles a 15-point margin yet
    holder = "late-rater"
    held = next_pair(db, holder, APP.ratings_per_pair)  # on her screen while the others rate, past its hold: the
    assert held is not None  # queue offers it to others meanwhile (a hold that never ended would hold up every look)
    db.execute("UPDATE assignments SET shown_at = '2000-01-01T00:00:00+00:00' WHERE rater = ?", [holder])
    db.conn.commit()
    early = next_pair(db, raters[0], APP.ratings_per_pair)
    submit_rating(db, APP, _rating(early.pair_id, raters[0]))  # her pair will not be filled before the decision
    assert isinstance(rater_reveal(db, raters[0], early.pair_id, APP.ratings_per_pair), Pending)

    decision, given = _rate_until_settled(db, raters, limit=900)
    # stored by the rating itself, at a look before the planned maximum: nobody had read the study
    assert decision.verdict.decision == "KEEP" and decision.verdict.look["index"] < decision.verdict.look["of"]
    assert given < 3 * 240
    # the same decision any reader finds, as of the rating that completed the look
    agg = aggregate(db)
    assert agg.frozen.completed_rating_id == decision.completed_rating_id and agg.verdict.decision == "KEEP"
    # the organiser reads where it stopped and what it saved
    look_pairs = decision.verdict.look["pairs"]
    frozen_note = next(n for n in agg.notes if n.startswith("DECISION FROZEN at look"))
    assert f"{len(decision.sample)} ratings of {look_pairs} pairs" in frozen_note
    unrated = db.execute("SELECT COUNT(*) FROM pairs WHERE id NOT IN (SELECT pair_id FROM ratings)").fetchone()[0]
    assert unrated > 0 and any(f"{unrated} pooled pair(s) whose outputs differ were never rated" in n
                               for n in agg.notes)
    from evalkit.ui.results import looks_markdown

    so_far = db.execute("SELECT COUNT(*) FROM current_ratings").fetchone()[0]
    saved = round(300 * 3) - so_far  # the planned maximum's ratings (3 a pair) less those given
    assert (f"Rating stopped at this look, which settled the study: {so_far:,} ratings in all, about {saved:,} fewer"
            in "\n".join(looks_markdown(agg)))
    assert f"共 {so_far:,} 条评分，比计划上限 300 对所需少约 {saved:,} 条" in "\n".join(looks_markdown(agg, "zh"))

    # the queue serves nothing more, to anyone, and says why
    assert study_decided(db)
    assert all(next_pair(db, r, APP.ratings_per_pair) is None for r in [*raters, "someone-new"])
    before = db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
    with pytest.raises(StudyClosed, match="reached its decision"):
        submit_rating(db, APP, _rating(held.pair_id, holder))
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == before  # nothing stored
    # nobody can rate the pair any more: its reveal is shown to the rater who rated it, and the results open
    assert isinstance(rater_reveal(db, raters[0], early.pair_id, APP.ratings_per_pair), Reveal)
    assert results_open(db, raters[0], APP.ratings_per_pair, skip_allowance=0)[0]
    # a pool added to the decided study would never be rated: refused, naming the way on
    with pytest.raises(EvalkitError, match="reached its decision") as e:
        attach_pool(db, gate_snapshot(str(gate)))
    assert "--new-study" in e.value.fix
    assert attach_pool(db, gate_snapshot(str(gate)), new_study="second") > 1


def test_an_interim_look_stops_nothing_and_a_fixed_design_stops_at_its_planned_sample(tmp_path):
    db, _ = _study(tmp_path, "fixed", gate_file_text(planned_pairs=80, margin=0.15, min_raters=10), rated=60,
                   unrated=40)
    raters = [f"rater{i:05d}" for i in range(12)]
    assert settle(db) is None and not study_decided(db)
    assert next_pair(db, raters[0], APP.ratings_per_pair) is not None
    decision, given = _rate_until_settled(db, raters, limit=200)
    # the fixed design's one look: the 80th decided pair's last rating, 20 pairs x 3 ratings after the 60 rated
    assert decision.verdict.look is None or decision.verdict.look["of"] == 1
    assert given == 20 * 3
    assert all(next_pair(db, r, APP.ratings_per_pair) is None for r in raters)
    left = db.execute("SELECT COUNT(*) FROM pairs WHERE id NOT IN (SELECT pair_id FROM ratings)").fetchone()[0]
    assert left > 0  # the reserve: never served once the decision is stored


def test_a_study_decided_before_decisions_closed_its_pairs_stops_after_the_upgrade(tmp_path):
    """Migration 021: a database whose study was decided by an earlier version, with pairs still open to the queue,
    has them closed as of its decision when it is next opened."""
    db, _ = _study(tmp_path, "old", gate_file_text(planned_pairs=60, margin=0.15, min_raters=10), rated=60,
                   unrated=30)
    decided_at = aggregate(db).frozen.decided_at  # a reader stores the decision, which closes the pairs
    assert next_pair(db, "someone", APP.ratings_per_pair) is None
    # as an earlier version left it: the decision stored, the pairs open, migration 021 not applied
    db.execute("DELETE FROM closed_pairs")
    db.execute("DELETE FROM _migrations WHERE name = '021_closed_by_decision'")
    db.conn.commit()
    assert next_pair(db, "someone", APP.ratings_per_pair) is not None
    db.conn.close()
    upgraded = open_db(tmp_path / "old.db")
    assert next_pair(upgraded, "someone-else", APP.ratings_per_pair) is None and study_decided(upgraded)
    closed = {r[0] for r in upgraded.execute("SELECT DISTINCT closed_at FROM closed_pairs")}
    assert closed == {decided_at}
    assert upgraded.execute("SELECT COUNT(*) FROM closed_pairs").fetchone()[0] == 90


def test_a_correction_that_reaches_a_pair_closed_since_it_was_checked_is_kept_uncounted(tmp_path):
    """The Rate tab decides whether a correction counts (the pair not closed, so no reveal shown) before it takes the
    write lock; a decision (or the pair's last rating) stored in between closes the pair, and its reveal can be on a
    screen. The lock's own check stores the correction uncounted."""
    from evalkit.rating.queue import correct_rating

    db, _ = _study(tmp_path, "corr", gate_file_text(planned_pairs=60, margin=0.15, min_raters=10), rated=60,
                   unrated=30)
    view = next_pair(db, "ann", APP.ratings_per_pair)
    first = submit_rating(db, APP, _rating(view.pair_id, "ann"))
    assert settle(db) is not None  # the plan was complete already: the decision closes every pair, hers too
    fails = {c: "fail" for c in CRITERIA}
    fixed = correct_rating(db, APP, first, RatingInput(view.pair_id, "ann", fails, fails, "tie"), after_reveal=False)
    assert db.execute("SELECT blind FROM ratings WHERE id = ?", [fixed]).fetchone()[0] == 0
    counted = db.execute("SELECT id FROM current_ratings WHERE rater = 'ann' AND pair_id = ?", [view.pair_id])
    assert [r[0] for r in counted] == [first]  # the blind rating is still the one that counts


def test_leaving_a_rater_out_never_raises_the_count_of_decided_pairs(tmp_path):
    """Sequential audit, 2026-12-04: a pair at the head of the queue's order, still waiting for ratings, whose one
    rating came from a rater the gold check leaves out, was set aside at once, so the count with the exclusions ran
    past the count without them, and the frozen decision's search (which rests on the opposite) found its completion
    later than the rules put it. The queue still serves such a pair: it is waited for like any other, and set aside
    only once the queue counts it full."""
    import numpy as np

    from evalkit.aggregate.data import load_ratings
    from evalkit.aggregate.verdict import complete_count, in_queue_order

    db, _ = _study(tmp_path, "aside", gate_file_text(planned_pairs=60, margin=0.15, min_raters=10), rated=60,
                   unrated=0)
    ratings = load_ratings(db)
    head = int(in_queue_order(ratings, 3)[0][0])
    rows = np.flatnonzero(ratings.pair == head)
    x = ratings.raters[int(ratings.rater[rows[0]])]
    keep = np.ones(len(ratings), bool)
    keep[rows[1:]] = False  # the head pair keeps one rating, rater x's: it waits for two more
    waiting = ratings.select(keep)
    assert complete_count(waiting, 3) == 0  # it holds back every pair after it
    assert complete_count(waiting.without_raters([x]), 3) == 0  # and still does with x left out
    # once the queue has filled it (x's rating among the three), leaving x out sets it aside: the next pair counts
    full = ratings.without_raters([x])
    assert complete_count(full, 3) <= complete_count(ratings, 3)
    assert head not in in_queue_order(full, 3)[0].tolist()
