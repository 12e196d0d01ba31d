"""Who is rating, and with what rights. On a Hugging Face Space: the OAuth profile (`gr.LoginButton`); organisers
are the usernames in app.organisers. Locally: a personal code (from `evalkit raters add`, an invitation link, or
handed out by open sign-up), checked against its hash; organiser rights only from the registry. The result lives
only in the server-side session; nothing the browser sends later can change it.

Every local attempt passes the sign-in guard, keyed by the client address and by the name or code owner claimed,
so neither many names from one client nor many clients on one name get more guesses."""

from __future__ import annotations

import hmac
from pathlib import Path

import gradio as gr

from .. import raters
from ..config import AppConfig
from ..identity import name_key
from ..limits import RateLimiter, SignInGuard, check_allowed
from ..raters import Identity, SignInError
from ..ratings import RatingError, clean_rater
from .db import connect


def client_key(request: gr.Request | None, space: bool) -> str:
    """The client's address. Behind a Space's proxy the first X-Forwarded-For entry is the client; locally that
    header is whatever the client typed, so only the socket's address counts."""
    if request is None:
        return "client:?"
    if space:
        forwarded = (request.headers.get("x-forwarded-for") or "").split(",")[0].strip()
        if forwarded:
            return f"client:{forwarded}"
    host = getattr(getattr(request, "client", None), "host", None)
    return f"client:{host or '?'}"


def profile_orgs(profile: gr.OAuthProfile) -> list[str]:
    """The Hub organisations in the OAuth userinfo (present when the Space asks for them)."""
    orgs = profile.get("orgs") or []
    return [o.get("preferred_username") or o.get("name") for o in orgs if isinstance(o, dict)]


class Doorman:
    """Sign-in for one app: the attempt guard and the sign-up limit are shared by every session."""

    def __init__(self, app: AppConfig, db_path: Path, space: bool):
        self.app, self.db_path, self.space = app, db_path, space
        self.guard = SignInGuard()
        self.signups = RateLimiter(app.signups_per_client_per_hour, window=3600, what="new names")

    def local(self, name: str, code: str, passcode: str, client: str) -> tuple[Identity, str | None]:
        """(identity, the new personal code to hand out, if this made a new identity)."""
        code = (code or "").strip()
        name = name if isinstance(name, str) else ""
        claim = raters.code_owner_key(code) if code else f"name:{name_key(name) or '?'}"
        keys = [client, claim]
        self.guard.check(keys)
        with connect(self.db_path) as db:
            if code:
                try:
                    identity = raters.authenticate(db, code)
                except SignInError:
                    self.guard.failed(keys)
                    raise
                check_allowed(self.app, identity.name)
                return identity, None
            if self.app.signup != "open":
                raise SignInError("this study signs raters in with a personal code",
                                  "enter the code (or open the link) the study organiser sent you")
            if self.app.passcodes and not any(
                    hmac.compare_digest((passcode or "").encode(), p.encode()) for p in self.app.passcodes):
                self.guard.failed(keys)
                raise SignInError("that passcode is not right", "ask the study organiser for the current passcode")
            name = clean_rater(name)
            check_allowed(self.app, name)
            try:
                self.signups.check(client)
                cred = raters.sign_up(db, name)
            except Exception:
                self.guard.failed(keys)  # probing for taken names costs like a wrong guess
                raise
            return cred.identity, cred.code

    def resume(self, code: str, client: str) -> Identity | None:
        """The identity behind a code the browser kept, or None (quietly: the sign-in form then shows)."""
        try:
            identity, _ = self.local("", code, "", client)
        except Exception:  # noqa: BLE001 - a stale or revoked code just means signing in again
            return None
        return identity

    def space_identity(self, profile: gr.OAuthProfile | None) -> Identity:
        if profile is None:
            raise RatingError("you are not signed in", "use 'Sign in with Hugging Face' at the top of the page")
        name = clean_rater(profile.username)
        check_allowed(self.app, name, profile_orgs(profile))
        role = "organiser" if name in self.app.organisers else "rater"
        return Identity(name, role, "space")
