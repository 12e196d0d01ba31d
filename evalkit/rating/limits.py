"""Abuse limits for the rating app: sliding-window rate limits, the sign-in attempt guard, and the allow-list.

Thread-safe, in memory by default; the app keeps failed sign-ins and Live runs in the database (`kept`:
evalkit.ui.auth.KeptCounts), so a restart forgives neither, and counts new names per client there too
(evalkit.ui.auth.Doorman). Each limit is keyed by what a dishonest rater
cannot multiply at will: an identity with a credential, a client address, a pair; never by a typed name or a
browser session alone."""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict, deque

from ..config import AppConfig
from ..errors import EvalkitError
from .identity import hub_in, hub_key


class LimitError(EvalkitError):
    """Refused by a limit; nothing was stored. `wait`: the seconds until it lets the next attempt through, where a
    wait is what refused it (the sign-in guard, a rate limit); `key`: the rate limit's key that was at its limit."""

    def __init__(self, what: str, fix: str = "", wait: float | None = None, key: str = ""):
        super().__init__(what, fix)
        self.wait, self.key = wait, key


class RateLimiter:
    """At most `limit` events per key in any `window` seconds."""

    def __init__(self, limit: int, window: float = 60, clock=time.monotonic, what: str = "submissions",
                 setting: str = "", kept=None):
        self.limit, self.window, self.clock, self.what = limit, window, clock, what
        self.setting = setting  # the config key that sets the limit, named in the refusal for whoever runs the app
        # kept.event(keys, now, window, limit, count) -> (key, events, first) | None: the events in the database
        # instead (checked and counted under its write lock; a restart forgets none: give a wall clock with it)
        self.kept = kept
        self._hits: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()

    def check(self, *keys: str) -> None:
        """Count one event for every key, or refuse (counting none) when any key is at its limit."""
        if self.limit <= 0:
            return
        now = self.clock()
        with self._lock:
            refused = self._refusal(keys, now, count=True)
            if refused is not None:
                raise refused

    def refusal(self, *keys: str) -> LimitError | None:
        """What check would refuse with now, counting nothing (None: it would let the event through)."""
        if self.limit <= 0:
            return None
        with self._lock:
            return self._refusal(keys, self.clock(), count=False)

    def _refusal(self, keys, now: float, count: bool) -> LimitError | None:
        """The refusal for the first key at its limit, counting nothing; else None, having counted one event for every
        key when `count`."""
        full = self.kept.event(list(keys), now, self.window, self.limit, count) if self.kept else self._full(keys, now)
        if full is not None:
            key, events, first = full
            setting = f" (the limit is {self.setting} in the app's config, 0 for none)" if self.setting else ""
            return window_full(self.what, key, events, self.limit, self.window, self.window - (now - first), setting)
        if count and not self.kept:
            for key in keys:
                self._hits[key].append(now)
        return None

    def _full(self, keys, now: float) -> tuple[str, int, float] | None:
        for key in keys:
            hits = self._hits[key]
            while hits and now - hits[0] >= self.window:
                hits.popleft()
            if len(hits) >= self.limit:
                return key, len(hits), hits[0]
        return None


def window_full(what: str, key: str, count: int, limit: int, window: float, wait: float, more: str = "") -> LimitError:
    """The refusal of a sliding-window limit at its limit (`more`: said after the fix)."""
    span = {60: "minute", 3600: "hour", 86400: "day"}.get(window, f"{window:g} s")
    about = f" (about {math.ceil(wait / 60)} min)" if wait >= 120 else ""
    return LimitError(f"too many {what} from {key.split(':', 1)[-1]!r}: {count} in the last {span} (limit {limit})",
                      f"wait {wait:.0f} s{about} and try again; nothing was stored{more}", wait=wait, key=key)


class SignInGuard:
    """Failed sign-ins per client address and per claimed owner (a code's rater id, or a new name): the first
    `free_attempts` failures cost nothing, then each further attempt waits twice as long as the last (base_seconds,
    doubling, up to max_seconds). Both keys must be clear, so neither many names from one client nor many clients
    on one owner get more guesses. A success does not clear a count: it only proves one guess was right.

    The owner's count holds back only clients that have never signed in as that owner: failures from strangers
    neither count towards it for a client that has, nor slow that client down, so nobody can lock a rater out by
    sending wrong codes with their (sequential) id. Memory is bounded: KNOWN_PER_OWNER clients per owner.

    A personal code is checked before the guard (evalkit.ui.auth.Doorman): only a wrong one is counted and held back,
    so nobody behind the same address locks its owner out; a passcode passes `check` first."""

    KNOWN_PER_OWNER = 32
    OWNERS_KNOWN = 10_000  # owners with clients that signed in as them: memory stays bounded, the oldest go first

    def __init__(self, free_attempts: int = 5, base_seconds: float = 2.0, max_seconds: float = 900.0,
                 clock=time.time):  # a wall clock: the counts kept in the database outlive the process
        self.free, self.base, self.max, self.clock = free_attempts, base_seconds, max_seconds, clock
        self.kept = MemoryCounts()  # the failures, by key: count(key) -> (count, last), failed(key, now, forgive_after)
        self._known: dict[str, deque] = {}
        self._lock = threading.Lock()

    def _delay(self, count: int) -> float:
        if count < self.free:
            return 0.0
        return min(self.max, self.base * 2 ** (count - self.free))

    def _keys(self, client: str, owner: str | None) -> list[str]:
        stranger = owner is not None and client not in self._known.get(owner, ())
        return [client, owner] if stranger else [client]

    def check(self, client: str, owner: str | None = None) -> None:
        now = self.clock()
        with self._lock:
            wait = 0.0
            for key in self._keys(client, owner):
                count, last = self.kept.count(key)
                if count and now - last > 2 * self.max:  # long quiet: forgiven
                    continue
                wait = max(wait, last + self._delay(count) - now)
            if wait > 0:
                raise LimitError("too many sign-in attempts", f"wait {wait:.0f} s before trying again", wait=wait)

    def failed(self, client: str, owner: str | None = None) -> None:
        now = self.clock()
        with self._lock:
            for key in self._keys(client, owner):
                self.kept.failed(key, now, 2 * self.max)

    def succeeded(self, client: str, owner: str) -> None:
        """This client signed in as this owner: from now on strangers' failures on the owner do not hold it back."""
        with self._lock:
            known = self._known.pop(owner, None) or deque(maxlen=self.KNOWN_PER_OWNER)
            self._known[owner] = known  # newest last
            if client not in known:
                known.append(client)
            while len(self._known) > self.OWNERS_KNOWN:
                del self._known[next(iter(self._known))]


class MemoryCounts:
    """Failures by key in memory (a restart forgives them; the app keeps them in the database instead). Memory stays
    bounded: a key quiet past its forgiving is dropped at the next failure's sweep, done once the dict doubles."""

    def __init__(self):
        self._fails: dict[str, tuple[int, float]] = {}
        self._sweep_at = 1024

    def count(self, key: str) -> tuple[int, float]:
        return self._fails.get(key, (0, 0.0))

    def failed(self, key: str, now: float, forgive_after: float) -> None:
        count, last = self._fails.get(key, (0, 0.0))
        self._fails[key] = (1 if now - last > forgive_after else count + 1, now)
        if len(self._fails) > self._sweep_at:
            self._fails = {k: v for k, v in self._fails.items() if now - v[1] <= forgive_after}
            self._sweep_at = max(1024, 2 * len(self._fails))


def has_allow_list(app: AppConfig) -> bool:
    """Does the config say who may rate (by name or Hub organisation)? Without one, anyone who signs in may."""
    return bool(app.allowed_raters or app.allowed_orgs)


def check_allowed(app: AppConfig, rater: str, orgs: list[str] | None = None, organiser: bool = False) -> None:
    """Refuse raters outside the allow-list (when one is configured): by name, or by Hub organisation. An organiser
    (app.organisers on a Space, `evalkit raters add --organiser` locally) is the study's own and always passes: the
    allow-list says who may rate, and listing raters must not lock out the one who reads the results. Names and
    organisations are compared as the Hub compares them, without case (identity.hub_key): a config may spell them
    otherwise than the profile does."""
    if organiser or not has_allow_list(app):
        return
    if hub_in(rater, app.allowed_raters):
        return
    if orgs and {hub_key(o) for o in orgs if isinstance(o, str)} & {hub_key(o) for o in app.allowed_orgs}:
        return
    raise LimitError(
        f"rater '{rater}' is not on this study's allow-list",
        "ask the study owner to add your username (app.allowed_raters) or organisation (app.allowed_orgs)",
    )
