"""The `evalkit` command line: a thin shell, one library call per command.

    measure  check, run, bench (and its bench-worker), tune
    study    plan, generate, prepare, serve, raters, demo-models
    decide   fidelity, aggregate, report, export
"""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalkit")
def cli():
    """Does a draft model (assisted generation) make writing requests faster without hurting the content?

    Measure both paths (check, run, bench, tune), plan the rating study (plan), build the blind pair pool
    for raters (generate, prepare), serve the rating app (serve), decide (fidelity, aggregate, report,
    export), invite raters (raters), and build the offline demo model pair (demo-models).
    """


def main(argv: list[str] | None = None):
    return cli(argv)


from . import decide, measure, organise  # noqa: E402,F401  (each module adds its commands to `cli`)
