#!/usr/bin/env bash
# Set up (first time) and start the rating app on the embedded defaults: configs/demo.toml,
# SQLite in results/, the offline demo model pair (built on first use, with a progress bar).
# Extra arguments go to `evalkit serve` (see: .venv/bin/evalkit serve --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/evalkit serve "$@"
