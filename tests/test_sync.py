"""Space persistence with the Hub client substituted: restore on start, consistent snapshots, retries."""

import shutil
import sqlite3
import threading

import pytest

from evalkit.errors import EvalkitError
from evalkit.store import open_db
from evalkit.publish.sync import DatabaseSync, from_environment
from evalkit.store import snapshot


class NotFound(Exception):
    def __init__(self):
        super().__init__("404")
        self.response = type("R", (), {"status_code": 404})()


class FakeHub:
    """Stores uploaded files in a folder, like a dataset repo; can be told to fail."""

    def __init__(self, root, fail_uploads=0, fail_download=None):
        self.root, self.fail_uploads, self.fail_download = root, fail_uploads, fail_download
        self.uploads, self.created = 0, []
        root.mkdir(parents=True, exist_ok=True)

    def hf_hub_download(self, repo_id, filename, repo_type):
        if self.fail_download:
            raise self.fail_download
        path = self.root / filename
        if not path.exists():
            raise NotFound()
        return str(path)

    def create_repo(self, repo_id, repo_type, private, exist_ok):
        self.created.append((repo_id, repo_type, private))

    def upload_file(self, path_or_fileobj, path_in_repo, repo_id, repo_type, commit_message):
        if self.fail_uploads:
            self.fail_uploads -= 1
            raise ConnectionError("network down")
        shutil.copyfile(path_or_fileobj, self.root / path_in_repo)
        self.uploads += 1


def _rows(path):
    con = sqlite3.connect(str(path))
    try:
        return con.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    finally:
        con.close()


def _add_experiment(db_path):
    from evalkit.store import insert_experiment

    db = open_db(db_path)
    insert_experiment(db, "run", {}, {})
    db.close()


def test_fresh_start_then_push_then_restore_after_restart(tmp_path):
    hub = FakeHub(tmp_path / "hub")
    db_path = tmp_path / "space1" / "evalkit.db"
    sync = DatabaseSync(db_path, "org/ratings", api=hub)
    assert sync.restore_if_missing() is False  # nothing in the repo yet
    _add_experiment(db_path)
    assert sync.push_now() is True and hub.uploads == 1
    assert hub.created == [("org/ratings", "dataset", True)]  # private by default
    assert sync.push_now() is True and hub.uploads == 1  # unchanged: no new commit
    # the Space restarts on an empty disk
    db2 = tmp_path / "space2" / "evalkit.db"
    sync2 = DatabaseSync(db2, "org/ratings", api=hub)
    assert sync2.restore_if_missing() is True
    assert _rows(db2) == 1
    assert sync2.restore_if_missing() is False  # a local file is never overwritten


def test_failed_push_keeps_local_data_and_retries(tmp_path):
    hub = FakeHub(tmp_path / "hub", fail_uploads=2)
    db_path = tmp_path / "evalkit.db"
    _add_experiment(db_path)
    sync = DatabaseSync(db_path, "org/ratings", api=hub, every_seconds=0.05)
    assert sync.push_now() is False and sync.failures == 1
    assert _rows(db_path) == 1
    sync.start()  # the scheduler retries by itself
    for _ in range(100):
        if hub.uploads:
            break
        threading.Event().wait(0.05)
    sync.stop(final_push=False)
    assert hub.uploads == 1 and sync.failures == 2
    assert _rows(tmp_path / "hub" / "evalkit.db") == 1


def test_restore_failure_other_than_missing_stops_the_start(tmp_path):
    hub = FakeHub(tmp_path / "hub", fail_download=PermissionError("401 unauthorized"))
    sync = DatabaseSync(tmp_path / "evalkit.db", "org/ratings", api=hub)
    with pytest.raises(EvalkitError, match="(?s)cannot restore.*overwrite the stored ratings"):
        sync.restore_if_missing()
    assert not (tmp_path / "evalkit.db").exists()


def test_snapshot_is_consistent_while_writing(tmp_path):
    """Snapshots taken while another connection keeps committing are whole databases holding a prefix of the
    writes: never fewer rows than were committed before the snapshot began, never more than after it ended.
    The test also checks the premise: writes did commit while snapshots were being taken."""
    db_path = tmp_path / "live.db"
    open_db(db_path).close()
    stop, written = threading.Event(), [0]

    def writer():
        db = open_db(db_path, migrate_schema=False)
        from evalkit.store import insert_experiment

        while not stop.is_set():
            insert_experiment(db, "run", {"x": 1}, {})
            written[0] += 1  # after the commit: the file holds at least this many rows
        db.close()

    t = threading.Thread(target=writer)
    t.start()
    overlapped = taken = 0
    try:
        while taken < 60 and overlapped < 3:
            before = written[0]
            snap = snapshot(db_path, tmp_path / f"snap{taken}.db")
            after = written[0]
            con = sqlite3.connect(str(snap))
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            n = con.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
            con.close()
            assert before <= n <= after + 1, (before, n, after)  # +1: a commit not yet counted by the writer
            overlapped += after > before
            taken += 1
    finally:
        stop.set()
        t.join()
    assert overlapped >= 3, f"only {overlapped} of {taken} snapshots overlapped a write"


def test_environment_switch(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALKIT_SYNC_REPO", raising=False)
    assert from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h")) is None
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "org/ratings")
    monkeypatch.setenv("EVALKIT_SYNC_EVERY", "60")
    s = from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h"))
    assert s.repo_id == "org/ratings" and s.every_seconds == 60
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "not-a-repo")
    with pytest.raises(EvalkitError, match="owner/name"):
        from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h"))
