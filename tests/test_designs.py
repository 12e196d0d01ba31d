"""The plan compares designs by their cost (#20 item 6): each design sized for the power on simulated studies run
through the gate's own functions, its expected human ratings and rater-hours, its false-KEEP rate, the cheapest that
holds recommended with gate lines the gate file accepts."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from evalkit.stats import T_FLOOR, UNION
from evalkit.study.gate import parse_gate
from evalkit.study.monitoring import FIXED, GROUP_SEQUENTIAL
from evalkit.study.plan.comparison import _false_keep, compare, evaluate, format_comparison
from evalkit.study.plan.designs import Design, Scenario, candidates
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
    # one rating per pair costs fewer ratings than three at the same power; hours follow the stated minutes and count
    # the gold pairs served meanwhile (pool.gold_rate 0.1 of the decided pairs, each rated max(k, 2) times)
    assert single.expected_ratings < today.expected_ratings
    assert today.raters == 12 and today.gold_ratings > 0 and single.gold_ratings > 0
    assert abs(today.rater_hours - (today.expected_ratings + today.gold_ratings) * 0.5 / 60) < 1e-9
    # a fixed design decides all its planned pairs: 0.1 x planned gold pairs, 3 ratings each (2 with one per pair)
    assert abs(today.gold_ratings - 0.1 * today.planned_pairs * 3) < 1e-9
    assert abs(single.gold_ratings - 0.1 * single.planned_pairs * 1.1) < 1e-9  # as a study pair
    assert sequential.gold_ratings <= 0.1 * sequential.planned_pairs * 1.1 + 1e-9  # it may stop before its maximum
    assert all(r.power.rate >= 0.8 for r in c.rows)
    holding = [r for r in c.rows if r.holds]
    best = c.best()
    assert best in holding and best.human_ratings == min(r.human_ratings for r in holding)
    lines = c.gate_lines()
    gate = parse_gate("\n".join(lines) + "\n", "plan")
    assert gate.planned_pairs == best.planned_pairs and gate.min_ratings_per_pair == best.design.raters_per_pair
    assert gate.margin == 0.2  # the margin it was sized for, not the gate file's (plan audit, 2026-12-04)
    assert gate.monitoring == best.design.monitoring and gate.expected_ratings == round(best.expected_ratings)
    assert gate.planned_raters == 12  # the roster its power assumes (a claim about raters in general)
    # with PPI, the pool its power assumes, which `generate --until-planned` then builds
    assert gate.planned_pool == (max(900, best.planned_pairs) if best.design.ppi else 0)
    text = format_comparison(c)
    assert "← recommended" in text and lines[0] in text and "rater-hours" in text and "+ gold" in text
    # the floor: a test that knew its variances needs fewer ratings than every design that estimates them
    assert c.floor.power >= 0.8 and 0 < c.floor.expected_ratings < min(r.expected_ratings for r in c.rows)
    assert c.floor.variance_ppi < c.floor.variance_raters  # the pre-screen explains part of the raters' variance
    assert f"would need {c.floor.expected_ratings:,.0f} expected ratings" in text
    # the lever no rater pays for: the pre-screen's answers on the unrated pool are a part of the variance no rating
    # shrinks, so the plan says what a pool ten times as large would take the floor to (and --json carries it)
    f = c.floor
    assert f.rater_free_share >= 0.02 and f.larger_pool == 9000 and f.larger_pool_fixed_ratings < f.fixed_ratings
    assert (f"a pool ten times as large (9,000 pairs: generation time, no rater time) would take the floor at one "
            f"fixed size from {f.fixed_ratings:,.0f} to {f.larger_pool_fixed_ratings:,.0f} ratings") in text
    assert "--pool 9000 sizes every design for it, slowly" in text and "--sizes RATERS:PAIRS --pool 9000" in text
    assert c.to_json()["larger_pool"] == {"pool": 9000, "floor_fixed_ratings": f.larger_pool_fixed_ratings,
                                          "floor_fixed_ratings_now": f.fixed_ratings,
                                          "pool_share_of_variance": f.rater_free_share}


def test_a_design_s_search_reports_each_size_it_simulates():
    """A design's search is minutes long where the pool is large (each simulated study holds it), so `plan --compare`'s
    bar moves within it: size() reports each size simulated with its KEEP rate, then the chosen one before it is
    judged where a criterion drops."""
    from evalkit.study.plan.comparison import size

    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    seen = []
    row = size(Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 40), Scenario(model, pool=900, margin=0.2), 0.8, 60,
               [5], lambda n, keep: seen.append((n, keep)))
    assert row.planned_pairs and seen[-1] == (row.planned_pairs, None)
    tried = dict(seen[:-1])
    assert len(tried) == len(seen) - 1 >= 1  # each size once
    assert tried[row.planned_pairs] >= 0.8 and all(k < 0.8 for n, k in tried.items() if n < row.planned_pairs)


def test_the_floor_falls_with_the_margin_and_with_the_pre_screen_s_agreement():
    from evalkit.study.plan.floor import floor

    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, pair_correlation=0.5)
    base = floor(Scenario(model, pool=5000, margin=0.1), pairs_per_criterion=50_000)
    wider = floor(Scenario(model, pool=5000, margin=0.2), pairs_per_criterion=50_000)
    sharper = floor(Scenario(model, pool=5000, margin=0.1, prescreen_agreement=0.94), pairs_per_criterion=50_000)
    assert wider.expected_ratings < base.expected_ratings / 2.5  # about a quarter: ratings go with 1 / margin^2
    assert sharper.variance_ppi < base.variance_ppi and sharper.expected_ratings <= base.expected_ratings
    assert base.expected_ratings < base.fixed_ratings  # looks that can stop the study save ratings
    # a larger pool shrinks the one part no rating does (the pre-screen's answers on the pairs nobody rates): the
    # floor falls with it, and the one-look figure the floor gives for ten times its pool is that pool's own
    larger = floor(Scenario(model, pool=50_000, margin=0.1), pairs_per_criterion=50_000)
    assert larger.rater_free_share < base.rater_free_share / 5
    assert larger.expected_ratings < base.expected_ratings and larger.fixed_ratings < base.fixed_ratings
    assert base.larger_pool == 50_000
    assert abs(base.larger_pool_fixed_ratings - larger.fixed_ratings) < 0.005 * larger.fixed_ratings


def test_a_futility_rule_only_takes_keeps_away():
    """floor(futility=c): a study also stops for DROP once a criterion lies c standard errors below its course where
    nothing drops. The rule is non-binding, so it can only lose KEEPs: the maximum reaching 80% power never falls, a
    rule that never fires changes nothing, and an eager one needs a larger maximum (a stop counted as KEEP, or a
    KEEP lost by a stop that came later, would not)."""
    from evalkit.study.plan.floor import floor

    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, pair_correlation=0.5)
    scenario = Scenario(model, pool=5000, margin=0.1)
    base = floor(scenario, pairs_per_criterion=50_000)
    assert floor(scenario, pairs_per_criterion=50_000, futility=1e9) == base
    eager, mild = (floor(scenario, pairs_per_criterion=50_000, futility=c) for c in (2.25, 2.75))
    assert eager.planned_pairs > mild.planned_pairs >= base.planned_pairs
    assert min(eager.power, mild.power) >= 0.8
    # so its scan may start at the floor without it (errorbench --bound does): the same result
    assert floor(scenario, pairs_per_criterion=50_000, futility=2.25, from_pairs=base.planned_pairs) == eager
    # stopping the hopeless early is what it is for: at most a few percent of the ratings here (README, the floor)
    assert mild.expected_ratings < base.expected_ratings * 1.02


def test_gold_ratings_follow_the_gold_rate_and_stop_with_the_study():
    from evalkit.study.plan.comparison import evaluate
    from evalkit.study.plan.designs import outcome, simulate

    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    design = Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 40)
    looks = simulate(design, Scenario(model, pool=900, margin=0.2), 150, 60, {}, 3)
    stop = outcome(looks)
    # decided pairs at each study's stop are the look's size: fewer than the maximum where a look stopped it
    assert set(stop["pairs"]) <= set(looks["sizes"]) and (stop["pairs"] < 150).any()
    rows = [evaluate(design, Scenario(model, pool=900, margin=0.2, gold_rate=r), 150, 60, 60, 3, looks)
            for r in (0.0, 0.1, 0.2)]
    assert rows[0].gold_ratings == 0 and rows[0].human_ratings == rows[0].expected_ratings
    assert abs(rows[1].gold_ratings - 0.1 * stop["pairs"].mean() * 1.1) < 1e-9
    assert abs(rows[2].gold_ratings - 2 * rows[1].gold_ratings) < 1e-9
    assert rows[2].rater_hours > rows[1].rater_hours > rows[0].rater_hours
    # identical pairs reach no rater and get no gold pairs (study.gold.gold_count counts the differing ones)
    half = Scenario(replace(model, identical_share=0.5), pool=900, margin=0.2)
    assert abs(half.gold_ratings(design, 100.0) - 0.1 * 100 * 0.5 * 1.1) < 1e-9


def test_the_recommended_design_is_sized_again_for_larger_rosters():
    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    scenario = Scenario(model, pool=900, margin=0.2, minutes_per_rating=0.5, onboarding_minutes=6)
    designs = [Design(T_FLOOR, False, FIXED, 1, 0.1), Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 40)]
    c = compare(scenario, 0.8, 80, designs, rosters=(12, 24, 48))
    assert [r.raters for r in c.rosters] == [12, 24, 48] and c.rosters[0] is c.best()
    assert all(r.design == c.best().design and r.power.rate >= 0.8 for r in c.rosters)
    hours = [c.hours_with_onboarding(r) for r in c.rosters]
    assert [round(h - r.rater_hours, 9) for h, r in zip(hours, c.rosters)] == [1.2, 2.4, 4.8]  # 6 min a rater
    assert c.roster == min(range(3), key=lambda i: hours[i] if c.rosters[i].holds else math.inf)
    # each roster's share: every rating at the planned maximum (1.1 per pair, as many per gold pair at a rate of 0.1)
    # spread evenly, with a quarter to spare
    assert [c.rater_share(r) for r in c.rosters] == [math.ceil(r.planned_pairs * (1.1 + 0.1 * 1.1) / r.raters * 1.25)
                                                     for r in c.rosters]
    assert f"max_ratings_per_rater = {c.rater_share(c.rosters[c.roster])}" in format_comparison(c)
    text = format_comparison(c)
    assert "onboarding" in text and "| 48 |" in text.replace(" ← fewest hours", "")
    # what each roster costs any analysis valid for raters in general: the floor times a bound that falls with the
    # raters, below what the t rule on G - 1 df needs
    assert [p.raters for p in c.prices] == [12, 24, 48]
    assert all(1 < p.lower <= p.t_test for p in c.prices) and c.prices[0].lower > c.prices[1].lower > c.prices[2].lower
    assert all(p.rater_free_share == c.floor.rater_free_share for p in c.prices)
    priced = c.to_json()["rater_prices"]
    assert [x["expected_ratings_at_least"] for x in priced] == [c.floor.expected_ratings * p.lower for p in c.prices]
    assert "The price of few raters" in text
    assert f"  48 raters: {c.floor.expected_ratings * c.prices[2].lower:,.0f} expected ratings" in text
    # where raters judge the paths differently and onboarding is free, more raters need fewer ratings: a larger
    # roster wins, with its own gate lines, which the gate file accepts
    spread = Scenario(replace(model, rater_path_sd=0.5), pool=900, margin=0.2, minutes_per_rating=0.5,
                      onboarding_minutes=0)
    wide = compare(spread, 0.8, 80, designs[:1], rosters=(12, 24, 48))
    assert wide.roster > 0
    r = wide.rosters[wide.roster]
    assert r.expected_ratings < wide.rosters[0].expected_ratings
    text = format_comparison(wide)
    assert f"With {r.raters} raters" in text and f"planned_pairs = {r.planned_pairs}" in text
    assert f"planned_raters = {r.raters}" in text
    lines = text[text.index(f"With {r.raters} raters"):]
    gate = parse_gate("\n".join(l.strip() for l in lines.splitlines() if re.match(r"\s*\w+ = ", l)), "plan")
    assert gate.planned_raters == r.raters and gate.planned_pairs == r.planned_pairs


def test_the_plan_shows_what_the_claim_about_raters_in_general_costs_over_these_raters():
    # raters who judge the paths differently: a claim about raters in general must estimate that spread from 12
    # raters' sums; a claim about these 12 treats their effects as fixed, and the same design needs fewer ratings
    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12, rater_path_sd=0.5)
    scenario = Scenario(model, pool=900, margin=0.2, minutes_per_rating=0.5)
    designs = [Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 40)]
    c = compare(scenario, 0.8, 80, designs)
    r, best = c.these_raters, c.best()
    assert r.design == best.design and r.raters == 12 and r.power.rate >= 0.8
    assert r.expected_ratings < best.expected_ratings
    text = format_comparison(c)
    assert 'For a claim about these 12 raters only (gate claim = "these raters"' in text
    assert f"would need {r.expected_ratings:,.0f} expected ratings" in text and "fewer human ratings" in text
    assert c.to_json()["these_raters"]["planned_pairs"] == r.planned_pairs
    assert c.gate_lines() == best.design.gate_lines(best.planned_pairs, int(round(best.expected_ratings)), 12,
                                                    c.scenario.pool, c.scenario.margin)
    # a claim about these raters already: nothing narrower to show
    these = compare(replace(scenario, claim="these raters"), 0.8, 80, designs)
    assert these.these_raters is None and "For a claim about these" not in format_comparison(these)
    assert these.prices == [] and "price of few raters" not in format_comparison(these)  # no raters' part to pay for


def test_plan_compare_command_weighs_rosters_and_rejects_a_roster_below_the_gate_s(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.study.synthetic import gate_file_text

    monkeypatch.setenv("EVALKIT_DATA_DIR", str(tmp_path / "data"))
    base = ["plan", "--compare", "--margin", "0.3", "--studies", "30", "--pool", "600", "--pass-rate", "0.9",
            "--minutes-per-rating", "0.5"]
    r = CliRunner().invoke(cli, base + ["--rosters", "20", "--onboarding-minutes", "3", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{"):])
    assert [x["raters"] for x in out["rosters"]] == [10, 20]
    assert [x["raters"] for x in out["rater_prices"]] == [10, 20]
    assert all(abs(x["rater_hours_with_onboarding"] - x["rater_hours"] - x["raters"] * 3 / 60) < 1e-9
               for x in out["rosters"])
    assert all(x["human_ratings"] == x["expected_ratings"] + x["gold_ratings"] for x in out["designs"] if x["planned_pairs"])
    # the share per rater that keeps each roster as planned: the planned maximum's ratings spread evenly, 25% to spare
    assert all(x["max_ratings_per_rater"] * x["raters"] >= x["planned_pairs"] for x in out["rosters"])
    assert out["max_ratings_per_rater"] == out["rosters"][0]["max_ratings_per_rater"]
    r = CliRunner().invoke(cli, base + ["--rosters", "5"])
    assert r.exit_code == 1 and "--rosters 5" in r.output and "at least 10" in r.output
    # the claim about these raters has no rater part to pay for: no roster is weighed unless asked
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=0, claim="these raters"))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'gate_file = "{gate}"\n')
    r = CliRunner().invoke(cli, base + ["--config", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    these = json.loads(r.output[r.output.index("{"):])
    assert these["rosters"] == [] and these["rater_prices"] == []
    assert not any(line.startswith("planned_raters") for line in these["gate_lines"])  # no roster to assume


@pytest.mark.parametrize("args, named", [
    (["--pool", "0"], "--pool 0"),
    (["--prescreen-agreement", "0.96"], "--prescreen-agreement 0.96 is impossible with raters of accuracy 0.95"),
    (["--prescreen-bias", "-0.05"], "--prescreen-bias -0.05"),
    (["--look-every", "0"], "--look-every 0"),
    (["--minutes-per-rating", "0"], "--minutes-per-rating 0"),
    (["--minutes-per-rating", "1e9"], "--minutes-per-rating 1e+09: more than 120 minutes"),  # plan audit L2
    (["--onboarding-minutes", "-1"], "--onboarding-minutes -1"),
    (["--studies", "5"], "--studies 5"),
    (["--power", "1"], "power 1"),
    (["--raters-per-pair", "0"], "--raters-per-pair 0"),  # not the gate's number in its place
    (["--raters", "3", "--rosters", "20"], "3 raters: the gate's claim about raters in general needs at least 10"),
])
def test_plan_compare_refuses_a_bad_number_naming_the_option(args, named, tmp_path, monkeypatch):
    # each of these used to end in a numpy traceback, a hang (--look-every 0), or a plan on a number silently
    # replaced or ignored (--raters-per-pair 0, a negative bias, zero minutes a rating)
    from click.testing import CliRunner

    from evalkit.cli import cli

    monkeypatch.setenv("EVALKIT_DATA_DIR", str(tmp_path / "data"))
    r = CliRunner().invoke(cli, ["plan", "--compare", "--studies", "20", *args])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert named in r.output and "fix:" in r.output and "Traceback" not in r.output


def test_looks_further_apart_than_the_recommended_design_s_ratings_are_noted(tmp_path, monkeypatch):
    """Plan audit L2, 2026-12-04: --look-every 100000 was taken silently, though it makes every group-sequential
    design a one-look design."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    monkeypatch.setenv("EVALKIT_DATA_DIR", str(tmp_path / "data"))
    r = CliRunner().invoke(cli, ["plan", "--compare", "--studies", "20", "--margin", "0.3", "--rosters", "10",
                                 "--look-every", "100000"])
    assert r.exit_code == 0, r.output
    assert "note: --look-every 100000 is more than the " in r.output and "e.g. --look-every " in r.output


def test_a_pool_too_small_for_any_size_gives_no_floor_and_no_recommendation():
    from evalkit.study.plan.floor import floor

    model = StudyModel(pass_rates={c: 0.9 for c in CRITERIA}, rater_accuracy=0.95, raters=12)
    scenario = Scenario(model, pool=10, margin=0.2)
    assert floor(scenario, 0.8) is None  # used to raise a TypeError
    c = compare(scenario, 0.8, 20, [Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 40)])
    assert c.recommended is None and c.floor is None and c.rows[0].planned_pairs is None
    text = format_comparison(c)
    assert "the pool holds 10" in text and "No design reached the power" in text


def test_plan_compare_honours_an_explicit_second_rating_share_of_zero(tmp_path, monkeypatch):
    # `--second-rating-share 0` (no pair rated twice) used to read as "not given" and became the gate's or 10%
    import json

    from click.testing import CliRunner

    from evalkit.cli import cli

    monkeypatch.setenv("EVALKIT_DATA_DIR", str(tmp_path / "data"))
    r = CliRunner().invoke(cli, ["plan", "--compare", "--margin", "0.3", "--studies", "20", "--pool", "600",
                                 "--pass-rate", "0.9", "--rosters", "", "--second-rating-share", "0", "--json"])
    assert r.exit_code == 0, r.output
    once = [d["design"] for d in json.loads(r.output[r.output.index("{"):])["designs"]
            if d["design"]["raters_per_pair"] == 1]
    assert once and all(d["second_rating_share"] == 0 and "twice" not in d["name"] for d in once)


def test_a_design_whose_dropping_criterion_alone_passes_too_often_does_not_hold():
    # raters who disagree wildly about one path (rater x path sd 2 on the logit scale), only 10 of them: their effects
    # are skewed (a pass rate near its ceiling), and the t interval on 10 raters' sums lets a criterion that drops by
    # the margin pass in about 4% of studies. The false-KEEP rate hides it when the same spread makes every other
    # criterion fail too; a study whose other criteria pass readily would not. Such a design does not hold.
    design = Design(T_FLOOR, True, GROUP_SEQUENTIAL, 1, 0.1, 50)

    def judged(spread):
        model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters=10, rater_path_sd=spread)
        return evaluate(design, Scenario(model, pool=1500, margin=0.15), 450, 100, 1500, [1])

    wide = judged(2.0)
    assert wide.false_keep.low <= 0.025 < wide.criterion_false_pass.low  # the old rule would have let it hold
    assert not wide.holds
    text = _false_keep(wide)
    assert "✗" in text and f"the dropping criterion alone passes {wide.criterion_false_pass.rate:.3f}" in text
    calm = judged(0.0)
    assert calm.holds and calm.criterion_false_pass.low <= 0.025 and "✗" not in _false_keep(calm)
