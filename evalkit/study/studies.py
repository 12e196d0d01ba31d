"""Studies: one gate, one plan, one decision each.

A study is the pairs of its pool experiments and the ratings of those pairs. Its gate (margin, planned size, every
threshold) is the one frozen when its first pool was generated: a later `evalkit generate` into the same database adds
pairs to the latest study under that gate, and a different gate file is refused (store.studies.attach_pool) unless
the pool starts a new study (`--new-study NAME`), whose pairs and ratings never mix with another's. The app's queue
serves the latest study; aggregate, report and the Results tab show the latest unless asked for another by name.

Writes are in store.studies; this module reads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from ..errors import EvalkitError

# The reserve `evalkit generate --until-planned` adds beyond the planned pairs by default: pairs that end up with
# fewer ratings than the gate needs (skipped by raters, or rated by raters the gold check leaves out).
DEFAULT_RESERVE = 0.10

# Pairs of one study: the SQL condition on a pairs row `p`, with the study id bound as :study.
IN_STUDY = "p.experiment_id IN (SELECT id FROM experiments WHERE study_id = :study)"


@dataclass
class Study:
    id: int
    name: str
    created_at: str
    gate: dict  # the frozen snapshot: path, text, hash, values ({} when its pool froze no gate)
    gate_hash: str
    number: int  # its place among the database's studies (1 = the first)
    of: int  # how many studies the database holds
    prescreen_rules: str | None = None  # the pre-screen's rules version frozen with it (None: made before 035)

    @property
    def planned_pairs(self) -> int:
        return int((self.gate.get("values") or {}).get("planned_pairs") or 0)

    @property
    def planned_pool(self) -> int:
        return int((self.gate.get("values") or {}).get("planned_pool") or 0)

    def label(self, make=None) -> str:
        """Which study a table or verdict shows, said where it is shown (`make`: as FILL's sentences)."""
        make = make or _text
        if self.of == 1:
            return make("study one", name=self.name)
        return make("study of", name=self.name, latest=make("study latest" if self.number == self.of else "study earlier"),
                    number=self.number, of=self.of)


def studies(db) -> list[Study]:
    from .gate import frozen_values

    rows = list(db.query("SELECT * FROM studies ORDER BY id"))
    out = []
    for i, r in enumerate(rows):
        gate = json.loads(r["gate_json"] or "{}")
        if gate:
            gate["values"] = frozen_values(gate)  # read again from its text: today's keys and defaults
        out.append(Study(r["id"], r["name"], r["created_at"], gate, r["gate_hash"], i + 1, len(rows),
                         r.get("prescreen_rules")))
    return out


def choose(db, name: str | None = None) -> Study | None:
    """The study to show: the one named, else the latest (the one the app's queue serves); None when the database
    has none yet (no pool)."""
    all_ = studies(db)
    if name is None:
        return all_[-1] if all_ else None
    for s in all_:
        if s.name == name:
            return s
    from ..store.database import shown_file

    where = shown_file(db) or "this database"  # the file, named in the error
    raise EvalkitError(f"no study named '{name}' in {where}",
                       "studies here: " + (", ".join(s.name for s in all_) or "none yet (run `evalkit generate`)"))


@dataclass
class Standing:
    """Where one study of the database stands: decided (its frozen decision) or not, and what was rated."""

    study: Study
    ratings: int  # current ratings of its study pairs (corrections replace, skips and gold ratings not counted)
    decision: str | None  # KEEP / DROP / INSUFFICIENT DATA as frozen at completion; None: no decision, looks only
    completed_at: str | None
    look: dict | None = None  # the look that settled it (verdict_json's), None before looks were stored

    def settled(self) -> str:
        from ..aggregate.verdict import settled_when

        return settled_when(self.look).replace("the planned sample", "its planned sample")

    def sentence(self, make=None) -> str:
        """Where the study stands, in one sentence (`make`: as FILL's sentences)."""
        make = make or _text
        name = self.study.name
        if self.decision is None:
            return make("standing open", name=name, ratings=self.ratings, planned=self.study.planned_pairs)
        if self.look and not self.look.get("final", True):  # aggregate.verdict.settled_when, at an early look
            return make("standing at look", name=name, decision=self.decision, index=self.look["index"],
                        completed=self.completed_at)
        return make("standing complete", name=name, decision=self.decision, completed=self.completed_at)


def standings(db) -> list[Standing]:
    """Every study of the database, decided or not, in order. A study left at an interim look stays on the record:
    a later study (`--new-study`) does not hide it (aggregate's notes, the export's card)."""
    rows = {r[0]: r[1:] for r in db.execute(
        """SELECT s.id, d.decision, d.completed_at,
                  (SELECT COUNT(*) FROM current_ratings r JOIN pairs p ON p.id = r.pair_id
                    WHERE p.kind = 'study' AND p.experiment_id IN (SELECT id FROM experiments WHERE study_id = s.id)),
                  d.verdict_json
           FROM studies s LEFT JOIN decisions d ON d.study_id = s.id""")}
    # Python reads the stored verdict (it may hold NaN, which SQLite's JSON functions refuse)
    return [Standing(s, int(rows[s.id][2]), rows[s.id][0], rows[s.id][1],
                     json.loads(rows[s.id][3]).get("look") if rows[s.id][3] else None) for s in studies(db)]


def study_pairs(db, study: Study | None) -> int:
    """Study (not gold) pairs in the study's pool."""
    if study is None:
        return 0
    return db.execute(f"SELECT COUNT(*) FROM pairs p WHERE p.kind = 'study' AND {IN_STUDY}",
                      {"study": study.id}).fetchone()[0]


def next_sample(db, base_seed: int) -> int:
    """The first pool sample number a new pool uses: after every sample the database's pools used (pairs, samples
    that fell back, gold samples, and the planned range of an interrupted pool), so that a later pool, of the same study or a new
    one, draws new seeds instead of repeating outputs raters may have seen. A pool's sample is its seed less the
    pool's own base (experiments.sample_seed; `base_seed` for a pool made before secret bases)."""
    row = db.execute(
        """SELECT MAX(n) FROM (
               SELECT MAX(sample) AS n FROM pairs WHERE kind = 'study'
               UNION ALL SELECT MAX(g.seed - COALESCE(e.sample_seed, :seed)) FROM generations g
               JOIN experiments e ON e.id = g.experiment_id WHERE e.kind = 'pool' AND g.path = 'fallback'
               UNION ALL SELECT MAX(g.seed - COALESCE(e.sample_seed, :seed)) FROM generations g
               JOIN experiments e ON e.id = g.experiment_id WHERE e.kind = 'pool' AND g.live = 0
               -- the planned range, gold samples included (at most ceil(gold_rate x samples) follow the study ones)
               UNION ALL SELECT MAX(first_sample + COALESCE(pool_samples, 0) + CAST(COALESCE(json_extract(
                   config_json, '$.pool.gold_rate'), 0) * COALESCE(pool_samples, 0) + 0.999999 AS INTEGER)) - 1
               FROM experiments WHERE kind = 'pool')""",
        {"seed": base_seed}).fetchone()[0]
    return 0 if row is None else int(row) + 1


def pool_seeds_taken(db, low: int, high: int, base_seed: int) -> bool:
    """Whether any seed in [low, high) was used by a pool generation of the database, or lies in the planned range
    of a pool experiment (its samples and gold samples from its base: experiments.sample_seed, or `base_seed` for a
    pool made before secret bases), an interrupted one's included."""
    return bool(db.execute(
        """SELECT EXISTS (SELECT 1 FROM generations g JOIN experiments e ON e.id = g.experiment_id
                          WHERE e.kind = 'pool' AND g.seed >= :low AND g.seed < :high)
               OR EXISTS (SELECT 1 FROM (
                   SELECT COALESCE(sample_seed, :seed) + first_sample AS lo,
                          COALESCE(sample_seed, :seed) + first_sample + COALESCE(pool_samples, 0) + CAST(COALESCE(
                              json_extract(config_json, '$.pool.gold_rate'), 0) * COALESCE(pool_samples, 0)
                              + 0.999999 AS INTEGER) AS hi
                   FROM experiments WHERE kind = 'pool') WHERE lo < :high AND :low < hi)""",
        {"low": low, "high": high, "seed": base_seed}).fetchone()[0])


def fill_target(planned: int, reserve: float, pool: int = 0) -> int:
    """The study pairs `--until-planned` fills the pool to: the planned pairs plus the reserve, rounded up, or the
    pool the plan's power assumes (the gate's planned_pool, with PPI) when that is more."""
    return max(math.ceil(planned * (1 + reserve) - 1e-9), pool)


# Sentences the verdict's notes carry, each one template with its figures: `make` writes one (plain text by default;
# aggregate.notes.note, which keeps the key and figures so that the Chinese verdict says it with the same figures)
FILL = {
    # which study is shown (Study.label), and where each stands (Standing.sentence)
    "study one": "study '{name}'",
    "study of": "study '{name}'{latest}, {number} of {of} in this database",
    "study latest": " (the latest)",
    "study earlier": "",
    "standing open": ("study '{name}' has no decision: {ratings} rating(s) of its study pairs for {planned} planned "
                      "pairs, interim looks only"),
    "standing at look": "study '{name}' decided {decision} when look {index} settled it ({completed})",
    "standing complete": "study '{name}' decided {decision} when its planned sample completed ({completed})",
    "standings": "{one}; {rest}",
    # the pool's size (pool_short, fill_sentence)
    "fill why pool": "the pool the plan's power assumes, gate planned_pool: the pre-screen judges every pooled pair",
    "fill why reserve": "the planned pairs plus a {reserve} reserve",
    "pool less power": ("the pool holds {have} study pairs, fewer than the {pool} the plan's power assumes (gate "
                        "planned_pool: prediction-powered inference uses the pre-screen's answers on every pooled "
                        "pair), so the study can decide but with less power: `evalkit generate --until-planned` adds "
                        "samples until it holds {target}"),
    "pool below planned": ("the pool holds {have} study pairs, fewer than the {planned} planned pairs, so this study "
                           "cannot reach a decision: `evalkit generate --until-planned` adds samples until it holds "
                           "{target} ({why})"),
    "pool population": ("the pre-screen's population holds {reach} study pairs, fewer than the {pool} the plan's "
                        "power assumes (gate planned_pool): {later} of the pool's {have} were pooled after rating "
                        "began, follow every earlier pair in the queue's order and join it only where the sample "
                        "reaches them, so the study can decide but with less power (for the next study, generate the "
                        "planned pool before rating starts)"),
}


def _text(key: str, /, **figures) -> str:
    return FILL[key].format(**figures)


def fill_why(planned: int, reserve: float, pool: int = 0, make=_text) -> str:
    """What fill_target is made of, said beside it."""
    if pool > math.ceil(planned * (1 + reserve) - 1e-9):
        return make("fill why pool")
    return make("fill why reserve", reserve=f"{reserve:.0%}")


def fill_sentence(have: int, planned: int, reserve: float = DEFAULT_RESERVE, pool: int = 0, make=_text) -> str:
    """One sentence with both numbers and the command that fills the pool ('' when the pool holds enough)."""
    target = fill_target(planned, reserve, pool)
    if planned <= 0 or have >= target or (have >= planned and have >= pool):
        return ""
    if have >= planned:  # enough to decide, fewer than the plan's power assumes
        return make("pool less power", have=have, pool=pool, target=target)
    return make("pool below planned", have=have, planned=planned, target=target,
                why=fill_why(planned, reserve, pool, make))


def demo_sentence(have: int, planned: int) -> str:
    """In place of fill_sentence on the offline demo pair, whose small pool is there to show the flow: what the demo
    is, and what a real study needs. "Cannot reach a decision" read to stakeholders as a failure (demo audit,
    2026-12-06)."""
    return (f"this is the offline demo: {have} study pairs to try the flow (rate, the Live tab, the Results tab); it "
            f"reaches no decision and is no quality reference. A real study rates the gate's {planned} planned pairs "
            "of your own model pair: with its config (README, \"Real model pairs\"), `evalkit generate --until-planned "
            "--config YOUR-CONFIG` fills the pool")


def start_sentence(db, study: Study | None, demo: bool) -> str:
    """pool_short as the app's start says it: on the demo pair (`demo`), demo_sentence when the pool is short."""
    short = pool_short(db, study)
    return demo_sentence(study_pairs(db, study), study.planned_pairs) if short and demo else short


def pool_short(db, study: Study | None, make=_text) -> str:
    """fill_sentence for this study's pool as it is now; with a planned_pool, the pairs pooled after rating began
    that the decision sample will not reach are no part of the pre-screen's population (store.rank_epoch), and the
    sentence says so rather than counting them."""
    if study is None:
        return ""
    have = study_pairs(db, study)
    if study.planned_pool and have >= study.planned_pool:
        by_epoch = db.execute(f"SELECT CAST(p.queue_rank AS INTEGER), COUNT(*) FROM pairs p WHERE p.kind = 'study' "
                              f"AND {IN_STUDY} AND p.queue_rank IS NOT NULL GROUP BY 1 ORDER BY 1",
                              {"study": study.id}).fetchall()
        reach = 0
        for _epoch, n in by_epoch:  # the epochs up to the one where the planned pairs are reached
            reach += n
            if reach >= study.planned_pairs:
                break
        if study.planned_pairs <= reach < study.planned_pool:
            return make("pool population", reach=reach, pool=study.planned_pool, later=have - reach, have=have)
    return fill_sentence(have, study.planned_pairs, pool=study.planned_pool, make=make)
