"""From ratings and raw timings to a decision: tables, agreement, speed-up and the gate verdict.

Everything is computed from stored rows; fallback runs are never counted as assisted. The ratings are read in one
query into arrays (RatingData) and every table is a handful of vectorised group sums, so a study of a million
ratings aggregates in seconds. The unit of evidence is the pair: intervals treat the ratings of one pair (and,
with enough raters, the ratings of one rater) as correlated; see the README's "The decision".
Gold (check) pairs never enter a comparison of the paths: they give the `gold` table (each rater's accuracy,
evalkit.gold), and the gate's min_gold_accuracy leaves the raters below it out of every other table and the verdict.

    data     the ratings as arrays, the groupings, the experiments read
    quality  pass rates, paired differences, preferences, agreement, pre-screen agreement
    timing   timing, memory and the speed figure (evalkit.speed's computation)
    verdict  the frozen gate, the decision sample and KEEP / DROP / INSUFFICIENT DATA
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..pace import note, time_on_task
from .data import ALL, RatingData, deciding_experiment, load_ratings
from .quality import DIFF_COLUMNS, agreement, paired_differences, pass_rates, preferences, prescreen_agreement
from .timing import POOL_SOURCE, Speed, batches, timing
from .verdict import INTERIM, Condition, Decision, Verdict, decide, decision_sample, fidelity_rows, frozen_gate, interval_text

__all__ = ["ALL", "INTERIM", "Aggregate", "Condition", "Decision", "RatingData", "Speed", "Verdict", "aggregate",
           "format_text", "frozen_gate"]


@dataclass
class Aggregate:
    tables: dict  # name -> pandas.DataFrame
    speed: Speed  # the overall speed-up, its source and interval, the draft's extra memory
    verdict: Verdict
    notes: list[str] = field(default_factory=list)

    @property
    def interim(self) -> bool:
        return self.verdict.interim

    def to_json(self) -> dict:
        return {
            "interim": self.interim,
            "label": self.verdict.label,
            "tables": {k: json.loads(v.to_json(orient="records", force_ascii=False)) for k, v in self.tables.items()},
            "speed": self.speed.to_json(),
            "verdict": self.verdict.to_json(),
            "notes": self.notes,
        }


def aggregate(db, tolerance: float | None = None, resamples: int | None = None) -> Aggregate:
    """Every table, the speed-up and the gate verdict, from the database as it is now. The comparability
    tolerance and bootstrap size default to those of the latest experiment's stored config."""
    import numpy as np
    import pandas as pd

    exp = deciding_experiment(db)
    stored_cfg = json.loads(exp["config_json"]) if exp else {}
    bench_cfg = stored_cfg.get("bench", {})
    floor = stored_cfg.get("app", {}).get("min_seconds_on_task", 10.0)
    tolerance = bench_cfg.get("length_tolerance", 0.1) if tolerance is None else tolerance
    resamples = bench_cfg.get("bootstrap", 2000) if resamples is None else resamples

    from ..gold import accuracy

    gate, notes = frozen_gate(db)
    values = gate["values"] if gate else None
    confidence = values["confidence"] if values else 0.95
    ratings = load_ratings(db)  # study pairs only
    min_gold = (values or {}).get("min_gold_accuracy", 0.0) or 0.0
    gold_table, excluded = accuracy(db, min_gold, ratings.raters)
    notes += _gold_notes(gold_table, min_gold, ratings, excluded)
    if excluded and len(ratings):  # before any table: what the verdict rests on, every table shows
        ratings = ratings.without_raters(excluded)
    path_timing, speed_by_prompt, speed = timing(db, tolerance, resamples)
    batch_table, batch, speed.batch_experiment_id = batches(db)
    speed.batch_answer = batch.answer if batch is not None else None
    n_pairs = ratings.n_pairs
    n_gold = db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'gold'").fetchone()[0]
    if values:
        sample, complete = decision_sample(ratings, values["min_ratings_per_pair"], values["planned_pairs"])
        fidelity = fidelity_rows(sample, confidence, resamples, values["margin"])
    else:
        fidelity, complete = [], 0
    verdict = decide(values, fidelity, speed, complete, n_pairs)
    if verdict.interim:
        notes.insert(0, "INTERIM LOOK, NOT A DECISION: the verdict stays INSUFFICIENT DATA (or DROP on speed or "
                        "memory) until the planned number of pairs is rated; stopping early because it looks good "
                        "is what the plan forbids")
    if speed.fallback_runs:
        notes.append(f"{speed.fallback_runs} assisted run(s) fell back; they are not counted as assisted")
    if speed.source == POOL_SOURCE:
        notes.append("speed-up taken from the pair pool's single runs: run `evalkit bench` for the protocol's numbers")
    if batch is not None:
        notes.append(f"batch sizes (benchmark {speed.batch_experiment_id}): {batch.answer}")
    pace = time_on_task(db, floor)
    if pace_note := note(pace, floor):
        notes.append(pace_note)
    tables = {
        "pass_rates": pass_rates(ratings, confidence),
        "paired_differences": paired_differences(ratings, confidence, resamples),
        "non_inferiority": pd.DataFrame(fidelity, columns=DIFF_COLUMNS + ["margin", "ok"]),
        "preferences": preferences(ratings, confidence),
        "agreement": agreement(ratings),
        "prescreen_agreement": prescreen_agreement(db, ratings),
        "timing": path_timing,
        "speedup": speed_by_prompt,
        "batch": batch_table,
        "time_on_task": pace,
        "gold": gold_table,
        "counts": pd.DataFrame([{
            "pairs": n_pairs, "gold_pairs": n_gold, "complete_pairs": complete,
            "planned_pairs": values["planned_pairs"] if values else None, "current_ratings": len(ratings),
            "raters": int(np.unique(ratings.rater).size),
            "skips": db.execute("SELECT COUNT(*) FROM ratings WHERE kind = 'skip'").fetchone()[0],
        }]),
    }
    verdict.notes = notes
    return Aggregate(tables=tables, speed=speed, verdict=verdict, notes=notes)


def _gold_notes(table, min_gold: float, ratings, excluded: list[str]) -> list[str]:
    """What the gold check did to the verdict's inputs (no rater named: the notes reach raters who finished)."""
    import numpy as np

    if not min_gold:
        return []
    checked = int((table["gold_ratings"] > 0).sum()) if len(table) else 0
    if not checked:
        return [f"gold check (min_gold_accuracy {min_gold:.2f}) not applied: no rater has rated a gold pair"]
    notes = []
    if excluded:
        gone = [i for i, r in enumerate(ratings.raters) if r in set(excluded)]
        n = int(np.isin(ratings.rater, gone).sum()) if len(ratings) else 0
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
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.3f}".format):
        for name, df in agg.tables.items():
            lines += [f"== {name}", df.to_string(index=False) if len(df) else "(no data)", ""]
    v = agg.verdict
    lines.append(f"VERDICT: {v.decision}" + (f"  ({v.label})" if v.interim else ""))
    for c in v.conditions:
        mark = {True: "ok  ", False: "FAIL", None: "??  "}[c.ok]
        lines.append(f"  [{mark}] {c.name}: {c.reason}")
    conf = v.gate.get("confidence", 0.95) if v.gate else 0.95
    for r in v.fidelity:
        lines.append(f"         {'inside' if r['ok'] else 'OUTSIDE'} margin -{r['margin']:.3f}: {interval_text(r, conf)}")
    for n in agg.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)
