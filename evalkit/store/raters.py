"""Writes of identities: a new rater or organiser, a re-issued code, a revoked one. Each check of a name and the
write it allows happen under one write lock, so two sign-ups cannot both take a name."""

from __future__ import annotations

from typing import Callable

from .database import now, write_transaction

# rater id -> (the code handed out once, the hash stored)
SecretMaker = Callable[[int], tuple[str, str]]


class NameTaken(Exception):
    """The name (or a look-alike: the same name key) belongs to an identity already; nothing was written."""

    def __init__(self, holder: dict):
        super().__init__(holder["name"])
        self.holder = holder


def rater_by_key(db, name_key: str) -> dict | None:
    return next(db.query("SELECT * FROM raters WHERE name_key = ?", [name_key]), None)


def insert_rater(db, name: str, name_key: str, role: str, source: str, new_secret: SecretMaker) -> str:
    """A new identity with its secret's hash; returns the code. Raises NameTaken when the key is held."""
    with write_transaction(db):
        holder = rater_by_key(db, name_key)
        if holder is not None:
            raise NameTaken(holder)
        rid = db.conn.execute(
            "INSERT INTO raters (name, name_key, role, source, secret_hash, created_at) VALUES (?, ?, ?, ?, '', ?)",
            [name, name_key, role, source, now()]).lastrowid
        code, digest = new_secret(rid)
        db.conn.execute("UPDATE raters SET secret_hash = ? WHERE id = ?", [digest, rid])
    return code


def replace_secret(db, name_key: str, new_secret: SecretMaker) -> tuple[dict, str] | None:
    """A new secret for the identity holding this key (and no longer revoked): (its row, the new code); None when
    there is no such identity."""
    with write_transaction(db):
        holder = rater_by_key(db, name_key)
        if holder is None:
            return None
        code, digest = new_secret(holder["id"])
        db.conn.execute("UPDATE raters SET secret_hash = ?, revoked_at = NULL WHERE id = ?", [digest, holder["id"]])
    return holder, code


def revoke_rater(db, name_key: str) -> dict | None:
    """The identity's code stops working now; returns its row, or None when there is no such identity."""
    with write_transaction(db):
        holder = rater_by_key(db, name_key)
        if holder is not None:
            db.conn.execute("UPDATE raters SET revoked_at = ? WHERE id = ?", [now(), holder["id"]])
    return holder
