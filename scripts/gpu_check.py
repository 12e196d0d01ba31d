"""The engine of scripts/gpu-check.sh: check, a short bench in float16 and in bfloat16 (the bfloat16 one also measures
the ordinary path at batch sizes 1-32 beside assisted at batch 1: the numbers a serving team needs), a target split
over two GPUs when two are present, one JSON summary, and a validation that fails with a clear message on any missing
column. Run it through the shell script (it prepares the environment first):

    scripts/gpu-check.sh [--cpu] [--target DIR --draft DIR] [--out FILE]
    scripts/gpu-check.sh --validate FILE

Every number comes from evalkit's own commands (`evalkit check --json`, `evalkit bench --json`) and from the
rows they stored; nothing is estimated here.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import click

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from the checkout, evalkit not installed (a GPU image)
    sys.path.insert(0, str(ROOT))
DTYPES = ("float16", "bfloat16")
PATHS = ("ordinary", "assisted")  # evalkit.records.COMPARED, as the JSON spells them
BUDGET_SECONDS = 8 * 60  # the bar for a GPU machine, set-up included
# Batch sizes of the ordinary path measured beside assisted at batch 1 (a GPU serves many requests per call).
GPU_BATCH_SIZES = (1, 2, 4, 8, 16, 32)
CPU_BATCH_SIZES = (1, 2)


class Missing(Exception):
    """A column the summary must have but does not."""


def machine() -> dict:
    import torch
    import transformers

    gpus = [{"index": i, "name": torch.cuda.get_device_name(i),
             "memory_gib": round(torch.cuda.get_device_properties(i).total_memory / (1 << 30), 1)}
            for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    return {"host": platform.node(), "cpus": os.cpu_count(), "gpus": gpus, "python": platform.python_version(),
            "torch": torch.__version__, "cuda": torch.version.cuda, "transformers": transformers.__version__,
            "platform": platform.platform()}


def toml_value(v) -> str:
    return json.dumps(v)


def write_config(path: Path, base: dict, overrides: dict) -> Path:
    """A config TOML: the base config's tables with `overrides` ({"models": {...}}) applied."""
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for table, values in overrides.items():
        merged.setdefault(table, {}).update(values)
    lines = [f"{k} = {toml_value(v)}" for k, v in merged.items() if not isinstance(v, dict)]
    for table, values in merged.items():
        if isinstance(values, dict):
            lines.append(f"[{table}]")
            lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def evalkit(*args: str, env: dict) -> dict:
    """`python -m evalkit ARGS --json`: its JSON, or SystemExit with its error."""
    r = subprocess.run([sys.executable, "-m", "evalkit", *args, "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode not in (0, 2):  # 2: `check` says not approved, still a record
        raise SystemExit(f"gpu-check: `evalkit {' '.join(args)}` failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def bench_entry(out: dict, db_file: Path) -> dict:
    """The summary columns of one bench, with the loaded dtype read back from the stored runs."""
    import sqlite3

    s = out["summary"]
    con = sqlite3.connect(str(db_file))
    loaded = {r[0] for r in con.execute(
        "SELECT DISTINCT json_extract(g.effective_config, '$.dtype') FROM timing_runs t "
        "JOIN generations g ON g.id = t.generation_id WHERE t.experiment_id = ?", [s["experiment_id"]])}
    con.close()
    return {
        "experiment_id": s["experiment_id"],
        "dtype": s["dtype"],
        "dtype_loaded": sorted(x for x in loaded if x),
        "route": s["route"],
        "device_kinds": s["device_kinds"],
        "runs": {p: s["paths"].get(p, {}).get("runs") for p in PATHS},
        "median_seconds": {p: s["paths"].get(p, {}).get("median_seconds") for p in PATHS},
        "median_tokens_per_second": {p: s["paths"].get(p, {}).get("median_tokens_per_second") for p in PATHS},
        "peak_rss_mb": {p: s["paths"].get(p, {}).get("peak_rss_mb") for p in PATHS},
        "peak_cuda_mb": {p: s["paths"].get(p, {}).get("peak_cuda_mb") or {} for p in PATHS},
        "speedup": s["speedup"],
        "speedup_ci95": s["speedup_ci95"],
        "comparable_pairs": s["comparable_pairs"],
        "matched_pairs": s["matched_pairs"],
        "identical_outputs": s["identical_outputs"],
        "acceptance_rate": s["acceptance_rate"],
        "tokens_per_target_pass": s["tokens_per_target_pass"],
        "counts_agree": s["counts_agree"],
        "target_placement": [p["target_placement"] for p in s["processes"]],
        "notes": s["notes"],
    }


def batch_entry(out: dict) -> dict:
    """The batch comparison of the bench that measured batch sizes: per path and size, seconds per request, tokens/s
    per request, total tokens/s with intervals, and the answer."""
    b = out["summary"]["batches"] or {}
    return {"experiment_id": out["summary"]["experiment_id"], "dtype": out["summary"]["dtype"],
            "rows": b.get("rows", []), "crossover": b.get("crossover"), "answer": b.get("answer")}


def run_check(args) -> dict:
    import tomllib

    t_all = time.perf_counter()
    import torch

    gpu = not args.cpu
    if gpu and not torch.cuda.is_available():
        raise SystemExit("gpu-check: torch sees no CUDA device (torch.cuda.is_available() is False); "
                         "run on a machine with an NVIDIA GPU and a CUDA build of torch, or pass --cpu")
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    # evalkit from this checkout, ahead of any installed copy; the rest of the path (the set-up's site) is kept
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, EVALKIT_DATA_DIR=str(work / "data"), PYTHONPATH=pythonpath)
    env.pop("EVALKIT_DB", None)
    seconds: dict[str, float] = {"setup": float(os.environ.get("GPU_CHECK_SETUP_SECONDS") or 0)}

    t0 = time.perf_counter()
    if args.target and args.draft:
        target, draft, source = str(Path(args.target).resolve()), str(Path(args.draft).resolve()), "given"
    else:
        from evalkit.demo import ensure_demo_pair
        from evalkit.locations import demo_models_dir

        folder = ensure_demo_pair(Path(os.environ.get("EVALKIT_DEMO_MODELS") or demo_models_dir()), progress=True)
        target, draft, source = str(folder / "target"), str(folder / "draft"), "demo pair (built or reused)"
    seconds["models"] = time.perf_counter() - t0

    base = tomllib.loads((ROOT / "configs" / "demo.toml").read_text(encoding="utf-8"))
    prompts = ["writing-02"] if args.cpu else ["writing-01", "writing-02"]
    common = {
        "models": {"target": target, "draft": draft, "device": "cpu" if args.cpu else "auto"},
        "decoding": {"mode": "greedy", "max_new_tokens": 0 if gpu else 48},
        # 2 rounds, the protocol's minimum: a short check within its time budget (the default, 4, doubles the processes)
        "bench": {"reps": args.reps or (1 if args.cpu else 3), "rounds": 2, "warmup": 0 if args.cpu else 1,
                  "prompts": prompts, "bootstrap": 500},
    }
    db_file = work / "data" / "gpu-check.db"
    summary: dict = {
        "tool": "scripts/gpu-check.sh", "mode": "cpu" if args.cpu else "gpu",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
        "pair": {"target": target, "draft": draft, "source": source}, "seconds": seconds,
        "settings": {"decoding": "greedy", "prompts": prompts, "reps": common["bench"]["reps"], "dtypes": args.dtypes,
                     "batch_sizes": args.batch_sizes, "batch_dtype": args.dtypes[-1]},
    }

    t0 = time.perf_counter()
    cfg = write_config(work / "check.toml", base, common | {"models": common["models"] | {"dtype": "bfloat16"}})
    rec = evalkit("check", "--config", str(cfg), env=env)
    summary["check"] = {"verdict": rec["verdict"], "reasons": rec["reasons"], "device": rec["device"],
                        "candidate_generator": rec.get("candidate_generator")}
    seconds["check"] = time.perf_counter() - t0

    summary["benches"] = {}
    for dtype in args.dtypes:
        t0 = time.perf_counter()
        cfg = write_config(work / f"bench-{dtype}.toml", base, common | {"models": common["models"] | {"dtype": dtype}})
        batches = ["--batch-sizes", ",".join(map(str, args.batch_sizes))] if dtype == args.dtypes[-1] else []
        out = evalkit("bench", "--config", str(cfg), "--db", str(db_file), *batches, env=env)
        summary["benches"][dtype] = bench_entry(out, db_file)
        if batches:  # the last dtype's ordinary process also ran the batched calls
            summary["batches"] = batch_entry(out)
        seconds[f"bench_{dtype}"] = time.perf_counter() - t0

    n_gpus = torch.cuda.device_count() if gpu else 0
    if n_gpus >= 2:
        t0 = time.perf_counter()
        # a budget on GPU 0 below the target's bfloat16 weights: accelerate must put the rest on GPU 1
        weights_mb = sum(f.stat().st_size for f in Path(target).glob("*.safetensors")) / (1 << 20)
        half_mb = max(1, int(weights_mb / 2 / 2))  # float32 files, bfloat16 in memory, half of that on GPU 0
        split_models = common["models"] | {"dtype": "bfloat16", "device_map": "auto", "draft_device": "cuda:0",
                                           "max_memory": [f"0={half_mb}MiB", "1=40GiB"]}
        cfg = write_config(work / "bench-split.toml", base, common | {"models": split_models})
        out = evalkit("bench", "--config", str(cfg), "--db", str(db_file), env=env)
        entry = bench_entry(out, db_file)
        entry["ran"] = True
        entry["max_memory"] = split_models["max_memory"]
        summary["split"] = entry
        seconds["split"] = time.perf_counter() - t0
    else:
        summary["split"] = {"ran": False, "why": f"needs two CUDA devices, found {n_gpus}"}
    seconds["total"] = seconds["setup"] + (time.perf_counter() - t_all)
    summary["within_budget"] = seconds["total"] <= BUDGET_SECONDS if gpu else None
    return summary


def require(summary: dict, dotted: str, why: str, positive: bool = False):
    """The value at `dotted` ("benches.float16.median_seconds.ordinary"); Missing when absent or null."""
    node = summary
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise Missing(f"{dotted} ({why})")
        node = node[part]
    if node is None or node == [] or node == {} or (positive and not (isinstance(node, (int, float)) and node > 0)):
        raise Missing(f"{dotted} is {node!r} ({why})")
    return node


def validate(summary: dict) -> None:
    """Every column the GPU check promises. Raises Missing naming the first one absent."""
    gpu = summary.get("mode") == "gpu"
    require(summary, "mode", "cpu or gpu")
    require(summary, "machine.torch", "library versions")
    require(summary, "check.verdict", "the compatibility verdict of `evalkit check`")
    require(summary, "seconds.total", "wall time, set-up included", positive=True)
    dtypes = require(summary, "settings.dtypes", "the dtypes benchmarked")
    if summary.get("mode") == "gpu" and sorted(dtypes) != sorted(DTYPES):
        raise Missing(f"settings.dtypes is {dtypes!r}: on a GPU both {' and '.join(DTYPES)} are benchmarked")
    for dtype in dtypes:
        b = f"benches.{dtype}"
        if require(summary, f"{b}.dtype_loaded", "the dtype the stored runs were generated in") != [dtype]:
            raise Missing(f"{b}.dtype_loaded is {summary['benches'][dtype]['dtype_loaded']!r}, not [{dtype!r}]")
        for path in PATHS:
            require(summary, f"{b}.median_seconds.{path}", f"median generate() seconds of the {path} runs", positive=True)
            if gpu:
                require(summary, f"{b}.peak_cuda_mb.{path}", f"per-device CUDA peaks of the {path} runs")
                for i in range(len(summary["machine"]["gpus"])):
                    require(summary, f"{b}.peak_cuda_mb.{path}.cuda:{i}.peak_reserved_mb",
                            f"CUDA peak reserved on cuda:{i}")
                require(summary, f"{b}.peak_cuda_mb.{path}.cuda:0.peak_allocated_mb",
                        "CUDA peak allocated on the device holding the models", positive=True)
            else:
                require(summary, f"{b}.peak_rss_mb.{path}", "process peak RSS on the CPU", positive=True)
        for col, why in (("identical_outputs", "share of token-identical outputs"),
                         ("acceptance_rate", "share of drafted tokens kept"),
                         ("tokens_per_target_pass", "tokens per target forward pass"),
                         ("counts_agree", "the two acceptance counts cross-checked")):
            if col == "identical_outputs":
                if summary["benches"][dtype].get(col) is None:
                    raise Missing(f"{b}.{col} ({why})")
            else:
                require(summary, f"{b}.{col}", why)
        if "speedup" not in summary["benches"][dtype]:
            raise Missing(f"{b}.speedup (the measured speed-up, or null with notes saying why)")
        if summary["benches"][dtype]["speedup"] is None and not summary["benches"][dtype].get("notes"):
            raise Missing(f"{b}.speedup is null and {b}.notes says nothing about why")
    validate_batches(summary, gpu)
    if gpu and len(summary["machine"]["gpus"]) >= 2:
        require(summary, "split.ran", "a target split over two GPUs (device_map)")
        placed = require(summary, "split.target_placement", "MB of target weights per device")
        if not all(sum(1 for d in p if d.startswith("cuda:")) >= 2 for p in placed):
            raise Missing(f"split.target_placement does not span two GPUs: {placed!r}")
        for i in (0, 1):
            require(summary, f"split.peak_cuda_mb.ordinary.cuda:{i}.peak_allocated_mb",
                    f"CUDA peak allocated on cuda:{i} with the split target", positive=True)
    else:
        require(summary, "split.why", "why the two-GPU split did not run")


def validate_batches(summary: dict, gpu: bool) -> None:
    """The batch table: assisted at batch 1 and ordinary at every size asked for, each with its timings and memory."""
    sizes = require(summary, "settings.batch_sizes", "the batch sizes of the ordinary path measured")
    rows = require(summary, "batches.rows", "the batch comparison: per path and batch size")
    require(summary, "batches.answer", "from which batch size ordinary's total throughput beats assisted's, if any")
    by = {(r.get("path"), r.get("batch_size")): r for r in rows}
    wanted = [("assisted", 1)] + [("ordinary", b) for b in sizes]
    for i, (path, size) in enumerate(wanted):
        if (path, size) not in by:
            raise Missing(f"batches.rows has no {path} row at batch size {size}")
        for col, why in (("seconds_per_request", "what each request waits"),
                         ("tokens_per_second_per_request", "new tokens per second per request"),
                         ("total_tokens_per_second", "all new tokens / all seconds"),
                         ("peak_cuda_allocated_mb" if gpu else "peak_rss_mb", "peak memory at this batch size")):
            node = by[(path, size)].get(col)
            if node is None or not node > 0:
                raise Missing(f"batches.rows[{path}, {size}].{col} is {node!r} ({why})")


def _batch_sizes(_ctx, _param, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        sizes = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise click.BadParameter(f"comma-separated batch sizes, got {value!r}")
    if not sizes or sizes[0] < 1:
        raise click.BadParameter("batch sizes are positive integers")
    return sizes


def _dtypes(_ctx, _param, value: str) -> list[str]:
    dtypes = [d for d in value.split(",") if d]
    if not dtypes or set(dtypes) - set(DTYPES):
        raise click.BadParameter(f"name {' and/or '.join(DTYPES)}")
    return dtypes


@click.command(help="The GPU check: `evalkit check`, a short greedy bench in float16 and bfloat16 (and a target split "
                    "over two GPUs when there are two), one JSON summary, validated column by column. Run it through "
                    "scripts/gpu-check.sh, which prepares the environment.", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--cpu", is_flag=True, help="Run on the CPU (the test suite does).")
@click.option("--target", default=None, help="Target checkpoint folder (default: the demo pair, built or reused).")
@click.option("--draft", default=None, help="Draft checkpoint folder (with --target).")
@click.option("--reps", type=int, default=0, help="Timed repetitions per prompt (default: 3 on a GPU, 1 with --cpu).")
@click.option("--dtypes", default=",".join(DTYPES), show_default=True, callback=_dtypes,
              help="Dtypes to bench, comma-separated (a GPU run needs both).")
@click.option("--batch-sizes", default=None, callback=_batch_sizes,
              help="Ordinary-path batch sizes measured beside assisted at batch 1, in the last dtype's bench "
                   f"(default: {','.join(map(str, GPU_BATCH_SIZES))} on a GPU, {','.join(map(str, CPU_BATCH_SIZES))} with --cpu).")
@click.option("--out", default="results/gpu-check.json", show_default=True, help="The JSON summary.")
@click.option("--work", default="", help="Working folder for configs and the database (default: beside --out).")
@click.option("--validate", "validate_file", metavar="FILE", default=None, help="Only validate an existing summary.")
def main(cpu, target, draft, reps, dtypes, batch_sizes, out, work, validate_file) -> None:
    if validate_file:
        summary = json.loads(Path(validate_file).read_text(encoding="utf-8"))
    else:
        if bool(target) != bool(draft):
            raise SystemExit("gpu-check: give --target and --draft together (or neither, for the demo pair)")
        out = Path(out)
        args = SimpleNamespace(cpu=cpu, target=target, draft=draft, reps=reps, dtypes=dtypes,
                               batch_sizes=batch_sizes or list(CPU_BATCH_SIZES if cpu else GPU_BATCH_SIZES),
                               work=work or str(out.with_suffix("")) + "-work")
        summary = run_check(args)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"gpu-check: summary written to {out}", file=sys.stderr)
    try:
        validate(summary)
    except Missing as e:
        print(f"gpu-check: missing column {e}", file=sys.stderr)
        sys.exit(3)
    s = summary["seconds"]
    print(f"gpu-check ({summary['mode']}): all columns present; total {s['total']:.0f} s"
          + ("" if summary.get("within_budget") is None else f" ({'within' if summary['within_budget'] else 'OVER'} 8 minutes)"),
          file=sys.stderr)
    for dtype, b in summary["benches"].items():
        print(f"  {dtype}: speed-up {b['speedup']}, identical outputs {b['identical_outputs']}, "
              f"acceptance {b['acceptance_rate']}", file=sys.stderr)
    print(f"  batches ({summary['batches']['dtype']}): {summary['batches']['answer']}", file=sys.stderr)


if __name__ == "__main__":
    main()
