#!/usr/bin/env bash
# Write constraints.txt from .venv: the versions the test suite has just passed with. To move to newer releases:
#   EVALKIT_LATEST=1 scripts/test.sh && scripts/lock.sh
# (EVALKIT_LATEST=1 installs the newest releases pyproject.toml's ranges allow, ignoring constraints.txt.)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "evalkit lock: no .venv here; run scripts/test.sh first" >&2; exit 1; }
# torch is left out (scripts/setup.sh installs the build TORCH_SPEC names), and pip itself; the tools that build
# confseq stay in (a new cmake could break that build as a new transformers broke the tests).
frozen="$(.venv/bin/python -m pip freeze --all --exclude-editable | grep -viE '^(torch|pip)==' | sort -f)"
if ! grep -qi '^gradio==' <<<"$frozen"; then
  echo "evalkit lock: .venv has no gradio; install the project first (scripts/test.sh)" >&2
  exit 1
fi
{
  cat <<'HEAD'
# The versions the test suite last passed with: scripts/setup.sh installs within them (the README's two commands and
# .ci/run), so a release made since cannot change what a fresh install gets. pyproject.toml keeps the ranges the
# project supports; this file is what was tested (tests/test_packaging.py checks every pin lies within them).
# Written by scripts/lock.sh; EVALKIT_LATEST=1 scripts/test.sh tries the newest releases instead.
HEAD
  echo "$frozen"
} > constraints.txt.new
mv constraints.txt.new constraints.txt
echo "evalkit lock: constraints.txt pins $(grep -vc '^#' constraints.txt) packages" >&2
