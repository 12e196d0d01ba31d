"""Time on task: how long each rater spent on a pair, from the pair being shown to the rating being stored
(ratings.seconds_on_task, recorded by the server). A rating much faster than anyone can read two notices and
answer nine questions is a rating to look at: the table flags those under a floor (app.min_seconds_on_task)."""

from __future__ import annotations

ALL = "all"
COLUMNS = ["rater", "ratings", "timed", "median_seconds", "fast", "fast_share"]


def time_on_task(db, floor_seconds: float, study_id: int | None = None):
    """Per rater (and all): current ratings, how many have a time, the median seconds, and how many were faster
    than the floor. Ratings stored without being shown through the queue have no time and are not counted as
    fast. `study_id`: only the ratings of that study's pairs (every rating when None)."""
    import pandas as pd

    where, args = "", []
    if study_id is not None:
        where = ("WHERE r.pair_id IN (SELECT p.id FROM pairs p JOIN experiments e ON e.id = p.experiment_id "
                 "WHERE e.study_id = ?)")
        args = [study_id]
    # in the order the ratings were stored: without an order the rows came as the query plan found them, which an
    # index (ratings_pair) changed from one call to the next
    df = pd.DataFrame(db.execute(f"SELECT r.rater, r.seconds_on_task FROM current_ratings r {where} ORDER BY r.id",
                                 args).fetchall(), columns=["rater", "seconds"])
    if not len(df):
        return pd.DataFrame(columns=COLUMNS)
    df["seconds"] = pd.to_numeric(df["seconds"])
    df["fast"] = df["seconds"] < floor_seconds  # NaN compares False: untimed is not fast
    pooled = df.assign(rater=ALL)
    out = (pd.concat([pooled, df], ignore_index=True).groupby("rater", sort=False)
           .agg(ratings=("rater", "size"), timed=("seconds", "count"), median_seconds=("seconds", "median"),
                fast=("fast", "sum"))
           .reset_index())
    out["fast"] = out["fast"].astype(int)
    out["fast_share"] = out["fast"] / out["timed"].where(out["timed"] > 0)
    return out[COLUMNS]
