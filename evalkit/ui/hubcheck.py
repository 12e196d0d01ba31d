"""A Hub sign-in read again while its tab stays open.

On a Space a rater is let in by `app.allowed_orgs` from the organisations her OAuth profile listed when the page
loaded. An organiser who removes her from the organisation expects her to stop rating, but the tab kept rating until
the OAuth token expired (Gradio's 8 hours). So where membership is what lets her in (an organisation on the list, her
name not), the first event after `RECHECK_SECONDS` asks the Hub again, with her own token, at the endpoint the profile
came from (OpenID userinfo): a token the Hub rejects ends the session, and so does an answer without an allowed
organisation; either way the event stores nothing. Between checks the last answer stands. When the Hub cannot be
reached the last answer stands too (logged; asked again after `RETRY_SECONDS`): a Hub outage must not stop a study,
and the token's expiry still bounds the session.

The sign-in also lives in the browser: Gradio keeps it in one session cookie that every tab of the browser sends. A
rater who signs out (Gradio's /logout), or signs in as another account, in one tab expects her other open tabs to stop
rating as her, but each kept its sign-in in its server-side state until the token expired. So every event of a Hub
session also compares the token in the cookie it came with to the one the session began with (`same_sign_in`): none,
or another, ends the session with nothing stored.

The Hub client is `userinfo` (substituted in tests); the clock is `now`."""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time

from ..config import AppConfig
from ..rating.identity import hub_in, hub_key
from ..rating.queue import RatingError

log = logging.getLogger("evalkit.ui")

RECHECK_SECONDS = 600.0  # a removed rater rates for at most this long after the organiser's change
RETRY_SECONDS = 60.0  # after the Hub could not be reached
_FORGET_AFTER = 12 * 3600.0  # past any OAuth token's life
now = time.monotonic


class TokenRejected(Exception):
    """The Hub answered 401: the token was revoked or has expired."""


def userinfo(token: str) -> dict:
    """The Hub's OpenID userinfo for this OAuth token (what Gradio's sign-in read the profile from)."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    r = get_session().get(f"{constants.ENDPOINT}/oauth/userinfo", headers={"Authorization": f"Bearer {token}"},
                          timeout=10)
    if r.status_code == 401:
        raise TokenRejected("the Hub rejected the token")
    r.raise_for_status()
    return r.json()


def oauth_token(request) -> str:
    """The OAuth access token behind this request's Hub sign-in ("" when there is none), kept server-side only."""
    try:
        value = (request.session.get("oauth_info") or {}).get("access_token") if request is not None else None
    except Exception:  # noqa: BLE001 - no session middleware (a local app)
        return ""
    return value if isinstance(value, str) else ""


def event_request():
    """The request of the Gradio event being served: Gradio sets it for every event, whatever the handler's
    parameters, so each check of a session sees the cookie its event came with (None outside an event)."""
    from gradio.context import LocalContext

    return LocalContext.request.get(None)


def same_sign_in(token: str) -> None:
    """Refuse (RatingError) unless the event comes from a browser still signed in with `token`, the one its session
    began with. Outside an event there is no cookie to compare, and that is refused too."""
    now_token = oauth_token(event_request())
    if not now_token or not hmac.compare_digest(now_token.encode(), token.encode()):
        raise RatingError("you signed out of Hugging Face in this browser, or signed in as another account, so this "
                          "session has ended; nothing was stored",
                          "reload the page and sign in with Hugging Face again")


def orgs_of(info: dict) -> list[str]:
    """The organisations in a userinfo answer (as evalkit.ui.auth.profile_orgs reads the profile)."""
    return [o.get("preferred_username") or o.get("name") for o in info.get("orgs") or [] if isinstance(o, dict)]


def needs_recheck(app: AppConfig, rater: str) -> bool:
    """Can this rater's right to rate change at the Hub: she is in by an organisation, not by her name."""
    return bool(app.allowed_orgs) and not hub_in(rater, app.allowed_raters)  # as limits.check_allowed compares


class _Memory:
    """(token digest, allow-list) -> (when last asked, answer): one answer per signed-in tab's token. An answer is
    "ok", "no org" (none of hers is allowed) or "token" (the Hub rejected it)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._seen: dict[tuple, tuple[float, str]] = {}

    def get(self, key):
        with self._lock:
            return self._seen.get(key)

    def put(self, key, asked: float, answer: str) -> None:
        with self._lock:
            self._seen[key] = (asked, answer)
            if len(self._seen) > 1000:  # drop tokens long expired
                for k in [k for k, (t, _) in self._seen.items() if asked - t > _FORGET_AFTER]:
                    del self._seen[k]


_memory = _Memory()


def _key(app: AppConfig, token: str) -> tuple:
    return (hashlib.sha256(token.encode()).hexdigest(), tuple(sorted(app.allowed_orgs)), tuple(sorted(app.allowed_raters)))


def signed_in(app: AppConfig, rater: str, token: str) -> None:
    """The sign-in just read the profile and let her in: that is the first answer for a new token. Not for a token
    already answered: the profile lives in the sign-in's cookie as it was at the Hub's sign-in, so a reload shows the
    same organisations after her removal; the answer the Hub gave since stands (RatingError)."""
    if token and _memory.get(_key(app, token)) is None:
        _memory.put(_key(app, token), now(), "ok")
    recheck(app, rater, token)


def recheck(app: AppConfig, rater: str, token: str) -> None:
    """Refuse (RatingError) when the Hub now says this session may not rate; ask it at most every RECHECK_SECONDS."""
    if not token or not needs_recheck(app, rater):
        return
    key = _key(app, token)
    last = _memory.get(key)
    t = now()
    if last is None or t - last[0] >= RECHECK_SECONDS:
        try:
            orgs = {hub_key(o) for o in orgs_of(userinfo(token)) if isinstance(o, str)}
            answer = "ok" if orgs & {hub_key(o) for o in app.allowed_orgs} else "no org"
        except TokenRejected:
            answer = "token"
        except Exception as e:  # noqa: BLE001 - the Hub unreachable: the last answer stands, asked again soon
            log.warning("could not ask the Hub whether %s may still rate (%s: %s); the last answer stands",
                        rater, type(e).__name__, e)
            answer = "ok" if last is None else last[1]
            t -= RECHECK_SECONDS - RETRY_SECONDS
        _memory.put(key, t, answer)
    else:
        answer = last[1]
    if answer == "token":
        raise RatingError("your Hugging Face sign-in is no longer valid, so this session has ended; nothing was stored",
                          "reload the page and sign in with Hugging Face again")
    if answer != "ok":
        raise RatingError("you are no longer in an organisation allowed to rate in this study, so this session has "
                          "ended; nothing was stored",
                          "ask the study owner to add your organisation (app.allowed_orgs) or your username "
                          "(app.allowed_raters), then reload the page")
