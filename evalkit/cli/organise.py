"""Running a study: plan its size, build the pair pool, prepare and serve the rating app, invite raters, build the
offline demo pair."""

from __future__ import annotations

import json

import click

from ..errors import EvalkitError
from . import cli
from .common import config_option, csv_of, db_file, db_option, fail_clearly, load_cfg, open_study_db


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
@click.option("--second-rating-share", type=float, default=None,
              help="With 1 rating per pair: share of pairs rated twice (default: the gate's second_rating_share).")
@click.option("--raters", type=int, default=None,
              help="Raters in the study (default: the database's, at least the gate's min_raters, else 10).")
@click.option("--pair-correlation", type=float, default=None,
              help="Correlation of a pair's two outputs' latent quality (default: the pilot's, else 0).")
@click.option("--rater-sd", type=float, default=None,
              help="Spread of raters' leniency, logit scale (default: the pilot's, else 0).")
@click.option("--rater-path-sd", type=float, default=None,
              help="Spread of raters' extra leniency towards assisted outputs, logit scale (default: the pilot's, else 0).")
@click.option("--studies", type=int, default=400, show_default=True, help="Simulated studies per size in the search (at least 50; 20 with --compare).")
@click.option("--confirm", type=int, default=2000, show_default=True,
              help="Fresh simulated studies that confirm the power and check the false-KEEP rate (at least 2000; with "
                   "--compare, of the recommended design and the marked roster).")
@click.option("--max-pairs", type=int, default=None,
              help="The largest size the search and its confirmation try (default 20000): a plan that needs more is refused, naming the "
                   "estimate that drives the size; with --compare, each design's search and confirmation stop there "
                   "and a design that needs more is reported so in its row.")
@click.option("--interval", type=click.Choice(["t with score floor", "union with tango"]), default=None,
              help="The interval the simulated studies are judged on (default: the gate's `interval`).")
@click.option("--compare", is_flag=True,
              help="Compare the designs (interval, PPI, looks, 1/2/3 ratings per pair) by expected ratings and "
                   "rater-hours at --power and their false-KEEP rate; recommend the cheapest that holds, with its "
                   "gate lines.")
@click.option("--pool", type=int, default=None,
              help="With --compare: pooled pairs the pre-screen judges (default: the database's pool, at least 5000); "
                   "more lower what PPI designs need, at generation time, not rater time.")
@click.option("--prescreen-agreement", type=float, default=0.9, show_default=True,
              help="With --compare: the pre-screen's agreement with one rater.")
@click.option("--prescreen-bias", type=float, default=0.0, show_default=True,
              help="With --compare: the pre-screen's bias towards assisted (pass rate on assisted outputs).")
@click.option("--minutes-per-rating", type=float, default=None,
              help="With --compare: minutes a rating takes, at most 120 (default: the raters' measured median, "
                   "else 1).")
@click.option("--look-every", type=int, default=50, show_default=True,
              help="With --compare: ratings between looks for the sequential designs.")
@click.option("--rosters", default=None, metavar="N,N", callback=csv_of(int),
              help="With --compare: numbers of raters to size the recommended design for again, sharing the same "
                   "work (default: twice and four times --raters for a claim about raters in general; none for "
                   "these raters).")
@click.option("--onboarding-minutes", type=float, default=None,
              help="With --compare: a rater's minutes before their first rating, counted per rater in a roster's "
                   "rater-hours (default: 10, stated as assumed).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@fail_clearly
def plan(config_path, db_path, margin, power, pass_rate, raters_per_pair, second_rating_share, raters,
         pair_correlation, rater_sd, rater_path_sd, studies, confirm, max_pairs, interval, compare, pool,
         prescreen_agreement, prescreen_bias, minutes_per_rating, look_every, rosters, onboarding_minutes, as_json):
    """How many rated pairs the fidelity gate needs: the planned_pairs line for the gate file.

    Simulates whole studies through the very analysis the gate runs and reports, per number of
    pairs, how often a study in which assisted truly loses nothing ends with every criterion
    inside the margin; takes the smallest size that reaches --power, confirms it on --confirm
    fresh studies (power with its Monte-Carlo interval), and checks the false-KEEP rate when one
    criterion truly drops by the margin: a plan whose false-KEEP rate exceeds the one-sided
    level beyond Monte-Carlo error is refused (exit status 1, no planned_pairs line). Uses the
    database's pre-screen pass rates, identical-output share (identical pairs are decided without
    raters, so they count in planned_pairs but cost no rating), and from its ratings (a pilot) the
    raters' agreement, the pair correlation and the raters' main and rater x path spreads.
    Run it, and freeze its line in the gate file, before rating starts.

    With --compare: every design (the gate's first one, union with Tango at 3 ratings a pair; the t interval; plus PPI; plus
    group-sequential looks; each with 1 (plus a doubled share), 2 or 3 ratings per pair) is
    sized for --power on --studies simulated studies, at most --max-pairs pairs (a design that needs more is
    reported so in its row), with its expected human ratings and
    rater-hours to a decision (gold pairs' ratings counted) and its false-KEEP rate when a
    criterion drops by the margin; the cheapest design whose error rate holds is recommended,
    confirmed on --confirm fresh studies (its size stepped up 5% at a time while its fresh power
    falls short; a design fresh studies do not bear out gives way to the next cheapest), with
    its gate lines, beside the floor no design can beat (a test that knew every variance
    needs that many expected ratings) and, for a claim about raters in general, the price of
    each roster: the fewest expected ratings any test valid however differently raters judge
    the paths could need (the floor times a bound). The recommended design is then sized again for larger
    rosters (--rosters): for a claim about raters in general more raters sharing the same work
    can need fewer ratings; the roster with the fewest rater-hours, onboarding counted, is marked
    (and confirmed as the recommended design is).
    The gate lines then include planned_raters, which the verdict's notes compare with the
    raters who rate. For a claim about raters in general the recommended design is last sized
    for the claim about these raters only (same roster), to show what the wider claim costs.
    """
    from dataclasses import asdict

    from ..study.plan import format_plan, plan_from_config
    from ..study.plan.comparison import format_comparison

    ctx = click.get_current_context()
    only_compare = [f"--{n.replace('_', '-')}" for n in ("pool", "prescreen_agreement", "prescreen_bias",
                                                          "minutes_per_rating", "look_every", "rosters",
                                                          "onboarding_minutes")
                    if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE]
    if only_compare and not compare:  # silently ignored, they would read as part of the plan printed
        raise EvalkitError(f"{', '.join(only_compare)} only appl{'ies' if len(only_compare) == 1 else 'y'} with "
                           "--compare", "add --compare, or leave them out")
    # and the reverse: --compare sizes every interval and 1, 2 and 3 ratings per pair (docs audit: these two were
    # taken and ignored, the comparison identical with and without them)
    given = {"interval": interval, "raters_per_pair": raters_per_pair}
    ignored = [f"--{n.replace('_', '-')} {given[n]}" for n in given
               if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE]
    if ignored and compare:
        raise EvalkitError(f"{', '.join(ignored)}: --compare compares every interval and 1, 2 and 3 ratings per pair, "
                           "so this does nothing there", "leave it out, or plan without --compare")

    result, gate = plan_from_config(load_cfg(config_path), db_path, margin=margin, power=power, pass_rate=pass_rate,
                                    raters_per_pair=raters_per_pair, raters=raters, pair_correlation=pair_correlation,
                                    rater_sd=rater_sd, rater_path_sd=rater_path_sd, studies=studies, confirm=confirm,
                                    interval=interval, second_rating_share=second_rating_share, compare=compare,
                                    max_pairs=max_pairs,
                                    pool=pool, prescreen_agreement=prescreen_agreement, prescreen_bias=prescreen_bias,
                                    minutes_per_rating=minutes_per_rating, look_every=look_every,
                                    rosters=None if rosters is None else tuple(rosters),
                                    onboarding_minutes=onboarding_minutes)
    if compare:
        if as_json:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=2, default=str))
        else:
            click.echo(format_comparison(result))
        if result.recommended is None:
            raise SystemExit(1)
        return
    if as_json:
        click.echo(json.dumps(result.to_json() | {"gate": asdict(gate)}, ensure_ascii=False, indent=2))
    else:
        click.echo(format_plan(result))
    if result.refused or result.recommended_pairs is None:  # no line to freeze: as the README says, exit 1
        raise SystemExit(1)


@cli.command()
@config_option
@db_option
@click.option("--samples", type=int, default=None, help="Samples per prompt per path (default: pool.samples).")
@click.option("--resume", type=int, default=None, help="Finish an interrupted pool experiment (the id a stopped run printed) with the config it was made with; done items are skipped.")
@click.option("--until-planned", is_flag=True,
              help="Add samples until the study's pool holds its planned pairs plus --reserve, or the gate's "
                   "planned_pool when larger (instead of --samples).")
@click.option("--reserve", type=float, default=None,
              help="With --until-planned: extra pairs beyond the planned ones, as a share of them (default 0.1: 10%; "
                   "pairs skipped by raters or rated by raters the gold check leaves out do not count).")
@click.option("--new-study", "new_study", default=None, metavar="NAME",
              help="Start a new study NAME under the gate file as it is now; its pairs and ratings never mix with "
                   "the earlier studies' (the app then serves it).")
@fail_clearly
def generate(config_path, db_path, samples, resume, until_planned, reserve, new_study):
    """Build the pair pool for blind rating: K samples per prompt per path, random sides stored.

    The pool belongs to a study, decided under the gate frozen when the study's first pool was generated: a
    later run adds pairs to the latest study (new samples, new seeds) and refuses a changed gate file, naming
    both hashes (use --new-study NAME, or a new --db). Adds gold (check) pairs at pool.gold_rate, made from extra
    pooled samples: an extra sample's two outputs, one of them changed by an edit whose effect on the criteria is
    known. Shards over processes and GPUs when started with `accelerate launch -m evalkit generate ...`.
    A run stopped by Ctrl-C (exit status 130), by SIGTERM (a job scheduler's stop: 143) or an error prints the
    `--resume` line that finishes it, also when
    stopped after its last sample while the gold pairs and the queue's order are made; one stopped before its first
    sample leaves nothing behind (no study, no frozen gate), and one refused before it (a pair `evalkit check` does
    not approve, a --resume whose --db does not exist) creates no database.
    """
    import signal
    import sys

    from ..study.pairs import generate as run_generate

    stopped = []

    def terminated(signum, _frame):  # a scheduler's stop (SIGTERM) ends the run as a Ctrl-C does: what was kept is said
        stopped.append(signum)
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, terminated)
    try:
        lines = run_generate(load_cfg(config_path), db_path, samples, resume, until_planned, reserve, new_study,
                             echo=lambda m: click.echo(m, err=True))
    except KeyboardInterrupt:  # the pool said what it kept and the --resume line: that is the last word, not
        sys.exit(143 if stopped else 130)  # click's "Aborted!"; the shell's status for SIGTERM, or for a Ctrl-C
    finally:
        signal.signal(signal.SIGTERM, before)
    for line in lines:
        click.echo(line)


@cli.command()
@config_option
@db_option
@click.option("--progress-file", type=click.Path(dir_okay=False), default=None,
              help="Also keep a JSON progress snapshot here (the app reads it to show a progress bar).")
@fail_clearly
def prepare(config_path, db_path, progress_file):
    """Build what the rating app needs, now: the demo pair (when the config uses it) and the pair pool.

    `evalkit serve` (and `python app.py`) runs this by itself in a separate process when the database has no
    pairs, and shows its progress on the page; run it yourself to have everything ready before serving.
    """
    from pathlib import Path

    from ..study.preparation import prepare as run_prepare

    path = db_file(db_path)
    n = run_prepare(load_cfg(config_path), path, Path(progress_file) if progress_file else None,
                    echo=lambda m: click.echo(m, err=True))
    click.echo(f"ready: {n} pairs in {path}")


@cli.group("raters")
def raters_group():
    """Who may rate on a local app: invite raters, list them, revoke or re-issue their codes.

    Each rater signs in with a personal code (or the link that carries it), shown once here and
    stored only as a hash. Organiser rights (results at any time, the Live tab when limited to
    organisers) come only from `add --organiser`. On a Hugging Face Space raters sign in with
    Hugging Face instead, and organisers are the usernames in app.organisers; `revoke --hub NAME` revokes
    such an account in a database reachable from here (the Space's Results tab does it there).
    """


def _base_url(config_path, url, db_path=None):
    """The sign-in link's address, checked before a code is made: a code is shown once, so nothing after it may fail.
    Without --url, that of an app running on this database (started on another port than the config's, the link
    named a page that was not there), else the config's."""
    if url:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        try:
            parts.port  # noqa: B018 - raises on a port out of range or not a number
        except ValueError:
            raise EvalkitError(f"--url {url!r}: its port is not a port number (1 to 65535)",
                               "give the address raters open, e.g. --url http://127.0.0.1:7860/") from None
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EvalkitError(f"--url {url!r} is not the app's web address",
                               "give the address raters open, with http:// or https://, e.g. --url "
                               "https://my-org-evalkit.hf.space")
        return url
    app = load_cfg(config_path).app
    from ..study.preparation import serving_address

    return serving_address(db_file(db_path)) or f"http://{app.host}:{app.port or 7860}/"


def _echo_credential(cred, base_url):
    click.echo(f"{cred.identity.role} '{cred.identity.name}': personal code {cred.code}")
    click.echo(f"  sign-in link: {cred.link(base_url)}")
    if note := _every_address_note(base_url):
        click.echo(note)
    click.echo("  (shown once: send it to them privately; `evalkit raters reissue` makes a new one)")


def _every_address_note(base_url: str) -> str:
    """An app listening on every address (--host 0.0.0.0, to serve a network) is at 0.0.0.0 in its own words, an
    address no other machine can open: the link must name this machine as its raters reach it."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    if parts.hostname != "0.0.0.0":
        return ""
    here = f"http://{socket.gethostname()}:{parts.port or 80}/"
    return (f"  note: {parts.hostname} means every address of this machine, and no other machine can open it: send the "
            f"link with this machine's name or address as the raters reach it in its place (e.g. {here}?invite=..., "
            f"if that name resolves for them); --url {here} writes the next links so")


@raters_group.command("add")
@click.argument("name")
@click.option("--organiser", is_flag=True, help="Grant organiser rights (results at any time, the Live tab).")
@config_option
@db_option
@click.option("--url", default=None, help="The app's address for the link (default: that of the app running on "
              "--db, else http://app.host:app.port/).")
@fail_clearly
def raters_add(name, organiser, config_path, db_path, url):
    """Invite NAME: prints their personal code and sign-in link, once."""
    from ..rating import roster as raters

    base = _base_url(config_path, url, db_path)  # first: a bad --url or --config must not cost the new code
    path = db_file(db_path)
    # an empty file (`touch`ed) is as new to SQLite as a missing one: it holds no study either
    new = "it did not exist" if not path.exists() else "it was an empty file" if path.stat().st_size == 0 else ""
    _echo_credential(raters.add(open_study_db(path), name, organiser=organiser), base)
    # the code works only against this file: a mistyped --db would otherwise hand out a code for nothing
    click.echo(f"  database: {path}" + (f" (new: {new}; if the study's is elsewhere, pass its --db)" if new else ""))


@raters_group.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@fail_clearly
def raters_list(db_path, as_json):
    """Every identity: name, role, how it was made, dates, ratings and skips (never a code); then the Hugging Face
    accounts of a Space's database (role and source "hub"): each that rated, skipped or was revoked, with its revoke."""
    from ..rating import roster as raters

    rows = raters.listing(open_study_db(db_path, must_exist=True), hub=True)
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo("no raters yet: `evalkit raters add NAME` invites one")
    for r in rows:
        hub = r["source"] == "hub"
        state = (f"revoked {r['revoked_at']}" + (f" by {r['revoked_by']}" if hub else "") if r["revoked_at"] else
                 f"active again (revoke lifted {r['lifted_at']} by {r['lifted_by']})" if hub and r["lifted_at"] else
                 "active")
        alike = f" (looks like {', '.join(repr(n) for n in r['looks_like'])})" if r["looks_like"] else ""
        click.echo(f"{r['name']:<24} {r['role']:<10} {r['source']:<8} {state:<32} {r['ratings']} ratings, "
                   f"{r['skips']} skips ({'first seen' if hub else 'since'} {r['created_at']}){alike}")
    if any(r["looks_like"] for r in rows):  # an older look-alike key let them in: never merged, so say what to do
        click.echo("names that look alike each keep their own code and ratings; if two are one person, revoke one "
                   "with `evalkit raters revoke 'NAME'`, the name exactly as listed")


@raters_group.command("revoke")
@click.argument("name")
@db_option
@click.option("--hub", is_flag=True, help="NAME is a Hugging Face username rating on a Space (no code to revoke): "
              "its sessions end at their next step and its sign-in is refused.")
@click.option("--lift", is_flag=True, help="With --hub: lift that username's revoke.")
@fail_clearly
def raters_revoke(name, db_path, hub, lift):
    """NAME's code stops working at once, and their open sessions end at their next event; their stored ratings
    stay. With --hub, NAME is a Hugging Face account (the Results tab of the Space does the same)."""
    import getpass

    from ..rating import roster as raters

    try:  # who revoked: the shell's user (a container may have no name for it)
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "?"
    by = f"{user} (command line)" if hub else None
    done = raters.revoke_named(open_study_db(db_path, must_exist=True), name, by, lift)
    if hub:
        name, row, changed = done
        if lift:
            click.echo(f"lifted the revoke of Hugging Face account '{name}' (by {row['revoked_by']} at "
                       f"{row['revoked_at']}): they can sign in and rate again" if changed else
                       f"Hugging Face account '{name}' is not revoked; nothing changed")
        else:
            click.echo(f"revoked Hugging Face account '{name}': its sessions end at their next step, its sign-in is "
                       "refused, and what it holds goes back to the queue (ratings kept)" if changed else
                       f"Hugging Face account '{name}' was already revoked, by {row['revoked_by']} at "
                       f"{row['revoked_at']}; nothing changed")
        return
    who, before = done
    if before:
        click.echo(f"{who.role} '{who.name}' was already revoked at {before}; nothing changed (`evalkit raters "
                   "reissue --restore` gives them a new code)")
        return
    click.echo(f"revoked {who.role} '{who.name}': their code no longer signs in, and their open sessions end at "
               "their next event (ratings kept)")


@raters_group.command("reissue")
@click.argument("name")
@config_option
@db_option
@click.option("--url", default=None, help="The app's address for the link (default: that of the app running on "
              "--db, else http://app.host:app.port/).")
@click.option("--restore", is_flag=True, help="Lift NAME's revoke: without it a revoked rater is refused.")
@fail_clearly
def raters_reissue(name, config_path, db_path, url, restore):
    """A new code for NAME (lost); the old code stops working, and the sessions it opened end. A revoked NAME gets
    one only with --restore."""
    from ..rating import roster as raters

    base = _base_url(config_path, url, db_path)  # first: a bad --url or --config must not revoke the old code
    cred = raters.reissue(open_study_db(db_path, must_exist=True), name, restore=restore)
    if cred.restored_from:
        click.echo(f"restored {cred.identity.role} '{cred.identity.name}': revoked at {cred.restored_from}, "
                   "they can sign in and rate again with the new code")
    _echo_credential(cred, base)


@cli.group("pairs")
def pairs_group():
    """Organiser actions on the study's pairs."""


@pairs_group.command("give-up")
@db_option
@click.option("--pair", "pair_ids", multiple=True, help="A pair the next look waits for that no current rater can "
              "take (repeatable).")
@click.option("--untakeable", is_flag=True, help="Every such pair, as the interim look's note counts them.")
@click.option("--reason", default=None, help="Why (recorded with the give-up).")
@fail_clearly
def pairs_give_up(db_path, pair_ids, untakeable, reason):
    """Give up pairs no current rater can take, so the look they hold back goes on: each keeps its place in the
    queue's order and counts at the worst (-1 for the lower end of each criterion's interval, +1 for the upper),
    never dropped and never at an outcome it does not have. Only pairs the next look waits for, not complete, that
    no current rater can be served; recorded with when and why, and the verdict says how many."""
    from ..aggregate.give_up import give_up

    done = give_up(open_study_db(db_path, must_exist=True), list(pair_ids), reason, untakeable)
    click.echo(f"gave up {len(done.pairs)} pair(s) of {done.study} at {done.at}, each counted at the worst: "
               + ", ".join(done.pairs))
    click.echo(f"a look completed and the decision is stored: {done.decision.verdict.decision}"
               if done.decision is not None else "`evalkit aggregate` shows the look as it stands now")


@cli.command("demo-models")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Folder (default: demo-models in the data folder, results/ or EVALKIT_DATA_DIR; env EVALKIT_DEMO_MODELS).")
@click.option("--force", is_flag=True, help="Rebuild even if a complete build is cached.")
@click.option("--scale", type=click.Choice(["full", "smoke"]), default="full", show_default=True,
              help="smoke: a reduced pair in seconds, for tests (not for a demo).")
@click.option("--manifest", is_flag=True, help="Also print the build's manifest (sizes, seeds, stage seconds) as JSON.")
@fail_clearly
def demo_models(out_dir, force, scale, manifest):
    """Build the offline demo target/draft pair (trained here, deterministic, cached)."""
    from ..generation.models import build_demo

    if out_dir is not None and not out_dir.strip():  # "" would build into the default folder, unasked
        raise EvalkitError("--out is empty", "give a folder, or leave --out out for the default")
    path, built = build_demo(out_dir, force=force, scale=scale)
    click.echo(f"demo pair ready: {path / 'target'} and {path / 'draft'}")
    if manifest:
        click.echo(json.dumps(built, ensure_ascii=False, indent=2))


@cli.command()
@config_option
@db_option
@click.option("--host", default=None, help="Address to bind (default: the config's app.host).")
@click.option("--port", type=int, default=None, help="Port (default: the config's app.port).")
@click.option("--no-prepare", is_flag=True, help="Do not build the pair pool when the database has none.")
@fail_clearly
def serve(config_path, db_path, host, port, no_prepare):
    """Serve the rating app: blind A/B rating, the Live demo and the Results tab.

    When the database has no pairs yet, the page is served at once and the pair pool (and the demo pair, when
    the config uses it) is prepared in a separate process (`evalkit prepare`), its progress on the page. On a
    Hugging Face Space raters sign in with Hugging Face; `python app.py` runs this command there.
    """
    from ..ui.server import serve as run_server

    run_server(load_cfg(config_path), db_file(db_path), host=host, port=port, prepare=not no_prepare)
