"""Would a rater bootstrap-t cure the level slip where raters judge the paths differently? python scripts/raterboot.py

A diagnostic, not the gate: one criterion that truly drops by --margin, studies drawn from the plan's own model
(study.plan.model: the README's scenario, pass rate 0.8, rater accuracy 0.95, rater sd 0.5, pair correlation 0.5,
one rating per pair and a 10% share rated twice, raters assigned round-robin) at each rater x path sd. Each study's
estimate is the ratings' mean; its one-sided 97.5% lower end is taken three ways on the raters as clusters (the
linearised ratio estimator's cluster-robust standard error):

- t: Student t on G - 1 degrees of freedom (the correction the shipped interval's rater part rests on);
- bootstrap-t: the 97.5% quantile of the studentised mean over --resamples resamples of whole raters;
- percentile: the 2.5% quantile of the resampled means.

Prints, per rater x path sd, the share of studies whose lower end clears -margin (a pass of a criterion that drops
by the margin: the target is at most 2.5%), with its Monte-Carlo standard error.
"""

from __future__ import annotations

import math

import click


def lower_ends(x, rater, g: int, rng, resamples: int, margin: float) -> tuple[bool, bool, bool]:
    """Whether each lower end (t, bootstrap-t, percentile) of one study clears -margin."""
    import numpy as np

    from evalkit.stats.descriptive import t_quantile

    n_j = np.bincount(rater, minlength=g).astype(float)
    s_j = np.bincount(rater, weights=x, minlength=g)
    mean = s_j.sum() / n_j.sum()
    se = math.sqrt(g / (g - 1) * np.sum((s_j - mean * n_j) ** 2)) / n_j.sum()
    pick = rng.integers(0, g, (resamples, g))
    nb, sb = n_j[pick], s_j[pick]
    means = sb.sum(1) / nb.sum(1)
    ses = np.sqrt(g / (g - 1) * np.sum((sb - means[:, None] * nb) ** 2, 1)) / nb.sum(1)
    studentised = (means - mean) / np.maximum(ses, 1e-12)
    return (mean - t_quantile(0.975, g - 1) * se > -margin,
            mean - float(np.quantile(studentised, 0.975)) * se > -margin,
            float(np.quantile(means, 0.025)) > -margin)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--spreads", default="0,0.75,1.5", show_default=True, help="rater x path sds (logit scale), comma-separated")
@click.option("--raters", default=10, show_default=True, help="raters in each study")
@click.option("--pairs", default=1500, show_default=True, help="pairs in each study")
@click.option("--studies", default=2000, show_default=True, help="simulated studies per spread")
@click.option("--resamples", default=999, show_default=True, help="rater resamples per study")
@click.option("--margin", default=0.05, show_default=True)
@click.option("--seed", default=1, show_default=True)
def main(spreads: str, raters: int, pairs: int, studies: int, resamples: int, margin: float, seed: int) -> None:
    import numpy as np

    from evalkit.progress import bar
    from evalkit.study.plan.model import StudyModel, simulate

    try:
        sds = [float(v) for v in spreads.split(",")]
    except ValueError:
        raise click.BadParameter(f"{spreads!r} is not a comma-separated list of numbers", param_hint="--spreads")
    if raters < 3 or pairs < raters or studies < 1 or resamples < 99 or any(v < 0 for v in sds):
        raise click.BadParameter("need --raters >= 3, --pairs >= --raters, --studies >= 1, --resamples >= 99 and "
                                 "spreads >= 0")
    rng = np.random.default_rng(seed)
    print(f"{raters} raters, {pairs} pairs, {studies} studies per spread, a drop of {margin} (seed {seed}): share of "
          "studies whose lower end clears -margin (target at most 2.5%)")
    print("rater x path sd | t on G - 1 | bootstrap-t | percentile")
    for sd in sds:
        model = StudyModel(pass_rates={"schedule": 0.8}, rater_accuracy=0.95, raters_per_pair=1,
                           second_rating_share=0.1, raters=raters, pair_correlation=0.5, rater_sd=0.5,
                           rater_path_sd=sd)
        sim = simulate(model, pairs, studies, {"schedule": margin}, rng, criteria=("schedule",))
        x, study = sim["x"]["schedule"].astype(float), sim["pair"] // pairs
        rater = sim["rater"] - study * raters
        passes = np.zeros(3)
        for s in bar(iterable=range(studies), desc=f"sd {sd:g}", leave=False):
            keep = study == s
            passes += lower_ends(x[keep], rater[keep], raters, rng, resamples, margin)
        shares = passes / studies
        print(f"{sd:g} | " + " | ".join(f"{p:.2%} (± {math.sqrt(p * (1 - p) / studies):.2%})" for p in shares))


if __name__ == "__main__":
    main()
