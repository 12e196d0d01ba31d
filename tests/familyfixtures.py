"""The model families of tests/tiny.py as a session fixture, and configs pointing at them. Test modules import
the fixture (`from familyfixtures import families`); the build is cached on disk, so it runs once per session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tiny


@pytest.fixture(scope="session")
def families(tmp_path_factory) -> dict[str, Path]:
    return tiny.build_families(tmp_path_factory.getbasetemp() / "families")


@pytest.fixture(scope="session")
def lfm2(tmp_path_factory) -> dict[str, Path]:
    """The LFM2 stand-ins (hybrid convolution + attention layers), built once per session."""
    return tiny.build_lfm2_family(tmp_path_factory.getbasetemp() / "lfm2")


def toml(sections: dict) -> str:
    """A TOML document from {"models": {...}, ...} (top-level keys under "")."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in sections.get("", {}).items()]
    for name, values in sections.items():
        if name:
            lines.append(f"[{name}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def family_config(path: Path, families: dict, target: str = "chat_target", draft: str = "chat_draft", **sections) -> Path:
    """A config on two family models, greedy float32 on the CPU with short budgets; `sections` override
    ({"decoding": {"mode": "sample"}} etc.)."""
    base = {
        "models": {"target": str(families[target]), "draft": str(families[draft]), "device": "cpu"},
        "decoding": {"mode": "greedy", "max_new_tokens": 64},
        "assistant": {"num_assistant_tokens": 4, "assistant_confidence_threshold": 0.0},
        "bench": {"reps": 1, "rounds": 2, "warmup": 0, "bootstrap": 200},  # rounds: the protocol's minimum
        "pool": {"samples": 1},
    }
    for name, values in sections.items():
        base.setdefault(name, {}).update(values)
    path.write_text(toml(base), encoding="utf-8")
    return path
