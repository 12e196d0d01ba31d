"""The connection, its one kind of write transaction, and applying the migrations."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path

from ..errors import EvalkitError
from . import migrations


# How long a connection waits for another process's lock before giving up (busy handler, WAL switch).
BUSY_TIMEOUT_S = 30.0


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def migrate(db) -> list[str]:
    """Apply the migrations not yet applied, each in its own transaction, then add the answer columns of any
    registered criterion the ratings table lacks (migrations.criterion_columns); returns the migrations applied.
    Safe to call any number of times, and from several processes at once (accelerate ranks): each step is checked
    again under the write lock (BEGIN IMMEDIATE), so exactly one process applies it."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {r[0] for r in db.execute("SELECT name FROM _migrations").fetchall()}
    newer = sorted(done - {name for name, _ in migrations.MIGRATIONS})
    if newer:  # a newer evalkit's schema (a Space rolled back, a copy from a colleague): reading it could misread it
        where = db_file(db) or "this database"
        raise EvalkitError(f"database {where} was written by a newer evalkit: its migration(s) {', '.join(newer)} are "
                           "unknown to this version", "upgrade evalkit to the version that wrote it (the database is "
                           "unchanged), or point --db / EVALKIT_DB at another file")
    applied = []
    for name, fn in migrations.MIGRATIONS:
        if name in done:
            continue
        fk_off = getattr(fn, "foreign_keys_off", False)
        if fk_off and db.conn.in_transaction:
            raise EvalkitError(f"migration {name} cannot run inside an open transaction",
                               "open the database with store.open_db before starting a transaction")
        if fk_off:
            db.execute("PRAGMA foreign_keys = OFF")
        try:
            with write_transaction(db):
                if db.execute("SELECT 1 FROM _migrations WHERE name = ?", [name]).fetchone() is None:
                    if fk_off and (broken := db.execute("PRAGMA foreign_key_check").fetchall()):
                        raise EvalkitError(
                            f"migration {name} needs every foreign key intact, and {len(broken)} row(s) point at "
                            f"nothing (first: table {broken[0][0]}, row {broken[0][1]}, missing in {broken[0][2]})",
                            "the database is unchanged; remove or repair those rows (PRAGMA foreign_key_check lists "
                            "them) and open it again")
                    fn(db)
                    if fk_off and (broken := db.execute("PRAGMA foreign_key_check").fetchall()):
                        # raising rolls the migration back: the database stays as it was
                        raise EvalkitError(
                            f"migration {name} would break {len(broken)} foreign key(s), first: {tuple(broken[0])}",
                            "the database is unchanged; keep a copy and report this")
                    db.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", [name, now()])
                    applied.append(name)
        finally:
            if fk_off:
                db.execute("PRAGMA foreign_keys = ON")
    _criterion_columns(db)
    return applied


def _criterion_columns(db) -> list[str]:
    """The columns of registered criteria the ratings table lacked, now added (none: no write lock taken)."""
    from ..task.criteria import CRITERIA  # the registry: a criterion's columns follow from its id

    ids = list(CRITERIA)
    have = {r[1] for r in db.execute("PRAGMA table_info(ratings)").fetchall()}
    if all(f"{p}_{c}" in have for c in ids for p in migrations.ANSWER_PREFIXES):
        return []  # the usual case: no write lock
    with write_transaction(db):
        return migrations.criterion_columns(db, ids)  # checked again under the lock: another process may have added them


@contextlib.contextmanager
def write_transaction(db):
    """BEGIN IMMEDIATE: take the write lock before the first read, so that a check and the write it allows happen
    under one lock (a quota, a name's uniqueness), and concurrent writers wait (busy timeout) instead of failing
    with 'database is locked' when a deferred transaction that has read tries to write after another connection
    committed (WAL). Inside a caller's transaction it is a savepoint. All or nothing either way."""
    if db.conn.in_transaction:
        with db.atomic():
            yield
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.conn.rollback()
        raise
    db.conn.commit()


def _held_by_another(e: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection has the file, nothing is wrong with it."""
    return "locked" in str(e) or "busy" in str(e)


def _switch_to_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put the file in WAL mode, waiting (up to the busy timeout) for other connections rather than failing.

    When several processes open one new file at once (accelerate ranks), the switch can meet a file another
    process has just switched and is writing to; SQLite then answers 'database is locked' at once, without
    calling the busy handler. So retry with a short back-off until the file is in WAL mode."""
    deadline = time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            conn.execute("PRAGMA journal_mode=wal")
            return  # a file system without WAL support keeps its mode; SQLite still works, only slower
        except sqlite3.OperationalError as e:
            if "readonly" in str(e):
                # a read-only copy in rollback-journal mode (a VACUUM INTO snapshot on a read-only mount): it is read
                # as it is, and only a command that must store something fails, with the read-only message
                return
            if not _held_by_another(e) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def db_file(db) -> str:
    """The file an open database reads ('' for one in memory)."""
    row = db.execute("PRAGMA database_list").fetchone()
    return row[2] if row and row[2] else ""


def identity(db) -> tuple:
    """What tells this database from another at the same path, for a memo kept across requests: its file and the
    random token drawn when it was made (migration 036; a copy keeps it). A path alone is not enough: an organiser
    copying a backup over the file, or a restore of a Space's synced copy, puts another database there while a
    long-running process keeps its memos. ('', ...) for one in memory."""
    row = db.execute("SELECT token FROM database_identity").fetchone()
    return db_file(db), row[0] if row else None


def shown_file(db) -> str:
    """The file to name in a message: for a read_copy the database it copies (its temporary copy's path means
    nothing to the user and is gone when the command ends), else db_file."""
    return getattr(db, "copied_from", "") or db_file(db)


def read_only(path, text: str) -> EvalkitError:
    """A database the file system will not let evalkit write: said as such (never as a corrupt file, whose fix, a
    new database, is wrong advice for the only copy of a study's ratings)."""
    return EvalkitError(f"database {path} is read-only ({text}): this command stores what it works out there "
                        "(the pre-screen's verdicts, a decision frozen at completion, a rater)",
                        "make the file and its folder writable, or copy it somewhere writable and pass --db the copy")


def check_writable(db, path) -> None:
    """Refuse, with the read-only message, a database this process cannot write: the app stores every rating, so it
    says so at its start rather than at a rater's first Submit. A write rolled back, so nothing changes."""
    try:
        with write_transaction(db):
            db.conn.execute("CREATE TABLE _evalkit_write_probe (x)")
            raise _Probed
    except _Probed:
        return
    except sqlite3.OperationalError as e:
        if "readonly" in str(e):
            raise read_only(path, str(e)) from e
        raise


class _Probed(Exception):
    """The probe's write went through: roll it back."""


def _unreadable(path: Path, e: Exception) -> EvalkitError:
    return EvalkitError(
        f"database {path} cannot be opened: {e}",
        "if the file is corrupt, move it aside (keep it for recovery) and run again to start a new one; "
        "or point --db / EVALKIT_DB at another file",
    )


def check_place(path: Path) -> None:
    """A folder where the file should be, or a file where a folder should be: said plainly, before SQLite's
    'unable to open database file' (whose advice would be about a corrupt file)."""
    import os

    where = "--db / EVALKIT_DB (or EVALKIT_DATA_DIR for the default results/evalkit.db)"
    if path.is_dir():
        raise EvalkitError(f"database {path} is a folder, not a file", f"point {where} at a file, e.g. "
                                                                      f"{path / 'evalkit.db'}")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise EvalkitError(f"database {path} cannot be created: {parent} is a file, not a folder",
                                   f"point {where} at a path in a folder")
            if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
                raise EvalkitError(f"database {path} cannot be created: folder {parent} is not writable",
                                   f"point {where} at a folder you can write to")
            return


def _ours_or_new(conn: sqlite3.Connection) -> bool:
    """Whether a file is a new database (no tables) or evalkit's (its migrations table), read before anything is
    written: another tool's SQLite file is never switched to WAL or given evalkit's tables."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return not tables or "_migrations" in tables


def _not_ours(path: Path, conn: sqlite3.Connection) -> EvalkitError:
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
    return EvalkitError(f"database {path} is not an evalkit database: it holds other tables ({shown}) and no "
                        "evalkit schema; it was left as it was",
                        "point --db / EVALKIT_DB at an evalkit database, or at a new file to start one")


@contextlib.contextmanager
def open_reader(path: Path | str):
    """A read-only connection to an existing database, for a check that reads before a command opens it to write
    (nothing is written: no WAL switch, no migration). A file that cannot be read, or another tool's, is refused in
    open_db's words; a missing file is the caller's to word (a read-only open cannot create it)."""
    path = Path(path)
    check_place(path)
    conn = None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        if not _ours_or_new(conn):
            raise _not_ours(path, conn)
        yield conn
    except sqlite3.DatabaseError as e:  # includes OperationalError: not a database, unable to open
        raise _unreadable(path, e) from e
    finally:
        if conn is not None:
            conn.close()


def open_db(path: Path | str | None = None, migrate_schema: bool = True):
    """Open (creating if needed) and migrate the database. WAL mode and a busy timeout for concurrent writers.

    A connection is meant for one thread: servers open one per request (cheap) and pass
    migrate_schema=False after the first open."""
    import sqlite_utils

    from ..locations import db_path

    path = Path(path) if path else db_path()
    check_place(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        if not _ours_or_new(conn):
            error = _not_ours(path, conn)
            conn.close()
            raise error
        db = sqlite_utils.Database(conn)
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        db.execute("PRAGMA foreign_keys = ON")
        _switch_to_wal(db.conn, BUSY_TIMEOUT_S)
        # In WAL mode NORMAL syncs at checkpoints, not on every commit: a committed rating survives the app
        # being killed (tests/test_crash.py); only an OS crash or power cut could lose the last commits.
        db.execute("PRAGMA synchronous = NORMAL")
        if migrate_schema:
            migrate(db)
    except sqlite3.OperationalError as e:
        if "readonly" in str(e):  # a read-only copy in rollback-journal mode: its switch to WAL is a write
            raise read_only(path, str(e)) from e
        if not _held_by_another(e):
            raise _unreadable(path, e)
        raise EvalkitError(
            f"database {path} cannot be opened: {e} (another process held it for over {BUSY_TIMEOUT_S:g} s)",
            "wait for the other evalkit command using this file to finish, or stop it, and run again; "
            "or point --db / EVALKIT_DB at another file",
        )
    except sqlite3.DatabaseError as e:
        raise _unreadable(path, e)
    except OSError as e:
        raise EvalkitError(f"database {path} cannot be created: {e}", "check the folder exists and is writable")
    return db


# The database as a file (the Space's sync to the Hub): copies and replacements stay here, with the other writes.

def snapshot(db_path: Path, dest: Path) -> Path:
    """A consistent copy of a live database (online backup API: readers and writers may keep going)."""
    src = sqlite3.connect(str(db_path), timeout=BUSY_TIMEOUT_S)
    try:
        out = sqlite3.connect(str(dest))
        try:
            with out:
                src.backup(out)
        finally:
            out.close()
    finally:
        src.close()
    return dest


def _copy_size(db) -> int:
    """The bytes a copy of the database takes (read_copy): its pages, those still in its WAL journal included."""
    return db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]


def _mb(size: float) -> str:
    return f"{size / 1e6:.1f} MB"


def check_copy_room(db, what: str) -> None:
    """Refuse, before anything is read or stored, a read_copy the temporary folder has no room for: found only as the
    copy was written, the failure came after the export's look had stored the decision and the first export's salt.
    A folder whose free space cannot be read is left to the copy's own error."""
    import shutil
    import tempfile

    folder, need = tempfile.gettempdir(), _copy_size(db)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < need:
        raise EvalkitError(f"{what} reads from a copy of the database ({_mb(need)}) in the temporary folder {folder}, "
                           f"which has {_mb(free)} free: nothing was written",
                           f"free {_mb(need - free)} or more there, or set TMPDIR to a folder with room for the copy, "
                           "and run again")


@contextlib.contextmanager
def read_copy(db, what: str = "the export"):
    """A private copy of the database as it is at one moment (online backup API), opened, for a reader that reads
    many tables and must not see a row another process stores in between (the export: its card's counts and its
    tables). Removed afterwards; writes to it go nowhere."""
    import tempfile

    check_copy_room(db, what)
    with tempfile.TemporaryDirectory(prefix="evalkit-read-") as folder:
        path, dest = Path(folder) / "copy.db", None
        try:
            dest = sqlite3.connect(str(path))
            db.conn.backup(dest)
        except sqlite3.OperationalError as e:  # a full or read-only temporary folder: not the database's fault
            raise EvalkitError(f"a copy of the database ({_mb(_copy_size(db))}) cannot be written to the temporary "
                               f"folder {folder}: {e}; {what} was not written",
                               "free space there, or set TMPDIR to a folder with room for it, and run again") from e
        finally:
            if dest is not None:
                dest.close()
        copy = open_db(path, migrate_schema=False)
        copy.copied_from = shown_file(db)
        try:
            yield copy
        finally:
            copy.conn.close()


def move_database(src: Path, dest: Path) -> Path:
    """Rename a closed database to `dest` beside it, its `-wal` and `-shm` files with it: left behind, they would be
    read as the journal of the next database put at `src`. Nothing is deleted; `dest` must not exist."""
    if dest.exists():
        raise FileExistsError(dest)
    # the journals first: a stop in between leaves none of them beside what comes to `src` next (the content is
    # whole at `dest`, its journal with it)
    for suffix in ("-wal", "-shm", ""):
        part = src.with_name(src.name + suffix)
        if part.exists():
            part.replace(dest.with_name(dest.name + suffix))
    return dest


def restore_file(copy: Path, db_path: Path) -> bool:
    """Put a downloaded database in place: copied beside the target, checked with integrity_check, then renamed
    over it in one step (a crash leaves either no database or the whole restored one). False, with nothing
    replaced and no temporary file left, when the copy fails the check, is no SQLite file (a truncated upload, a
    Git LFS pointer, a header without its pages) or holds no evalkit schema (an empty file)."""
    import shutil

    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_suffix(".restoring")
    ok = False
    try:
        shutil.copyfile(copy, tmp)
        check = sqlite3.connect(str(tmp))
        try:
            intact = (check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
                      and check.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'")
                      .fetchone() is not None)
        except sqlite3.DatabaseError:  # "file is not a database", "database disk image is malformed"
            intact = False
        finally:
            check.close()
        if intact:
            if not db_path.exists():  # a journal left by a database deleted without it would replay onto this one
                for suffix in ("-wal", "-shm"):
                    stray = db_path.with_name(db_path.name + suffix)
                    if stray.exists():
                        stray.replace(stray.with_name(f"{stray.name}.orphan-{now().replace(':', '')}"))
            tmp.replace(db_path)
            ok = True
    finally:
        if not ok:
            tmp.unlink(missing_ok=True)
    return ok
