"""One exception type for everything a user can fix: it names the thing and the fix.

The CLI turns it into one clear line and a non-zero exit; the app shows it in the UI.
"""


class EvalkitError(Exception):
    """A problem the user can fix. `what` names the object, `fix` says how."""

    def __init__(self, what: str, fix: str = ""):
        self.what = what
        self.fix = fix
        super().__init__(f"{what}" + (f"\n  fix: {fix}" if fix else ""))


def output_folder(path, what: str, option: str = "--out"):
    """The folder `path` for `what`, created with its parents; an EvalkitError naming it when it cannot be (a path
    under a read-only or system folder, a file in the way) instead of an OSError trace."""
    from pathlib import Path

    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EvalkitError(f"cannot create the folder {path} for {what}: {e.strerror or e}",
                           f"pass {option} a folder you can write to (it is created when missing), e.g. ./out") from e
    return path


def check_folder(path, what: str, option: str = "--out") -> None:
    """Refuse, before any work and creating nothing, a folder for `what` that output_folder could not make or write
    into: the nearest folder that exists on the way to it must be a folder this process may write to. A command
    whose work changes the database (a look that freezes the decision) checks its output here first, so that a
    refusal leaves the database as it was."""
    import os
    from pathlib import Path

    path = Path(path)
    there = next((p for p in [path, *path.parents] if p.exists()), Path("."))
    why = ("a file is in the way" if not there.is_dir() else
           "Permission denied" if not os.access(there, os.W_OK | os.X_OK) else None)
    if why == "Permission denied" and _read_only_mount(there):  # root is denied there too: chmod will not help
        why = "a read-only file system"
    if why:
        raise EvalkitError(f"cannot create the folder {path} for {what}: {why} ({there})",
                           f"pass {option} a folder you can write to (it is created when missing), e.g. ./out")


def _read_only_mount(path) -> bool:
    import os

    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows): said as a permission
        return False


def cannot_write(path, what: str, error: OSError) -> EvalkitError:
    """The EvalkitError for a file of `what` that could not be written into its folder."""
    return EvalkitError(f"cannot write {what} to {path}: {error.strerror or error}",
                        "pass --out a folder you can write to, with free space")
