"""The compatibility record: may this target/draft pair run assisted generation, and by which route?

Verdicts:
- "same_tokenizer": identical tokenizers and equal config vocab sizes -> plain `assistant_model=`.
- "different_tokenizer": Transformers' Universal Assisted Generation (`tokenizer=`, `assistant_tokenizer=`),
  used when the tokenizers are identical but the vocab sizes are padded differently (Transformers decides
  "same tokenizer" by comparing vocab_size), or when they really differ and the config allows it.
- "not_approved": anything unknown or incompatible. Then only the ordinary path runs.

What Transformers 5 does with each route (read from transformers/generation/utils.py and tested in
tests/test_families.py): `_validate_generation_mode` compares the two configs' `vocab_size`. Equal sizes are
taken as one token space and `assistant_tokenizer=` is refused with a ValueError; different sizes demand
`tokenizer=` and `assistant_tokenizer=`. With both given, `_get_candidate_generator` picks
`AssistedCandidateGeneratorDifferentTokenizers` for greedy decoding (the draft's text is re-encoded with the
target's tokenizer) and `UniversalSpeculativeDecodingGenerator` for sampling (a token-id translator; when the
draft's vocabulary is not a subset of the target's it prunes the draft's LM head and wraps its input embeddings
in place). So two tokenizers that really differ but declare the same vocab_size cannot use either route.

Hybrid caches (LFM2 / LFM2.5: short-convolution layers beside attention layers). A rejected draft token must leave
no trace in the target's cache. Keys and values are cropped; a convolution layer's state is a rolling window, so
Transformers 5 keeps its past while the target verifies (`Cache.activate_past_recording`) and crops it back
(`crop`). A layer with a recurrent state cannot be cropped: generate() then refuses assisted generation after the
prefill ("Assisted decoding requires a cache that can be cropped"). The record names the layer types and says which
case applies (tests/test_lfm2.py runs the LFM2 stand-ins through every route and decoding).
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path


class Route(StrEnum):
    """The compatibility verdict: which route assisted generation takes for this pair, if any."""

    SAME_TOKENIZER = "same_tokenizer"  # plain assistant_model=
    DIFFERENT_TOKENIZER = "different_tokenizer"  # Universal Assisted Generation (tokenizer=, assistant_tokenizer=)
    NOT_APPROVED = "not_approved"  # only the ordinary path runs


class TokenSpace(StrEnum):
    """Where acceptance is counted."""

    SHARED = "shared"  # one vocabulary
    TARGET = "target"  # two vocabularies: counted in the target's tokens, on the candidates the target verifies


# The candidate generator Transformers 5 builds for each approved route and decoding mode.
GENERATORS = {
    (Route.SAME_TOKENIZER, "greedy"): "AssistedCandidateGenerator",
    (Route.SAME_TOKENIZER, "sample"): "AssistedCandidateGenerator",
    (Route.DIFFERENT_TOKENIZER, "greedy"): "AssistedCandidateGeneratorDifferentTokenizers",
    (Route.DIFFERENT_TOKENIZER, "sample"): "UniversalSpeculativeDecodingGenerator",
}


@dataclass
class ModelFacts:
    """What the record knows about one model, from its folder, config and tokenizer (no weights loaded)."""

    folder: str | None
    weights_digest: str | None  # sha256 over the weight files
    vocab_size: int | None  # the model config's (possibly padded) vocab_size
    tokenizer: dict | None  # tokenizer_fingerprint: class, vocab_hash, vocab_len, special_ids, chat_template_hash
    architecture: str | None = None  # the config's model_type ("qwen2", "lfm2", ...)
    layer_types: dict[str, int] | None = None  # layer type -> count, when the config declares them (hybrid models)


@dataclass
class CompatibilityRecord:
    """May this target/draft pair run assisted generation, and by which route? Stored with every experiment
    (`to_json`, also what `evalkit check --json` prints)."""

    versions: dict  # evalkit, python, torch, transformers, accelerate, platform
    device: str
    dtype: str
    quantization: str
    target: ModelFacts
    draft: ModelFacts | None = None  # None when no draft is wanted
    verdict: Route = Route.NOT_APPROVED
    token_space: TokenSpace | None = None
    candidate_generator: str | None = None  # the Transformers class generate() will run for the assisted path
    reasons: list[str] = field(default_factory=list)
    prompt_format: str | None = None  # "chat" or "plain": how prompts are framed (set by models.check_compat)

    @property
    def approved(self) -> bool:
        return self.verdict in (Route.SAME_TOKENIZER, Route.DIFFERENT_TOKENIZER)

    def to_json(self) -> dict:
        out = asdict(self)
        if out["prompt_format"] is None:  # a record made outside check_compat has not decided the framing
            del out["prompt_format"]
        return out


def assisted_allowed(cfg, rec: CompatibilityRecord) -> bool:
    """May the assisted path run: switched on in the config (generation_path, load_draft) and approved here."""
    return cfg.assisted_enabled and rec.approved


# The first Transformers release whose candidate generators for two tokenizers roll the draft's cache back wrongly.
ROLLBACK_BROKEN_FROM = "5.25.0"


def different_tokenizer_rollback_problem(transformers_version: str) -> str | None:
    """Why the Universal route cannot run under this Transformers, or None.

    Transformers 5.25 rolls the draft's cache back by a length it keeps in the target's tokens (`_last_ids_length`,
    set from the target's ids) against the draft's own input, counted in the draft's tokens: where the draft's
    tokenizer cuts the text finer, nothing is cropped, the cache outgrows the draft's input and generate() fails from
    the second round ("cannot reshape tensor of 0 elements"). Measured 2026-12-03 on the stand-in pair of two
    families (tests/test_families.py): every assisted run fell back, greedy and sampled, where 5.24 ran them all; one
    tokenizer padded apart still ran (both count the text alike).
    evalkit requires transformers<5.25 for this; a Transformers from outside that range is refused here, never run."""
    from packaging.version import Version

    if Version(transformers_version).release < Version(ROLLBACK_BROKEN_FROM).release:
        return None
    return (f"Transformers {transformers_version} rolls the draft's cache back by the target's token count when the "
            "two tokenizers differ, so the draft's cache outgrows its input and generate() fails from the second "
            "round: every assisted run would fall back (measured with 5.25.0); install evalkit's requirement, "
            f"transformers<{ROLLBACK_BROKEN_FROM} (pip install 'transformers<{ROLLBACK_BROKEN_FROM}'), or use a "
            "draft with the target's tokenizer")


def universal_sampling_problem(target_tok, draft_tok, target_vocab_size: int) -> str | None:
    """Does Transformers' token translator for sampling with two tokenizers work for this pair? It is run on a
    two-token input, as `UniversalSpeculativeDecodingGenerator` runs it, without touching the models. Returns the
    error it raises (None when it works).

    Why: when every draft token also exists in the target's vocabulary (one tokenizer, vocab sizes padded
    apart, as Qwen2.5-7B with Qwen2.5-0.5B), the translator keeps the draft's LM head as it is but still maps
    candidate ids through the pruned-head table it never built; Transformers 5.24 then fails on the first round
    with AttributeError ('assistant_overlap_token_ids')."""
    import torch
    from transformers.generation.candidate_generator import AssistantToTargetTranslator

    class Draft:  # all the translator reads of the draft when it does not prune its LM head
        device = torch.device("cpu")

    try:
        plain = AssistantToTargetTranslator(target_tok, draft_tok, target_vocab_size)
        if len(plain._suppress_input_ids) > 0:
            return None  # the draft's head gets pruned: the path that works (tested with another family's draft)
        translator = AssistantToTargetTranslator(target_tok, draft_tok, target_vocab_size, assistant_model=Draft(),
                                                 assistant_prune_lm_head=True)  # as _get_candidate_generator does
        some_id = next(iter(translator.target_to_assistant_input_ids.values()))
        translator.get_target_ids(torch.tensor([[some_id]]), torch.tensor([[some_id]]), torch.tensor([[some_id, some_id]]))
    except Exception as e:  # noqa: BLE001 - whatever it raises is what generate() would raise
        return f"{type(e).__name__}: {e}"
    return None


# Layer types whose cache is keys and values only (cropped like any attention cache).
ATTENTION_LAYERS = {"full_attention", "sliding_attention", "chunked_attention"}
# Short convolutions (LFM2, LFM2.5): a rolling window of past inputs, no recurrent state.
CONV_LAYERS = {"conv"}


def layer_counts(model_config) -> dict[str, int] | None:
    """Layer type -> how many, from the (text) config's layer_types; None when it declares none (attention only)."""
    try:
        types = getattr(model_config.get_text_config(), "layer_types", None)
    except Exception:  # noqa: BLE001 - no config, or one without a text part: nothing declared
        return None
    return dict(Counter(types)) if types else None


def conv_rollback_supported() -> bool:
    """Can this Transformers put a convolution state back after a rejected draft (record the past, then crop)?"""
    from transformers.cache_utils import Cache

    return hasattr(Cache, "activate_past_recording")


def _layers_text(facts: ModelFacts) -> str:
    counts = facts.layer_types or {}
    return " + ".join(f"{n} {t}" for t, n in counts.items()) + f" layers ({facts.architecture})"


def _cache_check(rec: CompatibilityRecord) -> None:
    """Reasons (and, when this Transformers cannot roll a convolution state back, a refusal) for hybrid caches."""
    hybrid = [(role, f) for role, f in (("target", rec.target), ("draft", rec.draft))
              if f is not None and f.layer_types and set(f.layer_types) - ATTENTION_LAYERS]
    if not hybrid:
        return
    described = "; ".join(f"{role}: {_layers_text(f)}" for role, f in hybrid)
    types = {t for _, f in hybrid for t in f.layer_types} - ATTENTION_LAYERS
    unknown = types - CONV_LAYERS
    version = rec.versions["transformers"]
    if types & CONV_LAYERS and not conv_rollback_supported():
        rec.verdict = Route.NOT_APPROVED
        rec.reasons.append(
            f"hybrid cache ({described}): Transformers {version} has no way to put a convolution state back after a "
            "rejected draft (Cache.activate_past_recording is missing), so a rejected token could leave a trace in "
            "the target's state; upgrade Transformers (5.24 rolls convolution states back), or run the ordinary path")
        return
    if types & CONV_LAYERS:
        rec.reasons.append(
            f"hybrid cache ({described}): short-convolution layers keep a rolling window of past inputs beside the "
            f"attention keys and values; Transformers {version} records the window's past while the target verifies "
            "a draft and crops it back after a rejection (Cache.activate_past_recording, crop), as it crops keys and "
            "values, so a rejected draft token leaves no trace")
    if unknown:
        rec.reasons.append(
            f"note: layer types evalkit has not run ({', '.join(sorted(unknown))}; {described}): Transformers decides "
            "whether their state can be cropped back only at the first generate(); a layer with a recurrent state makes "
            "it refuse assisted generation ('Assisted decoding requires a cache that can be cropped'), which is "
            "recorded as a failed assisted run with its ordinary fallback")


def expected_generator(verdict: str, decoding: str) -> str | None:
    """The class of candidate generator generate() will run for this verdict and decoding mode (None: none)."""
    return GENERATORS.get((verdict, decoding))


def _sha(obj) -> str:
    data = obj if isinstance(obj, bytes) else json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def tokenizer_fingerprint(tok) -> dict:
    """What decides whether two tokenizers are the same: the vocab, the special ids, the chat template."""
    vocab = tok.get_vocab()
    template = getattr(tok, "chat_template", None)
    return {
        "class": type(tok).__name__,
        "vocab_hash": _sha(sorted(vocab.items())),
        "vocab_len": len(vocab),
        "special_ids": {
            name: getattr(tok, f"{name}_token_id", None) for name in ("bos", "eos", "pad", "unk")
        },
        "chat_template_hash": _sha(template.encode()) if isinstance(template, str) else None,
    }


# The files a checkpoint's weights may be in (hashed into weights_digest; a local folder needs one).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


def weight_files(folder: str | Path) -> list[Path]:
    return sorted(p for p in Path(folder).glob("*") if p.suffix in WEIGHT_SUFFIXES)


def safetensors_problem(path: Path) -> str | None:
    """Why a .safetensors file cannot be read, from its header alone (None when it can): 8 bytes of little-endian
    length, that many bytes of JSON giving each tensor's byte range after the header. A file cut short (an
    interrupted download or copy) fails here as from_pretrained would fail on it, without the weights being read."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"{size} bytes, shorter than a safetensors header"
            n = int.from_bytes(head, "little")
            if n > size - 8:
                return f"its header says {n} bytes of metadata follow, but the file holds {size} bytes in all"
            header = json.loads(fh.read(n))
        ends = [int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):  # not JSON, or not the layout above
        return "its header is not safetensors metadata"
    need = 8 + n + max(ends, default=0)
    if need > size:
        return f"cut short: its tensors end at byte {need}, but the file holds {size} bytes"
    return None


def weights_problem(folder: str | Path, shards: bool = True) -> str | None:
    """Why the weights of a checkpoint folder cannot be read, from the file names and safetensors headers alone
    (None when nothing is wrong): a shard its index names is missing (unless not `shards`), or a safetensors file
    is damaged."""
    root = Path(folder)
    for index in sorted(root.glob("*.index.json")) if shards else ():
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"{index.name} is not a readable weights index"
        missing = sorted(s for s in shards if not (root / s).is_file())
        if missing:
            return f"{index.name} names {len(missing)} shard(s) the folder lacks: {', '.join(missing[:3])}"
    for f in weight_files(root):
        problem = f.suffix == ".safetensors" and safetensors_problem(f)
        if problem:
            return f"its weights file {f.name} cannot be read: {problem}"
    return None


def _files_digest(folder: str | None) -> str | None:
    """sha256 over the weight files of a local checkpoint folder; None when unknown."""
    if not folder:
        return None
    files = weight_files(folder)
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def versions() -> dict:
    import accelerate
    import torch
    import transformers

    from .. import __version__

    return {
        "evalkit": __version__,
        "evalkit_commit": source_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "accelerate": accelerate.__version__,
        "platform": platform.platform(),
    }


@functools.lru_cache(maxsize=1)
def source_commit() -> str | None:
    """The git commit of the evalkit checkout that runs, "+changes" added where its tracked files differ from it; None
    where it is no git checkout (an installed wheel, a Space without its .git). The version alone (never bumped
    between commits) does not say which code made a run, and reproducing one from an export starts from its commit."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None

    def git(*args) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20,
                              check=True).stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):  # no git on the machine, a broken checkout
        return None
    return head + ("+changes" if changed else "") if re.fullmatch(r"[0-9a-f]{40}", head) else None


def compatibility_record(
    *,
    target_tok,
    draft_tok,
    target_vocab_size: int | None,
    draft_vocab_size: int | None,
    target_folder: str | None,
    draft_folder: str | None,
    device: str,
    dtype: str,
    quantization: str,
    allow_different_tokenizer: bool,
    draft_wanted: bool,
    decoding: str = "greedy",
    target_config=None,
    draft_config=None,
    top_p: float = 1.0,
) -> CompatibilityRecord:
    """Build the record and its verdict for this decoding mode. Any key item unknown -> not approved. The model
    configs, when given, add the architecture and layer types (hybrid caches are checked from them)."""
    rec = CompatibilityRecord(
        versions=versions(), device=device, dtype=dtype, quantization=quantization,
        target=ModelFacts(folder=target_folder, weights_digest=_files_digest(target_folder), vocab_size=target_vocab_size,
                          tokenizer=tokenizer_fingerprint(target_tok) if target_tok is not None else None,
                          architecture=getattr(target_config, "model_type", None), layer_types=layer_counts(target_config)),
    )
    if not draft_wanted:
        rec.reasons.append("no draft requested (generation_path = ordinary or load_draft = false)")
        return rec
    rec.draft = ModelFacts(folder=draft_folder, weights_digest=_files_digest(draft_folder), vocab_size=draft_vocab_size,
                           tokenizer=tokenizer_fingerprint(draft_tok) if draft_tok is not None else None,
                           architecture=getattr(draft_config, "model_type", None), layer_types=layer_counts(draft_config))
    unknown = [
        f"{role}.{key}"
        for role, facts in (("target", rec.target), ("draft", rec.draft))
        for key in ("weights_digest", "vocab_size", "tokenizer")
        if getattr(facts, key) is None
    ]
    if unknown:
        rec.reasons.append(f"unknown: {', '.join(unknown)} (download the models to a local folder or cache)")
        return rec
    t_fp, d_fp = rec.target.tokenizer, rec.draft.tokenizer
    same_tok = t_fp["vocab_hash"] == d_fp["vocab_hash"] and t_fp["special_ids"] == d_fp["special_ids"]
    same_size = target_vocab_size == draft_vocab_size
    diff = [k for k in ("vocab_hash", "special_ids") if t_fp[k] != d_fp[k]]
    if same_tok and same_size:
        rec.verdict = Route.SAME_TOKENIZER
        rec.reasons.append("identical vocab, special ids and config vocab_size")
    elif same_tok:
        rec.verdict = Route.DIFFERENT_TOKENIZER
        padded = ", ".join(f"{role} {size} for {facts.tokenizer['vocab_len']} tokens"
                           for role, size, facts in (("target", target_vocab_size, rec.target),
                                                     ("draft", draft_vocab_size, rec.draft)))
        rec.reasons.append(
            f"identical tokenizers but the configs pad the vocabulary differently ({padded}): Transformers decides "
            "'same tokenizer' by comparing vocab_size, so this pair runs Universal Assisted Generation "
            "(tokenizer= and assistant_tokenizer=), as a padded Qwen2.5-7B target does with a 0.5B draft"
        )
    elif same_size:
        rec.reasons.append(
            f"tokenizers differ ({', '.join(diff)}) but both configs declare vocab_size {target_vocab_size}: "
            "Transformers 5 then takes them for one token space and refuses assistant_tokenizer=, so Universal "
            "Assisted Generation cannot run and plain assisted generation would read the draft's ids as the "
            "target's; pick a draft from the target's family"
        )
    elif allow_different_tokenizer:
        rec.verdict = Route.DIFFERENT_TOKENIZER
        rec.reasons.append(
            f"tokenizers differ ({', '.join(diff)}); allowed by assistant.allow_different_tokenizer "
            "(Universal Assisted Generation)"
        )
    else:
        rec.reasons.append(
            f"tokenizers differ ({', '.join(diff)}); set assistant.allow_different_tokenizer = true to try "
            "Universal Assisted Generation, or pick a draft from the target's family"
        )
    # one tokenizer padded apart (as Qwen2.5-7B) counts alike in both: only tokenizers that really differ meet it
    rollback = None if same_tok else different_tokenizer_rollback_problem(rec.versions["transformers"])
    if rec.verdict == Route.DIFFERENT_TOKENIZER and rollback:
        rec.verdict = Route.NOT_APPROVED
        rec.reasons.append(rollback)
    if rec.verdict == Route.DIFFERENT_TOKENIZER and decoding == "sample":
        problem = universal_sampling_problem(target_tok, draft_tok, target_vocab_size)
        if problem:
            rec.verdict = Route.NOT_APPROVED
            rec.reasons.append(
                f"with sampling, Transformers {rec.versions['transformers']} fails on this pair in "
                f"UniversalSpeculativeDecodingGenerator ({problem}): every assisted run would fall back; "
                'use greedy decoding (--decoding greedy, or decoding.mode = "greedy"), or give the draft the '
                "target's vocab_size (draft.resize_token_embeddings(TARGET_VOCAB_SIZE, mean_resizing=False), then "
                "save_pretrained) so both declare one token space and plain assisted generation runs"
            )
    if rec.verdict == Route.DIFFERENT_TOKENIZER and decoding == "sample" and top_p >= 1.0:
        # Measured (2026-12-02, tiny pair of two families, Transformers alone, 6 seeds): with top_p = 1 the universal
        # generator sampled 6 different garbled texts where the target alone gave 2 clean ones; with top_p = 0.8 (top_k
        # 0 or 20) assisted matched the target. Raters would be judging that, not the draft.
        rec.verdict = Route.NOT_APPROVED
        rec.reasons.append(
            f"with sampling and top_p = {top_p:g} (no nucleus cut), Transformers {rec.versions['transformers']}'s "
            "UniversalSpeculativeDecodingGenerator samples text the target alone does not (garbled tokens, measured): "
            "set decoding.top_p below 1 (0.8 matched the target), or use greedy decoding")
    if rec.approved:
        _cache_check(rec)
    if rec.verdict == Route.SAME_TOKENIZER:
        rec.token_space = TokenSpace.SHARED
    elif rec.verdict == Route.DIFFERENT_TOKENIZER:
        rec.token_space = TokenSpace.TARGET
        rec.reasons.append(
            "acceptance is counted in the target's tokens, on the candidates the target verifies (greedy: the "
            "draft's text re-encoded with the target's tokenizer; sampling: the draft's ids mapped into the "
            "target's vocabulary); draft_tokens keeps the draft's own count"
        )
        if not same_tok:
            rec.reasons.append(
                "the draft reads the target's framed prompt as text (Transformers decodes it with special tokens "
                "skipped and re-encodes it with the draft's tokenizer), never through its own chat template"
            )
    rec.candidate_generator = expected_generator(rec.verdict, decoding)
    if rec.candidate_generator:
        rec.reasons.append(f"generate() will run Transformers' {rec.candidate_generator} ({decoding} decoding)")
    if t_fp["chat_template_hash"] != d_fp["chat_template_hash"]:
        # which template frames the prompt depends on the target's having one (BYOP audit F9: a target without one
        # read "the target's template frames the prompt" beside "prompts are framed by the plain frame")
        rec.reasons.append("note: chat templates differ (" + (
            "the target's template frames the prompt; the draft's is not used)" if t_fp["chat_template_hash"]
            else "the draft has one, the target none: the plain frame frames the prompt, the draft's template is not used)"))
    return rec
