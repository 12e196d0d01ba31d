#!/usr/bin/env bash
# One-call GPU check: set up, build (or reuse) the demo pair, `evalkit check`, a short `evalkit bench` in float16
# and in bfloat16 with the per-device CUDA peaks (the bfloat16 one with --batch-sizes: ordinary at 1-32 against
# assisted at 1), the target split over two GPUs with device_map when two are present, and one JSON summary
# (default results/gpu-check.json). Exits non-zero with a clear message when a column is missing. Usage:
#   scripts/gpu-check.sh                      # on a CUDA machine
#   scripts/gpu-check.sh --cpu                # the same on the CPU (the test suite runs this)
#   scripts/gpu-check.sh --target DIR --draft DIR --out FILE [--dtypes bfloat16] [--reps N] [--batch-sizes 1,8,64]
#   scripts/gpu-check.sh --validate FILE      # only check an existing summary's columns
#   scripts/gpu-check.sh --fetch-wheels       # download into .whl/ the small wheels a machine with no network lacks
# Set-up installs nothing into the Python: evalkit runs from this checkout. On a GPU machine the Python is python3
# (the one holding a CUDA torch) or EVALKIT_PYTHON; what check and bench import and it lacks goes into
# results/gpu-check-site/, from wheels in .whl/ (GPU_CHECK_WHEELS) when there are some, else over the network.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
start=$(date +%s)
cpu=0
die() { echo "gpu-check: $*" >&2; exit 2; }
for arg in "$@"; do
  case "$arg" in
    --cpu) cpu=1 ;;
    --validate) exec "${EVALKIT_PYTHON:-$(command -v python3)}" scripts/gpu_check.py "$@" ;;
    --fetch-wheels)
      # the tested versions: those of the project's own environment when it exists
      fpy="${EVALKIT_PYTHON:-}"; [ -n "$fpy" ] || { [ -x .venv/bin/python ] && fpy=.venv/bin/python || fpy=python3; }
      exec "$fpy" scripts/gpu_setup.py fetch-wheels "${GPU_CHECK_WHEELS:-.whl}" ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  esac
done

if [ -n "${EVALKIT_PYTHON:-}" ]; then
  py="$EVALKIT_PYTHON"
elif [ "$cpu" = 1 ]; then
  # the project's own environment (scripts/setup.sh); set up only when it is missing
  .venv/bin/python -c "import evalkit, torch" 2>/dev/null || scripts/setup.sh
  py=.venv/bin/python
else
  py="$(command -v python3)" || die "no python3 on the PATH: set EVALKIT_PYTHON to a Python with a CUDA build of torch"
fi
site="$("$py" scripts/gpu_setup.py prepare "${GPU_CHECK_SITE:-results/gpu-check-site}" --wheels "${GPU_CHECK_WHEELS:-.whl}")" \
  || die "set-up failed (the line above says what is missing and how to fix it)"
export PYTHONPATH="$site:$root${PYTHONPATH:+:$PYTHONPATH}"
if [ "$cpu" = 0 ]; then
  "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || die "torch $("$py" -c 'import torch; print(torch.__version__)') in $py sees no CUDA device: check nvidia-smi and the driver, point EVALKIT_PYTHON at a Python with a CUDA build of torch, or run with --cpu"
fi
export GPU_CHECK_SETUP_SECONDS=$(( $(date +%s) - start ))
exec "$py" scripts/gpu_check.py "$@"
