"""The Rate tab: sign in, get a blind pair, score it, submit, see the reveal, correct, skip.

Blindness: the browser gets the two texts, labelled A and B, and the prompt. The pair id lives in the
server-side `Session` (gr.State); the reveal is rendered only after a stored submission. Handlers return
dicts keyed by component, so no output list has a magic order.

Cost, with many raters at once: Gradio rebuilds a component on the server for every `gr.update` output, and for
every declared output a handler leaves out (a `gr.skip()` goes the same way); a plain value is cheap. So each
event declares only the outputs it changes, submit and next pair return every one of them (tests/test_app_client.py
checks this), and what is pure page state (locking the form, enabling Submit) is set in the browser, without a
server round trip. The server never relies on it: a locked rating is refused by the server-side session.

Each event is a small named method of `RateHandlers` over library calls (evalkit.rating: the queue, the ratings, the
reveal; no SQL here); `build_rate_tab` lays the tab out and wires the events to them. tests/test_rate_handlers.py
calls the handlers directly, without a server.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import EvalkitError
from ..rating.limits import RateLimiter
from ..rating.roster import SignInError, code_from
from ..rating.queue import (
    CAP_LAPSE_HOURS, HOLD_MINUTES, AlreadyRated, HoldDisplaced, PairTaken, Pending, RatingError, RatingInput, StudyClosed,
    TextMet, all_identical, hold_ends, keep_hold, answers_from_row, correct_rating, current_rating, is_closed, is_counted, latest_shown, next_pair, pair_prompt, pair_view,
    kept_by_results_view, note_refused, progress, rated_pairs, rating_counts, rater_reveal, refuse_met_text, refused_submission, results_seen,
    share_reached, skip_pair, study_decided, stored_submission, submit_rating,
)
from ..task.criteria import CRITERIA
from ..task.prompts import Prompt
from . import auth, hubcheck
from .alerts import UNEXPECTED, friendly, gradio_hints, inert, without_pair_id
from .db import connect
from .form import (
    ANSWER_KEYS, CODE_KEY, FORM_KEYS, REQUIRED_KEYS, RateTab, labels_key, layout, prompt_markdown, relabel, update, words_update,
)
from .guard import arrived_at
from .guidelines import guidelines
from .prepare import panel
from .reveal import render, render_list
from .session import Session, end_sign_in, new_sign_in, require_rater, sign_in_ended, submissions, writing
from .words import GRADIO_MESSAGES, NO_ANSWER_LINES, WORDS, error_zh, page_lang, word

log = logging.getLogger("evalkit.ui")

if TYPE_CHECKING:  # gradio is imported where it is used (it is slow to import)
    import gradio as gr

__all__ = ["ANSWER_KEYS", "FORM_KEYS", "REQUIRED_KEYS", "RateHandlers", "RateTab", "build_rate_tab"]


def _form_interactive(on: bool) -> str:
    """Browser-only (no server round trip): lock or unlock the scoring form."""
    return f"() => Array({len(FORM_KEYS)}).fill({{__type__: 'update', interactive: {str(on).lower()}}})"


# Browser-only: drop ?invite=CODE from the address bar and this history entry.
_FORGET_INVITE = """() => { const u = new URL(window.location.href);
  if (u.searchParams.has('invite')) { u.searchParams.delete('invite'); window.history.replaceState(null, '', u); } }"""


# Browser-only: the rater's language choice is kept in this browser, and a reload (after the page's sign-in) goes back
# to it; the switch to it runs as the rater's own would (ui.lang.change relabels everything on the server).
# It clicks the switch, reading and acting in one go, and writes no output: Gradio reads a step's inputs and writes
# its outputs across animation frames, so the language it wrote back as read undid a click the rater made meanwhile;
# a click of hers on this page (evalkitLangChosen) is her latest word, and the kept one is not applied over it.
_LANG_KEY = "evalkit-lang"
_KEEP_LANG = (f"(lang) => {{ window.evalkitLangChosen = true; try {{ localStorage.setItem('{_LANG_KEY}', lang); }}"
              " catch (e) {} }")
_STORED_LANG = (f"() => {{ let kept = null; try {{ kept = localStorage.getItem('{_LANG_KEY}'); }} catch (e) {{}}"
                " if (window.evalkitLangChosen || (kept !== 'en' && kept !== 'zh')) return;"
                " const now = document.querySelector('#lang input:checked');"
                " const to = document.querySelector(`#lang input[value='${kept}']`);"
                " if (to && (!now || now.value !== kept)) to.click(); }")

# Browser-only: the answers not yet submitted survive a reload. Each answer the rater gives is kept in this browser
# under a hash of the pair's two texts (what the page shows anyway: no pair id, nothing about the paths) and whose
# answers they are (draft_owner: on a shared computer the next rater may be served the same pair, and must not find
# the last one's answers in her form); a reload that serves the same pair again to the same rater
# (evalkit.rating.queue.next_pair resumes a held pair) puts them back into a form that is still empty; another
# rater's sign-in never reaches them (_DRAFTS). A stored submission and a skip forget them. The server sees them only on
# Submit, and checks them there as always (and, for a pair no longer on screen at a reload, in draft_fate).
# The skip reason typed is kept with them, last (rater audit R3: a reload lost it). Answers given while a correction
# is open (Submit and Next pair both in sight) are marked as such, so a reload can say what became of the correction.
_DRAFT_KEY = "evalkit-draft"
# Each rater's answers are her own record in the browser's store, found by her digest only (draft_owner), so nothing
# done on the page under one sign-in reads, shows or deletes another's: one rater signing out and another signing in
# on the same page while the first's sign-in or draft save was still on its way could delete the first's answers or
# put them into the second's form. Sign-out leaves hers for her next sign-in; a record per rater, the newest few.
# (A page of before kept one rater's record under the key itself: read as hers.)
_DRAFTS = ("const drafts = () => { let m = null;"
           f" try {{ m = JSON.parse(localStorage.getItem('{_DRAFT_KEY}')); }} catch (e) {{}}"
           " if (!m || typeof m !== 'object' || Array.isArray(m)) return {};"
           " return typeof m.who === 'string' ? {[m.who]: m} : m; };"
           " const draftOf = (w) => { const d = w ? drafts()[w] : null; return d && d.who === w ? d : null; };"
           " const keepDraft = (w, d) => { if (!w) return; const m = drafts();"
           " if (d) m[w] = Object.assign(d, {who: w, at: Date.now()}); else delete m[w];"
           " const ws = Object.keys(m).sort((x, y) => (m[y].at || 0) - (m[x].at || 0));"
           " ws.slice(8).forEach((x) => delete m[x]);"  # the newest 8 raters' (a lab computer)
           f" try {{ if (Object.keys(m).length) localStorage.setItem('{_DRAFT_KEY}', JSON.stringify(m));"
           f" else localStorage.removeItem('{_DRAFT_KEY}'); }} catch (e) {{}} }};")
_TEXTS_HASH = ("const hash = (s) => { let h1 = 0xdeadbeef, h2 = 0x41c6ce57;"  # cyrb53: 53 bits, no dependency
               " for (let i = 0; i < s.length; i++) { const c = s.charCodeAt(i);"
               " h1 = Math.imul(h1 ^ c, 2654435761); h2 = Math.imul(h2 ^ c, 1597334677); }"
               " h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);"
               " h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);"
               " return String(4294967296 * (2097151 & h2) + (h1 >>> 0)); };")
_KEEP_DRAFT = ("(who, a, b, ...values) => { " + _TEXTS_HASH + _DRAFTS + " if (!who || !a || !b) return;"
               " const shown = (id) => { const e = document.getElementById(id); return !!e && e.offsetParent !== null; };"
               " const correcting = shown('next') && shown('submit');"
               " keepDraft(who, {pair: hash(a + '\\u0000' + b), values, correcting}); }")
# It writes nothing unless it puts kept answers back: Gradio reads a step's inputs and writes its outputs across
# animation frames, so values read and written back as they were (as it did) wiped what a rater typed meanwhile (a
# load step late on a busy machine, after she had signed in by hand: her skip reason gone, .ci/run 2026-12-06).
_DRAFT_READ = ("(who, a, b, ...values) => { " + _TEXTS_HASH + _DRAFTS + " const d = draftOf(who);"
               # the form's values and the skip reason, then the skip box (opened when a kept reason comes back)
               " const as = (vs, open) => [...(vs || values.map(() => ({__type__: 'update'}))),"
               " open ? {__type__: 'update', open: true} : {__type__: 'update'}];")
# kept answers that fit the pair on screen, into a form still empty (else it is left as it is)
_DRAFT_MISFITS = (" const fresh = values.every((v) => v === null || v === undefined || v === '');"
                  " if (!a || !b || !fresh || !d || d.pair !== hash(a + '\\u0000' + b) || !Array.isArray(d.values)"
                  " || d.values.length !== values.length) return as();")
_RESTORE_DRAFT = (_DRAFT_READ +
                  # only hers (draftOf): another rater's are neither shown nor touched. Read as nobody (no sign-in
                  # yet, or hers by hand still on its way), nothing is shown and nothing goes
                  " if (!who) return as();"
                  # hers, on a pair no longer on her screen (or none on screen): gone, and the server says what became
                  # of them (draft_fate: stored, the correction stored or not, the pair completed by others, or the
                  # hold ran out, rater audit F11, R1, R2)
                  " if (d && (!a || !b || d.pair !== hash(a + '\\u0000' + b))) {"
                  " window.evalkitDraftGone = {pair: d.pair, sent: !!d.sent, correcting: !!d.correcting,"
                  " sub: d.sent && typeof d.sub === 'string' ? d.sub : '', values: Array.isArray(d.values) ? d.values : []};"
                  " keepDraft(who, null); return as(); }"
                  + _DRAFT_MISFITS +
                  # answers sent (Submit pressed) that come back: the rating was not stored (the sign-in waited for her
                  # writes, and for that submission while it was queued: a stored one would have freed the pair).
                  # With its id, draft_fate says whether it reached the server and was refused, and why; a page of
                  # before kept none, and _SAY_DRAFT_LOST says it did not reach the server
                  " if (d.sent && typeof d.sub === 'string' && d.sub) window.evalkitDraftGone = {pair: d.pair, sent: true,"
                  " sub: d.sub, back: true, correcting: !!d.correcting, values: d.values};"
                  " else window.evalkitDraftBack = !!d.sent;"
                  " return as(d.values, !!d.values[d.values.length - 1]); }")
# After a sign-in typed on the page: her answers kept, unsent, back into the pair served again with an empty form.
# The page load's sign-in and a typed one may answer in either order within a second; the later served the pair
# again with an empty form, and her next click kept only what it then held (a reload brought nothing back). It
# forgets nothing (whose the page is may still change as the other answers) and leaves a sent draft to the load's
# step, which asks what became of it.
_PUT_BACK_DRAFT = (_DRAFT_READ + " if (!who || !d || d.sent) return as();" + _DRAFT_MISFITS +
                   " return as(d.values, !!d.values[d.values.length - 1]); }")


def texts_digest(text_a: str, text_b: str) -> str:
    """The digest _TEXTS_HASH gives a pair's two texts in the browser (cyrb53 over UTF-16 code units), so the server
    can tell which of a rater's pairs the answers a browser kept were for."""
    m32 = 0xFFFFFFFF

    def imul(x: int, y: int) -> int:
        return (x * y) & m32

    units = (text_a + "\0" + text_b).encode("utf-16-le")
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    for i in range(0, len(units), 2):
        c = units[i] | units[i + 1] << 8
        h1, h2 = imul(h1 ^ c, 2654435761), imul(h2 ^ c, 1597334677)
    h1 = imul(h1 ^ (h1 >> 16), 2246822507) ^ imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = imul(h2 ^ (h2 >> 16), 2246822507) ^ imul(h1 ^ (h1 >> 13), 3266489909)
    return str(4294967296 * (2097151 & h2) + h1)


def draft_owner(rater: str) -> str:
    """Whose unsent answers the browser keeps (_KEEP_DRAFT): a digest of the rater's name, so the page's store holds
    no name; it is no credential (the server checks every submission against the session)."""
    import hashlib

    return hashlib.sha256(f"evalkit-draft\0{rater}".encode()).hexdigest()[:16]


# Browser-only: every tab of this browser rates as the rater signed in last. A sign-in marks whose tab this is (the
# digest draft_owner gives, never a credential) in the browser's store; a tab that sees the mark change under it (a
# sign-out, or another rater's sign-in, in another tab) reloads, and so signs in as the stored code says, or shows the
# sign-in form. A sign-out left the browser's other tabs signed in: on a shared computer the next person rated in them
# under the last rater's name (rater audit 2026-12-05, R1). The same rater's sign-in writes the same mark, which
# fires no event, so two tabs never reload each other in turn. (KEEP_TYPED: _keep_typed's watcher, installed with it.)
_WHO_KEY, _WHO_GONE = "evalkit-who", "evalkit-who-gone"
_MARK_WHO = ("(who) => { window.evalkitWho = who || ''; KEEP_TYPED"
             f" try {{ if (who) localStorage.setItem('{_WHO_KEY}', who); }} catch (e) {{}}"
             " if (window.evalkitWhoWatched) return; window.evalkitWhoWatched = true;"
             " window.addEventListener('storage', (e) => {"
             f" if (e.key !== null && e.key !== '{_WHO_KEY}') return;"  # null: the whole store was cleared
             f" let now = null; try {{ now = localStorage.getItem('{_WHO_KEY}'); }} catch (err) {{ return; }}"
             " if (!window.evalkitWho || now === window.evalkitWho) return;"
             f" try {{ sessionStorage.setItem('{_WHO_GONE}', now ? 'in' : 'out'); }} catch (err) {{}}"
             " window.location.reload(); }); }")


def _keep_typed(n: int) -> str:
    """Browser-only, once per page (it runs with _MARK_WHO): what is typed into the comment or the skip reason is kept
    in the answers this browser keeps (_KEEP_DRAFT's record; n: the form's values and the reason), from the box's own
    input events. Gradio's input event missed text inserted whole (an input method's, a dictation's), and only leaving
    the box kept it: a reload lost the reason typed (rater audit R3)."""
    return ("if (!window.evalkitTypedWatched) { window.evalkitTypedWatched = true;"
            " document.addEventListener('input', (e) => { " + _TEXTS_HASH + _DRAFTS +
            " const t = e.target, box = t && t.closest && t.closest('#comment, #skip-reason');"
            " if (!box || !['TEXTAREA', 'INPUT'].includes(t.tagName) || !window.evalkitWho) return;"
            " const field = (id) => document.querySelector('#' + id + ' textarea, #' + id + ' input');"
            " const a = (field('text-a') || {}).value, b = (field('text-b') || {}).value; if (!a || !b) return;"
            " const shown = (id) => { const el = document.getElementById(id); return !!el && el.offsetParent !== null; };"
            " const pair = hash(a + '\\u0000' + b); let d = draftOf(window.evalkitWho);"
            f" if (!d || d.pair !== pair || !Array.isArray(d.values) || d.values.length !== {n})"
            f" d = {{pair, values: [...Array({n - 2}).fill(null), '', ''],"
            " correcting: shown('next') && shown('submit')};"
            f" d.values[box.id === 'comment' ? {n - 2} : {n - 1}] = t.value;"
            " keepDraft(window.evalkitWho, d); }, true); }")


def _either(key: str, **args) -> str:
    """A JS expression: the words of `key` in the page's language (the switch's choice)."""
    return (" ((document.querySelector('#lang input:checked') || {}).value === 'en' ? "
            + repr(word(key, "en", **args)) + " : " + repr(word(key, "zh", **args)) + ")")


# After _RESTORE_DRAFT: the status line says when the answers kept were for a pair no longer hers, that this tab
# was reloaded by another tab's sign-out or sign-in (_MARK_WHO), or that answers sent came back, not stored.
_SAY_DRAFT_LOST = (f"() => {{ let gone = null; try {{ gone = sessionStorage.getItem('{_WHO_GONE}');"
                   f" sessionStorage.removeItem('{_WHO_GONE}'); }} catch (e) {{}}"
                   " if (gone === 'out') return" + _either("signed_out_elsewhere") + ";"
                   " if (gone === 'in') return" + _either("signed_in_elsewhere") + ";"
                   " if (window.evalkitDraftBack) { window.evalkitDraftBack = false;"
                   " return" + _either("draft_sent_back") + "; }"
                   " return {__type__: 'update'}; }")


def _forget_draft(by: str) -> str:
    """Browser-only: the answers kept by the rater of the event that stored them (by: the window's record of whose
    Submit or Skip it was, taken when pressed) go; a rater signed in meanwhile keeps hers."""
    return "() => { " + _DRAFTS + f" keepDraft(window.{by}, null); }}"


# Browser-only, when Skip is pressed: whose skip it is, for _forget_draft once it is stored.
_SKIPPING = "() => { window.evalkitSkipBy = window.evalkitWho; }"
# After _RESTORE_DRAFT, for RateHandlers.draft_fate: the kept answers for a pair no longer on screen (else ""), as
# JSON: their pair's digest, whether they were on their way (_SENDING) and a correction's, their values, and the
# language the page is about to switch to (_STORED_LANG).
_SENT_DRAFT = ("() => { const d = window.evalkitDraftGone; window.evalkitDraftGone = null; if (!d) return '';"
               f" let lang = null; try {{ lang = localStorage.getItem('{_LANG_KEY}'); }} catch (e) {{}}"
               " if (lang !== 'en' && lang !== 'zh') lang = (document.querySelector('#lang input:checked') || {}).value;"
               " return JSON.stringify(Object.assign({lang: lang === 'en' ? 'en' : 'zh'}, d)); }")

# Status lines a page load writes without the session's knowing (draft_fate's, and _SAY_DRAFT_LOST's): the
# language switch cannot say them again from the session, so it says again the one on screen by its words, which
# name no side. They had stayed in the language of the load (rater audit 2026-12-05, known limit).
_PAGE_WORDS = ("draft_stored", "draft_lost", "draft_correction_stored", "correction_dropped", "draft_taken",
               "draft_sent_lost", "draft_sent_taken", "draft_sent_back", "draft_sent_queued", "signed_out_elsewhere",
               "signed_in_elsewhere")


def _page_words_in(on_screen, lang: str) -> str | None:
    """The page's own status line `on_screen` said again in `lang`, or None when it is not one of _PAGE_WORDS."""
    if not isinstance(on_screen, str) or not on_screen.strip():
        return None
    for key in _PAGE_WORDS:
        if any(on_screen.strip() == word(key, were, minutes=HOLD_MINUTES).strip() for were in ("zh", "en")):
            return word(key, lang, minutes=HOLD_MINUTES)
    return None


# What sign-out leaves in the browser's store of the sealed code: not empty (Gradio's BrowserState would not write it),
# never a sealed code (Sealer.open gives None, so the next visit shows the sign-in form).
SIGNED_OUT = "signed-out"

# The sign-in form's boxes, in the order sign_in_local takes them; Sign out empties them.
SIGN_IN_BOXES = ("name", "passcode", "code")

# Browser-only, when Sign out is pressed (before the server call): whose sign-out it is, and her answers kept unsent
# go at once (on a shared computer nothing of hers stays in the browser); another rater's records stay theirs.
_SIGNING_OUT = "() => { " + _DRAFTS + " window.evalkitSignOutBy = window.evalkitWho; keepDraft(window.evalkitWho, null); }"
# Browser-only, after sign-out: the stored code's key goes too, and her answers again, should a save that was on its
# way when she pressed Sign out have written them back.
_FORGET_CODE = ("() => { " + _DRAFTS + " keepDraft(window.evalkitSignOutBy, null); window.evalkitWho = '';"
                f" try {{ localStorage.removeItem('{CODE_KEY}'); localStorage.removeItem('{_WHO_KEY}'); }} catch (e) {{}} }}")

# (the block's words only: it can hold Gradio's progress, "0.0s", too)
_FORGET_INVITE_SIGNED_IN = ("() => { const who = document.querySelector('#rate-who .prose');"
                            " if (who && who.innerText.trim()) (" + _FORGET_INVITE + ")(); }")


# Browser-only, the moment Submit is pressed (before the server call): the form locks and Submit shows that it is
# sending, so no answer can change while the submission is on its way (the stored answers come back with the reveal,
# ui.locked_outputs). A refused submission unlocks it again, with Submit's own label back.
# The answers kept unsent are marked as on their way: a reload before the reply cannot tell whether they were stored,
# and used to say they were lost though the rating had been stored (rater audit 2026-12-05, R2; draft_fate asks).
# Each submission gets an id, random, made here (it tells nothing of the pair or its sides), kept with the answers and
# sent to the server before the submission (RateHandlers.sending): a reload asks what became of it (draft_fate).
_SENDING = ("() => { " + _DRAFTS + " const b = document.querySelector('#submit');"
            " window.evalkitSubmitLabel = b ? b.innerText : ''; window.evalkitSentBy = window.evalkitWho;"
            " window.evalkitSending = true;"  # until the submission's answer (_SENT_ANSWERED): _LOAD_READY waits
            " const sub = Array.from(crypto.getRandomValues(new Uint8Array(16)),"
            " (x) => x.toString(16).padStart(2, '0')).join('');"
            " const d = draftOf(window.evalkitSentBy); if (d) keepDraft(window.evalkitSentBy, Object.assign(d, {sent: true, sub}));"
            " const en = (document.querySelector('#lang input:checked') || {}).value === 'en';"
            f" return [...Array({len(FORM_KEYS)}).fill({{__type__: 'update', interactive: false}}),"
            " {__type__: 'update', interactive: false, value: en ? 'Submitting…' : '提交中…'}, sub]; }")
# Page load, before the sign-in: the id of the submission the answers kept were on their way with ('' if none), for
# the sign-in to wait for it while it is still queued (RateHandlers.await_submission).
_KEPT_SUBMISSION = ("() => { " + _DRAFTS + f" let who = null; try {{ who = localStorage.getItem('{_WHO_KEY}'); }} catch (e) {{}}"
                    " const d = draftOf(who); return d && d.sent && typeof d.sub === 'string' ? d.sub : ''; }")
# After a failed submission's reason is on the status line (_say_refusal: window.evalkitRefused). Refused, it is no
# longer on its way (a reload says nothing of a rating not stored) and the form is hers again. With no reason the
# server stopped or restarted under it and it may have been stored: its answers stay marked as on their way, so the
# reload the status line asks for says what became of them (draft_fate), and the form stays locked (Submit pressed
# again met the same silence until a reload)
_UNSENT = ("() => { " + _DRAFTS + " const refused = window.evalkitRefused === true;"
           " const d = draftOf(window.evalkitSentBy);"
           " if (refused && d && d.sent) { delete d.sent; delete d.sub; keepDraft(window.evalkitSentBy, d); }"
           f" return [...Array({len(FORM_KEYS)}).fill({{__type__: 'update', interactive: refused}}),"
           " Object.assign({__type__: 'update', interactive: refused},"
           " window.evalkitSubmitLabel ? {value: window.evalkitSubmitLabel} : {})]; }")

# Browser-only, after a refused event: its reason on the status line too (the message itself comes as a toast that
# goes after a few seconds, and a screen reader hears the status line, role=status, which said only "Error"). The
# toast is written in the same round trip as the failure, so the page waits for it briefly; its text is escaped again
# for the Markdown line (it can quote what a rater typed). On a phone the toast spans the top of the page until
# closed (it hid the sign-in form a mistyped code asked her to correct): there it goes once its words are read, and
# the status line says them (again under Submit when out of sight, keys.py's echo).
_PHONE = "window.matchMedia('(max-width: 640px)').matches"
# Gradio's markup of a refusal's toast, which the page reads and closes: named once, so that the browser test
# (tests/test_rate_browser_ux.py::test_on_a_phone_a_refusal_is_said_without_covering_the_form) checks these very
# selectors against the toast Gradio draws and fails, saying so, when a Gradio release changes them.
TOAST_ERROR = '[data-testid="toast-body"].error'
TOAST_TEXT = '[data-testid="toast-text"]'
TOAST_CLOSE = '.toast-close'
# A refusal's words still on screen from an earlier event (Gradio keeps each about 10 s, all in one popup) are not this
# event's: when the server stopped under a later Submit, the status line repeated that old reason, not that the server
# did not answer. Every press and key of the rater's (each event here starts with one) marks the words shown so far as
# earlier, and _say_refusal reads only words drawn since. A page script: the launch's head, after keys.SCRIPT.
_EARLIER = "data-evalkit-earlier"
EARLIER_POPUPS = (f"<script>(() => {{ const mark = () => document.querySelectorAll('{TOAST_ERROR} {TOAST_TEXT}')"
                  f".forEach((t) => t.setAttribute('{_EARLIER}', ''));"
                  " ['click', 'keydown'].forEach((type) => document.addEventListener(type, mark, true)); })();</script>")


def _say_refusal(no_answer: str, crashed: str | None = None) -> str:
    """The step after a failed event (browser-only): the refusal's reason from its toast, as above (one drawn since
    the rater's last press or key: EARLIER_POPUPS). A failure with no such toast is none of evalkit's refusals (each
    says why): the server stopped or restarted while the event ran (Gradio's "Server stopped unexpectedly", said only
    to the console). The status line said "错误" and nothing more; it now says, in her language, that the server did
    not answer and what a reload tells: the words `no_answer`, fitting the event (no_answer_sent after Submit).
    window.evalkitRefused tells _UNSENT which it was. Gradio's own fixed English words (words.GRADIO_MESSAGES, read
    as Gradio drew them or as keys.py rewrote them) are said in her language: its busy queue refused the event, so
    the form is hers again; the others leave the outcome unknown, as no toast does. So does the server's own word that
    something went wrong on it (alerts.UNEXPECTED, in either language, which quotes its English) where `crashed` is
    given (after Submit, whose failure may come after the write): said as the words `crashed`, not as a refusal, or
    as `crashed`_correction where there are such words and the button sent was Save correction (_SENDING kept its
    label): the line said her "rating" may be stored when what was on its way was her correction. The same for
    `no_answer` (no_answer_sent_correction after Save correction)."""
    words = json.dumps(WORDS[no_answer], ensure_ascii=False)
    words_corrected = json.dumps(WORDS.get(f"{no_answer}_correction"), ensure_ascii=False)
    failed = json.dumps(UNEXPECTED.what if crashed else None)
    failed_said = json.dumps(WORDS[crashed] if crashed else None, ensure_ascii=False)
    corrected = json.dumps(WORDS.get(f"{crashed}_correction") if crashed else None, ensure_ascii=False)
    saving = json.dumps([word("save_correction", lang) for lang in ("zh", "en")], ensure_ascii=False)
    fixed = json.dumps({said: key for gradio, key in GRADIO_MESSAGES.items()
                        for said in (gradio, word(key, "zh"), word(key, "en"))}, ensure_ascii=False)
    said = json.dumps({key: WORDS[key] for key in GRADIO_MESSAGES.values()}, ensure_ascii=False)
    # her language: the one kept in this browser first (a reload's switch shows Chinese until it is put back, and a
    # refused page load never puts it back), else the switch's
    return ("async () => { window.evalkitRefused = false; window.evalkitBusy = false;"
            f" const kept = () => {{ try {{ return localStorage.getItem('{_LANG_KEY}'); }} catch (e) {{ return null; }} }};"
            " const en = () => kept() === 'en' || (kept() !== 'zh'"
            " && (document.querySelector('#lang input:checked') || {}).value === 'en');"
            f" const saved = {saving}.includes(String(window.evalkitSubmitLabel || '').trim());"
            f" const fixed = {fixed}, said = {said}; for (let i = 0; i < 40; i++) {{"
            f" const all = document.querySelectorAll('{TOAST_ERROR} {TOAST_TEXT}:not([{_EARLIER}])');"
            " const last = all.length ? all[all.length - 1].innerText.trim() : '';"
            f" if (last && {_PHONE}) document.querySelectorAll('{TOAST_ERROR} {TOAST_CLOSE}')"
            ".forEach((b) => b.click());"
            " if (fixed[last] === 'gradio_no_answer') break;"
            f" if (last && {failed} && last.includes({failed})) return ({corrected} && saved"
            f" ? {corrected} : {failed_said})[en() ? 'en' : 'zh'];"
            " if (fixed[last]) { window.evalkitRefused = true; window.evalkitBusy = fixed[last] === 'gradio_busy';"
            " return said[fixed[last]][en() ? 'en' : 'zh']; }"
            " if (last) { window.evalkitRefused = true;"
            " return last.replace(/[&<>]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;'})[c])"
            ".replace(/([\\\\`*_\\[\\]()~:#|!])/g, '\\\\$1'); }"
            " await new Promise((r) => setTimeout(r, 50)); }"
            f" return ({words_corrected} && saved ? {words_corrected} : {words})[en() ? 'en' : 'zh']; }}")


def _no_answer_again() -> str:
    """Browser-only, on a language switch: the page's own line that the server did not answer, or Gradio's busy
    refusal in its words (_say_refusal's), said again in the language chosen. Every other line follows the switch
    from the server, but the server may well be down still and the switch get no answer: the line stayed in the old
    language (rater audit 2026-12-06)."""
    said = json.dumps([{lang: word(key, lang) for lang in ("zh", "en")}
                       for key in NO_ANSWER_LINES], ensure_ascii=False)
    return (f"(lang, line) => {{ const t = String(line || '').trim(); const w = {said}"
            ".find((w) => t === w.zh || t === w.en);"
            " return w ? w[lang === 'en' ? 'en' : 'zh'] : {__type__: 'update'}; }")


# Browser-only: the language the page's words are in (the server's last switch that went through; the page's own at
# load). A switch Gradio's busy queue refused (the server shutting down) relabelled nothing: the switch showed the new
# language over the old labels, and the busy line said it in the new one. The page's own labels, prompts and
# guidelines come from the server, so the switch goes back to the language still shown (and the browser keeps that
# one), and the busy line, which says the step was not taken, is said in it; that change of the switch is refused
# the same way while the queue is down, and then leaves all as it is.
_SHOWN_LANG = "(lang) => { window.evalkitShownLang = lang === 'en' ? 'en' : 'zh'; }"

# A language switch and the step that follows an event's answer (RateHandlers.follow_switch) each carry the switch's
# value as the page sent it. Gradio runs events of different concurrency groups in a random order: on a busy machine a
# switch sent after a follow_switch ran first, and the follow_switch, comparing its older value with the session the
# switch had just written, switched the page back (a reload with English kept: Submit said "提交" with English chosen;
# CI, 2026-12-07). One group, one at a time, runs them in the order they came: a follow_switch sees the session as
# every switch sent before it left it, and a switch sent after it runs after it. Both are quick and write nothing to
# the database.
LANGUAGE_QUEUE = {"concurrency_id": "language", "concurrency_limit": 1}

# Browser-only: the arguments a language switch (ui.lang.change) and a follow-up (follow_switch) send. The queue above
# runs them in the order they reach the server, which is not always the order the page sent them in (each is its own
# request): a follow-up sent just before a switch but reaching the server after it switched the page back (a reload
# with English kept: the sign-in button said "登录" with English chosen; browser tests, 2026-12-07, beside a busy
# loop). Each switch counts itself; both steps send the language with the count of switches made when it was chosen,
# read together from one record, and the server (switch_count) ignores either when its count is older than the newest
# switch it applied.
_SWITCH_SENT = ("(s, lang, status) => { const n = ((window.evalkitSwitch || {}).n || 0) + 1;"
                " window.evalkitSwitch = {n, lang: lang === 'en' ? 'en' : 'zh'}; return [s, lang, status, String(n)]; }")
_FOLLOW_SENT = ("(s, lang, status) => { const w = window.evalkitSwitch;"
                " return w ? [s, w.lang, status, String(w.n)] : [s, lang, status, '0']; }")


def switch_count(sent) -> int | None:
    """The page's count of language switches as a step sent it (_SWITCH_SENT, _FOLLOW_SENT); None where none was sent
    (an API client: its switch is taken as the newest, as before the count)."""
    text = str(sent if sent is not None else "").strip()
    return int(text) if text.isdigit() and len(text) < 10 else None


def _switch_refused() -> str:
    """The step after a refused language switch (_say_refusal's): see _SHOWN_LANG."""
    busy = json.dumps(WORDS["gradio_busy"], ensure_ascii=False)
    return ("() => { const keep = {__type__: 'update'}; const shown = window.evalkitShownLang;"
            " const chosen = (document.querySelector('#lang input:checked') || {}).value;"
            " if (!window.evalkitBusy || !shown || chosen === shown) return [keep, keep];"
            f" try {{ localStorage.setItem('{_LANG_KEY}', shown); }} catch (e) {{}}"
            f" return [shown, {busy}[shown]]; }}")


# Browser-only, after an event that went through: the toasts of earlier refusals go (rater audit F5: a skip refused
# for want of a reason, then stored, left "a skip needs a reason" over the next pair for seconds).
_CLEAR_REFUSALS = (f"() => {{ document.querySelectorAll('{TOAST_ERROR} {TOAST_CLOSE}')"
                   ".forEach((b) => b.click()); }")

# Browser-only: Submit is enabled only when every criterion of both outputs and the preference have an answer.
# (The server checks again on submit: this only spares the rater a refused submission.)
_READY = "(...answers) => ({__type__: 'update', interactive: answers.every(Boolean)})"
# The page load's last step (after its sign-in, which may answer late on a busy machine): Submit as the answers allow,
# unless a submission is on its way (_SENDING). It enabled Submit again while one was: nothing was stored twice, but
# the button invited a second press.
_LOAD_READY = "(...answers) => window.evalkitSending ? {__type__: 'update'} : (" + _READY + ")(...answers)"
_SENT_ANSWERED = "() => { window.evalkitSending = false; }"


def settle_quietly(db) -> None:
    """After a counted rating: store the study's decision if a look now settles it (aggregate.decision.settle), which
    stops the queue. The rating is stored whatever happens here; a failure is logged, and the next reader (the
    Results tab, `evalkit aggregate`) stores the decision instead."""
    from ..aggregate.decision import settle

    try:
        settle(db)
    except Exception:  # noqa: BLE001 - never lose or refuse the rating over it
        log.warning("could not check whether a look settles the study; the next reader will", exc_info=True)


def _page(request) -> str | None:
    """The page (Gradio's session) an event came from: what Sign out is final for."""
    return getattr(request, "session_hash", None)


def _not_signed_out(signin: str) -> None:
    """Refuse a sign-in (new_sign_in's id) that Sign out on its page ended while it was on its way."""
    if sign_in_ended(signin):
        raise RatingError("you signed out on this page while this sign-in was on its way, so it signed nothing in",
                          "sign in again at the top of the Rate tab")


def said(key: str = "", **args) -> tuple:
    """A status line as its words' key and arguments (Session.said): said in the rater's language, and said again in
    the other when she switches (the line stayed in the language it was said in)."""
    return (key, tuple(sorted(args.items()))) if key else ()


def say(what: tuple, lang: str) -> str:
    return word(what[0], lang, **dict(what[1])) if what else ""


def submission_id(value) -> str:
    """A submission's id as the page makes it (_SENDING: 32 hex digits), else "" (nothing to record or wait for)."""
    import re

    return value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{32}", value) else ""


def submit_queued(demo, page: str) -> bool:
    """Whether Gradio's queue holds a Submit of this page (its Gradio session), waiting or running. Gradio has no
    public view of its queue, so its bookkeeping is read (tests/test_app_client.py checks the installed Gradio keeps
    it); where it cannot be (another Gradio), nothing is waited for, and the log says so once."""
    events = getattr(getattr(demo, "_queue", None), "event_ids_to_events", None)
    if not isinstance(events, dict):
        _queue_unreadable()
        return False
    if not page:
        return False
    for _ in range(3):
        try:
            return any(getattr(e, "session_hash", None) == page
                       and getattr(getattr(e, "fn", None), "api_name", None) == "submit" for e in list(events.values()))
        except RuntimeError:  # changed while read: the queue runs in the server's event loop
            continue
    return True  # still changing: asked again shortly (the wait is bounded)


def live_session(demo, state, page: str | None):
    """The session Gradio holds for the page `page` now (the gr.State `state`), or None where it cannot be read (no
    page, none kept yet, another Gradio: its state holder is private). An event's session is read when it begins and
    written back when it ends, and a page's events run side by side: this tells one that ran long what another
    wrote meanwhile (tests/test_rate_browser_ux.py::
    test_a_language_switch_that_answers_after_a_submit_never_takes_the_rating_back fails on a Gradio without it)."""
    holder = getattr(demo, "state_holder", None)
    try:
        if not page or holder is None or page not in holder:
            return None
        return holder[page].get(state._id)
    except Exception:  # noqa: BLE001  another Gradio's private layout: as if unread
        return None


def require_gradio_internals(space: bool) -> None:
    """At start-up: refuse (EvalkitError) a Gradio without the private parts the Rate tab reads. Gradio has no public
    way to read the session another event of the page wrote meanwhile (live_session: StateHolder, SessionState.get),
    nor, on a Space, the request of the event a session is checked in (hubcheck.event_request: LocalContext.request;
    the handlers themselves take Gradio's public gr.Request); without them a Submit answering after a language switch
    spoke the old language, and one after My code was taken back, with nothing said anywhere (both read as
    "unknown"), and a Space's session check refused every event."""
    import gradio

    missing = []
    try:
        from gradio.context import LocalContext

        if space and not hasattr(LocalContext, "request"):
            missing.append("gradio.context.LocalContext.request")
    except ImportError:
        missing += ["gradio.context.LocalContext"] if space else []
    try:
        from gradio.state_holder import SessionState, StateHolder

        missing += [f"gradio.state_holder.{c.__name__}.{m}" for c, names in
                    ((StateHolder, ("__contains__", "__getitem__", "set_blocks")), (SessionState, ("get",)))
                    for m in names if not callable(getattr(c, m, None))]
    except ImportError:
        missing.append("gradio.state_holder.StateHolder / SessionState")
    if missing:
        raise EvalkitError(f"Gradio {getattr(gradio, '__version__', '?')} lacks {', '.join(missing)}, which the Rate "
                           "tab reads so that an event answering late never undoes another (a language switch, a "
                           "Submit) on the same page",
                           "install the Gradio of constraints.txt (pip install -c constraints.txt gradio), or adapt "
                           "evalkit.ui.rate.live_session and evalkit.ui.hubcheck.event_request to this Gradio")


@functools.cache
def _queue_unreadable() -> None:
    """Once per process: this Gradio's queue cannot be read (submit_queued), so a reload does not wait for a
    submission still queued."""
    import gradio

    log.warning("Gradio %s keeps no Blocks._queue.event_ids_to_events: a reload does not wait for a submission "
                "still in the queue, and may say it did not reach the server though it is stored a moment later. "
                "Fix: install the Gradio of constraints.txt, or adapt evalkit.ui.rate.submit_queued to this one",
                getattr(gradio, "__version__", "?"))


def oauth_expiry(request) -> float | None:
    """When the Hugging Face sign-in behind this request ends (Gradio keeps the OAuth token's expires_at in the
    signed session cookie); None when it cannot be read."""
    try:
        value = (request.session.get("oauth_info") or {}).get("expires_at") if request is not None else None
    except Exception:  # noqa: BLE001 - no session middleware (a local app): nothing to bound
        return None
    return float(value) if isinstance(value, (int, float)) else None


class RateHandlers:
    """The Rate tab's events. Each returns a dict keyed by the tab's components (only those it changes) and raises
    gr.Error with the library's message and fix (alerts.friendly) when the library refuses; nothing it returns before
    a rating is stored names a path."""

    def __init__(self, ui: RateTab, cfg: Config, db_path: Path, prompts: dict[str, Prompt], space: bool,
                 doorman: auth.Doorman, preparing=None):
        self.ui, self.cfg, self.app, self.rpp = ui, cfg, cfg.app, cfg.app.ratings_per_pair
        self.db_path, self.prompts, self.space, self.doorman, self.preparing = db_path, prompts, space, doorman, preparing
        self.default_prompt = next(iter(prompts.values()), None)
        self.titles = {pid: p.title for pid, p in prompts.items() if p.title}  # the reveal list names prompts so
        self.limiter = RateLimiter(cfg.app.max_submissions_per_minute)  # ratings, corrections and skips, per identity
        self.in_queue = lambda page: False  # whether a page's Submit is in Gradio's queue (build_rate_tab: submit_queued)
        self.live_session = lambda page: None  # the session Gradio holds for a page now (build_rate_tab: live_session)

    # --- screens: what several events show --------------------------------------------------------------------

    def form_update(self, s: Session, prompt: Prompt | None, values: dict | None = None) -> tuple[Session, dict]:
        """The form's values; its labels too when this prompt or language differs from what is on screen."""
        ui = self.ui
        key = labels_key(prompt, s.lang)
        if key != s.labels:
            return s.relabelled(key), relabel(ui, prompt, s.lang, values)
        values = values or {}
        return s, {ui.fields[k]: values.get(k, "" if k == "comment" else None) for k in FORM_KEYS}

    def who_line(self, db, s: Session) -> tuple[str, int]:
        p = progress(db, s.rater, self.rpp, self.app.max_ratings_per_rater)
        role = ""
        if s.organiser:
            role = word("organiser_uncounted" if results_seen(db, s.rater) else "organiser_rating", s.lang)
        skipped = word("progress_skipped", s.lang, n=p.skipped) if p.skipped else ""
        return word("signed_in", s.lang, name=inert(s.rater), role=role, done=p.done, total=p.total,
                    skipped=skipped), p.done

    def in_page_language(self, s: Session, page: str | None) -> Session:
        """`s` in the language the page switched to while this event ran: Gradio writes back the session an event
        began with, so a Submit that answered after a switch said "评分已保存" and drew the reveal and the next pair
        in the language the rater had just left, and kept it. The switch's own session (Gradio's record) says it.
        page: the event's page (_page of the gr.Request its handler was given); None reads nothing."""
        now = self.live_session(page)
        if isinstance(now, Session) and (now.lang, now.labels) != (s.lang, s.labels):
            return replace(s, lang=now.lang, labels=now.labels)
        return s

    def pair_screen(self, db, s: Session, status: tuple = (), page: str | None = None) -> dict:
        """The next pair for this rater, or the 'all done' screen (ui.pair_outputs); status: said(); page: the event's
        (in_page_language)."""
        ui = self.ui
        s = self.in_page_language(s, page)
        view = (None if self.held_back(db, s) or self.client_full(db, s)
                else next_pair(db, s.rater, self.rpp, self.app.max_ratings_per_rater,
                               signed_in=s.signed_in))  # a revoke since its check serves none
        s = replace(s.with_pair(view.pair_id if view else None), said=status)
        who, done = self.who_line(db, s)
        upd = {ui.status: say(status, s.lang), ui.who: who, ui.reveal_md: "",
               ui.correct_btn: update(visible=False), ui.next_btn: update(visible=False), ui.skip_reason: "",
               ui.text_a: view.text_a if view else "", ui.text_b: view.text_b if view else ""}
        if view is None:  # what is left out stays as it is (gr.skip), hidden with the pair box
            done_md, later = self.done_markdown(db, s)
            return upd | {ui.session: replace(s, finished=True), ui.pair_box: update(visible=False),
                          ui.again_btn: update(visible=later), ui.done_md: done_md}
        prompt = self.shown_prompt(view)
        s, form = self.form_update(s, prompt)
        return upd | form | {
            ui.session: s, ui.pair_box: update(visible=True), ui.done_md: "",
            ui.prompt_md: prompt_markdown(prompt, view.prompt_id, s.lang),
            # the guidelines are open on a rater's first pair, folded away after it
            ui.guide_box: update(open=done == 0), ui.guide: guidelines(prompt, s.lang),
            ui.submit_btn: update(value=word("submit", s.lang), interactive=False, visible=True),
            # folded on every new pair (rater audit F16: left open after a skip, it invited the next one)
            ui.skip_box: update(visible=True, open=False), ui.again_btn: update(visible=False),
        }

    def shown_prompt(self, view) -> Prompt | None:
        """The prompt as a pair shows it: the file's title, with the material and task its outputs answered and the
        questions its raters are asked as stored with them (a file edited since the pool was built would set other
        material beside them and the raters would judge the outputs against what the model never saw, Space audit
        F13; a question reworded mid-study would have later raters judge by another criterion, sceptic audit)."""
        prompt = self.prompts.get(view.prompt_id)
        if view.material is None or view.task is None:
            return prompt
        if prompt is None:  # the file is gone: the stored request, under the criteria's own titles
            return Prompt(id=view.prompt_id, material=view.material, task=view.task, max_new_tokens=0,
                          criteria=view.criteria or {})
        return replace(prompt, material=view.material, task=view.task, criteria=view.criteria or prompt.criteria)

    def held_back(self, db, s: Session) -> str | None:
        """Why the queue serves this rater no more pairs of the study though some are open (the words' key), or None.
        A rater shown the study's results gets none of the pairs a later pool adds (queue.note_results_shown); one
        whose answers on gold pairs put her clearly below the gate's min_gold_accuracy gets none either
        (study.gold.clearly_below). Organisers are served as before (their ratings are theirs to spend)."""
        if s.organiser:
            return None
        if results_seen(db, s.rater):
            return "results_shown_done"
        from ..study.gold import clearly_below

        return "gold_stopped" if clearly_below(db, s.rater) else None

    def client_full(self, db, s: Session) -> tuple[int, float] | None:
        """(pairs held, seconds until the first is let go) when the other sign-up names of this session's client
        (Session.client: a name made by open sign-up) hold app.pairs_held_per_client pairs on screen and she holds
        none: one person's many names would each hold a pair from the other raters. None: a pair may be served."""
        limit = self.app.pairs_held_per_client
        if not limit or not s.client:
            return None
        others = [n for n in self.doorman.names_of(db, s.client) if n != s.rater]
        if not others or hold_ends(db, [s.rater]):  # her own pair on screen resumes
            return None
        ends = hold_ends(db, others)
        return (len(ends), ends[len(ends) - limit]) if len(ends) >= limit else None

    def done_words(self, db, s: Session) -> tuple[str, bool]:
        """What the screen without a pair says, and whether to offer "Check again": pairs still open to this rater
        that are all on other raters' screens (held) come back to the queue later, so she is not done."""
        share = self.app.max_ratings_per_rater
        if study_decided(db):
            return word("study_decided", s.lang), False
        if share_reached(db, s.rater, share):
            return word("share_done", s.lang, share=share), False
        if held := self.held_back(db, s):
            return word(held, s.lang), False
        if full := self.client_full(db, s):
            return word("client_holds", s.lang, held=full[0], limit=self.app.pairs_held_per_client,
                        minutes=max(1, math.ceil(full[1] / 60))), True
        if all_identical(db):
            return word("all_identical", s.lang), False
        p = progress(db, s.rater, self.rpp, share)
        if p.total > p.done:
            return word("held_by_others", s.lang, left=p.total - p.done, minutes=HOLD_MINUTES), True
        # pairs open to others, not to her (neither done nor open in p): results she was shown told their sides
        if kept_by_results_view(db, s.rater, self.rpp):
            return word("results_viewed_none", s.lang), False
        # a rater who rated nothing is not "done" (rater audit F13: invited after the last pair closed, she was thanked)
        return word("done" if p.done else "none_for_you", s.lang), False

    def saved(self) -> dict[str, int] | None:
        """How far the sync's last push reached, where a crash loses what was stored since (a Space's own disk): a
        reveal waits for its pair's closing to be pushed (rating.queue.saved_closing). None: nothing to wait for."""
        from ..publish.sync import losable

        sync = losable(self.db_path)
        return None if sync is None else dict(sync.pushed or {})

    def push_soon(self) -> None:
        """A rating stored (maybe closing its pair): where a crash can lose it, the sync pushes it soon, so the
        reveals waiting for it (saved) wait seconds, not an interval."""
        from ..publish.sync import losable

        if (sync := losable(self.db_path)) is not None:
            sync.push_soon()

    def done_markdown(self, db, s: Session) -> tuple[str, bool]:
        """The screen without a pair: what it means (done_words), then the rater's list of reveals; and whether to
        offer "Check again" (pairs held by others, or reveals still to come: the list fills in as pairs close)."""
        items = rated_pairs(db, s.rater, self.rpp, self.cfg.bench.length_tolerance, saved=self.saved())
        words, later = self.done_words(db, s)
        waiting = sum(isinstance(i.reveal, Pending) for i in items)
        if waiting and not later:  # all closed, their closings still to be pushed (saved): other words, same button
            unsaved = all(i.reveal.unsaved for i in items if isinstance(i.reveal, Pending))
            words += "\n\n" + word("reveals_unsaved" if unsaved else "reveals_waiting", s.lang, waiting=waiting)
        reveals = render_list(items, s.lang, self.titles)
        return words + ("\n\n" + reveals if reveals else ""), later or waiting > 0

    def reveal_markdown(self, db, s: Session) -> str:
        """This pair's reveal (or that it is pending), and the rater's list of reveals."""
        tolerance = self.cfg.bench.length_tolerance
        counted = s.rating_id is None or rating_counts(db, s.rater, s.pair_id)  # as the status line above says
        saved = self.saved()
        this = render(rater_reveal(db, s.rater, s.pair_id, self.rpp, tolerance, saved=saved), s.lang, counted)
        others = [p for p in rated_pairs(db, s.rater, self.rpp, tolerance, saved=saved) if p.reveal.pair_id != s.pair_id]
        return this + ("\n\n" + render_list(others, s.lang, self.titles) if others else "")

    def locked_screen(self, db, s: Session, status: tuple, row: dict | None, page: str | None = None) -> dict:
        """A stored submission (ui.locked_outputs), its form showing the stored answers (row: the rating as stored);
        the browser locked the form when Submit was pressed. status: said()."""
        ui = self.ui
        stored = _stored_form(row)
        s = replace(self.in_page_language(s, page), said=status)
        return {ui.fields[k]: stored.get(k, "" if k == "comment" else None) for k in FORM_KEYS} | {
            ui.session: s, ui.status: say(status, s.lang), ui.who: self.who_line(db, s)[0],
            ui.reveal_md: self.reveal_markdown(db, s),
            ui.submit_btn: update(visible=False, interactive=False), ui.correct_btn: update(visible=True),
            ui.next_btn: update(visible=True), ui.skip_box: update(visible=False)}

    def signed_in_screen(self, s: Session, signin: str, identity, code: str, status: tuple = (),
                         expires_at: float | None = None, hub_token: str = "", client: str = "",
                         until: float | None = None, page: str | None = None, arrived: float | None = None) -> dict:
        """The first screen of a signed-in session; the browser keeps the code sealed (evalkit.rating.seal), never
        as is. signin: new_sign_in(page), taken when the event began; the page signed out since (the sign-in was on
        its way, behind a busy queue or held back raw) refuses it here, and any later event refuses its session.
        until: a page load's end of waits (session.submissions.load_end), for its sign-in. arrived: when the sign-in's
        request reached the server (guard.arrived_at), kept with its page: a later Sign out of the page ends it."""
        ui = self.ui
        # a reload while her rating was written: the pair served follows its fate
        writing.settled(identity.name, until)
        _not_signed_out(signin)
        s = s.page_only(rater=identity.name, organiser=identity.organiser, rater_id=identity.rater_id,
                        credential=identity.credential, expires_at=expires_at, hub_token=hub_token, code=code,
                        signin=signin, hub=identity.source == "space",
                        signed_on=(page, arrived) if page and arrived is not None else None,
                        client=self.doorman.signed_in_from(client, identity))
        with connect(self.db_path) as db:
            return self.pair_screen(db, s, status, page) | {ui.signin_box: update(visible=False),
                                                      ui.browser_code: self.doorman.seal(code),
                                                      ui.signout_btn: update(visible=not self.space),
                                                      ui.code_btn: update(visible=not self.space and bool(code)),
                                                      ui.draft_owner: draft_owner(identity.name)}

    def ready(self) -> bool:
        return self.preparing is None or self.preparing.ready

    # --- events ----------------------------------------------------------------------------------------------

    @friendly
    def sign_in_local(self, s: Session, name: str, passcode: str, code: str, request: gr.Request | None) -> dict:
        # before any work: a sign-out from here on ends it, and one that arrived after this was sent ended it already
        # (queued behind a busy app; refused before a new name is made whose code nobody would see)
        signin = new_sign_in(_page(request), arrived_at(request))
        _not_signed_out(signin)
        if self.preparing is not None:
            self.preparing.check()
        client = auth.client_key(request, self.space, self.app.trusted_proxy_hops)
        identity, new_code = self.doorman.local(name, code, passcode, client)
        status = said() if new_code is None else said("welcome", name=inert(identity.name), code=new_code)
        # My code: the code, not a link
        return self.signed_in_screen(s, signin, identity, new_code or code_from(code), status, client=client,
                                     page=_page(request), arrived=arrived_at(request))

    @friendly
    def resume_local(self, s: Session, stored: str, request: gr.Request | None) -> dict:
        """Page load: an invitation link (?invite=CODE), else the code this browser kept, signs in at once."""
        ui = self.ui
        # This answer can come after a sign-in the rater typed meanwhile (a busy queue, a slow page): it then
        # changes nothing. Signed in: the session (read when this runs) says so, and the code kept for a reload
        # stays. Refused: an empty status line would wipe out the reason (found by .ci/run). So nothing to sign in
        # with writes no status, and forgets a kept code only when there was one.
        unchanged = {ui.status: update()}  # Gradio refuses an empty dict: one update that sets nothing
        # Signed out on this page before this answer: it was sent with the code the browser kept then, and would sign
        # her back in (on a shared computer, the next person would rate under her name). A sign-out is final here.
        if s.rater is not None or s.signed_out or not self.ready():  # not ready: the panel's poll signs in later
            return unchanged
        invite = (request.query_params.get("invite") or "") if request is not None else ""
        if not invite and not stored:  # nothing to sign in with (most page loads): nothing to list
            return unchanged
        signin = new_sign_in(_page(request), arrived_at(request))  # and a sign-out while this runs ends it
        client = auth.client_key(request, self.space, self.app.trusted_proxy_hops)
        if invite:  # a typed code, in a link: it passes the sign-in guard
            try:
                identity, _ = self.doorman.local("", invite, "", client)
            except EvalkitError as e:  # held back by the sign-in guard's wait: say so, not "invalid"
                wait = getattr(e, "wait", None)
                return {ui.browser_code: "", ui.status: word("invite_invalid", s.lang) if wait is None else
                        word("invite_wait", s.lang, seconds=max(1, round(wait)))}
            return self.signed_in_screen(s, signin, identity, invite, client=client,
                                         until=submissions.load_end(_page(request)), page=_page(request),
                                         arrived=arrived_at(request))
        resumed = self.doorman.resume(stored, client)  # the sealed code this browser kept, if any
        if resumed is None:  # a kept code that no longer opens (revoked, another app's) is forgotten
            return {ui.browser_code: ""} if stored else unchanged
        if sign_in_ended(signin):  # signed out while this ran: final here too, quietly
            return unchanged
        return self.signed_in_screen(s, signin, *resumed, client=client, until=submissions.load_end(_page(request)),
                                     page=_page(request), arrived=arrived_at(request))

    @friendly
    def sign_in_space(self, s: Session, profile: gr.OAuthProfile | None, request: gr.Request | None = None) -> dict:
        if profile is None:  # page load before signing in: just show the button
            return {self.ui.status: "Sign in with your Hugging Face account to start rating. · 请用 Hugging Face 账号登录。"}
        if not self.ready():
            return {self.ui.status: "The pairs are being prepared; the Rate tab opens by itself when they are ready. · "
                                    "评分数据准备中，完成后评分页会自动打开。"}
        signin = new_sign_in()  # a Space has no Sign out (its sign-in is the Hub's): nothing to list under the page
        identity, token = self.doorman.space_identity(profile), hubcheck.oauth_token(request)
        hubcheck.signed_in(self.app, identity.name, token)  # the profile read is the first answer (ui.hubcheck)
        return self.signed_in_screen(s, signin, identity, "", expires_at=oauth_expiry(request), hub_token=token,
                                     until=submissions.load_end(_page(request)), page=_page(request))

    def sign_out(self, s: Session, request: gr.Request | None = None) -> dict:
        ui = self.ui
        # an event still running returns this sign-in's session, and a sign-in begun on this page before now may
        # answer after this: both are refused from now on
        end_sign_in(s, _page(request), arrived_at(request))
        # Gradio's BrowserState writes only a non-empty value, so "" would leave the sealed code in the browser and
        # the next visit would sign the same rater in again: a marker that never opens as a code overwrites it (and
        # the browser removes the key, _FORGET_CODE)
        return {ui.session: s.page_only(said=said("signed_out"), signed_out=True),
                ui.browser_code: SIGNED_OUT,
                ui.signin_box: update(visible=True), ui.signout_btn: update(visible=False),
                ui.code_btn: update(visible=False),
                ui.pair_box: update(visible=False), ui.who: "", ui.done_md: "", ui.again_btn: update(visible=False),
                ui.status: word("signed_out", s.lang), ui.draft_owner: "",
                # what she typed to sign in goes too: her personal code stayed in its box for the next person at a
                # shared computer to sign in with, her name in its box (rater audit, 2026-12-06)
                **{ui.signin[box]: "" for box in SIGN_IN_BOXES}}

    @friendly
    def show_code(self, s: Session, request: gr.Request | None = None) -> dict:
        """The personal code again on the status line ("My code"): the welcome that showed it is soon gone, and without
        it a rater cannot go on from another device (with open sign-up her name is then taken)."""
        with connect(self.db_path) as db:
            require_rater(db, s, self.app)  # still hers: a revoked or re-issued code is not shown
        if not s.code:
            raise RatingError("this session did not sign in with a personal code", "sign in with your code")
        status = said("your_code", code=s.code)
        # Gradio writes back the session this began with: a Submit stored meanwhile would be taken back (Next pair
        # refused, "not rated yet"), so the line goes on the session the page holds now, where it is this sign-in's
        now = self.live_session(_page(request))  # Gradio's request, passed as its API offers
        s = now if isinstance(now, Session) and now.signin == s.signin and now.rater == s.rater else s
        return {self.ui.session: replace(s, said=status), self.ui.status: say(status, s.lang)}

    @friendly
    def switch_language(self, s: Session, lang: str, on_screen=None, sent=None,
                        request: gr.Request | None = None) -> dict:
        """Every label in the chosen language; the answers on screen stay as they are: the form's fields get labels
        only, never values, so an answer given while the switch is on its way is kept (and a client's form is never
        sent back to it). The status line is said again in the new language only while it still says what the
        session said (on_screen: the line as the page shows it; None: not sent).
        Another event of the page that wrote its session while this ran (a Submit) is not undone: Gradio writes back
        the session this began with, in which the pair was not rated yet, and Next pair was refused ("not rated
        yet") though the rating was stored. The switch is then made again from the session that event wrote, and
        says its status line again (the page shows it).
        A switch the page made before the newest this session applied (sent: the page's count, _SWITCH_SENT) that
        reached the server after it changes nothing."""
        count = switch_count(sent)
        if isinstance(s, Session) and count is not None and count < s.switches:
            return {self.ui.status: update()}
        for _ in range(3):  # each round a few reads: another event landing in each is far-fetched
            counted = replace(s, switches=max(s.switches, count)) if count is not None and isinstance(s, Session) else s
            out = self.switched(counted, lang, on_screen)
            now = self.live_session(_page(request))
            if now is None or now == s:
                return out
            s, on_screen = now, None
        return out

    @friendly
    def follow_switch(self, s: Session, lang: str, on_screen=None, sent=None,
                      request: gr.Request | None = None) -> dict:
        """After an event that relabels the page (a sign-in, Next pair, Check again, Submit, Correct, Skip): its answer
        was made in the language its session said when it ran, and a switch that answered before it was undone: the
        labels went back to the old language (Submit said "提交" with English chosen), the session too, and the switch
        and the browser's kept choice stayed on hers. Her switch is the latest word: where the session's language (what
        the page was last labelled in) is not the switch's (lang, read as this runs), the page is switched again to the
        switch's. Nothing otherwise, nor where the page made a switch after the language this sent (sent: the page's
        count of switches when it was chosen, _FOLLOW_SENT) that reached the server first: that switch is the latest."""
        if not isinstance(s, Session) or s.lang == page_lang(lang):
            return {self.ui.status: update()}  # Gradio refuses an empty dict: one update that sets nothing
        return self.switch_language(s, lang, on_screen, sent, request)  # which ignores an older count

    def switched(self, s: Session, lang: str, on_screen=None) -> dict:
        """switch_language's screen, from the session `s`."""
        ui = self.ui
        lang = page_lang(lang)
        # A refusal (or the page's own words) written over the line since is not the session's to replace: a skip
        # refused for want of a reason, then the switch, said "Skipped; the reason is stored." over the pair she had
        # not skipped (rater audit 2026-12-05, R5)
        s = s if on_screen is None or str(on_screen).strip() == say(s.said, s.lang).strip() else replace(s, said=())
        with connect(self.db_path) as db:
            prompt_id = pair_prompt(db, s.pair_id)
            prompt = self.shown_prompt(pair_view(db, s.pair_id)) if prompt_id else self.default_prompt
            s = s.relabelled(labels_key(prompt, lang), lang)
            who = ""  # progress, and what an organiser's ratings count for: for a session still signed in only
            shown = {}  # the reveal on screen, or the screen without a pair, again in the new language
            if s.rater:
                try:
                    require_rater(db, s, self.app)
                    who = self.who_line(db, s)[0]
                    if s.pair_id is not None and s.rating_id is not None:
                        shown[ui.reveal_md] = self.reveal_markdown(db, s)
                    elif s.finished:
                        shown[ui.done_md] = self.done_markdown(db, s)[0]
                    if s.said:  # the status line, said again in this language
                        shown[ui.status] = say(s.said, lang)
                except EvalkitError:  # a revoked or re-issued code: the labels change, nothing more is shown
                    pass
        submit_label = "save_correction" if s.correcting else "submit"
        out = words_update(ui, prompt, lang, submit_label) | relabel(ui, prompt, lang, keep_values=True)
        out[ui.who] = who
        if s.said and not s.rater:  # signed out: that is all the line says
            out[ui.status] = say(s.said, lang)
        out |= shown
        if ui.status not in out and (again := _page_words_in(on_screen, lang)):
            out[ui.status] = again
        if prompt_id:
            out[ui.prompt_md] = prompt_markdown(prompt, prompt_id, lang)
        return out | {ui.session: s}

    @friendly
    def next_screen(self, s: Session, request: gr.Request | None = None) -> dict:
        with connect(self.db_path) as db:
            require_rater(db, s, self.app)
            if s.pair_id is not None and s.rating_id is None:
                raise RatingError("this pair is not rated yet", "submit it, or skip it with a reason")
            # a correction opened and left unsaved: the stored rating stands, and the rater is told so
            return self.pair_screen(db, s, said("correction_dropped") if s.correcting else said(), _page(request))

    def sending(self, s: Session, sub: str, request: gr.Request | None = None) -> dict:
        """Submit pressed: the id the page made for this submission (_SENDING) is recorded as received, with the rater
        and the page (a reload asks the queue for that page's Submit), and kept in the session for submit to record
        what became of it. Quiet: no id (a page of before), or no one signed in, records nothing."""
        sub = submission_id(sub) if s is not None and s.rater else ""
        if sub:
            submissions.received(s.rater, sub, _page(request))
        return {self.ui.session: replace(s, submission=sub)} if s is not None else {self.ui.session: update()}

    def await_submission(self, sub: str, request: gr.Request | None = None) -> None:
        """Page load, before the sign-in: while the submission the kept answers were on their way with (its id:
        _KEPT_SUBMISSION) is still in Gradio's queue or being written, wait for it (at most
        _Submissions.WAIT_SECONDS for the whole load: load_end), so the pair the sign-in serves, and what the page
        says, follow its fate."""
        if sub := submission_id(sub):
            submissions.settled(sub, self.in_queue, until=submissions.load_end(_page(request)))

    def noted(self, s: Session, fate: tuple) -> None:
        """What became of the submission this session sent (its id: sending), for a reload to say: a refusal in the
        words a rater may read (the library's can name the pair, whose id stays on the server)."""
        if s is not None and s.submission:
            submissions.record(s.rater, s.submission, tuple(without_pair_id(w) for w in fate))

    def refusal_kept(self, db, s: Session, rater: str, e: EvalkitError) -> None:
        """A submission refused once past the rate limit is kept in the database too, so a reload after a restart says
        it was refused and why, not that it never reached the server. Only past the limit: a flood of refusals (new
        ids, no pair on screen) would otherwise take the write lock once each."""
        if not s.submission or isinstance(e, SignInError):  # revoked meanwhile: nothing of hers is stored after it
            return
        try:
            note_refused(db, rater, s.submission, e.what, e.fix, signed_in=s.signed_in)
        except SignInError:  # revoked since the session's check: nothing of hers recorded, and she is told why
            raise
        except (sqlite3.Error, EvalkitError) as err:  # the refusal itself is still said; only a restart forgets it
            log.warning("could not record the refusal of a submission: %s", err)

    @friendly
    def submit(self, s: Session, *values, page: str | None = None) -> dict:
        """Submit (or a correction's save); page: the event's (in_page_language)."""
        s = self.unspent(s)
        try:
            return self.store_submission(s, *values, page=page)
        except EvalkitError as e:
            self.noted(s, ("refused", e.what, e.fix))
            raise

    def unspent(self, s: Session) -> Session:
        """The session, without its submission id when that submission was refused: a refusal leaves the page's
        session as it was, id and all, so a raw /submit after it, with no fresh id, stored the new rating under the
        refused one's id, and a reload then said "refused" of a stored rating (or, after a restart, "stored" of a
        refused one). It is stored as one without an id is: one id never names two outcomes. (An id that stored a
        rating, sent again, is refused as a replay: submit_rating.)"""
        if s is None or not s.submission:
            return s
        if not submissions.refused(s.rater, s.submission):
            with connect(self.db_path) as db:  # a restart forgot the record; the database keeps a refusal
                if refused_submission(db, s.rater, s.submission) is None:
                    return s
        return replace(s, submission="")

    def store_submission(self, s: Session, *values, page: str | None = None) -> dict:
        with writing.of(s and s.rater), connect(self.db_path) as db:
            rater = require_rater(db, s, self.app)
            if s.pair_id is None:
                raise RatingError("there is no pair on screen", "press Next pair, or reload the page")
            if s.locked:
                raise RatingError("this rating is already stored and locked", "use Correct to change it")
            form = dict(zip(FORM_KEYS, values, strict=True))
            self.limiter.check(f"rater:{rater}")
            try:
                return self.store_checked(db, s, rater, form, page)
            except EvalkitError as e:
                self.refusal_kept(db, s, rater, e)
                raise

    def store_checked(self, db, s: Session, rater: str, form: dict, page: str | None = None) -> dict:
        """store_submission past its checks and the rate limit: the rating (or correction) stored, and its screen."""
        inp = RatingInput(
            pair_id=s.pair_id, rater=rater,
            a={c: form[f"a_{c}"] for c in CRITERIA}, b={c: form[f"b_{c}"] for c in CRITERIA},
            preference=form["preference"] or "", comment=form["comment"] or "", client_token=s.token,
            submission=s.submission or None,  # stored with the row: a reload after a restart still finds it
            signed_in=s.signed_in,  # a revoke since require_rater stores nothing (under the lock)
        )
        if s.correcting:  # once the pair is closed its reveal can be seen: kept, but the blind rating counts
            revealed = is_closed(db, s.pair_id, self.rpp)
            rating_id = correct_rating(db, self.app, s.rating_id, inp, after_reveal=revealed)
            note = "correction_stored" if revealed else "correction_counts"
            if not revealed:  # a counted correction of a gold pair can move the gold check's exclusions
                settle_quietly(db)
        else:
            try:
                refuse_met_text(db, rater, s.pair_id)
                rating_id = submit_rating(db, self.app, inp)
                self.push_soon()
            except (PairTaken, AlreadyRated) as e:
                self.noted(s, ("refused", e.what, e.fix))
                self.refusal_kept(db, s, rater, e)
                why = ("study_decided_pair" if isinstance(e, StudyClosed) else "text_met" if isinstance(e, TextMet)
                       else "hold_displaced" if isinstance(e, HoldDisplaced)
                       else "pair_taken" if isinstance(e, PairTaken) else "skipped_elsewhere")
                return self.refused_screen(db, s, rater, why, form, page)
            note = "stored"
            settle_quietly(db)
        if note != "correction_stored" and not is_counted(db, rating_id):  # an organiser who has seen the results
            note = "stored_uncounted"
        self.noted(s, ("stored",))
        return self.locked_screen(db, s.stored(rating_id), said(note), current_rating(db, rater, s.pair_id), page)

    def refused_screen(self, db, s: Session, rater: str, why: str, form: dict, page: str | None = None) -> dict:
        """A submission refused for a reason the rater can act on with a button on screen (ui.locked_outputs): the pair
        was filled by others while she worked (or served to a rater whose hold counts while hers did not), or its study reached its decision meanwhile (Next pair: her answers stay
        on screen, not stored), or she rated or skipped it in another tab (the answers stored there, Correct, which opens them, and Next pair)."""
        ui = self.ui
        s = self.in_page_language(s, page)
        row = current_rating(db, rater, s.pair_id)  # filled by her own rating, from another tab: she may correct it
        if row is not None:
            return self.locked_screen(db, s.stored(row["id"]), said("rated_elsewhere"), row, page)
        sent = {ui.fields[k]: form.get(k) or ("" if k == "comment" else None) for k in FORM_KEYS}
        status = said(why, hours=CAP_LAPSE_HOURS) if why == "hold_displaced" else said(why)
        return sent | {
            ui.session: replace(s.with_pair(None), said=status), ui.status: say(status, s.lang),
            ui.who: self.who_line(db, s)[0], ui.reveal_md: "",
            ui.submit_btn: update(visible=False, interactive=False), ui.correct_btn: update(visible=False),
            ui.next_btn: update(visible=True), ui.skip_box: update(visible=False)}

    @friendly
    def start_correction(self, s: Session, request: gr.Request | None = None) -> dict:
        ui = self.ui
        with connect(self.db_path) as db:
            rater = require_rater(db, s, self.app)
            if s.rating_id is None:
                raise RatingError("there is no stored rating to correct on screen", "submit the pair first")
            row = current_rating(db, rater, s.pair_id)
            revealed = is_closed(db, s.pair_id, self.rpp)
            uncounted = results_seen(db, rater)
        if row is None:
            raise RatingError("your rating of this pair was not found", "reload the page")
        status = said("correcting" if revealed else "correcting_uncounted" if uncounted else "correcting_blind")
        s = replace(self.in_page_language(s.stored(row["id"]).correcting_now(), _page(request)), said=status)
        # the stored answers (the browser unlocks the form when this succeeds)
        stored = _stored_form(row)  # the pair stays on screen, and so do its labels
        return {ui.fields[k]: stored.get(k) for k in FORM_KEYS} | {
            ui.session: s, ui.status: say(status, s.lang),
            ui.submit_btn: update(value=word("save_correction", s.lang), visible=True, interactive=True),
            ui.correct_btn: update(visible=False)}  # Next pair leaves the stored version as it is

    def draft_fate(self, s: Session, sent: str, request: gr.Request | None = None) -> dict:
        """Page load: the answers this browser kept were for a pair no longer on screen (sent: _SENT_DRAFT's JSON;
        "lang:digest" from a page of before, for answers on their way). The status line says what became of them, in
        words that fit (rater audit F11, R1, R2): a rating on its way stored; a correction stored, or not (the stored
        rating stands); the pair completed by other raters meanwhile (or the study decided); else not kept, the hold
        run out. Only her own pairs are looked at (those shown to her, by the digest of their texts), and nothing is
        said of their sides. Quiet otherwise; the session is left alone (she may be at work on the new pair)."""
        import json

        quiet = {self.ui.status: update()}
        if not isinstance(sent, str) or not sent or s is None or not s.rater:
            return quiet
        try:
            draft = json.loads(sent) if sent.startswith("{") else None
        except ValueError:
            return quiet
        if draft is None:
            lang, _, digest = sent.partition(":")
            draft = {"lang": lang, "pair": digest, "sent": True}
        if not isinstance(draft, dict) or not isinstance(draft.get("pair"), str) or not draft["pair"]:
            return quiet
        lang = page_lang(draft.get("lang"))
        values = draft.get("values") if isinstance(draft.get("values"), list) else []
        try:
            with connect(self.db_path) as db:
                rater = require_rater(db, s, self.app)
                view = next((v for v in latest_shown(db, rater) if texts_digest(v.text_a, v.text_b) == draft["pair"]),
                            None)
                row = current_rating(db, rater, view.pair_id) if view else None
                taken = view is not None and row is None and (is_closed(db, view.pair_id, self.rpp) or study_decided(db))
                landed = stored_submission(db, rater, submission_id(draft.get("sub")))
                refused = refused_submission(db, rater, submission_id(draft.get("sub")))  # kept across a restart
        except EvalkitError:
            return quiet
        if landed is not None:  # the database says it was stored (a restart forgets nothing of it): exact, not
            # inferred from the pair (a correction's cleaned comment differs from what the page kept)
            key = "draft_correction_stored" if landed["supersedes"] is not None else "draft_stored"
            return {self.ui.status: word(key, lang)}
        # what is left of the load's wait only: its first step waited for this submission already (load_end)
        fate = submissions.settled(submission_id(draft.get("sub")), self.in_queue, rater,
                                   submissions.load_end(_page(request))) if row is None else None
        fate = refused if fate is None and row is None and refused else fate
        if fate is not None and fate[0] == "refused":  # it reached the server: why it was not stored
            why = fate[1] if lang == "en" else (error_zh(fate[1], fate[2]) or (fate[1],))[0]
            return {self.ui.status: word("draft_sent_refused", lang, why=why.rstrip("。."))}
        if fate == ("queued",):
            key = "draft_sent_queued"
        elif row is None and draft.get("back"):  # the pair is back on screen with her answers: not received
            key = "draft_sent_back"
        elif row is not None and draft.get("correcting"):
            kept = dict(zip(FORM_KEYS, values))
            landed = len(values) >= len(FORM_KEYS) and all(row[k] == kept[k] for k in REQUIRED_KEYS) and (
                (row["comment"] or "").strip() == str(kept["comment"] or "").strip())
            key = "draft_correction_stored" if draft.get("sent") and landed else "correction_dropped"
        elif row is not None:
            key = "draft_stored" if draft.get("sent") else ""  # rated in another tab: that tab said so
        elif draft.get("sent"):  # Submit was pressed: "without submitting" would not be true of it
            key = "draft_sent_taken" if taken else "draft_sent_lost"
        else:
            key = "draft_taken" if taken else "draft_lost"
        return {self.ui.status: word(key, lang, minutes=HOLD_MINUTES)} if key else quiet

    def still_here(self, s: Session) -> None:
        """The page's sign of life while the rater works on a pair (keys.py: after her own input, at most every few
        minutes): her hold on it is renewed, so a pair she takes longer than HOLD_MINUTES over does not go to
        another rater meanwhile. Quiet: it changes nothing on the page, and a refusal (signed out, revoked) is for
        her next real action to say."""
        if s is None or s.rater is None or s.pair_id is None or s.rating_id is not None:
            return
        try:
            with connect(self.db_path) as db:
                require_rater(db, s, self.app)
                keep_hold(db, s.rater, s.pair_id, signed_in=s.signed_in)  # a revoke since: not renewed
        except EvalkitError:
            return

    @friendly
    def skip(self, s: Session, reason: str, request: gr.Request | None = None) -> dict:
        with writing.of(s and s.rater), connect(self.db_path) as db:
            rater = require_rater(db, s, self.app)
            if s.pair_id is None or s.rating_id is not None:
                raise RatingError("there is no unrated pair on screen to skip", "press Next pair")
            self.limiter.check(f"rater:{rater}")
            try:
                skip_pair(db, self.app, rater, s.pair_id, reason, client_token=s.token,
                          signed_in=s.signed_in)
            except StudyClosed:  # decided while the pair was on her screen: nothing stored, nothing left to rate
                return self.pair_screen(db, s, said("study_decided_skip"), _page(request))
            except PairTaken:  # others filled it while it was on her screen: nothing stored, the next pair
                return self.pair_screen(db, s, said("pair_taken_skip"), _page(request))
            try:
                return self.pair_screen(db, s, said("skipped"), _page(request))
            except SignInError:  # revoked between the skip's write and the next pair's: the skip stands, said so
                raise SignInError("your skip was stored, and then your personal code was revoked or replaced, so this "
                                  "session has ended", "ask the study organiser for a new code, or sign in with the "
                                  "new one") from None

    def poll(self, s: Session, stored: str, request: gr.Request | None, prep_html, timer, tabs=None,
             profile: gr.OAuthProfile | None = None) -> dict:
        """The preparation panel, every second until the pool is ready; then the Rate tab opens by itself (and
        signs in: locally with the code this browser kept, or the invitation link; on a Space with the Hugging Face
        sign-in, whose page-load sign-in had only said the pairs were being prepared)."""
        import gradio as gr

        snap = self.preparing.snapshot()
        if snap.error or not self.preparing.ready:
            return {prep_html: panel(snap)} | ({timer: update(active=False)} if snap.error else {})
        opened = {prep_html: update(visible=False), timer: update(active=False),
                  self.ui.signin_box: update(visible=True)} | ({tabs: update(selected="rate")} if tabs else {})
        try:
            return opened | (self.sign_in_space(s, profile, request) if self.space
                             else self.resume_local(s, stored, request))
        except gr.Error as e:  # refused (not on the allow-list): said where the stale "being prepared" stood
            return opened | {self.ui.status: e.message}


def build_rate_tab(demo: gr.Blocks, cfg: Config, db_path: Path, prompts: dict[str, Prompt], space: bool, *,
                   preparing=None, tabs: gr.Tabs | None = None) -> RateTab:
    """Lay the tab out and wire its events to RateHandlers."""
    import gradio as gr

    require_gradio_internals(space)  # a clear refusal now, not handlers that silently stop seeing each other
    app = cfg.app
    mark_who = _MARK_WHO.replace("KEEP_TYPED", _keep_typed(len(FORM_KEYS) + 1))  # the form's values, the skip reason
    default_prompt = next(iter(prompts.values()), None)
    default_lang = page_lang(default_prompt.language if default_prompt is not None else None)
    prep_html = gr.HTML(panel(preparing.snapshot()) if preparing else "", visible=preparing is not None,
                        elem_id="prepare", padding=False)
    doorman = auth.Doorman(app, db_path, space)
    ui = layout(space, default_prompt, default_lang, bool(app.passcodes), app.signup == "open",
                signin_visible=preparing is None, browser_secret=doorman.sealer.browser_secret)
    h = RateHandlers(ui, cfg, db_path, prompts, space, doorman, preparing)
    h.in_queue = lambda page: submit_queued(demo, page)
    h.live_session = lambda page: live_session(demo, ui.session, page)

    def follows_switch(event):
        """After `event`, which relabels the page in the language its session said when it ran: a language switch
        that answered meanwhile is not undone (RateHandlers.follow_switch). Returns `event`."""
        event.success(gradio_hints(h.follow_switch), [ui.session, ui.lang, ui.status, ui.switches], ui.language_outputs,
                      api_visibility="private", preprocess=False, postprocess=False, show_progress="hidden",
                      js=_FOLLOW_SENT, **LANGUAGE_QUEUE).success(
            None, [ui.lang], None, js=_SHOWN_LANG)
        return event

    if preparing is not None:
        timer = gr.Timer(1.0)

        if space:  # the Hugging Face sign-in, for the sign-in the page's load could not make yet
            def poll(s: Session, stored: str, profile: gr.OAuthProfile | None, request: gr.Request | None) -> dict:
                return h.poll(s, stored, request, prep_html, timer, tabs, profile)
        else:
            def poll(s: Session, stored: str, request: gr.Request | None) -> dict:
                return h.poll(s, stored, request, prep_html, timer, tabs)

        poll = gradio_hints(poll)
        poll_outputs = [prep_html, timer, *([tabs] if tabs else []), *ui.signin_outputs]
        ticked = timer.tick(poll, [ui.session, ui.browser_code], poll_outputs, api_visibility="private")
        ticked.then(None, None, None, js=_FORGET_INVITE_SIGNED_IN)  # the poll signs in once the pool is ready
        follows_switch(ticked).then(None, [ui.draft_owner], None, js=mark_who)
        # a page opened later shows the progress at once, not the panel as it was when the app started
        follows_switch(demo.load(poll, [ui.session, ui.browser_code], poll_outputs, api_visibility="private")).then(
            None, [ui.draft_owner], None, js=mark_who)

    signin = ui.signin
    out = ui.signin_outputs

    def refusal_said(event, no_answer: str = "no_answer", then_js: tuple | None = None, clears: bool = True,
                     crashed: str | None = None):
        """A refused `event` says why on the status line as well as in its toast (_say_refusal; with no reason, the
        words `no_answer`), then runs `then_js` ((outputs, js)) if given; one that goes through clears the toasts of
        earlier refusals (_CLEAR_REFUSALS) unless `clears` is false (a first step, whose next step may be refused
        still); `crashed`: _say_refusal's. Returns `event`."""
        said = event.failure(None, None, ui.status, js=_say_refusal(no_answer, crashed))
        if then_js is not None:
            said.then(None, None, then_js[0], js=then_js[1])
        if clears:
            event.success(None, None, None, js=_CLEAR_REFUSALS)
        return event
    answers = [ui.fields[k] for k in REQUIRED_KEYS]

    def watched(event):
        """After an event that can sign in: this tab's rater marked in the browser (_MARK_WHO), and the page in the
        language of the switch (follows_switch). Returns `event`."""
        follows_switch(event).then(None, [ui.draft_owner], None, js=mark_who)
        return event

    def restore(event):
        """After a page load's sign-in: the answers this browser kept for the pair now shown (_RESTORE_DRAFT), then
        Submit as those answers allow. Before the stored language is switched to, which relabels the form with
        the values it then holds."""
        restored = watched(event).then(None, [ui.draft_owner, ui.text_a, ui.text_b, *ui.form, ui.skip_reason],
                                       [*ui.form, ui.skip_reason, ui.skip_box], js=_RESTORE_DRAFT)
        restored.then(None, None, ui.draft_sent, js=_SENT_DRAFT).then(
            gradio_hints(h.draft_fate), [ui.session, ui.draft_sent], ui.status, api_visibility="private",
            show_progress="hidden")
        return restored.then(None, None, ui.status, js=_SAY_DRAFT_LOST).then(None, answers, ui.submit_btn,
                                                                             js=_LOAD_READY)

    def put_back(event):
        """After a sign-in typed on the page: her answers kept back into a form served empty (_PUT_BACK_DRAFT)."""
        watched(event).then(None, [ui.draft_owner, ui.text_a, ui.text_b, *ui.form, ui.skip_reason],
                            [*ui.form, ui.skip_reason, ui.skip_box], js=_PUT_BACK_DRAFT).then(
            None, answers, ui.submit_btn, js=_LOAD_READY)

    # every page load first waits for the submission the answers kept were on their way with, while it is queued
    loaded = demo.load(None, None, ui.submission, js=_KEPT_SUBMISSION).then(
        gradio_hints(h.await_submission), [ui.submission], None, api_visibility="private", show_progress="hidden")
    # refused (Gradio's busy queue while the server shuts down), the status line says so, not the popup alone
    refusal_said(loaded, clears=False)
    if space:  # the OAuth round trip reloads the page: sign in from the profile on every load
        restore(refusal_said(loaded.then(gradio_hints(h.sign_in_space), [ui.session], out, api_name="sign_in",
                                         show_progress_on=ui.status))).then(None, None, None, js=_STORED_LANG)
    else:
        sign_in_inputs = [ui.session, *(signin[box] for box in SIGN_IN_BOXES)]
        sign_in_local = gradio_hints(h.sign_in_local)
        put_back(refusal_said(signin["button"].click(sign_in_local, sign_in_inputs, out, api_name="sign_in",
                                                     show_progress_on=ui.status)))
        for box in SIGN_IN_BOXES:
            put_back(refusal_said(signin[box].submit(sign_in_local, sign_in_inputs, out, api_visibility="undocumented",
                                                     show_progress_on=ui.status)))
        # the invitation code leaves the address bar (and the history) once the sign-in it carried has run
        resumed = loaded.then(gradio_hints(h.resume_local), [ui.session, ui.browser_code], out,
                              api_visibility="undocumented", show_progress_on=ui.status)
        refusal_said(resumed)
        restore(resumed.then(None, None, None, js=_FORGET_INVITE)).then(None, None, None, js=_STORED_LANG)
        refusal_said(ui.code_btn.click(gradio_hints(h.show_code), [ui.session], [ui.session, ui.status],
                                       api_name="my_code", show_progress_on=ui.status))
        ui.signout_btn.click(None, None, None, js=_SIGNING_OUT)  # before the sign-out's own step: whose it is
        # refused, the status line says why (it went on showing her welcome, as if nothing had been pressed)
        refusal_said(ui.signout_btn.click(
            gradio_hints(h.sign_out), [ui.session], [ui.session, ui.browser_code, ui.signin_box, ui.signout_btn,
                                                     ui.code_btn, ui.pair_box, ui.who, ui.done_md, ui.again_btn,
                                                     ui.status, ui.draft_owner, *(signin[box] for box in SIGN_IN_BOXES)],
            api_name="sign_out", show_progress_on=ui.status)).then(None, None, None, js=_FORGET_CODE)
    # The handlers return finished text (Markdown without indentation) and None: Gradio's postprocess would only
    # spend a thread hop on each output. Submit's values reach the library as sent, and it checks every one
    # (evalkit.rating.queue._validate): the per-input preprocess goes too.
    # A refused event (gr.Error) leaves an "Error" overlay on the components showing its progress, and it blocks
    # clicks: every event here shows its progress on the status line only (the message itself comes as a toast).
    unlock, on = _form_interactive(True), {"show_progress_on": ui.status}
    def submit(s: Session, request: gr.Request | None, *values) -> dict:  # Gradio gives the request here only
        return h.submit(s, *values, page=_page(request))

    sending = ui.submit_btn.click(None, None, [*ui.form, ui.submit_btn, ui.submission], js=_SENDING).then(
        gradio_hints(h.sending), [ui.session, ui.submission], ui.session, api_visibility="private",
        show_progress="hidden")
    sent = sending.then(
        gradio_hints(submit), [ui.session, *ui.form], ui.locked_outputs, api_name="submit", preprocess=False, postprocess=False, **on)
    follows_switch(sent).then(None, None, None, js=_SENT_ANSWERED)
    sent.success(None, None, None, js=_forget_draft("evalkitSentBy"))
    # a rating may be on its way: its own words when the server does not answer, and then whether it still is.
    # Refused at its first step (Gradio's busy queue, the server shutting down), the submission itself never runs:
    # that refusal is said the same way, or the form stayed locked at "Submitting…" with no word
    for step, last in ((sending, False), (sent, True)):
        refusal_said(step, "no_answer_sent", then_js=([*ui.form, ui.submit_btn], _UNSENT), clears=last,
                     crashed="crashed_sent")
    sending.failure(None, None, None, js=_SENT_ANSWERED)
    follows_switch(refusal_said(ui.correct_btn.click(gradio_hints(h.start_correction), [ui.session], ui.correct_outputs,
                                                     api_name="correct", postprocess=False, **on))).success(
        None, None, ui.form, js=unlock)
    for button, api in ((ui.next_btn, "next_pair"), (ui.again_btn, "check_again")):
        follows_switch(refusal_said(button.click(gradio_hints(h.next_screen), [ui.session], ui.pair_outputs,
                                                 api_name=api, postprocess=False, **on))).success(None, None, ui.form,
                                                                                                  js=unlock)
    ui.alive_btn.click(h.still_here, [ui.session], None, api_name="still_here", show_progress="hidden")
    ui.skip_btn.click(None, None, None, js=_SKIPPING)  # before the skip's own step: whose skip it is
    follows_switch(refusal_said(ui.skip_btn.click(gradio_hints(h.skip), [ui.session, ui.skip_reason], ui.pair_outputs,
                                                  api_name="skip", postprocess=False, **on))  # the form is unlocked
                   ).success(None, None, None, js=_forget_draft("evalkitSkipBy"))
    demo.load(None, [ui.lang], None, js=_SHOWN_LANG)
    # the page's switch sends its count (_SWITCH_SENT); the API's /language keeps its three inputs (the session, the
    # language, the status line as shown) for clients, which send none: a trigger the page never presses
    api_switch = gr.Button("language (API)", visible=False)
    api_switch.click(gradio_hints(h.switch_language), [ui.session, ui.lang, ui.status], ui.language_outputs,
                     api_name="language", preprocess=False, postprocess=False, **LANGUAGE_QUEUE)
    refusal_said(ui.lang.change(gradio_hints(h.switch_language), [ui.session, ui.lang, ui.status, ui.switches],
                                ui.language_outputs, api_visibility="private", preprocess=False, postprocess=False,
                                js=_SWITCH_SENT, **on, **LANGUAGE_QUEUE),
                 then_js=([ui.lang, ui.status], _switch_refused())).success(None, [ui.lang], None, js=_SHOWN_LANG)
    ui.lang.input(None, [ui.lang], None, js=_KEEP_LANG)  # the rater's own choice only
    ui.lang.change(None, [ui.lang, ui.status], ui.status, js=_no_answer_again())
    # .input fires on the rater's own clicks only; the handlers above set the button for programmatic resets
    gr.on([c.input for c in answers], None, answers, ui.submit_btn, js=_READY, api_visibility="private")
    # (the comment and the skip reason on leaving their box too: a paste may come without the keystrokes' own events)
    gr.on([c.input for c in ui.form] + [ui.skip_reason.input, ui.fields["comment"].blur, ui.skip_reason.blur], None,
          [ui.draft_owner, ui.text_a, ui.text_b, *ui.form, ui.skip_reason], None,
          js=_KEEP_DRAFT, api_visibility="private")
    return ui


def _stored_form(row: dict | None) -> dict:
    if row is None:
        return {}
    a, b = answers_from_row(row)
    values = {f"a_{c}": v for c, v in a.items()} | {f"b_{c}": v for c, v in b.items()}
    return values | {"preference": row["preference"], "comment": row["comment"]}
