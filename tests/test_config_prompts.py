from pathlib import Path

import pytest

from evalkit.config import load_config
from evalkit.errors import EvalkitError
from evalkit.task.prompts import CRITERIA, load_prompt, load_prompts


def test_bundled_prompts_cover_the_shapes():
    prompts = load_prompts()
    ids = [p.id for p in prompts]
    assert ids[0] == "writing-01" and len(ids) >= 5
    assert {p.shape for p in prompts} >= {"notice", "summary", "rewrite", "email", "english"}
    anchor = prompts[0]
    assert anchor.material == "内部资料库将在周三晚间维护；维护期间不能上传新文件，已有文件仍可阅读；恢复时间尚未确定。"
    assert anchor.task == "写一则约 150 字的中文通知，依次说明维护安排、可用功能和未知事项。不得补充具体日期、恢复时刻或服务承诺。"
    for p in prompts:
        assert tuple(p.criteria) == CRITERIA
        assert all(p.criteria[c]["zh"] and p.criteria[c]["en"] for c in CRITERIA)
        assert p.max_new_tokens > 0


def _write(tmp_path, text) -> Path:
    f = tmp_path / "bad.toml"
    f.write_text(text, encoding="utf-8")
    return f


GOOD = Path(__file__).parent.parent / "prompts" / "writing-01.toml"


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda s: s.replace('id = "writing-01"\n', ""), "missing field 'id'"),
        (lambda s: s.replace("max_new_tokens = 200", 'max_new_tokens = "200"'), "field 'max_new_tokens' should be int"),
        (lambda s: s.replace("max_new_tokens = 200", "max_new_tokens = 0"), "'max_new_tokens' must be > 0"),
        (lambda s: "colour = 1\n" + s, "unknown field(s) colour"),
        (lambda s: s.replace("[criteria.no_added_promises]\n", "[criteria.no_added_promises]\nfr = 'x'\n"),
         "'criteria.no_added_promises' needs exactly two"),
        (lambda s: s.replace("[criteria.schedule]", "[criteria.when]"), "missing schedule"),
        (lambda s: s.replace('material = "', 'material = ', 1), "not valid TOML"),
    ],
)
def test_malformed_prompt_names_file_and_field(tmp_path, mutate, needle):
    bad = _write(tmp_path, mutate(GOOD.read_text(encoding="utf-8")))
    with pytest.raises(EvalkitError) as e:
        load_prompt(bad)
    assert needle in str(e.value)
    assert str(bad) in str(e.value)


def test_unknown_prompt_id_lists_known_ids():
    with pytest.raises(EvalkitError, match="(?s)unknown prompt id.*nope.*known ids: writing-01"):
        load_prompts(ids=["nope"])


def test_default_config_is_demo_pair_with_sampling():
    cfg = load_config()
    assert cfg.models.target == "demo:target" and cfg.models.draft == "demo:draft"
    assert cfg.decoding.mode == "sample" and cfg.decoding.temperature == 0.7
    assert cfg.assisted_enabled


def test_unknown_config_key_is_rejected_with_the_valid_keys(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[decoding]\nmode = "greedy"\ntemprature = 0.5\n')
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    msg = str(e.value)
    assert "unknown config key(s) decoding.temprature" in msg and "temperature" in msg and str(f) in msg


@pytest.mark.parametrize(
    "text, needle",
    [
        ('generation_path = "fast"', "generation_path = 'fast' is not one of assisted, ordinary"),
        ("[decoding]\ntemperature = 0", "decoding.temperature must be > 0"),
        ('[bench]\nreps = "five"', "bench.reps = 'five' should be int"),
        ("[models]\nload_draft = false", "unknown config key(s) models.load_draft"),
        ("load_draft = 1", "load_draft = 1 should be bool"),
        ("[app]\nport = 70000", "app.port must be in [0, 65535]"),  # was Gradio's OverflowError at launch
    ],
)
def test_bad_config_values(tmp_path, text, needle):
    f = tmp_path / "c.toml"
    f.write_text(text + "\n")
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert needle in str(e.value)


def test_switches_turn_the_experiment_off(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('generation_path = "ordinary"\n')
    assert not load_config(f).assisted_enabled
    f.write_text("load_draft = false\n")
    assert not load_config(f).assisted_enabled


def test_every_config_field_has_a_comment():
    """The config module documents each field: a comment line directly above it."""
    import dataclasses

    from evalkit import config as mod

    import inspect

    for cls in (mod.ModelsConfig, mod.DecodingConfig, mod.AssistantConfig, mod.BenchConfig, mod.PoolConfig, mod.AppConfig, mod.Config):
        # each class's own source: a field name used in two sections (bench.prompts, pool.prompts) is checked in both
        src = inspect.getsource(cls).splitlines()
        for f in dataclasses.fields(cls):
            if f.metadata.get("internal") or dataclasses.is_dataclass(f.type) or f.name in ("models", "decoding", "assistant", "bench", "pool", "app"):
                continue
            idx = next(i for i, line in enumerate(src) if line.strip().startswith(f"{f.name}:"))
            assert src[idx - 1].strip().startswith("#"), f"{cls.__name__}.{f.name} has no comment"


def test_every_shipped_config_is_valid():
    configs = sorted((Path(__file__).parent.parent / "configs").glob("*.toml"))
    names = {c.name for c in configs}
    assert {"demo.toml", "qwen2.5-1.5b-0.5b.toml", "smollm2-1.7b-360m.toml"} <= names
    for c in configs:
        if c.name == "gate.toml":
            from evalkit.study.gate import read_gate_file

            read_gate_file(c)
        else:
            load_config(c)
