"""Running the generation paths: one prompt through one registered path (evalkit.generation.registry: ordinary,
the target alone; assisted, the target verifying the draft's proposals; fallback, ordinary run because assisted
failed, never counted as assisted; prompt lookup, n-gram candidates from the prompt, no draft model).

`run_path` runs any registered path from its `PathSpec`: its generate() arguments, the draft when it needs one,
acceptance counted when it drafts. Each call returns records; a path that falls back (assisted) returns two on
failure: the failed attempt and its fallback.
"""

from __future__ import annotations

import hashlib
import json

from . import registry
from .compat import TokenSpace
from ..errors import EvalkitError
from .meters import Stopwatch, counting, cuda_memory, host, peak_rss_mb, reset_cuda_peaks, reset_peak_rss, rss_mb
from .models import ModelPair, resolved_prompt_format
from ..task.prompts import Prompt
from ..task.prompts import prompt_record
from ..records import GenerationPath, GenerationRecord


class StageError(Exception):
    """An exception raised inside a path, tagged with the stage it failed in."""

    def __init__(self, stage: str, error: BaseException, seconds: float):
        super().__init__(f"{stage}: {error}")
        self.stage, self.error, self.seconds = stage, error, seconds


def prompt_format(pair: ModelPair) -> str:
    return resolved_prompt_format(pair.cfg, pair.tokenizer)


def frame(tokenizer, cfg, prompt: Prompt, text: str | None = None, fmt: str | None = None) -> dict:
    """Token ids for one prompt: one user turn through the tokenizer's chat template ("chat"), or the plain
    frame the demo pair was trained on ("plain"). `text` replaces the prompt's own content (live demo)."""
    fmt = fmt or resolved_prompt_format(cfg, tokenizer)
    if fmt == "chat":
        # apply_chat_template tokenizes with add_special_tokens=False: the template writes every special token
        return tokenizer.apply_chat_template([{"role": "user", "content": text or prompt.user_message()}],
                                             add_generation_prompt=True, return_tensors="pt", return_dict=True)
    return tokenizer(text or prompt.plain_text(), return_tensors="pt")


def build_inputs(pair: ModelPair, prompt: Prompt, text: str | None = None) -> dict:
    """Token ids for one prompt, framed the same way on every path (always by the TARGET's tokenizer: the
    draft sees the same ids, or, with another tokenizer, the same text)."""
    enc = frame(pair.tokenizer, pair.cfg, prompt, text)
    device = pair.target.device
    return {"input_ids": enc["input_ids"].to(device), "attention_mask": enc["attention_mask"].to(device)}


def max_new_tokens(pair: ModelPair, prompt: Prompt) -> int:
    return pair.cfg.decoding.max_new_tokens or prompt.max_new_tokens


def check_fits(pair: ModelPair, prompt: Prompt) -> None:
    """Refuse a prompt whose tokens and new tokens pass the target's context (config.max_position_embeddings): past
    it a model with learned positions fails inside generate(), and one with rotary positions (the demo pair's 1024)
    goes on writing text no longer tied to the material, timed as if it were an answer (a Live visitor's long paste)."""
    limit = getattr(pair.target.config, "max_position_embeddings", None)
    if not isinstance(limit, int) or limit <= 0:
        return
    n, new = frame(pair.tokenizer, pair.cfg, prompt)["input_ids"].shape[-1], max_new_tokens(pair, prompt)
    if n + new <= limit:
        return
    material = len(pair.tokenizer(prompt.material, add_special_tokens=False)["input_ids"]) or 1
    cut = -(-len(prompt.material) * (n + new - limit) // material)  # characters, at the material's own rate
    raise EvalkitError(f"the material is too long for the target model: the request is {n} tokens, and with up to "
                       f"{new} new tokens (decoding.max_new_tokens) it passes the model's context of {limit} tokens by "
                       f"about {cut} of the material's {len(prompt.material)} characters",
                       f"shorten the material by about {cut} characters")


def decoding_kwargs(pair: ModelPair, prompt: Prompt) -> dict:
    d = pair.cfg.decoding
    kw: dict = {"max_new_tokens": max_new_tokens(pair, prompt), "do_sample": d.mode == "sample"}
    if d.mode == "sample":
        kw.update(temperature=d.temperature, top_p=d.top_p)
    tok = pair.tokenizer
    kw["pad_token_id"] = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    if d.stop_strings:
        kw.update(stop_strings=list(d.stop_strings), tokenizer=tok)
    return kw


def apply_assistant_settings(pair: ModelPair) -> dict:
    """Write the assistant settings to the DRAFT's generation_config (generate() kwargs are ignored for these)
    and read them back. Called before every measured run: the heuristic schedule carries state across calls."""
    a = pair.cfg.assistant
    gc = pair.draft.generation_config
    gc.num_assistant_tokens = a.num_assistant_tokens
    gc.num_assistant_tokens_schedule = a.num_assistant_tokens_schedule
    gc.assistant_confidence_threshold = a.assistant_confidence_threshold
    return {
        "num_assistant_tokens": gc.num_assistant_tokens,
        "num_assistant_tokens_schedule": gc.num_assistant_tokens_schedule,
        "assistant_confidence_threshold": gc.assistant_confidence_threshold,
    }


def eos_ids(pair: ModelPair) -> set[int]:
    ids = pair.target.generation_config.eos_token_id
    if ids is None:
        ids = pair.tokenizer.eos_token_id
    if ids is None:
        return set()
    return set(ids) if isinstance(ids, (list, tuple)) else {int(ids)}


def stop_reason(pair: ModelPair, new_ids: list[int], text: str, budget: int) -> str:
    if new_ids and new_ids[-1] in eos_ids(pair):
        return "eos"
    if any(text.endswith(s) or s in text[-(len(s) + 8):] for s in pair.cfg.decoding.stop_strings):
        return "stop_string"
    if len(new_ids) >= budget:
        return "max_new_tokens"
    return "unknown"


def _jsonable(kw: dict) -> dict:
    return {k: v for k, v in kw.items() if isinstance(v, (int, float, str, bool, list, type(None)))}


def _effective(pair: ModelPair, prompt: Prompt, kw: dict, prompt_ids: list[int], text: str | None) -> dict:
    """Everything in force for one request, stored with its record."""
    return {
        "config": pair.cfg.to_dict(),
        "generate_kwargs": _jsonable(kw),
        "prompt_format": prompt_format(pair),
        # the framed prompt, so both paths can be shown to get the very same ids
        "prompt_hash": hashlib.sha256(json.dumps(prompt_ids).encode()).hexdigest()[:16],
        # what the checkpoint's own generation_config adds (Qwen2.5 ships top_k, repetition_penalty, ...)
        "target_generation_config": pair.target.generation_config.to_diff_dict(),
        "dtype": str(pair.target.dtype).removeprefix("torch."),
        "device": pair.device,
        # the kinds the target's and the draft's weights really sat on ("cpu+cuda": split): the device alone names
        # only the main one, and a split run's speed never stands for an unsplit deployment (aggregate.data)
        "devices": pair.devices,
        "route": pair.compat.verdict,
        # the request itself and a hash of the exact input ids: the report's prompt provenance
        "prompt": prompt_record(prompt, prompt_ids, text),
    }


def _call(pair: ModelPair, prompt: Prompt, seed: int, path: str, extra: dict, streamer=None, text=None) -> GenerationRecord:
    """One generate() call, measured. Raises StageError tagged with the failing stage."""
    from transformers import set_seed

    stage = "prepare"
    watch = Stopwatch(pair.device)
    try:
        inputs = build_inputs(pair, prompt, text)
        kw = decoding_kwargs(pair, prompt)
        kw.update(extra)
        if streamer is not None:
            kw["streamer"] = streamer
        effective = _effective(pair, prompt, kw, inputs["input_ids"][0].tolist(), text)
        spec = registry.get(path)
        if spec.needs_draft:
            effective["assistant_generation_config"] = apply_assistant_settings(pair)
            effective["draft_device"] = pair.draft_device
        if kw.get("do_sample") and kw.get("assistant_tokenizer") is not None:
            from .translator import pin_translator

            pin_translator(pair)  # the draft's pruned head in one order in every process (translator.py)
        set_seed(seed)
        reset_cuda_peaks()
        peak_ok = reset_peak_rss()
        stage = "generate"
        import torch

        draft = pair.draft if spec.needs_draft else None
        with counting(pair.target, draft) as counts, torch.inference_mode(), watch:
            out = pair.target.generate(**inputs, **kw)
        stage = "decode"
        prompt_len = inputs["input_ids"].shape[1]
        new_ids = out[0, prompt_len:].tolist()
        with Stopwatch("cpu") as dwatch:
            text_out = pair.tokenizer.decode(new_ids, skip_special_tokens=True)
    except Exception as e:  # noqa: BLE001 - every failure becomes a labelled record upstream
        raise StageError(stage, e, watch.seconds if watch.seconds is not None else watch.elapsed()) from e
    budget = kw["max_new_tokens"]
    assisted_like = spec.drafts  # candidates proposed and verified: acceptance is counted
    rec = GenerationRecord(
        prompt_id=prompt.id,
        path=path,
        text=text_out,
        token_ids=new_ids,
        token_hash=hashlib.sha256(json.dumps(new_ids).encode()).hexdigest()[:16],
        prompt_tokens=prompt_len,
        new_tokens=len(new_ids),
        stop_reason=stop_reason(pair, new_ids, text_out, budget),
        generate_seconds=watch.seconds,
        decode_seconds=dwatch.seconds,
        peak_rss_mb=peak_rss_mb() if peak_ok else None,
        rss_mb=rss_mb(),
        cuda_memory=cuda_memory(),
        target_passes=counts.target_passes,
        tokens_per_target_pass=(len(new_ids) / counts.target_passes) if counts.target_passes else None,
        counts_agree=counts.agree(len(new_ids), assisted_like, pair.compat.token_space != TokenSpace.TARGET),
        candidate_generator=counts.generator,
        seed=seed,
        decoding=pair.cfg.decoding.mode,
        effective_config=effective,
        rank=pair.rank,
        host=host(),
        device=pair.device,
    )
    if assisted_like:
        rec.draft_proposed = counts.proposed
        rec.draft_accepted = counts.accepted
        rec.draft_rounds = counts.rounds
    if spec.needs_draft:
        rec.draft_tokens = counts.draft_passes
    return rec


def run_ordinary(pair: ModelPair, prompt: Prompt, seed: int, *, path: str = GenerationPath.ORDINARY, streamer=None,
                 text=None) -> GenerationRecord:
    """The target alone. Failures here are real errors: there is nothing to fall back to."""
    try:
        return _call(pair, prompt, seed, path, {}, streamer, text)
    except StageError as e:
        err = e.error
        import torch

        if isinstance(err, torch.OutOfMemoryError):
            raise EvalkitError(f"out of memory generating '{prompt.id}' on the {path} path", "lower max_new_tokens or use a smaller model")
        raise EvalkitError(f"the {path} path failed at stage {e.stage} on '{prompt.id}': {type(err).__name__}: {err}", "see the message; check the model and config") from err


def _failed(prompt: Prompt, seed: int, pair: ModelPair, stage: str, cls: str, message: str, seconds: float | None,
            path: str = GenerationPath.ASSISTED) -> GenerationRecord:
    return GenerationRecord(
        prompt_id=prompt.id,
        path=path,
        status="failed",
        generate_seconds=seconds,
        seed=seed,
        decoding=pair.cfg.decoding.mode,
        effective_config={"config": pair.cfg.to_dict(), "route": pair.compat.verdict, "prompt": prompt_record(prompt)},
        error_class=cls,
        error_stage=stage,
        error_message=message[:2000],
        rank=pair.rank,
        host=host(),
        device=pair.device,
    )


def check_switched_on(cfg, spec: registry.PathSpec) -> None:
    """Refuse a path that is not run on its own or that the config switches off: the config alone tells, so a
    caller asks before the models load."""
    if not spec.runnable:
        raise EvalkitError(f"the {spec.name} path is not run on its own", f"run one of: {', '.join(registry.choices())}")
    if not spec.enabled(cfg):
        raise EvalkitError(f"the {spec.name} path is switched off", spec.switch or "switch it on in the config")


def check_runnable(pair: ModelPair, spec: registry.PathSpec) -> None:
    """Refuse, before any work, a path that is not run on its own, is switched off, or is refused for this pair."""
    check_switched_on(pair.cfg, spec)
    why = spec.refusal(pair.cfg, pair.compat)
    if why is not None:
        raise EvalkitError(f"the {spec.name} path is {why}",
                           "run `evalkit check` and fix what it reports; until then only the ordinary path runs")


def _with_fallback(pair: ModelPair, spec: registry.PathSpec, prompt: Prompt, seed: int, streamer, fallback_streamer,
                   text) -> list[GenerationRecord]:
    """A path that falls back: [its record], or on failure [the failed record, a separate fallback record]."""
    if spec.needs_draft and pair.draft is None:
        err = pair.draft_error or {"error_class": "DraftMissing", "error_stage": "load", "error_message": "draft not loaded"}
        failed = _failed(prompt, seed, pair, err["error_stage"], err["error_class"], err["error_message"], 0.0, spec.name)
    else:
        try:
            return [_call(pair, prompt, seed, spec.name, spec.generate_kwargs(pair), streamer, text)]
        except StageError as e:
            import torch

            if isinstance(e.error, torch.OutOfMemoryError) and torch.cuda.is_available():
                torch.cuda.empty_cache()
            failed = _failed(prompt, seed, pair, e.stage, type(e.error).__name__, str(e.error), e.seconds, spec.name)
    fallback = run_ordinary(pair, prompt, seed, path=GenerationPath.FALLBACK, streamer=fallback_streamer, text=text)
    fallback.fallback_of = -1  # the failed record just before it; resolved to its id when stored
    fallback.total_wait_seconds = (failed.generate_seconds or 0.0) + (fallback.generate_seconds or 0.0) + (fallback.decode_seconds or 0.0)
    return [failed, fallback]


def run_path(pair: ModelPair, prompt: Prompt, path: str, seed: int, *, streamer=None, fallback_streamer=None,
             text=None) -> list[GenerationRecord]:
    """One prompt through one registered path. A failure of a path that falls back (assisted) is a record, followed
    by its fallback's; any other path's failure is an EvalkitError (there is nothing to fall back to)."""
    spec = registry.get(path)
    if isinstance(prompt, (list, tuple)):  # the brief's batch of prompts: Transformers would refuse it in generate()
        if spec.name != GenerationPath.ORDINARY:
            from .batch import refuse_assisted_batch

            refuse_assisted_batch(len(prompt), f"run_path(prompts, {spec.name!r})")
        (prompt,) = prompt
    check_runnable(pair, spec)
    if spec.name == GenerationPath.ORDINARY:
        return [run_ordinary(pair, prompt, seed, streamer=streamer, text=text)]
    if spec.falls_back:
        return _with_fallback(pair, spec, prompt, seed, streamer, fallback_streamer, text)
    try:
        return [_call(pair, prompt, seed, spec.name, spec.generate_kwargs(pair), streamer, text)]
    except StageError as e:
        raise EvalkitError(f"the {spec.name} path failed at stage {e.stage} on '{prompt.id}': "
                           f"{type(e.error).__name__}: {e.error}", "see the message; check the model and config") from e.error


def run_assisted(pair: ModelPair, prompt: Prompt, seed: int, *, streamer=None, fallback_streamer=None, text=None) -> list[GenerationRecord]:
    """The target verifying the draft. On failure: [failed assisted record, separate fallback record]."""
    return run_path(pair, prompt, GenerationPath.ASSISTED, seed, streamer=streamer,
                    fallback_streamer=fallback_streamer, text=text)


def run_prompt_lookup(pair: ModelPair, prompt: Prompt, seed: int) -> GenerationRecord:
    """n-gram candidates from the prompt, verified by the target (no draft model)."""
    return run_path(pair, prompt, GenerationPath.PROMPT_LOOKUP, seed)[0]


def run_batch(pair: ModelPair, prompts: list[Prompt], seed: int, path: str = GenerationPath.ORDINARY) -> list[GenerationRecord]:
    """Several requests in one generate() call, padded on the left: one record per request, each carrying the
    call's seconds (what every request in it waited) and `batch_size`. Only the ordinary path batches: Transformers
    runs assisted generation (and prompt lookup, its candidate generator) one request at a time, so asking for it
    with more than one prompt fails here, before generate(). One token budget serves the call (the largest of the
    prompts'); each output is cut to its own prompt's budget."""
    import torch

    from .batch import left_pad, refuse_assisted_batch

    prompts = list(prompts)
    if not prompts:
        raise EvalkitError("run_batch got no prompts", "pass at least one Prompt")
    if path != GenerationPath.ORDINARY:
        refuse_assisted_batch(len(prompts), f"run_batch(path={str(path)!r})")
    if len(prompts) == 1:
        return run_path(pair, prompts[0], path, seed)
    from transformers import set_seed

    stage = "prepare"
    watch = Stopwatch(pair.device)
    try:
        rows = [frame(pair.tokenizer, pair.cfg, p)["input_ids"][0].tolist() for p in prompts]
        budgets = [max_new_tokens(pair, p) for p in prompts]
        kw = decoding_kwargs(pair, prompts[0]) | {"max_new_tokens": max(budgets)}
        ids, mask, pads = left_pad(rows, kw["pad_token_id"])
        device = pair.target.device
        inputs = {"input_ids": torch.tensor(ids, device=device), "attention_mask": torch.tensor(mask, device=device)}
        set_seed(seed)
        reset_cuda_peaks()
        peak_ok = reset_peak_rss()
        stage = "generate"
        with counting(pair.target) as counts, torch.inference_mode(), watch:
            out = pair.target.generate(**inputs, **kw)
        stage = "decode"
        width = inputs["input_ids"].shape[1]
        eos = eos_ids(pair)
        raw = []
        for i in range(len(prompts)):
            new = out[i, width:].tolist()
            end = next((j + 1 for j, t in enumerate(new) if t in eos), None)
            if end is None and pair.cfg.decoding.stop_strings:  # finished on a stop string: generate() pads the rest
                while new and new[-1] == kw["pad_token_id"]:
                    new.pop()
            raw.append(new[:end])
    except EvalkitError:
        raise
    except Exception as e:  # noqa: BLE001 - the ordinary path has nothing to fall back to
        if isinstance(e, torch.OutOfMemoryError):
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            raise EvalkitError(f"out of memory generating a batch of {len(prompts)} on the {path} path",
                               "use smaller batch sizes, lower max_new_tokens, or a smaller model") from e
        raise EvalkitError(f"the {path} path failed at stage {stage} on a batch of {len(prompts)}: {type(e).__name__}: {e}",
                           "see the message; check the model and config") from e
    records = []
    memory, peak = cuda_memory(), (peak_rss_mb() if peak_ok else None)
    for i, prompt in enumerate(prompts):
        new_ids = raw[i][:budgets[i]]
        with Stopwatch("cpu") as dwatch:
            text_out = pair.tokenizer.decode(new_ids, skip_special_tokens=True)
        effective = _effective(pair, prompt, kw, rows[i], None)
        effective["batch"] = {"size": len(prompts), "slot": i, "left_padding": pads[i],
                              "prompts": [p.id for p in prompts], "own_max_new_tokens": budgets[i]}
        records.append(GenerationRecord(
            prompt_id=prompt.id, path=path, text=text_out, token_ids=new_ids,
            token_hash=hashlib.sha256(json.dumps(new_ids).encode()).hexdigest()[:16],
            prompt_tokens=len(rows[i]), new_tokens=len(new_ids),
            stop_reason=stop_reason(pair, new_ids, text_out, budgets[i]),
            generate_seconds=watch.seconds, decode_seconds=dwatch.seconds, peak_rss_mb=peak, rss_mb=rss_mb(),
            cuda_memory=memory, target_passes=counts.target_passes,
            tokens_per_target_pass=(len(new_ids) / counts.target_passes) if counts.target_passes else None,
            # one pass per step of the call: the steps of its longest output
            counts_agree=counts.target_passes == max(len(r) for r in raw),
            seed=seed, decoding=pair.cfg.decoding.mode, effective_config=effective, rank=pair.rank, host=host(),
            device=pair.device, batch_size=len(prompts)))
    return records


def available_paths(pair: ModelPair) -> list[str]:
    """The paths this pair can run (registry.available: ordinary always; the others when switched on and allowed)."""
    return registry.available(pair.cfg, pair.compat)
