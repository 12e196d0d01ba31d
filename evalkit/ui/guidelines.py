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
    "zh": "**偏好**：两则都评完后，选你更愿意发出的一则（A 或 B）；确实没有差别时选持平。可以写一句说明。",
    "en": "**Preference**: after scoring both, pick the one you would rather send (A or B); tie when there is "
          "no real difference. A one-line comment is welcome.",
}

# Skipping is for a pair nobody could judge, not for a bad output: the decision waits for every skipped pair at the
# head of the queue's order (aggregate.verdict.in_queue_order), and a bad output skipped instead of failed is the
# evidence of a drop left out.
SKIP = {
    "zh": "**跳过**：损坏、空白或乱码的输出也请评分，它违反的每一条都选“不通过”。只有完全无法判断时（例如读不懂它的语言）"
          "才跳过，并写明原因；被跳过的一对会交给其他评分者，结论要等它评完。",
    "en": "**Skip**: a broken, empty or garbled output is still rated: answer fail on each criterion it breaks. Skip "
          "only a pair you cannot judge at all (a language you do not read, say), with the reason; a skipped pair "
          "goes to another rater, and the decision waits for it.",
}

# A pair stays on a rater's screen for rating.queue.HOLD_MINUTES after her last sign of work on it (the page sends
# one after her input); after that it may go to another rater, and the answers given on it and not submitted are
# gone (rater audit F11: nothing said so).
HOLD = {
    "zh": "**暂离**：你在一对上操作时，它一直为你保留；离开（不操作）约 {minutes} 分钟后，它可能交给其他评分者，你在那一对上填写但未提交的答案不会保留。",
    "en": "**Leaving a pair**: a pair stays yours while you work on it; about {minutes} minutes after you leave it (no typing, "
          "clicking or scrolling), it may go to another rater, and answers you gave on it without submitting are not "
          "kept.",
}

INTRO = {
    "zh": "每对有两则输出，只标为 A 和 B。请逐条判断每则输出是否满足下面的要求，然后选择偏好并提交。"
          "两则输出的生成方式和用时在提交之后才会显示：一对的评分收齐时揭晓（每对可能需要几位评分者）。",
    "en": "Each pair has two outputs, labelled A and B only. Judge each output against the criteria below, "
          "then pick a preference and submit. How each output was produced, and how long it took, is shown only "
          "after you submit, once the pair has all its ratings (a pair may need several raters).",
}


def guidelines(prompt: Prompt | None, lang: str) -> str:
    lines = [INTRO[lang], ""]
    if prompt is not None:
        for i, c in enumerate(all_criteria(), 1):
            lines.append(f"{i}. **{c.name(lang)}** — {c.question(prompt, lang)}")
        lines.append("")
    lines += ["**每条的答案**" if lang == "zh" else "**Answers for each criterion**", ""]
    for v, label, text in VALUES[lang]:
        lines.append(f"- **{label}**：{text}" if lang == "zh" else f"- **{v}**: {text}")  # as the buttons say it
    from ..rating.queue import HOLD_MINUTES

    lines += ["", PREFERENCE[lang], "", SKIP[lang], "", HOLD[lang].format(minutes=HOLD_MINUTES)]
    return "\n".join(lines)
