"""The packaging facts that users rely on: requirements for Spaces equal pyproject, the README's two commands, and a
wheel that works outside the repository."""

import json
import os
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def _names(reqs):
    return {re.split(r"[<>=\[;]", r, 1)[0].strip().lower() for r in reqs}


def _space_requirements(text):
    """requirements.txt's requirements: not its comments, nor pip's option lines (README step 1 puts
    `--extra-index-url https://download.pytorch.org/whl/cpu` first on a CPU Space)."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "-"))]


def test_space_requirements_match_pyproject(text=None):
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    space = _space_requirements((ROOT / "requirements.txt").read_text() if text is None else text)
    assert _names(deps) == _names(space)
    strip = lambda r: re.sub(r"\[.*?\]", "", r).replace(" ", "")  # noqa: E731
    assert {strip(r) for r in deps} == {strip(r) for r in space}


def test_readme_s_cpu_index_line_keeps_the_requirements_equal_to_pyproject():
    """Space audit F17, 2026-12-05: README step 1's CPU index line on requirements.txt's first line was counted as a
    requirement, so a repository that followed the README failed the check above."""
    text = (ROOT / "requirements.txt").read_text()
    test_space_requirements_match_pyproject("--extra-index-url https://download.pytorch.org/whl/cpu\n" + text)


def test_the_tested_versions_lie_within_the_project_s_ranges():
    """constraints.txt, what scripts/setup.sh installs (scripts/lock.sh writes it from a passing run), pins one version
    of every direct dependency, base and test extras, each within pyproject's range; torch is left to TORCH_SPEC; and
    the Space's metadata in the README names the Gradio it pins. (A release since the last tested run once broke a
    fresh install: transformers 5.25, 2026-12-03.)"""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for n, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, version = line.strip().partition("==")
        assert sep and re.fullmatch(r"[A-Za-z0-9_.+!-]+", version), f"constraints.txt line {n}: {line!r} is not NAME==VERSION"
        assert canonicalize_name(name) not in pins, f"constraints.txt pins {name} twice"
        pins[canonicalize_name(name)] = Version(version)
    assert "torch" not in pins  # TORCH_SPEC chooses the build
    wanted = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]
    for r in wanted:
        if canonicalize_name(r.name) == "torch":
            continue
        pin = pins.get(canonicalize_name(r.name))
        assert pin is not None, f"{r.name} is not pinned in constraints.txt: run scripts/lock.sh"
        assert r.specifier.contains(pin, prereleases=True), f"constraints.txt pins {r.name} {pin}, outside pyproject's {r.specifier}"
    assert len(pins) > len(wanted)  # their own dependencies too
    sdk = re.search(r"^sdk_version: (\S+)$", (ROOT / "README.md").read_text(), re.M).group(1)
    assert pins["gradio"] == Version(sdk)


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    text = (ROOT / "README.md").read_text()
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    commands = [ln.split("#")[0].strip() for ln in block.splitlines() if ln.strip()]
    assert commands == ["./scripts/start.sh", "./scripts/test.sh"]
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def _package_dirs(root: Path) -> set[str]:
    return {str(p.parent.relative_to(root)).replace("/", ".") for p in (root / "evalkit").rglob("__init__.py")}


@pytest.mark.slow
def test_the_wheel_installs_and_runs_outside_the_repository(tmp_path):
    """Build the wheel, install it (no dependencies: those come from this test's environment through a .pth file,
    without this checkout's editable install) into a fresh venv, and run the CLI from a folder outside the
    repository: the commands find the prompts, the default config and the gate shipped inside the package."""
    import shutil
    import subprocess
    import sys
    import sysconfig
    import zipfile

    src = tmp_path / "src"  # a copy: building in place would leave build/ and *.egg-info in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("evalkit", "prompts", "configs"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_wheel({str(dist)!r})"],
                   cwd=src, check=True, capture_output=True)
    (wheel,) = dist.glob("evalkit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")} >= _package_dirs(ROOT)
    shipped = {n for n in names if n.startswith("evalkit/resources/") and n.endswith(".toml")}
    assert shipped == {f"evalkit/resources/{p.parent.name}/{p.name}" for d in ("prompts", "configs")
                       for p in (ROOT / d).glob("*.toml")}

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # this environment's packages, appended after the venv's own: its .pth files (the editable install) stay unread
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "test-deps.pth").write_text("\n".join(deps) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("EVALKIT_")}
    env["EVALKIT_DATA_DIR"] = str(tmp_path / "data")

    def run(*args, stdin: str = "") -> subprocess.CompletedProcess:
        r = subprocess.run(list(args), cwd=elsewhere, env=env, input=stdin, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{args}\n{r.stdout}\n{r.stderr}"
        return r

    where = run(str(py), "-c", "import evalkit, evalkit.locations as l; "
                "print(evalkit.__file__); print(l.bundled('prompts')); print(l.default_config_path()); "
                "print(l.default_gate_path())").stdout.split()
    assert all(Path(p).is_relative_to(site) for p in where), where  # the wheel's copy, not this checkout
    evalkit = str(venv / "bin" / "evalkit")
    assert "serve" in run(evalkit, "--help").stdout
    assert "--json" in run(evalkit, "check", "--help").stdout
    assert "--margin" in run(evalkit, "plan", "--help").stdout
    # the packaged prompt file (an unknown id would fail), the packaged demo config and gate (margin 0.05)
    screen = json.loads(run(evalkit, "fidelity", "--prompt", "writing-01", "--json",
                            stdin="内部资料库将在周三晚间维护，维护期间不能上传新文件，已有文件仍可阅读，恢复时间尚未确定。").stdout)
    assert screen["schedule"]["pass"] is True and set(screen) == {"schedule", "read_only_vs_upload",
                                                                  "unknown_restore_time", "no_added_promises"}
    # a wide margin keeps the plan quick; the packaged gate is what it read (margin 0.05, min_raters 10)
    plan = json.loads(run(evalkit, "plan", "--studies", "50", "--margin", "0.2", "--json").stdout)
    assert plan["gate"]["margin"] == 0.05 and plan["gate"]["min_raters"] == 10
    assert plan["margin"] == 0.2 and plan["gate_line"].startswith("planned_pairs = ")
    assert not (tmp_path / "data" / "evalkit.db").exists()  # planning never creates a database
