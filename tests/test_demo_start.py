"""The local demo's start as a presenter sees it in the terminal: a real `python app.py` in a subprocess."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apphelpers import (app_args, app_process, ctrl_c_as_in_a_terminal, free_port, held_calls, open_pool, stop_app,
                        wait_for_line)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_terminal_gives_the_local_address_and_how_to_stop_and_never_a_public_link(tmp_path):
    """Demo audit, 2026-12-06: a local start printed Gradio's "To create a public link, set `share=True` in
    `launch()`", which invites a presenter to put unrated study pairs on the internet; and GRADIO_SHARE=true in the
    environment made such a link without asking. The terminal now has the local URL, evalkit's own line (who can
    open it, Ctrl-C to stop) and no public link, even with GRADIO_SHARE=true."""
    port, log = free_port(), tmp_path / "serve.log"
    with app_process(app_args(*open_pool(tmp_path, "demo"), port, "--no-prepare"), log, cwd=tmp_path,
                     env={"GRADIO_SHARE": "true"}) as proc:
        text = wait_for_line(log, proc, "Ctrl-C here stops it")
        assert proc.poll() is None, text
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass  # the page is served where the line says
        stop_app(proc)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert f"Running on local URL:  http://127.0.0.1:{port}" in text, text  # Gradio's own URL line is kept
    assert (f"evalkit: the app is at http://127.0.0.1:{port}/ (this machine only); Ctrl-C here stops it." in text), text
    assert "share=True" not in text and "public URL" not in text and "share link" not in text, text


def test_the_demo_start_says_what_the_demo_is_and_a_study_start_still_warns(tmp_path):
    """Demo audit, 2026-12-06: on the demo config the start said "this study cannot reach a decision: ... 1675 planned
    pairs", which read to stakeholders as a failure. On the offline demo pair it now says what the demo is and what a
    real study needs, naming the command; on a real pair's config the same pool still gets the warning."""
    from evalkit.config import load_config
    from evalkit.store import open_db
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
    from evalkit.ui.server import plan_hint

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=1675), encoding="utf-8")
    build_study(open_db(tmp_path / "s.db"), SyntheticStudy(pairs=20, raters_per_pair=1, raters=2, gate_path=str(gate)))
    demo = plan_hint(tmp_path / "s.db", load_config(ROOT / "configs" / "demo.toml"))
    assert "cannot reach a decision" not in demo, demo
    assert "this is the offline demo: 20 study pairs to try the flow" in demo, demo
    assert "A real study rates the gate's 1675 planned pairs of your own model pair" in demo, demo
    assert "generate --until-planned --config YOUR-CONFIG` fills the pool" in demo, demo
    real = plan_hint(tmp_path / "s.db", load_config(ROOT / "configs" / "qwen2.5-1.5b-0.5b.toml"))
    assert "the pool holds 20 study pairs, fewer than the 1675 planned pairs, so this study cannot reach" in real, real
    assert "offline demo" not in real, real


def test_a_start_on_a_port_in_use_stops_before_it_prepares_anything(tmp_path, make_config):
    """Demo audit, 2026-12-06: a second `./scripts/start.sh` in the same folder, the first still training the demo
    pair on 7860, made the database and began a second preparation of it (the demo pair's training twice on the same
    cores, a second pool started in the first's database) before launch stopped at the port. The port is now tested
    first: the start stops with the port's error, and nothing is written."""
    from evalkit.config import load_config
    from evalkit.errors import EvalkitError
    from evalkit.ui.server import serve

    cfg = load_config(make_config())
    db_file = tmp_path / "second.db"
    with socket.socket() as held:  # the first start's server
        held.bind(("127.0.0.1", free_port()))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(EvalkitError) as e:
            serve(cfg, db_file, host="127.0.0.1", port=port)
    assert f"cannot listen on 127.0.0.1:{port}" in e.value.what and "pass another --port" in e.value.fix
    assert not db_file.exists() and not list(tmp_path.glob("second.db*"))  # no database, no preparation's file


@pytest.mark.parametrize("host", ["::1", "::"])
def test_a_start_on_an_ipv6_address_is_refused_before_it_serves(tmp_path, host):
    """Start audit, 2026-12-06: Gradio writes the page's address as http://HOST:PORT, an IPv6 address without its
    brackets, so a start with --host ::1 and app.port = 0 (no port of its own to test first) served, then failed on
    its own address with httpx's traceback "Invalid port: ':1:7860'". Such a host is refused first, naming it and
    the hosts that work, and the database is not claimed."""
    from evalkit.config import load_config
    from evalkit.errors import EvalkitError
    from evalkit.ui.server import serve

    db_file, config = open_pool(tmp_path, "six")
    with pytest.raises(EvalkitError) as e:
        serve(load_config(config), db_file, host=host, port=0)
    assert f"--host {host} (or app.host) is an IPv6 address" in e.value.what
    assert "--host 127.0.0.1" in e.value.fix and "0.0.0.0" in e.value.fix
    assert not (tmp_path / "six.db.start.lock").exists()


def test_a_second_start_on_a_database_being_prepared_is_refused_and_so_is_a_second_prepare(tmp_path, make_config):
    """Demo audit, 2026-12-06: a second start in the same folder on another port, while the first still prepared the
    pairs, began a second preparation of the same database: both trained (the demo pair twice on the same cores),
    and each put a pool of its own in it (22 pairs from two pools where the first start makes 11, the second's warning
    about "experiment 1 ... unfinished" pointing at a --resume). While a preparation runs, a start that would begin
    another is refused, and so is `evalkit prepare`, each saying what runs and what to do; the database is left as
    it was."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.config import load_config
    from evalkit.errors import EvalkitError
    from evalkit.study.preparation import pool_size, sole_preparation
    from evalkit.ui.server import serve

    config = make_config()
    db_file = tmp_path / "shared.db"
    with sole_preparation(db_file):  # the first start's `evalkit prepare`, under way
        with pytest.raises(EvalkitError) as e:
            serve(load_config(config), db_file, host="127.0.0.1", port=free_port())
        assert f"another preparation of {db_file} is running" in e.value.what and "Ctrl-C" in e.value.fix
        assert not (tmp_path / "shared.db.prepare.json").exists()  # no second preparation began
        r = CliRunner().invoke(cli, ["prepare", "--config", str(config), "--db", str(db_file)])
        assert r.exit_code == 1 and f"Error: another preparation of {db_file} is running" in r.output, r.output
        assert pool_size(db_file) == 0
    r = CliRunner().invoke(cli, ["prepare", "--config", str(config), "--db", str(db_file)])
    assert r.exit_code == 0 and pool_size(db_file) > 0, r.output  # once it has ended, a preparation runs


@pytest.mark.slow
def test_a_prepare_run_by_hand_in_an_app_s_first_seconds_is_refused_naming_the_app(tmp_path, make_config,
                                                                                    monkeypatch):
    """Attacker audit round 6: an app claims its database before anything slow, but its own `evalkit prepare` (a
    process of its own) takes the preparation's lock seconds later; an `evalkit prepare` run by hand in those seconds
    took it first, and the app's preparation failed on its page. A preparation now holds the app's start claim while
    it runs: one run by hand while an app holds it is refused, naming the app's process and page, and the database is
    left as it was; the app's own (its child) prepares; and a start while one runs by hand is refused naming it.
    This process stands for the app in its first seconds: it holds the claim as the app does."""
    import threading

    from click.testing import CliRunner

    import evalkit.study.preparation as preparation
    from evalkit.cli import cli
    from evalkit.config import load_config
    from evalkit.errors import EvalkitError
    from evalkit.ui.server import serve

    config, db_file = make_config(), tmp_path / "race.db"
    claim = preparation.claim_start(db_file, "http://127.0.0.1:7745/")
    try:
        r = CliRunner().invoke(cli, ["prepare", "--config", str(config), "--db", str(db_file)])
        assert r.exit_code == 1, r.output
        assert (f"an app is running on {db_file} (process {os.getpid()}, its page at http://127.0.0.1:7745/) and "
                "prepares its pairs itself" in r.output and "Ctrl-C" in r.output), r.output
        assert preparation.pool_size(db_file) == 0
        own = subprocess.run([sys.executable, "-m", "evalkit", "prepare", "--config", str(config), "--db",
                              str(db_file)], capture_output=True, text=True, timeout=600)  # the app's own
        assert own.returncode == 0 and preparation.pool_size(db_file) > 0, own.stderr
    finally:
        claim.close()
    # `evalkit prepare` run by hand, held at its work until the start has been refused
    entered, released = held_calls(monkeypatch, preparation, "ensure_pool")
    other, said = tmp_path / "other.db", []
    by_hand = threading.Thread(target=lambda: said.append(CliRunner().invoke(
        cli, ["prepare", "--config", str(config), "--db", str(other)]).output))
    by_hand.start()
    try:
        assert entered.wait(60)
        with pytest.raises(EvalkitError) as e:
            serve(load_config(config), other, host="127.0.0.1", port=free_port())
        assert f"`evalkit prepare` is preparing the pairs of {other} (process {os.getpid()})" in e.value.what
    finally:
        released.set()
        by_hand.join(600)
    assert "ready:" in said[0], said


@pytest.mark.slow
def test_of_two_starts_in_quick_succession_in_one_folder_the_second_stops_on_the_terminal(tmp_path, make_config):
    """Demo audit, 2026-12-06: a second start in the first seconds of the first (before the first's preparation, a
    process of its own, had taken the preparation's lock) began a second preparation of the same database, refused
    only by that preparation's error on its page; the terminal said nothing. A start now claims the database before
    anything slow: of two started together, whichever comes second stops on its terminal, saying what runs, where and
    how to stop it, and the first prepares and serves."""
    config, db_file = make_config(), tmp_path / "shared.db"
    ports, logs = [free_port()], [tmp_path / "first.log", tmp_path / "second.log"]
    while len(ports) < 2:
        ports += {free_port()} - set(ports)
    with app_process(app_args(db_file, config, ports[0]), logs[0], cwd=tmp_path) as first, \
            app_process(app_args(db_file, config, ports[1]), logs[1], cwd=tmp_path) as second:
        procs = [first, second]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and all(p.poll() is None for p in procs):
            if all("Ctrl-C here stops it" in log.read_text(errors="replace") for log in logs if log.exists()):
                break  # both serve: neither was stopped
            time.sleep(0.2)
        said = [log.read_text(encoding="utf-8", errors="replace") for log in logs]
        ended = [i for i, p in enumerate(procs) if p.poll() is not None]
        assert len(ended) == 1, said
        stopped, running = ended[0], 1 - ended[0]
        assert procs[stopped].returncode == 1, said[stopped]
        assert (f"the app is already starting on {db_file} (process {procs[running].pid}, its page at "
                f"http://127.0.0.1:{ports[running]}/) and prepares its pairs there" in said[stopped]), said[stopped]
        assert "stop that app (Ctrl-C in its terminal) and start this one again" in said[stopped], said[stopped]
        assert "no pairs to rate yet" not in said[stopped]  # it began no preparation
        text = wait_for_line(logs[running], procs[running], "Ctrl-C here stops it")
        assert procs[running].poll() is None and "another preparation" not in text, text
        stop_app(procs[running])


@pytest.mark.slow
def test_a_start_after_ctrl_c_during_the_pool_finishes_the_pool_rather_than_serve_it_unfinished(tmp_path, make_config):
    """Demo audit, 2026-12-06: Ctrl-C while the first start generated the pairs, then `./scripts/start.sh` again: the
    second start found pairs in the database and served them, though the stopped pool's pairs reach no rater until
    it is finished (the Rate tab had nothing to serve), and said only that the pool was short of the plan; finishing
    it took `evalkit generate --resume`, named once in the first start's terminal. The start now prepares again
    when the database's only pool is unfinished, and the preparation finishes that pool."""
    import json

    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.store import open_db
    from evalkit.study.pairs import unfinished_pools
    from evalkit.study.preparation import pool_size

    config = make_config(**{"pool.samples": 4, "decoding.mode": "sample"})
    db_file, progress = tmp_path / "c.db", tmp_path / "c.db.prepare.json"
    first = subprocess.Popen([sys.executable, "-m", "evalkit", "prepare", "--config", str(config), "--db",
                              str(db_file), "--progress-file", str(progress)], cwd=str(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                             preexec_fn=ctrl_c_as_in_a_terminal)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and first.poll() is None:  # until the pool has stored a pair's outputs
        snap = json.loads(progress.read_text(encoding="utf-8")) if progress.exists() else {}
        if snap.get("stage") == "pair pool" and snap.get("n", 0) >= 1:
            break
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGINT)  # Ctrl-C in the terminal: the whole process group
    said = first.communicate(timeout=120)[0].decode(errors="replace")
    assert first.returncode != 0 and "is unfinished" in said, said  # stopped mid-pool, as the presenter did
    assert "starting the app again (./scripts/start.sh, `" in said and "finishes that pool too" in said, said
    db = open_db(db_file)
    try:
        assert unfinished_pools(db, db_file)
    finally:
        db.conn.close()
    assert pool_size(db_file) == 0  # so the next start prepares again
    r = CliRunner().invoke(cli, ["prepare", "--config", str(config), "--db", str(db_file)])
    assert r.exit_code == 0 and "was stopped before it was finished: finishing it (experiment 1)" in r.output, r.output
    db = open_db(db_file)
    try:
        assert not unfinished_pools(db, db_file)
        assert db.execute("SELECT COUNT(*) FROM experiments WHERE kind = 'pool'").fetchone()[0] == 1
        unranked = db.execute("SELECT COUNT(*) FROM pairs WHERE queue_rank IS NULL").fetchone()[0]
        assert unranked == 0 and db["pairs"].count > 0  # every pair reaches the raters' queue
    finally:
        db.conn.close()
    assert pool_size(db_file) > 0


def test_raters_add_names_the_running_app_s_address_in_the_sign_in_link(tmp_path):
    """Demo walk, 2026-12-06: the start says "`evalkit raters add YOUR-NAME --organiser --db ...` gives you results
    at any time"; with the app started on another port than the config's (`./scripts/start.sh --port 7861`, 7860
    being busy), the link it printed named the config's port, a page that was not there. While an app runs on the
    database the link is that app's address; once it has stopped, the config's, as before."""
    db_file, config = open_pool(tmp_path, "demo")
    port, log = free_port(), tmp_path / "serve.log"
    with app_process(app_args(db_file, config, port), log, cwd=tmp_path) as proc:
        text = wait_for_line(log, proc, "Ctrl-C here stops it")
        assert proc.poll() is None, text
        assert f"sign-in link: http://127.0.0.1:{port}/?invite=" in _link(db_file, config, "olga")
        stop_app(proc)
    assert "sign-in link: http://127.0.0.1:7860/?invite=" in _link(db_file, config, "boss")  # no app: the config's


@pytest.mark.slow
def test_port_0_serves_on_the_next_free_port_as_app_port_0_does(tmp_path):
    """Start audit, 2026-12-06: `--port 0`, which the refusal of a port out of range offers as "Gradio's default,
    7860 or the next free one", went to Gradio as port 0: the server bound a port of the OS's choice, Gradio checked
    its page at port 0, and the start ended in a traceback (httpx.ConnectError). It now searches as `app.port = 0`
    does (here from a port this test keeps busy) and serves where its line says."""
    db_file, config = open_pool(tmp_path, "demo")
    log = tmp_path / "serve.log"
    with _busy_port() as first, app_process(app_args(db_file, config, 0), log, cwd=tmp_path,
                                            env={"GRADIO_SERVER_PORT": str(first)}) as proc:
        port = _port_of(proc, log)
        assert port != first
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass  # the page is served where the line says
        stop_app(proc)
    assert "Traceback" not in log.read_text(encoding="utf-8", errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("more", [(), ("--no-prepare",)], ids=["claim", "no-prepare"])
def test_raters_add_names_the_port_an_app_started_with_port_0_bound(tmp_path, more):
    """Start audit, 2026-12-06: with `app.port = 0` Gradio chooses the port (7860 or the next free one), and the app
    wrote "http://127.0.0.1:7860/ or the next free port" where `raters add` reads the running app's address: not an
    address, so the sign-in link named 7860, another app's page or none. The app now writes the port it bound once it
    listens, before its line saying where it is. Here Gradio's search starts at a port this test keeps busy."""
    db_file, config = open_pool(tmp_path, "demo")
    config.write_text(config.read_text(encoding="utf-8") + "port = 0\n", encoding="utf-8")
    args = ["--db", str(db_file), "--config", str(config), "--host", "127.0.0.1", *more]
    with _busy_port() as first, app_process(args, tmp_path / "serve.log", cwd=tmp_path,
                                            env={"GRADIO_SERVER_PORT": str(first)}) as proc:
        port = _port_of(proc, tmp_path / "serve.log")
        assert port != first
        assert f"sign-in link: http://127.0.0.1:{port}/?invite=" in _link(db_file, config, "olga")
        stop_app(proc)


@contextlib.contextmanager
def _busy_port():
    """A port this test listens on (and so no app can bind) while the block runs."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", free_port()))
        busy.listen()
        yield busy.getsockname()[1]


def _port_of(proc, log: Path) -> int:
    """The port of the app's line saying where it is, once the app says it."""
    text = wait_for_line(log, proc, "Ctrl-C here stops it")
    assert proc.poll() is None, text
    return int(re.search(r"the app is at http://127\.0\.0\.1:(\d+)/", text)[1])


def _link(db_file, config, name: str) -> str:
    """The sign-in link line `evalkit raters add NAME --organiser` prints, without --url."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    r = CliRunner().invoke(cli, ["raters", "add", name, "--organiser", "--db", str(db_file), "--config", str(config)])
    assert r.exit_code == 0, r.output
    return next(line for line in r.output.splitlines() if "sign-in link:" in line)


@pytest.mark.slow
def test_raters_add_names_the_address_of_an_app_started_with_no_prepare(tmp_path):
    """Start audit, 2026-12-06: an app started with --no-prepare took no start claim, the only place its address was
    written, so `evalkit raters add` without --url printed a link to the config's port, a page that was not there.
    Such an app now announces its address beside the database (and still takes no claim: a preparation run by hand,
    which has nothing to build, is not refused); once it stops, the config's address again."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    db_file, config = open_pool(tmp_path, "demo")
    port, log = free_port(), tmp_path / "serve.log"
    with app_process(app_args(db_file, config, port, "--no-prepare"), log, cwd=tmp_path) as proc:
        text = wait_for_line(log, proc, "Ctrl-C here stops it")
        assert proc.poll() is None, text
        assert f"sign-in link: http://127.0.0.1:{port}/?invite=" in _link(db_file, config, "olga")
        r = CliRunner().invoke(cli, ["prepare", "--db", str(db_file), "--config", str(config)])
        assert r.exit_code == 0 and "pair pool: " in r.output, r.output
        stop_app(proc)
    assert "sign-in link: http://127.0.0.1:7860/?invite=" in _link(db_file, config, "boss")
