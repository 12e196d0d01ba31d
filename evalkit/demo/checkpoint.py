"""Resuming the demo pair's training after a stop: the longest step of a first start (minutes on 2 cores) began again
from zero after a Ctrl-C.

One file beside the build's folder (`.<folder>.checkpoint.pt`) holds the stage under way and its step, the model's
and the optimizer's state, the random generators and the data order, written atomically (a temporary file renamed)
every SAVE_EVERY_SECONDS, at each stage's end, and at a Ctrl-C or SIGTERM (held until the step under way ends, so
the state saved is a whole step's). The finished target's weights stay in it while the draft trains. A checkpoint
made with other settings (build version, evalkit version, scale, recipe, corpus) or that cannot be read is
ignored, with a line saying so: never half-used. A resumed build gives the weights an uninterrupted one gives."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

SAVE_EVERY_SECONDS = 60.0  # at most this much training is lost to a kill (a Ctrl-C loses none)
SKIP = "skip"  # resume(): a later stage's saved weights replace this stage's, so it is not trained
_FORMAT = 1
_SETTING_WORDS = {"build_version": "build version", "evalkit": "evalkit version", "scale": "scale",
                  "recipe": "recipe (sizes, seeds, steps)", "corpus": "corpus"}


def path_for(out_dir: Path) -> Path:
    """Beside the build's folder, which the build replaces as a whole."""
    return out_dir.parent / f".{out_dir.name}.checkpoint.pt"


def settings(build_version: str, scale: str, recipe: dict, examples) -> dict:
    """What a checkpoint must have been made with to be resumed: anything else trains other weights."""
    from .. import __version__

    corpus = hashlib.sha256(json.dumps(examples).encode()).hexdigest()
    return {"build_version": build_version, "evalkit": __version__, "scale": scale,
            "recipe": json.loads(json.dumps(recipe)), "corpus": corpus}


def say(line: str) -> None:
    """A line on the terminal, above the bar under way (not run into it)."""
    from tqdm.auto import tqdm

    tqdm.write(f"demo pair: {line}", file=sys.stderr)


class Checkpoint:
    """The build's saved training state; `stages` are the bars' names in the order the build trains them."""

    def __init__(self, path: Path, settings: dict, stages: list[str]):
        self.path, self.settings, self.stages = Path(path), settings, stages
        self.state = self._load()
        self._saved_at = time.monotonic()

    def _load(self) -> dict:
        fresh = {"format": _FORMAT, "settings": self.settings, "finished": {}, "stage": None}
        if not self.path.exists():
            return fresh
        import torch

        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or state.get("format") != _FORMAT or "settings" not in state:
                raise ValueError("not a demo training checkpoint")
        except Exception as e:  # noqa: BLE001 - truncated, corrupt or foreign: all alike, ignored
            say(f"the training checkpoint {self.path} cannot be read ({type(e).__name__}: {e}); it is ignored and "
                "the training starts from the beginning")
            return fresh
        other = [w for k, w in _SETTING_WORDS.items() if state["settings"].get(k) != self.settings[k]]
        if other:
            say(f"the training checkpoint {self.path} was made with another {', '.join(other)}; it is ignored and "
                "the training starts from the beginning")
            return fresh
        return state

    def finished(self, role: str):
        """A finished model's weights (the target, while the draft trains), or None."""
        return self.state["finished"].get(role)

    def finish(self, role: str, model) -> None:
        self.state["finished"][role] = model.state_dict()
        self.state["stage"] = None
        self._write()

    def stage(self, desc: str) -> Stage:
        return Stage(self, desc)

    def _write(self) -> None:
        import torch

        tmp = self.path.with_name(self.path.name + f".tmp-{os.getpid()}")
        try:
            torch.save(self.state, tmp)
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
        self._saved_at = time.monotonic()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class Stage:
    """One training stage's view of the checkpoint (train.train_model uses it)."""

    def __init__(self, ck: Checkpoint, desc: str):
        self.ck, self.desc = ck, desc

    def resume(self):
        """None (start this stage afresh), SKIP (a later stage is saved), or this stage's saved state."""
        saved = self.ck.state["stage"]
        if saved is None or saved["desc"] not in self.ck.stages or self.desc not in self.ck.stages:
            return None
        if saved["desc"] == self.desc:
            return saved
        later = self.ck.stages.index(saved["desc"]) > self.ck.stages.index(self.desc)
        return SKIP if later else None

    def due(self) -> bool:
        return time.monotonic() - self.ck._saved_at >= SAVE_EVERY_SECONDS

    def save(self, state: dict) -> None:
        self.ck.state["stage"] = {"desc": self.desc, **state}
        self.ck._write()


@contextlib.contextmanager
def stops_held():
    """Ctrl-C (SIGINT) and SIGTERM noted, not acted on, while a training loop runs: it saves the checkpoint at the end
    of the step under way and then stops (an interruption inside the optimizer's update would save half a step).
    Yields the list of signals noted. Only where Python's own handling is in place (the main thread; a SIGINT a
    background shell ignores stays ignored)."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = {}
    for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(sig) is default:
            previous[sig] = signal.signal(sig, lambda signum, _frame: pending.append(signum))
    try:
        yield pending
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if pending:  # noted after the loop's last check
        stop(pending)


def stop(pending: list[int]):
    """The noted stop, as it would have come."""
    if pending[0] == signal.SIGTERM:
        raise SystemExit(128 + signal.SIGTERM)
    raise KeyboardInterrupt
