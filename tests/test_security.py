"""The app probed as a curious or dishonest rater would probe it, against a served app on 127.0.0.1: through
gradio_client (as the API documents itself) and through raw queue requests (any function, any payload, a forged
session state). Each test is one route that was open once; it fails on any leak or bypass.

What the app promises is written in the README's "Security: what the app promises" section."""

import contextlib
import json
import math
import re
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from apphelpers import POOL_PAIRS, pair_shown, pool_db, pool_template, rows, served, write_config  # noqa: F401
from gradio_client.exceptions import AppError
from test_app_client import Tab

from evalkit.rating import roster as raters
from evalkit.config import POOL_SEED_LIMIT, load_config
from evalkit.task.prompts import CRITERIA, load_prompts
from evalkit.store import open_db
from evalkit.ui.results import PLOT_MARK, PLOTS, TABLES
from evalkit.ui.rate import FORM_KEYS
from evalkit.ui.words import word


def config(tiny_models, tmp_path, **app):
    return load_config(write_config(tmp_path / f"sec-{uuid.uuid4().hex[:6]}.toml", tiny_models, **app))


class Raw:
    """Raw queue requests: join the queue for any function by index with any payload, read the event stream.
    One Raw is one session (one session_hash)."""

    def __init__(self, url: str, source: str | None = None):
        """source: the local address its requests are sent from (127.0.0.2: another client of a local app)."""
        self.url, self.session, self.source = url, uuid.uuid4().hex[:11], source
        cfg = httpx.get(url + "config", timeout=30).json()
        self.fns = {d["api_name"]: d["id"] for d in cfg["dependencies"] if d.get("api_name")}

    def call(self, fn: str | int, data: list, headers: dict | list | None = None, params: dict | None = None) -> dict:
        """`headers` (a dict, or (name, value) pairs: a name may come twice) and `params` go with the queue join, whose
        request the handler is given (gr.Request)."""
        index = self.fns[fn] if isinstance(fn, str) else fn
        transport = httpx.HTTPTransport(local_address=self.source) if self.source else None
        with httpx.Client(base_url=self.url, timeout=120, transport=transport) as c:
            # JSON with \u escapes (json.dumps' default), so that a payload can carry what UTF-8 cannot: a lone surrogate
            body = json.dumps({"data": data, "fn_index": index, "session_hash": self.session, "event_data": None,
                               "trigger_id": None})
            join = c.post("gradio_api/queue/join", content=body,
                          headers=[("content-type", "application/json"),
                                   *(headers.items() if isinstance(headers, dict) else headers or [])], params=params)
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


def sample_seed(db_file, prompt_id: str, sample: int) -> int:
    """The seed a pooled sample was generated with (its pool's secret base + the sample)."""
    (row,) = rows(db_file, "SELECT g.seed FROM pairs p JOIN generations g ON g.id = p.ordinary_generation_id "
                           "WHERE p.prompt_id = ? AND p.sample = ? AND p.kind = 'study'", [prompt_id, sample])
    return row["seed"]


def pooled(db_file, prompt_id):
    return rows(db_file, "SELECT g.text, g.token_ids FROM pairs p JOIN generations g ON g.id IN "
                         "(p.a_generation_id, p.b_generation_id) WHERE p.prompt_id = ?", [prompt_id])


# --- 0. the pool's seeds are secret -------------------------------------------------------------------------

def _pool_rows(db_file):
    (exp,) = rows(db_file, "SELECT id, sample_seed, first_sample FROM experiments WHERE kind = 'pool'")
    gens = rows(db_file, "SELECT g.prompt_id, g.path, g.seed, g.text FROM generations g WHERE g.live = 0")
    pairs = rows(db_file, "SELECT p.prompt_id, p.sample, o.seed AS o_seed, a.seed AS a_seed, o.text AS o_text, "
                          "a.text AS a_text FROM pairs p JOIN generations o ON o.id = p.ordinary_generation_id "
                          "JOIN generations a ON a.id = p.assisted_generation_id WHERE p.kind = 'study' ORDER BY p.rowid")
    return exp, gens, pairs


@pytest.mark.secret_seeds
def test_pool_seeds_are_secret_stored_kept_on_resume_and_never_sent(tiny_models, tmp_path, monkeypatch):
    """Audit: a pool's seeds were the config's public decoding.seed + sample, and the models are reproducible, so
    anyone could rebuild the pool offline with the same config (`evalkit prepare`) and read every pair's sides before
    rating (6 of 6 predicted). Each pool experiment now draws a secret base, stored with it and reused by a resume;
    the generations keep the seed used; the app never sends it."""
    import evalkit.study.pairs as pairs_mod
    from evalkit.study.pairs import build_pool

    cfg = config(tiny_models, tmp_path, ratings_per_pair=1)  # sampling, 2 samples per prompt
    cfg.pool.prompts = ["writing-01", "writing-02", "writing-03"]
    quiet = {"progress": False, "echo": lambda *_: None}
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    for db_file in (one, two):  # the study's pool, and an attacker's rebuild from the same public config
        build_pool(cfg, db_file, **quiet)
    texts1, texts2 = ({(g["prompt_id"], g["text"]) for g in rows(f, "SELECT prompt_id, text FROM generations")}
                      for f in (one, two))
    assert len(texts1 & texts2) < len(texts1) // 2, texts1 & texts2  # the rebuild mostly misses the study's texts
    (exp1, gens1, pairs1), (exp2, gens2, _) = _pool_rows(one), _pool_rows(two)
    bases = exp1["sample_seed"], exp2["sample_seed"]
    assert None not in bases and bases[0] != bases[1] and cfg.decoding.seed not in bases
    for exp, gens in ((exp1, gens1), (exp2, gens2)):  # the seed column keeps the seed used: base + sample
        span = 2 + math.ceil(cfg.pool.gold_rate * 2)  # study and gold samples
        assert {g["seed"] - exp["sample_seed"] for g in gens} <= set(range(exp["first_sample"], exp["first_sample"] + span))
    assert all(p["o_seed"] == p["a_seed"] == exp1["sample_seed"] + p["sample"] for p in pairs1)
    # the rebuild draws its own queue order and pair ids too (the tests fix these draws unless marked secret_seeds)
    queue_seeds = [rows(f, "SELECT queue_seed FROM experiments WHERE kind = 'pool'")[0]["queue_seed"] for f in (one, two)]
    assert None not in queue_seeds and queue_seeds[0] != queue_seeds[1]
    ids1, ids2 = ({r["id"] for r in rows(f, "SELECT id FROM pairs")} for f in (one, two))
    assert ids1 and not ids1 & ids2

    # an interrupted pool resumes with its own base: the seeds it planned (the stored ones), not newly drawn ones
    real, runs = pairs_mod._run_item, []

    class Stopped(Exception):
        pass

    def stops_after_two(*args, **kwargs):
        if len(runs) == 2:
            raise Stopped
        runs.append(args[2])
        return real(*args, **kwargs)

    three = tmp_path / "three.db"
    monkeypatch.setattr(pairs_mod, "_run_item", stops_after_two)
    with pytest.raises(Stopped):
        build_pool(cfg, three, **quiet)
    monkeypatch.setattr(pairs_mod, "_run_item", real)
    (stopped,) = rows(three, "SELECT id, sample_seed FROM experiments WHERE kind = 'pool'")
    build_pool(cfg, three, resume=stopped["id"], **quiet)
    exp3, gens3, pairs3 = _pool_rows(three)
    assert exp3["sample_seed"] == stopped["sample_seed"] and exp3["id"] == stopped["id"]
    assert len(pairs3) == POOL_PAIRS and all(p["o_seed"] == exp3["sample_seed"] + p["sample"] for p in pairs3)

    # the app: no event output, page or config carries the base or any pool seed
    seeds = {exp1["sample_seed"]} | {g["seed"] for g in gens1}
    needles = [re.compile(rf"(?<!\d){s}(?!\d)") for s in seeds if s >= 10_000]
    assert needles  # a base under 10,000 has odds of 1 in 200,000
    db = open_db(one)
    boss = raters.add(db, "olga", organiser=True).code
    db.conn.close()
    sent = []
    with served(cfg, one) as url:
        sent += [httpx.get(url, timeout=30).text, httpx.get(url + "config", timeout=30).text]
        for who in (["eve", "", ""], ["", "", boss]):
            raw = Raw(url)
            sent.append(json.dumps(raw.call("sign_in", [None, *who]), ensure_ascii=False))
            for fn, data in (("submit", [None, *answers()]), ("correct", [None]), ("next_pair", [None]),
                             ("skip", [None, "why"]), ("results", [None]), ("language", [None, "en", None])):
                sent.append(json.dumps(raw.call(fn, data), ensure_ascii=False))
    assert any("Verdict" in t for t in sent)  # the organiser's Results were among them
    for text in sent:
        assert not any(n.search(text) for n in needles)


@pytest.mark.secret_seeds
def test_each_pair_s_sides_and_id_are_secret_draws_balanced_and_telling_nothing_of_the_order(tmp_path):
    """The product's own draws (the tests fix them unless marked secret_seeds): each study pair's side is drawn once,
    A or B alike, and its id is random, so neither the sides nor `ORDER BY id` follow the order the pool was made in."""
    from draws import made_pairs

    n = 1000
    made = made_pairs(tmp_path / "sides.db", n)
    share = sum(side == "A" for _, side in made) / n
    assert abs(share - 0.5) < 6 * math.sqrt(0.25 / n), share  # six standard errors: wrong once in 500 million
    ids = [pair_id for pair_id, _ in made]
    assert all(re.fullmatch(r"p[0-9a-f]{16}", i) for i in ids) and len(set(ids)) == n
    assert sorted(ids) != ids  # made in this order, yet the ids sort otherwise (by chance once in 1000!)


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
    seed = sample_seed(pool_db, "writing-01", 0)
    monkeypatch.setattr(live, "live_seed", lambda: seed)  # sample 0's seed
    with served(cfg, pool_db) as url:
        job = Tab(url).client.submit("writing-01", "", api_name="/live")
        final = job.result()
        streamed = [v for out in job.outputs() for v in out if isinstance(v, str)]
    texts = [g["text"] for g in pooled(pool_db, "writing-01")]
    assert final[0] == live.WITHHELD and final[1] == live.WITHHELD
    for text in texts:
        assert not any(text and text[:12] in s for s in streamed), "a pooled output streamed to the browser"
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0


def test_a_live_run_that_runs_on_past_a_whole_pooled_output_is_withheld(tiny_models, tmp_path, pool_db, monkeypatch):
    """A pool made with a lower max_new_tokens holds outputs cut short: a live run with the same draws reproduces one
    as its beginning and runs on past it. The guard held the stream only while it was still the beginning of a pooled
    output, so once it ran past the end it showed the whole pooled output under its path's name, and stored it.
    Here sample 0's outputs of writing-01 are cut to half their tokens in the pool (as a lower max_new_tokens would
    have made them) and the live run draws sample 0's seed: both outputs must be withheld, nothing stored."""
    import evalkit.ui.live as live

    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    seed = sample_seed(pool_db, "writing-01", 0)
    gens = rows(pool_db, "SELECT DISTINCT g.id, g.token_ids, g.text FROM pairs p JOIN generations g ON g.id IN "
                         "(p.a_generation_id, p.b_generation_id) WHERE p.prompt_id = 'writing-01' AND g.seed = ?", [seed])
    assert gens and all(len(json.loads(g["token_ids"])) >= 4 for g in gens), gens
    with sqlite3.connect(pool_db) as db:
        db.executemany("UPDATE generations SET token_ids = ? WHERE id = ?",
                       [[json.dumps(json.loads(g["token_ids"])[:len(json.loads(g["token_ids"])) // 2]), g["id"]]
                        for g in gens])
    monkeypatch.setattr(live, "live_seed", lambda: seed)
    with served(cfg, pool_db) as url:
        job = Tab(url).client.submit("writing-01", "", api_name="/live")
        final = job.result()
        streamed = [v for out in job.outputs() for v in out if isinstance(v, str)]
    assert final[0] == live.WITHHELD and final[1] == live.WITHHELD, final[:2]
    for g in gens:
        assert not any(g["text"][:12] in s for s in streamed), "a pooled output's beginning streamed to the browser"
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0


def test_a_live_run_that_begins_as_a_pooled_output_past_where_its_pair_parts_is_withheld(tiny_models, tmp_path,
                                                                                       pool_db):
    """Attacker audit round 4: under greedy decoding the guard held the stream only while it was still the beginning
    of a pooled output, so a run that followed one past the token where its pair's two sides part and then went its
    own way (material a little unlike a rated prompt's, under the 0.9 likeness the Live tab refuses) was shown, and
    stored, under its path's name: which path wrote that side of the pair. Here a pair's ordinary side is made to
    follow what the live run writes for some material well past where the pair's assisted side parts from it (as
    such material would make it); the same run again must be withheld and nothing of it stored."""
    import evalkit.ui.live as live

    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    cfg.decoding.mode = "greedy"
    typed = "周五上午系统升级，期间只读。"
    with served(cfg, pool_db) as url:
        first = Tab(url).client.submit("writing-01", typed, api_name="/live").result()
        assert live.WITHHELD not in first[:2], first[:2]
        (ran,) = rows(pool_db, "SELECT token_ids FROM generations WHERE live = 1 AND path = 'ordinary'")
        ids = json.loads(ran["token_ids"])
        parts, cut = len(ids) // 3, 2 * len(ids) // 3  # the pair's sides part here; its ordinary one follows on to cut
        assert 0 < parts < cut < len(ids), ids
        other = next(t for t in ids if t not in (ids[parts], ids[cut]))
        (pair,) = rows(pool_db, "SELECT ordinary_generation_id AS o, assisted_generation_id AS a FROM pairs "
                                "WHERE kind = 'study' ORDER BY id LIMIT 1")
        with sqlite3.connect(pool_db) as db:
            db.executemany("UPDATE generations SET token_ids = ? WHERE id = ?",
                           [[json.dumps(ids[:cut] + [other]), pair["o"]], [json.dumps(ids[:parts] + [other]), pair["a"]]])
        again = Tab(url).client.submit("writing-01", typed, api_name="/live").result()
    assert again[0] == live.WITHHELD, again[0]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 2  # the first run's only


def test_a_live_run_that_repeats_another_prompts_pooled_output_is_withheld(tiny_models, tmp_path, pool_db,
                                                                          monkeypatch):
    """A degenerate output can be the same text for two prompts: the guard holds every pooled output, not only
    the chosen prompt's. Sample 0 of writing-01 is filed under writing-02 here; the live run on writing-01 with
    sample 0's seed reproduces it and must withhold it."""
    import evalkit.ui.live as live

    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    seed = sample_seed(pool_db, "writing-01", 0)
    sample0 = rows(pool_db, "SELECT DISTINCT p.id FROM pairs p JOIN generations g ON g.id IN "
                            "(p.a_generation_id, p.b_generation_id) WHERE p.prompt_id = 'writing-01' AND g.seed = ?",
                   [seed])
    assert sample0
    with sqlite3.connect(pool_db) as db:
        db.executemany("UPDATE pairs SET prompt_id = 'writing-02' WHERE id = ?", [[r["id"]] for r in sample0])
    monkeypatch.setattr(live, "live_seed", lambda: seed)
    with served(cfg, pool_db) as url:
        final = Tab(url).client.submit("writing-01", "", api_name="/live").result()
    assert final[0] == live.WITHHELD and final[1] == live.WITHHELD
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0


def test_greedy_pool_refuses_bundled_prompts_live(tiny_models, tmp_path, pool_db):
    """A greedy pool's rated prompts are refused live, and so is their material typed in, or nearly (a space, a
    full stop, full-width for half-width, under another prompt's task): that is the same request again, and its
    outputs, labelled by path, would be the rated ones or near them (an attacker's probe went round the first
    refusal that way). Material of one's own runs."""
    cfg = config(tiny_models, tmp_path, live_runs_per_hour=0)
    cfg.decoding.mode = "greedy"
    assert "writing-01" in {r["prompt_id"] for r in rows(pool_db, "SELECT prompt_id FROM pairs")}
    material = {p.id: p.material for p in load_prompts()}["writing-01"]
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        with pytest.raises(AppError, match="greedy decoding would reproduce"):
            tab.call("/live", "writing-01", "")
        near = (material, f" {material}\n", material[:-1], material.replace("，", ","), material.replace("。", "。 ", 1))
        for typed in near:
            with pytest.raises(AppError, match="writing-01's material, or nearly"):
                tab.call("/live", "writing-02", typed)
        own = tab.call("/live", "writing-01", "周五上午系统升级，期间只读。")
    assert "| ordinary | ok |" in own["timing table"] and "| assisted | ok |" in own["timing table"]  # it ran


def test_live_tab_limits_and_access(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, live_runs_per_hour=1)
    with served(cfg, pool_db) as url:
        Tab(url).call("/live", "writing-02", "")
        for _ in range(2):  # a fresh session from the same client is still over the limit
            with pytest.raises(AppError, match="hourly limit is reached .* from this address") as refused:
                Tab(url).call("/live", "writing-02", "")
        # the presenter whose laptop is one address learns which setting to change (Live audit, 2026-12-04)
        assert "app.live_runs_per_hour" in str(refused.value) and "0 for none" in str(refused.value)
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
    # a local study by invitation too (attacker audit F6: its raters read labelled samples of each path's style)
    invited = config(tiny_models, tmp_path, signup="invite")
    assert live_access(invited, space=False) == "organisers"
    with pytest.raises(Exception, match="organisers"):
        check_access(invited, False, Session(rater="ann"))
    with pytest.raises(Exception, match="organisers"):
        check_access(cfg, True, Session(rater="ann"))
    check_access(cfg, True, Session(rater="olga", organiser=True))
    check_access(cfg, False, Session())


# --- 2. the blind rating is the one that counts ---------------------------------------------------------------

def test_a_correction_after_the_reveal_never_replaces_the_blind_rating(tiny_models, tmp_path, pool_db):
    """Quota 1: the rating closes the pair and its reveal is shown; the correction after it is kept, never counted."""
    with served(config(tiny_models, tmp_path, ratings_per_pair=1), pool_db) as url:
        raw = Raw(url)
        assert Raw.error(raw.call("sign_in", [None, "mia", "", ""])) == ""
        done = raw.call("submit", [None, *answers("pass", "pass", "A")])
        assert "用时（秒）" in json.dumps(done["output"], ensure_ascii=False)  # the reveal was shown
        assert Raw.error(raw.call("correct", [None])) == ""
        assert Raw.error(raw.call("submit", [None, *answers("fail", "fail", "B")])) == ""
    history = rows(pool_db, "SELECT id, blind, preference FROM ratings ORDER BY id")
    assert [(h["blind"], h["preference"]) for h in history] == [(1, "A"), (0, "B")]
    assert [r["id"] for r in rows(pool_db, "SELECT id FROM current_ratings")] == [history[0]["id"]]


def test_a_second_name_never_reads_the_reveal_of_a_pair_the_first_can_still_rate(tiny_models, tmp_path, pool_db):
    """Issue #22's two-name attack: mallory is shown pair P, signs up a second name from the same address, skips to
    P, rates it and reads the reveal (sides and timings), then rates P as mallory knowing which side is which. The
    reveal now waits until P is closed to every identity; the second name learns nothing, mallory's rating is blind."""
    with served(config(tiny_models, tmp_path, ratings_per_pair=2), pool_db) as url:
        mallory = Tab(url)
        first = mallory.sign_in("mallory")
        target = (first["text-a"], first["text-b"])
        pair = pair_shown(pool_db, *target)
        gens = {g["id"]: g for g in rows(pool_db, "SELECT * FROM generations WHERE id IN (?, ?)",
                                         [pair["a_generation_id"], pair["b_generation_id"]])}
        timings = [f"{g['generate_seconds']:.3f}" for g in gens.values()]
        second = Tab(url)
        screen = second.sign_in("mallory-2")
        for _ in range(POOL_PAIRS):  # skip to P (the pair mallory holds comes last, but it comes)
            if (screen["text-a"], screen["text-b"]) == target:
                break
            screen = second.call("/skip", "not this one")
        assert (screen["text-a"], screen["text-b"]) == target, "the attack's set-up: the second name reaches P"
        peek = second.submit(a="pass", b="pass")
        received = json.dumps(peek, ensure_ascii=False)
        for word in ("ordinary", "assisted", "generate() s", "用时（秒）", "token/秒", *timings):
            assert word not in received, f"the second name learned {word!r} about a pair mallory can still rate"
        assert "待揭晓" in peek["reveal"] and "再评 1 次" in peek["reveal"]
        # mallory rates P blind; that closes it, and now both see the reveal
        closing = mallory.submit()
        a_path, b_path = gens[pair["a_generation_id"]]["path"], gens[pair["b_generation_id"]]["path"]
        assert f"| A | {a_path} |" in closing["reveal"] and f"| B | {b_path} |" in closing["reveal"]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM closed_pairs WHERE pair_id = ?", [pair["id"]])[0]["n"] == 1
    stored = rows(pool_db, "SELECT rater, blind FROM current_ratings WHERE pair_id = ?", [pair["id"]])
    assert sorted(r["rater"] for r in stored) == ["mallory", "mallory-2"] and all(r["blind"] for r in stored)


def test_pending_reveals_fill_in_as_pairs_close(tiny_models, tmp_path, pool_db):
    """The rater sees which of their reveals wait, and each appears once its pair is closed."""
    with served(config(tiny_models, tmp_path, ratings_per_pair=2), pool_db) as url:
        ann, bob = Tab(url), Tab(url)
        ann.sign_in("ann")
        first = ann.submit()
        assert "待揭晓" in first["reveal"] and "用时（秒）" not in first["reveal"]
        ann.call("/next_pair")
        second = ann.submit()
        assert "已揭晓 0，待揭晓 1" in second["reveal"]  # the list of her other pairs
        bob.sign_in("bob")
        for _ in range(POOL_PAIRS):  # bob rates every pair: ann's two close
            bob.submit()
            bob.call("/next_pair")
        ann.call("/next_pair")
        third = ann.submit()  # her rating closes this one too
        assert "用时（秒）" in third["reveal"] and "已揭晓 2，待揭晓 0" in third["reveal"]


# --- 3. identity comes from a credential -----------------------------------------------------------------------

def test_a_name_cannot_be_taken_over(tiny_models, tmp_path, pool_db, monkeypatch):
    import evalkit.ui.auth as auth
    from evalkit.rating.limits import SignInGuard

    # the guard's clock stands still: its 2-second wait must not run out while a slow machine opens eight clients
    monkeypatch.setattr(auth, "SignInGuard", lambda: SignInGuard(clock=lambda: 1000.0))
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
        assert boss.call("/results")[TABLES["pass_rates"]]["data"] == []
        raw = Raw(url)
        raw.call("sign_in", [None, "boss2", "", ""])
        forged = {"rater": "boss", "organiser": True, "pair_id": None, "rating_id": None}
        out = json.dumps(raw.call("results", [forged])["output"], ensure_ascii=False)
        assert "评完你自己的评分对后" in out and "Verdict:" not in out


def test_passcode_and_code_guessing_is_slowed_per_client(tiny_models, tmp_path, pool_db, monkeypatch):
    import evalkit.ui.auth as auth
    from evalkit.rating.limits import SignInGuard

    now = [1000.0]  # the guard's clock moves only when the test moves it: the waits do not depend on server speed
    monkeypatch.setattr(auth, "SignInGuard", lambda: SignInGuard(clock=lambda: now[0]))
    cfg = config(tiny_models, tmp_path, passcodes=["s3cret"])
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        for i in range(5):  # five free guesses
            with pytest.raises(AppError, match="passcode is not right"):
                tab.call("/sign_in", f"eve{i}", f"guess{i}", "")
        # then even the right passcode, under another name, from this client, waits
        with pytest.raises(AppError, match="too many sign-in attempts"):
            tab.call("/sign_in", "eve-honest", "s3cret", "")
        checked = []
        for step in range(16):  # half a second a step: each checked guess doubles the wait (2 s, then 4 s)
            with pytest.raises(AppError) as e:
                tab.call("/sign_in", f"eve{step}", f"again{step}", "")
            if "passcode is not right" in str(e.value):
                checked.append(now[0] - 1000)
            else:
                assert "too many sign-in attempts" in str(e.value), e.value
            now[0] += 0.5
        assert checked == [2.0, 6.0], checked
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


def test_new_names_are_limited_per_client_per_day_too_and_the_refusal_names_the_limit_in_both_languages(
        tiny_models, tmp_path, pool_db):
    """Attacker audit round 5: three new names an hour from one client were 72 a day, each weighing as one rater in a
    claim about raters in general, and the Chinese refusal said only "too frequent". A day's limit now holds too, and
    the refusal names the limit and the wait in both languages; the organiser's invited raters sign in as before."""
    db = open_db(pool_db)
    ivy = raters.add(db, "ivy")
    db.conn.close()
    cfg = config(tiny_models, tmp_path, signups_per_client_per_hour=5, signups_per_client_per_day=2)
    with served(cfg, pool_db) as url:
        assert Tab(url).sign_in("r1")["who"] and Tab(url).sign_in("r2")["who"]
        with pytest.raises(AppError) as refused:
            Tab(url).sign_in("r3")
        said = str(refused.value)
        assert "最近一天已有 2 个（上限 2 个）" in said and re.search(r"约 1[0-9]{3} 分钟", said), said
        assert "2 in the last day (limit 2)" in said and re.search(r"wait \d+ s \(about 1[0-9]{3} min\)", said), said
        assert "个人代码" in said and "personal code" in said, said
        assert "ivy" in Tab(url).call("/sign_in", "", "", ivy.code)["who"]
    assert sorted(r["name"] for r in rows(pool_db, "SELECT name FROM raters")) == ["ivy", "r1", "r2"]

def test_the_names_one_client_makes_hold_at_most_the_set_pairs_at_once(tiny_models, tmp_path, pool_db):
    """Attacker audit round 5: with open sign-up, each of one person's many names held a pair from the other raters
    for 30 minutes (hold starvation). The names one client made now hold at most app.pairs_held_per_client pairs at
    once; the next is told the limit and the wait, in the rater's language; the organiser's invited raters are not
    limited so."""
    db = open_db(pool_db)
    ivy = raters.add(db, "ivy")
    db.conn.close()
    with served(config(tiny_models, tmp_path, pairs_held_per_client=2), pool_db) as url:
        first, second, third = Tab(url), Tab(url), Tab(url)
        assert first.sign_in("s1")["text-a"] and second.sign_in("s2")["text-a"]  # two names, two pairs held
        screen = third.sign_in("s3")
        assert not screen["text-a"], screen  # a third name of this client is served none
        assert "已有 2 对正在评分" in screen["rate-done"] and "最多占用 2 对" in screen["rate-done"], screen
        assert "30 分钟" in screen["rate-done"], screen
        english = third.call("/language", "en")
        assert "have 2 pair(s) on screen" in english["rate-done"] and "at most 2 at once" in english["rate-done"]
        assert "in 30 minute(s)" in english["rate-done"], english
        assert not third.call("/next_pair")["text-a"]  # and no request serves one
        assert Tab(url).call("/sign_in", "", "", ivy.code)["text-a"]  # an invited rater, same client, is served
        first.submit()  # a pair of this client's names is rated: the third name is served
        assert third.call("/check_again")["text-a"]
    held = {r["rater"] for r in rows(pool_db, "SELECT DISTINCT rater FROM assignments")}
    assert held == {"s1", "s2", "s3", "ivy"}

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


def test_a_rater_s_share_holds_across_her_tabs_and_raw_requests(tiny_models, tmp_path, pool_db):
    cfg = config(tiny_models, tmp_path, max_ratings_per_rater=1)
    with served(cfg, pool_db) as url:
        one, two = Tab(url), Tab(url)
        one.sign_in("ann")
        two.sign_in("ann")  # her second tab, showing the same pair
        one.submit()
        with pytest.raises(AppError, match="share of 1 ratings"):
            two.submit()  # the pair her second tab still shows
        done = two.sign_in("ann")  # a reload: no new pair, and the words say why
        assert "分配给你的 1 条评分" in done["rate-done"] and not done["text-a"]
        raw = Raw(url)  # a raw request with a forged session state naming an open pair gets no further
        open_pair = rows(pool_db, "SELECT id FROM pairs WHERE id NOT IN (SELECT pair_id FROM ratings)")[0]["id"]
        assert Raw.error(raw.call("submit", [{"rater": "ann", "pair_id": open_pair}, *answers()]))
        bob = Tab(url)
        bob.sign_in("bob")  # the others go on rating
        bob.submit()
    assert [r["rater"] for r in rows(pool_db, "SELECT rater FROM ratings ORDER BY id")] == ["ann", "bob"]


# --- 4. quotas and results --------------------------------------------------------------------------------------

def test_skipping_never_opens_the_results(tiny_models, tmp_path, pool_db):
    with served(config(tiny_models, tmp_path), pool_db) as url:
        sk = Tab(url)
        sk.sign_in("skipper")
        for _ in range(POOL_PAIRS):
            sk.call("/skip", "no")
        out = sk.call("/results")
        assert "你跳过了 6 对" in out["verdict"] and out[TABLES["pass_rates"]]["data"] == []
        # An organiser may rate too: the per-output plot, coloured by path, leaves out the pairs still open for her
        # as for a rater. Here every pair has 1 rating of 2 (open): her picture changes once they close.
        db = open_db(pool_db)
        code = raters.add(db, "olga", organiser=True).code
        db.conn.close()
        olga = Tab(url)
        olga.call("/sign_in", "", "", code)
        plot = PLOTS["seconds_vs_tokens"] + PLOT_MARK
        rita, ros = Tab(url), Tab(url)
        rita.sign_in("rita")
        ros.sign_in("ros")
        for _ in range(POOL_PAIRS):
            rita.submit()
            rita.call("/next_pair")
        while_open = olga.call("/results")[plot]
        olga.submit()  # uncounted (she has seen the results): it only frees the pair she held on screen for ros
        for _ in range(POOL_PAIRS):
            ros.submit()
            ros.call("/next_pair")
        seen = rita.call("/results")
        assert seen[TABLES["pass_rates"]]["data"]  # every pair closed: open to a rater who rated her queue
        assert olga.call("/results")[plot] == seen[plot] != while_open


def test_a_rater_who_rated_her_queue_waits_while_her_pairs_are_open_to_a_second_name(tiny_models, tmp_path, pool_db):
    """Audit, 2026-12-02: with the Results open to a rater as soon as her queue was empty, a rater answered each pair
    with one criterion as its marker (A pass, B fail, the rest unsure); the per-prompt pass counts of the ordinary
    path then told every pair's sides, and her second name (open sign-up) rated all six knowing them, counted and
    closing the pairs. Now the aggregates wait until no pair is open to anyone: every pair still open then is one
    she met."""
    with served(config(tiny_models, tmp_path), pool_db) as url:
        mallory = Tab(url)
        mallory.sign_in("mallory")
        for _ in range(POOL_PAIRS):
            mallory.submit()
            mallory.call("/next_pair")
        out = mallory.call("/results")
        assert "本研究最后 6 对得到其他评分者的评分之后，结果才开放" in out["verdict"]
        shut = ("pass_rates", "paired_differences", "preferences", "timing", "speedup")
        assert all(out[TABLES[n]]["data"] == [] for n in shut)
        second = Tab(url)
        second.sign_in("mallory-2")  # her second name is served the pairs she knows the answers to, blind as before
        for _ in range(POOL_PAIRS):
            second.submit()
            second.call("/next_pair")
        assert mallory.call("/results")[TABLES["pass_rates"]]["data"]  # all closed: nothing left to decode


def test_a_rater_shown_the_results_is_served_none_of_the_pairs_a_later_pool_adds(tiny_models, tmp_path, pool_db):
    """Attacker audit F5: the Results open to a rater once nothing of the study is open, and then a later pool can
    add pairs to the same study; she rated those knowing the per-path tables, and her ratings counted. A rater shown
    the results is now served none of them (the screen says why), another rater is, and `evalkit generate` tells
    the organiser."""
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_pairs
    from evalkit.study.studies import studies

    with served(config(tiny_models, tmp_path, ratings_per_pair=1), pool_db) as url:
        mallory = Tab(url)
        mallory.sign_in("mallory")
        for _ in range(POOL_PAIRS):
            mallory.submit()
            mallory.call("/next_pair")
        assert mallory.call("/results")[TABLES["pass_rates"]]["data"]  # nothing open: the tables are hers
        db = open_db(pool_db)
        gate = studies(db)[-1].gate
        later = insert_experiment(db, "pool", {}, {}, gate=gate)  # a later pool of the same study

        def made(path, i):
            return GenerationRecord(prompt_id="writing-01", path=path, text=f"later {path} {i}", new_tokens=9,
                                    stop_reason="eos", generate_seconds=1.0)

        insert_pairs(db, later, [{"prompt_id": "writing-01", "sample": 100 + i, "ordinary_side": "AB"[i % 2],
                                  "ordinary": made("ordinary", i), "assisted": made("assisted", i)} for i in range(2)])
        db.conn.close()
        screen = mallory.call("/next_pair")
        assert "你已看过本研究的结果" in screen["done"] and not screen["text-a"]
        assert len(rows(pool_db, "SELECT * FROM assignments WHERE rater = 'mallory' AND pair_id IN "
                                 "(SELECT id FROM pairs WHERE experiment_id = ?)", [later])) == 0
        ben = Tab(url)
        ben.sign_in("ben")
        assert ben.submit()["status"] == "评分已保存。"  # a rater who saw nothing is served the new pairs
        assert rows(pool_db, "SELECT p.experiment_id FROM ratings r JOIN pairs p ON p.id = r.pair_id "
                             "WHERE r.rater = 'ben'")[0]["experiment_id"] == later
    # the organiser who adds a pool learns it
    from evalkit.study.pairs import build_pool

    cfg = config(tiny_models, tmp_path)
    cfg.pool.prompts = ["writing-01", "writing-02", "writing-03"]  # the study's prompts: a later pool pools them all
    said = []
    build_pool(cfg, pool_db, samples=1, echo=said.append)
    assert any("1 name(s) were shown this study's results" in line and "--new-study" in line for line in said), said


def test_a_rater_s_results_name_no_other_rater_and_count_only_the_shown_study(tiny_models, tmp_path):
    """Audit: a rater whose Results had opened read every rater's name, rating count, median seconds and "fast" flags
    (the time-on-task table), over every study, where the report pseudonymises that table. A rater now sees the
    pooled row and her own, an organiser every rater's row, and both only the shown study's ratings."""
    from evalkit.study.synthetic import SyntheticStudy, build_study

    path = tmp_path / "app.db"
    db = open_db(path)
    build_study(db, SyntheticStudy(pairs=8, raters_per_pair=3, raters=4))  # study 'main'
    build_study(db, SyntheticStudy(pairs=6, raters_per_pair=3, raters=4, study="second", seed=1))
    per_study = {}
    for study, rater, n in db.execute(
            "SELECT s.name, r.rater, COUNT(*) FROM current_ratings r JOIN pairs p ON p.id = r.pair_id "
            "JOIN experiments e ON e.id = p.experiment_id JOIN studies s ON s.id = e.study_id GROUP BY s.name, r.rater"):
        per_study.setdefault(study, {})[rater] = n
    others = ["rater00000", "rater00002", "rater00003"]
    assert all(set(per_study[st]) == {"rater00001", *others} for st in ("main", "second")), per_study
    code, boss = raters.add(db, "rater00001").code, raters.add(db, "olga", organiser=True).code
    db.conn.close()
    with served(config(tiny_models, tmp_path), path) as url:
        tab = Tab(url)
        tab.call("/sign_in", "", "", code)
        for study, out in (("second", tab.call("/results")), ("main", tab.call("/results_study", "main"))):
            assert f"study '{study}'" in out["verdict"]
            rows_shown = out[TABLES["time_on_task"]]["data"]
            assert [(r[0], r[1]) for r in rows_shown] == [("all", sum(per_study[study].values())),
                                                         ("rater00001", per_study[study]["rater00001"])], rows_shown
            shown = json.dumps(out, ensure_ascii=False, default=str)
            assert not any(name in shown for name in others)
        olga = Tab(url)
        olga.call("/sign_in", "", "", boss)
        rows_shown = olga.call("/results")[TABLES["time_on_task"]]["data"]
        assert {r[0]: r[1] for r in rows_shown} == {"all": sum(per_study["second"].values()), **per_study["second"]}


def test_a_rater_sharing_a_study_with_one_other_never_reads_the_other_s_pace_from_the_pooled_figures(tiny_models,
                                                                                                       tmp_path):
    """With two raters, the time-on-task table's pooled row less her own was the other rater's row (her count of
    too-fast ratings), and the verdict's note on too-fast ratings said how many, from how many raters. A rater who
    shares the study with fewer than two others sees her own row alone and no such note; an organiser sees both."""
    from evalkit.study.synthetic import SyntheticStudy, build_study

    path = tmp_path / "app.db"
    db = open_db(path)
    build_study(db, SyntheticStudy(pairs=8, raters_per_pair=2, raters=2))
    names = sorted(r for (r,) in db.execute("SELECT DISTINCT rater FROM current_ratings"))
    assert len(names) == 2, names
    me, other = names
    with db.conn:  # the other rater rated every pair in 2 s (the floor is 10 s); she took her time
        db.execute("UPDATE ratings SET seconds_on_task = 2 WHERE rater = ?", (other,))
        db.execute("UPDATE ratings SET seconds_on_task = 60 WHERE rater = ?", (me,))
    code, boss = raters.add(db, me).code, raters.add(db, "olga", organiser=True).code
    db.conn.close()
    with served(config(tiny_models, tmp_path), path) as url:
        tab = Tab(url)
        tab.call("/sign_in", "", "", code)
        out = tab.call("/results")
        assert "study 'main'" in out["verdict"]
        rows_shown = out[TABLES["time_on_task"]]["data"]
        assert [r[0] for r in rows_shown] == [me], rows_shown
        assert "timed ratings took under" not in out["verdict"], out["verdict"]
        olga = Tab(url)
        olga.call("/sign_in", "", "", boss)
        seen = olga.call("/results")
        assert {r[0] for r in seen[TABLES["time_on_task"]]["data"]} == {"all", me, other}
        assert "timed ratings took under" in seen["verdict"], seen["verdict"]


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
                         ("skip", [forged, "x"]), ("my_code", [forged])):
            assert re.search("not signed in|sign in", Raw.error(raw.call(fn, data))), fn
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0


def test_text_that_is_not_valid_unicode_gets_an_answer_not_a_broken_stream(tiny_models, tmp_path, pool_db):
    """Audit, 2026-12-02: the language switch sent the form back as the client gave it, and half of a UTF-16 pair
    (a lone surrogate) in it made the server fail to encode the event stream: the caller's connection was cut with a
    traceback in the log. The switch now takes no form and sends none back (labels only: the browser keeps its
    answers). Live material with one got an internal TypeError as its message."""
    with served(config(tiny_models, tmp_path), pool_db) as url:
        raw = Raw(url)
        msg = raw.call("language", [None, "en", None])  # the session, the language, the status line as shown
        assert msg["success"], Raw.error(msg)
        fields = [o for o in msg["output"]["data"] if isinstance(o, dict) and "choices" in o]
        assert fields and not any("value" in o for o in fields)  # labels only, never a value
        odd = raw.call("language", [None, "en\ud800", None])  # not a language evalkit has: Chinese, not a broken stream
        assert odd["success"] and "提交" in json.dumps(odd["output"]["data"], ensure_ascii=False), Raw.error(odd)
        odd = raw.call("language", [None, "en", "\ud800"])  # nor a status line with one
        assert odd["success"], Raw.error(odd)
        err = Raw.error(raw.call("live", [None, "writing-01", "维护通知\ud800"]))
        assert "not valid text at position 4" in err and "TypeError" not in err


# --- 6. a stale session, a hostile client (issue #22) ------------------------------------------------------------

def _browser_code_output(raw: Raw, msg: dict, fn: str) -> str:
    """The value a sign-in sent to the BrowserState (what the browser keeps)."""
    cfg = httpx.get(raw.url + "config", timeout=30).json()
    kinds = {c["id"]: c["type"] for c in cfg["components"]}
    dep = next(d for d in cfg["dependencies"] if d["id"] == raw.fns[fn])
    (value,) = [v for cid, v in zip(dep["outputs"], msg["output"]["data"]) if kinds[cid] == "browserstate"]
    return value


def test_deep_links_carry_no_identity_and_no_code_reaches_disk(tiny_models, tmp_path, pool_db):
    """Issue #22: Gradio's deep-link route saved a session's values (the rater's code in plain text) to a file the
    file route served, and a link to it signed whoever opened it in as the attacker."""
    from gradio.utils import get_upload_folder

    from evalkit.rating.seal import key_path, sealer_for

    with served(config(tiny_models, tmp_path), pool_db) as url:
        attacker = Raw(url)
        msg = attacker.call("sign_in", [None, "mallory", "", ""])
        code = re.search(r"`(\d+\.[A-Za-z0-9_-]+)`", json.dumps(msg["output"], ensure_ascii=False)).group(1)
        kept = _browser_code_output(attacker, msg, "sign_in")
        assert kept and code not in kept  # the browser keeps the code sealed, never as is
        assert sealer_for(pool_db).open(kept) == code  # (only the server's key opens it)
        made = httpx.get(url + "gradio_api/deep_link", params={"session_hash": attacker.session}, timeout=30)
        assert made.status_code == 404, made.text
        # a link made before (or by hand): its file is never read, the page loads as usual
        folder = Path(get_upload_folder()) / "deep_links" / "planted"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "state.json").write_text(json.dumps([{"id": 1, "props": {"value": kept}}]))
        page = httpx.get(url, params={"deep_link": "planted"}, timeout=30)
        assert page.status_code == 200 and kept not in page.text
        # the parameter percent-encoded (Starlette decodes it to deep_link for Gradio), beside another parameter
        for query in ("deep%5Flink=planted", "deep%5flink=planted&lang=en", "%64eep_link=planted",
                      "x=1&deep_lin%6B=planted"):
            page = httpx.get(f"{url}?{query}", timeout=30)
            assert page.status_code == 200 and kept not in page.text, query
        served_file = httpx.get(url + f"gradio_api/file={folder / 'state.json'}", timeout=30)
        assert served_file.status_code == 404 and kept not in served_file.text
        config_text = httpx.get(url + "config", timeout=30).text
        assert key_path(pool_db).read_text().strip() not in config_text  # the sealing key is the server's alone
    for f in Path(get_upload_folder()).rglob("*"):  # no code on disk in plain text
        if f.is_file() and f.stat().st_size < 5_000_000:
            assert code not in f.read_text(errors="ignore"), f
    assert oct(key_path(pool_db).stat().st_mode & 0o777) == "0o600"


def test_revoking_or_reissuing_a_code_ends_the_open_sessions(tiny_models, tmp_path, pool_db):
    """Issue #22: after `evalkit raters revoke`, an open tab still submitted, skipped and read the verdict."""
    db = open_db(pool_db)
    ann, olga = raters.add(db, "ann"), raters.add(db, "olga", organiser=True)
    db.conn.close()
    cfg = config(tiny_models, tmp_path, signup="invite", live_access="raters", live_runs_per_hour=0)
    with served(cfg, pool_db) as url:
        tab, boss = Tab(url), Tab(url)
        assert "ann" in tab.call("/sign_in", "", "", ann.code)["who"]
        assert "olga" in boss.call("/sign_in", "", "", olga.code)["who"]
        assert "Verdict" in boss.call("/results")["verdict"]
        assert ann.code in json.dumps(tab.call("/my_code"), ensure_ascii=False)  # the status line now says her code
        db = open_db(pool_db)
        raters.revoke(db, "ann")
        raters.reissue(db, "olga")  # a new code: the old one's sessions end too
        db.conn.close()
        for api, args in (("/submit", ()), ("/skip", ("x",)), ("/correct", ()), ("/next_pair", ()),
                          ("/results", ()), ("/live", ("writing-02", "")), ("/my_code", ())):
            with pytest.raises(AppError, match="revoked"):
                tab.submit() if api == "/submit" else tab.call(api, *args)
        for api in ("/results", "/submit"):
            with pytest.raises(AppError, match="replaced by a new one"):
                boss.submit() if api == "/submit" else boss.call(api)
        # the language switch still relabels the page, and shows a revoked session nothing more (not its progress)
        switched = tab.call("/language", "en", *[None] * (len(tab.params["/language"]) - 1))
        assert switched["who"] == "" and "Keys: **1** pass" in json.dumps(switched, ensure_ascii=False)
        assert ann.code not in json.dumps(switched, ensure_ascii=False)  # the status line is not said again
        with pytest.raises(AppError, match="revoked"):  # and the revoked code signs in no more
            Tab(url).call("/sign_in", "", "", ann.code)
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0


def test_a_revoke_that_commits_while_a_submit_skip_or_correction_is_on_its_way_stores_none_of_them(
        tiny_models, tmp_path, pool_db, monkeypatch):
    """Attacker audit, round 9: each event checked the rater's code before its write and not in it, so a rating, skip
    or correction that had passed the check when `evalkit raters revoke` (or `reissue`) committed was stored after it.
    The code is checked again under the write lock that stores the row: nothing of hers is stored after the commit
    (ann's Submit goes as the page sends it, with its submission's id first: not even its refusal is kept)."""
    import evalkit.ui.rate as rate

    db = open_db(pool_db)
    codes = {name: raters.add(db, name).code for name in ("ann", "bob", "cat")}
    db.conn.close()
    cfg = config(tiny_models, tmp_path, signup="invite", ratings_per_pair=3)

    def across(call, name: str, act) -> str:
        return _committed_across(monkeypatch, pool_db, call, rate, name, act)

    with served(cfg, pool_db) as url:
        tabs = {name: Tab(url) for name in ("bob", "cat")}
        for name, tab in tabs.items():
            assert name in tab.call("/sign_in", "", "", codes[name])["who"]
        page = Raw(url)
        assert page.call("sign_in", [None, "", "", codes["ann"]])["success"]
        assert page.call("sending", [None, uuid.uuid4().hex])["success"]
        assert "revoked" in across(lambda: f"answered: {Raw.error(page.call('submit', [None, *answers()]))}",
                                   "submit_rating", lambda d: raters.revoke(d, "ann"))
        assert "revoked" in across(lambda: _caught(lambda: tabs["bob"].call("/skip", "cannot judge")), "skip_pair",
                                   lambda d: raters.revoke(d, "bob"))
        tabs["cat"].submit()
        tabs["cat"].call("/correct")
        assert "replaced by a new one" in across(lambda: _caught(lambda: tabs["cat"].submit(preference="B")),
                                                 "correct_rating", lambda d: raters.reissue(d, "cat"))
    stored = rows(pool_db, "SELECT rater, kind, preference FROM ratings")
    assert stored == [{"rater": "cat", "kind": "rating", "preference": "A"}]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM submission_refusals")[0]["n"] == 0


def _committed_across(monkeypatch, pool_db, call, module, name: str, act) -> str:
    """`call` (in a thread), held as it reaches module.`name` (past the session's own check of the code, before its
    write) while `act(db)` commits; what it answered or the refusal it raised (_caught's words)."""
    from apphelpers import held_calls

    return _across(pool_db, call, *held_calls(monkeypatch, module, name), act)


def _across(pool_db, call, entered: threading.Event, released: threading.Event, act):
    """`call` (in a thread) held from when it sets `entered` until `released`, while `act(db)` commits; its answer."""
    answer: dict = {}
    worker = threading.Thread(target=lambda: answer.update(out=call()))
    worker.start()
    assert entered.wait(300)
    store = open_db(pool_db)
    act(store)
    store.conn.close()
    released.set()
    worker.join(300)
    return answer["out"]


def _revoked_while_her_live_run_is_held(tiny_models, tmp_path, pool_db, entered: threading.Event,
                                        released: threading.Event, typed: str = "") -> None:
    """ann's Live run (with `typed` material), held from `entered` until `released` while her revoke commits: it is
    refused, saying so, and stores neither its outputs nor her material."""
    db = open_db(pool_db)
    ann = raters.add(db, "ann")
    db.conn.close()
    cfg = config(tiny_models, tmp_path, signup="invite", live_access="raters", live_runs_per_hour=0)
    with served(cfg, pool_db) as url:
        tab = Tab(url)
        assert "ann" in tab.call("/sign_in", "", "", ann.code)["who"]
        said = _across(pool_db, lambda: _caught(lambda: tab.call("/live", "writing-02", typed)), entered, released,
                       lambda d: raters.revoke(d, "ann"))
    assert "revoked" in said, said
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM experiments WHERE kind = 'live'")[0]["n"] == 0
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0


def test_a_revoke_that_commits_while_a_pair_is_served_or_its_hold_renewed_serves_and_renews_nothing(
        tiny_models, tmp_path, pool_db, monkeypatch):
    """Attacker audit, round 10: serving a new pair and renewing a hold checked the rater's code before their write and
    not in it, so a revoke (or re-issue) that committed in between still served a new pair's texts, and recorded its
    hold (Next pair, Check again, a sign-in), or renewed a hold. The code is now checked under the write lock that
    records the hold: the event is refused, saying why, and no hold is recorded or renewed."""
    import evalkit.ui.rate as rate

    db = open_db(pool_db)
    codes = {name: raters.add(db, name).code for name in ("ann", "bob", "cat")}
    db.conn.close()
    cfg = config(tiny_models, tmp_path, signup="invite", ratings_per_pair=3)
    with served(cfg, pool_db) as url:
        ann, bob, cat = Tab(url), Tab(url), Raw(url)
        assert "ann" in ann.call("/sign_in", "", "", codes["ann"])["who"]
        assert Raw.error(cat.call("sign_in", [None, "", "", codes["cat"]])) == ""
        ann.submit()
        (first,) = rows(pool_db, "SELECT pair_id FROM assignments WHERE rater = 'ann'")
        texts = [json.dumps(r["text"], ensure_ascii=False)[1:-1]
                 for r in rows(pool_db, "SELECT text FROM generations WHERE live = 0")]

        def refused(call, name: str, act) -> str:
            """What `call` said when a revoke committed as it reached rate.`name`: no pair's text."""
            out = _committed_across(monkeypatch, pool_db, lambda: _answered(call), rate, name, act)
            said = json.dumps(out, ensure_ascii=False)
            assert not any(text in said for text in texts), said
            return said

        assert "revoked" in refused(lambda: ann.call("/next_pair"), "next_pair", lambda d: raters.revoke(d, "ann"))
        assert "revoked" in refused(lambda: bob.call("/sign_in", "", "", codes["bob"]), "next_pair",
                                    lambda d: raters.revoke(d, "bob"))
        _set_hold(pool_db, "cat", _ago(5))  # a sign of life now renews it (its write, not the minute's read)
        refused(lambda: cat.call("still_here", [None]), "keep_hold", lambda d: raters.reissue(d, "cat"))
    assert rows(pool_db, "SELECT pair_id FROM assignments WHERE rater = 'ann'") == [first]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM assignments WHERE rater = 'bob'")[0]["n"] == 0
    assert rows(pool_db, "SELECT alive_at FROM assignments WHERE rater = 'cat'") == [{"alive_at": None}]


def test_a_revoke_that_commits_as_a_held_pair_is_served_again_serves_nothing(tiny_models, tmp_path, pool_db,
                                                                             monkeypatch):
    """Attacker audit, round 11: a pair the rater already held was served again (a sign-in in another tab, a reload,
    Next pair from a tab whose pair was rated) without the check of her code under the write lock that a new pair has,
    so a revoke committing between the session's check and the resume still sent the pair's texts. The resume now
    passes the same check: refused, saying why, with no pair's text, and no hold recorded or changed."""
    import evalkit.ui.rate as rate

    db = open_db(pool_db)
    codes = {name: raters.add(db, name).code for name in ("ann", "bob")}
    db.conn.close()
    cfg = config(tiny_models, tmp_path, signup="invite", ratings_per_pair=3)
    with served(cfg, pool_db) as url:
        first, rated, holding = Tab(url), Tab(url), Tab(url)
        assert "ann" in first.call("/sign_in", "", "", codes["ann"])["who"]
        assert "bob" in rated.call("/sign_in", "", "", codes["bob"])["who"]
        rated.submit()
        assert "bob" in holding.call("/sign_in", "", "", codes["bob"])["who"]  # bob's second pair, held
        holds = rows(pool_db, "SELECT pair_id, rater, shown_at, alive_at FROM assignments ORDER BY rater, pair_id")
        rated_ = {(x["pair_id"], x["rater"]) for x in rows(pool_db, "SELECT pair_id, rater FROM ratings")}
        held = [r["pair_id"] for r in holds if (r["pair_id"], r["rater"]) not in rated_]
        texts = [json.dumps(r["text"], ensure_ascii=False)[1:-1] for r in rows(
            pool_db, "SELECT g.text FROM generations g JOIN pairs p ON g.id IN (p.a_generation_id, p.b_generation_id) "
                     "WHERE p.id IN (SELECT value FROM json_each(?))", [json.dumps(held)])]
        assert len(held) == 2 and texts

        def refused(call, name: str) -> str:
            """What `call` said when `name`'s revoke committed as it reached rate.next_pair: none of the held texts."""
            out = _committed_across(monkeypatch, pool_db, lambda: _answered(call), rate, "next_pair",
                                    lambda d: raters.revoke(d, name))
            said = json.dumps(out, ensure_ascii=False)
            assert not any(text in said for text in texts), said
            return said

        assert "revoked" in refused(lambda: Tab(url).call("/sign_in", "", "", codes["ann"]), "ann")
        assert "revoked" in refused(lambda: rated.call("/next_pair"), "bob")
    assert rows(pool_db, "SELECT pair_id, rater, shown_at, alive_at FROM assignments ORDER BY rater, pair_id") == holds


def test_a_revoke_that_commits_while_the_results_are_computed_shows_and_records_nothing(tiny_models, tmp_path,
                                                                                       pool_db, monkeypatch):
    """Attacker audit, round 11: the Results checked the viewer's code before computing the study's aggregates (seconds
    over a large study) and not after, so a revoke (or re-issue) committing meanwhile still sent an organiser the
    verdict and the per-path tables, and recorded her view (results_seen) after it. The code is checked again once
    they are computed: refused, saying why, with nothing of the study shown and nothing recorded."""
    from evalkit.aggregate.cache import AggregateCache

    db = open_db(pool_db)
    olga, bob = raters.add(db, "olga", organiser=True), raters.add(db, "bob")
    db.conn.close()
    with served(config(tiny_models, tmp_path, signup="invite"), pool_db) as url:
        boss, rater = Tab(url), Tab(url)
        assert "bob" in rater.call("/sign_in", "", "", bob.code)["who"]
        rater.submit()  # a pair she could be served has a rating: her view of the tables would be recorded
        assert "olga" in boss.call("/sign_in", "", "", olga.code)["who"]
        said = _committed_across(monkeypatch, pool_db, lambda: _caught(lambda: boss.call("/results")), AggregateCache,
                                 "get", lambda d: raters.revoke(d, "olga"))
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM results_seen")[0]["n"] == 0
    assert "revoked" in said and not said.startswith("answered"), said  # refused: no counts, verdict or tables


def test_a_revoke_that_commits_while_a_refusal_is_being_recorded_records_nothing(tiny_models, tmp_path, pool_db,
                                                                                 monkeypatch):
    """Attacker audit, round 10: a submission refused for its answers (past the session's check of the code) kept its
    refusal in the database even when `evalkit raters revoke` committed meanwhile: a row of hers written after the
    revoke. The refusal is recorded under the write lock that checks her code again: nothing is recorded, and she is
    told her code was revoked."""
    import evalkit.ui.rate as rate

    db = open_db(pool_db)
    ann = raters.add(db, "ann")
    db.conn.close()
    with served(config(tiny_models, tmp_path, signup="invite"), pool_db) as url:
        page = Raw(url)
        assert page.call("sign_in", [None, "", "", ann.code])["success"]
        assert page.call("sending", [None, uuid.uuid4().hex])["success"]
        said = _committed_across(monkeypatch, pool_db, lambda: Raw.error(page.call("submit", [None, *answers(a="x")])),
                                 rate, "note_refused", lambda d: raters.revoke(d, "ann"))
    assert "revoked" in said, said
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM submission_refusals")[0]["n"] == 0
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0


def test_a_live_run_whose_rater_is_revoked_while_it_runs_stores_nothing(tiny_models, tmp_path, pool_db, monkeypatch):
    """Attacker audit, round 9: a Live run checked the rater's code as it began only, so one running when `evalkit
    raters revoke` committed stored its outputs, and the material she typed, after it. The code is checked again
    before the run is stored: it is refused, saying why, and nothing is stored."""
    import evalkit.generation.paths as paths
    from apphelpers import held_calls

    _revoked_while_her_live_run_is_held(tiny_models, tmp_path, pool_db, *held_calls(monkeypatch, paths, "run_path"))


def test_a_live_run_whose_rater_is_revoked_mid_stream_stops_streaming(tiny_models, tmp_path, pool_db, monkeypatch):
    """Attacker audit, round 11: a Live run under way streamed its tokens to a revoked rater's screen until it ended
    (only storing it was refused). Her access is now read again while it streams (at most once a second): the
    generation stops at its next token, and she is told her code was revoked, with nothing stored. The test holds the
    run's first generated token until her revoke has committed, then holds the next until the run is told to stop:
    without the check it never is (the streamer's wait runs out, and the run goes on to its end)."""
    import evalkit.generation.paths as paths

    entered, released, stopped = threading.Event(), threading.Event(), threading.Event()
    run_path = paths.run_path

    def running(*args, streamer=None, **kwargs):
        put, puts = streamer.put, []

        def watched(value):  # the first put is the prompt, the second the first generated token
            puts.append(value)
            if len(puts) == 2 and not entered.is_set():
                entered.set()
                released.wait(60)
                deadline = time.monotonic() + 60  # a state awaited, bounded: the run told to stop
                while not streamer.abandoned and time.monotonic() < deadline:
                    time.sleep(0.05)
                if streamer.abandoned:
                    stopped.set()
            return put(value)

        streamer.put = watched
        return run_path(*args, streamer=streamer, **kwargs)

    monkeypatch.setattr(paths, "run_path", running)
    _revoked_while_her_live_run_is_held(tiny_models, tmp_path, pool_db, entered, released)
    assert stopped.is_set()


def test_a_live_run_whose_rater_is_revoked_while_its_models_load_generates_nothing(tiny_models, tmp_path, pool_db,
                                                                                  monkeypatch):
    """Attacker audit, round 11: loading (or training) the Live tab's models can take minutes after the run checked
    the rater's code, and a revoke committing meanwhile let its paths begin streaming to her screen (stopped only at
    the check while it streams). Each path now checks her access as it begins: it is never run."""
    import evalkit.generation.paths as paths
    from apphelpers import held_calls

    ran = []
    run_path = paths.run_path
    monkeypatch.setattr(paths, "run_path", lambda *a, **k: ran.append(1) or run_path(*a, **k))
    # available_paths is asked once the models are loaded, before the first path
    _revoked_while_her_live_run_is_held(tiny_models, tmp_path, pool_db, *held_calls(monkeypatch, paths,
                                                                                     "available_paths"))
    assert ran == []


def test_a_skip_stored_just_before_a_revoke_is_said_to_be_stored(tiny_models, tmp_path, pool_db, monkeypatch):
    """A revoke committing between a skip's write and the serving of the next pair refuses the next pair (round 10);
    the refusal said "nothing was stored" over the skip that was. It now says the skip was stored, in both
    languages."""
    import evalkit.ui.rate as rate

    db = open_db(pool_db)
    ann = raters.add(db, "ann")
    db.conn.close()
    with served(config(tiny_models, tmp_path, signup="invite", ratings_per_pair=3), pool_db) as url:
        tab = Tab(url)
        assert "ann" in tab.call("/sign_in", "", "", ann.code)["who"]
        said = _committed_across(monkeypatch, pool_db, lambda: _caught(lambda: tab.call("/skip", "cannot judge")),
                                 rate, "next_pair", lambda d: raters.revoke(d, "ann"))
    assert "your skip was stored" in said and "跳过已保存" in said and "nothing was stored" not in said, said
    assert rows(pool_db, "SELECT rater, kind FROM ratings") == [{"rater": "ann", "kind": "skip"}]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM assignments")[0]["n"] == 1


def test_a_revoke_that_commits_after_a_live_run_s_last_check_stores_nothing_of_it(tiny_models, tmp_path, pool_db,
                                                                                   monkeypatch):
    """Attacker audit, round 10: the Live tab checked the rater's code again just before storing a run (9a90f55), not
    in the write that stores it, so a revoke committing between that check and the write still stored the run's
    outputs and the material she typed. The code is now checked under the write lock that stores the run."""
    import evalkit.generation.paths as paths
    import evalkit.ui.live as live

    ran, entered, released = threading.Event(), threading.Event(), threading.Event()
    run_path, require_rater = paths.run_path, live.require_rater

    def running(*args, **kwargs):
        ran.set()
        return run_path(*args, **kwargs)

    def checked(*args, **kwargs):  # the check after the run has run: it passes, then the revoke commits
        who = require_rater(*args, **kwargs)
        if ran.is_set():
            entered.set()
            released.wait(60)
        return who

    monkeypatch.setattr(paths, "run_path", running)
    monkeypatch.setattr(live, "require_rater", checked)
    _revoked_while_her_live_run_is_held(tiny_models, tmp_path, pool_db, entered, released,
                                        "A note on bees, typed by ann.")


def _answered(call):
    """What a call answered, or the AppError's words it raised."""
    try:
        return call()
    except AppError as e:
        return str(e)


def _caught(call) -> str:
    """The AppError's words a call raised (an answer instead fails the test where it is read)."""
    try:
        return f"answered: {call()}"
    except AppError as e:
        return str(e)


def test_signing_out_of_the_hub_in_one_tab_ends_the_others(tiny_models, tmp_path, pool_db, monkeypatch):
    """Audit, 2026-12-03: on a Space, a rater who signed out of Hugging Face in one tab (Gradio's /logout) went on
    rating as herself in her other open tabs until the OAuth token expired, and so did a tab whose browser was
    signed in as another account since: each tab kept its sign-in in its server-side state. The sign-in lives in one
    cookie for the whole browser, and every event of a Hub session now compares the token in its cookie to the
    session's own. A real server with Gradio's OAuth routes and session cookie (the routes' local stand-ins: the Hub
    cannot be reached; the profile they hand out is substituted)."""
    from http.cookies import SimpleCookie

    import gradio.oauth

    def account(name):
        return {"access_token": f"tok-{name}", "token_type": "bearer", "scope": "openid profile",
                "userinfo": {"sub": name, "name": name.title(), "preferred_username": name, "profile": "",
                             "picture": ""}}

    hub = account("bea")  # what the next sign-in at the Hub hands out
    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: hub, raising=True)
    cfg = config(tiny_models, tmp_path, allowed_raters=["bea", "cal"])

    def visit(web, path, cookie):
        """The browser follows one of Gradio's OAuth routes to its end; the session cookie it holds then ("" when
        deleted). The cookie is Secure, so it is carried by hand over the test's plain http."""
        while path:
            r = web.get(path, headers={"cookie": f"session={cookie}"} if cookie else {})
            for line in r.headers.get_list("set-cookie"):
                jar = SimpleCookie(line)
                if "session" in jar:
                    cookie = "" if "1970" in jar["session"]["expires"] else jar["session"].value
            path = r.headers.get("location") if r.is_redirect else None
        return cookie

    def ask(tab, api, data, cookie):
        return Raw.error(tab.call(api, data, headers={"cookie": f"session={cookie}"} if cookie else {}))

    def stored():
        return rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"]

    with served(cfg, pool_db, space=True) as url, httpx.Client(base_url=url, timeout=60) as web:
        cookie = visit(web, "login/huggingface", "")
        assert cookie
        first, second = Raw(url), Raw(url)  # two tabs of her browser, each signed in on its page load
        for tab in (first, second):
            assert ask(tab, "sign_in", [None], cookie) == ""
        assert ask(first, "skip", [None, "cannot judge it"], cookie) == "" and stored() == 1
        cookie = visit(web, "logout", cookie)  # she signs out in the first tab
        assert cookie == ""
        for api, data in (("skip", [None, "cannot judge it"]), ("submit", [None, *answers()]), ("next_pair", [None]),
                          ("results", [None])):
            assert "signed out of Hugging Face in this browser" in ask(second, api, data, cookie)
        assert stored() == 1
        hub.clear()
        hub.update(account("cal"))  # someone else signs in to the Hub in the same browser
        cookie = visit(web, "login/huggingface", "")
        assert "signed in as another account" in ask(second, "skip", [None, "cannot judge it"], cookie)
        assert stored() == 1
        third = Raw(url)  # cal's own tab rates as cal
        assert ask(third, "sign_in", [None], cookie) == ""
        assert ask(third, "skip", [None, "cannot judge it"], cookie) == ""
    assert rows(pool_db, "SELECT rater FROM ratings ORDER BY id") == [{"rater": "bea"}, {"rater": "cal"}]


def test_hub_usernames_and_organisations_are_compared_without_case_as_revokes_are(tmp_path, monkeypatch):
    """Hub usernames and organisations are ASCII and the Hub tells them apart by more than case (rating.identity.hub_key).
    A revoke compared them without case (hub_revokes, NOCASE), and so did the Results tab's refusal to revoke an
    organiser, but the sign-in compared app.organisers, app.allowed_raters and app.allowed_orgs with the profile's
    spelling exactly: "alice" in app.organisers signed in as Hub account "Alice" without organiser rights (refused
    even, where an allow-list was set) while her username could not be revoked as "one of app.organisers"; "bea" in
    app.allowed_raters refused "Bea"; an organisation "ACME" was not "acme", at the sign-in nor at the Hub's recheck.
    Every one of them now compares as the revokes do."""
    import gradio as gr

    from evalkit.config import AppConfig
    from evalkit.rating.limits import LimitError
    from evalkit.ui import hubcheck
    from evalkit.ui.auth import Doorman

    db_file = tmp_path / "space.db"
    open_db(db_file).conn.close()
    app = AppConfig(organisers=["alice"], allowed_raters=["bea"], allowed_orgs=["acme"])
    doorman = Doorman(app, db_file, space=True)

    def signs_in(name, orgs=()):
        return doorman.space_identity(gr.OAuthProfile({"name": name, "preferred_username": name, "profile": "",
                                                       "picture": "", "orgs": [{"preferred_username": o} for o in orgs]}))

    alice = signs_in("Alice")
    assert (alice.name, alice.role, alice.organiser) == ("Alice", "organiser", True)
    assert signs_in("Bea").role == "rater" and signs_in("cal", ["ACME"]).role == "rater"
    with pytest.raises(LimitError, match="not on this study's allow-list"):
        signs_in("bob", ["acme-corp"])
    # the Hub's recheck of an organisation's member: not for a rater allowed by name, and "Acme" is acme
    monkeypatch.setattr(hubcheck, "_memory", hubcheck._Memory())
    monkeypatch.setattr(hubcheck, "userinfo", lambda token: {"orgs": [{"preferred_username": "Acme"}]})
    assert not hubcheck.needs_recheck(app, "Bea") and hubcheck.needs_recheck(app, "cal")
    hubcheck.recheck(app, "cal", "tok-cal")
    # a revoke of "BEA" ends Bea's steps (the revokes' own rule, as before)
    raters.hub_access(open_db(db_file), "BEA", "Alice")
    with pytest.raises(raters.SignInError, match="access to this study was revoked"):
        signs_in("Bea")


def test_an_organiser_on_a_space_revokes_a_hub_rater_and_every_step_of_hers_is_refused(tiny_models, tmp_path, pool_db,
                                                                                        monkeypatch):
    """A Hub rater has no code, so nothing revoked her short of editing the Space's config and restarting it. An
    organiser (by her Hub sign-in's credential: app.organisers) now revokes her username from the Results tab; a
    rater calling the same endpoint is refused and nothing is stored. From then on every step of the revoked
    account is refused in her language, nothing stored, and the pair she held goes to another rater; a lift lets
    her in again. A real server with Gradio's OAuth routes and session cookie, each request raw on the queue."""
    from http.cookies import SimpleCookie

    import gradio.oauth

    def account(name):
        return {"access_token": f"tok-{name}", "token_type": "bearer", "scope": "openid profile",
                "userinfo": {"sub": name, "name": name.title(), "preferred_username": name, "profile": "",
                             "picture": ""}}

    hub = {}
    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: hub, raising=True)
    cfg = config(tiny_models, tmp_path, allowed_raters=["bea", "cal"], organisers=["olga"], ratings_per_pair=1,
                 live_access="raters", live_runs_per_hour=0)

    def login(web, name):
        hub.clear()
        hub.update(account(name))
        cookie, path = "", "login/huggingface"
        while path:
            r = web.get(path)
            for line in r.headers.get_list("set-cookie"):
                jar = SimpleCookie(line)
                if "session" in jar:
                    cookie = jar["session"].value
            path = r.headers.get("location") if r.is_redirect else None
        assert cookie
        return cookie

    def ask(tab, api, data, cookie):
        return Raw.error(tab.call(api, data, headers={"cookie": f"session={cookie}"}))

    def held_by(name):
        return [r["pair_id"] for r in rows(pool_db, "SELECT pair_id FROM assignments WHERE rater = ? ORDER BY rowid",
                                           [name])]

    with served(cfg, pool_db, space=True) as url, httpx.Client(base_url=url, timeout=60) as web:
        bea, cal, olga = login(web, "bea"), login(web, "cal"), login(web, "olga")
        tabs = {name: Raw(url) for name in ("bea", "cal", "olga")}
        for name, cookie in (("bea", bea), ("cal", cal), ("olga", olga)):
            assert ask(tabs[name], "sign_in", [None], cookie) == ""
        (bea_pair,) = held_by("bea")
        # a rater cannot revoke, whatever name she types
        refused = ask(tabs["cal"], "hub_revoke", [None, "bea"], cal)
        assert "only the study's organisers can revoke" in refused and "只有本研究的组织者" in refused
        assert rows(pool_db, "SELECT COUNT(*) AS n FROM hub_revokes")[0]["n"] == 0
        assert ask(tabs["olga"], "hub_revoke", [None, "Bea"], olga) == ""  # the Hub's usernames ignore case
        assert rows(pool_db, "SELECT name, revoked_by, lifted_at FROM hub_revokes") == [
            {"name": "Bea", "revoked_by": "olga", "lifted_at": None}]
        for api, data in (("next_pair", [None]), ("skip", [None, "cannot judge it"]), ("submit", [None, *answers()]),
                          ("correct", [None]), ("live", [None, "writing-02", ""]), ("results", [None])):
            said = ask(tabs["bea"], api, data, bea)
            assert "access to this study was revoked by its organiser" in said, (api, said)
            assert "评分权限已被组织者撤销" in said  # her language (the page's first), and the English after it
            assert "ordinary" not in said and "assisted" not in said
        assert "revoked by its organiser" in ask(Raw(url), "sign_in", [None], bea)  # a new tab serves her nothing
        assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0
        assert rows(pool_db, "SELECT COUNT(*) AS n FROM generations WHERE live = 1")[0]["n"] == 0
        assert held_by("bea") == [bea_pair]
        # what she held goes to the others: cal, done with her pair, is served it next
        assert ask(tabs["cal"], "skip", [None, "cannot judge it"], cal) == ""
        assert held_by("cal")[-1] == bea_pair
        assert ask(tabs["olga"], "hub_lift", [None, "bea"], olga) == ""
        assert rows(pool_db, "SELECT lifted_by FROM hub_revokes") == [{"lifted_by": "olga"}]
        assert ask(tabs["bea"], "skip", [None, "cannot judge it"], bea) == ""  # her open tab rates again
    assert rows(pool_db, "SELECT rater FROM ratings ORDER BY id") == [{"rater": "cal"}, {"rater": "bea"}]


def test_every_look_alike_of_a_taken_name_is_refused(tiny_models, tmp_path, pool_db, monkeypatch):
    """Issue #22: with "bob" taken, twelve look-alikes (Armenian, Lisu, small capitals, Hangul fillers, Arabic-Indic,
    Myanmar, Malayalam digits; Greek lunate sigma, Cyrillic shha and palochka in the names they imitate) and names
    of filler characters alone or with a variation selector were accepted."""
    import evalkit.ui.auth as auth
    from evalkit.rating.limits import SignInGuard

    monkeypatch.setattr(auth, "SignInGuard", lambda: SignInGuard(free_attempts=1000))  # every refusal is seen
    taken = {"bob": ["b\u0585b", "\ua4d0ob", "b\u1d0fb", "\u0299ob", "\u0299\u1d0f\u0299", "b\u0665b",
                     "b\u101db", "b\u0d66b"],
             "cora": ["\u03f2ora"], "hal": ["\u04bbal"], "lee": ["\u04cfee"]}
    invisible = ["bob\u3164", "b\u115fob", "\u3164", "\u3164\u3164", "bob\ufe0f", "\ufe0f", "bob\U000e0101"]
    with served(config(tiny_models, tmp_path), pool_db) as url:
        for name in taken:
            Tab(url).sign_in(name)
        for name, fakes in taken.items():
            for fake in fakes:
                with pytest.raises(AppError, match=f"is taken \\(it looks like '{name}'\\)"):
                    Tab(url).call("/sign_in", fake, "", "")
        for fake in invisible:
            with pytest.raises(AppError, match="invisible or control"):
                Tab(url).call("/sign_in", fake, "", "")
    assert sorted(r["name"] for r in rows(pool_db, "SELECT name FROM raters")) == sorted(taken)


def test_the_sign_in_limiter_keys_on_the_identity_not_the_text(tmp_path, caplog):
    """Issue #22: "02.x", "0002.x" and "٢.x" all reached rater 2 under different keys (eight wrong codes from eight
    addresses were all checked, none slowed), and a 30-digit id raised an uncounted error with a traceback."""
    from evalkit.config import AppConfig
    from evalkit.errors import EvalkitError
    from evalkit.ui.auth import Doorman

    db_file = tmp_path / "ids.db"
    db = open_db(db_file)
    raters.add(db, "zed")
    cred = raters.add(db, "ann")
    db.conn.close()
    rid, secret = cred.code.split(".")
    wrong = secret[::-1]
    doorman = Doorman(AppConfig(signup="invite"), db_file, space=False)
    forms = [f"{'0' * k}{rid}.{wrong}" for k in range(8)]  # one owner, eight spellings, eight addresses
    seen = []
    for i, form in enumerate(forms):
        with pytest.raises(EvalkitError) as e:
            doorman.local("", form, "", f"client:10.0.0.{i}")
        seen.append(e.value.what)
    assert seen[:5] == ["that code is not valid"] * 5 and all("too many" in w for w in seen[5:]), seen
    arabic = "".join(chr(0x0660 + int(d)) for d in rid)
    with caplog.at_level("WARNING", logger="evalkit.ui"):
        for i, junk in enumerate([f"{arabic}.{secret}", "9" * 30 + "." + secret, "x" * 100_000]):
            with pytest.raises(EvalkitError, match="not valid"):  # no code: a counted failure, refused
                doorman.local("", junk, "", f"client:junk{i}")
    logged = [r for r in caplog.records if r.name == "evalkit.ui"]
    assert len(logged) == 3 and all(r.exc_info is None and "\n" not in r.getMessage() and len(r.getMessage()) < 200
                                    for r in logged)


def test_wrong_codes_for_a_raters_id_never_lock_the_rater_out(tmp_path):
    """Issue #22: rater ids are sequential; eight wrong codes for id 7 from other addresses left rater 7's correct
    code refused for up to 15 minutes. A client that signed in as the rater, and a browser that keeps its sealed
    code, are never held back by strangers' failures."""
    from evalkit.config import AppConfig
    from evalkit.errors import EvalkitError
    from evalkit.ui.auth import Doorman

    db_file = tmp_path / "lock.db"
    db = open_db(db_file)
    cred = raters.add(db, "ann")
    db.conn.close()
    rid = cred.code.split(".")[0]
    doorman = Doorman(AppConfig(signup="invite"), db_file, space=False)
    ann, _ = doorman.local("", cred.code, "", "client:home")
    sealed = doorman.seal(cred.code)
    for i in range(8):
        with pytest.raises(EvalkitError):
            doorman.local("", f"{rid}.{'A' * 24}", "", f"client:attacker{i}")
    assert doorman.local("", cred.code, "", "client:home")[0].name == "ann"  # her correct code, from home
    assert doorman.resume(sealed, "client:cafe")[0].name == "ann"  # her browser, anywhere
    # her correct code from an address new to her gets through too (audit: a correct code always does); a wrong code
    # for her id still waits there
    assert doorman.local("", cred.code, "", "client:new-place")[0].name == "ann"
    with pytest.raises(EvalkitError, match="too many"):
        doorman.local("", f"{rid}.{'B' * 24}", "", "client:other-place")


def test_failures_behind_a_shared_address_never_hold_back_a_correct_code_or_link(tiny_models, tmp_path, pool_db,
                                                                                  monkeypatch):
    """Audit: failed sign-ins are counted per client address, so anyone behind the same address (a NAT, a campus
    network) held an invited rater's correct code back for up to 15 minutes, and her invitation link then read
    "invalid". A correct code now always signs in; a link that the guard's wait refuses says to wait."""
    import evalkit.ui.auth as auth
    from evalkit.rating.limits import SignInGuard

    monkeypatch.setattr(auth, "SignInGuard", lambda: SignInGuard(clock=lambda: 1000.0))  # the wait never runs out
    db = open_db(pool_db)
    ann, bob = raters.add(db, "ann"), raters.add(db, "bob")
    db.conn.close()
    with served(config(tiny_models, tmp_path, signup="invite"), pool_db) as url:
        # someone behind the same address (127.0.0.1, as every client here) guesses codes of other ids
        seen = [Raw.error(Raw(url).call("sign_in", [None, "", "", f"{900 + i}.{'A' * 24}"])) for i in range(6)]
        assert all("not valid" in e for e in seen[:5]) and "too many sign-in attempts" in seen[5], seen
        msg = Raw(url).call("sign_in", [None, "", "", ann.code])  # her own code, typed
        assert msg["success"] and "ann" in json.dumps(msg["output"], ensure_ascii=False), Raw.error(msg)
        link = Raw(url)  # bob's invitation link (the page load reads ?invite=CODE), his first sign-in from here
        msg = link.call("resume_local", [None, ""], params={"invite": bob.code})
        shown = json.dumps(msg["output"], ensure_ascii=False)
        assert msg["success"] and "bob" in shown and "邀请链接无效" not in shown, shown
        # a link the wait refuses (its code is wrong) says so, not "invalid"
        wrong = f"{bob.code.split('.')[0]}.{'C' * 24}"
        shown = json.dumps(Raw(url).call("resume_local", [None, ""], params={"invite": wrong})["output"],
                           ensure_ascii=False)
        assert "秒后重新打开链接" in shown and "邀请链接无效" not in shown, shown
        assert "too many sign-in attempts" in Raw.error(Raw(url).call("sign_in", [None, "", "", wrong]))


def test_a_forwarded_for_header_names_no_new_client_locally(tiny_models, tmp_path, pool_db, monkeypatch):
    """Audit: uvicorn believes X-Forwarded-For from 127.0.0.1 by default and rewrote the client's address with it, so
    a new header on each request was a new client to every per-client limit (wrong passcodes and codes, new names).
    Locally the header is now ignored: the limits hold against a served app with the header rotated."""
    import evalkit.ui.auth as auth
    from evalkit.rating.limits import SignInGuard

    monkeypatch.setattr(auth, "SignInGuard", lambda: SignInGuard(clock=lambda: 1000.0))  # the wait never runs out
    cfg = config(tiny_models, tmp_path, passcodes=["s3cret"], signups_per_client_per_hour=2)
    with served(cfg, pool_db) as url:
        def sign_in(i: int, name: str, passcode: str = "", code: str = "") -> str:
            forwarded = {"x-forwarded-for": f"10.9.{i}.{i + 1}"}
            return Raw.error(Raw(url).call("sign_in", [None, name, passcode, code], headers=forwarded))

        assert sign_in(0, "r0", "s3cret") == "" and sign_in(1, "r1", "s3cret") == ""
        assert "too many new names" in sign_in(2, "r2", "s3cret")  # a counted failure (1)
        seen = [sign_in(3 + i, f"eve{i}", f"guess{i}") for i in range(4)]  # failures 2 to 5
        assert all("passcode is not right" in e for e in seen), seen
        assert "too many sign-in attempts" in sign_in(7, "eve7", "guess7")
        assert "too many sign-in attempts" in sign_in(8, "", "", f"901.{'A' * 24}")
    assert sorted(r["name"] for r in rows(pool_db, "SELECT name FROM raters")) == ["r0", "r1"]


@contextlib.contextmanager
def space_served(tiny_models, tmp_path, pool_db, monkeypatch, **app):
    """A real server with a Space's environment (Gradio's OAuth routes given stand-in settings: the Hub is not
    reached); yields its URL."""
    import gradio.http_server
    import gradio.oauth

    monkeypatch.setattr(gradio.http_server, "watchfn_spaces", lambda reloader: None)  # a Space's hot reload: none here
    for var, value in (("OAUTH_CLIENT_ID", "id"), ("OAUTH_CLIENT_SECRET", "secret"), ("OAUTH_SCOPES", "openid"),
                       ("OPENID_PROVIDER_URL", "https://hub.invalid")):
        monkeypatch.setattr(gradio.oauth, var, value)
    monkeypatch.setenv("SPACE_ID", "org/study")
    monkeypatch.setenv("SYSTEM", "spaces")
    with served(config(tiny_models, tmp_path, **app), pool_db, space=True) as url:
        yield url


def live_run(url: str, headers: dict | list) -> str:
    """A Live run from a new session (only the client's limit can refuse it); its refusal ('' when it ran)."""
    return Raw.error(Raw(url).call("live", [None, "writing-02", ""], headers=headers))


def test_on_a_space_an_x_forwarded_for_the_client_sent_names_no_new_client(tiny_models, tmp_path, pool_db,
                                                                            monkeypatch):
    """Attacker audit round 6: on a Space the client was the FIRST X-Forwarded-For entry, and a proxy that appends
    (as proxies do) leaves the header the client sent on the left: each request could name a new client and pass
    every per-client limit. Raw queue requests with the header a forging client's proxy would pass on."""
    with space_served(tiny_models, tmp_path, pool_db, monkeypatch, live_access="anyone", live_runs_per_hour=1) as url:
        def run(forwarded: str) -> str:
            return live_run(url, {"x-forwarded-for": forwarded})

        assert run("81.2.69.160") == ""  # her proxy's entry alone
        for forged in ("5.1.7.9", "5.2.7.9, 81.2.69.161", "10.0.0.9"):  # her own entries, the proxy's appended
            assert "hourly limit is reached" in run(f"{forged}, 81.2.69.160"), forged
        assert "hourly limit is reached" in run("5.3.7.9, 81.2.69.160, 10.16.3.80")  # the proxy's internal hop too
        assert run("81.2.69.161, 10.16.3.80") == ""  # another client through the same hop has a limit of its own
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM experiments WHERE kind = 'live'")[0]["n"] == 2


def test_on_a_space_an_x_forwarded_for_line_of_the_client_s_own_names_no_new_client(tiny_models, tmp_path, pool_db,
                                                                                     monkeypatch):
    """Attacker audit round 6: a proxy may add its X-Forwarded-For as a line of its own after the one the client sent
    (one header in two lines, read in order); only the first line was read, and it was the client's."""
    with space_served(tiny_models, tmp_path, pool_db, monkeypatch, live_access="anyone", live_runs_per_hour=1) as url:
        def run(*lines: str) -> str:
            return live_run(url, [("x-forwarded-for", line) for line in lines])

        assert run("81.2.69.160") == ""
        for forged in ("5.1.7.9", "5.2.7.9, 5.2.7.10"):
            assert "hourly limit is reached" in run(forged, "81.2.69.160"), forged
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM experiments WHERE kind = 'live'")[0]["n"] == 1


def _request(host: str, forwarded: str = ""):
    """What client_key reads of a gr.Request: the socket's address and the headers."""
    from types import SimpleNamespace

    return SimpleNamespace(client=SimpleNamespace(host=host), headers={"x-forwarded-for": forwarded} if forwarded else {})


def test_an_ipv6_client_is_keyed_by_its_64_and_an_ipv4_mapped_one_by_its_ipv4_address():
    """Attacker audit round 5: the per-client limits were keyed by the full address, and an IPv6 client is given a
    whole /64 (2^64 addresses): each new address was a new client. A dual-stack server sees an IPv4 client as
    ::ffff:a.b.c.d, one client under two keys."""
    from evalkit.ui.auth import client_key

    one_64 = {client_key(_request(h), space=False) for h in ("2001:db8:7:8::1", "2001:db8:7:8:ffff:1:2:3",
                                                              "2001:DB8:7:8:0:0:0:9")}
    assert one_64 == {"client:2001:db8:7:8::/64"}
    assert client_key(_request("2001:db8:7:9::1"), space=False) == "client:2001:db8:7:9::/64"  # the next /64
    assert client_key(_request("::ffff:10.1.2.3"), space=False) == client_key(_request("10.1.2.3"), space=False)
    assert client_key(_request("10.1.2.3"), space=False) != client_key(_request("10.1.2.4"), space=False)
    # behind a Space's proxy, the forwarded address is keyed alike; locally the header is still ignored
    spaced = client_key(_request("10.0.0.1", "2a01:4f8:7:8::abcd, 10.0.0.1"), space=True)
    assert spaced == "client:2a01:4f8:7:8::/64"
    assert client_key(_request("10.0.0.1", "2001:db8:7:8::abcd"), space=False) == "client:10.0.0.1"


def test_on_a_space_a_port_the_proxy_writes_with_the_client_s_address_names_no_new_client():
    """Attacker audit round 6: some proxies write the client's port with its address in X-Forwarded-For
    ("81.2.69.160:5123", "[2a01:4f8::1]:443"); the port changes with each connection, and each was a new client."""
    from evalkit.ui.auth import client_key

    keys = {client_key(_request("10.0.0.1", f"5.{i}.7.9, {entry}, 10.16.3.80"), space=True)
            for i, entry in enumerate(("81.2.69.160:5123", "81.2.69.160:6001", "81.2.69.160"))}
    assert keys == {"client:81.2.69.160"}, keys
    keys = {client_key(_request("10.0.0.1", entry), space=True) for entry in ("[2a01:4f8:7:8::1]:443",
                                                                               "[2a01:4f8:7:8::2]:80", "2a01:4f8:7:8::3")}
    assert keys == {"client:2a01:4f8:7:8::/64"}, keys


def test_the_new_names_and_sign_in_limits_hold_across_the_addresses_of_one_64(tmp_path, monkeypatch):
    """Attacker audit round 5: from one IPv6 /64, a new address for each new name passed the new-names limit, and a new
    address for each guess passed the sign-in guard. The Doorman (real SQLite) with the client keys of such requests."""
    import evalkit.ui.auth as auth
    from evalkit.config import AppConfig
    from evalkit.errors import EvalkitError
    from evalkit.rating.limits import SignInGuard

    monkeypatch.setattr(auth, "SignInGuard", lambda: SignInGuard(clock=lambda: 1000.0))  # the wait never runs out
    db_file = tmp_path / "v6.db"
    open_db(db_file).conn.close()
    doorman = auth.Doorman(AppConfig(signup="open", signups_per_client_per_hour=1, passcodes=["s3cret"]), db_file,
                           space=False)

    def key(i: int, prefix: str = "2001:db8:7:8") -> str:
        return auth.client_key(_request(f"{prefix}:{i:x}:{i + 1:x}:{i + 2:x}:{i + 3:x}"), space=False)

    assert doorman.local("r0", "", "s3cret", key(1))[0].name == "r0"
    with pytest.raises(EvalkitError, match="too many new names"):
        doorman.local("r1", "", "s3cret", key(2))  # another address of the same /64
    assert doorman.local("r2", "", "s3cret", key(3, "2001:db8:7:9"))[0].name == "r2"  # another /64 is another client
    seen = []
    for i in range(4, 10):  # wrong passcodes, a new address of the /64 each
        with pytest.raises(EvalkitError) as e:
            doorman.local(f"eve{i}", "", f"guess{i}", key(i))
        seen.append(e.value.what)
    # the refused new name was a counted failure: four guesses are checked, then the /64 waits
    assert seen[:4] == ["that passcode is not right"] * 4 and all("too many sign-in attempts" in w for w in seen[4:]), seen

# Five senders, each posting 60 MB bodies (64 KB chunks, chunked encoding) to the queue, in their own process (so that
# the senders' work is not the server's), until the test closes their stdin. Prints what each answer was.
_FLOOD = """
import sys, threading, httpx
url, stop, outcome = sys.argv[1], threading.Event(), []
def body():
    chunk = b"x" * 65536
    for _ in range(60 * 16):
        yield chunk
def send():
    while not stop.is_set():
        try:
            outcome.append(str(httpx.post(url + "gradio_api/queue/join", content=body(), timeout=30).status_code))
        except httpx.HTTPError:
            outcome.append("closed")  # refused before the sender finished: the connection is closed
threads = [threading.Thread(target=send) for _ in range(5)]
[t.start() for t in threads]
sys.stdin.read()  # until the test is done with the flood
stop.set()
[t.join() for t in threads]
print(" ".join(outcome))
"""


def _bodies_read(monkeypatch):
    """The app's RequestGuard watched: for each chunked request it ended, what it read of the body (bytes, and the last
    message's), in the order they ended; and a Condition notified at each."""
    from evalkit.ui.guard import RequestGuard

    read, ended, call = [], threading.Condition(), RequestGuard.__call__

    async def counted(self, scope, receive, send):
        got = [0, 0]

        async def counting():
            message = await receive()
            got[:] = [got[0] + len(message.get("body", b"")), len(message.get("body", b""))]
            return message

        try:
            return await call(self, scope, counting, send)
        finally:
            if scope["type"] == "http" and b"content-length" not in dict(scope.get("headers") or []) and got[0]:
                with ended:
                    read.append(tuple(got))
                    ended.notify_all()

    monkeypatch.setattr(RequestGuard, "__call__", counted)
    return read, ended


def test_request_bodies_and_typed_text_are_bounded(tiny_models, tmp_path, pool_db, monkeypatch):
    """Issue #22: five concurrent 60 MB bodies to the queue took the server from 228 MB to 845 MB (2.75 GB as sign-in
    names) and raised another user's latency from 0.01 s to 0.94 s: the server read every body whole. Every body is
    now capped at 64 KB (413), chunked ones counted as they arrive. The bound stated here is the work, not the time
    (a latency compared with one measured before failed by chance on two shared cores): while five clients send 60 MB
    bodies, the server reads no flooding body past the message that takes it over the cap, it grows by less than
    64 MB over 20 of them, and another user's requests, sent while the flood goes on, are all answered."""
    import subprocess
    import sys

    from evalkit.ui.guard import MAX_BODY

    def rss_mb() -> float:
        return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20

    read, ended = _bodies_read(monkeypatch)
    with served(config(tiny_models, tmp_path), pool_db) as url, httpx.Client(timeout=30) as victim:
        declared = httpx.post(url + "gradio_api/queue/join", content=b"x" * (MAX_BODY + 1), timeout=30)
        assert declared.status_code == 413
        name = "n" * (10 * 2**20)  # a 10 MB sign-in name, as JSON
        big = httpx.post(url + "gradio_api/queue/join", json={"data": [None, name, "", ""], "fn_index": 0,
                                                               "session_hash": "x"}, timeout=30)
        assert big.status_code == 413
        del name
        before = rss_mb()
        flood = subprocess.Popen([sys.executable, "-c", _FLOOD, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        try:
            with ended:  # the flood is under way: 20 bodies (1.2 GB, were they read whole) ended
                assert ended.wait_for(lambda: len(read) >= 20, timeout=120), read
            for _ in range(9):
                victim.get(url + "gradio_api/queue/status").raise_for_status()
            with ended:  # and it went on after them: they were answered while it lasted
                answered = len(read)
                assert ended.wait_for(lambda: len(read) > answered, timeout=120), read
            grown = rss_mb() - before
        finally:
            outcome = flood.communicate(timeout=120)[0].split()  # its stdin closed: the senders stop
        # a name under the body cap but over the name limit is refused before any work on it
        with pytest.raises(AppError, match="too long"):
            Tab(url).call("/sign_in", "n" * 20_000, "", "")
    assert outcome and set(outcome) <= {"413", "closed"}, outcome
    assert all(total - last <= MAX_BODY for total, last in read), read  # no read past the message over the cap
    assert grown < 64, f"the server grew by {grown:.0f} MB"
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM raters")[0]["n"] == 0


def test_a_pool_with_one_text_on_both_paths_is_reported(pool_db):
    """Issue #22: one writing-02 text appeared in two pairs, ordinary in one and assisted in the other; a rater
    who meets it twice learns nothing from one reveal. The pool says so."""
    from evalkit.study.pairs import texts_on_both_paths

    db = open_db(pool_db)
    assert texts_on_both_paths(db) == []
    a, b = list(db.query("SELECT ordinary_generation_id AS o, assisted_generation_id AS s FROM pairs "
                         "WHERE prompt_id = 'writing-02' AND kind = 'study'"))[:2]
    text = db.execute("SELECT text FROM generations WHERE id = ?", [a["o"]]).fetchone()[0]
    db.conn.execute("UPDATE generations SET text = ? WHERE id = ?", [text, b["s"]])
    db.conn.commit()
    (found,) = texts_on_both_paths(db)
    assert found.prompt_id == "writing-02" and found.pairs == 2
    db.conn.close()


@pytest.fixture(scope="module")
def gold_pool(tiny_models, tmp_path_factory) -> Path:
    """A pool built the way the app builds one, with gold pairs (pool.gold_rate = 0.5), in both languages."""
    from draws import seed_of, seeded_draws

    from evalkit.study.pairs import build_pool

    root = tmp_path_factory.mktemp("gold-pool")
    cfg = load_config(write_config(root / "gold.toml", tiny_models))
    cfg.pool.prompts, cfg.pool.samples, cfg.pool.gold_rate = ["writing-01", "writing-02", "writing-05"], 2, 0.5
    db_file = root / "gold.db"
    # Fixed draws (a module fixture is built before the tests' autouse seeded_pool_draws): decoding.seed as its base,
    # as every pool had before secret bases, since the form comparison below tests at 5% on 6 gold and 12 study
    # texts, so with a new secret base per run it would fail on some draws (3 of 15 tried); the gold edits and
    # sides from a seeded stream too.
    with seeded_draws(seed_of("tests/test_security.py::gold_pool")):
        result = build_pool(cfg, db_file, progress=False, echo=lambda *_: None)
    assert (result.pairs, result.gold) == (6, 3)
    return db_file


def _form(text: str) -> dict:
    import unicodedata

    return {"length": len(text), "line breaks": text.count("\n"),
            "punctuation": sum(unicodedata.category(c).startswith("P") for c in text)}


def test_gold_pairs_are_pooled_outputs_in_no_public_file_and_of_the_same_form(gold_pool):
    """Issue #22: the gold texts were verbatim in prompts/*.toml with their answers (public files), and differed in
    form from the pooled outputs (no line breaks where every study output had some). Gold pairs are now made when
    the pool is built, from extra pooled samples, one output changed by a controlled edit with a known answer."""
    from scipy.stats import mannwhitneyu

    root = Path(__file__).resolve().parent.parent
    gold = rows(gold_pool, "SELECT r.text, r.expected FROM pairs p JOIN reference_outputs r "
                           "ON r.id IN (p.a_reference_id, p.b_reference_id) WHERE p.kind = 'gold'")
    study = rows(gold_pool, "SELECT g.text FROM pairs p JOIN generations g "
                            "ON g.id IN (p.a_generation_id, p.b_generation_id) WHERE p.kind = 'study'")
    assert len(gold) == 6 and len(study) == 12
    public = [f.read_text(encoding="utf-8") for pattern in ("prompts/*.toml", "configs/*.toml", "*.md")
              for f in root.glob(pattern)]
    for g in gold:
        assert not any(g["text"].strip() in text for text in public if g["text"].strip())
    edited = [g for g in gold if json.loads(g["expected"])]
    assert len(edited) == 3 and all(set(json.loads(g["expected"]).values()) == {"fail"} for g in edited)
    for feature in ("length", "line breaks", "punctuation"):
        g_values, s_values = [_form(g["text"])[feature] for g in gold], [_form(s["text"])[feature] for s in study]
        if len(set(g_values + s_values)) > 1:
            p = mannwhitneyu(g_values, s_values).pvalue
            assert p > 0.05, (feature, g_values, s_values)


@pytest.mark.browser
def test_an_invitation_link_leaves_the_address_bar_and_a_reload_resumes_from_the_sealed_code(tiny_models, tmp_path,
                                                                                           pool_db):
    """Issue #22: `?invite=CODE` stayed in the address bar and the history after sign-in."""
    from apphelpers import chromium_page
    from playwright.sync_api import expect

    db = open_db(pool_db)
    cred = raters.add(db, "ann")
    db.conn.close()
    with served(config(tiny_models, tmp_path, signup="invite"), pool_db) as url, chromium_page() as page:
        page.goto(cred.link(url))
        expect(page.locator("#rate-who")).to_contain_text("ann")
        page.wait_for_function("() => !window.location.search.includes('invite')", timeout=30_000)
        assert cred.code not in page.url  # replaced in this history entry, not pushed after it
        assert cred.code not in page.evaluate("JSON.stringify(window.localStorage)")
        page.goto(url)  # a reload without the link: the browser's sealed code signs her in again
        expect(page.locator("#rate-who")).to_contain_text("ann")


# --- an organiser who has seen the results while still rating -------------------------------------------------

def test_an_organiser_who_saw_the_results_while_pairs_she_could_rate_had_ratings_no_longer_counts(tiny_models,
                                                                                                  tmp_path, pool_db):
    """Organisers see the Results at any time and may rate too. Per-path tables over a few rated pairs can tell the
    sides of a pair she could still be served, so once she has seen them with such a pair open her ratings in that
    study are kept (blind = 0) but count for nothing: not in the verdict, not towards any pair's quota. While no pair
    she could rate has ratings (a study's start) and the speed comes from a benchmark, the Results tell her nothing
    about an open pair, and her ratings count. Without a benchmark the speed tables time every pooled pair by path,
    rated or not (audit, 2026-12-02): then any look while she could still rate is recorded."""
    from evalkit.records import GenerationRecord, ProcessRecord, TimingRun
    from evalkit.store import insert_bench_process, insert_experiment

    cfg = config(tiny_models, tmp_path, ratings_per_pair=3)
    db = open_db(pool_db)
    olga, oscar = raters.add(db, "olga", organiser=True).code, raters.add(db, "oscar", organiser=True).code
    pia = raters.add(db, "pia", organiser=True).code
    db.conn.close()
    with served(cfg, pool_db) as url:
        early = Tab(url)
        early.call("/sign_in", "", "", pia)
        assert "不再计分" in early.call("/results")["verdict"]  # the pool's own timings, by path
        assert rows(pool_db, "SELECT rater FROM results_seen") == [{"rater": "pia"}]
        db = open_db(pool_db)  # a benchmark: the speed tables no longer time the pooled pairs
        bench = insert_experiment(db, "bench", cfg.to_dict(), {})
        rated = [r[0] for r in db.execute("SELECT DISTINCT prompt_id FROM pairs WHERE kind = 'study'")]
        for path, secs in (("ordinary", 2.0), ("assisted", 1.0)):  # every prompt the study rates: it measures them
            timed = []
            for prompt_id in rated:
                run = TimingRun(path=path, prompt_id=prompt_id, round=1, rep=0, seed=1, new_tokens=10,
                                stop_reason="eos", seconds=secs, device="cpu")
                rec = GenerationRecord(prompt_id=prompt_id, path=path, new_tokens=10, stop_reason="eos", device="cpu")
                timed.append((run, [rec]))
            insert_bench_process(db, bench, ProcessRecord(path=path, round=1, order=0, device="cpu"), timed)
        db.conn.close()
        boss = Tab(url)
        boss.call("/sign_in", "", "", oscar)
        assert "ratings no longer count" not in boss.call("/results")["verdict"]  # nothing rated: nothing to tell
        boss.submit()
        ann = Tab(url)
        ann.sign_in("ann")
        ann.submit()
        assert {r["blind"] for r in rows(pool_db, "SELECT blind FROM ratings")} == {1}  # oscar's counts

        org = Tab(url)
        who = org.call("/sign_in", "", "", olga)["who"]
        assert "once you open Results while you still rate" in who or "在评分期间查看结果后" in who
        seen = org.call("/results")  # pairs she could be served have ratings now
        assert "ratings no longer count" in seen["verdict"] or "你的评分不再计分" in seen["verdict"]
        stored = org.submit()
        assert "kept but not counted" in stored["status"] or "只作记录、不计分" in stored["status"]
        # the reveal under it says the same (organiser audit M3: it said "your rating ... counts")
        assert "只作记录、不计分" in stored["reveal"] and "并且计入" not in stored["reveal"]
        assert "计入的就是它" not in stored["reveal"]
        (mine,) = rows(pool_db, "SELECT pair_id, blind FROM ratings WHERE rater = 'olga'")
        assert mine["blind"] == 0  # kept, not counted
        counted = rows(pool_db, "SELECT rater FROM current_ratings WHERE pair_id = ?", [mine["pair_id"]])
        assert "olga" not in {r["rater"] for r in counted}
        assert not rows(pool_db, "SELECT 1 FROM closed_pairs WHERE pair_id = ?", [mine["pair_id"]])  # fills no quota
        who = org.call("/next_pair")["who"]
        assert "你已查看结果" in who and "在评分期间查看结果后" not in who  # told she has seen them, not warned
        org.submit()  # her next pair too: the store decides, from the record, whatever the client sends
        assert {r["blind"] for r in rows(pool_db, "SELECT blind FROM ratings WHERE rater = 'olga'")} == {0}

        # oscar's rating counted; ann rates a pair he has not met, he looks now, and corrects his rating before its
        # pair is revealed: a blind correction would count, this one is kept but not counted
        ann.call("/next_pair")
        ann.submit()
        assert "ratings no longer count" in boss.call("/results")["verdict"] or "不再计分" in boss.call("/results")["verdict"]
        status = boss.call("/correct")["status"]
        assert "kept but not counted" in status or "只作记录，不计分" in status
        boss.submit(a="fail", b="pass", preference="B")
        history = rows(pool_db, "SELECT id, blind, supersedes FROM ratings WHERE rater = 'oscar' ORDER BY id")
        assert [(h["blind"], h["supersedes"]) for h in history] == [(1, None), (0, history[0]["id"])]
        assert history[0]["id"] in {r["id"] for r in rows(pool_db, "SELECT id FROM current_ratings")}


def test_the_live_stop_stops_only_its_own_page_s_run_and_answers_nothing_else(tiny_models, tmp_path, pool_db,
                                                                              monkeypatch):
    """The Live tab's Stop (2026-12-04) is an event without a credential: sent raw from another session (a forged
    page), it must not stop someone else's run, and its answer is one fixed sentence (no state, no path, no pair)."""
    import evalkit.ui.live as live

    made, streaming, answered = live._text_buffer, threading.Event(), threading.Event()

    def held_buffer(*a, **kw):  # the run holds at its first token until the other session's Stop has answered
        buf = made(*a, **kw)
        put = buf.put
        buf.put = lambda value: (streaming.set(), answered.wait(60), put(value))[2]
        return buf

    monkeypatch.setattr(live, "_text_buffer", held_buffer)
    with served(config(tiny_models, tmp_path), pool_db) as url:
        runner, other = Raw(url), Raw(url)
        cfg = httpx.get(url + "config", timeout=30).json()
        stop_button = next(c["id"] for c in cfg["components"] if c.get("props", {}).get("elem_id") == "live-stop")
        (stop,) = [d for d in cfg["dependencies"] if stop_button in [t[0] for t in d["targets"]]]
        done = {}
        t = threading.Thread(target=lambda: done.setdefault("run", runner.call("live", [None, "writing-02", ""])))
        t.start()
        # the Stop comes once the run streams (a fixed two seconds could pass before a loaded machine began it, and
        # the test then stopped nothing), and the run goes on only once it has answered (each token slowed by a
        # tenth of a second could end, on a loaded machine, before the Stop came, and the run not stopped then
        # proved nothing): had it set this run's flag, the run would stop at its next token
        assert streaming.wait(120), done
        try:
            with httpx.Client(base_url=url, timeout=30) as c:  # queue=False: Gradio's direct route
                answer = c.post("gradio_api/run/predict", json={"data": [], "fn_index": stop["id"],
                                                                  "session_hash": other.session, "event_data": None,
                                                                  "trigger_id": None})
        finally:
            answered.set()
        t.join(timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"] == [live.STOP_SENT]  # the fixed words only
    run = done["run"]
    assert run["success"], Raw.error(run)
    assert any(isinstance(v, str) and v.startswith("Done.") for v in run["output"]["data"])  # not stopped
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM experiments WHERE kind = 'live'")[0]["n"] == 1


# --- 8. the hold's sign of life (still_here) and the screens that serve no pair ----------------------------------

def _ago(minutes: float) -> str:
    from datetime import datetime, timedelta, timezone
    return (datetime.now(timezone.utc) - timedelta(minutes=minutes)).isoformat(timespec="milliseconds")


def _holds(db_file) -> dict:
    return {(r["rater"], r["pair_id"]): (r["shown_at"], r["alive_at"])
            for r in rows(db_file, "SELECT rater, pair_id, shown_at, alive_at FROM assignments")}


def _set_hold(db_file, rater: str, shown_at: str, alive_at: str | None = None) -> None:
    con = sqlite3.connect(db_file)
    with con:
        con.execute("UPDATE assignments SET shown_at = ?, alive_at = ? WHERE rater = ?", [shown_at, alive_at, rater])
    con.close()


def _says_nothing(msg: dict, *secrets_: str) -> None:
    """A sign of life answers nothing: no output, no error text, none of `secrets_` (names, pair ids, paths)."""
    assert msg["success"] and not any(v not in (None, [], {}) for v in (msg["output"] or {}).get("data", [])), msg
    sent = json.dumps(msg, ensure_ascii=False)
    for s in ("ordinary", "assisted", *secrets_):
        assert s not in sent, f"still_here answered {s!r}"


def test_a_sign_of_life_renews_only_the_caller_s_own_live_hold_and_answers_nothing(tiny_models, tmp_path, pool_db):
    """still_here (the page's #alive button) renews the hold of the pair in the caller's server-side session. Raw
    requests without a sign-in, with a made-up session hash, with a forged state naming another rater and her pair,
    and from another signed-in rater change no one's hold; neither does the owner's once her hold ran out (the pair
    may be another's). The owner's live hold is renewed. Every answer is empty (passes on current code, pins it)."""
    with served(config(tiny_models, tmp_path, ratings_per_pair=2), pool_db) as url:
        ann, bob = Raw(url), Raw(url)
        assert Raw.error(ann.call("sign_in", [None, "ann", "", ""])) == ""
        assert Raw.error(bob.call("sign_in", [None, "bob", "", ""])) == ""
        (ann_pair,) = [p for r, p in _holds(pool_db) if r == "ann"]
        _set_hold(pool_db, "ann", _ago(25))
        _set_hold(pool_db, "bob", _ago(25))
        before = _holds(pool_db)
        secrets_ = ("ann", "bob", ann_pair, *(p for _, p in before))
        forged = {"rater": "ann", "pair_id": ann_pair, "rating_id": None, "organiser": True}
        stranger = Raw(url)  # never signed in; then a session hash nobody was given
        for data in ([None], [forged], ["ann"]):
            _says_nothing(stranger.call("still_here", data), *secrets_)
        stranger.session = uuid.uuid4().hex[:11]
        _says_nothing(stranger.call("still_here", [forged]), *secrets_)
        _says_nothing(bob.call("still_here", [forged]), *secrets_)  # bob renews his own, never ann's
        after = _holds(pool_db)
        assert after[("ann", ann_pair)] == before[("ann", ann_pair)], "a sign of life renewed another rater's hold"
        assert all(v == before[k] for k, v in after.items() if k[0] != "bob")
        (bob_key,) = [k for k in after if k[0] == "bob"]
        assert after[bob_key][1] is not None and after[bob_key][0] == before[bob_key][0]  # his own, shown_at kept

        shown = _ago(45)
        _set_hold(pool_db, "ann", shown, _ago(31))  # ran out: the pair may be another's by now
        before = _holds(pool_db)
        _says_nothing(ann.call("still_here", [None]), *secrets_)
        assert _holds(pool_db) == before
        _set_hold(pool_db, "ann", shown, _ago(20))  # renewed 20 minutes ago: hers, renewed again
        _says_nothing(ann.call("still_here", [None]), *secrets_)
        assert _holds(pool_db)[("ann", ann_pair)][1] > _ago(1)
        assert _holds(pool_db)[("ann", ann_pair)][0] == shown  # the time on task still counts from the showing
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0



def test_signs_of_life_in_a_loop_take_the_write_lock_at_most_once_a_minute(tiny_models, tmp_path, pool_db,
                                                                           monkeypatch):
    """A client may send signs of life in a tight loop. On a live hold the first renews it and the rest, within
    RENEW_EVERY_SECONDS, take no write lock. Audit: on a pair the rater had rated in another tab (her first tab's
    session still holding it unrated), or one closed meanwhile, every sign took the write lock, found nothing to
    renew and left alive_at as it was, so the next one took it again: a loop from one tab queued every rater's
    submission behind it. Now such a hold is recognised before the lock; nothing is written."""
    import evalkit.store.ratings as store_ratings

    taken = []
    real = store_ratings.write_transaction

    def counted(db):
        taken.append(threading.current_thread().name)
        return real(db)

    monkeypatch.setattr(store_ratings, "write_transaction", counted)
    with served(config(tiny_models, tmp_path, ratings_per_pair=2), pool_db) as url:
        ann = Raw(url)
        welcome = json.dumps(ann.call("sign_in", [None, "ann", "", ""])["output"], ensure_ascii=False)
        code = re.search(r"`(\d+\.[A-Za-z0-9_-]+)`", welcome).group(1)
        (pair,) = [p for r, p in _holds(pool_db) if r == "ann"]
        _set_hold(pool_db, "ann", _ago(5))
        del taken[:]
        for _ in range(15):
            _says_nothing(ann.call("still_here", [None]), pair, "ann")
        assert len(taken) == 1, f"{len(taken)} write locks for 15 signs of life within a minute"
        assert _holds(pool_db)[("ann", pair)][1] > _ago(1)

        second = Raw(url)  # her second tab: the same held pair, rated there
        assert Raw.error(second.call("sign_in", [None, "", "", code])) == ""
        assert Raw.error(second.call("submit", [None, *answers()])) == ""
        _set_hold(pool_db, "ann", _ago(5), _ago(3))
        before = _holds(pool_db)
        del taken[:]
        for _ in range(15):  # the first tab's session still holds the pair, unrated there
            _says_nothing(ann.call("still_here", [None]), pair, "ann")
        assert taken == [], f"{len(taken)} write locks for 15 signs of life on a rated pair"
        assert _holds(pool_db) == before

        bob = Raw(url)
        assert Raw.error(bob.call("sign_in", [None, "bob", "", ""])) == ""
        (bob_pair,) = [p for r, p in _holds(pool_db) if r == "bob"]
        _set_hold(pool_db, "bob", _ago(5), _ago(3))
        con = sqlite3.connect(pool_db)
        with con:  # closed meanwhile (as a stored decision closes every pair of its study)
            con.execute("INSERT INTO closed_pairs (pair_id, closed_at) VALUES (?, ?)", [bob_pair, _ago(0)])
        con.close()
        before = _holds(pool_db)
        del taken[:]
        for _ in range(15):
            _says_nothing(bob.call("still_here", [None]), bob_pair, "bob")
        assert taken == [], f"{len(taken)} write locks for 15 signs of life on a closed pair"
        assert _holds(pool_db) == before


def test_a_pair_holding_a_text_she_rated_is_refused_even_from_a_tab_that_held_it_before(tiny_models, tmp_path,
                                                                                      pool_db):
    """The queue serves a rater no pair holding a text of a pair she rated (greedy copies: the reveal of one tells
    the sides of the other), but the store took a rating of any pair her session held. Attack: tab 1 is served X;
    its hold runs out and bob is served X; her tab 2 is served Y, a copy of X's texts, rates it (quota 1: closed,
    revealed), and tab 1 then submits X knowing its sides. Stored and counted; now refused, nothing stored (and Y's
    reveal waits while its copy X is open)."""
    ranked = rows(pool_db, "SELECT * FROM pairs WHERE kind = 'study' ORDER BY queue_rank, id")
    x, y = ranked[0], ranked[1]
    con = sqlite3.connect(pool_db)
    with con:  # Y repeats X's two texts, each on its path (as greedy decoding gives every sample of a prompt)
        for col in ("ordinary_generation_id", "assisted_generation_id"):
            con.execute("UPDATE generations SET text = (SELECT text FROM generations WHERE id = ?) WHERE id = ?",
                        [x[col], y[col]])
    con.close()
    with served(config(tiny_models, tmp_path, ratings_per_pair=1), pool_db) as url:
        tab1 = Tab(url)
        tab1.sign_in("mallory")
        assert [p for r, p in _holds(pool_db) if r == "mallory"] == [x["id"]]
        _set_hold(pool_db, "mallory", _ago(31))
        Tab(url).sign_in("bob")
        assert [p for r, p in _holds(pool_db) if r == "bob"] == [x["id"]]
        tab2 = Tab(url)
        tab2.sign_in("mallory")
        assert rows(pool_db, "SELECT pair_id FROM assignments WHERE rater = 'mallory' ORDER BY shown_at DESC"
                    )[0]["pair_id"] == y["id"]
        seen = tab2.submit()["reveal"]
        # Y's reveal told the sides of X's texts; it now waits while X is open (the next test), and the refusal below
        # stays: she met these texts in a rating, and a second rating of them is hers no more than a reveal is
        assert "待揭晓" in seen and "ordinary" not in seen
        late = tab1.submit()
        assert late["status"] == word("text_met", "zh"), late["status"]
        assert not late["reveal"] and "ordinary" not in json.dumps(late, ensure_ascii=False)
    assert [r["pair_id"] for r in rows(pool_db, "SELECT pair_id FROM ratings WHERE rater = 'mallory'")] == [y["id"]]


def _copy_texts(db_file, x: dict, y: dict) -> None:
    """Pair y repeats pair x's two texts, each on its path (as greedy decoding gives every sample of a prompt)."""
    con = sqlite3.connect(db_file)
    with con:
        for col in ("ordinary_generation_id", "assisted_generation_id"):
            con.execute("UPDATE generations SET text = (SELECT text FROM generations WHERE id = ?) WHERE id = ?",
                        [x[col], y[col]])
    con.close()


def test_a_second_name_never_reads_the_reveal_of_a_copy_of_a_pair_the_first_can_still_rate(tiny_models, tmp_path,
                                                                                           pool_db):
    """The queue's met-text rule is per identity, and one person can hold several (open sign-up). Greedy copies: X and
    Y hold the same two texts. mallory-2 rates X (quota 1: closed) and read its reveal, which told the sides of Y's
    texts while Y was still open; mallory was then served Y and rated it knowing them, counted. A pair's reveal now
    also waits until no open study pair holds one of its texts; it fills in once Y closes."""
    ranked = rows(pool_db, "SELECT * FROM pairs WHERE kind = 'study' ORDER BY queue_rank, id")
    x, y = ranked[0], ranked[1]
    _copy_texts(pool_db, x, y)
    paths = {g["id"]: g["path"] for g in rows(pool_db, "SELECT id, path FROM generations")}
    with served(config(tiny_models, tmp_path, ratings_per_pair=1), pool_db) as url:
        second = Tab(url)
        second.sign_in("mallory-2")
        assert [p for r, p in _holds(pool_db) if r == "mallory-2"] == [x["id"]]
        peek = second.submit()
        received = json.dumps(peek, ensure_ascii=False)
        for w in ("ordinary", "assisted", "用时（秒）"):
            assert w not in received, f"mallory-2 read {w!r} while a copy of the pair was open to mallory"
        assert "待揭晓" in peek["reveal"] and "1 对含有相同的文本" in peek["reveal"]
        mallory = Tab(url)
        mallory.sign_in("mallory")
        assert [p for r, p in _holds(pool_db) if r == "mallory"] == [y["id"]]  # Y is hers to rate, blind
        closing = mallory.submit()
        assert f"| A | {paths[y['a_generation_id']]} |" in closing["reveal"]
        second.call("/next_pair")
        later = second.submit()["reveal"]  # once Y is closed, X's reveal is hers (in the list under this pair's)
        assert f"A = {paths[x['a_generation_id']]} " in later and "待揭晓 0" in later, later
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM closed_pairs WHERE pair_id IN (?, ?)", [x["id"], y["id"]])[0]["n"] == 2


def test_a_rater_held_back_by_the_results_or_the_gold_check_gets_no_pair_by_any_request(tiny_models, tmp_path,
                                                                                        pool_db, monkeypatch):
    """The screens that serve no pair though pairs are open ("results_shown_done", "gold_stopped") are enforced on the
    server: raw requests with a forged state naming an open pair submit, skip, correct and hold nothing, and every
    answer names no pair and no path (passes on current code, pins it)."""
    import evalkit.study.gold as gold
    from evalkit.store import insert_results_seen

    db = open_db(pool_db)
    insert_results_seen(db, "rhea")  # shown the results (a later pool's pairs are not hers)
    db.conn.close()
    monkeypatch.setattr(gold, "clearly_below", lambda db, rater: rater == "gus")  # clearly below the gold bar
    pair_ids = [r["id"] for r in rows(pool_db, "SELECT id FROM pairs")]
    with served(config(tiny_models, tmp_path, ratings_per_pair=2), pool_db) as url:
        for name, key in (("rhea", "results_shown_done"), ("gus", "gold_stopped")):
            raw = Raw(url)
            screen = raw.call("sign_in", [None, name, "", ""])
            said = json.dumps(screen["output"], ensure_ascii=False)
            assert word(key, "zh").split("**")[1] in said, said
            forged = {"rater": name, "pair_id": pair_ids[0], "rating_id": None, "correcting": True}
            replies = [raw.call(fn, data) for fn, data in (
                ("submit", [forged, *answers()]), ("skip", [forged, "x"]), ("correct", [forged]),
                ("still_here", [forged]), ("next_pair", [forged]), ("check_again", [forged]))]
            assert re.search("no pair on screen", Raw.error(replies[0])) and re.search("no unrated pair", Raw.error(
                replies[1])) and re.search("no stored rating", Raw.error(replies[2])), [Raw.error(r) for r in replies]
            assert word(key, "zh").split("**")[1] in json.dumps(replies[4]["output"], ensure_ascii=False)
            for msg in (screen, *replies):
                sent = json.dumps(msg, ensure_ascii=False)
                assert not any(p in sent for p in pair_ids) and "ordinary" not in sent and "assisted" not in sent
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM assignments")[0]["n"] == 0


def test_the_gold_stop_tells_no_name_that_a_pair_still_open_is_a_check(tmp_path):
    """A rater whose answers on check pairs put her clearly below the gold bar is served no more pairs, and her screen
    says why. It scored check pairs still open: the stop came right after she rated one, telling her (before its
    reveal) that the pair was a check and her answers on it wrong, and a second name of hers could still be served
    it, knowing. Now only closed check pairs (revealed to her anyway) count for the stop; the verdict scores all."""
    from test_gold import PROMPTS, answer, gold_bar_study, gold_pairs
    from test_rate_handlers import Tab as Handlers

    from evalkit.config import AppConfig
    from evalkit.rating.queue import RatingInput, submit_rating

    path, db, exp = gold_bar_study(tmp_path)
    with db.conn:  # each check pair wants two ratings: the first leaves it open to other names
        db.conn.execute("UPDATE pairs SET wanted_ratings = 2 WHERE kind = 'gold'")
    gold = gold_pairs(db)
    app = AppConfig(ratings_per_pair=2)
    for g in gold:  # every known answer wrong
        submit_rating(db, app, RatingInput(g["id"], "mallory", answer(g["a_expected"], 9), answer(g["b_expected"], 9), "A"))
    db.conn.close()
    tab = Handlers(path, {p.id: p for p in PROMPTS}, ratings_per_pair=2)
    s, out = tab.sign_in("mallory")
    assert word("gold_stopped", "zh") not in str(out[tab.ui.done_md]) and out[tab.ui.pair_box]["visible"]
    db = open_db(path)
    for g in gold:  # another rater's ratings close them: now revealed to her, and the stop may say so
        submit_rating(db, app, RatingInput(g["id"], "olive", answer(g["a_expected"]), answer(g["b_expected"]), "A"))
    db.conn.close()
    out = tab.h.next_screen(tab.h.submit(s, *tab.form())[tab.ui.session])
    assert word("gold_stopped", "zh") in str(out[tab.ui.done_md]) and not out[tab.ui.pair_box]["visible"]


def test_a_reveal_waits_for_every_open_pair_sharing_any_of_its_texts(tmp_path):
    """open_copies, which holds a closed pair's reveal back: a pair sharing one text, even of another prompt (a
    degenerate output can be one text for two prompts), counts while open; a closed copy, or one whose outputs are
    identical (no rater is served it), does not; a pair with no copy has none."""
    from evalkit.records import GenerationRecord
    from evalkit.rating.queue import open_copies
    from evalkit.store import insert_experiment, insert_pairs

    db = open_db(tmp_path / "c.db")
    exp = insert_experiment(db, "pool", {}, {})

    def pair(i, prompt, ordinary, assisted):
        made = [GenerationRecord(prompt_id=prompt, path=path, text=text, new_tokens=40, stop_reason="eos",
                                 generate_seconds=1.0, token_hash=f"h{i}-{n * (ordinary != assisted)}")
                for n, (path, text) in enumerate((("ordinary", ordinary), ("assisted", assisted)))]
        return {"prompt_id": prompt, "sample": i, "ordinary_side": "A", "ordinary": made[0], "assisted": made[1]}

    x, one_text, other_prompt, closed, alone = insert_pairs(db, exp, [
        pair(0, "writing-01", "the ordinary", "the assisted"), pair(1, "writing-01", "another", "the assisted"),
        pair(2, "writing-02", "the ordinary", "a third"), pair(3, "writing-01", "the ordinary", "the assisted"),
        pair(4, "writing-03", "alone o", "alone a")])
    insert_pairs(db, exp, [pair(5, "writing-01", "the assisted", "the assisted")])  # identical: decided without raters
    assert open_copies(db, [x, alone]) == {x: 3}
    with db.conn:
        db.conn.execute("INSERT INTO closed_pairs (pair_id, closed_at) VALUES (?, '2026-12-05')", [closed])
    assert open_copies(db, [x]) == {x: 2} and open_copies(db, [one_text]) == {one_text: 1}
    assert open_copies(db, []) == {} and open_copies(db, [None]) == {}


# --- 9. an organiser's Results and the texts of pairs she could still rate ----------------------------------------

def _benchmark(db_file, cfg, texts: dict | None = None) -> None:
    """A benchmark of every prompt the study rates (the Results' speed then comes from it, not from the pool's own
    runs); `texts`: (prompt_id, path) -> the text its run wrote (greedy decoding writes the pooled texts again)."""
    from evalkit.records import GenerationRecord, ProcessRecord, TimingRun
    from evalkit.store import insert_bench_process, insert_experiment

    db = open_db(db_file)
    bench = insert_experiment(db, "bench", cfg.to_dict(), {})
    rated = [r[0] for r in db.execute("SELECT DISTINCT prompt_id FROM pairs WHERE kind = 'study'")]
    for path, secs in (("ordinary", 2.0), ("assisted", 1.0)):
        timed = []
        for prompt_id in rated:
            run = TimingRun(path=path, prompt_id=prompt_id, round=1, rep=0, seed=1, new_tokens=10, stop_reason="eos",
                            seconds=secs, device="cpu")
            rec = GenerationRecord(prompt_id=prompt_id, path=path, new_tokens=10, stop_reason="eos", device="cpu",
                                   text=(texts or {}).get((prompt_id, path), ""))
            timed.append((run, [rec]))
        insert_bench_process(db, bench, ProcessRecord(path=path, round=1, order=0, device="cpu"), timed)
    db.conn.close()


def _organiser_rates_after_results(url, code: str, pool_db) -> dict:
    """The organiser signs in, opens the Results, then rates the pair she is served; returns her stored rating."""
    org = Tab(url)
    org.call("/sign_in", "", "", code)
    org.call("/results")
    org.submit()
    (mine,) = rows(pool_db, "SELECT r.pair_id, r.blind FROM ratings r JOIN raters w ON w.name = r.rater "
                            "WHERE w.role = 'organiser'")
    return mine


def test_an_organiser_shown_a_closed_copy_of_a_pair_she_could_rate_no_longer_counts(tiny_models, tmp_path, pool_db):
    """Attacker audit (organiser who rates, greedy copies): X and Y hold the same two texts. A rater's rating closed X,
    so the Results' tables (its ratings, per path) and the time-against-length plot (its two points, coloured by path)
    show X: which text is which path, for Y's texts too. Y was open and unrated and the speed came from a benchmark, so
    the look was not recorded, and the organiser then rated Y knowing its sides, counted. A look while a pair she
    could rate holds a text the Results can show elsewhere is recorded: her rating of Y is kept, never counted."""
    cfg = config(tiny_models, tmp_path, ratings_per_pair=1)
    ranked = rows(pool_db, "SELECT * FROM pairs WHERE kind = 'study' ORDER BY queue_rank, id")
    x, y = ranked[0], ranked[1]
    _copy_texts(pool_db, x, y)
    _benchmark(pool_db, cfg)
    db = open_db(pool_db)
    olga = raters.add(db, "olga", organiser=True).code
    db.conn.close()
    with served(cfg, pool_db) as url:
        ann = Tab(url)
        ann.sign_in("ann")
        ann.submit()  # X, the head of the queue: closed
        assert rows(pool_db, "SELECT pair_id FROM closed_pairs") == [{"pair_id": x["id"]}]
        mine = _organiser_rates_after_results(url, olga, pool_db)
    assert mine["pair_id"] == y["id"]
    assert rows(pool_db, "SELECT rater FROM results_seen") == [{"rater": "olga"}]
    assert mine["blind"] == 0  # kept, not counted
    assert not rows(pool_db, "SELECT 1 FROM current_ratings WHERE pair_id = ? AND rater = 'olga'", [y["id"]])


def test_an_organiser_shown_a_benchmark_that_wrote_a_pair_s_texts_no_longer_counts(tiny_models, tmp_path, pool_db):
    """Attacker audit (organiser who rates, greedy decoding): a benchmark of the rated prompts writes the pooled texts
    again, each under its path, and the Results show its runs by path (tokens per path and prompt, the points of the
    time-against-length plot). With nothing rated yet the look was not recorded ('a study's start tells nothing'),
    and her ratings counted. Now a pair she could rate whose text a shown run wrote makes the look count as seen."""
    cfg = config(tiny_models, tmp_path, ratings_per_pair=1)
    head = rows(pool_db, "SELECT p.prompt_id, o.text AS o_text, a.text AS a_text FROM pairs p "
                         "JOIN generations o ON o.id = p.ordinary_generation_id "
                         "JOIN generations a ON a.id = p.assisted_generation_id "
                         "WHERE p.kind = 'study' ORDER BY p.queue_rank, p.id")[0]
    _benchmark(pool_db, cfg, {(head["prompt_id"], "ordinary"): head["o_text"],
                              (head["prompt_id"], "assisted"): head["a_text"]})
    db = open_db(pool_db)
    olga = raters.add(db, "olga", organiser=True).code
    db.conn.close()
    with served(cfg, pool_db) as url:
        mine = _organiser_rates_after_results(url, olga, pool_db)
    assert rows(pool_db, "SELECT rater FROM results_seen") == [{"rater": "olga"}]
    assert mine["blind"] == 0


def test_an_organiser_who_saw_the_results_over_her_own_open_rating_cannot_correct_it_counted(tiny_models, tmp_path,
                                                                                              pool_db):
    """Attacker audit (organiser who rates): she rated X (quota 2: still open, hers the only rating) and opened the
    Results. The per-path tables hold her own answers, so they tell X's sides (her 'A passes, B fails' is ordinary's
    pass rate 1 or 0); the look was not recorded (no pair she could still be *served* had ratings, and the speed came
    from a benchmark), and a correction before X closes counts: she corrected X knowing its sides, counted. A pair
    she rated that is still open makes the look count as seen: the correction is kept, never counted."""
    cfg = config(tiny_models, tmp_path, ratings_per_pair=2)
    _benchmark(pool_db, cfg)
    db = open_db(pool_db)
    olga = raters.add(db, "olga", organiser=True).code
    db.conn.close()
    with served(cfg, pool_db) as url:
        org = Tab(url)
        org.call("/sign_in", "", "", olga)
        org.submit(a="pass", b="fail", preference="A")
        (first,) = rows(pool_db, "SELECT id, pair_id, blind FROM ratings WHERE rater = 'olga'")
        assert first["blind"] == 1 and not rows(pool_db, "SELECT 1 FROM closed_pairs")  # counted, open
        org.call("/results")
        org.call("/correct")
        org.submit(a="fail", b="pass", preference="B")
    history = rows(pool_db, "SELECT id, blind, supersedes FROM ratings WHERE rater = 'olga' ORDER BY id")
    assert [(h["blind"], h["supersedes"]) for h in history] == [(1, None), (0, first["id"])]
    (counted,) = rows(pool_db, "SELECT id FROM current_ratings WHERE rater = 'olga'")
    assert counted["id"] == first["id"]  # the blind rating stands
    assert rows(pool_db, "SELECT rater FROM results_seen") == [{"rater": "olga"}]


def test_no_rater_can_take_the_name_of_the_time_on_task_table_s_pooled_row(tiny_models, tmp_path, pool_db):
    """Attacker audit: the time-on-task table's pooled row is labelled 'all' and grouped by name, so a rater who signed
    up as 'all' had her ratings merged into it (counted twice) and no row of her own: the organiser's per-rater flags
    of ratings faster than anyone can read never named her. The name (and its look-alikes) is refused, nothing
    stored; through gradio_client, as any name is typed."""
    from evalkit.rating.pace import ALL

    with served(config(tiny_models, tmp_path), pool_db) as url:
        for typed in (ALL, ALL.upper(), f" {ALL.title()} "):
            with pytest.raises(AppError, match="reserved") as refused:
                Tab(url).sign_in(typed)
            assert "名字" in str(refused.value)  # a Chinese rater reads it in Chinese first
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM raters")[0]["n"] == 0
    db = open_db(pool_db)
    with pytest.raises(Exception, match="reserved"):  # nor can an organiser invite one by it
        raters.add(db, ALL)
    db.conn.close()


def test_a_page_load_sign_in_that_answers_after_sign_out_signs_nothing_in(tiny_models, tmp_path, pool_db):
    """Known limit until 2026-12-05: the page load's sign-in (resume_local) carries the sealed code the browser held
    when the page loaded. Queued behind a busy app, it answered after the rater's Sign out and signed her back in on
    that session: the next person at a shared computer rated under her name. Driven here in that order, raw."""
    with served(config(tiny_models, tmp_path), pool_db) as url:
        raw = Raw(url)
        cfg = httpx.get(url + "config", timeout=30).json()
        (load,) = [d["id"] for d in cfg["dependencies"] if d.get("api_name") == "resume_local"]
        signed_in = raw.call("sign_in", [None, "quincy", "", ""])
        kept = _browser_code_output(raw, signed_in, "sign_in")
        assert kept and raw.call("my_code", [None])["success"]  # signed in
        assert raw.call("sign_out", [None])["success"]
        late = raw.call(load, [None, kept])  # the page load's sign-in, sent before the sign-out
        assert late["success"] and "quincy" not in json.dumps(late["output"], ensure_ascii=False)
        for fn, data in (("next_pair", [None]), ("submit", [None, *answers()]), ("my_code", [None])):
            assert re.search("not signed in", Raw.error(raw.call(fn, data))), fn
        # a new page (a new session) with the same kept code still resumes: the sign-out ended this session only,
        # and the browser forgets the code itself (its store then holds rate.SIGNED_OUT)
        fresh = Raw(url)
        assert "quincy" in json.dumps(fresh.call(load, [None, kept])["output"], ensure_ascii=False)
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0


def _held(monkeypatch, cls, name: str, when) -> tuple[threading.Event, threading.Event]:
    """cls.name patched to wait, once it has run, where when(*args) holds: it sets the first event, then waits for
    the second (at most a minute)."""
    entered, gate = threading.Event(), threading.Event()
    real = getattr(cls, name)

    def held(self, *args):
        out = real(self, *args)
        if when(*args):
            entered.set()
            gate.wait(60)
        return out

    monkeypatch.setattr(cls, name, held)
    return entered, gate


def _across_a_sign_out(url: str, raw: Raw, fn: str, data: list, entered: threading.Event,
                       gate: threading.Event) -> dict:
    """`fn` sent on raw's page and held in its handler (it sets `entered`, then waits for `gate`) while the page
    signs out; the sign-out answers first, then `fn` is let go. Returns fn's answer."""
    done: dict = {}
    with httpx.Client(base_url=url, timeout=120) as c:
        def join(name: str, payload: list) -> str:
            body = json.dumps({"data": payload, "fn_index": raw.fns[name], "session_hash": raw.session,
                               "event_data": None, "trigger_id": None})
            return c.post("gradio_api/queue/join", content=body,
                          headers={"content-type": "application/json"}).json()["event_id"]

        def listen():  # one event stream for the page, as a browser holds it
            with c.stream("GET", "gradio_api/queue/data", params={"session_hash": raw.session}) as stream:
                for line in stream.iter_lines():
                    msg = json.loads(line[5:]) if line.startswith("data:") else {}
                    if msg.get("msg") == "process_completed":
                        done[msg["event_id"]] = msg
                        if len(done) == 2:
                            return

        held = join(fn, data)
        reader = threading.Thread(target=listen)
        reader.start()
        assert entered.wait(60)
        out = join("sign_out", [None])
        deadline = time.monotonic() + 60
        while out not in done and time.monotonic() < deadline:  # the sign-out answers while fn waits
            time.sleep(0.05)
        assert out in done and held not in done
        gate.set()
        reader.join(60)
    return done[held]


def _switch_held(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """The language switch to English held once it has read the session, until the test lets it go (_held)."""
    from evalkit.ui.rate import RateHandlers

    return _held(monkeypatch, RateHandlers, "switch_language", lambda s, lang, *_: lang == "en")


def _written_back_across_a_sign_out(url: str, entered: threading.Event, gate: threading.Event) -> "Raw":
    """A page signed in as quincy whose switch (_switch_held) ran across its Sign out and wrote her session back."""
    raw = Raw(url)
    assert raw.call("sign_in", [None, "quincy", "", ""])["success"]
    switched = _across_a_sign_out(url, raw, "language", [None, "en", None], entered, gate)
    assert switched["success"], Raw.error(switched)
    return raw


def test_an_event_running_across_a_sign_out_does_not_sign_the_page_in_again(tiny_models, tmp_path, pool_db,
                                                                            monkeypatch):
    """Attacker audit, 2026-12-05: an event already running when the rater pressed Sign out (here a language switch,
    held until the sign-out has answered) returned the session it began with, and Gradio wrote it back over the
    signed-out one: the page was hers again, and the next person at the computer rated under her name."""
    held = _switch_held(monkeypatch)
    with served(config(tiny_models, tmp_path), pool_db) as url:
        raw = _written_back_across_a_sign_out(url, *held)
        for fn, data in (("my_code", [None]), ("next_pair", [None]), ("skip", [None, "x"]),
                         ("submit", [None, *answers()]), ("results", [None])):
            msg = raw.call(fn, data)
            assert "signed out on this page" in Raw.error(msg), (fn, msg)
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0


def test_a_flood_of_sign_ins_and_outs_never_revives_a_page_an_event_wrote_back_across_its_sign_out(
        tiny_models, tmp_path, pool_db, monkeypatch):
    """Attacker audit round 9: the sign-ins Sign out ended were kept by sign-in (the newest 100,000), and one client
    signing in and out again and again pushed another page's out: a session an event wrote back across her Sign out
    (the test above) was then hers again, for whoever sat at that computer next. A session now also keeps its
    sign-in's page and when it arrived, and one that arrived before its page's latest Sign out is over whatever the
    list still holds (set small here); pushing that record out takes PAGES_KEPT new pages, beyond one client's hour."""
    import evalkit.ui.session as session

    monkeypatch.setattr(session._Ended, "ENDED_KEPT", 4)
    held = _switch_held(monkeypatch)
    with served(config(tiny_models, tmp_path), pool_db) as url:
        raw = _written_back_across_a_sign_out(url, *held)
        flood = Raw(url)  # one page, signing in and out
        for _ in range(3):
            for _ in range(2):
                flood.call("sign_in", [None, "", "", "1.guessed-code"])
            flood.call("sign_out", [None])
        assert len(session._ended._ended) <= 4
        for fn, data in (("my_code", [None]), ("next_pair", [None]), ("submit", [None, *answers()])):
            msg = raw.call(fn, data)
            assert "signed out on this page" in Raw.error(msg), (fn, msg)
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0


def test_a_typed_sign_in_begun_before_sign_out_signs_nothing_in_when_it_answers_after(tiny_models, tmp_path, pool_db,
                                                                                     monkeypatch):
    """Attacker audit round 3, 2026-12-06: a typed sign-in (a personal code) sent before Sign out and answering after
    it made a sign-in Sign out had never heard of, and the page was signed in again (raw calls: the page hides the
    form while signed in). Held here in the code check until the sign-out has answered."""
    from evalkit.ui.auth import Doorman

    # the typed code is checked: it waits until the sign-out is stored
    entered, gate = _held(monkeypatch, Doorman, "local", lambda name, code, *_: bool(code))
    with served(config(tiny_models, tmp_path), pool_db) as url:
        raw = Raw(url)
        first = raw.call("sign_in", [None, "quincy", "", ""])
        code = re.search(r"\d+\.[A-Za-z0-9_-]{24}", json.dumps(first["output"], ensure_ascii=False)).group(0)
        typed = _across_a_sign_out(url, raw, "sign_in", [None, "", "", code], entered, gate)
        late = json.dumps(typed, ensure_ascii=False)
        assert "signed out on this page" in Raw.error(typed) and "quincy" not in late, late
        for fn, data in (("my_code", [None]), ("next_pair", [None]), ("submit", [None, *answers()])):
            assert re.search("not signed in|signed out on this page", Raw.error(raw.call(fn, data))), fn
        # a sign-in typed after the sign-out signs in, as on the page
        assert "quincy" in json.dumps(raw.call("sign_in", [None, "", "", code])["output"], ensure_ascii=False)
        assert raw.call("my_code", [None])["success"]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0



def test_a_sign_in_sent_before_sign_out_and_begun_after_it_signs_nothing_in(tiny_models, tmp_path, pool_db, monkeypatch):
    """Attacker audit round 5, 2026-12-06: a rater on a shared computer types her code, presses Sign in, then Sign out,
    and walks away. Behind a busy app her sign-in waited in the queue while the Sign out ran; it began after it, made a
    sign-in the Sign out had never heard of, and the page was hers again. Raw, in that order: another page's sign-in
    holds the app's one sign-in slot while this page's sign-in waits and its Sign out answers."""
    import evalkit.ui as ui
    from evalkit.ui.auth import Doorman

    monkeypatch.setattr(ui, "DEFAULT_CONCURRENCY", 1)  # one sign-in runs at a time: a busy app, made small
    entered, gate = _held(monkeypatch, Doorman, "local", lambda name, *_: name == "busy")
    db = open_db(pool_db)
    code = raters.add(db, "quincy").code
    db.conn.close()
    with served(config(tiny_models, tmp_path), pool_db) as url:
        busy = threading.Thread(target=Raw(url).call, args=("sign_in", [None, "busy", "", ""]))
        busy.start()
        assert entered.wait(60)  # the other page's sign-in holds the slot before this page's is sent
        raw = Raw(url)
        typed = _across_a_sign_out(url, raw, "sign_in", [None, "", "", code], entered, gate)
        busy.join(60)
        assert "signed out on this page" in Raw.error(typed) and "quincy" not in json.dumps(typed, ensure_ascii=False)
        for fn, data in (("my_code", [None]), ("next_pair", [None]), ("submit", [None, *answers()])):
            assert re.search("not signed in|signed out on this page", Raw.error(raw.call(fn, data))), fn
        # a sign-in sent after the sign-out signs in, as on the page
        assert "quincy" in json.dumps(raw.call("sign_in", [None, "", "", code])["output"], ensure_ascii=False)
        assert raw.call("my_code", [None])["success"]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0

def test_the_sign_ins_listed_under_a_page_stay_bounded():
    """What Sign out ends on its page (ui.session._Ended) is kept per page up to a bound: a page signing in again and
    again keeps its newest sign-ins listed, and one with nothing to sign out of (a Space) lists none."""
    from evalkit.ui.session import _Ended

    ended = _Ended()
    ids = [ended.begin("page") for _ in range(ended.BEGUN_PER_PAGE + 3)]
    elsewhere, unlisted = ended.begin("another page"), ended.begin(None)
    ended.end("", "page")
    assert all(i in ended for i in ids[3:]) and not any(i in ended for i in ids[:3])
    assert elsewhere not in ended and unlisted not in ended

def test_an_answer_or_preference_outside_the_choices_is_quoted_at_most_40_characters(tiny_models, tmp_path, pool_db):
    """Attacker audit round 4: /submit sent through the API with a 20,000-character answer (or preference) was refused
    with the whole value quoted back, in the Chinese and the English half (the other lists' refusals quote at most 40
    characters). Now at most 40, and nothing is stored."""
    with served(config(tiny_models, tmp_path), pool_db) as url:
        eve = Tab(url)
        eve.sign_in("eve")
        long = "z" * 20_000
        for override, said in (({"a_schedule": long}, "输出 A 有问题没有作答"), ({"preference": long}, "偏好必须是")):
            with pytest.raises(AppError) as refused:
                eve.submit(**override)
            error = str(refused.value)
            assert said in error and "'" + "z" * 30 in error, error
            assert "z" * 41 not in error and len(error) < 600, len(error)
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM ratings")[0]["n"] == 0


def test_a_study_or_prompt_outside_the_lists_is_refused_in_the_rater_s_language_naming_no_study(tiny_models, tmp_path):
    """Attacker audit round 3: `results_study` and `live` sent raw with a value outside their lists answered with
    Gradio's English-only check, which listed the choices the session had been shown. Now the app's own refusal, in
    the session's language (Chinese first here) and naming no study; a page that may not see the results gets the
    tab as it is closed to it, as for any other choice."""
    from evalkit.study.synthetic import SyntheticStudy, build_study

    path = tmp_path / "app.db"
    db = open_db(path)
    build_study(db, SyntheticStudy(pairs=6, raters_per_pair=3, raters=4))  # study 'main'
    build_study(db, SyntheticStudy(pairs=4, raters_per_pair=3, raters=4, study="second", seed=1))
    boss, ann = raters.add(db, "olga", organiser=True).code, raters.add(db, "ann").code
    db.conn.close()
    with served(config(tiny_models, tmp_path), path) as url:
        olga, rater = Raw(url), Raw(url)
        assert olga.call("sign_in", [None, "", "", boss])["success"] and rater.call("sign_in", [None, "", "", ann])["success"]
        assert olga.call("results", [None])["success"]  # the list of studies is shown to her
        for sent in ("nope", ["main"], {"study": "main"}, "x" * 5000):
            error = Raw.error(olga.call("results_study", [None, sent]))
            assert "所选的研究不在本数据库的研究之列" in error and "not one of this database's studies" in error, error
            assert "choices" not in error and "second" not in error and "xxxxx" not in error, error
        assert "study 'main'" in olga.call("results_study", [None, "main"])["output"]["data"][1]
        nobody = Raw(url)  # not signed in: the results are closed to her
        closed = nobody.call("results", [None])["output"]["data"][:2]
        for sent in ("nope", "main"):
            msg = nobody.call("results_study", [None, sent])
            assert msg["success"] and msg["output"]["data"][:2] == closed, msg
        for sent, shown in (("nope", "nope"), (["writing-01"], "['writing-01']"), ("y" * 5000, "y" * 40 + "'")):
            error = Raw.error(rater.call("live", [None, sent, ""]))
            assert "未知的提示" in error and f"unknown prompt '{shown}" in error, error
            assert "choices" not in error and "y" * 41 not in error, error


def test_a_flood_of_forged_pages_keeps_a_bounded_record_of_page_loads_sign_ins_and_sign_outs(tiny_models, tmp_path,
                                                                                          pool_db, monkeypatch):
    """Attacker audit round 7: the records kept by page (a Gradio session id, which a raw queue request picks freely)
    were forgotten only after 10 minutes (page loads), an hour (sign-ins begun) or a day (Sign outs), and then only
    once there were 1,000: a flood of raw requests, each from a new page, grew memory without bound for that long.
    Each is now capped, the oldest going first (evalkit.ui.session.PAGES_KEPT, set small here); the flood below, from
    three times as many pages as the cap, leaves each record at the cap."""
    import secrets

    import evalkit.ui.session as session
    from evalkit.ui import build_app
    from evalkit.ui.server import serving

    cap = 8
    monkeypatch.setattr(session, "PAGES_KEPT", cap, raising=False)
    app = build_app(config(tiny_models, tmp_path), pool_db)
    load_step = next(i for i, f in app.fns.items() if getattr(f, "name", "") == "await_submission")
    with serving(app) as url:
        for _ in range(3 * cap):  # each Raw is a new page
            Raw(url).call(load_step, [secrets.token_hex(16)])  # a page load naming a kept submission
            Raw(url).call("sign_in", [None, "", "", "1.guessed-code"])  # a sign-in begun on a page
            Raw(url).call("sign_out", [None])  # a Sign out of a page
    assert len(session.submissions._loads) <= cap
    assert len(session._ended._begun) <= cap
    assert len(session._ended._out) <= cap


def test_a_flood_of_pages_from_one_client_never_pushes_out_another_client_s_page(tiny_models, tmp_path, pool_db,
                                                                                  monkeypatch):
    """Attacker audit round 8: Gradio keeps the state of its newest 10,000 pages (a page is a session id, which a raw
    queue request picks freely), and so does this app its records by page: 10,000 forged pages from one address
    within seconds pushed a real rater's page out, and her next click said she was not signed in. New pages are now
    limited per client (evalkit.ui.guard.PAGES_PER_CLIENT, set small here, as Gradio's cap is): the flood is refused
    past the limit, with 429, and her page, from another address, stays signed in."""
    import evalkit.ui.guard as guard
    import evalkit.ui.session as session
    from evalkit.ui import build_app
    from evalkit.ui.server import serving

    cap = 8
    monkeypatch.setattr(session, "PAGES_KEPT", cap, raising=False)
    monkeypatch.setattr(guard, "PAGES_PER_CLIENT", cap // 2, raising=False)
    db = open_db(pool_db)
    ann = raters.add(db, "ann")
    db.conn.close()
    app = build_app(config(tiny_models, tmp_path), pool_db)
    with serving(app) as url:
        app.state_holder.capacity = cap  # Gradio's cap on the pages whose state it keeps
        her = Raw(url, source="127.0.0.2")  # another client than the flood's 127.0.0.1
        assert Raw.error(her.call("sign_in", [None, "", "", ann.code])) == ""
        mine = Raw(url)  # a page the flooding client opened first
        assert mine.call("sign_out", [None])["success"]
        refused = 0
        for _ in range(3 * cap):  # each Raw is a new page
            try:
                Raw(url).call("sign_out", [None])
            except httpx.HTTPStatusError as e:
                assert e.response.status_code == 429 and "too many new pages" in e.response.text, e.response.text
                refused += 1
        assert Raw.error(her.call("my_code", [None])) == ""  # still signed in
        assert refused == 3 * cap - (cap // 2 - 1)
        assert mine.call("sign_out", [None])["success"]  # a page already open is never refused
    with serving(build_app(config(tiny_models, tmp_path), pool_db)) as url:
        # a body nested past the JSON parser is read as naming no page, and Gradio answers it, not a server error
        nested = httpx.post(url + "gradio_api/queue/join", content="[" * 60_000, timeout=30,
                            headers={"content-type": "application/json"})
        assert nested.status_code == 400, nested.text


def test_the_refusal_of_too_many_new_pages_says_what_to_do_in_both_languages(tiny_models, tmp_path, pool_db,
                                                                               monkeypatch):
    """Attacker audit round 9: the 429 for too many new pages from one address was in English only, while every other
    refusal is in both languages, and it told a rater to "use a page already open" after a reload had closed hers. It
    names the limit (shared by everyone behind the address), that a page already open keeps working, and how many
    minutes to wait before reloading, in Chinese and English; the browser's page shows it (Gradio's toast shows a
    refused queue join's `detail`), tested in Chromium with the limit set small."""
    import evalkit.ui.guard as guard
    from apphelpers import chromium_page
    from evalkit.ui import build_app
    from evalkit.ui.server import serving

    monkeypatch.setattr(guard, "PAGES_PER_CLIENT", 2, raising=False)
    with serving(build_app(config(tiny_models, tmp_path), pool_db)) as url:
        for _ in range(2):
            Raw(url).call("sign_out", [None])
        with pytest.raises(httpx.HTTPStatusError) as refused:
            Raw(url).call("sign_out", [None])
        answer = refused.value.response
        detail = answer.json()["detail"]
        assert answer.status_code == 429, detail
        assert re.search(r"页面已达上限（2 个.*已打开的页面.*等待约 60 分钟后.*重新加载", detail), detail
        assert re.search(r"too many new pages from this address: 2 in the last hour.*page already open keeps "
                         r"working.*wait about 60 min.*reload", detail), detail
        with chromium_page() as page:  # a rater's reload behind that address: its first event is refused
            page.goto(url)
            page.get_by_text("等待约 60 分钟后", exact=False).first.wait_for()
            page.get_by_text("wait about 60 min", exact=False).first.wait_for()


def test_a_flood_of_wrong_codes_held_back_writes_nothing(tmp_path, monkeypatch):
    """Attacker audit round 8: a wrong personal code was counted, in the database, even when the guard's wait
    refused it: a flood of wrong codes from one client, each naming a new rater id, added a row a request (pruned only
    after 30 minutes) and took the write lock once a request, for as long as it lasted. A wrong code refused by the
    wait now writes nothing (as a wrong passcode never did): past the free attempts the flood adds no row and no write,
    and it is still refused with the wait."""
    import evalkit.ui.auth as auth
    from evalkit.config import AppConfig
    from evalkit.errors import EvalkitError
    from evalkit.rating.limits import SignInGuard

    monkeypatch.setattr(auth, "SignInGuard", lambda: SignInGuard(clock=lambda: 1000.0))  # the wait never runs out
    writes = []
    real = auth.add_failure
    monkeypatch.setattr(auth, "add_failure", lambda *a: (writes.append(a[2]), real(*a)))
    db_file = tmp_path / "flood.db"
    open_db(db_file).conn.close()
    doorman = auth.Doorman(AppConfig(signup="invite"), db_file, space=False)
    free = doorman.guard.free
    seen = []
    for i in range(8 * free):  # each a new rater id: a new owner key
        with pytest.raises(EvalkitError) as e:
            doorman.local("", f"{100 + i}.{'A' * 24}", "", "client:flood")
        seen.append(e.value.what)
    assert seen[:free] == ["that code is not valid"] * free and all("too many" in w for w in seen[free:]), seen
    assert len(writes) == 2 * free  # the free failures, each for the client and its owner; none since
    db = open_db(db_file)
    assert db.execute("SELECT COUNT(*) FROM limit_counts").fetchone()[0] == free + 1  # the client, the free owners
    db.conn.close()
