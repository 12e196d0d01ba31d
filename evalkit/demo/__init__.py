"""The offline demo model pair: a target and a draft trained here, from nothing, in minutes on a CPU.

No model can be downloaded where evalkit is developed and tested, yet the whole experiment (measure,
judge, decide) needs a real target/draft pair. So we train one, deterministically:

1. a templated writing corpus (`corpus`, seeded),
2. ONE byte-level BPE tokenizer (handles any Chinese/English text), shared by both models,
3. a deep target (many layers: on a CPU each layer costs a fixed Python/dispatch overhead per token,
   so depth is what makes a small model "expensive" per token, like a big model on a GPU), and a
   one-layer draft (cheap per token), trained on the corpus and then distilled on the finished
   target's next-token distributions: acceptance depends on how close the draft's distribution is to
   the target's, not to the corpus's, and a draft that only saw the corpus misses the target's own habits.

Both are plain `LlamaForCausalLM` checkpoints (safetensors) with a `PreTrainedTokenizerFast`
(<s>, </s>, <pad>, <unk>; no chat template: prompts use `Prompt.plain_text()`), and their own
generation_config (sampling at temperature 0.7). The draft's generation_config also carries the
assistant settings that worked best for this pair.

The rest of evalkit calls it at one point: `models.resolve_ref` turns "demo:target" / "demo:draft" into
`ensure_demo_pair(...)`'s folders (building them on first use); `evalkit demo-models` builds them on request.

    corpus     the templated writing corpus (data and templates)
    tokenizer  the shared byte-level BPE tokenizer, and samples encoded as the models see them
    train      the models, the target's growth by block expansion, the training and distillation loop
    build      the recipes and the cached, atomic build with its manifest
"""


from .build import (
    ASSISTANT_DEFAULTS, BUILD_VERSION, SCALES, build_demo_pair, ensure_demo_pair, expected_stages, is_complete,
    read_manifest,
)

__all__ = ["ASSISTANT_DEFAULTS", "BUILD_VERSION", "SCALES", "build_demo_pair", "ensure_demo_pair", "expected_stages",
           "is_complete", "read_manifest"]
