"""The decision sample is the head of the queue's random order, whatever raters skip.

Raters may skip a pair with a reason. A skipped pair goes to the next rater and completes later, and a pair every
rater avoids never completes. If the decision took the first pairs to *complete*, it would leave out exactly the
outputs raters avoid, and those are the ones with a visible fault, more often on the path that is worse: the verdict
would judge the outputs raters chose to rate. These tests play that through the real queue (next_pair, skip_pair,
submit_rating) and the real aggregate: the decision waits for the skipped pairs at the head of the order, says so,
and once they are rated it decides on exactly the first planned pairs of the random order."""

import json

import numpy as np
import pytest

from evalkit.aggregate import aggregate
from evalkit.aggregate.data import load_ratings
from evalkit.aggregate.verdict import complete_count, decision_sample, in_queue_order
from evalkit.config import AppConfig
from evalkit.rating.queue import RatingInput, next_pair, skip_pair, submit_rating
from evalkit.store import open_db
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.task.criteria import CRITERIA

APP = AppConfig(ratings_per_pair=1)
DROPS = "schedule"  # the criterion on which the assisted path is truly worse, by 0.3
PLANNED = 100


def _pool(tmp_path):
    """500 unrated study pairs in a random queue order, one rating wanted each; the pre-screen rows hold the truth
    (accuracy 1), from which the simulated raters answer. Assisted truly fails `schedule` 30 points more often."""
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=PLANNED, margin=0.05, min_ratings_per_pair=1, second_rating_share=0,
                                   claim="these raters", ppi="off"), encoding="utf-8")
    db = open_db(tmp_path / "skips.db")
    build_study(db, SyntheticStudy(pairs=0, unrated_pairs=500, raters_per_pair=1, raters=3, pass_rate=0.95,
                                   drops={DROPS: 0.3}, prescreen_accuracy=1.0, queue_order=True,
                                   gate_path=str(gate), seed=11))
    return db


def _truth(db) -> dict:
    """pair id -> (answers on side A, answers on side B, whether the two sides differ on some criterion, the
    assisted - ordinary difference on `schedule`)."""
    passed = {(g, c): p for g, c, p in db.execute("SELECT generation_id, criterion, passed FROM prescreen")}
    out = {}
    for pid, a_gen, b_gen, o_gen, s_gen in db.execute(
            "SELECT id, a_generation_id, b_generation_id, ordinary_generation_id, assisted_generation_id FROM pairs "
            "WHERE kind = 'study'"):
        a = {c: "pass" if passed[(a_gen, c)] else "fail" for c in CRITERIA}
        b = {c: "pass" if passed[(b_gen, c)] else "fail" for c in CRITERIA}
        out[pid] = (a, b, a != b, passed[(s_gen, DROPS)] - passed[(o_gen, DROPS)])
    return out


def _rate(db, rater: str, truth: dict, skips_faults: bool, until=None) -> int:
    """One rater working through their queue: answers the truth, or (skips_faults) skips every pair whose two outputs
    differ (one of them visibly wrong), blind to which side is which. Stops when nothing is left or `until()`."""
    done = 0
    while (view := next_pair(db, rater, APP.ratings_per_pair)) is not None:
        a, b, differ, _d = truth[view.pair_id]
        if skips_faults and differ:
            skip_pair(db, APP, rater, view.pair_id, "one of the two is broken, I cannot compare them")
        else:
            submit_rating(db, APP, RatingInput(view.pair_id, rater, a, b, "tie"))
        done += 1
        if until is not None and until():
            break
    return done


@pytest.mark.slow  # about 15 s: some 700 queue requests and two dozen aggregates
def test_pairs_raters_skip_hold_the_decision_until_rated_and_then_enter_it(tmp_path):
    db = _pool(tmp_path)
    truth = _truth(db)
    for rater in ("ann", "bob"):  # both avoid every pair with a visible fault
        _rate(db, rater, truth, skips_faults=True)
    ranks = dict(db.execute("SELECT id, queue_rank FROM pairs WHERE kind = 'study'"))
    by_rank = sorted(ranks, key=ranks.get)
    rated = {r[0] for r in db.execute("SELECT pair_id FROM current_ratings")}
    assert len(rated) > PLANNED  # enough pairs were rated to reach the plan had the skipped ones been left out
    first_waiting = next(i for i, pid in enumerate(by_rank) if pid not in rated)
    assert first_waiting < PLANNED

    agg = aggregate(db)
    assert agg.interim and agg.verdict.decision == "INSUFFICIENT DATA"
    assert agg.tables["counts"]["complete_pairs"].iloc[0] == first_waiting
    waits = [n for n in agg.notes if "early in the queue's random order" in n]
    last_rated = max(i for i, pid in enumerate(by_rank[:PLANNED]) if pid in rated)
    holes = [pid for pid in by_rank[:last_rated] if pid not in rated]
    assert len(waits) == 1 and waits[0].startswith(f"{len(holes)} pair(s) early in the queue's random order")
    assert f"{len(holes)} of them skipped, {2 * len(holes)} skips in all" in waits[0]
    assert f"the {last_rated + 1 - len(holes) - first_waiting} rated pair(s) after them" in waits[0]
    # counts only: the note reaches raters who finished their queue, and names no pair and no side
    assert not any(w in waits[0] for w in ("assisted", "ordinary", *ranks))
    assert not any("passed over by a rater" in n for n in agg.notes)  # the pairs counted so far: none skipped

    # a rater who rates what is there gets the skipped pairs first (lowest rank first), and the plan completes
    _rate(db, "carol", truth, skips_faults=False, until=lambda: not aggregate(db).interim)
    agg = aggregate(db)
    assert not agg.interim and agg.verdict.decision == "DROP"
    row = agg.tables["non_inferiority"].set_index("criterion").loc[DROPS]
    assert row["pairs"] == PLANNED
    # the estimate is the truth of exactly the first PLANNED pairs of the random order, skipped ones included
    head = by_rank[:PLANNED]
    assert np.isclose(row["difference"], np.mean([truth[p][3] for p in head]))
    assert row["difference"] < -0.15  # what the pairs raters avoided hold: the drop the skippers would have hidden
    frozen_pairs = {r[0] for r in db.execute(
        "SELECT pair_id FROM ratings WHERE id IN (SELECT value FROM json_each((SELECT sample_json FROM decisions)))")}
    assert frozen_pairs == set(head)
    # the verdict says how many of them others passed over: their rater was chosen by what they show
    skipped = {r[0] for r in db.execute("SELECT pair_id FROM ratings WHERE kind = 'skip'")}
    chosen = [n for n in agg.notes if "passed over by a rater" in n]
    assert len(chosen) == 1 and chosen[0].startswith(f"{len(skipped & set(head))} of the {PLANNED} rated pairs")


def test_a_pair_that_lost_its_rating_to_the_gold_check_is_set_aside_not_waited_for(tmp_path):
    """The queue never serves a pair again once it has its quota of stored ratings, so a pair whose only rating came
    from a rater the gold check leaves out would hold the decision for ever; it is set aside instead (the exclusions
    do not look at the study pairs' texts), and the next pair of the order takes its place."""
    db = _pool(tmp_path)
    truth = _truth(db)
    _rate(db, "ann", truth, skips_faults=False, until=lambda: len(load_ratings(db)) >= 30)
    _rate(db, "mallory", truth, skips_faults=False, until=lambda: len(load_ratings(db)) >= 60)
    _rate(db, "ann", truth, skips_faults=False, until=lambda: len(load_ratings(db)) >= 90)
    ratings = load_ratings(db)
    assert complete_count(ratings, 1) == 90
    kept = ratings.without_raters(["mallory"])
    pairs, done, run = in_queue_order(kept, 1)
    assert run == 60 and done.sum() == 60 and len(pairs) == len(truth) - 30
    lost = {ratings.pair_ids[p] for p in np.unique(ratings.pair[ratings.rater == ratings.raters.index("mallory")])}
    assert not lost & {kept.pair_ids[p] for p in pairs}
    sample, decided = decision_sample(kept, 1, 50)
    assert decided == 60 and len(np.unique(sample.pair)) == 50


def test_a_pair_raters_passed_over_and_a_rater_the_gold_check_leaves_out_rated_keeps_its_place_at_the_worst(tmp_path):
    """Setting aside a pair that lost its rating to the gold check is a random pick only where nothing about the pair
    chose its rater. A pair the others skipped went to whoever rates what is there, and if she is the rater the gold
    check leaves out, setting aside her pairs leaves out exactly the outputs raters avoid, as taking pairs in the
    order they complete did: ann and bob skip every pair with a visible fault, mallory rates them and is left out,
    and every criterion passed on a true drop of 30 points (verdict audit, 2026-12-06). Such a pair keeps its place
    in the queue's order, its outcome unknown, counted at the worst: the interval covers the truth of exactly the
    first planned pairs of the order, and the criterion no longer passes. A pair of hers nobody passed over is still
    set aside."""
    from evalkit.aggregate.verdict import fidelity_rows

    db = _pool(tmp_path)
    truth = _truth(db)
    _rate(db, "mallory", truth, skips_faults=False, until=lambda: len(load_ratings(db)) >= 20)
    for rater in ("ann", "bob"):
        _rate(db, rater, truth, skips_faults=True, until=lambda: len(load_ratings(db)) >= 60)
    _rate(db, "mallory", truth, skips_faults=False, until=lambda: len(load_ratings(db)) >= 150)
    for rater in ("ann", "bob"):
        _rate(db, rater, truth, skips_faults=True)
    ratings = load_ratings(db)
    skipped = {r[0] for r in db.execute("SELECT pair_id FROM ratings WHERE kind = 'skip'")}
    hers = {ratings.pair_ids[p] for p in np.unique(ratings.pair[ratings.rater == ratings.raters.index("mallory")])}
    kept = ratings.without_raters(["mallory"])
    ranks = dict(db.execute("SELECT id, queue_rank FROM pairs WHERE kind = 'study'"))
    aside = hers - skipped  # her first 20 (and any she met after the skipped ones), which nobody passed over
    head = [p for p in sorted(ranks, key=ranks.get) if p not in aside][:PLANNED]
    unknown = (hers & skipped) & set(head)
    assert unknown and len(aside) >= 20

    pairs, _done, _run = in_queue_order(kept, 1)
    order = [kept.pair_ids[p] for p in pairs]
    assert not aside & set(order)  # set aside: nothing about them chose her, the next pairs take their places
    assert order[:PLANNED] == head  # the passed-over ones keep theirs
    sample, decided = decision_sample(kept, 1, PLANNED)
    assert decided >= PLANNED and {kept.pair_ids[p] for p in np.flatnonzero(sample.unknown)} == unknown
    rows = {r["criterion"]: r for r in fidelity_rows(sample, 0.95, 200, 0.05, "these raters")}
    row = rows[DROPS]
    assert row["pairs"] == PLANNED and row["worst_case_pairs"] == len(unknown)
    true = np.mean([truth[p][3] for p in head])
    assert true < -0.15 and row["ci_low"] <= true <= row["ci_high"]
    assert not row["ok"]
    # said in both languages
    from types import SimpleNamespace

    from evalkit.aggregate.verdict import interval_text
    from evalkit.ui.verdictzh import _fidelity

    assert f"({len(unknown)} without an outcome, passed over by a rater and then rated only by raters the gold check " \
           "leaves out" in interval_text(row, 0.95) and ": counted at the worst" in interval_text(row, 0.95)
    zh = _fidelity(SimpleNamespace(fidelity=list(rows.values())), {"margin": 0.05, "claim": "these raters"})
    assert f"决策样本中有 {len(unknown)} 对结果未知（曾被评分者跳过" in zh


def test_a_pair_the_queue_kept_from_a_rater_who_met_its_texts_keeps_its_place_at_the_worst(tmp_path):
    """Verdict audit, 2026-12-06: the queue serves no rater a pair holding a text of a pair she rated (greedy copies of
    one prompt), and serves it to the next rater instead; where that rater was the one the gold check leaves out, the
    pair was set aside as if nothing about it had chosen her, and the next pair of the order took its place. Who rated
    it depended on its texts, as a skipped pair's rater does: it keeps its place, counted at the worst (PPI off), while
    a pair of hers the queue served in its order is still set aside."""
    from evalkit.aggregate.verdict import fidelity_rows

    db = _pool(tmp_path)
    truth = _truth(db)
    head = [r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank, id LIMIT 6")]
    # the second pair of the order holds the first's two texts, as greedy copies of one prompt do; the sixth the
    # fourth's, which a rater meets only once the fourth is rated
    with db.conn:
        for source, copy in ((head[0], head[1]), (head[3], head[5])):
            for side in ("a", "b"):
                db.execute(f"""UPDATE generations SET text = (SELECT g.text FROM pairs p JOIN generations g
                               ON g.id = p.{side}_generation_id WHERE p.id = ?)
                               WHERE id = (SELECT {side}_generation_id FROM pairs WHERE id = ?)""", [source, copy])

    def rate(rater):
        view = next_pair(db, rater, APP.ratings_per_pair)
        a, b, _differ, _d = truth[view.pair_id]
        submit_rating(db, APP, RatingInput(view.pair_id, rater, a, b, "tie"))
        return view.pair_id

    assert [rate("ann"), rate("ann")] == [head[0], head[2]]  # the queue kept the copy from her
    assert rate("mallory") == head[1]  # and served it to the next rater, whom the gold check leaves out
    assert rate("mallory") == head[3]  # served in its order: nothing about it chose her (ann meets its texts later)
    while rate("ann") != head[5]:
        pass
    kept = load_ratings(db).without_raters(["mallory"])
    pairs, _done, _run = in_queue_order(kept, 1)
    order = [kept.pair_ids[p] for p in pairs]
    assert order[:4] == [head[0], head[1], head[2], head[4]]  # the copy keeps its place; her other pair is set aside
    sample, decided = decision_sample(kept, 1, 4)
    assert decided >= 4 and [kept.pair_ids[p] for p in np.flatnonzero(sample.unknown)] == [head[1]]
    for row in fidelity_rows(sample, 0.95, 200, 0.05, "these raters"):
        assert row["pairs"] == 4 and row["worst_case_pairs"] == 1 and row["ci_low"] <= -0.25, row
    # the decision's history places the flag in time (data.KEPT_FROM_SPANS): from the copy's rating on, as now
    history, now = load_ratings(db, history=True), load_ratings(db)
    copy = now.pair_ids.index(head[1])
    (rated_at,) = db.execute("SELECT id FROM ratings WHERE pair_id = ?", [head[1]]).fetchone()
    assert not history.as_of(rated_at - 1).kept_from[copy] and history.as_of(rated_at).kept_from[copy]
    last = db.execute("SELECT MAX(id) FROM ratings").fetchone()[0]
    assert (history.as_of(last).kept_from == now.kept_from).all() and now.kept_from[copy]


def test_the_guidelines_say_a_bad_output_is_rated_not_skipped():
    """The first defence is the raters' own: a broken output skipped instead of failed is a drop left out."""
    from evalkit.task.prompts import load_prompts
    from evalkit.ui.guidelines import guidelines

    for lang, rule in (("en", "a broken, empty or garbled output is still rated: answer fail on each criterion it "
                              "breaks"), ("zh", "损坏、空白或乱码的输出也请评分")):
        for prompt in (load_prompts()[0], None):
            assert rule in guidelines(prompt, lang)


def _stuck(tmp_path, stuck: int = 1):
    """20 study pairs, 10 planned, one rating each; ann and bob skip the first `stuck` pairs of the queue's order and
    rate every other pair they are served, so no current rater can take the pairs the look needs. Returns (db, the
    study pairs in the queue's order, _truth)."""
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=10, margin=0.05, min_ratings_per_pair=1, second_rating_share=0,
                                   claim="these raters", ppi="off"), encoding="utf-8")
    db = open_db(tmp_path / "stuck.db")
    build_study(db, SyntheticStudy(pairs=0, unrated_pairs=20, raters_per_pair=1, raters=3, pass_rate=0.95,
                                   drops={DROPS: 0.3}, prescreen_accuracy=1.0, queue_order=True,
                                   gate_path=str(gate), seed=12))
    truth = _truth(db)
    order = [r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank")]
    for rater in ("ann", "bob"):
        while (view := next_pair(db, rater, APP.ratings_per_pair)) is not None:
            if view.pair_id in order[:stuck]:
                skip_pair(db, APP, rater, view.pair_id, "I cannot judge this one")
            else:
                a, b, _differ, _d = truth[view.pair_id]
                submit_rating(db, APP, RatingInput(view.pair_id, rater, a, b, "tie"))
    return db, order, truth


def test_a_pair_no_current_rater_can_take_is_named_with_what_the_organiser_can_do(tmp_path):
    """Statistics audit, 2026-12-06: a pair at the head of the order that every current rater has skipped can be
    served to none of them, so the look waits for a rater who is not there, and the study stayed interim for good
    with no word why. The interim look now says how many pairs the next look needs that no current rater can take,
    and what to do; the pair keeps its place (the decision never leaves it out), and once a rater who can take it is
    invited the note goes, and her rating completes the plan."""
    from evalkit.rating import roster

    db, order, truth = _stuck(tmp_path)
    head = order[0]
    agg = aggregate(db)
    assert agg.interim
    said = [n for n in agg.notes if "can be served to none" in n]
    assert said == [said[0]] and said[0].startswith(
        "1 pair(s) the next look (10 decided pairs) needs can be served to none of the study's 2 current rater(s)")
    assert "evalkit raters add" in said[0] and agg.untakeable == 1
    from evalkit.aggregate import verdict_text
    from evalkit.ui.results import verdict_markdown

    assert said[0] in verdict_text(agg)  # `evalkit aggregate`
    zh = verdict_markdown(agg, "zh")  # the Results tab, in Chinese too
    top = zh.split("#### 详细说明")[0]  # said once, as the English says it once
    assert top.count("下一次查看（10 对已判定的评分对）需要的 1 对，研究现有的 2 位评分者都不能再评") == 1 and said[0] in zh
    assert top.count("都不能再评") == 1, top

    roster.add(db, "dan")
    roster.revoke(db, "dan")  # a revoked code takes nothing
    assert [n for n in aggregate(db).notes if "can be served to none" in n] == said
    roster.add(db, "cat")  # a rater who has met none of it
    assert not [n for n in aggregate(db).notes if "can be served to none" in n]
    view = next_pair(db, "cat", APP.ratings_per_pair)
    assert view.pair_id == head
    a, b, _differ, _d = truth[head]
    submit_rating(db, APP, RatingInput(head, "cat", a, b, "tie"))
    assert not aggregate(db).interim  # the pair kept its place, and its rating completed the plan


def test_a_pair_no_current_rater_can_take_may_be_given_up_at_the_worst_and_the_look_goes_on(tmp_path):
    """Statistics audit, 2026-12-06: a pair the next look needs that no current rater can take held the study back
    for good, whatever the organiser did short of inviting a rater. The organiser may now give it up (recorded, with
    when and why): it keeps its place and counts at the worst (-1 for the lower end, +1 for the upper), the look goes
    on, the decision is stored at once and dated at the give-up (never at a rating before it), and the verdict, the
    Results tab and the export's pairs table say it was given up, apart from pairs passed over. A pair that is
    complete, not waited for or still takeable is refused, naming it, and nothing is written."""
    from evalkit.aggregate import verdict_text
    from evalkit.aggregate.data import pair_standing
    from evalkit.aggregate.give_up import give_up
    from evalkit.errors import EvalkitError
    from evalkit.rating import roster
    from evalkit.ui.results import verdict_markdown

    db, order, _ = _stuck(tmp_path)
    head = order[0]
    note = next(n for n in aggregate(db).notes if "can be served to none" in n)
    assert "evalkit pairs give-up --untakeable" in note

    refusals = [(["nope"], "is no pair"), ([order[1]], "has its ratings or is closed"), ([head], "--reason is empty")]
    for pairs, said in refusals:
        with pytest.raises(EvalkitError, match=said):
            give_up(db, pairs, "" if said.startswith("--reason") else "stuck", False)
    roster.add(db, "cat")  # a rater who can take it: the look waits for her
    with pytest.raises(EvalkitError, match=f"--pair '{head}' can still be served to a current rater"):
        give_up(db, [head], "stuck", False)
    roster.revoke(db, "cat")
    assert db.execute("SELECT COUNT(*) FROM pair_give_ups").fetchone()[0] == 0  # nothing written by a refusal
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 0

    last_rating = db.execute("SELECT MAX(created_at) FROM ratings").fetchone()[0]
    done = give_up(db, None, "every rater skipped it", untakeable=True)
    assert done.pairs == [head] and done.at > last_rating
    assert db.execute("SELECT reason FROM pair_give_ups WHERE pair_id = ?", [head]).fetchone()[0] == \
        "every rater skipped it"
    assert done.decision is not None  # the give-up completed the plan, and its look stored the decision at once
    assert done.decision.completed_at == done.at  # dated at the give-up that completed it, not at the last rating
    with pytest.raises(EvalkitError, match="is decided"):
        give_up(db, None, "again", untakeable=True)

    agg = aggregate(db)
    assert not agg.interim and agg.frozen.completed_at == done.at
    for r in agg.verdict.fidelity:  # the head pair in the sample, at the worst, and said to be the organiser's
        assert (r["pairs"], r["worst_case_pairs"], r["given_up_pairs"]) == (10, 1, 1)
        assert r["ci_low"] <= (9 * 1.0 - 1) / 10 and r["ci_high"] >= (9 * -1.0 + 1) / 10
    text = verdict_text(agg)
    assert "1 given up by the organiser, `evalkit pairs give-up`" in text and "passed over by a rater" not in text
    assert "其中 1 对是组织者在现有评分者都不能再评时放弃的" in verdict_markdown(agg, "zh")
    table = agg.tables["non_inferiority"]
    assert set(table["given_up_pairs"]) == {1}
    assert pair_standing(db)["given_up"] == {head}  # the export's pairs table carries it


def test_the_chinese_planned_sample_line_counts_a_pair_without_an_outcome_apart_as_the_english_does(tmp_path):
    """Verdict audit, 2026-12-07: in a study with no identical pairs whose decision counts a given-up pair at the
    worst, the English planned-sample line says 1 of the 10 pairs has no outcome (given up by the organiser), and the
    Chinese said the decision used "最先的 10 对评过的评分对": every planned pair rated. It now gives the 9 rated pairs
    and, apart, the 1 without an outcome, counted at the worst, and the organiser's give-up, as the English does."""
    from evalkit.aggregate.give_up import give_up
    from evalkit.ui.verdictzh import verdict_zh

    db, _order, _ = _stuck(tmp_path)
    give_up(db, None, "every rater skipped it", untakeable=True)
    agg = aggregate(db)
    assert not agg.interim and max(int(r["identical"]) for r in agg.verdict.fidelity) == 0
    english = next(c.reason for c in agg.verdict.conditions if c.name == "planned sample")
    assert "the first 10 of the queue's random order" in english
    assert "1 of them without an outcome (no ratings that count), counted at the worst (1 given up by the organiser)" \
        in english
    line = next(x for x in verdict_zh(agg) if "**计划样本**" in x)
    assert "队列随机顺序中最先的 10 对：9 对评过的评分对" in line, line
    assert "以及 1 对没有结果的评分对（没有计入的评分），按最坏情况计入（其中 1 对是组织者放弃的）" in line, line
    assert "10 对评过" not in line


def test_the_results_tab_s_cached_look_sees_a_give_up_that_leaves_the_study_interim(tmp_path):
    """The Results tab serves a cached aggregate, recomputed when a table it reads gains a row (aggregate.cache); a
    give-up adds a row only to pair_give_ups, which the key left out. So after an organiser gave up one of two pairs
    no rater could take, the look that counts it at the worst and waits for the other one alone was not shown: the tab
    kept saying two pairs were stuck until the next rating."""
    from evalkit.aggregate.cache import AggregateCache
    from evalkit.aggregate.give_up import give_up

    db, order, _ = _stuck(tmp_path, stuck=2)
    cache = AggregateCache()
    assert cache.get(db).untakeable == 2
    give_up(db, [order[0]], "every rater skipped it", False)
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 0  # the other pair still holds the look
    shown = cache.get(db)
    assert shown.untakeable == 1 and cache.computations == 2
    assert shown.interim and shown.untakeable == aggregate(db).untakeable


def test_the_give_up_command_refuses_clearly_and_gives_up_what_no_rater_can_take(tmp_path):
    """`evalkit pairs give-up`: a thin command over aggregate.give_up. Naming pairs and --untakeable together is
    refused (exit 1, what and how to fix, nothing written); --untakeable gives up the pair the look waits for and says
    that the decision is stored."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    db, order, _ = _stuck(tmp_path)
    path = str(tmp_path / "stuck.db")
    run = lambda *a: CliRunner().invoke(cli, ["pairs", "give-up", "--db", path, *a])  # noqa: E731
    assert run("--help").exit_code == 0
    r = run("--pair", order[0], "--untakeable", "--reason", "stuck")
    assert r.exit_code == 1 and "name the pairs to give up with --pair ID, or pass --untakeable" in r.output
    assert db.execute("SELECT COUNT(*) FROM pair_give_ups").fetchone()[0] == 0
    r = run("--untakeable", "--reason", "every rater skipped it")
    assert r.exit_code == 0, r.output
    assert "gave up 1 pair(s) of study 'main'" in r.output and order[0] in r.output
    assert "the decision is stored" in r.output


def _sequential(tmp_path, name: str, drop: float, pass_rate: float):
    """20 study pairs, group-sequential looks at 5, 10 and 15 decided pairs, one rating each. Returns (db, the study
    pairs in the queue's order, rate): rate(stuck, upto) has ann and bob skip `stuck` and rate every other pair they
    are served before position `upto` of the order."""
    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_file_text(planned_pairs=15, margin=0.05, min_ratings_per_pair=1, second_rating_share=0,
                                   claim="these raters", ppi="off", monitoring="group sequential", look_every=5),
                    encoding="utf-8")
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(pairs=0, unrated_pairs=20, raters_per_pair=1, raters=3, pass_rate=pass_rate,
                                   drops={DROPS: drop}, prescreen_accuracy=1.0, queue_order=True,
                                   gate_path=str(gate), seed=12))
    truth = _truth(db)
    order = [r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank")]

    def rate(stuck: str, upto: int) -> None:
        for rater in ("ann", "bob"):
            while (view := next_pair(db, rater, APP.ratings_per_pair)) is not None and order.index(view.pair_id) < upto:
                if view.pair_id == stuck:
                    skip_pair(db, APP, rater, stuck, "I cannot judge this one")
                else:
                    a, b, _differ, _d = truth[view.pair_id]
                    submit_rating(db, APP, RatingInput(view.pair_id, rater, a, b, "tie"))
    return db, order, rate


def _frozen_row(db) -> list:
    return list(db.execute("SELECT completed_at, completed_rating_id, verdict_json FROM decisions"))


def test_a_give_up_under_group_sequential_looks_takes_the_next_looks_pairs_and_dates_what_it_completes(tmp_path):
    """Audit, 2026-12-06: give-ups were tested under one look only. With looks at 5, 10 and 15 decided pairs, a pair
    no rater can take inside the second look: the command finds it (the next look's, not the first's), and giving it
    up completes that intermediate look. Where the look does not settle the study nothing is stored, the study stays
    interim and the next give-up finds the third look's head pair, whose give-up stores the decision dated at it;
    where the look settles it (a drop the second look already sees), the decision is stored at once, dated at the
    give-up, labelled with its look, and nothing moves it afterwards (a later reader, a benchmark, a new rater)."""
    from evalkit.aggregate.give_up import give_up
    from evalkit.errors import EvalkitError
    from evalkit.rating import roster
    from evalkit.study.synthetic import add_bench

    db, order, rate = _sequential(tmp_path, "gs_interim", drop=0.3, pass_rate=0.95)
    rate(order[6], 10)  # the first look (5 pairs) is reached; the second waits for order[6]
    assert aggregate(db).interim
    with pytest.raises(EvalkitError, match=f"'{order[12]}' is not among the pairs the next look \\(10 decided pairs\\)"):
        give_up(db, [order[12]], "a pair of the third look", False)  # the next look's pairs only
    done = give_up(db, None, "every rater skipped it", untakeable=True)
    assert done.pairs == [order[6]] and done.decision is None  # the second look did not settle it: nothing stored
    agg = aggregate(db)
    assert agg.interim and agg.frozen is None and not _frozen_row(db)
    with pytest.raises(EvalkitError, match="nothing to give up"):  # the third look's pairs can still be served
        give_up(db, None, "again", untakeable=True)
    rate(order[12], 20)
    note = next(n for n in aggregate(db).notes if "can be served to none" in n)
    assert "the next look (15 decided pairs)" in note
    last_rating = db.execute("SELECT MAX(created_at) FROM ratings").fetchone()[0]
    done = give_up(db, None, "every rater skipped it too", untakeable=True)
    assert done.pairs == [order[12]] and done.decision is not None and done.at > last_rating
    assert done.decision.completed_at == done.at
    assert aggregate(db).frozen.completed_at == done.at

    db, order, rate = _sequential(tmp_path, "gs_settles", drop=0.8, pass_rate=0.9)
    rate(order[6], 10)
    assert aggregate(db).interim and not _frozen_row(db)
    last_id, last_rating = db.execute("SELECT MAX(id), MAX(created_at) FROM ratings").fetchone()
    done = give_up(db, None, "every rater skipped it", untakeable=True)
    assert done.pairs == [order[6]] and done.decision is not None and done.at > last_rating
    frozen = done.decision
    assert frozen.completed_at == done.at and frozen.completed_rating_id == last_id  # the give-up, after that rating
    assert "look 2 of at most 3" in frozen.verdict.label
    kept = _frozen_row(db)
    agg = aggregate(db)
    assert not agg.interim and agg.frozen.completed_at == done.at
    assert agg.frozen.verdict.decision == frozen.verdict.decision
    add_bench(db, speedup=1.0, seed=1)  # a later benchmark, reader and rater move nothing
    roster.add(db, "cat")
    assert next_pair(db, "cat", APP.ratings_per_pair) is None
    assert aggregate(db).frozen.completed_at == done.at and _frozen_row(db) == kept
    with pytest.raises(EvalkitError, match="is decided"):
        give_up(db, None, "again", untakeable=True)


def _gold_study(tmp_path, name: str, planned: int, extra_gate: str = "", pairs: int = 300):
    """_pool's study (`pairs` pairs, planned pairs `planned`) whose gate asks for a gold accuracy of 0.8, with 2 gold
    pairs: the open database. `extra_gate`: more gate lines (looks)."""
    import random

    from test_gold import PROMPTS, gold_items

    from evalkit.study.gold import add_gold_pairs

    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_file_text(planned_pairs=planned, margin=0.05, min_ratings_per_pair=1, second_rating_share=0,
                                   claim="these raters", ppi="off") + "min_gold_accuracy = 0.8\n" + extra_gate,
                    encoding="utf-8")
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(pairs=0, unrated_pairs=pairs, raters_per_pair=1, raters=3, pass_rate=0.95,
                                   drops={DROPS: 0.3}, prescreen_accuracy=1.0, queue_order=True,
                                   gate_path=str(gate), seed=11))
    (exp,) = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()
    gold_items(db, exp, 2)
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(0)) == 2
    return db


def _rate_gold(db, rater: str, wrong: int = 0) -> None:
    """`rater` answers both gold pairs, the first `wrong` known answers of each side flipped."""
    from test_gold import answer, gold_pairs

    for g in gold_pairs(db):
        submit_rating(db, APP, RatingInput(g["id"], rater, answer(g["a_expected"], wrong),
                                           answer(g["b_expected"], wrong), "tie"))


def _rate_until_settled(db, rater: str, truth: dict, n: int | None = None) -> list[str]:
    """`rater` answers the study pairs the queue serves her with the truth, each rating followed by the app's check
    (decision.settle), until the study is decided or after `n`. Returns the pairs she rated."""
    from evalkit.aggregate.decision import settle

    rated = []
    while (n is None or len(rated) < n) and (view := next_pair(db, rater, APP.ratings_per_pair)) is not None:
        a, b, _differ, _d = truth[view.pair_id]
        submit_rating(db, APP, RatingInput(view.pair_id, rater, a, b, "tie"))
        rated.append(view.pair_id)
        if settle(db) is not None:
            break
    return rated


def _said(rows) -> str:
    """A verdict's rows as stored (JSON), so that a replay's compare with the decision's."""
    import json

    from evalkit.aggregate.decision import _plain

    return json.dumps(_plain(rows), sort_keys=True)


def _replay(db):
    """The study's decision walked again from its stored history, nothing kept from an earlier walk."""
    from evalkit.aggregate import decision
    from evalkit.aggregate.data import deciding_experiment, stored_settings
    from evalkit.aggregate.verdict import frozen_gate
    from evalkit.study.studies import choose

    decision.LOOKS.clear()
    study = choose(db)
    values = frozen_gate(db, study)[0]["values"]
    tolerance, resamples = stored_settings(deciding_experiment(db, study.id))
    return decision.walk_history(db, study, values, resamples, tolerance)


def _late_skip(db, rater: str, pair_id: str, reason: str) -> None:
    """A skip of a decided study's pair: skip_pair refuses it and stores nothing (the Rate tab says the study is
    decided); a database written before that refusal holds such rows, so the row goes in as that version stored it,
    for the readers to show they date it."""
    from apphelpers import skip_of_before

    from evalkit.rating.queue import StudyClosed

    before = db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
    with pytest.raises(StudyClosed, match="reached its decision"):
        skip_pair(db, APP, rater, pair_id, reason)
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == before
    skip_of_before(db, rater, pair_id, reason)


def test_a_skip_stored_after_the_decision_moves_neither_its_replay_nor_its_report_nor_its_export(tmp_path):
    """Statistics audit, 2026-12-06: the decision's history read the pairs passed over (a skip, a hold let go) and
    kept from a rater as the database is now, not as of the look's completing rating. A pair the gold check's
    exclusions set aside (its only rating was the rater left out) turns "at the worst" once anyone passes it over;
    skip_pair refused no closed pair, so a skip stored after the decision made its replay, its report's notes and the
    export's flags disagree with the decision stored. Each now reads the flags as of the completing rating (and
    skip_pair refuses a decided study's pair: such rows are in databases written before, _late_skip)."""
    from evalkit.aggregate import decision
    from evalkit.aggregate.data import pair_standing
    from evalkit.rating.queue import skip_pair
    from evalkit.study.studies import choose

    db = _gold_study(tmp_path, "after", planned=20)
    truth = _truth(db)
    hers = _rate_until_settled(db, "mallory", truth, 6)  # the head of the order, before the gold check leaves her out
    _rate_gold(db, "mallory", wrong=2)
    anns = _rate_until_settled(db, "ann", truth)
    frozen = decision.stored(db, choose(db).id)
    assert frozen is not None and frozen.excluded == ["mallory"], "the planned sample completed without her"
    went = _replay(db)
    assert went.sample.rating_id.tolist() == frozen.sample and not went.sample.unknown.any()
    report = [n for n in aggregate(db).notes if "passed over" in n or "without an outcome" in n]
    flags = pair_standing(db)

    _late_skip(db, "bob", hers[0], "came back to it after the decision")  # a set-aside pair, passed over now
    _late_skip(db, "bob", anns[0], "came back to it after the decision")  # one the decision rests on
    again = _replay(db)
    assert again.sample.rating_id.tolist() == frozen.sample and not again.sample.unknown.any()
    assert _said(again.verdict.fidelity) == _said(went.verdict.fidelity) == _said(frozen.verdict.fidelity)
    assert [n for n in aggregate(db).notes if "passed over" in n or "without an outcome" in n] == report
    assert pair_standing(db) == flags and hers[0] not in flags["passed_over"]
    assert not report
    now = load_ratings(db)
    assert now.passed_over[now.pair_ids.index(hers[0])] and now.passed_over[now.pair_ids.index(anns[0])]  # as now
    last = db.execute("SELECT MAX(id) FROM ratings").fetchone()[0]
    latest = load_ratings(db, choose(db).id, history=True).as_of(last)  # the history's end reads as now
    assert (latest.passed_over == now.passed_over).all() and (latest.kept_from == now.kept_from).all()


def test_every_look_of_a_study_with_a_later_pool_a_give_up_a_gold_set_aside_and_a_revoked_rater_replays_as_stored(
        tmp_path):
    """Statistics audit, 2026-12-06: one study through everything a look reads from the history at once. Looks at 10,
    20 and 30 decided pairs; mallory rates the head of the order and then fails the gold check (her pairs set aside);
    bob rates, skips a pair and is revoked (his ratings count, as the README says, at every look); the pair every
    current rater skipped is given up; a later pool joins between the looks. The stored decision, its replay from the
    history, the report and the export agree, and stay so when, after the decision, a skip, a revoke and a benchmark
    are stored."""
    from evalkit.aggregate import decision
    from evalkit.aggregate.data import pair_standing
    from evalkit.aggregate.give_up import give_up
    from evalkit.publish.export import tables
    from evalkit.rating import roster
    from evalkit.study.pairs import draw_queue
    from evalkit.study.studies import choose
    from evalkit.study.synthetic import add_bench

    db = _gold_study(tmp_path, "audit", planned=30, extra_gate='monitoring = "group sequential"\nlook_every = 10\n',
                     pairs=20)
    gate = str(tmp_path / "audit.toml")
    truth = _truth(db)
    for name in ("mallory", "bob", "ann"):
        roster.add(db, name)
    order = [r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank")]
    hers = _rate_until_settled(db, "mallory", truth, 3)
    _rate_gold(db, "mallory", wrong=2)
    stuck = next(p for p in order if p not in hers)
    for rater in ("mallory", "bob", "ann"):
        view = next_pair(db, rater, APP.ratings_per_pair)
        while view is not None and view.pair_id != stuck:  # rate what comes before it, then skip it
            a, b, _differ, _d = truth[view.pair_id]
            submit_rating(db, APP, RatingInput(view.pair_id, rater, a, b, "tie"))
            view = next_pair(db, rater, APP.ratings_per_pair)
        skip_pair(db, APP, rater, stuck, "I cannot judge this one")
    bobs = _rate_until_settled(db, "bob", truth, 6)
    roster.revoke(db, "bob")
    _rate_until_settled(db, "ann", truth, 4)
    assert give_up(db, None, "every current rater skipped it", untakeable=True).pairs == [stuck]
    made = build_study(db, SyntheticStudy(pairs=0, unrated_pairs=60, raters_per_pair=1, raters=2, pass_rate=0.95,
                                          drops={DROPS: 0.3}, prescreen_accuracy=1.0, queue_order=False,
                                          gate_path=gate, seed=13))
    assert draw_queue(db, made["experiment_id"]) == 60
    truth = _truth(db)
    _rate_until_settled(db, "ann", truth)
    study = choose(db)
    frozen = decision.stored(db, study.id)
    assert frozen is not None and frozen.excluded == ["mallory"]
    ratings = {r[0]: r[1] for r in db.execute("SELECT id, rater FROM ratings")}
    assert {ratings[i] for i in frozen.sample} >= {"bob", "ann"} and "mallory" not in {ratings[i] for i in frozen.sample}
    assert len(set(bobs) & {p for p, in db.execute(
        f"SELECT pair_id FROM ratings WHERE id IN ({','.join(map(str, frozen.sample))})")}) == len(bobs)

    later = {p for p, in db.execute("SELECT id FROM pairs WHERE experiment_id = ?", [made["experiment_id"]])}
    sampled = {p for p, in db.execute(f"SELECT pair_id FROM ratings WHERE id IN ({','.join(map(str, frozen.sample))})")}
    assert sampled & later and stuck not in sampled  # the later pool entered; the pair given up counts at the worst
    assert all(r["given_up_pairs"] == 1 for r in frozen.verdict.fidelity), frozen.verdict.fidelity[0]

    def agree():
        went = _replay(db)
        assert went.verdict.decision == frozen.verdict.decision and went.verdict.label == frozen.verdict.label
        assert went.sample.rating_id.tolist() == frozen.sample
        assert _said(went.verdict.fidelity) == _said(frozen.verdict.fidelity)
        agg = aggregate(db)
        assert agg.frozen.verdict.decision == frozen.verdict.decision and _said(agg.verdict.fidelity) == _said(
            frozen.verdict.fidelity)
        exported = tables(db)
        assert [json.loads(r["sample_json"]) for r in exported["decisions"]] == [frozen.sample]
        return pair_standing(db), [n for n in agg.notes if "passed over" in n or "without an outcome" in n]

    before = agree()
    _late_skip(db, "ann", hers[0], "after the decision")
    roster.revoke(db, "ann")
    add_bench(db, speedup=1.0, extra_memory_mb=5000, seed=7)
    assert agree() == before


def test_a_skip_of_a_pair_others_filled_while_it_was_on_screen_is_refused_and_counted_nowhere(tmp_path):
    """Statistics audit, 2026-12-06 (round 2): a skip of a pair closed by its quota alone (others rated it while it
    was on the rater's screen) was stored, though no look waits for the pair and her skip chose none of its raters:
    the Results' and the report's skips, her progress line and her bar to the results counted it. It is refused as a
    rating of a full pair is (PairTaken, nothing stored). The look loses nothing: her hold, let go unrated, still marks
    the pair passed over, as the README's "skipped, or let her hold go unrated" says."""
    from evalkit.rating.queue import PairTaken, progress, results_open

    db = _pool(tmp_path)
    truth = _truth(db)
    view = next_pair(db, "ann", APP.ratings_per_pair)  # on ann's screen
    a, b, _differ, _d = truth[view.pair_id]
    submit_rating(db, APP, RatingInput(view.pair_id, "bob", a, b, "tie"))  # bob fills it meanwhile (one wanted)
    before = db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
    with pytest.raises(PairTaken, match="your skip was not stored"):
        skip_pair(db, APP, "ann", view.pair_id, "cannot judge it")
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == before
    assert int(aggregate(db).tables["counts"]["skips"].iloc[0]) == 0
    assert progress(db, "ann", APP.ratings_per_pair).skipped == 0
    assert "skipped" not in results_open(db, "ann", APP.ratings_per_pair, skip_allowance=0)[1]
    now = load_ratings(db)
    assert now.passed_over[now.pair_ids.index(view.pair_id)]  # her hold let go marks it, skip or none
    # a skip of an open pair is stored as before
    other = next_pair(db, "ann", APP.ratings_per_pair)
    assert other is not None and other.pair_id != view.pair_id
    skip_pair(db, APP, "ann", other.pair_id, "cannot judge it")
    assert int(aggregate(db).tables["counts"]["skips"].iloc[0]) == 1
