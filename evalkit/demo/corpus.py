"""The training corpus of the offline demo pair: templated writing samples, generated from a seed.

Every sample is `prompt.plain_text() + output + "</s>"`, the exact frame the models see at run time.
Half the samples use the bundled material (the five bundled prompt shapes); the other half use
varied material (other systems, days, times of day, features, known or unknown restore time), so
the target learns to *compose* an answer from the material instead of replaying one string. Each
output is assembled from many phrase templates and synonyms, so sampling at temperature 0.7 gives
different, still on-task texts. About one bundled output in eight deliberately breaks a fidelity
criterion (an added restore time, a promise, another day, an inverted function): raters must see
failures sometimes, or the fidelity checks measure nothing.

Pure Python, no heavy imports: `generate_corpus(seed, n)` is fast and deterministic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..task.prompts import PLAIN_TEMPLATE, Prompt

EOS = "</s>"

# --------------------------------------------------------------------------- material slots

DAYS_ZH = ["一", "二", "三", "四", "五", "六", "日"]
DAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

# time of day: material form, output forms (zh), English forms
TIMES = {
    "evening": ("晚间", ["晚间", "晚上", "夜间"], ["evening", "night"]),
    "morning": ("上午", ["上午"], ["morning"]),
    "afternoon": ("下午", ["下午"], ["afternoon"]),
    "dawn": ("凌晨", ["凌晨"], ["early morning"]),
    "noon": ("中午", ["中午", "午间"], ["midday"]),
}

# system: zh name, short zh name (clumsy drafts), English name
SYSTEMS = [
    ("内部资料库", "资料库", "internal document library"),
    ("项目文档库", "文档库", "project document library"),
    ("共享网盘", "网盘", "shared drive"),
    ("知识库", "知识库", "knowledge base"),
    ("报销系统", "报销系统", "expense system"),
    ("代码仓库", "仓库", "code repository"),
    ("客户管理系统", "客户系统", "customer management system"),
    ("邮件归档系统", "归档系统", "mail archive"),
    ("考勤系统", "考勤系统", "attendance system"),
    ("合同管理平台", "合同平台", "contract platform"),
]


@dataclass(frozen=True)
class Feature:
    material: str  # as written in the material
    zh: tuple[str, ...]  # output paraphrases
    short: tuple[str, ...]  # compact forms (summary)
    clumsy: str  # as a clumsy draft says it
    en: tuple[str, ...]


UNAVAILABLE = [
    Feature(
        "不能上传新文件",
        ("暂停上传新文件", "无法上传新文件", "上传功能将暂时关闭", "不能上传新文件", "新文件的上传功能暂停使用"),
        ("暂停上传", "无法上传新文件", "上传功能关闭", "不能上传"),
        "上传不了",
        ("new files cannot be uploaded", "uploading new files is not possible", "uploads are paused"),
    ),
    Feature(
        "不能编辑文档",
        ("暂停编辑文档", "无法编辑文档", "编辑功能将暂时关闭", "不能修改文档"),
        ("暂停编辑", "无法编辑", "编辑功能关闭"),
        "改不了文档",
        ("documents cannot be edited", "editing is not possible", "editing is paused"),
    ),
    Feature(
        "不能提交新的申请",
        ("暂停提交新的申请", "无法提交新的申请", "提交功能将暂时关闭", "不能提交新申请"),
        ("暂停提交", "无法提交申请", "提交功能关闭"),
        "交不了申请",
        ("new requests cannot be submitted", "submitting requests is not possible", "submissions are paused"),
    ),
    Feature(
        "不能同步文件",
        ("暂停同步文件", "无法同步文件", "同步功能将暂时关闭", "不能同步文件"),
        ("暂停同步", "无法同步", "同步功能关闭"),
        "同步不了",
        ("files cannot be synced", "syncing is not possible", "syncing is paused"),
    ),
    Feature(
        "不能发表评论",
        ("暂停发表评论", "无法发表评论", "评论功能将暂时关闭", "不能发表新的评论"),
        ("暂停评论", "无法评论", "评论功能关闭"),
        "评论发不了",
        ("comments cannot be posted", "posting comments is not possible", "comments are paused"),
    ),
]

AVAILABLE = [
    Feature(
        "已有文件仍可阅读",
        ("已有文件仍可阅读", "已有文件可以照常查阅", "已有文件仍然可以浏览", "现有文件仍可正常阅读", "已经上传的文件依然可以查看"),
        ("已有文件仍可阅读", "已有文件照常查阅", "已有文件可以浏览"),
        "文件能看",
        ("existing files can still be read", "existing files remain readable", "you can still open and read existing files"),
    ),
    Feature(
        "仍可搜索文档",
        ("仍可搜索文档", "搜索功能照常可用", "依然可以检索文档", "文档搜索不受限制"),
        ("仍可搜索", "搜索照常可用", "可以检索文档"),
        "能搜",
        ("search still works", "documents can still be searched", "you can still search for documents"),
    ),
    Feature(
        "已有文件仍可下载",
        ("已有文件仍可下载", "已有文件可以照常下载", "现有文件依然可以下载"),
        ("已有文件仍可下载", "可以照常下载"),
        "能下载",
        ("existing files can still be downloaded", "downloads still work"),
    ),
    Feature(
        "历史记录仍可查看",
        ("历史记录仍可查看", "历史记录可以照常查阅", "以往的记录依然可以浏览"),
        ("历史记录仍可查看", "记录照常查阅"),
        "记录能看",
        ("past records can still be viewed", "history remains viewable"),
    ),
]

UNKNOWN_RESTORE_MATERIAL = ["恢复时间尚未确定", "恢复时间待定", "何时恢复尚不确定"]
UNKNOWN_RESTORE_ZH = ["恢复时间尚未确定", "恢复时间待定", "何时恢复还不确定", "具体恢复时间目前还无法确定", "恢复时间暂时还没有确定"]
UNKNOWN_RESTORE_SHORT = ["恢复时间待定", "恢复时间尚未确定", "何时恢复还不确定"]
UNKNOWN_RESTORE_EN = [
    "The restore time is not yet known",
    "We do not yet know when the service will be restored",
    "It is not yet clear when the service will be back",
]


@dataclass(frozen=True)
class Material:
    system: tuple[str, str, str]
    day: int
    time: str
    unavailable: Feature
    available: Feature
    restore_known: str  # "" = unknown restore time; else e.g. "周四上午"
    restore_known_en: str
    text: str


BUNDLED_MATERIAL = "内部资料库将在周三晚间维护；维护期间不能上传新文件，已有文件仍可阅读；恢复时间尚未确定。"


def bundled_material() -> Material:
    return Material(SYSTEMS[0], 2, "evening", UNAVAILABLE[0], AVAILABLE[0], "", "", BUNDLED_MATERIAL)


def random_material(rng: random.Random) -> Material:
    system = rng.choice(SYSTEMS)
    day = rng.randrange(7)
    time = rng.choice(list(TIMES))
    unav = rng.choice(UNAVAILABLE)
    av = rng.choice(AVAILABLE)
    known = rng.random() < 0.35
    restore, restore_en = "", ""
    if known:
        d2 = (day + 1) % 7
        t2 = rng.choice(["上午", "中午", "下午"])
        restore = f"周{DAYS_ZH[d2]}{t2}"
        restore_en = f"{DAYS_EN[d2]} {dict(上午='morning', 中午='midday', 下午='afternoon')[t2]}"
    verb = rng.choice(["将在", "将于", "计划在", "定于"])
    tail = f"预计{restore}恢复" if known else rng.choice(UNKNOWN_RESTORE_MATERIAL)
    text = f"{system[0]}{verb}周{DAYS_ZH[day]}{TIMES[time][0]}维护；维护期间{unav.material}，{av.material}；{tail}。"
    return Material(system, day, time, unav, av, restore, restore_en, text)


# --------------------------------------------------------------------------- tasks

NO_ADD = "不得补充具体日期、恢复时刻或服务承诺。"


def task_text(rng: random.Random, shape: str, m: Material, bundled: dict[str, Prompt]) -> str:
    """The bundled task wording most of the time (for the bundled material always), else a paraphrase."""
    if shape in bundled and (m.text == BUNDLED_MATERIAL or rng.random() < 0.6):
        task = bundled[shape].task
        if shape == "rewrite" and m.text != BUNDLED_MATERIAL:
            task = task.replace(_bundled_clumsy(bundled[shape].task), clumsy_draft(rng, m))
        return task
    if shape == "notice":
        return rng.choice([
            "写一则约 150 字的中文通知，说明维护安排、可用功能和未知事项。" + NO_ADD,
            "请根据资料写一则约 150 字的维护通知。" + NO_ADD,
            "写一则中文通知，依次说明维护安排、可用功能和未知事项。",
        ])
    if shape == "summary":
        return rng.choice([
            "用一句话概括这次维护。" + NO_ADD,
            "用一句话（不超过 50 字）概括这次维护。",
            "请用一句话说明维护时间、可用功能和未知事项。",
        ])
    if shape == "rewrite":
        return f"下面是一份生硬的草稿：“{clumsy_draft(rng, m)}”请把它改写成通顺、礼貌的中文通知，约 100 字，保留全部事实。" + NO_ADD
    if shape == "email":
        return rng.choice([
            "写一封约 400 字的中文邮件正文，发给全体同事，说明维护安排、可用与不可用的功能、恢复时间以及联系方式（只写“请联系管理员”）。" + NO_ADD,
            "写一封发给全体同事的中文邮件正文，约 400 字，说明这次维护。遇到问题请联系管理员。",
        ])
    return rng.choice([
        "Write a short notice in English for all staff about this maintenance. Do not add a specific date, a restore time or any service promise.",
        "Write an English notice of about 80 words for all staff, covering the schedule, what still works, and what is not yet known.",
    ])


def _bundled_clumsy(task: str) -> str:
    a, b = task.find("“"), task.find("”")
    return task[a + 1 : b] if 0 <= a < b else ""


def clumsy_draft(rng: random.Random, m: Material) -> str:
    when = f"周{DAYS_ZH[m.day]}{rng.choice(TIMES[m.time][1])}"
    restore = f"{m.restore_known}能好。" if m.restore_known else "什么时候好不知道。"
    return f"{when}{m.system[1]}要维护。那时候{m.unavailable.clumsy}。{m.available.clumsy}。{restore}"


# --------------------------------------------------------------------------- outputs


class _Writer:
    """Composes one output for one material; `slip` injects one realistic fidelity failure."""

    def __init__(self, rng: random.Random, m: Material, slip: str = ""):
        self.r, self.m, self.slip = rng, m, slip
        day = m.day
        if slip == "other_day":
            day = (day + rng.choice([1, 2, 6])) % 7
        self.day = day

    # -- zh slots
    def when(self) -> str:
        r, m = self.r, self.m
        d = f"{r.choice(['周', '周', '星期'])}{DAYS_ZH[self.day]}"
        t = r.choice(TIMES[m.time][1])
        if self.slip == "other_time":
            t = r.choice(["上午", "下午"]) if m.time == "evening" else "晚间"
        return d + t

    def system(self) -> str:
        return self.m.system[0]

    def unav(self) -> str:
        if self.slip == "inverted":
            return self.r.choice(["已有文件暂时无法阅读", "暂停查阅已有文件"])
        return self.r.choice(self.m.unavailable.zh)

    def av(self) -> str:
        if self.slip == "inverted":
            return self.r.choice(["仍可上传新文件", "上传功能照常可用"])
        return self.r.choice(self.m.available.zh)

    def restore(self) -> str:
        r, m = self.r, self.m
        if self.slip == "restore_time":
            d2 = DAYS_ZH[(m.day + 1) % 7]
            return r.choice([f"预计周{d2}上午恢复", f"预计周{d2}早上八点前恢复", "预计两小时后即可恢复"])
        if m.restore_known:
            return r.choice([f"预计{m.restore_known}恢复", f"预计将于{m.restore_known}恢复使用"])
        return r.choice(UNKNOWN_RESTORE_ZH)

    def promise(self) -> str:
        if self.slip == "promise":
            return self.r.choice(["我们保证不影响大家的正常使用。", "我们承诺维护当晚即可恢复。", "本次维护不会影响日常工作。"])
        return ""

    # -- shapes
    def notice(self) -> str:
        r = self.r
        title = r.choice(["通知\n", "【维护通知】\n", f"关于{self.system()}维护的通知\n", ""])
        greet = r.choice(["各位同事：\n", "各位同事，大家好：\n", "大家好：\n"])
        s1 = r.choice([
            f"{self.system()}将于{self.when()}进行维护。",
            f"{self.system()}计划在{self.when()}进行系统维护。",
            f"为提升服务质量，{self.system()}将在{self.when()}进行维护。",
            f"因系统维护需要，{self.system()}定于{self.when()}进行维护。",
        ])
        s2 = r.choice([
            f"维护期间，{self.unav()}，但{self.av()}。",
            f"在此期间{self.unav()}；{self.av()}。",
            f"维护进行时{self.unav()}，不过{self.av()}。",
        ])
        s3 = r.choice([
            f"目前{self.restore()}，恢复后我们会另行通知。",
            f"{self.restore()}，请大家留意后续通知。",
            f"需要说明的是，{self.restore()}，我们将及时告知最新进展。",
        ])
        s4 = r.choice([
            "请大家提前做好工作安排，如有疑问请联系管理员。",
            "请大家提前安排好需要上传的工作。给大家带来的不便，敬请谅解。",
            "给大家带来的不便，敬请谅解，感谢大家的理解与配合。",
            "请大家合理安排工作，感谢理解与支持。",
        ])
        s2b = r.choice([
            "请大家在维护开始前保存好手头的工作。",
            "如有急需处理的内容，建议提前完成。",
            "维护期间的其他安排不变。",
        ])
        sign = r.choice(["\n信息技术部", "\n系统管理组", ""])
        return f"{title}{greet}{s1}{s2}{s2b}{self.promise()}{s3}{s4}{sign}"

    def summary(self) -> str:
        r = self.r
        unav = r.choice(self.m.unavailable.short) if self.slip != "inverted" else self.unav()
        av = r.choice(self.m.available.short) if self.slip != "inverted" else self.av()
        rest = self.restore() if (self.slip or self.m.restore_known) else r.choice(UNKNOWN_RESTORE_SHORT)
        extra = "，保证不影响使用" if self.slip == "promise" else ""
        return r.choice([
            f"{self.system()}将于{self.when()}维护，期间{unav}，{av}，{rest}{extra}。",
            f"{self.when()}{self.system()}维护期间{unav}、{av}，{rest}{extra}。",
            f"{self.system()}{self.when()}维护，{unav}但{av}，{rest}{extra}。",
        ])

    def rewrite(self) -> str:
        r = self.r
        greet = r.choice(["各位同事：\n", "各位同事，大家好！\n", "大家好：\n", ""])
        s1 = r.choice([
            f"{self.system()}将于{self.when()}进行维护。",
            f"{self.when()}，{self.system()}将进行维护。",
            f"我们计划在{self.when()}对{self.system()}进行维护。",
        ])
        s2 = r.choice([
            f"维护期间{self.unav()}，{self.av()}。",
            f"届时{self.unav()}，但{self.av()}。",
        ])
        s3 = r.choice([
            f"目前{self.restore()}，请留意后续通知。",
            f"{self.restore()}，恢复后会第一时间通知大家。",
        ])
        s4 = r.choice(["给您带来的不便，敬请谅解。", "感谢大家的理解与配合！", "不便之处，敬请谅解。"])
        return f"{greet}{s1}{s2}{self.promise()}{s3}{s4}"

    def email(self) -> str:
        r = self.r
        subj = r.choice([f"主题：关于{self.system()}维护的通知\n\n", f"主题：{self.system()}维护安排\n\n", ""])
        greet = r.choice(["各位同事：\n\n", "各位同事，大家好！\n\n", "全体同事：\n\n"])
        p1 = r.choice([
            f"为了保障系统稳定运行，{self.system()}将于{self.when()}进行例行维护。",
            f"为提升系统性能和安全性，我们计划在{self.when()}对{self.system()}进行维护。",
            f"现通知大家，{self.system()}定于{self.when()}进行系统维护。",
        ]) + r.choice([
            "维护工作将由技术团队统一进行，届时部分功能会受到限制。",
            "维护期间系统仍会保持部分服务，具体情况说明如下。",
            "请大家了解维护期间的使用安排。",
        ])
        p2 = r.choice([
            f"维护期间，{self.unav()}。",
            f"在维护进行时，{self.unav()}，请不要在此期间尝试相关操作。",
        ]) + r.choice([
            f"不过，{self.av()}，大家可以照常查阅需要的资料。",
            f"同时，{self.av()}，日常查阅不受限制。",
            f"但{self.av()}，如需查阅资料可正常访问。",
        ]) + r.choice([
            "如果有需要上传或修改的内容，建议在维护开始前完成。",
            "建议大家提前保存好手头的工作，避免遗漏。",
            "请大家提前规划好相关工作。",
        ])
        p3 = r.choice([
            f"关于恢复时间，{self.restore()}。",
            f"需要特别说明的是，{self.restore()}。",
            f"目前{self.restore()}。",
        ]) + r.choice([
            "维护完成后，我们会第一时间通过邮件通知大家。",
            "我们会在系统恢复后另行通知，请大家留意邮件。",
            "一旦有新的进展，我们会及时告知各位。",
        ])
        p3b = r.choice([
            "在恢复之前，请大家暂时不要重复尝试受影响的操作，以免产生重复记录或出现错误提示。",
            "在正式恢复之前，如看到错误提示属于正常现象，请耐心等待，不必重复提交。",
            "恢复之前请以后续通知为准，不要轻信其他渠道的消息。",
        ])
        p4 = r.choice([
            "如在维护期间或维护结束后遇到任何问题，请联系管理员。",
            "如有疑问或遇到使用问题，请联系管理员。",
            "若发现异常情况，请联系管理员协助处理。",
        ])
        p5 = r.choice([
            "给大家的工作带来的不便，我们深表歉意，感谢大家的理解与支持！",
            "感谢大家的理解与配合！",
            "由此带来的不便，敬请谅解。谢谢大家的支持与配合！",
        ])
        sign = r.choice(["\n\n信息技术部", "\n\n系统管理组", "\n\n此致\n敬礼"])
        return f"{subj}{greet}{p1}\n\n{p2}\n\n{self.promise()}{p3}{p3b}\n\n{p4}{p5}{sign}"

    # -- English
    def english(self) -> str:
        r, m = self.r, self.m
        name = m.system[2]
        tod = r.choice(TIMES[m.time][2])
        if self.slip == "other_time":
            tod = "morning" if m.time == "evening" else "evening"
        when = f"on {DAYS_EN[self.day]} {tod}"
        unav = r.choice(m.unavailable.en)
        av = r.choice(m.available.en)
        if self.slip == "inverted":
            unav, av = "existing files cannot be opened", "uploads still work"
        if self.slip == "restore_time":
            rest = f"Service is expected to resume on {DAYS_EN[(m.day + 1) % 7]} morning"
        elif m.restore_known:
            rest = f"Service is expected to resume on {m.restore_known_en}"
        else:
            rest = r.choice(UNKNOWN_RESTORE_EN)
        title = r.choice(["Maintenance Notice\n\n", f"Notice: {name[0].upper() + name[1:]} maintenance\n\n", ""])
        greet = r.choice(["Dear colleagues,\n", "Dear all,\n", "Hello everyone,\n"])
        s1 = r.choice([
            f"The {name} will undergo maintenance {when}.",
            f"We will carry out maintenance on the {name} {when}.",
            f"Please note that the {name} is scheduled for maintenance {when}.",
        ])
        s2 = r.choice([
            f" During the maintenance, {unav}, but {av}.",
            f" While the work is in progress, {unav}; however, {av}.",
        ])
        promise = " We guarantee that your work will not be affected." if self.slip == "promise" else ""
        s3 = r.choice([
            f" {rest}, and we will let you know once it is back.",
            f" {rest}. We will send another notice when the work is finished.",
        ])
        s4 = r.choice([
            " Thank you for your understanding.",
            " We apologise for the inconvenience and thank you for your patience.",
            " If you have questions, please contact the administrator.",
        ])
        sign = r.choice(["\n\nIT Department", "\n\nSystem Administration", ""])
        return f"{title}{greet}{s1}{s2}{promise}{s3}{s4}{sign}"


SHAPES = ("notice", "summary", "rewrite", "email", "english")
SLIPS = ("restore_time", "promise", "other_day", "other_time", "inverted")
SLIP_WEIGHTS = (4, 4, 2, 1, 1)
# Share of bundled-material outputs that break one fidelity criterion.
SLIP_RATE = 0.12
# Share of samples that use the bundled material (the rest vary it).
BUNDLED_SHARE = 0.5


@dataclass(frozen=True)
class Sample:
    prompt_text: str  # plain_text() frame: what the model is given
    output: str  # what it should write (without the end marker)
    shape: str
    bundled: bool
    slip: str  # "" or the fidelity failure injected

    @property
    def text(self) -> str:
        return self.prompt_text + self.output + EOS


def _bundled_prompts() -> dict[str, Prompt]:
    from ..locations import bundled
    from ..task.prompts import load_prompts

    try:
        prompts = load_prompts(bundled("prompts"))
    except Exception:  # the corpus still works without the prompt files (then uses its own task wording)
        return {}
    return {p.shape: p for p in prompts if p.shape in SHAPES and p.material == BUNDLED_MATERIAL}


def generate_corpus(seed: int, n: int, shape_weights: dict[str, float] | None = None) -> list[Sample]:
    """`n` samples, deterministic for a given seed (and the bundled prompt files)."""
    rng = random.Random(seed)
    bundled = _bundled_prompts()
    weights = shape_weights or {"notice": 1.0, "summary": 1.0, "rewrite": 1.0, "email": 1.0, "english": 1.0}
    shapes = list(weights)
    ws = [weights[s] for s in shapes]
    out = []
    for _ in range(n):
        shape = rng.choices(shapes, ws)[0]
        is_bundled = rng.random() < BUNDLED_SHARE
        m = bundled_material() if is_bundled else random_material(rng)
        slip = ""
        if is_bundled and rng.random() < SLIP_RATE:
            slip = rng.choices(SLIPS, SLIP_WEIGHTS)[0]
        task = task_text(rng, shape, m, bundled)
        prompt_text = PLAIN_TEMPLATE.format(material=m.text, task=task)
        output = getattr(_Writer(rng, m, slip), shape)()
        out.append(Sample(prompt_text, output, shape, is_bundled, slip))
    return out
