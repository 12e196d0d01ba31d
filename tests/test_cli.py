"""The CLI end to end on tiny real models: check, run, bench (own processes, ABBA), generate, help."""

import json

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.store import open_db

COMMANDS = ["check", "run", "bench", "generate", "tune", "fidelity", "aggregate", "report", "export", "demo-models", "plan",
            "prepare", "raters", "pairs", "serve"]


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", [[]] + [[c] for c in COMMANDS])
def test_help_works_for_every_command(command):
    r = invoke(*command, "--help")
    assert r.exit_code == 0 and "Usage:" in r.output
    if not command:
        for c in COMMANDS:
            assert c in r.output


def test_check_json_approved(make_config):
    r = invoke("check", "--config", str(make_config()), "--json")
    assert r.exit_code == 0
    rec = json.loads(r.stdout)
    assert rec["verdict"] == "same_tokenizer"
    assert set(rec["versions"]) >= {"python", "torch", "transformers", "accelerate"}
    for role in ("target", "draft"):
        assert rec[role]["weights_digest"] and rec[role]["vocab_size"]
        tok = rec[role]["tokenizer"]
        assert tok["vocab_hash"] and tok["special_ids"]["eos"] is not None and "chat_template_hash" in tok
    assert rec["device"] == "cpu" and rec["dtype"] == "float32"


def test_check_not_approved_exits_2(make_config):
    r = invoke("check", "--config", str(make_config(draft="other_draft")))
    assert r.exit_code == 2 and "verdict: not_approved" in r.output and "tokenizers differ" in r.output


def test_unknown_config_key_cli_error(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[models]\ntarget_model = 'x'\n")
    r = CliRunner().invoke(cli, ["check", "--config", str(f)])
    assert r.exit_code == 1
    assert "Error:" in r.output and "unknown config key(s) models.target_model" in r.output
    assert "Traceback" not in r.output


def test_missing_model_path_cli_error_writes_nothing(make_config, tmp_path, data_dir):
    cfg = make_config(**{"models.target": str(tmp_path / "missing")})
    r = CliRunner().invoke(cli, ["run", "--config", str(cfg)])
    assert r.exit_code == 1 and "does not exist" in r.output and "fix:" in r.output
    assert not (data_dir / "evalkit.db").exists()


def test_run_stores_the_record(make_config, data_dir):
    r = invoke("run", "--config", str(make_config()), "--prompt", "writing-02", "--path", "assisted", "--json")
    assert r.exit_code == 0, r.output
    recs = json.loads(r.stdout)
    assert len(recs) == 1 and recs[0]["path"] == "assisted"
    db = open_db(data_dir / "evalkit.db")
    row = db["generations"].get(recs[0]["id"])
    assert row["prompt_id"] == "writing-02" and json.loads(row["token_ids"]) == recs[0]["token_ids"]


@pytest.mark.slow
def test_bench_json_greedy_end_to_end(make_config, data_dir):
    cfg = make_config(draft="target_copy", **{"bench.prompts": ["writing-02"]})
    r = invoke("bench", "--config", str(cfg), "--reps", "2", "--rounds", "2", "--decoding", "greedy", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    s = out["summary"]
    for key in ("speedup", "speedup_ci95", "acceptance_rate", "tokens_per_target_pass", "identical_outputs", "comparable_pairs"):
        assert key in s
    assert s["identical_outputs"] == 1.0  # float32 greedy: token for token
    assert s["acceptance_rate"] == 1.0  # the target as its own draft
    assert s["comparable_pairs"] == 4 and s["speedup"] > 0
    lo, hi = s["speedup_ci95"]
    assert lo <= hi
    assert s["counts_agree"] is True and s["theoretical_speedup"] is not None
    assert s["alpha"] == 1.0  # every draft kept: tokens per pass = draft length + 1
    runs = out["runs"]
    assert len(runs) == 2 * 2 * 2  # paths x rounds x reps
    for run in runs:
        assert {"path", "prompt_id", "round", "rep", "new_tokens", "stop_reason", "seconds"} <= set(run)
    # ABBA: a process per path and round, even rounds in swapped order, each recording load, memory and first call
    db = open_db(data_dir / "evalkit.db")
    procs = list(db.query('SELECT path, round, "order", load_seconds, rss_after_load_mb, first_call_seconds, warmup_count FROM bench_processes ORDER BY id'))
    assert [(p["path"], p["round"]) for p in procs] == [("ordinary", 1), ("assisted", 1), ("assisted", 2), ("ordinary", 2)]
    assert all(p["load_seconds"] > 0 and p["rss_after_load_mb"] > 0 and p["first_call_seconds"] > 0 for p in procs)
    assert db["timing_runs"].count == 8 and db["generations"].count >= 8


@pytest.mark.slow
def test_bench_not_approved_runs_ordinary_only(make_config, data_dir):
    cfg = make_config(draft="other_draft", **{"bench.prompts": ["writing-02"]})
    r = CliRunner().invoke(cli, ["bench", "--config", str(cfg), "--reps", "1"])
    assert r.exit_code == 0, r.output
    assert "assisted path not approved" in r.stderr and "speed-up: not reported" in r.stdout
    assert "assisted" not in open_db(data_dir / "evalkit.db").execute(
        "SELECT group_concat(DISTINCT path) FROM timing_runs").fetchone()[0]


@pytest.mark.slow
def test_generate_pair_pool(make_config, data_dir, tiny_models):
    r = invoke("generate", "--config", str(make_config(**{"decoding.mode": "sample"})), "--samples", "2")
    assert r.exit_code == 0, r.output
    db = open_db(data_dir / "evalkit.db")
    pairs = list(db.query("SELECT * FROM pairs WHERE kind = 'study'"))
    assert len(pairs) == 2 * 5
    assert len({p["id"] for p in pairs}) == len(pairs)
    for p in pairs:
        o, a = db["generations"].get(p["ordinary_generation_id"]), db["generations"].get(p["assisted_generation_id"])
        assert o["path"] == "ordinary" and a["path"] == "assisted" and o["prompt_id"] == a["prompt_id"] == p["prompt_id"]
        side_a = p["a_generation_id"]
        assert side_a == (o["id"] if p["ordinary_side"] == "A" else a["id"])
    assert {p["sample"] for p in pairs} == {0, 1}
    # pool.gold_rate (default 0.1) x 10 study pairs: one gold (check) pair, made from one extra sample of one prompt
    # (its two outputs, one edited), whose token ids the Live tab's guard holds back like a pooled output's: the
    # unedited output's own ids, the edited one's under the target tokenizer
    import json

    from transformers import AutoTokenizer

    from evalkit.study.pairs import pooled_token_ids

    (gold,) = db.query("SELECT * FROM pairs WHERE kind = 'gold'")
    refs = list(db.query("SELECT * FROM reference_outputs WHERE id IN (?, ?)", [gold["a_reference_id"], gold["b_reference_id"]]))
    assert len(refs) == 2 and {r["prompt_id"] for r in refs} == {gold["prompt_id"]} and "1 gold (check) pair" in r.output
    unpaired = {r[0]: r[1] for r in db.execute(
        "SELECT text, token_ids FROM generations WHERE id NOT IN (SELECT ordinary_generation_id FROM pairs "
        "WHERE kind = 'study' UNION SELECT assisted_generation_id FROM pairs WHERE kind = 'study')")}
    assert 1 <= len(unpaired) <= 2  # the extra sample: an ordinary and an assisted output, in no study pair
    tok = AutoTokenizer.from_pretrained(str(tiny_models["target"]))
    edited, kept = sorted(refs, key=lambda ref: not json.loads(ref["expected"]))
    assert kept["text"] in unpaired and json.loads(kept["token_ids"]) == json.loads(unpaired[kept["text"]])
    assert edited["text"] not in unpaired
    assert json.loads(edited["token_ids"]) == tok(edited["text"], add_special_tokens=False)["input_ids"]
    for ref in refs:
        assert tuple(json.loads(ref["token_ids"])) in pooled_token_ids(db, gold["prompt_id"])


def test_generate_refuses_when_assisted_is_off(make_config):
    r = CliRunner().invoke(cli, ["generate", "--config", str(make_config(load_draft=False))])
    assert r.exit_code == 1 and "switched off" in r.output


def test_tune_refuses_a_config_with_the_assisted_path_off_before_loading_a_model(make_config, monkeypatch):
    """Docs audit, 2026-12-04: tune loaded the pair first (minutes on a large one), then said only that the assisted
    path was 'off or not approved' and to run `evalkit check`, which approves the pair."""
    import evalkit.generation.models as models

    def no_load(*a, **kw):
        raise AssertionError("the models were loaded")

    monkeypatch.setattr(models, "load_pair", no_load)
    r = CliRunner().invoke(cli, ["tune", "--config", str(make_config(load_draft=False))])
    assert r.exit_code == 1 and "this config switches it off (generation_path, load_draft)" in r.output, r.output
    assert "switch the assisted path on in the config" in r.output


@pytest.mark.slow
def test_tune_stores_trials_and_compares_with_transformers_default(make_config, data_dir):
    cfg = make_config(draft="target_copy", **{"bench.prompts": ["writing-02"]})
    r = invoke("tune", "--config", str(cfg), "--tokens", "2,6", "--schedules", "constant", "--thresholds", "0", "--reps", "1")
    assert r.exit_code == 0, r.output
    assert "Transformers default" in r.stdout and "best: num_assistant_tokens =" in r.stdout
    db = open_db(data_dir / "evalkit.db")
    trials = list(db.query("SELECT * FROM tune_trials ORDER BY trial"))
    assert len(trials) == 3 and trials[0]["is_default"] == 1 and trials[0]["num_assistant_tokens"] == 20
    assert trials[0]["speedup_vs_default"] == 1.0
    assert all(t["acceptance_rate"] == 1.0 for t in trials)  # the target as its own draft
    # every trial's runs are stored as generations of the tune experiment
    assert db.execute("SELECT COUNT(*) FROM generations g JOIN experiments e ON e.id = g.experiment_id WHERE e.kind = 'tune'").fetchone()[0] >= 3


def test_tune_runs_its_trials_in_a_balanced_order_so_drift_favours_none(make_config, data_dir):
    """Sceptic audit, 2026-12-06: each repetition ran the trials in the grid's order, each trial over every prompt in
    one stretch, so Transformers' default (the yardstick) always ran first: a machine that warms up, throttles or
    fills its caches as the sweep goes on moved every "vs default" figure one way. Now, for each prompt, every trial
    runs once, in the grid's order and reversed for the next prompt (ABBA): over the stored calls, read back in the
    order they ran, each trial's mean place among a prompt's trials is the same."""
    cfg = make_config(draft="target_copy", **{"bench.prompts": ["writing-01", "writing-02"],
                                              "decoding.max_new_tokens": 4})
    r = invoke("tune", "--config", str(cfg), "--tokens", "2,6", "--schedules", "constant", "--thresholds", "0",
               "--reps", "1")
    assert r.exit_code == 0, r.output
    db = open_db(data_dir / "evalkit.db")
    runs = [(g["prompt_id"], json.loads(g["effective_config"])["assistant_generation_config"]["num_assistant_tokens"])
            for g in db.query("SELECT g.* FROM generations g JOIN experiments e ON e.id = g.experiment_id "
                              "WHERE e.kind = 'tune' AND g.path = 'assisted' ORDER BY g.id")]  # as they ran (the warm-up is not stored)
    places: dict[int, list[int]] = {}
    for prompt in ("writing-01", "writing-02"):
        for place, tokens in enumerate(t for p, t in runs if p == prompt):
            places.setdefault(tokens, []).append(place)
    assert sorted(places) == [2, 6, 20] and all(len(v) == 2 for v in places.values())
    assert {sum(v) / len(v) for v in places.values()} == {1.0}  # the default is no longer always first


def test_tune_rejects_bad_values(make_config):
    r = CliRunner().invoke(cli, ["tune", "--config", str(make_config()), "--schedules", "fast"])
    assert r.exit_code == 1 and "unknown schedule(s) fast" in r.output
    r = CliRunner().invoke(cli, ["tune", "--config", str(make_config()), "--tokens", "a,b"])
    assert r.exit_code == 2 and "comma-separated int" in r.output


def test_raters_commands_invite_list_revoke_reissue(tmp_path):
    from click.testing import CliRunner

    from evalkit.rating import roster as raters
    from evalkit.cli import cli
    from evalkit.store import open_db

    db = str(tmp_path / "r.db")
    run = CliRunner().invoke
    added = run(cli, ["raters", "add", "ann", "--db", db, "--url", "http://study.example:7860/"])
    assert added.exit_code == 0, added.output
    code = added.output.split("personal code ")[1].split()[0]
    assert f"http://study.example:7860/?invite={code}" in added.output
    assert raters.authenticate(open_db(db), code).name == "ann"
    org = run(cli, ["raters", "add", "olga", "--organiser", "--db", db])
    assert org.exit_code == 0 and "organiser 'olga'" in org.output
    taken = run(cli, ["raters", "add", "Ann", "--db", db])
    assert taken.exit_code == 1 and "is taken" in taken.output
    listed = run(cli, ["raters", "list", "--db", db])
    assert "ann" in listed.output and "organiser" in listed.output and code.split(".")[1] not in listed.output
    assert run(cli, ["raters", "revoke", "ann", "--db", db]).exit_code == 0
    assert "revoked" in run(cli, ["raters", "list", "--db", db]).output
    new = run(cli, ["raters", "reissue", "ann", "--restore", "--db", db])
    new_code = new.output.split("personal code ")[1].split()[0]
    assert new_code != code and raters.authenticate(open_db(db), new_code).name == "ann"
    missing = run(cli, ["raters", "list", "--db", str(tmp_path / "nope.db")])
    assert missing.exit_code == 1 and "does not exist" in missing.output
    for sub in ("add", "list", "revoke", "reissue"):
        assert run(cli, ["raters", sub, "--help"]).exit_code == 0


def test_raters_revoke_hub_revokes_and_lifts_a_hugging_face_account_in_a_database_from_a_shell(tmp_path):
    """A Hub rater has no code, so `raters revoke NAME` answered "no rater named" for her. `--hub` revokes the
    username (a row: who, when) in a database reachable from a shell, ending her sessions' next step as the Space's
    Results tab does; `--lift` lifts it. An invited rater's name is refused with the command that revokes her code."""
    from click.testing import CliRunner

    from evalkit.rating import roster as raters
    from evalkit.rating.roster import SignInError
    from evalkit.cli import cli
    from evalkit.store import open_db

    db = str(tmp_path / "r.db")
    run = CliRunner().invoke
    assert run(cli, ["raters", "add", "ann", "--db", db]).exit_code == 0
    done = run(cli, ["raters", "revoke", "--hub", "bea", "--db", db])
    assert done.exit_code == 0 and "revoked Hugging Face account 'bea'" in done.output, done.output
    (row,) = open_db(db).query("SELECT name, revoked_by, revoked_at, lifted_at FROM hub_revokes")
    assert row["name"] == "bea" and row["revoked_by"].endswith("(command line)") and row["lifted_at"] is None
    with pytest.raises(SignInError, match="access to this study was revoked by its organiser"):
        raters.check_current(open_db(db), None, "", "Bea")  # her Hub session's next step (usernames ignore case)
    raters.check_current(open_db(db), None, "", "cal")
    again = run(cli, ["raters", "revoke", "--hub", "bea", "--db", db])
    assert again.exit_code == 0 and f"already revoked, by {row['revoked_by']} at {row['revoked_at']}" in again.output
    invited = run(cli, ["raters", "revoke", "--hub", "ann", "--db", db])
    assert invited.exit_code == 1 and "evalkit raters revoke 'ann'" in invited.output
    stray = run(cli, ["raters", "revoke", "bea", "--lift", "--db", db])
    assert stray.exit_code == 1 and "--lift is for a Hugging Face username's revoke (--hub)" in stray.output
    lifted = run(cli, ["raters", "revoke", "--hub", "bea", "--lift", "--db", db])
    assert lifted.exit_code == 0 and "lifted the revoke of Hugging Face account 'bea'" in lifted.output
    raters.check_current(open_db(db), None, "", "bea")
    assert "is not revoked; nothing changed" in run(cli, ["raters", "revoke", "--hub", "bea", "--lift", "--db", db]).output
    assert len(list(open_db(db).query("SELECT * FROM hub_revokes"))) == 1


def test_raters_list_shows_the_hub_accounts_that_rated_skipped_or_were_revoked(tmp_path):
    """A Hub rater has no raters row, so `raters list` on a Space's database (downloaded to see who rated) showed
    only the invited raters: not one of the Hub accounts that rated, skipped or were revoked. Each is now a row of
    role and source "hub", with its counts, its standing revoke (when and by whom; a revoke of "CAL" is cal's: the
    Hub compares usernames without case) or its lifted one (active again), in the text and in --json."""
    from evalkit.config import AppConfig
    from evalkit.rating import roster as raters
    from evalkit.rating.queue import RatingInput, next_pair, skip_pair, submit_rating
    from evalkit.task.prompts import CRITERIA
    from test_ratings import make_pool

    path = tmp_path / "space.db"
    db = open_db(path)
    make_pool(db, n=4)
    app = AppConfig(ratings_per_pair=3)
    ann = raters.add(db, "ann").identity
    rate = {c: "pass" for c in CRITERIA}

    def rates(name, signed_in):  # as the Rate tab stores a rating: the pair served, then Submit
        view = next_pair(db, name, 3, signed_in=signed_in)
        submit_rating(db, app, RatingInput(view.pair_id, name, rate, rate, "A", signed_in=signed_in))

    rates("ann", (ann.rater_id, ann.credential))
    rates("Bea", (None, "", "Bea"))
    skip_pair(db, app, "Bea", next_pair(db, "Bea", 3, signed_in=(None, "", "Bea")).pair_id, "cannot judge",
              signed_in=(None, "", "Bea"))
    rates("cal", (None, "", "cal"))
    raters.hub_access(db, "CAL", "olga")  # as the Results tab and `raters revoke --hub` do
    raters.hub_access(db, "dee", "olga")
    raters.hub_access(db, "dee", "olga", lift=True)
    raters.hub_access(db, "eve", "root (command line)")

    listed = invoke("raters", "list", "--db", str(path))
    assert listed.exit_code == 0, listed.output
    lines = {line.split()[0]: line for line in listed.output.splitlines()}
    assert set(lines) == {"ann", "Bea", "cal", "dee", "eve"}, listed.output
    assert lines["ann"].split()[1:3] == ["rater", "invited"] and "1 ratings, 0 skips (since " in lines["ann"]
    assert lines["Bea"].split()[1:4] == ["hub", "hub", "active"] and "1 ratings, 1 skips (first seen " in lines["Bea"]
    revokes = {r["name"]: r for r in db.query("SELECT * FROM hub_revokes")}
    assert f"revoked {revokes['CAL']['revoked_at']} by olga" in lines["cal"] and "1 ratings, 0 skips" in lines["cal"]
    assert f"active again (revoke lifted {revokes['dee']['lifted_at']} by olga)" in lines["dee"]
    assert "0 ratings, 0 skips" in lines["dee"]
    assert f"revoked {revokes['eve']['revoked_at']} by root (command line)" in lines["eve"]

    rows = {r["name"]: r for r in json.loads(invoke("raters", "list", "--db", str(path), "--json").output)}
    assert (rows["ann"]["role"], rows["ann"]["source"]) == ("rater", "invited")
    assert {n: (rows[n]["role"], rows[n]["source"]) for n in ("Bea", "cal", "dee", "eve")} == dict.fromkeys(
        ("Bea", "cal", "dee", "eve"), ("hub", "hub"))
    assert (rows["Bea"]["ratings"], rows["Bea"]["skips"], rows["Bea"]["revoked_at"]) == (1, 1, None)
    assert (rows["cal"]["revoked_at"], rows["cal"]["revoked_by"]) == (revokes["CAL"]["revoked_at"], "olga")
    assert (rows["dee"]["revoked_at"], rows["dee"]["lifted_by"]) == (None, "olga")
    assert rows["eve"]["revoked_by"] == "root (command line)" and rows["eve"]["ratings"] == 0


def test_a_sign_in_link_to_every_address_says_to_name_this_machine_in_it(tmp_path):
    """Start audit, 2026-12-06: an app configured to serve a network (app.host = "0.0.0.0") had `raters add` print
    http://0.0.0.0:PORT/?invite=... as the rater's link, an address no other machine can open, without a word. The
    link now comes with a note naming this machine as the example to put there, and --url for the next links; a
    link to one address has none."""
    import socket

    spread, here = tmp_path / "spread.toml", tmp_path / "here.toml"
    spread.write_text('[app]\nhost = "0.0.0.0"\nport = 7865\n', encoding="utf-8")
    here.write_text('[app]\nhost = "127.0.0.1"\nport = 7865\n', encoding="utf-8")
    db = str(tmp_path / "r.db")
    added = CliRunner().invoke(cli, ["raters", "add", "ann", "--db", db, "--config", str(spread)])
    assert added.exit_code == 0, added.output
    assert "sign-in link: http://0.0.0.0:7865/?invite=" in added.output
    assert "0.0.0.0 means every address of this machine, and no other machine can open it" in added.output
    assert f"--url http://{socket.gethostname()}:7865/ writes the next links so" in added.output
    local = CliRunner().invoke(cli, ["raters", "add", "bob", "--db", db, "--config", str(here)])
    assert local.exit_code == 0 and "sign-in link: http://127.0.0.1:7865/" in local.output
    assert "note:" not in local.output


def test_a_config_naming_an_ipv6_host_is_refused_before_a_code_is_made(tmp_path):
    """Stop audit, 2026-12-07: the app refuses an IPv6 app.host at its start (Gradio cannot serve on one), but `raters
    add` read the same config and printed http://:::7860/?invite=..., a link to an app that can never start there,
    and spent a code shown once on it. A config file naming an IPv6 host is now refused where it is read, naming the
    file, the key and the hosts that work, before any code is made."""
    import sqlite3

    bad = tmp_path / "v6.toml"
    bad.write_text('[app]\nhost = "::"\nport = 7865\n', encoding="utf-8")
    db = tmp_path / "r.db"
    added = CliRunner().invoke(cli, ["raters", "add", "ann", "--db", str(db), "--config", str(bad)])
    assert added.exit_code != 0
    assert f"{bad}: app.host = '::' is an IPv6 address" in added.output
    assert '"127.0.0.1"' in added.output and '"0.0.0.0"' in added.output
    assert "invite=" not in added.output and "personal code" not in added.output
    if db.exists():  # nothing was stored for ann: no code was spent
        assert sqlite3.connect(db).execute("SELECT count(*) FROM raters").fetchone()[0] == 0


def test_tune_names_fallbacks_and_never_recommends_a_setting_that_fell_back(make_config, data_dir, monkeypatch):
    """Audit, 2026-12-04: a trial whose assisted call failed in half its runs (each redone by the target alone, and
    rightly not timed as assisted) was ranked on its surviving runs and printed as "best" without a word. The table
    now counts each trial's fallbacks, the summary says what they mean, and "best" is chosen among the trials that
    never fell back."""
    import evalkit.generation.paths as paths

    real, calls = paths._call, {"n": 0}

    def flaky(pair, prompt, seed, path, extra, *args, **kwargs):  # draft length 2 fails every other request
        if path == "assisted" and pair.cfg.assistant.num_assistant_tokens == 2:
            calls["n"] += 1
            if calls["n"] % 2:
                raise paths.StageError("generate", RuntimeError("draft cache out of sync"), 0.001)
        return real(pair, prompt, seed, path, extra, *args, **kwargs)

    monkeypatch.setattr(paths, "_call", flaky)
    cfg = make_config(draft="target_copy", **{"bench.prompts": ["writing-02"]})
    r = invoke("tune", "--config", str(cfg), "--tokens", "2,6", "--schedules", "constant", "--thresholds", "0",
               "--reps", "4")
    assert r.exit_code == 0, r.output
    db = open_db(data_dir / "evalkit.db")
    fell = {t["num_assistant_tokens"]: t["fallbacks"] for t in db.query("SELECT * FROM tune_trials")}
    assert fell == {20: 0, 2: 2, 6: 0}
    row = next(ln for ln in r.stdout.splitlines() if ln.split()[:1] == ["2"])
    assert row.split()[-1] == "2/4" and "1 trial(s) fell back to the target alone" in r.stdout
    assert "none of them is recommended" in r.stdout
    best = r.stdout.split("best: ", 1)[1]
    assert best.startswith("num_assistant_tokens = 6") or best.startswith("num_assistant_tokens = 20")


def test_ctrl_c_during_bench_leaves_no_empty_experiment_or_worker_files(make_config, data_dir, monkeypatch):
    """Ctrl-C during `evalkit bench` (here at its second worker process, the first one's results written) ended with
    click's bare "Aborted!" and left the experiment, which stores its runs only at the end, empty in the database, and
    the workers' folder beside it (their results, and the config with its passcodes). Now both go, the command says
    that no run was stored and how to go on, and it ends with the shell's status for a Ctrl-C (130)."""
    import evalkit.generation.bench.run as bench_run

    real, calls = bench_run._run_worker_process, []

    def second_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bench_run, "_run_worker_process", second_interrupted)
    cfg = make_config(**{"bench.prompts": ["writing-01"], "decoding.max_new_tokens": 8})
    r = CliRunner().invoke(cli, ["bench", "--config", str(cfg), "--reps", "1"])
    assert r.exit_code == 130 and len(calls) == 2, r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("bench interrupted: no run was stored") and last.endswith("run `evalkit bench` again"), last
    assert "was removed" in last and "Aborted" not in r.output
    db = open_db(data_dir / "evalkit.db")
    assert db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == 0
    assert sorted(p.name for p in data_dir.iterdir() if ".bench" in p.name) == []


def test_ctrl_c_as_bench_hands_its_plan_over_leaves_no_empty_experiment(make_config, data_dir, monkeypatch):
    """A stop after the experiment is made and before the first worker starts (as its plan is handed to the
    processes) fell outside the cleanup and left the empty experiment: it goes too, with the same words."""
    import evalkit.generation.handoff as handoff

    real = handoff.share_decision

    def handed_then_interrupted(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(handoff, "share_decision", handed_then_interrupted)
    cfg = make_config(**{"bench.prompts": ["writing-01"], "decoding.max_new_tokens": 8})
    r = CliRunner().invoke(cli, ["bench", "--config", str(cfg), "--reps", "1"])
    assert r.exit_code == 130, r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("bench interrupted: no run was stored") and "experiment 1 was removed" in last, last
    db = open_db(data_dir / "evalkit.db")
    assert db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == 0
    assert sorted(p.name for p in data_dir.iterdir() if ".bench" in p.name) == []
