"""Automatic fidelity pre-screen: transparent rules for the criteria of the maintenance material.

One rule per criterion (`check_*`, named by its criterion in evalkit.task.criteria, whose `screen` runs them),
each in its own section below with the words it relies on; a verdict carries the evidence it matched, so a rater (or a reviewer of this file) can see why. It is a pre-screen, not a
judge: `aggregate` reports its agreement with the raters (percent and Cohen's kappa per criterion), and
tests/prescreen_labelled.py holds outputs labelled by hand, with the reading of each criterion spelled out.

The rules read a text sentence by sentence and clause by clause, because what a day, a time or a "no impact"
means depends on what it is said about: "周四" fails the schedule only when the maintenance is put on it, not
when it is the restore day or the day to call the administrator; "不影响阅读" restates the material while
"不影响大家的工作" is a commitment.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Bump whenever a rule changes: stored verdicts are keyed by it, so `aggregate` and `plan` screen again.
RULES_VERSION = "2"


@dataclass
class Verdict:
    passed: bool
    evidence: str

    def as_json(self) -> dict:
        return {"pass": self.passed, "evidence": self.evidence}


# ==== text preparation =====================================================================================

# Traditional characters that occur in notices about this material, mapped to simplified, so that one set of
# patterns serves both scripts (週三晚間, 無法上傳, 恢復時間尚未確定, 不會影響 ...).
_TRADITIONAL = str.maketrans(
    "週維護無傳檔閱讀復時間確證諾會響擔確開關禮資庫將為於進請後續預計約個鐘點號還說準暫繼視覽訪問啟過這們對損數據補償專僅從來內現舊務"
    "裡聯繫員發佈屆該變體謝諒煩帶給統應戶處則認電郵話寫權機週當書檢測試節隨並設務級勞險穩護慮盡",
    "周维护无传档阅读复时间确证诺会响担确开关礼资库将为于进请后续预计约个钟点号还说准暂继视览访问启过这们对损数据补偿专仅从来内现旧务"
    "里联系员发布届该变体谢谅烦带给统应户处则认电邮话写权机周当书检测试节随并设务级劳险稳护虑尽",
)


def normalise(text: str) -> str:
    # NFKC folds full-width digits, letters and punctuation (２０：００, ＴＢＤ, ，；：) into ASCII.
    text = unicodedata.normalize("NFKC", text or "").translate(_TRADITIONAL)
    return re.sub(r"\s+", " ", text).strip()


# Sentences end at 。！; and newlines, and at an English full stop that closes no abbreviation (Wed. evening,
# 8 p.m., Dec. 3). A question mark ends none: "上传？暂停。" is one statement.
_SENTENCE_END = re.compile(
    r"[。!;\n]+|(?<!\bwed)(?<!\bdec)(?<!\bnov)(?<!\boct)(?<!\bsep)(?<!\bjan)(?<!\bfeb)(?<!\b[ap]\.m)(?<!\be\.g)(?<!\bi\.e)"
    r"\.(?:\s+|$)", re.IGNORECASE)
# Clauses end at commas and before a contrast word, so that in "you can open existing files but not upload new
# ones" each verb gets its own polarity.
_CLAUSE_END = re.compile(r"[,，]|(?=\b(?:but|though|although|whereas|while)\b)|(?=但|不过|只是)", re.IGNORECASE)


# Each rule walks the same sentences and clauses: split each text once.
@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in _SENTENCE_END.split(text) if s and s.strip())


@lru_cache(maxsize=16384)
def _clauses(sentence: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in _CLAUSE_END.split(sentence) if c and c.strip())


def _in_clauses(text: str):
    """(sentence, clause, offset of the clause in the sentence) over the whole text."""
    for sentence in _sentences(text):
        start = 0
        for clause in _clauses(sentence):
            start = sentence.find(clause, start)
            yield sentence, clause, start
            start += len(clause)


def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


def _hits(pattern: re.Pattern, text: str) -> list[str]:
    return [m.group(0).strip() for m in pattern.finditer(text)]


# ==== days, times, dates and durations (shared) ============================================================

WED = r"(?:周三|星期三|礼拜三|\bwed(?:nesday)?\b\.?)"
EVENING = r"(?:晚间|晚上|夜间|夜里|夜晚|深夜|晚|夜|\bevenings?\b|\bnights?\b)"
OTHER_DAY = (r"(?:周[一二四五六日天末]|星期[一二四五六日天]|礼拜[一二四五六日天]|明天|后天|次日|翌日|明早|明晚|第二天|今天|"
             r"\b(?:monday|tuesday|thursday|friday|saturday|sunday|tomorrow|weekend)\b)")
OTHER_TIME_OF_DAY = (r"(?:上午|下午|中午|早上|早晨|清晨|凌晨|白天|傍晚|午间|午后|日间|"
                     r"\b(?:morning|afternoon|noon|midday|dawn|daytime|lunchtime)\b)")
_ZH_NUM = r"(?:\d{1,2}|[一二三四五六七八九十两]{1,3})"
# Clock times: 8 pm, 9:30 pm, 20:00, 晚上8点(半), 八点三十分. "一点" alone is "a little" and "以下三点" three points.
CLOCK = (rf"(?:(?<![\d:])\d{{1,2}}(?::\d{{2}})?\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)(?![a-z])|(?<![\d:])\d{{1,2}}\s*:\s*\d{{2}}(?!\d)|"
         rf"(?<![一第几\d])(?<!以下)(?<!如下)(?<!下列)(?!一[点时](?![钟整半]|\s*\d))(?!十分){_ZH_NUM}\s*[点时]"
         rf"(?!间|候|刻|期|说明|注意|要求|建议|内容|事项)(?:\s*{_ZH_NUM}\s*分|[整半钟])?)")
MONTHS = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
          r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?")
# Calendar dates: 2024年12月, 2024-12-03, 12月3日, 于3日, 3号, 12/3, December 3rd, 3 Dec, the 5th. A bare "3日"
# is decided by _bare_days: 周三（3日） is a date, 持续三日 a duration.
DATE = (r"(?:\d{4}\s*年(?:\s*\d{1,2}\s*月)?|\d{4}-\d{1,2}-\d{1,2}|"
        r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})\s*月\s*(?:\d{1,2}|[一二三四五六七八九十]{1,3})\s*[日号]|"
        r"(?:本月|下月|于|在|到|至|从)\s*\d{1,2}\s*[日号]|(?<!\d)\d{1,2}\s*号(?!楼|线|文件)|(?<![\d/])\d{1,2}/\d{1,2}(?:/\d{2,4})?(?![\d/])|"
        rf"\b{MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTHS}(?![a-z])|"
        r"\bthe\s+\d{1,2}(?:st|nd|rd|th)\b)")
BARE_DAY = r"(?<![月第\d一二三四五六七八九十两])(?:\d{1,2}|[一二三四五六七八九十两]{1,3})\s*日"
DAY_SPAN_BEFORE = r"(?:持续|需要|需|约|大约|为期|历时|用时|耗时|花|将近|近|超过|达|要|至少|最多|一连)\s*$"
DAY_SPAN_AFTER = r"^\s*(?:内|之内|左右|以上|以内|后|之后|时间|的时间)"
_EN_COUNT = r"(?:\d+(?:\.\d+)?|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a few|a couple of|several|few)"
# Durations: 两小时, 一个半小时, 几个小时, 半天, 一到两个工作日, 一晚, 通宵, two hours, one to two working days, half a day.
DURATION = (rf"(?:(?<![月第]){_ZH_NUM}\s*(?:个)?\s*半?\s*(?:小时|钟头|分钟|天|工作日|周(?![一二三四五六日天末])|个?星期(?![一二三四五六日天])|个月)|"
            r"[几数]\s*(?:个)?\s*(?:小时|钟头|分钟|天|周)|半\s*(?:个)?\s*(?:小时|天|钟头)|一两天|一整晚|一整夜|一个晚上|半个?(?:晚上|晚|夜)|"
            r"(?<![周期拜前])一(?:晚|夜)(?![间里上])|整晚|整夜|通宵|"
            rf"\b{_EN_COUNT}(?:\s+(?:to|or|-)\s+{_EN_COUNT})?\s+(?:working\s+|business\s+|full\s+|whole\s+)?"
            r"(?:hours?|hrs?|minutes?|mins?|days?|weeks?|nights?)\b|\bhalf\s+(?:a|an)\s+(?:day|hour)\b|\bovernight\b)")
# A lead time for the reader's own uploads (提前一天, one day before) is advice, not how long the maintenance lasts.
LEAD_TIME = _rx(r"提前|之前|前一|ahead|before|in advance|earlier")
# Words that name a moment without a number: 当晚, 次日, tonight, the next morning, by the end of the week.
TIME_WORDS = _rx(r"当晚|当天|今晚|今夜|次日|翌日|第二天|明天|明早|明晚|下周|本周|周末|午夜|零点|半夜|月底|"
                 r"\btonight\b|\btomorrow\b|that (?:night|evening|day)|same (?:night|evening|day)|by morning|this week|"
                 r"next week|weekend|\bmidnight\b|(?:end|start|beginning) of (?:the )?(?:day|week|month)|"
                 r"(?:next|following) (?:morning|day|evening)|later (?:today|tonight|this week)|the (?:same )?day")
_DATE, _CLOCK, _DURATION = _rx(DATE), _rx(CLOCK), _rx(DURATION)
_TIME_EXPR = _rx(rf"{DATE}|{CLOCK}|{OTHER_DAY}|{OTHER_TIME_OF_DAY}|{EVENING}")

_CN_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九十")} | {"两": 2}


def _hour(clock: str) -> int | None:
    m = re.search(r"\d{1,2}", clock)
    if m:
        return int(m.group(0))
    m = re.match(r"([一二三四五六七八九十两]{1,3})", clock)
    if not m:
        return None
    digits = [_CN_DIGITS[c] for c in m.group(1)]
    if digits[0] == 10:  # 十, 十一 ... 十九
        return 10 + (digits[1] if len(digits) > 1 else 0)
    if len(digits) > 1 and digits[1] == 10:  # 二十, 二十三
        return digits[0] * 10 + (digits[2] if len(digits) > 2 else 0)
    return digits[0]


def _evening_clock(clock: str, before: str) -> bool:
    """A clock time inside the evening: 5-11 pm, 17:00-23:59, 17点-23点, or an hour right after 晚上/夜 (晚上8点)."""
    hour = _hour(clock)
    if hour is None:
        return False
    if re.search(r"p\.?m", clock, re.IGNORECASE):
        return 5 <= hour <= 11
    if re.search(r"a\.?m", clock, re.IGNORECASE) or hour > 23:
        return False
    if 17 <= hour <= 23:
        return True
    day_part = re.findall(rf"{EVENING}|{OTHER_TIME_OF_DAY}", before[-6:], re.IGNORECASE)
    return bool(day_part) and bool(re.fullmatch(EVENING, day_part[-1], re.IGNORECASE))


def _bare_days(sentence: str) -> tuple[list[str], list[str]]:
    """Split the bare "N日" of a sentence into dates (周三（3日）) and spans (持续三日, 三日内)."""
    dates, spans = [], []
    for m in re.finditer(BARE_DAY, sentence):
        span = re.search(DAY_SPAN_BEFORE, sentence[:m.start()]) or re.match(DAY_SPAN_AFTER, sentence[m.end():])
        (spans if span else dates).append(m.group(0))
    return dates, spans


def _dates(text: str) -> list[str]:
    return _hits(_DATE, text) + [d for sentence in _sentences(text) for d in _bare_days(sentence)[0]]


def _durations(text: str) -> list[str]:
    out = []
    for sentence in _sentences(text):
        out += _bare_days(sentence)[1]
        for m in _DURATION.finditer(sentence):
            around = sentence[max(0, m.start() - 3):m.start()] + "|" + sentence[m.end():m.end() + 8]
            if LEAD_TIME.search(around):
                continue  # 提前一天, one day before: advice on one's own uploads
            if re.search(r"热线|hotline", sentence[m.end():m.end() + 6], re.IGNORECASE):
                continue  # "24小时热线" is a support commitment (COMMITMENTS), not how long the work takes
            out.append(m.group(0))
    return out


# ==== what a clause is about (shared) ======================================================================

MAINTENANCE = _rx(r"维护|维修|升级|停机|下线|maintenance|maintained|maintain|\bdown\b|upgrade|offline")
# The restore, or the end of the maintenance.
RESTORE = _rx(r"恢复|重新开放|重新上线|开放上传|修复|修好|结束|(?:维护|工作|升级)[^,，。]{0,6}完成|完成(?:维护|升级)|什么时候好|何时好|"
              r"\bback\b|restor\w*|resum\w*|\breturn\w*|reopen\w*|"
              r"(?:running|working|up|online|available|open|usable|normal)\s+(?:\w+\s+)?again|(?:is|be|are) over\b|"
              r"\bends?\b|\bending\b|\beta\b|how long|duration|"
              r"(?:maintenance|work|upgrade|it)\s+(?:\w+\s+){0,6}(?:finish\w*|complet\w*|done)|"
              r"(?:finish\w*|complet\w*)\s+(?:the\s+)?(?:maintenance|work)")
UNTIL = _rx(r"至|直到|到|until|till|through|\binto\b")
DEADLINE = _rx(r"不超过|不会超过|之内|以内|内完成|最晚|最迟|最快|不(?:会)?早于|不(?:会)?晚于|不(?:会)?迟于|"
               r"at the latest|at the earliest|no more than|no later than|\bwithin\b")
PREDICTED = _rx(r"预计|预期|有望|可望|估计|应该会|应能|\bexpect\w*|\bshould be\b|\bhope to\b|\bscheduled to\b|\bestimated?\b")
# A maintenance window "6-10 pm" or "晚上8点到11点" ends at a restore moment.
RANGE = _rx(r"(?<![\d:/])\d{1,2}(?::\d{2})?\s*(?:am|pm|点)?\s*(?:-|–|—|~|\bto\b|至|到)\s*\d{1,2}(?::\d{2})?\s*"
            r"(?:am\b|pm\b|a\.m\.|p\.m\.|点)")
CONTACT = _rx(r"联系|咨询|致电|反馈|contact|reach out|get in touch|\bcall\b|\bemail\b|helpdesk")
# The notice itself, progress reports and meetings ("本通知今天发布", "周五的例会上会说明").
NOTICE = _rx(r"发布|发出|印发|公告|本通知|此通知|通知|通报|同步|进展|更新|例会|会议|会上|说明|讨论|"
             r"\bissued\b|\bpublished\b|\bsent\b|this notice|\bupdates?\b|\bannounce\w*|\binform\w*|\bnotify\b|"
             r"\bmeets?\b|\bmeeting\b|\bdiscuss\w*|\bplan\b")
# The reader's own to-do ("请于周一前完成备份", "please finish uploads on Wednesday morning").
ADVICE = _rx(r"^(?:请|建议|记得|务必)|^(?:so\s+)?(?:please|remember to|make sure)")
# A denial ("不是周四", "not Thursday").
NEGATED_BEFORE = _rx(r"(?:不是|并非|而非|而不是|\bnot\b|rather than|instead of)\s*\S{0,3}$")


@lru_cache(maxsize=1024)
def _restore_moments(text: str) -> tuple[str, ...]:
    """Clauses that put the restore (or the end of the maintenance) at a time, bound it, or predict it.
    Shared: such a clause fails unknown_restore_time (a time is given) and no_added_promises (a moment added)."""
    out = []
    for sentence, clause, _offset in _in_clauses(text):
        if CONTACT.search(clause):
            continue  # "恢复后如仍有问题请于次日联系管理员": the day is for calling, not the restore
        if RANGE.search(clause):
            out.append(clause)
            continue
        if not (RESTORE.search(clause) or UNTIL.search(clause) or DEADLINE.search(clause) or PREDICTED.search(clause)):
            continue  # none of the cases below can hold; skip the costly search for times
        times = [m.group(0) for m in _TIME_EXPR.finditer(clause)
                 # the Wednesday-evening schedule in the clause ("周三晚间维护结束后") is no restore time
                 if not re.fullmatch(EVENING, m.group(0), re.IGNORECASE) or re.search(r"当晚|今晚|tonight|that", clause)]
        times += _hits(TIME_WORDS, clause)
        # "至/until" + a time ends the maintenance; "如果到了周五还要上传" is the reader's own plan
        until = [t for t in times if UNTIL.search(clause[:clause.find(t)][-14:]) and not UPLOAD.search(clause)]
        if RESTORE.search(clause):
            if times or (PREDICTED.search(clause) and not UNKNOWN.search(clause)) or DEADLINE.search(clause):
                out.append(clause)
        elif until or (times and DEADLINE.search(clause)) or (times and PREDICTED.search(clause) and RESTORE.search(sentence)):
            out.append(clause)  # "周三晚上至周四凌晨", "最快可能要到周五", "it may be Friday at the earliest"
    return tuple(out)


# ==== schedule: the maintenance on Wednesday evening, and on no other day or time of day ===================

_WED_EVENING = _rx(rf"{WED}[^。.;!\n]{{0,20}}?{EVENING}|{EVENING}\s*(?:of|,)?\s*{WED}")
_WED_CLOCK = _rx(rf"{WED}[^。.;!\n]{{0,12}}?(?P<clock>{CLOCK})")
_OTHER = _rx(rf"{OTHER_DAY}|{OTHER_TIME_OF_DAY}|(?P<clock>{CLOCK})")
# Verbs of reporting and meeting around a day: "维护进展将在周四上午通报", "the team meets on Monday".
REPORTED_AFTER = _rx(r"^[^,，]{0,8}?(?:通报|同步|公布|发布|告知|汇报|更新|通知|例会|会议|会上|说明|讨论)|"
                    r"^[^,]{0,12}?\b(?:update|announce|report|inform|notify|meet\w*|discuss\w*)")
# Words before a day that make it an end or a bound ("周三晚上至周四凌晨", "by Thursday"): the restore's business.
END_BEFORE = _rx(r"至|到|直到|until|till|through|\binto\b|最快|最晚|最迟|最早|不早于|不晚于|\bby\b|earliest|latest")
REPORTED_BEFORE = _rx(r"\b(?:meets?|meeting|discuss\w*|announce\w*|report\w*|updates?|inform\w*|notify)\s+(?:\w+\s+){0,2}$")


def _wednesday_evening(text: str) -> list[str]:
    found = []
    for sentence in _sentences(text):
        for m in _WED_EVENING.finditer(sentence):
            # "资料库周三维护，预计晚上恢复": an evening that belongs to the restore is not the schedule.
            tail = re.split(r"[,，]", sentence[m.end():m.end() + 6])[0]
            if not RESTORE.search(m.group(0)) and not RESTORE.search(tail):
                found.append(m.group(0))
        for m in _WED_CLOCK.finditer(sentence):  # "Wednesday at 20:00", "周三晚上8点"
            if _evening_clock(m.group("clock"), sentence[:m.start("clock")]):
                found.append(m.group(0))
    return found


def _other_schedule_times(text: str) -> list[str]:
    """Other days, times of day and non-evening clock times said of the maintenance itself. A day in a clause
    about something else (the restore, calling the administrator, one's own uploads, a report or meeting) is
    not the schedule: counting it was one of the mistakes of rules version 1 (issue #20)."""
    wrong = []
    for sentence, clause, offset in _in_clauses(text):
        elsewhere = (RESTORE.search(clause) or CONTACT.search(clause) or DEADLINE.search(clause)
                     or ((NOTICE.search(clause) or ADVICE.search(clause)) and not MAINTENANCE.search(clause))
                     or ((UPLOAD.search(clause) or READ.search(clause) or re.search(r"照常|正常使用|as usual", clause))
                         and not MAINTENANCE.search(clause)))
        if elsewhere:
            continue
        for m in _OTHER.finditer(clause):
            before = clause[:m.start()]
            if (END_BEFORE.search(before) or NEGATED_BEFORE.search(before) or REPORTED_BEFORE.search(before)
                    or REPORTED_AFTER.search(clause[m.end():])):
                continue  # "周三晚上至周四凌晨" (the end is the restore), "不是周四", "周四上午通报"
            if m.group("clock") and _evening_clock(m.group(0), sentence[:offset + m.start()]):
                continue  # 晚上8点, 20:00: still Wednesday evening
            wrong.append(m.group(0))
    return wrong



def check_schedule(text: str) -> Verdict:
    wed_evening = _wednesday_evening(text)
    if not wed_evening:
        return Verdict(False, "no 'Wednesday evening' (周三晚间/晚上/夜间) found")
    wrong = _other_schedule_times(text)
    if wrong:
        return Verdict(False, f"found {wed_evening[0]!r} but the maintenance is also put on: {', '.join(dict.fromkeys(wrong))}")
    return Verdict(True, f"states {wed_evening[0]!r}")


# ==== read_only_vs_upload: no new uploads, existing files readable, neither inverted =======================

UPLOAD = _rx(r"上传|传(?=不上|不了|上去)|\bupload\w*|(?:提交|添加|新增|存入|\badd\w*|\bsubmit\w*|\bpost\w*)")
# 提交/添加/add/submit are uploading only when new files are the object.
UPLOAD_NEEDS_NEW = _rx(r"新增|新(?:的)?(?:文件|资料|文档|档案)|\bnew\s+(?:files?|documents?|ones|material)")
# "已经上传的文件", "uploaded files" are the existing files, not an upload.
UPLOADED = _rx(r"上传的(?:文件|资料|文档)|uploaded\s+(?:files|documents)")
READ = _rx(r"阅读|查阅|浏览|查看|读取|访问|打开|开启|可读|(?:能|可以?|还能|仍可|继续|照常?)看|\blook(?:ed)? at\b|"
           r"\bread(?:ing|able)?\b|\bview\w*|\bopen\w*|\baccess\w*|\bbrows\w*|\bconsult\w*")
READ_ONLY = _rx(r"只读|read[- ]only")  # says both halves at once
# "已有文件仍可使用", "existing files remain available": using existing files counts as reading them.
EXISTING = _rx(r"已有|现有|原有|已存|旧文件|老文件|已经?上传的|\bexisting\b|\bcurrent (?:files|documents)|already (?:stored|there|in)")
USE = _rx(r"使用|可用|\bavailable\b|\busable\b|\bused?\b")
# A clause about before or after the maintenance says nothing about it: "完成后即可恢复上传", "请在维护开始前
# 完成上传", "after which uploads will be possible again".
OUTSIDE_WINDOW = _rx(r"之后|以后|结束后|完成后|恢复后|重新|恢复(?!时间|时刻|日期)|之前|以前|开始前|日前|号前|提前|"
                     r"\bafter\b|afterwards?|\bagain\b|\bonce\b|\bbefore\b|beforehand|prior to|ahead of|\buntil\b")
ONLY_AFTER = _rx(r"^(?:but|但是?|不过)?\s*(?:only (?:after|once|when)|not until|只有等|只能等|要等|须等|需等|得等)")
# "If uploads still fail on Thursday", "如仍无法上传" suppose; they state nothing.
CONDITIONAL = _rx(r"^(?:if|in case|should|如果|若|假如|万一|如(?![今此同何]))")

# Polarity markers, tried longest first (see _markers) so that "并非无法", "not affect" and "can't" win over
# "无法", "not" and "can". Before the verb: 不能上传, 仍可阅读, cannot upload, can still read ...
_POS_BEFORE = ["并非无法", "并不是不能", "不是不能", "不影响", "不会影响", "不受影响", "仍然可以", "仍然能", "依然可以", "依旧可以",
               "照常可以", "还可以", "可以正常", "可正常", "可以继续", "可继续", "仍可以", "只能", "仍可", "仍能", "依然", "依旧",
               "照常", "照样", "正常", "均可", "都可以", "都可", "还能", "可以", "能够", "可", "能", "开放",
               "not affect", "won't affect", "will not affect", "does not affect", "doesn't affect", "can still", "may still",
               "still be able to", "continue to", "continues to", "be able to", "available to", "can", "may", "still", "only",
               "possible to", "remains?", "stays?", "will remain", "will stay", "continue to be"]
_NEG_BEFORE = ["no one will be able to", "nobody will be able to", "nothing can", "nothing will", "也不能", "也无法", "也不可",
               "既不能", "既无法", "不能够", "不能", "无法", "不可以", "不可", "不了", "没法", "未能", "暂停", "停止", "禁止", "不支持",
               "暂不支持", "不再", "不得", "请勿", "请不要", "不要", "勿", "既不", "也不", "暂不", "请避免", "避免", "停",
               "avoid", "refrain from", "hold off on", "hold off", "cannot", "can't", "can not", "couldn't", "unable to",
               "not be able to", "won't be able to", "will not be able to", "doesn't", "does not", "won't be possible to",
               "will not be possible to", "not be possible to", "not possible to", "impossible to", "no way to", "do not",
               "don't", "not be available to", "no longer", "neither", "nor", "no", "not", "without"]
# ... and after it: 上传功能暂停, 阅读照常, uploads are disabled, reading is unaffected.
_POS_AFTER = ["不受影响", "不受限制", "不受任何限制", "没有限制", "不受限", "正常", "照常", "正常进行", "可以照常", "仍可进行", "可用", "不误",
              "unaffected", "as usual", "as normal", "normal", "remains?", "stays?", "still", "continues?", "available",
              "possible", "works?", "fine", "open", "enabled", "allowed", "ok", r"on(?=\s*(?:[.,;]|$))"]
_NEG_AFTER = ["暂停", "关闭", "停用", "不可用", "暂不可用", "无法使用", "不能使用", "受限", "中止", "禁用", "不开放", "不了", "暂时关闭",
              "失败", "报错", "出错", "错误", "拒绝", "被拒", "不上去",
              "will not be possible", "will not be available", "will not be allowed", "will not work", "not be possible",
              "not be available", "not possible", "not available", "not allowed", "won't be possible", "won't work",
              "won't go through", "won't be accepted", "disabled", "unavailable", "paused", "suspended", "blocked",
              "halted", "off", "closed", "stopped", "cannot", "can't", "will not", "won't", "impossible",
              "isn't possible", "is not possible", "isn't available", "is not available", "greyed out", "grayed out",
              "turned off", "switched off", "hidden", "locked", "fails?", "will fail", "still fail", "still fails",
              "errors?", "rejected", "refused", "declined", "not accepted"]
# An elliptic denial reverses the statement before it: "uploading is blocked, reading isn't".
ELLIPSIS = _rx(r"^\s*(?:won't|will not|isn't|is not|aren't|are not|doesn't|does not|can't|cannot)(?:\s+be)?\s*(?:[.,;!]|$)")


def _word(alt: str) -> str:
    """English markers match whole words only ("can" must not match inside "cannot")."""
    return (r"\b" if alt[0].isascii() and alt[0].isalpha() else "") + alt + (r"\b" if alt[-1].isascii() and alt[-1].isalpha() else "")


def _markers(pos: list[str], neg: list[str]) -> re.Pattern:
    alts = sorted([(a, "pos") for a in pos] + [(a, "neg") for a in neg], key=lambda a: -len(a[0]))
    return _rx("|".join(f"(?P<{kind}{i}>{_word(a)})" for i, (a, kind) in enumerate(alts)))


POLARITY_BEFORE = _markers(_POS_BEFORE, _NEG_BEFORE)
POLARITY_AFTER = _markers(_POS_AFTER, _NEG_AFTER)


def _polarity(clause: str, start: int, end: int, previous: str | None = None) -> str | None:
    """'neg' when the verb at clause[start:end] is denied, 'pos' when it is said to work, None when neither is said.
    The nearest marker before the verb decides; failing that, the nearest after it. `previous` is the polarity of
    the statement before, which an elliptic denial reverses."""
    if previous and ELLIPSIS.match(clause[end:]):
        return "pos" if previous == "neg" else "neg"
    window = clause[max(0, start - 24):start]
    before = list(POLARITY_BEFORE.finditer(window))
    if before:
        if PROMISE.search(window[before[-1].end():]):
            return None  # "无法保证访问速度" denies a promise, not the reading
        return before[-1].lastgroup[:3]
    after = POLARITY_AFTER.search(clause[end:end + 30])
    return after.lastgroup[:3] if after else None


def _verb_parts(clause: str) -> list[str]:
    """Split "新文件上传暂停、已有文件阅读正常" at 、 where each side has its own verb, so that 暂停 stays with
    上传; "阅读、下载不受影响" stays whole (下载 is no verb of ours)."""
    parts: list[str] = []
    for piece in clause.split("、"):
        if parts and (UPLOAD.search(piece) or READ.search(piece)) and (UPLOAD.search(parts[-1]) or READ.search(parts[-1])):
            parts.append(piece)
        elif parts:
            parts[-1] += "、" + piece
        else:
            parts.append(piece)
    return parts


def _statements(text: str) -> dict[str, list[str]]:
    """What the text says about uploading and reading during the maintenance, clause by clause."""
    said: dict[str, list[str]] = {"upload_blocked": [], "upload_open": [], "read_ok": [], "read_blocked": []}
    parts = [part for sentence in _sentences(text) for c in _clauses(sentence) for part in _verb_parts(c)] + [""]
    previous = None  # the polarity of the last statement, for an elliptic "reading isn't"
    for clause, following in zip(parts, parts[1:]):
        for m in READ_ONLY.finditer(clause):
            said["upload_blocked"].append(m.group(0))
            said["read_ok"].append(m.group(0))
        if OUTSIDE_WINDOW.search(clause) or ONLY_AFTER.match(following) or CONDITIONAL.match(clause):
            continue
        verbs = [("upload", m) for m in UPLOAD.finditer(clause)
                 if (re.match(r"上传|传|upload", m.group(0), re.IGNORECASE) or UPLOAD_NEEDS_NEW.search(clause))
                 and not UPLOADED.match(clause, m.start())
                 and not re.search(r"已经?$|already\s*$|previously\s*$", clause[:m.start()])]
        verbs += [("read", m) for m in READ.finditer(clause)]
        if EXISTING.search(clause) and not verbs:
            verbs += [("use", m) for m in USE.finditer(clause)]
        for kind, m in sorted(verbs, key=lambda v: v[1].start()):
            pol = _polarity(clause, m.start(), m.end(), previous)
            if pol is None and (re.search(r"(?:able|ible)$|可读|能看|看$", m.group(0))
                                or (kind == "use" and re.search(r"可用|available|usable", m.group(0), re.IGNORECASE))):
                pol = "pos"  # "readable", "可读", "available" say it on their own
            if pol is None:
                continue
            previous = pol
            if kind == "upload":
                said["upload_blocked" if pol == "neg" else "upload_open"].append(clause)
            else:
                said["read_ok" if pol == "pos" else "read_blocked"].append(clause)
    return said


def check_read_only_vs_upload(text: str) -> Verdict:
    said = _statements(text)
    inverted = said["upload_open"] + said["read_blocked"]
    if inverted:
        return Verdict(False, f"inverted: {', '.join(dict.fromkeys(inverted))}")
    missing = [what for what, key in (("uploads blocked", "upload_blocked"), ("existing files readable", "read_ok"))
               if not said[key]]
    if missing:
        return Verdict(False, f"missing: {' and '.join(missing)}")
    return Verdict(True, f"uploads blocked {said['upload_blocked'][0]!r}; readable {said['read_ok'][0]!r}")


# ==== unknown_restore_time: said to be unknown, and no restore moment, deadline or duration ================

UNKNOWN = _rx(
    r"尚未确定|尚未明确|尚不确定|还不确定|暂不确定|暂时无法确定|无法确定|不能确定|不确定|尚未决定|尚无定论|待定|未定|另行通知|另行公布|"
    r"另行告知|待通知|尚不清楚|还不清楚|不清楚|未知|不知道|说不准|说不好|没有确定|没定|尚不明确|不明确|尚无确切|没有确切|没有消息|暂无|"
    r"无法给出|不能给出|无法提供|视[^,，。]{0,12}而定|取决于|不详|不定(?!期)|未明|尚待|一旦确定|确定后|难以?确定|难说|不好说|"
    r"难以?预[估计测]|无法预[估计测]|要看|得看|说不(?:准|好|清|上来)|(?:未|没有?|还没)\s*定(?!于)|评估中|研究中|商讨中|讨论中|"
    r"(?:\bnot|n't)\s+(?:yet\s+)?(?:been\s+)?(?:known|confirmed|determined|decided|certain|clear|set|fixed|scheduled)|"
    r"\bunknown\b|\bunclear\b|\buncertain\b|\bundecided\b|\bpending\b|to be (?:determined|confirmed|announced|decided|agreed)|"
    r"\btb[dac]\b|no eta|being (?:worked out|finalised|finalized|decided|determined|planned|assessed|evaluated)|"
    r"under (?:review|discussion|assessment|evaluation)|depends on|depending on|(?:once|when|as soon as) we know|"
    r"(?:don't|do not|cannot|can't|can not)\s+(?:yet\s+)?(?:say|know|tell|confirm|predict|give|provide|estimate)|"
    r"no (?:word|news|estimate)|"
    r"(?:\bno|(?:don't|do not|doesn't|does not) (?:yet )?have (?:a|an|any))\s+(?:\w+\s+){0,2}(?:time|date|eta|estimate|"
    r"timeline|timeframe)\b(?:\s+yet)?|no (?:\w+\s+){0,2}(?:time|date|eta)\s+(?:has\s+been|is)\s+(?:set|fixed|decided|confirmed)|"
    r"let you know|will (?:announce|inform|notify|tell|update) you|"
    # the general shape, for wordings not listed: a denial before a verb of knowing or deciding
    # (暂未确定, 还没有准确消息, 尚不可知, no idea yet, unable to say, yet to be set, once it's been set)
    r"(?:未|没有?|不|难以?|无法|不能)[^,，。]{0,4}(?:确定|决定|定下|知道|可知|清楚|明确|消息|答复|说清)|"
    r"(?:\bno|\bnot|n't|unable to|never)\s+(?:\w+\s+){0,3}?(?:idea|say|tell|know|known|sure|certain|clear|set|decided|"
    r"determined|confirmed|estimate|eta|word|news|timeline)\b|yet to be \w+|"
    r"once (?:it's|it has|it is|it has been) (?:been )?(?:set|decided|confirmed|known|fixed)")
# The restore time said to be fixed already ("恢复时间已经确定", "has already been set").
KNOWN = _rx(r"已经?确定|已定(?!于)|已经定(?!于)|已有安排|(?:has|have)\s+(?:already\s+)?been\s+(?:set|fixed|decided|determined|"
            r"confirmed|scheduled)|is\s+(?:already\s+)?(?:set|fixed|known|confirmed)\b(?!\s+yet)")
# A duration of a reply or of after-effects ("管理员一小时内回复", "维护后三天内较慢") is no restore deadline.
AFTERWARDS_OR_REPLY = _rx(r"^(?:维护|恢复|升级)(?:完成|结束)?后|^after (?:the )?(?:maintenance|work|restore)|^afterwards|"
                          r"回复|答复|响应|\brepl(?:y|ies)\b|\brespond\w*|\banswer\w*")


def _outage_durations(text: str) -> list[str]:
    return [d for sentence in _sentences(text) for clause in _clauses(sentence)
            if not (AFTERWARDS_OR_REPLY.search(clause) or CONTACT.search(clause)) for d in _durations(clause)]


def _unknown_said(text: str) -> tuple[list[str], list[str]]:
    unknown, known = [], []
    for sentence in _sentences(text):
        if not RESTORE.search(sentence):
            continue  # "具体安排尚未确定" says nothing about the restore
        unknown += _hits(UNKNOWN, sentence)
        for clause in _clauses(sentence):
            if not RESTORE.search(clause):
                continue  # "已定于周三晚间维护" fixes the schedule, not the restore
            for m in KNOWN.finditer(clause):
                if not re.search(r"\bno\b|\bnot\b|尚未|还没", clause[:m.start()], re.IGNORECASE):
                    known.append(m.group(0))
    return unknown, known


def check_unknown_restore_time(text: str) -> Verdict:
    unknown, known = _unknown_said(text)
    # A start time (周三晚上8点开始) or the notice's date gives no restore time; only restore moments and how
    # long the outage lasts do. Reading every number as a restore time was a mistake of rules version 1.
    given = [*_restore_moments(text), *_outage_durations(text)]
    if given:
        return Verdict(False, f"gives a time or deadline: {', '.join(dict.fromkeys(given))}")
    if known:
        return Verdict(False, f"says the restore time is already fixed: {known[0]!r}")
    if not unknown:
        return Verdict(False, "does not say the restore time is unknown")
    return Verdict(True, f"says {unknown[0]!r}")


# ==== no_added_promises: no date, clock time, duration, restore moment or commitment =======================

PROMISE = _rx(r"保证|承诺|担保|确保|一定会|一定能|必将|必定|肯定会|绝对|\bguarantee\w*|\bpromise\w*|\bensure\w*|\bassure\w*|"
              r"rest assured|make sure|we commit|committed to|will definitely|will certainly")
# A promise word that is denied ("无法保证", "cannot promise"), addressed to the reader ("请确保") or a purpose
# ("为保证系统正常运行", "to ensure stability") promises nothing.
PROMISE_DENIED = _rx(r"(?:无法|不能|不敢|不|没法|难以|未|并不|不会|cannot|can't|can not|unable to|not|never|please|make|请)"
                     r"\s*(?:\w+\s+)?$|(?:为了?|以便?|in order|\bto)\s*$")
NO_IMPACT = _rx(r"不会(?:对[^,，。]{0,12})?(?:造成)?(?:任何)?影响|不(?:会)?受(?:到)?(?:任何)?影响|不影响|没有(?:任何)?影响|无(?:任何)?影响|"
                r"不会(?:下降|降低|打折扣)|不受损|no (?:\w+\s+)?(?:impact|effect|disruption|interruption)|"
                r"(?:won't|will not|does not|doesn't|shall not)\s+(?:\w+\s+)?(?:affect|disrupt|interrupt|impact)|"
                r"not be affected|\bunaffected\b|(?:not|n't)\s+be\s+compromised|without (?:any )?(?:impact|disruption|interruption)")
# Commitments with no promise word: what the reader is told will (not) happen, beyond the material. Rules
# version 1 passed all of these.
COMMITMENTS = {
    "data safety": _rx(
        r"(?:不会|不会有|绝不会|决不会|都不会|均不会|没有任何)[^,，。]{0,10}(?:丢失|受损|损坏|损失)|安全保存|完整保留|妥善保存|安然无恙|"
        r"万无一失|安全无虞|(?:都会|将|会)[^,，。]{0,4}(?:安全|完好)|完好无损|(?:经过|均已|都已|已|均|都)[^,，。]{0,4}(?:加密|保护)|"
        r"(?:都|全部|均|已经?)[^,，。]{0,4}备份|保持原样|原封不动|(?:都会|均会|将会|将被|都将|均将)[^,，。]{0,4}(?:保留|保存)|"
        r"负责[^,，。]{0,4}(?:找回|恢复|修复|赔偿)|兜底|负责到底|全权负责|"
        r"(?:(?:will|shall)\s+(?:be|remain|stay)|\bare|\bis|remains?|stays?)\s+(?:completely\s+|fully\s+|perfectly\s+|100%\s+)?"
        r"(?:safe|secure|intact|protected)|(?:are|is|will be|remain|stay)\s+(?:\w+\s+)?(?:encrypted|protected)|backed up|"
        r"(?:\bno\b|none of (?:your|the))\s+(?:\w+\s+){0,2}(?:will|shall)\s+be\s+(?:lost|affected|damaged|touched|harmed|deleted)|"
        r"(?:will|shall)\s+(?:go|get)\s+(?:lost|missing)|nothing\s+(?:\w+\s+){0,4}will\s+(?:change|happen)|"
        r"nothing\s+(?:\w+\s+){0,4}will\s+be\s+(?:lost|touched|affected|damaged)|won't\s+be\s+(?:lost|touched|damaged|deleted)|"
        r"(?:\bno|\bnot|n't)\s+(?:\w+\s+){0,3}?(?:data\s+)?loss\b|(?:nobody|no one|none of you)\s+will\s+lose|"
        r"(?:won't|will not)\s+lose|(?:stay|remain)s?\s+(?:exactly\s+)?as (?:it is|they are)|take (?:full )?responsibility"),
    "benefit": _rx(
        r"(?<![不无])(?:将|会)[^,，。]{0,8}(?:提升|提高|加快|更加|更快|更稳定|优化|改善)|新增[^,，。]{0,6}功能|上线[^,，。]{0,4}新功能|"
        r"提升一倍|自动(?:补|上传|恢复|同步)|翻倍|加倍|扩容|"
        r"(?:will|would)\s+(?:be\s+)?(?:\w+\s+){0,4}(?:faster|quicker|improved|more (?:reliable|stable|secure|responsive))|"
        r"will\s+(?:be\s+)?(?:raised|increased|expanded|boosted|improve|increase|get better)|twice as fast|\bdoubled?\b|"
        r"more (?:storage|space)|will make\s+(?:\w+\s+){0,4}(?:more|faster|better)|new features?|added automatically"),
    "compensation": _rx(
        r"补偿|赔偿|顺延|延长截止|免费|全免|免除|减免|赠送|补贴|额外(?:的)?(?:空间|容量|时间|假)|"
        r"compensat\w*|refund\w*|\bcredit\w*|reimburs\w*|waive\w*|free of charge|(?<!file )\bextensions?\b|"
        r"extend\w*\s+(?:\w+\s+)?deadlines?|extra\s+(?:\w+\s+){0,3}(?:storage|space|time|days?)"),
    "support": _rx(
        r"全程值守|专人值守|随时为|随时解答|随时处理|24\s*小时|7\s*[×x*]\s*24|全天候|优先(?:处理|支持|服务)|专属|"
        r"(?:立即|马上|即时|第一时间)(?:处理|响应|解决|回复)|"
        r"(?:handled|answered|resolved|dealt with|fixed)\s+(?:\w+\s+){0,3}?(?:immediately|right away|promptly|at once)|"
        r"on hand|around the clock|24/7|round[- ]the[- ]clock|standing by|at any time|priority support|dedicated support"),
    # Reassurance tells the reader nothing bad will happen.
    "assured outcome": _rx(
        r"(?:将|会)顺利|不必担心|无需担心|不用担心|请(?:大家)?放心|大可放心|"
        r"will (?:run|go) smoothly|without a hitch|rest easy|no need to worry|nothing to worry about|in (?:good|safe) hands"),
}


# One pass over a clause first: most clauses hold no commitment at all.
_ANY_COMMITMENT = _rx("|".join(f"(?:{rx.pattern})" for rx in COMMITMENTS.values()))


def _commitments(text: str) -> list[str]:
    out = []
    for _sentence, clause, _offset in _in_clauses(text):
        for m in PROMISE.finditer(clause):
            if not PROMISE_DENIED.search(clause[max(0, m.start() - 12):m.start()]):
                out.append(f"commitment {m.group(0)!r}")
        if NO_IMPACT.search(clause) and not (READ.search(clause) or UPLOAD.search(clause)):
            # "阅读不受影响", "will not affect reading existing files" restate the material (said of uploads they
            # invert it, which read_only_vs_upload judges); "no impact on your work" is a commitment.
            out.append(f"commitment {NO_IMPACT.search(clause).group(0)!r}")
        if _ANY_COMMITMENT.search(clause):
            for kind, rx in COMMITMENTS.items():
                out += [f"{kind} {h!r}" for h in _hits(rx, clause)]
    return out


def check_no_added_promises(text: str) -> Verdict:
    added = (
        [f"date {h!r}" for h in _dates(text)]
        + [f"time {h!r}" for h in _hits(_CLOCK, text)]
        + [f"duration {h!r}" for h in _durations(text)]
        + [f"restore {h!r}" for h in _restore_moments(text)]
        + _commitments(text)
    )
    if added:
        return Verdict(False, "adds " + ", ".join(dict.fromkeys(added)))
    return Verdict(True, "no date, time, duration, restore moment or commitment found")
