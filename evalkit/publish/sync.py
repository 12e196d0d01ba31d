"""Keep the database alive on a Hugging Face Space, whose disk does not survive a restart.

On start: restore the database from the configured dataset repo when the local file is missing.
While running: every few minutes take a consistent snapshot (SQLite's online backup API, safe while
raters write) and push it when it changed. A failed push keeps the local data and is retried on the
next tick; nothing is ever deleted locally.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import threading
from pathlib import Path

from ..errors import EvalkitError
from ..store import restore_file, snapshot

log = logging.getLogger("evalkit.publish.sync")


def _is_missing(err: Exception) -> bool:
    name = type(err).__name__
    return name in ("EntryNotFoundError", "RemoteEntryNotFoundError", "RepositoryNotFoundError", "FileNotFoundError") or (
        getattr(getattr(err, "response", None), "status_code", None) == 404
    )


class DatabaseSync:
    """Restore-on-start and scheduled, consistent pushes of the SQLite file to a Hub dataset repo."""

    def __init__(self, db_path: Path, repo_id: str, *, every_seconds: float = 300, path_in_repo: str = "evalkit.db",
                 api=None, private: bool = True):
        if not repo_id or "/" not in repo_id:
            raise EvalkitError(f"sync repo {repo_id!r} is not a dataset repo id", "set EVALKIT_SYNC_REPO to owner/name")
        self.db_path, self.repo_id, self.path_in_repo = Path(db_path), repo_id, path_in_repo
        self.every_seconds, self.private = every_seconds, private
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        self.api = api
        self.last_pushed_hash: str | None = None
        self.failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def restore_if_missing(self) -> bool:
        """Download the database when there is no local file. True when restored, False when the repo has
        none yet (a fresh study). Any other failure stops the start: a fresh empty database pushed over
        the real one would lose every rating."""
        if self.db_path.exists():
            return False
        try:
            got = self.api.hf_hub_download(repo_id=self.repo_id, filename=self.path_in_repo, repo_type="dataset")
        except Exception as e:  # noqa: BLE001
            if _is_missing(e):
                log.info("no database in %s yet: starting a fresh one", self.repo_id)
                return False
            raise EvalkitError(
                f"cannot restore the database from dataset {self.repo_id}: {type(e).__name__}: {e}",
                "check HF_TOKEN and the repo id (EVALKIT_SYNC_REPO); the app will not start on an empty database "
                "that could overwrite the stored ratings",
            ) from e
        if not restore_file(Path(got), self.db_path):
            raise EvalkitError(f"the database in {self.repo_id} fails integrity_check", "restore an earlier commit of the repo")
        self.last_pushed_hash = self._hash(self.db_path)
        return True

    @staticmethod
    def _hash(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def push_now(self) -> bool:
        """Snapshot and push if changed. False (and the local data untouched) when the push fails."""
        if not self.db_path.exists():
            return False
        with self._lock, tempfile.TemporaryDirectory(prefix="evalkit-sync-") as tmp:
            snap = snapshot(self.db_path, Path(tmp) / "evalkit.db")
            digest = self._hash(snap)
            if digest == self.last_pushed_hash:
                return True
            try:
                self.api.create_repo(self.repo_id, repo_type="dataset", private=self.private, exist_ok=True)
                self.api.upload_file(path_or_fileobj=str(snap), path_in_repo=self.path_in_repo, repo_id=self.repo_id,
                                     repo_type="dataset", commit_message="evalkit: database snapshot")
            except Exception as e:  # noqa: BLE001 - network/auth: keep the data, retry next tick
                self.failures += 1
                log.warning("push to %s failed (%s: %s); local data kept, retrying in %ss",
                            self.repo_id, type(e).__name__, e, self.every_seconds)
                return False
            self.last_pushed_hash = digest
            return True

    def start(self) -> None:
        def loop():
            while not self._stop.wait(self.every_seconds):
                self.push_now()

        self._thread = threading.Thread(target=loop, name="evalkit-sync", daemon=True)
        self._thread.start()

    def stop(self, final_push: bool = True) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        if final_push:
            self.push_now()


def from_environment(db_path: Path, api=None) -> DatabaseSync | None:
    """EVALKIT_SYNC_REPO (owner/name) switches syncing on; EVALKIT_SYNC_EVERY (seconds, default 300)."""
    import os

    repo = os.environ.get("EVALKIT_SYNC_REPO", "").strip()
    if not repo:
        return None
    try:
        every = float(os.environ.get("EVALKIT_SYNC_EVERY", "300"))
    except ValueError:
        raise EvalkitError("EVALKIT_SYNC_EVERY must be a number of seconds", "e.g. EVALKIT_SYNC_EVERY=300")
    return DatabaseSync(db_path, repo, every_seconds=every, api=api)
