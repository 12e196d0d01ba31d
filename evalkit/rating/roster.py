"""Who may rate, and who organises: identities with credentials, never a typed name alone.

Locally an organiser creates raters (`evalkit raters add NAME [--organiser]`), each with a personal code shown
once (stored only as a hash) and an invitation link that carries it. With `app.signup = "open"` a newcomer may
also create a rater identity by choosing an unused name; the app hands them their code, and the browser keeps it.
Either way a name already taken, or one that only looks like it (identity.name_key), needs its code. Organiser
rights come only from `--organiser`; the shared passcode (app.passcodes) is a door to sign-up, never a role.
On a Hugging Face Space the identity is the OAuth profile, and organisers are the usernames in app.organisers;
an organiser revokes a Hub account by its username (hub_access: it has no code to revoke).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from ..errors import EvalkitError
from .identity import InputError, clean_name, hub_key, name_key
from ..store import (NameAmbiguous, NameTaken, hub_revoked, insert_rater, lift_hub_revoke, rater_by_key, replace_secret,
                     revoke_hub, revoke_rater)

ROLES = ("rater", "organiser")

# A personal code is "<rater id>.<secret>": ASCII digits, a dot, 24 URL-safe characters (144 random bits). Anything
# else is no code at all, refused before any lookup; 64 characters bound what is ever looked at.
CODE_LIMIT = 64
LINK_LIMIT = 2048  # an invitation link pasted whole (code_from): its address and the code
_CODE = re.compile(r"([0-9]{1,9})\.([A-Za-z0-9_-]{24})", re.ASCII)


class SignInError(EvalkitError):
    """A sign-in that did not succeed; it counts towards the attempt limits."""


@dataclass(frozen=True)
class Identity:
    name: str
    role: str = "rater"  # one of ROLES
    source: str = "invited"  # invited (evalkit raters add), signup (open sign-up), space (Hugging Face OAuth)
    rater_id: int | None = None  # the registry row (None for a Hugging Face identity)
    credential: str = ""  # the hash of the code it signed in with: a revoke or re-issue ends its sessions

    @property
    def organiser(self) -> bool:
        return self.role == "organiser"


@dataclass(frozen=True)
class Credential:
    """What a new or re-issued identity is handed, once: the code, and the link that carries it."""

    identity: Identity
    code: str
    restored_from: str | None = None  # a re-issue that lifted a revoke: when that revoke was

    def link(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/?invite={self.code}"


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_code(rater_id: int) -> tuple[str, str]:
    secret = secrets.token_urlsafe(18)  # 144 bits
    return f"{rater_id}.{secret}", _hash(secret)


def _checked_name(name: str) -> tuple[str, str]:
    from .pace import ALL

    name = clean_name(name)
    key = name_key(name)
    if not key:
        raise InputError(f"the name '{name}' has no letter or digit", "use a name with letters or digits")
    # the time-on-task table's row of every rater together: a rater under that name (or a look-alike) had her ratings
    # merged into it and no row of her own, so the per-rater flags of too-fast ratings never named her (attacker audit)
    if key == name_key(ALL):
        raise InputError(f"the name '{name}' is reserved (the tables use it for all raters together)",
                         "choose another name")
    return name, key


def _taken(name: str, holder: dict) -> InputError:
    same = holder["name"] == name
    return InputError(
        f"the name '{name}' is taken" + ("" if same else f" (it looks like '{holder['name']}')"),
        "sign in with your personal code to continue as that rater, or choose a clearly different name",
    )


def _create(db, name: str, role: str, source: str, **signup) -> Credential:
    if role not in ROLES:
        raise EvalkitError(f"role {role!r} is not one of {', '.join(ROLES)}", "use rater or organiser")
    name, key = _checked_name(name)
    try:  # the name check and the insert under one write lock: two sign-ups cannot both win
        code = insert_rater(db, name, key, role, source, _new_code, name_key, **signup)
    except NameTaken as e:
        raise _taken(name, e.holder) from None
    return _credential(name, role, source, code)


def _credential(name: str, role: str, source: str, code: str) -> Credential:
    rid, secret = parse_code(code)
    return Credential(Identity(name, role, source, rid, _hash(secret)), code)


def add(db, name: str, *, organiser: bool = False) -> Credential:
    """An organiser invites a rater (or a fellow organiser). The code is shown once; only its hash is kept.
    Refusals are worded for the organiser at the command line, not for a rater at the sign-in box."""
    try:
        return _create(db, name, "organiser" if organiser else "rater", "invited")
    except InputError as e:
        if " is taken" in e.what:
            raise InputError(e.what, "choose a clearly different NAME, or give the existing rater a new code with "
                                     f"`evalkit raters reissue '{name}'`") from None
        raise InputError(e.what, "pass a NAME with letters or digits, e.g. `evalkit raters add ann`"
                         if e.fix == "type your name" else e.fix) from None


def sign_up(db, name: str, client: str | None = None, admit=None) -> Credential:
    """Open sign-up: a new rater identity under an unused name (rater rights only). `client` and `admit`: see
    store.raters.insert_rater (the per-client limits on new names, kept in the database)."""
    return _create(db, name, "rater", "signup", client=client, admit=admit)


def invited_holder(db, name: str) -> dict | None:
    """The registry's identity whose name is `name` or a look-alike of it (None when there is none, or no registry
    yet): a Hub account must not rate under an invited rater's name (evalkit.ui.auth.Doorman.space_identity)."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'raters'").fetchone():
        return None
    return rater_by_key(db, name_key(name))


def _missing(name: str) -> EvalkitError:
    return EvalkitError(f"no rater named '{name}'", "see `evalkit raters list`, or add them with `evalkit raters add`")


def _named(name: str) -> tuple[str, str]:
    """The name and key of a rater an organiser names at the command line (revoke, reissue), refusals worded for her."""
    try:
        return _checked_name(name)
    except InputError as e:
        raise InputError(e.what, "pass the rater's NAME as `evalkit raters list` shows it") from None


def _ambiguous(name: str, e: NameAmbiguous) -> EvalkitError:
    names = ", ".join(f"'{h['name']}'" for h in e.holders)
    return EvalkitError(f"'{name}' looks like {len(e.holders)} raters ({names}), kept apart by their own codes",
                        "pass the NAME exactly as `evalkit raters list` shows it")


def reissue(db, name: str, *, restore: bool = False) -> Credential:
    """A new code for an existing rater (a lost code): the old code stops working. A revoked rater is refused, naming
    the revoke, unless `restore`: a revoke is an organiser's decision, and a re-issue must not quietly undo it."""
    name, key = _named(name)
    try:
        done = replace_secret(db, name, key, _new_code, name_key, restore=restore)
    except NameAmbiguous as e:
        raise _ambiguous(name, e) from None
    if done is None:
        raise _missing(name)
    holder, code = done
    if code is None:
        raise EvalkitError(f"{holder['role']} '{holder['name']}' was revoked at {holder['revoked_at']}; a new code "
                           "would let them sign in and rate again",
                           f"if that is meant, pass --restore: `evalkit raters reissue '{holder['name']}' --restore`")
    identity = _credential(holder["name"], holder["role"], holder["source"], code).identity
    return Credential(identity, code, holder["revoked_at"])


def revoke(db, name: str) -> tuple[Identity, str | None]:
    """The rater's code stops working at once (their stored ratings stay). Returns the identity and, when it was
    revoked already, the time of that revoke (kept as it was)."""
    name, key = _named(name)
    try:
        holder = revoke_rater(db, name, key, name_key)
    except NameAmbiguous as e:
        raise _ambiguous(name, e) from None
    if holder is None:
        raise _missing(name)
    return Identity(holder["name"], holder["role"], holder["source"]), holder["revoked_at"]


HUB_REVOKED = ("your Hugging Face account's access to this study was revoked by its organiser, so this session has "
               "ended; nothing was stored")
HUB_REVOKED_FIX = "if you think this is a mistake, ask the study's organiser"


def _hub_name(db, name) -> str:
    """A Hub username an organiser names (revoke, lift), as a Space's sign-in stores it (queue.clean_rater); refused
    when an invited rater holds it (her code is what `evalkit raters revoke NAME` ends; a Hub account never signs in
    under it: ui.auth.Doorman.space_identity)."""
    from .queue import clean_rater

    name = clean_rater(name if isinstance(name, str) else "")
    if not name_key(name):
        raise InputError(f"the Hugging Face username '{name}' has no letter or digit",
                         "give the username as the Space shows it, e.g. `evalkit raters revoke --hub bea`")
    holder = invited_holder(db, name)
    if holder is not None and holder["source"] != "space":
        raise EvalkitError(f"'{name}' is the name of a rater invited by personal code ('{holder['name']}'), not of a "
                           "Hugging Face account rating on the Space",
                           f"revoke her code with `evalkit raters revoke '{holder['name']}'`")
    return name


def hub_access(db, name: str, by: str, lift: bool = False) -> tuple[str, dict | None, bool]:
    """An organiser (`by`: her name) revokes the Hub account `name` (its open sessions end at their next step, its
    sign-in is refused) or, with `lift`, lifts its standing revoke. (the name as stored, the revoke: the standing one,
    or the one lifted, None when there was none to lift; whether this call changed anything)."""
    name = _hub_name(db, name)
    if lift:
        row = lift_hub_revoke(db, name, by)
        return name, row, row is not None
    row, made = revoke_hub(db, name, by)
    return name, row, made


def revoke_named(db, name: str, hub_by: str | None = None, lift: bool = False) -> tuple:
    """What `evalkit raters revoke` does: a code's revoke (revoke's answer) or, with `hub_by` (who revokes), a Hub
    account's revoke or its lift (hub_access's answer)."""
    if hub_by is None:
        if lift:
            raise EvalkitError("--lift is for a Hugging Face username's revoke (--hub)",
                               f"lift a code's revoke with `evalkit raters reissue '{name}' --restore`")
        return revoke(db, name)
    return hub_access(db, name, hub_by, lift)


def listing(db, hub: bool = False) -> list[dict]:
    """Every identity with its role, source, dates and rating counts (never a secret), and `looks_like`: the other
    names that share its look-alike key (an older key let them in; each keeps her own code and ratings). With `hub`,
    then the Hugging Face accounts (hub_listing)."""
    rows = list(db.query(
        """SELECT r.name, r.role, r.source, r.created_at, r.revoked_at,
                  (SELECT COUNT(*) FROM current_ratings c WHERE c.rater = r.name) AS ratings,
                  (SELECT COUNT(*) FROM ratings s WHERE s.rater = r.name AND s.kind = 'skip') AS skips
           FROM raters r ORDER BY r.id"""))
    keys = [name_key(r["name"]) for r in rows]  # as the key is now: a stored one may be an older version's
    names: dict[str, list[str]] = {}
    for r, key in zip(rows, keys):
        names.setdefault(key, []).append(r["name"])
    for r, key in zip(rows, keys):
        r["looks_like"] = [n for n in names[key] if n != r["name"]]
    return rows + hub_listing(db) if hub else rows


def hub_listing(db) -> list[dict]:
    """The Hugging Face accounts of a Space's database (they have no registry row: no code), as `listing` gives an
    identity, role and source "hub": every name with a rating or a skip and no registry row, and every username an
    organiser revoked (hub_revokes), first seen first. `revoked_at`/`revoked_by` are its standing revoke (None: none);
    `lifted_at`/`lifted_by` its latest revoke's lift, when that revoke was lifted (active again). A revoke applies to
    the username whatever its case (hub_revoked), so it is shown with the ratings of every case of it."""
    rows = list(db.query(
        """SELECT s.rater AS name, 'hub' AS role, 'hub' AS source, MIN(s.created_at) AS created_at,
                  (SELECT COUNT(*) FROM current_ratings c WHERE c.rater = s.rater) AS ratings,
                  SUM(s.kind = 'skip') AS skips
           FROM ratings s WHERE s.rater NOT IN (SELECT name FROM raters) GROUP BY s.rater"""))
    latest = {}  # the latest revoke of each username, as revokes compare it (hub_key)
    for r in db.query("SELECT * FROM hub_revokes ORDER BY id"):
        latest[hub_key(r["name"])] = r
    seen = {hub_key(r["name"]) for r in rows}
    rows += [{"name": r["name"], "role": "hub", "source": "hub", "created_at": r["revoked_at"], "ratings": 0,
              "skips": 0} for key, r in latest.items() if key not in seen]
    for row in rows:
        revoke = latest.get(hub_key(row["name"]))
        standing = revoke is not None and revoke["lifted_at"] is None
        row.update(revoked_at=revoke["revoked_at"] if standing else None,
                   revoked_by=revoke["revoked_by"] if standing else None,
                   lifted_at=None if standing or revoke is None else revoke["lifted_at"],
                   lifted_by=None if standing or revoke is None else revoke["lifted_by"], looks_like=[])
    return sorted(rows, key=lambda r: (r["created_at"], r["name"]))


def look_alike_note(rows: list[dict]) -> str:
    """What an organiser is told of names in `listing` that look alike ('' when none do): an older look-alike key let
    each in, and nothing merges them (each has her own code and ratings; one person may have two names)."""
    groups = {tuple(sorted([r["name"], *r["looks_like"]])) for r in rows if r["looks_like"]}
    if not groups:
        return ""
    said = "; ".join(" and ".join(f"'{n}'" for n in g) for g in sorted(groups))
    return (f"evalkit: names that look alike, each with her own code and ratings (kept apart, never merged): {said}. "
            "If two are one person, her second name could meet the texts of pairs she rated under the first: revoke "
            "one with `evalkit raters revoke 'NAME'`, the name exactly as listed.")


def code_from(text) -> str:
    """The personal code in what a rater typed or pasted into the code box: the code, or her whole invitation link
    (`evalkit raters add` prints both, and the link is what she was sent; pasted whole it was refused as no code and
    counted as a wrong guess). Anything else is returned stripped, for parse_code to judge."""
    if not isinstance(text, str):
        return ""
    text = text.strip()
    if "invite=" in text and len(text) <= LINK_LIMIT:
        from urllib.parse import parse_qs, urlsplit

        found = parse_qs(urlsplit(text).query).get("invite")
        if found:
            return found[0].strip()
    return text


def parse_code(code) -> tuple[int, str] | None:
    """(rater id, secret) of a personal code in its canonical form, or None when it is no code: the id in ASCII
    digits read as a number ("02" is rater 2, and "٢" is no id), the secret of the one length codes have."""
    if not isinstance(code, str) or len(code) > CODE_LIMIT:
        return None
    m = _CODE.fullmatch(code.strip())
    return (int(m[1]), m[2]) if m else None


def authenticate(db, code: str) -> Identity:
    """The identity a personal code belongs to. Constant-time comparison; a revoked code is refused."""
    parsed = parse_code(code)
    row = next(db.query("SELECT * FROM raters WHERE id = ?", [parsed[0]]), None) if parsed else None
    digest = _hash(parsed[1]) if parsed else ""
    if row is None or not hmac.compare_digest(row["secret_hash"], digest):
        raise SignInError("that code is not valid", "check the code or link your organiser sent you")
    if row["revoked_at"]:
        raise SignInError("that code was revoked", "ask the study organiser for a new one")
    return Identity(row["name"], row["role"], row["source"], row["id"], row["secret_hash"])


def code_owner_key(code: str) -> str | None:
    """The per-owner key for the attempt limit: the rater id a code claims, in canonical form (whether or not the
    code is right); None when the text is no code."""
    parsed = parse_code(code)
    return f"rater:{parsed[0]}" if parsed else None


def check_current(db, rater_id: int | None, credential: str, hub: str | None = None) -> None:
    """Refuse an identity whose code was revoked or re-issued since it signed in with `credential` (that code's
    hash): every event of a session asks this, so a revoke ends the sessions already open at their next event.
    A Hugging Face identity has no code (rater_id None): `hub`, its username, is refused once an organiser revoked
    it (hub_access)."""
    if rater_id is None:
        if hub and hub_revoked(db, hub) is not None:
            raise SignInError(HUB_REVOKED, HUB_REVOKED_FIX)
        return
    row = db.execute("SELECT secret_hash, revoked_at FROM raters WHERE id = ?", [rater_id]).fetchone()
    if row is None or row[1]:
        raise SignInError("your personal code was revoked, so this session has ended; nothing was stored",
                          "ask the study organiser for a new code, then sign in again")
    if not hmac.compare_digest(row[0], credential or ""):
        raise SignInError("your personal code was replaced by a new one, so this session has ended; nothing was stored",
                          "sign in again with the new code")


def count(db, source: str | None = None) -> int:
    sql, args = "SELECT COUNT(*) FROM raters", []
    if source:
        sql, args = sql + " WHERE source = ?", [source]
    return db.execute(sql, args).fetchone()[0]
