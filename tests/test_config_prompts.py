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
        ("[app]\nport = 70000", "app.port must be in [0, 65535] (0 = Gradio's default: 7860 or the next free port) "
                                "(got 70000)"),  # was Gradio's OverflowError at launch; the value is shown
        ("[decoding]\ntemperature = 0", "decoding.temperature must be > 0 (got 0.0)"),
        ("[bench]\nbatch_sizes = [2, 0]", "bench.batch_sizes must be a list of batch sizes, each >= 1 (got [2, 0])"),
        ("[bench]\nrounds = 1", "bench.rounds must be even and >= 2 (the protocol's ABBA"),
        ("[bench]\nrounds = 3", "an odd count puts one path first once more than the other"),
        ("[decoding]\nseed = -3", "decoding.seed must be >= 0, and seed + pool.samples at most 2147483648 (live runs "
                                  "use the seeds above) (got -3)"),
    ],
)
def test_bad_config_values(tmp_path, text, needle):
    f = tmp_path / "c.toml"
    f.write_text(text + "\n")
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert needle in str(e.value)


def test_a_config_that_sets_a_key_or_section_twice_names_it_and_both_lines(tmp_path):
    """A line pasted below one that sets the same key (a tuned num_assistant_tokens, a second [decoding] for a new
    setting) gave "is not valid TOML: Cannot overwrite a value (at line 9, column 24)" and "fix the syntax at the
    position given": no key named, and nothing is wrong with the syntax of either line. Now the key (or section)
    and both lines are named, with the fix; other syntax errors keep TOML's position."""
    f = tmp_path / "c.toml"
    f.write_text('[decoding]\nmode = "sample"\n\n[assistant]\nnum_assistant_tokens = 4\n'
                 "# tuned\nnum_assistant_tokens = 8\n")
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert f"config file {f} sets assistant.num_assistant_tokens twice (lines 5 and 7)" in e.value.what, e.value.what
    assert e.value.fix == "keep one line for each key: delete the one you do not mean"
    f.write_text('[decoding]\nmode = "sample"\n[ pool ]  # the pool\nsamples = 2\n[decoding]\nseed = 3\n')
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert e.value.what == f"config file {f} sets [decoding] twice (lines 1 and 5)", e.value.what
    assert e.value.fix == "merge the two [decoding] sections into one"
    f.write_text('mode = "sample"\n[decoding]\nmode = "greedy"\nmode = = 1\n')  # same name, other table: not twice
    with pytest.raises(EvalkitError, match="is not valid TOML: .*line 4"):
        load_config(f)


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


@pytest.mark.parametrize("key, value", [
    ("decoding.temperature", "nan"), ("decoding.top_p", "nan"), ("app.min_seconds_on_task", "inf"),
    ("bench.length_tolerance", "inf"), ("pool.gold_rate", "-inf"), ("assistant.assistant_confidence_threshold", "nan"),
])
def test_non_finite_config_numbers_are_refused_by_key(tmp_path, key, value):
    """TOML allows nan and inf; no float key of the config means either (nan passes every range test)."""
    section, name = key.split(".")
    f = tmp_path / "c.toml"
    f.write_text(f"[{section}]\n{name} = {value}\n")
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert f"{f}: {key} = {value} should be a finite number" in str(e.value) and key in e.value.fix


def test_a_config_file_that_is_not_utf8_text_or_is_a_folder_is_named(tmp_path, monkeypatch):
    f = tmp_path / "latin1.toml"
    f.write_bytes('[decoding]\nstop_strings = ["Ende für heute"]\n'.encode("latin-1"))
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert f"config file {f} is not UTF-8 text" in str(e.value) and "save it as UTF-8" in e.value.fix
    folder = tmp_path / "configs"
    folder.mkdir()
    with pytest.raises(EvalkitError) as e:
        load_config(folder)
    assert f"config file {folder} is a folder, not a file" in str(e.value) and "--config" in e.value.fix
    # the same path named by EVALKIT_CONFIG: the fix is about the variable, not an option the user did not give
    monkeypatch.setenv("EVALKIT_CONFIG", str(folder))
    with pytest.raises(EvalkitError) as e:
        load_config()
    assert f"config file {folder} is a folder" in str(e.value) and "EVALKIT_CONFIG" in e.value.fix
    assert "--config" not in e.value.fix


def test_a_missing_config_named_by_evalkit_config_says_so(tmp_path, monkeypatch):
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("EVALKIT_CONFIG", str(missing))
    with pytest.raises(EvalkitError) as e:
        load_config()
    assert f"config file {missing} does not exist" in str(e.value)
    assert f"set EVALKIT_CONFIG (now {str(missing)!r}) to an existing TOML file" in e.value.fix
    with pytest.raises(EvalkitError) as e:
        load_config(missing)  # named with --config: the option's fix
    assert e.value.fix == "pass --config an existing TOML file"


@pytest.mark.parametrize("key, value", [
    ("device", "gpu"), ("device", ""), ("device", "cuda:01"), ("device", "CUDA"), ("device", "cuda:-1"),
    ("draft_device", "gpu"), ("draft_device", "auto"),
])
def test_device_keys_take_only_devices_evalkit_supports(tmp_path, key, value):
    """models.device = "gpu" used to pass the config and `evalkit check`, then crash `evalkit run` in torch."""
    f = tmp_path / "c.toml"
    f.write_text(f'[models]\n{key} = "{value}"\n')
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert f"models.{key} must be one of " in str(e.value) and '"cuda:N"' in str(e.value) and f"(got {value!r})" in str(e.value)
    assert f"models.{key}" in e.value.fix
    for key, good in [("device", "auto"), ("device", "cpu"), ("device", "mps"), ("device", "cuda"),
                      ("device", "cuda:1"), ("draft_device", ""), ("draft_device", "cuda:0")]:
        f.write_text(f'[models]\n{key} = "{good}"\n')
        assert getattr(load_config(f).models, key) == good


def test_pick_device_refuses_what_torch_cannot_place_a_model_on():
    import torch  # noqa: F401  (installed with the project: a missing one must fail, not skip)
    from evalkit.generation.models import pick_device

    with pytest.raises(EvalkitError, match=r"models.device = 'gpu' is not a device evalkit supports"):
        pick_device("gpu")
    with pytest.raises(EvalkitError, match=r"models.draft_device = 'auto' is not a device evalkit supports"):
        pick_device("auto", "models.draft_device")
    assert pick_device("cpu") == "cpu"


@pytest.mark.parametrize("entry, problem", [
    ("0=abc", "whose size is a number with a unit"),
    ("0=20", "whose size is a number with a unit"),  # accelerate reads a bare string number as no size at all
    ("cpu=-1GB", "whose size is a number with a unit"),
    ("cpu=nanGB", "whose size is a number with a unit"),
    ("cpu=infGiB", "whose size is a number with a unit"),
    ("0=20TB", "whose size is a number with a unit"),
    ("cuda:0=20GiB", "whose device is a GPU index (0, 1, ...)"),
    ("gpu=20GiB", "whose device is a GPU index (0, 1, ...)"),
])
def test_max_memory_sizes_and_devices_are_checked_by_entry(tmp_path, entry, problem):
    """A bad size used to pass the config and then be blamed on models.target when accelerate refused it."""
    f = tmp_path / "c.toml"
    f.write_text(f'[models]\ndevice_map = "auto"\nmax_memory = ["1=10GiB", "{entry}"]\n')
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert f"models.max_memory must be a list of \"device=size\" entries {problem}" in str(e.value)
    assert f"(got an entry {entry!r})" in str(e.value) and "models.target" not in str(e.value)


def test_max_memory_accepts_the_sizes_accelerate_reads():
    from evalkit.config import from_dict, memory_size

    sizes = ["20GiB", "500MB", "1.5GB", "512MiB", "64KiB", "1KB", "20gb", "0.5gib", " 20 GiB", "1e3MB", "0GB"]
    cfg = from_dict({"models": {"device_map": "auto", "max_memory": [f"{i}={s}" for i, s in enumerate(sizes)] + ["cpu=60GiB", "disk=1GB"]}})
    assert len(cfg.models.max_memory) == len(sizes) + 2
    assert memory_size("20GiB") == 20 * 2**30 and memory_size("1.5GB") == 1_500_000_000 and memory_size("20gb") == 2_500_000_000
    from accelerate.utils.modeling import convert_file_size_to_int as convert
    for s in sizes:
        assert memory_size(s) == convert(s), s
    for s in ["20", "abc", "-1GB", "nanGB", "20TB"]:
        assert memory_size(s) is None
        with pytest.raises(ValueError):
            convert(s)


def test_stop_strings_are_refused_while_the_assisted_path_is_on(tmp_path):
    """Audit, 2026-12-02: any decoding.stop_strings made every assisted run fail (Transformers hands them to the
    draft's generate() without a tokenizer) and fall back, with nothing said before the run."""
    f = tmp_path / "c.toml"
    f.write_text('[decoding]\nstop_strings = ["恢复"]\n')
    with pytest.raises(EvalkitError) as e:
        load_config(f)
    assert "decoding.stop_strings = ['恢复'] cannot be used with the assisted path" in str(e.value)
    assert "remove decoding.stop_strings" in e.value.fix
    f.write_text('generation_path = "ordinary"\n[decoding]\nstop_strings = ["恢复"]\n')
    assert load_config(f).decoding.stop_strings == ["恢复"]  # the ordinary path alone may stop on them
