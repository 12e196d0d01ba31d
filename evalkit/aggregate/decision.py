"""The decision frozen at completion: when a study's planned sample completes, its decision sample, the raters the
gold check leaves out and the verdict are stored once (store.insert_decision), with the gate's hash and the time,
and nothing stored later (ratings, corrections, gold answers, benchmarks) changes them.

When is "completion"? Not at whichever look happens to come first: the decision is fixed as of the rating that
completed the planned sample, found in the stored history, so it is the same whether someone looked a minute or a
month after it. The first look that finds the sample complete (aggregate, report, the Results tab: any reader)
reconstructs the state right after that rating (each rating's version current then, the gold accuracy then, the
benchmark stored by then), decides on it and stores it, in one write transaction; a concurrent look that finds it
stored meanwhile reads the stored one, so every reader shows one decision.

The completion point: the first rating id R at which, with the ratings current right after R and the raters the gold
check left out right after R, `planned_pairs` pairs have the ratings they want (their quota stored with the pool,
else `min_ratings_per_pair`; verdict.complete_count). Without the gold check the count only grows with R (a
correction replaces a rating), so bisection finds it; the gold check can move the count both ways, but only at a
rating of a gold pair, so between two of those bisection holds, and the segments are scanned in order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .verdict import Condition, Decision, Verdict, complete_count

FROZEN = "decision on the planned sample"
AFTER = "after the decision: not the decision"


@dataclass
class FrozenDecision:
    """A study's stored decision."""

    study_id: int
    decided_at: str  # when a look stored it
    completed_at: str  # created_at of the rating that completed the planned sample
    completed_rating_id: int
    gate_hash: str
    verdict: Verdict
    sample: list[int]  # rating ids of the decision sample
    excluded: list[str]  # raters the gold check left out, as of completion
    speed: dict  # the speed figure the verdict weighed (aggregate.Speed.to_json())

    def to_json(self) -> dict:
        return {"decided_at": self.decided_at, "completed_at": self.completed_at,
                "completed_rating_id": self.completed_rating_id, "gate_hash": self.gate_hash,
                "decision_sample_ratings": len(self.sample), "excluded_raters": len(self.excluded),
                "speed": self.speed}


def _plain(obj):
    """JSON-ready: numpy scalars to Python numbers (a row of the analysis may hold them)."""
    return json.loads(json.dumps(obj, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def stored(db, study_id: int) -> FrozenDecision | None:
    row = next(db.query("SELECT * FROM decisions WHERE study_id = ?", [study_id]), None)
    if row is None:
        return None
    v = json.loads(row["verdict_json"])
    verdict = Verdict(Decision(v["decision"]), False, FROZEN, [Condition(**c) for c in v["conditions"]],
                      v["fidelity"], v.get("gate"), claim=v.get("claim", ""),
                      ppi=v.get("ppi", ""))
    return FrozenDecision(study_id, row["decided_at"], row["completed_at"], row["completed_rating_id"],
                          row["gate_hash"], verdict, json.loads(row["sample_json"]), json.loads(row["excluded_json"]),
                          json.loads(row["speed_json"]))


def _completion(history, gold_history, values: dict, excluded_at) -> tuple[int, list[str]] | None:
    """The first rating id at which the planned sample is complete, and the raters left out then (None: never)."""
    import numpy as np

    rows, ended = history.rows, history.ended
    per_pair, planned = values["min_ratings_per_pair"], values["planned_pairs"]
    names = {r: i for i, r in enumerate(rows.raters)}

    def complete(r: int, excluded: list[str]) -> bool:
        keep = (rows.rating_id <= r) & (ended > r)
        gone = [names[x] for x in excluded if x in names]
        if gone:
            keep &= ~np.isin(rows.rater, gone)
        return complete_count(rows.select(keep), per_pair) >= planned

    gold_ids = np.array([], np.int64) if gold_history is None else np.unique(gold_history["rating_id"].to_numpy())
    study_ids = np.unique(rows.rating_id)
    last = int(max(study_ids.max(initial=0), gold_ids.max(initial=0)))
    if not len(study_ids) or not complete(last, []):
        return None  # leaving raters out only lowers the count: never complete
    candidates = np.union1d(study_ids, gold_ids)

    def first(ids, excluded) -> int:  # the first of `ids` (complete at the last) at which it is complete
        lo, hi = 0, len(ids) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if complete(int(ids[mid]), excluded):
                hi = mid
            else:
                lo = mid + 1
        return int(ids[lo])

    start = first(candidates, [])  # no completion before this, whatever the gold check does
    bounds = [start] + [int(g) for g in gold_ids if g > start]
    for i, seg_start in enumerate(bounds):
        seg_end = bounds[i + 1] - 1 if i + 1 < len(bounds) else last
        excluded = excluded_at(seg_start)  # constant up to the next gold rating
        if complete(seg_end, excluded):
            ids = candidates[(candidates >= seg_start) & (candidates <= seg_end)]
            return first(ids, excluded), excluded
    return None


def freeze(db, study, values: dict, confidence: float, resamples: int, tolerance: float,
           speed_now=None, current=None) -> FrozenDecision | None:
    """The study's decision, stored now if its planned sample is complete in the stored history (see the module's
    docstring); None while it is not. Idempotent and safe under concurrent readers. `speed_now`: the speed figure
    of the data as it is now, used when nothing it rests on was stored after completion; `current`: the study's
    current ratings (RatingData), which spare an interim look the history."""
    import numpy as np

    from ..study.gold import accuracy, answers, as_of
    from ..store import insert_decision
    from .data import load_ratings
    from .timing import runs_version, timing
    from .ppi import pair_screen
    from .verdict import decide, decision_sample, fidelity_rows

    if values.get("planned_pairs", 0) <= 0:
        return None
    if current is not None:  # every rater counted, the count only grows with time: below the plan now, never above
        if complete_count(current, values["min_ratings_per_pair"]) < values["planned_pairs"]:
            return None
    history = load_ratings(db, study.id, history=True)
    min_gold = values.get("min_gold_accuracy", 0.0) or 0.0
    gold_history = answers(db, study.id, history=True) if min_gold else None

    def excluded_at(r: int) -> list[str]:
        if gold_history is None:
            return []
        return accuracy(db, min_gold, (), study.id, table=as_of(gold_history, r))[1]

    found = _completion(history, gold_history, values, excluded_at)
    if found is None:
        return None
    at, excluded = found
    ratings = history.as_of(at)
    if excluded:
        ratings = ratings.without_raters(excluded)
    sample, complete = decision_sample(ratings, values["min_ratings_per_pair"], values["planned_pairs"])
    completed_at = db.execute("SELECT created_at FROM ratings WHERE id = ?", [at]).fetchone()[0]
    if speed_now is not None and runs_version(db, study.id, completed_at) == runs_version(db, study.id):
        speed = speed_now
    else:  # a benchmark or pool stored after completion does not count
        speed = timing(db, tolerance, resamples, study_id=study.id, before=completed_at)[2]
    fidelity = fidelity_rows(sample, confidence, resamples, values["margin"], values["claim"], pair_screen(db, ratings),
                             values.get("ppi") == "on", completed_at, interval=values["interval"])
    verdict = decide(values, fidelity, speed, complete, ratings.n_pairs, int(ratings.identical.sum()))
    insert_decision(db, study.id, {
        "completed_at": completed_at, "completed_rating_id": at, "gate_hash": study.gate_hash,
        "decision": verdict.decision, "sample": [int(i) for i in sample.rating_id], "excluded": excluded,
        "verdict": _plain(verdict.to_json()), "speed": _plain(speed.to_json())})
    return stored(db, study.id)  # this look's, or a concurrent look's stored first: the same decision


def decided(db, study, values: dict | None, confidence: float, resamples: int, tolerance: float, speed_now=None,
            current=None):
    """The study's frozen decision: stored, else frozen now if its planned sample is complete, else None."""
    if study is None or not values:
        return None
    return stored(db, study.id) or freeze(db, study, values, confidence, resamples, tolerance, speed_now, current)
