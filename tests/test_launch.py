"""The app starts on a busy machine: Gradio's launch asks its own page once, with a 3 s limit and through any proxy in
the environment, and refuses to start when that fails ("When localhost is not accessible..."). evalkit's launch
asks its local address directly and waits for it."""

import asyncio
import threading

import pytest

from evalkit.ui.server import free_port


class SlowFirstRequest:
    """ASGI middleware: the first request for the page waits `delay` seconds, as the first page of an app on a machine
    busy training a model does."""

    def __init__(self, app, delay: float = 4.5):
        self.app, self.delay, self.lock, self.first = app, delay, threading.Lock(), True

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/":
            with self.lock:
                first, self.first = self.first, False
            if first:
                await asyncio.sleep(self.delay)
        await self.app(scope, receive, send)


@pytest.mark.slow
def test_launch_waits_for_a_slow_first_page_and_ignores_a_dead_proxy(monkeypatch):
    import gradio as gr
    import httpx
    from starlette.middleware import Middleware

    from evalkit.ui import launch

    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there: a proxy that is down
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(var, dead)
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    with gr.Blocks() as demo:
        gr.Markdown("hello")
    port = free_port()
    launch(demo, prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True,
           app_kwargs={"middleware": [Middleware(SlowFirstRequest)]})
    try:
        r = httpx.get(f"http://127.0.0.1:{port}/", timeout=30, trust_env=False)
        assert r.status_code == 200 and "hello" in r.text
    finally:
        demo.close()


def test_the_local_check_gives_up_on_an_address_nothing_answers():
    from evalkit.ui import local_url_ok

    assert local_url_ok(f"http://127.0.0.1:{free_port()}/", wait=1.0) is False


class PageDown:
    """ASGI middleware: the page answers 503 to every request, as an app whose own address something intercepts."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/":
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


def test_a_page_that_never_answers_is_a_clear_error_and_the_server_is_closed(monkeypatch):
    import socket

    import gradio as gr
    from starlette.middleware import Middleware

    import evalkit.ui as ui
    from evalkit.errors import EvalkitError

    monkeypatch.setattr(ui, "LOCAL_URL_WAIT", 1.0)
    with gr.Blocks() as demo:
        gr.Markdown("hello")
    port = free_port()
    with pytest.raises(EvalkitError) as e:
        ui.launch(demo, prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True,
                  app_kwargs={"middleware": [Middleware(PageDown)]})
    assert f"127.0.0.1:{port}" in str(e.value) and "within 1 s" in str(e.value) and "fix:" in str(e.value)
    with socket.socket() as s:  # the server it had started is gone: the port is free again
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


def test_a_drawn_port_is_free_outside_the_kernel_s_range_and_each_test_worker_has_its_own(monkeypatch):
    """Two xdist workers once drew one port from the kernel (bind to port 0): the other worker's app bound it first,
    and a test's raters talked to the wrong server. Ports are now drawn below the ephemeral range, per worker."""
    import random
    import socket

    from evalkit.ui import server

    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    drawn = {}
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        drawn[worker] = {free_port() for _ in range(40)}
        assert all(20000 <= p < 32768 for p in drawn[worker])
    assert {p % 2 for p in drawn["gw0"]} == {0} and {p % 2 for p in drawn["gw1"]} == {1}  # disjoint shares

    # a port something listens on is passed over: the draw's first candidate is made busy
    taken = 20001  # in gw1's share
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", taken))
        listener.listen()
        monkeypatch.setattr(random.Random, "sample", lambda self, pop, k: [taken, *[p for p in pop if p != taken][:k - 1]])
        port = server.free_port()
    assert port != taken
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # it is free
