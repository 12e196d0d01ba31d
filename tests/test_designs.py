"""The plan compares designs by their cost (#20 item 6): each design sized for the power on simulated studies run
through the gate's own functions, its expected human ratings and rater-hours, its false-KEEP rate, the cheapest that
holds recommended with gate lines the gate file accepts."""

from __future__ import annotations

from evalkit.stats import T_FLOOR, UNION
from evalkit.study.gate import parse_gate
from evalkit.study.monitoring import FIXED, GROUP_SEQUENTIAL
from evalkit.study.plan.designs import Design, Scenario, candidates, compare, format_comparison
from evalkit.study.plan.model import StudyModel
from evalkit.task.criteria import CRITERIA


def test_candidates_cover_the_issue_s_designs():
    names = [d.name for d in candidates()]
    assert names[0] == "union with Tango, 3 ratings per pair"
    assert len(names) == 10 and len(set(names)) == 10
    assert any("PPI + group sequential every 50 ratings, 1 rating per pair (+10% twice)" in n for n in names)
    assert not any("confidence sequence" in d.monitoring for d in candidates())
    assert any(d.monitoring == "confidence sequence" for d in candidates("these raters"))


def test_plan_compares_designs_and_recommends_the_cheapest_that_holds():
    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    scenario = Scenario(model, pool=900, margin=0.2, minutes_per_rating=0.5)
    designs = [Design(UNION, False, FIXED, 3), Design(T_FLOOR, False, FIXED, 1, 0.1),
               Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 40)]
    c = compare(scenario, 0.8, 80, designs)
    assert all(r.planned_pairs for r in c.rows), [r.note for r in c.rows]
    today, single, sequential = c.rows
    # one rating per pair costs fewer ratings than three at the same power; hours follow the stated minutes
    assert single.expected_ratings < today.expected_ratings
    assert abs(today.rater_hours - today.expected_ratings * 0.5 / 60) < 1e-9
    assert all(r.power.rate >= 0.8 for r in c.rows)
    holding = [r for r in c.rows if r.holds]
    best = c.best()
    assert best in holding and best.expected_ratings == min(r.expected_ratings for r in holding)
    lines = c.gate_lines()
    gate = parse_gate("\n".join(lines) + "\n", "plan")
    assert gate.planned_pairs == best.planned_pairs and gate.min_ratings_per_pair == best.design.raters_per_pair
    assert gate.monitoring == best.design.monitoring and gate.expected_ratings == round(best.expected_ratings)
    text = format_comparison(c)
    assert "← recommended" in text and lines[0] in text and "rater-hours" in text
    # the floor: a test that knew its variances needs fewer ratings than every design that estimates them
    assert c.floor.power >= 0.8 and 0 < c.floor.expected_ratings < min(r.expected_ratings for r in c.rows)
    assert c.floor.variance_ppi < c.floor.variance_raters  # the pre-screen explains part of the raters' variance
    assert f"would need {c.floor.expected_ratings:,.0f} expected ratings" in text


def test_the_floor_falls_with_the_margin_and_with_the_pre_screen_s_agreement():
    from evalkit.study.plan.designs import floor

    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, pair_correlation=0.5)
    base = floor(Scenario(model, pool=5000, margin=0.1), pairs_per_criterion=50_000)
    wider = floor(Scenario(model, pool=5000, margin=0.2), pairs_per_criterion=50_000)
    sharper = floor(Scenario(model, pool=5000, margin=0.1, prescreen_agreement=0.94), pairs_per_criterion=50_000)
    assert wider.expected_ratings < base.expected_ratings / 2.5  # about a quarter: ratings go with 1 / margin^2
    assert sharper.variance_ppi < base.variance_ppi and sharper.expected_ratings <= base.expected_ratings
    assert base.expected_ratings < base.fixed_ratings  # looks that can stop the study save ratings
