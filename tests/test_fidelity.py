"""The rule-based pre-screen on labelled cases: each criterion both passing and failing, paraphrases."""

import json

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.task.criteria import screen
from evalkit.task.prompts import load_prompts

GOOD = "各位同事：内部资料库将于周三晚间进行维护。维护期间无法上传新文件，已有文件仍可正常阅读。恢复时间尚未确定，请留意后续通知。"

# (text, criterion, expected pass)
CASES = [
    # schedule
    (GOOD, "schedule", True),
    ("资料库星期三夜间维护，暂停上传，照常查阅，恢复时间待定。", "schedule", True),
    ("资料库周三晚上维护。", "schedule", True),
    ("The internal library will be under maintenance on Wednesday evening.", "schedule", True),
    ("资料库将于周四晚间维护。", "schedule", False),
    ("资料库将于周三上午维护。", "schedule", False),
    # 晚间8点 is still Wednesday evening (this case once expected a schedule failure); the added clock time
    # fails no_added_promises instead.
    ("资料库将于周三晚间8点开始维护。", "schedule", True),
    ("资料库将于周三凌晨2点开始维护。", "schedule", False),
    ("资料库近期将进行维护。", "schedule", False),
    # read_only_vs_upload
    (GOOD, "read_only_vs_upload", True),
    ("维护期间上传功能关闭，已有文件可以浏览。", "read_only_vs_upload", True),
    ("维护期间暂停上传新文件，现有文件照常查阅。", "read_only_vs_upload", True),
    ("During maintenance you cannot upload new files; existing files can still be read.", "read_only_vs_upload", True),
    ("维护期间无法阅读已有文件，但仍可上传新文件。", "read_only_vs_upload", False),  # inverted
    ("维护期间无法上传新文件。", "read_only_vs_upload", False),  # readable part missing
    ("已有文件仍可阅读。", "read_only_vs_upload", False),  # upload part missing
    ("维护期间不能上传新文件，也不能查看已有文件。", "read_only_vs_upload", False),
    # unknown_restore_time
    (GOOD, "unknown_restore_time", True),
    ("何时恢复还不确定，届时另行通知。", "unknown_restore_time", True),
    ("恢复时间尚无定论。", "unknown_restore_time", True),
    ("The restore time is not yet known.", "unknown_restore_time", True),
    ("预计周四上午恢复。", "unknown_restore_time", False),
    ("系统将在维护约两小时后恢复。", "unknown_restore_time", False),
    ("恢复时间尚未确定，预计次日恢复。", "unknown_restore_time", False),
    ("请大家耐心等待。", "unknown_restore_time", False),
    ("Service is expected to be back by 8 am.", "unknown_restore_time", False),
    # no_added_promises
    (GOOD, "no_added_promises", True),
    ("资料库星期三夜间维护，上传功能关闭，已有文件可以浏览，何时恢复还不确定。", "no_added_promises", True),
    ("我们保证维护不会影响大家的工作。", "no_added_promises", False),
    ("本次维护不会影响日常使用。", "no_added_promises", False),
    ("我们承诺尽快恢复。", "no_added_promises", False),
    ("维护将在12月3日进行。", "no_added_promises", False),
    ("维护预计持续3小时。", "no_added_promises", False),
    ("资料库将于周三晚间8点开始维护。", "no_added_promises", False),
    ("预计周四上午恢复。", "no_added_promises", False),
    ("We guarantee the library will be back soon.", "no_added_promises", False),
]


@pytest.mark.parametrize("text, criterion, expected", CASES)
def test_labelled_cases(text, criterion, expected):
    verdict = screen(text)[criterion]
    assert verdict.passed is expected, verdict.evidence
    assert verdict.evidence


def test_every_criterion_has_passing_and_failing_cases():
    for c in ("schedule", "read_only_vs_upload", "unknown_restore_time", "no_added_promises"):
        assert {exp for _, crit, exp in CASES if crit == c} == {True, False}


def test_cli_reads_stdin_and_prints_exactly_the_four_ids():
    r = CliRunner().invoke(cli, ["fidelity", "--prompt", "writing-01", "--json"], input=GOOD)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out) == {"schedule", "read_only_vs_upload", "unknown_restore_time", "no_added_promises"}
    assert all(v["pass"] is True and isinstance(v["evidence"], str) for v in out.values())
    bad = CliRunner().invoke(cli, ["fidelity", "--prompt", "writing-01", "--json"], input="预计周四上午恢复，我们保证不影响使用。")
    out = json.loads(bad.stdout)
    assert out["no_added_promises"]["pass"] is False and out["unknown_restore_time"]["pass"] is False


def test_unknown_prompt_is_a_clear_error():
    with pytest.raises(EvalkitError, match="unknown prompt id"):
        load_prompts(ids=["writing-99"])
    r = CliRunner().invoke(cli, ["fidelity", "--prompt", "writing-99"], input=GOOD)
    assert r.exit_code == 1 and "unknown prompt id" in r.output
