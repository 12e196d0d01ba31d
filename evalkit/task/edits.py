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


# Each edit's words are drawn from many (attacker audit F3: with one other day, Thursday, and one promise, a scan of
# the two texts for 周四|保证|Thursday|guarantee flagged every gold pair before rating, with one false alarm in 97 study
# pairs, and gave its answers). The draw is seeded by the text, so an edit is reproducible from what it changed.
_OTHER_DAYS = {"zh": "一二四五六日", "en": ["Monday", "Tuesday", "Thursday", "Friday", "Saturday", "Sunday"]}
# The material's day, in the forms an output may write it; the first that occurs in a text is changed everywhere in
# it, to another day in the same form.
_DAYS = {"zh": ["星期三", "周三", "礼拜三"], "en": ["Wednesday"]}
# A promise of a restore moment: a commitment, a day and a time, in many wordings. It takes the place of the text's
# last clause (what follows the last comma, full stop or line break), in a length near the clause's, so the text keeps
# its length (within a few characters), its line breaks and its punctuation.
_PROMISE_PARTS = {
    "zh": (["保证", "承诺", "确保", "郑重承诺", "我们保证", "我们承诺", "本部门确保"],
           ["周四", "周五", "星期四", "星期五", "明天", "次日", "周末前"],
           ["", "上午", "上午九点前", "中午十二点前", "下午两点前", "早上八点前", "晚上十点前"],
           ["恢复", "全部恢复", "恢复正常使用", "恢复上传功能", "全部恢复且不影响使用"]),
    "en": (["we guarantee it is back", "we promise service resumes", "we commit to having it back",
            "guaranteed back", "we assure you it is restored", "we promise every service is back"],
           ["Thursday", "Friday", "tomorrow", "the next day", "before the weekend"],
           ["", "by 9 am", "by noon", "by 2 pm", "by 8 am", "by 10 pm"]),
}
_CLAUSE_MARKS = "，,；;：:、。！？!?.\n"
_END_MARKS = "。！？!?."


def _draw(text: str):
    import hashlib
    import random

    return random.Random(hashlib.sha256(text.encode("utf-8")).digest())


def _promises(lang: str) -> list[str]:
    if lang == "zh":
        verbs, days, times, ends = _PROMISE_PARTS["zh"]
        return [f"{v}{d}{t}{e}" for v in verbs for d in days for t in times for e in ends]
    verbs, days, times = _PROMISE_PARTS["en"]
    return [f"{v} {t} {'on ' if d[0].isupper() else ''}{d}".replace("  ", " ") if t else f"{v} {d}"
            for v in verbs for d in days for t in times]


def _promise(lang: str, length: int, rng) -> str:
    """One of the wordings whose length is nearest `length` (within two characters), drawn."""
    every = _promises(lang)
    best = min(abs(len(p) - length) for p in every)
    return rng.choice(sorted(p for p in every if abs(len(p) - length) <= best + 2))


def change_day(text: str, language: str) -> Edit | None:
    """The material's day changed everywhere in the text (None when the text does not name it)."""
    lang = "en" if language == "en" else "zh"
    for day in _DAYS[lang]:
        if day in text:
            other = (day[:-1] + _draw(text).choice(_OTHER_DAYS["zh"]) if lang == "zh"
                     else _draw(text).choice(_OTHER_DAYS["en"]))
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
        promise = _promise(lang, len(body) - len(core), _draw(text))
        start = len(core)
    else:
        promise = _promise(lang, len(core) - start, _draw(text))
    space = " " if core[start:start + 1] == " " else ""
    if lang == "en" and core[start - 1:start] in ("\n", ".", "!", "?"):
        promise = promise[0].upper() + promise[1:]
    return Edit("added-promise", core[:start] + space + promise + end + text[len(body):],
                ("unknown_restore_time", "no_added_promises"),
                "最后一句被换成了恢复时刻和保证（材料说恢复时间未定）。 · The last clause was replaced by a restore time "
                "and a guarantee; the material says the restore time is not known.")
