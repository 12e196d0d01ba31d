"""Prediction-powered inference (issue #20 item 3): the interval against ppi-python's `ppi_mean_ci` where the two
coincide (one rater per pair, no rater dimension), through the real aggregate on a real database; validity with a
pre-screen biased towards assisted, simulated through the gate's own functions; the floor that keeps it from
collapsing; the gate key and gates frozen before it; and the queue's random order that the method rests on."""

import math
import sqlite3

import numpy as np
import pytest
from apphelpers import pool_db, pool_template  # noqa: F401
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from evalkit.aggregate import aggregate
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.stats.ppi import ppi_mean, ppi_paired_difference
from evalkit.store import draw_queue_order, open_db
from evalkit.task.criteria import title
from evalkit.task.prompts import CRITERIA

Z = 1.959963984540054


def noisy(truth, accuracy, rng):
    return np.where(rng.random(len(truth)) < accuracy, truth, rng.integers(-1, 2, len(truth))).astype(float)


@pytest.mark.parametrize("n, big_n, accuracy, seed", [(300, 2000, 0.85, 1), (80, 400, 0.6, 2), (500, 500, 0.95, 3),
                                                     (200, 3000, 0.0, 4)])
def test_ppi_mean_equals_ppi_python(n, big_n, accuracy, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(-1, 2, n + big_n)
    f = noisy(truth, accuracy, rng)
    y = truth[:n].astype(float)
    lo, hi = ppi_mean_ci(y, f[:n], f[n:], alpha=0.05)
    mine = ppi_mean(y, f[:n], f[n:], 0.95)
    assert mine["estimate"] == pytest.approx(float(ppi_mean_pointestimate(y, f[:n], f[n:])[0]), abs=1e-12)
    assert (mine["low"], mine["high"]) == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-12)
    assert 0 <= mine["lambda"] <= 1


def test_vectorised_interval_equals_ppi_python_with_one_rater_per_pair():
    """Three studies at once, one rater per pair, fewer raters than the rater dimension needs, claim about these
    raters: the interval is ppi_mean_ci's on each study's numbers."""
    rng = np.random.default_rng(7)
    sizes = [(150, 900), (400, 1200), (60, 700)]
    x, pair, rater, pair_study, f = [], [], [], [], []
    offset = 0
    for s, (n, big_n) in enumerate(sizes):
        truth = rng.integers(-1, 2, n + big_n)
        fs = noisy(truth, 0.8, rng)
        x.append(truth[:n])
        pair.append(offset + np.arange(n))
        rater.append(s * 5 + np.arange(n) % 5)
        pair_study.append(np.full(n + big_n, s))
        f.append(fs)
        offset += n + big_n
    # the pairs of a study: rated first, then unrated; pair indices run over both
    res = ppi_paired_difference(np.concatenate(x), np.concatenate(pair), np.concatenate(rater),
                                np.concatenate(pair_study), np.concatenate(f), 3, 0.95, raters_in_general=False)
    for s, (n, big_n) in enumerate(sizes):
        lo, hi = ppi_mean_ci(x[s].astype(float), f[s][:n], f[s][n:], alpha=0.05)
        assert (res["low"][s], res["high"][s]) == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-12)
        assert (res["rated_pairs"][s], res["unrated_pairs"][s]) == (n, big_n)
        assert res["high"][s] - res["difference"][s] > res["floor"][s]  # the floor does not bind here


def _pairs_from_sql(db_file, criterion):
    """Independently of evalkit's arrays: per study pair, the raters' mean difference (None when unrated) and the
    pre-screen's difference, read with plain SQL."""
    con = sqlite3.connect(db_file)
    rows = con.execute(
        f"""SELECT p.id,
                   (SELECT AVG((r.assisted_{criterion} = 'pass') - (r.ordinary_{criterion} = 'pass'))
                      FROM current_ratings r WHERE r.pair_id = p.id),
                   (SELECT passed FROM prescreen WHERE generation_id = p.assisted_generation_id AND criterion = ?)
                 - (SELECT passed FROM prescreen WHERE generation_id = p.ordinary_generation_id AND criterion = ?)
            FROM pairs p WHERE p.kind = 'study' ORDER BY p.queue_rank""", [criterion, criterion]).fetchall()
    con.close()
    return rows


def _study(tmp_path, name, gate_text, **spec):
    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_text)
    db_file = tmp_path / f"{name}.db"
    db = open_db(db_file)
    build_study(db, SyntheticStudy(gate_path=str(gate), **spec))
    return db, db_file


def test_aggregate_interval_equals_ppi_python_on_the_same_numbers(tmp_path):
    """The real aggregate on a real database (200 rated pairs, one rater each, 5 raters, 800 more pooled pairs the
    pre-screen judged): each criterion's interval equals ppi_mean_ci on the numbers read back with plain SQL."""
    db, db_file = _study(tmp_path, "one", gate_file_text(planned_pairs=200, min_ratings_per_pair=1,
                                                         claim="these raters"),
                         pairs=200, unrated_pairs=800, raters_per_pair=1, raters=5, queue_order=True, seed=11,
                         prescreen_accuracy=0.85)
    agg = aggregate(db)
    rows = agg.tables["non_inferiority"].set_index("criterion")
    for c in CRITERIA:
        data = _pairs_from_sql(db_file, c)
        y = np.array([d[1] for d in data if d[1] is not None], float)
        f_rated = np.array([d[2] for d in data if d[1] is not None], float)
        f_unrated = np.array([d[2] for d in data if d[1] is None], float)
        assert len(y) == 200 and len(f_unrated) == 800
        lo, hi = ppi_mean_ci(y, f_rated, f_unrated, alpha=0.05)
        r = rows.loc[c]
        assert bool(r["ppi"]) and r["ppi_unrated_pairs"] == 800
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-9)
        assert r["difference"] == pytest.approx(float(ppi_mean_pointestimate(y, f_rated, f_unrated)[0]), abs=1e-9)
        assert r["rated_difference"] == pytest.approx(y.mean(), abs=1e-12)  # the raters alone, kept beside it
        assert 0.6 < r["prescreen_agreement"] < 1
    assert "Prediction-powered inference used" in agg.verdict.ppi and "agreement with the raters" in agg.verdict.ppi
    # aggregate's text, its JSON, the report's verdict block and the Results tab say so
    from evalkit.aggregate import format_text
    from evalkit.publish.report import verdict_html
    from evalkit.ui.results import verdict_markdown

    assert agg.verdict.ppi in format_text(agg) and agg.to_json()["verdict"]["ppi"] == agg.verdict.ppi
    assert "Prediction-powered inference used" in verdict_html(agg) and f"{title('schedule')} 0." in verdict_html(agg)
    assert "Prediction-powered inference used" in verdict_markdown(agg)
    zh = verdict_markdown(agg, "zh").split("#### 详细说明")[0]  # the Chinese reader's verdict says so too, with its figures
    assert "区间用了预测驱动推断" in zh and "决策样本之外 800 对" in zh and "样本中 200 对" in zh
    assert "lambda：" + "、".join(f"{c} {rows.loc[c, 'ppi_lambda']:.2f}" for c in CRITERIA) in zh
    assert "预检与评分者在决策样本上的一致率：" + "、".join(
        f"{title(c, 'zh')} {rows.loc[c, 'prescreen_agreement']:.2f}" for c in CRITERIA) in zh
    assert "(prediction-powered, with the pre-screen on 800 more pairs)" in format_text(agg)


def test_the_interval_never_collapses_and_carries_the_raters():
    n = 300
    zeros = ppi_paired_difference(np.zeros(3 * n, int), np.repeat(np.arange(n), 3), np.arange(3 * n) % 12,
                                  np.zeros(n + 1000, int), np.zeros(n + 1000), 1)
    assert zeros["low"][0] == pytest.approx(-Z * Z / (n + Z * Z)) and zeros["high"][0] == pytest.approx(Z * Z / (n + Z * Z))
    rng = np.random.default_rng(3)
    x = rng.integers(-1, 2, 3 * n)
    f = np.r_[np.repeat(0, n), rng.integers(-1, 2, 1000)].astype(float)
    f[:n] = np.sign(x.reshape(n, 3).sum(axis=1))
    args = (x, np.repeat(np.arange(n), 3), np.arange(3 * n) % 4, np.zeros(n + 1000, int), f, 1)
    general, these = ppi_paired_difference(*args), ppi_paired_difference(*args, raters_in_general=False)
    # t on the raters-only interval's df: at least the rater part's (4 raters: 3), at most the pairs' n - 1
    assert 3 <= general["df"][0] < 4 and math.isinf(these["df"][0])
    assert general["high"][0] - general["low"][0] > these["high"][0] - these["low"][0]
    one = ppi_paired_difference(x, np.repeat(np.arange(n), 3), np.zeros(3 * n, int), np.zeros(n + 1000, int), f, 1)
    assert (one["low"][0], one["high"][0]) == (-1.0, 1.0)  # one rater: no rater variance to estimate


def test_an_uninformative_prescreen_gives_the_raters_only_t_interval():
    """With a pre-screen that says nothing (lambda = 0) the prediction-powered interval is the raters-only t interval
    of stats.paired_difference on the same ratings: the same variance, degrees of freedom and skew term."""
    from evalkit.stats import paired_difference

    rng = np.random.default_rng(11)
    n, studies = 400, 3
    pair = np.repeat(np.arange(studies * n), 2)
    x = rng.choice([-1, 0, 0, 0, 1], size=len(pair))
    rater = (pair // n) * 12 + rng.integers(0, 12, len(pair))  # 12 raters per study
    pair_study = np.r_[np.arange(studies * n) // n, np.repeat(np.arange(studies), 500)]
    f = np.zeros(len(pair_study))
    ppi = ppi_paired_difference(x, pair, rater, pair_study, f, studies)
    raters_only = paired_difference(x, pair, rater, pair_study[:studies * n], studies, bootstrap=False)
    assert np.all(ppi["lambda"] == 0)
    assert ppi["df"] == pytest.approx(raters_only["t_df"], rel=1e-9)
    assert 11 < ppi["df"].min() and ppi["df"].max() < n - 1  # between the raters' df and the pairs'
    assert ppi["low"] == pytest.approx(raters_only["t_low"], abs=1e-12)
    assert ppi["high"] == pytest.approx(raters_only["t_high"], abs=1e-12)


@pytest.mark.parametrize("bias", [0.05, 0.2])
def test_biased_prescreen_keeps_the_level_through_the_gate(bias):
    """Whole studies through the gate's own functions: a pre-screen agreeing 90% with raters and biased 5 (or 20)
    points towards assisted, one criterion truly dropping by the margin: the gate passes that criterion in at most
    2.5% of studies (plus Monte-Carlo slack), where the pre-screen alone would pass it in most. Without a drop,
    prediction-powered inference keeps more studies than the raters alone on the same rated pairs."""
    from evalkit.study.plan.ppibench import Design, passes, run, simulate_screened, truth_accuracy
    from evalkit.study.plan.model import StudyModel

    studies = 400
    design = Design(rated=200, pool=1000, margin=0.1, prescreen_agreement=0.9, prescreen_bias=bias,
                    rater_path_sd=0.5)
    rows = run(design, studies, seed=5)
    at_margin = next(r for r in rows if r["drop"] == 1.0)
    none = next(r for r in rows if r["drop"] == 0.0)
    slack = 3 * math.sqrt(0.025 * 0.975 / studies)
    assert at_margin["ppi_criterion"]["rate"] <= 0.025 + slack, at_margin
    assert at_margin["ppi_keep"]["rate"] <= at_margin["ppi_criterion"]["rate"]
    if bias < 0.1:  # a pre-screen that far off helps less, but still never hurts the level
        assert none["ppi_keep"]["rate"] > none["rated_keep"]["rate"] + 0.05, none
    # the pre-screen alone (its mean over every pooled pair, with its own normal interval) is biased: it passes
    sim = simulate_screened(design.model(), 200, 800, 200, {CRITERIA[0]: 0.1}, np.random.default_rng(9),
                            truth_accuracy(0.9, 0.95), bias, (CRITERIA[0],))
    f = sim["f"][CRITERIA[0]]
    by = sim["pair_study"]
    mean = np.bincount(by, weights=f) / np.bincount(by)
    se = np.sqrt((np.bincount(by, weights=f * f) / np.bincount(by) - mean ** 2) / np.bincount(by))
    assert ((mean - Z * se) >= -0.1).mean() > 0.5


def test_gate_key_turns_it_off_and_old_gates_keep_it_off(tmp_path):
    from evalkit.study.gate import Gate, frozen_values, gate_snapshot, legacy_keys, parse_gate

    spec = dict(pairs=120, unrated_pairs=300, raters_per_pair=1, raters=5, queue_order=True, seed=2)
    db, _ = _study(tmp_path, "off", gate_file_text(planned_pairs=120, min_ratings_per_pair=1, claim="these raters",
                                                  ppi="off"), **spec)
    agg = aggregate(db)
    for r in agg.verdict.fidelity:
        assert r["ppi"] is False and (r["ci_low"], r["difference"]) == (r["rated_low"], r["rated_difference"])
        assert r["prescreen_agreement"] is not None  # measured and reported either way
    assert agg.verdict.ppi.startswith('Prediction-powered inference not used (gate ppi = "off")')
    with pytest.raises(Exception, match="ppi"):
        parse_gate('ppi = "maybe"\n', "g")
    assert Gate().ppi == "on"
    path = tmp_path / "g.toml"
    path.write_text("margin = 0.05\nplanned_pairs = 20\n", encoding="utf-8")
    today = gate_snapshot(path)
    assert frozen_values(today)["ppi"] == "on" and legacy_keys(today) == []
    old = today | {"values": {k: v for k, v in today["values"].items() if k != "ppi"}}  # frozen before the key
    assert frozen_values(old)["ppi"] == "off" and legacy_keys(old) == ["ppi"]


def test_not_used_when_the_pool_was_not_served_in_a_random_order(tmp_path):
    db, _ = _study(tmp_path, "unranked", gate_file_text(planned_pairs=120, min_ratings_per_pair=1,
                                                        claim="these raters"),
                   pairs=120, unrated_pairs=300, raters_per_pair=1, raters=5, seed=2)
    agg = aggregate(db)
    assert not any(r["ppi"] for r in agg.verdict.fidelity)
    assert "not served in a random order" in agg.verdict.ppi
    from evalkit.ui.results import verdict_markdown

    unranked = db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'study' AND queue_rank IS NULL").fetchone()[0]
    head = verdict_markdown(agg, "zh").split("#### 详细说明")[0]
    assert f"研究的 {unranked} 对中有 {unranked} 对不是按随机顺序分发给评分者的" in head
    assert f"{unranked} of the study's {unranked} pairs" in agg.verdict.ppi


@pytest.mark.secret_seeds  # the product's draw of the seed, stored
def test_queue_serves_the_pool_in_its_stored_random_order(tmp_path):
    """draw_queue_order stores a seed and ranks re-derived from it; the queue serves the lowest rank first and each
    pair until its quota, so the complete pairs are at every look the first ones in that random order."""
    from evalkit.rating.queue import RatingInput, next_pair, submit_rating
    from evalkit.config import AppConfig
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_pairs

    db = open_db(tmp_path / "q.db")
    exp = insert_experiment(db, "pool", {}, {})
    specs = [{"prompt_id": "writing-01", "sample": i, "ordinary_side": "A",
              "ordinary": GenerationRecord(prompt_id="writing-01", path="ordinary", text=f"o{i}", new_tokens=4,
                                           stop_reason="eos", generate_seconds=1.0),
              "assisted": GenerationRecord(prompt_id="writing-01", path="assisted", text=f"a{i}", new_tokens=4,
                                           stop_reason="eos", generate_seconds=1.0)} for i in range(8)]
    insert_pairs(db, exp, specs)
    assert draw_queue_order(db, exp) == 8 and draw_queue_order(db, exp) == 0  # drawn once
    seed = db.execute("SELECT queue_seed FROM experiments WHERE id = ?", [exp]).fetchone()[0]
    stored = db.execute("SELECT id, queue_rank FROM pairs ORDER BY rowid").fetchall()
    assert [q for _, q in stored] == pytest.approx(list(np.random.default_rng(seed).random(8)))
    order = [pid for pid, _ in sorted(stored, key=lambda r: r[1])]
    app = AppConfig(ratings_per_pair=2)
    done = []
    for rater, count in zip(["ann", "bob", "cy", "dee", "eve", "fay"], [2, 3, 2, 3, 2, 2]):
        for _ in range(count):
            view = next_pair(db, rater, 2)
            submit_rating(db, app, RatingInput(view.pair_id, rater, {c: "pass" for c in CRITERIA},
                                               {c: "pass" for c in CRITERIA}, "tie"))
        full = {r[0] for r in db.execute("SELECT pair_id FROM current_ratings GROUP BY pair_id HAVING COUNT(*) >= 2")}
        done.append(full)
        assert full == set(order[:len(full)])  # a prefix of the random order
    assert [len(d) for d in done] == [0, 2, 3, 4, 6, 6]


def test_script_runs_and_reports(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, str(root / "scripts" / "ppibench.py"), "--rated", "100,200", "--pool", "500",
                        "--studies", "40", "--spreads", "0", "--prescreens", "0.9:0.05", "--margin", "0.2",
                        "--limit", "0.5", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ppibench" in r.stdout and "| 0.9 | 0.05 | 0.0 | 200 |" in r.stdout and "cores" in r.stdout
    assert "rated pairs to 80% power" in r.stdout
    assert len(json.loads(out.read_text())["rows"]) == 4
    help_text = subprocess.run([sys.executable, str(root / "scripts" / "ppibench.py"), "--help"],
                               capture_output=True, text=True, timeout=60).stdout
    assert "--prescreens" in help_text and "--studies" in help_text


@pytest.mark.slow
def test_a_generated_pool_is_served_in_an_order_drawn_from_its_stored_seed(pool_db):
    """`evalkit generate` (here through the app's prepare step, tiny real models) draws the queue order once the pool
    is complete: every pair, study and gold, has a rank, re-derived from the seed stored with its experiment."""
    con = sqlite3.connect(pool_db)
    try:
        (exp, seed), = con.execute("SELECT id, queue_seed FROM experiments WHERE kind = 'pool'").fetchall()
        ranks = [r[0] for r in con.execute("SELECT queue_rank FROM pairs WHERE experiment_id = ? ORDER BY rowid", [exp])]
        kinds = {r[0] for r in con.execute("SELECT kind FROM pairs")}
    finally:
        con.close()
    assert seed is not None and len(ranks) >= 6 and kinds >= {"study"}
    assert ranks == pytest.approx(list(np.random.default_rng(seed).random(len(ranks))))


def test_identical_pairs_enter_as_exact_zeros_not_as_unrated_pairs(tmp_path):
    """Half the pool identical (never served, so outside the random subset the raters rate): PPI runs on the pairs
    whose outputs differ and scales by their share of the pool, so it estimates what the raters-only interval does
    (a drop diluted by the identical pairs' exact zeros), and its unrated pairs are the differing ones only."""
    db, _ = _study(tmp_path, "ident", gate_file_text(planned_pairs=600, min_ratings_per_pair=1, claim="these raters"),
                   pairs=600, unrated_pairs=1800, raters_per_pair=1, raters=5, queue_order=True, seed=5,
                   prescreen_accuracy=0.6, identical_share=0.5, drops={"schedule": 0.15})
    identical, differing = db.execute(
        "SELECT SUM(o.token_hash = a.token_hash), SUM(o.token_hash != a.token_hash) FROM pairs p "
        "JOIN generations o ON o.id = p.ordinary_generation_id JOIN generations a ON a.id = p.assisted_generation_id"
    ).fetchone()
    rated = db.execute("SELECT COUNT(DISTINCT pair_id) FROM current_ratings").fetchone()[0]
    row = aggregate(db).tables["non_inferiority"].set_index("criterion").loc["schedule"]
    assert bool(row["ppi"]) and row["ppi_unrated_pairs"] == differing - rated
    # the same quantity: the drop among differing pairs, times their share (about half), not the undiluted drop
    assert abs(row["difference"] - row["rated_difference"]) < 0.25 * abs(row["rated_difference"])
    assert row["difference"] > 0.75 * (row["rated_difference"] * (identical + differing) / differing)


def test_the_verdict_counts_the_rated_pairs_ppi_ran_on_not_the_identical_ones(tmp_path):
    """Export audit, 2026-12-04: the verdict's PPI sentence said "corrected by the raters' answers on the 40 rated
    pairs" where the same verdict's sample line said 27 rated pairs and 13 identical ones: it counted the identical
    pairs as rated. It now names the rated pairs whose outputs differ, and the share the estimate is scaled by."""
    db, _ = _study(tmp_path, "count", gate_file_text(planned_pairs=600, min_ratings_per_pair=1, claim="these raters"),
                   pairs=600, unrated_pairs=1800, raters_per_pair=1, raters=5, queue_order=True, seed=5,
                   prescreen_accuracy=0.6, identical_share=0.5, drops={"schedule": 0.15})
    rated = db.execute("SELECT COUNT(DISTINCT pair_id) FROM current_ratings r JOIN pairs p ON p.id = r.pair_id "
                       "JOIN generations o ON o.id = p.ordinary_generation_id "
                       "JOIN generations a ON a.id = p.assisted_generation_id "
                       "WHERE o.token_hash != a.token_hash").fetchone()[0]
    agg = aggregate(db)
    row = agg.tables["non_inferiority"].set_index("criterion").loc["schedule"]
    assert row["pairs"] > rated  # the sample counts identical pairs too
    said = agg.verdict.ppi
    assert f"on the {rated} pairs of the sample whose outputs differ" in said, said
    identical, differing = db.execute(
        "SELECT SUM(o.token_hash = a.token_hash), SUM(o.token_hash != a.token_hash) FROM pairs p "
        "JOIN generations o ON o.id = p.ordinary_generation_id JOIN generations a ON a.id = p.assisted_generation_id"
    ).fetchone()
    assert f"scaled by the share of pooled pairs whose outputs differ ({differing / (identical + differing):.3f})" in said


def test_ppibench_decides_a_simulated_study_of_identical_pairs_alone_as_the_gate_does(tmp_path):
    """Audit, 2026-12-06: scripts/ppibench.py (study.plan.ppibench.passes) still asked every simulated study for
    min_raters distinct raters (gate.raters_ok) and left identical pairs out of the raters' interval, so a study whose
    rated pairs were all identical failed where the gate, without raters, decides it (gate.enough_raters_for: plan and
    errorbench take it). The real gate on a real SQLite study and the bench agree now: KEEP at 100 identical pairs,
    not at 30 (the score floor alone), with PPI (no rated pair for it: the raters' interval) and without."""
    from evalkit.study.plan.model import rated_pairs
    from evalkit.study.plan.ppibench import Design, passes, simulate_screened, truth_accuracy

    studies = 150
    for pairs in (100, 30):
        gate = tmp_path / f"same{pairs}.toml"
        gate.write_text(gate_file_text(planned_pairs=pairs, min_ratings_per_pair=1, min_raters=10))
        db = open_db(tmp_path / f"same{pairs}.db")
        build_study(db, SyntheticStudy(gate_path=str(gate), pairs=pairs, raters_per_pair=1, raters=12,
                                       identical_share=1.0, queue_order=True, seed=4))
        fidelity = next(c for c in aggregate(db).verdict.conditions if c.name == "fidelity").ok

        design = Design(rated=pairs, pool=2 * pairs, raters=12, raters_per_pair=1, identical_share=0.99,
                        min_raters=10, resamples=200)
        bench = passes(design, studies, {}, [pairs])
        sim = simulate_screened(design.model(), pairs, pairs, studies, {}, np.random.default_rng([pairs, 0]),
                                truth_accuracy(design.prescreen_agreement, design.rater_accuracy), 0.0, CRITERIA)
        n = studies * pairs
        alone = rated_pairs({"pair_study": sim["pair_study"][:n], "identical": sim["same"][:n]}, studies) == 0
        assert alone.any() and not alone.all()
        for c in CRITERIA:
            for kind in ("ppi", "rated"):
                assert (bench[c][kind][alone] == fidelity).all(), (pairs, c, kind)
        assert fidelity is (pairs == 100)


def test_ppibench_weighs_a_pool_of_mixed_identical_and_rated_pairs_as_the_gate_does(tmp_path):
    """Audit, 2026-12-06: scripts/ppibench.py (study.plan.ppibench) took identical pairs, never rated, as unrated pairs
    of pre-screen difference 0, so they diluted only the pre-screen's term of the estimate, where the gate leaves
    them out of PPI and scales the estimate and both ends by the differing pairs' share of the pool (aggregate.ppi).
    One real study of mixed identical and rated pairs, its decision read back with plain SQL into the bench's arrays:
    the bench's interval is the gate's for every criterion."""
    import json

    from evalkit.study.plan.ppibench import Design, ppi_interval

    db, db_file = _study(tmp_path, "mixed", gate_file_text(planned_pairs=250, min_ratings_per_pair=1, min_raters=5),
                         pairs=300, unrated_pairs=600, raters_per_pair=1, raters=12, queue_order=True, seed=8,
                         prescreen_accuracy=0.85, identical_share=0.4, drops={"schedule": 0.1})
    rows = aggregate(db).tables["non_inferiority"].set_index("criterion")
    con = sqlite3.connect(db_file)
    sample = json.loads(con.execute("SELECT sample_json FROM decisions").fetchone()[0])
    pairs = con.execute(
        """SELECT p.id, o.token_hash = a.token_hash, o.id, a.id FROM pairs p
           JOIN generations o ON o.id = p.ordinary_generation_id JOIN generations a ON a.id = p.assisted_generation_id
           WHERE p.kind = 'study' ORDER BY p.id""").fetchall()
    index = {p[0]: i for i, p in enumerate(pairs)}
    same = np.array([bool(p[1]) for p in pairs])
    assert 0.2 < same.mean() < 0.6  # mixed: some, not all, pairs identical
    for c in CRITERIA:
        screened = dict(con.execute("SELECT generation_id, passed FROM prescreen WHERE criterion = ?", [c]))
        f = np.array([screened[p[3]] - screened[p[2]] for p in pairs], float)
        rated = con.execute(
            f"""SELECT pair_id, rater, (assisted_{c} = 'pass') - (ordinary_{c} = 'pass') FROM ratings
                WHERE id IN (SELECT value FROM json_each(?))""", [json.dumps(sample)]).fetchall()
        raters = {r: k for k, r in enumerate(sorted({r[1] for r in rated}))}
        sim = {"x": {c: np.array([r[2] for r in rated], np.int8)}, "f": {c: f}, "same": same,
               "pair": np.array([index[r[0]] for r in rated]), "rater": np.array([raters[r[1]] for r in rated]),
               "pair_study": np.zeros(len(pairs), np.int64)}
        bench = ppi_interval(sim, c, 1, Design(raters=12, raters_per_pair=1, min_raters=5))
        row = rows.loc[c]
        assert bool(row["ppi"])
        assert (bench["low"][0], bench["high"][0], bench["difference"][0]) == pytest.approx(
            (row["ci_low"], row["ci_high"], row["difference"]), abs=1e-9), c
    con.close()


def test_a_pre_screen_whose_rules_changed_after_the_study_began_moves_no_look(tmp_path, monkeypatch):
    """PPI rests on a pre-screen fixed before rating; its rules live in the code (task.fidelity.RULES_VERSION) and
    every look screened the pool again with the running code's rules. So rules edited once ratings were in (fitted to
    the raters' disagreements, say) entered the interval of every look not yet frozen, the deciding one included. The
    study keeps the rules version of its first pool: its decision is the same under any later rules, and where the
    pool has no answer of that version, the raters' answers alone decide."""
    import shutil

    import evalkit.task.criteria as criteria
    import evalkit.task.fidelity as fidelity
    from evalkit.study.studies import choose

    db, db_file = _study(tmp_path, "rules", gate_file_text(planned_pairs=200, min_ratings_per_pair=1,
                                                           claim="these raters"),
                         pairs=200, unrated_pairs=800, raters_per_pair=1, raters=5, queue_order=True, seed=11,
                         prescreen_accuracy=0.85)
    assert choose(db).prescreen_rules == fidelity.RULES_VERSION  # frozen with the study's first pool
    db.close()
    for name in ("later.db", "unscreened.db"):
        shutil.copy(db_file, tmp_path / name)
    frozen_rules = fidelity.RULES_VERSION
    first = aggregate(open_db(db_file))
    before = first.tables["non_inferiority"].set_index("criterion")
    assert before["ppi"].all() and (before["ppi_lambda"] > 0).all()

    # new rules after the ratings: every output passes every criterion (lambda 0: the pre-screen tells nothing)
    monkeypatch.setattr(fidelity, "RULES_VERSION", "after-the-ratings")
    monkeypatch.setattr(criteria, "screen", lambda text: {c: fidelity.Verdict(True, "later rule") for c in CRITERIA})
    later = aggregate(open_db(tmp_path / "later.db"))
    after = later.tables["non_inferiority"].set_index("criterion")
    for c in CRITERIA:
        for col in ("difference", "ci_low", "ci_high", "ppi_lambda", "prescreen_agreement"):
            assert after.loc[c, col] == before.loc[c, col], (c, col)
    assert f"rules version {frozen_rules}" in later.verdict.ppi
    # the agreement table beside it reads the same answers
    assert later.tables["prescreen_agreement"].equals(first.tables["prescreen_agreement"])

    # a pool never screened under the study's rules before they changed: no PPI, the raters alone decide, said so
    raw = sqlite3.connect(tmp_path / "unscreened.db")
    raw.execute("DELETE FROM prescreen WHERE rules_version = ?", [frozen_rules])
    raw.commit()
    raw.close()
    alone = aggregate(open_db(tmp_path / "unscreened.db"))
    for r in alone.verdict.fidelity:
        assert r["ppi"] is False and (r["ci_low"], r["difference"]) == (r["rated_low"], r["rated_difference"])
    assert "Prediction-powered inference not used" in alone.verdict.ppi
    assert f"rules version {frozen_rules}" in alone.verdict.ppi and "after-the-ratings" in alone.verdict.ppi
    # the Chinese reader is told the same reason, with both versions and the count, not sent to the English
    from evalkit.ui.results import verdict_markdown

    head = verdict_markdown(alone, "zh").split("#### 详细说明")[0]
    missing = alone.verdict.ppi.split(" pooled pairs have no answer")[0].rsplit(" ", 1)[-1]
    assert f"配对池中有 {missing} 对没有预检规则版本 {frozen_rules} 的答案" in head
    assert "本 evalkit 的规则（版本 after-the-ratings）不能代替" in head and "原因见下方英文" not in head


def test_a_pool_is_pre_screened_as_it_joins_so_an_upgrade_before_any_look_keeps_ppi(tmp_path, monkeypatch):
    """`evalkit generate` stored outputs unscreened, and the first reader screened them; a study reads its own rules
    version's answers (studies.prescreen_rules), so an evalkit upgraded with new rules between the pool and the first
    look would find none and decide without the pre-screen. The pool is now screened as it joins (study.pairs.draw_queue),
    by the evalkit that made it."""
    import evalkit.task.criteria as criteria
    import evalkit.task.fidelity as fidelity
    from evalkit.store import set_queue_seed
    from evalkit.study.pairs import draw_queue

    gate = tmp_path / "g.toml"
    gate.write_text(gate_file_text(planned_pairs=120, min_ratings_per_pair=1, claim="these raters"), encoding="utf-8")
    db = open_db(tmp_path / "join.db")
    made = build_study(db, SyntheticStudy(gate_path=str(gate), pairs=120, unrated_pairs=300, raters_per_pair=1,
                                          raters=5, queue_order=False, seed=2))
    db.execute("DELETE FROM prescreen")  # as `evalkit generate` stores a pool: no pre-screen answer yet
    db.execute("UPDATE pairs SET queue_rank = NULL")
    db.conn.commit()
    set_queue_seed(db, made["experiment_id"], 77)
    assert draw_queue(db, made["experiment_id"]) == 420
    unscreened = db.execute(
        """SELECT COUNT(*) FROM pairs p WHERE p.kind = 'study' AND EXISTS (SELECT 1 FROM generations g WHERE g.id IN
           (p.ordinary_generation_id, p.assisted_generation_id) AND NOT EXISTS (SELECT 1 FROM prescreen s WHERE
           s.generation_id = g.id AND s.rules_version = ?))""", [fidelity.RULES_VERSION]).fetchone()[0]
    assert unscreened == 0

    monkeypatch.setattr(fidelity, "RULES_VERSION", "after-the-ratings")
    monkeypatch.setattr(criteria, "screen", lambda text: {c: fidelity.Verdict(True, "later rule") for c in CRITERIA})
    agg = aggregate(db)
    assert "Prediction-powered inference used" in agg.verdict.ppi


def test_every_reason_the_pre_screen_was_not_used_has_its_chinese():
    """Verdict audit, 2026-12-07: the Chinese verdict said only that PPI was not used and sent its reader to the
    English for why (a pool not served in a random order, a pre-screen rules version the running evalkit cannot stand
    in for, ...). Each reason is now one template (aggregate.ppi.WHY) written by why_not, which keeps its figures, and
    ui.verdictzh.WHY_ZH says each with the same figures. No code sets a reason any other way (a scan of the source),
    and every reason rendered in Chinese carries every figure of its English."""
    import ast
    import inspect
    import pathlib
    import string

    import evalkit
    from evalkit.aggregate.ppi import WHY, why_not
    from evalkit.ui.verdictzh import WHY_ZH, ppi_zh

    def fields(text):
        return {f for _, f, _, _ in string.Formatter().parse(text) if f}

    assert set(WHY_ZH) == set(WHY)
    for key, text in WHY.items():
        assert fields(WHY_ZH[key]) == fields(text), key
        figures = {f: f"<{f}-{i}>" for i, f in enumerate(sorted(fields(text)))}
        row = why_not({"criterion": CRITERIA[0], "ppi": False, "prescreen_agreement": None}, key, **figures)
        assert row["ppi_note"] == text.format(**figures)
        said = ppi_zh([row], {"ppi": "on", "margin": 0.05})
        assert all(v in said for v in figures.values()) and "英文" not in said, (key, said)
    # every reason goes through why_not: no other code writes ppi_note (a subscript stored to, or a dict's key)
    root = pathlib.Path(evalkit.__file__).parent
    writers = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            keys = node.keys if isinstance(node, ast.Dict) else (
                [node.slice] if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) else [])
            if any(isinstance(k, ast.Constant) and k.value == "ppi_note" for k in keys):
                writers.append((path.relative_to(root).as_posix(), node.lineno))
    assert [w for w, _ in writers] == ["aggregate/ppi.py"], writers
    assert inspect.getsource(why_not).count('row["ppi_note"] =') == 1


def test_the_chinese_says_which_criteria_clear_the_margin_only_with_the_pre_screen(tmp_path):
    """The English verdict names the criteria whose lower end clears the margin with the pre-screen and not on the
    raters' answers alone (ppi._resting, export audit 2026-12-04); the Chinese one (verdictzh.ppi_zh) names the same
    criteria, with the raters-only lower end. A real study's rows, at a margin between the two lower ends."""
    from evalkit.aggregate.ppi import sentence
    from evalkit.ui.verdictzh import ppi_zh

    db, _ = _study(tmp_path, "rest", gate_file_text(planned_pairs=200, min_ratings_per_pair=1, claim="these raters"),
                   pairs=200, unrated_pairs=800, raters_per_pair=1, raters=5, queue_order=True, seed=11,
                   prescreen_accuracy=0.85)
    rows = aggregate(db).verdict.fidelity
    r = max((x for x in rows if x["ppi"] and x["ci_low"] > x["rated_low"]), key=lambda x: x["ci_low"] - x["rated_low"])
    margin = -(r["ci_low"] + r["rated_low"]) / 2  # r clears it only with the pre-screen
    resting = [x for x in rows if x["ppi"] and x["ci_low"] >= -margin > x["rated_low"]]
    english, chinese = sentence(rows, True, margin), ppi_zh(rows, {"ppi": "on", "margin": margin})
    assert r in resting and "margin is cleared only with the pre-screen" in english
    said = "、".join(f"{title(x['criterion'], 'zh')}（{x['rated_low']:+.4f}）" for x in resting)
    assert f"只看评分者的答案，{said} 的区间下限低于" in chinese and "只有加上预检才越过容差" in chinese
    assert all(f"{title(x['criterion'])} ({x['rated_low']:+.4f})" in english for x in resting)
    assert "只有加上预检" not in ppi_zh(rows, {"ppi": "on", "margin": 1.0})  # nothing rests on it at a wide margin
