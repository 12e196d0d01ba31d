"""Writes of identities: a new rater or organiser, a re-issued code, a revoked one. Each check of a name and the
write it allows happen under one write lock, so two sign-ups cannot both take a name."""

from __future__ import annotations

from typing import Callable

from .database import now, write_transaction

# rater id -> (the code handed out once, the hash stored)
SecretMaker = Callable[[int], tuple[str, str]]
# a display name -> its look-alike key (evalkit.rating.identity.name_key)
KeyMaker = Callable[[str], str]


class NameTaken(Exception):
    """The name (or a look-alike: the same name key) belongs to an identity already; nothing was written."""

    def __init__(self, holder: dict):
        super().__init__(holder["name"])
        self.holder = holder


class NameAmbiguous(Exception):
    """A name an organiser gave matches no stored name exactly and looks like several (an older look-alike key let
    them all in); nothing was written."""

    def __init__(self, holders: list[dict]):
        super().__init__(", ".join(h["name"] for h in holders))
        self.holders = holders


def rater_by_key(db, name_key: str) -> dict | None:
    return next(db.query("SELECT * FROM raters WHERE name_key = ?", [name_key]), None)


def look_alikes(db, name_key: str) -> list[dict]:
    """Every identity whose key is `name_key`, or that key with an id appended (rekey: look-alikes an older key let in)."""
    return list(db.query("SELECT * FROM raters WHERE name_key = ? OR substr(name_key, 1, ?) = ? ORDER BY id",
                         [name_key, len(name_key) + 1, name_key + "#"]))


def rater_named(db, name: str, name_key: str) -> dict | None:
    """The identity an organiser names: the one stored under exactly `name`, else the one look-alike of it. Look-alikes
    an older key let in share a key but for an appended id, so the key alone found the first of them whichever was
    named; several look-alikes and no exact name raise NameAmbiguous."""
    exact = next(db.query("SELECT * FROM raters WHERE name = ?", [name]), None)
    if exact is not None:
        return exact
    found = look_alikes(db, name_key)
    if len(found) > 1:
        raise NameAmbiguous(found)
    return found[0] if found else None


def rekey(db, key_of: KeyMaker | None) -> int:
    """Bring every stored name key up to `key_of` (a new version of the look-alike key, e.g. newer Unicode data),
    inside the caller's write transaction; returns how many changed. Two existing names that now share a key both
    keep working: the later one's key gets its id appended (they are told apart by their codes)."""
    if key_of is None:
        return 0
    rows = db.conn.execute("SELECT id, name, name_key FROM raters ORDER BY id").fetchall()
    want, seen = {}, set()
    for rid, name, _ in rows:
        key = key_of(name)
        want[rid] = key if key not in seen else f"{key}#{rid}"
        seen.add(key)
    stale = [(rid, want[rid]) for rid, _, old in rows if want[rid] != old]
    if stale:  # in two steps, so a key moving from one row to another never meets itself on the way
        db.conn.executemany("UPDATE raters SET name_key = '#' || id || '#' || name_key WHERE id = ?",
                            [[rid] for rid, _ in stale])
        db.conn.executemany("UPDATE raters SET name_key = ? WHERE id = ?", [[key, rid] for rid, key in stale])
    return len(stale)


def insert_rater(db, name: str, name_key: str, role: str, source: str, new_secret: SecretMaker,
                 key_of: KeyMaker | None = None, client: str | None = None,
                 admit: Callable[[object], None] | None = None) -> str:
    """A new identity with its secret's hash; returns the code. Raises NameTaken when the key is held (every
    stored key is first brought up to `key_of`). `client`: the keyed hash of the client that made it by open sign-up;
    `admit(db)`, asked under the same write lock before the row is written, may refuse it (two sign-ups from one
    client cannot both pass its limit)."""
    with write_transaction(db):
        rekey(db, key_of)
        holder = rater_by_key(db, name_key)
        if holder is not None:
            raise NameTaken(holder)
        if admit is not None:
            admit(db)
        rid = db.conn.execute(
            "INSERT INTO raters (name, name_key, role, source, secret_hash, created_at, signup_client) "
            "VALUES (?, ?, ?, ?, '', ?, ?)", [name, name_key, role, source, now(), client]).lastrowid
        code, digest = new_secret(rid)
        db.conn.execute("UPDATE raters SET secret_hash = ? WHERE id = ?", [digest, rid])
    return code


def signups_since(db, client: str, since: str) -> list[dict]:
    """The names the client (its keyed hash) made by open sign-up since `since` (name, created_at), oldest first."""
    return list(db.query("SELECT name, created_at FROM raters WHERE signup_client = ? AND created_at >= ? "
                         "ORDER BY created_at, rowid", [client, since]))


def replace_secret(db, name: str, name_key: str, new_secret: SecretMaker, key_of: KeyMaker | None = None,
                   restore: bool = False) -> tuple[dict, str | None] | None:
    """A new secret for the identity named (rater_named; and no longer revoked): (its row as it was, the new code);
    None when there is no such identity. A revoked one is restored only with `restore`: else (its row, None), nothing
    written."""
    with write_transaction(db):
        rekey(db, key_of)
        holder = rater_named(db, name, name_key)
        if holder is None:
            return None
        if holder["revoked_at"] is not None and not restore:
            return holder, None
        code, digest = new_secret(holder["id"])
        db.conn.execute("UPDATE raters SET secret_hash = ?, revoked_at = NULL WHERE id = ?", [digest, holder["id"]])
    return holder, code


def revoke_rater(db, name: str, name_key: str, key_of: KeyMaker | None = None) -> dict | None:
    """The named identity's (rater_named) code stops working now; returns its row as it was (revoked_at set: it already
    was, and the time of that revoke is kept), or None when there is no such identity."""
    with write_transaction(db):
        rekey(db, key_of)
        holder = rater_named(db, name, name_key)
        if holder is not None and holder["revoked_at"] is None:
            db.conn.execute("UPDATE raters SET revoked_at = ? WHERE id = ?", [now(), holder["id"]])
    return holder


def hub_revoked(db, name: str) -> dict | None:
    """The standing revoke of the Hub username `name` (compared without case, as the Hub's usernames are), or None."""
    return next(db.query("SELECT * FROM hub_revokes WHERE name = ? COLLATE NOCASE AND lifted_at IS NULL", [name]), None)


def revoke_hub(db, name: str, by: str) -> tuple[dict, bool]:
    """An organiser (`by`) revokes the Hub username `name`: (the standing revoke, whether this call made it; a
    standing one is kept as it was)."""
    with write_transaction(db):
        held = hub_revoked(db, name)
        if held is not None:
            return held, False
        db.conn.execute("INSERT INTO hub_revokes (name, revoked_by, revoked_at) VALUES (?, ?, ?)", [name, by, now()])
        return hub_revoked(db, name), True


def lift_hub_revoke(db, name: str, by: str) -> dict | None:
    """An organiser (`by`) lifts the standing revoke of the Hub username `name`: the revoke as it stood, or None when
    there was none (nothing written)."""
    with write_transaction(db):
        held = hub_revoked(db, name)
        if held is not None:
            db.conn.execute("UPDATE hub_revokes SET lifted_by = ?, lifted_at = ? WHERE id = ?", [by, now(), held["id"]])
    return held


def stored_export_salt(db) -> str | None:
    """The salt the export pseudonymises this database's raters with (publish.scrub.export_salt), or None before its
    first export."""
    row = db.execute("SELECT salt FROM export_salt WHERE id = 1").fetchone()
    return row[0] if row else None


def older_than_its_salt(db) -> bool:
    """Whether the database holds experiments from before it kept its own export salt (migration 022_export_salt):
    only such a database can have been exported with the data folder's salt file (publish.scrub.export_salt)."""
    return db.execute("""SELECT EXISTS (SELECT 1 FROM experiments WHERE created_at <
                         (SELECT applied_at FROM _migrations WHERE name = '022_export_salt'))""").fetchone()[0] == 1


def keep_export_salt(db, salt: str, source: str) -> str:
    """Store the export salt unless one is there already (two exports at once keep the first one's); returns the
    stored one. source: where it came from ("new", or the salt file an earlier version kept)."""
    from .database import now

    with write_transaction(db):
        db.execute("INSERT OR IGNORE INTO export_salt (id, salt, source, created_at) VALUES (1, ?, ?, ?)",
                   [salt, source, now()])
    return stored_export_salt(db)
