"""The release gate: thresholds fixed before the experiment, frozen with it, applied to the aggregate."""

from __future__ import annotations

import functools
import hashlib
import math
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .. import locations
from ..errors import EvalkitError

# Older gate files name the fidelity margin by its former key; it is read as the margin.
ALIASES = {"max_pass_rate_drop": "margin"}


@dataclass(frozen=True)
class Gate:
    # Minimum lower bound of the speed-up's 95% interval.
    min_speedup_ci_low: float = 1.1
    # Benchmark rounds that decide the speed condition, fixed before the first benchmark: the first this many rounds
    # of the study's pair (every round with both paths timed, in the order the benchmarks were stored) are its
    # evidence; rounds measured after them are reported, never weighed, so re-running `evalkit bench` until the
    # interval clears min_speedup_ci_low is no search (speed audit, 2026-12-06). Until that many exist the
    # condition is not judged. 4: what one `evalkit bench` makes by default (bench.rounds). A study frozen before this
    # key pooled every round stored by the decision (0, LEGACY).
    speed_rounds: int = 4
    # Where the speed condition's evidence comes from, fixed before anyone looks: "benchmark", the rounds above only.
    # Until they exist the pair pool's single runs are shown, labelled not deciding, and the condition waits: were
    # the pool's figure to decide until a benchmark replaced it, an organiser who saw it fail could run `evalkit bench`
    # and look again (speed audit, 2026-12-06). A study frozen before this key keeps that rule (POOL_THEN_BENCHMARK,
    # LEGACY); no gate file may choose it.
    speed_source: str = "benchmark"
    # The device kind the speed claim is about, fixed before the first benchmark: "pool", the kind the study's first
    # pool ran on (the compatibility record's device), or one named ("cpu", "cuda", "mps") where the pool was made on
    # other hardware than the study deploys on. Only benchmarks on that kind decide; one on another kind is reported
    # in a note naming both devices, never deciding, so benchmarking where drafting gains most is no choice of the
    # figure (sceptic audit, 2026-12-06). With its dtype fixed as every setting is (data.BENCH_MUST_MATCH), and its
    # placement: a run whose target or draft sat partly elsewhere ("cpu+cuda") is other hardware (data.device_kinds);
    # a split placement may be named as runs record it ("cpu+cuda": kinds sorted, joined by "+"), matched exactly.
    # "pool" with a pool that recorded no device, or several, judges neither speed nor memory (data.unknown_device). A study
    # frozen before this key let a benchmark on any device decide (ANY_DEVICE, LEGACY).
    speed_device: str = "pool"
    # Non-inferiority margin: KEEP needs, for every criterion, the lower end of the interval of the
    # assisted - ordinary pass rate to be at least -margin (alias: max_pass_rate_drop).
    margin: float = 0.05
    # Two-sided confidence level of that interval (0.95: each criterion is tested one-sided at 2.5%).
    confidence: float = 0.95
    # Maximum extra memory from loading the draft, MB.
    max_extra_memory_mb: float = 1024.0
    # Ratings each pair gets: the queue serves a pair to this many raters, and it counts towards the sample once it
    # has them (1 or more; `evalkit plan --compare` compares 1, 2 and 3). Stored per pair when the pool's queue order is drawn.
    min_ratings_per_pair: int = 3
    # With min_ratings_per_pair = 1, the share of pairs that get a second rating, chosen at random when the pool's
    # queue order is drawn (independently of the pairs' answers), so that agreement and rater effects stay
    # measurable; such a pair counts once it has both. Ignored from 2 ratings per pair on.
    second_rating_share: float = 0.1
    # Decided pairs the decision waits for (a pair whose outputs differ once it has min_ratings_per_pair ratings;
    # identical outputs without raters, in the pool's proportion); from `evalkit plan`. Before that
    # every look is an interim look and the verdict INSUFFICIENT DATA. 0 = not planned: no decision.
    planned_pairs: int = 0
    # Raters whose accuracy on gold (check) pairs is below this are left out of every table and the verdict
    # (evalkit.study.gold; a rater who met no gold pair cannot be judged and is kept). 0 = off.
    min_gold_accuracy: float = 0.0
    # Whom the quality claim covers. "raters in general" (raters like these): rater-to-rater differences, also in
    # how raters judge each path, are in every criterion's interval (two-way CR2, t on the raters' degrees of
    # freedom), and the decision needs min_raters raters. "these raters": the claim is only about the raters who
    # rated (their differences are fixed, not sampled); the rater dimension enters only from 10 raters on.
    claim: str = "raters in general"
    # Distinct raters the decision sample needs for a claim about raters in general; fewer gives INSUFFICIENT DATA.
    # Below about 10 a rater variance is too unstable for any small-sample correction to rescue.
    min_raters: int = 10
    # The interval each criterion's non-inferiority is judged on. "t with score floor": the two-way CR2 variance
    # of the pair means with Student's t on its Satterthwaite degrees of freedom, floored by Tango's score interval
    # on the pair means' moments (never zero width, even when every answer agrees). "union with tango": the
    # previous version's union of Tango on rater-averaged counts, the pair bootstrap and the CR2 part on the
    # raters' degrees of freedom (wider: Tango bounds the variance by E|d|, not E[d^2]).
    interval: str = "t with score floor"
    # Prediction-powered inference (PPI++): "on" narrows each criterion's interval with the rule pre-screen's answers
    # on every pooled pair, corrected by the raters' answers on the rated pairs (valid whatever the pre-screen's
    # accuracy or bias; needs the queue's random order, stored with the pool). "off": the raters' answers alone.
    ppi: str = "on"
    # When the study may stop (evalkit.study.monitoring). "fixed": one look, at planned_pairs. "group sequential": a
    # look each time about look_every more ratings are in, each at the level O'Brien-Fleming-type Lan-DeMets alpha
    # spending allows (planned_pairs is then the maximum): KEEP when every criterion's lower end clears -margin, DROP
    # when some upper end is below it. "confidence sequence": the same looks on an anytime-valid betting confidence
    # sequence of the pair means (claim "these raters" and ppi "off" only: it has no rater dimension).
    monitoring: str = "fixed"
    # With looks: one each time about this many more human ratings are in (decided pairs: look_every / ratings per
    # rated pair; identical pairs make looks come after fewer ratings).
    look_every: int = 50
    # From `evalkit plan`: the human ratings it expects the study to take to a decision. Shown on the Results tab
    # (what remains); no part of the decision. 0 = not planned.
    expected_ratings: int = 0
    # From `evalkit plan` (claim about raters in general): the raters its power assumes, sharing the ratings about
    # evenly. Shown on the Results tab beside the raters the interval has so far; no part of the decision (fewer
    # raters keep the level and lose power). 0 = not planned.
    planned_raters: int = 0
    # From `evalkit plan` with PPI: the study pairs the pool must hold for its power (the pre-screen's unlabelled
    # set: PPI's variance falls with the pooled pairs, rated or not). `evalkit generate --until-planned` fills the
    # pool to at least this. No part of the decision. 0 = not planned (the planned pairs plus the reserve).
    planned_pool: int = 0


# (low, high, low inclusive, high inclusive) for each key; a value outside is refused with its range
RANGES = {
    "min_speedup_ci_low": (0.0, None, True, True),
    "speed_rounds": (2, None, True, True),  # the interval needs 2 rounds (0, every round, is the legacy rule only)
    "margin": (0.0, 1.0, False, False),
    "confidence": (0.5, 1.0, False, False),
    "max_extra_memory_mb": (0.0, None, True, True),
    "min_ratings_per_pair": (1, None, True, True),
    "second_rating_share": (0.0, 1.0, True, True),
    "planned_pairs": (0, None, True, True),
    "min_gold_accuracy": (0.0, 1.0, True, True),
    "min_raters": (2, None, True, True),
    "look_every": (1, None, True, True),
    "expected_ratings": (0, None, True, True),
    "planned_raters": (0, None, True, True),
    "planned_pool": (0, None, True, True),
}
# the values a text key may take
CHOICES = {"claim": ("raters in general", "these raters"), "ppi": ("on", "off"),
           "interval": ("t with score floor", "union with tango"),
           "monitoring": ("fixed", "group sequential", "confidence sequence"), "speed_source": ("benchmark",),
           "speed_device": ("pool", "cpu", "cuda", "mps")}
GENERAL = CHOICES["claim"][0]
# speed_source of a study frozen before the key: the pool's single runs decide until a benchmark's rounds replace them
POOL_THEN_BENCHMARK = "pool until a benchmark"
# speed_device of a study frozen before the key: a benchmark on any device decides
ANY_DEVICE = "any"


def gate_text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _toml(v) -> str:
    """A value as a gate file writes it (true, "these raters", nan), for the errors that quote it."""
    import json
    import math

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return repr(v)


# the device kinds a split placement joins (models.placement_kinds: "disk", a device_map's offload to disk)
PLACEMENT_KINDS = ("cpu", "cuda", "disk", "mps")


def _split_placement(v, source: str) -> str:
    """speed_device naming a split placement as runs record it (effective_config.devices, bench processes'
    placements: data.device_kinds): two or more kinds, sorted and joined by "+", matched exactly ("cpu+cuda"), or
    an EvalkitError naming the key and the forms allowed."""
    kinds = v.split("+") if isinstance(v, str) else []
    known = len(set(kinds)) > 1 and set(kinds) <= set(PLACEMENT_KINDS)
    if known and kinds == sorted(set(kinds)):
        return v
    fix = f"; here {_toml('+'.join(sorted(set(kinds))))}" if known else ""  # "cuda+cpu": the order runs record
    raise EvalkitError(
        f"gate file {source}: speed_device = {_toml(v)} is neither one of the choices nor a split placement",
        f"set speed_device to one of: {', '.join(_toml(c) for c in CHOICES['speed_device'])}, or a placement as runs "
        f"record it: two or more of {', '.join(PLACEMENT_KINDS)}, sorted and joined by \"+\" (e.g. \"cpu+cuda\"{fix})")


def parse_gate(text: str, source: str, frozen: bool = False) -> Gate:
    """The gate a file's text sets, or an EvalkitError naming the key and the fix. frozen: the text of a snapshot a
    study froze, read again; the keys that are no part of the decision are then not checked against each other (a
    study frozen before those checks stays readable)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        twice = _keys_set_twice(text)
        if twice:  # plan's lines appended to a gate that already sets them (plan audit F3: "fix the syntax")
            raise EvalkitError(f"gate file {source} sets " + ", ".join(f"{k} twice (lines {a} and {b})"
                                                                        for k, (a, b) in twice.items()),
                               "keep one line for each key: the lines `evalkit plan` prints replace the file's own") from e
        raise EvalkitError(f"gate file {source} is not valid TOML: {e}", "fix the syntax")
    known = {f.name: f for f in fields(Gate)}
    unknown = sorted(set(data) - set(known) - set(ALIASES))
    if unknown:
        raise EvalkitError(f"gate file {source}: unknown key(s) {', '.join(unknown)}", f"valid keys: {', '.join(known)}")
    for old, new in ALIASES.items():
        if old in data:
            if new in data:
                raise EvalkitError(f"gate file {source} sets both {old} and {new}",
                                   f"keep only {new} ({old} is its older name)")
            data[new] = data.pop(old)
    out = {}
    for k, v in data.items():
        if k == "speed_device" and v not in CHOICES[k]:
            out[k] = _split_placement(v, source)
            continue
        if k in CHOICES:
            if v not in CHOICES[k]:
                raise EvalkitError(f"gate file {source}: {k} = {_toml(v)} is not one of the choices",
                                   f"set {k} to one of: {', '.join(_toml(c) for c in CHOICES[k])}")
            out[k] = v
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise EvalkitError(f"gate file {source}: {k} = {_toml(v)} should be a number", f"write {k} as a number")
        lo, hi, lo_in, hi_in = RANGES[k]
        end = "]" if hi_in and hi is not None else ")"  # an unbounded end is open: [2, ∞), not [2, ∞]
        span = f"{'[' if lo_in else '('}{lo}, {hi if hi is not None else '∞'}{end}"
        if not math.isfinite(v):  # TOML allows nan and inf; neither is a threshold (nan passes every comparison)
            raise EvalkitError(f"gate file {source}: {k} = {_toml(v)} should be a finite number (not nan or inf)",
                               f"set {k} to a number within {span}, e.g. {getattr(Gate, k)!r}")
        if known[k].type in (int, "int"):
            if v != int(v):
                raise EvalkitError(f"gate file {source}: {k} = {_toml(v)} should be a whole number", f"write {k} as an integer")
            v = int(v)
        else:
            v = float(v)
        if (lo is not None and (v < lo or (v == lo and not lo_in))) or (hi is not None and (v > hi or (v == hi and not hi_in))):
            raise EvalkitError(f"gate file {source}: {k} = {_toml(v)} is outside {span}", f"set {k} within {span}")
        out[k] = v
    gate = Gate(**out)
    if gate.monitoring == "confidence sequence" and (gate.claim != "these raters" or gate.ppi != "off"):
        raise EvalkitError(f"gate file {source}: monitoring = \"confidence sequence\" needs claim = \"these raters\" "
                           f"and ppi = \"off\" (it has claim = {gate.claim!r}, ppi = {gate.ppi!r}): the betting "
                           "sequence covers the mean of independent pair means, with no rater dimension and no pre-screen",
                           "set those two keys, or use monitoring = \"group sequential\" (any claim, with PPI)")
    if not frozen:
        _check_planned(gate, source)
        _check_rounds_even(gate, source)
    return gate


def _check_rounds_even(gate: Gate, source: str) -> None:
    """An odd speed_rounds refused where a gate is set for a new study: a benchmark's ABBA rounds start the paths in
    each order over pairs of rounds only, so an odd count lets one order decide once more, and a drift in the
    machine's speed could favour the path it starts first (speed audit, 2026-12-06). A gate a study froze with an odd
    count before this check is read again as it was (frozen), and the aggregate notes the imbalance."""
    if gate.speed_rounds % 2:
        raise EvalkitError(f"gate file {source}: speed_rounds = {gate.speed_rounds} is odd: a benchmark's rounds swap "
                           "which path starts first (ABBA), balanced over pairs of rounds only, so the deciding rounds "
                           "would start one path first once more, and a drift in the machine's speed could favour it",
                           f"set speed_rounds to an even number, e.g. {gate.speed_rounds + 1} "
                           "(and `evalkit bench --rounds` even, as it must be)")


def _check_planned(gate: Gate, source: str) -> None:
    """The plan's keys against the ones they must agree with (0 is "not planned" for each, and passes). None is part
    of the decision, but each contradiction is what a hand edit leaves behind, and would show the Results tab and
    `generate --until-planned` a plan no study can follow (plan audit L3)."""
    if gate.ppi == "on" and 0 < gate.planned_pool < gate.planned_pairs:
        raise EvalkitError(f"gate file {source}: planned_pool = {gate.planned_pool} is less than planned_pairs = "
                           f"{gate.planned_pairs}, with ppi = \"on\": the pool the plan's power assumes holds the "
                           "planned pairs and the pre-screen's unlabelled pairs beside them",
                           "set planned_pool to at least planned_pairs (the lines `evalkit plan --compare` writes), "
                           "or to 0 for the planned pairs plus the reserve")
    if gate.claim == GENERAL and 0 < gate.planned_raters < gate.min_raters:
        raise EvalkitError(f"gate file {source}: planned_raters = {gate.planned_raters} is less than min_raters = "
                           f"{gate.min_raters}, which a claim about raters in general needs for a decision: a study "
                           "with the planned roster could never decide",
                           "set planned_raters to at least min_raters (the lines `evalkit plan --compare` writes), "
                           "or to 0 for no planned roster")


def read_gate_file(path: Path | None = None, frozen_hashes=frozenset()) -> tuple[str, Gate]:
    """The gate file's text and gate. frozen_hashes: the gates studies froze; a file whose text is one of them is that
    study's gate read again (a later pool, a benchmark), as a frozen snapshot is (parse_gate's frozen), so a study
    frozen before a check (an odd speed_rounds) can still grow and be benchmarked."""
    path = Path(path) if path else locations.default_gate_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalkitError(f"gate file {path} does not exist", "create it (see configs/gate.toml), or set gate_file in the config to an existing file")
    except IsADirectoryError:
        raise EvalkitError(f"gate file {path} is a folder, not a file",
                           "set gate_file in the config to the gate's TOML file, e.g. configs/gate.toml")
    except OSError as e:
        raise EvalkitError(f"cannot read gate file {path}: {e.strerror or e}",
                           "make it readable, or set gate_file in the config to a gate file you can read")
    except UnicodeDecodeError as e:
        raise EvalkitError(f"gate file {path} is not UTF-8 text (byte {e.start}: {e.reason})",
                           "save it as UTF-8 (TOML files must be UTF-8), or set gate_file in the config to a UTF-8 gate file")
    return text, parse_gate(text, str(path), frozen=gate_text_hash(text) in frozen_hashes)


def gate_snapshot(path: Path | None = None, frozen_hashes=frozenset()) -> dict:
    """What an experiment stores when it starts: the gate's text, values and hash (frozen_hashes: read_gate_file's)."""
    path = Path(path) if path else locations.default_gate_path()
    text, gate = read_gate_file(path, frozen_hashes)
    return {"path": str(path), "text": text, "hash": gate_text_hash(text), "values": asdict(gate)}


# Keys whose default changed what a gate decides, with the value that keeps the meaning a gate had when a version
# that did not know the key froze it: such a study keeps its conditional claim rather than gaining a new
# requirement (min_raters) after the fact. A snapshot frozen by a version that knew the key stores it in "values".
# A study frozen before a key existed keeps what it was planned for: the conditional claim, no PPI, and (its
# planned_pairs sized for it) the union with Tango, no pair rated twice beyond min_ratings_per_pair, and one look;
# and its speed condition on every benchmark round stored by the decision (speed_rounds 0), or on the pool's single
# runs until a benchmark is stored (speed_source), from a benchmark on any device (speed_device), as it was frozen.
LEGACY = {"claim": "these raters", "ppi": "off", "interval": "union with tango", "second_rating_share": 0.0,
          "monitoring": "fixed", "speed_rounds": 0, "speed_source": POOL_THEN_BENCHMARK, "speed_device": ANY_DEVICE}


def frozen_values(snapshot: dict) -> dict:
    """The gate values of a frozen snapshot, read again from its text so that snapshots frozen by older
    versions (other keys, no margin) get today's defaults, except where a default changed the decision (LEGACY). A key
    the text leaves to its default keeps the default stored when it was frozen: a later evalkit with another default
    must not change what a study under way decides (sceptic audit, 2026-12-06)."""
    import copy
    import json

    # A frozen snapshot never changes, and every pair screen reads the studies (1.6 ms a parse): parsed once a text.
    return copy.deepcopy(_frozen_values(snapshot.get("text"), json.dumps(snapshot.get("values", {}), sort_keys=True),
                                        snapshot.get("hash", "")))


@functools.lru_cache(maxsize=64)
def _frozen_values(text: str | None, stored_json: str, digest: str) -> dict:
    import json

    stored = json.loads(stored_json)
    if text is None:
        values = asdict(Gate(**{ALIASES.get(k, k): v for k, v in stored.items()}))
    else:
        values = asdict(parse_gate(text, f"frozen gate {digest}", frozen=True))
    for key, then in LEGACY.items():
        if key not in stored and not _sets(text or "", key):
            values[key] = then
    given = {ALIASES.get(k, k) for k in _keys(text)} if text is not None else None
    for key, then in stored.items() if given is not None else ():
        if key in values and key not in given:
            values[key] = then  # the default the gate was frozen with
    return values


def legacy_keys(snapshot: dict) -> list[str]:
    """The LEGACY keys a frozen snapshot predates (for a note in the verdict)."""
    return [k for k in LEGACY if k not in snapshot.get("values", {}) and not _sets(snapshot.get("text") or "", k)]


def _keys_set_twice(text: str) -> dict[str, tuple[int, int]]:
    """Top-level `key = value` lines whose key an earlier line set, with both line numbers (the gate file has no
    tables): what TOML reports only as 'Cannot overwrite a value' at the second."""
    import re

    first, twice = {}, {}
    for n, line in enumerate(text.splitlines(), 1):
        if m := re.match(r"\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=", line):
            if m[1] in first and m[1] not in twice:
                twice[m[1]] = (first[m[1]], n)
            first.setdefault(m[1], n)
    return twice


def _sets(text: str, key: str) -> bool:
    return key in _keys(text)


def _keys(text: str) -> set[str]:
    """The keys a gate text sets (none where it does not parse)."""
    try:
        return set(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return set()


def fidelity_ok(lower, margin: float):
    """The fidelity condition for one criterion (vectorised over studies): the interval's lower end for
    assisted - ordinary pass rate is at least -margin. An undefined lower end (no pairs) is not a pass."""
    import numpy as np

    lower = np.asarray(lower, float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(lower), False, lower >= -margin - 1e-12)


def raters_ok(raters, gate_values: dict):
    """Enough distinct raters for the gate's claim (vectorised over studies): a claim about raters in general
    needs min_raters; a claim about these raters needs no minimum."""
    import numpy as np

    raters = np.asarray(raters, float)
    if gate_values.get("claim", GENERAL) != GENERAL:
        return np.ones(raters.shape, bool)
    return raters >= gate_values.get("min_raters", Gate.min_raters)


def enough_raters_for(raters, rated_pairs, gate_values: dict):
    """raters_ok, save for a sample that holds no rated pair (vectorised over studies: the verdict's looks and the
    plan's simulated studies share this rule). Such a sample (every pair identical, an exact zero whoever rates, or
    without an outcome, counted at the worst) rests on no rater's answer: no rater variance to miss, no minimum."""
    import numpy as np

    return (np.asarray(rated_pairs) <= 0) | raters_ok(raters, gate_values)


def enough_raters(row: dict, gate_values: dict) -> bool:
    """enough_raters_for one criterion's row of a look (aggregate.verdict.fidelity_rows)."""
    pairs = int(row.get("pairs", 0))
    rated = pairs - int(row.get("identical", 0)) - int(row.get("worst_case_pairs") or 0)
    # an empty sample is not one judged without raters: it has no pair at all
    return bool(enough_raters_for(int(row.get("raters", 0)), rated if pairs > 0 else 1, gate_values))


def claim_text(gate_values: dict | None, raters: int | None = None) -> str:
    """Whom a verdict sentence's claim covers, e.g. 'for raters in general (like these 12)'."""
    claim = (gate_values or {}).get("claim", GENERAL)
    who = "" if not raters else f" {raters}"  # 0: a sample of identical pairs alone, which no rater rated
    if claim == GENERAL:
        return f"for raters in general (like {'this' if raters == 1 else 'these'}{who})"
    return "for this 1 rater only" if raters == 1 else f"for these{who} raters only"
