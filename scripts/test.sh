#!/usr/bin/env bash
# Set up (first time) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# The end-to-end tests drive Debian's Chromium through Playwright (Playwright's own browser download
# is not used).
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "evalkit tests: installing chromium (Debian package)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "evalkit tests need /usr/bin/chromium: sudo apt-get install chromium" >&2
    exit 1
  fi
fi
exec .venv/bin/python -m pytest "$@"
