"""The decision frozen at completion: when a study's planned sample completes, its decision sample, the raters the
gold check leaves out and the verdict are stored once (store.insert_decision), with the gate's hash and the time,
and nothing stored later (ratings, corrections, gold answers, benchmarks) changes them.

When is "completion"? Not at whichever look happens to come first: the decision is fixed as of the rating that
completed the planned sample, found in the stored history, so it is the same whether someone looked a minute or a
month after it. The first look that finds the sample complete (aggregate, report, the Results tab: any reader)
reconstructs the state right after that rating (each rating's version current then, the gold accuracy then, the
benchmarks stored by then), decides on it and stores it, in one write transaction; a concurrent look that finds it
stored meanwhile reads the stored one, so every reader shows one decision.

The completion point: the first rating id R (or a pool's joining after R: a pool of pairs that need no rating
completes a sample as it joins) at which, with the ratings current right after R, the pairs that had joined by then
and the raters the gold check left out right after R, the first `planned_pairs` pairs of the queue's random order have the ratings they want
(their quota stored with the pool, else `min_ratings_per_pair`; verdict.complete_count). Without the gold check the count only grows with R (a
correction replaces a rating), so bisection finds it; the gold check can move the count both ways, but only at a
rating of a gold pair, so between two of those bisection holds, and the segments are scanned in order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..generation.speed import IDENTICAL_PAIR as IDENTICAL
from ..store.pool import WITHHELD
from .verdict import Condition, Decision, Verdict, complete_count

FROZEN = "decision on the planned sample"
LOOKS: dict = {}  # (database, study, gate, look, completing point and its time, raters left out) -> the look's analysis
AFTER = "after the decision: not the decision"


@dataclass
class FrozenDecision:
    """A study's stored decision."""

    study_id: int
    decided_at: str  # when a look stored it
    completed_at: str  # when the planned sample completed: its completing rating's created_at, or the pool's join
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


def _db_file(db) -> tuple | None:
    """What the memos (LOOKS, SETTLED) key a database by: its file and the instant it was made (store.database.
    identity), so another database put at the same path is never answered from them. None for one in memory, whose
    looks are not kept."""
    from ..store.database import identity

    try:
        found = identity(db)
    except Exception:  # noqa: BLE001 - a wrapper without PRAGMA: nothing is kept
        return None
    return found if found[0] else None


def _last_rating(db) -> tuple:
    """The newest rating's id and time: a backup of the same database restored over it and rated since holds other
    ratings under the same ids, so a memo resting on the history checks this is still the history it saw."""
    return tuple(db.execute("SELECT id, created_at FROM ratings ORDER BY id DESC LIMIT 1").fetchone() or ())


def _plain(obj):
    """JSON-ready: numpy scalars to Python numbers (a row of the analysis may hold them)."""
    return json.loads(json.dumps(obj, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def stored(db, study_id: int) -> FrozenDecision | None:
    row = next(db.query("SELECT * FROM decisions WHERE study_id = ?", [study_id]), None)
    if row is None:
        return None
    v = json.loads(row["verdict_json"])
    verdict = Verdict(Decision(v["decision"]), False, v.get("label", FROZEN) if v.get("look") else FROZEN,
                      [Condition(**c) for c in v["conditions"]], v["fidelity"], v.get("gate"), claim=v.get("claim", ""),
                      ppi=v.get("ppi", ""), look=v.get("look"))
    return FrozenDecision(study_id, row["decided_at"], row["completed_at"], row["completed_rating_id"],
                          row["gate_hash"], verdict, json.loads(row["sample_json"]), json.loads(row["excluded_json"]),
                          json.loads(row["speed_json"]))


def _joins(db, rows) -> object:
    """float (pairs,): where each pair joined its study on the axis of rating ids: j + 0.5, where j is the last
    rating stored by the instant it joined (pairs.stored_at; inf for a pool still being made). One query per pool's
    instant: a pool joins in one transaction, so a study has a few."""
    import numpy as np

    stored = rows.pair_stored or [None] * rows.n_pairs
    at = {t: db.execute("SELECT COALESCE(MAX(id), 0) FROM ratings WHERE created_at <= ?", [t]).fetchone()[0] + 0.5
          for t in set(stored) if t is not None}
    return np.array([np.inf if t is None else at[t] for t in stored], float)


def _give_ups(db, rows) -> tuple:
    """Where each pair was given up by the organiser (aggregate.give_up) on the axis of rating ids, as _joins places a
    join (inf: never), and when (None: never). A give-up completes a sample as a join does: never as of a rating
    before it."""
    import numpy as np

    at = dict(db.execute("SELECT pair_id, given_up_at FROM pair_give_ups").fetchall())
    when = [at.get(p) for p in rows.pair_ids]
    points = {t: db.execute("SELECT COALESCE(MAX(id), 0) FROM ratings WHERE created_at <= ?", [t]).fetchone()[0] + 0.5
              for t in set(when) if t is not None}
    return np.array([np.inf if t is None else points[t] for t in when], float), when


def _as_of(history, joins, x: float):
    """The data at point `x` of the history (a rating id, or a pool's join or a give-up between two ratings): the
    ratings current right after rating floor(x), only the pairs that had joined by then, given up only if by then,
    passed over or kept from a rater only if by then (RatingHistory.as_of).
    `joins`: (_joins, _give_ups' points)."""
    joined, given = joins
    return history.as_of(x).joined_by(joined <= x).given_up_by(given <= x)


def _moment(db, ratings, joins, gives, x: float) -> str:
    """When the history's point `x` came: its rating's created_at, else the latest join or give-up placed there
    (never a moment before a pair it weighs joined, nor before the give-up that completed it)."""
    import numpy as np

    if x == int(x):
        return db.execute("SELECT created_at FROM ratings WHERE id = ?", [int(x)]).fetchone()[0]
    joined, given = joins
    times = [ratings.pair_stored[int(i)] for i in np.flatnonzero(joined == x)]
    return max(times + [gives[int(i)] for i in np.flatnonzero(given == x)])


def _points(history, gold_history, joins):
    """The history's points, in order, where a sample can complete (float array; None: no study rating), and the gold
    ratings' ids. A point is a rating id, or a pool joining after rating j (j + 0.5, `joins`): a pool of pairs that
    need no rating (identical, withheld) completes a sample when it joins, never as of a rating before it. The same
    for every look, so found once per walk: sorting a million ids per look took most of a freezing look's time."""
    import numpy as np

    gold_ids = np.array([], np.int64) if gold_history is None else np.unique(gold_history["rating_id"].to_numpy())
    study_ids = np.unique(history.rows.rating_id)
    between = np.concatenate(joins)  # pools joining and pairs given up
    between = between[np.isfinite(between)]
    if not len(study_ids):  # a pool of identical pairs alone completes its sample as it joins, without a rating
        return (np.unique(between) if len(between) else None), gold_ids
    ratings = np.union1d(study_ids, gold_ids).astype(float)
    return np.union1d(ratings, between[between > ratings[0]]), gold_ids


def _completion(history, points, values: dict, excluded_at, joins) -> tuple[float, list[str]] | None:
    """The first of the history's points (_points) at which the planned sample is complete, and the raters left out
    then (None: never)."""
    per_pair, planned = values["min_ratings_per_pair"], values["planned_pairs"]
    candidates, gold_ids = points
    if candidates is None:
        return None

    def complete(x: float, excluded: list[str]) -> bool:
        current = _as_of(history, joins, x)
        if excluded:  # as the looks take them: their pairs set aside where a rating is lost (verdict.in_queue_order)
            current = current.without_raters(excluded)
        return complete_count(current, per_pair) >= planned

    last = float(candidates[-1])
    if not complete(last, []):
        return None  # leaving raters out only lowers the count: never complete

    def first(xs, excluded) -> float:  # the first of `xs` (complete at the last) at which it is complete
        lo, hi = 0, len(xs) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if complete(float(xs[mid]), excluded):
                hi = mid
            else:
                lo = mid + 1
        return float(xs[lo])

    start = first(candidates, [])  # no completion before this, whatever the gold check does
    bounds = [start] + [float(g) for g in gold_ids if g > start]
    for i, seg_start in enumerate(bounds):
        seg_end = float(candidates[candidates < bounds[i + 1]][-1]) if i + 1 < len(bounds) else last
        excluded = excluded_at(int(seg_start))  # constant up to the next gold rating
        if complete(seg_end, excluded):
            xs = candidates[(candidates >= seg_start) & (candidates <= seg_end)]
            return first(xs, excluded), excluded
    return None


def _first_measured(db, study_id: int, values: dict, tolerance: float, resamples: int):
    """The speed figure of a sample that needed no rating (it completed as its pool joined, before any benchmark of
    the pool could run): the one of the benchmark results stored by the first moment at which speed and memory are
    both judged (verdict.measured), else the latest, not judged, which the decision waits for (freeze). Taking the
    figure as it is when a reader first looks made the decision depend on when someone looked, and its replay weigh
    every benchmark stored since (one of 5,000 MB turned a stored KEEP into DROP: statistics audit, 2026-12-06).
    Benchmarks are taken one at a time in the order they were stored (data.deciding_benches), not by the moment:
    timestamps are milliseconds, and one stored in the same millisecond as the judging one was weighed with it."""
    from .timing import gate_speed, timing
    from .verdict import measured

    stored = db.execute(
        """SELECT e.id, MAX(COALESCE(b.stored_at, e.created_at)) AS at FROM bench_processes b
           JOIN experiments e ON e.id = b.experiment_id WHERE e.kind = 'bench'
           GROUP BY e.id HAVING SUM(b.status = 'ok') > 0 ORDER BY at, e.id""").fetchall()
    for bench_id, moment in stored:
        speed = timing(db, tolerance, resamples, study_id=study_id, before=moment, through=bench_id,
                       **gate_speed(values))[2]
        if measured(speed, values):
            return speed
    return timing(db, tolerance, resamples, study_id=study_id, **gate_speed(values))[2]


def walk_history(db, study, values: dict, resamples: int, tolerance: float, speed_now=None, current=None,
                 reached: list | None = None):
    """The gate's looks taken in order on the stored history, each on the data as they were right after the rating
    that completed its sample (aggregate.looks.walk), until one decides: the last look taken (a Walk) or None when
    none is reached. `speed_now`: the speed figure of the data as it is now, used when nothing it rests on was stored
    after completion; `current`: the study's current ratings (RatingData), which spare an interim look the history.

    A look's data never change once it is reached (later ratings, corrections and gold answers have later ids), so
    its analysis is kept (LOOKS) and a later look at the study computes only the looks reached since."""
    import numpy as np

    from ..study.gold import accuracy, answers, as_of
    from .data import load_ratings
    from .looks import schedule, walk
    from .ppi import pair_screen, screen_tables
    from .timing import gate_speed, runs_version, timing
    from .verdict import decide, decision_sample, fidelity_rows

    looks = schedule(values)
    if not looks:
        return None
    per_pair = values["min_ratings_per_pair"]
    if current is not None:  # every rater counted, the count only grows with time: below the first look now, never
        if complete_count(current, per_pair) < looks[0].pairs:
            return None
    history = load_ratings(db, study.id, history=True)
    given, gives = _give_ups(db, history.rows)
    joins = (_joins(db, history.rows), given)
    min_gold = values.get("min_gold_accuracy", 0.0) or 0.0
    gold_history = answers(db, study.id, history=True) if min_gold else None
    points = _points(history, gold_history, joins)
    read: list = []

    def screens():  # the pre-screen's tables, read once for every look of this walk (the database stands still)
        if not read:
            read.append(screen_tables(db, study.prescreen_rules))  # the rules frozen with the study
        return read[0]

    def excluded_at(r: int) -> list[str]:
        if gold_history is None:
            return []
        return accuracy(db, min_gold, (), study.id, table=as_of(gold_history, r))[1]

    def state(look):  # the data as they were right after the rating that completed this look's sample
        found = _completion(history, points, {**values, "planned_pairs": look.pairs}, excluded_at, joins)
        if found is None:
            return None
        if reached is not None:  # the caller's count of the looks reached in the history (settle's memo)
            reached.append(look.index)
        x, excluded = found
        ratings = _as_of(history, joins, x)
        if excluded:
            ratings = ratings.without_raters(excluded)
        at = int(x)
        # the moment it completed, what "stored by the decision" compares: the completing rating's, or where a pool
        # completed it, the instant that pool joined (its pairs' stored_at), never a moment before a pair it weighs
        completed_at = _moment(db, ratings, joins, gives, x)
        return ratings, {"at": at, "point": x, "excluded": excluded, "completed_at": completed_at,
                         "rating_free": rating_free}

    # No rating at all: the sample (identical pairs alone) completed as its pool joined, before any benchmark of the
    # pool's settings could run (`generate`, then `bench`). Its speed and memory are those stored by the first moment
    # both are judged (_first_measured), and freeze() waits until they are.
    rating_free = not len(history.rows)
    speeds: dict[str | None, object] = {}

    def speed_at(completed_at: str):
        moment = None if rating_free else completed_at
        if moment not in speeds:
            if rating_free:
                speeds[moment] = _first_measured(db, study.id, values, tolerance, resamples)
            elif speed_now is not None and runs_version(
                    db, study.id, completed_at, gate_speed(values)["speed_device"]) == getattr(speed_now, "version", None):
                speeds[moment] = speed_now
            else:  # a benchmark or pool stored after completion does not count
                speeds[moment] = timing(db, tolerance, resamples, study_id=study.id, before=moment,
                                        **gate_speed(values))[2]
        return speeds[moment]

    where = _db_file(db)

    def analyse(ratings, look, context):
        # the completing point's time too: a restored backup rated since holds another history under the same ids
        key = (where, study.id, study.gate_hash, look.index, look.pairs, context["point"], context["completed_at"],
               tuple(context["excluded"]), resamples)
        if where and key in LOOKS:
            rows, sample, complete = LOOKS[key]
            return [dict(r) for r in rows], sample, complete
        sample, complete = decision_sample(ratings, per_pair, look.pairs)
        rows = fidelity_rows(sample, look.level, resamples, values["margin"], values["claim"], pair_screen(db, ratings, screens()),
                             values.get("ppi") == "on", context["completed_at"], interval=values["interval"],
                                 sequence=values.get("monitoring") == "confidence sequence")
        if where:
            if len(LOOKS) >= 512:
                LOOKS.pop(next(iter(LOOKS)))
            LOOKS[key] = ([dict(r) for r in rows], sample, complete)
        return rows, sample, complete

    def decide_look(rows, complete, ratings, look, context):
        return decide(values, rows, speed_at(context["completed_at"]), complete, ratings.n_pairs,
                      int(ratings.identical.sum()), look)

    went = walk(values, state, analyse, decide_look)
    if went is not None:
        went.context["speed"] = speed_at(went.context["completed_at"])
    return went


def freeze(db, study, values: dict, confidence: float, resamples: int, tolerance: float,
           speed_now=None, current=None, went=None) -> FrozenDecision | None:
    """The study's decision, stored now if a look decides it in the stored history (the planned sample's completion
    for a fixed design; with looks, the first look that settles it; walk_history); None while none does. Idempotent
    and safe under concurrent readers."""
    from ..store import insert_decision

    if went is None:  # else the caller's walk of the same history (settle)
        went = walk_history(db, study, values, resamples, tolerance, speed_now, current)
    if went is None or went.verdict.interim:
        return None
    if went.context.get("rating_free") and any(c.ok is None for c in went.verdict.conditions
                                               if c.name in ("speed-up", "memory")):
        return None  # measured later than the pool joined (walk_history): frozen once speed and memory are judged
    context, verdict, sample = went.context, went.verdict, went.sample
    speed = context["speed"]
    insert_decision(db, study.id, {
        "completed_at": context["completed_at"], "completed_rating_id": context["at"], "gate_hash": study.gate_hash,
        "decision": verdict.decision, "sample": [int(i) for i in sample.rating_id], "excluded": context["excluded"],
        "verdict": _plain(verdict.to_json()),
        # the notes' keys and figures beside their English, so that the Chinese verdict says them (Speed.from_json)
        "speed": _plain(speed.to_json() | {"keyed": speed.keyed_json()})})
    return stored(db, study.id)  # this look's, or a concurrent look's stored first: the same decision


SETTLED: dict = {}  # (database, study, gate) -> (the looks the history had reached when a walk left it interim,
#                                               the newest rating then: _last_rating)


def settle(db) -> FrozenDecision | None:
    """Stop the study the queue serves as soon as a look decides it, without waiting for a reader: called after each
    counted rating. Returns the decision once stored (then no pair of the study is served: store.insert_decision
    closes them), None while no look decides.

    Why here: the decision used to be frozen by the first reader (aggregate, report, the Results tab), so with looks
    that can stop the study the raters went on rating a study that was settled, and the rater hours the plan saves
    were spent anyway. The decision is the same whoever stores it and whenever (walk_history reconstructs each look as
    of its completing rating), so storing it at once changes no verdict; it only stops the queue.

    Cheap while no new look can be reached. The history is walked only when the decided pairs now reach the first
    look the last walk found unreached: one query bounds them first (the complete pairs, plus every identical or
    withheld pair: leaving raters out never completes a pair), then the count itself (complete_count) with every
    rater, which the gold check's exclusions of any time can only lower (verdict.in_queue_order). A walk that leaves
    the study interim records how many looks the history had reached (`reached`), not how many the count says, so a
    look the exclusions held back is walked again once it may be reached. Called after every rating, this finds each
    look when it is reached in the history."""
    from ..study.monitoring import look_sizes
    from ..study.studies import choose
    from .data import deciding_experiment, load_ratings, stored_settings
    from .verdict import frozen_gate

    study = choose(db)
    if study is None:
        return None
    if (done := stored(db, study.id)) is not None:
        return done
    gate, _notes = frozen_gate(db, study)
    values = gate["values"] if gate else None
    sizes = look_sizes(values or {})
    key = (_db_file(db), study.id, study.gate_hash)
    taken, seen = SETTLED.get(key, (0, None))
    if seen and db.execute("SELECT 1 FROM ratings WHERE id = ? AND created_at = ?", list(seen)).fetchone() is None:
        taken = 0  # that rating is gone or another: not the history the memo saw (a backup restored over the file)
    if taken >= len(sizes):
        return None
    per_pair = values["min_ratings_per_pair"]
    bound = db.execute(
        f"""SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM current_ratings r JOIN pairs p ON p.id = r.pair_id
                                          JOIN experiments e ON e.id = p.experiment_id
                                          WHERE e.study_id = :s AND p.kind != 'gold'
                                          GROUP BY r.pair_id HAVING COUNT(*) >= COALESCE(MAX(p.wanted_ratings), :k)))
                 + (SELECT COUNT(*) FROM pairs p JOIN experiments e ON e.id = p.experiment_id
                    WHERE e.study_id = :s AND ({IDENTICAL.format(p='p.')} OR {WITHHELD.format(p='p.')}
                                               OR p.id IN (SELECT pair_id FROM pair_give_ups)))""",
        {"s": study.id, "k": per_pair}).fetchone()[0]
    if bound < sizes[taken]:
        return None
    current = load_ratings(db, study.id)
    if complete_count(current, per_pair) < sizes[taken]:
        return None
    tolerance, resamples = stored_settings(deciding_experiment(db, study.id))
    reached: list[int] = []
    went = walk_history(db, study, values, resamples, tolerance, None, current, reached)
    if went is None or went.verdict.interim:
        if key[0]:
            SETTLED[key] = (max(reached, default=0), _last_rating(db))
        return None
    return freeze(db, study, values, values["confidence"], resamples, tolerance, None, current, went)


def decided(db, study, values: dict | None, confidence: float, resamples: int, tolerance: float, speed_now=None,
            current=None):
    """The study's frozen decision: stored, else frozen now if its planned sample is complete, else None."""
    if study is None or not values:
        return None
    return stored(db, study.id) or freeze(db, study, values, confidence, resamples, tolerance, speed_now, current)
