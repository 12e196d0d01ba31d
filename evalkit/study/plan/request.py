"""`evalkit plan` as one call: the gate file and the database (when there is one) turned into a study model, then
the planned size."""

from __future__ import annotations

from ...errors import EvalkitError


def plan_from_config(cfg, db_path=None, *, margin: float | None = None, power: float = 0.8,
                     pass_rate: float | None = None, raters_per_pair: int | None = None, raters: int | None = None,
                     pair_correlation: float | None = None, rater_sd: float | None = None,
                     rater_path_sd: float | None = None, studies: int = 400, confirm: int = 2000,
                     interval: str | None = None, second_rating_share: float | None = None,
                     compare: bool = False, max_pairs: int | None = None, pool: int | None = None,
                     prescreen_agreement: float = 0.9, prescreen_bias: float = 0.0,
                     minutes_per_rating: float | None = None, look_every: int = 50,
                     rosters: tuple[int, ...] | None = None, onboarding_minutes: float | None = None):
    """(Plan, Gate): the gate file's margin, level, claim, min_raters, ratings per pair and second rating share
    unless overridden (max_pairs: the search's ceiling, default search.MAX_PAIRS, each design's with `compare`); the
    model's numbers from the database's pool and pilot ratings when it exists (planning never creates a database),
    else the defaults.
    With `compare`: (comparison.Comparison, Gate) instead, every design of designs.candidates judged in that model (pool:
    the pooled pairs the pre-screen judges, default the database's pool or 5,000; minutes_per_rating: default the
    raters' measured median time on task, else designs.MINUTE; gold ratings at the config's pool.gold_rate; rosters:
    the numbers of raters the recommended design is sized again for, default twice and four times the study's for a
    claim about raters in general and none for these raters; onboarding_minutes: a rater's time before their first
    rating, default designs.ONBOARDING)."""
    from pathlib import Path

    from ...locations import db_path as default_db_path
    from ...store import open_db
    from ..gate import read_gate_file
    from .pilot import model_from_db
    from .search import MAX_PAIRS, plan_study

    _text, gate = read_gate_file(cfg.gate_file or None)
    path = Path(db_path) if db_path else default_db_path()
    if db_path and not path.exists():
        raise EvalkitError(f"database {path} does not exist", "pass an existing --db, or leave it out to plan from defaults")
    if path.is_file() and path.stat().st_size == 0:  # SQLite would take it as new and fill it with tables
        raise EvalkitError(f"database {path} is an empty file, not a study's database",
                           "pass an existing --db, or leave it out to plan from defaults")
    if compare:  # the library's compare() takes 0 (no confirmation) for quick comparisons only
        from .search import check_confirm

        check_confirm(confirm)
    db = open_db(path) if path.exists() else None
    # `is None`, not `or`: --raters-per-pair 0 is an error to report, not a request for the gate's number
    model = model_from_db(db, gate.min_ratings_per_pair if raters_per_pair is None else raters_per_pair, pass_rate, raters,
                          prompts=None if db is not None and db["pairs"].count else len(cfg.pool.prompts) or 5,
                          pair_correlation=pair_correlation, rater_sd=rater_sd, rater_path_sd=rater_path_sd,
                          claim=gate.claim, min_raters=gate.min_raters,
                          second_rating_share=gate.second_rating_share if second_rating_share is None
                          else second_rating_share)
    if compare:
        from .comparison import compare as compare_designs
        from .designs import MINUTE, ONBOARDING, Scenario, candidates
        from ..gate import GENERAL

        notes = list(model.notes)  # what the pilot could not support (pilot.model_from_db)
        if minutes_per_rating is None:
            minutes_per_rating = _measured_minutes(db)
            if minutes_per_rating is None:
                minutes_per_rating = MINUTE
                notes.append(f"no measured time on task: {MINUTE:g} minute a rating assumed (--minutes-per-rating)")
        if pool is None:
            pool = max(int(db["pairs"].count), 5000) if db is not None else 5000
        given_rosters = rosters is not None
        if rosters is None:
            rosters = (2 * model.raters, 4 * model.raters) if gate.claim == GENERAL else ()
        least = max(gate.min_raters, 3)  # the gate's minimum, and 3 ratings of a pair by different raters
        if model.raters < least and not given_rosters and gate.claim == GENERAL:  # the default rosters come from it
            raise EvalkitError(f"--raters {model.raters}: a claim about raters in general needs at least {least} "
                               "raters (the gate's min_raters), and the rosters --compare sizes again are 2 and 4 "
                               "times it", f"pass --raters {least} or more")
        for g in rosters:
            if g < least:
                raise EvalkitError(f"--rosters {g}: a roster needs at least {least} raters (the gate's min_raters, "
                                   "and three raters for a pair rated three times)",
                                   f"give numbers of raters of at least {least}, e.g. --rosters {2 * least},{4 * least}")
        if onboarding_minutes is None and rosters:
            onboarding_minutes = ONBOARDING
            notes.append(f"{ONBOARDING:g} minutes of onboarding a rater assumed (--onboarding-minutes)")
        if gate.claim == GENERAL:
            # no design's pairs outweigh a rater spread this wide (the bound holds for every valid test): say so at
            # once, as plain plan does, not after every design has searched to the ceiling (organiser audit)
            from .search import rater_limit

            if why := rater_limit(model, gate.margin if margin is None else margin, gate.confidence, power):
                raise EvalkitError(f"no design can be compared: {why}",
                                   "plan again with more raters (--raters) or a pilot that supports a smaller spread")
        scenario = Scenario(model, pool=pool, prescreen_agreement=prescreen_agreement, prescreen_bias=prescreen_bias,
                            margin=gate.margin if margin is None else margin, confidence=gate.confidence,
                            claim=gate.claim, min_raters=gate.min_raters, minutes_per_rating=minutes_per_rating,
                            gold_rate=cfg.pool.gold_rate,
                            onboarding_minutes=ONBOARDING if onboarding_minutes is None else onboarding_minutes,
                            notes=notes, max_pairs=MAX_PAIRS if max_pairs is None else max_pairs)
        # one rating per pair doubles a share of pairs: the one asked for (0 included), else the gate's, else 10%
        doubled = second_rating_share if second_rating_share is not None else gate.second_rating_share or 0.1
        designs = candidates(gate.claim, doubled, look_every)
        result = compare_designs(scenario, power, studies, designs, rosters=tuple(rosters), confirm=confirm)
        best = result.best()
        if best is not None and best.expected_ratings is not None and look_every > best.expected_ratings:
            # the sequential designs were sized with these looks, so their figures stand; but they hardly look before
            # their maximum, which makes them the fixed designs (plan audit L2: --look-every 100000 said nothing)
            result.scenario.notes.append(
                f"--look-every {look_every} is more than the {best.expected_ratings:,.0f} ratings the recommended "
                "design expects to need: the group-sequential designs look seldom or never before their maximum, so "
                "their looks save little; give fewer ratings between looks, e.g. --look-every "
                f"{max(1, int(best.expected_ratings // 10))}")
        return result, gate
    result = plan_study(model, gate.margin if margin is None else margin, gate.confidence, power,
                        resamples=cfg.bench.bootstrap, studies=studies, confirm=confirm, claim=gate.claim,
                        min_raters=gate.min_raters, interval=interval or gate.interval,
                        max_pairs=MAX_PAIRS if max_pairs is None else max_pairs)
    if gate.ppi == "on" or gate.monitoring != "fixed":
        # plan_study sizes the raters' interval at one look: a gate with PPI or looks needs fewer ratings than that
        result.notes.insert(0, "the gate file uses " + " and ".join(
            w for w in (["the pre-screen in the interval (ppi = \"on\")"] if gate.ppi == "on" else [])
            + ([f"looks that may stop the study (monitoring = \"{gate.monitoring}\")"]
               if gate.monitoring != "fixed" else [])) + ", which this size leaves out (it is for the raters' answers "
            "at one look, so it asks for more than the gate's design needs): `evalkit plan --compare` sizes that design "
            "and writes all its gate lines")
    return result, gate


def _measured_minutes(db) -> float | None:
    """The raters' median time on task, in minutes (None without timed ratings)."""
    if db is None:
        return None
    from ...rating.pace import time_on_task

    table = time_on_task(db, 0.0)
    if not len(table) or not table["timed"].iloc[0]:
        return None
    return float(table["median_seconds"].iloc[0]) / 60.0
