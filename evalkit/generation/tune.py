"""Sweep the assistant settings (draft length, schedule, confidence threshold) on the prompt set.

One process, interleaved trials: for each prompt of each repetition every trial runs once, in the grid's order for
one prompt and reversed for the next (meters.balanced_order), so drift in machine speed hits all trials alike and
never favours the one that always ran first (the default did, in every repetition); every call stored. The yardstick is Transformers' default assisted
settings measured in the same run. For the protocol-grade number, run `evalkit bench` with the winner.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field

from ..config import Config
from ..errors import EvalkitError
from ..records import GenerationPath
from ..stats import median

# Transformers' GenerationConfig defaults for assisted generation.
TRANSFORMERS_DEFAULT = {"num_assistant_tokens": 20, "num_assistant_tokens_schedule": "constant", "assistant_confidence_threshold": 0.4}


@dataclass
class Trial:
    settings: dict
    seconds: dict  # prompt id -> list of generate() seconds per new token
    runs: list = field(default_factory=list)  # its assisted runs' draft counts (a fallback is never one of them)
    fallbacks: int = 0

    def median_total(self) -> float | None:
        """Sum over prompts of the median seconds per new token. Per token, because sampled outputs differ
        in length from trial to trial (with greedy decoding every trial gives the same tokens)."""
        meds = [median(v) for v in self.seconds.values()]
        return sum(meds) if meds and None not in meds else None


@dataclass
class TrialResult:
    """One trial's outcome: a row of tune_trials."""

    experiment_id: int
    trial: int
    is_default: int  # 1 for Transformers' default assisted settings, the yardstick
    settings: str  # JSON of the three settings below
    num_assistant_tokens: int
    num_assistant_tokens_schedule: str
    assistant_confidence_threshold: float
    median_seconds_per_token_sum: float | None  # sum over prompts of the median seconds per new token
    speedup_vs_default: float | None
    acceptance_rate: float | None
    fallbacks: int


@dataclass
class TuneResult:
    experiment_id: int
    trials: list[TrialResult]
    best: TrialResult | None  # the fastest trial against the default among those that never fell back (or None)
    default: TrialResult
    runs_per_trial: int = 0  # timed assisted runs each trial asked for (repetitions x prompts)
    fallback_cause: str = ""  # why runs fell back (generation.fallbacks.cause_text), when some did

    def to_json(self) -> dict:
        return asdict(self)


def grid(tokens: list[int], schedules: list[str], thresholds: list[float]) -> list[dict]:
    out = [dict(TRANSFORMERS_DEFAULT)]
    for n in tokens:
        for s in schedules:
            for t in thresholds:
                setting = {"num_assistant_tokens": n, "num_assistant_tokens_schedule": s, "assistant_confidence_threshold": t}
                if setting not in out:
                    out.append(setting)
    return out


def check_sweep(tokens, schedules, thresholds, reps: int = 2) -> None:
    """Every value of the sweep in its range, or an EvalkitError naming the option and the values."""
    bad = [s for s in schedules if s not in ("constant", "heuristic", "heuristic_transient")]
    if bad:
        raise EvalkitError(f"unknown schedule(s) {', '.join(bad)}", "use constant, heuristic or heuristic_transient")
    for option, values, ok, rule, example in (
            ("--tokens", tokens, lambda n: n >= 1, "draft lengths of 1 or more", "--tokens 2,4,8"),
            ("--thresholds", thresholds, lambda t: 0 <= t < 1, "confidence thresholds in [0, 1)", "--thresholds 0,0.4"),
            ("--reps", [reps], lambda n: n >= 1, "1 or more repetitions", "--reps 2")):
        bad = [v for v in values if not ok(v)]
        if bad:
            raise EvalkitError(f"{option} {', '.join(map(str, bad))}: expected {rule}", f"pass e.g. {example}")


def run_tune(cfg: Config, db, *, tokens, schedules, thresholds, reps: int = 2, progress: bool = True) -> TuneResult:
    from .compat import assisted_allowed
    from .meters import balanced_order
    from .models import load_pair
    from .paths import run_assisted
    from .speed import acceptance_rate, speedup_of
    from ..task.prompts import load_prompts
    from ..store import insert_experiment, insert_generations, insert_tune_trials

    check_sweep(tokens, schedules, thresholds, reps)
    prompts = load_prompts(ids=cfg.bench.prompts or None)
    if not cfg.assisted_enabled:  # found before the models load (minutes on a large pair)
        raise EvalkitError("tuning needs the assisted path, and this config switches it off (generation_path, "
                           "load_draft)", "switch the assisted path on in the config, then run `evalkit tune` again")
    pair = load_pair(cfg, progress=progress)
    if not (assisted_allowed(cfg, pair.compat) and pair.draft is not None):
        raise EvalkitError("tuning needs the assisted path, which `evalkit check` does not approve for this pair",
                           "run `evalkit check` for the reason and its fix")
    trials = [Trial(settings=s, seconds={p.id: [] for p in prompts}) for s in grid(tokens, schedules, thresholds)]
    exp_id = insert_experiment(db, "tune", cfg.to_dict(), pair.compat, note=json.dumps([t.settings for t in trials]))
    base = copy.deepcopy(cfg.assistant)
    # one untimed warm-up so the first trial does not pay for first-call costs
    run_assisted(pair, prompts[0], cfg.decoding.seed)
    from ..progress import bar as progress_bar

    bar = progress_bar(total=len(trials) * len(prompts) * reps, desc="tune", unit="run", disable=not progress)
    for rep in range(reps):
        for block, prompt in enumerate(prompts):
            for trial in balanced_order(trials, rep * len(prompts) + block):
                for k, v in trial.settings.items():
                    setattr(pair.cfg.assistant, k, v)
                records = run_assisted(pair, prompt, cfg.decoding.seed + rep)
                insert_generations(db, records, exp_id)
                timed = records[-1]
                if timed.path == GenerationPath.FALLBACK:
                    trial.fallbacks += 1
                else:
                    trial.seconds[prompt.id].append(timed.generate_seconds / max(timed.new_tokens, 1))
                    trial.runs.append({"draft_proposed": timed.draft_proposed, "draft_accepted": timed.draft_accepted})
                bar.update(1)
    bar.close()
    pair.cfg.assistant = base
    default_total = trials[0].median_total()
    results = []
    for i, t in enumerate(trials):
        total = t.median_total()
        results.append(TrialResult(
            experiment_id=exp_id, trial=i, is_default=int(i == 0), settings=json.dumps(t.settings), **t.settings,
            median_seconds_per_token_sum=total,
            speedup_vs_default=speedup_of(default_total, total),  # seconds per token: the default's over this trial's
            acceptance_rate=acceptance_rate(t.runs), fallbacks=t.fallbacks))
    insert_tune_trials(db, [asdict(r) for r in results])
    # a setting whose assisted call failed in some run is not recommended, however fast the runs that did not fail
    ranked = sorted((r for r in results if r.speedup_vs_default is not None and not r.fallbacks),
                    key=lambda r: -r.speedup_vs_default)
    from .fallbacks import experiment_cause

    return TuneResult(experiment_id=exp_id, trials=results, best=ranked[0] if ranked else None, default=results[0],
                      runs_per_trial=reps * len(prompts),
                      fallback_cause=experiment_cause(db, [exp_id]) if any(r.fallbacks for r in results) else "")


def tune_at(cfg: Config, db_path, *, decoding: str = "greedy", prompts: list[str] | None = None, **sweep) -> TuneResult:
    """`evalkit tune`: the decoding mode and prompts over the config, then the sweep (`run_tune`'s tokens, schedules,
    thresholds, reps) stored in the database at `db_path`."""
    from ..store import open_db

    cfg.decoding.mode = decoding
    if prompts:
        cfg.bench.prompts = list(prompts)
    from .models import check_model_refs

    check_sweep(sweep["tokens"], sweep["schedules"], sweep["thresholds"], sweep.get("reps", 2))  # its values first,
    check_model_refs(cfg)  # then the model folders: a missing one leaves no new database behind
    return run_tune(cfg, open_db(db_path), **sweep)


def format_tune(result: TuneResult) -> str:
    def f(x, spec=".3f"):
        return "n/a" if x is None else format(x, spec)

    lines = [f"{'draft len':>9} {'schedule':<20}{'threshold':>9} {'ms/token (sum)':>15} {'vs default':>10} {'kept':>7}"
             f" {'fell back':>9}"]
    for r in result.trials:
        lines.append(
            f"{r.num_assistant_tokens:>9} {r.num_assistant_tokens_schedule:<20}{r.assistant_confidence_threshold:>9.2f} "
            f"{f(r.median_seconds_per_token_sum * 1000 if r.median_seconds_per_token_sum else None, '.2f'):>15} "
            f"{f(r.speedup_vs_default, '.2f') + ('x' if r.speedup_vs_default is not None else ' '):>10} "
            f"{f(r.acceptance_rate, '.2f'):>7} "
            f"{f'{r.fallbacks}/{result.runs_per_trial}' if result.runs_per_trial else r.fallbacks:>9}"
            + ("   <- Transformers default" if r.is_default else "")
        )
    failed = [r for r in result.trials if r.fallbacks]
    if failed:  # never counted as assisted: the figures rest on the runs whose assisted call did not fail
        lines.append(
            f"{len(failed)} trial(s) fell back to the target alone in some runs (the assisted call failed; "
            f"{sum(r.fallbacks for r in failed)} run(s) in all): their figures rest on the other runs only, and "
            "none of them is recommended"
            + ("; the default itself fell back, so every 'vs default' figure compares with fewer runs of it"
               if result.default.fallbacks else "")
            + (f"; {result.fallback_cause}" if result.fallback_cause else ""))
    b = result.best
    if b is None:
        lines.append("best: none: no trial was measured without falling back")
    if b:
        lines.append(
            f"best: num_assistant_tokens = {b.num_assistant_tokens}, num_assistant_tokens_schedule = "
            f"\"{b.num_assistant_tokens_schedule}\", assistant_confidence_threshold = {b.assistant_confidence_threshold} "
            f"-> {b.speedup_vs_default:.2f}x against Transformers' default assisted settings (same run)"
        )
    return "\n".join(lines)
