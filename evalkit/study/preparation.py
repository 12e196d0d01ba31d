"""Getting a study ready for raters: the demo pair (when the config uses it) and the pair pool, with progress
published for a page to show (evalkit.progress). `evalkit prepare` runs it; so does `python app.py`, in a separate
process, when its database has no pairs yet."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from ..config import Config
from ..errors import EvalkitError
from ..progress import Board, duration, stage_words, watching
from ..store import open_db


# Seconds one demo pair takes in the pool (both paths, 2 CPU cores), for the estimate of the time left.
POOL_SECONDS_PER_PAIR = 4.0


def pool_size(db_path: Path) -> int:
    """The pairs in the pool; 0 while the database's only pool is one a stopped preparation left unfinished (its
    pairs reach no rater until it is finished), so that a start prepares again and finishes it."""
    db = open_db(db_path)
    try:
        return 0 if interrupted_first_pool(db, db_path) is not None else db["pairs"].count
    finally:
        db.conn.close()


def interrupted_first_pool(db, db_path: Path) -> int | None:
    """The database's only pool experiment when it is unfinished (Ctrl-C during a first start's preparation), else
    None. A database with a finished pool is left to `evalkit generate --resume`, which its stop names."""
    from .pairs import unfinished_pools

    pools = [r[0] for r in db.execute("SELECT id FROM experiments WHERE kind = 'pool'")]
    return pools[0] if len(pools) == 1 and pools[0] in unfinished_pools(db, db_path) else None


def ensure_pool(cfg: Config, db_path: Path, echo=print) -> int:
    """The number of pairs in the pool (gold check pairs included: what raters' queues hold), building one
    first when there is none."""
    from ..generation.models import check_model_refs
    from ..locations import typed_commands
    from .pairs import build_pool

    if not Path(db_path).exists():  # a missing model folder must not leave a new, empty database behind
        check_model_refs(cfg)
    db = open_db(db_path)
    try:
        n, resume = db["pairs"].count, interrupted_first_pool(db, db_path)
        if n and resume is None:
            echo(f"pair pool: {n} pairs in {db_path}")
            return n
        if resume is None:
            echo(f"no pairs in {db_path}: building the pool ({cfg.pool.samples} samples per prompt per path)…")
        else:  # its pairs reach no rater until it is finished: the app would have served an empty queue
            echo(f"the pool in {db_path} was stopped before it was finished: finishing it (experiment {resume})…")
        try:
            result = build_pool(cfg, db, progress=True, echo=echo, resume=resume)
        except KeyboardInterrupt:  # its stop names `evalkit generate --resume`; a presenter just starts again
            if interrupted_first_pool(db, db_path) is not None:
                echo(typed_commands("starting the app again (./scripts/start.sh, `evalkit serve`) or `evalkit "
                                    "prepare` with this database finishes that pool too"))
            raise
        echo(f"pair pool: {result.pairs} pairs from {result.prompts} prompts, and {result.gold} gold (check) "
             f"pair{'' if result.gold == 1 else 's'} (pool.gold_rate = {cfg.pool.gold_rate})")
        from ..generation.models import uses_demo
        from .studies import demo_sentence, fill_sentence

        if short := fill_sentence(result.study_pairs, result.planned_pairs, pool=result.planned_pool):
            if uses_demo(cfg):
                short = demo_sentence(result.study_pairs, result.planned_pairs)
            echo(typed_commands(f"study '{result.study}': {short}"))
        return result.pairs + result.gold
    finally:
        db.conn.close()


def plan(cfg: Config) -> list[tuple[str, float]]:
    """The stages ahead and their expected seconds: the demo pair's build when it is needed, then the pool."""
    from ..generation.models import demo_stages
    from ..task.prompts import load_prompts

    stages = demo_stages(cfg)
    from .gold import gold_count

    n = len(load_prompts(ids=cfg.pool.prompts or None)) * cfg.pool.samples
    n += gold_count(cfg.pool.gold_rate, n)  # the extra samples gold pairs are made from
    return stages + [("pair pool", n * POOL_SECONDS_PER_PAIR)]


def announcer():
    """The terminal's line as each stage begins (`./scripts/start.sh` shows it): which of how many, in plain words, and
    how far the whole preparation is and its time left. Each bar's own time left is its stage's alone: "train target …
    [16:20<02:47]" read as the wait for the whole, which was several stages more (the bars add the whole's too:
    progress.whole_left)."""
    import sys

    from tqdm.auto import tqdm

    def announce(stage: str, snap) -> None:
        en, zh = stage_words(stage)
        n = f"step {snap.stages.index(stage) + 1} of {len(snap.stages)}: " if stage in snap.stages else ""
        left = "" if snap.remaining is None else f", about {duration(snap.remaining)} left in all"
        tqdm.write(f"evalkit prepare: {n}{en} · {zh} ({round(100 * snap.fraction)}% of the whole preparation done "
                   f"after {duration(snap.elapsed)}{left})", file=sys.stderr)

    return announce


@contextlib.contextmanager
def sole_preparation(db_path: Path):
    """Held while a preparation of this database runs: a second one (a second start in the same folder on another
    port, a second `evalkit prepare`) is refused, since both trained the demo pair on the same cores and each put a
    pool of its own in the database. An advisory lock on a file beside the database, released when its process ends
    however it ends (Ctrl-C, a kill). Where no such lock exists (Windows) preparations are not guarded."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    if not Path(db_path).parent.is_dir():  # nothing can be preparing it; the database's own checks come later
        yield
        return
    with open(lock_file(db_path), "a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EvalkitError(
                f"another preparation of {db_path} is running (an `evalkit serve` or `evalkit prepare` started on it "
                "builds its pairs)", "wait for it and use the app that started it, or stop that one (Ctrl-C in its "
                "terminal) and start this one again") from None
        yield


def claim_start(db_path: Path, address: str):
    """An app start's claim on preparing this database, taken before anything slow. The preparation's own lock is
    taken seconds later, in `evalkit prepare`'s process: a second start in those seconds began a second preparation,
    refused only by its error on the page. Returns the locked file, to keep open while the app runs (the lock goes
    with its process, however it ends), or None while another start holds it; `address` (where this app serves) is
    written in it for that one's refusal. Where no such lock exists (Windows), starts are not guarded."""
    try:
        import fcntl
    except ImportError:
        return io.StringIO()
    path = start_lock_file(db_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        held = open(path, "a+", encoding="utf-8")
    except OSError:  # a folder it cannot write to: nothing can be prepared there, and the database's checks say why
        return io.StringIO()
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        return None
    note_address(held, address)
    return held


def note_address(held, address: str) -> None:
    """Writes `address` in the start claim this process holds (claim_start): at the claim, and again once the app
    listens where its port was Gradio's choice."""
    held.seek(0)
    held.truncate(0)
    held.write(f"{os.getpid()} {address}\n")
    held.flush()


def another_start(db_path: Path) -> EvalkitError:
    """The refusal of a start while another start's claim (claim_start) is held: what runs, where, how to stop it."""
    pid, address = claim_holder(db_path)
    if address == BY_HAND:  # a preparation run by hand holds it (held_apart_from_apps)
        return EvalkitError(f"`evalkit prepare` is preparing the pairs of {db_path} (process {pid}); a start now "
                            "would prepare them a second time",
                            "wait for it to say 'ready', then start the app again (it serves what was prepared), or "
                            "stop it (Ctrl-C in its terminal) and start the app again")
    which = f"process {pid}, its page at {address}" if pid else "its page at the address its terminal gives"
    return EvalkitError(f"the app is already starting on {db_path} ({which}) and prepares its pairs there; a second "
                        "start would prepare them a second time",
                        "open that page and wait for the pairs, or stop that app (Ctrl-C in its terminal) and start "
                        "this one again")


def claim_holder(db_path: Path) -> tuple[str, str]:
    """(process id, address) that the holder of the start claim wrote in it; ("", "") when it cannot be read."""
    import time

    for _ in range(20):  # its note follows its lock at once; on a busy machine, a moment later
        try:
            pid, address = start_lock_file(db_path).read_text(encoding="utf-8").split(maxsplit=1)
            return pid, address.strip()
        except (OSError, ValueError):
            time.sleep(0.1)
    return "", ""


def serving_address(db_path: Path) -> str | None:
    """Where an app started on this database serves now: the address its start claim names while its process runs
    (`evalkit serve --port 7861`, or the next free port, is not the config's), else the one an app started with
    --no-prepare announced (announce_address); None when none runs, or its address is not known (no port given)."""
    return _live_address(start_lock_file(db_path)) or _live_address(address_file(db_path))


def _live_address(path: Path) -> str | None:
    """The address a note of `pid address` names while that process runs; None otherwise."""
    try:
        pid, address = path.read_text(encoding="utf-8").split(maxsplit=1)
        os.kill(int(pid), 0)  # its process still runs (not the lock: testing it could refuse a start under way)
    except (OSError, ValueError):
        return None
    address = address.strip()
    return address if address.startswith("http") and " " not in address else None


def announce_address(db_path: Path, address: str):
    """An app started with --no-prepare takes no start claim (it prepares nothing, so it must neither refuse a
    preparation nor be refused by one), yet `evalkit raters add` without --url must name its address, not the
    config's: it writes it, as the claim does, in a note beside the database that serving_address reads while its
    process runs. Returns a function that removes the note (when it is still this process's)."""
    path = address_file(db_path)
    try:
        path.write_text(f"{os.getpid()} {address}\n", encoding="utf-8")
    except OSError:  # a folder it cannot write to: raters add then names the config's address, as before
        return lambda: None

    def withdraw() -> None:
        try:
            if path.read_text(encoding="utf-8").split(maxsplit=1)[0] == str(os.getpid()):
                path.unlink()
        except (OSError, IndexError):
            pass

    return withdraw


BY_HAND = "(evalkit-prepare)"  # the address a preparation run by hand writes in the start claim: it serves no page


@contextlib.contextmanager
def held_apart_from_apps(db_path: Path):
    """`evalkit prepare` holds the start claim (claim_start) while it runs. An app claims the database before anything
    slow and its own `evalkit prepare` (a child process) takes the preparation's lock seconds later: one run by hand in
    those seconds took that lock first, and the app's preparation failed on its page. Run by hand while an app holds
    the claim, it is now refused, naming that app's process and page; an app started while it runs is refused naming
    it (another_start). The app's own preparation runs under its parent's claim."""
    if not Path(db_path).parent.is_dir():  # nothing holds it, and a folder made here would outlive a refusal
        yield
        return
    held = claim_start(db_path, BY_HAND)
    if held is None:
        pid, address = claim_holder(db_path)
        if pid != str(os.getppid()):  # not the app that started this preparation
            if address == BY_HAND:
                raise EvalkitError(f"another preparation of {db_path} is running (`evalkit prepare`, process {pid})",
                                   "wait for it to say 'ready', or stop it (Ctrl-C in its terminal) and run this again")
            which = f"process {pid}, its page at {address}" if pid else "its page at the address its terminal gives"
            raise EvalkitError(f"an app is running on {db_path} ({which}) and prepares its pairs itself",
                               "open that page and wait for the pairs, or stop that app (Ctrl-C in its terminal) and "
                               "run this again")
        yield
        return
    try:
        yield
    finally:
        held.close()


def start_lock_file(db_path: Path) -> Path:
    return Path(db_path).with_name(Path(db_path).name + ".start.lock")


def address_file(db_path: Path) -> Path:
    return Path(db_path).with_name(Path(db_path).name + ".address")


def lock_file(db_path: Path) -> Path:
    return Path(db_path).with_name(Path(db_path).name + ".prepare.lock")


def check_no_preparation(db_path: Path) -> None:
    """EvalkitError when a preparation of this database is running (sole_preparation), before a start begins one."""
    if lock_file(db_path).exists():
        with sole_preparation(db_path):
            pass


def prepare(cfg: Config, db_path: Path, progress_file: Path | None = None, echo=print) -> int:
    """Build what the app needs (the work behind `evalkit prepare`), publishing progress to progress_file; refused
    while another preparation of the database runs."""
    with held_apart_from_apps(db_path), sole_preparation(db_path):
        return _prepare(cfg, db_path, progress_file, echo)


def _prepare(cfg: Config, db_path: Path, progress_file: Path | None, echo) -> int:
    if progress_file is None:
        return ensure_pool(cfg, db_path, echo)
    try:  # writes its first snapshot: a path nobody can write fails now
        board = Board(progress_file, plan(cfg), announce=announcer())
    except OSError as e:
        raise EvalkitError(f"cannot write the progress file {progress_file}: {e.strerror or e}",
                           "pass --progress-file a path in a folder you can write to") from e
    try:
        with watching(board):
            n = ensure_pool(cfg, db_path, echo)
    except EvalkitError as e:
        board.finish(error=f"{e.what}" + (f" — fix: {e.fix}" if e.fix else ""))
        raise
    except BaseException as e:
        board.finish(error=f"{type(e).__name__}: {e}")
        raise
    board.finish()
    return n
