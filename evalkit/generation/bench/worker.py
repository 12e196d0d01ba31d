"""The benchmark worker: one path in its own process (`evalkit bench-worker`, started by the parent in
evalkit.generation.bench.run). It loads only what its path needs, records the load, the first call and the warm-up, times N
repetitions per prompt, then measures each model's per-token cost alone, and writes them as JSON for the parent."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from ..compat import Route
from ...config import Config, from_dict
from ...records import BatchRun, GenerationPath, ProcessRecord, TimingRun
from ...stats import median


def _per_token_probe(model, tokenizer, prompt, device: str, cfg: Config, n_tokens: int = 32, repeats: int = 3) -> float | None:
    """Seconds per new token of one model alone, greedy, median of a few calls (the cost ratio's inputs).
    The prompt is framed by this model's own tokenizer, as its users would frame it."""
    import torch

    from ..meters import Stopwatch
    from ..paths import frame

    has_template = bool(getattr(tokenizer, "chat_template", None))
    fmt = "chat" if has_template and cfg.decoding.prompt_format != "plain" else "plain"
    enc = frame(tokenizer, cfg, prompt, fmt=fmt).to(device)
    times = []
    for _ in range(repeats):
        with torch.inference_mode(), Stopwatch(device) as w:
            out = model.generate(**enc, max_new_tokens=n_tokens, min_new_tokens=n_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
        new = out.shape[1] - enc["input_ids"].shape[1]
        if new:
            times.append(w.seconds / new)
    return median(times)


def run_worker(cfg: Config, path: str, round_no: int, order: int, prompt_ids: list[str], progress_fh=None,
               rank: int = 0) -> dict:
    """Load the models this path needs, then measure. Returns the process record and its runs as JSON-able."""
    import time

    from ..meters import cuda_memory, host, rss_mb
    from ..models import load_pair, placement
    from ..paths import run_path
    from ...task.prompts import load_prompts

    import torch  # noqa: F401  (library import time is not model load time)
    import transformers  # noqa: F401

    from .. import registry

    spec = registry.get(path)
    prompts = load_prompts(ids=prompt_ids or None)
    proc = ProcessRecord(path=path, round=round_no, order=order, pid=os.getpid(), host=host(), rank=rank)
    t0 = time.perf_counter()
    rss0 = rss_mb()
    pair = load_pair(cfg, progress=False, with_draft=spec.needs_draft, rank=rank)
    proc.load_seconds = time.perf_counter() - t0
    proc.device = pair.device
    proc.rss_after_load_mb = rss_mb()
    proc.cuda_after_load = cuda_memory()
    proc.target_placement = placement(pair.target)
    if pair.draft is not None:
        proc.draft_placement = placement(pair.draft)
    if spec.needs_draft and pair.draft is not None:
        proc.draft_extra_rss_mb = None if rss0 is None else proc.rss_after_load_mb - rss0
    base = cfg.decoding.seed
    # With different tokenizers and sampling, Transformers prunes the draft's LM head and wraps its embeddings
    # in place on the first assisted call (UniversalSpeculativeDecodingGenerator): measure the draft alone first.
    probe_draft_first = pair.compat.verdict == Route.DIFFERENT_TOKENIZER
    if spec.needs_draft and pair.draft is not None and probe_draft_first:
        proc.draft_seconds_per_token = _per_token_probe(pair.draft, pair.draft_tokenizer, prompts[0], pair.draft_device, cfg)

    def tick():
        if progress_fh:
            progress_fh.write("tick\n")
            progress_fh.flush()

    # First call: recorded, never pooled with the timed runs.
    def own_seconds(records) -> float | None:  # a run that fell back is the fallback's time, not this path's
        return records[-1].generate_seconds if records[-1].path == path else None

    first = run_path(pair, prompts[0], path, base)
    proc.first_call_seconds = own_seconds(first)
    for _ in range(cfg.bench.warmup):
        proc.warmup_seconds.append(own_seconds(run_path(pair, prompts[0], path, base)))
    proc.warmup_count = cfg.bench.warmup
    runs = []
    for prompt in prompts:
        for rep in range(cfg.bench.reps):
            seed = base + rep
            records = run_path(pair, prompt, path, seed)
            timed = records[-1]
            run = TimingRun(
                path=timed.path,  # "fallback" when assisted failed: never pooled as assisted
                prompt_id=prompt.id,
                round=round_no,
                rep=rep,
                seed=seed,
                new_tokens=timed.new_tokens,
                stop_reason=timed.stop_reason,
                seconds=timed.total_wait_seconds if timed.path == GenerationPath.FALLBACK else timed.generate_seconds,
                decode_seconds=timed.decode_seconds,
                tokens_per_second=timed.tokens_per_second,
                rank=timed.rank,
                host=timed.host,
                device=timed.device,
            )
            runs.append({"run": asdict(run), "records": [asdict(r) for r in records]})
            tick()
    # Per-token cost of each model alone (target in the ordinary process, draft in the one that loads it), after the
    # timed runs: measured before them, the ordinary process's probe calls were extra warm-up for its target that the
    # assisted process's target never had, so the paths' timed runs met differently warmed machines.
    if path == GenerationPath.ORDINARY:
        proc.target_seconds_per_token = _per_token_probe(pair.target, pair.tokenizer, prompts[0], pair.device, cfg)
    elif spec.needs_draft and pair.draft is not None and not probe_draft_first:
        proc.draft_seconds_per_token = _per_token_probe(pair.draft, pair.draft_tokenizer, prompts[0], pair.draft_device, cfg)
    batched = _batched_runs(pair, cfg, prompts, round_no, tick) if path == GenerationPath.ORDINARY else []
    return {"process": asdict(proc), "runs": runs, "batch_runs": batched}


def _batched_runs(pair, cfg: Config, prompts, round_no: int, tick) -> list[dict]:
    """The ordinary path at each batch size above 1 (`bench.batch_sizes`), in this same process after its batch-1
    runs: per size `bench.warmup` untimed calls, then per repetition one call per batch of `batch.rotations` (every
    prompt in `size` batches, so each size serves the unbatched mix of requests). One BatchRun per request."""
    from ..batch import batch_sizes, rotations
    from ...errors import EvalkitError
    from ..meters import host
    from ..paths import run_batch

    out, call = [], 0
    for size in [b for b in batch_sizes(cfg.bench.batch_sizes) if b > 1]:
        batches = rotations(list(prompts), size)
        this_size = []
        try:
            for _ in range(cfg.bench.warmup):
                run_batch(pair, batches[0], cfg.decoding.seed)
            for rep in range(cfg.bench.reps):
                seed = cfg.decoding.seed + rep
                for batch in batches:
                    for slot, rec in enumerate(run_batch(pair, batch, seed)):
                        run = BatchRun(path=rec.path, batch_size=size, batch_call=call, slot=slot,
                                       prompt_id=rec.prompt_id, round=round_no, rep=rep, seed=seed,
                                       new_tokens=rec.new_tokens, stop_reason=rec.stop_reason,
                                       seconds=rec.generate_seconds,
                                       left_padding=rec.effective_config["batch"]["left_padding"], rank=rec.rank,
                                       host=rec.host, device=rec.device)
                        this_size.append({"run": asdict(run), "record": asdict(rec)})
                    call += 1
                    tick()
        except EvalkitError as e:
            if "out of memory" not in str(e):
                raise
            # a result, not a crash: this size (and every larger one) does not fit; one row says so
            failed = BatchRun(path=GenerationPath.ORDINARY, batch_size=size, batch_call=call, slot=0,
                              prompt_id=batches[0][0].id, round=round_no, rep=0, seed=cfg.decoding.seed, new_tokens=0,
                              stop_reason="", seconds=0.0, left_padding=0, status="failed",
                              error=str(e).splitlines()[0], rank=pair.rank, host=host(), device=pair.device)
            out.append({"run": asdict(failed), "record": None})
            break
        out += this_size
    return out


def work(config_json: Path, path: str, round_no: int, order: int, prompt_ids: list[str], rank: int, out: Path,
         progress_fh=None, plugins: list[str] = ()) -> None:
    """The worker process's whole job: read the parent's config, measure, write the result to `out` (whole or not
    at all). One "tick" line per timed run goes to `progress_fh` for the parent's progress bar. `plugins`: modules
    that register paths outside evalkit (the parent's registry.plugin_modules), imported first."""
    from ..registry import load_plugins

    load_plugins(plugins)
    cfg = from_dict(json.loads(Path(config_json).read_text()), str(config_json))
    result = run_worker(cfg, path, round_no, order, prompt_ids, progress_fh, rank)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, ensure_ascii=False))
    os.replace(tmp, out)
