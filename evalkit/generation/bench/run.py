"""The benchmark's parent process: it decides which paths run, starts one worker process per path and round in ABBA
order (evalkit.generation.bench.worker), and stores every worker's results. Under `accelerate launch` the prompts are split
between the processes, each running the whole protocol for its prompts on its own device; the main process stores
every rank's results in one transaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from ...config import Config, from_dict
from ...errors import EvalkitError
from ...records import BatchRun, GenerationRecord, ProcessRecord, TimingRun
from .summary import BenchSummary, summarize

# The folder that holds the evalkit package: a worker imports the very code its parent runs.
_PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent


def round_orders(paths: list[str], rounds: int = 2) -> list[list[str]]:
    """ABBA: odd rounds in the given order, even rounds reversed (the count is even: bench.rounds, --rounds)."""
    from ..meters import balanced_order

    return [balanced_order(paths, r) for r in range(rounds)]


def _run_worker_process(cfg_file: Path, path: str, round_no: int, order: int, prompt_ids: list[str], rank: int,
                        out: Path, bar, plugins: list[str] = ()) -> str | None:
    """One path in its own process (`evalkit bench-worker`). Returns None on success (result JSON at `out`), else
    the error text."""
    cmd = [sys.executable, "-m", "evalkit", "bench-worker", "--config-json", str(cfg_file), "--path", path,
           "--round", str(round_no), "--order", str(order), "--rank", str(rank), "--out", str(out),
           "--prompts", ",".join(prompt_ids)] + (["--plugins", ",".join(plugins)] if plugins else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(_PACKAGE_PARENT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stdout:
        if line.strip() == "tick":
            bar.update(1)
    stderr = proc.stderr.read()
    proc.wait()
    return None if proc.returncode == 0 and out.exists() else (stderr[-4000:] or f"exit code {proc.returncode}")


def _decide(cfg: Config, db, progress: bool, echo, made: dict) -> dict:
    """Main process: the compatibility check, the paths to run (the registry's one answer, registry.available), and
    the experiment (with its frozen gate), its id in `made` the moment it exists."""
    from ...study.gate import gate_snapshot
    from ..models import check_compat
    from .. import registry
    from ...store import insert_experiment

    compat = check_compat(cfg, progress)  # also builds the demo pair once, before any worker starts
    from ...aggregate.data import bench_device_note

    if note := bench_device_note(db, compat.device, cfg.to_dict()):  # said before the rounds' minutes, not after
        echo(note)
    paths = registry.available(cfg, compat, benched=True)
    for path, why in registry.refusals(cfg, compat).items():
        echo(f"{path} path {why} -- not benchmarked")
    # a study's own gate, frozen before a check of today (an odd speed_rounds), is read as frozen: it still benches
    frozen = {r[0] for r in db.execute("SELECT gate_hash FROM studies WHERE gate_hash != ''")}
    gate = gate_snapshot(cfg.gate_file or None, frozen)
    made["id"] = insert_experiment(db, "bench", cfg.to_dict(), compat, gate=gate)
    return {"experiment_id": made["id"], "paths": paths, "plugins": registry.plugin_modules(paths)}


def _run_rounds(cfg: Config, state, results_dir: Path, paths: list[str], mine: list[str], progress: bool,
                plugins: list[str] = ()) -> None:
    """This process's share: both rounds, each path in its own worker process; a failed worker leaves a
    `.failed` record and ends this process's rounds."""
    from ...progress import bar as progress_bar

    rank_cfg = from_dict(cfg.to_dict())
    if state.num_processes > 1 and cfg.models.device == "auto":
        rank_cfg.models.device = str(state.device)  # each process measures on its own device
    from ..batch import batch_sizes

    batched = sum(1 for b in batch_sizes(cfg.bench.batch_sizes) if b > 1)  # one batched call per prompt, size and rep
    total = (len(paths) + batched) * cfg.bench.rounds * len(mine) * cfg.bench.reps
    desc = "bench" if state.num_processes == 1 else f"bench (rank {state.process_index})"
    bar = progress_bar(total=total, desc=desc, unit="run", disable=not progress or not mine,
                       position=state.process_index)
    cfg_file = results_dir / f"config-rank{state.process_index}.json"
    cfg_file.write_text(json.dumps(rank_cfg.to_dict(), ensure_ascii=False))
    try:
        for round_no, order in enumerate(round_orders(paths, cfg.bench.rounds), start=1) if mine else []:
            for k, path in enumerate(order):
                bar.set_postfix_str(f"round {round_no}: {path} (own process)")
                out = results_dir / f"rank{state.process_index}-r{round_no}-{path}.json"
                error = _run_worker_process(cfg_file, path, round_no, k, mine, state.process_index, out, bar, plugins)
                if error is not None:
                    failed = ProcessRecord(path=path, round=round_no, order=k, rank=state.process_index,
                                           status="failed", error=error)
                    out.with_suffix(".failed").write_text(json.dumps(asdict(failed)))
                    return
    finally:
        bar.close()


def _store_results(db, exp_id: int, results_dir: Path) -> list[ProcessRecord]:
    """Every rank's results in run order, all or nothing; then the failed workers' records. Returns the failures."""
    from ...store import insert_bench_process, insert_bench_processes

    results = [json.loads(f.read_text()) for f in results_dir.glob("rank*-r*.json")]
    results.sort(key=lambda r: (r["process"]["rank"], r["process"]["round"], r["process"]["order"]))  # run order
    insert_bench_processes(db, exp_id, [
        (ProcessRecord(**r["process"]), [(TimingRun(**x["run"]), [GenerationRecord(**g) for g in x["records"]])
                                         for x in r["runs"]],
         [(BatchRun(**x["run"]), GenerationRecord(**x["record"]) if x["record"] else None) for x in r.get("batch_runs", [])])
        for r in results])
    failures = []
    for f in sorted(results_dir.glob("rank*.failed")):
        failed = ProcessRecord(**json.loads(f.read_text()))
        insert_bench_process(db, exp_id, failed, [])
        failures.append(failed)
    return failures


def run_bench(cfg: Config, db, *, progress: bool = True, echo=print) -> BenchSummary | None:
    """Run the whole protocol, store every raw run, return the summary (None on non-main processes)."""
    import shutil

    from ..handoff import share_decision
    from ...study.pairs import distributed_state
    from ...task.prompts import load_prompts

    state = distributed_state(cfg)
    db_path = Path(db.execute("PRAGMA database_list").fetchone()[2])
    prompt_ids = [p.id for p in load_prompts(ids=cfg.bench.prompts or None)]
    made = {}  # the experiment's id once it exists: a stop from then on (the plan handed over too) removes it
    try:
        plan = share_decision(state, db_path.with_name(f"{db_path.name}.bench-plan.json"),
                              lambda: _decide(cfg, db, progress, echo, made))
        exp_id, paths = plan["experiment_id"], plan["paths"]
        results_dir = db_path.with_name(f"{db_path.name}.bench-e{exp_id}")
        results_dir.mkdir(exist_ok=True)
        with state.split_between_processes(prompt_ids) as mine:
            _run_rounds(cfg, state, results_dir, paths, mine, progress, plan.get("plugins", []))
    except BaseException as exc:  # Ctrl-C too: results are stored only once every round ran, so none is kept
        if state.is_main_process and "id" in made:
            from ...store import discard_bench_experiment

            # the workers' files (the config among them) and the empty experiment went unsaid and stayed behind
            exp_id = made["id"]
            shutil.rmtree(db_path.with_name(f"{db_path.name}.bench-e{exp_id}"), ignore_errors=True)
            db_path.with_name(f"{db_path.name}.bench-plan.json").unlink(missing_ok=True)  # a stop as it is read
            gone = discard_bench_experiment(db, exp_id)
            echo(f"bench {'interrupted' if isinstance(exc, KeyboardInterrupt) else 'stopped by the error below'}: "
                 "no run was stored (a benchmark stores its runs once every round has run)"
                 + (f"; its experiment {exp_id} was removed" if gone else "") + "; run `evalkit bench` again")
        raise
    state.wait_for_everyone()
    if not state.is_main_process:
        return None
    try:
        failures = _store_results(db, exp_id, results_dir)
    finally:
        shutil.rmtree(results_dir, ignore_errors=True)
    if failures:
        f = failures[0]
        last = [ln for ln in f.error.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        raise EvalkitError(
            f"benchmark worker for the {f.path} path (round {f.round}, rank {f.rank}) failed: {last[0]}",
            f"the full error is stored in bench_processes of experiment {exp_id}; fix it and rerun",
        )
    return summarize(db, exp_id)


def bench_at(cfg: Config, db_path: Path | str, *, reps: int | None = None, rounds: int | None = None,
             decoding: str | None = None,
             prompts: list[str] | None = None, batch_sizes: list[int] | None = None, progress: bool = True,
             echo=print) -> tuple[BenchSummary, dict] | None:
    """`evalkit bench`: the options over the config (each checked), the prompts checked before any file is created,
    then the whole protocol on the database at `db_path`. Returns (summary, `bench --json`'s document), or None on a
    non-main process under accelerate (the main process reports)."""
    from ..batch import batch_sizes as checked_sizes, refuse_no_batch
    from ...store import open_db
    from ...task.prompts import load_prompts
    from .summary import bench_json

    if batch_sizes is not None:
        cfg.bench.batch_sizes = checked_sizes(batch_sizes)
        # an option that would do nothing is refused, not ignored (load_config refuses bench.batch_sizes alike)
        given = ",".join(map(str, cfg.bench.batch_sizes)) or "(empty)"
        refuse_no_batch(cfg.bench.batch_sizes, f"--batch-sizes {given}",
                        "pass sizes above 1, e.g. `--batch-sizes 1,2,4,8`, or leave the option out")
    if reps is not None:
        if reps < 1:
            raise EvalkitError(f"--reps {reps} must be at least 1", "pass a positive number")
        cfg.bench.reps = reps
    if rounds is not None:
        if rounds < 2:
            raise EvalkitError(f"--rounds {rounds} must be at least 2",
                               "the protocol runs each path in a fresh process at least twice, the order swapped "
                               "(ABBA); pass 2 or more (4, the default, gives a narrower interval)")
        if rounds % 2:  # ABBA balances the order over pairs of rounds only
            raise EvalkitError(f"--rounds {rounds} must be even: each round swaps the paths' order, so {rounds} rounds "
                               f"put the first path first in {rounds // 2 + 1} and the other in {rounds // 2}, and drift "
                               "between processes (the machine warming, throttling) would favour one",
                               f"pass {rounds - 1 if rounds > 2 else 2} or {rounds + 1} (4, the default, gives a "
                               "narrower interval than 2)")
        cfg.bench.rounds = rounds
    if decoding:
        cfg.decoding.mode = decoding
    if prompts:
        cfg.bench.prompts = list(prompts)
    # a bad prompt id fails before any file is created
    load_prompts(ids=cfg.bench.prompts or None, key="" if prompts else "bench.prompts",
                 source=cfg.source or "the config")
    from ..models import check_model_refs

    check_model_refs(cfg)  # and a missing model folder
    db = open_db(db_path)
    summary = run_bench(cfg, db, progress=progress, echo=echo)
    return None if summary is None else (summary, bench_json(db, summary))
