"""Keep the database alive on a Hugging Face Space, whose disk does not survive a restart.

On start: restore the database from the configured dataset repo when the local file is missing. Only a repo that
can be read and holds no database yet starts a fresh one: a repo this token cannot read (missing, or private with
HF_TOKEN missing, expired or without access) stops the start, and so does a public repo (the sync is private).
While running: every few minutes take a consistent snapshot (SQLite's online backup API, safe while
raters write) and push it when it changed; a tick with nothing new still reads the repo's entries, so another app
on the repo is noticed with no rating stored here. A failed push keeps the local data and is retried on the
next tick; nothing is ever deleted locally. A database someone else put in the repo while the app runs is never
pushed over: each push first compares the repo's file with the one the app last restored or pushed (the Hub's git
blob ids), commits on the head it read (parent_commit), and holds its pushes while they differ, unless the repo's file
is a snapshot this app sent itself whose answer it never got (a timeout after the commit, a failed read-back), known
by the blob ids it would have or a Git LFS file's sha256. A database on the disk that no sync ever pushed is never
taken for the repo's file.
A database kept on the Space's disk (persistent storage) remembers, beside it, the repo's file it last restored or
pushed: a restart then finds a file uploaded while the Space was down and serves it (the disk's copy set aside) when
the disk holds nothing unpushed, or holds its pushes when both changed; it never pushes over it.
Where a crash can lose what was stored since the last good push (a Space's own disk: `losable`), the app shows nothing
that such a loss would take back while its raters can still rate: each good push records how far its snapshot reached
(`pushed`: the largest rowid of the tables below), a pair's reveal waits until its closing is inside it, and a first
view of the Results until its row is (see push_soon, wait_pushed).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from ..errors import EvalkitError
from ..store import move_database, restore_file, snapshot

log = logging.getLogger("evalkit.publish.sync")


def _is_missing(err: Exception) -> bool:
    """Whether a download failed only because the file is not in a repo that was read: "no database yet". Not a repo
    that cannot be read (RepositoryNotFoundError: the Hub answers so for a missing repo and for a private one with no,
    an expired or a powerless token), nor a file not in the local cache when the Hub cannot be reached."""
    from huggingface_hub.errors import (EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    if isinstance(err, (LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError)):
        return False
    return isinstance(err, EntryNotFoundError)


def _unreadable(err: Exception) -> bool:
    """The repo cannot be read with this token: missing, private without access, or the token refused (401/403)."""
    from huggingface_hub.errors import RepositoryNotFoundError

    return isinstance(err, RepositoryNotFoundError) or getattr(getattr(err, "response", None), "status_code", None) in (401, 403)


# The sync's health, beside the database (never pushed): the app shows organisers when pushes fail, since a restart
# would then lose every rating stored since the last good push. Written by the serving process, read by the app.
STATUS_SUFFIX = ".sync.json"
START_FILE = "evalkit-start.json"  # the start's write check: a small file, one commit per start
DB_IN_REPO = "evalkit.db"  # the database's name in the repo


def status_file(db_path: Path) -> Path:
    return Path(db_path).with_name(Path(db_path).name + STATUS_SUFFIX)


def sync_health(db_path: Path) -> dict | None:
    """The last recorded state of the sync of this database ({"repo", "last_ok_at", "failing_since", "failures",
    "error"}), or None when no sync ran (a local app) or its file cannot be read."""
    try:
        return json.loads(status_file(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


UNKNOWN = object()  # DatabaseSync.repo_blob before the app has read the repo's file
# DatabaseSync.repo_blob after a push whose file could not be read back: the repo's file is this app's when it is one
# of the snapshots it sent (DatabaseSync.sent), never whatever the repo holds (a string: kept in the state file)
SENT = "sent, not read back"


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _sent_ids(path: Path, digest: str) -> list[str]:
    """The blob ids the Hub can give this snapshot once committed: git's own for a plain file, or its Git LFS
    pointer's (a binary or large file; the Hub's Xet storage keeps the same pointer in git)."""
    data = path.read_bytes()
    pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{digest}\nsize {len(data)}\n".encode()
    return [_git_blob(data), _git_blob(pointer)]


def _lfs_sha256(info) -> str | None:
    lfs = getattr(info, "lfs", None)
    return (lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)) if lfs else None


def _ratings_missing(disk: Path, other: Path) -> int:
    """How many ratings (and skips) of the database `disk` the database `other` does not hold, as the same rater's
    rating of the same pair at the same time (ratings are only ever added)."""
    import sqlite3

    def rows(path: Path) -> set:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return set(con.execute("SELECT pair_id, rater, created_at, kind FROM ratings"))
        finally:
            con.close()

    return len(rows(disk) - rows(other))


# The tables whose rows, lost in a crash, would let the app serve a pair to someone who saw its sides, or count her
# rating of it: a reveal shown (the pair's closing: closed_pairs, else its ratings) and a view of the Results
# (results_views, results_seen). Rows are only added, so a rowid at or below the pushed snapshot's largest is in it.
MARKED = ("ratings", "closed_pairs", "results_views", "results_seen")


def _marks(path: Path) -> dict[str, int]:
    """The largest rowid of each MARKED table in the database file at `path` (0: empty or absent)."""
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out = {}
        for table in MARKED:
            try:
                out[table] = con.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {table}").fetchone()[0]
            except sqlite3.OperationalError:  # an older schema without it
                out[table] = 0
        return out
    finally:
        con.close()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class DatabaseSync:
    """Restore-on-start and scheduled, consistent pushes of the SQLite file to a Hub dataset repo."""

    def __init__(self, db_path: Path, repo_id: str, *, every_seconds: float = 300, path_in_repo: str = DB_IN_REPO,
                 api=None, private: bool = True, retry_delays: tuple[float, ...] = (5, 15, 45), sleep=None,
                 losable: bool | None = None, min_gap: float | None = None):
        if not repo_id or "/" not in repo_id:
            raise EvalkitError(f"sync repo {repo_id!r} is not a dataset repo id", "set EVALKIT_SYNC_REPO to owner/name")
        self.db_path, self.repo_id, self.path_in_repo = Path(db_path), repo_id, path_in_repo
        self.every_seconds, self.private = every_seconds, private
        # the restore's waits before its next try when the Hub does not answer (a blip must not stop the Space)
        self.retry_delays, self._sleep = tuple(retry_delays), sleep or time.sleep
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        self.api = api
        self.last_pushed_hash: str | None = None
        self.failures = 0  # every failed push since the start
        self.failing = 0  # failed pushes since the last good one
        self._final = False  # set by _final_push: no loop tick follows
        self.last_ok_at: str | None = None
        self.failing_since: str | None = None
        # the repo's database as this app last saw it: its git blob id (None: no file there), UNKNOWN until the restore
        # or the start's check has read it; a push only goes over the file it knows (see push_now)
        self.repo_blob: str | None | object = UNKNOWN
        self.diverged: dict | None = None  # the file someone else put there, while pushes are held
        # snapshots this app sent whose commit it never saw confirmed (the answer lost after the Hub committed, a
        # failed read-back): digest -> the blob ids that file would have. The repo holding one of them is this app's
        # own push, not someone else's upload (kept in the state file for a restart on the same disk)
        self.sent: dict[str, list[str]] = {}
        # the repo's file was never this app's (a disk database no sync had pushed): see _first_sync_of_kept
        self.foreign = False
        # the start file this app wrote (its sha256; None: not written) and since when another app's start replaced
        # it: two apps syncing one repo (a duplicated Space, a second replica), whose ratings one of them cannot push
        self.start_sha: str | None = None
        self._start_ids: list[str] = []  # the blob ids that start file can have (_sent_ids)
        self.rival_since: str | None = None
        self.last_error: str | None = None  # as the state file says it
        self.retry_in: float | None = None  # seconds to the next try after a push the Hub failed (None: a tick)
        # a crash can lose what was stored since the last good push: a Space's own disk (not persistent storage,
        # not a local app's disk). Then `pushed` holds how far that push reached (MARKED), and the app waits on it
        self.losable = _crash_loses(self.db_path) if losable is None else losable
        self.pushed: dict[str, int] | None = None  # None: no snapshot pushed or restored yet
        self.try_began = self.tried_at = 0.0  # time.monotonic() when the last push began and ended, ok or not
        # push_soon's smallest gap between pushes: each is a Hub commit, and the Hub limits a repo's commits per hour
        self.min_gap = SYNC_EVERY_MIN if min_gap is None else min_gap
        self._soon = threading.Event()
        self._pushed = threading.Condition()  # notified when a push ends
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _cannot_read(self, e: Exception) -> EvalkitError:
        from huggingface_hub import get_token

        if get_token() is None:  # the likeliest cause on a Space, said as such: the secret was never added
            return EvalkitError(
                f"the sync repo {self.repo_id} (a dataset repo) cannot be read: HF_TOKEN is not set, and without a "
                f"token the Hub shows a private repo to no one ({type(e).__name__})",
                f"add the secret HF_TOKEN in the Space's settings (Variables and secrets), a token with read/write "
                f"access to {self.repo_id}, and restart the Space (elsewhere: set HF_TOKEN or run `hf auth login`); "
                "the app does not start on an empty database, which would overwrite the stored ratings")
        return EvalkitError(
            f"the sync repo {self.repo_id} (a dataset repo) cannot be read with this token: {type(e).__name__}: "
            f"{str(e).splitlines()[0] if str(e) else ''} (the Hub answers so when the repo does not exist, and when it "
            "is private and HF_TOKEN is missing, expired or has no access to it)",
            f"create the private dataset repo {self.repo_id}, or set HF_TOKEN (a Space secret) to a token with read/write "
            "access to it; the app does not start on an empty database, which would overwrite the stored ratings")

    def _private_head(self) -> str | None:
        """The repo's head commit, read with its visibility: a repo that is not private raises _not_private's refusal
        (nothing is read from or written to it)."""
        info = self.api.repo_info(self.repo_id, repo_type="dataset")
        refused = self._not_private(info)
        if refused:
            raise refused
        return getattr(info, "sha", None)

    def _not_private(self, info=None) -> EvalkitError | None:
        """The refusal when the repo is asked to be private (the default) and is not: the database holds every rating,
        rater name and passcode. create_repo(exist_ok=True) leaves an existing repo's visibility as it is."""
        if not self.private:
            return None
        visible = (info or self.api.repo_info(self.repo_id, repo_type="dataset")).private
        if visible is True:
            return None
        return EvalkitError(
            f"the sync repo {self.repo_id} is {'public' if visible is False else 'of unknown visibility'}: the database "
            "(every rating, rater name and the config) is not pushed to it, nor the app started on it",
            f"make the dataset repo {self.repo_id} private on the Hub (its Settings), or set EVALKIT_SYNC_REPO to a "
            "private dataset repo")

    def restore_if_missing(self) -> bool:
        """Download the database when there is no local file. True when restored, False when the repo can be read and
        has none yet (a fresh study). Any other failure stops the start: a repo this token cannot read (missing,
        private with HF_TOKEN missing, expired or powerless), a public repo, a download that fails, a file that is no
        intact database. A fresh empty database pushed over the real one would lose every rating."""
        if self.db_path.exists():
            return self._resume_kept()
        for n, delay in enumerate((*self.retry_delays, None), 1):
            try:
                return self._restore()
            except EvalkitError as e:
                if not getattr(e, "transient", False):
                    raise
                if delay is None:
                    raise EvalkitError(f"{e.what} (tried {n} times)", e.fix) from e.__cause__
                log.warning("%s; trying again in %gs (%d of %d)", e.what, delay, n + 1, len(self.retry_delays) + 1)
                self._sleep(delay)

    def _restore(self) -> bool:
        """One try of restore_if_missing with no local file; an EvalkitError marked `transient` when the Hub did not
        answer (worth another try)."""
        try:
            head = self._private_head()  # download and read the blob id at one commit: no upload between them
            got = self.api.hf_hub_download(repo_id=self.repo_id, filename=self.path_in_repo, repo_type="dataset",
                                           revision=head)
            blob = self._repo_blob(head)
        except EvalkitError:
            raise
        except Exception as e:  # noqa: BLE001
            if _unreadable(e):
                raise self._cannot_read(e) from e
            if _is_missing(e):
                log.info("no %s in %s yet: starting a new study database (if the study is in that repo under "
                         "another name, stop the Space and rename the file to %s)", self.path_in_repo, self.repo_id,
                         self.path_in_repo)
                self.repo_blob = None
                return False
            unreached = isinstance(e, (ConnectionError, TimeoutError)) or type(e).__name__ in (
                "LocalEntryNotFoundError", "OfflineModeIsEnabled", "ConnectError", "ConnectTimeout", "ReadTimeout") or (
                getattr(getattr(e, "response", None), "status_code", 0) or 0) >= 500
            refused = EvalkitError(
                f"cannot restore the database from dataset {self.repo_id}: {type(e).__name__}: {e}",
                ("the Hub could not be reached, and nothing was changed: restart the Space once huggingface.co "
                 "answers (it stays stopped until then)" if unreached else
                 "check HF_TOKEN and the repo id (EVALKIT_SYNC_REPO)")
                + "; the app will not start on an empty database that could overwrite the stored ratings",
            )
            # offline mode never answers: no point waiting for it
            refused.transient = unreached and type(e).__name__ != "OfflineModeIsEnabled"
            raise refused from e
        if not restore_file(Path(got), self.db_path):
            raise self._not_intact()
        self._restored(blob)
        return True

    def _not_intact(self) -> EvalkitError:
        return EvalkitError(f"the database {self.path_in_repo} in {self.repo_id} is not an intact evalkit database "
                            "(it fails SQLite's integrity_check, or is no SQLite file: a truncated upload, a Git LFS "
                            "pointer)", "restore an earlier commit of the repo")

    def _restored(self, blob: str | None) -> None:
        """Remember the file just restored as this app's own: its blob id, and the digest of its snapshot, which the
        first push compares (nothing new: nothing pushed) and a restart with persistent storage reads back."""
        self.last_pushed_hash = self._snapshot_hash(mark=True)
        self.repo_blob = blob
        self._write_state()

    def _snapshot_hash(self, mark: bool = False) -> str:
        with tempfile.TemporaryDirectory(prefix="evalkit-sync-") as tmp:
            snap = snapshot(self.db_path, Path(tmp) / "evalkit.db")
            if mark:  # the repo's file: everything in it outlives a crash
                self.pushed = _marks(snap)
            return self._hash(snap)

    def _resume_kept(self) -> bool:
        """A database already on this disk (persistent storage): compare the repo's file with the one this app last
        restored or pushed, as the state file beside the database remembers it. Unchanged: serve the disk's (False).
        Replaced while the app was down, and the disk holds nothing it has not pushed: serve the repo's file, the
        disk's copy set aside beside it, never deleted (True). Replaced or removed, and the disk holds ratings never
        pushed: serve the disk's and hold the pushes (the organisers' Results tab says so), never push over it. A
        Space now syncing with another repo (EVALKIT_SYNC_REPO changed) counts only "no file there" as its own: the
        disk's database goes to an empty repo, and a database already there is never pushed over. A disk without that
        state (served with EVALKIT_SYNC_REPO=off, copied there by hand): see _first_sync_of_kept."""
        stored = sync_health(self.db_path) or {}
        if "repo_blob" not in stored:
            return self._first_sync_of_kept()
        moved = stored.get("repo") != self.repo_id
        known = None if moved else stored["repo_blob"]
        self.repo_blob, self.last_ok_at = known, None if moved else stored.get("last_ok_at")
        self.last_pushed_hash = None if moved else stored.get("pushed_hash")  # to a new repo: the first push is due
        self.sent = {} if moved else stored.get("sent") or {}
        self.foreign = not moved and bool(stored.get("foreign"))  # still held over a file it never knew
        try:
            head = self._private_head()
            file = self._repo_file(head)
            found = getattr(file, "blob_id", None)
            if found != known and self._recognise(file):  # its own last push, whose answer was lost
                known, stored["pushed_hash"] = found, self.last_pushed_hash
            if found == known:
                return False
            if found is None or self._snapshot_hash() != stored.get("pushed_hash"):  # unpushed, even to its old repo
                self.diverged = {"blob": found, "at": _now()}
                log.error("%s; this Space's disk also holds ratings it has not pushed (since %s), so it serves them. "
                          "To keep them, restore the file in the repo to this app's last commit (its history), and the "
                          "pushes resume; to serve the repo's file instead, delete %s and restart (the unpushed "
                          "ratings are then lost)", self._diverged_words(found), self.last_ok_at or "its start",
                          self.db_path)
                return False
            got = self.api.hf_hub_download(repo_id=self.repo_id, filename=self.path_in_repo, repo_type="dataset",
                                           revision=head)
        except EvalkitError:
            raise
        except Exception as e:  # noqa: BLE001 - the first push compares again, with the blob this disk remembers
            log.warning("cannot compare the database in %s with the one this Space last pushed (%s: %s); it serves its "
                        "own, and its first push checks again", self.repo_id, type(e).__name__, e)
            return False
        aside = self._serve_repo_file(Path(got), found)
        log.warning("the database in %s was replaced while this Space was down, after its last push: it serves the "
                    "repo's file; its own copy, with nothing unpushed, is kept as %s", self.repo_id, aside)
        return True

    def _serve_repo_file(self, got: Path, found: str | None) -> Path:
        """Serve the repo's file (downloaded at got) in place of the disk's database, which is set aside beside it,
        never deleted; its path is returned."""
        stem = f"{self.db_path.name}.replaced-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
        names = (stem if n == 1 else f"{stem}-{n}" for n in range(1, 1000))
        aside = move_database(self.db_path, next(self.db_path.with_name(n) for n in names
                                                 if not self.db_path.with_name(n).exists()))
        if not restore_file(got, self.db_path):
            move_database(aside, self.db_path)
            raise self._not_intact()
        self._restored(found)
        return aside

    def _first_sync_of_kept(self) -> bool:
        """A database on the disk with no sync state: it was served with EVALKIT_SYNC_REPO=off, or put there by hand,
        so no file in the repo is known to be its own. A repo with no database gets it at the first push. A database
        there (the organiser's upload, README step 4) is served when the disk holds no rating it lacks, the disk's
        copy set aside (True); else the disk's is served and its pushes held until the repo's file is removed, never
        pushed over it. When the repo cannot be compared now, repo_blob stays UNKNOWN and push_now holds the same way
        for a file it finds there."""
        try:
            head = self._private_head()
            found = self._repo_blob(head)
            if found is None:
                log.info("no %s in %s yet: this Space's database %s goes to it at the first push", self.path_in_repo,
                         self.repo_id, self.db_path)
                self.repo_blob = None
                return False
            got = Path(self.api.hf_hub_download(repo_id=self.repo_id, filename=self.path_in_repo,
                                                repo_type="dataset", revision=head))
            missing = _ratings_missing(self.db_path, got)
        except EvalkitError:
            raise
        except Exception as e:  # noqa: BLE001 - the first push holds rather than adopt a file it does not know
            log.warning("cannot compare the database in %s with the one on this Space's disk, which no sync has "
                        "pushed (%s: %s); it serves its own, and pushes only to a repo without %s", self.repo_id,
                        type(e).__name__, e, self.path_in_repo)
            return False
        if missing == 0:
            aside = self._serve_repo_file(got, found)
            log.warning("this Space's disk held a database no sync had pushed, with no rating the database in %s "
                        "lacks: it serves the repo's file; the disk's copy is kept as %s", self.repo_id, aside)
            return True
        self._hold_foreign(found, missing)
        return False

    def _hold_foreign(self, found: str, missing: int | None) -> None:
        """The repo holds a database this app never restored nor pushed: only "no file there" is its own from now."""
        self.repo_blob, self.foreign = None, True
        self.diverged = {"blob": found, "at": _now()}
        log.error("%s%s. To push this Space's database: remove %s from the dataset repo (its history keeps it) and "
                  "the pushes resume by themselves; to serve the repo's file instead: delete %s (with %s) on the "
                  "Space's disk and restart", self._diverged_words(found),
                  "" if missing is None else f"; the disk's database holds {missing} rating(s) the repo's file lacks",
                  self.path_in_repo, self.db_path, status_file(self.db_path).name)

    def _repo_file(self, revision: str | None = None, path: str | None = None):
        """The Hub's entry for the database (or `path`) in the repo at this revision (default: its head), None when
        absent."""
        path = path or self.path_in_repo
        infos = self.api.get_paths_info(self.repo_id, [path], revision=revision, repo_type="dataset")
        return next((i for i in infos if getattr(i, "path", None) == path), None)

    def _check_alone(self, head: str | None) -> None:
        """Another app started on this repo after this one (its start file replaced this app's): two apps serving and
        syncing one database, each rater's ratings on one of them, and the second to push held over the first's
        file. Said loudly, here and on the organisers' Results tab, from then on; the pushes' own checks stay."""
        if self.start_sha is None or self.rival_since is not None:
            return
        info = self._repo_file(head, START_FILE)  # removed by hand: no other start known
        if info is not None and info.blob_id not in self._start_ids and _lfs_sha256(info) != self.start_sha:
            self.rival_since = _now()
            log.error("another app started syncing with %s after this one (%s in the repo is not this app's): two apps "
                      "(a duplicated Space, a second replica) each store their own raters' ratings, and only one of "
                      "them can push; stop all but one, and set each other Space's EVALKIT_SYNC_REPO to a repo of its "
                      "own", self.repo_id, START_FILE)

    def _repo_blob(self, revision: str | None = None) -> str | None:
        """The git blob id of the database in the repo at this revision (default: its head), None when absent. Blob
        ids are the Hub's own (a Git LFS or Xet file's is its pointer's), so two reads compare without hashing here."""
        return getattr(self._repo_file(revision), "blob_id", None)

    def _sent_by_this_app(self, info) -> str | None:
        """The digest of the snapshot this app sent that the repo's file is (by blob id, or a Git LFS file's sha256),
        None when it is none of them."""
        if info is None:
            return None
        blob, sha = getattr(info, "blob_id", None), _lfs_sha256(info)
        return next((d for d, ids in self.sent.items() if blob in ids or sha == d), None)

    def _recognise(self, info) -> bool:
        """Whether the repo's file (another blob than the one this app knows) is a snapshot it sent itself: then it is
        adopted as its last push (a commit whose answer was lost is this app's own, not someone else's upload)."""
        digest = self._sent_by_this_app(info)
        if digest is None:
            return False
        log.info("the database in %s is the snapshot this app sent when the Hub's answer was lost: taken as its "
                 "last push", self.repo_id)
        self.repo_blob, self.last_pushed_hash, self.sent = info.blob_id, digest, {}
        return True

    def _diverged_words(self, found: str | None) -> str:
        if self.foreign and found is not None:
            return (f"the dataset repo {self.repo_id} holds a database {self.path_in_repo} that this Space never "
                    f"restored nor pushed, and its disk holds another one ({self.db_path}, served before without the "
                    "sync or copied there); the app holds its pushes rather than overwrite the repo's file")
        return (f"the database {self.path_in_repo} in {self.repo_id} was "
                f"{'removed' if found is None else 'replaced'} by someone else since this app last restored or pushed "
                "it; the app holds its pushes rather than overwrite it (its own ratings stay on its disk)")

    def _record(self, error: str | None) -> None:
        """Note a push's outcome (None: it went through) in the status file the app reads."""
        if error is None:
            self.failing, self.failing_since, self.last_ok_at = 0, None, _now()
        else:
            self.failures += 1
            self.failing += 1
            self.failing_since = self.failing_since or _now()
        self._write_state(error)

    def _write_state(self, error: str | None = None) -> None:
        self.last_error = error
        state = {"repo": self.repo_id, "last_ok_at": self.last_ok_at, "failing_since": self.failing_since,
                 "failures": self.failing, "error": error or "",
                 # pushes held over another database in the repo: how it changed ("replaced" / "removed"), else ""
                 "held": "" if self.diverged is None else "removed" if self.diverged["blob"] is None else
                 "foreign" if self.foreign else "replaced"}
        if self.repo_blob is not UNKNOWN:  # for a restart with persistent storage (_resume_kept): the repo's file as
            state["repo_blob"] = self.repo_blob  # this app last restored or pushed it, and that snapshot's digest
            state["pushed_hash"] = self.last_pushed_hash
        state["sent"], state["foreign"], state["rival_since"] = self.sent, self.foreign, self.rival_since
        state["pushed_rows"] = self.pushed  # how far the last good push reached (MARKED's rowids)
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)  # a fresh start: the database is not made yet
            tmp = status_file(self.db_path).with_suffix(".tmp")
            tmp.write_text(json.dumps(state), encoding="utf-8")
            os.replace(tmp, status_file(self.db_path))
        except OSError as e:  # the sync itself goes on; only the app's warning is missing
            log.warning("cannot write the sync status %s: %s", status_file(self.db_path), e)

    def check_can_write(self) -> None:
        """Prove at the start that the token can write to the repo, with a small file (START_FILE): the restore
        needs only read access, and a token that can read but not write (a read-only or too narrow fine-grained
        token) served for days while every push failed, the ratings lost at the next restart. Refused (401/403):
        the start stops. Any other failure (the Hub not answering) is recorded like a failed push, which the app
        shows organisers, and the start goes on."""
        with tempfile.TemporaryDirectory(prefix="evalkit-sync-") as tmp:
            probe = Path(tmp) / START_FILE
            # a start of its own (the random part): another app's start, even in the same second, is another file
            probe.write_text(json.dumps({"started_at": _now(), "start": os.urandom(8).hex()}), encoding="utf-8")
            try:
                self.api.create_repo(self.repo_id, repo_type="dataset", private=self.private, exist_ok=True)
                self.api.upload_file(path_or_fileobj=str(probe), path_in_repo=START_FILE, repo_id=self.repo_id,
                                     repo_type="dataset", commit_message="evalkit: the app started")
            except Exception as e:  # noqa: BLE001
                if getattr(getattr(e, "response", None), "status_code", None) in (401, 403):
                    raise EvalkitError(
                        f"the sync repo {self.repo_id} can be read but not written with this token "
                        f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}): every push of the database would fail, and "
                        "a restart would lose every rating stored since the start",
                        f"set HF_TOKEN (a Space secret) to a token with write access to the dataset repo "
                        f"{self.repo_id} (a 'write' token, or a fine-grained one with write access to it)") from e
                log.warning("cannot write to %s at the start (%s: %s); the app starts and keeps trying with each push",
                            self.repo_id, type(e).__name__, e)
                self._record(f"{type(e).__name__}: {e}")
                return
            self.start_sha = hashlib.sha256(probe.read_bytes()).hexdigest()
            self._start_ids = _sent_ids(probe, self.start_sha)
        # a start that found another database in the repo (_resume_kept) shows organisers at once that pushes are held
        self._record(None if self.diverged is None else f"held: {self._diverged_words(self.diverged['blob'])}")

    @staticmethod
    def _hash(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def push_now(self) -> bool:
        """Snapshot and push if changed. False (and the local data untouched) when the push fails."""
        if not self.db_path.exists():
            return False
        began = time.monotonic()
        try:
            ok = self._push()
        finally:
            with self._pushed:  # wait_pushed's waiters look again
                self.try_began, self.tried_at = began, time.monotonic()
                self._pushed.notify_all()
        return ok

    def _push(self) -> bool:
        with self._lock, tempfile.TemporaryDirectory(prefix="evalkit-sync-") as tmp:
            self.retry_in = None  # the next tick, unless the Hub fails this one (held or refused pushes wait a tick)
            snap = snapshot(self.db_path, Path(tmp) / "evalkit.db")
            digest = self._hash(snap)
            if digest == self.last_pushed_hash:  # the repo holds this very snapshot
                self.pushed = _marks(snap)
                if not self._final:
                    self._look_while_idle()
                return True
            try:
                self.api.create_repo(self.repo_id, repo_type="dataset", private=self.private, exist_ok=True)
                info = self.api.repo_info(self.repo_id, repo_type="dataset")
                refused = self._not_private(info)  # an existing repo keeps its visibility: read it before each upload
                if refused:
                    log.error("push refused: %s; local data kept", refused)
                    self._record(f"refused: {refused.what}")
                    return False
                head = getattr(info, "sha", None)
                file = self._repo_file(head)
                self._check_alone(head)
                found = getattr(file, "blob_id", None)
                if found != self.repo_blob and self._recognise(file):  # its own commit, the answer lost
                    self.diverged = None
                    if digest == self.last_pushed_hash:  # that commit holds everything: nothing more to push
                        self.pushed = _marks(snap)
                        self._record(None)
                        return True
                if self.repo_blob is UNKNOWN:  # a disk database no sync had pushed, not compared at the start:
                    if found is None:  # an empty repo gets it; a file there is never taken as its own
                        self.repo_blob = None
                    else:
                        self._hold_foreign(found, None)
                if found != self.repo_blob:  # someone put another database there (or removed it): never push over it
                    self._hold(found)
                    return False
                self.diverged, self.foreign = None, False
                # remembered before the call: the Hub may commit it and the answer still be lost (a timeout)
                self.sent = dict(list(self.sent.items())[-20:]) | {digest: _sent_ids(snap, digest)}
                # on the head just read: if anyone commits in between, the Hub refuses this one and the next tick
                # looks again
                commit = self.api.upload_file(path_or_fileobj=str(snap), path_in_repo=self.path_in_repo,
                                              repo_id=self.repo_id, repo_type="dataset",
                                              commit_message="evalkit: database snapshot", parent_commit=head)
            except Exception as e:  # noqa: BLE001 - network/auth: keep the data, retry soon
                self.retry_in = self._backoff(e)
                # as the app stops, _final_push says its own wait: the loop's backoff would name a try never made
                log.warning("push to %s failed (%s: %s); local data kept, %s (failure %d in a row)",
                            self.repo_id, type(e).__name__, e,
                            "the final push" if self._final else f"retrying in {self.retry_in:g}s", self.failing + 1)
                self._record(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                return False
            self.last_pushed_hash, self.pushed = digest, _marks(snap)
            try:
                self.repo_blob = self._repo_blob(getattr(commit, "oid", None))
                self.sent = {}
                log.info("pushed the database to %s", self.repo_id)
            except Exception as e:  # noqa: BLE001 - pushed: the next push recognises the file by what was sent
                log.warning("pushed to %s but could not read the file back (%s: %s); the next push checks that the "
                            "repo still holds this snapshot", self.repo_id, type(e).__name__, e)
                self.repo_blob = SENT
            self._record(None)
            return True

    def _hold(self, found: str | None) -> None:
        """Hold the pushes over the repo's file `found`, which this app did not restore nor push: said once per file,
        in the log and (the status file) on the organisers' Results tab."""
        words = self._diverged_words(found)
        if self.foreign:  # said by _hold_foreign; the wording of "replaced since" does not fit
            pass
        elif self.diverged is None or self.diverged.get("blob") != found:
            log.error("push held: %s. To keep this app's ratings, restore the file in the repo to its last commit by "
                      "this app (its history), and the pushes resume; to serve the repo's file instead, restart the "
                      "Space (with persistent storage, delete %s first)", words, self.db_path)
        self.diverged = {"blob": found, "at": (self.diverged or {}).get("at") or _now()}
        self._record(f"held: {words}")

    def _look_while_idle(self) -> None:
        """Nothing new to push: still read the repo's two small entries (no download, no commit), so an app whose
        raters are idle learns within an interval, not at their next rating, that another app started on its repo
        (_check_alone) or that its database there was replaced (another app's push, an upload): both are said as a
        push would say them. A Hub that does not answer is no failed push: nothing is unpushed."""
        if self.foreign or self.repo_blob is UNKNOWN:  # compared only by a push (see push_now)
            return
        try:
            rival = self.rival_since
            self._check_alone(None)
            file = self._repo_file()
            found = getattr(file, "blob_id", None)
            if found != self.repo_blob and not self._recognise(file):
                self._hold(found)
            elif self.diverged is not None:  # its own file put back: the pushes resume
                self.diverged = None
                self._record(None)
            elif rival != self.rival_since:  # for the Results tab, beside whatever else the state says
                self._write_state(self.last_error)
        except Exception as e:  # noqa: BLE001
            log.info("cannot look at %s while idle (%s: %s); the next tick looks again", self.repo_id,
                     type(e).__name__, e)

    def _backoff(self, e: Exception) -> float:
        """Seconds before the next try after this failure (the failing-th in a row): retry_delays in turn, never
        beyond the interval, so a blip of the Hub leaves ratings unpushed for seconds, not a whole interval, and a
        Hub that keeps failing is tried no more often than the interval; a Retry-After the Hub sent (429, 503) is
        honoured."""
        delays = self.retry_delays or (self.every_seconds,)
        wait = min(self.every_seconds, delays[min(self.failing, len(delays) - 1)])
        try:
            after = float(getattr(getattr(e, "response", None), "headers", {}).get("Retry-After"))
        except (TypeError, ValueError, AttributeError):  # absent, or an HTTP date: the backoff alone
            after = 0.0
        return min(max(wait, after), SYNC_EVERY_MAX) if math.isfinite(after) else wait

    def _final_push(self) -> bool:
        """The last push, as the app stops: a Hub that failed it (retry_in set; not a held or refused push) is tried
        again after FINAL_RETRY_DELAYS, short enough for a Space's grace period after its SIGTERM, since nothing
        pushes the ratings since the last push once the process is gone."""
        self._final = True
        for delay in (*FINAL_RETRY_DELAYS, None):
            if self.push_now():
                return True
            if delay is None or self.retry_in is None:
                return False
            log.warning("the final push to %s failed; trying again in %gs", self.repo_id, delay)
            self._sleep(delay)
        return False

    def push_soon(self) -> None:
        """Ask the loop for a push before its interval ends (a rating stored, a pair closed, a first view of the
        Results), so a reveal waits seconds, not minutes. Debounced: at most one push per min_gap seconds, and none
        sooner than a failed push's backoff."""
        self._soon.set()

    def wait_pushed(self, rows: dict[str, int], timeout: float) -> bool:
        """Ask for a push and wait (at most `timeout` seconds) until a pushed snapshot holds these rows ({MARKED table:
        rowid}). False when it timed out, or a push that ended after this call began left one out (it failed, or was
        held)."""
        began = time.monotonic()
        self.push_soon()
        with self._pushed:
            while any((self.pushed or {}).get(table, 0) < rowid for table, rowid in rows.items()):
                left = began + timeout - time.monotonic()
                if left <= 0 or self.try_began > began:  # out of time, or a push that took its snapshot after the
                    return False                          # row was written ended without it (failed, held)
                self._pushed.wait(left)
            return True

    def start(self) -> None:
        def loop():
            while not self._stop.is_set():
                self._soon.wait(self.every_seconds if self.retry_in is None else self.retry_in)
                if self._soon.is_set() and not self._stop.is_set():  # asked early: not before the gap, nor the backoff
                    self._stop.wait(max(0.0, self.tried_at + max(self.min_gap, self.retry_in or 0) - time.monotonic()))
                if self._stop.is_set():
                    break
                self._soon.clear()  # a request from now on gets a push of its own, with what it stored
                try:
                    self.push_now()
                except Exception as e:  # noqa: BLE001 - a dead sync thread would end the pushes without a word
                    log.exception("the sync of %s failed", self.repo_id)
                    self._record(f"{type(e).__name__}: {e}")

        _RUNNING[self.db_path.absolute()] = self
        self._thread = threading.Thread(target=loop, name="evalkit-sync", daemon=True)
        self._thread.start()

    def stop(self, final_push: bool = True) -> None:
        self._stop.set()
        self._soon.set()  # ends the loop's wait
        _RUNNING.pop(self.db_path.absolute(), None)
        if self._thread:
            self._thread.join(timeout=5)
        if final_push and not self._final_push():
            log.error("the final push to %s failed: the ratings stored since %s are only on this disk, which a Space's "
                      "restart wipes", self.repo_id, self.last_ok_at or "the start")


def _on_own_volume(path: Path) -> bool:
    """Whether the file's folder (or its nearest existing parent) is on another file system than "/": a mounted
    volume such as a Space's persistent storage at /data, which a restart keeps; the container's own disk is not."""
    folder = Path(path).absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return os.stat(folder).st_dev != os.stat("/").st_dev
    except OSError:
        return False


def _crash_loses(path: Path) -> bool:
    """Whether a crash loses what this database stored since the sync's last push: a Space's own disk, which a restart
    wipes (persistent storage keeps the file, and so does a local disk)."""
    from ..locations import on_space

    return on_space() and not _on_own_volume(path)


# The syncs started in this process, by their database's path: the app's handlers reach theirs through losable()
_RUNNING: dict[Path, DatabaseSync] = {}


def losable(db_path: Path) -> DatabaseSync | None:
    """The sync running for this database when a crash can lose what it stored since its last push (what the app
    shows waits for a push then); None otherwise: locally, with persistent storage, or with no sync."""
    sync = _RUNNING.get(Path(db_path).absolute())
    return sync if sync is not None and sync.losable else None


def unsynced_on_space(db_path: Path) -> bool:
    """A Space serving with EVALKIT_SYNC_REPO=off from the container's own disk: a restart wipes every rating."""
    from ..locations import on_space

    return (os.environ.get("EVALKIT_SYNC_REPO", "").strip().lower() == SYNC_OFF and on_space()
            and not _on_own_volume(db_path))


FINAL_RETRY_DELAYS = (1.0, 3.0)  # seconds between the final push's tries, within a stop's grace period
SYNC_EVERY_MIN, SYNC_EVERY_MAX = 10.0, 86400.0  # EVALKIT_SYNC_EVERY's accepted range, in seconds
SYNC_OFF = "off"  # EVALKIT_SYNC_REPO=off: serve on a Space without syncing, the database on the Space's own disk


def from_environment(db_path: Path, api=None) -> DatabaseSync | None:
    """EVALKIT_SYNC_REPO (owner/name) switches syncing on; EVALKIT_SYNC_EVERY (seconds, default 300). On a Hugging
    Face Space, whose disk a restart wipes, it is required: unset there, the start stops, unless it is "off"."""
    import os

    from ..locations import on_space

    repo = os.environ.get("EVALKIT_SYNC_REPO", "").strip()
    if repo.lower() == SYNC_OFF:
        if on_space():  # a deliberate choice looks the same as a forgotten variable or storage not attached: say it
            import sys

            print(f"evalkit: EVALKIT_SYNC_REPO={SYNC_OFF}: the database {db_path} is not synced to the Hub; "
                  + ("it is on a volume of its own (persistent storage keeps it across restarts), and nothing else "
                     "keeps a copy" if _on_own_volume(db_path) else
                     "it is on the Space's own disk, which a restart or a rebuild wipes, every rating with it: set "
                     "EVALKIT_SYNC_REPO to a private dataset repo, or attach persistent storage and set "
                     "EVALKIT_DATA_DIR=/data"), file=sys.stderr)
        return None
    if not repo:
        if on_space():
            raise EvalkitError(
                "this is a Hugging Face Space and EVALKIT_SYNC_REPO is not set: the database, every rating with it, "
                "would live only on the Space's disk, which a restart or a rebuild wipes",
                "create a private dataset repo (e.g. your-org/evalkit-ratings), set the Space variable "
                "EVALKIT_SYNC_REPO to it and the secret HF_TOKEN to a token that can read and write it (README, "
                f"\"On a Hugging Face Space\"); EVALKIT_SYNC_REPO={SYNC_OFF} serves without syncing (persistent "
                "storage at EVALKIT_DATA_DIR, or ratings you can lose)")
        return None
    raw = os.environ.get("EVALKIT_SYNC_EVERY", "300").strip()
    try:
        every = float(raw)
    except ValueError:
        every = math.nan
    # below 10 s every rating is its own snapshot and commit (0 spins a busy loop, and the Hub limits commits); above a
    # day (inf, 1e12) the sync thread's wait overflows and no periodic push happens at all
    if not SYNC_EVERY_MIN <= every <= SYNC_EVERY_MAX:  # nan fails both comparisons
        raise EvalkitError(f"EVALKIT_SYNC_EVERY={raw} is not a number of seconds from {SYNC_EVERY_MIN:g} to "
                           f"{SYNC_EVERY_MAX:g} (a day)",
                           "set the Space variable EVALKIT_SYNC_EVERY in that range, e.g. EVALKIT_SYNC_EVERY=300 (the "
                           "default when it is not set)")
    return DatabaseSync(db_path, repo, every_seconds=every, api=api)
