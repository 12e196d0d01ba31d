"""Speed-up without selection (issue #19 item 6): beside the protocol's speed-up over comparable pairs, the ratio of
tokens per second over ALL matched pairs, with its interval, and a flag when the two disagree beyond their
intervals; computed once, in evalkit.generation.speed, and shown by aggregate and the report."""

import json

import numpy as np
import pytest

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
    assert not any("worker processes failed" in n or "deciding benchmark round" in n for n in aggregate(db).notes)
    bench = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    db.execute("UPDATE bench_processes SET status = 'failed', error = 'OutOfMemoryError' WHERE id = "
               "(SELECT MAX(id) FROM bench_processes WHERE experiment_id = ?)", [bench])
    db.conn.commit()
    agg = aggregate(db)
    assert agg.speed.source == "benchmark"
    assert any(f"1 of benchmark {bench}'s" in n and "worker processes failed" in n for n in agg.notes)
    # speed audit, 2026-12-06: the failed round leaves the deciding ones unbalanced in the paths' order (ABBA), and
    # nothing said so
    assert any("1 deciding benchmark round(s): the paths start in the given order in 1 and reversed in 0" in n
               for n in agg.notes)


def test_an_odd_speed_rounds_is_refused_for_a_new_study_and_a_stored_one_still_reads(tmp_path, monkeypatch):
    """Speed audit, 2026-12-06: ABBA balances which path starts first over pairs of rounds only, and a gate could set
    an odd speed_rounds, which a note then flagged at aggregate time. A gate file is now refused with it wherever it is
    set for a new study (here: the pool that freezes it); a study frozen with one before the refusal still reads, the
    note saying how the deciding rounds start."""
    import evalkit.study.gate as gates
    from evalkit.errors import EvalkitError
    from evalkit.study.synthetic import SyntheticStudy, add_bench, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15, speed_rounds=3))
    spec = SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate))
    with pytest.raises(EvalkitError, match="speed_rounds = 3 is odd") as e:
        build_study(open_db(tmp_path / "new.db"), spec)
    assert "set speed_rounds to an even number, e.g. 4" in e.value.fix
    assert gates.parse_gate("speed_rounds = 4\n", "g").speed_rounds == 4
    monkeypatch.setattr(gates, "_check_rounds_even", lambda *a: None)  # frozen by a version before the refusal
    db = open_db(tmp_path / "s.db")
    build_study(db, spec)
    monkeypatch.undo()
    add_bench(db, speedup=2.0, seed=5)
    agg = aggregate(db)
    assert agg.speed.rounds == agg.speed.rounds_planned == 3 and agg.speed.rounds_further == 1
    assert any("3 deciding benchmark round(s): the paths start in the given order in 2 and reversed in 1" in n
               for n in agg.notes)


def test_a_study_frozen_with_an_odd_speed_rounds_still_takes_a_later_pool_and_a_benchmark(make_config, tmp_path,
                                                                                         monkeypatch):
    """The refusal of an odd speed_rounds is for a gate set for a new study: a study frozen with one before it keeps
    its gate file, which a later pool must name exactly (one study, one gate), so that file still serves the study's
    later pool and its benchmark; a new study under it is refused."""
    from click.testing import CliRunner

    import evalkit.study.gate as gates
    from evalkit.cli import cli
    from evalkit.study.synthetic import gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15, speed_rounds=3))
    cfg = make_config(gate_file=str(gate), **{"pool.prompts": ["writing-01"], "pool.gold_rate": 0.0,
                                              "bench.prompts": ["writing-01"], "decoding.max_new_tokens": 4})
    db = str(tmp_path / "s.db")

    def run(*args):
        return CliRunner().invoke(cli, [*args, "--config", str(cfg), "--db", db])

    with monkeypatch.context() as m:
        m.setattr(gates, "_check_rounds_even", lambda *a: None)  # the study's first pool, by a version before
        assert run("generate", "--samples", "1").exit_code == 0
    later = run("generate", "--samples", "1")
    assert later.exit_code == 0, later.output
    bench = run("bench", "--rounds", "2", "--reps", "1")
    assert bench.exit_code == 0, bench.output
    new = run("generate", "--samples", "1", "--new-study", "second")
    assert new.exit_code != 0 and "speed_rounds = 3 is odd" in new.output
    pools = open_db(db).execute("SELECT COUNT(*), COUNT(DISTINCT study_id) FROM experiments WHERE kind = 'pool'")
    assert pools.fetchone() == (2, 1)


def bench_rows(rng, speedup: float, rounds: int, drift: float, noise: float = 0.02, prompts: int = 3, reps: int = 3,
               assisted_tokens: int = 100) -> list[dict]:
    """A benchmark's timed runs: each round starts every path in a fresh process whose state (memory placement, the
    clock, other work on the machine) scales all its times by one log-normal factor (sd `drift`); each run adds its
    own noise. Assisted is truly `speedup` times faster on every prompt (per token when it writes as many)."""
    rows = []
    for r in range(1, rounds + 1):
        process = {path: rng.lognormal(0, drift) for path in ("ordinary", "assisted")}
        for p in range(prompts):
            base = 1.0 + p
            for rep in range(reps):
                for path, sec, tokens in (("ordinary", base, 100),
                                          ("assisted", base / speedup * assisted_tokens / 100, assisted_tokens)):
                    rows.append({"path": path, "prompt_id": f"p{p}", "round": r, "rep": rep, "stop_reason": "eos",
                                 "new_tokens": tokens, "seconds": sec * process[path] * rng.lognormal(0, noise),
                                 "token_hash": f"{path}{r}{p}{rep}", "device": "cpu"})
    return rows


def test_a_benchmark_interval_covers_the_speed_up_when_processes_drift():
    """The rounds are the unit: with a few percent of drift between processes, a bootstrap over the runs inside them
    covers the true speed-up in about half of the benchmarks; the interval with the rounds as its unit holds its
    level, with 2 rounds and with 4."""
    rng = np.random.default_rng(7)
    true = 1.5
    for rounds in (2, 4):
        covered = {False: 0, True: 0}
        studies = 200
        for _ in range(studies):
            rows = bench_rows(rng, true, rounds, drift=0.04)
            for processes in (False, True):
                fig = measure_speed(rows, tolerance=0.1, resamples=200, processes=processes)
                covered[processes] += fig.ci95[0] <= true <= fig.ci95[1]
        assert covered[False] / studies < 0.8, (rounds, covered)  # the runs alone: far below 95%
        assert covered[True] / studies >= 0.92, (rounds, covered)
    # the per-token figure takes the rounds as its unit too
    fig = measure_speed(bench_rows(rng, true, 4, drift=0.04), tolerance=0.1, resamples=200, processes=True)
    assert fig.throughput_ci95[0] <= fig.ci95[1] and fig.throughput_ci95[1] >= fig.ci95[0]


def test_a_benchmark_with_one_round_gets_no_interval_and_says_why():
    rows = [r for r in bench_rows(np.random.default_rng(1), 1.5, 2, drift=0.04) if r["round"] == 1]
    fig = measure_speed(rows, tolerance=0.1, resamples=200, processes=True)
    assert fig.speedup is not None and fig.ci95 is None and fig.throughput_ci95 is None
    assert any("1 round(s) of worker processes" in n for n in fig.notes)
    # the pool's single runs (both paths in one process, one after the other): the pair stays the unit
    assert measure_speed(rows, tolerance=0.1, resamples=200).ci95 is not None


def speed_of(fig, source="benchmark"):
    from evalkit.aggregate.timing import Speed

    return Speed(source=source, experiment_id=1, speedup=fig.speedup, speedup_ci95=list(fig.ci95) if fig.ci95 else None,
                 comparable_pairs=fig.comparable_pairs, matched_pairs=fig.matched_pairs,
                 identical_outputs=fig.identical_outputs, extra_memory_mb=10.0, fallback_runs=0,
                 throughput_ratio=fig.throughput_ratio,
                 throughput_ci95=list(fig.throughput_ci95) if fig.throughput_ci95 else None,
                 throughput_pairs=fig.throughput_pairs, selection_gap=fig.selection_gap, notes=list(fig.notes))


def test_the_speed_condition_needs_the_per_token_ratio_and_enough_comparable_pairs():
    from evalkit.aggregate.verdict import speed_condition

    rng = np.random.default_rng(3)
    # truly 1.5x faster, same lengths: passes
    good = speed_condition(speed_of(measure_speed(bench_rows(rng, 1.5, 4, drift=0.01), 0.1, 300, processes=True)), 1.1)
    assert good.ok is True and "tokens/s ratio" in good.reason
    # as fast per token, but 8% shorter outputs (within the 10% tolerance): the time ratio alone would pass
    short = measure_speed(bench_rows(rng, 1.0, 4, drift=0.005, noise=0.005, assisted_tokens=92), 0.1, 300,
                          processes=True)
    assert short.ci95[0] >= 1.05 and short.throughput_ci95[0] < 1.05
    cond = speed_condition(speed_of(short), 1.05)
    assert cond.ok is False and "not per token" in cond.reason
    # 15 of 40 pairs comparable: undecided, whatever the interval of the 15
    picked = measure_speed(runs(15, 25), tolerance=0.1, resamples=300)
    cond = speed_condition(speed_of(picked, "pair pool"), 1.1)
    assert picked.ci95[0] > 1.1 and cond.ok is None and "only 15 of 40 matched pairs" in cond.reason
    # no interval (one round): undecided, and the reason says why
    one = [r for r in bench_rows(rng, 1.5, 2, drift=0.01) if r["round"] == 2]
    cond = speed_condition(speed_of(measure_speed(one, 0.1, 300, processes=True)), 1.1)
    assert cond.ok is None and "worker processes" in cond.reason


def test_the_speed_figure_rests_on_a_benchmark_of_what_the_study_rates(tmp_path):
    """Audit, 2026-12-02: the verdict took the latest benchmark whatever it measured, so a quick benchmark of another
    draft or sampling setting, run after the protocol's, replaced it (a rerun until it passes). Now a benchmark
    counts only when it measured the study's pair, settings and prompts; each one left out is named."""
    import json

    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate)))
    protocol = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    assert aggregate(db).speed.experiment_id == protocol
    pool = db.execute("SELECT config_json, compat_json FROM experiments WHERE kind = 'pool'").fetchone()
    other = json.loads(pool[0])
    other.setdefault("assistant", {})["num_assistant_tokens"] = 99
    quick = insert_experiment(db, "bench", other, json.loads(pool[1] or "{}"))
    assert aggregate(db).speed.experiment_id == protocol  # still running: nothing stored, not a result yet
    from evalkit.records import ProcessRecord
    from evalkit.store import insert_bench_process

    insert_bench_process(db, quick, ProcessRecord(path="ordinary", round=1, order=0), [])
    agg = aggregate(db)
    assert agg.speed.source == "benchmark" and agg.speed.experiment_id == protocol
    assert any(f"benchmark {quick} left out" in n and "assistant.num_assistant_tokens = 99" in n
               for n in agg.speed.notes)
    # the protocol's benchmark itself of another draft: no benchmark measures the study's pair, the pool stands in
    db.execute("UPDATE experiments SET config_json = ? WHERE id = ?", [json.dumps(other), protocol])
    db.conn.commit()
    agg = aggregate(db)
    assert agg.speed.source.startswith("pair pool") and agg.speed.extra_memory_mb is None
    assert any(f"benchmark {protocol} left out" in n for n in agg.speed.notes)
    # a benchmark is stored, so the note asking for one does not say there is none (README audit, 2026-12-04)
    assert not any(n.startswith("no benchmark yet") for n in agg.notes)
    assert any(n.startswith("no benchmark of what the study rates yet (one was left out, see below): run `evalkit "
                            "bench`") for n in agg.notes)


def test_the_draft_s_memory_is_measured_where_the_weights_are(tmp_path):
    """Speed audit, 2026-12-02: the draft's extra memory was RSS right after load (Transformers maps weights lazily:
    a 219 MB draft added 4 MB there) or, when a process recorded CUDA figures, their sum even where the models ran on
    the CPU (0 MB allocated: 'draft adds 0 MB', memory condition passed). Now CUDA counts only where a process put
    weights there; otherwise the peak RSS of the timed runs."""
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15, max_extra_memory_mb=100))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate),
                                   extra_memory_mb=240.0))
    # lazily mapped weights: both paths' processes look alike right after load; a GPU machine running on its CPU
    db.execute("""UPDATE bench_processes SET rss_after_load_mb = 500,
                  cuda_after_load = '{"cuda:0": {"allocated_mb": 0.0, "reserved_mb": 0.0}}'""")
    db.conn.commit()
    agg = aggregate(db)
    assert agg.speed.extra_memory_mb == 240.0 and agg.speed.extra_memory_basis.startswith("peak process RSS")
    memory = next(c for c in agg.verdict.conditions if c.name == "memory")
    assert memory.ok is False and "draft adds 240 MB" in memory.reason and "peak process RSS" in memory.reason
    # weights on CUDA: the allocation after load, which counts them exactly
    db.execute("""UPDATE bench_processes SET cuda_after_load = CASE path WHEN 'assisted'
                  THEN '{"cuda:0": {"allocated_mb": 1090.0}}' ELSE '{"cuda:0": {"allocated_mb": 1000.0}}' END""")
    db.conn.commit()
    agg = aggregate(db)
    assert agg.speed.extra_memory_mb == 90.0 and agg.speed.extra_memory_basis.startswith("CUDA")


def test_the_aggregate_shows_the_prediction_and_the_acceptance_check_beside_the_measured_speed_up(tmp_path):
    """Speed audit, 2026-12-02: Leviathan et al.'s prediction and the acceptance cross-check were printed by `evalkit
    bench` only, never where the decision is read (DESIGN.md: report the prediction beside the measured speed-up)."""
    from evalkit.aggregate import speed_line
    from evalkit.stats import alpha_from_tokens_per_pass, theoretical_speedup
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate)))
    assert aggregate(db).speed.theoretical_speedup is None  # nothing counted: nothing predicted
    bench = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    db.execute("""UPDATE generations SET target_passes = new_tokens / 4, draft_rounds = new_tokens / 4,
                  draft_proposed = 4 * (new_tokens / 4), draft_accepted = 2 * (new_tokens / 4), counts_agree = 1
                  WHERE path = 'assisted' AND id IN (SELECT generation_id FROM timing_runs WHERE experiment_id = ?)""",
               [bench])
    db.execute("UPDATE bench_processes SET target_seconds_per_token = 0.02, draft_seconds_per_token = 0.002")
    db.conn.commit()
    speed = aggregate(db).speed
    rows = [dict(r) for r in db.query("""SELECT g.new_tokens, g.target_passes FROM timing_runs t JOIN generations g
                                          ON g.id = t.generation_id WHERE t.experiment_id = ? AND t.path = 'assisted'""",
                                       [bench])]
    per_pass = sum(r["new_tokens"] for r in rows) / sum(r["target_passes"] for r in rows)
    expected = theoretical_speedup(alpha_from_tokens_per_pass(per_pass, 4.0), 4.0, 0.1)
    assert speed.theoretical_speedup == pytest.approx(expected) and speed.counts_agree is True
    assert f"Leviathan et al. predict {expected:.2f}x" in speed_line(speed)
    db.execute("UPDATE generations SET counts_agree = 0 WHERE id = (SELECT MAX(generation_id) FROM timing_runs "
               "WHERE path = 'assisted')")
    db.conn.commit()
    assert "acceptance counts (candidate generator, target passes) disagree" in speed_line(aggregate(db).speed)


def _batch_bench(db, config: dict, compat: dict, device: str = "cpu") -> int:
    """A benchmark of `config` in which assisted is twice as slow and ordinary also ran at batch size 2."""
    from evalkit.records import BatchRun, ProcessRecord, TimingRun
    from evalkit.store import insert_bench_processes

    def gen(prompt, path, secs, bs=1):
        return GenerationRecord(prompt_id=prompt, path=path, text=path, new_tokens=100, stop_reason="eos",
                                generate_seconds=secs, token_hash=f"h{prompt}", batch_size=bs, device=device)

    exp = insert_experiment(db, "bench", config, compat)
    prompts = sorted({r[0] for r in db.execute("SELECT DISTINCT prompt_id FROM timing_runs")})
    procs = []
    for rnd in (1, 2):
        for path, sec in (("ordinary", 2.0), ("assisted", 4.0)):
            runs_ = [(TimingRun(path=path, prompt_id=p, round=rnd, rep=rep, seed=rep, new_tokens=100, stop_reason="eos",
                                seconds=sec * (1 + 0.01 * rep + 0.02 * rnd), device=device),
                      [gen(p, path, sec * (1 + 0.01 * rep + 0.02 * rnd))]) for p in prompts for rep in range(3)]
            batch, call = [], 0
            for rep in range(3 if path == "ordinary" else 0):
                for k, p in enumerate(prompts):
                    s = 2.2 * (1 + 0.01 * rep + 0.01 * k)
                    for slot in range(2):
                        q = prompts[(k + slot) % len(prompts)]
                        batch.append((BatchRun(path="ordinary", prompt_id=q, round=rnd, rep=rep, seed=rep, new_tokens=100,
                                               stop_reason="eos", seconds=s, batch_size=2, batch_call=call, slot=slot,
                                               left_padding=0, device=device), gen(q, "ordinary", s, bs=2)))
                    call += 1
            procs.append((ProcessRecord(path=path, round=rnd, order=0), runs_, batch))
    insert_bench_processes(db, exp, procs)
    return exp


def test_the_batch_figure_rests_on_a_benchmark_of_what_the_study_rates(tmp_path):
    """Audit, 2026-12-04: the batch comparison took the latest benchmark with batch sizes whatever it measured, so
    one report said assisted was twice as fast (the protocol's benchmark) and that ordinary beat it twice over at
    every batch size (a benchmark of another draft length, refused for the speed-up a few lines above). It now
    comes from a benchmark that measures the study's pair, as the speed-up does, and the one left out is named."""
    import json

    from evalkit.publish.provenance import build_provenance
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate)))
    protocol = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    pool = db.execute("SELECT config_json, compat_json FROM experiments WHERE kind = 'pool'").fetchone()
    same, compat = json.loads(pool[0]), json.loads(pool[1] or "{}")
    other = json.loads(pool[0])
    other.setdefault("assistant", {})["num_assistant_tokens"] = 99
    quick = _batch_bench(db, other, compat)
    agg = aggregate(db)
    assert agg.speed.experiment_id == protocol and agg.speed.batch_experiment_id is None
    assert agg.speed.batch_answer is None and len(agg.tables["batch"]) == 0
    assert any(f"batch sizes of benchmark {quick} left out" in n and "num_assistant_tokens = 99" in n
               for n in agg.notes)
    text = format_text(agg)
    assert f"batch sizes (benchmark {quick})" not in text and f"batch sizes of benchmark {quick} left out" in text
    assert not any(f.name.startswith("batch sizes") for f in build_provenance(db, agg).figures)
    # the Live tab's note too (demo audit M2: it took the latest benchmark, whatever it measured, under a run of the
    # study's settings): no answer from it, and it says why
    from evalkit.ui.live import batch_note

    note = batch_note(db)
    assert f"benchmark experiment {quick}" not in note and f"batch sizes of benchmark {quick} left out" in note
    # a benchmark of the study's own settings with batch sizes is the one shown, and named
    measured = _batch_bench(db, same, compat)
    agg = aggregate(db)
    assert agg.speed.batch_experiment_id == measured and "ordinary" in agg.speed.batch_answer
    assert f"batch sizes (benchmark {measured})" in format_text(agg)
    assert batch_note(db) == (f"Batches (benchmark experiment {measured}, on cpu, assisted at batch 1 against ordinary at each "
                              f"batch size): {agg.speed.batch_answer}.")


def test_the_live_tab_s_batch_note_names_the_device_its_benchmark_ran_on(tmp_path):
    """Live audit, 2026-12-05: under a Live run on a laptop's CPU, the batch note gave a benchmark's answer with no
    device, so one measured on a GPU read as this laptop's figure. It now names the benchmark's device."""
    import json

    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
    from evalkit.ui.live import batch_note

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate),
                               device="cuda:0"))  # its pool too: the study's speed claim is about cuda
    pool = db.execute("SELECT config_json, compat_json FROM experiments WHERE kind = 'pool'").fetchone()
    measured = _batch_bench(db, json.loads(pool[0]), json.loads(pool[1] or "{}"), device="cuda:0")
    assert batch_note(db).startswith(f"Batches (benchmark experiment {measured}, on cuda:0, assisted at batch 1")


def test_a_prompt_left_out_of_the_speed_up_has_no_figure_of_its_own_and_a_wide_interval_never_prints_as_zero():
    """A prompt whose ratio cannot be formed (a stored time of 0) is left out of the figure; its own line said a
    number all the same, from medians the 0 did not reach, and the summary printed a prompt without one as 'n/ax'.
    Two rounds far apart give an interval on 1 degree of freedom whose lower end is far below 0.1: it printed as
    0.00, a speed-up of zero."""
    import re

    from evalkit.generation.bench import BenchSummary, format_summary

    rows = bench_rows(np.random.default_rng(3), 1.5, 2, drift=1.0)
    next(r for r in rows if r["prompt_id"] == "p2" and r["path"] == "assisted")["seconds"] = 0.0
    fig = measure_speed(rows, tolerance=0.1, resamples=200, processes=True)
    assert any("p2 (1 of its 6 pairs)" in n for n in fig.notes)
    assert fig.by_prompt["p2"].speedup is None and fig.by_prompt["p0"].speedup is not None
    assert 0 < fig.ci95[0] < 0.1
    summary = BenchSummary(
        experiment_id=1, decoding="sample", dtype="float32", route="same_tokenizer", token_space="shared", paths={},
        matched_pairs=fig.matched_pairs, comparable_pairs=fig.comparable_pairs, fallback_runs=0, speedup=fig.speedup,
        speedup_ci95=fig.ci95, notes=fig.notes, device_kinds=fig.device_kinds, speedup_by_prompt=fig.by_prompt,
        identical_outputs=fig.identical_outputs, acceptance_rate=None, draft_tokens=None, candidate_generators=[],
        tokens_per_target_pass=None, mean_draft_length=None, counts_agree=None, cost_ratio=None, alpha=None,
        theoretical_speedup=None)
    text = format_summary(summary)
    assert "n/ax" not in text and "p2 n/a (6/6)" in text
    low, high = re.search(r"speed-up \(median over prompts\): \S+x  95% CI (\S+) - (\S+)", text).groups()
    assert float(low) == pytest.approx(fig.ci95[0], rel=0.05) and float(high) == pytest.approx(fig.ci95[1], rel=0.01)


def test_a_later_pool_of_another_setting_never_chooses_the_study_s_benchmark(tmp_path):
    """Verdict audit, 2026-12-04: benchmarks were checked against the study's latest pool, so a later pool made with
    another draft setting (20 tokens where the rated pairs had 5) made its own benchmark the study's speed figure, and
    a DROP on the rated setting's 1.05x became KEEP. The study's first pool, the one its gate was frozen with, now
    says what a benchmark must measure (and `generate` refuses such a later pool: tests/test_study.py)."""
    import json

    from evalkit.records import ProcessRecord
    from evalkit.store import insert_bench_process
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate)))
    protocol = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    cfg, compat, gate_json = db.execute(
        "SELECT config_json, compat_json, gate_json FROM experiments WHERE kind = 'pool'").fetchone()
    other = json.loads(cfg)
    other.setdefault("assistant", {})["num_assistant_tokens"] = 99
    later = insert_experiment(db, "pool", other, json.loads(compat or "{}"), gate=json.loads(gate_json))
    assert db.execute("SELECT COUNT(DISTINCT study_id) FROM experiments WHERE kind = 'pool'").fetchone()[0] == 1
    its_bench = insert_experiment(db, "bench", other, json.loads(compat or "{}"))
    insert_bench_process(db, its_bench, ProcessRecord(path="ordinary", round=1, order=0), [])
    agg = aggregate(db)
    assert agg.speed.experiment_id == protocol and later
    assert any(f"benchmark {its_bench} left out" in n and "assistant.num_assistant_tokens = 99" in n
               for n in agg.speed.notes)


def test_a_benchmark_of_edited_prompt_files_never_decides_the_study_s_speed(tmp_path):
    """Sceptic audit, 2026-12-06: a benchmark was matched to the study by its settings and prompt ids, so one run after
    a prompt file was edited (here writing-01, on a longer budget where drafting gains more) timed another request
    under the rated id, and, stored first, decided the study's speed-up (3x where the rated requests run at 1x). The
    request hashes its runs stored must now be those the study's pairs answered; it is left out, and said."""
    import json

    from evalkit.study.synthetic import PROMPTS as SYNTHETIC_PROMPTS, SyntheticStudy, add_bench, build_study, \
        gate_file_text
    from evalkit.task.prompts import load_prompts, prompt_hash

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate), bench=False))
    hashes = {p.id: prompt_hash(p) for p in load_prompts()}

    def stamp(experiment_id: int, edited: str = "") -> None:  # the request each run stored, as generate and bench do
        for pid in SYNTHETIC_PROMPTS:
            h = "0123456789abcdef" if pid == edited else hashes[pid]
            db.execute("UPDATE generations SET effective_config = ? WHERE experiment_id = ? AND prompt_id = ?",
                       [json.dumps({"prompt": {"id": pid, "hash": h}}), experiment_id, pid])
        db.conn.commit()

    stamp(db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0])
    edited = add_bench(db, speedup=3.0, seed=1)
    stamp(edited, edited="writing-01")
    honest = add_bench(db, speedup=1.0, seed=2)
    stamp(honest)
    agg = aggregate(db)
    assert agg.speed.experiment_id == honest and agg.speed.speedup < 1.5, (agg.speed.experiment_id, agg.speed.speedup)
    assert any(f"benchmark {edited} left out" in n and "prompt writing-01 is another request (hash 0123456789abcdef)"
               in n and hashes["writing-01"] in n for n in agg.speed.notes), agg.speed.notes


def test_a_prompt_with_a_single_pair_gives_no_interval_not_one_of_zero_width():
    """A pool of one sample per prompt (`evalkit generate --samples 1`) has one pair per prompt: the interval, which
    resamples pairs within each prompt, drew the same ratios every time and printed a speed-up of 0.21x [0.21, 0.21],
    which the gate weighed as certain (an interim DROP; a KEEP the same way for a fast path). No interval then, and a
    note that names the prompts and what to run; two pairs per prompt give an interval again."""
    from evalkit.stats.speedup import speedup_with_left_out

    one_each = {p: ([2.0 + 0.1 * i], [1.0]) for i, p in enumerate(["writing-01", "writing-02", "writing-03"])}
    point, ci, _ = speedup_with_left_out(one_each, resamples=300)
    assert point == pytest.approx(2.1) and ci is None
    mixed = {**one_each, "writing-01": ([2.0, 2.4], [1.0, 1.1])}
    assert speedup_with_left_out(mixed, resamples=300)[1] is None  # writing-02 and -03 still have one pair each
    rows = []
    for i, prompt in enumerate(["writing-01", "writing-02", "writing-03"]):
        for path, sec in (("ordinary", 2.0 + 0.1 * i), ("assisted", 1.0)):
            rows.append({"path": path, "prompt_id": prompt, "round": 1, "rep": 0, "stop_reason": "eos",
                         "new_tokens": 100, "seconds": sec, "token_hash": f"{path}{i}"})
    fig = measure_speed(rows, tolerance=0.1, resamples=300)
    assert fig.speedup == pytest.approx(2.1) and fig.ci95 is None and fig.throughput_ci95 is None
    note = next(n for n in fig.notes if n.startswith("speed-up: no interval"))
    assert "writing-01, writing-02, writing-03 have a single pair" in note and "--samples 2" in note
    two_each = rows + [{**r, "rep": 1, "seconds": r["seconds"] * (1.1 if r["path"] == "ordinary" else 1.0),
                        "token_hash": r["token_hash"] + "b"} for r in rows]
    again = measure_speed(two_each, tolerance=0.1, resamples=300)
    assert again.ci95 is not None and again.ci95[0] < again.ci95[1]
    assert not any("no interval" in n for n in again.notes)


def test_aggregate_says_once_that_single_pair_prompts_give_no_interval(tmp_path):
    """A pool of one pair per prompt and no benchmark: `evalkit aggregate` printed the same sentence (which prompts
    have a single pair, why that gives no interval, what to run) four times: once per figure (the speed-up and the
    tokens per second ratio) in the verdict's speed-up reason, and both again as notes. Said once, naming both
    figures; the JSON's notes leave it to the verdict's reason and the speed figure."""
    import json

    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=5, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate), bench=False))
    assert db.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM pairs GROUP BY prompt_id)").fetchone()[0] == 1
    db.conn.close()
    r = CliRunner().invoke(cli, ["aggregate", "--db", str(tmp_path / "s.db")])
    assert r.exit_code == 0, r.output
    assert r.output.count("have a single pair") == 1, r.output
    assert "no interval, nor for tokens per second, assisted over ordinary, since prompt(s) writing-01" in r.output
    r = CliRunner().invoke(cli, ["aggregate", "--db", str(tmp_path / "s.db"), "--json"])
    out = json.loads(r.stdout)
    # once, in the verdict's speed-up reason or (the pool's figure not deciding: speed_source) in the notes
    speed = next(c for c in out["verdict"]["conditions"] if c["name"] == "speed-up")
    assert speed["reason"].count("have a single pair") + sum(n.count("have a single pair") for n in out["notes"]) == 1
    assert sum(n.count("have a single pair") for n in out["speed"]["notes"]) == 1


def _study_with_a_slow_benchmark(tmp_path, speedup: float = 1.0, extra_memory_mb: float = 200.0, speed_rounds: int = 2):
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15, min_speedup_ci_low=1.1, max_extra_memory_mb=150,
                                   speed_rounds=speed_rounds))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate),
                                   speedup=speedup, extra_memory_mb=extra_memory_mb))
    return db, db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]


def _condition(agg, name: str):
    return next(c for c in agg.verdict.conditions if c.name == name)


def test_rerunning_the_benchmark_cannot_make_a_failing_speed_condition_pass(tmp_path):
    """Speed audit, 2026-12-06: until the decision froze, a benchmark stored later replaced the earlier one in the
    speed and memory conditions, so an organiser could rerun `evalkit bench` until the lower end cleared the bar (a
    search). Every benchmark of the study's pair now counts: their rounds pool into the figure and its interval, and
    the memory condition takes the largest extra memory measured. The pooled figure is checked against a direct
    computation over all rounds. (Which rounds decide is planned in the gate, speed_rounds: here 4, two benchmarks'
    worth; rounds after them never enter, test_rerunning_until_the_speed_condition_passes_keeps_its_level.)"""
    import math

    from scipy import stats as sps

    from evalkit.study.synthetic import add_bench

    db, slow = _study_with_a_slow_benchmark(tmp_path, speedup=1.0, extra_memory_mb=200.0, speed_rounds=4)
    first = aggregate(db)
    assert _condition(first, "speed-up").ok is None and _condition(first, "memory").ok is False
    assert "2 of the 4 benchmark rounds the gate plans" in _condition(first, "speed-up").reason
    from evalkit.ui.verdictzh import _speed

    assert "尚未判定" in _speed(first, {"min_speedup_ci_low": 1.1}) and "--rounds 2" in _speed(first, {})
    fast = add_bench(db, speedup=3.0, extra_memory_mb=50.0, seed=5)  # a lucky rerun: faster, and lighter
    agg = aggregate(db)
    assert _condition(agg, "speed-up").ok is not True and _condition(agg, "memory").ok is False
    assert agg.speed.benchmark_ids == [slow, fast] and agg.speed.rounds == 4
    assert agg.speed.extra_memory_mb == pytest.approx(200.0) and f"benchmark {slow}'s" in agg.speed.extra_memory_basis
    basis = f"2 benchmarks ({slow}, {fast}), 4 rounds pooled"
    assert basis in _condition(agg, "speed-up").reason  # the verdict, so the report and the Results tab
    from evalkit.publish.provenance import build_provenance
    from evalkit.ui.results import verdict_markdown

    assert basis in next(f for f in build_provenance(db, agg).figures if f.name == "speed-up").value  # the card
    assert basis in verdict_markdown(agg) and f"2 次基准测试：{slow}, {fast}，共 4 轮" in verdict_markdown(agg, "zh")
    # the figure, directly: per prompt the median ordinary over the median assisted seconds over every round of both
    # benchmarks, the median over prompts; the interval reaches at least Student's t over the 4 rounds' own figures
    runs = list(db.query("SELECT experiment_id, round, prompt_id, path, seconds FROM timing_runs"))

    def point(rs):
        return float(np.median([np.median([r["seconds"] for r in rs if r["prompt_id"] == p and r["path"] == "ordinary"])
                                / np.median([r["seconds"] for r in rs if r["prompt_id"] == p and r["path"] == "assisted"])
                                for p in sorted({r["prompt_id"] for r in rs})]))

    assert agg.speed.speedup == pytest.approx(point(runs))
    logs = [math.log(point([r for r in runs if (r["experiment_id"], r["round"]) == k]))
            for k in sorted({(r["experiment_id"], r["round"]) for r in runs})]
    half = sps.t.ppf(0.975, len(logs) - 1) * np.std(logs, ddof=1) / math.sqrt(len(logs))
    low, high = agg.speed.speedup_ci95
    assert low <= point(runs) * math.exp(-half) * (1 + 1e-9) and high >= point(runs) * math.exp(half) * (1 - 1e-9)
    assert low < 1.1
    # a third benchmark, faster still, comes after the 4 deciding rounds: reported, never weighed
    third = add_bench(db, speedup=3.0, seed=6)
    again = aggregate(db)
    assert (again.speed.speedup, again.speed.speedup_ci95) == (agg.speed.speedup, agg.speed.speedup_ci95)
    assert f"2 further rounds measured (benchmark {third}), not deciding" in _condition(again, "speed-up").reason
    assert f"此后另测 2 轮（基准测试 {third}），不参与判定" in verdict_markdown(again, "zh")


def test_benchmarks_of_the_study_s_pair_on_two_device_kinds_leave_the_speed_condition_unjudged(tmp_path, frozen_before):
    """Benchmarks of one pair on a CPU and on a GPU measure two claims whose timings never pool; taking either would
    let the organiser choose the figure. The condition is not judged, names the benchmarks of each kind and says
    how to fix it, in both languages. (Under a gate frozen before speed_device, where any device decides: a gate of
    today leaves the other device's benchmark out, or with an unknown deployment device judges nothing,
    test_a_pool_that_recorded_no_device_leaves_speed_and_memory_unjudged_and_says_how_to_fix_it.)"""
    from evalkit.study.synthetic import add_bench
    from evalkit.ui.verdictzh import _speed

    frozen_before("speed_device")
    db, slow = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, speed_rounds=4)  # both benchmarks decide
    gpu = add_bench(db, speedup=2.0, seed=5)
    db.execute("UPDATE timing_runs SET device = CASE experiment_id WHEN ? THEN 'cpu' ELSE 'cuda:0' END", [slow])
    db.conn.commit()
    agg = aggregate(db)
    cond = _condition(agg, "speed-up")
    assert cond.ok is None and agg.verdict.decision != "KEEP"
    assert f"cpu: benchmark(s) {slow}; cuda: benchmark(s) {gpu}" in cond.reason and "new database" in cond.reason
    zh = _speed(agg, {"min_speedup_ci_low": 1.1})
    assert "无法判定" in zh and f"cuda: benchmark(s) {gpu}" in zh


def test_a_pool_that_recorded_no_device_leaves_speed_and_memory_unjudged_and_says_how_to_fix_it(tmp_path):
    """Device audit, 2026-12-06: under the gate's speed_device = "pool", a pool that recorded no device (an older
    evalkit's) let a benchmark on any device decide, the first stored: a guess at the deployment's hardware. Neither
    the speed nor the memory condition (the draft's memory is the hardware's too) is judged then; both say why and how
    to fix it (name the device in the gate before the first pool; for this frozen study, a new study under that
    gate), in both languages, and `evalkit bench` says so before its rounds. The same for a pool over several
    placements."""
    from evalkit.aggregate.data import bench_device_note
    from evalkit.study.synthetic import add_bench
    from evalkit.ui.results import verdict_markdown
    from evalkit.ui.verdictzh import _memory, _speed

    db = _study_on(tmp_path, "")
    pool = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    # before any benchmark, the interim look's reminder says what can fix it, not "run `evalkit bench`", which cannot
    notes = aggregate(db).notes
    assert any(n.startswith(f"speed and memory conditions not judged: the study's first pool (experiment {pool})")
               for n in notes) and not any(n.startswith("no benchmark") for n in notes)
    gpu = add_bench(db, speedup=3.0, extra_memory_mb=50.0, seed=5, device="cuda:0")
    agg = aggregate(db)
    speed, memory = _condition(agg, "speed-up"), _condition(agg, "memory")
    assert speed.ok is None and memory.ok is None and agg.verdict.decision != "KEEP"
    assert agg.speed.benchmark_ids == [gpu] and agg.speed.speedup > 2  # measured, reported
    for reason in (speed.reason, memory.reason):
        assert f"first pool (experiment {pool}) recorded no device" in reason and 'speed_device = "pool"' in reason
        assert 'set speed_device = "cpu"' in reason and "--new-study NAME" in reason
    assert "the draft adds 50 MB, reported, not judged" in memory.reason
    assert speed.reason in format_text(agg) and speed.reason in verdict_markdown(agg)
    for zh in (_speed(agg, {}), _memory(agg, {})):
        assert "无法判定" in zh and f"实验 {pool}" in zh and "没有记录设备" in zh and "--new-study NAME" in zh
    assert "recorded no device" in bench_device_note(db, "cuda:0", {})
    assert any(n.startswith("speed and memory conditions not judged: the study's first pool") for n in agg.notes)
    # a pool whose ranks ran on two placements names them
    db.execute("UPDATE generations SET rank = id % 2, effective_config = json_set(effective_config, '$.devices', "
               "CASE id % 2 WHEN 0 THEN 'cpu' ELSE 'cuda' END) WHERE experiment_id = ?", [pool])
    db.conn.commit()
    assert "ran on several device placements (cpu, cuda)" in _condition(aggregate(db), "speed-up").reason


def _study_on(tmp_path, device: str, frozen_before=None, gate_lines: str = ""):
    """A study whose pool ran on `device` (its compatibility record), rated, with no benchmark yet (speed_rounds 2;
    `gate_lines` added to its gate file)."""
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    if frozen_before is not None:
        frozen_before("speed_device")  # what an earlier version stored: no speed_device in text or values
    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15, min_speedup_ci_low=1.1, max_extra_memory_mb=250)
                    + "\n" + gate_lines)
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate), bench=False,
                                   device=device))
    return db


def test_only_a_benchmark_on_the_device_the_study_s_pool_ran_on_decides_the_speed_condition(tmp_path):
    """Sceptic audit, 2026-12-06: whichever benchmark of the pair was stored first decided, whatever device it ran on,
    so an organiser could benchmark where drafting gains most (a GPU, where the pool and the deployment are on a CPU)
    and the verdict's speed-up described hardware the study does not run on. The gate's speed_device ("pool" by
    default: the device kind of the study's first pool, from its compatibility record) now fixes it before the first
    benchmark: one on another kind is left out with a note naming both devices, and the condition waits for rounds on
    the pool's kind, saying where to run them, in both languages."""
    from evalkit.study.synthetic import add_bench
    from evalkit.ui.verdictzh import _speed

    db = _study_on(tmp_path, "cpu")
    gpu = add_bench(db, speedup=3.0, seed=5, device="cuda:0")  # stored first, on the hardware that flatters drafting
    agg = aggregate(db)
    cond = _condition(agg, "speed-up")
    assert cond.ok is None and agg.speed.benchmark_ids == [] and agg.speed.deploy_device == "cpu"
    note = next(n for n in agg.speed.notes if f"benchmark {gpu} left out" in n)
    assert "its device is cuda" in note and "about cpu" in note and 'speed_device = "pool"' in note
    assert "`evalkit bench --rounds 2` on cpu" in cond.reason and "在 cpu 上" in _speed(agg, {})
    assert any(n.startswith("no benchmark of what the study rates yet (one was left out, see below): run `evalkit "
                            "bench` on cpu") for n in agg.notes)  # the interim look's reminder: not "no benchmark yet"
    cpu = add_bench(db, speedup=1.0, seed=6, device="cpu")  # the deployment hardware: no gain
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [cpu] and agg.speed.rounds == 2 and agg.speed.rounds_further == 0
    assert _condition(agg, "speed-up").ok is False and agg.verdict.decision != "KEEP"
    # the verdict, the card and the Chinese verdict name the hardware the figure describes
    from evalkit.publish.provenance import build_provenance

    assert f"benchmark {cpu}, 2 rounds, on cpu" in _condition(agg, "speed-up").reason
    assert f"benchmark {cpu}, 2 rounds, on cpu" in next(f for f in build_provenance(db, agg).figures
                                                      if f.name == "speed-up").value
    assert f"基准测试：{cpu}，共 2 轮，在 cpu 上" in _speed(agg, {})
    assert any(f"benchmark {gpu} left out" in n for n in agg.speed.notes)


@pytest.mark.parametrize("gate_lines", ["", 'speed_device = "cpu"'])
def test_a_benchmark_that_recorded_no_device_never_decides_under_a_known_device(tmp_path, gate_lines):
    """Speed audit, 2026-12-06: other_device let a benchmark with no device recorded (no worker placement, timed run's
    device nor compatibility record: an older evalkit's, a synthetic row) decide wherever the deployment device was
    known ("pool" with a known pool device, or one named by the gate): a figure from unknown hardware weighed as the
    deployment's. It is now left out, named, like one on another device; the speed and memory conditions wait."""
    from evalkit.study.synthetic import add_bench
    from evalkit.ui.verdictzh import _speed

    db = _study_on(tmp_path, "cpu", gate_lines=gate_lines)
    unknown = add_bench(db, speedup=3.0, extra_memory_mb=50.0, seed=5, device="")
    assert db.execute("SELECT COUNT(*) FROM timing_runs WHERE experiment_id = ? AND device != ''",
                      [unknown]).fetchone()[0] == 0
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [] and agg.speed.deploy_device == "cpu"
    assert _condition(agg, "speed-up").ok is None and _condition(agg, "memory").ok is None
    note = next(n for n in agg.speed.notes if f"benchmark {unknown} left out, not deciding" in n)
    assert "it recorded no device" in note and "cannot be known to run on cpu" in note and "unknown hardware" in note
    assert "`evalkit bench --rounds 2` on cpu" in _condition(agg, "speed-up").reason and "在 cpu 上" in _speed(agg, {})
    cpu = add_bench(db, speedup=1.0, seed=6, device="cpu")
    assert aggregate(db).speed.benchmark_ids == [cpu]


def test_a_batch_figure_from_another_device_than_the_study_s_speed_claim_is_left_out_and_named(tmp_path):
    """Device audit, 2026-12-06: the batch table took the latest benchmark of the pair with batch sizes whatever device
    it ran on, so a GPU's "ordinary wins from batch 2" sat in the report, the card and the Live tab beside a speed-up
    the gate's speed_device fixes on the CPU. It now follows the same device rule as the speed-up: left out, named."""
    import json

    from evalkit.publish.provenance import build_provenance
    from evalkit.study.synthetic import add_bench
    from evalkit.ui.live import batch_note

    db = _study_on(tmp_path, "cpu")
    add_bench(db, speedup=2.0, seed=5, device="cpu")
    pool = db.execute("SELECT config_json FROM experiments WHERE kind = 'pool'").fetchone()
    gpu = _batch_bench(db, json.loads(pool[0]), {"device": "cuda:0"}, device="cuda:0")
    agg = aggregate(db)
    assert agg.speed.batch_experiment_id is None and agg.speed.batch_answer is None and len(agg.tables["batch"]) == 0
    note = next(n for n in agg.notes if f"batch sizes of benchmark {gpu} left out" in n)
    assert "its device is cuda" in note and "about cpu" in note and 'models.device = "cpu"' in note
    assert note in format_text(agg) and f"batch sizes (benchmark {gpu})" not in format_text(agg)
    assert not any(f.name.startswith("batch sizes") for f in build_provenance(db, agg).figures)
    assert f"benchmark experiment {gpu}" not in batch_note(db) and f"benchmark {gpu} left out" in batch_note(db)
    cpu = _batch_bench(db, json.loads(pool[0]), {"device": "cpu"}, device="cpu")  # the deployment's hardware
    agg = aggregate(db)
    assert agg.speed.batch_experiment_id == cpu and len(agg.tables["batch"]) > 0
    assert batch_note(db).startswith(f"Batches (benchmark experiment {cpu}, on cpu,")


def _placed(db, bench: int, target: dict, draft: dict) -> None:
    """What a benchmark's worker processes recorded of where the weights sat (as bench/worker.py stores it: the draft
    in the processes that load it): the GPU placements this CPU machine cannot make."""
    import json

    db.execute("UPDATE bench_processes SET target_placement = ?, draft_placement = CASE path WHEN 'assisted' THEN ? "
               "ELSE '{}' END WHERE experiment_id = ?", [json.dumps(target), json.dumps(draft), bench])
    db.conn.commit()


def test_a_split_run_s_benchmark_never_decides_for_an_unsplit_pool_nor_the_reverse(tmp_path):
    """Device audit, 2026-12-06: a run counted as its main device (models.device), so a benchmark whose target a
    device_map split over a GPU and the CPU (or whose draft sat on the CPU) decided the speed condition of a pool that
    ran wholly on the GPU, and the reverse: other hardware, other speed and memory. What a run really used is now
    recorded (each generation's devices; each bench process's placement) and only a benchmark of the same placement
    decides, speed and memory alike; the other is left out and named."""
    from evalkit.study.synthetic import add_bench
    from evalkit.ui.verdictzh import _speed

    db = _study_on(tmp_path, "cuda:0")  # its config has no device_map: wholly on the GPU
    split = add_bench(db, speedup=3.0, extra_memory_mb=100.0, seed=5, device="cuda:0")
    _placed(db, split, {"cuda:0": 80.0, "cpu": 40.0}, {"cuda:0": 10.0})  # part of the target offloaded to the CPU
    whole = add_bench(db, speedup=1.0, extra_memory_mb=300.0, seed=6, device="cuda:0")
    _placed(db, whole, {"cuda:0": 120.0}, {"cuda:0": 10.0})
    draft_on_cpu = add_bench(db, speedup=3.0, extra_memory_mb=100.0, seed=7, device="cuda:0")
    _placed(db, draft_on_cpu, {"cuda:0": 120.0}, {"cpu": 10.0})
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [whole] and agg.speed.deploy_device == "cuda"
    assert agg.speed.memory_benchmark_ids == [whole] and agg.speed.extra_memory_mb == pytest.approx(300.0)
    for other in (split, draft_on_cpu):
        note = next(n for n in agg.speed.notes if f"benchmark {other} left out" in n)
        assert "its device is cpu+cuda" in note and "about cuda" in note and "several" in note
    assert _condition(agg, "speed-up").ok is False and "在 cuda 上" in _speed(agg, {})
    # the reverse: a pool whose generations recorded the split (what paths._effective stores since)
    db.execute("UPDATE generations SET effective_config = json_set(effective_config, '$.devices', 'cpu+cuda') "
               "WHERE experiment_id = (SELECT id FROM experiments WHERE kind = 'pool')")
    db.conn.commit()
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [split] and agg.speed.deploy_device == "cpu+cuda"
    assert agg.speed.further_benchmark_ids == [draft_on_cpu]  # the same placement: measured after, not deciding
    note = next(n for n in agg.speed.notes if f"benchmark {whole} left out" in n)
    assert "its device is cuda, and the study's speed claim is about cpu+cuda" in note
    assert "models.device_map" in note and "on cpu+cuda" in _condition(agg, "speed-up").reason


def test_a_gate_can_name_a_split_placement_and_only_that_placement_decides(tmp_path):
    """Speed audit, 2026-12-06: runs record split placements ("cpu+cuda": a target a device_map offloaded in part to
    the CPU, a draft on another device), but the gate's speed_device took only "pool", "cpu", "cuda" or "mps", so a
    study deploying a split pair whose pool was made otherwise could not say so. It now takes a placement as runs
    record it (kinds sorted, joined by "+"), matched exactly; other spellings are refused naming the key and the
    forms allowed (the recorded order where only the order is wrong); the old choices stay valid."""
    from evalkit.errors import EvalkitError
    from evalkit.study.gate import parse_gate
    from evalkit.study.synthetic import add_bench

    assert parse_gate('speed_device = "cpu+cuda"', "g.toml").speed_device == "cpu+cuda"
    assert [parse_gate(f'speed_device = "{v}"', "g.toml").speed_device for v in ("pool", "cpu", "cuda", "mps")] == [
        "pool", "cpu", "cuda", "mps"]
    for bad, also in (('"cuda+cpu"', 'here "cpu+cuda"'), ('"gpu"', ""), ('"cpu+cpu"', ""), ('"cpu+"', ""), ("2", "")):
        with pytest.raises(EvalkitError) as e:
            parse_gate(f"speed_device = {bad}", "g.toml")
        assert f"g.toml: speed_device = {bad} is neither one of the choices nor a split placement" in str(e.value)
        assert '"pool", "cpu", "cuda", "mps"' in str(e.value) and 'joined by "+"' in str(e.value) and also in str(e.value)
    db = _study_on(tmp_path, "cuda:0", gate_lines='speed_device = "cpu+cuda"')  # the pool wholly on the GPU
    whole = add_bench(db, speedup=1.0, seed=5, device="cuda:0")
    _placed(db, whole, {"cuda:0": 120.0}, {"cuda:0": 10.0})
    split = add_bench(db, speedup=3.0, seed=6, device="cuda:0")
    _placed(db, split, {"cuda:0": 80.0, "cpu": 40.0}, {"cuda:0": 10.0})
    with_disk = add_bench(db, speedup=3.0, seed=7, device="cuda:0")
    _placed(db, with_disk, {"cuda:0": 80.0, "cpu": 20.0, "disk": 20.0}, {"cuda:0": 10.0})
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [split] and agg.speed.deploy_device == "cpu+cuda"
    for other, kinds in ((whole, "cuda"), (with_disk, "cpu+cuda+disk")):
        note = next(n for n in agg.speed.notes if f"benchmark {other} left out" in n)
        assert f"its device is {kinds}, and the study's speed claim is about cpu+cuda (named by the gate" in note
    assert "on cpu+cuda" in _condition(agg, "speed-up").reason


def test_one_aggregate_reads_a_pool_s_placement_once(tmp_path):
    """Speed audit, 2026-12-06: data.device_kinds read every generation of the study's pool on each call (about 0.1 s
    at 200,000 generations), and one aggregate called it for the pool five times (the deployment device, whether it
    is unknown, the speed figure's version and its benchmarks, the batch table). It is now read once per aggregate;
    a later aggregate reads the database afresh (the split-placement test above edits the pool's record between
    two)."""
    from evalkit.study.synthetic import add_bench

    db = _study_on(tmp_path, "cpu")
    add_bench(db, speedup=2.0, seed=5, device="cpu")
    read = []
    placement = "json_extract(effective_config, '$.devices')"  # device_kinds' reading of a pool
    db.conn.set_trace_callback(lambda sql: read.append(sql) if placement in sql else None)
    first = aggregate(db)
    assert len(read) == 1 and first.speed.deploy_device == "cpu"
    db.execute("UPDATE generations SET effective_config = json_set(effective_config, '$.devices', 'cpu+cuda') "
               "WHERE experiment_id = (SELECT id FROM experiments WHERE kind = 'pool')")
    db.conn.commit()
    again = aggregate(db)
    db.conn.set_trace_callback(None)
    assert len(read) == 2 and again.speed.deploy_device == "cpu+cuda" and again.speed.benchmark_ids == []


def test_bench_json_says_where_a_benchmark_s_weights_sat(tmp_path):
    """`evalkit bench --json` gave the main device of its runs (device_kinds) and each process's weights per device,
    but not the placement a study weighs it by, nor each process's rank (placements are per rank): a reader could not
    tell a split benchmark from an unsplit one without redoing the aggregate's reading. It now gives both, and the
    text summary says so where the weights were split."""
    from evalkit.generation.bench import format_summary
    from evalkit.generation.bench.summary import BenchSummary, summarize
    from evalkit.study.synthetic import add_bench

    db = _study_on(tmp_path, "cuda:0")
    split = add_bench(db, speedup=2.0, seed=5, device="cuda:0")
    _placed(db, split, {"cuda:0": 80.0, "cpu": 40.0}, {"cuda:0": 10.0})
    summary = summarize(db, split)
    out = summary.to_json()
    assert out["placements"] == ["cpu+cuda"] and out["device_kinds"] == ["cuda"]
    assert all(p["rank"] == 0 and p["target_placement"] == {"cuda:0": 80.0, "cpu": 40.0} for p in out["processes"])
    assert BenchSummary.from_json(out).placements == ["cpu+cuda"]
    assert "placement: cpu+cuda" in format_summary(summary)


def test_a_run_records_the_device_kinds_its_weights_really_sat_on(make_config, tiny_models, tmp_path):
    """The record the rule above reads, from real runs on this CPU: an unsplit pair says "cpu"; a target that
    accelerate's device_map split (here CPU and disk, as it would be a GPU and the CPU) says both kinds, where its
    device alone said "cpu"."""
    from evalkit.config import load_config
    from evalkit.generation.models import load_pair
    from evalkit.generation.paths import run_path
    from evalkit.task.prompts import load_prompts

    prompt = load_prompts(ids=["writing-01"])[0]
    whole = load_pair(load_config(make_config(draft="target_copy")), progress=False)
    assert [r.effective_config["devices"] for r in run_path(whole, prompt, "assisted", 1)] == ["cpu"]
    split = load_pair(load_config(make_config(draft="target_copy", **{
        "models.device_map": "auto", "models.max_memory": ["cpu=300KB"],
        "models.offload_folder": str(tmp_path / "offload")})), progress=False)
    records = run_path(split, prompt, "ordinary", 1)
    assert split.device == "cpu" and [r.effective_config["devices"] for r in records] == ["cpu+disk"]


def test_a_gate_naming_the_deployment_device_decides_on_that_device_s_benchmarks(tmp_path):
    """speed_device names the hardware a study deploys on where its pool was made elsewhere (a pool generated on a GPU
    for a CPU deployment): then only benchmarks on that kind decide, and one on the pool's kind is left out."""
    from evalkit.study.synthetic import add_bench

    db = _study_on(tmp_path, "cuda", gate_lines='speed_device = "cpu"')
    on_pool = add_bench(db, speedup=3.0, seed=5, device="cuda")
    on_cpu = add_bench(db, speedup=3.0, seed=6, device="cpu")
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [on_cpu] and agg.speed.deploy_device == "cpu"
    assert any(f"benchmark {on_pool} left out" in n and "its device is cuda" in n and "named by the gate" in n
               for n in agg.speed.notes)


def test_a_study_frozen_before_speed_device_lets_a_benchmark_on_any_device_decide(tmp_path, frozen_before):
    """gate.LEGACY: a study frozen by a version without speed_device let a benchmark on any device decide; read again
    today it keeps that meaning and says so, rather than waiting for rounds it never planned."""
    from evalkit.study.synthetic import add_bench

    db = _study_on(tmp_path, "cpu", frozen_before)
    gpu = add_bench(db, speedup=3.0, seed=5, device="cuda:0")
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [gpu] and agg.speed.deploy_device == ""
    assert _condition(agg, "speed-up").ok is True
    assert any("did not know `speed_device`" in n and "any device decides" in n for n in agg.notes)


def test_bench_says_before_its_rounds_that_a_study_on_another_device_will_not_weigh_them(make_config, data_dir,
                                                                                          monkeypatch):
    """A benchmark on another device than the study's claim is left out of the speed condition: `evalkit bench` says
    so before its rounds run (minutes, on a real pair), naming both devices and the setting to change. Stopped once
    its plan is handed over, so no worker runs."""
    from click.testing import CliRunner

    import evalkit.generation.handoff as handoff
    from evalkit.cli import cli
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    data_dir.mkdir(parents=True, exist_ok=True)
    gate = data_dir / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100))
    db = open_db(data_dir / "evalkit.db")
    build_study(db, SyntheticStudy(pairs=6, raters=3, gate_path=str(gate), bench=False, device="cuda"))
    db.conn.close()
    real = handoff.share_decision

    def handed_then_stopped(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(handoff, "share_decision", handed_then_stopped)
    cfg = make_config(**{"bench.prompts": ["writing-01"], "decoding.max_new_tokens": 8, "models.device": "cpu"})
    r = CliRunner().invoke(cli, ["bench", "--config", str(cfg), "--reps", "1"])
    assert r.exit_code == 130, r.output
    assert ("speed condition will not weigh this benchmark: its device is cpu, and the study's speed claim is about "
            'cuda') in r.stderr and 'models.device = "cuda"' in r.stderr


def _fall_back_in_two_reps_of_five(db) -> None:
    """Two repetitions in five of every benchmark's assisted runs fall back: a failed attempt of 0.8x the ordinary
    time, then the ordinary rerun (its decoding 0.01 s)."""
    db.execute("""UPDATE timing_runs SET path = 'fallback', decode_seconds = 0.01, seconds = 0.01 + 1.8 * (
                      SELECT o.seconds FROM timing_runs o WHERE o.experiment_id = timing_runs.experiment_id
                        AND o.path = 'ordinary' AND o.prompt_id = timing_runs.prompt_id AND o.round = timing_runs.round
                        AND o.rep = timing_runs.rep)
                  WHERE path = 'assisted' AND rep IN (0, 1)""")
    db.conn.commit()


def test_the_card_and_the_speed_line_say_what_the_speed_up_leaves_out(tmp_path):
    """Speed audit, 2026-12-06: the card printed the speed-up "over N comparable pairs", with no word of the matched
    pairs whose outputs were not comparable nor of the assisted runs that fell back (both left out, so the figure can
    rest on a few pairs and overstate what the configuration delivers), and the SPEED line alike. Both now say how
    many of each were left out and give the speed-up as deployed beside it; nothing is added where none was."""
    from evalkit.publish.provenance import build_provenance

    def card(agg):
        return next(f for f in build_provenance(db, agg).figures if f.name == "speed-up").value

    db, _bench = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, extra_memory_mb=100.0)
    clean = aggregate(db)
    assert clean.speed.comparable_pairs == clean.speed.matched_pairs and not clean.speed.fallback_runs
    assert "left out" not in card(clean) and "left out" not in format_text(clean).split("SPEED:")[1].splitlines()[0]
    _fall_back_in_two_reps_of_five(db)
    db.execute("UPDATE timing_runs SET new_tokens = new_tokens * 3, stop_reason = 'max_new_tokens' "
               "WHERE path = 'assisted' AND rep = 2")  # assisted ran on: no longer comparable
    db.conn.commit()
    agg = aggregate(db)
    s = agg.speed
    apart, fell = s.matched_pairs - s.comparable_pairs, s.fallback_runs
    assert apart > 0 and fell > 1 and s.deployed_speedup is not None
    said = (f"{apart} of {s.matched_pairs} matched pairs not comparable (another stop reason, or lengths beyond the "
            f"tolerance) and {fell} assisted runs that fell back left out; as deployed, each fallback counted at its "
            "whole wait: ")
    assert said in card(agg) and said in format_text(agg).split("SPEED:")[1].splitlines()[0]


def test_a_benchmark_whose_assisted_runs_all_fell_back_is_named_so_not_as_a_missing_run(tmp_path):
    """Speed audit, 2026-12-06: where every assisted run of a benchmark fell back, `evalkit bench` noted that "the
    assisted path did not run in this experiment", the verdict's speed condition said only that no interval was
    measured, and its Chinese half told the organiser to run `evalkit bench`, which they had. Each now says that every
    assisted run failed and fell back (never counted as assisted) and to fix the cause."""
    from evalkit.generation.bench.summary import summarize
    from evalkit.ui.verdictzh import _speed

    db, bench = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, extra_memory_mb=100.0)
    db.execute("UPDATE timing_runs SET path = 'fallback' WHERE path = 'assisted'")
    db.conn.commit()
    n = db.execute("SELECT COUNT(*) FROM timing_runs WHERE path = 'fallback'").fetchone()[0]
    notes = summarize(db, bench).notes
    assert any(f"every assisted run ({n}) failed and fell back to the target alone" in x for x in notes), notes
    assert not any("did not run in this experiment" in x for x in notes)
    agg = aggregate(db)
    reason = _condition(agg, "speed-up").reason
    assert f"every assisted run ({n}) failed and fell back" in reason and "fix the cause" in reason
    zh = _speed(agg, {"min_speedup_ci_low": 1.1})
    assert f"所有 {n} 次 assisted 运行都失败并回退" in zh and "请修复原因" in zh


def test_the_speed_plot_names_the_prompts_it_has_no_point_for(tmp_path):
    """Speed audit, 2026-12-06: the report's and the Results tab's speed-up plot dropped a prompt with no comparable
    pair without a word, so it read as if every prompt had been measured; and where no prompt had one, it said "no
    data yet" over a benchmark's timed runs. It now names the prompts it has no point for, per path."""
    from evalkit.generation import registry
    from evalkit.ui.results import shown_figures

    db, _bench = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, extra_memory_mb=100.0)
    prompts = [r[0] for r in db.execute("SELECT DISTINCT prompt_id FROM timing_runs ORDER BY prompt_id")]

    def plot():
        ax = shown_figures(aggregate(db), db)["speedup"].axes[0]
        return " ".join([ax.get_title(), *(t.get_text() for t in ax.texts)]).replace("\n", " ")

    assert "no point" not in plot() and "no data yet" not in plot()
    db.execute("UPDATE timing_runs SET new_tokens = new_tokens * 3, stop_reason = 'max_new_tokens' "
               "WHERE path = 'assisted' AND prompt_id = ?", [prompts[0]])  # assisted ran on: never comparable
    db.conn.commit()
    said = f"no point (no comparable pair, or a time of 0) for {registry.label('assisted')}: "
    assert said + prompts[0] in plot()
    db.execute("UPDATE timing_runs SET new_tokens = new_tokens * 3, stop_reason = 'max_new_tokens' "
               "WHERE path = 'assisted' AND prompt_id != ?", [prompts[0]])
    db.conn.commit()
    assert said + ", ".join(prompts) in plot() and "no data yet" not in plot()


def test_evalkit_bench_gives_the_speed_up_as_deployed_where_assisted_runs_fell_back(tmp_path):
    """Sceptic audit, 2026-12-06: the speed condition weighs the speed-up as deployed where assisted runs fell back,
    but `evalkit bench` printed only the speed-up over assisted's own runs (about 2x here) and a note that the
    fallbacks were left out: the figure an organiser reads first overstated what the configuration delivers, with no
    number beside it. The summary now gives the speed-up as deployed, the aggregate's own figure (one computation,
    generation.speed.deployed_speedup), with its interval, in the printed summary and `--json`."""
    from evalkit.generation.bench.summary import BenchSummary, format_summary, summarize

    db, bench = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, extra_memory_mb=100.0)
    assert summarize(db, bench).deployed_speedup is None  # nothing fell back: no second figure
    _fall_back_in_two_reps_of_five(db)
    s, agg = summarize(db, bench), aggregate(db)
    assert s.speedup > 1.8 and s.fallback_runs > 0
    assert s.deployed_speedup == pytest.approx(agg.speed.deployed_speedup) and s.deployed_speedup < 1.1
    assert s.deployed_ci95 == pytest.approx(agg.speed.deployed_ci95)
    text = format_summary(s)
    assert (f"speed-up as deployed (its {s.fallback_runs} fallback(s) counted at their whole wait on the assisted "
            f"side): {s.deployed_speedup:.2f}x  95% CI {s.deployed_ci95[0]:.2f} - {s.deployed_ci95[1]:.2f}") in text
    assert "overstates what the configuration delivers" in text
    again = BenchSummary.from_json(json.loads(json.dumps(s.to_json())))  # `bench --json` read back
    assert again.deployed_ci95 == s.deployed_ci95


def test_fallbacks_count_at_their_whole_wait_in_the_speed_condition(tmp_path):
    """Speed audit, 2026-12-06: assisted runs that fell back were left out of the speed-up, so a draft that fails on
    two runs in five, each failure costing a wasted attempt and then an ordinary run, still passed at 2x. The speed
    condition now also needs the speed-up as deployed: per prompt, median ordinary seconds over the expected wait, the
    assisted and fallback medians mixed by how often each happened (a ratio of medians alone would hide any share of
    fallbacks under one half). Checked against a direct computation; the pool, whose fallbacks are never paired, says
    that its figure leaves them out and so overstates."""
    from evalkit.aggregate.verdict import speed_condition

    db, bench = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, extra_memory_mb=100.0)
    assert _condition(aggregate(db), "speed-up").ok is True
    _fall_back_in_two_reps_of_five(db)
    agg = aggregate(db)
    cond = _condition(agg, "speed-up")
    assert agg.speed.speedup > 1.8 and agg.speed.fallback_runs > 0  # the assisted runs alone: still about 2x
    assert cond.ok is False and "fell back and are left out" in cond.reason and "as deployed" in cond.reason
    runs = list(db.query("SELECT round, rep, prompt_id, path, seconds, decode_seconds FROM timing_runs"))

    def direct(rs):
        ratios = []
        for p in sorted({r["prompt_id"] for r in rs}):
            o = [r["seconds"] for r in rs if r["prompt_id"] == p and r["path"] == "ordinary"]
            a = [r["seconds"] for r in rs if r["prompt_id"] == p and r["path"] == "assisted"]
            fb = [r["seconds"] - r["decode_seconds"] for r in rs if r["prompt_id"] == p and r["path"] == "fallback"]
            f = len(fb) / (len(a) + len(fb))
            ratios.append(np.median(o) / ((1 - f) * np.median(a) + f * np.median(fb)))
        return float(np.median(ratios))

    assert agg.speed.deployed_speedup == pytest.approx(direct(runs))
    assert agg.speed.deployed_speedup < 1.1 <= agg.speed.speedup_ci95[0]
    from evalkit.ui.verdictzh import _speed

    assert "计入回退的全部等待时间（实际部署）" in _speed(agg, {"min_speedup_ci_low": 1.1})
    # the pool's figure cannot be formed as deployed: the condition says its figure leaves the fallbacks out
    from evalkit.aggregate.timing import Speed

    # (deciding, as under a gate frozen before speed_source)
    pool = Speed(**{**agg.speed.to_json(), "source": "pair pool", "deployed_speedup": None, "deployed_ci95": None,
                    "bench_only": False})
    said = speed_condition(pool, 1.1)
    assert f"{agg.speed.fallback_runs} assisted run(s) fell back" in said.reason and "overstate" in said.reason


def test_rerunning_until_the_speed_condition_passes_keeps_its_level(tmp_path):
    """Speed audit, 2026-12-06: with every benchmark pooled, an organiser could still look after each `evalkit bench`
    and stop at the first pass, and repeated looks raise the false-pass rate (with every round pooled, the same
    simulation with up to 8 reruns passed 5.3% of 400 studies, above the level; with the first 4 rounds deciding,
    2.3%). The gate now fixes the deciding rounds in advance
    (speed_rounds): the first that many, in storage order; later rounds never enter. The rerun-until-pass policy on
    simulated studies, each a copy of a real database with the study's pool: store a 2-round benchmark of the pair
    (drawn timings, a true speed-up of 1.099 against a bar of 1.1, 5% drift between processes), look at the speed
    condition through the aggregate's timing and the verdict's condition, stop at the first pass, else rerun (up to
    4 benchmarks). Its false-pass rate stays within the one-sided level, 2.5%, plus three binomial standard errors;
    and once judged, the figure never moves, however many reruns follow."""
    import shutil
    from math import sqrt

    from evalkit.aggregate.timing import timing
    from evalkit.aggregate.verdict import speed_condition
    from evalkit.study.synthetic import SyntheticStudy, add_bench, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, speed_rounds=4))
    template = tmp_path / "template.db"
    db = open_db(template)
    build_study(db, SyntheticStudy(pairs=1, raters_per_pair=1, raters=2, seed=1, gate_path=str(gate), bench=False))
    study_id = db.execute("SELECT study_id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    db.conn.close()
    rng = np.random.default_rng(11)
    studies, watched, level = 250, 25, 0.025
    passed = 0
    for study in range(studies):
        shutil.copyfile(template, tmp_path / "sim.db")
        db = open_db(tmp_path / "sim.db")
        # every study looks once its 4 rounds are in (its first look, at 2 rounds, is not judged, and a pass at a look
        # after the 4 rounds would need the figure to move); the first `watched` studies look after every benchmark
        # and rerun twice more, to show both
        judged = None
        for rerun in range(4 if study < watched else 2):
            add_bench(db, speedup=1.099, seed=int(rng.integers(1 << 30)), reps=2, rounds=2, drift=0.05,
                      prompts=("writing-01",))
            if rerun == 0 and study >= watched:
                continue
            speed = timing(db, 0.1, 50, study_id=study_id, speed_rounds=4)[2]
            cond = speed_condition(speed, 1.1)
            if rerun == 0:  # 2 of the 4 planned rounds: not judged, and says what to run
                assert cond.ok is None and "run `evalkit bench --rounds 2` for the 2 still needed, before the planned sample" in cond.reason
                continue
            judged = judged or (cond.ok, speed.speedup, speed.speedup_ci95)
            assert (cond.ok, speed.speedup, speed.speedup_ci95) == judged  # later rounds never enter
            assert speed.rounds == 4 and speed.rounds_further == 2 * (rerun - 1)
            if cond.ok is True:
                passed += 1
                break
        db.conn.close()
    slack = 3 * sqrt(level * (1 - level) / studies)  # three binomial standard errors: a bound of 5.5%
    assert passed / studies <= level + slack, (passed, studies)


def test_a_benchmark_that_timed_other_prompts_is_left_out_not_pooled(tmp_path):
    """Speed audit, 2026-12-06: benchmarks of the study's pair pooled whenever each timed the prompts the study rates,
    so one that also timed an extra prompt pooled its rounds into a median over prompts that the others' rounds never
    had (the figure then moved with which benchmark happened to time what). Pooled benchmarks now time the first
    one's prompt set (their settings already match the study's pool); one that differs is left out with a note
    naming the prompts, as a benchmark of another setting is."""
    from evalkit.study.synthetic import PROMPTS, add_bench

    db, first = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, speed_rounds=4)
    wider = add_bench(db, speedup=2.0, seed=5, prompts=PROMPTS + ("extra-01",))
    same = add_bench(db, speedup=2.0, seed=6)
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [first, same] and agg.speed.rounds == 4
    note = next(n for n in agg.speed.notes if f"benchmark {wider} left out" in n)
    assert f"other prompts than benchmark {first}" in note and "(also extra-01)" in note and "--prompt" in note
    assert "extra-01" not in set(agg.tables["speedup"]["prompt_id"])
    assert any(f"benchmark {wider} left out" in n for n in agg.notes)  # said where aggregate prints its notes


def test_the_tokens_per_second_ratio_says_it_leaves_the_fallbacks_out(tmp_path):
    """Speed audit, 2026-12-06: where assisted runs fell back, the speed condition weighs the speed-up as deployed,
    but the tokens-per-second ratio beside it pairs assisted runs only, and the SPEED line, the card's figure and the
    verdict's condition called it the ratio 'over all matched pairs (no selection ...)', which read as counting every
    request. Each now says it excludes the assisted runs that fell back, in both languages; nothing is added where
    none did."""
    from evalkit.publish.provenance import build_provenance
    from evalkit.ui.results import verdict_markdown

    db, bench = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, extra_memory_mb=100.0)
    clean = aggregate(db)
    assert "fell back" not in format_text(clean) and "回退" not in verdict_markdown(clean, "zh")
    db.execute("""UPDATE timing_runs SET path = 'fallback', decode_seconds = 0.01, seconds = 0.01 + 1.8 * (
                      SELECT o.seconds FROM timing_runs o WHERE o.experiment_id = timing_runs.experiment_id
                        AND o.path = 'ordinary' AND o.prompt_id = timing_runs.prompt_id AND o.round = timing_runs.round
                        AND o.rep = timing_runs.rep)
                  WHERE path = 'assisted' AND rep = 0""")
    db.conn.commit()
    agg = aggregate(db)
    n = agg.speed.fallback_runs
    said = f"excluding the {n} assisted runs that fell back"
    assert n > 1 and agg.speed.throughput_ratio is not None
    assert f"tokens/s ratio over every matched pair, {said}" in _condition(agg, "speed-up").reason  # verdict, report
    assert f"(no selection on length or stop reason, {said})" in format_text(agg)  # the SPEED line
    card = next(f for f in build_provenance(db, agg).figures if f.name == "tokens per second, assisted over ordinary")
    assert said in card.value
    assert f"全部匹配输出（不含回退的 {n} 次 assisted 运行）的每秒 token 数之比" in verdict_markdown(agg, "zh")
    assert said in verdict_markdown(agg)  # the Results tab's English verdict


def test_a_study_frozen_before_speed_rounds_keeps_pooling_every_round(tmp_path, monkeypatch, frozen_before):
    """gate.LEGACY: a study whose gate was frozen by a version without speed_rounds decided on every benchmark round
    stored by the decision, pooled; reading it again today keeps that rule (and says so) rather than judging it on
    rounds it never planned."""
    from evalkit.study.synthetic import SyntheticStudy, add_bench, build_study, gate_file_text

    frozen_before("speed_rounds", "speed_source")  # what an earlier version stored: neither key in text or values
    gate = tmp_path / "gate.toml"
    gate.write_text("\n".join(line for line in gate_file_text(planned_pairs=100, margin=0.15).splitlines()
                               if not line.startswith("speed_rounds")))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate)))
    monkeypatch.undo()
    first = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    second = add_bench(db, speedup=2.0, seed=5)
    third = add_bench(db, speedup=2.0, seed=6)
    agg = aggregate(db)
    assert agg.speed.benchmark_ids == [first, second, third] and agg.speed.rounds == 6
    assert agg.speed.rounds_planned == 0 and agg.speed.rounds_further == 0
    assert any("did not know `speed_rounds`" in n and "every benchmark round stored by the decision pooled" in n
               for n in agg.notes)
    assert any("did not know `speed_source`" in n and "the pair pool's single runs decide the speed condition until "
               "a benchmark" in n for n in agg.notes)


def _look(db, study_id):
    """One look at the speed condition as the aggregate takes it: the study's frozen gate (gate.LEGACY included), the
    timing figure it implies, and the verdict's condition; and the figure."""
    from evalkit.aggregate.timing import gate_speed, timing
    from evalkit.aggregate.verdict import frozen_gate, speed_condition
    from evalkit.study.studies import choose

    values = frozen_gate(db, choose(db))[0]["values"]
    speed = timing(db, 0.1, 50, study_id=study_id, **gate_speed(values))[2]
    return speed_condition(speed, values["min_speedup_ci_low"]), speed


def test_looking_at_the_pool_s_figure_then_benchmarking_after_a_fail_keeps_the_speed_condition_s_level(
        tmp_path, frozen_before):
    """Speed audit, 2026-12-06: with no benchmark stored, the pair pool's single runs decided the speed condition, and a
    benchmark's rounds replaced them once one was stored. An organiser who saw the pool's figure fail at an interim
    look could run `evalkit bench` and look again: two looks, the better kept. A gate now fixes the source in advance
    (speed_source = "benchmark"): only the benchmark's first speed_rounds rounds decide; the pool's figure is shown,
    reported, not deciding, and the condition waits. The policy, on simulated studies each a copy of a real database
    with the study's pool (its timings drawn afresh, a true speed-up of 1.099 against a bar of 1.1): look at the
    speed condition through the aggregate's frozen gate, timing and condition; stop on a pass; after a fail, store a
    4-round benchmark (5% drift between processes) and look again. Under a gate of today its false-pass rate stays
    within the one-sided level, 2.5%, plus three binomial standard errors; under a gate frozen before the key
    (gate.LEGACY: the pool until a benchmark) the same studies pass the condition more often, above the level. The
    first `watched` studies run under both gates; the others under the old one, whose look after the benchmark is the
    one a gate of today takes (the benchmark replaces the pool; checked on the watched ones). (A KEEP also needs the
    memory figure, which only a benchmark gives, and that benchmark's rounds then replaced the pool's: the old rule's
    extra passes were of the condition at an interim look, and its fails a DROP there on runs that are not the
    protocol.)"""
    import shutil
    from math import sqrt

    from evalkit.study.synthetic import PROMPTS, SyntheticStudy, add_bench, build_study, gate_file_text
    from evalkit.ui.verdictzh import _speed

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, speed_rounds=4))
    templates = {}
    for rule in ("today", "legacy"):
        if rule == "legacy":
            frozen_before("speed_source")
        templates[rule] = tmp_path / f"{rule}.db"
        db = open_db(templates[rule])
        build_study(db, SyntheticStudy(pairs=4 * len(PROMPTS), raters_per_pair=1, raters=2, seed=1,
                                       gate_path=str(gate), bench=False))
        study_id = db.execute("SELECT study_id FROM experiments WHERE kind = 'pool'").fetchone()[0]
        pool = db.execute("SELECT ordinary_generation_id, assisted_generation_id FROM pairs").fetchall()
        db.conn.close()
    rng = np.random.default_rng(5)
    studies, watched, level, true = 300, 15, 0.025, 1.099
    passed = {"today": 0, "legacy": 0}
    pool_passes = 0
    for study in range(studies):
        o = rng.lognormal(np.log(2.0), 0.1, len(pool))  # both paths one after the other in one process
        a = o / true * rng.lognormal(0, 0.05, len(pool))
        bench_seed = int(rng.integers(1 << 30))
        after_bench = {}
        for rule in ("legacy", "today") if study < watched else ("legacy",):
            shutil.copyfile(templates[rule], tmp_path / "sim.db")
            db = open_db(tmp_path / "sim.db")
            timed = [(float(s), g) for (og, ag), so, sa in zip(pool, o, a) for g, s in ((og, so), (ag, sa))]
            db.conn.executemany("UPDATE generations SET generate_seconds = ? WHERE id = ?", timed)
            db.conn.commit()
            cond, speed = _look(db, study_id)
            assert speed.source.startswith("pair pool") and speed.extra_memory_mb is None  # no KEEP on this look
            if rule == "today":  # shown, never deciding, and the condition says what it waits for
                assert cond.ok is None and "run `evalkit bench --rounds 4` on cpu" in cond.reason
                assert "for the 4 still needed" in cond.reason
                assert "reported, not deciding" in cond.reason
                assert "不参与判定" in _speed(type("Agg", (), {"speed": speed})(), {"min_speedup_ci_low": 1.1})
            add_bench(db, speedup=true, seed=bench_seed, reps=1, rounds=4, drift=0.05)
            after, speed = _look(db, study_id)
            assert speed.source == "benchmark" and speed.rounds == 4
            after_bench[rule] = (after.ok, speed.speedup, speed.speedup_ci95)
            passed[rule] += cond.ok is True or after.ok is True  # the old rule: the pool's pass, else the benchmark's
            pool_passes += cond.ok is True
            db.conn.close()
        if study < watched:
            assert after_bench["today"] == after_bench["legacy"]
        else:
            passed["today"] += after_bench["legacy"][0] is True
    slack = 3 * sqrt(level * (1 - level) / studies)  # three binomial standard errors: a bound of 5.2%
    assert passed["today"] / studies <= level + slack, passed
    assert passed["legacy"] / studies > level and pool_passes > 0, (passed, pool_passes)


def test_the_pool_s_figure_says_it_is_not_deciding_wherever_it_is_shown(tmp_path, frozen_before):
    """Where a gate decides on benchmark rounds only (speed_source), the pool's figure is still shown until they exist:
    the verdict's condition (report, Results tab, both languages), the notes, the report's source line, the card's
    figure and its protocol each say it is reported, not deciding. A gate frozen before the key keeps the pool
    deciding, and none of them says so."""
    from evalkit.publish.export import protocol_markdown
    from evalkit.publish.provenance import build_provenance
    from evalkit.publish.report import build_report
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
    from evalkit.ui.results import shown_figures, verdict_markdown

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15, speed_rounds=4))
    said = {}
    for rule in ("today", "legacy"):
        if rule == "legacy":
            frozen_before("speed_source")
        db = open_db(tmp_path / f"{rule}.db")
        build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate),
                                       bench=False, speedup=0.9))
        agg = aggregate(db)
        card = next(f for f in build_provenance(db, agg).figures if f.name == "speed-up").value
        page = build_report(db, tmp_path / rule, agg).read_text(encoding="utf-8")
        plot = shown_figures(agg, db)["speedup"].axes[0].get_title().replace("\n", " ")  # the report's and the tab's
        shown = [format_text(agg), card, page, plot, protocol_markdown(agg.speed), verdict_markdown(agg),
                 verdict_markdown(agg, "zh")]
        said[rule] = (agg, card, page + plot, "\n".join(shown))
    agg, card, page, _text = said["today"]
    cond = _condition(agg, "speed-up")
    assert cond.ok is None and agg.verdict.decision == "INSUFFICIENT DATA"  # slower, and no DROP on it
    from evalkit.stats.speedup import ratio_text

    measured = ratio_text(agg.speed.speedup)
    assert agg.speed.speedup < 1 and agg.speed.source.startswith("pair pool")
    assert "0 of the 4 benchmark rounds" in cond.reason
    assert f"the pair pool's single runs measure {measured}" in cond.reason
    assert "reported, not deciding" in cond.reason and cond.reason in verdict_markdown(agg)
    zh = verdict_markdown(agg, "zh")
    assert f"配对池单次运行测得 {measured}×" in zh and "不参与判定" in zh
    assert "pair pool (single runs, not the benchmark protocol), reported, not deciding" in card
    assert "Speed-up source: pair pool (single runs, not the benchmark protocol), reported, not deciding" in page
    assert "runs: pair pool (single runs, not the benchmark protocol), reported, not deciding" in page  # the plot
    assert "It is reported, not deciding" in protocol_markdown(agg.speed)
    assert any("reported, not deciding" in n and "speed_source" in n for n in agg.notes)
    agg, _card, _page, text = said["legacy"]
    assert _condition(agg, "speed-up").ok is False and agg.verdict.decision == "DROP"  # the pool decided then
    assert "not deciding" not in text and "不参与判定" not in text


def test_the_card_and_the_chinese_verdict_say_which_benchmark_s_memory_and_which_runs_decided(tmp_path, frozen_before):
    """Speed audit, 2026-12-06: the English memory condition says its figure is the largest of several benchmarks'
    and names the benchmark, but the card printed the figure alone and cited the benchmarks whose rounds decide the
    speed-up (a later benchmark's larger figure was cited to the first); and the Chinese verdict named neither that
    benchmark nor, where they decide (a gate frozen before speed_source), the pool's single runs. Each now says
    which evidence decided."""
    from evalkit.publish.provenance import build_provenance
    from evalkit.study.synthetic import SyntheticStudy, add_bench, build_study, gate_file_text
    from evalkit.ui.results import verdict_markdown

    db, first = _study_with_a_slow_benchmark(tmp_path, speedup=2.0, extra_memory_mb=100.0)
    larger = add_bench(db, speedup=2.0, extra_memory_mb=300.0, seed=5)  # after the 2 deciding rounds
    agg = aggregate(db)
    which = f"the largest of 2 benchmarks' figures, benchmark {larger}'s"
    assert agg.speed.benchmark_ids == [first] and which in _condition(agg, "memory").reason
    prov = build_provenance(db, agg)
    card = next(f for f in prov.figures if f.name == "extra memory of the draft")
    assert card.value == f"300 MB ({which})" and card.experiments == [first, larger]
    assert prov.for_condition("memory") == [first, larger] and prov.for_condition("speed-up") == [first]
    zh = verdict_markdown(agg, "zh").split("#### 详细说明（英文原文）")[0]
    assert "草稿模型额外占用 300 MB" in zh and f"取 2 次基准测试中最大的数字，即基准测试 {larger} 的" in zh
    frozen_before("speed_source")  # the pool's single runs decide until a benchmark is stored
    gate = tmp_path / "old.toml"
    gate.write_text(gate_file_text(planned_pairs=100, margin=0.15))
    db = open_db(tmp_path / "old.db")
    build_study(db, SyntheticStudy(pairs=20, raters_per_pair=3, raters=12, seed=1, gate_path=str(gate), bench=False))
    agg = aggregate(db)
    assert "pair pool (single runs, not the benchmark protocol)" in _condition(agg, "speed-up").reason
    zh = verdict_markdown(agg, "zh").split("#### 详细说明（英文原文）")[0]
    # a synthetic pool records no untimed warm-up of both paths (study.pairs.WARMED_UP), and says so
    assert "（配对池的单次运行，不是基准测试协议；配对池 " in zh and "没有记录不计时的预热" in zh and "不参与判定" not in zh


@pytest.mark.parametrize("spread", ["some", "none"])
def test_the_chinese_speed_line_says_what_the_english_says_of_the_comparable_pairs_and_the_interval(spread):
    """Verdict audit, 2026-12-07, reading the Chinese beside the English: the English speed condition says how many of
    the matched pairs were comparable ("40 of 50 matched pairs comparable"), that an interval of zero width carries no
    spread, and, where the estimates reach the minimum and the interval does not, that its unit is the benchmark's
    round and the gate's speed_rounds fixed how many decide (re-running `evalkit bench` changes nothing); the Chinese
    said only "基于 40 对可比输出", and none of the rest. It now says each, with the same figures."""
    from types import SimpleNamespace

    from evalkit.aggregate.timing import Speed
    from evalkit.aggregate.verdict import speed_condition
    from evalkit.ui.verdictzh import _speed

    ci = [1.05, 1.6] if spread == "some" else [1.3, 1.3]
    speed = Speed(source="benchmark", experiment_id=3, speedup=1.3, speedup_ci95=ci, comparable_pairs=40,
                  matched_pairs=50, identical_outputs=None, extra_memory_mb=100.0, fallback_runs=0,
                  throughput_ratio=1.25, throughput_ci95=[1.02, 1.5] if spread == "some" else [1.15, 1.4],
                  benchmark_ids=[3], rounds=4, rounds_planned=4)
    english = speed_condition(speed, 1.1).reason
    chinese = _speed(SimpleNamespace(speed=speed), {"min_speedup_ci_low": 1.1})
    assert "40 of 50 matched pairs comparable" in english and "基于 50 对匹配输出中的 40 对可比输出" in chinese, chinese
    assert ("the interval has zero width" in english) == ("区间宽度为零：计时没有任何波动" in chinese) == (spread == "none")
    reach = "the estimates reach the minimum but the interval does not" in english  # with some spread only
    assert reach == (spread == "some") == ("rounds measured after them never enter" in english)
    assert reach == ("估计值达到门槛，但区间没有：区间的单位是基准测试的轮次" in chinese) == ("之后测的轮次不参与" in chinese), chinese


def test_the_chinese_memory_line_says_a_benchmark_stored_no_memory_reading_as_the_english_does():
    """Verdict audit, 2026-12-07: where a benchmark of the study's pair stored no timed run with a memory reading on
    both paths, the English memory condition said so ("not measured: benchmark 3 holds no timed run with a memory
    reading on both paths") and the Chinese said the memory was not measured and to run `evalkit bench`, as if
    none had run. It now names the benchmark and what it lacks."""
    from types import SimpleNamespace

    from evalkit.aggregate.timing import Speed
    from evalkit.aggregate.verdict import decide
    from evalkit.ui.verdictzh import _memory

    speed = Speed(source="benchmark", experiment_id=3, speedup=1.3, speedup_ci95=[1.2, 1.4], comparable_pairs=50,
                  matched_pairs=50, identical_outputs=None, extra_memory_mb=None, fallback_runs=0,
                  benchmark_ids=[3], rounds=2,
                  memory_note="not measured: benchmark 3 holds no timed run with a memory reading on both paths")
    gate = {"planned_pairs": 10, "min_ratings_per_pair": 1, "margin": 0.05, "confidence": 0.95,
            "min_speedup_ci_low": 1.1, "max_extra_memory_mb": 1024.0}
    english = next(c.reason for c in decide(gate, [], speed, 0, 10).conditions if c.name == "memory")
    assert "benchmark 3 holds no timed run with a memory reading on both paths" in english
    chinese = _memory(SimpleNamespace(speed=speed), gate)
    assert "基准测试 3 没有两条路径都带内存读数的计时运行" in chinese, chinese
