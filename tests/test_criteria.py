"""A criterion is one registered object: a fifth one, defined here with its wording in a temporary prompts folder and
nothing else edited, flows through the prompt files' validation, the ratings table (its columns added when the
database is opened), rating, the pre-screen, the gold edits, the aggregate's tables and verdict, the report, and the
Rate tab's labels, where people read its title and never its id."""

from pathlib import Path

import gradio as gr
import pytest

from evalkit.aggregate import aggregate
from evalkit.config import AppConfig
from evalkit.errors import EvalkitError
from evalkit.rating.queue import RatingInput, submit_rating
from evalkit.records import GenerationRecord
from evalkit.store import insert_experiment, insert_pairs, open_db
from evalkit.study.gate import gate_snapshot
from evalkit.study.gold import edit
from evalkit.task import criteria
from evalkit.task.criteria import CRITERIA, Criterion, register, title
from evalkit.task.edits import Edit
from evalkit.task.fidelity import Verdict
from evalkit.task.prompts import load_prompts
from evalkit.ui.form import FORM_KEYS, labels
from evalkit.ui.guidelines import guidelines

ROOT = Path(__file__).resolve().parent.parent
ID = "polite_rule"  # never shown to anyone: the page shows the title
TITLE = {"zh": "语气得体", "en": "Polite wording"}
QUESTION = {"zh": "语气礼貌，没有感叹号。", "en": "Keeps a polite tone, with no exclamation mark."}


def polite(text: str) -> Verdict:
    shouted = "!" in text or "！" in text
    return Verdict(not shouted, "an exclamation mark" if shouted else "no exclamation mark")


def shout(text: str, language: str) -> Edit | None:
    return Edit("shouted", text.rstrip("。.") + "！", (ID,), "an exclamation mark was added")


@pytest.fixture
def fifth(tmp_path, monkeypatch):
    """The fifth criterion, registered for this test only, with its question added to a copy of every prompt file."""
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for f in sorted((ROOT / "prompts").glob("*.toml")):
        (prompts / f.name).write_text(f.read_text(encoding="utf-8") + f'\n[criteria.{ID}]\nzh = "{QUESTION["zh"]}"\n'
                                      f'en = "{QUESTION["en"]}"\n', encoding="utf-8")
    monkeypatch.setenv("EVALKIT_PROMPTS", str(prompts))
    c = register(Criterion(ID, TITLE, polite, (shout,)))
    yield c
    criteria.unregister(ID)


def test_the_fifth_is_read_everywhere_the_ids_are(fifth):
    assert CRITERIA[-1] == ID and len(CRITERIA) == 5
    assert [p.criteria[ID]["en"] for p in load_prompts()] == [QUESTION["en"]] * 5
    # a prompt file without the new criterion's question is refused, naming it
    with pytest.raises(EvalkitError, match=f"missing {ID}"):
        load_prompts(ROOT / "prompts")
    assert "a_" + ID in FORM_KEYS and "b_" + ID in FORM_KEYS and len(FORM_KEYS) == 12
    assert criteria.screen("资料库周三晚间维护！")[ID].passed is False
    # the gold edits are the registered criteria's, in order, each once (a shared one is tried once)
    from evalkit.task.edits import add_promise, change_day

    assert criteria.gold_edits() == (change_day, add_promise, shout)
    assert edit("周三晚间维护。", "zh").fails == ("schedule",)


def test_a_bad_criterion_is_refused():
    with pytest.raises(EvalkitError, match="not a plain lower-case name"):
        register(Criterion("a; DROP TABLE ratings", TITLE, polite))
    with pytest.raises(EvalkitError, match="already registered"):
        register(Criterion("schedule", TITLE, polite))
    with pytest.raises(EvalkitError, match="title needs exactly two"):
        register(Criterion("other", {"en": "x"}, polite))
    assert len(CRITERIA) == 4


def test_a_database_made_before_the_criterion_gets_its_columns_when_opened(tmp_path):
    old = open_db(tmp_path / "r.db")
    (pid,) = insert_pairs(old, insert_experiment(old, "pool", {}, {}), [_pair(0)])
    submit_rating(old, AppConfig(), RatingInput(pid, "ann", _answers("pass", False), _answers("fail", False), "A"))
    old.conn.close()
    register(Criterion(ID, TITLE, polite))
    try:
        db = open_db(tmp_path / "r.db")
        cols = {r[1] for r in db.execute("PRAGMA table_info(ratings)")}
        assert {f"{p}_{ID}" for p in ("a", "b", "ordinary", "assisted")} <= cols
        row = db.execute(f"SELECT a_schedule, a_{ID} FROM current_ratings").fetchone()
        assert row == ("pass", None)  # the old rating keeps its answers and has none on the new criterion
        with pytest.raises(Exception, match="CHECK constraint"):  # the new columns take only pass / fail / unsure
            db.execute(f"UPDATE ratings SET a_{ID} = 'maybe'")
        assert open_db(tmp_path / "r.db") is not None  # opening again adds nothing
    finally:
        criteria.unregister(ID)


from test_aggregate import GATE  # noqa: E402  (the small study's gate)


def _pair(i):
    text = {"ordinary": f"资料库周三晚间维护，暂停上传，已有文件可阅读，恢复时间待定。{i}",
            "assisted": f"资料库周三晚间维护，暂停上传，已有文件可阅读，恢复时间待定！{i}"}  # assisted shouts
    gens = {path: GenerationRecord(prompt_id="writing-01", path=path, text=text[path], new_tokens=40,
                                   token_hash=f"{i}-{path}", stop_reason="eos", generate_seconds=2.0 if path == "ordinary" else 1.0)
            for path in ("ordinary", "assisted")}
    return {"prompt_id": "writing-01", "sample": i, "ordinary_side": "AB"[i % 2], **gens}


def _answers(v: str, with_fifth: bool = True) -> dict:
    return {c: v for c in CRITERIA if with_fifth or c != ID}


def test_the_fifth_flows_through_rating_aggregate_and_report(fifth, tmp_path):
    db = open_db(tmp_path / "a.db")
    (tmp_path / "gate.toml").write_text(GATE)
    exp = insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(tmp_path / "gate.toml"))
    ids = insert_pairs(db, exp, [_pair(i) for i in range(4)])
    for i, pid in enumerate(ids):
        for rater in ("ann", "bob", "cy"):
            # every output passes the four; the assisted one fails the fifth (ordinary is side A on even pairs)
            o, a = _answers("pass"), _answers("pass") | {ID: "fail"}
            a_side, b_side = (o, a) if i % 2 == 0 else (a, o)
            submit_rating(db, AppConfig(), RatingInput(pid, rater, a_side, b_side, "tie"))
    row = db.execute(f"SELECT ordinary_{ID}, assisted_{ID} FROM ratings LIMIT 1").fetchone()
    assert row == ("pass", "fail")
    agg = aggregate(db)
    rates = agg.tables["pass_rates"].set_index(["prompt_id", "path", "criterion"])
    assert rates.loc[("all", "ordinary", ID), "pass_rate"] == 1.0 and rates.loc[("all", "assisted", ID), "pass_rate"] == 0.0
    diff = agg.tables["paired_differences"].set_index(["prompt_id", "criterion"])
    assert diff.loc[("all", ID), "difference"] == -1.0
    assert ID in set(agg.tables["non_inferiority"]["criterion"]) and ID in set(agg.tables["agreement"]["item"])
    screen = agg.tables["prescreen_agreement"].set_index("criterion")
    assert screen.loc[ID, "agreement"] == 1.0  # the rule fails the shouting outputs, as the raters do
    assert agg.verdict.decision == "DROP"
    fidelity = next(c for c in agg.verdict.conditions if c.name == "fidelity")
    assert TITLE["en"] in fidelity.reason and ID not in fidelity.reason

    from evalkit.publish.report import build_report

    html = build_report(db, tmp_path / "report", agg).read_text(encoding="utf-8")
    assert f"{TITLE['en']} · {TITLE['zh']}" in html and ID not in html

    # the Results tab, as an organiser opens it: its tables name the criterion by title
    from evalkit.config import Config
    from evalkit.rating import roster
    from evalkit.ui.results import build_results_tab
    from evalkit.ui.session import Session

    who = roster.add(db, "olga", organiser=True).identity
    with gr.Blocks() as demo:
        with gr.Tab("Results") as tab:
            build_results_tab(Config(), tmp_path / "a.db", tab, gr.State(None))
    show = next(f.fn for f in demo.fns.values() if f.api_name == "results")
    out = show(Session(rater=who.name, organiser=True, rater_id=who.rater_id, credential=who.credential))
    # (the reader's language is Chinese: each heading is the aggregate's name and its gloss, "criterion · 标准")
    frames = [v.set_axis([c.split(" · ")[0] for c in v.columns], axis=1) for v in out.values()
              if hasattr(v, "columns")]
    frames = [f for f in frames if "criterion" in f.columns]
    assert frames and all(ID not in set(f["criterion"]) for f in frames)
    assert any(f"{TITLE['en']} · {TITLE['zh']}" in set(f["criterion"]) for f in frames)
    assert not any(ID in str(v) for v in out.values())


def test_the_rate_tab_shows_the_fifth_by_title(fifth, tmp_path):
    from test_rate_handlers import REVEALING, Tab, neutral_pool, shown

    prompt = load_prompts()[0]
    for lang in ("zh", "en"):
        fl = labels(prompt, lang)
        assert fl["a_" + ID]["label"] == f"A · {QUESTION[lang]}" and fl["b_" + ID]["info"] == TITLE[lang]
        guide = guidelines(prompt, lang)
        assert f"**{TITLE[lang]}** — {QUESTION[lang]}" in guide and ID not in guide
        assert "四条" not in guide and "four" not in guide

    db = open_db(tmp_path / "r.db")
    neutral_pool(db, 2)
    db.conn.close()
    tab = Tab(tmp_path / "r.db", {p.id: p for p in load_prompts()})
    assert set(tab.ui.fields) == set(FORM_KEYS)  # the form has the fifth's two questions
    s, out = tab.sign_in("ann")
    assert ID not in shown(out, tab.ui) and TITLE["zh"] in str(out[tab.ui.fields["a_" + ID]])
    with pytest.raises(gr.Error) as e:  # an unanswered fifth question is named by its title
        tab.h.submit(s, *tab.form(**{"b_" + ID: None}))
    assert f"“{title(ID)}” has no valid answer" in e.value.message and ID not in e.value.message
    out = tab.h.submit(s, *tab.form(**{"a_" + ID: "fail"}))
    assert not REVEALING.search(out[tab.ui.status])
    db = open_db(tmp_path / "r.db")
    assert db.execute(f"SELECT a_{ID}, b_{ID} FROM ratings").fetchone() == ("fail", "fail")
