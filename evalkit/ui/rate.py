"""The Rate tab: sign in, get a blind pair, score it, submit, see the reveal, correct, skip.

Blindness: the browser gets the two texts, labelled A and B, and the prompt. The pair id lives in the
server-side `Session` (gr.State); the reveal is rendered only after a stored submission. Handlers return
dicts keyed by component, so no output list has a magic order.

Cost, with many raters at once: Gradio rebuilds a component on the server for every `gr.update` output, and for
every declared output a handler leaves out (a `gr.skip()` goes the same way); a plain value is cheap. So each
event declares only the outputs it changes, submit and next pair return every one of them (tests/test_app_client.py
checks this), and what is pure page state (locking the form, enabling Submit) is set in the browser, without a
server round trip. The server never relies on it: a locked rating is refused by the server-side session.
"""

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from ..config import Config
from ..limits import RateLimiter
from ..prompts import CRITERIA, Prompt
from ..ratings import (
    RatingError, RatingInput, answers_from_row, clean_comment, correct_rating, current_rating, next_pair, progress,
    reveal, skip_pair, submit_rating,
)
from . import auth
from .db import connect
from .errors import friendly, inert
from .guidelines import guidelines
from .reveal import render
from .session import Session

# The scoring form, in the order its values reach the submit handler (and the API): every criterion for
# output A, then for output B, then the preference and the optional comment.
ANSWER_KEYS = tuple(f"{side}_{c}" for side in ("a", "b") for c in CRITERIA)
FORM_KEYS = ANSWER_KEYS + ("preference", "comment")
REQUIRED_KEYS = ANSWER_KEYS + ("preference",)  # Submit stays disabled until each has an answer


@dataclass
class RateTab:
    session: gr.State
    browser_code: gr.BrowserState  # the rater's personal code, kept in this browser so a reload resumes
    status: gr.Markdown
    who: gr.Markdown
    signin_box: gr.Column
    signout_btn: gr.Button
    pair_box: gr.Column
    prompt_md: gr.Markdown
    guide_zh: gr.Markdown
    guide_en: gr.Markdown
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

    @property
    def form(self) -> list:
        return [self.fields[k] for k in FORM_KEYS]

    @property
    def pair_outputs(self) -> list:
        """A new pair, or the 'all done' screen: next pair and skip."""
        return [self.session, self.status, self.who, self.pair_box, self.prompt_md, self.guide_zh, self.guide_en,
                self.text_a, self.text_b, *self.form, self.submit_btn, self.reveal_md, self.correct_btn,
                self.next_btn, self.skip_box, self.skip_reason, self.done_md]

    @property
    def signin_outputs(self) -> list:
        return [*self.pair_outputs, self.signin_box, self.browser_code, self.signout_btn]

    @property
    def locked_outputs(self) -> list:
        """A stored submission: the reveal appears; the comment shows as stored (the answers are stored as sent)."""
        return [self.session, self.status, self.who, self.fields["comment"], self.submit_btn, self.reveal_md,
                self.correct_btn, self.next_btn, self.skip_box]

    @property
    def correct_outputs(self) -> list:
        return [self.session, self.status, *self.form, self.submit_btn, self.correct_btn]


def _radio_label(key: str) -> str:
    side, cid = key.split("_", 1)
    return f"{side.upper()} · {cid}"


def _layout(space: bool, default_prompt: Prompt | None, passcodes: bool, signup: bool) -> tuple[RateTab, dict]:
    signin = {}
    status = gr.Markdown(label="status", elem_id="rate-status")
    who = gr.Markdown(label="who", elem_id="rate-who")
    with gr.Column() as signin_box:
        if space:
            signin["login"] = gr.LoginButton()
        else:
            gr.Markdown("Sign in with the personal code (or link) from the study organiser"
                        + (", or pick a new name" if signup else "") + ". · 请输入组织者发给你的个人代码"
                        + ("，或填写一个新名字" if signup else "") + "。", elem_id="signin-help")
            signin["name"] = gr.Textbox(label="New name · 新名字", max_lines=1, elem_id="signin-name",
                                        visible=signup)
            signin["passcode"] = gr.Textbox(label="Passcode · 口令", type="password", max_lines=1,
                                            visible=signup and passcodes, elem_id="signin-passcode")
            signin["code"] = gr.Textbox(label="Personal code · 个人代码", type="password", max_lines=1,
                                        elem_id="signin-code")
            signin["button"] = gr.Button("Sign in · 登录", variant="primary", elem_id="signin-button")
    signout_btn = gr.Button("Sign out · 退出", size="sm", visible=False, elem_id="signout")
    with gr.Accordion("Guidelines · 评分指南", open=False, elem_id="guidelines"):
        guide_zh = gr.Markdown(guidelines(default_prompt, "zh"), label="guidelines zh")
        with gr.Accordion("English", open=False):
            guide_en = gr.Markdown(guidelines(default_prompt, "en"), label="guidelines en")
    with gr.Column(visible=False) as pair_box:
        prompt_md = gr.Markdown(label="prompt", elem_id="rate-prompt")
        with gr.Row():
            text_a = gr.Textbox(label="Output A", interactive=False, lines=8, elem_id="text-a")
            text_b = gr.Textbox(label="Output B", interactive=False, lines=8, elem_id="text-b")
        fields = {}
        with gr.Row():
            for side in ("a", "b"):
                with gr.Column():
                    gr.Markdown(f"#### Output {side.upper()}")
                    for c in CRITERIA:
                        key = f"{side}_{c}"
                        fields[key] = gr.Radio(["pass", "fail", "unsure"], label=_radio_label(key), elem_id=f"r-{key}")
        fields["preference"] = gr.Radio(["A", "B", "tie"], label="Preference · 偏好", elem_id="r-preference")
        fields["comment"] = gr.Textbox(label="Comment (optional) · 备注", max_lines=4, elem_id="comment")
        submit_btn = gr.Button("Submit · 提交", variant="primary", interactive=False, elem_id="submit")
        reveal_md = gr.Markdown(label="reveal", elem_id="reveal")
        with gr.Row():
            correct_btn = gr.Button("Correct · 修改", visible=False, elem_id="correct")
            next_btn = gr.Button("Next pair · 下一对", variant="primary", visible=False, elem_id="next")
        with gr.Accordion("Skip this pair · 跳过", open=False) as skip_box:
            skip_reason = gr.Textbox(label="Why skip? · 跳过原因", max_lines=2, elem_id="skip-reason")
            skip_btn = gr.Button("Skip · 跳过", elem_id="skip")
    done_md = gr.Markdown(label="done", elem_id="rate-done")
    tab = RateTab(
        session=gr.State(Session()), browser_code=gr.BrowserState("", storage_key="evalkit-rater-code"),
        status=status, who=who, signin_box=signin_box, signout_btn=signout_btn, pair_box=pair_box,
        prompt_md=prompt_md, guide_zh=guide_zh, guide_en=guide_en, text_a=text_a, text_b=text_b, fields=fields,
        submit_btn=submit_btn, reveal_md=reveal_md, correct_btn=correct_btn, next_btn=next_btn, skip_box=skip_box,
        skip_reason=skip_reason, skip_btn=skip_btn, done_md=done_md,
    )
    return tab, signin


def _form_interactive(on: bool) -> str:
    """Browser-only (no server round trip): lock or unlock the scoring form."""
    return f"() => Array({len(FORM_KEYS)}).fill({{__type__: 'update', interactive: {str(on).lower()}}})"


# Browser-only: Submit is enabled only when every criterion of both outputs and the preference have an answer.
# (The server checks again on submit: this only spares the rater a refused submission.)
_READY = "(...answers) => ({__type__: 'update', interactive: answers.every(Boolean)})"


def _prompt_markdown(prompt: Prompt | None, prompt_id: str) -> str:
    if prompt is None:
        return f"**Prompt** `{prompt_id}`"
    return f"**{prompt.title or prompt.id}**\n\n资料：{prompt.material}\n\n任务：{prompt.task}"


def build_rate_tab(demo: gr.Blocks, cfg: Config, db_path: Path, prompts: dict[str, Prompt], space: bool) -> RateTab:
    app = cfg.app
    rpp = app.ratings_per_pair
    default_prompt = next(iter(prompts.values()), None)
    ui, signin = _layout(space, default_prompt, bool(app.passcodes), app.signup == "open")
    limiter = RateLimiter(app.max_submissions_per_minute)  # ratings, corrections and skips, per identity
    doorman = auth.Doorman(app, db_path, space)

    def signed_in(s: Session) -> str:
        if not s.rater:
            raise RatingError("you are not signed in", "sign in at the top of the Rate tab")
        return s.rater

    def form_update(values: dict | None = None) -> dict:
        values = values or {}
        return {ui.fields[k]: values.get(k, "" if k == "comment" else None) for k in FORM_KEYS}

    def who_line(db, s: Session) -> str:
        done, total = progress(db, s.rater, rpp)
        role = " (organiser)" if s.organiser else ""
        return f"Signed in as **{inert(s.rater)}**{role} · progress **{done} / {total}**"

    def pair_screen(db, s: Session, status: str = "") -> dict:
        """The next pair for this rater, or the 'all done' screen (ui.pair_outputs)."""
        view = next_pair(db, s.rater, rpp)
        s = s.with_pair(view.pair_id if view else None)
        upd = {ui.session: s, ui.status: status, ui.who: who_line(db, s), ui.reveal_md: "",
               ui.correct_btn: gr.update(visible=False), ui.next_btn: gr.update(visible=False), ui.skip_reason: "",
               ui.text_a: view.text_a if view else "", ui.text_b: view.text_b if view else ""}
        if view is None:  # what is left out stays as it is (gr.skip), hidden with the pair box
            return upd | {ui.pair_box: gr.update(visible=False),
                          ui.done_md: "**No pairs left for you.** Thank you! · 你的评分任务已全部完成，谢谢！"}
        prompt = prompts.get(view.prompt_id)
        return upd | form_update() | {
            ui.pair_box: gr.update(visible=True), ui.done_md: "",
            ui.prompt_md: _prompt_markdown(prompt, view.prompt_id),
            ui.guide_zh: guidelines(prompt, "zh"), ui.guide_en: guidelines(prompt, "en"),
            ui.submit_btn: gr.update(value="Submit · 提交", interactive=False, visible=True),
            ui.skip_box: gr.update(visible=True),
        }

    def locked_screen(db, s: Session, status: str, comment: str) -> dict:
        """A stored submission (ui.locked_outputs); the browser locks the form when it succeeds."""
        return {ui.session: s, ui.status: status, ui.who: who_line(db, s), ui.fields["comment"]: comment,
                ui.reveal_md: render(reveal(db, s.pair_id, cfg.bench.length_tolerance)),
                ui.submit_btn: gr.update(visible=False, interactive=False),
                ui.correct_btn: gr.update(visible=True), ui.next_btn: gr.update(visible=True),
                ui.skip_box: gr.update(visible=False)}

    # --- handlers -----------------------------------------------------------------------------------

    def signed_in_screen(identity, code: str, status: str = "") -> dict:
        s = Session(rater=identity.name, organiser=identity.organiser)
        with connect(db_path) as db:
            return pair_screen(db, s, status) | {ui.signin_box: gr.update(visible=False), ui.browser_code: code,
                                                 ui.signout_btn: gr.update(visible=not space)}

    @friendly
    def sign_in_local(s: Session, name: str, passcode: str, code: str, request: gr.Request) -> dict:
        identity, new_code = doorman.local(name, code, passcode, auth.client_key(request, space))
        status = "" if new_code is None else (
            f"Welcome, {inert(identity.name)}. Your personal code is `{new_code}`: this browser remembers it; note "
            "it down to continue on another device. · 这是你的个人代码，请记下以便在其他设备上继续。")
        return signed_in_screen(identity, new_code or code.strip(), status)

    @friendly
    def resume_local(s: Session, stored: str, request: gr.Request) -> dict:
        """Page load: an invitation link (?invite=CODE), else the code this browser kept, signs in at once."""
        invite = (request.query_params.get("invite") or "").strip() if request is not None else ""
        code = invite or (stored if isinstance(stored, str) else "")
        identity = doorman.resume(code, auth.client_key(request, space)) if code else None
        if identity is None:
            return {ui.browser_code: "", ui.status: "Invitation link not valid. · 邀请链接无效。" if invite else ""}
        return signed_in_screen(identity, code)

    @friendly
    def sign_in_space(s: Session, profile: gr.OAuthProfile | None) -> dict:
        if profile is None:  # page load before signing in: just show the button
            return {ui.status: "Sign in with your Hugging Face account to start rating."}
        return signed_in_screen(doorman.space_identity(profile), "")

    def sign_out(s: Session) -> dict:
        return {ui.session: Session(), ui.browser_code: "", ui.signin_box: gr.update(visible=True),
                ui.signout_btn: gr.update(visible=False), ui.pair_box: gr.update(visible=False),
                ui.who: "", ui.done_md: "", ui.status: "Signed out. · 已退出。"}

    @friendly
    def next_screen(s: Session) -> dict:
        signed_in(s)
        if s.pair_id is not None and s.rating_id is None:
            raise RatingError("this pair is not rated yet", "submit it, or skip it with a reason")
        with connect(db_path) as db:
            return pair_screen(db, s)

    @friendly
    def submit(s: Session, *values) -> dict:
        rater = signed_in(s)
        if s.pair_id is None:
            raise RatingError("there is no pair on screen", "press Next pair, or reload the page")
        if s.locked:
            raise RatingError("this rating is already stored and locked", "use Correct to change it")
        form = dict(zip(FORM_KEYS, values, strict=True))
        limiter.check(f"rater:{rater}")
        inp = RatingInput(
            pair_id=s.pair_id, rater=rater,
            a={c: form[f"a_{c}"] for c in CRITERIA}, b={c: form[f"b_{c}"] for c in CRITERIA},
            preference=form["preference"] or "", comment=form["comment"] or "", client_token=s.token,
        )
        with connect(db_path) as db:
            if s.correcting:  # the reveal has been shown: kept, but the blind rating is the one that counts
                rating_id = correct_rating(db, app, s.rating_id, inp, after_reveal=True)
                note = ("Correction stored as made after the reveal: it is kept for the organisers, and your blind "
                        "rating is the one that counts. · 揭晓后的修改已保存，但计分仍以揭晓前的评分为准。")
            else:
                rating_id = submit_rating(db, app, inp)
                note = "Rating stored. · 评分已保存。"
            return locked_screen(db, s.stored(rating_id), note, clean_comment(inp.comment, app))

    @friendly
    def start_correction(s: Session) -> dict:
        rater = signed_in(s)
        if s.rating_id is None:
            raise RatingError("there is no stored rating to correct on screen", "submit the pair first")
        with connect(db_path) as db:
            row = current_rating(db, rater, s.pair_id)
        if row is None:
            raise RatingError("your rating of this pair was not found", "reload the page")
        s = s.stored(row["id"]).correcting_now()
        # the stored answers (the browser unlocks the form when this succeeds)
        return form_update(_stored_form(row)) | {
            ui.session: s, ui.status: "Change your answers, then press **Save correction**. You have seen the reveal, "
                                      "so the correction is kept as a note: your blind rating still counts. · "
                                      "揭晓后的修改只作记录，不改变计分。",
            ui.submit_btn: gr.update(value="Save correction · 保存修改", visible=True, interactive=True),
            ui.correct_btn: gr.update(visible=False)}  # Next pair leaves the stored version as it is

    @friendly
    def skip(s: Session, reason: str) -> dict:
        rater = signed_in(s)
        if s.pair_id is None or s.rating_id is not None:
            raise RatingError("there is no unrated pair on screen to skip", "press Next pair")
        limiter.check(f"rater:{rater}")
        with connect(db_path) as db:
            skip_pair(db, app, rater, s.pair_id, reason, client_token=s.token)
            return pair_screen(db, s, "Skipped; the reason is stored. · 已跳过。")

    # --- wiring -------------------------------------------------------------------------------------

    out = ui.signin_outputs
    if space:  # the OAuth round trip reloads the page: sign in from the profile on every load
        demo.load(sign_in_space, [ui.session], out, api_name="sign_in")
    else:
        sign_in_inputs = [ui.session, signin["name"], signin["passcode"], signin["code"]]
        signin["button"].click(sign_in_local, sign_in_inputs, out, api_name="sign_in")
        for box in ("name", "passcode", "code"):
            signin[box].submit(sign_in_local, sign_in_inputs, out, api_visibility="undocumented")
        demo.load(resume_local, [ui.session, ui.browser_code], out, api_visibility="undocumented")
        ui.signout_btn.click(sign_out, [ui.session], [ui.session, ui.browser_code, ui.signin_box, ui.signout_btn,
                                                      ui.pair_box, ui.who, ui.done_md, ui.status], api_name="sign_out")
    # The handlers return finished text (Markdown without indentation) and None: Gradio's postprocess would only
    # spend a thread hop on each output. Submit's values reach the library as sent, and it checks every one
    # (evalkit.ratings._validate): the per-input preprocess goes too.
    lock, unlock = _form_interactive(False), _form_interactive(True)
    ui.submit_btn.click(submit, [ui.session, *ui.form], ui.locked_outputs, api_name="submit", preprocess=False,
                        postprocess=False).success(None, None, ui.form, js=lock)
    ui.correct_btn.click(start_correction, [ui.session], ui.correct_outputs, api_name="correct", postprocess=False
                         ).success(None, None, ui.form, js=unlock)
    ui.next_btn.click(next_screen, [ui.session], ui.pair_outputs, api_name="next_pair", postprocess=False
                      ).success(None, None, ui.form, js=unlock)
    ui.skip_btn.click(skip, [ui.session, ui.skip_reason], ui.pair_outputs, api_name="skip",  # the form is unlocked
                      postprocess=False)
    answers = [ui.fields[k] for k in REQUIRED_KEYS]
    # .input fires on the rater's own clicks only; the handlers above set the button for programmatic resets
    gr.on([c.input for c in answers], None, answers, ui.submit_btn, js=_READY, api_visibility="private")
    return ui


def _stored_form(row: dict | None) -> dict:
    if row is None:
        return {}
    a, b = answers_from_row(row)
    values = {f"a_{c}": v for c, v in a.items()} | {f"b_{c}": v for c, v in b.items()}
    return values | {"preference": row["preference"], "comment": row["comment"]}
