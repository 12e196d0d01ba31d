#!/usr/bin/env bash
# Set up (first time) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The end-to-end tests drive Debian's Chromium through Playwright (Playwright's own browser download
# is not used); a CJK font makes the Chinese in the saved screenshots readable. accelerate starts several
# CPU processes (`--cpu --num_processes 2`) with mpirun, from Open MPI. Boost's headers build confseq, the
# reference of tests/test_betting.py (scripts/setup.sh), so they come before the setup.
packages="chromium fonts-wqy-zenhei openmpi-bin libboost-dev"
if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/truetype/wqy ] || ! command -v mpirun >/dev/null \
   || [ ! -f /usr/include/boost/math/distributions/normal.hpp ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "evalkit tests: installing chromium, a CJK font, Open MPI and Boost's headers (Debian packages)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null
  else
    echo "evalkit tests need chromium, mpirun and Boost's headers: sudo apt-get install $packages" >&2
    exit 1
  fi
fi
scripts/setup.sh test
# One worker per core, at most 4 (pytest-xdist; each test still runs whole in one process); EVALKIT_TEST_WORKERS=1 runs
# them in this process. Workers take tests as they free up, since a few tests take a minute and most a second. Each
# worker's torch gets one thread, so the workers share the cores out instead of competing for each one.
cores="$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)')"
workers="${EVALKIT_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}"
if ! [[ "$workers" =~ ^[1-9][0-9]*$ ]]; then
  echo "evalkit tests: EVALKIT_TEST_WORKERS must be a whole number of workers, 1 or more (got '$workers'); 1 runs the tests in one process" >&2
  exit 2
fi
if [ "$workers" -gt 1 ]; then
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
  set -- -n "$workers" --dist worksteal "$@"
fi
# The slowest tests are listed at the end, so a CI that grows longer says where the time went.
exec .venv/bin/python -m pytest --durations=30 "$@"
