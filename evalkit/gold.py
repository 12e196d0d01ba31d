"""Gold pairs: known-answer pairs mixed into the pool to check the raters, and each rater's accuracy on them.

A prompt file's [[gold]] entries are reference outputs written by the organisers, each with the criterion
results it is known to have (evalkit.prompts.Reference). When the pool is built, pairs of two references of
one prompt are added at `pool.gold_rate` (gold pairs = gold_rate x study pairs, rounded down). A gold pair
is a row of `pairs` like any other (same id format, same queue, same quota, same view before submit), with
kind = 'gold', two reference outputs and no path: its ratings keep their answers per side (a_*, b_*) and
leave the path columns empty, and every figure about the paths reads study pairs only.

Accuracy is the share of a rater's criterion answers on gold pairs (4 per side, 8 per rating) that equal the
expected result. "unsure" counts as a miss: a reference states its facts plainly, so not seeing a flaw there
(or a flaw where there is none) is what the check measures, and counting unsure as neither would let a
rater raise their accuracy by hedging. The preference is not scored (it is a matter of taste). Only the
version of a rating that counts (the last blind one) is scored.
"""

from __future__ import annotations

import math
import random

from .prompts import CRITERIA, Prompt

COLUMNS = ["rater", "gold_ratings", "answers", "correct", "unsure", "missed_flaws", "false_alarms", "accuracy",
           "excluded"]


def gold_count(rate: float, study_pairs: int) -> int:
    """How many gold pairs a pool of `study_pairs` gets: rate x study pairs, rounded down (a pool of fewer
    than 1 / rate study pairs gets none)."""
    return max(0, math.floor(rate * study_pairs + 1e-9))


def choose(prompts: list[Prompt], n: int, rng: random.Random | None = None,
           used: list[tuple[str, str, str]] = ()) -> list[tuple[str, object, object]]:
    """n gold pairs as (prompt id, reference on side A, reference on side B), spread over the prompts in turn.

    Within a prompt it takes the combination whose texts have been used least (a text a rater has met
    before could tell a repeated check pair from a fresh output), preferring a flawed reference against a
    correct one; sides are drawn at random. `used`: (prompt id, name, name) of the gold pairs already made,
    never made again. Never more pairs than distinct combinations."""
    rng = rng or random.SystemRandom()
    done = {(pid, frozenset((x, y))) for pid, x, y in used}
    uses: dict[tuple[str, str], int] = {}
    for pid, x, y in used:
        for name in (x, y):
            uses[(pid, name)] = uses.get((pid, name), 0) + 1
    combos = {p.id: [(x, y) for i, x in enumerate(p.gold) for y in p.gold[i + 1:]
                     if (p.id, frozenset((x.name, y.name))) not in done] for p in prompts}
    combos = {pid: c for pid, c in combos.items() if c}
    # prompts with the fewest gold pairs so far come first; ties in random order
    order = sorted(combos, key=lambda pid: (sum(1 for u in used if u[0] == pid), rng.random()))
    n = min(n, sum(len(c) for c in combos.values()))
    out = []
    while len(out) < n:
        for pid in order:
            if len(out) == n or not combos[pid]:
                continue

            def score(xy, pid=pid):
                x, y = xy
                return (uses.get((pid, x.name), 0) + uses.get((pid, y.name), 0), x.correct == y.correct, rng.random())

            x, y = min(combos[pid], key=score)
            combos[pid].remove((x, y))
            for ref in (x, y):
                uses[(pid, ref.name)] = uses.get((pid, ref.name), 0) + 1
            out.append((pid, x, y) if rng.random() < 0.5 else (pid, y, x))
    return out


def add_gold_pairs(db, experiment_id: int, prompts: list[Prompt], rate: float, tokenizer=None,
                   rng: random.Random | None = None) -> int:
    """Add this pool experiment's gold pairs (up to gold_rate x its study pairs; idempotent: a resumed pool
    only tops up). Stores the reference outputs it uses, with their token ids under `tokenizer` when given
    (the Live tab holds back a live output that would repeat one). Returns how many pairs were added."""
    from .store import insert_gold_pairs, reference_hash, store_references

    study, have = db.execute(
        "SELECT COALESCE(SUM(kind = 'study'), 0), COALESCE(SUM(kind = 'gold'), 0) FROM pairs WHERE experiment_id = ?",
        [experiment_id]).fetchone()
    used = [(r[0], r[1], r[2]) for r in db.execute(
        """SELECT p.prompt_id, a.name, b.name FROM pairs p JOIN reference_outputs a ON a.id = p.a_reference_id
           JOIN reference_outputs b ON b.id = p.b_reference_id WHERE p.experiment_id = ? AND p.kind = 'gold'""",
        [experiment_id])]
    picked = choose(prompts, gold_count(rate, study) - have, rng, used)
    if not picked:
        return 0
    refs = {reference_hash(pid, r): (pid, r) for pid, x, y in picked for r in (x, y)}

    def ids(text: str):
        return None if tokenizer is None else list(tokenizer(text, add_special_tokens=False)["input_ids"])

    stored = store_references(db, [(pid, r, ids(r.text)) for pid, r in refs.values()])
    insert_gold_pairs(db, experiment_id, [
        {"prompt_id": pid, "a_reference_id": stored[reference_hash(pid, x)], "b_reference_id": stored[reference_hash(pid, y)]}
        for pid, x, y in picked])
    return len(picked)


def answers(db, study_id: int | None = None, history: bool = False):
    """One row per criterion answer on a gold pair of the study (of every study when None), current ratings only:
    rating_id, rater, pair_id, side, criterion, answer, expected. history=True: every blind rating row instead, with
    `ended`, the id of the blind row that superseded it (int64 max while current), so that accuracy can be taken as
    of any rating (the decision frozen at completion)."""
    import numpy as np
    import pandas as pd

    cols = ", ".join(f"r.{s}_{c}" for s in "ab" for c in CRITERIA)
    source = "ratings r" if history else "current_ratings r"
    rows = "r.kind = 'rating' AND r.blind = 1 AND " if history else ""
    study = "" if study_id is None else " AND p.experiment_id IN (SELECT id FROM experiments WHERE study_id = :study)"
    ended = (", (SELECT MIN(s.id) FROM ratings s WHERE s.supersedes = r.id AND s.blind = 1) AS ended"
             if history else "")
    wide = pd.read_sql_query(
        f"""SELECT r.id AS rating_id, r.rater, r.pair_id, p.a_reference_id AS a_ref, p.b_reference_id AS b_ref, {cols}{ended}
            FROM {source} JOIN pairs p ON p.id = r.pair_id WHERE {rows}p.kind = 'gold'{study}""", db.conn,
        params={"study": study_id})
    keys = ["rating_id", "rater", "pair_id", "a_ref", "b_ref"]
    if history:
        wide["ended"] = wide["ended"].fillna(np.iinfo(np.int64).max).astype(np.int64)
        keys.append("ended")
    expected = pd.read_sql_query(
        "SELECT o.id AS ref, j.key AS criterion, j.value AS expected FROM reference_outputs o, json_each(o.expected) j",
        db.conn)
    long = wide.melt(id_vars=keys, var_name="column", value_name="answer")
    long["side"] = long["column"].str[0]
    long["criterion"] = long["column"].str[2:]
    long["ref"] = long["a_ref"].where(long["side"] == "a", long["b_ref"])
    long = long.merge(expected, on=["ref", "criterion"], how="left")
    return long[["rating_id", "rater", "pair_id", "side", "criterion", "answer", "expected"]
                + (["ended"] if history else [])]


def as_of(history, rating_id: int):
    """The gold answers of answers(history=True) that were current right after rating `rating_id` was stored."""
    return history[(history["rating_id"] <= rating_id) & (history["ended"] > rating_id)]


def accuracy(db, min_accuracy: float = 0.0, raters=(), study_id: int | None = None, table=None) -> tuple:
    """Per rater: gold ratings, criterion answers, correct, unsure, missed flaws (expected fail, answered pass),
    false alarms (expected pass, answered fail), accuracy = correct / answers, and whether the gate's
    `min_accuracy` excludes them. `raters`: raters to list even without a gold rating (accuracy empty; never
    excluded: there is nothing to judge them on). `table`: gold answers to score (as_of's), else the study's current
    ones. Returns (table, excluded rater names)."""
    import pandas as pd

    a = answers(db, study_id) if table is None else table
    a = a.assign(correct=a["answer"] == a["expected"], unsure=a["answer"] == "unsure",
                 missed_flaws=(a["expected"] == "fail") & (a["answer"] == "pass"),
                 false_alarms=(a["expected"] == "pass") & (a["answer"] == "fail"))
    per = a.groupby("rater").agg(gold_ratings=("rating_id", "nunique"), answers=("answer", "size"),
                                 correct=("correct", "sum"), unsure=("unsure", "sum"),
                                 missed_flaws=("missed_flaws", "sum"), false_alarms=("false_alarms", "sum"))
    per = per.reindex(per.index.union(pd.Index(list(raters), dtype=object)), fill_value=0).astype(int)
    per["accuracy"] = (per["correct"] / per["answers"]).where(per["answers"] > 0)
    per["excluded"] = bool(min_accuracy > 0) & per["accuracy"].notna() & (per["accuracy"] < min_accuracy - 1e-12)
    table = per.rename_axis("rater").reset_index()[COLUMNS]
    return table, sorted(table.loc[table["excluded"], "rater"])
