"""Library errors become one clear message in the UI; anything unexpected is logged, never shown as a trace."""

from __future__ import annotations

import functools
import html
import inspect
import logging
import re
from typing import TYPE_CHECKING

from ..errors import EvalkitError
from .session import Session
from .words import error_zh

if TYPE_CHECKING:  # gradio is imported where it is used (it is slow to import)
    import gradio as gr

log = logging.getLogger("evalkit.ui")


# Pair ids (store.new_pair_id: "p" + 16 hex digits) stay on the server, even inside an error message.
_PAIR_ID = re.compile(r"(?:pair )?'?\bp[0-9a-f]{16}\b'?")


_MARKDOWN_PUNCT = re.compile(r"([\\`*_\[\]()~:])")  # emphasis, code, links (and autolinks), strikethrough


def inert(text: str) -> str:
    """Rater-typed text (a name) for a gr.Markdown: shown as the characters typed, never as HTML or Markdown."""
    return _MARKDOWN_PUNCT.sub(r"\\\1", html.escape(text, quote=False))


def without_pair_id(text: str) -> str:
    """A refusal's words as a rater may read them: any pair id in them said as "this pair"."""
    return _PAIR_ID.sub("this pair", text)


def message(e: EvalkitError, lang: str = "en") -> str:
    """The error as the rater sees it: for a Chinese rater the Chinese first where words.ERRORS_ZH has it, then the
    English as the library wrote it (the words an organiser searches for when a rater forwards it). Gradio renders
    toast messages as (sanitised) HTML, and messages can quote what a rater typed (a name), so the text is escaped:
    it shows as typed and stays inert."""
    what = without_pair_id(e.what)
    english = what + (f" — fix: {e.fix}" if e.fix else "")
    zh = error_zh(what, e.fix) if lang == "zh" else None
    return html.escape(english if zh is None else f"{zh[0]}。{zh[1]}。（{english}）", quote=False)


# what a rater reads when a handler fails unforeseen (rate._say_refusal reads its English in the popup)
UNEXPECTED = EvalkitError("something went wrong on the server; it was logged", "reload the page and try again")


def _translate(e: Exception, lang: str) -> gr.Error:
    import gradio as gr

    if isinstance(e, gr.Error):
        return e
    if isinstance(e, EvalkitError):
        return gr.Error(message(e, lang), print_exception=False)
    log.exception("unexpected error in an app event")
    return gr.Error(message(UNEXPECTED, lang).replace(" — fix: ", " — "), print_exception=False)


def _language(args) -> str:
    """The rater's language from the event's session (the first Session among its inputs); English without one."""
    return next((a.lang for a in args if isinstance(a, Session)), "en")


def friendly(fn):
    """Wrap an event handler (plain or generator): EvalkitError -> gr.Error with the message and the fix, in the
    language of the event's session.

    Raising gr.Error leaves every output untouched, so nothing is half-shown; the library stores in one
    transaction, so nothing is half-written."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001
                raise _translate(e, _language(args)) from e
        return gen

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            raise _translate(e, _language(args)) from e
    return plain


def gradio_hints(fn):
    """`fn` with the hints Gradio reads to fill in a parameter itself (gr.Request, gr.OAuthProfile) as real classes.

    Gradio finds those parameters with typing.get_type_hints; under postponed annotations, with gradio imported only
    inside functions (it is slow to import), the string "gr.Request" cannot be resolved from the module, and Gradio
    would pass the request as an input. The wrapper (plain or generator, like `fn`) carries the classes instead."""
    import gradio as gr

    known = {"gr.Request": gr.Request, "gr.OAuthProfile": gr.OAuthProfile}
    hints = {}
    for name, hint in getattr(fn, "__annotations__", {}).items():
        text = hint if isinstance(hint, str) else ""
        for key, cls in known.items():
            if text.replace(" | None", "") == key:
                hints[name] = cls | None if text.endswith("| None") else cls
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(*args, **kwargs):
            yield from fn(*args, **kwargs)
        gen.__annotations__ = hints
        return gen

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        return fn(*args, **kwargs)
    plain.__annotations__ = hints
    return plain
