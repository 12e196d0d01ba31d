"""Gold edits: controlled changes to a pooled output whose effect on a criterion is known (evalkit.study.gold makes
check pairs with them). Each criterion names its edits in evalkit.task.criteria; an edit returns None when it does
not apply to a text (the next one is tried), and says which criteria the edited text fails whatever the original
said. Written for the maintenance material (its day, its unknown restore time)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    """A controlled change to an output and the criteria it is known to fail afterwards."""

    name: str
    text: str  # the edited text
    fails: tuple[str, ...]  # criterion ids the edited text fails, whatever the original said
    note: str  # what was changed, shown in the reveal after the rating is stored


# The material's day, and another; the first that occurs in a text is changed everywhere in it.
_DAYS = {"zh": [("星期三", "星期四"), ("周三", "周四"), ("礼拜三", "礼拜四")], "en": [("Wednesday", "Thursday")]}
# A promise of a restore moment, in a few lengths. It takes the place of the text's last clause (what follows the
# last comma, full stop or line break), in the length nearest the clause's, so the text keeps its length (within a
# few characters), its line breaks and its punctuation.
_PROMISES = {
    "zh": ["保证周四恢复", "保证周四上午恢复", "保证周四上午九点前恢复", "我们保证周四上午九点前全部恢复",
           "我们郑重保证周四上午九点前全部恢复正常使用", "我们郑重保证周四上午九点前全部恢复正常使用并且上传与阅读都不受影响"],
    "en": ["guaranteed back Thursday", "we guarantee it is back Thursday", "we guarantee it is back by 9 am Thursday",
           "we guarantee every service is back by 9 am Thursday",
           "we guarantee that every service will be back by 9 am on Thursday at the latest"],
}
_CLAUSE_MARKS = "，,；;：:、。！？!?.\n"
_END_MARKS = "。！？!?."


def _promise(lang: str, length: int) -> str:
    return min(_PROMISES[lang], key=lambda p: (abs(len(p) - length), len(p)))


def change_day(text: str, language: str) -> Edit | None:
    """The material's day changed everywhere in the text (None when the text does not name it)."""
    lang = "en" if language == "en" else "zh"
    for day, other in _DAYS[lang]:
        if day in text:
            return Edit("changed-day", text.replace(day, other), ("schedule",),
                        f"“{day}”被改成了“{other}”（材料是周三晚间）。 · '{day}' was changed to '{other}'; the "
                        "material says Wednesday evening.")
    return None


def add_promise(text: str, language: str) -> Edit:
    """The text's last clause replaced by a promise of a restore moment of about its length."""
    lang = "en" if language == "en" else "zh"
    body = text.rstrip()
    end = body[-1] if body and body[-1] in _END_MARKS else ""
    core = body[:len(body) - len(end)]
    start = max(core.rfind(m) for m in _CLAUSE_MARKS) + 1
    if start == 0:  # one clause: it keeps its first half, and a comma joins the promise to it
        half = len(core) // 2 or len(core)
        if lang == "en" and " " in core[:half]:
            half = core[:half].rindex(" ")
        core = core[:half].rstrip() + ("，" if lang == "zh" else ", ")
        promise = _promise(lang, len(body) - len(core))
        start = len(core)
    else:
        promise = _promise(lang, len(core) - start)
    space = " " if core[start:start + 1] == " " else ""
    if lang == "en" and core[start - 1:start] in ("\n", ".", "!", "?"):
        promise = promise[0].upper() + promise[1:]
    return Edit("added-promise", core[:start] + space + promise + end + text[len(body):],
                ("unknown_restore_time", "no_added_promises"),
                "最后一句被换成了恢复时刻和保证（材料说恢复时间未定）。 · The last clause was replaced by a restore time "
                "and a guarantee; the material says the restore time is not known.")
