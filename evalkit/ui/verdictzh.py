"""The Results tab's verdict for a Chinese reader. It is written from the verdict's own fields (the decision, whom it
covers, each condition's state, the figures each rests on), never translated from its English sentences: those
carry every detail and stay below it, under a heading that says they are the English original. One analysis, two
ways to read it, so the Chinese can never say something the decision did not."""

from __future__ import annotations

from ..aggregate.verdict import narrower_passes, unjudged
from ..study.gate import GENERAL, enough_raters
from ..task.criteria import title

DECISION = {"KEEP": "保留草稿模型（KEEP）", "DROP": "不保留草稿模型（DROP）",
            "INSUFFICIENT DATA": "证据不足，尚无结论（INSUFFICIENT DATA）"}
CONDITION = {"planned sample": "计划样本", "speed-up": "加速比", "fidelity": "内容忠实度", "memory": "额外内存",
             "gate": "发布门槛"}
STATE = {True: "通过", False: "未通过", None: "未判定"}
MARK = {True: "✅", False: "❌", None: "❔"}


def _n(x: float) -> str:
    return f"{x:+.3f}".replace("-", "−")


def claim_zh(gate: dict, raters: int | None, rows: list[dict] | None = None) -> str:
    """Whom the decision covers, as verdict.claim_statement says it in English."""
    who = f"这 {raters} 位" if raters else "这些"
    task = "。结论只针对这些提示词和这个配对池，不针对其他任务"  # as the English says of either claim
    if gate.get("claim", GENERAL) == GENERAL:
        return f"结论针对一般评分者（以{who}评分者为样本：换一批同类评分者，结论仍应成立）" + task
    narrower = narrower_passes(gate, rows or [], raters)
    return f"结论只针对{who}评分者（别的评分者可能对两条路径判断不同）" + task + (
        "。在更早的查看中、由较少评分者的答案通过的标准，结论只针对那次查看的评分者（通过保持有效，但之后加入的评分者没有评判过它）："
        + "、".join(f"{title(r['criterion'], 'zh')}（第 {r['passed_at_look']} 次查看，{r['passed_raters']} 位评分者）"
                   for r in narrower) if narrower else "")


def _fidelity(v, g: dict) -> str:
    rows = v.fidelity
    if not rows:
        return "还没有评分足额的评分对"
    raters = max(int(r["raters"]) for r in rows)
    short = [r for r in rows if not enough_raters(r, g)]  # per criterion, as verdict.decide checks it
    if not short:
        return _intervals(v, g, raters)
    # as verdict.decide: too few raters for a claim about raters in general, then what the intervals say
    fewest = min(short, key=lambda r: int(r["raters"]))
    n = int(fewest["raters"])
    who = "评了决策样本" if n == raters else f"在决策样本中回答了{title(fewest['criterion'], 'zh')}"
    return (f"只有 {n} 位评分者{who}；针对一般评分者的结论至少需要 {g.get('min_raters', 10)} 位（门槛 min_raters）"
            + ("" if getattr(v, "interim", True) else "，因此本研究无法判定它；有更多评分者的新研究可以")
            + "。" + _intervals(v, g, raters))


def _intervals(v, g: dict, raters: int) -> str:
    """The fidelity condition's reason from its criteria's intervals against the margin, in Chinese."""
    rows, margin = v.fidelity, g.get("margin", 0.05)
    unrated = unjudged(rows)  # as verdict.decide: no ratings, or unanswered by part of the sample
    judged = [r for r in rows if r["criterion"] not in unrated]
    missing = (f"；{'、'.join(title(c, 'zh') for c in unrated)} 在决策样本中没有评分或只有部分评分回答了它"
               "（评分存入之后才登记的标准），无法判定" if unrated else "")
    # a criterion passed at an earlier look stays passed (group sequential): neither below nor short, but said so
    open_rows = [r for r in judged if not r.get("passed_at_look")]
    below = [title(r["criterion"], "zh") for r in open_rows if r["ci_high"] < -margin - 1e-12]
    short = [title(r["criterion"], "zh") for r in open_rows if r["ci_low"] < -margin]
    fewer = {r["criterion"] for r in narrower_passes(g, judged, raters)}
    earlier = [f"{title(r['criterion'], 'zh')}（第 {r['passed_at_look']} 次查看"
               + (f"，{r['passed_raters']} 位评分者的答案" if r["criterion"] in fewer else "") + "）" for r in judged
               if r.get("passed_at_look") and r.get("passed_at_look") != r.get("look")]
    if earlier:
        missing += f"；在更早的查看中已通过、按序贯查看的规则保持通过：{'、'.join(earlier)}"
    if worst := max((int(r.get("worst_case_pairs") or 0) for r in rows), default=0):  # verdict.worst_case
        missing += (f"；决策样本中有 {worst} 对结果未知（曾被评分者跳过或放下未评、之后只由金标检查剔除的评分者评过，"
                    "或因重复已揭晓的文本而不给任何评分者）：按最坏情况计入区间（下限按 −1、上限按 +1）")
        if given := max((int(r.get("given_up_pairs") or 0) for r in rows), default=0):  # the organiser's, apart
            missing += f"，其中 {given} 对是组织者在现有评分者都不能再评时放弃的（`evalkit pairs give-up`）"
    look = getattr(v, "look", None) or {}
    if look.get("of", 1) > 1 and not look.get("final", True):  # a look before the last, as verdict.decide says it
        if below:  # it stops the study
            return f"{'、'.join(below)} 的区间上限也低于 {_n(-margin)}（容差）：assisted 明显更差" + missing
        if short:
            return (f"第 {look['index']} 次查看尚无定论：{'、'.join(short)} 仍未定（区间下限低于 {_n(-margin)}，上限高于它）"
                    + missing)
    if short:  # every criterion that failed, as the English names them, those clearly worse apart
        return (f"{'、'.join(short)} 的区间下限低于 {_n(-margin)}（容差）：不能排除 assisted 更差"
                + (f"；其中 {'、'.join(below)} 的区间上限也低于 {_n(-margin)}：assisted 明显更差" if below else "")
                + missing)
    if unrated:
        return f"其余每个标准的区间下限都不低于 {_n(-margin)}（容差）" + missing
    if earlier:
        return f"每个标准都已通过：本次查看的区间下限不低于 {_n(-margin)}（容差），或在更早的查看中已通过" + missing
    return f"每个标准的区间下限都不低于 {_n(-margin)}（容差）" + missing


def _basis_zh(s) -> str:
    """What the speed-up rests on (timing.bench_basis, in Chinese): how many benchmarks and rounds it pools, or the
    pool's single runs."""
    from ..aggregate.timing import POOL_SOURCE

    ids = getattr(s, "benchmark_ids", None) or []
    if s.source == POOL_SOURCE:  # timing.bench_basis: the pool's runs, deciding only under a gate of old
        return ("（配对池的单次运行，不是基准测试协议" + ("；仅供参考，不参与判定" if getattr(s, "bench_only", False) else "")
                + _warmup_zh(s) + "）")
    if s.source != "benchmark" or not ids:
        return ""
    rounds = f"，共 {s.rounds} 轮" if getattr(s, "rounds", 0) else ""
    rounds += f"，在 {device} 上" if (device := getattr(s, "deploy_device", "")) else ""
    further = ""
    if n := getattr(s, "rounds_further", 0):  # timing.bench_basis: measured after the deciding rounds
        further = (f"；此后另测 {n} 轮（基准测试 {', '.join(map(str, getattr(s, 'further_benchmark_ids', [])))}），"
                   "不参与判定")
    return f"（{len(ids)} 次基准测试：{', '.join(map(str, ids))}{rounds}{further}）"


def _warmup_zh(s) -> str:
    """timing.warmup_words, in Chinese: whether the pool's timed runs had the untimed warm-up of both paths."""
    cold = getattr(s, "pools_unwarmed", None)
    if cold is None:
        return ""
    if not cold:
        return "；两条路径先各做一次不计时的预热，并轮流先运行"
    return (f"；配对池 {', '.join(map(str, cold))} 没有记录不计时的预热（在 evalkit 加入预热之前生成：进程的首次调用，"
            "即一次 ordinary 运行，承担了一次性开销，且 ordinary 总是先运行）")


def _pool_zh(s) -> str:
    """verdict._pool_figure, in Chinese: the pool's figure shown while the benchmark rounds are missing."""
    from ..aggregate.timing import POOL_SOURCE
    from ..stats.speedup import ratio_text

    if s.source != POOL_SOURCE or s.speedup is None:
        return ""
    ci = s.speedup_ci95
    return (f"；配对池单次运行测得 {ratio_text(s.speedup)}×"
            + (f"（95% 置信区间下限 {ratio_text(ci[0])}）" if ci else "") + _warmup_zh(s)
            + "，仅供参考，不参与判定：门槛（speed_source = \"benchmark\"）只以基准测试的轮次判定，且在查看之前已固定，"
            "因此看过配对池的数字后再运行基准测试不构成第二次查看")


def _on_device_zh(s) -> str:
    """verdict._on_device, in Chinese."""
    device = getattr(s, "deploy_device", "")
    return f"在 {device} 上（门槛的 speed_device：其他设备上的基准测试不参与判定）" if device else ""


def _unknown_zh(s) -> str:
    """verdict.device_unknown_text, in Chinese ('' where the deployment device is known)."""
    from ..aggregate.data import UNRECORDED

    if not (unknown := getattr(s, "device_unknown", "")):
        return ""
    seen = "没有记录设备（旧版 evalkit 生成的配对池）" if unknown == UNRECORDED else f"在多种设备布局上运行（{unknown}）"
    return (f"无法判定：本研究的第一个配对池（实验 {s.pool_id}）{seen}，而门槛的 speed_device = \"pool\" 要从它得知速度结论"
            "针对的设备，因此无法确认哪次基准测试在部署的硬件上运行，也不会猜测；门槛在研究的第一个配对池生成时冻结，"
            "所以请在那之前在 configs/gate.toml 中设定 speed_device = \"cpu\"、\"cuda\" 或 \"mps\"；对本研究，请在该门槛下"
            "开始另一个研究（`evalkit generate --until-planned --new-study NAME`，或新的 `--db`），并在那里运行基准测试")


def _speed(agg, g: dict) -> str:
    s = agg.speed
    if unknown := _unknown_zh(s):
        return unknown
    if disagree := getattr(s, "devices_disagree", ""):  # verdict.speed_condition's reason, in Chinese
        return (f"无法判定：本研究模型对的基准测试在不同类型的设备上运行（{disagree}），计时不能合并，也不会挑选其中之一；"
                "速度结论只针对一种设备：在新的数据库（`--db`）中重新开始研究，并只在该类设备上运行 `evalkit bench`")
    from ..aggregate.timing import rounds_needed

    if missing := rounds_needed(s):  # verdict.needs_rounds_text, in Chinese
        return (f"尚未判定：门槛计划的 {s.rounds_planned} 轮基准测试（speed_rounds）已测 {s.rounds} 轮；由最先的 "
                f"{s.rounds_planned} 轮判定，之后测的轮次不参与：{_on_device_zh(s)}运行 `evalkit bench --rounds "
                f"{max(missing, 2)}` 补足还差的 {missing} 轮；请在计划样本评完之前补足（缺少这些轮次时冻结的结论为“证据不足”）"
                + _pool_zh(s))
    from ..aggregate.verdict import all_fell_back

    if s.speedup is None and all_fell_back(s):  # verdict.speed_condition: it ran, and every assisted call failed
        return (f"没有测得加速比：所有 {s.fallback_runs} 次 assisted 运行都失败并回退到目标模型单独生成，回退从不算作辅助生成；"
                "请修复原因（`evalkit check`）后重新运行 `evalkit bench`")
    if s.speedup is None:
        return "没有在可比的输出上测得加速比（运行 `evalkit bench`）"
    from ..stats.speedup import ratio_text

    from ..aggregate.verdict import MIN_COMPARABLE_SHARE

    ci = s.speedup_ci95
    minimum = g.get("min_speedup_ci_low", 1.1)
    from ..generation.speed import no_spread

    # as verdict.speed_condition: the comparable pairs among the matched ones, and an interval of zero width said
    text = (f"{ratio_text(s.speedup)}×" + (f"（95% 置信区间 {ratio_text(ci[0])}–{ratio_text(ci[1])}）" if ci else
                                          "（没有区间）")
            + f"，基于 {s.matched_pairs} 对匹配输出中的 {s.comparable_pairs} 对可比输出{_basis_zh(s)}"
            + ("；区间宽度为零：计时没有任何波动" if no_spread(ci) else "") + f"；门槛：区间下限至少 {minimum:.2f}")
    # what verdict.speed_condition decides on besides the interval: the comparable share and tokens per second
    if s.matched_pairs and s.comparable_pairs < MIN_COMPARABLE_SHARE * s.matched_pairs:
        text += (f"。但 {s.matched_pairs} 对匹配输出中只有 {s.comparable_pairs} 对可比（不足 "
                 f"{MIN_COMPARABLE_SHARE:.0%}），加速比只反映被保留的输出，无法判定：让输出可比后重新测速")
    elif s.throughput_ci95 is None:
        text += "；每秒 token 数之比没有测得，无法判定"
    else:
        tps = s.throughput_ci95[0]
        fell = getattr(s, "fallback_runs", 0)  # timing.without_fallbacks, in Chinese
        text += (f"；全部匹配输出{f'（不含回退的 {fell} 次 assisted 运行）' if fell else ''}的每秒 token 数之比 "
                 f"{ratio_text(s.throughput_ratio)}×，区间下限 {ratio_text(tps)}"
                 + ("（低于门槛：只在可比输出上更快，按每个 token 并不更快）" if tps < minimum <= (ci[0] if ci else 0)
                    else ""))
        if (ci and min(ci[0], tps) < minimum <= min(s.speedup or 0, s.throughput_ratio or 0) and s.source == "benchmark"
                and not tps < minimum <= ci[0]):
            # verdict.speed_condition: the estimates reach the minimum, the interval does not
            text += ("；估计值达到门槛，但区间没有：区间的单位是基准测试的轮次（每条路径一个新进程），门槛的 speed_rounds 在第一次"
                     "基准测试之前就已固定，决定由多少轮判定" + ("（之后测的轮次不参与，所以重新运行 `evalkit bench` 不会改变"
                                                   "结果；请在下一个研究的门槛中计划更多轮次）"
                                                   if getattr(s, "rounds_planned", 0) else ""))
    if fell := getattr(s, "fallback_runs", 0):  # verdict._as_deployed, in Chinese
        dep = getattr(s, "deployed_ci95", None)
        text += (f"；{fell} 次 assisted 运行回退（fallback），不计入上述数字，因此高估了 assisted 配置的实际速度"
                 + (f"；计入回退的全部等待时间（实际部署）：{ratio_text(s.deployed_speedup)}×，区间下限 "
                    f"{ratio_text(dep[0])}" + ("（低于门槛）" if dep[0] < minimum else "") if dep else ""))
    return text


def _memory(agg, g: dict) -> str:
    mem = agg.speed.extra_memory_mb
    if unknown := _unknown_zh(agg.speed):  # verdict: the memory condition follows the speed's device rule
        return unknown + (f"（测得草稿模型额外占用 {mem:.0f} MB，仅供参考，不参与判定）" if mem is not None else "")
    if mem is None:
        from ..aggregate.notes import Note
        from ..aggregate.timing import NEVER_RAN

        note = getattr(agg.speed, "memory_note", "")
        if NEVER_RAN in note and isinstance(note, Note):  # why, with its cause, said as the note says it
            return f"草稿模型的额外内存{note_zh(note)}，修正原因后重新运行 `evalkit bench`"
        if NEVER_RAN in note:  # a benchmark exists: "run bench" alone would hide that its assisted runs all failed
            # (a decision frozen by an older evalkit stored why as plain text)
            return (f"草稿模型的额外内存未测量：基准测试 {agg.speed.experiment_id} 的 assisted 路径从未运行（它的 assisted "
                    "运行全部失败并回退，原因见下方英文原文），修正原因后重新运行 `evalkit bench`")
        if note:  # timing._memory_note: a benchmark exists, and stored no timed run with a memory reading
            ids = ", ".join(map(str, getattr(agg.speed, "benchmark_ids", None) or [agg.speed.experiment_id]))
            return (f"草稿模型的额外内存未测量：基准测试 {ids} 没有两条路径都带内存读数的计时运行"
                    "（修正后重新运行 `evalkit bench`）")
        return "草稿模型的额外内存未测量（运行 `evalkit bench`）"
    # what was measured, as the English line says: GPU memory (显存) only where the weights sat on CUDA; on a CPU
    # (the offline demo) the process's RAM (demo audit L1: "额外显存" read as a GPU figure there)
    basis = ("GPU 显存：加载后分配的 CUDA 内存" if "CUDA" in (agg.speed.extra_memory_basis or "")
             else "进程内存：计时运行中的峰值 RSS")
    if len(compared := getattr(agg.speed, "memory_benchmark_ids", None) or []) > 1:  # as timing.memory_source says
        basis += f"；取 {len(compared)} 次基准测试中最大的数字，即基准测试 {agg.speed.memory_benchmark_id} 的"
    return f"草稿模型额外占用 {mem:.0f} MB（{basis}；上限 {g.get('max_extra_memory_mb', 1024.0):.0f} MB）"


# verdict.DECIDED, in Chinese: what "decided" means for a pair
DECIDED_ZH = "输出不同的评分对有 {each}当前评分即判定；两条路径输出相同的评分对不经评分者判定、差值记为 0，按配对池中的比例计入"


def _planned(c, g: dict, rows: list[dict], agg=None) -> str:
    """verdict.decide's planned-sample reason, in Chinese: before it is decided, how many pairs are (at a look before
    the last, of at most how many); once decided, what the decision uses, the rated pairs and the identical ones
    (decided without raters) apart."""
    planned = g.get("planned_pairs", 0)
    per_pair = g.get("min_ratings_per_pair", 1)
    each = (f"{per_pair} 条（随机抽取的 {g['second_rating_share']:.0%} 的评分对取 2 条）"
            if per_pair == 1 and g.get("second_rating_share") else f"{per_pair} 条")
    if not c.ok:
        return _undecided(g, planned, each, agg)
    same = max((int(r.get("identical", 0)) for r in rows), default=0)
    unknown = max((int(r.get("worst_case_pairs") or 0) for r in rows), default=0)
    if same and planned - same - unknown <= 0 and not unknown:
        return f"计划的 {planned} 对已全部判定：都是两条路径输出相同的评分对，不经评分者、差值记为 0，不需要评分"
    # as the English: the pairs without an outcome hold places in the order but no ratings, so never "rated"
    given = max((int(r.get("given_up_pairs") or 0) for r in rows), default=0)
    aside = (f"，以及 {unknown} 对没有结果的评分对（没有计入的评分），按最坏情况计入"
             + (f"（其中 {given} 对是组织者放弃的）" if given else "") if unknown else "")
    rated = f"{planned - same - unknown} 对评过的评分对，每对取最先的 {each}评分" + aside
    if not same:
        return f"计划的 {planned} 对已全部判定：决策用队列随机顺序中最先的 {planned} 对：{rated}"
    return (f"计划的 {planned} 对已全部判定：决策用队列随机顺序中最先的 {rated}"
            f"，以及 {same} 对两条路径输出相同的评分对（不经评分者，差值记为 0）")


def _undecided(g: dict, planned: int, each: str, agg) -> str:
    """verdict.decide's planned-sample reason while the sample is not decided, in Chinese, with the English's counts:
    the decided pairs (the aggregate's counts, as the verdict took them), at a look before the last of how many."""
    counts = agg.tables.get("counts") if agg is not None else None
    if counts is None or not len(counts):
        return f"计划的 {planned} 对尚未全部判定"
    complete, pool, same = (int(counts[k].iloc[0]) for k in ("complete_pairs", "pairs", "identical_pairs"))
    look = agg.verdict.look
    if planned <= 0:
        return ("中期查看，不是结论：没有计划样本量（门槛中 planned_pairs = 0）；请在评分开始前运行 `evalkit plan` 并冻结它"
                f"给出的 planned_pairs 行（{pool} 对中有 {complete} 对已有 {each}当前评分）")
    if look and look.get("of", 1) > 1 and not look.get("final", True):  # a look before the last
        return (f"第 {look['index']} 次查看（最多 {look['of']} 次，在 {look['pairs']} 对已判定时，区间水平 "
                f"{look['level']:.4%}）：已判定 {min(complete, look['pairs'])} 对，最多 {planned} 对（"
                + DECIDED_ZH.format(each=each) + "）；研究在某次查看中每个标准都已通过、或有一个标准低于容差时停止")
    where = "；还没有到达任何一次查看" if g.get("monitoring", "fixed") != "fixed" and look is None else ""
    if same:
        return f"中期查看，不是结论：计划的 {planned} 对中已判定 {complete} 对（{DECIDED_ZH.format(each=each)}）{where}"
    return f"中期查看，不是结论：计划的 {planned} 对中有 {complete} 对已有 {each}当前评分{where}"


# aggregate.ppi.WHY, in Chinese: why the pre-screen was not used, key by key, with the same figures
WHY_ZH = {
    "unranked": ("研究的 {pairs} 对中有 {unranked} 对不是按随机顺序分发给评分者的（在 evalkit 存储随机顺序之前生成的配对池），"
                 "因此评过的评分对未必是配对池的随机子集"),
    "other rules": ("配对池中有 {missing} 对没有预检规则版本 {rules} 的答案（该版本在研究的第一个配对池生成时随研究冻结），"
                    "而本 evalkit 的规则（版本 {current}）不能代替：研究开始后修改的规则可能是按它的评分调出来的（配对池在"
                    "加入时由生成它的 evalkit 预检：请用本研究的规则向它添加配对池，或在新规则下开始新的研究，"
                    "`evalkit generate --new-study NAME`）"),
    "unjudged": "预检没有判断每一对评过的评分对",
    "no outcome": ("决策样本中有 {unknown} 对没有结果（曾被评分者跳过或放下、之后只由金标检查剔除的评分者评过，因重复已揭晓的"
                   "文本而不给任何评分者，或组织者在现有评分者都不能再评时放弃），因此评过的评分对不是配对池的随机子集"),
}


# aggregate.notes.NOTES, in Chinese: each note beside the verdict, key by key, with the same figures (a figure that is
# a Note is said in Chinese too; one named *_en is a text from outside the aggregate, quoted as the English original)
NOTES_ZH = {
    "study shown": "这里显示的是{study}；用 `--study 名字` 查看其他研究（{others}）",
    "study one": "研究“{name}”",
    "study of": "研究“{name}”{latest}（本数据库 {of} 个研究中的第 {number} 个）",
    "study latest": "（最新的）",
    "study earlier": "",
    "standing open": "研究“{name}”没有结论：其研究评分对有 {ratings} 条评分，计划 {planned} 对，只有中期查看",
    "standing at look": "研究“{name}”在第 {index} 次查看给出定论时决定 {decision}（{completed}）",
    "standing complete": "研究“{name}”在其计划样本评完时决定 {decision}（{completed}）",
    "standings": "{one}；{rest}",
    "interim looks": ("中期查看，不是结论：门槛的查看还没有一次给出定论；之后的查看可能给出（{plan}），一旦给出，app 就不再分发"
                      "评分对；在其他任何时候因为结果看起来不错而停止，正是计划所禁止的"),
    "interim fixed": ("中期查看，不是结论：在计划数量的评分对评完之前，结论保持“证据不足”（或因速度、内存而“不保留”）；"
                      "因为结果看起来不错而提前停止，正是计划所禁止的"),
    "plan fixed": "固定设计：在 {planned} 对已判定的评分对时查看一次",
    "plan looks": "{kind}：最多 {looks} 次查看，大约每 {every} 条评分一次（已判定的评分对数：{sizes}），{spend}",
    "spend alpha": "O'Brien-Fleming 型 Lan-DeMets alpha 花费",
    "spend betting": "随时有效的下注置信序列",
    "untakeable": ("下一次查看（{target} 对已判定的评分对）需要的 {stuck} 对，研究现有的 {raters} 位评分者都不能再评：每位都已"
                   "评过或跳过、见过其中的文本，或把它保留到上限，所以研究会等它们，按现状不会完成。请邀请能评判它们的评分者"
                   "（`evalkit raters add 名字`；开放注册也能让人加入），或放弃它们（`evalkit pairs give-up --untakeable "
                   "--reason 原因`：每对按最坏情况计入，下限按 −1、上限按 +1，查看继续）。决定从不因内容而去掉某一对："
                   "那样评判的是评分者挑选的输出"),
    "untakeable share": ("下一次查看（{target} 对已判定的评分对）需要的 {stuck} 对，研究现有的 {raters} 位评分者都不能再评："
                         "每位都已评过或跳过、见过其中的文本、把它保留到上限，或已达到自己的份额（app.max_ratings_per_rater"
                         " = {share}），所以研究会等它们，按现状不会完成。请邀请能评判它们的评分者（`evalkit raters add "
                         "名字`；开放注册也能让人加入），或提高 app.max_ratings_per_rater，或放弃它们（`evalkit pairs "
                         "give-up --untakeable --reason 原因`：每对按最坏情况计入，下限按 −1、上限按 +1，查看继续）。决定"
                         "从不因内容而去掉某一对：那样评判的是评分者挑选的输出"),
    "waiting": ("队列随机顺序中靠前的 {waiting} 对还没有评完{why}，因此其后已评的 {held} 对在它们评完之前不计入下一次查看"
                "（{target} 对已判定的评分对）。决定取该顺序中最先的评分对，一对不少：去掉评分者跳过或评得最久的评分对，"
                "评判的就是评分者挑选的输出，而不是配对池的"),
    "waiting skipped": "（其中 {skipped} 对被跳过，共跳过 {skips} 次：用 `evalkit raters add` 邀请的、能评判它们的评分者会先拿到它们）",
    "waiting held": "（在某位评分者的屏幕上，或还没有分发到）",
    "fill why pool": "计划的检验力所假定的配对池，门槛 planned_pool：预检判断配对池中的每一对",
    "fill why reserve": "计划的评分对加上 {reserve} 的余量",
    "pool less power": ("配对池有 {have} 对研究评分对，少于计划的检验力所假定的 {pool} 对（门槛 planned_pool：预测驱动推断"
                        "使用预检对配对池中每一对的答案），因此研究能给出结论，但检验力较低：`evalkit generate "
                        "--until-planned` 会添加样本，直到配对池有 {target} 对"),
    "pool below planned": ("配对池有 {have} 对研究评分对，少于计划的 {planned} 对，因此本研究无法给出结论：`evalkit generate "
                           "--until-planned` 会添加样本，直到配对池有 {target} 对（{why}）"),
    "pool population": ("预检的总体有 {reach} 对研究评分对，少于计划的检验力所假定的 {pool} 对（门槛 planned_pool）：配对池的 "
                        "{have} 对中有 {later} 对是在评分开始后加入的，排在队列顺序中每一对更早的评分对之后，只有样本到达它们"
                        "时才加入总体，因此研究能给出结论，但检验力较低（下一个研究请在评分开始前生成计划的配对池）"),
    "conditions not judged": "速度和内存条件未判定：{reason}",
    "device unknown": ("本研究的第一个配对池（实验 {pool}）{seen}，而门槛的 speed_device = \"pool\" 要从它得知速度结论针对的"
                       "设备，因此无法确认哪次基准测试在部署的硬件上运行，也不会猜测；门槛在研究的第一个配对池生成时冻结，"
                       "所以请在那之前在 configs/gate.toml 中设定 speed_device = \"cpu\"、\"cuda\" 或 \"mps\"；对本研究，"
                       "请在该门槛下开始另一个研究（`evalkit generate --until-planned --new-study NAME`，或新的 `--db`），"
                       "并在那里运行基准测试"),
    "device unrecorded": "没有记录设备（旧版 evalkit 生成的配对池）",
    "device layouts": "在多种设备布局上运行（{layouts}）",
    "memory never ran": "未测量：基准测试 {bench} 的 assisted 路径从未运行（它的全部 {runs} 次 assisted 运行都失败并回退{cause}）",
    "memory cause": "；{cause}",
    "memory no cause": "",
    "memory no readings": "未测量：基准测试 {bench} 没有两条路径都带内存读数的计时运行",
    "memory whys": "{one}；{rest}",
    "memory unmeasured": ("草稿模型的额外内存{why}：请修正原因，在计划样本评完之前重新运行 `evalkit bench`，"
                          "因为那时决定会冻结届时测得的加速比和内存"),
    "no benchmark": ("还没有基准测试：请在计划样本评完之前{where}运行 `evalkit bench`，因为那时决定会冻结届时测得的加速比和"
                     "内存"),
    "no benchmark left out": ("还没有测量本研究所评内容的基准测试（有一次被排除，见下文）：请在计划样本评完之前{where}运行 "
                              "`evalkit bench`，因为那时决定会冻结届时测得的加速比和内存"),
    "on device": "在 {device} 上",
    "decision frozen": ("决定已冻结：{when}（评分 {rating}，{completed}；存入于 {stored}，门槛 {gate}）：{pairs} 对评分对的 "
                        "{ratings} 条评分，金标检查剔除 {left_out} 位评分者；其后存入的 {later} 行评分记录（评分、更正、"
                        "跳过）和之后评满的 {later_pairs} 对只出现在表格和决定之后的查看中"),
    "frozen at look": "在最多 {of} 次查看中的第 {index} 次（{pairs} 对已判定的评分对），这次查看给出了定论",
    "frozen complete": "在计划样本评完时",
    "rating stopped": ("评分在决定时停止：研究的评分对已关闭，配对池中 {unrated} 对输出不同的评分对从未被评，app 告诉评分者"
                       "不再需要评分"),
    "not measured": ("计划样本评完时{what}没有测得：决定永远保持这一点；之后的基准测试测得的结果见决定之后的查看"),
    "speed-up": "加速比",
    "memory": "额外内存",
    "speed-up and memory": "加速比和额外内存",
    "gold moved": ("决定之后，金标检查会剔除 {now} 位评分者，而不是 {then} 位：决定保持评完时冻结的名单（表格也是）"),
    "figures weighed": ("这里显示的速度和内存数字是决定所依据的；之后测得的（见决定之后的查看和计时表格）：{line}{memory}"),
    "line": ("可比的 {comparable} 对上的加速比 {speedup}{rest}；全部 {matched} 对匹配输出上 assisted 相对 ordinary 的每秒 "
             "token 数之比（不按长度或停止原因筛选{without}）{tps}{gap}{theory}{counts}"),
    "line empty": "",
    "line fig none": "未测得",
    "line fig": "{ratio}×（[{low}, {high}]）{flat}",
    "line fig no interval": "{ratio}×（没有区间）",
    "line flat": "（区间宽度为零：计时没有任何波动，并非确定）",
    "line rest": "（{words}）",
    "line gap": "；两个 95% 区间不重叠",
    "line theory": "；按测得的接受率、草稿长度和耗时比，Leviathan 等人的公式预测 {theory}×",
    "line counts": "；两种接受计数（候选生成器、目标模型前向次数）在部分 assisted 运行上不一致",
    "excluding one": "，不含回退的 {n} 次 assisted 运行",
    "excluding many": "，不含回退的 {n} 次 assisted 运行",
    "left out": "{parts}被排除{after}",
    "left out parts": "{one}和{rest}",
    "left out not comparable": "{matched} 对匹配输出中有 {n} 对不可比（停止原因不同，或长度差超出容差）",
    "left out fell one": "{fell} 次回退的 assisted 运行",
    "left out fell many": "{fell} 次回退的 assisted 运行",
    "left out deployed": "；按实际部署、每次回退计入全部等待时间：{ratio}×{ci}",
    "left out deployed ci": "（95% 置信区间 {low} 至 {high}）",
    "left out overstates": "，因此高估了 assisted 配置的实际表现",
    "figures weighed no speed-up": ("这里显示的速度和内存数字是决定所依据的；之后测得的（见决定之后的查看和计时表格）："
                                    "没有加速比{memory}"),
    "memory since": "，草稿模型额外占用 {mb:.0f} MB",
    "gold frozen": ("决定时的金标检查（min_gold_accuracy {min_gold:.2f}）：没有剔除评分者；金标表格显示每位评分者现在的"
                    "准确率"),
    "gold not applied": "金标检查（min_gold_accuracy {min_gold:.2f}）没有执行：还没有评分者评过金标评分对",
    "gold left out": ("金标检查：{checked} 位受检评分者中有 {left_out} 位低于预先登记的准确率 {min_gold:.2f}，连同她们对研究"
                      "评分对的 {ratings} 条评分，从每个表格和结论中剔除（评分仍然保存，导出也带着它们）"),
    "gold all": "金标检查：全部 {checked} 位受检评分者都达到预先登记的准确率 {min_gold:.2f}",
    "gold unchecked": "金标检查：{unchecked} 位评分者没有遇到金标评分对，无法检查；保留她们",
    "no gate": ("没有冻结了发布门槛的实验：`evalkit generate` 生成配对池并同时冻结门槛文件；然后评分者在 app 中评分"
                "（`evalkit serve`）"),
    "gate legacy": "门槛由不认识 `{key}` 的 evalkit 冻结：它保持当时的含义（{key} = {value}{meaning}）",
    "legacy speed_rounds": "：决定时已存入的每一轮基准测试都合并计入，不论重跑了多少次",
    "legacy speed_source": "：在存入本研究模型对的基准测试之前，由配对池的单次运行判定速度条件，之后由基准测试的轮次取代",
    "legacy speed_device": "：本研究模型对在任何设备上的基准测试都参与判定，不论配对池在哪里运行",
    "legacy other": "",
    "gate changed": ("门槛文件 {path} 在实验 {experiment}{where}开始后被修改（冻结时 {frozen}，现在 {now}）：使用冻结的版本"),
    "gate gone": "门槛文件 {path} 已不存在；使用随实验 {experiment}{where}冻结的版本",
    "gate study": "（{study}）",
    "gate no study": "",
    "roster as planned": "评分者名单：{spread}；计划的检验力按 {planned} 位评分者估算（门槛 planned_raters）：与计划相符",
    "roster decided": "评分者名单：{spread}；计划的检验力按 {planned} 位评分者平均分担评分估算（门槛 planned_raters）",
    "roster short": ("评分者名单：{spread}；计划的检验力按 {planned} 位评分者平均分担评分估算（门槛 planned_raters）。评分者"
                     "更少，或人数相同但分担不均，结论的错误率不变，但检验力下降：请邀请更多评分者，并用 "
                     "app.max_ratings_per_rater 让份额保持均匀"),
    "raters spread": ("{rated} 位评分者评过分，她们的评分分布的均匀程度相当于 {even:.1f} 位评分者平均分担（区间中评分者部分的"
                      "自由度约为 {dof:.0f}）"),
    "one rater": "1 位评分者评过分",
    "raters differ": ("评分者对某一条路径的判断差别很大：按评分，评分者各自的 assisted − ordinary 通过率在评分者间的标准差"
                      "平均为 {mean:.1f} 个百分点（各标准：{each}），超出偶然（F = {f:.2f}，置换检验 p = {p:.3f}）。在所测"
                      "情景中，从 {limit:.1f}（logit 尺度上评分者 × 路径的标准差 {logit}）起，针对一般评分者的区间被测得"
                      "会让一个真实下降了容差的标准通过，比例超过单侧 2.5%（README，“Where raters disagree widely about one "
                      "path”）。此时的“保留”比它标称的错误率更弱：更多评分者能缩小差距（logit 标准差 1.5 时测得：10 位评分"
                      "者 5.7%，40 位 2.7%），或把结论只针对这些评分者（门槛 claim）"),
    "passed over": ("结论所依据的 {head} 对评过的评分对中，有 {passed} 对曾被某位评分者放过（跳过，或保留后放下），之后才由"
                    "另一位评分者评分：样本仍是队列随机顺序的开头，但区间假定评分对的评分者不是按评分对的内容选定的，而放过"
                    "一对的评分者是在选择；在评分者对两条路径判断不同时，这些评分对带有专评别人回避之对的评分者的判断（决定"
                    "不变）"),
    "time on task": ("{timed} 条计时的评分中有 {fast} 条用时少于 {floor:g} 秒（app.min_seconds_on_task），来自 {raters} 位"
                     "评分者：见 time_on_task 表格"),
    "figure speed-up": "加速比",
    "figure tps": "每秒 token 数之比（{path} 相对 ordinary）",
    "prompt pairs": "{prompt}（其 {n} 对中的 {k} 对）",
    "prompts": "{one}、{rest}",
    "speed-up unformed": "加速比：某次用时为 0 或不是数字时无法计算用时之比，因此排除了提示词 {prompts}",
    "tps unformed": ("{what}：ordinary 的每秒 token 数为 0（输出了 0 个新 token）或不是数字时无法计算比值，因此排除了提示词 "
                     "{prompts}"),
    "one round": ("{what}：没有区间，因为它的匹配运行对来自 {rounds} 轮工作进程，而区间至少需要 2 轮（每条路径只有一个进程，"
                  "看不出进程之间的差别）；请重新运行 `evalkit bench`"),
    "spread of": "{what}（[{low}, {high}]）",
    "no spread": ("{figure}：95% 区间宽度为零，因为计时没有任何波动（同一提示词的每一对用时都相同，合成或取整的计时就是这样），"
                  "并不是因为数字确定；请先计时真实的运行（`evalkit bench`）再参考它"),
    "no spread both": ("{first} 和 {second}：95% 区间宽度都为零，因为计时没有任何波动（同一提示词的每一对用时都相同，合成或"
                       "取整的计时就是这样），并不是因为数字确定；请先计时真实的运行（`evalkit bench`）再参考它们"),
    "single pair": ("{what}：没有区间，因为提示词 {prompts} 只有一对匹配运行，而区间在每个提示词内重抽样（一对显示不出它的"
                    "波动）；请用 `evalkit generate --samples 2` 或更多生成配对池，或运行 `evalkit bench`"),
    "single pair both": ("{what}：没有区间，{also} 也没有，因为提示词 {prompts} 只有一对匹配运行，而区间在每个提示词内重抽样"
                         "（一对显示不出它的波动）；请用 `evalkit generate --samples 2` 或更多生成配对池，或运行 `evalkit bench`"),
    "pairs unformed": "{what}：排除了 {unformed} 对没有用时或 token 数的匹配运行",
    "prompts unformed": "{what}：排除了提示词 {prompts}：没有一对匹配运行同时有用时和 token 数",
    "cause": "原因（{share}）：{error}{where}：“{message}”{others}",
    "cause every": "全部",
    "cause share": "{total} 次中的 {runs} 次",
    "cause stage": "（在 {stage} 阶段）",
    "cause no stage": "",
    "cause no class": "错误",
    "cause others": "；另有 {others} 种原因（见 generations.error_message）",
    "cause no others": "",
    "speed figure": "速度数字：{text}",
    "speed figure quoted": "速度数字（英文原文）：{text_en}",
    "bench other device": ("基准测试 {bench} 被排除，不参与判定：{elsewhere}：它的数字描述的是{which}硬件，仅供参考，从不参与"
                           "判定；{run}"),
    "other hardware": "其他",
    "unknown hardware": "未知的",
    "bench mismatch": "基准测试 {bench} 被排除：它测量的不是本研究所评的内容（{why}）",
    "order imbalance": ("参与判定的 {rounds} 轮基准测试中，两条路径按给定顺序开始的有 {given} 轮，按相反顺序的有 {reversed} 轮"
                        "（ABBA 在成对的轮次上使两者平衡），因此机器速度在各轮之间的漂移可能偏向一条路径；偶数的 "
                        "speed_rounds 且没有失败的工作进程能保持平衡"),
    "workers failed": ("基准测试 {bench} 的 {total} 个工作进程中有 {failed} 个失败（错误记录在 bench_processes 中）：它的数字"
                       "只基于其余进程的运行，不是完整的协议；请重新运行 `evalkit bench`"),
    "fell back": "{runs} 次 assisted 运行回退（fallback）；它们不算作辅助生成",
    "fell back why": "{runs} 次 assisted 运行回退（fallback）；它们不算作辅助生成；{cause}",
    "fell back why quoted": "{runs} 次 assisted 运行回退（fallback）；它们不算作辅助生成；原因（英文原文）：{cause_en}",
    "pool speed reported": ("显示的加速比来自配对池的单次运行，仅供参考，不参与判定：门槛只以 `evalkit bench` 的轮次判定"
                            "（speed_source）；请运行它"),
    "pool speed": "加速比取自配对池的单次运行：运行 `evalkit bench` 以得到协议规定的数字",
    "figures disagree": ("速度数字不一致：可比评分对上的加速比，与全部匹配评分对（不按 assisted 输出的长度或停止原因筛选）的"
                         "每秒 token 数之比，两者的 95% 区间不重叠，因此可比评分对的选择对数字的影响超出偶然；请两者都看"
                         "（speedup 表格：speedup 和 tps_ratio）"),
    "batch sizes": "批量大小（基准测试 {bench}）：{answer}",
    "batch answer": "{main}{fell}{unrun}",
    "batch empty": "",
    "batch parts": "{one}{rest}",
    "batch no assisted": "无法与 assisted 比较：{why}",
    "batch all fell back": "全部 {runs} 次 assisted 运行都失败并回退到目标模型单独生成",
    "batch assisted absent": "这次基准测试没有运行 assisted 路径",
    "batch kinds": "运行来自不同类型的设备（{kinds}）",
    "batch fell back": ("；assisted 的数字不含它的 {total} 次运行中失败并回退到目标模型单独生成的 {fell} 次（从不算作 "
                        "assisted），因此高估了 assisted 配置的实际表现"),
    "batch partial": "；批量大小 {size} 没有比较：它在基准测试的部分工作进程中失败（“{why}”），所以它的运行只覆盖部分协议",
    "batch not measured": "；批量大小 {size} 没有测得：“{why}”",
    "batch tps": "assisted 在批量 1 时每秒生成 {tps} 个新 token",
    "batch ratio": "{ratio}×（[{low}, {high}]）",
    "batch ratio one call": "{ratio}×（没有区间：只有一次调用）",
    "batch no ordinary": "无法比较：ordinary 路径没有计时运行（{tps}）",
    "batch ordinary everywhere": ("在测得的每个批量大小（{sizes}）上，ordinary 的总吞吐量都超过 assisted：ordinary / "
                                  "assisted 的总每秒 token 数在 {crossover} 时为 {ratio}；{tps}"),
    "batch ordinary from": ("从批量大小 {crossover} 起，ordinary 的总吞吐量超过 assisted：ordinary / assisted 的总每秒 token "
                            "数在 {crossover} 时为 {ratio}；在它以下，批量 1 的 assisted {held}（{below}）；{tps}"),
    "batch held wins": "胜出",
    "batch held ties": "胜出或持平",
    "batch size ratio": "{size}：{ratio}",
    "batch size ratio unclear": "{size} 时 {ratio}",
    "batch assisted everywhere": ("在测得的每个批量大小（{sizes}）上，批量 1 的 assisted 都胜出：ordinary / assisted 的"
                                  "总每秒 token 数在 {size} 时为 {ratio}；{tps}"),
    "batch unclear": ("测得的批量大小（{sizes}）中，没有一个能让 ordinary 在该批量及所有更大批量上明显超过 assisted：在 "
                      "{unclear}，区间包含 1，或更大的批量结果相反；{tps}；请测更多重复或更大的批量"),
    "batch other device": "基准测试 {bench} 的批量大小被排除：{elsewhere}；{run}，并加上 `--batch-sizes`",
    "batch mismatch": "基准测试 {bench} 的批量大小被排除：它测量的不是本研究所评的内容（{why}）",
    "setting differs": "{setting} = {bench}，而本研究的配对池是 {pool}",
    "other weights": "{role} 的权重不同（摘要 {bench}，而本研究的配对池是 {pool}）",
    "other tokenizer": "{role} 的分词器不同（{key} 为 {bench}，而本研究的配对池是 {pool}）",
    "prompt edited": "提示词 {prompt} 是另一个{what}（哈希 {have}），不是{them}所回答的（哈希 {rated}）：它的文件在此期间被修改过",
    "what request": "请求",
    "them study pairs": "本研究的评分对",
    "not timed": "它没有计时本研究所评的提示词 {prompts}",
    "other prompts": ("它计时的提示词与基准测试 {first}（本研究模型对的第一次基准测试）不同（{differs}）：加速比是各提示词上"
                      "的中位数，所以它的轮次测的是另一个数字；请计时相同的提示词（`evalkit bench --prompt`，bench.prompts）"),
    "prompts also": "多了 {prompts}",
    "prompts not": "少了 {prompts}",
    "prompt sets": "{one}；{rest}",
    "bench no device": ("它没有记录设备（没有工作进程的设备布局、计时运行的设备，也没有兼容性记录的设备），因此无法确认它在 "
                        "{device} 上运行，而本研究的速度结论针对的正是它（门槛的 speed_device = \"{speed_device}\"）"),
    "bench device": ("它的设备是 {kinds}，而本研究的速度结论针对的是 {device}（{whose}：门槛的 speed_device = "
                     "\"{speed_device}\"{split}）"),
    "bench device pool": "即第一个配对池运行的设备类型",
    "bench device gate": "由门槛指定",
    "bench device split": ("；用 + 连接的设备类型表示目标模型或草稿模型的权重分布在多个设备上（device_map 的卸载，"
                           "models.draft_device），与其中任何一个单独都是不同的硬件"),
    "bench device one": "",
    "run on placed": ("请把权重分布在 {device} 上运行基准测试，与本研究的速度结论一致（models.device、models.device_map、"
                      "models.max_memory 和 models.draft_device 按配对池的配置或部署的配置设定）"),
    "run on": "请在 {device} 上运行基准测试（models.device = \"{device}\"）",
}


def note_zh(n) -> str:
    """One note beside the verdict in Chinese, from its key and figures (aggregate.notes.Note); a text that is no
    Note (none is, by tests/test_verdict_notes.py) is quoted as the English original."""
    from ..aggregate.notes import Note

    if not isinstance(n, Note):
        return f"（英文原文）{n}"
    return NOTES_ZH[n.key].format(**{k: note_zh(v) if isinstance(v, Note) else v for k, v in n.figures.items()})


def _agreement_zh(rows: list[dict]) -> str:
    """aggregate.ppi.sentence's agreement, in Chinese."""
    agree = "、".join(f"{title(r['criterion'], 'zh')} {r['prescreen_agreement']:.2f}" for r in rows
                     if r.get("prescreen_agreement") is not None)
    return f"；预检与评分者在决策样本上的一致率：{agree}" if agree else ""


def _why_not_zh(rows: list[dict]) -> str:
    """Why the pre-screen was not used (aggregate.ppi.sentence's first reason), in Chinese; a decision frozen before
    the reasons were kept as data (ppi_why) has its reason in English only, and says so."""
    for r in rows:
        if why := r.get("ppi_why"):
            return WHY_ZH[why["key"]].format(**{k: x for k, x in why.items() if k != "key"})
        if r.get("ppi_note"):
            return "原因见下方英文原文"
    return "没有可用的评分对"


def ppi_zh(rows: list[dict], g: dict) -> str:
    """aggregate.ppi.sentence, in Chinese: whether prediction-powered inference was used, on what, with which
    lambda, why not, the pre-screen's agreement with the raters, and the criteria that clear the margin only with it."""
    agree = _agreement_zh(rows)
    if g.get("ppi", "off") != "on":
        return f"区间没有用预测驱动推断（PPI，门槛 ppi = \"off\"），只用评分者的评分{agree}"
    used = [r for r in rows if r.get("ppi")]
    if not used:
        return f"区间没有用预测驱动推断（PPI），只用评分者的评分：{_why_not_zh(rows)}{agree}"
    r = used[0]
    rules = f"（规则版本 {r['ppi_rules']}）" if r.get("ppi_rules") else ""
    share = r.get("ppi_differing_share", 1.0)
    same = (f"；输出相同的评分对按精确的零计入：估计值和区间两端按配对池中输出不同的评分对所占比例（{share:.3f}）缩放"
            if share < 1 else "")
    text = (f"区间用了预测驱动推断（PPI++，门槛 ppi = \"on\"）：规则预检{rules}对决策样本之外 {r['ppi_unrated_pairs']} 对"
            "输出不同的配对池评分对的答案（未评、未评满、只由金标检查剔除的评分者评过，或在决定之后才评完：它们的评分即使有"
            f"也不使用），由评分者在样本中 {r.get('ppi_rated_pairs', r['pairs'])} 对输出不同的评分对上的答案校正（这些是"
            f"随机子集：队列的顺序是随机抽取的）{same}；lambda："
            + "、".join(f"{x['criterion']} {x['ppi_lambda']:.2f}" for x in used) + agree)
    margin = g.get("margin")
    rest = [x for x in used if margin is not None and x.get("ci_low") is not None and x.get("rated_low") is not None
            and x["ci_low"] >= -margin > x["rated_low"]]  # aggregate.ppi._resting
    if rest:
        text += ("。只看评分者的答案，" + "、".join(f"{title(x['criterion'], 'zh')}（{x['rated_low']:+.4f}）" for x in rest)
                 + f" 的区间下限低于 {_n(-margin)}：在这些标准上，只有加上预检才越过容差")
    return text


def _conditions_zh(agg) -> list[str]:
    """Each condition of agg.verdict with its state and figures, as Markdown list items."""
    v = agg.verdict
    g = v.gate or {}
    detail = {"planned sample": lambda c: _planned(c, g, v.fidelity, agg), "speed-up": lambda c: _speed(agg, g),
              "fidelity": lambda c: _fidelity(v, g), "memory": lambda c: _memory(agg, g),
              "gate": lambda c: "没有冻结的发布门槛（先运行 `evalkit study`）"}
    return [f"- {MARK[c.ok]} **{CONDITION.get(c.name, c.name)}**：{STATE[c.ok]}。"
            + (detail[c.name](c) if c.name in detail else "") for c in v.conditions]


def verdict_zh(agg) -> list[str]:
    """The decision, whom it covers, each condition with its state and figures, and each criterion's interval, as
    Markdown lines."""
    v = agg.verdict
    g = v.gate or {}
    frozen = ""
    if agg.frozen is not None:
        when = (f"第 {v.look['index']} 次查看已有定论时" if v.look and not v.look.get("final", True)
                else "计划样本评完时")
        frozen = f"（{when}冻结，{agg.frozen.completed_at}）"
    lines = [f"### 结论：**{DECISION.get(str(v.decision), str(v.decision))}**{frozen}", ""]
    if v.interim:
        lines += ["_这是中期查看，不是结论：计划样本评完（或在允许的查看点上已有定论）之前，结论不成立。_", ""]
    raters = max((int(r["raters"]) for r in v.fidelity), default=None)
    if g:
        lines += [f"_{claim_zh(g, raters, v.fidelity)}_", ""]
    lines += _conditions_zh(agg)
    if getattr(v, "ppi", ""):
        lines.append("- " + ppi_zh(v.fidelity, g))
    if agg.after is not None:
        # shown once a decision is frozen, whether or not anything was stored since (ratings stored since: the notes);
        # each condition of it as the English gives them: the same writers, on the data and speed figure of now
        from dataclasses import replace

        now = replace(agg, verdict=agg.after, speed=agg.speed_now or agg.speed, frozen=None, after=None)
        lines.append(f"- 决定之后的查看：同样的分析用现在的数据（含决定之后存入的数据，如有）重算，结果是 {agg.after.decision}"
                     f"（{DECISION.get(str(agg.after.decision), str(agg.after.decision))}），但它**不是**决定：")
        lines += ["  " + x for x in _conditions_zh(now)]
    # each note beside the English's, with its figures (pairs no current rater can take: the first, "untakeable")
    lines += [f"- 说明：{note_zh(n)}" for n in agg.notes]
    if v.fidelity:
        margin = g.get("margin", 0.05)
        lines += ["", f"各标准的通过率差（assisted − ordinary），容差 {_n(-margin)}：", "",
                  "| 标准 | 差值 | 区间下限 | 区间上限 | 评分对 | 评分者 |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {title(r['criterion'], 'zh')} | {_n(r['difference'])} | {_n(r['ci_low'])} | {_n(r['ci_high'])} | "
                  f"{r['pairs']} | {r['raters']} |" for r in v.fidelity]
        if same := max((int(r.get("identical", 0)) for r in v.fidelity), default=0):  # verdict.interval_text
            lines += ["", f"_评分对一栏含 {same} 对两条路径输出相同的评分对：不经评分者判定，差值记为 0。_"]
    return lines
