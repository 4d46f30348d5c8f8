"""`ddpify check --output-format github|sarif` (what CI systems read) and `--fix --diff` (the fixes
shown, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddpify.check import CODES
from ddpify.check.formats import escape_data, escape_property, github
from ddpify.cli import main

BAD = "import torch.distributed as dist\nimport torch\nimport os\n" \
      'torch.cuda.set_device(int(os.environ["RANK"]))\ndist.init_process_group("gloo")\nstate = torch.load("x.pt")\n'
DDP001 = ('`int(os.environ["RANK"])` is the global rank, used as a GPU index: on every node but the first it names '
          'a GPU that does not exist; use the local rank (LOCAL_RANK)')
DDP014 = ("torch.load without map_location: every rank puts this checkpoint's GPU tensors on GPU 0; pass "
          'map_location ("cpu" or this process\'s device)')


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)


def cli(*args: str, code: int, input: str | None = None):
    result = CliRunner().invoke(main, ["check", *args], input=input)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def test_github_annotations_are_written_exactly():
    Path("bad.py").write_text(BAD)
    result = cli("--output-format", "github", "bad.py", code=1)
    assert result.stdout == (f"::error file=bad.py,line=4,col=23,title=DDP001::{DDP001}\n"
                             f"::error file=bad.py,line=6,col=9,title=DDP014::{DDP014}\n")
    assert result.stderr == "2 problem(s) in 1 of 1 file(s) (1 fixable with --fix)\n"


def test_github_escapes_as_the_actions_toolkit_does():
    """Property values escape `%`, CR, LF, `:` and `,`; the message only `%`, CR and LF."""
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    assert github("dir,1/x:y.py", 3, 5, "DDP004", "100%: hang\n", True) == \
        "::error file=dir%2C1/x%3Ay.py,line=3,col=5,title=DDP004::100%25: hang%0A"


def test_github_marks_advice_as_warnings():
    Path("adv.py").write_text('import torch.distributed as dist\ndist.init_process_group("gloo")\n')
    result = cli("--output-format", "github", "--select", "DDP011", "adv.py", code=1)
    assert result.stdout.startswith("::warning file=adv.py,line=2,col=1,title=DDP011::")


def test_sarif_is_a_minimal_valid_2_1_0_log():
    Path("src dir").mkdir()
    Path("src dir/bad.py").write_text(BAD)
    log = json.loads(cli("--output-format", "sarif", "src dir", code=1).stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ddpify"
    assert [r["id"] for r in driver["rules"]] == [c for c, r in CODES.items() if r.bug]  # the rules that ran
    assert all(r["shortDescription"]["text"] and r["defaultConfiguration"]["level"] == "error" for r in driver["rules"])
    assert [(r["ruleId"], r["level"], r["message"]["text"]) for r in run["results"]] == [
        ("DDP001", "error", DDP001), ("DDP014", "error", DDP014)]
    locations = [r["locations"][0]["physicalLocation"] for r in run["results"]]
    assert [(p["artifactLocation"]["uri"], p["region"]["startLine"], p["region"]["startColumn"]) for p in locations] \
        == [("src%20dir/bad.py", 4, 23), ("src%20dir/bad.py", 6, 9)]
    assert all(driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])


def test_sarif_of_a_clean_file_has_no_results_and_exits_0():
    Path("ok.py").write_text("import torch.distributed as dist\n")
    log = json.loads(cli("--output-format", "sarif", "ok.py", code=0).stdout)
    assert log["runs"][0]["results"] == []


def test_fix_diff_shows_the_fixes_and_writes_nothing():
    Path("bad.py").write_text(BAD)
    result = cli("--fix", "--diff", "bad.py", code=1)
    assert result.stdout == (
        "--- bad.py\n+++ bad.py\n@@ -1,6 +1,6 @@\n import torch.distributed as dist\n import torch\n import os\n"
        '-torch.cuda.set_device(int(os.environ["RANK"]))\n'
        '+torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", int(os.environ["RANK"]))))\n'
        ' dist.init_process_group("gloo")\n state = torch.load("x.pt")\n')
    assert Path("bad.py").read_text() == BAD
    assert result.stderr == "would fix 1 problem(s) in 1 file(s); 1 problem(s) would be left in 1 of 1 file(s)\n"
    assert cli("--fix", "--diff", "-", input=BAD, code=1).stdout.startswith("--- <stdin>\n+++ <stdin>\n")


def test_fix_diff_with_nothing_to_fix_prints_nothing():
    Path("ok.py").write_text("import torch.distributed as dist\n")
    assert cli("--fix", "--diff", "ok.py", code=0).stdout == ""


@pytest.mark.parametrize("args, message", [
    (["--diff"], "--diff shows what --fix would change: use --fix --diff"),
    (["--fix", "--diff", "--output-format", "json"], "--diff prints a diff: it takes no --output-format"),
    (["--json", "--output-format", "sarif"], "--json is --output-format json: give one of them"),
])
def test_conflicting_options_are_usage_errors(args, message):
    Path("bad.py").write_text(BAD)
    assert message in cli(*args, "bad.py", code=2).stderr
