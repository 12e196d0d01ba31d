"""The demo pair's tokenizer: byte-level BPE trained on the corpus, shared by target and draft, and the encoding of
corpus samples as the models see them at run time."""

from __future__ import annotations

# Special tokens, in id order: <pad>=0, <s>=1, </s>=2, <unk>=3.
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]
MAX_POSITIONS = 1024


def train_tokenizer(texts: list[str], vocab_size: int):
    """Byte-level BPE on the corpus: any text encodes (unknown characters fall back to bytes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    bos = tok.token_to_id("<s>")
    # Every encoded text starts with <s>, as the models were trained.
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)])
    return tok


def wrap_tokenizer(raw_tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=raw_tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )


def encode_samples(raw_tok, samples) -> list[tuple[list[int], int]]:
    """(token ids, prompt length) per sample: <s> + prompt, then output + </s>.

    Prompt and output are encoded separately, exactly as at run time (prompt encoded, output generated).
    """
    eos = raw_tok.token_to_id("</s>")
    prompts = raw_tok.encode_batch([s.prompt_text for s in samples])
    outputs = raw_tok.encode_batch([s.output for s in samples], add_special_tokens=False)
    out = []
    for p, o in zip(prompts, outputs):
        ids = p.ids + o.ids + [eos]
        out.append((ids[:MAX_POSITIONS], len(p.ids)))
    return out
