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


def _why(r) -> str:
    """A failed launch's stderr: the main process's own lines (the cause, usually) and the end (often only the other
    rank's dropped connection)."""
    main = [line for line in r.stderr.splitlines() if line.startswith("[rank0]")]
    return "\n".join(main[-40:]) + "\n[...]\n" + r.stderr[-2500:]


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


def _emptied_copy(src: Path, dst: Path) -> int:
    """A copy of a one-pool database without the pool's work (generations, pairs, gold references, pre-screen
    answers), its experiment kept with its secret sample_seed: resuming it redoes every work item. Returns its id."""
    a, b = sqlite3.connect(str(src)), sqlite3.connect(str(dst))
    a.backup(b)
    a.close()
    with b:
        for table in ("pairs", "reference_outputs", "prescreen", "generations"):
            b.execute(f"DELETE FROM {table}")
        (exp_id,) = b.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()
    b.close()
    return exp_id


@pytest.fixture
def pool_config(make_config):
    return make_config(**{"decoding.mode": "sample", "pool.prompts": ["writing-01", "writing-02", "writing-05"]})


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["cpu", "torchrun"])
def test_two_processes_make_the_same_pool_as_one(pool_config, tmp_path, launcher):
    """Each pool draws a secret base for its seeds (stored with the experiment), so the two processes redo the
    one-process pool's experiment (its work removed, its base kept) with --resume: the same base, the same content."""
    env = _env(tmp_path)
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    subprocess.run([sys.executable, "-m", "evalkit", "generate", "--config", str(pool_config), "--db", str(one), "--samples", "2"],
                   check=True, env=env, cwd=ROOT, capture_output=True, timeout=300)
    exp_id = _emptied_copy(one, two)
    r = subprocess.run(accelerate(launcher) + ["-m", "evalkit", "generate", "--config", str(pool_config), "--db", str(two),
                                             "--samples", "2", "--resume", str(exp_id)],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, _why(r)
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
    assert r.returncode == 0, _why(r)
    assert "already done" in r.stdout
    got = content(db)
    assert {(p, s) for p, s, _path, _ids in got} == {(p, s) for p in ("writing-01", "writing-02", "writing-05") for s in range(4)}
    assert len(got) == 3 * 4 * 2


def _partial_shard(path: Path, migrations_done: int) -> None:
    """A shard as a rank leaves it when killed while open_db was still creating it: the first few migrations."""
    from sqlite_utils import Database

    from evalkit.store import migrations
    from evalkit.store.database import now, write_transaction

    db = Database(sqlite3.connect(str(path)))
    if migrations_done:
        db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for name, fn in migrations.MIGRATIONS[:migrations_done]:
            with write_transaction(db):
                fn(db)
                db.execute("INSERT INTO _migrations VALUES (?, ?)", [name, now()])
    db.conn.close()


def test_a_rank_killed_while_creating_its_shard_does_not_stop_the_resume(pool_config, tmp_path):
    """CI, stop 31: one rank stored a pair while the other was still migrating its new shard; both were killed, and
    every `--resume` then failed on the main process ('no such column: kind' reading the half-made shard) while the
    other rank died on a dropped connection. A half-made shard holds no work (work is written once it is open): the
    resume reads it through the migrations, finds nothing, and removes it."""
    from evalkit.config import load_config
    from evalkit.study.pairs import build_pool, shard_path

    cfg = load_config(pool_config)
    db = tmp_path / "pool.db"
    first = build_pool(cfg, db, samples=1, progress=False, echo=lambda *_: None)
    before = content(db)
    for rank, done in ((1, 0), (2, 1), (3, 8)):  # an empty file, the first migration, half of them
        _partial_shard(shard_path(db, first.experiment_id, rank), done)
    again = build_pool(cfg, db, samples=1, resume=first.experiment_id, progress=False, echo=lambda *_: None)
    assert again.skipped_done == 3 and content(db) == before  # every item was already done, nothing added
    assert not list(tmp_path.glob("pool.db.shard-*"))


class _Rank:
    """accelerate's PartialState as share_decision uses it: one of two processes, here threads at a real barrier."""

    def __init__(self, main: bool, barrier):
        self.is_main_process, self.barrier = main, barrier

    def wait_for_everyone(self):
        self.barrier.wait()


def test_a_bug_on_the_main_process_stops_the_others_with_a_message_not_a_hang(tmp_path):
    """The others wait for the main process's decision; a crash there (not an EvalkitError) used to leave them at
    the barrier until gloo's 'Connection closed by peer'. Now the main process raises its own exception and the
    others a clear error that sends the user to it."""
    import threading

    from evalkit.errors import EvalkitError
    from evalkit.generation.handoff import share_decision

    def run(decide) -> list:
        barrier, got = threading.Barrier(2, timeout=20), [None, None]

        def rank(i):
            try:
                got[i] = share_decision(_Rank(i == 0, barrier), tmp_path / "pool.db.plan.json", decide)
            except BaseException as e:  # noqa: BLE001 - the outcome is what is checked
                got[i] = e
        threads = [threading.Thread(target=rank, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        return got

    def broken():
        raise KeyError("work_index")

    main, other = run(broken)
    assert isinstance(main, KeyError)
    assert isinstance(other, EvalkitError) and "main process failed" in str(other) and "KeyError" in str(other)
    assert run(lambda: {"experiment_id": 7}) == [{"experiment_id": 7}] * 2
    assert not (tmp_path / "pool.db.plan.json").exists()


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
    assert r.returncode == 0, _why(r)
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
    assert r.returncode == 0, _why(r)
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
