"""The verdict: KEEP, DROP or INSUFFICIENT DATA, one reason per gate condition, from the gate frozen with the
experiment. Speed-up and memory are measurements and decide on their own; fidelity decides only on the planned
sample, fixed in advance (decision_sample), and every look before it is interim."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum

from ..stats import T_FLOOR
from ..stats.speedup import ratio_text
from ..study.gate import GENERAL, claim_text, enough_raters
from ..task.criteria import CRITERIA, title
from .data import RatingData, deciding_experiment, groupings
from .quality import difference_rows

INTERIM = "interim look, not a decision"
# what "decided" means for a pair (the planned sample counts decided pairs)
DECIDED = ("a pair whose texts differ once it has {per_pair} current ratings; a pair with identical outputs without "
           "raters, its difference exactly 0, in the pool's proportion")


class Decision(StrEnum):
    KEEP = "KEEP"
    DROP = "DROP"
    INSUFFICIENT_DATA = "INSUFFICIENT DATA"


@dataclass
class Condition:
    """One gate condition: passed (True), failed (False) or not judged (None), and why."""

    name: str  # "planned sample", "speed-up", "fidelity", "memory" (or "gate" when there is none)
    ok: bool | None
    reason: str


@dataclass
class Verdict:
    decision: Decision
    interim: bool  # a look before the planned sample is complete: not a decision
    label: str
    conditions: list[Condition]
    fidelity: list[dict]  # the gate's analysis per criterion (rows of the non_inferiority table)
    gate: dict | None = None  # the frozen gate's values; None when no experiment froze one
    notes: list[str] = field(default_factory=list)
    claim: str = ""  # whom the quality claim covers (claim_statement)
    ppi: str = ""  # whether prediction-powered inference was used, and the pre-screen's agreement (aggregate.ppi)
    look: dict | None = None  # the gate's look the verdict was reached at (aggregate.looks.Look), None before any

    def to_json(self) -> dict:
        conditions = [asdict(c) for c in self.conditions]
        if self.gate is None:  # the keys in the order `evalkit aggregate --json` has always printed them
            return {"decision": self.decision, "interim": self.interim, "label": self.label,
                    "fidelity": self.fidelity, "conditions": conditions, "notes": self.notes}
        return {"decision": self.decision, "interim": self.interim, "label": self.label, "claim": self.claim,
                "conditions": conditions, "fidelity": self.fidelity, "gate": self.gate, "ppi": self.ppi,
                "look": self.look, "notes": self.notes}


def claim_statement(gate_values: dict, raters: int | None, rows: list[dict] | None = None) -> str:
    """The sentence every verdict carries: whom the quality claim covers, and what it does not. `rows`: the deciding
    look's criteria, for those that passed at an earlier look on fewer raters (narrower_passes)."""
    who = (f"these {raters} raters" if raters and raters > 1 else "this 1 rater" if raters else "the raters who rate")
    if gate_values.get("claim", GENERAL) == GENERAL:
        return (f"The quality claim is about raters in general, raters like {who}: differences between raters, "
                "also in how they judge each path, are in every criterion's interval. It is about these prompts and "
                "this pair pool, not other tasks.")
    narrower = narrower_passes(gate_values, rows or [], raters)
    return (f"The quality claim is about {who} only (gate claim = \"these raters\"): other raters may judge the "
            "paths differently. It is about these prompts and this pair pool, not other tasks."
            + (" A criterion that passed at an earlier look, on the answers of fewer raters, is claimed for those "
               "raters only (a pass stays, but raters who joined later never judged it): "
               + ", ".join(f"{title(r['criterion'])} (look {r['passed_at_look']}, {r['passed_raters']} raters)"
                           for r in narrower) + "." if narrower else ""))


def narrower_passes(gate_values: dict, rows: list[dict], raters: int | None) -> list[dict]:
    """For a claim about these raters: the criteria that passed at an earlier look (a pass stays, looks.walk) on fewer
    raters than the deciding look's `raters`. Their raters' fixed effects are the claim's, so the pass is about those
    raters, not about raters who joined after it (a claim about raters in general samples raters, and needs
    min_raters at the passing look). Since looks.walk judges such a criterion again once raters join, only a
    criterion answered by fewer raters than others (registered after some had rated) or a decision stored before
    that rule has one."""
    if gate_values.get("claim", GENERAL) == GENERAL or not raters:
        return []
    return [r for r in rows if r.get("passed_at_look") and r.get("passed_at_look") != r.get("look")
            and r.get("passed_raters") is not None and int(r["passed_raters"]) < raters]


def frozen_gate(db, study=None) -> tuple[dict | None, list[str]]:
    """The gate frozen with the study (`study.Study`: when its first pool was generated; else, in a database without
    a pool, the latest benchmark's), and notes when the file changed since. Its values are read again from the
    frozen text, so gates frozen by older versions get today's keys and defaults (gate.LEGACY aside)."""
    from ..study.gate import frozen_values, gate_text_hash, legacy_keys
    from .notes import NOTES, note

    notes = []
    if study is not None:
        first = db.execute("SELECT MIN(id) FROM experiments WHERE study_id = ?", [study.id]).fetchone()[0]
        # the snapshot as stored: study.gate's values are already read again (studies.studies), and reading them
        # again would find every key there and keep none of gate.LEGACY's values (nor their notes)
        stored = db.execute("SELECT gate_json FROM studies WHERE id = ?", [study.id]).fetchone()
        frozen = json.loads(stored[0]) if study.gate_hash and stored and stored[0] else None
        exp_id, where = first, note("gate study", study=study.label(make=note))
    else:
        exp = deciding_experiment(db)
        frozen = json.loads(exp["gate_json"]) if exp is not None and exp["gate_hash"] else None
        exp_id, where = (exp["id"] if exp is not None else None), note("gate no study")
    if frozen is None:
        return None, [note("no gate")]
    legacy = legacy_keys(frozen)  # from the values as stored, before they are read again
    frozen["values"] = frozen_values(frozen)
    for key in legacy:
        notes.append(note("gate legacy", key=key, value=repr(frozen["values"][key]),
                          # what a legacy value means where its number alone does not say it
                          meaning=note(f"legacy {key}" if f"legacy {key}" in NOTES else "legacy other")))
    try:
        with open(frozen["path"], encoding="utf-8") as f:
            current = f.read()
        if gate_text_hash(current) != frozen["hash"]:
            notes.append(note("gate changed", path=frozen["path"], experiment=exp_id, where=where, frozen=frozen["hash"],
                              now=gate_text_hash(current)))
    except OSError:
        notes.append(note("gate gone", path=frozen["path"], experiment=exp_id, where=where))
    return frozen, notes


def identical_quota(rated: int, identical: int, differing: int) -> int:
    """How many identical pairs enter beside `rated` pairs whose texts differ: the pool's proportion,
    round(rated x identical / differing), at most the pool's identical pairs (all of them when none differs).

    Why a proportion: identical pairs are decided when the pool is built, rated pairs one by one. Taking every
    identical pair at once would give them a larger share of an interim or decision sample than of the pool, and
    shrink the estimated difference towards 0 (with half the pool identical and a 10% reserve, a drop of the margin
    would read as 0.9 of it); in the pool's proportion, the sample's mean estimates the pool's."""
    if differing <= 0:
        return identical
    return min(identical, int(math.floor(rated * identical / differing + 0.5)))


def _epochs(ratings: RatingData):
    """int64 (pairs,): each pair's rating epoch, the whole part of its queue rank (store.rank_epoch): a pool added
    once its study had ratings is a later epoch than every pair ranked before. 0 for a pair without a rank."""
    import numpy as np

    rank = ratings.rank
    return np.where(np.isnan(rank), 0, np.floor(np.nan_to_num(rank))).astype(np.int64)


def identical_by_count(ratings: RatingData, order, full=None):
    """int64 (len(order) + 1,): how many identical pairs enter beside the first k pairs of `order` (pairs whose
    texts differ, in the queue's order), for k = 0 .. len(order).

    Per rating epoch, the epoch's own proportion: identical_quota(its rated pairs among the first k, its identical
    pairs, its pairs whose texts differ). An epoch with no differing pair enters whole once the first k hold every
    pair of the earlier epochs in `full`, the whole queue order (in_queue_order's pairs, rated or not; default
    `order`): callers pass only the pairs complete so far as `order`, and a test on those alone held at once (verdict
    audit, 2026-12-04: a later pool of 200 identical pairs entered beside the first rated pair and froze a decision on
    1 rated pair and 99 identical ones). A later pool, added once rating began, is a later epoch (its
    pairs follow every earlier one in the order), so until the rated pairs reach it, its identical pairs do not
    enter: a pool added after the pairs a decision rests on were rated cannot move that decision, nor an interim look
    (verdict audit, 2026-12-04: a later pool of identical pairs diluted a drop of 30 points to 18 in a decision first
    looked at after it was added)."""
    import numpy as np

    order = np.asarray(order, np.int64)
    ident = ratings.identical
    out = np.zeros(len(order) + 1, np.int64)
    if not ident.any():
        return out
    ep = _epochs(ratings)
    n_ep = int(ep.max()) + 1
    n_ident = np.bincount(ep[ident], minlength=n_ep)
    n_differ = np.bincount(ep[~ident], minlength=n_ep)
    k = np.arange(len(order) + 1)
    # rated pairs per epoch among the first k: a cumulative count per epoch
    onehot = np.zeros((len(order) + 1, n_ep), np.int64)
    if len(order):
        onehot[np.arange(1, len(order) + 1), ep[order]] = 1
    rated = np.cumsum(onehot, axis=0)
    full = order if full is None else np.asarray(full, np.int64)
    for e in np.flatnonzero(n_ident):
        if n_differ[e]:
            out += np.minimum(n_ident[e], np.floor(rated[:, e] * n_ident[e] / n_differ[e] + 0.5).astype(np.int64))
        else:  # whole, once the first k hold every pair of the whole order's earlier epochs
            out += np.where(rated[:, :e].sum(axis=1) >= _earlier(ep, full, e), n_ident[e], 0)
    return out


def _earlier(ep, full, e: int) -> int:
    """How many pairs of the whole queue order `full` lie in rating epochs before `e`."""
    return int((ep[full] < e).sum()) if len(full) else 0


def with_identical(ratings: RatingData, order, k: int | None = None, full=None) -> RatingData:
    """`ratings` with pair_identical marking the identical pairs that enter beside the first k (default: all) of the
    rated pairs `order` (pair indices, in the queue's order; `full`: the whole queue order, as identical_by_count):
    per rating epoch, as many as identical_by_count counts there, the first of the epoch's identical pairs in the
    order of their pair ids (unguessable random tokens: a random order, not the pool's, which runs prompt by
    prompt)."""
    import numpy as np

    ident = ratings.identical
    marked = np.zeros(ratings.n_pairs, bool)
    order = np.asarray(order, np.int64)
    k = len(order) if k is None else k
    if ident.any():
        ep = _epochs(ratings)
        first = order[:k]
        for e in np.unique(ep[ident]):
            n_ident, n_differ = int((ident & (ep == e)).sum()), int((~ident & (ep == e)).sum())
            if n_differ:
                take = identical_quota(int((ep[first] == e).sum()), n_ident, n_differ)
            else:  # the same rule as identical_by_count's
                take = n_ident if int((ep[first] < e).sum()) >= _earlier(ep, order if full is None else
                                                                           np.asarray(full, np.int64), e) else 0
            if take:
                where = np.flatnonzero(ident & (ep == e))
                by_id = np.argsort(np.array([ratings.pair_ids[i] for i in where], dtype=object), kind="stable")
                marked[where[by_id[:take]]] = True
    return replace(ratings, pair_identical=marked)


def _nth_rating(ratings: RatingData):
    """(order, pair_sorted, nth): the ratings sorted by pair then by id, their pairs, and each rating's place among
    its pair's current ratings (0 for the first stored)."""
    import numpy as np

    order = np.lexsort((ratings.rating_id, ratings.pair))
    pair_sorted = ratings.pair[order]
    starts = np.flatnonzero(np.r_[True, pair_sorted[1:] != pair_sorted[:-1]])
    nth = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return order, pair_sorted, nth


def rated_needed(planned_pairs: int, ratings: RatingData, order, full=None) -> int:
    """The fewest of the pairs `order` (differing texts, in the queue's order; `full`: the whole queue order, as
    identical_by_count) that, with the identical pairs entering beside them (identical_by_count), reach
    `planned_pairs`; all of them (at most planned_pairs) when even that many do not."""
    import numpy as np

    top = min(len(order), planned_pairs)
    with_ident = np.arange(top + 1) + identical_by_count(ratings, np.asarray(order)[:top],
                                                         order if full is None else full)
    hits = np.flatnonzero(with_ident >= planned_pairs)
    return int(hits[0]) if len(hits) else top


def in_queue_order(ratings: RatingData, ratings_per_pair: int):
    """The pairs whose texts differ in the order the decision takes them, and whether each is complete (has the
    current ratings it wants: its own quota, stored with the pool, else `ratings_per_pair`). Returns (pair indices,
    complete flags, the leading run: how many pairs at the head of the order are all complete).

    The order is the queue's random order (pairs.queue_rank), never the order in which pairs happened to complete. A
    pair a rater skips goes to the next rater and completes later; a pair that takes longer to judge completes later
    than its neighbours. Taking the first pairs to complete would leave out exactly the outputs raters avoid (an output
    that is broken or unreadable, more often on the path that is worse), and the verdict would judge the outputs raters
    chose to rate. Taken by rank, the decision sample is the first pairs of the random order, all of them, a uniformly
    random subset of the pool whatever raters skip (what every interval, and PPI, rests on): the look waits until
    each of them is rated. Pairs that lost a rating to the gold check's exclusions and are now below their quota are
    set aside once the queue counts them full (it does not serve them again; the exclusions do not look at their
    texts); one it still serves is waited for. A pool made before
    ranks were stored has no order to follow: its pairs come after the ranked ones, in the order they completed."""
    import numpy as np

    complete, aside, _unknown = _standing(ratings, ratings_per_pair)
    wanted = ratings.wanted(ratings_per_pair)
    candidates = np.flatnonzero(~ratings.identical & ~aside)
    rank = ratings.rank[candidates]
    unranked = np.isnan(rank)
    key = rank
    if unranked.any():  # order those by when they completed: the id of their wanted-th rating (inf: not yet)
        done_at = np.full(ratings.n_pairs, np.inf)
        order, pair_sorted, nth = _nth_rating(ratings)
        last = nth == wanted[pair_sorted] - 1
        done_at[pair_sorted[last]] = ratings.rating_id[order][last]
        key = np.where(unranked, done_at[candidates], rank)
    pairs = candidates[np.lexsort((candidates, key, unranked))]
    done = complete[pairs]
    run = len(done) if done.all() else int(np.argmin(done))
    return pairs, done, run


def _standing(ratings: RatingData, ratings_per_pair: int):
    """bool (pairs,) each: complete, set aside, and complete with its outcome unknown (in_queue_order).

    Set aside: lost a rating to the exclusions, below its quota now, and full as the queue counts it (never served
    again). One the queue still serves is waited for, so leaving raters out never raises the count (what
    decision._completion's search rests on). But one a rater passed over before it was filled (a skip, a hold let go)
    went to the rater left out because of what it shows: setting it aside would leave out the outputs raters avoid,
    as taking pairs in the order they complete did (verdict audit, 2026-12-06: two raters who skipped every pair
    with a visible fault and a third, left out by the gold check, who rated them turned a true drop of 30 points into
    KEEP). It keeps its place in the order, complete with its outcome unknown: the sample counts it at the worst
    (worst_case). So does one the queue kept from a rater because she had rated one of its texts (RatingData.kept_from):
    a departure from the random order that depends on what the pair shows (a greedy study's copies of one prompt's two
    texts go to the raters who have not met them, the rater left out among them)."""
    import numpy as np

    counts = np.bincount(ratings.pair, minlength=ratings.n_pairs)
    wanted = ratings.wanted(ratings_per_pair)
    complete = counts >= wanted
    before = counts if ratings.pair_count_before is None else ratings.pair_count_before
    aside = ratings.set_aside & ~complete & (before >= wanted)
    # and so does one withheld from every rater (RatingData.withheld): which pairs repeat a revealed text depends on
    # what they say, and dropping them leaned a later pool to identical pairs (sceptic audit, 2026-12-06)
    # and so does one the organiser gave up (RatingData.given_up: no current rater could take it), whatever came after
    unknown = (aside & (ratings.passed_over | ratings.kept_from)) | (ratings.withheld & ~complete) | ratings.given_up
    return complete | unknown, aside & ~unknown, unknown


def worst_case(row: dict, unknown: int) -> dict:
    """A criterion's row with `unknown` more pairs of the sample whose outcome is unknown (_standing), each counted at
    the worst for each end: a difference of -1 for the lower ends, +1 for the upper, among the row's pairs (Manski's
    bounds: whatever their raters would have said, the mean over the whole sample lies between). The estimate stays
    that of the pairs rated. Prediction-powered inference rests on the rated pairs being a random subset of the pool,
    which they then are not: the raters-only interval decides."""
    row["worst_case_pairs"] = unknown
    if not unknown:
        return row
    if row.get("ppi"):
        from .ppi import why_not

        row.update({"ppi": False, "difference": row["rated_difference"], "ci_low": row["rated_low"],
                    "ci_high": row["rated_high"], "ppi_lambda": None, "ppi_unrated_pairs": None})
        why_not(row, "no outcome", unknown=unknown)
    n = int(row["pairs"])
    total = n + unknown
    for low, high in (("ci_low", "ci_high"), ("rated_low", "rated_high")):
        if row.get(low) is not None:
            row[low] = (n * row[low] - unknown) / total
            row[high] = (n * row[high] + unknown) / total
    row["pairs"] = total
    return row


# The share of a verdict's rated pairs passed over by a rater from which its notes say so: a hold let go now and then
# is ordinary (a browser closed); a twentieth of the sample is raters choosing what they rate.
PASSED_OVER_SHARE = 0.05


def passed_over_note(ratings: RatingData, ratings_per_pair: int, pairs_at: int) -> str:
    """A note where many of the rated pairs a look at `pairs_at` decided pairs rests on (the head of the queue's
    order) were passed over by a rater (skipped, or a hold let go) before another rated them. The look waits for them,
    so the sample stays the pool's; but the interval takes a pair's rater as not chosen by what the pair shows (README,
    "Whom does the claim cover?"), and a rater who passes a pair over chooses: where raters judge the paths
    differently, those pairs carry the judgement of whoever rates what others avoid. '' otherwise."""
    pairs, _done, run = in_queue_order(ratings, ratings_per_pair)
    head = pairs[:rated_needed(pairs_at, ratings, pairs[:run], pairs)] if pairs_at else pairs[:run]
    # a pair given up has no rating that counts (_standing): not one "the verdict rests on" here
    head = head[~ratings.unknown[head] & ~ratings.set_aside[head] & ~ratings.given_up[head]] if len(head) else head
    n = int(ratings.passed_over[head].sum()) if len(head) else 0
    if not n or n < PASSED_OVER_SHARE * len(head):
        return ""
    from .notes import note

    return note("passed over", passed=n, head=len(head))


def complete_count(ratings: RatingData, ratings_per_pair: int) -> int:
    """Decided pairs: the pairs whose texts differ at the head of the queue's order that are all complete
    (in_queue_order's leading run: a pair still waiting for a rating holds back the pairs after it), and beside them
    the identical pairs in the pool's proportion (identical_quota). The planned sample is complete when this reaches
    planned_pairs."""
    pairs, _done, run = in_queue_order(ratings, ratings_per_pair)
    return run + int(identical_by_count(ratings, pairs[:run], pairs)[-1])


def waiting_pairs(ratings: RatingData, ratings_per_pair: int, planned_pairs: int) -> tuple[list[int], int]:
    """What holds back a look at `planned_pairs` decided pairs: the pairs (indices) inside the head of the queue's
    order that look needs which are not complete while some pair after them is, and how many complete pairs they hold
    back. ([], 0) when nothing waits that way."""
    import numpy as np

    pairs, done, run = in_queue_order(ratings, ratings_per_pair)
    need = rated_needed(planned_pairs, ratings, pairs)
    head = done[:need]
    if not planned_pairs or run >= need or not head[run:].any():
        return [], 0
    last = run + int(np.flatnonzero(head[run:])[-1])  # the last complete pair of the head
    return [int(p) for p in pairs[:last + 1][~done[:last + 1]]], int(done[run:last + 1].sum())


def decision_sample(ratings: RatingData, ratings_per_pair: int, planned_pairs: int):
    """The pairs the fidelity gate decides on, fixed in advance so that later ratings cannot move a decision.

    Pairs whose texts differ: the first in the queue's random order (in_queue_order), each with its first that many
    current ratings (by time of storing), complete once every one of them has the ratings it wants. A pair wants its
    own quota, stored when the pool's queue order was drawn (with one rating per pair, two for the pairs drawn for a
    second rating), else `ratings_per_pair` (the gate's). Identical pairs need no rating: beside k rated pairs the
    sample holds identical_quota(k) of them (the pool's proportion; with_identical says which). The sample is complete
    when the two together reach `planned_pairs`: it takes the fewest rated pairs that do (all complete pairs when the
    size is not planned). Before that, the sample is every complete pair so far, in the same order (the data so far,
    never judged). Ratings of identical pairs (stored before they left the queue) never count. Returns (the selected
    ratings, with pair_identical marking the identical pairs in the sample; decided pairs, complete_count)."""
    import numpy as np

    ident = ratings.identical
    if ident.any() and len(ratings):
        ratings = ratings.select(~ident[ratings.pair])
    pairs, done, run = in_queue_order(ratings, ratings_per_pair)
    decided = run + int(identical_by_count(ratings, pairs[:run], pairs)[-1])
    chosen = complete_order = pairs[done]  # every complete pair, in the queue's order; its head once the plan is reached
    k = len(chosen)
    if planned_pairs:  # the fewest rated pairs that, with their identical ones, reach the plan
        k = rated_needed(planned_pairs, ratings, chosen, pairs)
        chosen = chosen[:k]  # the head of the queue's order whenever k <= run (those pairs are all complete)
    in_sample = np.zeros(ratings.n_pairs, bool)
    in_sample[chosen] = True
    unknown = in_sample & _standing(ratings, ratings_per_pair)[2]
    in_sample &= ~unknown  # its place is taken, its ratings (of raters kept) not: it counts at the worst
    order, pair_sorted, nth = _nth_rating(ratings)
    keep = np.zeros(len(ratings), bool)
    keep[order] = (nth < ratings.wanted(ratings_per_pair)[pair_sorted]) & in_sample[pair_sorted]
    sample = with_identical(ratings.select(keep), complete_order, k, pairs)
    if planned_pairs and k + int(sample.identical.sum()) > planned_pairs:  # rounding: exactly the plan
        extra = np.flatnonzero(sample.identical)[planned_pairs - k:]
        sample.pair_identical[extra] = False
    sample.pair_unknown = unknown if unknown.any() else None
    return sample, decided


def fidelity_rows(sample: RatingData, confidence: float, resamples: int, margin: float,
                  claim: str = GENERAL, screen=None, ppi: bool = False, before: str | None = None,
                  interval: str = T_FLOOR, sequence: bool = False) -> list[dict]:
    """The gate's analysis per criterion on the decision sample (pooled over prompts; its identical pairs as exact
    zeros), for the gate's claim: about raters in general (rater differences in the interval) or these raters
    only, on the gate's interval. Then, its own step, the pre-screen (`screen`: aggregate.ppi.PairScreen of the
    sample's pairs): prediction-powered inference where `ppi` (the gate's ppi = "on"), its agreement with the
    raters always (`before`: pairs made later are no part of it). `sequence` (monitoring = "confidence sequence"):
    each interval is the betting confidence sequence's (aggregate.looks.sequence_row)."""
    from ..study.gate import fidelity_ok
    from .looks import sequence_row
    from .ppi import apply
    from .quality import _x

    rows = []
    if not len(sample) and not sample.identical.any():  # a sample of identical pairs alone is judged: all exact zeros
        return rows
    for c in CRITERIA:
        r = difference_rows(sample, c, groupings(sample)[0], confidence, resamples, claim == GENERAL, interval)
        if r:
            r = apply(r[0], sample, c, screen, ppi, confidence, claim == GENERAL, before)
            if sequence:
                r = sequence_row(r, sample, c, confidence)
            r = worst_case(r, int(sample.unknown.sum()))
            r["given_up_pairs"] = int((sample.unknown & sample.given_up).sum())  # of worst_case_pairs, said apart
            r["margin"] = margin
            # ratings of the sample's rated pairs that leave this criterion unanswered (stored before it was
            # registered): the planned sample is not rated on it, and its rated part is no longer in the pool's
            # proportion to the identical pairs, so it cannot pass (verdict audit, 2026-12-04)
            r["unanswered"] = int((~_x(sample, c)[1] & ~sample.identical[sample.pair]).sum())
            r["ok"] = bool(fidelity_ok(r["ci_low"], margin)) and not r["unanswered"]
            rows.append(r)
    return rows


def settled_when(look: dict | None) -> str:
    """When a frozen decision was taken, as every text says it: at the look that settled it (a sequential design's
    early stop), else when the planned sample completed (verdict audit 2, 2026-12-04: the report and the card said
    the latter for an early stop)."""
    return (f"when look {look['index']} settled it" if look and not look.get("final", True)
            else "when the planned sample completed")


def unjudged(fidelity: list[dict]) -> list[str]:
    """The registered criteria (task.criteria.CRITERIA: every one is judged, the gate's "every criterion") that the
    sample cannot judge: no row among these (no rating in the sample answers them), or a row some of whose ratings
    leave them unanswered (registered after those ratings were stored)."""
    have = {r["criterion"] for r in fidelity if not r.get("unanswered")}
    return [c for c in CRITERIA if c not in have]


def unjudged_text(fidelity: list[dict]) -> str:
    """Why the criteria `unjudged` names cannot be judged, each as its case is."""
    rows = {r["criterion"]: r for r in fidelity}
    none = [title(c) for c in unjudged(fidelity) if c not in rows]
    part = [f"{title(c)} ({rows[c]['unanswered']} ratings)" for c in unjudged(fidelity) if c in rows]
    out = []
    if none:
        out.append(f"{', '.join(none)} {'has' if len(none) == 1 else 'have'} no ratings in the decision sample")
    if part:
        out.append(f"{', '.join(part)} {'is' if len(part) == 1 else 'are'} left unanswered by part of the decision "
                   "sample (ratings stored before the criterion was registered): the planned sample is not rated on "
                   f"{'it' if len(part) == 1 else 'them'}")
    n = len(none) + len(part)
    return "; ".join(out) + f", so the condition cannot be judged for {'it' if n == 1 else 'them'}"


def fidelity_level(r: dict, confidence: float) -> float:
    """The two-sided level a row's interval was computed at: its look's (group sequential), else the gate's."""
    return r.get("look_level") or confidence


def interval_text(r: dict, confidence: float) -> str:
    ppi = (f" (prediction-powered, with the pre-screen on {r['ppi_unrated_pairs']} more pairs)" if r.get("ppi")
           else "")
    same = f" ({r['identical']} identical, decided without raters)" if r.get("identical") else ""
    given = int(r.get("given_up_pairs") or 0)
    if r.get("worst_case_pairs", 0) > given:
        # either cause (_standing): a later pool's copies of a revealed text are withheld, never passed over
        same += (f" ({r['worst_case_pairs'] - given} without an outcome, passed over by a rater and then rated only by "
                 "raters the gold check leaves out or withheld from every rater for repeating a revealed text: counted "
                 "at the worst, -1 for the lower end and +1 for the upper)")
    if given:  # the organiser's act, not the raters' choice: said apart (aggregate.give_up)
        same += (f" ({given} given up by the organiser, `evalkit pairs give-up`, when no current rater could take "
                 "them: counted at the worst, -1 for the lower end and +1 for the upper)")
    level = f"{confidence:.0%}" if abs(confidence * 100 - round(confidence * 100)) < 1e-9 else f"{confidence:.2%}"
    return (f"{title(r['criterion'])} {r['difference']:+.3f}, {level} CI [{end_text(r['ci_low'], r.get('margin'))}, "
            f"{end_text(r['ci_high'], r.get('margin'))}] over {r['pairs']} pair{'s' * (r['pairs'] != 1)}{same} and "
            f"{r['raters']} rater{'s' * (r['raters'] != 1)}{ppi}")


def end_text(x: float, margin: float | None) -> str:
    """An interval's end to 3 decimals, or to 4 where 3 would round it onto -margin: "[-0.050" beside "OUTSIDE
    margin -0.050" read as at the margin for an end at -0.0502 (export audit, 2026-12-04)."""
    text = f"{x:+.3f}"
    if margin is not None and x != -margin and text == f"{-margin:+.3f}":
        return f"{x:+.4f}"
    return text


# The speed-up over comparable pairs is the protocol's time ratio, but comparability is judged on the outputs, so the
# pairs it keeps are chosen by what each path wrote. Where fewer than half the matched pairs are comparable it says
# more about that choice than about the paths, and the condition is left undecided.
MIN_COMPARABLE_SHARE = 0.5


def speed_condition(speed, minimum: float) -> Condition:
    """The gate's speed condition. Two lower ends must reach the minimum: the speed-up's over comparable pairs (the
    protocol's ratio of median times) and the tokens-per-second ratio's over every matched pair, which selects
    nothing: an assisted path that is faster only because it writes less passes the first and not the second
    ("shorter and faster output does not show that the mechanism helps", the brief's protocol). Undecided when
    either was not measured, or when fewer than MIN_COMPARABLE_SHARE of the matched pairs are comparable."""
    if unknown := device_unknown_text(speed):
        return Condition("speed-up", None, unknown)
    if disagree := getattr(speed, "devices_disagree", ""):  # a decision frozen before the field: ''
        return Condition("speed-up", None, f"not judged: the benchmarks of the study's pair ran on different device "
                         f"kinds ({disagree}), whose timings never pool, and none is chosen over the others; a speed "
                         "claim is for one kind of device: start the study again in a new database (`--db`) and "
                         "benchmark it on that kind only")
    from .timing import bench_basis, rounds_needed, without_fallbacks

    if missing := rounds_needed(speed):
        return Condition("speed-up", None, needs_rounds_text(speed, missing))
    lo = speed.speedup_ci95[0] if speed.speedup_ci95 else None
    if lo is None and all_fell_back(speed):  # not a missing benchmark: it ran, and every assisted call failed
        return Condition("speed-up", None, f"no speed-up measured: every assisted run ({speed.fallback_runs}) failed "
                         "and fell back to the target alone, and a fallback never counts as assisted"
                         + (f" ({speed.fallback_cause})" if speed.fallback_cause else "")
                         + "; fix the cause (`evalkit check`) and benchmark again")
    if lo is None:
        return Condition("speed-up", None, "no speed-up interval measured over comparable outputs"
                         + "".join(f"; {n}" for n in speed.notes if "no interval" in n))
    where = f"{speed.comparable_pairs} of {speed.matched_pairs} matched pairs comparable, {bench_basis(speed)}"
    if speed.comparable_pairs < MIN_COMPARABLE_SHARE * speed.matched_pairs:
        return Condition("speed-up", None,
                         f"only {where}: fewer than {MIN_COMPARABLE_SHARE:.0%}, so the speed-up rests on the outputs "
                         f"the comparison kept, not on the paths (95% CI lower end {ratio_text(lo)}); make the outputs "
                         "comparable (the same stopping, bench.length_tolerance) and benchmark again")
    tps = speed.throughput_ci95[0] if speed.throughput_ci95 else None
    from ..generation.speed import no_spread

    # a zero-width interval read as a sure figure here: say it, as the speed figure's note does
    flat = "; the interval has zero width, the timings carry no spread" if no_spread(speed.speedup_ci95) else ""
    text = (f"95% CI lower end {ratio_text(lo)} vs minimum {minimum:.2f} ({where}{flat}); tokens/s ratio over every "
            f"matched pair{without_fallbacks(speed)} "
            + ("not measured" if tps is None else f"{ratio_text(speed.throughput_ratio)}, lower end {ratio_text(tps)}"))
    deployed, fallback_text = _as_deployed(speed)
    text += fallback_text
    if tps is None:
        return Condition("speed-up", None, text)
    if lo >= minimum and tps < minimum:
        text += (": the time ratio passes only on the comparable pairs, not per token over every pair (shorter "
                 "outputs, or chosen ones, are not a faster path)")
    elif min(lo, tps) >= minimum and deployed is not None and deployed < minimum:
        text += ": faster where drafting works, not once its fallbacks are counted"
    elif min(lo, tps) < minimum <= min(speed.speedup or 0, speed.throughput_ratio or 0) and speed.source == "benchmark":
        text += ("; the estimates reach the minimum but the interval does not: its unit is the benchmark's round (a "
                 "fresh process per path), and the gate's speed_rounds, fixed before the first benchmark, says how "
                 "many decide" + (" (rounds measured after them never enter, so re-running `evalkit bench` does not "
                                  "change it; plan more rounds in the next study's gate)"
                                  if getattr(speed, "rounds_planned", 0) else ""))
    return Condition("speed-up", bool(lo >= minimum and tps >= minimum and (deployed is None or deployed >= minimum)),
                     text)


def device_unknown_text(speed) -> str:
    """Why neither the speed nor the memory condition is judged where the study's deployment device is unknown
    (data.unknown_device), and how to fix it; '' where it is known (a decision frozen before the field: known)."""
    from .data import device_unknown_reason

    if not (unknown := getattr(speed, "device_unknown", "")):
        return ""
    return f"not judged: {device_unknown_reason(speed.pool_id, unknown)}"


def needs_rounds_text(speed, missing: int) -> str:
    """Why the speed condition waits: the gate's speed_rounds are not all measured yet, and what to run; and the pool's
    figure shown meanwhile, not deciding (the gate's speed_source)."""
    planned = speed.rounds_planned
    return (f"not judged yet: {speed.rounds} of the {planned} benchmark rounds the gate plans (speed_rounds) are measured; "
            f"the first {planned} decide, whatever is measured after them: run `evalkit bench --rounds "
            f"{max(missing, 2)}`{_on_device(speed)} for the {missing} still needed, before the planned sample is rated "
            f"(a decision frozen without them is INSUFFICIENT DATA)" + _pool_figure(speed))


def _on_device(speed) -> str:
    """Where the missing rounds must run: the study's deployment device (the gate's speed_device), '' where any."""
    device = getattr(speed, "deploy_device", "")  # a decision frozen before the field: any
    return f" on {device} (the gate's speed_device: benchmarks on another device never decide)" if device else ""


def _pool_figure(speed) -> str:
    """The pool's single runs' figure where it stands in for the missing benchmark: reported, not deciding."""
    from .timing import POOL_SOURCE, warmup_words

    if speed.source != POOL_SOURCE or speed.speedup is None:
        return ""
    ci = speed.speedup_ci95
    warm = f" ({w})" if (w := warmup_words(speed)) else ""
    return (f"; the pair pool's single runs measure {ratio_text(speed.speedup)}"
            + (f" (95% CI lower end {ratio_text(ci[0])})" if ci else "") + warm + ", reported, not deciding: the gate "
            "(speed_source = \"benchmark\") decides on benchmark rounds only, fixed before anyone looked, so a "
            "benchmark run after seeing the pool's figure is no second look")


def all_fell_back(speed) -> bool:
    """Every assisted run of the figure fell back: none paired with ordinary, some fallbacks."""
    return not speed.matched_pairs and bool(getattr(speed, "fallback_runs", 0))


def _as_deployed(speed) -> tuple[float | None, str]:
    """Where assisted runs fell back: the lower end of the speed-up as deployed (each fallback counted on the assisted
    side at its whole wait; None where it cannot be formed, as from the pool, whose fallbacks are never paired), and
    the words saying the other figures leave the fallbacks out and so overstate what the configuration delivers."""
    fell = getattr(speed, "fallback_runs", 0) or 0
    if not fell:
        return None, ""
    ci = getattr(speed, "deployed_ci95", None)
    text = (f"; {fell} assisted run(s) fell back and are left out of both figures, which so overstate what the "
            "assisted configuration delivers")
    if ci is None:
        return None, text
    return ci[0], text + (f"; as deployed (each fallback counted at its whole wait on the assisted side) "
                          f"{ratio_text(speed.deployed_speedup)}, lower end {ratio_text(ci[0])}")


def measured(speed, gate_values: dict) -> bool:
    """Whether the speed figure judges both the speed-up and the memory conditions (decide's), rather than leaving
    them to a benchmark still to come."""
    return (speed_condition(speed, gate_values["min_speedup_ci_low"]).ok is not None and not device_unknown_text(speed)
            and speed.extra_memory_mb is not None)


def decide(gate_values: dict | None, fidelity: list[dict], speed, complete_pairs: int, n_pairs: int,
           identical: int = 0, look=None) -> Verdict:
    """KEEP, DROP or INSUFFICIENT DATA with one reason per gate condition. `speed`: the aggregate's Speed;
    identical: the pool's pairs with identical outputs (decided without raters); look: the gate's look the rows were
    computed at (aggregate.looks.Look; None: no look reached yet). At a look before the last (group sequential) the
    study stops only where the fidelity condition is settled (every criterion passed, or one below the margin) and
    speed and memory are measured; otherwise the look is interim."""
    if gate_values is None:
        return Verdict(Decision.INSUFFICIENT_DATA, True, INTERIM, [Condition("gate", None, "no frozen release gate")],
                       fidelity)
    g = gate_values
    planned, per_pair, margin, conf = g["planned_pairs"], g["min_ratings_per_pair"], g["margin"], g["confidence"]
    if per_pair == 1 and g.get("second_rating_share"):  # text only: each pair's own quota
        per_pair = f"1 (2 for the {g['second_rating_share']:.0%} of pairs drawn to be rated twice)"
    conditions = []
    sequential = look is not None and look.of > 1
    early = sequential and not look.final  # a look before the last: it may stop the study, or not
    if planned <= 0:
        interim = True
        conditions.append(Condition("planned sample", None,
                                    f"{INTERIM}: no planned sample size (planned_pairs = 0 in the gate); run `evalkit plan` "
                                    f"and freeze its planned_pairs line before rating starts ({complete_pairs} of {n_pairs} "
                                    f"pairs have {per_pair} current ratings)"))
    elif early:
        interim = True  # until the conditions below settle it
        conditions.append(Condition("planned sample", None,
                                    f"{look.text()}: {min(complete_pairs, look.pairs)} decided pairs of at most "
                                    f"{planned} ({DECIDED.format(per_pair=per_pair)}); the study stops at a look where "
                                    "every criterion has passed or one is below the margin"))
    elif complete_pairs < planned:
        interim = True
        where = "; no look reached yet" if g.get("monitoring", "fixed") != "fixed" and look is None else ""
        conditions.append(Condition("planned sample", None,
                                    (f"{INTERIM}: {complete_pairs} of the {planned} planned pairs have {per_pair} current "
                                     "ratings" if not identical else
                                     f"{INTERIM}: {complete_pairs} of the {planned} planned pairs are decided ({DECIDED})"
                                     .format(per_pair=per_pair)) + where))
    else:
        interim = False
        same = max((int(r.get("identical", 0)) for r in fidelity), default=0)
        later = f" ({complete_pairs - planned} later pairs are in the tables only)" if complete_pairs > planned else ""
        last = f"; {look.text()}, the last" if sequential else ""
        # pairs without an outcome hold places in the order but no ratings (worst_case): not "rated", said apart
        unknown = max((int(r.get("worst_case_pairs") or 0) for r in fidelity), default=0)
        given = max((int(r.get("given_up_pairs") or 0) for r in fidelity), default=0)
        aside = (f", {unknown} of them without an outcome (no ratings that count), counted at the worst" if unknown
                 else "") + (f" ({given} given up by the organiser)" if given else "")
        conditions.append(Condition("planned sample", True,
                                    (f"{planned} planned pairs have {per_pair} current ratings; the decision uses the "
                                     f"first {planned} of the queue's random order, each with its first {per_pair} "
                                     f"ratings{aside}{later}"
                                     if not identical else
                                     f"{planned} planned pairs are decided ({DECIDED}); the decision uses {same} "
                                     "identical pairs and no rated pair: every pair of the sample is identical, so "
                                     f"no rating is needed{later}".format(per_pair=per_pair)
                                     if planned - same - unknown <= 0 and not unknown else
                                     (f"{planned} planned pairs are decided ({DECIDED}); the decision uses "
                                      f"{planned - same - unknown} rated pairs, the first of the queue's random order, "
                                      f"each with its first {per_pair} ratings, "
                                      + (f"{unknown} pairs there without an outcome (no ratings that count), counted "
                                         "at the worst" + (f" ({given} given up by the organiser)" if given else "")
                                         + ", " if unknown else "")
                                      + f"and {same} identical pairs{later}").format(per_pair=per_pair)) + last))
    conditions.append(speed_condition(speed, g["min_speedup_ci_low"]))
    if fidelity:
        # every registered criterion must be judged: one without a row (no rating answers it, e.g. registered
        # after the ratings) or answered by only some of the sample's ratings leaves the condition undecided, never
        # passed by its absence, nor failed by a sample it was not planned on
        unrated = unjudged(fidelity)
        none = unjudged_text(fidelity)
        judged = [r for r in fidelity if r["criterion"] not in unrated]
        worst = min(judged or fidelity, key=lambda r: r["ci_low"])
        passed = [bool(r["ok"] or r.get("passed_at_look")) for r in judged]
        ok = all(passed)
        below = [title(r["criterion"]) for r in judged if r["ci_high"] < -margin - 1e-12]
        raters = max(int(r["raters"]) for r in fidelity)
        who = claim_text(g, raters)
        at = "" if not sequential else f" at {look.text()}"
        if ok and unrated:
            reason = (f"{who}: {none}{at}; every other criterion's lower end is at or above -{margin:.3f} (margin); "
                      f"lowest: {interval_text(worst, fidelity_level(worst, conf))}")
            ok = None
        elif ok:
            fewer = {r["criterion"] for r in narrower_passes(g, fidelity, raters)}
            earlier = [f"{title(r['criterion'])} (look {r['passed_at_look']}"
                       + (f", on {r['passed_raters']} raters' answers" if r["criterion"] in fewer else "") + ")"
                       for r in fidelity if r.get("passed_at_look") and r.get("passed_at_look") != r.get("look")]
            reason = ((f"{who}: every criterion has passed{at}: its lower end at or above -{margin:.3f} (margin) at "
                       f"this look, or at an earlier one, where a pass stays (sequential looks): {', '.join(earlier)}"
                       if earlier else
                       f"{who}: every criterion's lower end is at or above -{margin:.3f} (margin){at}")
                      + f"; lowest now: {interval_text(worst, fidelity_level(worst, conf))}")
        elif early:
            failing = [title(r["criterion"]) for r, p in zip(judged, passed) if not p]
            reason = (f"{who}: upper end below -{margin:.3f} (margin) for {', '.join(below)}{at}" if below else
                      f"{who}: not yet settled{at}: {', '.join(failing)} still open (lower end below -{margin:.3f}, "
                      f"upper end above it); lowest: {interval_text(worst, fidelity_level(worst, conf))}")
            reason += f"; {none}" if unrated else ""
            ok = False if below else None
        else:
            failing = [title(r["criterion"]) for r, p in zip(judged, passed) if not p]
            reason = (f"{who}: lower end below -{margin:.3f} (margin) for {', '.join(failing)}{at}; lowest: "
                      f"{interval_text(worst, fidelity_level(worst, conf))}" + (f"; {none}" if unrated else ""))
        # per criterion: one answered by fewer raters (registered after some had rated) rests on their variance alone
        short = [r for r in fidelity if not enough_raters(r, g)]  # a row of identical pairs alone needs none
        fewest = min(short or fidelity, key=lambda r: int(r["raters"]))
        enough = not short
        if not enough:  # a rater variance from so few raters is not worth a decision, whatever the interval says
            ok = None
            n = int(fewest["raters"])
            reason = ((f"{n} distinct raters rated the decision sample" if n == raters else
                       f"{n} distinct raters answered {title(fewest['criterion'])} in the decision sample")
                      + f"; a claim about raters in general needs at least {g.get('min_raters', 10)} (gate min_raters)"
                      + ("" if interim else ", so this study cannot decide it; a new study with more raters can")
                      + f". {reason}")
        # before the planned sample is complete the condition is not judged, only reported
        if interim and not early:
            conditions.append(Condition("fidelity", None, f"{INTERIM}, so far: {reason}"))
        else:
            conditions.append(Condition("fidelity", ok, reason))
    else:
        conditions.append(Condition("fidelity", None, f"no pair has {per_pair} current ratings yet"))
    mem = speed.extra_memory_mb
    if unknown := device_unknown_text(speed):  # the memory a draft adds is the hardware's too (CUDA or RSS)
        conditions.append(Condition("memory", None, unknown + (f" (measured: the draft adds {mem:.0f} MB, reported, "
                                                               "not judged)" if mem is not None else "")))
    else:
        conditions.append(Condition("memory", None if mem is None else mem <= g["max_extra_memory_mb"],
                                    "extra memory of the draft " + (getattr(speed, "memory_note", "")
                                                                     or "not measured (run `evalkit bench`)")
                                    if mem is None else
                                    f"draft adds {mem:.0f} MB (allowed {g['max_extra_memory_mb']:.0f} MB)"
                                    + (f"; {speed.extra_memory_basis}" if getattr(speed, "extra_memory_basis", None)
                                       else "")))
    failed = {c.name for c in conditions if c.ok is False}
    if early:  # a look before the last stops the study only where everything it needs is settled
        judged = {c.name: c.ok for c in conditions}
        interim = judged["fidelity"] is None or (judged["fidelity"] and None in (judged["speed-up"], judged["memory"]))
        if interim:
            conditions[0].reason = f"{INTERIM}: {conditions[0].reason}"
    if failed & {"speed-up", "memory"}:
        decision = Decision.DROP
    elif interim:
        decision = Decision.INSUFFICIENT_DATA
    elif all(c.ok is True for c in conditions if c.name != "planned sample") and (early or conditions[0].ok):
        decision = Decision.KEEP
    elif "fidelity" in failed:
        decision = Decision.DROP
    else:
        decision = Decision.INSUFFICIENT_DATA
    if interim:
        label = INTERIM
    elif early:
        label = f"decision at look {look.index} of at most {look.of} ({g.get('monitoring')})"
    else:
        label = "decision on the planned sample"
    raters = max((int(r["raters"]) for r in fidelity), default=None)
    from .ppi import sentence

    return Verdict(decision, interim, label, conditions, fidelity, g, claim=claim_statement(g, raters, fidelity),
                   ppi=sentence(fidelity, g.get("ppi") == "on", g.get("margin")), look=look.to_json() if look is not None else None)
