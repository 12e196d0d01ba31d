"""Loading the target and draft models: references, devices, dtypes, and the compatibility record."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .compat import CompatibilityRecord, assisted_allowed
from ..config import Config
from ..errors import EvalkitError

DEMO_PREFIX = "demo:"


def _offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as huggingface_hub reads it, or set since it was imported."""
    import os

    from huggingface_hub import constants

    return constants.HF_HUB_OFFLINE or any(
        os.environ.get(v, "").upper() in {"1", "ON", "YES", "TRUE"} for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def resolve_ref(ref: str, progress: bool = True, key: str = "models.target", revision: str = "") -> str:
    """"demo:target" / "demo:draft" -> the cached demo pair (built on first use); local paths are checked;
    a Hub id must be downloaded already when the Hub cannot be reached (HF_HUB_OFFLINE)."""
    if ref.startswith(DEMO_PREFIX):
        role = ref[len(DEMO_PREFIX):]
        if role not in ("target", "draft"):
            raise EvalkitError(f"unknown demo model '{ref}'", "use demo:target or demo:draft")
        from ..demo import ensure_demo_pair
        from ..locations import demo_models_dir

        return str(ensure_demo_pair(demo_models_dir(), progress=progress) / role)
    path = Path(ref).expanduser()
    looks_local = ref.startswith(("/", "./", "../", "~")) or path.exists() or ref.count("/") > 1
    if looks_local:
        if path.is_file():  # config.json or a weights file named instead of its folder
            holder = path.parent if (path.parent / "config.json").is_file() else None
            raise EvalkitError(
                f"{key} = '{ref}' is a file, but {key} takes a model's folder (the one save_pretrained wrote, holding "
                "config.json) or a Hub id",
                f"set {key} = '{holder}', the folder this file is in" if holder else
                f"set {key} to the folder that holds the model's config.json, weights and tokenizer files",
            )
        if not path.exists():
            raise EvalkitError(
                f"model folder {ref} does not exist ({key})",
                f"check the path (relative paths in a config file start with ./ and are read from the file's "
                f"folder); {key} must be a folder saved with save_pretrained, or a Hub id such as Qwen/Qwen2.5-0.5B-Instruct",
            )
        if not (path / "config.json").is_file():
            raise EvalkitError(
                f"{key} = '{ref}' has no config.json: it is not a Transformers checkpoint folder",
                "point it at the folder save_pretrained wrote (config.json, *.safetensors, tokenizer files), "
                "e.g. a snapshot folder of `hf download ORG/NAME --local-dir DIR`",
            )
        return str(path)
    if local_folder(ref, revision) is None and _offline():
        raise EvalkitError(
            f"{key} = '{ref}' is neither a local folder nor a model in the Hugging Face cache, and HF_HUB_OFFLINE=1 "
            "forbids downloading it",
            f"download it where there is network (`hf download {ref}`, then copy the cache folder "
            f"~/.cache/huggingface/hub or `hf download {ref} --local-dir DIR` and set {key} to that folder), "
            "or unset HF_HUB_OFFLINE",
        )
    return ref


def check_model_refs(cfg: Config) -> None:
    """The config's model references checked as loading the pair reads them (resolve_ref: a local folder must exist
    and hold config.json; a Hub id must be cached when HF_HUB_OFFLINE), with no model loaded and the demo pair not
    built. Commands call it before they make a new database file, so a missing folder leaves nothing behind."""
    m = cfg.models
    refs = [("models.target", m.target), ("models.target_tokenizer", m.target_tokenizer)]
    if cfg.assisted_enabled:
        refs += [("models.draft", m.draft), ("models.draft_tokenizer", m.draft_tokenizer)]
    for key, ref in refs:
        if ref and not ref.startswith(DEMO_PREFIX):
            path = resolve_ref(ref, False, key, m.revision)
            if not key.endswith("_tokenizer"):
                check_weights(path, key, m.revision)


_AGAIN = "`hf download ORG/NAME --local-dir DIR`, or model.save_pretrained(DIR)"


def check_weights(ref: str, key: str, revision: str = "") -> None:
    """A model's weights checked as far as can be done without loading them (compat.weights_problem): a local folder
    must hold a weights file; no shard its index names may be missing and no safetensors file damaged, locally or
    in the Hub cache. A Hub id whose snapshot lacks its weights or some shards is left to from_pretrained, which
    downloads them, unless HF_HUB_OFFLINE forbids it."""
    from .compat import WEIGHT_SUFFIXES, weight_files, weights_problem

    folder = local_folder(ref, revision)
    if folder is None:
        return
    hub = not Path(ref).is_dir()
    problem = weights_problem(folder, shards=not hub or _offline())
    if problem:
        raise EvalkitError(
            f"{key} folder {folder}: {problem}; the checkpoint is damaged or incomplete (an interrupted download or "
            "copy leaves files cut short)",
            f"download it again (`hf download {ref} --force-download`)" if hub else
            f"download or save the checkpoint again ({_AGAIN}) and point {key} at that folder",
        )
    if not hub and not weight_files(folder):
        raise EvalkitError(
            f"{key} folder {folder} has no weights file (looked for {', '.join('*' + s for s in WEIGHT_SUFFIXES)})",
            "copy the weights from the model's release into the folder (model.safetensors, or every "
            "model-0000N-of-0000M.safetensors shard with model.safetensors.index.json), or save the model there with "
            f"save_pretrained; or point {key} at the complete folder",
        )


# The offline demo pair (evalkit.demo) is reached through this module only: resolve_ref ("demo:target" /
# "demo:draft"), demo_stages (what building it still takes) and build_demo (`evalkit demo-models`).

def uses_demo(cfg: Config) -> bool:
    return any(ref.startswith(DEMO_PREFIX) for ref in (cfg.models.target, cfg.models.draft))


def demo_stages(cfg: Config) -> list[tuple[str, float]]:
    """The demo pair's build stages and their expected seconds, when this config uses the demo pair and it is not
    built yet ([] otherwise)."""
    from ..demo import expected_stages, is_complete
    from ..locations import demo_models_dir

    return expected_stages() if uses_demo(cfg) and not is_complete(demo_models_dir()) else []


def build_demo(out: Path | None = None, *, force: bool = False, scale: str = "full") -> tuple[Path, dict]:
    """Build (or, unless `force`, reuse) the demo pair in `out` (default: locations.demo_models_dir()); returns its
    folder (target/ and draft/ inside) and its build manifest."""
    from ..demo import build_demo_pair, ensure_demo_pair, read_manifest
    from ..locations import demo_models_dir

    out = Path(out) if out else demo_models_dir()
    path = build_demo_pair(out, force=True, scale=scale) if force else ensure_demo_pair(out, scale=scale)
    return path, read_manifest(path)


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


def pick_device(name: str, key: str = "models.device") -> str:
    """The torch device for a device setting (config.DEVICES); an EvalkitError naming `key` for one torch
    cannot place a model on here."""
    import torch

    from ..config import device_problem

    allowed = device_problem(name, key)
    if allowed:
        raise EvalkitError(f"{key} = {name!r} is not a device evalkit supports: it must be {allowed}",
                           f'set {key} to one of those, e.g. "auto" or "cpu"')
    if name != "auto":
        if name.startswith("cuda") and not torch.cuda.is_available():
            raise EvalkitError(f"{key} = {name!r} but CUDA is not available", f'set {key} = "auto" or "cpu"')
        if name.startswith("cuda:") and int(name[5:]) >= torch.cuda.device_count():
            raise EvalkitError(f"{key} = {name!r} but this machine has {torch.cuda.device_count()} CUDA device(s), "
                               f"numbered from 0", f'set {key} = "cuda:0" (or "auto")')
        if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise EvalkitError(f"{key} = 'mps' but MPS (Apple silicon) is not available", f'set {key} = "auto" or "cpu"')
        return name
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _dtype(name: str):
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def _from_pretrained(auto_class: str, ref: str, cfg: Config, what: str, key: str):
    """transformers.<auto_class>.from_pretrained(ref) at the config's revision, its failure said as what to fix."""
    import transformers

    try:
        return getattr(transformers, auto_class).from_pretrained(
            ref, revision=cfg.models.revision or None, trust_remote_code=cfg.models.trust_remote_code
        )
    except (OSError, ValueError) as e:
        raise EvalkitError(
            f"cannot read the {what} from '{ref}': {str(e).splitlines()[0]}",
            f"check {key}: a local folder saved with save_pretrained, or a Hub id already downloaded "
            "(`hf download ID`); without network, set HF_HUB_OFFLINE=1 to be told what is missing",
        )


# The files a tokenizer is saved as: the fast tokenizer's tokenizer.json, or tokenizer_config.json with its class's
# vocabulary files (BPE: vocab.json + merges.txt; SentencePiece: tokenizer.model or spiece.model; WordPiece: vocab.txt).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "tokenizer.model",
                   "spiece.model", "sentencepiece.bpe.model", "vocab.txt")


def load_tokenizer(ref: str, cfg: Config, role: str):
    own = getattr(cfg.models, f"{role}_tokenizer")
    key = f"models.{role}_tokenizer" if own else f"models.{role}"
    # a local folder with none of the files: Transformers would build an empty tokenizer or fail with a message
    # about converting slow tokenizers, depending on the class config.json names
    if Path(ref).is_dir() and not any((Path(ref) / f).is_file() for f in TOKENIZER_FILES):
        raise _no_tokenizer(key, role, ref, "has no tokenizer files (tokenizer.json, or tokenizer_config.json with "
                                            "vocab.json + merges.txt, tokenizer.model or vocab.txt)")
    tok = _from_pretrained("AutoTokenizer", ref, cfg, f"{role} tokenizer", f"models.{role}_tokenizer / models.{role}")
    # Refuse a tokenizer whose every token is special: from a folder whose files hold no vocabulary (or a Hub
    # snapshot without them) Transformers builds the class with none (one <|endoftext|> token for Qwen2), and evalkit
    # would then report two tokenizers that differ, or the target would fail inside generate()
    vocab = tok.get_vocab()
    if not set(vocab.values()) - set(tok.all_special_ids):
        folder = local_folder(ref, cfg.models.revision)
        found = [f for f in TOKENIZER_FILES if folder and (Path(folder) / f).is_file()]
        raise _no_tokenizer(key, role, folder or ref,
                            (f"holds tokenizer files ({', '.join(found)}) but no vocabulary" if found else
                             "has no tokenizer files") + f": Transformers made an empty {type(tok).__name__} from it "
                            f"({len(vocab)} token(s), all special)")
    return tok


def _no_tokenizer(key: str, role: str, folder: str, what: str) -> EvalkitError:
    own = key.endswith("_tokenizer")
    return EvalkitError(
        f"{key} folder {folder} {what}",
        "copy the tokenizer files from the model's release into the folder (tokenizer.save_pretrained(DIR) writes "
        f"them), or {'point' if own else 'set'} models.{role}_tokenizer {'at' if own else 'to'} a folder that has them"
        + ("" if own or role == "target" else " (the target's folder, when the draft shares its tokenizer)"),
    )


def load_model_config(ref: str, cfg: Config, role: str):
    return _from_pretrained("AutoConfig", ref, cfg, f"{role} model config", f"models.{role}")


def _device_key(name: str):
    name = name.strip()
    return int(name) if name.isdigit() else name  # accelerate wants GPU indices as ints, "cpu"/"disk" as str


def load_model(ref: str, cfg: Config, role: str, device: str, device_map: str = ""):
    import torch
    from safetensors import SafetensorError
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
    except SafetensorError as e:  # a weights file damaged past what check_weights reads of it
        raise EvalkitError(
            f"models.{role} = '{ref}': its weights cannot be read ({str(e).splitlines()[0]}); the checkpoint is "
            "damaged or incomplete",
            f"download or save the checkpoint again ({_AGAIN}) and point models.{role} at that folder",
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


def placement_kinds(*placements: dict) -> str:
    """The device kinds weights sat on (placement's keys), sorted and joined by "+": "cuda" for a pair wholly on GPUs,
    "cpu+cuda" for a target a device_map split with CPU offload, or a draft on the CPU beside a target on a GPU. A
    split pair is other hardware than an unsplit one: its speed and memory never stand for it (aggregate.data)."""
    from .speed import device_kind

    return "+".join(sorted({device_kind(k) for p in placements for k in p}))


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
    compat: CompatibilityRecord
    draft: object | None = None
    draft_tokenizer: object | None = None
    load_seconds: dict = field(default_factory=dict)  # {"target": s, "draft": s}
    draft_error: dict | None = None  # a failed draft load: class, stage, message
    rank: int = 0  # process rank under `accelerate launch`

    @property
    def draft_device(self) -> str:
        return self.cfg.models.draft_device or self.device

    @property
    def devices(self) -> str:
        """The device kinds this pair's loaded weights sit on, target and draft (placement_kinds): what a run used."""
        return placement_kinds(placement(self.target), placement(self.draft) if self.draft is not None else {})


def check_compat(cfg: Config, progress: bool = True, target_tok=None) -> CompatibilityRecord:
    """The compatibility record from tokenizers and model configs (no weights are loaded)."""
    from .compat import compatibility_record

    device = pick_device(cfg.models.device)
    t_ref = resolve_ref(cfg.models.target, progress, "models.target", cfg.models.revision)
    check_weights(t_ref, "models.target", cfg.models.revision)
    t_tok = target_tok or load_tokenizer(tokenizer_ref(cfg, "target", progress), cfg, "target")
    t_conf = load_model_config(t_ref, cfg, "target")
    draft_wanted = cfg.assisted_enabled
    d_ref = d_tok = d_conf = None
    if draft_wanted:
        d_ref = resolve_ref(cfg.models.draft, progress, "models.draft", cfg.models.revision)
        check_weights(d_ref, "models.draft", cfg.models.revision)
        d_tok = load_tokenizer(tokenizer_ref(cfg, "draft", progress), cfg, "draft")
        d_conf = load_model_config(d_ref, cfg, "draft")
    rec = compatibility_record(
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
        decoding=cfg.decoding.mode,
        target_config=t_conf,
        draft_config=d_conf,
        top_p=cfg.decoding.top_p,
    )
    rec.prompt_format = resolved_prompt_format(cfg, t_tok)
    rec.reasons.append("prompts are framed by " + ("the target tokenizer's chat template (one user turn)"
                                                   if rec.prompt_format == "chat" else "the plain frame"))
    if draft_wanted:
        _check_chat_templates(rec, t_tok, d_tok, cfg)
    return rec


def tokenizer_ref(cfg: Config, role: str, progress: bool = True) -> str:
    """Where a role's tokenizer comes from: models.<role>_tokenizer when set, else the model itself."""
    own = getattr(cfg.models, f"{role}_tokenizer")
    key = f"models.{role}_tokenizer" if own else f"models.{role}"
    return resolve_ref(own or getattr(cfg.models, role), progress, key, cfg.models.revision)


def resolved_prompt_format(cfg: Config, tokenizer) -> str:
    """"chat" or "plain": decoding.prompt_format with "auto" decided by the target tokenizer's chat template."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    fmt = cfg.decoding.prompt_format
    if fmt == "auto":
        return "chat" if has_template else "plain"
    if fmt == "chat" and not has_template:
        raise EvalkitError("decoding.prompt_format = 'chat' but the target tokenizer has no chat template",
                           'use "plain" or "auto", or set models.target_tokenizer to a tokenizer that has one')
    return fmt


def _check_chat_templates(rec: CompatibilityRecord, target_tok, draft_tok, cfg: Config) -> None:
    """A draft that shares the target's tokenizer but carries another chat template was made for another
    conversation format (another release or variant of the family): it would draft for prompts framed the way
    it never saw. Refuse it, with the fix. Drafts without a template (base models) and drafts from another
    family (Universal Assisted Generation: they read the prompt as text) are allowed."""
    t_template = getattr(target_tok, "chat_template", None)
    d_template = getattr(draft_tok, "chat_template", None)
    if rec.prompt_format != "chat" or not d_template or d_template == t_template:
        return
    t_fp, d_fp = rec.target.tokenizer, rec.draft.tokenizer
    if t_fp["vocab_hash"] != d_fp["vocab_hash"]:
        return
    raise EvalkitError(
        f"the draft's chat template differs from the target's (template {d_fp['chat_template_hash']} in "
        f"{rec.draft.folder or cfg.models.draft} vs {t_fp['chat_template_hash']} in "
        f"{rec.target.folder or cfg.models.target}): the draft was tuned for another conversation format, "
        "so its drafts would be judged against prompts framed the way it never saw",
        "use the draft from the target's own family and release (same chat_template in tokenizer_config.json or "
        "chat_template.jinja); if this draft really was trained on the target's format, set "
        "models.draft_tokenizer to the target's folder; or set decoding.prompt_format = \"plain\"",
    )


def load_pair(cfg: Config, progress: bool = True, with_draft: bool | None = None, device: str | None = None,
              rank: int = 0, step=None) -> ModelPair:
    """Load the target (always) and the draft (only when switched on and approved).

    `with_draft=False` forces a target-only process (the benchmark's ordinary worker). A draft that fails to
    load does not stop the target: it is kept as `draft_error` so the assisted path records a load failure
    and falls back. `step(name, n, total)`, when given, is called as each step begins: "check" (the compatibility
    record; the demo pair's build, when it is missing, happens in it), "target", "draft" (a page shows what is loading:
    a real pair's weights take minutes; total counts the draft when it is switched on).
    """
    wants_draft = cfg.assisted_enabled and with_draft is not False
    total = 3 if wants_draft else 2
    step = step or (lambda name, n, total: None)
    device = device or pick_device(cfg.models.device)
    if cfg.models.draft_device and wants_draft:  # before the target loads
        pick_device(cfg.models.draft_device, "models.draft_device")
    step("check", 1, total)
    compat = check_compat(cfg, progress)
    t_ref = resolve_ref(cfg.models.target, progress, "models.target", cfg.models.revision)
    tokenizer = load_tokenizer(tokenizer_ref(cfg, "target", progress), cfg, "target")
    step("target", 2, total)
    t0 = time.perf_counter()
    target = load_model(t_ref, cfg, "target", device, cfg.models.device_map)
    pair = ModelPair(cfg=cfg, target=target, tokenizer=tokenizer, device=device, compat=compat, rank=rank)
    pair.load_seconds["target"] = time.perf_counter() - t0
    if assisted_allowed(cfg, compat) and with_draft is not False:
        d_ref = resolve_ref(cfg.models.draft, progress, "models.draft", cfg.models.revision)
        step("draft", 3, total)
        t0 = time.perf_counter()
        try:
            pair.draft = load_model(d_ref, cfg, "draft", pair.draft_device)
            pair.draft_tokenizer = load_tokenizer(tokenizer_ref(cfg, "draft", progress), cfg, "draft")
        except EvalkitError as e:
            pair.draft = None
            pair.draft_error = {"error_class": "DraftLoadError", "error_stage": "load", "error_message": str(e)}
        pair.load_seconds["draft"] = time.perf_counter() - t0
    return pair
