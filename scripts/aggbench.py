"""Time `evalkit aggregate` on a synthetic study: python scripts/aggbench.py --ratings 100000

Builds (or reuses) a database with the real schema (evalkit.store.open_db): pairs over the five bundled prompts,
their generations and pre-screen rows, ratings from the planning model (evalkit.study.synthetic), and a benchmark with
timing runs and memory. Then, in a fresh process so that building does not count, it times the library call
`aggregate(db)` and the text and JSON it prints, and reports the peak memory (max RSS) of that process.
Targets on the 2-core build machine: 100,000 ratings <= 2 s, 1,000,000 <= 15 s, peak memory <= 2 GB.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalkit.cli.common import fail_clearly  # noqa: E402  (the library's errors as one clear line, exit 1)


def build(path: Path, ratings: int, raters_per_pair: int, raters: int, bench: bool, seed: int) -> dict:
    from evalkit.store import open_db
    from evalkit.study.synthetic import SyntheticStudy, build_study

    pairs = max(1, ratings // raters_per_pair)
    db = open_db(path)
    info = build_study(db, SyntheticStudy(pairs=pairs, raters_per_pair=raters_per_pair, raters=raters,
                                          unsure_share=0.02, bench=bench, seed=seed))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.conn.close()
    return info


def peak_rss_mb() -> float:
    """This process's peak resident memory. Linux's VmHWM belongs to the process image; ru_maxrss would also count
    the parent's memory from before exec (the builder's), which Linux carries across execve."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: Path, repeats: int) -> dict:
    """Runs in its own process: open, aggregate `repeats` times, format; max RSS of this process."""
    from evalkit.aggregate import aggregate, format_text
    from evalkit.store import open_db

    db = open_db(path)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        agg = aggregate(db)
        format_text(agg)
        json.dumps(agg.to_json(), default=str)
        times.append(time.perf_counter() - start)
    return {"seconds": times, "peak_rss_mb": peak_rss_mb(),
            "decision": str(agg.verdict.decision), "ratings": int(agg.tables["counts"]["current_ratings"][0])}


@click.command(help=__doc__.splitlines()[0], context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--ratings", type=click.IntRange(min=1), default=100_000, show_default=True, help="Current ratings in the synthetic study.")
@click.option("--raters-per-pair", type=click.IntRange(min=1), default=20, show_default=True, help="Ratings per pair (pairs = ratings / this).")
@click.option("--raters", type=click.IntRange(min=1), default=200, show_default=True, help="Raters in the study.")
@click.option("--no-bench", is_flag=True, help="No benchmark: the speed-up comes from the pair pool.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Timed aggregate() calls (the median is reported).")
@click.option("--db", "db", default=None, type=click.Path(dir_okay=False),
              help="Database file to build or reuse (default: a temp folder).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the synthetic study.")
@click.option("--measure", "measure_db", default=None, hidden=True)  # internal: the measuring process
@fail_clearly
def main(ratings, raters_per_pair, raters, no_bench, repeats, db, seed, measure_db) -> None:
    if measure_db:
        print(json.dumps(measure(Path(measure_db), repeats)))
        return
    path = Path(db) if db else Path(tempfile.mkdtemp(prefix="aggbench-")) / "aggbench.db"
    if not path.exists():
        start = time.perf_counter()
        info = build(path, ratings, raters_per_pair, raters, not no_bench, seed)
        print(f"built {path}: {info['pairs']} pairs, {info['ratings']} ratings in {time.perf_counter() - start:.1f} s",
              file=sys.stderr)
    out = subprocess.run([sys.executable, __file__, "--measure", str(path), "--repeats", str(repeats)],
                         capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    res = json.loads(out.stdout)
    times = sorted(res["seconds"])
    print(json.dumps({"ratings": res["ratings"], "aggregate_seconds_median": round(times[len(times) // 2], 3),
                      "aggregate_seconds_all": [round(t, 3) for t in res["seconds"]],
                      "peak_rss_mb": round(res["peak_rss_mb"]), "decision": res["decision"],
                      "cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
