"""The reveal, rendered only after a submission: which side was which path and how long each took, or, for
a gold pair, that it was a check pair and the answers it was checked against."""

from __future__ import annotations

from ..prompts import CRITERIA
from ..ratings import GoldReveal, Reveal

_STORED = ("Your rating is stored and locked, and it is the one that counts. **Correct** adds a note for the "
           "organisers (made after the reveal, so it does not change the count). · 你的评分已保存并计入；"
           "揭晓后的修改只作记录。")


def _num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def render_gold(r: GoldReveal) -> str:
    lines = [
        "### Reveal · 揭晓: a check pair · 检验题",
        "",
        "Both outputs were written by the study's organisers, with known answers, to check the ratings; neither "
        "comes from a model, and this pair is not part of the comparison. Your answers count towards your "
        "accuracy on check pairs. · 这两段文字由组织者编写，答案已知，用于检验评分，不计入两种生成方式的比较。",
        "",
        "| criterion | A expected | B expected |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {c} | {r.a_expected[c]} | {r.b_expected[c]} |" for c in CRITERIA]
    lines.append("")
    lines += [f"- **{side}**: {note}" for side, note in (("A", r.a_note), ("B", r.b_note)) if note]
    lines += ["", _STORED]
    return "\n".join(lines)


def render(r: Reveal | GoldReveal) -> str:
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
