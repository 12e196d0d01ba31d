"""Who may rate, and who organises: identities with credentials, never a typed name alone.

Locally an organiser creates raters (`evalkit raters add NAME [--organiser]`), each with a personal code shown
once (stored only as a hash) and an invitation link that carries it. With `app.signup = "open"` a newcomer may
also create a rater identity by choosing an unused name; the app hands them their code, and the browser keeps it.
Either way a name already taken, or one that only looks like it (identity.name_key), needs its code. Organiser
rights come only from `--organiser`; the shared passcode (app.passcodes) is a door to sign-up, never a role.
On a Hugging Face Space the identity is the OAuth profile, and organisers are the usernames in app.organisers.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from .errors import EvalkitError
from .identity import InputError, clean_name, name_key
from .store import NameTaken, insert_rater, replace_secret, revoke_rater

ROLES = ("rater", "organiser")


class SignInError(EvalkitError):
    """A sign-in that did not succeed; it counts towards the attempt limits."""


@dataclass(frozen=True)
class Identity:
    name: str
    role: str = "rater"  # one of ROLES
    source: str = "invited"  # invited (evalkit raters add), signup (open sign-up), space (Hugging Face OAuth)

    @property
    def organiser(self) -> bool:
        return self.role == "organiser"


@dataclass(frozen=True)
class Credential:
    """What a new or re-issued identity is handed, once: the code, and the link that carries it."""

    identity: Identity
    code: str

    def link(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/?invite={self.code}"


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_code(rater_id: int) -> tuple[str, str]:
    secret = secrets.token_urlsafe(18)  # 144 bits
    return f"{rater_id}.{secret}", _hash(secret)


def _checked_name(name: str) -> tuple[str, str]:
    name = clean_name(name)
    key = name_key(name)
    if not key:
        raise InputError(f"the name '{name}' has no letter or digit", "use a name with letters or digits")
    return name, key


def _taken(name: str, holder: dict) -> InputError:
    same = holder["name"] == name
    return InputError(
        f"the name '{name}' is taken" + ("" if same else f" (it looks like '{holder['name']}')"),
        "sign in with your personal code to continue as that rater, or choose a clearly different name",
    )


def _create(db, name: str, role: str, source: str) -> Credential:
    if role not in ROLES:
        raise EvalkitError(f"role {role!r} is not one of {', '.join(ROLES)}", "use rater or organiser")
    name, key = _checked_name(name)
    try:  # the name check and the insert under one write lock: two sign-ups cannot both win
        code = insert_rater(db, name, key, role, source, _new_code)
    except NameTaken as e:
        raise _taken(name, e.holder) from None
    return Credential(Identity(name, role, source), code)


def add(db, name: str, *, organiser: bool = False) -> Credential:
    """An organiser invites a rater (or a fellow organiser). The code is shown once; only its hash is kept."""
    return _create(db, name, "organiser" if organiser else "rater", "invited")


def sign_up(db, name: str) -> Credential:
    """Open sign-up: a new rater identity under an unused name (rater rights only)."""
    return _create(db, name, "rater", "signup")


def _missing(name: str) -> EvalkitError:
    return EvalkitError(f"no rater named '{name}'", "see `evalkit raters list`, or add them with `evalkit raters add`")


def reissue(db, name: str) -> Credential:
    """A new code for an existing rater (lost code, or after a revoke): the old code stops working."""
    _, key = _checked_name(name)
    done = replace_secret(db, key, _new_code)
    if done is None:
        raise _missing(name)
    holder, code = done
    return Credential(Identity(holder["name"], holder["role"], holder["source"]), code)


def revoke(db, name: str) -> Identity:
    """The rater's code stops working at once (their stored ratings stay)."""
    _, key = _checked_name(name)
    holder = revoke_rater(db, key)
    if holder is None:
        raise _missing(name)
    return Identity(holder["name"], holder["role"], holder["source"])


def listing(db) -> list[dict]:
    """Every identity with its role, source, dates and rating counts (never a secret)."""
    return list(db.query(
        """SELECT r.name, r.role, r.source, r.created_at, r.revoked_at,
                  (SELECT COUNT(*) FROM current_ratings c WHERE c.rater = r.name) AS ratings,
                  (SELECT COUNT(*) FROM ratings s WHERE s.rater = r.name AND s.kind = 'skip') AS skips
           FROM raters r ORDER BY r.id"""))


def authenticate(db, code: str) -> Identity:
    """The identity a personal code belongs to. Constant-time comparison; a revoked code is refused."""
    rid, _, secret = (code or "").strip().partition(".")
    row = next(db.query("SELECT * FROM raters WHERE id = ?", [int(rid)]), None) if rid.isdigit() and secret else None
    if row is None or not hmac.compare_digest(row["secret_hash"], _hash(secret)):
        raise SignInError("that code is not valid", "check the code or link your organiser sent you")
    if row["revoked_at"]:
        raise SignInError("that code was revoked", "ask the study organiser for a new one")
    return Identity(row["name"], row["role"], row["source"])


def code_owner_key(code: str) -> str:
    """The per-name key for the attempt limit: the rater id a code claims (whether or not the code is right)."""
    rid = (code or "").strip().partition(".")[0]
    return f"rater:{rid}" if rid.isdigit() else "rater:?"


def count(db, source: str | None = None) -> int:
    sql, args = "SELECT COUNT(*) FROM raters", []
    if source:
        sql, args = sql + " WHERE source = ?", [source]
    return db.execute(sql, args).fetchone()[0]
