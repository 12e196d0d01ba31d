"""Publishing: the HTML report, the Hub dataset, provenance and the Space's database sync."""

import contextlib


def refuse_to_replace(path, mark: str, what: str) -> None:
    """`path` is about to be replaced by evalkit's `what`: refuse when a file is there that evalkit did not write
    (no `mark` near its start), so that `--out .` in a project folder cannot replace its README.md or index.html."""
    from pathlib import Path

    from ..errors import EvalkitError

    path = Path(path)
    if path.exists() and not path.is_file():  # a folder of that name: the write failed at the end, naming no file
        raise EvalkitError(f"{path} is a folder, where {what} would be written: nothing was written",
                           f"move {path} away, or pass --out another folder")
    if not path.is_file():
        return
    with open(path, "rb") as f:
        head = f.read(4096).decode("utf-8", "replace")
    if mark not in head:
        raise EvalkitError(f"{path} exists and is not {what} evalkit wrote: writing there would replace it",
                           "pass --out an empty folder, or the folder of an earlier one")


def still_open_words(still_open: int, what: str) -> str:
    """What the export, the report and their commands say when pairs were still open to raters as they were made."""
    return (f"{still_open} pair(s) of the study being rated were still open to raters: {what} tells which side of each "
            "pair is which path. Keep it from raters until every pair is complete (an organiser who reads it and then "
            "rates gives ratings that are not blind)")


@contextlib.contextmanager
def one_moment(db, look, what: str = "the export"):
    """(copy, look(copy)): a private copy of the database at one moment (store.read_copy) and the look taken on it,
    for a writer whose every part (verdict, provenance, card or report, tables) must describe the same moment.

    A look stores the decision of a study whose sample it finds complete. On the copy that store goes nowhere: where a
    rating completed the sample just before the copy (the app stores the decision a moment after the rating), the
    export would show a decision, with its own time, that the database never held. The look is then taken on the
    database itself, which stores the decision there (or reads the one stored meanwhile), and a new copy is taken,
    which holds it: what is published is the decision the database keeps."""
    from ..store.database import read_copy

    def decisions(d) -> int:
        return d.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]

    with read_copy(db, what) as view:
        before = decisions(view)
        seen = look(view)
        if decisions(view) == before:
            yield view, seen
            return
    look(db)
    with read_copy(db, what) as view:
        yield view, look(view)
