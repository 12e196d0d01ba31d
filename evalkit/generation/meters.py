"""Honest measurement: device synchronisation, peak memory, and counting draft acceptance.

`generate()` does not report acceptance, so we count it twice, independently:
1. the candidate generator: each round's drafted tokens (`get_candidates`) and accepted tokens
   (`update_candidate_strategy(input_ids, scores, num_matches)`);
2. a forward hook on the target: how many forward passes it really ran.
Cross-check: rounds == target passes, accepted + rounds == new tokens, drafted == proposed.

Token spaces. Proposed and accepted are always counted in the TARGET's tokens: that is what the target
verifies. With one tokenizer they are also the draft's tokens, and a forward hook on the draft (one pass per
drafted token) must agree with them. With different tokenizers (Universal Assisted Generation) the draft
writes in its own vocabulary and Transformers turns that into target tokens before verification (greedy: the
text re-encoded with the target's tokenizer; sampling: ids mapped through a vocabulary translator); then
`proposed` is that candidate's length, `accepted` the part of it the target confirmed, and `draft_tokens`
(the draft's forward passes) the draft's own count, which need not match.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from dataclasses import dataclass


def sync(device: str) -> None:
    """Wait for the device to finish queued work, so the clock measures computation, not submission."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        # every GPU: a device_map target (or a draft on "cuda:1") queues work on devices other than the current one
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)
    elif device == "mps" and getattr(torch, "mps", None) is not None:
        torch.mps.synchronize()


def _status_kb(field_name: str) -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def rss_mb() -> float | None:
    kb = _status_kb("VmRSS")
    return kb / 1024 if kb is not None else None


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter (Linux >= 4.0). False when it cannot: then no peak is reported."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float | None:
    kb = _status_kb("VmHWM")
    return kb / 1024 if kb is not None else None


def reset_cuda_peaks() -> None:
    import torch

    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            torch.cuda.reset_peak_memory_stats(i)


def cuda_memory() -> dict:
    """Per device: peak and current allocated / reserved MB (separate columns, never mixed)."""
    import torch

    if not torch.cuda.is_available():
        return {}
    mb = 1 / (1 << 20)
    return {
        f"cuda:{i}": {
            "peak_allocated_mb": torch.cuda.max_memory_allocated(i) * mb,
            "peak_reserved_mb": torch.cuda.max_memory_reserved(i) * mb,
            "allocated_mb": torch.cuda.memory_allocated(i) * mb,
            "reserved_mb": torch.cuda.memory_reserved(i) * mb,
        }
        for i in range(torch.cuda.device_count())
    }


@dataclass
class Counts:
    proposed: int = 0  # draft tokens returned by get_candidates
    drafted_in_rounds: int = 0  # candidate lengths seen by update_candidate_strategy
    accepted: int = 0  # sum of num_matches
    rounds: int = 0  # update_candidate_strategy calls
    target_passes: int = 0  # forward hook calls on the target
    draft_passes: int = 0  # forward hook calls on the draft: one per token it drafted, in its own vocabulary
    generator: str = ""  # the class of Transformers' candidate generator that ran ("" = none)

    def agree(self, new_tokens: int, assisted: bool, same_token_space: bool = True) -> bool:
        if not assisted:
            return self.target_passes == new_tokens
        agree = (
            self.rounds == self.target_passes
            and self.accepted + self.rounds == new_tokens
            and self.drafted_in_rounds == self.proposed
        )
        if same_token_space and self.draft_passes:  # one vocabulary: the draft's own count must match too
            agree = agree and self.draft_passes == self.proposed
        return agree


# One counted call per target model at a time. Counting wraps the target's candidate generator and hooks its forward
# passes, so two calls at once on a shared model (a Live run left mid-way still generating in its thread when the
# next one starts) would count each other's passes, or crash when the first removes the wrapper the second still
# uses. Calls on one model take turns; re-entrant, so a call counted inside another in the same thread goes on.
_MODEL_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MODEL_LOCKS_GUARD = threading.Lock()


def model_lock(target) -> threading.RLock:
    """The lock that counted calls on this model take turns on (busy while one runs)."""
    with _MODEL_LOCKS_GUARD:
        lock = _MODEL_LOCKS.get(target)
        if lock is None:
            lock = _MODEL_LOCKS[target] = threading.RLock()
        return lock


@contextlib.contextmanager
def counting(target, draft=None):
    """Count target passes, and, when generate() builds a candidate generator, drafted/accepted tokens (and
    the draft's own forward passes when a draft model is given). Calls on one target take turns (model_lock)."""
    with model_lock(target), _counting(target, draft) as counts:
        yield counts


@contextlib.contextmanager
def _counting(target, draft=None):
    counts = Counts()
    original = target._get_candidate_generator  # bound method of this instance

    def wrapped(*args, **kwargs):
        generator = original(*args, **kwargs)
        counts.generator = type(generator).__name__
        get_candidates, update = generator.get_candidates, generator.update_candidate_strategy

        def counted_get_candidates(input_ids, *a, **kw):
            candidate_ids, candidate_logits = get_candidates(input_ids, *a, **kw)
            counts.proposed += candidate_ids.shape[1] - input_ids.shape[1]
            return candidate_ids, candidate_logits

        def counted_update(input_ids, scores, num_matches):
            counts.rounds += 1
            counts.accepted += int(num_matches)
            counts.drafted_in_rounds += scores.shape[1] - 1
            return update(input_ids, scores, num_matches)

        generator.get_candidates = counted_get_candidates
        generator.update_candidate_strategy = counted_update
        return generator

    def hook(module, args, output):
        counts.target_passes += 1

    def draft_hook(module, args, output):
        counts.draft_passes += 1

    target._get_candidate_generator = wrapped  # instance attribute shadows the method for this call only
    handles = [target.register_forward_hook(hook)]
    if draft is not None:
        handles.append(draft.register_forward_hook(draft_hook))
    try:
        yield counts
    finally:
        for handle in handles:
            handle.remove()
        del target._get_candidate_generator


def balanced_order(items: list, block: int) -> list:
    """ABBA: `items` in their order in even blocks, reversed in odd ones. Whatever drifts while they run (the
    machine warming up or throttling, the allocator filling, the caches another call left) then falls on each of
    them alike over any two consecutive blocks, never on the one that always runs first."""
    return list(items) if block % 2 == 0 else list(reversed(items))


class Stopwatch:
    """perf_counter between two device synchronisations."""

    def __init__(self, device: str):
        self.device = device
        self.seconds: float | None = None
        self._t0: float | None = None  # not started: elapsed() is 0, never the seconds since the machine booted

    def __enter__(self):
        sync(self.device)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds = time.perf_counter() - self._t0
        return False

    def elapsed(self) -> float:
        return 0.0 if self._t0 is None else time.perf_counter() - self._t0


def host() -> str:
    return os.uname().nodename
