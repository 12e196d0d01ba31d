"""Time on task: recorded by the server per rating, summarised per rater in the aggregate with fast ratings
flagged, and carried by the export."""

import pytest
from test_ratings import answers, make_pool

from evalkit.aggregate import aggregate
from evalkit.config import AppConfig
from evalkit.rating.pace import time_on_task
from evalkit.rating.queue import RatingInput, next_pair, submit_rating
from evalkit.store import open_db


@pytest.fixture
def db(tmp_path):
    return open_db(tmp_path / "pace.db")


def rated(db, rater, seconds):
    view = next_pair(db, rater, 3)
    rid = submit_rating(db, AppConfig(), RatingInput(view.pair_id, rater, answers(), answers("fail"), "A"))
    db.execute("UPDATE ratings SET seconds_on_task = ? WHERE id = ?", [seconds, rid])  # a known duration
    db.conn.commit()


def test_median_per_rater_and_fast_ratings_flagged(db):
    make_pool(db, 4)
    for s in (30.0, 40.0, 50.0):
        rated(db, "ann", s)
    for s in (2.0, 4.0, 60.0):
        rated(db, "bob", s)
    t = time_on_task(db, 10.0).set_index("rater")
    assert t.loc["ann", "median_seconds"] == 40.0 and t.loc["ann", "fast"] == 0
    assert t.loc["bob", "median_seconds"] == 4.0 and t.loc["bob", "fast"] == 2
    assert t.loc["all", "ratings"] == 6 and t.loc["all", "fast"] == 2 and t.loc["all", "fast_share"] == pytest.approx(1 / 3)
    agg = aggregate(db)
    assert agg.tables["time_on_task"].equals(time_on_task(db, 10.0))
    assert any("2 of 6 timed ratings took under 10 s" in n and "1 rater(s)" in n for n in agg.notes)


def test_untimed_ratings_are_not_fast_and_an_empty_study_has_an_empty_table(db):
    assert len(time_on_task(db, 10.0)) == 0
    (pid, *_) = make_pool(db, 2)
    submit_rating(db, AppConfig(), RatingInput(pid, "cal", answers(), answers(), "tie"))  # never shown: no time
    t = time_on_task(db, 10.0).set_index("rater")
    assert t.loc["cal", "timed"] == 0 and t.loc["cal", "fast"] == 0
    assert not any("timed ratings" in n for n in aggregate(db).notes)


def test_the_export_carries_the_time_on_task(db, tmp_path):
    from evalkit.publish.export import export

    make_pool(db, 2)
    rated(db, "ann", 12.5)
    ds = export(db, tmp_path / "out")
    assert ds["ratings"]["seconds_on_task"] == [12.5]
