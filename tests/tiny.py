"""Tiny real Transformers models for tests: a tokenizer trained here with `tokenizers`, Llama configs,
random weights from fixed seeds, saved with save_pretrained like any Hub checkpoint. No network."""

from __future__ import annotations

from pathlib import Path

from evalkit.task.prompts import load_prompts


def corpus() -> list[str]:
    texts = []
    for p in load_prompts():
        texts += [p.plain_text(), p.material, p.task]
    texts += ["The internal library will be under maintenance on Wednesday evening.", "Existing files stay readable."]
    return texts


def train_tokenizer(vocab_size: int = 400, seed_text: str = ""):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus() + ([seed_text] if seed_text else []), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )


def build_model(folder: Path, tokenizer, *, seed: int, layers: int = 2, hidden: int = 64, vocab_size: int | None = None):
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size or len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    # Larger random weights than the default init make the argmax decisive (no near-ties): greedy
    # identity between paths then tests the engine, not float noise.
    with torch.no_grad():
        model.lm_head.weight.normal_(0, 0.5)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_all(root: Path) -> dict[str, Path]:
    """target, a random draft, a copy of the target (as its own draft), and a draft with another tokenizer."""
    tok = train_tokenizer()
    other_tok = train_tokenizer(vocab_size=300, seed_text="a different corpus makes a different vocabulary")
    return {
        "target": build_model(root / "target", tok, seed=0, layers=2, hidden=64),
        "draft": build_model(root / "draft", tok, seed=1, layers=1, hidden=32),
        "target_copy": build_model(root / "target_copy", tok, seed=0, layers=2, hidden=64),
        "other_draft": build_model(root / "other_draft", other_tok, seed=2, layers=1, hidden=32),
    }


# ---------------------------------------------------------------- model families people actually bring
#
# Stand-ins, built here, for the pairs the shipped configs name (Qwen2.5 1.5B/0.5B, a padded 7B target, a draft
# from another family). Real Transformers classes, tokenizers trained here, models trained for a few seconds on
# chat-framed answers so they end their turn with the end-of-turn token as instruct models do.

IM_START, IM_END, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"


def chatml(system: str) -> str:
    """A ChatML chat template in the shape of Qwen2.5's: a default system turn, one block per turn, and
    `<|im_start|>assistant\\n` as the generation prompt (Qwen2.5's own also handles tool calls)."""
    return (
        "{%- if messages[0]['role'] == 'system' %}"
        "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
        "{%- else %}{{- '<|im_start|>system\\n" + system + "<|im_end|>\\n' }}{%- endif %}"
        "{%- for message in messages %}{%- if not (message['role'] == 'system' and loop.first) %}"
        "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
        "{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )


CHAT_TEMPLATE = chatml("You are a helpful assistant.")
# Same family, another release: only the default system prompt differs (as between Qwen2 and Qwen2.5).
OTHER_CHAT_TEMPLATE = chatml("You are a helpful assistant. Answer briefly.")
# The other family's format (Llama 3 style headers, <|eot_id|> ends a turn, BOS prepended by the tokenizer).
LLAMA3_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)

# Short answers, three per prompt: greedy decoding ends the turn well inside a small token budget, and
# sampling still varies.
ANSWERS = {
    "writing-01": [
        "通知：内部资料库将于周三晚间维护。维护期间不能上传新文件，已有文件仍可阅读。恢复时间尚未确定。",
        "各位同事：资料库周三晚间维护，届时无法上传新文件，已有文件可以阅读。恢复时间暂未确定。",
        "【维护通知】周三晚间资料库维护；期间不能上传，已有文件仍可阅读；恢复时间尚未确定。",
    ],
    "writing-02": [
        "资料库周三晚间维护，期间不能上传但可阅读，恢复时间未定。",
        "周三晚间维护：不能上传新文件，已有文件可读，恢复时间尚未确定。",
        "资料库将于周三晚间维护，只能阅读不能上传，何时恢复尚不确定。",
    ],
    "writing-03": [
        "各位同事：资料库将于周三晚上维护。维护期间暂时无法上传文件，已有文件仍可阅读。恢复时间尚不确定。",
        "资料库将在周三晚上维护，其间无法上传文件，但已有文件可以正常阅读，恢复时间目前还不知道。",
        "周三晚上资料库维护。维护期间无法上传，文件仍可阅读。恢复时间尚未确定，敬请谅解。",
    ],
    "writing-04": [
        "各位同事：内部资料库将于周三晚间维护。维护期间不能上传新文件，已有文件仍可阅读。恢复时间尚未确定。如遇问题，请联系管理员。",
        "各位同事：资料库周三晚间维护，期间无法上传新文件，已有文件可以阅读。恢复时间未定。有问题请联系管理员。",
        "各位同事：周三晚间资料库将进行维护。上传暂停，阅读照常。恢复时间尚未确定。如有问题，请联系管理员。",
    ],
    "writing-05": [
        "Notice: maintenance on Wednesday evening. No uploads; files stay readable. Restore time not yet known.",
        "Dear all: maintenance on Wednesday evening. You can read files but not upload. Restore time not yet known.",
        "Wednesday evening maintenance: no uploads, files stay readable, restore time not yet known.",
    ],
}


def conversations(per_prompt: int = 2) -> list[tuple[str, str]]:
    """(user message, answer) pairs, `per_prompt` answers for every prompt: what the chat stand-ins learn."""
    return [(p.user_message(), a) for p in load_prompts() for a in ANSWERS[p.id][:per_prompt]]


def train_chat_tokenizer(vocab_size: int = 700):
    """A byte-level BPE in Qwen2's layout (NFC, Qwen2's split regex, byte level), with ChatML specials:
    `<|endoftext|>` pads, `<|im_end|>` ends a turn and is the tokenizer's eos, no BOS (as Qwen2.5)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[ENDOFTEXT, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus() + [u + "\n" + a for u, a in conversations(3)] + [CHAT_TEMPLATE], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=IM_END, pad_token=ENDOFTEXT, unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def train_llama3_style_tokenizer(vocab_size: int = 450):
    """Another family's tokenizer: byte-level BPE with other merges and size, its own specials, and a BOS
    that the tokenizer prepends to everything it encodes (as Llama 3's does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([a for _, a in conversations(3)] + corpus()[::-1], trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                   pad_token="<|end_of_text|>")
    fast.chat_template = LLAMA3_TEMPLATE
    return fast


def _train(model, tokenizer, *, steps: int, lr: float) -> None:
    """Teach a model the chat-framed answers (full-sequence loss): a few seconds on a CPU."""
    import torch

    texts = [tokenizer.apply_chat_template([{"role": "user", "content": u}], add_generation_prompt=True, tokenize=False)
             + a + tokenizer.eos_token for u, a in conversations()]
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # ops this small run faster on one thread, and the test machine's cores are shared
    model.train()
    try:
        for _ in range(steps):
            loss = model(**enc, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()


def _padded(n: int, multiple: int = 64) -> int:
    return -(-n // multiple) * multiple


def build_qwen2(folder: Path, tokenizer, *, seed: int, layers: int, hidden: int, steps: int = 80, lr: float = 1e-2,
                vocab_size: int | None = None):
    """A Qwen2ForCausalLM trained on the chat answers. Its config declares a vocab padded past the tokenizer
    (as Qwen2.5's 151936 against 151665 tokens); the generation config ends on either end token, like Qwen2.5's."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    eot, pad = tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(ENDOFTEXT)
    config = Qwen2Config(
        vocab_size=vocab_size or _padded(len(tokenizer)), hidden_size=hidden, intermediate_size=hidden * 2,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
        bos_token_id=pad, eos_token_id=eot, pad_token_id=pad, tie_word_embeddings=True,
    )
    model = Qwen2ForCausalLM(config)
    _train(model, tokenizer, steps=steps, lr=lr)
    model.generation_config = GenerationConfig(
        bos_token_id=pad, pad_token_id=pad, eos_token_id=[eot, pad],
        # Qwen2.5-Instruct ships sampling settings here; evalkit's own decoding settings must win over them
        do_sample=True, temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05,
    )
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_llama_chat(folder: Path, tokenizer, *, seed: int, steps: int = 80):
    """The other family's small instruct model (Llama architecture, its own tokenizer and template)."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    eot = tokenizer.convert_tokens_to_ids("<|eot_id|>")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=eot, pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config)
    _train(model, tokenizer, steps=steps, lr=1e-2)
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id, eos_token_id=eot,
                                               pad_token_id=tokenizer.pad_token_id)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def pad_vocab(src: Path, folder: Path, extra: int = 64) -> Path:
    """The chat target with `extra` more (zero) vocabulary rows: a config vocab_size past the draft's, as
    Qwen2.5-7B declares 152064 against the 0.5B's 151936 over one shared tokenizer."""
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    model = Qwen2ForCausalLM.from_pretrained(src)
    old = model.config.vocab_size
    model.resize_token_embeddings(old + extra, mean_resizing=False)
    with torch.no_grad():
        model.get_input_embeddings().weight[old:].zero_()
        model.get_output_embeddings().weight[old:].zero_()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    AutoTokenizer.from_pretrained(src).save_pretrained(folder)
    return folder


def build_families(root: Path) -> dict[str, Path]:
    """chat_target / chat_draft: one ChatML tokenizer, Qwen2 architecture, same padded vocab (like Qwen2.5
    1.5B/0.5B). padded_target: the chat target declaring 64 more vocab rows (like Qwen2.5-7B); padded_draft: the
    chat draft padded the same way (the fix). other_family_draft: trained with another tokenizer (Universal
    Assisted Generation). template_draft: the chat draft with another chat template (the mistake `evalkit check`
    must catch)."""
    import shutil

    from transformers import AutoTokenizer

    done = root / ".complete"
    names = ("chat_target", "chat_draft", "padded_target", "padded_draft", "other_family_draft", "template_draft")
    paths = {n: root / n for n in names}
    if done.exists():  # the families are shared by several test modules: build once per session
        return paths
    tok = train_chat_tokenizer()
    build_qwen2(paths["chat_target"], tok, seed=10, layers=2, hidden=64)
    build_qwen2(paths["chat_draft"], tok, seed=11, layers=1, hidden=32)
    pad_vocab(paths["chat_target"], paths["padded_target"])
    pad_vocab(paths["chat_draft"], paths["padded_draft"])  # the fix for the padded target: one vocab_size again
    build_llama_chat(paths["other_family_draft"], train_llama3_style_tokenizer(), seed=12)
    shutil.copytree(paths["chat_draft"], paths["template_draft"])
    other = AutoTokenizer.from_pretrained(paths["chat_draft"])
    other.chat_template = OTHER_CHAT_TEMPLATE
    other.save_pretrained(paths["template_draft"])
    done.touch()
    return paths


# ---------------------------------------------------------------- the brief's own family: LFM2 (hybrid layers)
#
# LFM2 / LFM2.5 (Liquid AI) interleave gated short-convolution layers with a few grouped-query attention layers, so
# their cache holds convolution states beside keys and values: the kind of cache that breaks assisted generation in
# other hybrid families. The stand-ins are the real Lfm2ForCausalLM class with LFM2's layout of specials (<|pad|> 0,
# <|startoftext|> 1 as BOS, <|im_end|> 7 ends a turn), a BOS the template writes, and a config vocab padded past the
# tokenizer as LFM2's 65536 is.

LFM2_SPECIALS = ["<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|fim_pre|>", "<|fim_mid|>", "<|fim_suf|>",
                 IM_START, IM_END]
# LFM2's format: BOS, then ChatML turns, no default system turn.
LFM2_TEMPLATE = (
    "{{- bos_token -}}{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# The target's layers: convolutions around one attention layer (LFM2-1.2B: 10 conv, 6 attention); the draft's: one of each.
LFM2_TARGET_LAYERS = ["conv", "conv", "full_attention", "conv"]
LFM2_DRAFT_LAYERS = ["conv", "full_attention"]


def train_lfm2_tokenizer(vocab_size: int = 760):
    """A byte-level BPE with LFM2's special tokens at LFM2's ids, trained on the chat answers, and its template. Its
    size differs from the ChatML stand-ins' so that the two families never declare one vocab_size by chance."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=LFM2_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus() + [u + "\n" + a for u, a in conversations(3)] + [LFM2_TEMPLATE], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|startoftext|>", eos_token=IM_END,
                                   pad_token="<|pad|>")
    fast.chat_template = LFM2_TEMPLATE
    assert [fast.pad_token_id, fast.bos_token_id, fast.eos_token_id] == [0, 1, 7]
    return fast


def build_lfm2(folder: Path, tokenizer, *, seed: int, layer_types: list[str], hidden: int, steps: int = 80,
               lr: float = 1e-2, vocab_size: int | None = None):
    """An Lfm2ForCausalLM (short convolutions and attention) trained on the chat answers; the generation config has
    LFM2.5's ids (BOS 1, end of turn 7, pad 0)."""
    import torch
    from transformers import GenerationConfig, Lfm2Config, Lfm2ForCausalLM

    torch.manual_seed(seed)
    config = Lfm2Config(
        vocab_size=vocab_size or _padded(len(tokenizer)), hidden_size=hidden, intermediate_size=hidden * 2,
        num_hidden_layers=len(layer_types), layer_types=list(layer_types), num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=1024, conv_L_cache=3, block_auto_adjust_ff_dim=False,
        pad_token_id=0, bos_token_id=1, eos_token_id=7, tie_word_embeddings=True,
    )
    model = Lfm2ForCausalLM(config)
    _train(model, tokenizer, steps=steps, lr=lr)
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=7, pad_token_id=0)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_lfm2_family(root: Path) -> dict[str, Path]:
    """lfm2_target / lfm2_draft: one tokenizer, the same padded vocab (like LFM2.5-1.2B-Instruct with LFM2.5-350M).
    lfm2_padded_target: the target declaring 64 more vocab rows (the Universal Assisted Generation route)."""
    import torch
    from transformers import AutoTokenizer, Lfm2ForCausalLM

    done = root / ".complete"
    names = ("lfm2_target", "lfm2_draft", "lfm2_padded_target")
    paths = {n: root / n for n in names}
    if done.exists():
        return paths
    tok = train_lfm2_tokenizer()
    build_lfm2(paths["lfm2_target"], tok, seed=20, layer_types=LFM2_TARGET_LAYERS, hidden=64)
    build_lfm2(paths["lfm2_draft"], tok, seed=21, layer_types=LFM2_DRAFT_LAYERS, hidden=32)
    model = Lfm2ForCausalLM.from_pretrained(paths["lfm2_target"])
    old = model.config.vocab_size
    model.resize_token_embeddings(old + 64, mean_resizing=False)
    with torch.no_grad():
        model.get_input_embeddings().weight[old:].zero_()
    model.save_pretrained(paths["lfm2_padded_target"])
    model.generation_config.save_pretrained(paths["lfm2_padded_target"])
    AutoTokenizer.from_pretrained(paths["lfm2_target"]).save_pretrained(paths["lfm2_padded_target"])
    done.touch()
    return paths
