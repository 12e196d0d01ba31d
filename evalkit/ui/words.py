"""Every word the Rate tab shows (its reveal too), in Chinese and English. The rater's language switch picks one; nothing else
in the UI writes a label of its own. Criterion questions come from the prompt files (Prompt.criteria). The library's
refusals are written in English (the CLI's language); ERRORS_ZH gives a Chinese rater the ones she can meet."""

from __future__ import annotations

import math
import re

LANGUAGES = (("中文", "zh"), ("English", "en"))

WORDS: dict[str, dict[str, str]] = {
    "keys": {
        "zh": "键盘：**1** 通过 · **2** 不通过 · **3** 不确定（随后跳到下一题）· **A** / **B** / **T** 偏好 A、B、持平 · "
              "**Enter** 提交 · **N** 下一对（或“再看看”）· **Esc** 回到第一题",
        "en": "Keys: **1** pass · **2** fail · **3** unsure (then on to the next question) · **A** / **B** / **T** "
              "prefer A, B, tie · **Enter** submit · **N** next pair (or Check again) · **Esc** back to the first question",
    },
    # WCAG 2.1 SC 2.1.4: single-character shortcuts can be turned off (speech input types letters as words)
    "keys_switch": {"zh": "单键快捷键", "en": "Single-key shortcuts"},
    # on a phone, where the keys' line is hidden: what the switch is for, said on it
    "keys_switch_phone": {"zh": "键盘单键快捷键（使用语音输入时请关闭）",
                          "en": "Single-key keyboard shortcuts (turn off for speech input)"},
    "signin_help": {"zh": "请输入组织者发给你的个人代码（或打开邀请链接）。", "en": "Sign in with the personal code (or link) "
                                                                      "from the study organiser."},
    "signin_help_open": {"zh": "请输入组织者发给你的个人代码，或填写一个新名字。", "en": "Sign in with your personal code, "
                                                                           "or pick a new name."},
    "new_name": {"zh": "新名字", "en": "New name"},
    "passcode": {"zh": "口令", "en": "Passcode"},
    "code": {"zh": "个人代码", "en": "Personal code"},
    "sign_in": {"zh": "登录", "en": "Sign in"},
    "sign_out": {"zh": "退出", "en": "Sign out"},
    "my_code": {"zh": "我的代码", "en": "My code"},
    "your_code": {"zh": "你的个人代码是 `{code}`：在其他设备上登录时输入它。请勿告诉他人：有了它就能以你的名义评分。",
                  "en": "Your personal code is `{code}`: type it to sign in on another device. Keep it to yourself: "
                        "it rates in your name."},
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
    "signed_in": {"zh": "已登录：**{name}**{role} · 进度 **{done} / {total}**{skipped}",
                  "en": "Signed in as **{name}**{role} · progress **{done} / {total}**{skipped}"},
    "progress_skipped": {"zh": "（其中跳过 {n} 对）", "en": " ({n} of them skipped)"},
    "organiser": {"zh": "（组织者）", "en": " (organiser)"},
    "organiser_rating": {"zh": "（组织者：在评分期间查看结果后，你之后的评分只作记录、不计分）",
                         "en": " (organiser: once you open Results while you still rate, your later ratings are "
                               "kept but not counted)"},
    "organiser_uncounted": {"zh": "（组织者：你已查看结果，你在本研究中的评分只作记录、不计分）",
                            "en": " (organiser: you have seen the results, so your ratings in this study are kept but "
                                  "not counted)"},
    "space_open": {"zh": "**⚠️ 任何 Hugging Face 账号都可以在此评分，且其评分计入结论。** 配置中没有允许名单"
                         "（app.allowed_raters / app.allowed_orgs）。除非本 Space 是私有的或设置了 hf_oauth_authorized_org，"
                         "请在配置中列出你的评分者。",
                   "en": "**⚠️ Any Hugging Face account may rate here, and its ratings count.** The config has no "
                         "allow-list (app.allowed_raters / app.allowed_orgs): unless this Space is private or sets "
                         "hf_oauth_authorized_org, list your raters in the config."},
    "sync_failing": {"zh": "**⚠️ 数据库未能同步到 Hub。** 向数据集 {repo} 的推送已连续失败 {n} 次（{error}）。"
                           "自 {since}（最后一次成功推送）起存下的评分只在本 Space 的磁盘上，重启会丢失它们。请检查 HF_TOKEN 的写权限和该数据集，"
                           "修好之前不要重启 Space。",
                     "en": "**⚠️ The database is not reaching the Hub.** Pushes to the dataset {repo} have failed {n} "
                           "time(s) in a row ({error}). Ratings stored since {since} (the last push that went "
                           "through) are only on this Space's disk, and a restart loses them: check HF_TOKEN's write access and the dataset, and do not "
                           "restart the Space until a push goes through."},
    "sync_held": {"zh": "**⚠️ 数据库暂停同步到 Hub。** 自本应用上次恢复或推送以来，有人{how}了数据集 {repo} 中的数据库；"
                        "应用不会覆盖它，因此暂停推送（本应用的评分仍在本 Space 的磁盘上，自 {since} 起未推送）。"
                        "要保留本应用的评分：在该数据集的历史中把这个文件恢复为本应用最后一次提交的版本，推送会自动恢复。"
                        "要改用数据集中的那份数据库：重启 Space（有持久存储时先删除磁盘上的数据库），自 {since} 起存下的评分会丢失。",
                  "en": "**⚠️ The database's pushes to the Hub are held.** Someone {how} the database in the dataset {repo} "
                        "since this app last restored or pushed it; the app does not overwrite it, so it holds its "
                        "pushes (its own ratings are on this Space's disk, not pushed since {since}). To keep this "
                        "app's ratings: restore the file in the dataset's history to this app's last commit, and "
                        "the pushes resume by themselves. To serve the dataset's database instead: restart the Space "
                        "(with persistent storage, delete the database on its disk first); the ratings stored since "
                        "{since} are then lost."},
    # the queue goes on serving a rater the gold check leaves out while her accuracy may recover (study.gold.clearly_below)
    "gold_left_out_served": {"zh": "他们仍会被分到评分对，直到检验对上的回答表明其准确率明显低于阈值（至少评过 3 个检验对，且准确率的 Wilson 95% 区间上限低于阈值），"
                                   "之后不再分配，其页面会说明原因。在此之前评分照常存下，但在准确率回到阈值以上之前不计分，他们评满的评分对随即关闭："
                                   "在此期间这些评分对没有计分的评分（由评分池的备用对补上）。要立即停止给他们分配，请撤销其访问"
                                   "（`evalkit raters revoke 名字`；在 Space 上把他们从 app.allowed_raters 中去掉）。",
                             "en": "They are still served pairs until their answers on check pairs put them clearly "
                                   "below it (at least 3 check pairs rated, and the upper end of a Wilson 95% interval "
                                   "on their accuracy under the bar), "
                                   "then no more, and their screen says why. Until then their ratings are stored and "
                                   "do not count while they stay below it, and a pair one of them fills is closed all "
                                   "the same, left meanwhile without a counted rating (the pool's reserve stands in "
                                   "for it). To stop serving them at once, revoke their access (`evalkit raters revoke "
                                   "NAME`; on a Space, take them off app.allowed_raters)."},
    "sync_off_disk": {"zh": "**⚠️ 数据库未同步到 Hub（EVALKIT_SYNC_REPO=off），且位于本 Space 自身的磁盘上：重启或重建会清除所有评分。** "
                            "请把 EVALKIT_SYNC_REPO 设为一个私有数据集，或挂载持久存储并设置 EVALKIT_DATA_DIR=/data。",
                      "en": "**⚠️ The database is not synced to the Hub (EVALKIT_SYNC_REPO=off) and lies on this Space's own "
                            "disk: a restart or a rebuild wipes every rating.** Set EVALKIT_SYNC_REPO to a private dataset "
                            "repo, or attach persistent storage and set EVALKIT_DATA_DIR=/data."},
    "sync_rival": {"zh": "**⚠️ 另一个应用也在同步数据集 {repo}。** 自 {since} 起，另一个应用（复制的 Space、第二个副本）在本应用之后"
                         "以同一数据集启动：两者各自保存各自评分者的评分，只有一个能推送，另一个的评分只留在它的磁盘上。"
                         "请只保留一个在运行，并把其他 Space 的 EVALKIT_SYNC_REPO 设为各自的数据集。",
                   "en": "**⚠️ Another app syncs with the dataset {repo} too.** Since {since} another app (a duplicated "
                         "Space, a second replica) has started on the same dataset after this one: each stores its own "
                         "raters' ratings and only one of them can push, the other's ratings staying on its disk. Keep "
                         "one of them running, and set each other Space's EVALKIT_SYNC_REPO to a dataset of its own."},
    "sync_foreign": {"zh": "**⚠️ 数据库暂停同步到 Hub。** 本 Space 磁盘上的数据库从未推送过（之前以 EVALKIT_SYNC_REPO=off 运行，或手动放入），"
                           "而数据集 {repo} 中已有另一份 evalkit.db；应用不会覆盖它。要推送本 Space 的数据库：从该数据集中删除 evalkit.db"
                           "（其历史会保留它），推送会自动恢复。要改用数据集中的那份：删除磁盘上的数据库及其 .sync.json 后重启。",
                     "en": "**⚠️ The database's pushes to the Hub are held.** The database on this Space's disk was never "
                           "pushed (served before with EVALKIT_SYNC_REPO=off, or copied there), and the dataset {repo} "
                           "holds another evalkit.db, which the app does not overwrite. To push this Space's database: "
                           "remove evalkit.db from the dataset (its history keeps it), and the pushes resume by "
                           "themselves. To serve the dataset's database instead: delete the database on the Space's "
                           "disk (with its .sync.json) and restart."},
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
    "correction_stored": {"zh": "修改已保存，但这一对已结束评分：修改只作记录，计分仍以你的盲评为准。",
                          "en": "Correction stored as made after the pair closed: it is kept for the organisers, and "
                                "your blind rating is the one that counts."},
    # said for every closed pair, also one whose reveal still waits for open copies of its texts (queue.open_copies)
    "correcting": {"zh": "修改答案后按**保存修改**。这一对已结束评分（揭晓已可查看或即将揭晓），修改只作记录，不改变计分。",
                   "en": "Change your answers, then press **Save correction**. This pair is closed to ratings (its "
                         "reveal is shown, or soon will be), so the correction is kept as a note: your blind rating "
                         "still counts."},
    "correction_counts": {"zh": "修改已保存：这一对尚未揭晓，修改后的评分计入。",
                          "en": "Correction stored: this pair is not revealed yet, so the corrected rating counts."},
    "correcting_blind": {"zh": "修改答案后按**保存修改**。这一对尚未揭晓，修改会计入。",
                         "en": "Change your answers, then press **Save correction**. This pair is not revealed yet, so "
                               "the correction counts."},
    "skipped": {"zh": "已跳过，原因已保存。", "en": "Skipped; the reason is stored."},
    "pair_taken": {"zh": "其他评分者在你作答期间已评完这一对，你的答案未保存。请按**下一对**继续。",
                   "en": "Other raters finished this pair while you were working; your answers were not stored. "
                         "Press **Next pair** for another pair."},
    "pair_taken_skip": {"zh": "其他评分者在你作答期间已评完这一对，这次跳过未保存。",
                        "en": "Other raters finished this pair while you were working; your skip was not stored."},
    "study_decided_pair": {"zh": "你作答期间，本研究已在一次预定的查看中得出结论：不再需要评分，你的答案未保存。谢谢！",
                           "en": "The study reached its decision at one of its planned looks while you were working on "
                                 "this pair: no more ratings are needed, and your answers were not stored. Thank you!"},
    "study_decided_skip": {"zh": "你作答期间，本研究已在一次预定的查看中得出结论：不再需要评分，这次跳过未保存。谢谢！",
                           "en": "The study reached its decision at one of its planned looks while you were working on "
                                 "this pair: no more ratings are needed, and your skip was not stored. Thank you!"},
    "rated_elsewhere": {"zh": "你已在另一个窗口评过这一对：保存的是那里的评分，这里的答案未保存。按**修改**查看并修改已保存的评分，"
                              "或按**下一对**继续。",
                        "en": "You already rated this pair in another tab: that rating is stored, not the answers here. "
                              "Press **Correct** to see and change it, or **Next pair** to go on."},
    "text_met": {"zh": "这一对含有你评过的一对中的文本：那一对的揭晓可能已告诉你这一对的两侧，所以它不再交给你评分，你的答案未保存。"
                        "请按**下一对**继续。",
                 "en": "This pair holds a text of a pair you rated: that pair's reveal may tell this one's sides, so it "
                       "is not yours to rate; your answers were not stored. Press **Next pair** to go on."},
    "hold_displaced": {"zh": "这一对已交给另一位评分者：你有一对留到了占用上限却未评分，此后 {hours:g} 小时内你占用的评分对不为你保留，"
                             "这一对已发给一位占用有效的评分者。你的答案未保存。请按**下一对**继续。",
                       "en": "This pair went to another rater: you kept a pair to the hold's cap and left it unrated, so "
                             "for {hours:g} hours the pairs you hold are not kept for you, and this one was served to a "
                             "rater whose hold counts. Your answers were not stored. Press **Next pair** to go on."},
    "skipped_elsewhere": {"zh": "你已在另一个窗口跳过这一对，这里的答案未保存。请按**下一对**继续。",
                          "en": "You skipped this pair in another tab; the answers here were not stored. Press **Next "
                                "pair** to go on."},
    "long_hold": {"zh": "**⚠️ 有评分对被长时间占用。** {who} 靠页面续占把一对留了约 {hours:g} 小时仍未评完。结论只按队列顺序从头连续评满的"
                        "评分对计算，被占住的一对会挡住其后的所有评分对；因此续占最多维持 {hours:g} 小时，之后该对回到队列，交给其他评分者，"
                        "不再发给此人。如果此人并未在评分，请撤销其访问：{remedy}",
                  "en": "**⚠️ A pair is held for a long time.** {who} kept a pair on screen for about {hours:g} hours "
                        "by signs of work without rating it. The decision counts pairs complete at the head of the "
                        "queue's order, so a held pair holds back every pair after it: signs of work keep a pair "
                        "{hours:g} hours at most, then it goes back to the queue for the other raters, never to them "
                        "again. If they are not at work on it, revoke their access: {remedy}"},
    # the remedy where the app runs: a Hub rater on a Space has no code to revoke (`raters revoke` names no one)
    "long_hold_revoke": {"zh": "`evalkit raters revoke 名字`（其占用的评分对随即回到队列）。",
                         "en": "`evalkit raters revoke NAME` (what they hold goes back to the queue)."},
    "long_hold_revoke_space": {"zh": "在下方“Hub 评分者的权限”中填入其 Hugging Face 用户名，按**撤销权限**（此人下一步操作即被拒绝，"
                                     "其占用的评分对随即回到队列）。",
                               "en": "enter their Hugging Face username under \"Hub raters' access\" below and press "
                                     "**Revoke access** (their next step is refused, and what they hold goes back to "
                                     "the queue)."},
    # the organiser's revoke of a Hub rater on a Space (Results tab; evalkit.rating.roster.hub_access)
    "hub_access": {"zh": "Hub 评分者的权限 · Hub raters' access", "en": "Hub raters' access · Hub 评分者的权限"},
    "hub_access_help": {"zh": "撤销某个 Hugging Face 账号在本研究中的评分权限：此人之后的每一步（取评分对、提交、更正、现场演示、结果）"
                              "都会被拒绝，不保存任何内容，其占用的评分对回到队列。撤销记录存于研究数据库（谁、何时），"
                              "可随时解除。",
                        "en": "Revoke a Hugging Face account's access to this study: every later step of theirs "
                              "(a pair, Submit, a correction, the Live demo, Results) is refused and stores nothing, "
                              "and what they hold goes back to the queue. Each revoke is kept in the study's database "
                              "(who, when); lift it at any time."},
    "hub_username": {"zh": "Hugging Face 账号 · Hugging Face account", "en": "Hugging Face account · Hugging Face 账号"},
    "hub_revoke_btn": {"zh": "撤销权限 · Revoke access", "en": "Revoke access · 撤销权限"},
    "hub_lift_btn": {"zh": "解除撤销 · Lift the revoke", "en": "Lift the revoke · 解除撤销"},
    "hub_revoked": {"zh": "已撤销 Hugging Face 账号 **{name}** 的权限：此人下一步操作即被拒绝，其占用的评分对回到队列。",
                    "en": "Revoked the access of Hugging Face account **{name}**: their next step is refused, and what "
                          "they hold goes back to the queue."},
    "hub_revoked_before": {"zh": "Hugging Face 账号 **{name}** 已于 {at} 被 {by} 撤销权限；没有改动。",
                           "en": "Hugging Face account **{name}** was revoked already, by {by} at {at}; nothing "
                                 "changed."},
    "hub_lifted": {"zh": "已解除对 Hugging Face 账号 **{name}** 的撤销（{by} 于 {at} 撤销）：此人可以重新登录评分。",
                   "en": "Lifted the revoke of Hugging Face account **{name}** (revoked by {by} at {at}): they can "
                         "sign in and rate again."},
    "hub_not_revoked": {"zh": "Hugging Face 账号 **{name}** 没有被撤销；没有改动。",
                        "en": "Hugging Face account **{name}** is not revoked; nothing changed."},
    "held_by_others": {"zh": "**还有 {left} 对正由其他评分者评分。** 如果他们跳过，或 {minutes} 分钟内没有评完，这些对会回到你这里："
                             "请过几分钟再按**再看看**。如果他们评完了，你的任务就完成了。",
                       "en": "**{left} pair(s) are being rated by other raters right now.** If one is skipped, or not "
                             "finished within {minutes} minutes, it comes back to you: press **Check again** in a few "
                             "minutes. If they finish them, you are done."},
    "check_again": {"zh": "再看看", "en": "Check again"},
    "reveals_waiting": {"zh": "还有 {waiting} 对待揭晓：其他评分者评完之后才会揭晓。稍后按**再看看**即可看到。",
                        "en": "{waiting} of your pairs are still to be revealed: each is revealed once the other raters "
                              "have rated it. Press **Check again** later to see them."},
    "reveals_unsaved": {"zh": "还有 {waiting} 对待揭晓：评分保存到 Hub 之后（通常几秒钟）才会揭晓。稍后按**再看看**即可看到。",
                        "en": "{waiting} of your pairs are still to be revealed: each is revealed once the ratings "
                              "are saved to the Hub (usually within seconds). Press **Check again** in a moment to "
                              "see them."},
    "correction_dropped": {"zh": "修改没有保存：上一对保存的评分保持不变。",
                           "en": "The correction was not saved: the stored rating of the last pair stays as it was."},
    "answered": {"zh": "已答 {n} / {total}", "en": "{n} / {total} answered"},
    # Gradio's own words, said in the page's language (keys.py)
    "loading": {"zh": "加载中", "en": "Loading"},
    "gradio_error": {"zh": "错误", "en": "Error"},
    # the HTTP guard's 429 (guard.pages_full), said in both languages: it answers before any page names its language
    "pages_full": {"zh": "此网络地址在过去一小时内新打开的页面已达上限（{limit} 个，同一地址的所有人共用）。已打开的页面仍可继续使用；"
                         "请等待约 {minutes} 分钟后再重新加载本页",
                   "en": "too many new pages from this address: {limit} in the last hour, shared by everyone behind it. "
                         "A page already open keeps working; wait about {minutes} min, then reload this page"},
    "gradio_clear": {"zh": "关闭", "en": "Clear"},  # Gradio's button that clears an error on the status line
    # an event that failed with no reason from evalkit (each refusal says why): the server stopped or restarted while
    # it ran (rate._say_refusal). After Submit, a rating (or a correction) was on its way and may have been stored;
    # after any other step (Next, Skip, Correct, a sign-in) none was
    "no_answer_sent": {"zh": "服务器没有回答（它可能已停止或正在重启），所以不知道你的评分是否已保存。请重新加载页面："
                             "服务器恢复后，页面会告诉你评分是否已保存。",
                       "en": "The server did not answer (it may have stopped or be restarting), so whether your rating "
                             "was stored is not known. Reload the page: once the server is back, it says whether your "
                             "rating was stored."},
    # (the same after Save correction: what may or may not be stored is her correction; rate._say_refusal)
    "no_answer_sent_correction": {"zh": "服务器没有回答（它可能已停止或正在重启），所以不知道你的修改是否已保存。请重新加载页面："
                                        "服务器恢复后，页面会告诉你修改是否已保存。",
                                  "en": "The server did not answer (it may have stopped or be restarting), so whether "
                                        "your correction was stored is not known. Reload the page: once the server is "
                                        "back, it says whether your correction was stored."},
    "no_answer": {"zh": "服务器没有回答（它可能已停止或正在重启），所以不知道这一步是否完成。请重新加载页面，"
                        "看看现在到了哪一步。",
                  "en": "The server did not answer (it may have stopped or be restarting), so whether this step went "
                        "through is not known. Reload the page to see where you are."},
    # a Submit that failed on the server in a way nobody foresaw (alerts.UNEXPECTED): it may have come after the write
    "crashed_sent": {"zh": "服务器出错了（已记入日志），所以不知道你的评分是否已保存。请重新加载页面：页面会告诉你评分是否已保存。",
                     "en": "Something went wrong on the server (it was logged), so whether your rating was stored is "
                           "not known. Reload the page: it says whether your rating was stored."},
    # (the same after Save correction: what may or may not be stored is her correction; rate._say_refusal)
    "crashed_sent_correction": {"zh": "服务器出错了（已记入日志），所以不知道你的修改是否已保存。请重新加载页面：页面会告诉你修改是否已保存。",
                                "en": "Something went wrong on the server (it was logged), so whether your correction "
                                      "was stored is not known. Reload the page: it says whether your correction was "
                                      "stored."},
    # Gradio's own popup when its queue refuses an event ("This application is currently busy. Please try again.": the
    # server shutting down or restarting, or its queue full), said in both languages with what to do (rate._say_refusal)
    "gradio_busy": {"zh": "应用正忙或正在重启，这一步没有进行。请稍等片刻再按一次；你的答案仍在页面上。",
                    "en": "The app is busy or restarting, so this step was not taken. Wait a moment and press again; "
                          "your answers stay on the page."},
    # (and its messages that leave unknown whether the step ran: the status line says what a reload tells)
    "gradio_no_answer": {"zh": "服务器没有回答这一步（它可能已停止或正在重启）。",
                         "en": "The server did not answer this step (it may have stopped or be restarting)."},
    "gradio_close": {"zh": "关闭", "en": "Close"},  # the close button of Gradio's popup (a refusal, a lost connection)
    # Gradio's popup while the server cannot be reached (it reloads the page once it can); en: Gradio's own words
    "gradio_connection_lost": {"zh": "与服务器的连接已断开，正在尝试重新连接……",
                               "en": "Connection to the server was lost. Attempting reconnection..."},
    "answered_goto": {"zh": "：跳到第一道未答题", "en": ": go to the first open question"},
    "done": {"zh": "**你的评分任务已全部完成，谢谢！**", "en": "**No pairs left for you.** Thank you!"},
    "draft_stored": {"zh": "页面重新加载时，你对上一对的评分已送达并保存，进度已计入。",
                     "en": "Your rating of the previous pair reached the server before the page reloaded and is "
                           "stored: your progress counts it."},
    "draft_lost": {"zh": "你上次在另一对上填写但未提交的答案没有保存：那一对已不在你的屏幕上（超过 {minutes} 分钟的一对可能已交给其他评分者）。",
                   "en": "The answers you gave on another pair without submitting were not kept: that pair is no "
                         "longer on your screen (after {minutes} minutes a pair may go to another rater)."},
    "draft_correction_stored": {"zh": "页面重新加载时，你对上一对的修改已送达并保存。",
                                "en": "Your correction of the previous pair reached the server before the page "
                                      "reloaded and is stored."},
    "draft_taken": {"zh": "你上次在另一对上填写但未提交的答案没有保存：那一对在此期间已由其他评分者评完（或研究已得出结论）。",
                    "en": "The answers you gave on another pair without submitting were not stored: other raters "
                          "completed that pair meanwhile (or the study reached its decision)."},
    # the same two fates for a rating that was on its way (Submit pressed) when the page reloaded: "without
    # submitting" was not true of it
    "draft_sent_lost": {"zh": "页面重新加载时，你对上一对的评分还在途中，没有送达，因此没有保存：那一对已不在你的屏幕上（超过 {minutes} 分钟的一对可能已交给其他评分者）。",
                        "en": "Your rating of the previous pair was on its way when the page reloaded and did not "
                              "reach the server, so it is not stored: that pair is no longer on your screen (after "
                              "{minutes} minutes a pair may go to another rater)."},
    "draft_sent_taken": {"zh": "页面重新加载时，你对上一对的评分还在途中，没有保存：那一对在此期间已由其他评分者评完（或研究已得出结论）。",
                         "en": "Your rating of the previous pair was on its way when the page reloaded and is not "
                               "stored: other raters completed that pair meanwhile (or the study reached its "
                               "decision)."},
    # ... and for one whose pair came back with its answers: it never reached the server (rater audit, round 2)
    "draft_sent_back": {"zh": "页面重新加载时，你对这一对的评分还没有送达，因此没有保存：你的答案已放回，请再提交一次。",
                        "en": "Your rating of this pair had not reached the server when the page reloaded, so it is "
                              "not stored: your answers are back; submit again."},
    "draft_sent_refused": {"zh": "页面重新加载前，你提交的评分已送达服务器，但被拒绝，没有保存：{why}。",
                           "en": "Your rating reached the server before the page reloaded and was refused, so it is not "
                                 "stored: {why}."},
    "draft_sent_queued": {"zh": "页面重新加载时，你提交的评分还在服务器的队列里等待处理：请过一分钟再刷新页面，看它是否已保存。",
                          "en": "Your rating was still waiting in the server's queue when the page reloaded: reload "
                                "again in a minute to see whether it was stored."},
    "none_for_you": {"zh": "**目前没有需要你评分的内容**：每一对都已由其他评分者评完。如果你认为这不对，请联系研究组织者。",
                     "en": "**There is nothing for you to rate**: other raters have rated every pair. If that seems "
                           "wrong, contact the study's organiser."},
    # her queue empty because results she was shown (this study's, or one's whose texts these pairs repeat) told
    # the sides of the pairs left (rating.queue.kept_by_results_view): others rate them, not "every pair is rated"
    "results_viewed_none": {"zh": "**目前没有需要你评分的内容。** 你看过本研究（或输出与这些评分对相同的另一项研究）的结果，"
                                  "这些结果可能已透露余下评分对两边各是哪种生成方式，所以它们不交给你评分，由其他评分者评分。谢谢！",
                            "en": "**There is nothing for you to rate.** You were shown the results of this study (or "
                                  "of another whose outputs these pairs repeat), and those results can tell which "
                                  "side of the pairs left is which, so they are not yours to rate: other raters will "
                                  "rate them. Thank you!"},
    "study_decided": {"zh": "**本研究已得出结论，不再需要评分。谢谢你的参与！**",
                      "en": "**This study has reached its decision: no more ratings are needed.** Thank you!"},
    "all_identical": {"zh": "**这一批的每一对输出都完全相同：无需评分即可判定，没有需要你评的内容。**",
                      "en": "**Every pair in this pool has two identical outputs:** they are decided without raters, "
                            "so there is nothing to rate."},
    "gold_stopped": {"zh": "**谢谢你的评分！本研究不再给你分配评分对。** 你在检验对上的回答明显低于本研究预先规定的准确率，"
                           "因此你的评分不计入结论。如果你认为有误，请联系研究组织者。",
                     "en": "**Thank you for your ratings: no more pairs of this study are given to you.** Your answers "
                           "on the check pairs fall clearly below the accuracy the study set in advance, so your "
                           "ratings do not count in its verdict. If you think this is wrong, contact the study's "
                           "organiser."},
    "results_shown_done": {"zh": "**你已看过本研究的结果，谢谢你的评分！** 之后加入本研究的评分对不再交给你：看过各路径的汇总后，"
                                 "你的评分难免受其影响。",
                           "en": "**You have seen this study's results: thank you for your ratings!** Pairs added "
                                 "to the study since are not given to you: having seen the per-path tables, your "
                                 "ratings of them could not be blind to them."},
    "client_holds": {"zh": "**暂时没有分配给你的评分对。** 从你所在的网络地址新建的其他名字已有 {held} 对正在评分，"
                           "而自助注册的名字同一时间在一个地址最多占用 {limit} 对。其中一对评完、被跳过，或停止操作 "
                           "{minutes} 分钟后，请按**再看看**。受邀的评分者不受此限制。",
                     "en": "**No pair for you right now.** Other new names from your network address have {held} "
                           "pair(s) on screen, and names made by open sign-up hold at most {limit} at once from one "
                           "address. Press **Check again** once one of them is rated or skipped, or in {minutes} "
                           "minute(s) if it is left untouched. Invited raters are not limited this way."},
    "share_done": {"zh": "**你已完成本次研究分配给你的 {share} 条评分，谢谢！**",
                   "en": "**You have given your share of {share} ratings in this study.** Thank you!"},
    "signed_out": {"zh": "已退出。", "en": "Signed out."},
    "signed_out_elsewhere": {"zh": "你已在本浏览器的另一个窗口退出登录，这个窗口也随之退出。",
                             "en": "You signed out in another tab of this browser, so this tab is signed out too."},
    "signed_in_elsewhere": {"zh": "本浏览器的另一个窗口登录了另一位评分者，这个窗口现在也是以该评分者的身份评分。",
                            "en": "Another rater signed in in another tab of this browser: this tab now rates as that rater."},
    "invite_invalid": {"zh": "邀请链接无效。", "en": "That invitation link is not valid."},
    "invite_wait": {"zh": "此网络地址登录失败次数过多，邀请链接暂时不能使用：请 {seconds} 秒后重新打开链接。",
                    "en": "Too many failed sign-ins from this address: open the invitation link again in {seconds} s."},
    "preparing": {"zh": "正在准备评分数据", "en": "Preparing the pairs to rate"},
    # the Results tab's progress while it computes (aggregate.STEPS, announced through progress.step)
    "results_step": {"zh": "正在计算结果（第 {n} 步，共 {total} 步）：{step}",
                     "en": "Computing the results (step {n} of {total}): {step}"},
    "results_waiting": {"zh": "正在计算结果：另一个页面已开始同样的计算，正在等它完成",
                        "en": "Computing the results: another page started the same computation; waiting for it"},
    "results_saving_view": {"zh": "正在把你这次查看结果的记录保存到 Hub（通常几秒钟），保存之后显示结果",
                            "en": "Saving your view of the results to the Hub (usually seconds); they show once it is saved"},
    "results_view_unsaved": {"zh": "**结果暂不显示：你这次查看的记录没能保存到 Hub**（{seconds} 秒内没有推送成功）。服务器崩溃会丢失没保存的记录，"
                                   "之后你可能又被分到结果已向你透露两边的评分对。请稍后按**刷新**再试。",
                             "en": "**The results are not shown: your view of them could not be saved to the Hub** "
                                   "(no push went through within {seconds} s). A crash of the server loses what is not "
                                   "saved, and you could then be served pairs whose sides the results told you. Press "
                                   "**Refresh** to try again in a moment."},
    "results_view_tell": {"zh": "如果一直失败，请告诉本研究的组织者：数据库没能同步到 Hub。",
                          "en": "If it keeps failing, tell the study's organisers: the database is not reaching the Hub."},
    "the ratings and speed figures": {"zh": "评分与速度数据", "en": "the ratings and speed figures"},
    "the gate's analysis": {"zh": "门槛的分析", "en": "the gate's analysis"},
    "the tables": {"zh": "表格", "en": "the tables"},
    # the reveal (evalkit.ui.reveal)
    "reveal_title": {"zh": "### 揭晓", "en": "### Reveal"},
    "reveal_stored": {"zh": "你的评分已保存并锁定，计入的就是它。按**修改**可以给组织者留下修改记录（在揭晓之后所作，不改变计分）。",
               "en": "Your rating is stored and locked, and it is the one that counts. **Correct** adds a note for the "
                     "organisers (made after the reveal, so it does not change the count)."},
    "reveal_pending_title": {"zh": "### 揭晓：待揭晓", "en": "### Reveal: pending"},
    "reveal_pending": {"zh": "这一对还需要其他评分者再评 {needed} 次。它不再接受评分之后，才会揭晓哪一边是哪条生成路径、各用了多长时间"
                      "（只要还有人可能评到这一对，谁也看不到它的揭晓）。你的揭晓列在下方和最后一屏，评分对结束后会陆续填上。",
                "en": "Which side was which, and the timings, are revealed once this pair is closed to further ratings: "
                      "it needs {more} from other raters. (Nobody sees a pair's reveal while anyone can still rate it.) "
                      "Your reveals are listed below and on the last screen, and fill in as your pairs close."},
    "reveal_pending_copies": {"zh": "这一对已结束，但还有 {copies} 对含有相同的文本、仍可能有人评到（同一提示的输出可能重复）。它们也结束之后，"
                                    "才会揭晓哪一边是哪条生成路径、各用了多长时间。你的揭晓列在下方和最后一屏，会陆续填上。",
                              "en": "This pair is closed, but {copies} open pair(s) hold the same text (a prompt's outputs can "
                                    "repeat), and someone may still rate them: which side was which, and the timings, "
                                    "are revealed once they close too. Your reveals are listed below and on the last "
                                    "screen, and fill in as pairs close."},
    "reveal_uncounted": {"zh": "你的评分已保存并锁定，只作记录、不计分：你在评分期间查看过结果。",
                         "en": "Your rating is stored and locked, for the record only: it does not count, since you saw "
                               "the results while rating."},
    # a Space whose crash loses what was stored since the last push to the Hub (publish.sync): a reveal waits for it
    "reveal_pending_unsaved": {"zh": "这一对已结束，不再接受评分。评分保存到 Hub 之后（通常几秒钟），才会揭晓哪一边是哪条生成路径、"
                                     "各用了多长时间：在那之前服务器一旦崩溃，这一对可能重新开放。你的揭晓列在下方和最后一屏，保存之后会填上。",
                               "en": "This pair is closed to further ratings. Which side was which, and the timings, "
                                     "are revealed once the ratings are saved to the Hub (usually within seconds): "
                                     "until then a crash of the server could open the pair again. Your reveals are "
                                     "listed below and on the last screen, and fill in once saved."},
    "reveal_unsaved_stored": {"zh": "你的评分已保存并锁定，并且计入。这一对已结束：现在按**修改**只给组织者留下修改记录，不改变计分。",
                              "en": "Your rating is stored and locked, and it counts. The pair is closed: **Correct** "
                                    "now adds a note for the organisers and does not change the count."},
    "reveal_pending_stored": {"zh": "你的评分已保存并锁定，并且计入。这一对揭晓之前，按**修改**仍会改变计入的评分。",
                       "en": "Your rating is stored and locked, and it counts. **Correct** still changes the rating that "
                             "counts until the pair is revealed."},
    "reveal_gold_title": {"zh": "### 揭晓：检验题", "en": "### Reveal: a check pair"},
    "reveal_gold": {"zh": "两则输出都来自模型，其中一则随后被有意修改（改动见下），所以它在某些标准上的答案是已知的；这一对用来检验评分，"
                   "不计入两条生成路径的比较。在答案已知的标准上，你的回答计入你在检验题上的准确率（—：答案未知）。",
             "en": "Both outputs come from the model, and one of them was then changed on purpose (the change is named "
                   "below), so its answer on a criterion is known; the pair checks the ratings and is not part of the "
                   "comparison. Your answers where the answer is known count towards your accuracy on check pairs "
                   "(— : not known)."},
    "reveal_gold_head": {"zh": "| 标准 | A 应为 | B 应为 |", "en": "| criterion | A expected | B expected |"},
    # short: five columns fit a phone; every column named (an empty header left a screen reader's A / B column
    # unnamed as it read the table down)
    "reveal_head": {"zh": "| 输出 | 路径 | 用时（秒） | token | token/秒 |",
             "en": "| output | path | seconds | tokens | tokens/s |"},
    "reveal_speedup": {"zh": "**这一对的加速比：{x:.2f}×**（ordinary 用时 ÷ assisted 用时）",
                "en": "**Speed-up for this pair: {x:.2f}×** (ordinary seconds ÷ assisted seconds)"},
    "reveal_no_speedup": {"zh": "**这一对没有加速比**：两则输出不可比（停止原因不同，或长度相差超过容差），按协议不计算加速比；"
                         "可以比较 tokens/s。（{note}）",
                   "en": "**No speed-up for this pair**: {note}"},
    "reveal_list_title": {"zh": "#### 你的揭晓", "en": "#### Your reveals"},
    "reveal_counts": {"zh": "已揭晓 {shown}，待揭晓 {waiting}", "en": "{shown} revealed, {waiting} pending"},
    "reveal_line": {"zh": "- 第 {n} 对 · {prompt}：", "en": "- pair {n} · {prompt}: "},
    "reveal_line_pending": {"zh": "待揭晓：这一对结束后揭晓（还需要 {needed} 次评分）",
                     "en": "pending: revealed once the pair is closed (it needs {needed} more)"},
    "reveal_line_pending_copies": {"zh": "待揭晓：含相同文本的另外 {copies} 对结束后揭晓",
                                   "en": "pending: revealed once {copies} pair(s) holding the same text close"},
    "reveal_line_pending_unsaved": {"zh": "待揭晓：评分保存到 Hub 后揭晓（通常几秒钟）",
                                    "en": "pending: revealed once the ratings are saved to the Hub (usually seconds)"},
    "reveal_line_gold": {"zh": "检验题（一则输出被有意修改，答案已知）",
                  "en": "a check pair (one output changed on purpose, with a known answer)"},
    "reveal_line_sides": {"zh": "A = {a_path} {a_s} 秒，B = {b_path} {b_s} 秒", "en": "A = {a_path} {a_s} s, B = {b_path} {b_s} s"},
    "reveal_line_speedup": {"zh": "，加速比 {x:.2f}×", "en": ", speed-up {x:.2f}×"},
    "reveal_line_none": {"zh": "，无加速比（输出不可比）", "en": ", no speed-up (not comparable)"},
}

# Gradio's fixed English messages a rater can meet in its error popup, each with the words said instead, in her
# language (keys.py rewrites the popup, rate._say_refusal the status line). Busy: its queue refused the event (the
# server shutting down or restarting, the queue full), so nothing ran. The others leave unknown whether the step ran
# (the server stopped mid-way, the connection broke, an error with no reason): said as the server not answering.
GRADIO_MESSAGES = {
    "This application is currently busy. Please try again.": "gradio_busy",
    "Server stopped unexpectedly.": "gradio_no_answer",
    "An Unexpected Error Occurred!": "gradio_no_answer",
    "Connection errored out.": "gradio_no_answer",
    "An error occurred": "gradio_no_answer",
}

# The page's own status lines for a step the server did not answer, refused as busy or failed in (rate._say_refusal):
# the page says them again in the language chosen on a language switch by itself, the server being down
# (rate._no_answer_again, keys.py)
NO_ANSWER_LINES = ("no_answer_sent", "no_answer_sent_correction", "no_answer", "gradio_busy", "crashed_sent",
                   "crashed_sent_correction")


def page_lang(value) -> str:
    """A language the page can be in: "en", else "zh" (the default; anything else a page or client sends)."""
    return "en" if value == "en" else "zh"


def word(key: str, lang: str, **fmt) -> str:
    text = WORDS[key]["zh" if lang == "zh" else "en"]
    return text.format(**fmt) if fmt else text


def value_choices(lang: str) -> list[tuple[str, str]]:
    """pass / fail / unsure with the key that answers each (1 / 2 / 3)."""
    return [(f"{word(v, lang)} ({i})", v) for i, v in enumerate(("pass", "fail", "unsure"), 1)]


def preference_choices(lang: str) -> list[tuple[str, str]]:
    return [(f"{word('output', lang, side='A')} (A)", "A"), (f"{word('output', lang, side='B')} (B)", "B"),
            (f"{word('tie', lang)} (T)", "tie")]


# The refusals a rater can meet in the Rate tab, in Chinese: (the English `what` it matches, what, fix). Groups of the
# pattern fill {0}, {1}, ...; {wait} is the seconds an English fix names ("wait 12 s"). The English follows the Chinese
# (alerts.message); a refusal not listed here is shown in English only: never lost, only untranslated.
ERRORS_ZH: list[tuple[re.Pattern, str, str]] = [(re.compile(p), w, f) for p, w, f in (
    (r"^you are not signed in$", "你还没有登录", "请在评分页顶部登录"),
    (r"^you signed out on this page, so this session has ended; nothing was stored$", "你已在本页面退出，本次会话已结束；"
     "没有保存任何内容", "请在评分页顶部重新登录"),
    (r"^the study chosen is not one of this database's studies$", "所选的研究不在本数据库的研究之列",
     "请从列表中选择，或按“刷新”查看最新的研究"),
    (r"^unknown prompt '(.*)'$", "未知的提示“{0}”", "请选择一个内置提示"),
    (r"^you signed out on this page while this sign-in was on its way, so it signed nothing in$",
     "你在这次登录完成前已在本页面退出，所以这次登录没有生效", "请在评分页顶部重新登录"),
    (r"^you are not signed in \(the app may have restarted, or this page was left a long time\)$",
     "你没有登录（应用可能已重启，或页面放置太久）", "请刷新页面：本浏览器会用你的代码重新登录，并恢复你已填的答案；或在评分页顶部登录"),
    (r"^you are not signed in \(the Space may have restarted, or this page was left a long time\)$",
     "你没有登录（Space 可能已重启，或页面放置太久）",
     "请刷新页面：页面会用你的 Hugging Face 账号重新登录，并恢复你已填的答案；如果没有，请点页面顶部的“Sign in with Hugging Face”"),
    (r"^this session did not sign in with a personal code$", "本次登录没有使用个人代码", "请用你的个人代码登录"),
    (r"^your Hugging Face sign-in has expired", "你的 Hugging Face 登录已过期，本次会话已结束；没有保存任何内容",
     "请刷新页面，再用 Hugging Face 登录"),
    (r"^your Hugging Face sign-in is no longer valid", "你的 Hugging Face 登录已失效，本次会话已结束；没有保存任何内容",
     "请刷新页面，再用 Hugging Face 登录"),
    (r"^you signed out of Hugging Face in this browser", "你已在这个浏览器中退出 Hugging Face（或换了账号登录），本次会话已结束；没有保存任何内容",
     "请刷新页面，再用 Hugging Face 登录"),
    (r"^you are no longer in an organisation allowed to rate", "你已不在允许评分的组织中，本次会话已结束；没有保存任何内容",
     "请研究负责人把你的组织或用户名加入名单，然后刷新页面"),
    (r"^your Hugging Face account's access to this study was revoked", "你的 Hugging Face 账号在本研究中的评分权限已被组织者"
     "撤销，本次会话已结束；没有保存任何内容", "如果你认为这是误会，请联系研究组织者"),
    (r"^only the study's organisers can revoke or lift a Hugging Face rater's access$",
     "只有本研究的组织者才能撤销或恢复 Hugging Face 评分者的权限", "请用 app.organisers 中列出的账号登录；没有改动任何内容"),
    (r"^'(.*)' is one of app.organisers", "“{0}”列在 app.organisers 中，其权限来自 Space 的配置，不能在这里撤销",
     "请在 Space 的配置中把它从 app.organisers 中去掉，然后重启 Space"),
    (r"^--lift is for a Hugging Face username's revoke \(--hub\)$", "--lift 只用于撤销 Hugging Face 用户名（--hub）",
     "撤销个人代码后要恢复，请用 `evalkit raters reissue 名字 --restore`"),
    (r"^no Hugging Face username was given$", "没有填写 Hugging Face 用户名", "请按 Space 上显示的样子填写用户名，再按一次按钮；没有改动任何内容"),
    (r"^the Hugging Face username '(.*)' has no letter or digit$", "Hugging Face 用户名“{0}”不含字母或数字",
     "请按 Space 上显示的样子填写用户名"),
    (r"^'(.*)' is the name of a rater invited by personal code", "“{0}”是凭个人代码受邀的评分者的名字，不是 Space 上的 "
     "Hugging Face 账号", "请用 `evalkit raters revoke 名字` 撤销此人的代码"),
    (r"^that code is not valid$", "这个代码无效", "请核对组织者发给你的代码或链接"),
    (r"^that code was revoked$", "这个代码已被撤销", "请向研究组织者要一个新代码"),
    (r"^your personal code was revoked", "你的个人代码已被撤销，本次会话已结束；没有保存任何内容", "请向研究组织者要一个新代码，然后重新登录"),
    (r"^your skip was stored, and then your personal code was revoked or replaced",
     "你的跳过已保存，随后你的个人代码被撤销或换成了新代码，本次会话已结束", "请向研究组织者要一个新代码，或用新代码重新登录"),
    (r"^your personal code was replaced", "你的个人代码已换成新代码，本次会话已结束；没有保存任何内容", "请用新代码重新登录"),
    (r"^too many sign-in attempts$", "登录尝试次数过多", "请 {wait} 秒后再试"),
    (r"^too many new names from '(.+)': (\d+) in the last hour \(limit (\d+)\)$",
     "这个网络地址（{0}）新建的名字过多：最近一小时已有 {1} 个（上限 {2} 个）",
     "请 {wait} 秒（约 {minutes} 分钟）后再试；没有保存任何内容。以前建的名字请用它的个人代码登录"),
    (r"^too many new names from '(.+)': (\d+) in the last day \(limit (\d+)\)$",
     "这个网络地址（{0}）新建的名字过多：最近一天已有 {1} 个（上限 {2} 个）",
     "请 {wait} 秒（约 {minutes} 分钟）后再试；没有保存任何内容。以前建的名字请用它的个人代码登录"),
    (r"^too many .+ from ", "操作过于频繁", "请 {wait} 秒后再试；没有保存任何内容"),
    (r"^the live runs' hourly limit is reached \((.+) in the last hour from this \w+\): the next run can start at "
     r"(.+) \(in (.+) min\)$", "现场演示已达每小时 {0} 次的上限；{1} 起可以再次运行（约 {2} 分钟后）",
     "请到时再运行；没有保存任何内容（上限由 app.live_runs_per_hour 设置，0 为不限）"),
    (r"^this study signs raters in with a personal code$", "本研究用个人代码登录", "请输入组织者发给你的个人代码（或打开邀请链接）"),
    (r"^that passcode is not right$", "口令不正确", "请向研究组织者询问当前口令"),
    (r"^the name or passcode is too long", "名字或口令太长", "请用短一些的名字"),
    (r"^the name '(.*)' is taken", "名字“{0}”已有人使用", "如果那是你，请用你的个人代码登录；否则请换一个明显不同的名字"),
    (r"^the name '(.*)' has no letter or digit$", "名字“{0}”里没有字母或数字", "请用含有字母或数字的名字"),
    (r"^the name '(.*)' is reserved \(the tables use it for all raters together\)$", "名字“{0}”已保留（表格用它表示全体评分者）",
     "请换一个名字"),
    (r"^(?:rater )?(?:the )?name is empty$", "名字是空的", "请输入你的名字"),
    (r"^(?:rater )?(?:the )?name contains invisible or control characters", "名字里有不可见字符或控制字符",
     "请只用看得见的字母、数字和空格"),
    (r"^(?:rater )?(?:the )?name is (\d+) characters; the limit is (\d+)$", "名字有 {0} 个字符，上限是 {1}", "请用短一些的名字"),
    (r"is not on this study's allow-list$", "你不在本研究的允许名单上", "请研究负责人把你的用户名或组织加入名单"),
    (r"^a skip needs a reason$", "跳过需要说明原因", "请简单说明原因（例如“两则输出都是空的”“看不懂英文”）"),
    (r"^comment is (\d+) characters; the limit is (\d+)$", "备注有 {0} 个字符，上限是 {1}", "请缩短到 {1} 个字符以内"),
    (r"^skip reason is (\d+) characters; the limit is (\d+)$", "跳过原因有 {0} 个字符，上限是 {1}", "请缩短到 {1} 个字符以内"),
    (r"^(comment|skip reason|(?:rater )?(?:the )?name) must be text$", "请输入普通文字", "请输入普通文字"),
    (r"^output ([AB]): .* has no valid answer", "输出 {0} 有问题没有作答", "请为每个问题选择通过、不通过或不确定"),
    (r"^preference .* is not A, B or tie$", "偏好必须是 A、B 或持平", "请选择 A、B 或持平"),
    (r"^you have given your share of (\d+) ratings", "你已完成本次研究分配给你的 {0} 条评分；这一条没有保存",
     "谢谢！除非组织者提高份额，已经没有需要你评的内容"),
    (r"^this submission was already received$", "这次提交已经收到", "无需操作：它只保存一次"),
    (r"^that rating was already corrected$", "这条评分已经修改过", "请修改最新的版本"),
    (r"^the reveal follows your rating of the pair$", "评完这一对之后才会揭晓", "请先评分"),
    (r"^this pair does not exist$", "这一对不存在", "请刷新页面，从队列中领取一对"),
    (r"^rating \d+ (?:does not exist|belongs to another rater or pair)$", "找不到你的这条评分", "请刷新页面"),
    (r"^this pair went to another rater: .* for (\S+) hours, and this one was served to a rater whose hold counts; "
     r"your answers were not stored$", "这一对已交给另一位评分者：你有一对留到了占用上限却未评分，此后 {0} 小时内你占用的评分对"
     "不为你保留，这一对已发给一位占用有效的评分者；你的答案未保存", "请领取另一对"),
    (r"^this pair is not rated yet$", "这一对还没有评分", "请提交评分，或写明原因后跳过"),
    (r"^there is no pair on screen$", "屏幕上没有评分对", "请按“下一对”，或刷新页面"),
    (r"^this rating is already stored and locked$", "这条评分已保存并锁定", "要修改请按“修改”"),
    (r"^there is no stored rating to correct on screen$", "屏幕上没有可以修改的已保存评分", "请先提交这一对"),
    (r"^your rating of this pair was not found$", "找不到你对这一对的评分", "请刷新页面"),
    (r"^there is no unrated pair on screen to skip$", "屏幕上没有可以跳过的未评分对", "请按“下一对”"),
    (r"^the Hugging Face account '(.*)' is one of app.organisers, but", "Hugging Face 账号“{0}”列在 app.organisers 中，但本研究的"
     "数据库里有一位同名（或形近）的凭代码受邀的评分者", "受邀评分者的名字不能用于 Hub 登录（两者会共用评分）：请在 app.organisers "
     "中列出另一个名字的 Hub 账号"),
    (r"^the Hugging Face account '(.*)' has the name of a rater invited", "Hugging Face 账号“{0}”与一位凭个人代码受邀的"
     "评分者同名，不能用它在这里评分", "请联系研究组织者：凭代码受邀的评分者在本地应用里用代码登录，而不是在 Space 上"),
    (r"^output ([AB]): answers must be a mapping", "输出 {0} 的答案格式不对", "请刷新页面后重新作答"),
    (r"^output ([AB]): unknown criterion id", "输出 {0} 的答案里有不认识的问题", "请刷新页面后重新作答"),
    (r"^the pairs to rate are still being prepared$", "评分对还在准备中", "请稍候：准备好后评分页会自动打开"),
    (r"^preparing the pairs failed", "评分对准备失败", "请告诉研究组织者；组织者可在终端里看到原因"),
    (r"^the Live tab needs you to be signed in$", "“现场演示”页需要先登录", "请先在评分页登录"),
    (r"^the Live tab needs you to be signed in with Hugging Face$", "“现场演示”页需要先用 Hugging Face 账号登录",
     "请刷新页面：如果你之前登录过（Space 可能已重启），页面会重新登录；否则请在评分页点“Sign in with Hugging Face”"),
    (r"^the Live tab is for the study's organisers while the study runs$", "研究进行期间，“现场演示”页只对组织者开放",
     "如需演示，请联系组织者"),
    (r"^the material is (\d+) characters; the limit is (\d+)$", "资料有 {0} 个字符，上限是 {1}", "请缩短到 {1} 个字符以内"),
    (r"^the material has a character that is not valid text", "资料里有无效字符", "请以纯文本重新粘贴"),
    (r"^the material is too long for the target model: the request is (\d+) tokens, and with up to (\d+) new tokens "
     r"\(decoding\.max_new_tokens\) it passes the model's context of (\d+) tokens by about (\d+) of the material's "
     r"(\d+) characters$", "资料太长：请求有 {0} 个词元，加上最多 {1} 个新词元（decoding.max_new_tokens）超出目标模型 {2} 个词元的"
     "上下文，约多出资料 {4} 个字符中的 {3} 个", "请把资料删去约 {3} 个字符"),
    (r"^greedy decoding would reproduce the outputs of (\S+) that raters judge blind$",
     "贪心解码会重现评分者正在盲评的 {0} 的输出", "请输入你自己的资料，或在研究结束后再运行内置提示"),
    (r"^the material typed is (\S+)'s material, or nearly, and greedy decoding", "输入的资料与 {0} 的资料相同或几乎相同，"
     "贪心解码会重现评分者正在盲评的输出", "请输入你自己的资料，或在研究结束后再运行内置提示"),
    (r"^something went wrong on the server", "服务器出错了，已记入日志", "请刷新页面再试"),
)]


def error_zh(what: str, fix: str) -> tuple[str, str] | None:
    """A refusal in Chinese (ERRORS_ZH), or None where it has no translation."""
    for pattern, zh_what, zh_fix in ERRORS_ZH:
        m = pattern.search(what)
        if m:
            wait = re.search(r"wait (\d+) s", fix or "")
            fill = {"wait": wait.group(1) if wait else "几",
                    "minutes": max(1, math.ceil(int(wait.group(1)) / 60)) if wait else "几"}
            return zh_what.format(*m.groups(), **fill), zh_fix.format(*m.groups(), **fill)
    return None
