"""accelerate sharding on CPU: two processes make the same pair-pool content as one; an interrupted
sharded run resumes without duplicates; the benchmark refuses to pool different device kinds."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalkit.ui.server import free_port

ROOT = Path(__file__).parent.parent
HOSTFILE = ROOT / "tests" / "fixtures" / "mpi-localhost"
COMMON = ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]




def accelerate(launcher: str = "cpu") -> list[str]:
    """`accelerate launch` with two processes on this machine.

    "cpu": the issue's `--cpu --num_processes 2`. For more than one CPU process accelerate starts them with
    mpirun, which it only uses when given a hostfile (ours: localhost, 2 slots); the ranks then rendezvous
    over gloo on 127.0.0.1. "torchrun": the multi-GPU launcher, which also works on a machine without CUDA
    because evalkit tells PartialState to use the CPU.
    """
    base = [sys.executable, "-m", "accelerate.commands.launch", *COMMON, "--main_process_port", str(free_port())]
    if launcher == "cpu":
        return base + ["--cpu", "--mpirun_hostfile", str(HOSTFILE)]
    return base + ["--multi_gpu"]


def _env(tmp_path):
    env = dict(os.environ, EVALKIT_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               # Open MPI refuses to start as root (CI containers) without both of these
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("EVALKIT_DB", None)
    return env


def content(db_path) -> set:
    con = sqlite3.connect(str(db_path))
    rows = con.execute(
        """SELECT p.prompt_id, p.sample, g.path, g.token_ids FROM pairs p
           JOIN generations g ON g.id IN (p.ordinary_generation_id, p.assisted_generation_id)""").fetchall()
    dupes = con.execute(
        "SELECT COUNT(*) - COUNT(DISTINCT prompt_id || '/' || sample) FROM pairs WHERE kind = 'study'").fetchone()[0]
    con.close()
    assert dupes == 0
    return set(rows)


@pytest.fixture
def pool_config(make_config):
    return make_config(**{"decoding.mode": "sample", "pool.prompts": ["writing-01", "writing-02", "writing-05"]})


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["cpu", "torchrun"])
def test_two_processes_make_the_same_pool_as_one(pool_config, tmp_path, launcher):
    env = _env(tmp_path)
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    subprocess.run([sys.executable, "-m", "evalkit", "generate", "--config", str(pool_config), "--db", str(one), "--samples", "2"],
                   check=True, env=env, cwd=ROOT, capture_output=True, timeout=300)
    r = subprocess.run(accelerate(launcher) + ["-m", "evalkit", "generate", "--config", str(pool_config), "--db", str(two), "--samples", "2"],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    a, b = content(one), content(two)
    assert len(a) == 3 * 2 * 2 and a == b
    con = sqlite3.connect(str(two))
    ranks = {row[0] for row in con.execute("SELECT DISTINCT rank FROM generations")}
    order = [row[0] for row in con.execute("SELECT work_index FROM pairs ORDER BY rowid")]
    con.close()
    assert ranks == {0, 1}  # both processes did work
    assert order == sorted(order)  # merged in work-list order
    assert not list(tmp_path.glob("two.db.shard-*")) and not (tmp_path / "two.db.plan.json").exists()


@pytest.mark.mpi
@pytest.mark.slow
def test_interrupted_sharded_run_resumes_without_duplicates(pool_config, tmp_path):
    env = _env(tmp_path)
    db = tmp_path / "pool.db"
    proc = subprocess.Popen(accelerate() + ["-m", "evalkit", "generate", "--config", str(pool_config), "--db", str(db), "--samples", "4"],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 240
    try:
        while time.time() < deadline:  # kill as soon as a shard holds a committed pair
            shards = list(tmp_path.glob("pool.db.shard-*-r*.db"))
            n = 0
            for s in shards:
                try:
                    c = sqlite3.connect(f"file:{s}?mode=ro", uri=True)
                    n += c.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]
                    c.close()
                except sqlite3.Error:
                    pass
            if n >= 1:
                break
            time.sleep(0.2)
        else:
            pytest.fail("no shard got a pair in time")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    con = sqlite3.connect(str(db))
    exp_id = con.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    con.close()
    r = subprocess.run(accelerate() + ["-m", "evalkit", "generate", "--config", str(pool_config), "--db", str(db),
                                     "--samples", "4", "--resume", str(exp_id)],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "already done" in r.stdout
    got = content(db)
    assert {(p, s) for p, s, _path, _ids in got} == {(p, s) for p in ("writing-01", "writing-02", "writing-05") for s in range(4)}
    assert len(got) == 3 * 4 * 2


def test_bench_refuses_to_pool_device_kinds(tmp_path):
    from evalkit.generation.bench import summarize
    from evalkit.config import Config
    from evalkit.records import GenerationRecord, ProcessRecord, TimingRun
    from evalkit.store import insert_bench_process, insert_experiment, open_db

    db = open_db(tmp_path / "b.db")
    exp = insert_experiment(db, "bench", Config().to_dict(), {})
    for path, device, secs in (("ordinary", "cpu", 2.0), ("assisted", "cuda:0", 1.0)):
        run = TimingRun(path=path, prompt_id="writing-01", round=1, rep=0, seed=1, new_tokens=10, stop_reason="eos",
                        seconds=secs, device=device)
        rec = GenerationRecord(prompt_id="writing-01", path=path, new_tokens=10, stop_reason="eos", device=device)
        insert_bench_process(db, exp, ProcessRecord(path=path, round=1, order=0, device=device), [(run, [rec])])
    s = summarize(db, exp).to_json()
    assert s["speedup"] is None and s["device_kinds"] == ["cpu", "cuda"]
    assert any("different device kinds" in n for n in s["notes"])
    assert json.dumps(s)  # serialisable for --json


@pytest.mark.mpi
@pytest.mark.slow
def test_bench_under_accelerate_splits_prompts_and_keeps_the_protocol(make_config, tmp_path):
    cfg = make_config(draft="target_copy", **{"bench.prompts": ["writing-01", "writing-02"]})
    env = _env(tmp_path)
    db = tmp_path / "bench.db"
    r = subprocess.run(accelerate() + ["-m", "evalkit", "bench", "--config", str(cfg), "--db", str(db), "--reps", "1",
                                     "--decoding", "greedy", "--json"],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)["summary"]  # printed once, by the main process
    assert summary["identical_outputs"] == 1.0 and summary["matched_pairs"] == 4
    con = sqlite3.connect(str(db))
    procs = con.execute('SELECT rank, path, round FROM bench_processes ORDER BY id').fetchall()
    runs = con.execute("SELECT DISTINCT rank, prompt_id FROM timing_runs ORDER BY rank").fetchall()
    con.close()
    # each rank ran the whole ABBA protocol, each path in its own process, for its own prompt
    assert [p for p in procs if p[0] == 0] == [(0, "ordinary", 1), (0, "assisted", 1), (0, "assisted", 2), (0, "ordinary", 2)]
    assert [p[1:] for p in procs if p[0] == 1] == [("ordinary", 1), ("assisted", 1), ("assisted", 2), ("ordinary", 2)]
    assert runs == [(0, "writing-01"), (1, "writing-02")]
    assert not list(tmp_path.glob("bench.db.bench-*"))  # result files cleaned up


@pytest.mark.slow
def test_device_map_spreads_the_target_and_records_weights_per_device(make_config, tiny_models, tmp_path):
    """accelerate's big-model inference: a target too big for its memory budget is split (here CPU + disk,
    as it would be over GPUs), both paths still give the same greedy tokens, and the weights per device are
    recorded for each bench process."""
    from transformers import AutoModelForCausalLM

    full_mb = sum(p.numel() * p.element_size() for p in AutoModelForCausalLM.from_pretrained(tiny_models["target"]).parameters()) / (1 << 20)
    cfg = make_config(draft="target_copy", **{
        "models.device_map": "auto", "models.max_memory": ["cpu=300KB"],  # about half the tiny target
        "models.offload_folder": str(tmp_path / "offload"), "bench.prompts": ["writing-01"]})
    db = tmp_path / "bench.db"
    r = subprocess.run([sys.executable, "-m", "evalkit", "bench", "--config", str(cfg), "--db", str(db), "--reps", "1",
                        "--decoding", "greedy", "--json"], env=_env(tmp_path), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads(r.stdout)["summary"]
    assert s["identical_outputs"] == 1.0 and s["acceptance_rate"] == 1.0  # the offloaded target verifies its own copy
    for proc in s["processes"]:
        where = proc["target_placement"]
        assert set(where) == {"cpu", "disk"} and abs(sum(where.values()) - full_mb) < 1e-3, where
    assisted = [p for p in s["processes"] if p["path"] == "assisted"]
    assert all(set(p["draft_placement"]) == {"cpu"} for p in assisted)  # the draft stays where it was put


@pytest.mark.parametrize("models, says", [
    ({"max_memory": ["cpu=1GiB"]}, "models.device_map"),  # a memory budget means nothing without a device_map
    ({"device_map": "auto", "max_memory": ["20GiB"]}, '"device=size"'),
])
def test_device_map_settings_are_checked(models, says):
    from evalkit.config import from_dict
    from evalkit.errors import EvalkitError

    with pytest.raises(EvalkitError) as e:
        from_dict({"models": models}, "c.toml")
    assert says in str(e.value)
