"""The planned sample size: `evalkit plan` simulates whole studies through the gate's own analysis, confirms the
size on 2,000 fresh studies and checks the false-KEEP rate, and the gate's error rates hold in fresh simulations:
with a true drop equal to the margin KEEP comes out in at most the nominal rate (one-sided 2.5% per criterion,
plus Monte-Carlo slack); with no drop and the planned number of pairs, KEEP comes out at about the planned power.
A plan whose gate does not hold its level, or that no number of pairs can power, is refused. The pilot's
estimates of the pair correlation and the rater effects recover the simulated ones."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.study.plan import (
    MIN_CONFIRM, StudyModel, criterion_passes, format_plan, model_from_db, normal_guess, plan_study, simulate,
)
from evalkit.task.prompts import CRITERIA
from evalkit.store import open_db
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

# A wide margin keeps the planned study small (about 200 pairs) so these simulations take seconds.
MARGIN, POWER, CONFIDENCE = 0.15, 0.8, 0.95


@pytest.fixture(scope="module")
def planned():
    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters_per_pair=3, raters=12)
    return model, plan_study(model, MARGIN, CONFIDENCE, POWER, studies=300, seed=0)


def keep_rates(model, pairs, drops, studies=600, seed=99):
    rng = np.random.default_rng(seed)
    sim = simulate(model, pairs, studies, drops, rng)
    passes = criterion_passes(sim, studies, MARGIN, CONFIDENCE, 2000)
    return float(np.logical_and.reduce(list(passes.values())).mean()), {c: float(v.mean()) for c, v in passes.items()}


def test_plan_recommends_a_size_that_reaches_the_power(planned):
    model, plan = planned
    assert plan.recommended_pairs is not None and plan.recommended_pairs % model.prompts == 0
    # confirmed on 2,000 fresh studies, with the Monte-Carlo interval printed
    assert plan.confirmed_pairs == plan.recommended_pairs and plan.confirmed_power.studies >= MIN_CONFIRM
    assert plan.confirmed_power.rate >= POWER and plan.confirmed_power.low < plan.confirmed_power.rate
    assert any(r.pairs < plan.recommended_pairs and r.keep_rate < POWER for r in plan.rows)  # about the smallest
    assert plan.gate_line() == f"planned_pairs = {plan.recommended_pairs}" and plan.refused is None
    # every key the size was simulated with, so the frozen gate is the one it was sized for (plan audit, 2026-12-04)
    from evalkit.study.gate import parse_gate

    gate = parse_gate("\n".join(plan.gate_lines()) + "\n", "plan")
    assert (gate.planned_pairs, gate.margin, gate.min_ratings_per_pair, gate.interval) == (
        plan.recommended_pairs, MARGIN, model.raters_per_pair, plan.interval)
    # and the ratings that size takes, where the gate file's expected_ratings was for another design's size (plan
    # audit F4: the Results tab's "remaining" count started from it)
    assert gate.expected_ratings == model.expected_ratings(plan.recommended_pairs) > 0
    text = format_plan(plan)
    assert all(f"  {line}" in text for line in plan.gate_lines())
    # the README's way to build the pool first, with its reserve (plan audit, 2026-12-04: only --samples N was said)
    assert "`evalkit generate --until-planned`" in text and "--new-study NAME" in text
    assert f"power at {plan.recommended_pairs} pairs, confirmed on fresh studies: {plan.confirmed_power.rate:.3f} " \
           f"(95% Monte-Carlo interval" in text and "2000 studies" in text
    # the normal approximation is only the starting point: the simulation decides
    assert 0.5 < plan.recommended_pairs / normal_guess(model, MARGIN, CONFIDENCE, POWER) < 2


def test_no_true_drop_at_the_planned_size_keeps_at_about_the_planned_power(planned):
    model, plan = planned
    rate, _ = keep_rates(model, plan.recommended_pairs, {})
    # fresh seeds; slack: Monte-Carlo error of plan (300 studies) and of this check (600), and the 10% size steps
    assert POWER - 0.08 <= rate <= POWER + 0.15


def test_true_drop_equal_to_the_margin_keeps_at_most_at_the_nominal_rate(planned):
    model, plan = planned
    alpha = (1 - CONFIDENCE) / 2
    slack = 3 * math.sqrt(alpha * (1 - alpha) / 600)
    for c in (CRITERIA[0], CRITERIA[-1]):
        rate, per_criterion = keep_rates(model, plan.recommended_pairs, {c: MARGIN}, seed=7)
        assert per_criterion[c] <= alpha + slack
        assert rate <= alpha + slack
    assert plan.false_keep.studies >= MIN_CONFIRM and plan.false_keep.high < 0.035
    assert plan.false_keep_rate <= plan.false_pass.rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / MIN_CONFIRM)


def test_a_study_of_a_tenth_of_the_planned_size_rarely_keeps(planned):
    model, plan = planned
    rate, _ = keep_rates(model, max(model.prompts, plan.recommended_pairs // 10), {}, studies=300)
    assert rate < 0.1


def test_plan_rejects_impossible_inputs():
    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA})
    with pytest.raises(EvalkitError, match="margin"):
        plan_study(model, 0.0)
    with pytest.raises(EvalkitError, match="power"):
        plan_study(model, 0.1, power=1.5)
    bad = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, raters_per_pair=5, raters=3)
    with pytest.raises(EvalkitError, match="raters"):
        plan_study(bad, 0.1)
    with pytest.raises(EvalkitError, match="impossible"):
        simulate(StudyModel(pass_rates={c: 0.05 for c in CRITERIA}), 10, 2, {CRITERIA[0]: 0.2}, np.random.default_rng(0))
    with pytest.raises(EvalkitError, match="at least 2000 fresh"):
        plan_study(model, 0.1, confirm=500)
    few = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, raters=6)
    with pytest.raises(EvalkitError, match=r"6 raters: the gate's claim about raters in general needs at least 10"):
        plan_study(few, 0.1)
    with pytest.raises(EvalkitError, match="--rater-path-sd"):
        plan_study(StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_path_sd=-1), 0.1)


def test_a_gate_that_does_not_hold_its_level_is_refused(monkeypatch):
    """An interval that is only the point estimate keeps about half the studies whose criterion truly drops by the
    margin: the plan's false-KEEP check on fresh studies catches it, and there is no planned_pairs line."""
    import evalkit.stats

    real = evalkit.stats.paired_difference

    def point_estimate(*args, **kwargs):
        res = real(*args, **kwargs)
        return res | {"low": res["difference"]}

    monkeypatch.setattr(evalkit.stats, "paired_difference", point_estimate)
    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters=10)
    plan = plan_study(model, 0.2, studies=100)
    assert plan.recommended_pairs is not None and plan.false_keep.low > 0.025
    assert plan.refused.startswith("false-KEEP rate") and "exceeds the one-sided level 0.025" in plan.refused
    assert plan.gate_line() is None
    text = format_plan(plan)
    assert "REFUSED: false-KEEP rate" in text and "planned_pairs =" not in text


def test_raters_who_judge_the_paths_too_differently_cannot_be_outweighed_by_pairs():
    """With ten raters whose own assisted - ordinary difference varies this much, the rater part of the interval
    alone is wider than the margin: no number of pairs reaches the power, the plan says how many raters would, and
    gives no planned_pairs line (exit status 1)."""
    r = CliRunner().invoke(cli, ["plan", "--rater-path-sd", "3", "--raters", "10", "--studies", "50"])
    assert r.exit_code == 1
    assert "REFUSED: with 10 raters whose own assisted - ordinary difference" in r.output
    assert "it takes at least about" in r.output and "planned_pairs =" not in r.output


def test_plan_reads_the_database_and_never_writes_it(tmp_path):
    """Planning screened the pool and cached the verdicts in the database, before it checked its options: a plan
    refused for --power 2 had written 400 rows. It now screens in memory beside what is cached: a refused plan and
    a plan that runs leave the database as it was, and the pool's pass rates are the same whether or not the
    verdicts were cached (aggregate caches them)."""
    import sqlite3

    def dump(path):
        conn = sqlite3.connect(path)
        try:
            return "\n".join(conn.iterdump())
        finally:
            conn.close()

    path = tmp_path / "s.db"
    db = open_db(path)
    # 50 pairs: the 100 outputs the pool's pass rates need (pilot.MIN_POOL_OUTPUTS), so that they are read
    build_study(db, SyntheticStudy(pairs=50, raters_per_pair=3, raters=10, pass_rate=0.7, rater_accuracy=0.9,
                                   bench=False, seed=3))
    db.execute("DELETE FROM prescreen")  # a pool nothing has aggregated yet: its outputs are not screened
    db.conn.commit()
    db.conn.close()
    before = dump(path)
    r = CliRunner().invoke(cli, ["plan", "--db", str(path), "--power", "2"])
    assert r.exit_code == 1 and "power 2.0 must be between 0 and 1" in r.output and dump(path) == before
    args = ["plan", "--db", str(path), "--studies", "50", "--pass-rate", "0.8", "--rater-path-sd", "0", "--margin",
            "0.2", "--json"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert dump(path) == before
    # the pool's pass rates: screened in memory, partly cached, or all cached (aggregate caches them), the same
    from evalkit.aggregate.quality import screen_all
    from evalkit.study.plan.pilot import model_from_db

    db = open_db(path)
    uncached = model_from_db(db, 1).pass_rates
    assert dump(path) == before
    rows = screen_all(db, store=False)
    from evalkit.store import insert_prescreen

    insert_prescreen(db, [x for x in rows if x["criterion"] == CRITERIA[0]])
    assert model_from_db(db, 1).pass_rates == uncached
    screen_all(db)
    assert dump(path) != before and model_from_db(db, 1).pass_rates == uncached


def test_plan_command_reads_the_database_and_prints_the_gate_line(tmp_path):
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=0, margin=0.2))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=50, raters_per_pair=3, raters=6, pass_rate=0.7, rater_accuracy=0.9,
                                   bench=False, gate_path=str(gate), seed=3))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'gate_file = "{gate}"\n')
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(tmp_path / "s.db"), "--studies", "100"])
    assert r.exit_code == 0, r.output
    assert "rule pre-screen of the pair pool (100 outputs)" in r.output
    assert "observed agreement" in r.output
    # six raters so far; a claim about raters in general is planned for the gate's min_raters
    assert "the gate's min_raters (10) for a claim about raters in general; the database has 6 so far" in r.output
    assert "pilot: 150 ratings by 6 raters" in r.output and "rater x path sd (logit)" in r.output
    assert "margin 0.200" in r.output and "planned_pairs = " in r.output
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(tmp_path / "s.db"), "--studies", "100",
                                 "--pass-rate", "0.9", "--raters-per-pair", "2", "--rater-path-sd", "0.3",
                                 "--pair-correlation", "0.4", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)  # the progress bar is on stderr
    assert out["model"]["pass_rates"] == {c: 0.9 for c in CRITERIA} and out["model"]["raters_per_pair"] == 2
    assert out["model"]["rater_path_sd"] == 0.3 and out["model"]["sources"]["rater_path_sd"] == "--rater-path-sd"
    assert out["model"]["pair_correlation"] == 0.4 and out["gate"]["margin"] == 0.2
    assert out["confirmed_power"]["studies"] == 2000 and out["false_keep"]["high"] <= 0.035
    assert out["claim"] == "raters in general" and out["min_raters"] == 10 and out["refused"] is None
    assert out["gate_line"] == f"planned_pairs = {out['recommended_pairs']}"
    assert all(row["ratings"] == 2 * row["pairs"] for row in out["rows"])


def test_plan_command_without_a_database_uses_defaults_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALKIT_DATA_DIR", str(tmp_path / "data"))
    r = CliRunner().invoke(cli, ["plan", "--margin", "0.2", "--studies", "60"])
    assert r.exit_code == 0, r.output
    assert "default 0.8" in r.output and not (tmp_path / "data" / "evalkit.db").exists()
    r = CliRunner().invoke(cli, ["plan", "--margin", "1.5"])
    assert r.exit_code == 1 and "margin 1.5 must be between 0 and 1" in r.output
    r = CliRunner().invoke(cli, ["plan", "--db", str(tmp_path / "missing.db")])
    assert r.exit_code == 1 and "does not exist" in r.output


def _pilot(tmp_path, name, **effects):
    gate = tmp_path / "g.toml"
    gate.write_text(gate_file_text(planned_pairs=0))
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(pairs=600, raters_per_pair=3, raters=30, pass_rate=0.7, rater_accuracy=0.9,
                                   bench=False, gate_path=str(gate), seed=1, **effects))
    return model_from_db(db, 3)


def test_pilot_estimates_recover_the_pair_correlation_and_rater_effects(tmp_path):
    """A pilot of 600 pairs x 3 ratings by 30 raters, drawn with pair correlation 0.5, rater sd 0.8 and rater x path
    sd 1.0: the plan's study model from it reproduces the spread of raters' own assisted - ordinary difference
    (what the interval for raters in general must carry) and the pair correlation; a pilot with no effects gives
    small ones. (The logit-scale sds themselves trade off against the estimated accuracy, which rater effects
    lower.)"""
    truth = StudyModel(pass_rates={c: 0.7 for c in CRITERIA}, rater_accuracy=0.9, pair_correlation=0.5, rater_sd=0.8,
                       rater_path_sd=1.0)
    est = _pilot(tmp_path, "effects", pair_correlation=0.5, rater_sd=0.8, rater_path_sd=1.0)
    assert abs(est.pair_correlation - 0.5) < 0.12
    c = CRITERIA[0]
    est_flat = StudyModel(**{**est.__dict__, "pass_rates": {k: 0.7 for k in CRITERIA}, "sources": {}})
    assert 0.7 < est_flat.rater_effect_sd(c) / truth.rater_effect_sd(c) < 1.3
    assert est.rater_sd > 0.3 and est.sources["rater_path_sd"].startswith("pilot: 1800 ratings by 30 raters")
    none = _pilot(tmp_path, "none")
    assert none.pair_correlation < 0.1 and none.rater_path_sd < 0.5
    assert StudyModel(**{**none.__dict__, "sources": {}}).rater_effect_sd(c) < 0.5 * truth.rater_effect_sd(c)


def test_a_pilot_too_small_for_pass_rates_and_accuracy_leaves_the_defaults_and_says_what_it_gave(tmp_path):
    """Plan audit F6, 2026-12-04: a pilot of 6 pairs rated twice by 3 raters (12 outputs, 48 rater pairs) set the
    pass rates (one of them 12 of 12, held at 0.98 without a word) and the rater accuracy, and the plan sized the
    study from them with no warning; --compare's header gave no source; and plain plan said "no pilot" beside the
    pilot's agreement. Below 100 outputs or rater pairs the defaults stand, and a note in both outputs gives the
    counts and the pilot's own figures."""
    gate = tmp_path / "g.toml"
    gate.write_text(gate_file_text(planned_pairs=0, min_ratings_per_pair=2))
    db = open_db(tmp_path / "tiny.db")
    build_study(db, SyntheticStudy(pairs=6, raters_per_pair=2, raters=3, bench=False, seed=5, gate_path=str(gate)))
    model = model_from_db(db, 2)
    assert model.pass_rates == {c: 0.8 for c in CRITERIA} and model.rater_accuracy == 0.95
    rates, accuracy = model.notes
    assert "the pair pool holds 12 outputs, fewer than the 100" in rates and "unknown_restore_time 1.000" in rates
    assert "48 rater pairs" in accuracy and "fewer than the 100" in accuracy and "default 0.95" in accuracy
    assert len(model_from_db(db, 2, pass_rate=0.7).notes) == 1  # --pass-rate given: nothing to say about the pool
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'gate_file = "{gate}"\n')
    common = ["plan", "--config", str(cfg), "--db", str(tmp_path / "tiny.db"), "--margin", "0.3"]
    for args in (["--studies", "50"], ["--compare", "--studies", "20", "--rosters", "20"]):
        r = CliRunner().invoke(cli, [*common, *args])
        assert r.exit_code == 0, r.output
        assert f"note: {rates}" in r.output and f"note: {accuracy}" in r.output and "no pilot" not in r.output
    assert "pass rate 0.80, 0.80, 0.80, 0.80 (default 0.8 (the pair pool's 12 outputs are fewer than 100))" in r.output


def test_a_pool_pass_rate_held_at_the_ceiling_says_so(tmp_path):
    """Plan audit F6: a criterion every pooled output passed was used as 0.98 without saying so."""
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=50, raters_per_pair=3, raters=10, pass_rate=0.7, bench=False, seed=3))
    db.execute("UPDATE prescreen SET passed = 1 WHERE criterion = ?", [CRITERIA[2]])
    db.conn.commit()
    model = model_from_db(db, 3)
    assert model.pass_rates[CRITERIA[2]] == 0.98 and model.sources["pass_rates"].endswith("(100 outputs)")
    assert model.notes == [f"pass rates: {CRITERIA[2]} 1.000 in the pool, held within [0.02, 0.98] for the plan (it "
                           "uses 0.98): a rate of exactly 0 or 1 in 100 outputs is not a promise"]


def test_a_plan_is_refused_when_the_dropping_criterion_alone_passes_too_often(monkeypatch):
    # The false-KEEP rate pairs the dropping criterion with the others' no-drop studies. Where a wide rater spread
    # makes the criterion pass a drop in the very studies where the others fail, the false-KEEP rate reads 0 while
    # the criterion alone lets the drop through in 3.5% of studies: in a study whose other criteria pass readily,
    # that is the false-KEEP rate. Simulated outcomes with exactly that pattern (the analysis itself is the gate's;
    # here only its outcomes are scripted, so the plan's own rule is what is tested).
    import evalkit.study.plan.search as search

    def scripted(model, pairs, studies, drops, *args, criteria=CRITERIA, **kwargs):
        i = np.arange(studies)
        start = int(studies * 0.85)
        return {c: (i >= start) & (i < start + int(studies * 0.035)) if c in drops else i < start for c in criteria}

    monkeypatch.setattr(search, "run_studies", scripted)
    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    plan = plan_study(model, MARGIN, CONFIDENCE, POWER, studies=100)
    assert plan.false_keep.rate == 0.0  # what the plan used to check, and passed
    assert plan.refused and "alone passes in 0.035" in plan.refused and "above the one-sided level" in plan.refused
    assert plan.gate_line() is None


def test_a_power_near_1_is_never_shown_as_100_percent_and_its_refusal_says_what_to_change(monkeypatch):
    """Plan audit L1, 2026-12-04: --power 0.999 read "target power 100%" and "no size confirmed 100% power", with no
    fix. Scripted outcomes (as above): every searched study keeps, 99.5% of the fresh ones do."""
    import evalkit.study.plan.search as search

    def scripted(model, pairs, studies, drops, *args, criteria=CRITERIA, **kwargs):
        keep = np.arange(studies) >= (studies * 5 // 1000 if studies >= MIN_CONFIRM else 0)
        return {c: keep for c in criteria}

    monkeypatch.setattr(search, "run_studies", scripted)
    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    text = format_plan(plan_study(model, MARGIN, CONFIDENCE, 0.999, studies=100))
    assert "target power 99.9%" in text and "100%" not in text
    assert "no size confirmed 99.9% power" in text and "lower --power, or widen the margin (--margin)" in text


def test_the_pairs_decided_without_raters_are_said_only_where_there_are_some(monkeypatch):
    """Plan audit L4, 2026-12-04: "with 0% identical outputs about 0 are decided without raters". Scripted outcomes:
    every study keeps without a drop, none with one."""
    import evalkit.study.plan.search as search

    def scripted(model, pairs, studies, drops, *args, criteria=CRITERIA, **kwargs):
        return {c: np.full(studies, c not in drops) for c in criteria}

    monkeypatch.setattr(search, "run_studies", scripted)
    for share, said in ((0.0, False), (0.5, True)):
        model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters=12,
                           identical_share=share)
        text = format_plan(plan_study(model, MARGIN, CONFIDENCE, POWER, studies=100))
        assert "rated pairs need" in text and ("are decided without raters" in text) == said, text


def test_a_plan_no_number_of_pairs_can_power_exits_1_with_no_gate_lines():
    """Plan audit, 2026-12-04: it printed "no size in the search reached the target power" and exited 0, where the
    README (and --compare) say exit 1. Since the search's ceiling (--max-pairs) the refusal says it stopped there."""
    r = CliRunner().invoke(cli, ["plan", "--margin", "0.001", "--studies", "50", "--pass-rate", "0.8"])
    assert r.exit_code == 1, r.output
    assert "REFUSED: no size up to the ceiling of 20,000 pairs (--max-pairs) reaches 80% power" in r.output
    assert "planned_pairs = " not in r.output


@pytest.mark.parametrize("args, said", [
    (["--raters", "100000000"], "--raters 100000000 is more than the plan simulates (10,000)"),
    (["--raters", "1", "--compare"], "--raters 1: a claim about raters in general needs at least 10 raters"),
])
def test_a_roster_the_plan_cannot_simulate_is_refused_naming_raters(args, said):
    """Plan audit, 2026-12-04: --raters 100000000 ended in a numpy traceback (36.5 GiB asked for); --compare --raters 1
    blamed --rosters 2, an option the organiser never gave."""
    r = CliRunner().invoke(cli, ["plan", "--studies", "20", *args])
    assert r.exit_code == 1 and said in r.output, r.output
    assert "--rosters" not in r.output.split("fix:")[0]


def test_the_plan_says_when_the_pool_repeats_a_pair_s_texts(tmp_path):
    """Greedy decoding gives every sample of a prompt the same two texts: the plan counted such copies as pairs of
    their own, silently. It says how many there are (and what they mean for the plan and the queue)."""
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_pairs
    from evalkit.study.plan.pilot import model_from_db

    db = open_db(tmp_path / "p.db")
    exp = insert_experiment(db, "pool", {}, {})

    def pair(i, ordinary, assisted):
        def made(path, text):
            return GenerationRecord(prompt_id="writing-01", path=path, text=text, new_tokens=9, stop_reason="eos",
                                    generate_seconds=1.0, token_hash=f"h-{text}")
        return {"prompt_id": "writing-01", "sample": i, "ordinary_side": "AB"[i % 2],
                "ordinary": made("ordinary", ordinary), "assisted": made("assisted", assisted)}

    insert_pairs(db, exp, [pair(0, "o", "a"), pair(1, "o", "a"), pair(2, "o", "a"), pair(3, "o2", "a2"),
                           pair(4, "same", "same"), pair(5, "same", "same")])  # identical: decided without raters
    notes = [n for n in model_from_db(db, 1).notes if n.startswith("copies:")]
    assert len(notes) == 1 and notes[0].startswith("copies: 2 of the pool's pairs"), notes
    db.conn.close()
    db = open_db(tmp_path / "none.db")
    insert_pairs(db, insert_experiment(db, "pool", {}, {}), [pair(0, "o", "a"), pair(1, "o2", "a2")])
    assert not [n for n in model_from_db(db, 1).notes if n.startswith("copies:")]


def test_plan_shows_its_progress_on_stderr(capsys):
    """`evalkit plan` printed nothing until its end: with a pilot whose rater spreads are wide the search walks to
    tens of thousands of pairs and ran over 5 minutes in silence (organiser audit). Each batch of simulated studies
    is now a step of a bar on stderr that says what it simulates: the search's sizes, the confirmation on fresh
    studies and each criterion's false-KEEP run; stdout keeps only the plan."""
    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters=10)
    plan = plan_study(model, 0.2, studies=100)
    out = capsys.readouterr()
    assert plan.recommended_pairs is not None and out.out == ""
    err = out.err.replace("\r", "\n")
    assert "plan: sizes simulated" in err
    assert "search: 100 studies of" in err and f"confirm: {MIN_CONFIRM} studies of {plan.confirmed_pairs:,} pairs" in err
    assert all(f"false KEEP ({c} drops)" in err for c in CRITERIA), err


def _tiny_pilot(tmp_path, seed=24, rater_path_sd=0.5):
    """3 raters, 12 pairs rated twice, drawn with a rater x path sd of 0.5 (seed 24: the pilot's estimate comes out
    0.515; seed 3 with none: 0.974), so that the size turns on an estimate from 3 raters."""
    gate = tmp_path / "g.toml"
    gate.write_text(gate_file_text(planned_pairs=0))
    db = open_db(tmp_path / "tiny.db")
    build_study(db, SyntheticStudy(pairs=12, raters_per_pair=2, raters=3, bench=False, seed=seed, gate_path=str(gate),
                                   rater_path_sd=rater_path_sd))
    db.conn.close()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'gate_file = "{gate}"\n')
    return cfg, tmp_path / "tiny.db"


def test_a_tiny_pilot_whose_rater_spread_no_size_up_to_the_ceiling_can_power_is_refused_quickly(tmp_path, monkeypatch):
    """Organiser audit: `plan --db` on a tiny pilot whose estimated rater spread came out wide walked the search to
    tens of thousands of pairs for minutes. The search stops at a ceiling (search.MAX_PAIRS, --max-pairs): where the
    approximation's size is far short and the ceiling is short too, after those two sizes, refused (exit 1, the same
    reason in --json) naming the pilot's estimate, its value and what it rests on, and what to do. Scripted outcomes:
    the KEEP rate stays at 0.5 at every size, as under a rater spread no number of pairs outweighs."""
    import evalkit.study.plan.search as search

    sizes = []

    def plateau(model, pairs, studies, drops, *args, criteria=CRITERIA, **kwargs):
        sizes.append(pairs)
        return {c: np.arange(studies) < studies * (0.5 if c == CRITERIA[0] else 1.0) for c in criteria}

    monkeypatch.setattr(search, "run_studies", plateau)
    cfg, db = _tiny_pilot(tmp_path)
    texts = {}
    for extra in ([], ["--json"]):
        sizes.clear()
        r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--studies", "50", *extra])
        assert r.exit_code == 1, r.output
        assert max(sizes) == 20_000 and len(sizes) == 2, sizes  # the default ceiling README and --help state
        texts[bool(extra)] = r.stdout
    out = json.loads(texts[True])
    why = out["refused"]
    assert out["gate_line"] is None and out["gate_lines"] == [] and f"REFUSED: {why}." in texts[False]
    assert why.startswith("no size up to the ceiling of 20,000 pairs (--max-pairs) reaches 80% power")
    assert ("the rater x path sd 0.515 (pilot: 24 ratings by 3 raters (12 pairs with different texts rated twice or "
            "more)") in why
    assert "rate more of the pilot (more raters, more pairs rated twice)" in why and "--rater-path-sd" in why
    # a ceiling given is the one searched to (--compare's too: the next test)
    sizes.clear()
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--studies", "50",
                                 "--max-pairs", "1000"])
    assert r.exit_code == 1 and max(sizes) == 1000 and "ceiling of 1,000 pairs" in r.output, r.output


def test_plan_compare_on_a_tiny_pilot_searches_no_design_past_the_ceiling(tmp_path, monkeypatch):
    """`plan --compare` took no --max-pairs and walked each design 10 steps of 15% from a normal approximation that
    leaves the raters' spreads out: on a tiny pilot whose rater spread came out wide, minutes of simulated studies
    for a table of designs none of which could reach the power. Now every design's search stops at the ceiling
    (--max-pairs, 20,000 unless given; a PPI design's pool where smaller), after two sizes where the approximation's
    is far short, and the row says so, in the text and --json. Scripted outcomes: KEEP in half the studies at every
    size, as under a rater spread no number of pairs outweighs."""
    import evalkit.study.plan.comparison as comparison

    sizes = []

    def plateau(design, scenario, planned, studies, *args, **kwargs):
        sizes.append((design.name, planned))
        return {"studies": studies}

    monkeypatch.setattr(comparison, "simulate", plateau)
    monkeypatch.setattr(comparison, "outcome", lambda res, *a: {"keep": np.arange(res["studies"]) < res["studies"] / 2})
    import evalkit.study.plan.floor as floor

    monkeypatch.setattr(floor, "floor", lambda *a, **k: None)  # beside the point here, and 7 s a call
    cfg, db = _tiny_pilot(tmp_path)
    for ceiling, extra in ((1000, ["--max-pairs", "1000"]), (20_000, ["--json"])):
        sizes.clear()
        r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--compare", "--studies", "20",
                                     *extra])
        assert r.exit_code == 1, r.output  # no design to recommend
        per_design = {}
        for name, n in sizes:
            per_design.setdefault(name, []).append(n)
        assert len(per_design) == 10 and all(len(v) <= 2 for v in per_design.values()), per_design
        assert {max(v) for k, v in per_design.items() if "PPI" not in k} == {ceiling}, per_design
        assert {max(v) for k, v in per_design.items() if "PPI" in k} == {min(ceiling, 5000)}, per_design
        note = f"no size up to {ceiling:,} pairs reached 80% power (KEEP rate 0.50 there); the ceiling, --max-pairs"
        assert note in r.stdout, r.stdout
    out = json.loads(r.stdout)
    assert out["max_pairs"] == 20_000 and out["recommended"] is None and out["gate_lines"] == []
    rows = {d["design"]["name"]: d for d in out["designs"]}
    assert all(d["planned_pairs"] is None for d in rows.values())
    assert all(d["note"].startswith(note) for k, d in rows.items() if "PPI" not in k), rows
    assert all(d["note"].endswith("(KEEP rate 0.50 there); the pool holds 5,000") for k, d in rows.items() if "PPI" in k)
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--compare", "--studies", "20",
                                 "--max-pairs", "3"])
    assert r.exit_code == 1 and "--max-pairs 3 is less than one round of the" in r.output and "fix:" in r.output


def test_plain_plan_confirmation_steps_no_size_past_the_ceiling(tmp_path, monkeypatch):
    """`plan --max-pairs 1000` recommended 1,105 pairs: the search stopped at the ceiling, but the confirmation on fresh
    studies stepped a size that fell short there up by 5% at a time past it. Now a step past the ceiling ends in a
    refusal that names it (exit 1, no planned_pairs line). Scripted outcomes: KEEP from 1,000 pairs on the search's
    own studies, from 1,100 on fresh ones (5 prompts: the steps are 1,050 and 1,105)."""
    import evalkit.study.plan.search as search

    sizes = []

    def fresh_need_more(model, pairs, studies, drops, *args, criteria=CRITERIA, **kwargs):
        sizes.append(pairs)
        return {c: np.full(studies, pairs >= (1000 if studies == 50 else 1100) and c not in drops) for c in criteria}

    monkeypatch.setattr(search, "run_studies", fresh_need_more)
    cfg, db = _tiny_pilot(tmp_path)
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--studies", "50", "--max-pairs", "1000",
                                 "--json"])
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert max(sizes) == 1000 and out["recommended_pairs"] is None and out["gate_lines"] == [], (sizes, out)
    assert out["refused"].startswith("no size up to the ceiling of 1,000 pairs (--max-pairs) confirmed 80% power on "
                                     "2000 fresh studies (last: 1000 pairs"), out["refused"]
    # without a ceiling in the way the step up stands
    sizes.clear()
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--studies", "50", "--max-pairs", "5000",
                                 "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["recommended_pairs"] >= 1100, r.output


def test_a_rater_spread_no_pairs_outweigh_says_when_a_tiny_pilot_gave_it(tmp_path):
    """A 3-rater pilot whose raters were drawn alike estimates a rater x path sd of 0.974: the refusal (no number of
    pairs can power it) named the spread but not that it rests on 24 ratings by 3 raters, nor that more pilot ratings
    or --rater-path-sd replace it."""
    cfg, db = _tiny_pilot(tmp_path, seed=3, rater_path_sd=0.0)
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--studies", "50", "--json"])
    assert r.exit_code == 1, r.output
    why = json.loads(r.stdout)["refused"]
    assert "no number of pairs reaches 80% power" in why
    assert ("that spread is the pilot's estimate (pilot: 24 ratings by 3 raters (12 pairs with different texts rated "
            "twice or more)") in why and "rate more of the pilot" in why and "(--rater-path-sd)" in why


def test_plan_compare_refuses_at_once_a_rater_spread_no_pairs_outweigh(tmp_path, monkeypatch):
    """Plain plan refuses at once a pilot whose rater spread no number of pairs outweighs; --compare searched every
    design to the ceiling first (minutes on a tiny pilot), for a table with nothing to recommend. It now gives the
    same reason before simulating any study."""
    import evalkit.study.plan.comparison as comparison

    simulated = []
    monkeypatch.setattr(comparison, "simulate", lambda *a, **k: simulated.append(1) or {"studies": 0})
    cfg, db = _tiny_pilot(tmp_path, seed=3, rater_path_sd=0.0)
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(db), "--compare", "--studies", "50"])
    assert r.exit_code == 1 and not simulated, r.output
    assert "no design can be compared" in r.output and "no number of pairs reaches 80% power" in r.output
    assert "pilot: 24 ratings by 3 raters" in r.output and "(--raters)" in r.output


def test_a_size_that_rests_on_one_pilot_estimate_says_so(tmp_path, monkeypatch):
    """Organiser audit: a 3-rater pilot's rater x path sd of 0.515 took the plan to several times the pairs it asks
    for without it (about 1,800 by the normal approximation), with no word that the size rests on that estimate.
    Scripted outcomes: KEEP from 6,000 pairs on, never with a drop."""
    import evalkit.study.plan.search as search

    monkeypatch.setattr(search, "run_studies", lambda model, pairs, studies, drops, *a, criteria=CRITERIA, **k:
                        {c: np.full(studies, pairs >= 6000 and c not in drops) for c in criteria})
    _cfg, path = _tiny_pilot(tmp_path)
    db = open_db(path)
    plan = plan_study(model_from_db(db, 3), 0.05, studies=100)
    assert plan.recommended_pairs >= 6000 and plan.refused is None
    note = plan.notes[0]
    assert note.startswith("this size rests on one pilot estimate: the rater x path sd 0.515 (pilot: 24 ratings by 3 "
                           "raters"), note
    assert "at 0 the normal approximation asks for about" in note and "rate more of the pilot" in note
    # the same pilot with the spread passed explicitly: the size rests on the organiser's number, not the pilot's
    plan = plan_study(model_from_db(db, 3, rater_path_sd=0.515), 0.05, studies=100)
    assert not any(n.startswith("this size rests on one pilot estimate") for n in plan.notes)


@pytest.mark.parametrize("compare", [False, True])
def test_a_pool_of_identical_pairs_is_refused_before_any_study_is_simulated_saying_why(tmp_path, monkeypatch, compare):
    """An organiser's first pool with greedy decoding in float32 holds identical pairs only: plain `plan --db` searched
    for 20 s and then failed in its false-KEEP check with "a rated drop of 0.05 on schedule is impossible at pass
    rate 0.8 with these raters" (there were none), and `--compare` said the same. The drop is checked before any
    study is simulated, and the refusal names the identical pairs and what to do."""
    import evalkit.study.plan.comparison as comparison
    import evalkit.study.plan.search as search
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_pairs

    simulated = []
    monkeypatch.setattr(search, "run_studies", lambda *a, **k: simulated.append(1))
    monkeypatch.setattr(comparison, "simulate", lambda *a, **k: simulated.append(1))
    db = open_db(tmp_path / "greedy.db")

    def made(path, i):
        return GenerationRecord(prompt_id="writing-01", path=path, text=f"same {i}", new_tokens=9, stop_reason="eos",
                                generate_seconds=1.0, token_hash=f"h-{i}")

    insert_pairs(db, insert_experiment(db, "pool", {}, {}), [
        {"prompt_id": "writing-01", "sample": i, "ordinary_side": "AB"[i % 2], "ordinary": made("ordinary", i),
         "assisted": made("assisted", i)} for i in range(4)])
    db.conn.close()
    r = CliRunner().invoke(cli, ["plan", "--db", str(tmp_path / "greedy.db"), *(["--compare"] if compare else [])])
    assert r.exit_code == 1 and not simulated, r.output
    assert "identical outputs (pair pool: 4 of 4 pairs have identical outputs)" in r.output
    assert "decided without raters" in r.output and "with these raters" not in r.output


def test_an_error_while_a_bar_is_open_is_printed_on_a_line_of_its_own(monkeypatch):
    """`plan --compare` refused mid-comparison printed "designs compared: 0%| ... 3 ratings per pair]Error: ..." on
    one line, and the bar was drawn again below the fix as the process ended. Open bars are closed first."""
    import evalkit.study.plan.comparison as comparison

    def refuse(*a, **k):
        raise EvalkitError("this design cannot be sized", "a fix")

    monkeypatch.setattr(comparison, "size", refuse)
    r = CliRunner().invoke(cli, ["plan", "--compare", "--studies", "20"])
    assert r.exit_code == 1 and "designs compared" in r.output, r.output
    lines = r.output.split("\n")
    assert any(line == "Error: this design cannot be sized" for line in lines), r.output
    assert "designs compared" not in r.output.split("Error: ")[1], r.output


def test_a_simulated_study_of_identical_pairs_alone_needs_no_rater_as_the_gate_decides_it(tmp_path):
    """Audit, 2026-12-06: the gate decides a sample whose every pair is identical without raters
    (gate.enough_raters), but the plan's simulation (search.criterion_passes) and the error bench (errorbench) still
    asked such a simulated study for min_raters distinct raters, and counted it as failing: at an identical share
    near 1 the plan's power and the bench's KEEP rates were wrong. Both now use the gate's own rule,
    gate.enough_raters_for. The real gate, on a real SQLite study, and the simulation agree: KEEP at 100 identical
    pairs, not at 30 (the score floor alone)."""
    from evalkit.aggregate import aggregate
    from evalkit.study.plan.errorbench import Grid, _passes
    from evalkit.study.plan.model import rated_pairs, simulate
    from evalkit.study.plan.search import criterion_passes

    studies, min_raters = 400, 10
    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, identical_share=0.99, raters_per_pair=1, raters=12)
    for pairs in (100, 30):
        gate = tmp_path / f"same{pairs}.toml"
        gate.write_text(gate_file_text(planned_pairs=pairs, min_ratings_per_pair=1, min_raters=min_raters))
        db = open_db(tmp_path / f"same{pairs}.db")
        build_study(db, SyntheticStudy(gate_path=str(gate), pairs=pairs, raters_per_pair=1, raters=12,
                                       identical_share=1.0, queue_order=True, seed=4))
        fidelity = next(c for c in aggregate(db).verdict.conditions if c.name == "fidelity").ok

        sim = simulate(model, pairs, studies, {}, np.random.default_rng(pairs), CRITERIA)
        alone = rated_pairs(sim, studies) == 0
        assert alone.any() and not alone.all()  # some simulated studies are identical pairs alone, some not
        passes = criterion_passes(sim, studies, 0.05, 0.95, 200, min_raters=min_raters)
        bench = _passes(model, Grid(pairs=pairs, raters_per_pair=1, min_raters=min_raters, resamples=200,
                                    union_bootstrap=False), 200, {}, [pairs], CRITERIA)
        bench_sim = simulate(model, pairs, 200, {}, np.random.default_rng([pairs, 0]), CRITERIA)
        bench_alone = rated_pairs(bench_sim, 200) == 0
        assert bench_alone.any()
        for c in CRITERIA:
            assert (passes[c][alone] == fidelity).all(), (pairs, c)
            assert (bench[c]["gate"][bench_alone] == fidelity).all(), (pairs, c)
        assert fidelity is (pairs == 100)
