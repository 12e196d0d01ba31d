"""The release gate: thresholds fixed before the experiment, frozen with it, applied to the aggregate."""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .errors import EvalkitError


@dataclass(frozen=True)
class Gate:
    # Minimum lower bound of the speed-up's 95% interval.
    min_speedup_ci_low: float = 1.1
    # Maximum allowed drop of any criterion's pass rate (assisted - ordinary), as a fraction.
    max_pass_rate_drop: float = 0.05
    # Maximum extra memory from loading the draft, MB.
    max_extra_memory_mb: float = 1024.0
    # Minimum current ratings per rated pair before deciding.
    min_ratings_per_pair: int = 3
    # Raters whose accuracy on gold (check) pairs is below this are left out of every table and the verdict
    # (evalkit.gold; a rater who met no gold pair cannot be judged and is kept). 0 = off.
    min_gold_accuracy: float = 0.0


def default_gate_path() -> Path:
    from .locations import PROJECT_ROOT

    return PROJECT_ROOT / "configs" / "gate.toml"


def gate_text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_gate(text: str, source: str) -> Gate:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise EvalkitError(f"gate file {source} is not valid TOML: {e}", "fix the syntax")
    known = {f.name: f for f in fields(Gate)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise EvalkitError(f"gate file {source}: unknown key(s) {', '.join(unknown)}", f"valid keys: {', '.join(known)}")
    out = {}
    for k, v in data.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise EvalkitError(f"gate file {source}: {k} = {v!r} should be a number", f"write {k} as a number")
        out[k] = int(v) if known[k].type in (int, "int") else float(v)
    if not 0 <= out.get("min_gold_accuracy", 0.0) <= 1:
        raise EvalkitError(f"gate file {source}: min_gold_accuracy = {out['min_gold_accuracy']} should be in [0, 1]",
                           "write it as a share of answers, e.g. 0.8 (0 = off)")
    return Gate(**out)


def read_gate_file(path: Path | None = None) -> tuple[str, Gate]:
    path = Path(path) if path else default_gate_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalkitError(f"gate file {path} does not exist", "create it (see configs/gate.toml) or pass --gate")
    return text, parse_gate(text, str(path))


def gate_snapshot(path: Path | None = None) -> dict:
    """What an experiment stores when it starts: the gate's text, values and hash."""
    path = Path(path) if path else default_gate_path()
    text, gate = read_gate_file(path)
    return {"path": str(path), "text": text, "hash": gate_text_hash(text), "values": asdict(gate)}
