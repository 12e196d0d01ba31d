"""Make a Python able to run `evalkit check` and `evalkit bench` from this checkout, without installing evalkit and
without a network when the packages are carried as wheels. scripts/gpu-check.sh calls it; standard library only,
since it runs before anything is known about the Python.

    python3 scripts/gpu_setup.py prepare SITE [--wheels DIR]   # fill SITE with what is missing; print SITE
    python3 scripts/gpu_setup.py fetch-wheels DIR              # download the small wheels into DIR (needs pip and a network)

Why: GPU machines often come with a CUDA torch and Transformers already installed and no way out to a package
index (the machines lent to this project are like that). Installing evalkit would need gradio, datasets and the
rest over the network; check and bench need none of them. So evalkit runs from the checkout (PYTHONPATH) and only
the small pure-Python packages the image may lack are added, into SITE, from wheels carried beside the checkout.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

# Everything `evalkit check` and `evalkit bench` import, as module -> distribution. tests/test_gpu_check.py runs both
# with every other third-party distribution of evalkit's hidden, so a new import cannot slip past this list.
# Large, usually part of a GPU image, never fetched as wheels here:
HEAVY = {"torch": "torch", "transformers": "transformers", "tokenizers": "tokenizers", "safetensors": "safetensors",
         "accelerate": "accelerate", "huggingface_hub": "huggingface_hub", "numpy": "numpy"}
# Small and pure Python: fetch-wheels downloads these, prepare installs the missing ones from them.
LIGHT = {"click": "click", "tqdm": "tqdm", "sqlite_utils": "sqlite-utils", "sqlite_fts4": "sqlite-fts4",
         "click_default_group": "click-default-group", "tabulate": "tabulate", "dateutil": "python-dateutil",
         "six": "six", "pluggy": "pluggy"}


def say(msg: str) -> None:
    print(f"gpu-check: {msg}", file=sys.stderr)


def missing(modules: dict[str, str]) -> list[str]:
    """Distributions whose module this Python cannot find (SITE included, when it is on the path)."""
    importlib.invalidate_caches()
    return sorted({dist for mod, dist in modules.items() if importlib.util.find_spec(mod) is None})


def wheel_for(dist: str, wheels: Path) -> Path | None:
    """The wheel of `dist` in `wheels` (file names spell the distribution with underscores)."""
    stem = dist.replace("-", "_").lower()
    found = sorted(p for p in wheels.glob("*.whl") if p.name.split("-")[0].lower() == stem)
    return found[-1] if found else None


def pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def prepare(site: Path, wheels: Path) -> int:
    sys.path.insert(0, str(site))
    need = missing(HEAVY | LIGHT)
    if not need:
        print(site)
        return 0
    site.mkdir(parents=True, exist_ok=True)
    carried = {d: w for d in need if (w := wheel_for(d, wheels)) is not None}
    if carried:
        say(f"installing {', '.join(sorted(carried))} from {wheels} into {site}")
        r = pip("install", "-q", "--no-index", "--no-deps", "--no-compile", "--upgrade", "--target", str(site),
                *map(str, carried.values()))
        if r.returncode:
            say(f"pip could not install the carried wheels:\n{r.stderr[-2000:]}")
            return 2
    need = missing(HEAVY | LIGHT)
    if need:
        torch_spec = os.environ.get("TORCH_SPEC", "torch==2.13.0")
        specs = [torch_spec if d == "torch" else d for d in need]
        say(f"{', '.join(need)} not found: trying pip ({' '.join(specs)}) into {site}")
        # few retries and a short timeout: a machine with no way out should fail in seconds, not minutes
        r = pip("install", "-q", "--retries", "1", "--timeout", "10", "--target", str(site), *specs)
        need = missing(HEAVY | LIGHT)
        if r.returncode or need:
            light = sorted(set(need) & set(LIGHT.values()))
            heavy = sorted(set(need) & set(HEAVY.values()))
            fixes = []
            if light:
                fixes.append(f"on a machine with a network run `scripts/gpu-check.sh --fetch-wheels` and copy the "
                             f".whl/ it fills to {wheels} here ({', '.join(light)})")
            if heavy:
                fixes.append(f"use a Python that has {', '.join(heavy)} (EVALKIT_PYTHON=/path/to/python), or give this "
                             "one a network (TORCH_SPEC picks the torch build)")
            say(f"this Python ({sys.executable}) lacks {', '.join(need)} and pip could not fetch them"
                + (f" ({r.stderr.strip().splitlines()[-1]})" if r.returncode and r.stderr.strip() else "")
                + ". Fix: " + "; ".join(fixes))
            return 2
    print(site)
    return 0


def fetch_wheels(wheels: Path) -> int:
    """Download the LIGHT wheels, at the versions this Python has where it has them (the tested ones)."""
    from importlib import metadata

    wheels.mkdir(parents=True, exist_ok=True)
    specs = []
    for dist in sorted(set(LIGHT.values())):
        try:
            specs.append(f"{dist}=={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            specs.append(dist)
    r = pip("download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(wheels), *specs)
    if r.returncode:
        say(f"pip download failed:\n{r.stderr[-2000:]}")
        return 2
    names = sorted(p.name for p in wheels.glob("*.whl"))
    say(f"{len(names)} wheels in {wheels}: {', '.join(names)}")
    return 0


def main(argv: list[str]) -> int:
    usage = "usage: gpu_setup.py prepare SITE [--wheels DIR] | gpu_setup.py fetch-wheels DIR"
    if len(argv) >= 2 and argv[0] == "prepare":
        wheels = Path(argv[3]) if len(argv) == 4 and argv[2] == "--wheels" else Path(".whl")
        return prepare(Path(argv[1]).resolve(), wheels.resolve())
    if len(argv) == 2 and argv[0] == "fetch-wheels":
        return fetch_wheels(Path(argv[1]).resolve())
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
