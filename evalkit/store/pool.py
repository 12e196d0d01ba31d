"""Writes of the pair pool: study pairs (two generations, sides drawn once), reference outputs and gold pairs, and
the merge of accelerate shards into the main database."""

from __future__ import annotations

import hashlib
import json
import secrets

from .database import now, write_transaction
from .runs import insert_generations


# A pair withheld from every rater: marked (pairs.withheld, migration 029) and closed in the transaction that ranked it
# (draw_queue_order's `withheld`). A column, not read off its closing's instant: anything else that closed a pair at
# the instant it joined (a decision stored in the same millisecond) would have counted it at the worst.
WITHHELD = "{p}withheld = 1"


def new_pair_id() -> str:
    return "p" + secrets.token_hex(8)


def insert_pairs(db, experiment_id: int, pairs: list[dict]) -> list[str]:
    """pairs: dicts with prompt_id, sample, ordinary (GenerationRecord), assisted (GenerationRecord), ordinary_side."""
    ids = []
    with write_transaction(db):
        for p in pairs:
            o, a = p["ordinary"], p["assisted"]
            insert_generations(db, [o, a], experiment_id)
            a_id, b_id = (o.id, a.id) if p["ordinary_side"] == "A" else (a.id, o.id)
            pair_id = new_pair_id()
            db["pairs"].insert(
                {
                    "id": pair_id,
                    "experiment_id": experiment_id,
                    "created_at": now(),
                    "prompt_id": p["prompt_id"],
                    "sample": p["sample"],
                    "ordinary_generation_id": o.id,
                    "assisted_generation_id": a.id,
                    "a_generation_id": a_id,
                    "b_generation_id": b_id,
                    "ordinary_side": p["ordinary_side"],
                    "work_index": p.get("work_index"),
                }
            )
            ids.append(pair_id)
    return ids


def reference_hash(prompt_id: str, ref) -> str:
    """The identity of a reference output: a changed text, expected answer or note is a new reference."""
    return hashlib.sha256(json.dumps(
        {"prompt_id": prompt_id, "name": ref.name, "text": ref.text, "expected": ref.expected, "note": ref.note},
        sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def store_references(db, refs: list[tuple[str, object, list[int] | None]]) -> dict[str, int]:
    """refs: (prompt_id, prompts.Reference, token ids or None). Stores the new ones (a stored reference never
    changes; only its token ids follow the latest pool's tokenizer) in one transaction. Returns hash -> id."""
    ids = {}
    with write_transaction(db):
        for prompt_id, ref, token_ids in refs:
            h = reference_hash(prompt_id, ref)
            db.conn.execute(
                "INSERT INTO reference_outputs (prompt_id, name, text, expected, note, content_hash, token_ids, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (content_hash) DO UPDATE SET "
                "token_ids = COALESCE(excluded.token_ids, token_ids)",
                [prompt_id, ref.name, ref.text, json.dumps(ref.expected, sort_keys=True), ref.note, h,
                 None if token_ids is None else json.dumps(token_ids), now()])
            ids[h] = db.conn.execute("SELECT id FROM reference_outputs WHERE content_hash = ?", [h]).fetchone()[0]
    return ids


def insert_gold_pairs(db, experiment_id: int, pairs: list[dict]) -> list[str]:
    """pairs: dicts with prompt_id, a_reference_id, b_reference_id (sides already drawn). Same id format as a
    study pair's: nothing in a pair id tells a gold pair from another."""
    ids = []
    with write_transaction(db):
        for p in pairs:
            pair_id = new_pair_id()
            db.conn.execute(
                "INSERT INTO pairs (id, experiment_id, created_at, prompt_id, kind, a_reference_id, b_reference_id) "
                "VALUES (?, ?, ?, ?, 'gold', ?, ?)",
                [pair_id, experiment_id, now(), p["prompt_id"], p["a_reference_id"], p["b_reference_id"]])
            ids.append(pair_id)
    return ids


def draw_queue_order(db, experiment_id: int, seed: int | None = None, ratings_per_pair: int | None = None,
                     second_share: float = 0.0, withheld=()) -> int:
    """Give every pair of this experiment that has none a queue rank, uniform on [0, 1), drawn from a generator seeded
    by `seed` (drawn with `secrets` when None) and stored with the experiment, in pair rowid order: the queue serves
    the lowest ranks first, so the rated pairs are a uniformly random subset of the pool, and the order can be
    re-derived from the seed (a rank's fractional part). Returns the number of pairs ranked.

    Pairs ranked once the experiment's study has any rating go after every pair of the study ranked before: their
    ranks are the next whole number plus the draw (a rating epoch, rank_epoch). An organiser sees interim looks; a
    pool added after one would otherwise take random places at the head of the order and push rated pairs out of
    the decision sample, a re-draw of the sample chosen by what the look showed. Appended, a later pool only extends
    the order: it enters the decision (and the pre-screen's population, aggregate.ppi) only where earlier pairs run
    out.

    With `ratings_per_pair` (the study's frozen gate: min_ratings_per_pair) each of those pairs also gets the ratings
    it wants (wanted_ratings): that many, and with one per pair two for each pair whose draw from a second stream of
    the same seed falls below `second_share`, a gold pair as a study pair (a quota of its own would tell it apart
    through the queue: evalkit.study.gold.gold_ratings). Which pairs are rated
    twice is drawn before any pair is rated and independently of the ranks and of what the pairs say, so the doubled
    pairs are a random subset too: the analysis may treat a pair's ratings as exchangeable, and pairs with one
    rating and with two alike (a pair's mean is unbiased either way). Without it the quotas stay NULL: the app's.

    `withheld`: pair ids of the experiment ranked like the others but marked and closed in the same transaction
    (WITHHELD), so
    no rater is ever served them (study.pairs.revealed_copies): they keep their place in the random order."""
    import numpy as np

    with write_transaction(db):
        row = db.conn.execute("SELECT queue_seed FROM experiments WHERE id = ?", [experiment_id]).fetchone()
        if seed is None:
            seed = row[0] if row and row[0] is not None else secrets.randbits(62)
        db.conn.execute("UPDATE experiments SET queue_seed = ? WHERE id = ?", [seed, experiment_id])
        todo = db.conn.execute("SELECT rowid, kind FROM pairs WHERE experiment_id = ? AND queue_rank IS NULL "
                               "ORDER BY rowid", [experiment_id]).fetchall()
        ids = [r[0] for r in todo]
        ranked = db.conn.execute("SELECT COUNT(*) FROM pairs WHERE experiment_id = ? AND queue_rank IS NOT NULL",
                                 [experiment_id]).fetchone()[0]
        # a resumed pool continues the seed's stream where the ranked pairs left it
        ranks = np.random.default_rng(seed).random(ranked + len(ids))[ranked:] + rank_epoch(db, experiment_id)
        if ratings_per_pair is None:
            wanted = [None] * len(ids)
        else:
            doubled = np.zeros(len(ids), bool)
            if ratings_per_pair == 1 and second_share > 0:  # its own stream: the ranks stay as they were
                doubled = np.random.default_rng([seed, 16]).random(ranked + len(ids))[ranked:] < second_share
            wanted = [ratings_per_pair + int(d) for d in doubled]
        stored = now()  # the pairs join the study now: what "stored by the decision" compares (pairs.stored_at)
        db.conn.executemany("UPDATE pairs SET queue_rank = ?, wanted_ratings = ?, stored_at = ? WHERE rowid = ?",
                            [(float(q), w, stored, i) for q, w, i in zip(ranks, wanted, ids)])
        held = [(pair, experiment_id, stored) for pair in withheld]
        if held:
            db.conn.executemany("UPDATE pairs SET withheld = 1 WHERE id = ? AND experiment_id = ? AND stored_at = ?",
                                held)
        db.conn.executemany("INSERT OR IGNORE INTO closed_pairs (pair_id, closed_at) SELECT id, stored_at FROM pairs "
                            "WHERE id = ? AND experiment_id = ? AND stored_at = ?", held)
    return len(ids)


def rank_epoch(db, experiment_id: int) -> int:
    """The whole part of the ranks this experiment's unranked pairs would get now: 0 while its study (the experiment
    alone when it has none) has no rating of any kind, else one more than the highest whole part the study's ranks
    hold."""
    study = db.conn.execute("SELECT study_id FROM experiments WHERE id = ?", [experiment_id]).fetchone()
    scope = ("p.experiment_id IN (SELECT id FROM experiments WHERE study_id = :study)" if study and study[0] is not None
             else "p.experiment_id = :experiment")
    highest, started = db.conn.execute(
        f"""SELECT MAX(p.queue_rank), EXISTS (SELECT 1 FROM ratings r JOIN pairs p ON p.id = r.pair_id WHERE {scope})
            FROM pairs p WHERE {scope}""", {"study": study[0] if study else None, "experiment": experiment_id}).fetchone()
    return int(highest // 1) + 1 if started and highest is not None else 0


def set_queue_seed(db, experiment_id: int, seed: int) -> None:
    """The seed a pool's queue ranks were drawn from, where they were drawn outside draw_queue_order (synthetic
    studies rank their rated pairs first)."""
    with write_transaction(db):
        db.conn.execute("UPDATE experiments SET queue_seed = ? WHERE id = ?", [seed, experiment_id])


def insert_shard_items(db, items: list[dict]) -> int:
    """Work items read from a shard database ({"gens": generation rows, "pairs": pair rows}, in work-list order)
    copied into this one in ONE transaction, with new generation ids (a pair's and a fallback's references follow
    them). Returns the number of items copied."""
    with write_transaction(db):
        for item in items:
            new_ids: dict[int, int] = {}
            for g in item["gens"]:
                g = dict(g)
                old = g.pop("id")
                if g["fallback_of"] is not None:
                    g["fallback_of"] = new_ids[g["fallback_of"]]
                db["generations"].insert(g)
                new_ids[old] = db.execute("SELECT last_insert_rowid()").fetchone()[0]
            for p in item["pairs"]:
                p = dict(p)
                for col in ("ordinary_generation_id", "assisted_generation_id", "a_generation_id", "b_generation_id"):
                    p[col] = new_ids[p[col]]
                db["pairs"].insert(p)
    return len(items)
