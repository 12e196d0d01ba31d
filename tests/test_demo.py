"""The offline demo pair: built from nothing, shared tokenizer, atomic and cached builds.

Uses the reduced `scale="smoke"` recipe (a few seconds of training); the full pair is measured by hand.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from evalkit import demo
from evalkit.demo import corpus, tokenizer, train
from evalkit.config import load_config
from evalkit.task.prompts import PLAIN_TEMPLATE, load_prompts


ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def smoke_pair(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "pair"
    demo.build_demo_pair(out, scale="smoke", progress=False)
    return out


def test_corpus_is_deterministic_and_framed():
    a = corpus.generate_corpus(3, 200)
    b = corpus.generate_corpus(3, 200)
    assert [s.text for s in a] == [s.text for s in b]
    assert [s.text for s in a] != [s.text for s in corpus.generate_corpus(4, 200)]
    for s in a:
        assert s.text.startswith("资料：") and s.text.endswith(corpus.EOS)
        assert "\n任务：" in s.prompt_text and s.prompt_text.endswith("\n输出：\n")
    # every bundled prompt's exact frame is in the corpus, with more than one distinct answer
    texts = corpus.generate_corpus(0, 1000)
    for p in load_prompts():
        outputs = {s.output for s in texts if s.prompt_text == p.plain_text()}
        assert len(outputs) > 3, p.id
    # varied material too, and some bundled answers break a fidelity criterion on purpose
    assert any(not s.bundled for s in texts)
    slips = [s for s in texts if s.bundled and s.slip]
    assert 0.05 < len(slips) / sum(s.bundled for s in texts) < 0.2


def test_corpus_template_matches_prompts_module():
    m = corpus.bundled_material()
    p = load_prompts()[0]
    assert m.text == p.material
    assert PLAIN_TEMPLATE.format(material=p.material, task=p.task) == p.plain_text()


@pytest.mark.slow
def test_smoke_pair_loads_and_shares_tokenizer(smoke_pair):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    manifest = json.loads((smoke_pair / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["build_version"] == demo.BUILD_VERSION and manifest["scale"] == "smoke"
    assert demo.is_complete(smoke_pair, "smoke") and not demo.is_complete(smoke_pair, "full")
    # nothing half-written left beside the build
    assert sorted(p.name for p in smoke_pair.parent.iterdir()) == ["pair"]

    tt = AutoTokenizer.from_pretrained(smoke_pair / "target")
    dt = AutoTokenizer.from_pretrained(smoke_pair / "draft")
    assert tt.get_vocab() == dt.get_vocab()
    for name in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
        assert getattr(tt, name) == getattr(dt, name) is not None
    assert (tt.bos_token, tt.eos_token, tt.pad_token, tt.unk_token) == ("<s>", "</s>", "<pad>", "<unk>")
    assert not getattr(tt, "chat_template", None)
    # byte-level: any text round-trips, including characters the corpus never had
    text = "资料：周三晚间维护 — naïve 😀 Ünïcode 𠀀"
    assert tt.decode(tt(text, add_special_tokens=False)["input_ids"]) == text

    target = AutoModelForCausalLM.from_pretrained(smoke_pair / "target").eval()
    draft = AutoModelForCausalLM.from_pretrained(smoke_pair / "draft").eval()
    assert target.config.vocab_size == draft.config.vocab_size == len(tt)
    assert sum(p.numel() for p in draft.parameters()) < sum(p.numel() for p in target.parameters())
    for m in (target, draft):
        gc = m.generation_config
        assert (gc.eos_token_id, gc.bos_token_id, gc.pad_token_id) == (tt.eos_token_id, tt.bos_token_id, tt.pad_token_id)
        assert gc.do_sample is True and gc.temperature == pytest.approx(0.7)
    # the draft ships the demo config's tuned assistant settings (one setting, two places, kept in step)
    shipped = load_config(ROOT / "configs" / "demo.toml").assistant
    assert draft.generation_config.num_assistant_tokens == shipped.num_assistant_tokens
    assert draft.generation_config.num_assistant_tokens_schedule == shipped.num_assistant_tokens_schedule
    assert draft.generation_config.assistant_confidence_threshold == pytest.approx(shipped.assistant_confidence_threshold)


@pytest.mark.slow
def test_distillation_moves_the_draft_towards_the_target(smoke_pair):
    """The draft's last stage learns the target's next-token distributions: its KL to the target falls."""
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoTokenizer

    recipe = demo.SCALES["smoke"]
    tok = AutoTokenizer.from_pretrained(smoke_pair / "target").backend_tokenizer  # the pair's own tokenizer
    examples = tokenizer.encode_samples(tok, corpus.generate_corpus(recipe["corpus_seed"], 40))
    target = AutoModelForCausalLM.from_pretrained(smoke_pair / "target").eval()
    draft = train.make_model(recipe["draft"], target.config.vocab_size, seed=5)
    ids, att, labels = train._collate(examples, list(range(8)))
    keep = labels[:, 1:] != -100

    def kl() -> float:
        with torch.no_grad():
            t = F.log_softmax(target(input_ids=ids, attention_mask=att).logits[:, :-1][keep], -1)
            d = F.log_softmax(draft(input_ids=ids, attention_mask=att).logits[:, :-1][keep], -1)
        return F.kl_div(d, t, log_target=True, reduction="batchmean").item()

    before = kl()
    train.train_model(draft, examples, steps=30, batch_tokens=512, lr=3e-3, warmup=2, seed=5, desc="kd",
                      progress=False, teacher=target)
    assert kl() < 0.5 * before


@pytest.mark.slow
def test_smoke_pair_greedy_assisted_equals_ordinary(smoke_pair):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smoke_pair / "target")
    target = AutoModelForCausalLM.from_pretrained(smoke_pair / "target", dtype=torch.float32).eval()
    draft = AutoModelForCausalLM.from_pretrained(smoke_pair / "draft", dtype=torch.float32).eval()
    prompt = load_prompts()[0]
    inputs = tok(prompt.plain_text(), return_tensors="pt")
    assert inputs["input_ids"][0, 0].item() == tok.bos_token_id
    with torch.no_grad():
        plain = target.generate(**inputs, do_sample=False, max_new_tokens=24)
        assisted = target.generate(**inputs, do_sample=False, max_new_tokens=24, assistant_model=draft)
    assert plain.shape == assisted.shape
    assert torch.equal(plain, assisted)


@pytest.mark.slow
def test_ensure_is_cached_and_rebuilds_interrupted(tmp_path, capfd):
    out = tmp_path / "pair"
    assert demo.ensure_demo_pair(out, progress=False, scale="smoke") == out
    captured = capfd.readouterr()
    assert "train target" not in captured.err + captured.out  # progress=False: no bars
    manifest = out / "manifest.json"
    first = manifest.stat().st_mtime_ns
    weights = (out / "target" / "model.safetensors").read_bytes()

    # second call: complete build found, nothing rebuilt
    demo.ensure_demo_pair(out, progress=False, scale="smoke")
    assert manifest.stat().st_mtime_ns == first

    # an interrupted build (no manifest) is rebuilt, deterministically
    manifest.unlink()
    assert not demo.is_complete(out, "smoke")
    demo.ensure_demo_pair(out, progress=False, scale="smoke")
    assert manifest.is_file() and demo.is_complete(out, "smoke")
    assert (out / "target" / "model.safetensors").read_bytes() == weights

    # a stale build (other version) is rebuilt too
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["build_version"] = "old"
    manifest.write_text(json.dumps(data), encoding="utf-8")
    demo.ensure_demo_pair(out, progress=False, scale="smoke")
    assert json.loads(manifest.read_text(encoding="utf-8"))["build_version"] == demo.BUILD_VERSION
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pair"]


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(train, "train_model", boom)
    with pytest.raises(RuntimeError):
        demo.build_demo_pair(tmp_path / "pair", scale="smoke", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_not_a_demo_build_is_never_replaced(tmp_path, monkeypatch):
    """Audit, 2026-12-02: `evalkit demo-models --out victim` replaced the folder as a whole, deleting the thesis.tex
    and mystuff/ in it; EVALKIT_DEMO_MODELS naming a file renamed the file aside and put a folder in its place. Both
    are refused before any training, with nothing touched."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.errors import EvalkitError

    def never(*a, **k):
        raise AssertionError("no training for a refused folder")

    monkeypatch.setattr(train, "train_model", never)
    victim = tmp_path / "victim"
    (victim / "mystuff").mkdir(parents=True)
    (victim / "thesis.tex").write_text("precious")
    r = CliRunner().invoke(cli, ["demo-models", "--scale", "smoke", "--out", str(victim)])
    assert r.exit_code != 0 and "holds files that are not a demo build (mystuff, thesis.tex)" in r.output
    assert "--out (or EVALKIT_DEMO_MODELS)" in r.output
    assert (victim / "thesis.tex").read_text() == "precious" and (victim / "mystuff").is_dir()
    config = tmp_path / "base.toml"
    config.write_text("[models]\n")
    with pytest.raises(EvalkitError, match="a file, not a folder"):
        demo.ensure_demo_pair(config, progress=False, scale="smoke")
    assert config.read_text() == "[models]\n" and sorted(p.name for p in tmp_path.iterdir()) == ["base.toml", "victim"]


def test_unknown_scale_is_a_clear_error(tmp_path):
    from evalkit.errors import EvalkitError

    with pytest.raises(EvalkitError, match="scale"):
        demo.build_demo_pair(tmp_path / "x", scale="huge", progress=False)


def test_no_heavy_imports_at_module_top():
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(demo))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name.split(".")[0] for n in top for a in n.names} | {
        (n.module or "").split(".")[0] for n in top if isinstance(n, ast.ImportFrom)
    }
    assert not names & {"torch", "transformers", "tokenizers"}


@pytest.mark.slow
def test_smoke_pair_through_both_paths_and_the_bench(smoke_pair, make_config):
    """End to end on the reduced pair: the real CLI, each path in its own process, ABBA, the summary."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    cfg = make_config(**{"models.target": str(smoke_pair / "target"), "models.draft": str(smoke_pair / "draft"),
                         "bench.prompts": ["writing-02"]})
    for path in ("ordinary", "assisted"):
        r = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--prompt", "writing-02", "--path", path, "--json"])
        assert r.exit_code == 0, r.output
        (rec,) = json.loads(r.stdout)
        assert rec["status"] == "ok" and rec["path"] == path and rec["new_tokens"] > 0
    r = CliRunner().invoke(cli, ["bench", "--config", str(cfg), "--reps", "1", "--decoding", "greedy", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)["summary"]
    assert s["identical_outputs"] == 1.0 and s["matched_pairs"] == 2 and s["counts_agree"] is True
    assert s["cost_ratio"] is not None and s["alpha"] is not None


@pytest.mark.slow
def test_demo_refs_resolve_to_the_cached_build(smoke_pair, monkeypatch):
    """`demo:target` / `demo:draft` in a config point at the cached pair (built on first use)."""
    from evalkit.generation import models

    calls = []
    monkeypatch.setattr(demo, "ensure_demo_pair", lambda out, progress=True: calls.append(out) or smoke_pair)
    assert models.resolve_ref("demo:target") == str(smoke_pair / "target")
    assert models.resolve_ref("demo:draft") == str(smoke_pair / "draft")
    assert len(calls) == 2
    with pytest.raises(Exception, match="unknown demo model"):
        models.resolve_ref("demo:judge")


def _weights(pair: Path) -> dict:
    from safetensors.torch import load_file

    return {role: load_file(pair / role / "model.safetensors") for role in ("target", "draft")}


def _same_weights(a: Path, b: Path) -> bool:
    import torch

    wa, wb = _weights(a), _weights(b)
    return all(wa[r].keys() == wb[r].keys() and all(torch.equal(wa[r][k], wb[r][k]) for k in wa[r]) for r in wa)


def _stopped_at(monkeypatch, batch: int, stop) -> None:
    """`stop()` as the training takes its `batch`-th batch (counted over all stages), once."""
    taken, collate = [], train._collate

    def counting(examples, idx):
        taken.append(1)
        if len(taken) == batch:
            stop()
        return collate(examples, idx)

    monkeypatch.setattr(train, "_collate", counting)


def _ctrl_c() -> None:
    signal.raise_signal(signal.SIGINT)  # as a terminal sends it: the step under way ends, then the build stops


@pytest.mark.slow
@pytest.mark.parametrize("batch, stage, step", [(4, "train target", 4), (7, "train target (2 layers)", 1),
                                                (11, "train draft", 3), (16, "distil draft on target", 2)])
def test_ctrl_c_while_the_pair_trains_resumes_from_its_checkpoint_to_the_uninterrupted_weights(
        smoke_pair, tmp_path, monkeypatch, capsys, batch, stage, step):
    """Demo audit, 2026-12-06: Ctrl-C while the demo pair trained (the first start's longest step, minutes on 2
    cores) lost it all: the next start trained from zero. The stop now saves a checkpoint beside the build's folder
    (after the step under way) and the next build resumes from it, its bar starting at the saved step and saying so;
    the pair it gives is the one an uninterrupted build gives, and the finished build removes the checkpoint."""
    out = tmp_path / "pair"
    saved = demo.checkpoint.path_for(out)
    # CI runs with SIGINT ignored (a background shell): Python's own Ctrl-C handling, as in a terminal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with monkeypatch.context() as m:
            _stopped_at(m, batch, _ctrl_c)
            with pytest.raises(KeyboardInterrupt):
                demo.build_demo_pair(out, scale="smoke", progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert saved.is_file() and not out.exists()
    assert f"demo pair: {stage}: stopped after step {step} of " in capsys.readouterr().err
    demo.build_demo_pair(out, scale="smoke", progress=True)
    err = capsys.readouterr().err
    assert f"demo pair: {stage}: resumed at step {step} of " in err, err
    assert f"{stage}, resumed at step {step}:" in err, err  # the bar, from the saved step
    assert _same_weights(out, smoke_pair)
    assert not saved.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["pair"]


@pytest.mark.slow
def test_a_killed_training_resumes_from_its_last_interval_checkpoint(smoke_pair, tmp_path, monkeypatch, capsys):
    """A kill (no Ctrl-C to save at) loses only the training since the last interval's checkpoint: here one is
    saved after every step, and the build fails inside the draft's 4th step."""
    out = tmp_path / "pair"
    monkeypatch.setattr(demo.checkpoint, "SAVE_EVERY_SECONDS", 0.0)
    with monkeypatch.context() as m:
        _stopped_at(m, 12, lambda: (_ for _ in ()).throw(MemoryError("killed")))
        with pytest.raises(MemoryError):
            demo.build_demo_pair(out, scale="smoke", progress=False)
    demo.build_demo_pair(out, scale="smoke", progress=False)
    assert "train draft: resumed at step 3 of 6" in capsys.readouterr().err
    assert _same_weights(out, smoke_pair)


@pytest.mark.slow
def test_a_checkpoint_from_other_settings_or_cut_short_is_ignored_with_a_line(smoke_pair, tmp_path, monkeypatch,
                                                                             capsys):
    """A checkpoint made by another evalkit version, with another recipe (sizes, seeds), or cut short (a full disk)
    is never half-used: the build says so and trains from the start, to the uninterrupted weights."""
    import evalkit

    out = tmp_path / "pair"
    saved = demo.checkpoint.path_for(out)
    with monkeypatch.context() as m:
        m.setattr(demo.checkpoint, "SAVE_EVERY_SECONDS", 0.0)
        _stopped_at(m, 11, lambda: (_ for _ in ()).throw(MemoryError("killed")))
        with pytest.raises(MemoryError):
            demo.build_demo_pair(out, scale="smoke", progress=False)
    good = saved.read_bytes()
    capsys.readouterr()

    def rebuilt_from_the_start() -> str:
        saved.write_bytes(kept)
        demo.build_demo_pair(out, force=True, scale="smoke", progress=False)
        err = capsys.readouterr().err
        assert "resumed" not in err and not saved.exists() and _same_weights(out, smoke_pair), err
        return err

    kept = good
    with monkeypatch.context() as m:
        m.setattr(evalkit, "__version__", "0.0.0-other")
        assert f"the training checkpoint {saved} was made with another evalkit version; it is ignored" in (
            rebuilt_from_the_start())
    kept = good[: len(good) // 2]
    err = rebuilt_from_the_start()
    assert f"the training checkpoint {saved} cannot be read (" in err and "it is ignored and the training starts " \
        "from the beginning" in err, err
    # another recipe: the other build trains other weights, so the one compared is its own uninterrupted build
    kept = good
    other = {**demo.SCALES["smoke"], "init_seed": 99}
    monkeypatch.setitem(demo.SCALES, "smoke", other)
    saved.write_bytes(kept)
    demo.build_demo_pair(out, force=True, scale="smoke", progress=False)
    assert "was made with another recipe (sizes, seeds, steps); it is ignored" in capsys.readouterr().err
    demo.build_demo_pair(tmp_path / "fresh", scale="smoke", progress=False)
    assert _same_weights(out, tmp_path / "fresh")


@pytest.mark.slow
def test_sigterm_while_the_pair_trains_saves_the_step_and_the_next_build_resumes(smoke_pair, tmp_path, capsys):
    """The app stops its preparation with SIGTERM (after a Ctrl-C in its terminal, or when it is stopped itself),
    whose default ends the process at once: the checkpoint is saved after the step under way, then the process ends
    (status 143). In a process of its own, as `evalkit prepare` runs."""
    import subprocess
    import sys

    out = tmp_path / "pair"
    script = f"""
import os, signal
from pathlib import Path
from evalkit import demo
from evalkit.demo import train
taken, collate = [], train._collate
def counting(examples, idx):
    taken.append(1)
    if len(taken) == 10:
        os.kill(os.getpid(), signal.SIGTERM)
    return collate(examples, idx)
train._collate = counting
demo.build_demo_pair(Path({str(out)!r}), scale="smoke", progress=False)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert r.returncode == 143, r.stderr
    assert "demo pair: train draft: stopped after step 2 of 6" in r.stderr, r.stderr
    demo.build_demo_pair(out, scale="smoke", progress=False)
    assert "train draft: resumed at step 2 of 6" in capsys.readouterr().err
    assert _same_weights(out, smoke_pair) and not demo.checkpoint.path_for(out).exists()
