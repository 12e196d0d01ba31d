"""Aggregation on a committed small ratings fixture, compared with a summary derived by hand.

Arithmetic behind tests/fixtures/ratings_small_expected.json (4 pairs x 3 raters = 12 ratings):
- ordinary passes everything: 12/12. Assisted schedule fails once (r1 on pair 0): 11/12; assisted
  no_added_promises fails on pair 3 for all raters: 9/12, Wilson 95% [0.4677, 0.9111].
- McNemar: schedule has 1 discordant pair (ordinary only) -> p = 1.0; no_added_promises 3 -> p = 2/8 = 0.25.
- Preferences: 4 assisted, 4 tie, 4 ordinary -> 1/3 each.
- Krippendorff alpha, schedule: 8 items (pair x path) of 3 values, one item [fail, pass, pass]:
  o(p,p) = 22, o(p,f) = o(f,p) = 1, n_p = 23, n_f = 1, n = 24 -> 1 - 23 * 2 / 46 = 0.
  no_added_promises: one item all fail, no disagreement -> 1. Preference: n_c = 4 each, off-diagonal
  o = 9, expected 96 -> 1 - 11 * 9 / 96 = -0.03125.
- Pre-screen vs raters (24 answers per criterion: 12 ratings x 2 outputs): the pair-3 assisted text promises
  (保证), the rule fails it as the raters do -> agreement 24/24, kappa 1; schedule: the rule passes all 24,
  raters fail 1 -> agreement p_o = 23/24 = p_e -> kappa 0.
- Speed-up (pool single runs, all comparable): median(2.0, 2.2, 1.8, 2.0) / median(1.0, 1.1, 1.0, 0.9) = 2.
- Gate (planned_pairs = 4, all rated 3 times): no_added_promises' pair-level difference is -0.25 (pair 3:
  -1, the others 0) and its interval's lower end lies far below -0.05 -> DROP. The claim is about these three
  raters (a claim about raters in general needs min_raters = 10 of them and would be INSUFFICIENT DATA).
"""

import json
from pathlib import Path

import pytest

from evalkit.aggregate import aggregate, format_text
from evalkit.config import AppConfig
from evalkit.study.gate import gate_snapshot
from evalkit.rating.queue import RatingInput, submit_rating
from evalkit.records import GenerationRecord
from evalkit.stats import cohen_kappa, krippendorff_alpha_nominal, mcnemar_exact, wilson
from evalkit.store import insert_experiment, insert_pairs, open_db

FIX = Path(__file__).parent / "fixtures"
GATE = """min_speedup_ci_low = 1.1
speed_rounds = 2
margin = 0.05
confidence = 0.95
max_extra_memory_mb = 1024
min_ratings_per_pair = 3
planned_pairs = 4
claim = "these raters"
"""


def load_fixture(db, gate_path: Path, gate_text: str = GATE, before_ratings=None, app: AppConfig = AppConfig()):
    """The small study: 4 pairs rated by 3 raters under gate_text; before_ratings(db, experiment id) runs after the
    pairs are stored and before the first rating; `app` sets the quota that closes a pair."""
    data = json.loads((FIX / "ratings_small.json").read_text(encoding="utf-8"))
    gate_path.write_text(gate_text)
    # its device, as a pool's compatibility record has it (a pool that recorded none judges no speed or memory)
    exp = insert_experiment(db, "pool", {}, {"device": "cpu"}, gate=gate_snapshot(gate_path))
    specs = []
    for i, p in enumerate(data["pairs"]):
        gens = {
            path: GenerationRecord(prompt_id=p["prompt_id"], path=path, text=g["text"], new_tokens=g["new_tokens"],
                                   token_hash=f"{i}-{path}-{g['text'][-4:]}", stop_reason="eos", generate_seconds=g["seconds"])
            for path, g in ((k, p[k]) for k in ("ordinary", "assisted"))
        }
        specs.append({"prompt_id": p["prompt_id"], "sample": i, "ordinary_side": p["ordinary_side"], **gens})
    ids = insert_pairs(db, exp, specs)
    if before_ratings is not None:
        before_ratings(db, exp)
    for r in data["ratings"]:
        p = data["pairs"][r["pair"]]
        o_is_a = p["ordinary_side"] == "A"
        a, b = (r["ordinary"], r["assisted"]) if o_is_a else (r["assisted"], r["ordinary"])
        pref = {"tie": "tie", "ordinary": "A" if o_is_a else "B", "assisted": "B" if o_is_a else "A"}[r["preferred_path"]]
        submit_rating(db, app, RatingInput(ids[r["pair"]], r["rater"], a, b, pref))
    return ids


@pytest.fixture
def agg(tmp_path):
    db = open_db(tmp_path / "a.db")
    load_fixture(db, tmp_path / "gate.toml")
    return aggregate(db), db, tmp_path


def test_fixture_matches_expected_summary(agg):
    result, _db, _ = agg
    exp = json.loads((FIX / "ratings_small_expected.json").read_text())
    t = result.tables
    pr = t["pass_rates"][t["pass_rates"].prompt_id == "all"].set_index(["path", "criterion"])
    for key, value in exp["pass_rate"].items():
        assert pr.loc[tuple(key.split("/")), "pass_rate"] == pytest.approx(value, abs=1e-6)
    lo, hi = exp["wilson"]["assisted/no_added_promises"]
    row = pr.loc[("assisted", "no_added_promises")]
    # the per-rating Wilson interval stays, labelled; the cluster-aware one is wider (4 pairs, not 12 ratings)
    assert row["wilson_ratings_low"] == pytest.approx(lo, abs=1e-3) and row["wilson_ratings_high"] == pytest.approx(hi, abs=1e-3)
    assert row["ci_low"] < lo and row["ci_high"] >= hi
    d = t["paired_differences"][t["paired_differences"].prompt_id == "all"].set_index("criterion")
    for c, v in exp["difference"].items():
        assert d.loc[c, "difference"] == pytest.approx(v, abs=1e-6)
        assert d.loc[c, "mcnemar_p_ratings"] == pytest.approx(exp["mcnemar_p"][c], abs=1e-9)
        assert d.loc[c, "ci_low"] <= v <= d.loc[c, "ci_high"]
    pref = t["preferences"][t["preferences"].prompt_id == "all"].set_index("assisted")
    for outcome, share in exp["preference_share"].items():
        assert pref.loc[outcome, "share"] == pytest.approx(share, abs=1e-6)
    alpha = t["agreement"].set_index("item")["alpha"]
    for item, v in exp["alpha"].items():
        assert alpha[item] == pytest.approx(v, abs=1e-9)
    pre = t["prescreen_agreement"].set_index("criterion")
    for c, v in exp["kappa"].items():
        assert pre.loc[c, "kappa"] == pytest.approx(v, abs=1e-9)
    for c, v in exp["prescreen_agreement"].items():  # percent agreement per criterion, beside kappa
        assert pre.loc[c, "agreement"] == pytest.approx(v, abs=1e-6) and pre.loc[c, "n"] == 24
    assert result.speed.speedup == pytest.approx(exp["speedup"])
    assert result.speed.source.startswith("pair pool")
    lo_ci, hi_ci = result.speed.speedup_ci95
    assert lo_ci <= exp["speedup"] <= hi_ci
    assert result.verdict.decision == exp["decision"]


def test_per_prompt_tables_exist(agg):
    result, _, _ = agg
    for name in ("pass_rates", "paired_differences", "preferences", "speedup"):
        assert {"all", "writing-01", "writing-02"} <= set(result.tables[name]["prompt_id"]), name


def test_verdict_reasons_name_each_condition(agg):
    result, _, _ = agg
    conds = {c.name: c for c in result.verdict.conditions}
    assert set(conds) == {"planned sample", "speed-up", "fidelity", "memory"}
    assert conds["planned sample"].ok is True and result.verdict.interim is False
    assert conds["fidelity"].ok is False and "No added promises" in conds["fidelity"].reason
    assert "CI [" in conds["fidelity"].reason  # the interval, not only the point estimate
    assert conds["memory"].ok is None and "not measured" in conds["memory"].reason
    text = format_text(result)
    assert "VERDICT: DROP" in text and "[FAIL] fidelity" in text and "interim" not in text.split("VERDICT")[1]


def test_changed_gate_file_is_reported_and_frozen_version_used(agg):
    _result, db, tmp = agg
    (tmp / "gate.toml").write_text(GATE.replace("margin = 0.05", "margin = 0.5"))
    again = aggregate(db)
    assert any("changed after experiment" in n for n in again.notes)
    assert again.verdict.gate["margin"] == 0.05
    assert again.verdict.decision == "DROP"


def test_revoking_a_rater_keeps_her_ratings_in_every_table_and_the_verdict(agg):
    """A revoke stops a rater rating; what she gave stays. Taking her ratings out once they are seen would be an
    organiser's choice after the fact, which the gold check's bar, frozen with the gate, exists to replace."""
    from evalkit.rating import roster

    before, db, _tmp = agg
    roster.add(db, "r1")
    roster.revoke(db, "r1")
    after = aggregate(db)
    assert int(after.tables["counts"]["raters"].iloc[0]) == 3  # r1, r2, r3: hers still counted
    for name in ("non_inferiority", "paired_differences", "pass_rates", "counts"):
        assert after.tables[name].equals(before.tables[name]), name
    assert after.verdict.to_json() == before.verdict.to_json()


def test_insufficient_data_without_ratings(tmp_path):
    db = open_db(tmp_path / "e.db")
    (tmp_path / "gate.toml").write_text(GATE)
    insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(tmp_path / "gate.toml"))
    result = aggregate(db)
    assert result.verdict.decision == "INSUFFICIENT DATA"
    assert result.speed.speedup is None


# ---- the statistics against published or hand-checked values


def test_krippendorff_alpha_reference_example():
    """Krippendorff (2011), 'Computing Krippendorff's Alpha-Reliability', nominal example: alpha = 0.743."""
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = [[v for v in col if v is not None] for col in zip(a, b, c, d)]
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=5e-4)


def test_wilson_mcnemar_kappa_hand_values():
    assert wilson(0, 10)[0] == 0.0 and wilson(0, 10)[1] == pytest.approx(0.2775, abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(0, 0) is None
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    assert mcnemar_exact(0, 0) == 1.0
    # 2x2 example: p_o = 0.7, p_e = 0.5 -> kappa 0.4
    x = [1] * 35 + [1] * 15 + [0] * 15 + [0] * 35
    y = [1] * 35 + [0] * 15 + [1] * 15 + [0] * 35
    assert cohen_kappa(x, y) == pytest.approx(0.4)


def test_alpha_inverts_expected_tokens_per_pass():
    from evalkit.stats import alpha_from_tokens_per_pass, expected_tokens_per_pass

    for alpha in (0.1, 0.5, 0.75, 0.9):
        for gamma in (3, 5.8, 8):
            t = expected_tokens_per_pass(alpha, gamma)
            assert alpha_from_tokens_per_pass(t, gamma) == pytest.approx(alpha, abs=1e-6)
    assert alpha_from_tokens_per_pass(7.0, 6) == 1.0
    assert alpha_from_tokens_per_pass(1.0, 6) == pytest.approx(0.0, abs=1e-6)


def test_speedup_is_the_median_of_per_prompt_ratios():
    """Each prompt's ratio is median(ordinary) / median(assisted) (the brief's per-sample time ratio); pooling
    every prompt into one median would compare a short prompt's ordinary time with a long prompt's assisted one."""
    from evalkit.stats import speedup_over_prompts

    groups = {"short": ([1.0, 1.0], [0.5, 0.5]), "middle": ([2.0, 2.0], [2.2, 2.2]), "long": ([10.0, 10.0], [5.0, 5.0])}
    point, ci = speedup_over_prompts(groups, resamples=500)
    assert point == pytest.approx(2.0)  # median of 2.0, 0.91, 2.0; pooled medians would give 2.0 / 2.2 = 0.91
    assert ci[0] <= point <= ci[1]
    noisy = {"a": ([1.0, 1.2, 0.8, 1.1], [0.5, 0.7, 0.4, 0.6]), "b": ([3.0, 3.3, 2.9], [1.4, 1.6, 1.5])}
    lo, hi = speedup_over_prompts(noisy, resamples=500)[1]
    assert lo < hi  # resampling within prompts gives a real interval
    assert speedup_over_prompts({"a": ([], [])}) == (None, None)


def _pool_with_an_empty_prompt(db):
    """A pool of 12 pairs on two prompts: writing-01's outputs have 100 new tokens, assisted twice as fast;
    writing-02's have 0 new tokens on both paths (end of sequence at once), so no tokens-per-second ratio."""
    exp = insert_experiment(db, "pool", {}, {})
    specs = []
    for i in range(12):
        prompt, tokens = ("writing-01", 100) if i < 8 else ("writing-02", 0)
        secs = {"ordinary": 2.0 + 0.01 * i, "assisted": 1.0 + 0.02 * i} if tokens else \
            {"ordinary": 0.05 + 0.001 * i, "assisted": 0.06}
        gens = {path: GenerationRecord(prompt_id=prompt, path=path, text=f"{path} {i}" if tokens else "",
                                       new_tokens=tokens, stop_reason="eos", generate_seconds=secs[path],
                                       token_hash=f"{path}{i}")
                for path in ("ordinary", "assisted")}
        specs.append({"prompt_id": prompt, "sample": i, "ordinary_side": "AB"[i % 2], **gens})
    insert_pairs(db, exp, specs)


def test_a_prompt_with_zero_new_tokens_is_left_out_of_the_tokens_per_second_ratio(tmp_path):
    """0 new tokens on both paths: ordinary's tokens per second is 0, so that prompt's ratio of tokens per second
    cannot be formed. It is left out of that figure (point and interval), a note names it, and the aggregate, the
    speed-up table and the text never divide by zero nor print inf or nan."""
    import math
    import re

    import numpy as np

    from evalkit.aggregate.timing import _runs
    from evalkit.generation.speed import measure_speed

    db = open_db(tmp_path / "z.db")
    _pool_with_an_empty_prompt(db)
    rows = _runs(db)[0]
    fig = measure_speed(rows, tolerance=0.1, resamples=300)
    assert fig.matched_pairs == 12 and fig.throughput_pairs == 8
    only = measure_speed([r for r in rows if r["prompt_id"] == "writing-01"], tolerance=0.1, resamples=300)
    assert (fig.throughput_ratio, fig.throughput_ci95) == (only.throughput_ratio, only.throughput_ci95)
    assert only.notes == []
    assert [n for n in fig.notes if "writing-02 (4 of its 4 pairs)" in n and "0 new tokens" in n
            and n.startswith("tokens per second, assisted over ordinary: left out")]
    empty = measure_speed([r for r in rows if r["prompt_id"] == "writing-02"], tolerance=0.1, resamples=300)
    assert empty.throughput_ratio is None and empty.throughput_ci95 is None and empty.throughput_pairs == 0
    assert any("writing-02" in n for n in empty.notes)
    result = aggregate(db, resamples=300)  # raised ZeroDivisionError before
    table = result.tables["speedup"]
    numbers = table[["speedup", "ci_low", "ci_high", "tps_ratio", "tps_ci_low", "tps_ci_high"]].to_numpy(float)
    assert not np.isinf(numbers).any()
    assert math.isnan(table.set_index("prompt_id").loc["writing-02", "tps_ratio"])  # not measured: empty cell
    said = [line for line in format_text(result).splitlines() if line.startswith(("SPEED", "note"))]
    assert said and not re.search(r"\b(inf|nan)\b", " ".join(said).lower())


def _keep_study(tmp_path, name):
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_file_text(planned_pairs=60, margin=0.15, claim="these raters"))
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(pairs=60, raters_per_pair=3, raters=6, pass_rate=1.0, rater_accuracy=1.0,
                                   speedup=2.0, extra_memory_mb=100, seed=1, gate_path=str(gate)))
    return db


def test_a_criterion_without_ratings_leaves_fidelity_undecided(tmp_path):
    """KEEP needs every criterion's interval at or above -margin: a registered criterion that no rating answers
    (registered after the ratings, read as NULL) has no interval, so the fidelity condition is not judged and the
    verdict is INSUFFICIENT DATA, with a reason that names it; never a KEEP by its absence."""
    from evalkit.task.criteria import CRITERIA, title

    whole = aggregate(_keep_study(tmp_path, "whole"), resamples=300)
    assert whole.verdict.decision == "KEEP" and not whole.verdict.interim  # the same study with every answer
    db = _keep_study(tmp_path, "without")
    c = CRITERIA[-1]
    db.execute(f"UPDATE ratings SET ordinary_{c} = NULL, assisted_{c} = NULL, a_{c} = NULL, b_{c} = NULL")
    db.commit()
    result = aggregate(db, resamples=300)
    conds = {x.name: x for x in result.verdict.conditions}
    assert result.verdict.decision == "INSUFFICIENT DATA" and not result.verdict.interim
    assert conds["fidelity"].ok is None and conds["speed-up"].ok is True and conds["memory"].ok is True
    assert f"{title(c)} has no ratings" in conds["fidelity"].reason
    assert "every criterion's lower end" not in conds["fidelity"].reason
    assert "VERDICT: INSUFFICIENT DATA" in format_text(result)


def test_decide_needs_a_row_for_every_criterion():
    """decide itself (the frozen decision, each look and the look after the decision all call it): a missing
    criterion makes the fidelity condition undecided, a failing one still gives DROP, and at an early look of a
    group-sequential design the study goes on."""
    from dataclasses import asdict
    from types import SimpleNamespace

    from evalkit.aggregate.looks import Look
    from evalkit.aggregate.verdict import decide
    from evalkit.study.gate import parse_gate
    from evalkit.study.synthetic import gate_file_text
    from evalkit.task.criteria import CRITERIA, title

    g = asdict(parse_gate(gate_file_text(planned_pairs=50, margin=0.1, claim="these raters"), "test"))
    speed = SimpleNamespace(speedup_ci95=[1.8, 2.2], source="benchmark", extra_memory_mb=100.0, comparable_pairs=20,
                            matched_pairs=20, throughput_ratio=2.0, throughput_ci95=[1.8, 2.2], notes=[])

    def row(c, low, high):
        return {"criterion": c, "difference": (low + high) / 2, "ci_low": low, "ci_high": high, "pairs": 50,
                "raters": 6, "ok": low >= -0.1, "identical": 0}

    every = [row(c, -0.05, 0.05) for c in CRITERIA]
    assert decide(g, every, speed, 50, 60).decision == "KEEP"
    v = decide(g, every[:-1], speed, 50, 60)
    fid = {c.name: c for c in v.conditions}["fidelity"]
    assert v.decision == "INSUFFICIENT DATA" and fid.ok is None and f"{title(CRITERIA[-1])} has no ratings" in fid.reason
    failing = [row(CRITERIA[0], -0.3, -0.15)] + every[1:-1]
    v = decide(g, failing, speed, 50, 60)
    fid = {c.name: c for c in v.conditions}["fidelity"]
    assert v.decision == "DROP" and fid.ok is False and f"{title(CRITERIA[-1])} has no ratings" in fid.reason
    early = Look(index=1, of=3, pairs=20, level=0.99, final=False)
    v = decide({**g, "monitoring": "group sequential"}, every[:-1], speed, 20, 60, look=early)
    assert v.decision == "INSUFFICIENT DATA" and v.interim
    assert decide({**g, "monitoring": "group sequential"}, every, speed, 20, 60, look=early).decision == "KEEP"


def test_a_pool_whose_timings_carry_no_spread_says_its_zero_width_interval_is_no_certainty(tmp_path, frozen_before):
    """A synthetic pool whose timings are all identical (every ordinary run 2 s, every assisted run 1 s) printed the
    speed-up as "2.00x [2.00, 2.00]" and the gate's speed condition as "95% CI lower end 2.00", which read as a
    certain figure. The interval's width comes from the timings' spread, and they have none: the speed line, the
    speed condition and a note say so. The same pool with its drawn (spread) timings says nothing of it."""
    import sqlite3

    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "g.toml"
    gate.write_text(gate_file_text(planned_pairs=12))
    frozen_before("speed_source")  # the pool's figure decides the speed condition (a gate of today waits for a bench)
    said = {}
    for flat in (False, True):
        path = tmp_path / f"{flat}.db"
        db = open_db(path)
        build_study(db, SyntheticStudy(pairs=12, raters=10, bench=False, seed=1, gate_path=str(gate)))
        db.conn.close()
        if flat:
            con = sqlite3.connect(path)
            con.execute("UPDATE generations SET generate_seconds = CASE path WHEN 'ordinary' THEN 2.0 ELSE 1.0 END")
            con.commit()
            con.close()
        r = CliRunner().invoke(cli, ["aggregate", "--db", str(path)])
        assert r.exit_code == 0, r.output
        said[flat] = r.output
    assert "carry no spread" not in said[False] and "zero width" not in said[False], said[False]
    out = said[True]
    assert "speed-up over 12 comparable pairs 2.00x [2.00, 2.00] (zero width: the timings carry no spread" in out, out
    assert "95% CI lower end 2.00 vs minimum" in out and "the interval has zero width, the timings carry no spread" in out
    assert ("note: speed figure: speed-up [2.00, 2.00] and tokens per second, assisted over ordinary [2.00, 2.00]: "
            "zero-width 95% intervals, since the timings carry no spread") in out and "not because the figure is certain" in out


def test_aggregate_shows_its_steps_on_stderr_and_leaves_stdout_as_it_was(tmp_path, rated_db):
    """Audit, 2026-12-06: on a study-sized pool (5,000 pairs) `evalkit aggregate` ran some 15 s on 2 shared cores
    without a word until the end. A bar on stderr names its steps (the gate's analysis is most of the time); standard
    output is the text, or the JSON, alone, as the library gives it."""
    from click.testing import CliRunner

    from evalkit.aggregate import aggregate, format_text
    from evalkit.cli import cli

    path = str(tmp_path / "rated.db")
    r = CliRunner().invoke(cli, ["aggregate", "--db", path, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["verdict"]  # the bar is on stderr only: the JSON parses
    for step in ("the ratings and speed figures", "the gate's analysis", "the tables", "the JSON and its provenance"):
        assert step in r.stderr, r.stderr
    assert "aggregate: 100%" in r.stderr and "4/4" in r.stderr, r.stderr
    r = CliRunner().invoke(cli, ["aggregate", "--db", path])
    assert r.exit_code == 0 and "the text" in r.stderr and "4/4" in r.stderr, r.output
    assert r.stdout == format_text(aggregate(rated_db)) + "\n"
    # the library's callers with steps of their own (report, export, the app) get no bar from it
    assert "aggregate" not in CliRunner().invoke(cli, ["report", "--db", path, "--out", str(tmp_path / "rep")]).stderr
