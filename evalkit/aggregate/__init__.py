"""From ratings and raw timings to a decision: tables, agreement, speed-up and the gate verdict.

Everything is computed from stored rows; fallback runs are never counted as assisted. The ratings are read in one
query into arrays (RatingData) and every table is a handful of vectorised group sums, so a study of a million
ratings aggregates in seconds. The unit of evidence is the pair: intervals treat the ratings of one pair (and,
with enough raters, the ratings of one rater) as correlated; see the README's "The decision".
Gold (check) pairs never enter a comparison of the paths: they give the `gold` table (each rater's accuracy,
evalkit.study.gold), and the gate's min_gold_accuracy leaves the raters below it out of every other table and the verdict.

    data     the ratings as arrays, the groupings, the experiments read
    quality  pass rates, paired differences, preferences, agreement, pre-screen agreement
    timing   timing, memory and the speed figure (evalkit.generation.speed's computation)
    verdict  the frozen gate, the decision sample and KEEP / DROP / INSUFFICIENT DATA
    ppi      the pre-screen in each criterion's interval (prediction-powered inference), a step of the verdict
    decision the decision frozen when the planned sample completes, and the looks after it
    notes    the notes beside a verdict, each one template with its figures (said in Chinese by ui.verdictzh)

One study at a time (evalkit.study.studies): the latest unless named; its pairs, its ratings, its frozen gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..stats import T_FLOOR
from ..study.gate import GENERAL
from ..rating.pace import time_on_task
from ..generation.speed import IDENTICAL_PAIR
from .data import ALL, RatingData, deciding_experiment, device_unknown_reason, load_ratings, one_reading, standing_at, stored_settings
from .decision import AFTER, FrozenDecision, decided, walk_history
from .notes import Note
from .ppi import COLUMNS as PPI_COLUMNS, pair_screen
from .quality import DIFF_COLUMNS, agreement, paired_differences, pass_rates, preferences, prescreen_agreement
from .timing import POOL_SOURCE, Speed, batches, gate_speed, timing
from .looks import walk
from .notes import note, plan
from .spread import disagreement_note, effective_raters, roster_note
from .verdict import (INTERIM, Condition, Decision, Verdict, complete_count, decide, decision_sample, device_unknown_text,
                      fidelity_rows, fidelity_level, frozen_gate, interval_text, passed_over_note, settled_when,
                      waiting_pairs)

__all__ = ["AFTER", "ALL", "INTERIM", "Aggregate", "Condition", "Decision", "FrozenDecision", "RatingData", "Speed",
           "Verdict", "aggregate", "format_text", "frozen_gate"]


@dataclass
class Aggregate:
    tables: dict  # name -> pandas.DataFrame
    speed: Speed  # the overall speed-up, its source and interval, the draft's extra memory
    verdict: Verdict  # the decision (frozen once the planned sample completed), or the interim look
    notes: list[str] = field(default_factory=list)
    study: object = None  # evalkit.study.studies.Study shown (None: the database has no pool yet)
    frozen: FrozenDecision | None = None  # the stored decision, once the planned sample completed
    after: Verdict | None = None  # once decided: the same analysis on the data as it is now, shown apart
    speed_now: Speed | None = None  # the speed figure as it is now (`speed` is the decision's once one is frozen)
    # the notes drawn from single raters' figures (time on task, gold check), a subset of `notes`: a rater among
    # fewer than three would read the other's from them, less her own (ui.results withholds them then)
    personal: list[str] = field(default_factory=list)
    untakeable: int = 0  # pairs the next look needs that no current rater can be served (its note says what to do)

    @property
    def interim(self) -> bool:
        return self.verdict.interim

    def identical_line(self) -> str:
        """How many pairs were decided without raters ('' when none): for the text, the report and the JSON."""
        counts = self.tables.get("counts")
        total = int(counts["identical_pairs"].iloc[0]) if counts is not None and len(counts) else 0
        if not total:
            return ""
        used = max((int(r.get("identical", 0)) for r in self.verdict.fidelity), default=0)
        return (f"{total} of the pool's {int(counts['pairs'].iloc[0])} study pairs have identical outputs (the same "
                f"tokens): decided without raters, each criterion's difference is exactly 0 (blind raters cannot tell "
                f"the sides apart); {used} of them are in the verdict's sample, in the pool's proportion to the rated "
                "pairs")

    def to_json(self) -> dict:
        s = self.study
        return {
            "study": None if s is None else {"name": s.name, "number": s.number, "of": s.of, "gate_hash": s.gate_hash,
                                             "created_at": s.created_at},
            "interim": self.interim,
            "label": self.verdict.label,
            "tables": {k: json.loads(v.to_json(orient="records", force_ascii=False)) for k, v in self.tables.items()},
            "speed": self.speed.to_json(),  # the decision's, once frozen
            "speed_now": None if self.speed_now is None else self.speed_now.to_json(),
            "verdict": self.verdict.to_json(),
            "frozen": None if self.frozen is None else self.frozen.to_json(),
            "after_decision": None if self.after is None else self.after.to_json(),
            "identical": self.identical_line(),
            "notes": self.notes,
        }


# What takes the time, in order, announced to a command's bar (progress.step): on a study-sized pool the gate's
# analysis (every look's bootstrap) is most of it; `evalkit aggregate` was silent for some 15 s
STEPS = ("the ratings and speed figures", "the gate's analysis", "the tables")


def aggregate(db, tolerance: float | None = None, resamples: int | None = None, study: str | None = None) -> Aggregate:
    """Every table, the speed-up and the gate verdict of one study (`study`: its name; the latest by default), from
    the database as it is now; once its planned sample has completed, the decision frozen then (stored by the first
    look that finds it complete) and, apart, the same analysis on the data as it is now. The comparability tolerance
    and bootstrap size default to those of the study's latest experiment's stored config."""
    with one_reading():  # a pool's placement read once, however many of the parts below ask (data.device_kinds)
        return _aggregate(db, tolerance, resamples, study)


def _aggregate(db, tolerance: float | None, resamples: int | None, study: str | None) -> Aggregate:
    import numpy as np
    import pandas as pd

    from ..progress import step
    from ..study.gold import accuracy
    from ..study.studies import choose, pool_short, standings

    step(STEPS[0])
    chosen = choose(db, study)
    sid = chosen.id if chosen is not None else None
    exp = deciding_experiment(db, sid)
    stored_cfg = json.loads(exp["config_json"]) if exp else {}
    floor = stored_cfg.get("app", {}).get("min_seconds_on_task", 10.0)
    stored = stored_settings(exp)
    tolerance = stored[0] if tolerance is None else tolerance
    resamples = stored[1] if resamples is None else resamples

    gate, notes = frozen_gate(db, chosen)
    values = gate["values"] if gate else None
    confidence = values["confidence"] if values else 0.95
    path_timing, speed_by_prompt, speed = timing(db, tolerance, resamples, study_id=sid, **gate_speed(values))
    ratings = load_ratings(db, sid)  # study pairs of this study only
    # The decision is frozen on the study's stored settings whoever looks first: a reader with other settings (an app
    # whose config differs) must not decide it with its own speed figure, or the first reader would pick the verdict.
    frozen = decided(db, chosen, values, confidence, stored[1], stored[0],
                     speed if (tolerance, resamples) == stored else None, ratings)
    min_gold = (values or {}).get("min_gold_accuracy", 0.0) or 0.0
    gold_table, excluded_now = accuracy(db, min_gold, ratings.raters, sid)
    excluded = excluded_now
    if frozen is not None:  # the decision's set, frozen at completion; a later gold answer does not move it
        excluded = frozen.excluded
        gold_table = gold_table.assign(excluded=gold_table["rater"].isin(excluded))
    personal = _gold_notes(gold_table, min_gold, ratings, excluded, frozen=frozen is not None)
    notes += personal
    current = ratings
    if excluded and len(ratings):  # before any table: what the verdict rests on, every table shows
        ratings = ratings.without_raters(excluded)
    # of the pair the study rates, on its deployment device
    batch_table, batch, speed.batch_experiment_id, batch_notes = batches(db, sid, gate_speed(values)["speed_device"])
    notes += batch_notes
    speed.batch_answer = batch.answer if batch is not None else None
    n_pairs = ratings.n_pairs
    n_gold, skips = db.execute(
        "SELECT (SELECT COUNT(*) FROM pairs p WHERE p.kind = 'gold' AND (:s IS NULL OR p.experiment_id IN "
        "(SELECT id FROM experiments WHERE study_id = :s))), (SELECT COUNT(*) FROM ratings r JOIN pairs p ON "
        "p.id = r.pair_id WHERE r.kind = 'skip' AND (:s IS NULL OR p.experiment_id IN "
        "(SELECT id FROM experiments WHERE study_id = :s)))", {"s": sid}).fetchone()

    pair_screens = {}

    def screen():  # the pre-screen's answers on every study pair (the same pairs for every look)
        if "all" not in pair_screens:
            pair_screens["all"] = pair_screen(db, ratings, rules=chosen.prescreen_rules if chosen else None)
        return pair_screens["all"]

    def look(rated, exclude):  # the gate's analysis on these ratings: per-criterion rows, complete pairs, verdict
        if exclude and len(rated):
            rated = rated.without_raters(exclude)
        if not values:
            return [], 0, decide(values, [], speed, 0, rated.n_pairs)
        per_pair, ident = values["min_ratings_per_pair"], int(rated.identical.sum())

        def analyse(r, lk, _context):
            sample, done = decision_sample(r, per_pair, lk.pairs)
            return fidelity_rows(sample, lk.level, resamples, values["margin"], values["claim"], screen(),
                                 values.get("ppi") == "on", interval=values["interval"],
                                 sequence=values.get("monitoring") == "confidence sequence"), sample, done

        reached = complete_count(rated, per_pair)
        went = walk(values, lambda lk: (rated, None) if reached >= lk.pairs else None, analyse,
                    lambda rows, done, r, lk, _c: decide(values, rows, speed, done, r.n_pairs, ident, lk))
        if went is not None:
            return went.rows, went.decided, went.verdict
        # no look reached: the data so far, at the gate's level (reported, never judged)
        sample, done = decision_sample(rated, per_pair, values["planned_pairs"])
        rows = fidelity_rows(sample, confidence, resamples, values["margin"], values["claim"], screen(),
                             values.get("ppi") == "on", interval=values["interval"],
                                 sequence=values.get("monitoring") == "confidence sequence")
        return rows, done, decide(values, rows, speed, done, rated.n_pairs, ident)

    step(STEPS[1])
    after = None
    if frozen is None and values and values.get("monitoring", "fixed") != "fixed" and chosen is not None:
        # with looks: each look as it was taken, on the data when it was reached (the walk the decision takes), the
        # last one judged with the speed figure as it is now
        went = walk_history(db, chosen, values, resamples, tolerance, speed, ratings)
        if went is None:
            fidelity, complete, verdict = look(ratings, [])
        else:
            complete = complete_count(ratings, values["min_ratings_per_pair"])
            fidelity = went.rows
            verdict = decide(values, fidelity, speed, complete, ratings.n_pairs, int(ratings.identical.sum()),
                             went.look)
            if not verdict.interim:  # settled only by a measurement stored after the look: the next look decides
                verdict = went.verdict
    elif frozen is None:
        fidelity, complete, verdict = look(ratings, [])
    else:
        verdict, fidelity = frozen.verdict, frozen.verdict.fidelity
        _rows, complete, after = look(current, excluded_now)
        after.label = AFTER
        notes[:0] = _frozen_notes(db, frozen, complete, values, excluded, excluded_now, sid)
    untakeable_pairs = 0
    if verdict.interim:
        if values and device_unknown_text(speed):  # a benchmark cannot help: say what can, not "run bench"
            notes.insert(0, note("conditions not judged",
                                 reason=device_unknown_reason(speed.pool_id, speed.device_unknown)))
        elif values and values["planned_pairs"] > 0 and speed.extra_memory_mb is None:
            # a benchmark of another setting or device may be stored and left out (its note says why): then "yet" is
            # not true
            left_out = any(n.startswith("benchmark ") and " left out" in n for n in speed.notes)
            where = note("on device", device=speed.deploy_device) if getattr(speed, "deploy_device", "") else ""
            if speed.memory_note and not left_out:  # a benchmark ran, and measured nothing of the draft
                notes.insert(0, note("memory unmeasured", why=speed.memory_note))
            else:
                notes.insert(0, note("no benchmark left out" if left_out else "no benchmark", where=where))
        if short := pool_short(db, chosen, make=note):
            notes.insert(0, short)
        if values and (waiting := _waiting_note(db, ratings, values)):
            notes.insert(0, waiting)
        share = stored_cfg.get("app", {}).get("max_ratings_per_rater", 0) or 0
        if values and (stalled := _untakeable_note(db, ratings, values, share))[0]:
            untakeable_pairs = stalled[0]
            notes.insert(0, stalled[1])
        if values and values.get("monitoring", "fixed") != "fixed":
            notes.insert(0, note("interim looks", plan=plan(values)))
        else:
            notes.insert(0, note("interim fixed"))
    per_rater = np.unique(ratings.rater, return_counts=True)[1] if len(ratings) else []
    # beside a decision, the raters and answers it rested on, as they stood when it completed, not since
    noted = ratings if frozen is None or not _rater_notes(values) else _as_decided(db, frozen, sid)
    noted_per_rater = np.unique(noted.rater, return_counts=True)[1] if len(noted) else []
    if roster := roster_note(noted_per_rater, values, decided=not verdict.interim):
        notes.append(roster)
    if wide := disagreement_note(noted, values):
        notes.append(wide)
    # beside a decision, its pairs passed over as they were when it completed, not since
    read = ratings if frozen is None else standing_at(db, ratings, sid, frozen.completed_rating_id)
    if values and (chosen_by := passed_over_note(read, values["min_ratings_per_pair"],
                                                 (verdict.look or {}).get("pairs") or values["planned_pairs"])):
        notes.append(chosen_by)
    speed_now = speed
    if frozen is not None and frozen.speed:  # the figures shown beside a decision are the ones it weighed
        speed = Speed.from_json(frozen.speed)
        speed.batch_experiment_id, speed.batch_answer = speed_now.batch_experiment_id, speed_now.batch_answer
        if (speed_now.experiment_id, speed_now.speedup, speed_now.extra_memory_mb) != (
                speed.experiment_id, speed.speedup, speed.extra_memory_mb):
            since = speed_line(speed_now, note)
            mb = speed_now.extra_memory_mb
            memory = note("memory since", mb=mb) if mb is not None else ""
            notes.append(note("figures weighed", line=since, memory=memory) if since else
                         note("figures weighed no speed-up", memory=memory))
    # a note the verdict's speed condition gives as its reason (why no interval) is said there, not again here
    said = next((c.reason for c in verdict.conditions if c.name == "speed-up"), "")
    notes += [note("speed figure", text=n) if isinstance(n, Note) else note("speed figure quoted", text_en=n)
              for n in speed.notes if n not in said]
    if speed.fallback_runs:
        cause = speed.fallback_cause  # plain text where a decision frozen by an older evalkit stored it
        notes.append(note("fell back", runs=speed.fallback_runs) if not cause else
                     note("fell back why", runs=speed.fallback_runs, cause=cause) if isinstance(cause, Note) else
                     note("fell back why quoted", runs=speed.fallback_runs, cause_en=cause))
    if speed.source == POOL_SOURCE:
        notes.append(note("pool speed reported" if speed.bench_only else "pool speed"))
    if speed.selection_gap:
        notes.append(GAP_NOTE)
    if batch is not None:
        notes.append(note("batch sizes", bench=speed.batch_experiment_id, answer=batch.answer))
    step(STEPS[2])
    pace = time_on_task(db, floor, study_id=sid)  # this study's ratings, as every other table here
    if pace_note := _pace_note(pace, floor):
        notes.append(pace_note)
        personal.append(pace_note)
    tables = {
        "pass_rates": pass_rates(ratings, confidence),
        "paired_differences": paired_differences(ratings, confidence, resamples,
                                                 (values or {}).get("claim", GENERAL) == GENERAL,
                                                 (values or {}).get("interval", T_FLOOR)),
        "non_inferiority": pd.DataFrame(fidelity, columns=DIFF_COLUMNS + PPI_COLUMNS + [
            "worst_case_pairs", "given_up_pairs", "margin", "unanswered", "ok", "look", "look_level", "passed_at_look"]),
        "preferences": preferences(ratings, confidence),
        "agreement": agreement(ratings),
        "prescreen_agreement": prescreen_agreement(db, ratings, chosen.prescreen_rules if chosen else None),
        "timing": path_timing,
        "speedup": speed_by_prompt,
        "batch": batch_table,
        "time_on_task": pace,
        "gold": gold_table,
        "counts": pd.DataFrame([{
            "pairs": n_pairs, "identical_pairs": int(ratings.identical.sum()), "gold_pairs": n_gold,
            "complete_pairs": complete,
            "planned_pairs": values["planned_pairs"] if values else None, "current_ratings": len(ratings),
            "raters": len(per_rater), "effective_raters": round(effective_raters(per_rater), 2),
            "planned_raters": (values or {}).get("planned_raters") or None, "skips": skips,
        }]),
    }
    if chosen is not None and chosen.of > 1:
        others = [st.sentence(make=note) for st in standings(db) if st.study.id != chosen.id]
        while len(others) > 1:  # "a; b; c", as nested notes (each said in either language)
            others[-2:] = [note("standings", one=others[-2], rest=others[-1])]
        notes.insert(0, note("study shown", study=chosen.label(make=note), others=others[0]))
    verdict.notes = notes
    return Aggregate(tables=tables, speed=speed, verdict=verdict, notes=notes, study=chosen, frozen=frozen, after=after,
                     speed_now=speed_now, personal=personal, untakeable=untakeable_pairs)


def _pace_note(table, floor_seconds: float) -> Note | None:
    """One line for the verdict's notes when some ratings were faster than the floor (the time_on_task table)."""
    from ..rating.pace import ALL as EVERY

    if not len(table):
        return None
    row = table[table["rater"] == EVERY].iloc[0]
    if not row["fast"]:
        return None
    raters = table[(table["rater"] != EVERY) & (table["fast"] > 0)]["rater"].tolist()
    return note("time on task", fast=int(row["fast"]), timed=int(row["timed"]), floor=floor_seconds, raters=len(raters))


def _rater_notes(values: dict | None) -> bool:
    """Whether the roster and disagreement notes can speak (a claim about raters in general): only then is the
    history read for them."""
    return bool(values) and values.get("claim", GENERAL) == GENERAL


def _as_decided(db, frozen: FrozenDecision, sid: int | None) -> RatingData:
    """The study's ratings current right after its decision's completing rating, less the raters the gold check left
    out then (the history is kept): what the notes beside a decision read. The current ratings, which the notes read
    before, held the raters and corrections that came after it (statistics audit, 2026-12-06: "20 raters have
    rated" and "raters differ widely" beside a decision that 10 raters who agreed had made)."""
    rows = load_ratings(db, sid, history=True).as_of(frozen.completed_rating_id)
    return rows.without_raters(frozen.excluded) if frozen.excluded and len(rows) else rows


def _waiting_note(db, ratings: RatingData, values: dict) -> str | None:
    """One sentence when the next look waits for pairs early in the queue's order while later ones are complete
    (skipped, or held by a rater who has not answered): the look takes the first pairs of the random order, all of
    them (verdict.in_queue_order), so the organiser learns what it waits for and why it may not move on."""
    from .looks import schedule

    per_pair = values["min_ratings_per_pair"]
    decided_now = complete_count(ratings, per_pair)
    target = next((lk.pairs for lk in schedule(values) if lk.pairs > decided_now), None)
    waiting, held = waiting_pairs(ratings, per_pair, target) if target else ([], 0)
    if not waiting:
        return None
    ids = [ratings.pair_ids[i] for i in waiting]
    skipped, skips = db.execute("SELECT COUNT(DISTINCT pair_id), COUNT(*) FROM ratings WHERE kind = 'skip' AND "
                                "pair_id IN (SELECT value FROM json_each(?))", [json.dumps(ids)]).fetchone()
    why = note("waiting skipped", skipped=skipped, skips=skips) if skipped else note("waiting held")
    return note("waiting", waiting=len(waiting), why=why, held=held, target=target)


def _untakeable_note(db, ratings: RatingData, values: dict, share: int) -> tuple[int, str]:
    """How many pairs the next look needs can be served to no current rater (rating.queue.untakeable), and one
    sentence saying so and what to do ((0, '') when none): the look waits for them, and without a new rater (or a
    larger share) it waits for good, with no other word why."""
    from ..rating.queue import untakeable
    from .looks import schedule
    from .verdict import in_queue_order, rated_needed

    per_pair = values["min_ratings_per_pair"]
    target = next((lk.pairs for lk in schedule(values) if lk.pairs > complete_count(ratings, per_pair)), None)
    if target is None or not len(ratings):
        return 0, ""
    pairs, done, _run = in_queue_order(ratings, per_pair)
    need = rated_needed(target, ratings, pairs)
    stuck, raters = untakeable(db, [ratings.pair_ids[i] for i in pairs[:need][~done[:need]]], per_pair, share)
    if not stuck or not raters:
        return 0, ""
    figures = {"stuck": len(stuck), "target": target, "raters": raters}
    return len(stuck), (note("untakeable share", share=share, **figures) if share else note("untakeable", **figures))


def _frozen_notes(db, frozen: FrozenDecision, complete_now: int, values: dict, excluded: list[str],
                  excluded_now: list[str], study_id) -> list[str]:
    """What the frozen decision rests on, and what has come since (shown apart, never moving it)."""
    later = db.execute(
        "SELECT COUNT(*) FROM ratings r JOIN pairs p ON p.id = r.pair_id WHERE r.id > :at AND (:s IS NULL OR "
        "p.experiment_id IN (SELECT id FROM experiments WHERE study_id = :s))",
        {"at": frozen.completed_rating_id, "s": study_id}).fetchone()[0]
    look = frozen.verdict.look
    when = (note("frozen at look", index=look["index"], of=look["of"], pairs=look["pairs"])
            if look and not look.get("final", True) else note("frozen complete"))
    pairs = look["pairs"] if look else values["planned_pairs"]
    notes = [note("decision frozen", when=when, rating=frozen.completed_rating_id, completed=frozen.completed_at,
                stored=frozen.decided_at, gate=frozen.gate_hash, ratings=len(frozen.sample), pairs=pairs,
                left_out=len(excluded), later=later, later_pairs=max(complete_now - pairs, 0))]
    unrated = db.execute(  # closed by the decision (store.insert_decision): the rater hours the stop saved
        f"SELECT COUNT(*) FROM pairs p JOIN experiments e ON e.id = p.experiment_id WHERE e.study_id = :s "
        f"AND p.kind != 'gold' AND NOT {IDENTICAL_PAIR.format(p='p.')} "
        "AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.pair_id = p.id AND r.kind = 'rating')",
        {"s": study_id}).fetchone()[0] if study_id is not None else 0
    if unrated:
        notes.append(note("rating stopped", unrated=unrated))
    unmeasured = [c.name for c in frozen.verdict.conditions if c.name in ("speed-up", "memory") and c.ok is None]
    if unmeasured:
        notes.append(note("not measured", what=note(" and ".join(unmeasured))))
    if sorted(excluded_now) != sorted(excluded):
        notes.append(note("gold moved", now=len(excluded_now), then=len(excluded)))
    return notes


def speed_line(speed: Speed, make=None) -> str:
    """The speed-up over comparable pairs beside the tokens-per-second ratio over every matched pair ('' when
    neither was measured). `make` writes it from notes.NOTES ("line ...": plain text by default; note, for the
    note beside a frozen decision that the Chinese says)."""
    if speed.throughput_ratio is None and speed.speedup is None:
        return ""

    from ..generation.speed import no_spread
    from ..stats.speedup import ratio_text
    from .data import _text

    make = make or _text
    empty = make("line empty")

    def fig(x, ci):
        if x is None:
            return make("line fig none")
        if not ci:
            return make("line fig no interval", ratio=ratio_text(x))
        return make("line fig", ratio=ratio_text(x), low=ratio_text(ci[0]), high=ratio_text(ci[1]),
                    flat=make("line flat") if no_spread(ci) else empty)

    from .timing import left_out_words, without_fallbacks

    rest = make("line rest", words=w) if speed.speedup is not None and (w := left_out_words(speed, make)) else empty
    return make("line", comparable=speed.comparable_pairs, speedup=fig(speed.speedup, speed.speedup_ci95), rest=rest,
                matched=speed.throughput_pairs, without=without_fallbacks(speed, make),
                tps=fig(speed.throughput_ratio, speed.throughput_ci95),
                gap=make("line gap") if speed.selection_gap else empty,
                theory=(make("line theory", theory=f"{speed.theoretical_speedup:.2f}")
                        if speed.theoretical_speedup is not None else empty),
                counts=make("line counts") if speed.counts_agree is False else empty)


GAP_NOTE = note("figures disagree")


def _gold_notes(table, min_gold: float, ratings, excluded: list[str], frozen: bool = False) -> list[str]:
    """What the gold check did to the verdict's inputs (no rater named: the notes reach raters who finished). For a
    frozen decision, `excluded` is whom its own gold check left out, and `table` the accuracies now: the note then
    says no more than the decision's check did (export audit, 2026-12-04: "all 12 checked raters at or above 0.80"
    stood beside a rater now at 0.25, none of whose gold ratings existed when the decision froze)."""
    import numpy as np

    if not min_gold:
        return []
    checked = int((table["gold_ratings"] > 0).sum()) if len(table) else 0
    if frozen and not excluded:
        return [note("gold frozen", min_gold=min_gold)]
    if not checked:
        return [note("gold not applied", min_gold=min_gold)]
    notes = []
    if excluded:
        gone = [i for i, r in enumerate(ratings.raters) if r in set(excluded)]
        n = int(np.isin(ratings.rater, gone).sum()) if len(ratings) else 0
        notes.append(note("gold left out", left_out=len(excluded), checked=checked, min_gold=min_gold, ratings=n))
    else:
        notes.append(note("gold all", checked=checked, min_gold=min_gold))
    unchecked = int((table["gold_ratings"] == 0).sum())
    if unchecked:
        notes.append(note("gold unchecked", unchecked=unchecked))
    return notes


def format_text(agg: Aggregate) -> str:
    import pandas as pd

    lines = []
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.3f}".format):
        for name, df in agg.tables.items():
            lines += [f"== {name}", df.to_string(index=False) if len(df) else "(no data)", ""]
    return "\n".join(lines + [verdict_text(agg)])


def verdict_text(agg: Aggregate, cite=None, withheld: str = "not printed") -> str:
    """The verdict as `evalkit aggregate` prints it below the tables: the study, the decision (frozen, or the interim
    look's label), the looks, whom the claim covers, each condition and criterion, the look after the decision, the
    speed-up and every note. The dataset card carries the same text with cite(condition name, after) -> the runs
    behind a condition's figure, None when none is stored: such a decided condition's reason is then `withheld`
    (publish.provenance's rule), and so is the speed line when the speed-up's runs are not stored."""
    lines = []
    if agg.study is not None:
        lines.append(f"STUDY: {agg.study.label()}")
    v = agg.verdict
    frozen = f"  (frozen {agg.frozen.completed_at}, {settled_when(v.look)})" if agg.frozen else ""
    lines.append(f"VERDICT: {v.decision}" + (f"  ({v.label})" if v.interim else frozen))
    if v.look and (v.gate or {}).get("monitoring", "fixed") != "fixed":
        from .looks import standing

        lines.append(f"  LOOKS ({v.gate['monitoring']}): look {v.look['index']} of at most {v.look['of']}, "
                     f"{v.look['pairs']} decided pairs, {v.look['level']:.4%} interval")
        for r in standing(v.fidelity, v.gate["margin"]):
            lines.append(f"    {r['criterion']:<22} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] against {r['boundary']:+.3f}: "
                         f"{r['state']}")
    if v.claim:
        lines.append(f"  {v.claim}")
    if v.ppi:
        lines.append(f"  {v.ppi}")
    if same := agg.identical_line():
        lines.append(f"  {same}")
    lines += _verdict_lines(v, cite, withheld)
    if agg.after is not None:
        lines.append(f"AFTER THE DECISION (not the decision; the data as it is now): {agg.after.decision}")
        lines += _verdict_lines(agg.after, cite, withheld, after=True)
    if (line := speed_line(agg.speed)) and (cite is None or cite("speed-up", False) is not None):
        lines.append(f"SPEED: {line}")
    for n in agg.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)


def _verdict_lines(v: Verdict, cite=None, withheld: str = "", after: bool = False) -> list[str]:
    lines = []
    for c in v.conditions:
        mark = {True: "ok  ", False: "FAIL", None: "??  "}[c.ok]
        reason = c.reason
        if cite is not None:
            runs = cite(c.name, after)
            reason = f"{reason} [{runs}]" if runs is not None else withheld if c.ok is not None else reason
        lines.append(f"  [{mark}] {c.name}: {reason}")
    conf = v.gate.get("confidence", 0.95) if v.gate else 0.95
    for r in v.fidelity:
        if r.get("unanswered"):  # not judged: the planned sample is not rated on it (verdict.unjudged)
            state = f"not judged ({r['unanswered']} ratings leave it unanswered) against"
        elif r["ok"]:
            state = "inside"
        elif r.get("passed_at_look"):  # group sequential: a pass stays
            state = f"passed at look {r['passed_at_look']} (a pass stays); now OUTSIDE"
        else:
            state = "OUTSIDE"
        # at its look's level (group sequential), as the condition's line above it says (organiser audit L1: the
        # same interval read "96.18% CI" there and "95% CI" here)
        lines.append(f"         {state} margin -{r['margin']:.3f}: {interval_text(r, fidelity_level(r, conf))}")
    return lines
