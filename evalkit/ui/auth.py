"""Who is rating, and with what rights. On a Hugging Face Space: the OAuth profile (`gr.LoginButton`); organisers
are the usernames in app.organisers. Locally: a personal code (from `evalkit raters add`, an invitation link, or
handed out by open sign-up), checked against its hash; organiser rights only from the registry. The result lives
only in the server-side session; nothing the browser sends later can change it.

Every typed attempt passes the sign-in guard, keyed by the client address (address_key: an IPv6 client's /64) and by
the name or code owner claimed (the rater id in the code's canonical form), so neither many names from one client nor
many clients on one name get more guesses; a client that has signed in as an owner is not held back by strangers' failures on that owner. A
personal code is checked before the guard: a correct one always signs in (others' failures behind the same address
never lock its owner out), a wrong one is counted or, while the guard asks for a wait, answered with the wait (and not
written: a flood held back adds no row and takes no write lock). A
passcode passes the guard first (a shared passcode may be weak: its guesses stay slowed). What is not a code at all
(wrong characters, too long) is a counted failure, logged in one line.

The browser keeps the code sealed under the server's key (evalkit.rating.seal): a reload opens it and signs in without
the guard (it is no guess: nothing but this server can make one), and a value that does not open is ignored."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..rating import roster as raters
from ..config import AppConfig
from ..rating.identity import NAME_LIMIT, hub_in, hub_key, name_key
from ..rating.limits import SignInGuard, check_allowed, window_full
from ..rating.roster import Identity, SignInError
from ..rating.queue import RatingError, clean_rater
from ..rating.seal import sealer_for
from ..store import add_failure, count_event, failure_count, signups_since
from .db import connect

if TYPE_CHECKING:  # gradio is imported where it is used (it is slow to import)
    import gradio as gr

log = logging.getLogger("evalkit.ui")
PASSCODE_LIMIT = 256


def address_key(host: str) -> str:
    """What one client holds of its address, as the per-client limits count it: an IPv6 address's /64 prefix (a host
    or home network is given a whole /64 and may send from any of its 2^64 addresses), an IPv4-mapped IPv6 address
    (::ffff:a.b.c.d, as a dual-stack server sees an IPv4 client) as that IPv4 address, an IPv4 address whole. Text
    that is no address is kept as it is."""
    try:
        ip = ipaddress.ip_address(host.strip().strip("[]").split("%")[0])  # "%eth0": a link-local address's zone
    except ValueError:
        return host
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def client_key(request: gr.Request | None, space: bool, proxy_hops: int = 1) -> str:
    """The client's address (address_key: an IPv6 client's /64). Behind a Space's proxy it is read from
    X-Forwarded-For (forwarded_client); locally that header is whatever the client typed, so only the socket's address
    counts (and evalkit.ui.launch stops uvicorn from rewriting that address from the header, which it does by default
    for connections from 127.0.0.1)."""
    if request is None:
        return "client:?"
    if space and (forwarded := forwarded_client(_forwarded_for(request.headers), proxy_hops)):
        return f"client:{address_key(forwarded)}"
    host = getattr(getattr(request, "client", None), "host", None)
    return f"client:{address_key(host) if host else '?'}"


def forwarded_client(header: str, proxy_hops: int) -> str | None:
    """The address the Space's proxies received the request from, in their X-Forwarded-For: a proxy that appends adds
    it to the right of whatever the client sent, so the entries a client chose are on the left, and the first one was
    a new client whenever she liked. Counted from the right: internal addresses (private, loopback, link-local, shared:
    the proxies' own hops inside the Space's network, never a client of the internet) are passed over, and the
    `proxy_hops`-th other entry (app.trusted_proxy_hops: the proxies that append) is the client. A proxy that
    replaces the header leaves one entry, read alike. None: no entry but internal ones (the socket's address
    decides). A client whose own address is internal to the proxies' network is passed over as a hop would be: the
    entry left of it is hers (README: the price of not keying every client by the proxies' own hop)."""
    entries = (_without_port(e.strip()) for e in reversed(header.split(",")))
    public = [e for e in entries if e and not _internal(e)]
    if not public:
        return None
    return public[min(proxy_hops, len(public)) - 1]  # fewer than the proxies' entries: all of them are theirs


def _forwarded_for(headers) -> str:
    """Every X-Forwarded-For line, in order, as one list: a proxy may add its own line after the one the client sent
    rather than append to it, and only the first line (the client's) was read."""
    lines = headers.getlist("x-forwarded-for") if hasattr(headers, "getlist") else [headers.get("x-forwarded-for")]
    return ",".join(line for line in lines if line)


def _without_port(entry: str) -> str:
    """An entry's address without the port some proxies write with it ("81.2.69.160:5123", "[2a01:4f8::1]:443"): the
    client's port changes with each connection, and each would be a new client."""
    if entry.startswith("[") and "]" in entry:
        return entry[1:entry.index("]")]
    return entry.split(":")[0] if entry.count(":") == 1 else entry


def _internal(entry: str) -> bool:
    try:
        return not ipaddress.ip_address(entry.split("%")[0]).is_global
    except ValueError:  # no address (a proxy's "unknown"): counted as an entry
        return False


def _iso(at: float) -> str:
    """A time as the database writes one (store.database.now), for comparing with its text."""
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds")


def profile_orgs(profile: gr.OAuthProfile) -> list[str]:
    """The Hub organisations in the OAuth userinfo (present when the Space asks for them)."""
    orgs = profile.get("orgs") or []
    return [o.get("preferred_username") or o.get("name") for o in orgs if isinstance(o, dict)]


class KeptCounts:
    """A limit's counts in the database (store.limits), each key (a client, a claimed owner, a page) as the server's
    keyed hash of it, never an address: a restart (a Space restarts often) forgives no failed sign-in and no Live
    run. `kind` keeps one limit's counts apart from another's."""

    def __init__(self, db_path: Path, kind: str):
        self.db_path, self.kind, self.sealer = db_path, kind, sealer_for(db_path)

    def count(self, key: str) -> tuple[int, float]:
        with connect(self.db_path) as db:
            return failure_count(db, self.kind, self.sealer.tag(key))

    def failed(self, key: str, now: float, forgive_after: float) -> None:
        with connect(self.db_path) as db:
            add_failure(db, self.kind, self.sealer.tag(key), now, forgive_after)

    def event(self, keys: list[str], now: float, window: float, limit: int, count: bool):
        tags = {self.sealer.tag(k): k for k in keys}
        with connect(self.db_path) as db:
            full = count_event(db, self.kind, list(tags), now, window, limit, count)
        return None if full is None else (tags[full[0]], *full[1:])


class Doorman:
    """Sign-in for one app: the attempt guard and the sign-up limit are shared by every session."""

    def __init__(self, app: AppConfig, db_path: Path, space: bool):
        self.app, self.db_path, self.space = app, db_path, space
        self.guard = SignInGuard()
        self.guard.kept = KeptCounts(db_path, "sign-in failures")  # a restart gives no fresh guesses
        self.sealer = sealer_for(db_path)
        self._names: dict[str, dict[str, float]] = {}  # client -> its sign-up names, when each last signed in there
        self._names_lock = threading.Lock()

    NAMES_SECONDS = 24 * 3600.0  # a name signed in from a client counts as that client's for a day after
    NAMES_PER_CLIENT = 256  # memory stays bounded: the oldest go first (a client makes a few new names a day)

    def signed_in_from(self, client: str, identity: Identity) -> str:
        """Note that a name made by open sign-up signed in from `client`: its pairs on screen count towards that
        client's (names_of). Returns the client key the session keeps ("" for an invited rater, an organiser, a Space
        account, or an unknown client: the organiser's roster is never bound by an address)."""
        if identity.source != "signup" or identity.organiser or not client or client == "client:?":
            return ""
        now = time.monotonic()
        with self._names_lock:
            names = self._names.setdefault(client, {})
            names.pop(identity.name, None)
            names[identity.name] = now
            while len(names) > self.NAMES_PER_CLIENT:
                del names[next(iter(names))]
            if len(self._names) > 1000:
                for key in [k for k, v in self._names.items() if now - max(v.values()) > self.NAMES_SECONDS]:
                    del self._names[key]
        return client

    def names_of(self, db, client: str) -> list[str]:
        """The sign-up names that signed in from this client within NAMES_SECONDS, and those it made within it (kept
        in the database: a restart forgets the sign-ins, and those names' pairs stay on screen)."""
        now = time.monotonic()
        with self._names_lock:
            names = [n for n, at in self._names.get(client, {}).items() if now - at <= self.NAMES_SECONDS]
        made = signups_since(db, self.sealer.tag(client), _iso(time.time() - self.NAMES_SECONDS))
        return names + [r["name"] for r in made if r["name"] not in names]

    def local(self, name: str, code: str, passcode: str, client: str) -> tuple[Identity, str | None]:
        """(identity, the new personal code to hand out, if this made a new identity)."""
        code = raters.code_from(code)  # the invitation link pasted whole signs in as the link does
        if code:
            return self._by_code(code, client), None
        return self._sign_up(name if isinstance(name, str) else "", passcode if isinstance(passcode, str) else "",
                             client)

    def _by_code(self, code: str, client: str) -> Identity:
        owner = raters.code_owner_key(code)  # canonical: "02.x" and "2.x" are one owner; "٢.x" is no code
        if owner is None:
            self.guard.check(client)
            self.guard.failed(client)
            log.warning("sign-in refused: not a personal code (%d characters) from %s", len(code), client)
            raise SignInError("that code is not valid", "check the code or link your organiser sent you")
        # The code is checked first: a correct one always signs in, so failures by others behind the same address
        # (a NAT, a campus network) or on the same rater id never hold its owner back. A wrong one waits as before
        # (the guard's wait, when one is due, is its answer) and is counted. A code's 144 random bits are what stop
        # guessing; the wait is a second line.
        with connect(self.db_path) as db:
            try:
                identity = raters.authenticate(db, code)
            except SignInError:
                # a wrong code held back is answered with the wait and written nowhere: each failure is a write under
                # the database's lock, and a flood of wrong codes (each naming a new id, a new row) grew the table and
                # took the lock once a request for as long as it lasted (attacker audit, round 8)
                self.guard.check(client, owner)
                self.guard.failed(client, owner)
                raise
        self.guard.succeeded(client, owner)
        check_allowed(self.app, identity.name, organiser=identity.organiser)
        return identity

    def _sign_up(self, name: str, passcode: str, client: str) -> tuple[Identity, str]:
        if len(name) > 4 * NAME_LIMIT or len(passcode) > PASSCODE_LIMIT:  # before any work on it
            self.guard.check(client)
            self.guard.failed(client)
            raise SignInError(f"the name or passcode is too long (the name's limit is {NAME_LIMIT} characters)",
                              "use a shorter name")
        claim = f"name:{name_key(name) or '?'}"
        self.guard.check(client, claim)
        if self.app.signup != "open":
            raise SignInError("this study signs raters in with a personal code",
                              "enter the code (or open the link) the study organiser sent you")
        if self.app.passcodes and not any(
                hmac.compare_digest(passcode.encode(), p.encode()) for p in self.app.passcodes):
            self.guard.failed(client, claim)
            raise SignInError("that passcode is not right", "ask the study organiser for the current passcode")
        name = clean_rater(name)
        check_allowed(self.app, name)
        tag = self.sealer.tag(client)
        with connect(self.db_path) as db:
            try:
                cred = raters.sign_up(db, name, client=tag, admit=lambda db: self._new_name_admitted(db, client, tag))
            except Exception:
                self.guard.failed(client, claim)  # probing for taken names costs like a wrong guess
                raise
        return cred.identity, cred.code

    SIGNUP_WINDOWS = ((3600.0, "signups_per_client_per_hour"), (86400.0, "signups_per_client_per_day"))

    def _new_name_admitted(self, db, client: str, tag: str) -> None:
        """Refuse a new name when this client made its hour's or its day's names already: counted from the names it
        made (raters.signup_client, under the insert's write lock), so a restart forgets none of them."""
        at = time.time()
        for window, setting in self.SIGNUP_WINDOWS:
            limit = getattr(self.app, setting)
            if limit <= 0:
                continue
            made = signups_since(db, tag, _iso(at - window))
            if len(made) >= limit:
                wait = window - (at - datetime.fromisoformat(made[-limit]["created_at"]).timestamp())
                raise window_full("new names", client, len(made), limit, window, max(wait, 1.0),
                                  "; a name you made before signs in with its personal code")

    def seal(self, code: str) -> str:
        """What the browser keeps for this code."""
        return self.sealer.seal(code.strip()) if code else ""

    def resume(self, sealed, client: str) -> tuple[Identity, str] | None:
        """The identity behind the sealed code a browser kept (and the code), or None, quietly (the sign-in form
        then shows): a value this server did not seal, or a code since revoked or re-issued."""
        code = self.sealer.open(sealed)
        if code is None:
            return None
        try:
            with connect(self.db_path) as db:
                identity = raters.authenticate(db, code)
            check_allowed(self.app, identity.name, organiser=identity.organiser)
        except Exception:  # noqa: BLE001 - a revoked code just means signing in again
            return None
        owner = raters.code_owner_key(code)
        if owner:
            self.guard.succeeded(client, owner)
        return identity, code

    def space_identity(self, profile: gr.OAuthProfile | None) -> Identity:
        if profile is None:
            raise RatingError("you are not signed in", "use 'Sign in with Hugging Face' at the top of the page")
        name = clean_rater(profile.username)
        organiser = hub_in(name, self.app.organisers)  # as the Hub compares usernames: without case
        check_allowed(self.app, name, profile_orgs(profile), organiser=organiser)
        # Ratings are kept by name. A database built locally (and uploaded to the Space) may hold a rater invited by
        # code under this name, or a look-alike of it: the Hub account would inherit her progress, reveals and
        # share, and its ratings would mix with hers. Nothing says they are one person, so the name is refused.
        with connect(self.db_path) as db:
            holder = raters.invited_holder(db, name)
        # ...unless the config's organisers list this Hub name and the database's own organiser holds it, unrevoked:
        # the organiser who piloted locally (the local app asks for `raters add NAME --organiser` first) and then put
        # her Hub name in app.organisers is one person by her own config's word (Space audit F8: she was locked out)
        # The Hub tells usernames apart only beyond case, so her local name in another case is still her account; she
        # then rates under the name the database knows, so her pilot's ratings and the Space's stay one rater's.
        vouched = (holder is not None and organiser and hub_key(holder["name"]) == hub_key(name)
                   and holder["role"] == "organiser")
        if vouched:
            name = holder["name"]
        if holder is not None and not vouched and organiser:
            raise RatingError(
                f"the Hugging Face account '{name}' is one of app.organisers, but this study's database holds a rater "
                f"(not an organiser) invited by personal code under that name or a look-alike ('{holder['name']}')",
                "an invited rater's name cannot sign in from the Hub (the two would share ratings): list a Hub account "
                "of another name in app.organisers")
        if holder is not None and not vouched:
            raise RatingError(
                f"the Hugging Face account '{name}' has the name of a rater invited to this study by personal code "
                f"('{holder['name']}'), so it cannot rate here under it",
                "ask the study's organiser; a rater invited by code signs in with that code on a local app, not on "
                "the Space")
        with connect(self.db_path) as db:  # an organiser revoked this account (ui.results): no sign-in either
            raters.check_current(db, None, "", name)
        role = "organiser" if organiser else "rater"
        return Identity(name, role, "space")
