"""Measuring both paths: the compatibility check, one run, the benchmark (and its worker process), the tuning sweep."""

from __future__ import annotations

import json
import sys

import click

from ..errors import EvalkitError
from ..records import GenerationPath
from . import cli
from .common import config_option, csv_of, db_file, db_option, fail_clearly, load_cfg


@cli.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
@fail_clearly
def check(config_path, as_json):
    """Compatibility record: versions, device, dtype, digests, tokenizers, and the verdict.

    Verdicts: same_tokenizer, different_tokenizer (Universal Assisted Generation), or not_approved
    (then only the ordinary path runs). Exit code 0 when approved, 2 when not approved; 1 for a config or model
    folder evalkit cannot use, e.g. one without tokenizer files or weights, or with a safetensors file cut short
    (each header is read, not the weights).
    """
    from ..generation.models import check_compat

    rec = check_compat(load_cfg(config_path))
    if as_json:
        click.echo(json.dumps(rec.to_json(), indent=2, ensure_ascii=False))
    else:
        v = rec.versions
        click.echo(f"python {v['python']}  torch {v['torch']}  transformers {v['transformers']}  accelerate {v['accelerate']}")
        click.echo(f"device {rec.device}  dtype {rec.dtype}  quantization {rec.quantization}")
        for role, r in (("target", rec.target), ("draft", rec.draft)):
            if r is None:
                click.echo(f"{role}: not loaded")
                continue
            t = r.tokenizer or {}
            click.echo(
                f"{role}: {r.folder}\n  weights {r.weights_digest}  vocab_size {r.vocab_size}  "
                f"tokenizer vocab {t.get('vocab_hash')} ({t.get('vocab_len')})  special {t.get('special_ids')}  "
                f"chat template {t.get('chat_template_hash')}"
                + (f"\n  architecture {r.architecture}" if r.architecture else "")
                + (f"  layers {', '.join(f'{n} {k}' for k, n in r.layer_types.items())}" if r.layer_types else "")
            )
        click.echo(f"verdict: {rec.verdict}")
        for reason in rec.reasons:
            click.echo(f"  - {reason}")
    sys.exit(0 if rec.approved else 2)


class PathChoice(click.Choice):
    """The registered paths one can ask to run (evalkit.generation.registry), read when the option is used."""

    def __init__(self):
        super().__init__([])

    @property
    def choices(self):
        from ..generation.registry import choices

        return choices()

    @choices.setter
    def choices(self, _value):  # click.Choice.__init__ sets it; the registry decides
        pass


@cli.command()
@config_option
@db_option
@click.option("--prompt", "prompt_id", default="writing-01", show_default=True, help="Prompt id.")
@click.option("--path", "path", type=PathChoice(), default=GenerationPath.ASSISTED.value, show_default=True,
              help="The generation path (ordinary, assisted, prompt_lookup, or any registered path).")
@click.option("--seed", type=int, default=None, help="Seed, 0 to 2**32 - 1 (default: decoding.seed).")
@click.option("--batch-size", type=int, default=None,
              help="Send the prompt this many times in one generate() call, left-padded (default: decoding.batch_size, "
                   "1). The ordinary path only: Transformers runs assisted generation one request at a time; compare "
                   "batches with `evalkit bench --batch-sizes`.")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
@fail_clearly
def run(config_path, db_path, prompt_id, path, seed, batch_size, as_json):
    """Run one prompt through one path, store and print the record(s).

    An assisted failure prints two records: the failure and its separate fallback.
    """
    from dataclasses import asdict

    from ..generation.single import run_one

    records = run_one(load_cfg(config_path), db_file(db_path), prompt_id, path, seed=seed, batch_size=batch_size)
    if as_json:
        click.echo(json.dumps([asdict(r) for r in records], ensure_ascii=False, indent=2))
        return
    for r in records:
        click.echo(f"[{r.path}] id={r.id} status={r.status}" + (f" batch={r.batch_size}" if r.batch_size > 1 else ""))
        if r.status == "failed":
            click.echo(f"  failed at stage {r.error_stage}: {r.error_class}: {r.error_message}")
            continue
        click.echo(r.text)
        click.echo(
            f"  {r.new_tokens} tokens, stop={r.stop_reason}, generate() {r.generate_seconds:.3f} s, "
            f"decode {r.decode_seconds:.4f} s, target passes {r.target_passes}"
            + (f", drafted {r.draft_proposed} accepted {r.draft_accepted}" if r.draft_proposed is not None else "")
            + (f", total wait {r.total_wait_seconds:.3f} s (failure + fallback)" if r.total_wait_seconds else "")
        )


@cli.command()
@config_option
@db_option
@click.option("--reps", type=int, default=None, help="Timed repetitions per prompt per path per round (default: bench.reps, 5).")
@click.option("--rounds", type=int, default=None,
              help="Rounds, each path in a fresh process per round, ABBA order (default: bench.rounds, 4; even, at least "
                   "2); the speed-up's interval takes the round as its unit, so more rounds narrow it. A study's "
                   "verdict weighs only the first speed_rounds rounds of its pair (the gate, 4 by default), in the "
                   "order stored: rounds after them are reported, not deciding.")
@click.option("--decoding", type=click.Choice(["greedy", "sample"]), default=None, help="Override decoding.mode.")
@click.option("--prompt", "prompt_ids", multiple=True, help="Limit to these prompt ids (repeatable).")
@click.option("--batch-sizes", default=None, callback=csv_of(int),
              help="Also measure the ordinary path at these batch sizes (e.g. 1,2,4,8; default: bench.batch_sizes) beside "
                   "assisted at batch 1, and name the batch size from which ordinary's total throughput wins; sizes "
                   "holding no batch above 1 are refused, here and in bench.batch_sizes.")
@click.option("--json", "as_json", is_flag=True, help="Print {summary, runs, batch_runs} as JSON.")
@fail_clearly
def bench(config_path, db_path, reps, rounds, decoding, prompt_ids, batch_sizes, as_json):
    """Benchmark ordinary vs assisted by the protocol: each path in its own process, ABBA rounds.

    Stores every raw run; prints medians, IQR, tokens/s, the speed-up (each prompt's median ordinary /
    median assisted seconds, then the median over prompts) with a 95% CI over comparable outputs only (the pair
    bootstrap and Student's t over the rounds' own speed-ups, whichever is wider: a process's drift moves all its
    runs), the tokens/s ratio over every matched pair beside it, identical-output share, acceptance, tokens per
    target pass, and the theoretical speed-up beside the measured one. Every other path the config switches on (prompt lookup:
    assistant.prompt_lookup_num_tokens > 0) is measured too and compared with ordinary on its own line, never
    mixed with assisted's figures. Under `accelerate launch` the prompts are split
    between the processes (each on its own device); timings of different device kinds never pool.

    With --batch-sizes the ordinary process also runs batched calls (the benchmark's prompts in turn, padded on
    the left) and the summary gives, per batch size, seconds per request, tokens/s per request and total tokens/s
    with intervals against assisted at batch 1 (Transformers runs assisted one request at a time).

    Runs are stored together once every round has run: a bench stopped before (Ctrl-C: exit status 130) stores
    none, and leaves no empty experiment or worker files behind.

    The verdict's speed condition weighs the first rounds of the study's pair that the gate's speed_rounds plans
    (4 by default: one bench with the default --rounds), in the order stored, and nothing else (speed_source):
    re-running bench after them adds rounds that are reported as not deciding, and so is the pair pool's figure
    before them, so looking after each run, or at the pool's figure first, and stopping on a pass is no search.
    Only a bench on the device kind the gate's speed_device fixes (by default the kind the study's pool ran on)
    decides, with the models placed as the pool's were: a target split by models.device_map (part offloaded to the
    CPU) or a draft on another device (models.draft_device) is other hardware than a pair wholly on one device, and
    the other way round. One on another device or placement is reported, never deciding (its batch figure too), and
    bench says so before its rounds run where the config fixes the placement. Where the study's pool recorded no
    device (an older evalkit's), no bench decides under speed_device = "pool": bench says so and how to fix it.
    """
    from ..generation.bench import bench_at, format_summary

    # the bar goes to stderr, so it stays on with --json whenever a person is watching the terminal
    try:
        done = bench_at(load_cfg(config_path), db_file(db_path), reps=reps, rounds=rounds, decoding=decoding,
                        prompts=list(prompt_ids),
                        batch_sizes=batch_sizes, progress=sys.stderr.isatty() or not as_json,
                        echo=lambda m: click.echo(m, err=True))
    except KeyboardInterrupt:  # the bench said what it kept: that is the last line, not click's "Aborted!"
        sys.exit(130)
    if done is None:  # a non-main process under accelerate: the main process reports
        return
    summary, document = done
    click.echo(json.dumps(document, ensure_ascii=False, indent=2) if as_json else format_summary(summary))


@cli.command()
@config_option
@db_option
@click.option("--tokens", default="3,5,8,12", show_default=True, callback=csv_of(int), help="num_assistant_tokens values.")
@click.option("--schedules", default="constant,heuristic", show_default=True, callback=csv_of(str), help="num_assistant_tokens_schedule values.")
@click.option("--thresholds", default="0,0.4", show_default=True, callback=csv_of(float), help="assistant_confidence_threshold values.")
@click.option("--reps", type=int, default=2, show_default=True, help="Repetitions per prompt per trial.")
@click.option("--decoding", type=click.Choice(["greedy", "sample"]), default="greedy", show_default=True,
              help="greedy gives every trial the same tokens, so only the speed differs.")
@click.option("--prompt", "prompt_ids", multiple=True, help="Limit to these prompt ids (repeatable).")
@fail_clearly
def tune(config_path, db_path, tokens, schedules, thresholds, reps, decoding, prompt_ids):
    """Sweep draft length, schedule and confidence threshold; store every trial; print the best
    setting with its speed-up (seconds per token) against Transformers' default assisted settings
    measured in the same run. Then put the winner in the config and confirm with `evalkit bench`."""
    from ..generation.tune import format_tune, tune_at

    for option, values in (("--tokens", tokens), ("--schedules", schedules), ("--thresholds", thresholds)):
        if not values:  # an empty sweep would report Transformers' default as the best setting
            raise EvalkitError(f"{option} gives no value to try", f"pass {option} with comma-separated values, or "
                                                                  "leave it out for the defaults")
    result = tune_at(load_cfg(config_path), db_file(db_path), decoding=decoding, prompts=list(prompt_ids), tokens=tokens,
                     schedules=schedules, thresholds=thresholds, reps=reps)
    click.echo(format_tune(result))


@cli.command("bench-worker", hidden=True)
@click.option("--config-json", required=True, type=click.Path(dir_okay=False), help="The parent's config, as JSON.")
@click.option("--path", required=True, help="The path this process measures.")
@click.option("--round", "round_no", type=int, required=True, help="1, 2, ... (ABBA: even rounds in the swapped order).")
@click.option("--order", type=int, required=True, help="Position of this process within its round.")
@click.option("--prompts", default="", help="Comma-separated prompt ids (default: all).")
@click.option("--rank", type=int, default=0, help="The accelerate rank that started this worker.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Where the results go, as JSON.")
@click.option("--plugins", default="", help="Comma-separated modules that register generation paths outside evalkit.")
def bench_worker(config_json, path, round_no, order, prompts, rank, out, plugins):
    """One benchmark worker process (internal: `evalkit bench` starts one per path and round)."""
    from pathlib import Path

    from ..generation.bench.worker import work

    work(Path(config_json), path, round_no, order, [p for p in prompts.split(",") if p], rank, Path(out), sys.stdout,
         [m for m in plugins.split(",") if m])
