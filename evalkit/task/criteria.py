"""The fidelity criteria, each one registered object: its id, its title per language, its pre-screen rule and its
gold edits. Everything else reads them from here (the prompt files' validation, the pre-screen, the gold pairs, the
rating form and its checks, the ratings table's columns, the aggregate, the plan, the report and the app), so a new
criterion is a `register(Criterion(...))` below plus its question in every prompt file, as a metric is in lighteval
or a question in Argilla.

The id is stored (ratings columns a_/b_/ordinary_/assisted_<id>, pre-screen rows, exports) and never shown to a
rater: the app shows the title and the prompt file's question. The question lives in the prompt files (a prompt may
word it for its own shape), in both languages; `Criterion.question` reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import EvalkitError
from . import edits, fidelity

LANGS = ("zh", "en")
# An id becomes part of column names (a_<id>, ...): lower-case letters, digits and underscores only.
_ID = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@dataclass(frozen=True)
class Criterion:
    id: str  # stored, exported, never shown to a rater
    title: dict[str, str]  # language -> a short name, shown wherever the criterion is named
    check: Callable[[str], fidelity.Verdict]  # the pre-screen rule on a normalised text (fidelity.screen)
    # gold edits that make an output fail this criterion (evalkit.task.edits); each returns None when it does not
    # apply to a text. An edit shared by several criteria is tried once, in the order of the first.
    gold_edits: tuple[Callable[[str, str], edits.Edit | None], ...] = field(default=())

    def name(self, lang: str | None = None) -> str:
        """The title in one language, or both ("English · 中文") where the reader's language is not known."""
        if lang in LANGS:
            return self.title[lang]
        return f"{self.title['en']} · {self.title['zh']}"

    def question(self, prompt, lang: str) -> str:
        """The question a rater answers for this prompt, in their language (from the prompt file)."""
        return prompt.criteria[self.id]["zh" if lang == "zh" else "en"]


_REGISTRY: dict[str, Criterion] = {}


def register(c: Criterion) -> Criterion:
    """Add a criterion (at the end of the order). Its ratings columns are added when a database is next opened
    (store.database.migrate)."""
    if not isinstance(c.id, str) or not _ID.match(c.id):
        raise EvalkitError(f"criterion id {c.id!r} is not a plain lower-case name",
                           "use lower-case letters, digits and underscores, starting with a letter (at most 40)")
    if c.id in _REGISTRY:
        raise EvalkitError(f"criterion '{c.id}' is already registered", "give the new criterion another id")
    if set(c.title) != set(LANGS) or not all(isinstance(c.title[k], str) and c.title[k].strip() for k in LANGS):
        raise EvalkitError(f"criterion '{c.id}': title needs exactly two non-empty strings, 'zh' and 'en'",
                           'write title={"zh": "...", "en": "..."}')
    if not callable(c.check):
        raise EvalkitError(f"criterion '{c.id}': check must be a function of the text", "pass its pre-screen rule")
    _REGISTRY[c.id] = c
    return c


def unregister(criterion_id: str) -> None:
    """Remove a criterion from the registry (tests that register one of their own); stored columns stay."""
    _REGISTRY.pop(criterion_id, None)


def get(criterion_id: str) -> Criterion:
    try:
        return _REGISTRY[criterion_id]
    except KeyError:
        raise EvalkitError(f"unknown criterion '{criterion_id}'", f"known: {', '.join(_REGISTRY)}") from None


def all_criteria() -> tuple[Criterion, ...]:
    return tuple(_REGISTRY.values())


def title(criterion_id: str, lang: str | None = None) -> str:
    """What a person reads for a criterion id (the id itself only if it is not registered: an old stored row)."""
    c = _REGISTRY.get(criterion_id)
    return c.name(lang) if c is not None else criterion_id


def titled(df):
    """A table as people read it: its `criterion` column (and the agreement table's `item`) in titles, not ids."""
    for col in ("criterion", "item"):
        if col in getattr(df, "columns", ()) and len(df):
            df = df.assign(**{col: [title(v) if isinstance(v, str) else v for v in df[col]]})
    return df


def gold_edits() -> tuple[Callable, ...]:
    """Every registered criterion's gold edits, in order, each once."""
    return tuple(dict.fromkeys(fn for c in _REGISTRY.values() for fn in c.gold_edits))


class Live(Sequence):
    """A tuple computed from the registry each time it is read, so that `from ... import CRITERIA` stays true after
    a criterion is registered (a plain tuple would be frozen at import). Pickles as a plain tuple."""

    def __init__(self, items: Callable[[], tuple]):
        self._items = items

    def __getitem__(self, i):
        return self._items()[i]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self):
        return iter(self._items())

    def __eq__(self, other) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    __hash__ = None

    def __repr__(self) -> str:
        return repr(self._items())

    def __reduce__(self):
        return tuple, (tuple(self),)


def screen(text: str) -> dict[str, fidelity.Verdict]:
    """The pre-screen: every registered criterion's rule on an output of a bundled prompt (all share the
    maintenance material)."""
    text = fidelity.normalise(text)
    return {c.id: c.check(text) for c in _REGISTRY.values()}


def screen_prompt_output(prompt_id: str, text: str) -> dict[str, fidelity.Verdict]:
    """`evalkit fidelity`: the pre-screen of an output of the prompt `prompt_id`, after a clear error for an unknown
    id (every bundled prompt shares the material, so the rules do not depend on which)."""
    from .prompts import load_prompts

    load_prompts(ids=[prompt_id])
    return screen(text)


# The ids, in order: raters, the pre-screen, the store and the export share them.
CRITERIA = Live(lambda: tuple(_REGISTRY))


# ---- the four criteria of the maintenance material (shared/DESIGN.md) ----------------------------------------

register(Criterion(
    "schedule", {"zh": "维护时间", "en": "Maintenance time"}, fidelity.check_schedule, (edits.change_day,)))
register(Criterion(
    "read_only_vs_upload", {"zh": "上传与阅读", "en": "Uploads and reading"}, fidelity.check_read_only_vs_upload))
register(Criterion(
    "unknown_restore_time", {"zh": "恢复时间未定", "en": "Restore time unknown"}, fidelity.check_unknown_restore_time,
    (edits.add_promise,)))
register(Criterion(
    "no_added_promises", {"zh": "不添加承诺", "en": "No added promises"}, fidelity.check_no_added_promises,
    (edits.add_promise,)))
