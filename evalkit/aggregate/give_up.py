"""The organiser gives up pairs the next look waits for and no current rater can take (`evalkit pairs give-up`).

Such a pair held the study back for good (rating.queue.untakeable): the look takes the head of the queue's random
order, all of it, and waiting for a new rater was the only way on. Given up, the pair keeps its place in the order and
counts at the worst, as a pair passed over does (verdict.worst_case: -1 for the lower end, +1 for the upper): never
dropped from the sample (which would judge the outputs raters chose), never at an outcome it does not have. Only the
pairs that hold the look back may be given up, and only while no current rater can take them, so the act cannot pick
pairs by what their ratings say; it is recorded with when and why (migration 033) and the decision's history dates it
as it dates a rating (decision._as_of).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import EvalkitError


@dataclass
class GaveUp:
    pairs: list[str]  # the pairs given up, in the queue's order
    at: str  # when it was recorded
    study: str  # the study's label
    decision: object = None  # the decision the give-up let a look store (decision.FrozenDecision), else None


def _reason(reason: str | None) -> str:
    text = (reason or "").strip()
    if not text:
        raise EvalkitError("--reason is empty: a give-up is recorded with why it was made",
                           "say why, e.g. --reason 'every current rater skipped it; no other rater can be invited'")
    return text


def _waited_for(db, values: dict, study_id: int) -> tuple[list[str], int | None]:
    """The pairs the next look (its decided pairs, or None when every look is reached) needs that are not complete:
    the head of the queue's order as aggregate's notes count it (gold check's exclusions applied)."""
    from ..study.gold import accuracy
    from .data import load_ratings
    from .looks import schedule
    from .verdict import complete_count, in_queue_order, rated_needed

    ratings = load_ratings(db, study_id)
    min_gold = values.get("min_gold_accuracy", 0.0) or 0.0
    if min_gold and len(ratings) and (excluded := accuracy(db, min_gold, ratings.raters, study_id)[1]):
        ratings = ratings.without_raters(excluded)
    per_pair = values["min_ratings_per_pair"]
    target = next((lk.pairs for lk in schedule(values) if lk.pairs > complete_count(ratings, per_pair)), None)
    if target is None:
        return [], None
    pairs, done, _run = in_queue_order(ratings, per_pair)
    need = rated_needed(target, ratings, pairs)
    return [ratings.pair_ids[i] for i in pairs[:need][~done[:need]]], target


def give_up(db, pair_ids: list[str] | None, reason: str | None, untakeable: bool = False) -> GaveUp:
    """Give up these pairs of the study the queue serves (or, with `untakeable`, every pair the next look waits for
    that no current rater can take), recorded with `reason`, then let the look that completes, if any, store the
    decision (decision.settle). Who can take a pair is counted as the interim look's note counts it (rating.queue.
    untakeable, with the study's stored app.max_ratings_per_rater). Refuses, changing nothing,
    a pair that is not a study pair of that study, holds its ratings, is not among the pairs the next look waits for,
    or can still be served to a current rater; and a study that is decided."""
    from ..rating.queue import untakeable as no_rater_takes
    from ..store import insert_give_ups
    from ..study.studies import choose
    from .data import deciding_experiment
    from .decision import settle, stored
    from .verdict import frozen_gate

    text = _reason(reason)
    if bool(pair_ids) == bool(untakeable):
        raise EvalkitError("name the pairs to give up with --pair ID, or pass --untakeable (not both, not neither)",
                           "`evalkit aggregate` says how many pairs the next look waits for that no rater can take")
    study = choose(db)
    if study is None:
        raise EvalkitError("this database has no study: there is nothing to give up", "pass the study's --db")
    if (done := stored(db, study.id)) is not None:
        raise EvalkitError(f"{study.label()} is decided (frozen {done.completed_at}): its pairs are closed, and a "
                           "give-up could not change the decision", "nothing to do; `evalkit aggregate` shows it")
    gate, _notes = frozen_gate(db, study)
    if not gate:
        raise EvalkitError(f"{study.label()} has no frozen gate: no look waits for any pair",
                           "run `evalkit generate` with the gate file first")
    values = gate["values"]
    waited, target = _waited_for(db, values, study.id)
    exp = deciding_experiment(db, study.id)
    share = (json.loads(exp["config_json"]) if exp else {}).get("app", {}).get("max_ratings_per_rater", 0) or 0
    stuck, _raters = no_rater_takes(db, waited, values["min_ratings_per_pair"], share)
    chosen = stuck if untakeable else list(dict.fromkeys(pair_ids))
    if not chosen:
        raise EvalkitError("no pair the next look waits for is beyond every current rater: there is nothing to give "
                           "up", "let the raters rate; `evalkit aggregate` says what the look waits for")
    for pair in chosen:
        _check(db, pair, study, waited, stuck, target)
    at = insert_give_ups(db, chosen, text)
    order = {p: i for i, p in enumerate(waited)}
    return GaveUp(sorted(chosen, key=order.get), at, study.label(), settle(db))


def _check(db, pair: str, study, waited: list[str], stuck: list[str], target: int | None) -> None:
    """Refuse a pair that may not be given up, saying why and what to do instead."""
    row = db.execute("SELECT p.kind, e.study_id FROM pairs p JOIN experiments e ON e.id = p.experiment_id "
                     "WHERE p.id = ?", [pair]).fetchone()
    if row is None or row[0] != "study" or row[1] != study.id:
        what = ("no pair" if row is None else "a gold (check) pair" if row[0] == "gold" else
                "a pair of another study" if row[1] != study.id else f"a {row[0]} pair")
        raise EvalkitError(f"--pair {pair!r} is {what}: only study pairs of {study.label()} may be given up",
                           "copy the id from `evalkit export`'s pairs table or the interim look's note")
    if pair not in waited:
        closed = db.execute("SELECT 1 FROM closed_pairs WHERE pair_id = ?", [pair]).fetchone()
        why = ("has its ratings or is closed" if closed else
               f"is not among the pairs the next look ({target} decided pairs) waits for" if target else
               "is not waited for: every look is reached")
        raise EvalkitError(f"--pair {pair!r} {why}: only a pair that holds the next look back may be given up",
                           "give up the pairs the interim look names (`evalkit pairs give-up --untakeable`)")
    if pair not in stuck:
        raise EvalkitError(f"--pair {pair!r} can still be served to a current rater: the look waits for her rating",
                           "let the raters rate it; a pair is given up only when no current rater can take it")
