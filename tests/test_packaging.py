"""The packaging facts that users rely on: requirements for Spaces equal pyproject, the README's two commands."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _names(reqs):
    return {re.split(r"[<>=\[;]", r, 1)[0].strip().lower() for r in reqs}


def test_space_requirements_match_pyproject():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    space = [ln.strip() for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert _names(deps) == _names(space)
    strip = lambda r: re.sub(r"\[.*?\]", "", r).replace(" ", "")  # noqa: E731
    assert {strip(r) for r in deps} == {strip(r) for r in space}


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    text = (ROOT / "README.md").read_text()
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    commands = [ln.split("#")[0].strip() for ln in block.splitlines() if ln.strip()]
    assert commands == ["./scripts/start.sh", "./scripts/test.sh"]
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
