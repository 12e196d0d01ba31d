"""From ratings and raw timings to a decision: tables, agreement, speed-up and the gate verdict.

Everything is computed from stored rows; fallback runs are never counted as assisted. The ratings are read in one
query into arrays (RatingData) and every table is a handful of vectorised group sums, so a study of a million
ratings aggregates in seconds. The unit of evidence is the pair: intervals treat the ratings of one pair (and,
with enough raters, the ratings of one rater) as correlated; see the README's "The decision".
Gold (check) pairs never enter a comparison of the paths: they give the `gold` table (each rater's accuracy,
evalkit.gold), and the gate's min_gold_accuracy leaves the raters below it out of every other table and the verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .pace import note, time_on_task
from .prompts import CRITERIA
from .stats import (
    bootstrap_ratio_of_medians, cohen_kappa_binary, krippendorff_alpha_counts, mcnemar_exact, median,
    paired_difference, speedup_over_prompts, wilson_array, z_for,
)
from .stats import proportions_from_counts as stats_proportions

ALL = "all"
PATHS = ("ordinary", "assisted")
INTERIM = "interim look, not a decision"


@dataclass
class Aggregate:
    tables: dict  # name -> pandas.DataFrame
    speed: dict  # overall speed-up, its source and interval
    verdict: dict  # {"decision", "interim", "label", "conditions": [...], "fidelity": [...], "gate", "notes"}
    notes: list[str] = field(default_factory=list)

    @property
    def interim(self) -> bool:
        return bool(self.verdict.get("interim", True))

    def to_json(self) -> dict:
        return {
            "interim": self.interim,
            "label": self.verdict.get("label", INTERIM),
            "tables": {k: json.loads(v.to_json(orient="records", force_ascii=False)) for k, v in self.tables.items()},
            "speed": self.speed,
            "verdict": self.verdict,
            "notes": self.notes,
        }


def _code(letter: str) -> int:
    """An answer's code: the first letter's code point modulo 16 (distinct for p / f / u / '-' and o / a / t / '-')."""
    return ord(letter) % 16


MISSING = _code("-")


@dataclass
class RatingData:
    """The current ratings as arrays, one entry per rating, and the pairs they point at.

    answers: (ratings, 9) codes (see _code): for each criterion the ordinary then the assisted answer (pass / fail /
    unsure), then the preferred path (ordinary / assisted / tie); MISSING where the column is empty."""

    rating_id: object  # int64 (ratings,)
    pair: object  # int64 (ratings,): index into the pair arrays
    rater: object  # int64 (ratings,): index into raters
    answers: object  # uint8 (ratings, 9)
    raters: list[str]
    pair_ids: list[str]
    pair_prompt: object  # int64 (pairs,): index into prompts
    prompts: list[str]
    pair_generation: dict  # path -> int64 (pairs,) generation id

    def __len__(self) -> int:
        return len(self.rating_id)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_ids)

    def code(self, path: str, criterion: str):
        return self.answers[:, 2 * CRITERIA.index(criterion) + PATHS.index(path)]

    def passed(self, path: str, criterion: str):
        return self.code(path, criterion) == _code("p")

    def preferred(self):
        return self.answers[:, 8]

    def without_raters(self, names) -> "RatingData":
        """The ratings of every rater but these (the gold check's exclusions)."""
        import numpy as np

        gone = [i for i, r in enumerate(self.raters) if r in set(names)]
        return self.select(~np.isin(self.rater, gone))

    def select(self, keep) -> "RatingData":
        return RatingData(self.rating_id[keep], self.pair[keep], self.rater[keep], self.answers[keep], self.raters,
                          self.pair_ids, self.pair_prompt, self.prompts, self.pair_generation)


# Gold (check) pairs never enter a comparison of the paths: they are scored in evalkit.gold. (A test turns this off
# to show that a leak would move the tables.)
ONLY_STUDY_PAIRS = True


def load_ratings(db) -> RatingData:
    """Every current rating in one SQL statement. SQLite packs each rating's nine answers into one integer (four
    bits each) and joins each column into one comma-separated string that numpy parses in one call, so no
    Python object is made per value (a million ratings load in about two seconds)."""
    import numpy as np
    import pandas as pd

    only = "kind = 'study'" if ONLY_STUDY_PAIRS else "kind IN ('study', 'gold')"
    pairs = db.execute("SELECT rowid, id, prompt_id, ordinary_generation_id, assisted_generation_id FROM pairs "
                       f"WHERE {only} ORDER BY rowid").fetchall()
    rowids = np.array([p[0] for p in pairs], np.int64)
    prompts = sorted({p[2] for p in pairs})
    prompt_index = {p: i for i, p in enumerate(prompts)}
    columns = [f"r.{path}_{c}" for c in CRITERIA for path in PATHS] + ["r.preferred_path"]
    packed = " + ".join(f"((coalesce(unicode({col}), 45) % 16) << {4 * i})" for i, col in enumerate(columns))
    ids, pair_rows, raters, answers = db.execute(
        f"""SELECT group_concat(r.id, ','), group_concat(p.rowid, ','), group_concat(r.rater, char(31)),
                   group_concat({packed}, ',')
            FROM current_ratings r JOIN pairs p ON p.id = r.pair_id WHERE p.{only}""").fetchone()

    def numbers(text):
        return np.array([], np.int64) if not text else np.fromstring(text, dtype=np.int64, sep=",")

    packed_answers = numbers(answers)
    rater_index, rater_names = pd.factorize(pd.Series(raters.split("\x1f") if raters else [], dtype=object))
    return RatingData(
        rating_id=numbers(ids), pair=np.searchsorted(rowids, numbers(pair_rows)),
        rater=np.asarray(rater_index, np.int64),
        answers=np.stack([(packed_answers >> (4 * i)) & 15 for i in range(len(columns))], axis=1).astype(np.uint8)
        if len(packed_answers) else np.zeros((0, len(columns)), np.uint8),
        raters=[str(x) for x in rater_names], pair_ids=[p[1] for p in pairs],
        pair_prompt=np.array([prompt_index[p[2]] for p in pairs], np.int64), prompts=prompts,
        pair_generation={"ordinary": np.array([p[3] or -1 for p in pairs], np.int64),
                         "assisted": np.array([p[4] or -1 for p in pairs], np.int64)})


def _groupings(ratings: RatingData) -> list:
    """The two groupings every per-prompt table reports: [('all'), pairs' group, ratings' rater cluster key, rater
    cluster's group] pooled, then the same per prompt (a rater's ratings of one prompt form one cluster there)."""
    import numpy as np

    k = max(len(ratings.raters), 1)
    n_prompts = len(ratings.prompts)
    prompt_of_rating = ratings.pair_prompt[ratings.pair]
    return [
        ([ALL], np.zeros(ratings.n_pairs, np.int64), ratings.rater, np.zeros(k, np.int64)),
        (ratings.prompts, ratings.pair_prompt, prompt_of_rating * k + ratings.rater,
         np.repeat(np.arange(n_prompts, dtype=np.int64), k)),
    ]


def _shares(ratings: RatingData, yes, valid, grouping, z: float) -> dict:
    """A cluster-aware share (stats.proportions_from_counts) of `yes` among `valid` ratings, per group."""
    import numpy as np

    labels, pair_group, rater_key, rater_group = grouping
    yes = yes.astype(float)
    valid = valid.astype(float)
    return stats_proportions(
        np.bincount(ratings.pair, weights=yes, minlength=ratings.n_pairs),
        np.bincount(ratings.pair, weights=valid, minlength=ratings.n_pairs), pair_group,
        np.bincount(rater_key, weights=yes, minlength=len(rater_group)),
        np.bincount(rater_key, weights=valid, minlength=len(rater_group)), rater_group, len(labels), z)


def pass_rates(ratings: RatingData, confidence: float = 0.95):
    """Per prompt (and all), path and criterion: n ratings, passes, fails, unsure, pass rate, its cluster-aware
    interval (ci_low, ci_high: Wilson at the effective sample size, pairs and raters as clusters) and, for
    reference only, the per-rating Wilson interval that treats every rating as independent."""
    import numpy as np
    import pandas as pd

    cols = ["prompt_id", "path", "criterion", "n", "pass", "fail", "unsure", "pass_rate", "ci_low", "ci_high",
            "effective_n", "wilson_ratings_low", "wilson_ratings_high"]
    if not len(ratings):
        return pd.DataFrame([], columns=cols)
    z = z_for(confidence)
    out = []
    for grouping in _groupings(ratings):
        labels, pair_group = grouping[0], grouping[1]
        for path in PATHS:
            for c in CRITERIA:
                code = ratings.code(path, c)
                res = _shares(ratings, code == _code("p"), code != MISSING, grouping, z)
                fails = np.bincount(pair_group, weights=np.bincount(ratings.pair, weights=code == _code("f"),
                                                                    minlength=ratings.n_pairs), minlength=len(labels))
                unsure = np.bincount(pair_group, weights=np.bincount(ratings.pair, weights=code == _code("u"),
                                                                     minlength=ratings.n_pairs), minlength=len(labels))
                w_lo, w_hi = wilson_array(res["k"], res["n"], z)
                for g, label in enumerate(labels):
                    if res["n"][g]:
                        out.append([label, path, c, int(res["n"][g]), int(res["k"][g]), int(fails[g]), int(unsure[g]),
                                    res["p"][g], res["low"][g], res["high"][g], res["n_eff"][g], w_lo[g], w_hi[g]])
    df = pd.DataFrame(out, columns=cols)
    return df.sort_values(["prompt_id", "path"], key=lambda s: s.map(lambda v: (v != ALL, v)) if s.name == "prompt_id"
                          else s.map(PATHS.index), kind="stable").reset_index(drop=True)


def _x(ratings: RatingData, criterion: str):
    """Per rating: assisted passed - ordinary passed (unsure counts as not passed), and which ratings answer both."""
    import numpy as np

    o, a = ratings.code("ordinary", criterion), ratings.code("assisted", criterion)
    valid = (o != MISSING) & (a != MISSING)
    return (a == _code("p")).astype(np.int8) - (o == _code("p")).astype(np.int8), valid


def _difference_rows(ratings: RatingData, criterion: str, grouping, confidence: float, resamples: int) -> list:
    """paired_difference for one criterion, one study per group (a pair lies in one group)."""
    import numpy as np

    labels, pair_group, rater_key, _rater_group = grouping
    x, valid = _x(ratings, criterion)
    if not valid.all():
        x, pair, rater_key = x[valid], ratings.pair[valid], rater_key[valid]
    else:
        pair = ratings.pair
    res = paired_difference(x, pair, rater_key, pair_group, len(labels), confidence, resamples)
    r_p = np.bincount(pair, minlength=ratings.n_pairs)
    rated = r_p > 0
    r_safe = np.where(rated, r_p, 1)
    o_pair = np.bincount(pair, weights=ratings.passed("ordinary", criterion)[valid] if not valid.all()
                         else ratings.passed("ordinary", criterion), minlength=ratings.n_pairs) / r_safe
    a_pair = np.bincount(pair, weights=ratings.passed("assisted", criterion)[valid] if not valid.all()
                         else ratings.passed("assisted", criterion), minlength=ratings.n_pairs) / r_safe
    n = np.bincount(pair_group, weights=rated, minlength=len(labels))
    o_rate = np.bincount(pair_group, weights=o_pair, minlength=len(labels))
    a_rate = np.bincount(pair_group, weights=a_pair, minlength=len(labels))
    study = pair_group[pair]
    b = np.bincount(study, weights=(x == -1), minlength=len(labels)).astype(int)  # ordinary only
    c = np.bincount(study, weights=(x == 1), minlength=len(labels)).astype(int)  # assisted only
    rows = []
    for i, label in enumerate(labels):
        if n[i] == 0:
            continue
        rows.append({
            "prompt_id": label, "criterion": criterion, "pairs": int(n[i]), "ratings": int(res["ratings"][i]),
            "ordinary_rate": o_rate[i] / n[i], "assisted_rate": a_rate[i] / n[i], "difference": res["difference"][i],
            "ci_low": res["low"][i], "ci_high": res["high"][i],
            "tango_low": res["tango_low"][i], "tango_high": res["tango_high"][i],
            "bootstrap_low": res["bootstrap_low"][i], "bootstrap_high": res["bootstrap_high"][i],
            "two_way_low": res["two_way_low"][i], "two_way_high": res["two_way_high"][i],
            "ordinary_only": int(b[i]), "assisted_only": int(c[i]), "mcnemar_p_ratings": mcnemar_exact(int(b[i]), int(c[i])),
        })
    return rows


DIFF_COLUMNS = ["prompt_id", "criterion", "pairs", "ratings", "ordinary_rate", "assisted_rate", "difference", "ci_low",
                "ci_high", "tango_low", "tango_high", "bootstrap_low", "bootstrap_high", "two_way_low", "two_way_high",
                "ordinary_only", "assisted_only", "mcnemar_p_ratings"]


def paired_differences(ratings: RatingData, confidence: float = 0.95, resamples: int = 2000):
    """Per prompt (and all) and criterion: assisted - ordinary pass rate with every pair weighted once (the mean of
    its raters), and the gate's interval (ci_low, ci_high: the union of Tango's score interval, the pair bootstrap
    and, with enough raters, the two-way cluster-robust interval; each part in its own columns). The exact McNemar
    p-value over ratings (ordinary_only / assisted_only are rating counts) treats ratings as independent: for
    reference only."""
    import pandas as pd

    rows = []
    if len(ratings):
        for grouping in _groupings(ratings):
            for c in CRITERIA:
                rows += _difference_rows(ratings, c, grouping, confidence, resamples)
    df = pd.DataFrame(rows, columns=DIFF_COLUMNS)
    if len(df):  # all first, then prompts, criteria in their fixed order
        df["_c"] = df["criterion"].map(CRITERIA.index)
        df["_p"] = (df["prompt_id"] != ALL).astype(int)
        df = df.sort_values(["_p", "prompt_id", "_c"], kind="stable").drop(columns=["_c", "_p"]).reset_index(drop=True)
    return df


def preferences(ratings: RatingData, confidence: float = 0.95):
    """Per prompt (and all): assisted win / tie / loss shares with cluster-aware intervals (as pass_rates) and the
    per-rating Wilson interval for reference."""
    import pandas as pd

    cols = ["prompt_id", "assisted", "n", "count", "share", "ci_low", "ci_high", "effective_n", "wilson_ratings_low",
            "wilson_ratings_high"]
    if not len(ratings):
        return pd.DataFrame([], columns=cols)
    z = z_for(confidence)
    pref = ratings.preferred()
    valid = pref != MISSING
    out = []
    for grouping in _groupings(ratings):
        labels = grouping[0]
        per_outcome = []
        for name, letter in (("win", "a"), ("tie", "t"), ("loss", "o")):
            res = _shares(ratings, pref == _code(letter), valid, grouping, z)
            per_outcome.append((name, res, wilson_array(res["k"], res["n"], z)))
        for g, label in enumerate(labels):
            for name, res, (w_lo, w_hi) in per_outcome:
                if res["n"][g]:
                    out.append([label, name, int(res["n"][g]), int(res["k"][g]), res["p"][g], res["low"][g],
                                res["high"][g], res["n_eff"][g], w_lo[g], w_hi[g]])
    return pd.DataFrame(out, columns=cols)


def agreement(ratings: RatingData):
    """Krippendorff's alpha (nominal) per criterion (items: pair x path; values pass / fail / unsure) and for the
    preference (items: pairs)."""
    import numpy as np
    import pandas as pd

    out = []
    letters = np.full(256, -1, np.int64)

    def alpha(units, values, n_units, n_values):
        keep = values >= 0
        counts = np.bincount(units[keep] * n_values + values[keep], minlength=n_units * n_values)
        counts = counts.reshape(n_units, n_values)
        pairable = int((counts.sum(axis=1) >= 2).sum())
        return krippendorff_alpha_counts(counts), pairable

    letters[[_code("p"), _code("f"), _code("u")]] = [0, 1, 2]
    for c in CRITERIA:
        if len(ratings):
            units = np.concatenate([ratings.pair * 2 + k for k in range(2)])
            values = np.concatenate([letters[ratings.code(path, c)] for path in PATHS])
            a, pairable = alpha(units, values, ratings.n_pairs * 2, 3)
        else:
            a, pairable = None, 0
        out.append({"item": c, "alpha": a, "pairable_items": pairable})
    if len(ratings):
        letters[:] = -1
        letters[[_code("o"), _code("a"), _code("t")]] = [0, 1, 2]
        a, pairable = alpha(ratings.pair, letters[ratings.preferred()], ratings.n_pairs, 3)
    else:
        a, pairable = None, 0
    out.append({"item": "preference", "alpha": a, "pairable_items": pairable})
    return pd.DataFrame(out, columns=["item", "alpha", "pairable_items"])


def prescreen_agreement(db, ratings: RatingData):
    """Cohen's kappa per criterion between the rule pre-screen and the raters (unsure answers left out)."""
    import numpy as np
    import pandas as pd

    from .fidelity import RULES_VERSION, screen_all

    screen_all(db)
    gens = np.concatenate([ratings.pair_generation[p] for p in PATHS]) if ratings.n_pairs else np.zeros(0, np.int64)
    size = int(gens.max()) + 1 if len(gens) else 1
    screened = {c: np.full(size, -1, np.int8) for c in CRITERIA}
    for c in CRITERIA:  # one string per column, parsed by numpy (no Python object per row)
        gids, passed = db.execute(
            """SELECT group_concat(s.generation_id, ','), group_concat(s.passed, ',') FROM prescreen s
               WHERE s.rules_version = ? AND s.criterion = ? AND s.generation_id IN (
                   SELECT ordinary_generation_id FROM pairs UNION ALL SELECT assisted_generation_id FROM pairs)""",
            [RULES_VERSION, c]).fetchone()
        if gids:
            gids = np.fromstring(gids, dtype=np.int64, sep=",")
            passed = np.fromstring(passed, dtype=np.int64, sep=",")
            inside = gids < size
            screened[c][gids[inside]] = passed[inside]
    out = []
    for c in CRITERIA:
        rater, rule = [], []
        for path in PATHS:
            if not len(ratings):
                break
            code = ratings.code(path, c)
            rule_says = screened[c][ratings.pair_generation[path][ratings.pair]]
            keep = ((code == _code("p")) | (code == _code("f"))) & (rule_says >= 0)
            rater.append(code[keep] == _code("p"))
            rule.append(rule_says[keep] == 1)
        rater = np.concatenate(rater) if rater else np.zeros(0, bool)
        rule = np.concatenate(rule) if rule else np.zeros(0, bool)
        out.append({"criterion": c, "n": len(rater), "agreement": float((rater == rule).mean()) if len(rater) else None,
                    "kappa": cohen_kappa_binary(rater, rule)})
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
    """The gate frozen with the rated pool (else the benchmark), and notes when the file changed since. Its values
    are read again from the frozen text, so gates frozen by older versions get today's keys and defaults."""
    from .gate import frozen_values, gate_text_hash

    notes = []
    exp = _latest(db, "pool") or _latest(db, "bench")
    if exp is None or not exp["gate_hash"]:
        return None, ["no experiment with a frozen release gate"]
    frozen = json.loads(exp["gate_json"])
    frozen["values"] = frozen_values(frozen)
    try:
        with open(frozen["path"], encoding="utf-8") as f:
            current = f.read()
        if gate_text_hash(current) != frozen["hash"]:
            notes.append(f"gate file {frozen['path']} changed after experiment {exp['id']} started "
                         f"(frozen {frozen['hash']}, now {gate_text_hash(current)}): the frozen version is used")
    except OSError:
        notes.append(f"gate file {frozen['path']} is gone; the version frozen with experiment {exp['id']} is used")
    return frozen, notes


def decision_sample(ratings: RatingData, ratings_per_pair: int, planned_pairs: int):
    """The ratings the fidelity gate decides on, fixed in advance so that later ratings cannot move a decision:
    the first `planned_pairs` pairs to reach `ratings_per_pair` current ratings (all such pairs when the size is
    not planned), each with its first `ratings_per_pair` current ratings (by time of storing).
    Returns (the selected ratings, number of complete pairs)."""
    import numpy as np

    if not len(ratings):
        return ratings, 0
    order = np.lexsort((ratings.rating_id, ratings.pair))
    pair_sorted = ratings.pair[order]
    starts = np.flatnonzero(np.r_[True, pair_sorted[1:] != pair_sorted[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    counts = np.bincount(pair_sorted, minlength=ratings.n_pairs)
    complete = np.flatnonzero(counts >= ratings_per_pair)
    # a pair is complete when its ratings_per_pair-th rating is stored: order pairs by that rating's id
    done_at = np.full(ratings.n_pairs, np.iinfo(np.int64).max)
    last = rank == ratings_per_pair - 1
    done_at[pair_sorted[last]] = ratings.rating_id[order][last]
    chosen = complete[np.argsort(done_at[complete], kind="stable")]
    if planned_pairs:
        chosen = chosen[:planned_pairs]
    in_sample = np.zeros(ratings.n_pairs, bool)
    in_sample[chosen] = True
    keep = np.zeros(len(ratings), bool)
    keep[order] = (rank < ratings_per_pair) & in_sample[pair_sorted]
    return ratings.select(keep), len(complete)


def fidelity_rows(sample: RatingData, confidence: float, resamples: int, margin: float) -> list[dict]:
    """The gate's analysis per criterion on the decision sample (pooled over prompts)."""
    from .gate import fidelity_ok

    rows = []
    if not len(sample):
        return rows
    for c in CRITERIA:
        r = _difference_rows(sample, c, _groupings(sample)[0], confidence, resamples)
        if r:
            r = r[0]
            r["margin"] = margin
            r["ok"] = bool(fidelity_ok(r["ci_low"], margin))
            rows.append(r)
    return rows


def _interval(r: dict, confidence: float) -> str:
    return (f"{r['criterion']} {r['difference']:+.3f}, {confidence:.0%} CI [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] "
            f"over {r['pairs']} pairs")


def decide(gate_values: dict | None, fidelity: list[dict], speed: dict, complete_pairs: int, n_pairs: int) -> dict:
    """KEEP, DROP or INSUFFICIENT DATA with one reason per gate condition. Speed-up and memory are measurements
    and decide on their own; fidelity decides only on the planned sample: every look before it is interim."""
    if gate_values is None:
        return {"decision": "INSUFFICIENT DATA", "interim": True, "label": INTERIM, "fidelity": fidelity,
                "conditions": [{"name": "gate", "ok": None, "reason": "no frozen release gate"}]}
    g = gate_values
    planned, per_pair, margin, conf = g["planned_pairs"], g["min_ratings_per_pair"], g["margin"], g["confidence"]
    conditions = []
    if planned <= 0:
        interim = True
        conditions.append({"name": "planned sample", "ok": None, "reason":
                           f"{INTERIM}: no planned sample size (planned_pairs = 0 in the gate); run `evalkit plan` and "
                           f"freeze its planned_pairs line before rating starts ({complete_pairs} of {n_pairs} pairs "
                           f"have {per_pair} current ratings)"})
    elif complete_pairs < planned:
        interim = True
        conditions.append({"name": "planned sample", "ok": None, "reason":
                           f"{INTERIM}: {complete_pairs} of the {planned} planned pairs have {per_pair} current ratings"})
    else:
        interim = False
        conditions.append({"name": "planned sample", "ok": True, "reason":
                           f"{planned} planned pairs have {per_pair} current ratings; the decision uses the first "
                           f"{planned} to complete, each with its first {per_pair} ratings"
                           + (f" ({complete_pairs - planned} later pairs are in the tables only)"
                              if complete_pairs > planned else "")})
    lo = speed["speedup_ci95"][0] if speed.get("speedup_ci95") else None
    conditions.append({"name": "speed-up", "ok": None if lo is None else lo >= g["min_speedup_ci_low"],
                       "reason": "no speed-up measured over comparable outputs" if lo is None else
                       f"95% CI lower end {lo:.2f} vs minimum {g['min_speedup_ci_low']:.2f} ({speed['source']})"})
    if fidelity:
        worst = min(fidelity, key=lambda r: r["ci_low"])
        ok = all(r["ok"] for r in fidelity)
        if ok:
            reason = (f"every criterion's lower end is at or above -{margin:.3f} (margin); lowest: "
                      f"{_interval(worst, conf)}")
        else:
            failing = [r["criterion"] for r in fidelity if not r["ok"]]
            reason = (f"lower end below -{margin:.3f} (margin) for {', '.join(failing)}; lowest: "
                      f"{_interval(worst, conf)}")
        # before the planned sample is complete the condition is not judged, only reported
        conditions.append({"name": "fidelity", "ok": None if interim else ok,
                           "reason": f"{INTERIM}, so far: {reason}" if interim else reason})
    else:
        conditions.append({"name": "fidelity", "ok": None,
                           "reason": f"no pair has {per_pair} current ratings yet"})
    mem = speed.get("extra_memory_mb")
    conditions.append({"name": "memory", "ok": None if mem is None else mem <= g["max_extra_memory_mb"],
                       "reason": "extra memory of the draft not measured (run `evalkit bench`)" if mem is None else
                       f"draft adds {mem:.0f} MB (allowed {g['max_extra_memory_mb']:.0f} MB)"})
    failed = {c["name"] for c in conditions if c["ok"] is False}
    if failed & {"speed-up", "memory"}:
        decision = "DROP"
    elif interim:
        decision = "INSUFFICIENT DATA"
    elif all(c["ok"] is True for c in conditions):
        decision = "KEEP"
    elif "fidelity" in failed:
        decision = "DROP"
    else:
        decision = "INSUFFICIENT DATA"
    label = INTERIM if interim else "decision on the planned sample"
    return {"decision": decision, "interim": interim, "label": label, "conditions": conditions,
            "fidelity": fidelity, "gate": g}


def aggregate(db, tolerance: float | None = None, resamples: int | None = None) -> Aggregate:
    """Every table, the speed-up and the gate verdict, from the database as it is now. The comparability
    tolerance and bootstrap size default to those of the latest experiment's stored config."""
    import numpy as np
    import pandas as pd

    exp = _latest(db, "pool") or _latest(db, "bench")
    stored_cfg = json.loads(exp["config_json"]) if exp else {}
    bench_cfg = stored_cfg.get("bench", {})
    floor = stored_cfg.get("app", {}).get("min_seconds_on_task", 10.0)
    tolerance = bench_cfg.get("length_tolerance", 0.1) if tolerance is None else tolerance
    resamples = bench_cfg.get("bootstrap", 2000) if resamples is None else resamples

    from .gold import accuracy

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
    n_pairs = ratings.n_pairs
    n_gold = db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'gold'").fetchone()[0]
    if values:
        sample, complete = decision_sample(ratings, values["min_ratings_per_pair"], values["planned_pairs"])
        fidelity = fidelity_rows(sample, confidence, resamples, values["margin"])
    else:
        fidelity, complete = [], 0
    verdict = decide(values, fidelity, speed, complete, n_pairs)
    if verdict["interim"]:
        notes.insert(0, "INTERIM LOOK, NOT A DECISION: the verdict stays INSUFFICIENT DATA (or DROP on speed or "
                        "memory) until the planned number of pairs is rated; stopping early because it looks good "
                        "is what the plan forbids")
    if speed["fallback_runs"]:
        notes.append(f"{speed['fallback_runs']} assisted run(s) fell back; they are not counted as assisted")
    if speed["source"] and speed["source"].startswith("pair pool"):
        notes.append("speed-up taken from the pair pool's single runs: run `evalkit bench` for the protocol's numbers")
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
        "time_on_task": pace,
        "gold": gold_table,
        "counts": pd.DataFrame([{
            "pairs": n_pairs, "gold_pairs": n_gold, "complete_pairs": complete,
            "planned_pairs": values["planned_pairs"] if values else None, "current_ratings": len(ratings),
            "raters": int(np.unique(ratings.rater).size),
            "skips": db.execute("SELECT COUNT(*) FROM ratings WHERE kind = 'skip'").fetchone()[0],
        }]),
    }
    verdict["notes"] = notes
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
    lines.append(f"VERDICT: {v['decision']}" + (f"  ({v['label']})" if v.get("interim", True) else ""))
    for c in v["conditions"]:
        mark = {True: "ok  ", False: "FAIL", None: "??  "}[c["ok"]]
        lines.append(f"  [{mark}] {c['name']}: {c['reason']}")
    conf = v.get("gate", {}).get("confidence", 0.95) if v.get("gate") else 0.95
    for r in v.get("fidelity", []):
        lines.append(f"         {'inside' if r['ok'] else 'OUTSIDE'} margin -{r['margin']:.3f}: {_interval(r, conf)}")
    for n in agg.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)
