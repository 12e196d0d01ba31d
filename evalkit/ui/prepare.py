"""The app's side of preparation: `python app.py` serves its page at once and runs `evalkit prepare` in a separate
process when the database has no pairs, showing that process's progress on the page; the Rate tab opens by
itself when the pool is ready, and a failure shows on the page and in the terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..config import Config
from ..errors import EvalkitError
from ..progress import Snapshot, duration, read, stage_words


class Preparation:
    """The app's side: `evalkit prepare` in its own process (a crash there cannot take the server down, and
    training does not compete with the server for the interpreter lock), its progress read from its file."""

    def __init__(self, cfg: Config, db_path: Path):
        if not cfg.source or not Path(cfg.source).is_file():
            raise EvalkitError("the app was given a config that is not a file", "start it with --config PATH")
        self.progress_file = Path(db_path).with_name(Path(db_path).name + ".prepare.json")
        self.progress_file.unlink(missing_ok=True)
        # stdout and stderr stay the terminal's: the bars and any error show there too
        self.proc = subprocess.Popen([sys.executable, "-m", "evalkit", "prepare", "--config", str(cfg.source),
                                      "--db", str(db_path), "--progress-file", str(self.progress_file)])

    def snapshot(self) -> Snapshot:
        snap = read(self.progress_file) or Snapshot(stage="starting")
        code = self.proc.poll()
        if code is not None and not snap.done and not snap.error:  # died without a word (killed, crashed)
            snap.error = f"the preparation process ended with exit code {code}; see the terminal"
        return snap

    @property
    def ready(self) -> bool:
        return self.proc.poll() == 0 and self.snapshot().done

    def check(self) -> None:
        """Refuse rating and live runs until the pool is ready."""
        if not self.ready:
            snap = self.snapshot()
            if snap.error:
                raise EvalkitError(f"preparing the pairs failed: {snap.error}", "see the terminal, fix, and restart")
            raise EvalkitError("the pairs to rate are still being prepared",
                               "wait: the Rate tab opens by itself when they are ready")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()


def panel(snap: Snapshot) -> str:
    """The progress panel (HTML: our own text, nothing a user typed)."""
    import html

    if snap.error:
        return ("<div role='alert'><h3>Preparing the pairs failed · 准备失败</h3>"
                f"<pre style='white-space:pre-wrap'>{html.escape(snap.error)}</pre>"
                "<p>The terminal has the details. Fix the problem and restart the app. · 详情见终端。</p></div>")
    if snap.done:
        return "<p>Ready. · 已就绪。</p>"
    pct, where, where_zh = progress_parts(snap)
    return (
        "<div><h3>Preparing the pairs to rate · 正在准备评分数据</h3>"
        f"<progress value='{snap.fraction:.3f}' max='1' style='width:100%;height:1.2em' "
        f"aria-label='preparation progress, {pct} percent'></progress>"
        f"<p><strong>{pct}%</strong> · {html.escape(where)} · {html.escape(where_zh)}</p>"
        f"<p>{_what(snap)} The Rate tab opens by itself when they are ready. · {_what(snap, 'zh')}"
        "完成后评分页会自动打开。</p></div>"
    )


def progress_parts(snap: Snapshot) -> tuple[int, str, str]:
    """How far a preparation is: the percent, and what it does now with its count and the time left, in English
    ("training the draft model (the small one) (12 / 250) · about 3 min 05 s left") and in Chinese (the panel and the
    Live tab's statuses say it alike)."""
    en, zh = stage_words(snap.stage or "starting")
    count = f" ({snap.n} / {snap.total})" if snap.total else ""
    left = left_zh = ""
    if snap.remaining is not None:
        left, left_zh = f" · about {duration(snap.remaining)} left", f" · 约剩 {duration(snap.remaining, 'zh')}"
    return round(100 * snap.fraction), f"{en}{count}{left}", f"{zh}{count}{left_zh}"


def live_waiting_words(snap: Snapshot) -> str:
    """The Live status while the preparation runs (markdown, our own text): the Live tab waits for it, since the
    demo pair is being built there and a live run could reproduce the pooled outputs being made for raters (demo
    audit, 2026-12-04: Run answered a toast about the Rate tab and left two red Error badges, which read as a crash)."""
    pct, where, where_zh = progress_parts(snap)
    return (f"The live demo runs once the pairs to rate are prepared: **{pct}%** · {where}. {_what(snap)} This run "
            "starts by itself then (Stop cancels it). · "
            f"评分对准备好后才能运行现场演示：{pct}% · {where_zh}。{_what(snap, 'zh')}届时本次运行会自动开始（按“停止”可取消）。")


def _what(snap: Snapshot, lang: str = "en") -> str:
    """What the preparation does: the demo pair's training only where its plan holds it (the pair may be built)."""
    trains = any(s.startswith("train ") for s in snap.stages)
    if lang == "zh":
        return "首次使用时会先训练离线演示模型，然后生成评分对；" if trains else "正在生成评分对；"
    return ("On first use evalkit trains its offline demo model pair, then generates the pairs raters will judge."
            if trains else "evalkit is generating the pairs raters will judge.")
