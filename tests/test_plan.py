"""The planned sample size: `evalkit plan` simulates whole studies through the gate's own analysis, and the gate's
error rates hold in fresh simulations: with a true drop equal to the margin KEEP comes out in at most the
nominal rate (one-sided 2.5% per criterion, plus Monte-Carlo slack); with no drop and the planned number of
pairs, KEEP comes out at about the planned power."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.plan import StudyModel, criterion_passes, normal_guess, plan_study, simulate
from evalkit.prompts import CRITERIA
from evalkit.store import open_db
from evalkit.synthetic import SyntheticStudy, build_study, gate_file_text

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
    rows = {r.pairs: r for r in plan.rows}
    assert rows[plan.recommended_pairs].keep_rate >= POWER
    assert any(r.pairs < plan.recommended_pairs and r.keep_rate < POWER for r in plan.rows)  # it is the smallest
    assert plan.gate_line() == f"planned_pairs = {plan.recommended_pairs}"
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
    assert plan.false_keep_rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 300)


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


def test_plan_command_reads_the_database_and_prints_the_gate_line(tmp_path):
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=0, margin=0.2))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=40, raters_per_pair=3, raters=6, pass_rate=0.7, rater_accuracy=0.9,
                                   bench=False, gate_path=str(gate), seed=3))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'gate_file = "{gate}"\n')
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(tmp_path / "s.db"), "--studies", "100"])
    assert r.exit_code == 0, r.output
    assert "rule pre-screen of the pair pool (80 outputs)" in r.output
    assert "observed agreement" in r.output and "database: 6 raters" in r.output
    assert "margin 0.200" in r.output and "planned_pairs = " in r.output
    r = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--db", str(tmp_path / "s.db"), "--studies", "100",
                                 "--pass-rate", "0.9", "--raters-per-pair", "2", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["model"]["pass_rates"] == {c: 0.9 for c in CRITERIA} and out["model"]["raters_per_pair"] == 2
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
