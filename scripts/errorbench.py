"""The gate's error rates on a grid of simulated studies: python scripts/errorbench.py [--studies 2000]

Runs evalkit.study.plan.errorbench: for every pass rate x rater x path spread x raters x identical-output share, whole
studies (pair effects shared by both sides, rater main effects, rater x path effects) go through the gate's own
functions, at the shipped gate's planned_pairs, min_ratings_per_pair, margin, interval and claim (--pairs and
--raters-per-pair change the first two). Each study is judged once, at its full size, on the raters' answers alone:
the gate's PPI, looks and second ratings (second_rating_share) are not simulated here; --designs simulates them. Prints a markdown table (false KEEP at the margin
with its upper 95% Monte-Carlo bound, KEEP at twice the margin, power) and exits 1 when a cell at the margin has an
upper bound above --limit (3.5% for the one-sided 2.5% level). Beside the gate's interval, the same studies are
judged on the other interval (stats.INTERVALS: the previous version's union with Tango), for the power it gains.
Heavy: the full grid is 144 simulations of 2,000 studies; run it once, in the background.

--designs compares the study designs of evalkit.study.plan.designs (a search, or with --sizes fixed maxima judged in
every cell of the grid); --designs --bound prints the floor no design of that family can beat (known variances),
then what a claim about raters in general costs any valid test over it with 10, 20, 40 and 80 raters (raterprice).

--disagreement measures the verdict's note on raters who differ widely about one path (aggregate.spread): how often
it fires per rater x path spread, where the interval's level holds (below 0.75) and where it slips.

--joined measures a claim about these raters with group-sequential looks where raters join after the study began
(study.plan.errorbench.joined_rates): the false-KEEP rate for the deciding look's raters under the gate's rule and
under two rules that carry an earlier pass, per scenario of raters' own differences (--differences EARLY:JOINING,...).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalkit.cli.common import fail_clearly  # noqa: E402  (the library's errors as one clear line, exit 1)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.UsageError(f"{text!r}: expected numbers separated by commas, e.g. 0.6,0.8") from None


def sizes_of(text: str) -> dict[int, int]:
    """--sizes "10:1500,20:1200": the maximum pairs per number of raters."""
    out = {}
    for item in (i.strip() for i in text.split(",") if i.strip()):
        g, _, n = item.partition(":")
        if not (g.isdigit() and n.isdigit() and int(g) >= 1 and int(n) >= 1):
            raise click.UsageError(f"--sizes {item!r}: expected RATERS:PAIRS, both 1 or more, e.g. 10:1500")
        out[int(g)] = int(n)
    return out


@click.command()
@click.option("--pass-rates", default="0.6,0.8,0.9", show_default=True, help="Pass rates, comma-separated.")
@click.option("--drops", default="0,1,2", show_default=True, help="True drops in margins, comma-separated.")
@click.option("--spreads", default="0,0.5", show_default=True, help="Rater x path spreads (logit sd), comma-separated.")
@click.option("--raters", default="10,20", show_default=True, help="Raters per study, comma-separated.")
@click.option("--identical", default="0,0.5", show_default=True, help="Identical-output shares, comma-separated.")
@click.option("--pairs", type=int, default=None, help="Pairs per study (default: the shipped gate's planned_pairs).")
@click.option("--raters-per-pair", type=int, default=None,
              help="Ratings per pair (default: the shipped gate's min_ratings_per_pair; no second ratings).")
@click.option("--margin", type=float, default=None, help="Margin (default: the shipped gate's).")
@click.option("--rater-sd", type=float, default=0.5, show_default=True, help="Raters' leniency sd, logit scale.")
@click.option("--pair-correlation", type=float, default=0.5, show_default=True,
              help="Correlation of a pair's two outputs (pair effects shared by both sides).")
@click.option("--accuracy", type=float, default=0.95, show_default=True, help="Rater accuracy.")
@click.option("--studies", type=int, default=2000, show_default=True, help="Simulated studies per cell and drop.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--limit", type=float, default=0.035, show_default=True,
              help="Largest allowed upper Monte-Carlo bound of the false-KEEP rate at the margin.")
@click.option("--no-union-bootstrap", is_flag=True,
              help="Judge the previous interval without its pair bootstrap part (much faster; it seldom sets the end).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Also write the rows here.")
@click.option("--designs", is_flag=True,
              help="Instead of the grid: compare the designs (study.plan.designs) in the default scenario (pass rate "
                   "0.8, rater accuracy 0.95, pre-screen agreement 0.9, margin 0.05) and with a pre-screen biased "
                   "--bias towards assisted: expected human ratings at 80%% power, false KEEP at the margin.")
@click.option("--bias", type=float, default=0.05, show_default=True, help="With --designs: the biased pre-screen's bias.")
@click.option("--pool", type=int, default=5000, show_default=True, help="With --designs: pooled pairs.")
@click.option("--only", default="", help="With --designs: indices of designs.candidates() to run, comma-separated.")
@click.option("--sizes", default="",
              help="With --designs: no search; judge the designs at these (maximum) sizes per number of raters, e.g. "
                   "10:1450,20:1150, on --studies studies with no drop and --drop-studies with a drop of the margin, "
                   "in every cell of --pass-rates x --identical x rater x path sd (--spreads) x pre-screen bias "
                   "(0, --bias).")
@click.option("--drop-studies", type=int, default=2000, show_default=True, help="With --sizes: studies with a drop.")
@click.option("--claim", type=click.Choice(["raters in general", "these raters"]), default="raters in general",
              show_default=True, help="With --designs: the gate's claim (these raters: no rater part to estimate).")
@click.option("--bound", is_flag=True,
              help="With --designs: the oracle bound instead: expected ratings at 80%% power of the same looks (every "
                   "50 ratings, O'Brien-Fleming) for a test that knows each criterion's variance and the best PPI "
                   "weight, with no rater uncertainty; no valid procedure that must estimate them needs fewer. Then "
                   "what a claim about raters in general costs any valid test over it with 10 to 80 raters "
                   "(study.plan.raterprice), then the same floor with three other spending functions, and with a "
                   "non-binding futility rule that also stops for DROP a study whose criterion lies 3.5 to 2.5 "
                   "standard errors below its course where nothing drops.")
@click.option("--infinite-df", is_flag=True,
              help="With --designs --sizes: a diagnostic, not a design: judge the intervals with the normal quantile "
                   "instead of t on the raters' degrees of freedom, as if the raters' part of the variance were known "
                   "to be as estimated. What no rule for the degrees of freedom can undercut; liberal where raters "
                   "judge the paths differently (see the criterion's own false-pass column).")
@click.option("--disagreement", is_flag=True,
              help="Instead of the grid: how often the verdict's note on raters who differ widely about one path "
                   "fires, per rater x path sd (--spreads) and raters (--raters), in studies of the gate's design "
                   "(one rating per pair, its second_rating_share rated twice) at --pairs pairs (default: the "
                   "gate's planned_pairs), with --rater-sd, --pair-correlation and --accuracy.")
@click.option("--joined", is_flag=True,
              help="Instead of the grid: a claim about these raters, looks every 50 ratings, raters joining after the "
                   "study began: false KEEP for the deciding look's raters per way of carrying an earlier pass "
                   "(--pairs, default 1100; --studies; --differences).")
@click.option("--differences", default="-1:-1,0:0,0:-2,1:-4,2:-6", show_default=True,
              help="With --joined: the early raters' and the joiners' own assisted - ordinary pass rate, in margins, "
                   "EARLY:JOINING, comma-separated.")
@fail_clearly
def main(pass_rates, drops, spreads, raters, identical, pairs, raters_per_pair, margin, rater_sd, pair_correlation,
         accuracy, studies, seed, limit, no_union_bootstrap, json_path, designs, bias, pool, only, sizes, drop_studies,
         bound, claim, infinite_df, disagreement, joined, differences):
    """False-KEEP rate and power of the shipped gate's interval at its planned size (one look, raters only: no PPI,
    no second ratings) on a grid of simulated studies."""
    import numpy as np

    for option, value in (("--studies", studies), ("--drop-studies", drop_studies)):
        if value < 1:
            raise click.UsageError(f"{option} {value}: expected simulated studies, 1 or more")

    if infinite_df:
        if not (designs and sizes):
            raise click.UsageError("--infinite-df is a diagnostic of --designs --sizes: pass both")
        import evalkit.stats.clustered as clustered

        clustered._pessimistic_df = lambda v, *_rest: np.full(np.shape(v), np.inf)  # v: the variances, per study
    if joined:
        return joined_table(differences, pairs or 1100, studies, seed, margin or 0.05)
    if disagreement:
        return disagreement_table(floats(spreads), [int(v) for v in floats(raters)], pairs, studies, seed, accuracy,
                                  rater_sd, pair_correlation)
    if designs and bound:
        return oracle_bound(rater_sd, pair_correlation, accuracy, pool, margin or 0.05, seed)
    if designs and sizes:
        return judge_designs(sizes_of(sizes), floats(spreads),
                             rater_sd, pair_correlation, accuracy, studies, drop_studies, seed, bias, pool,
                             margin or 0.05, [int(v) for v in floats(only)], json_path, floats(pass_rates),
                             floats(identical), claim, infinite_df)
    if designs:
        return compare_designs(floats(raters), rater_sd, pair_correlation, accuracy, studies, seed, bias, pool,
                               margin or 0.05, [int(v) for v in floats(only)], json_path, claim)

    from evalkit.study.plan.errorbench import check, default_grid, run_grid, table

    overrides = {"pass_rates": floats(pass_rates), "drops": floats(drops), "spreads": floats(spreads),
                 "raters": tuple(int(v) for v in floats(raters)), "identical_shares": floats(identical),
                 "rater_sd": rater_sd, "pair_correlation": pair_correlation, "rater_accuracy": accuracy,
                 "studies": studies, "seed": seed, "union_bootstrap": not no_union_bootstrap}
    if pairs:
        overrides["pairs"] = pairs
    if raters_per_pair is not None:
        if raters_per_pair < 1:
            raise click.UsageError(f"--raters-per-pair {raters_per_pair}: expected ratings per pair, 1 or more")
        overrides["raters_per_pair"] = raters_per_pair
    if margin:
        overrides["margin"] = margin
    grid = default_grid(**overrides)
    start = time.time()

    def progress(row):
        click.echo(f"  {time.time() - start:7.0f} s  pass {row['pass_rate']} spread {row['rater_path_sd']} "
                   f"raters {row['raters']} identical {row['identical_share']} drop {row['drop']}: "
                   f"KEEP {row['gate_keep']['rate']:.4f} (<= {row['gate_keep']['high']:.4f}), criterion "
                   f"{row['gate_criterion']['rate']:.4f}; other interval: KEEP {row['union_keep']['rate']:.4f}, "
                   f"criterion {row['union_criterion']['rate']:.4f}; ratings {row['ratings']:.0f}", err=True)

    rows = run_grid(grid, progress)
    took = time.time() - start
    machine = f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"
    click.echo(f"errorbench {time.strftime('%Y-%m-%d')}: {grid.studies} studies per cell and drop, {grid.pairs} pairs, "
               f"{grid.raters_per_pair} ratings per pair, margin {grid.margin}, claim {grid.claim!r}, interval "
               f"{grid.interval!r}, rater accuracy "
               f"{grid.rater_accuracy}, rater sd {grid.rater_sd}, pair correlation {grid.pair_correlation}; "
               f"{took:.0f} s on {machine}")
    click.echo(table(rows, "previous interval (union with Tango" + (", without its bootstrap part)" if no_union_bootstrap
                                                                     else ")")))
    if json_path:
        Path(json_path).write_text(json.dumps({"grid": {k: v for k, v in vars(grid).items()}, "rows": rows,
                                               "seconds": took, "machine": machine}, indent=1))
    bad = check(rows, grid, limit)
    for b in bad:
        click.echo(f"ABOVE THE LEVEL: {b}")
    sys.exit(1 if bad else 0)


def joined_table(differences, pairs, studies, seed, margin):
    """joined_rates per scenario: 2 raters rate the first 3/11 of the pairs alone (300 of 1100), 8 more join for the
    rest."""
    import numpy as np

    from evalkit.study.plan.errorbench import CARRY, joined_rates

    start = time.time()
    join_at = pairs * 3 // 11
    rows = []
    for k, item in enumerate(differences.split(",")):
        early, _, joining = item.partition(":")
        rows.append(joined_rates(studies, [seed, k], pairs, join_at=join_at, margin=margin,
                                 early_difference=float(early), joining_difference=float(joining)))
        rows[-1]["differences"] = (float(early), float(joining))
    machine = f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"
    click.echo(f"joined raters {time.strftime('%Y-%m-%d')}: {studies} studies per scenario, at most {pairs} pairs, "
               f"one rating each, looks every 50 ratings, margin {margin}, pass rate 0.8; 2 raters rate the first "
               f"{join_at} pairs, then 8 more join; {time.time() - start:.0f} s on {machine}")
    click.echo("| early : joining raters' own difference (margins) | the planned sample's | "
               + " | ".join(f"{rule}: KEEP; false KEEP (upper bound); mean pairs" for rule in CARRY) + " |")
    click.echo("|---|---|" + "---|" * len(CARRY))
    for r in rows:
        cells = [f"{100 * r[rule]['keep']['rate']:.1f}%; {100 * r[rule]['false_keep']['rate']:.2f}% "
                 f"(≤ {100 * r[rule]['false_keep']['high']:.2f}%); {r[rule]['pairs']:.0f}" for rule in CARRY]
        click.echo(f"| {r['differences'][0]:+g} : {r['differences'][1]:+g} | {r['final_drop']:+.2f} | "
                   + " | ".join(cells) + " |")


def disagreement_table(spreads, raters, pairs, studies, seed, accuracy, rater_sd, pair_correlation):
    """The disagreement note's rate per spread and number of raters (study.plan.errorbench.disagreement_rates)."""
    import numpy as np

    from evalkit.study.gate import read_gate_file
    from evalkit.study.plan.errorbench import disagreement_rates

    _text, gate = read_gate_file()
    pairs = pairs or gate.planned_pairs
    start = time.time()
    rows = disagreement_rates(spreads, raters, pairs, studies, seed, rater_accuracy=accuracy, rater_sd=rater_sd,
                              pair_correlation=pair_correlation, second_rating_share=gate.second_rating_share)
    machine = f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"
    click.echo(f"disagreement note {time.strftime('%Y-%m-%d')}: {studies} studies per cell, {pairs} pairs, one rating "
               f"each and {gate.second_rating_share:.0%} rated twice, pass rate 0.8, rater accuracy {accuracy}, rater "
               f"sd {rater_sd}, pair correlation {pair_correlation}; limit {100 * rows[0]['limit']:.1f} points; "
               f"{time.time() - start:.0f} s on {machine}")
    click.echo("| rater x path sd (logit) | raters | estimated sd, median (points) | the note fires (95% MC interval) |")
    click.echo("|---|---|---|---|")
    for r in rows:
        n = r["note"]
        click.echo(f"| {r['rater_path_sd']} | {r['raters']} | {100 * r['median_sd']:.1f} | {100 * n['rate']:.1f}% "
                   f"({100 * n['low']:.1f}-{100 * n['high']:.1f}%) |")


def compare_designs(raters, rater_sd, pair_correlation, accuracy, studies, seed, bias, pool, margin, only, json_path,
                    claim="raters in general"):
    """The designs of study.plan.designs in the default scenario, for each number of raters and pre-screen bias."""
    import numpy as np

    from evalkit.study.plan.comparison import compare, format_comparison
    from evalkit.study.plan.designs import Scenario, candidates
    from evalkit.study.plan.model import StudyModel
    from evalkit.task.criteria import CRITERIA

    chosen = [d for i, d in enumerate(candidates(claim)) if not only or i in only]
    machine = f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"
    out = []
    for g in raters or (10,):
        for b in (0.0, bias):
            start = time.time()
            model = StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, rater_accuracy=accuracy, raters=int(g),
                               pair_correlation=pair_correlation, rater_sd=rater_sd)
            scenario = Scenario(model, pool=pool, prescreen_agreement=0.9, prescreen_bias=b, margin=margin, claim=claim)
            c = compare(scenario, 0.8, studies, chosen, seed,
                        progress=lambda r: click.echo(f"  {r.design.name}: {r.planned_pairs} pairs, "
                                                      f"{r.expected_ratings} ratings, false KEEP "
                                                      f"{r.false_keep.rate if r.false_keep else None}", err=True))
            click.echo(f"\ndesigns {time.strftime('%Y-%m-%d')}, {g} raters, pre-screen bias {b:+.2f}: "
                       f"{time.time() - start:.0f} s on {machine}")
            click.echo(format_comparison(c))
            out.append({"raters": g, "bias": b, "rows": [r.to_json() for r in c.rows], "recommended": c.recommended})
    if json_path:
        Path(json_path).write_text(json.dumps(out, indent=1, default=str))


def judge_designs(sizes, spreads, rater_sd, pair_correlation, accuracy, studies, drop_studies, seed, bias, pool, margin,
                  only, json_path, pass_rates=(0.8,), identical=(0.0,), claim="raters in general", infinite_df=False):
    """The chosen designs at fixed sizes (sized for the default scenario) in every cell of pass rate x identical share
    x rater x path sd x pre-screen bias: expected human ratings and power with no drop, false KEEP when a criterion
    drops by the margin (its upper 95% Monte-Carlo bound), one markdown row per cell."""
    import numpy as np

    from evalkit.study.plan.comparison import evaluate
    from evalkit.study.plan.designs import Scenario, candidates
    from evalkit.study.plan.model import StudyModel
    from evalkit.task.criteria import CRITERIA

    chosen = [d for i, d in enumerate(candidates(claim)) if not only or i in only]
    machine = f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"
    start = time.time()
    lines = ["| design | pass rate | identical | raters | rater × path sd | pre-screen bias | pairs (max) | expected ratings "
             "| + gold | power | false KEEP at the margin (upper bound) | the dropping criterion passes (upper bound) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    out = []
    cells = [(p, same, g, pairs, spread, b) for p in pass_rates for same in identical for g, pairs in sizes.items()
             for spread in spreads for b in sorted({0.0, bias})]
    for design in chosen:
        for p, same, g, pairs, spread, b in cells:
            model = StudyModel(pass_rates={c: p for c in CRITERIA}, rater_accuracy=accuracy, raters=g,
                               identical_share=same, pair_correlation=pair_correlation, rater_sd=rater_sd,
                               rater_path_sd=spread)
            scenario = Scenario(model, pool=pool, prescreen_agreement=0.9, prescreen_bias=b, margin=margin, claim=claim)
            r = evaluate(design, scenario, pairs, studies, drop_studies,
                         [seed, g, int(spread * 10), int(b * 100), int(p * 10), int(same * 10)])
            line = (f"| {design.name} | {p} | {same} | {g} | {spread} | {b:+.2f} | {pairs:,} | "
                    f"{r.expected_ratings:,.0f} | {r.gold_ratings:,.0f} | {r.power.rate:.3f} ({r.power.low:.3f}–{r.power.high:.3f}) | "
                    f"{r.false_keep.rate:.4f} (≤ {r.false_keep.high:.4f}){'' if r.holds else ' ✗'} | "
                    f"{r.criterion_false_pass.rate:.4f} (≤ {r.criterion_false_pass.high:.4f}) |")
            click.echo(f"  {time.time() - start:7.0f} s {line}", err=True)
            lines.append(line)
            out.append(r.to_json() | {"pass_rate": p, "identical_share": same, "raters": g, "rater_path_sd": spread,
                                      "bias": b})
    click.echo(f"designs {time.strftime('%Y-%m-%d')}, claim about {claim}"
               f"{' (DIAGNOSTIC: normal quantile, infinite degrees of freedom)' if infinite_df else ''}: rater accuracy {accuracy}, pre-screen agreement "
               f"0.9, margin {margin}, rater sd {rater_sd}, pair correlation {pair_correlation}, pool {pool:,}; "
               f"{studies} studies without a drop and {drop_studies} with one per cell; {time.time() - start:.0f} s on "
               f"{machine}")
    click.echo("\n".join(lines))
    if json_path:
        Path(json_path).write_text(json.dumps(out, indent=1, default=str))


def oracle_bound(rater_sd, pair_correlation, accuracy, pool, margin, seed, power=0.8):
    """study.plan.floor.floor in the default scenario: the fewest expected ratings any design of its family could
    need, knowing every variance."""
    from evalkit.study.plan.designs import Scenario
    from evalkit.study.plan.floor import floor
    from evalkit.study.plan.model import StudyModel
    from evalkit.task.criteria import CRITERIA

    model = StudyModel({k: 0.8 for k in CRITERIA}, rater_accuracy=accuracy, pair_correlation=pair_correlation,
                       rater_sd=rater_sd)
    scenario = Scenario(model, pool=pool, prescreen_agreement=0.9, margin=margin)
    f = floor(scenario, power, seed=seed)
    click.echo(f"oracle bound {time.strftime('%Y-%m-%d')}: pass rate 0.8, rater accuracy {accuracy}, pre-screen "
               f"agreement 0.9, margin {margin}, rater sd {rater_sd}, pair correlation {pair_correlation}, pool {pool:,}, "
               f"1 rating per pair (+10% twice), looks every 50 ratings: variance per pair {f.variance_raters:.4f} "
               f"(raters alone), {f.variance_ppi:.4f} (PPI, lambda at its best)")
    click.echo(f"  known variances, fixed size: {f.fixed_pairs:,.0f} pairs, {f.fixed_ratings:,.0f} ratings")
    click.echo(f"  known variances, group sequential: maximum {f.planned_pairs:,} pairs (KEEP {f.power:.3f} of 10,000 "
               f"simulated studies), expected ratings {f.expected_ratings:,.0f}")
    # the price of few raters: what any test valid for raters in general needs over this floor, roster by roster
    from evalkit.study.plan.raterprice import rater_price

    for g in (10, 20, 40, 80):
        p = rater_price(g, power ** (1 / len(CRITERIA)), 0.95, f.rater_free_share)
        click.echo(f"  claim about raters in general with {g} raters: any valid test at least {p.lower:.3f}x the "
                   f"floor, about {f.expected_ratings * p.lower:,.0f} expected ratings (the t rule on {g - 1} df "
                   f"{p.t_test:.3f}x; the pool's share of the variance {f.rater_free_share:.3f})")
    # the spending function is no lever: KEEP needs all four criteria to cross, and early alpha buys early stops
    # only where every criterion crosses at once, at the cost of a larger maximum
    from evalkit.stats.sequential import HwangShihDeCani, pocock_spending

    for label, spending in (("Hwang-Shih-DeCani gamma -2", HwangShihDeCani(-2.0)),
                            ("linear (gamma 0)", HwangShihDeCani(0.0)), ("Pocock-type", pocock_spending)):
        g = floor(scenario, power, seed=seed, spending=spending)
        click.echo(f"  the same with {label} spending: maximum {g.planned_pairs:,} pairs, expected ratings "
                   f"{g.expected_ratings:,.0f}")
    # nor is stopping for lack of promise: KEEP studies stop late (all four criteria must cross), and a rule that
    # stops the hopeless ones early also stops some that would have passed, so the maximum must grow
    for c in (3.5, 3.0, 2.75, 2.5):
        # the rule only takes KEEPs away: no maximum below the floor without it reaches the power
        g = floor(scenario, power, seed=seed, futility=c, from_pairs=f.planned_pairs)
        click.echo(f"  the same with a futility rule (DROP once a criterion lies {c} standard errors below its course "
                   f"where nothing drops): " + (f"maximum {g.planned_pairs:,} pairs, expected ratings "
                                                f"{g.expected_ratings:,.0f}" if g else "no maximum within the pool"))


if __name__ == "__main__":
    main()
