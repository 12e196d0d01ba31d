"""Claims about the code base that the code can check (ARCHITECTURE.md), and about the test suite itself."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Hides Playwright (and the axe plugin on top of it) the way a minimal install lacks it: the import fails with
# ModuleNotFoundError, as it does when the package is not installed.
_HIDE_PLAYWRIGHT = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('playwright', 'axe_playwright_python'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.mark.slow  # collects the whole suite in a subprocess
def test_the_fast_subset_collects_without_playwright():
    r = subprocess.run([sys.executable, "-c", _HIDE_PLAYWRIGHT, "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-m", "not slow and not browser and not mpi", "tests"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    summary = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0 and "error" not in summary, r.stdout[-3000:] + r.stderr[-2000:]
    skipped = [line for line in r.stdout.splitlines() if "could not import 'playwright.sync_api'" in line]
    assert len(skipped) >= 3, "the browser modules are skipped whole, not collected with an import error"
