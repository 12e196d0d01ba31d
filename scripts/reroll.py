"""What a pool added after a look could do to the verdict under the old ranking: python scripts/reroll.py

A model, not the gate: one criterion, a fixed design of --planned pairs judged by a normal interval on the pair
differences (-1, 0, +1; variance about 0.28, the README scenario's), true difference exactly at -margin, so every KEEP is
a false KEEP. The organiser looks once, after --look pairs of the queue's order are rated, and when the look's lower
end is below -margin adds a pool of --added pairs to the first pool's --pool.

- Old ranking (a later pool's pairs ranked uniformly on the first pool's scale): the head of the order is now the
  lowest ranks of both pools, pool / (pool + added) of it from the first, so the rated pairs beyond that share of
  the plan leave the decision sample and fresh pairs take their place. The part of the sample the look showed to be bad is partly
  re-drawn.
- Rating epochs (store.rank_epoch): the later pool follows every earlier pair; the decision sample is the first
  pool's head whatever the organiser does, so its false-KEEP rate is the fixed design's.

Prints both rates with 95% Monte-Carlo intervals.
"""

from __future__ import annotations

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--studies", default=200_000, show_default=True, help="simulated studies")
@click.option("--planned", default=1675, show_default=True, help="planned pairs (the decision sample)")
@click.option("--pool", default=5000, show_default=True, help="the first pool's pairs")
@click.option("--added", default=5000, show_default=True, help="the pairs of the pool the organiser adds")
@click.option("--look", "looks", default="1000,1200,1500", show_default=True,
              help="rated pairs at the organiser's look, comma-separated: one study set per value")
@click.option("--margin", default=0.05, show_default=True)
@click.option("--seed", default=1, show_default=True)
def main(studies: int, planned: int, pool: int, added: int, looks: str, margin: float, seed: int) -> None:
    import numpy as np

    look_at = [int(v) if v.strip().isdigit() else -1 for v in looks.split(",")]
    for v, look in zip(looks.split(","), look_at):
        if not 0 < look <= planned:
            raise click.BadParameter(f"{v!r} is not a whole number between 1 and --planned {planned}", param_hint="--look")
    rng = np.random.default_rng(seed)
    z = 1.959963984540054
    p_better, p_worse = 0.115, 0.115 + margin  # mean -margin, variance about 0.28

    def differences(n: int):
        u = rng.random((studies, n))
        return (u < p_better).astype(np.int8) - ((u >= p_better) & (u < p_better + p_worse)).astype(np.int8)

    def lower(x):
        return x.mean(1) - z * x.std(1, ddof=1) / np.sqrt(x.shape[1])

    def rate(keep):
        p = float(keep.mean())
        half = z * (p * (1 - p) / studies) ** 0.5
        return f"{p:.4f} ({p - half:.4f}-{p + half:.4f})"

    first = differences(planned).astype(float)  # the first pool's head, in the queue's order
    kept_old = round(planned * pool / (pool + added))  # one scale of ranks: the first pool's share of the new head
    mixed = np.concatenate([first[:, :kept_old], differences(planned - kept_old)], 1)
    fixed = lower(first) >= -margin
    mixed_keep = lower(mixed) >= -margin
    click.echo(f"{studies} studies, {planned} planned pairs, true difference -{margin} (every KEEP is false), "
               f"one-sided level 0.025")
    click.echo("| look after | old ranking: false KEEP | rating epochs: false KEEP |")
    click.echo("| --- | --- | --- |")
    for look in look_at:
        adds = lower(first[:, :look]) < -margin
        click.echo(f"| {look} | {rate(np.where(adds, mixed_keep, fixed))} | {rate(fixed)} |")


if __name__ == "__main__":
    main()
