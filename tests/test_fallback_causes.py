"""Every fallback count comes with its cause (audit of the bring-your-own-pair path, 2026-12-04, F6).

The draft here is a real recurrent model (Mamba) sharing the target's tokenizer: `evalkit check` approves it, and
every assisted call fails inside Transformers, whose candidate generator cannot crop a recurrent cache. bench, tune
and generate printed only how many runs fell back, and aggregate said "no benchmark yet" beside a benchmark whose
assisted runs had all fallen back."""

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
    assert "assisted path never ran" in aggregate and first_line in aggregate, aggregate
    assert "memory: extra memory of the draft not measured (run" not in aggregate
