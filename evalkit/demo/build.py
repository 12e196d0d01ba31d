"""Building the demo pair: the recipes, the cached, atomic build (a temporary sibling folder renamed at the end,
`manifest.json` written last), and the stage timings the app's progress page estimates from.

A folder without a manifest, or with another build version or scale, is an interrupted or stale build and is
rebuilt. Heavy imports (torch, transformers, tokenizers) happen inside the functions."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from . import checkpoint, train
from .tokenizer import SPECIAL_TOKENS, encode_samples, train_tokenizer, wrap_tokenizer

# Bump when anything that changes the built models changes (corpus, tokenizer, sizes, training).
BUILD_VERSION = "demo-pair-3"
MANIFEST = "manifest.json"

# Build recipes. "full" is the real demo pair; "smoke" is a reduced pair for tests (< 60 s on 2 cores).
SCALES: dict[str, dict] = {
    "full": {
        "corpus_seed": 20240611,  # corpus.generate_corpus seed
        "corpus_size": 6000,  # samples generated (training shuffles them, epoch after epoch)
        # English at twice the weight of each Chinese shape: byte-level English needs more tokens and
        # more examples than Chinese before the target writes it cleanly.
        "shape_weights": {"notice": 1.0, "summary": 1.0, "rewrite": 1.0, "email": 1.0, "english": 2.0},
        "vocab_size": 2000,  # BPE vocab: common CJK characters and words get their own tokens, like a real LLM tokenizer
        "init_seed": 1234,  # torch seed for both models' initialisation and data order
        # target: deep and fairly narrow (on a CPU, depth is what costs per decoded token)
        "target": {"layers": 16, "hidden": 256, "heads": 4, "intermediate": 688},
        # The target is trained shallow first (fast), then grown to its full depth by block expansion
        # (each trained block followed by copies whose output projections start at zero, so the grown
        # model computes the same function), then all 16 blocks are fine-tuned together.
        "target_core_layers": 4,
        # shallow core: larger batches than the later stages; on 2 cores they process more tokens per
        # second, and the target conditions on the material better (fewer dropped facts) in the same time
        "target_steps": 1250,
        "target_batch_tokens": 1024,
        "target_expand_steps": 150,  # full depth, after growing
        # draft: one layer, narrow: a small fraction of the target's per-token cost
        "draft": {"layers": 1, "hidden": 128, "heads": 2, "intermediate": 384},
        "draft_steps": 2400,
        # then distilled on the target (KL to its next-token distribution, output positions only)
        "draft_distill_steps": 1200,
        "batch_tokens": 256,  # padded tokens per step: small batches, many steps (templated text)
        "target_lr": 3e-3,
        "expand_lr": 1e-3,
        "draft_lr": 3e-3,
        "distill_lr": 1e-3,
        "warmup": 20,
    },
    "smoke": {
        "corpus_seed": 7,
        "corpus_size": 200,
        "vocab_size": 500,
        "init_seed": 1234,
        "target": {"layers": 2, "hidden": 64, "heads": 2, "intermediate": 160},
        "target_core_layers": 1,
        "target_steps": 6,
        "target_expand_steps": 2,
        "draft": {"layers": 1, "hidden": 32, "heads": 1, "intermediate": 64},
        "draft_steps": 6,
        "draft_distill_steps": 3,
        "batch_tokens": 768,
        "target_lr": 3e-3,
        "expand_lr": 1e-3,
        "draft_lr": 3e-3,
        "distill_lr": 1e-3,
        "warmup": 2,
    },
}

# Written into the draft's generation_config (Transformers reads assistant settings from there).
ASSISTANT_DEFAULTS = {  # the `evalkit tune` winner for this pair (configs/demo.toml says how it was found)
    "num_assistant_tokens": 6,
    "num_assistant_tokens_schedule": "heuristic",
    "assistant_confidence_threshold": 0.0,
}

# --------------------------------------------------------------------------- public API


def read_manifest(out_dir: Path) -> dict | None:
    """The manifest of a finished build, or None (missing, unreadable: an interrupted build)."""
    try:
        return json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_complete(out_dir: Path, scale: str = "full") -> bool:
    """True when out_dir holds a finished build of this build version and scale."""
    out_dir = Path(out_dir)
    m = read_manifest(out_dir)
    if not m or m.get("build_version") != BUILD_VERSION or m.get("scale") != scale:
        return False
    return all((out_dir / name / "config.json").is_file() for name in ("target", "draft"))


# Seconds each stage of the full build takes on the build machine (2 CPU cores, quiet; from a build's bar timings,
# scaled to its 7 min 51 s total), by progress bar: what the app's progress page estimates the rest of the build
# from (evalkit.progress scales it to the machine it runs on as stages finish).
EXPECTED_STAGE_SECONDS = [
    ("demo corpus", 1.0), ("demo tokenizer", 2.0), ("train target", 290.0), ("train target (16 layers)", 64.0),
    ("train draft", 28.0), ("distil draft on target", 85.0),
]


def expected_stages() -> list[tuple[str, float]]:
    return list(EXPECTED_STAGE_SECONDS)


def ensure_demo_pair(out_dir: Path, progress: bool = True, *, scale: str = "full") -> Path:
    """Return out_dir holding a complete demo pair, building it first when needed (cached)."""
    out_dir = Path(out_dir)
    if is_complete(out_dir, scale):
        return out_dir
    return build_demo_pair(out_dir, force=True, scale=scale, progress=progress)


def _quiet_saves() -> None:
    """No bar of Transformers' own for writing a model's shards: it redrew itself with carriage returns among our
    lines in a log (`./scripts/start.sh > log 2>&1`), and a file of a few MB takes no time worth a bar."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def build_demo_pair(out_dir: Path, *, force: bool = False, scale: str = "full", progress: bool = True) -> Path:
    """Train the target and draft and save them to out_dir/target and out_dir/draft.

    Without `force`, a complete build of this version and scale is kept as is.
    """
    out_dir = Path(out_dir)
    if scale not in SCALES:
        from ..errors import EvalkitError

        raise EvalkitError(f"unknown demo scale '{scale}'", f"use one of {', '.join(SCALES)}")
    if not force and is_complete(out_dir, scale):
        return out_dir
    recipe = SCALES[scale]
    from ..errors import output_folder

    where = "--out (or EVALKIT_DEMO_MODELS)"
    _check_replaceable(out_dir, where)  # before the build: refused in a second, not after ten minutes of training
    output_folder(out_dir.parent, "the demo pair", where)
    _remove_stale_builds(out_dir)
    tmp = out_dir.parent / f".{out_dir.name}.building-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    output_folder(tmp, "the demo pair's build", where)
    t0 = time.perf_counter()
    try:
        info = _build_into(tmp, scale, recipe, progress, checkpoint.path_for(out_dir))
        # Swap the finished folder in: old (stale or interrupted) content goes aside first.
        if out_dir.exists():
            trash = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
            os.replace(out_dir, trash)
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    info["seconds"] = round(time.perf_counter() - t0, 1)
    _write_manifest(out_dir, info)
    checkpoint.path_for(out_dir).unlink(missing_ok=True)  # finished: nothing left to resume
    return out_dir


# What a build puts in its folder; a folder holding anything else is not ours to replace.
BUILD_ENTRIES = {"target", "draft", MANIFEST}


def _check_replaceable(out_dir: Path, where: str) -> None:
    """The build replaces out_dir as a whole: only when it is missing, empty, or an earlier build (nothing but
    target/, draft/ and the manifest). A file, or a folder with anything else in it (a mistyped --out pointing at
    someone's work), is refused with nothing touched."""
    from ..errors import EvalkitError

    if not out_dir.exists() and not out_dir.is_symlink():
        return
    if not out_dir.is_dir() or out_dir.is_symlink():
        raise EvalkitError(f"{out_dir} is {'a link' if out_dir.is_symlink() else 'a file'}, not a folder for the demo "
                           "pair; the build replaces its folder as a whole", f"pass {where} a new or empty folder")
    others = sorted(p.name for p in out_dir.iterdir() if p.name not in BUILD_ENTRIES)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise EvalkitError(f"{out_dir} holds files that are not a demo build ({shown}); the build replaces its "
                           "folder as a whole, so it was left untouched",
                           f"pass {where} a new or empty folder, or one an earlier build made")


# --------------------------------------------------------------------------- build steps


def _remove_stale_builds(out_dir: Path) -> None:
    """Delete temp folders left by killed builds (their process is gone)."""
    for p in out_dir.parent.glob(f".{out_dir.name}.*-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
        except (ValueError, PermissionError, OSError):
            continue


def _write_manifest(out_dir: Path, info: dict) -> None:
    tmp = out_dir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / MANIFEST)


def _stages(recipe: dict) -> list[str]:
    """The training stages' bar names, in the build's order (a checkpoint's stage is placed by them)."""
    grown = recipe.get("target_core_layers", recipe["target"]["layers"]) != recipe["target"]["layers"]
    return (["train target"] + [f"train target ({recipe['target']['layers']} layers)"] * grown + ["train draft"]
            + ["distil draft on target"] * bool(recipe.get("draft_distill_steps")))


def _build_into(folder: Path, scale: str, recipe: dict, progress: bool, saved_at: Path) -> dict:
    import torch

    from . import corpus as corpus_mod

    timings: dict[str, float] = {}
    t = time.perf_counter()
    with train.progress_bar(progress, total=recipe["corpus_size"], desc="demo corpus", unit="text") as bar:
        samples = []
        for s in corpus_mod.generate_corpus(recipe["corpus_seed"], recipe["corpus_size"], recipe.get("shape_weights")):
            samples.append(s)
            bar.update(1)
    timings["corpus"] = time.perf_counter() - t

    t = time.perf_counter()
    with train.progress_bar(progress, total=1, desc="demo tokenizer", unit="step") as bar:
        raw_tok = train_tokenizer([s.text for s in samples], recipe["vocab_size"])
        hf_tok = wrap_tokenizer(raw_tok)
        bar.update(1)
    timings["tokenizer"] = time.perf_counter() - t
    examples = encode_samples(raw_tok, samples)
    ck = checkpoint.Checkpoint(saved_at, checkpoint.settings(BUILD_VERSION, scale, recipe, examples), _stages(recipe))

    threads = torch.get_num_threads()
    sizes = {}
    target = None
    for role in ("target", "draft"):
        t = time.perf_counter()
        size = recipe[role]
        core = recipe.get("target_core_layers", size["layers"]) if role == "target" else size["layers"]
        if ck.finished(role) is not None:  # trained before a stop: the draft's training was under way
            model = train.make_model(size, len(raw_tok.get_vocab()), seed=recipe["init_seed"])
            model.load_state_dict(ck.finished(role))
        else:
            model = _train_role(role, recipe, examples, len(raw_tok.get_vocab()), target, ck, progress)
            if role == "target":  # kept while the draft trains (its teacher, and what the build saves)
                ck.finish(role, model)
        model.eval()
        model.generation_config = _generation_config(role)
        dest = folder / role
        _quiet_saves()
        model.save_pretrained(dest)
        hf_tok.save_pretrained(dest)
        timings[f"train_{role}"] = time.perf_counter() - t
        n_params = sum(p.numel() for p in model.parameters())
        disk = sum(f.stat().st_size for f in dest.iterdir() if f.is_file())
        sizes[role] = {**size, "params": n_params, "disk_bytes": disk}
        if role == "target":
            sizes[role]["trained_core_layers"] = core
            target = model
    del target
    torch.set_num_threads(threads)
    return {
        "build_version": BUILD_VERSION,
        "scale": scale,
        "seeds": {"corpus": recipe["corpus_seed"], "init": recipe["init_seed"]},
        "corpus_size": len(samples),
        "corpus_tokens": int(sum(len(ids) for ids, _ in examples)),
        "vocab_size": len(raw_tok.get_vocab()),
        "sizes": sizes,
        "steps": {k: recipe.get(k, 0) for k in ("target_steps", "target_expand_steps", "draft_steps", "draft_distill_steps")},
        "batch_tokens": recipe["batch_tokens"],
        "target_batch_tokens": recipe.get("target_batch_tokens", recipe["batch_tokens"]),
        "stage_seconds": {k: round(v, 1) for k, v in timings.items()},
        "assistant_defaults": ASSISTANT_DEFAULTS,
        "torch_threads": threads,
    }


def _train_role(role: str, recipe: dict, examples, vocab: int, target, ck, progress: bool):
    """One model's training, stage after stage, each resumed from the checkpoint where it was stopped."""
    size = recipe[role]
    seed = recipe["init_seed"] + (0 if role == "target" else 1)
    core = recipe.get("target_core_layers", size["layers"]) if role == "target" else size["layers"]
    common = dict(batch_tokens=recipe["batch_tokens"], warmup=recipe["warmup"], progress=progress)
    model = train.make_model({**size, "layers": core}, vocab, seed=seed)
    first = {**common, "batch_tokens": recipe.get(f"{role}_batch_tokens", recipe["batch_tokens"])}
    desc = f"train {role}"
    train.train_model(model, examples, steps=recipe[f"{role}_steps"], lr=recipe[f"{role}_lr"], seed=seed, desc=desc,
                      checkpoint=ck.stage(desc), **first)
    if core != size["layers"]:
        model = train.expand_depth(model, size, seed=seed)
        desc = f"train {role} ({size['layers']} layers)"
        train.train_model(model, examples, steps=recipe["target_expand_steps"], lr=recipe["expand_lr"], seed=seed + 100,
                          desc=desc, checkpoint=ck.stage(desc), **common)
    if role == "draft" and recipe.get("draft_distill_steps"):
        desc = "distil draft on target"
        train.train_model(model, examples, steps=recipe["draft_distill_steps"], lr=recipe["distill_lr"], seed=seed + 200,
                          desc=desc, teacher=target, checkpoint=ck.stage(desc), **common)
    return model


def _generation_config(role: str):
    from transformers import GenerationConfig

    extra = ASSISTANT_DEFAULTS if role == "draft" else {}
    return GenerationConfig(
        bos_token_id=SPECIAL_TOKENS.index("<s>"),
        eos_token_id=SPECIAL_TOKENS.index("</s>"),
        pad_token_id=SPECIAL_TOKENS.index("<pad>"),
        do_sample=True,
        temperature=0.7,
        **extra,
    )
