"""scripts/gpu-check.sh --cpu: the one-call GPU check run here on the CPU with the chat stand-in pair (a bfloat16
bench: half precision measured on the CPU), its JSON summary, and a clear failure on a missing column."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from familyfixtures import families  # noqa: F401

# the whole GPU check script, on the CPU
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu-check.sh"


def gpu_check(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, EVALKIT_PYTHON=sys.executable, EVALKIT_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run([str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_gpu_check_cpu_mode_writes_a_complete_summary_and_refuses_a_missing_column(families, tmp_path):
    out = tmp_path / "gpu-check.json"
    r = gpu_check("--cpu", "--target", str(families["chat_target"]), "--draft", str(families["chat_draft"]),
                  "--dtypes", "bfloat16", "--out", str(out), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
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

    # a summary missing a column fails validation, naming the column
    del s["benches"]["bfloat16"]["peak_rss_mb"]["assisted"]
    broken = tmp_path / "broken.json"
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
