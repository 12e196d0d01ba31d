"""The gate's error rates on a grid of simulated studies (scripts/errorbench.py): for each pass rate, rater x path
spread, number of raters and identical-output share, whole studies are drawn from plan/model.py and run through the
gate's own functions (stats.paired_difference, gate.fidelity_ok, gate.raters_ok). Per cell: the KEEP rate when
nothing drops (power), and when one criterion truly drops by the margin or twice the margin (false KEEP at the
margin), each with its 95% Monte-Carlo interval; and the same criterion's non-inferiority pass rate.

Criteria are independent in the model, so the criteria that do not drop are drawn once per cell, in the
no-drop run, and shared by its three drop levels (as plan_study does).

Beside the gate's interval (the frozen gate's `interval`, by default the two-way CR2 t interval with the score
floor), each row gives the rates of the previous version's interval (union_*: the union of Tango on rater-averaged
counts, the pair bootstrap and the CR2 part on the raters' df) on the same simulated studies, and the human ratings a
study needs (identical pairs are decided without raters).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from ..gate import GENERAL, Gate
from ...task.criteria import CRITERIA
from .model import StudyModel, rated_pairs, simulate
from .search import RATINGS_PER_CHUNK, Rate


@dataclass
class Grid:
    pass_rates: tuple[float, ...] = (0.6, 0.8, 0.9)
    drops: tuple[float, ...] = (0.0, 1.0, 2.0)  # in margins
    spreads: tuple[float, ...] = (0.0, 0.5)  # rater x path sd, logit scale
    raters: tuple[int, ...] = (10, 20)
    identical_shares: tuple[float, ...] = (0.0, 0.5)
    # fixed for every cell
    pairs: int = 1855
    margin: float = 0.05
    confidence: float = 0.95
    raters_per_pair: int = 3
    rater_accuracy: float = 0.95
    rater_sd: float = 0.5  # raters' leniency (main effect), logit scale
    pair_correlation: float = 0.5  # pair effects shared by both sides
    studies: int = 2000
    seed: int = 0
    resamples: int = 2000
    claim: str = GENERAL
    min_raters: int = Gate.min_raters
    interval: str = Gate.interval  # the gate's; the other of stats.INTERVALS is measured beside it ("union" columns)
    # with the union: its pair bootstrap part too (an FFT per study, most of the grid's time; it seldom sets the end)
    union_bootstrap: bool = True
    notes: list[str] = field(default_factory=list)

    def cells(self):
        for p in self.pass_rates:
            for s in self.spreads:
                for g in self.raters:
                    for ident in self.identical_shares:
                        yield p, s, g, ident


def _passes(model: StudyModel, grid: Grid, studies: int, drops: dict, seed, criteria) -> dict:
    """Per criterion and study: does the gate's condition hold on the gate's interval, and on the previous
    version's (union)? Also the ratings per study."""
    import numpy as np

    from ..gate import enough_raters_for, fidelity_ok
    from ...stats import T_FLOOR, UNION, paired_difference

    gate = {"claim": grid.claim, "min_raters": grid.min_raters}
    chunk = max(1, RATINGS_PER_CHUNK // (grid.pairs * grid.raters_per_pair))
    out = {c: {"gate": [], "union": [], "ratings": []} for c in criteria}
    for i, start in enumerate(range(0, studies, chunk)):
        size = min(chunk, studies - start)
        sim = simulate(model, grid.pairs, size, drops, np.random.default_rng([*seed, i]), criteria)
        rated = rated_pairs(sim, size)
        for c, x in sim["x"].items():
            res = paired_difference(x, sim["pair"], sim["rater"], sim["pair_study"], size, grid.confidence,
                                    grid.resamples, raters_in_general=grid.claim == GENERAL,
                                    identical=sim["identical"], interval=grid.interval,
                                    bootstrap=grid.union_bootstrap or grid.interval == UNION)
            enough = enough_raters_for(res["raters"], rated, gate)  # the gate's rule: identical pairs alone need none
            floor = np.fmin(res["t_low"], res["score_low"])
            union = np.fmin(np.fmin(res["tango_low"], res["bootstrap_low"]), res["two_way_low"])
            out[c]["gate"].append(fidelity_ok(res["low"], grid.margin) & enough)
            out[c]["union"].append(fidelity_ok(union if grid.interval == T_FLOOR else floor, grid.margin) & enough)
            out[c]["ratings"].append(res["ratings"])
            assert grid.interval in (T_FLOOR, UNION)
    return {c: {k: np.concatenate(v) for k, v in parts.items()} for c, parts in out.items()}


def run_grid(grid: Grid, progress=None) -> list[dict]:
    """One row per cell and drop: pass_rate, spread, raters, identical_share, drop (in margins), keep and
    criterion rates (Rate as dicts) for the gate and for its CR2 part alone."""
    import numpy as np

    rows = []
    first, others = CRITERIA[0], CRITERIA[1:]
    for k, (p, spread, g, ident) in enumerate(grid.cells()):
        model = StudyModel(pass_rates={c: p for c in CRITERIA}, rater_accuracy=grid.rater_accuracy,
                           identical_share=ident, raters_per_pair=grid.raters_per_pair, raters=g,
                           pair_correlation=grid.pair_correlation, rater_sd=grid.rater_sd, rater_path_sd=spread)
        model.check()
        base = _passes(model, grid, grid.studies, {}, [grid.seed, k, 0], CRITERIA)
        for j, drop in enumerate(grid.drops):
            if drop == 0:
                dropping = base[first]
            else:
                dropping = _passes(model, grid, grid.studies, {first: drop * grid.margin}, [grid.seed, k, 1 + j],
                                   (first,))[first]
            row = {"pass_rate": p, "rater_path_sd": spread, "raters": g, "identical_share": ident, "drop": drop,
                   "ratings": float(np.mean(dropping["ratings"]))}
            for kind in ("gate", "union"):
                keep = np.logical_and.reduce([dropping[kind], *(base[c][kind] for c in others)])
                row[f"{kind}_keep"] = asdict(Rate.of(keep))
                row[f"{kind}_criterion"] = asdict(Rate.of(dropping[kind]))
            rows.append(row)
            if progress:
                progress(row)
    return rows


def check(rows: list[dict], grid: Grid, limit: float = 0.035) -> list[str]:
    """The cells at a drop of the margin whose false-KEEP rate's upper Monte-Carlo bound exceeds `limit`."""
    return [f"pass rate {r['pass_rate']}, spread {r['rater_path_sd']}, {r['raters']} raters, identical "
            f"{r['identical_share']}: false KEEP {r['gate_keep']['rate']:.4f} (upper bound {r['gate_keep']['high']:.4f})"
            for r in rows if r["drop"] == 1.0 and r["gate_keep"]["high"] > limit]


def table(rows: list[dict], other: str = "previous interval (union with Tango)") -> str:
    """Markdown: one line per cell: human ratings per study, false KEEP at the margin (with its upper Monte-Carlo
    bound) and the dropping criterion's pass rate there, KEEP at twice the margin, power with its interval, and
    the other interval's criterion pass rate at the margin and power on the same studies."""
    by_cell: dict[tuple, dict] = {}
    for r in rows:
        by_cell.setdefault((r["pass_rate"], r["rater_path_sd"], r["raters"], r["identical_share"]), {})[r["drop"]] = r

    def cell(r, key, fmt="{rate:.4f} (≤ {high:.4f})"):
        return fmt.format(**r[key]) if r else "–"

    lines = ["| pass rate | rater × path sd | raters | identical | ratings per study | false KEEP at margin (upper "
             "bound) | criterion passes at margin | KEEP at 2 × margin | power, no drop (interval) | "
             f"{other}: criterion passes at margin; power |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (p, s, g, ident), drops in by_cell.items():
        at, twice, none = drops.get(1.0), drops.get(2.0), drops.get(0.0)
        alone = (f"{at['union_criterion']['rate']:.4f}; {none['union_keep']['rate']:.3f}" if at and none else "–")
        ratings = next(iter(drops.values()))["ratings"]
        lines.append(" | ".join([
            f"| {p}", f"{s}", f"{g}", f"{ident}", f"{ratings:,.0f}", cell(at, "gate_keep"),
            cell(at, "gate_criterion", "{rate:.4f}"), cell(twice, "gate_keep", "{rate:.4f}"),
            cell(none, "gate_keep", "{rate:.3f} ({low:.3f}–{high:.3f})"), alone]) + " |")
    return "\n".join(lines)


def default_grid(**overrides) -> Grid:
    """The grid with the shipped gate's planned size, margin, confidence, ratings per pair and claim."""
    from ..gate import read_gate_file

    _text, gate = read_gate_file()
    grid = Grid(pairs=gate.planned_pairs or Grid.pairs, margin=gate.margin, confidence=gate.confidence,
                raters_per_pair=gate.min_ratings_per_pair, claim=gate.claim, min_raters=gate.min_raters,
                interval=gate.interval)
    return replace(grid, **overrides)


def disagreement_rates(spreads, raters, pairs: int, studies: int, seed: int = 0, pass_rate: float = 0.8,
                       rater_accuracy: float = 0.95, rater_sd: float = 0.0, pair_correlation: float = 0.0,
                       second_rating_share: float = 0.1) -> list[dict]:
    """How often the verdict's note on raters who differ widely about one path (aggregate.spread.disagreement_note)
    fires, per rater x path spread (logit sd) and number of raters: whole studies of `pairs` pairs, one rating each
    and a share rated twice (the shipped gate's design), drawn from plan/model.py and read by the aggregate's own
    function on the same arrays a study's ratings load into. Per row: the spread, raters, the note's rate with its 95%
    Monte-Carlo interval, and the median estimated sd against the limit (aggregate.spread.wide_spread)."""
    import numpy as np

    from ...aggregate.spread import disagreement_note, rater_path_spreads, wide_spread
    from .model import simulate_answers

    limit = wide_spread()
    rows = []
    for g in raters:
        for sd in spreads:
            model = StudyModel(pass_rates={c: pass_rate for c in CRITERIA}, rater_accuracy=rater_accuracy,
                               raters=int(g), raters_per_pair=1, second_rating_share=second_rating_share,
                               rater_sd=rater_sd, pair_correlation=pair_correlation, rater_path_sd=sd)
            sim = simulate_answers(model, pairs, studies, {}, np.random.default_rng([seed, int(g), int(1000 * sd)]))
            fired, means = [], []
            for s in range(studies):
                data = study_ratings(sim, s, pairs)
                spread = rater_path_spreads(data, test_from=limit)  # what the note reads, computed once
                means.append(spread.mean if spread is not None else np.nan)
                fired.append(bool(disagreement_note(data, {"claim": GENERAL}, spread)))
            rate = Rate.of(fired)
            rows.append({"rater_path_sd": sd, "raters": int(g), "pairs": pairs, "studies": studies,
                         "note": asdict(rate), "median_sd": float(np.nanmedian(means)), "limit": limit})
    return rows


def study_ratings(sim: dict, study: int, pairs: int):
    """One simulated study of simulate_answers as the aggregate's RatingData (answers pass / fail, no preference)."""
    import numpy as np

    from ...aggregate.data import RatingData, answer_code

    keep = (sim["pair"] // pairs) == study
    pair = sim["pair"][keep] - study * pairs
    names, rater = np.unique(sim["rater"][keep], return_inverse=True)
    columns = []
    for c in CRITERIA:  # the ordinary answer, then the assisted one (aggregate.data.PATHS)
        columns += [np.where(v[keep], answer_code("p"), answer_code("f")) for v in sim["seen"][c]]
    columns.append(np.full(len(pair), answer_code("t")))
    identical = np.asarray(sim["same"][study * pairs:(study + 1) * pairs], bool)
    return RatingData(rating_id=np.arange(len(pair)), pair=pair, rater=rater,
                      answers=np.stack(columns, axis=1).astype(np.uint8), raters=[str(r) for r in names],
                      pair_ids=[str(i) for i in range(pairs)], pair_prompt=np.zeros(pairs, np.int64),
                      prompts=["simulated"], pair_generation={}, pair_identical=identical)


# How a pass at an earlier look is carried to a later one (aggregate.looks.walk's `carry`), for joined_rates: the
# gate's rule (None: for a claim about these raters, every criterion judged at the deciding look), a pass standing
# while its look's roster does, and a pass standing whoever joined (the rule before 2026-12-06)
CARRY = {"gate": None, "roster": lambda sample, _row, _look: sample[1], "stays": lambda *_: None}


def joined_rates(studies: int, seed=0, planned: int = 1100, look_every: int = 50, early_raters: int = 2,
                 joining_raters: int = 8, join_at: int = 300, early_difference: float = 3.0,
                 joining_difference: float = -6.0, margin: float = 0.05, pass_rate: float = 0.8,
                 confidence: float = 0.95) -> dict:
    """A claim about these raters with group-sequential looks, where raters join after the study began: how often a
    KEEP is claimed for the deciding look's raters although one criterion truly drops by at least the margin for
    them, under each way of carrying an earlier look's pass (CARRY).

    Whole studies of `planned` pairs, one rating each: the first `join_at` pairs go to `early_raters` in turn, the
    rest to them and `joining_raters` in turn. Two criteria: the first drops, per rater, by her own fixed effect (the
    claim is about these raters' effects), her own assisted - ordinary pass rate in margins: `early_difference` for the
    early raters, `joining_difference` for the joiners (negative: the assisted path passes less); the second drops
    for nobody. The quantity a look's claim is about is the drop its own sample's raters give, in their shares of it
    (what the gate's interval for these raters estimates), known exactly here. Each look's interval is
    stats.paired_difference's for these raters at the look's level (study.monitoring), and each study goes through
    the gate's own walk, stopping as the verdict does (KEEP once both have passed, DROP once an upper end is below
    -margin). Returns per rule the KEEP rate, the false-KEEP rate
    (KEEP where the dropping criterion's quantity at the deciding look is at or below -margin) and the mean decided
    pairs, each rate a Rate as a dict."""
    from types import SimpleNamespace

    import numpy as np

    from ..gate import fidelity_ok
    from ..monitoring import look_levels, look_sizes
    from ...aggregate.looks import walk
    from ...stats import T_FLOOR, paired_difference

    values = {"planned_pairs": planned, "monitoring": "group sequential", "look_every": look_every,
              "min_ratings_per_pair": 1, "second_rating_share": 0.0, "confidence": confidence,
              "claim": "these raters", "margin": margin}
    sizes = look_sizes(values)
    levels = look_levels(values, sizes)
    local = np.arange(planned)
    own = np.where(local < join_at, local % early_raters,
                   (local - join_at) % (early_raters + joining_raters))  # each pair's rater, the same in every study
    drops = {"dropping": np.where(own < early_raters, early_difference, joining_difference) * margin,
             "other": np.zeros(planned)}
    truth = np.cumsum(drops["dropping"]) / (local + 1)  # the first criterion's quantity on the first n pairs
    rng = np.random.default_rng(seed)
    pair = np.arange(studies * planned)
    rater = (pair // planned) * (early_raters + joining_raters) + np.tile(own, studies)
    looks = {}
    for c, drop in drops.items():
        ordinary = rng.random((studies, planned)) < pass_rate
        assisted = rng.random((studies, planned)) < pass_rate + drop
        x = (assisted.astype(np.int8) - ordinary.astype(np.int8)).ravel()
        for j, (n, level) in enumerate(zip(sizes, levels)):
            if level >= 1 - 1e-12:  # a look the spending gives (almost) nothing: walk skips it
                continue
            seen = np.tile(local < n, studies)
            res = paired_difference(x[seen], pair[seen], rater[seen], pair // planned, studies, level,
                                    raters_in_general=False, interval=T_FLOOR, bootstrap=False)
            looks[c, j] = (res["low"], res["high"])

    def decided(s: int, carry) -> tuple[bool, int]:  # one study through the gate's walk: KEEP?, decided pairs
        def analyse(_ratings, look, _context):
            j = look.index - 1
            roster = frozenset(own[:look.pairs].tolist())
            rows = [{"criterion": c, "ok": bool(fidelity_ok(looks[c, j][0][s], margin)), "raters": len(roster),
                     "ci_low": float(looks[c, j][0][s]), "ci_high": float(looks[c, j][1][s])} for c in drops]
            return rows, (j, roster), look.pairs

        def decide_look(rows, _decided, _ratings, look, _context):  # as verdict.decide stops a study
            settled = all(r["passed_at_look"] for r in rows) or any(r["ci_high"] < -margin for r in rows)
            return SimpleNamespace(interim=not (look.final or settled))

        went = walk(values, lambda _look: (None, None), analyse, decide_look, carry)
        return all(r["passed_at_look"] for r in went.rows), went.look.pairs

    out = {"looks": len(sizes), "studies": studies, "final_drop": float(truth[-1] / margin)}
    for rule, carry in CARRY.items():
        keep, pairs = np.array([decided(s, carry) for s in range(studies)]).T
        false = keep.astype(bool) & (truth[pairs - 1] <= -margin + 1e-12)
        out[rule] = {"keep": asdict(Rate.of(keep.astype(bool))), "false_keep": asdict(Rate.of(false)),
                     "pairs": float(pairs.mean())}
    return out
