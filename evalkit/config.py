"""One typed config (TOML), rejecting unknown keys. Every field has a default and a comment.

The full effective config is saved with every experiment and every generation record.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path

from .errors import EvalkitError
from .records import GenerationPath


@dataclass
class ModelsConfig:
    # Target model: a Hub id, a local folder, or "demo:target" (the offline demo pair, built on first use).
    target: str = "demo:target"
    # Draft (assistant) model, same forms. Loaded only when load_draft is true.
    draft: str = "demo:draft"
    # Optional target tokenizer location when it differs from the model folder ("" = the model's own).
    target_tokenizer: str = ""
    # Optional draft tokenizer location, same rule.
    draft_tokenizer: str = ""
    # Weights dtype: float32 makes greedy assisted output token-identical to ordinary; fp16/bf16 may flip a token.
    dtype: str = "float32"
    # Device for both models: "auto" (cuda > mps > cpu), "cpu", "cuda", "cuda:1", "mps".
    device: str = "auto"
    # Optional accelerate device_map for the target ("auto" spreads a big target over GPUs); "" = use device.
    device_map: str = ""
    # Device for the draft; "" = same as the target's first device.
    draft_device: str = ""
    # With device_map: the most each device may hold, as "device=size" ("0=20GiB", "1=20GiB", "cpu=60GiB");
    # [] = accelerate's own estimate. What does not fit goes to the next device, then to offload_folder.
    max_memory: list[str] = field(default_factory=list)
    # With device_map: folder for weights that fit on no device (disk offload); "" = transformers' default
    # (safetensors checkpoints are read in place from their own files; other formats need a folder).
    offload_folder: str = ""
    # Quantization label recorded in the compatibility record ("none" unless you load quantized weights).
    quantization: str = "none"
    # Hub revision for both models ("" = default branch); pin it for reproducible runs.
    revision: str = ""
    # Allow model repos with custom code. Off: a serious run should not execute code it has not read.
    trust_remote_code: bool = False


@dataclass
class DecodingConfig:
    # "greedy" or "sample". Assisted generation supports exactly these two (no beam search).
    mode: str = "sample"
    # Sampling temperature (sample mode only).
    temperature: float = 0.7
    # Nucleus sampling mass (sample mode only); 1.0 disables it.
    top_p: float = 1.0
    # Base seed; run i of a prompt uses seed + i, identically on both paths.
    seed: int = 1234
    # Token budget; 0 = use each prompt's own max_new_tokens.
    max_new_tokens: int = 0
    # Prompt framing: "auto" (chat template when the tokenizer has one, else plain), "chat", "plain".
    prompt_format: str = "auto"
    # Extra stop strings (generation also stops at the tokenizer's end-of-sequence token).
    stop_strings: list[str] = field(default_factory=list)
    # Requests per generate() call for `evalkit run` (the prompt repeated, left-padded). Transformers runs assisted
    # generation one request at a time, so above 1 is refused while the assisted path is on; to weigh assisted at 1
    # against the ordinary path at the batch size you serve, run `evalkit bench --batch-sizes 1,2,4,8`.
    batch_size: int = 1


@dataclass
class AssistantConfig:
    # These three are written to the ASSISTANT's generation_config (generate() kwargs are ignored for them).
    # Draft tokens proposed per round (Transformers' default: 20).
    num_assistant_tokens: int = 20
    # "constant", "heuristic" (grows/shrinks across rounds and calls; reset before each measured run),
    # or "heuristic_transient" (resets itself every call).
    num_assistant_tokens_schedule: str = "constant"
    # Stop drafting when the draft's confidence falls below this (0 disables; Transformers' default: 0.4).
    assistant_confidence_threshold: float = 0.4
    # Let tokenizers that really differ go through Universal Assisted Generation. Off: not approved.
    allow_different_tokenizer: bool = False
    # Optional prompt-lookup path (no draft model): n-gram candidates from the prompt, this many per round; 0 = off.
    # On, it is benched and reported against ordinary on its own (never mixed with assisted's figures) and runs on
    # the Live tab; it is never rated.
    prompt_lookup_num_tokens: int = 0


@dataclass
class BenchConfig:
    # Timed repetitions per prompt per path per round.
    reps: int = 5
    # Rounds, each starting every path in a fresh process, in ABBA order (odd rounds in the paths' order, even rounds
    # reversed; the protocol's minimum is 2). The speed-up's interval takes the round as its unit (a process's drift
    # moves all its timings): with 2 its t quantile is 12.7 (1 degree of freedom) and a draft that is truly 1.5x
    # faster with 4% drift between processes shows a median lower end of 1.05; with 4, 1.39 (tests/test_speed_selection.py).
    rounds: int = 4
    # Untimed warm-up calls per path before timing (after the recorded first call).
    warmup: int = 1
    # Two outputs are comparable when stop reasons match and lengths differ by at most this fraction.
    length_tolerance: float = 0.1
    # Bootstrap resamples for the speed-up interval.
    bootstrap: int = 2000
    # Prompt ids to run (checked against the prompt files when the config is read); empty = all bundled prompts.
    prompts: list[str] = field(default_factory=list)
    # Batch sizes at which the ordinary path is also measured, beside assisted at batch 1 (`--batch-sizes`); [] =
    # none; a list with no size above 1 is refused (it would measure nothing). Each batch holds the benchmark's
    # prompts in turn, left-padded, in the ordinary worker process.
    batch_sizes: list[int] = field(default_factory=list)


@dataclass
class PoolConfig:
    # Samples per prompt per path when building the pair pool for rating.
    samples: int = 4
    # Prompt ids to use (checked like bench.prompts); empty = all bundled prompts.
    prompts: list[str] = field(default_factory=list)
    # Gold (check) pairs mixed into the pool, per study pair: gold_rate x study pairs, rounded down, each made from
    # an extra pooled sample with one output changed by a controlled edit (evalkit.study.gold); 0 = none. In [0, 0.5].
    gold_rate: float = 0.1


@dataclass
class AppConfig:
    # Ratings wanted per pair that has no quota of its own: a pool made since each pair stores one (from the gate's
    # min_ratings_per_pair and second_rating_share, drawn with the queue order) follows it; an older pool this. A pair
    # leaves the queue once it has its quota of current ratings.
    ratings_per_pair: int = 3
    # Local (non-Space) sign-in: shared passcodes raters may use; empty = a rater name is enough.
    passcodes: list[str] = field(default_factory=list)
    # Longest comment or skip reason accepted, in characters.
    max_comment_chars: int = 2000
    # Per-rater submissions (ratings, corrections, skips) allowed in any 60-second window; 0 = no limit.
    max_submissions_per_minute: int = 30
    # Optional allow-list of rater names (Hub usernames on a Space); empty = everyone who signs in. Locally with open
    # sign-up it is matched against the name typed (first come): invite the listed raters instead.
    allowed_raters: list[str] = field(default_factory=list)
    # Optional allow-list of Hub organisations whose members may rate (Space sign-in only). This list, allowed_raters
    # and organisers are compared without case, as the Hub compares its names (rating.identity.hub_key).
    allowed_orgs: list[str] = field(default_factory=list)
    # On a Hugging Face Space: the Hub usernames (verified by the OAuth sign-in) with organiser rights: results at
    # any time, the Live tab. Locally a name is no credential: organisers are made with
    # `evalkit raters add NAME --organiser`, and this list is not used.
    organisers: list[str] = field(default_factory=list)
    # Local sign-in. "invite": only raters made with `evalkit raters add` (a personal code or link each).
    # "open": a newcomer may also pick an unused name (the app hands them a personal code; the passcode, when
    # set, is asked first). Either way a taken name, or a look-alike of one, needs its code.
    signup: str = "invite"
    # Open sign-up: new identities one client address may create per hour (one person, many names, is how a
    # rater would reach a chosen pair or slip the per-rater limits).
    signups_per_client_per_hour: int = 3
    # ... and per day (24 hours): names that would each weigh as one rater in a claim about raters in general.
    signups_per_client_per_day: int = 10
    # Open sign-up: pairs the names one client address made hold on screen at once (a pair shown is held from the
    # other raters for 30 minutes); a name of that client is served no new pair while they hold this many. Invited
    # raters are not bound by it. 0 = no limit.
    pairs_held_per_client: int = 3
    # Results open to a rater once their queue is empty and they skipped at most this many pairs.
    results_skip_allowance: int = 2
    # Ratings one rater may give in the study the app serves (study and gold pairs; corrections and skips aside);
    # 0 = no limit. A plan sized for a roster assumes its raters share the ratings about evenly: where a few raters
    # give most of them, they count as fewer raters in the interval and the power falls (validity holds: the degrees
    # of freedom come from the actual spread). `evalkit plan --compare` suggests a share for its roster. A setting,
    # not a frozen gate key: raise it when raters drop out.
    max_ratings_per_rater: int = 0
    # Who may use the Live tab: "auto" (organisers on a Space and with invite sign-up, anyone with open sign-up
    # locally), "organisers", "raters" (anyone signed in), or "anyone".
    live_access: str = "auto"
    # Live runs (each runs both models) per browser session, and per client address, in any hour.
    live_runs_per_hour: int = 20
    # On a Space: the proxies in front of the app that each append to X-Forwarded-For the address they received the
    # request from (internal addresses aside); the client is that many entries from the right. Entries further left
    # are whatever the client sent, and would make every per-client limit hers to choose. 1: the Space's proxy.
    trusted_proxy_hops: int = 1
    # A rating stored sooner than this after its pair was shown is flagged in the aggregate (seconds).
    min_seconds_on_task: float = 10.0
    # Host and port for `python app.py` (a Space sets its own).
    host: str = "127.0.0.1"
    # Port; 0 = Gradio's default (7860, or the next free one).
    port: int = 7860


@dataclass
class Config:
    # Application switch: "assisted" runs the experiment; "ordinary" turns it off (target only).
    generation_path: str = "assisted"
    # Application switch: false loads no draft at all (and so forces the ordinary path).
    load_draft: bool = True
    # Release gate file, frozen with each experiment when it starts ("" = configs/gate.toml).
    gate_file: str = ""
    models: ModelsConfig = field(default_factory=ModelsConfig)
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    assistant: AssistantConfig = field(default_factory=AssistantConfig)
    bench: BenchConfig = field(default_factory=BenchConfig)
    pool: PoolConfig = field(default_factory=PoolConfig)
    app: AppConfig = field(default_factory=AppConfig)
    # Where this config was read from ("" for defaults); not a TOML key.
    source: str = field(default="", metadata={"internal": True})

    @property
    def assisted_enabled(self) -> bool:
        return self.generation_path == GenerationPath.ASSISTED and self.load_draft

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("source", None)
        return d


_CHOICES = {
    "generation_path": {GenerationPath.ORDINARY.value, GenerationPath.ASSISTED.value},
    "models.dtype": {"float32", "float16", "bfloat16"},
    "decoding.mode": {"greedy", "sample"},
    "decoding.prompt_format": {"auto", "chat", "plain"},
    "assistant.num_assistant_tokens_schedule": {"constant", "heuristic", "heuristic_transient"},
    "app.signup": {"invite", "open"},
    "app.live_access": {"auto", "organisers", "raters", "anyone"},
}

# Seeds of the rated pool stay below this; live runs draw theirs above it, so a live run can never repeat a
# pooled sample's random draws (and show a rated output under its path's name).
POOL_SEED_LIMIT = 2**31


def _build(cls, data: dict, where: str, source: str):
    if not isinstance(data, dict):
        raise EvalkitError(f"{source}: [{where}] should be a table", f"write it as [{where}]")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in fields(cls) if not f.metadata.get("internal")}
    unknown = sorted(set(data) - set(known))
    if unknown:
        prefix = f"{where}." if where else ""
        raise EvalkitError(
            f"{source}: unknown config key(s) {', '.join(prefix + k for k in unknown)}",
            f"valid keys{' in [' + where + ']' if where else ''}: {', '.join(sorted(known))}",
        )
    kwargs = {}
    for name, value in data.items():
        typ = hints[name]
        key = f"{where}.{name}" if where else name
        if is_dataclass(typ):
            kwargs[name] = _build(typ, value, key, source)
            continue
        origin = typing.get_origin(typ)
        item = typing.get_args(typ)[0] if origin is list else None
        ok = (
            isinstance(value, list) and all(isinstance(v, item) and not isinstance(v, bool) for v in value)
            if origin is list
            else (isinstance(value, (int, float)) and not isinstance(value, bool))
            if typ is float
            else isinstance(value, typ) and not (typ is int and isinstance(value, bool))
        )
        if not ok:
            expected = ("a list of strings" if item is str else "a list of integers") if origin is list else typ.__name__
            raise EvalkitError(f"{source}: {key} = {value!r} should be {expected}", f"write {key} as {expected}")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise EvalkitError(
                f"{source}: {key} = {value!r} is not one of {', '.join(sorted(_CHOICES[key]))}",
                f"set {key} to one of those",
            )
        if typ is float and not math.isfinite(value):  # TOML and JSON both allow nan and inf
            example = next(f.default for f in fields(cls) if f.name == name)
            raise EvalkitError(f"{source}: {key} = {value!r} should be a finite number (not nan or inf)",
                               f"write {key} as a finite number, e.g. {example!r}")
        kwargs[name] = float(value) if typ is float else value
    return cls(**kwargs)


# The devices evalkit places a model on (generation.models.pick_device): models.device takes any of these,
# models.draft_device any but "auto" ("" = the target's first device).
DEVICES = ("auto", "cpu", "mps", "cuda", "cuda:N")
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:(0|[1-9][0-9]*))?")


def device_problem(value: str, key: str = "models.device") -> str | None:
    """What a device name for `key` must be, or None when it is one evalkit supports."""
    draft = key == "models.draft_device"
    if (draft and value == "") or (_DEVICE.fullmatch(value) and not (draft and value == "auto")):
        return None
    forms = [f'"{d}"' for d in DEVICES if not (draft and d == "auto")] + ['"" for the target\'s device'] * draft
    return f"one of {', '.join(forms[:-1])} or {forms[-1]}, N being a GPU index (0, 1, ...)"


# accelerate's units for a max_memory size (accelerate.utils.modeling.convert_file_size_to_int), in bytes;
# "GB", "MB" and "KB" ending in a lower-case "b" are bits, as accelerate reads them.
_UNITS = (("GIB", 2**30), ("MIB", 2**20), ("KIB", 2**10), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3))


def memory_size(text: str) -> int | None:
    """The bytes of a models.max_memory size as accelerate reads it ("20GiB", "500MB", "1.5GB"), or None when
    accelerate would refuse it (a bare number, an unknown unit, a negative, nan or inf)."""
    for unit, factor in _UNITS:
        if text.upper().endswith(unit):
            try:
                number = float(text[: -len(unit)])
            except ValueError:
                return None
            if not (math.isfinite(number * factor) and number >= 0):
                return None
            size = int(number * factor)
            return size // 8 if len(unit) == 2 and text.endswith("b") else size
    return None


# Each key's allowed values: (key, test, what the error says it must be). The tests read the value; the sentence is
# the one the user reads.
_RANGES = [
    ("decoding.temperature", lambda v: v > 0, "> 0"),
    ("decoding.top_p", lambda v: 0 < v <= 1, "in (0, 1]"),
    ("decoding.max_new_tokens", lambda v: v >= 0, ">= 0"),
    ("assistant.num_assistant_tokens", lambda v: v >= 1, ">= 1"),
    ("assistant.assistant_confidence_threshold", lambda v: 0 <= v < 1, "in [0, 1)"),
    ("assistant.prompt_lookup_num_tokens", lambda v: v >= 0, ">= 0"),
    ("bench.reps", lambda v: v >= 1, ">= 1"),
    ("bench.rounds", lambda v: v >= 2 and v % 2 == 0,
     "even and >= 2 (the protocol's ABBA: each path in a fresh process, the order swapped every round; an odd count "
     "puts one path first once more than the other, so drift between processes favours it), e.g. 4"),
    ("bench.warmup", lambda v: v >= 0, ">= 0"),
    ("bench.length_tolerance", lambda v: v >= 0, ">= 0"),
    ("bench.bootstrap", lambda v: v >= 100, ">= 100"),
    ("bench.batch_sizes", lambda v: all(b >= 1 for b in v), "a list of batch sizes, each >= 1"),
    ("decoding.batch_size", lambda v: v >= 1, ">= 1"),
    ("pool.samples", lambda v: v >= 1, ">= 1"),
    ("pool.gold_rate", lambda v: 0 <= v <= 0.5, "in [0, 0.5] (0 = no gold pairs)"),
    *((f"app.{k}", lambda v: v >= 0, ">= 0") for k in ("signups_per_client_per_hour", "signups_per_client_per_day",
                                                        "pairs_held_per_client", "results_skip_allowance",
                                                        "live_runs_per_hour", "min_seconds_on_task")),
    ("app.ratings_per_pair", lambda v: v >= 1, ">= 1"),
    ("app.trusted_proxy_hops", lambda v: v >= 1, ">= 1 (1: the Space's own proxy)"),
    ("app.port", lambda v: 0 <= v <= 65535, "in [0, 65535] (0 = Gradio's default: 7860 or the next free port)"),
    ("app.max_submissions_per_minute", lambda v: v >= 0, ">= 0"),
    ("app.max_ratings_per_rater", lambda v: v >= 0, ">= 0 (0 = no limit)"),
    ("app.max_comment_chars", lambda v: 1 <= v <= 100_000, "in [1, 100000]"),
]


def _check_ranges(cfg: Config, source: str) -> None:
    problems = []  # (key, what it must be, the value given, the fix)
    for key, ok, rule in _RANGES:
        section, name = key.split(".")
        value = getattr(getattr(cfg, section), name)
        if not ok(value):
            problems.append((key, rule, value, f"change {key} in the config"))
    if not 0 <= cfg.decoding.seed or cfg.decoding.seed + cfg.pool.samples > POOL_SEED_LIMIT:
        problems.append(("decoding.seed", f">= 0, and seed + pool.samples at most {POOL_SEED_LIMIT} (live runs use the seeds above)",
                         cfg.decoding.seed, "change decoding.seed in the config"))
    for key in ("models.device", "models.draft_device"):
        value = getattr(cfg.models, key.split(".")[1])
        allowed = device_problem(value, key)
        if allowed:
            problems.append((key, allowed, value, f'set {key} to one of those, e.g. "cpu" or "cuda:0"'))
    for entry in cfg.models.max_memory:
        device, _, size = (part.strip() for part in entry.partition("="))
        if not (device and size):
            problems.append(("models.max_memory", 'a list of "device=size" entries like "0=20GiB" or "cpu=60GiB"', entry,
                             "change models.max_memory in the config"))
        elif not (device.isdigit() or device in ("cpu", "mps", "disk")):
            problems.append(("models.max_memory", 'a list of "device=size" entries whose device is a GPU index (0, 1, ...), '
                             '"cpu", "mps" or "disk"', entry, f'write the entry as "0={size}" for the first GPU, or "cpu={size}"'))
        elif memory_size(size) is None:
            problems.append(("models.max_memory", 'a list of "device=size" entries whose size is a number with a unit: '
                             "GiB, MiB, KiB, GB, MB or KB", entry,
                             f'write the size with a unit, e.g. "{device}=20GiB" or "{device}=500MB"'))
    if (cfg.models.max_memory or cfg.models.offload_folder) and not cfg.models.device_map:
        problems.append(("models.device_map", 'set (e.g. "auto") when max_memory or offload_folder is used',
                         cfg.models.device_map, "change models.device_map in the config"))
    if problems:
        key, rule, value, fix = problems[0]
        shown = f"{value!r}" if key != "models.max_memory" else f"an entry {value!r}"
        raise EvalkitError(f"{source}: {key} must be {rule} (got {shown})", fix)
    if cfg.assisted_enabled:  # before any model loads: Transformers would refuse it at the first generate()
        from .generation.batch import refuse_assisted_batch

        refuse_assisted_batch(cfg.decoding.batch_size, f"{source}: decoding.batch_size = {cfg.decoding.batch_size}")
        if cfg.decoding.stop_strings:
            # Transformers copies the target's stop strings into the draft's own generate() without a tokenizer, so
            # every assisted run fails and falls back (found 2026-12-02); stopping_criteria instead are checked only
            # once per accepted block, so the paths would stop at different places
            raise EvalkitError(
                f"{source}: decoding.stop_strings = {cfg.decoding.stop_strings!r} cannot be used with the assisted "
                "path: Transformers passes them to the draft's generate() without a tokenizer, so every assisted run "
                "would fail and fall back", "remove decoding.stop_strings (end the output with max_new_tokens or the "
                "model's end token), or switch the assisted path off (generation_path = \"ordinary\")")


def _check_file(cfg: Config, source: str) -> None:
    """What a config file is held to when it is read, beyond from_dict's checks: from_dict also reads the configs
    stored with experiments, which were accepted when they ran and must still load (a benchmark of
    bench.batch_sizes = [1] ran before this check; a prompt may have been removed since)."""
    from .generation.batch import refuse_no_batch
    from .task.prompts import load_prompts

    if ":" in cfg.app.host:  # read first by `raters add`, whose link would name an app that can never start there
        raise EvalkitError(ipv6_host_refusal(f"{source}: app.host = {cfg.app.host!r}"),
                           'set app.host to "127.0.0.1" for this machine only, or "0.0.0.0" for the network (IPv4)')

    if cfg.bench.batch_sizes:
        refuse_no_batch(cfg.bench.batch_sizes, f"{source}: bench.batch_sizes = {cfg.bench.batch_sizes}",
                        "set bench.batch_sizes to sizes above 1, e.g. [1, 2, 4, 8], or [] to measure no batch")
    for key in ("bench.prompts", "pool.prompts"):
        ids = getattr(getattr(cfg, key.split(".")[0]), "prompts")
        if ids:
            load_prompts(ids=ids, key=key, source=source)


def ipv6_host_refusal(what: str) -> str:
    """Gradio writes the page's address as http://HOST:PORT, an IPv6 address without its brackets: a start on ::1 or ::
    ended, once serving had begun, in httpx's traceback "Invalid port: ':1:7860'"."""
    return f"{what} is an IPv6 address, which the app's web server (Gradio) cannot serve on"


def from_dict(data: dict, source: str = "<config>") -> Config:
    cfg = _build(Config, data, "", source)
    _check_ranges(cfg, source)
    cfg.source = source
    return cfg


def set_twice(path: Path) -> dict[str, tuple[int, int]]:
    """The keys (`section.key`) and section headers (`[section]`) a config file sets twice, each with the lines of its
    first and second setting."""
    import re

    first, twice, section = {}, {}, ""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if m := re.match(r"\s*\[\s*([A-Za-z0-9_.\s-]+?)\s*\]\s*(#.*)?$", line):
            section = re.sub(r"\s*\.\s*", ".", m[1])
            name = f"[{section}]"
        elif m := re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line):
            name = f"{section}.{m[1]}" if section else m[1]
        else:
            continue
        if name in first and name not in twice:
            twice[name] = (first[name], n)
        first.setdefault(name, n)
    return twice


def load_config(path: Path | str | None = None) -> Config:
    """Read a config file (default: configs/demo.toml). Relative model folders resolve against the file."""
    from .locations import default_config_path

    named = bool(path)
    path = Path(path) if path else default_config_path()
    # where the path came from, for the fix: --config, the EVALKIT_CONFIG variable, or the bundled default
    if named:
        point = "pass --config"
    elif os.environ.get("EVALKIT_CONFIG"):
        point = "set EVALKIT_CONFIG (now " + repr(os.environ["EVALKIT_CONFIG"]) + ") to"
    else:
        point = "pass --config (or set EVALKIT_CONFIG to)"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvalkitError(f"config file {path} does not exist", f"{point} an existing TOML file")
    except IsADirectoryError:
        raise EvalkitError(f"config file {path} is a folder, not a file", f"{point} a TOML file, e.g. configs/demo.toml")
    except PermissionError as e:
        raise EvalkitError(f"cannot read config file {path}: {e.strerror or e}",
                           f"make it readable (chmod u+r {path}), or {point} a TOML file you can read")
    except OSError as e:
        raise EvalkitError(f"cannot read config file {path}: {e.strerror or e}", f"{point} a readable TOML file")
    except UnicodeDecodeError as e:
        raise EvalkitError(f"config file {path} is not UTF-8 text (byte {e.start}: {e.reason})",
                           "save it as UTF-8 (TOML files must be UTF-8)")
    except tomllib.TOMLDecodeError as e:
        if str(e).startswith(("Cannot overwrite a value", "Cannot declare")) and (twice := set_twice(path)):
            # a line pasted below one that sets the same key: TOML names no key, only the second line's position
            headers = [k for k in twice if k.startswith("[")]
            raise EvalkitError(f"config file {path} sets " + ", ".join(f"{k} twice (lines {a} and {b})"
                                                                       for k, (a, b) in twice.items()),
                               "; ".join((["keep one line for each key: delete the one you do not mean"]
                                          if len(headers) < len(twice) else [])
                                         + [f"merge the two {h} sections into one" for h in headers])) from e
        raise EvalkitError(f"config file {path} is not valid TOML: {e}", "fix the syntax at the position given")
    cfg = from_dict(data, str(path))
    _check_file(cfg, str(path))
    for obj, attr in [(cfg.models, a) for a in ("target", "draft", "target_tokenizer", "draft_tokenizer", "offload_folder")] + [(cfg, "gate_file")]:
        value = getattr(obj, attr)
        if value.startswith(("./", "../")):
            setattr(obj, attr, str((path.parent / value).resolve()))
    return cfg
