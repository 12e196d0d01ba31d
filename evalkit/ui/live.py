"""The Live tab, for stakeholders: one prompt through every path the registry lets it run (ordinary, assisted, and
any other switched on, such as prompt lookup) on the loaded models, streamed side by side, then the timing table. Not blind, and never rated: the runs are stored as generations flagged
`live` under an experiment of kind "live", and never enter the pairs table.

It labels outputs with their path, so it must never show an output a rater can be shown in a pair:
live runs draw their seeds above the pool's (config.POOL_SEED_LIMIT), so they never repeat a pooled sample's
random draws; a greedy pool's bundled prompts are refused (greedy would reproduce the rated outputs); and as a
last guard the streamed text is held back while it is still the beginning of a pooled output (of any prompt:
a degenerate output can repeat across prompts), and a run that ends equal to one, or begins with a whole one (a
pool made with a lower max_new_tokens) or with one's beginning past where its pair's two sides part (which tells
that side's path), is withheld and not stored.

Who may use it (app.live_access): on a Space organisers by default, locally anyone; each browser session and
each client address gets app.live_runs_per_hour runs."""

from __future__ import annotations

import html
import secrets
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..config import POOL_SEED_LIMIT, Config
from ..errors import EvalkitError
from ..generation import registry
from ..generation.fallbacks import MESSAGE_CHARS
from ..rating.limits import LimitError, RateLimiter
from ..task.prompts import Prompt
from ..records import GenerationPath, GenerationRecord
from . import auth
from .db import connect
from .alerts import friendly, gradio_hints
from ..rating.queue import RatingError
from ..rating.roster import SignInError
from .session import Session, require_rater

if TYPE_CHECKING:  # gradio is imported where it is used (it is slow to import)
    import gradio as gr

WITHHELD = ("(withheld: this live output is, or begins as, an output raters judge blind, so it is not shown under "
            "its path's name while the study runs · 与待评输出相同或开头相同，评分期间不显示)")


# Typed material this close to a rated prompt's (difflib's ratio, after NFKC and with all whitespace removed) is that
# prompt again for a greedy pool: a changed space or full stop reproduces its rated outputs almost token for token.
NEAR_MATERIAL = 0.9


def _bare(text: str) -> str:
    import unicodedata

    return "".join(unicodedata.normalize("NFKC", text).split())


def near_rated_material(typed: str, prompts: dict[str, Prompt], rated) -> str | None:
    """The rated prompt (one with pairs in the pool) whose material the typed text is, or nearly is; None if none."""
    from difflib import SequenceMatcher

    mine = _bare(typed)
    for prompt_id in sorted(rated):
        theirs = _bare(prompts[prompt_id].material) if prompt_id in prompts else ""
        if theirs and (mine == theirs or SequenceMatcher(None, mine, theirs, autojunk=False).ratio() >= NEAR_MATERIAL):
            return prompt_id
    return None


def live_seed() -> int:
    """A seed no pooled sample uses (pool seeds are below POOL_SEED_LIMIT; numpy's seeds stop at 2**32)."""
    return POOL_SEED_LIMIT + secrets.randbelow(2**32 - POOL_SEED_LIMIT)


def live_access(cfg: Config, space: bool) -> str:
    """Who may run the Live tab. "auto": its organisers on a Space and in a local study by invitation (the tab labels
    fresh outputs of each path for the very prompts being rated: a rater who reads them learns each path's style,
    and her ratings are no longer blind; attacker audit F6), anyone with open sign-up locally (the offline demo a
    presenter shows without signing in)."""
    mode = cfg.app.live_access
    if mode != "auto":
        return mode
    return "organisers" if space or cfg.app.signup == "invite" else "anyone"


def check_access(cfg: Config, space: bool, s: Session | None) -> None:
    mode = live_access(cfg, space)
    if mode == "anyone":
        return
    if s is None or not s.rater:
        if space:  # a page signed in before the Space restarted shows no sign-in button: its reload signs in again
            raise EvalkitError("the Live tab needs you to be signed in with Hugging Face",
                               "reload the page: if you signed in before (the Space may have restarted since), it signs "
                               "you in again; else use 'Sign in with Hugging Face' on the Rate tab")
        raise EvalkitError("the Live tab needs you to be signed in", "sign in on the Rate tab first")
    if mode == "organisers" and not s.organiser:
        raise EvalkitError("the Live tab is for the study's organisers while the study runs",
                           "ask an organiser for a demonstration (app.live_access)")

POLL_SECONDS = 0.15
TRAINING_POLL_SECONDS = 1.0
# While a run streams, the rater's access (her code, her sign-in) is read again at most this often: a revoke stops the
# run within about this long rather than letting it stream to its end (one read of her row a second is cheap)
ACCESS_CHECK_SECONDS = 1.0


def training_words(snap) -> str:
    """The Live status while the demo pair trains for the first run: how far, and how long is left."""
    from .prepare import progress_parts

    pct, where, where_zh = progress_parts(snap)
    return (f"Training the offline demo pair for the first run (once: it is kept for later runs): **{pct}%** · "
            f"{where} · 正在为首次运行训练离线演示模型（仅一次）：{pct}% · {where_zh}")


# What each step of loading the pair (generation.models.load_pair) is called on the Live status line
LOAD_STEP_WORDS = {
    "check": ("checking that the two models fit together", "检查两个模型是否匹配"),
    "target": ("loading the target model", "加载目标模型"),
    "draft": ("loading the draft model", "加载草稿模型"),
}


def loading_step_words(name: str, n: int, total: int, seconds: float) -> str:
    """The Live status while the models load for the first run: which step, and for how long so far (it moves every
    second: one "Loading the models…" line stood still through a real pair's minutes of loading, as if hung)."""
    en, zh = LOAD_STEP_WORDS.get(name, (name, name))
    s = int(seconds)
    return (f"Loading the models for the first run (once: later runs use them as loaded): step {n} of {total}, {en}… "
            f"{s} s · 正在为首次运行加载模型（仅一次）：第 {n}/{total} 步，{zh}…已用 {s} 秒")


class LiveModels:
    """The target and draft for live runs: loaded on first use, once, then shared read-only.

    Live events run one at a time (concurrency_limit=1), and a generation on the models takes its turn
    (generation.meters.model_lock): a run left mid-way, still generating in its thread after its page went, never
    overlaps the next one."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self._pair = None
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._loading = None  # (thread, progress board or None, box) while the pair loads (or trains) for a Live run
        self.warm = False  # a path has run on the loaded pair: its one-time warm-up is paid
        self.turn = 0  # the runs started: the paths' order alternates with it (run_order)

    @property
    def loaded(self) -> bool:
        return self._pair is not None

    def loading_words(self) -> str:
        """What the first run waits for: loading, or (the demo pair missing, as after a Space's restart without
        persistent storage) training it first, which takes minutes, not seconds."""
        from ..generation.models import demo_stages

        if stages := demo_stages(self.cfg):
            minutes = max(1, round(sum(seconds for _, seconds in stages) / 60))
            return (f"Training the offline demo pair first (about {minutes} min, once: it is kept for later runs), "
                    f"then loading it… · 先训练离线演示模型（约 {minutes} 分钟，仅一次），然后加载…")
        return "Loading the models (first run only)… · 正在加载模型（仅首次）…"

    def get(self, board=None, step=None):
        """The pair, loaded on first use. board (a progress.Board): the demo pair's training, when it happens here,
        publishes its progress to it (and its bars to the server's log); step: load_pair's step callback."""
        with self._lock:
            if self._pair is None:
                from ..generation.models import load_pair
                from ..progress import watching

                if board is None:
                    self._pair = load_pair(self.cfg, progress=False, step=step)
                else:
                    with watching(board):
                        self._pair = load_pair(self.cfg, progress=True, step=step)
            return self._pair

    @property
    def training(self) -> bool:
        """Does the demo pair train for a Live run now, or will the first run's load train it (rather than only load)?"""
        from ..generation.models import demo_stages

        if (loading := self._loading) is None:
            return not self.loaded and bool(demo_stages(self.cfg))
        return loading[1] is not None and loading[2]["step"] in (None, "check")

    def get_with_progress(self):
        """get(), for a generator that shows progress: yields status words every second while the pair loads (which
        step, for how long) or the demo pair trains first (minutes: its stage, share done and time left), then returns
        the pair (the generator's return value). One load, kept on this object: a page left mid-way leaves it running,
        and the next run shows the same one."""
        if self.loaded:
            return self._pair
        from ..generation.models import demo_stages
        from ..progress import Board

        with self._starting:
            if self._loading is None and not self.loaded:
                stages = demo_stages(self.cfg)
                board, box = Board(None, stages) if stages else None, {"step": None, "at": None}

                def at_step(name, n, total):
                    box["at"], box["step"] = (n, total, time.monotonic()), name

                def work():
                    try:
                        box["pair"] = self.get(board, at_step)
                    except BaseException as e:  # noqa: BLE001 - re-raised in the waiting run's thread
                        box["error"] = e

                thread = threading.Thread(target=work, daemon=True, name="evalkit-live-load")
                thread.start()
                self._loading = (thread, board, box)
            loading = self._loading
        if loading is None:  # loaded meanwhile
            return self._pair
        thread, board, box = loading
        while thread.is_alive():
            if self.training:
                yield training_words(board.snapshot())
            elif box["at"] is None:  # the first step is a moment away
                yield self.loading_words()
            else:
                n, total, since = box["at"]
                yield loading_step_words(box["step"], n, total, time.monotonic() - since)
            thread.join(TRAINING_POLL_SECONDS)
        with self._starting:
            if self._loading is loading:  # a failed load is tried again by the next run
                self._loading = None
        if "error" in box:
            raise box["error"]
        return box["pair"]


def _text_buffer(tokenizer, pooled: set[tuple[int, ...]] = frozenset(), telling: set[tuple[int, ...]] = frozenset()):
    """A Transformers streamer that collects the decoded text; the UI polls it (a failed run never blocks).

    `pooled`: the token ids of the pooled outputs. While the ids generated so far are still the
    beginning of one of them, `text` stays empty: nothing that could become a rated output is shown. Once they
    hold a whole pooled output as their beginning (a pool cut at a lower max_new_tokens, run on with the same
    draws), or a `telling` beginning of one (pairs.telling_prefixes: past where its pair's two sides part), it stays
    empty for good: the rest would show that output, or the part that tells its side, under its path's name."""
    forbidden = set(pooled) | set(telling)
    from transformers import TextStreamer

    class TextBuffer(TextStreamer):
        def __init__(self):
            super().__init__(tokenizer, skip_prompt=True, skip_special_tokens=True)
            self.parts: list[str] = []
            self.ids: list[int] = []
            self.candidates = [c for c in pooled if c]  # pooled outputs the live one still agrees with
            self.covers = False  # a whole pooled output, or a telling beginning of one, is the beginning of this one
            self.abandoned = False

        def put(self, value):
            if self.abandoned:  # nobody is watching: end the run rather than hold the models for nothing
                raise RunAbandoned("the Live run was left (its page closed or reloaded)")
            if not (self.skip_prompt and self.next_tokens_are_prompt):
                before = len(self.ids)
                self.ids += [int(t) for t in value.reshape(-1).tolist()]
                n, ids = len(self.ids), tuple(self.ids)
                # a beginning that must not be shown is now this run's: each length is checked once, as it is reached
                self.covers = self.covers or any(ids[:k] in forbidden for k in range(before + 1, n + 1))
                self.candidates = [c for c in self.candidates if tuple(c[:n]) == ids]
            super().put(value)

        def on_finalized_text(self, text: str, stream_end: bool = False):
            self.parts.append(text)

        @property
        def held(self) -> bool:
            return bool(self.candidates) or self.covers

        @property
        def text(self) -> str:
            return "" if self.held else "".join(self.parts)

    return TextBuffer()


RUN_UNDER_WAY = "Running… (Stop ends it) · 运行中…（按“停止”可结束）"
STOPPED = "Stopped: nothing of this run was stored. · 已停止：本次运行未保存。"
# Stop's one answer, the same whether a run is under way or not (it tells nothing of the page's state): "Stopping…"
# pressed with nothing running stayed on the status line for good, as if a run hung; a run under way replaces it
STOP_SENT = ("Stop sent: a run under way on this page ends at its next token and stores nothing; one still waiting "
             "for another page's to end does not start · 已发送停止：本页正在进行的运行将在下一个词元处结束，不保存任何内容；"
             "仍在排队的运行不会开始")
STOPPED_TRAINING = ("Stopped: nothing of this run was stored; the demo pair's training goes on, and the next run "
                    "waits for it · 已停止：本次运行未保存；演示模型的训练继续进行，下次运行会等待它完成。")
STOPPED_LOADING = ("Stopped: nothing of this run was stored; the models go on loading, and the next run waits for "
                   "them · 已停止：本次运行未保存；模型继续加载，下次运行会等待其完成。")


class RunAbandoned(Exception):
    """Raised inside generate() by the streamer of a Live run nobody watches any more."""


def models_busy(pair) -> bool:
    """Is a generation on these models under way in another thread (a Live run left mid-way, still ending)?"""
    from ..generation.meters import model_lock

    lock = model_lock(pair.target)
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True


def _in_thread(fn, buffers, fallback_note: str = "", stop: threading.Event | None = None,
               check: Callable[[], None] | None = None):
    """Run fn() in a thread and yield the streamed text while it runs; the result (or error) ends in box. Closed
    before the end (the page left: Gradio stops iterating), asked to `stop` (the Stop button), or refused by `check`
    (called at each poll; it raises when the rater's access was withdrawn: _access_check), it tells the streamers,
    whose next token ends the run: the models are freed for the next run, which would otherwise wait."""
    box: dict = {}

    def work():
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=work, daemon=True, name="evalkit-live")
    thread.start()
    shown = None
    try:
        while True:
            alive = thread.is_alive()
            # the fallback's text is labelled even when the failed path wrote nothing first: unlabelled, it read as
            # the failed path's own output in that path's box
            first, *rest = [b.text for b in buffers]
            text = first + "".join(fallback_note + t for t in rest if t)
            text = text if first else text.lstrip("\n")
            if text != shown:
                shown = text
                yield text, box
            if not alive:
                break
            if stop is not None and stop.is_set():
                for b in buffers:
                    b.abandoned = True
            if check is not None and alive:
                check()
            time.sleep(POLL_SECONDS)
    except BaseException:  # closed, or refused by check: the run ends at its next token
        for b in buffers:
            b.abandoned = True
        raise
    thread.join()
    if shown is None:
        yield "", box


def _access_check(still_allowed: Callable[[], None]) -> Callable[[], None]:
    """`still_allowed` (raising when the rater's access is withdrawn), called at most once every ACCESS_CHECK_SECONDS,
    the first a while after the run's start (which checked it): _in_thread's `check`."""
    last = [time.monotonic()]

    def check() -> None:
        if time.monotonic() - last[0] >= ACCESS_CHECK_SECONDS:
            last[0] = time.monotonic()
            still_allowed()

    return check


def _row(rec: GenerationRecord) -> str:
    s = f"{rec.generate_seconds:.3f}" if rec.generate_seconds is not None else "—"
    tps = f"{rec.tokens_per_second:.1f}" if rec.tokens_per_second is not None else "—"
    draft = f"{rec.draft_accepted} / {rec.draft_proposed}" if rec.draft_proposed is not None else "—"
    status = rec.status if rec.ok else f"failed at {rec.error_stage}: {rec.error_class} · 失败"
    return f"| {rec.path} | {status} | {s} | {rec.new_tokens} | {tps} | {rec.stop_reason or '—'} | {draft} |"


def batch_note(db) -> str:
    """What the latest benchmark with batch sizes that measures what the served study rates says about serving in
    batches: one streamed request per path says nothing about a server that batches its requests."""
    from ..aggregate.timing import batches, bench_devices
    from ..study.studies import choose

    # the benchmark the aggregate, the report and the Results tab read for the study the app serves: one of another
    # decoding or draft setting is left out there, so here too (demo audit M2: a greedy one-prompt benchmark's
    # "184.1 new tokens/s" sat under a sampling run while every other view left it out)
    study = choose(db)
    from ..aggregate.data import gate_device

    _, comparison, exp_id, notes = batches(db, study.id if study is not None else None, gate_device(study))
    if comparison is None:
        return ("Batches: Transformers runs assisted generation one request at a time; `evalkit bench --batch-sizes "
                "1,2,4,8` measures whether ordinary at your batch size delivers more tokens per second"
                + (f" ({'; '.join(notes)})." if notes else "."))
    # the device that benchmark ran on: one measured on a GPU reads otherwise as if it were this laptop's live run
    devices = bench_devices(db, exp_id)
    on = f", on {', '.join(devices)}" if devices else ""
    return (f"Batches (benchmark experiment {exp_id}{on}, assisted at batch 1 against ordinary at each batch size): "
            f"{comparison.answer}.")


def hourly_limit_reached(e: LimitError, limit: int) -> LimitError:
    """The Live tab's hourly limit, said as the clock time the next run can start (a demo is planned by the clock:
    "wait 3412 s" made the presenter do the sum) and whose count is full: this browser's, or this address's."""
    import math

    wait = e.wait or 0.0
    at = time.strftime("%H:%M %Z", time.localtime(time.time() + wait)).strip()
    who = "browser" if e.key.startswith("session:") else "address"
    return LimitError(f"the live runs' hourly limit is reached ({limit} in the last hour from this {who}): the next "
                      f"run can start at {at} (in {max(1, math.ceil(wait / 60))} min)",
                      "wait until then; nothing was stored (app.live_runs_per_hour in the app's config sets the limit, "
                      "0 for none)", wait=wait, key=e.key)


def speed_words(path: str, o: GenerationRecord, a: GenerationRecord, tolerance: float, warmed_by: str = "") -> str:
    """One path against ordinary in this run, in words a manager reads right: the seconds of both, "as fast" or
    "slower", whether the outputs were the same, and why no ratio is shown when they are not comparable, or when one
    side paid the one-time warm-up (warmed_by: the first run since the models loaded)."""
    from ..generation.speed import identical, pair_speedup

    run = {"stop_reason": o.stop_reason, "new_tokens": o.new_tokens, "seconds": o.generate_seconds}
    speedup = pair_speedup(run, {"stop_reason": a.stop_reason, "new_tokens": a.new_tokens,
                                 "seconds": a.generate_seconds}, tolerance)
    same = identical({"token_hash": o.token_hash or None}, {"token_hash": a.token_hash or None})
    why = ("sampling draws each path's words on its own · 采样时各路径独立抽词" if o.decoding == "sample" else
           "greedy: in float32 they should not; lower precision can make them · 贪心解码：float32 下本应相同，低精度可能不同")
    outputs = ("the two outputs are the same, token for token · 两个输出逐词相同" if same else
               f"the two outputs differ ({why}) · 两个输出不同")
    if speedup is None:
        return (f"- **{path}**: no ratio shown, its output and ordinary's are not comparable (stop: {a.stop_reason} "
                f"vs {o.stop_reason}; {a.new_tokens} vs {o.new_tokens} new tokens): compare tokens/s · "
                f"两者输出不可比（停止原因或长度不同），不给比值，请看每秒词元数")
    if warmed_by in (path, o.path):
        # a ratio against seconds that hold the warm-up is no measurement: ordinary ran first and paid it, and a
        # "2.5× as fast" headline came from the warm-up alone (demo audit, 2026-12-05)
        ratio = (f"no ratio on the first run since the models loaded, as {warmed_by}'s seconds include the one-time "
                 f"warm-up: run again to compare · 模型加载后的首次运行不给比值（{zh_name(warmed_by)}路径的时间含一次性"
                 "预热），请再运行一次再比较")
    elif round(speedup, 2) >= 1:  # by the figure shown: 0.996 read "slower than ordinary (1.00×)"
        ratio = f"{speedup:.2f}× as fast as ordinary · 是普通路径的 {speedup:.2f} 倍速"
    else:
        ratio = f"slower than ordinary ({speedup:.2f}×) · 比普通路径慢（{speedup:.2f}×）"
    # comparable within the tolerance is not equal: the seconds then time unequal work, and both cut at the token
    # limit is why both texts stop mid-sentence on screen
    tokens = "" if a.new_tokens == o.new_tokens else (
        f"; it wrote {a.new_tokens} new tokens, ordinary {o.new_tokens} · 新词元数 {a.new_tokens} 对 {o.new_tokens}")
    cut = ("; both stopped at the token limit (decoding.max_new_tokens), so both texts are cut off · "
           "两者都在词元上限处截断" if o.stop_reason == a.stop_reason == "max_new_tokens" else "")
    return (f"- **{path}**: {a.generate_seconds:.2f} s against ordinary's {o.generate_seconds:.2f} s in this run: "
            f"{ratio}; {outputs}{tokens}{cut}")


def run_order(names: list[str], turn: int) -> list[str]:
    """The paths in the order run `turn` takes them: the boxes' order, reversed every other run, so that ordinary
    runs before each other path in one run and after it in the next, as the pool's paths take turns pair by pair. A
    path always run second met a machine the first had just warmed on the same prompt (Live audit, 2026-12-06)."""
    return list(names) if turn % 2 == 0 else list(reversed(names))


def order_words(order: list[str]) -> str:
    """The timing table's line saying which path ran first in this run ('' for fewer than two)."""
    if len(order) < 2:
        return ""
    return (f"**Order**: {', then '.join(order)}; the paths take turns going first, run by run (the next run "
            f"reverses it) · **运行顺序**：{'，然后'.join(map(zh_name, order))}；各路径逐次轮流先运行（下一次运行顺序相反）")


def zh_name(name: str) -> str:
    """A path's short Chinese name, its Chinese label up to the colon ("辅助"): the Chinese half of the status lines
    named paths by their English ids ("正在运行 assisted 路径"), half a label in each language."""
    spec = next((s for s in registry.all_paths() if s.name == str(name)), None)
    return spec.label_zh.split("：")[0] if spec is not None and spec.label_zh else str(name)


def timing_table(records: list[GenerationRecord], tolerance: float, batches: str = "", warmed_by: str = "",
                 order: list[str] = ()) -> str:
    """warmed_by: on the first run on freshly loaded models, the path that ran first and paid the one-time warm-up;
    order: the paths in the order they ran (run_order)."""
    lines = ["| path · 路径 | status · 状态 | generate() s · 秒 | new tokens · 新 token 数 | tokens/s · token/秒 | "
             "stop · 停止原因 | draft accepted / proposed · 草稿接受/提议 |",
             "| --- | --- | ---: | ---: | ---: | --- | ---: |"]
    lines += [_row(r) for r in records]
    lines.append("")
    # the caveat first: a single run on a busy laptop can read anywhere from half to several times the measured figure
    devices = ", ".join(sorted({r.device for r in records if r.device}))  # the seconds are this machine's
    on, on_zh = (f", on {devices}", f"（设备：{devices}）") if devices else ("", "")
    lines.append(f"**This run only{on}: one streamed run per path is an illustration, not a measurement** (timings of "
                 "single runs vary widely; `evalkit bench` measures, in rounds, with an interval) · "
                 f"**仅此一次运行{on_zh}：演示，不是测量**（单次计时波动很大；请以 `evalkit bench` 的多轮测量及其区间为准）")
    if said := order_words(list(order)):
        lines += ["", said]
    if warmed_by:
        # the paths run one after another: the first pays the one-time warm-up (first kernels, caches, allocator), so
        # on the first run after loading every later path looks faster against it than it is
        lines.append("")
        lines.append(f"**First run since the models loaded**: {warmed_by} ran first and its seconds include the "
                     "one-time warm-up, which favours the paths after it; run again before comparing the seconds · "
                     f"**模型加载后的首次运行**：{zh_name(warmed_by)}路径先运行，其时间包含一次性预热，对其后的路径有利；"
                     "请再运行一次再比较时间")
    lines.append("")
    o = next((r for r in records if r.path == GenerationPath.ORDINARY and r.ok), None)
    for path in registry.versus_ordinary():  # each path against ordinary on its own (a fallback is none of them)
        a = next((r for r in records if r.path == path and r.ok), None)
        if o and a:
            lines.append(speed_words(path, o, a, tolerance, warmed_by))
    for f in (r for r in records if r.path == GenerationPath.FALLBACK):
        failed = next((r for r in records if not r.ok and r.path != f.path), None)
        # its cause, as every other report of a fallback gives it (fallbacks.py): class and stage alone left the
        # presenter without the reason; a code span shows the message as written, whatever Markdown it holds
        first = (failed.error_message or "").strip().splitlines()[:1] if failed else []
        cause = "".join(f": `{m[:MESSAGE_CHARS].replace('`', chr(39))}`" for m in first)
        what = f"{failed.path} failed ({failed.error_class} at {failed.error_stage}{cause})" if failed else "a path failed"
        wait = f"; the wait was {f.total_wait_seconds:.2f} s in all" if f.total_wait_seconds else ""
        lines.append(f"- {what}: the target then wrote alone (the fallback), timed apart and never counted as "
                     f"assisted{wait}; `evalkit check` says whether this pair can run it · "
                     "该路径失败，随后由目标模型单独生成（回退），单独计时，不算作辅助生成")
    if batches:
        lines.append("\n" + batches)
    return "\n".join(lines)


def live_paths(cfg: Config) -> list[registry.PathSpec]:
    """The paths with a box on the Live tab: the two sides of the rated pairs always (assisted says so when it is off
    or not approved), and every other live path the config switches on (prompt lookup, ...)."""
    return [s for s in registry.all_paths() if s.live and s.runnable and (s.in_pairs or s.enabled(cfg))]


@dataclass
class LiveTab:
    prompt: gr.Dropdown
    material: gr.Textbox
    run_btn: gr.Button
    outputs: dict[str, gr.Textbox]  # path name -> its box (live_paths), labelled with the registry's labels
    table: gr.Markdown
    status: gr.Markdown


def build_live_tab(cfg: Config, db_path: Path, prompts: dict[str, Prompt], models: LiveModels, session: gr.State,
                   space: bool, preparing=None, signout: gr.Button | None = None) -> LiveTab:
    import gradio as gr

    choices = [(f"{p.id} · {p.title}" if p.title else p.id, p.id) for p in prompts.values()]
    who = {"anyone": "anyone", "raters": "signed-in raters", "organisers": "the study's organisers"}[live_access(cfg, space)]
    who_zh = {"anyone": "所有人", "raters": "已登录的评分者", "organisers": "本研究的组织者"}[live_access(cfg, space)]
    gr.Markdown("Run one prompt through each path on the loaded models. Runs are stored as live runs and are "
                f"never part of the rated pool. Open to {who}; {cfg.app.live_runs_per_hour} runs per hour from each "
                "browser and each address (this computer counts as one: `app.live_runs_per_hour` sets it, 0 for no "
                "limit). · "
                f"用已加载的模型把一个提示分别走每条生成路径；结果记为现场运行，从不进入评分池。对{who_zh}开放，"
                f"每个浏览器、每个地址每小时 {cfg.app.live_runs_per_hour} 次（本机算一个地址；由 app.live_runs_per_hour 设置，0 为不限）。")
    from ..generation.models import uses_demo

    if uses_demo(cfg):  # a presenter's own material gets a notice about maintenance whatever it says: say why first
        gr.Markdown("These are the offline demo models, small and trained here on the bundled notices: they write "
                    "about a maintenance notice whatever the material, and show how the paths compare, not what a real "
                    "model writes (the README's \"Bring your own pair\" swaps in real ones). · 这是离线演示模型：体量小，"
                    "只在内置通知上训练，无论输入什么资料都会写一则维护通知；它展示各路径的对比，而不是真实模型的写作。")
    limiter = RateLimiter(cfg.app.live_runs_per_hour, window=3600, what="live runs", setting="app.live_runs_per_hour",
                          clock=time.time, kept=auth.KeptCounts(db_path, "live runs"))  # a restart clears no count
    stops: dict[str, threading.Event] = {}  # per page (Gradio session): its Stop button's flag
    started: set[str] = set()  # the pages whose run is under way (out of the queue): it answers their Stop itself
    with gr.Row():
        prompt_dd = gr.Dropdown(choices, value=choices[0][1] if choices else None, label="Bundled prompt · 内置提示")
        material = gr.Textbox(label="Or type your own material (keeps the chosen prompt's task) · "
                                    "或输入你自己的资料（沿用所选提示的任务）", lines=3)
    shown_paths = live_paths(cfg)
    n = len(shown_paths)
    with gr.Row():
        run_label = "Run both paths · 两条路径都运行" if n == 2 else f"Run all {n} paths · 运行全部 {n} 条路径"
        run_btn = gr.Button(run_label, variant="primary", scale=3)
        stop_btn = gr.Button("Stop · 停止", elem_id="live-stop", scale=1)
    status = gr.Markdown(label="live status")
    with gr.Row():
        outputs = {s.name: gr.Textbox(label=registry.bilingual(s), lines=10, interactive=False) for s in shown_paths}
    table = gr.Markdown(label="timing table", elem_id="live-table")
    ui = LiveTab(prompt_dd, material, run_btn, outputs, table, status)

    def arm_stop(request: gr.Request | None):
        """At the click, before the run joins the queue: the page's Stop flag, so a Stop pressed while the run waits
        behind another page's ends it as it starts (a flag already there is a run of this page under way: Stop is
        still for that one). The Run button is disabled until the run ends: a second click on it was dropped without
        a word while the first run went on, and read as a button that did nothing."""
        stops.setdefault(getattr(request, "session_hash", None) or "?", threading.Event())
        return gr.Button(RUN_UNDER_WAY, interactive=False)

    def live_handler(on_page: bool):
        """The run, for the page's Run button (on_page: a refusal is said on the status line and in a warning, and
        ends the event normally; raised, it put an "Error" badge over every output box and the status line, which
        read as a crash in front of an audience) or for API callers (a refusal is raised, as every refusal is)."""
        @friendly
        def run_live(s: Session, prompt_id: str, typed: str, request: gr.Request):
            page = getattr(request, "session_hash", None) or "?"
            stop = stops.setdefault(page, threading.Event())  # armed at the click; an API call arms its own here
            try:
                if stop.is_set():  # Stop pressed while this run waited in the queue: it ends before any work
                    yield {ui.status: STOPPED, ui.table: ""} | {box: "" for box in ui.outputs.values()}
                    return
                started.add(page)
                yield from _run(s, prompt_id, typed, request, stop, on_page)
            finally:  # the page's flag lives as long as its run: a Space running for weeks keeps no flag per visitor
                if stops.get(page) is stop:
                    del stops[page]
                    started.discard(page)

        run_live.__name__ = "run_live_page" if on_page else "run_live"
        return run_live

    def _not_run(e: EvalkitError, s: Session, on_page: bool, lead: tuple[str, str] = ("Not run", "未运行")):
        """A refusal before the run: the previous run's outputs cleared, "Not run:" (or `lead`) and why on the status
        line."""
        from .alerts import message
        from .words import error_zh

        zh = error_zh(e.what, e.fix)  # escaped as message() escapes the English: it may quote what was typed
        zh = html.escape(f"{lead[1]}：{zh[0]}。{zh[1]}。", quote=False) if zh else f"{lead[1]}（详见提示）"
        yield {ui.status: f"{lead[0]}: {message(e, 'en')} · {zh}", ui.table: ""} | {
            box: "" for box in ui.outputs.values()}
        if not on_page:
            raise e
        gr.Warning(message(e, getattr(s, "lang", "en")))

    def _store_run(db, s: Session | None, shown: list[GenerationRecord], compat, note: str) -> None:
        """A run's experiment and outputs, in one write transaction that first checks again, under its lock, that the
        rater's code is still hers (rating.queue.code_check): a revoke that commits after require_rater stores
        nothing of the run, nor the material she typed."""
        from ..rating.queue import code_check
        from ..store import insert_live_run

        insert_live_run(db, cfg.to_dict(), compat, note, shown,
                        admit=code_check(s.signed_in if s is not None and s.rater else None))

    def _run(s: Session, prompt_id: str, typed: str, request: gr.Request, stop: threading.Event, on_page: bool):
        from ..study.pairs import has_pairs, pooled_token_ids, telling_prefixes
        from ..generation.paths import available_paths, check_fits, check_runnable, run_path

        # a refusal before the run (too long, the hourly limit, a rated prompt) clears the previous run's outputs and says
        # so on the status line: with only a toast, the last run's texts and "Done." stayed under the new request
        try:
            check_access(cfg, space, s)
            if s is not None and s.rater:  # a revoked or re-issued code ends the session here too
                with connect(db_path) as db:
                    require_rater(db, s, cfg.app)
            if preparing is not None and not preparing.ready:  # the models may still be training in the preparation
                from .prepare import live_waiting_words

                # how far the preparation is, on the status line, kept up to date until it is done, and then this run
                # goes on: one snapshot with "press Run again" froze its percentage on screen for minutes (demo audit,
                # 2026-12-05). Not a refusal: a toast about the Rate tab and an error badge on every box read as a crash
                cleared = {ui.table: ""} | {box: "" for box in ui.outputs.values()}
                while not preparing.ready:
                    snap = preparing.snapshot()
                    if snap.error:
                        preparing.check()  # the failure, as the Rate tab shows it
                    yield {ui.status: live_waiting_words(snap)} | cleared
                    cleared = {}
                    if stop.wait(TRAINING_POLL_SECONDS):  # Stop while it waits: this run ends, the preparation goes on
                        yield {ui.status: STOPPED}
                        return
            if not isinstance(prompt_id, str) or prompt_id not in prompts:  # a raw request can send anything
                raise EvalkitError(f"unknown prompt '{str(prompt_id)[:40]}'", "choose one of the bundled prompts")
            typed = typed if isinstance(typed, str) else ""
            if len(typed) > cfg.app.max_comment_chars:  # checked before any work on it
                raise EvalkitError(f"the material is {len(typed)} characters; the limit is {cfg.app.max_comment_chars}",
                                   "shorten it")
            try:
                typed.encode("utf-8")  # a raw request can send half of a UTF-16 pair, which no tokenizer takes
            except UnicodeEncodeError as e:
                raise EvalkitError(f"the material has a character that is not valid text at position {e.start}",
                                   "paste it again as plain text") from None
            typed = typed.strip()
            prompt = prompts[prompt_id] if not typed else replace(prompts[prompt_id], id="live-custom", material=typed)
            with connect(db_path) as db:  # what must not be shown: any pooled output, whatever its prompt
                pooled = pooled_token_ids(db)
                # under greedy decoding, the start of a pair's side up to where the other side parts from it: a run
                # that repeats it tells the side's path. A sampled run is a draw of its own (its seeds are not the
                # pool's) and tells nothing, and a sampled pair parts at once: it would withhold half the runs
                telling = telling_prefixes(db) if cfg.decoding.mode == "greedy" else set()
                rated = [p for p in prompts if has_pairs(db, p)]
            if cfg.decoding.mode == "greedy":
                if not typed and prompt_id in rated:
                    raise EvalkitError(f"greedy decoding would reproduce the outputs of {prompt_id} that raters judge "
                                       "blind", "type your own material, or run the bundled prompts once the study has ended")
                if typed and (near := near_rated_material(typed, prompts, rated)):
                    raise EvalkitError(f"the material typed is {near}'s material, or nearly, and greedy decoding would "
                                       "reproduce the outputs of it that raters judge blind",
                                       "type material of your own, or run the bundled prompts once the study has ended")
            try:
                limiter.check(f"session:{getattr(request, 'session_hash', None) or '?'}",
                              auth.client_key(request, space, cfg.app.trusted_proxy_hops))
            except LimitError as e:  # said as when she can run again, not as seconds and a session's hash
                raise hourly_limit_reached(e, cfg.app.live_runs_per_hour) from None
        except EvalkitError as e:
            yield from _not_run(e, s, on_page)
            return
        boxes = ui.outputs

        def still_hers() -> None:  # revoked, re-issued or signed out while it streams: the run stops (below)
            with connect(db_path) as db:
                require_rater(db, s, cfg.app)

        check = _access_check(still_hers) if s is not None and s.rater else None
        yield {ui.status: models.loading_words() if not models.loaded else "Running… · 运行中…",
               ui.table: ""} | {box: "" for box in boxes.values()}
        try:
            loading = models.get_with_progress()
            while True:  # the load's progress (the demo pair's training first, when it trains); then the pair
                if stop.is_set():  # Stop during minutes of loading: this run ends, the one load goes on for the next
                    yield {ui.status: STOPPED_TRAINING if models.training else STOPPED_LOADING}
                    return
                try:
                    words = next(loading)
                except StopIteration as done:
                    pair = done.value
                    break
                yield {ui.status: words}
            if typed:  # a long paste, refused as the checks above refuse, now that the target's tokenizer is here
                try:
                    check_fits(pair, prompt)
                except EvalkitError as e:
                    yield from _not_run(e, s, on_page)
                    return
            seed = live_seed()
            cold, warmed_by = not models.warm, ""  # the first path of the first run pays the warm-up
            runnable = available_paths(pair)
            order = run_order(list(boxes), models.turn)
            models.turn += 1
            records: list[GenerationRecord] = []
            box_of: list[gr.Textbox] = []  # the box each record belongs in (a fallback: the path that failed)
            texts = {box: "" for box in boxes.values()}  # the final update repeats them for API callers
            missing = []
            for name in order:
                box, spec = boxes[name], registry.get(name)
                if name not in runnable:  # why, and what to change: "not available" alone left a presenter guessing
                    try:  # shown in the box, never raised
                        check_runnable(pair, spec)
                        what, fix = f"the {name} path is not available for these models", ""
                    except EvalkitError as e:
                        what, fix = e.what, e.fix
                    missing.append(name)
                    fix = f" — to run it: {fix}" if fix else ""
                    texts[box] = f"({name} path not run: {what}{fix} · {zh_name(name)}路径未运行)"
                    continue
                # a run left mid-way ends at its next token, and this one waits for it: the models take one call at a
                # time, so the counts and timings of the two never mix
                waiting = " First waiting for an earlier run, left mid-way, to end · 先等待中途离开的上一次运行结束" if (
                    models_busy(pair)) else ""
                yield {ui.status: f"Running the {name} path… · 正在运行{zh_name(name)}路径…{waiting}"}
                if check is not None:  # and before each path begins: loading (or training) the models can take
                    still_hers()  # minutes after the run's own check, and the last path waits for the first
                bufs = [_text_buffer(pair.tokenizer, pooled, telling)] + (
                    [_text_buffer(pair.tokenizer, pooled, telling)] if spec.falls_back else [])
                fallback_streamer = bufs[1] if spec.falls_back else None
                for text, box_result in _in_thread(
                    lambda: run_path(pair, prompt, name, seed, streamer=bufs[0], fallback_streamer=fallback_streamer),
                    bufs, f"\n\n[{name} failed — the target alone wrote what follows (the fallback), not {name} · "
                          f"{zh_name(name)}路径失败，以下由目标模型单独生成（回退）]\n\n", stop, check
                ):
                    texts[box] = text
                    yield {box: text}
                warmed_by = warmed_by or (name if cold else "")
                models.warm = True
                if stop.is_set():  # the Stop button: what ran is dropped, nothing is stored
                    yield {ui.status: STOPPED, ui.table: ""}
                    return
                if "error" in box_result:
                    raise box_result["error"]
                records += box_result["result"]
                box_of += [box] * len(box_result["result"])
            note = "Done. · 完成。" if not missing else (
                f"Not run: {', '.join(missing)} (its box says why); the other paths ran · "
                f"未运行：{'、'.join(map(zh_name, missing))}（原因见其输出框），其他路径已运行。")
            if failed := [r.path for r in records if not r.ok]:  # its fallback ran; the table says what happened
                names = ", ".join(failed)
                note += (f" {names} failed, and the target then wrote alone: see below · "
                         f"{'、'.join(map(zh_name, failed))}路径失败，随后由目标模型单独生成，见下。")

            # The last guard: a run that ended as exactly a pooled output, or that begins with a whole one (a pool cut
            # at a lower max_new_tokens) or with the part of one that tells its side (telling), is withheld, not stored.
            forbidden = pooled | telling
            lengths = sorted({len(p) for p in forbidden if p})

            def withheld(r: GenerationRecord) -> bool:  # a failed record has no tokens and nothing to show
                ids = tuple(r.token_ids or ())
                return bool(ids) and any(ids[:k] in forbidden for k in lengths if k <= len(ids))

            shown = [r for r in records if not withheld(r)]  # a fallback still follows its failed record
            for r, box in zip(records, box_of):
                if r not in shown:
                    texts[box] = WITHHELD
                elif r.ok and not texts[box]:  # held back while it was the start of a pooled output; it is not one
                    texts[box] = r.text
            with connect(db_path) as db:
                if s is not None and s.rater:  # revoked while it ran: its outputs and her material are not stored
                    require_rater(db, s, cfg.app)
                if shown:
                    _store_run(db, s, shown, pair.compat,
                               f"live demo · prompt {prompt_id}" + (f" · material: {typed}" if typed else ""))
                batches = batch_note(db)
            timings = timing_table(shown, cfg.bench.length_tolerance, batches, warmed_by,
                                   [n for n in order if n not in missing])
            yield texts | {ui.status: note, ui.table: timings}
        except GeneratorExit:
            raise
        except (SignInError, RatingError) as e:  # her access withdrawn while it ran (require_rater's refusals, and
            # the store's check of her code): what it showed goes, nothing is stored, and she is told why
            yield from _not_run(e, s, on_page, ("Stopped", "运行中止"))
        except Exception as e:  # the status said "Running…": it says what stopped the run, beside the toast
            from .alerts import message

            said = (message(e, "en") if isinstance(e, EvalkitError)
                    else "something went wrong on the server; it was logged")
            yield {ui.status: f"Stopped: {said} · 运行中止（详见提示）"}
            if on_page and isinstance(e, EvalkitError):  # said, as a refusal is: no "Error" badge over every box
                gr.Warning(message(e, getattr(s, "lang", "en")))
                return
            raise  # the unexpected: logged by friendly(), and an error on the page too

    # the flag is armed outside the queue, at the click: a run waiting behind another page's can then be stopped
    live_io = ([session, prompt_dd, material], [*outputs.values(), table, status])
    # the prompt is checked by the run (above), refused in the caller's language: Gradio's own check of a dropdown's
    # choices answered in English only, listing them
    unchecked = {"preprocess": False}
    run_btn.click(gradio_hints(arm_stop), None, [run_btn], api_visibility="private", queue=False).then(
        gradio_hints(live_handler(on_page=True)), *live_io, api_visibility="private", concurrency_limit=1,
        concurrency_id="live", **unchecked).then(  # whatever the run's end (done, refused, stopped, failed)
        lambda: gr.Button(run_label, interactive=True), None, [run_btn], api_visibility="private", queue=False)
    # the API's /live, where a refusal is an error: an event needs a trigger, and the page's button runs its own
    api_trigger = gr.Button("live (API)", visible=False)
    api_trigger.click(gradio_hints(live_handler(on_page=False)), *live_io, api_name="live", concurrency_limit=1,
                      concurrency_id="live", **unchecked)

    def stop_live(request: gr.Request | None) -> dict:
        """Ask this page's run to stop (its generation ends at its next token; the run says so and stores nothing).
        Gradio's `cancels` does not close a cancelled generator, so it would leave the run generating."""
        page = getattr(request, "session_hash", None) or "?"
        if (flag := stops.get(page)) is not None:
            flag.set()
        # a run under way says "Stopped" itself, often before this answer reaches the page (it comes outside the
        # queue): the answer then wrote "Stop sent" over it for good, beside a Run button enabled again (demo audit,
        # 2026-12-06); it is left to the run. Idle, or queued behind another page's run, the page hears this answer
        return {status: gr.skip() if page in started else STOP_SENT}

    # outside the queue, beside the run it stops; a page's own run only (by its session), and nothing else
    stop_btn.click(gradio_hints(stop_live), None, [status], api_visibility="private", queue=False)
    if signout is not None:
        # Sign out: this page's run stops, and what it showed goes (an organiser's path-labelled outputs stayed in the
        # page for the next person at the computer, who rates those prompts blind; attacker audit 2026-12-05)
        def signed_out(request: gr.Request | None) -> dict:
            stop_live(request)
            return {status: "", table: ""} | {box: "" for box in outputs.values()}

        signout.click(gradio_hints(signed_out), None, [*outputs.values(), table, status], api_visibility="private",
                      queue=False)
    return ui
