#!/usr/bin/env bash
# Create .venv once and install evalkit into it. Usage: scripts/setup.sh [test]
# Re-running is cheap: the install is skipped while pyproject.toml and constraints.txt are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
py="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$py" -m venv .venv
# The versions the tests last passed with (constraints.txt, scripts/lock.sh); EVALKIT_LATEST=1 takes the newest releases
# that pyproject.toml's ranges allow instead (also the way out when a TORCH_SPEC of another torch release asks for
# other versions of its own dependencies than the pins).
pins=(-c constraints.txt)
[ "${EVALKIT_LATEST:-}" != 1 ] || pins=()
# torch first and pinned: with no torch installed, a bare requirement pulls a multi-GB CUDA build.
# TORCH_SPEC picks another build (e.g. TORCH_SPEC="torch==2.5.1" with your CUDA index).
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "evalkit setup: installing ${TORCH_SPEC:-torch==2.13.0}" >&2
  .venv/bin/python -m pip install -q ${pins[@]+"${pins[@]}"} "${TORCH_SPEC:-torch==2.13.0}"
fi
# confseq (the reference tests/test_betting.py checks the betting confidence sequences against) is published only as
# source whose build pins pybind11 2.6, which does not compile for Python 3.11: build it without build isolation against
# a current pybind11, before the test extras ask for it. It needs Boost's headers (Debian: libboost-dev; scripts/test.sh).
if [ "$extra" = test ] && ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('confseq') is None)"; then
  echo "evalkit setup: building confseq 0.0.11 (the tests' reference for betting confidence sequences)" >&2
  .venv/bin/python -m pip install -q ${pins[@]+"${pins[@]}"} "pybind11>=2.11" scikit-build cmake ninja setuptools wheel
  .venv/bin/python -m pip install -q ${pins[@]+"${pins[@]}"} --no-build-isolation "confseq==0.0.11"
fi
stamp=".venv/.evalkit-installed-${extra:-base}"
want="$(cat pyproject.toml ${pins[@]+"${pins[1]}"} | sha256sum | cut -d' ' -f1)"  # a new pin or range installs again
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "evalkit setup: installing the project${extra:+ with [$extra]}" >&2
  .venv/bin/python -m pip install -q ${pins[@]+"${pins[@]}"} -e ".${extra:+[$extra]}"
  echo "$want" > "$stamp"
fi
