"""Crash safety: `python app.py` is killed with SIGKILL in the middle of a stream of rating submissions and
started again on the same database. SQLite's integrity check passes, every submission a client saw
acknowledged is stored exactly once, and the raters carry on where they were."""

import contextlib
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

from evalkit.ui.server import free_port

from gradio_client import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import loadbench  # noqa: E402
from apphelpers import app_args, app_process, open_pool, stop_app  # noqa: E402

# a served app killed and restarted
pytestmark = pytest.mark.slow

RATERS = 4
PAIRS = 30  # more than anyone can rate before the kill: every rater has several pairs in flight
KILL_AFTER_ACKS = 24  # SIGKILL once this many submissions are acknowledged (raters still submitting)
BOUND_SECONDS = 90


@contextlib.contextmanager
def serving_app(db_file: Path, config: Path, port: int, log: Path, env: dict | None = None):
    """app.py on the pool, once it serves; killed at the end if it still runs."""
    with app_process(app_args(db_file, config, port, "--no-prepare"), log, cwd=db_file.parent, env=env) as proc:
        loadbench.wait_until_serving(f"http://127.0.0.1:{port}/", proc)
        yield proc


def stream(url: str, rater: str, acked: list, inflight: dict, stop: threading.Event, errors: list,
           codes: dict) -> None:
    """Submit and move on until stopped or the server dies; record each acknowledged submission."""
    try:
        client = loadbench.new_client(url)
        codes[rater] = loadbench.sign_in(client, rater)
        k = 0
        while not stop.is_set():
            comment = f"crash {rater} #{k}"
            inflight[rater] = comment
            client.predict(*loadbench.submit_args(comment), api_name="/submit")
            acked.append((rater, comment))  # returned without error: acknowledged
            inflight.pop(rater, None)
            client.predict(api_name="/next_pair")
            k += 1
    except Exception as e:  # noqa: BLE001 - the kill ends every stream with a connection error
        errors.append(f"{rater}: {type(e).__name__}: {e}")


def stored(db_file: Path) -> tuple[str, list[tuple], int]:
    conn = sqlite3.connect(db_file)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        rows = conn.execute("SELECT rater, comment FROM ratings ORDER BY id").fetchall()
        twice = conn.execute("SELECT COUNT(*) FROM (SELECT 1 FROM ratings WHERE supersedes IS NULL "
                             "GROUP BY rater, pair_id HAVING COUNT(*) > 1)").fetchone()[0]
    finally:
        conn.close()
    return integrity, rows, twice


def test_sigkill_mid_stream_loses_no_acknowledged_rating(tmp_path):
    db_file = tmp_path / "crash.db"
    loadbench.build_pool(db_file, PAIRS)
    config = tmp_path / "crash.toml"
    config.write_text(f"[app]\nratings_per_pair = {RATERS}\nmax_submissions_per_minute = 0\nsignup = \"open\"\n"
                      "signups_per_client_per_hour = 0\nsignups_per_client_per_day = 0\npairs_held_per_client = 0\n", encoding="utf-8")
    log = tmp_path / "app.log"
    port = free_port()
    with serving_app(db_file, config, port, log) as proc:
        url = f"http://127.0.0.1:{port}/"

        acked: list[tuple[str, str]] = []
        inflight: dict[str, str] = {}
        errors: list[str] = []
        stop = threading.Event()
        codes: dict = {}
        threads = [threading.Thread(target=stream, args=(url, f"crash-{i}", acked, inflight, stop, errors, codes),
                                    daemon=True) for i in range(RATERS)]
        try:
            for t in threads:
                t.start()
            deadline = time.monotonic() + BOUND_SECONDS
            while len(acked) < KILL_AFTER_ACKS:
                assert time.monotonic() < deadline, f"only {len(acked)} acknowledged in {BOUND_SECONDS} s: {errors}"
                assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)  # mid-stream: the raters are still submitting
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL
        finally:
            stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a client thread hung after the kill"
    acked_at_kill = list(acked)
    assert len(acked_at_kill) >= KILL_AFTER_ACKS
    assert len({r for r, _ in acked_at_kill}) == RATERS  # every rater had acknowledged submissions

    # Restart on the same database.
    port2 = free_port()
    with serving_app(db_file, config, port2, log):
        integrity, rows, twice = stored(db_file)
        print(f"\ncrash: {len(acked_at_kill)} acknowledged before SIGKILL, {len(rows)} stored, "
              f"{len(set(rows) - set(acked_at_kill))} stored but unacknowledged (in flight), integrity {integrity}")
        assert integrity == "ok"
        # every acknowledged rating is there, exactly once; at most the ones in flight at the kill were
        # stored without their client seeing the acknowledgement
        assert set(acked_at_kill) <= set(rows), sorted(set(acked_at_kill) - set(rows))
        assert len(rows) == len(set(rows)) and twice == 0
        assert len(rows) - len(acked_at_kill) <= RATERS
        assert set(rows) - set(acked_at_kill) <= set(inflight.items())

        # The restarted app serves the same raters: their progress counts the stored ratings, the pair they get
        # is one they have not rated, and a new submission is stored once.
        rater = "crash-0"
        done_before = sum(1 for r, _ in rows if r == rater)
        client = Client(f"http://127.0.0.1:{port2}/", verbose=False, analytics_enabled=False, ssl_verify=False,
                        httpx_kwargs={"timeout": 120})
        screen = client.predict("", "", codes[rater], api_name="/sign_in")  # her personal code, as after a reload
        assert any(isinstance(v, str) and f"**{done_before} / {PAIRS}**" in v for v in screen), screen
        client.predict(*loadbench.submit_args("after the restart"), api_name="/submit")
        integrity, rows_after, twice = stored(db_file)
        assert integrity == "ok" and twice == 0
        assert rows_after[:len(rows)] == rows and rows_after[len(rows):] == [(rater, "after the restart")]


def test_sigterm_closes_the_server_and_runs_the_final_sync(tmp_path):
    """Audit, 2026-12-02: a Space stops the app with SIGTERM, whose default ends the process at once, so serve's
    final push never ran and the ratings since the last sync (up to EVALKIT_SYNC_EVERY) were lost with the disk.
    Here the Hub cannot be reached (offline), so the final push's attempt shows as its logged failure."""
    db_file, config = open_pool(tmp_path, "term")
    port, log = free_port(), tmp_path / "term.log"
    env = {"EVALKIT_SYNC_REPO": "org/evalkit-ratings", "EVALKIT_SYNC_EVERY": "3600", "HF_HUB_OFFLINE": "1"}
    with serving_app(db_file, config, port, log, env) as proc:
        stop_app(proc, signal.SIGTERM)
    text = log.read_text(encoding="utf-8", errors="replace")
    # (the signal may come while launch() is still starting, before Gradio's loop that prints "closing server": the
    # interruption then leaves through launch(), and serve's clean-up runs all the same)
    assert proc.returncode is not None and "stopping on signal" in text
    assert "push to org/evalkit-ratings failed" in text and "local data kept" in text  # the final push ran


# Loaded by the app process (PYTHONPATH) before app.py: its Hub client is test_sync's FakeHub on a folder, so a served
# app's sync runs against a repo the test reads, never the Hub; the first `fail` uploads of the database fail.
_FAKE_HUB_SITE = """
import os
from pathlib import Path

import huggingface_hub
from test_sync import FakeHub


class _Hub(FakeHub):
    fail_db = int(os.environ.get("EVALKIT_TEST_HUB_FAIL", "0"))

    def upload_file(self, **kw):
        if kw["path_in_repo"] == "evalkit.db" and self.fail_db:
            self.fail_db -= 1
            raise ConnectionError("the Hub did not answer")
        return super().upload_file(**kw)


_hub = _Hub(Path(os.environ["EVALKIT_TEST_HUB"]))
huggingface_hub.HfApi = lambda *a, **k: _hub
"""


def test_a_rating_stored_just_before_sigterm_reaches_the_repo_and_survives_the_restart(tmp_path):
    """Sync audit, 2026-12-06: end to end, a served app on a Space's disk (the database wiped with it at a restart):
    a rating stored just before the SIGTERM, the periodic push an hour away and the Hub failing the final push's
    first try, is in the repo once the app has stopped, and the restart on an empty disk restores it."""
    db_file, config = open_pool(tmp_path, "sigsync")
    site, hub = tmp_path / "site", tmp_path / "hub"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_FAKE_HUB_SITE, encoding="utf-8")
    env = {"EVALKIT_SYNC_REPO": "org/evalkit-ratings", "EVALKIT_SYNC_EVERY": "3600", "EVALKIT_TEST_HUB": str(hub),
           "EVALKIT_TEST_HUB_FAIL": "1", "PYTHONPATH": f"{site}:{ROOT / 'tests'}:{ROOT}"}
    port, log = free_port(), tmp_path / "sigsync.log"
    with serving_app(db_file, config, port, log, env) as proc:
        client = loadbench.new_client(f"http://127.0.0.1:{port}/")
        loadbench.sign_in(client, "ana")
        client.predict(*loadbench.submit_args("just before the restart"), api_name="/submit")
        stop_app(proc, signal.SIGTERM)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert ("ana", "just before the restart") in stored(hub / "evalkit.db")[1], text[-3000:]
    assert "the final push to org/evalkit-ratings failed; trying again" in text
    for part in tmp_path.glob("sigsync.db*"):  # the Space's disk, wiped by the restart
        part.unlink()
    with serving_app(db_file, config, free_port(), log, env) as proc:
        stop_app(proc, signal.SIGTERM)
    assert ("ana", "just before the restart") in stored(db_file)[1]


def test_a_reload_after_a_restart_says_from_the_database_what_became_of_a_submission(tmp_path):
    """What became of a submission (the id its page made when Submit was pressed) was kept in the server's memory only,
    and a reload inferred the rest from the pair: a correction whose comment the server cleaned (an invisible
    character gone) was said "not saved" though it was stored, and a restart forgot every refusal and stored id. The id
    is now stored with its rating, in the same row; after a restart on the same database, a reload (a new page, signed
    in with the code the browser kept) is told the rating and the correction were stored. Another identity asking
    about her ids, on a pair it was shown too, is told what it is told of any id; and the export leaves the ids out."""
    import json
    import re
    import secrets

    import pyarrow.parquet as pq
    from test_security import Raw, answers

    from evalkit.publish.export import export, split_file
    from evalkit.rating.queue import pair_view
    from evalkit.store import open_db
    from evalkit.ui.rate import texts_digest
    from evalkit.ui.words import word

    db_file, config, log = tmp_path / "fate.db", tmp_path / "fate.toml", tmp_path / "fate.log"
    loadbench.build_pool(db_file, 1)  # one pair: the other identity is served the pair she rated
    config.write_text("[app]\nratings_per_pair = 2\nmax_submissions_per_minute = 0\nsignup = \"open\"\n"
                      "signups_per_client_per_hour = 0\nsignups_per_client_per_day = 0\n", encoding="utf-8")

    def status(msg: dict) -> str:
        assert Raw.error(msg) == "", Raw.error(msg)
        return msg["output"]["data"][0]

    port = free_port()
    with serving_app(db_file, config, port, log) as proc:
        ann = Raw(f"http://127.0.0.1:{port}/")
        signed = json.dumps(ann.call("sign_in", [None, "ann", "", ""]), ensure_ascii=False)
        code = re.search(r"`(\d+\.[A-Za-z0-9_-]+)`", signed).group(1)
        rating, correction = secrets.token_hex(16), secrets.token_hex(16)
        status(ann.call("sending", [None, rating]))
        status(ann.call("submit", [None, *answers()]))
        status(ann.call("correct", [None]))
        status(ann.call("sending", [None, correction]))
        corrected = answers("fail", "pass", "B", comment="改\u200b一下")  # stored without the zero-width space
        status(ann.call("submit", [None, *corrected]))
        proc.kill()  # a crash, not a shutdown: nothing of its memory is written anywhere
        proc.wait(timeout=30)
    db = open_db(db_file)
    (pair_id,) = {r[0] for r in db.execute("SELECT pair_id FROM ratings")}
    assert [r[0] for r in db.execute("SELECT submission_id FROM ratings ORDER BY id")] == [rating, correction]
    view = pair_view(db, pair_id)
    db.conn.close()

    def kept(sub: str, values: list, correcting: bool) -> str:
        """What the page kept of answers on their way (rate._SENT_DRAFT)."""
        return json.dumps({"lang": "en", "pair": texts_digest(view.text_a, view.text_b), "sent": True, "sub": sub,
                           "correcting": correcting, "values": values})

    port = free_port()
    with serving_app(db_file, config, port, log):  # restarted on the same database: nothing in memory
        reload = Raw(f"http://127.0.0.1:{port}/")
        status(reload.call("sign_in", [None, "", "", code]))
        assert status(reload.call("draft_fate", [None, kept(rating, answers(), False)])) == word("draft_stored", "en")
        assert status(reload.call("draft_fate", [None, kept(correction, corrected, True)])) == word(
            "draft_correction_stored", "en")
        bob = Raw(f"http://127.0.0.1:{port}/")  # an attacker who holds her ids, on the pair she rated
        assert view.text_a in json.dumps(bob.call("sign_in", [None, "bob", "", ""]), ensure_ascii=False)
        told = {status(bob.call("draft_fate", [None, kept(sub, corrected, True)]))
                for sub in (rating, correction, secrets.token_hex(16))}
        assert len(told) == 1 and not told & {word("draft_stored", "en"), word("draft_correction_stored", "en")}, told

    out = tmp_path / "export"
    export(open_db(db_file), out)
    assert "submission_id" not in pq.read_table(split_file(out, "ratings")).column_names
    for path in out.rglob("*"):
        if path.is_file():
            assert rating.encode() not in path.read_bytes() and correction.encode() not in path.read_bytes(), path


def test_the_day_s_new_names_of_a_client_hold_across_a_restart(tmp_path):
    """Attacker audit round 6: the new names one client made per hour and per day were counted in memory, and a restart
    (a Space restarts often; an organiser restarts a local app) forgot them: the client made a day's names again.
    They are now counted from the names it made, kept in the database with a keyed hash of its client, never its
    address; the export leaves them out, as it leaves the raters table out."""
    from test_security import Raw

    from evalkit.publish.export import export
    from evalkit.store import open_db

    db_file, config, log = tmp_path / "names.db", tmp_path / "names.toml", tmp_path / "names.log"
    loadbench.build_pool(db_file, 2)
    config.write_text("[app]\nsignup = \"open\"\nsignups_per_client_per_hour = 5\nsignups_per_client_per_day = 2\n",
                      encoding="utf-8")

    def sign_up(url: str, name: str) -> str:
        return Raw.error(Raw(url).call("sign_in", [None, name, "", ""]))

    port = free_port()
    with serving_app(db_file, config, port, log) as proc:
        url = f"http://127.0.0.1:{port}/"
        assert sign_up(url, "r1") == "" and sign_up(url, "r2") == ""
        stop_app(proc)
    port = free_port()
    with serving_app(db_file, config, port, log) as proc:  # restarted on the same database: nothing in memory
        refused = sign_up(f"http://127.0.0.1:{port}/", "r3")
        assert "too many new names" in refused and "2 in the last day (limit 2)" in refused, refused
        stop_app(proc)
    db = open_db(db_file)
    kept = [r["signup_client"] for r in db.query("SELECT signup_client FROM raters ORDER BY id")]
    assert [r["name"] for r in db.query("SELECT name FROM raters ORDER BY id")] == ["r1", "r2"]
    assert len(set(kept)) == 1 and kept[0] and "127.0.0.1" not in kept[0]  # one client, as a keyed hash
    out = tmp_path / "export"
    export(db, out)
    for path in out.rglob("*"):
        if path.is_file():
            assert kept[0].encode() not in path.read_bytes() and b"127.0.0.1" not in path.read_bytes(), path


def test_failed_sign_ins_of_a_client_hold_across_a_restart_and_a_correct_code_still_signs_in(tmp_path):
    """Attacker audit round 7: failed sign-ins were counted in memory, and a restart (a Space restarts often; one can be
    waited for) forgot them: a client guessing personal codes got fresh attempts, and no wait, after each. The counts
    are now kept in the database under a keyed hash of the client and of the claimed owner (never the address), so the
    restarted app still makes the guesser wait, a correct code still signs in, and the export leaves them out."""
    from test_security import Raw

    from evalkit.publish.export import export
    from evalkit.rating import roster
    from evalkit.store import open_db

    db_file, config, log = tmp_path / "guess.db", tmp_path / "guess.toml", tmp_path / "guess.log"
    loadbench.build_pool(db_file, 2)
    config.write_text("[app]\n", encoding="utf-8")
    code = roster.add(open_db(db_file), "ann").code
    wrong = code[:-1] + ("A" if code[-1] != "A" else "B")  # her id, a well-formed secret, not hers

    def sign_in(url: str, text: str) -> str:
        return Raw.error(Raw(url).call("sign_in", [None, "", "", text]))

    port = free_port()
    with serving_app(db_file, config, port, log) as proc:
        said = [sign_in(f"http://127.0.0.1:{port}/", wrong) for _ in range(12)]
        assert "too many sign-in attempts" not in said[0] and "too many sign-in attempts" in said[-1], said
        stop_app(proc)
    port = free_port()
    with serving_app(db_file, config, port, log) as proc:  # restarted on the same database: nothing in memory
        url = f"http://127.0.0.1:{port}/"
        # the restart's own seconds may have let one guess through (its wait was short: a refused guess is not
        # counted, tests/test_security.py::test_a_flood_of_wrong_codes_held_back_writes_nothing), but not a fresh 5
        refused = [sign_in(url, wrong) for _ in range(2)]
        assert "too many sign-in attempts" in refused[-1], refused
        assert sign_in(url, code) == ""  # her own code is never held back
        stop_app(proc)
    db = open_db(db_file)
    kept = [r["key"] for r in db.query("SELECT key FROM limit_counts")]
    assert len(kept) == 2 and not any("127.0.0.1" in k or "rater:" in k for k in kept)  # client, owner: keyed hashes
    out = tmp_path / "export"
    export(db, out)
    for path in out.rglob("*"):
        if path.is_file():
            assert not any(k.encode() in path.read_bytes() for k in kept), path


def test_the_pairs_a_client_s_names_hold_still_count_after_a_restart(tmp_path):
    """Attacker audit round 6: the pairs on screen under one client's sign-up names were counted from the names that
    signed in from it since the app started (memory): after a restart its names' pairs were still held (30 minutes, in
    the database), and a further name of that client was served another. The names it made are now counted too (from
    the database: tests/test_crash.py::test_the_day_s_new_names_of_a_client_hold_across_a_restart)."""
    import json

    from test_security import Raw

    db_file, config, log = tmp_path / "held.db", tmp_path / "held.toml", tmp_path / "held.log"
    loadbench.build_pool(db_file, 3)
    config.write_text("[app]\nsignup = \"open\"\npairs_held_per_client = 1\n", encoding="utf-8")

    def shown(msg: dict) -> str:
        assert Raw.error(msg) == "", Raw.error(msg)
        return json.dumps(msg["output"], ensure_ascii=False)

    port = free_port()
    with serving_app(db_file, config, port, log) as proc:
        assert "at most 1 at once" not in shown(Raw(f"http://127.0.0.1:{port}/").call("sign_in", [None, "s1", "", ""]))
        stop_app(proc)
    assert held(db_file) == 1  # s1's pair, held in the database
    port = free_port()
    with serving_app(db_file, config, port, log) as proc:  # restarted: nothing in memory
        screen = shown(Raw(f"http://127.0.0.1:{port}/").call("sign_in", [None, "s2", "", ""]))
        assert "最多占用 1 对" in screen, screen  # the client's names hold their one pair: s2 is served none
        stop_app(proc)
    assert held(db_file) == 1


def held(db_file: Path) -> int:
    """Pairs shown to a rater (assignments)."""
    with contextlib.closing(sqlite3.connect(db_file)) as conn:
        return conn.execute("SELECT COUNT(*) FROM assignments").fetchone()[0]


def test_a_reload_after_a_restart_says_a_submission_that_reached_the_server_was_refused(tmp_path):
    """A refused submission's reason was kept in the server's memory only: a page that had not heard the refusal (it
    reloaded while the answer was on its way) and reloaded after a restart was told its rating "had not reached the
    server", to submit again, though it had reached it and been refused. The refusal is now kept in the database: after
    a restart on the same database the reload says it was refused, and why; another identity asking about the id is
    told nothing of it."""
    import json
    import re
    import secrets

    from test_security import Raw, answers

    from evalkit.rating.queue import pair_view
    from evalkit.store import open_db
    from evalkit.ui.rate import texts_digest
    from evalkit.ui.words import word

    db_file, config, log = tmp_path / "refused.db", tmp_path / "refused.toml", tmp_path / "refused.log"
    loadbench.build_pool(db_file, 1)
    config.write_text("[app]\nratings_per_pair = 2\nmax_submissions_per_minute = 0\nsignup = \"open\"\n"
                      "signups_per_client_per_hour = 0\nsignups_per_client_per_day = 0\n", encoding="utf-8")
    sub, sent = secrets.token_hex(16), answers(preference="maybe")  # refused: no such preference

    port = free_port()
    with serving_app(db_file, config, port, log) as proc:
        ann = Raw(f"http://127.0.0.1:{port}/")
        signed = json.dumps(ann.call("sign_in", [None, "ann", "", ""]), ensure_ascii=False)
        code = re.search(r"`(\d+\.[A-Za-z0-9_-]+)`", signed).group(1)
        assert Raw.error(ann.call("sending", [None, sub])) == ""
        refusal = Raw.error(ann.call("submit", [None, *sent]))
        assert "is not A, B or tie" in refusal, refusal
        proc.kill()  # a crash: nothing of its memory is written anywhere
        proc.wait(timeout=30)
    db = open_db(db_file)
    (pair_id,) = {r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study'")}
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 0
    view = pair_view(db, pair_id)
    db.conn.close()
    kept = json.dumps({"lang": "en", "pair": texts_digest(view.text_a, view.text_b), "sent": True, "sub": sub,
                       "back": True, "correcting": False, "values": sent})  # the pair back on her screen

    port = free_port()
    with serving_app(db_file, config, port, log):  # restarted on the same database: nothing in memory
        reload = Raw(f"http://127.0.0.1:{port}/")
        assert view.text_a in json.dumps(reload.call("sign_in", [None, "", "", code]), ensure_ascii=False)
        said = reload.call("draft_fate", [None, kept])["output"]["data"][0]
        assert said.startswith(word("draft_sent_refused", "en", why="").split(":")[0]), said
        assert "is not A, B or tie" in said and said != word("draft_sent_back", "en")
        bob = Raw(f"http://127.0.0.1:{port}/")
        assert view.text_a in json.dumps(bob.call("sign_in", [None, "bob", "", ""]), ensure_ascii=False)
        told = bob.call("draft_fate", [None, kept])["output"]["data"][0]
        assert "is not A, B or tie" not in json.dumps(told, ensure_ascii=False), told
