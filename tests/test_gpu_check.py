"""scripts/gpu-check.sh --cpu: the one-call GPU check run here on the CPU with the chat stand-in pair (a bfloat16
bench: half precision measured on the CPU), its JSON summary, and a clear failure on a missing column.

It runs on a Python built like the GPU machines this project is lent: torch and Transformers present, evalkit not
installed, its other packages absent, and no package index (PIP_NO_INDEX). The set-up must then take the small
packages from carried wheels, and check and bench must import nothing else of evalkit's dependencies."""

import importlib.metadata
import json
import os
import sqlite3
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from familyfixtures import families  # noqa: F401

# the whole GPU check script, on the CPU
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu-check.sh"


sys.path.insert(0, str(ROOT / "scripts"))
import gpu_setup  # noqa: E402


def gpu_check(*args: str, tmp_path: Path, **env) -> subprocess.CompletedProcess:
    env = dict(os.environ, EVALKIT_PYTHON=sys.executable, EVALKIT_DATA_DIR=str(tmp_path / "data")) | env
    return subprocess.run([str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def _dist_key(name: str) -> str:
    return name.lower().replace("-", "_").split("[")[0]


def bare_python(folder: Path) -> tuple[Path, set[str]]:
    """A Python like a GPU image: a venv whose packages are this environment's, less evalkit itself and less every
    dependency evalkit declares beyond gpu_setup.HEAVY (gradio, datasets, pandas, sqlite-utils, click, ...).
    Returns the interpreter and the hidden distributions."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {_dist_key(d.split(">")[0].split("<")[0].split("=")[0].strip()) for d in declared}
    hidden = (names | {_dist_key(d) for d in gpu_setup.LIGHT.values()} | {"evalkit"}) \
        - {_dist_key(d) for d in gpu_setup.HEAVY.values()}
    hidden_files: set[str] = set()
    for dist in importlib.metadata.distributions():
        if _dist_key(dist.metadata["Name"]) in hidden:
            hidden_files |= {Path(str(f)).parts[0] for f in dist.files or []}
    farm = folder / "site"
    farm.mkdir(parents=True)
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name not in hidden_files and not entry.name.endswith(".pth") and "evalkit" not in entry.name:
            (farm / entry.name).symlink_to(entry)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "py")], check=True)
    py = folder / "py" / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "image.pth").write_text(str(farm) + "\n")
    return py, hidden


def test_gpu_check_cpu_mode_writes_a_complete_summary_and_refuses_a_missing_column(families, tmp_path):
    py, hidden = bare_python(tmp_path / "image")
    assert {"gradio", "datasets", "pandas", "sqlite_utils", "click", "evalkit"} <= hidden
    probe = subprocess.run([str(py), "-c", "import importlib.util as u; print([m for m in ('torch', 'transformers', "
                            "'gradio', 'sqlite_utils', 'evalkit') if u.find_spec(m)])"],
                           cwd=tmp_path, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "['torch', 'transformers']"
    image = {"EVALKIT_PYTHON": str(py), "PIP_NO_INDEX": "1", "GPU_CHECK_SITE": str(tmp_path / "site")}
    pair = ["--target", str(families["chat_target"]), "--draft", str(families["chat_draft"])]
    out = tmp_path / "gpu-check.json"

    # no wheels and no index: set-up stops at once, naming what is missing and the command that fetches it
    r = gpu_check("--cpu", *pair, "--out", str(out), tmp_path=tmp_path, GPU_CHECK_WHEELS=str(tmp_path / "none"),
                  **image)
    assert r.returncode == 2 and not out.exists()
    assert "lacks click, click-default-group" in r.stderr and "sqlite-utils" in r.stderr
    assert "scripts/gpu-check.sh --fetch-wheels" in r.stderr

    # the wheels, fetched where there is an index (here: the package registry), then carried
    wheels = tmp_path / "wheels"
    r = gpu_check("--fetch-wheels", tmp_path=tmp_path, GPU_CHECK_WHEELS=str(wheels))
    assert r.returncode == 0, r.stderr[-3000:]
    assert {gpu_setup.wheel_for(d, wheels) is not None for d in gpu_setup.LIGHT.values()} == {True}

    r = gpu_check("--cpu", *pair, "--dtypes", "bfloat16", "--out", str(out), tmp_path=tmp_path,
                  GPU_CHECK_WHEELS=str(wheels), **image)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"from {wheels} into {tmp_path / 'site'}" in r.stderr
    assert (tmp_path / "site" / "sqlite_utils").is_dir() and not (tmp_path / "site" / "gradio").exists()
    assert "all columns present" in r.stderr
    s = json.loads(out.read_text())
    assert s["mode"] == "cpu" and s["check"]["verdict"] == "same_tokenizer" and s["machine"]["gpus"] == []
    assert s["split"] == {"ran": False, "why": "needs two CUDA devices, found 0"}
    b = s["benches"]["bfloat16"]
    assert b["dtype"] == "bfloat16" and b["dtype_loaded"] == ["bfloat16"] and b["device_kinds"] == ["cpu"]
    assert b["peak_rss_mb"]["ordinary"] > 0 and b["peak_cuda_mb"] == {"ordinary": {}, "assisted": {}}
    # the identical-output share is measured: it is the share of the stored runs, whatever it is
    con = sqlite3.connect(str(tmp_path / "gpu-check-work" / "data" / "gpu-check.db"))
    rows = con.execute("""SELECT t.path, t.prompt_id, t.round, t.rep, g.token_hash FROM timing_runs t
                          JOIN generations g ON g.id = t.generation_id WHERE t.experiment_id = ?""",
                       [b["experiment_id"]]).fetchall()
    con.close()
    by = {(p, k1, k2, k3): h for p, k1, k2, k3, h in rows}
    keys = {k[1:] for k in by}
    assert b["identical_outputs"] == sum(by[("ordinary", *k)] == by[("assisted", *k)] for k in keys) / len(keys)
    print(f"bfloat16 on the CPU, chat stand-in: identical outputs {b['identical_outputs']:.0%} over {len(keys)} pairs")
    # the batch comparison ran in the bfloat16 bench: assisted at 1, ordinary at each size, with the answer
    bt = s["batches"]
    assert s["settings"]["batch_sizes"] == [1, 2] and bt["dtype"] == "bfloat16" and bt["experiment_id"] == b["experiment_id"]
    assert [(r["path"], r["batch_size"]) for r in bt["rows"]] == [("assisted", 1), ("ordinary", 1), ("ordinary", 2)]
    assert bt["answer"] and all(r["total_tokens_per_second"] > 0 and r["peak_rss_mb"] > 0 for r in bt["rows"])

    # a summary missing a column fails validation, naming the column
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(s | {"batches": bt | {"rows": bt["rows"][:2]}}))
    r = gpu_check("--validate", str(broken), tmp_path=tmp_path)
    assert r.returncode != 0 and "gpu-check: missing column batches.rows has no ordinary row at batch size 2" in r.stderr
    del s["benches"]["bfloat16"]["peak_rss_mb"]["assisted"]
    broken.write_text(json.dumps(s))
    r = gpu_check("--validate", str(broken), tmp_path=tmp_path)
    assert r.returncode != 0
    assert "gpu-check: missing column benches.bfloat16.peak_rss_mb.assisted (process peak RSS on the CPU)" in r.stderr
    # a GPU summary must carry the per-device CUDA peaks
    s["mode"], s["machine"]["gpus"], s["settings"]["dtypes"] = "gpu", [{"index": 0}], ["float16", "bfloat16"]
    broken.write_text(json.dumps(s))
    r = gpu_check("--validate", str(broken), tmp_path=tmp_path)
    assert r.returncode != 0 and "missing column benches.float16.dtype_loaded" in r.stderr
    s["benches"]["float16"] = s["benches"]["bfloat16"] | {"dtype_loaded": ["float16"]}
    broken.write_text(json.dumps(s))
    r = gpu_check("--validate", str(broken), tmp_path=tmp_path)
    assert r.returncode != 0 and "missing column benches.float16.peak_cuda_mb.ordinary is {}" in r.stderr
