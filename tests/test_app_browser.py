"""End to end in a real browser: Playwright drives Debian's Chromium (headless) through sign-in and two
ratings, checks the reveal appears only after submit, and saves screenshots to test-artifacts/."""

import pytest
from apphelpers import (  # noqa: F401
    ARTIFACTS, answer_all, chromium_page, pair_shown, pool_db, pool_template, rows, served, shown_texts, sign_in,
    write_config,
)
# Browser-only module: without Playwright (a fast, minimal install) it is skipped, not an import error.
expect = pytest.importorskip("playwright.sync_api").expect  # the fast subset (-m "not browser") runs without it

from evalkit.config import load_config


@pytest.fixture
def cfg(tiny_models, tmp_path):
    # one rating a pair: a submission closes its pair, so the reveal comes at once (evalkit.rating.queue holds it
    # until the pair is closed; tests/test_security.py checks the hold)
    return load_config(write_config(tmp_path / "app.toml", tiny_models, ratings_per_pair=1))


@pytest.mark.browser
@pytest.mark.slow
def test_rater_rates_two_pairs_and_sees_the_reveal_only_after_submit(cfg, pool_db):
    ARTIFACTS.mkdir(exist_ok=True)
    seen = []
    with served(cfg, pool_db) as url, chromium_page() as page:
        sign_in(page, url, "ann")
        expect(page.locator("#rate-who")).to_contain_text("ann")
        reveal = page.locator("#reveal")
        for n, preference in ((1, "A"), (2, "tie")):
            texts = shown_texts(page)
            pair = pair_shown(pool_db, *texts)
            assert pair["id"] not in [p["id"] for p in seen], "the same pair came twice"
            seen.append(pair)
            expect(page.locator("#rate-who")).to_contain_text(f"{n - 1} / ")
            answer_all(page, preference=preference)
            # Everything is answered, nothing is submitted: no reveal on the page, not even hidden.
            expect(reveal).not_to_contain_text("揭晓")
            html = page.content()
            assert "generate()" not in html and "tokens/s" not in html and "Speed-up" not in html and "加速比" not in html
            page.screenshot(path=str(ARTIFACTS / f"app-pair{n}-before-submit.png"), full_page=True)

            page.click("#submit")
            expect(reveal).to_contain_text("揭晓")
            a_path = "ordinary" if pair["ordinary_side"] == "A" else "assisted"
            b_path = "assisted" if a_path == "ordinary" else "ordinary"
            rows_shown = reveal.locator("tr")
            expect(rows_shown.filter(has_text=a_path).first).to_contain_text("A")
            expect(rows_shown.filter(has_text=b_path).first).to_contain_text("B")
            expect(page.locator("#submit")).to_be_hidden()
            expect(page.locator("#correct")).to_be_visible()
            expect(page.locator("#r-a_schedule input[value='pass']")).to_be_disabled()  # locked after submit
            page.screenshot(path=str(ARTIFACTS / f"app-pair{n}-reveal.png"), full_page=True)
            if n == 2:  # Correct unlocks the form; Next pair then leaves the stored rating as it is
                page.click("#correct")
                expect(page.locator("#r-a_schedule input[value='pass']")).to_be_enabled()
                expect(page.locator("#submit")).to_be_enabled()
            page.click("#next")
            expect(reveal).not_to_contain_text("揭晓")
        expect(page.locator("#rate-who")).to_contain_text("2 / ")

    stored = rows(pool_db, "SELECT rater, pair_id, preference, a_schedule, b_schedule FROM current_ratings ORDER BY id")
    assert stored == [
        {"rater": "ann", "pair_id": seen[0]["id"], "preference": "A", "a_schedule": "pass", "b_schedule": "fail"},
        {"rater": "ann", "pair_id": seen[1]["id"], "preference": "tie", "a_schedule": "pass", "b_schedule": "fail"},
    ]
    assert (ARTIFACTS / "app-pair2-reveal.png").stat().st_size > 10_000


@pytest.mark.browser
@pytest.mark.slow
def test_a_live_run_refused_by_the_hourly_limit_says_when_to_run_again_with_no_error_badge(tiny_models, tmp_path,
                                                                                           pool_db):  # noqa: F811
    """Demo audit, 2026-12-05: the second click past app.live_runs_per_hour put a red "Error" badge over both output
    boxes and across the status line, as if the app had crashed, and the status said "wait 3598 s". The refusal now
    reads as words on the status line and a warning, with the clock time the next run can start."""
    cfg = load_config(write_config(tmp_path / "app.toml", tiny_models, live_runs_per_hour=1))
    with served(cfg, pool_db) as url, chromium_page() as page:
        page.goto(url)
        page.get_by_role("tab", name="Live demo · 现场演示").click()
        run = page.get_by_role("button", name="Run both paths · 两条路径都运行")
        run.click()
        expect(page.locator("#live-table")).to_contain_text("This run only")
        run.click()
        status = page.get_by_text("Not run:")
        expect(status).to_contain_text("hourly limit is reached")
        expect(status).to_contain_text("the next run can start at")
        expect(status).to_contain_text("起可以再次运行")
        expect(page.locator(".toast-body")).to_be_visible()  # the event has ended: its toast is up
        expect(page.locator(".toast-body.warning")).to_be_visible()
        expect(page.get_by_text("Error", exact=True)).to_have_count(0)
        page.screenshot(path=str(ARTIFACTS / "live-hourly-limit.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.slow
def test_the_live_run_button_is_disabled_and_says_so_while_its_run_goes_on(tiny_models, tmp_path, pool_db,
                                                                          monkeypatch):  # noqa: F811
    """Demo audit, 2026-12-05: a second click on Run while a run went on was dropped without a word (the button
    looked ready, and nothing happened). The button now says the run is under way, and is disabled until it ends."""
    import threading

    import evalkit.generation.paths as paths

    gate, real = threading.Event(), paths.run_path

    def held(*args, **kwargs):  # the run waits for the test (bounded), so the page is seen while it goes on
        gate.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(paths, "run_path", held)
    cfg = load_config(write_config(tmp_path / "app.toml", tiny_models))
    with served(cfg, pool_db) as url, chromium_page() as page:
        page.goto(url)
        page.get_by_role("tab", name="Live demo · 现场演示").click()
        page.get_by_role("button", name="Run both paths · 两条路径都运行").click()
        running = page.get_by_role("button", name="Running… (Stop ends it) · 运行中…（按“停止”可结束）")
        expect(running).to_be_disabled()
        expect(page.get_by_text("Running the ordinary path")).to_be_visible()  # the run is under way, held
        expect(running).to_be_disabled()
        gate.set()
        expect(page.locator("#live-table")).to_contain_text("This run only")
        expect(page.get_by_role("button", name="Run both paths · 两条路径都运行")).to_be_enabled()
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM experiments WHERE kind = 'live'")[0]["n"] == 1


@pytest.mark.browser
def test_the_results_tab_s_first_opening_shows_its_computation_s_steps_on_the_page(cfg, pool_db, monkeypatch):
    """Demo walk, 2026-12-06: Gradio draws an event's progress over its outputs, and on the tab's first opening they
    are all empty (the tables hidden): the steps reached the page but nothing was drawn, and the organiser saw a blank
    tab for as long as the computation took. The counts' box keeps room for it: the step's words are drawn there."""
    import threading

    import evalkit.progress as progress
    from evalkit.aggregate import STEPS
    from evalkit.rating import roster
    from evalkit.store import open_db
    from evalkit.ui.words import word

    go, step = threading.Event(), progress.step

    def held(name):  # the gate's analysis held while the page is looked at
        step(name)
        if name == STEPS[1]:
            go.wait(60)

    monkeypatch.setattr(progress, "step", held)
    db = open_db(pool_db)
    code = roster.add(db, "olga", organiser=True).code
    db.conn.close()
    # the deepest element in the counts' box holding the step's words, and whether it is what the page shows there
    drawn = """(words) => { const el = [...document.querySelectorAll('#results-counts *')].reverse()
        .find((e) => e.textContent.includes(words));
      if (!el) return false;
      const r = el.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
      if (!r.width || !r.height) return false;
      for (let a = el.parentElement; a; a = a.parentElement) {  // not cut off by a box around it (of no height)
        const c = a.getBoundingClientRect();
        if (getComputedStyle(a).overflow !== 'visible' && !(c.top <= y && y <= c.bottom && c.left <= x && x <= c.right))
          return false;
      }
      return true; }"""
    try:
        with served(cfg, pool_db) as url, chromium_page() as page:
            page.goto(f"{url}?invite={code}")
            expect(page.locator("#rate-who")).to_contain_text("olga")
            page.get_by_role("tab", name="Results").first.click()
            page.wait_for_function(drawn, arg=word(STEPS[1], "zh"), timeout=60_000)
            go.set()
            expect(page.locator("#results-counts")).to_contain_text("评分对总数")
    finally:
        go.set()
