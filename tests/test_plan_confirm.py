"""`evalkit plan --compare` confirms its recommendation on fresh simulated studies (plan audit, 2026-12-04, F2): the
search sizes each design from the very studies that measure its power, and the comparison picks the cheapest of ten
such noisy figures, so the printed power read high (0.865 printed, 0.79 on fresh studies) and the gate's
expected_ratings low."""

from __future__ import annotations

import json
import re

from evalkit.stats import T_FLOOR
from evalkit.study.gate import parse_gate
from evalkit.study.monitoring import FIXED, GROUP_SEQUENTIAL
from evalkit.study.plan.comparison import compare, evaluate, format_comparison
from evalkit.study.plan.designs import Design, Scenario
from evalkit.study.plan.model import StudyModel
from evalkit.task.criteria import CRITERIA

POWER = 0.8


def _scenario():
    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    return Scenario(model, pool=900, margin=0.2, minutes_per_rating=0.5)


DESIGNS = [Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 40), Design(T_FLOOR, False, FIXED, 1, 0.1)]


def test_the_recommended_size_reaches_the_power_on_studies_that_did_not_choose_it():
    scenario = _scenario()
    # with this seed the search's 20 studies per size settle on a size whose power on fresh studies is about 0.70
    c = compare(scenario, POWER, 20, DESIGNS, seed=4, confirm=2000)
    best = c.best()
    assert best.confirmed == 2000 and best.power.studies == 2000 and best.false_keep.studies == 2000
    assert best.power.rate >= POWER and best.holds
    searched, searched_power = best.search
    assert best.planned_pairs > searched  # stepped up from the search's size, which fresh studies did not bear out
    # judged once more on studies neither the search nor the confirmation saw: the power holds within its error
    again = evaluate(best.design, scenario, best.planned_pairs, 2000, 100, [12345])
    assert again.power.high >= POWER
    short = evaluate(best.design, scenario, searched, 2000, 100, [12345])
    assert short.power.high < POWER  # what the comparison recommended before
    # the gate lines and the text carry the fresh figures, and say what the search had
    gate = parse_gate("\n".join(c.gate_lines()) + "\n", "plan")
    assert gate.planned_pairs == best.planned_pairs and gate.expected_ratings == round(best.expected_ratings)
    text = format_comparison(c)
    assert re.search(rf"Confirmed on 2,000 fresh simulated studies.*power {best.power.rate:.3f} \(.*\); the search's "
                     rf"{searched:,} pairs reached {searched_power.rate:.3f}.*stepped up to {best.planned_pairs:,}",
                     text)
    assert "← recommended (fresh studies: 2,000)" in text
    # a design the search ranked close behind is judged on fresh studies too, and the cheaper once confirmed wins
    confirmed = [r for r in c.rows if r.confirmed]
    assert best.human_ratings == min(r.human_ratings for r in confirmed)
    assert all(r.human_ratings >= best.human_ratings for r in c.rows if not r.confirmed)
    # without confirmation the library's quick comparison says its figures are the search's
    quick = format_comparison(compare(scenario, POWER, 20, DESIGNS, seed=4))
    assert "Confirmed on" not in quick and "not confirmed on fresh studies" in quick


def test_plan_compare_confirms_and_writes_the_fresh_figures_and_the_marked_roster_s_lines(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from evalkit.cli import cli

    monkeypatch.setenv("EVALKIT_DATA_DIR", str(tmp_path / "data"))
    base = ["plan", "--compare", "--margin", "0.3", "--studies", "20", "--pool", "600", "--pass-rate", "0.9",
            "--minutes-per-rating", "0.5", "--onboarding-minutes", "0"]
    r = CliRunner().invoke(cli, base + ["--confirm", "100"])
    assert r.exit_code == 1 and "--confirm 100" in r.output and "at least 2000" in r.output
    r = CliRunner().invoke(cli, base + ["--rosters", "40", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{"):])
    best = out["designs"][out["recommended"]]
    assert out["confirm"] == 2000 and best["confirmed"] == 2000 and best["power"]["studies"] == 2000
    assert f"expected_ratings = {round(best['expected_ratings'])}" in out["gate_lines"]
    # with no onboarding cost 40 raters need the fewest hours: the roster the text marks has its lines in the JSON
    # too (plan audit L5: only the recommended roster's were), confirmed as the recommended design's are
    assert out["fewest_hours_roster"] == 1
    marked = out["rosters"][1]
    assert marked["raters"] == 40 and marked["confirmed"] == 2000
    assert "planned_raters = 40" in out["fewest_hours_gate_lines"]
    assert f"planned_pairs = {marked['planned_pairs']}" in out["fewest_hours_gate_lines"]


def test_a_design_fresh_studies_do_not_bear_out_gives_way_to_the_next_cheapest():
    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    scenario = Scenario(model, pool=85, margin=0.2, minutes_per_rating=0.5)
    # with this seed the search gives the PPI design the whole pool (85 pairs) at power 0.8 on its 20 studies; on
    # fresh ones it has about 0.67, and a PPI design cannot grow beyond its pool
    c = compare(scenario, POWER, 20, DESIGNS, seed=3, confirm=2000)
    (was, fresh), = c.unconfirmed
    assert was.design == DESIGNS[0] and was.planned_pairs == 85 and was.human_ratings < c.best().human_ratings
    assert fresh.planned_pairs is None and "short of 80%" in fresh.note and "the pool holds 85" in fresh.note
    assert c.recommended == 1 and c.best().confirmed == 2000 and c.best().power.rate >= POWER
    assert not c.rows[0].confirmed  # its row keeps the search's figures, the text says what fresh studies found
    text = format_comparison(c)
    assert (f"{DESIGNS[0].name}: the search's cheapest (85 pairs, power {was.power.rate:.2f}), not confirmed: 85 "
            "pairs gave power") in text and "the next cheapest was judged instead" in text
    assert c.to_json()["unconfirmed"][0]["search_pairs"] == 85


def test_a_search_size_a_ladder_step_too_large_is_stepped_down_on_fresh_studies():
    scenario = _scenario()
    # with this seed the search's 15% ladder settles on 85 pairs for the PPI design; 5% and 10% fewer still reach the
    # power on fresh studies, so the gate would have asked for pairs (and ratings) the study does not need
    c = compare(scenario, POWER, 20, DESIGNS, seed=7, confirm=2000)
    best = c.best()
    assert best.design == DESIGNS[0] and best.search[0] == 85 and best.planned_pairs < 85
    assert best.power.rate >= POWER and best.confirmed == 2000
    again = evaluate(best.design, scenario, best.planned_pairs, 2000, 100, [54321])
    assert again.power.high >= POWER  # studies the confirmation never saw agree
    assert f"were stepped down to {best.planned_pairs:,}" in format_comparison(c)
