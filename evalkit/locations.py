"""The one place that decides where data lives. Tests point EVALKIT_DATA_DIR at a temp folder."""

import os
from pathlib import Path

# The repository root: prompts/ and configs/ ship beside the package.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


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


def prompts_dir() -> Path:
    """The bundled prompt set: $EVALKIT_PROMPTS, else prompts/ in the project."""
    env = os.environ.get("EVALKIT_PROMPTS")
    return Path(env) if env else PROJECT_ROOT / "prompts"


def default_config_path() -> Path:
    """The config used when none is named: configs/demo.toml (the offline demo pair)."""
    env = os.environ.get("EVALKIT_CONFIG")
    return Path(env) if env else PROJECT_ROOT / "configs" / "demo.toml"
