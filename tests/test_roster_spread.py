"""The roster the plan assumed (gate planned_raters) against the raters who rated: for a claim about raters in
general the raters' part of the interval has about as many degrees of freedom as raters sharing the ratings evenly,
so the aggregate says, while raters can still be invited, how many have rated and how evenly."""

from __future__ import annotations

import pytest

from evalkit.aggregate import aggregate
from evalkit.aggregate.spread import effective_raters, roster_note
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
