"""The Gradio app: a thin shell over the library. `build_app` makes the Blocks; `launch` starts it with
the settings this app needs (browser-side run history off)."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config

if TYPE_CHECKING:  # gradio is imported where it is used (it is slow to import)
    import gradio as gr

TITLE = "evalkit · 盲评 A/B · blind A/B rating"  # both languages: the page is built before a rater picks one
DEFAULT_CONCURRENCY = 4  # rating events; live generation has its own queue slot (concurrency_id "live")


def build_app(cfg: Config, db_path: Path | str | None = None, *, space: bool | None = None,
              preparing=None) -> gr.Blocks:
    """The app for this config and database. `space` defaults to whether we run on a Hugging Face Space.
    `preparing`: a running evalkit.ui.prepare.Preparation; the page shows its progress, and rating and live runs
    wait for it."""
    import gradio as gr

    from ..locations import db_path as default_db_path
    from ..locations import on_space
    from ..store import open_db
    from ..errors import EvalkitError
    from ..publish.scrub import export_salt
    from ..study.pairs import edited_prompts
    from ..task.prompts import load_prompts
    from ..store.database import check_writable
    from .live import LiveModels, build_live_tab
    from .rate import build_rate_tab
    from .results import build_results_tab

    db_path = Path(db_path) if db_path else default_db_path()
    prompts = {p.id: p for p in load_prompts()}
    first = open_db(db_path)  # create and migrate once; requests then open without migrating
    try:
        check_writable(first, db_path)  # a read-only copy is refused here, not at a rater's first Submit
        for line in edited_prompts(first, prompts):
            logging.getLogger("evalkit.ui").warning(line)
        # the pseudonyms' secret, stored now: on a Space every export is of a downloaded copy, and each copy drew its
        # own salt, so one study's exports named its raters differently (Space audit F5); the sync carries it
        try:
            export_salt(first)
        except EvalkitError as e:  # a malformed salt is refused by every export, which says so; serving goes on
            logging.getLogger("evalkit.ui").warning("%s — fix: %s", e.what, e.fix)
    finally:
        first.conn.close()
    space = on_space() if space is None else space
    models = LiveModels(cfg)

    with gr.Blocks(title=TITLE) as demo:
        gr.Markdown(f"## {TITLE}")
        # "wrap": on a phone every tab shows (a second row), not behind a "⋯" menu a presenter must find
        with gr.Tabs(selected="rate", overflow_behavior="wrap") as tabs:
            with gr.Tab("Rate · 评分", id="rate"):
                rate = build_rate_tab(demo, cfg, db_path, prompts, space, preparing=preparing, tabs=tabs)
            with gr.Tab("Live demo · 现场演示", id="live"):
                build_live_tab(cfg, db_path, prompts, models, rate.session, space, preparing=preparing,
                               signout=None if space else rate.signout_btn)
            with gr.Tab("Results · 结果", id="results") as results_tab:
                build_results_tab(cfg, db_path, results_tab, rate.session, space=space,
                                  signout=None if space else rate.signout_btn,  # a Space has no Sign out button
                                  preparing=preparing)
    # After every event Gradio rebuilds a pandas summary of its last 10,000 events for a monitoring dashboard this
    # app does not open: with many raters, the largest cost of an event. Rebuild it every 1,000 events instead.
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")  # read when the queue is made
    demo.queue(default_concurrency_limit=DEFAULT_CONCURRENCY)
    demo.evalkit_clients = (space, cfg.app.trusted_proxy_hops)  # how launch's RequestGuard reads a request's client
    return demo


# The app takes no files: Gradio's upload route (open to anyone, signed in or not) refuses anything larger.
MAX_UPLOAD = "1kb"


def launch(demo: gr.Blocks, listening=None, **kwargs):
    """`demo.launch` with what this app needs: run history off (no rater's outputs are kept in the browser's run
    history), no error traces, uploads capped, Gradio's /monitoring dashboard off, every request body capped and
    deep links off (evalkit.ui.guard), never a public link (Gradio's advice to make one replaced by serving_line).
    `listening(demo)` runs once the page answers, before the line that says where it is."""
    from starlette.middleware import Middleware

    from .guard import RequestGuard

    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    from ..locations import on_space

    space, hops = getattr(demo, "evalkit_clients", (on_space(), 1))
    app_kwargs["middleware"] = [*app_kwargs.get("middleware", []),
                                Middleware(RequestGuard, space=space, proxy_hops=hops)]
    kwargs["app_kwargs"] = app_kwargs
    kwargs.setdefault("run_history", False)
    kwargs.setdefault("show_error", False)  # library errors arrive as gr.Error messages; no traces
    kwargs.setdefault("max_file_size", MAX_UPLOAD)
    kwargs.setdefault("enable_monitoring", False)
    from .keys import CSS, SCRIPT, theme
    from .rate import EARLIER_POPUPS

    kwargs.setdefault("head", SCRIPT + EARLIER_POPUPS)  # keyboard rating (evalkit/ui/keys.py), the refusals read
    kwargs.setdefault("css", CSS)
    kwargs.setdefault("theme", theme())  # contrast that passes an accessibility audit
    kwargs.setdefault("footer_links", [])  # raters need no API or settings links
    # Never a public link: the pairs are unrated study data (GRADIO_SHARE=true in the environment would open one)
    kwargs["share"] = False
    block = not kwargs.pop("prevent_thread_lock", False)
    from gradio import networking

    networking.url_ok = local_url_ok
    _no_proxy_for_loopback()
    try:
        with _forwarded_headers_untrusted(), _without_share_advice():
            result = demo.launch(prevent_thread_lock=True, **kwargs)
    except ValueError as e:
        if "localhost is not accessible" not in str(e):
            raise
        from ..errors import EvalkitError

        demo.close()  # the server had started; nothing answered it
        raise EvalkitError(
            f"the app started but its page did not answer on its own address ({demo.local_url}) within "
            f"{LOCAL_URL_WAIT:.0f} s",
            "check that nothing (a firewall, a sandbox) blocks connections to this machine's own address, and run "
            "again; on a machine that is very busy, start the app when the load has dropped") from e
    if listening is not None:
        listening(demo)
    if not kwargs.get("quiet") and (line := serving_line(demo)):
        print(line, flush=True)
    if block:  # what demo.launch does unless told not to: serve until Ctrl-C (or SIGTERM, see server.serve)
        demo.block_thread()
    return result


# Gradio's launch prints this after the local URL; it invites a presenter to put unrated study pairs on the internet
SHARE_ADVICE = "To create a public link, set `share=True`"


@contextlib.contextmanager
def _without_share_advice():
    """Gradio's launch output, every line of it (the local URL, any warning or error) but its share=True advice,
    which serving_line replaces. Launch's prints are held until it returns or fails, then written as they came."""
    import io
    import sys

    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held):
            yield
    finally:
        kept = [line for line in held.getvalue().splitlines(keepends=True) if SHARE_ADVICE not in line]
        sys.stdout.write("".join(kept))
        sys.stdout.flush()


def serving_line(demo) -> str:
    """evalkit's own line after launch: where the page is, who can open it, how to stop it ('' on a Space, whose
    page is the Space's and which stops from its settings)."""
    from ..locations import on_space

    if on_space():
        return ""
    reach = ("this machine only" if demo.server_name in ("127.0.0.1", "localhost", "::1")
             else f"anyone who can reach this machine's port {demo.server_port}")
    return (f"evalkit: the app is at {demo.local_url} ({reach}); Ctrl-C here stops it. Its pairs are unrated study data: "
            "keep it off public links.")


@contextlib.contextmanager
def _forwarded_headers_untrusted():
    """Uvicorn, by default, believes X-Forwarded-For from 127.0.0.1 and rewrites the client's address with it, and
    every per-client limit (sign-in attempts, new names, live runs) is keyed by that address (auth.client_key): any
    client reaching the app from this machine (a local user, an SSH tunnel, a reverse proxy on it) could name a new
    address with each request. Off a Space, uvicorn is told to trust no forwarded header (FORWARDED_ALLOW_IPS, read
    when launch makes the server's config; Gradio's launch has no argument for it), for this launch only. On a Space
    the proxy's header is the client (auth.client_key reads it there), so nothing changes."""
    from ..locations import on_space

    if on_space():
        yield
        return
    before = os.environ.get(FORWARDED_ALLOW_IPS)
    os.environ[FORWARDED_ALLOW_IPS] = ""  # no address is trusted: the socket's address is the client's
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(FORWARDED_ALLOW_IPS, None)
        else:
            os.environ[FORWARDED_ALLOW_IPS] = before


FORWARDED_ALLOW_IPS = "FORWARDED_ALLOW_IPS"  # uvicorn's setting: the proxies whose X-Forwarded-For it believes


def _no_proxy_for_loopback() -> None:
    """Launch asks the app's own address (its page, then its startup events) with the environment's proxy settings: a
    proxy set for the internet, as on many company machines, gets those requests, and launch fails or hangs. The
    loopback addresses join NO_PROXY (both spellings), which is what reaching them directly means."""
    loopback = ["localhost", "127.0.0.1", "::1"]
    for var in ("NO_PROXY", "no_proxy"):
        have = [h.strip() for h in os.environ.get(var, "").split(",") if h.strip()]
        os.environ[var] = ",".join(have + [h for h in loopback if h not in have])


# How long launch waits for the page to answer on its own address before calling it unreachable.
LOCAL_URL_WAIT = 60.0


def local_url_ok(url: str, wait: float | None = None) -> bool:
    """Gradio's launch asks whether the page answers on its local address before going on; its own check gives up on
    the first request slower than 3 s, and sends it through any proxy in the environment. On a machine busy training
    the demo pair (the README's first command) or running tests side by side, the first page is slower than that, and
    launch then refuses to start with "When localhost is not accessible, a shareable link must be created". This check
    asks a local address directly, never through a proxy, and waits for it up to `LOCAL_URL_WAIT` seconds."""
    import time
    from urllib.parse import urlsplit

    import httpx

    local = urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1", "0.0.0.0")
    deadline = time.monotonic() + (LOCAL_URL_WAIT if wait is None else wait)
    while True:
        try:
            # the statuses Gradio's own check accepts (401 or a redirect when the page has a login)
            if httpx.head(url, timeout=10, verify=False, trust_env=not local).status_code in (
                    200, 401, 301, 302, 303, 307, 308):
                return True
        except httpx.TransportError:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)
