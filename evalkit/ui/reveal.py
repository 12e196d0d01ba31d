"""The reveal, rendered only after a submission and only once the pair is closed (evalkit.rating.queue): which side was
which path and how long each took, or, for a gold pair, that it was a check pair and the answers it was checked
against. Until then the rater reads that it is pending, and their list of reveals fills in as their pairs close.

Everything is in the rater's language ("zh" or "en", the Rate tab's switch). The path names stay as evalkit writes
them everywhere else (ordinary, assisted, fallback: the Results tab, the report and the exported dataset use them),
with a Chinese gloss for a Chinese reader."""

from __future__ import annotations

from ..rating.queue import GoldReveal, Pending, RatedPair, Reveal
from ..task.criteria import all_criteria

_WORDS: dict[str, dict[str, str]] = {
    "title": {"zh": "### 揭晓", "en": "### Reveal"},
    "stored": {"zh": "你的评分已保存并锁定，计入的就是它。按**修改**可以给组织者留下修改记录（在揭晓之后所作，不改变计分）。",
               "en": "Your rating is stored and locked, and it is the one that counts. **Correct** adds a note for the "
                     "organisers (made after the reveal, so it does not change the count)."},
    "pending_title": {"zh": "### 揭晓：待揭晓", "en": "### Reveal: pending"},
    "pending": {"zh": "这一对还需要其他评分者再评 {needed} 次。它不再接受评分之后，才会揭晓哪一边是哪条生成路径、各用了多长时间"
                      "（只要还有人可能评到这一对，谁也看不到它的揭晓）。你的揭晓列在下方和最后一屏，评分对结束后会陆续填上。",
                "en": "Which side was which, and the timings, are revealed once this pair is closed to further ratings: "
                      "it needs {more} from other raters. (Nobody sees a pair's reveal while anyone can still rate it.) "
                      "Your reveals are listed below and on the last screen, and fill in as your pairs close."},
    "pending_stored": {"zh": "你的评分已保存并锁定，并且计入。这一对揭晓之前，按**修改**仍会改变计入的评分。",
                       "en": "Your rating is stored and locked, and it counts. **Correct** still changes the rating that "
                             "counts until the pair is revealed."},
    "gold_title": {"zh": "### 揭晓：检验题", "en": "### Reveal: a check pair"},
    "gold": {"zh": "两则输出都来自模型，其中一则随后被有意修改（改动见下），所以它在某些标准上的答案是已知的；这一对用来检验评分，"
                   "不计入两条生成路径的比较。在答案已知的标准上，你的回答计入你在检验题上的准确率（—：答案未知）。",
             "en": "Both outputs come from the model, and one of them was then changed on purpose (the change is named "
                   "below), so its answer on a criterion is known; the pair checks the ratings and is not part of the "
                   "comparison. Your answers where the answer is known count towards your accuracy on check pairs "
                   "(— : not known)."},
    "gold_head": {"zh": "| 标准 | A 应为 | B 应为 |", "en": "| criterion | A expected | B expected |"},
    "head": {"zh": "| 输出 | 生成路径 | generate() 秒 | 新 token 数 | tokens/s |",
             "en": "| output | path | generate() s | new tokens | tokens/s |"},
    "speedup": {"zh": "**这一对的加速比：{x:.2f}×**（ordinary 用时 ÷ assisted 用时）",
                "en": "**Speed-up for this pair: {x:.2f}×** (ordinary seconds ÷ assisted seconds)"},
    "no_speedup": {"zh": "**这一对没有加速比**：两则输出不可比（停止原因不同，或长度相差超过容差），按协议不计算加速比；"
                         "可以比较 tokens/s。",
                   "en": "**No speed-up for this pair**: {note}"},
    "list_title": {"zh": "#### 你的揭晓", "en": "#### Your reveals"},
    "counts": {"zh": "已揭晓 {shown}，待揭晓 {waiting}", "en": "{shown} revealed, {waiting} pending"},
    "line": {"zh": "- 第 {n} 对 · `{prompt}`：", "en": "- pair {n} · `{prompt}`: "},
    "line_pending": {"zh": "待揭晓：这一对结束后揭晓（还需要 {needed} 次评分）",
                     "en": "pending: revealed once the pair is closed (it needs {needed} more)"},
    "line_gold": {"zh": "检验题（一则输出被有意修改，答案已知）",
                  "en": "a check pair (one output changed on purpose, with a known answer)"},
    "line_sides": {"zh": "A = {a_path} {a_s} 秒，B = {b_path} {b_s} 秒", "en": "A = {a_path} {a_s} s, B = {b_path} {b_s} s"},
    "line_speedup": {"zh": "，加速比 {x:.2f}×", "en": ", speed-up {x:.2f}×"},
    "line_none": {"zh": "，无加速比（输出不可比）", "en": ", no speed-up (not comparable)"},
    "pass": {"zh": "通过", "en": "pass"},
    "fail": {"zh": "不通过", "en": "fail"},
}

# A Chinese gloss after each path name: what it is, in a few words.
_PATHS_ZH = {"ordinary": "ordinary（普通生成：只用目标模型）", "assisted": "assisted（辅助生成：目标模型验证草稿模型的提议）",
             "fallback": "fallback（辅助生成失败后的回退）"}


def _w(key: str, lang: str, **fmt) -> str:
    text = _WORDS[key]["zh" if lang == "zh" else "en"]
    return text.format(**fmt) if fmt else text


def _path(path: str, lang: str) -> str:
    return _PATHS_ZH.get(path, path) if lang == "zh" else path


def _num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _expected(value: str | None, lang: str) -> str:
    return _w(value, lang) if value in ("pass", "fail") else (value or "—")


def _note(note: str, lang: str) -> str:
    """A gold edit's note is written "中文 · English" (evalkit.task.edits): the rater's half."""
    zh, sep, en = note.partition(" · ")
    return (zh if lang == "zh" else en).strip() if sep else note


def render_gold(r: GoldReveal, lang: str = "en") -> str:
    lines = [_w("gold_title", lang), "", _w("gold", lang), "", _w("gold_head", lang), "| --- | --- | --- |"]
    lines += [f"| {c.name(lang)} | {_expected(r.a_expected.get(c.id), lang)} | {_expected(r.b_expected.get(c.id), lang)} |"
              for c in all_criteria()]
    lines.append("")
    lines += [f"- **{side}**: {_note(note, lang)}" for side, note in (("A", r.a_note), ("B", r.b_note)) if note]
    lines += ["", _w("stored", lang)]
    return "\n".join(lines)


def render_pending(p: Pending, lang: str = "en") -> str:
    more = f"{p.needed} more rating" + ("" if p.needed == 1 else "s")
    return "\n".join([_w("pending_title", lang), "", _w("pending", lang, needed=p.needed, more=more), "",
                      _w("pending_stored", lang)])


def _line(item: RatedPair, lang: str) -> str:
    r = item.reveal
    head = _w("line", lang, n=item.n, prompt=item.prompt_id)
    if isinstance(r, Pending):
        return head + _w("line_pending", lang, needed=r.needed)
    if isinstance(r, GoldReveal):
        return head + _w("line_gold", lang)
    sides = _w("line_sides", lang, a_path=r.a_path, b_path=r.b_path, a_s=_num(r.a_seconds, ".3f"), b_s=_num(r.b_seconds, ".3f"))
    return head + sides + (_w("line_speedup", lang, x=r.speedup) if r.speedup is not None else _w("line_none", lang))


def render_list(items: list[RatedPair], lang: str = "en") -> str:
    """The rater's reveals, newest first: revealed pairs in one line each, pending ones marked."""
    if not items:
        return ""
    waiting = sum(isinstance(i.reveal, Pending) for i in items)
    lines = [_w("list_title", lang), "", _w("counts", lang, shown=len(items) - waiting, waiting=waiting), ""]
    return "\n".join(lines + [_line(i, lang) for i in items])


def render(r: Reveal | GoldReveal | Pending, lang: str = "en") -> str:
    """This pair's reveal in the rater's language ("zh" or "en")."""
    if isinstance(r, Pending):
        return render_pending(r, lang)
    if isinstance(r, GoldReveal):
        return render_gold(r, lang)
    rows = [
        ("A", r.a_path, r.a_seconds, r.a_tokens, r.a_tokens_per_second),
        ("B", r.b_path, r.b_seconds, r.b_tokens, r.b_tokens_per_second),
    ]
    lines = [_w("title", lang), "", _w("head", lang), "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {side} | {_path(path, lang)} | {_num(s, '.3f')} | {n} | {_num(tps, '.1f')} |"
              for side, path, s, n, tps in rows]
    lines.append("")
    if r.speedup is not None:
        lines.append(_w("speedup", lang, x=r.speedup))
    else:
        lines.append(_w("no_speedup", lang, note=r.note))
    lines += ["", _w("stored", lang)]
    return "\n".join(lines)
