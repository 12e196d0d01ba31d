"""Every fallback count comes with its cause (audit of the bring-your-own-pair path, 2026-12-04, F6).

The draft here is a real recurrent model (Mamba) sharing the target's tokenizer: `evalkit check` approves it, and
every assisted call fails inside Transformers, whose candidate generator cannot crop a recurrent cache. bench, tune
and generate printed only how many runs fell back, and aggregate said "no benchmark yet" beside a benchmark whose
assisted runs had all fallen back."""

import re
import sqlite3

import pytest
from click.testing import CliRunner

from evalkit.cli import cli


@pytest.fixture(scope="module")
def mamba_draft(tiny_models, tmp_path_factory):
    import torch
    from transformers import AutoTokenizer, GenerationConfig, MambaConfig, MambaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_models["target"])
    torch.manual_seed(3)
    model = MambaForCausalLM(MambaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, state_size=4,
                                         expand=2, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                         pad_token_id=tok.pad_token_id))
    model.generation_config = GenerationConfig.from_pretrained(tiny_models["target"])
    folder = tmp_path_factory.mktemp("mamba") / "draft"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _cause(db) -> tuple[str, str]:
    con = sqlite3.connect(str(db))
    try:
        return con.execute("SELECT f.error_class, f.error_message FROM generations g JOIN generations f "
                           "ON f.id = g.fallback_of WHERE g.path = 'fallback' LIMIT 1").fetchone()
    finally:
        con.close()


def test_bench_tune_generate_and_aggregate_give_the_cause_of_their_fallbacks(make_config, mamba_draft, tmp_path):
    cfg = make_config(**{"models.draft": str(mamba_draft), "bench.prompts": ["writing-01"],
                         "pool.prompts": ["writing-01"], "bench.reps": 1})
    db = tmp_path / "fb.db"
    run = CliRunner()

    def invoke(*args):
        with_config = [] if args[0] == "aggregate" else ["--config", str(cfg)]  # aggregate reads the stored configs
        r = run.invoke(cli, [*args, *with_config, "--db", str(db)], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        return r.output

    bench = invoke("bench")
    error_class, message = _cause(db)
    assert error_class and message  # the failure is stored, as before
    first_line = message.splitlines()[0][:60]
    line = next(ln for ln in bench.splitlines() if "failed and fell back" in ln)
    assert f"cause (every one): {error_class} at stage generate: {first_line}" in line, line

    tune = invoke("tune", "--tokens", "4", "--schedules", "constant", "--thresholds", "0", "--reps", "1")
    line = next(ln for ln in tune.splitlines() if "fell back to the target alone" in ln)
    assert f"cause (every one): {error_class}" in line and first_line in line, line

    generate = invoke("generate", "--samples", "1")
    line = next(ln for ln in generate.splitlines() if "sample(s) failed and fell back" in ln)
    assert f"cause (every one): {error_class}" in line and first_line in line, line

    aggregate = invoke("aggregate")
    assert "no benchmark yet" not in aggregate
    note = next(ln for ln in aggregate.splitlines() if ln.startswith("note: extra memory of the draft"))
    assert re.search(r"benchmark 1's assisted path never ran \(all \d+ of its assisted runs fell back", note), note
    assert first_line in note, note
    memory = next(ln for ln in aggregate.splitlines() if "] memory:" in ln)
    assert "assisted path never ran" in memory and first_line in memory, memory
    # the Results tab's Chinese verdict is written from the same figures: it names the benchmark too
    from evalkit.aggregate import aggregate as aggregate_of
    from evalkit.store import open_db
    from evalkit.ui.verdictzh import verdict_zh

    store = open_db(db, migrate_schema=False)
    try:
        agg = aggregate_of(store)
    finally:
        store.close()
    assert any(n.startswith("extra memory of the draft not measured: benchmark 1's") for n in agg.notes), agg.notes
    line = next(ln for ln in verdict_zh(agg) if "额外内存" in ln)
    assert "基准测试 1 的 assisted 路径从未运行" in line, line


def test_the_cause_line_counts_the_causes_and_keeps_a_long_message_short():
    from evalkit.generation.fallbacks import MESSAGE_CHARS, FallbackCause, cause_text

    long = "x" * (MESSAGE_CHARS + 50)
    text = cause_text([FallbackCause("RuntimeError", "generate", long + "\nTraceback line two", 3),
                       FallbackCause("ValueError", "prepare", "other", 1)])
    assert text.startswith("cause (3 of 4): RuntimeError at stage generate: " + "x" * (MESSAGE_CHARS - 1) + "…")
    assert "Traceback line two" not in text and text.endswith("; 1 other cause(s) (generations.error_message)")
    assert cause_text([FallbackCause("", "", "out of memory", 2)]) == "cause (every one): error: out of memory"
    assert cause_text([]) == ""


def test_a_frozen_decision_quoting_a_fallback_cause_is_exported_without_the_home_folder(rated_db):
    """The cause of a benchmark's fallbacks reaches a frozen decision (its memory condition and speed figure); a load
    failure's message names the draft's folder, which an export must not publish (as generations.error_message)."""
    import json

    from evalkit.aggregate import aggregate
    from evalkit.publish.export import tables

    aggregate(rated_db)  # the fixture's study is complete: this freezes its decision
    cause = "cause (every one): OSError at stage load: /home/alice/models/draft/model.safetensors is missing"
    verdict, speed = rated_db.execute("SELECT verdict_json, speed_json FROM decisions").fetchone()
    verdict = json.loads(verdict)
    verdict["conditions"][-1]["reason"] = f"extra memory of the draft not measured: ...; {cause})"
    speed = json.loads(speed) | {"fallback_cause": cause}
    with rated_db.conn:  # as if frozen so: the trigger that keeps a decision unchanged is lifted for the test only
        rated_db.conn.execute("DROP TRIGGER decisions_never_change")
        rated_db.conn.execute("UPDATE decisions SET verdict_json = ?, speed_json = ?",
                              [json.dumps(verdict), json.dumps(speed)])
    row = tables(rated_db)["decisions"][0]
    for col in ("verdict_json", "speed_json"):
        assert "/home/alice" not in row[col] and "~/models/draft/model.safetensors" in row[col], row[col]
        json.loads(row[col])
