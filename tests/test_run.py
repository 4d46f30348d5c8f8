"""`ddpify run`: the command line split between ddpify, torchrun and the script; the converted
file next to the script, removed when the job ends (also on Ctrl-C); the job's exit code; the
original file untouched."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddpify import launch
from ddpify.cli import main
from ddpify.io import InputError
from tests.e2e import harness as h
from tests.support.env import FIXTURES, clean_env, probe_env
from tests.support.records import Probe

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize("args, torchrun, script_args, keep", [
    (["train.py"], [], [], False),
    (["--keep", "train.py", "--keep", "-x"], [], ["--keep", "-x"], True),
    (["--nproc-per-node", "2", "--standalone", "--max_restarts=1", "train.py", "a"],
     ["--nproc-per-node", "2", "--standalone", "--max_restarts=1"], ["a"], False),
    (["--nnodes", "2", "--", "train.py"], ["--nnodes", "2"], [], False),
])
def test_parse_splits_ddpify_torchrun_and_script_arguments(args, torchrun, script_args, keep):
    assert launch.parse(args) == launch.Plan(Path("train.py"), script_args, torchrun, keep)


@pytest.mark.parametrize("args", [["--strategy", "fsdp", "train.py", "--strategy", "x"],
                                  ["--strategy=fsdp", "--standalone", "train.py", "--strategy", "x"]])
def test_parse_takes_the_strategy_before_the_script(args):
    plan = launch.parse(args)
    assert (plan.strategy, plan.script_args) == ("fsdp", ["--strategy", "x"])
    assert "--strategy" not in plan.torchrun_args


@pytest.mark.parametrize("args, message", [
    ([], "no script given"),
    (["--nproc-per-node"], "--nproc-per-node needs a value"),
    (["-m", "pkg.train"], "-m is not supported"),
    (["--no-python", "train.sh"], "--no-python is not supported"),
    (["--strategy", "zero3", "train.py"], "--strategy must be one of ddp, fsdp, not 'zero3'"),
    (["--strategy"], "--strategy must be one of ddp, fsdp, not ''"),
])
def test_parse_refuses(args, message):
    with pytest.raises(InputError, match=message):
        launch.parse(args)


def test_torchrun_command_defaults_to_standalone_and_one_process_per_device():
    plan = launch.parse(["train.py", "--lr", "1"])
    assert launch.torchrun_command(plan, Path("train.ddpify.py"), env={}) == [
        *TORCHRUN, "--standalone", "--nproc_per_node=auto", "train.ddpify.py", "--lr", "1"]
    plan = launch.parse(["--nproc_per_node=4", "--rdzv-endpoint", "h:1", "--nnodes", "2", "train.py"])
    assert launch.torchrun_command(plan, Path("t.py"), env={}) == [
        *TORCHRUN, "--nproc_per_node=4", "--rdzv-endpoint", "h:1", "--nnodes", "2", "t.py"]
    env = {"PET_NPROC_PER_NODE": "2", "PET_MASTER_ADDR": "h"}  # torchrun reads these too
    assert launch.torchrun_command(launch.parse(["t.py"]), Path("t.py"), env=env) == [*TORCHRUN, "t.py"]


def test_the_converted_file_sits_next_to_the_script():
    assert launch.converted_path(Path("src/train.py")) == Path("src/train.ddpify.py")
    assert launch.converted_path(Path("nb.ipynb")) == Path("nb.ddpify.py")


def test_run_job_returns_the_exit_code():
    assert launch.run_job([sys.executable, "-c", "raise SystemExit(5)"]) == 5
    assert launch.run_job([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"]) == 137


def test_run_refuses_to_overwrite_a_file_it_did_not_write(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "explicit_sampler" / "before.py", "train.py")
    Path("train.ddpify.py").write_text("mine = True\n")
    result = CliRunner().invoke(main, ["run", "train.py"])
    assert result.exit_code == 2
    assert result.stderr == "train.ddpify.py: exists and was not written by ddpify: move it away first\n"
    assert Path("train.ddpify.py").read_text() == "mine = True\n"


def test_run_on_a_script_that_does_not_parse_exits_2_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text("def f(:\n    pass\n")
    result = CliRunner().invoke(main, ["run", "train.py"])
    assert (result.exit_code, result.stderr) == (2, "train.py:1:7: cannot parse: invalid syntax\n")
    assert sorted(os.listdir()) == ["train.py"]


# ---- launches ----------------------------------------------------------------------------------

def ddpify_run(args, cwd: Path, env, **kwargs):
    return subprocess.run([sys.executable, "-m", "ddpify", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180, **kwargs)


@pytest.mark.slow
def test_run_trains_a_corpus_script_with_disjoint_shards(tmp_path):
    job, probe_dir = tmp_path / "job", tmp_path / "probe"
    job.mkdir()
    script = job / "train.py"
    shutil.copy(FIXTURES / "explicit_sampler" / "before.py", script)
    before = digest(script)
    proc = ddpify_run(["--nproc-per-node", "2", "--keep", "train.py"], job, probe_env(probe_dir))
    assert proc.returncode == 0, proc.stderr
    assert f"kept {Path('train.ddpify.py')}" in proc.stderr
    assert proc.stderr.startswith("train.py: ") and " -> train.ddpify.py\n" in proc.stderr
    probe = Probe.read(probe_dir)
    assert probe.ranks == [0, 1]
    loader = probe.first_loader()
    assert h.check_sharded_passes(probe, 2, loader) == []
    assert all(len(passes) >= 3 for passes in probe.indices(loader).values())
    assert digest(script) == before
    assert "ddpify_runtime" in (job / "train.ddpify.py").read_text()


HELPER = "def check(step):\n    if step == 2:\n        raise SystemExit(3)\n"
FAILING = textwrap.dedent('''\
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from helper import check

    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            check(step)
    ''')


@pytest.mark.slow
def test_a_failing_job_returns_its_exit_code_and_leaves_the_original(tmp_path):
    (tmp_path / "helper.py").write_text(HELPER)  # a sibling import: the converted file sits beside it
    script = tmp_path / "train.py"
    script.write_text(FAILING)
    proc = ddpify_run(["--nproc-per-node", "2", "train.py"], tmp_path, clean_env())
    assert proc.returncode == 1, proc.stderr  # torchrun's code for a failed worker
    assert "exitcode  : 3" in proc.stderr  # the script ran, as far as the helper's exit
    assert script.read_text() == FAILING
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".py") == ["helper.py", "train.py"]


def job_processes(marker: str) -> list[int]:
    """Processes whose command line mentions `marker` (read from /proc, no psutil)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(entry.name))
        except OSError:  # gone meanwhile
            pass
    return pids


def fetched(probe_dir: Path) -> bool:
    """Whether a worker fetched a batch (a line being written meanwhile reads as not yet)."""
    try:
        return bool(Probe.read(probe_dir).of("fetch"))
    except ValueError:
        return False


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_ctrl_c_removes_the_converted_file_and_leaves_no_process(tmp_path):
    job, probe_dir = tmp_path / "job", tmp_path / "probe"
    job.mkdir()
    shutil.copy(FIXTURES / "notebook_train" / "train.ipynb", job / "train.ipynb")
    converted = job / "train.ddpify.py"
    proc = subprocess.Popen([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "2", "train.ipynb"],
                            cwd=job, env=probe_env(probe_dir, NOTEBOOK_EPOCHS="100000"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        training = wait_for(lambda: converted.exists() and fetched(probe_dir), timeout=90)
        assert training, "training did not start"
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert not converted.exists()
    assert wait_for(lambda: not job_processes(str(converted)), timeout=10), job_processes(str(converted))
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
