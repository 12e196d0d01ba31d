"""When the queue moves under a rater (others filled her pair, another tab of hers rated it, every open pair is on
someone else's screen), the Rate tab says so and offers a button that is on screen: never a message naming a button
she cannot see, never "finished" while pairs are still to be rated. The handlers are called directly
(tests/test_rate_handlers.py's Tab): one Session is one browser tab."""

import sqlite3

from test_rate_handlers import pooled_tab

from evalkit.rating.queue import HOLD_MINUTES
from evalkit.ui.session import Session
from evalkit.ui.words import word


def _away(tab, rater: str) -> None:
    """The rater left her pair on screen for longer than a hold lasts: it may be offered to someone else."""
    with sqlite3.connect(tab.db_path) as conn:
        conn.execute("UPDATE assignments SET shown_at = '2000-01-01T00:00:00.000+00:00' WHERE rater = ?", [rater])


def _visible(v) -> bool | None:
    return v.get("visible") if isinstance(v, dict) else None


def _ratings(tab) -> list[tuple]:
    with sqlite3.connect(tab.db_path) as conn:
        return conn.execute("SELECT rater, preference FROM ratings ORDER BY id").fetchall()


def test_a_pair_filled_while_she_was_away_offers_next_pair_on_screen(tmp_path):
    tab = pooled_tab(tmp_path, 1)
    ui = tab.ui
    ann, _ = tab.sign_in("ann")
    _away(tab, "ann")
    bob, shown = tab.sign_in("bob")  # her hold has lapsed: bob gets the pair and fills it
    assert shown[ui.text_a]
    tab.h.submit(bob, *tab.form())
    late = tab.h.submit(ann, *tab.form(preference="B"))  # no Error: the screen says what happened, what to press
    assert late[ui.status] == word("pair_taken", "zh")
    assert _visible(late[ui.next_btn]) is True
    assert _visible(late[ui.submit_btn]) is False and _visible(late[ui.correct_btn]) is False
    done = tab.h.next_screen(late[ui.session])  # the button it names works: here, the end of the queue
    assert done[ui.done_md] and done[ui.text_a] == ""
    assert _ratings(tab) == [("bob", "A")]


def test_a_second_tab_that_rated_the_pair_already_gets_correct_on_screen(tmp_path):
    tab = pooled_tab(tmp_path, 1, ratings_per_pair=2)
    ui = tab.ui
    first, shown = tab.sign_in("ann")
    # the same rater in a second tab, on the same pair (a reload resumes the pair she holds)
    second = tab.h.resume_local(Session(), shown[ui.browser_code], None)[ui.session]
    assert second.pair_id == first.pair_id
    tab.h.submit(first, *tab.form(preference="A"))
    late = tab.h.submit(second, *tab.form(preference="B"))
    assert late[ui.status] == word("rated_elsewhere", "zh")
    assert _visible(late[ui.correct_btn]) is True and _visible(late[ui.next_btn]) is True
    opened = tab.h.start_correction(late[ui.session])  # Correct, as the message says, opens the stored rating
    assert opened[ui.fields["preference"]] == "A"
    tab.h.submit(opened[ui.session], *tab.form(preference="B"))
    assert _ratings(tab) == [("ann", "A"), ("ann", "B")]


def test_pairs_on_other_raters_screens_are_not_called_finished(tmp_path):
    tab = pooled_tab(tmp_path, 1)
    ui = tab.ui
    tab.sign_in("ann")  # ann holds the only pair
    bob, screen = tab.sign_in("bob")
    assert "0 / 1" in screen[ui.who]
    assert word("held_by_others", "zh", left=1, minutes=HOLD_MINUTES) in screen[ui.done_md]
    assert word("done", "zh") not in screen[ui.done_md]
    assert _visible(screen[ui.again_btn]) is True
    still = tab.h.next_screen(bob)  # Check again while ann still holds it: the same words, the button stays
    assert _visible(still[ui.again_btn]) is True and still[ui.text_a] == ""
    _away(tab, "ann")
    again = tab.h.next_screen(still[ui.session])
    assert again[ui.text_a] and _visible(again[ui.again_btn]) is False
    assert _visible(again[ui.pair_box]) is True


def test_a_rater_with_nothing_left_is_told_she_is_done(tmp_path):
    tab = pooled_tab(tmp_path, 1)
    ui = tab.ui
    ann, _ = tab.sign_in("ann")
    done = tab.h.submit(ann, *tab.form())
    end = tab.h.next_screen(done[ui.session])
    assert end[ui.done_md].startswith(word("done", "zh")) and _visible(end[ui.again_btn]) is False
