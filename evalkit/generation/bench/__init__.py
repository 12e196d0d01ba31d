"""The benchmark protocol (the README's "Measurement protocol"): each path in its own process, load / memory / first
call / warm-up recorded, N timed repetitions per prompt, a second round in swapped order (ABBA), every raw run
stored, and a summary that only reports a speed-up measured in this run over comparable outputs.

    run      the parent: which paths run, one worker process per path and round, every result stored
    worker   one path in its own process (`evalkit bench-worker`)
    summary  the summary from stored rows (BenchSummary), as text or JSON
"""

from .run import bench_at, run_bench
from .summary import BenchSummary, PathTiming, Versus, bench_json, format_summary, summarize

__all__ = ["BenchSummary", "PathTiming", "Versus", "bench_at", "bench_json", "format_summary", "run_bench", "summarize"]
