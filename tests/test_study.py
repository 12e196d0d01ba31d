"""One study, one gate, one decision (issue #19 items 1, 2, 4): a later pool under another gate file is refused
and leaves the first study's verdict as it was, or starts a new study that never mixes with the first; a pool
smaller than the plan says so and `--until-planned` fills it; the decision is frozen when the planned sample
completes, and ratings, corrections and gold answers stored after it show only in the look after the decision."""

import json
import re
import sqlite3
import threading

import pytest
from click.testing import CliRunner

from evalkit.aggregate import AFTER, aggregate, format_text
from evalkit.cli import cli
from evalkit.config import AppConfig
from evalkit.errors import EvalkitError
from evalkit.study.gate import gate_snapshot
from evalkit.task.prompts import CRITERIA, load_prompts
from evalkit.rating.queue import RatingInput, next_pair, submit_rating
from evalkit.store import insert_experiment, open_db
from evalkit.study.studies import choose, studies
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

from test_aggregate import GATE, load_fixture
from test_gold import answer, gold_items, gold_pairs, known

PROMPTS = load_prompts()


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def verdict_of(agg) -> tuple:
    return (agg.verdict.decision, agg.verdict.interim, [(c.name, c.ok, c.reason) for c in agg.verdict.conditions],
            agg.verdict.gate["planned_pairs"], agg.verdict.gate["margin"])


# ---- item 1: one study, one gate


@pytest.mark.slow
def test_a_later_pool_under_another_gate_is_refused_and_the_first_verdict_stands(tmp_path, make_config):
    """The issue's case: 200 pairs rated under planned 1,725 / margin 0.05 (an interim look); a second `evalkit
    generate` with a 200 / 0.15 gate file would have turned it into a decision. It is refused, naming both hashes and
    the ways out, and changes nothing; `--new-study` starts a study of its own that never mixes with the first."""
    first_gate, second_gate = tmp_path / "gate-1725.toml", tmp_path / "gate-200.toml"
    first_gate.write_text(gate_file_text(planned_pairs=1725, margin=0.05))
    second_gate.write_text(gate_file_text(planned_pairs=200, margin=0.15))
    db_file = tmp_path / "study.db"
    db = open_db(db_file)
    build_study(db, SyntheticStudy(pairs=200, raters_per_pair=3, raters=12, pass_rate=0.8, rater_accuracy=0.95,
                                   seed=3, gate_path=str(first_gate)))
    before = aggregate(db)
    assert before.verdict.decision == "INSUFFICIENT DATA" and before.interim
    rows = {t: db[t].count for t in ("experiments", "pairs", "generations", "ratings", "studies")}

    r = invoke("generate", "--config", str(make_config(gate_file=str(second_gate))), "--db", str(db_file),
               "--samples", "1")
    assert r.exit_code == 1
    old, new = gate_snapshot(first_gate)["hash"], gate_snapshot(second_gate)["hash"]
    assert old in r.output and new in r.output and old != new
    assert "planned_pairs 1725, margin 0.05" in r.output and "planned_pairs 200, margin 0.15" in r.output
    assert "--new-study NAME" in r.output and "new database" in r.output
    db = open_db(db_file)
    assert {t: db[t].count for t in rows} == rows  # nothing written, no model loaded
    after = aggregate(db)
    assert verdict_of(after) == verdict_of(before)
    assert after.verdict.gate["planned_pairs"] == 1725

    # the way out: a new study under the new gate, whose pairs and ratings never mix with the first's
    r = invoke("generate", "--config", str(make_config(gate_file=str(second_gate))), "--db", str(db_file),
               "--samples", "1", "--new-study", "bigger-margin")
    assert r.exit_code == 0, r.output
    assert "study 'bigger-margin'" in r.output
    assert "the pool holds 5 study pairs, fewer than the 200 planned pairs" in r.stderr
    db = open_db(db_file)
    assert [s.name for s in studies(db)] == ["main", "bigger-margin"]
    latest = aggregate(db)  # the latest study by default, and it says which
    assert latest.study.name == "bigger-margin" and "STUDY: study 'bigger-margin' (the latest), 2 of 2" in format_text(latest)
    # the first study, left at an interim look, stays on the record beside the new one
    assert any("study 'main' has no decision: 600 rating(s) of its study pairs for 1725 planned pairs, interim looks "
               "only" in n for n in latest.notes), latest.notes
    assert latest.verdict.gate["planned_pairs"] == 200 and int(latest.tables["counts"]["current_ratings"][0]) == 0
    assert int(latest.tables["counts"]["pairs"][0]) == 5
    # fresh samples (new seeds): raters of the first study never meet its outputs again in the second
    assert db.execute("SELECT MIN(p.sample) FROM pairs p JOIN experiments e ON e.id = p.experiment_id "
                      "WHERE e.study_id = ?", [choose(db, "bigger-margin").id]).fetchone()[0] == 40
    first = aggregate(db, study="main")
    assert verdict_of(first) == verdict_of(before) and int(first.tables["counts"]["pairs"][0]) == 200
    # the app serves the latest study's pairs only. The demo pair in float32 gives identical outputs, which are
    # decided without raters and never served: give one pair of each study different tokens first
    for sid in (choose(db, "main").id, choose(db, "bigger-margin").id):
        with db.conn:
            db.execute("UPDATE generations SET token_hash = 'differs' WHERE id IN (SELECT p.assisted_generation_id "
                       "FROM pairs p JOIN experiments e ON e.id = p.experiment_id WHERE e.study_id = ? "
                       "AND p.kind = 'study' LIMIT 1)", [sid])
    served = next_pair(db, "newcomer", 3)
    assert db.execute("SELECT e.study_id FROM pairs p JOIN experiments e ON e.id = p.experiment_id WHERE p.id = ?",
                      [served.pair_id]).fetchone()[0] == choose(db, "bigger-margin").id
    # the CLI chooses too
    r = invoke("aggregate", "--db", str(db_file), "--study", "main", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["study"]["name"] == "main" and out["verdict"]["gate"]["planned_pairs"] == 1725
    r = invoke("aggregate", "--db", str(db_file), "--study", "nope")
    assert r.exit_code == 1 and f"no study named 'nope' in {db_file.resolve()}" in r.output and "main, bigger-margin" in r.output
    r = invoke("generate", "--config", str(make_config(gate_file=str(second_gate))), "--db", str(db_file),
               "--new-study", "main")
    assert r.exit_code == 1 and "already exists" in r.output


def test_the_store_refuses_a_pool_under_another_gate(tmp_path):
    """Every path that stores a pool goes through the same check (not only `evalkit generate`)."""
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(gate_file_text(planned_pairs=1725))
    b.write_text(gate_file_text(planned_pairs=200, margin=0.15))
    db = open_db(tmp_path / "s.db")
    e1 = insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(a))
    e2 = insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(a))  # same gate: the same study
    with pytest.raises(EvalkitError, match="one study decides under one gate") as e:
        insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(b))
    # a Space's way out too (Space audit F6: a restart mid-preparation froze the gate; the fixes named needed a shell)
    assert "on a Space whose study has no ratings yet" in e.value.fix and "delete evalkit.db from the dataset repo" in e.value.fix
    assert db["experiments"].count == 2 and db["studies"].count == 1
    e3 = insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(b), new_study="second")
    ids = {r["id"]: r["study_id"] for r in db.query("SELECT id, study_id FROM experiments")}
    assert ids[e1] == ids[e2] != ids[e3]
    with pytest.raises(sqlite3.IntegrityError, match="keeps the gate frozen"):  # a frozen gate is never rewritten
        db.execute("UPDATE studies SET gate_hash = 'x' WHERE id = 1")


def test_an_existing_database_becomes_one_study_under_its_first_pools_gate(tmp_path, monkeypatch):
    """A database made before studies, with a second pool under a laxer gate (the issue's case): migration 011 makes
    one study of both pools, under the gate frozen with the first."""
    from evalkit.store import migrations

    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(gate_file_text(planned_pairs=1725))
    b.write_text(gate_file_text(planned_pairs=200, margin=0.15))
    path = tmp_path / "old.db"
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS", [x for x in migrations.MIGRATIONS if x[0] < "011"])
        old = open_db(path)
        for gate in (a, b):
            snap = gate_snapshot(gate)
            old.execute("INSERT INTO experiments (created_at, kind, config_json, config_hash, compat_json, compat_hash, "
                        "gate_json, gate_hash) VALUES ('2026-01-01', 'pool', '{}', '', '{}', '', ?, ?)",
                        [json.dumps(snap), snap["hash"]])
        old.conn.commit()
        old.conn.close()
    db = open_db(path)
    (study,) = studies(db)
    assert study.name == "main" and study.gate_hash == gate_snapshot(a)["hash"] and study.planned_pairs == 1725
    assert {r[0] for r in db.execute("SELECT study_id FROM experiments")} == {study.id}
    assert aggregate(db).verdict.gate["planned_pairs"] == 1725


@pytest.mark.slow
def test_a_later_pool_of_the_same_study_draws_new_samples(tmp_path, make_config):
    """A second `evalkit generate` under the same gate adds pairs to the study with new sample numbers (new seeds),
    so it does not repeat the first pool's outputs."""
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=30))
    cfg = str(make_config(gate_file=str(gate), **{"decoding.mode": "sample", "pool.prompts": ["writing-01"]}))
    db_file = tmp_path / "p.db"
    for _ in range(2):
        r = invoke("generate", "--config", cfg, "--db", str(db_file), "--samples", "2")
        assert r.exit_code == 0, r.output
    db = open_db(db_file)
    rows = list(db.query("SELECT p.sample, e.study_id, g.seed FROM pairs p JOIN experiments e ON e.id = p.experiment_id "
                         "JOIN generations g ON g.id = p.assisted_generation_id WHERE p.kind = 'study' ORDER BY p.rowid"))
    samples = [r["sample"] for r in rows]
    # the second pool's numbers follow the first's planned range (which leaves room for its gold samples)
    assert samples[:2] == [0, 1] and min(samples[2:]) > 1 and len(set(samples)) == 4
    assert len({r["study_id"] for r in rows}) == 1
    assert len({r["seed"] for r in rows}) == 4
    assert "the pool holds 4 study pairs, fewer than the 30 planned pairs" in r.stderr


# ---- item 2: a study that can reach its plan


@pytest.mark.slow
def test_until_planned_fills_the_pool_to_the_plan_and_its_reserve(tmp_path, make_config):
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=8))
    cfg = str(make_config(gate_file=str(gate), **{"pool.prompts": ["writing-01", "writing-02"], "pool.gold_rate": 0.0}))
    db_file = tmp_path / "u.db"
    r = invoke("generate", "--config", cfg, "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 0, r.output
    short = ("the pool holds 2 study pairs, fewer than the 8 planned pairs, so this study cannot reach a decision: "
             "`evalkit generate --until-planned` adds samples until it holds 9 (the planned pairs plus a 10% reserve)")
    assert short in r.stderr
    db = open_db(db_file)
    agg = aggregate(db)
    assert any(n.startswith(short[0].upper() + short[1:]) for n in agg.notes)
    # the device its pool ran on (its compatibility record), where the gate's speed_device wants the benchmark
    assert any(n.startswith("no benchmark yet: run `evalkit bench` on cpu before the planned sample completes")
               for n in agg.notes)
    from evalkit.publish.report import build_report

    page = build_report(db, tmp_path / "r", agg).read_text(encoding="utf-8")
    assert short[1:] in re.sub("<[^>]+>", "", page)

    r = invoke("generate", "--config", cfg, "--db", str(db_file), "--until-planned", "--reserve", "0.5")
    assert r.exit_code == 0, r.output
    assert "12 study pairs in the pool, for 8 planned pairs plus a 50% reserve (12)" in r.output
    assert "pair pool" in r.stderr  # the progress bar
    db = open_db(db_file)
    assert db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'study'").fetchone()[0] == 12
    assert sorted({r[0] for r in db.execute("SELECT sample FROM pairs")}) == [0, 1, 2, 3, 4, 5]
    assert not any("fewer than" in n for n in aggregate(db).notes)
    experiments = db["experiments"].count
    r = invoke("generate", "--config", cfg, "--db", str(db_file), "--until-planned", "--reserve", "0.5")
    assert r.exit_code == 0 and db["experiments"].count == experiments  # full already: nothing to do


@pytest.mark.slow
def test_until_planned_fills_the_pool_the_plan_s_power_assumes(tmp_path, make_config):
    """With PPI the plan's power rests on the pre-screen judging a pool larger than the planned pairs (the gate's
    planned_pool, written by `evalkit plan --compare`): the pool is short of it even once it can decide, and
    --until-planned fills it that far."""
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=4) + "planned_pool = 10\n")
    cfg = str(make_config(gate_file=str(gate), **{"pool.prompts": ["writing-01", "writing-02"], "pool.gold_rate": 0.0}))
    db_file = tmp_path / "p.db"
    r = invoke("generate", "--config", cfg, "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 0, r.output
    assert ("the pool holds 2 study pairs, fewer than the 4 planned pairs, so this study cannot reach a decision: "
            "`evalkit generate --until-planned` adds samples until it holds 10 (the pool the plan's power assumes, "
            "gate planned_pool") in r.stderr
    r = invoke("generate", "--config", cfg, "--db", str(db_file), "--samples", "2")
    assert r.exit_code == 0, r.output
    short = ("the pool holds 6 study pairs, fewer than the 10 the plan's power assumes (gate planned_pool: "
             "prediction-powered inference uses the pre-screen's answers on every pooled pair), so the study can "
             "decide but with less power: `evalkit generate --until-planned` adds samples until it holds 10")
    assert short in r.stderr
    from evalkit.study.studies import pool_short

    db = open_db(db_file)
    assert pool_short(db, aggregate(db).study) == short  # what an interim look's notes and `serve` say
    r = invoke("generate", "--config", cfg, "--db", str(db_file), "--until-planned")
    assert r.exit_code == 0, r.output
    assert "10 study pairs in the pool, for 4 planned pairs and the 10 pooled pairs the plan's power assumes" in r.output
    db = open_db(db_file)
    assert db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'study'").fetchone()[0] == 10
    assert pool_short(db, aggregate(db).study) == ""

    # once rating has started, the pairs pooled from then on follow every earlier pair in the order
    pid = db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank LIMIT 1").fetchone()[0]
    submit_rating(db, AppConfig(ratings_per_pair=1), RatingInput(pid, "ann", {c: "pass" for c in CRITERIA},
                                                                {c: "pass" for c in CRITERIA}, "tie"))
    before = dict(db.execute("SELECT id, queue_rank FROM pairs"))
    assert all(0 <= q < 1 for q in before.values())
    r = invoke("generate", "--config", cfg, "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 0, r.output
    assert "the study has ratings already, so this pool's pairs follow every pair pooled before" in r.output + r.stderr
    db = open_db(db_file)
    after = dict(db.execute("SELECT id, queue_rank FROM pairs"))
    assert {p: after[p] for p in before} == before and len(after) == len(before) + 2
    assert all(1 <= after[p] < 2 for p in set(after) - set(before))
    assert pool_short(db, aggregate(db).study) == ""


@pytest.mark.slow
def test_until_planned_stops_when_a_round_adds_nothing(tmp_path, make_config, monkeypatch):
    """Every assisted sample falls back (here: forced): the second round sees no progress and stops with the
    reason, instead of looping for ever."""
    from evalkit.study import pairs

    monkeypatch.setattr(pairs, "_run_item", lambda *a, **k: (0, 1))
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=4))
    cfg = str(make_config(gate_file=str(gate), **{"pool.prompts": ["writing-01"], "pool.gold_rate": 0.0}))
    r = invoke("generate", "--config", cfg, "--db", str(tmp_path / "n.db"), "--until-planned")
    assert r.exit_code == 1 and "stopped at 0 of 5 study pairs: its last round added none" in r.output
    assert open_db(tmp_path / "n.db")["experiments"].count == 1  # one round, then the stop


def test_until_planned_needs_a_plan_and_sensible_options(tmp_path, make_config):
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=0))
    cfg = str(make_config(gate_file=str(gate)))
    r = invoke("generate", "--config", cfg, "--db", str(tmp_path / "x.db"), "--until-planned")
    assert r.exit_code == 1 and "planned_pairs = 0" in r.output and "evalkit plan" in r.output
    r = invoke("generate", "--config", cfg, "--until-planned", "--samples", "3")
    assert r.exit_code == 1 and "leave out --samples" in r.output
    r = invoke("generate", "--config", cfg, "--reserve", "0.2")
    assert r.exit_code == 1 and "--reserve is for --until-planned" in r.output


@pytest.mark.slow
def test_the_apps_first_start_says_so_and_does_not_fill_the_pool(tmp_path, make_config):
    """The demo's first start (`evalkit serve` -> `evalkit prepare`) builds its small pool under the shipped gate
    and says the pool cannot reach the plan, rather than generating the planned pairs first."""
    from evalkit.config import load_config
    from evalkit.study.gate import read_gate_file
    from evalkit.study.preparation import ensure_pool

    planned = read_gate_file()[1].planned_pairs  # the shipped gate's plan
    assert planned > 2
    cfg = load_config(make_config(**{"pool.prompts": ["writing-01"], "pool.samples": 2}))
    said = []
    assert ensure_pool(cfg, tmp_path / "first.db", echo=said.append) == 2
    assert any(f"study 'main': the pool holds 2 study pairs, fewer than the {planned} planned pairs" in m for m in said)


def test_serve_says_when_the_pool_cannot_reach_the_plan(tmp_path):
    from evalkit.locations import evalkit_command
    from evalkit.ui.server import plan_hint

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=1725))
    build_study(open_db(tmp_path / "s.db"), SyntheticStudy(pairs=20, raters_per_pair=1, raters=2, gate_path=str(gate)))
    hint = plan_hint(tmp_path / "s.db")
    assert "study 'main': the pool holds 20 study pairs, fewer than the 1725 planned pairs" in hint
    # evalkit as the shell can type it: `evalkit` on PATH, else this environment's (.ci/run activates no .venv)
    assert f"`{evalkit_command()} generate --until-planned` adds samples until it holds 1898" in hint


# ---- item 4: frozen at completion


def _rate_gold_badly(db, rater="r1"):
    """Gold pairs, rated by `rater` with half the answers wrong (accuracy 0.5, below the gate's 0.8)."""
    from evalkit.study.gold import add_gold_pairs

    exp = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    gold_items(db, exp, 2)  # the pool's extra samples that gold pairs are made from
    assert add_gold_pairs(db, exp, PROMPTS) == 2
    first, second = gold_pairs(db)
    assert known(first) == known(second)  # one pair all wrong, one all right: accuracy 0.5
    for g, wrong in ((first, 99), (second, 0)):
        submit_rating(db, AppConfig(), RatingInput(g["id"], rater, answer(g["a_expected"], wrong),
                                                   answer(g["b_expected"], wrong), "A"))


@pytest.mark.parametrize("looked_before", [True, False])
def test_a_gold_rating_after_completion_changes_neither_exclusions_nor_verdict(tmp_path, looked_before):
    """The fixture's 4 planned pairs complete with its 12th rating. A gold rating stored afterwards would leave r1
    out (accuracy 0.5 < 0.8): the decision keeps its excluded set (none) and its verdict; the look after the
    decision shows the change, apart. Whether or not anyone looked between completion and the gold rating: the
    decision is the one as of the completing rating."""
    db = open_db(tmp_path / "f.db")
    load_fixture(db, tmp_path / "gate.toml", GATE + "min_gold_accuracy = 0.8\n")
    if looked_before:
        first = aggregate(db)
        assert first.frozen is not None and not first.interim
    _rate_gold_badly(db)
    agg = aggregate(db)
    assert agg.frozen is not None and agg.frozen.excluded == []
    assert agg.frozen.completed_rating_id == 12 and len(agg.frozen.sample) == 12
    if looked_before:
        assert verdict_of(agg) == verdict_of(first)
        assert agg.tables["non_inferiority"].equals(first.tables["non_inferiority"])
    assert not agg.interim and agg.verdict.label == "decision on the planned sample"
    t = agg.tables["gold"].set_index("rater")
    assert t.loc["r1", "accuracy"] == 0.5 and not t.loc["r1", "excluded"]  # the decision's set
    assert int(agg.tables["counts"]["current_ratings"][0]) == 12  # r1's ratings stay in the tables
    # the look after the decision: r1 out, two raters a pair, so no complete pair any more
    assert agg.after is not None and agg.after.label == AFTER
    assert agg.after.decision == "INSUFFICIENT DATA"
    assert "0 of the 4 planned pairs have 3 current ratings" in agg.after.conditions[0].reason
    notes = " ".join(agg.notes)
    assert "DECISION FROZEN when the planned sample completed (rating 12" in notes
    assert "after the decision the gold check would leave out 1 rater(s) instead of 0" in notes
    # export audit, 2026-12-04: the gold note said every checked rater passed, beside r1 at 0.5 now; it says what
    # the decision's own check did
    assert "gold check at the decision (min_gold_accuracy 0.80): no rater left out" in notes
    assert "checked rater(s) at or above" not in notes
    assert "memory not measured when the planned sample completed: the decision keeps that for good" in notes
    text = format_text(agg)
    assert "AFTER THE DECISION (not the decision; the data as it is now): INSUFFICIENT DATA" in text
    assert text.index("VERDICT: ") < text.index("AFTER THE DECISION")
    assert db["decisions"].count == 1
    with pytest.raises(sqlite3.IntegrityError, match="never changes"):
        db.execute("UPDATE decisions SET decision = 'KEEP'")


def test_gold_ratings_before_completion_do_leave_a_rater_out(tmp_path):
    """The other side of the rule: a rater found below the gold accuracy before the sample completes is left out,
    and the sample then completes only with enough other raters. The app takes 4 ratings a pair here: a pair closes
    at its quota and never reopens (its reveal may have been shown), so room for a replacement is made in advance."""
    db = open_db(tmp_path / "g.db")
    load_fixture(db, tmp_path / "gate.toml", GATE + "min_gold_accuracy = 0.8\n",
                 before_ratings=lambda db, _exp: _rate_gold_badly(db), app=AppConfig(ratings_per_pair=4))
    agg = aggregate(db)
    assert agg.frozen is None and agg.interim and db["decisions"].count == 0
    # a fourth rater completes every pair; r1 is still left out, and the decision freezes then
    for pid in [r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY rowid")]:
        submit_rating(db, AppConfig(ratings_per_pair=4),
                      RatingInput(pid, "r4", {c: "pass" for c in CRITERIA}, {c: "pass" for c in CRITERIA}, "tie"))
    agg = aggregate(db)
    assert agg.frozen is not None and agg.frozen.excluded == ["r1"]
    assert all(n == 4 for n in agg.tables["non_inferiority"]["pairs"])


def test_corrections_after_completion_do_not_move_the_decision(tmp_path):
    from evalkit.rating.queue import correct_rating

    db = open_db(tmp_path / "c.db")
    load_fixture(db, tmp_path / "gate.toml")
    first = aggregate(db)
    # every rater corrects every rating to "assisted fails everything", blind (before the reveal)
    for row in list(db.query("SELECT * FROM current_ratings")):
        side = db.execute("SELECT ordinary_side FROM pairs WHERE id = ?", [row["pair_id"]]).fetchone()[0]
        ok, bad = {c: "pass" for c in CRITERIA}, {c: "fail" for c in CRITERIA}
        a, b = (ok, bad) if side == "A" else (bad, ok)
        correct_rating(db, AppConfig(), row["id"], RatingInput(row["pair_id"], row["rater"], a, b, "tie"))
    later = aggregate(db)
    assert verdict_of(later) == verdict_of(first)
    assert later.tables["non_inferiority"].equals(first.tables["non_inferiority"])
    assert later.after.fidelity != later.verdict.fidelity  # the data now says something else, shown apart


def test_concurrent_first_looks_store_one_decision(tmp_path):
    db_file = tmp_path / "cc.db"
    gate = tmp_path / "g.toml"
    gate.write_text(gate_file_text(planned_pairs=30, margin=0.2))
    build_study(open_db(db_file), SyntheticStudy(pairs=40, raters_per_pair=3, raters=12, pass_rate=0.7,
                                                 rater_accuracy=0.9, seed=2, gate_path=str(gate)))
    results, errors = [], []

    def look():
        try:
            results.append(aggregate(open_db(db_file, migrate_schema=False)))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=look) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 6
    db = open_db(db_file)
    assert db["decisions"].count == 1
    stored = db.execute("SELECT decided_at FROM decisions").fetchone()[0]
    assert {r.frozen.decided_at for r in results} == {stored}
    assert len({json.dumps(r.verdict.to_json(), sort_keys=True, default=str) for r in results}) == 1


@pytest.mark.slow
def test_results_tab_says_which_study_it_shows_and_when_the_pool_is_short(tmp_path, tiny_models):
    from apphelpers import served, write_config
    from test_app_client import Tab

    from evalkit.rating import roster as raters
    from evalkit.config import load_config

    gate1, gate2 = tmp_path / "g1.toml", tmp_path / "g2.toml"
    gate1.write_text(gate_file_text(planned_pairs=1725))
    gate2.write_text(gate_file_text(planned_pairs=30, margin=0.15))
    path = tmp_path / "app.db"
    db = open_db(path)
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=6, gate_path=str(gate1)))
    build_study(db, SyntheticStudy(pairs=10, raters_per_pair=3, raters=6, gate_path=str(gate2), study="second", seed=1))
    code = raters.add(db, "olga", organiser=True).code
    db.conn.close()
    cfg = load_config(write_config(tmp_path / "c.toml", tiny_models))
    with served(cfg, path) as url:
        olga = Tab(url)
        olga.call("/sign_in", "", "", code)
        out = olga.call("/results")
        assert "Shown: study 'second' (the latest), 2 of 2 in this database" in out["verdict"]
        assert "pool holds 10 study pairs, fewer than the 30 planned pairs" in out["verdict"]
        assert "| 评分对总数 | 10 |" in out["counts"]  # the study being rated
        out = olga.call("/results_study", "main")
        assert "Shown: study 'main', 1 of 2 in this database" in out["verdict"]
        assert "pool holds 20 study pairs, fewer than the 1725 planned pairs" in out["verdict"]


# --- the decision is the same whoever looks first, and the figures beside it are its own (audit, 2026-12-02) ------

def _decided_study(tmp_path, name: str) -> "Path":
    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    path = tmp_path / f"{name}.db"
    build_study(open_db(path), SyntheticStudy(pairs=100, raters_per_pair=3, raters=12, pass_rate=1.0,
                                              rater_accuracy=1.0, speedup=2.0, extra_memory_mb=100, seed=1,
                                              gate_path=str(gate)))
    return path


def _copy(src, dst):
    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    a.backup(b)
    a.close()
    b.close()
    return dst


def _slow_bench(path, started_before_completion: bool):
    """A later benchmark measuring a 0.9x speed-up and 5000 MB; optionally started before the planned sample completed
    (its results stored now, after it)."""
    import numpy as np

    from evalkit.store import insert_together, now
    from evalkit.study.synthetic import _bench

    db = open_db(path)
    gate = json.loads(db.execute("SELECT gate_json FROM experiments WHERE kind = 'pool'").fetchone()[0])
    insert_together(db, lambda d: _bench(d, SyntheticStudy(pairs=1, speedup=0.9, extra_memory_mb=5000),
                                         np.random.default_rng(9), now(), gate))
    if started_before_completion:
        first = db.execute("SELECT MIN(created_at) FROM ratings").fetchone()[0]
        db.execute("UPDATE experiments SET created_at = ? WHERE id = (SELECT MAX(id) FROM experiments)", [first])
        db.conn.commit()
    db.conn.close()


def test_the_decision_is_the_same_whoever_looks_first_and_whenever(tmp_path):
    """Two readers, two moments: the Results tab passed the app's own length tolerance and bootstrap, and the first
    reader's speed figure froze the decision; a benchmark started before completion but stored after it counted for
    a reader who looked once it was stored, not for one who looked while it ran. Every copy below must freeze the
    same decision on the same figures."""
    path = _decided_study(tmp_path, "s")
    early, app_first, late = (_copy(path, tmp_path / f"{n}.db") for n in ("early", "app", "late"))
    # one reader looks while the benchmark is running (started, nothing stored), another only after it stored
    db = open_db(early)
    running = insert_experiment(db, "bench", {"bench": {"length_tolerance": 0.1, "bootstrap": 2000}}, {})
    db.execute("UPDATE experiments SET created_at = (SELECT MIN(created_at) FROM ratings) WHERE id = ?", [running])
    db.conn.commit()
    first_early = aggregate(db).frozen
    db.conn.close()
    _slow_bench(late, started_before_completion=True)
    first_late = aggregate(open_db(late)).frozen
    from evalkit.aggregate.cache import AggregateCache

    first_app = AggregateCache().get(open_db(app_first), 0.5, 50).frozen  # another tolerance and bootstrap
    reference = aggregate(open_db(path)).frozen
    for other in (first_early, first_late, first_app):
        assert other.verdict.decision == reference.verdict.decision
        assert other.speed == reference.speed


def test_the_figures_shown_beside_a_frozen_decision_are_the_ones_it_weighed(tmp_path):
    path = _decided_study(tmp_path, "s")
    decided = aggregate(open_db(path))
    assert decided.frozen is not None and decided.verdict.decision.value == "KEEP"
    _slow_bench(path, started_before_completion=False)
    agg = aggregate(open_db(path))
    assert agg.verdict.decision.value == "KEEP" and agg.after.decision.value == "DROP"
    # the frozen figure is stored as the speed's JSON with its notes' keys and figures beside it (the Chinese verdict's)
    assert agg.speed.to_json() | {"keyed": agg.speed.keyed_json()} == decided.frozen.speed
    assert agg.speed.extra_memory_mb == 100
    # measured since: the largest memory; the speed-up stays on the gate's first speed_rounds rounds (the first
    # benchmark's), the later benchmark's rounds reported as further rounds, never weighed
    assert agg.speed_now.extra_memory_mb == 5000 and agg.speed_now.speedup == decided.frozen.speed["speedup"]
    assert agg.speed_now.benchmark_ids == decided.frozen.speed["benchmark_ids"]
    assert agg.speed_now.rounds_further == 2 and len(agg.speed_now.further_benchmark_ids) == 1
    text = format_text(agg)
    assert "SPEED: speed-up over" in text and re.search(r"SPEED: speed-up over \d+ comparable pairs 1\.\d\dx", text)
    assert "the speed and memory figures shown are those the decision weighed; measured since" in text
    assert "the draft adds 5000 MB" in text
    j = agg.to_json()
    assert j["speed"]["extra_memory_mb"] == 100 and j["speed_now"]["extra_memory_mb"] == 5000
    # the report cites, for each, the benchmarks it comes from: the decision's conditions the first, the look after
    # the decision and the timing tables both
    from evalkit.publish.provenance import build_provenance

    db = open_db(path)
    benches = [r[0] for r in db.execute("SELECT id FROM experiments WHERE kind = 'bench' ORDER BY id")]
    prov = build_provenance(db, agg)
    assert prov.for_condition("speed-up") == [benches[0]] and prov.for_condition("memory") == [benches[0]]
    assert prov.for_condition("speed-up", after=True) == benches[:1] == prov.for_table("speedup")
    assert next(f for f in prov.figures if f.name == "speed-up").experiments == [benches[0]]


def test_a_benchmark_stored_while_the_first_look_computes_its_speed_is_not_left_out(tmp_path, monkeypatch):
    """Durability audit, 2026-12-02: the first look computed the speed figure, then loaded the ratings; a benchmark and
    the completing rating stored in between made the versions at completion and now agree, so the look froze the
    older figure (KEEP at 2.0x, where a look afterwards freezes DROP at 0.9x). The figure now carries the version it
    was read at, and a decision reuses it only when that is the version at completion."""
    import importlib

    from evalkit.config import AppConfig
    from evalkit.rating.queue import RatingInput, submit_rating

    gate = tmp_path / "g.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    path = tmp_path / "s.db"
    build_study(open_db(path), SyntheticStudy(pairs=99, unrated_pairs=1, raters_per_pair=3, raters=12, pass_rate=1.0,
                                              rater_accuracy=1.0, speedup=2.0, extra_memory_mb=100, seed=1,
                                              gate_path=str(gate)))
    db = open_db(path)
    last = db.execute("""SELECT id FROM pairs WHERE kind = 'study' AND id NOT IN (SELECT pair_id FROM ratings)""").fetchone()[0]
    passing = {c: "pass" for c in CRITERIA}
    for rater in ("r1", "r2"):
        submit_rating(db, AppConfig(), RatingInput(last, rater, passing, passing, "tie"))
    assert aggregate(db).frozen is None  # 99 of 100 pairs complete
    reference = _copy(path, tmp_path / "reference.db")
    timing = importlib.import_module("evalkit.aggregate.timing")  # the module (the package exports a function so named)
    real = timing._runs

    def meanwhile(*args, **kwargs):  # while this look computes its speed: a slow benchmark, then the last rating
        out = real(*args, **kwargs)
        if not meanwhile.done:
            meanwhile.done = True
            for p in (path, reference):
                _slow_bench(p, started_before_completion=False)
                submit_rating(open_db(p), AppConfig(), RatingInput(last, "r3", passing, passing, "tie"))
        return out

    meanwhile.done = False
    monkeypatch.setattr(timing, "_runs", meanwhile)
    first = aggregate(db).frozen
    monkeypatch.setattr(timing, "_runs", real)
    afresh = aggregate(open_db(reference)).frozen
    assert afresh is not None and afresh.verdict.decision.value == "DROP" and afresh.speed["extra_memory_mb"] == 5000
    assert first is not None and first.verdict.decision == afresh.verdict.decision and first.speed == afresh.speed


def _one_pool(tmp_path, make_config, prompts: list[str]) -> tuple:
    """A study of one sampling pool (one sample of `prompts`) made through the CLI under a planned gate: (the gate
    file, the config's settings, the database)."""
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=30))
    base = {"gate_file": str(gate), "decoding.mode": "sample", "pool.prompts": prompts}
    db_file = tmp_path / "p.db"
    r = invoke("generate", "--config", str(make_config(**base)), "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 0, r.output
    return gate, base, db_file


def _generations(db_file) -> int:
    return sqlite3.connect(db_file).execute("SELECT COUNT(*) FROM generations").fetchone()[0]


def _own_prompts(tmp_path, monkeypatch):
    """A copy of the prompt files that the test may edit, read in place of prompts/."""
    import shutil

    folder = tmp_path / "prompts"
    shutil.copytree("prompts", folder)
    monkeypatch.setenv("EVALKIT_PROMPTS", str(folder))
    return folder


def test_a_later_pool_made_with_another_draft_setting_is_refused_before_any_generation(tmp_path, make_config):
    """Verdict audit, 2026-12-04: `generate` checked that the gate file was the study's, not the rest of the config,
    so a later pool of the same study could be made with 20 draft tokens where the rated pairs had 5, and its
    benchmark decided the study's speed-up. A pool joining a study must share its first pool's settings (precision,
    decoding, drafting, weights); another setting is refused before anything is generated, naming the setting and
    --new-study."""
    gate, base, db_file = _one_pool(tmp_path, make_config, ["writing-01"])
    base = {k: v for k, v in base.items() if k != "gate_file"}
    # the same setting joins as before (a bootstrap size of its own does not split the study)
    same = make_config(gate_file=str(gate), **base, **{"bench.bootstrap": 300})
    r = invoke("generate", "--config", str(same), "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 0, r.output
    count = lambda: sqlite3.connect(db_file).execute("SELECT COUNT(*) FROM experiments").fetchone()[0]  # noqa: E731
    before = count()
    other = make_config(gate_file=str(gate), **base, **{"assistant.num_assistant_tokens": 9})
    r = invoke("generate", "--config", str(other), "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 1 and "assistant.num_assistant_tokens = 9 where the study's pool has 4" in r.output, r.output
    assert "--new-study NAME" in r.output and count() == before  # nothing stored
    r = invoke("generate", "--config", str(other), "--db", str(db_file), "--samples", "1", "--new-study", "nine")
    assert r.exit_code == 0, r.output  # a study of its own


def test_a_later_pool_of_edited_or_other_prompts_is_refused_before_any_generation(tmp_path, make_config, monkeypatch):
    """Sceptic audit, 2026-12-06: the check of a later pool compared the config, not the requests, so after a look an
    organiser could edit a prompt file (here writing-01's task cut from about 150 characters to about 30) or pool
    fewer prompts, and the new pairs joined the study under the same ids, filling its decision sample where the first
    pool ran out. Now both are refused before anything is generated, naming the prompt and the hashes; the file put
    back joins as before."""
    from evalkit.task.prompts import prompt_hash

    folder = _own_prompts(tmp_path, monkeypatch)
    _gate, both, db_file = _one_pool(tmp_path, make_config, ["writing-01", "writing-02"])
    config, before = make_config(**both), _generations(db_file)

    anchor = folder / "writing-01.toml"
    text = anchor.read_text()
    old_hash = prompt_hash(next(p for p in PROMPTS if p.id == "writing-01"))
    anchor.write_text(text.replace("约 150 字", "约 30 字"))
    new_hash = prompt_hash(next(p for p in load_prompts(ids=["writing-01"])))
    r = invoke("generate", "--config", str(config), "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 1 and f"prompt writing-01 is another request (hash {new_hash}) than the study's pairs " \
        f"answered (hash {old_hash})" in r.output, r.output
    assert "prompt files" in r.output and "--new-study NAME" in r.output and _generations(db_file) == before
    anchor.write_text(text)

    fewer = make_config(**(both | {"pool.prompts": ["writing-02"]}))
    r = invoke("generate", "--config", str(fewer), "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 1 and "the prompts differ (not writing-01)" in r.output, r.output
    assert _generations(db_file) == before
    assert invoke("generate", "--config", str(config), "--db", str(db_file), "--samples", "1").exit_code == 0


def test_a_later_pool_under_reworded_criteria_is_refused(tmp_path, make_config, monkeypatch):
    """Sceptic audit, 2026-12-06: each pair asks the criteria's wording stored with it, so a pool made after a
    criterion was reworded would have its raters answer another question under the same id, in the same study. It is
    refused before anything is generated, naming the prompt; the file put back joins as before."""
    folder = _own_prompts(tmp_path, monkeypatch)
    _gate, base, db_file = _one_pool(tmp_path, make_config, ["writing-01"])
    config, before = make_config(**base), _generations(db_file)
    anchor = folder / "writing-01.toml"
    text = anchor.read_text()
    anchor.write_text(text.replace("Adds no specific date, restore moment, duration, or service commitment",
                                   "Names no wrong day"))
    r = invoke("generate", "--config", str(config), "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 1 and "prompt writing-01 is another wording of its criteria" in r.output, r.output
    assert "--new-study NAME" in r.output and _generations(db_file) == before
    anchor.write_text(text)
    assert invoke("generate", "--config", str(config), "--db", str(db_file), "--samples", "1").exit_code == 0


def test_a_later_pool_whose_target_has_another_chat_template_is_refused(tmp_path, make_config, tiny_models):
    """Sceptic audit, 2026-12-06: a later pool was compared with the study's first by its settings and the weights'
    digest, which reads no tokenizer file, so the same weights beside an edited chat template (every prompt framed
    otherwise) joined the study, and a benchmark of it could decide its speed-up. The tokenizer's fingerprint (chat
    template, vocabulary, special ids) must now match too; the refusal names it and --new-study."""
    import shutil

    framed = tmp_path / "framed-target"
    shutil.copytree(tiny_models["target"], framed)
    (framed / "chat_template.jinja").write_text(
        "{% for m in messages %}<s>{{ m['content'] }}</s>{% endfor %}{% if add_generation_prompt %}<s>{% endif %}")
    _gate, base, db_file = _one_pool(tmp_path, make_config, ["writing-01"])
    before = _generations(db_file)
    r = invoke("generate", "--config", str(make_config(**base, **{"models.target": str(framed)})), "--db",
               str(db_file), "--samples", "1")
    assert r.exit_code == 1 and "other target tokenizer (chat_template_hash" in r.output, r.output
    assert "--new-study NAME" in r.output and _generations(db_file) == before


def test_a_pool_refused_for_its_pair_leaves_no_database_and_says_what_to_fix(tmp_path, make_config):
    """Organiser audit: `evalkit generate` with a draft `evalkit check` does not approve (another tokenizer) was
    refused only after it had opened --db, so a new, empty database stayed behind (which `plan --db` and `aggregate`
    then read as a study's), and the fix said to switch on the assisted path, which was on. Now nothing is written,
    the message says so, and the fix points at what `evalkit check` reports; a path switched off is told to switch
    it on."""
    db_file = tmp_path / "new.db"
    r = invoke("generate", "--config", str(make_config(draft="other_draft")), "--db", str(db_file), "--samples", "1")
    assert r.exit_code == 1 and "the assisted path is not approved: tokenizers differ" in r.output, r.output
    assert f"nothing was written to {db_file}" in r.output and "fix what `evalkit check --config CONFIG` reports" in r.output
    assert "switch generation_path" not in r.output and "load_draft = true" not in r.output
    assert not db_file.exists()
    r = invoke("generate", "--config", str(make_config(generation_path="ordinary", load_draft=False)), "--db",
               str(db_file), "--samples", "1")
    assert r.exit_code == 1 and "the assisted path is switched off" in r.output, r.output
    assert "set generation_path = 'assisted' and load_draft = true in the config" in r.output and not db_file.exists()


def test_resume_with_a_database_that_does_not_exist_creates_none(tmp_path, make_config):
    """Organiser audit: `evalkit generate --resume ID --db TYPO.db` created a new, empty database and answered that it
    "holds no unfinished pool", which does not tell an organiser that the --db was wrong. It is refused before any
    file is made, naming the path."""
    db_file = tmp_path / "typo.db"
    r = invoke("generate", "--config", str(make_config()), "--db", str(db_file), "--resume", "3")
    assert r.exit_code == 1 and f"--resume 3: database {db_file} does not exist" in r.output, r.output
    assert "pass the --db the stopped `evalkit generate` used" in r.output and not db_file.exists()


def test_a_study_name_generate_accepts_up_front_is_stored_and_a_taken_one_names_the_file(make_config, tmp_path):
    """First-hour audit, 2026-12-06: `generate --new-study` checked the name up front (at most 100 characters), loaded
    the models, and then the store refused any name over 64 characters with another rule ("give a name of 1 to 64
    printable characters"); a taken name was refused "in this database", naming no file. One rule now, and the
    refusal names the database and the studies in it."""
    cfg, db = str(make_config()), tmp_path / "s.db"
    long_name = "pilot-" + "x" * 74  # 80 characters
    for name in ("main", long_name):
        r = invoke("generate", "--config", cfg, "--db", str(db), "--samples", "1", "--new-study", name)
        assert r.exit_code == 0 and f"study '{name}'" in r.output, r.output
    r = invoke("generate", "--config", cfg, "--db", str(db), "--samples", "1", "--new-study", "main")
    assert r.exit_code == 1 and f"a study named 'main' already exists in {db.resolve()}" in r.output, r.output
    assert f"studies here: main, {long_name}" in r.output
