"""Space persistence with the Hub client substituted: restore on start, consistent snapshots, retries."""

import hashlib
import shutil
import sqlite3
import threading
import time
from dataclasses import replace

import pytest

from evalkit.errors import EvalkitError
from evalkit.store import open_db
from evalkit.publish.sync import DatabaseSync, from_environment
from evalkit.store import snapshot


def hub_error(status, url, code=None, message="Invalid username or password."):
    """The exception huggingface_hub raises for this answer of the Hub (its own mapping, no network)."""
    import httpx2
    from huggingface_hub.utils import hf_raise_for_status

    headers = {"X-Error-Message": message} | ({"X-Error-Code": code} if code else {})
    try:
        hf_raise_for_status(httpx2.Response(status, request=httpx2.Request("GET", url), headers=headers))
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError(f"{status} raised nothing")


def file_not_in_repo(repo_id, filename):  # the repo was read; it has no such file
    return hub_error(404, f"https://huggingface.co/datasets/{repo_id}/resolve/main/{filename}", "EntryNotFound",
                     "Entry not found")


def git_blob_id(data: bytes) -> str:  # what the Hub reports as a file's blob id (for a small file: git's own)
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """Stores uploaded files in a folder, like a dataset repo; can be told to fail. `public`: the repo exists and is
    public (create_repo with exist_ok leaves it so); else it is the private repo the sync asks for. The head commit
    is the hash of the folder's files, so a file put there from outside (another uploader) moves it, as on the Hub;
    a commit on a parent that is not the head is refused (412), as the Hub refuses it."""

    def __init__(self, root, fail_uploads=0, fail_download=None, public=False, fail_info=None, read_only=False,
                 lfs=False):
        self.root, self.fail_uploads, self.fail_download = root, fail_uploads, fail_download
        self.public, self.fail_info, self.read_only = public, fail_info, read_only
        self.lfs = lfs  # files stored as Git LFS (a binary file on the Hub): the blob id is the pointer's
        self.uploads, self.created, self.commits = 0, [], []
        root.mkdir(parents=True, exist_ok=True)

    def head(self):
        import hashlib

        files = sorted(p for p in self.root.iterdir() if p.is_file())
        return hashlib.sha1(b"".join(p.name.encode() + git_blob_id(p.read_bytes()).encode() for p in files)).hexdigest()

    def get_paths_info(self, repo_id, paths, revision=None, repo_type=None):
        from types import SimpleNamespace

        assert revision is None or revision == self.head() or revision in self.commits, revision
        out = []
        for p in paths:
            if not (self.root / p).exists():
                continue
            data = (self.root / p).read_bytes()
            if self.lfs:
                sha = hashlib.sha256(data).hexdigest()
                pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n"
                out.append(SimpleNamespace(path=p, blob_id=git_blob_id(pointer.encode()),
                                           lfs=SimpleNamespace(sha256=sha, size=len(data))))
            else:
                out.append(SimpleNamespace(path=p, blob_id=git_blob_id(data), lfs=None))
        return out

    def hf_hub_download(self, repo_id, filename, repo_type, revision=None):
        if self.fail_download:
            raise self.fail_download
        path = self.root / filename
        if not path.exists():
            raise file_not_in_repo(repo_id, filename)
        return str(path)

    def repo_info(self, repo_id, repo_type=None):
        from types import SimpleNamespace

        if self.fail_info:
            raise self.fail_info
        return SimpleNamespace(private=not self.public, sha=self.head())

    def create_repo(self, repo_id, repo_type, private, exist_ok):
        self.created.append((repo_id, repo_type, private))

    def upload_file(self, path_or_fileobj, path_in_repo, repo_id, repo_type, commit_message, parent_commit=None):
        from types import SimpleNamespace

        if self.read_only:  # a token that can read the repo, not write it: the Hub answers 403 to the commit
            raise hub_error(403, f"https://huggingface.co/api/datasets/{repo_id}/commit/main",
                            message="You don't have the rights to create a commit on this repo")
        if self.fail_uploads:
            self.fail_uploads -= 1
            raise ConnectionError("network down")
        if parent_commit is not None and parent_commit != self.head():
            raise hub_error(412, f"https://huggingface.co/api/datasets/{repo_id}/commit/main",
                            message="A commit has happened since. Please refresh and try again.")
        shutil.copyfile(path_or_fileobj, self.root / path_in_repo)
        self.uploads += 1
        self.commits.append(self.head())
        return SimpleNamespace(oid=self.commits[-1])


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


def _until(check, seconds: float = 60.0):
    """Wait for a sync thread's tick to make check() true: polled, by the clock, for up to a minute (it returns as
    soon as check() holds). The windows of 3 to 20 s these tests had could pass on a loaded machine before the
    thread's first tick had run."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.02)
    return True


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


def test_a_journal_left_beside_a_deleted_database_is_set_aside_not_replayed_onto_the_restored_one(tmp_path):
    """The way to serve the repo's database on a Space with persistent storage is to delete the disk's and restart. A
    database deleted without its -wal journal left that journal beside the restored file, and SQLite would replay
    another database's pages onto it. The restore now sets such a journal aside (never deleted) first."""
    hub = FakeHub(tmp_path / "hub")
    sync, db_path = _started_and_pushed(hub, tmp_path)  # the repo holds one experiment
    other = tmp_path / "other" / "x.db"
    for _ in range(3):
        _add_experiment(other)
    con = sqlite3.connect(other)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("DELETE FROM experiments")  # in the journal only, not yet in the file
    con.commit()
    space = tmp_path / "space2"
    space.mkdir()
    shutil.copyfile(other.with_name("x.db-wal"), space / "evalkit.db-wal")  # deleted evalkit.db, its journal left
    con.close()
    restored = DatabaseSync(space / "evalkit.db", "org/ratings", api=hub)
    assert restored.restore_if_missing() is True
    assert _rows(space / "evalkit.db") == 1  # the repo's database, as it is
    orphans = list(space.glob("evalkit.db-wal.orphan-*"))
    assert len(orphans) == 1 and orphans[0].stat().st_size > 0


def test_failed_push_keeps_local_data_and_retries(tmp_path):
    hub = FakeHub(tmp_path / "hub", fail_uploads=2)
    db_path = tmp_path / "evalkit.db"
    _add_experiment(db_path)
    sync = DatabaseSync(db_path, "org/ratings", api=hub, every_seconds=0.05)
    assert sync.push_now() is False and sync.failures == 1
    assert _rows(db_path) == 1
    sync.start()  # the scheduler retries by itself
    _until(lambda: hub.uploads)
    sync.stop(final_push=False)
    assert hub.uploads == 1 and sync.failures == 2
    assert _rows(tmp_path / "hub" / "evalkit.db") == 1


def test_restore_failure_other_than_missing_stops_the_start(tmp_path):
    hub = FakeHub(tmp_path / "hub", fail_download=PermissionError("401 unauthorized"))
    sync = DatabaseSync(tmp_path / "evalkit.db", "org/ratings", api=hub)
    with pytest.raises(EvalkitError, match="(?s)cannot restore.*overwrite the stored ratings") as refused:
        sync.restore_if_missing()
    assert "check HF_TOKEN" in refused.value.fix
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


def on_a_space(monkeypatch):
    """The environment a Hugging Face Space sets (evalkit.locations.on_space, as Gradio decides it), with the OAuth
    variables its README's `hf_oauth: true` adds."""
    monkeypatch.setenv("SPACE_ID", "org/evalkit")
    monkeypatch.setenv("SYSTEM", "spaces")
    for name in ("OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET", "OAUTH_SCOPES", "OPENID_PROVIDER_URL"):
        monkeypatch.setenv(name, "https://huggingface.co" if name == "OPENID_PROVIDER_URL" else f"set-{name}")


def test_a_space_without_hub_sign_in_stops_at_the_start_saying_to_set_hf_oauth(tmp_path, monkeypatch):
    """A Space whose README header lacks `hf_oauth: true` has no OAuth variables: the start stopped with Gradio's
    ValueError traceback while the app was built, after the sync had restored and committed its start file and a
    preparation had begun. It now stops first, naming the missing variables and the header line to add."""
    from click.testing import CliRunner

    import huggingface_hub

    from evalkit.cli import cli

    on_a_space(monkeypatch)
    monkeypatch.delenv("OAUTH_CLIENT_ID")
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "org/ratings")
    hub = FakeHub(tmp_path / "hub")
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: hub)
    db = tmp_path / "space" / "evalkit.db"
    r = CliRunner().invoke(cli, ["serve", "--db", str(db), "--no-prepare"])
    assert r.exit_code == 1 and r.output.startswith("Error: this Space has no 'Sign in with Hugging Face' "
                                                    "(OAUTH_CLIENT_ID not set)"), r.output
    assert "hf_oauth: true" in r.output and "README.md" in r.output and "Traceback" not in r.output
    assert not db.exists() and not list((tmp_path / "hub").rglob("*"))  # nothing restored or committed


def test_a_space_whose_data_dir_is_missing_stops_at_the_start_saying_to_attach_storage(tmp_path, monkeypatch):
    """README step 3 sets EVALKIT_DATA_DIR=/data for persistent storage. With the variable set and no storage attached
    (or any folder the database cannot be made in), the restore of the repo's database stopped the start with an
    OSError traceback from making the folder. It now stops first with an evalkit error: on a Space whose
    EVALKIT_DATA_DIR does not exist, naming the variable and the storage to attach; nothing is committed."""
    from click.testing import CliRunner

    import huggingface_hub

    from evalkit.cli import cli

    on_a_space(monkeypatch)
    hub = FakeHub(tmp_path / "hub")
    seed = tmp_path / "seed.db"
    _add_experiment(seed)
    (hub.root / "evalkit.db").write_bytes(seed.read_bytes())  # the study's database, uploaded (step 4)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: hub)
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "org/ratings")
    (tmp_path / "not-a-folder").write_text("", encoding="utf-8")  # a folder that cannot be made (as "/" for a user)
    data = tmp_path / "not-a-folder" / "data"
    monkeypatch.setenv("EVALKIT_DATA_DIR", str(data))
    monkeypatch.delenv("EVALKIT_DB", raising=False)
    r = CliRunner().invoke(cli, ["serve", "--no-prepare"])
    assert r.exit_code == 1 and r.output.startswith(f"Error: database {data / 'evalkit.db'} cannot be created"), r.output
    assert f"EVALKIT_DATA_DIR={data} does not exist on this Space" in r.output and "persistent storage" in r.output
    assert "Traceback" not in r.output and sorted(p.name for p in hub.root.iterdir()) == ["evalkit.db"]


def test_a_space_without_a_sync_repo_does_not_start(tmp_path, monkeypatch):
    """Audit, 2026-12-02: with EVALKIT_SYNC_REPO unset on a Space the app served anyway, its ratings on a disk a
    restart wipes, where the README says the repo is required. The start now stops, naming the variable and the
    fix, before the database is made; EVALKIT_SYNC_REPO=off is the explicit way to serve without syncing."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    on_a_space(monkeypatch)
    monkeypatch.delenv("EVALKIT_SYNC_REPO", raising=False)
    with pytest.raises(EvalkitError, match="EVALKIT_SYNC_REPO is not set") as refused:
        from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h"))
    assert "private dataset repo" in refused.value.fix and "EVALKIT_SYNC_REPO=off" in refused.value.fix
    db = tmp_path / "space.db"
    r = CliRunner().invoke(cli, ["serve", "--db", str(db), "--no-prepare"])
    assert r.exit_code == 1 and r.output.startswith("Error: this is a Hugging Face Space and EVALKIT_SYNC_REPO is "
                                                    "not set"), r.output
    assert not db.exists()
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "off")
    assert from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h")) is None
    monkeypatch.delenv("SYSTEM")  # SPACE_ID alone is no Space: a local app needs no sync repo
    monkeypatch.delenv("EVALKIT_SYNC_REPO")
    assert from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h")) is None


def no_hub_token(monkeypatch, tmp_path):
    """No Hugging Face token anywhere huggingface_hub looks (the variable, the login file)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))


def test_a_space_without_the_hf_token_secret_is_told_to_add_it(tmp_path, monkeypatch):
    """README step 3's secret HF_TOKEN not added: the Hub answers a private repo's read with 401, which said "cannot
    be read with this token ... missing, expired or has no access" though there was no token at all. With none set
    the start now names the missing secret and where to add it; nothing is made on the disk."""
    no_hub_token(monkeypatch, tmp_path)
    db_path = tmp_path / "space" / "evalkit.db"
    hub = FakeHub(tmp_path / "hub", fail_info=hub_error(401, "https://huggingface.co/api/datasets/org/ratings"))
    with pytest.raises(EvalkitError, match="sync repo org/ratings .*cannot be read: HF_TOKEN is not set") as refused:
        DatabaseSync(db_path, "org/ratings", api=hub).restore_if_missing()
    assert refused.value.fix.startswith("add the secret HF_TOKEN in the Space's settings") and "read/write" in \
        refused.value.fix
    assert not db_path.exists()


def test_a_token_that_cannot_read_the_repo_stops_the_start(tmp_path, monkeypatch):
    """HF_TOKEN missing or expired on a private repo: the Hub answers 401, which huggingface_hub raises as
    RepositoryNotFoundError. That is no "no database yet": the start stops (an empty database would be pushed over
    the stored ratings), and says the token cannot read the repo."""
    url = "https://huggingface.co/api/datasets/org/ratings"
    cases = {
        "401 on the repo": dict(fail_info=hub_error(401, url)),
        "repo not found": dict(fail_info=hub_error(404, url, "RepoNotFound", "Repository not found")),
        "401 on the file": dict(fail_download=hub_error(
            401, "https://huggingface.co/datasets/org/ratings/resolve/main/evalkit.db", "RepoNotFound")),
        "403": dict(fail_download=hub_error(403, "https://huggingface.co/datasets/org/ratings/resolve/main/evalkit.db",
                                            message="Forbidden")),
    }
    monkeypatch.setenv("HF_TOKEN", "hf_expired-or-powerless")  # a token is set (without one: the test above)
    for name, fail in cases.items():
        db_path = tmp_path / name / "evalkit.db"
        sync = DatabaseSync(db_path, "org/ratings", api=FakeHub(tmp_path / "hub", **fail))
        with pytest.raises(EvalkitError, match="(?s)sync repo org/ratings .*cannot be read with this token.*create the "
                                               "private dataset repo org/ratings, or set HF_TOKEN .*read/write access"):
            sync.restore_if_missing()
        assert not db_path.exists(), name


def test_only_a_file_missing_from_a_readable_repo_starts_fresh(tmp_path):
    from huggingface_hub.errors import LocalEntryNotFoundError

    sync = DatabaseSync(tmp_path / "a" / "evalkit.db", "org/ratings", api=FakeHub(tmp_path / "hub"))
    assert sync.restore_if_missing() is False  # the repo was read and holds no evalkit.db
    offline = FakeHub(tmp_path / "hub", fail_download=LocalEntryNotFoundError("no connection, not in the cache"))
    with pytest.raises(EvalkitError, match="cannot restore") as refused:  # the Hub was not reached: no answer
        DatabaseSync(tmp_path / "b" / "evalkit.db", "org/ratings", api=offline, sleep=lambda s: None).restore_if_missing()
    # an outage is no token problem: the fix says to restart once the Hub answers (Space audit, 2026-12-04)
    assert "could not be reached" in refused.value.fix and "HF_TOKEN" not in refused.value.fix
    down = FakeHub(tmp_path / "hub", fail_download=ConnectionError("huggingface.co unreachable"))
    with pytest.raises(EvalkitError, match="cannot restore") as refused:
        DatabaseSync(tmp_path / "c" / "evalkit.db", "org/ratings", api=down, sleep=lambda s: None).restore_if_missing()
    assert "restart the Space once huggingface.co answers" in refused.value.fix


def test_an_existing_public_repo_gets_no_database(tmp_path):
    """The sync asks for a private repo, but create_repo(exist_ok=True) leaves an existing public one public: the
    visibility is read back, and neither a push nor a start happens on a public repo."""
    hub = FakeHub(tmp_path / "hub", public=True)
    db_path = tmp_path / "evalkit.db"
    _add_experiment(db_path)
    sync = DatabaseSync(db_path, "org/ratings", api=hub)
    assert sync.push_now() is False and hub.uploads == 0 and sync.failures == 1
    assert _rows(db_path) == 1  # the local data stays
    with pytest.raises(EvalkitError, match="(?s)sync repo org/ratings is public.*make the dataset repo org/ratings "
                                           "private on the Hub"):
        DatabaseSync(tmp_path / "space" / "evalkit.db", "org/ratings", api=hub).restore_if_missing()
    assert not (tmp_path / "space" / "evalkit.db").exists()
    hub.public = False
    assert sync.push_now() is True and hub.uploads == 1


def test_a_downloaded_file_that_is_no_database_is_refused_and_leaves_nothing(tmp_path):
    """A truncated upload, a Git LFS pointer, a header without its pages, an empty file: the start stops with the
    promised error, and no `<db>.restoring` is left behind."""
    good_path = tmp_path / "good.db"
    _add_experiment(good_path)
    open_db(good_path).conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    good = good_path.read_bytes()
    assert len(good) > 4096
    cases = {"truncated": good[: len(good) // 2], "lfs": b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\n",
             "header": good[:100], "empty": b""}
    for name, blob in cases.items():
        hub = FakeHub(tmp_path / f"hub-{name}")
        (hub.root / "evalkit.db").write_bytes(blob)
        space = tmp_path / f"space-{name}"
        with pytest.raises(EvalkitError, match="(?s)evalkit.db in org/ratings is not an intact evalkit database.*"
                                               "earlier commit"):
            DatabaseSync(space / "evalkit.db", "org/ratings", api=hub).restore_if_missing()
        assert not space.exists() or list(space.iterdir()) == [], (name, list(space.iterdir()))


def test_a_token_that_can_read_but_not_write_stops_the_start_and_failing_pushes_are_shown(tmp_path, monkeypatch):
    """Space audit, 2026-12-04: the start checked only that the repo could be read, so a read-only token served for
    days while every push failed (403), seen only in the container log, and a restart lost every rating since. The
    start now proves it can write (a small file), stops on 401/403, and each push's outcome is kept beside the
    database for the app to show organisers."""
    from evalkit.publish.sync import START_FILE, sync_health

    hub = FakeHub(tmp_path / "hub")
    db_path = tmp_path / "space" / "evalkit.db"
    sync = DatabaseSync(db_path, "org/ratings", api=hub)
    sync.restore_if_missing()
    sync.check_can_write()
    assert (tmp_path / "hub" / START_FILE).exists() and sync_health(db_path)["failures"] == 0
    _add_experiment(db_path)
    assert sync.push_now()
    # the same repo with a read-only token: readable, so the restore is fine; the write check stops the start
    readonly = DatabaseSync(tmp_path / "space2" / "evalkit.db", "org/ratings",
                            api=FakeHub(tmp_path / "hub", read_only=True))
    assert readonly.restore_if_missing() is True
    with pytest.raises(EvalkitError, match="(?s)can be read but not written with this token.*lose every rating.*"
                                           "write access"):
        readonly.check_can_write()
    # `evalkit serve` (python app.py on a Space) runs the check: it stops before serving
    from click.testing import CliRunner

    import huggingface_hub

    from evalkit.cli import cli

    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: FakeHub(tmp_path / "hub", read_only=True))
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "org/ratings")
    r = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "space4" / "evalkit.db"), "--no-prepare"])
    assert r.exit_code == 1 and r.output.startswith("Error: the sync repo org/ratings can be read but not written")
    # the Hub not answering at the start: the start goes on, the failure recorded; pushes fail, then one goes through
    flaky = FakeHub(tmp_path / "hub", fail_uploads=3)
    db3 = tmp_path / "space3" / "evalkit.db"
    sync3 = DatabaseSync(db3, "org/ratings", api=flaky)
    sync3.restore_if_missing()
    sync3.check_can_write()
    _add_experiment(db3)
    assert sync3.push_now() is False and sync3.push_now() is False
    health = sync_health(db3)
    assert health["failures"] == 3 and health["failing_since"] and "network down" in health["error"]
    assert health["repo"] == "org/ratings" and health["last_ok_at"] is None
    assert sync3.push_now() is True
    assert sync_health(db3)["failures"] == 0 and sync_health(db3)["last_ok_at"]
    assert sync_health(tmp_path / "nowhere.db") is None  # a local app: no sync, no warning


def test_organisers_see_on_the_results_tab_that_pushes_fail(tmp_path):
    """Where the organiser looks: the Results tab says the database is not reaching the Hub, how long, and that a
    restart loses the ratings since; nothing when pushes go through."""
    from evalkit.ui.results import sync_warning

    hub = FakeHub(tmp_path / "hub", read_only=True)
    db_path = tmp_path / "evalkit.db"
    _add_experiment(db_path)
    sync = DatabaseSync(db_path, "org/ratings", api=hub)
    assert sync_warning(db_path, "en") == ""
    assert sync.push_now() is False
    en, zh = sync_warning(db_path, "en"), sync_warning(db_path, "zh")
    assert "not reaching the Hub" in en and "org/ratings" in en and "failed 1 time(s)" in en and "403" in en
    assert "restart loses them" in en and "重启会丢失" in zh
    hub.read_only = False
    assert sync.push_now() is True and sync_warning(db_path, "en") == ""
    # failing after a good push: what is at risk dates from that push (Space verification, 2026-12-04)
    good = sync.last_ok_at
    hub.read_only = True
    _add_experiment(db_path)
    assert sync.push_now() is False
    assert f"Ratings stored since {good.replace('T', ' ').replace('+00:00', ' UTC')} (the last push" in sync_warning(
        db_path, "en")


def _started_and_pushed(hub, tmp_path):
    """A Space's sync started on a fresh repo, with one push of a database holding one experiment."""
    db_path = tmp_path / "space" / "evalkit.db"
    sync = DatabaseSync(db_path, "org/ratings", api=hub)
    sync.restore_if_missing()
    sync.check_can_write()
    _add_experiment(db_path)
    assert sync.push_now()
    return sync, db_path


def test_two_apps_syncing_one_repo_are_both_told_so_and_neither_pushes_over_the_other(tmp_path, caplog):
    """Sync audit, 2026-12-06: two apps on one sync repo (a duplicated Space, a second replica), each storing its own
    raters' ratings: the second to push was held over the first's file and said so, but the first pushed on with its
    organisers told nothing, and restarts then served its file alone. The first now sees the second's start file
    replace its own and says so, in its log and on its organisers' Results tab (both languages); the pushes' own
    checks stay, so neither file is pushed over."""
    from evalkit.publish.sync import sync_health
    from evalkit.ui.results import sync_warning

    hub = FakeHub(tmp_path / "hub")
    first, first_db = _started_and_pushed(hub, tmp_path)
    assert sync_warning(first_db, "en") == ""
    second_db = tmp_path / "replica" / "evalkit.db"
    second = DatabaseSync(second_db, "org/ratings", api=hub)
    assert second.restore_if_missing() is True
    second.check_can_write()
    _add_experiment(first_db)  # each app's raters rate on it
    _add_experiment(second_db)
    with caplog.at_level("ERROR", logger="evalkit.publish.sync"):
        assert first.push_now() is True
    assert "another app started syncing with org/ratings after this one" in caplog.text
    assert sync_health(first_db)["rival_since"] == first.rival_since is not None
    en, zh = sync_warning(first_db, "en"), sync_warning(first_db, "zh")
    assert "Another app syncs with the dataset org/ratings too" in en and "另一个应用也在同步数据集 org/ratings" in zh
    assert second.push_now() is False and "held" in sync_warning(second_db, "en")  # never over the first's file
    assert _rows(tmp_path / "hub" / "evalkit.db") == 2 and second.rival_since is None


def test_an_idle_app_learns_of_a_second_app_on_its_own_interval_without_any_rating(tmp_path):
    """Sync audit, 2026-12-06: the first app learnt of a second app syncing its repo only when its own raters wrote
    (the start file was compared only before a push), and the second learnt that the first had pushed over the file it
    restored only when its raters wrote, their ratings then held. Each tick with nothing to push now reads the repo's
    two entries (no download, no commit), so both organisers are told within an interval, their raters idle."""
    from evalkit.publish.sync import sync_health
    from evalkit.ui.results import sync_warning

    hub = FakeHub(tmp_path / "hub")
    first, first_db = _started_and_pushed(hub, tmp_path)
    second_db = tmp_path / "replica" / "evalkit.db"
    second = DatabaseSync(second_db, "org/ratings", api=hub, every_seconds=0.05)
    assert second.restore_if_missing() is True
    second.check_can_write()
    commits = hub.uploads
    first.every_seconds = 0.05  # the interval, shortened: no rating is stored on the first app meanwhile
    first.start()
    told = _until(lambda: (sync_health(first_db) or {}).get("rival_since"))
    first.stop(final_push=False)
    assert told, "the idle first app was never told of the second"
    assert "Another app syncs with the dataset org/ratings too" in sync_warning(first_db, "en")
    assert "另一个应用也在同步数据集 org/ratings" in sync_warning(first_db, "zh")
    assert hub.uploads == commits  # the look commits nothing
    _add_experiment(first_db)  # the first's raters rate and it pushes; the second's stay idle
    assert first.push_now() is True
    second.start()
    held = _until(lambda: (sync_health(second_db) or {}).get("held") == "replaced")
    second.stop(final_push=False)
    assert held, "the idle second app was never told that the repo's file was replaced"
    assert "held" in sync_warning(second_db, "en") and _rows(tmp_path / "hub" / "evalkit.db") == 2
    assert hub.uploads == commits + 1  # the second pushed nothing over the first's file

    def unanswered(*a, **k):
        raise ConnectionError("the Hub did not answer")

    hub.get_paths_info = unanswered  # a look the Hub does not answer is no failed push: nothing is unpushed
    assert first.push_now() is True and sync_health(first_db)["failures"] == 0


def test_a_database_put_in_the_repo_while_the_app_runs_is_never_pushed_over(tmp_path):
    """Space audit, 2026-12-04: an organiser who uploaded a database (a backup, another study's) to the sync repo while
    the Space ran lost it at the Space's next push, which went over it. Each push now compares the repo's file with the
    one the app last restored or pushed (the Hub's blob ids), holds its pushes while they differ, says so to the
    organisers, and resumes when the file is put back; a restart then serves the repo's file."""
    from evalkit.publish.sync import sync_health
    from evalkit.ui.results import sync_warning

    hub = FakeHub(tmp_path / "hub")
    sync, db_path = _started_and_pushed(hub, tmp_path)
    pushed = hub.uploads
    ours = (tmp_path / "hub" / "evalkit.db").read_bytes()
    good = sync.last_ok_at
    # the organiser uploads another database (one with two experiments) while the Space runs
    other = tmp_path / "backup.db"
    _add_experiment(other)
    _add_experiment(other)
    theirs = other.read_bytes()
    shutil.copyfile(other, tmp_path / "hub" / "evalkit.db")
    _add_experiment(db_path)  # a rating arrives on the Space: the next push has something to push
    assert sync.push_now() is False and sync.push_now() is False
    assert (tmp_path / "hub" / "evalkit.db").read_bytes() == theirs and hub.uploads == pushed  # never pushed over
    assert _rows(db_path) == 2  # the Space's own data untouched
    health = sync_health(db_path)
    assert health["held"] == "replaced" and "holds its pushes" in health["error"]
    en, zh = sync_warning(db_path, "en"), sync_warning(db_path, "zh")
    assert "pushes to the Hub are held" in en and "replaced the database in the dataset org/ratings" in en
    assert f"not pushed since {good.replace('T', ' ').replace('+00:00', ' UTC')}" in en
    assert "restore the file in the dataset's history to this app's last commit" in en and "restart the Space" in en
    assert "暂停同步" in zh and "替换" in zh
    # a restart (no persistent storage) serves the repo's file, the organiser's choice
    restarted = DatabaseSync(tmp_path / "space-after" / "evalkit.db", "org/ratings", api=FakeHub(tmp_path / "hub"))
    assert restarted.restore_if_missing() and _rows(tmp_path / "space-after" / "evalkit.db") == 2
    # or the organiser puts this app's last push back: the pushes resume by themselves, the warning goes
    (tmp_path / "hub" / "evalkit.db").write_bytes(ours)
    assert sync.push_now() is True and hub.uploads == pushed + 1 and _rows(tmp_path / "hub" / "evalkit.db") == 2
    assert sync_health(db_path)["held"] == "" and sync_warning(db_path, "en") == ""
    # a file removed from the repo is not silently pushed back either: it is said to be removed
    (tmp_path / "hub" / "evalkit.db").unlink()
    _add_experiment(db_path)
    assert sync.push_now() is False and not (tmp_path / "hub" / "evalkit.db").exists()
    assert sync_health(db_path)["held"] == "removed" and "removed the database" in sync_warning(db_path, "en")
    assert "删除" in sync_warning(db_path, "zh")


def test_a_push_commits_on_the_head_it_checked_and_a_kept_database_without_state_serves_the_repo_s_file(tmp_path):
    """The check and the commit are one step: an upload by someone else between them makes the Hub refuse the push
    (parent_commit), and the next push sees the other file and holds. A database kept on the Space's disk (persistent
    storage) has restored nothing: without the state its disk keeps since, the repo's file is served when the disk
    holds no rating it lacks (never taken as its own last push: Space audit F1, 2026-12-05), and pushes go on."""
    from evalkit.publish.sync import status_file, sync_health

    class Racing(FakeHub):  # another uploader commits right after the sync has read the repo's file
        race = False

        def get_paths_info(self, *a, **k):
            out = super().get_paths_info(*a, **k)
            if self.race:
                self.race = False
                (self.root / "evalkit.db").write_bytes(b"another database")
            return out

    hub = Racing(tmp_path / "hub")
    sync, db_path = _started_and_pushed(hub, tmp_path)
    _add_experiment(db_path)
    hub.race = True
    assert sync.push_now() is False and "412" in sync_health(db_path)["error"]
    assert (tmp_path / "hub" / "evalkit.db").read_bytes() == b"another database"
    assert sync.push_now() is False and sync_health(db_path)["held"] == "replaced"
    assert (tmp_path / "hub" / "evalkit.db").read_bytes() == b"another database"
    # persistent storage kept by an app before its disk remembered what it pushed (no state file): the database is on
    # the disk at the start; the repo holds this app's earlier push
    (tmp_path / "hub" / "evalkit.db").unlink()
    shutil.copyfile(db_path, tmp_path / "hub" / "evalkit.db")
    status_file(db_path).unlink()
    kept = DatabaseSync(db_path, "org/ratings", api=FakeHub(tmp_path / "hub"))
    assert kept.restore_if_missing() is True and list(db_path.parent.glob("evalkit.db.replaced-*"))
    kept.check_can_write()
    _add_experiment(db_path)
    assert kept.push_now() is True and _rows(tmp_path / "hub" / "evalkit.db") == 3


def test_a_space_with_persistent_storage_serves_a_database_uploaded_while_it_was_down_and_never_pushes_over_it(
        tmp_path):
    """Known limit until 2026-12-04: a Space with persistent storage that restarted took whatever the repo held as its
    own last push, so a database uploaded while it was paused (the README's way to bring a new pool) went under its
    next push unless the organiser had deleted the disk's copy. The disk now remembers the repo's file it last restored
    or pushed. A Space that pushed everything before it stopped serves the upload, its own copy set aside; one whose
    disk holds ratings it never pushed serves those and holds its pushes, saying so at once."""
    from evalkit.publish.sync import sync_health
    from evalkit.ui.results import sync_warning

    hub = FakeHub(tmp_path / "hub")
    sync, db_path = _started_and_pushed(hub, tmp_path)
    sync.stop()  # the Space is paused: its final push leaves nothing unpushed
    assert _rows(tmp_path / "hub" / "evalkit.db") == 1
    other = tmp_path / "new-pool.db"
    for _ in range(3):
        _add_experiment(other)
    shutil.copyfile(other, tmp_path / "hub" / "evalkit.db")  # uploaded while it was down
    # restarted on the same disk: the upload is served, the disk's copy kept beside it
    kept = DatabaseSync(db_path, "org/ratings", api=FakeHub(tmp_path / "hub"))
    assert kept.restore_if_missing() is True and _rows(db_path) == 3
    aside = list(db_path.parent.glob("evalkit.db.replaced-*"))
    assert [p.name for p in aside if not p.name.endswith(("-wal", "-shm"))] and _rows(
        next(p for p in aside if not p.name.endswith(("-wal", "-shm")))) == 1
    kept.check_can_write()
    assert sync_warning(db_path, "en") == ""
    _add_experiment(db_path)
    assert kept.push_now() is True and _rows(tmp_path / "hub" / "evalkit.db") == 4  # on top of the upload
    # nothing changed in the repo while down: the disk's database is served as it is, nothing pushed again
    again = DatabaseSync(db_path, "org/ratings", api=FakeHub(tmp_path / "hub"))
    assert again.restore_if_missing() is False and _rows(db_path) == 4
    again.check_can_write()
    pushed = again.api.uploads
    assert again.push_now() is True and again.api.uploads == pushed
    # both changed: ratings on the disk never pushed (the Space was killed), and another upload meanwhile
    _add_experiment(db_path)
    theirs = tmp_path / "theirs.db"
    _add_experiment(theirs)
    shutil.copyfile(theirs, tmp_path / "hub" / "evalkit.db")
    uploaded = (tmp_path / "hub" / "evalkit.db").read_bytes()
    held = DatabaseSync(db_path, "org/ratings", api=FakeHub(tmp_path / "hub"))
    assert held.restore_if_missing() is False and _rows(db_path) == 5  # the disk's unpushed ratings are served
    held.check_can_write()
    assert sync_health(db_path)["held"] == "replaced" and "pushes to the Hub are held" in sync_warning(db_path, "en")
    _add_experiment(db_path)
    assert held.push_now() is False and (tmp_path / "hub" / "evalkit.db").read_bytes() == uploaded
    # the Space is pointed at another repo: an empty one gets the disk's database; one holding a database never
    # gets pushed over, and its file is served when the disk has nothing unpushed to its old repo
    empty = DatabaseSync(db_path, "org/ratings-2", api=FakeHub(tmp_path / "hub2"))
    assert empty.restore_if_missing() is False
    empty.check_can_write()
    assert empty.push_now() is True and _rows(tmp_path / "hub2" / "evalkit.db") == _rows(db_path)
    third = tmp_path / "hub3"
    third.mkdir()
    shutil.copyfile(theirs, third / "evalkit.db")
    moved = DatabaseSync(db_path, "org/ratings-3", api=FakeHub(third))
    assert moved.restore_if_missing() is True and _rows(db_path) == 1  # hub2 holds everything the disk had


class LostAnswer(FakeHub):
    """The Hub commits the upload, then the answer is lost (a read timeout after a large upload), `lose` times."""
    lose = 0

    def upload_file(self, *a, **k):
        out = super().upload_file(*a, **k)
        if self.lose:
            self.lose -= 1
            raise TimeoutError("The read operation timed out")
        return out


@pytest.mark.parametrize("lfs", [False, True])
def test_a_push_that_reached_the_hub_but_lost_its_answer_is_recognised_as_the_app_s_own(tmp_path, lfs):
    """Space audit F2, 2026-12-05: a push committed on the Hub whose answer was lost (a timeout) left the app with the
    old blob id, so every later push took its own commit for someone else's upload and was held for good (a restart
    then lost the ratings). The app now remembers what it sent and recognises that file in the repo (the git blob id,
    or a Git LFS file's sha256), running on or restarted on its persistent disk."""
    from evalkit.publish.sync import sync_health
    from evalkit.ui.results import sync_warning

    hub = LostAnswer(tmp_path / "hub", lfs=lfs)
    sync, db_path = _started_and_pushed(hub, tmp_path)
    _add_experiment(db_path)
    hub.lose = 1
    assert sync.push_now() is False and _rows(tmp_path / "hub" / "evalkit.db") == 2  # committed, answer lost
    _add_experiment(db_path)
    assert sync.push_now() is True and _rows(tmp_path / "hub" / "evalkit.db") == 3
    assert sync_health(db_path)["held"] == "" and sync_warning(db_path, "en") == ""
    # the same at the final push, then a restart on the same disk (persistent storage): not held either
    _add_experiment(db_path)
    hub.lose = 1
    sync.stop()  # the final push lost its answer
    assert _rows(tmp_path / "hub" / "evalkit.db") == 4
    again = DatabaseSync(db_path, "org/ratings", api=LostAnswer(tmp_path / "hub", lfs=lfs))
    assert again.restore_if_missing() is False
    again.check_can_write()
    assert sync_health(db_path)["held"] == ""
    _add_experiment(db_path)
    assert again.push_now() is True and _rows(tmp_path / "hub" / "evalkit.db") == 5
    # a file that is not what the app sent is still someone else's: held, never pushed over
    other = tmp_path / "other.db"
    _add_experiment(other)
    shutil.copyfile(other, tmp_path / "hub" / "evalkit.db")
    _add_experiment(db_path)
    assert again.push_now() is False and _rows(tmp_path / "hub" / "evalkit.db") == 1
    assert sync_health(db_path)["held"] == "replaced"


class ReadBackFails(FakeHub):
    """The commit goes through; the read of the file at that commit fails `fail_reads` times (an intermittent Hub)."""
    fail_reads = 0
    just_committed = False

    def upload_file(self, *a, **k):
        out = super().upload_file(*a, **k)
        self.just_committed = True
        return out

    def get_paths_info(self, repo_id, paths, revision=None, repo_type=None):
        after_commit, self.just_committed = self.just_committed, False
        if self.fail_reads and after_commit:
            self.fail_reads -= 1
            raise ConnectionError("read back failed")
        return super().get_paths_info(repo_id, paths, revision=revision, repo_type=repo_type)


def test_a_failed_read_back_after_a_push_never_lets_the_next_push_go_over_an_upload(tmp_path):
    """Space audit F4, 2026-12-05: after a good push whose read-back failed, the app forgot which file it had pushed
    and its next push adopted whatever the repo held: a database uploaded in between was pushed over, silently. The app
    now knows the file it pushed by its content: its own file lets the pushes go on, any other holds them, running or
    restarted on its persistent disk."""
    from evalkit.publish.sync import sync_health

    hub = ReadBackFails(tmp_path / "hub")
    sync, db_path = _started_and_pushed(hub, tmp_path)
    _add_experiment(db_path)
    hub.fail_reads = 1
    assert sync.push_now() is True and _rows(tmp_path / "hub" / "evalkit.db") == 2  # pushed; read-back failed
    _add_experiment(db_path)
    assert sync.push_now() is True and _rows(tmp_path / "hub" / "evalkit.db") == 3  # its own file: pushes go on
    _add_experiment(db_path)
    hub.fail_reads = 1
    assert sync.push_now() is True and _rows(tmp_path / "hub" / "evalkit.db") == 4
    other = tmp_path / "upload.db"  # an upload in between
    for _ in range(6):
        _add_experiment(other)
    shutil.copyfile(other, tmp_path / "hub" / "evalkit.db")
    uploaded = (tmp_path / "hub" / "evalkit.db").read_bytes()
    _add_experiment(db_path)
    assert sync.push_now() is False and (tmp_path / "hub" / "evalkit.db").read_bytes() == uploaded
    assert sync_health(db_path)["held"] == "replaced"
    # restarted on the same disk in that state: still held, the upload never pushed over
    again = DatabaseSync(db_path, "org/ratings", api=FakeHub(tmp_path / "hub"))
    assert again.restore_if_missing() is False
    again.check_can_write()
    _add_experiment(db_path)
    assert again.push_now() is False and (tmp_path / "hub" / "evalkit.db").read_bytes() == uploaded
    assert sync_health(db_path)["held"] == "replaced"


def test_a_disk_database_the_sync_never_knew_is_never_pushed_over_an_uploaded_one(tmp_path, rated_db):
    """Space audit F1, 2026-12-05: a Space on persistent storage that served with EVALKIT_SYNC_REPO=off (no sync state
    beside its database) and then got the repo the README's step 4 asks for, with the organiser's upload in it, took
    the upload for its own last push and pushed its disk's database over it, silently. Now a database on the disk with
    no sync state counts as the repo's only when the repo has none: an upload is served when the disk holds no rating
    it lacks (the disk's copy set aside), else the disk's database is served and its pushes held, saying what to do."""
    from evalkit.publish.sync import sync_health
    from evalkit.ui.results import sync_warning

    rated_db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    upload = tmp_path / "upload.db"
    for _ in range(6):
        _add_experiment(upload)
    # the disk holds ratings the upload lacks: served, pushes held, the upload never pushed over
    space = tmp_path / "data"
    space.mkdir()
    shutil.copyfile(tmp_path / "rated.db", space / "evalkit.db")
    hub = FakeHub(tmp_path / "hub")
    shutil.copyfile(upload, hub.root / "evalkit.db")
    uploaded = (hub.root / "evalkit.db").read_bytes()
    sync = DatabaseSync(space / "evalkit.db", "org/ratings", api=hub)
    assert sync.restore_if_missing() is False
    sync.check_can_write()
    assert sync_health(space / "evalkit.db")["held"] == "foreign"
    en, zh = sync_warning(space / "evalkit.db", "en"), sync_warning(space / "evalkit.db", "zh")
    assert "never pushed" in en and "org/ratings" in en and "remove evalkit.db from the dataset" in en
    assert "暂停" in zh
    _add_experiment(space / "evalkit.db")
    assert sync.push_now() is False and (hub.root / "evalkit.db").read_bytes() == uploaded
    assert "never restored nor pushed" in sync_health(space / "evalkit.db")["error"]
    # restarted on that disk while held: still held, said the same way
    restarted = DatabaseSync(space / "evalkit.db", "org/ratings", api=hub)
    assert restarted.restore_if_missing() is False
    restarted.check_can_write()
    assert sync_health(space / "evalkit.db")["held"] == "foreign"
    assert (hub.root / "evalkit.db").read_bytes() == uploaded
    # the organiser removes the repo's file (its history keeps it): the disk's database goes there
    (hub.root / "evalkit.db").unlink()
    assert sync.push_now() is True and (hub.root / "evalkit.db").exists()
    assert sync_health(space / "evalkit.db")["held"] == ""
    # the disk holds no rating the upload lacks (a pool, no ratings): the upload is served, the disk's copy set aside
    space2 = tmp_path / "data2"
    _add_experiment(space2 / "evalkit.db")
    hub2 = FakeHub(tmp_path / "hub2")
    shutil.copyfile(upload, hub2.root / "evalkit.db")
    sync2 = DatabaseSync(space2 / "evalkit.db", "org/ratings", api=hub2)
    assert sync2.restore_if_missing() is True and _rows(space2 / "evalkit.db") == 6
    assert [p for p in space2.glob("evalkit.db.replaced-*") if not p.name.endswith(("-wal", "-shm"))]
    sync2.check_can_write()
    _add_experiment(space2 / "evalkit.db")
    assert sync2.push_now() is True and _rows(hub2.root / "evalkit.db") == 7  # on top of the upload
    # a repo with no database: the disk's goes to it
    hub3 = FakeHub(tmp_path / "hub3")
    space3 = tmp_path / "data3"
    shutil.copytree(space, space3)
    (space3 / "evalkit.db.sync.json").unlink()
    sync3 = DatabaseSync(space3 / "evalkit.db", "org/ratings", api=hub3)
    assert sync3.restore_if_missing() is False
    sync3.check_can_write()
    assert sync3.push_now() is True and (hub3.root / "evalkit.db").exists()
    # the start could not compare (the Hub down): the first push does not adopt the repo's file either
    space4 = tmp_path / "data4"
    shutil.copytree(space, space4)
    (space4 / "evalkit.db.sync.json").unlink()
    hub4 = FakeHub(tmp_path / "hub4", fail_download=ConnectionError("down"))
    shutil.copyfile(upload, hub4.root / "evalkit.db")
    sync4 = DatabaseSync(space4 / "evalkit.db", "org/ratings", api=hub4)
    assert sync4.restore_if_missing() is False
    sync4.check_can_write()
    _add_experiment(space4 / "evalkit.db")
    assert sync4.push_now() is False and (hub4.root / "evalkit.db").read_bytes() == uploaded
    assert sync_health(space4 / "evalkit.db")["held"] == "foreign"


def test_a_failed_push_is_retried_soon_with_backoff_not_a_whole_interval_later(tmp_path, caplog):
    """Sync audit, 2026-12-06: a push the Hub failed (a blip, a 5xx, a rate limit) was tried again only at the next
    tick, EVALKIT_SYNC_EVERY (default 300 s) later, so one failed push doubled the ratings a restart could lose. It is
    now tried again after retry_delays in turn (never beyond the interval), a Retry-After the Hub sent honoured, and
    the log says when; a push held over someone else's upload still waits a tick."""
    import httpx2

    hub = FakeHub(tmp_path / "hub", fail_uploads=3)
    db_path = tmp_path / "evalkit.db"
    _add_experiment(db_path)
    sync = DatabaseSync(db_path, "org/ratings", api=hub, every_seconds=3600, retry_delays=(2, 20, 200))
    with caplog.at_level("WARNING", logger="evalkit.publish.sync"):
        assert sync.push_now() is False and sync.retry_in == 2
        assert sync.push_now() is False and sync.retry_in == 20
        assert "retrying in 20s (failure 2 in a row)" in caplog.text
    limited = hub_error(429, "https://huggingface.co/api/datasets/org/ratings/commit/main", message="Too many requests")
    limited.response = httpx2.Response(429, headers={"Retry-After": "900"})
    assert sync._backoff(limited) == 900  # the Hub's own wait, longer than the backoff's
    sync.retry_delays = (0.05,)  # the thread retries by itself, long before the hour's tick
    assert sync.push_now() is False and sync.retry_in == 0.05
    sync.start()
    _until(lambda: hub.uploads)
    sync.stop(final_push=False)
    assert hub.uploads == 1 and sync.retry_in is None and _rows(tmp_path / "hub" / "evalkit.db") == 1


def test_a_final_push_the_hub_fails_is_tried_again_before_the_app_stops(tmp_path, caplog):
    """Sync audit, 2026-12-06: the push as the app stops (SIGTERM, a restart) was tried once, so a Hub that failed it
    once (a blip, a 5xx) lost every rating since the last push with the Space's disk. It is now tried again after
    short waits (FINAL_RETRY_DELAYS); a push held over someone else's upload is not retried (nothing would change)."""
    from evalkit.publish.sync import FINAL_RETRY_DELAYS

    hub = FakeHub(tmp_path / "hub", fail_uploads=len(FINAL_RETRY_DELAYS))
    db_path = tmp_path / "evalkit.db"
    _add_experiment(db_path)
    waits = []
    sync = DatabaseSync(db_path, "org/ratings", api=hub, sleep=waits.append)
    with caplog.at_level("WARNING", logger="evalkit"):
        sync.stop(final_push=True)
    assert hub.uploads == 1 and waits == list(FINAL_RETRY_DELAYS)
    # the log names the waits it keeps, never the loop's backoff of a tick that will not come
    said = caplog.text
    assert "retrying in" not in said and all(f"trying again in {d:g}s" in said for d in FINAL_RETRY_DELAYS), said
    assert _rows(tmp_path / "hub" / "evalkit.db") == 1
    # held: another database went to the repo meanwhile; one try, no waits
    (tmp_path / "hub" / "evalkit.db").write_bytes(b"someone else's upload")
    _add_experiment(db_path)
    waits.clear()
    sync.stop(final_push=True)
    assert waits == [] and (tmp_path / "hub" / "evalkit.db").read_bytes() == b"someone else's upload"


def test_a_sync_interval_out_of_range_stops_the_start_and_the_sync_thread_survives_errors(tmp_path, monkeypatch):
    """Space audit F3, 2026-12-05: EVALKIT_SYNC_EVERY=0 (or negative, nan) spun the sync in a tight loop of snapshots
    and commits; 1e12 or inf killed the sync thread (Event.wait overflowed), leaving no periodic push and no warning.
    The start now refuses a value outside 10 s to one day, naming the variable and the value; and an error inside the
    sync thread is recorded (the Results tab shows it), the thread going on."""
    from evalkit.publish.sync import sync_health

    monkeypatch.setenv("EVALKIT_SYNC_REPO", "org/ratings")
    for bad in ("0", "-5", "nan", "inf", "1e12", "9.5", "86401"):
        monkeypatch.setenv("EVALKIT_SYNC_EVERY", bad)
        with pytest.raises(EvalkitError, match=f"EVALKIT_SYNC_EVERY={bad} .*10 to 86400") as refused:
            from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h"))
        assert "EVALKIT_SYNC_EVERY=300" in refused.value.fix
    for good in ("10", "300", "86400"):
        monkeypatch.setenv("EVALKIT_SYNC_EVERY", good)
        assert from_environment(tmp_path / "x.db", api=FakeHub(tmp_path / "h")).every_seconds == float(good)
    db_path = tmp_path / "evalkit.db"
    _add_experiment(db_path)
    sync = DatabaseSync(db_path, "org/ratings", api=FakeHub(tmp_path / "hub"), every_seconds=0.02)
    calls = []

    def push_now():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return True

    sync.push_now = push_now
    sync.start()
    _until(lambda: len(calls) >= 2)
    sync.stop(final_push=False)
    assert len(calls) >= 2 and "RuntimeError: boom" in sync_health(db_path)["error"]


def test_a_transient_hub_error_at_the_start_is_retried_a_few_times_before_the_start_stops(tmp_path):
    """Space audit F7, 2026-12-05: one connection error or 5xx from the Hub while the start restored the database
    stopped the Space until someone restarted it. The restore now retries a few times, waiting longer each time (the
    waits injectable here), and stops only when every try failed, saying how often it tried; a refusal (401/403, a
    public repo) is never retried."""
    hub_root = tmp_path / "hub"
    sync, _ = _started_and_pushed(FakeHub(hub_root), tmp_path)

    class Flaky(FakeHub):
        fails = 0

        def repo_info(self, repo_id, repo_type=None):
            if self.fails:
                self.fails -= 1
                raise (ConnectionError("connection reset") if self.fails % 2 else
                       hub_error(503, f"https://huggingface.co/api/datasets/{repo_id}", message="Service Unavailable"))
            return super().repo_info(repo_id, repo_type=repo_type)

    waits = []
    flaky = Flaky(hub_root)
    flaky.fails = 2
    restored = DatabaseSync(tmp_path / "s2" / "evalkit.db", "org/ratings", api=flaky, retry_delays=(1, 3, 9),
                            sleep=waits.append)
    assert restored.restore_if_missing() is True and _rows(tmp_path / "s2" / "evalkit.db") == 1
    assert waits == [1, 3]
    waits.clear()
    flaky.fails = 10
    down = DatabaseSync(tmp_path / "s3" / "evalkit.db", "org/ratings", api=flaky, retry_delays=(1, 3, 9),
                        sleep=waits.append)
    with pytest.raises(EvalkitError, match="cannot restore") as refused:
        down.restore_if_missing()
    assert waits == [1, 3, 9] and "tried 4 times" in str(refused.value)
    assert not (tmp_path / "s3" / "evalkit.db").exists()
    waits.clear()
    url = "https://huggingface.co/api/datasets/org/ratings"
    with pytest.raises(EvalkitError, match="sync repo org/ratings .*cannot be read"):
        DatabaseSync(tmp_path / "s4" / "evalkit.db", "org/ratings", api=FakeHub(hub_root, fail_info=hub_error(401, url)),
                     retry_delays=(1, 3, 9), sleep=waits.append).restore_if_missing()
    assert waits == []


def test_a_space_serving_without_sync_on_a_disk_a_restart_wipes_says_so(tmp_path, monkeypatch, capsys):
    """Space audit F11, 2026-12-05: EVALKIT_SYNC_REPO=off on a Space without persistent storage (the variable meant
    for a deliberate choice, or storage not attached) started without a word, though a restart wipes every rating. The
    start's log now says where the database is and whether a restart keeps it, and the organisers' Results tab warns
    while it is on the Space's own disk."""
    import evalkit.publish.sync as sync_module
    from evalkit.ui.results import sync_warning

    on_a_space(monkeypatch)
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "off")
    db_path = tmp_path / "results" / "evalkit.db"
    monkeypatch.setattr(sync_module, "_on_own_volume", lambda path: False)
    assert from_environment(db_path) is None
    err = capsys.readouterr().err
    assert "EVALKIT_SYNC_REPO=off" in err and str(db_path) in err and "restart or a rebuild wipes" in err
    assert "EVALKIT_DATA_DIR=/data" in err
    en, zh = sync_warning(db_path, "en"), sync_warning(db_path, "zh")
    assert "not synced" in en and "restart" in en and "EVALKIT_SYNC_REPO" in en and "重启" in zh
    monkeypatch.setattr(sync_module, "_on_own_volume", lambda path: True)  # persistent storage
    assert from_environment(db_path) is None
    err = capsys.readouterr().err
    assert str(db_path) in err and "wipes" not in err and sync_warning(db_path, "en") == ""
    monkeypatch.setattr(sync_module, "_on_own_volume", lambda path: False)
    monkeypatch.delenv("SYSTEM")  # a local app: nothing to say
    assert from_environment(db_path) is None and capsys.readouterr().err == "" and sync_warning(db_path, "en") == ""


def test_the_sync_s_info_lines_reach_the_log_of_a_served_app(tmp_path, monkeypatch, capsys):
    """Space audit F14, 2026-12-05: evalkit never configured logging, so Python dropped every INFO line of the sync (a
    fresh start on a repo, each good push): the Space's log could not show that the sync works at all. `serve` now
    gives evalkit's loggers a handler on stderr at INFO, once however often it is called."""
    import logging

    from click.testing import CliRunner

    import huggingface_hub

    from evalkit.cli import cli

    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: FakeHub(tmp_path / "hub"))
    monkeypatch.setenv("EVALKIT_SYNC_REPO", "org/ratings")
    for _ in range(2):
        r = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "space" / "evalkit.db"), "--no-prepare"])
        assert r.exit_code == 1 and r.output.count("no evalkit.db in org/ratings yet: starting a new study") == 1, r.output
    handlers = logging.getLogger("evalkit").handlers
    assert len(handlers) == 1
    sync = DatabaseSync(tmp_path / "space2" / "evalkit.db", "org/ratings", api=FakeHub(tmp_path / "hub"))
    sync.restore_if_missing()
    _add_experiment(tmp_path / "space2" / "evalkit.db")
    capsys.readouterr()
    assert sync.push_now()  # each good push says so, on the stderr of the moment (not the closed one of a runner)
    assert "pushed the database to org/ratings" in capsys.readouterr().err


# --- what a crash on a Space's own disk could take back is not shown (reveals, results views) ----------------------

def _synced_tab(tmp_path, hub, pairs=2, losable=True):
    """The Rate tab (test_rate_handlers.Tab, one rating closes a pair) over a database whose sync runs as the app's
    does (started: the tab's handlers reach it), after a first push; its early pushes wait an hour, so the test pushes
    (push_now) when it means to."""
    from test_rate_handlers import pooled_tab

    tab = pooled_tab(tmp_path, pairs)
    sync = DatabaseSync(tab.db_path, "org/ratings", api=hub, every_seconds=3600, min_gap=3600, losable=losable)
    sync.restore_if_missing()
    assert sync.push_now()
    sync.start()
    return tab, sync


def _restored(hub, folder):
    """The database a crash leaves: a fresh disk, restored from the repo."""
    path = folder / "evalkit.db"
    assert DatabaseSync(path, "org/ratings", api=hub).restore_if_missing() is True
    return open_db(path)


def test_a_reveal_on_a_space_s_own_disk_waits_until_the_rating_that_closed_its_pair_is_pushed(tmp_path):
    """Space audit: the database reaches the Hub every EVALKIT_SYNC_EVERY seconds, and a crash (OOM kill, a restart)
    loses what was stored since. A reveal was shown as soon as the rating closed its pair: if that rating was lost,
    the restored pair was open again and served again to the rater who had seen its sides, her second rating counted
    as blind. Now the reveal waits (said in both languages, Check again offered) until a pushed snapshot holds the
    pair's closing, and the rating asks for a push soon; a crash before that push re-serves only pairs whose reveal
    nobody saw, a crash after it none that anyone saw."""
    from evalkit.rating.queue import is_closed, next_pair
    from test_rate_handlers import REVEALING, shown

    hub = FakeHub(tmp_path / "hub")
    tab, sync = _synced_tab(tmp_path, hub)
    ui = tab.ui
    try:
        s, _ = tab.sign_in("ann")
        first = s.pair_id
        sync._soon.clear()
        out = tab.h.submit(s, *tab.form())  # closes the pair (one rating a pair)
        assert sync._soon.is_set(), "the rating asked for an early push"
        assert "待揭晓" in out[ui.reveal_md] and "保存到 Hub" in out[ui.reveal_md]
        assert not REVEALING.search(shown(out, ui)), "revealed before the closing rating reached the Hub"
        # a crash now: the restored pair is open again, and served again to ann, who never saw its sides
        crashed = _restored(hub, tmp_path / "crash1")
        assert not is_closed(crashed, first, 1)
        assert next_pair(crashed, "ann", 1) is not None
        crashed.conn.close()
        # the other pair, then the last screen: both waiting, Check again offered, in English too
        out = tab.h.next_screen(out[ui.session])
        out = tab.h.next_screen(tab.h.submit(out[ui.session], *tab.form())[ui.session])
        done = out[ui.done_md]
        assert "待揭晓 2" in done and "保存到 Hub" in done and out[ui.again_btn]["visible"] is True
        assert not REVEALING.search(shown(out, ui))
        from evalkit.ui.reveal import render_list
        from evalkit.rating.queue import rated_pairs
        from evalkit.store import open_db as _open

        db = _open(tab.db_path)
        en = render_list(rated_pairs(db, "ann", 1, saved=tab.h.saved()), "en")
        assert "2 pending" in en and "once the ratings are saved to the Hub" in en and not REVEALING.search(en)
        db.conn.close()
        assert sync.push_now()  # the push that holds both closings
        again = tab.h.next_screen(out[ui.session])  # Check again
        assert "已揭晓 2，待揭晓 0" in again[ui.done_md] and "ordinary" in again[ui.done_md]
        # a crash after that push: every pair whose reveal she saw stays closed, and is served to nobody
        crashed = _restored(hub, tmp_path / "crash2")
        assert is_closed(crashed, first, 1) and next_pair(crashed, "bob", 1) is None
        crashed.conn.close()
    finally:
        sync.stop(final_push=False)


def test_a_reveal_that_waited_for_its_copies_waits_for_their_closings_to_be_pushed_too(tmp_path):
    """A closed pair's reveal waits for the open pairs holding one of its texts (greedy copies: its reveal tells their
    sides, and one person may rate under several names). Its own closing pushed, a copy's closing not yet: a crash
    would reopen the copy, to be served to another name of whoever read the reveal. The reveal now waits for the
    copies' closings to be pushed as well."""
    from evalkit.rating.queue import rated_pairs, rater_reveal
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_pairs
    from evalkit.task.prompts import load_prompts
    from evalkit.ui.reveal import render_list
    from test_rate_handlers import Tab

    db = open_db(tmp_path / "r.db")
    same = GenerationRecord(prompt_id="writing-01", path="ordinary", text="通知 同", new_tokens=40, stop_reason="eos",
                            generate_seconds=2.0)
    insert_pairs(db, insert_experiment(db, "pool", {}, {}), [
        {"prompt_id": "writing-01", "sample": i, "ordinary": same, "ordinary_side": "AB"[i],
         "assisted": GenerationRecord(prompt_id="writing-01", path="assisted", text=f"通知乙 {i}", new_tokens=40,
                                      stop_reason="eos", generate_seconds=1.0)} for i in range(2)])
    db.conn.close()
    tab = Tab(tmp_path / "r.db", {p.id: p for p in load_prompts()})
    hub = FakeHub(tmp_path / "hub")
    sync = DatabaseSync(tab.db_path, "org/ratings", api=hub, every_seconds=3600, min_gap=3600, losable=True)
    sync.restore_if_missing()
    assert sync.push_now()
    sync.start()
    try:
        ann, _ = tab.sign_in("ann")
        tab.h.submit(ann, *tab.form())  # closes her pair; its copy is open
        assert sync.push_now()  # her pair's closing is in the repo
        bob, _ = tab.sign_in("bob")
        assert bob.pair_id not in (None, ann.pair_id)
        tab.h.submit(bob, *tab.form())  # closes the copy, not pushed yet
        db = open_db(tab.db_path)

        def ann_sees():
            one = rater_reveal(db, "ann", ann.pair_id, 1, saved=tab.h.saved())
            return one, render_list(rated_pairs(db, "ann", 1, saved=tab.h.saved()), "en")

        one, listed = ann_sees()
        assert getattr(one, "unsaved", False) and "saved to the Hub" in listed and "ordinary" not in listed
        assert sync.push_now()
        one, listed = ann_sees()
        assert one.a_path in ("ordinary", "assisted") and "1 revealed, 0 pending" in listed
        db.conn.close()
    finally:
        sync.stop(final_push=False)


def test_locally_or_on_persistent_storage_a_reveal_shows_at_once(tmp_path):
    """Where a crash loses nothing (a local disk, a Space's persistent storage) the reveal is shown as the rating
    closes the pair, as before, whatever the sync has pushed; a Space's own disk is the only place that waits."""
    from evalkit.publish.sync import _crash_loses, losable

    hub = FakeHub(tmp_path / "hub")
    tab, sync = _synced_tab(tmp_path, hub, losable=False)
    try:
        s, _ = tab.sign_in("ann")
        out = tab.h.submit(s, *tab.form())
        assert "ordinary" in out[tab.ui.reveal_md] and losable(tab.db_path) is None and hub.uploads == 1
    finally:
        sync.stop(final_push=False)
    assert not _crash_loses(tmp_path / "x.db")  # not a Space


def test_only_a_space_s_own_disk_makes_a_sync_that_can_lose_ratings(tmp_path, monkeypatch):
    from evalkit.publish import sync as sync_module

    on_a_space(monkeypatch)
    assert DatabaseSync(tmp_path / "x.db", "org/ratings", api=FakeHub(tmp_path / "h")).losable is True
    monkeypatch.setattr(sync_module, "_on_own_volume", lambda path: True)  # persistent storage at /data
    assert DatabaseSync(tmp_path / "x.db", "org/ratings", api=FakeHub(tmp_path / "h")).losable is False


def _results_tab(tmp_path):
    """The Results tab's Refresh handler over the small rated study (conftest.rated_db's fixture) and the Rate tab's
    handlers to sign in with; the tab is built in a gr.Blocks never launched."""
    import gradio as gr

    from evalkit.task.prompts import load_prompts
    from evalkit.ui.results import build_results_tab
    from evalkit.ui.session import Session
    from test_aggregate import load_fixture
    from test_rate_handlers import Tab

    db = open_db(tmp_path / "r.db")
    load_fixture(db, tmp_path / "gate.toml")
    db.conn.close()
    tab = Tab(tmp_path / "r.db", {p.id: p for p in load_prompts()})
    with gr.Blocks() as demo:
        with gr.Tab("Results") as results:
            build_results_tab(tab.h.cfg, tab.db_path, results, gr.State(Session()))
    fns = {f.api_name: f.fn for f in demo.fns.values()}
    return tab, fns["results"]


def _organiser(tab, name):
    from evalkit.rating import roster
    from evalkit.ui.session import Session

    db = open_db(tab.db_path)
    code = roster.add(db, name, organiser=True).code
    db.conn.close()
    return tab.h.sign_in_local(Session(lang="en"), "", "", code, None)[tab.ui.session]


def _shown(out) -> bool:
    return next(v for k, v in out.items() if getattr(k, "elem_id", None) == "results-full")["visible"]


def _verdict(out) -> str:
    return next(v for k, v in out.items() if getattr(k, "label", None) == "verdict")


def _pushed_sync(tab, tmp_path):
    """A Space's own disk (losable) under a sync to a fake Hub, the tab's database pushed once and the sync started:
    (the Hub, the sync). A failed push backs off an hour, so a test says when the Hub is tried again (retry_in)."""
    hub = FakeHub(tmp_path / "hub")
    sync = DatabaseSync(tab.db_path, "org/ratings", api=hub, every_seconds=3600, min_gap=0, losable=True,
                        retry_delays=(3600,))
    sync.restore_if_missing()
    assert sync.push_now()
    sync.start()
    return hub, sync


def test_a_first_view_of_the_results_on_a_space_s_own_disk_is_shown_only_once_its_record_is_pushed(tmp_path):
    """Space audit: a view of the Results is recorded (results_views) so that its viewer is never served the pairs
    whose sides it told her; a crash before the next push lost that record, and she was served them again, counted
    as blind. Where a crash can lose it, a first view is now pushed before the Results are shown: when the push fails
    they are not, and the organiser reads why, what to do and the sync's state; once a push holds it they are, and a
    later view waits for no push. Locally nothing waits."""
    from evalkit.publish.sync import losable

    tab, show = _results_tab(tmp_path)
    olga = _organiser(tab, "olga")
    assert losable(tab.db_path) is None and _shown(show(olga))  # locally: at once
    hub, sync = _pushed_sync(tab, tmp_path)
    try:
        otto = _organiser(tab, "otto")
        hub.fail_uploads = 1  # the push her view asks for fails
        out = show(otto)
        assert not _shown(out) and hub.fail_uploads == 0
        said = _verdict(out)
        assert "not shown" in said and "Refresh" in said and "not reaching the Hub" in said and "network down" in said
        sync.retry_in, hub.fail_uploads = None, 1  # its backoff over, the next push fails too: said in Chinese
        assert "结果暂不显示" in _verdict(show(replace(otto, lang="zh")))
        # the Hub answers again (the backoff over): the view is pushed, then shown
        sync.retry_in = None
        uploads = hub.uploads
        out = show(otto)
        assert _shown(out) and hub.uploads > uploads and "not shown" not in _verdict(out)
        crashed = _restored(hub, tmp_path / "crash")  # a crash now keeps her view
        assert crashed.execute("SELECT COUNT(*) FROM results_views WHERE rater = 'otto'").fetchone()[0] == 1
        crashed.conn.close()
        uploads = hub.uploads
        assert _shown(show(otto)) and hub.uploads == uploads  # a later view: no push asked for, none made
    finally:
        sync.stop(final_push=False)


def test_a_view_that_left_her_ratings_uncounted_is_pushed_before_the_results_show_too(tmp_path):
    """A view of the served study's Results that tells a person sides she could still rate (an organiser's while
    pairs are open; a rater's, whose later pool is not hers) records that her ratings there count no more
    (results_seen): lost in a crash, they counted again, as blind. Like the first view's record, it is pushed before
    the Results are shown, even where that first record already was."""
    from evalkit.store import insert_results_seen, insert_results_view
    from evalkit.ui.results import view_saved

    tab, _ = _results_tab(tmp_path)
    otto = _organiser(tab, "otto")
    db = open_db(tab.db_path)
    study = db.execute("SELECT MAX(id) FROM studies").fetchone()[0]
    insert_results_view(db, "otto", study)  # her first view, pushed below
    hub, sync = _pushed_sync(tab, tmp_path)
    said = []
    try:
        assert view_saved(db, tab.db_path, otto, study, lambda *a, **k: said.append(k["desc"]), "en") == ""
        assert said == []  # pushed already: no wait, no push
        insert_results_seen(db, "otto")  # a later view, while she could still rate
        hub.fail_uploads = 1
        refused = view_saved(db, tab.db_path, otto, study, lambda *a, **k: said.append(k["desc"]), "en")
        assert "not shown" in refused and said and "Saving your view" in said[0]
        sync.retry_in = None  # the backoff over, the Hub answers again
        assert view_saved(db, tab.db_path, otto, study, lambda *a, **k: None, "en") == ""
        crashed = _restored(hub, tmp_path / "crash")
        assert crashed.execute("SELECT COUNT(*) FROM results_seen WHERE rater = 'otto'").fetchone()[0] == 1
        crashed.conn.close()
    finally:
        sync.stop(final_push=False)
        db.conn.close()
