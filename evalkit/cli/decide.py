"""Deciding: the rule pre-screen of one output, the aggregate and its verdict, the report, the export."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import EvalkitError
from . import cli
from .common import db_option, fail_clearly, open_study_db


@cli.command()
@click.option("--prompt", "prompt_id", required=True, help="Prompt id the output answers (e.g. writing-01).")
@click.option("--json", "as_json", is_flag=True, help="Print {criterion id: {pass, evidence}} as JSON.")
@fail_clearly
def fidelity(prompt_id, as_json):
    """Rule-based fidelity pre-screen of one output read from standard input.

    Example: echo "资料库周三晚间维护……" | evalkit fidelity --prompt writing-01 --json
    """
    from ..task.criteria import screen_prompt_output

    text = sys.stdin.read()
    if not text.strip():  # else every criterion is judged on nothing
        raise EvalkitError("no output text on standard input",
                           f"pipe the output in, e.g. evalkit fidelity --prompt {prompt_id} < output.txt")
    verdicts = screen_prompt_output(prompt_id, text)
    if as_json:
        click.echo(json.dumps({c: v.as_json() for c, v in verdicts.items()}, ensure_ascii=False, indent=2))
        return
    for c, v in verdicts.items():
        click.echo(f"{'PASS' if v.passed else 'FAIL'}  {c:<22} {v.evidence}")


study_option = click.option(
    "--study", "study", default=None, metavar="NAME",
    help="The study to show (default: the latest, the one the app serves; `evalkit generate --new-study` names them).")


@cli.command("aggregate")
@db_option
@study_option
@click.option("--json", "as_json", is_flag=True, help="Print tables, speed, verdict and provenance (versions, digests, hashes, prompts, scope, experiments) as JSON.")
@fail_clearly
def aggregate_cmd(db_path, study, as_json):
    """Tables, agreement, speed-up and the release-gate verdict (KEEP / DROP / INSUFFICIENT DATA) of one study.

    Pass rates and preferences with cluster-aware intervals (pairs and raters as clusters; the
    per-rating Wilson interval beside them), paired differences per pair with the gate's interval,
    the gate's non-inferiority table on the planned sample, Krippendorff's alpha, the pre-screen's
    Cohen's kappa, timing and memory, the speed-up over comparable pairs beside the ratio of tokens per
    second over all matched pairs; all also per prompt. Until the planned number of pairs is rated the
    verdict is marked as an interim look, not a decision: INSUFFICIENT DATA, or DROP where the speed-up or
    the memory already fails the gate. The first look that finds
    the planned sample complete stores the decision (as of the rating that completed it); later looks
    show it unchanged, and the data as it is now apart, as "after the decision".
    """
    from ..publish.provenance import aggregate_said

    click.echo(aggregate_said(open_study_db(db_path, must_exist=True), study, as_json))


@cli.command()
@db_option
@study_option
@click.option("--out", "out_dir", type=click.Path(), required=True, help="Folder for index.html.")
@fail_clearly
def report(db_path, study, out_dir):
    """Write a self-contained HTML report of one study: verdict, provenance, plots and tables.

    The provenance block names versions, device, dtype, model and tokenizer digests, config and gate
    hashes, prompts with their hashes, the sample scope and the experiments (start and end) behind every
    figure; a figure with no stored run behind it is not printed.
    """
    from ..publish.report import write_report

    out_dir = named_folder(out_dir)  # before the database is opened: a refusal touches nothing
    written = write_report(open_study_db(db_path, must_exist=True), out_dir, study)
    click.echo(f"report written: {written.path}")
    if written.still_open:
        click.echo(still_open_warning(written.still_open, "the report"), err=True)


@cli.command()
@db_option
@click.option("--out", "out_dir", type=click.Path(), required=True, help="Folder for parquet files and the dataset card.")
@click.option("--push-to-hub", "repo_id", default=None, help="Also push to this Hub dataset repo (e.g. my-org/evalkit-study); needs a Hub token "
                   "(`hf auth login` or HF_TOKEN), checked before anything is written.")
@click.option("--public", is_flag=True, help="Create the Hub dataset public (default: private). An existing repo keeps "
                   "its visibility: the line printed says the one the Hub reports.")
@click.option("--keep-rater-names", is_flag=True, help="Keep rater names (default: salted-hash pseudonyms).")
@click.option("--keep-comments", is_flag=True,
              help="Export what raters typed (comments, skip reasons) as typed; it may name them or others "
                   "(default: left out, the card says how many).")
@click.option("--license", "license_id", default=None,
              help="The license of the dataset, as a Hub license id (e.g. cc-by-4.0), written in the card's header; "
                   "default: not stated. Each export writes the card anew: state it here, not by editing the card.")
@study_option
@click.option("--while-rating", is_flag=True,
              help="Push even though pairs are still open to raters (the export says which side of each pair is which "
                   "path: push it only where no rater can read it). Without it such a push is refused, and with --public "
                   "too. The push is recorded in the database, and the study's later cards, report and provenance "
                   "name it.")
@fail_clearly
def export(db_path, out_dir, repo_id, public, keep_rater_names, keep_comments, license_id, study, while_rating):
    """Export the database as a datasets.DatasetDict: experiments, generations, timing and batch runs, benchmark
    processes, pre-screen answers, pairs, ratings, gold reference outputs, and every study with its frozen decision
    (or none).

    Saves parquet and a dataset card (README.md, with the provenance block) locally; pushes only with
    --push-to-hub, private unless --public. Reload a table with
    datasets.load_dataset(OUT, "ratings", split="train"): file names carry a content hash, so a
    re-export never reloads rows cached from an earlier one. The card carries the verdict of --study
    (default: the latest). Live-tab demo runs are not exported; machine names are salted hashes;
    paths carry no user's name (home folders from ~, other absolute paths cut to their last part);
    raters' comments and skip reasons only with --keep-comments. It writes to the database as any
    reader does: a decision the study has reached is frozen there, and its first export stores the
    salt of its pseudonyms (so a read-only copy may need a writable copy).

    While pairs of the study are still open to raters the export tells their sides: it says so on
    its card and here, and a push needs --while-rating.
    """
    from ..publish.export import export as run_export

    if public and repo_id is None:  # a flag that does nothing would read as if the export were published
        raise EvalkitError("--public only applies with --push-to-hub (the local export is not published)",
                           "add --push-to-hub ORG/NAME, or leave --public out")
    if while_rating and repo_id is None:  # likewise: a local export is written, and says so, while pairs are open
        raise EvalkitError("--while-rating only applies with --push-to-hub (a local export is written while pairs "
                           "are open to raters without it, and says so)",
                           "add --push-to-hub ORG/NAME, or leave --while-rating out")
    out_dir = named_folder(out_dir)  # before the database is opened: a refusal touches nothing
    ds = run_export(open_study_db(db_path, must_exist=True), out_dir, push_to_hub=repo_id, public=public,
                    keep_rater_names=keep_rater_names, study=study, while_rating=while_rating,
                    keep_comments=keep_comments, license=license_id)
    counts = ", ".join(f"{k} {len(v)}" for k, v in ds.items())
    seen = f"{'private' if ds.hub['private'] else 'public'}, as the Hub reports it" if repo_id else ""
    click.echo(f"exported to {out_dir}: {counts}" + (
        "" if not repo_id else f"; {repo_id} ({seen}) already held this export byte for byte: no new commit"
        if ds.hub.get("unchanged") else f"; pushed to {repo_id} ({seen})"))
    if public and ds.hub["private"]:  # create_repo leaves an existing repo as it is: --public did not publish it
        click.echo(f"note: --public did not publish {repo_id}: it exists and is private, and an existing repo keeps its "
                   "visibility; make it public in its Settings on the Hub", err=True)
    if empty := [k for k, v in ds.items() if len(v) == 0]:  # `load_dataset(DIR, name)` would say "not found"
        click.echo(f"tables with no rows, saved with their schema but not loadable by name: {', '.join(empty)}")
    if ds.still_open:
        click.echo(still_open_warning(ds.still_open, "the export"), err=True)


def still_open_warning(still_open: int, what: str) -> str:
    from ..publish import still_open_words

    return "warning: " + still_open_words(still_open, what)


def named_folder(out_dir: str) -> str:
    """--out as given, refused when empty (an empty path would write into the current folder)."""
    if not out_dir.strip():
        raise EvalkitError("--out is empty", "pass the folder to write to, e.g. --out ./out (it is created when missing)")
    if Path(out_dir).is_file():  # refused here, not by click's "is a file", to say what to pass instead
        raise EvalkitError(f"--out '{out_dir}' is a file, not a folder: nothing was written",
                           "pass --out a folder (it is created when missing), e.g. --out ./out; the file is left as it is")
    return out_dir
