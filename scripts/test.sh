#!/usr/bin/env bash
# Set up (first time) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# The end-to-end tests drive Debian's Chromium through Playwright (Playwright's own browser download
# is not used); a CJK font makes the Chinese in the saved screenshots readable.
if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/truetype/wqy ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "evalkit tests: installing chromium and a CJK font (Debian packages)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null
  elif [ ! -x /usr/bin/chromium ]; then
    echo "evalkit tests need /usr/bin/chromium: sudo apt-get install chromium fonts-wqy-zenhei" >&2
    exit 1
  fi
fi
exec .venv/bin/python -m pytest "$@"
