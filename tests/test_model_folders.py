"""Model folders a user may bring by mistake, and config values that would do nothing or fail later (the audit of
bringing your own pair): each is refused with one error that names the config key, the folder or file and the fix,
before any model loads and before any database file is made. The folders are copies of tests/tiny.py's models."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.config import from_dict, load_config
from evalkit.errors import EvalkitError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def copy(tiny_models, tmp_path, name: str, as_name: str | None = None) -> Path:
    return Path(shutil.copytree(tiny_models[name], tmp_path / (as_name or name)))


def config(tmp_path, target, draft, extra: str = "") -> Path:
    path = tmp_path / "pair.toml"
    path.write_text(f'{extra}\n[models]\ntarget = "{target}"\ndraft = "{draft}"\ndevice = "cpu"\n', encoding="utf-8")
    return path


def cli_run(args) -> object:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)  # no raw traceback
    return r


def cut(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


# --- F2, F9: a damaged or missing weights file -----------------------------------------------------------------

@pytest.mark.parametrize("command", [["check"], ["run", "--prompt", "writing-01"], ["generate", "--samples", "1"],
                                     ["tune", "--tokens", "4", "--schedules", "constant", "--thresholds", "0",
                                      "--reps", "1"]])
def test_a_weights_file_cut_short_is_one_error_naming_the_key_folder_and_file(tiny_models, tmp_path, data_dir,
                                                                              command):
    draft = copy(tiny_models, tmp_path, "draft")
    cut(draft / "model.safetensors", 1000)  # the header alone is longer: from_pretrained raised SafetensorError
    db = tmp_path / "e.db"
    r = cli_run([*command, "--config", config(tmp_path, tiny_models["target"], draft),
                 *([] if command == ["check"] else ["--db", db])])
    assert r.exit_code == 1, r.output  # check approved it (it hashed the files); the others printed a traceback
    assert f"models.draft folder {draft}: its weights file model.safetensors cannot be read" in r.output
    assert "damaged or incomplete" in r.output and "download or save the checkpoint again" in r.output
    assert not db.exists() and not data_dir.exists()  # refused before any database file is made


def test_a_target_cut_short_in_its_tensors_or_missing_a_shard_is_refused_by_check(tiny_models, tmp_path):
    target = copy(tiny_models, tmp_path, "target")
    weights = target / "model.safetensors"
    cut(weights, weights.stat().st_size // 2)  # the header is whole: only its tensors' byte ranges show the cut
    r = cli_run(["check", "--config", config(tmp_path, target, tiny_models["draft"], 'generation_path = "ordinary"')])
    assert r.exit_code == 1, r.output
    assert f"models.target folder {target}: its weights file model.safetensors cannot be read: cut short" in r.output
    shutil.copy(tiny_models["target"] / "model.safetensors", weights)
    (target / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    r = cli_run(["check", "--config", tmp_path / "pair.toml"])
    assert r.exit_code == 1, r.output
    lacks = "model.safetensors.index.json names 1 shard(s) the folder lacks: model-00002-of-00002.safetensors"
    assert lacks in r.output


def test_load_model_says_a_damaged_checkpoint_is_one_to_download_again(tiny_models, tmp_path):
    """Whatever check_weights does not read of a file, from_pretrained's SafetensorError is said as the fix."""
    from evalkit.generation.models import load_model

    draft = copy(tiny_models, tmp_path, "draft")
    cut(draft / "model.safetensors", 1000)
    cfg = from_dict({"models": {"target": str(tiny_models["target"]), "draft": str(draft), "device": "cpu"}})
    with pytest.raises(EvalkitError) as e:
        load_model(str(draft), cfg, "draft", "cpu")
    assert f"models.draft = '{draft}': its weights cannot be read" in e.value.what
    assert "damaged or incomplete" in e.value.what and "download or save the checkpoint again" in e.value.fix


def test_a_draft_folder_without_weights_says_so_instead_of_download_the_models(tiny_models, tmp_path):
    draft = copy(tiny_models, tmp_path, "draft")
    (draft / "model.safetensors").unlink()
    r = cli_run(["check", "--config", config(tmp_path, tiny_models["target"], draft)])
    assert r.exit_code == 1, r.output  # was 2, "unknown: draft.weights_digest (download the models ...)"
    assert f"models.draft folder {draft} has no weights file (looked for *.safetensors, *.bin" in r.output
    assert "copy the weights from the model's release" in r.output and "download the models" not in r.output


def test_a_hub_id_in_the_cache_is_approved_and_its_damaged_weights_are_named(tiny_models, tmp_path, monkeypatch):
    """The draft as `hf download` leaves it in the cache (models--ORG--NAME/snapshots/REV, refs/main): the weights
    and vocabulary checks read the snapshot folder; a damaged file there is to be downloaded again."""
    from huggingface_hub import constants

    revision = "0" * 40
    repo = tmp_path / "hub" / "models--local--tiny-draft"
    snapshot = Path(shutil.copytree(tiny_models["draft"], repo / "snapshots" / revision))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # never the network, whatever the environment says
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = config(tmp_path, tiny_models["target"], "local/tiny-draft")
    r = cli_run(["check", "--config", path])
    assert r.exit_code == 0 and "same_tokenizer" in r.output, r.output
    cut(snapshot / "model.safetensors", 1000)
    r = cli_run(["check", "--config", path])
    assert r.exit_code == 1, r.output
    assert f"models.draft folder {snapshot}: its weights file model.safetensors cannot be read" in r.output
    assert "hf download local/tiny-draft --force-download" in r.output
    # a snapshot missing a shard its index names: from_pretrained fetches it when it may reach the Hub
    from evalkit.generation import models

    shutil.copy(tiny_models["draft"] / "model.safetensors", snapshot / "model.safetensors")
    (snapshot / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    with pytest.raises(EvalkitError, match="model-00002-of-00002.safetensors"):
        models.check_weights("local/tiny-draft", "models.draft")
    monkeypatch.setattr(models, "_offline", lambda: False)
    models.check_weights("local/tiny-draft", "models.draft")


# --- F4: a folder without tokenizer files ------------------------------------------------------------------------

def test_a_draft_folder_without_tokenizer_files_is_named_with_the_fix_not_called_another_family(tiny_models, tmp_path):
    draft = copy(tiny_models, tmp_path, "draft")
    for name in TOKENIZER_FILES:
        (draft / name).unlink(missing_ok=True)
    path = config(tmp_path, tiny_models["target"], draft)
    r = cli_run(["check", "--config", path])
    assert r.exit_code == 1, r.output
    assert f"models.draft folder {draft} has no tokenizer files (tokenizer.json, or tokenizer_config.json" in r.output
    assert "copy the tokenizer files from the model's release" in r.output and "models.draft_tokenizer" in r.output
    assert "family" not in r.output.split("fix:")[0]
    # the fix it names works: the draft shares the target's tokenizer
    path.write_text(path.read_text() + f'draft_tokenizer = "{tiny_models["target"]}"\n')
    r = cli_run(["check", "--config", path])
    assert r.exit_code == 0 and "same_tokenizer" in r.output, r.output


def test_tokenizer_files_without_a_vocabulary_are_refused_not_loaded_as_one_token(tiny_models, tmp_path):
    """tokenizer_config.json alone (its vocabulary files missing): Transformers builds the class it names with an
    empty vocabulary, one special token; a tokenizer folder set by models.draft_tokenizer is named by that key."""
    empty = copy(tiny_models, tmp_path, "draft", "empty_tokenizer")
    for name in TOKENIZER_FILES:
        (empty / name).unlink(missing_ok=True)
    (empty / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "Qwen2Tokenizer"}))
    path = config(tmp_path, tiny_models["target"], tiny_models["draft"])
    path.write_text(path.read_text() + f'draft_tokenizer = "{empty}"\n')
    r = cli_run(["check", "--config", path])
    assert r.exit_code == 1, r.output
    assert (f"models.draft_tokenizer folder {empty} holds tokenizer files (tokenizer_config.json) but no vocabulary"
            in r.output) and "all special" in r.output and "point models.draft_tokenizer at a folder" in r.output


def test_an_ordinary_run_on_a_target_without_tokenizer_files_names_them_instead_of_a_reshape_error(tiny_models,
                                                                                                  tmp_path):
    target = copy(tiny_models, tmp_path, "target")
    for name in TOKENIZER_FILES:
        (target / name).unlink(missing_ok=True)
    path = config(tmp_path, target, tiny_models["draft"], 'generation_path = "ordinary"')
    r = cli_run(["run", "--config", path, "--db", tmp_path / "e.db", "--path", "ordinary"])
    assert r.exit_code == 1, r.output
    assert f"models.target folder {target} has no tokenizer files" in r.output and "models.target_tokenizer" in r.output
    assert "reshape" not in r.output and not (tmp_path / "e.db").exists()


# --- F8: bench.batch_sizes that measure no batch -------------------------------------------------------------------

def test_bench_batch_sizes_in_the_config_that_hold_no_batch_are_refused_as_the_option_is(tiny_models, tmp_path,
                                                                                        data_dir):
    path = config(tmp_path, tiny_models["target"], tiny_models["draft"], "")
    path.write_text(path.read_text() + "[bench]\nbatch_sizes = [1]\n")
    with pytest.raises(EvalkitError) as e:
        load_config(path)
    assert f"{path}: bench.batch_sizes = [1] measures no batch" in e.value.what  # was accepted: a bench of no batch
    assert "bench.batch_sizes" in e.value.fix
    for command in (["check"], ["bench", "--db", tmp_path / "e.db", "--reps", "1"]):
        r = cli_run([*command, "--config", path])
        assert r.exit_code == 1 and "bench.batch_sizes = [1] measures no batch" in r.output, r.output
    assert not (tmp_path / "e.db").exists() and not data_dir.exists()
    path.write_text(path.read_text().replace("[1]", "[1, 4]"))
    assert load_config(path).bench.batch_sizes == [1, 4]
    # a config stored with an experiment that ran before the check still loads
    assert from_dict({"bench": {"batch_sizes": [1]}}).bench.batch_sizes == [1]


# --- F9: a file given as the folder, an unknown prompt id in the config -----------------------------------------

def test_a_config_json_given_as_the_model_is_called_a_file(tiny_models, tmp_path):
    target = tiny_models["target"]
    r = cli_run(["check", "--config", config(tmp_path, target / "config.json", tiny_models["draft"])])
    assert r.exit_code == 1, r.output
    assert f"models.target = '{target / 'config.json'}' is a file, but models.target takes a model's folder" in r.output
    assert f"set models.target = '{target}'" in r.output and "has no config.json" not in r.output


@pytest.mark.parametrize("key", ["bench.prompts", "pool.prompts"])
def test_an_unknown_prompt_id_in_the_config_names_the_key_and_file_when_the_config_is_read(tiny_models, tmp_path,
                                                                                          key):
    path = config(tmp_path, tiny_models["target"], tiny_models["draft"])
    section, name = key.split(".")
    path.write_text(path.read_text() + f'[{section}]\n{name} = ["writing-01", "writing-99"]\n')
    with pytest.raises(EvalkitError) as e:
        load_config(path)
    assert e.value.what == f"{path}: {key} names unknown prompt id(s): writing-99"
    assert "known ids: writing-01" in e.value.fix and f"change {key}" in e.value.fix
    r = cli_run(["check", "--config", path])  # check approved the config before
    assert r.exit_code == 1 and f"{key} names unknown prompt id(s): writing-99" in r.output, r.output
