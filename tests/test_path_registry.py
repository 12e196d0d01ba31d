"""A generation path is one registered object (evalkit.generation.registry): a path registered by a module of its own,
with no edit anywhere in evalkit, is benchmarked, summarised against ordinary on its own, tabled, plotted in its
colour under its label, listed in the export's card and given a box on the Live tab. And the schema holds no list of
path names (migration 014): the store refuses an unregistered path in code."""

import importlib
import json
import sqlite3
import sys
import uuid

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.config import load_config
from evalkit.errors import EvalkitError
from evalkit.generation import registry
from evalkit.records import GenerationRecord
from evalkit.store import insert_experiment, insert_generations, open_db

LABEL = "Lookup short — two n-gram tokens from the prompt"
PLUGIN = f'''
from evalkit.generation.registry import PathSpec, register

register(PathSpec(name="lookup_short", label="{LABEL}", colour="tab:olive",
                  generate_kwargs=lambda pair: {{"prompt_lookup_num_tokens": 2, "max_matching_ngram_size": 2}},
                  drafts=True, versus_ordinary=True))
'''


@pytest.fixture
def extra_path(tmp_path, monkeypatch):
    """A path registered by a module outside evalkit, importable by the benchmark's worker processes too."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    module = f"extra_path_{uuid.uuid4().hex[:8]}"
    (folder / f"{module}.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    importlib.import_module(module)
    try:
        yield registry.get("lookup_short")
    finally:
        registry.unregister("lookup_short")
        sys.modules.pop(module, None)


def test_registry_rules():
    assert registry.names()[:4] == ["ordinary", "assisted", "fallback", "prompt_lookup"]
    assert registry.choices() == ["ordinary", "assisted", "prompt_lookup"]  # the fallback is never asked for
    assert registry.versus_ordinary() == ["assisted", "prompt_lookup"]
    with pytest.raises(EvalkitError, match="registered already"):
        registry.register(registry.PathSpec(name="assisted", label="x", colour="red"))
    with pytest.raises(EvalkitError, match="plain lower-case identifier"):
        registry.register(registry.PathSpec(name="Bad Name", label="x", colour="red"))
    with pytest.raises(EvalkitError, match="cannot be removed"):
        registry.unregister("ordinary")
    with pytest.raises(EvalkitError, match="(?s)unknown path 'nope'.*use one of: ordinary"):
        registry.get("nope")


def test_bench_runs_the_paths_the_registry_allows(make_config):
    """One answer for which paths run: the benchmark's and the paths module's are the same function."""
    from evalkit.generation.models import check_compat, load_pair
    from evalkit.generation.paths import available_paths

    cfg = load_config(make_config(**{"assistant.prompt_lookup_num_tokens": 3}))
    compat = check_compat(cfg, False)
    assert registry.available(cfg, compat, benched=True) == ["ordinary", "assisted", "prompt_lookup"]
    assert available_paths(load_pair(cfg, progress=False)) == ["ordinary", "assisted", "prompt_lookup"]
    from evalkit.ui.live import live_paths

    assert [p.name for p in live_paths(cfg)] == ["ordinary", "assisted", "prompt_lookup"]  # a box of its own
    off = load_config(make_config(load_draft=False))
    assert registry.available(off, check_compat(off, False), benched=True) == ["ordinary"]


def _bench_in_process(cfg, db, paths):
    """The benchmark's own worker and store functions, each path measured in this process, one round (the
    end-to-end test below runs both rounds in worker processes)."""
    from evalkit.generation.bench.worker import run_worker
    from evalkit.generation.models import check_compat
    from evalkit.records import BatchRun, ProcessRecord, TimingRun
    from evalkit.store import insert_bench_processes

    exp = insert_experiment(db, "bench", cfg.to_dict(), check_compat(cfg, False), gate={})
    done = []
    for k, path in enumerate(paths):
        r = run_worker(cfg, path, 1, k, cfg.bench.prompts)
        done.append((ProcessRecord(**r["process"]),
                     [(TimingRun(**x["run"]), [GenerationRecord(**g) for g in x["records"]]) for x in r["runs"]],
                     [(BatchRun(**x["run"]), None) for x in r["batch_runs"]]))
    insert_bench_processes(db, exp, done)
    return exp


def test_an_extra_path_flows_through_summary_aggregate_report_export_and_live(make_config, data_dir, extra_path):
    from evalkit.aggregate import aggregate
    from evalkit.generation.bench import format_summary, summarize
    from evalkit.generation.models import check_compat
    from evalkit.publish.export import column_notes, path_notes
    from evalkit.publish.report import figures
    from evalkit.ui.live import live_paths, timing_table

    cfg = load_config(make_config(**{"bench.prompts": ["writing-02"], "bench.reps": 1, "load_draft": False}))
    paths = registry.available(cfg, check_compat(cfg, False), benched=True)
    assert paths == ["ordinary", "lookup_short"]  # switched on by default, benched by default
    db = open_db(data_dir / "evalkit.db")
    exp = _bench_in_process(cfg, db, paths)

    s = summarize(db, exp)
    assert list(s.paths) == ["ordinary", "lookup_short"]
    v = s.versus_ordinary["lookup_short"]
    assert v.matched_pairs == 1 and v.comparable_pairs == 1 and v.identical_outputs == 1.0  # greedy, float32
    assert v.speedup is not None and v.acceptance_rate is not None
    assert s.speedup is None and s.matched_pairs == 0  # never mixed into assisted's figure (which did not run)
    text = format_summary(s)
    assert f"lookup_short vs ordinary ({LABEL}): speed-up {v.speedup:.2f}x" in text

    agg = aggregate(db)
    sp = agg.tables["speedup"]
    mine = sp[sp["path"] == "lookup_short"]
    assert set(mine["prompt_id"]) == {"all", "writing-02"} and mine["speedup"].notna().all()
    assert set(sp[sp["path"] == "assisted"]["matched_pairs"]) == {0}  # assisted's rows stay its own
    assert agg.speed.speedup is None  # the verdict weighs assisted only
    assert "lookup_short" in set(agg.tables["timing"]["path"])

    figs = figures(agg, db)
    legend = [t.get_text() for t in figs["speedup"].axes[0].get_legend().get_texts()]
    assert f"{LABEL} vs ordinary" in legend
    scatter = figs["seconds_vs_tokens"].axes[0]
    assert LABEL in [t.get_text() for t in scatter.get_legend().get_texts()]
    colours = {c.get_label(): tuple(c.get_facecolor()[0]) for c in scatter.collections}
    from matplotlib.colors import to_rgba

    assert colours[LABEL] == pytest.approx(to_rgba("tab:olive", 0.6))
    assert "lookup_short" in column_notes("generations") and f"`lookup_short`: {LABEL}" in path_notes()

    assert [p.name for p in live_paths(cfg)] == ["ordinary", "assisted", "lookup_short"]
    runs = [GenerationRecord(**r) for r in db.query(
        "SELECT prompt_id, path, status, new_tokens, stop_reason, generate_seconds FROM generations "
        "WHERE path IN ('ordinary', 'lookup_short') ORDER BY id LIMIT 2")]
    table = timing_table(runs, cfg.bench.length_tolerance)
    assert "| lookup_short | ok |" in table and "- **lookup_short**: " in table


@pytest.mark.slow  # a real benchmark (worker processes import the module that registered the path) and the app
def test_an_extra_path_end_to_end_bench_and_live_tab(make_config, data_dir, extra_path, tiny_models, tmp_path):
    from apphelpers import served, write_config
    from test_app_client import Tab

    cfg = make_config(**{"bench.prompts": ["writing-02"], "bench.reps": 1, "load_draft": False})
    r = CliRunner().invoke(cli, ["bench", "--config", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert {run["path"] for run in out["runs"]} == {"ordinary", "lookup_short"}
    assert out["summary"]["versus_ordinary"]["lookup_short"]["comparable_pairs"] == 2
    db = open_db(data_dir / "evalkit.db")
    assert [p["path"] for p in db.query("SELECT path FROM bench_processes ORDER BY id")] == [
        "ordinary", "lookup_short", "lookup_short", "ordinary"]  # ABBA, each in its own process

    app_cfg = load_config(write_config(tmp_path / "app.toml", tiny_models))
    app_cfg.decoding.temperature = 5.0  # a flat distribution: the live outputs are no pooled output (none here)
    with served(app_cfg, data_dir / "live.db") as url:
        tab = Tab(url)
        assert LABEL in tab.labels["/live"]
        shown = tab.call("/live", "writing-01", "")
    assert shown[LABEL] and "| lookup_short | ok |" in shown["timing table"]


# ---------------------------------------------------------------- migration 014: no list of paths in the schema

def test_migration_014_keeps_every_row_and_drops_only_the_path_list(tmp_path, monkeypatch):
    from evalkit.store import migrations

    path = tmp_path / "old.db"
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS", [x for x in migrations.MIGRATIONS if x[0] < "014"])
        db = open_db(path)
    exp = insert_experiment(db, "run", {"a": 1}, {"verdict": "same_tokenizer"})
    failed = GenerationRecord(prompt_id="writing-01", path="assisted", status="failed", error_class="X", error_stage="generate")
    fallback = GenerationRecord(prompt_id="writing-01", path="fallback", text="f", fallback_of=-1, batch_size=1)
    ordinary = GenerationRecord(prompt_id="writing-01", path="ordinary", text="o", token_ids=[1, 2], new_tokens=2,
                                draft_tokens=None, candidate_generator="", rank=1, host="h", device="cpu", batch_size=3)
    ids = insert_generations(db, [failed, fallback, ordinary], exp)
    db.conn.execute("INSERT INTO timing_runs (experiment_id, generation_id, path, prompt_id, round, rep, seed, "
                    "new_tokens, stop_reason, seconds, status) VALUES (?, ?, 'ordinary', 'writing-01', 1, 0, 1, 2, 'eos', 0.5, 'ok')",
                    [exp, ids[2]])
    db.conn.commit()
    with pytest.raises(sqlite3.IntegrityError):  # before: the schema's list refuses a new path
        db.conn.execute("UPDATE generations SET path = 'lookup_short' WHERE id = ?", [ids[2]])
    db.conn.rollback()

    def dump():
        con = sqlite3.connect(path)
        con.row_factory = sqlite3.Row
        try:
            return {t: [dict(r) for r in con.execute(f"SELECT * FROM {t} ORDER BY rowid")]
                    for t in ("generations", "timing_runs")}
        finally:
            con.close()

    before = dump()
    db.conn.close()
    db = open_db(path)
    assert dump() == before
    assert db.execute("PRAGMA foreign_key_check").fetchall() == [] and db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("SELECT fallback_of FROM generations WHERE id = ?", [ids[1]]).fetchone()[0] == ids[0]
    schema = db.execute("SELECT sql FROM sqlite_master WHERE name = 'generations'").fetchone()[0]
    assert "'prompt_lookup'" not in schema and "CHECK (status IN ('ok', 'failed'))" in schema
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'generations_prompt_path'").fetchone()
    db.conn.execute("UPDATE generations SET path = 'lookup_short' WHERE id = ?", [ids[2]])  # the schema allows it
    db.conn.rollback()
    with pytest.raises(sqlite3.IntegrityError):  # every other rule stays
        db.conn.execute("UPDATE generations SET status = 'weird' WHERE id = ?", [ids[2]])
    db.conn.rollback()
    with pytest.raises(EvalkitError, match="unregistered path 'lookup_short'"):  # the store asks the registry
        insert_generations(db, [GenerationRecord(prompt_id="writing-01", path="lookup_short")], exp)


def test_a_registered_path_is_stored_without_a_migration(tmp_path, extra_path):
    db = open_db(tmp_path / "new.db")
    (gid,) = insert_generations(db, [GenerationRecord(prompt_id="writing-01", path="lookup_short", text="x")], None)
    assert db["generations"].get(gid)["path"] == "lookup_short"
