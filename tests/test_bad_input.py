"""Bad input, through the real app (gradio_client, and Chromium where what matters is what a page shows) and
the CLI: overlong text, HTML and script in names and comments, forged or replayed submissions, the same rater
twice, a missing or corrupt database, unknown prompt ids, models that fail to load. Each is refused with one
clear message, and nothing stored is lost or changed.

Library-level cases already covered elsewhere are not repeated here: tests/test_ratings.py (forged pair id
on submit, replayed client token, same rater twice, overlong comment), tests/test_store.py (corrupt file),
tests/test_cli.py (missing model for `run`), tests/test_app_client.py (locked after submit, a second tab of
the same rater, no pair on screen, not signed in), tests/test_report_export.py (HTML in the report)."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from apphelpers import answer_all, chromium_page, served, shown_texts, sign_in
from click.testing import CliRunner
from gradio_client.exceptions import AppError
from test_app_client import Tab

from evalkit.cli import cli
from evalkit.config import AppConfig, from_dict
from evalkit.errors import EvalkitError
from evalkit.task.prompts import CRITERIA
from evalkit.rating.queue import (
    RatingError, RatingInput, correct_rating, pair_view, reveal, skip_pair, submit_rating,
)
from evalkit.store import generation, open_db
from evalkit.ui.rate import FORM_KEYS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import loadbench  # noqa: E402  (the synthetic pair pool: rating needs no model)

PAIRS = 3
LIMIT = 50  # app.max_comment_chars in these tests
EVIL_NAME = '<img src=x onerror="window.__xss=1">**b** [l](javascript:window.__xss=3)'
EVIL_COMMENT = "<script>window.__xss=2</script><img src=x onerror=\"window.__xss=4\"> & 'q'"


def config(tmp_path, **app):
    """Defaults plus [app] keys; the models point at a folder that does not exist (only the live tab loads them)."""
    missing = str(tmp_path / "no-such-model")
    return from_dict({"models": {"target": missing, "draft": missing, "device": "cpu"},
                      "app": {"ratings_per_pair": 2, "max_comment_chars": LIMIT, "max_submissions_per_minute": 0,
                              "signup": "open", "signups_per_client_per_hour": 0, "signups_per_client_per_day": 0,
                              "pairs_held_per_client": 0} | app},
                     str(tmp_path / "bad-input.toml"))


@pytest.fixture
def db_file(tmp_path) -> Path:
    path = tmp_path / "bad.db"
    loadbench.build_pool(path, PAIRS)
    return path


def q(db_file: Path, sql: str, params=()) -> list[tuple]:
    conn = sqlite3.connect(db_file)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def snapshot(db_file: Path) -> dict:
    """Row counts of every table: 'nothing lost, nothing written' is this staying equal."""
    tables = [r[0] for r in q(db_file, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: q(db_file, f"SELECT COUNT(*) FROM [{t}]")[0][0] for t in tables}


def answers(v="pass"):
    return {c: v for c in CRITERIA}


# --- overlong comments ---------------------------------------------------------------------------------

def test_overlong_comment_skip_reason_and_material_are_refused_through_the_app(tmp_path, db_file):
    with served(config(tmp_path), db_file) as url:
        tab = Tab(url)
        tab.sign_in("ann")
        before = snapshot(db_file)  # signed in (an identity, the pair shown to her): from here on, nothing is stored
        with pytest.raises(AppError, match=f"comment is {LIMIT + 1} characters; the limit is {LIMIT}"):
            tab.submit(comment="x" * (LIMIT + 1))
        # far over the limit: refused before any work on it (the bound is the server's, whatever the browser sends)
        with pytest.raises(AppError, match=f"comment is 10000 characters; the limit is {LIMIT}.*shorten it"):
            tab.submit(comment="界" * 10_000)
        # a megabyte never reaches the app: the request is refused at the door (evalkit/ui/guard.py)
        import httpx

        with pytest.raises(httpx.HTTPStatusError, match="413"):
            tab.submit(comment="界" * 1_000_000)
        with pytest.raises(AppError, match=f"skip reason is {LIMIT + 1} characters; the limit is {LIMIT}"):
            tab.call("/skip", "y" * (LIMIT + 1))
        # the live tab's typed material has the same bound, checked before any model is loaded
        with pytest.raises(AppError, match=f"the material is {LIMIT + 1} characters; the limit is {LIMIT}"):
            tab.call("/live", "writing-01", "m" * (LIMIT + 1))
        assert snapshot(db_file) == before  # nothing stored by any refused submission

        # at the limit it is accepted, stored as typed
        tab.submit(comment="z" * LIMIT)
    assert q(db_file, "SELECT rater, comment FROM ratings") == [("ann", "z" * LIMIT)]


# --- HTML and script in names and comments ---------------------------------------------------------------

@pytest.mark.browser
def test_html_in_rater_names_and_comments_shows_as_typed_text_in_the_browser(tmp_path, db_file):
    """The sign-in line (Markdown), the error toast (HTML) and the locked comment box show the characters typed;
    no element is injected and no script runs."""
    cfg = config(tmp_path, allowed_raters=[EVIL_NAME], max_comment_chars=500)
    other = EVIL_NAME.replace("__xss=1", "__xss=5")
    with served(cfg, db_file) as url, chromium_page() as page:
        from playwright.sync_api import expect

        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        # not on the allow-list: the refusal quotes the name, as text
        sign_in(page, url, other)
        toast = page.locator("[data-testid='toast-text']").first
        expect(toast).to_contain_text("is not on this study's allow-list")
        assert f"rater '{other}' is not on" in toast.inner_text()
        assert toast.locator("img, a, script, strong").count() == 0

        page.reload()
        sign_in(page, url, EVIL_NAME)
        who = page.locator("#rate-who")
        expect(who).to_contain_text("进度")
        assert f"已登录：{EVIL_NAME} · 进度 0 / {PAIRS}" in who.inner_text().replace("\n", " ")
        assert who.locator("img, a, script").count() == 0 and who.locator("strong").count() == 2  # our own bold only

        shown_texts(page)
        answer_all(page)
        page.locator("#comment").locator("textarea, input").first.fill(EVIL_COMMENT)
        page.click("#submit")
        expect(page.locator("#reveal")).to_contain_text("揭晓")
        # the locked form shows the stored comment as the characters typed
        assert page.locator("#comment").locator("textarea, input").first.input_value() == EVIL_COMMENT
        assert page.evaluate("window.__xss") is None and dialogs == []
        assert page.locator("[onerror]").count() == 0 and page.locator("a[href^='javascript']").count() == 0
    assert q(db_file, "SELECT rater, comment FROM ratings") == [(EVIL_NAME, EVIL_COMMENT)]  # stored raw


def test_html_in_rater_text_stays_inert_in_the_report_and_the_export_card(tmp_path, db_file):
    import pyarrow.parquet as pq

    from evalkit.publish.export import export, split_file
    from evalkit.publish.report import build_report

    db = open_db(db_file)
    p1, p2 = (r[0] for r in q(db_file, "SELECT id FROM pairs ORDER BY id LIMIT 2"))
    submit_rating(db, AppConfig(), RatingInput(p1, EVIL_NAME, answers(), answers("fail"), "A", comment=EVIL_COMMENT))
    skip_pair(db, AppConfig(), EVIL_NAME, p2, EVIL_COMMENT)
    raw = ["<script>", "<img src=x", "onerror=", "javascript:"]

    page = build_report(db, tmp_path / "report").read_text(encoding="utf-8")
    assert not [s for s in raw if s in page]

    export(db, tmp_path / "named", keep_rater_names=True, keep_comments=True)
    ratings = pq.read_table(split_file(tmp_path / "named", "ratings")).to_pylist()
    # the data keeps the raw strings (it is data, not markup) ...
    assert {(r["rater"], r["comment"], r["skip_reason"]) for r in ratings} == {
        (EVIL_NAME, EVIL_COMMENT, ""), (EVIL_NAME, "", EVIL_COMMENT)}
    # ... and the dataset card (rendered as Markdown/HTML on the Hub) does not embed any of it
    card = (tmp_path / "named" / "README.md").read_text(encoding="utf-8")
    assert not [s for s in raw if s in card] and "window.__xss" not in card

    export(db, tmp_path / "pseudo")  # the default export does not even keep the name
    assert EVIL_NAME not in {r["rater"] for r in pq.read_table(split_file(tmp_path / "pseudo", "ratings")).to_pylist()}


# --- forged or replayed ids and submissions ----------------------------------------------------------------

def test_the_api_names_no_pair_and_replayed_submissions_are_refused(tmp_path, db_file):
    with served(config(tmp_path), db_file) as url:
        tab = Tab(url)
        # Nothing a client sends names a pair, a generation, a rating or a rater: they live in the server-side
        # session (gr.State), so there is no id to forge through the API.
        for api in ("/submit", "/skip", "/correct", "/next_pair"):
            params = " ".join(tab.params[api]).lower()
            assert not any(w in params for w in ("pair", "generation", "rating_id", "rater", "token", "session")), api
        assert len(tab.params["/submit"]) == len(FORM_KEYS)
        tab.sign_in("ann")
        tab.submit(preference="A")
        # the same submission again (a replay, a double click): refused, nothing added
        for _ in range(2):
            with pytest.raises(AppError, match="already stored and locked — fix: use Correct"):
                tab.submit(preference="A")
        with pytest.raises(AppError, match="no unrated pair on screen to skip"):
            tab.call("/skip", "replayed skip")
        # a correction is saved once; replaying it is refused too
        tab.call("/correct")
        tab.submit(preference="B")
        with pytest.raises(AppError, match="already stored and locked"):
            tab.submit(preference="B")
        # moving on without rating is refused, so a rater cannot leave pairs half-seen to get others
        tab.call("/next_pair")
        with pytest.raises(AppError, match="this pair is not rated yet"):
            tab.call("/next_pair")
    assert q(db_file, "SELECT rater, preference, supersedes IS NOT NULL FROM ratings ORDER BY id") == [
        ("ann", "A", 0), ("ann", "B", 1)]


@pytest.mark.parametrize("call, needle", [
    (lambda db, pid, rid: skip_pair(db, AppConfig(), "ann", "p0000000000000000", "why"), "pair 'p0000000000000000' does not exist"),
    (lambda db, pid, rid: pair_view(db, "p' OR 1=1 --"), "pair 'p' OR 1=1 --' does not exist"),
    (lambda db, pid, rid: reveal(db, "forged"), "pair 'forged' does not exist"),
    (lambda db, pid, rid: submit_rating(db, AppConfig(), RatingInput(123, "ann", answers(), answers(), "A")),
     "pair '123' does not exist"),
    (lambda db, pid, rid: correct_rating(db, AppConfig(), 99999, RatingInput(pid, "ann", answers(), answers(), "A")),
     "rating 99999 does not exist"),
    (lambda db, pid, rid: correct_rating(db, AppConfig(), rid, RatingInput("forged", "ann", answers(), answers(), "A")),
     f"rating {{rid}} belongs to another rater or pair"),
    (lambda db, pid, rid: generation(db, 99999), "generation 99999 does not exist"),
])
def test_forged_pair_rating_and_generation_ids_are_refused_by_the_library(db_file, call, needle):
    db = open_db(db_file)
    pid = q(db_file, "SELECT id FROM pairs ORDER BY id LIMIT 1")[0][0]
    rid = submit_rating(db, AppConfig(), RatingInput(pid, "ann", answers(), answers(), "A"))
    before = snapshot(db_file)
    with pytest.raises(EvalkitError) as e:
        call(db, pid, rid)
    assert needle.replace("{rid}", str(rid)) in str(e.value)
    assert snapshot(db_file) == before


# --- the same rater twice ------------------------------------------------------------------------------------

def test_rating_and_skipping_the_same_pair_are_refused_in_either_order(db_file):
    db = open_db(db_file)
    p1, p2 = (r[0] for r in q(db_file, "SELECT id FROM pairs ORDER BY id LIMIT 2"))
    submit_rating(db, AppConfig(), RatingInput(p1, "ann", answers(), answers(), "A"))
    with pytest.raises(RatingError, match="already rated or skipped"):
        skip_pair(db, AppConfig(), "ann", p1, "changed my mind")
    skip_pair(db, AppConfig(), "ann", p2, "cannot judge")
    with pytest.raises(RatingError, match="(?s)already rated or skipped.*use Correct"):
        submit_rating(db, AppConfig(), RatingInput(p2, "ann", answers(), answers(), "B"))
    assert q(db_file, "SELECT pair_id, kind FROM ratings ORDER BY id") == [(p1, "rating"), (p2, "skip")]


def test_a_rater_signing_in_again_never_gets_a_pair_they_rated(tmp_path, db_file):
    with served(config(tmp_path), db_file) as url:
        first = Tab(url)
        first.sign_in("ann")
        first.submit()
        rated = q(db_file, "SELECT pair_id FROM ratings")[0][0]
        for _ in range(PAIRS - 1):  # new tabs, one after the other: each gets a pair ann has not met
            tab = Tab(url)
            tab.sign_in("ann")
            tab.submit()
        last = Tab(url).sign_in("ann")
        assert "全部完成" in last["done"] and f"{PAIRS} / {PAIRS}" in last["who"]
    pairs = [r[0] for r in q(db_file, "SELECT pair_id FROM ratings WHERE rater = 'ann'")]
    assert pairs[0] == rated and len(pairs) == len(set(pairs)) == PAIRS


# --- a missing or corrupt database ---------------------------------------------------------------------------

def app_py(tmp_path, *args) -> subprocess.CompletedProcess:
    cfg = tmp_path / "app.toml"
    cfg.write_text("[app]\nratings_per_pair = 2\n", encoding="utf-8")
    return subprocess.run([sys.executable, str(ROOT / "app.py"), "--config", str(cfg), "--host", "127.0.0.1",
                           "--port", "9", *args], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, GRADIO_ANALYTICS_ENABLED="False"))


def corrupt(path: Path) -> bytes:
    data = b"SQLite format 3\x00" + b"\x07not a real page\x00" * 300  # a damaged header, not just any text
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("prepare", [False, True])
def test_app_refuses_a_corrupt_database_and_leaves_it_as_it_was(tmp_path, prepare):
    bad = tmp_path / "corrupt.db"
    data = corrupt(bad)
    done = app_py(tmp_path, "--db", str(bad), *([] if prepare else ["--no-prepare"]))
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"Error: database {bad} cannot be opened") and "move it aside" in done.stderr
    assert "Traceback" not in done.stderr
    assert bad.read_bytes() == data
    assert not (tmp_path / "corrupt.db-wal").exists() or (tmp_path / "corrupt.db-wal").stat().st_size == 0


def test_app_with_no_prepare_refuses_a_missing_database_instead_of_serving_an_empty_one(tmp_path):
    missing = tmp_path / "typo.db"
    done = app_py(tmp_path, "--db", str(missing), "--no-prepare")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"Error: database {missing} does not exist") and "--no-prepare" in done.stderr
    assert not missing.exists()


@pytest.mark.parametrize("command", [["aggregate"], ["report", "--out", "OUT"], ["export", "--out", "OUT"]])
def test_cli_refuses_a_missing_or_corrupt_database(tmp_path, command):
    args = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    missing = tmp_path / "missing.db"
    r = CliRunner().invoke(cli, [*args, "--db", str(missing)])
    assert r.exit_code == 1 and f"Error: database {missing} does not exist" in r.output and "fix:" in r.output
    assert not missing.exists() and not (tmp_path / "out").exists()
    empty = tmp_path / "empty.db"  # SQLite takes an empty file as a new database: it was given evalkit's tables
    empty.touch()
    r = CliRunner().invoke(cli, [*args, "--db", str(empty)])
    assert r.exit_code == 1 and f"Error: database {empty} is an empty file" in r.output and empty.stat().st_size == 0

    bad = tmp_path / "corrupt.db"
    data = corrupt(bad)
    r = CliRunner().invoke(cli, [*args, "--db", str(bad)])
    assert r.exit_code == 1 and f"Error: database {bad} cannot be opened" in r.output and "move it aside" in r.output
    assert "Traceback" not in r.output and bad.read_bytes() == data


@pytest.mark.parametrize("command", [["report"], ["export"]])
def test_cli_names_an_output_folder_it_cannot_make(tmp_path, db_file, command):
    blocker = tmp_path / "a-file"  # a file where the folder's parent should be: no folder can be made under it
    blocker.write_text("x", encoding="utf-8")
    out = blocker / "out"
    r = CliRunner().invoke(cli, [*command, "--db", str(db_file), "--out", str(out)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert f"Error: cannot create the folder {out}" in r.output and "pass --out a folder you can write to" in r.output
    assert "Traceback" not in r.output and blocker.read_text(encoding="utf-8") == "x"


@pytest.mark.parametrize("command", [["report"], ["export"]])
def test_an_empty_out_is_refused_and_writes_nothing(tmp_path, db_file, command, monkeypatch):
    """`--out ''` wrote the report or the export into the current folder (audit, 2026-12-04)."""
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for empty in ("", "  "):
        r = CliRunner().invoke(cli, [*command, "--db", str(db_file), "--out", empty])
        assert r.exit_code == 1 and "Error: --out is empty" in r.output and "--out ./out" in r.output, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def _dump(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


@pytest.mark.parametrize("command", [["report"], ["export"]])
def test_a_refused_output_folder_leaves_the_database_as_it_was(tmp_path, command):
    """report and export look at the study first, and the look freezes a complete study's decision and caches the
    pre-screen's verdicts. An output folder they could not use (a file in the way, another program's page or card)
    was refused only after that look, so the refusal changed the database; now it comes first."""
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=30, margin=0.2, min_raters=10), encoding="utf-8")
    path = tmp_path / "s.db"
    db = open_db(path)
    build_study(db, SyntheticStudy(pairs=30, raters_per_pair=3, raters=10, gate_path=str(gate), seed=2))
    db.conn.close()
    before = _dump(path)
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    foreign = tmp_path / "theirs"
    foreign.mkdir()
    (foreign / ("index.html" if command == ["report"] else "README.md")).write_text("mine", encoding="utf-8")
    for out in (blocker / "out", foreign):
        r = CliRunner().invoke(cli, [*command, "--db", str(path), "--out", str(out)])
        assert r.exit_code == 1 and "Traceback" not in r.output and "fix:" in r.output, r.output
        assert _dump(path) == before, out
    # the look those commands take does write: the refusals above kept it from happening
    r = CliRunner().invoke(cli, ["aggregate", "--db", str(path)])
    assert r.exit_code == 0 and q(path, "SELECT COUNT(*) FROM decisions") == [(1,)]


@pytest.mark.parametrize("command", [["aggregate"], ["report", "--out", "OUT"], ["raters", "list"]])
def test_a_database_changed_outside_evalkit_or_read_only_gets_a_clear_error(tmp_path, db_file, command, monkeypatch):
    """A table dropped by hand, and a file the command may not write, reached the user as sqlite3's traceback."""
    args = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    broken = tmp_path / "broken.db"
    broken.write_bytes(db_file.read_bytes())
    conn = sqlite3.connect(broken)
    conn.execute("DROP TABLE studies" if command[0] != "raters" else "DROP TABLE raters")
    conn.commit()
    conn.close()
    r = CliRunner().invoke(cli, [*args, "--db", str(broken)])
    assert r.exit_code == 1 and "Traceback" not in r.output and isinstance(r.exception, SystemExit), r.output
    assert f"Error: database {broken} lacks part of evalkit's tables (no such table:" in r.output
    assert "fix: restore it from a backup" in r.output
    # read-only: the first write fails as sqlite3 fails it on a file without write permission (simulated: the tests
    # run as root, whom file modes do not stop)
    import evalkit.store
    import evalkit.store.raters

    def refuse(*_a, **_k):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(evalkit.store, "insert_prescreen", refuse)  # aggregate's first write
    monkeypatch.setattr(evalkit.store.raters, "write_transaction", refuse)  # a new rater's
    if command[0] == "raters":
        args = ["raters", "add", "newbie"]
    r = CliRunner().invoke(cli, [*args, "--db", str(db_file)])
    assert r.exit_code == 1 and "Traceback" not in r.output and isinstance(r.exception, SystemExit), r.output
    assert f"Error: database {db_file} is read-only (attempt to write a readonly database)" in r.output
    assert "fix: make the file and its folder writable" in r.output


def test_a_read_only_copy_in_rollback_journal_mode_exports_when_nothing_needs_storing(db_file, tmp_path, monkeypatch):
    """Export audit, 2026-12-04 (D5): a read-only snapshot (VACUUM INTO writes one in rollback-journal mode) failed at
    its switch to WAL, and the error called the file possibly corrupt and advised starting a new database: wrong
    advice for the only copy of a study's ratings. Now it is read as it is: a copy whose decision is frozen and whose
    export salt is stored exports; one that must store something says it is read-only, with the fix. (Read-only as
    SQLite opens a file it may not write, through its URI mode=ro: the tests run as root, whom file modes do not
    stop.)"""
    import evalkit.store.database as database

    out = tmp_path / "first"
    r = CliRunner().invoke(cli, ["export", "--db", str(db_file), "--out", str(out)])  # freezes, stores the salt
    assert r.exit_code == 0, r.output
    fresh = tmp_path / "fresh.db"  # a copy of a database never exported: no salt stored yet
    with sqlite3.connect(db_file) as conn:
        conn.execute("DELETE FROM export_salt")
        conn.commit()
        conn.execute("VACUUM INTO ?", [str(fresh)])
    r = CliRunner().invoke(cli, ["export", "--db", str(db_file), "--out", str(out)])  # stores it again
    assert r.exit_code == 0, r.output
    copy = tmp_path / "snapshot.db"
    with sqlite3.connect(db_file) as conn:
        conn.execute("VACUUM INTO ?", [str(copy)])
    connect = sqlite3.connect
    read_only = {str(copy), str(fresh)}  # these files; the export's own copy of one, in a temporary folder, is not
    monkeypatch.setattr(database.sqlite3, "connect", lambda path, **kw: connect(f"file:{path}?mode=ro", uri=True, **kw)
                        if str(path) in read_only else connect(path, **kw))
    before = copy.read_bytes()
    r = CliRunner().invoke(cli, ["export", "--db", str(copy), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert copy.read_bytes() == before and (tmp_path / "out" / "README.md").exists()
    # the same export as the writable original's: its files are named by their content's hash
    assert sorted(p.name for p in (tmp_path / "out" / "data").iterdir()) == sorted(p.name for p in (out / "data").iterdir())
    r = CliRunner().invoke(cli, ["export", "--db", str(fresh), "--out", str(tmp_path / "out2")])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert f"database {fresh} is read-only (attempt to write a readonly database)" in r.output
    assert "copy it somewhere writable" in r.output and "corrupt" not in r.output
    assert not (tmp_path / "out2").exists()


def test_the_app_refuses_a_read_only_database_at_its_start(db_file, tmp_path, monkeypatch):
    """A read-only copy is now read as it is (an export of it may need no write), so the app, which stores every
    rating, checks at its start: a rater's first Submit would have been the first to find out."""
    import evalkit.store.database as database
    from evalkit.config import load_config
    from evalkit.errors import EvalkitError
    from evalkit.ui import build_app

    connect = sqlite3.connect
    monkeypatch.setattr(database.sqlite3, "connect", lambda path, **kw: connect(f"file:{path}?mode=ro", uri=True, **kw))
    before = db_file.read_bytes()
    with pytest.raises(EvalkitError, match=f"database {db_file} is read-only") as e:
        build_app(load_config(None), db_file)
    assert "copy it somewhere writable" in str(e.value) and db_file.read_bytes() == before
    monkeypatch.undo()
    build_app(load_config(None), db_file)  # writable: the probe leaves nothing behind
    with sqlite3.connect(db_file) as conn:
        assert not conn.execute("SELECT name FROM sqlite_master WHERE name = '_evalkit_write_probe'").fetchall()


def test_generate_refuses_a_bad_gate_file_before_it_makes_a_database(tmp_path):
    """The gate file was read after the database was opened, so a refused gate left a new, empty database behind."""
    gate = tmp_path / "gate.toml"
    gate.write_text("bogus = 1\n", encoding="utf-8")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'gate_file = "{gate}"\n', encoding="utf-8")
    new = tmp_path / "new.db"
    r = CliRunner().invoke(cli, ["generate", "--config", str(cfg), "--db", str(new)])
    assert r.exit_code == 1 and f"Error: gate file {gate}: unknown key(s) bogus" in r.output, r.output
    assert not new.exists()


def test_prepare_refused_for_a_missing_model_folder_leaves_no_folder_behind(tmp_path):
    """A preparation claims its database as an app's start does (`<db>.start.lock`, attacker audit round 6); taking
    that claim made the database's folder, so a refusal a moment later (a model folder that is not there) left a new
    folder and a lock file behind for a typo in --db."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[models]\ntarget = "{tmp_path / "no-such-model"}"\n', encoding="utf-8")
    new = tmp_path / "typo" / "new.db"
    r = CliRunner().invoke(cli, ["prepare", "--config", str(cfg), "--db", str(new)])
    assert r.exit_code == 1 and "no-such-model" in r.output, r.output
    assert not new.parent.exists()


@pytest.mark.parametrize("command, option", [(["demo-models", "--scale", "smoke", "--out"], "--out"),
                                             (["prepare", "--progress-file"], "--progress-file")])
def test_cli_names_a_demo_folder_or_progress_file_it_cannot_write(tmp_path, data_dir, command, option):
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    r = CliRunner().invoke(cli, [*command, str(blocker / "inside")])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert str(blocker) in r.output and f"pass {option}" in r.output and "Traceback" not in r.output
    assert not (data_dir / "evalkit.db").exists()  # prepare stopped before any work


def test_fidelity_refuses_empty_input_instead_of_judging_nothing():
    r = CliRunner().invoke(cli, ["fidelity", "--prompt", "writing-01"], input="  \n")
    assert r.exit_code == 1 and "Error: no output text on standard input" in r.output and "PASS" not in r.output


@pytest.mark.parametrize("bad, message", [(["--url", "my-app.example"], "http:// or https://"),
                                          (["--config", "BADTOML"], "not valid TOML")])
def test_raters_add_checks_the_link_before_making_a_code_shown_once(tmp_path, data_dir, bad, message):
    # the code is shown once: a --url or --config that fails after the rater is made would cost it
    broken = tmp_path / "bad.toml"
    broken.write_text("not toml [", encoding="utf-8")
    db = tmp_path / "raters.db"
    r = CliRunner().invoke(cli, ["raters", "add", "bob", "--db", str(db), *[str(broken) if a == "BADTOML" else a
                                                                            for a in bad]])
    assert r.exit_code == 1 and "Traceback" not in r.output and "personal code" not in r.output, r.output
    assert message in r.output
    listed = CliRunner().invoke(cli, ["raters", "list", "--db", str(db)])
    assert "bob" not in listed.output


@pytest.mark.parametrize("args, message", [
    (["raters", "add", "bob", "--url", "http://host:99999/"], "its port is not a port number"),  # spent a code before
    (["plan", "--look-every", "0"], "--look-every only applies with --compare"),  # ignored before
    # docs audit, 2026-12-04: taken with --compare and ignored (its JSON was the same with and without them), and a
    # confirmation of 0 studies taken where --help says at least 2000
    (["plan", "--compare", "--interval", "union with tango"], "--interval union with tango: --compare compares every"),
    (["plan", "--compare", "--raters-per-pair", "3"], "--raters-per-pair 3: --compare compares every"),
    (["plan", "--compare", "--confirm", "0"], "--confirm 0 is too few"),
    (["demo-models", "--out", ""], "--out is empty"),
    (["plan", "--rosters", "20,40", "--pool", "5"], "--pool, --rosters only apply with --compare"),
    (["export", "--out", "OUT", "--public"], "--public only applies with --push-to-hub"),  # exported, said nothing
    (["export", "--out", "OUT", "--while-rating"], "--while-rating only applies with --push-to-hub"),  # export audit
])
def test_cli_refuses_an_option_it_would_ignore_or_a_link_that_is_not_one(args, message, tmp_path, db_file):
    """Audit, 2026-12-02: each of these ran as if the option were not given (or spent a code on a bad link)."""
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    r = CliRunner().invoke(cli, [*args] + ([] if args[0] == "demo-models" else ["--db", str(db_file)]))
    assert r.exit_code == 1 and message in r.output and "fix:" in r.output, r.output
    assert "personal code" not in r.output and not (tmp_path / "out").exists()


def test_raters_add_to_an_empty_file_says_the_database_is_new(tmp_path, data_dir):
    """First-hour audit, 2026-12-06: a --db that was an empty file (`touch results/evalkit.db`) got the code and
    "database: ..." with no word that it held no study, as a missing file gets: SQLite takes both as new."""
    db = tmp_path / "touched.db"
    db.touch()
    r = CliRunner().invoke(cli, ["raters", "add", "ann", "--db", str(db)])
    assert r.exit_code == 0 and f"database: {db} (new: it was an empty file; if the study's is elsewhere" in r.output

def test_raters_commands_say_which_database_and_keep_a_revoke_s_time(tmp_path, data_dir):
    """Audit, 2026-12-02: a mistyped --db made a new database and printed a code that works nowhere, with no word of
    which file; a taken name was answered with the sign-in box's advice; a second revoke moved the revoke's time."""
    db = tmp_path / "study.db"
    first = CliRunner().invoke(cli, ["raters", "add", "ann", "--db", str(db)])
    assert first.exit_code == 0 and f"database: {db} (new: it did not exist" in first.output
    again = CliRunner().invoke(cli, ["raters", "add", "bob", "--db", str(db)])
    assert f"database: {db}\n" in again.output and "(new" not in again.output
    taken = CliRunner().invoke(cli, ["raters", "add", "ann", "--db", str(db)])
    assert taken.exit_code == 1 and "the name 'ann' is taken" in taken.output
    assert "evalkit raters reissue 'ann'" in taken.output and "sign in" not in taken.output
    assert "revoked rater 'ann'" in CliRunner().invoke(cli, ["raters", "revoke", "ann", "--db", str(db)]).output
    when = sqlite3.connect(db).execute("SELECT revoked_at FROM raters WHERE name = 'ann'").fetchone()[0]
    twice = CliRunner().invoke(cli, ["raters", "revoke", "ann", "--db", str(db)])
    assert twice.exit_code == 0 and f"was already revoked at {when}; nothing changed" in twice.output
    assert sqlite3.connect(db).execute("SELECT revoked_at FROM raters WHERE name = 'ann'").fetchone()[0] == when
    for sub in ("revoke", "reissue"):  # an empty name: the organiser's advice, not the sign-in box's "type your name"
        empty = CliRunner().invoke(cli, ["raters", sub, "", "--db", str(db)])
        assert empty.exit_code == 1 and "the name is empty" in empty.output
        assert "fix: pass the rater's NAME as `evalkit raters list` shows it" in empty.output


@pytest.mark.parametrize("command, name", [("export", "README.md"), ("report", "index.html")])
def test_export_and_report_never_replace_a_file_evalkit_did_not_write(tmp_path, db_file, command, name):
    # `--out .` in a project folder would have replaced its README.md (export's card) or index.html (the report)
    project = tmp_path / "project"
    project.mkdir()
    (project / name).write_text("# my project\n", encoding="utf-8")
    r = CliRunner().invoke(cli, [command, "--db", str(db_file), "--out", str(project)])
    assert r.exit_code == 1 and f"{project / name} exists and is not" in r.output and "empty folder" in r.output
    assert (project / name).read_text(encoding="utf-8") == "# my project\n"
    assert sorted(p.name for p in project.iterdir()) == [name]  # nothing else written either
    again = tmp_path / "earlier"  # the folder of an earlier one is fine: its file is evalkit's
    for _ in range(2):
        r = CliRunner().invoke(cli, [command, "--db", str(db_file), "--out", str(again)])
        assert r.exit_code == 0, r.output


def test_export_refuses_a_malformed_hub_repo_id_before_writing_anything(tmp_path, db_file):
    out = tmp_path / "export"
    r = CliRunner().invoke(cli, ["export", "--db", str(db_file), "--out", str(out), "--push-to-hub", "my-org//study"])
    assert r.exit_code == 1, r.output
    assert "Error: --push-to-hub 'my-org//study' is not a Hub repo id" in r.output and "namespace/name" in r.output
    assert "log in" not in r.output and not out.exists()  # not a push failure after a local export


def test_app_names_a_port_that_is_not_one_or_is_taken(tmp_path, db_file):
    import socket

    done = app_py(tmp_path, "--db", str(db_file), "--no-prepare", "--port", "99999")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "Error: --port 99999 is not a port" in done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = app_py(tmp_path, "--db", str(db_file), "--no-prepare", "--port", str(port))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"Error: cannot listen on 127.0.0.1:{port}" in done.stderr and "another --port" in done.stderr


# --- unknown prompt ids ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["run", "--prompt", "nope"], ["fidelity", "--prompt", "nope"],
                                  ["bench", "--prompt", "nope", "--reps", "1"]])
def test_cli_unknown_prompt_id_is_one_clear_error(args, data_dir, tmp_path):
    missing = str(tmp_path / "no-such-model")  # never reached: the prompt id is checked first
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[models]\ntarget = "{missing}"\ndraft = "{missing}"\ndevice = "cpu"\n', encoding="utf-8")
    extra = [] if args[0] == "fidelity" else ["--config", str(cfg)]
    r = CliRunner().invoke(cli, [*args, *extra], input="资料库周三晚间维护。")
    assert r.exit_code == 1, r.output
    assert "Error: unknown prompt id(s): nope" in r.output and "known ids: writing-01" in r.output
    assert "Traceback" not in r.output and "no-such-model" not in r.output
    assert not (data_dir / "evalkit.db").exists()  # nothing written, not even an empty database


@pytest.mark.parametrize("args, message", [
    (["tune", "--tokens", "0,4"], "--tokens 0: expected draft lengths of 1 or more"),
    (["tune", "--thresholds", "0.4,1.5"], "--thresholds 1.5: expected confidence thresholds in [0, 1)"),
    (["tune", "--reps", "0"], "--reps 0: expected 1 or more repetitions"),
    (["tune", "--tokens", ""], "--tokens gives no value to try"),  # was "best ... 1.00x" against the default
    (["tune", "--schedules", ","], "--schedules gives no value to try"),
    (["run", "--seed", "-5"], "--seed -5 must be between 0 and 2**32 - 1"),  # was a fallback failure after loading
    (["generate", "--samples", "0"], "--samples 0 must be at least 1"),  # was the config's samples, silently
    (["generate", "--new-study", " "], "--new-study ' ' is not a usable study name"),  # was a study named ' '
    (["bench", "--rounds", "1"], "--rounds 1 must be at least 2"),  # one process per path: no interval
    # sceptic audit, 2026-12-06: 3 rounds ran ordinary first in 2 and assisted first in 1 (ABBA unbalanced)
    (["bench", "--rounds", "3"], "--rounds 3 must be even: each round swaps the paths' order, so 3 rounds put the "
                                 "first path first in 2 and the other in 1"),
    (["bench", "--batch-sizes", "1"], "--batch-sizes 1 measures no batch"),  # was accepted, measuring no batch
    (["bench", "--batch-sizes", ","], "--batch-sizes (empty) measures no batch"),
])
def test_cli_names_the_bad_sweep_or_seed_value_before_a_model_loads(args, message, data_dir, tmp_path):
    missing = str(tmp_path / "no-such-model")  # never reached: the values are checked first
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[models]\ntarget = "{missing}"\ndraft = "{missing}"\ndevice = "cpu"\n', encoding="utf-8")
    r = CliRunner().invoke(cli, [*args, "--config", str(cfg)])
    assert r.exit_code == 1, r.output
    assert f"Error: {message}" in r.output and "fix:" in r.output
    assert "Traceback" not in r.output and "no-such-model" not in r.output


def test_run_finds_a_database_it_cannot_use_before_loading_the_models(tmp_path, data_dir):
    """Audit, 2026-12-02: `evalkit run` loaded the models (seconds to minutes) and only then opened --db."""
    missing = str(tmp_path / "no-such-model")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[models]\ntarget = "{missing}"\ndraft = "{missing}"\ndevice = "cpu"\n', encoding="utf-8")
    bad = tmp_path / "corrupt.db"
    data = corrupt(bad)
    r = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--db", str(bad)])
    assert r.exit_code == 1 and f"Error: database {bad} cannot be opened" in r.output, r.output
    assert "no-such-model" not in r.output and bad.read_bytes() == data


def test_aggregate_on_a_database_without_a_study_says_what_to_run(tmp_path):
    db = tmp_path / "empty.db"
    open_db(db).conn.close()
    r = CliRunner().invoke(cli, ["aggregate", "--db", str(db)])
    assert r.exit_code == 0 and "VERDICT: INSUFFICIENT DATA" in r.output
    assert "`evalkit generate` makes the pair pool and freezes the gate file" in r.output


def test_app_live_tab_refuses_an_unknown_prompt_id(tmp_path, db_file):
    with served(config(tmp_path), db_file) as url:
        tab = Tab(url)
        tab.sign_in("ann")  # the Live tab is for those signed in (an organiser's, by invitation)
        before = snapshot(db_file)
        with pytest.raises(AppError) as e:
            tab.call("/live", "nope", "")
    assert "nope" in str(e.value) and ("unknown prompt" in str(e.value) or "not in the list of choices" in str(e.value))
    assert snapshot(db_file) == before


# --- models that fail to load ----------------------------------------------------------------------------------

def test_live_tab_reports_a_model_that_fails_to_load_and_the_ratings_go_on(tmp_path, db_file):
    cfg = config(tmp_path)
    with served(cfg, db_file) as url:
        tab = Tab(url)
        tab.sign_in("ann")
        tab.submit(comment="before the failure")
        before = snapshot(db_file)
        for _ in range(2):  # a failed load is not cached as success: the second try fails the same, clearly
            with pytest.raises(AppError) as e:
                tab.call("/live", "writing-01", "")
            msg = str(e.value)
            assert "no-such-model" in msg and "fix:" in msg, msg
            assert "something went wrong" not in msg and "Traceback" not in msg
        after = snapshot(db_file)
        # each try counts towards app.live_runs_per_hour (it asked the server to load the models), per browser and per
        # address, and the count is kept in the database since 034_client_limits: that is all a failed run writes
        assert after.pop("limit_events") == before.pop("limit_events") + 4
        assert after == before  # no experiment, no generation, nothing lost
        tab.call("/next_pair")
        tab.submit(comment="after the failure")  # rating does not need the models
    assert [r[0] for r in q(db_file, "SELECT comment FROM ratings ORDER BY id")] == [
        "before the failure", "after the failure"]


def test_cli_reports_a_corrupt_model_folder_and_writes_nothing(tmp_path, data_dir):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text("{ this is not json", encoding="utf-8")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[models]\ntarget = "{broken}"\ndraft = "{broken}"\ndevice = "cpu"\n', encoding="utf-8")
    r = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--prompt", "writing-01"])
    assert r.exit_code == 1, r.output
    assert r.output.startswith("Error:") and str(broken) in r.output and "fix:" in r.output
    assert "Traceback" not in r.output
    assert not (data_dir / "evalkit.db").exists()


@pytest.mark.parametrize("args", [["generate", "--samples", "1"], ["generate", "--until-planned"], ["prepare"],
                                  ["tune", "--reps", "1"], ["bench", "--reps", "1"]])
def test_a_missing_model_folder_leaves_no_new_database(args, tmp_path, data_dir):
    """Audit, 2026-12-02: `generate`, `prepare`, `tune` and `bench` failed on a missing model folder ("exit code 1,
    nothing written") but left a new evalkit.db (schema only) behind; `run` did not. The folders are now checked before a database is
    made."""
    missing = str(tmp_path / "no-such-model")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[models]\ntarget = "{missing}"\ndraft = "{missing}"\ndevice = "cpu"\n', encoding="utf-8")
    r = CliRunner().invoke(cli, [*args, "--config", str(cfg)])
    assert r.exit_code == 1, r.output
    assert f"Error: model folder {missing} does not exist (models.target)" in r.output and "fix:" in r.output
    assert not data_dir.exists() or not any(data_dir.iterdir()), sorted(p.name for p in data_dir.iterdir())


def test_a_run_that_cannot_be_stored_leaves_the_database_as_it_was(make_config, tmp_path, monkeypatch):
    """Audit, 2026-12-04: `evalkit run` stored its experiment and its records in two transactions, so a failure
    storing the records (the lock held past the busy timeout by another writer, a full disk) left an experiment with
    no records, and the command ended in sqlite3's traceback. Both land in one transaction now, and the error names
    the database and what to do."""
    import evalkit.store

    cfg = make_config(draft="target_copy")
    db_file = tmp_path / "runs.db"
    r = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--db", str(db_file), "--path", "ordinary"])
    assert r.exit_code == 0, r.output

    def before():
        db = open_db(db_file)
        try:
            return (list(db.query("SELECT id, kind FROM experiments")),
                    db.execute("SELECT COUNT(*) FROM generations").fetchone()[0])
        finally:
            db.conn.close()

    stored = before()
    assert stored[1] == 1

    def locked(*_args, **_kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(evalkit.store, "insert_generations", locked)
    r = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--db", str(db_file), "--path", "ordinary"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert f"could not store the run in {db_file}" in r.output and "nothing was stored" in r.output
    assert "retry once the other process" in r.output and "Traceback" not in r.output
    assert before() == stored


def test_plan_refuses_an_empty_file_as_its_database_and_leaves_it_empty(tmp_path):
    """Docs audit, 2026-12-04: `plan --db EMPTY` filled the empty file with evalkit's tables and planned from the
    defaults, where the README says plan never creates or writes a database and every reader refuses an empty file."""
    empty = tmp_path / "typo.db"
    empty.touch()
    r = CliRunner().invoke(cli, ["plan", "--db", str(empty), "--studies", "50"])
    assert r.exit_code == 1 and f"database {empty} is an empty file" in r.output and "fix:" in r.output, r.output
    assert empty.stat().st_size == 0
