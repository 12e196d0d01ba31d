"""Looks that can stop a study (#20 item 5): the gate's monitoring, the look schedule and levels, the verdict at
each look through the real database and aggregate, the frozen decision at the look that settles it, and the
error rate of the group-sequential rule on simulated studies run through the gate's own functions."""

from __future__ import annotations

import math

import pytest

from evalkit.aggregate import aggregate
from evalkit.aggregate.verdict import INTERIM
from evalkit.errors import EvalkitError
from evalkit.store import open_db
from evalkit.study.gate import frozen_values, parse_gate
from evalkit.task.criteria import CRITERIA, title
from evalkit.study.monitoring import describe, look_levels, look_sizes
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.stats.descriptive import z_for


def test_monitoring_keys_parse_and_refuse_by_name():
    g = parse_gate('monitoring = "group sequential"\nlook_every = 40\n', "g.toml")
    assert g.monitoring == "group sequential" and g.look_every == 40
    with pytest.raises(EvalkitError, match='monitoring = "weekly" is not one of'):
        parse_gate('monitoring = "weekly"\n', "g.toml")
    with pytest.raises(EvalkitError, match="look_every = 0 is outside"):
        parse_gate("look_every = 0\n", "g.toml")
    # the betting sequence has no rater dimension and no pre-screen: refused with the fix
    with pytest.raises(EvalkitError, match='needs claim = "these raters"') as e:
        parse_gate('monitoring = "confidence sequence"\n', "g.toml")
    assert "group sequential" in e.value.fix
    ok = parse_gate('monitoring = "confidence sequence"\nclaim = "these raters"\nppi = "off"\n', "g.toml")
    assert ok.monitoring == "confidence sequence"


def test_a_gate_frozen_before_monitoring_existed_stays_fixed():
    old = {"text": "planned_pairs = 100\n", "values": {"planned_pairs": 100}}
    assert frozen_values(old)["monitoring"] == "fixed"


def test_look_schedule_follows_the_gate_alone():
    fixed = {"planned_pairs": 500, "monitoring": "fixed"}
    assert look_sizes(fixed) == [500] and look_levels(fixed) == [0.95]
    gs = {"planned_pairs": 500, "monitoring": "group sequential", "look_every": 50, "min_ratings_per_pair": 1,
          "second_rating_share": 0.1, "confidence": 0.95}
    sizes = look_sizes(gs)
    # a look each 50 ratings: 50 / 1.1 decided pairs apart, the last at the planned maximum
    assert sizes[0] == math.ceil(50 / 1.1) and sizes[-1] == 500 and sizes == sorted(set(sizes))
    assert all(abs(b - a - 50 / 1.1) <= 1 for a, b in zip(sizes[:-2], sizes[1:-1]))
    three = dict(gs, min_ratings_per_pair=3)
    assert look_sizes(three)[0] == math.ceil(50 / 3)
    levels = look_levels(gs)
    # O'Brien-Fleming-type spending: the early looks are nearly closed, each later one more open; the last is
    # stricter than the fixed design's 95% (some of the level was spent on the earlier looks) but not by much
    assert levels == sorted(levels, reverse=True)
    assert 0.95 < levels[-1] < 1 - 2 * (1 - 0.95) / 3 and levels[0] > 0.99999
    assert z_for(levels[-1]) < 1.2 * z_for(0.95)
    assert look_sizes({"planned_pairs": 0, "monitoring": "group sequential"}) == []
    # the text names every look where there are few: the last step can be shorter (organiser audit L3: "4, 8, … up
    # to 12" hid a look at 11)
    few = dict(gs, planned_pairs=12, look_every=4, min_ratings_per_pair=1, second_rating_share=0)
    assert look_sizes(few) == [4, 8, 12] and "decided pairs 4, 8, 12)" in describe(few)
    odd = dict(few, planned_pairs=11)
    assert f"decided pairs {', '.join(map(str, look_sizes(odd)))})" in describe(odd)
    many = describe(gs)
    assert f"decided pairs {sizes[0]}, {sizes[1]}, …, {sizes[-2]}, {sizes[-1]})" in many


def study(tmp_path, name, gate_text, **spec):
    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_text)
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(gate_path=str(gate), **spec))
    return db


GS = dict(margin=0.15, monitoring="group sequential", look_every=60, min_raters=10)
SPEC = dict(raters_per_pair=3, raters=12, pass_rate=0.8, rater_accuracy=0.95, seed=5)


def test_a_clear_study_stops_early_with_keep_and_freezes_at_that_look(tmp_path):
    db = study(tmp_path, "keep", gate_file_text(planned_pairs=300, **GS), pairs=300, **SPEC)
    agg = aggregate(db)
    v = agg.verdict
    assert v.decision == "KEEP" and not agg.interim, v.conditions
    assert v.look is not None and v.look["index"] < v.look["of"]  # before the planned maximum
    assert v.label.startswith("decision at look") and "group sequential" in v.label
    ni = agg.tables["non_inferiority"]
    # the decision rests on the look's first decided pairs, at the look's level (stricter than 95%)
    assert (ni["pairs"] == v.look["pairs"]).all() and v.look["pairs"] < 300
    assert v.look["level"] > 0.95
    assert all(ni["passed_at_look"].notna())
    assert agg.frozen is not None and len(agg.frozen.sample) == v.look["pairs"] * 3
    later = db.execute("SELECT COUNT(*) FROM ratings WHERE id > ?", [agg.frozen.completed_rating_id]).fetchone()[0]
    assert later > 0  # ratings stored after the deciding look do not move it
    again = aggregate(db)
    assert again.verdict.decision == "KEEP" and again.frozen.completed_rating_id == agg.frozen.completed_rating_id


def test_a_large_drop_stops_early_with_drop(tmp_path):
    db = study(tmp_path, "drop", gate_file_text(planned_pairs=300, **GS), pairs=300,
               drops={"unknown_restore_time": 0.4}, **SPEC)
    agg = aggregate(db)
    v = agg.verdict
    assert v.decision == "DROP" and not agg.interim
    assert v.look["index"] < v.look["of"]
    row = agg.tables["non_inferiority"].set_index("criterion").loc["unknown_restore_time"]
    assert row["ci_high"] < -0.15
    assert "upper end below -0.150" in {c.name: c for c in v.conditions}["fidelity"].reason


def test_an_unsettled_look_is_interim_and_a_fixed_gate_does_not_look_early(tmp_path):
    # 60 pairs rated of at most 300: the looks so far cannot settle a 15-point margin
    db = study(tmp_path, "open", gate_file_text(planned_pairs=300, **GS), pairs=60, **SPEC)
    agg = aggregate(db)
    assert agg.verdict.decision == "INSUFFICIENT DATA" and agg.interim and agg.frozen is None
    assert agg.verdict.label == INTERIM
    assert agg.verdict.look is not None and agg.verdict.look["index"] >= 1
    interim = agg.notes[0]  # says that a later look may stop the study, not that it must run to its maximum
    assert interim.startswith("INTERIM LOOK") and "a later look may (group sequential: up to" in interim
    assert "until the planned number of pairs is rated" not in interim
    # the same clear data under a fixed gate: no look before the planned 300 pairs
    fixed = study(tmp_path, "fixed", gate_file_text(planned_pairs=300, margin=0.15, min_raters=10), pairs=200,
                  **SPEC)
    agg = aggregate(fixed)
    assert agg.verdict.decision == "INSUFFICIENT DATA" and agg.interim and agg.verdict.look is None


def test_group_sequential_false_keep_stays_within_the_level_on_simulated_studies():
    """Whole studies of the group-sequential design through the gate's own functions: a criterion that truly
    drops by the margin passes at some look in at most the one-sided level (plus Monte-Carlo error), while the
    same studies with no drop stop early on average."""
    import numpy as np

    from evalkit.study.plan.designs import Design, Scenario, combine, outcome, simulate
    from evalkit.study.plan.model import StudyModel
    from evalkit.task.criteria import CRITERIA
    from evalkit.stats import wilson

    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12, raters_per_pair=1)
    scenario = Scenario(model, margin=0.15)
    design = Design(ppi=False, monitoring="group sequential", raters_per_pair=1, look_every=60)
    base = simulate(design, scenario, 300, 300, {}, [1])
    assert len(base["sizes"]) == 5
    first = CRITERIA[0]
    dropping = simulate(design, scenario, 300, 1500, {first: 0.15}, [2], (first,))
    passes = np.logical_or.reduce(dropping[first]["keep"], axis=1)
    low, _high = wilson(int(passes.sum()), len(passes))
    assert low <= 0.025, passes.mean()
    no_drop = outcome(base)
    assert no_drop["keep"].mean() > 0.6 and no_drop["ratings"].mean() < 300 * 0.9
    both = combine(base, {first: {k: v[:300] for k, v in dropping[first].items()}}, first)
    assert outcome(both)["keep"].mean() <= passes[:300].mean() + 1e-12


def test_a_confidence_sequence_gate_judges_on_the_betting_sequence(tmp_path):
    text = gate_file_text(planned_pairs=300, margin=0.15, monitoring="confidence sequence", look_every=60,
                          claim="these raters", ppi="off")
    db = study(tmp_path, "cs", text, pairs=300, **SPEC)
    agg = aggregate(db)
    ni = agg.tables["non_inferiority"]
    # the anytime-valid interval is wider than the t interval on the same pairs, and judged at the gate's level
    assert ((ni["ci_high"] - ni["ci_low"]) > (ni["rated_high"] - ni["rated_low"])).all()
    assert (ni["look_level"] == 0.95).all()
    # this seeded study (nothing drops) is settled before the last look: the sequence stopped it early
    assert agg.verdict.decision == "KEEP" and agg.verdict.look["index"] < agg.verdict.look["of"]
    from evalkit.aggregate.looks import schedule

    looks = schedule(agg.verdict.gate)
    assert agg.verdict.look["pairs"] == looks[agg.verdict.look["index"] - 1].pairs < 300


def test_the_designs_simulation_runs_the_confidence_sequence():
    from evalkit.study.plan.designs import Design, Scenario, outcome, simulate
    from evalkit.study.plan.model import StudyModel
    from evalkit.task.criteria import CRITERIA

    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12, raters_per_pair=1)
    scenario = Scenario(model, margin=0.15, claim="these raters")
    design = Design(monitoring="confidence sequence", raters_per_pair=1, look_every=60)
    res = simulate(design, scenario, 300, 100, {}, [3])
    assert res[CRITERIA[0]]["keep"].shape == (100, 5)
    # it decides: nothing drops, and most studies keep; one criterion drops by the margin, and the one-sided level
    # (2.5%) holds within three Monte-Carlo standard errors of 100 studies (the seed makes the run repeatable)
    kept = outcome(res)["keep"].mean()
    at_margin = outcome(simulate(design, scenario, 300, 100, {CRITERIA[0]: 0.15}, [3]))["keep"].mean()
    assert kept > 0.5 and at_margin <= 0.025 + 3 * (0.025 * 0.975 / 100) ** 0.5 and at_margin < kept


def test_the_results_tab_shows_each_criterion_against_its_boundary(tmp_path):
    from evalkit.ui.results import verdict_markdown

    text = gate_file_text(planned_pairs=300, **GS) + "expected_ratings = 500\n"
    db = study(tmp_path, "tab", text, pairs=60, **SPEC)
    md = verdict_markdown(aggregate(db))
    assert "#### Looks (group sequential): look" in md and "| criterion | lower end |" in md
    # 180 ratings so far of the 500 the plan expects, at most 900 (300 pairs x 3)
    assert "180 ratings so far: the plan expects about 320 more ratings" in md and "at most about 720 more" in md
    fixed = study(tmp_path, "tabfixed", gate_file_text(planned_pairs=300, margin=0.15), pairs=60, **SPEC)
    assert "#### Looks" not in verdict_markdown(aggregate(fixed))


def test_the_most_ratings_left_counts_from_the_decided_pairs_not_from_every_rating(tmp_path):
    """Organiser audit, 2026-12-04: "at most about 0 more" ratings while 4 of 12 planned pairs were decided: the most
    was the planned total less every rating so far, though ratings of pairs after one still waiting at the head of the
    queue's order decide nothing yet."""
    from evalkit.ui.results import verdict_markdown

    text = gate_file_text(planned_pairs=70, **GS)
    db = study(tmp_path, "head", text, pairs=60, queue_order=True, **SPEC)
    waiting = db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank LIMIT 1 OFFSET 24").fetchone()[0]
    with db.conn:  # the 25th pair of the queue's order waits for its ratings: the 35 rated after it decide nothing yet
        db.conn.execute("DELETE FROM ratings WHERE pair_id = ?", [waiting])
    agg = aggregate(db)
    assert int(agg.tables["counts"]["complete_pairs"].iloc[0]) == 24 and agg.verdict.look is not None
    md = verdict_markdown(agg)  # (70 - 24) x 3, where 70 x 3 less the 177 ratings so far said 33
    assert "177 ratings so far: at most about 138 more, at the planned maximum of 70 decided pairs (24 decided so far" in md
    zh = verdict_markdown(agg, "zh")
    assert "已判定 24 对），最多大约还需 138 条" in zh


def test_the_chinese_verdict_says_what_the_english_one_says(tmp_path):
    """A Chinese reader's verdict is written from the verdict's fields, not translated from its sentences: the same
    decision, each condition's state and each criterion's interval, then the English original, whole. A KEEP, a
    DROP on one criterion and an interim look with its boundaries, each checked field by field."""
    from evalkit.task.criteria import CRITERIA, title
    from evalkit.ui.results import verdict_markdown
    from evalkit.ui.verdictzh import CONDITION, DECISION, STATE, _n

    keep = study(tmp_path, "keep", gate_file_text(planned_pairs=300, margin=0.15, min_raters=10), pairs=300, **SPEC)
    drop = study(tmp_path, "drop", gate_file_text(planned_pairs=60, margin=0.05, min_raters=10), pairs=60,
                 drops={CRITERIA[0]: 0.4}, **SPEC)
    looks = study(tmp_path, "looks", gate_file_text(planned_pairs=300, **GS) + "expected_ratings = 500\n", pairs=60,
                  **SPEC)
    seen = set()
    for db in (keep, drop, looks):
        agg = aggregate(db)
        v = agg.verdict
        zh, en = verdict_markdown(agg, "zh"), verdict_markdown(agg)
        head, original = zh.split("#### 详细说明（英文原文）")
        assert en.strip().endswith(original.strip()) and "### Verdict:" in original  # every English detail, below
        assert f"### 结论：**{DECISION[v.decision]}**" in head
        for c in v.conditions:
            assert f"**{CONDITION[c.name]}**：{STATE[c.ok]}" in head
            assert f"**{c.name}**" not in head
        for r in v.fidelity:
            assert f"| {title(r['criterion'], 'zh')} | {_n(r['difference'])} | {_n(r['ci_low'])} | {_n(r['ci_high'])} |" \
                in head
        seen.add(str(v.decision))
    assert seen == {"KEEP", "DROP", "INSUFFICIENT DATA"}
    assert f"{title(CRITERIA[0], 'zh')} 的区间上限也低于 −0.050" in verdict_markdown(aggregate(drop), "zh")
    agg = aggregate(looks)
    head = verdict_markdown(agg, "zh").split("#### 详细说明")[0]
    assert "区间没有用预测驱动推断" in head and "Prediction-powered inference not used" in agg.verdict.ppi
    assert f"#### 分次查看（group sequential）：第 {agg.verdict.look['index']} 次" in head and "| 标准 | 区间下限 | 区间上限 | 界限 |" in head
    assert "目前 180 条评分：按计划，大约还需 320 条评分" in head and "最多大约还需 720 条" in head
    # a criterion that passed at an earlier look says at which, in both languages
    from evalkit.ui.results import looks_markdown

    agg.verdict.fidelity[0]["passed_at_look"] = 2
    assert f"| {title(agg.verdict.fidelity[0]['criterion'], 'zh')} |" in looks_markdown(agg, "zh")[5]
    assert "已在第 2 次查看通过" in looks_markdown(agg, "zh")[5] and "passed at look 2" in looks_markdown(agg)[5]


def test_aggregate_text_lists_the_looks(tmp_path):
    from evalkit.aggregate import format_text

    db = study(tmp_path, "text", gate_file_text(planned_pairs=300, **GS), pairs=60, **SPEC)
    text = format_text(aggregate(db))
    assert "LOOKS (group sequential): look" in text and "against -0.150" in text


def test_a_chinese_reader_s_tables_gloss_every_column_and_keep_its_name(rated_db):
    """The Results tab's tables kept the aggregate's English column names for every reader. A Chinese reader gets
    each heading glossed beside the name the report and the export use ("pass_rate · 通过率"); an English reader's
    tables are as the aggregate has them. Every column of every table shown has a gloss (a new one fails here)."""
    import pandas as pd

    from evalkit.aggregate import aggregate
    from evalkit.ui.results import COLUMNS_ZH, TABLES, headed, time_on_task_shown
    from evalkit.ui.session import Session

    agg = aggregate(rated_db)
    shown = dict(agg.tables, time_on_task=time_on_task_shown(agg, Session(rater="x", organiser=True)))
    for name in TABLES:
        df = shown[name]
        assert set(df.columns) <= set(COLUMNS_ZH), (name, set(df.columns) - set(COLUMNS_ZH))
        assert list(headed(df, "en").columns) == list(df.columns)
        zh = headed(df, "zh")
        assert list(zh.columns) == [f"{c} · {COLUMNS_ZH[c]}" for c in df.columns]
        pd.testing.assert_frame_equal(zh.set_axis(list(df.columns), axis=1), df)  # the figures as they were


def test_a_criterion_passes_only_at_a_look_with_the_raters_the_claim_needs():
    """Sequential audit, 2026-12-04: a criterion whose lower end cleared -margin at a look rated by 4 raters stayed
    passed, and a KEEP was stored on it although at the deciding look (16 raters) its lower end was -0.221, below the
    margin; the simulation, whose error rates the plan quotes, counts a pass only where min_raters hold. A look with
    fewer raters than the claim about raters in general needs passes nothing; a claim about these raters needs none."""
    from types import SimpleNamespace

    from evalkit.aggregate.looks import walk

    values = {"planned_pairs": 60, "monitoring": "group sequential", "look_every": 60, "min_ratings_per_pair": 3,
              "confidence": 0.95, "claim": "raters in general", "min_raters": 10, "margin": 0.15}
    # three looks: the first two by 4 raters with a lower end above -margin, the last by 16 with it below
    raters = {1: 4, 2: 4, 3: 16}
    low = {1: -0.10, 2: -0.12, 3: -0.22}

    def state(look):
        return ("ratings", {})

    def analyse(_ratings, look, _context):
        return [{"criterion": "schedule", "ok": low[look.index] >= -0.15, "raters": raters[look.index],
                 "ci_low": low[look.index], "ci_high": 0.05}], None, look.pairs

    seen = []

    def decide_look(rows, _decided, _ratings, look, _context):
        seen.append(rows[0]["passed_at_look"])
        return SimpleNamespace(interim=not look.final)

    went = walk(values, state, analyse, decide_look)
    assert went.look.index == 3 and seen == [None] * 3  # never passed: no KEEP can rest on it
    seen.clear()
    walk(dict(values, claim="these raters"), state, analyse, decide_look)
    # no rater minimum for a claim about these raters (passed on the 4 at looks 1 and 2), whose criteria are judged
    # at each look anew: below the margin on the 16 of look 3
    assert seen == [1, 2, None]


def test_a_pass_at_an_earlier_look_on_fewer_raters_is_judged_again_once_raters_join(tmp_path):
    """Statistics audit, 2026-12-06: with a claim about these raters, a criterion that passed at an early look stayed
    passed after raters joined, and the KEEP was claimed, per criterion, for the raters of that look (953919c): a
    decision about the panel resting on tests of a smaller panel's own effects, whose error rate for the panel that
    decided nobody had shown. For that claim every criterion is now judged at the deciding look, on its raters'
    answers (tests/test_errorbench.py::test_joined_raters_after_an_early_pass_keep_the_level_only_under_the_gate_s_rule
    measures why). A real study through the queue: ann and bob rate the first look's pairs, four more raters join for
    the rest."""
    from itertools import cycle

    from evalkit.aggregate.data import load_ratings
    from evalkit.aggregate.verdict import complete_count
    from evalkit.config import AppConfig
    from evalkit.rating.queue import RatingInput, next_pair, submit_rating
    from evalkit.ui.results import verdict_markdown

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=300, margin=0.2, min_ratings_per_pair=1, second_rating_share=0,
                                   claim="these raters", ppi="off", monitoring="group sequential", look_every=100),
                    encoding="utf-8")
    db = open_db(tmp_path / "joined.db")
    build_study(db, SyntheticStudy(pairs=0, unrated_pairs=320, raters_per_pair=1, raters=2, pass_rate=0.97,
                                   drops={"schedule": 0.09}, prescreen_accuracy=1.0, queue_order=True,
                                   gate_path=str(gate), seed=3))
    passed = {(g, c): p for g, c, p in db.execute("SELECT generation_id, criterion, passed FROM prescreen")}
    truth = {pid: ({c: "pass" if passed[(a, c)] else "fail" for c in CRITERIA},
                   {c: "pass" if passed[(b, c)] else "fail" for c in CRITERIA})
             for pid, a, b in db.execute("SELECT id, a_generation_id, b_generation_id FROM pairs WHERE kind = 'study'")}
    app = AppConfig(ratings_per_pair=1)

    def rate(raters, until):
        for rater in cycle(raters):
            if until() or (view := next_pair(db, rater, 1)) is None:
                return
            submit_rating(db, app, RatingInput(view.pair_id, rater, *truth[view.pair_id], "tie"))

    rate(["ann", "bob"], lambda: complete_count(load_ratings(db), 1) >= 100)  # the first look, theirs alone
    first = aggregate(db)
    early = [r["criterion"] for r in first.verdict.fidelity if r.get("passed_at_look") == 1]
    assert first.interim and early and "schedule" not in early  # passed on ann's and bob's answers
    rate(["cat", "dan", "eve", "fay"], lambda: False)
    agg = aggregate(db)
    rows = {r["criterion"]: r for r in agg.verdict.fidelity}
    assert agg.verdict.decision == "KEEP" and agg.verdict.look["index"] > 1, agg.verdict.label
    for c, r in rows.items():  # every criterion passed at the deciding look, on the six raters' answers
        assert r["passed_at_look"] == agg.verdict.look["index"] and r["passed_raters"] == r["raters"] == 6, r
    fidelity = next(c for c in agg.verdict.conditions if c.name == "fidelity").reason
    assert "for these 6 raters only" in fidelity and "look 1" not in fidelity, fidelity
    assert "claimed for those raters only" not in agg.verdict.claim
    assert "位评分者的答案" not in verdict_markdown(agg, "zh")


def test_for_these_raters_every_criterion_is_judged_at_the_deciding_look_itself():
    """The rule itself (looks.walk), on looks whose rows are given: for a claim about raters in general a pass stays
    passed at later looks whatever their intervals (the raters are sampled: a later look is more data about the same
    population); for a claim about these raters, each look's quantity is its own raters' in their shares, so a
    criterion counts as passed only at the look where it clears, and is judged again at the next."""
    from types import SimpleNamespace

    from evalkit.aggregate.looks import walk

    values = {"planned_pairs": 60, "monitoring": "group sequential", "look_every": 60, "min_ratings_per_pair": 3,
              "confidence": 0.95, "claim": "these raters", "min_raters": 2, "margin": 0.15}
    lows = {1: -0.10, 2: -0.22, 3: -0.10}

    def run(**extra):
        seen = []

        def analyse(_ratings, look, _context):
            return [{"criterion": "schedule", "ok": lows[look.index] >= -0.15, "raters": 4,
                     "ci_low": lows[look.index], "ci_high": 0.05}], None, look.pairs

        def decide_look(rows, _decided, _ratings, look, _context):
            seen.append(rows[0]["passed_at_look"])
            return SimpleNamespace(interim=not look.final)

        walk(dict(values, **extra), lambda look: ("ratings", {}), analyse, decide_look)
        return seen

    assert run() == [1, None, 3]
    assert run(claim="raters in general") == [1, 1, 1]
    # the plan's simulation (designs.outcome) counts as the gate does: one criterion passes at looks 1 and 3, the
    # other at look 2 alone; for raters in general KEEP at look 2, for these raters never
    import numpy as np

    from evalkit.study.plan.designs import outcome

    never = np.zeros((1, 3), bool)
    looks = {"a": {"keep": np.array([[True, False, True]]), "drop": never},
             "b": {"keep": np.array([[False, True, False]]), "drop": never},
             "ratings": np.array([[20, 40, 60]]), "sizes": [20, 40, 60]}
    general = outcome(looks, ("a", "b"))
    assert general["keep"][0] and general["look"][0] == 1
    assert not outcome(dict(looks, claim="these raters"), ("a", "b"))["keep"][0]


def test_a_database_replaced_at_the_same_path_is_never_answered_from_the_looks_memo(tmp_path):
    """Verdict audit, 2026-12-07: the looks' memos (decision.LOOKS, SETTLED) were keyed by the database's path, so a
    long-running process (the app, `evalkit serve`) whose file was replaced at that path (a backup copied over it, a
    Space's synced copy restored) answered the other database's look: its interim verdict for a study that now
    decides DROP, and settle() waited for a later look. So did a server's AggregateCache, keyed by the path and the
    tables' largest row ids. Study A is read in-process, study B's file is copied over A's (same path, same gate, the
    same study id and the same ratings' ids), and the verdict read is B's."""
    import shutil

    from evalkit.aggregate.decision import settle

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=300, **GS))

    def build(name, **spec):
        db = open_db(tmp_path / f"{name}.db")
        build_study(db, SyntheticStudy(gate_path=str(gate), pairs=120, **SPEC, **spec))
        return db

    build("b", drops={CRITERIA[0]: 0.7}).conn.close()
    shutil.copyfile(tmp_path / "b.db", tmp_path / "b_kept.db")  # B as built: no decision stored in it yet
    b = open_db(tmp_path / "b.db")
    expected = aggregate(b).verdict  # B read at its own path
    assert expected.decision == "DROP" and not expected.interim
    build("a").conn.close()
    shutil.copyfile(tmp_path / "a.db", tmp_path / "a_kept.db")
    a = open_db(tmp_path / "a.db")
    assert settle(a) is None and aggregate(a).verdict.interim  # A's looks leave it open: memos kept
    a.conn.close()
    shutil.copyfile(tmp_path / "b_kept.db", tmp_path / "a.db")  # as `cp`: the same file, B's content
    replaced = open_db(tmp_path / "a.db")
    assert settle(replaced) is not None  # B's look, not A's memo of "no look decides before the next"
    got = aggregate(replaced).verdict
    assert (got.decision, got.interim, got.look) == (expected.decision, False, expected.look)
    assert [(r["criterion"], r["ci_low"], r["ci_high"]) for r in got.fidelity] == \
        [(r["criterion"], r["ci_low"], r["ci_high"]) for r in expected.fidelity]
    # a server's cache of the aggregate, the same way (B's tables have as many rows as A's)
    from evalkit.aggregate.cache import AggregateCache

    cache = AggregateCache()
    shutil.copyfile(tmp_path / "a_kept.db", tmp_path / "c.db")
    c = open_db(tmp_path / "c.db")
    assert cache.get(c).verdict.interim
    c.conn.close()
    shutil.copyfile(tmp_path / "b_kept.db", tmp_path / "c.db")
    assert cache.get(open_db(tmp_path / "c.db")).verdict.decision == "DROP" and cache.computations == 2


def test_the_chinese_verdict_says_the_identical_pairs_the_task_and_what_the_look_after_the_decision_is(tmp_path):
    """Verdict audit, 2026-12-07, reading the Chinese beside the English: a study decided with identical pairs said in
    English "the decision uses 63 rated pairs ... and 37 identical pairs" and "over 100 pairs (37 identical, decided
    without raters)", the Chinese only "计划的 100 对已全部判定" and a table of 100 pairs; the English claim says it is
    about these prompts and this pair pool, not other tasks, the Chinese did not; and the Chinese said data had been
    stored after the decision ("决定之后又存入了数据") wherever the look after it is shown, which is always once a decision
    is frozen, with nothing stored since."""
    from evalkit.ui.results import verdict_markdown

    db = study(tmp_path, "same", gate_file_text(planned_pairs=100, margin=0.1, claim="these raters"), pairs=100,
               identical_share=0.3, **SPEC)
    agg = aggregate(db)
    assert agg.frozen is not None and agg.after is not None
    same = max(int(r.get("identical", 0)) for r in agg.verdict.fidelity)
    assert same and f"uses {100 - same} rated pairs" in agg.verdict.conditions[0].reason
    head = verdict_markdown(agg, "zh").split("#### 详细说明")[0]
    assert f"最先的 {100 - same} 对评过的评分对，每对取最先的 3 条评分，以及 {same} 对两条路径输出相同的评分对" in head
    assert f"评分对一栏含 {same} 对两条路径输出相同的评分对" in head
    assert "结论只针对这些提示词和这个配对池，不针对其他任务" in head
    after = db.execute("SELECT COUNT(*) FROM ratings WHERE id > ?", [agg.frozen.completed_rating_id]).fetchone()[0]
    assert after == 0 and "决定之后又存入了数据" not in head
    assert f"决定之后的查看：同样的分析用现在的数据（含决定之后存入的数据，如有）重算，结果是 {agg.after.decision}" in head


@pytest.mark.parametrize("kind", ["fixed", "look", "settled early"])
def test_the_chinese_planned_sample_line_gives_the_english_s_counts_before_the_sample_is_decided(tmp_path, kind):
    """Verdict audit, 2026-12-07, reading the Chinese beside the English: before the planned sample was decided the
    English said "30 of the 120 planned pairs have 3 current ratings", or, at a look before the last (a decision
    settled there too), "look 9 of at most 15, at 180 decided pairs (99.3818% interval): 180 decided pairs of at most
    300 ...; the study stops at a look where every criterion has passed or one is below the margin"; the Chinese said
    only "计划的 300 对尚未全部判定". It now gives the same counts, the look and its level."""
    from evalkit.ui.verdictzh import verdict_zh

    planned = 300 if kind == "settled early" else 120  # a clear study settles at a look before the last
    gate = dict(planned_pairs=planned, margin=0.15, min_raters=10)
    if kind != "fixed":
        gate.update(monitoring="group sequential", look_every=60)
    db = study(tmp_path, kind.replace(" ", "_"), gate_file_text(**gate), pairs=300 if kind == "settled early" else 30,
               unrated_pairs=40, **SPEC)
    agg = aggregate(db)
    v = agg.verdict
    english = v.conditions[0].reason
    line = next(x for x in verdict_zh(agg) if "**计划样本**" in x)
    if kind == "fixed":
        assert agg.interim and "30 of the 120 planned pairs have 3 current ratings" in english
        assert "中期查看，不是结论：计划的 120 对中有 30 对已有 3 条当前评分" in line, line
        return
    look = v.look
    assert look["index"] < look["of"] and agg.interim == (kind == "look") and v.conditions[0].ok is None
    assert (f"look {look['index']} of at most {look['of']}, at {look['pairs']} decided pairs ({look['level']:.4%} "
            f"interval): {look['pairs']} decided pairs of at most {planned}") in english
    assert (f"第 {look['index']} 次查看（最多 {look['of']} 次，在 {look['pairs']} 对已判定时，区间水平 {look['level']:.4%}）："
            f"已判定 {look['pairs']} 对，最多 {planned} 对（输出不同的评分对有 3 条当前评分即判定") in line, line
    assert "研究在某次查看中每个标准都已通过、或有一个标准低于容差时停止" in line and "尚未全部判定" not in line


@pytest.mark.parametrize("kind", ["fixed", "look"])
def test_the_chinese_fidelity_line_names_every_criterion_the_english_names(tmp_path, kind):
    """Verdict audit, 2026-12-07, reading the Chinese beside the English: where one criterion's upper end was below the
    margin, the English named every criterion whose lower end was below it ("lower end below -0.050 (margin) for
    Maintenance time, Uploads and reading") and the Chinese only the one clearly worse; at a look before the last
    that settled nothing the English said the study was not yet settled, those criteria still open (lower end below
    the margin, upper end above it), the Chinese that assisted could not be ruled out worse, as of a decision. The
    Chinese now names the same criteria, and says the look is not settled."""
    from evalkit.ui.verdictzh import verdict_zh

    if kind == "fixed":
        db = study(tmp_path, "drop", gate_file_text(planned_pairs=100, margin=0.05, min_raters=10), pairs=100,
                   identical_share=0.2, drops={CRITERIA[0]: 0.3}, **SPEC)
    else:
        db = study(tmp_path, "look", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10,
                                                    monitoring="group sequential", look_every=60),
                   pairs=30, unrated_pairs=40, **SPEC)
    agg = aggregate(db)
    v = agg.verdict
    fidelity = next(c for c in v.conditions if c.name == "fidelity")
    failing = [r for r in v.fidelity if not (r["ok"] or r.get("passed_at_look"))]
    below = [r for r in failing if r["ci_high"] < -r["margin"]]
    line = next(x for x in verdict_zh(agg) if "**内容忠实度**" in x)
    english = ", ".join(title(r["criterion"]) for r in failing)
    assert "、".join(title(r["criterion"], "zh") for r in failing) in line, line
    if kind == "fixed":
        assert not agg.interim and len(failing) > len(below) > 0  # some clearly worse, some not
        assert f"lower end below -0.050 (margin) for {english}" in fidelity.reason
        assert (f"的区间下限低于 −0.050（容差）：不能排除 assisted 更差；其中 "
                f"{'、'.join(title(r['criterion'], 'zh') for r in below)} 的区间上限也低于 −0.050") in line, line
    else:
        assert agg.interim and not below and v.look["index"] < v.look["of"]
        assert f"not yet settled at look {v.look['index']}" in fidelity.reason and f"{english} still open" in fidelity.reason
        assert f"第 {v.look['index']} 次查看尚无定论：" in line and "仍未定（区间下限低于 −0.150，上限高于它）" in line, line


def test_the_chinese_fidelity_line_with_too_few_raters_says_what_the_intervals_say_and_that_the_study_cannot_decide(
        tmp_path):
    """Verdict audit, 2026-12-07, reading the Chinese beside the English: with fewer raters than a claim about raters
    in general needs, the English fidelity line said "5 distinct raters rated the decision sample; a claim about raters
    in general needs at least 10 (gate min_raters), so this study cannot decide it; a new study with more raters can."
    and then what the intervals say (here: which criteria's lower ends are below the margin); the Chinese said only
    the first half. It now says all of it."""
    from evalkit.ui.verdictzh import verdict_zh

    db = study(tmp_path, "few", gate_file_text(planned_pairs=60, margin=0.15, min_raters=10), pairs=60,
               **{**SPEC, "raters": 5})
    agg = aggregate(db)
    english = next(c.reason for c in agg.verdict.conditions if c.name == "fidelity")
    assert not agg.interim and "5 distinct raters rated the decision sample" in english
    assert "so this study cannot decide it; a new study with more raters can. " in english
    failing = [r for r in agg.verdict.fidelity if not r["ok"]]
    assert failing and f"lower end below -0.150 (margin) for {', '.join(title(r['criterion']) for r in failing)}" \
        in english
    line = next(x for x in verdict_zh(agg) if "**内容忠实度**" in x)
    assert "只有 5 位评分者评了决策样本" in line and "因此本研究无法判定它；有更多评分者的新研究可以。" in line, line
    assert f"{'、'.join(title(r['criterion'], 'zh') for r in failing)} 的区间下限低于 −0.150（容差）" in line, line


def test_a_backup_of_the_same_database_restored_and_rated_since_is_never_answered_from_the_looks_memo(tmp_path):
    """A backup of the same database restored over it keeps its identity (store.database.identity: the token drawn
    when it was made), and the ratings stored since hold the ids of other ratings. The looks' memos key a look by
    its completing point's time too, and SETTLED checks the newest rating it saw is still that rating, so such a file
    is not answered from them either. Simulated with two studies built alike, the second given the first's migration
    instants and identity token: the same identity, other ratings under the same ids."""
    import shutil
    import sqlite3

    from evalkit.aggregate.decision import settle

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=300, **GS))

    def build(name, **spec):
        db = open_db(tmp_path / f"{name}.db")
        build_study(db, SyntheticStudy(gate_path=str(gate), pairs=120, **SPEC, **spec))
        db.conn.close()

    build("b", drops={CRITERIA[0]: 0.7})
    build("a")
    raw = sqlite3.connect(tmp_path / "b.db")
    raw.executemany("UPDATE _migrations SET applied_at = ? WHERE name = ?",
                    [(at, name) for name, at in sqlite3.connect(tmp_path / "a.db").execute(
                        "SELECT name, applied_at FROM _migrations")])
    # and A's identity token (a restored backup of A would hold it): delete and insert, as the trigger refuses updates
    raw.execute("DELETE FROM database_identity")
    raw.execute("INSERT INTO database_identity (id, token) VALUES (1, ?)",
                sqlite3.connect(tmp_path / "a.db").execute("SELECT token FROM database_identity").fetchone())
    raw.commit()
    raw.close()
    shutil.copyfile(tmp_path / "b.db", tmp_path / "b_kept.db")
    expected = aggregate(open_db(tmp_path / "b.db")).verdict
    assert expected.decision == "DROP" and not expected.interim
    from evalkit.store.database import identity

    a = open_db(tmp_path / "a.db")
    assert settle(a) is None and aggregate(a).verdict.interim  # memos kept
    was = identity(a)
    a.conn.close()
    shutil.copyfile(tmp_path / "b_kept.db", tmp_path / "a.db")
    restored = open_db(tmp_path / "a.db")
    assert identity(restored) == was  # the same database, as far as its identity goes
    assert settle(restored) is not None
    got = aggregate(restored).verdict
    assert (got.decision, got.look) == (expected.decision, expected.look)
