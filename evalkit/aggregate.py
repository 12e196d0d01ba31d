"""From ratings and raw timings to a decision: pandas tables, agreement, speed-up and the gate verdict.

Everything is computed from stored rows; fallback runs are never counted as assisted. Gold (check) pairs
never enter a comparison of the paths: they give the `gold` table (each rater's accuracy, evalkit.gold), and
the gate's min_gold_accuracy leaves the raters below it out of every other table and the verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .prompts import CRITERIA
from .stats import (
    bootstrap_ratio_of_medians, cohen_kappa, krippendorff_alpha_nominal, mcnemar_exact, median, speedup_over_prompts,
    wilson,
)

ALL = "all"


@dataclass
class Aggregate:
    tables: dict  # name -> pandas.DataFrame
    speed: dict  # overall speed-up, its source and interval
    verdict: dict  # {"decision": KEEP|DROP|INSUFFICIENT DATA, "conditions": [...], "notes": [...]}
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "tables": {k: json.loads(v.to_json(orient="records", force_ascii=False)) for k, v in self.tables.items()},
            "speed": self.speed,
            "verdict": self.verdict,
            "notes": self.notes,
        }


def _ratings_frame(db):
    import pandas as pd

    rows = list(db.query(
        "SELECT r.*, p.prompt_id FROM current_ratings r JOIN pairs p ON p.id = r.pair_id WHERE p.kind = 'study'"))
    return pd.DataFrame(rows)


def _with_all(df):
    """The frame once per prompt and once pooled under prompt_id = 'all'."""
    import pandas as pd

    pooled = df.copy()
    pooled["prompt_id"] = ALL
    return pd.concat([pooled, df], ignore_index=True) if len(df) else df


def pass_rates(ratings):
    """Per prompt (and all), path and criterion: n, passes, fails, unsure, pass rate with Wilson 95% interval."""
    import pandas as pd

    out = []
    if len(ratings):
        for prompt_id, g in _with_all(ratings).groupby("prompt_id"):
            for path in ("ordinary", "assisted"):
                for c in CRITERIA:
                    col = g[f"{path}_{c}"]
                    n, k = int(col.notna().sum()), int((col == "pass").sum())
                    ci = wilson(k, n)
                    out.append({"prompt_id": prompt_id, "path": path, "criterion": c, "n": n, "pass": k,
                                "fail": int((col == "fail").sum()), "unsure": int((col == "unsure").sum()),
                                "pass_rate": k / n if n else None, "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None})
    return pd.DataFrame(out, columns=["prompt_id", "path", "criterion", "n", "pass", "fail", "unsure", "pass_rate", "ci_low", "ci_high"])


def paired_differences(ratings):
    """Per prompt (and all) and criterion: assisted - ordinary pass rate on the same ratings, exact McNemar p."""
    import pandas as pd

    out = []
    if len(ratings):
        for prompt_id, g in _with_all(ratings).groupby("prompt_id"):
            for c in CRITERIA:
                o, a = g[f"ordinary_{c}"] == "pass", g[f"assisted_{c}"] == "pass"
                n = len(g)
                b, cc = int((o & ~a).sum()), int((a & ~o).sum())  # discordant pairs
                out.append({"prompt_id": prompt_id, "criterion": c, "n": n,
                            "ordinary_rate": o.mean() if n else None, "assisted_rate": a.mean() if n else None,
                            "difference": (a.mean() - o.mean()) if n else None,
                            "ordinary_only": b, "assisted_only": cc, "mcnemar_p": mcnemar_exact(b, cc)})
    return pd.DataFrame(out, columns=["prompt_id", "criterion", "n", "ordinary_rate", "assisted_rate", "difference",
                                      "ordinary_only", "assisted_only", "mcnemar_p"])


def preferences(ratings):
    """Per prompt (and all): assisted win / tie / loss shares with Wilson 95% intervals."""
    import pandas as pd

    out = []
    if len(ratings):
        for prompt_id, g in _with_all(ratings).groupby("prompt_id"):
            n = len(g)
            for outcome, path in (("win", "assisted"), ("tie", "tie"), ("loss", "ordinary")):
                k = int((g["preferred_path"] == path).sum())
                ci = wilson(k, n)
                out.append({"prompt_id": prompt_id, "assisted": outcome, "n": n, "count": k, "share": k / n,
                            "ci_low": ci[0], "ci_high": ci[1]})
    return pd.DataFrame(out, columns=["prompt_id", "assisted", "n", "count", "share", "ci_low", "ci_high"])


def agreement(ratings):
    """Krippendorff's alpha (nominal) per criterion (items: pair x path) and for the preference (items: pairs)."""
    import pandas as pd

    out = []
    for c in CRITERIA:
        units = []
        if len(ratings):
            for _pid, g in ratings.groupby("pair_id"):
                for path in ("ordinary", "assisted"):
                    units.append(list(g[f"{path}_{c}"].dropna()))
        pairable = sum(1 for u in units if len(u) >= 2)
        out.append({"item": c, "alpha": krippendorff_alpha_nominal(units), "pairable_items": pairable})
    units = [list(g["preferred_path"]) for _pid, g in ratings.groupby("pair_id")] if len(ratings) else []
    out.append({"item": "preference", "alpha": krippendorff_alpha_nominal(units),
                "pairable_items": sum(1 for u in units if len(u) >= 2)})
    return pd.DataFrame(out, columns=["item", "alpha", "pairable_items"])


def prescreen_agreement(db, ratings):
    """Cohen's kappa per criterion between the rule pre-screen and the raters (unsure answers left out)."""
    import pandas as pd

    from .fidelity import RULES_VERSION, screen_all

    screen_all(db)
    screened = {(r["generation_id"], r["criterion"]): bool(r["passed"])
                for r in db.query("SELECT * FROM prescreen WHERE rules_version = ?", [RULES_VERSION])}
    pairs = {p["id"]: p for p in db.query("SELECT * FROM pairs")}
    out = []
    for c in CRITERIA:
        rater, rule = [], []
        for _, r in ratings.iterrows() if len(ratings) else []:
            p = pairs[r["pair_id"]]
            for path in ("ordinary", "assisted"):
                v = r[f"{path}_{c}"]
                key = (p[f"{path}_generation_id"], c)
                if v in ("pass", "fail") and key in screened:
                    rater.append(v == "pass")
                    rule.append(screened[key])
        agree = sum(x == y for x, y in zip(rater, rule))
        out.append({"criterion": c, "n": len(rater), "agreement": agree / len(rater) if rater else None,
                    "kappa": cohen_kappa(rater, rule)})
    return pd.DataFrame(out, columns=["criterion", "n", "agreement", "kappa"])


def _latest(db, kind: str):
    return next(db.query("SELECT * FROM experiments WHERE kind = ? ORDER BY id DESC LIMIT 1", [kind]), None)


def timing(db, tolerance: float, resamples: int):
    """Per path timing, memory and the speed-up. Source: the latest benchmark (the protocol) when there is
    one, else the pair pool's single runs (said so). Also per prompt."""
    import pandas as pd

    from .bench import pair_runs, seconds_by_prompt

    bench = _latest(db, "bench")
    rows, source, exp_id = [], None, None
    if bench is not None:
        rows = list(db.query(
            """SELECT t.path, t.prompt_id, t.round, t.rep, t.new_tokens, t.stop_reason, t.seconds, t.tokens_per_second,
                      g.token_hash, g.peak_rss_mb, g.draft_proposed, g.draft_accepted
               FROM timing_runs t JOIN generations g ON g.id = t.generation_id WHERE t.experiment_id = ?""", [bench["id"]]))
        source, exp_id = "benchmark", bench["id"]
    if not rows:
        pool_rows = list(db.query(
            """SELECT p.id AS pair, p.prompt_id, g.path, g.new_tokens, g.stop_reason, g.generate_seconds AS seconds,
                      g.new_tokens / g.generate_seconds AS tokens_per_second, g.token_hash, g.peak_rss_mb,
                      g.draft_proposed, g.draft_accepted
               FROM pairs p JOIN generations g ON g.id IN (p.ordinary_generation_id, p.assisted_generation_id)
               WHERE p.kind = 'study'"""))
        for r in pool_rows:  # pair index plays the role of (round, rep)
            r["round"], r["rep"] = 1, r.pop("pair")
        rows, source = pool_rows, ("pair pool (single runs, not the benchmark protocol)" if pool_rows else None)
    paths = []
    for path in ("ordinary", "assisted", "fallback"):
        rs = [r for r in rows if r["path"] == path]
        if rs:
            paths.append({"path": path, "runs": len(rs), "median_seconds": median([r["seconds"] for r in rs]),
                          "median_tokens_per_second": median([r["tokens_per_second"] for r in rs]),
                          "median_new_tokens": median([r["new_tokens"] for r in rs]),
                          "median_peak_rss_mb": median([r["peak_rss_mb"] for r in rs])})
    speed_rows = []
    for prompt_id in [ALL] + sorted({r["prompt_id"] for r in rows}):
        sel = rows if prompt_id == ALL else [r for r in rows if r["prompt_id"] == prompt_id]
        matched, comp = pair_runs(sel, tolerance)
        o = [x["seconds"] for x, _ in comp]
        a = [y["seconds"] for _, y in comp]
        if prompt_id == ALL:  # median over prompts of each prompt's ratio (as the benchmark summary)
            point, ci = speedup_over_prompts(seconds_by_prompt(comp), resamples)
        else:
            point = (median(o) / median(a)) if comp else None
            ci = bootstrap_ratio_of_medians(o, a, resamples) if comp else None
        ass = [r for r in sel if r["path"] == "assisted"]
        proposed = sum(r["draft_proposed"] or 0 for r in ass)
        speed_rows.append({
            "prompt_id": prompt_id, "matched_pairs": len(matched), "comparable_pairs": len(comp),
            "speedup": point,
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
            "identical_outputs": (sum(x["token_hash"] == y["token_hash"] for x, y in matched) / len(matched)) if matched else None,
            "acceptance_rate": (sum(r["draft_accepted"] or 0 for r in ass) / proposed) if proposed else None,
        })
    extra = _extra_memory(db, exp_id)
    overall = speed_rows[0]
    speed = {"source": source, "experiment_id": exp_id, "speedup": overall["speedup"],
             "speedup_ci95": [overall["ci_low"], overall["ci_high"]] if overall["ci_low"] is not None else None,
             "comparable_pairs": overall["comparable_pairs"], "matched_pairs": overall["matched_pairs"],
             "identical_outputs": overall["identical_outputs"], "extra_memory_mb": extra,
             "fallback_runs": sum(1 for r in rows if r["path"] == "fallback")}
    return pd.DataFrame(paths), pd.DataFrame(speed_rows), speed


def _extra_memory(db, bench_id) -> float | None:
    """Memory the draft adds: assisted minus ordinary after load, each in its own process (benchmark)."""
    if bench_id is None:
        return None
    procs = list(db.query("SELECT * FROM bench_processes WHERE experiment_id = ? AND status = 'ok'", [bench_id]))

    def after_load(p):
        cuda = json.loads(p["cuda_after_load"] or "{}")
        if cuda:
            return sum(d.get("allocated_mb", 0) for d in cuda.values())
        return p["rss_after_load_mb"]

    o = median([after_load(p) for p in procs if p["path"] == "ordinary"])
    a = median([after_load(p) for p in procs if p["path"] == "assisted"])
    return (a - o) if (o is not None and a is not None) else None


def frozen_gate(db) -> tuple[dict | None, list[str]]:
    """The gate frozen with the rated pool (else the benchmark), and notes when the file changed since."""
    from .gate import gate_text_hash

    notes = []
    exp = _latest(db, "pool") or _latest(db, "bench")
    if exp is None or not exp["gate_hash"]:
        return None, ["no experiment with a frozen release gate"]
    frozen = json.loads(exp["gate_json"])
    try:
        current = open(frozen["path"], encoding="utf-8").read()
        if gate_text_hash(current) != frozen["hash"]:
            notes.append(f"gate file {frozen['path']} changed after experiment {exp['id']} started "
                         f"(frozen {frozen['hash']}, now {gate_text_hash(current)}): the frozen version is used")
    except OSError:
        notes.append(f"gate file {frozen['path']} is gone; the version frozen with experiment {exp['id']} is used")
    return frozen, notes


def decide(gate_values: dict | None, diffs, speed: dict, ratings, n_pairs: int) -> dict:
    conditions = []
    if gate_values is None:
        return {"decision": "INSUFFICIENT DATA", "conditions": [{"name": "gate", "ok": None, "reason": "no frozen release gate"}]}
    g = gate_values
    # ratings per pair
    per_pair = ratings.groupby("pair_id").size() if len(ratings) else None
    rated_min = int(per_pair.min()) if per_pair is not None and len(per_pair) == n_pairs and n_pairs else 0
    enough = n_pairs > 0 and rated_min >= g["min_ratings_per_pair"]
    conditions.append({"name": "ratings per pair", "ok": True if enough else None,
                       "reason": f"fewest current ratings on a pair: {rated_min} (need {g['min_ratings_per_pair']}, {n_pairs} pairs)"})
    lo = speed["speedup_ci95"][0] if speed.get("speedup_ci95") else None
    conditions.append({"name": "speed-up", "ok": None if lo is None else lo >= g["min_speedup_ci_low"],
                       "reason": "no speed-up measured over comparable outputs" if lo is None else
                       f"95% CI lower end {lo:.2f} vs minimum {g['min_speedup_ci_low']:.2f} ({speed['source']})"})
    all_diffs = diffs[diffs["prompt_id"] == ALL] if len(diffs) else diffs
    if len(all_diffs):
        worst = all_diffs.sort_values("difference").iloc[0]
        ok = bool(-worst["difference"] <= g["max_pass_rate_drop"])
        conditions.append({"name": "fidelity", "ok": ok,
                           "reason": f"largest pass-rate drop: {worst['criterion']} {worst['difference']:+.3f} "
                                     f"(allowed -{g['max_pass_rate_drop']:.3f}; McNemar p={worst['mcnemar_p']:.3f})"})
    else:
        conditions.append({"name": "fidelity", "ok": None, "reason": "no ratings yet"})
    mem = speed.get("extra_memory_mb")
    conditions.append({"name": "memory", "ok": None if mem is None else mem <= g["max_extra_memory_mb"],
                       "reason": "extra memory of the draft not measured (run `evalkit bench`)" if mem is None else
                       f"draft adds {mem:.0f} MB (allowed {g['max_extra_memory_mb']:.0f} MB)"})
    # speed and memory failures decide on their own; a fidelity failure only once every pair is rated enough
    failed = {c["name"] for c in conditions if c["ok"] is False}
    if failed & {"speed-up", "memory"} or ("fidelity" in failed and enough):
        decision = "DROP"
    elif all(c["ok"] is True for c in conditions):
        decision = "KEEP"
    else:
        decision = "INSUFFICIENT DATA"
    return {"decision": decision, "conditions": conditions, "gate": g}


def aggregate(db, tolerance: float | None = None, resamples: int | None = None) -> Aggregate:
    """Every table, the speed-up and the gate verdict, from the database as it is now. The comparability
    tolerance and bootstrap size default to those of the latest experiment's stored config."""
    import pandas as pd

    exp = _latest(db, "pool") or _latest(db, "bench")
    bench_cfg = json.loads(exp["config_json"]).get("bench", {}) if exp else {}
    tolerance = bench_cfg.get("length_tolerance", 0.1) if tolerance is None else tolerance
    resamples = bench_cfg.get("bootstrap", 2000) if resamples is None else resamples

    from .gold import accuracy

    ratings = _ratings_frame(db)  # study pairs only
    gate, notes = frozen_gate(db)
    min_gold = (gate["values"].get("min_gold_accuracy", 0.0) if gate else 0.0) or 0.0
    gold_table, excluded = accuracy(db, min_gold, ratings["rater"].unique() if len(ratings) else ())
    notes += _gold_notes(gold_table, min_gold, ratings, excluded)
    if excluded and len(ratings):  # before any table: what the verdict rests on, every table shows
        ratings = ratings[~ratings["rater"].isin(excluded)].reset_index(drop=True)
    diffs = paired_differences(ratings)
    path_timing, speed_by_prompt, speed = timing(db, tolerance, resamples)
    n_pairs, n_gold = db.execute("SELECT COALESCE(SUM(kind = 'study'), 0), COALESCE(SUM(kind = 'gold'), 0) FROM pairs").fetchone()
    verdict = decide(gate["values"] if gate else None, diffs, speed, ratings, n_pairs)
    if speed["fallback_runs"]:
        notes.append(f"{speed['fallback_runs']} assisted run(s) fell back; they are not counted as assisted")
    if speed["source"] and speed["source"].startswith("pair pool"):
        notes.append("speed-up taken from the pair pool's single runs: run `evalkit bench` for the protocol's numbers")
    tables = {
        "pass_rates": pass_rates(ratings),
        "paired_differences": diffs,
        "preferences": preferences(ratings),
        "agreement": agreement(ratings),
        "prescreen_agreement": prescreen_agreement(db, ratings),
        "timing": path_timing,
        "speedup": speed_by_prompt,
        "gold": gold_table,
        "counts": pd.DataFrame([{
            "pairs": n_pairs, "gold_pairs": n_gold, "current_ratings": len(ratings),
            "raters": int(ratings["rater"].nunique()) if len(ratings) else 0,
            "skips": db.execute("SELECT COUNT(*) FROM ratings WHERE kind = 'skip'").fetchone()[0],
        }]),
    }
    verdict["notes"] = notes
    return Aggregate(tables=tables, speed=speed, verdict=verdict, notes=notes)


def _gold_notes(table, min_gold: float, ratings, excluded: list[str]) -> list[str]:
    """What the gold check did to the verdict's inputs (no rater named: the notes reach raters who finished)."""
    if not min_gold:
        return []
    checked = int((table["gold_ratings"] > 0).sum()) if len(table) else 0
    if not checked:
        return [f"gold check (min_gold_accuracy {min_gold:.2f}) not applied: no rater has rated a gold pair"]
    notes = []
    if excluded:
        n = int(ratings["rater"].isin(excluded).sum()) if len(ratings) else 0
        notes.append(f"gold check: {len(excluded)} of {checked} checked rater(s) below the pre-registered accuracy "
                     f"{min_gold:.2f} are left out, with their {n} rating(s) of study pairs, of every table and the verdict")
    else:
        notes.append(f"gold check: all {checked} checked rater(s) at or above the pre-registered accuracy {min_gold:.2f}")
    unchecked = int((table["gold_ratings"] == 0).sum())
    if unchecked:
        notes.append(f"gold check: {unchecked} rater(s) met no gold pair and could not be checked; they are kept")
    return notes


def format_text(agg: Aggregate) -> str:
    import pandas as pd

    lines = []
    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        for name, df in agg.tables.items():
            lines += [f"== {name}", df.to_string(index=False) if len(df) else "(no data)", ""]
    v = agg.verdict
    lines.append(f"VERDICT: {v['decision']}")
    for c in v["conditions"]:
        mark = {True: "ok  ", False: "FAIL", None: "??  "}[c["ok"]]
        lines.append(f"  [{mark}] {c['name']}: {c['reason']}")
    for n in agg.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)
