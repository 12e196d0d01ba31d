"""Every word the Rate tab shows, in Chinese and English. The rater's language switch picks one; nothing else
in the UI writes a label of its own. Criterion questions come from the prompt files (Prompt.criteria)."""

from __future__ import annotations

LANGUAGES = (("中文", "zh"), ("English", "en"))

WORDS: dict[str, dict[str, str]] = {
    "keys": {
        "zh": "键盘：**1** 通过 · **2** 不通过 · **3** 不确定（随后跳到下一题）· **A** / **B** / **T** 偏好 A、B、持平 · "
              "**Enter** 提交 · **N** 下一对 · **Esc** 回到第一题",
        "en": "Keys: **1** pass · **2** fail · **3** unsure (then on to the next question) · **A** / **B** / **T** "
              "prefer A, B, tie · **Enter** submit · **N** next pair · **Esc** back to the first question",
    },
    "signin_help": {"zh": "请输入组织者发给你的个人代码（或打开邀请链接）。", "en": "Sign in with the personal code (or link) "
                                                                      "from the study organiser."},
    "signin_help_open": {"zh": "请输入组织者发给你的个人代码，或填写一个新名字。", "en": "Sign in with your personal code, "
                                                                           "or pick a new name."},
    "new_name": {"zh": "新名字", "en": "New name"},
    "passcode": {"zh": "口令", "en": "Passcode"},
    "code": {"zh": "个人代码", "en": "Personal code"},
    "sign_in": {"zh": "登录", "en": "Sign in"},
    "sign_out": {"zh": "退出", "en": "Sign out"},
    "guidelines": {"zh": "评分指南", "en": "Guidelines"},
    "output": {"zh": "输出 {side}", "en": "Output {side}"},
    "pass": {"zh": "通过", "en": "pass"},
    "fail": {"zh": "不通过", "en": "fail"},
    "unsure": {"zh": "不确定", "en": "unsure"},
    "preference": {"zh": "偏好：你更愿意发出哪一则？", "en": "Preference: which would you rather send?"},
    "tie": {"zh": "持平", "en": "tie"},
    "comment": {"zh": "备注（可选）", "en": "Comment (optional)"},
    "submit": {"zh": "提交", "en": "Submit"},
    "save_correction": {"zh": "保存修改", "en": "Save correction"},
    "correct": {"zh": "修改", "en": "Correct"},
    "next": {"zh": "下一对", "en": "Next pair"},
    "skip_box": {"zh": "跳过这一对", "en": "Skip this pair"},
    "skip_reason": {"zh": "跳过原因", "en": "Why skip?"},
    "skip_info": {"zh": "输出有错请评“不通过”，不要跳过；只在完全无法判断时跳过。",
                  "en": "A bad output is a fail, not a skip: skip only a pair you cannot judge at all."},
    "skip": {"zh": "跳过", "en": "Skip"},
    "material": {"zh": "资料", "en": "Material"},
    "task": {"zh": "任务", "en": "Task"},
    "signed_in": {"zh": "已登录：**{name}**{role} · 进度 **{done} / {total}**",
                  "en": "Signed in as **{name}**{role} · progress **{done} / {total}**"},
    "organiser": {"zh": "（组织者）", "en": " (organiser)"},
    "organiser_rating": {"zh": "（组织者：在评分期间查看结果后，你之后的评分只作记录、不计分）",
                         "en": " (organiser: once you open Results while you still rate, your later ratings are "
                               "kept but not counted)"},
    "organiser_uncounted": {"zh": "（组织者：你已查看结果，你在本研究中的评分只作记录、不计分）",
                            "en": " (organiser: you have seen the results, so your ratings in this study are kept but "
                                  "not counted)"},
    "results_seen": {"zh": "**你的评分不再计分。** 你在仍可评分的时候查看了结果，而其中包含你可能还会评到的评分对"
                           "（他人的评分，或没有基准测试时评分对池自身的计时）：按路径的汇总可能透露它们哪一边是哪条路径。"
                           "你在本研究中此后的评分只作记录，不计入结论。",
                     "en": "**Your ratings no longer count.** You are seeing the results while they cover pairs you could "
                           "still be served (others' ratings of them, or, without a benchmark, the pool's own timings "
                           "of them), and per-path tables can tell which side of such a pair is which: the ratings you "
                           "give in this study from now on are kept, not counted."},
    "welcome": {"zh": "欢迎，{name}。你的个人代码是 `{code}`：本浏览器会记住它；请记下，以便在其他设备上继续。",
                "en": "Welcome, {name}. Your personal code is `{code}`: this browser remembers it; note it down to "
                      "continue on another device."},
    "stored": {"zh": "评分已保存。", "en": "Rating stored."},
    "stored_uncounted": {"zh": "已保存，只作记录、不计分：你在评分期间查看过结果。",
                         "en": "Stored, kept but not counted: you have seen the results while rating."},
    "correcting_uncounted": {"zh": "修改答案后按**保存修改**。你已查看过结果，修改只作记录，不计分。",
                             "en": "Change your answers, then press **Save correction**. You have seen the results, so "
                                   "the correction is kept but not counted."},
    "correction_stored": {"zh": "修改已保存，但这是揭晓后的修改：只作记录，计分仍以揭晓前的评分为准。",
                          "en": "Correction stored as made after the reveal: it is kept for the organisers, and your "
                                "blind rating is the one that counts."},
    "correcting": {"zh": "修改答案后按**保存修改**。你已看过揭晓，修改只作记录，不改变计分。",
                   "en": "Change your answers, then press **Save correction**. You have seen the reveal, so the "
                         "correction is kept as a note: your blind rating still counts."},
    "correction_counts": {"zh": "修改已保存：这一对尚未揭晓，修改后的评分计入。",
                          "en": "Correction stored: this pair is not revealed yet, so the corrected rating counts."},
    "correcting_blind": {"zh": "修改答案后按**保存修改**。这一对尚未揭晓，修改会计入。",
                         "en": "Change your answers, then press **Save correction**. This pair is not revealed yet, so "
                               "the correction counts."},
    "skipped": {"zh": "已跳过，原因已保存。", "en": "Skipped; the reason is stored."},
    "pair_taken": {"zh": "其他评分者在你作答期间已评完这一对，你的答案未保存。请按**下一对**继续。",
                   "en": "Other raters finished this pair while you were working; your answers were not stored. "
                         "Press **Next pair** for another pair."},
    "rated_elsewhere": {"zh": "你已在另一个窗口评过这一对：保存的是那里的评分，这里的答案未保存。按**修改**查看并修改已保存的评分，"
                              "或按**下一对**继续。",
                        "en": "You already rated this pair in another tab: that rating is stored, not the answers here. "
                              "Press **Correct** to see and change it, or **Next pair** to go on."},
    "skipped_elsewhere": {"zh": "你已在另一个窗口跳过这一对，这里的答案未保存。请按**下一对**继续。",
                          "en": "You skipped this pair in another tab; the answers here were not stored. Press **Next "
                                "pair** to go on."},
    "held_by_others": {"zh": "**还有 {left} 对需要评分，但此刻都在其他评分者的屏幕上。** 他们提交或跳过后，最迟 {minutes} "
                             "分钟后，这些对会重新开放：请过几分钟再按**再看看**。",
                       "en": "**{left} pair(s) still need ratings, but right now each is on another rater's screen.** "
                             "A pair comes back when its rater submits or skips it, or after {minutes} minutes at most: "
                             "press **Check again** in a few minutes."},
    "check_again": {"zh": "再看看", "en": "Check again"},
    "answered": {"zh": "已答 {n} / {total}", "en": "{n} / {total} answered"},
    "done": {"zh": "**你的评分任务已全部完成，谢谢！**", "en": "**No pairs left for you.** Thank you!"},
    "all_identical": {"zh": "**这一批的每一对输出都完全相同：无需评分即可判定，没有需要你评的内容。**",
                      "en": "**Every pair in this pool has two identical outputs:** they are decided without raters, "
                            "so there is nothing to rate."},
    "share_done": {"zh": "**你已完成本次研究分配给你的 {share} 条评分，谢谢！**",
                   "en": "**You have given your share of {share} ratings in this study.** Thank you!"},
    "signed_out": {"zh": "已退出。", "en": "Signed out."},
    "invite_invalid": {"zh": "邀请链接无效。", "en": "That invitation link is not valid."},
    "invite_wait": {"zh": "此网络地址登录失败次数过多，邀请链接暂时不能使用：请 {seconds} 秒后重新打开链接。",
                    "en": "Too many failed sign-ins from this address: open the invitation link again in {seconds} s."},
    "preparing": {"zh": "正在准备评分数据", "en": "Preparing the pairs to rate"},
}


def word(key: str, lang: str, **fmt) -> str:
    text = WORDS[key]["zh" if lang == "zh" else "en"]
    return text.format(**fmt) if fmt else text


def value_choices(lang: str) -> list[tuple[str, str]]:
    """pass / fail / unsure with the key that answers each (1 / 2 / 3)."""
    return [(f"{word(v, lang)} ({i})", v) for i, v in enumerate(("pass", "fail", "unsure"), 1)]


def preference_choices(lang: str) -> list[tuple[str, str]]:
    return [(f"{word('output', lang, side='A')} (A)", "A"), (f"{word('output', lang, side='B')} (B)", "B"),
            (f"{word('tie', lang)} (T)", "tie")]
