"""Provenance in the report, the dataset card and `aggregate --json`; no figure without its stored run;
an export reloads as the rows just written.

The study here is real where it matters for provenance: generations from the tiny Transformers pair
through the real paths (so the stored compatibility record and prompt records are the real ones), rated
through the real submission code; the benchmark rows are synthetic timings stored through `store`.
"""

import json
import re

import pytest
from click.testing import CliRunner

from evalkit.aggregate import aggregate
from evalkit.cli import cli
from evalkit.config import AppConfig, load_config
from evalkit.publish.export import SPLITS, export, split_file
from evalkit.study.gate import gate_snapshot
from evalkit.task.prompts import CRITERIA, load_prompts
from evalkit.task.prompts import prompt_hash
from evalkit.publish.provenance import WITHHELD, build_provenance, period
from evalkit.rating.queue import RatingInput, submit_rating
from evalkit.records import GenerationRecord, ProcessRecord, TimingRun
from evalkit.publish.report import build_report
from evalkit.store import insert_bench_process, insert_experiment, insert_pairs, open_db
from test_aggregate import GATE

PROMPT_IDS = ["writing-01", "writing-02"]
ALL_PASS = {c: "pass" for c in CRITERIA}


def _bench(db, cfg_dict, compat, prompts):
    """A stored benchmark: 2 prompts x 2 paths x 2 rounds x 3 reps; assisted about twice as fast; the draft
    adds 300 MB (after load, and to the process's peak RSS during the runs: no CUDA memory is recorded)."""
    exp = insert_experiment(db, "bench", cfg_dict, compat, gate={})
    for rnd in (1, 2):
        for order, (path, rss, secs) in enumerate((("ordinary", 1000.0, 2.0), ("assisted", 1300.0, 1.0))):
            runs = []
            for p in prompts:
                for rep in range(3):
                    s = secs + 0.01 * rep
                    g = GenerationRecord(prompt_id=p.id, path=path, text="x", new_tokens=20, stop_reason="eos",
                                         generate_seconds=s, token_hash=f"{p.id}{rep}", device="cuda:0",
                                         peak_rss_mb=rss,
                                         effective_config={"prompt": {"id": p.id, "hash": prompt_hash(p),
                                                                      "material": p.material, "task": p.task,
                                                                      "max_new_tokens": p.max_new_tokens}})
                    runs.append((TimingRun(path=path, prompt_id=p.id, round=rnd, rep=rep, seed=rep, new_tokens=20,
                                           stop_reason="eos", seconds=s, tokens_per_second=20 / s), [g]))
            insert_bench_process(db, exp, ProcessRecord(path=path, round=rnd, order=order, rss_after_load_mb=rss), runs)
    return exp


@pytest.fixture
def study(tmp_path, make_config):
    """A pool of real generations (tiny pair), rated by 3 raters, and a stored benchmark."""
    from evalkit.generation.models import load_pair
    from evalkit.generation.paths import run_assisted, run_ordinary

    cfg = load_config(make_config())
    pair = load_pair(cfg, progress=False)
    prompts = load_prompts(ids=PROMPT_IDS)
    db = open_db(tmp_path / "s.db")
    (tmp_path / "gate.toml").write_text(GATE)
    pool = insert_experiment(db, "pool", cfg.to_dict(), pair.compat, gate=gate_snapshot(tmp_path / "gate.toml"))
    specs = []
    for i, p in enumerate(prompts):
        o = run_ordinary(pair, p, 7)
        (a,) = run_assisted(pair, p, 7)
        specs.append({"prompt_id": p.id, "sample": 0, "ordinary": o, "assisted": a, "ordinary_side": "AB"[i % 2]})
    ids = insert_pairs(db, pool, specs)
    for pid in ids:
        for rater in ("r1", "r2", "r3"):
            submit_rating(db, AppConfig(), RatingInput(pid, rater, ALL_PASS, ALL_PASS, "tie"))
    bench = _bench(db, cfg.to_dict(), pair.compat, prompts)
    return {"db": db, "pool": pool, "bench": bench, "compat": pair.compat, "prompts": prompts, "cfg": cfg,
            "path": tmp_path / "s.db", "tmp": tmp_path}


def _last_record(db, exp_id):
    """The experiment's last stored row: a generation, or a pair (stored just after its generations)."""
    return db.execute("SELECT MAX(t) FROM (SELECT created_at AS t FROM generations WHERE experiment_id = :e "
                      "UNION ALL SELECT created_at FROM pairs WHERE experiment_id = :e)", {"e": exp_id}).fetchone()[0]


@pytest.mark.slow
def test_provenance_record_names_everything_behind_the_numbers(study):
    import accelerate
    import torch
    import transformers

    import evalkit

    db, compat = study["db"], study["compat"]
    prov = build_provenance(db)
    assert prov.sources["speed"] == [study["bench"]] and prov.sources["memory"] == [study["bench"]]
    assert prov.sources["ratings"] == [study["pool"]] and prov.sources["gate"] == [study["pool"]]
    pool, bench = prov.experiment(study["pool"]), prov.experiment(study["bench"])
    for e in (pool, bench):
        row = next(db.query("SELECT * FROM experiments WHERE id = ?", [e.id]))
        assert e.started == row["created_at"] and e.ended == _last_record(db, e.id) and e.ended >= e.started
        # the hash of the config as published: its model folders (under pytest's temporary folder) are cut short
        from evalkit.publish.scrub import published_config_row
        from evalkit.store.runs import json_hash

        published = json.loads(published_config_row(row["config_json"], row["config_hash"])[0])
        assert e.config_hash == json_hash(published) and "pytest-of" not in json.dumps(published)
        assert e.versions["evalkit"] == evalkit.__version__ and e.versions["transformers"] == transformers.__version__
        assert e.versions["torch"] == torch.__version__ and e.versions["accelerate"] == accelerate.__version__
        assert e.dtype == "float32" and e.device == "cpu"
        assert e.target.weights_digest == compat.target.weights_digest is not None
        assert e.draft.tokenizer_vocab_hash == compat.draft.tokenizer["vocab_hash"] is not None
    assert bench.devices_used == ["cuda:0"] and pool.devices_used == ["cpu"]
    assert prov.gate["hash"] == gate_snapshot(study["tmp"] / "gate.toml")["hash"] and prov.gate["hash_ok"]
    assert prov.gate["text"] == GATE
    # prompts: the text and hash stored with the real generations, plus the hash of the exact input ids
    by_id = {p.id: p for p in prov.prompts}
    assert sorted(by_id) == PROMPT_IDS
    for p in study["prompts"]:
        assert by_id[p.id].hashes == [prompt_hash(p)] and by_id[p.id].source == "stored with the runs"
        assert by_id[p.id].material == p.material and by_id[p.id].task == p.task
    stored = json.loads(db.execute("SELECT effective_config FROM generations WHERE experiment_id = ? LIMIT 1",
                                   [study["pool"]]).fetchone()[0])
    assert re.fullmatch(r"[0-9a-f]{16}", stored["prompt"]["input_ids_hash"])
    s = prov.scope
    assert (s.prompts, s.pairs, s.samples_per_prompt) == (PROMPT_IDS, 2, [1, 1])
    assert (s.timing_runs, s.repetitions, s.rounds) == (24, [3, 3], 2)
    assert (s.matched_pairs, s.comparable_pairs) == (12, 12)
    assert (s.current_ratings, s.raters, s.rated_pairs) == (6, 3, 2)
    figs = {f.name: f for f in prov.figures}
    sp = aggregate(db).speed.speedup
    assert figs["speed-up"].experiments == [study["bench"]] and figs["speed-up"].value.startswith(f"{sp:.2f}x (95% CI")
    assert 1.9 < sp < 2.1
    assert figs["extra memory of the draft"].value == "300 MB"
    json.dumps(prov.to_json())  # serialisable as is


@pytest.mark.slow
def test_report_card_and_json_carry_the_provenance(study):
    db, tmp = study["db"], study["tmp"]
    page = build_report(db, tmp / "report").read_text(encoding="utf-8")
    export(db, tmp / "export")
    card = (tmp / "export" / "README.md").read_text(encoding="utf-8")
    r = CliRunner().invoke(cli, ["aggregate", "--db", str(study["path"]), "--json"])
    assert r.exit_code == 0, r.output
    as_json = json.loads(r.stdout)["provenance"]
    prov = build_provenance(db)
    import transformers

    for doc in (page, card):
        for e in prov.experiments:
            assert f"experiment {e.id} ({e.kind}, {period(e.started, e.ended)})" in doc
            assert e.started in doc and e.ended in doc  # the experiments table: full stored timestamps
            assert e.config_hash in doc
        assert f"transformers {transformers.__version__}" in doc and "dtype float32" in doc
        assert study["compat"].target.weights_digest in doc and study["compat"].draft.weights_digest in doc
        assert study["compat"].target.tokenizer["vocab_hash"] in doc
        assert prov.gate["hash"] in doc and "min_speedup_ci_low = 1.1" in doc
        for p in study["prompts"]:
            assert prompt_hash(p) in doc and p.material in doc
        assert "300 MB" in doc and "3, 2 round(s)" in doc  # memory figure, repetitions and rounds
    assert [e["id"] for e in as_json["experiments"]] == [study["pool"], study["bench"]]
    assert as_json["gate"]["hash"] == prov.gate["hash"] and as_json["scope"]["comparable_pairs"] == 12
    # in the report, every decided gate condition names its runs
    for c in re.findall(r"<li><b>[^<]+</b>: (?:ok|FAIL) — (.*?)</li>", page):
        assert "[experiment " in c, c


@pytest.mark.slow
def test_each_run_records_the_commit_it_ran_from_and_the_card_says_where_to_rerun_it(study):
    """Export audit, 2026-12-06: the card gave evalkit's version (0.1.0, never bumped between commits) and no word on
    how to run its experiments again, so a reader could not tell which code made them. Each compatibility record now
    keeps the commit of the checkout that ran (`versions.evalkit_commit`, "+changes" where its tracked files differed),
    the card's environment lines name it, and its Provenance points to the README's steps."""
    import subprocess
    from pathlib import Path

    import evalkit
    from evalkit.publish.export import RERUN_POINTER

    root = Path(evalkit.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True).stdout.strip()
    commit = (head + ("+changes" if changed else "")) if (root / ".git").exists() else None
    db, tmp = study["db"], study["tmp"]
    for e in build_provenance(db).experiments:
        assert e.versions["evalkit_commit"] == commit
    export(db, tmp / "export")
    card = (tmp / "export" / "README.md").read_text(encoding="utf-8")
    assert f"evalkit {evalkit.__version__} (commit {commit or 'not recorded'}), transformers " in card
    assert RERUN_POINTER in card.split("## Provenance")[1]


def test_the_readme_s_steps_to_rerun_an_export_name_commands_options_and_keys_that_exist():
    """The README's steps from an export's card to its runs again: every `evalkit` command they give exists with the
    options they pass, every config key they name is a key of the config, every record key is stored, and the card
    points at the section by its title (evalkit.publish.export.RERUN_SECTION)."""
    from dataclasses import fields
    from pathlib import Path

    from evalkit.config import Config
    from evalkit.generation.compat import CompatibilityRecord, ModelFacts, versions
    from evalkit.publish.export import RERUN_SECTION

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert f"### {RERUN_SECTION}\n" in readme
    section = readme.split(f"### {RERUN_SECTION}\n")[1].split("\n## ")[0].split("\n### ")[0]
    commands = [" ".join(c.split()) for c in re.findall(r"`(evalkit [a-z][^`]*)`", section)]
    assert {c.split()[1] for c in commands} >= {"check", "run", "generate", "bench", "aggregate"}, commands
    for command in commands:
        words = command.split()
        r = CliRunner().invoke(cli, [words[1], "--help"])
        assert r.exit_code == 0, (command, r.output)
        for option in (w for w in words[2:] if w.startswith("--")):
            assert re.search(rf"(^|\s){re.escape(option)}\b", r.output, re.M), (command, option)
    keys = re.findall(r"`((?:models|decoding|assistant|bench|pool|app)\.[a-z_]+)`", section)
    assert len(keys) >= 10, keys
    for key in keys:
        part, name = key.split(".")
        assert name in {f.name for f in fields(getattr(Config(), part))}, key
    assert "`gate_file`" in section and "gate_file" in {f.name for f in fields(Config)}
    # an exported config less `app`, as step 2 writes it, is a config evalkit reads
    from evalkit.config import from_dict
    from evalkit.publish.scrub import published_config

    kept = {k: v for k, v in published_config(Config().to_dict()).items() if k != "app"}
    assert "`app`" in section and from_dict(kept).to_dict() == Config().to_dict()
    for key in re.findall(r"`((?:target|draft)\.[a-z_]+)`", section):
        assert key.split(".")[1] in {f.name for f in fields(ModelFacts)}, key
    assert "versions" in {f.name for f in fields(CompatibilityRecord)} and "evalkit_commit" in versions()
    assert "`versions.evalkit_commit`" in section
    for script in re.findall(r"`(scripts/[\w.]+)`", section):
        assert (root / script).is_file(), script


@pytest.mark.slow
def test_a_figure_whose_run_is_not_stored_is_not_printed(study):
    """An aggregate whose benchmark is not in the database (here: an id that does not exist) must not
    put its speed-up or memory figure into the report or the card."""
    db, tmp = study["db"], study["tmp"]
    agg = aggregate(db)
    speed_reason = next(c.reason for c in agg.verdict.conditions if c.name == "speed-up")
    mem_reason = next(c.reason for c in agg.verdict.conditions if c.name == "memory")
    assert "300 MB" in mem_reason
    agg.speed.experiment_id = 999_999
    agg.speed.benchmark_ids = [999_999]  # every benchmark it pools (all of the study's pair)
    agg.speed.memory_benchmark_ids = [999_999]  # and those the memory figure compared
    page = build_report(db, tmp / "r", agg=agg).read_text(encoding="utf-8")
    export(db, tmp / "e", agg=agg)
    card = (tmp / "e" / "README.md").read_text(encoding="utf-8")
    for doc in (page, card):
        assert WITHHELD in doc
        assert "300 MB" not in doc and f"{agg.speed.speedup:.2f}x" not in doc
        assert "experiment 999999" not in doc
    assert speed_reason not in page and mem_reason not in page
    # the speed tables and plots go too; the ratings' figures stay, with their run
    for name in ("timing", "speedup"):
        assert re.search(rf"<h3>{name}</h3><p class=\"src\">{WITHHELD}</p>", page), name
    assert page.count("data:image/png;base64,") == 3
    assert f"experiment {study['pool']} (pool," in page


def _documented_reload(out_dir):
    """Run the reload call exactly as the card documents it."""
    card = (out_dir / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", card, re.S).group(1)
    # the card names the folder, not where the exporter kept it (its path may name a user): the reader puts hers
    documented = f'load_dataset("path/to/{out_dir.name}", "ratings", split="train")'
    assert documented in code and str(out_dir.parent) not in card
    code = code.replace(f"path/to/{out_dir.name}", str(out_dir))
    scope: dict = {}
    exec(code, scope)  # noqa: S102 - the card's own snippet, written by export()
    return scope["ratings"]


def test_reloading_an_export_gives_the_rows_just_written(tmp_path):
    from apphelpers import skip_of_before
    from test_aggregate import load_fixture

    db = open_db(tmp_path / "x.db")
    ids = load_fixture(db, tmp_path / "gate.toml")
    first, second = tmp_path / "first" / "export", tmp_path / "second" / "export"
    export(db, first)
    assert _documented_reload(first).num_rows == 12
    skip_of_before(db, "r4", ids[0], "unclear")  # one more ratings row (the fixture's study is decided)
    export(db, second)  # same folder name, another parent
    assert _documented_reload(second).num_rows == 13
    assert _documented_reload(first).num_rows == 12  # the first export is still itself
    for pid in ids[1:]:
        skip_of_before(db, "r4", pid, "unclear")
    export(db, first)  # the same folder overwritten
    assert _documented_reload(first).num_rows == 16
    assert len(list((first / "data").glob("ratings*.parquet"))) == 1  # the earlier file is gone
    # same row count, other content: rater names kept this time
    export(db, first, keep_rater_names=True)
    assert set(_documented_reload(first)["rater"]) == {"r1", "r2", "r3", "r4"}
    # the file name is the content's hash, and split_file finds it
    import hashlib

    path = split_file(first, "ratings")
    assert hashlib.sha256(path.read_bytes()).hexdigest()[:16] in path.name
    for split in SPLITS:
        assert split_file(first, split).exists()


def test_push_replaces_the_hubs_earlier_parquet_files(tmp_path):
    from test_aggregate import load_fixture
    from test_report_export import FakeHub

    db = open_db(tmp_path / "x.db")
    load_fixture(db, tmp_path / "gate.toml")
    hub = FakeHub()
    export(db, tmp_path / "p", push_to_hub="org/study", api=hub)
    upload = next(c for c in hub.calls if c[0] == "upload_folder")[2]
    assert upload["delete_patterns"] == ["data/*.parquet"]
    # what goes up is this export's files; the earlier ones on the Hub are deleted in the same commit
    assert sorted(upload["allow_patterns"]) == sorted(
        ["README.md"] + [f"data/{split_file(tmp_path / 'p', s).name}" for s in SPLITS])
    card = (tmp_path / "p" / "README.md").read_text(encoding="utf-8")
    assert 'load_dataset("org/study", "ratings", split="train")' in card


@pytest.mark.slow
def test_a_pooled_output_is_run_again_by_the_readme_s_step_from_its_exported_row(make_config, data_dir, tmp_path):
    """The README's "Reproducing the runs from an export", step 3, done: a pooled generation's exported `prompt_id`,
    `path` and `seed` given to `evalkit run` make the same tokens (its `token_hash`), under sampling too, here on the
    same machine and versions."""
    from datasets import load_dataset

    cfg = make_config(**{"decoding.mode": "sample", "pool.prompts": ["writing-02"], "pool.samples": 1,
                         "pool.gold_rate": 0.0})
    r = CliRunner().invoke(cli, ["generate", "--config", str(cfg)])
    assert r.exit_code == 0, r.output
    out = tmp_path / "e"
    export(open_db(data_dir / "evalkit.db"), out)
    rows = [g for g in load_dataset(str(out), "generations", split="train") if g["status"] == "ok"]
    assert {g["path"] for g in rows} == {"ordinary", "assisted"}
    for g in rows:
        r = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--db", str(tmp_path / "rerun.db"), "--prompt",
                                     g["prompt_id"], "--path", g["path"], "--seed", str(g["seed"]), "--json"])
        assert r.exit_code == 0, r.output
        (again,) = json.loads(r.stdout)
        assert again["token_hash"] == g["token_hash"] and again["text"] == g["text"], g["path"]
