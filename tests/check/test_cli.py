"""`ddpify check` on the command line: the report format, exit codes, --select/--ignore, --json,
--fix, --explain, bad input."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddpify.check import Finding, in_order
from ddpify.cli import main

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "check"
FIXTURES = CASES.parent
BAD = "import torch.distributed as dist\nimport torch\nimport os\n" \
      'torch.cuda.set_device(int(os.environ["RANK"]))\ndist.init_process_group("gloo")\nstate = torch.load("x.pt")\n'
BAD_LINE = "bad.py:4:23: DDP001 "


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)


def cli(*args: str, code: int, input: str | None = None):
    result = CliRunner().invoke(main, ["check", *args], input=input)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def test_findings_go_to_stdout_one_per_line_with_a_summary_on_stderr_and_exit_1():
    Path("bad.py").write_text(BAD)
    result = cli("bad.py", code=1)
    lines = result.stdout.splitlines()
    assert [line.split(" ")[:2] for line in lines] == [["bad.py:4:23:", "DDP001"], ["bad.py:6:9:", "DDP014"]]
    assert result.stderr == "2 problem(s) in 1 of 1 file(s) (1 fixable with --fix)\n"


def test_clean_and_single_gpu_scripts_exit_0():
    Path("ddp.py").write_bytes((FIXTURES / "canonical" / "after.py").read_bytes())
    Path("single.py").write_bytes((FIXTURES / "canonical" / "before.py").read_bytes())
    result = cli("ddp.py", "single.py", code=0)
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "single.py: note: not distributed (no torch.distributed): `ddpify convert` makes it a DDP script",
        "no DDP problems found in 2 file(s)"]


def test_directories_are_searched_and_stdin_is_read():
    Path("src/pkg").mkdir(parents=True)
    Path("src/pkg/bad.py").write_text(BAD)
    Path("src/ok.py").write_text("x = 1\n")
    assert cli("src", code=1).stdout.startswith(os.path.join("src", "pkg", "bad.py") + ":4:23: DDP001 ")
    assert cli("-", input=BAD, code=1).stdout.startswith("<stdin>:4:23: DDP001 ")


def test_select_and_ignore_take_codes_and_prefixes():
    """Advice (DDP011) is reported only when selected, by its code or a prefix."""
    Path("bad.py").write_text(BAD)
    assert "DDP011" not in cli("bad.py", code=1).stdout
    assert [line.split()[1] for line in cli("bad.py", "--select", "DDP01", code=1).stdout.splitlines()] == [
        "DDP011", "DDP014"]
    assert [line.split()[1] for line in cli("bad.py", "--select", "DDP011", code=1).stdout.splitlines()] == ["DDP011"]
    assert [line.split()[1] for line in cli("bad.py", "--ignore", "DDP01", code=1).stdout.splitlines()] == ["DDP001"]
    assert cli("bad.py", "--select", "ddp001,DDP011", "--ignore", "DDP001,DDP011", code=0).stdout == ""
    assert "unknown code(s) DDP999" in cli("bad.py", "--select", "DDP999", code=2).stderr


def test_json():
    Path("bad.py").write_text(BAD)
    payload = json.loads(cli("bad.py", "--json", code=1).stdout)
    assert payload["version"] == 1
    [entry] = payload["files"]
    assert entry["path"] == "bad.py" and entry["note"] is None and entry["fixed"] == 0
    first = entry["findings"][0]
    assert first["message"].startswith('`int(os.environ["RANK"])` is the global rank')
    assert {k: v for k, v in first.items() if k != "message"} == {"code": "DDP001", "line": 4, "column": 23,
                                                                  "fixable": True}
    assert [f["code"] for f in entry["findings"]] == ["DDP001", "DDP014"]


def test_fix_rewrites_the_file_keeping_its_mode_and_reports_what_is_left():
    Path("bad.py").write_text(BAD)
    Path("bad.py").chmod(0o755)
    result = cli("--fix", "bad.py", code=1)
    assert Path("bad.py").read_text() == BAD.replace('int(os.environ["RANK"])',
                                                     'int(os.environ.get("LOCAL_RANK", int(os.environ["RANK"])))')
    assert stat.S_IMODE(Path("bad.py").stat().st_mode) == 0o755
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["DDP014"]  # no fix for it
    assert result.stderr == "fixed 1 problem(s) in 1 file(s); 1 problem(s) in 1 of 1 file(s)\n"
    assert sorted(os.listdir()) == ["bad.py"]  # no temporary file left


def test_fix_writes_nothing_when_an_input_does_not_parse():
    Path("bad.py").write_text(BAD)
    Path("broken.py").write_text("def f(:\n    pass\n")
    result = cli("--fix", "bad.py", "broken.py", code=2)
    assert Path("bad.py").read_text() == BAD
    assert result.stdout.startswith(BAD_LINE)  # reported as it is, since nothing was fixed
    assert result.stderr.splitlines()[-1] == "broken.py:1:7: cannot parse: invalid syntax"
    assert "--fix cannot rewrite standard input" in cli("--fix", "-", input=BAD, code=2).stderr


def test_bad_input_is_one_line_and_exit_2():
    assert cli("missing.py", code=2).stderr == "missing.py: no such file or directory\n"
    assert "name the scripts" in cli(code=2).stderr


def test_explain_shows_the_rule_with_its_examples():
    out = cli("--explain", "ddp001", code=0).stdout
    assert out.startswith("DDP001 (rank-as-device) [fixable]\n\nThe global rank picks the GPU")
    assert "Wrong:" in out and "Right:" in out and 'os.environ["LOCAL_RANK"]' in out
    assert "unknown code DDP999" in cli("--explain", "DDP999", code=2).stderr


def test_the_check_command_never_imports_torch():
    Path("bad.py").write_text(BAD)
    code = textwrap.dedent('''\
        import sys
        import ddpify.cli
        try:
            ddpify.cli.main(["check", "--fix", "bad.py"])
        except SystemExit as exc:
            assert exc.code == 1, exc.code
        assert "torch" not in sys.modules
        ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_bug_of_ours_is_one_line_and_exit_123(monkeypatch):
    Path("bad.py").write_text(BAD)

    def broken(data, rules, program=None, imported_by_ddp=False):
        raise KeyError("boom")
    monkeypatch.setattr("ddpify.check.check", broken)
    result = cli("bad.py", code=123)
    assert result.stderr == "bad.py: internal error: KeyError: 'boom' (rerun with --verbose for the traceback)\n"
    verbose = cli("bad.py", "--verbose", code=123).stderr.splitlines()
    assert verbose[0] == "Traceback (most recent call last):"
    assert verbose[-1] == "bad.py: internal error: KeyError: 'boom'"


def test_a_helper_module_a_ddp_script_imports_is_checked_as_ddp_code():
    """utils.py never names torch.distributed, but train.py, checked in the same run, imports
    it: its `torch.load` runs in every process (issue 29). Named alone, utils.py is read in the
    program of train.py, the script of its folder that imports it (decision 0036); without
    that script it is not DDP code."""
    import shutil

    shutil.copytree(CASES / "DDP014" / "program", "proj")
    found = "proj/utils.py:6:27: DDP014 torch.load without map_location"
    assert found in cli("proj/train.py", "proj/utils.py", code=1).stdout
    assert found in cli("proj", code=1).stdout
    assert found in cli("proj/utils.py", code=1).stdout
    assert "utils.py" not in cli("proj/train.py", code=0).stdout
    Path("alone").mkdir()
    shutil.copy("proj/utils.py", "alone/utils.py")
    assert cli("alone/utils.py", code=0).stdout == ""


def test_findings_at_one_place_come_out_in_one_order_whatever_order_they_were_found_in():
    first = Finding("DDP008", 623, 9, "`model` holds the DDP wrapper, which has no `config`", True)
    second = Finding("DDP008", 623, 9, "`model` holds the DDP wrapper, which has no `generate`", True)
    assert in_order([second, first]) == in_order([first, second]) == [first, second]
