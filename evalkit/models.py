"""Loading the target and draft models: references, devices, dtypes, and the compatibility record."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import Config
from .errors import EvalkitError

DEMO_PREFIX = "demo:"


def resolve_ref(ref: str, progress: bool = True) -> str:
    """"demo:target" / "demo:draft" -> the cached demo pair (built on first use); local paths are checked."""
    if ref.startswith(DEMO_PREFIX):
        role = ref[len(DEMO_PREFIX):]
        if role not in ("target", "draft"):
            raise EvalkitError(f"unknown demo model '{ref}'", "use demo:target or demo:draft")
        from .demo import ensure_demo_pair
        from .locations import demo_models_dir

        return str(ensure_demo_pair(demo_models_dir(), progress=progress) / role)
    looks_local = ref.startswith(("/", "./", "../", "~")) or Path(ref).exists() or ref.count("/") > 1
    if looks_local:
        path = Path(ref).expanduser()
        if not (path / "config.json").is_file():
            raise EvalkitError(
                f"model path {ref} does not exist or has no config.json",
                "point models.target / models.draft at a folder saved with save_pretrained, or use a Hub id",
            )
        return str(path)
    return ref


def local_folder(ref: str, revision: str = "") -> str | None:
    """The folder holding a model's files: the path itself, or its Hub cache snapshot. None when unknown."""
    if Path(ref).is_dir():
        return ref
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(ref, "config.json", revision=revision or None)
        return str(Path(hit).parent) if isinstance(hit, str) else None
    except Exception:
        return None


def pick_device(name: str) -> str:
    import torch

    if name != "auto":
        if name.startswith("cuda") and not torch.cuda.is_available():
            raise EvalkitError(f"models.device = {name!r} but CUDA is not available", 'set models.device = "auto" or "cpu"')
        return name
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _dtype(name: str):
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def load_tokenizer(ref: str, cfg: Config, role: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(
            ref, revision=cfg.models.revision or None, trust_remote_code=cfg.models.trust_remote_code
        )
    except (OSError, ValueError) as e:
        raise EvalkitError(
            f"cannot load the {role} tokenizer from '{ref}': {str(e).splitlines()[0]}",
            f"check models.{role}_tokenizer / models.{role} (a local folder, or a Hub id already downloaded)",
        )


def load_model_config(ref: str, cfg: Config, role: str):
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(
            ref, revision=cfg.models.revision or None, trust_remote_code=cfg.models.trust_remote_code
        )
    except (OSError, ValueError) as e:
        raise EvalkitError(
            f"cannot read the {role} model config from '{ref}': {str(e).splitlines()[0]}",
            f"check models.{role} (a local folder, or a Hub id already downloaded)",
        )


def _device_key(name: str):
    name = name.strip()
    return int(name) if name.isdigit() else name  # accelerate wants GPU indices as ints, "cpu"/"disk" as str


def load_model(ref: str, cfg: Config, role: str, device: str, device_map: str = ""):
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-tensor loading bars drown our own progress output
    placement = {}
    if device_map:  # accelerate's big-model inference: split over devices, then CPU, then disk
        placement = {"device_map": device_map}
        if cfg.models.max_memory:
            placement["max_memory"] = {_device_key(k): v.strip() for k, _, v in (e.partition("=") for e in cfg.models.max_memory)}
        if cfg.models.offload_folder:
            placement["offload_folder"] = cfg.models.offload_folder
    try:
        model = AutoModelForCausalLM.from_pretrained(
            ref,
            dtype=_dtype(cfg.models.dtype),
            revision=cfg.models.revision or None,
            trust_remote_code=cfg.models.trust_remote_code,
            **placement,
        )
        if not device_map:
            model = model.to(device)
    except torch.OutOfMemoryError:
        raise EvalkitError(
            f"out of memory loading the {role} model '{ref}' on {device}",
            'use a smaller model or dtype, set models.device_map = "auto", or load_draft = false',
        )
    except (OSError, ValueError) as e:
        msg = str(e).splitlines()[0]
        fix = f"check models.{role} (a local folder saved with save_pretrained, or a Hub id already downloaded)"
        if device_map and "offload" in msg:
            fix = "the model does not fit the devices: raise models.max_memory, or set models.offload_folder to offload to disk"
        raise EvalkitError(f"cannot load the {role} model from '{ref}': {msg}", fix)
    model.eval()
    return model


def placement(model) -> dict[str, float]:
    """MB of weights per device ("cuda:0", "cpu", "disk"): where accelerate's device_map put the model."""
    mb = 1 / (1 << 20)
    dmap = getattr(model, "hf_device_map", None)
    out: dict[str, float] = {}
    seen: set[int] = set()  # tied weights (embeddings / lm_head) count once

    def add(key: str, params) -> None:
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                out[key] = out.get(key, 0.0) + p.numel() * p.element_size() * mb

    if dmap:  # offloaded parameters sit on "meta" in the module, so read the map, not the tensors
        for name, dev in dmap.items():
            add(f"cuda:{dev}" if isinstance(dev, int) else str(dev), (model.get_submodule(name) if name else model).parameters())
    else:
        for p in model.parameters():
            add(str(p.device), [p])
    return {k: round(v, 3) for k, v in out.items()}


def _vocab_size(model_config) -> int | None:
    try:
        return int(model_config.get_text_config().vocab_size)
    except Exception:
        return None


@dataclass
class ModelPair:
    """The loaded models, the tokenizers and what is known about them."""

    cfg: Config
    target: object
    tokenizer: object
    device: str
    compat: dict
    draft: object | None = None
    draft_tokenizer: object | None = None
    load_seconds: dict = field(default_factory=dict)  # {"target": s, "draft": s}
    draft_error: dict | None = None  # a failed draft load: class, stage, message
    rank: int = 0  # process rank under `accelerate launch`

    @property
    def draft_device(self) -> str:
        return self.cfg.models.draft_device or self.device


def check_compat(cfg: Config, progress: bool = True, target_tok=None) -> dict:
    """The compatibility record from tokenizers and model configs (no weights are loaded)."""
    from .compat import compatibility_record

    device = pick_device(cfg.models.device)
    t_ref = resolve_ref(cfg.models.target, progress)
    t_tok = target_tok or load_tokenizer(resolve_ref(cfg.models.target_tokenizer, progress) if cfg.models.target_tokenizer else t_ref, cfg, "target")
    t_conf = load_model_config(t_ref, cfg, "target")
    draft_wanted = cfg.assisted_enabled
    d_ref = d_tok = d_conf = None
    if draft_wanted:
        d_ref = resolve_ref(cfg.models.draft, progress)
        d_tok = load_tokenizer(resolve_ref(cfg.models.draft_tokenizer, progress) if cfg.models.draft_tokenizer else d_ref, cfg, "draft")
        d_conf = load_model_config(d_ref, cfg, "draft")
    return compatibility_record(
        target_tok=t_tok,
        draft_tok=d_tok,
        target_vocab_size=_vocab_size(t_conf),
        draft_vocab_size=_vocab_size(d_conf) if d_conf is not None else None,
        target_folder=local_folder(t_ref, cfg.models.revision),
        draft_folder=local_folder(d_ref, cfg.models.revision) if d_ref else None,
        device=device,
        dtype=cfg.models.dtype,
        quantization=cfg.models.quantization,
        allow_different_tokenizer=cfg.assistant.allow_different_tokenizer,
        draft_wanted=draft_wanted,
    )


def load_pair(cfg: Config, progress: bool = True, with_draft: bool | None = None, device: str | None = None,
              rank: int = 0) -> ModelPair:
    """Load the target (always) and the draft (only when switched on and approved).

    `with_draft=False` forces a target-only process (the benchmark's ordinary worker). A draft that fails to
    load does not stop the target: it is kept as `draft_error` so the assisted path records a load failure
    and falls back.
    """
    from .compat import approved

    device = device or pick_device(cfg.models.device)
    compat = check_compat(cfg, progress)
    t_ref = resolve_ref(cfg.models.target, progress)
    tokenizer = load_tokenizer(resolve_ref(cfg.models.target_tokenizer, progress) if cfg.models.target_tokenizer else t_ref, cfg, "target")
    t0 = time.perf_counter()
    target = load_model(t_ref, cfg, "target", device, cfg.models.device_map)
    pair = ModelPair(cfg=cfg, target=target, tokenizer=tokenizer, device=device, compat=compat, rank=rank)
    pair.load_seconds["target"] = time.perf_counter() - t0
    want_draft = cfg.assisted_enabled if with_draft is None else (with_draft and cfg.assisted_enabled)
    if want_draft and approved(compat):
        d_ref = resolve_ref(cfg.models.draft, progress)
        t0 = time.perf_counter()
        try:
            pair.draft = load_model(d_ref, cfg, "draft", pair.draft_device)
            pair.draft_tokenizer = load_tokenizer(
                resolve_ref(cfg.models.draft_tokenizer, progress) if cfg.models.draft_tokenizer else d_ref, cfg, "draft"
            )
        except EvalkitError as e:
            pair.draft = None
            pair.draft_error = {"error_class": "DraftLoadError", "error_stage": "load", "error_message": str(e)}
        pair.load_seconds["draft"] = time.perf_counter() - t0
    return pair
