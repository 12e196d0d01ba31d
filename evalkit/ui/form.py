"""The Rate tab's components, laid out for reading: each output's questions sit with its text (side by side on a
wide screen; on a phone, text A, its questions, text B, its questions, then the preference), questions in the
rater's language from the prompt file, the criterion's title in small print (never its id), and the keys that answer
them shown.

Components are held in a dataclass; handlers return dicts keyed by component, so no output list has a magic
order. Every label comes from `words` or the prompt file, so the language switch can change them all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..task.criteria import CRITERIA, Live, get
from ..task.prompts import Prompt
from .guidelines import guidelines
from .keys import ANSWERED_NOTE, KEYS_SWITCH
from .session import Session
from .words import LANGUAGES, preference_choices, value_choices, word

if TYPE_CHECKING:  # gradio is imported where it is used (it is slow to import)
    import gradio as gr

# The scoring form, in the order its values reach the submit handler (and the API): every registered criterion for
# output A, then for output B, then the preference and the optional comment. Read from the registry each time.
ANSWER_KEYS = Live(lambda: tuple(f"{side}_{c}" for side in ("a", "b") for c in CRITERIA))
FORM_KEYS = Live(lambda: (*ANSWER_KEYS, "preference", "comment"))
REQUIRED_KEYS = Live(lambda: (*ANSWER_KEYS, "preference"))  # Submit stays disabled until each has an answer


CODE_KEY = "evalkit-rater-code"  # the browser's localStorage key of the rater's sealed code (gr.BrowserState)

# An output box grows with its text up to this many lines (Gradio's default stops at 20 and scrolls inside the box, so
# the end of a long output, where an added promise often sits, was out of sight with no sign of it).
OUTPUT_MAX_LINES = 2000


def update(**props) -> dict:
    """A component update, as gr.update makes it (a plain dict), without importing gradio."""
    return {"__type__": "update", **props}


@dataclass
class RateTab:
    session: gr.State
    browser_code: gr.BrowserState  # the rater's personal code, kept in this browser so a reload resumes
    lang: gr.Radio
    keys_md: gr.Markdown
    status: gr.Markdown
    who: gr.Markdown
    signin_box: gr.Column
    signin: dict  # name, passcode, code, button, help (local) or login (Space)
    signout_btn: gr.Button
    guide_box: gr.Accordion
    guide: gr.Markdown
    pair_box: gr.Column
    prompt_md: gr.Markdown
    text_a: gr.Textbox
    text_b: gr.Textbox
    fields: dict  # FORM_KEYS -> component (radios, preference, comment)
    submit_btn: gr.Button
    reveal_md: gr.Markdown
    correct_btn: gr.Button
    next_btn: gr.Button
    skip_box: gr.Accordion
    skip_reason: gr.Textbox
    skip_btn: gr.Button
    done_md: gr.Markdown
    again_btn: gr.Button  # "Check again", under done_md when the pairs left are on other raters' screens
    code_btn: gr.Button  # "My code", beside Sign out: the personal code again, to sign in on another device
    draft_owner: gr.Textbox  # hidden: whose answers this browser may keep unsent (rate.draft_owner)
    draft_sent: gr.Textbox  # hidden: the kept answers' pair when they were on their way at a reload (rate._SENT_DRAFT)
    submission: gr.Textbox  # hidden: the id the page made for a submission (rate._SENDING, _KEPT_SUBMISSION)
    switches: gr.Textbox  # hidden: the page's count of language switches, sent with each (rate._SWITCH_SENT)
    alive_btn: gr.Button  # hidden by the page's CSS: its script presses it while the rater works (the hold renewed)

    @property
    def form(self) -> list:
        return [self.fields[k] for k in FORM_KEYS]

    @property
    def pair_outputs(self) -> list:
        """A new pair, or the 'all done' screen: next pair and skip."""
        return [self.session, self.status, self.who, self.guide_box, self.guide, self.pair_box, self.prompt_md,
                self.text_a, self.text_b, *self.form, self.submit_btn, self.reveal_md, self.correct_btn,
                self.next_btn, self.skip_box, self.skip_reason, self.done_md, self.again_btn]

    @property
    def signin_outputs(self) -> list:
        return [*self.pair_outputs, self.signin_box, self.browser_code, self.signout_btn, self.code_btn,
                self.draft_owner]

    @property
    def locked_outputs(self) -> list:
        """A stored submission: the reveal appears, and the locked form shows the answers as stored (an answer changed
        while the submission was on its way would otherwise show beside the reveal as if it had been sent)."""
        return [self.session, self.status, self.who, *self.form, self.submit_btn, self.reveal_md,
                self.correct_btn, self.next_btn, self.skip_box]

    @property
    def correct_outputs(self) -> list:
        return [self.session, self.status, *self.form, self.submit_btn, self.correct_btn]

    @property
    def language_outputs(self) -> list:
        """Everything with words on it."""
        return [self.session, self.status, self.who, self.reveal_md, self.done_md, self.keys_md, self.guide_box,
                self.guide, self.prompt_md, self.text_a, self.text_b, *self.form, self.submit_btn, self.correct_btn,
                self.next_btn, self.skip_box, self.skip_reason, self.skip_btn, self.signout_btn, self.code_btn,
                self.again_btn,
                *[c for k, c in self.signin.items() if k != "login"]]


def question_label(prompt: Prompt | None, key: str, lang: str) -> str:
    """A question in the rater's language, from the prompt file; the criterion's title when the prompt is unknown."""
    c = get(key.split("_", 1)[1])
    return c.question(prompt, lang) if prompt is not None else c.name(lang)


def labels(prompt: Prompt | None, lang: str) -> dict:
    """Label, choices and small print of every form field for this prompt and language."""
    out = {}
    for key in ANSWER_KEYS:
        side, cid = key.split("_", 1)
        out[key] = dict(label=f"{side.upper()} · {question_label(prompt, key, lang)}", info=get(cid).name(lang),
                        choices=value_choices(lang))
    out["preference"] = dict(label=word("preference", lang), choices=preference_choices(lang))
    out["comment"] = dict(label=word("comment", lang))
    return out


def labels_key(prompt: Prompt | None, lang: str) -> str:
    """What the labels on screen depend on: a pair of another prompt or a language switch changes them."""
    return lang + "|" + "|".join((prompt.criteria if prompt else {}).get(c, {}).get(lang, c) for c in CRITERIA)


def prompt_markdown(prompt: Prompt | None, prompt_id: str, lang: str) -> str:
    # the title a heading (as the outputs' labels are, keys.py): a screen reader's heading keys move from the prompt to
    # output A to output B, where bold text was no stop
    if prompt is None:
        return f"### {prompt_id}"
    colon = "：" if lang == "zh" else ": "
    return (f"### {prompt.title or prompt.id}\n\n{word('material', lang)}{colon}{prompt.material}\n\n"
            f"{word('task', lang)}{colon}{prompt.task}")


def layout(space: bool, prompt: Prompt | None, lang: str, passcodes: bool, signup: bool,
           signin_visible: bool = True, browser_secret: str | None = None) -> RateTab:
    """`browser_secret`: the key of Gradio's BrowserState encryption (public in the page config: what it guards is
    sealed by the server, evalkit.rating.seal); a stable one lets a stored code survive a restart."""
    import gradio as gr

    signin = {}
    fl = labels(prompt, lang)
    with gr.Row(equal_height=True):
        lang_radio = gr.Radio(LANGUAGES, value=lang, label="中文 / English", elem_id="lang", scale=1, min_width=240)
        with gr.Column(scale=3, min_width=240):
            keys_md = gr.Markdown(word("keys", lang), elem_id="keys")
            gr.HTML(KEYS_SWITCH, elem_id="keys-switch", padding=False, min_height=0)
    status = gr.Markdown(label="status", elem_id="rate-status")
    who = gr.Markdown(label="who", elem_id="rate-who")
    with gr.Column(visible=signin_visible) as signin_box:
        if space:
            signin["login"] = gr.LoginButton()
        else:
            signin["help"] = gr.Markdown(word("signin_help_open" if signup else "signin_help", lang))
            signin["name"] = gr.Textbox(label=word("new_name", lang), max_lines=1, elem_id="signin-name",
                                        visible=signup)
            signin["passcode"] = gr.Textbox(label=word("passcode", lang), type="password", max_lines=1,
                                            visible=signup and passcodes, elem_id="signin-passcode")
            signin["code"] = gr.Textbox(label=word("code", lang), type="password", max_lines=1, elem_id="signin-code")
            signin["button"] = gr.Button(word("sign_in", lang), variant="primary", elem_id="signin-button")
    with gr.Row():
        signout_btn = gr.Button(word("sign_out", lang), size="sm", visible=False, elem_id="signout")
        code_btn = gr.Button(word("my_code", lang), size="sm", visible=False, elem_id="my-code")
    with gr.Accordion(word("guidelines", lang), open=False, elem_id="guidelines") as guide_box:
        guide = gr.Markdown(guidelines(prompt, lang), label="guidelines", elem_id="guidelines-text")
    fields = {}
    with gr.Column(visible=False) as pair_box:
        prompt_md = gr.Markdown(label="prompt", elem_id="rate-prompt")
        texts = {}
        with gr.Row(elem_id="outputs"):
            for side in ("a", "b"):
                # min_width: two columns need 2 x 340 px; a phone gets them one under the other
                with gr.Column(min_width=340, elem_id=f"output-{side}"):
                    texts[side] = gr.Textbox(label=word("output", lang, side=side.upper()), interactive=False,
                                             lines=8, max_lines=OUTPUT_MAX_LINES, elem_id=f"text-{side}")
                    for c in CRITERIA:
                        key = f"{side}_{c}"
                        fields[key] = gr.Radio(**fl[key], elem_id=f"r-{key}", elem_classes=["question"])
        fields["preference"] = gr.Radio(**fl["preference"], elem_id="r-preference", elem_classes=["question"])
        fields["comment"] = gr.Textbox(**fl["comment"], max_lines=4, elem_id="comment")
        submit_btn = gr.Button(word("submit", lang), variant="primary", interactive=False, elem_id="submit")
        # "8 / 9 answered" and the status line's words when it is out of sight, filled in the page (keys.py)
        gr.HTML(ANSWERED_NOTE, elem_id="answered", padding=False)
        reveal_md = gr.Markdown(label="reveal", elem_id="reveal")
        with gr.Row():
            correct_btn = gr.Button(word("correct", lang), visible=False, elem_id="correct")
            next_btn = gr.Button(word("next", lang), variant="primary", visible=False, elem_id="next")
        with gr.Accordion(word("skip_box", lang), open=False) as skip_box:
            skip_reason = gr.Textbox(label=word("skip_reason", lang), info=word("skip_info", lang), max_lines=2,
                                     elem_id="skip-reason")
            skip_btn = gr.Button(word("skip", lang), elem_id="skip")
    done_md = gr.Markdown(label="done", elem_id="rate-done")
    again_btn = gr.Button(word("check_again", lang), visible=False, elem_id="check-again")
    draft_owner = gr.Textbox("", visible=False, elem_id="draft-owner")
    draft_sent = gr.Textbox("", visible=False, elem_id="draft-sent")
    submission = gr.Textbox("", visible=False, elem_id="submission")
    switches = gr.Textbox("", visible=False, elem_id="lang-switches")
    # rendered (a component with visible=False is not on the page, and the script could not press it), never shown
    alive_btn = gr.Button("still here", elem_id="alive")
    return RateTab(
        session=gr.State(Session(lang=lang, labels=labels_key(prompt, lang))),
        browser_code=gr.BrowserState("", storage_key=CODE_KEY, secret=browser_secret), lang=lang_radio, keys_md=keys_md,
        status=status, who=who, signin_box=signin_box, signin=signin, signout_btn=signout_btn, guide_box=guide_box,
        guide=guide, pair_box=pair_box, prompt_md=prompt_md, text_a=texts["a"], text_b=texts["b"], fields=fields,
        submit_btn=submit_btn, reveal_md=reveal_md, correct_btn=correct_btn, next_btn=next_btn, skip_box=skip_box,
        skip_reason=skip_reason, skip_btn=skip_btn, done_md=done_md, again_btn=again_btn, code_btn=code_btn,
        draft_owner=draft_owner, draft_sent=draft_sent, submission=submission, switches=switches,
        alive_btn=alive_btn,
    )


def _echoable(value, key: str, field: dict):
    """A value that may go to the page as it is (gradio's postprocessing is off for the form's events): one of the
    field's choices, or comment text that is valid Unicode; anything else clears. The language switch once echoed the
    client's form, and a lone surrogate in it made the event stream fail to encode (audit, 2026-12-02); it now sends
    labels only, and this still guards the values that do go (a stored rating put back for its correction)."""
    if key == "comment":
        if not isinstance(value, str):
            return ""
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return ""
        return value
    return value if value in {v for _label, v in field.get("choices", ())} else None


def relabel(ui: RateTab, prompt: Prompt | None, lang: str, values: dict | None = None, *,
            keep_values: bool = False) -> dict:
    """Form updates carrying new labels (and values: None clears; a value that is not one of the field's choices
    clears too). keep_values: labels only, the browser keeps whatever the fields hold when the update arrives (the
    language switch: an answer given while it is on its way is not set back to the one sent with it)."""
    fl = labels(prompt, lang)
    if keep_values:
        return {ui.fields[k]: update(**fl[k]) for k in FORM_KEYS}
    values = values or {}
    return {ui.fields[k]: update(value=_echoable(values.get(k), k, fl[k]), **fl[k]) for k in FORM_KEYS}


def words_update(ui: RateTab, prompt: Prompt | None, lang: str, submit_label: str) -> dict:
    """Every other label for a language switch (form fields keep their values: see rate.switch_language)."""
    out = {
        ui.keys_md: word("keys", lang), ui.guide_box: update(label=word("guidelines", lang)),
        ui.guide: guidelines(prompt, lang), ui.text_a: update(label=word("output", lang, side="A")),
        ui.text_b: update(label=word("output", lang, side="B")), ui.submit_btn: update(value=word(submit_label, lang)),
        ui.correct_btn: update(value=word("correct", lang)), ui.next_btn: update(value=word("next", lang)),
        ui.skip_box: update(label=word("skip_box", lang)), ui.skip_reason: update(label=word("skip_reason", lang),
                                                                              info=word("skip_info", lang)),
        ui.skip_btn: update(value=word("skip", lang)), ui.signout_btn: update(value=word("sign_out", lang)),
        ui.code_btn: update(value=word("my_code", lang)),
        ui.again_btn: update(value=word("check_again", lang)),
    }
    for key, wkey in (("name", "new_name"), ("passcode", "passcode"), ("code", "code")):
        if key in ui.signin:
            out[ui.signin[key]] = update(label=word(wkey, lang))
    if "button" in ui.signin:
        out[ui.signin["button"]] = update(value=word("sign_in", lang))
    if "help" in ui.signin:
        out[ui.signin["help"]] = word("signin_help_open" if ui.signin["name"].visible else "signin_help", lang)
    return out
