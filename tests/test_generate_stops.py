"""A pool run that is resumed with another config, fails while loading its models, or is stopped with Ctrl-C
(audit of the bring-your-own-pair path, 2026-12-04: F1, F3, F5)."""

import sqlite3

import pytest

from evalkit.config import load_config
from evalkit.errors import EvalkitError
from evalkit.study.synthetic import gate_file_text


def _rows(db, sql, args=()):
    con = sqlite3.connect(str(db))
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _stop_after(monkeypatch, n: int, exc: type[BaseException]):
    """_run_item raises `exc` once n work items are stored (Ctrl-C arrives as KeyboardInterrupt)."""
    import evalkit.study.pairs as pairs_mod

    real, done = pairs_mod._run_item, []

    def run(*args, **kwargs):
        if len(done) == n:
            raise exc()
        done.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pairs_mod, "_run_item", run)
    return lambda: monkeypatch.setattr(pairs_mod, "_run_item", real)


def _stopped_pool(make_config, tmp_path, monkeypatch, prompts: list[str]):
    """A sampling pool over `prompts` stopped by Ctrl-C after its first work item: (its config's path, the database,
    the experiment id, the generations stored)."""
    from evalkit.study.pairs import build_pool

    path = make_config(**{"decoding.mode": "sample", "pool.prompts": prompts})
    db = tmp_path / "pool.db"
    restore = _stop_after(monkeypatch, 1, KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        build_pool(load_config(path), db, progress=False, echo=lambda *_: None)
    restore()
    (exp_id,) = _rows(db, "SELECT id FROM experiments WHERE kind = 'pool'")[0]
    return path, db, exp_id, _rows(db, "SELECT COUNT(*) FROM generations")


def test_a_resume_with_a_changed_config_is_refused_and_adds_nothing(make_config, tmp_path, monkeypatch):
    """The resume skipped every check: one experiment then held samples of two settings, and config_hash described
    only some of its pairs. Now a config that differs from the experiment's own, in any setting that shapes a sample
    or says which samples it holds, is refused before anything is generated; the same config resumes."""
    from evalkit.study.pairs import build_pool

    prompts = ["writing-01", "writing-02"]
    path, db, exp_id, before = _stopped_pool(make_config, tmp_path, monkeypatch, prompts)

    changed = {"assistant.num_assistant_tokens": 3, "models.dtype": "bfloat16", "pool.prompts": ["writing-01"],
               "decoding.temperature": 0.9}
    for key, value in changed.items():
        cfg = load_config(make_config(**{"decoding.mode": "sample", "pool.prompts": prompts, key: value}))
        with pytest.raises(EvalkitError) as e:
            build_pool(cfg, db, resume=exp_id, progress=False, echo=lambda *_: None)
        assert f"--resume {exp_id}" in e.value.what and key in e.value.what, e.value.what
        assert f"experiment {exp_id} has" in e.value.what and "config_json" in e.value.fix
        assert _rows(db, "SELECT COUNT(*) FROM generations") == before  # nothing generated

    done = build_pool(load_config(path), db, resume=exp_id, progress=False, echo=lambda *_: None)
    assert done.experiment_id == exp_id and done.skipped_done == 1 and done.pairs == len(prompts) * 2


def test_a_resume_after_a_prompt_file_was_edited_is_refused(make_config, tmp_path, monkeypatch):
    """Sceptic audit, 2026-12-06: a resume compared the config, not the prompt files, so a file edited between the
    stop and the resume gave one experiment samples of two requests under one prompt id. Now it is refused, naming
    the prompt, before anything is generated."""
    import shutil

    from evalkit.study.pairs import build_pool

    folder = tmp_path / "prompts"
    shutil.copytree("prompts", folder)
    monkeypatch.setenv("EVALKIT_PROMPTS", str(folder))
    path, db, exp_id, before = _stopped_pool(make_config, tmp_path, monkeypatch, ["writing-01", "writing-02"])
    anchor = folder / "writing-01.toml"
    text = anchor.read_text()
    anchor.write_text(text.replace("max_new_tokens = 200", "max_new_tokens = 20"))
    with pytest.raises(EvalkitError) as e:
        build_pool(load_config(path), db, resume=exp_id, progress=False, echo=lambda *_: None)
    assert "prompt writing-01 is another request" in e.value.what and f"experiment {exp_id}'s samples" in e.value.what
    assert "prompt files" in e.value.fix and _rows(db, "SELECT COUNT(*) FROM generations") == before
    anchor.write_text(text)
    assert build_pool(load_config(path), db, resume=exp_id, progress=False, echo=lambda *_: None).skipped_done == 1


def test_a_generate_that_fails_before_storing_a_sample_freezes_no_gate(make_config, tmp_path, monkeypatch):
    """A generate whose models would not load (here: memory running out at load) left an empty experiment and the
    study frozen with its gate, so the gate the user then wrote from `evalkit plan` was refused for a study with no
    pairs. Now nothing of a failed start stays, and the next generate freezes the gate it is given."""
    import evalkit.generation.models as models
    from evalkit.study.pairs import build_pool

    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text(gate_file_text(planned_pairs=1725, margin=0.05))
    second.write_text(gate_file_text(planned_pairs=255, margin=0.05))
    db = tmp_path / "pool.db"
    real = models.load_pair

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(models, "load_pair", out_of_memory)
    said = []
    with pytest.raises(RuntimeError, match="out of memory"):
        build_pool(load_config(make_config(gate_file=str(first))), db, progress=False, echo=said.append)
    assert _rows(db, "SELECT COUNT(*) FROM experiments") == [(0,)]
    assert _rows(db, "SELECT COUNT(*) FROM studies") == [(0,)]
    assert any("before any sample was stored" in s and "no gate is frozen" in s for s in said), said

    monkeypatch.setattr(models, "load_pair", real)
    res = build_pool(load_config(make_config(gate_file=str(second))), db, progress=False, echo=lambda *_: None)
    assert res.pairs > 0 and res.planned_pairs == 255
    assert _rows(db, "SELECT id FROM experiments WHERE kind = 'pool'") == [(res.experiment_id,)]


def test_ctrl_c_says_how_to_finish_and_a_later_generate_points_at_the_unfinished_pool(make_config, tmp_path,
                                                                                        monkeypatch):
    """Ctrl-C printed only click's 'Aborted!': no experiment id, no --resume, and the stored work stayed in a shard
    file that a later plain generate left behind without a word. Now the stop names the experiment, what it kept and
    the command that finishes it; the shard is merged; and a later generate points at the unfinished pool until it
    is finished."""
    from evalkit.study.pairs import build_pool

    path = make_config(**{"pool.prompts": ["writing-01", "writing-02"]})
    cfg, db = load_config(path), tmp_path / "pool.db"
    restore = _stop_after(monkeypatch, 2, KeyboardInterrupt)
    said = []
    with pytest.raises(KeyboardInterrupt):
        build_pool(cfg, db, progress=False, echo=said.append)
    restore()
    (exp_id,) = _rows(db, "SELECT id FROM experiments WHERE kind = 'pool'")[0]
    command = f"evalkit generate --resume {exp_id} --db {db} --config {path}"
    assert any(s.startswith("generate interrupted") and f"experiment {exp_id} is unfinished" in s
               and "2 of " in s and command in s for s in said), said
    assert not list(tmp_path.glob("pool.db.shard-*"))  # merged, not left behind
    assert _rows(db, "SELECT COUNT(*) FROM pairs WHERE experiment_id = ?", [exp_id]) == [(2,)]

    with pytest.raises(EvalkitError) as e:  # a wrong id: the refusal lists the ones to finish
        build_pool(cfg, db, resume=exp_id + 7, progress=False, echo=lambda *_: None)
    assert e.value.fix.endswith(f"unfinished here: {exp_id}"), e.value.fix

    said.clear()
    later = build_pool(cfg, db, samples=1, progress=False, echo=said.append)
    assert later.experiment_id != exp_id
    assert any(f"experiment {exp_id} of this database is unfinished (2 work items stored" in s and command in s
               for s in said), said

    build_pool(cfg, db, resume=exp_id, progress=False, echo=lambda *_: None)
    said.clear()
    build_pool(cfg, db, samples=1, progress=False, echo=said.append)
    assert not any("unfinished" in s for s in said), said


def test_ctrl_c_before_the_first_sample_leaves_nothing(make_config, tmp_path, monkeypatch):
    from evalkit.study.pairs import build_pool

    cfg, db = load_config(make_config()), tmp_path / "pool.db"
    restore = _stop_after(monkeypatch, 0, KeyboardInterrupt)
    said = []
    with pytest.raises(KeyboardInterrupt):
        build_pool(cfg, db, progress=False, echo=said.append)
    restore()
    assert _rows(db, "SELECT COUNT(*) FROM experiments") == [(0,)] and _rows(db, "SELECT COUNT(*) FROM studies") == [(0,)]
    assert any(s.startswith("generate interrupted before any sample was stored") for s in said), said
    said.clear()
    build_pool(cfg, db, samples=1, progress=False, echo=said.append)
    assert not any("unfinished" in s for s in said), said


@pytest.mark.parametrize("where", ["while the work is listed", "as the plan is handed over"])
def test_ctrl_c_after_the_experiment_is_made_and_before_its_first_sample_leaves_nothing(where, make_config, tmp_path,
                                                                                       monkeypatch):
    """A Ctrl-C (or SIGTERM, which generate turns into one) in the moment between `generate` making the pool's
    experiment and its first sample being made (here while its work list is drawn up, or just after the plan is handed
    to the processes) said "no sample was stored" but left the empty experiment, and its study with the gate frozen;
    every later generate named it unfinished. Now it goes, as at a stop at the first sample."""
    from click.testing import CliRunner

    import evalkit.generation.handoff as handoff
    import evalkit.study.gold as gold
    from evalkit.cli import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if where == "while the work is listed":
        monkeypatch.setattr(gold, "gold_samples", interrupted)
    else:
        real = handoff.share_decision

        def handed_over_then_interrupted(*args, **kwargs):
            real(*args, **kwargs)
            raise KeyboardInterrupt

        monkeypatch.setattr(handoff, "share_decision", handed_over_then_interrupted)
    db = tmp_path / "pool.db"
    r = CliRunner().invoke(cli, ["generate", "--config", str(make_config()), "--db", str(db)])
    assert r.exit_code == 130, r.output
    assert r.output.strip().splitlines()[-1].startswith("generate interrupted before any sample was stored: "
                                                        "experiment 1 and the study it began were removed"), r.output
    assert _rows(db, "SELECT COUNT(*) FROM experiments") == [(0,)] and _rows(db, "SELECT COUNT(*) FROM studies") == [(0,)]
    assert not list(tmp_path.glob("pool.db.*"))  # no shard, no plan file


def test_a_later_pool_serves_no_pair_of_a_text_whose_sides_a_closed_pair_revealed(make_config, tmp_path, monkeypatch):
    """A pair's reveal tells its raters which path wrote each text, and the Results show closed pairs by path. A copy
    of those texts in a pool made afterwards (greedy decoding repeats a prompt's outputs in every pool; here the later
    pool's seed is the earlier sample's) never held that reveal back, and the met-text rule keeps a rater from it only
    under the name she rated with: a person with a second name could rate it knowing its sides, counted. Such copies
    are now withheld from every rater (closed as their pool joins the study; they keep their place in the order and
    count at the worst, tests/test_later_pool.py), and generate says so; a copy of a pair still open is served (its
    reveal waits for the copy, rating.queue.open_copies)."""
    from evalkit.rating.queue import next_pair
    import evalkit.study.pairs as pairs_mod
    from evalkit.config import load_config
    from evalkit.study.pairs import build_pool

    # every pool's first sample gets seed 500, as a greedy pool's every sample gets the same draws
    monkeypatch.setattr(pairs_mod, "_draw_sample_seed", lambda _db, _cfg, first, _samples: 500 - first)
    cfg = load_config(make_config(**{"decoding.mode": "sample", "pool.prompts": ["writing-01", "writing-02"]}))
    prompts = cfg.pool.prompts
    db = tmp_path / "pool.db"
    first = build_pool(cfg, db, samples=1, progress=False, echo=lambda *_: None)
    pairs1 = dict(_rows(db, "SELECT prompt_id, id FROM pairs WHERE experiment_id = ? AND kind = 'study'",
                        [first.experiment_id]))
    texts = {pid: set(t for (t,) in _rows(db, "SELECT g.text FROM pairs p JOIN generations g ON g.id IN "
                                              "(p.a_generation_id, p.b_generation_id) WHERE p.id = ?", [pair]))
             for pid, pair in pairs1.items()}
    assert set(pairs1) == set(prompts) and all(len(t) == 2 for t in texts.values()), texts  # outputs differ
    con = sqlite3.connect(str(db))
    with con:  # writing-01's pair was rated and closed (its reveal shown); writing-02's is still open
        con.execute("INSERT INTO closed_pairs (pair_id, closed_at) VALUES (?, '2026-12-05T00:00:00+00:00')",
                    [pairs1["writing-01"]])
    con.close()

    said = []
    later = build_pool(cfg, db, samples=1, progress=False, echo=said.append)
    new = _rows(db, "SELECT p.prompt_id, g.text FROM pairs p JOIN generations g ON g.id IN "
                    "(p.a_generation_id, p.b_generation_id) WHERE p.experiment_id = ? AND p.kind = 'study'",
                [later.experiment_id])
    stored = {t for (t,) in _rows(db, "SELECT text FROM generations WHERE experiment_id = ?", [later.experiment_id])}
    assert texts["writing-01"] <= stored and texts["writing-02"] <= stored  # the same draws: the same texts
    assert {p for p, _ in new} == {"writing-01", "writing-02"}, new
    assert later.pairs == 2
    assert any("1 pair(s) of this pool repeat a text of a pair already closed" in line for line in said), said
    con = sqlite3.connect(str(db))
    withheld = con.execute("SELECT p.prompt_id FROM pairs p JOIN closed_pairs c ON c.pair_id = p.id "
                           "WHERE p.experiment_id = ? AND c.closed_at = p.stored_at", [later.experiment_id]).fetchall()
    con.close()
    assert withheld == [("writing-01",)]  # the closed pair's copy: closed as its pool joined, served to nobody
    from evalkit.store import open_db

    store = open_db(db)
    served = {v.pair_id for name in ("ann", "bob", "cat", "dan") if (v := next_pair(store, name, 1)) is not None}
    store.close()
    assert {_rows(db, "SELECT prompt_id FROM pairs WHERE id = ?", [p])[0][0] for p in served} == {"writing-02"}
    assert len(served) == 2  # both copies of the open pair; neither of writing-01's


def _ctrl_c_in(monkeypatch, name: str):
    """study.pairs.`name` raises KeyboardInterrupt (a Ctrl-C landing in it); returns the real one."""
    import evalkit.study.pairs as pairs_mod

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    real = getattr(pairs_mod, name)
    monkeypatch.setattr(pairs_mod, name, interrupted)
    return real


def test_ctrl_c_while_the_pool_is_finished_says_how_to_finish_it(make_config, tmp_path, monkeypatch):
    """Ctrl-C after the last sample, while the gold pairs and the queue's order were being made, printed only click's
    'Aborted!' and left a pool that reaches no rater (no queue ranks) with no word of --resume. Now it names the
    --resume that finishes it, and that resume draws the queue's order."""
    import evalkit.study.pairs as pairs_mod

    path = make_config(**{"pool.prompts": ["writing-01"], "decoding.mode": "sample"})
    cfg, db = load_config(path), tmp_path / "pool.db"
    real = _ctrl_c_in(monkeypatch, "draw_queue")
    said = []
    with pytest.raises(KeyboardInterrupt):
        pairs_mod.build_pool(cfg, db, progress=False, echo=said.append)
    (exp_id,) = _rows(db, "SELECT id FROM experiments WHERE kind = 'pool'")[0]
    assert _rows(db, "SELECT COUNT(*), COUNT(queue_rank) FROM pairs WHERE experiment_id = ?", [exp_id]) == [(2, 0)]
    command = f"evalkit generate --resume {exp_id} --db {db} --config {path}"
    assert any(s.startswith("generate interrupted") and command in s for s in said), said

    monkeypatch.setattr(pairs_mod, "draw_queue", real)
    done = pairs_mod.build_pool(cfg, db, resume=exp_id, progress=False, echo=lambda *_: None)
    assert done.experiment_id == exp_id and done.pairs == 2
    assert _rows(db, "SELECT COUNT(*), COUNT(queue_rank) FROM pairs WHERE experiment_id = ?", [exp_id]) == [(2, 2)]


def test_ctrl_c_after_the_queue_is_drawn_asks_for_no_resume(make_config, tmp_path, monkeypatch):
    """A stop after the pool is complete (while its notes are printed) must not send the user to a --resume."""
    import evalkit.study.pairs as pairs_mod

    cfg, db = load_config(make_config(**{"pool.prompts": ["writing-01"]})), tmp_path / "pool.db"
    _ctrl_c_in(monkeypatch, "texts_on_both_paths")
    said = []
    with pytest.raises(KeyboardInterrupt):
        pairs_mod.build_pool(cfg, db, progress=False, echo=said.append)
    assert _rows(db, "SELECT COUNT(*), COUNT(queue_rank) FROM pairs") == [(2, 2)]
    assert not any("--resume" in s for s in said), said


def _shard_pairs(db) -> int:
    """Study pairs stored so far in the shards of a running single-process generate (its main database gets them
    at the end)."""
    n = 0
    for shard in db.parent.glob(f"{db.name}.shard-*.db"):
        try:
            con = sqlite3.connect(f"file:{shard}?mode=ro", uri=True)
            try:
                n += con.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]
            finally:
                con.close()
        except sqlite3.Error:  # not yet made, or its tables not yet created
            continue
    return n


@pytest.mark.slow  # two real generate processes
@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_sigint_to_a_real_generate_keeps_whole_pairs_and_resume_finishes_with_the_same_seeds(make_config, tmp_path,
                                                                                              stop):
    """A real `evalkit generate` process gets SIGINT (Ctrl-C) once a pair is stored and more are being made: it
    exits non-zero with no traceback, printing the --resume line; the database is sound and holds no half-written
    pair; and that very line, run, finishes the pool: every sample once, each with the experiment's seed. SIGTERM (a
    job scheduler's stop) ends it the same way, with the shell's status for it, 143: it ended without a word."""
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    samples = 10  # a few seconds of work on the tiny models: the signal lands while samples are being made
    path = make_config(**{"decoding.mode": "sample", "pool.prompts": ["writing-01"]})
    db = tmp_path / "pool.db"
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "evalkit"]
    def as_from_a_terminal() -> None:  # a run started in the background (`cmd &`, as CI may) ignores SIGINT, and
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # the child would inherit that: Ctrl-C comes from a terminal
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    proc = subprocess.Popen(cmd + ["generate", "--config", str(path), "--db", str(db), "--samples", str(samples)],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=as_from_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while _shard_pairs(db) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "generate ended before a pair was stored: " + proc.stderr.read()[-2000:]
        assert _shard_pairs(db) >= 1, "no pair stored within 120 s"
        proc.send_signal(getattr(signal, stop))
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    status = {"SIGINT": 130, "SIGTERM": 143}[stop]  # the shell's status for each
    assert proc.returncode == status and "Traceback" not in err, err[-3000:]
    lines = [s for s in err.splitlines() if s.startswith("generate interrupted")]
    assert len(lines) == 1 and "is unfinished" in lines[0], err[-3000:]
    assert err.rstrip().splitlines()[-1] == lines[0], err[-3000:]  # the last word: not click's "Aborted!"
    resume = lines[0].split("`")[1]
    (exp_id, first, base), = _rows(db, "SELECT id, first_sample, sample_seed FROM experiments WHERE kind = 'pool'")
    assert resume == f"evalkit generate --resume {exp_id} --db {db} --config {path}"

    assert _rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert not list(tmp_path.glob("pool.db.shard-*"))  # merged at the stop
    before = _rows(db, "SELECT sample, ordinary_side FROM pairs ORDER BY sample")
    assert 1 <= len(before) < samples  # interrupted while samples were still to make

    def whole() -> None:  # every pair: both outputs, each finished and timed, with the seed of its sample
        rows = _rows(db, """SELECT p.sample, g.path, g.status, g.seed, g.generate_seconds, g.decode_seconds
                            FROM pairs p JOIN generations g
                              ON g.id IN (p.ordinary_generation_id, p.assisted_generation_id)
                            WHERE p.kind = 'study' ORDER BY p.sample, g.path""")
        by_sample = {}
        for sample, path_, status, seed, gen_s, dec_s in rows:
            assert status == "ok" and gen_s is not None and dec_s is not None, (sample, path_)
            assert seed == base + sample, (sample, seed, base)
            by_sample.setdefault(sample, []).append(path_)
        assert all(paths == ["assisted", "ordinary"] for paths in by_sample.values()), by_sample

    whole()
    done = subprocess.run(cmd + shlex.split(resume)[1:], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _rows(db, "PRAGMA integrity_check") == [("ok",)]
    whole()
    pairs = _rows(db, "SELECT sample, ordinary_side FROM pairs WHERE kind = 'study' ORDER BY sample")
    assert [s for s, _ in pairs] == list(range(first, first + samples))  # every sample once
    assert set(before) <= set(pairs)  # the pairs stored before the stop kept their sides
    assert _rows(db, "SELECT COUNT(*) FROM pairs WHERE queue_rank IS NULL") == [(0,)]  # served to raters now


def test_ctrl_c_while_the_models_are_checked_says_so_and_exits_130(make_config, tmp_path, monkeypatch):
    """Ctrl-C while generate checks (loads) the models, which takes minutes for a large pair: the command ended with
    click's bare "Aborted!" and status 1. Now it says that no sample was stored, ends with the shell's status for a
    Ctrl-C (130), and writes no database."""
    from click.testing import CliRunner

    import evalkit.generation.models as models
    from evalkit.cli import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(models, "check_compat", interrupted)
    db = tmp_path / "pool.db"
    r = CliRunner().invoke(cli, ["generate", "--config", str(make_config()), "--db", str(db)])
    assert r.exit_code == 130, r.output
    assert r.output.strip().splitlines()[-1] == ("generate interrupted before its first sample (while checking the "
                                                  "models and planning the work): no sample was stored"), r.output
    assert "Aborted" not in r.output and not db.exists()


def test_the_resume_line_names_paths_with_spaces_as_a_shell_reads_them(make_config, tmp_path, monkeypatch):
    """The --resume line printed `--db /data/my study/pool.db` as is: pasted into a shell it named `/data/my` and a
    stray argument. Paths are quoted as a shell reads them."""
    import shlex
    import shutil

    from evalkit.study.pairs import build_pool

    folder = tmp_path / "my study's pool"
    folder.mkdir()
    config = folder / "pair config.toml"
    shutil.copy(make_config(), config)
    db = folder / "pool.db"
    restore = _stop_after(monkeypatch, 1, KeyboardInterrupt)
    said = []
    with pytest.raises(KeyboardInterrupt):
        build_pool(load_config(config), db, progress=False, echo=said.append)
    restore()
    line = next(s for s in said if s.startswith("generate interrupted"))
    words = shlex.split(line.split("`")[1])
    assert words[:3] == ["evalkit", "generate", "--resume"]
    assert words[4:] == ["--db", str(db), "--config", str(config)], words


def test_samples_with_resume_on_a_file_that_is_no_evalkit_database_is_refused_in_the_store_s_words(make_config,
                                                                                                     tmp_path):
    """`generate --resume 1 --samples 3` read the experiment's samples through a connection of its own, which took a
    corrupt file or another tool's SQLite file for a pool made with other samples: "--samples 3 does nothing with
    --resume", whose fix (leave out --samples) cannot work. It reads through the store's read-only reader now
    (store.open_reader): the file is refused in open_db's words, and left byte for byte as it was."""
    import sqlite3

    from click.testing import CliRunner

    from evalkit.cli import cli

    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database, " * 512)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    path = make_config()
    for db, said in ((corrupt, f"database {corrupt} cannot be opened"),
                     (other, f"database {other} is not an evalkit database: it holds other tables (invoices)")):
        before = db.read_bytes()
        r = CliRunner().invoke(cli, ["generate", "--config", str(path), "--db", str(db), "--resume", "1",
                                     "--samples", "3"])
        assert r.exit_code == 1 and said in r.output and "does nothing with --resume" not in r.output, r.output
        assert db.read_bytes() == before and not db.with_name(db.name + "-wal").exists()


def test_samples_with_resume_is_refused_rather_than_ignored(make_config, tmp_path, monkeypatch):
    """`evalkit generate --resume ID --samples 3` finished the stopped pool with the samples it was made with and
    exited 0, as if --samples had been taken (first-hour audit, 2026-12-06). It is refused, naming both options,
    before anything is generated; the resume as printed then finishes the pool."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    path, db, exp_id, before = _stopped_pool(make_config, tmp_path, monkeypatch, ["writing-01"])
    r = CliRunner().invoke(cli, ["generate", "--config", str(path), "--db", str(db), "--resume", str(exp_id),
                                 "--samples", "3"])
    assert r.exit_code == 1 and f"--samples 3 does nothing with --resume: experiment {exp_id}" in r.output, r.output
    assert "fix: leave out --samples" in r.output and _rows(db, "SELECT COUNT(*) FROM generations") == before
    r = CliRunner().invoke(cli, ["generate", "--config", str(path), "--db", str(db), "--resume", str(exp_id)])
    assert r.exit_code == 0 and _rows(db, "SELECT COUNT(*) FROM pairs")[0][0] == 2, r.output
