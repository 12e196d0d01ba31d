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
