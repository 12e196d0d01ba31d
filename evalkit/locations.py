"""The one place that decides where data and bundled files live. Tests point EVALKIT_DATA_DIR at a temp folder.

The bundled prompts/ and configs/ are the repository's own top-level folders when evalkit runs from its source
checkout (an editable install, a Space); an installed wheel carries copies of them as package data
(evalkit/resources/prompts, evalkit/resources/configs: pyproject.toml maps the folders there)."""

import os
from pathlib import Path

# The repository, when evalkit runs from its source folder (the package's parent holds pyproject.toml).
_CHECKOUT = Path(__file__).resolve().parent.parent


def evalkit_command() -> str:
    """evalkit as the shell that started this server can type it: `evalkit` where it is on PATH, else this
    environment's own (`./scripts/start.sh` runs .venv/bin/evalkit without activating .venv: the start's bare
    `evalkit raters add …` answered "command not found"), relative to the working folder when it is inside it."""
    import shutil
    import sys

    mine = Path(sys.executable).with_name("evalkit")  # not resolved: a venv's python links to the system's
    found = shutil.which("evalkit")
    if not mine.is_file() or (found and Path(found).resolve() == mine.resolve()):
        return "evalkit"
    try:
        return str(mine.relative_to(Path.cwd()))
    except ValueError:
        return str(mine)


def typed_commands(text: str) -> str:
    """text with each `evalkit …` command in it as evalkit_command() types it."""
    mine = evalkit_command()
    return text if mine == "evalkit" else text.replace("`evalkit ", f"`{mine} ")


def on_space() -> bool:
    """A Hugging Face Space (it sets SPACE_ID and SYSTEM=spaces): its disk does not survive a restart, raters sign in
    with the Hub. Both, as Gradio decides it (gradio.utils.get_space): with SPACE_ID alone (a Space's image run
    elsewhere, a copied environment) Gradio mocks the OAuth routes with a cookie key anyone can compute, so Hub
    sign-in would prove nothing; the app then runs as a local one, with personal codes."""
    return bool(os.environ.get("SPACE_ID")) and os.environ.get("SYSTEM") == "spaces"


def data_dir() -> Path:
    """Where results live: $EVALKIT_DATA_DIR, else ./results (a Space sets the variable)."""
    return Path(os.environ.get("EVALKIT_DATA_DIR") or "results")


def db_path() -> Path:
    """The SQLite file: $EVALKIT_DB, else <data dir>/evalkit.db."""
    env = os.environ.get("EVALKIT_DB")
    return Path(env) if env else data_dir() / "evalkit.db"


def demo_models_dir() -> Path:
    """Where the offline demo pair is built and cached: $EVALKIT_DEMO_MODELS, else <data dir>/demo-models."""
    env = os.environ.get("EVALKIT_DEMO_MODELS")
    return Path(env) if env else data_dir() / "demo-models"


def bundled(name: str) -> Path:
    """A folder shipped with evalkit ("prompts" or "configs"): the repository's own in a checkout, else the copy
    installed with the package."""
    top = _CHECKOUT / name
    if (_CHECKOUT / "pyproject.toml").is_file() and top.is_dir():
        return top
    from importlib.resources import files

    return Path(str(files("evalkit.resources") / name))  # a wheel installs as plain files


def prompts_dir() -> Path:
    """The prompt set: $EVALKIT_PROMPTS, else the bundled prompts."""
    env = os.environ.get("EVALKIT_PROMPTS")
    return Path(env) if env else bundled("prompts")


def default_config_path() -> Path:
    """The config used when none is named: $EVALKIT_CONFIG, else the bundled configs/demo.toml (the offline demo pair)."""
    env = os.environ.get("EVALKIT_CONFIG")
    return Path(env) if env else bundled("configs") / "demo.toml"


def default_gate_path() -> Path:
    """The release gate used when the config names none: the bundled configs/gate.toml."""
    return bundled("configs") / "gate.toml"
