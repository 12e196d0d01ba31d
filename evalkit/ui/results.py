"""The Results tab: rating progress and counts for everyone; the same verdict, plots and tables as
`evalkit report` for organisers, and for raters once they have rated their queue and no pair of the study is
open to anyone (aggregated per-path lengths, timings and preferences could otherwise hint which side is which on a
pair still to rate, by them or by another name of theirs).
Before that the tab shows the counts and nothing else: no empty plot frames, no per-path number."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import EvalkitError
from ..rating.identity import hub_in
from ..rating.limits import has_allow_list
from ..rating.queue import counts, results_open
from .db import connect
from .alerts import friendly, inert
from .session import Session, require_rater, sign_in_ended
from .words import word

if TYPE_CHECKING:  # gradio is imported where it is used (it is slow to import)
    import gradio as gr

# aggregate / report names -> what the tab calls them, in both languages (a label is fixed when the page is built,
# whatever the reader's language; the tables' columns keep the aggregate's names, glossed for a Chinese reader).
# Every label is on the page before any rating, so none may carry a hint word (tests/test_app_leak.py: "加速比").
PLOTS = {"speedup": "speed per prompt · 各题速度", "pass_rates": "pass rates · 通过率",
         "agreement": "agreement · 评分一致性", "seconds_vs_tokens": "time against length · 用时与长度",
         "acceptance": "draft acceptance · 草稿接受率"}
TABLES = {"pass_rates": "pass rates · 通过率", "paired_differences": "paired differences · 成对差值",
          "preferences": "preferences · 偏好", "agreement": "agreement · 评分一致性",
          "prescreen_agreement": "pre-screen agreement · 预检与评分的一致性", "timing": "timing by path · 各路径用时",
          "speedup": "speed per prompt · 各题速度", "time_on_task": "time on task · 评分用时"}
PLOT_MARK = " (plot · 图)"
# Gradio draws a plot's label (PLOTS[name] + PLOT_MARK) as a chip over the image's top left, about 28 px high at
# any size: the tab's figures keep a band that tall above their title (0.6 in of a 7 in figure is about 30 px where
# three plots share a row of a 1280 px page), or the title's start is hidden under it.
LABEL_BAND_INCHES = 0.6

# A Chinese reader's column headings: the aggregate's name (as the report and the export write it) and a gloss. Shown
# only with the tables themselves, to those who may see the aggregates.
COLUMNS_ZH = {
    "prompt_id": "题目", "path": "路径", "criterion": "标准", "n": "数量", "pass": "通过", "fail": "不通过",
    "unsure": "不确定", "pass_rate": "通过率", "ci_low": "区间下限", "ci_high": "区间上限", "effective_n": "有效样本量",
    "wilson_ratings_low": "按评分计的 Wilson 下限", "wilson_ratings_high": "按评分计的 Wilson 上限", "pairs": "对数",
    "identical": "输出相同的对", "ratings": "评分数", "ordinary_rate": "ordinary 通过率", "assisted_rate": "assisted 通过率",
    "difference": "差值", "t_low": "t 区间下限", "t_high": "t 区间上限", "t_df": "t 自由度", "score_low": "得分区间下限",
    "score_high": "得分区间上限", "tango_low": "Tango 下限", "tango_high": "Tango 上限", "bootstrap_low": "自助法下限",
    "bootstrap_high": "自助法上限", "two_way_low": "双向聚类下限", "two_way_high": "双向聚类上限",
    "two_way_df": "双向聚类自由度", "raters": "评分者数", "ordinary_only": "仅 ordinary 通过", "assisted_only": "仅 assisted 通过",
    "mcnemar_p_ratings": "McNemar p 值（按评分）", "assisted": "偏好 assisted", "count": "次数", "share": "比例",
    "item": "项目", "alpha": "Krippendorff α", "pairable_items": "可配对项目", "agreement": "一致率", "kappa": "Cohen κ",
    "runs": "运行次数", "median_seconds": "中位秒数", "median_tokens_per_second": "中位 tokens/s",
    "median_new_tokens": "中位新 token 数", "median_peak_rss_mb": "中位峰值内存 MB", "matched_pairs": "配对数",
    "comparable_pairs": "可比对数", "speedup": "速度比", "identical_outputs": "输出相同", "acceptance_rate": "草稿接受率",
    "tps_ratio": "tokens/s 比", "tps_ci_low": "tokens/s 比下限", "tps_ci_high": "tokens/s 比上限",
    "selection_gap": "选择偏差", "rater": "评分者", "timed": "有计时", "fast": "过快", "fast_share": "过快比例",
}


def headed(df, lang: str):
    """A table as the tab shows it: for a Chinese reader each column heading is the aggregate's name and its gloss
    ("pass_rate · 通过率"), so that the figures can be found in the report and the export by the same name."""
    if lang != "zh":
        return df
    return df.rename(columns={c: f"{c} · {COLUMNS_ZH[c]}" for c in df.columns if c in COLUMNS_ZH})


def counts_markdown(c: dict, lang: str = "en", gold_apart: bool = False) -> str:
    """The counts everyone sees, in the reader's language ("zh" or "en"). Gold (check) pairs are counted in: what
    raters' queues hold. gold_apart: study pairs as `evalkit aggregate` counts them, the gold pairs' beside them;
    only for those who may see the aggregates (a rater who saw her rating land among the gold ones would know that
    the pair she just rated, its reveal still pending, is a check). Each pair's quota is the one stored with the pool;
    before there is one, no quota is stated (the app's ratings_per_pair is only an older pool's, and the gate the
    pool will freeze may yet change)."""
    g = c.get("gold") if gold_apart else None
    g = g if g and g["pairs"] else None
    wanted = c.get("wanted") or {}
    if g:  # the study pairs' quotas
        wanted = {k: n - g["wanted"].get(k, 0) for k, n in wanted.items() if n > g["wanted"].get(k, 0)}
    zh = lang == "zh"
    if zh:
        each = (f"每对 {next(iter(wanted))} 个评分" if len(wanted) == 1 else  # "1 个评分的 540 对、2 个评分的 60 对"
                "、".join(f"{k} 个评分的 {n} 对" for k, n in sorted(wanted.items())))
        labels = ["评分对总数", f"评分已满的评分对（{each}）" if each else "评分已满的评分对",
                  "两则输出完全相同的评分对（无需评分即判定：差异恰为 0）", "当前评分", "修改", "跳过", "评分者"]
    else:
        each = (f"{next(iter(wanted))} ratings" if len(wanted) == 1 else  # e.g. "1 rating (540 pairs) or 2 (60 pairs)"
                " or ".join(f"{k}{' rating' + ('s' if k > 1 else '') if i == 0 else ''} ({n} pairs)"
                            for i, (k, n) in enumerate(sorted(wanted.items()))))
        labels = ["pairs in the pool", f"pairs with their {each or 'ratings'} (complete)",
                  "pairs with identical outputs (decided without raters: difference exactly 0)", "current ratings",
                  "corrections", "skips", "raters"]

    def apart(key: str, pairs: bool = True):  # "20 (+ 2 gold check pairs)": the study pairs', then the gold ones'
        if not g:
            return c[key]
        n = g[key]
        more = (f"另有 {n} 对检验题" if pairs else f"另有 {n} 条在检验题上") if zh else (
            f"+ {n} gold check pair{'s' if n != 1 else ''}" if pairs else f"+ {n} on gold check pairs")
        return f"{c[key] - n}（{more}）" if zh else f"{c[key] - n} ({more})"

    values = [apart("pairs"), apart("pairs_complete"), c.get("identical", 0), apart("ratings", pairs=False),
              c["corrections"], c["skips"], c["raters"]]
    # a header that says what the columns are: an empty one rendered as a blank first row (demo audit 2026-12-05)
    head = "| 进度 | 数量 |" if zh else "| progress | count |"
    return "\n".join([head, "| --- | ---: |"] + [f"| {k} | {v} |" for k, v in zip(labels, values)])


def counted_markdown(agg, lang: str = "en", organiser: bool = False) -> str:
    """Below the counts, for those who see the aggregates: the same study as the verdict counts it, so that the app's
    counts and `evalkit aggregate`'s are not read as one figure (organiser audit M2: 15 complete pairs here, 7 there,
    "4 decided pairs" in the verdict); for an organiser, the raters the gold check leaves out, by name, where the notes
    (read by raters too) name nobody (M4)."""
    c = agg.tables["counts"]
    if not len(c):
        return ""
    c = c.iloc[0]
    g = agg.verdict.gate or {}
    planned = int(c["planned_pairs"]) if g and c["planned_pairs"] else 0
    gold = agg.tables["gold"]
    out = gold[gold["excluded"]] if organiser and len(gold) and "excluded" in gold else gold.iloc[:0]
    zh = lang == "zh"
    decided, ratings, raters = (int(c[k]) for k in ("complete_pairs", "current_ratings", "raters"))
    if zh:
        text = (f"_按结论的算法（`evalkit aggregate`）：已判定 {decided:,} 对" + (f"（计划 {planned:,} 对）" if planned else "")
                + f"（按队列顺序从头连续评满的评分对：还在等评分的一对会挡住其后的评分对），{ratings:,} 条计入的评分，来自 "
                  f"{raters} 位评分者。_")
    else:
        text = (f"_As the verdict counts them (`evalkit aggregate`): {decided:,} decided pairs"
                + (f" ({planned:,} planned)" if planned else "") + " (complete at the head of the queue's order: a pair "
                f"still waiting holds back those after it), {ratings:,} counted ratings by {raters} rater(s)._")
    if len(out):
        names = ("、" if zh else "; ").join(f"{inert(r.rater)}（{r.answers} 个回答中准确率 {r.accuracy:.2f}）" if zh else
                                           f"{inert(r.rater)} ({r.accuracy:.2f} on {r.answers} answers)" for r in out.itertuples())
        head = "检验题排除的评分者（准确率低于 {:.2f}）：{}。" if zh else "Left out by the gold check (accuracy below {:.2f}): {}."
        text += "\n\n_" + head.format(g.get("min_gold_accuracy", 0), names) + " " + word("gold_left_out_served", lang) + "_"
    return text


def shown_figures(agg, db) -> dict:
    """The report's figures as the tab shows them: blind (publish.report.figures), laid out below the label chip."""
    from ..publish.report import figures

    figs = figures(agg, db, blind=True)
    for fig in figs.values():
        fig.tight_layout(rect=(0, 0, 1, 1 - LABEL_BAND_INCHES / fig.get_figheight()))
    return figs


def verdict_markdown(agg, lang: str = "en") -> str:
    """The verdict as the tab shows it. A Chinese reader gets it written from the verdict's fields (ui.verdictzh),
    then the English original with every detail."""
    from .verdictzh import MARK as mark

    v = agg.verdict
    lines = [f"_Shown: {agg.study.label()}._", ""] if agg.study is not None else []
    if lang == "zh":
        from .verdictzh import verdict_zh

        zh = [f"_显示的研究：{agg.study.label()}_", ""] if agg.study is not None else []
        lines = zh + verdict_zh(agg) + looks_markdown(agg, "zh") + ["", "#### 详细说明（英文原文）", ""] + lines
    from ..aggregate.verdict import settled_when

    frozen = f" (frozen {agg.frozen.completed_at}, {settled_when(v.look)})" if agg.frozen is not None else ""
    lines += [f"### Verdict: **{v.decision}**{frozen}", ""] + ([f"_{v.claim}_", ""] if v.claim else []) + (
        [f"_{v.ppi}_", ""] if getattr(v, "ppi", "") else [])
    lines += [f"- {mark[c.ok]} **{c.name}**: {c.reason}" for c in v.conditions]
    lines += looks_markdown(agg)
    if agg.after is not None:  # apart, and never the decision
        lines += ["", f"#### After the decision (not the decision): {agg.after.decision}", "",
                  "_The same analysis on the data as it is now, with what was stored since the decision._", ""]
        lines += [f"- {mark[c.ok]} **{c.name}**: {c.reason}" for c in agg.after.conditions]
    lines += [""] + [f"- note: {n}" for n in agg.notes]
    return "\n".join(lines)


def looks_markdown(agg, lang: str = "en") -> list[str]:
    """With looks (group sequential, confidence sequence): each criterion against its boundary at the last look, and
    the ratings the plan expects to remain."""
    from ..aggregate.looks import standing
    from ..task.criteria import title

    v = agg.verdict
    g = v.gate or {}
    if not v.look or g.get("monitoring", "fixed") == "fixed":
        return []
    look = v.look
    if lang == "zh":
        return _looks_zh(agg, standing(v.fidelity, g["margin"]))
    lines = ["", f"#### Looks ({g['monitoring']}): look {look['index']} of at most {look['of']}, "
                 f"{look['pairs']} decided pairs, {look['level']:.4%} interval", "",
             "| criterion | lower end | upper end | boundary | lower end short of it by | state |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in standing(v.fidelity, g["margin"]):
        lines.append(f"| {title(r['criterion'])} | {r['ci_low']:+.3f} | {r['ci_high']:+.3f} | {r['boundary']:+.3f} | "
                     f"{r['needs']:.3f} | {r['state']} |")
    if v.interim:
        so_far, expected, most = _remaining(agg)
        remain = (f"the plan expects about {max(expected - so_far, 0):,} more ratings to a decision "
                  f"({expected:,} in all, `evalkit plan`); " if expected else "")
        decided, at_most = _at_most(agg)
        lines += ["", f"_{so_far:,} ratings so far: {remain}at most about {at_most:,} more, at the "
                      f"planned maximum of {g['planned_pairs']:,} decided pairs ({decided:,} decided so far; ratings "
                      "of gold check pairs, and of pairs whose ratings the gold check leaves out, come on top)._"]
    elif not look.get("final", True):
        so_far, _expected, most = _remaining(agg)
        lines += ["", f"_Rating stopped at this look, which settled the study: {so_far:,} ratings in all, about "
                      f"{max(most - so_far, 0):,} fewer than its planned maximum of {g['planned_pairs']:,} decided "
                      "pairs would have asked. The app serves none of its pairs any more._"]
    return lines


def _per_pair(g: dict) -> float:
    return g["min_ratings_per_pair"] + (g.get("second_rating_share", 0.0) if g["min_ratings_per_pair"] == 1 else 0)


def _remaining(agg) -> tuple[int, int, int]:
    """Ratings so far, the plan's expected total (0 when the gate has none), and the most the planned maximum takes."""
    g = agg.verdict.gate
    so_far = int(agg.tables["counts"]["current_ratings"].iloc[0])
    return so_far, int(g.get("expected_ratings") or 0), int(round(g["planned_pairs"] * _per_pair(g)))


def _at_most(agg) -> tuple[int, int]:
    """About the most ratings of study pairs the planned maximum still takes: its pairs not decided yet, each at the
    gate's ratings a pair. Not the planned total less the ratings so far: ratings of pairs after one still waiting at
    the head of the queue's order decide nothing yet (organiser audit M1: "at most about 0 more" with 4 of 12 planned
    pairs decided). Returns (decided pairs, that most)."""
    g = agg.verdict.gate
    decided = int(agg.tables["counts"]["complete_pairs"].iloc[0])
    return decided, int(round(max(g["planned_pairs"] - decided, 0) * _per_pair(g)))


def _looks_zh(agg, rows: list[dict]) -> list[str]:
    from ..task.criteria import title
    from .verdictzh import _n

    v, g = agg.verdict, agg.verdict.gate
    look = v.look
    states = {"open": "未定", "below the margin: DROP": "低于容差：DROP"}
    lines = ["", f"#### 分次查看（{g['monitoring']}）：第 {look['index']} 次，最多 {look['of']} 次；已判定 "
                 f"{look['pairs']} 对，区间水平 {look['level']:.4%}", "",
             "| 标准 | 区间下限 | 区间上限 | 界限 | 下限距界限还差 | 状态 |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        state = f"已在第 {r['passed_at']} 次查看通过" if r["passed_at"] else states.get(r["state"], r["state"])
        lines.append(f"| {title(r['criterion'], 'zh')} | {_n(r['ci_low'])} | {_n(r['ci_high'])} | {_n(r['boundary'])} | "
                     f"{r['needs']:.3f} | {state} |")
    if v.interim:
        so_far, expected, most = _remaining(agg)
        remain = (f"按计划，大约还需 {max(expected - so_far, 0):,} 条评分才能得出结论（共 {expected:,} 条，见 "
                  "`evalkit plan`）；" if expected else "")
        decided, at_most = _at_most(agg)
        lines += ["", f"_目前 {so_far:,} 条评分：{remain}计划最多 {g['planned_pairs']:,} 对（已判定 {decided:,} 对），最多大约"
                      f"还需 {at_most:,} 条（检验题的评分、以及被检验题排除的评分需要重评的部分另计）。_"]
    elif not look.get("final", True):
        so_far, _expected, most = _remaining(agg)
        lines += ["", f"_本研究在这次查看时得出结论，评分随即停止：共 {so_far:,} 条评分，比计划上限 {g['planned_pairs']:,} 对"
                      f"所需少约 {max(most - so_far, 0):,} 条。应用不再分发本研究的评分对。_"]
    return lines


HIDDEN = {"en": "_The verdict, tables and plots appear here once you have rated your own pairs: per-path figures "
                "could hint which side is which._",
          "zh": "_评完你自己的评分对后，这里会显示结论、表格和图：按生成路径的汇总可能透露哪一边是哪条路径。_"}

# Why the aggregates are closed to this reader (may_see_aggregates), for a Chinese reader.
_CLOSED_ZH = [(re.compile(p), zh) for p, zh in (
    (r"^sign in on the Rate tab$", "请先在评分页登录"),
    (r"^you have given your share of (\d+) ratings", "你已完成分配给你的 {0} 条评分；没有留给你评的评分对之后，结果才开放"),
    (r"^you have (\d+) pair\(s\) left to rate$", "你还有 {0} 对要评"),
    (r"^you skipped (\d+) pairs and rated (\d+); .*at most (\d+) skipped", "你跳过了 {0} 对、评了 {1} 对；结果只对评完自己的"
     "评分对的评分者开放（最多跳过 {2} 对）"),
    (r"^you have rated your pairs; .*last (\d+) pair", "你已评完自己的评分对；本研究最后 {0} 对得到其他评分者的评分之后，结果才开放"),
)]


PREPARING = "the pairs to rate are being prepared"


def closed_words(why: str, lang: str) -> str:
    """The tab without the aggregates: what it will show, and why not yet, in the reader's language. Before sign-in
    in both: the language is chosen on the Rate tab, so a visitor who opens Results first has not chosen one (the
    tab's own name is in both)."""
    if why == PREPARING:  # "sign in on the Rate tab" sent a presenter to a tab with no sign-in while it prepares
        return (f"{HIDDEN['zh']}\n\n_评分对正在准备中（进度见评分页），准备好后请在评分页登录。_\n\n{HIDDEN['en']}\n\n"
                "_The pairs to rate are being prepared (the Rate tab shows the progress); sign in there once they are "
                "ready._")
    if why == "sign in on the Rate tab":
        return (f"{HIDDEN['zh']}\n\n_{_CLOSED_ZH[0][1]}。_\n\n{HIDDEN['en']}\n\n"
                "_Sign in on the Rate tab (Rate · 评分) to rate; the language switch is there too._")
    if lang == "zh":
        why = next((zh.format(*m.groups()) for p, zh in _CLOSED_ZH if (m := p.search(why))), why)
    return f"{HIDDEN['zh' if lang == 'zh' else 'en']}\n\n_{why}{'。' if lang == 'zh' else '.'}_"


def may_see_aggregates(db, cfg: Config, session: Session | None) -> tuple[bool, str]:
    """Organisers (by credential) always; a rater once they have rated their queue and no pair is open to anyone
    (rating.queue.results_open); nobody else. With the reason when not."""
    if session is None or session.rater is None:
        return False, "sign in on the Rate tab"
    require_rater(db, session, cfg.app)  # a revoked or re-issued code, or an expired Hub sign-in, ends the session
    if session.organiser:
        return True, ""
    return results_open(db, session.rater, cfg.app.ratings_per_pair, cfg.app.results_skip_allowance,
                        cfg.app.max_ratings_per_rater)


def few_others(agg, session: Session) -> bool:
    """Whether a rater shares the shown study with fewer than two other raters: the pooled figures less her own are
    then one other rater's (her count of too-fast ratings, her gold check). Never for an organiser, who sees them all."""
    from ..rating.pace import ALL

    if session.organiser:
        return False
    names = set(agg.tables["time_on_task"]["rater"]) - {ALL, session.rater}
    return len(names) < 2


def time_on_task_shown(agg, session: Session):
    """The time-on-task table as the tab shows it (the aggregate's: the shown study's ratings, the floor of its stored
    config). An organiser sees every rater's row; a rater the pooled row and her own, never another rater's name,
    count or pace (the report pseudonymises them), and her own alone while the pooled row, less hers, would be
    one other rater's (few_others)."""
    from ..rating.pace import ALL

    table = agg.tables["time_on_task"]
    if session.organiser:
        return table
    keep = [session.rater] if few_others(agg, session) else [ALL, session.rater]
    return table[table["rater"].isin(keep)].reset_index(drop=True)


def notes_shown(agg, session: Session):
    """The aggregate as the verdict shows it to this reader: without the notes drawn from single raters' figures
    where, less her own, they would be one other rater's (few_others)."""
    from dataclasses import replace

    if not agg.personal or not few_others(agg, session):
        return agg
    return replace(agg, notes=[n for n in agg.notes if n not in agg.personal])


def _utc(stamp: str) -> str:
    return stamp.replace("T", " ").replace("+00:00", " UTC")


def sync_warning(db_path: Path, lang: str) -> str:
    """For organisers, while pushes of the database to the Hub fail (publish.sync's status file): a restart would
    lose the ratings stored since the last good push, and nothing else in the app says so; likewise on a Space served
    with EVALKIT_SYNC_REPO=off from its own disk, or while another app syncs with the same repo. '' otherwise."""
    from ..publish.sync import sync_health, unsynced_on_space

    if unsynced_on_space(db_path):  # EVALKIT_SYNC_REPO=off, no persistent storage: nothing outlives a restart
        return word("sync_off_disk", lang) + "\n\n"
    health = sync_health(db_path)
    rival = ""
    if health and health.get("rival_since"):  # another app started on the same repo after this one (publish.sync)
        rival = word("sync_rival", lang, repo=inert(health.get("repo") or "?"), since=_utc(health["rival_since"]))
        rival += "\n\n"
    if not health or not health.get("failures"):
        return rival
    # what is at risk is what came after the last push that went through (the first failure may come later)
    since = _utc(health.get("last_ok_at") or health.get("failing_since") or "")
    error = inert((health.get("error") or "?")[:200])
    if health.get("held") == "foreign":  # a disk database no sync had pushed, beside an upload (publish.sync)
        repo = inert(health.get("repo") or "?")
        return rival + word("sync_foreign", lang, repo=repo) + "\n\n"
    if health.get("held"):  # another database in the repo: not a failure to fix, a choice between two databases
        removed = health["held"] == "removed"
        return rival + word("sync_held", lang, repo=inert(health.get("repo") or "?"), since=since or "?",
                    how=("删除" if removed else "替换") if lang == "zh" else ("removed" if removed else "replaced")) + "\n\n"
    return rival + word("sync_failing", lang, repo=inert(health.get("repo") or "?"), n=health["failures"], since=since,
                error=error) + "\n\n"


# How long a first view of the Results waits for its push to the Hub (publish.sync.DatabaseSync.wait_pushed): the
# sync's gap between pushes (SYNC_EVERY_MIN) and a commit's few seconds, with room for a slow Hub
VIEW_PUSH_SECONDS = 60.0


def view_saved(db, db_path: Path, s: Session, study_id: int, progress, lang: str) -> str:
    """'' when what this person's view of the study's results recorded (rating.queue.results_view_rows) outlives a
    crash; else, after asking the sync for a push and waiting for it (VIEW_PUSH_SECONDS), why the Results are not shown
    and what to do. Only where a crash loses what the sync has not pushed (publish.sync.losable): a lost row serves her
    again the pairs whose sides the Results told her (store.VIEWED_BEFORE), or counts her ratings of them
    (results_seen), as blind. A later view, once pushed, waits for nothing."""
    from ..publish.sync import losable
    from ..rating.queue import results_view_rows

    if (sync := losable(db_path)) is None:
        return ""
    rows = {t: r for t, r in results_view_rows(db, s.rater, study_id).items() if r > (sync.pushed or {}).get(t, 0)}
    if not rows:
        return ""
    progress(0.0, desc=word("results_saving_view", lang))
    if sync.wait_pushed(rows, VIEW_PUSH_SECONDS):
        return ""
    # an organiser reads the sync's state (its health line: failing pushes, held pushes), a rater whom to tell
    then = sync_warning(db_path, lang) if s.organiser else word("results_view_tell", lang)
    return word("results_view_unsaved", lang, seconds=int(VIEW_PUSH_SECONDS)) + ("\n\n" + then if then else "")


def computing(progress, lang: str):
    """aggregate's steps (progress.step) on the page while the tab computes, in the viewer's language: on a study-sized
    pool an organiser's click waited several seconds with nothing moving. Only those who see the aggregates get here,
    and the steps are the same words for every study: they say nothing of a pair or its sides."""
    from ..aggregate import STEPS
    from ..progress import announcing

    def said(name: str) -> None:
        n = STEPS.index(name) + 1 if name in STEPS else len(STEPS)  # a step not listed: said as the last one
        step = word(name, lang) if name in STEPS else name
        progress((n - 1) / len(STEPS), desc=word("results_step", lang, n=n, total=len(STEPS), step=step))

    return announcing(said)


def waiting_for_another(progress, lang: str):
    """What a page says while another page's computation of the same look goes on (the cache shares it): nothing
    moved on it for as long as that one took."""
    return lambda: progress(0.0, desc=word("results_waiting", lang))


def build_results_tab(cfg: Config, db_path: Path, tab: gr.Tab, session: gr.State, space: bool = False,
                      signout: gr.Button | None = None, preparing=None) -> None:
    import gradio as gr

    from ..task.criteria import titled

    rpp = cfg.app.ratings_per_pair
    # tall enough, empty on a first opening, to show the progress of its computation (Gradio draws it over the outputs)
    counts_md = gr.Markdown(label="counts", min_height=120, elem_id="results-counts")
    # which study the verdict shows: the latest (the one being rated) on opening and Refresh; another by name here
    study_choice = gr.Dropdown(label="study", choices=[], value=None, visible=False, interactive=True)
    verdict_md = gr.Markdown(label="verdict")
    with gr.Column(visible=False, elem_id="results-full") as full:  # shown only to those who may see the aggregates
        plots = {}
        names = list(PLOTS)
        for row in (names[:2], names[2:]):
            with gr.Row():
                for name in row:
                    plots[name] = gr.Plot(label=PLOTS[name] + PLOT_MARK)
        tables = {}
        for name, title in TABLES.items():
            with gr.Accordion(title, open=name == "speedup"):
                tables[name] = gr.Dataframe(label=title, interactive=False)
    refresh = gr.Button("Refresh · 刷新")
    outputs = [counts_md, verdict_md, study_choice, full, *plots.values(), *tables.values()]
    hub_box = None
    if space:  # a Hub rater has no code to revoke: her organiser revokes her username here (organisers only)
        with gr.Accordion(word("hub_access", "zh"), open=False, visible=False, elem_id="results-hub-access") as hub_box:
            hub_help = gr.Markdown()
            hub_name = gr.Textbox(label=word("hub_username", "zh"), max_length=200)
            with gr.Row():
                hub_revoke = gr.Button(word("hub_revoke_btn", "zh"), variant="stop")
                hub_lift = gr.Button(word("hub_lift_btn", "zh"))
            hub_said = gr.Markdown(elem_id="results-hub-said")
        outputs += [hub_box, hub_help]
    from ..aggregate.cache import AggregateCache

    cache = AggregateCache()  # one per app: raters opening the tab share one computation per data version

    def show_study(s: Session, name: str | None, progress=gr.Progress()) -> dict:
        from ..study.studies import studies

        lang = s.lang if s is not None else "en"
        with connect(db_path) as db:
            allowed, why = may_see_aggregates(db, cfg, s)
            if not allowed and why == "sign in on the Rate tab" and preparing is not None and not preparing.ready:
                why = PREPARING
            # gold pairs apart, as `evalkit aggregate` counts them, for those who see the aggregates (whose tables
            # count study pairs only already)
            out = {counts_md: counts_markdown(counts(db, rpp), lang, gold_apart=allowed)}
            if hub_box is not None:  # an organiser's only (by credential)
                out[hub_box] = gr.update(visible=allowed and s.organiser)
                out[hub_help] = word("hub_access_help", lang) if allowed and s.organiser else ""
            if not allowed:  # hidden, and cleared (a tab signed out of keeps nothing from before)
                return out | {verdict_md: closed_words(why, lang), full: gr.update(visible=False),
                              study_choice: gr.update(visible=False, choices=[], value=None)} | {
                    c: None for c in (*plots.values(), *tables.values())}
            names = [st.name for st in studies(db)]
            if name not in (None, "", *names):  # sent raw (the list offers only these): said in the rater's language
                raise EvalkitError("the study chosen is not one of this database's studies",
                                   "choose one from the list, or press Refresh for the latest")
            name = name or None  # the latest unless one of them is chosen
            # the study's stored settings, as `evalkit aggregate` reads them: the same figures in every reader
            with computing(progress, lang):  # a cached look is at once: its steps are not run, nor said
                agg = cache.get(db, study=name, waiting=waiting_for_another(progress, lang))
            # revoked or re-issued while it was computed (seconds over a large study): it shows nothing, and records
            # nothing of hers (results_seen) after the revoke. Signed out meanwhile: the tab as to nobody (below)
            if not sign_in_ended(s):
                require_rater(db, s, cfg.app)
            uncounted = ""
            served = name in (None, names[-1] if names else None)  # the study the queue serves
            if agg.study is not None:  # anyone's view, whatever it told: a pool stored later is not hers
                from ..rating.queue import note_results_view

                note_results_view(db, s.rater, agg.study.id)
            if s.organiser:  # an earlier study's runs can hold the served study's texts too (greedy decoding)
                from ..aggregate.timing import POOL_SOURCE
                from ..rating.queue import note_results_seen

                if note_results_seen(db, s.rater, rpp, pool_timing=agg.speed.source == POOL_SOURCE, latest=served):
                    uncounted = word("results_seen", s.lang) + "\n\n"
            else:  # a rater: no pair a later pool of the served study adds is hers, whichever study she was shown (an
                # earlier study's per-path tables describe the same prompts, and greedy decoding repeats their texts)
                from ..rating.queue import note_results_shown

                note_results_shown(db, s.rater)
            # on a Space's own disk, shown only once those rows are pushed: a crash must not forget what she saw
            if agg.study is not None and (unsaved := view_saved(db, db_path, s, agg.study.id, progress, lang)):
                return out | {verdict_md: unsaved, full: gr.update(visible=False),
                              study_choice: gr.update(visible=False, choices=[], value=None)} | {
                    c: None for c in (*plots.values(), *tables.values())}
            out[study_choice] = gr.update(visible=len(names) > 1, choices=names,
                                          value=agg.study.name if agg.study is not None else None)
            if name in (None, names[-1] if names else None):  # the counts above are the served study's
                if more := counted_markdown(agg, lang, organiser=s.organiser):
                    out[counts_md] += "\n\n" + more
                if s.organiser:  # who holds a pair for hours, by name: for organisers only, who can revoke
                    from ..rating.queue import HOLD_MINUTES, LONG_HOLD_HOURS, long_holds

                    if held := long_holds(db):
                        who = ("、" if lang == "zh" else ", ").join(f"{inert(r)} ({since[:16].replace('T', ' ')} UTC)"
                                                                   for r, since in held)
                        remedy = (word("long_hold_revoke_space", lang, minutes=HOLD_MINUTES) if space
                                  else word("long_hold_revoke", lang))
                        out[counts_md] += "\n\n" + word("long_hold", lang, who=who, hours=LONG_HOLD_HOURS,
                                                        remedy=remedy)
            # blind for everyone, organisers too: an organiser may rate as well, and one output's point, coloured by
            # its path, tells the side of a pair still open (`evalkit report` plots every run)
            figs = shown_figures(agg, db)
            shown = dict(agg.tables, time_on_task=time_on_task_shown(agg, s))  # the cached tables stay as they are
            # until the planned sample is rated, say so above everything else
            interim = f"**⚠️ {agg.verdict.label}** · 中期查看，不是结论\n\n" if agg.interim else ""
            # on a Space without an allow-list any Hugging Face account may rate (a private Space, or its
            # hf_oauth_authorized_org, narrows who reaches it; evalkit cannot see those)
            open_space = word("space_open", lang) + "\n\n" if space and not has_allow_list(cfg.app) else ""
            warnings = sync_warning(db_path, lang) + open_space if s.organiser else ""
            out[verdict_md] = warnings + uncounted + interim + verdict_markdown(notes_shown(agg, s), lang)
        out |= {full: gr.update(visible=True)}
        out |= {plots[k]: figs[k] for k in PLOTS}
        out |= {tables[k]: headed(titled(shown[k]).round(4), lang) for k in TABLES}  # criteria by title, never id
        if sign_in_ended(s):  # signed out while this ran: its figures would be drawn after Sign out cleared the tab
            return show_study(Session(lang=lang), None)
        return out

    @friendly
    def show(s: Session, progress=gr.Progress()) -> dict:
        return show_study(s, None, progress)

    if signout is not None:
        # Sign out shows the tab as to nobody: what an organiser (or a rater done with her pairs) was shown stayed on
        # the page, per-path figures and all, for the next person at the computer (attacker audit 2026-12-05)
        def signed_out(s: Session | None) -> dict:
            return show_study(Session(lang=s.lang if s is not None else "zh"), None)

        signout.click(signed_out, [session], outputs, api_visibility="private", show_progress="hidden")
    if hub_box is not None:
        def hub_access(s: Session, username: str, lift: bool) -> dict:
            """An organiser revokes (or lifts the revoke of) a Hub rater's access: stored with her name and the time."""
            from ..rating import roster
            from ..rating.queue import clean_rater

            lang = s.lang if s is not None else "en"
            with connect(db_path) as db:
                require_rater(db, s, cfg.app)  # her own sign-in still hers
                if not (s.organiser and s.hub):  # by credential: app.organisers at her Hub sign-in, never a typed name
                    raise EvalkitError("only the study's organisers can revoke or lift a Hugging Face rater's access",
                                       "sign in with a Hugging Face account listed in app.organisers; nothing was "
                                       "changed")
                if not (isinstance(username, str) and username.strip()):
                    raise EvalkitError("no Hugging Face username was given", "type the username as the Space shows "
                                       "it, then press the button again; nothing was changed")
                name = clean_rater(username)
                if hub_in(name, cfg.app.organisers):  # as the sign-in gives her organiser rights
                    raise EvalkitError(f"'{name}' is one of app.organisers: its rights come from the Space's config, "
                                       "not from a revoke here", "take it off app.organisers in the Space's config and "
                                       "restart the Space; nothing was changed")
                name, row, changed = roster.hub_access(db, name, s.rater, lift=lift)
            if lift:
                said = (word("hub_lifted", lang, name=inert(name), by=inert(row["revoked_by"]),
                             at=_utc(row["revoked_at"])) if changed else word("hub_not_revoked", lang, name=inert(name)))
            else:
                said = (word("hub_revoked", lang, name=inert(name)) if changed else
                        word("hub_revoked_before", lang, name=inert(name), by=inert(row["revoked_by"]),
                             at=_utc(row["revoked_at"])))
            return {hub_said: said}

        @friendly
        def revoke_hub(s: Session, username: str) -> dict:
            return hub_access(s, username, lift=False)

        @friendly
        def lift_hub(s: Session, username: str) -> dict:
            return hub_access(s, username, lift=True)

        hub_revoke.click(revoke_hub, [session, hub_name], [hub_said], api_name="hub_revoke")
        hub_lift.click(lift_hub, [session, hub_name], [hub_said], api_name="hub_lift")
    refresh.click(show, [session], outputs, api_name="results")
    tab.select(show, [session], outputs, api_visibility="undocumented")
    # show_study checks the name (Gradio's own check of the choices answered in English only, listing them)
    study_choice.input(friendly(show_study), [session, study_choice], outputs, api_name="results_study",
                       preprocess=False)
