"""The app probed as a curious or dishonest rater would probe it, against a served app on 127.0.0.1: through
gradio_client (as the API documents itself) and through raw queue requests (any function, any payload, a forged
session state). Each test is one route that was open once; it fails on any leak or bypass.

What the app promises is written in the README's "Security: what the app promises" section."""

import json
import re
import sqlite3
import threading
import uuid

import httpx
import pytest
from apphelpers import POOL_PAIRS, pool_db, pool_template, rows, served, write_config  # noqa: F401
from gradio_client.exceptions import AppError
from test_app_client import Tab

from evalkit import raters
from evalkit.config import POOL_SEED_LIMIT, load_config
from evalkit.prompts import CRITERIA, load_prompts
from evalkit.store import open_db
from evalkit.ui.rate import FORM_KEYS


def config(tiny_models, tmp_path, **app):
    return load_config(write_config(tmp_path / f"sec-{uuid.uuid4().hex[:6]}.toml", tiny_models, **app))


class Raw:
    """Raw queue requests: join the queue for any function by index with any payload, read the event stream.
    One Raw is one session (one session_hash)."""

    def __init__(self, url: str):
        self.url, self.session = url, uuid.uuid4().hex[:11]
        cfg = httpx.get(url + "config", timeout=30).json()
        self.fns = {d["api_name"]: d["id"] for d in cfg["dependencies"] if d.get("api_name")}

    def call(self, fn: str | int, data: list) -> dict:
        index = self.fns[fn] if isinstance(fn, str) else fn
        with httpx.Client(base_url=self.url, timeout=120) as c:
            join = c.post("gradio_api/queue/join", json={"data": data, "fn_index": index, "session_hash": self.session,
                                                         "event_data": None, "trigger_id": None})
            join.raise_for_status()
            with c.stream("GET", "gradio_api/queue/data", params={"session_hash": self.session}) as stream:
                for line in stream.iter_lines():
                    if line.startswith("data:"):
                        msg = json.loads(line[5:])
                        if msg.get("msg") == "process_completed":
                            return msg
        raise AssertionError("the event stream ended without a result")

    @staticmethod
    def error(msg: dict) -> str:
        return "" if msg.get("success") else str((msg.get("output") or {}).get("error"))


def answers(a="pass", b="fail", preference="A", comment=""):
    form = {f"a_{c}": a for c in CRITERIA} | {f"b_{c}": b for c in CRITERIA} | {"preference": preference,
                                                                                 "comment": comment}
    return [form[k] for k in FORM_KEYS]


def pooled(db_file, prompt_id):
    return rows(db_file, "SELECT g.text, g.token_ids FROM pairs p JOIN generations g ON g.id IN "
                         "(p.a_generation_id, p.b_generation_id) WHERE p.prompt_id = ?", [prompt_id])


# --- 1. the Live tab never shows a pooled output under its path's name ---------------------------------------

def test_live_runs_on_every_bundled_prompt_never_equal_a_pooled_output(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    prompts = [p.id for p in load_prompts()]
    import evalkit.ui.live as live_tab

    withheld = set()
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        for prompt_id in prompts:
            job = tab.client.submit(prompt_id, "", api_name="/live")  # the session state is the server's
            final = job.result()
            shown = [v for out in job.outputs() for v in out if isinstance(v, str)]
            for g in pooled(pool_db, prompt_id):
                assert g["text"] not in shown, f"a pooled output of {prompt_id} was shown live"
            if final[0] == final[1] == live_tab.WITHHELD:  # the tiny models are peaked: a rare exact repeat
                withheld.add(prompt_id)
    live = rows(pool_db, "SELECT prompt_id, token_ids, seed FROM generations WHERE live = 1")
    # every prompt ran and was stored, unless both its outputs repeated pooled ones and were withheld
    assert {r["prompt_id"] for r in live} == set(prompts) - withheld and len(withheld) < len(prompts)
    pool_ids = {r["token_ids"] for r in rows(pool_db, "SELECT g.token_ids FROM pairs p JOIN generations g ON g.id IN "
                                                      "(p.a_generation_id, p.b_generation_id)")}
    assert not [r for r in live if r["token_ids"] in pool_ids]
    pool_seeds = {r["seed"] for r in rows(pool_db, "SELECT seed FROM generations WHERE live = 0")}
    assert max(pool_seeds) < POOL_SEED_LIMIT <= min(r["seed"] for r in live)


def test_a_live_run_that_would_repeat_a_pooled_sample_is_withheld_while_it_streams(tiny_models, tmp_path, pool_db,
                                                                                  monkeypatch):
    """Force the collision the seed ranges prevent (the pool's own seed): the last guard must hold back the
    stream and withhold both outputs, and store nothing."""
    import evalkit.ui.live as live

    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    monkeypatch.setattr(live, "live_seed", lambda: cfg.decoding.seed)  # sample 0's seed
    with served(cfg, pool_db) as url:
        job = Tab(url).client.submit("writing-01", "", api_name="/live")
        final = job.result()
        streamed = [v for out in job.outputs() for v in out if isinstance(v, str)]
    texts = [g["text"] for g in pooled(pool_db, "writing-01")]
    assert final[0] == live.WITHHELD and final[1] == live.WITHHELD
    for text in texts:
        assert not any(text and text[:12] in s for s in streamed), "a pooled output streamed to the browser"
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0


def test_a_live_run_that_repeats_another_prompts_pooled_output_is_withheld(tiny_models, tmp_path, pool_db,
                                                                          monkeypatch):
    """A degenerate output can be the same text for two prompts: the guard holds every pooled output, not only
    the chosen prompt's. Sample 0 of writing-01 is filed under writing-02 here; the live run on writing-01 with
    sample 0's seed reproduces it and must withhold it."""
    import evalkit.ui.live as live

    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    sample0 = rows(pool_db, "SELECT DISTINCT p.id FROM pairs p JOIN generations g ON g.id IN "
                            "(p.a_generation_id, p.b_generation_id) WHERE p.prompt_id = 'writing-01' AND g.seed = ?",
                   [cfg.decoding.seed])
    assert sample0
    with sqlite3.connect(pool_db) as db:
        db.executemany("UPDATE pairs SET prompt_id = 'writing-02' WHERE id = ?", [[r["id"]] for r in sample0])
    monkeypatch.setattr(live, "live_seed", lambda: cfg.decoding.seed)
    with served(cfg, pool_db) as url:
        final = Tab(url).client.submit("writing-01", "", api_name="/live").result()
    assert final[0] == live.WITHHELD and final[1] == live.WITHHELD
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0


def test_greedy_pool_refuses_bundled_prompts_live(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    cfg.decoding.mode = "greedy"
    with served(cfg, pool_db) as url:
        with pytest.raises(AppError, match="greedy decoding would reproduce"):
            Tab(url).call("/live", "writing-01", "")


def test_live_tab_limits_and_access(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, live_runs_per_hour=1)
    with served(cfg, pool_db) as url:
        Tab(url).call("/live", "writing-02", "")
        for _ in range(2):  # a fresh session from the same client is still over the limit
            with pytest.raises(AppError, match="too many live runs"):
                Tab(url).call("/live", "writing-02", "")
    cfg = config(tiny_models, tmp_path, live_access="organisers", live_runs_per_hour=0)
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        with pytest.raises(AppError, match="needs you to be signed in"):
            tab.call("/live", "writing-02", "")
        tab.sign_in("ann")
        with pytest.raises(AppError, match="for the study's organisers"):
            tab.call("/live", "writing-02", "")
        raw = Raw(url)  # a forged session state is ignored: the state is the server's
        msg = raw.call("live", [{"rater": "olga", "organiser": True}, "writing-02", ""])
        assert "signed in" in Raw.error(msg)
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM experiments WHERE kind = 'live'")[0]["n"] == 1  # one run passed


def test_on_a_space_the_live_tab_is_for_organisers_by_default(tiny_models, tmp_path, pool_db):
    from evalkit.ui.live import check_access, live_access
    from evalkit.ui.session import Session

    cfg = config(tiny_models, tmp_path)
    assert live_access(cfg, space=True) == "organisers" and live_access(cfg, space=False) == "anyone"
    with pytest.raises(Exception, match="organisers"):
        check_access(cfg, True, Session(rater="ann"))
    check_access(cfg, True, Session(rater="olga", organiser=True))
    check_access(cfg, False, Session())


# --- 2. the blind rating is the one that counts ---------------------------------------------------------------

def test_a_correction_after_the_reveal_never_replaces_the_blind_rating(tiny_models, tmp_path, pool_db):
    with served(config(tiny_models, tmp_path), pool_db) as url:
        raw = Raw(url)
        assert Raw.error(raw.call("sign_in", [None, "mia", "", ""])) == ""
        assert Raw.error(raw.call("submit", [None, *answers("pass", "pass", "A")])) == ""
        assert Raw.error(raw.call("correct", [None])) == ""
        assert Raw.error(raw.call("submit", [None, *answers("fail", "fail", "B")])) == ""
    history = rows(pool_db, "SELECT id, blind, preference FROM ratings ORDER BY id")
    assert [(h["blind"], h["preference"]) for h in history] == [(1, "A"), (0, "B")]
    assert [r["id"] for r in rows(pool_db, "SELECT id FROM current_ratings")] == [history[0]["id"]]


# --- 3. identity comes from a credential -----------------------------------------------------------------------

def test_a_name_cannot_be_taken_over(tiny_models, tmp_path, pool_db):
    with served(config(tiny_models, tmp_path), pool_db) as url:
        ann = Tab(url)
        ann.sign_in("ann")
        ann.submit()
        for fake in ("Ann", "\u0430nn", "a n n", "ａｎｎ"):  # the second is a Cyrillic а
            with pytest.raises(AppError, match="is taken"):
                Tab(url).call("/sign_in", fake, "", "")
        for bad in ("ann\u200b", "ann\nHello **world**", "\u202eann"):
            with pytest.raises(AppError, match="invisible or control"):
                Tab(url).call("/sign_in", bad, "", "")
        with pytest.raises(AppError, match="not valid"):
            Tab(url).call("/sign_in", "", "", "1.guessed-code")
        # five failures from this client (taken names count: probing for names is guessing): it must now wait
        with pytest.raises(AppError, match="too many sign-in attempts"):
            Tab(url).call("/sign_in", "ann", "", "")
    assert {r["rater"] for r in rows(pool_db, "SELECT rater FROM ratings")} == {"ann"}
    assert [r["name"] for r in rows(pool_db, "SELECT name FROM raters")] == ["ann"]


def test_organiser_rights_never_come_from_a_name_or_a_forged_state(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, organisers=["boss"])
    with served(cfg, pool_db) as url:
        boss = Tab(url)
        screen = boss.sign_in("boss")
        assert "组织者" not in screen["who"]
        assert boss.call("/results")["pass rates"]["data"] == []
        raw = Raw(url)
        raw.call("sign_in", [None, "boss2", "", ""])
        forged = {"rater": "boss", "organiser": True, "pair_id": None, "rating_id": None}
        out = json.dumps(raw.call("results", [forged])["output"], ensure_ascii=False)
        assert "once you have rated your own pairs" in out and "Verdict:" not in out


def test_passcode_and_code_guessing_is_slowed_per_client(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, passcodes=["s3cret"])
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        for i in range(5):  # five free guesses
            with pytest.raises(AppError, match="passcode is not right"):
                tab.call("/sign_in", f"eve{i}", f"guess{i}", "")
        # then even the right passcode, under another name, from this client, waits
        with pytest.raises(AppError, match="too many sign-in attempts"):
            tab.call("/sign_in", "eve-honest", "s3cret", "")
        seen = []
        for i in range(25):  # as fast as the server answers: each checked guess doubles the wait (2 s, 4 s, ...)
            with pytest.raises(AppError) as e:
                tab.call("/sign_in", f"eve{i}", f"again{i}", "")
            seen.append(str(e.value))
        assert sum("passcode is not right" in a for a in seen) <= 3, seen
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM raters")[0]["n"] == 0


def test_invite_mode_signs_in_by_code_or_link_only(tiny_models, tmp_path, pool_db):
    db = open_db(pool_db)
    cred = raters.add(db, "ann")
    db.conn.close()
    cfg = config(tiny_models, tmp_path, signup="invite")
    with served(cfg, pool_db) as url:
        with pytest.raises(AppError, match="signs raters in with a personal code"):
            Tab(url).call("/sign_in", "mallory", "", "")
        assert "ann" in Tab(url).call("/sign_in", "", "", cred.code)["who"]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM raters")[0]["n"] == 1


def test_new_names_are_limited_per_client(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, signups_per_client_per_hour=2)
    with served(cfg, pool_db) as url:
        Tab(url).sign_in("r1")
        Tab(url).sign_in("r2")
        with pytest.raises(AppError, match="too many new names"):
            Tab(url).sign_in("r3")


def test_the_submission_limit_holds_across_sessions_of_one_rater(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, max_submissions_per_minute=1)
    with served(cfg, pool_db) as url:
        one, two = Tab(url), Tab(url)
        one.sign_in("ann")
        one.submit()
        two.sign_in("ann")  # her second tab, with her code
        with pytest.raises(AppError, match="too many submissions"):
            two.call("/skip", "second tab")
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 1


# --- 4. quotas and results --------------------------------------------------------------------------------------

def test_skipping_never_opens_the_results(tiny_models, tmp_path, pool_db):
    with served(config(tiny_models, tmp_path), pool_db) as url:
        sk = Tab(url)
        sk.sign_in("skipper")
        for _ in range(POOL_PAIRS):
            sk.call("/skip", "no")
        out = sk.call("/results")
        assert "you skipped 6 pairs" in out["verdict"] and out["pass rates"]["data"] == []
        rater = Tab(url)
        rater.sign_in("rita")
        for _ in range(POOL_PAIRS):
            rater.submit()
            rater.call("/next_pair")
        assert rater.call("/results")["pass rates"]["data"]  # rated her queue: the aggregates open


def test_raters_arriving_at_once_get_different_pairs(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, ratings_per_pair=1)
    with served(cfg, pool_db) as url:
        tabs = [Tab(url) for _ in range(4)]
        screens = [None] * 4
        threads = [threading.Thread(target=lambda i=i: screens.__setitem__(i, tabs[i].sign_in(f"r{i}")))
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        shown = {s["text-a"] + "|" + s["text-b"] for s in screens}
        assert len(shown) == 4  # four raters, four pairs: none is over-filled
        for t in tabs:
            t.submit()
    per_pair = rows(pool_db, "SELECT pair_id, COUNT(*) AS n FROM current_ratings GROUP BY pair_id")
    assert len(per_pair) == 4 and all(p["n"] == 1 for p in per_pair)


# --- 5. hygiene --------------------------------------------------------------------------------------------------

def test_comments_are_stored_without_control_or_override_characters(tiny_models, tmp_path, pool_db):
    with served(config(tiny_models, tmp_path), pool_db) as url:
        tab = Tab(url)
        tab.sign_in("ann")
        tab.submit(comment="fine\u202e txet\x1b[2J\u200b\nsecond line")
    assert rows(pool_db, "SELECT comment FROM ratings")[0]["comment"] == "fine txet[2J\nsecond line"


def test_uploads_are_capped_and_monitoring_is_off(tiny_models, tmp_path, pool_db):
    with served(config(tiny_models, tmp_path), pool_db) as url:
        big = httpx.post(url + "gradio_api/upload", files={"files": ("x.bin", b"\0" * 10_000)}, timeout=30)
        assert big.status_code >= 400, big.text
        small = httpx.post(url + "gradio_api/upload", files={"files": ("x.txt", b"hi")}, timeout=30)
        assert small.status_code == 200  # Gradio's own route stays, capped
        for path in ("monitoring", "gradio_api/monitoring", "monitoring/summary"):
            assert httpx.get(url + path, timeout=30).status_code in (403, 404)


def test_every_api_function_refuses_an_anonymous_session(tiny_models, tmp_path, pool_db):
    """Raw queue requests to each rating function, with no sign-in and a forged state, store nothing."""
    with served(config(tiny_models, tmp_path), pool_db) as url:
        raw = Raw(url)
        forged = {"rater": "ann", "organiser": True, "pair_id": rows(pool_db, "SELECT id FROM pairs")[0]["id"]}
        for fn, data in (("submit", [forged, *answers()]), ("correct", [forged]), ("next_pair", [forged]),
                         ("skip", [forged, "x"])):
            assert re.search("not signed in|sign in", Raw.error(raw.call(fn, data))), fn
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0
