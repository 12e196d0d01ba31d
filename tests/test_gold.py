"""Gold (check) pairs: made when the pool is built from extra pooled samples (one output changed by a controlled
edit with a known answer), mixed into the queue at pool.gold_rate, blind until rated, scored per rater on the known
answers, never part of the path comparison, and a gate that leaves inaccurate raters out."""

import dataclasses
import json
import random
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from evalkit.aggregate import data as aggregate_data
from evalkit.aggregate import aggregate
from evalkit.config import AppConfig, from_dict
from evalkit.errors import EvalkitError
from evalkit.study.gate import parse_gate
from evalkit.study.gold import _unpaired_samples, accuracy, add_gold_pairs, edit, gold_count, gold_samples
from evalkit.task.edits import _PROMISE_PARTS, add_promise, change_day
from evalkit.study.pairs import IDENTICAL
from evalkit.task.prompts import CRITERIA, load_prompt, load_prompts
from evalkit.rating.queue import (
    GoldReveal, RatingInput, correct_rating, next_pair, pair_view, reveal, submit_rating,
)
from evalkit.records import GenerationRecord
from evalkit.store import insert_experiment, insert_generations, insert_pairs, open_db

from apphelpers import pool_db, pool_template  # noqa: F401,E402  (fixtures: a pool built from the tiny models)

APP = AppConfig(ratings_per_pair=2)
PROMPTS = load_prompts()
PAIR_ID = re.compile(r"p[0-9a-f]{16}")


def study_pool(db, n: int, gate=None) -> int:
    """n study pairs over the bundled prompts (fake generations); returns the pool experiment id."""
    exp = insert_experiment(db, "pool", {}, {}, gate=gate or {})
    specs = []
    for i in range(n):
        pid = PROMPTS[i % len(PROMPTS)].id
        gens = {path: GenerationRecord(prompt_id=pid, path=path, text=f"{path} output {i}", new_tokens=30,
                                       token_ids=[i, 1 if path == "ordinary" else 2], stop_reason="eos",
                                       generate_seconds=1.0 if path == "assisted" else 2.0)
                for path in ("ordinary", "assisted")}
        specs.append({"prompt_id": pid, "sample": i // len(PROMPTS), "ordinary_side": "AB"[i % 2], **gens})
    insert_pairs(db, exp, specs)
    return exp


def gold_items(db, exp: int, n: int, day: bool = False, prompt_ids=None) -> None:
    """n extra pooled samples, as the pool stores them for its gold pairs: an ordinary and an assisted output of one
    prompt and seed, in no pair, spread over the prompts. `day`: their texts name the material's day (so the edit
    changes it)."""
    prompt_ids = prompt_ids or [p.id for p in PROMPTS]
    first = db.execute("SELECT COUNT(*) FROM generations WHERE seed >= 10000").fetchone()[0] // 2
    recs = []
    for i in range(first, first + n):
        pid = prompt_ids[i % len(prompt_ids)]
        for path in ("ordinary", "assisted"):
            text = (f"资料库周三晚间维护，{path} 输出 {i}。\n恢复时间未定。" if day else f"{path} 输出 {i}：请留意通知。")
            recs.append(GenerationRecord(prompt_id=pid, path=path, text=text, new_tokens=30, seed=10_000 + i,
                                         token_ids=[i, 7 if path == "ordinary" else 8], stop_reason="eos",
                                         generate_seconds=3.7183 + i / 997 + (path == "assisted") / 89))
    insert_generations(db, recs, exp)


def gold_pairs(db) -> list[dict]:
    return list(db.query("""SELECT p.id, p.prompt_id, a.expected AS a_expected, b.expected AS b_expected,
                                   a.text AS a_text, b.text AS b_text
                            FROM pairs p JOIN reference_outputs a ON a.id = p.a_reference_id
                            JOIN reference_outputs b ON b.id = p.b_reference_id WHERE p.kind = 'gold' ORDER BY p.id"""))


def answer(expected_json: str, wrong: int = 0, unsure: int = 0) -> dict:
    """The known answers, with the first `wrong` of them flipped and the next `unsure` ones unsure; "pass" where
    nothing is known."""
    exp = json.loads(expected_json)
    out = {}
    for i, c in enumerate(c for c in CRITERIA if c in exp):
        flip = {"pass": "fail", "fail": "pass"}[exp[c]]
        out[c] = flip if i < wrong else "unsure" if i < wrong + unsure else exp[c]
    return {c: out.get(c, "pass") for c in CRITERIA}


def known(g: dict) -> int:
    return len(json.loads(g["a_expected"])) + len(json.loads(g["b_expected"]))


@pytest.fixture
def db(tmp_path):
    return open_db(tmp_path / "g.db")


# --- the queue -------------------------------------------------------------------------------------------------

def test_gold_count_follows_the_rate():
    assert [gold_count(0.1, n) for n in (0, 9, 10, 20, 29, 30)] == [0, 0, 1, 2, 2, 3]
    assert gold_count(0.0, 100) == 0 and gold_count(0.5, 7) == 3
    assert gold_samples(["w1", "w2", "w3"], 10, 0.1) == {"w1": 1, "w2": 1, "w3": 1}
    assert gold_samples(["w1", "w2", "w3"], 10, 0.25) == {"w1": 3, "w2": 2, "w3": 2}


def test_gold_pairs_are_made_from_the_extra_samples_and_join_the_queue(db):
    exp = study_pool(db, 20)
    gold_items(db, exp, 2)
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(0)) == 2
    assert add_gold_pairs(db, exp, PROMPTS) == 0  # idempotent: a resumed pool only adds new samples
    gold_items(db, exp, 3, day=True)
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(1)) == 3
    gold = gold_pairs(db)
    assert len(gold) == 5 and len({g["prompt_id"] for g in gold}) == 5  # spread over the prompts
    outputs = {r[0] for r in db.execute("SELECT text FROM generations")}
    for g in gold:  # one side is a pooled output as it was, the other that output edited, with known fails
        sides = [(g["a_text"], json.loads(g["a_expected"])), (g["b_text"], json.loads(g["b_expected"]))]
        (kept, _), (changed, fails) = sorted(sides, key=lambda s: len(s[1]))
        assert kept in outputs and changed not in outputs and fails and set(fails.values()) == {"fail"}
    texts = [t for g in gold for t in (g["a_text"], g["b_text"])]
    assert len(set(texts)) == len(texts)  # no text twice
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    # Every pair, gold included, is met in the normal least-rated order, once, with its own quota.
    met = []
    while (view := next_pair(db, "ann", 2)) is not None:
        met.append(view.pair_id)
        submit_rating(db, APP, RatingInput(view.pair_id, "ann", answer("{}"), answer("{}"), "A"))
    assert len(met) == 25 and len(set(met)) == 25 and {g["id"] for g in gold} <= set(met)


def test_a_greedy_gold_pair_is_never_served_to_a_rater_who_rated_its_unedited_text(db):
    """With greedy decoding a gold sample repeats its prompt's study texts, so a gold pair's unedited side is a text
    a rater who rated that study pair has seen revealed: she would know the pair for a check. The queue serves it
    only to raters who met neither of its texts."""
    app = AppConfig(ratings_per_pair=1)
    exp = insert_experiment(db, "pool", {}, {})
    pid = PROMPTS[0].id
    gens = {path: GenerationRecord(prompt_id=pid, path=path, text=f"资料库周三晚间维护，{path}。\n恢复时间未定。",
                                   new_tokens=30, token_ids=[1, 1 if path == "ordinary" else 2], stop_reason="eos",
                                   generate_seconds=1.0) for path in ("ordinary", "assisted")}
    insert_pairs(db, exp, [{"prompt_id": pid, "sample": 0, "ordinary_side": "A", **gens}])
    # the extra (gold) sample: greedy, so the same two texts, with another seed
    insert_generations(db, [dataclasses.replace(g, seed=10_000) for g in gens.values()], exp)
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(0)) == 1
    gold = gold_pairs(db)[0]
    assert {gold["a_text"], gold["b_text"]} & {g.text for g in gens.values()}  # its unedited side is a study text
    first = next_pair(db, "ann", 1)
    submit_rating(db, app, RatingInput(first.pair_id, "ann", answer("{}"), answer("{}"), "A"))
    if first.pair_id != gold["id"]:  # she rated the study pair first: the check would be known, so none is left
        assert next_pair(db, "ann", 1) is None
        assert next_pair(db, "ben", 1).pair_id == gold["id"]
    else:  # the check first: its unedited text is the study pair's, whose sides its reveal did not tell; still
        assert next_pair(db, "ann", 1) is None  # one text seen twice is one text known


def test_gold_pairs_follow_the_pairs_raters_see_not_the_identical_ones(db):
    """With half the study pairs identical (decided without raters), the pool keeps gold pairs at the rate of the
    pairs raters meet: the limit counts study pairs whose outputs differ, the samples used are drawn at random, and
    a resumed pool only tops up to it."""
    exp = study_pool(db, 20)
    same = [r[0] for r in db.execute("SELECT assisted_generation_id FROM pairs WHERE kind = 'study' ORDER BY rowid")][:10]
    db.conn.execute("UPDATE generations SET token_hash = 'h' || id")  # the helper's records carry no hash
    db.conn.execute(f"UPDATE generations SET token_hash = (SELECT go.token_hash FROM pairs p JOIN generations go ON "
                    f"go.id = p.ordinary_generation_id WHERE p.assisted_generation_id = generations.id) "
                    f"WHERE id IN ({','.join(map(str, same))})")
    db.conn.commit()
    differing = db.execute(f"SELECT COUNT(*) FROM pairs p WHERE kind = 'study' AND NOT {IDENTICAL.format(p='p.')}"
                           ).fetchone()[0]
    assert differing == 10
    gold_items(db, exp, 4)  # what the pool generates for 20 study pairs at a rate of 0.2
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(3), limit=gold_count(0.2, differing)) == 2
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(4), limit=2) == 0  # a resumed pool: already there
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(5), limit=3) == 1  # more differing pairs: topped up
    assert len(_unpaired_samples(db, exp)) == 1  # the one left is a generation, never served


def test_a_greedy_pool_of_identical_pairs_gets_gold_pairs_only_for_the_pairs_that_differ(tiny_models, tmp_path):
    """Greedy decoding makes most pairs token-identical; they never reach a rater, so the pool's gold pairs follow
    the differing ones (before, a pool of identical pairs still got pool.gold_rate x all its pairs)."""
    from apphelpers import write_config

    from evalkit.config import load_config
    from evalkit.study.preparation import ensure_pool

    cfg = load_config(write_config(tmp_path / "greedy.toml", tiny_models))
    cfg.decoding.mode, cfg.pool.prompts, cfg.pool.gold_rate = "greedy", ["writing-01", "writing-02", "writing-03"], 0.5
    ensure_pool(cfg, tmp_path / "g.db", echo=lambda *_: None)
    db = open_db(tmp_path / "g.db")
    study = db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'study'").fetchone()[0]
    differing = db.execute(f"SELECT COUNT(*) FROM pairs p WHERE kind = 'study' AND NOT {IDENTICAL.format(p='p.')}"
                           ).fetchone()[0]
    gold = db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'gold'").fetchone()[0]
    assert study == 6 and differing < study  # greedy: assisted reproduces the target's tokens
    assert gold == gold_count(0.5, differing) < gold_count(0.5, study)


@pytest.mark.parametrize("text, language, name, fails", [
    ("内部资料库将于周三晚间维护。\n维护期间不能上传新文件，已有文件仍可阅读。恢复时间尚未确定。", "zh", "changed-day",
     ("schedule",)),
    ("各位同事：\n维护期间不能上传新文件，已有文件仍可阅读。恢复时间尚未确定，请留意通知。", "zh", "added-promise",
     ("unknown_restore_time", "no_added_promises")),
    ("The library is down on Wednesday evening.\nUploads stop; reading goes on.", "en", "changed-day", ("schedule",)),
    ("Dear all,\nuploads stop during the work; existing files stay readable. No restore time yet.", "en",
     "added-promise", ("unknown_restore_time", "no_added_promises")),
    ("没有句号的输出", "zh", "added-promise", ("unknown_restore_time", "no_added_promises")),
])
def test_an_edit_makes_a_known_flaw_and_keeps_the_outputs_form(text, language, name, fails):
    e = edit(text, language)
    assert (e.name, e.fails) == (name, fails) and e.text != text and e.note
    assert e.text.count("\n") == text.count("\n")  # no line added
    if name == "changed-day":  # a changed day: the length of a day's name apart, the same text and punctuation
        assert abs(len(e.text) - len(text)) <= 1 and "周三" not in e.text and "Wednesday" not in e.text
        assert [c for c in e.text if not c.isalnum()] == [c for c in text if not c.isalnum()]
    else:  # a promise, inside the last sentence: a text that ended on a full stop still does
        assert any(verb.split()[-1] in e.text for verb in _PROMISE_PARTS[language][0])
        if text.rstrip()[-1] in "。.!?！？":
            assert e.text.rstrip()[-1] == text.rstrip()[-1]


def test_the_edits_words_vary_so_no_fixed_scan_finds_the_gold_pairs():
    """Attacker audit F3: every changed day became Thursday and every promise said 保证/guarantee by Thursday, so a
    scan of the two texts for those words flagged all 28 gold pairs of a study before rating (one false alarm in 97
    study pairs) and even gave their answers. The words are now drawn from many: over the labelled outputs, the
    audit's scan finds a minority of the edits, and each edit is the same again for the same text."""
    import re

    from test_prescreen_labelled import ALL

    scan = re.compile(r"周四|星期四|Thursday|保证|guarantee", re.I)
    days, promises, flagged, made = set(), set(), 0, 0
    for item in ALL:
        for e in (change_day(item.text, item.lang), add_promise(item.text, item.lang)):
            if e is None:
                continue
            made += 1
            flagged += bool(scan.search(e.text)) and not scan.search(item.text)
            (days if e.name == "changed-day" else promises).add(e.note.split(" · ")[0] if e.name == "changed-day"
                                                                 else e.text[-25:])
        again = add_promise(item.text, item.lang)
        assert again == add_promise(item.text, item.lang)  # drawn from the text: reproducible
    assert len(days) >= 8 and len(promises) >= 100, (len(days), len(promises))
    assert flagged / made < 0.4, flagged / made


def test_prompt_files_hold_no_gold_texts_and_refuse_them(tmp_path):
    for f in sorted((Path(__file__).parent.parent / "prompts").glob("*.toml")):
        assert "[[gold]]" not in f.read_text(encoding="utf-8"), f
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.read_text(encoding="utf-8") + '\n[[gold]]\nname = "x"\ntext = "y"\n', encoding="utf-8")
    with pytest.raises(EvalkitError, match="no longer read from prompt files, which are public") as e:
        load_prompt(bad)
    assert str(bad) in str(e.value)


def test_a_gold_pair_looks_like_a_study_pair_before_submit(db):
    exp = study_pool(db, 10)
    gold_items(db, exp, 2)
    add_gold_pairs(db, exp, PROMPTS)
    gold_ids = {g["id"] for g in gold_pairs(db)}
    study_ids = {r["id"] for r in db.query("SELECT id FROM pairs WHERE kind = 'study'")}
    views = {pid: pair_view(db, pid) for pid in gold_ids | study_ids}
    for pid, v in views.items():
        assert type(v) is type(views[min(study_ids)])
        assert [f.name for f in dataclasses.fields(v)] == ["pair_id", "prompt_id", "text_a", "text_b", "material", "task",
                                                          "criteria"]
        assert PAIR_ID.fullmatch(v.pair_id) and v.text_a and v.text_b
    refs = list(db.query("SELECT name, note, expected, text FROM reference_outputs"))
    texts = {r["text"] for r in refs}
    for pid in gold_ids:
        view = dataclasses.asdict(views[pid])
        shown = json.dumps({k: v for k, v in view.items() if k not in ("text_a", "text_b")}, ensure_ascii=False)
        for marker in ["gold", "check", "reference", "expected", "参考", "检验"] + [r["name"] for r in refs] + [
                r["note"] for r in refs if r["note"]]:
            assert marker not in shown, marker
        # the texts are the references exactly as stored: no added whitespace, name or note
        assert view["text_a"] in texts and view["text_b"] in texts


def test_the_reveal_says_check_pair_and_a_gold_rating_has_no_path(db):
    exp = study_pool(db, 10)
    gold_items(db, exp, 1)
    add_gold_pairs(db, exp, PROMPTS)
    g = gold_pairs(db)[0]
    rid = submit_rating(db, APP, RatingInput(g["id"], "ann", answer(g["a_expected"]), answer(g["b_expected"]), "B"))
    r = reveal(db, g["id"])
    assert isinstance(r, GoldReveal)
    assert r.a_expected == json.loads(g["a_expected"]) and r.b_expected == json.loads(g["b_expected"])
    row = db["ratings"].get(rid)
    assert row["preferred_path"] is None
    assert all(row[f"{p}_{c}"] is None for p in ("ordinary", "assisted") for c in CRITERIA)
    from evalkit.ui.reveal import render

    text = render(r)
    assert "check pair" in text and "| seconds |" not in text and "tokens/s" not in text
    from evalkit.task.criteria import title

    # each criterion by its title, never by its id
    assert all(f"| {title(c, 'en')} | {r.a_expected.get(c, '—')} | {r.b_expected.get(c, '—')} |" in text for c in CRITERIA)
    assert not any(c in text for c in CRITERIA)


# --- accuracy and the gate --------------------------------------------------------------------------------------

def test_accuracy_per_rater_counts_unsure_as_a_miss_and_only_the_blind_version(db):
    exp = study_pool(db, 20)
    gold_items(db, exp, 2)  # no day named: each edit adds a promise, 2 known fails per pair
    add_gold_pairs(db, exp, PROMPTS)
    g1, g2 = gold_pairs(db)
    assert known(g1) == known(g2) == 2
    ins = [("ann", g1, 0, 0), ("ann", g2, 0, 0),   # all 4 known answers right
           ("bob", g1, 0, 1),                      # 1 unsure of 2
           ("cat", g1, 2, 0)]                      # both wrong
    ids = {}
    for rater, g, wrong, unsure in ins:
        a_exp, b_exp = g["a_expected"], g["b_expected"]
        edited_a = json.loads(a_exp) != {}
        ids[rater, g["id"]] = submit_rating(db, AppConfig(ratings_per_pair=5), RatingInput(
            g["id"], rater, answer(a_exp, *((wrong, unsure) if edited_a else (0, 0))),
            answer(b_exp, *((0, 0) if edited_a else (wrong, unsure))), "A"))
    # ann's correction after the reveal (blind = 0) is kept but never scored
    correct_rating(db, APP, ids["ann", g1["id"]], RatingInput(
        g1["id"], "ann", answer(g1["a_expected"], 4), answer(g1["b_expected"], 4), "B"), after_reveal=True)
    table, excluded = accuracy(db, 0.75, raters=["dan"])
    t = table.set_index("rater")
    assert list(t.index) == ["ann", "bob", "cat", "dan"]
    assert t.loc["ann", ["gold_ratings", "answers", "correct", "unsure"]].tolist() == [2, 4, 4, 0]
    assert t.loc["bob", ["gold_ratings", "answers", "correct", "unsure"]].tolist() == [1, 2, 1, 1]
    assert t.loc["bob", "accuracy"] == pytest.approx(1 / 2) and t.loc["cat", "accuracy"] == 0
    assert t.loc["ann", "accuracy"] == 1.0 and pd.isna(t.loc["dan", "accuracy"])
    # every known answer is a fail: each one answered pass is a missed flaw, and there is no false alarm to make
    assert (t.loc["cat", "missed_flaws"], t.loc["cat", "false_alarms"]) == (2, 0)
    assert excluded == ["bob", "cat"] and not t.loc["dan", "excluded"]  # dan met no gold pair: kept
    assert accuracy(db, 0.0)[1] == []  # 0 = off
    # cat corrects her wrong answers before the reveal (blind: it replaces her rating everywhere a rating counts), as
    # a rater would who saw the pair left "pending" and guessed it is a check: the gold check scores her first answer
    fixed = correct_rating(db, AppConfig(ratings_per_pair=5), ids["cat", g1["id"]], RatingInput(
        g1["id"], "cat", answer(g1["a_expected"], 0), answer(g1["b_expected"], 0), "A"))
    assert fixed in {r[0] for r in db.execute("SELECT id FROM current_ratings")}
    t = accuracy(db, 0.75)[0].set_index("rater")
    assert t.loc["cat", ["gold_ratings", "correct", "accuracy"]].tolist() == [1, 0, 0.0] and t.loc["cat", "excluded"]


def test_a_gold_pair_is_scored_on_the_reference_it_was_stored_with_whatever_a_later_pool_holds(db):
    """Sceptic audit, 2026-12-06: gold answers are part of no prompt hash, so could a later pool carry other ones under
    the same check pair? No prompt file holds them (test_prompt_files_hold_no_gold_texts_and_refuse_them): each pool
    makes its gold pairs from its own outputs, and a later pool's, of the same prompts, get references of their own,
    while the earlier pair keeps its own and its raters' scores. What nothing enforced: a stored reference was a row
    any write could edit, rescoring every answer given on that pair. The database now refuses a change to its text,
    expected answers or note, saying where other check pairs come from."""
    exp = study_pool(db, 20)
    gold_items(db, exp, 1)
    add_gold_pairs(db, exp, PROMPTS, rng=random.Random(0))
    (g,) = gold_pairs(db)
    submit_rating(db, APP, RatingInput(g["id"], "ann", answer(g["a_expected"]), answer(g["b_expected"]), "A"))
    scored = accuracy(db, 0.75)
    refs = db.execute("SELECT id, text, expected, note FROM reference_outputs ORDER BY id").fetchall()
    later = insert_experiment(db, "pool", {}, {}, gate={})  # a later pool of the same prompts, with gold pairs
    gold_items(db, later, 1, prompt_ids=[g["prompt_id"]])
    assert add_gold_pairs(db, later, PROMPTS, rng=random.Random(1)) == 1
    assert db.execute("SELECT id, text, expected, note FROM reference_outputs WHERE id <= ? ORDER BY id",
                      [refs[-1][0]]).fetchall() == refs
    assert len(pairs := gold_pairs(db)) == 2 and g in pairs  # the first pair as it was, beside the later one's
    edited = next(r for r in refs if r[2] != "{}")
    for column, value in (("expected", "{}"), ("text", edited[1] + "。"), ("note", "")):
        with pytest.raises(sqlite3.IntegrityError, match="reference output never changes once stored") as e:
            db.execute(f"UPDATE reference_outputs SET {column} = ? WHERE id = ?", [value, edited[0]])
        assert "`evalkit generate`" in str(e.value)
    db.conn.rollback()
    again = accuracy(db, 0.75)
    assert again[0].equals(scored[0]) and again[1] == scored[1] == []


def _path_tables(agg) -> dict:
    return {k: agg.tables[k] for k in ("pass_rates", "paired_differences", "preferences", "agreement",
                                       "prescreen_agreement", "timing", "speedup")}


def test_gold_ratings_never_change_the_path_comparison(rated_db, monkeypatch):
    db = rated_db
    before = aggregate(db)
    exp = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    gold_items(db, exp, 2)
    assert add_gold_pairs(db, exp, PROMPTS) == 2
    for g in gold_pairs(db):  # every rater rates every gold pair, as far from the study ratings as possible
        for rater in ("r1", "r2", "r3"):
            submit_rating(db, AppConfig(), RatingInput(g["id"], rater, {c: "fail" for c in CRITERIA},
                                                       {c: "unsure" for c in CRITERIA}, "tie"))
    assert db.execute("SELECT COUNT(*) FROM current_ratings").fetchone()[0] == 12 + 6
    after = aggregate(db)
    for name, df in _path_tables(before).items():
        pd.testing.assert_frame_equal(df, after.tables[name], obj=name)
    assert after.verdict.decision == before.verdict.decision
    assert [c.reason for c in after.verdict.conditions] == [c.reason for c in before.verdict.conditions]
    counts = after.tables["counts"].iloc[0]
    assert (counts["pairs"], counts["gold_pairs"], counts["current_ratings"]) == (4, 2, 12)
    assert after.tables["gold"].set_index("rater")["gold_ratings"].to_dict() == {"r1": 2, "r2": 2, "r3": 2}

    # The check can fail: read every current rating, as a leak would, and the comparison moves.
    monkeypatch.setattr(aggregate_data, "ONLY_STUDY_PAIRS", False)
    leaked = aggregate(db)
    # gold ratings carry no path answers, so a leak shows in what the tables count: ratings and pairs
    assert int(leaked.tables["counts"]["current_ratings"][0]) == 18
    assert int(leaked.tables["counts"]["pairs"][0]) == 6


def gold_first(db, exp):
    """Gold pairs (from 2 extra pooled samples, each edited to 2 known fails), and r1 (half wrong) and r2 (all
    right) rating them before any study rating."""
    gold_items(db, exp, 2)
    add_gold_pairs(db, exp, PROMPTS)
    for g in gold_pairs(db):
        submit_rating(db, AppConfig(), RatingInput(g["id"], "r1", answer(g["a_expected"], 1), answer(g["b_expected"], 1), "A"))
        submit_rating(db, AppConfig(), RatingInput(g["id"], "r2", answer(g["a_expected"]), answer(g["b_expected"]), "A"))


def gold_bar_study(tmp_path):
    """A study of 12 pairs whose gate asks for a gold accuracy of 0.8, with STOP_AFTER_GOLD_RATINGS check pairs:
    (its database file, the open database, the pool experiment)."""
    from evalkit.study.gate import gate_snapshot
    from evalkit.study.gold import STOP_AFTER_GOLD_RATINGS

    gate = tmp_path / "gate.toml"
    gate.write_text("margin = 0.05\nplanned_pairs = 40\nmin_ratings_per_pair = 1\nmin_gold_accuracy = 0.8\n")
    path = tmp_path / "g.db"
    db = open_db(path)
    exp = study_pool(db, 12, gate=gate_snapshot(gate))
    gold_items(db, exp, STOP_AFTER_GOLD_RATINGS)
    assert add_gold_pairs(db, exp, PROMPTS, rng=random.Random(0)) == STOP_AFTER_GOLD_RATINGS
    return path, db, exp


def test_a_rater_clearly_below_min_gold_accuracy_is_served_no_more_pairs(tmp_path):
    """A rater the gold check leaves out was served pairs for as long as any were open: every pair she filled was
    closed with no counted rating (the pool's reserve spent on her) and her hours were lost. Once her answers on at
    least three check pairs put her clearly below the gate's bar (Wilson's upper end under it) she is served no
    more, and her screen says why; a rater with the same misses on fewer check pairs, and an accurate one, are
    served as before."""
    from test_rate_handlers import Tab

    from evalkit.study.gold import STOP_AFTER_GOLD_RATINGS, clearly_below
    from evalkit.ui.words import word

    path, db, exp = gold_bar_study(tmp_path)
    db.conn.close()
    db = open_db(path)
    gold = gold_pairs(db)
    for g in gold:  # every known answer wrong, on every check pair; the unlucky rater only on the first two
        submit_rating(db, AppConfig(ratings_per_pair=3), RatingInput(g["id"], "careless", answer(g["a_expected"], 9),
                                                                     answer(g["b_expected"], 9), "A"))
        submit_rating(db, AppConfig(ratings_per_pair=3), RatingInput(g["id"], "careful", answer(g["a_expected"]),
                                                                     answer(g["b_expected"]), "A"))
    for g in gold[:STOP_AFTER_GOLD_RATINGS - 1]:
        submit_rating(db, AppConfig(ratings_per_pair=3), RatingInput(g["id"], "unlucky", answer(g["a_expected"], 9),
                                                                     answer(g["b_expected"], 9), "A"))
    # the check pairs close (their reveals are shown): the stop counts closed ones only
    # (tests/test_security.py::test_the_gold_stop_tells_no_name_that_a_pair_still_open_is_a_check)
    with db.conn:
        db.conn.executemany("INSERT OR IGNORE INTO closed_pairs (pair_id, closed_at) VALUES (?, '2026-12-01')",
                            [[g["id"]] for g in gold])
    assert [clearly_below(db, n) for n in ("careless", "unlucky", "careful")] == [True, False, False]
    db.conn.close()
    tab = Tab(path, {p.id: p for p in PROMPTS}, ratings_per_pair=3)
    for name, stopped in (("careless", True), ("unlucky", False), ("careful", False)):
        out = tab.sign_in(name)[1]  # the screen after signing in: her next pair, or why there is none
        assert (word("gold_stopped", "zh") in str(out[tab.ui.done_md])) is stopped
        assert out[tab.ui.pair_box]["visible"] is not stopped
    assert rows_of(path, "SELECT COUNT(*) FROM assignments a JOIN pairs p ON p.id = a.pair_id "
                         "WHERE a.rater = 'careless' AND p.kind = 'study'") == 0


def rows_of(path, sql):
    db = open_db(path)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.conn.close()


def test_a_rater_below_min_gold_accuracy_is_left_out_of_the_verdict(tmp_path):
    from test_aggregate import GATE, load_fixture

    db = open_db(tmp_path / "a.db")
    # pre-registered: the gate frozen with the study's first pool asks for 0.8
    load_fixture(db, tmp_path / "gate.toml", GATE + "min_gold_accuracy = 0.8\n", before_ratings=gold_first)
    agg = aggregate(db)
    t = agg.tables["gold"].set_index("rater")
    assert t.loc["r1", "accuracy"] == 0.5 and t.loc["r1", "excluded"]
    assert t.loc["r2", "accuracy"] == 1.0 and not t.loc["r2", "excluded"]
    assert t.loc["r3", "gold_ratings"] == 0 and not t.loc["r3", "excluded"]  # never checked: kept
    # r1's 4 study ratings are out of every table and of the verdict's inputs
    assert agg.tables["counts"].iloc[0]["current_ratings"] == 8
    diffs = agg.tables["paired_differences"]
    assert set(diffs[diffs["prompt_id"] == "all"]["ratings"]) == {8} and agg.tables["pass_rates"]["n"].max() == 8
    pref = agg.tables["preferences"]
    assert pref[pref["prompt_id"] == "all"]["n"].iloc[0] == 8
    sample = next(c for c in agg.verdict.conditions if c.name == "planned sample")
    assert "0 of the 4 planned pairs have 3 current ratings" in sample.reason  # r1 left out: two raters a pair
    notes = " ".join(agg.notes)
    assert "1 of 2 checked rater(s) below the pre-registered accuracy 0.80 are left out" in notes
    assert "1 rater(s) met no gold pair" in notes
    assert "r1" not in notes  # the notes reach raters who finished their queue: no one is named
    # the verdict can no longer rest on 3 ratings per pair
    assert agg.verdict.decision == "INSUFFICIENT DATA"

    from evalkit.publish.report import build_report

    page = build_report(db, tmp_path / "report", agg).read_text(encoding="utf-8")
    assert "<h3>gold</h3>" in page and "missed_flaws" in page
    from evalkit.publish.scrub import pseudonyms

    assert all(p in page for p in pseudonyms(["r1", "r2", "r3"], db))  # the report names raters as the export does


def test_the_results_tab_names_the_rater_the_gold_check_leaves_out_to_organisers_only(tmp_path):
    """Organiser audit, 2026-12-04 (M4): only `evalkit aggregate` named the rater the gold check left out; the app's
    notes (read by raters too) name nobody, so an organiser working from the app, or on a Space, could not tell whom
    to retrain. The counts below the tab's table now name them, to organisers, beside the verdict's own counts."""
    from test_aggregate import GATE, load_fixture

    from evalkit.aggregate import aggregate
    from evalkit.ui.results import counted_markdown

    db = open_db(tmp_path / "a.db")
    load_fixture(db, tmp_path / "gate.toml", GATE + "min_gold_accuracy = 0.8\n", before_ratings=gold_first)
    agg = aggregate(db)
    c = agg.tables["counts"].iloc[0]
    en = counted_markdown(agg, "en", organiser=True)
    assert (f"{c['complete_pairs']} decided pairs ({c['planned_pairs']} planned)" in en
            and f"{c['current_ratings']} counted ratings by {c['raters']} rater(s)" in en)
    (left,) = agg.tables["gold"][agg.tables["gold"]["excluded"]].itertuples()
    assert f"Left out by the gold check (accuracy below 0.80): {left.rater} ({left.accuracy:.2f} on {left.answers} answers)" in en
    assert f"检验题排除的评分者（准确率低于 0.80）：{left.rater}（" in counted_markdown(agg, "zh", organiser=True)
    assert "Left out" not in counted_markdown(agg, "en") and left.rater not in counted_markdown(agg, "en")


def test_a_name_the_gold_check_leaves_out_shows_as_typed_to_the_organiser(tmp_path):
    """Attacker audit F4: the name went into the organiser's Markdown as it was, and an open sign-up name such as
    ![x](http://attacker.example/b.png) had her browser fetch the image, or put a link in the sentence."""
    from test_aggregate import GATE, load_fixture

    from evalkit.aggregate import aggregate
    from evalkit.ui.alerts import inert
    from evalkit.ui.results import counted_markdown

    name = "![x](http://attacker.example/b.png) [alice](http://evil.example)"

    def rename(db, exp):  # gold_first, with the careless rater under that name
        gold_items(db, exp, 2)
        add_gold_pairs(db, exp, PROMPTS)
        for g in gold_pairs(db):
            submit_rating(db, AppConfig(), RatingInput(g["id"], name, answer(g["a_expected"], 1),
                                                       answer(g["b_expected"], 1), "A"))
            submit_rating(db, AppConfig(), RatingInput(g["id"], "r2", answer(g["a_expected"]),
                                                       answer(g["b_expected"]), "A"))

    db = open_db(tmp_path / "a.db")
    load_fixture(db, tmp_path / "gate.toml", GATE + "min_gold_accuracy = 0.8\n", before_ratings=rename)
    agg = aggregate(db)
    assert list(agg.tables["gold"][agg.tables["gold"]["excluded"]]["rater"]) == [name]
    for lang in ("en", "zh"):
        text = counted_markdown(agg, lang, organiser=True)
        assert inert(name) in text and "](http" not in text.replace("\\](http", "")
        # and what it costs while she rates on, with the organiser's way to stop it
        assert "evalkit raters revoke" in text and ("still served pairs" in text if lang == "en" else "仍会被分到评分对" in text)


def test_an_interim_export_names_the_rater_the_gold_check_leaves_out(tmp_path):
    """Export audit, 2026-12-04 (D3): an interim export's card said "8 by 2 raters; 1 left out by the gold check"
    while its tables held 12 current ratings by 3 raters, and nothing said which rater was left out (only a decided
    study has `decisions.excluded_json`). The card's scope now names the rater, by the export's pseudonym, and says
    which figure counts whom; the recipe points there."""
    import pyarrow.parquet as pq
    from test_aggregate import GATE, load_fixture

    from evalkit.publish.export import export, split_file
    from evalkit.publish.scrub import pseudonyms

    db = open_db(tmp_path / "a.db")
    load_fixture(db, tmp_path / "gate.toml", GATE + "min_gold_accuracy = 0.8\n", before_ratings=gold_first)
    out = tmp_path / "export"
    export(db, out)
    card = (out / "README.md").read_text(encoding="utf-8")
    scope = card.split("### Sample scope (study 'main')")[1].split("###")[0]
    r1 = pseudonyms(["r1"], db)[0]
    assert ("current ratings counted: 8 by 2 rater(s) on 4 pair(s); not counted: the ratings of the 1 rater(s) the "
            f"gold check left out ({r1}), which are in `ratings`") in scope
    assert "r1," not in scope and "(r1)" not in scope
    ratings = pq.read_table(split_file(out, "ratings")).to_pylist()
    pairs = {p["id"]: p["kind"] for p in pq.read_table(split_file(out, "pairs")).to_pylist()}
    counted = [r for r in ratings if r["current"] and r["kind"] == "rating" and pairs[r["pair_id"]] == "study"
               and r["rater"] != r1]
    assert len(counted) == 8 and len({r["rater"] for r in counted}) == 2  # the card's figure, from the tables
    assert "those it leaves out are named under \"Sample scope\"" in card
    # and the interim sample's rule, which counts fewer ratings than the scope's count (export audit, 2026-12-04)
    flat = " ".join(card.split())
    assert "it is the study pairs that hold their quota (`pairs.wanted_ratings`;" in flat
    assert 'of current ratings (`ratings.current` and `kind` = "rating"' in flat
    assert "current ratings of study pairs (every rater)" in card
    assert "of every table and the verdict (the ratings stay stored, and an export carries them)" in card


def test_a_rater_who_rated_only_gold_pairs_and_missed_is_left_out_without_error(db, tmp_path):
    from evalkit.study.gate import gate_snapshot

    (tmp_path / "gate.toml").write_text("min_gold_accuracy = 0.8\n")
    exp = study_pool(db, 10, gate=gate_snapshot(tmp_path / "gate.toml"))
    gold_items(db, exp, 1)
    add_gold_pairs(db, exp, PROMPTS)
    (g,) = gold_pairs(db)
    submit_rating(db, APP, RatingInput(g["id"], "eve", answer(g["a_expected"], 4), answer(g["b_expected"], 4), "A"))
    agg = aggregate(db)
    assert agg.tables["gold"]["excluded"].tolist() == [True]
    assert "1 of 1 checked rater(s) below the pre-registered accuracy 0.80 are left out, with their 0 rating(s)" in " ".join(agg.notes)
    assert agg.tables["counts"].iloc[0]["current_ratings"] == 0 and agg.verdict.decision == "INSUFFICIENT DATA"


# --- prompt files, config, gate -----------------------------------------------------------------------------------

GOOD = Path(__file__).parent.parent / "prompts" / "writing-02.toml"


def test_gold_rate_and_min_gold_accuracy_are_validated():
    assert from_dict({}).pool.gold_rate == 0.1
    for bad in (-0.1, 0.6):
        with pytest.raises(EvalkitError, match=r"pool.gold_rate must be in \[0, 0.5\]"):
            from_dict({"pool": {"gold_rate": bad}})
    assert parse_gate("min_gold_accuracy = 0.8", "g").min_gold_accuracy == 0.8
    with pytest.raises(EvalkitError, match=r"min_gold_accuracy = 1.5 is outside \[0.0, 1.0\]"):
        parse_gate("min_gold_accuracy = 1.5", "g")


# --- migration ------------------------------------------------------------------------------------------------------

def _old_database(path: Path, monkeypatch) -> None:
    """A database as the previous release left it (migrations up to 008), with a study, ratings (a correction
    chain included) and an assignment; rows written with SQL, since the library now speaks the new schema."""
    from evalkit.store import migrations

    with monkeypatch.context() as m:
        # 010 rebuilds the pairs table; 015, 016, 027 and 029 add columns to it, so an old database has none of them (and
        # 020, which reads one of them, and 028, a trigger on 010's reference_outputs, come after them)
        m.setattr(migrations, "MIGRATIONS", [x for x in migrations.MIGRATIONS
                                             if x[1] not in (migrations._m010_gold_pairs, migrations._m015_queue_order,
                                                             migrations._m016_ratings_wanted,
                                                             migrations._m020_closed_before_012,
                                                             migrations._m027_pair_stored_at,
                                                             migrations._m028_references_kept,
                                                             migrations._m029_pair_withheld)])
        db = open_db(path)
    assert "kind" not in {c.name for c in db["pairs"].columns}
    study_pool(db, 6)
    ids = [r["id"] for r in db.query("SELECT id FROM pairs ORDER BY id")]

    def rating(pair_id, rater, a, b, pref, supersedes=None, blind=1):
        row = {"pair_id": pair_id, "rater": rater, "created_at": "2026-01-01T00:00:00", "kind": "rating",
               "preference": pref, "preferred_path": "tie", "supersedes": supersedes, "blind": blind}
        row |= {f"{s}_{c}": v for s, v in (("a", a), ("b", b), ("ordinary", a), ("assisted", b)) for c in CRITERIA}
        db["ratings"].insert(row)
        return db.execute("SELECT last_insert_rowid()").fetchone()[0]

    first = rating(ids[0], "ann", "pass", "fail", "A")
    rating(ids[0], "ann", "pass", "unsure", "tie", supersedes=first, blind=0)
    rating(ids[1], "bob", "fail", "pass", "B")
    db["ratings"].insert({"pair_id": ids[2], "rater": "bob", "created_at": "2026-01-01", "kind": "skip", "skip_reason": "x"})
    db["assignments"].insert({"pair_id": ids[3], "rater": "cat", "shown_at": "2026-01-01T00:00:00"})
    db.conn.execute("UPDATE pairs SET work_index = rowid")
    db.conn.commit()
    db.conn.close()


def _dump(path: Path) -> dict:
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    try:
        return {t: [dict(r) for r in con.execute(f"SELECT * FROM {t} ORDER BY rowid")]
                for t in ("experiments", "generations", "pairs", "ratings", "assignments", "raters")}
    finally:
        con.close()


def test_migration_keeps_every_row_and_foreign_key(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    _old_database(path, monkeypatch)
    before = _dump(path)
    db = open_db(path)
    after = _dump(path)
    for table, rows in before.items():
        if table in ("pairs", "experiments"):  # every old value kept; new columns beside them
            assert [{k: r[k] for k in rows[0]} for r in after[table]] == rows, table
        if table == "pairs":
            assert {(r["kind"], r["a_reference_id"], r["b_reference_id"]) for r in after[table]} == {("study", None, None)}
            assert {r["queue_rank"] for r in after[table]} == {None}  # served after ranked pairs, old rule
            assert {r["wanted_ratings"] for r in after[table]} == {None}  # the app's quota, old rule
        elif table != "experiments":
            assert after[table] == rows, table
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("SELECT COUNT(*) FROM current_ratings").fetchone()[0] == 2
    assert [r["kind"] for r in db.query("SELECT kind FROM pairs")] == ["study"] * 6
    # the rebuilt table keeps its rules: a gold pair must name two references and no generation
    with pytest.raises(sqlite3.IntegrityError):
        db.conn.execute("INSERT INTO pairs (id, experiment_id, created_at, prompt_id, kind, a_generation_id) "
                        "VALUES ('px', 1, 'now', 'writing-01', 'gold', 1)")
    db.conn.rollback()
    with pytest.raises(sqlite3.IntegrityError):  # foreign keys are on again
        db.conn.execute("INSERT INTO ratings (pair_id, rater, created_at, kind) VALUES ('nope', 'x', 'now', 'skip')")
    db.conn.rollback()


def test_a_database_with_a_dangling_row_is_refused_unchanged(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    _old_database(path, monkeypatch)
    con = sqlite3.connect(path)  # a dangling row written by hand (foreign keys are off in a bare connection)
    con.execute("INSERT INTO assignments (pair_id, rater, shown_at) VALUES ('p-gone', 'eve', 'now')")
    con.commit()
    con.close()
    before = _dump(path)
    with pytest.raises(EvalkitError, match="gold_pairs needs every foreign key intact, and 1 row"):
        open_db(path)
    assert _dump(path) == before
    con = sqlite3.connect(path)
    assert "kind" not in {r[1] for r in con.execute("PRAGMA table_info(pairs)")}
    assert con.execute("SELECT COUNT(*) FROM _migrations WHERE name LIKE '%gold_pairs'").fetchone()[0] == 0
    con.close()


def test_a_rebuild_that_breaks_a_foreign_key_is_rolled_back(tmp_path, monkeypatch):
    from evalkit.store import migrations

    path = tmp_path / "new.db"
    db = open_db(path)
    study_pool(db, 2)
    view = next_pair(db, "ann", 2)
    db.conn.close()

    def broken(d):  # a faulty rebuild: loses a pair that an assignment points at
        d.execute("DELETE FROM pairs WHERE id = ?", [view.pair_id])

    broken.foreign_keys_off = True
    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS + [("099_broken", broken)])
    with pytest.raises(EvalkitError, match="099_broken would break 1 foreign key"):
        open_db(path)
    db = open_db(path, migrate_schema=False)
    assert db.execute("SELECT COUNT(*) FROM pairs").fetchone()[0] == 2
    assert db.execute("SELECT COUNT(*) FROM _migrations WHERE name = '099_broken'").fetchone()[0] == 0
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


# --- through the served app ---------------------------------------------------------------------------------------

def _hold(db_file: Path, rater: str, pair_id: str) -> None:
    """Put a pair on a rater's screen before they sign in (the queue resumes the pair a rater holds)."""
    from evalkit.store import now

    with sqlite3.connect(db_file) as con:
        con.execute("INSERT INTO assignments (pair_id, rater, shown_at) VALUES (?, ?, ?)", [pair_id, rater, now()])


def with_gold(db_file: Path) -> tuple[dict, dict]:
    """Adds gold pairs to an app test pool; returns a gold pair and a study pair of the same prompt."""
    db = open_db(db_file)
    exp = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    prompts = [p for p in PROMPTS if p.id in {r["prompt_id"] for r in db.query("SELECT prompt_id FROM pairs")}]
    gold_items(db, exp, 3, prompt_ids=[p.id for p in prompts])
    assert add_gold_pairs(db, exp, prompts) == 3
    # ranked (the queue serves a drawn pool's pairs once ranked), quota left to the app's: one rating, then the reveal
    db.execute("UPDATE pairs SET queue_rank = 0.5 WHERE kind = 'gold' AND queue_rank IS NULL")
    db.conn.commit()
    gold = gold_pairs(db)[0]
    study = next(db.query("SELECT * FROM pairs WHERE kind = 'study' AND prompt_id = ?", [gold["prompt_id"]]))
    db.conn.close()
    return gold, study


def test_through_the_app_a_gold_pair_is_blind_until_rated(tiny_models, tmp_path, pool_db):
    from apphelpers import served
    from test_app_client import Tab

    from evalkit.ui.rate import draft_owner

    cfg = load_config_for_app(tiny_models, tmp_path)
    gold, study = with_gold(pool_db)
    _hold(pool_db, "ann", gold["id"])
    _hold(pool_db, "bob", study["id"])
    notes = [r["note"] for r in open_db(pool_db).query("SELECT note FROM reference_outputs WHERE note != ''")]
    with served(cfg, pool_db) as url:
        ann, bob = Tab(url), Tab(url)
        g, s = ann.sign_in("ann"), bob.sign_in("bob")
        assert (g["text-a"], g["text-b"]) == (gold["a_text"], gold["b_text"])
        assert set(g) == set(s)
        codes = ann.known_codes  # each one's personal code (in the status, and kept by the browser)
        texts = {k for k in g if g[k] in (gold["a_text"], gold["b_text"])}  # by label and by element id
        personal = {"who", "rate-who", "status", "rate-status"}
        sealed = {k for k in g if str(g[k]).startswith("gAAAA")}  # each one's code, sealed for the browser
        owners = {k for k in g if g[k] == draft_owner("ann")}  # whose unsent answers the browser keeps: hers
        same = {k for k in g if k not in texts | personal | sealed | owners and g[k] != codes["ann"]}
        assert len(same) >= len(g) - 9 - len(owners)
        assert {k: g[k] for k in same} == {k: s[k] for k in same}
        assert g["who"].replace("ann", "bob") == s["who"] and g["reveal"] == s["reveal"] == ""
        # everything but the texts themselves (a reference text may say "expected", as a study text may)
        shown = json.dumps({k: v for k, v in g.items() if k not in texts}, ensure_ascii=False)
        for marker in ["check pair", "检验", "gold", "expected", *notes]:
            assert marker not in shown, marker
        assert _stored(pool_db, "ann") == []

        done_g, done_s = ann.submit(a="pass", b="fail"), bob.submit(a="pass", b="fail")
        assert "检验题" in done_g["reveal"] and "用时（秒）" not in done_g["reveal"]
        assert "检验题" not in done_s["reveal"] and "用时（秒）" in done_s["reveal"]
        (row,) = _stored(pool_db, "ann")
        assert row["pair_id"] == gold["id"] and row["preferred_path"] is None and row["ordinary_schedule"] is None
        assert set(done_g) == set(done_s)
        # the Results tab's counts: gold pairs counted in for a rater with pairs left, apart for an organiser
        assert not any(w in ann.call("/results")["counts"] for w in ("gold", "检验"))
        from evalkit.rating import roster

        db = open_db(pool_db)
        code = roster.add(db, "olga", organiser=True).code
        db.conn.close()
        olga = Tab(url)
        olga.call("/sign_in", "", "", code)
        seen = olga.call("/results")["counts"]
        assert "| 当前评分 | 1（另有 1 条在检验题上） |" in seen
        # and as the verdict counts them (organiser audit M2), which a rater with pairs left is not shown
        assert "按结论的算法（`evalkit aggregate`）：已判定" in seen and "条计入的评分" in seen
        assert "evalkit aggregate" not in ann.call("/results")["counts"]


def load_config_for_app(tiny_models, tmp_path):
    from apphelpers import write_config

    from evalkit.config import load_config

    # one rating a pair: a submission closes its pair, and its reveal is shown at once
    return load_config(write_config(tmp_path / "app.toml", tiny_models, ratings_per_pair=1))


def _stored(db_file: Path, rater: str) -> list[dict]:
    con = sqlite3.connect(db_file)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM ratings WHERE rater = ?", [rater])]
    finally:
        con.close()
