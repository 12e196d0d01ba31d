"""Serving the rating app (`evalkit serve`, and `python app.py` on a Hugging Face Space): restore the database from
the Hub when the Space lost it, start preparing the pair pool in its own process when there is none, build the
Gradio app and launch it, pushing database snapshots while it runs.

On a Hugging Face Space (SPACE_ID and SYSTEM=spaces set, as Gradio decides it) raters sign in with Hugging Face;
locally they use personal codes (`evalkit raters add`), or pick a name when the config opens sign-up."""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from pathlib import Path

from ..config import Config
from ..errors import EvalkitError
from ..locations import on_space, typed_commands


def sign_in_hint(cfg: Config, path: Path) -> str:
    """What an organiser needs to know at start: how raters (and they themselves) sign in."""
    from ..rating import roster as raters
    from ..store import open_db

    db = open_db(path)
    try:
        roster = raters.listing(db)
        invited, organisers = raters.count(db, "invited"), sum(r["role"] == "organiser" for r in roster)
    finally:
        db.conn.close()
    db_arg = f" --db {path}"
    lines = [note] if (note := raters.look_alike_note(roster)) else []
    if cfg.app.signup == "open":
        lines.append("evalkit: open sign-up: anyone who can reach this address may pick a name and rate "
                     "(app.signup = \"open\").")
        if cfg.app.allowed_raters:  # locally a name is no credential: the list is checked against names typed
            lines.append("evalkit: app.allowed_raters is checked against the name typed at open sign-up: whoever "
                         "types a listed name first takes it. To give each listed rater her own credential, set "
                         f"app.signup = \"invite\" and invite each with `evalkit raters add NAME{db_arg}`.")
    elif invited == 0:
        lines.append(f"evalkit: no raters yet. Invite each with `evalkit raters add NAME{db_arg}`: it prints their "
                     "personal code and sign-in link.")
    if organisers == 0:
        from .live import live_access

        live = " and the Live tab" if live_access(cfg, space=False) == "organisers" else ""  # else open to anyone
        lines.append(f"evalkit: no organiser yet. `evalkit raters add YOUR-NAME --organiser{db_arg}` gives you results "
                     f"at any time{live}.")
    return typed_commands("\n".join(lines))  # as the shell that ran ./scripts/start.sh can type them


def space_hint(cfg: Config) -> str:
    """sign_in_hint on a Space, where raters sign in with Hugging Face: who may rate, and who reads the results."""
    from ..rating.limits import has_allow_list

    lines = []
    if not has_allow_list(cfg.app):
        lines.append("evalkit: any Hugging Face account that opens this Space may rate, and its ratings count: no "
                     "app.allowed_raters or app.allowed_orgs in the config. Unless the Space is private or sets "
                     "hf_oauth_authorized_org, list your raters there.")
    if not cfg.app.organisers:
        lines.append("evalkit: no organiser: list the Hub usernames that read the results and use the Live tab in "
                     "app.organisers.")
    return "\n".join(lines)


def plan_hint(path: Path, cfg: Config | None = None) -> str:
    """One sentence when the latest study's pool holds fewer study pairs than its plan needs ('' otherwise); on the
    offline demo pair (`cfg` uses it), what the demo is instead."""
    from ..generation.models import uses_demo
    from ..store import open_db
    from ..study.studies import choose, start_sentence

    db = open_db(path)
    try:
        study = choose(db)
        short = start_sentence(db, study, demo=cfg is not None and uses_demo(cfg))
    finally:
        db.conn.close()
    return typed_commands(f"evalkit: {study.label()}: {short}.") if short else ""


# What a Space sets when its README's YAML header has `hf_oauth: true`; Gradio's Hub sign-in needs every one
SPACE_OAUTH_VARIABLES = ("OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET", "OAUTH_SCOPES", "OPENID_PROVIDER_URL")


def check_space_oauth() -> None:
    """On a Space raters sign in with Hugging Face, which the Space switches on with `hf_oauth: true` in its README's
    YAML header: without it, EvalkitError naming the setting (not Gradio's ValueError while the app is built)."""
    import os

    missing = [v for v in SPACE_OAUTH_VARIABLES if not os.environ.get(v)]
    if missing:
        raise EvalkitError(
            f"this Space has no 'Sign in with Hugging Face' ({', '.join(missing)} not set), which is how its raters "
            "sign in",
            "put `hf_oauth: true` in the YAML header at the top of the Space's README.md (this repository's header "
            "has it; README, \"On a Hugging Face Space\", step 1) and push it: the Space then restarts with sign-in")


def _check_data_place(path: Path) -> None:
    """EvalkitError when the database cannot be made at `path`; on a Space whose EVALKIT_DATA_DIR does not exist, the
    likely cause is named: the variable set (README, step 3) without persistent storage attached."""
    import os

    from ..store.database import check_place

    try:
        check_place(path)
    except EvalkitError as e:
        data = os.environ.get("EVALKIT_DATA_DIR", "")
        if on_space() and data and not Path(data).exists():
            raise EvalkitError(e.what, f"EVALKIT_DATA_DIR={data} does not exist on this Space: attach persistent "
                               "storage in the Space's settings (it is mounted at /data, so EVALKIT_DATA_DIR=/data), "
                               "or delete the variable EVALKIT_DATA_DIR to keep the database on the Space's own disk "
                               "(the sync repo then restores it after a restart)") from e
        raise


class _Stderr(logging.StreamHandler):
    """A handler on whatever sys.stderr is when it writes (a test runner swaps it), not the one at its creation."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def log_to_stderr() -> None:
    """evalkit's INFO lines (the sync's fresh start, restores, good pushes) to stderr, the only log a Space shows:
    with logging never configured, Python drops everything below WARNING. Once, however often serve runs."""
    logger = logging.getLogger("evalkit")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("evalkit: %(message)s"))
        logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)


def serve(cfg: Config, path: Path, *, host: str | None = None, port: int | None = None, prepare: bool = True) -> None:
    """Serve the app for this config and database until the server stops. Raises EvalkitError before serving when
    the database cannot be used (and stops a preparation it started)."""
    from ..publish.sync import from_environment

    log_to_stderr()
    if port is not None and not 0 <= port <= 65535:  # before a preparation starts
        raise EvalkitError(f"--port {port} is not a port", "pass a port in 0-65535, e.g. --port 7861 (0: Gradio's "
                           "default, 7860 or the next free one)")
    space = on_space()
    if space:  # before the sync's start commit and the preparation: Gradio would stop later, with a traceback
        check_space_oauth()
    host = host or (None if space else cfg.app.host)  # a Space sets GRADIO_SERVER_NAME itself
    _check_host(host)
    # 0 (--port 0 as app.port = 0): Gradio's search from 7860; passed on as 0, uvicorn bound a port of the OS's choice
    # that Gradio's own check of the page (at port 0) never reached, and the start failed with a traceback
    port = (port if port is not None else cfg.app.port) or None
    if not space and port:
        _check_port_free(host, port)
    sync = prep = claim = None
    withdraw = None  # an announced address's removal (--no-prepare)
    try:
        # On a Space the disk does not survive a restart: restore the database before anything opens it
        # (EVALKIT_SYNC_REPO switches this on; on a Space the start stops without it, unless it is "off"), then push
        # consistent snapshots while serving.
        sync = from_environment(path)
        _check_data_place(path)  # before the restore writes there: a folder it could not make was a traceback
        if sync is not None:
            sync.restore_if_missing()
            sync.check_can_write()  # reading is not writing: a read-only token would lose the ratings at a restart
        if not prepare and not path.exists():  # else a typo serves an empty study: "no pairs left"
            raise EvalkitError(f"database {path} does not exist",
                               "run without --no-prepare to build the pair pool there, or point --db / EVALKIT_DB "
                               "at the study's database")
        address = _address(host, port) if port else f"{_address(host, 7860)} or the next free port"
        if not prepare:  # no claim, but `raters add` names this app's address all the same
            from ..study.preparation import announce_address

            withdraw = announce_address(path, address)
        else:
            from ..study.preparation import another_start, check_no_preparation, claim_start, pool_size
            from .prepare import Preparation

            # before anything slow: a second start in the same folder, on another port, whatever the timing
            claim = claim_start(path, address)
            if pool_size(path) == 0:  # serve the page at once; it shows the preparation's progress
                if claim is None:
                    raise another_start(path)
                check_no_preparation(path)  # an `evalkit prepare` of its own
                print("evalkit: no pairs to rate yet: preparing them in a separate process (`evalkit prepare`); "
                      "the page shows the progress", file=sys.stderr)
                prep = Preparation(cfg, path)
        from . import build_app

        demo = build_app(cfg, path, preparing=prep)
        print(space_hint(cfg) if on_space() else sign_in_hint(cfg, path), file=sys.stderr)
        if prep is None and (hint := plan_hint(path, cfg)):
            print(hint, file=sys.stderr)
    except BaseException:
        if prep is not None:
            prep.stop()
        if claim is not None:
            claim.close()
        if withdraw is not None:
            withdraw()
        raise
    from . import launch

    if sync is not None:
        sync.start()
    _stop_cleanly_on_sigterm()
    listening = None if port else functools.partial(_name_the_port, host=host, path=path, claim=claim,
                                                    announced=withdraw is not None)
    try:
        launch(demo, server_name=host, server_port=None if space else port, listening=listening)
    except OSError as e:  # Gradio's "Cannot find empty port": the port is taken, or the host is not this machine's
        raise _cannot_listen(host, port, e) from e
    finally:
        if prep is not None:
            prep.stop()
        if claim is not None:
            claim.close()
        if withdraw is not None:
            withdraw()
        if sync is not None:
            sync.stop(final_push=True)


def _address(host: str | None, port: int) -> str:
    return f"http://{host or '127.0.0.1'}:{port}/"


def _name_the_port(demo, *, host: str | None, path: Path, claim, announced: bool) -> None:
    """Where no port was given (app.port = 0) Gradio chose one, 7860 or the next free: the start claim, or the note
    of an app started with --no-prepare, names the port it bound, so `evalkit raters add` without --url links to
    this page rather than to 7860."""
    from urllib.parse import urlsplit

    from ..study.preparation import announce_address, note_address

    if not (port := urlsplit(demo.local_url or "").port or demo.server_port):
        return
    if claim is not None:
        note_address(claim, _address(host, port))
    if announced:
        announce_address(path, _address(host, port))


def _check_host(host: str | None) -> None:
    from ..config import ipv6_host_refusal

    if host and ":" in host:
        raise EvalkitError(ipv6_host_refusal(f"--host {host} (or app.host)"), "pass --host 127.0.0.1 for this machine "
                           "only, or 0.0.0.0 for the network (IPv4)")


def _cannot_listen(host: str | None, port: int | None, e: OSError) -> EvalkitError:
    return EvalkitError(f"cannot listen on {host or 'the default host'}:{port or 7860}: {e}",
                        "stop the app already running there or pass another --port, and give --host an address "
                        "of this machine (127.0.0.1 for this machine only, 0.0.0.0 for the network)")


def _check_port_free(host: str | None, port: int) -> None:
    """Gradio's own test of the port (a bind, SO_REUSEADDR as uvicorn's), made before anything starts: a second start
    in the same folder (the first holding 7860) created the database and began a second preparation of it (the demo
    pair's training a second time on the same cores) before launch stopped at the port. Launch still tests again."""
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host or "127.0.0.1", port))
        except OSError as e:
            raise _cannot_listen(host, port, e) from e


def _stop_cleanly_on_sigterm() -> None:
    """A Space (and systemd, docker stop) stops the app with SIGTERM, whose default ends the process at once: serve's
    clean-up would not run, and the ratings stored since the last sync (up to EVALKIT_SYNC_EVERY seconds) would be
    lost with the Space's disk. SIGTERM is turned into the interruption Gradio's main loop already handles (it closes
    the server), so the final push and the preparation's stop run."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        return

    def interrupt(signum, _frame):
        print(f"evalkit: stopping on signal {signum} (SIGTERM): closing the server, then the final sync",
              file=sys.stderr)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


# Ports drawn for apps started beside others: below Linux's default ephemeral range (32768-60999), from which the
# kernel hands out bind(0) ports and outgoing connections' ports, so no other process is given the port between the
# draw and the app's bind.
_DRAWN_PORTS = range(20000, 32768)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, for an app started beside others (tests, benchmarks).

    Asking the kernel (bind to port 0) is racy: it may hand the same port to a second process as soon as the first
    closes its probe, and that one's server can bind it first. So the port is drawn at random outside the kernel's
    range, and each pytest-xdist worker draws from its own share of it, so two test workers never draw one port."""
    import os
    import random
    import socket

    worker, workers = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    share = (_DRAWN_PORTS[int(worker[2:])::int(workers)]
             if worker[:2] == "gw" and worker[2:].isdigit() and workers.isdigit() else _DRAWN_PORTS)
    for port in random.Random().sample(share, min(len(share), 200)):
        with socket.socket() as s:
            try:
                s.bind((host, port))  # no SO_REUSEADDR: a port still in TIME_WAIT is passed over too
            except OSError:
                continue
            return port
    raise EvalkitError(f"no free port found on {host} between {_DRAWN_PORTS.start} and {_DRAWN_PORTS.stop - 1}",
                       "stop some of the servers running on this machine, or pass --port")


@contextlib.contextmanager
def serving(demo, host: str = "127.0.0.1"):
    """A built app launched as `serve` launches it, without blocking, on a free port of `host`; yields its URL and
    closes the app afterwards (the end-to-end tests and scripts/loadbench.py)."""
    from . import launch

    port = free_port(host)
    launch(demo, prevent_thread_lock=True, server_name=host, server_port=port, quiet=True)
    try:
        yield f"http://{host}:{port}/"
    finally:
        demo.close()
