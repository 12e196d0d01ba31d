"""The records evalkit keeps. Dataclasses: the same `asdict` row feeds SQLite, pandas and `datasets`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum


class GenerationPath(StrEnum):
    """The names of the bundled generation paths (stored as their values). Each path is defined once, as a registered
    object, in evalkit.generation.registry (a new path needs no member here). A fallback is its own path: the
    ordinary route run because the assisted one failed, never counted as assisted."""

    ORDINARY = "ordinary"  # the target alone
    ASSISTED = "assisted"  # the target verifies the draft's proposals
    FALLBACK = "fallback"
    PROMPT_LOOKUP = "prompt_lookup"  # n-gram candidates from the prompt, no draft model


# The two paths a study compares (a pair has one output of each).
COMPARED = (GenerationPath.ORDINARY, GenerationPath.ASSISTED)


@dataclass
class GenerationRecord:
    prompt_id: str
    path: str  # a GenerationPath
    status: str = "ok"  # "ok" or "failed"
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    token_hash: str = ""  # sha256 of the new token ids, for identity checks without the ids
    prompt_tokens: int = 0
    new_tokens: int = 0
    stop_reason: str = ""  # "eos", "max_new_tokens", "stop_string", "unknown" ("" when failed)
    generate_seconds: float | None = None  # generate() only, device synchronised before and after
    decode_seconds: float | None = None  # tokenizer.decode, timed apart
    peak_rss_mb: float | None = None  # process peak RSS during the call (None when it cannot be reset)
    rss_mb: float | None = None  # process RSS after the call
    cuda_memory: dict = field(default_factory=dict)  # per device: peak allocated / reserved MB
    # Acceptance is counted in the TARGET's tokens (what the target verifies), on either route: with different
    # tokenizers Transformers turns the draft's output into target tokens first (evalkit/generation/meters.py).
    draft_proposed: int | None = None  # candidate tokens proposed to the target (candidate generator count)
    draft_accepted: int | None = None  # of those, tokens the target accepted
    draft_rounds: int | None = None  # verification rounds seen by the candidate generator
    target_passes: int | None = None  # target forward passes (forward hook count)
    tokens_per_target_pass: float | None = None
    counts_agree: bool | None = None  # the two independent counts cross-checked
    draft_tokens: int | None = None  # tokens the draft wrote in its OWN vocabulary (its forward passes)
    candidate_generator: str = ""  # Transformers' candidate generator class that ran ("" = none)
    seed: int | None = None
    decoding: str = ""  # "greedy" or "sample"
    effective_config: dict = field(default_factory=dict)  # everything really in force for this call
    error_class: str = ""
    error_stage: str = ""  # when failed: "load", "prepare", "generate" or "decode"
    error_message: str = ""
    fallback_of: int | None = None  # for a fallback: the failed assisted record's id
    total_wait_seconds: float | None = None  # for a fallback: failed attempt + fallback, what the user waited
    live: bool = False  # live demo runs never enter the rated pool
    rank: int = 0  # process rank under `accelerate launch` (0 otherwise)
    host: str = ""
    device: str = ""
    work_index: int | None = None  # position in the pair pool's work list
    batch_size: int = 1  # requests in the generate() call that produced this output (1: it ran alone)
    id: int | None = None  # set once stored

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def tokens_per_second(self) -> float | None:
        if not self.ok or not self.generate_seconds:
            return None
        return self.new_tokens / self.generate_seconds

    def row(self) -> dict:
        d = asdict(self)
        d.pop("id")
        return d


@dataclass
class ProcessRecord:
    """One benchmark worker process: each path is measured in its own process."""

    path: str
    round: int  # 1 or 2 (ABBA: round 2 swaps the order)
    order: int  # position of this process within its round
    pid: int = 0
    host: str = ""
    device: str = ""
    load_seconds: float | None = None
    rss_after_load_mb: float | None = None
    cuda_after_load: dict = field(default_factory=dict)
    draft_extra_rss_mb: float | None = None  # RSS added by loading the draft (assisted only)
    # MB of weights per device ("cuda:0", "cpu", "disk"): a device_map may spread the target
    target_placement: dict = field(default_factory=dict)
    draft_placement: dict = field(default_factory=dict)
    first_call_seconds: float | None = None
    # Per-token cost of each model alone (seconds / new token, greedy probe): the cost ratio c for theory.
    target_seconds_per_token: float | None = None
    draft_seconds_per_token: float | None = None
    warmup_count: int = 0
    warmup_seconds: list[float] = field(default_factory=list)
    rank: int = 0
    status: str = "ok"
    error: str = ""


@dataclass(kw_only=True)
class MeasuredRequest:
    """What every timed request of the benchmark keeps; its generation record holds the text and counts."""

    path: str
    prompt_id: str
    round: int
    rep: int
    seed: int
    new_tokens: int
    stop_reason: str
    seconds: float
    status: str = "ok"
    rank: int = 0
    host: str = ""
    device: str = ""
    generation_id: int | None = None
    process_id: int | None = None


@dataclass(kw_only=True)
class TimingRun(MeasuredRequest):
    """One timed repetition of one prompt on one path, alone in its generate() call."""

    decode_seconds: float | None = None
    tokens_per_second: float | None = None


@dataclass(kw_only=True)
class BatchRun(MeasuredRequest):
    """One request of a batched generate() call: the ordinary path measured at a batch size above 1
    (`evalkit bench --batch-sizes`). The requests of one call share its number and its seconds (`seconds`: the
    call's generate() seconds, device synchronised: what each request in it waited). status "failed": this batch
    size could not run (out of memory); one row says so, with `error`, and no generation."""

    batch_size: int
    batch_call: int  # the call's number within its worker process
    slot: int  # the request's row in the batch
    left_padding: int  # pad tokens put before this request's prompt
    error: str = ""
