"""Automatic fidelity pre-screen: transparent rules for the four criteria on the maintenance material.

Each rule is a list of named regular expressions; a verdict carries the evidence it matched, so a
rater (or a reviewer of this file) can see why. It is a pre-screen, not a judge: its agreement with
the raters (Cohen's kappa per criterion) is reported by the aggregation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .prompts import CRITERIA

RULES_VERSION = "1"

# ---- building blocks -------------------------------------------------------------------------
WED = r"(?:周三|星期三|礼拜三|週三|wednesday)"
EVENING = r"(?:晚间|晚上|夜间|夜里|晚|夜|evening|night|tonight)"
OTHER_DAY = r"(?:周[一二四五六日天]|星期[一二四五六日天]|礼拜[一二四五六日天]|明天|后天|次日|翌日|明早|明晚|monday|tuesday|thursday|friday|saturday|sunday|tomorrow)"
OTHER_TIME_OF_DAY = r"(?:上午|下午|中午|早上|早晨|清晨|凌晨|白天|傍晚|午间|morning|afternoon|noon|midday|dawn)"
CN_NUM = r"[0-9０-９一二三四五六七八九十两半几]+"
CLOCK = rf"(?:\d{{1,2}}\s*[:：]\s*\d{{2}}|{CN_NUM}\s*[点時时](?:\s*{CN_NUM}\s*分|[整半])?|\d{{1,2}}\s*(?:am|pm|a\.m\.|p\.m\.|o'clock))"
DATE = r"(?:\d{1,4}\s*年\s*\d{1,2}\s*月|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{1,2}\s*[日号](?!常)|\d{1,2}/\d{1,2}|(?:january|february|march|april|may|june|july|august|september|october|november|december)\s+\d{1,2}|\d{1,2}(?:st|nd|rd|th)\b)"
DURATION = rf"(?:{CN_NUM}\s*(?:个)?\s*(?:小时|钟头|分钟|天|日|周|星期)(?:内|之内|左右|后)?|\b\d+\s*(?:hours?|minutes?|days?|weeks?)\b|within\s+(?:an?|one|two|three|\d+)\s+(?:hours?|days?|minutes?))"
COMMITMENT = r"(?:保证|承诺|担保|确保|一定会|必将|务必|不会影响|不会对[^。；;\n]{0,10}影响|不影响(?!阅读|查阅|浏览)|guarantee|promise|we ensure|will not affect|won't affect|no impact|without any (?:impact|disruption))"

UPLOAD_BLOCKED = [
    r"(?:不能|无法|不可|不可以|不能够|暂停|停止|禁止|不支持|暂不支持|无法进行|不再|不得|暂时不能|暂时无法|暂不能|暂无法)[^。；;，,\n]{0,8}上传",
    r"上传[^。；;，,\n]{0,10}(?:暂停|关闭|停用|不可用|暂不可用|无法使用|不能使用|受限|中止|禁用|不开放|暂停使用)",
    r"(?:cannot|can't|can not|unable to|not be able to|won't be able to|will not be able to)\s+(?:\w+\s+){0,3}upload",
    r"upload\w*\s+(?:\w+\s+){0,3}(?:disabled|unavailable|paused|suspended|not (?:be )?(?:possible|available)|closed|blocked)",
    r"no new (?:files|uploads|documents) (?:can|may|will)",
]
READ_OK = [
    r"(?:仍可|仍然可以|依然可以|依旧可以|仍能|仍然能|照常|正常|照样|还可以|还能|均可|都可以|可以正常|可正常|可以继续|可继续|仍可以|可以|能够|可)\s*(?:阅读|查阅|浏览|查看|访问|读取|打开|使用已有)",
    r"(?:阅读|查阅|浏览|查看)[^。；;\n]{0,6}(?:不受影响|照常|正常进行|仍可进行|可以照常)",
    r"(?:can|may|will)\s+still\s+(?:be\s+)?(?:read|view|access|brows|open|consult)",
    r"(?:remain|stay|still be|continue to be)\s+(?:fully\s+)?(?:readable|accessible|available|viewable|open)",
    r"(?:reading|viewing|access to existing)[^.\n]{0,30}(?:unaffected|available|continues|possible)",
]
READ_INVERTED = [
    r"(?:不能|无法|不可|不可以|暂停|停止|禁止|暂时不能|暂时无法)[^。；;，,\n上传]{0,6}(?:阅读|查阅|浏览|查看|访问|读取)",
    r"(?:cannot|can't|unable to|not be able to)\s+(?:\w+\s+){0,2}(?:read|view|access|open)\b",
    r"(?:reading|viewing|access)[^.\n]{0,20}(?:disabled|unavailable|not (?:be )?possible|suspended)",
]
UPLOAD_INVERTED = [
    r"(?<![不无])(?<!不能)(?<!暂停)(?:仍可|仍然可以|照常|正常|可以|能够|可)上传",
    r"(?:can|may) still upload|uploads? (?:remain|stay|will remain|continue to be) (?:available|possible|open)",
]
RESTORE_UNKNOWN = [
    r"(?:恢复|重新开放|恢复上传|恢复服务|恢复正常|结束|完成)[^。；;\n]{0,8}(?:时间|时刻|日期)?[^。；;\n]{0,6}(?:尚未确定|尚未明确|尚不确定|还不确定|暂不确定|不确定|尚未决定|尚无定论|待定|未定|另行通知|另行公布|尚不清楚|还不清楚|未知|暂无法确定|暂时无法确定|目前无法确定|还没有确定|尚无确切)",
    r"(?:尚未确定|尚不确定|还不确定|暂不确定|无法确定|不确定|尚无定论|尚不清楚|还不知道)[^。；;\n]{0,8}(?:何时|什么时候|哪天|几时)?[^。；;\n]{0,4}(?:恢复|重新开放|结束)",
    r"(?:何时|什么时候|哪天|几时)[^。；;\n]{0,8}(?:恢复|重新开放|结束)[^。；;\n]{0,8}(?:尚未确定|还不确定|尚不确定|不确定|待定|未定|尚无定论|尚不清楚|还不清楚|未知)",
    r"(?:not (?:yet )?(?:known|confirmed|determined|decided|certain|clear)|unknown|to be (?:determined|confirmed|announced)|tbd|tba|undetermined|no (?:confirmed|set|fixed) (?:time|date))",
]
RESTORE_GIVEN = [
    r"(?:预计|预期|可望|有望)[^。；;\n]{0,14}(?:恢复|重新开放|结束|完成)",
    rf"(?:将于|将在|会在|计划在|计划于)[^。；;，,\n]{{0,6}}(?:{CLOCK}|{OTHER_DAY}|{DATE})[^。；;，,\n]{{0,8}}(?:恢复|重新开放)",
    rf"(?:{CLOCK}|{OTHER_DAY}|{DATE})[^。；;\n]{{0,6}}(?:前|之前|以前)?[^。；;\n]{{0,4}}(?:恢复|重新开放|结束维护|完成维护)",
    rf"(?:恢复|重新开放)[^。；;\n]{{0,4}}(?:于|在)\s*(?:{CLOCK}|{OTHER_DAY}|{DATE})",
    r"(?:expected|scheduled|planned|estimated|should be)\s+(?:\w+\s+){0,3}(?:back|restored|resume|complete|finished)",
    r"(?:back|restored|resume\w*)\s+(?:\w+\s+){0,2}(?:by|at|on|before|within)\s+",
]


@dataclass
class Verdict:
    passed: bool
    evidence: str

    def as_json(self) -> dict:
        return {"pass": self.passed, "evidence": self.evidence}


def _find(patterns, text: str) -> list[str]:
    hits = []
    for p in patterns if isinstance(patterns, list) else [patterns]:
        for m in re.finditer(p, text, flags=re.IGNORECASE):
            hits.append(m.group(0).strip())
    return hits


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text or "")


def check_schedule(text: str) -> Verdict:
    wed_evening = _find(rf"{WED}[^。；;，,\n]{{0,6}}{EVENING}|{EVENING}[^。；;，,\n]{{0,3}}{WED}", text)
    other_day = _find(OTHER_DAY, text)
    other_time = _find(OTHER_TIME_OF_DAY, text)
    clock = _find(CLOCK, text)
    if not wed_evening:
        return Verdict(False, "no 'Wednesday evening' (周三晚间/晚上/夜间) found")
    wrong = other_day + other_time + clock
    if wrong:
        return Verdict(False, f"found {wed_evening[0]!r} but also another day/time: {', '.join(dict.fromkeys(wrong))}")
    return Verdict(True, f"states {wed_evening[0]!r}")


def check_read_only_vs_upload(text: str) -> Verdict:
    blocked, read_ok = _find(UPLOAD_BLOCKED, text), _find(READ_OK, text)
    inverted = _find(READ_INVERTED, text) + _find(UPLOAD_INVERTED, text)
    if inverted:
        return Verdict(False, f"inverted: {', '.join(dict.fromkeys(inverted))}")
    missing = [what for what, hits in (("uploads blocked", blocked), ("existing files readable", read_ok)) if not hits]
    if missing:
        return Verdict(False, f"missing: {' and '.join(missing)}")
    return Verdict(True, f"uploads blocked {blocked[0]!r}; readable {read_ok[0]!r}")


def check_unknown_restore_time(text: str) -> Verdict:
    unknown, given = _find(RESTORE_UNKNOWN, text), _find(RESTORE_GIVEN, text)
    times = _find(CLOCK, text) + _find(DURATION, text)
    if given or times:
        return Verdict(False, f"gives a time or deadline: {', '.join(dict.fromkeys(given + times))}")
    if not unknown:
        return Verdict(False, "does not say the restore time is unknown")
    return Verdict(True, f"says {unknown[0]!r}")


def check_no_added_promises(text: str) -> Verdict:
    added = (
        [f"date {h!r}" for h in _find(DATE, text)]
        + [f"time {h!r}" for h in _find(CLOCK, text)]
        + [f"duration {h!r}" for h in _find(DURATION, text)]
        + [f"restore {h!r}" for h in _find(RESTORE_GIVEN, text)]
        + [f"commitment {h!r}" for h in _find(COMMITMENT, text)]
    )
    if added:
        return Verdict(False, "adds " + ", ".join(dict.fromkeys(added)))
    return Verdict(True, "no date, time, duration, restore moment or commitment found")


CHECKS = {
    "schedule": check_schedule,
    "read_only_vs_upload": check_read_only_vs_upload,
    "unknown_restore_time": check_unknown_restore_time,
    "no_added_promises": check_no_added_promises,
}
assert tuple(CHECKS) == CRITERIA


def screen(text: str, prompt_id: str | None = None) -> dict[str, Verdict]:
    """Run the four checks. `prompt_id` must be a bundled prompt (all share the maintenance material)."""
    if prompt_id is not None:
        from .prompts import load_prompts

        load_prompts(ids=[prompt_id])  # raises a clear error for an unknown id
    text = _normalise(text)
    return {cid: fn(text) for cid, fn in CHECKS.items()}


def screen_all(db) -> int:
    """Pre-screen every stored successful generation not yet screened by this rules version. Returns how many."""
    from .store import insert_prescreen

    rows = list(
        db.query(
            """SELECT g.id, g.prompt_id, g.text FROM generations g
               WHERE g.status = 'ok' AND NOT EXISTS (
                   SELECT 1 FROM prescreen s WHERE s.generation_id = g.id AND s.rules_version = ?)""",
            [RULES_VERSION],
        )
    )
    insert_prescreen(db, [
        {"generation_id": r["id"], "criterion": c, "passed": int(v.passed), "evidence": v.evidence,
         "rules_version": RULES_VERSION}
        for r in rows for c, v in screen(r["text"]).items()
    ])
    return len(rows)
