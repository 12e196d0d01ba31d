"""Progress of long work (training the demo pair, building the pair pool), for the terminal and for a page.

Every long loop makes its bar with `bar(...)`: a tqdm bar on stderr, as before. While a `Board` is watching
(`with watching(board):`, in the process doing the work), each bar also publishes to the board, which keeps one
JSON snapshot file up to date: the stage, its count, and an estimate of the rest of the work. The app, in
another process, reads that file to show a progress bar on its page (evalkit/ui/prepare.py).

The estimate: each stage has an expected duration (a plan, measured on the build machine); stages done so far tell
how much faster or slower this machine is, and the current stage's own rate gives its remaining time.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import sys
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

_board: contextvars.ContextVar["Board | None"] = contextvars.ContextVar("evalkit_progress_board", default=None)
_steps: contextvars.ContextVar["Callable[[str], None] | None"] = contextvars.ContextVar("evalkit_progress_steps",
                                                                                 default=None)


@dataclass
class Snapshot:
    """What a page shows: the stage and its count, the whole job's share done and the seconds left."""

    stage: str = ""
    n: int = 0
    total: int | None = None
    fraction: float = 0.0  # of the whole job, by the plan's weights
    elapsed: float = 0.0
    remaining: float | None = None  # seconds, None until there is a rate to go by
    done: bool = False
    error: str = ""
    stages: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


# What each stage of the preparation (the bars' names: evalkit.demo.build, the pool) is, for a presenter who is no
# engineer, in both languages (the page's panel and the terminal say it alike): "train target (75 / 1250)" and an English-only stage in the Chinese half said neither
STAGE_WORDS = {
    "starting": ("starting", "正在启动"),
    "demo corpus": ("writing the demo models' training texts", "生成演示模型的训练文本"),
    "demo tokenizer": ("building the demo models' vocabulary", "构建演示模型的词表"),
    "train target": ("training the target model (the large one)", "训练目标模型（大模型）"),
    "train draft": ("training the draft model (the small one)", "训练草稿模型（小模型）"),
    "distil draft on target": ("teaching the draft model to guess the target's next words",
                               "让草稿模型学习预测目标模型的下一个词"),
    "pair pool": ("generating the pairs raters will judge", "生成供评分的输出对"),
}


def stage_words(stage: str) -> tuple[str, str]:
    """A stage's words (English, Chinese); a grown model's stage ("train target (16 layers)") is its model's, at full
    size; a stage not listed keeps its name."""
    if stage in STAGE_WORDS:
        return STAGE_WORDS[stage]
    base, _, rest = stage.partition(" (")
    if base in STAGE_WORDS and rest.endswith(" layers)"):
        en, zh = STAGE_WORDS[base]
        return f"{en}, grown to {rest[:-1]}", f"{zh}，扩展到 {rest[:-len(' layers)')]} 层"
    return stage, stage


def duration(seconds: float, lang: str = "en") -> str:
    """Seconds as a reader says them: "8 min 21 s", "8 分 21 秒"."""
    seconds = max(0, int(round(seconds)))
    if lang == "zh":
        return f"{seconds // 60} 分 {seconds % 60:02d} 秒" if seconds >= 60 else f"{seconds} 秒"
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class Board:
    """Collects the bars' progress against a plan of (stage, expected seconds) and writes snapshots to `path`
    (atomically, at most every `every` seconds); with no path, it keeps them for `snapshot()` only (a reader in the
    same process)."""

    def __init__(self, path: Path | None, plan: list[tuple[str, float]], every: float = 0.5, clock=time.monotonic,
                 announce=None):
        """announce(stage, snapshot), when given, is called as each stage begins."""
        self.path, self.plan, self.every, self.clock = Path(path) if path else None, list(plan), every, clock
        self.announce = announce
        self.t0 = clock()
        self._lock = threading.Lock()
        self._last_write = 0.0
        self._finished: dict[str, float] = {}  # stage -> seconds it took
        self._current: tuple[str, int, int | None, float] | None = None  # stage, n, total, started
        self.write(force=True)

    def _stage(self, desc: str) -> str:
        """The plan's stage a bar belongs to (a bar's description starts with the stage's name)."""
        names = [name for name, _ in self.plan]
        if desc in names:
            return desc
        # the longest: "train target (16 layers), resumed at step 40" is "train target (16 layers)", not "train target"
        return max((name for name in names if desc.startswith(name)), key=len, default=desc)

    def update(self, desc: str, n: int, total: int | None) -> None:
        stage = self._stage(desc)
        with self._lock:
            now = self.clock()
            began = self._current is None or self._current[0] != stage
            if began:
                if self._current is not None:
                    self._finished[self._current[0]] = now - self._current[3]
                self._current = (stage, n, total, now)
            else:
                self._current = (stage, n, total, self._current[3])
            if total and n >= total:
                self._finished[stage] = now - self._current[3]
        self.write()
        if began and self.announce is not None:
            self.announce(stage, self.snapshot())

    def snapshot(self) -> Snapshot:
        with self._lock:
            now = self.clock()
            expected = dict(self.plan)
            weight = sum(expected.values()) or 1.0
            done_w = sum(expected.get(s, 0.0) for s in self._finished)
            snap = Snapshot(elapsed=now - self.t0, stages=[s for s, _ in self.plan])
            cur_frac, cur_left = 0.0, None
            if self._current is not None:
                stage, n, total, started = self._current
                snap.stage, snap.n, snap.total = stage, n, total
                if stage not in self._finished and total:
                    cur_frac = min(1.0, n / total)
                    spent = now - started
                    cur_left = spent * (1 - cur_frac) / cur_frac if cur_frac > 0 else None
                    done_w += cur_frac * expected.get(stage, 0.0)
            snap.fraction = min(1.0, done_w / weight)
            # stages not started: their planned time, scaled by how this machine did on the finished ones
            took = sum(self._finished.values())
            planned = sum(expected.get(s, 0.0) for s in self._finished)
            speed = took / planned if planned > 0 and took > 0 else 1.0
            current = self._current[0] if self._current else None
            later = sum(v for s, v in self.plan if s not in self._finished and s != current) * speed
            if cur_left is None and current in expected and current not in self._finished:
                cur_left = expected[current] * speed  # no rate of its own yet: its plan, at this machine's pace
            if cur_left is not None or current is None or current in self._finished:
                snap.remaining = (cur_left or 0.0) + later
            return snap

    def write(self, force: bool = False, **final) -> None:
        if self.path is None:
            return
        now = self.clock()
        if not force and now - self._last_write < self.every:
            return
        self._last_write = now
        snap = self.snapshot()
        for k, v in final.items():
            setattr(snap, k, v)
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(snap.to_json(), ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.path)

    def finish(self, error: str = "") -> None:
        self.write(force=True, done=not error, error=error, remaining=0.0 if not error else None,
                   fraction=1.0 if not error else self.snapshot().fraction)


def read(path: Path) -> Snapshot | None:
    """The latest snapshot in a board's file; None while there is none yet."""
    try:
        return Snapshot(**json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


@contextlib.contextmanager
def watching(board: Board):
    """Bars made inside this block (in this thread) publish to the board."""
    token = _board.set(board)
    try:
        yield board
    finally:
        _board.reset(token)


def bar(**kw):
    """A tqdm bar on stderr (kw as for tqdm: total, desc, unit, disable, position ...) that also publishes to the
    watching board, if any. Away from a terminal (a log file, a pipe, a Space's log) it writes whole lines now and
    then rather than redraws: see `_lines`."""
    from tqdm.auto import tqdm

    board = _board.get()
    kw.setdefault("file", sys.stderr)
    kw.setdefault("dynamic_ncols", True)
    base = tqdm if _redraws(kw["file"], tqdm) else _lines(tqdm)
    if board is None:
        return _opened(base(**kw))

    class Published(base):
        def update(self, n=1):
            # the board and the whole's time left first, so that this update's own drawing (or line) says them
            board.update(self.desc or "", self.n + n, self.total)
            self.set_postfix_str(whole_left(board.snapshot()), refresh=False)
            return super().update(n)

    b = Published(**kw)
    board.update(b.desc or "", b.n, b.total)  # a resumed training's bar starts at its saved step
    b.set_postfix_str(whole_left(board.snapshot()), refresh=False)
    return _opened(b)


def _redraws(file, tqdm) -> bool:
    """Whether a bar may redraw itself: on a terminal, or in a notebook (tqdm's widget)."""
    if any(c.__module__ == "tqdm.notebook" for c in tqdm.__mro__):
        return True
    try:
        return file.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


# Away from a terminal a bar writes a line when its count has moved on by this share of its total, or, when it has
# moved at all, after this many seconds: some 20 to 40 lines for a stage of tens of minutes.
LINE_SHARE, LINE_SECONDS = 0.05, 60.0


@functools.cache
def _lines(tqdm):
    """A bar for a log: `./scripts/start.sh > log 2>&1`, nohup or a Space's log got the terminal's redraws, carriage
    returns that made one line of megabytes no person or log viewer can read. This one writes whole lines, each with
    the count, the share, the rate and the time left (and the postfix: the step under way, the whole's time left),
    now and then, at once when a postfix is set to be shown (a command's next step), and the last count at close."""

    class Lines(tqdm):
        def __init__(self, *a, **kw):
            self._said, self._said_at, self._force = None, 0.0, False  # tqdm's __init__ may display already
            super().__init__(*a, **kw)

        def display(self, msg=None, pos=None):
            if msg is not None:  # a clearing ('') or "(more hidden)": a log has nothing to redraw
                return False
            if self._due():
                self.fp.write(self.line() + "\n")
                getattr(self.fp, "flush", lambda: None)()
                self._said, self._said_at = (self.n, self.postfix), self._time()
            self._force = False
            return True

        def _due(self) -> bool:
            if (self.n, self.postfix) == self._said:
                return False
            if self._force or self._said is None:
                return True
            said_n = self._said[0]
            if self.total and int(self.n / self.total / LINE_SHARE) > int(said_n / self.total / LINE_SHARE):
                return True
            return self.n != said_n and self._time() - self._said_at >= LINE_SECONDS

        def line(self) -> str:
            n, total, unit = self.n, self.total, self.unit
            units = unit if unit.endswith("s") or (total or n) == 1 else unit + "s"
            elapsed = self._time() - self.start_t if hasattr(self, "start_t") else 0.0
            done = n - self.initial  # a resumed training counts its rate from where it resumed
            rate = done / elapsed if elapsed > 0 and done > 0 else None
            count = f"{round(100 * n / total)}% ({n}/{total} {units})" if total else f"{n} {units}"
            facts = [f"after {duration(elapsed)}"]
            if rate:  # slow work reads as seconds per unit, as tqdm's own bar says it
                facts.append(f"{1 / rate:.3g} s/{unit}" if rate < 1 else f"{rate:,.3g} {unit}/s" if rate < 100
                             else f"{rate:,.0f} {unit}/s")
                if total and n < total:
                    facts.append(f"about {duration((total - n) / rate)} left")
            said = f"{self.desc}: {count}, {', '.join(facts)}"
            return f"{said}; {self.postfix}" if self.postfix else said

        def set_postfix_str(self, s="", refresh=True):
            self._force = self._force or refresh  # shown now: a command's next step is news for the log
            super().set_postfix_str(s, refresh=refresh)

        def clear(self, nolock=False):
            pass  # tqdm.write clears bars before its line: lines stay as written

        def moveto(self, n):
            pass  # positions (one bar per process) are lines of a terminal

        def close(self):
            if not self.disable and hasattr(self, "start_t"):
                self._force = True
                self.display()  # the last count, once
                self.leave = False  # its line is written: nothing to redraw or end
            super().close()

    return Lines


_open_bars: "weakref.WeakSet" = weakref.WeakSet()


def _opened(b):
    _open_bars.add(b)
    return b


def close_bars() -> None:
    """Close every bar still open, each ending its line: an error printed while one was open (a command's refusal
    mid-work) was glued to the end of the bar's line, and the bar was drawn again below it as the process ended."""
    for b in list(_open_bars):
        b.close()


class Steps:
    """A bar over a few named steps of one command (`evalkit export`: the look, the tables, the files, the push), for
    work that is long only as a whole: tens of seconds of silence on a study-sized pool. `step(name)` closes the one
    before and shows `name` as the one under way."""

    def __init__(self, desc: str, total: int):
        self._desc, self._total, self._bar = desc, total, None

    def step(self, name: str) -> None:
        if self._bar is None:  # made with its first step's name: a log's first line says it
            self._bar = bar(total=self._total, desc=self._desc, unit="step", postfix=name)
            return
        self._bar.set_postfix_str(name, refresh=False)  # the count's own drawing (or log line) names the new step
        self._bar.update(1)
        self._bar.set_postfix_str(name)  # shown now, even within tqdm's minimum interval (once: a log's line too)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(1)
            self._bar.close()

    def announcing(self):
        """Inside this block (in this thread), the library's own `step(name)` calls move this bar."""
        return announcing(self.step)


@contextlib.contextmanager
def announcing(to):
    """Inside this block (in this thread), the library's own `step(name)` calls go to `to(name)`: a command's bar
    (`Steps.announcing`), or a page's progress (the Results tab's)."""
    token = _steps.set(to)
    try:
        yield to
    finally:
        _steps.reset(token)


def step(name: str) -> None:
    """A library function's step (aggregate's analysis), said to whoever announces it (`announcing`); nothing
    otherwise: report and export, which call the same function, have steps of their own."""
    if (said := _steps.get()) is not None:
        said(name)


def whole_left(snap: Snapshot) -> str:
    """The whole job's time left, beside each bar's own: a bar's "[16:20<02:47]" is its stage's alone, and the
    terminal is all a presenter watching `./scripts/start.sh` has ("" while there is no estimate)."""
    return "" if snap.remaining is None else f"all steps: about {duration(snap.remaining)} left"
