import sqlite3

import pytest

from evalkit.errors import EvalkitError
from evalkit.records import GenerationRecord
from evalkit.store import MIGRATIONS, insert_experiment, insert_generations, migrate, open_db


def test_default_db_lives_in_the_data_dir(data_dir):
    db = open_db()
    assert (data_dir / "evalkit.db").exists()
    assert {"experiments", "generations", "timing_runs", "bench_processes", "pairs"} <= set(db.table_names())
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_env_override(tmp_path, monkeypatch):
    target = tmp_path / "elsewhere" / "x.db"
    monkeypatch.setenv("EVALKIT_DB", str(target))
    open_db()
    assert target.exists()


def test_migrations_apply_twice_safely(tmp_path):
    path = tmp_path / "m.db"
    db = open_db(path)
    assert migrate(db) == []  # already applied by open_db
    db.close()
    db = open_db(path)  # a second process opening the same file
    names = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY name").fetchall()]
    assert names == [n for n, _ in MIGRATIONS]


def test_failure_mid_write_leaves_database_as_it_was(tmp_path):
    db = open_db(tmp_path / "w.db")
    exp = insert_experiment(db, "run", {"a": 1}, {"verdict": "same_tokenizer"})
    good = GenerationRecord(prompt_id="writing-01", path="ordinary", text="ok")
    bad = GenerationRecord(prompt_id="writing-01", path="ordinary", status="weird", text="x")  # violates the CHECK
    with pytest.raises(sqlite3.IntegrityError):
        insert_generations(db, [good, bad], exp)
    assert db["generations"].count == 0
    unregistered = GenerationRecord(prompt_id="writing-01", path="not-a-path", text="x")  # the registry decides
    with pytest.raises(EvalkitError, match="unregistered path 'not-a-path'"):
        insert_generations(db, [good, unregistered], exp)
    assert db["generations"].count == 0
    insert_generations(db, [GenerationRecord(prompt_id="writing-01", path="ordinary")], exp)
    assert db["generations"].count == 1


def test_fallback_links_to_its_failed_attempt(tmp_path):
    db = open_db(tmp_path / "f.db")
    failed = GenerationRecord(prompt_id="writing-01", path="assisted", status="failed", error_class="X", error_stage="generate")
    fb = GenerationRecord(prompt_id="writing-01", path="fallback", fallback_of=-1)
    ids = insert_generations(db, [failed, fb], None)
    row = db["generations"].get(ids[1])
    assert row["fallback_of"] == ids[0] and row["path"] == "fallback"


def test_corrupt_database_file_gives_clear_error(tmp_path):
    bad = tmp_path / "corrupt.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(EvalkitError, match="(?s)cannot be opened.*move it aside"):
        open_db(bad)
    assert bad.read_bytes().startswith(b"this is not a database")  # nothing overwritten


def test_database_held_by_another_process_says_so_not_corrupt(tmp_path, monkeypatch):
    """A file another process keeps locked past the busy timeout is not corrupt: the hint says to wait for or
    stop the other command, not to move the file aside."""
    import sqlite3

    from evalkit.store import database

    monkeypatch.setattr(database, "BUSY_TIMEOUT_S", 0.5)
    path = tmp_path / "held.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")  # evalkit's file
    other.execute("BEGIN EXCLUSIVE")  # a rollback-journal file under an exclusive lock: nobody can even read it
    with pytest.raises(EvalkitError, match=r"(?s)held\.db.*locked.*over 0\.5 s.*wait for the other evalkit command") as e:
        open_db(path)
    assert "corrupt" not in str(e.value)
    other.execute("ROLLBACK")
    assert open_db(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # and once free, it opens


def test_migrations_from_several_processes_at_once(tmp_path):
    """accelerate ranks open the same new database together: each migration is applied exactly once."""
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "race.db"
    code = "import sys; from evalkit.store import open_db; open_db(sys.argv[1]).close()"
    root = str(Path(__file__).parent.parent)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=root, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    db = open_db(path)
    assert [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY name").fetchall()] == [n for n, _ in MIGRATIONS]


def _open_fresh_files(barrier, folder, rounds, errors):
    from evalkit.errors import EvalkitError

    for r in range(rounds):
        barrier.wait()  # every process opens file r at the same moment
        try:
            open_db(folder / f"{r}.db").close()
        except EvalkitError as e:
            errors.put(f"round {r}: {e}")


def test_processes_opening_one_new_file_together_all_succeed(tmp_path):
    """Regression: two accelerate ranks opening one new database at once sometimes failed with 'database is
    locked' (the switch to WAL meets a file the other process has just switched and is writing, and SQLite
    answers at once, without the busy handler). Many rounds of a simultaneous open, as the ranks do."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    n, rounds = 3, 150
    barrier, errors = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_open_fresh_files, args=(barrier, tmp_path, rounds, errors)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
    assert [p.exitcode for p in procs] == [0] * n
    for r in range(rounds):
        db = open_db(tmp_path / f"{r}.db", migrate_schema=False)
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert [x[0] for x in db.execute("SELECT name FROM _migrations ORDER BY name")] == [m for m, _ in MIGRATIONS]
        db.close()


@pytest.mark.parametrize("table", ["foo", "experiments"])
def test_another_tool_s_database_is_refused_unchanged_by_every_command(tmp_path, table):
    """Audit, 2026-12-02: `evalkit aggregate --db other.db` (a file of another tool) wrote evalkit's 16 tables into
    it and switched it to WAL, and where the other tool had a table named like one of ours it failed half-way, with
    `_migrations` added and advice about a corrupt file. The file is now read before anything is written."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, x TEXT)")
    con.execute(f"INSERT INTO {table} (x) VALUES ('theirs')")
    con.commit()
    con.close()
    before = path.read_bytes()
    for args in (["aggregate"], ["raters", "list"], ["report", "--out", str(tmp_path / "r")]):
        r = CliRunner().invoke(cli, [*args, "--db", str(path)])
        assert r.exit_code != 0 and f"is not an evalkit database: it holds other tables ({table})" in r.output, args
        assert "corrupt" not in r.output
    assert path.read_bytes() == before and not (tmp_path / "other.db-wal").exists()
    assert not (tmp_path / "r").exists()


def test_a_folder_or_a_file_in_the_way_is_named_as_such(tmp_path):
    (tmp_path / "adir").mkdir()
    with pytest.raises(EvalkitError, match=r"adir is a folder, not a file") as e:
        open_db(tmp_path / "adir")
    assert "EVALKIT_DB" in e.value.fix
    (tmp_path / "afile").write_text("x")
    with pytest.raises(EvalkitError, match=r"afile is a file, not a folder"):
        open_db(tmp_path / "afile" / "evalkit.db")


def test_a_database_from_a_newer_evalkit_is_refused_unchanged(tmp_path):
    # a Space rolled back to an older version restores the newer version's database: this version must not read
    # (or write) a schema it does not know
    path = tmp_path / "newer.db"
    open_db(path).conn.close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO _migrations (name, applied_at) VALUES ('999_from_the_future', 'later')")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(EvalkitError, match=r"newer\.db was written by a newer evalkit: its migration\(s\) "
                                           r"999_from_the_future are unknown"):
        open_db(path)
    assert path.read_bytes() == before


def test_two_databases_made_at_one_path_in_the_same_millisecond_have_different_identities(tmp_path, monkeypatch):
    """A long-running process keys its memos of a study's looks by store.database.identity. It was the path and the
    instant of the first migration, to the millisecond: a database made at the same path in the same millisecond as
    the one it replaced was taken for it. The clock is held still here; a copy of the file is the same database."""
    import shutil

    from evalkit.store import database

    monkeypatch.setattr(database, "now", lambda: "2026-12-07T03:00:00.000+00:00")
    path = tmp_path / "study.db"
    first = open_db(path)
    seen = database.identity(first)
    first.conn.close()
    shutil.copyfile(path, tmp_path / "kept.db")
    path.unlink()
    second = open_db(path)
    assert database.identity(second)[0] == seen[0]  # same file name ...
    assert database.identity(second) != seen  # ... another database
    second.conn.close()
    shutil.copyfile(tmp_path / "kept.db", path)  # the first one copied back: the same database again
    back = open_db(path)
    assert database.identity(back) == seen
    with pytest.raises(sqlite3.IntegrityError, match="keeps the identity"):
        back.execute("UPDATE database_identity SET token = 'another'")
