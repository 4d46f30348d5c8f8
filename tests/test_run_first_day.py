"""`ddpify run` as a first-time user meets it (issue 31): launch mistakes caught before the
launch in one line, the silent start explained, "no speed-up" said before the launch (and
refused by --strict), and `--dry-run`."""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddpify.cli import main
from ddpify.cli.run import NO_SPEEDUP
from ddpify.run import launch
from tests.support.snippets import script
from tests.test_run import runs_left

# batches sliced by hand, an exit decided by the batch each process would take: left whole (decision 0217),
# nothing sharded
BY_HAND = """\
import torch
data = torch.randn(64, 2)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i in range(0, len(data), 8):
        opt.zero_grad()
        model(data[i:i + 8]).sum().backward()
        opt.step()
        if i > 40:
            break
"""


@pytest.fixture
def job(tmp_path, monkeypatch):
    """A working directory with `train.py`, and $TMPDIR of the test's own."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(launch, "gpu_count", lambda env=None: 0)
    monkeypatch.setattr(launch, "cpu_count", lambda: 4)
    Path("train.py").write_text(script())
    return tmp_path


@pytest.mark.parametrize("args, message", [
    (["--nproc-per-node", "0", "train.py"], "ddpify run: --nproc-per-node 0: at least 1 process"),
    (["--nproc-per-node=many", "train.py"],
     "ddpify run: --nproc-per-node 'many': a number, or one of auto, cpu, gpu, cuda, xpu"),
    (["train.py", "--nproc-per-node", "2"],
     "ddpify run: --nproc-per-node comes after the script, so it would go to train.py: put it before the script "
     "(ddpify run --nproc-per-node ... train.py), or `--` before the script to pass it on"),
    (["train.py", "--dry-run"], "ddpify run: --dry-run comes after the script, so it would go to train.py: put "
                                "it before the script (ddpify run --dry-run ... train.py), or `--` before the "
                                "script to pass it on"),
])
def test_launch_mistakes_are_one_line_before_anything_is_converted(job, args, message):
    result = CliRunner().invoke(main, ["run", *args])
    assert (result.exit_code, result.stderr) == (2, message + "\n")
    assert runs_left(job / "tmp") == []


def test_more_processes_than_cores_is_said_before_the_conversion(job):
    result = CliRunner().invoke(main, ["run", "--dry-run", "--nproc-per-node", "6", "train.py"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == \
        "ddpify run: warning: 6 processes on 4 core(s): each waits for a core (slower than fewer processes)"
    quiet = CliRunner().invoke(main, ["run", "--dry-run", "--nproc-per-node", "4", "train.py"])
    assert "core(s)" not in quiet.stderr


def test_dry_run_prints_the_command_its_environment_and_the_kept_folder_and_launches_nothing(job, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(launch, "run_job", lambda *a, **k: pytest.fail("--dry-run launched"))
    result = CliRunner().invoke(main, ["run", "--dry-run", "--nproc-per-node", "2", "--", "train.py",
                                       "--nproc-per-node", "x y"])
    assert result.exit_code == 0, result.stderr
    first, variables, command = result.stdout.splitlines()
    folder = Path(first.split("# the run's folder (kept): ")[1])
    assert runs_left(job / "tmp") == [folder.name] and (folder / "train.py").is_file()
    words = shlex.split(variables.removesuffix("\\") + command)  # one shell command on two lines
    assert dict(w.split("=", 1) for w in words[:3]) == {
        "DDPIFY_VERIFY_JSON": str(folder / "self-check.json"), "OMP_NUM_THREADS": "2", "PYTHONPATH": os.pathsep.join(filter(None, [str(job), os.environ.get("PYTHONPATH")]))}
    assert words[words.index("--nproc-per-node"):] == ["--nproc-per-node", "2", str(folder / "train.py"), "--",
                                                      "--nproc-per-node", "x y"]
    assert "starting" not in result.stderr


def test_the_start_says_what_the_silent_seconds_are(job, monkeypatch):
    monkeypatch.setattr(launch, "run_job", lambda *a, **k: launch.Finished(0))
    result = CliRunner().invoke(main, ["run", "--nproc-per-node", "3", "train.py"])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[-1] == "ddpify run: starting 3 processes with torchrun; each imports torch before its first " \
                        "line (a few seconds)"
    assert lines[-2].startswith("train.py: converted -> ")


def test_no_speedup_is_one_prominent_line_before_the_launch_and_strict_refuses(job, monkeypatch):
    Path("train.py").write_text(BY_HAND)
    monkeypatch.setattr(launch, "run_job", lambda *a, **k: launch.Finished(0))
    result = CliRunner().invoke(main, ["run", "--nproc-per-node", "2", "train.py"])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines.index(NO_SPEEDUP) < next(i for i, line in enumerate(lines) if "starting 2 processes" in line)
    strict = CliRunner().invoke(main, ["run", "--strict", "--nproc-per-node", "2", "train.py"])
    assert strict.exit_code == 2 and NO_SPEEDUP in strict.stderr
    assert strict.stderr.splitlines()[-1].startswith("ddpify run: --strict: ")
    Path("train.py").write_text(script())
    sharded = CliRunner().invoke(main, ["run", "--nproc-per-node", "2", "train.py"])
    assert sharded.exit_code == 0 and NO_SPEEDUP not in sharded.stderr
