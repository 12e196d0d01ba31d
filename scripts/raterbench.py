"""Raters per pair on simulated studies: python scripts/raterbench.py [--studies 2000] [--no-plans] [--recheck 8000]

Two measurements through the gate's own analysis (evalkit.study.plan), for 1 rating per pair with a share rated twice
(the gate's second_rating_share) beside 2 and 3 ratings per pair:
  plans   `evalkit plan`'s search and confirmation (plan_study) per design in the default scenario: planned pairs,
          expected ratings, power and the false-KEEP rate at the margin, each on 2,000 fresh studies;
  cells   the false-pass rate of a criterion that truly drops by the margin, 1 rating per pair and the share rated
          twice, at --pairs pairs over rater x path sd {0, 0.5} x identical share {0, 0.5} x raters {10, 20}.
Prints markdown tables; exits 1 when a cell's lower Monte-Carlo bound exceeds the one-sided level. Heavy (the plans
take minutes each on 2 cores): run it once, in the background.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalkit.cli.common import fail_clearly  # noqa: E402  (the library's errors as one clear line, exit 1)

from evalkit.study.plan import Rate, StudyModel, plan_study, run_studies  # noqa: E402
from evalkit.task.criteria import CRITERIA  # noqa: E402

MARGIN, CONFIDENCE = 0.05, 0.95


def model(raters_per_pair: int, share: float, **kw) -> StudyModel:
    base = dict(rater_accuracy=0.95, raters=10, pair_correlation=0.5, rater_sd=0.5)
    return StudyModel(pass_rates={c: 0.8 for c in CRITERIA}, raters_per_pair=raters_per_pair,
                      second_rating_share=share if raters_per_pair == 1 else 0.0, **(base | kw))


def ci(r: Rate) -> str:
    return f"{r.rate:.3f} [{r.low:.3f}, {r.high:.3f}]"


@click.command()
@click.option("--share", type=float, default=0.1, show_default=True, help="Share of pairs rated twice with 1 per pair.")
@click.option("--studies", type=click.IntRange(min=1), default=2000, show_default=True, help="Studies per cell.")
@click.option("--pairs", type=click.IntRange(min=1), default=2000, show_default=True, help="Pairs per study in the cells.")
@click.option("--plans/--no-plans", default=True, help="Also run plan_study per design (slow).")
@click.option("--recheck", type=int, default=0, show_default=True,
              help="Studies for a second look at the cell rater x path sd 0.5, 10 raters, no identical pairs: 1 rating "
                   "per pair on this many, 2 and 3 per pair on half as many each (0: none).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write the rows as JSON.")
@fail_clearly
def main(share, studies, pairs, plans, recheck, json_path):
    rows = {"plans": [], "cells": []}
    level = (1 - CONFIDENCE) / 2
    if plans:
        click.echo("| design | planned pairs | expected ratings | power | false KEEP at the margin | that criterion passes |")
        click.echo("| --- | ---: | ---: | --- | --- | --- |")
        for r in (1, 2, 3):
            m = model(r, share)
            t = time.time()
            p = plan_study(m, MARGIN, CONFIDENCE, 0.8, studies=400, confirm=max(2000, studies), seed=1)
            name = f"1 rater per pair, {share:.0%} rated twice" if r == 1 else f"{r} raters per pair"
            if p.recommended_pairs is None:
                click.echo(f"| {name} | - | - | - | - | {p.refused or 'no size reached the power'} |")
                continue
            click.echo(f"| {name} | {p.recommended_pairs:,} | {m.expected_ratings(p.recommended_pairs):,} | "
                       f"{ci(p.confirmed_power)} | {ci(p.false_keep)} | {p.false_pass.rate:.3f} |")
            rows["plans"].append({"raters_per_pair": r, "share": m.second_rating_share, "pairs": p.recommended_pairs,
                                  "ratings": m.expected_ratings(p.recommended_pairs), "seconds": round(time.time() - t),
                                  "power": p.confirmed_power.__dict__, "false_keep": p.false_keep.__dict__})
    click.echo(f"\n1 rating per pair, {share:.0%} rated twice, {pairs} pairs, {studies} studies per cell: a criterion "
               "truly dropping by the margin passes in")
    click.echo("| rater x path sd | identical share | raters | false pass [95% MC] |")
    click.echo("| ---: | ---: | ---: | --- |")
    worst = 0.0
    for path_sd in (0.0, 0.5):
        for ident in (0.0, 0.5):
            for raters in (10, 20):
                m = model(1, share, raters=raters, rater_path_sd=path_sd, identical_share=ident)
                c = CRITERIA[0]
                ok = run_studies(m, pairs, studies, {c: MARGIN}, [7, raters, int(ident * 10), int(path_sd * 10)],
                                 MARGIN, CONFIDENCE, 2000, criteria=(c,))[c]
                r = Rate.of(ok)
                worst = max(worst, r.low)
                click.echo(f"| {path_sd} | {ident} | {raters} | {ci(r)} |")
                rows["cells"].append({"rater_path_sd": path_sd, "identical_share": ident, "raters": raters,
                                      "false_pass": r.__dict__})
    if recheck:
        click.echo(f"\nrater x path sd 0.5, 10 raters, {pairs} pairs: a criterion dropping by the margin passes in")
        for r in (1, 2, 3):
            n = recheck if r == 1 else recheck // 2
            c = CRITERIA[0]
            ok = run_studies(model(r, share, rater_path_sd=0.5), pairs, n, {c: MARGIN}, [11, r], MARGIN, CONFIDENCE,
                             2000, criteria=(c,))[c]
            click.echo(f"  {r} rating(s) per pair ({n} studies): {ci(Rate.of(ok))}")
            rows.setdefault("recheck", []).append({"raters_per_pair": r, "false_pass": Rate.of(ok).__dict__})
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    if worst > level:
        click.echo(f"a cell's lower bound {worst:.3f} exceeds the one-sided level {level:.3f}")
        sys.exit(1)


if __name__ == "__main__":
    main()
