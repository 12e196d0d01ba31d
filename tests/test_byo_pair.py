"""README "Bring your own pair", run as written: the chat stand-in pair laid out as the section says, its config
and its commands read from the README, each run in a shell from the repository folder; then a rater rates a pair
in the app those commands started, through gradio_client. Plus the usual mistakes and their messages."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalkit.ui.server import free_port

from familyfixtures import families, family_config  # noqa: F401
from gradio_client import Client

from evalkit.task.prompts import CRITERIA
from evalkit.store import open_db
from evalkit.study.pairs import IDENTICAL
from evalkit.rating.queue import open_copies
from evalkit.ui.rate import FORM_KEYS

# every test runs the CLI (or the app) in a subprocess, on model families built here
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Bring your own pair"


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:end if end > 0 else None]


def code_block(section: str, lang: str) -> str:
    (block,) = re.findall(rf"```{lang}\n(.*?)```", section, re.S)
    return block


def readme_commands() -> list[str]:
    return [ln.strip() for ln in code_block(readme_section(), "bash").splitlines() if ln.strip() and not ln.startswith("#")]


def shell_env(home: Path, data: Path) -> dict:
    env = dict(os.environ, HOME=str(home), EVALKIT_DATA_DIR=str(data), HF_HUB_OFFLINE="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               PYTHONUNBUFFERED="1")
    env.pop("EVALKIT_DB", None)
    env.pop("EVALKIT_CONFIG", None)
    return env


def run(command: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


class Tab:
    """One browser tab through gradio_client: outputs named by their labels."""

    def __init__(self, url: str):
        self.client = Client(url, verbose=False, httpx_kwargs={"timeout": 120})
        info = self.client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        self.labels = {name: [r["label"] for r in ep["returns"]] for name, ep in info.items()}

    def call(self, api: str, *args) -> dict:
        out = self.client.predict(*args, api_name=api)
        out = out if isinstance(out, (list, tuple)) else [out]
        unwrap = [v.get("value") if isinstance(v, dict) and v.get("__type__") == "update" else v for v in out]
        return dict(zip(self.labels[api], unwrap, strict=True))


def rate_one_pair(url: str, db_file: Path, code: str) -> None:
    """The rater journey: sign in with the personal code, see a pair, answer every criterion, submit, and read the
    reveal: it waits for the pair to close when the pair wants more ratings (its quota from the gate: a gold pair or
    a pair drawn for a second rating), and names the paths when this rating closed it."""
    tab = Tab(url)
    screen = tab.call("/sign_in", "", "", code)
    screen["Output A"], screen["Output B"] = screen["输出 A"], screen["输出 B"]  # labels follow the language
    assert screen["Output A"] and screen["Output B"] and screen["reveal"] == ""
    form = {f"a_{c}": "pass" for c in CRITERIA} | {f"b_{c}": "fail" for c in CRITERIA}
    done = tab.call("/submit", *[(form | {"preference": "A", "comment": "chat pair"})[k] for k in FORM_KEYS])
    db = open_db(db_file, migrate_schema=False)
    (rating,) = db.query("SELECT * FROM ratings")
    pair = db["pairs"].get(rating["pair_id"])
    assert rating["rater"] == "ann" and rating["preference"] == "A"
    # an open pair holding one of its texts (the stand-in pair's sampled texts repeat): its reveal would tell that
    # pair's sides too, so it waits for them as well (queue.open_copies)
    copies = open_copies(db, [pair["id"]]).get(pair["id"], 0)
    if (pair["wanted_ratings"] or 3) > 1 or copies:  # still open to another rater: nothing about its sides yet
        assert "待揭晓" in done["reveal"] and "检验题" not in done["reveal"]
        assert "ordinary" not in done["reveal"] and "assisted" not in done["reveal"]
        if copies and (pair["wanted_ratings"] or 3) == 1:  # closed by this rating, and still pending: it says why
            assert f"还有 {copies} 对含有相同的文本" in done["reveal"]
    else:  # closed by this rating: the reveal names each side's path
        assert "待揭晓" not in done["reveal"] and "ordinary" in done["reveal"] and "assisted" in done["reveal"]
    if pair["kind"] == "gold":  # the pool mixes in a check pair (pool.gold_rate)
        a, b = db["reference_outputs"].get(pair["a_reference_id"]), db["reference_outputs"].get(pair["b_reference_id"])
    else:
        a, b = db["generations"].get(pair["a_generation_id"]), db["generations"].get(pair["b_generation_id"])
    assert (a["text"], b["text"]) == (screen["Output A"], screen["Output B"])  # the pair on screen was rated
    db.conn.close()


def test_readme_bring_your_own_pair_commands_run_on_the_chat_pair(families, tmp_path):
    home, data = tmp_path / "home", tmp_path / "data"
    pair_dir = home / "my-pair"
    pair_dir.mkdir(parents=True)
    (pair_dir / "target").symlink_to(families["chat_target"], target_is_directory=True)
    (pair_dir / "draft").symlink_to(families["chat_draft"], target_is_directory=True)
    (pair_dir / "pair.toml").write_text(code_block(readme_section(), "toml"), encoding="utf-8")
    env = shell_env(home, data)
    commands = readme_commands()
    assert [c.split()[:2] for c in commands] == [
        ["evalkit", "check"], ["evalkit", "bench"], ["evalkit", "tune"], ["evalkit", "generate"], ["evalkit", "raters"],
        ["python", "app.py"]]
    *cli_commands, app_command = commands
    outputs = []
    for command in cli_commands:
        r = run(command, env)
        assert r.returncode == 0, f"{command}\n{r.stdout}\n{r.stderr}"
        outputs.append(r.stdout)
    check, greedy, tune, generate, invited = outputs
    code = re.search(r"personal code (\S+)", invited).group(1)
    assert "verdict: same_tokenizer" in check and "generate() will run Transformers' AssistedCandidateGenerator" in check
    assert "identical outputs: 100%" in greedy and "decoding=greedy" in greedy
    assert "best: num_assistant_tokens =" in tune and "Transformers default" in tune
    assert re.search(r"experiment \d+: 10 pairs over 5 prompts \(0 fell back\)", generate)
    db = open_db(data / "evalkit.db")
    formats = {r[0] for r in db.execute("SELECT DISTINCT json_extract(effective_config, '$.prompt_format') FROM generations")}
    assert formats == {"chat"}
    # greedy bench on the chat pair: every run, on both paths, ended on the end-of-turn token
    assert {r[0] for r in db.execute("SELECT DISTINCT stop_reason FROM timing_runs")} == {"eos"}
    db.conn.close()

    # the app, started by the README's command; GRADIO_SERVER_PORT only picks the free port `port = 0` searches from
    port = free_port()
    app = subprocess.Popen(["bash", "-c", f"exec {app_command}"], cwd=ROOT, env=env | {"GRADIO_SERVER_PORT": str(port)},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = _wait_for_url(app)
        db = open_db(data / "evalkit.db", migrate_schema=False)
        differing = db.execute(f"SELECT COUNT(*) FROM pairs p WHERE NOT {IDENTICAL.format(p='p.')}").fetchone()[0]
        gold = db.execute("SELECT COUNT(*) FROM pairs WHERE kind = 'gold'").fetchone()[0]
        db.conn.close()
        if differing:
            rate_one_pair(url, data / "evalkit.db", code)
        else:
            # the stand-in pair is near-deterministic: even sampled, its two paths write the same tokens, so every pair
            # is decided without raters, no gold pair is made for them, and the rater reads why there is nothing to rate
            assert gold == 0
            screen = Tab(url).call("/sign_in", "", "", code)
            assert not screen["输出 A"] and "每一对输出都完全相同" in screen["done"]
    finally:
        app.terminate()
        app.wait(timeout=30)



def _wait_for_url(proc, timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    for line in proc.stdout:
        seen.append(line)
        m = re.search(r"http://127\.0\.0\.1:\d+/?", line)
        if m:
            return m.group(0)
        if time.monotonic() > deadline:
            break
    raise AssertionError("the app printed no URL:\n" + "".join(seen[-40:]))


# ---------------------------------------------------------------- the usual mistakes


def evalkit_check(config: Path, env: dict) -> subprocess.CompletedProcess:
    return run(f"evalkit check --config {config}", env)


def test_a_folder_that_does_not_exist(tmp_path):
    (tmp_path / "pair.toml").write_text('[models]\ntarget = "./target"\ndraft = "./draft"\n')
    r = evalkit_check(tmp_path / "pair.toml", shell_env(tmp_path, tmp_path / "data"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"model folder {tmp_path / 'target'} does not exist (models.target)" in r.stderr
    assert "fix:" in r.stderr and "read from the file's folder" in r.stderr
    assert not (tmp_path / "data").exists()


def test_a_hub_id_with_no_local_copy_and_no_network(tmp_path):
    (tmp_path / "pair.toml").write_text(
        '[models]\ntarget = "Qwen/Qwen2.5-1.5B-Instruct"\ndraft = "Qwen/Qwen2.5-0.5B-Instruct"\n')
    env = shell_env(tmp_path, tmp_path / "data") | {"HF_HOME": str(tmp_path / "hf")}  # an empty Hub cache
    r = evalkit_check(tmp_path / "pair.toml", env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert ("models.target = 'Qwen/Qwen2.5-1.5B-Instruct' is neither a local folder nor a model in the Hugging Face "
            "cache, and HF_HUB_OFFLINE=1 forbids downloading it") in r.stderr
    assert "fix: download it where there is network (`hf download Qwen/Qwen2.5-1.5B-Instruct`" in r.stderr


def test_a_draft_whose_chat_template_differs(families, tmp_path):
    env = shell_env(tmp_path, tmp_path / "data")
    r = evalkit_check(family_config(tmp_path / "t.toml", families, draft="template_draft"), env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "the draft's chat template differs from the target's" in r.stderr and str(families["template_draft"]) in r.stderr
    assert "models.draft_tokenizer to the target's folder" in r.stderr
    # the fix it names works: the draft framed by the target's tokenizer files
    fixed = family_config(tmp_path / "f.toml", families, draft="template_draft",
                          models={"draft_tokenizer": str(families["chat_target"])})
    r = evalkit_check(fixed, env)
    assert r.returncode == 0 and "verdict: same_tokenizer" in r.stdout
