"""The quality tables, vectorised over the ratings: pass rates and preferences with cluster-aware intervals, paired
differences with the gate's interval, rater agreement, and the rule pre-screen's agreement with the raters."""

from __future__ import annotations

from ..task.criteria import CRITERIA
from ..stats import (
    T_FLOOR, cohen_kappa_binary, krippendorff_alpha_counts, mcnemar_exact, paired_difference, wilson_array, z_for,
)
from ..stats import proportions_from_counts as stats_proportions
from .data import ALL, MISSING, PATHS, RatingData, answer_code, groupings

ORDINARY, ASSISTED = PATHS


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
    for grouping in groupings(ratings):
        labels, pair_group = grouping[0], grouping[1]
        for path in PATHS:
            for c in CRITERIA:
                code = ratings.code(path, c)
                res = _shares(ratings, code == answer_code("p"), code != MISSING, grouping, z)
                fails = np.bincount(pair_group, weights=np.bincount(ratings.pair, weights=code == answer_code("f"),
                                                                    minlength=ratings.n_pairs), minlength=len(labels))
                unsure = np.bincount(pair_group, weights=np.bincount(ratings.pair, weights=code == answer_code("u"),
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

    o, a = ratings.code(ORDINARY, criterion), ratings.code(ASSISTED, criterion)
    valid = (o != MISSING) & (a != MISSING)
    return (a == answer_code("p")).astype(np.int8) - (o == answer_code("p")).astype(np.int8), valid


def difference_rows(ratings: RatingData, criterion: str, grouping, confidence: float, resamples: int,
                    raters_in_general: bool = True, interval: str = T_FLOOR) -> list:
    """paired_difference for one criterion, one study per group (a pair lies in one group); raters_in_general:
    the gate's claim (rater differences in the interval) or not (these raters only); interval: the gate's. The
    pairs `ratings.pair_identical` marks enter as exact zeros (and any ratings of them are left out);
    ordinary_rate and assisted_rate are over the rated pairs."""
    import numpy as np

    labels, pair_group, rater_key, _rater_group = grouping
    ident = ratings.identical
    x, valid = _x(ratings, criterion)
    valid = valid & ~ident[ratings.pair]
    if not valid.all():
        x, pair, rater_key = x[valid], ratings.pair[valid], rater_key[valid]
    else:
        pair = ratings.pair
    res = paired_difference(x, pair, rater_key, pair_group, len(labels), confidence, resamples,
                            raters_in_general=raters_in_general, identical=ident, interval=interval)
    r_p = np.bincount(pair, minlength=ratings.n_pairs)
    rated = r_p > 0
    r_safe = np.where(rated, r_p, 1)
    o_pair = np.bincount(pair, weights=ratings.passed(ORDINARY, criterion)[valid], minlength=ratings.n_pairs) / r_safe
    a_pair = np.bincount(pair, weights=ratings.passed(ASSISTED, criterion)[valid], minlength=ratings.n_pairs) / r_safe
    n_rated = np.bincount(pair_group, weights=rated, minlength=len(labels))
    n = res["pairs"]
    o_rate = np.bincount(pair_group, weights=o_pair, minlength=len(labels))
    a_rate = np.bincount(pair_group, weights=a_pair, minlength=len(labels))
    study = pair_group[pair]
    b = np.bincount(study, weights=(x == -1), minlength=len(labels)).astype(int)  # ordinary only
    c = np.bincount(study, weights=(x == 1), minlength=len(labels)).astype(int)  # assisted only
    rows = []
    for i, label in enumerate(labels):
        if n[i] == 0:
            continue
        rated_i = max(n_rated[i], 1)
        rows.append({
            "prompt_id": label, "criterion": criterion, "pairs": int(n[i]), "identical": int(res["identical"][i]),
            "ratings": int(res["ratings"][i]),
            "ordinary_rate": o_rate[i] / rated_i if n_rated[i] else None,
            "assisted_rate": a_rate[i] / rated_i if n_rated[i] else None, "difference": res["difference"][i],
            "ci_low": res["low"][i], "ci_high": res["high"][i],
            "t_low": res["t_low"][i], "t_high": res["t_high"][i], "t_df": res["t_df"][i],
            "score_low": res["score_low"][i], "score_high": res["score_high"][i],
            "tango_low": res["tango_low"][i], "tango_high": res["tango_high"][i],
            "bootstrap_low": res["bootstrap_low"][i], "bootstrap_high": res["bootstrap_high"][i],
            "two_way_low": res["two_way_low"][i], "two_way_high": res["two_way_high"][i],
            "two_way_df": res["two_way_df"][i], "raters": int(res["raters"][i]),
            "ordinary_only": int(b[i]), "assisted_only": int(c[i]), "mcnemar_p_ratings": mcnemar_exact(int(b[i]), int(c[i])),
            # the t interval's parts, so that a reader of a frozen decision (verdict_json) can rebuild it from them
            # (export audit, 2026-12-04): the CR2 variance's pair, rater and single-rating parts, their combination
            # and the skewness (raters in general); None where a part is not finite (one rater: no rater variance)
            **{k: _finite(res[k][i]) for k in ("var_pair", "var_rater", "var_rating", "var", "skewness") if k in res},
        })
    return rows


def _finite(v):
    import math

    return float(v) if v is not None and math.isfinite(float(v)) else None


DIFF_COLUMNS = ["prompt_id", "criterion", "pairs", "identical", "ratings", "ordinary_rate", "assisted_rate",
                "difference", "ci_low", "ci_high", "t_low", "t_high", "t_df", "score_low", "score_high", "tango_low",
                "tango_high", "bootstrap_low", "bootstrap_high", "two_way_low", "two_way_high", "two_way_df", "raters",
                "ordinary_only", "assisted_only", "mcnemar_p_ratings"]


def paired_differences(ratings: RatingData, confidence: float = 0.95, resamples: int = 2000,
                       raters_in_general: bool = True, interval: str = T_FLOOR):
    """Per prompt (and all) and criterion: assisted - ordinary pass rate with every pair weighted once (the mean of
    its raters; pairs with identical outputs as exact zeros, in the pool's proportion to the pairs rated so far:
    verdict.with_identical), and the gate's interval (ci_low, ci_high: for the gate's `interval` and claim; each
    part in its own columns: t_* the two-way CR2 t interval on t_df degrees of freedom, score_* the score floor,
    tango_*, bootstrap_* and two_way_* the previous version's union; two_way_df is inf for the normal quantile of
    the claim about these raters). The exact McNemar p-value over ratings (ordinary_only / assisted_only are
    rating counts) treats ratings as independent: for reference only."""
    import numpy as np
    import pandas as pd

    from .verdict import with_identical

    rows = []
    if len(ratings):
        ident = ratings.identical
        rated = ratings.select(~ident[ratings.pair]) if ident.any() else ratings
        ratings = with_identical(rated, np.flatnonzero(np.bincount(rated.pair, minlength=rated.n_pairs) > 0))
        for grouping in groupings(ratings):
            for c in CRITERIA:
                rows += difference_rows(ratings, c, grouping, confidence, resamples, raters_in_general, interval)
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
    for grouping in groupings(ratings):
        labels = grouping[0]
        per_outcome = []
        for name, letter in (("win", "a"), ("tie", "t"), ("loss", "o")):
            res = _shares(ratings, pref == answer_code(letter), valid, grouping, z)
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

    letters[[answer_code("p"), answer_code("f"), answer_code("u")]] = [0, 1, 2]
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
        letters[[answer_code("o"), answer_code("a"), answer_code("t")]] = [0, 1, 2]
        a, pairable = alpha(ratings.pair, letters[ratings.preferred()], ratings.n_pairs, 3)
    else:
        a, pairable = None, 0
    out.append({"item": "preference", "alpha": a, "pairable_items": pairable})
    return pd.DataFrame(out, columns=["item", "alpha", "pairable_items"])


def screen_all(db, store: bool = True) -> list[dict]:
    """Pre-screen every stored successful generation that lacks a verdict of this rules version on a registered
    criterion (a criterion registered later is screened then), and cache the verdicts in the database unless not
    `store` (a reader that must not write: `evalkit plan`). Returns the new verdict rows."""
    from ..store import insert_prescreen
    from ..task.criteria import screen
    from ..task.fidelity import RULES_VERSION

    ids = list(CRITERIA)
    marks = ", ".join("?" for _ in ids)
    rows = list(db.query(
        f"""SELECT g.id, g.text FROM generations g
            WHERE g.status = 'ok' AND (SELECT COUNT(*) FROM prescreen s WHERE s.generation_id = g.id
                                       AND s.rules_version = ? AND s.criterion IN ({marks})) < ?""",
        [RULES_VERSION, *ids, len(ids)]))
    new = [{"generation_id": r["id"], "criterion": c, "passed": int(v.passed), "evidence": v.evidence,
            "rules_version": RULES_VERSION} for r in rows for c, v in screen(r["text"]).items()]
    if store:
        insert_prescreen(db, new)  # rows already there are kept (insert_prescreen ignores them): the same verdicts
    return new


def prescreen_agreement(db, ratings: RatingData, rules: str | None = None):
    """Agreement per criterion between the rule pre-screen (rules version `rules`: the study's, frozen with its first
    pool, as prediction-powered inference reads it; None: the running code's) and the raters: the share of rater
    answers the rule matches (`agreement`) and Cohen's kappa, over every rating of every rated output (unsure answers
    left out)."""
    import numpy as np
    import pandas as pd

    from .ppi import screen_tables

    screened = screen_tables(db, rules)[0]  # per criterion, by generation id (-1: not screened)
    out = []
    for c in CRITERIA:
        rater, rule = [], []
        for path in PATHS:
            if not len(ratings):
                break
            code = ratings.code(path, c)
            rule_says = screened[c][ratings.pair_generation[path][ratings.pair]]
            keep = ((code == answer_code("p")) | (code == answer_code("f"))) & (rule_says >= 0)
            rater.append(code[keep] == answer_code("p"))
            rule.append(rule_says[keep] == 1)
        rater = np.concatenate(rater) if rater else np.zeros(0, bool)
        rule = np.concatenate(rule) if rule else np.zeros(0, bool)
        out.append({"criterion": c, "n": len(rater), "agreement": float((rater == rule).mean()) if len(rater) else None,
                    "kappa": cohen_kappa_binary(rater, rule)})
    return pd.DataFrame(out, columns=["criterion", "n", "agreement", "kappa"])
