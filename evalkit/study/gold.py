"""Gold pairs: known-answer pairs mixed into the pool to check the raters, and each rater's accuracy on them.

A gold pair must not be told from a study pair, by its texts least of all. So its texts are never written in a
file (prompt files are public, on a Space and in the repository): they are made when the pool is built, from real
pooled outputs. The pool generates a few samples more than the study needs (gold_samples: pool.gold_rate x study
pairs, spread over the prompts), stores their outputs, and turns each extra sample into a gold pair: its two
outputs, one of them changed by a controlled edit whose effect on a criterion is known (`edit`: the day changed,
or the last clause replaced by a promise of a restore time). The edited output fails that criterion whatever the original said; nothing
else is known about either output, and only the known answers are scored. The texts keep the form of the pooled
outputs (length, line breaks, punctuation), since they are pooled outputs.

A gold pair is a row of `pairs` like any other (same id format, same queue, same view before submit, and its quota
drawn as a study pair's: gold_ratings),
with kind = 'gold', two reference outputs and no path: its ratings keep their answers per side (a_*, b_*) and leave
the path columns empty, and every figure about the paths reads study pairs only.

Accuracy is the share of a rater's answers on gold pairs whose expected result is known that equal it. "unsure"
counts as a miss: an edit makes a plain flaw, so not seeing it is what the check measures, and counting unsure as
neither would let a rater raise their accuracy by hedging. The preference is not scored (a matter of taste). Only
each rater's first blind answer on a gold pair is scored, never a correction (see answers()).
"""

from __future__ import annotations

import math
import random

from ..task.criteria import CRITERIA, gold_edits
from ..task.edits import Edit, add_promise, change_day  # noqa: F401 (the edits, here for callers)
from ..task.prompts import Prompt, Reference

COLUMNS = ["rater", "gold_ratings", "answers", "correct", "unsure", "missed_flaws", "false_alarms", "accuracy",
           "excluded"]


def gold_ratings(ratings_per_pair: int, second_share: float = 0.0) -> float:
    """The ratings a gold pair wants, on average, in a study whose pairs get `ratings_per_pair` (with one, a second for
    the share `second_share`): the same as a study pair. A gold pair's quota is drawn as a study pair's
    (store.draw_queue_order): a gold pair that always wanted two ratings, where nine study pairs in ten want one, was
    told apart by a rater with two identities, the second being served the pair the first held on screen only when
    it wanted two (attacker audit F1), and she could rate carefully just those."""
    return ratings_per_pair + (second_share if ratings_per_pair == 1 else 0.0)


def gold_count(rate: float, study_pairs: int) -> int:
    """How many gold pairs a pool of `study_pairs` gets: rate x study pairs, rounded down (a pool of fewer
    than 1 / rate study pairs gets none). The pool counts the study pairs raters see, those whose outputs differ
    (identical pairs are decided without raters), so about one pair in 1 / rate that a rater meets is a gold pair
    however many outputs are identical."""
    return max(0, math.floor(rate * study_pairs + 1e-9))


def gold_samples(prompt_ids: list[str], samples: int, rate: float) -> dict[str, int]:
    """Extra samples per prompt the pool generates to make its gold pairs from: gold_count(rate, study pairs),
    one prompt after another. Enough for every study pair to differ; where some are identical, add_gold_pairs uses
    fewer (the rest stay unpaired generations: compute spent, no rater's time)."""
    n = gold_count(rate, len(prompt_ids) * samples)
    return {pid: n // len(prompt_ids) + (i < n % len(prompt_ids)) for i, pid in enumerate(prompt_ids)} if prompt_ids else {}


def edit(text: str, language: str) -> Edit:
    """The edit a gold output gets: the first that applies of the registered criteria's gold edits, in the
    registry's order (evalkit.task.criteria): for the maintenance material, the day changed when the text names it
    (length, lines and punctuation as they were), else its last clause replaced by a promise of a restore time."""
    for fn in gold_edits():
        made = fn(text, language)
        if made is not None:
            return made
    raise ValueError("no registered gold edit applies to this text")  # add_promise always applies


def _unpaired_samples(db, experiment_id: int) -> list[dict]:
    """The extra samples of a pool experiment: an ordinary and an assisted output of one prompt and seed, both
    ok, in no pair and in no gold pair yet (its references are named after the generations)."""
    return list(db.query(
        """SELECT o.id AS o_id, a.id AS a_id, o.prompt_id, o.text AS o_text, a.text AS a_text,
                  o.token_ids AS o_tokens, a.token_ids AS a_tokens
           FROM generations o JOIN generations a ON a.experiment_id = o.experiment_id AND a.prompt_id = o.prompt_id
                AND a.seed = o.seed AND a.path = 'assisted' AND a.status = 'ok' AND a.live = 0
           WHERE o.experiment_id = :e AND o.path = 'ordinary' AND o.status = 'ok' AND o.live = 0
             AND NOT EXISTS (SELECT 1 FROM pairs p WHERE p.ordinary_generation_id = o.id)
             AND NOT EXISTS (SELECT 1 FROM generations f WHERE f.experiment_id = o.experiment_id
                             AND f.prompt_id = o.prompt_id AND f.seed = o.seed AND f.path = 'fallback')
             AND NOT EXISTS (SELECT 1 FROM reference_outputs r WHERE r.name = 'pool-' || o.id || '-' || a.id)
           ORDER BY o.id""", {"e": experiment_id}))


def add_gold_pairs(db, experiment_id: int, prompts: list[Prompt], tokenizer=None,
                   rng: random.Random | None = None, limit: int | None = None) -> int:
    """Turn this pool experiment's extra samples into gold pairs (idempotent: a resumed pool only adds the new
    ones), until the experiment holds `limit` gold pairs when given (the samples used drawn at random). Which output
    is edited, and the sides, are drawn at random. The references keep the token ids of the outputs (the edited
    one's under `tokenizer` when given): the Live tab holds back a live output that would repeat one. Returns how
    many pairs were added."""
    import json

    from ..store import insert_gold_pairs, store_references

    rng = rng or random.SystemRandom()
    language = {p.id: p.language for p in prompts}
    samples = _unpaired_samples(db, experiment_id)
    if limit is not None:
        held = db.execute("SELECT COUNT(*) FROM pairs WHERE experiment_id = ? AND kind = 'gold'",
                          [experiment_id]).fetchone()[0]
        keep = max(0, min(limit - held, len(samples)))
        chosen = set(rng.sample(range(len(samples)), keep))
        samples = [s for i, s in enumerate(samples) if i in chosen]
    made, refs = [], []
    for s in samples:
        name = f"pool-{s['o_id']}-{s['a_id']}"
        texts = [(s["o_text"], s["o_tokens"]), (s["a_text"], s["a_tokens"])]
        edited = rng.randrange(2)
        e = edit(texts[edited][0], language.get(s["prompt_id"], "zh"))
        changed = Reference(name=name, text=e.text, expected={c: "fail" for c in e.fails}, note=e.note)
        ids = None if tokenizer is None else list(tokenizer(e.text, add_special_tokens=False)["input_ids"])
        kept = Reference(name=name + "-unedited", text=texts[1 - edited][0], expected={}, note="")
        pair = [(kept, json.loads(texts[1 - edited][1])), (changed, ids)]
        rng.shuffle(pair)  # the sides
        refs += [(s["prompt_id"], r, t) for r, t in pair]
        made.append((s["prompt_id"], pair[0][0], pair[1][0]))
    if not made:
        return 0
    from ..store import reference_hash

    stored = store_references(db, refs)
    insert_gold_pairs(db, experiment_id, [
        {"prompt_id": pid, "a_reference_id": stored[reference_hash(pid, x)], "b_reference_id": stored[reference_hash(pid, y)]}
        for pid, x, y in made])
    return len(made)


# Gold ratings a rater has given before the queue may stop serving her (clearly_below): one bad moment on one check
# pair (its one or two scored answers) is not enough to end a rater's work.
STOP_AFTER_GOLD_RATINGS = 3


def clearly_below(db, rater: str) -> bool:
    """Whether the queue should stop serving this rater: the study it serves asks for a gold accuracy
    (min_gold_accuracy, frozen with its gate), she has rated at least STOP_AFTER_GOLD_RATINGS of its gold pairs,
    and her scored answers on them put her clearly under it, the upper end of their Wilson 95% interval below the
    bar. The verdict leaves her out as soon as her accuracy is below it (accuracy()); while that may be chance, she
    is still served, as her accuracy may recover. Once it hardly can, each pair she filled would be closed with no
    counted rating, and her time spent for nothing. Only gold pairs that are closed count here (their reveals are
    shown), so the stop tells her nothing about a check pair another name of hers could still be served."""
    from ..stats.descriptive import wilson
    from .studies import choose

    study = choose(db)
    bar = float(((study.gate.get("values") or {}) if study is not None else {}).get("min_gold_accuracy") or 0.0)
    if bar <= 0:
        return False
    # Only closed check pairs are scored here: their reveals have told her they were checks. The stop appearing right
    # after she rated a check pair still open told her (and any other name of hers, which can still be served it)
    # that it was one, and that her answers on it were wrong (attacker audit). The verdict scores every answer.
    scored = answers(db, study.id)
    scored = scored[scored["pair_id"].isin({r[0] for r in db.execute("SELECT pair_id FROM closed_pairs")})]
    table, _ = accuracy(db, bar, (), study.id, table=scored)
    row = table[table["rater"] == rater]
    if row.empty or int(row["gold_ratings"].iloc[0]) < STOP_AFTER_GOLD_RATINGS or int(row["answers"].iloc[0]) == 0:
        return False
    return wilson(int(row["correct"].iloc[0]), int(row["answers"].iloc[0]))[1] < bar


def answers(db, study_id: int | None = None, history: bool = False):
    """One row per criterion answer on a gold pair of the study (of every study when None): rating_id, rater,
    pair_id, side, criterion, answer, expected. history=True adds `ended` (int64 max: never), so that accuracy can be
    taken as of any rating (the decision frozen at completion).

    Each rater's first blind answer on a gold pair is scored, never a correction. A gold pair wants more ratings than
    most study pairs, so its reveal after a submit is more often "pending": a rater who corrected only the pairs
    left pending could re-answer the checks with care and pass a gold check that the rest of her work would fail
    (audit, 2026-12-02). The first answer is given before anything can tell the pair is a check."""
    import numpy as np
    import pandas as pd

    cols = ", ".join(f"r.{s}_{c}" for s in "ab" for c in CRITERIA)
    study = "" if study_id is None else " AND p.experiment_id IN (SELECT id FROM experiments WHERE study_id = :study)"
    wide = pd.read_sql_query(
        f"""SELECT r.id AS rating_id, r.rater, r.pair_id, p.a_reference_id AS a_ref, p.b_reference_id AS b_ref, {cols}
            FROM ratings r JOIN pairs p ON p.id = r.pair_id
            WHERE r.kind = 'rating' AND r.blind = 1 AND r.supersedes IS NULL AND p.kind = 'gold'{study}""", db.conn,
        params={"study": study_id})
    keys = ["rating_id", "rater", "pair_id", "a_ref", "b_ref"]
    if history:  # an original answer, once stored, is scored from then on: nothing later replaces it
        wide["ended"] = np.int64(np.iinfo(np.int64).max)
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
    a = a[a["expected"].notna()]  # only what an edit made known is scored
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
