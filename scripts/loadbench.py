"""Load benchmark for the rating app: many simulated raters submit ratings at once over the real API.

    python scripts/loadbench.py [--raters 50] [--ratings 1000] [--pairs 20] [--seconds 600] [--json PATH]

Starts the app on 127.0.0.1 (a free port) over a temporary database holding a synthetic pair pool (no
model is needed to rate), then runs one thread per rater, each with its own `gradio_client.Client` (one
browser tab): sign in, then submit / next pair until its share of the ratings is done. Afterwards it
checks that no acknowledged rating was lost or stored twice, and reports:

- server-side submit latency (p50 / p95): the submit event handler's own time inside the server
  (validation, the one-transaction write, the reveal), measured by a timing wrapper installed on the
  handler before launch; the library write alone (`submit_rating`) is reported beside it;
- client round trip (queue wait + transport + handler) and throughput (ratings per second);
- whether server-side p95 meets the target (100 ms on 2 cores).

`tests/test_load.py` runs the same code at the issue's bounded size (50 raters, 1,000 ratings).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import click

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # loopback only: no telemetry calls

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_P95_MS = 100.0
PROMPT_IDS = ("writing-01", "writing-02", "writing-03")


# --- the pool and the app ----------------------------------------------------------------------------

def build_pool(db_file: Path, n_pairs: int) -> list[str]:
    """A database with `n_pairs` blind pairs from synthetic generation records (rating needs no model)."""
    from evalkit.study.gate import gate_snapshot
    from evalkit.records import GenerationPath, GenerationRecord
    from evalkit.store import insert_experiment, insert_pairs, open_db

    db = open_db(db_file)
    try:
        exp = insert_experiment(db, "pool", {}, {}, note="loadbench synthetic pool", gate=gate_snapshot())
        pairs = []
        for i in range(n_pairs):
            prompt = PROMPT_IDS[i % len(PROMPT_IDS)]
            o = GenerationRecord(prompt_id=prompt, path=GenerationPath.ORDINARY, text=f"内部资料库周三晚间维护（普通 {i}）",
                                 new_tokens=40, stop_reason="eos", generate_seconds=2.0, seed=i)
            a = GenerationRecord(prompt_id=prompt, path=GenerationPath.ASSISTED, text=f"内部资料库周三晚间维护（辅助 {i}）",
                                 new_tokens=41, stop_reason="eos", generate_seconds=1.2, seed=i)
            pairs.append({"prompt_id": prompt, "sample": i, "ordinary": o, "assisted": a,
                          "ordinary_side": "AB"[i % 2]})
        return insert_pairs(db, exp, pairs)
    finally:
        db.conn.close()


def app_config(ratings_per_pair: int):
    """Defaults (no model is loaded unless the live tab is used), every rater may rate every pair, no rate limit."""
    from evalkit.config import from_dict

    # open sign-up with no per-client cap: every simulated rater comes from 127.0.0.1
    return from_dict({"app": {"ratings_per_pair": ratings_per_pair, "max_submissions_per_minute": 0,
                              "signup": "open", "signups_per_client_per_hour": 0, "signups_per_client_per_day": 0,
                              "pairs_held_per_client": 0}}, "<loadbench>")


@dataclass
class Timings:
    """Seconds, appended from the server's worker threads (list.append is atomic)."""

    handler: list[float] = field(default_factory=list)  # the whole submit event handler
    library: list[float] = field(default_factory=list)  # evalkit.rating.queue.submit_rating alone


def _timed(fn, into: list[float]):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - t0)

    return wrapper


@contextlib.contextmanager
def serve(cfg, db_file: Path, timings: Timings):
    """The app as `app.py` builds it, on 127.0.0.1 in this process, with timing wrappers on the submit handler
    and the library's submit_rating (the app's own code is not changed); yields the URL."""
    import evalkit.ui.rate as rate
    from evalkit.ui import build_app
    from evalkit.ui.server import serving

    original = rate.submit_rating
    rate.submit_rating = _timed(original, timings.library)  # the handler looks it up at call time
    try:
        demo = build_app(cfg, db_file, space=False)
        (submit_fn,) = [f for f in demo.fns.values() if f.api_name == "submit"]
        submit_fn.fn = _timed(submit_fn.fn, timings.handler)
        with serving(demo) as url:
            yield url
    finally:
        rate.submit_rating = original


class _TimingFile(list):
    """A list whose appends also go, one line each, to a file another process reads afterwards."""

    def __init__(self, f, kind: str, lock: threading.Lock):
        super().__init__()
        self.f, self.kind, self.lock = f, kind, lock

    def append(self, seconds: float) -> None:
        with self.lock:
            self.f.write(f"{self.kind}\t{seconds:.6f}\n")
            self.f.flush()


def serve_forever(db_file: Path, port: int, ratings_per_pair: int, timings_file: Path) -> None:
    """Server-process mode: the instrumented app until killed, timings streamed to `timings_file`."""
    lock = threading.Lock()
    with open(timings_file, "a", encoding="utf-8") as f:
        timings = Timings(handler=_TimingFile(f, "handler", lock), library=_TimingFile(f, "library", lock))
        import evalkit.ui.rate as rate
        from evalkit.ui import build_app, launch

        rate.submit_rating = _timed(rate.submit_rating, timings.library)
        demo = build_app(app_config(ratings_per_pair), db_file, space=False)
        (submit_fn,) = [fn for fn in demo.fns.values() if fn.api_name == "submit"]
        submit_fn.fn = _timed(submit_fn.fn, timings.handler)
        launch(demo, server_name="127.0.0.1", server_port=port, quiet=True)  # blocks until killed


def read_timings(timings_file: Path) -> Timings:
    t = Timings()
    for line in timings_file.read_text(encoding="utf-8").splitlines():
        kind, _, value = line.partition("\t")
        getattr(t, kind).append(float(value))
    return t


def wait_until_serving(url: str, proc=None, seconds: float = 90) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} before serving")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not start serving in {seconds:.0f} s")
        time.sleep(0.3)


@contextlib.contextmanager
def serve_process(db_file: Path, ratings_per_pair: int, timings: Timings, log_file: Path):
    """The instrumented app in its own process (its own interpreter lock: on 2 cores the simulated raters
    get the other core); yields the URL, then stops it and fills `timings` from what it wrote."""
    import subprocess

    from evalkit.ui.server import free_port

    port = free_port()
    timings_file = db_file.with_suffix(".timings")
    timings_file.write_text("")
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve-db", str(db_file), "--serve-port", str(port),
             "--serve-ratings-per-pair", str(ratings_per_pair), "--timings-file", str(timings_file)],
            stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT),
            env=dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1"),
        )
        try:
            url = f"http://127.0.0.1:{port}/"
            wait_until_serving(url, proc)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
    got = read_timings(timings_file)
    timings.handler.extend(got.handler)
    timings.library.extend(got.library)


# --- the raters --------------------------------------------------------------------------------------

def submit_args(comment: str, preference: str = "A") -> list:
    """The submit endpoint's inputs, in the form's order: every criterion for A, for B, preference, comment."""
    from evalkit.ui.rate import FORM_KEYS

    form = {k: ("pass" if k.startswith("a_") else "fail") for k in FORM_KEYS[:-2]}
    form |= {"preference": preference, "comment": comment}
    return [form[k] for k in FORM_KEYS]


def sign_in(client, rater: str, code: str = "") -> str:
    """Sign in (open sign-up with a new name, or a personal code); returns the rater's personal code."""
    import re

    screen = client.predict("" if code else rater, "", code, api_name="/sign_in")
    found = [m.group(1) for v in screen if isinstance(v, str) for m in [re.search(r"`(\d+\.[A-Za-z0-9_-]+)`", v)] if m]
    return found[0] if found else code


def new_client(url: str, attempts: int = 5):
    from gradio_client import Client

    for i in range(attempts):
        try:
            return Client(url, verbose=False, analytics_enabled=False, download_files=False, ssl_verify=False,
                          httpx_kwargs={"timeout": 120})
        except Exception:  # noqa: BLE001 - the server is busy accepting 50 clients at once: retry, bounded
            if i == attempts - 1:
                raise
            time.sleep(0.5 * (i + 1))


@dataclass
class RaterResult:
    rater: str
    acked: list[str] = field(default_factory=list)  # comments of acknowledged submissions (unique per rating)
    round_trips: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ran_out: bool = False  # the app said no pairs were left for this rater


def rate_many(url: str, rater: str, n: int, deadline: float, start: threading.Barrier | None = None) -> RaterResult:
    """One simulated rater (one browser tab): sign in, then submit and move on, n times or until the deadline."""
    res = RaterResult(rater)
    try:
        client = new_client(url)
        if start is not None:
            start.wait(timeout=max(1.0, deadline - time.monotonic()))
        sign_in(client, rater)
        for k in range(n):
            if time.monotonic() > deadline:
                res.errors.append("deadline reached")
                break
            comment = f"load {rater} #{k}"
            t0 = time.perf_counter()
            client.predict(*submit_args(comment, ("A", "B", "tie")[k % 3]), api_name="/submit")
            res.round_trips.append(time.perf_counter() - t0)
            res.acked.append(comment)  # returned without error: the app acknowledged it as stored
            if k + 1 < n:
                screen = client.predict(api_name="/next_pair")
                if any(isinstance(v, str) and ("No pairs left" in v or "全部完成" in v) for v in screen):
                    res.ran_out = True
                    break
    except Exception as e:  # noqa: BLE001 - recorded and reported; the check below fails on it
        res.errors.append(f"{type(e).__name__}: {e}")
    return res


def run_raters(url: str, raters: int, ratings: int, seconds: float) -> list[RaterResult]:
    """`raters` threads share `ratings` submissions (as evenly as possible), bounded by `seconds`."""
    deadline = time.monotonic() + seconds
    shares = [ratings // raters + (1 if i < ratings % raters else 0) for i in range(raters)]
    start = threading.Barrier(raters)
    results: list[RaterResult | None] = [None] * raters

    def work(i: int):
        results[i] = rate_many(url, f"rater-{i:03d}", shares[i], deadline, start)

    threads = [threading.Thread(target=work, args=(i,), name=f"rater-{i}", daemon=True) for i in range(raters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()) + 30)
    return [r if r is not None else RaterResult(f"rater-{i:03d}", errors=["thread did not finish"])
            for i, r in enumerate(results)]


# --- checks and numbers ------------------------------------------------------------------------------

def check_store(db_file: Path, results: list[RaterResult]) -> dict:
    """Every acknowledged rating is stored, exactly once; nothing stored that was not acknowledged."""
    import sqlite3

    conn = sqlite3.connect(db_file)
    try:
        stored = conn.execute("SELECT rater, comment FROM current_ratings").fetchall()
        all_rows = conn.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
        twice = conn.execute(
            "SELECT COUNT(*) FROM (SELECT rater, pair_id FROM ratings WHERE supersedes IS NULL "
            "GROUP BY rater, pair_id HAVING COUNT(*) > 1)").fetchone()[0]
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    acked = {(r.rater, c) for r in results for c in r.acked}
    n_acked = sum(len(r.acked) for r in results)
    stored_set = set(stored)
    return {
        "acknowledged": n_acked,
        "stored_current": len(stored),
        "stored_rows": all_rows,
        "lost": sorted(acked - stored_set)[:20],
        "n_lost": len(acked - stored_set),
        "unacknowledged_stored": len(stored_set - acked),
        "duplicate_comments": len(stored) - len(stored_set),
        "rater_pair_twice": twice,
        "acked_unique": len(acked) == n_acked,
        "integrity_check": integrity,
    }


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 100])."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 100)) - 1))
    return s[k]


def ms(x: float | None) -> float | None:
    return None if x is None else round(1000 * x, 2)


def run(raters: int = 50, ratings: int = 1000, pairs: int = 20, seconds: float = 600.0,
        workdir: Path | None = None, in_process: bool = False) -> dict:
    """Build the pool, serve the app (its own process unless `in_process`), run the raters, check the store;
    return every number."""
    per_rater = -(-ratings // raters)
    if pairs < per_rater:
        raise SystemExit(f"--pairs {pairs} is too few: each rater needs {per_rater} pairs for {ratings} ratings")
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evalkit-loadbench-")))
        db_file = workdir / "load.db"
        build_pool(db_file, pairs)
        timings = Timings()
        server = (serve(app_config(ratings_per_pair=raters), db_file, timings) if in_process  # every rater can
                  else serve_process(db_file, raters, timings, workdir / "server.log"))   # rate every pair
        with server as url:
            t0 = time.perf_counter()
            results = run_raters(url, raters, ratings, seconds)
            wall = time.perf_counter() - t0
        store = check_store(db_file, results)
    trips = [t for r in results for t in r.round_trips]
    p95 = percentile(timings.handler, 95)
    return {
        "raters": raters, "ratings_requested": ratings, "pairs": pairs, "cpus": os.cpu_count(),
        "server": "in-process" if in_process else "own process",
        "wall_seconds": round(wall, 2),
        "throughput_ratings_per_second": round(store["acknowledged"] / wall, 1) if wall else None,
        "server_submit_ms": {"n": len(timings.handler), "p50": ms(percentile(timings.handler, 50)),
                             "p95": ms(p95), "max": ms(max(timings.handler, default=None))},
        "library_submit_rating_ms": {"n": len(timings.library), "p50": ms(percentile(timings.library, 50)),
                                     "p95": ms(percentile(timings.library, 95))},
        "client_round_trip_ms": {"n": len(trips), "p50": ms(percentile(trips, 50)), "p95": ms(percentile(trips, 95))},
        "target_p95_ms": TARGET_P95_MS,
        "meets_target": p95 is not None and 1000 * p95 <= TARGET_P95_MS,
        "errors": sorted({e for r in results for e in r.errors})[:20],
        "raters_with_errors": sum(1 for r in results if r.errors),
        "raters_ran_out": sum(1 for r in results if r.ran_out),
        "store": store,
        "_results": results,
    }


def format_summary(out: dict) -> str:
    s, lib, rt, st = out["server_submit_ms"], out["library_submit_rating_ms"], out["client_round_trip_ms"], out["store"]
    return "\n".join([
        f"load: {out['raters']} raters, {st['acknowledged']} acknowledged ratings over {out['pairs']} pairs "
        f"in {out['wall_seconds']} s on {out['cpus']} CPUs ({out['throughput_ratings_per_second']} ratings/s; "
        f"server {out['server']})",
        f"server-side submit handler: p50 {s['p50']} ms, p95 {s['p95']} ms, max {s['max']} ms (n={s['n']})",
        f"  library submit_rating:    p50 {lib['p50']} ms, p95 {lib['p95']} ms",
        f"client round trip:          p50 {rt['p50']} ms, p95 {rt['p95']} ms",
        f"target p95 <= {out['target_p95_ms']:.0f} ms: {'met' if out['meets_target'] else 'NOT met'}",
        f"store: {st['stored_current']} current ratings, lost {st['n_lost']}, stored twice "
        f"{st['rater_pair_twice']}, unacknowledged stored {st['unacknowledged_stored']}, "
        f"integrity {st['integrity_check']}",
        f"errors: {out['raters_with_errors']} raters" + (f" ({'; '.join(out['errors'][:3])})" if out["errors"] else ""),
    ])


@click.command(help=__doc__.split("\n\n")[0] + "\n\nNumbers: server-side p50/p95 of the submit handler, client round "
                    f"trip, throughput; target p95 <= {TARGET_P95_MS:.0f} ms on 2 cores.",
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--raters", type=click.IntRange(min=1), default=50, show_default=True,
              help="Concurrent simulated raters, one Client each.")
@click.option("--ratings", type=click.IntRange(min=1), default=1000, show_default=True, help="Ratings to submit in total.")
@click.option("--pairs", type=int, default=None,
              help="Pairs in the synthetic pool (default: just enough, ratings / raters rounded up).")
@click.option("--seconds", type=float, default=600, show_default=True, help="Stop the raters after this long.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the numbers to this JSON file.")
@click.option("--in-process", is_flag=True, help="Serve the app in this process (default: its own process, as in production).")
# internal: the server process started by this script
@click.option("--serve-db", hidden=True, default=None)
@click.option("--serve-port", type=int, hidden=True, default=None)
@click.option("--serve-ratings-per-pair", type=int, hidden=True, default=None)
@click.option("--timings-file", hidden=True, default=None)
def main(raters, ratings, pairs, seconds, json_path, in_process, serve_db, serve_port, serve_ratings_per_pair,
         timings_file):
    if serve_db:
        serve_forever(Path(serve_db), serve_port, serve_ratings_per_pair, Path(timings_file))
        return
    pairs = pairs if pairs is not None else -(-ratings // raters)
    out = run(raters, ratings, pairs, seconds, in_process=in_process)
    out.pop("_results")
    print(format_summary(out))
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    st = out["store"]
    ok = st["n_lost"] == 0 and st["rater_pair_twice"] == 0 and st["acknowledged"] == st["stored_current"]
    sys.exit(0 if ok and not out["raters_with_errors"] else 1)


if __name__ == "__main__":
    main()
