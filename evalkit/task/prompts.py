"""The fixed writing prompts, as data: one TOML file per prompt in prompts/."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EvalkitError
from .criteria import CRITERIA  # noqa: F401 (the registered criterion ids, also read from here)

# The plain-text frame used when a tokenizer has no chat template (the demo pair is trained on it).
PLAIN_TEMPLATE = "资料：{material}\n任务：{task}\n输出：\n"

_REQUIRED = {"id": str, "material": str, "task": str, "max_new_tokens": int, "criteria": dict}
_OPTIONAL = {"title": str, "shape": str, "language": str}


@dataclass(frozen=True)
class Reference:
    """One known-answer output of a gold pair (evalkit.study.gold, made when the pool is built): the text, and the
    criterion results known of it, criterion id -> "pass" | "fail" (only those an edit made certain)."""

    name: str
    text: str
    expected: dict[str, str]
    note: str = ""  # what was changed, shown in the reveal after the rating is stored


@dataclass(frozen=True)
class Prompt:
    id: str
    material: str
    task: str
    max_new_tokens: int
    # criterion id -> {"zh": rater wording, "en": rater wording}
    criteria: dict[str, dict[str, str]] = field(default_factory=dict)
    title: str = ""
    shape: str = ""
    language: str = "zh"

    def plain_text(self) -> str:
        return PLAIN_TEMPLATE.format(material=self.material, task=self.task)

    def user_message(self) -> str:
        """What a chat model gets as its one user turn."""
        return f"资料：{self.material}\n任务：{self.task}"


def load_prompt(path: Path) -> Prompt:
    """Read and validate one prompt file; every error names the file and the field."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvalkitError(f"prompt file {path} does not exist", "check the path or the prompts folder")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise EvalkitError(f"prompt file {path} is not valid TOML: {e}", "fix the syntax at the position given")
    if "gold" in data:  # a prompt file is public: a check pair written there can be recognised
        raise EvalkitError(
            f"prompt file {path}: [[gold]] reference outputs are no longer read from prompt files, which are public "
            "(a rater could recognise a check pair by its text)",
            "delete the [[gold]] entries: gold pairs are made when the pool is built, from pooled outputs with a "
            "controlled edit (pool.gold_rate)")
    unknown = set(data) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        raise EvalkitError(
            f"prompt file {path}: unknown field(s) {', '.join(sorted(unknown))}",
            f"allowed fields are {', '.join(sorted({**_REQUIRED, **_OPTIONAL}))}",
        )
    for name, typ in {**_REQUIRED, **_OPTIONAL}.items():
        if name not in data:
            if name in _REQUIRED:
                raise EvalkitError(f"prompt file {path}: missing field '{name}'", f"add {name} ({typ.__name__})")
            continue
        if not isinstance(data[name], typ) or isinstance(data[name], bool):
            raise EvalkitError(
                f"prompt file {path}: field '{name}' should be {typ.__name__}, got {type(data[name]).__name__}",
                f"write {name} as a TOML {typ.__name__}",
            )
    if not data["id"].strip() or not data["material"].strip() or not data["task"].strip():
        raise EvalkitError(f"prompt file {path}: id, material and task must not be empty", "fill them in")
    if data["max_new_tokens"] <= 0:
        raise EvalkitError(f"prompt file {path}: field 'max_new_tokens' must be > 0", "set a positive token budget")
    criteria = data["criteria"]
    if set(criteria) != set(CRITERIA):
        missing = sorted(set(CRITERIA) - set(criteria))
        extra = sorted(set(criteria) - set(CRITERIA))
        raise EvalkitError(
            f"prompt file {path}: field 'criteria' must have exactly {', '.join(CRITERIA)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(extra)}" if extra else ""),
            "add one [criteria.<id>] table per registered criterion id (evalkit/task/criteria.py)",
        )
    for cid in CRITERIA:
        wording = criteria[cid]
        if (
            not isinstance(wording, dict)
            or set(wording) != {"zh", "en"}
            or not all(isinstance(wording[k], str) and wording[k] for k in ("zh", "en"))
        ):
            raise EvalkitError(
                f"prompt file {path}: field 'criteria.{cid}' needs exactly two non-empty strings, 'zh' and 'en'",
                f'write [criteria.{cid}] with zh = "..." and en = "..."',
            )
    return Prompt(
        id=data["id"],
        material=data["material"],
        task=data["task"],
        max_new_tokens=data["max_new_tokens"],
        criteria={cid: {"zh": criteria[cid]["zh"], "en": criteria[cid]["en"]} for cid in CRITERIA},
        title=data.get("title", ""),
        shape=data.get("shape", ""),
        language=data.get("language", "zh"),
    )


def load_prompts(directory: Path | None = None, ids: list[str] | None = None, key: str = "",
                 source: str = "") -> list[Prompt]:
    """All prompts in a folder, sorted by id; `ids` selects and orders a subset. `key` names the config key the ids
    came from (bench.prompts, pool.prompts) and `source` its config file, for the error on an unknown one."""
    from ..locations import prompts_dir

    directory = Path(directory) if directory else prompts_dir()
    files = sorted(directory.glob("*.toml"))
    if not files:
        raise EvalkitError(f"no prompt files (*.toml) in {directory}", "set EVALKIT_PROMPTS to a folder of prompt files")
    prompts = [load_prompt(f) for f in files]
    by_id: dict[str, Prompt] = {}
    for p, f in zip(prompts, files):
        if p.id in by_id:
            raise EvalkitError(f"prompt file {f}: id '{p.id}' is used twice", "give every prompt a unique id")
        by_id[p.id] = p
    if ids:
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            where = f"{source}: {key} names " if key else ""
            raise EvalkitError(f"{where}unknown prompt id(s): {', '.join(unknown)}",
                               f"known ids: {', '.join(sorted(by_id))}" + (f"; change {key} ([] = all)" if key else ""))
        return [by_id[i] for i in ids]
    return [by_id[k] for k in sorted(by_id)]


# ---- identity: what a generation stores about its prompt (the provenance of every figure starts here)


def _sha16(obj) -> str:
    data = obj if isinstance(obj, bytes) else json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def prompt_hash(prompt) -> str:
    """sha256 (16 hex) of what defines a prompt's request: id, material, task and token budget."""
    return _sha16({"id": prompt.id, "material": prompt.material, "task": prompt.task,
                   "max_new_tokens": prompt.max_new_tokens})


def criteria_hash(prompt) -> str:
    """sha256 (16 hex) of the criteria's wording in both languages: the questions raters answer about the outputs."""
    return _sha16(prompt.criteria)


def prompt_record(prompt, input_ids: list[int] | None = None, text: str | None = None) -> dict:
    """What a generation stores about its prompt (effective_config["prompt"]): the request itself, the criteria's
    wording its raters are asked (the Rate tab shows this, not a file edited since), and a hash of the exact token
    ids the model was given (chat template or plain frame applied)."""
    rec = {"id": prompt.id, "hash": prompt_hash(prompt), "material": prompt.material, "task": prompt.task,
           "max_new_tokens": prompt.max_new_tokens, "criteria": prompt.criteria,
           "criteria_hash": criteria_hash(prompt)}
    if text is not None:  # live demo: the visitor's text replaced the prompt
        rec = {"id": prompt.id, "hash": _sha16(text.encode()), "text": text}
    if input_ids is not None:
        rec["input_ids_hash"] = _sha16(list(input_ids))
    return rec
