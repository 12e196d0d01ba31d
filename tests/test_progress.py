"""Progress for a page: bars publish to a board, the board writes a snapshot with the share done and an estimate
of the time left that learns how fast this machine is."""

import pytest

from evalkit.progress import Board, bar, read, watching


def test_the_estimate_follows_the_plan_scaled_by_this_machine(tmp_path):
    t = [0.0]
    board = Board(tmp_path / "p.json", [("corpus", 10.0), ("train", 90.0)], every=0, clock=lambda: t[0])
    assert read(tmp_path / "p.json").fraction == 0.0
    board.update("corpus", 0, 10)
    t[0] = 20.0  # this machine is twice as slow as the plan
    board.update("corpus", 10, 10)
    board.update("train", 0, 100)
    t[0] = 40.0
    board.update("train", 10, 100)  # 10 % of train in 20 s
    snap = read(tmp_path / "p.json")
    assert snap.stage == "train" and (snap.n, snap.total) == (10, 100)
    assert snap.fraction == pytest.approx((10 + 0.1 * 90) / 100)
    assert snap.remaining == pytest.approx(180.0)  # the current stage's own rate: 20 s per 10 %
    board.finish()
    done = read(tmp_path / "p.json")
    assert done.done and done.fraction == 1.0 and done.remaining == 0.0


def test_stages_not_started_are_scaled_by_the_finished_ones(tmp_path):
    t = [0.0]
    board = Board(tmp_path / "p.json", [("a", 10.0), ("b", 30.0)], every=0, clock=lambda: t[0])
    board.update("a", 0, 5)
    t[0] = 5.0  # twice as fast as planned
    board.update("a", 5, 5)
    snap = board.snapshot()
    assert snap.fraction == pytest.approx(0.25) and snap.remaining == pytest.approx(15.0)


def test_bars_publish_while_a_board_watches_and_errors_are_kept(tmp_path):
    board = Board(tmp_path / "p.json", [("pair pool", 5.0)], every=0)
    with watching(board):
        b = bar(total=4, desc="pair pool", unit="pair")
        b.update(3)
        b.close()
    assert (read(tmp_path / "p.json").n, read(tmp_path / "p.json").total) == (3, 4)
    outside = bar(total=2, desc="pair pool", disable=True)  # no board: a plain tqdm bar
    outside.update(2)
    assert read(tmp_path / "p.json").n == 3
    board.finish(error="model folder missing")
    snap = read(tmp_path / "p.json")
    assert not snap.done and snap.error == "model folder missing"
    assert read(tmp_path / "nothing.json") is None


def test_the_terminal_says_each_stage_as_it_begins_in_plain_words_and_how_far_the_whole_is(tmp_path, capsys):
    """Demo audit, 2026-12-06, `./scripts/start.sh` on a fresh clone: the terminal showed only the bars, each with its
    own stage's time left ("train target: 63% … [16:20<02:47]"), which read as the wait for the whole preparation,
    several stages more; and their names ("train target", "pair pool") mean nothing to a presenter. Each stage now
    begins with a line saying which of how many it is, in plain words in both languages, and how far the whole is."""
    from evalkit.study.preparation import announcer

    t = [0.0]
    plan = [("demo corpus", 10.0), ("train target", 90.0), ("pair pool", 100.0)]
    board = Board(tmp_path / "p.json", plan, every=0, clock=lambda: t[0], announce=announcer())
    with watching(board):
        for stage, _ in plan:
            with bar(total=2, desc=stage) as b:
                t[0] += 20.0  # this machine is twice as slow as the corpus's plan
                b.update(2)
    said = [line.strip() for line in capsys.readouterr().err.replace("\r", "\n").splitlines()
            if line.strip().startswith("evalkit prepare:")]
    assert len(said) == 3, said
    assert said[0].startswith("evalkit prepare: step 1 of 3: writing the demo models' training texts · 生成演示模型的训练文本")
    assert said[1] == ("evalkit prepare: step 2 of 3: training the target model (the large one) · 训练目标模型（大模型） "
                       "(5% of the whole preparation done after 20 s, about 6 min 20 s left in all)")
    assert said[2].startswith("evalkit prepare: step 3 of 3: generating the pairs raters will judge · 生成供评分的输出对 "
                              "(50% of the whole preparation done after 40 s")


def test_the_terminal_shows_the_whole_preparations_time_left_beside_each_bar(tmp_path, capsys):
    """Demo audit, 2026-12-06: during the demo pair's build (minutes; half an hour on a shared 2-core machine) the
    terminal had each stage's own time left and "the page shows the time left": a presenter at the terminal had no
    estimate of the wait. Each bar now carries the whole preparation's time left, from the plan scaled by this
    machine's pace, and a stage not yet under way counts at its plan's time rather than none."""
    t = [0.0]
    plan = [("demo corpus", 10.0), ("train target", 90.0), ("pair pool", 100.0)]
    board = Board(tmp_path / "p.json", plan, every=0, clock=lambda: t[0])
    with watching(board):
        with bar(total=2, desc="demo corpus") as b:
            assert b.postfix == "all steps: about 3 min 20 s left"  # the plan: no pace known yet
            t[0] += 20.0  # twice as slow as the plan
            b.update(2)
        with bar(total=4, desc="train target") as b:
            assert b.postfix == "all steps: about 6 min 20 s left"  # the rest of the plan, at twice its time
            assert read(tmp_path / "p.json").remaining == pytest.approx(380.0)  # the page says the same
            t[0] += 45.0
            b.update(1)  # a quarter in 45 s: this stage's own rate from now on
            assert b.postfix == "all steps: about 5 min 35 s left"  # 135 s of this stage, 200 s of the pool's
    assert "all steps: about 5 min 35 s left" in capsys.readouterr().err


def test_a_resumed_training_s_bar_counts_for_its_own_stage_from_its_saved_step():
    """A training resumed from its checkpoint names its bar "train target (16 layers), resumed at step 40": that is
    the 16-layer stage (the longest stage name it starts with, not "train target"), and its count starts at 40."""
    import io

    from evalkit.progress import Board, bar, watching

    board = Board(None, [("train target", 10.0), ("train target (16 layers)", 10.0)], every=0)
    with watching(board):
        with bar(total=100, initial=40, desc="train target (16 layers), resumed at step 40",
                 file=io.StringIO()):
            snap = board.snapshot()
    assert (snap.stage, snap.n, snap.total) == ("train target (16 layers)", 40, 100)


def _aggregate_command(tmp_path):
    """`evalkit aggregate` on the small rated study, as a person types it: a real command whose bar names its steps."""
    import sys

    from evalkit.store import open_db
    from test_aggregate import load_fixture

    db = open_db(tmp_path / "rated.db")
    load_fixture(db, tmp_path / "gate.toml")
    db.conn.close()
    return [sys.executable, "-m", "evalkit", "aggregate", "--db", str(tmp_path / "rated.db")]


def test_away_from_a_terminal_bars_write_whole_lines_with_the_count_the_rate_and_the_time_left(tmp_path):
    """Audit, 2026-12-06: `./scripts/start.sh > log 2>&1` (nohup, a Space's log) got the demo pair's training bar as
    carriage-return redraws, one line of megabytes no person or log viewer can read. With stderr to a pipe, a bar
    writes whole lines now and then instead: a real command's, and a long bar's, a line per 5% of its count, not one
    per update, each with its count, its share, its rate and its time left."""
    import io
    import re
    import subprocess

    r = subprocess.run(_aggregate_command(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "\x1b" not in r.stderr, repr(r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.startswith("aggregate: ")]
    assert lines and r.stderr.endswith("\n"), r.stderr
    assert lines[-1].startswith("aggregate: 100% (4/4 steps), after "), lines
    for step in ("the ratings and speed figures", "the gate's analysis", "the tables", "the text"):
        assert any(line.endswith(f"; {step}") for line in lines), (step, lines)

    out = io.StringIO()
    with bar(total=1000, desc="train target", unit="step", file=out, mininterval=0) as b:  # a display per update
        for _ in range(1000):
            b.update(1)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and 20 <= len(lines) <= 22, lines
    assert lines[0] == "train target: 0% (0/1000 steps), after 0 s"
    assert re.fullmatch(r"train target: 50% \(500/1000 steps\), after \d+ s, [\d,.]+ step/s, about \d+ s left",
                        lines[10]), lines
    assert lines[-1].startswith("train target: 100% (1000/1000 steps), after ")


def test_on_a_terminal_the_bar_still_redraws_in_place(tmp_path):
    """The same command on a pseudo-terminal: the bar redraws its one line (carriage returns), as before."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal's 24 x 120
    proc = subprocess.Popen(_aggregate_command(tmp_path), stdout=subprocess.DEVNULL, stderr=follower,
                            stdin=subprocess.DEVNULL)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: the command ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait(timeout=300) == 0, seen
    said = seen.decode()
    assert said.count("\r") >= 4 and "aggregate: 100%|" in said and "4/4" in said, repr(said)
    assert "(4/4 steps), after" not in said  # not the log's lines


def test_the_demo_pair_s_build_in_a_log_is_whole_lines_with_no_bar_of_transformers_own(tmp_path):
    """`./scripts/start.sh > log 2>&1` trains the demo pair: its log had Transformers' own "Writing model shards"
    bar, redrawn with carriage returns, after each model's training. A real (smoke-scale) build with stderr to a pipe
    writes whole lines only, each training's with its steps."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "evalkit", "demo-models", "--scale", "smoke", "--out",
                        str(tmp_path / "pair")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "Writing model shards" not in r.stderr, repr(r.stderr)
    for stage in ("demo corpus", "train target", "train draft", "distil draft on target"):
        assert any(line.startswith(stage) and "100% (" in line for line in r.stderr.splitlines()), (stage, r.stderr)
