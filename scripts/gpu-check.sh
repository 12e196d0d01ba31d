#!/usr/bin/env bash
# One-call GPU check: set up, build (or reuse) the demo pair, `evalkit check`, a short `evalkit bench` in float16
# and in bfloat16 with the per-device CUDA peaks, the target split over two GPUs with device_map when two are
# present, and one JSON summary (default results/gpu-check.json). Exits non-zero with a clear message when a
# column is missing. Usage:
#   scripts/gpu-check.sh                      # on a CUDA machine
#   scripts/gpu-check.sh --cpu                # the same on the CPU (the test suite runs this)
#   scripts/gpu-check.sh --target DIR --draft DIR --out FILE [--dtypes bfloat16] [--reps N]
#   scripts/gpu-check.sh --validate FILE      # only check an existing summary's columns
# Environment: EVALKIT_PYTHON (a Python that already has evalkit: no set-up), TORCH_SPEC (the torch to
# install on a GPU machine, default torch==2.13.0, PyPI's Linux wheel is built with CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
cpu=0
for arg in "$@"; do
  case "$arg" in
    --cpu) cpu=1 ;;
    --validate) exec "${EVALKIT_PYTHON:-$(command -v python3)}" scripts/gpu_check.py "$@" ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  esac
done
die() { echo "gpu-check: $*" >&2; exit 2; }

if [ -n "${EVALKIT_PYTHON:-}" ]; then
  py="$EVALKIT_PYTHON"
elif [ "$cpu" = 1 ]; then
  # the project's own environment (scripts/setup.sh); set up only when it is missing
  .venv/bin/python -c "import evalkit, torch" 2>/dev/null || scripts/setup.sh
  py=.venv/bin/python
else
  # a GPU machine: its own environment, reusing a CUDA torch the system already has
  venv="${EVALKIT_GPU_VENV:-.venv-gpu}"
  [ -x "$venv/bin/python" ] || python3 -m venv --system-site-packages "$venv" || die "cannot create $venv (python3 -m venv)"
  if ! "$venv/bin/python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "gpu-check: installing ${TORCH_SPEC:-torch==2.13.0} (a CUDA build) into $venv" >&2
    "$venv/bin/python" -m pip install -q "${TORCH_SPEC:-torch==2.13.0}" || die "cannot install torch (no network? set TORCH_SPEC, or EVALKIT_PYTHON to a Python with CUDA torch and evalkit)"
  fi
  if ! "$venv/bin/python" -c "import evalkit" 2>/dev/null; then
    "$venv/bin/python" -m pip install -q -e . || die "cannot install evalkit into $venv"
  fi
  "$venv/bin/python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || die "torch in $venv sees no CUDA device: check nvidia-smi and the driver, or run with --cpu"
  py="$venv/bin/python"
fi
export GPU_CHECK_SETUP_SECONDS=$(( $(date +%s) - start ))
exec "$py" scripts/gpu_check.py "$@"
