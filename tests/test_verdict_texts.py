"""Every text that shows a decision says what the decision is: the English verdict, the Chinese Results tab, the HTML
report and the dataset card, on real databases through the real aggregate (verdict audit 2, 2026-12-04)."""

import re

from evalkit.aggregate import aggregate, verdict_text
from evalkit.store import open_db
from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text
from evalkit.ui.results import verdict_markdown


def study(tmp_path, name: str, gate_text: str, **spec):
    gate = tmp_path / f"{name}.toml"
    gate.write_text(gate_text)
    db = open_db(tmp_path / f"{name}.db")
    build_study(db, SyntheticStudy(gate_path=str(gate), **spec))
    return db


def _answer(db, pair_ids, criterion: str, ordinary: str, assisted: str) -> None:
    with db.conn:
        for p in pair_ids:
            side = db.execute("SELECT ordinary_side FROM pairs WHERE id = ?", [p]).fetchone()[0]
            a, b = (ordinary, assisted) if side.upper() == "A" else (assisted, ordinary)
            db.conn.execute(f"UPDATE ratings SET ordinary_{criterion} = ?, assisted_{criterion} = ?, a_{criterion} = ?, "
                            f"b_{criterion} = ? WHERE pair_id = ?", [ordinary, assisted, a, b, p])


def test_a_criterion_passed_at_an_earlier_look_is_said_to_have_passed_not_to_be_worse(tmp_path):
    """Group sequential: Maintenance time passed at look 1 and stays passed (as documented), though at the last look
    its interval lies wholly below the margin. The Chinese said "passed" and "assisted clearly worse" in one line, the
    English that every lower end was at or above the margin, and the criterion line "OUTSIDE margin". A claim about
    raters in general: one about these raters judges every criterion at the deciding look (no pass stays)."""
    g = gate_file_text(planned_pairs=200, margin=0.15, min_ratings_per_pair=1, second_rating_share=0,
                       claim="raters in general", min_raters=10, ppi="off", monitoring="group sequential",
                       look_every=100)
    db = study(tmp_path, "looks", g, pairs=200, raters_per_pair=1, raters=12, pass_rate=1.0, rater_accuracy=1.0,
               queue_order=True, seed=3)
    pairs = [r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY queue_rank")]
    _answer(db, pairs[100:], "schedule", "pass", "fail")  # fine in the first look's 100, worse on every later pair
    _answer(db, pairs[:20], "read_only_vs_upload", "pass", "fail")  # open at look 1, passes at look 2
    agg = aggregate(db)
    assert agg.verdict.decision == "KEEP"
    row = agg.tables["non_inferiority"].set_index("criterion").loc["schedule"]
    assert row["passed_at_look"] == 1 and row["ci_high"] < -0.15
    fidelity = next(c for c in agg.verdict.conditions if c.name == "fidelity")
    assert "every criterion has passed" in fidelity.reason and "Maintenance time · 维护时间 (look 1)" in fidelity.reason
    assert "every criterion's lower end is at or above" not in fidelity.reason
    assert any(line.strip().startswith("passed at look 1 (a pass stays); now OUTSIDE margin -0.150: Maintenance time")
               for line in verdict_text(agg).splitlines())
    # each criterion's line gives its interval at the look's level, as the condition's line does (organiser audit L1:
    # the same interval read "96.18% CI" in one and "95% CI" in the other)
    level = row["look_level"]
    assert 0.95 < level < 1
    assert f"{level:.2%} CI [" in next(x for x in verdict_text(agg).splitlines() if "now OUTSIDE margin" in x)
    assert not any(x.strip().endswith(")") and "margin -0.150:" in x and "95% CI" in x
                   for x in verdict_text(agg).splitlines())
    zh = verdict_markdown(agg, "zh").split("#### 详细说明")[0]
    line = next(x for x in zh.splitlines() if "内容忠实度" in x)
    assert "通过" in line and "明显更差" not in line and "维护时间（第 1 次查看）" in line


def test_an_early_stop_on_a_confidence_sequence_is_described_as_it_was_taken(tmp_path):
    """A confidence sequence decides at look 12 of 15. The card's recipe named the t interval and a spending level
    (following it gave another interval), and the report's heading and the card's studies table said the decision was
    frozen when the planned sample completed."""
    from evalkit.publish.export import export
    from evalkit.publish.report import write_report

    g = gate_file_text(planned_pairs=300, margin=0.15, monitoring="confidence sequence", look_every=60,
                       claim="these raters", ppi="off")
    db = study(tmp_path, "cs", g, pairs=300, raters_per_pair=3, raters=12, pass_rate=0.8, rater_accuracy=0.95,
               seed=5, queue_order=True)
    agg = aggregate(db)
    look = agg.verdict.look
    assert agg.verdict.decision == "KEEP" and not look["final"] and agg.frozen is not None
    when = f"when look {look['index']} settled it"
    html = write_report(db, tmp_path / "report").path.read_text()
    assert f"when look {look['index']} settled it" in re.search(r"<h2[^>]*>(.*?)</h2>", html).group(1)
    export(db, tmp_path / "export")
    card = (tmp_path / "export" / "README.md").read_text()
    assert "when the planned sample completed" not in card.split("VERDICT:")[1].splitlines()[0]
    assert f"KEEP, frozen {when}" in card
    method = re.search(r"\*\*Interval\*\*(.*?)\n- \*\*Pre-screen", card, re.S).group(1)
    assert "betting confidence sequence" in method and "`rated_*`" in method
    looks = " ".join(re.search(r"\*\*Looks and decision\.\*\*(.*?)\n- \*\*Speed", card, re.S).group(1).split())
    assert "no spending" in looks and "the level its spending allows" not in looks
    assert all(r["sequence"] for r in agg.verdict.fidelity)  # the sequence decides, the t interval beside it
    assert any(r["rated_low"] != r["ci_low"] for r in agg.verdict.fidelity)


def test_an_unanswered_criterion_is_not_called_outside_and_the_chinese_speed_line_says_why_it_is_undecided(tmp_path):
    """A criterion left unanswered by 10 early ratings is not judged; the English line called it "OUTSIDE margin"
    with an interval inside it. The Chinese speed-up line showed figures clearing the threshold beside "not judged"
    with no reason, where only 20 of 50 matched pairs were comparable."""
    g = gate_file_text(planned_pairs=600, min_ratings_per_pair=1, ppi="off", margin=0.05, min_raters=10)
    db = study(tmp_path, "txt", g, pairs=600, raters_per_pair=1, raters=12, pass_rate=0.97, rater_accuracy=0.995,
               queue_order=True, seed=5)
    with db.conn:
        db.conn.execute("UPDATE timing_runs SET stop_reason = 'max_new_tokens' WHERE path = 'assisted' AND id IN "
                        "(SELECT id FROM timing_runs WHERE path = 'assisted' ORDER BY id LIMIT 30)")
        db.conn.execute("UPDATE ratings SET ordinary_schedule = NULL, assisted_schedule = NULL, a_schedule = NULL, "
                        "b_schedule = NULL WHERE id <= 10")
    agg = aggregate(db)
    row = agg.tables["non_inferiority"].set_index("criterion").loc["schedule"]
    assert row["ci_low"] > -0.05 and row["unanswered"] == 10
    lines = [x.strip() for x in verdict_text(agg).splitlines() if "margin -0.050:" in x]
    assert any(x.startswith("not judged (10 ratings leave it unanswered) against margin") and "Maintenance" in x
               for x in lines)
    assert not any(x.startswith("OUTSIDE") for x in lines)
    speed = next(c for c in agg.verdict.conditions if c.name == "speed-up")
    assert speed.ok is None and "only 20 of 50 matched pairs comparable" in speed.reason
    zh = verdict_markdown(agg, "zh").split("#### 详细说明")[0]
    line = next(x for x in zh.splitlines() if "加速比" in x)
    assert "未判定" in line and "50 对匹配输出中只有 20 对可比" in line and "无法判定" in line


def test_the_pre_screen_sentence_names_the_pairs_it_uses_and_a_criterion_it_alone_clears():
    """Export audit, 2026-12-04: the sentence called the pairs PPI takes the pre-screen's answers on "unrated pooled
    pairs", while all of them held ratings (outside the decision sample: rated by a rater the gold check left out, or
    after the decision); a reader who took it literally found none and read DROP where the decision was KEEP, which
    rested on the pre-screen for one criterion without a word. Now the sentence says which pairs, and names a
    criterion whose lower end clears -margin only with the pre-screen."""
    from evalkit.aggregate.ppi import sentence
    from evalkit.task.criteria import CRITERIA, title

    first, second = list(CRITERIA)[:2]
    rows = [{"criterion": first, "ppi": True, "ppi_lambda": 0.14, "ppi_unrated_pairs": 144, "pairs": 400,
             "ppi_rated_pairs": 240, "ci_low": -0.0431, "rated_low": -0.0538, "prescreen_agreement": 0.9},
            {"criterion": second, "ppi": True, "ppi_lambda": 0.3, "ppi_unrated_pairs": 144, "pairs": 400,
             "ppi_rated_pairs": 240, "ci_low": -0.02, "rated_low": -0.03, "prescreen_agreement": 0.9}]
    text = sentence(rows, True, 0.05)
    assert "unrated pooled pairs" not in text
    assert "144 pooled pairs outside the decision sample whose outputs differ" in text
    assert "rated only by raters the gold check leaves out" in text
    assert f"the lower end of {title(first)} (-0.0538) lies below -0.05" in text and title(second) + " (" not in text
    assert "lies below" not in sentence(rows, True, 0.06)  # both clear a wider margin on the raters alone


def test_an_end_that_rounds_onto_the_margin_is_printed_with_a_fourth_decimal():
    """Export audit, 2026-12-04: "OUTSIDE margin -0.050: ... CI [-0.050, +0.025]" for a lower end of -0.0502."""
    from evalkit.aggregate.verdict import interval_text

    row = {"criterion": "schedule", "difference": -0.012, "ci_low": -0.0502, "ci_high": 0.025, "pairs": 300,
           "raters": 12, "margin": 0.05}
    assert "CI [-0.0502, +0.025]" in interval_text(row, 0.95)
    assert "CI [-0.049, +0.025]" in interval_text(row | {"ci_low": -0.0494}, 0.95)
    assert "CI [-0.050, +0.025]" in interval_text(row | {"ci_low": -0.05}, 0.95)  # exactly at it: passes


def test_the_t_interval_is_rebuilt_from_a_rows_stored_parts_by_the_cards_recipe(tmp_path):
    """Export audit, 2026-12-04: the card named the t interval's method but not its steps, and verdict_json kept none
    of its parts, so a reader's literal reading came out up to 0.034 narrower. The rows now keep the parts; the card
    gives the steps; this rebuilds t_low / t_high from them with scipy, as a reader would."""
    import math

    from scipy import stats

    db = study(tmp_path, "parts", gate_file_text(planned_pairs=300, ppi="off"), pairs=300, raters_per_pair=3,
               raters=12, pass_rate=0.8, rater_accuracy=0.93, identical_share=0.3, rater_sd=0.3, rater_path_sd=0.3,
               pair_correlation=0.3, seed=23, queue_order=True)
    rows = aggregate(db).verdict.fidelity
    assert rows
    for r in rows:
        var = max(r["var_pair"] + r["var_rater"] - r["var_rating"], r["var_pair"], r["var_rater"])
        assert math.isclose(var, r["var"], rel_tol=1e-9)
        df_r = r["two_way_df"]
        c = 2 / (9 * df_r)
        chi = df_r * (1 - c + stats.norm.ppf(0.01) * math.sqrt(c)) ** 3
        hi = max(r["var_rater"] * df_r / chi - r["var_rating"], 0)
        rest = var - min(max(r["var_rater"] - r["var_rating"], 0), var)
        f = hi / (rest + hi)
        df = max(1 / (f * f / df_r + (1 - f) ** 2 / (r["pairs"] - 1)), df_r)
        assert math.isclose(df, r["t_df"], rel_tol=1e-6), (df, r["t_df"])
        q = stats.t.ppf(0.975, df)
        s, g, se = (2 * q * q + 1) / 6, r["skewness"], math.sqrt(var)
        low = max(r["difference"] - (q + s * max(-g, 0)) * se, -1)
        high = min(r["difference"] + (q + s * max(g, 0)) * se, 1)
        assert math.isclose(low, r["t_low"], abs_tol=1e-6) and math.isclose(high, r["t_high"], abs_tol=1e-6), \
            (r["criterion"], low, r["t_low"], high, r["t_high"])


def test_one_rater_reads_in_the_singular_and_the_chinese_memory_line_names_what_was_measured(tmp_path):
    """Demo audit, 2026-12-04: a demo rated by one stakeholder read "raters like these 1 raters" and "over 2 pairs and
    1 raters" in every verdict; and the Chinese memory line called the draft's extra process RAM on a CPU "额外显存"
    (GPU memory) where the English line beside it said "peak process RSS"."""
    g = gate_file_text(planned_pairs=40, min_ratings_per_pair=1, ppi="off", margin=0.1)
    db = study(tmp_path, "one", g, pairs=40, raters_per_pair=1, raters=1, seed=3)
    agg = aggregate(db)
    text = verdict_text(agg)
    assert "raters like this 1 rater:" in text and "1 raters" not in text
    assert re.search(r"over 40 pairs and 1 rater\b", text) and "(like this 1)" in text
    assert agg.speed.extra_memory_basis == "peak process RSS during the timed runs"  # the CPU's measure
    zh = verdict_markdown(agg, "zh")
    line = next(x for x in zh.splitlines() if "额外内存" in x and "MB" in x)
    assert "进程内存：计时运行中的峰值 RSS" in line and "显存" not in zh
