"""Writes of studies: a study frozen with its first pool's gate, pools attached to it, and its decision stored once
when the planned sample completes."""

from __future__ import annotations

import json

from ..errors import EvalkitError
from .database import db_file, now, write_transaction

# The name of the first study of a database (a later one is named by `evalkit generate --new-study NAME`).
FIRST_STUDY = "main"


def _values(gate: dict) -> str:
    v = gate.get("values") or {}
    return f"planned_pairs {v.get('planned_pairs', 'unset')}, margin {v.get('margin', 'unset')}"


def gate_mismatch(study: dict, gate: dict) -> EvalkitError:
    """The refusal of a pool whose gate is not the one frozen with the study it would join."""
    frozen = json.loads(study["gate_json"] or "{}")
    return EvalkitError(
        f"gate file {gate.get('path') or '(none)'} (hash {gate.get('hash') or 'none'}; {_values(gate)}) is not the gate "
        f"frozen with study '{study['name']}' when its first pool was generated (hash {study['gate_hash'] or 'none'}; "
        f"{_values(frozen)}); one study decides under one gate",
        f"to add pairs to study '{study['name']}', put its gate back (the frozen text is in `evalkit aggregate --json`, "
        "provenance.gate); to decide under this gate, start a new study whose pairs and ratings never mix with the "
        "first: `evalkit generate --new-study NAME`, or use a new database (--db NEW.db); on a Space whose study has no "
        "ratings yet (a restart during its first preparation froze the gate), delete evalkit.db from the dataset repo "
        "and restart the Space")


STUDY_NAME_LIMIT = 100


def check_study_name(name: str) -> None:
    """A study's name is how aggregate, report and the verdict name it: refuse one that names nothing (blank, or no
    letter or digit), control characters, or a paragraph. One rule for `generate`'s early check and the store's: a
    second, stricter one here (64 characters) refused, after the models had loaded, a name the first had passed."""
    import unicodedata

    if (not any(ch.isalnum() for ch in name) or len(name) > STUDY_NAME_LIMIT
            or any(unicodedata.category(ch).startswith("C") for ch in name) or name != name.strip()):
        raise EvalkitError(f"--new-study {name!r} is not a usable study name",
                           f"give a name with letters or digits, no leading or trailing spaces, at most "
                           f"{STUDY_NAME_LIMIT} characters, e.g. --new-study pilot-2")


def _insert_study(db, name: str, gate_json: str, gate: dict) -> int:
    """A new study, frozen with its gate and the pre-screen rules of the code that makes its first pool: what
    prediction-powered inference uses at every look (aggregate.ppi), so rules edited once ratings are in never enter."""
    from ..task.fidelity import RULES_VERSION

    return db.conn.execute("INSERT INTO studies (name, created_at, gate_json, gate_hash, prescreen_rules) "
                           "VALUES (?, ?, ?, ?, ?)", [name, now(), gate_json, gate.get("hash", ""),
                                                      RULES_VERSION]).lastrowid


def attach_pool(db, gate: dict, new_study: str | None = None) -> int:
    """The study a new pool experiment joins (call inside the experiment's write transaction): a new study named
    `new_study`; else the latest study, whose frozen gate must be this one (raises the refusal otherwise); else, in
    a database without a study, the first study, frozen with this gate."""
    gate = gate or {}
    gate_json = json.dumps(gate, ensure_ascii=False, sort_keys=True)
    with write_transaction(db):
        if new_study is not None:
            check_study_name(name := new_study)
            if db.execute("SELECT 1 FROM studies WHERE name = ?", [name]).fetchone():
                taken = ", ".join(r[0] for r in db.execute("SELECT name FROM studies ORDER BY id"))
                raise EvalkitError(f"a study named '{name}' already exists in {db_file(db) or 'this database'}",
                                   f"choose another name for --new-study (studies here: {taken})")
            return _insert_study(db, name, gate_json, gate)
        latest = next(db.query("SELECT * FROM studies ORDER BY id DESC LIMIT 1"), None)
        if latest is None:
            return _insert_study(db, FIRST_STUDY, gate_json, gate)
        if latest["gate_hash"] != gate.get("hash", ""):
            raise gate_mismatch(latest, gate)
        done = db.conn.execute("SELECT decision, decided_at FROM decisions WHERE study_id = ?", [latest["id"]]).fetchone()
        if done:
            raise EvalkitError(
                f"study '{latest['name']}' reached its decision ({done[0]}, stored {done[1][:16]}): the queue serves "
                "none of its pairs any more, so a pool added to it would never be rated",
                "to rate more pairs, start a new study: `evalkit generate --new-study NAME`")
        return latest["id"]


def insert_push_while_rating(db, repo_id: str, private: bool, open_pairs: int) -> None:
    """Record an export pushed to the Hub while `open_pairs` pairs of the study the queue serves (the latest) were
    still open to raters (`evalkit export --while-rating`): its tables tell their sides."""
    with write_transaction(db):
        db.conn.execute("INSERT INTO pushes_while_rating (study_id, pushed_at, repo_id, private, open_pairs) "
                        "VALUES ((SELECT MAX(id) FROM studies), ?, ?, ?, ?)", [now(), repo_id, int(private), open_pairs])


def insert_decision(db, study_id: int, row: dict) -> bool:
    """Store a study's decision once: the first look that finds the planned sample complete writes it, any later
    or concurrent one leaves it as it is (and reads the stored one). Returns whether this call stored it.
    Storing it closes every pair of the study in the same transaction (closed_pairs): the queue serves none of them
    again, a rating of one is refused (StudyDecided), and their reveals may be shown, since no identity can rate them.
    row: completed_at, completed_rating_id, gate_hash, decision, sample (rating ids), excluded (raters),
    verdict (JSON-ready dict), speed (JSON-ready dict)."""
    with write_transaction(db):
        cur = db.conn.execute(
            "INSERT INTO decisions (study_id, decided_at, completed_at, completed_rating_id, gate_hash, decision, "
            "sample_json, excluded_json, verdict_json, speed_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (study_id) DO NOTHING",
            [study_id, now(), row["completed_at"], row["completed_rating_id"], row["gate_hash"], str(row["decision"]),
             json.dumps(row["sample"]), json.dumps(row["excluded"], ensure_ascii=False),
             json.dumps(row["verdict"], ensure_ascii=False, default=str),
             json.dumps(row["speed"], ensure_ascii=False, default=str)])
        if cur.rowcount == 1:  # the study stops: no rater's time goes to a rating that can no longer count
            db.conn.execute("INSERT OR IGNORE INTO closed_pairs (pair_id, closed_at) SELECT p.id, ? FROM pairs p "
                            "JOIN experiments e ON e.id = p.experiment_id WHERE e.study_id = ?", [now(), study_id])
        return cur.rowcount == 1


def insert_give_ups(db, pair_ids: list[str], reason: str) -> str:
    """Record that the organiser gave these pairs up (aggregate.give_up decides which may be) and close them, in one
    transaction: all or none. Under the write lock, a pair closed since the caller looked (its quota filled, the
    study decided, another give-up) refuses the whole write, naming it. Returns the instant recorded."""
    at = now()
    with write_transaction(db):
        closed = [r[0] for r in db.conn.execute(
            "SELECT pair_id FROM closed_pairs WHERE pair_id IN (SELECT value FROM json_each(?)) ORDER BY pair_id",
            [json.dumps(pair_ids)])]
        if closed:
            raise EvalkitError(f"pair {closed[0]} was closed meanwhile (its ratings are in, the study was decided, or "
                               "it was given up): nothing was given up",
                               "run `evalkit aggregate` to see what the next look waits for now, then try again")
        db.conn.executemany("INSERT INTO pair_give_ups (pair_id, given_up_at, reason) VALUES (?, ?, ?)",
                            [(p, at, reason) for p in pair_ids])
        db.conn.executemany("INSERT INTO closed_pairs (pair_id, closed_at) VALUES (?, ?)", [(p, at) for p in pair_ids])
    return at
