import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import draws  # noqa: E402
import tiny  # noqa: E402


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    return tiny.build_all(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    """Every test gets its own data folder: nothing touches results/."""
    d = tmp_path / "data"
    monkeypatch.setenv("EVALKIT_DATA_DIR", str(d))
    monkeypatch.delenv("EVALKIT_DB", raising=False)
    return d


@pytest.fixture(autouse=True)
def seeded_pool_draws(request):
    """Pools built in a test draw from a stream seeded by the test's node id (draws.seeded_draws: the config's
    decoding.seed as their base, so a test's texts are the same on every run; the sides, queue seed, gold draws and
    pair ids too, so a failure replays and no rare draw fails CI). A test marked secret_seeds draws as the product
    does. A pool built in a subprocess (the CLI, app.py) escapes this: such a test asserts what holds for any draw."""
    if request.node.get_closest_marker("secret_seeds") is not None:
        yield
        return
    with draws.seeded_draws(draws.seed_of(request.node.nodeid)):
        yield


@pytest.fixture(autouse=True)
def close_figures():
    """Figures a test made (report.figures, as the Results tab and the report use it) are closed after it: the tab
    and the report close theirs; a test that only inspects them would otherwise leave them to the next."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


@pytest.fixture
def frozen_before(monkeypatch):
    """frozen_before("speed_source"): gates frozen from now on are stored as a version that did not know these keys
    stored them (not in the snapshot's values; a gate file that sets one is the test's to avoid), so gate.LEGACY
    gives them their meaning of then."""
    import evalkit.study.gate as gates

    today = gates.gate_snapshot

    def frozen(*keys):
        def as_frozen_then(path=None):
            snap = today(path)
            for key in keys:
                snap["values"].pop(key)
            return snap

        monkeypatch.setattr(gates, "gate_snapshot", as_frozen_then)

    return frozen


@pytest.fixture
def make_config(tmp_path, tiny_models):
    """Write a config TOML pointing at the tiny models; keyword overrides as 'section.key'."""

    def make(draft: str = "draft", **overrides) -> Path:
        import tomllib  # noqa: F401  (the file must stay valid TOML)

        values = {
            "models.target": str(tiny_models["target"]),
            "models.draft": str(tiny_models[draft]),
            "models.device": "cpu",
            "decoding.mode": "greedy",
            "decoding.max_new_tokens": 24,
            "assistant.num_assistant_tokens": 4,
            "assistant.assistant_confidence_threshold": 0.0,
            "bench.reps": 2,
            "bench.rounds": 2,  # the protocol's minimum (the default, 4, doubles every benchmark's processes)
            "bench.warmup": 0,
            "bench.bootstrap": 200,
            "pool.samples": 2,
        }
        values.update({k.replace("__", "."): v for k, v in overrides.items()})
        top = {k: v for k, v in values.items() if "." not in k}
        sections: dict[str, dict] = {}
        for k, v in values.items():
            if "." in k:
                s, key = k.split(".", 1)
                sections.setdefault(s, {})[key] = v

        def lit(v):
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, str):
                return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            if isinstance(v, list):
                return "[" + ", ".join(lit(x) for x in v) + "]"
            return repr(v)

        lines = [f"{k} = {lit(v)}" for k, v in top.items()]
        for s, kv in sections.items():
            lines.append(f"[{s}]")
            lines += [f"{k} = {lit(v)}" for k, v in kv.items()]
        path = tmp_path / f"config-{len(list(tmp_path.glob('config-*.toml')))}.toml"
        path.write_text("\n".join(lines) + "\n")
        return path

    return make


@pytest.fixture
def rated_db(tmp_path):
    """The small rated study of tests/fixtures/ratings_small.json (4 pairs, 3 raters, a frozen gate), in a fresh
    database."""
    from evalkit.store import open_db
    from test_aggregate import load_fixture

    db = open_db(tmp_path / "rated.db")
    load_fixture(db, tmp_path / "gate.toml")
    return db
