"""The pairs people bring, on stand-ins built in tests/tiny.py: a Qwen2.5-like chat pair (ChatML template,
<|im_end|> ends the turn), a padded-vocab target (as Qwen2.5-7B), a draft from another family (Universal
Assisted Generation), and half precision on the CPU. Each test checks what evalkit says against what
Transformers 5 itself does."""

import json

import pytest
import torch
from click.testing import CliRunner
from familyfixtures import families, family_config  # noqa: F401

from evalkit.generation.bench import BenchSummary, format_summary
from evalkit.cli import cli
from evalkit.generation.compat import compatibility_record
from evalkit.config import load_config
from evalkit.errors import EvalkitError
from evalkit.generation.models import check_compat, load_pair
from evalkit.study.pairs import build_pool
from evalkit.generation.paths import available_paths, build_inputs, run_assisted, run_ordinary
from evalkit.task.prompts import load_prompts
from evalkit.store import open_db

# model families built and run here
pytestmark = pytest.mark.slow

PROMPTS = load_prompts()


def check(config) -> tuple[int, dict | str]:
    r = CliRunner().invoke(cli, ["check", "--config", str(config), "--json"])
    return r.exit_code, (json.loads(r.stdout) if r.exit_code in (0, 2) else r.output)


def im_end(pair) -> int:
    return pair.tokenizer.convert_tokens_to_ids("<|im_end|>")


# ---------------------------------------------------------------- 1. a chat pair like Qwen2.5


def test_chat_pair_check_says_same_tokenizer_and_chat(families, tmp_path):
    code, rec = check(family_config(tmp_path / "c.toml", families))
    assert code == 0 and rec["verdict"] == "same_tokenizer" and rec["token_space"] == "shared"
    assert rec["prompt_format"] == "chat" and rec["candidate_generator"] == "AssistedCandidateGenerator"
    t, d = rec["target"], rec["draft"]
    assert t["vocab_size"] == d["vocab_size"] > t["tokenizer"]["vocab_len"]  # padded alike, as Qwen2.5 1.5B/0.5B
    assert t["tokenizer"]["chat_template_hash"] == d["tokenizer"]["chat_template_hash"] is not None
    assert t["tokenizer"]["special_ids"]["eos"] is not None and t["tokenizer"]["special_ids"]["bos"] is None


def test_chat_pair_greedy_float32_identical_framed_alike_and_stops_on_end_of_turn(families, tmp_path):
    pair = load_pair(load_config(family_config(tmp_path / "c.toml", families)), progress=False)
    eot = im_end(pair)
    # the checkpoint's generation_config ends on <|im_end|> or <|endoftext|>, and asks for sampling: evalkit's
    # greedy setting must win, the end tokens must stay
    assert eot in pair.target.generation_config.eos_token_id and pair.target.generation_config.do_sample
    for prompt in PROMPTS:
        framed = pair.tokenizer.decode(build_inputs(pair, prompt)["input_ids"][0])
        assert framed.startswith("<|im_start|>system\n") and framed.endswith("<|im_start|>assistant\n")
        assert f"<|im_start|>user\n{prompt.user_message()}<|im_end|>" in framed
        o = run_ordinary(pair, prompt, 5)
        (a,) = run_assisted(pair, prompt, 5)
        assert a.path == "assisted" and a.token_ids == o.token_ids, prompt.id
        for r in (o, a):
            assert r.stop_reason == "eos" and r.token_ids[-1] == eot and r.new_tokens < 64, prompt.id
            assert "<|im_end|>" not in r.text and r.text.strip()
            assert r.effective_config["prompt_format"] == "chat"
            assert r.effective_config["generate_kwargs"]["do_sample"] is False
            assert r.effective_config["target_generation_config"]["repetition_penalty"] == 1.05  # recorded
        assert o.effective_config["prompt_hash"] == a.effective_config["prompt_hash"]
        assert o.prompt_tokens == a.prompt_tokens
        assert a.candidate_generator == "AssistedCandidateGenerator" and a.counts_agree
        assert a.draft_tokens == a.draft_proposed > 0  # one vocabulary: the draft's own count agrees


# ---------------------------------------------------------------- 2. a padded target vocabulary


def _direct(pair, prompt, **kw):
    """Transformers' generate() called directly on the pair, without evalkit."""
    enc = build_inputs(pair, prompt)
    with torch.inference_mode():
        return pair.target.generate(**enc, assistant_model=pair.draft, max_new_tokens=8,
                                    pad_token_id=pair.tokenizer.pad_token_id, **kw)


def test_padded_target_check_and_runs_agree_with_transformers(families, tmp_path):
    code, rec = check(family_config(tmp_path / "g.toml", families, "padded_target"))
    assert code == 0 and rec["verdict"] == "different_tokenizer" and rec["token_space"] == "target"
    assert rec["target"]["tokenizer"]["vocab_hash"] == rec["draft"]["tokenizer"]["vocab_hash"]
    assert rec["target"]["vocab_size"] == rec["draft"]["vocab_size"] + 64
    assert any("pad the vocabulary differently" in r for r in rec["reasons"])
    assert rec["candidate_generator"] == "AssistedCandidateGeneratorDifferentTokenizers"

    pair = load_pair(load_config(family_config(tmp_path / "g.toml", families, "padded_target")), progress=False)
    # Transformers agrees that this is not one token space: assistant_model= alone is refused
    with pytest.raises(ValueError, match="different tokenizers"):
        _direct(pair, PROMPTS[0], do_sample=False)
    for prompt in PROMPTS[1:3]:
        o = run_ordinary(pair, prompt, 1)
        (a,) = run_assisted(pair, prompt, 1)
        assert a.path == "assisted" and a.candidate_generator == rec["candidate_generator"]
        assert a.token_ids == o.token_ids, prompt.id  # greedy, the target verifies every token
        assert max(o.token_ids) < len(pair.tokenizer)  # the padding rows are never generated
        assert a.counts_agree and a.draft_tokens > 0


def test_padded_target_with_sampling_evalkit_and_transformers_agree(families, tmp_path):
    cfg = load_config(family_config(tmp_path / "s.toml", families, "padded_target", decoding={"mode": "sample"}))
    code, rec = check(cfg.source)
    # what Transformers does with this pair when sampling, called directly (greedy config: the draft is loaded)
    pair = load_pair(load_config(family_config(tmp_path / "g.toml", families, "padded_target")), progress=False)
    try:
        _direct(pair, PROMPTS[0], do_sample=True, tokenizer=pair.tokenizer, assistant_tokenizer=pair.draft_tokenizer)
        raised = None
    except Exception as e:  # noqa: BLE001
        raised = type(e).__name__
    if raised:  # Transformers 5.24: AttributeError in AssistantToTargetTranslator.get_target_ids
        assert code == 2 and rec["verdict"] == "not_approved"
        assert any(raised in r and "greedy" in r and "resize_token_embeddings" in r for r in rec["reasons"])
        sampled = load_pair(cfg, progress=False)
        assert sampled.draft is None and available_paths(sampled) == ["ordinary"]
    else:
        assert code == 0 and rec["candidate_generator"] == "UniversalSpeculativeDecodingGenerator"


def test_padding_the_draft_to_the_targets_vocab_gives_one_token_space(families, tmp_path):
    config = family_config(tmp_path / "p.toml", families, "padded_target", "padded_draft")
    code, rec = check(config)
    assert code == 0 and rec["verdict"] == "same_tokenizer"
    pair = load_pair(load_config(config), progress=False)
    for prompt in PROMPTS[:2]:
        (a,) = run_assisted(pair, prompt, 1)
        assert a.candidate_generator == "AssistedCandidateGenerator"
        assert a.token_ids == run_ordinary(pair, prompt, 1).token_ids


def test_different_tokenizers_with_equal_vocab_size_are_refused_as_transformers_refuses(families):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t_tok = AutoTokenizer.from_pretrained(families["chat_target"])
    d_tok = AutoTokenizer.from_pretrained(families["other_family_draft"])
    rec = compatibility_record(target_tok=t_tok, draft_tok=d_tok, target_vocab_size=704, draft_vocab_size=704,
                               target_folder=str(families["chat_target"]), draft_folder=str(families["other_family_draft"]),
                               device="cpu", dtype="float32", quantization="none", allow_different_tokenizer=True,
                               draft_wanted=True)
    assert rec.verdict == "not_approved" and any("refuses assistant_tokenizer" in r for r in rec.reasons)
    target = AutoModelForCausalLM.from_pretrained(families["chat_target"])
    draft = AutoModelForCausalLM.from_pretrained(families["other_family_draft"])
    draft.resize_token_embeddings(target.config.vocab_size, mean_resizing=False)
    enc = t_tok("资料库", return_tensors="pt")
    with pytest.raises(ValueError, match="assistant_tokenizer` is not required"):
        target.generate(**enc, assistant_model=draft, tokenizer=t_tok, assistant_tokenizer=d_tok, max_new_tokens=4)


# ---------------------------------------------------------------- 3. different tokenizers


def test_different_tokenizers_without_the_switch_run_ordinary_only(families, tmp_path):
    config = family_config(tmp_path / "o.toml", families, draft="other_family_draft")
    code, rec = check(config)
    assert code == 2 and rec["verdict"] == "not_approved"
    assert any("allow_different_tokenizer = true" in r for r in rec["reasons"])
    pair = load_pair(load_config(config), progress=False)
    assert pair.draft is None and available_paths(pair) == ["ordinary"]
    with pytest.raises(EvalkitError, match="not approved"):
        run_assisted(pair, PROMPTS[0], 1)


def test_a_transformers_that_rolls_the_draft_s_cache_back_wrongly_is_refused_before_any_run(families, tmp_path,
                                                                                            monkeypatch):
    """Transformers 5.25 broke assisted generation with two tokenizers (every run fell back, measured: CI installed
    it on 2026-12-03). evalkit requires transformers<5.25, and `evalkit check` refuses that route on 5.25 or later
    (a Transformers installed against the requirement); one tokenizer padded apart is not affected."""
    import transformers

    config = family_config(tmp_path / "u.toml", families, draft="other_family_draft",
                           assistant={"allow_different_tokenizer": True})
    padded = family_config(tmp_path / "p.toml", families, target="padded_target", draft="chat_draft")
    assert check(config)[1]["verdict"] == "different_tokenizer" and check(padded)[1]["verdict"] == "different_tokenizer"
    for version in ("5.25.0", "5.26.0.dev0", "6.0.0"):
        monkeypatch.setattr(transformers, "__version__", version)
        code, rec = check(config)
        assert code == 2 and rec["verdict"] == "not_approved" and rec["versions"]["transformers"] == version
        assert any(f"Transformers {version} rolls the draft's cache back" in r and "transformers<5.25" in r
                   for r in rec["reasons"]), rec["reasons"]
        assert check(padded)[1]["verdict"] == "different_tokenizer"  # one tokenizer: counted alike, runs
    monkeypatch.setattr(transformers, "__version__", "5.24.9")
    assert check(config)[1]["verdict"] == "different_tokenizer"


def test_universal_assisted_generation_records_and_greedy_identity(families, tmp_path):
    config = family_config(tmp_path / "u.toml", families, draft="other_family_draft",
                           assistant={"allow_different_tokenizer": True})
    code, rec = check(config)
    assert code == 0 and rec["verdict"] == "different_tokenizer" and rec["token_space"] == "target"
    assert any("never through its own chat template" in r for r in rec["reasons"])
    pair = load_pair(load_config(config), progress=False)
    assert len(pair.draft_tokenizer) != len(pair.tokenizer)
    for prompt in PROMPTS[:3]:
        o = run_ordinary(pair, prompt, 1)
        (a,) = run_assisted(pair, prompt, 1)
        assert a.candidate_generator == "AssistedCandidateGeneratorDifferentTokenizers"
        # counts in the target's tokens: every round verified once, every accepted token plus one per round
        assert a.counts_agree and a.draft_rounds == a.target_passes
        assert a.draft_accepted + a.draft_rounds == a.new_tokens and 0 <= a.draft_accepted <= a.draft_proposed
        assert a.draft_tokens > 0  # the draft's own count, in its own vocabulary
        assert a.token_ids == o.token_ids, prompt.id  # greedy: the target verifies every token


def test_universal_sampling_prunes_the_draft_s_head_in_id_order_in_every_process(families, tmp_path):
    """Transformers prunes the draft's LM head to the shared tokens in the order a fast tokenizer's get_vocab() lists
    them, a Rust hash map's order that changes with every process: one seed drew other text in each (and once
    Transformers' failure). evalkit builds that translator with both vocabularies in id order (translator.py)."""
    from transformers.generation.candidate_generator import AssistantVocabTranslatorCache

    cfg = load_config(family_config(tmp_path / "u.toml", families, draft="other_family_draft",
                                    assistant={"allow_different_tokenizer": True},
                                    decoding={"mode": "sample", "top_p": 0.8, "max_new_tokens": 8}))
    pair = load_pair(cfg, progress=False)
    head = pair.draft.get_output_embeddings().weight.detach().clone()
    (a,) = run_assisted(pair, PROMPTS[1], 3)
    assert a.candidate_generator == "UniversalSpeculativeDecodingGenerator" and a.draft_tokens > 0
    translator = AssistantVocabTranslatorCache._cache[pair.tokenizer][pair.draft_tokenizer]
    ids = translator.assistant_overlap_token_ids.tolist()
    t_vocab, d_vocab = pair.tokenizer.get_vocab(), pair.draft_tokenizer.get_vocab()
    assert 0 < len(ids) < len(d_vocab) and ids == sorted(ids)  # id order, not the hash map's
    assert len({d for tok, d in d_vocab.items() if tok in t_vocab}) <= len(ids)  # every shared token kept
    pruned = pair.draft.get_output_embeddings().pruned_lm_head.weight
    assert torch.equal(pruned, head[ids])  # row k is the draft's token ids[k]
    (again,) = run_assisted(pair, PROMPTS[1], 3)
    assert again.token_ids == a.token_ids  # built once: the second call finds it, and the head is not pruned twice


def test_universal_assisted_generation_bench_and_pool(families, tmp_path, data_dir):
    config = family_config(tmp_path / "u.toml", families, draft="other_family_draft",
                           assistant={"allow_different_tokenizer": True}, bench={"prompts": ["writing-02"]})
    r = CliRunner().invoke(cli, ["bench", "--config", str(config), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    s = out["summary"]
    assert s["route"] == "different_tokenizer" and s["token_space"] == "target"
    assert s["candidate_generators"] == ["AssistedCandidateGeneratorDifferentTokenizers"]
    db = open_db(data_dir / "evalkit.db")
    rows = list(db.query("SELECT t.path, t.prompt_id, t.round, t.rep, g.token_hash, g.draft_tokens FROM timing_runs t "
                         "JOIN generations g ON g.id = t.generation_id"))
    by = {(x["prompt_id"], x["round"], x["rep"], x["path"]): x["token_hash"] for x in rows}
    keys = {k[:3] for k in by}
    identical = sum(by[k + ("ordinary",)] == by[k + ("assisted",)] for k in keys) / len(keys)
    assert s["identical_outputs"] == identical  # the share reported is the share stored, whatever it is
    assert s["draft_tokens"] == sum(x["draft_tokens"] for x in rows if x["path"] == "assisted") > 0
    assert s["acceptance_rate"] is not None and s["counts_agree"] is True
    assert "token spaces differ" in format_summary(BenchSummary.from_json(s))

    # the pool samples: Transformers' UniversalSpeculativeDecodingGenerator (another family: the draft's head is
    # pruned). With top_p = 1 it samples garbled text the target alone does not (audit, 2026-12-02): refused.
    unfit = load_config(family_config(tmp_path / "u.toml", families, draft="other_family_draft",
                                      assistant={"allow_different_tokenizer": True}, decoding={"mode": "sample"}))
    rec = check_compat(unfit, progress=False)
    assert not rec.approved and any("top_p = 1 (no nucleus cut)" in r for r in rec.reasons)
    cfg = load_config(family_config(tmp_path / "p.toml", families, draft="other_family_draft",
                                    assistant={"allow_different_tokenizer": True},
                                    decoding={"mode": "sample", "top_p": 0.8},
                                    pool={"samples": 1, "prompts": ["writing-02", "writing-05"]}))
    res = build_pool(cfg, data_dir / "pool.db", progress=False, echo=lambda *_: None)
    pool = open_db(data_dir / "pool.db")
    failed = [(f["prompt_id"], f["error_class"], f["error_message"]) for f in
              pool.query("SELECT prompt_id, error_class, error_message FROM generations WHERE status = 'failed'")]
    assert res.pairs == 2 and res.fallbacks == 0, failed
    gens = list(pool.query("SELECT candidate_generator, draft_tokens, counts_agree FROM generations WHERE path = 'assisted'"))
    assert [g["candidate_generator"] for g in gens] == ["UniversalSpeculativeDecodingGenerator"] * 2
    assert all(g["draft_tokens"] > 0 and g["counts_agree"] for g in gens)


# ---------------------------------------------------------------- 4. half precision


def test_bfloat16_pool_on_the_cpu(families, tmp_path, data_dir):
    """bfloat16 weights on the CPU through the pair pool (sampling, both paths). The bfloat16 bench and its
    identical-output share run in tests/test_gpu_check.py (scripts/gpu-check.sh --cpu benches float16 and
    bfloat16)."""
    config = family_config(tmp_path / "b.toml", families, models={"dtype": "bfloat16"}, decoding={"mode": "sample"},
                           pool={"samples": 1, "prompts": ["writing-01", "writing-02"]})
    cfg = load_config(config)
    res = build_pool(cfg, data_dir / "bf16.db", progress=False, echo=lambda *_: None)
    assert res.pairs == 2 and res.fallbacks == 0
    db = open_db(data_dir / "bf16.db")
    gens = list(db.query("SELECT path, status, stop_reason, effective_config FROM generations"))
    assert sorted(g["path"] for g in gens) == ["assisted", "assisted", "ordinary", "ordinary"]
    assert all(g["status"] == "ok" and g["stop_reason"] for g in gens)
    assert {json.loads(g["effective_config"])["dtype"] for g in gens} == {"bfloat16"}  # what was loaded


def test_the_chat_template_note_names_the_frame_that_is_used(families):
    """BYOP audit F9: a target without a chat template and a draft with one read "chat templates differ (the target's
    template frames the prompt)" beside "prompts are framed by the plain frame"."""
    import copy

    from transformers import AutoTokenizer

    with_one = AutoTokenizer.from_pretrained(families["chat_target"])
    without = copy.deepcopy(with_one)
    without.chat_template = None

    def note(target, draft):
        rec = compatibility_record(target_tok=target, draft_tok=draft, target_vocab_size=704, draft_vocab_size=704,
                                   target_folder=str(families["chat_target"]), draft_folder=str(families["chat_target"]),
                                   device="cpu", dtype="float32",
                                   quantization="none", allow_different_tokenizer=False, draft_wanted=True)
        return next(r for r in rec.reasons if r.startswith("note: chat templates differ"))

    assert note(without, with_one) == ("note: chat templates differ (the draft has one, the target none: the plain "
                                       "frame frames the prompt, the draft's template is not used)")
    assert note(with_one, without) == ("note: chat templates differ (the target's template frames the prompt; the "
                                       "draft's is not used)")
