"""The ratings the aggregate reads, as arrays: one SQL statement into RatingData, plus the groupings every table
reports (all prompts, then each prompt) and the experiments it reads from."""

from __future__ import annotations

from dataclasses import dataclass

from ..prompts import CRITERIA
from ..records import COMPARED

ALL = "all"  # the label of the row pooled over every prompt
# the two compared paths, in the order the arrays store them
PATHS = tuple(str(p) for p in COMPARED)  # plain strings: they become table values


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
        pair_generation=dict(zip(PATHS, (np.array([p[3] or -1 for p in pairs], np.int64),
                                         np.array([p[4] or -1 for p in pairs], np.int64)))))


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




def latest_experiment(db, kind: str):
    return next(db.query("SELECT * FROM experiments WHERE kind = ? ORDER BY id DESC LIMIT 1", [kind]), None)


def deciding_experiment(db):
    """The experiment whose frozen gate decides: the latest pair pool (what is rated), else the latest benchmark."""
    return latest_experiment(db, "pool") or latest_experiment(db, "bench")
