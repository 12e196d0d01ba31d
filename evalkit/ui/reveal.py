"""The reveal, rendered only after a submission and only once the pair is closed (evalkit.rating.queue): which side was
which path and how long each took, or, for a gold pair, that it was a check pair and the answers it was checked
against. Until then the rater reads that it is pending, and their list of reveals fills in as their pairs close.

Everything is in the rater's language ("zh" or "en", the Rate tab's switch). The path names stay as evalkit writes
them everywhere else (ordinary, assisted, fallback: the Results tab, the report and the exported dataset use them),
with a Chinese gloss for a Chinese reader."""

from __future__ import annotations

from ..rating.queue import GoldReveal, Pending, RatedPair, Reveal
from ..task.criteria import all_criteria
from .words import word

# A Chinese gloss of each path name: what it is, in a few words. Under the reveal's table, not in it: in its column it
# made the table wider than a phone, and the tokens/s the no-speed-up line points to went out of sight (rater audit F3).
_PATHS_ZH = {"ordinary": "普通生成，只用目标模型", "assisted": "辅助生成，目标模型验证草稿模型的提议",
             "fallback": "辅助生成失败后的回退"}


def _w(key: str, lang: str, **fmt) -> str:
    return word("reveal_" + key, lang, **fmt)


def _glosses(paths: list[str], lang: str) -> list[str]:
    """The Chinese glosses of these paths, one line under the table (none in English)."""
    said = [f"{p}：{_PATHS_ZH[p]}" for p in dict.fromkeys(paths) if p in _PATHS_ZH]
    return ["", "；".join(said) + "。"] if lang == "zh" and said else []


def _num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _expected(value: str | None, lang: str) -> str:
    return word(value, lang) if value in ("pass", "fail") else (value or "—")


def _note(note: str, lang: str) -> str:
    """A gold edit's note is written "中文 · English" (evalkit.task.edits): the rater's half."""
    zh, sep, en = note.partition(" · ")
    return (zh if lang == "zh" else en).strip() if sep else note


def render_gold(r: GoldReveal, lang: str = "en", counted: bool = True) -> str:
    lines = [_w("gold_title", lang), "", _w("gold", lang), "", _w("gold_head", lang), "| --- | --- | --- |"]
    lines += [f"| {c.name(lang)} | {_expected(r.a_expected.get(c.id), lang)} | {_expected(r.b_expected.get(c.id), lang)} |"
              for c in all_criteria()]
    lines.append("")
    lines += [f"- **{side}**: {_note(note, lang)}" for side, note in (("A", r.a_note), ("B", r.b_note)) if note]
    lines += ["", _w("stored" if counted else "uncounted", lang)]
    return "\n".join(lines)


def render_pending(p: Pending, lang: str = "en", counted: bool = True) -> str:
    more = f"{p.needed} more rating" + ("" if p.needed == 1 else "s")
    if p.unsaved:  # closed: a correction from now on is kept as a note (pending_stored's promise no longer holds)
        return "\n".join([_w("pending_title", lang), "", _w("pending_unsaved", lang), "",
                          _w("unsaved_stored" if counted else "uncounted", lang)])
    why = _w("pending_copies", lang, copies=p.copies) if p.copies else _w("pending", lang, needed=p.needed, more=more)
    return "\n".join([_w("pending_title", lang), "", why, "", _w("pending_stored" if counted else "uncounted", lang)])


def _line(item: RatedPair, lang: str, titles: dict | None = None) -> str:
    r = item.reveal
    head = _w("line", lang, n=item.n, prompt=(titles or {}).get(item.prompt_id) or item.prompt_id)
    if isinstance(r, Pending):
        return head + (_w("line_pending_unsaved", lang) if r.unsaved
                       else _w("line_pending_copies", lang, copies=r.copies) if r.copies
                       else _w("line_pending", lang, needed=r.needed))
    if isinstance(r, GoldReveal):
        return head + _w("line_gold", lang)
    sides = _w("line_sides", lang, a_path=r.a_path, b_path=r.b_path, a_s=_num(r.a_seconds, ".3f"), b_s=_num(r.b_seconds, ".3f"))
    return head + sides + (_w("line_speedup", lang, x=r.speedup) if r.speedup is not None else _w("line_none", lang))


def render_list(items: list[RatedPair], lang: str = "en", titles: dict | None = None) -> str:
    """The rater's reveals, newest first: revealed pairs in one line each, pending ones marked; each by its prompt's
    title as the Rate tab shows it (titles: prompt id -> title), else its id."""
    if not items:
        return ""
    waiting = sum(isinstance(i.reveal, Pending) for i in items)
    lines = [_w("list_title", lang), "", _w("counts", lang, shown=len(items) - waiting, waiting=waiting), ""]
    return "\n".join(lines + [_line(i, lang, titles) for i in items])


def render(r: Reveal | GoldReveal | Pending, lang: str = "en", counted: bool = True) -> str:
    """This pair's reveal in the rater's language ("zh" or "en"). counted: whether the rater's rating of it counts (an
    organiser who saw the results while rating is told it does not, as the status line above it says)."""
    if isinstance(r, Pending):
        return render_pending(r, lang, counted)
    if isinstance(r, GoldReveal):
        return render_gold(r, lang, counted)
    rows = [
        ("A", r.a_path, r.a_seconds, r.a_tokens, r.a_tokens_per_second),
        ("B", r.b_path, r.b_seconds, r.b_tokens, r.b_tokens_per_second),
    ]
    lines = [_w("title", lang), "", _w("head", lang), "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {side} | {path} | {_num(s, '.3f')} | {n} | {_num(tps, '.1f')} |" for side, path, s, n, tps in rows]
    lines += _glosses([r.a_path, r.b_path], lang)
    lines.append("")
    if r.speedup is not None:
        lines.append(_w("speedup", lang, x=r.speedup))
    else:
        lines.append(_w("no_speedup", lang, note=r.note))
    lines += ["", _w("stored" if counted else "uncounted", lang)]
    return "\n".join(lines)
