"""The `evalkit` command line: a thin shell, one library call per command."""

from __future__ import annotations

import functools
import json
import sys

import click

from .errors import EvalkitError


def _fail_clearly(fn):
    """Library errors become one clear message and exit code 1; nothing else is swallowed."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except EvalkitError as e:
            click.echo(f"Error: {e}", err=True)
            sys.exit(1)

    return wrapper


config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), default=None,
    help="Config TOML (default: configs/demo.toml, the offline demo pair; env EVALKIT_CONFIG).",
)
db_option = click.option(
    "--db", "db_path", type=click.Path(dir_okay=False), default=None,
    help="SQLite file (default: results/evalkit.db; env EVALKIT_DB or EVALKIT_DATA_DIR).",
)


def _cfg(config_path):
    from .config import load_config

    return load_config(config_path)


def _db(db_path, must_exist: bool = False):
    from pathlib import Path

    from .locations import db_path as default_db_path
    from .store import open_db

    path = Path(db_path) if db_path else default_db_path()
    if must_exist and not path.exists():  # reading a study: a typo must not become a new, empty database
        raise EvalkitError(f"database {path} does not exist",
                           "pass --db (or set EVALKIT_DB) with the study's database; `evalkit generate` creates one")
    return open_db(path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalkit")
def cli():
    """Does a draft model (assisted generation) make writing requests faster without hurting the content?

    Measure both paths (check, run, bench), plan the rating study (plan), build the blind pair pool
    for raters (generate, prepare), decide (fidelity, aggregate, report, export), invite raters (raters),
    and build the offline demo model pair (demo-models). The rating app is `python app.py`.
    """


@cli.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
@_fail_clearly
def check(config_path, as_json):
    """Compatibility record: versions, device, dtype, digests, tokenizers, and the verdict.

    Verdicts: same_tokenizer, different_tokenizer (Universal Assisted Generation), or not_approved
    (then only the ordinary path runs). Exit code 0 when approved, 2 when not approved.
    """
    from .compat import approved
    from .models import check_compat

    rec = check_compat(_cfg(config_path))
    if as_json:
        click.echo(json.dumps(rec, indent=2, ensure_ascii=False))
    else:
        v = rec["versions"]
        click.echo(f"python {v['python']}  torch {v['torch']}  transformers {v['transformers']}  accelerate {v['accelerate']}")
        click.echo(f"device {rec['device']}  dtype {rec['dtype']}  quantization {rec['quantization']}")
        for role in ("target", "draft"):
            r = rec[role]
            if r is None:
                click.echo(f"{role}: not loaded")
                continue
            t = r["tokenizer"] or {}
            click.echo(
                f"{role}: {r['folder']}\n  weights {r['weights_digest']}  vocab_size {r['vocab_size']}  "
                f"tokenizer vocab {t.get('vocab_hash')} ({t.get('vocab_len')})  special {t.get('special_ids')}  "
                f"chat template {t.get('chat_template_hash')}"
            )
        click.echo(f"verdict: {rec['verdict']}")
        for reason in rec["reasons"]:
            click.echo(f"  - {reason}")
    sys.exit(0 if approved(rec) else 2)


@cli.command()
@config_option
@db_option
@click.option("--prompt", "prompt_id", default="writing-01", show_default=True, help="Prompt id.")
@click.option("--path", "path", type=click.Choice(["ordinary", "assisted", "prompt_lookup"]), default="assisted", show_default=True)
@click.option("--seed", type=int, default=None, help="Seed (default: decoding.seed).")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
@_fail_clearly
def run(config_path, db_path, prompt_id, path, seed, as_json):
    """Run one prompt through one path, store and print the record(s).

    An assisted failure prints two records: the failure and its separate fallback.
    """
    from dataclasses import asdict

    from .models import load_pair
    from .paths import run_path
    from .prompts import load_prompts
    from .store import insert_experiment, insert_generations

    cfg = _cfg(config_path)
    prompt = load_prompts(ids=[prompt_id])[0]
    pair = load_pair(cfg)
    records = run_path(pair, prompt, path, cfg.decoding.seed if seed is None else seed)
    db = _db(db_path)
    exp_id = insert_experiment(db, "run", cfg.to_dict(), pair.compat)
    insert_generations(db, records, exp_id)
    if as_json:
        click.echo(json.dumps([asdict(r) for r in records], ensure_ascii=False, indent=2))
        return
    for r in records:
        click.echo(f"[{r.path}] id={r.id} status={r.status}")
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
@click.option("--decoding", type=click.Choice(["greedy", "sample"]), default=None, help="Override decoding.mode.")
@click.option("--prompt", "prompt_ids", multiple=True, help="Limit to these prompt ids (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print {summary, runs} as JSON.")
@_fail_clearly
def bench(config_path, db_path, reps, decoding, prompt_ids, as_json):
    """Benchmark ordinary vs assisted by the protocol: each path in its own process, ABBA rounds.

    Stores every raw run; prints medians, IQR, tokens/s, the speed-up (each prompt's median ordinary /
    median assisted seconds, then the median over prompts) with a bootstrap 95% CI over comparable
    outputs only, identical-output share, acceptance, tokens per target pass, and the
    theoretical speed-up beside the measured one. Under `accelerate launch` the prompts are split
    between the processes (each on its own device); timings of different device kinds never pool.
    """
    from .bench import bench_json, format_summary, run_bench

    cfg = _cfg(config_path)
    if reps is not None:
        if reps < 1:
            raise EvalkitError(f"--reps {reps} must be at least 1", "pass a positive number")
        cfg.bench.reps = reps
    if decoding:
        cfg.decoding.mode = decoding
    if prompt_ids:
        cfg.bench.prompts = list(prompt_ids)
    from .prompts import load_prompts

    load_prompts(ids=cfg.bench.prompts or None)  # a bad prompt id fails before any file is created
    db = _db(db_path)
    # the bar goes to stderr, so it stays on with --json whenever a person is watching the terminal
    summary = run_bench(cfg, db, progress=sys.stderr.isatty() or not as_json, echo=lambda m: click.echo(m, err=True))
    if summary is None:  # a non-main process under accelerate: the main process reports
        return
    if as_json:
        click.echo(json.dumps(bench_json(db, summary), ensure_ascii=False, indent=2))
    else:
        click.echo(format_summary(summary))


@cli.command()
@config_option
@db_option
@click.option("--samples", type=int, default=None, help="Samples per prompt per path (default: pool.samples).")
@click.option("--resume", type=int, default=None, help="Finish an interrupted pool experiment (its id); done items are skipped.")
@_fail_clearly
def generate(config_path, db_path, samples, resume):
    """Build the pair pool for blind rating: K samples per prompt per path, random sides stored.

    Adds gold (check) pairs of the prompts' reference outputs at pool.gold_rate. Shards over processes and
    GPUs when started with `accelerate launch -m evalkit generate ...`.
    """
    from .pairs import build_pool, distributed_state

    cfg = _cfg(config_path)
    res = build_pool(cfg, db_path, samples=samples, resume=resume, echo=lambda m: click.echo(m, err=True))
    if distributed_state(cfg).is_main_process:
        click.echo(f"experiment {res.experiment_id}: {res.pairs} pairs over {res.prompts} prompts ({res.fallbacks} fell back)"
                   + f", and {res.gold} gold (check) pair{'' if res.gold == 1 else 's'}"
                   + (f"; {res.skipped_done} work items were already done" if res.skipped_done else ""))


def _csv(kind):
    def parse(ctx, param, value):
        try:
            return [kind(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise click.BadParameter(f"expected comma-separated {kind.__name__} values, got {value!r}")

    return parse


@cli.command()
@config_option
@db_option
@click.option("--tokens", default="3,5,8,12", show_default=True, callback=_csv(int), help="num_assistant_tokens values.")
@click.option("--schedules", default="constant,heuristic", show_default=True, callback=_csv(str), help="num_assistant_tokens_schedule values.")
@click.option("--thresholds", default="0,0.4", show_default=True, callback=_csv(float), help="assistant_confidence_threshold values.")
@click.option("--reps", type=int, default=2, show_default=True, help="Repetitions per prompt per trial.")
@click.option("--decoding", type=click.Choice(["greedy", "sample"]), default="greedy", show_default=True,
              help="greedy gives every trial the same tokens, so only the speed differs.")
@click.option("--prompt", "prompt_ids", multiple=True, help="Limit to these prompt ids (repeatable).")
@_fail_clearly
def tune(config_path, db_path, tokens, schedules, thresholds, reps, decoding, prompt_ids):
    """Sweep draft length, schedule and confidence threshold; store every trial; print the best
    setting with its speed-up (seconds per token) against Transformers' default assisted settings
    measured in the same run. Then put the winner in the config and confirm with `evalkit bench`."""
    from .tune import format_tune, run_tune

    cfg = _cfg(config_path)
    cfg.decoding.mode = decoding
    if prompt_ids:
        cfg.bench.prompts = list(prompt_ids)
    result = run_tune(cfg, _db(db_path), tokens=tokens, schedules=schedules, thresholds=thresholds, reps=reps)
    click.echo(format_tune(result))


@cli.command()
@click.option("--prompt", "prompt_id", required=True, help="Prompt id the output answers (e.g. writing-01).")
@click.option("--json", "as_json", is_flag=True, help="Print {criterion id: {pass, evidence}} as JSON.")
@_fail_clearly
def fidelity(prompt_id, as_json):
    """Rule-based fidelity pre-screen of one output read from standard input.

    Example: echo "资料库周三晚间维护……" | evalkit fidelity --prompt writing-01 --json
    """
    from .fidelity import screen

    text = sys.stdin.read()
    verdicts = screen(text, prompt_id)
    if as_json:
        click.echo(json.dumps({c: v.as_json() for c, v in verdicts.items()}, ensure_ascii=False, indent=2))
        return
    for c, v in verdicts.items():
        click.echo(f"{'PASS' if v.passed else 'FAIL'}  {c:<22} {v.evidence}")


@cli.command()
@config_option
@db_option
@click.option("--margin", type=float, default=None, help="Non-inferiority margin (default: the gate file's).")
@click.option("--power", type=float, default=0.8, show_default=True,
              help="Wanted chance of KEEP when assisted truly loses nothing.")
@click.option("--pass-rate", type=float, default=None,
              help="Share of outputs that pass each criterion (default: the database's pre-screen, else 0.8).")
@click.option("--raters-per-pair", type=int, default=None,
              help="Ratings per pair (default: the gate's min_ratings_per_pair).")
@click.option("--raters", type=int, default=None, help="Raters in the study (default: the database's, else 10).")
@click.option("--studies", type=int, default=400, show_default=True, help="Simulated studies per size.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@_fail_clearly
def plan(config_path, db_path, margin, power, pass_rate, raters_per_pair, raters, studies, as_json):
    """How many rated pairs the fidelity gate needs: the planned_pairs line for the gate file.

    Simulates whole studies through the very analysis the gate runs and reports, per number of
    pairs, how often a study in which assisted truly loses nothing ends with every criterion
    inside the margin; recommends the smallest size that reaches --power, and checks the false
    KEEP rate when one criterion truly drops by the margin. Uses the database's pre-screen pass
    rates, identical-output share and rater agreement when it has them. Run it, and freeze its
    line in the gate file, before rating starts.
    """
    from pathlib import Path

    from .gate import read_gate_file
    from .locations import db_path as default_db_path
    from .plan import format_plan, model_from_db, plan_study
    from .store import open_db

    cfg = _cfg(config_path)
    _text, gate = read_gate_file(cfg.gate_file or None)
    path = Path(db_path) if db_path else default_db_path()
    if db_path and not path.exists():
        raise EvalkitError(f"database {path} does not exist", "pass an existing --db, or leave it out to plan from defaults")
    db = open_db(path) if path.exists() else None  # planning never creates a database
    model = model_from_db(db, raters_per_pair or gate.min_ratings_per_pair, pass_rate, raters,
                          prompts=None if db is not None and db["pairs"].count else len(cfg.pool.prompts) or 5)
    result = plan_study(model, gate.margin if margin is None else margin, gate.confidence, power,
                        resamples=cfg.bench.bootstrap, studies=studies)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo(format_plan(result))


@cli.command("aggregate")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print tables, speed, verdict and provenance (versions, digests, hashes, prompts, scope, experiments) as JSON.")
@_fail_clearly
def aggregate_cmd(db_path, as_json):
    """Tables, agreement, speed-up and the release-gate verdict (KEEP / DROP / INSUFFICIENT DATA).

    Pass rates and preferences with cluster-aware intervals (pairs and raters as clusters; the
    per-rating Wilson interval beside them), paired differences per pair with the gate's interval,
    the gate's non-inferiority table on the planned sample, Krippendorff's alpha, the pre-screen's
    Cohen's kappa, timing and memory; all also per prompt. Until the planned number of pairs is
    rated the verdict is INSUFFICIENT DATA and marked as an interim look, not a decision.
    """
    from .aggregate import aggregate, format_text

    db = _db(db_path, must_exist=True)
    agg = aggregate(db)
    if as_json:
        from .provenance import build_provenance

        out = agg.to_json() | {"provenance": build_provenance(db, agg).to_json()}
        click.echo(json.dumps(out, ensure_ascii=False, indent=2, default=str))
    else:
        click.echo(format_text(agg))


@cli.command()
@db_option
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for index.html.")
@_fail_clearly
def report(db_path, out_dir):
    """Write a self-contained HTML report: verdict, provenance, plots and tables.

    The provenance block names versions, device, dtype, model and tokenizer digests, config and gate
    hashes, prompts with their hashes, the sample scope and the experiments (start and end) behind every
    figure; a figure with no stored run behind it is not printed.
    """
    from .report import build_report

    path = build_report(_db(db_path, must_exist=True), out_dir)
    click.echo(f"report written: {path}")


@cli.command()
@db_option
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for parquet files and the dataset card.")
@click.option("--push-to-hub", "repo_id", default=None, help="Also push to this Hub dataset repo (e.g. my-org/evalkit-study).")
@click.option("--public", is_flag=True, help="Make the Hub dataset public (default: private).")
@click.option("--keep-rater-names", is_flag=True, help="Keep rater names (default: salted-hash pseudonyms).")
@_fail_clearly
def export(db_path, out_dir, repo_id, public, keep_rater_names):
    """Export ratings, generations, timing runs, pairs and experiments as a datasets.DatasetDict.

    Saves parquet and a dataset card (README.md, with the provenance block) locally; pushes only with
    --push-to-hub, private unless --public. Reload a table with
    datasets.load_dataset(OUT, "ratings", split="train"): file names carry a content hash, so a
    re-export never reloads rows cached from an earlier one.
    """
    from .export import export as run_export

    ds = run_export(_db(db_path, must_exist=True), out_dir, push_to_hub=repo_id, public=public, keep_rater_names=keep_rater_names)
    counts = ", ".join(f"{k} {len(v)}" for k, v in ds.items())
    click.echo(f"exported to {out_dir}: {counts}" + (f"; pushed to {repo_id} ({'public' if public else 'private'})" if repo_id else ""))


@cli.command()
@config_option
@db_option
@click.option("--progress-file", type=click.Path(dir_okay=False), default=None,
              help="Also keep a JSON progress snapshot here (the app reads it to show a progress bar).")
@_fail_clearly
def prepare(config_path, db_path, progress_file):
    """Build what the rating app needs, now: the demo pair (when the config uses it) and the pair pool.

    `python app.py` runs this by itself in a separate process when the database has no pairs, and shows
    its progress on the page; run it yourself to have everything ready before starting the app.
    """
    from pathlib import Path

    from .locations import db_path as default_db_path
    from .preparation import prepare as run_prepare

    path = Path(db_path) if db_path else default_db_path()
    n = run_prepare(_cfg(config_path), path, Path(progress_file) if progress_file else None,
                    echo=lambda m: click.echo(m, err=True))
    click.echo(f"ready: {n} pairs in {path}")


@cli.group("raters")
def raters_group():
    """Who may rate on a local app: invite raters, list them, revoke or re-issue their codes.

    Each rater signs in with a personal code (or the link that carries it), shown once here and
    stored only as a hash. Organiser rights (results at any time, the Live tab when limited to
    organisers) come only from `add --organiser`. On a Hugging Face Space raters sign in with
    Hugging Face instead, and organisers are the usernames in app.organisers.
    """


def _base_url(config_path, url):
    if url:
        return url
    app = _cfg(config_path).app
    return f"http://{app.host}:{app.port or 7860}/"


def _echo_credential(cred, base_url):
    click.echo(f"{cred.identity.role} '{cred.identity.name}': personal code {cred.code}")
    click.echo(f"  sign-in link: {cred.link(base_url)}")
    click.echo("  (shown once: send it to them privately; `evalkit raters reissue` makes a new one)")


@raters_group.command("add")
@click.argument("name")
@click.option("--organiser", is_flag=True, help="Grant organiser rights (results at any time, the Live tab).")
@config_option
@db_option
@click.option("--url", default=None, help="The app's address for the link (default: http://app.host:app.port/).")
@_fail_clearly
def raters_add(name, organiser, config_path, db_path, url):
    """Invite NAME: prints their personal code and sign-in link, once."""
    from . import raters

    _echo_credential(raters.add(_db(db_path), name, organiser=organiser), _base_url(config_path, url))


@raters_group.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@_fail_clearly
def raters_list(db_path, as_json):
    """Every identity: name, role, how it was made, dates, ratings and skips (never a code)."""
    from . import raters

    rows = raters.listing(_db(db_path, must_exist=True))
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo("no raters yet: `evalkit raters add NAME` invites one")
    for r in rows:
        state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "active"
        click.echo(f"{r['name']:<24} {r['role']:<10} {r['source']:<8} {state:<32} "
                   f"{r['ratings']} ratings, {r['skips']} skips (since {r['created_at']})")


@raters_group.command("revoke")
@click.argument("name")
@db_option
@_fail_clearly
def raters_revoke(name, db_path):
    """NAME's code stops working at once; their stored ratings stay."""
    from . import raters

    who = raters.revoke(_db(db_path, must_exist=True), name)
    click.echo(f"revoked {who.role} '{who.name}': their code no longer signs in (ratings kept)")


@raters_group.command("reissue")
@click.argument("name")
@config_option
@db_option
@click.option("--url", default=None, help="The app's address for the link (default: http://app.host:app.port/).")
@_fail_clearly
def raters_reissue(name, config_path, db_path, url):
    """A new code for NAME (lost, or after a revoke); the old code stops working."""
    from . import raters

    _echo_credential(raters.reissue(_db(db_path, must_exist=True), name), _base_url(config_path, url))


@cli.command("demo-models")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Folder (default: results/demo-models; env EVALKIT_DEMO_MODELS).")
@click.option("--force", is_flag=True, help="Rebuild even if a complete build is cached.")
@_fail_clearly
def demo_models(out_dir, force):
    """Build the offline demo target/draft pair (trained here, deterministic, cached)."""
    from pathlib import Path

    from .demo import build_demo_pair, ensure_demo_pair
    from .locations import demo_models_dir

    out = Path(out_dir) if out_dir else demo_models_dir()
    path = build_demo_pair(out, force=True) if force else ensure_demo_pair(out)
    click.echo(f"demo pair ready: {path / 'target'} and {path / 'draft'}")


def main():
    cli()


if __name__ == "__main__":
    main()
