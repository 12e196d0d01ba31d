"""Blindness, checked on the wire: everything the browser receives before a submission — the page HTML,
the rendered DOM, the app config and API info, every HTTP response body and every server-sent-event chunk
— holds no path name bound to a side, no timing, no token count, and no pair id. After the submission the
same collector does see the reveal, so the check can fail."""

import re

import pytest
from apphelpers import (  # noqa: F401
    answer_all, chromium_page, pair_shown, pool_db, pool_template, rows, served, shown_texts, sign_in, write_config,
)
# Browser-only module: without Playwright (a fast, minimal install) it is skipped, not an import error.
expect = pytest.importorskip("playwright.sync_api").expect  # the fast subset (-m "not browser") runs without it

from evalkit.config import load_config
from evalkit.task.prompts import load_prompts

# Tee every fetch() response body, streamed chunk by chunk (Gradio's queue results arrive as server-sent
# events over fetch), into a list the test reads back. Installed before any page script runs.
TEE_FETCH = """
(() => {
  const seen = (window.__evalkitSeen = []);
  // fetches not yet read to their end (all_received waits for none), but for Gradio's heartbeat, which stays open
  // as long as the page (it carries no event's data)
  window.__evalkitOpen = 0;
  const open = (window.__evalkitOpenUrls = new Map());  // what is still open, said if the wait runs out
  let n = 0;
  const fetch0 = window.fetch.bind(window);
  window.fetch = async (...args) => {
    const url = String((args[0] && args[0].url) || args[0]);
    const counted = !url.includes("/heartbeat/");
    const id = ++n;
    if (counted) { window.__evalkitOpen++; open.set(id, url); }
    const done = () => { if (counted) { window.__evalkitOpen--; open.delete(id); } };
    let resp;
    try { resp = await fetch0(...args); } catch (e) { done(); throw e; }
    let reading = false;
    try {
      const reader = resp.clone().body && resp.clone().body.getReader();
      if (reader) {
        const dec = new TextDecoder();
        reading = true;
        (async () => {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            seen.push(resp.url + "\\n" + dec.decode(value, { stream: true }));
          }
        })().catch(() => {}).finally(done);
      }
    } catch (e) {}
    if (!reading) done();
    return resp;
  };
})();
"""


def all_received(page) -> None:
    """Wait until every fetch the page made has been read to its end: Gradio's event stream closes once the session
    has no event pending, so what the server sent for the steps so far is all in the collector (a fixed wait could
    look too early on a loaded machine, and a leak in the last chunks went unseen)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        # two minutes, not Playwright's 30 s: under CI's two workers the stream once stayed open past 30 s after the
        # answers' own steps (their saves and signs of work) while the server worked through them
        page.wait_for_function("() => window.__evalkitOpen === 0", timeout=120_000)
    except PlaywrightTimeout:
        still = page.evaluate("() => [...window.__evalkitOpenUrls.values()]")
        raise AssertionError(f"fetches still being read when the wait ran out: {still}") from None


PATH = r"(?:ordinary|assisted|fallback|prompt[_ ]lookup)"
SIDE = r"(?<![A-Za-z0-9_])(?:output\s+)?[AB](?![A-Za-z0-9_])"
SEP = r"[\s|:=\-–—>→*\"',]{1,12}"
BINDINGS = [re.compile(SIDE + SEP + r"(?:is\s+|was\s+)?" + PATH, re.I),
            re.compile(PATH + SEP + r"(?:is\s+|was\s+|on\s+)?" + SIDE, re.I)]
HINT_WORDS = ["generate() s", "generate() 秒", "用时（秒）", "token/秒", "tokens/s", "new tokens", "新 token 数", "new_tokens", "generate_seconds",
              "Speed-up", "speedup", "加速比",
              "ordinary_side", "a_generation_id", "tokens_per_second", "stop_reason"]


@pytest.fixture
def cfg(tiny_models, tmp_path):
    # one rating a pair: a submission closes its pair, so the reveal comes at once (evalkit.rating.queue holds it
    # until the pair is closed; tests/test_security.py checks the hold)
    return load_config(write_config(tmp_path / "app.toml", tiny_models, ratings_per_pair=1))


class Collector:
    """Everything the browser received: response bodies (except the JS/CSS/fonts/images of Gradio's
    own front end, which hold no data), the fetch-stream chunks, the live DOM, and the config endpoints."""

    STATIC = ("javascript", "css", "font", "image", "svg", "wasm")

    def __init__(self, page, url):
        self.page, self.url, self.responses = page, url, []
        page.on("response", lambda r: self.responses.append(r))

    def texts(self) -> list[str]:
        out = []
        for r in self.responses:
            ct = r.headers.get("content-type", "")
            if any(s in ct for s in self.STATIC) or "event-stream" in ct:  # streams: read by the fetch tee
                continue
            out.append(f"{r.url}\n{r.body().decode('utf-8', 'replace')}")
        out += self.page.evaluate("window.__evalkitSeen")
        out.append(self.page.content())
        for endpoint in ("config", "gradio_api/info"):
            resp = self.page.request.get(self.url + endpoint)
            assert resp.ok, endpoint
            out.append(resp.text())
        return out


def _json_unescape(s: str) -> str:
    return s.replace('\\"', '"').replace("\\n", "\n").replace("\\u2014", "—").replace("\\u00d7", "×")


def leaks(blobs: list[str], pair_ids: list[str], generations: list[dict]) -> list[str]:
    found = []
    for blob in blobs:
        text = _json_unescape(blob)
        for rx in BINDINGS:
            found += [f"side bound to path: {m.group(0)!r}" for m in rx.finditer(text)]
        found += [f"hint word {w!r}" for w in HINT_WORDS if w in text]
        found += [f"pair id {p}" for p in pair_ids if p in text]
        for g in generations:
            s = g["generate_seconds"]
            for shown in (repr(s), f"{s:.3f}", f"{s:.4f}", f"{g['new_tokens'] / s:.1f} "):
                # as a number of its own: Gradio's event stream carries its own durations ("duration": 0.0254...),
                # which hold a generation's rounded time as a prefix by chance
                if re.search(r"(?<![\d.])" + re.escape(shown) + r"(?!\d)", text):
                    found.append(f"timing {shown!r} of generation {g['id']}")
        found += [f"token count: {m.group(0)!r}" for m in re.finditer(r"\b\d+\s*(?:new\s+)?tokens\b", text, re.I)]
    return found


@pytest.mark.browser
@pytest.mark.slow
def test_nothing_before_submit_gives_the_sides_away_and_the_reveal_arrives_after(cfg, pool_db):
    # A gold (check) pair comes first (the rater holds it on screen), then a study pair: neither may give away
    # what it is, or which side is which, before its rating is stored.
    from test_gold import _hold, with_gold

    gold, study = with_gold(pool_db)
    _hold(pool_db, "ann", gold["id"])
    notes = [r["note"] for r in rows(pool_db, "SELECT note FROM reference_outputs WHERE note != ''")]
    pair_ids = [p["id"] for p in rows(pool_db, "SELECT id FROM pairs")]
    generations = rows(pool_db, "SELECT id, generate_seconds, new_tokens FROM generations")
    with served(cfg, pool_db) as url, chromium_page(TEE_FETCH) as page:
        collect = Collector(page, url)
        sign_in(page, url, "ann")
        assert shown_texts(page) == (gold["a_text"], gold["b_text"])
        expect(page.locator("#guidelines-text")).to_be_visible()  # open on a rater's first pair
        answer_all(page)
        all_received(page)
        before_gold = collect.texts()
        found = leaks(before_gold, pair_ids, generations) + gold_marks(before_gold, notes)
        assert not found, found
        page.click("#submit")
        expect(page.locator("#reveal")).to_contain_text("检验题")  # her language: 中文
        all_received(page)
        assert gold_marks(collect.texts(), notes)  # the reveal, once the rating is stored, says what it was
        assert rows(pool_db, "SELECT pair_id FROM ratings WHERE rater = 'ann'") == [{"pair_id": gold["id"]}]
        _hold(pool_db, "ann", study["id"])  # next: a study pair
        page.click("#next")
        expect(page.locator("#text-a").locator("textarea, input").first).not_to_have_value(gold["a_text"])

        text_a, text_b = shown_texts(page)
        pair = pair_shown(pool_db, text_a, text_b)
        assert pair["id"] == study["id"]
        page.locator("#guidelines").get_by_text("评分指南").click()  # folded after the first pair: open it again
        expect(page.locator("#guidelines-text")).to_be_visible()
        answer_all(page)
        page.get_by_role("tab", name="Results").click()
        expect(page.get_by_text("评分对总数")).to_be_visible()
        page.get_by_role("tab", name="Rate · 评分").click()
        all_received(page)  # the last stream chunks have landed
        before = collect.texts()

        # The collector really holds what the server sent for this pair: its prompt's task is in no page or
        # config, it arrives only in the sign-in event's stream ...
        task = load_prompts(ids=[pair["prompt_id"]])[0].task
        streamed = page.evaluate("window.__evalkitSeen")
        assert any(task in chunk for chunk in streamed), "the fetch tee saw no event stream"
        assert not leaks(before, pair_ids, generations), leaks(before, pair_ids, generations)

        page.click("#submit")
        expect(page.locator("#reveal")).to_contain_text("用时（秒）")
        all_received(page)
        after = collect.texts()

    # ... and after the submission the same collector finds the reveal: sides bound to paths, and timings.
    found = leaks(after, pair_ids, generations)
    a_gen, b_gen = (rows(pool_db, "SELECT * FROM generations WHERE id = ?", [pair[k]])[0]
                    for k in ("a_generation_id", "b_generation_id"))
    assert any(f"side bound to path: 'A | {a_gen['path']}'" in f for f in found), found
    assert any(f"side bound to path: 'B | {b_gen['path']}'" in f for f in found), found
    assert any(f"timing '{a_gen['generate_seconds']:.3f}'" in f for f in found), found
    assert any("hint word 'token/秒'" in f for f in found), found
    assert not any(f.startswith("pair id") for f in found), "a pair id reached the browser"


def gold_marks(blobs: list[str], notes: list[str]) -> list[str]:
    """What would tell a gold pair: the reveal's words, a reference's note, its expected answers, the schema."""
    import re

    words = ["check pair", "检验题", "a_reference_id", "reference_outputs", *notes]
    found = []
    for blob in blobs:
        text = _json_unescape(blob)
        found += [f"gold mark {w!r}" for w in words if w in text]
        # "expected" as a word (the answers' key, the reveal's "A expected"): Gradio's own "Server stopped
        # unexpectedly.", which every page carries to say in the rater's language (words.GRADIO_MESSAGES), is none
        if re.search(r"(?<![A-Za-z])expected(?![A-Za-z])", text):
            found.append("gold mark 'expected'")
    return found
