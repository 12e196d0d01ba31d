"""What a browser keeps to resume a rater's sign-in: the personal code sealed (authenticated encryption, Fernet)
under a key only the server holds. Reading the browser's storage, or the page's config, gives a sealed token, never
the code; a token that was altered, or sealed under another key, opens to nothing.

Gradio's own BrowserState encryption key is part of the page config (the browser does that encryption), so it hides
nothing from someone who can read the browser's storage; it is derived here from the server key only so that a
stored token survives a restart of the app.

The key: EVALKIT_BROWSER_SECRET (a Space secret, any text) when set; else a random key in a file beside the
database (`<db>.browser-key`, made on first use, readable by its owner only)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

ENV = "EVALKIT_BROWSER_SECRET"
TOKEN_LIMIT = 512  # a sealed code is about 140 characters; anything longer is not one of ours


class Sealer:
    def __init__(self, key: bytes):
        from cryptography.fernet import Fernet

        self._key = key
        self._fernet = Fernet(base64.urlsafe_b64encode(hashlib.sha256(b"evalkit-seal\0" + key).digest()))

    def seal(self, text: str) -> str:
        return self._fernet.encrypt(text.encode()).decode()

    def open(self, token) -> str | None:
        """The sealed text, or None when `token` is not a token this key sealed."""
        from cryptography.fernet import InvalidToken

        if not isinstance(token, str) or not token or len(token) > TOKEN_LIMIT:
            return None
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except (InvalidToken, ValueError, UnicodeError):
            return None

    def tag(self, text: str) -> str:
        """A keyed hash of `text` (a client's address, kept with the names it made): the same text tags alike under
        this key, and the tag tells nothing of the text without it (every IPv4 address is a quick guess of a plain
        hash)."""
        return hmac.new(self._key, b"evalkit-tag\0" + text.encode(), hashlib.sha256).hexdigest()[:32]

    @property
    def browser_secret(self) -> str:
        """A stable key for Gradio's BrowserState (public in the page config; reveals nothing of the server key)."""
        return hmac.new(self._key, b"gradio-browser-state", hashlib.sha256).hexdigest()[:32]


def key_path(db_path: Path) -> Path:
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + ".browser-key")


def server_key(db_path: Path) -> bytes:
    """The server's sealing key: the environment's secret, else the key file beside the database (made once)."""
    env = os.environ.get(ENV)
    if env:
        return env.encode()
    path = key_path(db_path)
    if not path.exists():  # written whole under another name, then linked: a reader never sees half a key
        tmp = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.urlsafe_b64encode(secrets.token_bytes(32)))
        try:
            os.link(tmp, path)
        except FileExistsError:  # another process made it first: theirs is the key
            pass
        finally:
            tmp.unlink()
    return path.read_bytes().strip()


def sealer_for(db_path: Path) -> Sealer:
    return Sealer(server_key(db_path))
