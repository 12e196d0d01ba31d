"""The reveal, rendered only after a submission and only once the pair is closed (evalkit.rating.queue): which side was
which path and how long each took, or, for a gold pair, that it was a check pair and the answers it was checked
against. Until then the rater reads that it is pending, and their list of reveals fills in as their pairs close."""

from __future__ import annotations

from ..task.criteria import all_criteria
from ..rating.queue import GoldReveal, Pending, RatedPair, Reveal

_STORED = ("Your rating is stored and locked, and it is the one that counts. **Correct** adds a note for the "
           "organisers (made after the reveal, so it does not change the count). · 你的评分已保存并计入；"
           "揭晓后的修改只作记录。")


def _num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def render_gold(r: GoldReveal) -> str:
    lines = [
        "### Reveal · 揭晓: a check pair · 检验题",
        "",
        "Both outputs come from the model, and one of them was then changed on purpose (the change is named below), "
        "so its answer on a criterion is known; the pair checks the ratings and is not part of the comparison. "
        "Your answers where the answer is known count towards your accuracy on check pairs (— : not known). · "
        "这两段文字来自模型，其中一段被有意修改（见下），其答案已知；用于检验评分，不计入两种生成方式的比较。",
        "",
        "| criterion | A expected | B expected |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {c.name()} | {r.a_expected.get(c.id, '—')} | {r.b_expected.get(c.id, '—')} |" for c in all_criteria()]
    lines.append("")
    lines += [f"- **{side}**: {note}" for side, note in (("A", r.a_note), ("B", r.b_note)) if note]
    lines += ["", _STORED]
    return "\n".join(lines)


_PENDING_STORED = ("Your rating is stored and locked, and it counts. **Correct** still changes the rating that "
                   "counts until the pair is revealed. · 你的评分已保存并计入；揭晓前的修改仍然计入。")


def render_pending(p: Pending) -> str:
    more = f"{p.needed} more rating" + ("" if p.needed == 1 else "s")
    return "\n".join([
        "### Reveal · 揭晓: pending · 待揭晓",
        "",
        f"Which side was which, and the timings, are revealed once this pair is closed to further ratings: it needs "
        f"{more} from other raters. (Nobody sees a pair's reveal while anyone can still rate it.) Your reveals are "
        f"listed below and on the last screen, and fill in as your pairs close. · 这一对还需要 {p.needed} 个评分；"
        "评分结束后才揭晓哪一边是哪种生成方式。",
        "",
        _PENDING_STORED,
    ])


def _line(item: RatedPair) -> str:
    r = item.reveal
    head = f"- pair {item.n} · `{item.prompt_id}`: "
    if isinstance(r, Pending):
        return head + f"pending: revealed once the pair is closed (it needs {r.needed} more) · 待揭晓"
    if isinstance(r, GoldReveal):
        return head + "a check pair (one output changed on purpose, with a known answer) · 检验题"
    sides = f"A = {r.a_path} {_num(r.a_seconds, '.3f')} s, B = {r.b_path} {_num(r.b_seconds, '.3f')} s"
    return head + sides + (f", speed-up {r.speedup:.2f}×" if r.speedup is not None else ", no speed-up (not comparable)")


def render_list(items: list[RatedPair]) -> str:
    """The rater's reveals, newest first: revealed pairs in one line each, pending ones marked."""
    if not items:
        return ""
    waiting = sum(isinstance(i.reveal, Pending) for i in items)
    lines = ["#### Your reveals · 你的揭晓", "",
             f"{len(items) - waiting} revealed, {waiting} pending · 已揭晓 {len(items) - waiting}，待揭晓 {waiting}", ""]
    return "\n".join(lines + [_line(i) for i in items])


def render(r: Reveal | GoldReveal | Pending) -> str:
    if isinstance(r, Pending):
        return render_pending(r)
    if isinstance(r, GoldReveal):
        return render_gold(r)
    rows = [
        ("A", r.a_path, r.a_seconds, r.a_tokens, r.a_tokens_per_second),
        ("B", r.b_path, r.b_seconds, r.b_tokens, r.b_tokens_per_second),
    ]
    lines = [
        "### Reveal · 揭晓",
        "",
        "| output | path | generate() s | new tokens | tokens/s |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {side} | {path} | {_num(s, '.3f')} | {n} | {_num(tps, '.1f')} |" for side, path, s, n, tps in rows]
    lines.append("")
    if r.speedup is not None:
        lines.append(f"**Speed-up for this pair: {r.speedup:.2f}×** (ordinary seconds ÷ assisted seconds)")
    else:
        lines.append(f"**No speed-up for this pair**: {r.note}")
    lines += ["", _STORED]
    return "\n".join(lines)
