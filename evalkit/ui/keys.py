"""Keyboard rating, in the browser: one key per answer, the current question marked and moved on, so a rater
scores a pair without the mouse. Pure page behaviour: every key clicks the same control a mouse would, so the
server sees exactly the events it always sees (and checks them as always).

Keys (shown on the page, evalkit.ui.words "keys"): 1 / 2 / 3 answer the current question pass / fail / unsure and
move to the next; A / B / T choose the preference; Enter submits (on Next pair, it is that button's own); N goes to
the next pair (with no pair on screen, it presses Check again); Esc goes back to the first question. Keys typed into
a text box stay text. A switch beside the keys' line turns the single-key shortcuts off in this browser (WCAG 2.1 SC
2.1.4, for speech input), remembered in its local storage; on a phone, where that line is hidden, its label says what
it is for.

Also pure page behaviour (PAGE below): a new pair scrolls its prompt (on a rater's first pair, the guidelines open
above it) to the top of the screen and puts the focus on the first question; the keys answer the question the focus is
in (Tab moves it, one stop per question; the arrows choose within it); a stored rating moves the focus to Next pair,
under the reveal (a refused one gives the focus back where it was), and Correct puts it on the first question (a
stored correction on Next pair again); beside Submit, how many questions are answered
("8 / 9 answered"), a button that goes to the first one still open (Submit stays disabled until all are); under it,
the status line's words when the status line itself is scrolled out of sight; after the rater's own input, at most
every few minutes, a press of the hidden #alive, so that her hold on the pair counts from her last sign of work."""

import json

from .words import GRADIO_MESSAGES, NO_ANSWER_LINES, WORDS

SCRIPT = """
<script>
(() => {
  let current = 0, submittedAt = 0;
  const questions = () => Array.from(document.querySelectorAll(".question"))
    .filter((q) => q.id !== "r-preference" && q.offsetParent !== null);
  const mark = (scroll) => {
    const qs = questions();
    qs.forEach((q, i) => q.classList.toggle("current-question", i === current));
    if (qs[current] && scroll !== false) qs[current].scrollIntoView({block: "nearest"});
  };
  // a new pair's starting point: its first question without an answer (0 on a fresh form)
  window.evalkitFirstQuestion = () => {
    const open = questions().findIndex((q) => !q.querySelector("input:checked"));
    current = Math.max(open, 0); mark(false);
  };
  window.evalkitCurrentRadio = () => {
    const q = questions()[current];
    return q ? (q.querySelector("input:checked") || q.querySelector("input[type=radio]")) : null;
  };
  // the focus follows the marked question, so that Tab and the keys go on from where the rater is
  const focusCurrent = () => {
    const radio = window.evalkitCurrentRadio();
    if (radio && !radio.disabled && document.activeElement !== radio) radio.focus({preventScroll: true});
  };
  const choose = (container, index) => {
    const inputs = container ? container.querySelectorAll("input[type=radio]") : [];
    if (inputs[index] && !inputs[index].disabled) { inputs[index].click(); return true; }
    return false;
  };
  const press = (id) => {
    const el = document.getElementById(id);
    const button = el && (el.tagName === "BUTTON" ? el : el.querySelector("button"));
    if (button && !button.disabled && button.offsetParent !== null) { button.click(); return true; }
    return false;
  };
  document.addEventListener("click", (e) => {
    const q = e.target.closest && e.target.closest(".question");
    // a mouse answer: carry on from the next question (an arrow key's choice within a question is a click too, of
    // detail 0: the rater is still weighing that question)
    if (q && q.id !== "r-preference" && e.isTrusted && e.detail > 0) {
      current = Math.min(questions().indexOf(q) + 1, questions().length - 1);
      mark();
      focusCurrent();
    }
    if (e.target.closest && e.target.closest("#next")) current = 0;  // the new pair's own watcher marks it
    if (e.target.closest && e.target.closest("#submit")) submittedAt = Date.now();  // for N (below)
  }, true);
  // the keyboard's focus moved into a question (Tab, or a click): the keys answer that one, not the one marked before
  document.addEventListener("focusin", (e) => {
    const q = e.target.closest && e.target.closest(".question");
    if (!q || q.id === "r-preference") return;
    const i = questions().indexOf(q);
    if (i >= 0 && i !== current) { current = i; mark(false); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (window.evalkitKeysOff && window.evalkitKeysOff()) return;  // switched off (the switch beside the keys' line)
    const t = e.target;
    if (t && t.offsetParent !== null && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "radio"))) return;
    // only in the rating itself (a question, Next pair, or nothing focused): on any other control a key does what it
    // does there. Enter on the guidelines' toggle, Skip or Sign out stored the rating once Submit was enabled
    if (t && t !== document.body && !(t.closest && t.closest(".question, #next, #check-again"))) return;
    const key = e.key.toLowerCase();
    const qs = questions();
    const focused = t && t.closest ? qs.indexOf(t.closest(".question")) : -1;
    if (focused >= 0) current = focused;  // where the focus is, whatever was marked
    if (["1", "2", "3"].includes(key) && qs.length) {
      if (choose(qs[current], Number(key) - 1)) {
        current = Math.min(current + 1, qs.length - 1);
        mark();
        focusCurrent();
        e.preventDefault();
      }
    } else if (["a", "b", "t"].includes(key)) {
      if (choose(document.getElementById("r-preference"), {a: 0, b: 1, t: 2}[key])) e.preventDefault();
    } else if (key === "enter") {
      // Enter right after the last answer may come before the page has enabled Submit (its check of the answers is
      // an event of its own): while every question has an answer, keep trying for a moment rather than drop the key
      const all = () => Array.from(document.querySelectorAll(".question")).filter((q) => q.offsetParent !== null)
        .every((q) => q.querySelector("input:checked"));
      // Enter on Next pair is that button's own (a stored rating's answers are all given: waiting for a Submit that
      // is hidden swallowed it, rater audit (keyboard) K1)
      if (t && t.closest && t.closest("#next, #check-again")) return;
      const submit = document.getElementById("submit");
      if (press("submit")) e.preventDefault();
      else if (qs.length && submit && submit.offsetParent !== null && all()) {
        e.preventDefault();
        let tries = 0;
        const attempt = () => { if (!press("submit") && all() && ++tries < 40) setTimeout(attempt, 50); };
        setTimeout(attempt, 50);
      }
    } else if (key === "n") {
      // N right after submitting may come before the Next button is drawn: keep trying for a moment
      // rather than drop the key. Only if a rating was on its way when N came (Submit just pressed, the form
      // locked): an N on an open form that waited went on to press Next pair as soon as the rater's own Enter stored
      // the rating, and the reveal was gone before it was seen (rater audit (keyboard) K3)
      e.preventDefault();
      const radio = window.evalkitCurrentRadio();
      const sending = Date.now() - submittedAt < 2000 || (!!radio && radio.disabled);
      let tries = 0;
      const attempt = () => {
        if (press("next")) current = 0;
        // no pair on screen, the pairs left held by others: N asks again, as Next pair would (rater audit R4: the
        // keyboard had no way to press Check again)
        else if (press("check-again")) current = 0;
        else if (sending && ++tries < 40) setTimeout(attempt, 50);
      };
      attempt();
    } else if (key === "escape") {
      // the focus goes too: the keys answer the question the focus is in (rater audit F1)
      current = 0; mark(); focusCurrent();
    }
  });
})();
</script>
""" + ("""
<script>
(() => {
  const ANSWERED = %s;
  const GOTO = %s;
  const SWITCH = %s;
  const SWITCH_PHONE = %s;
  const LOADING = %s;
  const GRADIO_ERROR = %s;
  const GRADIO_CLEAR = %s;
  const GRADIO_CLOSE = %s;
  const CONNECTION_LOST = %s;
  const GRADIO_MESSAGES = %s;
  const NO_ANSWER = %s;
  const shown = (el) => !!el && el.offsetParent !== null;
  const lang = () => { const c = document.querySelector("#lang input:checked"); return c && c.value === "en" ? "en" : "zh"; };
  let pair = "", nextWasShown = false, submitWasShown = false, doneWasShown = false, focusDue = false, waited = 0;
  // The rater's hold on the pair on screen counts from her last sign of work (rating.queue.keep_hold): after her own
  // input, at most every few minutes, the page presses the hidden #alive. A tab left alone sends nothing, so its pair
  // still goes to another rater after the hold's minutes
  let lastInput = 0, lastBeat = Date.now();
  ["keydown", "pointerdown", "wheel", "touchstart", "input"].forEach((type) =>
    document.addEventListener(type, (e) => { if (e.isTrusted) lastInput = Date.now(); }, {capture: true, passive: true}));
  const beat = () => {
    const t = Date.now(), every = window.evalkitAliveMs || 5 * 60 * 1000;
    if (lastInput <= lastBeat || t - lastBeat < every || !shown(document.getElementById("submit"))) return;
    const el = document.getElementById("alive");
    const button = el && (el.tagName === "BUTTON" ? el : el.querySelector("button"));
    if (button) { lastBeat = t; button.click(); }
  };
  // Gradio names each radio option on its own (and names it afresh when its value changes), so every option was a
  // Tab stop and the arrows did not move between a question's answers: one name per control (its block's id) makes
  // it one radio group, one stop. A mutation observer renames at once, before the next key is handled.
  // (the prompt's words only, not Gradio's progress in its block)
  const PROMPT_LANG = () => /[\u3400-\u9fff]/.test((document.querySelector("#rate-prompt .prose")
    || document.getElementById("rate-prompt") || {}).innerText || "")
    ? "zh" : "en";
  const rename = () => document.querySelectorAll("input[type=radio]").forEach((r) => {
    const owner = r.closest("[id]");
    if (owner && r.name !== "group-" + owner.id) r.name = "group-" + owner.id;
  });
  // Gradio's accordions (the guidelines, Skip this pair) say open or closed only by their arrow's angle: a screen
  // reader heard a button with no state (WCAG 4.1.2). aria-expanded follows the class Gradio sets when one is open
  const expanded = (b) => {
    const open = String(b.classList.contains("open"));
    if (b.getAttribute("aria-expanded") !== open) b.setAttribute("aria-expanded", open);
  };
  new MutationObserver((records) => records.forEach((r) => {
    if (r.target.classList && r.target.classList.contains("label-wrap")) expanded(r.target);
  })).observe(document.documentElement, {subtree: true, attributes: true, attributeFilter: ["class"]});
  const tend = () => {
    document.querySelectorAll("button.label-wrap").forEach(expanded);  // those drawn since
    // For screen readers, from what the page shows and alike on both sides. Gradio's radio control is a fieldset
    // without a legend: each is named by its visible label and small print, so a rater hears which question, and of
    // which output, an answer belongs to
    document.querySelectorAll("fieldset[id]").forEach((f) => {
      if (!f.querySelector("input[type=radio]")) return;
      const label = f.querySelector("[data-testid=block-info]"), info = f.querySelector(".info-text");
      if (label && !label.id) label.id = f.id + "-label";
      if (info && !info.id) info.id = f.id + "-info";
      const by = [label && label.id, info && info.id].filter(Boolean).join(" ");
      if (f.getAttribute("role") !== "radiogroup") f.setAttribute("role", "radiogroup");
      if (by && f.getAttribute("aria-labelledby") !== by) f.setAttribute("aria-labelledby", by);
    });
    // the two outputs: read-only rather than disabled, so the keyboard reaches them and they read as text, in the
    // prompt's language (one language for both: never told apart by their own words)
    const lang = PROMPT_LANG();
    // the prompt's material and task too: on the English page a Chinese prompt was read by the English voice
    const promptBox = document.getElementById("rate-prompt");
    if (promptBox && promptBox.lang !== lang) promptBox.lang = lang;
    document.querySelectorAll("#text-a textarea, #text-b textarea").forEach((t) => {
      if (t.disabled) t.disabled = false;
      if (!t.readOnly) t.readOnly = true;
      if (t.lang !== lang) t.lang = lang;
    });
    // the outputs' labels are headings (level 3, as the prompt's title), alike on both sides: the page had one heading,
    // its title, so a screen reader's heading keys could not jump to output A or B (rater audit, 2026-12-05)
    document.querySelectorAll("#text-a [data-testid=block-info], #text-b [data-testid=block-info]").forEach((l) => {
      if (l.getAttribute("role") !== "heading") { l.setAttribute("role", "heading"); l.setAttribute("aria-level", "3"); }
    });
    // the status line is announced when it changes (its echo under Submit is for the eyes, or it is said twice)
    const status = document.getElementById("rate-status");
    if (status && status.getAttribute("role") !== "status") status.setAttribute("role", "status");
    // the page's language follows the switch, so a screen reader reads it with the right voice
    const chosen = document.querySelector("#lang input:checked");
    const page = chosen && chosen.value === "en" ? "en" : "zh";
    if (document.documentElement.lang !== page) document.documentElement.lang = page;
  };
  // the names at once (a Tab right after an arrow must find one group); the rest, which reads the page's layout,
  // once per frame: Gradio changes the page many times a second while an event runs (its timers)
  // A focused control that is disabled (Submit locks the form) leaves the focus on the page itself: when it is
  // enabled again (a refused rating) the focus goes back to it, else Tab starts again from the top (rater audit
  // (keyboard) K2). Only if the focus has gone nowhere else meanwhile (a stored rating puts it on Next pair)
  let focused = null, lost = null;
  document.addEventListener("focusin", (e) => { focused = e.target; lost = null; });
  const refocus = () => {
    const idle = !document.activeElement || document.activeElement === document.body;
    if (!lost && idle && focused && focused.disabled) lost = focused;
    if (lost && idle && !lost.disabled && lost.isConnected && shown(lost)) { lost.focus({preventScroll: true}); }
  };
  let due = false;
  new MutationObserver(() => {
    rename();
    refocus();
    if (!due) { due = true; requestAnimationFrame(() => { due = false; tend(); }); }
  }).observe(document.documentElement,
    {subtree: true, childList: true, attributes: true, attributeFilter: ["name", "disabled"]});
  // Gradio's own live region says each finished event by its untranslated message key ("common.complete",
  // "common.error"): a screen reader read those words after every Submit, on the Chinese page too (rater audit, 2026-12-05).
  // The status line says what happened; such a key is emptied in place (its text node kept, for Gradio's next message)
  // before the page is next drawn, so it is never announced.
  // Gradio's own "Loading" (its live region, as each event starts, and its loader) is in the browser's language, not
  // the page's: on the Chinese page an English browser showed and said "Loading" (rater audit, round 2). It is said
  // in the page's language, in place, likewise. (The loader's first "Loading...", drawn before the app's own script
  // arrives, is Gradio's alone.)
  // (on a reload the switch shows Chinese until the language kept in the browser is put back: that one counts)
  const shownLang = () => { try { const k = localStorage.getItem("evalkit-lang"); if (k === "en" || k === "zh") return k; }
    catch (err) { /* storage refused */ } return lang(); };
  // So is the "Error" over a refusal: its tracker's on the status line, before the reason is written, and its message's.
  const GRADIO_WORDS = {Loading: LOADING, Error: GRADIO_ERROR};
  // and Gradio's popup while the server is out of reach (a lost connection, a restart), its close button too: on the
  // Chinese page it spoke English until the page came back (rater audit, phone, 2026-12-06)
  const GRADIO_LINES = {[CONNECTION_LOST.en]: CONNECTION_LOST};
  const GRADIO_BUTTONS = {Clear: GRADIO_CLEAR, Close: GRADIO_CLOSE};
  // and Gradio's fixed English refusals in its popup ("This application is currently busy...", words.GRADIO_MESSAGES):
  // said in the page's language, the English page too, with what to do
  new MutationObserver(() => document.querySelectorAll("[role=status], .loading, [data-testid=status-tracker], [data-testid=toast-body]")
    .forEach((el) => {
      const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        const own = /^(\\s*)(Loading|Error)(\\.\\.\\.)?(\\s*)$/.exec(t.nodeValue);
        const line = GRADIO_LINES[t.nodeValue.trim()], fixed = GRADIO_MESSAGES[t.nodeValue.trim()];
        if (/^\\s*common\\.\\w+\\s*$/.test(t.nodeValue) && el.matches("[role=status][aria-atomic=true]")) t.nodeValue = "";
        else if (line && shownLang() !== "en" && el.matches("[data-testid=toast-body]")) t.nodeValue = line[shownLang()];
        else if (fixed && el.matches("[data-testid=toast-body]")) t.nodeValue = fixed[shownLang()];
        else if (own && shownLang() !== "en" && (own[2] === "Loading" || el.matches("[data-testid=status-tracker], [data-testid=toast-body]")))
          t.nodeValue = own[1] + GRADIO_WORDS[own[2]][shownLang()] + (own[3] ? "…" : "") + own[4];
      }
      // and the button beside a tracker's "Error" that clears it, and a popup's close button: their names (tooltip,
      // screen reader) were "Clear" and "Close"
      el.querySelectorAll("button[aria-label]").forEach((b) => {
        if (!b.dataset.gradioName && !GRADIO_BUTTONS[b.getAttribute("aria-label")]) return;
        b.dataset.gradioName = b.dataset.gradioName || b.getAttribute("aria-label");
        const said = GRADIO_BUTTONS[b.dataset.gradioName][shownLang()];
        if (b.getAttribute("aria-label") !== said) { b.setAttribute("aria-label", said); b.setAttribute("title", said); }
      });
    })).observe(document.documentElement, {subtree: true, childList: true, characterData: true});
  // The page's own lines that the server did not answer, or refused the step as busy (rate._say_refusal), are said
  // again in the language chosen on every switch, here, without the server: rate._no_answer_again does it as a step
  // of the switch's event, but with the server down Gradio ran it for the first switch only, the switch's server step
  // still pending (rater audit 2026-12-07)
  document.addEventListener("change", (e) => {
    if (!e.target || !e.target.closest || !e.target.closest("#lang") || e.target.type !== "radio") return;
    const to = e.target.value === "en" ? "en" : "zh";
    const line = document.getElementById("rate-status");
    const walk = line ? document.createTreeWalker(line, NodeFilter.SHOW_TEXT) : null;
    for (let t = walk && walk.nextNode(); t; t = walk.nextNode()) {
      const w = NO_ANSWER.find((w) => t.nodeValue.trim() === w.zh || t.nodeValue.trim() === w.en);
      if (w && t.nodeValue.trim() !== w[to]) t.nodeValue = w[to];
    }
  }, true);
  // The single-key shortcuts can be switched off, and the choice is kept in this browser (WCAG 2.1 SC 2.1.4: a
  // speech-input user's dictated words would otherwise answer questions). Off, the keys' line is hidden too
  const KEYS_OFF = "evalkit-keys-off";
  const keysOff = () => { try { return localStorage.getItem(KEYS_OFF) === "1"; } catch (err) { return false; } };
  window.evalkitKeysOff = keysOff;
  const tendSwitch = () => {
    const box = document.getElementById("keys-on"), label = document.getElementById("keys-on-label");
    if (box && !box.dataset.wired) {
      box.dataset.wired = "1";
      box.addEventListener("change", () => {
        try { if (box.checked) localStorage.removeItem(KEYS_OFF); else localStorage.setItem(KEYS_OFF, "1"); }
        catch (err) { /* storage refused: the choice holds for this page only */ window.evalkitKeysOff = () => !box.checked; }
      });
    }
    const off = window.evalkitKeysOff();
    if (box && box.checked === off) box.checked = !off;
    // on a phone the keys' line is hidden (no keyboard to speak of) but the switch stays, for a speech-input user
    // whose phone still types her words as keys (WCAG 2.1 SC 2.1.4): its label then says what it is for
    const words = (window.matchMedia && window.matchMedia("(max-width: 600px)").matches ? SWITCH_PHONE : SWITCH)[lang()];
    if (label && label.textContent !== words) label.textContent = words;
    document.documentElement.classList.toggle("keys-off", off);
    // each answer's key on the answer itself: the keys' line sits far above the questions, so a screen reader,
    // which reads the focused radio, never said that 1 / 2 / 3 (A / B / T) answer it. None while switched off
    document.querySelectorAll(".question").forEach((q) => {
      const keys = q.id === "r-preference" ? ["A", "B", "T"] : ["1", "2", "3"];
      q.querySelectorAll("input[type=radio]").forEach((r, i) => {
        if (off || !keys[i]) { if (r.hasAttribute("aria-keyshortcuts")) r.removeAttribute("aria-keyshortcuts"); }
        else if (r.getAttribute("aria-keyshortcuts") !== keys[i]) r.setAttribute("aria-keyshortcuts", keys[i]);
      });
    });
  };
  const tick = () => {
    tendSwitch();
    const text = document.querySelector("#text-a textarea");
    const now = text && shown(text) ? text.value + "\\u0000" + (document.querySelector("#text-b textarea") || {}).value : "";
    const qs = Array.from(document.querySelectorAll(".question")).filter(shown);
    // a new pair: its prompt at the top and the current question the first one still open (answers given from the
    // keyboard in the moment before this tick saw the pair are kept, never answered over), at once
    if (now && now !== pair && qs.length > 0) {
      pair = now;
      // the guidelines are open on a rater's first pair: they come first, then the prompt under them
      const guide = document.getElementById("guidelines-text");
      const top = shown(guide) ? document.getElementById("guidelines") : document.getElementById("rate-prompt");
      if (window.evalkitFirstQuestion) window.evalkitFirstQuestion();
      if (top) top.scrollIntoView({block: "start"});
      focusDue = true; waited = 0; lastBeat = Date.now();  // a new pair: its hold is fresh
    }
    beat();
    // Correct opens the stored rating's form again, Submit back in sight on the same pair; the focus was on Correct,
    // which it hides: it goes to the first question, as on a new pair (else it was on the page itself, and the
    // next key answered the question marked last, the last one)
    const submitShown = shown(document.getElementById("submit"));
    const submitGone = submitWasShown && !submitShown;  // a rating, or a correction, stored (or the pair gone)
    if (submitShown && !submitWasShown && now && now === pair && !focusDue) {
      if (window.evalkitFirstQuestion) window.evalkitFirstQuestion();
      focusDue = true; waited = 0;
    }
    submitWasShown = submitShown;
    // then the focus on that question. A pair's texts can arrive a moment before its form is unlocked, and a
    // disabled radio takes no focus: the focus waits for the unlock (10 s at most), and only the focus waits
    if (focusDue) {
      const radio = window.evalkitCurrentRadio ? window.evalkitCurrentRadio() : null;
      if (!radio || !radio.disabled || ++waited > 40) {
        if (radio) radio.focus({preventScroll: true});
        focusDue = false;
      }
    }
    const next = document.querySelector("#next");
    const nextShown = shown(next);
    // a stored rating: the reveal and Next pair in sight, the focus on Next pair. Likewise a stored correction: Next
    // pair stays in sight through one, and the focus, on the Save correction that went, fell to the page itself
    if (nextShown && (!nextWasShown || submitGone)) {
      const reveal = document.getElementById("reveal");
      if (reveal) reveal.scrollIntoView({block: "start"});
      // described by the reveal, so a screen reader reads it with the button (only now: the rating is stored)
      const button = next.tagName === "BUTTON" ? next : next.querySelector("button");
      if (button && reveal) button.setAttribute("aria-describedby", "reveal");
      next.focus({preventScroll: true});
    }
    nextWasShown = nextShown;
    // no pair left (Next pair, Skip): the focus was on a control that went with the pair and fell to the page itself,
    // where a screen reader said nothing at all. It goes to the words that say why, read with them. The words only:
    // the block holds Gradio's progress too ("0.1s" while an event with it among its outputs runs), which on a busy
    // page moved the focus at the first load to a line with nothing to say, or counted as the words being there
    // already while the focus was still on Next pair, so that it never moved when they came (CI, 2026-12-07)
    const done = document.getElementById("rate-done");
    const doneWords = done && done.querySelector(".prose");
    const doneShown = shown(done) && !!doneWords && doneWords.innerText.trim() !== "";
    if (doneShown && !doneWasShown && (!document.activeElement || document.activeElement === document.body)) {
      if (!done.hasAttribute("tabindex")) done.tabIndex = -1;  // focusable from the script, never a Tab stop
      done.focus();
    }
    doneWasShown = doneShown;
    // Sign out from the keyboard hid the button that had the focus, and the focus fell to the page itself: a screen
    // reader said nothing and Tab started again from the tabs at the top. It goes to the status line that says she
    // signed out (read with it, never a Tab stop), and Tab goes on to the sign-in form. Judged from what the page
    // holds now, not from a change one tick saw: a busy page can draw the sign-in form and drop the button between
    // two ticks. A page's first load has focused nothing, so nothing moves
    const active = document.activeElement;
    if (focused && focused.closest && focused.closest("#signout") && !shown(focused)
        && (!active || active === document.body || !shown(active)) && shown(document.getElementById("signin-button"))) {
      const line = document.getElementById("rate-status");
      if (line && !line.hasAttribute("tabindex")) line.tabIndex = -1;
      if (line) line.focus();
    }
    // the status line sits at the top; when it says something while scrolled away (the pair was finished by
    // others, a rating was stored), the same words show under Submit, where the rater is
    const status = document.querySelector("#rate-status .prose") || document.querySelector("#rate-status");
    const echo = document.getElementById("status-echo");
    if (echo) {
      const said = status ? status.innerText.trim() : "";
      const box = status && status.getBoundingClientRect();
      const away = !!box && (box.bottom < 0 || box.top > window.innerHeight);
      echo.hidden = !(said && away);
      if (!echo.hidden && echo.textContent !== said) echo.textContent = said;
    }
    const note = document.getElementById("answered-note");
    const submit = document.getElementById("submit");
    if (note) {
      const open = qs.filter((q) => !q.querySelector("input:checked"));
      const on = shown(submit) && qs.length > 0;
      note.hidden = !on;
      if (on) {
        note.textContent = ANSWERED[lang()].replace("{n}", qs.length - open.length).replace("{total}", qs.length);
        note.setAttribute("aria-label", note.textContent + (open.length ? GOTO[lang()] : ""));
        note.onclick = () => {
          if (!open.length) return;
          open[0].scrollIntoView({block: "center"});
          const input = open[0].querySelector("input[type=radio]");
          if (input) input.focus({preventScroll: true});
        };
      }
    }
  };
  setInterval(tick, 250);
})();
</script>
""" % (json.dumps(WORDS["answered"], ensure_ascii=False), json.dumps(WORDS["answered_goto"], ensure_ascii=False),
       json.dumps(WORDS["keys_switch"], ensure_ascii=False), json.dumps(WORDS["keys_switch_phone"], ensure_ascii=False),
       json.dumps(WORDS["loading"], ensure_ascii=False), json.dumps(WORDS["gradio_error"], ensure_ascii=False),
       json.dumps(WORDS["gradio_clear"], ensure_ascii=False), json.dumps(WORDS["gradio_close"], ensure_ascii=False),
       json.dumps(WORDS["gradio_connection_lost"], ensure_ascii=False),
       json.dumps({gradio: WORDS[key] for gradio, key in GRADIO_MESSAGES.items()}, ensure_ascii=False),
       json.dumps([WORDS[key] for key in NO_ANSWER_LINES], ensure_ascii=False)))

# The switch for the single-key shortcuts, beside the keys' line (evalkit.ui.form): the page script above names it in
# the page's language and keeps its state in the browser; the server never sees it.
KEYS_SWITCH = ('<label class="keys-switch"><input type="checkbox" id="keys-on" checked> '
               '<span id="keys-on-label"></span></label>')

# What Submit's note is placed in (evalkit.ui.form): the page script above fills it.
ANSWERED_NOTE = ('<button type="button" id="answered-note" class="answered-note" hidden></button>'
                 '<p id="status-echo" class="status-echo" aria-hidden="true" hidden></p>')

CSS = """
/* drawn inside the question's own box: an outline outside it was clipped by the form's overflow to one line, which
   read as underlining the question above */
.current-question { box-shadow: inset 0 0 0 3px #2563eb !important; border-radius: 8px; }
@media (forced-colors: active) { .current-question { outline: 3px solid CanvasText; outline-offset: -3px; } }
/* the answer the keyboard is on (Gradio draws no focus ring on its radios) */
fieldset input[type=radio]:focus-visible { outline: 2px solid #2563eb; outline-offset: 2px; }
/* and on the shortcuts' switch: Gradio's checkbox style draws no focus either */
#keys-on:focus-visible { outline: 2px solid #2563eb; outline-offset: 2px; }
/* the reveal's table on a phone: a number never breaks across lines, nor a word of a heading; the long cells wrap.
   (This sheet is on the page before any rating: no word of it may hint at a side, tests/test_app_leak.py) */
#reveal td:nth-child(n+3) { white-space: nowrap; }
#reveal, #reveal .prose { overflow-x: auto; }  /* what does not fit scrolls sideways, inside the reveal only */
#reveal th { word-break: keep-all; overflow-wrap: normal; }
/* on a phone the cells' own padding took 140 px of a 326 px box: the last column (the rate) went out of sight */
@media (max-width: 600px) { #reveal th, #reveal td { padding-left: 0.3em; padding-right: 0.3em; } }
#alive { display: none !important; }  /* the script's sign of life for the rater's hold, never a control of hers */
#keys { font-size: 0.85em; }
.keys-off #keys { display: none; }  /* the shortcuts are switched off: their line would mislead */
.keys-switch { font-size: 0.85em; display: inline-flex; gap: 0.4em; align-items: center; cursor: pointer; }
#live-table { overflow-x: auto; }  /* the Live tab's table on a phone: each cell on one line, the table scrolls */
#live-table td, #live-table th { white-space: nowrap; }
.status-echo { font-weight: 600; margin: 0.4em 0; }
/* the personal code the status line shows (welcome, My code): one click selects it whole. A double-click selected a
   word of it, stopping at its dot or a dash, and the part copied was refused on the other device */
#rate-status code { user-select: all; -webkit-user-select: all; }
.answered-note { background: none; border: none; padding: 0; color: inherit; text-decoration: underline; cursor: pointer;
  font-size: 0.9em; }
@media (max-width: 600px) { #keys { display: none; } }  /* a phone has no keyboard to speak of */
/* WCAG 2.2 SC 2.5.8: a tap target at least 24 x 24 CSS px. The guidelines' and Skip's toggles (Gradio's accordion
   headers), the answered note and the shortcuts' switch were 18-20 px tall, each right above the next control */
button.label-wrap, .answered-note, .keys-switch { min-height: 24px; }
.wrap input.border-none { min-height: 24px; }  /* a dropdown's own box (the Live tab's prompt), 20 px tall */
"""


def theme():
    """Gradio's default theme with contrast that passes WCAG AA (axe-core's color-contrast rule): darker primary
    buttons and accents, darker small print."""
    import gradio as gr

    return gr.themes.Default(primary_hue="blue").set(
        button_primary_background_fill="*primary_700", button_primary_background_fill_hover="*primary_800",
        button_primary_background_fill_dark="*primary_700", button_primary_text_color="white",
        color_accent="*primary_700", color_accent_soft="*primary_50", block_info_text_color="*neutral_600",
        body_text_color_subdued="*neutral_600", link_text_color="*primary_700",
    )
