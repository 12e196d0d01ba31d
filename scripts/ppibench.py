"""Prediction-powered inference on simulated studies: python scripts/ppibench.py [--studies 2000]

Runs evalkit.study.plan.ppibench: for each number of rated pairs, pre-screen (agreement with raters, bias towards
assisted) and rater x path spread, whole studies (pair effects shared by both sides, rater main and rater x path
effects) go through the gate's own functions, with prediction-powered inference (the shipped gate's default) and with
the raters' answers alone on the same rated pairs. Prints a markdown table (false KEEP at the margin with its upper
95% Monte-Carlo bound, power, for both) and the fewest rated pairs that reach --power with each; exits 1 when a PPI
cell at the margin has an upper bound above --limit (3.5% for the one-sided 2.5% level). Heavy: run it once, in the
background.
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


from errorbench import cpu_name  # noqa: E402  (one way to name the machine in both benchmarks' output)


def numbers(text: str, option: str, kind=float) -> tuple:
    try:
        values = tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.UsageError(f"{option} {text!r}: expected numbers separated by commas, e.g. 300,600") from None
    if kind is int and any(v < 1 for v in values):
        raise click.UsageError(f"{option} {text!r}: expected counts of 1 or more")
    return values


def prescreens(text: str) -> tuple[tuple[float, float], ...]:
    """'0.9:0,0.9:0.05' -> ((0.9, 0.0), (0.9, 0.05)): agreement with raters, bias towards assisted."""
    out = []
    for item in text.split(","):
        agreement, _, bias = item.partition(":")
        try:
            out.append((float(agreement), float(bias or 0)))
        except ValueError:
            raise click.UsageError(f"--prescreens {item!r}: expected AGREEMENT:BIAS, e.g. 0.9:0.05") from None
    return tuple(out)


@click.command()
@click.option("--rated", default="300,600,900,1200", show_default=True, help="Rated pairs, comma-separated.")
@click.option("--pool", type=click.IntRange(min=1), default=4000, show_default=True, help="Pooled pairs per study (rated included).")
@click.option("--prescreens", "screens", default="0.9:0,0.9:0.05", show_default=True,
              help="Pre-screens as agreement:bias towards assisted, comma-separated.")
@click.option("--spreads", default="0,0.5", show_default=True, help="Rater x path spreads (logit sd), comma-separated.")
@click.option("--raters", type=click.IntRange(min=1), default=10, show_default=True, help="Raters per study.")
@click.option("--raters-per-pair", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--pass-rate", type=float, default=0.8, show_default=True)
@click.option("--accuracy", type=float, default=0.95, show_default=True, help="Rater accuracy.")
@click.option("--margin", type=float, default=0.05, show_default=True)
@click.option("--studies", type=click.IntRange(min=1), default=2000, show_default=True, help="Simulated studies per cell and drop.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--power", type=float, default=0.8, show_default=True, help="Target power for the fewest rated pairs.")
@click.option("--limit", type=float, default=0.035, show_default=True,
              help="Largest allowed upper Monte-Carlo bound of the false-KEEP rate at the margin.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Also write the rows here.")
@fail_clearly
def main(rated, pool, screens, spreads, raters, raters_per_pair, pass_rate, accuracy, margin, studies, seed, power,
         limit, json_path):
    """False-KEEP rate, power and ratings needed with prediction-powered inference against the raters alone."""
    import numpy as np

    from evalkit.study.plan.ppibench import Design, run

    start = time.time()
    rows = []
    cells = [(n, s, sp) for s in prescreens(screens) for sp in numbers(spreads, "--spreads")
             for n in numbers(rated, "--rated", int)]
    for k, (n, (agreement, bias), spread) in enumerate(cells):
        design = Design(pass_rate=pass_rate, rater_accuracy=accuracy, raters=raters, raters_per_pair=raters_per_pair,
                        rater_path_sd=spread, rated=n, pool=pool, prescreen_agreement=agreement,
                        prescreen_bias=bias, margin=margin)
        for row in run(design, studies, seed=seed * 1000 + k):
            rows.append(row)
            click.echo(f"  {time.time() - start:7.0f} s  rated {n} pre-screen {agreement}:{bias} spread {spread} "
                       f"drop {row['drop']}: KEEP ppi {row['ppi_keep']['rate']:.4f} rated "
                       f"{row['rated_keep']['rate']:.4f}", err=True)
    took = time.time() - start
    machine = f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"
    click.echo(f"ppibench {time.strftime('%Y-%m-%d')}: {studies} studies per cell and drop, pool {pool} pairs, "
               f"{raters} raters, {raters_per_pair} ratings per pair, pass rate {pass_rate}, rater accuracy {accuracy}, "
               f"rater sd 0.5, pair correlation 0.5, margin {margin}, claim about raters in general; {took:.0f} s on "
               f"{machine}")
    click.echo(table(rows))
    click.echo("")
    click.echo(needed(rows, power, raters_per_pair))
    if json_path:
        Path(json_path).write_text(json.dumps({"rows": rows, "seconds": took, "machine": machine}, indent=1))
    bad = [r for r in rows if r["drop"] == 1.0 and r["ppi_keep"]["high"] > limit]
    for r in bad:
        d = r["design"]
        click.echo(f"ABOVE THE LEVEL: rated {d['rated']}, pre-screen {d['prescreen_agreement']}:"
                   f"{d['prescreen_bias']}, spread {d['rater_path_sd']}: false KEEP {r['ppi_keep']['rate']:.4f}")
    sys.exit(1 if bad else 0)


def _cells(rows):
    by = {}
    for r in rows:
        d = r["design"]
        by.setdefault((d["prescreen_agreement"], d["prescreen_bias"], d["rater_path_sd"], d["rated"]), {})[r["drop"]] = r
    return by


def table(rows) -> str:
    lines = ["| pre-screen agreement | bias to assisted | rater × path sd | rated pairs | PPI: false KEEP at margin "
             "(upper bound) | PPI: power (interval) | raters alone: false KEEP at margin | raters alone: power |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (a, b, s, n), drops in _cells(rows).items():
        at, none = drops.get(1.0), drops.get(0.0)
        lines.append(" | ".join([
            f"| {a}", f"{b}", f"{s}", f"{n}",
            "{rate:.4f} (≤ {high:.4f})".format(**at["ppi_keep"]) if at else "–",
            "{rate:.3f} ({low:.3f}–{high:.3f})".format(**none["ppi_keep"]) if none else "–",
            "{rate:.4f}".format(**at["rated_keep"]) if at else "–",
            "{rate:.3f}".format(**none["rated_keep"]) if none else "–"]) + " |")
    return "\n".join(lines)


def needed(rows, power: float, per_pair: int) -> str:
    """Per pre-screen and spread: the fewest rated pairs of the grid (linear interpolation between grid points) whose
    power reaches `power`, with PPI and with the raters alone, and the ratings that takes."""
    groups = {}
    for (a, b, s, n), drops in _cells(rows).items():
        if 0.0 in drops:
            groups.setdefault((a, b, s), []).append((n, drops[0.0]["ppi_keep"]["rate"], drops[0.0]["rated_keep"]["rate"]))

    def cross(points):
        points = sorted(points)
        for (n0, p0), (n1, p1) in zip(points, points[1:]):
            if p0 >= power:
                return n0
            if p1 >= power:
                return n0 + (n1 - n0) * (power - p0) / (p1 - p0)
        return points[0][0] if points and points[0][1] >= power else None

    lines = [f"| pre-screen agreement | bias to assisted | rater × path sd | rated pairs to {power:.0%} power, PPI "
             f"(ratings) | raters alone (ratings) |", "| --- | --- | --- | --- | --- |"]
    for (a, b, s), pts in groups.items():
        with_ppi = cross([(n, p) for n, p, _ in pts])
        alone = cross([(n, q) for n, _, q in pts])

        def fmt(v):
            return "beyond the grid" if v is None else f"{v:.0f} ({v * per_pair:.0f})"

        lines.append(f"| {a} | {b} | {s} | {fmt(with_ppi)} | {fmt(alone)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
