"""The reveal, rendered only after a submission: which side was which path and how long each took."""

from __future__ import annotations

from ..ratings import Reveal


def _num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def render(r: Reveal) -> str:
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
    lines += ["", "Your rating is stored and locked, and it is the one that counts. **Correct** adds a note for the "
                  "organisers (made after the reveal, so it does not change the count). · 你的评分已保存并计入；"
                  "揭晓后的修改只作记录。"]
    return "\n".join(lines)
