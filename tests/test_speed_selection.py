"""Speed-up without selection (issue #19 item 6): beside the protocol's speed-up over comparable pairs, the ratio of
tokens per second over ALL matched pairs, with its interval, and a flag when the two disagree beyond their
intervals; computed once, in evalkit.generation.speed, and shown by aggregate and the report."""

import numpy as np

from evalkit.aggregate import GAP_NOTE, aggregate, format_text
from evalkit.records import GenerationRecord
from evalkit.generation.speed import intervals_apart, measure_speed
from evalkit.store import insert_experiment, insert_pairs, open_db


def runs(n_comparable: int, n_long: int, seed: int = 0) -> list[dict]:
    """Matched runs of one prompt: comparable pairs where assisted is 4x faster (same 100 tokens, eos), and pairs
    where the assisted output ran on to the length limit (300 tokens) at only 1.2x the ordinary tokens per second:
    the comparable-pairs rule leaves those out."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_comparable + n_long):
        o_sec = 2.0 * rng.lognormal(0, 0.05)
        long = i >= n_comparable
        a_tokens = 300 if long else 100
        a_sec = (a_tokens / (1.2 * 50)) * rng.lognormal(0, 0.05) if long else o_sec / 4 * rng.lognormal(0, 0.05)
        for path, tokens, sec, stop in (("ordinary", 100, o_sec, "eos"),
                                        ("assisted", a_tokens, a_sec, "max_new_tokens" if long else "eos")):
            rows.append({"path": path, "prompt_id": "writing-01", "round": 1, "rep": i, "stop_reason": stop,
                         "new_tokens": tokens, "seconds": sec, "token_hash": f"{path}{i}"})
    return rows


def test_throughput_ratio_selects_nothing_and_a_gap_is_flagged():
    fig = measure_speed(runs(15, 25), tolerance=0.1, resamples=500)
    assert fig.comparable_pairs == 15 and fig.matched_pairs == 40 and fig.throughput_pairs == 40
    assert 3.6 < fig.speedup < 4.4  # the comparable pairs only
    # all 40 pairs, most of them long: assisted gives 1.2x the ordinary tokens per second
    assert 1.1 < fig.throughput_ratio < 1.4
    assert fig.throughput_ci95[1] < fig.ci95[0] and fig.selection_gap is True
    same = measure_speed(runs(40, 0), tolerance=0.1, resamples=500)  # nothing to select: the two agree
    assert same.throughput_pairs == same.comparable_pairs == 40
    assert abs(same.throughput_ratio - same.speedup) < 0.2 and same.selection_gap is False


def test_intervals_apart():
    assert intervals_apart((1.0, 2.0), (2.5, 3.0)) and intervals_apart((2.5, 3.0), (1.0, 2.0))
    assert intervals_apart((1.0, 2.6), (2.5, 3.0)) is False
    assert intervals_apart(None, (1.0, 2.0)) is None


def test_aggregate_and_report_show_both_and_flag_the_gap(tmp_path):
    db = open_db(tmp_path / "s.db")
    exp = insert_experiment(db, "pool", {}, {})
    specs = []
    by_rep: dict[int, dict] = {}
    for r in runs(15, 25, seed=1):
        by_rep.setdefault(r["rep"], {})[r["path"]] = r
    for i, pair in sorted(by_rep.items()):
        gens = {path: GenerationRecord(prompt_id="writing-01", path=path, text=f"{path} {i}", new_tokens=r["new_tokens"],
                                       stop_reason=r["stop_reason"], generate_seconds=r["seconds"])
                for path, r in pair.items()}
        specs.append({"prompt_id": "writing-01", "sample": i, "ordinary_side": "AB"[i % 2], **gens})
    insert_pairs(db, exp, specs)
    agg = aggregate(db, resamples=500)
    s = agg.speed
    assert s.comparable_pairs == 15 and s.throughput_pairs == 40 and s.selection_gap is True
    assert s.throughput_ci95[1] < s.speedup_ci95[0]
    assert GAP_NOTE in agg.notes
    row = agg.tables["speedup"].set_index("prompt_id").loc["all"]
    assert row["tps_ratio"] == s.throughput_ratio and row["tps_ci_high"] < row["ci_low"] and row["selection_gap"]
    text = format_text(agg)
    assert "tokens per second, assisted over ordinary, over all 40 matched pairs" in text
    assert "the 95% intervals do not overlap" in text
    from evalkit.publish.report import build_report

    page = build_report(db, tmp_path / "r", agg).read_text(encoding="utf-8")
    assert "<b>tokens per second, assisted over ordinary</b>: " + f"{s.throughput_ratio:.2f}x" in page
    assert "SPEED FIGURES DISAGREE" in page and "tps_ratio" in page


def test_a_speed_up_from_the_pool_says_how_many_assisted_samples_fell_back(tmp_path):
    """Audit, 2026-12-02: with the speed-up taken from the pool (no benchmark), the pool's failed assisted samples and
    their fallbacks (stored, never paired) were neither counted nor said: half the samples could fail unseen."""
    import sqlite3

    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    path = tmp_path / "s.db"
    build_study(open_db(path), SyntheticStudy(pairs=40, raters_per_pair=3, raters=12, bench=False, seed=1,
                                              gate_path=str(gate)))
    assert aggregate(open_db(path)).speed.fallback_runs == 0
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("PRAGMA table_info(generations)")]
    base = dict(zip(cols, con.execute("SELECT * FROM generations WHERE path = 'ordinary' LIMIT 1").fetchone()))
    for _ in range(7):  # as pairs._run_item stores a sample whose assisted run failed: all three, unpaired
        for path_, status in (("ordinary", "ok"), ("assisted", "failed"), ("fallback", "ok")):
            row = {k: v for k, v in dict(base, id=None, path=path_, status=status).items() if v is not None}
            con.execute(f"INSERT INTO generations ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                        list(row.values()))
    con.commit()
    con.close()
    agg = aggregate(open_db(path))
    assert agg.speed.source.startswith("pair pool") and agg.speed.fallback_runs == 7
    assert "7 assisted run(s) fell back; they are not counted as assisted" in agg.notes


def test_a_benchmark_with_a_failed_worker_says_its_figures_rest_on_part_of_the_protocol(tmp_path):
    """Audit, 2026-12-02: a benchmark whose worker failed stored the others' runs, and its speed-up was used as if the
    whole protocol had run, with nothing said."""
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate)))
    assert not any("worker processes failed" in n for n in aggregate(db).notes)
    bench = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    db.execute("UPDATE bench_processes SET status = 'failed', error = 'OutOfMemoryError' WHERE id = "
               "(SELECT MAX(id) FROM bench_processes WHERE experiment_id = ?)", [bench])
    db.conn.commit()
    agg = aggregate(db)
    assert agg.speed.source == "benchmark"
    assert any(f"1 of benchmark {bench}'s" in n and "worker processes failed" in n for n in agg.notes)
