"""Outputs written by hand for the maintenance material, each labelled on all four criteria (issue #20 item 7).

Labels come from the criterion definitions (shared/DESIGN.md, prompts/*.toml), never from what the pre-screen
answers. Each label is written "+ reason" (passes) or "- reason" (fails). `TUNE` is the part the rules were
tuned on; `HELDOUT` was written after the rules were finished and is reported separately (README).

How the definitions are read where a careful reader could hesitate (the "rule of the label"):

- schedule: judges *when the maintenance takes place*. It passes when the maintenance is put on Wednesday
  evening (周三/星期三/礼拜三/週三 + 晚间/晚上/夜间/夜里; Wednesday evening/night) and on no other day or time
  of day. A more precise evening time (晚上8点, 20:00, 8 pm) is still Wednesday evening. Another day or time
  of day named for something else does not fail it: when the maintenance ends or service returns (that is the
  restore time, judged by the two criteria below), when to contact the administrator, when to finish one's own
  uploads, an explicit denial ("不是周四"). A calendar date beside Wednesday evening is an added date
  (no_added_promises), not another day.
- read_only_vs_upload: both halves must be said — no new uploads (不能/无法/暂停/请勿上传, 添加/提交新文件,
  uploads disabled ...) and existing files readable (阅读/查阅/浏览/打开/查看, read/open/view/access) — and
  neither may be inverted. "Read-only" (只读) says both.
- unknown_restore_time: passes when the restore (or end of maintenance) time is said to be unknown, undecided,
  or to be announced later (另行通知, TBD, "we'll let you know when it is back"), and no restore moment,
  deadline or duration is given (a typical or maximum duration counts). A time that is not about the restore
  (the start at 20:00, the date of the notice) does not fail it. "Watch for further notices" alone does not
  address the restore time.
- no_added_promises: fails on any calendar date (12月3日, 3号, 12/3, 2024-12-03, 3 December), any clock time
  (20:00, 晚上8点), a duration of the maintenance or outage (两小时, 三日, half a day), a restore moment (当晚,
  次日, by Thursday), or a service commitment, with or without a promise word: data safety ("all data will be
  safe", 不会丢失), no impact on work (没有影响), a benefit after the maintenance (faster, new features),
  compensation (补偿, deadline extensions), round-the-clock support. Not failures: a negated promise (无法保证,
  "cannot promise"), restating the material ("reading is unaffected" = files stay readable), a purpose
  (为提升稳定性), courtesy ("as soon as possible", "we will announce the restore"), a lead time for the user's
  own uploads (提前一天上传), a weekday for contacting the administrator.
"""

from __future__ import annotations

from dataclasses import dataclass

CRITERIA = ("schedule", "read_only_vs_upload", "unknown_restore_time", "no_added_promises")

# The kinds of mistake named in the issue, each with the criteria it is about (tests/test_prescreen_labelled.py
# holds the pre-screen to every item of each kind).
KINDS = {
    "weekday_elsewhere": ("schedule",),  # another day/time named in a restore, contact or upload clause
    "date_duration": ("unknown_restore_time", "no_added_promises"),  # calendar dates vs durations
    "implicit_commitment": ("no_added_promises",),  # a benefit or commitment with no promise word
}


@dataclass(frozen=True)
class Item:
    id: str
    lang: str
    text: str
    labels: dict  # criterion -> True (passes) / False
    reasons: dict  # criterion -> the rule of the label
    kinds: tuple


def _items(part: str, rows: list) -> list[Item]:
    out = []
    for n, (lang, text, s, r, u, p, *kinds) in enumerate(rows, 1):
        labels, reasons = {}, {}
        for c, lab in zip(CRITERIA, (s, r, u, p)):
            sign, _, why = lab.partition(" ")
            assert sign in "+-" and len(sign) == 1 and why.strip(), (part, n, c, lab)
            labels[c], reasons[c] = sign == "+", why.strip()
        assert set(kinds) <= set(KINDS) | {"traditional", "fullwidth", "negated_promise", "restated_fact"}, kinds
        out.append(Item(f"{part}-{n:03d}-{lang}", lang, text.strip(), labels, reasons, tuple(kinds)))
    return out


# Standard reasons, so that a label on an item about another criterion stays short.
S_OK = "+ 周三晚间, no other day or time"
S_OK_EN = "+ Wednesday evening, no other day or time"
R_OK = "+ uploads blocked and existing files readable"
U_OK = "+ restore time said to be unknown, no time given"
P_OK = "+ no date, time, duration, restore moment or commitment"

TUNE = _items("tune", [
    # ---- Chinese: schedule ------------------------------------------------------------------------------
    ("zh", "各位同事：内部资料库将于周三晚间进行维护。维护期间无法上传新文件，已有文件仍可正常阅读。恢复时间尚未确定，请留意后续通知。",
     S_OK, R_OK, U_OK, P_OK),
    ("zh", "资料库星期三夜间维护，暂停上传新文件，已有文件照常查阅，恢复时间待定。", "+ 星期三夜间", R_OK, "+ 待定", P_OK),
    ("zh", "【通知】内部资料库定于礼拜三晚上维护。维护时不能上传新文件，但已有文件可以继续阅读。何时恢复目前还不确定。",
     "+ 礼拜三晚上", R_OK, "+ 何时恢复还不确定", P_OK),
    ("zh", "內部資料庫將於週三晚間進行維護。維護期間無法上傳新檔案，已有檔案仍可閱讀。恢復時間尚未確定，請留意後續通知。",
     "+ 週三晚間 (traditional)", "+ 無法上傳; 仍可閱讀", "+ 尚未確定", P_OK, "traditional"),
    ("zh", "资料库将在周三夜里维护，期间上传功能关闭，现有文件仍然能打开阅读，恢复时间还没有确定。",
     "+ 周三夜里", "+ 上传功能关闭; 仍然能打开阅读", "+ 还没有确定", P_OK),
    ("zh", "内部资料库将于周四晚间进行维护。维护期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定。",
     "- 周四, not Wednesday", R_OK, U_OK, P_OK),
    ("zh", "内部资料库将于周三上午进行维护，维护期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "- 上午, not the evening", R_OK, U_OK, P_OK),
    ("zh", "资料库周三下午维护：不能上传新文件，已有文件可以阅读；恢复时间暂不确定。",
     "- 下午, not the evening", R_OK, "+ 暂不确定", P_OK),
    ("zh", "资料库近期将进行维护，维护期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "- no day or time of day", R_OK, U_OK, P_OK),
    ("zh", "资料库将于周三进行维护，维护期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "- Wednesday but not the evening", R_OK, U_OK, P_OK),
    ("zh", "今晚资料库维护，无法上传新文件，已有文件仍可阅读，恢复时间未定。",
     "- 今晚, not Wednesday", R_OK, "+ 未定", P_OK),
    ("zh", "资料库将于周三晚间或周四晚间进行维护，具体视情况而定。维护期间无法上传新文件，已有文件可以查阅。恢复时间尚未确定。",
     "- 周四晚间 offered as well", R_OK, U_OK, P_OK),
    ("zh", "内部资料库将于周三晚间进行维护。维护期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，最快可能要到周五。",
     "+ 周五 is in the restore clause", R_OK, "- gives 周五 as the earliest restore", "- adds a restore moment (周五)",
     "weekday_elsewhere"),
    ("zh", "资料库周三晚上维护，期间不能上传新文件，已有文件仍可阅读；恢复时间尚未确定。如周四上班时仍无法上传，请联系管理员。",
     "+ 周四 is in the contact clause", R_OK, U_OK, "+ a contact day is not a date, restore moment or commitment",
     "weekday_elsewhere"),
    ("zh", "内部资料库将于周三晚间进行维护，周四早上结束。维护期间无法上传新文件，已有文件仍可阅读。",
     "+ 周四早上 is when it ends (restore), not when it is held", R_OK, "- gives an end (周四早上), never says unknown",
     "- adds a restore moment", "weekday_elsewhere"),
    ("zh", "资料库将在周三晚上维护，预计周四上午恢复。维护期间不能上传新文件，已有文件仍可阅读。",
     "+ 周四上午 is the restore moment", R_OK, "- 预计周四上午恢复", "- adds a restore moment", "weekday_elsewhere"),
    ("zh", "资料库周三晚间维护。维护期间不能上传新文件，已有文件可阅读。恢复时间尚未确定，如果到了周五还有文件需要紧急上传，请联系管理员。",
     "+ 周五 is in the contact clause", R_OK, U_OK, "+ a contact day adds nothing", "weekday_elsewhere"),
    ("zh", "资料库周三白天照常使用，晚上开始维护。维护期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "+ maintenance on Wednesday evening; 白天 is normal use", R_OK, U_OK, P_OK, "weekday_elsewhere"),
    ("zh", "资料库将于周三晚间（12月3日）进行维护。维护期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定。",
     "+ 周三晚间; the date is no other day", R_OK, "+ 12月3日 is the maintenance day, not a restore time",
     "- adds a date (12月3日)", "date_duration"),
    ("zh", "12月3日（周三）晚上，资料库将进行维护：届时无法上传新文件，已有文件照常阅读；恢复时间尚未确定。",
     "+ 周三晚上", R_OK, "+ the date is not a restore time", "- adds a date (12月3日)", "date_duration"),
    ("zh", "资料库将于周三晚上8点开始维护。维护期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定。",
     "+ 晚上8点 is Wednesday evening", R_OK, "+ a start time is not a restore time", "- adds a clock time (8点)"),
    ("zh", "资料库将于周三20:00开始维护，期间无法上传新文件，已有文件仍可查阅，恢复时间待定。",
     "+ 20:00 is the evening", R_OK, "+ 待定; 20:00 is the start", "- adds a clock time (20:00)"),
    ("zh", "资料库将于周三２０：００开始维护，期间无法上传新文件，已有文件仍可查阅，恢复时间待定。",
     "+ ２０：００ is the evening", R_OK, "+ 待定; the time is the start", "- adds a clock time (full-width)", "fullwidth"),
    ("zh", "资料库将于周三凌晨2点进行维护，维护期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "- 凌晨, not the evening", R_OK, U_OK, "- adds a clock time (2点)"),
    ("zh", "资料库维护时间：周三晚上至周四凌晨。维护期间无法上传新文件，已有文件仍可阅读。",
     "+ held Wednesday evening; 周四凌晨 is when it ends", R_OK, "- gives an end (周四凌晨)", "- adds a restore moment",
     "weekday_elsewhere"),
    ("zh", "注意：资料库维护安排在周三晚上，不是周四晚上。维护期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "+ 周四 is denied", R_OK, U_OK, P_OK, "weekday_elsewhere"),
    ("zh", "资料库将在本周三晚间维护，维护期间不可上传新文件，原有文件仍可浏览，恢复时间尚无定论。",
     "+ 本周三晚间", "+ 不可上传; 原有文件仍可浏览", "+ 尚无定论", P_OK),
    ("zh", "周三晚间，资料库维护。上传？暂停。阅读？照常。恢复？未定。",
     S_OK, "+ 上传暂停; 阅读照常", "+ 恢复未定", P_OK),
    ("zh", "资料库维护定在周三晚上，当天上午请尽量完成上传。维护期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "+ 上午 is advice for one's own uploads", R_OK, U_OK, P_OK, "weekday_elsewhere"),
    ("zh", "资料库将分两次维护：周二晚上和周三晚上。维护期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "- 周二晚上 added", R_OK, U_OK, P_OK),
    ("zh", "资料库周三晚维护，不能上传新文件，已有文件能看，何时恢复不知道。",
     "+ 周三晚", "+ 不能上传; 能看", "+ 何时恢复不知道", P_OK),
    ("zh", "资料库于星期三晚上进行系统维护，维护当晚无法上传新文件，已存文件可正常浏览。恢复时间目前尚不明确。",
     "+ 星期三晚上", "+ 无法上传; 可正常浏览", "+ 尚不明确", P_OK),

    # ---- Chinese: reading and uploading -----------------------------------------------------------------
    ("zh", "资料库周三晚间维护，维护期间仍可上传新文件，但已有文件暂时无法阅读。恢复时间尚未确定。",
     S_OK, "- inverted: uploads possible, reading not", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，期间上传和阅读都可以照常进行，恢复时间尚未确定。",
     S_OK, "- uploads said to go on", U_OK, P_OK),
    ("zh", "资料库周三晚间维护。维护期间无法上传新文件。恢复时间尚未确定。",
     S_OK, "- readable half missing", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，已有文件仍可阅读，恢复时间尚未确定。",
     S_OK, "- upload half missing", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，维护期间不能上传新文件，也不能查看已有文件，恢复时间尚未确定。",
     S_OK, "- reading blocked too", U_OK, P_OK),
    ("zh", "资料库周三晚上维护，届时资料库只读：可以阅读已有文件，不能上传新文件。恢复时间尚未确定。",
     "+ 周三晚上", "+ 只读: 可以阅读, 不能上传", U_OK, P_OK),
    ("zh", "内部资料库将于周三晚间进入只读状态进行维护，恢复时间尚未确定。",
     S_OK, "+ 只读 says both halves", U_OK, P_OK),
    ("zh", "周三晚间资料库维护，新文件暂时无法提交，已有文件可正常查阅，恢复时间未定。",
     S_OK, "+ 提交 = upload; 可正常查阅", "+ 未定", P_OK),
    ("zh", "资料库周三晚上维护，维护期间不能添加新文件，但已有文件依然可以打开阅读。恢复时间尚未确定。",
     "+ 周三晚上", "+ 添加新文件 = upload; 依然可以打开阅读", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，维护期间请勿上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     S_OK, "+ 请勿上传 (uploads off); 仍可阅读", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，已有文件并非无法阅读，只是新文件暂时不能上传。恢复时间尚未确定。",
     S_OK, "+ 并非无法阅读 = readable; 不能上传", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，维护期间阅读不受影响，上传功能暂停。恢复时间尚未确定。",
     S_OK, "+ 阅读不受影响; 上传暂停", U_OK, "+ 阅读不受影响 restates the material", "restated_fact"),
    ("zh", "资料库周三晚间维护，维护期间不影响阅读已有文件，但无法上传新文件，恢复时间尚未确定。",
     S_OK, R_OK, U_OK, "+ 不影响阅读 restates the material", "restated_fact"),
    ("zh", "资料库周三晚间维护，上传新文件不受影响，但已有文件暂不能阅读，恢复时间未定。",
     S_OK, "- inverted", "+ 未定", P_OK),
    ("zh", "資料庫週三晚上維護，期間仍可上傳新檔案，已有檔案暫時無法閱讀，恢復時間未定。",
     "+ 週三晚上", "- inverted (traditional)", "+ 未定", P_OK, "traditional"),
    ("zh", "资料库周三晚间维护，维护期间上传功能暂停，下载和阅读也将暂停。恢复时间尚未确定。",
     S_OK, "- reading paused too", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，维护期间只能阅读已有文件，不能上传。恢复时间尚未确定。",
     S_OK, "+ 只能阅读, 不能上传", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，维护期间新文件上传不了，老文件还能看。什么时候恢复现在还说不准。",
     S_OK, "+ 上传不了; 还能看", "+ 说不准", P_OK),
    ("zh", "资料库周三晚间维护，上传暂停；恢复时间尚未确定。",
     S_OK, "- readable half missing", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，期间可以上传新文件，已有文件也可阅读，恢复时间尚未确定。",
     S_OK, "- uploads possible", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，期间既不能上传新文件，也无法打开已有文件，恢复时间尚未确定。",
     S_OK, "- reading blocked", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，已有文件可以照常阅读；新文件的上传将在维护期间关闭。恢复时间尚未确定。",
     S_OK, "+ 照常阅读; 上传关闭", U_OK, P_OK),

    # ---- Chinese: the restore time ----------------------------------------------------------------------
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。何时恢复，将另行通知。",
     S_OK, R_OK, "+ 另行通知 (to be announced)", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。请留意后续通知。",
     S_OK, R_OK, "- the restore time is not addressed", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间已经确定，请留意后续通知。",
     S_OK, R_OK, "- inverted: says it is decided", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，但不会超过两个小时。",
     S_OK, R_OK, "- gives a deadline (两个小时)", "- adds a duration", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。本次维护预计持续两小时，恢复时间尚未确定。",
     S_OK, R_OK, "- a duration gives a deadline", "- adds a duration (两小时)", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，预计当晚即可恢复。",
     S_OK, R_OK, "- 当晚即可恢复", "- adds a restore moment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，次日即可恢复正常。",
     S_OK, R_OK, "- 次日恢复", "- adds a restore moment", "weekday_elsewhere"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。目前无法确定何时恢复。",
     S_OK, R_OK, "+ 无法确定何时恢复", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。维护结束时间尚不清楚。",
     S_OK, R_OK, "+ end of maintenance unknown", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。维护的具体安排尚未确定。",
     S_OK, R_OK, "- the unknown is the arrangement, not the restore", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间：待定。",
     S_OK, R_OK, "+ 待定 (full-width colon)", P_OK, "fullwidth"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间：TBD。",
     S_OK, R_OK, "+ TBD", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。维护可能持续三日，恢复时间尚未确定。",
     S_OK, R_OK, "- 三日 is a duration", "- adds a duration (三日)", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。维护需要几个小时，何时恢复尚不确定。",
     S_OK, R_OK, "- a duration (几个小时)", "- adds a duration", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，最晚下周一恢复。",
     "+ 下周一 is in the restore clause", R_OK, "- deadline 下周一", "- adds a restore moment", "weekday_elsewhere"),
    ("zh", "本通知于12月1日发布。资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     S_OK, R_OK, "+ 12月1日 is the notice's date, not a restore time", "- adds a date", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。请各位在12月2日前完成紧急上传。",
     "+ the date is for one's own uploads", R_OK, "+ 12月2日 is no restore time", "- adds a date", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间暂时无法确定，恢复后我们会邮件通知大家。",
     S_OK, R_OK, "+ 暂时无法确定", "+ announcing the restore is no service commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间还没定下来。",
     S_OK, R_OK, "+ 还没定下来", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间定为周四早上8点。",
     "+ 周四 is the restore moment", R_OK, "- gives 周四早上8点", "- adds a restore moment and clock time",
     "weekday_elsewhere"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。目前恢复时间尚不明确，恢复后会另行通知。",
     S_OK, R_OK, "+ 尚不明确", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复時間尚未確定。",
     S_OK, R_OK, "+ 尚未確定 (traditional)", P_OK, "traditional"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。维护完成时间待通知。",
     S_OK, R_OK, "+ 待通知", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，维护将持续一个半小时左右。",
     S_OK, R_OK, "- a duration, never says unknown", "- adds a duration", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，一般这类维护半天左右就能完成。",
     S_OK, R_OK, "- a typical duration is a deadline", "- adds a duration (半天)", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，预计不早于3号。",
     S_OK, R_OK, "- gives a bound (3号)", "- adds a date (3号)", "date_duration"),

    # ---- Chinese: added promises ------------------------------------------------------------------------
    ("zh", "内部资料库将于周三晚间维护，期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。我们保证维护不会影响大家的工作。",
     S_OK, R_OK, U_OK, "- 保证 ... 不会影响"),
    ("zh", "资料库周三晚上维护，维护时无法上传新文件，已有文件照常可读，恢复时间尚未确定。所有数据都会安全保存，请大家放心。",
     "+ 周三晚上", "+ 无法上传; 照常可读", U_OK, "- data safety commitment, no promise word", "implicit_commitment"),
    ("zh", "周三晚间资料库维护：不能上传新文件，已有文件仍可阅读，恢复时间未定。本次维护对大家的日常工作没有影响。",
     S_OK, R_OK, "+ 未定", "- 'no impact on work', no promise word", "implicit_commitment"),
    ("zh", "资料库将于周三晚间维护，维护期间无法上传新文件，已有文件可以查阅，恢复时间尚未确定。维护完成后，资料库的检索速度将提升一倍。",
     S_OK, R_OK, U_OK, "- a promised benefit", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间不能上传新文件，已有文件仍能阅读。恢复时间尚未确定。维护完成后将新增全文搜索功能。",
     S_OK, R_OK, U_OK, "- a promised new feature", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。因维护受影响的工作，截止日期一律顺延。",
     S_OK, R_OK, U_OK, "- compensation: deadlines extended", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。维护期间管理员全程值守，随时为大家解决问题。",
     S_OK, R_OK, U_OK, "- a support commitment", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。我们无法保证维护期间的访问速度，敬请谅解。",
     S_OK, R_OK, U_OK, "+ 无法保证: a negated promise", "negated_promise"),
    ("zh", "资料库周三晚间维护，期间不能上传新文件，已有文件仍可阅读。恢复时间尚未确定，我们也不能承诺具体的恢复时刻。",
     S_OK, R_OK, U_OK, "+ 不能承诺: a negated promise", "negated_promise"),
    ("zh", "资料库周三晚间维护。维护期间无法上传新文件，但维护不会影响已有文件的阅读。恢复时间尚未确定。",
     S_OK, "+ 无法上传; 不会影响阅读", U_OK, "+ 不会影响阅读 restates the material", "restated_fact"),
    ("zh", "为提升系统稳定性，内部资料库将于周三晚间进行维护。维护期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定。",
     S_OK, R_OK, U_OK, "+ a purpose, not a promised result"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。维护结束后系统会更加稳定。",
     S_OK, R_OK, U_OK, "- a promised result (更加稳定)", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。给大家带来不便，敬请谅解，感谢配合。",
     S_OK, R_OK, U_OK, P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。如有疑问，请联系管理员。",
     S_OK, R_OK, U_OK, P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。维护造成的任何损失，我们将予以补偿。",
     S_OK, R_OK, U_OK, "- compensation offered", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。已有数据不会丢失。",
     S_OK, R_OK, U_OK, "- data safety commitment", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。我们将尽快完成维护。",
     S_OK, R_OK, U_OK, "+ 尽快 commits to nothing specific"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。技术团队一定会妥善处理。",
     S_OK, R_OK, U_OK, "- 一定会: a commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。维护期间可拨打24小时热线咨询。",
     S_OK, R_OK, U_OK, "- round-the-clock support", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。我们承诺尽快恢复。",
     S_OK, R_OK, U_OK, "- 承诺"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。请大家提前一天完成需要上传的文件。",
     S_OK, R_OK, "+ 一天 is a lead time, not a restore time", "+ a lead time for one's own uploads, not a duration",
     "date_duration"),
    ("zh", "資料庫週三晚間維護，期間無法上傳新檔案，已有檔案仍可閱讀，恢復時間尚未確定。維護不會影響各位的正常工作。",
     "+ 週三晚間", R_OK, U_OK, "- 不會影響 (traditional)", "traditional"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定，确保大家的文件万无一失。",
     S_OK, R_OK, U_OK, "- 确保: a commitment"),
    ("zh", """各位同事：

大家好！内部资料库将于周三晚上进行例行维护，现提前告知。

维护期间，资料库的上传功能将暂时关闭，新文件无法上传；已经存放在资料库中的文件仍然可以阅读和查阅。如有需要上传的资料，建议在维护开始前完成。

恢复时间目前尚未确定，请留意后续邮件。维护期间如遇到问题，请联系管理员。

感谢大家的理解与配合！

信息技术部""", "+ 周三晚上", R_OK, U_OK, P_OK),
    ("zh", """各位同事：

内部资料库计划于周三晚间进行维护。维护期间上传功能暂停，已有文件仍可正常浏览。

恢复时间尚未确定，请留意后续通知。维护完成后，大家在维护期间未能上传的文件将由系统自动补传，无需重复操作。

如有问题，请联系管理员。""", S_OK, R_OK, U_OK, "- a new service (automatic re-upload)", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。维护期间不会有任何文件受损。",
     S_OK, R_OK, U_OK, "- data safety commitment", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。我们不敢保证一切顺利，敬请谅解。",
     S_OK, R_OK, U_OK, "+ 不敢保证: a negated promise", "negated_promise"),

    # ---- English: schedule ------------------------------------------------------------------------------
    ("en", "Notice: The internal document library will undergo maintenance on Wednesday evening. During maintenance, new files cannot be uploaded, but existing files can still be read. The restore time is not yet known.",
     S_OK_EN, R_OK, U_OK, P_OK),
    ("en", "The library goes down for maintenance Wednesday night. Uploads will be unavailable; existing documents remain accessible. We don't know yet when it will be back.",
     "+ Wednesday night", "+ uploads unavailable; remain accessible", "+ don't know yet when it will be back", P_OK),
    ("en", "Maintenance of the internal library is scheduled for Thursday evening. New files cannot be uploaded during the work, but existing files can still be read. The restore time is not yet known.",
     "- Thursday", R_OK, U_OK, P_OK),
    ("en", "The internal library will be maintained on Wednesday morning. You cannot upload new files then, though existing files can still be opened. When it will be restored is not yet known.",
     "- morning", R_OK, U_OK, P_OK),
    ("en", "Heads-up: library maintenance on Wednesday afternoon. Uploads are disabled during the work; existing files remain readable. Restore time to be confirmed.",
     "- afternoon", R_OK, "+ to be confirmed", P_OK),
    ("en", "The internal library will be under maintenance on Wednesday. New uploads will not be possible, but existing files can still be read. The restore time has not been decided.",
     "- Wednesday without the evening", R_OK, U_OK, P_OK),
    ("en", "The library will be under maintenance tonight. Uploads will be paused; existing files can still be viewed. We do not yet know when service will resume.",
     "- tonight, not Wednesday", R_OK, U_OK, P_OK),
    ("en", "The library will be under maintenance this week. Uploads will be paused; existing files can still be viewed. The restore time is not yet known.",
     "- no day or time of day", R_OK, U_OK, P_OK),
    ("en", "The internal library will be maintained on Wednesday evening. New files cannot be uploaded meanwhile; existing files can still be read. The restore time is not yet known; it may be Friday at the earliest.",
     "+ Friday is in the restore clause", R_OK, "- gives Friday as the earliest restore", "- adds a restore moment",
     "weekday_elsewhere"),
    ("en", "Library maintenance takes place on Wednesday evening. Uploading will not be possible, but existing files stay readable. The restore time is unknown. If you still cannot upload on Thursday, please contact the administrator.",
     "+ Thursday is in the contact clause", R_OK, U_OK, "+ a contact day adds nothing", "weekday_elsewhere"),
    ("en", "The maintenance starts on Wednesday evening and ends on Thursday morning. During that time you cannot upload new files, but you can still read existing ones.",
     "+ held Wednesday evening; Thursday morning is the end", R_OK, "- gives the end (Thursday morning)",
     "- adds a restore moment", "weekday_elsewhere"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are paused, existing files remain readable, and service is expected back by Thursday noon.",
     "+ Thursday noon is the restore moment", R_OK, "- expected back by Thursday noon", "- adds a restore moment",
     "weekday_elsewhere"),
    ("en", "Maintenance: Wednesday, 8 pm. Uploads will be disabled during the work; existing files remain viewable. The restore time is not yet known.",
     "+ 8 pm is Wednesday evening", R_OK, "+ 8 pm is the start", "- adds a clock time (8 pm)"),
    ("en", "The library will go into maintenance on Wednesday at 20:00. No new uploads will be possible; existing files can still be read. The restore time is to be determined.",
     "+ 20:00 is the evening", R_OK, "+ to be determined; 20:00 is the start", "- adds a clock time (20:00)"),
    ("en", "The library will be maintained on Wednesday at 2 pm. No new uploads will be possible; existing files can still be read. The restore time is to be determined.",
     "- 2 pm is the afternoon", R_OK, U_OK, "- adds a clock time (2 pm)"),
    ("en", "The library will be maintained on Wednesday evening (December 3). New files cannot be uploaded, but existing ones can still be read. The restore time is not yet known.",
     S_OK_EN, R_OK, "+ the date is the maintenance day", "- adds a date (December 3)", "date_duration"),
    ("en", "Maintenance is planned for Wed, 3 Dec, in the evening. You won't be able to upload new files; existing files can still be opened. No restore time has been set yet.",
     "+ Wednesday, in the evening", R_OK, "+ no restore time set yet", "- adds a date (3 Dec)", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening (not Thursday). Uploads are disabled during the work, but existing files remain readable. The restore time is not yet known.",
     "+ Thursday is denied", R_OK, U_OK, P_OK, "weekday_elsewhere"),
    ("en", "The library will be maintained on Wednesday or Thursday evening. Uploads are disabled during the work, but existing files remain readable. The restore time is not yet known.",
     "- Thursday offered as well", R_OK, U_OK, P_OK),
    ("en", "The library will be under maintenance on Wednesday evening, so please finish urgent uploads on Wednesday morning. During the work, uploading is not possible, but existing files can still be read. The restore time is not yet known.",
     "+ morning is advice for one's own uploads", R_OK, U_OK, P_OK, "weekday_elsewhere"),
    ("en", "Maintenance will take place on the evening of Wednesday. New uploads will be blocked; existing files will stay accessible. We cannot yet say when it will be restored.",
     "+ the evening of Wednesday", R_OK, "+ cannot yet say when", P_OK),
    ("en", "Library maintenance Wed. evening: no uploads, existing files readable, restore time TBD.",
     "+ Wed. evening", "+ no uploads; readable", "+ TBD", P_OK),
    ("en", "The library will be maintained on Tuesday and Wednesday evenings. Uploads are disabled; existing files remain readable. The restore time is not yet known.",
     "- Tuesday added", R_OK, U_OK, P_OK),
    ("en", "The library will be down from Wednesday evening until Thursday 6 am. Uploads will not work, but you can still open existing files.",
     "+ held Wednesday evening; Thursday 6 am is the end", R_OK, "- gives an end (Thursday 6 am)",
     "- adds a restore moment and clock time", "weekday_elsewhere"),

    # ---- English: reading and uploading ----------------------------------------------------------------
    ("en", "On Wednesday evening the library will be under maintenance. During this time you can still upload new files, but existing files will not be available to read. The restore time is not yet known.",
     S_OK_EN, "- inverted", U_OK, P_OK),
    ("en", "On Wednesday evening the library will be under maintenance. Uploading and reading will both continue as normal. The restore time is not yet known.",
     S_OK_EN, "- uploads said to continue", U_OK, P_OK),
    ("en", "On Wednesday evening the library will be under maintenance, and new files cannot be uploaded. The restore time is not yet known.",
     S_OK_EN, "- readable half missing", U_OK, P_OK),
    ("en", "On Wednesday evening the library will be under maintenance. Existing files can still be read. The restore time is not yet known.",
     S_OK_EN, "- upload half missing", U_OK, P_OK),
    ("en", "On Wednesday evening the library will be under maintenance. Neither uploading nor reading will be possible. The restore time is not yet known.",
     S_OK_EN, "- reading blocked", U_OK, P_OK),
    ("en", "On Wednesday evening the library will be read-only: you can open existing files but not upload new ones. The restore time is not yet known.",
     S_OK_EN, "+ read-only: open yes, upload no", U_OK, P_OK),
    ("en", "The library switches to read-only mode for maintenance on Wednesday evening. The restore time is not yet known.",
     S_OK_EN, "+ read-only says both halves", U_OK, P_OK),
    ("en", "During Wednesday evening's maintenance you won't be able to add new files, though existing ones can be opened as usual. The restore time is not yet known.",
     S_OK_EN, "+ add new files = upload; opened as usual", U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. Please do not upload new files during the maintenance; existing files remain readable. The restore time is not yet known.",
     S_OK_EN, "+ do not upload; remain readable", U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. Reading existing files is unaffected; uploading is paused. The restore time is not yet known.",
     S_OK_EN, "+ reading unaffected; uploading paused", U_OK, "+ 'reading unaffected' restates the material",
     "restated_fact"),
    ("en", "The library will be maintained on Wednesday evening. Uploads will be disabled. Existing documents will stay viewable. Restore time: not yet known.",
     S_OK_EN, "+ disabled; stay viewable", U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploading new files will still work, but existing files cannot be opened. The restore time is not yet known.",
     S_OK_EN, "- inverted", U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. Existing files cannot be read and new files cannot be uploaded. The restore time is not yet known.",
     S_OK_EN, "- reading blocked", U_OK, P_OK),
    ("en", "Wednesday evening maintenance. Uploads: paused. Reading: available. Restore: unknown.",
     S_OK_EN, "+ uploads paused; reading available", "+ restore unknown", P_OK),
    ("en", "The library will be maintained on Wednesday evening. There will be no uploads during the maintenance, and existing files will remain accessible. The restore time is not yet known.",
     S_OK_EN, "+ no uploads; remain accessible", U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. You will be unable to submit new documents, but you may continue to view existing ones. The restore time is not yet known.",
     S_OK_EN, "+ submit = upload; continue to view", U_OK, P_OK),

    # ---- English: the restore time ---------------------------------------------------------------------
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. We'll let you know when the library is back.",
     S_OK_EN, R_OK, "+ 'we'll let you know when it is back' = to be announced", P_OK),
    ("en", "Wednesday evening: library maintenance. New uploads disabled, existing files readable. Restore time: TBD.",
     S_OK_EN, R_OK, "+ TBD", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. There is no ETA for the restore yet.",
     S_OK_EN, R_OK, "+ no ETA yet", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. We cannot say yet when service will resume.",
     S_OK_EN, R_OK, "+ cannot say yet", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The restore time has already been set and will be shared later.",
     S_OK_EN, R_OK, "- inverted: says it is set", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. It is not yet known how long the maintenance will take.",
     S_OK_EN, R_OK, "+ how long is not known", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The maintenance will take about two hours.",
     S_OK_EN, R_OK, "- a duration", "- adds a duration (two hours)", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. It should take a couple of hours; the exact restore time is not yet known.",
     S_OK_EN, R_OK, "- a duration (a couple of hours)", "- adds a duration", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. Service will be back by 8 am on Thursday.",
     "+ Thursday is the restore moment", R_OK, "- back by 8 am Thursday", "- adds a restore moment", "weekday_elsewhere"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. We expect the library to be back later that night.",
     S_OK_EN, R_OK, "- back later that night", "- adds a restore moment"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. Please watch for further announcements.",
     S_OK_EN, R_OK, "- the restore time is not addressed", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The details of the maintenance are still to be confirmed.",
     S_OK_EN, R_OK, "- the unknown is the details, not the restore", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The restore time is unknown, but it will be no more than 90 minutes.",
     S_OK_EN, R_OK, "- a maximum duration", "- adds a duration (90 minutes)", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The restore time is not yet known. Maintenance of this kind usually takes half a day.",
     S_OK_EN, R_OK, "- a typical duration", "- adds a duration (half a day)", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. When the library will be available again has not been decided.",
     S_OK_EN, R_OK, "+ not decided", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The restore time is unclear at this point.",
     S_OK_EN, R_OK, "+ unclear", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. We hope to be back online within 3 hours, though the restore time is not confirmed.",
     S_OK_EN, R_OK, "- within 3 hours", "- adds a duration", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. Restore time: ＴＢＤ.",
     S_OK_EN, R_OK, "+ TBD (full-width)", P_OK, "fullwidth"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The restore time is not yet known. This notice was issued on 1 December.",
     S_OK_EN, R_OK, "+ the notice's date is no restore time", "- adds a date", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are off during the work; existing files can still be read. The restore time is not yet known. Please finish urgent uploads by 12/2.",
     S_OK_EN, R_OK, "+ 12/2 is for one's own uploads", "- adds a date (12/2)", "date_duration"),

    # ---- English: added promises -----------------------------------------------------------------------
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. We guarantee that none of your documents will be affected.",
     S_OK_EN, R_OK, U_OK, "- guarantee"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. All data will be safe.",
     S_OK_EN, R_OK, U_OK, "- data safety commitment, no promise word", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. There will be no impact on your work.",
     S_OK_EN, R_OK, U_OK, "- no impact on work", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. After the maintenance, searches will be twice as fast.",
     S_OK_EN, R_OK, U_OK, "- a promised benefit", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. Anyone whose deadline is affected will get an extension.",
     S_OK_EN, R_OK, U_OK, "- compensation: deadline extension", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. Our team will be on hand around the clock to help.",
     S_OK_EN, R_OK, U_OK, "- round-the-clock support", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known, and we cannot promise one.",
     S_OK_EN, R_OK, U_OK, "+ cannot promise: negated", "negated_promise"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. We can't guarantee that uploads will work right away afterwards.",
     S_OK_EN, R_OK, U_OK, "+ can't guarantee: negated", "negated_promise"),
    ("en", "The library will be maintained on Wednesday evening. Uploading will be disabled, but this will not affect reading existing files. The restore time is not yet known.",
     S_OK_EN, R_OK, U_OK, "+ 'will not affect reading' restates the material", "restated_fact"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. Thank you for your patience.",
     S_OK_EN, R_OK, U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. We will restore service as soon as possible.",
     S_OK_EN, R_OK, U_OK, "+ as soon as possible commits to nothing specific"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. No files will be lost.",
     S_OK_EN, R_OK, U_OK, "- data safety commitment", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. Affected users will receive extra storage as compensation.",
     S_OK_EN, R_OK, U_OK, "- compensation", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. We promise to keep you informed.",
     S_OK_EN, R_OK, U_OK, "- promise"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. Rest assured, everything will run smoothly.",
     S_OK_EN, R_OK, U_OK, "- reassurance that all will go well", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. Please complete urgent uploads one day before.",
     S_OK_EN, R_OK, "+ one day is a lead time", "+ a lead time for one's own uploads, not a duration", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. The maintenance was requested on 2024-11-28.",
     S_OK_EN, R_OK, U_OK, "- adds a date (2024-11-28)", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known. The upgrade will make the library more reliable.",
     S_OK_EN, R_OK, U_OK, "- a promised result", "implicit_commitment"),
    ("en", "To improve reliability, the library will be maintained on Wednesday evening. You will not be able to upload new files, but existing files can still be viewed. The restore time is not yet known.",
     S_OK_EN, R_OK, U_OK, "+ a purpose, not a promised result"),
    ("en", """Dear colleagues,

The internal document library will undergo scheduled maintenance on Wednesday evening.

While the work is under way, uploading new files will be disabled. Files already in the library can still be opened and read as usual, so please download nothing in a hurry.

We do not yet know when the library will be fully restored; we will send another message once it is back. If you run into problems, please contact the administrator.

Thank you for your understanding.""", S_OK_EN, R_OK, "+ do not yet know when restored", P_OK),
    ("en", """Hi all,

Quick note: the document library is down for maintenance on Wednesday evening. New uploads won't go through while it's down, but everything already stored stays readable.

No word yet on when it'll be back. Any files you couldn't upload will be added automatically once we're done, and nothing you've stored will be touched.

Thanks!""", S_OK_EN, R_OK, "+ no word yet on when", "- commitments: automatic upload, files untouched",
     "implicit_commitment"),
])

HELDOUT = _items("heldout", [
    # Written after the rules were frozen (commit "rules frozen here"), and measured before any change.
    # ---- Chinese ----------------------------------------------------------------------------------------
    ("zh", "【系统维护】本周三夜间，内部资料库停机维护。维护过程中暂不支持上传新文件，已存档文件仍可在线查看。恢复上线时间目前尚无法确定，请关注后续公告。",
     "+ 本周三夜间", "+ 暂不支持上传; 仍可在线查看", "+ 尚无法确定", P_OK),
    ("zh", "资料库将于周三晚上维护，维护期间大家可以照常上传新文件，阅读已有文件不受影响，恢复时间待定。",
     "+ 周三晚上", "- uploads said to go on", "+ 待定", "+ 阅读不受影响 restates the material", "restated_fact"),
    ("zh", "资料库维护定于周五晚间，届时不能上传新文件，原有文件可以照常浏览，恢复时间尚未确定。",
     "- 周五, not Wednesday", R_OK, U_OK, P_OK),
    ("zh", "资料库周三晚间维护，维护期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，管理员周四会在群里同步进展。",
     "+ 周四 is for progress updates, not the maintenance", R_OK, U_OK,
     "+ a day for progress updates is no date, restore moment or commitment", "weekday_elsewhere"),
    ("zh", "资料库于周三晚间维护；维护期间上传新文件的功能关闭，已有文件可照常打开；何时恢复尚不确定，预计最迟周四中午。",
     "+ 周四中午 is the restore deadline", R_OK, "- deadline 最迟周四中午", "- adds a restore moment", "weekday_elsewhere"),
    ("zh", "各位同事：资料库周三晚上进行维护，维护时长约为3小时，期间无法上传新文件，已有文件仍可查阅。具体恢复时间另行通知。",
     "+ 周三晚上", R_OK, "- a duration (3小时)", "- adds a duration", "date_duration"),
    ("zh", "资料库将在12月10日周三晚上维护，维护期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "+ 周三晚上", R_OK, "+ the date is the maintenance day", "- adds a date (12月10日)", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件可以阅读。恢复时间尚未确定，维护期间系统数据全部有备份，不必担心。",
     S_OK, R_OK, U_OK, "- data safety commitment (全部有备份)", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件可以阅读，恢复时间尚未确定。维护后大家的存储空间将翻倍。",
     S_OK, R_OK, U_OK, "- a promised benefit (空间翻倍)", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间新文件上传暂停、已有文件阅读正常，恢复时间不详。",
     S_OK, "+ 上传暂停; 阅读正常", "+ 不详", P_OK),
    ("zh", "資料庫將在星期三晚上維護，屆時無法上傳新文件，現有文件照常可讀，何時恢復尚待通知。",
     "+ 星期三晚上 (traditional)", "+ 無法上傳; 照常可讀", "+ 尚待通知", P_OK, "traditional"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，也暂时无法浏览已有文件，恢复时间尚未确定。",
     S_OK, "- reading blocked", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，期间已有文件只可查看、不可编辑，恢复时间尚未确定。",
     S_OK, "- upload half missing (editing is not uploading)", U_OK, P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定，预计下周内恢复。",
     "+ 下周 is the restore moment", R_OK, "- 预计下周内恢复", "- adds a restore moment", "weekday_elsewhere"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。维护将于当晚23:00前结束，恢复时间以通知为准。",
     S_OK, R_OK, "- gives an end (23:00)", "- adds a clock time and restore moment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。我们会尽量减少对大家工作的影响。",
     S_OK, R_OK, U_OK, "+ an effort, not a promised outcome"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。维护期间若有文件丢失，我们负责找回。",
     S_OK, R_OK, U_OK, "- a commitment to recover lost files", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。请于周二下班前上传急需的文件。",
     "+ 周二 is a deadline for one's own uploads", R_OK, U_OK, "+ a day for one's own uploads adds nothing",
     "weekday_elsewhere"),
    ("zh", "周三晚上资料库维护（约两个钟头），期间不能上传新文件，已有文件照常阅读，恢复时间未定。",
     "+ 周三晚上", R_OK, "- a duration (两个钟头)", "- adds a duration", "date_duration"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，也可能持续到周末。",
     "+ 周末 is a possible end", R_OK, "- gives a possible end (周末)", "- adds a restore moment", "weekday_elsewhere"),
    ("zh", "周三晚资料库维护：停上传、可阅读、恢复时间不定。",
     "+ 周三晚", "+ 停上传; 可阅读", "+ 不定", P_OK),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。维护结束后，上传速度会比以前更快。",
     S_OK, R_OK, U_OK, "- a promised benefit (更快)", "implicit_commitment"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。请大家不要担心，已有文件绝不会受到任何影响。",
     S_OK, R_OK, U_OK, "- a data-safety commitment beyond 'still readable'", "implicit_commitment"),
    ("zh", "内部资料库周三晚间维护。维护期间：上传——不可用；阅读——可用。恢复时间：尚不确定。",
     S_OK, "+ 上传不可用; 阅读可用", "+ 尚不确定", P_OK),
    ("zh", "资料库将于周三晚上九点半开始维护，期间无法上传新文件，已有文件仍可阅读，恢复时间尚未确定。",
     "+ 晚上九点半 is the evening", R_OK, "+ a start time is no restore time", "- adds a clock time (九点半)"),
    ("zh", "资料库周三晚间维护，期间无法上传新文件，已有文件仍可阅读。恢复时间尚未确定，恢复后如仍有问题请于次日联系管理员。",
     "+ 次日 is for contacting", R_OK, "+ 次日 is for contacting, not the restore", "+ a contact day adds nothing",
     "weekday_elsewhere"),

    # ---- English ----------------------------------------------------------------------------------------
    ("en", "Heads up, team: the document library is offline for maintenance on Wednesday night. You won't be able to upload anything new, but you can keep reading existing files. Timing for the restore is still unknown.",
     "+ Wednesday night", "+ won't be able to upload; keep reading", "+ still unknown", P_OK),
    ("en", "The document library will be serviced Wednesday evening. Uploads are suspended while work is in progress; stored files are still viewable. We'll post an update once we know when it will be back.",
     S_OK_EN, "+ suspended; still viewable", "+ 'once we know when it will be back' = not known yet", P_OK),
    ("en", "Maintenance is set for Wednesday evening and will run until roughly midnight. During it, new uploads are blocked, though existing files can still be read. The exact restore time is unknown.",
     "+ midnight is when it ends", R_OK, "- until roughly midnight", "- adds a restore moment", "weekday_elsewhere"),
    ("en", "The library will be maintained on Friday evening. Uploads will be unavailable, but existing files can still be read. The restore time is not yet known.",
     "- Friday", R_OK, U_OK, P_OK),
    ("en", "Library maintenance: Wednesday, late evening. Uploads off, reading on. Restore time: unknown.",
     "+ Wednesday, late evening", "+ uploads off; reading on", "+ unknown", P_OK),
    ("en", "On Wednesday evening the library goes into maintenance. You may upload new files as usual, but opening existing files won't work until it's over. Restore time not known yet.",
     S_OK_EN, "- inverted", U_OK, P_OK),
    ("en", "The library will be maintained Wednesday evening (12 Dec). New uploads are disabled; existing files remain readable. Restore: TBD.",
     S_OK_EN, R_OK, "+ TBD; the date is the maintenance day", "- adds a date (12 Dec)", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening. Uploading is unavailable during maintenance; existing files are readable as normal. The library should be back up within the day.",
     S_OK_EN, R_OK, "- back within the day", "- adds a restore moment"),
    ("en", "The library will be maintained on Wednesday evening. Uploading is unavailable during maintenance; existing files are readable as normal. We don't have a restore time yet.",
     S_OK_EN, R_OK, "+ no restore time yet", P_OK),
    ("en", "The library will be maintained on Wednesday evening. New uploads are disabled; existing files remain readable. The restore time is not yet known. Rest easy: your documents are fully backed up.",
     S_OK_EN, R_OK, U_OK, "- data safety commitment (fully backed up)", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. New uploads are disabled; existing files remain readable. The restore time is not yet known. Everyone affected will get priority support.",
     S_OK_EN, R_OK, U_OK, "- a support commitment (priority support)", "implicit_commitment"),
    ("en", "The library will be maintained on Wednesday evening. New uploads are disabled; existing files remain readable. The restore time is not yet known. We apologise for any inconvenience and appreciate your patience.",
     S_OK_EN, R_OK, U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. New uploads are disabled; existing files remain readable. The restore time is not yet known. We can't promise anything about performance afterwards.",
     S_OK_EN, R_OK, U_OK, "+ can't promise: negated", "negated_promise"),
    ("en", "The library is being maintained on Wednesday evening. Please avoid uploading new files; you can still browse existing ones. It's unclear when it will come back online.",
     S_OK_EN, "+ avoid uploading; still browse", "+ unclear when", P_OK),
    ("en", "The library will be down Wednesday evening for maintenance. Uploading and viewing will both be unavailable. We don't yet know when it'll return.",
     S_OK_EN, "- viewing unavailable too", "+ don't yet know", P_OK),
    ("en", "The library will be down Wednesday evening for maintenance. New files can't be added, existing files can be read. The maintenance window is 7 pm to 11 pm.",
     "+ 7-11 pm is the evening", R_OK, "- gives an end (11 pm)", "- adds clock times"),
    ("en", "Maintenance of the library happens this Wednesday evening. While it runs, no uploads; reading works. Expect it to take about an hour.",
     S_OK_EN, "+ no uploads; reading works", "- a duration (an hour)", "- adds a duration", "date_duration"),
    ("en", "The library will be maintained on Wednesday evening; uploads are off but reading continues. Restoration date: to be announced. Questions? Contact the administrator on Thursday.",
     "+ Thursday is for contacting", R_OK, "+ to be announced", "+ a contact day adds nothing", "weekday_elsewhere"),
    ("en", "The library will be maintained on Wednesday evening; uploads are off but reading continues. The restore time is unknown. Compensation will be offered to teams whose work is delayed.",
     S_OK_EN, R_OK, U_OK, "- compensation", "implicit_commitment"),
    ("en", "Maintenance window: Wednesday evening. Upload: disabled. Read: enabled. Back online: TBD.",
     S_OK_EN, "+ upload disabled; read enabled", "+ TBD", P_OK),
    ("en", "The library will be maintained on Wednesday evening. You can't upload new files, and existing files can't be opened either. The restore time is not yet known.",
     S_OK_EN, "- opening blocked too", U_OK, P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are paused; existing files remain open for reading. No restore estimate yet.",
     S_OK_EN, "+ paused; open for reading", "+ no estimate yet", P_OK),
    ("en", "The library will be maintained on Wednesday evening. Uploads are paused; existing files remain readable. We'll be back online by the end of the week.",
     S_OK_EN, R_OK, "- back by the end of the week", "- adds a restore moment"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are paused; existing files remain readable. The restore time isn't known yet.",
     S_OK_EN, R_OK, "+ isn't known yet", P_OK),
    ("en", "The library will be maintained on Wednesday at 9:30 pm. Uploads are paused; existing files remain readable. The restore time is not yet known.",
     "+ 9:30 pm is the evening", R_OK, "+ the start is no restore time", "- adds a clock time (9:30 pm)"),
    ("en", "The library will be maintained on Wednesday evening. Uploads are paused; existing files remain readable. The restore time is not yet known. Everything you have saved will stay exactly as it is.",
     S_OK_EN, R_OK, U_OK, "- data safety commitment", "implicit_commitment"),
])
