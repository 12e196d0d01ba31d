"""The benchmark protocol (shared/DESIGN.md): each path in its own process, load / memory / first call /
warm-up recorded, N timed repetitions per prompt, a second round in swapped order (ABBA), every raw run
stored, and a summary that only reports a speed-up measured in this run over comparable outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from .config import Config, from_dict
from .errors import EvalkitError
from .records import GenerationRecord, ProcessRecord, TimingRun
from .stats import alpha_from_tokens_per_pass, iqr, median, speedup_over_prompts, theoretical_speedup


def round_orders(paths: list[str]) -> list[list[str]]:
    """ABBA: round 1 in the given order, round 2 reversed."""
    return [list(paths), list(reversed(paths))]


# ---------------------------------------------------------------- worker (runs in its own process)


def _per_token_probe(model, tokenizer, prompt, device: str, cfg: Config, n_tokens: int = 32, repeats: int = 3) -> float | None:
    """Seconds per new token of one model alone, greedy, median of a few calls (the cost ratio's inputs).
    The prompt is framed by this model's own tokenizer, as its users would frame it."""
    import torch

    from .measure import Stopwatch
    from .paths import frame

    has_template = bool(getattr(tokenizer, "chat_template", None))
    fmt = "chat" if has_template and cfg.decoding.prompt_format != "plain" else "plain"
    enc = frame(tokenizer, cfg, prompt, fmt=fmt).to(device)
    times = []
    for _ in range(repeats):
        with torch.inference_mode(), Stopwatch(device) as w:
            out = model.generate(**enc, max_new_tokens=n_tokens, min_new_tokens=n_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
        new = out.shape[1] - enc["input_ids"].shape[1]
        if new:
            times.append(w.seconds / new)
    return median(times)


def run_worker(cfg: Config, path: str, round_no: int, order: int, prompt_ids: list[str], progress_fh=None,
               rank: int = 0) -> dict:
    """Load the models this path needs, then measure. Returns the process record and its runs as JSON-able."""
    import time

    from .measure import cuda_memory, host, rss_mb
    from .models import load_pair, placement
    from .paths import run_path
    from .prompts import load_prompts

    import torch  # noqa: F401  (library import time is not model load time)
    import transformers  # noqa: F401

    prompts = load_prompts(ids=prompt_ids or None)
    proc = ProcessRecord(path=path, round=round_no, order=order, pid=os.getpid(), host=host(), rank=rank)
    t0 = time.perf_counter()
    rss0 = rss_mb()
    pair = load_pair(cfg, progress=False, with_draft=(path == "assisted"), rank=rank)
    proc.load_seconds = time.perf_counter() - t0
    proc.device = pair.device
    proc.rss_after_load_mb = rss_mb()
    proc.cuda_after_load = cuda_memory()
    proc.target_placement = placement(pair.target)
    if pair.draft is not None:
        proc.draft_placement = placement(pair.draft)
    if path == "assisted" and pair.draft is not None:
        proc.draft_extra_rss_mb = None if rss0 is None else proc.rss_after_load_mb - rss0
    base = cfg.decoding.seed
    # With different tokenizers and sampling, Transformers prunes the draft's LM head and wraps its embeddings
    # in place on the first assisted call (UniversalSpeculativeDecodingGenerator): measure the draft alone first.
    probe_draft_first = pair.compat.get("verdict") == "different_tokenizer"
    if path == "assisted" and pair.draft is not None and probe_draft_first:
        proc.draft_seconds_per_token = _per_token_probe(pair.draft, pair.draft_tokenizer, prompts[0], pair.draft_device, cfg)

    def tick():
        if progress_fh:
            progress_fh.write("tick\n")
            progress_fh.flush()

    # First call: recorded, never pooled with the timed runs.
    first = run_path(pair, prompts[0], path, base)
    proc.first_call_seconds = first[-1].generate_seconds
    for _ in range(cfg.bench.warmup):
        proc.warmup_seconds.append(run_path(pair, prompts[0], path, base)[-1].generate_seconds)
    proc.warmup_count = cfg.bench.warmup
    # Per-token cost of each model alone: target in the ordinary process, draft in the assisted one.
    if path == "ordinary":
        proc.target_seconds_per_token = _per_token_probe(pair.target, pair.tokenizer, prompts[0], pair.device, cfg)
    elif pair.draft is not None and not probe_draft_first:
        proc.draft_seconds_per_token = _per_token_probe(pair.draft, pair.draft_tokenizer, prompts[0], pair.draft_device, cfg)
    runs = []
    for prompt in prompts:
        for rep in range(cfg.bench.reps):
            seed = base + rep
            records = run_path(pair, prompt, path, seed)
            timed = records[-1]
            run = TimingRun(
                path=timed.path,  # "fallback" when assisted failed: never pooled as assisted
                prompt_id=prompt.id,
                round=round_no,
                rep=rep,
                seed=seed,
                new_tokens=timed.new_tokens,
                stop_reason=timed.stop_reason,
                seconds=timed.total_wait_seconds if timed.path == "fallback" else timed.generate_seconds,
                decode_seconds=timed.decode_seconds,
                tokens_per_second=timed.tokens_per_second,
                rank=timed.rank,
                host=timed.host,
                device=timed.device,
            )
            runs.append({"run": asdict(run), "records": [asdict(r) for r in records]})
            tick()
    return {"process": asdict(proc), "runs": runs}


def worker_main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m evalkit.bench", description="One benchmark worker process (internal).")
    ap.add_argument("--config-json", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--round", type=int, required=True)
    ap.add_argument("--order", type=int, required=True)
    ap.add_argument("--prompts", default="")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    cfg = from_dict(json.loads(Path(a.config_json).read_text()), a.config_json)
    result = run_worker(cfg, a.path, a.round, a.order, [p for p in a.prompts.split(",") if p], sys.stdout, a.rank)
    tmp = a.out + ".tmp"
    Path(tmp).write_text(json.dumps(result, ensure_ascii=False))
    os.replace(tmp, a.out)
    return 0


# ---------------------------------------------------------------- parent


def _records_from(dicts: list[dict]) -> list[GenerationRecord]:
    return [GenerationRecord(**d) for d in dicts]


def _run_worker_process(cfg_file: Path, path: str, round_no: int, order: int, prompt_ids: list[str], rank: int,
                        out: Path, bar) -> str | None:
    """One path in its own process. Returns None on success (result JSON at `out`), else the error text."""
    cmd = [sys.executable, "-m", "evalkit.bench", "--config-json", str(cfg_file), "--path", path,
           "--round", str(round_no), "--order", str(order), "--rank", str(rank), "--out", str(out),
           "--prompts", ",".join(prompt_ids)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stdout:
        if line.strip() == "tick":
            bar.update(1)
    stderr = proc.stderr.read()
    proc.wait()
    return None if proc.returncode == 0 and out.exists() else (stderr[-4000:] or f"exit code {proc.returncode}")


def run_bench(cfg: Config, db, *, progress: bool = True, echo=print) -> dict | None:
    """Run the whole protocol, store every raw run, return the summary (None on non-main processes).

    Under `accelerate launch` the prompts are split between the processes; each runs the full ABBA
    protocol for its prompts on its own device (each path still in its own worker process) and leaves its
    results as files; the main process stores them all in one transaction."""
    from tqdm import tqdm

    from .compat import approved
    from .models import check_compat
    from .pairs import distributed_state
    from .prompts import load_prompts
    from .store import insert_bench_process, insert_experiment

    state = distributed_state(cfg)
    db_path = Path(db.execute("PRAGMA database_list").fetchone()[2])
    plan_path = db_path.with_name(f"{db_path.name}.bench-plan.json")
    prompt_ids = [p.id for p in load_prompts(ids=cfg.bench.prompts or None)]
    if state.is_main_process:
        try:
            compat = check_compat(cfg, progress)  # also builds the demo pair once, before any worker starts
            paths = ["ordinary"]
            if cfg.assisted_enabled and approved(compat):
                paths.append("assisted")
            elif cfg.assisted_enabled:
                echo("assisted path not approved: " + "; ".join(compat["reasons"]) + " -- running the ordinary path only")
            plan = {"experiment_id": insert_experiment(db, "bench", cfg.to_dict(), compat), "paths": paths}
        except EvalkitError as e:  # tell the other processes too, so nobody waits forever
            plan = {"error": e.what, "fix": e.fix}
        plan_path.write_text(json.dumps(plan))
    state.wait_for_everyone()
    plan = json.loads(plan_path.read_text())
    if "error" in plan:
        raise EvalkitError(plan["error"], plan["fix"])
    exp_id, paths = plan["experiment_id"], plan["paths"]
    results_dir = db_path.with_name(f"{db_path.name}.bench-e{exp_id}")
    results_dir.mkdir(exist_ok=True)
    rank_cfg = from_dict(cfg.to_dict())
    if state.num_processes > 1 and cfg.models.device == "auto":
        rank_cfg.models.device = str(state.device)  # each process measures on its own device
    with state.split_between_processes(prompt_ids) as mine:
        total = len(paths) * 2 * len(mine) * cfg.bench.reps
        desc = "bench" if state.num_processes == 1 else f"bench (rank {state.process_index})"
        bar = tqdm(total=total, desc=desc, unit="run", disable=not progress or not mine, file=sys.stderr,
                   position=state.process_index)
        cfg_file = results_dir / f"config-rank{state.process_index}.json"
        cfg_file.write_text(json.dumps(rank_cfg.to_dict(), ensure_ascii=False))
        for round_no, order in enumerate(round_orders(paths), start=1) if mine else []:
            for k, path in enumerate(order):
                bar.set_postfix_str(f"round {round_no}: {path} (own process)")
                out = results_dir / f"rank{state.process_index}-r{round_no}-{path}.json"
                error = _run_worker_process(cfg_file, path, round_no, k, mine, state.process_index, out, bar)
                if error is not None:
                    failed = ProcessRecord(path=path, round=round_no, order=k, rank=state.process_index,
                                           status="failed", error=error)
                    out.with_suffix(".failed").write_text(json.dumps(asdict(failed)))
                    break
            else:
                continue
            break
        bar.close()
    state.wait_for_everyone()
    if not state.is_main_process:
        return None
    failures = []
    try:
        results = [json.loads(f.read_text()) for f in results_dir.glob("rank*-r*.json")]
        results.sort(key=lambda r: (r["process"]["rank"], r["process"]["round"], r["process"]["order"]))  # run order
        with db.atomic():  # every process's results, all or nothing
            for result in results:
                runs = [(TimingRun(**r["run"]), _records_from(r["records"])) for r in result["runs"]]
                insert_bench_process(db, exp_id, ProcessRecord(**result["process"]), runs)
        for f in sorted(results_dir.glob("rank*.failed")):
            failed = ProcessRecord(**json.loads(f.read_text()))
            insert_bench_process(db, exp_id, failed, [])
            failures.append(failed)
    finally:
        import shutil

        shutil.rmtree(results_dir, ignore_errors=True)
        plan_path.unlink(missing_ok=True)
    if failures:
        f = failures[0]
        last = [ln for ln in f.error.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        raise EvalkitError(
            f"benchmark worker for the {f.path} path (round {f.round}, rank {f.rank}) failed: {last[0]}",
            f"the full error is stored in bench_processes of experiment {exp_id}; fix it and rerun",
        )
    return summarize(db, exp_id)


def device_kind(device: str) -> str:
    """"cuda:1" -> "cuda": timings from different kinds of device never pool."""
    return (device or "").split(":")[0]


def comparable(o: dict, a: dict, tolerance: float) -> bool:
    """Two outputs are comparable when they stopped for the same reason at about the same length."""
    return o["stop_reason"] == a["stop_reason"] and abs(o["new_tokens"] - a["new_tokens"]) <= tolerance * max(
        o["new_tokens"], a["new_tokens"], 1
    )


def pair_runs(rows: list[dict], tolerance: float) -> tuple[list[tuple[dict, dict]], list[tuple[dict, dict]]]:
    """Pair ordinary and assisted runs of the same prompt, round and repetition (same seed).
    Fallback runs never pair: they are not assisted. Returns (matched, comparable)."""
    ords = {(r["prompt_id"], r["round"], r["rep"]): r for r in rows if r["path"] == "ordinary"}
    asss = {(r["prompt_id"], r["round"], r["rep"]): r for r in rows if r["path"] == "assisted"}
    matched = [(ords[k], asss[k]) for k in sorted(ords) if k in asss]
    return matched, [(o, a) for o, a in matched if comparable(o, a, tolerance)]


def seconds_by_prompt(pairs: list[tuple[dict, dict]]) -> dict[str, tuple[list[float], list[float]]]:
    """prompt -> (ordinary seconds, assisted seconds) of its pairs, in pair order: the input of
    `stats.speedup_over_prompts`."""
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for o, a in pairs:
        g = groups.setdefault(o["prompt_id"], ([], []))
        g[0].append(o["seconds"])
        g[1].append(a["seconds"])
    return groups


def _peak_cuda(rows: list[dict]) -> dict:
    """Per CUDA device, the highest peak allocated / reserved MB over these runs ({} without CUDA)."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        for device, m in json.loads(r.get("cuda_memory") or "{}").items():
            d = out.setdefault(device, {"peak_allocated_mb": 0.0, "peak_reserved_mb": 0.0})
            d["peak_allocated_mb"] = max(d["peak_allocated_mb"], m.get("peak_allocated_mb") or 0.0)
            d["peak_reserved_mb"] = max(d["peak_reserved_mb"], m.get("peak_reserved_mb") or 0.0)
    return out


def summarize(db, experiment_id: int) -> dict:
    """The benchmark summary from stored raw runs only: nothing here is estimated without a measurement."""
    exp = next(db.query("SELECT * FROM experiments WHERE id = ?", [experiment_id]), None)
    if exp is None:
        raise EvalkitError(f"experiment {experiment_id} does not exist", "run `evalkit bench` first")
    cfg = from_dict(json.loads(exp["config_json"]))
    rows = list(
        db.query(
            """SELECT t.*, g.token_hash, g.draft_proposed, g.draft_accepted, g.draft_rounds, g.target_passes,
                      g.counts_agree, g.peak_rss_mb, g.cuda_memory, g.draft_tokens, g.candidate_generator
               FROM timing_runs t JOIN generations g ON g.id = t.generation_id
               WHERE t.experiment_id = ? ORDER BY t.id""",
            [experiment_id],
        )
    )
    procs = list(db.query("SELECT * FROM bench_processes WHERE experiment_id = ? ORDER BY id", [experiment_id]))
    by_path: dict[str, list[dict]] = {}
    for r in rows:
        by_path.setdefault(r["path"], []).append(r)
    per_path = {}
    for path, rs in by_path.items():
        secs = [r["seconds"] for r in rs]
        per_path[path] = {
            "runs": len(rs),
            "median_seconds": median(secs),
            "iqr_seconds": iqr(secs),
            "median_tokens_per_second": median([r["tokens_per_second"] for r in rs]),
            "median_new_tokens": median([r["new_tokens"] for r in rs]),
            "peak_rss_mb": max((r["peak_rss_mb"] for r in rs if r["peak_rss_mb"] is not None), default=None),
            "peak_cuda_mb": _peak_cuda(rs),
        }
    fallbacks = len(by_path.get("fallback", []))
    tol = cfg.bench.length_tolerance
    matched, comparable = pair_runs(rows, tol)
    compat = json.loads(exp["compat_json"] or "{}")
    summary: dict = {
        "experiment_id": experiment_id,
        "decoding": cfg.decoding.mode,
        "dtype": cfg.models.dtype,
        "route": compat.get("verdict"),
        "token_space": compat.get("token_space"),
        "paths": per_path,
        "matched_pairs": len(matched),
        "comparable_pairs": len(comparable),
        "fallback_runs": fallbacks,
        "speedup": None,
        "speedup_ci95": None,
        "notes": [],
    }
    kinds = sorted({device_kind(r["device"]) for r in rows if r.get("device")})
    if len(kinds) > 1:
        summary["notes"].append(
            f"runs come from different device kinds ({', '.join(kinds)}): timings are not pooled and no speed-up "
            "is reported; benchmark each device kind separately"
        )
        comparable = []
        summary["comparable_pairs"] = 0
    summary["device_kinds"] = kinds
    summary["speedup_by_prompt"] = {}
    if comparable:
        groups = seconds_by_prompt(comparable)
        summary["speedup"], summary["speedup_ci95"] = speedup_over_prompts(groups, cfg.bench.bootstrap)
        for prompt_id in sorted({o["prompt_id"] for o, _ in matched}):
            o_secs, a_secs = groups.get(prompt_id, ([], []))
            summary["speedup_by_prompt"][prompt_id] = {
                "comparable_pairs": len(o_secs),
                "matched_pairs": sum(1 for o, _ in matched if o["prompt_id"] == prompt_id),
                "speedup": median(o_secs) / median(a_secs) if o_secs else None,
            }
        if len(comparable) < len(matched):
            summary["notes"].append(
                f"{len(matched) - len(comparable)} of {len(matched)} pairs were not comparable "
                f"(different stop reason or length beyond {tol:.0%}) and are left out of the speed-up"
            )
    elif "assisted" in by_path and len(kinds) <= 1:
        summary["notes"].append("no comparable ordinary/assisted pairs: no speed-up is reported")
    else:
        summary["notes"].append("the assisted path did not run in this experiment: no speed-up is reported")
    if fallbacks:
        summary["notes"].append(f"{fallbacks} assisted run(s) failed and fell back; they are not counted as assisted")
    summary["identical_outputs"] = (
        sum(o["token_hash"] == a["token_hash"] for o, a in matched) / len(matched) if matched else None
    )
    ass = by_path.get("assisted", [])
    proposed = sum(r["draft_proposed"] or 0 for r in ass)
    accepted = sum(r["draft_accepted"] or 0 for r in ass)
    rounds = sum(r["draft_rounds"] or 0 for r in ass)
    passes = sum(r["target_passes"] or 0 for r in ass)
    summary["acceptance_rate"] = accepted / proposed if proposed else None
    # the draft's own count, in its own vocabulary (equal to `proposed` when the tokenizer is shared)
    summary["draft_tokens"] = sum(r["draft_tokens"] or 0 for r in ass) if ass else None
    summary["candidate_generators"] = sorted({r["candidate_generator"] for r in ass if r["candidate_generator"]})
    summary["tokens_per_target_pass"] = sum(r["new_tokens"] for r in ass) / passes if passes else None
    summary["mean_draft_length"] = proposed / rounds if rounds else None
    summary["counts_agree"] = all(bool(r["counts_agree"]) for r in ass) if ass else None
    t_spt = median([p["target_seconds_per_token"] for p in procs])
    d_spt = median([p["draft_seconds_per_token"] for p in procs])
    summary["cost_ratio"] = d_spt / t_spt if (t_spt and d_spt) else None
    # Leviathan et al.'s alpha is a per-token acceptance probability; it is estimated from the measured tokens
    # per target pass (the kept share above undercounts it: drafts after a rejection are discarded unchecked).
    summary["alpha"] = alpha_from_tokens_per_pass(summary["tokens_per_target_pass"], summary["mean_draft_length"])
    if summary["alpha"] is not None and summary["mean_draft_length"] and summary["cost_ratio"]:
        summary["theoretical_speedup"] = theoretical_speedup(
            summary["alpha"], summary["mean_draft_length"], summary["cost_ratio"]
        )
    else:
        summary["theoretical_speedup"] = None
    summary["processes"] = [
        {k: p[k] for k in ("path", "round", "order", "device", "load_seconds", "rss_after_load_mb",
                           "draft_extra_rss_mb", "first_call_seconds", "warmup_count", "status")}
        | {k: json.loads(p[k] or "{}") for k in ("target_placement", "draft_placement")}
        for p in procs
    ]
    return summary


def bench_json(db, summary: dict) -> dict:
    runs = list(
        db.query(
            "SELECT path, prompt_id, round, rep, seed, new_tokens, stop_reason, seconds, decode_seconds, "
            "tokens_per_second, generation_id FROM timing_runs WHERE experiment_id = ? ORDER BY id",
            [summary["experiment_id"]],
        )
    )
    return {"summary": summary, "runs": runs}


def format_summary(s: dict) -> str:
    def f(x, spec=".3f"):
        return "n/a" if x is None else format(x, spec)

    lines = [f"experiment {s['experiment_id']}  decoding={s['decoding']}  dtype={s.get('dtype')}  route={s.get('route')}"]
    lines.append(f"{'path':<14}{'runs':>6}{'median s':>11}{'IQR s':>20}{'tok/s':>9}{'tokens':>8}")
    for path, p in s["paths"].items():
        q = p["iqr_seconds"]
        lines.append(
            f"{path:<14}{p['runs']:>6}{f(p['median_seconds']):>11}"
            f"{(f(q[0]) + ' - ' + f(q[1])) if q else 'n/a':>20}{f(p['median_tokens_per_second'], '.1f'):>9}"
            f"{f(p['median_new_tokens'], '.0f'):>8}"
        )
    ci = s["speedup_ci95"]
    if s["speedup"] is not None:
        by = s.get("speedup_by_prompt") or {}
        lines.append(
            "per prompt (median ordinary s / median assisted s over its comparable pairs): "
            + ", ".join(f"{p} {f(v['speedup'], '.2f')}x ({v['comparable_pairs']}/{v['matched_pairs']})" for p, v in by.items())
        )
        lines.append(
            f"speed-up (median over prompts): {s['speedup']:.2f}x"
            f"  95% CI {f(ci[0], '.2f') if ci else 'n/a'} - {f(ci[1], '.2f') if ci else 'n/a'}"
            f"  over {s['comparable_pairs']} of {s['matched_pairs']} comparable pairs"
        )
    else:
        lines.append("speed-up: not reported (see notes)")
    lines.append(
        f"identical outputs: {f(s['identical_outputs'], '.0%') if s['identical_outputs'] is not None else 'n/a'}"
        f"   acceptance (drafted tokens kept): {f(s['acceptance_rate'], '.2f')}   tokens/target pass: {f(s['tokens_per_target_pass'], '.2f')}"
        f"   counts agree: {s['counts_agree']}"
    )
    if s.get("token_space") == "target":
        lines.append(
            f"token spaces differ ({', '.join(s.get('candidate_generators') or []) or 'Universal Assisted Generation'}): "
            f"proposed/accepted are counted in the target's tokens; the draft itself wrote "
            f"{s.get('draft_tokens')} tokens in its own vocabulary"
        )
    for path, p in s["paths"].items():
        for device, m in (p.get("peak_cuda_mb") or {}).items():
            lines.append(f"  {path} peak on {device}: {m['peak_allocated_mb']:.0f} MB allocated, {m['peak_reserved_mb']:.0f} MB reserved")
    lines.append(
        f"theory (Leviathan et al.): alpha {f(s['alpha'], '.2f')} (from tokens/pass), draft length "
        f"{f(s['mean_draft_length'], '.1f')}, cost ratio c {f(s['cost_ratio'], '.3f')}"
        f" -> predicted speed-up {f(s['theoretical_speedup'], '.2f')}x"
        + (f" vs measured {s['speedup']:.2f}x" if s["speedup"] is not None else "")
    )
    for p in s["processes"]:
        lines.append(
            f"  process r{p['round']} {p['path']:<9} load {f(p['load_seconds'], '.2f')} s, RSS after load "
            f"{f(p['rss_after_load_mb'], '.0f')} MB, first call {f(p['first_call_seconds'], '.3f')} s, warm-ups {p['warmup_count']}"
        )
        for role in ("target", "draft"):
            where = p.get(f"{role}_placement") or {}
            if len(where) > 1:  # only worth a line when a device_map spread the model
                lines.append(f"    {role} weights: " + ", ".join(f"{d} {mb:.1f} MB" for d, mb in where.items()))
    for n in s["notes"]:
        lines.append(f"note: {n}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(worker_main())
