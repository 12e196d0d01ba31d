"""Batches of requests: what Transformers allows on each path, and the batches the benchmark fills.

Transformers runs assisted generation one request at a time: `generate(assistant_model=...)` raises
`ValueError: assisted generate is only supported for batch_size = 1` for two prompts or more (the brief's pipeline
example with `batch_size=len(batch_prompts)` would fail). So evalkit refuses such a request before any model
loads, and answers the question a serving team really asks, "is assisted at batch 1 faster than ordinary at the
batch size we serve?", with `evalkit bench --batch-sizes`: the ordinary path measured at each batch size, its
batches filled with the benchmark's prompts in turn (different lengths, so padded on the left, as decoder-only
models need), beside assisted at batch 1.
"""

from __future__ import annotations

from ..errors import EvalkitError

BATCH_SIZES_HINT = "evalkit bench --batch-sizes 1,2,4,8"


def refuse_assisted_batch(requests: int, what: str) -> None:
    """Raise the clear error for assisted generation asked with more than one request at once (`what` names who
    asked: a config key, a command-line option, an argument)."""
    if requests > 1:
        raise EvalkitError(
            f"{what} asks for assisted generation with {requests} requests at once, but Transformers runs assisted "
            "generation one request at a time (generate(assistant_model=...) raises 'assisted generate is only "
            "supported for batch_size = 1')",
            f"send assisted requests one at a time (batch size 1); to see whether assisted at batch 1 beats the "
            f"ordinary path at the batch size you serve, run `{BATCH_SIZES_HINT}` (ordinary measured at each size)",
        )


def refuse_no_batch(sizes: list[int], given: str, fix: str) -> None:
    """Refuse benchmark batch sizes that hold no batch above 1: the unbatched runs are batch size 1 already, so they
    would measure nothing. One check for `--batch-sizes` and a config file's bench.batch_sizes; `given` names the
    value as the user wrote it, `fix` says where to change it."""
    if not any(b > 1 for b in sizes):
        raise EvalkitError(f"{given} measures no batch: the unbatched runs are batch size 1 already", fix)


def batch_sizes(values) -> list[int]:
    """Batch sizes as the benchmark runs them: positive, each once, ascending."""
    sizes = sorted({int(v) for v in values})
    if any(b < 1 for b in sizes):
        raise EvalkitError(f"batch sizes {', '.join(map(str, sizes))}: each must be at least 1",
                           f"pass positive sizes, e.g. `--batch-sizes 1,2,4,8`")
    return sizes


def rotations(items: list, size: int) -> list[list]:
    """One batch per item, each starting at that item and filled with the ones after it in turn (wrapping round):
    every item is in `size` batches and starts one, so each batch size serves the same mix of requests as the
    unbatched runs do."""
    n = len(items)
    return [[items[(k + j) % n] for j in range(size)] for k in range(n)]


def left_pad(rows: list[list[int]], pad_id: int) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """Token rows padded on the left to one length (a decoder-only model continues from the last position):
    (input ids, attention mask, pad tokens put before each row)."""
    width = max(len(r) for r in rows)
    pads = [width - len(r) for r in rows]
    ids = [[pad_id] * p + r for p, r in zip(pads, rows)]
    mask = [[0] * p + [1] * len(r) for p, r in zip(pads, rows)]
    return ids, mask, pads
