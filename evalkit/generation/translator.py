"""The token translator of Universal Assisted Generation with sampling, built in a fixed order.

When the draft has another tokenizer and the pair samples, Transformers' `UniversalSpeculativeDecodingGenerator`
asks `AssistantVocabTranslatorCache` for an `AssistantToTargetTranslator`, which prunes the draft's LM head to the
tokens both vocabularies share, in the order it meets them in `tokenizer.get_vocab()`. A fast tokenizer's
`get_vocab()` comes from a Rust hash map whose order changes with every process, so the pruned head's rows (the
order the draft's probabilities are laid out in before a token is drawn) did too: one seed drew other draft tokens,
hence other outputs, in each process (a pool's sample was not the same text in two runs), and one such order sent a
test's sample into Transformers' failure (measured 2026-12-03: 3 different outcomes in 4 processes on one seed).

`pin_translator` builds the translator once per tokenizer pair with both vocabularies read in id order, and puts it
where Transformers looks first, so every process prunes the head alike. Same translator, same arguments as
Transformers' own call (transformers/generation/utils.py, `_get_candidate_generator`); only the order is fixed.
"""

from __future__ import annotations


class _IdOrdered:
    """A tokenizer whose get_vocab() lists tokens by id; everything else is the tokenizer's own."""

    def __init__(self, tokenizer):
        self._tok = tokenizer

    def get_vocab(self) -> dict[str, int]:
        return dict(sorted(self._tok.get_vocab().items(), key=lambda kv: (kv[1], kv[0])))

    def __call__(self, *args, **kwargs):
        return self._tok(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tok, name)


def pin_translator(pair) -> None:
    """Before the first sampled assisted call of a pair with two tokenizers: make Transformers' translator for
    (pair.tokenizer, pair.draft_tokenizer) the one built in id order. Prunes the draft's LM head, as that first call
    would have; a no-op once the pair has its translator."""
    import weakref

    from transformers.generation.candidate_generator import AssistantToTargetTranslator, AssistantVocabTranslatorCache

    cache = AssistantVocabTranslatorCache._cache  # Transformers' own, keyed weakly by the two tokenizer objects
    inner = cache.get(pair.tokenizer)
    if inner is not None and pair.draft_tokenizer in inner:
        return
    translator = AssistantToTargetTranslator(
        _IdOrdered(pair.tokenizer), _IdOrdered(pair.draft_tokenizer), pair.target.config.get_text_config().vocab_size,
        assistant_model=pair.draft, assistant_prune_lm_head=True)
    if inner is None:
        inner = cache[pair.tokenizer] = weakref.WeakKeyDictionary()
    inner[pair.draft_tokenizer] = translator
