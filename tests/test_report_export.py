"""Report and export on the committed fixture; the Hub push with the client substituted."""

import io
import json

import pytest
from click.testing import CliRunner

from apphelpers import pool_db, pool_template  # noqa: F401  (a real pool of the tiny models)
from evalkit.cli import cli
from evalkit.publish.export import SPLITS, export, split_file
from evalkit.publish.scrub import pseudonym, pseudonyms
from evalkit.publish.report import build_report
from evalkit.store import open_db
from evalkit.task.criteria import CRITERIA


@pytest.fixture
def db(rated_db):
    return rated_db


def test_report_is_self_contained_html_with_plots_and_verdict(db, tmp_path):
    path = build_report(db, tmp_path / "report")
    page = path.read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 5
    assert "Verdict: DROP" in page and "No added promises · 不添加承诺" in page
    assert not any(c in page for c in CRITERIA), "a criterion is named by its id, not its title"
    # whom the claim covers (the fixture's gate: these raters only), in the verdict and in its reasons
    assert "The quality claim is about these 3 raters only" in page and "for these 3 raters only:" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_report_escapes_the_text_it_shows(db, tmp_path):
    """Markup in text the report does show (the frozen gate's text) arrives escaped, and rater text (a name, a skip reason) does not arrive at all. The escaped forms are
    asserted too, so the test fails if escaping is turned off rather than passing because nothing got through."""
    from apphelpers import skip_of_before

    from evalkit.config import AppConfig
    from evalkit.rating.queue import PairTaken, skip_pair

    evil = "<script>alert(1)</script>"
    exp_id, gate_json = db.execute(
        "SELECT id, gate_json FROM experiments WHERE kind = 'pool'").fetchone()
    gate = json.loads(gate_json)
    gate["text"] += f"\n# {evil}\n"
    db.execute("UPDATE experiments SET gate_json = ? WHERE id = ?", [json.dumps(gate), exp_id])
    pid = db.execute("SELECT id FROM pairs LIMIT 1").fetchone()[0]
    # every pair of the fixture is rated in full, and a skip of a closed pair is refused (tests/test_skips.py): the
    # row goes in as a database written before the refusal holds it
    with pytest.raises(PairTaken):
        skip_pair(db, AppConfig(), "mallory<b>x</b>", pid, "<img src=x onerror=alert(2)>")
    skip_of_before(db, "mallory<b>x</b>", pid, "<img src=x onerror=alert(2)>")
    page = build_report(db, tmp_path / "r2").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>x</b>" not in page
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f"# {escaped}" in page, "the gate's text reaches the report, escaped"
    assert "mallory" not in page and "onerror" not in page, "rater text never reaches the report"


def test_export_roundtrips_through_load_dataset(db, tmp_path):
    from datasets import load_dataset

    out = tmp_path / "export"
    export(db, out)
    import pyarrow.parquet as pq

    for split in SPLITS:
        path = split_file(out, split)
        if db[split].count:
            loaded = load_dataset("parquet", data_files=str(path), split="train")
            assert loaded.num_rows == db[split].count, split
        else:  # datasets cannot load an empty split; the file still holds the schema
            table = pq.read_table(path)
            assert table.num_rows == 0 and "id" in table.column_names, split
    assert db["timing_runs"].count == 0  # the fixture has no benchmark: the empty case is covered
    # the whole export loads through the card's config, the way a Hub user would load it
    for split in SPLITS:
        if db[split].count:
            assert load_dataset(str(out), split, split="train").num_rows == db[split].count
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "configs:" in card and "min_speedup_ci_low" in card
    # yes/no columns are booleans, as `current` always was (export audit D7: 0/1 integers)
    for split, col in (("ratings", "blind"), ("ratings", "current"), ("generations", "live"),
                       ("generations", "counts_agree"), ("prescreen", "passed")):
        assert str(pq.read_table(split_file(out, split)).schema.field(col).type) == "bool", (split, col)
    assert pq.read_table(split_file(out, "ratings")).column("blind").to_pylist()[0] is True
    # the header says the texts' language and that no license was stated (export audit D8)
    header = card.split("---\n")[1]
    assert "\nlanguage:\n- zh\n" in header and "license: other\nlicense_name: not-stated\n" in header
    assert "**License**: not stated by the exporter" in card
    # the figure names the study and says the decision is frozen; the card carries the verdict as `aggregate` prints it
    assert "**verdict**: study 'main': DROP (frozen " in card
    assert "The quality claim is about these 3 raters only" in card
    from evalkit.aggregate import aggregate, verdict_text

    plain, shown = verdict_text(aggregate(db)).splitlines(), card.split("## Verdict")[1].split("## Rows")[0]
    for line in plain:  # each line as `aggregate` prints it; a decided condition's line names the runs behind it
        if line.startswith("  [ok  ]") or line.startswith("  [FAIL]"):
            assert line + " [experiment 1 (pool, " in shown, line
        else:
            assert line in shown, line
    for split in SPLITS:
        assert f"**{split}**" in card
    # every JSON column parses as strict JSON (a bare NaN, which Python writes, is refused by JavaScript, Go,
    # DuckDB): export audit D6. The fixture's frozen verdict holds missing figures
    stored = db.execute("SELECT verdict_json FROM decisions").fetchone()[0]
    assert "NaN" in stored

    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in exported JSON"))

    for split in SPLITS:
        for row in pq.read_table(split_file(out, split)).to_pylist():
            for col, value in row.items():
                if col.endswith("_json") and value:
                    strict(value)
    verdict = strict(pq.read_table(split_file(out, "decisions")).to_pylist()[0]["verdict_json"])
    assert verdict.keys() == json.loads(stored).keys()


def test_export_pseudonymises_raters_by_default(db, tmp_path):
    from datasets import load_dataset

    export(db, tmp_path / "e1")
    raters = set(load_dataset("parquet", data_files=str(split_file(tmp_path / "e1", "ratings")), split="train")["rater"])
    assert raters and all(r.startswith("rater-") for r in raters) and "r1" not in raters
    assert len(raters) == 3  # distinct raters stay distinct
    export(db, tmp_path / "e2", keep_rater_names=True)
    kept = set(load_dataset("parquet", data_files=str(split_file(tmp_path / "e2", "ratings")), split="train")["rater"])
    assert kept == {"r1", "r2", "r3"}
    assert pseudonym("r1", "a") != pseudonym("r1", "b")


class FakeHub:
    """The Hub client's calls an export makes. A repo in `public` exists already and is public (create_repo with
    exist_ok leaves it so); a new repo gets the visibility asked for. `files`: what the repos hold (path -> bytes),
    which a push changes as upload_folder does."""

    def __init__(self, fail=False, public=(), files=None):
        self.calls, self.fail, self.visibility = [], fail, {r: False for r in public}
        self.files = dict(files or {})

    def list_repo_files(self, repo_id, repo_type=None):
        return sorted(self.files)

    def hf_hub_download(self, repo_id, filename, repo_type=None):
        import tempfile
        from pathlib import Path

        # a folder of this fake's own, as the real client's cache, removed with the fake: none is left in /tmp
        if not hasattr(self, "_cache"):
            self._cache = tempfile.TemporaryDirectory(prefix="fakehub-")
        path = Path(tempfile.mkdtemp(dir=self._cache.name)) / filename
        path.write_bytes(self.files[filename])
        return str(path)

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))
        self.visibility.setdefault(repo_id, kw["private"])

    def head(self) -> str:
        """The repo's head commit, as a digest of what it holds (a commit that changes nothing moves it not)."""
        import hashlib

        return hashlib.sha1(repr(sorted(self.files.items())).encode()).hexdigest()

    def repo_info(self, repo_id, repo_type=None):
        from types import SimpleNamespace

        self.calls.append(("repo_info", repo_id, {"repo_type": repo_type}))
        return SimpleNamespace(private=self.visibility[repo_id], sha=self.head())

    def upload_folder(self, **kw):
        from fnmatch import fnmatch
        from pathlib import Path

        if self.fail:
            raise ConnectionError("network unreachable")
        self.calls.append(("upload_folder", kw["repo_id"], kw))
        root = Path(kw["folder_path"])
        sent = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
                and any(fnmatch(p.relative_to(root).as_posix(), pat) for pat in kw["allow_patterns"])}
        self.files = {f: b for f, b in self.files.items()
                      if not any(fnmatch(f, pat) for pat in kw.get("delete_patterns") or ())} | sent
        from types import SimpleNamespace

        return SimpleNamespace(oid=self.head())  # as the Hub: the head it had where nothing changed


def test_push_is_private_by_default_and_public_on_request(db, tmp_path):
    hub = FakeHub()
    export(db, tmp_path / "p", push_to_hub="org/study", api=hub)
    assert hub.calls[0] == ("create_repo", "org/study", {"repo_type": "dataset", "private": True, "exist_ok": True})
    push = next(c for c in hub.calls if c[0] == "upload_folder")
    assert push[2]["folder_path"] == str(tmp_path / "p") and push[2]["repo_type"] == "dataset"
    hub2 = FakeHub()
    export(db, tmp_path / "q", push_to_hub="org/study", public=True, api=hub2)
    assert hub2.calls[0][2]["private"] is False


def test_failed_push_keeps_local_export_and_says_so(db, tmp_path):
    from evalkit.errors import EvalkitError

    with pytest.raises(EvalkitError, match="(?s)push to the Hub dataset 'org/study' failed.*saved locally"):
        export(db, tmp_path / "f", push_to_hub="org/study", api=FakeHub(fail=True))
    assert split_file(tmp_path / "f", "ratings").exists()


def test_no_push_without_flag(db, tmp_path, monkeypatch):
    import huggingface_hub

    def forbidden(*a, **k):
        raise AssertionError("the Hub must not be contacted without --push-to-hub")

    monkeypatch.setattr(huggingface_hub, "HfApi", forbidden)
    r = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "rated.db"), "--out", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    assert "pushed" not in r.output


def test_aggregate_cli_json(db, tmp_path):
    r = CliRunner().invoke(cli, ["aggregate", "--db", str(tmp_path / "rated.db"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["verdict"]["decision"] == "DROP" and "pass_rates" in out["tables"]


def _points(fig) -> int:
    return sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections)


def test_for_raters_the_time_against_length_plot_leaves_out_pairs_still_open(tmp_path):
    """One output's length and seconds, coloured by path, would say which side of its pair is which: a rater's
    Results tab plots only the outputs of closed pairs (the organiser's and the report's plot shows every run)."""
    from evalkit.aggregate import aggregate
    from evalkit.config import AppConfig
    from evalkit.publish.report import figures
    from test_aggregate import GATE, load_fixture

    closed = open_db(tmp_path / "closed.db")
    load_fixture(closed, tmp_path / "g1.toml")  # 3 ratings a pair, the quota: every pair closed
    still_open = open_db(tmp_path / "open.db")
    # a 4th rating to come, in a study whose plan is not reached (a stored decision would close its pairs)
    load_fixture(still_open, tmp_path / "g2.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 8"),
                 app=AppConfig(ratings_per_pair=4))
    for db in (closed, still_open):
        assert _points(figures(aggregate(db), db)["seconds_vs_tokens"]) == 8  # 4 pairs x 2 outputs
    assert _points(figures(aggregate(closed), closed, blind=True)["seconds_vs_tokens"]) == 8
    assert _points(figures(aggregate(still_open), still_open, blind=True)["seconds_vs_tokens"]) == 0
    import matplotlib.pyplot as plt

    plt.close("all")


def test_plot_titles_fit_their_figures_and_clear_the_results_tab_s_label_chip(db):
    """On the Results tab every plot's title started mid-sentence: one long line, its start under Gradio's label
    chip, and that start said what the error bars are (demo audit L5, 2026-12-04). Each title now fits its figure,
    says what its bars are on a line of its own, and on the tab sits below the band the chip covers."""
    import matplotlib.pyplot as plt

    from evalkit.aggregate import aggregate
    from evalkit.publish.report import figures
    from evalkit.ui.results import LABEL_BAND_INCHES, shown_figures

    agg = aggregate(db)
    for band, figs in ((0.0, figures(agg, db)), (LABEL_BAND_INCHES, shown_figures(agg, db))):
        assert {"speedup", "pass_rates", "agreement", "seconds_vs_tokens"} <= set(figs)  # plots with data
        for name, fig in figs.items():
            fig.canvas.draw()
            box = fig.axes[0].title.get_window_extent()
            assert 0 <= box.x0 and box.x1 <= fig.bbox.width, f"{name}: the title is wider than its figure"
            assert box.y1 <= fig.bbox.height - band * fig.dpi, f"{name}: the title starts under the label chip"
        assert figs["speedup"].axes[0].get_title().splitlines()[1].startswith("error bars: 95% CI")
        assert "error bars: cluster-aware 95% CI" in figs["pass_rates"].axes[0].get_title().splitlines()[1]
    plt.close("all")


def test_the_figures_are_kept_out_of_pyplot_and_freed_like_any_object(db):
    """The Results tab draws its figures for several viewers at once, in the server's threads: made through pyplot,
    each stayed in pyplot's global list until a plt.close("all") at the end of the view, which a view that raised
    first never reached, so a long-running Space kept them. They are made outside pyplot now: none is listed, a
    dropped one is freed, and each still draws itself, as a PNG and through gr.Plot."""
    import gc
    import weakref

    import gradio as gr
    import matplotlib.pyplot as plt

    from evalkit.aggregate import aggregate
    from evalkit.publish.report import figures
    from evalkit.ui.results import shown_figures

    plt.close("all")
    agg = aggregate(db)
    figs = {**figures(agg, db), **{f"shown {k}": f for k, f in shown_figures(agg, db).items()}}
    assert len(figs) >= 8 and plt.get_fignums() == [], plt.get_fignums()
    for name, fig in figs.items():
        png = io.BytesIO()
        fig.savefig(png, format="png")
        assert png.getvalue().startswith(b"\x89PNG"), name
    plotted = gr.Plot().postprocess(figs["speedup"])
    assert plotted.type == "matplotlib" and plotted.plot.startswith("data:image/")
    gone = weakref.ref(figs["pass_rates"])
    del figs, plotted
    gc.collect()
    assert gone() is None, "a figure nobody holds is freed"


def test_the_export_holds_every_study_decided_or_not_and_the_frozen_decision(db, tmp_path):
    """A later study (`--new-study`) does not hide one left at an interim look: the export's `studies` and
    `decisions` tables and its card list both, and the frozen decision's sample can be checked against the ratings."""
    from datasets import load_dataset

    from evalkit.aggregate import aggregate
    from evalkit.store import insert_experiment
    from evalkit.study.gate import gate_snapshot
    from evalkit.study.synthetic import gate_file_text

    frozen = aggregate(db).frozen  # the first look that finds the planned sample complete freezes the decision
    assert frozen is not None
    other = tmp_path / "other.toml"
    other.write_text(gate_file_text(planned_pairs=300, margin=0.1), encoding="utf-8")
    insert_experiment(db, "pool", {}, {}, gate=gate_snapshot(other), new_study="second")
    out = tmp_path / "e"
    export(db, out)
    assert load_dataset(str(out), "studies", split="train")["name"] == ["main", "second"]
    decisions = load_dataset(str(out), "decisions", split="train")
    assert decisions.num_rows == 1 and decisions[0]["decision"] == frozen.verdict.decision.value
    sample = json.loads(decisions[0]["sample_json"])
    assert sorted(sample) == sorted(frozen.sample)
    ratings = load_dataset(str(out), "ratings", split="train")
    assert set(sample) <= set(ratings["id"])  # every rating of the decision sample is in the export
    card = (out / "README.md").read_text(encoding="utf-8")
    studies_part = card.split("## Studies")[1].split("## Provenance")[0]
    assert f"| main | " in studies_part and f"| {frozen.verdict.decision.value}, frozen when its planned sample completed" in studies_part
    assert "| second | " in studies_part and "| 300 | 0 | none: interim looks only |" in studies_part
    # the card's config is the shown study's (export audit, 2026-12-04: with --study main it showed the second's pool)
    first_pool = db.execute("SELECT MIN(e.id) FROM experiments e JOIN studies s ON s.id = e.study_id "
                            "WHERE s.name = 'main' AND e.kind = 'pool'").fetchone()[0]
    main = tmp_path / "main"
    export(db, main, study="main")
    assert f"## Config of the study's pool (experiment {first_pool})" in (main / "README.md").read_text(encoding="utf-8")
    # the card's verdict is the latest study's unless another is named, and says which study it is of
    verdict = next(line for line in card.splitlines() if line.startswith("- **verdict**"))
    assert "study 'second' (the latest), 2 of 2" in verdict and "interim look" in verdict
    # the recipe and the scope name the study they are of, and the recipe sends the other study's decision to that
    # study's own gate (export audit D4: it read as the recipe for the only decision in the tables, main's)
    recipe = card.split("## Recomputing the verdict")[1].split("## Protocol")[0]
    assert recipe.lstrip().startswith("For study 'second', the one this card's verdict is of")
    assert "other studies ('main'): a `decisions` row of another `study_id` is recomputed the same way on that " \
           "study's own gate" in recipe and "margin (0.1)" in recipe
    assert "### Sample scope (study 'second')" in card
    export(db, tmp_path / "main", study="main")
    card = (tmp_path / "main" / "README.md").read_text(encoding="utf-8")
    verdict = next(line for line in card.splitlines() if line.startswith("- **verdict**"))
    assert f"study 'main', 1 of 2 in this database: {frozen.verdict.decision.value} (frozen " in verdict
    r = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "rated.db"), "--out", str(tmp_path / "nope"),
                                 "--study", "third"])
    assert r.exit_code == 1 and "no study named 'third'" in r.output and not (tmp_path / "nope").exists()


def test_the_raters_a_frozen_decision_left_out_are_pseudonymised_in_the_export(tmp_path):
    from datasets import load_dataset

    from evalkit.publish.scrub import pseudonyms
    from evalkit.store import insert_decision, insert_experiment

    db = open_db(tmp_path / "x.db")
    insert_experiment(db, "pool", {}, {})
    study_id = db.execute("SELECT id FROM studies").fetchone()[0]
    insert_decision(db, study_id, {"completed_at": "2026-12-02T10:00:00", "completed_rating_id": 1, "gate_hash": "h",
                                   "decision": "DROP", "sample": [1], "excluded": ["mallory"], "verdict": {},
                                   "speed": {}})
    export(db, tmp_path / "e1")
    row = load_dataset(str(tmp_path / "e1"), "decisions", split="train")[0]
    assert json.loads(row["excluded_json"]) == pseudonyms(["mallory"], db) and "mallory" not in row["excluded_json"]
    export(db, tmp_path / "e2", keep_rater_names=True)
    assert json.loads(load_dataset(str(tmp_path / "e2"), "decisions", split="train")[0]["excluded_json"]) == ["mallory"]


SECRET_CONFIG = {"models": {"target": "demo:target"},
                 "app": {"passcodes": ["hunter2-passcode", "second-code"], "organisers": ["alice-organiser"],
                         "allowed_raters": ["bob-rater", "carol-rater"], "allowed_orgs": ["some-org"]}}


def _store_secret_config(db):
    """The pool experiment's config, and one generation's, as a Space's config stores them (cfg.to_dict())."""
    from evalkit.store import json_hash

    db.execute("UPDATE experiments SET config_json = ?, config_hash = ? WHERE kind = 'pool'",
               [json.dumps(SECRET_CONFIG), json_hash(SECRET_CONFIG)])
    db.execute("UPDATE generations SET effective_config = ? WHERE id = (SELECT MIN(id) FROM generations)",
               [json.dumps({"config": SECRET_CONFIG, "route": "same_tokenizer"})])
    db.conn.commit()
    return json_hash(SECRET_CONFIG)


def _exported_text(out) -> dict[str, str]:
    """Every file of an export folder as text: the card, and each parquet table's rows."""
    import pyarrow.parquet as pq

    return {str(f.relative_to(out)): (json.dumps(pq.read_table(f).to_pylist(), default=str, ensure_ascii=False)
                                      if f.suffix == ".parquet" else f.read_text(encoding="utf-8"))
            for f in sorted(out.rglob("*")) if f.is_file()}


def test_no_passcode_or_access_list_from_the_stored_config_leaves_the_machine(db, tmp_path):
    """app.passcodes (a shared sign-in secret) and the access lists app.organisers, app.allowed_raters and
    app.allowed_orgs are in every stored config. app.allowed_orgs was exported as written, and the usernames as
    pseudonyms (as given with --keep-rater-names): who may sign in is the deployment's business, not the dataset's.
    No file of the export, with or without --keep-rater-names, nor the report or the provenance, carries any of
    them: only their counts; the database stays as it was."""
    import pyarrow.parquet as pq

    from evalkit.publish.provenance import to_json_with_provenance
    from evalkit.aggregate import aggregate

    stored_hash = _store_secret_config(db)
    listed = ["hunter2-passcode", "second-code", "alice-organiser", "bob-rater", "carol-rater", "some-org"]
    hidden = listed + [stored_hash] + pseudonyms(["alice-organiser", "bob-rater", "carol-rater"], db)
    report = build_report(db, tmp_path / "report").read_text(encoding="utf-8")
    prov = json.dumps(to_json_with_provenance(db, aggregate(db)))
    for keep in (False, True):
        out = tmp_path / f"e-{keep}"
        export(db, out, keep_rater_names=keep)
        files = _exported_text(out) | {"report": report, "provenance": prov}
        assert len(files) == len(SPLITS) + 3, sorted(files)  # every table, the card, the report and provenance
        for where, text in files.items():
            for s in hidden:
                assert s not in text, (keep, where, s)
        published = json.loads(next(r for r in pq.read_table(split_file(out, "experiments")).to_pylist()
                                    if r["kind"] == "pool")["config_json"])
        assert published["app"] == {"passcodes": "2 passcodes, not exported",
                                    "organisers": "1 organiser, not exported",
                                    "allowed_raters": "2 allowed raters, not exported",
                                    "allowed_orgs": "1 allowed organisation, not exported"}
        assert published["models"] == SECRET_CONFIG["models"]
        card = files["README.md"]
        assert '"allowed_orgs": "1 allowed organisation, not exported"' in card
        assert "app.passcodes" in card and "app.allowed_orgs" in card  # the experiments table's description says so
    # the database itself is unchanged
    assert json.loads(db.execute("SELECT config_json FROM experiments WHERE kind = 'pool'").fetchone()[0]) == SECRET_CONFIG


def test_a_push_uploads_exactly_the_files_of_this_export(db, tmp_path, monkeypatch):
    """--out may be a folder with other files (the data folder: the database, the browser key, the export salt):
    only README.md and this export's data/*.parquet go up."""
    from fnmatch import fnmatch

    out = tmp_path / "data"  # the data folder of this installation (EVALKIT_DATA_DIR)
    out.mkdir(exist_ok=True)
    for private in ("evalkit.db", "evalkit.db.browser-key", "data/stray.parquet", "notes.txt"):
        (out / private).parent.mkdir(exist_ok=True)
        (out / private).write_text("secret")
    hub = FakeHub()
    ds = export(db, out, push_to_hub="org/study", api=hub)
    kw = next(c for c in hub.calls if c[0] == "upload_folder")[2]
    on_disk = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()]
    sent = sorted(f for f in on_disk if any(fnmatch(f, pat) for pat in kw["allow_patterns"]))
    assert sent == sorted(["README.md"] + [f"data/{split_file(out, s).name}" for s in SPLITS])
    assert ds.hub == {"repo_id": "org/study", "private": True, "unchanged": False}


def test_an_existing_public_repo_is_refused_unless_public_was_asked_for(db, tmp_path):
    """create_repo(private=True, exist_ok=True) leaves an existing public repo public: the export reads the
    visibility back and pushes nothing there; with --public it pushes and says the repo is public."""
    from evalkit.errors import EvalkitError

    hub = FakeHub(public={"org/study"})
    with pytest.raises(EvalkitError, match="(?s)'org/study' is public: nothing was pushed.*make 'org/study' private "
                                           "on the Hub.*--public"):
        export(db, tmp_path / "e", push_to_hub="org/study", api=hub)
    assert not any(c[0] == "upload_folder" for c in hub.calls)
    assert split_file(tmp_path / "e", "ratings").exists()  # the local export stays
    ds = export(db, tmp_path / "e", push_to_hub="org/study", public=True, api=hub)
    assert ds.hub["private"] is False and hub.calls[-1][0] == "upload_folder"


def _listing(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_failed_export_leaves_the_folder_exactly_as_it_was(db, tmp_path, monkeypatch):
    """A failure while writing (here the card, at the last step; a non-OSError too) takes back what the run wrote:
    the earlier export, a fresh folder, stay as they were."""
    from evalkit.errors import EvalkitError
    from evalkit.publish import export as export_module
    from apphelpers import skip_of_before

    out = tmp_path / "e"
    export(db, out)
    before = _listing(out)
    pid = db.execute("SELECT id FROM pairs LIMIT 1").fetchone()[0]
    skip_of_before(db, "dave", pid, "tired")  # the next export's ratings file differs (the study is decided)
    real_card = export_module._card

    def broken(*a, **k):
        real_card(*a, **k)
        raise ValueError("something went wrong while writing the card")

    monkeypatch.setattr(export_module, "_card", broken)
    with pytest.raises(ValueError):
        export(db, out)
    assert _listing(out) == before and sorted(p.name for p in out.iterdir()) == ["README.md", "data"]
    fresh = tmp_path / "new" / "export"
    with pytest.raises(ValueError):
        export(db, fresh)
    assert not (tmp_path / "new").exists()
    # an OSError at the card's rename: the same, as the promised error
    monkeypatch.setattr(export_module, "_card", real_card)
    import pathlib

    real_replace = pathlib.Path.replace

    def no_card(self, target):
        if pathlib.Path(target).name == "README.md":
            raise OSError(28, "No space left on device")
        return real_replace(self, target)

    monkeypatch.setattr(pathlib.Path, "replace", no_card)
    with pytest.raises(EvalkitError, match="cannot write the export"):
        export(db, out)
    assert _listing(out) == before and sorted(p.name for p in out.iterdir()) == ["README.md", "data"]


def _table_rows(db) -> dict:
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: db.execute(f"SELECT * FROM [{t}]").fetchall() for t in names}


def test_an_export_folder_that_cannot_be_written_is_refused_before_anything_changes(db, tmp_path, monkeypatch):
    """Export audit, 2026-12-05: an --out that could not take the card failed only at the end, after the export's look
    and the first export's salt had been stored: a folder named README.md ended in "cannot write the export to OUT:
    Is a directory", naming no file; an --out that cannot be written into, with a writable data/ in it (a mount),
    in "Read-only file system" once the tables were built. Both are refused first now, naming the path and the fix,
    with the folder and the database as they were; a read-only file system is said as one (chmod will not help)."""
    import os

    from evalkit.errors import EvalkitError

    before = _table_rows(db)
    out = tmp_path / "taken"
    (out / "README.md").mkdir(parents=True)
    with pytest.raises(EvalkitError) as e:
        export(db, out)
    assert f"{out / 'README.md'} is a folder" in e.value.what and f"move {out / 'README.md'} away" in e.value.fix
    assert _listing(out) == {} and [p.name for p in out.iterdir()] == ["README.md"]
    assert _table_rows(db) == before

    locked = tmp_path / "locked"
    (locked / "data").mkdir(parents=True)
    real_access = os.access
    # the folder itself cannot be written into; data/ below it can (a writable mount inside a read-only one)
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(locked) else real_access(p, mode, **kw))
    with pytest.raises(EvalkitError) as e:
        export(db, locked)
    assert f"cannot create the folder {locked} for the export: Permission denied" in e.value.what, e.value.what
    assert "pass --out a folder you can write to" in e.value.fix
    assert _listing(locked) == {} and [p.name for p in locked.iterdir()] == ["data"]
    assert _table_rows(db) == before
    real_statvfs = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda p: type("V", (), {"f_flag": os.ST_RDONLY})() if str(p) == str(locked)
                        else real_statvfs(p))
    with pytest.raises(EvalkitError, match="a read-only file system"):
        export(db, locked)
    assert _table_rows(db) == before


def test_pseudonyms_belong_to_the_database_wherever_it_is_exported_from(db, tmp_path, data_dir, monkeypatch):
    """Export audit, 2026-12-04 (D1): the salt was a file under ./results of the folder the command ran in, so one
    database exported from two folders named its three raters six ways, and each run quietly made a new salt there.
    The salt now lives in the database: every export of it, from any folder and of any copy, names raters alike."""
    import pyarrow.parquet as pq

    def raters_of(out):
        return sorted({r["rater"] for r in pq.read_table(split_file(out, "ratings")).to_pylist()})

    monkeypatch.delenv("EVALKIT_DATA_DIR")  # the default layout: ./results, relative to where the command runs
    seen = []
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        export(db, tmp_path / f"e-{folder}")
        seen.append(raters_of(tmp_path / f"e-{folder}"))
        assert not (tmp_path / folder / "results").exists()  # no salt file made beside it
    copy = tmp_path / "copy.db"
    db.conn.execute("VACUUM INTO ?", [str(copy)])  # a copy of the file, as a backup or a colleague's has it
    export(open_db(copy), tmp_path / "e-copy")
    assert seen[0] == seen[1] == raters_of(tmp_path / "e-copy") and len(seen[0]) >= 3
    salt = db.execute("SELECT salt FROM export_salt").fetchone()[0]
    assert seen[0] == sorted(pseudonym(r, salt) for r in {r[0] for r in db.execute("SELECT rater FROM ratings")})
    assert salt not in json.dumps([pq.read_table(split_file(tmp_path / "e-one", s)).to_pylist() for s in SPLITS],
                                  default=str) + (tmp_path / "e-one" / "README.md").read_text()
    assert "export_salt" not in SPLITS


def _made_before_its_salt(db):
    """As if the database's experiments were run by a version that kept the salt in a file: migration 022, which
    stores it in the database, applied after them."""
    db.execute("UPDATE _migrations SET applied_at = '9999-12-31T00:00:00.000+00:00' WHERE name = '022_export_salt'")
    db.commit()


def test_a_new_database_never_takes_the_data_folder_s_old_salt_so_its_raters_are_not_linked(tmp_path, data_dir):
    """Privacy audit, 2026-12-06: the data folder's export_salt file, which an earlier version kept and a database made
    then adopts so that its pseudonyms stay, was adopted by every database of that folder, however new (the app stores
    a salt at its start). Two studies run in two databases there named each rater with one pseudonym, so their
    exports linked her across studies, although the card says another database gives other pseudonyms; and whoever
    had that one file could test guessed names against both. A database made since draws its own salt."""
    from test_aggregate import load_fixture

    data_dir.mkdir(parents=True, exist_ok=True)
    old = "0123456789abcdef" * 2
    (data_dir / "export_salt").write_text(old + "\n")
    raters, seen = None, []
    for name in ("first", "second"):
        db = open_db(tmp_path / f"{name}.db")
        load_fixture(db, tmp_path / f"{name}.toml")
        raters = sorted({r[0] for r in db.execute("SELECT rater FROM ratings")})
        seen.append(pseudonyms(raters, db))
        assert db.execute("SELECT source FROM export_salt").fetchone()[0] == "new"
    assert len(raters) >= 3 and not set(seen[0]) & set(seen[1])
    assert not {pseudonym(r, old) for r in raters} & set(seen[0] + seen[1])


def test_a_database_exported_before_keeps_its_pseudonyms_and_a_malformed_salt_is_refused(tmp_path, data_dir):
    """A database exported by an earlier version was salted by the data folder's export_salt file: its first export
    now adopts that salt, so its pseudonyms do not change. A malformed salt file (a write that failed half-way) is
    refused, never used or replaced (every pseudonym would change); so is a malformed stored salt."""
    from test_aggregate import load_fixture

    from evalkit.errors import EvalkitError

    data_dir.mkdir(parents=True, exist_ok=True)
    salt_file = data_dir / "export_salt"
    for bad in ("", "abc", "0" * 16, "0" * 34, "z" * 32):
        db = open_db(tmp_path / f"bad{len(bad)}{bad[:1]}.db")
        load_fixture(db, tmp_path / "gate.toml")
        _made_before_its_salt(db)
        salt_file.write_text(bad)
        with pytest.raises(EvalkitError, match=f"(?s)export salt {salt_file} is not 32 hex characters.*every rater's "
                                               "pseudonym changes"):
            export(db, tmp_path / "e")
        assert salt_file.read_text() == bad and db.execute("SELECT COUNT(*) FROM export_salt").fetchone()[0] == 0
    old = "0123456789abcdef" * 2
    salt_file.write_text(old + "\n")
    db = open_db(tmp_path / "old.db")
    load_fixture(db, tmp_path / "gate.toml")
    _made_before_its_salt(db)
    assert pseudonyms(["r1"], db) == [pseudonym("r1", old)]
    salt_file.unlink()  # adopted: the database keeps it
    assert pseudonyms(["r1"], db) == [pseudonym("r1", old)]
    db.execute("UPDATE export_salt SET salt = 'short'")
    with pytest.raises(EvalkitError, match="the database's export salt .* is not 32 hex characters"):
        export(db, tmp_path / "e2")


def test_the_export_command_says_the_visibility_the_hub_reports(db, tmp_path, monkeypatch):
    """`evalkit export --push-to-hub` printed "(public)" or "(private)" from its flag; an existing private repo with
    --public stays private (create_repo leaves it so), and the line must say what the Hub reports."""
    import huggingface_hub
    from click.testing import CliRunner

    from evalkit.cli import cli

    hub = FakeHub()
    hub.visibility["org/study"] = True  # exists, private
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: hub)
    path = db.execute("PRAGMA database_list").fetchone()[2]
    r = CliRunner().invoke(cli, ["export", "--db", path, "--out", str(tmp_path / "e"), "--push-to-hub", "org/study",
                                 "--public"])
    assert r.exit_code == 0, r.output
    assert "pushed to org/study (private, as the Hub reports it)" in r.output
    # and says --public did not publish it, with the fix (export audit, 2026-12-06: the help said --public made the
    # dataset public, and nothing but "(private" said otherwise)
    assert "note: --public did not publish org/study: it exists and is private" in r.output
    assert "make it public in its Settings on the Hub" in r.output
    r = CliRunner().invoke(cli, ["export", "--db", path, "--out", str(tmp_path / "e2"), "--push-to-hub", "org/new",
                                 "--public"])
    assert r.exit_code == 0 and "pushed to org/new (public, as the Hub reports it)" in r.output, r.output
    assert "did not publish" not in r.output
    help_text = " ".join(CliRunner().invoke(cli, ["export", "--help"]).output.split())
    assert "An existing repo keeps its visibility" in help_text


def test_a_push_of_what_the_repo_already_holds_says_no_commit_was_made(db, tmp_path, monkeypatch):
    """Export audit, 2026-12-06: the same export pushed again (its files are byte for byte the same) makes no commit,
    as the Hub skips an empty one, yet the command said "pushed to". It now says the repo already held it; a push
    that changes something still says it pushed."""
    import huggingface_hub
    from click.testing import CliRunner

    from evalkit.cli import cli

    hub = FakeHub()
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: hub)
    path = db.execute("PRAGMA database_list").fetchone()[2]
    push = ["export", "--db", path, "--out", str(tmp_path / "e"), "--push-to-hub", "org/study"]
    r = CliRunner().invoke(cli, push)
    assert r.exit_code == 0 and "pushed to org/study (private, as the Hub reports it)" in r.output, r.output
    first = hub.head()
    r = CliRunner().invoke(cli, push)
    assert r.exit_code == 0, r.output
    assert hub.head() == first and "pushed to" not in r.output
    assert "org/study (private, as the Hub reports it) already held this export byte for byte: no new commit" in r.output
    r = CliRunner().invoke(cli, [*push, "--license", "cc-by-4.0"])  # the card changes: a commit
    assert r.exit_code == 0 and "pushed to org/study" in r.output and hub.head() != first, r.output


def _bench_after_the_decision(db, seconds=1.02, extra_mb=300.0):
    """A benchmark stored after the fixture's decision froze: assisted about as fast as ordinary (the pool timed it
    at 2x), and a draft that adds extra_mb. On the pool's device, recorded as a bench run records it: a benchmark
    that recorded none never decides nor stands as the figure now (aggregate.data.other_device)."""
    from evalkit.records import GenerationRecord, ProcessRecord, TimingRun
    from evalkit.store import insert_bench_process, insert_experiment

    device = db.execute("SELECT json_extract(compat_json, '$.device') FROM experiments WHERE kind = 'pool' "
                        "ORDER BY id LIMIT 1").fetchone()[0]
    exp = insert_experiment(db, "bench", {}, {"device": device}, gate={})
    for rnd in (1, 2):
        for order, (path, rss, secs) in enumerate((("ordinary", 1000.0, 1.0), ("assisted", 1000.0 + extra_mb, seconds))):
            runs = []
            for p in ("writing-01", "writing-02"):
                for rep in range(3):
                    t = secs + 0.01 * rep
                    g = GenerationRecord(prompt_id=p, path=path, text="x", new_tokens=20, stop_reason="eos",
                                         generate_seconds=t, token_hash=f"{p}{rep}", peak_rss_mb=rss)
                    runs.append((TimingRun(path=path, prompt_id=p, round=rnd, rep=rep, seed=rep, new_tokens=20,
                                           stop_reason="eos", seconds=t, tokens_per_second=20 / t, device=device),
                                 [g]))
            insert_bench_process(db, exp, ProcessRecord(path=path, round=rnd, order=order, rss_after_load_mb=rss,
                                                        host="alice-laptop.corp.example", device=device), runs)
    return exp


def test_the_card_shows_what_was_measured_after_the_decision_and_how_each_speed_up_was_measured(db, tmp_path):
    """The card printed the frozen decision's figures only: a benchmark stored later (0.98x, +300 MB) was missing,
    its memory said 'not measured', and its Protocol claimed the benchmark's ABBA rounds for a pool-timed figure."""
    from evalkit.aggregate import aggregate

    aggregate(db)  # the first look freezes the decision on the pool's single runs
    card_before = _card_of(db, tmp_path / "before")
    protocol = card_before.split("## Protocol")[1].split("## Studies")[0]
    assert "pair pool's single runs" in protocol and "swapped order (ABBA)" not in protocol
    assert "speed-up now" not in card_before
    _bench_after_the_decision(db)
    card = _card_of(db, tmp_path / "after")
    figures = card.split("### Figures and the runs behind them")[1].split("### Experiments")[0]
    assert "**speed-up**: 2.00x" in figures  # the decision's figure stays what it weighed
    now = next(line for line in figures.splitlines() if "speed-up now (after the decision, not the decision)" in line)
    assert "source: benchmark" in now and "2.00x" not in now
    assert "**extra memory of the draft now (after the decision, not the decision)**: 300 MB" in figures
    verdict = next(line for line in figures.splitlines() if line.startswith("- **verdict**"))
    assert "experiment 1 (pool" in verdict and "experiment 2" not in verdict  # the runs it weighed, not the later ones
    protocol = card.split("## Protocol")[1].split("## Studies")[0]
    assert "pair pool's single runs" in protocol and "swapped order (ABBA)" in protocol  # each with its protocol
    # the aggregate's notes and the look after the decision are on the card as `aggregate` prints them
    assert "AFTER THE DECISION" in card and "note: DECISION FROZEN" in card


def _card_of(db, out, **kw) -> str:
    export(db, out, **kw)
    return (out / "README.md").read_text(encoding="utf-8")


def test_an_interim_look_is_labelled_as_one_on_the_card(tmp_path):
    from evalkit.config import AppConfig
    from test_aggregate import load_fixture

    from test_aggregate import GATE

    db = open_db(tmp_path / "open.db")
    load_fixture(db, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 300"))
    card = _card_of(db, tmp_path / "e")
    verdict = next(line for line in card.splitlines() if line.startswith("- **verdict**"))
    assert "interim look, not a decision" in verdict and "study 'main'" in verdict


def test_while_pairs_are_open_the_export_and_report_say_so_and_a_push_needs_while_rating(tmp_path):
    """The export's pairs table says which side of each pair is which path; made while raters still rate, and pushed
    to the Hub, it could reach one of them (audit, 2026-12-04: `export --push-to-hub --public` ran mid-study)."""
    from evalkit.config import AppConfig
    from evalkit.errors import EvalkitError
    from test_aggregate import GATE, load_fixture

    db = open_db(tmp_path / "open.db")
    # a 4th rating to come, in a study whose plan is not reached (a stored decision would close its pairs)
    load_fixture(db, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 8"),
                 app=AppConfig(ratings_per_pair=4))
    hub = FakeHub()
    with pytest.raises(EvalkitError, match="(?s)4 pair.*still open to raters.*--while-rating"):
        export(db, tmp_path / "pushed", push_to_hub="org/study", api=hub)
    assert hub.calls == [] and not (tmp_path / "pushed").exists()  # refused before anything was written or sent
    card = _card_of(db, tmp_path / "pushed", push_to_hub="org/study", api=hub, while_rating=True)
    assert any(c[0] == "upload_folder" for c in hub.calls)
    assert "Exported while rating was under way:** 4 pair(s) of the study being rated were still open" in card
    runner = CliRunner()
    r = runner.invoke(cli, ["export", "--db", str(tmp_path / "open.db"), "--out", str(tmp_path / "local")])
    assert r.exit_code == 0, r.output
    assert "warning: 4 pair(s) of the study being rated were still open to raters: the export tells" in r.output
    r = runner.invoke(cli, ["report", "--db", str(tmp_path / "open.db"), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0 and "warning: 4 pair(s)" in r.output
    assert "Written while rating was under way:</b> 4 pair(s) of the study being rated were still open" in (
        tmp_path / "rep" / "index.html").read_text()
    r = runner.invoke(cli, ["export", "--db", str(tmp_path / "open.db"), "--out", str(tmp_path / "cli-push"),
                            "--push-to-hub", "org/study"])
    assert r.exit_code != 0 and "--while-rating" in r.output and not (tmp_path / "cli-push").exists()


def test_a_public_push_while_pairs_are_open_is_refused_even_with_while_rating(tmp_path):
    """Export audit, 2026-12-06: `--while-rating` is for a repo no rater can read, yet `--push-to-hub --public
    --while-rating` made a public repo of a running study: every rater could read which side of each open pair is
    which path. It is refused now, before anything is written or sent, with the fix; once every pair is complete a
    public push goes through."""
    from evalkit.config import AppConfig
    from evalkit.errors import EvalkitError
    from test_aggregate import GATE, load_fixture

    db = open_db(tmp_path / "open.db")
    load_fixture(db, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 8"),
                 app=AppConfig(ratings_per_pair=4))
    hub = FakeHub()
    with pytest.raises(EvalkitError) as e:
        export(db, tmp_path / "public", push_to_hub="org/study", api=hub, public=True, while_rating=True)
    said = f"{e.value} {e.value.fix}"
    assert "--public with --while-rating: 4 pair(s)" in said and "nothing was written" in said
    assert "leave out --public" in e.value.fix
    assert hub.calls == [] and not (tmp_path / "public").exists()
    assert db.execute("SELECT COUNT(*) FROM pushes_while_rating").fetchone()[0] == 0
    r = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "open.db"), "--out", str(tmp_path / "cli"),
                                 "--push-to-hub", "org/study", "--public", "--while-rating"])
    assert r.exit_code != 0 and "--public with --while-rating" in r.output and not (tmp_path / "cli").exists()
    export(db, tmp_path / "private", push_to_hub="org/study", api=hub, while_rating=True)  # private: still allowed
    assert hub.visibility["org/study"] is True


def test_a_closed_study_is_pushed_public_on_request(db, tmp_path):
    hub = FakeHub()
    export(db, tmp_path / "e", push_to_hub="org/final", api=hub, public=True, while_rating=True)
    assert hub.visibility["org/final"] is False and any(c[0] == "upload_folder" for c in hub.calls)


def test_a_push_made_while_rating_is_on_the_study_s_record(db, tmp_path):
    """`export --push-to-hub --while-rating` sent the sides of pairs still open to raters to a Hub repo and left no
    trace: the card of that export said so, but the study's later cards, its report and `aggregate --json` did not,
    though ratings given after it are blind only if no rater could read that repo. Now the push is recorded in the
    database, and the study's provenance names it everywhere it is shown; a push of a closed study records nothing."""
    from evalkit.aggregate import aggregate
    from evalkit.config import AppConfig
    from evalkit.publish.provenance import to_json_with_provenance
    from test_aggregate import GATE, load_fixture

    export(db, tmp_path / "closed", push_to_hub="org/final", api=FakeHub())  # every pair closed: nothing to record
    assert db.execute("SELECT COUNT(*) FROM pushes_while_rating").fetchone()[0] == 0
    assert "pushed to the Hub repo" not in _card_of(db, tmp_path / "closed-later")

    open_db_ = open_db(tmp_path / "open.db")
    load_fixture(open_db_, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 8"),
                 app=AppConfig(ratings_per_pair=4))
    export(open_db_, tmp_path / "pushed", push_to_hub="org/interim", api=FakeHub(), while_rating=True)
    said = "an export was pushed to the Hub repo org/interim (private) at "
    tail = "while 4 pair(s) of this study were still open to raters (`evalkit export --while-rating`)"
    later = _card_of(open_db_, tmp_path / "later")
    notes = later.split("### Notes", 1)[1]
    assert said in notes and tail in notes, notes
    report = build_report(open_db_, tmp_path / "report").read_text(encoding="utf-8")
    assert "org/interim (private)" in report
    prov = to_json_with_provenance(open_db_, aggregate(open_db_))["provenance"]
    assert any(n.startswith(said) and tail in n for n in prov["notes"]), prov["notes"]


def test_a_push_while_rating_from_a_read_only_copy_is_refused_before_anything_is_pushed(tmp_path, monkeypatch):
    """The push made with --while-rating is recorded in the database: from a read-only copy (SQLite's mode=ro: the
    tests run as root, whom file modes do not stop) it went up to the Hub, then failed with sqlite's "attempt to
    write a readonly database", unrecorded. Now it is refused first, naming the database and the fix; nothing is
    written or pushed."""
    import sqlite3

    import evalkit.store.database as database
    from evalkit.config import AppConfig
    from evalkit.errors import EvalkitError
    from test_aggregate import GATE, load_fixture

    db = open_db(tmp_path / "open.db")
    load_fixture(db, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 8"),
                 app=AppConfig(ratings_per_pair=4))
    export(db, tmp_path / "first")  # stores the salt: a copy then needs no write for its tables
    copy = tmp_path / "snapshot.db"
    db.execute("VACUUM INTO ?", [str(copy)])
    connect = sqlite3.connect
    monkeypatch.setattr(database.sqlite3, "connect", lambda path, **kw: connect(f"file:{path}?mode=ro", uri=True, **kw))
    ro = open_db(copy)
    hub = FakeHub()
    with pytest.raises(EvalkitError) as e:
        export(ro, tmp_path / "pushed", push_to_hub="org/interim", api=hub, while_rating=True)
    assert f"database {copy} is read-only" in e.value.what and "nothing was written or pushed to org/interim" in e.value.what
    assert "copy it somewhere writable" in e.value.fix
    assert hub.calls == [] and not (tmp_path / "pushed").exists()


def test_the_report_s_warning_counts_the_open_study_pairs_and_the_export_s_the_gold_ones_too(tmp_path):
    """`evalkit report` warned "20 pair(s) ... the report tells which side of each pair is which path" of 18 study
    pairs and 2 gold (check) pairs, which have no sides (demo audit L2, 2026-12-04). The export counts the gold ones
    too: its reference outputs say which pair is a check and what was changed."""
    from evalkit.study.gold import add_gold_pairs
    from test_gold import PROMPTS, gold_items, study_pool

    db = open_db(tmp_path / "g.db")
    exp = study_pool(db, 4)
    gold_items(db, exp, 2)
    assert add_gold_pairs(db, exp, PROMPTS) == 2
    db.conn.close()
    runner = CliRunner()
    r = runner.invoke(cli, ["report", "--db", str(tmp_path / "g.db"), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert "warning: 4 pair(s) of the study being rated were still open to raters: the report tells" in r.output
    assert "under way:</b> 4 pair(s)" in (tmp_path / "rep" / "index.html").read_text()
    r = runner.invoke(cli, ["export", "--db", str(tmp_path / "g.db"), "--out", str(tmp_path / "exp")])
    assert r.exit_code == 0, r.output
    assert "warning: 6 pair(s) of the study being rated were still open to raters: the export tells" in r.output


def test_an_export_before_the_first_rating_says_which_tables_cannot_be_loaded_by_name(tmp_path):
    """The README and the card said `load_dataset(DIR, "ratings")`, which fails with "BuilderConfig 'ratings' not
    found" on an export made before anyone rated (README audit, 2026-12-04): `datasets` cannot load an empty table,
    so it has no config. The command names the empty tables, and the card's example loads one that has rows."""
    from datasets import load_dataset

    from test_aggregate import load_fixture

    db = open_db(tmp_path / "unrated.db")
    load_fixture(db, tmp_path / "g.toml")
    db.execute("DELETE FROM ratings")
    db.conn.commit()
    r = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "unrated.db"), "--out", str(tmp_path / "e")])
    assert r.exit_code == 0, r.output
    empty = next(line for line in r.output.splitlines() if line.startswith("tables with no rows"))
    assert "ratings" in empty.split(": ", 1)[1].split(", ")
    card = (tmp_path / "e" / "README.md").read_text(encoding="utf-8")
    assert "| ratings | 0 | " in card and "(no rows: no config to load it by)" in card
    loading = card.split("## Loading")[1].split("```python")[1].split("```")[0]
    assert "no ratings yet" in loading and '"ratings"' not in loading
    name = loading.split('load_dataset("')[1].split('", "')[1].split('"')[0]
    assert load_dataset(str(tmp_path / "e"), name, split="train").num_rows > 0  # the example as printed loads


def test_a_closed_study_exports_and_reports_without_the_warning(db, tmp_path):
    runner = CliRunner()
    for cmd in ("export", "report"):
        r = runner.invoke(cli, [cmd, "--db", str(tmp_path / "rated.db"), "--out", str(tmp_path / cmd)])
        assert r.exit_code == 0, r.output
        assert "still open" not in r.output
    assert "under way" not in (tmp_path / "export" / "README.md").read_text()
    assert "under way" not in (tmp_path / "report" / "index.html").read_text()


def test_user_names_outside_home_folders_host_names_and_tokens_do_not_leave_the_machine(db, tmp_path, monkeypatch,
                                                                                      request):
    """Export audit, 2026-12-04: only home folders were rewritten, so a model under /scratch/alice.smith or
    /data/users/carol, a WSL path (/mnt/c/Users/bob.jones: the Windows rule never fired there), the config's
    app.host, a token in an error message and the exporter's own --out folder (the card's loading example) left the
    machine as stored."""
    import getpass

    import pyarrow.parquet as pq

    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_generations

    from evalkit.publish import scrub

    monkeypatch.setattr(getpass, "getuser", lambda: "dave.k")
    scrub._login_names.cache_clear()  # read once per process: read again as this user's
    request.addfinalizer(scrub._login_names.cache_clear)  # and the next test reads its own
    exp = insert_experiment(db, "run", {"models": {"target": "/scratch/alice.smith/models/qwen-7b",
                                                   "draft": "/mnt/c/Users/bob.jones/models/d"},
                                        "app": {"host": "gpu-node-17.lab.example.org", "root_path": "/team/x/evalkit"}},
                            {"target": {"folder": "/data/users/carol/m/t"}})
    token = "hf_" + "Ab1" * 10
    insert_generations(db, [GenerationRecord(
        prompt_id="writing-01", path="assisted", status="failed", token_hash="f2", host="gpu-node-17.lab.example.org",
        error_message=(f'File "/opt/work/dave.k/venv/lib/python3.11/site-packages/transformers/utils.py", line 3: '
                       f"401 for token {token} on gpu-node-17 (see file:///home/ivan/log.txt), account "
                       "judy.o+hub@mail.example.co.uk; model@v1.0 is a revision"))], exp)
    # a local model keeps what names it: its folder beside a generic checkpoint, its Hub cache entry
    ckpt = insert_experiment(db, "run", {"models": {
        "target": "/data/ft/qwen7b/checkpoint-500",
        "draft": "/scratch/frank/hf/hub/models--Qwen--Qwen2.5-0.5B/snapshots/0123456789abcdef0123"}}, {})
    # a generic checkpoint straight under a user's folder: the folder beside it is the user, never kept
    shared = insert_experiment(db, "run", {"models": {"target": "/data/users/grace/checkpoint-500",
                                                      "draft": "/home/grace/final"}}, {})
    out = tmp_path / "exports" / "private-folder-of-erin"
    card = _card_of(db, out)
    exported = {s: pq.read_table(split_file(out, s)).to_pylist() for s in SPLITS}
    everything = json.dumps(exported, ensure_ascii=False, default=str) + card
    for secret in ("alice.smith", "bob.jones", "carol", "dave.k", "ivan", "frank", "grace", "gpu-node-17", token,
                   str(tmp_path), "judy", "mail.example"):
        assert secret not in everything, secret
    run = next(e for e in exported["experiments"] if e["id"] == exp)
    config = json.loads(run["config_json"])
    assert config["models"] == {"target": "…/qwen-7b", "draft": "~/models/d"}
    assert config["app"]["host"] == "a host name, not exported"
    assert config["app"]["root_path"] == "/team/x/evalkit"  # a path on the web server, kept
    models = json.loads(next(e for e in exported["experiments"] if e["id"] == ckpt)["config_json"])["models"]
    assert models == {"target": "…/qwen7b/checkpoint-500",
                      "draft": "…/models--Qwen--Qwen2.5-0.5B/snapshots/0123456789abcdef0123"}
    assert json.loads(next(e for e in exported["experiments"] if e["id"] == shared)["config_json"])["models"] == {
        "target": "…/<user>/checkpoint-500", "draft": "~/final"}
    assert json.loads(run["compat_json"]) == {"target": {"folder": "…/m/t"}}
    gen = next(g for g in exported["generations"] if g["token_hash"] == "f2")
    assert gen["error_message"].startswith('File "…/transformers/utils.py", line 3: 401 for token hf_…')
    # an e-mail address names a person (export audit F8): withheld; a model's revision is not one
    assert gen["error_message"].endswith("on <host> (see file://~/log.txt), account <email>; model@v1.0 is a revision")
    assert 'load_dataset("path/to/private-folder-of-erin"' in card
    from datasets import load_dataset  # the loading example's folder name is the export's own

    assert len(load_dataset(str(out), "experiments", split="train")) == len(exported["experiments"])


def test_live_runs_machine_names_and_home_folders_do_not_leave_the_machine(db, tmp_path):
    """What a visitor typed into the Live tab (its experiment's note and config), machine names and the user name in
    a home folder's path were exported as stored."""
    import pyarrow.parquet as pq

    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_generations

    live = insert_experiment(db, "live", {"models": {"target": "/home/alice.smith/models/t"}}, {},
                             note="live demo · material: CONFIDENTIAL Bob Jones salary")
    insert_generations(db, [GenerationRecord(prompt_id="writing-01", path="ordinary", text="CONFIDENTIAL echo",
                                             token_hash="live1", stop_reason="eos", generate_seconds=1.0, live=True)],
                       live)
    failed = insert_experiment(db, "run", {"models": {"target": "/home/alice.smith/models/t",
                                                      "draft": "/Users/bob/d"}}, {"target": {"folder": "/root/m"}})
    insert_generations(db, [GenerationRecord(
        prompt_id="writing-01", path="assisted", status="failed", host="alice-laptop.corp.example",
        error_message='File "/home/alice.smith/src/x.py", line 3: boom', token_hash="f1")], failed)
    _bench_after_the_decision(db)
    out = tmp_path / "e"
    card = _card_of(db, out)
    exported = {s: pq.read_table(split_file(out, s)).to_pylist() for s in SPLITS}
    everything = json.dumps(exported, ensure_ascii=False, default=str) + card
    for secret in ("CONFIDENTIAL", "Bob Jones", "alice.smith", "alice-laptop", "/Users/bob", "/root/"):
        assert secret not in everything, secret
    assert all(e["kind"] != "live" for e in exported["experiments"])
    assert not any(g["live"] for g in exported["generations"])
    gen = next(g for g in exported["generations"] if g["status"] == "failed")
    assert gen["error_message"] == 'File "~/src/x.py", line 3: boom'
    assert gen["host"].startswith("host-")
    hosts = {r["host"] for r in exported["bench_processes"]} | {r["host"] for r in exported["timing_runs"]}
    assert hosts - {""} == {gen["host"]}  # one machine, one name, in every table
    run = next(e for e in exported["experiments"] if e["kind"] == "run")
    config = json.loads(run["config_json"])
    assert config["models"] == {"target": "~/models/t", "draft": "~/d"}
    from evalkit.store.runs import json_hash

    assert run["config_hash"] == json_hash(config)  # the hash of the text as exported
    assert json.loads(run["compat_json"]) == {"target": {"folder": "~/m"}}
    assert run["compat_hash"] == json_hash(json.loads(run["compat_json"]))
    # the verdict's pre-screen answers and the benchmark's processes are exported (the memory condition reads them)
    screened = db.execute("SELECT COUNT(*) FROM prescreen WHERE generation_id IN "
                          "(SELECT id FROM generations WHERE live = 0)").fetchone()[0]
    assert screened and len(exported["prescreen"]) == screened and len(exported["bench_processes"]) == 4


def test_a_fallback_s_cause_names_no_machine_in_the_card_or_the_report(db, tmp_path):
    """Export audit, 2026-12-06: the export's `generations.error_message` withheld the machine's name as <host>, but
    the verdict's note that quotes a fallback's cause printed the stored message, machine name and all, in the card
    (Verdict) and in the report (Notes). Both now say <host> there too."""
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_generations

    pool = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    insert_generations(db, [
        GenerationRecord(prompt_id="writing-01", path="assisted", status="failed", host="gpu-node-17.lab.example",
                         error_class="RuntimeError", error_stage="generate", token_hash="fb1",
                         error_message="NCCL timeout talking to gpu-node-17.lab.example (rank 0)"),
        GenerationRecord(prompt_id="writing-01", path="fallback", text="f", fallback_of=-1, token_hash="fb2",
                         host="gpu-node-17.lab.example", stop_reason="eos", generate_seconds=1.0, new_tokens=5)], pool)
    card = _card_of(db, tmp_path / "e")
    page = build_report(db, tmp_path / "r").read_text(encoding="utf-8")
    cause = "cause (every one): RuntimeError at stage generate: NCCL timeout talking to <host> (rank 0)"
    import html

    for name, text, shown in (("card", card, cause), ("report", page, html.escape(cause))):
        assert "gpu-node-17" not in text, name
        assert shown in text, name  # the cause is still shown, its machine withheld


def _study_the_app_rates(tmp_path):
    """A study rated in part (12 ratings, 8 planned pairs wanting 4 each), and the app's next rating of it: stored by
    another connection, as the app stores one while an export or a report reads."""
    from evalkit.config import AppConfig
    from evalkit.rating.queue import RatingInput, submit_rating
    from test_aggregate import GATE, load_fixture

    path = tmp_path / "open.db"
    db = open_db(path)
    load_fixture(db, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 8"),
                 app=AppConfig(ratings_per_pair=4))

    def app_rates():
        app = open_db(path)
        pair = app.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY id LIMIT 1").fetchone()[0]
        submit_rating(app, AppConfig(ratings_per_pair=4), RatingInput(
            pair_id=pair, rater="late", a={c: "pass" for c in CRITERIA}, b={c: "pass" for c in CRITERIA},
            preference="A"))
        app.conn.close()

    return db, app_rates


def test_a_rating_stored_while_the_export_runs_is_in_neither_its_card_nor_its_tables(tmp_path, monkeypatch):
    """Export audit, 2026-12-06: the export read its card's figures (the look) and then each table on its own, so a
    rating the app stored in between was in the `ratings` table and not in the card ("current ratings counted: 12"
    above 13 current ratings). The card and the tables are now read from one copy of the database; the rating stays
    stored, and the next export has it in both."""
    import re

    import pyarrow.parquet as pq

    from evalkit.publish import export as export_module

    db, app_rates = _study_the_app_rates(tmp_path)
    real_tables = export_module.tables

    def app_rates_meanwhile(*a, **k):  # the app stores a rating as the tables are read
        app_rates()
        return real_tables(*a, **k)

    def counted(out) -> tuple[int, int]:
        card = (out / "README.md").read_text(encoding="utf-8")
        said = int(re.search(r"current ratings counted: (\d+) by", card).group(1))
        table = pq.read_table(split_file(out, "ratings")).to_pandas()
        return said, int((table["current"] & (table["kind"] == "rating")).sum())

    with monkeypatch.context() as m:
        m.setattr(export_module, "tables", app_rates_meanwhile)
        export(db, tmp_path / "e")
    said, rows = counted(tmp_path / "e")
    assert said == rows == 12
    assert db.execute("SELECT COUNT(*) FROM ratings WHERE rater = 'late'").fetchone()[0] == 1  # stored, not lost
    export(db, tmp_path / "later")
    assert counted(tmp_path / "later") == (13, 13)


def test_a_rating_that_completes_the_sample_as_the_export_copies_gives_the_decision_the_database_keeps(tmp_path,
                                                                                                       monkeypatch):
    """Export audit, 2026-12-06: the export's look came from the live database and, when a row came in since, again
    from its copy, which stored the decision there alone. A rating that completed the sample just before the copy (the
    app stores the decision a moment after the rating) gave a card and a `decisions` table frozen at a time the
    database never held, the database's own decision stored later with another. Every part of the export now comes
    from one copy, and a decision its look reaches is the one stored in the database."""
    from datetime import datetime

    import pyarrow.parquet as pq

    import evalkit.store.database as database
    from evalkit.aggregate.decision import stored
    from evalkit.config import AppConfig
    from evalkit.rating.queue import RatingInput, submit_rating
    from test_aggregate import GATE, load_fixture

    path, app = tmp_path / "open.db", AppConfig(ratings_per_pair=4)
    db = open_db(path)
    load_fixture(db, tmp_path / "g.toml", GATE.replace("min_ratings_per_pair = 3", "min_ratings_per_pair = 4"), app=app)
    pairs = [r[0] for r in db.execute("SELECT id FROM pairs WHERE kind = 'study' ORDER BY id")]
    answers = {c: "pass" for c in CRITERIA}
    for pair in pairs[:3]:  # one rating short of the planned sample
        submit_rating(db, app, RatingInput(pair_id=pair, rater="late", a=answers, b=answers, preference="A"))
    real_copy, copies = database.read_copy, []

    def app_completes_the_sample_first(d, what):  # the app's rating, in its own connection, before its decision is stored
        if not copies:
            other = open_db(path)
            submit_rating(other, app, RatingInput(pair_id=pairs[3], rater="late", a=answers, b=answers, preference="A"))
            other.conn.close()
        copies.append(d)
        return real_copy(d, what)

    monkeypatch.setattr(database, "read_copy", app_completes_the_sample_first)
    export(db, tmp_path / "e")
    kept = stored(db, db.execute("SELECT id FROM studies").fetchone()[0])
    assert kept is not None  # stored in the database, not in the export's copy alone
    decisions = pq.read_table(split_file(tmp_path / "e", "decisions")).to_pylist()
    assert [(d["decided_at"], d["completed_rating_id"]) for d in decisions] == [
        (datetime.fromisoformat(kept.decided_at), kept.completed_rating_id)]
    card = (tmp_path / "e" / "README.md").read_text(encoding="utf-8")
    assert f"stored {kept.decided_at}" in card and "Interim export" not in card
    sample = json.loads(decisions[0]["sample_json"])
    ratings = pq.read_table(split_file(tmp_path / "e", "ratings")).to_pylist()
    assert set(sample) <= {r["id"] for r in ratings} and len(ratings) == 16  # the tables hold the completing rating


def test_a_rating_stored_while_the_report_is_written_is_in_none_of_its_parts(tmp_path, monkeypatch):
    """Export audit, 2026-12-06: `evalkit report` took its look, then read its provenance, plots and tables from the
    live database one after another, so a rating the app stored in between was in the provenance's count ("current
    ratings counted: 13") and not in the verdict it stood under. Every part of the report now comes from one copy."""
    import re

    import evalkit.aggregate as aggregate_module
    from evalkit.publish.report import write_report

    db, app_rates = _study_the_app_rates(tmp_path)
    real = aggregate_module.aggregate

    def app_rates_after_the_look(*a, **k):
        agg = real(*a, **k)
        app_rates()
        return agg

    monkeypatch.setattr(aggregate_module, "aggregate", app_rates_after_the_look)
    page = write_report(db, tmp_path / "r").path.read_text(encoding="utf-8")
    said = int(re.search(r"current ratings counted</th><td>(\d+) by", page).group(1))
    assert said == 12 and db.execute("SELECT COUNT(*) FROM current_ratings").fetchone()[0] == 13


def test_a_temporary_folder_without_room_for_the_copy_is_said_as_such(db, tmp_path, monkeypatch):
    """The export reads from a copy of the database in the temporary folder; where that copy cannot be written (a
    full or read-only /tmp) the command said "database ...: check that the file is an evalkit database and has free
    space; move it aside to start a new one", wrong advice for a sound database. It names the temporary folder and
    the size, and says to free space or set TMPDIR; the export folder is not made."""
    import sqlite3

    import evalkit.store.database as database

    connect = sqlite3.connect
    monkeypatch.setattr(database.sqlite3, "connect", lambda path, **kw: connect(
        f"file:{path}?mode=ro", uri=True, **kw) if str(path).endswith("copy.db") else connect(path, **kw))
    out = tmp_path / "e"
    r = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "rated.db"), "--out", str(out)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "a copy of the database (" in r.output and "cannot be written to the temporary folder" in r.output
    assert "set TMPDIR" in r.output and "move it aside" not in r.output and not out.exists()


def test_a_temporary_folder_too_small_for_the_copy_is_refused_before_anything_is_stored(db, tmp_path, monkeypatch):
    """Export audit, 2026-12-06: the room for the copy every part of an export is read from was found out only as the
    copy was written, after the export's look had frozen the decision and the first export had stored its salt. The
    free space of the temporary folder is checked first now: the command names the folder, the copy's size and the
    space free, and says to free space or set TMPDIR; the database and the export folder stay as they were."""
    import shutil
    import tempfile

    from evalkit.errors import EvalkitError
    from evalkit.publish.report import write_report

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    real_usage = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real_usage(p)._replace(free=4096) if str(p) == str(tmp)
                        else real_usage(p))
    before = _table_rows(db)
    out = tmp_path / "e"
    r = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "rated.db"), "--out", str(out)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "a copy of the database (" in r.output and f"in the temporary folder {tmp}, which has 0.0 MB free" in r.output
    assert "set TMPDIR to a folder with room for the copy" in r.output and "nothing was written" in r.output
    assert not out.exists() and list(tmp.iterdir()) == [] and _table_rows(db) == before
    with pytest.raises(EvalkitError, match="the report reads from a copy of the database"):
        write_report(db, tmp_path / "r")
    assert _table_rows(db) == before and not (tmp_path / "r").exists()


def test_the_frozen_gate_s_file_path_leaves_no_user_name(db, tmp_path):
    """Export audit, 2026-12-04: the gate frozen with each experiment and study records the file it was read from,
    by default the checkout's own (under a home folder: the user's name), and the export published it as stored in
    experiments.gate_json and studies.gate_json, and the report printed it twice. The path is written from ~ there;
    the frozen text, and so gate_hash, stays as it was."""
    import pyarrow.parquet as pq

    from evalkit.publish.report import write_report
    from evalkit.study.gate import gate_text_hash

    # as if the checkout were under /home/alice.smith (the study's frozen gate may not change in the app: this test
    # stands in for a study frozen there, so it lifts that guard on its own copy)
    db.execute("DROP TRIGGER studies_gate_frozen")
    for table in ("experiments", "studies"):
        for row in db.execute(f"SELECT id, gate_json FROM {table} WHERE gate_json IS NOT NULL").fetchall():
            gate = json.loads(row[1]) | {"path": "/home/alice.smith/evalkit/configs/gate.toml"}
            db.execute(f"UPDATE {table} SET gate_json = ? WHERE id = ?", [json.dumps(gate), row[0]])
    db.commit()
    out = tmp_path / "e"
    export(db, out)
    for table in ("experiments", "studies"):
        rows = [r for r in pq.read_table(split_file(out, table)).to_pylist() if r["gate_json"]]
        assert rows, table
        for r in rows:
            assert "alice.smith" not in r["gate_json"], (table, r["gate_json"])
            gate = json.loads(r["gate_json"])
            assert gate["path"] == "~/evalkit/configs/gate.toml"
            assert gate_text_hash(gate["text"]) == r["gate_hash"]  # the frozen text still checks
    write_report(db, tmp_path / "report")
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "alice.smith" not in page and "~/evalkit/configs/gate.toml" in page


def test_a_study_rated_before_closings_were_recorded_counts_as_closed_after_the_upgrade(db, tmp_path, monkeypatch):
    """Export audit, 2026-12-04: migration 012 began recording closed pairs but recorded none of the pairs already
    filled, so a study rated before it read as open after the upgrade: its export and report said its pairs were
    still open to raters, and the push was refused until --while-rating. Migration 020 closes each pair filled
    before 012, as of the rating that filled it; a pair below its quota stays open."""
    from evalkit.rating.queue import unclosed_pairs
    from evalkit.store import migrations

    old_path = tmp_path / "old.db"
    with monkeypatch.context() as m:  # a database made by a version before closings were recorded
        m.setattr(migrations, "MIGRATIONS", [x for x in migrations.MIGRATIONS if x[0] < "012"])
        old = open_db(old_path)
    old.conn.execute("PRAGMA foreign_keys = OFF")
    short = db.execute("SELECT pair_id FROM ratings ORDER BY id").fetchone()[0]  # this pair loses its last rating
    last_of_short = db.execute("SELECT MAX(id) FROM ratings WHERE pair_id = ?", [short]).fetchone()[0]
    for table in ("studies", "experiments", "generations", "pairs", "ratings"):
        mine = [c[1] for c in old.conn.execute(f"PRAGMA table_info({table})")]
        cols = [c for c in (c[1] for c in db.conn.execute(f"PRAGMA table_info({table})")) if c in mine]
        rows = db.conn.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall()
        if table == "ratings":
            rows = [r for r in rows if r[cols.index("id")] != last_of_short]
        old.conn.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
    old.conn.commit()
    old.conn.close()
    upgraded = open_db(old_path)
    assert unclosed_pairs(upgraded) == 1  # the pair below its quota (3 ratings) is open; the others closed
    closed = dict(upgraded.execute("SELECT pair_id, closed_at FROM closed_pairs").fetchall())
    assert short not in closed and len(closed) == 3
    for pair_id, closed_at in closed.items():  # as of the rating that filled it
        third = upgraded.execute("SELECT created_at FROM current_ratings WHERE pair_id = ? ORDER BY id LIMIT 1 "
                                 "OFFSET 2", [pair_id]).fetchone()[0]
        assert closed_at == third
    upgraded.conn.close()
    r = CliRunner().invoke(cli, ["export", "--db", str(old_path), "--out", str(tmp_path / "e")])
    assert r.exit_code == 0 and "1 pair(s)" in r.output and "still open" in r.output, r.output  # not 4


def test_what_raters_typed_is_exported_only_when_asked(tmp_path):
    """Export audit, 2026-12-04: the card stresses that rater names are pseudonymised, yet a comment such as "I am Bob
    Jones, bob@example.com" (and a skip's reason) was published as typed, where the report never shows rater text.
    It is left out unless --keep-comments, and the card says how much there is either way."""
    import pyarrow.parquet as pq

    from evalkit.config import AppConfig
    from evalkit.rating.queue import RatingInput, skip_pair, submit_rating
    from test_aggregate import GATE, load_fixture

    db = open_db(tmp_path / "typed.db")
    app = AppConfig(ratings_per_pair=4)  # a pair with room for one more rating
    ids = load_fixture(db, tmp_path / "gate.toml", GATE, app=app)
    answers = {c: "pass" for c in CRITERIA}
    submit_rating(db, app, RatingInput(ids[1], "erin", answers, answers, "tie", "I am Erin Jones, erin@example.com"))
    skip_pair(db, AppConfig(), "dan", ids[0], "Dan Smith here: I wrote this notice")
    db.conn.close()
    runner = CliRunner()
    for keep, out in ((False, tmp_path / "plain"), (True, tmp_path / "kept")):
        r = runner.invoke(cli, ["export", "--db", str(tmp_path / "typed.db"), "--out", str(out),
                                *(["--keep-comments"] if keep else [])])
        assert r.exit_code == 0, r.output
        assert "Creating parquet" not in r.output  # eleven progress bars of a few rows each said nothing
        ratings = pq.read_table(split_file(out, "ratings")).to_pylist()
        card = (out / "README.md").read_text(encoding="utf-8")
        published = json.dumps(ratings, ensure_ascii=False, default=str) + card  # times are datetimes
        assert ("Erin Jones" in published and "Dan Smith" in published) is keep
        assert ("Erin" in published or "Dan Smith" in published) is keep, out
        assert "What raters typed (1 comment(s) and 1 skip reason(s))" in card
        assert ("exported as typed" if keep else "is left out") in card
        if not keep:
            assert {r["comment"] for r in ratings} == {""} and {r["skip_reason"] for r in ratings} <= {"", None}
    assert "--keep-comments" in runner.invoke(cli, ["export", "--help"]).output


def test_the_card_says_how_to_recompute_the_verdict_from_its_tables(db, tmp_path):
    """Export audit, 2026-12-04: an analyst reproduced each criterion's difference only by guessing what the card
    never said ("unsure" counts as not passed; identical pairs are found by token hash and enter in the pool's
    proportion), and could not tell the interval's method or the speed-up's estimator. The card now says, from the
    study's own gate, and the decided sample's ratings reproduce the stored differences by that recipe."""
    import pyarrow.parquet as pq

    out = tmp_path / "e"
    card = _card_of(db, out)
    method = card.split("## Recomputing the verdict")[1].split("## Protocol")[0]
    assert 'only "pass" counts as passed ("unsure" counts as not passed)' in method
    assert "`decisions.sample_json`" in method and "`generations.token_hash`" in method
    assert 'gate `interval` = "' in method and "Tango's score interval" in method and "median of these over" in method
    decision = pq.read_table(split_file(out, "decisions")).to_pylist()[0]
    sample = set(json.loads(decision["sample_json"]))
    ratings = [r for r in pq.read_table(split_file(out, "ratings")).to_pylist() if r["id"] in sample]
    rows = {r["criterion"]: r for r in json.loads(decision["verdict_json"])["fidelity"]}
    assert rows and all(f"assisted_{c}" in ratings[0] for c in rows)  # the criteria from the files, not evalkit's list
    for c in rows:  # by the card's recipe: a pair's mean of (assisted passed) - (ordinary passed), over pairs
        per_pair = {}
        for r in ratings:
            per_pair.setdefault(r["pair_id"], []).append((r[f"assisted_{c}"] == "pass") - (r[f"ordinary_{c}"] == "pass"))
        mine = sum(sum(v) / len(v) for v in per_pair.values()) / len(per_pair)
        assert mine == pytest.approx(rows[c]["difference"]), c


def test_a_gate_shown_with_shortened_paths_says_its_text_no_longer_hashes_to_its_hash(tmp_path):
    """Export re-check, 2026-12-04: the card's gate block is scrubbed with the rest of the card, so a path in the gate
    file was shortened there while the hash printed beside it is the frozen text's, and nothing said why they differ.
    The block says so and points to the frozen text."""
    from test_aggregate import GATE, load_fixture

    db = open_db(tmp_path / "x.db")
    load_fixture(db, tmp_path / "gate.toml", GATE + "# models staged at /scratch/team/models/qwen\n")
    card = _card_of(db, tmp_path / "e")
    block = card.split("### Release gate")[1].split("###")[0]
    assert "# models staged at …/qwen" in block
    assert "does not hash to the hash above; the frozen text, which does, is `studies.gate_json`" in block
    plain = tmp_path / "plain"
    db2 = open_db(tmp_path / "y.db")
    load_fixture(db2, tmp_path / "gate2.toml")
    assert "does not hash" not in _card_of(db2, plain)


def test_a_machine_name_is_withheld_in_any_letter_case():
    """Export audit, 2026-12-04: host names ignore case (Windows reports DESKTOP-ABC123), the scrub did not."""
    from evalkit.publish.scrub import without_hosts

    hosts = {"gpu-node-17.corp.example.com", "gpu-node-17"}
    said = "CUDA error on GPU-NODE-17.corp.example.com (Gpu-Node-17, rank 0); gpu-node-170 is another machine"
    assert without_hosts(said, hosts) == "CUDA error on <host> (<host>, rank 0); gpu-node-170 is another machine"


@pytest.mark.parametrize("pairs", [24, 29, 44])
def test_a_path_that_passes_every_rating_does_not_break_the_report(tmp_path, pairs):
    """Organiser audit, 2026-12-04: where a path passed every rating of a criterion its Wilson upper end came out as
    0.9999999999999999 beside a pass rate of 1.0 (at 57 of the sizes 1 to 200), matplotlib refused the negative error
    bar, and the Results tab (counts and decision included) and `evalkit report` failed for everyone."""
    from evalkit.aggregate import aggregate
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=pairs, min_ratings_per_pair=1, ppi="off"))
    db = open_db(tmp_path / "all.db")
    build_study(db, SyntheticStudy(pairs=pairs, raters_per_pair=1, raters=12, pass_rate=1.0, rater_accuracy=1.0,
                                   seed=2, gate_path=str(gate)))
    agg = aggregate(db)
    pr = agg.tables["pass_rates"]
    assert (pr["pass_rate"] == 1.0).all()
    assert ((pr["ci_low"] <= pr["pass_rate"]) & (pr["pass_rate"] <= pr["ci_high"])).all()
    page = build_report(db, tmp_path / "report", agg).read_text()
    assert 'alt="pass_rates"' in page


def test_a_wilson_interval_holds_its_proportion_to_the_last_bit():
    import numpy as np

    from evalkit.stats import wilson, wilson_array

    n = np.arange(1, 201, dtype=float)
    for k in (n, 0 * n, n // 3):
        lo, hi = wilson_array(k, n)
        assert (lo <= k / n).all() and (k / n <= hi).all()
        assert all(wilson(int(a), int(b))[0] <= a / b <= wilson(int(a), int(b))[1] for a, b in zip(k, n))


def test_an_interim_look_is_recomputed_from_the_exported_files_by_the_card_s_rule(tmp_path):
    """Export audit, 2026-12-05: an interim look's sample is 'the pairs that hold their quota of current ratings', but
    `ratings.current` is true for every skip row too, and a pool made before quotas were stored has no
    `pairs.wanted_ratings`: a sceptic who counted current rows took a pair with a skip for complete, and one with no
    stored quota had none to go by. The card says to count rating rows only and where the quota then comes from; by
    that rule the exported files alone give the look's differences."""
    import pandas as pd

    from evalkit.aggregate import aggregate
    from evalkit.config import AppConfig
    from evalkit.rating.queue import RatingInput, skip_pair, submit_rating
    from test_aggregate import GATE, load_fixture

    db = open_db(tmp_path / "interim.db")
    app = AppConfig(ratings_per_pair=4)
    ids = load_fixture(db, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 300")
                       .replace("min_ratings_per_pair = 3", "min_ratings_per_pair = 4"), app=app)
    answers = {c: "pass" for c in CRITERIA}
    submit_rating(db, app, RatingInput(ids[0], "zed", answers, {c: "fail" for c in CRITERIA}, "A"))  # pair 0: 4 ratings
    skip_pair(db, app, "yan", ids[1], "not my language")  # pair 1: 3 ratings and a skip, not complete
    out = tmp_path / "e"
    card = _card_of(db, out)
    method = " ".join(card.split("## Recomputing the verdict")[1].split("## Protocol")[0].split())
    assert '`kind` = "rating"' in method and "every skip row is current" in method
    assert "where `pairs.wanted_ratings` is empty, the gate's `min_ratings_per_pair`" in method

    table = {n: pd.read_parquet(split_file(out, n)) for n in ("ratings", "pairs", "studies")}
    gate = json.loads(table["studies"].gate_json.iloc[0])["values"]
    pairs = table["pairs"][table["pairs"].kind == "study"].set_index("id")
    quota = pairs.wanted_ratings.where(pairs.wanted_ratings > 0, gate["min_ratings_per_pair"])
    r = table["ratings"]
    r = r[r.current & (r.kind == "rating") & r.pair_id.isin(pairs.index)].sort_values("id")
    r = r[r.groupby("pair_id").cumcount() < r.pair_id.map(quota)]
    r = r[r.pair_id.map(r.pair_id.value_counts()) >= r.pair_id.map(quota)]
    assert set(r.pair_id) == {ids[0]}
    rows = {row["criterion"]: row for row in aggregate(db).verdict.fidelity}
    for c in CRITERIA:
        d = (r[f"assisted_{c}"] == "pass").astype(int) - (r[f"ordinary_{c}"] == "pass").astype(int)
        assert d.groupby(r.pair_id).mean().mean() == pytest.approx(rows[c]["difference"]), c


def test_an_interim_export_says_so_in_the_card_s_first_lines(db, tmp_path):
    """Export audit, 2026-12-05: a card exported before its study's decision said "interim look" only inside the
    verdict block, below the card's introduction (what a Hub page shows first), and a sceptic skimming it took the
    INSUFFICIENT DATA / DROP for the study's outcome. The first lines say it is interim; a decided study's do not."""
    from test_aggregate import GATE, load_fixture

    interim = open_db(tmp_path / "open.db")
    load_fixture(interim, tmp_path / "g.toml", GATE.replace("planned_pairs = 4", "planned_pairs = 300"))
    card = _card_of(interim, tmp_path / "e")
    top = card.split("---\n", 2)[2].split("\n\n")[:2]  # the title and the paragraph below it
    assert "Interim export, not a decision" in top[1] and "study 'main'" in top[1]
    assert "`decisions` has no row for it" in top[1]
    decided = _card_of(db, tmp_path / "d").split("## Verdict")[0]
    assert "Interim export" not in decided


def test_every_column_that_holds_json_text_is_documented_as_json(tmp_path):
    """Export audit, 2026-12-05: `bench_processes.warmup_seconds` (a list of the warm-up calls' seconds) and
    `target_placement` / `draft_placement` (MB of weights per device) are JSON text, but the card listed them as plain
    columns, so a `datasets` user met '[0.41, 0.39]' as a string with nothing saying to parse it. Every column whose
    values are JSON is named so in the card's column notes or by its name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalkit.publish.export import column_notes
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=6, min_ratings_per_pair=1, ppi="off"))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=6, raters_per_pair=1, raters=3, seed=1, gate_path=str(gate)))
    db.execute("UPDATE bench_processes SET warmup_seconds = '[0.41, 0.39]', target_placement = '{\"cpu\": 12.5}'")
    out = tmp_path / "e"
    export(db, out)
    for split in SPLITS:
        table = pq.read_table(split_file(out, split))
        for name in table.column_names:
            values = [v for v in table.column(name).to_pylist() if v] if pa.types.is_string(table.schema.field(name).type) else []
            if values and all(v[:1] in "[{" for v in values):
                notes = column_notes(split)
                assert name.endswith("_json") or f"{name} (JSON" in notes, (split, name)
                [json.loads(v) for v in values]


def test_the_card_s_share_of_identical_pairs_rounds_halves_up_as_the_verdict_does(tmp_path):
    """Export audit, 2026-12-05: the card said identical pairs enter as round(rated x identical / differing), and a
    sceptic's round() (Python's, numpy's, pandas') takes a half to the even number: 1 rated pair beside 2 identical of
    4 differing gave 0 identical pairs where the verdict took 1, and every difference came out doubled. The card says
    halves round up (and per rating epoch); by that rule the files reproduce the frozen differences."""
    import math

    import pandas as pd

    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=2, min_ratings_per_pair=1, ppi="off"))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=6, raters_per_pair=1, raters=3, identical_share=1 / 3, seed=1,
                                   gate_path=str(gate), drops={"schedule": 0.3}))
    out = tmp_path / "e"
    card = " ".join(_card_of(db, out).split())
    assert "floor(rated x identical / differing + 0.5)" in card and "halves round up" in card
    assert "whole part of `pairs.queue_rank`" in card

    t = {n: pd.read_parquet(split_file(out, n)) for n in ("ratings", "pairs", "generations", "decisions")}
    decision = t["decisions"].iloc[0]
    r = t["ratings"][t["ratings"].id.isin(json.loads(decision.sample_json))]
    pairs = t["pairs"][t["pairs"].kind == "study"]
    token = t["generations"].set_index("id").token_hash
    identical = (pairs.ordinary_generation_id.map(token) == pairs.assisted_generation_id.map(token)).sum()
    rated = r.pair_id.nunique()
    share = rated * identical / (len(pairs) - identical)
    assert round(share) != math.floor(share + 0.5)  # the case where the two roundings part
    n_identical = min(identical, math.floor(share + 0.5))
    rows = {row["criterion"]: row for row in json.loads(decision.verdict_json)["fidelity"]}
    assert any(rows[c]["difference"] for c in CRITERIA)
    for c in CRITERIA:
        d = (r[f"assisted_{c}"] == "pass").astype(int) - (r[f"ordinary_{c}"] == "pass").astype(int)
        assert d.groupby(r.pair_id).mean().sum() / (rated + n_identical) == pytest.approx(rows[c]["difference"]), c


def test_time_columns_are_utc_timestamps_in_the_parquet_schema_and_the_card_says_so(db, tmp_path):
    """Export audit, 2026-12-06: every time column (`created_at`, `decided_at`, `completed_at`, `stored_at`) was
    exported as ISO 8601 text, which every reader had to parse (and text compares by its characters, not as times).
    They are timestamps in UTC in the parquet schema, empty tables too, each the instant stored, and the card says
    so."""
    from datetime import datetime, timezone

    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "e"
    card = " ".join(_card_of(db, out).split())
    assert "timestamps in UTC (parquet `timestamp[us, tz=UTC]`" in card and "ISO 8601 text" not in card
    seen = 0
    for split in SPLITS:
        table = pq.read_table(split_file(out, split))
        key = table.column_names[0]  # id, or a decision's study_id
        stored = {r[key]: r for r in db.query(f"SELECT * FROM {split}")}
        for col in (c for c in table.column_names if c.endswith("_at")):
            assert table.schema.field(col).type == pa.timestamp("us", tz="UTC"), (split, col)
            for row_id, value in zip(table.column(key).to_pylist(), table.column(col).to_pylist()):
                text = stored[row_id][col]
                if text is None:  # a time not recorded (pairs.stored_at of a pair never ranked) stays empty
                    assert value is None, (split, col)
                    continue
                assert value == datetime.fromisoformat(text).astimezone(timezone.utc), (split, col, text)
                seen += 1
    assert seen and pq.read_table(split_file(out, "timing_runs")).num_rows == 0  # the empty case is covered


def test_a_stored_time_that_is_not_iso_8601_is_named_and_nothing_is_written(db, tmp_path):
    """A time edited by hand into another form cannot become a timestamp: the export names the table, column, row and
    value, says the form it takes, and leaves DIR as it was."""
    from evalkit.errors import EvalkitError

    with db.conn:
        row = db.execute("SELECT MAX(id) FROM ratings").fetchone()[0]
        db.execute("UPDATE ratings SET created_at = 'yesterday' WHERE id = ?", [row])
    with pytest.raises(EvalkitError) as e:
        export(db, tmp_path / "e")
    said = f"{e.value} {e.value.fix}"
    assert f"ratings.created_at of the row with id {row} is 'yesterday', not an ISO 8601 time" in said
    assert "2026-12-05T14:14:00.338+00:00" in said and not (tmp_path / "e" / "README.md").exists()


def test_a_push_without_a_hub_token_is_refused_before_anything_is_written(db, tmp_path, monkeypatch):
    """Export audit, 2026-12-05: with no Hugging Face token `export --push-to-hub` wrote the whole export, then failed
    at the Hub with whatever the client raised (a 401, or a connection error on a machine without the Hub) and "log
    in and retry". The real client's missing token is found first: the message names the repo and the fix, and DIR is
    left as it was."""
    from huggingface_hub import constants
    from huggingface_hub.hf_api import HfApi

    from evalkit.errors import EvalkitError

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    calls = []
    monkeypatch.setattr(HfApi, "create_repo", lambda *a, **k: calls.append(a))
    out = tmp_path / "e"
    with pytest.raises(EvalkitError) as e:
        export(db, out, push_to_hub="org/study")
    said = f"{e.value} {e.value.fix}"
    assert "no Hugging Face token" in said and "'org/study'" in said and "hf auth login" in said
    assert "nothing was written" in said and not out.exists() and not calls


def test_a_failed_push_says_what_to_do_for_what_went_wrong(db, tmp_path):
    """Export audit, 2026-12-05: every failed push ended "log in and retry", also where the Hub could not be reached
    (logging in does not help there) and where the token may not write to the namespace. The fix now fits the cause;
    the local export is kept either way and the message says where."""
    from types import SimpleNamespace

    from evalkit.errors import EvalkitError

    class Refused(Exception):
        def __init__(self, status):
            super().__init__(f"{status} Client Error")
            self.response = SimpleNamespace(status_code=status)

    class TransportError(Exception):  # the Hub client's HTTP library's (httpx, httpx2)
        pass

    class ConnectError(TransportError):
        pass

    fixes = {}
    for name, err in {"network": ConnectionError("network unreachable"), "dns": ConnectError("Name or service not known"),
                      "401": Refused(401), "403": Refused(403)}.items():
        hub = FakeHub()

        def create_repo(repo_id, err=err, **kw):
            raise err

        hub.create_repo = create_repo
        out = tmp_path / name
        with pytest.raises(EvalkitError, match="push to the Hub dataset 'org/study' failed") as e:
            export(db, out, push_to_hub="org/study", api=hub)
        assert f"saved locally in {out}" in e.value.fix and split_file(out, "ratings").exists()
        fixes[name] = e.value.fix
    for name in ("network", "dns"):
        assert "could not be reached" in fixes[name] and "log in" not in fixes[name]
    assert "hf auth login" in fixes["401"]
    assert "write access to 'org'" in fixes["403"]


def test_a_push_the_hub_fails_for_its_own_reasons_is_not_told_to_log_in(db, tmp_path):
    """Export audit, 2026-12-06: a push the Hub answered with a 5xx (its own outage) or 429 (too many requests), or
    refused for the repo (404, 409), ended "log in and export again", which does not help a user already logged in.
    The fix now says to try again later, or to check the repo id; every failure says the repo holds the whole
    export or none of it (one commit, never a part) and where the local export is."""
    from types import SimpleNamespace

    from evalkit.errors import EvalkitError

    class Refused(Exception):
        def __init__(self, status):
            super().__init__(f"{status} Error")
            self.response = SimpleNamespace(status_code=status)

    fixes = {}
    for status in (500, 503, 429, 404, 409):
        hub = FakeHub()

        def upload_folder(status=status, **kw):
            raise Refused(status)

        hub.upload_folder = upload_folder
        out = tmp_path / str(status)
        with pytest.raises(EvalkitError) as e:
            export(db, out, push_to_hub="org/study", api=hub)
        assert "a push is one commit: the repo holds the whole export or, as before, none of it" in str(e.value)
        assert f"saved locally in {out}" in e.value.fix and split_file(out, "ratings").exists()
        fixes[status] = e.value.fix
    for status in (500, 503, 429):
        assert "log in" not in fixes[status] and f"the Hub answered {status}" in fixes[status], fixes[status]
        assert "export again in a few minutes" in fixes[status]
    for status in (404, 409):
        assert "log in" not in fixes[status] and "check the repo id 'org/study'" in fixes[status], fixes[status]


def test_an_empty_push_to_hub_is_refused_not_skipped(db, tmp_path, monkeypatch):
    """Export audit, 2026-12-06: `evalkit export --push-to-hub "$REPO"` with REPO unset wrote a local export and
    exited 0, pushing nothing and saying nothing of it (a script took it for a push); with --public it said --public
    needed --push-to-hub, which it had. An empty repo id is refused, before anything is written, with the fix."""
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: pytest.fail("the Hub must not be contacted"))
    path = db.execute("PRAGMA database_list").fetchone()[2]
    for extra in ([], ["--public"], ["--while-rating"]):
        out = tmp_path / f"e{len(extra)}{''.join(extra)}"
        r = CliRunner().invoke(cli, ["export", "--db", path, "--out", str(out), "--push-to-hub", "", *extra])
        assert r.exit_code != 0, r.output
        assert "--push-to-hub is empty" in r.output and "namespace/name" in r.output, r.output
        assert not out.exists()


def test_out_naming_a_file_is_refused_with_the_fix_and_the_file_kept(db, tmp_path):
    """Export audit, 2026-12-05: `export --out results.parquet` (a file) stopped at "Directory 'results.parquet' is a
    file." with no word on what to pass instead; `report` alike. Both name the value, say a folder is wanted and how to
    give one, and leave the file as it was."""
    path = db.execute("PRAGMA database_list").fetchone()[2]
    taken = tmp_path / "results.parquet"
    taken.write_bytes(b"not ours")
    for command in ("export", "report"):
        r = CliRunner().invoke(cli, [command, "--db", path, "--out", str(taken)])
        assert r.exit_code != 0, command
        assert f"--out '{taken}' is a file, not a folder" in r.output and "fix: pass --out a folder" in r.output, r.output
        assert taken.read_bytes() == b"not ours"


def test_an_export_that_freezes_the_decision_counts_the_pairs_open_after_it(tmp_path):
    """Export audit, 2026-12-05: the first look at a study whose planned sample had completed was an export; it
    counted the pairs open to raters before its own look froze the decision (which closes every pair of the study),
    so its card said "Exported while rating was under way" above a frozen decision, and a push was refused unless
    --while-rating although no pair was open any more; `evalkit report` alike. The count is the one after the look."""
    from evalkit.rating.queue import unclosed_pairs
    from evalkit.study.synthetic import SyntheticStudy, build_study, gate_file_text

    gate = tmp_path / "gate.toml"
    gate.write_text(gate_file_text(planned_pairs=30, min_ratings_per_pair=1, ppi="off"))
    db = open_db(tmp_path / "s.db")
    build_study(db, SyntheticStudy(pairs=30, raters_per_pair=2, raters=6, seed=3, gate_path=str(gate)))
    assert unclosed_pairs(db)  # open until a look freezes the decision
    hub = FakeHub()
    card = _card_of(db, tmp_path / "e", push_to_hub="org/study", api=hub)
    assert any(c[0] == "upload_folder" for c in hub.calls)
    assert "Exported while rating was under way" not in card and "DECISION FROZEN" in card
    assert not unclosed_pairs(db)
    db2 = open_db(tmp_path / "s2.db")  # `evalkit report` as the first look alike
    build_study(db2, SyntheticStudy(pairs=30, raters_per_pair=2, raters=6, seed=3, gate_path=str(gate)))
    assert unclosed_pairs(db2)
    r = CliRunner().invoke(cli, ["report", "--db", str(tmp_path / "s2.db"), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    assert "Written while rating was under way" not in (tmp_path / "rep" / "index.html").read_text()


def test_each_criterion_s_sample_and_the_speed_basis_are_rebuilt_from_the_loaded_tables_as_the_card_says(tmp_path):
    """Reader audit, 2026-12-06: a decision counts at the worst the pairs of its sample that have no outcome (withheld
    from every rater for repeating a revealed text, or passed over and then rated only by raters the gold check leaves
    out), but the export carried none of what marks them (the closings, the holds) and the card's recipe did not name
    them: a reader with the dataset alone counted 89 pairs where the card says 100, and could not rebuild an interval.
    The pairs table now says which pairs are withheld, passed over or kept from a rater, and the card how they count.
    Here every table loads by its config, and each criterion's sample (rated, identical and worst-case pairs, raters)
    and the speed figure's basis (source, rounds, pairs) are rebuilt from the loaded tables alone and match the card."""
    import math
    import re

    from datasets import load_dataset
    from test_later_pool import APP, _greedy_later_pool, _rate, next_pair

    db, _, _, _, copies = _greedy_later_pool(tmp_path, [])
    while next_pair(db, "bob", APP.ratings_per_pair) is not None:
        _rate(db, "bob", 1)
    out = tmp_path / "e"
    export(db, out)
    card = (out / "README.md").read_text(encoding="utf-8")
    configs = re.findall(r"- config_name: (\w+)", card)
    t = {name: load_dataset(str(out), name, split="train").to_list() for name in configs}
    assert set(configs) == {s for s in SPLITS if db.execute(f"SELECT COUNT(*) FROM {s}").fetchone()[0]}

    decision, = t["decisions"]
    gate = json.loads(t["studies"][0]["gate_json"])["values"]
    sample = set(json.loads(decision["sample_json"]))
    rating_of = {r["id"]: r for r in t["ratings"]}
    rated = {rating_of[i]["pair_id"] for i in sample}
    raters = {rating_of[i]["rater"] for i in sample}
    tokens = {g["id"]: g["token_hash"] for g in t["generations"]}
    pairs = sorted((p for p in t["pairs"] if p["kind"] == "study"), key=lambda p: p["queue_rank"])
    counts = {}
    for r in t["ratings"]:
        if r["current"] and r["kind"] == "rating" and r["created_at"] <= decision["completed_at"]:
            counts[r["pair_id"]] = counts.get(r["pair_id"], 0) + 1

    def identical(p):
        return tokens[p["ordinary_generation_id"]] == tokens[p["assisted_generation_id"]]

    # the card's rule: in the queue's order, the fewest differing pairs that, with the identical pairs entering per
    # epoch at floor(decided x identical / differing + 0.5), reach the plan; each of them is rated in the sample or
    # has no outcome (withheld, short of its quota)
    epochs = {}
    for p in pairs:
        e = epochs.setdefault(math.floor(p["queue_rank"]), [0, 0])
        e[identical(p)] += 1
    walked, unknown, seen = {}, 0, set()

    def zeros_now():
        return sum(min(epochs[e][1], math.floor(n * epochs[e][1] / epochs[e][0] + 0.5)) for e, n in walked.items())

    for p in (p for p in pairs if not identical(p)):
        if sum(walked.values()) + zeros_now() >= gate["planned_pairs"]:
            break
        epoch = math.floor(p["queue_rank"])
        walked[epoch] = walked.get(epoch, 0) + 1
        if p["id"] in rated:
            seen.add(p["id"])
        else:
            assert p["withheld"] and counts.get(p["id"], 0) < (p["wanted_ratings"] or gate["min_ratings_per_pair"])
            unknown += 1
    zeros = zeros_now()
    assert seen == rated
    assert unknown and zeros and len(rated) + unknown + zeros == gate["planned_pairs"]

    rows = json.loads(decision["verdict_json"])["fidelity"]
    assert len(rows) == len(CRITERIA)
    for row in rows:
        assert (row["pairs"], row["worst_case_pairs"]) == (len(rated) + unknown + zeros, unknown)
    shown = re.findall(r"OUTSIDE margin [^\n]*? over (\d+) pairs \((\d+) identical[^\n]*?\((\d+) [^\n]* and (\d+) raters",
                       card.split("AFTER THE DECISION")[0])
    assert shown == [(str(len(rated) + unknown + zeros), str(zeros), str(unknown), str(len(raters)))] * len(CRITERIA)
    assert f"{len(sample)} ratings of {gate['planned_pairs']} pairs" in card

    # the speed figure: the gate decides on benchmark rounds only, none is stored; the pool's runs are reported
    speed = json.loads(decision["speed_json"])
    rounds = {r["round"] for r in t.get("timing_runs", [])}
    ok = {g["id"] for g in t["generations"] if g["status"] == "ok"}
    matched = sum(p["ordinary_generation_id"] in ok and p["assisted_generation_id"] in ok for p in pairs)
    assert (speed["rounds"], speed["rounds_planned"], speed["throughput_pairs"]) == (len(rounds), gate["speed_rounds"],
                                                                                      matched)
    assert gate["speed_source"] == "benchmark" and speed["bench_only"]
    assert (f"{len(rounds)} of the {gate['speed_rounds']} benchmark rounds the gate plans" in card
            and f"over all {matched} matched pairs" in card)
    assert "`pairs.withheld`" in card and "`worst_case_pairs`" in card


def test_the_card_says_where_the_criteria_s_wording_each_pair_asked_is_and_it_checks(pool_db, tmp_path):
    """Reader audit, 2026-12-06: each generation of a pool stores the criteria's wording its raters are asked (a
    reworded prompt file no longer changes the question mid-study), and the export carries it in
    generations.effective_config, but the card's column list said only "its config": a reader could not learn which
    questions the answers in `ratings` answer. The card now names it and how its hash is made; here, from a real pool
    of the tiny models, every study pair's outputs carry the wording of every criterion in both languages, and its
    hash checks by the card's rule."""
    import hashlib

    from datasets import load_dataset

    export(open_db(pool_db), tmp_path / "e")
    card = (tmp_path / "e" / "README.md").read_text(encoding="utf-8")
    notes = card.split("- **generations**:")[1].split("\n- **")[0]
    assert "`criteria` (criterion id -> zh and en), with `criteria_hash`" in notes
    gens = {g["id"]: json.loads(g["effective_config"])["prompt"]
            for g in load_dataset(str(tmp_path / "e"), "generations", split="train")}
    study = [p for p in load_dataset(str(tmp_path / "e"), "pairs", split="train") if p["kind"] == "study"]
    assert study
    for p in study:
        for side in ("ordinary_generation_id", "assisted_generation_id"):
            asked = gens[p[side]]
            assert set(asked["criteria"]) == set(CRITERIA)
            assert all(asked["criteria"][c]["zh"] and asked["criteria"][c]["en"] for c in CRITERIA)
            text = json.dumps(asked["criteria"], sort_keys=True, ensure_ascii=False).encode()
            assert asked["criteria_hash"] == hashlib.sha256(text).hexdigest()[:16]


def test_the_speed_figure_is_rebuilt_from_the_deciding_rounds_the_card_names(tmp_path):
    """Reader audit, 2026-12-06: every benchmark of the study's pair counts, in the order stored, and only the first
    `speed_rounds` whole rounds decide, but the card's recipe gave the estimator and not which runs it takes: a reader
    who pooled every timed run of the export (here three benchmarks, the third one's rounds after the two deciding
    ones) got another speed-up than the card's. The recipe now says which rounds decide; taking them from the loaded
    tables by it gives the card's figure."""
    import re
    import statistics

    from datasets import load_dataset
    from test_speed_selection import _study_with_a_slow_benchmark

    from evalkit.study.synthetic import add_bench

    db, _ = _study_with_a_slow_benchmark(tmp_path, speedup=1.2, speed_rounds=4)
    add_bench(db, speedup=1.6, seed=5)
    add_bench(db, speedup=3.0, seed=6)  # after the 4 deciding rounds: reported, never weighed
    out = tmp_path / "e"
    export(db, out)
    card = (out / "README.md").read_text(encoding="utf-8")
    flat = " ".join(card.split())
    assert "the first `speed_rounds` (gate) whole rounds decide" in flat and "rounds after them are reported" in flat
    t = {s: load_dataset(str(out), s, split="train").to_list() for s in ("timing_runs", "bench_processes", "studies",
                                                                          "experiments")}
    gate = json.loads(t["studies"][0]["gate_json"])["values"]
    stored = {}
    for b in t["bench_processes"]:
        stored[b["experiment_id"]] = max(stored.get(b["experiment_id"], b["stored_at"]), b["stored_at"])
    failed = {(b["experiment_id"], b["round"]) for b in t["bench_processes"] if b["status"] == "failed"}
    rounds = []  # (benchmark, round) in the order the card gives
    for bench in sorted(stored, key=lambda e: (stored[e], e)):
        for rnd in sorted({r["round"] for r in t["timing_runs"] if r["experiment_id"] == bench}):
            paths = {r["path"] for r in t["timing_runs"] if (r["experiment_id"], r["round"]) == (bench, rnd)}
            if (bench, rnd) not in failed and {"ordinary", "assisted"} <= paths:
                rounds.append((bench, rnd))
    deciding = set(rounds[:gate["speed_rounds"]])
    assert len(rounds) > len(deciding) == gate["speed_rounds"]
    pool_config = json.loads(next(e for e in t["experiments"] if e["kind"] == "pool")["config_json"])
    tolerance = pool_config.get("bench", {}).get("length_tolerance", 0.1)  # a synthetic pool stores no bench settings
    runs = {(r["experiment_id"], r["round"], r["rep"], r["prompt_id"], r["path"]): r for r in t["timing_runs"]
            if (r["experiment_id"], r["round"]) in deciding}
    ratios = {}
    for (bench, rnd, rep, prompt, path), o in runs.items():
        a = runs.get((bench, rnd, rep, prompt, "assisted"))
        if path != "ordinary" or a is None or a["stop_reason"] != o["stop_reason"] or abs(
                a["new_tokens"] - o["new_tokens"]) > tolerance * max(a["new_tokens"], o["new_tokens"]):
            continue
        ratios.setdefault(prompt, ([], []))[0].append(o["seconds"])
        ratios[prompt][1].append(a["seconds"])
    speedup = statistics.median(statistics.median(o) / statistics.median(a) for o, a in ratios.values())
    shown = re.search(r"SPEED: speed-up over (\d+) comparable pairs (\d+\.\d\d)x", card)
    assert shown and (int(shown[1]), shown[2]) == (sum(len(o) for o, _ in ratios.values()), f"{speedup:.2f}")
    everything = statistics.median(
        statistics.median([r["seconds"] for r in t["timing_runs"] if r["prompt_id"] == p and r["path"] == "ordinary"])
        / statistics.median([r["seconds"] for r in t["timing_runs"] if r["prompt_id"] == p and r["path"] == "assisted"])
        for p in ratios)
    assert f"{everything:.2f}" != shown[2]  # pooling every run of the export gives another figure


def test_a_machine_s_ip_address_in_an_error_message_or_a_note_does_not_leave_the_machine(db, tmp_path):
    """Privacy audit, 2026-12-06: machine names were withheld from error messages and notes, but a machine's address
    was not: a multi-GPU run's NCCL error names its peers by IPv4 address (on a private network: where it sits), and
    a note may give the server's. Such an address is written <address> now, in the tables and the card; loopback and
    0.0.0.0 (no machine) and version numbers stay."""
    everything, note, error = _exported_note_and_error(
        db, tmp_path, "rerun after the outage of 192.168.7.23; app on 0.0.0.0",
        "NCCL WARN Net : Connect to 10.20.30.40<43915> failed (transformers 4.46.0.dev0, 127.0.0.1)")
    assert "192.168.7.23" not in everything and "10.20.30.40" not in everything
    assert note == "rerun after the outage of <address>; app on 0.0.0.0"
    assert error == "NCCL WARN Net : Connect to <address><43915> failed (transformers 4.46.0.dev0, 127.0.0.1)"


def _exported_note_and_error(db, tmp_path, note: str, error: str, host: str = "") -> tuple[str, str, str]:
    """A run stored with this note and a failed generation with this error message (on machine `host`), exported:
    every exported table and the card as one text, and the note and the error message as exported."""
    import pyarrow.parquet as pq

    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_generations

    run = insert_experiment(db, "run", {}, {}, note=note)
    insert_generations(db, [GenerationRecord(prompt_id="writing-01", path="assisted", status="failed",
                                             token_hash="noted", error_message=error, host=host)], run)
    out = tmp_path / "e"
    card = _card_of(db, out)
    exported = {s: pq.read_table(split_file(out, s)).to_pylist() for s in SPLITS}
    return (json.dumps(exported, default=str) + card, next(e["note"] for e in exported["experiments"] if e["id"] == run),
            next(g["error_message"] for g in exported["generations"] if g["token_hash"] == "noted"))


def test_a_machine_s_ipv6_address_does_not_leave_the_machine_either(db, tmp_path):
    """Export audit, 2026-12-06: IPv4 addresses were withheld from error messages and notes, IPv6 ones were not, and
    torch.distributed and NCCL name a peer by its IPv6 address where the network has one ("[fd00:1::7]:29500"). Such
    an address is written <address> now, in the tables and the card; loopback (::1), ::, times and C++ names stay."""
    everything, note, error = _exported_note_and_error(
        db, tmp_path, "rerun after 2001:db8:85a3::8a2e:370:7334 went down at 12:30:45",
        "c10::DistNetworkError: connect to [fd00:1::7]:29500 (fe80::1%eth0) failed; ::1 answered")
    for address in ("2001:db8:85a3::8a2e:370:7334", "fd00:1::7", "fe80::1"):
        assert address not in everything, address
    assert note == "rerun after <address> went down at 12:30:45"
    assert error == "c10::DistNetworkError: connect to [<address>]:29500 (<address>) failed; ::1 answered"


def test_a_machine_name_of_one_or_two_characters_is_withheld_where_it_names_a_machine(db, tmp_path):
    """Export audit, 2026-12-06: machine names shorter than three characters (h1, vm) were never withheld, a floor
    against scrubbing ordinary words, so an error message's "alice@h1:~$" or "h1:29500" and a note's "h1.local" left
    the machine, in the tables and in the card's quote of a fallback's cause. Such a name is withheld where it stands
    as a machine's name; the same letters as a word stay."""
    from evalkit.records import GenerationRecord
    from evalkit.store import insert_experiment, insert_generations

    pool = db.execute("SELECT id FROM experiments WHERE kind = 'pool'").fetchone()[0]
    said = "NCCL timeout talking to h1:29500 from alice@h1:~$ (see the h1 heading of the runbook)"
    insert_generations(db, [
        GenerationRecord(prompt_id="writing-01", path="assisted", status="failed", host="h1", token_hash="short1",
                         error_class="RuntimeError", error_stage="generate", error_message=said),
        GenerationRecord(prompt_id="writing-01", path="fallback", text="f", fallback_of=-1, token_hash="short2",
                         host="h1", stop_reason="eos", generate_seconds=1.0, new_tokens=5)], pool)
    run = insert_experiment(db, "run", {}, {}, note="rerun on H1.local, http://h1:7860/ and hostname=h1; db is fine")
    out = tmp_path / "e"
    card = _card_of(db, out)
    import pyarrow.parquet as pq

    exported = {s: pq.read_table(split_file(out, s)).to_pylist() for s in SPLITS}
    withheld = "NCCL timeout talking to <host>:29500 from <user>@<host>:~$ (see the h1 heading of the runbook)"
    assert next(g["error_message"] for g in exported["generations"] if g["token_hash"] == "short1") == withheld
    assert next(e["note"] for e in exported["experiments"] if e["id"] == run) == \
        "rerun on <host>.local, http://<host>:7860/ and hostname=<host>; db is fine"
    assert withheld in card  # the verdict quotes the fallback's cause
    everything = json.dumps(exported, default=str) + card
    for shown in ("h1:", "@h1", "h1.local", "//h1", "=h1"):
        assert shown not in everything.lower(), shown


def test_a_url_s_password_and_the_user_before_a_machine_s_name_do_not_leave_the_machine(db, tmp_path):
    """Export probe, 2026-12-06: a URL's user and password (a proxy or a git remote written
    https://alice:s3cret@proxy:3128) left the machine as typed in an error message or a note ("s3cret@proxy.corp..."
    was even read as an e-mail address and the password before it kept), and so did the account before a machine's
    name (ssh dave@<host>). Both are withheld now; a URL without them, and an e-mail address, are scrubbed as
    before."""
    everything, note, error = _exported_note_and_error(
        db, tmp_path, "cache at redis://:pw123@cache:6379/0, weights from https://huggingface.co/Qwen/Qwen2.5-7B",
        "ProxyError via https://alice:s3cret@proxy.corp.example:3128 and http://bob:hunter2@10.0.0.9:8080; "
        "ssh dave@gpu-node-17 failed", host="gpu-node-17")
    for secret in ("pw123", "alice", "s3cret", "bob", "hunter2", "dave"):
        assert secret not in everything, secret
    assert note == "cache at redis://<credentials>@cache:6379/0, weights from https://huggingface.co/Qwen/Qwen2.5-7B"
    assert error == ("ProxyError via https://<credentials>@proxy.corp.example:3128 and http://<credentials>@<address>:8080; "
                     "ssh <user>@<host> failed")


@pytest.mark.parametrize("command", ["report", "export"])
def test_an_unknown_study_is_named_in_the_users_database_not_the_temporary_copy(tmp_path, rated_db, command):
    # report and export read from a temporary copy of the database (store.read_copy): the refusal named the copy,
    # /tmp/evalkit-read-.../copy.db, a file the user never passed and that is gone when the command ends
    path = str((tmp_path / "rated.db").resolve())
    r = CliRunner().invoke(cli, [command, "--db", path, "--out", str(tmp_path / "out"), "--study", "nope"])
    assert r.exit_code == 1 and f"no study named 'nope' in {path}" in r.output, r.output
    assert "copy.db" not in r.output and "studies here: main" in r.output


def test_export_and_report_show_their_steps_on_stderr(tmp_path, rated_db):
    """First-hour audit, 2026-12-06: on a study-sized pool (5,000 pairs) `evalkit export` ran some 30 s, and `report`
    some 20 s, on 2 shared cores without a word until the end. Each shows a bar on stderr over its steps."""
    path = str(tmp_path / "rated.db")
    r = CliRunner().invoke(cli, ["export", "--db", path, "--out", str(tmp_path / "exp")])
    assert r.exit_code == 0, r.output
    for step in ("the study's look", "tables", "parquet files and card"):
        assert step in r.output.split("exported to")[0], r.output
    assert "export: 100%" in r.output and "3/3" in r.output
    r = CliRunner().invoke(cli, ["report", "--db", path, "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0 and "report: 100%" in r.output and "plots and tables" in r.output, r.output


def test_an_unchanged_study_exports_the_same_files_and_a_correction_a_new_ratings_file_and_card(db, tmp_path,
                                                                                               monkeypatch):
    """Export audit, 2026-12-06: the card said the moment it was built, so exporting (or pushing) a study whose rows had
    not changed rewrote README.md, and each push committed a card that differed only by that time. The card now says
    the latest time in its tables: the same rows give the same files; a rating's correction gives a new ratings file,
    the old one removed, and a card that names it and the correction's time."""
    from datetime import datetime, timedelta, timezone

    import evalkit.publish.provenance as provenance
    from evalkit.config import AppConfig
    from evalkit.publish.export import utc_time
    from evalkit.rating.queue import RatingInput, correct_rating

    out = tmp_path / "e"
    export(db, out)
    first = _listing(out)

    class Later(datetime):  # the next export, an hour on: the clock injected, no real wait
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz) + timedelta(hours=1)

    monkeypatch.setattr(provenance, "datetime", Later)
    export(db, out)
    assert _listing(out) == first
    old = split_file(out, "ratings")
    rating = next(db.query("SELECT * FROM ratings WHERE kind = 'rating' ORDER BY id LIMIT 1"))
    answers = {c: "fail" for c in CRITERIA}
    new_id = correct_rating(db, AppConfig(), rating["id"], RatingInput(rating["pair_id"], rating["rater"], answers,
                                                                     answers, "B"))
    export(db, out)
    card, new = (out / "README.md").read_text(encoding="utf-8"), split_file(out, "ratings")
    assert new != old and not old.exists() and f"data/{new.name}" in card and old.name not in card
    stored = db.execute("SELECT created_at FROM ratings WHERE id = ?", [new_id]).fetchone()[0]
    as_of = utc_time(stored, "").astimezone(timezone.utc).isoformat(timespec="milliseconds")
    assert f"from the rows stored up to {as_of} (the latest time in its tables)" in card


def test_the_card_names_every_table_the_export_leaves_out_and_why(db, tmp_path):
    """Export audit, 2026-12-06: a stranger reading the card learnt of the tables left out only here and there (the
    holds in a column note), and of most not at all (the raters, the give-ups, the organisers' early looks at
    results, `evalkit tune`'s trials). The card's "Not in this export" now names each table of the database that is
    not exported, with why; a table added later and neither exported nor named fails here."""
    export(db, tmp_path / "e")
    card = (tmp_path / "e" / "README.md").read_text(encoding="utf-8")
    left = card.split("## Not in this export")[1].split("\n## ")[0]
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                       "'sqlite_%'").fetchall()]
    assert set(SPLITS) < set(tables)
    for name in set(tables) - set(SPLITS):
        line = next((ln for ln in left.splitlines() if ln.startswith(f"- `{name}`: ")), None)
        assert line and len(line) > len(f"- `{name}`: ") + 10, f"{name} is neither exported nor named with why"
    assert "Live-tab demo runs" in left and "--keep-comments" in left


def test_a_license_is_stated_with_the_export_and_a_push_keeps_it(db, tmp_path):
    """Export audit, 2026-12-06: the card told the owner to state a license in its header, and every export (and push)
    wrote the card anew as "not stated", undoing that edit on the Hub at the next push. `evalkit export --license ID`
    now writes it in the header and says so; without it the card names that option; an id the Hub would refuse is
    refused, naming it, before anything is written."""
    from evalkit.errors import EvalkitError

    hub = FakeHub()
    for _ in range(2):  # a second push writes the license again: the card never reverts to "not stated"
        export(db, tmp_path / "e", push_to_hub="org/study", api=hub, license="cc-by-4.0")
        card = (tmp_path / "e" / "README.md").read_text(encoding="utf-8")
        header = card.split("---\n")[1]
        assert "\nlicense: cc-by-4.0\n" in "\n" + header and "license_name" not in header
        assert "**License**: `cc-by-4.0`, as stated by the exporter" in card
    r = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "rated.db"), "--out", str(tmp_path / "c"),
                                 "--license", "apache-2.0"])
    assert r.exit_code == 0, r.output
    assert "\nlicense: apache-2.0\n" in (tmp_path / "c" / "README.md").read_text(encoding="utf-8")
    export(db, tmp_path / "n")
    assert "exporting again with `evalkit export --license ID`" in (tmp_path / "n" / "README.md").read_text("utf-8")
    with pytest.raises(EvalkitError, match="--license 'CC BY 4.0' is not a Hub license id") as refused:
        export(db, tmp_path / "bad", license="CC BY 4.0")
    assert "--license cc-by-4.0" in refused.value.fix and not (tmp_path / "bad").exists()


def test_a_push_never_replaces_a_repo_s_files_that_no_evalkit_export_wrote(db, tmp_path):
    """Export audit, 2026-12-06: the local folder's README.md was never replaced unless an evalkit card, but a push
    replaced the repo's README.md and removed every parquet file under data/, whatever wrote them: a repo id mistyped
    into another dataset of the organisation lost its card and its data. A push now refuses a repo holding a README.md
    that is not an evalkit card, or parquet files under data/ not named as an export names them, before anything is
    uploaded, naming them; a repo an earlier export was pushed to takes the next push."""
    from evalkit.errors import EvalkitError

    for theirs in ({"README.md": b"---\nlicense: mit\n---\n# Someone's dataset\n"},
                   {"data/train-00000-of-00001.parquet": b"PAR1", ".gitattributes": b""}):
        hub = FakeHub(files=theirs)
        with pytest.raises(EvalkitError, match="(?s)'org/study' holds .*which no evalkit export wrote: nothing was "
                                               "pushed") as refused:
            export(db, tmp_path / "e", push_to_hub="org/study", api=hub)
        assert "push to a repo of its own" in refused.value.fix and "saved locally" in refused.value.fix
        assert hub.files == theirs and not any(c[0] == "upload_folder" for c in hub.calls)
    hub = FakeHub()
    export(db, tmp_path / "e", push_to_hub="org/study", api=hub)
    first = dict(hub.files)
    export(db, tmp_path / "e", push_to_hub="org/study", api=hub)  # a second push, onto the first's card and files
    assert hub.files == first and "README.md" in first
    assert sum(c[0] == "upload_folder" for c in hub.calls) == 2


@pytest.mark.parametrize("kept", [{"evalkit.db": b"SQLite format 3\x00", "evalkit-start.json": b"{}"},
                                  {"evalkit-start.json": b"{}"}], ids=["database", "started-only"])
@pytest.mark.parametrize("public", [False, True])
def test_a_push_to_the_space_s_sync_repo_is_refused(db, tmp_path, kept, public):
    """Space-host probe, 2026-12-06: `evalkit export --push-to-hub` to the repo the Space syncs its database to (its
    EVALKIT_SYNC_REPO, the repo id a host has at hand) went through: evalkit.db is no parquet file under data/ nor a
    card, so the export landed beside the database, as that repo's card, and publishing the dataset (the card's own
    advice for --public on a private repo) would have published every name, comment and the pseudonyms' salt. Such a
    repo (the database, or a start's write check before the first push) is refused before anything is uploaded."""
    from evalkit.errors import EvalkitError

    hub = FakeHub(files=kept)
    with pytest.raises(EvalkitError, match="'org/ratings' is a Space's sync repo .*nothing was pushed") as refused:
        export(db, tmp_path / "e", push_to_hub="org/ratings", public=public, api=hub)
    assert "saved locally" in refused.value.fix and "'org/ratings-export'" in refused.value.fix
    assert hub.files == kept and not any(c[0] == "upload_folder" for c in hub.calls)
    assert split_file(tmp_path / "e", "ratings").exists()


@pytest.mark.slow
def test_tune_trials_are_exported_and_reload_as_stored(make_config, data_dir, tmp_path):
    """Export audit, 2026-12-06: `evalkit tune`'s trials were left out of the export (the card listed them as such),
    though their rows hold settings and figures only, so a reader had the tune experiment's calls in `generations`
    but not what the sweep concluded from them. They are now a table of the export, reloaded as stored."""
    from datasets import load_dataset

    cfg = make_config(**{"bench.prompts": ["writing-02"]})
    r = CliRunner().invoke(cli, ["tune", "--config", str(cfg), "--tokens", "2", "--schedules", "constant",
                                 "--thresholds", "0", "--reps", "1"])
    assert r.exit_code == 0, r.output
    db = open_db(data_dir / "evalkit.db")
    stored = list(db.query("SELECT * FROM tune_trials ORDER BY id"))
    assert len(stored) == 2
    out = tmp_path / "e"
    export(db, out)
    loaded = load_dataset(str(out), "tune_trials", split="train").to_list()
    assert [row["is_default"] for row in loaded] == [True, False]
    for row in stored:
        row["is_default"] = bool(row["is_default"])
    assert loaded == stored
    assert all(json.loads(row["settings"])["num_assistant_tokens"] == row["num_assistant_tokens"] for row in loaded)
    card = (out / "README.md").read_text(encoding="utf-8")
    left = card.split("## Not in this export")[1].split("\n## ")[0]
    assert "tune_trials" not in left and "**tune_trials**: `evalkit tune`'s summary" in card
    assert f"| tune_trials | 2 | `data/{split_file(out, 'tune_trials').name}` |" in card
