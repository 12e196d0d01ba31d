"""The ratings the aggregate reads, as arrays: one SQL statement into RatingData, plus the groupings every table
reports (all prompts, then each prompt) and the experiments it reads from."""

from __future__ import annotations

import contextlib
import contextvars
import json

from dataclasses import dataclass, replace

from ..task.criteria import CRITERIA
from ..records import COMPARED
from ..store.pool import WITHHELD
from ..study.pairs import IDENTICAL
from .notes import NOTES, note


def _text(key: str, /, **figures) -> str:
    """A sentence of NOTES as plain text: what a caller that prints English gets (`make`'s default)."""
    return NOTES[key].format(**figures)

ALL = "all"  # the label of the row pooled over every prompt
# the two compared paths, in the order the arrays store them
PATHS = tuple(str(p) for p in COMPARED)  # plain strings: they become table values


# When a pair joined its study (store.draw_queue_order stamps it as it ranks the pool), for "stored by the decision":
# created_at is when its sample was generated, which can be long before its pool (or its accelerate shard) joined.
# NULL for a pool still being made (its queue seed stored, its order not drawn: not served, no part of the study yet);
# a pair ranked before migration 027, or of a pool made before queue orders, has created_at standing in, as before.
PAIR_STORED = """CASE WHEN {p}stored_at IS NOT NULL THEN {p}stored_at
    WHEN {p}queue_rank IS NULL AND EXISTS (SELECT 1 FROM experiments x WHERE x.id = {p}experiment_id
                                           AND x.queue_seed IS NOT NULL) THEN NULL
    ELSE {p}created_at END"""


def answer_code(letter: str) -> int:
    """An answer's code: the first letter's code point modulo 16 (distinct for p / f / u / '-' and o / a / t / '-')."""
    return ord(letter) % 16


MISSING = answer_code("-")


@dataclass
class RatingData:
    """The current ratings as arrays, one entry per rating, and the pairs they point at.

    answers: (ratings, 2 x criteria + 1) codes (see answer_code): for each criterion the ordinary then the assisted
    answer (pass / fail / unsure), then the preferred path (ordinary / assisted / tie); MISSING where the column is
    empty."""

    rating_id: object  # int64 (ratings,)
    pair: object  # int64 (ratings,): index into the pair arrays
    rater: object  # int64 (ratings,): index into raters
    answers: object  # uint8 (ratings, 2 * len(CRITERIA) + 1)
    raters: list[str]
    pair_ids: list[str]
    pair_prompt: object  # int64 (pairs,): index into prompts
    prompts: list[str]
    pair_generation: dict  # path -> int64 (pairs,) generation id
    # bool (pairs,): the two outputs are the same tokens. Such pairs are decided without raters (the queue never
    # serves them; each criterion's difference is exactly 0) and enter the paired differences in the pool's
    # proportion (identical_in_sample). None: no pair is identical.
    pair_identical: object = None
    # int64 (pairs,): the current ratings each pair wants (its quota, stored when the pool's queue order was drawn:
    # the gate's min_ratings_per_pair, or 2 for a pair drawn for a second rating); 0 where none was stored (a pool
    # made before quotas were), which then wants the gate's min_ratings_per_pair. None: no pair has one.
    pair_wanted: object = None
    # float64 (pairs,): each pair's place in the queue's random order (store.draw_queue_order), NaN where the pool was
    # made before ranks were stored. The decision takes pairs in this order (verdict.in_queue_order). None: no ranks.
    pair_rank: object = None
    # bool (pairs,): pairs that lost a rating to the gold check's exclusions (without_raters). Once their stored
    # ratings meet the quota the queue never serves them again, so one left below its quota then is set aside rather
    # than waited for (verdict.in_queue_order; one still open is waited for like any other pair); which raters the
    # gold check leaves out does not depend on the study pairs' texts. None: none.
    pair_set_aside: object = None
    # int64 (pairs,): each pair's current ratings before the exclusions (without_raters): what the queue counts
    # against its quota. None: no rater left out.
    pair_count_before: object = None
    # bool (pairs,): pairs a rater was shown and passed over (skipped, or let her hold go unrated): who rated such a
    # pair then depended on its texts (verdict.in_queue_order). None: none.
    pair_passed_over: object = None
    # bool (pairs,): pairs the queue kept from a rater while they were open because she had rated a pair holding one of
    # their texts (queue._MET_TEXT): who rated them then depended on their texts too (verdict._standing). None: none.
    pair_kept_from: object = None
    # bool (pairs,): pairs withheld from every rater as their pool joined the study, since they repeat a text a
    # closed pair revealed (study.pairs.revealed_copies): they keep their place, complete with their outcome unknown
    # (verdict._standing). None: none.
    pair_withheld: object = None
    # bool (pairs,): pairs the organiser gave up (study.give_up: no current rater could take them, and the look waited
    # for good): they keep their place, complete with their outcome unknown (verdict._standing). None: none.
    pair_given_up: object = None
    # bool (pairs,): in a decision sample, the pairs that keep their place with their outcome unknown
    # (verdict.decision_sample; fidelity_rows counts them at the worst). None: none.
    pair_unknown: object = None
    # per pair: when it joined its study (PAIR_STORED; None for a pool still being made). None: not loaded.
    pair_stored: object = None

    def __len__(self) -> int:
        return len(self.rating_id)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_ids)

    def code(self, path: str, criterion: str):
        return self.answers[:, 2 * CRITERIA.index(criterion) + PATHS.index(path)]

    def passed(self, path: str, criterion: str):
        return self.code(path, criterion) == answer_code("p")

    def preferred(self):
        return self.answers[:, 2 * len(CRITERIA)]  # after each criterion's two answers

    def without_raters(self, names) -> "RatingData":
        """The ratings of every rater but these (the gold check's exclusions)."""
        import numpy as np

        gone = [i for i, r in enumerate(self.raters) if r in set(names)]
        removed = np.isin(self.rater, gone)
        kept = self.select(~removed)
        if removed.any():
            aside = self.set_aside.copy()
            aside[self.pair[removed]] = True
            kept.pair_set_aside = aside
            if self.pair_count_before is None:
                kept.pair_count_before = np.bincount(self.pair, minlength=self.n_pairs)
        return kept

    def joined_by(self, joined) -> "RatingData":
        """The pairs as they stood before the pairs where `joined` (bool (pairs,)) is False had joined their study:
        those are no identical or withheld pairs yet. Such pairs need no rating, so a pool of them joining after the
        last rating would otherwise complete a sample as of a rating that came before it (decision._completion).
        Not joined, they are pending pairs of a later rating epoch than every rated pair: they hold nothing back."""
        if joined.all():
            return self
        return replace(self, pair_identical=self.identical & joined, pair_withheld=self.withheld & joined)

    def given_up_by(self, given) -> "RatingData":
        """The pairs as they stood before the give-ups where `given` (bool (pairs,)) is False were recorded: not given
        up yet (the frozen decision's history, decision._as_of)."""
        if given.all():
            return self
        return replace(self, pair_given_up=self.given_up & given)

    def select(self, keep) -> "RatingData":
        return replace(self, rating_id=self.rating_id[keep], pair=self.pair[keep], rater=self.rater[keep],
                       answers=self.answers[keep])

    def _flags(self, values):
        """bool (pairs,): `values`, all False where None."""
        import numpy as np

        return np.zeros(self.n_pairs, bool) if values is None else values

    @property
    def identical(self):
        """bool (pairs,): pairs whose outputs are the same tokens (all False when none is)."""
        return self._flags(self.pair_identical)

    @property
    def set_aside(self):
        """bool (pairs,): pairs that lost a rating to the gold check (all False when none did)."""
        return self._flags(self.pair_set_aside)

    @property
    def passed_over(self):
        """bool (pairs,): pairs a rater was shown and passed over (all False when none was)."""
        return self._flags(self.pair_passed_over)

    @property
    def kept_from(self):
        """bool (pairs,): pairs the queue kept from a rater who had rated one of their texts (all False when none)."""
        return self._flags(self.pair_kept_from)

    @property
    def withheld(self):
        """bool (pairs,): pairs withheld from every rater (all False when none is)."""
        return self._flags(self.pair_withheld)

    @property
    def given_up(self):
        """bool (pairs,): pairs the organiser gave up (all False when none is)."""
        return self._flags(self.pair_given_up)

    @property
    def unknown(self):
        """bool (pairs,): a decision sample's pairs whose outcome is unknown (all False when none is)."""
        return self._flags(self.pair_unknown)

    @property
    def rank(self):
        """float64 (pairs,): the queue's random order, NaN for a pair without a rank."""
        import numpy as np

        return np.full(self.n_pairs, np.nan) if self.pair_rank is None else self.pair_rank

    def wanted(self, ratings_per_pair: int):
        """int64 (pairs,): the current ratings each pair wants before it is complete: its stored quota, else
        `ratings_per_pair` (the gate's min_ratings_per_pair)."""
        import numpy as np

        if self.pair_wanted is None:
            return np.full(self.n_pairs, ratings_per_pair, np.int64)
        return np.where(self.pair_wanted > 0, self.pair_wanted, ratings_per_pair)


# Gold (check) pairs never enter a comparison of the paths: they are scored in evalkit.study.gold. (A test turns this off
# to show that a leak would move the tables.)
ONLY_STUDY_PAIRS = True


def _numbers(text):
    import numpy as np

    return np.array([], np.int64) if not text else np.fromstring(text, dtype=np.int64, sep=",")


# A pair's standing the decision reads from rows the export does not carry (a hold let go, a closing as its pool
# joined): the export adds them to its pairs table as flags (pair_standing), so that a reader can rebuild the sample
STANDING = ("passed_over", "kept_from", "withheld", "given_up")


def _standing_rows(db, study_id: int | None) -> dict:
    """Per STANDING flag, the rowids of the pairs of study_id it holds for (int64 array)."""
    where = _pair_filter(study_id, "p.")
    queries = {"passed_over": PASSED_OVER.format(where=where), "kept_from": KEPT_FROM.format(where=where),
               "withheld": f"SELECT group_concat(p.rowid, ',') FROM pairs p WHERE {where} "
                           f"AND {WITHHELD.format(p='p.')}",
               "given_up": f"SELECT group_concat(p.rowid, ',') FROM pairs p WHERE {where} "
                           "AND p.id IN (SELECT pair_id FROM pair_give_ups)"}
    return {flag: _numbers(db.execute(sql).fetchone()[0]) for flag, sql in queries.items()}


def pair_standing(db) -> dict[str, set[str]]:
    """Per STANDING flag, the ids of the study pairs it holds for, each study's as its decision reads them: a decided
    study's passed over and kept from as they stood at its completing rating (standing_at), not as now."""
    ids = dict(db.execute("SELECT rowid, id FROM pairs").fetchall())
    studies = [r[0] for r in db.execute("SELECT id FROM studies").fetchall()] or [None]
    decided = dict(db.execute("SELECT study_id, completed_rating_id FROM decisions").fetchall())
    out = {flag: set() for flag in STANDING}
    for study in studies:
        rows = _standing_rows(db, study)
        if study in decided:
            rows.update({flag: _held_at(span, decided[study]) for flag, span in _standing_spans(db, study).items()})
        for flag, found in rows.items():
            out[flag] |= {ids[int(r)] for r in found}
    return out


def _pair_filter(study_id: int | None, p: str = "") -> str:
    """The pairs compared (`p`: the pairs table's alias with its dot), of one study (of every study when there is
    none to choose: a database without a pool)."""
    only = f"{p}kind = 'study'" if ONLY_STUDY_PAIRS else f"{p}kind IN ('study', 'gold')"
    if study_id is None:
        return only
    return f"{only} AND {p}experiment_id IN (SELECT id FROM experiments WHERE study_id = {int(study_id)})"


# The pairs a rater was shown and passed over: skipped, or shown (a hold) and never rated by her. Who rated such a pair
# depended on what it shows, so it is no random pick of the gold check's exclusions (verdict.in_queue_order).
PASSED_OVER = """SELECT group_concat(p.rowid, ',') FROM pairs p WHERE {where} AND (
    EXISTS (SELECT 1 FROM ratings s WHERE s.pair_id = p.id AND s.supersedes IS NULL AND s.kind = 'skip')
    OR EXISTS (SELECT 1 FROM assignments a WHERE a.pair_id = p.id AND NOT EXISTS (
        SELECT 1 FROM ratings r WHERE r.pair_id = a.pair_id AND r.rater = a.rater AND r.supersedes IS NULL
          AND r.kind = 'rating')))"""

# The pairs the queue kept from a rater while they were still being rated, because she had rated a pair holding one of
# their texts (rating.queue._MET_TEXT: greedy copies, a gold pair's unedited output): their raters were then chosen by
# what they show, as a skip's are. Only texts held by more than one pair can do so, which keeps this cheap where texts
# do not repeat; a rater met a text while the pair was open when her first rating of it came before its last rating.
# "Before" by the ratings' ids, the order they were stored in: two ratings stored within one tick of created_at
# compared equal, and the copy was set aside (tests/test_skips.py failed so under .ci/run)
_KEPT_FROM_MET = """WITH t AS (SELECT p.rowid AS prow, p.id AS pid, g.text FROM pairs p
        JOIN generations g ON g.id IN (p.a_generation_id, p.b_generation_id) WHERE {where}),
    shared AS (SELECT text FROM t GROUP BY text HAVING COUNT(DISTINCT pid) > 1
               UNION SELECT text FROM reference_outputs WHERE text IN (SELECT text FROM t)),
    holders AS (SELECT q.id AS qid, g.text FROM pairs q JOIN generations g ON g.id IN (q.a_generation_id,
                    q.b_generation_id) WHERE g.text IN shared
                UNION ALL SELECT q.id, m.text FROM pairs q JOIN reference_outputs m ON m.id IN (q.a_reference_id,
                    q.b_reference_id) WHERE m.text IN shared),
    met AS (SELECT h.text, r.rater, MIN(r.id) AS at FROM holders h
            JOIN ratings r ON r.pair_id = h.qid AND r.kind = 'rating' AND r.supersedes IS NULL GROUP BY h.text, r.rater)"""
KEPT_FROM = _KEPT_FROM_MET + """,
    last AS (SELECT t.prow, t.pid, t.text, MAX(r.id) AS at FROM t JOIN ratings r ON r.pair_id = t.pid
             AND r.kind = 'rating' AND r.supersedes IS NULL WHERE t.text IN shared GROUP BY t.prow, t.text)
SELECT group_concat(DISTINCT last.prow) FROM last JOIN met ON met.text = last.text AND met.at < last.at
WHERE NOT EXISTS (SELECT 1 FROM ratings x WHERE x.pair_id = last.pid AND x.rater = met.rater
                  AND x.supersedes IS NULL)"""

# The same two flags as spans of the rating-id axis, per pair: (pair rowid, from, until; NULL: not yet ended), so that
# the frozen decision's history reads each as it stood at a look's point (RatingHistory.as_of), never as now: a skip
# stored after the decision (skip_pair refused none then; it refuses every closed pair now) flipped a set-aside pair
# to "at the worst" in the
# replay, the report's notes and the export (statistics audit, 2026-12-06). A hold is shown while its pair is open,
# so every hold on a pair a look reads (complete, or full before the gold check's exclusions) was shown before the
# look's point: only its end, the holder's own rating, is placed. Kept from a rater: from the pair's first rating after
# she met the text until her own row of the pair (KEPT_FROM's met.at < last.at, and no row of hers).
PASSED_OVER_SPANS = """SELECT p.rowid, s.id, NULL FROM pairs p JOIN ratings s ON s.pair_id = p.id
        AND s.supersedes IS NULL AND s.kind = 'skip' WHERE {where}
    UNION ALL SELECT p.rowid, 0, (SELECT MIN(r.id) FROM ratings r WHERE r.pair_id = a.pair_id AND r.rater = a.rater
        AND r.supersedes IS NULL AND r.kind = 'rating') FROM pairs p JOIN assignments a ON a.pair_id = p.id
        WHERE {where}"""
KEPT_FROM_SPANS = _KEPT_FROM_MET + """
SELECT * FROM (SELECT t.prow, (SELECT MIN(r.id) FROM ratings r WHERE r.pair_id = t.pid AND r.kind = 'rating'
                                 AND r.supersedes IS NULL AND r.id > met.at) AS start,
                      (SELECT MIN(x.id) FROM ratings x WHERE x.pair_id = t.pid AND x.rater = met.rater
                                 AND x.supersedes IS NULL)
               FROM t JOIN met ON met.text = t.text WHERE t.text IN shared) WHERE start IS NOT NULL"""


def _standing_spans(db, study_id: int | None) -> dict:
    """Per flag of the two the history places in time (passed_over, kept_from): (pair rowids, from, until) arrays,
    until inf where not ended."""
    import numpy as np

    where = _pair_filter(study_id, "p.")
    out = {}
    for flag, sql in (("passed_over", PASSED_OVER_SPANS), ("kept_from", KEPT_FROM_SPANS)):
        rows = db.execute(sql.format(where=where)).fetchall()
        out[flag] = (np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], float),
                     np.array([np.inf if r[2] is None else r[2] for r in rows], float))
    return out


def _held_at(span, point: float):
    """The pair rowids (or indices) of one flag's spans that hold at `point` of the rating-id axis."""
    pair, start, until = span
    return pair[(start <= point) & (point < until)]


def standing_at(db, ratings: RatingData, study_id: int | None, point: float) -> RatingData:
    """`ratings` (the study's, as load_ratings reads them) with the pairs passed over or kept from a rater as they
    stood at `point` (a decision's completing rating): what the decision read, whatever was stored since."""
    import numpy as np

    rowids = _rowids(db, study_id)
    return replace(ratings, **{f"pair_{flag}": np.isin(rowids, _held_at(span, point))
                               for flag, span in _standing_spans(db, study_id).items()})


def _rowids(db, study_id: int | None):
    import numpy as np

    return np.array([r[0] for r in db.execute(
        f"SELECT rowid FROM pairs WHERE {_pair_filter(study_id)} ORDER BY rowid").fetchall()], np.int64)


def load_ratings(db, study_id: int | None = None, history: bool = False):
    """Every current rating of the study's pairs in one SQL statement. SQLite packs each rating's nine answers into
    one integer (four bits each) and joins each column into one comma-separated string that numpy parses in one
    call, so no Python object is made per value (a million ratings load in about two seconds).

    history=True: every blind rating row instead (each may have been current at some time), as a RatingHistory,
    from which the ratings current as of any rating id can be taken (the decision frozen at completion)."""
    import numpy as np
    import pandas as pd

    where = _pair_filter(study_id)
    pairs = db.execute(
        "SELECT rowid, id, prompt_id, ordinary_generation_id, assisted_generation_id, "
        f"{IDENTICAL.format(p='pairs.')}, wanted_ratings, queue_rank, {PAIR_STORED.format(p='pairs.')} FROM pairs "
        f"WHERE {where} ORDER BY rowid").fetchall()
    rowids = np.array([p[0] for p in pairs], np.int64)
    prompts = sorted({p[2] for p in pairs})
    prompt_index = {p: i for i, p in enumerate(prompts)}
    columns = [f"r.{path}_{c}" for c in CRITERIA for path in PATHS] + ["r.preferred_path"]
    packed = " + ".join(f"((coalesce(unicode({col}), 45) % 16) << {4 * i})" for i, col in enumerate(columns))
    source = "ratings r" if history else "current_ratings r"
    rows = "r.kind = 'rating' AND r.blind = 1 AND " if history else ""
    ids, pair_rows, raters, answers = db.execute(
        f"""SELECT group_concat(r.id, ','), group_concat(p.rowid, ','), group_concat(r.rater, char(31)),
                   group_concat({packed}, ',')
            FROM {source} JOIN pairs p ON p.id = r.pair_id WHERE {rows}{_pair_filter(study_id, "p.")}""").fetchone()

    packed_answers = _numbers(answers)
    rater_index, rater_names = pd.factorize(pd.Series(raters.split("\x1f") if raters else [], dtype=object))
    data = RatingData(
        rating_id=_numbers(ids), pair=np.searchsorted(rowids, _numbers(pair_rows)),
        rater=np.asarray(rater_index, np.int64),
        answers=np.stack([(packed_answers >> (4 * i)) & 15 for i in range(len(columns))], axis=1).astype(np.uint8)
        if len(packed_answers) else np.zeros((0, len(columns)), np.uint8),
        raters=[str(x) for x in rater_names], pair_ids=[p[1] for p in pairs],
        pair_prompt=np.array([prompt_index[p[2]] for p in pairs], np.int64), prompts=prompts,
        pair_generation=dict(zip(PATHS, (np.array([p[3] or -1 for p in pairs], np.int64),
                                         np.array([p[4] or -1 for p in pairs], np.int64)))),
        pair_identical=np.array([bool(p[5]) for p in pairs], bool),
        pair_wanted=np.array([p[6] or 0 for p in pairs], np.int64),
        pair_rank=np.array([np.nan if p[7] is None else p[7] for p in pairs], float),
        pair_stored=[p[8] for p in pairs],
        **{f"pair_{flag}": np.isin(rowids, found) for flag, found in _standing_rows(db, study_id).items()})
    # a pool still being made (PAIR_STORED NULL) is no part of the study yet: its identical pairs, unranked, would
    # enter in the first rating epoch's proportion
    data = data.joined_by(np.array([s is not None for s in data.pair_stored], bool))
    if not history:
        return data
    # a blind row stops being current when a blind row superseding it is stored (the current_ratings view)
    old, new = db.execute(
        """SELECT group_concat(s.supersedes, ','), group_concat(s.id, ',') FROM ratings s
           WHERE s.supersedes IS NOT NULL AND s.blind = 1""").fetchone()
    old, new = _numbers(old), _numbers(new)
    ended = np.full(len(data), np.iinfo(np.int64).max)
    if len(data) and len(old):
        order = np.argsort(data.rating_id)
        ids_sorted = data.rating_id[order]
        at = np.minimum(np.searchsorted(ids_sorted, old), len(order) - 1)
        found = ids_sorted[at] == old  # superseded rows of this study (the others are another study's)
        ended[order[at[found]]] = new[found]
    spans = {flag: (np.searchsorted(rowids, pair), start, until)
             for flag, (pair, start, until) in _standing_spans(db, study_id).items()}
    return RatingHistory(data, ended, spans)


@dataclass
class RatingHistory:
    """Every blind rating row of a study with the id of the row that superseded it (int64 max while current): the
    ratings as they stood after any stored rating, so that a decision can be fixed as of the rating that completed
    the planned sample, whenever it is first looked at."""

    rows: RatingData
    ended: object  # int64 (rows,): id of the blind row that superseded it
    spans: dict | None = None  # _standing_spans: the flags read as of a point; None: as now

    @property
    def last_id(self) -> int:
        return int(self.rows.rating_id.max()) if len(self.rows) else 0

    def as_of(self, point: float) -> RatingData:
        """The current ratings right after rating `point` was stored (a point between two ratings, j + 0.5: right
        after rating j), with the pairs passed over or kept from a rater by then."""
        import numpy as np

        rows = self.rows.select((self.rows.rating_id <= point) & (self.ended > point))
        for flag, span in (self.spans or {}).items():
            held = np.zeros(rows.n_pairs, bool)
            held[_held_at(span, point)] = True
            rows = replace(rows, **{f"pair_{flag}": held})
        return rows


def groupings(ratings: RatingData) -> list:
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




def latest_experiment(db, kind: str, before: str | None = None):
    """The latest experiment of this kind (started by `before`, when given)."""
    return next(db.query("SELECT * FROM experiments WHERE kind = :kind AND (:before IS NULL OR created_at <= :before) "
                         "ORDER BY id DESC LIMIT 1", {"kind": kind, "before": before}), None)


def latest_bench(db, before: str | None = None):
    """The benchmark the speed figure rests on: the latest; with `before` (a decision frozen at completion), the
    latest whose results were stored by then (a benchmark started before but stored after does not count, so the
    decision is the same whenever it is first looked at). Rows stored before stored_at existed use the
    experiment's start."""
    if before is None:
        return latest_experiment(db, "bench")
    return next(db.query(
        """SELECT e.* FROM experiments e WHERE e.kind = 'bench' AND e.created_at <= :before AND EXISTS (
               SELECT 1 FROM bench_processes b WHERE b.experiment_id = e.id AND b.status = 'ok'
                 AND COALESCE(b.stored_at, e.created_at) <= :before)
           ORDER BY e.id DESC LIMIT 1""", {"before": before}), None)


# What makes a benchmark a measurement of the pair a study rates: the same settings of the models and of decoding and
# drafting (a quick benchmark of another draft, precision or sampling setting measures something else), the same
# weights (digests from the compatibility record), and every prompt the study rates.
BENCH_MUST_MATCH = (("models", "dtype"), ("models", "quantization"), ("decoding", "mode"), ("decoding", "temperature"),
                    ("decoding", "top_p"), ("decoding", "top_k"), ("decoding", "max_new_tokens"),
                    ("decoding", "prompt_format"), ("assistant", "num_assistant_tokens"),
                    ("assistant", "num_assistant_tokens_schedule"), ("assistant", "assistant_confidence_threshold"))


def settings_mismatch(b_cfg: dict, b_compat: dict, p_cfg: dict, p_compat: dict, make=_text) -> str | None:
    """Why a run made with config b_cfg and compatibility record b_compat is not of the pair a study's pool made with
    p_cfg / p_compat rates (None when it is): a setting of BENCH_MUST_MATCH that differs, or other weights. `make`
    writes the sentence from NOTES (plain text by default; note, for a note the Chinese verdict says)."""
    for section, key in BENCH_MUST_MATCH:
        b, p = (b_cfg.get(section) or {}).get(key), (p_cfg.get(section) or {}).get(key)
        if b != p and not ((b_cfg.get("decoding") or {}).get("mode") == "greedy" and section == "decoding"
                           and key in ("temperature", "top_p", "top_k")):  # greedy reads no sampling setting
            return make("setting differs", setting=f"{section}.{key}", bench=repr(b), pool=repr(p))
    for role in ("target", "draft"):
        b = ((b_compat or {}).get(role) or {}).get("weights_digest")
        p = ((p_compat or {}).get(role) or {}).get("weights_digest")
        if b and p and b != p:
            return make("other weights", role=role, bench=b, pool=p)
    # the weights' digest reads no tokenizer file: a chat template edited beside the same weights frames every
    # prompt otherwise, a vocabulary or special id changed tokenizes it otherwise (sceptic audit, 2026-12-06)
    for role in ("target", "draft"):
        b = ((b_compat or {}).get(role) or {}).get("tokenizer") or {}
        p = ((p_compat or {}).get(role) or {}).get("tokenizer") or {}
        for key in TOKENIZER_MUST_MATCH:
            if key in b and key in p and b[key] != p[key]:
                return make("other tokenizer", role=role, key=key, bench=repr(b[key]), pool=repr(p[key]))
    return None


# What of a tokenizer's fingerprint (generation.compat.tokenizer_fingerprint) shapes the token ids a model is given;
# its class name changes with the Transformers version, not the tokens.
TOKENIZER_MUST_MATCH = ("chat_template_hash", "vocab_hash", "special_ids")


# Where a look finds an experiment's runs cheaply: (table, its generation id column). Reading every generation's JSON
# of a 50,000-pair pool took 0.6 s a look; a pool's pairs and a benchmark's timed runs are small rows.
RUNS_OF = {"pool": ("pairs", "ordinary_generation_id"), "bench": ("timing_runs", "generation_id")}


def prompt_requests(db, experiment_id: int, key: str = "hash", kind: str | None = None) -> dict[str, set[str]]:
    """{prompt id: the request hashes (task.prompts.prompt_hash: material, task, token budget; with key
    "criteria_hash", the criteria's wording) its runs in experiment `experiment_id` stored}. A run of an older evalkit
    that stored none adds no hash. With `kind` (RUNS_OF), what a look needs: the first and the last paired or timed
    run of each prompt (a resume refuses edited prompt files, so an experiment's runs of a prompt share a request)."""
    where = "experiment_id = :e"
    if kind is not None:
        table, column = RUNS_OF[kind]
        ends = " UNION ".join(f"SELECT {f}({column}) FROM {table} WHERE experiment_id = :e GROUP BY prompt_id"
                              for f in ("MIN", "MAX"))
        where = f"id IN ({ends})"
    out: dict[str, set[str]] = {}
    for pid, h in db.execute(f"SELECT DISTINCT prompt_id, json_extract(effective_config, '$.prompt.{key}') FROM "
                             f"generations WHERE {where}", {"e": experiment_id}):
        out.setdefault(pid, set()).update({h} if h else set())
    return out


def request_mismatch(have: dict[str, set[str]], rated: dict[str, set[str]], ids_too: bool = True,
                     them: str = "the study's pairs", what: str = "request", make=_text) -> str | None:
    """Why runs answering the requests `have` ({prompt id: hashes}, prompt_requests) are not of the study whose first
    pool answered `rated` (None when they are): a prompt whose file was edited in between (another hash), and with
    `ids_too`, a prompt only one of them holds. Hashes are compared where both sides stored one. `make`: as
    settings_mismatch's (`them` and `what` then parts it wrote)."""
    if ids_too and set(have) != set(rated):
        extra, missing = sorted(set(have) - set(rated)), sorted(set(rated) - set(have))
        return ("the prompts differ (" + "; ".join(([f"also {', '.join(extra)}"] if extra else [])
                                                  + ([f"not {', '.join(missing)}"] if missing else [])) + ")")
    for pid in sorted(set(have) & set(rated)):
        if have[pid] and rated[pid] and have[pid] != rated[pid]:
            return make("prompt edited", prompt=pid, what=what, have=", ".join(sorted(have[pid])), them=them,
                        rated=", ".join(sorted(rated[pid])))
    return None


def study_pool(db, study_id: int | None):
    """The study's first pool experiment, made when its gate was frozen: the settings the study rates (a later pool
    must share them: study.pairs refuses one that does not), and the stored config the aggregate reads. None without
    a study or a pool."""
    if study_id is None:
        return None
    return next(db.query("SELECT * FROM experiments WHERE kind = 'pool' AND study_id = ? ORDER BY id LIMIT 1",
                         [study_id]), None)


def bench_mismatch(db, bench, pool) -> str | None:
    """Why benchmark `bench` does not measure what pool experiment `pool` rates (None when it does): a setting of
    BENCH_MUST_MATCH that differs, other weights, or prompts the study rates that it did not time (a Note: the notes
    that leave the benchmark out carry it)."""
    from ..generation.speed import joined

    why = settings_mismatch(json.loads(bench["config_json"] or "{}"), json.loads(bench["compat_json"] or "{}"),
                            json.loads(pool["config_json"] or "{}"), json.loads(pool["compat_json"] or "{}"), note)
    if why:
        return why
    # the same prompt ids timed on edited files (a longer budget, an easier task) are another request's speed
    timed_as, rated_as = prompt_requests(db, bench["id"], kind="bench"), prompt_requests(db, pool["id"], kind="pool")
    if why := request_mismatch(timed_as, rated_as, ids_too=False, them=note("them study pairs"),
                               what=note("what request"), make=note):
        return why
    timed = timed_prompts(db, bench["id"])
    rated = {r[0] for r in db.execute("""SELECT DISTINCT p.prompt_id FROM pairs p JOIN experiments e ON e.id = p.experiment_id
                                         WHERE e.study_id = ? AND e.kind = 'pool' AND p.kind = 'study'""",
                                      [pool["study_id"]])}
    if missing := sorted(rated - timed):
        return note("not timed", prompts=joined(missing, note))
    return None


# device_kinds' answers within one aggregate (one_reading): a pool's placement reads every generation of it (about
# 0.1 s at 200,000), and one aggregate asks several times (the deployment device, whether it is unknown, the speed
# figure's version and its benchmarks, the batch table). None outside one: each call reads the database as it is.
_KINDS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("evalkit_device_kinds", default=None)


@contextlib.contextmanager
def one_reading():
    """Within it, device_kinds reads each experiment's placement once (the outermost one owns the memo)."""
    token = _KINDS.set({}) if _KINDS.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _KINDS.reset(token)


def device_kinds(db, exp) -> set[str]:
    """_device_kinds, read once per experiment within one_reading."""
    memo = _KINDS.get()
    if memo is None:
        return _device_kinds(db, exp)
    key = (id(db), exp["id"])
    if key not in memo:
        memo[key] = frozenset(_device_kinds(db, exp))
    return set(memo[key])


def _device_kinds(db, exp) -> set[str]:
    """The device placements experiment `exp` ran on, each the device kinds its target's and draft's weights sat on
    (models.placement_kinds: "cpu", or "cpu+cuda" for a split pair: a device_map's offload, a draft on another
    device), one per process layout. A benchmark's from its worker processes' recorded placements (per rank, both
    paths' processes together); a pool's from its generations' (one per rank, host and device); where those are not
    recorded (older runs), from the device alone, wholly there unless the config's device_map could have split it.
    Empty where nothing says (a synthetic row, or a device_map run that recorded no placement): never guessed."""
    from ..generation.speed import device_kind

    recorded = json.loads(exp["compat_json"] or "{}").get("device") or ""
    config = json.loads(exp["config_json"] or "{}")
    if exp["kind"] == "bench":
        if placed := _bench_placements(db, exp["id"]):
            return placed
        ran = {r[0] for r in db.execute("SELECT DISTINCT device FROM timing_runs WHERE experiment_id = ? AND device != ''",
                                        [exp["id"]])}
        return {device_kind(d) for d in ran | ({recorded} if recorded else set())}
    kinds = set()
    for devices, device in db.execute(
            """SELECT json_extract(effective_config, '$.devices'), device FROM generations WHERE id IN
               (SELECT MIN(id) FROM generations WHERE experiment_id = ? GROUP BY rank, host, device)""", [exp["id"]]):
        if not devices and not (devices := _config_placement(config, device or recorded)):
            return set()  # a run whose placement nothing recorded: unknown, not its main device
        kinds.add(devices)
    if not kinds and (devices := _config_placement(config, recorded)):
        kinds.add(devices)
    return kinds


def _bench_placements(db, bench_id: int) -> set[str]:
    """A benchmark's placements from its worker processes' records (bench_processes.target_placement and
    draft_placement): per rank, the kinds of both paths' processes together; empty where a process recorded none."""
    from ..generation.models import placement_kinds

    per_rank: dict[int, list[dict]] = {}
    for rank, target, draft in db.execute("SELECT rank, target_placement, draft_placement FROM bench_processes WHERE "
                                          "experiment_id = ?", [bench_id]):
        target = json.loads(target or "{}")
        if not target:
            return set()
        per_rank.setdefault(rank, []).extend([target, json.loads(draft or "{}")])
    return {placement_kinds(*placed) for placed in per_rank.values()}


def _config_placement(config: dict, device: str) -> str:
    """A run's placement where its config fixes it: without a device_map the whole target sits on `device` and the
    draft on models.draft_device (else there too); a device_map may have split the target, which only a record of
    the run says ('' then, and without a device)."""
    from ..generation.speed import device_kind

    models = config.get("models") or {}
    if not device or models.get("device_map"):
        return ""
    return "+".join(sorted({device_kind(device)} | ({device_kind(models["draft_device"])}
                                                     if models.get("draft_device") else set())))


def deployment_device(db, pool, speed_device: str) -> str:
    """The device kind the study's speed claim is about (the gate's speed_device): the one named, or with "pool" the
    kind its first pool ran on ('' where that is unknown or several, and with ANY_DEVICE, a gate frozen before the
    key: any device decides)."""
    from ..study.gate import ANY_DEVICE

    if speed_device == ANY_DEVICE or pool is None:
        return ""
    if speed_device != "pool":
        return speed_device
    kinds = device_kinds(db, pool)
    return next(iter(kinds)) if len(kinds) == 1 else ""


UNRECORDED = "none recorded"  # unknown_device: a pool whose runs recorded no device


def unknown_device(db, pool, speed_device: str) -> str:
    """Why the study's deployment device cannot be known ('' where it can): the gate's speed_device is "pool" and its
    first pool recorded no device (UNRECORDED: a pool of an older evalkit, or a synthetic one) or ran on several
    placements (their list). Then no benchmark is taken as the deployment's: the speed and memory conditions are
    not judged (verdict.device_unknown_text), never guessed from whichever benchmark came first."""
    if speed_device != "pool" or pool is None:
        return ""
    kinds = device_kinds(db, pool)
    return "" if len(kinds) == 1 else (", ".join(sorted(kinds)) or UNRECORDED)


def other_device(kinds: set[str], device: str, speed_device: str, make=_text) -> str | None:
    """Why a benchmark run on device `kinds` is not of the study's deployment device `device` (None when it is): the
    speed-up, the batch table and the memory figure all describe the hardware they were measured on. One that
    recorded no device (empty `kinds`: a synthetic row, an older evalkit's) is not known to be of it: never guessed.
    `make`: as settings_mismatch's."""
    if not device or kinds == {device}:
        return None
    if not kinds:
        return make("bench no device", device=device, speed_device=speed_device)
    whose = make("bench device pool" if speed_device == "pool" else "bench device gate")
    split = make("bench device split" if "+" in device + "".join(kinds) else "bench device one")
    return make("bench device", kinds=", ".join(sorted(kinds)), device=device, whose=whose, speed_device=speed_device,
                split=split)


def run_on(device: str, make=_text) -> str:
    """Where to benchmark for the study's speed claim (its deployment device; a split one: the pool's placement).
    `make`: as settings_mismatch's."""
    return make("run on placed" if "+" in device else "run on", device=device)


def gate_device(study) -> str:
    """The speed_device a study's frozen gate holds (ANY_DEVICE for a gate frozen before the key)."""
    from ..study.gate import ANY_DEVICE

    return ((study.gate or {}).get("values") or {}).get("speed_device", ANY_DEVICE) if study is not None else ANY_DEVICE


def device_unknown_reason(pool_id, unknown: str) -> str:
    """unknown_device's why and what to do, in words (the verdict's speed and memory conditions, `evalkit bench`)."""
    seen = note("device unrecorded") if unknown == UNRECORDED else note("device layouts", layouts=unknown)
    return note("device unknown", pool=pool_id, seen=seen)


def bench_device_note(db, device: str, config: dict | None = None) -> str | None:
    """What `evalkit bench` says before it runs on `device` (with `config`: its placement where the config fixes it)
    where the latest study's speed claim is about another device kind or placement (its gate's speed_device): its
    rounds will never decide. None where they may (or without a study; with a device_map, unless its main device's
    kind is not among the deployment's: only the run says where a device_map put the weights)."""
    from ..generation.speed import device_kind
    from ..study.studies import choose

    study = choose(db)
    if study is None:
        return None
    speed_device = gate_device(study)
    pool = study_pool(db, study.id)
    if unknown := unknown_device(db, pool, speed_device):
        return (f"study {study.name}'s speed condition will not weigh this benchmark: "
                + device_unknown_reason(pool["id"], unknown))
    deploy = deployment_device(db, pool, speed_device)
    planned = _config_placement(config or {}, device)
    if not planned and device_kind(device) in deploy.split("+"):
        return None
    why = other_device({planned or device_kind(device)}, deploy, speed_device)
    return (f"study {study.name}'s speed condition will not weigh this benchmark: {why}: its figures describe other "
            f"hardware, reported, never deciding; {run_on(deploy)}" if why else None)


def deciding_benches(db, study_id: int | None = None, before: str | None = None,
                     speed_device: str = "any", through: int | None = None) -> tuple[list[dict], list[str]]:
    """The benchmarks the speed figure rests on, in the order their results were stored, and a note for each one left
    out: every benchmark (stored by `before`, as latest_bench; one still running has stored nothing and is not a
    result yet) that measures the pair the study rates (bench_mismatch against its first pool, study_pool: a later
    pool made with other settings, as databases made before study.pairs refused one may hold, never chooses a
    benchmark; verdict audit, 2026-12-04) and times the prompts the first of them timed (timed_prompts: rounds that
    time other prompts are another figure, never pooled with it). All of them, not the latest: were a later
    benchmark to replace an earlier one, re-running `evalkit bench` until the interval clears the gate's bar would
    be a search (speed audit, 2026-12-06); which of their rounds decide is the gate's speed_rounds
    (timing._deciding). Storage order, not the experiments' ids: a benchmark started earlier but stored later comes
    after, so what was stored by a moment keeps its place whatever is stored later. Without a study or a pool, the
    latest. Left out, never silently. A benchmark on another device kind than the study's deployment device
    (deployment_device, from the gate's speed_device; "any" for a gate frozen before the key) is left out too: an
    organiser must not choose the hardware where drafting gains most (sceptic audit, 2026-12-06). `through`: a
    benchmark's id, the last one taken in that order (what was stored up to it, whatever else was stored in the same
    millisecond: decision._first_measured)."""
    pool = study_pool(db, study_id)
    if pool is None:
        latest = latest_bench(db, before)
        return ([latest] if latest is not None else []), []
    device = deployment_device(db, pool, speed_device)
    chosen, notes, prompts = [], [], None
    for bench in db.query(
            """SELECT e.*, (SELECT MAX(COALESCE(b.stored_at, e.created_at)) FROM bench_processes b
                              WHERE b.experiment_id = e.id) AS stored
               FROM experiments e WHERE e.kind = 'bench' AND (:before IS NULL OR e.created_at <= :before)
                 AND EXISTS (SELECT 1 FROM bench_processes b WHERE b.experiment_id = e.id AND b.status = 'ok'
                               AND (:before IS NULL OR COALESCE(b.stored_at, e.created_at) <= :before))
               ORDER BY stored, e.id""", {"before": before}):
        why = bench_mismatch(db, bench, pool)
        kinds = device_kinds(db, bench) if why is None else set()
        if why is None and (elsewhere := other_device(kinds, device, speed_device, note)):
            notes.append(note("bench other device", bench=bench["id"], elsewhere=elsewhere, run=run_on(device, note),
                              which=note("other hardware" if kinds else "unknown hardware")))
            if bench["id"] == through:
                break
            continue
        timed = timed_prompts(db, bench["id"])
        if why is None and prompts is not None and timed != prompts:
            why = _other_prompts(timed, prompts, chosen[0]["id"])
        if why is None:
            chosen.append(bench)
            prompts = timed if prompts is None else prompts
        else:
            notes.append(note("bench mismatch", bench=bench["id"], why=why))
        if bench["id"] == through:
            break
    return chosen, notes


def timed_prompts(db, bench_id: int) -> frozenset:
    return frozenset(r[0] for r in db.execute("SELECT DISTINCT prompt_id FROM timing_runs WHERE experiment_id = ?",
                                              [bench_id]))


def _other_prompts(timed: frozenset, first: frozenset, first_id: int) -> str:
    """Why a benchmark's prompt set does not pool with the first benchmark's: the prompts only one of them timed."""
    from ..generation.speed import joined

    extra, missing = sorted(timed - first), sorted(first - timed)
    differs = joined(([note("prompts also", prompts=joined(extra, note))] if extra else [])
                     + ([note("prompts not", prompts=joined(missing, note))] if missing else []), note, "prompt sets")
    return note("other prompts", first=first_id, differs=differs)


def stored_settings(exp) -> tuple[float, int]:
    """(length tolerance, bootstrap size) from a deciding experiment's stored config (deciding_experiment): what a
    study's decision is frozen on, whoever looks first."""
    bench = json.loads(exp["config_json"] or "{}").get("bench", {}) if exp else {}
    return bench.get("length_tolerance", 0.1), bench.get("bootstrap", 2000)


def deciding_experiment(db, study_id: int | None = None):
    """The experiment whose stored config the aggregate reads (bootstrap size, comparability tolerance): the study's
    first pair pool (study_pool: what the study was frozen with; a later pool made under another config.toml does
    not change how its speed pairs are judged), else the latest benchmark."""
    pool = study_pool(db, study_id)
    if pool is not None:
        return pool
    return latest_experiment(db, "pool") or latest_experiment(db, "bench")
