"""Assignment, blind views, submission, correction, skip and reveal, on a real SQLite file."""

import dataclasses
import re

import pytest

from evalkit.config import AppConfig
from evalkit.task.prompts import CRITERIA
from evalkit.rating import queue as ratings
from evalkit.rating.queue import (
    RatingError, RatingInput, correct_rating, counts, current_rating, next_pair, pair_view, progress, results_open,
    reveal, skip_pair, submit_rating,
)
from evalkit.records import GenerationRecord
from evalkit.store import insert_experiment, insert_pairs, open_db
from apphelpers import pool_db, pool_template  # noqa: F401

APP = AppConfig(ratings_per_pair=2, max_comment_chars=50)


def make_pool(db, n=4, sides="ABAB"):
    exp = insert_experiment(db, "pool", {}, {})
    pairs = []
    for i in range(n):
        o = GenerationRecord(prompt_id="writing-01", path="ordinary", text=f"ordinary text {i}", new_tokens=40,
                             stop_reason="eos", generate_seconds=2.0)
        a = GenerationRecord(prompt_id="writing-01", path="assisted", text=f"assisted text {i}", new_tokens=40 + i,
                             stop_reason="eos" if i < 3 else "max_new_tokens", generate_seconds=1.0)
        pairs.append({"prompt_id": "writing-01", "sample": i, "ordinary": o, "assisted": a, "ordinary_side": sides[i % len(sides)]})
    return insert_pairs(db, exp, pairs)


@pytest.fixture
def db(tmp_path):
    return open_db(tmp_path / "r.db")


def answers(v="pass"):
    return {c: v for c in CRITERIA}


def rate(db, view, rater, pref="A", token=None, **kw):
    return submit_rating(db, APP, RatingInput(view.pair_id, rater, answers(), answers("fail"), pref, client_token=token, **kw))


def test_a_view_shows_a_stored_request_only_when_both_sides_answered_the_same_one(db):
    """A pool resumed after its prompt file was edited can hold a pair whose two generations answered different
    requests: the view showing side A's would tell which output answered the material on screen. It shows neither
    (the app falls back to the prompt file), whichever side each generation is on."""
    from evalkit.task.prompts import load_prompts, prompt_record

    prompt = next(p for p in load_prompts() if p.id == "writing-01")
    edited = dataclasses.replace(prompt, material="另一份资料")
    exp = insert_experiment(db, "pool", {}, {})

    def made(path, p):
        return GenerationRecord(prompt_id="writing-01", path=path, text=path, new_tokens=4, stop_reason="eos",
                                generate_seconds=1.0, effective_config={"prompt": prompt_record(p)})

    pairs = [{"prompt_id": "writing-01", "sample": i, "ordinary_side": side, "ordinary": made("ordinary", prompt),
              "assisted": made("assisted", second)}
             for i, (side, second) in enumerate([("A", edited), ("B", edited), ("A", prompt)])]
    views = [pair_view(db, pid) for pid in insert_pairs(db, exp, pairs)]
    assert [(v.material, v.task) for v in views[:2]] == [(None, None)] * 2
    assert (views[2].material, views[2].task) == (prompt.material, prompt.task)


def test_view_is_blind(db):
    # two pairs with the same texts on opposite sides: apart from the texts' order, nothing in the view differs
    exp = insert_experiment(db, "pool", {}, {})
    same = [{"prompt_id": "writing-01", "sample": i, "ordinary_side": side,
             "ordinary": GenerationRecord(prompt_id="writing-01", path="ordinary", text="one text", new_tokens=40,
                                          stop_reason="eos", generate_seconds=2.0),
             "assisted": GenerationRecord(prompt_id="writing-01", path="assisted", text="one text", new_tokens=40,
                                          stop_reason="eos", generate_seconds=1.0)} for i, side in enumerate("AB")]
    views = [pair_view(db, pid) for pid in insert_pairs(db, exp, same)]
    for view in views:
        # the request the outputs answered (Space audit F13) and the criteria's wording asked (sceptic audit) are the
        # pair's, not a side's
        assert {f.name for f in dataclasses.fields(view)} == {"pair_id", "prompt_id", "text_a", "text_b", "material",
                                                              "task", "criteria"}
        # the pair id is an unguessable token of one form for every pair: it names neither a path nor a side
        assert re.fullmatch(r"p[0-9a-f]{16}", view.pair_id), view.pair_id
    assert [dataclasses.replace(v, pair_id="") for v in views] == [dataclasses.replace(views[0], pair_id="")] * 2


def test_side_is_read_from_the_database(db):
    (pid,) = make_pool(db, 1, sides="B")
    view = pair_view(db, pid)
    assert view.text_a.startswith("assisted") and view.text_b.startswith("ordinary")
    assert reveal(db, pid).a_path == "assisted"


def test_assignment_least_rated_first_never_twice_until_quota(db):
    ids = make_pool(db, 3)
    seen = []
    while (v := next_pair(db, "ann", 2)) is not None:
        assert v.pair_id not in seen
        seen.append(v.pair_id)
        rate(db, v, "ann")
    assert sorted(seen) == sorted(ids)
    assert progress(db, "ann", 2).counts() == (3, 3)
    # bob now gets the pairs too (each has 1 of 2 ratings); carol gets nothing after bob finishes
    v = next_pair(db, "bob", 2)
    assert progress(db, "bob", 2).counts() == (0, 3)
    for _ in range(3):
        rate(db, v, "bob")
        v = next_pair(db, "bob", 2)
    assert v is None and next_pair(db, "carol", 2) is None


def test_least_rated_goes_first(db):
    ids = make_pool(db, 3)
    rate(db, pair_view(db, ids[0]), "ann")
    rate(db, pair_view(db, ids[1]), "ann")
    assert next_pair(db, "bob", 2).pair_id == ids[2]


def test_same_rater_twice_is_refused_and_nothing_written(db):
    (pid,) = make_pool(db, 1)
    view = pair_view(db, pid)
    rate(db, view, "ann")
    with pytest.raises(RatingError, match="already rated or skipped"):
        rate(db, view, "ann")
    assert db["ratings"].count == 1


def test_two_raters_on_one_pair(db):
    (pid,) = make_pool(db, 1)
    view = pair_view(db, pid)
    rate(db, view, "ann", pref="A")
    rate(db, view, "bob", pref="tie")
    assert counts(db, 2)["ratings"] == 2 and counts(db, 2)["pairs_complete"] == 1


def test_preference_and_criteria_are_mapped_to_paths(db):
    a_ord, b_ord = make_pool(db, 2, sides="AB")
    rate(db, pair_view(db, a_ord), "ann", pref="A")
    rate(db, pair_view(db, b_ord), "ann", pref="A")
    r1, r2 = current_rating(db, "ann", a_ord), current_rating(db, "ann", b_ord)
    assert r1["preferred_path"] == "ordinary" and r2["preferred_path"] == "assisted"
    assert r1["ordinary_schedule"] == "pass" and r1["assisted_schedule"] == "fail"
    assert r2["ordinary_schedule"] == "fail" and r2["assisted_schedule"] == "pass"


@pytest.mark.parametrize(
    "change, needle",
    [
        (dict(a={c: "pass" for c in CRITERIA[:3]}), "“No added promises · 不添加承诺” has no valid answer"),
        (dict(b={**{c: "pass" for c in CRITERIA}, "schedule": "maybe"}), "“Maintenance time · 维护时间” has no valid answer"),
        (dict(a={**{c: "pass" for c in CRITERIA}, "colour": "pass"}), "unknown criterion id(s) colour"),
        (dict(preference="C"), "preference 'C' is not A, B or tie"),
        (dict(comment="x" * 51), "comment is 51 characters; the limit is 50"),
        (dict(pair_id="p-forged"), "pair 'p-forged' does not exist"),
        (dict(rater="  "), "rater name is empty"),
    ],
)
def test_bad_submissions_are_refused_with_clear_message(db, change, needle):
    (pid,) = make_pool(db, 1)
    base = RatingInput(pid, "ann", answers(), answers(), "A")
    with pytest.raises(RatingError) as e:
        submit_rating(db, APP, dataclasses.replace(base, **change))
    assert needle in str(e.value)
    assert db["ratings"].count == 0


def test_replayed_submission_is_refused(db):
    ids = make_pool(db, 2)
    rate(db, pair_view(db, ids[0]), "ann", token="tok-1")
    with pytest.raises(RatingError, match="already received"):
        rate(db, pair_view(db, ids[1]), "ann", token="tok-1")
    assert db["ratings"].count == 1


def test_correction_supersedes_and_keeps_history(db):
    (pid,) = make_pool(db, 1)
    first = rate(db, pair_view(db, pid), "ann", pref="A")
    second = correct_rating(db, APP, first, RatingInput(pid, "ann", answers("unsure"), answers(), "B"))
    assert db["ratings"].count == 2  # history kept
    cur = current_rating(db, "ann", pid)
    assert cur["id"] == second and cur["supersedes"] == first and cur["preference"] == "B"
    assert counts(db, 2)["ratings"] == 1 and counts(db, 2)["corrections"] == 1
    with pytest.raises(RatingError, match="already corrected"):
        correct_rating(db, APP, first, RatingInput(pid, "ann", answers(), answers(), "A"))
    with pytest.raises(RatingError, match="another rater"):
        correct_rating(db, APP, second, RatingInput(pid, "bob", answers(), answers(), "A"))


def test_skip_needs_reason_and_removes_pair_from_queue(db):
    (pid,) = make_pool(db, 1)
    with pytest.raises(RatingError, match="needs a reason"):
        skip_pair(db, APP, "ann", pid, "   ")
    skip_pair(db, APP, "ann", pid, "cannot judge")
    assert next_pair(db, "ann", 2) is None
    assert db["ratings"].get(1)["skip_reason"] == "cannot judge"
    assert counts(db, 2)["skips"] == 1 and counts(db, 2)["ratings"] == 0
    assert next_pair(db, "bob", 2).pair_id == pid  # a skip is not a rating


def test_reveal_speedup_only_when_comparable(db):
    ids = make_pool(db, 4, sides="A")
    r0 = reveal(db, ids[0])
    assert r0.a_path == "ordinary" and r0.b_path == "assisted"
    assert r0.comparable and r0.speedup == pytest.approx(2.0)
    assert r0.a_tokens_per_second == pytest.approx(20.0)
    r3 = reveal(db, ids[3])  # different stop reason
    assert not r3.comparable and r3.speedup is None and "not comparable" in r3.note


def at_once(path, names, fn) -> dict:
    """fn(db, name) for each name in its own thread with its own connection, all released at the same moment;
    returns {name: result or the RatingError's message}."""
    import threading

    start, results = threading.Barrier(len(names)), {}

    def run(name):
        db = open_db(path, migrate_schema=False)
        try:
            start.wait()
            results[name] = fn(db, name)
        except RatingError as e:
            results[name] = str(e)
        finally:
            db.conn.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_quota_is_checked_again_under_the_write_lock(tmp_path):
    """Five raters submit the same pair at once (quota 2): exactly two ratings are stored, the others are told."""
    path = tmp_path / "q.db"
    setup = open_db(path)
    (pid,) = make_pool(setup, 1)
    results = at_once(path, [f"r{i}" for i in range(5)], lambda db, name: rate(db, pair_view(db, pid), name))
    stored = [v for v in results.values() if isinstance(v, int)]
    refused = [v for v in results.values() if isinstance(v, str)]
    assert len(stored) == 2 and len(refused) == 3
    assert all("already has its 2 ratings" in r and "not stored" in r for r in refused)
    assert setup.execute("SELECT COUNT(*) FROM current_ratings").fetchone()[0] == 2


def test_a_pair_on_someone_s_screen_is_not_offered_to_others_until_the_hold_ends(db, monkeypatch):
    app = dataclasses.replace(APP, ratings_per_pair=1)
    ids = make_pool(db, 2)
    ann, bob = next_pair(db, "ann", 1), next_pair(db, "bob", 1)
    assert {ann.pair_id, bob.pair_id} == set(ids)
    assert next_pair(db, "carol", 1) is None  # both held
    assert next_pair(db, "ann", 1).pair_id == ann.pair_id  # a reload resumes the pair on screen
    monkeypatch.setattr(ratings, "HOLD_MINUTES", 0)
    assert next_pair(db, "carol", 1) is not None  # holds expire
    submit_rating(db, app, RatingInput(ann.pair_id, "ann", answers(), answers("fail"), "A"))
    with pytest.raises(RatingError, match="already has its 1 ratings"):
        submit_rating(db, app, RatingInput(ann.pair_id, "carol", answers(), answers("fail"), "A"))


def test_raters_arriving_at_once_are_given_different_pairs(tmp_path):
    """Choosing a pair and holding it happen under one write lock: six raters who ask at the same moment for a
    pair (quota 1, six pairs) get six different pairs, round after round."""
    path = tmp_path / "hold.db"
    setup = open_db(path)
    ids = make_pool(setup, 6)
    for round_ in range(15):
        setup.conn.execute("DELETE FROM assignments")
        setup.conn.commit()
        got = at_once(path, [f"r{round_}-{i}" for i in range(6)], lambda db, name: next_pair(db, name, 1).pair_id)
        assert sorted(got.values()) == sorted(ids), f"round {round_}: {got}"


def test_time_on_task_is_measured_from_the_pair_being_shown(db):
    make_pool(db, 2)
    view = next_pair(db, "ann", 2)
    rid = rate(db, view, "ann")
    seconds = db.execute("SELECT seconds_on_task FROM ratings WHERE id = ?", [rid]).fetchone()[0]
    assert seconds is not None and 0 <= seconds < 60
    other = next(p for p in db.execute("SELECT id FROM pairs").fetchall() if p[0] != view.pair_id)[0]
    rid2 = rate(db, pair_view(db, other), "bob")  # never shown to bob through the queue: unknown, not zero
    assert db.execute("SELECT seconds_on_task FROM ratings WHERE id = ?", [rid2]).fetchone()[0] is None


def test_results_open_only_to_raters_who_rated_their_queue(db):
    ids = make_pool(db, 4)
    assert results_open(db, "ann", 2, 2) == (False, "you have 4 pair(s) left to rate")
    for pid in ids[:3]:
        rate(db, pair_view(db, pid), "ann")
    skip_pair(db, APP, "ann", ids[3], "cannot judge")
    for pid in ids:  # sam skips every pair while it is open (a skip of a closed pair is refused: tests/test_skips.py)
        skip_pair(db, APP, "sam", pid, "skip")
    # her queue is empty and one skip is within the allowance, but every pair is still open to other names (one of
    # them could be hers): the tables would let her decode her own answers' sides, so she waits for them to close
    assert results_open(db, "ann", 2, 2) == (False, "you have rated your pairs; results open once the study's last "
                                                    "4 pair(s) have their ratings from other raters")
    for pid in ids:
        rate(db, pair_view(db, pid), "bob")
    assert "last 1 pair(s)" in results_open(db, "ann", 2, 2)[1]  # the one she skipped has one rating of two
    rate(db, pair_view(db, ids[3]), "cat")
    assert results_open(db, "ann", 2, 2) == (True, "")
    ok, why = results_open(db, "sam", 2, 2)
    assert not ok and "you skipped 4 pairs and rated 0" in why


def test_a_hold_whose_rating_could_not_count_takes_no_pair(pool_db):  # noqa: F811
    """Organiser audit, 2026-12-04: an organiser who signed in to watch was served the head of the queue and, once the
    Results tab made her ratings uncounted, kept it for 30 minutes; a revoked rater's pair stayed held too. The last
    two pairs sat on those two screens while the raters who could rate them were told to wait."""
    from evalkit.rating import roster
    from evalkit.store import insert_results_seen

    db = open_db(pool_db)
    with db.conn:
        db.conn.execute("UPDATE pairs SET wanted_ratings = 1")
    roster.add(db, "olga", organiser=True)
    roster.add(db, "carl")
    head = next_pair(db, "olga", 1).pair_id
    assert next_pair(db, "ann", 1).pair_id != head  # her hold counts while her rating could count
    insert_results_seen(db, "olga")  # she opened the Results: her ratings in this study are kept, not counted
    assert next_pair(db, "bob", 1).pair_id == head
    held = next_pair(db, "carl", 1).pair_id
    assert next_pair(db, "dan", 1).pair_id != held
    roster.revoke(db, "carl")
    assert next_pair(db, "eve", 1).pair_id == held


def test_a_rater_is_never_served_a_pair_whose_texts_she_has_met_in_a_rating(db):
    """Greedy decoding gives every sample of a prompt the same two texts (in half precision they can differ between
    the paths, the same way in every sample). A rater who rated one such pair has seen its reveal, so the next one
    with those texts would be rated knowing its sides: the queue serves her no pair holding a text of a pair she
    rated; other raters still get it, and so does she once it shares nothing with what she rated."""
    from evalkit.study.pairs import one_rater_reach, pairs_sharing_a_text

    app = AppConfig(ratings_per_pair=1)
    exp = insert_experiment(db, "pool", {}, {})

    def pair(i, ordinary, assisted, side):
        return {"prompt_id": "writing-01", "sample": i, "ordinary_side": side,
                "ordinary": GenerationRecord(prompt_id="writing-01", path="ordinary", text=ordinary, new_tokens=40,
                                             stop_reason="eos", generate_seconds=2.0),
                "assisted": GenerationRecord(prompt_id="writing-01", path="assisted", text=assisted, new_tokens=40,
                                             stop_reason="eos", generate_seconds=1.0)}

    ids = insert_pairs(db, exp, [pair(0, "the same ordinary", "the same assisted", "A"),
                                 pair(1, "the same ordinary", "the same assisted", "B"),
                                 pair(2, "another ordinary", "the same assisted", "A"),
                                 pair(3, "a third ordinary", "a third assisted", "B")])
    # `evalkit generate` says how many pairs are such copies (each needs a rater of its own)
    assert pairs_sharing_a_text(db, exp) == 3
    served = []
    while (view := next_pair(db, "ann", app.ratings_per_pair)) is not None:
        served.append(view.pair_id)
        submit_rating(db, app, RatingInput(view.pair_id, "ann", answers(), answers(), "tie"))
    # whichever of the first three came first (the queue's order is drawn), it was the only one of them she met
    assert len(set(served) & set(ids[:3])) == 1 and ids[3] in served
    # and `evalkit generate` says so in numbers: one rater can be served 2 of the 4 pairs
    assert one_rater_reach(db, exp) == (len(served), 4) == (2, 4)
    # the pairs she could not be served are still open to another rater, who meets each text once as well
    other = next_pair(db, "ben", app.ratings_per_pair)
    assert other is not None and other.pair_id in set(ids[:3]) - set(served)


def test_generate_says_when_repeated_texts_leave_the_planned_roster_short_of_the_planned_ratings(tmp_path):
    """A greedy pool repeats its texts in every sample, and a rater meets each text once: `evalkit generate` puts the
    roster's reach beside what the gate's planned pairs ask for, so an organiser learns before rating starts that
    the study could never complete (it would only ever show interim looks)."""
    from evalkit.study.gate import gate_snapshot
    from evalkit.study.pairs import one_rater_reach, rater_reach
    from evalkit.study.synthetic import gate_file_text

    def pool(path, planned_raters):
        gate = tmp_path / f"gate{planned_raters}.toml"
        gate.write_text(gate_file_text(planned_pairs=20, min_ratings_per_pair=1, second_rating_share=0.0,
                                       claim="these raters") + f"\nplanned_raters = {planned_raters}\n")
        db = open_db(path)
        exp = insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(gate))
        # 5 prompts x 4 samples of greedy decoding: every sample of a prompt the same two texts
        insert_pairs(db, exp, [{"prompt_id": f"writing-0{k}", "sample": i, "ordinary_side": "AB"[i % 2],
                                "ordinary": GenerationRecord(prompt_id=f"writing-0{k}", path="ordinary",
                                                             text=f"ordinary {k}", new_tokens=40, stop_reason="eos",
                                                             generate_seconds=2.0),
                                "assisted": GenerationRecord(prompt_id=f"writing-0{k}", path="assisted",
                                                             text=f"assisted {k}", new_tokens=40, stop_reason="eos",
                                                             generate_seconds=1.0)}
                               for k in range(1, 6) for i in range(4)])
        assert one_rater_reach(db, exp) == (5, 20)
        said = rater_reach(db, exp)
        db.close()
        assert said.startswith("one rater can be served at most 5 of the study's 20 pairs to rate")
        return said

    short = pool(tmp_path / "a.db", planned_raters=3)  # 3 raters x 5 texts: 15 ratings for 20 planned pairs
    assert "3 planned raters can give at most 15 ratings" in short and "ask for about 20" in short
    assert "cannot reach its planned pairs" in short
    enough = pool(tmp_path / "b.db", planned_raters=4)
    assert "at most 20 ratings" in enough and "cannot reach" not in enough


def _hold_times(db, rater: str, pair: str, shown: float, alive: float) -> None:
    """Set a hold's showing and its last sign of work to these many minutes ago."""
    from datetime import datetime, timedelta, timezone

    def ago(minutes):
        return (datetime.now(timezone.utc) - timedelta(minutes=minutes)).isoformat(timespec="milliseconds")

    db.conn.execute("UPDATE assignments SET shown_at = ?, alive_at = ? WHERE rater = ? AND pair_id = ?",
                    [ago(shown), ago(alive), rater, pair])
    db.conn.commit()


def test_signs_of_work_keep_a_pair_for_hours_at_most_then_it_goes_to_the_other_raters(db):
    """Attacker audit, 2026-12-05: signs of work every 29 minutes kept one pair on a name's screen for good, and the
    decision counts pairs complete at the head of the queue's order, so that pair stalled it. Signs of work now renew a
    hold for HOLD_CAP_HOURS from its showing at most; a name that kept a pair so and let it go is not served it again
    (it goes to the others), and the organisers' long-hold line names her. A pair shown hours ago but held briefly is
    served to her again as before."""
    from evalkit.rating.queue import HOLD_CAP_HOURS, HOLD_MINUTES, keep_hold, long_holds

    def times(rater, pair, shown, alive):
        _hold_times(db, rater, pair, shown, alive)

    cap = HOLD_CAP_HOURS * 60
    make_pool(db, n=3)
    pair = next_pair(db, "mallory", 1).pair_id
    times("mallory", pair, cap + 1, 2)  # shown over the cap ago, renewed all along
    assert not keep_hold(db, "mallory", pair)  # signs of work renew it no more
    assert next_pair(db, "mallory", 1).pair_id == pair  # the hold runs its course
    assert next_pair(db, "bob", 1).pair_id != pair  # still hers meanwhile
    times("mallory", pair, cap + HOLD_MINUTES + 1, HOLD_MINUTES + 1)  # ran out, never rated
    assert next_pair(db, "mallory", 1).pair_id != pair  # never hers again
    # the others': the head of the order moves on (her new pair is open to them too, since her holds keep nothing
    # from them for a day: test_a_name_that_kept_a_pair_to_the_cap_holds_no_pair_away_from_the_others_for_a_day)
    assert pair in {next_pair(db, "carol", 1).pair_id, next_pair(db, "erin", 1).pair_id}
    assert [r for r, _ in long_holds(db)] == ["mallory"]

    make_pool(db, n=1)
    brief = next_pair(db, "dan", 1).pair_id
    assert brief not in (pair,)
    times("dan", brief, cap + 60, cap + 50)  # shown hours ago, left after ten minutes
    assert next_pair(db, "dan", 1).pair_id == brief  # served again, as any lapsed hold is


def test_a_name_that_kept_a_pair_to_the_cap_holds_no_pair_away_from_the_others_for_a_day(db):
    """Attacker audit round 3: a name that kept a pair to the cap and let it go unrated was not served that pair
    again, but held the next one as long, and the next: the head of the queue's order, 2.5 hours a pair. For a day
    after such a lapse her holds keep no pair from the others (she still gets pairs and rates them); a day on, they
    count again."""
    from evalkit.rating.queue import CAP_LAPSE_HOURS, HOLD_CAP_HOURS, HOLD_MINUTES

    def times(rater, pair, shown, alive):
        _hold_times(db, rater, pair, shown, alive)

    cap = HOLD_CAP_HOURS * 60
    make_pool(db, n=1)
    first = next_pair(db, "mallory", 1).pair_id
    times("mallory", first, cap + HOLD_MINUTES + 1, HOLD_MINUTES + 1)  # kept to the cap, ran out, never rated
    assert next_pair(db, "bob", 1).pair_id == first  # the others' (as before); bob holds it now
    make_pool(db, n=1)
    second = next_pair(db, "mallory", 1).pair_id
    assert second != first
    assert next_pair(db, "carol", 1).pair_id == second  # her hold keeps it from nobody
    times("carol", second, HOLD_MINUTES + 1, HOLD_MINUTES + 1)  # carol's hold runs out
    lapse = CAP_LAPSE_HOURS * 60 + 1  # a day on, mallory's holds count again
    times("mallory", first, lapse + cap + HOLD_MINUTES, lapse)
    assert next_pair(db, "dan", 1) is None  # the one pair is bob's, the other mallory's


def test_a_rater_served_a_pair_in_good_faith_stores_her_rating_though_the_name_whose_hold_counted_for_nobody_submits_first(db):
    """A name that kept a pair to the cap holds nothing away from others for a day, so its pair went to another rater
    at once; but its own submit, sent first, filled the quota and the rater served the pair in good faith was told
    "pair taken", her work lost. Its hold is displaced when the pair is served to a rater whose hold counts: its
    submit is refused (saying why, nothing of the sides), the pair is not its again, and hers is stored."""
    from evalkit.rating.queue import HOLD_CAP_HOURS, HOLD_MINUTES, HoldDisplaced, is_closed

    app = AppConfig(ratings_per_pair=1)
    make_pool(db, n=1)
    first = next_pair(db, "mallory", 1).pair_id
    _hold_times(db, "mallory", first, HOLD_CAP_HOURS * 60 + HOLD_MINUTES + 1, HOLD_MINUTES + 1)  # kept to the cap
    assert next_pair(db, "bob", 1).pair_id == first  # bob holds that one now
    make_pool(db, n=1)
    second = next_pair(db, "mallory", 1).pair_id
    assert next_pair(db, "carol", 1).pair_id == second  # mallory's hold keeps it from nobody
    with pytest.raises(HoldDisplaced) as refused:
        submit_rating(db, app, RatingInput(second, "mallory", answers(), answers("fail"), "A"))
    said = f"{refused.value.what} {refused.value.fix}"
    assert "another rater" in said and "not stored" in said
    assert not re.search(r"ordinary|assisted|\bside", said)
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 0
    assert next_pair(db, "mallory", 1) is None  # neither resumed nor served again
    submit_rating(db, app, RatingInput(second, "carol", answers(), answers(), "tie"))
    assert is_closed(db, second, 1)


def test_a_hold_renewed_by_the_page_keeps_the_pair_while_the_rater_works_on_it(db):
    """A hold counted from the pair's first showing only, so a rater who took more than its 30 minutes over a pair
    found it given to another rater and her answers lost. The page's sign of life (after her own input) renews it;
    the time on task still counts from the showing, and a hold that ran out is not renewed (the pair may be
    another's by then)."""
    from evalkit.rating.queue import keep_hold

    app = AppConfig(ratings_per_pair=1)
    make_pool(db, n=1)
    view = next_pair(db, "ann", 1)

    def ago(minutes):
        from datetime import datetime, timedelta, timezone
        return (datetime.now(timezone.utc) - timedelta(minutes=minutes)).isoformat(timespec="milliseconds")

    db.conn.execute("UPDATE assignments SET shown_at = ? WHERE rater = 'ann'", [ago(25)])
    db.conn.commit()
    assert keep_hold(db, "ann", view.pair_id)  # at work 25 minutes in
    renewed = db.execute("SELECT alive_at FROM assignments WHERE rater = 'ann'").fetchone()[0]
    assert keep_hold(db, "ann", view.pair_id)  # again within the minute: held, and no write
    assert db.execute("SELECT alive_at FROM assignments WHERE rater = 'ann'").fetchone()[0] == renewed
    db.conn.execute("UPDATE assignments SET shown_at = ?, alive_at = ? WHERE rater = 'ann'", [ago(45), ago(20)])
    db.conn.commit()
    assert next_pair(db, "ben", 1) is None  # 45 minutes after the showing, still hers
    submit_rating(db, app, RatingInput(view.pair_id, "ann", answers(), answers(), "tie"))
    assert 44 * 60 < db.execute("SELECT seconds_on_task FROM ratings").fetchone()[0] < 46 * 60
    assert not keep_hold(db, "ann", view.pair_id)  # rated: nothing to hold

    make_pool(db, n=1)
    other = next_pair(db, "cat", 1)
    db.conn.execute("UPDATE assignments SET shown_at = ? WHERE rater = 'cat'", [ago(45)])
    db.conn.commit()
    assert not keep_hold(db, "cat", other.pair_id)  # run out: not hers to renew
    assert next_pair(db, "dan", 1).pair_id == other.pair_id


def test_a_held_pair_served_again_takes_the_write_lock_only_to_check_a_code(db, monkeypatch):
    """A pair a rater holds is served again past her code's check under the write lock (a revoke committing meanwhile
    serves nothing: tests/test_security.py::test_a_revoke_that_commits_as_a_held_pair_is_served_again_serves_nothing).
    A session with nothing to check (no code, no Hub username) takes no lock for it; a Hugging Face identity's username
    is checked against the organiser's revokes of Hub raters under the lock as a code is (migration 037_hub_revokes)."""
    import evalkit.store.ratings as store_ratings
    from evalkit.rating import roster

    make_pool(db)
    ann = roster.add(db, "ann").identity
    signed_in = (ann.rater_id, ann.credential)
    taken = []
    real = store_ratings.write_transaction
    monkeypatch.setattr(store_ratings, "write_transaction", lambda d: taken.append(1) or real(d))
    first = next_pair(db, "hubby", 2, signed_in=(None, ""))
    del taken[:]
    assert next_pair(db, "hubby", 2, signed_in=(None, "")).pair_id == first.pair_id
    assert taken == []
    held = next_pair(db, "ann", 2, signed_in=signed_in)
    del taken[:]
    assert next_pair(db, "ann", 2, signed_in=signed_in).pair_id == held.pair_id and taken == [1]
    hub = next_pair(db, "hubber", 2, signed_in=(None, "", "hubber"))
    del taken[:]
    assert next_pair(db, "hubber", 2, signed_in=(None, "", "hubber")).pair_id == hub.pair_id and taken == [1]
