"""The roster the plan assumed (gate planned_raters) against the raters who rated: for a claim about raters in
general the raters' part of the interval has about as many degrees of freedom as raters sharing the ratings evenly,
so the aggregate says, while raters can still be invited, how many have rated and how evenly. And where the raters
differ widely about one path, where the interval's level was measured to slip, the verdict says so."""

from __future__ import annotations

import pytest

from evalkit.aggregate import aggregate
from evalkit.aggregate.spread import (
    disagreement_note, effective_raters, rater_path_spreads, roster_note, wide_spread,
)
from evalkit.errors import EvalkitError
from evalkit.stats.clustered import cr2_two_way
from evalkit.store import open_db
from evalkit.study.gate import parse_gate
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text


def test_effective_raters_count_even_shares_fully_and_uneven_ones_less():
    assert effective_raters([30] * 12) == pytest.approx(12)
    assert effective_raters([]) == 0 and effective_raters([0, 0]) == 0
    uneven = effective_raters([100, 10, 10, 10])
    assert 1 < uneven < 4
    # it is what the interval's raters' part sees: Bell-McCaffrey's degrees of freedom + 1, for raters rating
    # pairs of one rating each with these shares
    import numpy as np

    for counts in ([100, 10, 10, 10, 40, 40, 5, 5, 60, 20], [30] * 12, [400, 400] + [5] * 18):
        counts = np.array(counts)
        rater = np.repeat(np.arange(len(counts)), counts)
        n = len(rater)
        e = np.random.default_rng(0).standard_normal(n)
        cr2 = cr2_two_way(e - e.mean(), np.full(n, 1 / n), np.arange(n), rater, np.zeros(n, np.int64), 1)
        assert cr2["df"][0] + 1 == pytest.approx(effective_raters(counts), rel=0.05)


def test_the_roster_note_compares_the_raters_with_the_plan_s_roster():
    general = {"claim": "raters in general", "planned_raters": 20}
    short = roster_note([40] * 10, general)
    assert "10 raters have rated" in short and "as evenly as 10.0 raters" in short and "assumed 20" in short
    assert "power falls" in short and "invite more raters" in short
    assert "as planned" in roster_note([40] * 20, general) and "invite" not in roster_note([40] * 20, general)
    # once decided there is nothing to invite raters to: the comparison stays, the advice goes
    done = roster_note([40] * 10, general, decided=True)
    assert "assumed 20" in done and "invite" not in done
    # twenty raters, but two give most of the ratings: they count as fewer
    assert "invite more raters" in roster_note([400, 400] + [5] * 18, general)
    assert roster_note([40] * 10, {"claim": "these raters", "planned_raters": 20}) == ""  # no raters' part
    assert roster_note([40] * 10, {"claim": "raters in general", "planned_raters": 0}) == ""  # not planned
    assert roster_note([], general) == "" and roster_note([40], None) == ""


def test_planned_raters_is_a_gate_key_with_a_range():
    assert parse_gate("planned_raters = 20\n", "g.toml").planned_raters == 20
    assert parse_gate("", "g.toml").planned_raters == 0
    with pytest.raises(EvalkitError, match="planned_raters = -1 is outside"):
        parse_gate("planned_raters = -1\n", "g.toml")
    with pytest.raises(EvalkitError, match="should be a whole number"):
        parse_gate("planned_raters = 2.5\n", "g.toml")


def test_the_aggregate_notes_a_roster_smaller_than_planned(tmp_path):
    def run(name, gate_extra, raters):
        gate = tmp_path / f"{name}.toml"
        gate.write_text(gate_file_text(planned_pairs=200, margin=0.15, min_raters=10) + gate_extra)
        db = open_db(tmp_path / f"{name}.db")
        build_study(db, SyntheticStudy(gate_path=str(gate), pairs=60, raters_per_pair=3, raters=raters, seed=4))
        return aggregate(db)

    short = run("short", "planned_raters = 24\n", 12)
    note = [n for n in short.notes if n.startswith("roster:")]
    assert len(note) == 1 and "12 raters have rated" in note[0] and "assumed 24" in note[0], short.notes
    counts = short.tables["counts"].iloc[0]
    assert counts["planned_raters"] == 24 and 10 < counts["effective_raters"] <= 12
    assert [n for n in run("enough", "planned_raters = 12\n", 12).notes if n.startswith("roster:")][0].endswith(
        "as planned")
    assert not [n for n in run("unplanned", "", 12).notes if n.startswith("roster:")]


def test_the_one_way_rater_spread_is_statsmodels_anova_and_unbiased():
    """oneway_by_rater's mean squares are statsmodels' one-way ANOVA's; over many draws of raters with a known spread
    and unequal counts, the moment estimate averages to the true variance (it is not floored)."""
    import numpy as np
    import pandas as pd
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    from evalkit.study.plan.pilot import oneway_by_rater, rater_spread_oneway

    rng = np.random.default_rng(5)
    counts = np.array([12, 40, 7, 25, 60, 18, 9, 30, 15, 22])
    rater = np.repeat(np.arange(len(counts)), counts)
    y = (rng.random(len(rater)) < 0.3).astype(float) - (rng.random(len(rater)) < 0.25)
    between, within, n0, g = oneway_by_rater(y, rater)
    table = sm.stats.anova_lm(ols("y ~ C(r)", data=pd.DataFrame({"y": y, "r": rater})).fit())
    assert between == pytest.approx(table["mean_sq"].iloc[0]) and within == pytest.approx(table["mean_sq"].iloc[1])
    assert g == 10 and n0 < counts.mean()  # unequal counts weigh less than their mean
    tau = 0.3
    draws = [rater_spread_oneway(tau * rng.standard_normal(len(counts))[rater] + rng.standard_normal(len(rater)),
                                 rater) for _ in range(3000)]
    assert np.mean(draws) == pytest.approx(tau ** 2, abs=0.01) and min(draws) < 0  # unbiased, hence not floored
    assert np.isnan(rater_spread_oneway([1.0, 0.0], [0, 1])) and oneway_by_rater([1.0], [0]) is None


def _simulated(spread: float, studies: int, pairs: int = 800, raters: int = 10, seed: int = 3):
    import numpy as np

    from evalkit.study.plan.errorbench import study_ratings
    from evalkit.study.plan.model import StudyModel, simulate_answers
    from evalkit.task.criteria import CRITERIA

    model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=0.95, raters=raters, raters_per_pair=1,
                       second_rating_share=0.1, rater_path_sd=spread, identical_share=0.2)
    sim = simulate_answers(model, pairs, studies, {}, np.random.default_rng(seed))
    return [study_ratings(sim, s, pairs) for s in range(studies)]


def test_the_verdict_notes_raters_who_differ_widely_about_one_path():
    """Studies drawn with a rater x path sd of 2 (logit): the spread is found on the probability scale, well above the
    limit, beyond chance, and the note says where the level slips and what to do. With no spread: no note. For the
    claim about these raters (no raters' part): no note either."""
    general = {"claim": "raters in general"}
    wide = _simulated(2.0, 10)
    notes = [disagreement_note(d, general) for d in wide]
    assert all(notes), notes
    assert "raters differ widely about one path" in notes[0] and "these raters only" in notes[0]
    assert f"From {100 * wide_spread():.1f}" in notes[0]
    spread = rater_path_spreads(wide[0])
    assert spread.mean > 2 * wide_spread() and spread.beyond_chance and len(spread.per_criterion) == 4
    assert not any(disagreement_note(d, {"claim": "these raters"}) for d in wide)
    none = _simulated(0.0, 10)
    assert not any(disagreement_note(d, general) for d in none)
    assert all(not s.beyond_chance for s in map(rater_path_spreads, none))
    assert disagreement_note(wide[0], None) == ""


def test_the_note_waits_for_raters_differences_beyond_chance():
    """At an early look (200 pairs, about 180 ratings) with no spread at all, the estimate alone reaches the limit in
    a good share of studies; the F test keeps the note from them."""
    studies = _simulated(0.0, 60, pairs=200)
    limit = wide_spread()
    spreads = [rater_path_spreads(d) for d in studies]
    assert sum(s.mean >= limit for s in spreads) >= 6  # what a note on the estimate alone would have said
    assert sum(bool(disagreement_note(d, {"claim": "raters in general"})) for d in studies) <= 2  # the F test at 1%
    assert rater_path_spreads(studies[0].select(slice(0, 50))) is None  # too few ratings to say


def test_the_permutation_test_keeps_its_level_when_the_criteria_answer_as_one():
    """Raters who do not differ, with each rating's four criteria answered alike (as correlated criteria do, to the
    extreme): an F test that took the criteria as independent would call chance a spread far more often than its 1%;
    the permutation test moves a rating's answers together and keeps its level."""
    from dataclasses import replace

    import numpy as np

    from evalkit.aggregate.spread import SPREAD_TEST_LEVEL
    from evalkit.stats.clustered import chi2_quantile

    p_values, naive = [], []
    for d in _simulated(0.0, 200, pairs=300, seed=8):
        answers = d.answers.copy()
        for k in range(1, 4):
            answers[:, 2 * k:2 * k + 2] = answers[:, 0:2]
        spread = rater_path_spreads(replace(d, answers=answers), permutations=199)
        p_values.append(spread.p_value)
        g = len(set(d.rater.tolist()))
        naive.append(spread.f_ratio > chi2_quantile(1 - SPREAD_TEST_LEVEL, 4 * (g - 1)) / (4 * (g - 1)))
    p_values = np.array(p_values)
    assert np.mean(p_values <= 0.01) <= 0.03 and 0.04 <= np.mean(p_values <= 0.1) <= 0.17  # about uniform
    assert np.mean(naive) >= 0.05  # what taking the criteria as independent would have said


def test_the_aggregate_of_a_real_database_carries_the_note(tmp_path):
    def run(name, spread):
        gate = tmp_path / f"{name}.toml"
        gate.write_text(gate_file_text(planned_pairs=600, margin=0.1, min_raters=10, min_ratings_per_pair=1))
        db = open_db(tmp_path / f"{name}.db")
        build_study(db, SyntheticStudy(gate_path=str(gate), pairs=600, raters_per_pair=1, second_rating_share=0.1,
                                       raters=10, rater_path_sd=spread, seed=2))
        return [n for n in aggregate(db).notes if n.startswith("raters differ widely")]

    assert len(run("wide", 2.0)) == 1
    assert run("narrow", 0.0) == []


def test_the_notes_beside_a_decision_read_the_ratings_as_of_the_decision(tmp_path):
    """Statistics audit, 2026-12-06: the roster and disagreement notes beside a frozen decision read the current
    ratings, so ratings stored after the rating that completed the planned sample (here a second pool rated by twenty
    raters who differ widely about one path, before anyone looked) turned "10 raters have rated" into 20 and added
    "raters differ widely" beside a decision that ten raters who did not differ had made. They now read the history
    as of the completing rating; the tables still show what came since."""
    from evalkit.aggregate.data import load_ratings

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=60, margin=0.15, min_raters=10) + "planned_raters = 20\n")
    db = open_db(tmp_path / "later.db")
    build_study(db, SyntheticStudy(gate_path=str(gate), pairs=60, raters_per_pair=3, raters=10, seed=4))
    build_study(db, SyntheticStudy(gate_path=str(gate), pairs=600, raters_per_pair=1, raters=20, rater_path_sd=2.0,
                                   seed=5))
    agg = aggregate(db)
    assert agg.frozen is not None and agg.frozen.completed_rating_id == 180  # the first pool's 60 pairs x 3
    roster = [n for n in agg.notes if n.startswith("roster:")]
    assert len(roster) == 1 and roster[0].startswith("roster: 10 raters have rated") and "assumed 20" in roster[0]
    assert not [n for n in agg.notes if n.startswith("raters differ widely")]
    assert int(agg.tables["counts"]["raters"].iloc[0]) == 20  # the tables show the ratings as they are now
    assert disagreement_note(load_ratings(db), {"claim": "raters in general"})  # who do differ, now
