"""The notes beside a verdict in Chinese: each one template (aggregate.notes.NOTES) said with the same figures by
ui.verdictzh.NOTES_ZH, on real studies as on the tables."""

from __future__ import annotations

import ast
import pathlib
import string

import pytest

import evalkit
from evalkit.aggregate import aggregate
from evalkit.aggregate.notes import NOTES, Note, note, plan
from evalkit.store import open_db
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.ui.verdictzh import NOTES_ZH, note_zh, verdict_zh


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def _study(tmp_path, name: str, gate_text: str, **spec):
    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_text)
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(gate_path=str(gate), **spec))
    return db


def _leaves(n: Note) -> list:
    """A note's figures that are no Note, its parts' included: what its Chinese must carry too."""
    return [x for v in n.figures.values() for x in (_leaves(v) if isinstance(v, Note) else [v])]


def test_every_note_beside_a_verdict_has_its_chinese_with_the_same_figures():
    """Verdict audit, 2026-12-07: the notes beside a verdict ("DECISION FROZEN ...", the interim look's warning, the
    gold check, the roster, ...) were English only, and the Chinese page counted them and sent its reader to the
    English. Each note is now one template (aggregate.notes.NOTES), written by note(), which keeps its figures, and
    ui.verdictzh.NOTES_ZH says each with the same figures; a text from outside the aggregate (an error's cause) is
    quoted and said to be the English original."""
    assert set(NOTES_ZH) == set(NOTES)
    for key, text in NOTES.items():
        assert _fields(NOTES_ZH[key]) == _fields(text), key
        numeric = {"even", "dof", "mean", "f", "p", "limit", "min_gold", "mb", "floor"}  # formatted as numbers
        figures = {f: (0.125 + i if f in numeric else f"<{f}-{i}>") for i, f in enumerate(sorted(_fields(text)))}
        n = note(key, **figures)
        assert n == text.format(**figures) and (n.key, n.figures) == (key, figures)
        said = note_zh(n)
        for f, v in figures.items():
            shown = format(v, ".0f") if f in ("mb", "dof") else str(v)[:3] if f in numeric else v  # as formatted
            assert shown in said, (key, f, said)
            if f.endswith("_en"):  # quoted, and said to be the English original
                assert "英文原文" in said, (key, said)
        if key not in ("legacy other", "gate no study", "study earlier", "cause no stage", "cause no others",
                       "memory no cause", "bench device one",
                       "batch empty", "batch answer", "batch parts", "line empty"):
            assert said and said != n, key
    # a part that varies is said in Chinese too, with its own figures
    nested = note("decision frozen", when=note("frozen at look", index=2, of=5, pairs=120), rating=7,
                  completed="<c>", stored="<s>", gate="<g>", ratings=360, pairs=120, left_out=1, later=3, later_pairs=0)
    assert "at look 2 of at most 5 (120 decided pairs)" in nested
    assert "在最多 5 次查看中的第 2 次（120 对已判定的评分对）" in note_zh(nested)


def test_no_note_is_written_in_english_alone():
    """Every note beside a verdict goes through note(): no code of the aggregate appends or returns a note's words
    itself (a scan of the source, as tests/test_ppi.py scans for the pre-screen's reasons), nor do the modules outside
    it whose sentences the notes carry (the speed figure's notes, the cause of fallbacks): they write each by `make`."""
    # texts that are no note: what `evalkit bench` says before it runs
    apart = {"bench_device_note"}
    root = pathlib.Path(evalkit.__file__).parent
    written = []
    made_outside = [root / "generation" / "speed.py", root / "generation" / "fallbacks.py"]
    for path in sorted((root / "aggregate").glob("*.py")) + made_outside:
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name in apart:
                continue
            for node in ast.walk(fn):
                words = []
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in ("append", "insert") and isinstance(node.func.value, ast.Name)
                        and node.func.value.id in ("notes", "personal")):
                    words = node.args[-1:]
                elif (isinstance(node, ast.Return) and node.value is not None
                      and (fn.name.endswith(("_note", "_notes")) or fn.name.startswith("_failed_workers")
                           or fn.name in ("cause_text", "_named", "_order_imbalance", "_answer", "_ratio",
                                          "_fell_back", "_not_run", "speed_line", "left_out_words",
                                          "without_fallbacks"))):
                    words = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                elif isinstance(node, (ast.AugAssign, ast.Assign)):
                    target = node.target if isinstance(node, ast.AugAssign) else node.targets[0]
                    name = target.value if isinstance(target, ast.Subscript) else target
                    if isinstance(name, ast.Name) and name.id == "notes" and isinstance(node.value, ast.List):
                        words = node.value.elts
                for w in words:
                    if isinstance(w, (ast.JoinedStr, ast.BinOp)) or (isinstance(w, ast.Constant) and w.value):
                        written.append((path.name, fn.name, w.lineno))
    assert not written, written


def test_the_interim_note_s_plan_is_the_monitoring_s_own_words():
    """aggregate.notes.plan says study.monitoring.describe's plan, as a Note, for either kind of monitoring."""
    from evalkit.study.monitoring import describe

    for values in ({"monitoring": "fixed", "planned_pairs": 100},
                   {"monitoring": "group sequential", "planned_pairs": 300, "look_every": 60, "min_ratings_per_pair": 3},
                   {"monitoring": "confidence sequence", "planned_pairs": 900, "look_every": 40,
                    "min_ratings_per_pair": 1}):
        assert plan(values) == describe(values), values


SPEC = dict(raters_per_pair=3, raters=12, pass_rate=0.8, rater_accuracy=0.95, seed=5)


@pytest.mark.parametrize("kind", ["interim fixed", "interim looks", "frozen"])
def test_the_chinese_verdict_says_every_note_of_a_real_study(tmp_path, kind):
    """On real studies (an interim look of a fixed design, one of group sequential looks, a frozen decision), the
    Chinese verdict says each note the English prints, in Chinese with its figures, and no longer sends its reader
    to the English for them."""
    from evalkit.ui.results import verdict_markdown

    gate = dict(planned_pairs=120, margin=0.15, min_raters=10)
    if kind == "interim looks":
        gate.update(monitoring="group sequential", look_every=60)
    db = _study(tmp_path, kind.replace(" ", "_"), gate_file_text(**gate),
                pairs=120 if kind == "frozen" else 30, unrated_pairs=40, **SPEC)
    agg = aggregate(db)
    assert agg.interim == (kind != "frozen") and agg.notes
    assert all(isinstance(n, Note) for n in agg.notes), [n for n in agg.notes if not isinstance(n, Note)]
    head = verdict_markdown(agg, "zh").split("#### 详细说明")[0]
    assert "见下方英文原文（note）" not in head
    for n in agg.notes:
        said = note_zh(n)
        assert f"- 说明：{said}" in head and all(str(x) in said for x in _leaves(n) if not isinstance(x, float)), said
    first = {"interim fixed": "中期查看，不是结论：在计划数量的评分对评完之前", "interim looks": "中期查看，不是结论：门槛的查看",
             "frozen": "决定已冻结：在计划样本评完时（评分"}[kind]
    assert any(x.startswith(f"- 说明：{first}") for x in verdict_zh(agg)), verdict_zh(agg)


@pytest.mark.parametrize("short", ["below planned", "less power"])
def test_the_pool_size_note_is_said_in_chinese_with_its_figures(tmp_path, short):
    """Verdict audit, 2026-12-07: the note that the pool is short (study.studies.pool_short) was made outside the
    aggregate as one English sentence, and the Chinese verdict quoted it as "（英文原文）The pool holds ...". Its
    sentences are now templates (study.studies.FILL) written with their figures, so the Chinese says it with the
    same figures, and the English stays word for word."""
    from evalkit.study.studies import choose, pool_short

    if short == "below planned":  # fewer pairs than planned: no decision
        db = _study(tmp_path, "below", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10),
                    pairs=30, unrated_pairs=40, **SPEC)
        english = ("The pool holds 70 study pairs, fewer than the 120 planned pairs, so this study cannot reach a "
                   "decision: `evalkit generate --until-planned` adds samples until it holds 132 (the planned pairs "
                   "plus a 10% reserve)")
        chinese = ("配对池有 70 对研究评分对，少于计划的 120 对，因此本研究无法给出结论：`evalkit generate --until-planned` "
                   "会添加样本，直到配对池有 132 对（计划的评分对加上 10% 的余量）")
    else:  # enough to decide, fewer than the plan's power assumes (gate planned_pool)
        db = _study(tmp_path, "power", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10,
                                                      claim="these raters", ppi="on") + "planned_pool = 200\n",
                    pairs=20, unrated_pairs=120, **SPEC)
        english = ("The pool holds 140 study pairs, fewer than the 200 the plan's power assumes (gate planned_pool: "
                   "prediction-powered inference uses the pre-screen's answers on every pooled pair), so the study can "
                   "decide but with less power: `evalkit generate --until-planned` adds samples until it holds 200")
        chinese = ("配对池有 140 对研究评分对，少于计划的检验力所假定的 200 对（门槛 planned_pool：预测驱动推断使用预检对配对池中"
                   "每一对的答案），因此研究能给出结论，但检验力较低：`evalkit generate --until-planned` 会添加样本，直到"
                   "配对池有 200 对")
    agg = aggregate(db)
    assert pool_short(db, choose(db)) == english[0].lower() + english[1:]  # what `serve` and the CLI say, as before
    assert english in agg.notes, agg.notes
    assert f"- 说明：{chinese}" in verdict_zh(agg), verdict_zh(agg)
    assert not any("英文原文" in x and "pool holds" in x for x in verdict_zh(agg))


def test_the_study_shown_and_where_the_others_stand_are_said_in_chinese(tmp_path):
    """Verdict audit, 2026-12-07: with several studies in a database, the note naming the study shown and where the
    others stand (Study.label, Standing.sentence) was made outside the aggregate in English, and the Chinese verdict
    quoted both as the English original. They are now templates (study.studies.FILL) written with their figures: on a
    database of three studies (the first decided, the second left at interim looks), the Chinese says each with the
    same figures and the English stays word for word."""
    from evalkit.study.studies import standings

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=120, margin=0.15, min_raters=10))
    db = open_db(tmp_path / "three.db")
    build_study(db, SyntheticStudy(gate_path=str(gate), pairs=120, unrated_pairs=40, **SPEC))
    frozen = aggregate(db).frozen
    assert frozen is not None
    for name in ("second", "third"):
        build_study(db, SyntheticStudy(gate_path=str(gate), pairs=30, unrated_pairs=10, study=name, **SPEC))
    first, second = standings(db)[:2]
    decided = str(frozen.verdict.decision.value)
    assert first.decision == decided and second.decision is None and second.ratings > 0
    agg = aggregate(db)
    english = (f"this is study 'third' (the latest), 3 of 3 in this database; `--study NAME` shows another (study "
               f"'main' decided {decided} when its planned sample completed ({frozen.completed_at}); study 'second' "
               f"has no decision: {second.ratings} rating(s) of its study pairs for 120 planned pairs, interim looks "
               "only)")
    assert agg.notes[0] == english, agg.notes[0]
    chinese = (f"- 说明：这里显示的是研究“third”（最新的）（本数据库 3 个研究中的第 3 个）；用 `--study 名字` 查看其他研究"
               f"（研究“main”在其计划样本评完时决定 {decided}（{frozen.completed_at}）；研究“second”没有结论：其研究评分"
               f"对有 {second.ratings} 条评分，计划 120 对，只有中期查看）")
    assert chinese in verdict_zh(agg), verdict_zh(agg)
    assert not any("英文原文" in x and "study '" in x for x in verdict_zh(agg))


def _pool_fallbacks(path, runs: int, error: str = "RuntimeError", stage: str = "generate",
                    message: str = "CUDA out of memory. Tried to allocate 2.00 GiB") -> None:
    """Store `runs` pool samples whose assisted run failed, as pairs._run_item stores them: ordinary, the failed
    assisted attempt with its error, and the fallback that replaced it (unpaired)."""
    import sqlite3

    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("PRAGMA table_info(generations)")]
    base = dict(zip(cols, con.execute("SELECT * FROM generations WHERE path = 'ordinary' LIMIT 1").fetchone()))

    def add(**values) -> int:
        row = {k: v for k, v in dict(base, id=None, **values).items() if v is not None}
        return con.execute(f"INSERT INTO generations ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                           list(row.values())).lastrowid

    for _ in range(runs):
        add(path="ordinary", status="ok")
        failed = add(path="assisted", status="failed", error_class=error, error_stage=stage, error_message=message)
        add(path="fallback", status="ok", fallback_of=failed)
    con.commit()
    con.close()


def test_the_speed_figure_s_notes_are_said_in_chinese_with_their_figures(tmp_path):
    """Verdict audit, 2026-12-07: the speed figure's notes were English sentences made in generation/speed.py, and
    the Chinese verdict quoted them as "速度数字（英文原文）：speed-up: no interval, ...". They are now templates
    (generation.speed.SPEED_NOTES) written by the `make` the caller passes: the aggregate's keep their figures, so the
    Chinese says them; the benchmark's summary and the CLI print the same English as before."""
    from evalkit.generation.speed import measure_speed

    gate = gate_file_text(planned_pairs=100, margin=0.15, min_raters=10)
    db = _study(tmp_path, "single", gate, pairs=5, bench=False, raters_per_pair=3, raters=12, seed=1)
    assert db.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM pairs GROUP BY prompt_id)").fetchone()[0] == 1
    agg = aggregate(db)
    english = next(n for n in agg.speed.notes if "have a single pair" in n)
    assert english.startswith("speed-up: no interval, nor for tokens per second, assisted over ordinary, since "
                              "prompt(s) writing-01, ")
    prompts = [p for p in english.split("prompt(s) ")[1].split(" have")[0].split(", ")]
    rows = [{"path": path, "prompt_id": p, "round": 1, "rep": 0, "stop_reason": "eos", "new_tokens": 100,
             "seconds": sec, "token_hash": f"{path}{p}"} for p in prompts for path, sec in (("ordinary", 2.0),
                                                                                           ("assisted", 1.0))]
    plain = measure_speed(rows, 0.1, 200).notes  # the benchmark summary's and CLI's: plain text, word for word
    assert english in plain and not any(isinstance(n, Note) for n in plain), plain
    lines = verdict_zh(agg)
    chinese = (f"加速比：没有区间，每秒 token 数之比（assisted 相对 ordinary） 也没有，因为提示词 {'、'.join(prompts)} 只有一对匹配运行，"
               "而区间在每个提示词内重抽样")
    assert any(x.startswith("- 说明：速度数字：" + chinese) for x in lines), lines
    assert not any("英文原文" in x and ("速度数字" in x or "single pair" in x) for x in lines), lines


@pytest.mark.parametrize("frozen", [False, True])
def test_the_cause_of_fallbacks_is_said_in_chinese_around_its_quoted_error(tmp_path, frozen):
    """Verdict audit, 2026-12-07: the cause of the assisted runs' fallbacks (generation.fallbacks.cause_text) was an
    English sentence quoted whole as "原因（英文原文）：cause (every one): ...". Its words are now a template
    (fallbacks.CAUSE) and the error's class, stage and message figures (data, quoted as stored): the Chinese says the
    sentence around them, on an interim look and beside a decision frozen with it (which stores its notes' keys and
    figures, Speed.keyed_json); a decision frozen by an older evalkit, which stored plain text, is still read and
    quoted as the English original."""
    import json

    gate = gate_file_text(planned_pairs=120 if frozen else 100, margin=0.15, min_raters=10)
    db = _study(tmp_path, "fell", gate, pairs=120 if frozen else 40, unrated_pairs=10, bench=False, **SPEC)
    path = tmp_path / "fell.db"
    _pool_fallbacks(path, 3)
    agg = aggregate(open_db(path))
    assert (agg.frozen is not None) == frozen and agg.speed.fallback_runs == 3
    english = ("3 assisted run(s) fell back; they are not counted as assisted; cause (every one): RuntimeError at "
               "stage generate: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert english in agg.notes, agg.notes
    chinese = ("- 说明：3 次 assisted 运行回退（fallback）；它们不算作辅助生成；原因（全部）：RuntimeError（在 generate 阶段）："
               "“CUDA out of memory. Tried to allocate 2.00 GiB”")
    assert chinese in verdict_zh(agg), verdict_zh(agg)
    assert not any("英文原文" in x and "cause" in x for x in verdict_zh(agg))
    if frozen:  # as an older evalkit froze it: the English alone, quoted
        db = open_db(path)
        stored = json.loads(db.execute("SELECT speed_json FROM decisions").fetchone()[0])
        assert stored.pop("keyed")["fallback_cause"]["key"] == "cause"
        with db.conn:  # as if frozen so: the trigger that keeps a decision unchanged is lifted for the test only
            db.conn.execute("DROP TRIGGER decisions_never_change")
            db.conn.execute("UPDATE decisions SET speed_json = ?", [json.dumps(stored)])
        again = aggregate(db)
        assert english in again.notes
        assert f"- 说明：3 次 assisted 运行回退（fallback）；它们不算作辅助生成；原因（英文原文）：{english.split('; ')[2]}" in (
            verdict_zh(again))


def test_a_benchmark_whose_assisted_path_never_ran_is_said_in_chinese_with_its_cause(tmp_path):
    """Verdict audit, 2026-12-07: where a benchmark's assisted runs all fell back, the memory note (timing's
    memory_note) was an English sentence the Chinese quoted ("草稿模型的额外内存：not measured: ...（英文原文）"), and the
    memory condition sent its reader to the English for the cause ("原因见下方英文原文"). The note is now templates
    with its figures (the benchmark, how many runs, the cause's), said in Chinese in both places; the English stays
    word for word."""
    import sqlite3

    db = _study(tmp_path, "never", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10),
                pairs=30, unrated_pairs=40, **SPEC)
    bench = db.execute("SELECT id FROM experiments WHERE kind = 'bench'").fetchone()[0]
    db.conn.close()
    con = sqlite3.connect(tmp_path / "never.db")  # as `evalkit bench` stores it when every assisted call fails
    cols = [r[1] for r in con.execute("PRAGMA table_info(generations)")]
    fell = 0
    for gid, in con.execute("SELECT generation_id FROM timing_runs WHERE path = 'assisted'").fetchall():
        row = dict(zip(cols, con.execute("SELECT * FROM generations WHERE id = ?", [gid]).fetchone()))
        failed = {k: v for k, v in dict(row, id=None, status="failed", error_class="ValueError", error_stage="generate",
                                        error_message="assisted generation is not supported").items()
                  if v is not None}
        fid = con.execute(f"INSERT INTO generations ({', '.join(failed)}) VALUES ({', '.join('?' * len(failed))})",
                          list(failed.values())).lastrowid
        con.execute("UPDATE generations SET path = 'fallback', fallback_of = ? WHERE id = ?", [fid, gid])
        fell += 1
    con.execute("UPDATE timing_runs SET path = 'fallback' WHERE path = 'assisted'")
    con.commit()
    con.close()
    agg = aggregate(open_db(tmp_path / "never.db"))
    assert agg.interim and agg.speed.extra_memory_mb is None
    why = (f"not measured: benchmark {bench}'s assisted path never ran (all {fell} of its assisted runs fell back; "
           "cause (every one): ValueError at stage generate: assisted generation is not supported)")
    assert agg.speed.memory_note == why
    assert f"extra memory of the draft {why}: fix the cause and run `evalkit bench` again" in "\n".join(agg.notes)
    said = (f"未测量：基准测试 {bench} 的 assisted 路径从未运行（它的全部 {fell} 次 assisted 运行都失败并回退；原因（全部）："
            "ValueError（在 generate 阶段）：“assisted generation is not supported”）")
    lines = verdict_zh(agg)
    assert f"- 说明：草稿模型的额外内存{said}：请修正原因" in "\n".join(lines), lines
    memory = next(x for x in lines if "**额外内存**" in x)
    assert said in memory and "英文原文" not in memory, memory
    assert not any("英文原文" in x and "not measured" in x for x in lines), lines


def test_benchmarks_left_out_and_where_to_run_one_are_said_in_chinese(tmp_path):
    """Verdict audit, 2026-12-07: a benchmark left out of the speed figure or of the batch comparison (it ran on other
    hardware, or measured another setting) was noted around English sentences made in aggregate/data.py
    (other_device, run_on, settings_mismatch), which the Chinese quoted ("（英文原文）its device is cuda ...",
    "（英文原文：assistant.num_assistant_tokens = 99 ...）"). They are now templates with their figures, said in
    Chinese; the English is word for word as before, and plain text to a caller that prints it (`evalkit bench`'s
    warning, bench_device_note; study.pairs' refusal of a pool of other settings)."""
    import json

    from test_speed_selection import _batch_bench

    from evalkit.study.synthetic import add_bench

    db = _study(tmp_path, "left", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10),
                pairs=30, unrated_pairs=40, **SPEC)
    gpu = add_bench(db, speedup=3.0, seed=5, device="cuda:0")
    pool = db.execute("SELECT config_json, compat_json FROM experiments WHERE kind = 'pool'").fetchone()
    other, compat = json.loads(pool[0]), json.loads(pool[1] or "{}")
    other.setdefault("assistant", {})["num_assistant_tokens"] = 99
    quick = _batch_bench(db, other, compat)  # another draft length: left out of both figures
    on_gpu = _batch_bench(db, json.loads(pool[0]), {"device": "cuda"}, device="cuda")  # the pair, other hardware
    agg = aggregate(db)
    assert agg.interim and gpu not in agg.speed.benchmark_ids
    english = {
        "bench other device": (f"benchmark {gpu} left out, not deciding: its device is cuda, and the study's speed "
                               "claim is about cpu (the kind its first pool ran on: the gate's speed_device = \"pool\"): "
                               "its figures describe other hardware, reported, never deciding; benchmark on cpu "
                               "(models.device = \"cpu\")"),
        "bench mismatch": (f"benchmark {quick} left out: it does not measure what the study rates "
                           "(assistant.num_assistant_tokens = 99 where the study's pool has "),
        "batch other device": (f"batch sizes of benchmark {on_gpu} left out: its device is cuda, and the study's speed "
                               "claim is about cpu (the kind its first pool ran on: the gate's speed_device = \"pool\"); "
                               "benchmark on cpu (models.device = \"cpu\") `--batch-sizes`"),
        "batch mismatch": (f"batch sizes of benchmark {quick} left out: it does not measure what the study rates "
                           "(assistant.num_assistant_tokens = 99 where the study's pool has "),
    }
    for key, text in english.items():  # word for word as before
        assert text in "\n".join(agg.notes), (key, agg.notes)
    chinese = [
        (f"基准测试 {gpu} 被排除，不参与判定：它的设备是 cuda，而本研究的速度结论针对的是 cpu（即第一个配对池运行的设备类型："
         "门槛的 speed_device = \"pool\"）：它的数字描述的是其他硬件，仅供参考，从不参与判定；请在 cpu 上运行基准测试"
         "（models.device = \"cpu\"）"),
        f"基准测试 {quick} 被排除：它测量的不是本研究所评的内容（assistant.num_assistant_tokens = 99，而本研究的配对池是 ",
        (f"基准测试 {on_gpu} 的批量大小被排除：它的设备是 cuda，而本研究的速度结论针对的是 cpu（即第一个配对池运行的设备"
         "类型：门槛的 speed_device = \"pool\"）；请在 cpu 上运行基准测试（models.device = \"cpu\"），并加上 `--batch-sizes`"),
        f"基准测试 {quick} 的批量大小被排除：它测量的不是本研究所评的内容（assistant.num_assistant_tokens = 99，而本研究的配对池是 ",
    ]
    from evalkit.aggregate.data import other_device, run_on, settings_mismatch

    plain = [run_on("cpu"), other_device({"cuda"}, "cpu", "pool"), settings_mismatch(other, {}, json.loads(pool[0]), {})]
    assert plain[0] == 'benchmark on cpu (models.device = "cpu")' and all(type(x) is str for x in plain), plain
    page = "\n".join(verdict_zh(agg))
    for said in chinese:
        assert said in page, (said, page)
    assert "英文原文" not in page, page


def test_the_batch_answer_is_said_in_chinese_with_its_figures(tmp_path):
    """Verdict audit, 2026-12-07: the batch comparison's answer (generation.speed.compare_batches: from which batch
    size ordinary's total throughput beats assisted's) was an English sentence the Chinese quoted as "批量大小（基准测试
    N）：（英文原文）ordinary's total throughput ...". Its sentences are now templates (generation.speed.SPEED_NOTES)
    written by the `make` the caller passes, so the Chinese says it with the same figures, and `evalkit bench` and
    the Live tab print the same English as before."""
    import json

    from test_speed_selection import _batch_bench

    db = _study(tmp_path, "batch", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10),
                pairs=30, unrated_pairs=40, **SPEC)
    pool = db.execute("SELECT config_json, compat_json FROM experiments WHERE kind = 'pool'").fetchone()
    measured = _batch_bench(db, json.loads(pool[0]), json.loads(pool[1] or "{}"))
    agg = aggregate(db)
    answer = agg.speed.batch_answer
    assert agg.speed.batch_experiment_id == measured and isinstance(answer, Note)
    assert answer.startswith("ordinary's total throughput beats assisted's at every batch size measured (1, 2): "
                             "ordinary / assisted total tokens/s "), answer
    assert f"batch sizes (benchmark {measured}): {answer}" in agg.notes
    from evalkit.ui.live import batch_note

    assert batch_note(db).endswith(f"batch size): {answer}.")  # the Live tab's: plain text, word for word
    ratio, tps = answer.figures["main"].figures["ratio"], answer.figures["main"].figures["tps"].figures["tps"]
    low, high = ratio.figures["low"], ratio.figures["high"]
    chinese = (f"- 说明：批量大小（基准测试 {measured}）：在测得的每个批量大小（1, 2）上，ordinary 的总吞吐量都超过 assisted："
               f"ordinary / assisted 的总每秒 token 数在 1 时为 {ratio.figures['ratio']}×（[{low}, {high}]）；assisted 在批量 1 "
               f"时每秒生成 {tps} 个新 token")
    assert chinese in verdict_zh(agg), verdict_zh(agg)
    assert not any("英文原文" in x for x in verdict_zh(agg)), verdict_zh(agg)


def test_the_look_after_the_decision_gives_its_conditions_in_chinese(tmp_path):
    """Verdict audit, 2026-12-07: beside a frozen decision the English gives the look after it (the same analysis on
    the data as it is now) condition by condition, with each one's state and figures; the Chinese gave only its
    result and sent its reader to the English ("见下方英文"). It now gives each condition of that look as it gives the
    decision's, written from the look's own fields and the speed figure of now."""
    from evalkit.stats.speedup import ratio_text
    from evalkit.ui.verdictzh import CONDITION, MARK, STATE

    db = _study(tmp_path, "after", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10),
                pairs=120, unrated_pairs=40, **SPEC)
    agg = aggregate(db)
    assert agg.frozen is not None and agg.after is not None and agg.speed_now.speedup is not None
    lines = verdict_zh(agg)
    at = next(i for i, x in enumerate(lines) if x.startswith("- 决定之后的查看："))
    assert "见下方英文" not in lines[at] and lines[at].endswith("但它**不是**决定：")
    after = lines[at + 1:at + 1 + len(agg.after.conditions)]
    for c, line in zip(agg.after.conditions, after):
        assert line.startswith(f"  - {MARK[c.ok]} **{CONDITION[c.name]}**：{STATE[c.ok]}。"), (c, line)
    speed = next(x for x in after if "**加速比**" in x)
    assert f"{ratio_text(agg.speed_now.speedup)}×" in speed and "基于" in speed, speed


def test_the_speed_measured_since_a_decision_is_said_in_chinese(tmp_path):
    """Verdict audit, 2026-12-07: beside a frozen decision, the note that the figures shown are those it weighed said
    what was measured since with the SPEED line (aggregate.speed_line), an English sentence the Chinese quoted
    ("之后测得的...：（英文原文）speed-up over 50 comparable pairs ..."). The line is now templates with its figures, said
    in Chinese with the same figures; the SPEED line of `evalkit aggregate` and the card is word for word as before."""
    from evalkit.aggregate import format_text, speed_line
    from evalkit.stats.speedup import ratio_text
    from evalkit.study.synthetic import add_bench

    db = _study(tmp_path, "since", gate_file_text(planned_pairs=120, margin=0.15, min_raters=10),
                pairs=120, unrated_pairs=40, bench=False, **SPEC)
    assert aggregate(db).frozen is not None
    add_bench(db, speedup=2.0, seed=5, extra_memory_mb=300)  # measured after the decision
    agg = aggregate(db)
    now = agg.speed_now
    assert now.speedup is not None and now.throughput_ratio is not None and now.speedup_ci95 and now.throughput_ci95
    english = (f"speed-up over {now.comparable_pairs} comparable pairs {ratio_text(now.speedup)}x "
               f"[{ratio_text(now.speedup_ci95[0])}, {ratio_text(now.speedup_ci95[1])}]; tokens per second, assisted "
               f"over ordinary, over all {now.throughput_pairs} matched pairs (no selection on length or stop reason) "
               f"{ratio_text(now.throughput_ratio)}x [{ratio_text(now.throughput_ci95[0])}, "
               f"{ratio_text(now.throughput_ci95[1])}]")
    assert speed_line(now).startswith(english) and type(speed_line(now)) is str
    assert f"measured since (the look after the decision, and the timing tables): {english}" in "\n".join(agg.notes)
    assert f"SPEED: {speed_line(agg.speed)}" in format_text(agg) or not speed_line(agg.speed)
    chinese = (f"- 说明：这里显示的速度和内存数字是决定所依据的；之后测得的（见决定之后的查看和计时表格）：可比的 "
               f"{now.comparable_pairs} 对上的加速比 {ratio_text(now.speedup)}×（[{ratio_text(now.speedup_ci95[0])}, "
               f"{ratio_text(now.speedup_ci95[1])}]）；全部 {now.throughput_pairs} 对匹配输出上 assisted 相对 ordinary "
               f"的每秒 token 数之比（不按长度或停止原因筛选）{ratio_text(now.throughput_ratio)}×")
    lines = verdict_zh(agg)
    assert any(x.startswith(chinese) for x in lines), lines
    assert not any("英文原文" in x and "决定所依据" in x for x in lines), lines


def test_a_cause_stored_without_its_error_class_is_said_in_chinese_too(tmp_path):
    """A failed attempt stored with no error class reads "cause (every one): error: ..." (generation.fallbacks); the
    word standing in for the class is words, not data, so the Chinese says it too instead of quoting "error"."""
    db = _study(tmp_path, "noclass", gate_file_text(planned_pairs=100, margin=0.15, min_raters=10),
                pairs=40, unrated_pairs=10, bench=False, **SPEC)
    db.conn.close()
    _pool_fallbacks(tmp_path / "noclass.db", 2, error="", stage="", message="out of memory")
    agg = aggregate(open_db(tmp_path / "noclass.db"))
    assert ("2 assisted run(s) fell back; they are not counted as assisted; cause (every one): error: out of memory"
            in agg.notes), agg.notes
    assert "- 说明：2 次 assisted 运行回退（fallback）；它们不算作辅助生成；原因（全部）：错误：“out of memory”" in verdict_zh(agg)
