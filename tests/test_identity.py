"""Identities and typed text: names normalised and compared by look-alike key, codes as the only credential,
organiser rights only from `evalkit raters add --organiser`, and the sign-in attempt limits."""

import pytest

from evalkit import raters
from evalkit.errors import EvalkitError
from evalkit.identity import InputError, clean_name, clean_text, name_key
from evalkit.limits import SignInGuard
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
    second = raters.reissue(db, "ann")
    assert raters.authenticate(db, second.code).name == "ann"
    with pytest.raises(raters.SignInError, match="not valid"):
        raters.authenticate(db, first.code)  # the old code is gone for good
    with pytest.raises(EvalkitError, match="no rater named"):
        raters.revoke(db, "nobody")
    assert [r["name"] for r in raters.listing(db)] == ["ann"]


def test_sign_in_guard_grows_the_delay_per_client_and_per_name():
    t = [0.0]
    guard = SignInGuard(free_attempts=3, base_seconds=2, max_seconds=60, clock=lambda: t[0])
    keys = ["client:1.2.3.4", "name:ann"]
    for _ in range(3):
        guard.check(keys)
        guard.failed(keys)
    with pytest.raises(EvalkitError, match="wait 2 s"):
        guard.check(keys)
    # a new client guessing the same name is held back by the name's count ...
    with pytest.raises(EvalkitError):
        guard.check(["client:5.6.7.8", "name:ann"])
    # ... and the same client guessing another name by the client's count
    with pytest.raises(EvalkitError):
        guard.check(["client:1.2.3.4", "name:bob"])
    t[0] += 2.1
    guard.check(keys)
    guard.failed(keys)
    with pytest.raises(EvalkitError, match="wait 4 s"):  # doubled
        guard.check(keys)
    t[0] += 1000
    for _ in range(10):
        guard.failed(keys)
    with pytest.raises(EvalkitError, match="wait 60 s"):  # capped
        guard.check(keys)
    guard.check(["client:9.9.9.9", "name:carl"])  # others are not affected
