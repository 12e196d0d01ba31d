"""Raters per pair from the plan (issue #20, item 4): the gate's min_ratings_per_pair may be 1, with a random share
`second_rating_share` of the pairs rated twice. The share is drawn with the queue order and stored per pair
(wanted_ratings); the queue, the quota check, the reveal, the Results tab's counts, the decision sample and the
planning model all follow it. Gold pairs still go to at least two raters."""

from dataclasses import asdict

import numpy as np
import pytest

from evalkit.config import AppConfig
from evalkit.errors import EvalkitError
from evalkit.rating.queue import (
    Pending, RatingError, RatingInput, correct_rating, counts, is_closed, next_pair, progress, rater_reveal,
    results_open, skip_pair, submit_rating,
)
from evalkit.store import open_db
from evalkit.study.gate import Gate, frozen_values, gate_snapshot, legacy_keys, parse_gate
from evalkit.study.gold import add_gold_pairs
from evalkit.study.pairs import draw_queue
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.task.criteria import CRITERIA
from evalkit.task.prompts import load_prompts
from test_gold import gold_items, study_pool

# the app's own quota: bigger than any pair's, so a pair that closes at 1 or 2 closed at its stored quota
APP = AppConfig(ratings_per_pair=3)


def _pool(tmp_path, n: int, seed: int = 7, gold: int = 0, **gate) -> tuple:
    """A database with a pool of n study pairs (and `gold` gold pairs) under a gate with these keys, its queue order
    and quotas drawn with `seed` as `evalkit generate` draws them. Returns (db, experiment id)."""
    path = tmp_path / "gate.toml"
    path.write_text(gate_file_text(planned_pairs=0, **gate), encoding="utf-8")
    db = open_db(tmp_path / "q.db")
    exp = study_pool(db, n, gate=gate_snapshot(path))
    if gold:
        gold_items(db, exp, gold)
        assert add_gold_pairs(db, exp, load_prompts()) == gold
    assert draw_queue(db, exp, seed) == n + gold
    return db, exp


def _wanted(db, kind: str = "study") -> dict:
    return {r[0]: r[1] for r in db.execute("SELECT id, wanted_ratings FROM pairs WHERE kind = ? ORDER BY rowid",
                                           [kind])}


def answers(v: str = "pass") -> dict:
    return {c: v for c in CRITERIA}


def rate(db, pair_id: str, rater: str, app: AppConfig = APP) -> int:
    return submit_rating(db, app, RatingInput(pair_id, rater, answers(), answers("fail"), "A"))


# ---- the pool: which pairs are rated twice ---------------------------------------------------------------------


def test_the_pool_draw_marks_a_random_share_of_pairs_for_a_second_rating(tmp_path):
    db, exp = _pool(tmp_path, 600, seed=11, gold=6, min_ratings_per_pair=1, second_rating_share=0.25)
    wanted = _wanted(db)
    assert set(wanted.values()) == {1, 2}
    doubled = np.array([w == 2 for w in wanted.values()])
    assert abs(doubled.mean() - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 600)
    # re-derived from the stored seed, on a stream of its own (the queue ranks are those of the seed alone)
    seed = db.execute("SELECT queue_seed FROM experiments WHERE id = ?", [exp]).fetchone()[0]
    ranks = [r[0] for r in db.execute("SELECT queue_rank FROM pairs ORDER BY rowid")]
    assert ranks == np.random.default_rng(seed).random(606).tolist()
    kinds = [r[0] for r in db.execute("SELECT kind FROM pairs ORDER BY rowid")]
    second = np.random.default_rng([seed, 16]).random(606) < 0.25
    assert doubled.tolist() == [bool(s) for s, k in zip(second, kinds) if k == "study"]
    # independent of the order the queue serves: the doubled pairs are spread over it, not the first served
    study_ranks = np.array([q for q, k in zip(ranks, kinds) if k == "study"])
    assert 0.35 < study_ranks[doubled].mean() < 0.65
    # a gold pair's quota is drawn as a study pair's, from the same stream (attacker audit F1: gold pairs that always
    # wanted two ratings were told apart through the queue by a rater with two identities)
    gold_doubled = [w == 2 for w in _wanted(db, "gold").values()]
    assert gold_doubled == [bool(s) for s, k in zip(second, kinds) if k == "gold"]
    # drawn once: a second draw leaves every quota as it was
    assert draw_queue(db, exp) == 0 and _wanted(db) == wanted


def test_a_gold_pair_wants_as_many_ratings_as_a_study_pair_so_the_queue_cannot_tell_it(tmp_path):
    """Attacker audit F1: with one rating per pair every gold pair wanted two and nine study pairs in ten one. A rater
    holding a pair on screen under one identity was served the same pair under a second only when it wanted two,
    which flagged every gold pair before she rated it. The quotas of gold and study pairs now come from one draw:
    among pairs that want two, gold pairs are as common as they are in the pool."""
    db, _ = _pool(tmp_path, 400, seed=5, gold=200, min_ratings_per_pair=1, second_rating_share=0.25)
    gold = _wanted(db, "gold")
    assert set(gold.values()) == {1, 2}
    share = np.mean([w == 2 for w in gold.values()])
    assert abs(share - 0.25) < 4 * np.sqrt(0.25 * 0.75 / len(gold))
    # the probe, through the queue: a second identity is given the pair the first holds exactly when it wants two;
    # gold pairs that want one now pass it unflagged, as study pairs do
    probed = {("gold", 1): 0, ("gold", 2): 0, ("study", 1): 0, ("study", 2): 0}
    for i in range(60):
        first = next_pair(db, f"r{i}", 1)
        second = next_pair(db, f"r{i}-again", 1)
        kind, wanted, rated = db.execute("SELECT kind, wanted_ratings, (SELECT COUNT(*) FROM ratings r WHERE "
                                         "r.pair_id = p.id) FROM pairs p WHERE id = ?", [first.pair_id]).fetchone()
        assert (second.pair_id == first.pair_id) == (wanted - rated == 2)
        probed[kind, wanted] += rated == 0
        rate(db, first.pair_id, f"r{i}")
        rate(db, second.pair_id, f"r{i}-again")
    assert probed["gold", 1] > 0 and probed["study", 2] > 0


def test_from_two_ratings_per_pair_on_the_share_is_ignored(tmp_path):
    db, _ = _pool(tmp_path, 40, min_ratings_per_pair=3, second_rating_share=0.5, gold=2)
    assert set(_wanted(db).values()) == {3} and set(_wanted(db, "gold").values()) == {3}


def test_a_pool_without_a_frozen_gate_keeps_the_app_s_quota(tmp_path):
    db = open_db(tmp_path / "q.db")
    exp = study_pool(db, 5)  # no gate frozen
    assert draw_queue(db, exp, 3) == 5
    assert set(_wanted(db).values()) == {None}
    assert next_pair(db, "ann", 1) is not None and progress(db, "ann", 1).counts() == (0, 5)


def test_a_gate_frozen_before_the_key_rates_no_pair_twice(tmp_path):
    """gate.LEGACY: a study frozen by a version without second_rating_share keeps 0 (its plan assumed every pair gets
    min_ratings_per_pair), while a gate frozen today without the key gets the default."""
    assert Gate().second_rating_share == 0.1
    path = tmp_path / "g.toml"
    path.write_text("margin = 0.05\nplanned_pairs = 20\nmin_ratings_per_pair = 1\n", encoding="utf-8")
    today = gate_snapshot(path)
    assert frozen_values(today)["second_rating_share"] == 0.1 and legacy_keys(today) == []
    old = today | {"values": {k: v for k, v in today["values"].items() if k != "second_rating_share"}}
    assert frozen_values(old)["second_rating_share"] == 0.0 and legacy_keys(old) == ["second_rating_share"]
    # a pool under such a study rates every pair once
    db = open_db(tmp_path / "old.db")
    exp = study_pool(db, 50, gate=old)
    draw_queue(db, exp, 5)
    assert set(_wanted(db).values()) == {1}
    for bad in (-0.1, 1.5):
        with pytest.raises(EvalkitError, match=r"second_rating_share = .* is outside \[0.0, 1.0\]"):
            parse_gate(f"second_rating_share = {bad}\n", "g.toml")


# ---- the queue and the reveal follow each pair's quota ------------------------------------------------------------


def test_the_queue_serves_a_single_pair_to_one_rater_and_a_doubled_pair_to_two(tmp_path):
    db, _ = _pool(tmp_path, 20, seed=4, min_ratings_per_pair=1, second_rating_share=0.4)
    wanted = _wanted(db)
    doubled = {p for p, w in wanted.items() if w == 2}
    assert 0 < len(doubled) < 20
    met = {}
    for rater in ("ann", "bob", "cat"):  # the app's quota (3) is never reached: each pair's own is
        met[rater] = set()
        while (view := next_pair(db, rater, APP.ratings_per_pair)) is not None:
            rate(db, view.pair_id, rater)
            met[rater].add(view.pair_id)
    assert met["ann"] == set(wanted) and met["bob"] == doubled and met["cat"] == set()
    n = dict(db.execute("SELECT pair_id, COUNT(*) FROM current_ratings GROUP BY pair_id").fetchall())
    assert n == wanted
    assert progress(db, "cat", 3).counts() == (0, 0) and counts(db, 3)["pairs_complete"] == 20
    assert counts(db, 3)["wanted"] == {1: 20 - len(doubled), 2: len(doubled)}
    from evalkit.ui.results import counts_markdown

    assert (f"| pairs with their 1 rating ({20 - len(doubled)} pairs) or 2 ({len(doubled)} pairs) (complete) | 20 |"
            in counts_markdown(counts(db, 3)))
    # one more rating is refused under the write lock, at the pair's own quota
    single = next(p for p in wanted if p not in doubled)
    with pytest.raises(RatingError, match="already has its 1 ratings"):
        rate(db, single, "cat")
    with pytest.raises(RatingError, match="already has its 2 ratings"):
        rate(db, next(iter(doubled)), "cat")


def test_the_reveal_waits_for_the_pair_s_own_quota(tmp_path):
    db, _ = _pool(tmp_path, 20, seed=4, min_ratings_per_pair=1, second_rating_share=0.4)
    wanted = _wanted(db)
    single = next(p for p, w in wanted.items() if w == 1)
    double = next(p for p, w in wanted.items() if w == 2)
    rate(db, single, "ann")
    assert is_closed(db, single, 3) and not isinstance(rater_reveal(db, "ann", single, 3), Pending)
    rate(db, double, "ann")
    pending = rater_reveal(db, "ann", double, 3)
    assert not is_closed(db, double, 3) and isinstance(pending, Pending) and pending.needed == 1
    rate(db, double, "bob")
    assert is_closed(db, double, 3) and not isinstance(rater_reveal(db, "ann", double, 3), Pending)
    assert {r[0] for r in db.execute("SELECT pair_id FROM closed_pairs")} == {single, double}


def test_gold_pairs_go_to_as_many_raters_as_study_pairs(tmp_path):
    db, _ = _pool(tmp_path, 10, gold=3, min_ratings_per_pair=1, second_rating_share=0.0)
    gold = set(_wanted(db, "gold"))
    met = {}
    for rater in ("ann", "bob"):
        met[rater] = set()
        while (view := next_pair(db, rater, APP.ratings_per_pair)) is not None:
            rate(db, view.pair_id, rater)
            met[rater].add(view.pair_id)
    assert gold <= met["ann"] and len(met["ann"]) == 13 and met["bob"] == set()


def test_the_app_serves_and_reveals_by_the_pool_s_quota(tmp_path):
    """Through the Rate tab's handlers (app.ratings_per_pair = 3, the pool's gate 1 per pair and a doubled share):
    a single pair's reveal comes with its one rating, a doubled pair's waits for the second rater's."""
    from test_rate_handlers import REVEALING, Tab

    _pool(tmp_path, 6, seed=4, min_ratings_per_pair=1, second_rating_share=0.5)[0].conn.close()
    tab = Tab(tmp_path / "q.db", {p.id: p for p in load_prompts()}, ratings_per_pair=3)
    ui = tab.ui
    db = open_db(tmp_path / "q.db")
    wanted = _wanted(db)
    s, out = tab.sign_in("ann")
    assert f"0 / {len(wanted)}" in out[ui.who]
    seen = {"single": 0, "double": 0}
    while s.pair_id is not None:
        pair = s.pair_id
        out = tab.h.submit(s, *tab.form())
        if wanted[pair] == 1:
            assert "### 揭晓" in out[ui.reveal_md] and "ordinary" in out[ui.reveal_md]
            seen["single"] += 1
        else:
            this = out[ui.reveal_md].split("#### 你的揭晓")[0]  # the list below shows closed pairs' reveals
            assert "待揭晓" in this and not REVEALING.search(this), "revealed before it closed"
            assert "还需要其他评分者再评 1 次" in this  # its quota of 2, not the app's 3
            seen["double"] += 1
        s = tab.h.next_screen(out[ui.session])[ui.session]
    assert seen["single"] and seen["double"]
    t, out = tab.sign_in("bob")  # bob is offered the doubled pairs only
    assert f"0 / {seen['double']}" in out[ui.who] and wanted[t.pair_id] == 2
    out = tab.h.submit(t, *tab.form("fail", "pass", "B"))
    assert "ordinary" in out[ui.reveal_md]  # bob's rating closed it


# ---- the decision sample and the agreement -----------------------------------------------------------------------


def _synthetic(tmp_path, pairs: int, planned: int, share: float = 0.3, seed: int = 3):
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=planned, margin=0.3, min_ratings_per_pair=1,
                                   second_rating_share=share), encoding="utf-8")
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=pairs, raters_per_pair=1, second_rating_share=share, raters=10,
                                   queue_order=True, gate_path=str(gate), seed=seed))
    return db


def test_the_decision_sample_completes_each_pair_at_its_own_quota(tmp_path):
    from evalkit.aggregate import aggregate
    from evalkit.aggregate.data import load_ratings
    from evalkit.aggregate.verdict import complete_count, decision_sample, in_queue_order

    db = _synthetic(tmp_path, 200, 180)
    ratings = load_ratings(db)
    wanted = ratings.wanted(1)
    per_pair = np.bincount(ratings.pair, minlength=ratings.n_pairs)
    assert (per_pair == wanted).all() and set(np.unique(wanted)) == {1, 2}
    assert complete_count(ratings, 1) == 200
    # a doubled pair with one of its two ratings is not complete (the gate's 1 per pair is only the fallback)
    doubled = np.flatnonzero(wanted == 2)
    second = np.zeros(len(ratings), bool)  # the later of each doubled pair's two ratings
    for p in doubled:
        mine = np.flatnonzero(ratings.pair == p)
        second[mine[np.argmax(ratings.rating_id[mine])]] = True
    partial = ratings.select(~second)
    pairs, done, _run = in_queue_order(partial, 1)
    assert set(pairs[~done]) == set(doubled) and done.sum() == 200 - len(doubled)
    # decided pairs are those ahead of the first pair still waiting in the queue's order
    assert complete_count(partial, 1) == int((ratings.rank < ratings.rank[doubled].min()).sum())
    sample, decided = decision_sample(ratings, 1, 180)
    in_sample = np.unique(sample.pair)
    assert decided == 200 and len(in_sample) == 180
    assert (np.bincount(sample.pair, minlength=ratings.n_pairs)[in_sample] == wanted[in_sample]).all()
    # without stored quotas the gate's min_ratings_per_pair decides, as before
    legacy = ratings.select(np.ones(len(ratings), bool))
    legacy.pair_wanted = legacy.pair_rank = None  # a pool made before quotas (and the order drawn with them)
    assert complete_count(legacy, 2) == len(doubled) and complete_count(legacy, 1) == 200

    agg = aggregate(db)
    assert not agg.interim and agg.tables["counts"]["complete_pairs"].iloc[0] == 200
    ni = agg.tables["non_inferiority"]
    assert (ni["pairs"] == 180).all() and np.isfinite(ni["ci_low"]).all() and (ni["ci_low"] < ni["ci_high"]).all()
    # agreement is measured on the pairs rated twice (items: pair x side), and says on how many
    agreement = agg.tables["agreement"].set_index("item")
    assert (agreement.loc[list(CRITERIA), "pairable_items"] == 2 * len(doubled)).all()
    assert agreement.loc["preference", "pairable_items"] == len(doubled)


# ---- the planning model -------------------------------------------------------------------------------------------


def test_the_model_simulates_one_rating_and_a_doubled_share():
    from evalkit.study.plan import StudyModel, simulate_answers

    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, raters_per_pair=1, second_rating_share=0.2, raters=10,
                       identical_share=0.25)
    model.check()
    sim = simulate_answers(model, 400, 20, {}, np.random.default_rng(1))
    per_pair = np.bincount(sim["pair"], minlength=8000)
    rated = ~sim["same"]
    assert set(np.unique(per_pair[rated])) == {1, 2} and (per_pair[~rated] == 0).all()
    assert (per_pair[rated] == sim["wanted"][rated]).all()
    assert abs((per_pair[rated] == 2).mean() - 0.2) < 0.03
    twice = np.flatnonzero(np.diff(sim["pair"]) == 0)
    assert (sim["rater"][twice] != sim["rater"][twice + 1]).all()  # two different raters
    # expected ratings count the pairs rated twice; identical pairs need none
    assert model.expected_ratings(400) == round(300 * 1.2)
    assert abs(model.expected_ratings(400) * 20 - len(sim["pair"])) < 0.05 * len(sim["pair"])
    assert StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, raters_per_pair=3,
                      second_rating_share=0.2).expected_ratings(100) == 300  # ignored from 2 per pair on
    for bad in (dict(second_rating_share=1.5), dict(second_rating_share=0.1, raters=1)):
        with pytest.raises(EvalkitError):
            StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, raters_per_pair=1, **bad).check()


def test_one_rating_per_pair_keeps_the_false_keep_rate_at_the_margin():
    """The gate's own analysis on simulated studies of one rating per pair with 10% rated twice: when a criterion
    truly drops by the margin it passes in at most the one-sided level (Monte-Carlo slack), and with no drop most
    studies pass at the size that gives it power."""
    from evalkit.study.plan import StudyModel, run_studies

    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters_per_pair=1,
                       second_rating_share=0.1, raters=12, rater_sd=0.3)
    c = CRITERIA[0]
    margin = 0.15
    dropped = run_studies(model, 400, 400, {c: margin}, [5], margin, 0.95, 2000, criteria=(c,))[c]
    held = run_studies(model, 400, 200, {}, [6], margin, 0.95, 2000, criteria=(c,))[c]
    assert dropped.mean() <= 0.025 + 2.5 * np.sqrt(0.025 * 0.975 / 400)
    assert held.mean() > 0.8


def test_plan_takes_the_gate_s_share_unless_told(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.study.plan import search

    seen = []

    def fake(model, *args, **kwargs):
        seen.append(model)
        raise EvalkitError("stop here", "this test only reads the model")

    monkeypatch.setattr(search, "plan_study", fake)
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=0, min_ratings_per_pair=1, second_rating_share=0.2))
    config = tmp_path / "c.toml"
    config.write_text(f'gate_file = "{gate}"\n')
    runner = CliRunner()
    runner.invoke(cli, ["plan", "--config", str(config)])
    runner.invoke(cli, ["plan", "--config", str(config), "--second-rating-share", "0.3"])
    assert [(m.raters_per_pair, m.second_rating_share) for m in seen] == [(1, 0.2), (1, 0.3)]
    assert asdict(seen[0])["second_rating_share"] == 0.2


# ---- the roster the plan assumed: a share per rater ---------------------------------------------------------


def test_a_rater_who_has_given_their_share_gets_no_pair_and_cannot_store_more(tmp_path):
    db, _exp = _pool(tmp_path, 12, gold=2, min_ratings_per_pair=1)
    app = AppConfig(ratings_per_pair=3, max_ratings_per_rater=3)
    share = app.max_ratings_per_rater
    first = next_pair(db, "ann", 3, share).pair_id
    skip_pair(db, app, "ann", first, "cannot read it")  # a skip is no rating: it does not use the share
    rated = []
    for _ in range(share):
        pair = next_pair(db, "ann", 3, share).pair_id
        rated.append((rate(db, pair, "ann", app), pair))
    rid, pair = rated[0]
    correct_rating(db, app, rid, RatingInput(pair, "ann", answers("fail"), answers(), "B"))  # nor does a correction
    assert next_pair(db, "ann", 3, share) is None
    done, total = progress(db, "ann", 3, share).counts()
    assert done == total == share + 1  # the skipped pair and the rated ones; nothing more is open to her
    assert not results_open(db, "ann", 3, 2, share)[0] and "share of 3" in results_open(db, "ann", 3, 2, share)[1]
    # a submission that does not come through the queue (the API, another tab) is refused under the write lock
    other = next_pair(db, "bob", 3, share).pair_id
    stored = db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
    with pytest.raises(RatingError) as e:
        rate(db, other, "ann", app)
    assert "share of 3 ratings" in e.value.what and "max_ratings_per_rater" in e.value.what
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == stored
    # the others go on; raising the share (a setting, not the frozen gate) lets her go on too
    assert rate(db, other, "bob", app)
    assert next_pair(db, "ann", 3, 4) is not None and next_pair(db, "ann", 3, 0) is not None
