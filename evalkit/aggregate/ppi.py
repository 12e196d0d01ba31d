"""The pre-screen in the verdict: prediction-powered inference (evalkit.stats.ppi) as its own step after each
criterion's interval from the raters alone (verdict.fidelity_rows), when the frozen gate has `ppi = "on"`.

The rule pre-screen (evalkit.task.fidelity) has judged both outputs of every pooled study pair; the raters, the
decision sample's pairs, which the queue drew as a uniformly random subset of the pool (store.draw_queue_order).
The step replaces the row's estimate and interval by the prediction-powered ones and keeps the raters-only ones
beside them (rated_difference, rated_low, rated_high), with lambda, the unrated pairs it used and the pre-screen's
agreement with the raters on the decision sample. It is not used, and says why, when some pair of the study was
not served in a random order (a pool made before the order was stored) or the pre-screen did not judge a rated pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..task.prompts import CRITERIA
from .data import MISSING, PAIR_STORED, PATHS, RatingData, answer_code, groupings

# Why the step was not used, each reason one template: the row keeps its English (ppi_note) and its key and figures
# (ppi_why), from which ui.verdictzh writes the same reason in Chinese (its WHY_ZH has one per key).
WHY = {
    "unranked": ("{unranked} of the study's {pairs} pairs were not served in a random order (a pool made before evalkit "
                 "stored one), so the rated pairs need not be a random subset of the pool"),
    "other rules": ("{missing} pooled pairs have no answer of the pre-screen's rules version {rules}, frozen with the "
                    "study when its first pool was generated, and this evalkit's rules (version {current}) cannot stand "
                    "in: rules changed after the study began may have been fitted to its ratings (a pool is screened as "
                    "it joins, by the evalkit that made it: add pools to this study with its rules, or start a study "
                    "under the new ones, `evalkit generate --new-study NAME`)"),
    "unjudged": "the pre-screen did not judge every rated pair",
    "no outcome": ("{unknown} pair(s) of the sample have no outcome (passed over by a rater and then rated only by "
                   "raters the gold check leaves out, withheld from every rater for repeating a revealed text, or given "
                   "up by the organiser when no current rater could take it), so the rated pairs are not a random "
                   "subset of the pool"),
}


def why_not(row: dict, key: str, **figures) -> dict:
    """Mark the row's step as not used for the reason WHY[key] with its figures, in words and as data."""
    row["ppi_note"] = WHY[key].format(**figures)
    row["ppi_why"] = {"key": key, **figures}
    return row


# the columns the step adds to a non_inferiority row
COLUMNS = ["ppi", "rated_difference", "rated_low", "rated_high", "ppi_lambda", "ppi_unrated_pairs",
           "prescreen_agreement"]


@dataclass
class PairScreen:
    """The pre-screen's answers on every study pair of a study, aligned with a RatingData's pairs."""

    passed: dict  # criterion -> int8 (pairs, 2): ordinary, assisted; 1 pass, 0 fail, -1 not screened
    ranked: object  # bool (pairs,): the pair has a queue rank (served in the pool's random order)
    created_at: list[str | None]  # per pair: when it joined its study (data.PAIR_STORED; None: not yet)
    identical: object = None  # bool (pairs,): the pool's pairs whose two outputs are the same tokens (never served)
    epoch: object = None  # int (pairs,): the whole part of each pair's queue rank (store.rank_epoch), -1 unranked
    rules: str | None = None  # the rules version read: the study's (frozen with its first pool), else the code's
    current: str | None = None  # the running code's rules version (task.fidelity.RULES_VERSION)

    def difference(self, criterion: str, before: str | None = None):
        """Per pair: pre-screen (assisted passed) - (ordinary passed), NaN where a side was not screened or the pair
        was stored after `before` (a pool that joined after the decision's completion is no part of it)."""
        import numpy as np

        p = self.passed[criterion]
        f = (p[:, 1] - p[:, 0]).astype(float)
        f[(p < 0).any(axis=1)] = np.nan
        f[~self.joined(before)] = np.nan
        return f

    def joined(self, before: str | None = None):
        """bool (pairs,): the pairs that had joined their study by `before` (every pair when None)."""
        import numpy as np

        if before is None:
            return np.ones(len(self.created_at), bool)
        return np.array([c is not None and c <= before for c in self.created_at], bool)


def screen_tables(db, rules: str | None = None) -> tuple[dict, dict, str]:
    """Screen what is not screened yet (aggregate.quality.screen_all), then read the pre-screen's answers of rules
    version `rules` (the study's, frozen with its first pool; None: the running code's) by generation id (per
    criterion, an int8 array: -1 none) and each study pair's queue rank and stored time: what pair_screen maps onto a
    look's pairs, and the version read. A walk over the history reads them once for all its looks."""
    import numpy as np

    from ..task.fidelity import RULES_VERSION
    from .quality import screen_all

    screen_all(db)
    rules = rules or RULES_VERSION
    size = 1 + (db.execute("SELECT MAX(MAX(COALESCE(ordinary_generation_id, 0)), MAX(COALESCE(assisted_generation_id, "
                           "0))) FROM pairs").fetchone()[0] or 0)
    by_gen = {}
    for c in CRITERIA:  # one string per column, parsed by numpy (no Python object per row)
        by_gen[c] = np.full(size, -1, np.int8)
        gids, ok = db.execute(
            """SELECT group_concat(s.generation_id, ','), group_concat(s.passed, ',') FROM prescreen s
               WHERE s.rules_version = ? AND s.criterion = ? AND s.generation_id IN (
                   SELECT ordinary_generation_id FROM pairs UNION ALL SELECT assisted_generation_id FROM pairs)""",
            [rules, c]).fetchone()
        if gids:
            gids = np.fromstring(gids, dtype=np.int64, sep=",")
            ok = np.fromstring(ok, dtype=np.int64, sep=",")
            inside = (gids < size) & (gids >= 0)
            by_gen[c][gids[inside]] = ok[inside]
    rows = {r[0]: (r[1], r[2]) for r in db.execute(f"SELECT id, queue_rank, {PAIR_STORED.format(p='pairs.')} "
                                                    "FROM pairs WHERE kind = 'study'")}
    return by_gen, rows, rules


def pair_screen(db, ratings: RatingData, tables: tuple | None = None, rules: str | None = None) -> PairScreen:
    """The pre-screen's answer (rules version `rules`, the study's) on both outputs of each of `ratings`' pairs, and
    each pair's queue rank and stored time (from `tables`, screen_tables(db, rules), read now when not given)."""
    import numpy as np

    from ..task.fidelity import RULES_VERSION

    by_gen, rows, rules = tables if tables is not None else screen_tables(db, rules)
    n = ratings.n_pairs
    passed = {}
    for c in CRITERIA:
        size = len(by_gen[c])
        passed[c] = np.full((n, 2), -1, np.int8)
        for k, p in enumerate(PATHS):
            g = ratings.pair_generation[p] if n else np.zeros(0, np.int64)
            passed[c][:, k] = np.where((g >= 0) & (g < size), by_gen[c][np.clip(g, 0, size - 1)], -1)
    info = [rows.get(pid, (None, "")) for pid in ratings.pair_ids]
    return PairScreen(passed, np.array([q is not None for q, _ in info], bool), [t for _, t in info],
                      ratings.identical.copy(), np.array([-1 if q is None else int(q // 1) for q, _ in info], np.int64),
                      rules, RULES_VERSION)


def agreement(sample: RatingData, screen: PairScreen, criterion: str) -> float | None:
    """Share of the sample's pass / fail answers (both sides) that the pre-screen matches."""
    rule = screen.passed[criterion][sample.pair]
    hits, total = 0, 0
    for k, path in enumerate(PATHS):
        code = sample.code(path, criterion)
        keep = ((code == answer_code("p")) | (code == answer_code("f"))) & (rule[:, k] >= 0)
        hits += int(((code[keep] == answer_code("p")) == (rule[keep, k] == 1)).sum())
        total += int(keep.sum())
    return hits / total if total else None


def apply(row: dict, sample: RatingData, criterion: str, screen: PairScreen | None, use: bool, confidence: float,
          raters_in_general: bool, before: str | None = None) -> dict:
    """Add the step's columns to a non_inferiority row; where `use` (the gate's ppi = "on") and the assumptions hold,
    the row's difference and interval become the prediction-powered ones. Returns the row."""
    import numpy as np

    from ..stats.ppi import ppi_pool_difference

    row.update({"ppi": False, "rated_difference": row["difference"], "rated_low": row["ci_low"],
                "rated_high": row["ci_high"], "ppi_lambda": None, "ppi_unrated_pairs": None,
                "prescreen_agreement": None if screen is None else agreement(sample, screen, criterion)})
    if not use or screen is None or not len(sample):
        return row
    if not screen.ranked.all():
        return why_not(row, "unranked", unranked=int((~screen.ranked).sum()), pairs=len(screen.ranked))
    o, a = sample.code(PATHS[0], criterion), sample.code(PATHS[1], criterion)
    # Identical pairs (the same tokens on both sides) are never served, so they are not in the random subset the
    # raters rate: PPI runs on the pairs whose outputs differ, and the identical ones, whose difference is exactly 0,
    # then scale the estimate and both ends by the differing pairs' share of the pool (stats.ppi_pool_difference,
    # the one weighting the plan and scripts/ppibench.py take too).
    identical = screen.identical if screen.identical is not None else np.zeros(len(screen.ranked), bool)
    f = screen.difference(criterion, before)
    population = screen.joined(before) & screen.ranked
    if screen.epoch is not None and len(sample.pair):
        # Pairs pooled after rating began follow every earlier pair in the order (store.rank_epoch); they join the
        # pre-screen's population only where the sample reaches them, so a pool added after a look moves nothing.
        population &= screen.epoch <= screen.epoch[sample.pair].max()
        f[~population] = np.nan
    if (missing := _other_rules(screen, criterion, population)) is not None:
        return why_not(row, "other rules", missing=missing, rules=screen.rules, current=screen.current)
    valid = (o != MISSING) & (a != MISSING)
    x = (a == answer_code("p")).astype(np.int8) - (o == answer_code("p")).astype(np.int8)
    _labels, pair_group, rater_key, _ = groupings(sample)[0]
    res = ppi_pool_difference(x[valid], sample.pair[valid], rater_key[valid], pair_group, f, identical, 1, confidence,
                              raters_in_general)
    if np.isnan(res["low"][0]):
        return why_not(row, "unjudged")
    differing_share = float(res["differing_share"][0])
    row.update({"ppi": True, "difference": float(res["difference"][0]),
                "ci_low": float(res["low"][0]), "ci_high": float(res["high"][0]),
                "ppi_lambda": float(res["lambda"][0]), "ppi_unrated_pairs": int(res["unrated_pairs"][0]),
                "ppi_rules": screen.rules,
                "ppi_rated_pairs": int(res["rated_pairs"][0]), "ppi_differing_share": differing_share})
    return row


def _other_rules(screen: PairScreen, criterion: str, population) -> int | None:
    """How many pairs of the look's `population` (bool per pair) have no answer of the study's pre-screen rules where
    those are not the running code's (WHY["other rules"]): rules changed since the study began cannot stand in (they
    may have been fitted to its ratings), and leaving the pairs out would make the population those screened in time,
    not the pool. None: nothing stands in the way."""
    if screen.rules is None or screen.rules == screen.current:
        return None
    missing = int(((screen.passed[criterion] < 0).any(axis=1) & population).sum())
    return missing or None


def sentence(rows: list[dict], use: bool, margin: float | None = None) -> str:
    """What the verdict says about the pre-screen: whether prediction-powered inference was used, and its measured
    agreement with the raters per criterion; with `margin`, the criteria whose lower end clears -margin only with the
    pre-screen (export audit, 2026-12-04: a KEEP resting on it said nothing of that)."""
    if not rows:
        return ""
    from ..task.criteria import title

    agree = ", ".join(f"{title(r['criterion'])} {r['prescreen_agreement']:.2f}" for r in rows
                      if r.get("prescreen_agreement") is not None)
    agree = f"; its agreement with the raters on the decision sample: {agree}" if agree else ""
    if not use:
        return f"Prediction-powered inference not used (gate ppi = \"off\"): the raters' answers alone{agree}."
    used = [r for r in rows if r.get("ppi")]
    if not used:
        why = next((r["ppi_note"] for r in rows if r.get("ppi_note")), "no pair to use")
        return f"Prediction-powered inference not used: {why}{agree}."
    r = used[0]
    # the rated pairs PPI ran on: those whose outputs differ (the row's `pairs` counts the identical ones too)
    rated = r.get("ppi_rated_pairs", r["pairs"])
    share = r.get("ppi_differing_share", 1.0)
    same = (f"; identical pairs count as exact zeros: the estimate and both ends are scaled by the share of pooled "
            f"pairs whose outputs differ ({share:.3f})" if share < 1 else "")
    rules = f" (rules version {r['ppi_rules']})" if r.get("ppi_rules") else ""
    return (f"Prediction-powered inference used (PPI++, gate ppi = \"on\"): the rule pre-screen's{rules} answers on "
            f"{r['ppi_unrated_pairs']} pooled pairs outside the decision sample whose outputs differ (not rated, not "
            "yet rated in full, rated only by raters the gold check leaves out, or completed after the decision: "
            "their ratings, if any, are not used), corrected by the raters' answers on the "
            f"{rated} pairs of the sample whose outputs differ (a uniformly random subset: the queue's order was drawn "
            f"at random){same}, "
            "with lambda "
            + ", ".join(f"{x['criterion']} {x['ppi_lambda']:.2f}" for x in used) + f"{agree}."
            + _resting(used, margin))


def _resting(used: list[dict], margin: float | None) -> str:
    """The criteria whose PPI lower end clears -margin while the raters' answers alone do not."""
    if margin is None:
        return ""
    from ..task.criteria import title

    rest = [x for x in used if x.get("ci_low") is not None and x.get("rated_low") is not None
            and x["ci_low"] >= -margin > x["rated_low"]]
    if not rest:
        return ""
    return (" On the raters' answers alone, the lower end of " + ", ".join(
        f"{title(x['criterion'])} ({x['rated_low']:+.4f})" for x in rest) + f" lies below -{margin:g}: there the "
        "margin is cleared only with the pre-screen.")
