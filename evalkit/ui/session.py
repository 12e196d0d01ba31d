"""What the server remembers about one browser tab. Kept in `gr.State`, which never leaves the server:
the pair id (and through it, which side is which path) is never sent to the browser."""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Session:
    rater: str | None = None  # set only by sign-in (a personal code, or the Hugging Face OAuth profile)
    organiser: bool = False  # from the credential: the registry's role, or app.organisers on a Space
    rater_id: int | None = None  # the registry row of a code's identity (None on a Space)
    credential: str = ""  # the hash of the code signed in with: every event checks it is still the rater's
    pair_id: str | None = None  # the pair on screen
    rating_id: int | None = None  # the newest stored version of this rater's rating of that pair
    correcting: bool = False  # the form is unlocked to correct a stored rating
    token: str = ""  # one per rendered form: a replayed submit is refused by the store
    lang: str = "zh"  # the rater's language for every label and message ("zh" or "en")
    labels: str = ""  # what the form's labels on screen were made for (form.labels_key): resent only on change
    expires_at: float | None = None  # a Hugging Face sign-in's end (its OAuth token's expiry): no event after it
    hub_token: str = field(default="", repr=False)  # that sign-in's OAuth token: the Hub is asked again (hubcheck)
    finished: bool = False  # the screen without a pair is shown (no pair left for now): the language switch redraws it
    said: tuple = ()  # the status line's words as (key, args) (ui.rate.said): the language switch says them again
    code: str = field(default="", repr=False)  # the personal code signed in with ("My code" shows it; "" on a Space)
    # Sign out was pressed in this session: a page-load sign-in (the kept code, an invitation link) that answers
    # after it signs nothing in (it was sent with the code the browser held before); only a typed sign-in does
    signed_out: bool = False
    signin: str = field(default="", repr=False)  # this sign-in's random id: Sign out lists it as ended (_Ended)
    # the page (Gradio session) this sign-in came from and when its request arrived (guard.arrived_at): a Sign out of
    # that page that arrived later ends it, though a flood pushed its id out of the ended list (_Ended.over)
    signed_on: tuple[str, float] | None = field(default=None, repr=False)
    submission: str = ""  # the id the page made for the submission on its way (rate._SENDING; _Submissions)
    # a name made by open sign-up: the client (auth.client_key) it signed in from, whose sign-up names' pairs on
    # screen are bounded together (app.pairs_held_per_client; RateHandlers.client_full); "" for the invited and on a Space
    client: str = ""
    hub: bool = False  # a Hugging Face sign-in: an organiser's revoke of its username ends it (roster.hub_access)
    # the page's count of language switches (rate._SWITCH_SENT) as of the newest switch this session applied: a switch
    # or a follow-up the page sent before it, should it reach the server after it, changes nothing (rate.switch_count)
    switches: int = 0

    def page_only(self, **fields) -> "Session":
        """A fresh session of this page (a sign-in, a sign-out): nothing of the last one's rater, only what the page
        shows and counts, its language, labels and switches, and `fields`."""
        return Session(lang=self.lang, labels=self.labels, switches=self.switches, **fields)

    def with_pair(self, pair_id: str | None) -> "Session":
        return replace(self, pair_id=pair_id, rating_id=None, correcting=False, token=secrets.token_hex(12),
                       finished=False)

    def stored(self, rating_id: int) -> "Session":
        # the submission's id went with what it stored: a later /submit that sends none (a correction through the
        # API) is not stored under it again
        return replace(self, rating_id=rating_id, correcting=False, submission="")

    def relabelled(self, key: str, lang: str | None = None) -> "Session":
        return replace(self, labels=key, lang=lang or self.lang)

    def correcting_now(self) -> "Session":
        return replace(self, correcting=True, token=secrets.token_hex(12))

    @property
    def signed_in(self) -> tuple[int | None, str, str | None]:
        """(rater id, code hash, Hub username) this session signed in with: the library checks them again under the
        lock of each write of hers (rating.queue.code_check), so a revoke since the session's own check stores
        nothing."""
        return self.rater_id, self.credential, self.rater if self.hub else None

    @property
    def locked(self) -> bool:
        """A submitted rating is locked until the rater asks to correct it."""
        return self.rating_id is not None and not self.correcting


PAGES_KEPT = 10_000  # records kept by page (a Gradio session id, which the client picks), as Gradio keeps its states


def kept_newest(table: dict, key, value, cap: int | None = None) -> None:
    """table[key] = value, as its newest entry, and the oldest dropped past `cap`: memory stays bounded however many
    pages (or sign-ins) a flood names. A record matters seconds to minutes (while an event begun before it may still
    land), so pushing a real one out takes `cap` new ones within that time, not a trickle (attacker audit round 7),
    and one client opens at most evalkit.ui.guard.PAGES_PER_CLIENT new pages an hour (round 8)."""
    cap = PAGES_KEPT if cap is None else cap
    table.pop(key, None)
    table[key] = value
    while len(table) > cap:
        del table[next(iter(table))]


class _Ended:
    """The sign-ins Sign out ended in this process (Session.signin ids). An event already running when its page signed
    out returns the session it began with, and Gradio writes that back over the signed-out one: a language switch in
    flight signed the rater in again (attacker audit 2026-12-05). A listed sign-in has no rights (require_rater).
    A sign-in's id is issued when its event begins and listed under its page (the Gradio session): Sign out ends every
    sign-in its page has begun, so a typed code still on its way then signs nothing in when it lands (audit round 3).
    A sign-in sent before Sign out but begun after it (queued behind a busy app) is ended as it begins: each page keeps
    when its latest Sign out arrived, and a sign-in that arrived before that is over (attacker audit round 5)."""

    KEEP_SECONDS = 24 * 3600.0  # far past any event in flight at the sign-out
    # a sign-in begun on a page matters only while its event may be in flight: memory stays bounded however many
    # pages load or one page signs in (the oldest of a page's go first; only its own page could be racing them)
    BEGUN_SECONDS, BEGUN_PER_PAGE = 3600.0, 32
    ENDED_KEPT = 100_000  # ended sign-ins: each costs a flood a sign-in and a Sign out

    def __init__(self):
        self._lock = threading.Lock()
        self._ended: dict[str, float] = {}
        self._begun: dict[str, dict[str, float]] = {}  # page -> the sign-ins begun on it, not yet ended
        self._out: dict[str, float] = {}  # page -> when its latest Sign out arrived (guard.arrived_at)

    def begin(self, page: str | None, arrived: float | None = None) -> str:
        """A new sign-in's id; `arrived`: when its request reached the server (it may have waited in the queue)."""
        signin = secrets.token_hex(12)
        if page:
            now = time.monotonic()
            with self._lock:
                if arrived is not None and arrived <= self._out.get(page, float("-inf")):
                    kept_newest(self._ended, signin, now, self.ENDED_KEPT)  # sent before the page's Sign out: over
                    return signin
                ids = self._begun.get(page, {})
                kept_newest(ids, signin, now, self.BEGUN_PER_PAGE)
                kept_newest(self._begun, page, ids)
                self._forget_old(self._begun, now, lambda ids: max(ids.values()), self.BEGUN_SECONDS)
        return signin

    def end(self, signin: str, page: str | None = None, arrived: float | None = None) -> None:
        """Sign out: `signin` and every sign-in begun on `page` are over, and so is every one that arrived before
        `arrived` (when the Sign out reached the server) and begins later."""
        now = time.monotonic()
        with self._lock:
            for one in [signin, *self._begun.pop(page or "", {})]:
                if one:
                    kept_newest(self._ended, one, now, self.ENDED_KEPT)
            if page:
                kept_newest(self._out, page, max(self._out.get(page, float("-inf")), now if arrived is None else arrived))
                self._forget_old(self._out, now, lambda t: t, self.KEEP_SECONDS)
            self._forget_old(self._ended, now, lambda t: t, self.KEEP_SECONDS)

    @staticmethod
    def _forget_old(table: dict, now: float, when, keep: float) -> None:
        if len(table) > 1000:
            for k in [k for k, v in table.items() if now - when(v) > keep]:
                del table[k]

    def over(self, signin: str, signed_on: tuple[str, float] | None = None) -> bool:
        """Whether `signin` is ended: listed, or (signed_on: its page and when its request arrived) sent before its
        page's latest Sign out. The list is kept by sign-in, and one client signing in and out again and again pushed
        other pages' ids out of it (attacker audit, round 9); the page's record goes only after PAGES_KEPT new pages'
        Sign outs, and one client opens at most guard.PAGES_PER_CLIENT an hour."""
        with self._lock:
            if signin in self._ended:
                return True
            return signed_on is not None and signed_on[1] <= self._out.get(signed_on[0], float("-inf"))

    def __contains__(self, signin: str) -> bool:
        return self.over(signin)


_ended = _Ended()


class _Writing:
    """Each rater's ratings, corrections and skips being written now, in this process. A reload while one was written
    resumed the pair it was for (still held until it is stored) or, its hold run out, said it did not reach the
    server; a moment later it was stored (rater audit 2026-12-05, known limit). A page-load sign-in waits for them, so
    the pair it serves and what the page then says of the answers kept follow what was stored. (A submission still
    in Gradio's queue is waited for by its id: _Submissions.)"""

    WAIT_SECONDS = 30.0  # far past one write; a sign-in is never held longer than this

    def __init__(self):
        self._done = threading.Condition()
        self._writing: dict[str, int] = {}

    @contextlib.contextmanager
    def of(self, rater: str | None):
        if not rater:
            yield
            return
        with self._done:
            self._writing[rater] = self._writing.get(rater, 0) + 1
        try:
            yield
        finally:
            with self._done:
                self._writing[rater] -= 1
                if not self._writing[rater]:
                    del self._writing[rater]
                self._done.notify_all()

    def settled(self, rater: str, until: float | None = None) -> bool:
        """Wait until none of `rater`'s writes is under way (at most WAIT_SECONDS, or until `until`, a time.monotonic()
        value: a page load's, _Submissions.load_end); whether none is."""
        wait = self.WAIT_SECONDS if until is None else max(0.0, until - time.monotonic())
        with self._done:
            return self._done.wait_for(lambda: rater not in self._writing, timeout=wait)


writing = _Writing()


class _Submissions:
    """What became of each submission a page named: a random id its browser made when Submit was pressed, kept with
    the answers (nothing about the pair), received (RateHandlers.sending, with the rater and the page), then stored or
    refused and why (RateHandlers.submit). A stored one's id is stored with its rating too (rating.queue.
    stored_submission: a restart forgets nothing of it, and the reload asks the database first); this record, in
    memory, keeps what the database does not: received, queued, refused and why (a refusal past the rate limit is kept
    in the database too, rating.queue.refused_submission, and a reload after a restart reads it there). A reload asks, and while that submission still waits in Gradio's queue or
    runs (`queued(page)`: the page's submit is in the queue) it waits a bounded time, before it signs in (so the pair
    it serves follows the fate) and before it says what became of the answers: a reload while the submission was
    queued said "not stored", and it could be stored a moment later (known limit, closed). One never received went
    with its page's events (Gradio drops them when the page goes), and is not stored."""

    WAIT_SECONDS = _Writing.WAIT_SECONDS
    GRACE_SECONDS = 2.0  # received, its submit not queued yet: the old page's join may still be on its way
    KEEP = 10_000  # the newest ids kept (a few per rater and hour): memory stays bounded
    # the newest ids kept per rater: a reload asks about her last Submit only, and one rater's page (or a script
    # calling the page's private step) never pushes the other raters' ids out of KEEP (attacker audit, round 6)
    PER_RATER = 20
    LOADS_KEPT_SECONDS = 600.0  # a page load's end of waits, kept far past its last step, even behind a busy queue

    def __init__(self):
        self._done = threading.Condition()
        self._seen: dict[str, dict] = {}  # id -> {"rater", "page", "at", "fate"}
        self._mine: dict[str, list[str]] = {}  # rater -> her ids in _seen, oldest first (at most PER_RATER)
        self._loads: dict[str, float] = {}  # page -> when its load's waits end (load_end)

    def load_end(self, page: str | None) -> float:
        """When the waits of the page load `page` (its Gradio session) end, as a time.monotonic() value: WAIT_SECONDS
        after its first step asked. Its steps (the wait for its kept submission, the sign-in's for her writes, what
        became of the answers) share it, so a reload is held at most WAIT_SECONDS in all: each waited its own, and a
        submission still queued held the page about a minute. Without a page, WAIT_SECONDS from now."""
        now = time.monotonic()
        if not page:
            return now + self.WAIT_SECONDS
        with self._done:
            if len(self._loads) > 1000:  # memory stays bounded: a load's steps follow one another within seconds
                for k in [k for k, end in self._loads.items() if now - end > self.LOADS_KEPT_SECONDS]:
                    del self._loads[k]
            if page not in self._loads:  # and by count: a flood of forged pages within LOADS_KEPT_SECONDS
                kept_newest(self._loads, page, now + self.WAIT_SECONDS)
            return self._loads[page]

    def received(self, rater: str, sub: str, page: str | None) -> None:
        with self._done:
            if sub in self._seen:  # an id is one submission's: never taken over
                return
            self._seen[sub] = {"rater": rater, "page": page or "", "at": time.monotonic(), "fate": None}
            mine = self._mine.setdefault(rater, [])
            mine.append(sub)
            if len(mine) > self.PER_RATER:
                self._forget(mine[0])
            while len(self._seen) > self.KEEP:
                self._forget(next(iter(self._seen)))

    def _forget(self, sub: str) -> None:
        """(Under the lock.) Drop one id from the record and from its rater's list."""
        rater = self._seen.pop(sub)["rater"]
        mine = self._mine[rater]
        mine.remove(sub)
        if not mine:
            del self._mine[rater]

    def record(self, rater: str | None, sub: str, fate: tuple) -> None:
        """fate: ("stored",) or ("refused", what, fix), the refusal as the library wrote it."""
        with self._done:
            seen = self._seen.get(sub)
            if seen is not None and seen["rater"] == rater:
                seen["fate"] = fate
            self._done.notify_all()

    def refused(self, rater: str, sub: str) -> bool:
        """Whether `rater`'s submission `sub` was refused: its id names that outcome only."""
        with self._done:
            seen = self._seen.get(sub)
            return seen is not None and seen["rater"] == rater and (seen["fate"] or ("",))[0] == "refused"

    def settled(self, sub: str, queued, rater: str | None = None, until: float | None = None) -> tuple | None:
        """Wait (at most WAIT_SECONDS, or until `until`: load_end) while the submission `sub` (of `rater`, when given)
        was received and is still in Gradio's queue or running; then its fate: ("stored",), ("refused", what, fix),
        ("queued",) when the wait ran out, or None when it was not received, or will not run now."""
        end = time.monotonic() + self.WAIT_SECONDS if until is None else until
        with self._done:
            while True:
                seen = self._seen.get(sub) if isinstance(sub, str) else None
                if seen is None or (rater is not None and seen["rater"] != rater):
                    return None
                if seen["fate"] is not None:
                    return seen["fate"]
                if not (queued(seen["page"]) or time.monotonic() - seen["at"] < self.GRACE_SECONDS):
                    return None
                if time.monotonic() >= end:
                    return ("queued",)
                self._done.wait(0.2)  # Gradio tells nobody when it drops a page's events: the queue is asked again


submissions = _Submissions()


def new_sign_in(page: str | None = None, arrived: float | None = None) -> str:
    """A sign-in's random id, listed under its page (request.session_hash) as it begins: call it before any work.
    arrived: when its request reached the server (guard.arrived_at); a Sign out of the page since has ended it."""
    return _ended.begin(page, arrived)


def sign_in_ended(s: "Session | str | None") -> bool:
    """Whether Sign out ended this session's sign-in (or this sign-in id): an event that began before it may be
    finishing."""
    signin = s if isinstance(s, str) else s.signin if s is not None else ""
    return bool(signin) and _ended.over(signin, None if isinstance(s, str) else s.signed_on)


def end_sign_in(s: "Session | None", page: str | None = None, arrived: float | None = None) -> None:
    """Sign out: this session's sign-in is over, whatever session an event still running writes back, and so is every
    sign-in begun on the page (`page`) that has not answered yet, or sent before the Sign out arrived (`arrived`)."""
    _ended.end(s.signin if s is not None else "", page, arrived)


def require_rater(db, s: "Session | None", app) -> str:
    """The signed-in rater of this session, with their code still theirs (evalkit.rating.roster.check_current: a revoke or
    re-issue ends the session at its next event), or on a Space their Hub sign-in still valid and not revoked, still the one this
    browser holds and, where an organisation lets them in, still theirs (`app` is the AppConfig; evalkit.ui.hubcheck);
    RatingError when not."""
    from ..rating.roster import check_current
    from ..rating.queue import RatingError

    if s is None or not s.rater:
        # an empty session under a page that shows a pair: the app restarted, or Gradio let the session go (rater
        # audit F8: "sign in at the top" named a form the page did not show, while a reload resumes and keeps answers)
        from ..locations import on_space

        if on_space():  # no code there: a reload signs in again from the Hub sign-in the browser kept (its cookie
            # outlives a restart), as the page's load does
            raise RatingError("you are not signed in (the Space may have restarted, or this page was left a long time)",
                              "reload the page: it signs you in again with your Hugging Face account and puts back "
                              "the answers you gave; if it does not, use 'Sign in with Hugging Face' at the top of "
                              "the page")
        raise RatingError("you are not signed in (the app may have restarted, or this page was left a long time)",
                          "reload the page: this browser signs you in again with your code and puts back the answers "
                          "you gave; or sign in at the top of the Rate tab")
    if sign_in_ended(s):  # written back by an event that ran across the sign-out
        raise RatingError("you signed out on this page, so this session has ended; nothing was stored",
                          "sign in again at the top of the Rate tab")
    if s.expires_at is not None and time.time() > s.expires_at:
        # bounded by its token's life, an open tab cannot outlive the Hub sign-in (a sign-out in another tab ends it
        # at once, and a removal from an allowed organisation within hubcheck.RECHECK_SECONDS: below)
        raise RatingError("your Hugging Face sign-in has expired, so this session has ended; nothing was stored",
                          "reload the page and sign in with Hugging Face again")
    if s.hub_token:
        from .hubcheck import recheck, same_sign_in

        same_sign_in(s.hub_token)  # signed out, or in as someone else, in another tab of this browser
        recheck(app, s.rater, s.hub_token)
    check_current(db, *s.signed_in)
    return s.rater
