"""The rating guidelines: the criteria, each by its title, in the prompt file's own wording (Chinese first, English on
request) and what pass / fail / unsure mean. Nothing here depends on which output is which."""

from __future__ import annotations

from ..task.criteria import all_criteria
from ..task.prompts import Prompt

VALUES = {
    "zh": [
        ("pass", "通过", "输出明确满足这一条。"),
        ("fail", "不通过", "输出违反了这一条：写错、写反、遗漏，或补充了不允许的内容。"),
        ("unsure", "不确定", "确实无法判断（措辞含糊、文本被截断）。请尽量少用。"),
    ],
    "en": [
        ("pass", "pass", "the output clearly meets the criterion."),
        ("fail", "fail", "the output breaks it: wrong, inverted, missing, or adds something not allowed."),
        ("unsure", "unsure", "you really cannot tell (ambiguous wording, truncated text). Use it sparingly."),
    ],
}

PREFERENCE = {
    "zh": "**偏好**：两则都评完后，选你更愿意发出的一则（A 或 B）；确实没有差别时选 tie。可以写一句说明。",
    "en": "**Preference**: after scoring both, pick the one you would rather send (A or B); tie when there is "
          "no real difference. A one-line comment is welcome.",
}

INTRO = {
    "zh": "每对有两则输出，只标为 A 和 B。请逐条判断每则输出是否满足下面的要求，然后选择偏好并提交。"
          "提交后才会显示两则输出的生成方式和用时。",
    "en": "Each pair has two outputs, labelled A and B only. Judge each output against the criteria below, "
          "then pick a preference and submit. How each output was produced, and how long it took, is shown only "
          "after you submit.",
}


def guidelines(prompt: Prompt | None, lang: str) -> str:
    lines = [INTRO[lang], ""]
    if prompt is not None:
        for i, c in enumerate(all_criteria(), 1):
            lines.append(f"{i}. **{c.name(lang)}** — {c.question(prompt, lang)}")
        lines.append("")
    lines += ["**每条的答案**" if lang == "zh" else "**Answers for each criterion**", ""]
    for v, label, text in VALUES[lang]:
        lines.append(f"- **{v}**（{label}）：{text}" if lang == "zh" else f"- **{v}**: {text}")
    lines += ["", PREFERENCE[lang]]
    return "\n".join(lines)
