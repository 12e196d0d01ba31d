"""A pool added after rating began cannot re-draw the decision sample.

Organisers see interim looks. Before this, a later pool's pairs took uniform ranks on the same scale as the first
pool's, so a pool added when a look disappointed landed at random places at the head of the queue's order and
pushed the highest-ranked rated pairs out of the decision sample: a re-draw of part of the sample, made when the look
was bad. (A quick model of it, scripts/reroll.py in the README's terms: a pool as large again added whenever the
look at 1,500 of 1,675 pairs falls short turns a 2.5% false KEEP into 3.8%.) Now pairs ranked once the study has any
rating follow every earlier pair (store.rank_epoch); they enter the decision, and the pre-screen's population, only
where the earlier pairs run out. These tests run it through the real ranking (study.pairs.draw_queue), the real
queue and the real aggregate."""

import json

import numpy as np

from evalkit.aggregate import aggregate
from evalkit.aggregate.data import load_ratings
from evalkit.aggregate.verdict import in_queue_order
from evalkit.config import AppConfig
from evalkit.rating.queue import RatingInput, next_pair, submit_rating, unclosed_pairs
from evalkit.store import open_db
from evalkit.store.pool import draw_queue_order, rank_epoch
from evalkit.study.pairs import draw_queue
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.task.criteria import CRITERIA

APP = AppConfig(ratings_per_pair=1)
PLANNED = 100


def _gate(tmp_path):
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=PLANNED, margin=0.05, min_ratings_per_pair=1, second_rating_share=0,
                                   claim="these raters", ppi="on"), encoding="utf-8")
    return str(gate)


def _pool(db, gate: str, pairs: int, seed: int, bench: bool = False) -> int:
    """`pairs` unrated study pairs pooled into the study and ranked as `evalkit generate` ranks them. Returns the
    pool's experiment id."""
    made = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=pairs, raters_per_pair=1, raters=2, pass_rate=0.8,
                                          drops={"schedule": 0.1}, prescreen_accuracy=0.9, queue_order=False,
                                          gate_path=gate, seed=seed, bench=bench))
    assert draw_queue(db, made["experiment_id"]) == pairs
    return made["experiment_id"]


def _ranks(db, experiment_id: int) -> dict:
    return dict(db.execute("SELECT id, queue_rank FROM pairs WHERE experiment_id = ? AND kind = 'study'",
                           [experiment_id]))


def _rate(db, rater: str, n: int) -> list[str]:
    """`rater` rates the next `n` pairs the queue serves, answering the pre-screen's answers (the pairs' truth as the
    synthetic pool holds it), and returns the pairs rated in order."""
    passed = {(g, c): p for g, c, p in db.execute("SELECT generation_id, criterion, passed FROM prescreen")}
    done = []
    for _ in range(n):
        view = next_pair(db, rater, APP.ratings_per_pair)
        assert view is not None
        a_gen, b_gen = db.execute("SELECT a_generation_id, b_generation_id FROM pairs WHERE id = ?",
                                  [view.pair_id]).fetchone()
        answers = [{c: "pass" if passed[(g, c)] else "fail" for c in CRITERIA} for g in (a_gen, b_gen)]
        submit_rating(db, APP, RatingInput(view.pair_id, rater, answers[0], answers[1], "tie"))
        done.append(view.pair_id)
    return done


def _fidelity(db):
    table = aggregate(db).tables["non_inferiority"].set_index("criterion")
    return table[["pairs", "difference", "ci_low", "ci_high", "ppi", "ppi_unrated_pairs"]]


def test_a_pool_added_after_a_look_follows_the_order_and_moves_nothing(tmp_path):
    gate = _gate(tmp_path)
    db = open_db(tmp_path / "later.db")
    first = _pool(db, gate, 300, seed=1, bench=True)
    ranks1 = _ranks(db, first)
    assert all(0 <= r < 1 for r in ranks1.values())  # no rating yet: the first epoch

    rated = _rate(db, "ann", 80)
    assert rated == sorted(ranks1, key=ranks1.get)[:80]  # lowest rank first
    assert rank_epoch(db, first) == 1
    look = _fidelity(db)
    assert look["ppi"].all() and (look["pairs"] == 80).all()

    second = _pool(db, gate, 300, seed=2)  # the organiser adds a pool after that look
    ranks2 = _ranks(db, second)
    assert _ranks(db, first) == ranks1  # the first pool's order is untouched
    assert all(1 <= r < 2 for r in ranks2.values())  # the second follows every pair of the first
    # Under the old rule (ranks on one scale) this pool would have taken places at the head of the order:
    head_end = sorted(ranks1.values())[PLANNED - 1]
    assert sum(r - 1 < head_end for r in ranks2.values()) > 20

    # The look is the same to the last digit: same sample, same pre-screen population.
    after = _fidelity(db)
    assert after.equals(look), (look, after)
    # The decision sample is still the first pool's head, and the queue serves the first pool's next pair.
    order, complete, run = in_queue_order(load_ratings(db), 1)
    ratings = load_ratings(db)
    assert [ratings.pair_ids[p] for p in order[:PLANNED]] == sorted(ranks1, key=ranks1.get)[:PLANNED]
    assert run == 80
    nxt = next_pair(db, "bob", APP.ratings_per_pair)
    assert nxt.pair_id == sorted(ranks1, key=ranks1.get)[80]

    # The plan completes on the first pool alone: the frozen sample holds none of the second pool's pairs.
    _rate(db, "bob", PLANNED - 80)
    agg = aggregate(db)
    assert not agg.interim
    frozen = {r[0] for r in db.execute(
        "SELECT pair_id FROM ratings WHERE id IN (SELECT value FROM json_each((SELECT sample_json FROM decisions)))")}
    assert frozen == set(sorted(ranks1, key=ranks1.get)[:PLANNED])
    assert (agg.tables["non_inferiority"]["ppi_unrated_pairs"] == 300 - PLANNED).all()  # the first pool's


def test_pools_made_before_rating_share_one_order_and_a_later_pool_fills_where_the_first_runs_out(tmp_path):
    gate = _gate(tmp_path)
    db = open_db(tmp_path / "fill.db")
    first = _pool(db, gate, 40, seed=3, bench=True)
    second = _pool(db, gate, 30, seed=4)  # before any rating: one order over everything pooled
    ranks = {**_ranks(db, first), **_ranks(db, second)}
    assert all(0 <= r < 1 for r in ranks.values())
    assert min(_ranks(db, second).values()) < max(_ranks(db, first).values())  # interleaved

    _rate(db, "ann", 70)  # every pair pooled so far: the plan wants more
    agg = aggregate(db)
    assert agg.interim
    third = _pool(db, gate, 60, seed=5)
    assert all(1 <= r < 2 for r in _ranks(db, third).values())
    _rate(db, "bob", PLANNED - 70)
    agg = aggregate(db)
    assert not agg.interim
    ranks3 = _ranks(db, third)
    frozen = {r[0] for r in db.execute(
        "SELECT pair_id FROM ratings WHERE id IN (SELECT value FROM json_each((SELECT sample_json FROM decisions)))")}
    assert frozen == set(ranks) | set(sorted(ranks3, key=ranks3.get)[:PLANNED - 70])
    # the sample reaches the third pool, so its pairs are in the pre-screen's population
    rows = agg.tables["non_inferiority"]
    assert rows["ppi"].all() and (rows["ppi_unrated_pairs"] == 40 + 30 + 60 - PLANNED).all()
    assert np.isfinite(rows["ci_low"]).all()


def test_the_reroll_model_shows_the_old_ranking_above_the_level_and_the_epochs_at_it():
    """scripts/reroll.py, whose figures the README records: under the old ranking a pool added when the look falls
    short lifts the false-KEEP rate above the one-sided 2.5%; appended, the rate is the fixed design's."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "reroll.py"
    r = subprocess.run([sys.executable, str(script), "--studies", "20000", "--look", "1500"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    row = re.search(r"\| 1500 \| ([0-9.]+) \(([0-9.]+)-([0-9.]+)\) \| ([0-9.]+) \(([0-9.]+)-([0-9.]+)\) \|", r.stdout)
    _, old_low, _, _, new_low, new_high = map(float, row.groups())
    assert old_low > 0.025 and old_low > new_high  # above the level, and above the appended ranking's rate
    assert new_low < 0.03 and new_high > 0.02
    bad = subprocess.run([sys.executable, str(script), "--look", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "'0' is not a whole number between 1 and --planned 1675" in bad.stderr


def test_the_pool_short_sentence_counts_only_the_pool_the_pre_screen_uses(tmp_path):
    """A study whose pool reached the plan's planned_pool only through a pool added after rating began: those pairs
    follow the order and are no part of the pre-screen's population until the sample reaches them, so the sentence
    says the population is short instead of the pool being full."""
    from evalkit.study.studies import choose, pool_short

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=PLANNED, margin=0.05, min_ratings_per_pair=1, second_rating_share=0,
                                   claim="these raters", ppi="on") + "planned_pool = 400\n", encoding="utf-8")
    db = open_db(tmp_path / "short.db")
    _pool(db, str(gate), 300, seed=6, bench=True)
    assert "the pool holds 300 study pairs, fewer than the 400 the plan's power assumes" in pool_short(db, choose(db))
    _rate(db, "ann", 1)
    _pool(db, str(gate), 200, seed=7)
    short = pool_short(db, choose(db))
    assert short.startswith("the pre-screen's population holds 300 study pairs, fewer than the 400 the plan's power "
                            "assumes (gate planned_pool): 200 of the pool's 500 were pooled after rating began")
    agg = aggregate(db)
    assert any(n.startswith(short[0].upper() + short[1:40]) for n in agg.notes)
    # and in Chinese with the same figures (study.studies.FILL), not quoted as the English original
    from evalkit.ui.verdictzh import verdict_zh

    assert any(x.startswith("- 说明：预检的总体有 300 对研究评分对，少于计划的检验力所假定的 400 对（门槛 planned_pool）：配对池的 "
                            "500 对中有 200 对是在评分开始后加入的") for x in verdict_zh(agg)), verdict_zh(agg)


def test_a_pool_being_made_is_not_served_until_its_order_and_quotas_are_drawn(tmp_path):
    """Durability audit, 2026-12-02: `evalkit generate` beside a serving app stored its pairs, then its gold pairs, then
    the queue order and quotas, in three transactions; in between the queue served the new pairs at the app's quota,
    closed them there, and the decision later waited for ever on quotas they could no longer reach. A pool whose queue
    seed is stored (study.pairs stores it as the pool starts) is served only once its ranks are drawn."""
    from evalkit.store import set_queue_seed

    db = open_db(tmp_path / "s.db")
    made = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=6, raters_per_pair=1, raters=2, pass_rate=0.8,
                                          queue_order=False, gate_path=_gate(tmp_path), seed=3))
    exp = made["experiment_id"]
    assert next_pair(db, "ann", APP.ratings_per_pair) is not None  # a pool made before queue seeds: served as before
    db.execute("DELETE FROM assignments")
    db.conn.commit()
    set_queue_seed(db, exp, 12345)  # what `evalkit generate` stores when the pool starts
    assert next_pair(db, "bob", APP.ratings_per_pair) is None  # merged, ranks and quotas not drawn yet
    assert draw_queue(db, exp) == 6
    view = next_pair(db, "bob", APP.ratings_per_pair)
    assert view is not None and view.pair_id == min(_ranks(db, exp).items(), key=lambda kv: kv[1])[0]


def test_a_later_pool_of_identical_pairs_moves_no_decision_whether_or_not_anyone_looked_before_it(tmp_path):
    """Verdict audit, 2026-12-04: identical pairs entered beside the rated ones in the proportion of every pool in
    the database, so a pool of identical outputs added after the planned sample was rated, but before anyone looked,
    entered the decision "as of completion" (a 30-point drop read as 18, and the completion point moved). Identical
    pairs now enter in the proportion of their own rating epoch, as far as the rated pairs reach: the decision is the
    one a look before the new pool would have frozen, to the last digit."""
    import shutil

    gate = _gate(tmp_path)
    db = open_db(tmp_path / "ident.db")
    first = _pool(db, gate, 300, seed=11, bench=True)
    _rate(db, "ann", PLANNED)  # the plan completes on the first pool; nobody looks
    db.conn.close()
    shutil.copyfile(tmp_path / "ident.db", tmp_path / "looked.db")
    looked = aggregate(open_db(tmp_path / "looked.db"))  # a look before the new pool: this freezes the decision
    assert not looked.interim

    db = open_db(tmp_path / "ident.db")
    made = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=300, raters_per_pair=1, raters=2, pass_rate=0.8,
                                          prescreen_accuracy=0.9, queue_order=False, gate_path=gate, seed=12,
                                          identical_share=0.99))
    # joined as draw_queue joins it (the gate's quotas: one rating, no second), but without its settle, which would
    # freeze the decision at once (the same one, checked below): the study is kept undecided, as a study whose plan
    # completed with nobody looking was before a join stored its decision, for the third pool below
    assert draw_queue_order(db, made["experiment_id"], None, 1, 0.0) == 300 and made["experiment_id"] != first
    ratings = load_ratings(db)
    assert ratings.identical.sum() > 250  # the new pool is nearly all identical
    db.conn.close()
    shutil.copyfile(tmp_path / "ident.db", tmp_path / "open.db")  # undecided: a third pool can still join its study
    db = open_db(tmp_path / "ident.db")
    agg = aggregate(db)  # the first look comes after the new pool
    assert not agg.interim and agg.verdict.decision == looked.verdict.decision
    mine = agg.tables["non_inferiority"].set_index("criterion")
    theirs = looked.tables["non_inferiority"].set_index("criterion")
    cols = ["pairs", "identical", "difference", "ci_low", "ci_high"]
    assert mine[cols].equals(theirs[cols]), (mine[cols], theirs[cols])
    assert (mine["identical"] == 0).all()
    stored = [db.execute("SELECT completed_rating_id, sample_json FROM decisions").fetchone(),
              open_db(tmp_path / "looked.db").execute("SELECT completed_rating_id, sample_json FROM decisions").fetchone()]
    assert stored[0] == stored[1]
    # The count and the choice agree at every size, also for a later pool of identical pairs only (it enters whole
    # once the order before it is used up, and not before).
    from evalkit.aggregate.verdict import identical_by_count, with_identical

    from dataclasses import replace

    db = open_db(tmp_path / "open.db")
    made = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=40, raters_per_pair=1, raters=2, pass_rate=0.8,
                                          prescreen_accuracy=0.9, queue_order=False, gate_path=gate, seed=13))
    draw_queue(db, made["experiment_id"])
    ratings = load_ratings(db)
    third = ratings.rank >= 2  # its epoch: every pair of it taken as identical
    assert third.sum() == 40
    ratings = replace(ratings, pair_identical=ratings.identical | third)
    order = in_queue_order(ratings, 1)[0]
    counts = identical_by_count(ratings, order)
    for k in (0, 1, PLANNED, 299, 300, len(order) - 1, len(order)):
        assert with_identical(ratings, order, k).identical.sum() == counts[k], k
    at = {k: with_identical(ratings, order, k).identical for k in (len(order) - 1, len(order))}
    assert not at[len(order) - 1][third].any() and at[len(order)][third].all()  # whole, once reached, not before


def test_a_later_pool_of_identical_pairs_waits_for_every_earlier_pair_to_be_rated(tmp_path):
    """Verdict audit, 2026-12-04: a later pool whose pairs are all identical (greedy float32 decoding) entered whole
    beside the first rated pair, since the test "every earlier pair is among the first k" ran on the pairs complete so
    far rather than on the whole order: 60 of 300 first-pool pairs rated counted as 260 decided, and a decision froze
    at the study's first rating on 1 rated pair and 99 identical ones. It now waits for the whole earlier order."""
    from evalkit.aggregate.verdict import complete_count, decision_sample

    gate = _gate(tmp_path)
    db = open_db(tmp_path / "later.db")
    _pool(db, gate, 300, seed=1, bench=True)
    _rate(db, "ann", 30)  # rating has begun
    made = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=200, raters_per_pair=1, raters=2, pass_rate=0.8,
                                          queue_order=False, gate_path=gate, seed=2, identical_share=0.99,
                                          bench=False))
    with db.conn:  # every pair of the later pool identical (the simulation leaves one or two differing)
        db.conn.execute("UPDATE generations SET token_hash = (SELECT o.token_hash FROM pairs p JOIN generations o ON "
                        "o.id = p.ordinary_generation_id WHERE p.assisted_generation_id = generations.id) WHERE id IN "
                        "(SELECT assisted_generation_id FROM pairs WHERE experiment_id = ?)", [made["experiment_id"]])
    draw_queue(db, made["experiment_id"])  # a later rating epoch, all identical
    _rate(db, "bob", 30)
    ratings = load_ratings(db)
    assert ratings.identical.sum() == 200 and (ratings.rank[ratings.identical] >= 1).all()
    assert complete_count(ratings, 1) == 60  # the first pool's rated pairs alone
    sample, decided = decision_sample(ratings, 1, PLANNED)
    assert decided == 60 and sample.identical.sum() == 0
    agg = aggregate(db)
    assert agg.interim and agg.verdict.decision == "INSUFFICIENT DATA"
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 0  # nothing frozen
    assert (agg.tables["non_inferiority"]["identical"] == 0).all()


def test_a_pool_generated_before_and_stored_after_the_completing_rating_never_enters_the_decision(tmp_path):
    """A pair's created_at is when its sample was generated. A pool generated while raters rated, which joined the
    study (its order drawn; its accelerate shards merged) only after the rating that completed the planned sample,
    counted as stored by that rating when the decision was first looked at later (the app's immediate freeze failed):
    its pairs entered the speed figure of a study without a benchmark. Pairs are now stamped when they join
    (pairs.stored_at, migration 027), and the decision is the one a look before the pool joined froze."""
    import json
    import shutil

    from evalkit.store import set_queue_seed

    gate = _gate(tmp_path)
    db = open_db(tmp_path / "late.db")
    _pool(db, gate, 150, seed=21)  # no benchmark: the pool's own runs are the speed figure
    late = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=60, raters_per_pair=1, raters=2, pass_rate=0.8,
                                          queue_order=False, gate_path=gate, seed=22, bench=False))["experiment_id"]
    set_queue_seed(db, late, 777)  # being made: generated now, not served until its order is drawn
    _rate(db, "ann", PLANNED)  # the planned sample completes on the first pool, with nobody looking
    db.conn.close()
    shutil.copyfile(tmp_path / "late.db", tmp_path / "looked.db")
    looked = open_db(tmp_path / "looked.db")
    aggregate(looked)  # a look before the late pool joined freezes the decision

    db = open_db(tmp_path / "late.db")
    assert draw_queue(db, late) == 60  # the late pool joins after the completing rating
    completed = db.execute("SELECT MAX(created_at) FROM ratings").fetchone()[0]
    assert db.execute("SELECT MAX(created_at) FROM pairs WHERE experiment_id = ?", [late]).fetchone()[0] < completed
    agg = aggregate(db)  # the first look comes after it: the decision is rebuilt as of the completing rating
    assert not agg.interim
    speed, ours = (json.loads(d.execute("SELECT speed_json FROM decisions").fetchone()[0]) for d in (looked, db))
    assert speed["source"] == ours["source"] and speed["matched_pairs"] == 150
    assert ours == speed, (ours, speed)


def _greedy_later_pool(tmp_path, said: list):
    """A study of 60 rated (so closed) pairs over five prompts, then a later pool of 100 whose pairs are about 30%
    identical and whose differing pairs of writing-01 to writing-03 repeat the texts of a closed pair of their prompt
    (greedy decoding repeats a prompt's outputs), finished by the real end of `evalkit generate` (study.pairs.
    _finish_pool: its thinning of revealed copies, then the queue's order). Returns (db, later experiment id, the
    later pool's generated identical and differing pairs, and those repeating a revealed text)."""
    from types import SimpleNamespace

    import evalkit.study.pairs as pairs_mod

    gate = _gate(tmp_path)
    path = tmp_path / "greedy.db"
    db = open_db(path)
    _pool(db, gate, 60, seed=31)
    _rate(db, "ann", 60)  # every first-pool pair closed: its reveal told ann which path wrote each text
    later = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=100, raters_per_pair=1, raters=2, pass_rate=0.8,
                                           queue_order=False, gate_path=gate, seed=32, identical_share=0.3,
                                           bench=False))["experiment_id"]
    ident = f"{pairs_mod.IDENTICAL.format(p='p.')}"
    closed = dict(db.execute("""SELECT p.prompt_id, MIN(g.text) FROM pairs p JOIN generations g ON
                                g.id = p.ordinary_generation_id WHERE p.experiment_id != ? GROUP BY p.prompt_id""",
                             [later]))
    copies = [(closed[pid], gen) for gen, pid in db.execute(
        f"""SELECT p.ordinary_generation_id, p.prompt_id FROM pairs p WHERE p.experiment_id = ? AND NOT {ident}
            AND p.prompt_id IN ('writing-01', 'writing-02', 'writing-03')""", [later])]
    with db.conn:
        db.conn.executemany("UPDATE generations SET text = ? WHERE id = ?", copies)
    identical, differing = (db.execute(f"SELECT COUNT(*) FROM pairs p WHERE p.experiment_id = ? AND {w}{ident}",
                                       [later]).fetchone()[0] for w in ("", "NOT "))
    db.conn.close()
    cfg = SimpleNamespace(pool=SimpleNamespace(gold_rate=0.0))
    pairs_mod._finish_pool(cfg, path, later, {}, pairs_mod.PoolResult(later, 0, 0, 0), said.append)
    return open_db(path), later, identical, differing, len(copies)


def test_a_thinned_later_pool_enters_the_decision_in_its_generated_share_of_identical_pairs(tmp_path):
    """Sceptic audit, 2026-12-06: a later pool drops the pairs that repeat a text a closed pair revealed (blinding),
    but identical pairs never repeat a revealed text (they are never rated), so the thinning kept every exact zero
    and dropped the differing pairs whose texts raters had met: here 40 of 73, leaving 27 identical pairs beside 33
    differing ones, a 45% share of zeros for the 27% the pool generated (under greedy decoding every differing prompt
    rated before goes, and a pool can end all zeros). Where the earlier pools run out, those pairs fill the decision
    sample, chosen by what the pairs say and leaning towards KEEP: a drop d on the differing pairs read as 0.55 d over
    the pool's pairs left for 0.73 d over those it generated. The repeated pairs now stay in the queue's random
    order, withheld from every rater, and count at the worst where the sample reaches them: the later pool enters in
    the share of identical pairs it generated, exactly, and the sample is the head of the random order."""
    from evalkit.aggregate.verdict import decision_sample

    said: list = []
    db, later, identical, differing, copies = _greedy_later_pool(tmp_path, said)
    assert identical >= 20 and copies >= 20  # the thinning has something to lean on
    assert any(f"{copies} pair(s) of this pool repeat a text of a pair already closed" in line for line in said), said
    served = set()
    while (view := next_pair(db, "bob", APP.ratings_per_pair)) is not None:  # a rater who never met a text
        served.add(view.pair_id)
        _rate(db, "bob", 1)
    mine = {r[0] for r in db.execute("SELECT id FROM pairs WHERE experiment_id = ? AND kind = 'study'", [later])}
    assert served <= mine and len(served) == differing - copies  # a repeated pair reaches no rater

    ratings = load_ratings(db)
    sample, decided = decision_sample(ratings, 1, 60 + identical + differing)
    in_later = np.isin(np.array(ratings.pair_ids), sorted(mine))
    rated_later = np.zeros(ratings.n_pairs, bool)
    rated_later[sample.pair] = True
    zeros, rated = int((sample.identical & in_later).sum()), int((rated_later & in_later).sum())
    unknown = int((sample.unknown & in_later).sum())
    assert decided == 60 + identical + differing
    assert (zeros, rated, unknown) == (identical, differing - copies, copies)  # the pool as generated
    assert zeros / (zeros + rated + unknown) == identical / (identical + differing)
    at_plan = int(decision_sample(ratings, 1, PLANNED)[0].unknown.sum())  # the decision: the first 100 decided
    assert at_plan and (aggregate(db).tables["non_inferiority"]["worst_case_pairs"] == at_plan).all()


def _all_identical(db, experiment_id: int) -> None:
    """Every pair of this pool identical (the simulation leaves one or two differing)."""
    with db.conn:
        db.conn.execute("UPDATE generations SET token_hash = (SELECT o.token_hash FROM pairs p JOIN generations o ON "
                        "o.id = p.ordinary_generation_id WHERE p.assisted_generation_id = generations.id) WHERE id IN "
                        "(SELECT assisted_generation_id FROM pairs WHERE experiment_id = ?)", [experiment_id])


def test_a_later_pool_that_needs_no_rating_completes_the_decision_when_it_joins_not_before(tmp_path):
    """Statistics audit, 2026-12-06: a later pool whose pairs are all identical needs no rating, so with every earlier
    pair rated it completes the planned sample as it joins. The decision was dated at the last rating, before the
    pool's pairs existed in the study, and what "stored by the decision" filters by (benchmarks, the pre-screen's
    population) ran on that earlier moment. It is now dated when the pool joined (its pairs' stored_at), and stored
    as the pool joins (it was stored only at the next rating or reader, and the queue served the settled study until
    then)."""
    gate = _gate(tmp_path)
    db = open_db(tmp_path / "joins.db")
    _pool(db, gate, 60, seed=41)  # fewer pairs than the plan: rating them all leaves the study interim
    _rate(db, "ann", 60)
    assert aggregate(db).interim and db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 0
    last_rating = db.execute("SELECT MAX(created_at) FROM ratings").fetchone()[0]
    later = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=200, raters_per_pair=1, raters=2, pass_rate=0.8,
                                           queue_order=False, gate_path=gate, seed=42, identical_share=0.99,
                                           bench=False))["experiment_id"]
    _all_identical(db, later)
    assert draw_queue(db, later) == 200  # joins now, every earlier pair rated: the plan is reached without a rating
    joined = db.execute("SELECT MAX(stored_at) FROM pairs WHERE experiment_id = ?", [later]).fetchone()[0]
    assert joined > last_rating
    # stored by the join itself (was: by the next rating or reader), so the queue serves the settled study no more
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 1
    assert unclosed_pairs(db) == 0

    agg = aggregate(db)
    assert not agg.interim
    completed_at, rating = db.execute("SELECT completed_at, completed_rating_id FROM decisions").fetchone()
    assert completed_at >= joined, (completed_at, joined)  # was the last rating's moment, before the pool joined
    assert rating == db.execute("SELECT MAX(id) FROM ratings").fetchone()[0]  # the data as of the last rating
    assert agg.frozen.completed_at == completed_at


def test_only_a_withheld_pair_counts_as_withheld_and_old_withheld_pairs_keep_their_meaning(tmp_path, monkeypatch):
    """Statistics audit, 2026-12-06: a pair withheld from every rater was known only by its closing bearing the instant
    its pool joined (closed_pairs.closed_at = pairs.stored_at), so any other closing at that instant (a decision
    stored in the same millisecond as a pool joined) made a pair withheld, counted at the worst. It is now a column
    (pairs.withheld, migration 029), which marks the pairs an older release withheld the same way."""
    from evalkit.store import migrations

    gate = _gate(tmp_path)
    with monkeypatch.context() as m:  # the database as the release before 029 left it
        m.setattr(migrations, "MIGRATIONS", [x for x in migrations.MIGRATIONS if x[1] is not migrations._m029_pair_withheld])
        old = open_db(tmp_path / "old.db")
        pool = _pool(old, gate, 20, seed=51)
        unrated = [r[0] for r in old.execute("SELECT id FROM pairs WHERE experiment_id = ? AND kind = 'study' "
                                             "ORDER BY queue_rank DESC LIMIT 2", [pool])]
        with old.conn:  # withheld as that release did: closed at the instant its pool joined
            old.conn.execute("INSERT INTO closed_pairs (pair_id, closed_at) SELECT id, stored_at FROM pairs WHERE id = ?",
                             [unrated[0]])
        old.conn.close()
    db = open_db(tmp_path / "old.db")
    assert dict(db.execute("SELECT id, withheld FROM pairs WHERE id IN (?, ?)", unrated)) == {unrated[0]: 1,
                                                                                               unrated[1]: 0}
    ratings = load_ratings(db)
    assert [ratings.pair_ids[i] for i in np.flatnonzero(ratings.withheld)] == [unrated[0]]

    with db.conn:  # another closing at the instant the pair joined (say a decision stored in that millisecond)
        db.conn.execute("INSERT INTO closed_pairs (pair_id, closed_at) SELECT id, stored_at FROM pairs WHERE id = ?",
                        [unrated[1]])
    ratings = load_ratings(db)
    assert [ratings.pair_ids[i] for i in np.flatnonzero(ratings.withheld)] == [unrated[0]]  # not withheld: closed


def test_a_pool_still_being_made_is_no_part_of_a_look(tmp_path):
    """A pool being made (its queue seed stored, its order not drawn: not served, no part of the study yet) had its
    identical pairs counted by a look in the first pool's proportion, since its pairs have no rank yet: with every pair
    of a first pool of 60 rated, 200 identical pairs of a pool still generating made a look of 100 planned pairs
    complete on 60 rated ones. Its pairs now count only once it joins (its stored_at), as in the frozen decision."""
    from evalkit.aggregate.verdict import complete_count
    from evalkit.store import set_queue_seed

    gate = _gate(tmp_path)
    db = open_db(tmp_path / "making.db")
    _pool(db, gate, 60, seed=61)
    _rate(db, "ann", 60)
    later = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=200, raters_per_pair=1, raters=2, pass_rate=0.8,
                                           queue_order=False, gate_path=gate, seed=62, identical_share=0.99,
                                           bench=False))["experiment_id"]
    _all_identical(db, later)
    set_queue_seed(db, later, 999)  # being made
    assert complete_count(load_ratings(db), 1) == 60
    agg = aggregate(db)
    assert agg.interim and db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 0
    assert draw_queue(db, later) == 200  # it joins: now it completes the plan (dated then)
    assert complete_count(load_ratings(db), 1) == 260 and not aggregate(db).interim


def test_pairs_withheld_for_repeating_a_revealed_text_are_named_as_such_where_the_verdict_counts_them(tmp_path):
    """Reader audit, 2026-12-06: a decision whose worst-case pairs were all withheld from every rater (a later pool's
    copies of a revealed text) said, in the verdict, the report and the card, and in Chinese, that they were "passed
    over by a rater and then rated only by raters the gold check leaves out": here nobody skipped and nobody was left
    out. Both causes are named now, in both languages."""
    from types import SimpleNamespace

    from evalkit.aggregate.verdict import interval_text
    from evalkit.ui.verdictzh import _fidelity

    db, _, _, _, _ = _greedy_later_pool(tmp_path, [])
    while next_pair(db, "bob", APP.ratings_per_pair) is not None:
        _rate(db, "bob", 1)
    aggregate(db)
    rows = json.loads(db.execute("SELECT verdict_json FROM decisions").fetchone()[0])["fidelity"]
    assert rows and all(r["worst_case_pairs"] for r in rows)
    assert not db.execute("SELECT COUNT(*) FROM ratings WHERE kind = 'skip'").fetchone()[0]
    assert "withheld from every rater for repeating a revealed text: counted at the worst" in interval_text(rows[0], 0.95)
    zh = _fidelity(SimpleNamespace(fidelity=rows), {"margin": 0.05, "claim": "these raters"})
    assert "因重复已揭晓的文本而不给任何评分者" in zh


def test_the_planned_sample_line_counts_pairs_without_an_outcome_apart_from_the_rated_ones(tmp_path):
    """Reader audit, 2026-12-06: with pairs withheld for repeating a revealed text at the head of the queue's order,
    the planned-sample line said "the decision uses 89 rated pairs ... each with its first 1 ratings" where 15 of them
    had no rating at all (74 rated pairs, 74 ratings in decisions.sample_json): a reader counting the rated pairs in
    the tables could not find the card's figure. The line now gives the rated pairs and, apart, those without an
    outcome, counted at the worst."""
    db, _, _, _, _ = _greedy_later_pool(tmp_path, [])
    while next_pair(db, "bob", APP.ratings_per_pair) is not None:
        _rate(db, "bob", 1)
    agg = aggregate(db)
    sample = json.loads(db.execute("SELECT sample_json FROM decisions").fetchone()[0])
    rated = db.execute(f"SELECT COUNT(DISTINCT pair_id) FROM ratings WHERE id IN ({','.join(map(str, sample))})"
                       ).fetchone()[0]
    unknown = int(agg.tables["non_inferiority"]["worst_case_pairs"].max())
    line = next(c.reason for c in agg.verdict.conditions if c.name == "planned sample")
    assert unknown and f"the decision uses {rated} rated pairs" in line, line
    assert f"{unknown} pairs there without an outcome (no ratings that count), counted at the worst" in line


_LARGE_TABLES = ("ratings", "pairs", "generations", "prescreen", "timing_runs", "batch_runs")


def _scans_per_row(db, statements: list[str]) -> list[tuple[str, str]]:
    """(table, statement) for each correlated subquery that reads a large table by a full scan: once per outer row,
    which is pairs × ratings row visits where the outer query runs over pairs."""
    import re

    found = []
    for sql in sorted(set(statements)):
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        aliases = {m.group(2) or m.group(1): m.group(1)
                   for m in re.finditer(r"\b(?:FROM|JOIN)\s+(\w+)(?:\s+(?:AS\s+)?(?!WHERE|ON|JOIN|LEFT|INNER|GROUP|"
                                        r"ORDER|LIMIT|USING|NATURAL|CROSS)(\w+))?", sql, re.I)}
        nodes = {r[0]: (r[1], r[3]) for r in db.conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()}

        def correlated(i):
            while i in nodes:
                parent, detail = nodes[i]
                if detail.startswith("CORRELATED"):
                    return True
                i = parent
            return False

        for parent, detail in nodes.values():
            m = re.match(r"SCAN (\w+)", detail)
            if m and aliases.get(m.group(1), m.group(1)) in _LARGE_TABLES and correlated(parent):
                found.append((aliases.get(m.group(1), m.group(1)), sql))
    return found


def test_no_look_or_serve_reads_a_large_table_once_per_row(tmp_path):
    """Scale audit, 2026-12-06: the frozen decision's count of pairs never rated asked each pair "has it a rating?",
    which only the partial index ratings_once_per_rater (originals only) could answer, and a query that does not say
    so cannot use it: every pair scanned every rating, and one aggregate of 100,000 ratings (scripts/aggbench.py)
    took 20 s, its target 2 s. ratings_pair (migration 032) answers it; no statement of a look, a frozen decision's
    notes, the queue or its untakeable count scans a large table once per row of another."""
    from evalkit.rating.queue import untakeable

    gate = _gate(tmp_path)
    db = open_db(tmp_path / "scale.db")
    _pool(db, gate, PLANNED + 20, seed=61, bench=True)
    _rate(db, "ann", PLANNED)
    statements = []
    db.conn.set_trace_callback(statements.append)
    try:
        agg = aggregate(db)
        next_pair(db, "bob", APP.ratings_per_pair)
        untakeable(db, [r[0] for r in db.execute("SELECT id FROM pairs")], APP.ratings_per_pair)
    finally:
        db.conn.set_trace_callback(None)
    assert agg.frozen is not None  # the frozen decision's notes ran
    assert not _scans_per_row(db, statements)
