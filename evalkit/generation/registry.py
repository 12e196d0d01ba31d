"""The generation paths, each ONE registered object (a `PathSpec`): its name, whether it needs the draft, its
`generate()` arguments, when the config switches it on, whether it is benched and compared with the ordinary path,
its label and its colour. Everything that runs, measures or shows a path reads it here: the paths themselves
(generation/paths.py), the benchmark (bench/run, worker, summary), the speed figures (speed.py), the aggregate's
timing, the report's plots, the export's card, the Live tab, `evalkit run --path`, and the store (which refuses a
path that is not registered: the schema has no list of path names, migration 014).

A new path is one `register(PathSpec(...))` call (here for a bundled path, or in a module of your own: the
benchmark's worker processes import the modules that registered paths outside evalkit), plus its config key when
it has a setting. Honest numbers are the registry's rules, not each caller's: a path `versus_ordinary` gets its own
speed-up, identical share and acceptance against ordinary, never pooled with another path's; the fallback is its own
path, never counted as the one that failed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import EvalkitError
from ..records import GenerationPath


def _always(cfg) -> bool:
    return True


def _no_refusal(cfg, compat) -> str | None:
    return None


@dataclass(frozen=True)
class PathSpec:
    """One generation path. `cfg` is a Config, `compat` a CompatibilityRecord, `pair` a loaded ModelPair."""

    name: str  # stored as generations.path, timing_runs.path, ...; also the `evalkit run --path` choice
    label: str  # what people read: the Live tab's box, the report's legends
    colour: str  # its colour in every plot (a matplotlib colour name)
    label_zh: str = ""  # the label in Chinese, beside it where the page is bilingual (the Live tab's box)
    # extra generate() arguments for a loaded pair; None: never run on its own (the fallback is run by another path)
    generate_kwargs: Callable[[Any], dict] | None = None
    needs_draft: bool = False  # the draft model is loaded for it (benchmark worker) and its passes counted
    enabled: Callable[[Any], bool] = _always  # does the config switch it on (no model needed)
    switch: str = ""  # how to switch it on, for the error when it is off
    refusal: Callable[[Any, Any], str | None] = _no_refusal  # switched on, yet this pair may not run it: why
    drafts: bool = False  # candidates are proposed and verified: acceptance is counted for it
    falls_back: bool = False  # a failure is stored as a failed record, then ordinary runs as the `fallback` path
    benched: bool = True  # `evalkit bench` measures it, in its own worker process, when it is available
    versus_ordinary: bool = False  # its speed-up, identical share and acceptance against ordinary are reported
    in_pairs: bool = False  # a side of the blind pairs raters judge (the study compares ordinary and assisted)
    live: bool = True  # the Live tab runs it when it is available
    module: str = field(default="", compare=False)  # the module that registered it (set by register)

    @property
    def runnable(self) -> bool:
        return self.generate_kwargs is not None


_REGISTRY: dict[str, PathSpec] = {}
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def register(spec: PathSpec, *, replace: bool = False) -> PathSpec:
    """Add a path (in registration order: tables, plots and the Live tab follow it). `replace` redefines one."""
    if not _NAME.match(spec.name):
        raise EvalkitError(f"path name {spec.name!r} is not a plain lower-case identifier",
                           "name it like prompt_lookup: a-z, digits and _, at most 40 characters")
    if spec.name in _REGISTRY and not replace:
        raise EvalkitError(f"the path {spec.name!r} is registered already",
                           "pick another name, or pass replace=True to redefine it")
    module = spec.module or sys._getframe(1).f_globals.get("__name__", "")
    spec = PathSpec(**{**spec.__dict__, "module": module})
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a path (a test's, or a plugin's being unloaded); the bundled ones stay."""
    if name in BUNDLED:
        raise EvalkitError(f"the bundled path {name!r} cannot be removed", "register your own path under another name")
    _REGISTRY.pop(name, None)


def get(name: str) -> PathSpec:
    try:
        return _REGISTRY[str(name)]
    except KeyError:
        raise EvalkitError(f"unknown path {str(name)!r}", f"use one of: {', '.join(_REGISTRY)}") from None


def all_paths() -> list[PathSpec]:
    return list(_REGISTRY.values())


def names() -> list[str]:
    return list(_REGISTRY)


def choices() -> list[str]:
    """The paths one can ask to run (`evalkit run --path`): every path but the fallback."""
    return [s.name for s in _REGISTRY.values() if s.runnable]


def order(paths) -> list[str]:
    """These path names in registration order (unknown ones last, as given): how tables and plots list them."""
    paths = [str(p) for p in paths]
    known = [n for n in _REGISTRY if n in paths]
    return known + [p for p in paths if p not in _REGISTRY]


def label(name: str) -> str:
    return _REGISTRY[name].label if name in _REGISTRY else str(name)


def bilingual(spec: PathSpec) -> str:
    """Its label in English · Chinese, for the bilingual pages (English alone where no Chinese was given)."""
    return f"{spec.label} · {spec.label_zh}" if spec.label_zh else spec.label


def colour(name: str) -> str:
    return _REGISTRY[name].colour if name in _REGISTRY else "tab:gray"


def available(cfg, compat, *, benched: bool = False, live: bool = False) -> list[str]:
    """The paths this config and pair can run, in registration order: switched on and not refused (ordinary
    always). `benched` / `live`: only those the benchmark / the Live tab run. The one answer for every caller."""
    return [s.name for s in _REGISTRY.values()
            if s.runnable and s.enabled(cfg) and s.refusal(cfg, compat) is None
            and (s.benched or not benched) and (s.live or not live)]


def refusals(cfg, compat) -> dict[str, str]:
    """Paths switched on in the config that this pair may not run, each with why (said, never silently skipped)."""
    return {s.name: why for s in _REGISTRY.values()
            if s.runnable and s.enabled(cfg) and (why := s.refusal(cfg, compat)) is not None}


def versus_ordinary() -> list[str]:
    """The paths whose speed figures are reported against ordinary, each on its own."""
    return [s.name for s in _REGISTRY.values() if s.versus_ordinary]


def plugin_modules(paths=None) -> list[str]:
    """Modules outside evalkit that registered these paths (all when None): a benchmark worker process imports
    them, so a path registered by your own code runs there too."""
    wanted = list(_REGISTRY.values()) if paths is None else [get(p) for p in paths]
    for s in wanted:
        if s.module == "__main__":
            raise EvalkitError(f"the path {s.name!r} is registered by the script being run, which the benchmark's "
                               "worker processes cannot import",
                               "register it in a module of its own, importable from PYTHONPATH, and import that")
    return sorted({s.module for s in wanted if s.module and s.module.split(".")[0] != "evalkit"})


def load_plugins(modules) -> None:
    """Import the modules that register paths (a benchmark worker, given its parent's plugin_modules)."""
    import importlib

    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            raise EvalkitError(f"the module {m!r}, which registers a generation path, cannot be imported: {e}",
                               "put its folder on PYTHONPATH for the benchmark's worker processes") from e


# ---------------------------------------------------------------- the bundled paths

def _assisted_kwargs(pair) -> dict:
    extra = {"assistant_model": pair.draft}
    if pair.compat.verdict == "different_tokenizer":  # Universal Assisted Generation
        extra.update(tokenizer=pair.tokenizer, assistant_tokenizer=pair.draft_tokenizer)
    return extra


def _assisted_refusal(cfg, compat) -> str | None:
    if compat is None or compat.approved:
        return None
    return "not approved for this pair: " + "; ".join(compat.reasons)


register(PathSpec(
    name=GenerationPath.ORDINARY.value, label="Ordinary — target alone", label_zh="普通：仅目标模型",
    colour="tab:blue",
    generate_kwargs=lambda pair: {}, in_pairs=True))
register(PathSpec(
    name=GenerationPath.ASSISTED.value, label="Assisted — target verifies the draft",
    label_zh="辅助：目标模型验证草稿模型的提议", colour="tab:orange",
    generate_kwargs=_assisted_kwargs, needs_draft=True, enabled=lambda cfg: cfg.assisted_enabled,
    switch="set generation_path = 'assisted' and load_draft = true in the config, or run the ordinary path",
    refusal=_assisted_refusal, drafts=True, falls_back=True, versus_ordinary=True, in_pairs=True))
register(PathSpec(
    name=GenerationPath.FALLBACK.value, label="Fallback — ordinary, run because assisted failed",
    label_zh="回退：辅助失败后由目标模型单独生成", colour="tab:red",
    benched=False, live=False))  # run by the assisted path after a failure, under its own name
register(PathSpec(
    name=GenerationPath.PROMPT_LOOKUP.value, label="Prompt lookup — n-grams from the prompt, no draft",
    label_zh="提示查找：从提示中取 n-gram，无草稿模型", colour="tab:purple",
    generate_kwargs=lambda pair: {"prompt_lookup_num_tokens": pair.cfg.assistant.prompt_lookup_num_tokens},
    enabled=lambda cfg: cfg.assistant.prompt_lookup_num_tokens > 0,
    switch="set assistant.prompt_lookup_num_tokens > 0 (e.g. 10)", drafts=True, versus_ordinary=True))

BUNDLED = frozenset(_REGISTRY)
