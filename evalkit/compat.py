"""The compatibility record: may this target/draft pair run assisted generation, and by which route?

Verdicts:
- "same_tokenizer": identical tokenizers and equal config vocab sizes -> plain `assistant_model=`.
- "different_tokenizer": Transformers' Universal Assisted Generation (`tokenizer=`, `assistant_tokenizer=`),
  used when the tokenizers are identical but the vocab sizes are padded differently (Transformers decides
  "same tokenizer" by comparing vocab_size), or when they really differ and the config allows it.
- "not_approved": anything unknown or incompatible. Then only the ordinary path runs.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

VERDICTS = ("same_tokenizer", "different_tokenizer", "not_approved")


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


def _files_digest(folder: str | None) -> str | None:
    """sha256 over the weight files of a local checkpoint folder; None when unknown."""
    if not folder:
        return None
    root = Path(folder)
    files = sorted(p for p in root.glob("*") if p.suffix in {".safetensors", ".bin", ".pt", ".gguf"})
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

    from . import __version__

    return {
        "evalkit": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "accelerate": accelerate.__version__,
        "platform": platform.platform(),
    }


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
) -> dict:
    """Build the record and its verdict. Any key item unknown -> not approved."""
    rec: dict = {
        "versions": versions(),
        "device": device,
        "dtype": dtype,
        "quantization": quantization,
        "target": {
            "folder": target_folder,
            "weights_digest": _files_digest(target_folder),
            "vocab_size": target_vocab_size,
            "tokenizer": tokenizer_fingerprint(target_tok) if target_tok is not None else None,
        },
        "draft": None,
        "verdict": "not_approved",
        "reasons": [],
    }
    if not draft_wanted:
        rec["reasons"].append("no draft requested (generation_path = ordinary or load_draft = false)")
        return rec
    rec["draft"] = {
        "folder": draft_folder,
        "weights_digest": _files_digest(draft_folder),
        "vocab_size": draft_vocab_size,
        "tokenizer": tokenizer_fingerprint(draft_tok) if draft_tok is not None else None,
    }
    unknown = [
        f"{role}.{key}"
        for role in ("target", "draft")
        for key in ("weights_digest", "vocab_size", "tokenizer")
        if rec[role][key] is None
    ]
    if unknown:
        rec["reasons"].append(f"unknown: {', '.join(unknown)} (download the models to a local folder or cache)")
        return rec
    t_fp, d_fp = rec["target"]["tokenizer"], rec["draft"]["tokenizer"]
    same_tok = t_fp["vocab_hash"] == d_fp["vocab_hash"] and t_fp["special_ids"] == d_fp["special_ids"]
    same_size = target_vocab_size == draft_vocab_size
    if same_tok and same_size:
        rec["verdict"] = "same_tokenizer"
        rec["reasons"].append("identical vocab, special ids and config vocab_size")
    elif same_tok:
        rec["verdict"] = "different_tokenizer"
        rec["reasons"].append(
            f"identical tokenizers but padded vocab sizes differ ({target_vocab_size} vs {draft_vocab_size}): "
            "Transformers routes this to Universal Assisted Generation, which needs tokenizer= and assistant_tokenizer="
        )
    elif allow_different_tokenizer:
        rec["verdict"] = "different_tokenizer"
        rec["reasons"].append("tokenizers differ; allowed by assistant.allow_different_tokenizer (Universal Assisted Generation)")
    else:
        diff = [k for k in ("vocab_hash", "special_ids") if t_fp[k] != d_fp[k]]
        rec["reasons"].append(
            f"tokenizers differ ({', '.join(diff)}); set assistant.allow_different_tokenizer = true to try "
            "Universal Assisted Generation, or pick a draft from the target's family"
        )
    if t_fp["chat_template_hash"] != d_fp["chat_template_hash"]:
        rec["reasons"].append("note: chat templates differ (the target's template frames the prompt)")
    return rec


def approved(rec: dict) -> bool:
    return rec.get("verdict") in ("same_tokenizer", "different_tokenizer")
