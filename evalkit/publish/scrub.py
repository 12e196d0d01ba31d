"""What of a stored study may leave the machine: pseudonyms for raters (a salt kept in the database), home folders
and other absolute paths cut to what names a model, machine names and Hub tokens withheld, and the stored configs
scrubbed. The export's tables and card and the report's provenance all go through here."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import secrets
from pathlib import Path

from ..errors import EvalkitError


SALT_FILE = "export_salt"
_SALT_FORM = re.compile(r"[0-9a-f]{32}")


def export_salt(db) -> str:
    """The database's secret for pseudonyms: stable across every export of it, wherever it is exported from or
    copied to, and not reversible without it. Stored in the database (table export_salt, one row, never exported: a
    copy of the database holds its raters' names anyway).

    The first export of a database made before (with experiments older than its salt table) stores the salt file of
    the data folder (`export_salt`, beside the database or under EVALKIT_DATA_DIR), when there is one, so that its
    pseudonyms do not change; any other database draws 32 new hex characters (128 random bits): adopting the file
    there too gave every new database of that folder one salt, and so linked a rater's pseudonyms across them. A
    salt of another form is refused, never replaced: a new salt would change every pseudonym (an empty one would
    make them reversible). A read-only database that holds none yet can still use the
    file's; it cannot keep a new one, and says so."""
    import sqlite3

    from ..store.database import db_file
    from ..store.raters import keep_export_salt, stored_export_salt

    stored = stored_export_salt(db)
    if stored is not None:
        return _checked(stored, "the database's export salt (table export_salt)", "restore the database from a backup")
    adopted = _legacy_salt(db)
    salt = adopted[0] if adopted else secrets.token_hex(16)
    try:
        return keep_export_salt(db, salt, str(adopted[1]) if adopted else "new")
    except sqlite3.OperationalError as e:
        if "readonly" not in str(e):
            raise
        if adopted:  # the file's salt names raters as before, stored or not
            return salt
        raise EvalkitError(f"database {db_file(db) or '(in memory)'} is read-only ({e}): its first export stores there the salt that "
                           "pseudonymises its raters, so that every export of it names them alike",
                           "copy it somewhere writable and export the copy (--db): the copy keeps the salt") from e


def _checked(text: str, what: str, restore: str) -> str:
    text = (text or "").strip()
    if not _SALT_FORM.fullmatch(text):
        raise EvalkitError(
            f"{what} is not 32 hex characters (it holds {len(text)} characters): pseudonyms made with it would not "
            "be secret",
            f"{restore} (the pseudonyms of earlier exports were made with it); only if there is none, remove it and "
            "export again: a new salt is made, and every rater's pseudonym changes, so new exports no longer match "
            "earlier ones")
    return text


def _legacy_salt(db) -> tuple[str, Path] | None:
    """The salt file an earlier version kept (in the data folder: EVALKIT_DATA_DIR, else results/ under the folder
    the command ran in, which is the database's own folder in the default layout): its salt and path, or None; None
    for a database made since (store.raters.older_than_its_salt), which that version never exported."""
    from ..locations import data_dir
    from ..store.database import db_file
    from ..store.raters import older_than_its_salt

    if not older_than_its_salt(db):
        return None
    here = db_file(db)
    places = [data_dir() / SALT_FILE] + ([Path(here).parent / SALT_FILE] if here and Path(here).is_file() else [])
    seen = set()
    for path in places:
        key = path.resolve()
        if key in seen or not path.exists():
            continue
        seen.add(key)
        try:
            text = path.read_text(encoding="ascii", errors="replace")
        except OSError as e:
            raise EvalkitError(f"the export salt {path} cannot be read: {e.strerror or e}",
                               "make it readable by this user (the pseudonyms of earlier exports depend on it)") from e
        return _checked(text, f"the export salt {path}", f"restore {path} from a backup"), path
    return None


def pseudonym(name: str, salt: str) -> str:
    return "rater-" + hashlib.sha256(f"{salt}\0{name}".encode()).hexdigest()[:12]


def pseudonyms(names: list[str], db) -> list[str]:
    """The names as every export of this database writes them (the report's gold table uses the same)."""
    salt = export_salt(db)
    return [pseudonym(n, salt) for n in names]


# The stored config's access lists (evalkit.config.AppConfig): who may sign in, rate or organise is the deployment's
# business, not the dataset's (Hub usernames and organisations name people and employers); published as counts only.
# app.passcodes, a shared secret, likewise.
_ACCESS_LISTS = {"passcodes": "passcode", "organisers": "organiser", "allowed_raters": "allowed rater",
                 "allowed_orgs": "allowed organisation"}


# A path under a home folder names the user it belongs to ("/home/alice.smith/models/..."): the export writes it from
# "~". Stored configs, compatibility records, error messages and notes carry such paths (a local model folder, a
# traceback's file). A Windows home seen from WSL (/mnt/c/Users/bob) is one too.
_HOME = re.compile(r"(?:(?:(?<![\w.~/])|(?<=file://))/(?:home|Users)/[^/\s\"'\\]+"
                   r"|(?<![\w.~/])/mnt/[A-Za-z]/Users/[^/\s\"'\\]+"
                   r"|(?:(?<![\w.~/])|(?<=file://))/root(?=/)|\b[A-Za-z]:\\+Users\\+[^\\\s\"']+)")
# Any other absolute path may name a user too, outside a home folder (/scratch/alice/..., /data/users/carol/...): only
# its last part leaves the machine (two of a deep one: "…/models/qwen"), all a reader can use of a path on a disk.
# A URL is left alone (its slashes follow ":" or a name), as are short paths (/tmp/x, /dev/null).
_DEEP = re.compile(r"(?:(?<![\w.~/:…-])|(?<=file://))(?:/[^/\s\"'\\<>|`()\[\]]+){3,}"
                   r"|\b[A-Za-z]:(?:\\+[^\\\s\"'<>|`]+){3,}")
# A last part that says nothing of which model it is: its folder goes with it (never one of the top two, where a
# user's folder sits: /scratch/alice/...)
_GENERIC = re.compile(r"(?i)checkpoint[-_]?\d*|main|snapshots?|final|latest|best|model|weights|hf|[0-9a-f]{16,}")
# Folders whose children are people (/data/users/carol/checkpoint-500): a kept part right below one is withheld
_PEOPLE = frozenset({"users", "user", "home", "homes", "people", "members", "staff", "students", "u"})
# A Hugging Face access token pasted into an error message or a note
_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{20,}\b")
# A URL's user and password (https://alice:s3cret@proxy:3128, as a proxy or a git remote is written): a credential,
# and a person's name; the address after them is scrubbed as any other
_USERINFO = re.compile(r"(?<=://)[^\s/@]+@")
# An e-mail address in an error message or a note (a Hub or git error quotes the account; a note its author): a
# person's, withheld as a home folder's user is. The top-level domain is letters, so "model@v1.0" is not one.
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b")
# A machine's IPv4 address in an error message or a note (a connection refused, NCCL naming its peers): it names a
# machine as its host name does, and on a private network where it sits. Loopback and 0.0.0.0 name none; a version
# number never has four parts of at most 255 standing alone ("4.46.0.dev0", "v1.2.3.4" are left).
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w.]*\d)(?!\.\w)")
_NO_MACHINE = re.compile(r"127(?:\.\d+){3}|0\.0\.0\.0")
# An IPv6 address (NCCL and torch.distributed name peers so where the network has them: "[fd00:1::7]:29500"): a
# candidate of hex groups and colons, kept unless Python's ipaddress reads it as one that names a machine, so a time
# ("12:30:45"), a C++ name ("c10::Error") or a digest ("sha256:ab12") stays; "::1" and "::" name none.
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:%[\w.-]+)?(?![\w:])")


def _machine_v6(match: re.Match) -> str:
    import ipaddress

    try:
        ip = ipaddress.IPv6Address(match[0])
    except ValueError:
        return match[0]
    return match[0] if ip.is_loopback or ip.is_unspecified else "<address>"


@functools.cache
def _login_names() -> frozenset:
    """The exporting user's names (login and home folder), withheld from any path kept."""
    import getpass

    try:
        return frozenset({getpass.getuser(), Path.home().name} - {"", "root"})
    except (OSError, KeyError, RuntimeError):  # no login name to be had (a container's anonymous user)
        return frozenset()


def _last_parts(match: re.Match) -> str:
    """A deep path's last part, or last two when it has five or more (a user's folder sits near the top, and a
    traceback's package is worth keeping); the exporting user's own name is withheld wherever it is."""
    text = match.group(0)
    sep = "\\" if "\\" in text and "/" not in text else "/"
    parts = [p for p in text.split(sep) if p]
    first = len(parts) - (2 if len(parts) >= 5 else 1)
    while first > 2 and _GENERIC.fullmatch(parts[first]):  # ".../qwen7b/checkpoint-500", not ".../checkpoint-500"
        first -= 1
    cache = next((i for i, p in enumerate(parts) if p.startswith(("models--", "datasets--"))), None)
    if cache is not None:  # a Hugging Face cache entry names its model: models--Qwen--Qwen2.5-7B/snapshots/<sha>
        first = min(first, cache)
    mine = _login_names()
    kept = ["<user>" if p in mine or (i and parts[i - 1].lower() in _PEOPLE) else p
            for i, p in enumerate(parts) if i >= first]
    return "…" + sep + sep.join(kept)


def without_home(value):
    """value (a string, or a dict / list of them, as a stored JSON record is) as it may leave the machine: every home
    folder written as ~, every other absolute path of three or more parts cut to its last part (two from five parts
    on: "…/models/qwen"), the exporting user's name withheld from those, and
    Hugging Face tokens, a URL's user and password, e-mail addresses and machines' IPv4 and IPv6 addresses withheld."""
    if isinstance(value, str):
        value = _EMAIL.sub("<email>", _USERINFO.sub("<credentials>@", value))
        value = _IPV4.sub(lambda m: m[0] if _NO_MACHINE.fullmatch(m[0]) else "<address>", value)
        value = _IPV6.sub(_machine_v6, value)
        return _TOKEN.sub("hf_… (a token, not exported)", _DEEP.sub(_last_parts, _HOME.sub("~", value)))
    if isinstance(value, dict):
        return {k: without_home(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_home(v) for v in value]
    return value


def machine_names(rows: dict[str, list[dict]]) -> set[str]:
    """The names of the machines behind these rows (their `host` columns, as stored) and of this one: a traceback or
    a note may name them in passing, where the host columns' salted hashes do not reach."""
    import socket

    names = {r["host"] for table in rows.values() for r in table if r.get("host")}
    try:
        names.add(socket.gethostname())  # not getfqdn: a reverse lookup can wait on DNS on an offline machine
    except OSError:
        pass
    names |= {n.split(".")[0] for n in names if re.search(r"[A-Za-z]", n)}  # the short name of each too (not of an IP)
    return {n for n in names if re.search(r"[A-Za-z]", n) and n not in _PLAIN_HOSTS}


# A name of one or two characters ("h1", "db") is a word or an abbreviation too: withheld only where it stands as a
# machine's name, after "@" (alice@h1:~$), "//" (http://h1:7860) or the word host / hostname, or before a port
# (h1:29500, [h1]:29500) or a local domain (h1.local); "the db is locked" keeps its word. Its stored full names'
# domains count as local ones (h1.cluster, of h1.cluster.example).
_SHORT = 3
_LOCAL_DOMAINS = ("local", "lan", "internal", "localdomain", "home", "intranet", "corp")
_AS_HOST = (r"(?:(?<=@)|(?<=//)|(?<=\bhost[ =:])|(?<=\bhost: )|(?<=\bhostname[ =:])|(?<=\bhostname: ))"
            r"{name}(?![\w-])"
            r"|(?<![\w.-]){name}(?=\]?:\d{{1,5}}(?!\d)|\.(?:{domains})(?![\w-]))")


def _host_pattern(name: str, hosts: set[str]) -> str:
    if len(name) >= _SHORT:
        return rf"(?<![\w.-]){re.escape(name)}(?![\w-])"
    domains = {*_LOCAL_DOMAINS, *(h[len(name) + 1:].split(".")[0] for h in hosts if h.lower().startswith(name.lower() + "."))}
    return _AS_HOST.format(name=re.escape(name), domains="|".join(re.escape(d) for d in sorted(domains) if d))


def without_hosts(text, hosts: set[str]):
    """Free text with every machine name in `hosts` written as <host>, the longest first (a full name before its
    short one); a name shorter than three characters only where it stands as a machine's name (_AS_HOST)."""
    if not isinstance(text, str) or not hosts:
        return text
    for name in sorted(hosts, key=len, reverse=True):
        text = re.sub(_host_pattern(name, hosts), "<host>", text, flags=re.IGNORECASE)  # names ignore case
    return _USER_AT_HOST.sub("<user>@", text)


# The account before a machine's name (alice@h1:~$, ssh dave@gpu-node-17): a user of that machine, withheld as a home
# folder's user is
_USER_AT_HOST = re.compile(r"(?<![\w.+-])[\w.+-]+@(?=<host>)")


def shared_text(db):
    """How text the aggregate wrote (its notes, a condition's reason, a figure's note) leaves the machine in the card
    and the report: as without_home, and with the database's machines named <host>. A fallback's cause quotes a stored
    error message, which the export's `error_message` column withholds the machine's name from; the card's and the
    report's copies of it must not name it either."""
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
    rows = {t: [{"host": h} for (h,) in db.execute(f'SELECT DISTINCT host FROM "{t}"').fetchall()]
            for t in tables if any(c[1] == "host" for c in db.execute(f'PRAGMA table_info("{t}")').fetchall())}
    hosts = machine_names(rows)
    return lambda text: without_hosts(without_home(text), hosts)


# app.host as exported: an address that names no machine is kept, any other is withheld
_PLAIN_HOSTS = ("", "127.0.0.1", "0.0.0.0", "localhost", "::1", "::")


def host_name(host: str | None, salt: str) -> str | None:
    """A machine's name as exported: a salted hash, so that runs on one machine still group together."""
    return host if not host else "host-" + hashlib.sha256(f"{salt}\0host\0{host}".encode()).hexdigest()[:8]


def published_config(config: dict) -> dict:
    """A stored config (experiments.config_json, a generation's effective_config["config"]) as it may leave this
    machine: app.passcodes (a shared sign-in secret) and the access lists app.organisers, app.allowed_raters and
    app.allowed_orgs replaced by their counts ("3 passcodes, not exported", "2 allowed organisations, not
    exported"), with --keep-rater-names too (it keeps the names of those who rated, in ratings; an access list names
    people who may never have rated, and their employers); app.host withheld unless it names no machine. The
    one place a stored config is scrubbed: the export's tables and card and the report's provenance all use it. The
    database is not changed. Returns `config` itself when there is nothing to scrub, else a scrubbed copy."""
    if not isinstance(config, dict):
        return config
    if (homeless := without_home(config)) != config:
        if isinstance(config.get("app"), dict) and isinstance(homeless.get("app"), dict) and "root_path" in config["app"]:
            homeless["app"]["root_path"] = config["app"]["root_path"]  # a path on the web server, not on a disk
        config = homeless
    app = config.get("app")
    if not isinstance(app, dict):
        return config
    changes = {}
    if isinstance(app.get("host"), str) and app["host"].strip() not in _PLAIN_HOSTS:
        changes["host"] = "a host name, not exported"
    for key, word in _ACCESS_LISTS.items():
        if items := app.get(key):
            n = len(items) if isinstance(items, (list, tuple)) else 1
            changes[key] = f"{n} {word}{'' if n == 1 else 's'}, not exported"
    if not changes:
        return config
    return {**config, "app": {**app, **changes}}


def published_config_row(config_json: str | None, stored_hash: str) -> tuple[str, str]:
    """An experiment's (config_json, config_hash) as published: scrubbed (published_config), with the hash of the
    scrubbed config when scrubbing changed it (the stored hash covers the passcodes: a weak one could be guessed from
    it and the rest of the config)."""
    cfg = json.loads(config_json or "{}")
    out = published_config(cfg)
    if out is cfg:
        return config_json, stored_hash
    from ..store import json_hash  # the hash the store keeps beside a config, of the published one

    return json.dumps(out, ensure_ascii=False, sort_keys=True), json_hash(out)
