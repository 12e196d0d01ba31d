"""Attacker audit, round 12: the app probed as a rater would probe it, through gradio_client and raw queue requests
against a served app on 127.0.0.1 (tests/test_security.py's helpers). Each test is one attack that found a way."""

from apphelpers import POOL_PAIRS, pool_db, pool_template, rows, served  # noqa: F401
from test_app_client import Tab
from test_security import config

from evalkit.store import open_db
from evalkit.ui.results import TABLES


def _add_pool(db_file, prompt_texts: list[tuple[str, str, str]], first: int, gate: dict, new_study: str | None = None):
    """A pool of (prompt, ordinary text, assisted text) pairs, joining the latest study (or a new one)."""
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_pairs

    db = open_db(db_file)
    try:
        exp = insert_experiment(db, "pool", {}, {}, gate=gate, new_study=new_study)

        def made(prompt, path, text):
            return GenerationRecord(prompt_id=prompt, path=path, text=text, new_tokens=9, stop_reason="eos",
                                    generate_seconds=1.0)

        insert_pairs(db, exp, [{"prompt_id": prompt, "sample": first + i, "ordinary_side": "AB"[i % 2],
                                "ordinary": made(prompt, "ordinary", o), "assisted": made(prompt, "assisted", a)}
                               for i, (prompt, o, a) in enumerate(prompt_texts)])
        return exp
    finally:
        db.conn.close()


def test_a_rater_shown_an_earlier_study_s_results_is_served_none_of_the_pairs_a_later_pool_adds(tiny_models,
                                                                                                 tmp_path, pool_db):
    """A rater shown the served study's results is served no pair a later pool adds to it (attacker audit F5), but
    the Results offer every study of the database (results_study), and one shown only an earlier study's was not
    noted: a later pool of the served study, whose texts repeat the earlier study's (greedy decoding writes every
    sample of a prompt as the same texts) or whose prompts its per-path tables describe, was served to her, and she
    rated it knowing those tables, counted. Any study's results now count as seen."""
    from evalkit.study.studies import studies

    with served(config(tiny_models, tmp_path, ratings_per_pair=1), pool_db) as url:
        ben = Tab(url)  # the first study, 'main', rated by another rater
        ben.sign_in("ben")
        for _ in range(POOL_PAIRS):
            ben.submit()
            ben.call("/next_pair")
        db = open_db(pool_db)
        gate = studies(db)[-1].gate
        db.conn.close()
        _add_pool(pool_db, [("writing-01", "second ordinary", "second assisted")], 200, gate, new_study="second")
        mallory = Tab(url)
        mallory.sign_in("mallory")
        assert mallory.submit()["status"] == "评分已保存。"  # the second study's one pair: nothing of it is open now
        seen = mallory.call("/results_study", "main")  # never /results, which shows the served study and notes it
        assert "study 'main'" in seen["verdict"] and seen[TABLES["pass_rates"]]["data"]
        # a later pool of the served study repeats main's texts, as greedy decoding does: main's tables told their paths
        main = rows(pool_db, "SELECT p.prompt_id, o.text AS o, a.text AS a FROM pairs p "
                             "JOIN generations o ON o.id = p.ordinary_generation_id "
                             "JOIN generations a ON a.id = p.assisted_generation_id WHERE p.kind = 'study' "
                             "AND p.experiment_id = (SELECT MIN(experiment_id) FROM pairs)")
        later = _add_pool(pool_db, [(r["prompt_id"], r["o"], r["a"]) for r in main], 300, gate)
        screen = mallory.call("/next_pair")
        assert not screen["text-a"] and "你已看过本研究的结果" in screen["done"], screen
        assert rows(pool_db, "SELECT COUNT(*) AS n FROM assignments WHERE rater = 'mallory' AND pair_id IN "
                             "(SELECT id FROM pairs WHERE experiment_id = ?)", [later])[0]["n"] == 0


def _main_texts(db_file) -> list[tuple[str, str, str]]:
    """The first pool's study pairs as (prompt, ordinary text, assisted text): what a later pool under greedy decoding
    writes again."""
    return [(r["prompt_id"], r["o"], r["a"]) for r in rows(
        db_file, "SELECT p.prompt_id, o.text AS o, a.text AS a FROM pairs p "
                 "JOIN generations o ON o.id = p.ordinary_generation_id "
                 "JOIN generations a ON a.id = p.assisted_generation_id WHERE p.kind = 'study' "
                 "AND p.experiment_id = (SELECT MIN(experiment_id) FROM pairs)")]


def test_an_organiser_shown_the_results_while_nothing_she_could_rate_was_open_is_served_none_of_a_later_pool(
        tiny_models, tmp_path, pool_db):
    """An organiser's view of the Results was recorded only while it told her something of a pair she could still
    rate (note_results_seen): olga opened them once every pair had closed, read the per-path tables, and a later pool
    of the study, repeating its texts as greedy decoding does, was served to her and her ratings of it counted. Every
    view is now recorded (results_views); no pair stored in the study after it is served to her, as to a rater shown
    them, and a rating of one stored anyway is kept, never counted."""
    from evalkit.rating import roster as raters
    from evalkit.rating.queue import RatingInput, submit_rating
    from evalkit.study.studies import studies
    from evalkit.task.prompts import CRITERIA

    cfg = config(tiny_models, tmp_path, ratings_per_pair=1)
    db = open_db(pool_db)
    olga = raters.add(db, "olga", organiser=True).code
    gate = studies(db)[-1].gate
    db.conn.close()
    with served(cfg, pool_db) as url:
        ben = Tab(url)
        ben.sign_in("ben")
        for _ in range(POOL_PAIRS):
            ben.submit()
            ben.call("/next_pair")
        org = Tab(url)
        org.call("/sign_in", "", "", olga)
        seen = org.call("/results")  # every pair closed: nothing she could rate is in them
        assert seen[TABLES["pass_rates"]]["data"] and "不再计分" not in seen["verdict"]
        assert rows(pool_db, "SELECT COUNT(*) AS n FROM results_seen")[0]["n"] == 0
        later = _add_pool(pool_db, _main_texts(pool_db), 300, gate)
        screen = org.call("/next_pair")
        assert not screen["text-a"], screen
        assert rows(pool_db, "SELECT COUNT(*) AS n FROM assignments WHERE rater = 'olga' AND pair_id IN "
                             "(SELECT id FROM pairs WHERE experiment_id = ?)", [later])[0]["n"] == 0
        ann = Tab(url)  # a name shown nothing is served the later pool
        ann.sign_in("ann")
        assert ann.submit()["status"] == "评分已保存。"
    pair = rows(pool_db, "SELECT id FROM pairs WHERE experiment_id = ? AND id NOT IN (SELECT pair_id FROM ratings)",
                [later])[0]["id"]
    db = open_db(pool_db)
    try:  # its id learnt elsewhere: stored, kept uncounted, filling no quota
        submit_rating(db, cfg.app, RatingInput(pair, "olga", {c: "pass" for c in CRITERIA},
                                               {c: "fail" for c in CRITERIA}, "A"))
    finally:
        db.conn.close()
    assert rows(pool_db, "SELECT blind FROM ratings WHERE rater = 'olga'") == [{"blind": 0}]
    assert rows(pool_db, "SELECT COUNT(*) AS n FROM closed_pairs WHERE pair_id = ?", [pair])[0]["n"] == 0


def test_a_rater_shown_a_study_s_results_is_served_no_pair_of_a_new_study_repeating_its_texts(tiny_models, tmp_path,
                                                                                             pool_db):
    """A rater's record of having seen the results was the study's own, and `evalkit generate --new-study NAME` (what
    the CLI offers to have such names rate again) starts another: its pairs, under greedy decoding, repeat the texts
    of the earlier study whose per-path tables and plots (and reveals) she read, and they were served to her and
    counted. A pair of another study holding a text of a run of a study whose results she was shown is now not hers;
    a new study's pair with texts of its own (sampling) is, so a new study still has her rate."""
    from evalkit.study.studies import studies

    with served(config(tiny_models, tmp_path, ratings_per_pair=1), pool_db) as url:
        ben = Tab(url)  # the first study, 'main', rated by another rater
        ben.sign_in("ben")
        for _ in range(POOL_PAIRS):
            ben.submit()
            ben.call("/next_pair")
        mallory = Tab(url)
        mallory.sign_in("mallory")
        seen = mallory.call("/results")  # nothing of main open: its results are hers to read
        assert seen[TABLES["pass_rates"]]["data"]
        db = open_db(pool_db)
        gate = studies(db)[-1].gate
        db.conn.close()
        repeated = _main_texts(pool_db)[0]
        second = _add_pool(pool_db, [repeated, (repeated[0], "a fresh ordinary text", "a fresh assisted text")], 400,
                           gate, new_study="second")
        fresh = rows(pool_db, "SELECT p.id FROM pairs p JOIN generations g ON g.id = p.ordinary_generation_id "
                              "WHERE p.experiment_id = ? AND g.text = 'a fresh ordinary text'", [second])[0]["id"]
        assert mallory.call("/next_pair")["text-a"]
        assert mallory.submit()["status"] == "评分已保存。"
        screen = mallory.call("/next_pair")
        assert not screen["text-a"], screen
        assert rows(pool_db, "SELECT pair_id FROM assignments WHERE rater = 'mallory'") == [{"pair_id": fresh}]
        assert rows(pool_db, "SELECT blind FROM ratings WHERE rater = 'mallory'") == [{"blind": 1}]
        ann = Tab(url)  # a name shown nothing is served the repeating pair
        ann.sign_in("ann")
        assert ann.submit()["status"] == "评分已保存。"
