"""The offline demo model pair: a target and a draft trained here, from nothing, in minutes on a CPU.

No model can be downloaded where evalkit is developed and tested, yet the whole experiment (measure,
judge, decide) needs a real target/draft pair. So we train one, deterministically:

1. a templated writing corpus (`evalkit.corpus`, seeded),
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

Building is atomic: everything goes into a temporary sibling folder that is renamed at the end, and
`manifest.json` is written last (tmp file + os.replace). A folder without a manifest, or with another
build version or scale, is an interrupted or stale build and is rebuilt.

Heavy imports (torch, transformers, tokenizers) happen inside the functions.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import time
from pathlib import Path

# Bump when anything that changes the built models changes (corpus, tokenizer, sizes, training).
BUILD_VERSION = "demo-pair-3"
MANIFEST = "manifest.json"

# Special tokens, in id order: <pad>=0, <s>=1, </s>=2, <unk>=3.
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]

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

MAX_POSITIONS = 1024


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


def build_demo_pair(out_dir: Path, *, force: bool = False, scale: str = "full", progress: bool = True) -> Path:
    """Train the target and draft and save them to out_dir/target and out_dir/draft.

    Without `force`, a complete build of this version and scale is kept as is.
    """
    out_dir = Path(out_dir)
    if scale not in SCALES:
        from .errors import EvalkitError

        raise EvalkitError(f"unknown demo scale '{scale}'", f"use one of {', '.join(SCALES)}")
    if not force and is_complete(out_dir, scale):
        return out_dir
    recipe = SCALES[scale]
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_builds(out_dir)
    tmp = out_dir.parent / f".{out_dir.name}.building-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    t0 = time.perf_counter()
    try:
        info = _build_into(tmp, scale, recipe, progress)
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
    return out_dir


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


def _bar(progress: bool, **kw):
    from .progress import bar

    return bar(disable=not progress, **kw)


def _build_into(folder: Path, scale: str, recipe: dict, progress: bool) -> dict:
    import torch

    from . import corpus as corpus_mod

    timings: dict[str, float] = {}
    t = time.perf_counter()
    with _bar(progress, total=recipe["corpus_size"], desc="demo corpus", unit="text") as bar:
        samples = []
        for s in corpus_mod.generate_corpus(recipe["corpus_seed"], recipe["corpus_size"], recipe.get("shape_weights")):
            samples.append(s)
            bar.update(1)
    timings["corpus"] = time.perf_counter() - t

    t = time.perf_counter()
    with _bar(progress, total=1, desc="demo tokenizer", unit="step") as bar:
        raw_tok = train_tokenizer([s.text for s in samples], recipe["vocab_size"])
        hf_tok = wrap_tokenizer(raw_tok)
        bar.update(1)
    timings["tokenizer"] = time.perf_counter() - t
    examples = encode_samples(raw_tok, samples)

    threads = torch.get_num_threads()
    sizes = {}
    target = None
    for role in ("target", "draft"):
        t = time.perf_counter()
        size = recipe[role]
        seed = recipe["init_seed"] + (0 if role == "target" else 1)
        core = recipe.get("target_core_layers", size["layers"]) if role == "target" else size["layers"]
        common = dict(batch_tokens=recipe["batch_tokens"], warmup=recipe["warmup"], progress=progress)
        model = make_model({**size, "layers": core}, len(raw_tok.get_vocab()), seed=seed)
        first = {**common, "batch_tokens": recipe.get(f"{role}_batch_tokens", recipe["batch_tokens"])}
        train_model(model, examples, steps=recipe[f"{role}_steps"], lr=recipe[f"{role}_lr"], seed=seed, desc=f"train {role}", **first)
        if core != size["layers"]:
            model = expand_depth(model, size, seed=seed)
            train_model(
                model, examples, steps=recipe["target_expand_steps"], lr=recipe["expand_lr"], seed=seed + 100,
                desc=f"train {role} ({size['layers']} layers)", **common,
            )
        if role == "draft" and recipe.get("draft_distill_steps"):
            train_model(
                model, examples, steps=recipe["draft_distill_steps"], lr=recipe["distill_lr"], seed=seed + 200,
                desc="distil draft on target", teacher=target, **common,
            )
        model.eval()
        model.generation_config = _generation_config(role)
        dest = folder / role
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


def make_model(size: dict, vocab_size: int, seed: int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=size["hidden"],
        intermediate_size=size["intermediate"],
        num_hidden_layers=size["layers"],
        num_attention_heads=size["heads"],
        num_key_value_heads=size["heads"],
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        pad_token_id=SPECIAL_TOKENS.index("<pad>"),
        bos_token_id=SPECIAL_TOKENS.index("<s>"),
        eos_token_id=SPECIAL_TOKENS.index("</s>"),
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


def expand_depth(small, size: dict, seed: int):
    """Grow a trained model to size["layers"] blocks (block expansion, as in LLaMA Pro).

    Block i of the small model is followed by copies of itself whose attention and MLP output
    projections are zero: a zero-output block adds nothing to the residual stream, so the grown model
    computes exactly what the small one did, and fine-tuning then trains every block.
    """
    import torch

    n_small = small.config.num_hidden_layers
    n_big = size["layers"]
    big = make_model(size, small.config.vocab_size, seed=seed)
    src = small.state_dict()
    dst = big.state_dict()
    per = n_big // n_small
    with torch.no_grad():
        for name, tensor in dst.items():
            if ".layers." not in name:
                tensor.copy_(src[name])
                continue
            prefix, rest = name.split(".layers.", 1)
            j, sub = rest.split(".", 1)
            j = int(j)
            i = min(j // per, n_small - 1)
            tensor.copy_(src[f"{prefix}.layers.{i}.{sub}"])
            if j != i * per and (sub.endswith("o_proj.weight") or sub.endswith("down_proj.weight")):
                tensor.zero_()
    return big


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


def _batches(examples, batch_tokens: int, rng: random.Random):
    """Endless length-grouped batches: shuffle, sort windows by length, cut to a padded-token budget."""
    while True:
        order = list(range(len(examples)))
        rng.shuffle(order)
        window = 64
        batches = []
        for i in range(0, len(order), window):
            chunk = sorted(order[i : i + window], key=lambda j: len(examples[j][0]))
            cur: list[int] = []
            for j in chunk:
                longest = max([len(examples[k][0]) for k in cur] + [len(examples[j][0])])
                if cur and longest * (len(cur) + 1) > batch_tokens:
                    batches.append(cur)
                    cur = []
                cur.append(j)
            if cur:
                batches.append(cur)
        rng.shuffle(batches)
        yield from batches


def _collate(examples, idx: list[int]):
    import torch

    T = max(len(examples[j][0]) for j in idx)
    ids = torch.zeros((len(idx), T), dtype=torch.long)
    att = torch.zeros((len(idx), T), dtype=torch.long)
    labels = torch.full((len(idx), T), -100, dtype=torch.long)
    for r, j in enumerate(idx):
        seq, plen = examples[j]
        ids[r, : len(seq)] = torch.tensor(seq)
        att[r, : len(seq)] = 1
        # loss on the output (and </s>) only: the prompt is given at run time
        labels[r, plen : len(seq)] = torch.tensor(seq[plen:])
    return ids, att, labels


def train_model(model, examples, *, steps: int, batch_tokens: int, lr: float, warmup: int, seed: int, desc: str,
                progress: bool, teacher=None):
    """AdamW, linear warm-up then cosine decay to 10%; deterministic data order from `seed`.

    With a `teacher`, the loss is the KL divergence from the teacher's next-token distribution to the
    model's (knowledge distillation) on the output positions, instead of cross-entropy on the corpus.
    Speculative sampling accepts a drafted token with probability sum(min(p_target, p_draft)), so
    matching the target's whole distribution is exactly what raises acceptance.
    """
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    rng = random.Random(seed)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        frac = (step - warmup) / max(1, steps - warmup)
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    batches = _batches(examples, batch_tokens, rng)
    ema = None
    with _bar(progress, total=steps, desc=desc, unit="step") as bar:
        for step in range(steps):
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            ids, att, labels = _collate(examples, next(batches))
            if teacher is None:
                loss = model(input_ids=ids, attention_mask=att, labels=labels).loss
            else:
                keep = labels[:, 1:] != -100  # position t predicts token t+1
                with torch.no_grad():
                    t_logits = teacher(input_ids=ids, attention_mask=att).logits[:, :-1][keep]
                d_logits = model(input_ids=ids, attention_mask=att).logits[:, :-1][keep]
                loss = F.kl_div(F.log_softmax(d_logits, -1), F.log_softmax(t_logits, -1), log_target=True, reduction="batchmean")
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            ema = loss.item() if ema is None else 0.9 * ema + 0.1 * loss.item()
            bar.set_postfix(loss=f"{ema:.3f}")
            bar.update(1)
    model.eval()
    return ema


def main(argv: list[str] | None = None) -> int:
    """`python -m evalkit.demo [OUT_DIR] [--scale full|smoke] [--force]`"""
    import argparse

    from .locations import demo_models_dir

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("out_dir", nargs="?", default=None)
    ap.add_argument("--scale", default="full", choices=list(SCALES))
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    out = Path(a.out_dir) if a.out_dir else demo_models_dir()
    build_demo_pair(out, force=a.force, scale=a.scale)
    print(json.dumps(read_manifest(out), ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
