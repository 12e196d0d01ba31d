"""The local demo's start as a presenter sees it in the terminal: a real `python app.py` in a subprocess."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import loadbench  # noqa: E402

def _port() -> int:
    """A port nothing listens on now, given as a presenter gives --port: near Gradio's 7860, below it."""
    for port in range(7800, 7830):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("every port from 7800 to 7829 is taken on 127.0.0.1")


def _start(tmp_path: Path, port: int, env: dict, log: Path) -> subprocess.Popen:
    db_file = tmp_path / "demo.db"
    if not db_file.exists():
        loadbench.build_pool(db_file, 3)
    config = tmp_path / "demo.toml"
    config.write_text("[app]\nsignup = \"open\"\n", encoding="utf-8")
    return subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--db", str(db_file), "--config", str(config),
                             "--no-prepare", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=str(tmp_path), stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                            env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", **env})


def _wait_for(log: Path, proc: subprocess.Popen, words: str, seconds: float = 120) -> str:
    deadline = time.monotonic() + seconds
    while True:
        text = log.read_text(encoding="utf-8", errors="replace")
        if words in text or proc.poll() is not None or time.monotonic() > deadline:
            return text
        time.sleep(0.3)


@pytest.mark.slow
def test_the_terminal_gives_the_local_address_and_how_to_stop_and_never_a_public_link(tmp_path):
    """Demo audit, 2026-12-06: a local start printed Gradio's "To create a public link, set `share=True` in
    `launch()`", which invites a presenter to put unrated study pairs on the internet; and GRADIO_SHARE=true in the
    environment made such a link without asking. The terminal now has the local URL, evalkit's own line (who can
    open it, Ctrl-C to stop) and no public link, even with GRADIO_SHARE=true."""
    port, log = _port(), tmp_path / "serve.log"
    proc = _start(tmp_path, port, {"GRADIO_SHARE": "true"}, log)
    try:
        text = _wait_for(log, proc, "Ctrl-C here stops it")
        assert proc.poll() is None, text
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass  # the page is served where the line says
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text(encoding="utf-8", errors="replace")
    assert f"Running on local URL:  http://127.0.0.1:{port}" in text, text  # Gradio's own URL line is kept
    assert (f"evalkit: the app is at http://127.0.0.1:{port}/ (this machine only); Ctrl-C here stops it." in text), text
    assert "share=True" not in text and "public URL" not in text and "share link" not in text, text

