"""Tiny real Transformers models for tests: a tokenizer trained here with `tokenizers`, Llama configs,
random weights from fixed seeds, saved with save_pretrained like any Hub checkpoint. No network."""

from __future__ import annotations

from pathlib import Path

from evalkit.prompts import load_prompts


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
