"""`ddpify run` where the machine or the names are hostile (issue 30): a full $TMPDIR, a `:` in
the script's folder, a symlinked script, a script name that would break a shell line, ddpify
killed by SIGKILL; and Ctrl-C in any command exits 130."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddpify.cli import main
from ddpify.cli.run import OWN
from ddpify.inputs import files
from ddpify.run import launch
from tests.support.env import clean_env
from tests.test_run import SIBLING, alive, runs_left, wait_for

TRAIN = SIBLING.replace('open("data/values.txt").read().split()', '"1 2 3 4 5 6 7 8".split()')


def test_a_full_tmpdir_is_one_line_and_leaves_no_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    Path("train.py").write_text(TRAIN)
    Path("helper.py").write_text("def scale(x):\n    return x\n")

    def full(self, data, mode=None):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(launch.Workspace, "add", full)
    result = CliRunner().invoke(main, ["run", "train.py"])
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    assert last == f"ddpify run: cannot write the run's folder in {tmp_path}: No space left on device: " \
                   "free space there, or set TMPDIR to another folder"
    assert runs_left(tmp_path) == []


def test_a_folder_named_with_a_colon_is_reached_through_a_link_in_the_run_folder(tmp_path):
    folder = tmp_path / "exp_12:30"
    folder.mkdir()
    (tmp_path / "run").mkdir()
    plan = launch.parse([str(folder / "train.py")], OWN)
    env = launch.job_env(plan, "1", {"PYTHONPATH": "/x"}, workspace=tmp_path / "run")
    first, rest = env["PYTHONPATH"].split(os.pathsep, 1)
    assert rest == "/x" and os.path.realpath(first) == str(folder) and ":" not in first


def test_a_symlinked_script_runs_beside_the_file_it_links_to(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "train.py").write_text("x = 1\n")
    (tmp_path / "train.py").symlink_to(tmp_path / "real" / "train.py")
    plan = launch.parse([str(tmp_path / "train.py")], OWN)
    assert launch.job_env(plan, "1", {})["PYTHONPATH"] == str(tmp_path / "real")
    assert repr(str(tmp_path / "real")) in launch.torchrun_command(plan, Path("t.py"), Path("L"), False, {})[2]


@pytest.mark.slow
def test_a_symlinked_script_in_a_folder_named_with_a_colon_imports_its_sibling(tmp_path):
    """Both at once, under torchrun: `exp_12:30/train.py` (importing `helper` beside it) run
    through a link to it from another folder, as `python link/train.py` runs it."""
    real, link, tmp = tmp_path / "exp_12:30", tmp_path / "link", tmp_path / "tmp"
    for folder in (real, link, tmp):
        folder.mkdir()
    (real / "train.py").write_text(TRAIN)
    (real / "helper.py").write_text("def scale(x):\n    return x / 10\n")
    (link / "train.py").symlink_to(real / "train.py")
    done = subprocess.run([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "1", "link/train.py"],
                          cwd=tmp_path, env=clean_env(TMPDIR=str(tmp)), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("done ") and runs_left(tmp) == []


def test_sbatch_quotes_what_it_writes_into_the_shell_script(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = "a\nrm -rf ~ $(id) 'x'.py"
    Path(name).write_text("x = 1\n")
    result = CliRunner().invoke(main, ["run", "--sbatch", "--nproc-per-node=2", name, "--tag", "$HOME; id"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("#SBATCH --job-name")] == [
        "#SBATCH --job-name=a_rm_-rf_____id___x_"]
    # the shell reads the srun line back into exactly the words ddpify meant
    srun = result.stdout.split("\nsrun ", 1)[1]
    words = subprocess.run(["bash", "-c", f'printf "%s\\0" {srun}'], capture_output=True, text=True,
                           check=True).stdout.split("\0")[:-1]
    assert words[-3:] == [name, "--tag", "$HOME; id"]
    refused = CliRunner().invoke(main, ["run", "--sbatch", "--nnodes", "2\nid", name])
    assert refused.exit_code == 2 and "--nnodes '2\\nid': not a node count" in refused.stderr


def test_ctrl_c_in_any_command_exits_130_without_aborted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text("x = 1\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(files, "collect", interrupted)
    for command in (["convert", "train.py", "-o", "out.py"], ["diff", "train.py"], ["check", "train.py"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 130, (command, result.output)
        assert "Aborted" not in result.output


LAUNCHER_LIKE_TORCHRUN = textwrap.dedent('''\
    import signal, subprocess, sys, time
    from pathlib import Path
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    def stop(signum, frame):  # as torchrun does on SIGTERM: stop the workers, then exit
        worker.kill()
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    Path(sys.argv[1]).write_text(f"{worker.pid} {__import__('os').getpid()}")
    time.sleep(600)
    ''')
RUN_JOB = "import sys; from ddpify.run import launch; sys.exit(launch.run_job(sys.argv[1:]).code)"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_ddpify_killed_by_sigkill_leaves_no_launcher_and_no_worker(tmp_path):
    pid_file = tmp_path / "pids"
    proc = subprocess.Popen([sys.executable, "-c", RUN_JOB, sys.executable, "-c", LAUNCHER_LIKE_TORCHRUN,
                             str(pid_file)], cwd=Path(__file__).parents[1], start_new_session=True)
    try:
        assert wait_for(lambda: pid_file.exists() and pid_file.read_text(), timeout=30)
        worker, launcher = map(int, pid_file.read_text().split())
        proc.kill()
        proc.wait(timeout=10)
        assert wait_for(lambda: not alive(launcher) and not alive(worker), timeout=15)
    finally:
        left = [int(pid) for pid in pid_file.read_text().split()] if pid_file.exists() else []
        for pid in [proc.pid, *left]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# `ddpify run`, SIGKILLed where it launches the job: its run folder is made and written
KILLED_AT_LAUNCH = """\
import os, signal, sys
from ddpify.cli import main
from ddpify.run import launch
launch.run_job = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
sys.argv = ["ddpify", "run", "--nproc-per-node", "1", "train.py"]
main()
"""


def test_the_next_run_removes_the_folders_of_runs_killed_and_keeps_the_others(tmp_path, monkeypatch):
    """Issue 30 item 7: a run folder whose ddpify was SIGKILLed is removed by the next run; the
    folder of a running ddpify, a folder kept for the user and a folder ddpify did not make stay."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    Path("train.py").write_text(TRAIN)
    Path("helper.py").write_text("def scale(x):\n    return x\n")
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_LAUNCH], env=clean_env(TMPDIR=str(tmp_path), PYTHONPATH=str(
        Path(__file__).parents[1])), capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (stale,) = tmp_path.glob("ddpify-run-*")
    assert (stale / "train.py").exists() and (stale / launch.MARKER).exists()
    running = launch.Workspace()  # this process's: running
    kept = launch.Workspace()
    kept.keep()
    users = tmp_path / "ddpify-run-mine"
    users.mkdir()
    monkeypatch.setattr(launch, "run_job", lambda *a, **k: launch.Finished(0))
    result = CliRunner().invoke(main, ["run", "--keep", "--nproc-per-node", "1", "train.py"])
    assert result.exit_code == 0, result.output
    assert f"ddpify run: removed 1 run folder(s) of earlier runs that were killed: {stale}" in result.stderr
    (mine,) = set(tmp_path.glob("ddpify-run-*")) - {stale, running.path, kept.path, users}
    assert sorted(runs_left(tmp_path)) == sorted(p.name for p in (running.path, kept.path, users, mine))
    assert not (mine / launch.MARKER).exists()  # --keep: the user's now, never taken for stale
    assert launch.remove_stale() == []
