"""The rater journey through the app's API with gradio_client, against the app launched in the test:
sign in, get a pair, submit, reveal, correction, skip, two raters on one pair, the live tab and results.
Server-side state is per session: one Client is one browser tab."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from apphelpers import POOL_PAIRS, pair_shown, pool_db, pool_template, rows, served, write_config  # noqa: F401
from gradio_client import Client
from gradio_client.exceptions import AppError

from evalkit.rating import roster as raters
from evalkit.config import load_config
from evalkit.task.prompts import CRITERIA
from evalkit.store import open_db
from evalkit.ui.results import PLOT_MARK, PLOTS, TABLES
from evalkit.ui.rate import FORM_KEYS

ROOT = Path(__file__).resolve().parent.parent


class Tab:
    """One browser tab, through gradio_client: calls an endpoint and names its outputs by label."""

    def __init__(self, url: str):
        # a slow answer is not a failure: on two shared cores a cold Gradio call can take over the default 5 s
        self.client = Client(url, verbose=False, httpx_kwargs={"timeout": 120})
        info = self.client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        self.labels = {name: [r["label"] for r in ep["returns"]] for name, ep in info.items()}
        self.params = {name: [p["label"] for p in ep["parameters"]] for name, ep in info.items()}
        # outputs are also named by elem_id: labels follow the rater's language, ids do not
        from gradio_client.utils import SKIP_COMPONENTS

        config = self.client.config
        comps = {c["id"]: c for c in config["components"]}
        shown = {i for i, c in comps.items() if not c.get("skip_api", c["type"] in SKIP_COMPONENTS)}
        self.ids = {"/" + d["api_name"]: [comps[cid].get("props", {}).get("elem_id") for cid in d["outputs"]
                                          if cid in shown] for d in config["dependencies"] if d.get("api_name")}

    def call(self, api: str, *args) -> dict:
        result = self.client.predict(*args, api_name=api)
        result = result if isinstance(result, (list, tuple)) else [result]
        out = {label: _value(v) for label, v in zip(self.labels[api], result, strict=True)}
        return out | {i: _value(v) for i, v in zip(self.ids[api], result, strict=True) if i}

    # name -> personal code, per app: a second tab of the same rater signs in with the code, as a person would. An
    # app is its address and its Blocks' random app_id: a later test's app may get a port an earlier one had, and its
    # database knows none of that app's codes ("that code is not valid" in .ci/run)
    codes: dict = {}

    @property
    def known_codes(self) -> dict:
        """name -> personal code of the raters signed in to this tab's app so far."""
        return self.codes.setdefault((self.client.src, self.client.config.get("app_id")), {})

    def sign_in(self, name: str, passcode: str = "") -> dict:
        known = self.known_codes
        if name in known:
            return self.call("/sign_in", "", "", known[name])
        screen = self.call("/sign_in", name, passcode, "")
        found = re.search(r"`(\d+\.[A-Za-z0-9_-]+)`", screen["status"])
        if found:
            known[name] = found.group(1)
        return screen

    def submit(self, a="pass", b="fail", preference="A", comment="", **override) -> dict:
        form = {f"a_{c}": a for c in CRITERIA} | {f"b_{c}": b for c in CRITERIA}
        form |= {"preference": preference, "comment": comment} | override
        return self.call("/submit", *[form[k] for k in FORM_KEYS])


def _value(v):
    return v.get("value") if isinstance(v, dict) and v.get("__type__") == "update" else v


@pytest.fixture
def cfg(tiny_models, tmp_path):
    return load_config(write_config(tmp_path / "app.toml", tiny_models, ratings_per_pair=2))


def test_rater_journey_submit_reveal_correct_skip(tiny_models, tmp_path, pool_db):
    # one rating a pair: the submission closes the pair, so its reveal is shown at once (evalkit.rating.queue)
    cfg = load_config(write_config(tmp_path / "one.toml", tiny_models, ratings_per_pair=1))
    with served(cfg, pool_db) as url:
        ann = Tab(url)
        # The API names no rater and no pair anywhere: both live in the server-side session.
        assert ann.params["/submit"] == [p for p in ann.params["/submit"] if "rater" not in p.lower()]
        assert len(ann.params["/submit"]) == len(FORM_KEYS)
        screen = ann.sign_in("ann")
        assert "ann" in screen["who"] and f"0 / {POOL_PAIRS}" in screen["who"]
        assert screen["text-a"] and screen["text-b"] and screen["reveal"] == ""
        pair = pair_shown(pool_db, screen["text-a"], screen["text-b"])

        # An incomplete form is refused with a clear message, and nothing is written.
        with pytest.raises(AppError, match="“Maintenance time · 维护时间” has no valid answer"):
            ann.submit(a_schedule=None)
        with pytest.raises(AppError, match="preference"):
            ann.submit(preference=None)
        assert rows(pool_db, "SELECT * FROM ratings") == []

        done = ann.submit(preference="B", comment="B reads better")
        stored = rows(pool_db, "SELECT * FROM ratings")
        assert len(stored) == 1
        r = stored[0]
        assert (r["rater"], r["pair_id"], r["kind"], r["preference"], r["comment"]) == (
            "ann", pair["id"], "rating", "B", "B reads better")
        assert all(r[f"a_{c}"] == "pass" and r[f"b_{c}"] == "fail" for c in CRITERIA)
        ordinary_side = pair["ordinary_side"]
        assert r["preferred_path"] == ("ordinary" if ordinary_side == "B" else "assisted")

        # The reveal arrives with the stored submission: sides bound to paths, seconds, tokens, tokens/s.
        reveal = done["reveal"]
        a_path = "ordinary" if ordinary_side == "A" else "assisted"
        b_path = "assisted" if ordinary_side == "A" else "ordinary"
        # her language: 中文, the path names kept in the table and glossed under it (so it fits a phone)
        assert f"| A | {a_path} |" in reveal and f"| B | {b_path} |" in reveal
        assert "assisted：辅助生成" in reveal and "ordinary：普通生成" in reveal
        gens = {g["path"]: g for g in rows(pool_db, "SELECT * FROM generations WHERE id IN (?, ?)",
                                           [pair["a_generation_id"], pair["b_generation_id"]])}
        for g in gens.values():
            assert f"{g['generate_seconds']:.3f} | {g['new_tokens']} |" in reveal
        from evalkit.generation.speed import pair_speedup

        sp = pair_speedup(dict(gens["ordinary"], seconds=gens["ordinary"]["generate_seconds"]),
                          dict(gens["assisted"], seconds=gens["assisted"]["generate_seconds"]), cfg.bench.length_tolerance)
        assert (f"这一对的加速比：{sp:.2f}×" if sp is not None else "这一对没有加速比") in reveal
        assert f"1 / {POOL_PAIRS}" in done["who"]

        # Locked: a second submit is refused; Correct unlocks with the stored answers, and saving adds a row.
        with pytest.raises(AppError, match="locked"):
            ann.submit()
        unlocked = ann.call("/correct")
        assert unlocked[f"r-a_{CRITERIA[0]}"] == "pass" and unlocked["r-preference"] == "B"
        fixed = ann.submit(a="pass", b="unsure", preference="tie", comment="on reflection, a tie")
        assert "计分仍以你的盲评为准" in fixed["status"]  # said in the rater's language (Chinese by default)
        history = rows(pool_db, "SELECT * FROM ratings ORDER BY id")
        assert len(history) == 2 and history[1]["supersedes"] == history[0]["id"]
        # The correction came after the reveal: stored and marked, but the blind rating is the one that counts.
        assert [h["blind"] for h in history] == [1, 0] and history[1]["preference"] == "tie"
        current = rows(pool_db, "SELECT * FROM current_ratings")
        assert len(current) == 1 and current[0]["id"] == history[0]["id"] and current[0]["preference"] == "B"
        # Correcting again starts from the newest version, and still does not count.
        assert ann.call("/correct")["r-preference"] == "tie"
        ann.submit(a="fail", b="fail", preference="A")
        assert [r["id"] for r in rows(pool_db, "SELECT * FROM current_ratings")] == [history[0]["id"]]

        # Next pair; skipping needs a reason, and the reason is stored.
        nxt = ann.call("/next_pair")
        assert nxt["reveal"] == "" and f"1 / {POOL_PAIRS}" in nxt["who"]
        second = pair_shown(pool_db, nxt["text-a"], nxt["text-b"])
        assert second["id"] != pair["id"]
        with pytest.raises(AppError, match="a skip needs a reason"):
            ann.call("/skip", "  ")
        after = ann.call("/skip", "cannot judge: both outputs are noise")
        skips = rows(pool_db, "SELECT * FROM ratings WHERE kind = 'skip'")
        assert [(s["rater"], s["pair_id"], s["skip_reason"]) for s in skips] == [
            ("ann", second["id"], "cannot judge: both outputs are noise")]
        assert f"2 / {POOL_PAIRS}" in after["who"]
        third = pair_shown(pool_db, after["text-a"], after["text-b"])
        assert third["id"] not in (pair["id"], second["id"])


def test_submit_and_next_pair_set_every_output_they_declare(cfg, pool_db):
    """A declared output left unset (gr.skip) costs the server a component rebuild on every event, so the two
    events every rating goes through declare only what they change (evalkit/ui/rate.py)."""
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        tab.sign_in("ann")
        form = {k: ("pass" if k.startswith("a_") else "fail") for k in FORM_KEYS} | {"preference": "A", "comment": ""}
        for api, args in (("/submit", [form[k] for k in FORM_KEYS]), ("/next_pair", [])):
            out = tab.client.predict(*args, api_name=api)
            unset = [label for label, v in zip(tab.labels[api], out, strict=True) if v == {"__type__": "update"}]
            assert unset == [], f"{api} leaves {unset} unset"


def test_two_raters_share_a_pair_until_it_is_full(cfg, pool_db):
    keep = rows(pool_db, "SELECT id FROM pairs ORDER BY id LIMIT 1")[0]["id"]
    db_rows = rows(pool_db, "SELECT id FROM pairs WHERE id != ?", [keep])
    import sqlite3

    with sqlite3.connect(pool_db) as conn:  # a one-pair pool: every rater meets the same pair
        conn.executemany("DELETE FROM pairs WHERE id = ?", [(r["id"],) for r in db_rows])
    with served(cfg, pool_db) as url:
        ann, bob, cat = Tab(url), Tab(url), Tab(url)
        ann_again = Tab(url)  # ann in a second browser tab
        a_screen, b_screen = ann.sign_in("ann"), bob.sign_in("bob")
        ann_again.sign_in("ann")
        assert (a_screen["text-a"], a_screen["text-b"]) == (b_screen["text-a"], b_screen["text-b"])
        ann.submit(preference="A")
        refused = ann_again.submit(preference="B")  # her second tab: told so, with Correct on screen (not an Error)
        assert "另一个窗口" in refused["status"] and keep not in str(refused)  # the pair id stays on the server
        bob.submit(preference="B", b="pass")
        got = rows(pool_db, "SELECT rater, pair_id, preference FROM current_ratings ORDER BY rater")
        assert got == [{"rater": "ann", "pair_id": keep, "preference": "A"},
                       {"rater": "bob", "pair_id": keep, "preference": "B"}]
        # ratings_per_pair = 2: the pair is full, so a third rater has nothing left; so do ann and bob.
        c_screen = cat.sign_in("cat")
        # (rater audit F13: she rated nothing, so she is not thanked for finishing her work)
        assert "目前没有需要你评分的内容" in c_screen["done"] and "全部完成" not in c_screen["done"]
        assert "0 / 0" in c_screen["who"]
        assert "全部完成" in ann.call("/next_pair")["done"]
        with pytest.raises(AppError, match="no pair on screen"):
            cat.submit()
        assert len(rows(pool_db, "SELECT * FROM ratings")) == 2


@pytest.mark.parametrize("where, name", [("gradio.state_holder.StateHolder", "__getitem__"),
                                         ("gradio.state_holder.SessionState", "get")])
def test_a_gradio_without_the_internals_the_rate_tab_reads_is_refused_at_start_up(cfg, pool_db, monkeypatch,
                                                                                   where, name):
    """The Rate tab reads Gradio's private record of a page's session (live_session): Gradio has no public API for
    it. On a Gradio without it, it reads as unknown, and a Submit answering after a language switch spoke the old
    language, with nothing said anywhere. The app now refuses to start, naming what is missing and how to fix it;
    the installed Gradio starts."""
    import importlib

    from evalkit.errors import EvalkitError
    from evalkit.ui import build_app

    build_app(cfg, pool_db)  # the Gradio of constraints.txt has them
    module, cls = where.rsplit(".", 1)
    monkeypatch.delattr(getattr(importlib.import_module(module), cls), name)
    with pytest.raises(EvalkitError) as e:
        build_app(cfg, pool_db)
    assert f"{where}.{name}" in e.value.what
    assert "constraints.txt" in e.value.fix


def test_only_a_space_needs_gradio_s_private_record_of_the_event_s_request(cfg, pool_db, monkeypatch):
    """The Rate tab's handlers take the page's request from Gradio's public gr.Request; only a Space's session check
    (hubcheck.event_request, in every event's require_rater) still reads the private LocalContext.request. A local app
    starts without it; a Space's is refused at start-up, naming it."""
    from gradio.context import LocalContext

    from evalkit.errors import EvalkitError
    from evalkit.ui import build_app
    from evalkit.ui.rate import require_gradio_internals

    monkeypatch.delattr(LocalContext, "request")
    build_app(cfg, pool_db)
    with pytest.raises(EvalkitError) as e:
        require_gradio_internals(space=True)
    assert "gradio.context.LocalContext.request" in e.value.what
    assert "constraints.txt" in e.value.fix


def test_the_installed_gradio_still_keeps_the_queue_record_a_reload_waits_on(cfg, pool_db, monkeypatch):
    """A reload waits while its page's Submit is still in Gradio's queue (rate.submit_queued), and Gradio has no public
    view of its queue: its bookkeeping is read (Blocks._queue.event_ids_to_events, each event's session_hash and
    fn.api_name). A Gradio that changes it would leave reloads silently not waiting; this fails loudly instead, on a
    real Submit held while it runs: the record finds it under its page, and under no other."""
    import threading

    import evalkit.ui.rate as rate
    from apphelpers import held_writes
    from evalkit.ui import build_app
    from evalkit.ui.server import serving

    entered, released = held_writes(monkeypatch)
    demo = build_app(cfg, pool_db)
    events = getattr(getattr(demo, "_queue", None), "event_ids_to_events", None)
    assert isinstance(events, dict), "this Gradio keeps no Blocks._queue.event_ids_to_events: see rate.submit_queued"
    with serving(demo) as url:
        tab = Tab(url)
        tab.sign_in("ann")
        sent = threading.Thread(target=tab.submit, daemon=True)
        sent.start()
        try:
            assert entered.wait(60)
            assert rate.submit_queued(demo, tab.client.session_hash)
            assert not rate.submit_queued(demo, "another page")
        finally:
            released.set()
            sent.join(60)
    assert rows(pool_db, "SELECT rater FROM ratings") == [{"rater": "ann"}]


def test_sign_in_is_required_and_passcodes_are_checked(tiny_models, tmp_path, pool_db):
    cfg = load_config(write_config(tmp_path / "pc.toml", tiny_models, passcodes=("s3cret",)))
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        with pytest.raises(AppError, match="not signed in"):
            tab.submit()
        with pytest.raises(AppError, match="passcode is not right"):
            tab.sign_in("eve", "guess")
        with pytest.raises(AppError, match="rater name is empty"):
            tab.sign_in("   ", "s3cret")
        with pytest.raises(AppError, match="not signed in"):
            tab.call("/skip", "no")
        assert "eve" in tab.sign_in("eve", "s3cret")["who"]
    assert rows(pool_db, "SELECT * FROM ratings") == []


def test_on_a_space_the_rater_comes_from_oauth_only(cfg, pool_db, monkeypatch):
    """Built for a Space, sign-in runs on page load, takes no browser input but the server-side session, and
    reads the rater from the OAuth profile Gradio injects. Off a Space, Gradio mocks the OAuth routes with the
    machine's Hugging Face login (a network call); the test stands in for that mock, offline."""
    import gradio as gr
    import gradio.oauth
    from gradio.helpers import special_args

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)

    from evalkit.ui import build_app
    from evalkit.ui.session import Session

    demo = build_app(cfg, pool_db, space=True)
    assert any(isinstance(b, gr.LoginButton) for b in demo.blocks.values())
    assert not any(isinstance(b, gr.Textbox) and "name" in str(b.label).lower() for b in demo.blocks.values())
    (sign_in,) = [f for f in demo.fns.values() if f.api_name == "sign_in"]
    assert [type(b) for b in sign_in.inputs] == [gr.State]
    first = sign_in  # on page load: after the load's wait for a submission still queued (rate.await_submission)
    while first.trigger_after is not None:
        first = demo.fns[first.trigger_after]
    assert any(t[1] == "load" for t in first.targets)
    injected, *_ = special_args(sign_in.fn, [Session()], request=None)  # Gradio fills in the profile (and request)
    assert len(injected) == 3 and injected[1] is None
    assert "Sign in with your Hugging Face account" in next(iter(
        v for k, v in sign_in.fn(*injected).items() if getattr(k, "label", "") == "status"))
    profile = gr.OAuthProfile({"name": "Hugging Ann", "preferred_username": "hf-ann", "profile": "", "picture": ""})
    screen = sign_in.fn(Session(), profile)
    (session,) = [v for k, v in screen.items() if isinstance(k, gr.State)]
    assert session.rater == "hf-ann" and session.pair_id is not None


def test_allow_lists_by_name_and_by_hub_organisation(tiny_models, tmp_path, pool_db, monkeypatch):
    import gradio as gr
    import gradio.oauth

    from evalkit.ui import build_app
    from evalkit.ui.session import Session

    cfg = load_config(write_config(tmp_path / "allow.toml", tiny_models, allowed_raters=["ann"], allowed_orgs=["acme"]))
    with served(cfg, pool_db) as url:
        with pytest.raises(AppError, match="not on this study's allow-list"):
            Tab(url).sign_in("mallory")
        assert "ann" in Tab(url).sign_in("ann")["who"]

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)
    (sign_in,) = [f for f in build_app(cfg, pool_db, space=True).fns.values() if f.api_name == "sign_in"]

    def profile(name, orgs):
        return gr.OAuthProfile({"name": name, "preferred_username": name, "profile": "", "picture": "",
                                "orgs": [{"preferred_username": o, "name": o.title()} for o in orgs]})

    with pytest.raises(gr.Error, match="not on this study's allow-list"):
        sign_in.fn(Session(), profile("mallory", ["evil-corp"]))
    screen = sign_in.fn(Session(), profile("bea", ["acme"]))
    assert [v.rater for k, v in screen.items() if isinstance(k, gr.State)] == ["bea"]


def test_an_allow_list_never_locks_out_the_study_s_organiser(tiny_models, tmp_path, pool_db, monkeypatch):
    """Space audit, 2026-12-04: with `allowed_raters` set, the organiser named in `app.organisers` was refused at
    sign-in ("not on this study's allow-list ... ask the study owner": herself), and had no Results. The allow-list
    says who may rate; an organiser, on a Space by app.organisers and locally by `raters add --organiser`, passes."""
    import gradio as gr
    import gradio.oauth

    from evalkit.rating import roster
    from evalkit.store import open_db
    from evalkit.ui import build_app
    from evalkit.ui.session import Session

    cfg = load_config(write_config(tmp_path / "allow.toml", tiny_models, allowed_raters=["rita"],
                                   organisers=["olga"]))
    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)
    (sign_in,) = [f for f in build_app(cfg, pool_db, space=True).fns.values() if f.api_name == "sign_in"]

    def profile(name):
        return gr.OAuthProfile({"name": name, "preferred_username": name, "profile": "", "picture": "", "orgs": []})

    screen = sign_in.fn(Session(), profile("olga"))
    (state,) = [v for k, v in screen.items() if isinstance(k, gr.State)]
    assert state.rater == "olga" and state.organiser
    with pytest.raises(gr.Error, match="not on this study's allow-list"):
        sign_in.fn(Session(), profile("mallory"))  # the list still holds for everyone else
    # locally: an organiser invited by code signs in with it; a rater invited by code but not listed does not
    db = open_db(pool_db)
    olga, ted = roster.add(db, "olga-local", organiser=True).code, roster.add(db, "ted").code
    db.conn.close()
    with served(cfg, pool_db) as url:
        assert "olga-local" in Tab(url).call("/sign_in", "", "", olga)["who"]
        with pytest.raises(AppError, match="not on this study's allow-list"):
            Tab(url).call("/sign_in", "", "", ted)


def test_submissions_are_rate_limited_per_rater(tiny_models, tmp_path, pool_db):
    cfg = load_config(write_config(tmp_path / "limit.toml", tiny_models, max_submissions_per_minute=1))
    with served(cfg, pool_db) as url:
        ann, bob = Tab(url), Tab(url)
        ann.sign_in("ann")
        bob.sign_in("bob")
        ann.submit()
        ann.call("/next_pair")
        with pytest.raises(AppError, match="too many submissions from 'ann'"):
            ann.call("/skip", "too fast")
        bob.submit()  # the limit is per rater
    assert [r["rater"] for r in rows(pool_db, "SELECT rater FROM ratings ORDER BY id")] == ["ann", "bob"]


def test_live_runs_are_stored_as_live_and_never_paired(cfg, pool_db):
    # The tiny models are so peaked that at the pool's temperature a live sample can repeat a pooled
    # output exactly, and the guard then withholds it (tested in test_security). A flat distribution
    # makes this test about storage, not about that chance.
    cfg.decoding.temperature = 5.0
    pairs_before = rows(pool_db, "SELECT COUNT(*) AS n FROM pairs")[0]["n"]
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        out = tab.call("/live", "writing-01", "")
        assert "| ordinary | ok |" in out["timing table"] and "| assisted | ok |" in out["timing table"]
        texts = [g["text"] for g in rows(pool_db, "SELECT text FROM generations WHERE live = 1 ORDER BY id")]
        assert [out["Ordinary — target alone · 普通：仅目标模型"],
                out["Assisted — target verifies the draft · 辅助：目标模型验证草稿模型的提议"]] == texts
        out = tab.call("/live", "writing-02", "周五上午系统升级，期间只读。")
    live = rows(pool_db, "SELECT g.path, g.prompt_id, g.live, e.kind FROM generations g "
                         "JOIN experiments e ON e.id = g.experiment_id WHERE e.kind = 'live' ORDER BY g.id")
    assert [(g["path"], g["prompt_id"], g["live"]) for g in live] == [  # in the order they ran, which alternates
        ("ordinary", "writing-01", 1), ("assisted", "writing-01", 1),
        ("assisted", "live-custom", 1), ("ordinary", "live-custom", 1)]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM pairs")[0]["n"] == pairs_before
    note = rows(pool_db, "SELECT note FROM experiments WHERE kind = 'live' ORDER BY id DESC LIMIT 1")[0]["note"]
    assert "周五上午系统升级" in note


def test_results_tab_counts(cfg, pool_db):
    cfg.app.organisers = ["boss"]
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        tab.sign_in("ann")
        tab.submit()
        out = tab.call("/results")
        # ann still has blind pairs to rate: counts only, no aggregates (they could hint at the sides)
        assert "评完你自己的评分对后" in out["verdict"] and out[TABLES["pass_rates"]]["data"] == []  # her language: 中文
        assert "你还有 5 对要评" in out["verdict"] and "| 评分对总数 |" in out["counts"]
        assert "ordinary" not in out["counts"] and "assisted" not in out["counts"]  # nothing per path
        # locally a name in app.organisers is no credential: "boss" typed in is a plain rater
        boss = Tab(url)
        assert "组织者" not in boss.sign_in("boss")["who"]
        assert boss.call("/results")[TABLES["pass_rates"]]["data"] == []
        # organiser rights come from the registry: `evalkit raters add olga --organiser` and her code
        db = open_db(pool_db)
        code = raters.add(db, "olga", organiser=True).code
        db.conn.close()
        olga = Tab(url)
        assert "组织者" in olga.call("/sign_in", "", "", code)["who"]
        out = olga.call("/results")
        assert "未能同步到 Hub" not in out["verdict"]  # no sync ran: nothing to warn of
        # on a Space whose pushes fail (the sync's status beside the database), the organiser is told; nobody else
        from evalkit.publish.sync import status_file

        status_file(pool_db).write_text(json.dumps({"repo": "org/r", "last_ok_at": None, "failures": 2,
                                                    "failing_since": "2026-12-04T09:00:00+00:00",
                                                    "error": "HfHubHTTPError: 403 Forbidden"}))
        assert "未能同步到 Hub" in olga.call("/results")["verdict"]
        assert "未能同步到 Hub" not in tab.call("/results")["verdict"]
        status_file(pool_db).unlink()
    assert f"| 评分对总数 | {POOL_PAIRS} |" in out["counts"] and "| 当前评分 | 1 |" in out["counts"]
    # an organiser sees the aggregation: verdict with its conditions, the tables, and the plots
    from evalkit.aggregate import aggregate

    # the tab's verdict is the library's on the same database (interim: DROP only on speed or memory)
    assert f"Verdict: **{aggregate(open_db(pool_db)).verdict.decision}**" in out["verdict"]
    # in her language first (中文 by default), written from the same verdict; the English original below it
    zh, original = out["verdict"].split("#### 详细说明（英文原文）")
    assert "### 结论：**" in zh and "**加速比**" in zh and "Verdict:" in original
    assert all(f"**{c}**" in out["verdict"] for c in ("planned sample", "speed-up", "fidelity", "memory"))
    assert "interim look, not a decision" in out["verdict"]  # one rating of a small pool is an interim look
    pass_rates = out[TABLES["pass_rates"]]
    # her language: each column by its aggregate name (as in the report and the export) and a gloss
    assert pass_rates["headers"][:3] == ["prompt_id · 题目", "path · 路径", "criterion · 标准"]
    assert len(pass_rates["data"]) > 0
    assert out[TABLES["speedup"]]["data"][0][0] == "all"
    assert all(out[name] is not None for name in (PLOTS["speedup"] + PLOT_MARK, PLOTS["pass_rates"] + PLOT_MARK))


def test_python_app_py_serves_the_app(cfg, pool_db, tmp_path):
    port = __import__("apphelpers").free_port()
    env = dict(os.environ, EVALKIT_DB=str(tmp_path / "unused.db"))
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "app.py"), "--config", cfg.source, "--db", str(pool_db),
         "--host", "127.0.0.1", "--port", str(port), "--no-prepare"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    assert r.status == 200 and "evalkit" in r.read().decode()
                    break
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()
                assert time.monotonic() < deadline, "app.py did not start serving in 90 s"
                time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_app_py_reports_a_bad_config_in_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("nonsense_key = 1\n")
    done = subprocess.run([sys.executable, str(ROOT / "app.py"), "--config", str(bad), "--no-prepare"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Error:") and "unknown config key" in done.stderr and "Traceback" not in done.stderr


def test_app_py_help_shows_a_usage_line_that_works_as_typed(tmp_path):
    """Audit, 2026-12-02: `python app.py --help` printed `Usage: app.py serve [OPTIONS]`, and typed so it failed
    (`Got unexpected extra argument (serve)`). Here the usage line's words, with options for [OPTIONS], are run."""
    helped = subprocess.run([sys.executable, str(ROOT / "app.py"), "--help"], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    usage = helped.stdout.splitlines()[0]
    assert usage == "Usage: app.py [OPTIONS]", usage
    bad = tmp_path / "bad.toml"
    bad.write_text("nonsense_key = 1\n")
    words = [w for word in usage.split()[2:]
             for w in (["--config", str(bad), "--no-prepare"] if word == "[OPTIONS]" else [word])]
    done = subprocess.run([sys.executable, str(ROOT / "app.py"), *words], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 1 and "unknown config key" in done.stderr, done.stderr  # parsed: the config was read


def test_run_history_is_off_and_live_runs_have_their_own_queue(cfg, pool_db):
    import json

    with served(cfg, pool_db) as url:
        with urllib.request.urlopen(url + "config", timeout=30) as r:
            config = json.loads(r.read())
        tab = Tab(url)
    assert config["run_history"] is False
    assert "runs" not in config.get("footer_links", [])
    from evalkit.ui import build_app

    fns = {f.api_name: f for f in build_app(cfg, pool_db).fns.values() if f.api_name}
    assert (fns["live"].concurrency_limit, fns["live"].concurrency_id) == (1, "live")
    assert all(fns[n].concurrency_id != "live" for n in ("sign_in", "submit", "correct", "skip", "next_pair"))
    assert set(tab.labels) >= {"/sign_in", "/submit", "/correct", "/skip", "/next_pair", "/live", "/results"}


def test_a_hub_account_never_takes_over_a_rater_invited_by_code(cfg, pool_db, monkeypatch):
    """Audit, 2026-12-02: a database built locally, with a rater 'ann' invited by code who had rated, was served on a
    Space; a different person whose Hub username is 'ann' signed in as her: her progress, her reveals, and ratings
    stored under her name. A Hub name that is (or looks like) an invited rater's is refused."""
    import gradio as gr
    import gradio.oauth

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)
    from evalkit.ui import build_app
    from evalkit.ui.session import Session

    db = open_db(pool_db)
    raters.add(db, "ann")
    db.conn.close()
    (sign_in,) = [f for f in build_app(cfg, pool_db, space=True).fns.values() if f.api_name == "sign_in"]
    for username in ("ann", "ANN"):
        profile = gr.OAuthProfile({"name": "Ann", "preferred_username": username, "profile": "", "picture": ""})
        with pytest.raises(gr.Error, match="has the name of a rater invited to this study by personal code"):
            sign_in.fn(Session(), profile)
    profile = gr.OAuthProfile({"name": "Bea", "preferred_username": "bea", "profile": "", "picture": ""})
    (session,) = [v for k, v in sign_in.fn(Session(), profile).items() if isinstance(k, gr.State)]
    assert session.rater == "bea"


def test_the_organiser_who_piloted_locally_signs_in_on_the_space_under_her_own_name(tiny_models, tmp_path, pool_db,
                                                                                     monkeypatch):
    """Space audit F8: the local app asks for an organiser first (`raters add olga --organiser`); olga piloted, uploaded
    the database and put her Hub name in app.organisers, and her Hub sign-in was refused as "a rater invited by code"
    and told to "ask the study's organiser". The database's own organiser under the exact name listed in
    app.organisers is her, by her config's word; an invited rater's name in app.organisers is still refused, and
    says what to do."""
    import gradio as gr
    import gradio.oauth

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)
    from evalkit.ui import build_app, hubcheck
    from evalkit.ui.session import Session

    cfg = load_config(write_config(tmp_path / "space.toml", tiny_models, organisers=["olga", "ann"]))
    db = open_db(pool_db)
    raters.add(db, "olga", organiser=True)
    raters.add(db, "ann")
    raters.add(db, "bea")
    db.conn.close()
    (sign_in,) = [f for f in build_app(cfg, pool_db, space=True).fns.values() if f.api_name == "sign_in"]

    def profile(username):
        return gr.OAuthProfile({"name": username, "preferred_username": username, "profile": "", "picture": ""})

    (session,) = [v for k, v in sign_in.fn(Session(), profile("olga")).items() if isinstance(k, gr.State)]
    assert session.rater == "olga" and session.organiser
    with pytest.raises(gr.Error, match="is one of app.organisers, but .* list a Hub account of another name"):
        sign_in.fn(Session(), profile("ann"))
    # The Hub tells usernames apart only beyond case: "OLGA" is the account listed as "olga", so she is the database's
    # organiser, under the name it knows her by (her pilot's ratings and the Space's stay one rater's)
    (session,) = [v for k, v in sign_in.fn(Session(), profile("OLGA")).items() if isinstance(k, gr.State)]
    assert session.rater == "olga" and session.organiser
    with pytest.raises(gr.Error, match="has the name of a rater invited"):
        sign_in.fn(Session(), profile("BEA"))  # an invited rater's name (in any case), not listed, is not hers


def test_the_app_stores_the_pseudonyms_secret_so_every_copy_of_its_database_exports_the_same_names(cfg, pool_db,
                                                                                                   tmp_path):
    """Space audit F5: on a Space every export is of a copy downloaded from the sync repo, and the secret behind the
    raters' pseudonyms was drawn by each copy's first export: one study's exports named its raters differently. The
    app stores it when it starts, so the sync carries it to every copy."""
    import shutil

    from evalkit.publish.scrub import pseudonyms
    from evalkit.store.raters import stored_export_salt
    from evalkit.ui import build_app

    db = open_db(pool_db)
    assert stored_export_salt(db) is None
    db.conn.close()
    build_app(cfg, pool_db)
    names = []
    for i in range(2):  # two downloads of it, each exported
        copy = tmp_path / f"download{i}.db"
        shutil.copy(pool_db, copy)
        db = open_db(copy)
        names.append(pseudonyms(["ann", "bob"], db))
        db.conn.close()
    assert names[0] == names[1]


def test_a_rater_removed_from_the_allowed_organisation_stops_rating_within_the_recheck(tiny_models, tmp_path, pool_db,
                                                                                      monkeypatch):
    """Audit, 2026-12-03: a rater let in by app.allowed_orgs kept her open tab for the OAuth token's 8 hours after the
    organiser removed her. The Hub is now asked again with her token (evalkit.ui.hubcheck.userinfo, substituted
    here: the Hub cannot be reached from the tests) at most every RECHECK_SECONDS; a removal, or a token the Hub
    rejects, ends the session at the next event after that and nothing is stored; an unreachable Hub leaves the last
    answer standing, asked again after RETRY_SECONDS; a rater allowed by name never costs a Hub call."""
    from types import SimpleNamespace

    import gradio as gr
    import gradio.oauth

    from evalkit.ui import build_app, hubcheck
    from evalkit.ui.session import Session

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)
    clock = [1000.0]
    monkeypatch.setattr(hubcheck, "now", lambda: clock[0])
    # the Hub's answers are kept per process (by token and allow-list): this test's own, not those an earlier run of
    # it in the worker left (its "no org" for tok-bea then refused her first sign-in here)
    monkeypatch.setattr(hubcheck, "_memory", hubcheck._Memory())
    hub = {"tok-bea": ["acme"], "tok-cal": ["acme"], "tok-dan": []}  # token -> her organisations at the Hub now
    calls = []

    def userinfo(token):
        calls.append(token)
        if token not in hub:
            raise hubcheck.TokenRejected("401")
        if hub[token] is None:
            raise OSError("the Hub is unreachable")
        return {"preferred_username": token[4:], "orgs": [{"preferred_username": o} for o in hub[token]]}

    monkeypatch.setattr(hubcheck, "userinfo", userinfo)
    cfg = load_config(write_config(tmp_path / "orgs.toml", tiny_models, ratings_per_pair=3, allowed_orgs=["acme"],
                                   allowed_raters=["dan"]))
    fns = {f.api_name: f for f in build_app(cfg, pool_db, space=True).fns.values() if f.api_name}

    def browser(name):  # the request of an event from her browser: its sign-in cookie holds her token
        return SimpleNamespace(session={"oauth_info": {"access_token": f"tok-{name}", "expires_at": 10**10}})

    def sign_in(name, orgs=None):  # orgs: the profile in the sign-in's cookie (the Hub's now, by default)
        orgs = hub[f"tok-{name}"] if orgs is None else orgs
        profile = gr.OAuthProfile({"name": name, "preferred_username": name, "profile": "", "picture": "",
                                   "orgs": [{"preferred_username": o} for o in orgs]})
        (session,) = [v for k, v in fns["sign_in"].fn(Session(), profile, browser(name)).items()
                      if isinstance(k, gr.State)]
        assert session.hub_token == f"tok-{name}" and f"tok-{name}" not in repr(session)  # never in a log line
        return session

    # each event comes from the rater's own browser (Gradio hands hubcheck the event's request; the cookie check
    # itself is tests/test_security.py::test_signing_out_of_the_hub_in_one_tab_ends_the_others)
    event = [None]
    monkeypatch.setattr(hubcheck, "event_request", lambda: event[0])

    def skip(session):
        event[0] = browser(session.rater)
        out = fns["skip"].fn(session, "cannot judge it")
        return next(v for k, v in out.items() if isinstance(k, gr.State))

    def skips():
        return rows(pool_db, "SELECT COUNT(*) AS n FROM ratings WHERE kind = 'skip'")[0]["n"]

    bea, cal, dan = sign_in("bea"), sign_in("cal"), sign_in("dan")
    hub["tok-bea"] = []  # the organiser removes her from acme
    del hub["tok-cal"]  # cal's token is revoked
    bea = skip(bea)  # within the recheck: the sign-in's answer stands, no Hub call
    cal = skip(cal)
    assert calls == [] and skips() == 2
    clock[0] += hubcheck.RECHECK_SECONDS
    with pytest.raises(gr.Error, match="no longer in an organisation allowed to rate"):
        bea = skip(bea)
    with pytest.raises(gr.Error, match="Hugging Face sign-in is no longer valid"):
        cal = skip(cal)
    event[0] = browser("bea")
    with pytest.raises(gr.Error, match="no longer in an organisation allowed to rate"):
        fns["next_pair"].fn(bea)  # every event
    # a reload signs in from the cookie's profile, taken at the Hub's sign-in and still listing acme: the Hub's
    # answer since stands
    with pytest.raises(gr.Error, match="no longer in an organisation allowed to rate"):
        sign_in("bea", orgs=["acme"])
    assert skips() == 2 and calls == ["tok-bea", "tok-cal"]  # nothing stored; the Hub asked once each
    dan = skip(dan)  # allowed by name: her organisations cannot change that
    assert calls == ["tok-bea", "tok-cal"] and skips() == 3

    # the Hub unreachable: the last answer stands and is asked again after RETRY_SECONDS, not at every event
    hub["tok-eve"] = ["acme"]
    eve = sign_in("eve")
    hub["tok-eve"] = None
    clock[0] += hubcheck.RECHECK_SECONDS
    eve = skip(eve)
    eve = skip(eve)
    assert calls[-1:] == ["tok-eve"] and calls.count("tok-eve") == 1 and skips() == 5
    hub["tok-eve"] = []  # reachable again, and she was removed meanwhile
    clock[0] += hubcheck.RETRY_SECONDS
    with pytest.raises(gr.Error, match="no longer in an organisation allowed to rate"):
        eve = skip(eve)
    assert skips() == 5


def test_the_hub_recheck_asks_the_userinfo_endpoint_with_her_token(monkeypatch):
    """The real client (the default): the Hub's OpenID userinfo, her token as a bearer, a 401 as a rejected token,
    anything else that fails as an error (which leaves the last answer standing); here the HTTP session is substituted."""
    import huggingface_hub.utils

    from evalkit.ui import hubcheck

    sent = []

    class Response:
        def __init__(self, status, body):
            self.status_code, self.body = status, body

        def json(self):
            return self.body

        def raise_for_status(self):
            if self.status_code >= 400:
                raise OSError(f"HTTP {self.status_code}")

    answers = iter([Response(200, {"preferred_username": "bea", "orgs": [{"preferred_username": "acme"}, {"name": "x"}]}),
                    Response(401, {}), Response(503, {})])

    class HTTP:
        def get(self, url, headers, timeout):
            sent.append((url, headers["Authorization"]))
            return next(answers)

    monkeypatch.setattr(huggingface_hub.utils, "get_session", lambda: HTTP())
    assert hubcheck.orgs_of(hubcheck.userinfo("tok")) == ["acme", "x"]
    with pytest.raises(hubcheck.TokenRejected):
        hubcheck.userinfo("tok")
    with pytest.raises(OSError, match="503"):
        hubcheck.userinfo("tok")
    assert all(url.endswith("/oauth/userinfo") and auth == "Bearer tok" for url, auth in sent) and len(sent) == 3


def test_a_space_is_a_space_only_as_gradio_decides_it(monkeypatch):
    """Audit, 2026-12-02: evalkit took SPACE_ID alone for a Space, where Gradio installs its real OAuth only with
    SYSTEM=spaces too; in between, Gradio's mocked OAuth (a cookie key anyone can compute) made anyone an organiser."""
    from gradio.utils import get_space

    from evalkit.locations import on_space

    monkeypatch.setenv("SPACE_ID", "org/evalkit")
    monkeypatch.delenv("SYSTEM", raising=False)
    assert not on_space() and get_space() is None
    monkeypatch.setenv("SYSTEM", "spaces")
    assert on_space() and get_space() == "org/evalkit"


def test_a_hub_sign_in_ends_with_its_token(cfg, pool_db, monkeypatch):
    """Audit, 2026-12-02: the Hub sign-in was read at page load only, and the tab kept rating after the token had
    expired (or the rater signed out). The session now ends with the token: no event is served after it."""
    import time
    from types import SimpleNamespace

    import gradio as gr
    import gradio.oauth

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)
    from evalkit.ui import build_app
    from evalkit.ui.session import Session

    demo = build_app(cfg, pool_db, space=True)
    fns = {f.api_name: f for f in demo.fns.values() if f.api_name}
    profile = gr.OAuthProfile({"name": "Bea", "preferred_username": "bea", "profile": "", "picture": ""})
    request = SimpleNamespace(session={"oauth_info": {"expires_at": int(time.time()) + 60}})
    (session,) = [v for k, v in fns["sign_in"].fn(Session(), profile, request).items() if isinstance(k, gr.State)]
    assert session.expires_at is not None
    with pytest.raises(gr.Error, match="your Hugging Face sign-in has expired"):
        fns["skip"].fn(replace(session, expires_at=time.time() - 1), "cannot judge it")
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0  # nothing stored
    assert any(isinstance(k, gr.State) for k in fns["skip"].fn(session, "cannot judge it"))  # still valid: served
    assert rows(pool_db, "SELECT kind FROM ratings") == [{"kind": "skip"}]


def test_a_space_open_to_any_hub_account_says_so_to_its_organiser_and_in_its_log(tiny_models, tmp_path, pool_db,
                                                                                  monkeypatch):
    """Space audit, 2026-12-04: with the shipped config (no allow-list) any Hugging Face account that found the Space
    could rate, its ratings counted, and nothing said so: the local warning was skipped on a Space. The start's log
    and the organisers' Results tab say it until an allow-list is set."""
    import gradio.oauth

    from evalkit.ui import build_app
    from evalkit.ui.server import space_hint
    from evalkit.ui.session import Session

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)

    def verdict_for(cfg, organiser=True):
        app = build_app(cfg, pool_db, space=True)
        (results,) = [f for f in app.fns.values() if f.api_name == "results"]
        out = results.fn(Session(rater="olga", organiser=organiser, lang="en"))
        return next(v for k, v in out.items() if getattr(k, "label", None) == "verdict")

    open_cfg = load_config(write_config(tmp_path / "open.toml", tiny_models, organisers=["olga"]))
    assert "Any Hugging Face account may rate here" in verdict_for(open_cfg)
    assert "any Hugging Face account that opens this Space may rate" in space_hint(open_cfg)
    listed = load_config(write_config(tmp_path / "listed.toml", tiny_models, organisers=["olga"],
                                      allowed_raters=["rita"]))
    assert "Any Hugging Face account" not in verdict_for(listed) and space_hint(listed) == ""
    assert "app.organisers" in space_hint(load_config(write_config(tmp_path / "none.toml", tiny_models,
                                                                   allowed_orgs=["acme"])))


def test_on_a_space_the_rate_tab_signs_in_by_itself_once_the_pairs_are_ready(tiny_models, tmp_path, pool_db,
                                                                              monkeypatch):
    """Space audit, 2026-12-04: a rater who arrived while the pool was being prepared read "reload this page when it
    says they are ready" beside a panel promising the tab would open by itself; when the pool was ready the panel
    went and nothing else happened, the stale line left. The poll now signs her in with her Hugging Face sign-in."""
    import gradio as gr
    import gradio.oauth

    from evalkit.ui import build_app
    from evalkit.progress import Snapshot
    from evalkit.ui.session import Session

    class Preparing:  # a preparation the test finishes
        ready = False

        def snapshot(self):
            return Snapshot(done=self.ready)

        def check(self):
            pass

    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)
    prep = Preparing()
    cfg = load_config(write_config(tmp_path / "space.toml", tiny_models))
    app = build_app(cfg, pool_db, space=True, preparing=prep)
    poll = next(f for f in app.fns.values() if getattr(f.fn, "__name__", "") == "poll")
    (load,) = [f for f in app.fns.values() if f.api_name == "sign_in"]
    rita = gr.OAuthProfile({"name": "rita", "preferred_username": "rita", "profile": "", "picture": "", "orgs": []})

    def status(out):
        return next(v for k, v in out.items() if getattr(k, "label", None) == "status")

    assert "opens by itself" in status(load.fn(Session(), rita))  # the page's load, while preparing
    assert not any(isinstance(k, gr.State) and getattr(v, "rater", None) for k, v in poll.fn(
        Session(), "", rita, None).items())
    prep.ready = True
    out = poll.fn(Session(), "", rita, None)
    (session,) = [v for k, v in out.items() if isinstance(k, gr.State)]
    assert session.rater == "rita" and session.pair_id is not None
    assert "prepared" not in status(out)
    assert "Sign in with your Hugging Face account" in status(poll.fn(Session(), "", None, None))


def test_the_start_s_hint_promises_the_live_tab_only_where_it_needs_an_organiser(tiny_models, tmp_path):
    """Live audit: the local start said an organiser's code 'gives you ... the Live tab', which locally is open to
    anyone unless app.live_access says otherwise."""
    from evalkit.ui.server import sign_in_hint

    open_live = load_config(write_config(tmp_path / "a.toml", tiny_models))
    hint = sign_in_hint(open_live, tmp_path / "a.db")
    assert "no organiser yet" in hint and "Live tab" not in hint
    closed = load_config(write_config(tmp_path / "b.toml", tiny_models, live_access="organisers"))
    assert "results at any time and the Live tab" in sign_in_hint(closed, tmp_path / "b.db")


def test_the_start_s_hints_name_evalkit_as_the_shell_that_ran_start_sh_can_type_it(tiny_models, tmp_path, pool_db,
                                                                                   monkeypatch):
    """Demo audit, 2026-12-06, `./scripts/start.sh` on a fresh clone: the start said "`evalkit raters add YOUR-NAME
    --organiser --db results/evalkit.db` gives you results", but start.sh runs .venv/bin/evalkit without activating
    .venv, so the line typed as given answered "command not found"; so did the plan's "`evalkit generate
    --until-planned` adds samples". Where evalkit is not on PATH the hints name the environment's own, from the
    working folder when it is inside it; where it is, plain `evalkit`."""
    import sys
    from pathlib import Path

    from evalkit.ui.server import plan_hint, sign_in_hint

    cfg = load_config(write_config(tmp_path / "a.toml", tiny_models, signup="invite"))
    bin_dir = Path(sys.executable).parent
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a fresh shell: .venv not activated
    monkeypatch.chdir(bin_dir.parent.parent)  # the checkout holding .venv
    hint = sign_in_hint(cfg, tmp_path / "a.db")
    mine = f"{bin_dir.parent.name}/bin/evalkit"
    assert f"Invite each with `{mine} raters add NAME --db " in hint, hint
    assert f"no organiser yet. `{mine} raters add YOUR-NAME --organiser --db " in hint, hint
    assert f"`{mine} generate --until-planned` adds samples" in plan_hint(pool_db)  # the pool is short of its plan
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")  # activated
    assert "no organiser yet. `evalkit raters add YOUR-NAME" in sign_in_hint(cfg, tmp_path / "a.db")
    assert "`evalkit generate --until-planned`" in plan_hint(pool_db)


def test_once_a_decision_closes_the_study_a_second_name_that_reads_a_reveal_cannot_rate(cfg, pool_db):
    """An attacker with two names, through the API: name one rates a pair, name two holds the same pair on screen.
    The study's decision closes every pair (here stored beside the app, as a settling rating stores it), so name one
    now reads that pair's reveal; name two's submission of it is refused with nothing stored, again and again."""
    import sqlite3

    from evalkit.store import insert_decision

    keep = rows(pool_db, "SELECT id FROM pairs ORDER BY id LIMIT 1")[0]["id"]
    with sqlite3.connect(pool_db) as conn:  # a one-pair pool: both names meet the same pair
        conn.execute("DELETE FROM pairs WHERE id != ?", [keep])
    with served(cfg, pool_db) as url:
        one, two = Tab(url), Tab(url)
        one.sign_in("mallory")
        two.sign_in("mallory-2")
        first = one.submit()
        assert "ordinary" not in first["reveal"] and "assisted" not in first["reveal"]  # 1 of 2 ratings: pending
        db = open_db(pool_db)
        insert_decision(db, db.execute("SELECT MAX(id) FROM studies").fetchone()[0], {
            "completed_at": "2026-12-04T00:00:00", "completed_rating_id": 0, "gate_hash": "", "decision": "KEEP",
            "sample": [], "excluded": [], "verdict": {}, "speed": {}})
        db.conn.close()
        done = one.call("/next_pair")
        assert "本研究已得出结论" in done["done"] and "ordinary" in done["done"]  # the reveal: nobody can rate it now
        refused = two.submit(preference="B")
        assert "本研究已在一次预定的查看中得出结论" in refused["status"] and keep not in str(refused)
        with pytest.raises(AppError, match="no pair on screen"):  # the refusal took the pair off her session
            two.submit(preference="B")
        assert len(rows(pool_db, "SELECT * FROM ratings")) == 1  # only name one's rating, from before the decision
        assert "本研究已得出结论" in two.call("/next_pair")["done"]


def test_an_organiser_s_results_name_a_rater_who_holds_a_pair_for_hours(cfg, pool_db):
    """Attacker audit, 2026-12-05: one name can keep a pair on screen for good by signs of work every 29 minutes, and
    the decision counts pairs complete at the head of the queue's order, so a pair held there stalls the decision;
    revoking the name is the remedy, and nothing told the organiser whom to revoke. Her Results now name a rater who
    has held a pair for over LONG_HOLD_HOURS (never a rater's: who holds what is the organiser's), and a revoke ends it."""
    import sqlite3
    from datetime import datetime, timedelta, timezone

    from evalkit.rating.queue import LONG_HOLD_HOURS

    db = open_db(pool_db)
    code = raters.add(db, "olga", organiser=True).code
    db.conn.close()
    with served(cfg, pool_db) as url:
        ann = Tab(url)
        ann.sign_in("ann")  # a pair on her screen: her hold
        olga = Tab(url)
        olga.call("/sign_in", "", "", code)
        assert "被长时间占用" not in olga.call("/results")["counts"]  # a hold of minutes is a rater at work
        now = datetime.now(timezone.utc)
        with sqlite3.connect(pool_db) as con:  # her page has renewed the hold since it was shown, hours ago
            con.execute("UPDATE assignments SET shown_at = ?, alive_at = ? WHERE rater = 'ann'",
                        [(now - timedelta(hours=LONG_HOLD_HOURS + 1)).isoformat(timespec="milliseconds"),
                         now.isoformat(timespec="milliseconds")])
        counts = olga.call("/results")["counts"]
        assert "**⚠️ 有评分对被长时间占用。** ann (" in counts and "`evalkit raters revoke 名字`" in counts
        assert "被长时间占用" not in ann.call("/results")["counts"]
        db = open_db(pool_db)
        raters.revoke(db, "ann")
        db.conn.close()
        assert "被长时间占用" not in olga.call("/results")["counts"]


def test_on_a_space_the_long_hold_line_names_the_remedy_a_space_has(tiny_models, tmp_path, pool_db, monkeypatch):
    """Attacker audit round 10: on a Space the organiser's long-hold line told her to run `evalkit raters revoke NAME`,
    but a Hub rater has no code to revoke (the command answers "no rater named"). It then told her to edit the Space's
    config and restart it; it now names the Results tab's revoke of a Hub account, shown to the organiser only, which
    ends the hold at once (the line no longer names her)."""
    import sqlite3
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace

    import gradio as gr
    import gradio.oauth

    from evalkit.rating.queue import LONG_HOLD_HOURS
    from evalkit.ui import build_app, hubcheck
    from evalkit.ui.session import Session

    cfg = load_config(write_config(tmp_path / "space.toml", tiny_models, ratings_per_pair=1, organisers=["olga"],
                                   allowed_raters=["ann"]))
    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}}, raising=True)  # offline
    fns = {f.api_name: f for f in build_app(cfg, pool_db, space=True).fns.values() if f.api_name}

    def browser(name):  # the request of an event from her browser: its sign-in cookie holds her token
        return SimpleNamespace(session={"oauth_info": {"access_token": f"tok-{name}", "expires_at": 10**10}})

    def sign_in(name):
        profile = gr.OAuthProfile({"name": name, "preferred_username": name, "profile": "", "picture": "", "orgs": []})
        return next(v for k, v in fns["sign_in"].fn(Session(lang="en"), profile, browser(name)).items()
                    if isinstance(k, gr.State))

    ann, olga = sign_in("ann"), sign_in("olga")  # a pair on ann's screen: her hold
    now = datetime.now(timezone.utc)
    with sqlite3.connect(pool_db) as con:  # renewed since it was shown, hours ago
        con.execute("UPDATE assignments SET shown_at = ?, alive_at = ? WHERE rater = 'ann'",
                    [(now - timedelta(hours=LONG_HOLD_HOURS + 1)).isoformat(timespec="milliseconds"),
                     now.isoformat(timespec="milliseconds")])
    monkeypatch.setattr(hubcheck, "event_request", lambda: browser("olga"))  # the event comes from olga's browser
    counts = next(v for k, v in fns["results"].fn(olga).items() if getattr(k, "elem_id", None) == "results-counts")
    assert "**⚠️ A pair is held for a long time.** ann (" in counts
    assert "raters revoke" not in counts and "app.allowed_raters" not in counts
    assert "under \"Hub raters' access\" below and press **Revoke access**" in counts

    def results(session):
        out = fns["results"].fn(session)
        return {getattr(k, "elem_id", None): v for k, v in out.items()}

    box = results(olga)["results-hub-access"]
    assert box["visible"] is True
    monkeypatch.setattr(hubcheck, "event_request", lambda: browser("ann"))
    assert results(ann)["results-hub-access"]["visible"] is False  # a rater is never shown it
    with pytest.raises(gr.Error, match="only the study's organisers can revoke"):
        fns["hub_revoke"].fn(ann, "ann")
    monkeypatch.setattr(hubcheck, "event_request", lambda: browser("olga"))
    with pytest.raises(gr.Error, match="'olga' is one of app.organisers"):
        fns["hub_revoke"].fn(olga, "olga")
    with pytest.raises(gr.Error, match="no Hugging Face username was given"):
        fns["hub_lift"].fn(olga, " ")
    said = fns["hub_revoke"].fn(olga, "ann")
    assert list(said.values()) == ["Revoked the access of Hugging Face account **ann**: their next step is refused, "
                                   "and what they hold goes back to the queue."]
    assert "revoked already, by olga" in next(iter(fns["hub_revoke"].fn(olga, "ann").values()))
    assert "held for a long time" not in results(olga)["results-counts"]  # her hold is no longer one


def test_a_name_whose_hold_counted_for_nobody_is_told_its_pair_went_to_another_rater_who_stores_hers(cfg, pool_db):
    """A name that kept a pair to the cap and let it lapse holds nothing from others for a day: its next pair is served
    to another rater at once. Its submit, sent first, filled the pair and the other rater lost her work; it is now
    refused, in both languages and naming no side, and hers is stored."""
    import sqlite3
    from datetime import datetime, timedelta, timezone

    from evalkit.rating.queue import HOLD_CAP_HOURS, HOLD_MINUTES

    order = [r["id"] for r in rows(pool_db, "SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank")]
    now = datetime.now(timezone.utc)
    ago = (lambda minutes: (now - timedelta(minutes=minutes)).isoformat(timespec="milliseconds"))
    with sqlite3.connect(pool_db) as con:  # mallory kept the last pair to the cap, and let it go unrated
        con.execute("INSERT INTO assignments (pair_id, rater, shown_at, alive_at) VALUES (?, 'mallory', ?, ?)",
                    [order[-1], ago(HOLD_CAP_HOURS * 60 + HOLD_MINUTES + 1), ago(HOLD_MINUTES + 1)])
    with served(cfg, pool_db) as url:
        mallory, carol = Tab(url), Tab(url)
        m_screen, c_screen = mallory.sign_in("mallory"), carol.sign_in("carol")
        assert (m_screen["text-a"], m_screen["text-b"]) == (c_screen["text-a"], c_screen["text-b"])
        refused = mallory.submit(preference="A")
        assert "这一对已交给另一位评分者" in refused["status"] and "你的答案未保存" in refused["status"]
        english = mallory.call("/language", "en", refused["status"])["status"]
        assert "This pair went to another rater" in english and "not stored" in english
        assert not re.search(r"ordinary|assisted|普通|辅助", refused["status"] + english)
        assert "评分已保存" in carol.submit(preference="B")["status"]
        assert [r["rater"] for r in rows(pool_db, "SELECT rater FROM ratings")] == ["carol"]


def test_the_start_says_a_local_allow_list_is_checked_against_typed_names(tiny_models, tmp_path):
    """Attacker audit (2026-12-05): locally, with open sign-up, app.allowed_raters lets in whoever types a listed name
    first (a name is no credential there), and nothing said so; the start now does, with the way to credentials."""
    from evalkit.ui.server import sign_in_hint

    listed = load_config(write_config(tmp_path / "a.toml", tiny_models, allowed_raters=["ann"]))
    hint = sign_in_hint(listed, tmp_path / "a.db")
    assert "whoever types a listed name first takes it" in hint and "evalkit raters add NAME" in hint
    invite = load_config(write_config(tmp_path / "b.toml", tiny_models, allowed_raters=["ann"], signup="invite"))
    assert "allowed_raters" not in sign_in_hint(invite, tmp_path / "b.db")
    assert "allowed_raters" not in sign_in_hint(load_config(write_config(tmp_path / "c.toml", tiny_models)),
                                                tmp_path / "c.db")


def test_the_results_tab_s_computation_names_each_step_on_the_page_as_it_goes(cfg, pool_db, monkeypatch):
    """Audit, 2026-12-06: on a study-sized pool (thousands of pairs) the organiser clicked Refresh on the Results tab
    and waited several seconds with nothing moving. The computation's steps, those `evalkit aggregate` names, now
    reach the page as they begin (Gradio's progress), in her language; a rater still rating gets no aggregate, and so
    no step."""
    import threading

    import evalkit.progress as progress
    from evalkit.aggregate import STEPS
    from evalkit.ui.words import word

    said, go, begun = [], threading.Event(), threading.Semaphore(0)
    step = progress.step

    def held(name):  # each step said, then held until the test has seen it on the client's side
        step(name)
        said.append(name)
        begun.release()
        assert go.wait(60)
        go.clear()

    monkeypatch.setattr(progress, "step", held)
    with served(cfg, pool_db) as url:
        ann = Tab(url)
        ann.sign_in("ann")
        ann.call("/results")  # she still has pairs to rate: no aggregate is computed for her, no step said
        assert said == []
        db = open_db(pool_db)
        code = raters.add(db, "olga", organiser=True).code
        db.conn.close()
        olga = Tab(url)
        olga.call("/sign_in", "", "", code)
        job = olga.client.submit(api_name="/results")
        for n, name in enumerate(STEPS, start=1):
            assert begun.acquire(timeout=120), said
            shown = word("results_step", "zh", n=n, total=len(STEPS), step=word(name, "zh"))
            deadline = time.monotonic() + 60
            while not [p for p in job.status().progress_data or [] if p.desc == shown]:
                assert time.monotonic() < deadline, (shown, job.status())
                time.sleep(0.05)
            go.set()
        job.result(timeout=120)
    assert said == list(STEPS)
    assert all(word(name, "zh") != name for name in STEPS)  # each step has its Chinese words


def test_a_results_view_waiting_for_another_page_s_computation_says_so(cfg, pool_db, monkeypatch):
    """The tab's computation is shared (AggregateCache): a second organiser's Refresh while the first's look was being
    computed waited as long with nothing on her page, her own steps not run. She is told what she waits for."""
    import threading

    import evalkit.progress as progress
    from evalkit.aggregate import STEPS
    from evalkit.ui.words import word

    go, begun, step = threading.Event(), threading.Event(), progress.step

    def held(name):  # the first computation's first step, held until the second page is seen waiting
        step(name)
        if name == STEPS[0] and not begun.is_set():
            begun.set()
            assert go.wait(60)

    monkeypatch.setattr(progress, "step", held)
    with served(cfg, pool_db) as url:
        db = open_db(pool_db)
        codes = [raters.add(db, name, organiser=True).code for name in ("olga", "omar")]
        db.conn.close()
        first, second = Tab(url), Tab(url)
        first.call("/sign_in", "", "", codes[0])
        second.call("/sign_in", "", "", codes[1])
        computing = first.client.submit(api_name="/results")
        assert begun.wait(120)
        waiting = second.client.submit(api_name="/results")
        shown, deadline = word("results_waiting", "zh"), time.monotonic() + 60
        while not [p for p in waiting.status().progress_data or [] if p.desc == shown]:
            assert time.monotonic() < deadline, waiting.status()
            time.sleep(0.05)
        go.set()
        for job in (computing, waiting):
            assert "Verdict" in str(job.result(timeout=120))


def test_a_step_the_server_stopped_under_says_what_a_reload_tells_in_words_that_fit_the_step(cfg, pool_db):
    """An event that fails with no reason (the server stopped or restarted under it) says so on the status line
    (rate._say_refusal; in the browser: tests/test_rate_browser_ux.py::
    test_a_submission_the_server_stopped_under_says_so_and_a_reload_after_its_restart_says_it_was_stored). Only
    Submit had a rating on its way: its words say a reload tells whether the rating was stored; after Next, Skip,
    Correct or a sign-in they said so too, of no rating at all (rater audit, 2026-12-06), and now say a reload shows
    where she is. Read from the page's wiring, each event's step that runs on its failure, in both languages."""
    from evalkit.ui import build_app
    from evalkit.ui.words import word

    config = build_app(cfg, pool_db).get_config_file()
    deps = config["dependencies"]
    said = {lang: {key: json.dumps(word(key, lang), ensure_ascii=False) for key in ("no_answer", "no_answer_sent")}
            for lang in ("zh", "en")}

    def on_failure(api: str) -> str:
        (fn,) = [d["id"] for d in deps if d.get("api_name") == api]
        js = [d.get("js") or "" for d in deps if d.get("trigger_after") == fn and d.get("trigger_only_on_failure")]
        return "\n".join(js)

    # the page's language switch is its own event (it sends the page's count of switches); /language is the API's
    for api in ("next_pair", "check_again", "skip", "correct", "sign_in", "my_code", "switch_language", "sign_out"):
        js = on_failure(api)
        assert all(said[lang]["no_answer"] in js and said[lang]["no_answer_sent"] not in js for lang in said), api
    js = on_failure("submit")
    assert all(said[lang]["no_answer_sent"] in js and said[lang]["no_answer"] not in js for lang in said)
