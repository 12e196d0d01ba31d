#!/usr/bin/env bash
# Set up (first time) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# The end-to-end tests drive Debian's Chromium through Playwright (Playwright's own browser download
# is not used); a CJK font makes the Chinese in the saved screenshots readable. accelerate starts several
# CPU processes (`--cpu --num_processes 2`) with mpirun, from Open MPI.
if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/truetype/wqy ] || ! command -v mpirun >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    echo "evalkit tests: installing chromium, a CJK font and Open MPI (Debian packages)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-zenhei openmpi-bin >/dev/null
  else
    echo "evalkit tests need chromium and mpirun: sudo apt-get install chromium fonts-wqy-zenhei openmpi-bin" >&2
    exit 1
  fi
fi
exec .venv/bin/python -m pytest "$@"
