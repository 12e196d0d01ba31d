"""Who is rating. On a Hugging Face Space: the OAuth profile's username (`gr.LoginButton`). Locally: a typed
name, checked against the config's shared passcodes when there are any. The result lives only in the
server-side session; nothing the browser sends later can change it."""

import hmac
import os

import gradio as gr

from ..config import AppConfig
from ..limits import check_allowed
from ..ratings import RatingError, clean_rater


def on_space() -> bool:
    """Hugging Face Spaces set SPACE_ID in the environment."""
    return bool(os.environ.get("SPACE_ID"))


def local_rater(app: AppConfig, name: str, passcode: str) -> str:
    rater = clean_rater(name)
    if app.passcodes and not any(hmac.compare_digest((passcode or "").encode(), p.encode()) for p in app.passcodes):
        raise RatingError("that passcode is not right", "ask the study organiser for the current passcode")
    check_allowed(app, rater)
    return rater


def profile_orgs(profile: gr.OAuthProfile) -> list[str]:
    """The Hub organisations in the OAuth userinfo (present when the Space asks for them)."""
    orgs = profile.get("orgs") or []
    return [o.get("preferred_username") or o.get("name") for o in orgs if isinstance(o, dict)]


def space_rater(app: AppConfig, profile: gr.OAuthProfile | None) -> str:
    if profile is None:
        raise RatingError("you are not signed in", "use 'Sign in with Hugging Face' at the top of the page")
    rater = clean_rater(profile.username)
    check_allowed(app, rater, profile_orgs(profile))
    return rater
