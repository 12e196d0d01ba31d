"""Identities and typed text: names normalised and compared by look-alike key, codes as the only credential,
organiser rights only from `evalkit raters add --organiser`, and the sign-in attempt limits."""

import pytest

from evalkit.rating import roster as raters
from evalkit.errors import EvalkitError
from evalkit.rating.identity import InputError, clean_name, clean_text, name_key
from evalkit.rating.limits import SignInGuard
from evalkit.store import open_db


@pytest.fixture
def db(tmp_path):
    return open_db(tmp_path / "id.db")


def test_names_are_normalised_and_invisible_characters_refused():
    assert clean_name("  Ann   Lee ") == "Ann Lee"
    assert clean_name("e\u0301mile") == "\u00e9mile"  # NFC
    for bad in ("ann\nlee", "ann\x1b[31m", "ann\u202egro", "an\u200bn", "ann\ufeff", "\u2066ann"):
        with pytest.raises(InputError, match="invisible or control"):
            clean_name(bad)
    with pytest.raises(InputError, match="empty"):
        clean_name("   ")
    with pytest.raises(InputError, match="limit"):
        clean_name("x" * 101)


def test_free_text_keeps_lines_but_drops_controls_and_overrides():
    # ESC goes (the rest of an escape sequence is harmless visible text), and so do the override and zero-width space
    assert clean_text("good\n\tpoint \x1b[2J\u202e\u200b!", "comment", 100) == "good\n\tpoint [2J!"
    assert clean_text("a\nb", "name", 10, multiline=False) == "ab"
    with pytest.raises(InputError, match="the limit is 3"):
        clean_text("abcd", "comment", 3)


@pytest.mark.parametrize("other", ["ann", "ANN", "Ann", "аnn", "a n n", "Ａｎｎ", "ánn", "ann.", "αnn"])
def test_look_alike_names_share_a_key(other):
    assert name_key(other) == name_key("ann")


@pytest.mark.parametrize("other", ["anne", "bob", "an", "nan"])
def test_different_names_keep_different_keys(other):
    assert name_key(other) != name_key("ann")


def test_codes_are_the_credential(db):
    cred = raters.add(db, "ann")
    assert cred.identity.role == "rater" and cred.identity.name == "ann"
    assert raters.authenticate(db, cred.code).name == "ann"
    # only a hash is stored
    stored = db.execute("SELECT secret_hash FROM raters").fetchone()[0]
    assert cred.code.split(".", 1)[1] not in stored
    rid = cred.code.split(".")[0]
    for wrong in ("", "ann", f"{rid}.", f"{rid}.wrong", f"99.{cred.code.split('.', 1)[1]}", "x.y"):
        with pytest.raises(raters.SignInError):
            raters.authenticate(db, wrong)
    assert cred.link("http://127.0.0.1:7860/") == f"http://127.0.0.1:7860/?invite={cred.code}"


def test_a_name_or_its_look_alike_cannot_be_taken_twice(db):
    raters.add(db, "ann")
    for other in ("ann", "Ann", "аnn", "ANN "):  # the second is Cyrillic а
        with pytest.raises(InputError, match="taken"):
            raters.sign_up(db, other)
    assert raters.sign_up(db, "bob").identity.source == "signup"
    assert raters.count(db) == 2


def test_organiser_rights_come_only_from_the_registry(db):
    org = raters.add(db, "olga", organiser=True)
    assert raters.authenticate(db, org.code).organiser
    assert not raters.sign_up(db, "oleg").identity.organiser  # sign-up never grants it
    with pytest.raises(InputError, match="taken"):
        raters.sign_up(db, "Olga")


def test_revoke_and_reissue(db):
    first = raters.add(db, "ann")
    raters.revoke(db, "ann")
    with pytest.raises(raters.SignInError, match="revoked"):
        raters.authenticate(db, first.code)
    second = raters.reissue(db, "ann", restore=True)
    assert raters.authenticate(db, second.code).name == "ann"
    with pytest.raises(raters.SignInError, match="not valid"):
        raters.authenticate(db, first.code)  # the old code is gone for good
    with pytest.raises(EvalkitError, match="no rater named"):
        raters.revoke(db, "nobody")
    assert [r["name"] for r in raters.listing(db)] == ["ann"]


def test_reissue_refuses_a_revoked_rater_naming_the_revoke_unless_restore_lifts_it(db, tmp_path):
    """Audit, 2026-12-06: `raters reissue` on a revoked rater gave her a working code again without a word, undoing
    the organiser's revoke. It is refused, naming the revoke and its date, nothing written; --restore lifts it and
    says so. A rater who is not revoked is re-issued as before."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.store import open_db

    path = str(tmp_path / "revoked.db")
    store = open_db(path)
    ann, bob = raters.add(store, "ann"), raters.add(store, "bob")
    raters.revoke(store, "ann")
    revoked_at = next(r["revoked_at"] for r in raters.listing(store) if r["name"] == "ann")
    stored = lambda: list(open_db(path).query("SELECT name, secret_hash, revoked_at FROM raters ORDER BY id"))
    before = stored()
    run = CliRunner().invoke
    refused = run(cli, ["raters", "reissue", "ann", "--db", path])
    assert refused.exit_code == 1 and "personal code" not in refused.output
    assert f"rater 'ann' was revoked at {revoked_at}" in refused.output and "--restore" in refused.output
    assert stored() == before  # nothing written: she stays revoked
    with pytest.raises(raters.SignInError, match="revoked"):
        raters.authenticate(open_db(path), ann.code)
    with pytest.raises(EvalkitError, match="was revoked at"):
        raters.reissue(open_db(path), "ann")

    restored = run(cli, ["raters", "reissue", "ann", "--restore", "--db", path])
    assert restored.exit_code == 0, restored.output
    assert f"restored rater 'ann': revoked at {revoked_at}" in restored.output
    code = restored.output.split("personal code ")[1].split()[0]
    assert raters.authenticate(open_db(path), code).name == "ann"
    again = run(cli, ["raters", "reissue", "bob", "--db", path])  # never revoked: no flag needed, no restore said
    assert again.exit_code == 0 and "restored" not in again.output
    assert raters.authenticate(open_db(path), again.output.split("personal code ")[1].split()[0]).name == "bob"
    with pytest.raises(raters.SignInError, match="not valid|replaced"):
        raters.authenticate(open_db(path), bob.code)


def test_sign_in_guard_grows_the_delay_per_client_and_per_name():
    t = [0.0]
    guard = SignInGuard(free_attempts=3, base_seconds=2, max_seconds=60, clock=lambda: t[0])
    client, owner = "client:1.2.3.4", "name:ann"
    for _ in range(3):
        guard.check(client, owner)
        guard.failed(client, owner)
    with pytest.raises(EvalkitError, match="wait 2 s"):
        guard.check(client, owner)
    # a new client guessing the same name is held back by the name's count ...
    with pytest.raises(EvalkitError):
        guard.check("client:5.6.7.8", owner)
    # ... and the same client guessing another name by the client's count
    with pytest.raises(EvalkitError):
        guard.check(client, "name:bob")
    t[0] += 2.1
    guard.check(client, owner)
    guard.failed(client, owner)
    with pytest.raises(EvalkitError, match="wait 4 s"):  # doubled
        guard.check(client, owner)
    t[0] += 1000
    for _ in range(10):
        guard.failed(client, owner)
    with pytest.raises(EvalkitError, match="wait 60 s"):  # capped
        guard.check(client, owner)
    guard.check("client:9.9.9.9", "name:carl")  # others are not affected


def test_strangers_failures_on_an_owner_never_hold_back_a_client_that_signed_in_as_it():
    t = [0.0]
    guard = SignInGuard(free_attempts=2, base_seconds=2, max_seconds=60, clock=lambda: t[0])
    guard.succeeded("client:home", "rater:7")
    for i in range(20):  # wrong codes for rater 7 from twenty other addresses
        guard.failed(f"client:x{i}", "rater:7")
    guard.check("client:home", "rater:7")  # rater 7 at home is not slowed
    with pytest.raises(EvalkitError, match="too many sign-in attempts"):
        guard.check("client:new-stranger", "rater:7")  # a stranger is
    for _ in range(5):  # the known client's own failures still count against it
        guard.failed("client:home", "rater:7")
    with pytest.raises(EvalkitError):
        guard.check("client:home", "rater:7")


def test_codes_are_parsed_to_one_canonical_form_before_any_lookup(db):
    cred = raters.add(db, "ann")
    rid, secret = cred.code.split(".")
    assert raters.parse_code(cred.code) == (int(rid), secret)
    assert raters.code_owner_key(f"0{rid}.{secret}") == raters.code_owner_key(f"000{rid}.x" + secret[1:]) == f"rater:{rid}"
    arabic = "".join(chr(0x0660 + int(d)) for d in rid)  # the id in Arabic-Indic digits is no id
    for no_code in (f"{arabic}.{secret}", "1" * 30 + "." + secret, f"{rid}.{secret}x", f"{rid}.{secret[:-1]}",
                    f"{rid}.{secret[:-1]}é", "x" * 10_000, None, 7, f"{rid}:{secret}"):
        assert raters.parse_code(no_code) is None and raters.code_owner_key(no_code) is None
        with pytest.raises(raters.SignInError, match="not valid"):
            raters.authenticate(db, no_code)


def test_a_revoke_or_reissue_makes_the_credential_of_a_session_stale(db):
    cred = raters.add(db, "ann")
    ident = raters.authenticate(db, cred.code)
    raters.check_current(db, ident.rater_id, ident.credential)
    assert cred.identity.credential == ident.credential  # a sign-up's session is checked the same way
    new = raters.reissue(db, "ann")
    with pytest.raises(raters.SignInError, match="replaced"):
        raters.check_current(db, ident.rater_id, ident.credential)
    fresh = raters.authenticate(db, new.code)
    raters.revoke(db, "ann")
    with pytest.raises(raters.SignInError, match="revoked"):
        raters.check_current(db, fresh.rater_id, fresh.credential)
    raters.check_current(db, None, "")  # a Hugging Face identity has no code


# Every look-alike the attack of issue #22 got accepted, each in the name it imitates.
LOOK_ALIKES = {
    "bob": ["b\u0585b", "\ua4d0ob", "b\u1d0fb", "\u0299ob", "\u0299\u1d0f\u0299", "b\u0665b", "b\u101db",
            "b\u0d66b"],
    "cora": ["\u03f2ora"],  # Greek lunate sigma
    "hal": ["\u04bbal"],  # Cyrillic shha
    "lee": ["\u04cfee"],  # Cyrillic palochka
}


@pytest.mark.parametrize("taken,fake", [(t, f) for t, fakes in LOOK_ALIKES.items() for f in fakes])
def test_look_alikes_from_unicodes_confusables_share_the_key(taken, fake):
    assert name_key(fake) == name_key(taken)


def test_the_key_is_the_skeleton_of_unicodes_confusables_data():
    from evalkit.rating.identity import skeleton_map

    table = skeleton_map()
    assert len(table) > 6000  # the whole of confusables.txt, not a hand list
    # read back with its direction: sources map to prototypes, and a prototype is never a source
    assert table["\u0585"] == "o" and table["1"] == "l" and table["m"] == "rn" and "o" not in table
    assert not any(ch in table for proto in table.values() for ch in proto if len(proto) == 1)
    assert name_key("arnie") == name_key("amie") and name_key("Ian") == name_key("lan")


@pytest.mark.parametrize("bad", ["\u3164", "\u115f", "bob\u3164", "b\u115fob", "bob\ufe0f", "\ufe0f",
                                 "bob\U000e0100", "\u2800", "\u3164\u3164", "b\u034fob", "bob\u180b"])
def test_names_with_invisible_or_filler_characters_are_refused(bad):
    with pytest.raises(InputError, match="invisible or control"):
        clean_name(bad)


def test_stored_name_keys_follow_a_new_version_of_the_key(db):
    raters.add(db, "bob")
    db.conn.execute("UPDATE raters SET name_key = 'stale'")  # as an older key function left it
    db.conn.commit()
    with pytest.raises(InputError, match="taken"):
        raters.sign_up(db, "b\u0585b")  # checked against the key as it is now (the refusal writes nothing)
    raters.sign_up(db, "carl")
    assert [r[0] for r in db.execute("SELECT name_key FROM raters ORDER BY id")] == [name_key("bob"), "carl"]


def test_look_alikes_an_older_key_let_in_are_each_revoked_and_reissued_by_their_own_name(db, tmp_path):
    """A database from before a stronger look-alike key holds 'bob' and 'bօb' (Armenian օ) as two raters: both keep
    signing in with their own codes, nothing merges them. `raters revoke 'bօb'` revoked bob (the key alone found the
    first of them); now the exact name decides, a look-alike of both is refused naming both, and `raters list` and
    the start say which names look alike and what to do."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.config import Config
    from evalkit.ui.server import sign_in_hint

    bob, other = raters.add(db, "bob"), raters.add(db, "carl")
    db.conn.execute("UPDATE raters SET name = 'b\u0585b', name_key = 'bob-as-an-older-key-had-it' WHERE name = 'carl'")
    db.conn.commit()
    raters.add(db, "dora")  # a write brings the stored keys up to date: both look-alikes stay
    assert raters.authenticate(db, bob.code).name == "bob" and raters.authenticate(db, other.code).name == "b\u0585b"

    who, _ = raters.revoke(db, "b\u0585b")
    assert who.name == "b\u0585b"
    with pytest.raises(raters.SignInError, match="revoked"):
        raters.authenticate(db, other.code)
    assert raters.authenticate(db, bob.code).name == "bob"  # the other one untouched
    new = raters.reissue(db, "b\u0585b", restore=True)
    assert new.identity.name == "b\u0585b" and raters.authenticate(db, new.code).name == "b\u0585b"
    assert raters.authenticate(db, bob.code).name == "bob"
    with pytest.raises(EvalkitError, match="looks like 2 raters \\('bob', 'b\u0585b'\\)") as e:
        raters.revoke(db, "BOB")
    assert "exactly as `evalkit raters list` shows it" in e.value.fix
    assert raters.authenticate(db, bob.code).name == "bob"

    listed = {r["name"]: r["looks_like"] for r in raters.listing(db)}
    assert listed == {"bob": ["b\u0585b"], "b\u0585b": ["bob"], "dora": []}
    path = tmp_path / "id.db"
    out = CliRunner().invoke(cli, ["raters", "list", "--db", str(path)]).output
    hint = sign_in_hint(Config(), path)
    assert "looks like 'b\u0585b'" in out and "looks like 'bob'" in out and "evalkit raters revoke 'NAME'" in out
    assert "'bob' and 'b\u0585b'" in hint and "never merged" in hint and "evalkit raters revoke" in hint
