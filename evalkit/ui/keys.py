"""Keyboard rating, in the browser: one key per answer, the current question marked and moved on, so a rater
scores a pair without the mouse. Pure page behaviour: every key clicks the same control a mouse would, so the
server sees exactly the events it always sees (and checks them as always).

Keys (shown on the page, evalkit.ui.words "keys"): 1 / 2 / 3 answer the current question pass / fail / unsure and
move to the next; A / B / T choose the preference; Enter submits; N goes to the next pair; Esc goes back to the
first question. Keys typed into a text box stay text."""

SCRIPT = """
<script>
(() => {
  let current = 0;
  const questions = () => Array.from(document.querySelectorAll(".question"))
    .filter((q) => q.id !== "r-preference" && q.offsetParent !== null);
  const mark = () => {
    const qs = questions();
    qs.forEach((q, i) => q.classList.toggle("current-question", i === current));
    if (qs[current]) qs[current].scrollIntoView({block: "nearest"});
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
    if (q && q.id !== "r-preference" && e.isTrusted) {  // a mouse answer: carry on from the next question
      current = Math.min(questions().indexOf(q) + 1, questions().length - 1);
      mark();
    }
    if (e.target.closest && e.target.closest("#next")) { current = 0; setTimeout(mark, 300); }
  }, true);
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && t.offsetParent !== null && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "radio"))) return;
    const key = e.key.toLowerCase();
    const qs = questions();
    if (["1", "2", "3"].includes(key) && qs.length) {
      if (choose(qs[current], Number(key) - 1)) {
        current = Math.min(current + 1, qs.length - 1);
        mark();
        e.preventDefault();
      }
    } else if (["a", "b", "t"].includes(key)) {
      if (choose(document.getElementById("r-preference"), {a: 0, b: 1, t: 2}[key])) e.preventDefault();
    } else if (key === "enter") {
      if (press("submit")) e.preventDefault();
    } else if (key === "n") {
      // N right after submitting may come before the Next button is drawn: keep trying for a moment
      // rather than drop the key.
      e.preventDefault();
      let tries = 0;
      const attempt = () => {
        if (press("next")) { current = 0; setTimeout(mark, 300); }
        else if (++tries < 40) setTimeout(attempt, 50);
      };
      attempt();
    } else if (key === "escape") {
      current = 0; mark();
    }
  });
})();
</script>
"""

CSS = """
.current-question { outline: 3px solid #2563eb; outline-offset: 2px; border-radius: 8px; }
#keys { font-size: 0.85em; }
@media (max-width: 600px) { #keys { display: none; } }  /* a phone has no keyboard to speak of */
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
