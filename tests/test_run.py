"""`ddpify run`: the command line split between ddpify, torchrun and the script; the run's own
folder (two runs never collide, nothing of the user's is written or deleted); warnings before the
launch and `--strict`; the defaults (processes, threads, SLURM); `--sbatch`; signals; and what a
failure shows. The launches are few and each checks several things."""

from __future__ import annotations

import hashlib
import json
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

from ddpify.run import joblog, launch
from ddpify.inputs import notebook
from ddpify.cli import main
from ddpify.cli.run import OWN
from ddpify.convert import Options, convert
from ddpify.inputs.files import InputError
from tests.e2e import harness as h
from tests.support.env import FIXTURES, clean_env, free_port, probe_env
from tests.support.records import Probe


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runs_left(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("ddpify-run-*"))


# ---- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize("args, torchrun, script_args, own", [
    (["train.py"], [], [], []),
    (["--keep", "train.py", "--keep", "-x"], [], ["--keep", "-x"], ["--keep"]),
    (["--nproc-per-node", "2", "--standalone", "--max_restarts=1", "--only", "shard-data", "train.py", "a"],
     ["--nproc-per-node", "2", "--standalone", "--max_restarts=1"], ["a"], ["--only", "shard-data"]),
    (["--strategy=fsdp", "--no-shard-eval", "--nnodes", "2", "--", "train.py", "--strategy", "x"],
     ["--nnodes", "2"], ["--strategy", "x"], ["--strategy=fsdp", "--no-shard-eval"]),
])
def test_parse_splits_ddpify_torchrun_and_script_arguments(args, torchrun, script_args, own):
    assert launch.parse(args, OWN) == launch.Plan(Path("train.py"), script_args, torchrun, own)


def test_run_takes_the_conversion_options_of_convert():
    assert {"--only", "--skip", "--find-unused-parameters", "--no-shard-eval", "--strategy",
            "--sync-batchnorm"} <= set(OWN)
    assert (OWN["--only"], OWN["--no-shard-eval"]) == (True, False)  # takes a value; a flag


@pytest.mark.parametrize("args, message", [
    ([], "no script given"),
    (["--nproc-per-node"], "--nproc-per-node needs a value"),
    (["-m", "pkg.train"], "-m is not supported"),
    (["--no-python", "train.sh"], "--no-python is not supported"),
])
def test_parse_refuses(args, message):
    with pytest.raises(InputError, match=message):
        launch.parse(args, OWN)


@pytest.mark.parametrize("args, message", [
    (["--strategy", "zero3", "train.py"], "ddpify run: Invalid value for '--strategy': 'zero3' is not one of"),
    (["--skip", "nope", "train.py"], "ddpify run: Invalid value for '--skip': unknown rewrite(s) nope"),
])
def test_run_refuses_bad_options_of_its_own(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["run", *args])
    assert result.exit_code == 2 and result.stderr.startswith(message), result.stderr
    assert os.listdir() == ["train.py"]


LAUNCHER_CODE = launch.LAUNCHER.format(folder=os.path.abspath("."))


def test_torchrun_command_defaults(monkeypatch):
    monkeypatch.setattr(launch, "gpu_count", lambda env=None: 0)
    monkeypatch.setattr(launch, "cpu_count", lambda: 64)
    plan = launch.parse(["train.py", "--lr", "1"], OWN)
    python = [sys.executable, "-c", LAUNCHER_CODE]
    assert launch.torchrun_command(plan, Path("ws/train.py"), Path("ws/logs"), True, env={}) == [
        *python, "--standalone", "--nproc-per-node=4", "--redirects=3", "--log-dir=ws/logs",
        "ws/train.py", "--", "--lr", "1"]
    plan = launch.parse(["--nproc_per_node=4", "--rdzv-endpoint", "h:1", "--nnodes", "2", "--log-dir", "L",
                         "train.py"], OWN)
    assert launch.torchrun_command(plan, Path("t.py"), Path("L"), True, env={}) == [
        *python, "--redirects=3", "--nproc_per_node=4", "--rdzv-endpoint", "h:1", "--nnodes", "2",
        "--log-dir", "L", "t.py"]
    env = {"PET_NPROC_PER_NODE": "2", "PET_MASTER_ADDR": "h"}  # torchrun reads these too
    assert launch.torchrun_command(launch.parse(["t.py"], OWN), Path("t.py"), Path("L"), False, env=env) == [
        *python, "--log-dir=L", "t.py"]


def test_the_scripts_arguments_reach_it_whole_even_where_they_abbreviate_torchruns_options(monkeypatch):
    """DL_framework's `main.py --log ./logs` (sweep 8a, held out): torchrun's parser took `--log` for
    an abbreviation of its `--log-dir`/`--logs-specs` and stopped ("ambiguous option"); after `--`
    the script gets its arguments as given."""
    from torch.distributed.run import get_args_parser
    monkeypatch.setattr(launch, "gpu_count", lambda env=None: 0)
    plan = launch.parse(["train.py", "--config", "c.py", "--log", "./logs", "--", "x"], OWN)
    command = launch.torchrun_command(plan, Path("train.py"), Path("L"), False, env={})
    parsed = get_args_parser().parse_args(command[3:])
    assert (parsed.training_script, parsed.training_script_args) == ("train.py", ["--config", "c.py", "--log", "./logs", "--", "x"])


def test_without_a_gpu_the_default_is_a_few_processes_sharing_the_cores(monkeypatch):
    monkeypatch.setattr(launch, "cpu_count", lambda: 64)
    monkeypatch.setattr(launch, "gpu_count", lambda env=None: 0)
    assert (launch.default_nproc(), launch.omp_threads("4"), launch.omp_threads("cpu")) == ("4", "16", "1")
    monkeypatch.setattr(launch, "cpu_count", lambda: 2)
    assert (launch.default_nproc(), launch.omp_threads("2")) == ("2", "1")
    monkeypatch.setattr(launch, "gpu_count", lambda env=None: 8)
    monkeypatch.setattr(launch, "cpu_count", lambda: 64)
    assert (launch.default_nproc(), launch.omp_threads("auto"), launch.omp_threads("gpu")) == ("auto", "8", "8")


def test_the_convert_hint_names_gpu_only_where_there_is_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "explicit_sampler" / "before.py", "train.py")
    monkeypatch.setattr(launch, "gpu_count", lambda env=None: 0)
    monkeypatch.setattr(launch, "cpu_count", lambda: 3)
    result = CliRunner().invoke(main, ["convert", "train.py", "-o", "out.py"])
    assert "run it: torchrun --standalone --nproc_per_node=3 out.py\n" in result.stderr
    monkeypatch.setattr(launch, "gpu_count", lambda env=None: 2)
    result = CliRunner().invoke(main, ["convert", "train.py", "-o", "out.py"])
    assert "run it: torchrun --standalone --nproc_per_node=auto out.py\n" in result.stderr


def test_job_env_puts_the_script_folder_on_the_path_and_shares_the_cores(monkeypatch):
    monkeypatch.setattr(launch, "cpu_count", lambda: 8)
    plan = launch.parse(["src/train.py"], OWN)
    env = launch.job_env(plan, "2", {"PYTHONPATH": "/x"})
    assert (env["PYTHONPATH"], env["OMP_NUM_THREADS"]) == (f"{os.path.abspath('src')}{os.pathsep}/x", "4")
    assert launch.job_env(plan, "2", {"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"  # the user's


# ---- SLURM -------------------------------------------------------------------------------------

@pytest.mark.parametrize("nodelist, first", [("node[03-05,9],gpu1", "node03"), ("a1,a2", "a1"),
                                             ("rack[2-3]-n[07-08]", "rack2-n07"), ("solo", "solo")])
def test_first_host_of_a_node_list(nodelist, first):
    assert launch.first_host(nodelist) == first


STEP = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_STEP_NUM_NODES": "2",
        "SLURM_STEP_NUM_TASKS": "2", "SLURM_NODEID": "1"}


def test_under_srun_the_rendezvous_comes_from_the_job():
    plan = launch.parse(["--nproc-per-node", "8", "train.py"], OWN)
    assert launch.torchrun_command(plan, Path("t.py"), Path("L"), False, env=STEP)[3:] == [
        "--nnodes=2", "--node-rank=1", "--master-addr=gpu07", "--master-port=24242", "--rdzv-id=4242",
        "--log-dir=L", "--nproc-per-node", "8", "t.py"]
    assert launch.slurm_args({**STEP, "MASTER_PORT": "1234"})[3] == "--master-port=1234"
    assert launch.slurm_args({**STEP, "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NUM_TASKS": "1"}) == []
    batch = {k: v for k, v in STEP.items() if not k.startswith("SLURM_STEP")}  # a batch script, no srun
    assert launch.slurm_args(batch) == []
    with pytest.raises(InputError, match=r"srun started 16 tasks on 2 node\(s\): start one per node"):
        launch.slurm_args({**STEP, "SLURM_STEP_NUM_TASKS": "16"})
    with pytest.raises(InputError, match="SLURM_STEP_NUM_NODES='two', SLURM_STEP_NUM_TASKS='2': not node"):
        launch.slurm_args({**STEP, "SLURM_STEP_NUM_NODES": "two"})


def test_sbatch_prints_a_batch_script(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["run", "--sbatch", "--nnodes", "2", "--nproc-per-node=8", "--keep",
                                       "train.py", "--lr", "0.1"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == textwrap.dedent(f"""\
        #!/bin/bash
        #SBATCH --job-name=train
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        #SBATCH --gpus-per-node=8
        #SBATCH --output=train-%j.out

        # one task per node; each runs torchrun, which starts that node's processes
        cd {tmp_path}
        srun {sys.executable} -m ddpify run --keep --nproc-per-node=8 train.py --lr 0.1
        """)
    assert os.listdir() == ["train.py"]


# ---- the run's folder --------------------------------------------------------------------------

def test_each_workspace_is_new_and_holds_only_what_was_added(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    one, two = launch.Workspace(), launch.Workspace()
    assert one.path != two.path and one.path.parent == tmp_path
    assert one.add({"train.py": b"a\n", "pkg/mod.py": b"b\n"}) == [one.path / "train.py", one.path / "pkg" / "mod.py"]
    assert (one.path / "pkg" / "mod.py").read_bytes() == b"b\n"
    assert [p.name for p in two.path.iterdir()] == [launch.MARKER]  # which ddpify process it is for
    for bad in ("../x.py", "/etc/x.py", ""):
        with pytest.raises(ValueError):
            one.add({bad: b""})
    one.remove()
    two.remove()
    assert runs_left(tmp_path) == []
    assert (launch.script_name(Path("a/train.py")), launch.script_name(Path("nb.ipynb"))) == ("train.py", "nb.ipynb.py")


WARNED = textwrap.dedent('''\
    import os
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    data = os.path.join(os.path.dirname(__file__), "data")
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    ''')


def test_strict_prints_the_warnings_and_launches_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    Path("train.py").write_text(WARNED)
    result = CliRunner().invoke(main, ["run", "--strict", "train.py"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "train.py:6: warning: [shard-data] batch_size is now per process: the global batch is batch_size x "
        "the number of processes",
        "train.py: 4 change(s), 1 warning(s)",
        "train.py:5: warning: [run] __file__ names the converted copy in the run's own folder, so paths built "
        "from it point there, not next to the script: to keep them, convert with `ddpify convert -o` into "
        "the script's folder and launch that with torchrun",
        "ddpify run: --strict: 2 warning(s) above; nothing launched"]
    assert os.listdir() == ["train.py"]


def test_run_converts_with_the_options_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(WARNED)
    result = CliRunner().invoke(main, ["run", "--strict", "--skip", "shard-data,set-epoch", "train.py"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "train.py: 2 change(s), 0 warning(s)"
    result = CliRunner().invoke(main, ["run", "--strict", "--verbose", "--only", "wrap-model", "train.py"])
    assert result.stderr.splitlines()[:2] == ["train.py:7: [wrap-model] `model` wrapped in DistributedDataParallel",
                                              "train.py: 1 change(s), 0 warning(s)"]


def test_verbose_or_torchruns_own_output_options_pass_everything_through():
    plan = launch.parse(["--tee", "3", "train.py"], OWN)
    assert (launch.captures_output(plan, False), launch.captures_output(launch.parse(["t.py"], OWN), True)) == \
        (False, False)
    assert launch.captures_output(launch.parse(["--log-dir", "L", "t.py"], OWN), False)


# ---- failures, read back -----------------------------------------------------------------------

def _attempt(log_dir: Path, errors: dict[int, tuple[float, str]], stderr: dict[int, str]) -> None:
    for local, (when, callstack) in errors.items():
        folder = log_dir / "run_x" / "attempt_0" / str(local)
        folder.mkdir(parents=True, exist_ok=True)
        extra = {"py_callstack": callstack, "timestamp": str(int(when)), "ddpify_time": repr(when)}
        (folder / "error.json").write_text(json.dumps({"message": {"message": "x", "extraInfo": extra}}))
    for local, text in stderr.items():
        folder = log_dir / "run_x" / "attempt_0" / str(local)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "stderr.log").write_text(text)


ROOT = "Root Cause (first observed failure):\n[0]:\n  time : x\n  rank      : {} (local_rank: {})\n" \
       "  exitcode  : {} (pid: 1)\n"


def test_the_first_failure_is_the_earliest_error_file_within_the_second(tmp_path):
    _attempt(tmp_path, {0: (100.9, "Traceback\nRuntimeError: Connection closed by peer\n"),
                        1: (100.2, "Traceback\nValueError: boom\n")}, {})
    report = tmp_path / "torchrun.log"
    report.write_text(ROOT.format(1, 1, 1))
    assert joblog.first_failure(tmp_path, report) == joblog.Failure(1, 1, 1, ["Traceback", "ValueError: boom"])
    report.write_text(ROOT.format(0, 0, 1))  # torchrun's choice differs: the rank is not known
    assert joblog.first_failure(tmp_path, report) == joblog.Failure(None, 1, None, ["Traceback", "ValueError: boom"])
    earlier = frozenset(tmp_path.glob("*"))  # a job before this one, in a --log-dir of the user's
    folder = tmp_path / "run_y" / "attempt_0" / "1"
    folder.mkdir(parents=True)
    (folder / "error.json").write_text(json.dumps({"message": {"message": "x", "extraInfo": {
        "py_callstack": "KeyError: 2\n", "timestamp": "200", "ddpify_time": "200.5"}}}))
    assert joblog.first_failure(tmp_path, report, earlier).traceback == ["KeyError: 2"]


def test_without_error_files_the_failure_is_torchruns_root_cause_and_its_stderr(tmp_path):
    _attempt(tmp_path, {}, {1: "step 1\n[rank1]: Traceback (most recent call last):\n[rank1]:   File \"t.py\", "
                                "line 3, in <module>\n[rank1]: SystemExit: 3\n"})
    report = tmp_path / "torchrun.log"
    report.write_text("noise\n" + ROOT.format(3, 1, 3))
    assert joblog.first_failure(tmp_path, report) == joblog.Failure(
        3, 1, 3, ["Traceback (most recent call last):", '  File "t.py", line 3, in <module>', "SystemExit: 3"])
    report.write_text("usage: torchrun ...\ntorchrun: error: unrecognized arguments: --bad\n")
    assert joblog.first_failure(tmp_path / "none", report).traceback[-1] == \
        "torchrun: error: unrecognized arguments: --bad"


def test_the_summary_names_notebook_cells_and_fits_in_30_lines():
    frames = [f'  File "/ws/nb.ipynb.py", line {n}, in <module>' for n in range(1, 40)]
    failure = joblog.Failure(1, 1, 1, ["Traceback (most recent call last):", *frames, "ValueError: boom"])
    lines = joblog.summary(failure, 1, "Kept: /ws", lambda file, line: f"nb.ipynb: cell 2, line {line}")
    assert len(lines) == 27 and lines[0] == "Traceback (most recent call last):"
    assert lines[1] == "  ... 16 more lines (see the log)"
    assert lines[-3] == '  File "/ws/nb.ipynb.py", line 39, in <module> (nb.ipynb: cell 2, line 39)'
    assert lines[-2:] == ["ValueError: boom", "ddpify run: rank 1 failed first, exit code 1; the job exits 1. Kept: /ws"]


def test_rank_0s_traceback_is_held_back_until_the_worker_shows_it_lives_on(tmp_path, capfdbinary):
    relay = joblog.Relay(tmp_path)  # made before the job starts
    folder = tmp_path / "run_x" / "attempt_0" / "0"
    folder.mkdir(parents=True)

    def worker_writes(*pieces: bytes) -> bytes:
        for piece in pieces:
            with open(folder / "stderr.log", "ab") as f:
                f.write(piece)
            relay.pump()
        return capfdbinary.readouterr().err

    assert worker_writes(b"epoch 1\n", b"50%") == b"epoch 1\n"  # a line in the making waits for one pump
    assert worker_writes(b"") == b"50%"
    traceback = b'[rank0]: Traceback (most recent call last):\n[rank0]:   File "t.py", line 3\n[rank0]: KeyError: 1\n'
    assert worker_writes(b"\n[rank0]: ", traceback[9:]) == b"\n"  # written in pieces, held whole
    assert worker_writes(b"epoch 2\n") == traceback + b"epoch 2\n"  # handled: the worker lives on
    assert worker_writes(b"Traceback (most recent call last):\n", b"  File \"t.py\", line 9\nValueError\n") == b""
    relay.finish(failed=True)
    assert capfdbinary.readouterr().err == b""  # the summary shows the cause instead


def test_a_line_of_a_converted_notebook_maps_to_its_cell():
    script = notebook.to_script("nb.ipynb", json.dumps(NOTEBOOK).encode())
    converted = convert(script.code.encode(), Options()).code
    lines = converted.splitlines()
    assert script.locate_converted(converted, lines.index("            raise ValueError('the data of rank 1 "
                                                          "is bad')") + 1) == (3, 7)
    assert script.locate_converted(converted, lines.index('init_distributed_mode(backend="gloo")') + 1) == (2, 3)  # added
    assert script.locate_converted(converted, next(i for i, line in enumerate(lines, 1)
                                                    if line.startswith("model = DistributedDataParallel"))) == (2, 5)


# ---- signals (no torch: a process group standing in for torchrun and its workers) --------------

CHILDREN = textwrap.dedent('''\
    import subprocess, sys, time
    from pathlib import Path
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(sys.argv[1]).write_text(str(worker.pid))
    time.sleep(600)
    ''')
RUN_JOB = "import sys; from ddpify.run import launch; sys.exit(launch.run_job(sys.argv[1:]).code)"


def _default_signals():
    """The job's own signal dispositions: a suite run under `nohup` ignores SIGHUP, which the
    job's processes would inherit (an ignored signal stays ignored across exec)."""
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_signals_reach_the_whole_job_and_leave_no_process(tmp_path, signum):
    pid_file = tmp_path / "worker.pid"
    proc = subprocess.Popen([sys.executable, "-c", RUN_JOB, sys.executable, "-c", CHILDREN, str(pid_file)],
                            cwd=Path(__file__).parents[1], start_new_session=True, preexec_fn=_default_signals)
    try:
        assert wait_for(pid_file.exists, timeout=30)
        worker = int(pid_file.read_text())
        proc.send_signal(signum)  # to ddpify only, as a closing terminal does
        assert proc.wait(timeout=30) == 128 + signum
        assert wait_for(lambda: not alive(worker), timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _sighup_ignored():
    _default_signals()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as `nohup ddpify run ...` starts it


def test_a_signal_ignored_at_start_stays_ignored_by_the_whole_job(tmp_path):
    pid_file = tmp_path / "worker.pid"
    proc = subprocess.Popen([sys.executable, "-c", RUN_JOB, sys.executable, "-c", CHILDREN, str(pid_file)],
                            cwd=Path(__file__).parents[1], start_new_session=True, preexec_fn=_sighup_ignored)
    try:
        assert wait_for(pid_file.exists, timeout=30)
        worker = int(pid_file.read_text())
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert proc.poll() is None and alive(worker)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        assert wait_for(lambda: not alive(worker), timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


STUBBORN = textwrap.dedent('''\
    import signal, subprocess, sys, time
    from pathlib import Path
    for signum in (signal.SIGHUP, signal.SIGTERM):  # a launcher that does not stop
        signal.signal(signum, signal.SIG_IGN)
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    Path(sys.argv[1]).write_text(str(worker.pid))  # in a session of its own, as torchrun starts workers
    time.sleep(600)
    ''')


def test_the_third_signal_kills_the_whole_job_workers_in_their_own_sessions_too(tmp_path):
    pid_file = tmp_path / "worker.pid"
    proc = subprocess.Popen([sys.executable, "-c", RUN_JOB, sys.executable, "-c", STUBBORN, str(pid_file)],
                            cwd=Path(__file__).parents[1], start_new_session=True, preexec_fn=_default_signals)
    try:
        assert wait_for(pid_file.exists, timeout=30)
        worker = int(pid_file.read_text())
        for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGTERM):
            proc.send_signal(signum)
            time.sleep(0.5)
        assert proc.wait(timeout=30) == 128 + signal.SIGHUP
        assert wait_for(lambda: not alive(worker), timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_run_job_returns_the_exit_code():
    assert launch.run_job([sys.executable, "-c", "raise SystemExit(5)"]) == launch.Finished(5)
    assert launch.run_job([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"]) == launch.Finished(137)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


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


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


SIBLING = textwrap.dedent('''\
    import os
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from helper import scale

    values = [float(v) for v in open("data/values.txt").read().split()]  # relative to the working directory
    loader = DataLoader(TensorDataset(torch.tensor(values).view(-1, 1)), batch_size=2, shuffle=True)
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=scale(0.1))
    for epoch in range(2):
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    print("done", os.environ["OMP_NUM_THREADS"])
    ''')


@pytest.mark.slow
def test_two_runs_of_one_script_at_once_each_have_their_own_folder(tmp_path):
    """Both succeed; the one with --keep keeps its folder, the other leaves nothing. Also: a `torch.py` in the working directory is not imported (torchrun's interpreter does
    not put it on sys.path); the script's sibling module imports, relative paths read from the
    working directory; a `NAME.ddpify.py` of the user's (the file name older versions wrote,
    with `ddpify_runtime` in it) is neither read, overwritten nor deleted; no OMP_NUM_THREADS
    notice from torchrun; the warnings come before the launch."""
    job, tmp = tmp_path / "job", tmp_path / "tmp"
    (job / "src").mkdir(parents=True)
    (job / "data").mkdir()
    tmp.mkdir()
    (job / "src" / "train.py").write_text(SIBLING)
    (job / "src" / "helper.py").write_text("def scale(x):\n    return x / 10\n")
    (job / "src" / "train.ddpify.py").write_text("# kept by hand: from ddpify_runtime import barrier\n")
    (job / "data" / "values.txt").write_text("1 2 3 4 5 6 7 8\n")
    (job / "torch.py").write_text("raise SystemExit('the torch.py of the working directory was imported')\n")
    before = {p: digest(p) for p in job.rglob("*") if p.is_file()}
    env = clean_env(TMPDIR=str(tmp))
    del env["OMP_NUM_THREADS"]
    runs = [subprocess.Popen([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "1", *keep, "src/train.py"],
                             cwd=job, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for keep in (["--keep"], [])]
    outputs = [run.communicate(timeout=180) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 0, err
        assert out == f"done {len(os.sched_getaffinity(0))}\n"  # one process: all the cores
        lines = err.splitlines()
        assert lines[0].startswith("src/train.py:8: warning: [shard-data]") and \
            lines[2].startswith("src/train.py: converted -> ")
        assert "OMP_NUM_THREADS" not in err
    kept, removed = (Path(err.splitlines()[2].split(" -> ")[1]) for _, err in outputs)
    assert kept.parent != removed.parent, "each run has its own folder"
    assert outputs[0][1].splitlines()[-1] == f"kept {kept.parent} (the converted script: {kept})"
    assert "ddpify_runtime" in kept.read_text() and runs_left(tmp) == [kept.parent.name]
    assert {p: digest(p) for p in job.rglob("*") if p.is_file()} == before


NOTEBOOK = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
    {"cell_type": "markdown", "metadata": {}, "source": ["# A notebook that fails on one process\n"]},
    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": [
        "import os\n", "import torch\n", "from torch.utils.data import DataLoader, TensorDataset\n",
        "loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=4, shuffle=True)\n",
        "model = torch.nn.Linear(4, 1)\n", "opt = torch.optim.SGD(model.parameters(), lr=0.1)"]},
    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": [
        "for epoch in range(2):\n", "    for step, (x,) in enumerate(loader):\n", "        opt.zero_grad()\n",
        "        model(x).sum().backward()\n", "        opt.step()\n",
        "        if step == 3 and os.environ['RANK'] == '1':\n",
        "            raise ValueError('the data of rank 1 is bad')"]},
]}


@pytest.mark.slow
def test_a_failing_notebook_shows_the_first_failure_by_cell_and_keeps_the_file(tmp_path):
    job, tmp = tmp_path / "job", tmp_path / "tmp"
    job.mkdir()
    tmp.mkdir()
    (job / "train.ipynb").write_text(json.dumps(NOTEBOOK))
    proc = ddpify_run(["--nproc-per-node", "2", "train.ipynb"], job, clean_env(TMPDIR=str(tmp)))
    assert proc.returncode == 1, proc.stderr  # torchrun's code for a failed worker
    lines = proc.stderr.splitlines()
    start = lines.index("Traceback (most recent call last):")
    failure = lines[start:]
    assert len(failure) <= 30, proc.stderr
    assert failure[-2] == "ValueError: the data of rank 1 is bad"
    assert any(line.endswith(", in <module> (train.ipynb: cell 3, line 7)") for line in failure), failure
    (folder,) = tmp.glob("ddpify-run-*")
    assert failure[-1] == (f"ddpify run: rank 1 failed first, exit code 1; the job exits 1. Kept: the converted "
                           f"script {folder / 'train.ipynb.py'}, every process's output under {folder / 'logs'}")
    assert (folder / "train.ipynb.py").is_file()
    for noise in ("Connection closed", "ChildFailedError", "torch.distributed.elastic", "[rank0]"):
        assert noise not in proc.stderr, noise
    assert os.listdir(job) == ["train.ipynb"]


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


@pytest.mark.slow
def test_ctrl_c_is_one_line_and_leaves_nothing(tmp_path):
    job, probe_dir, tmp = tmp_path / "job", tmp_path / "probe", tmp_path / "tmp"
    job.mkdir()
    tmp.mkdir()
    shutil.copy(FIXTURES / "notebook_train" / "train.ipynb", job / "train.ipynb")
    proc = subprocess.Popen([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "2", "train.ipynb"],
                            cwd=job, env=probe_env(probe_dir, NOTEBOOK_EPOCHS="100000", TMPDIR=str(tmp)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert wait_for(lambda: fetched(probe_dir), timeout=90), "training did not start"
        (folder,) = tmp.glob("ddpify-run-*")
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: to the foreground group
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    after = stderr.split(" -> ")[1].splitlines()[1:]  # what follows the line naming the converted file
    assert [line for line in after if not line.startswith(("ddpify: ", "ddpify run: starting "))] == [
        "ddpify run: stopped by SIGINT; torchrun and its processes have ended"], stderr  # but the notes
    assert runs_left(tmp) == [] and os.listdir(job) == ["train.ipynb"]
    assert wait_for(lambda: not job_processes(str(folder)), timeout=10), job_processes(str(folder))
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)


SBATCH = '#!/bin/bash\n# a stand-in for sbatch: runs the batch script now, as job 4242 on localhost\n' \
    'export SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=localhost\n' \
    'export SLURM_JOB_NUM_NODES=$(sed -n "s/^#SBATCH --nodes=//p" "$1")\n' \
    'echo "Submitted batch job 4242"\nexec bash "$1"\n'
SRUN = '#!/bin/bash\n# a stand-in for srun: one task per node, every "node" this machine\n' \
    'pids=()\nfor ((i = 0; i < SLURM_JOB_NUM_NODES; i++)); do\n' \
    '  SLURM_STEP_NUM_NODES=$SLURM_JOB_NUM_NODES SLURM_STEP_NUM_TASKS=$SLURM_JOB_NUM_NODES SLURM_NODEID=$i \\\n' \
    '    SLURM_PROCID=$i SLURM_LOCALID=0 SLURM_STEP_NODELIST=$SLURM_JOB_NODELIST "$@" &\n' \
    '  pids+=($!)\ndone\nrc=0\nfor pid in "${pids[@]}"; do wait "$pid" || rc=$?; done\nexit $rc\n'


@pytest.mark.slow
def test_the_sbatch_script_runs_two_nodes_under_slurm(tmp_path, monkeypatch):
    """Two `ddpify run` processes with only SLURM's variables (one per "node", both on this
    machine) find each other: global ranks 0 and 1, one per node, disjoint shards, and the
    self-check finds nothing (each node converts into a workspace of its own)."""
    job, probe_dir, bin_dir = tmp_path / "job", tmp_path / "probe", tmp_path / "bin"
    job.mkdir()
    bin_dir.mkdir()
    for name, text in (("sbatch", SBATCH), ("srun", SRUN)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    shutil.copy(FIXTURES / "explicit_sampler" / "before.py", job / "train.py")
    monkeypatch.chdir(job)
    printed = CliRunner().invoke(main, ["run", "--sbatch", "--nnodes", "2", "--nproc-per-node", "1", "train.py"])
    assert printed.exit_code == 0, printed.stderr
    (job / "job.sh").write_text(printed.stdout)
    env = probe_env(probe_dir, MASTER_PORT=str(free_port()), TMPDIR=str(tmp_path))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["sbatch", "job.sh"], cwd=job, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Submitted batch job 4242\n")
    assert "ddpify self-check" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    probe = Probe.read(probe_dir)
    init = probe.init()
    assert sorted(init) == [0, 1] and {e["world"] for e in init.values()} == {2}
    assert {r: (e["env"]["GROUP_RANK"], e["env"]["LOCAL_RANK"]) for r, e in init.items()} == \
        {0: ("0", "0"), 1: ("1", "0")}, "one node each"
    assert h.check_sharded_passes(probe, 2, probe.first_loader()) == []
    assert runs_left(tmp_path) == []


def test_a_failed_script_run_as_it_is_is_not_called_the_converted_script(tmp_path, monkeypatch):
    """An already-distributed script is launched as the user's own file: its failure keeps no
    "converted script" (issue 31 item 4)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(launch, "run_job", lambda *a, **k: launch.Finished(1))
    shutil.copy(FIXTURES / "already_ddp" / "before.py", "train.py")
    result = CliRunner().invoke(main, ["run", "--verbose", "--nproc-per-node", "1", "train.py"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert "ddpify run: launching train.py as it is" in lines
    assert lines[-1] == "ddpify run: the job failed (exit 1)."
    assert joblog.summary(joblog.Failure(1, 1, 1, ["KeyError: 2"]), 1, "", lambda f, n: None)[-1] == \
        "ddpify run: rank 1 failed first, exit code 1; the job exits 1."


def test_a_hang_names_the_rank_that_did_not_arrive_from_every_process_log(tmp_path):
    """The self-check's `ddpify hang:` lines of every rank, not local rank 0's echo of a closed
    connection (issue 31 item 3)."""
    _attempt(tmp_path, {}, {
        0: "step 1\n[rank0]: ddpify hang: rank 0 waits in barrier() at train.py:120 (597 s)\n"
           "ddpify hang: rank 0   train.py:120 in <module>\nRuntimeError: Connection closed by peer\n",
        1: "ddpify hang: rank 1 is at train.py:88\nddpify hang: rank 1   train.py:88 in <module>\n",
        2: "ddpify hang: rank 2 waits in barrier() at train.py:120 (598 s)\n"})
    report = joblog.hang_report(tmp_path)
    assert report == ["ddpify hang: rank 0 waits in barrier() at train.py:120 (597 s)",
                      "ddpify hang: rank 1 is at train.py:88",
                      "ddpify hang: rank 2 waits in barrier() at train.py:120 (598 s)"]
    assert joblog.hang_summary(report, 1, "Kept: /ws")[-1] == \
        "ddpify run: the job hung: rank 1 never reached the collective the others waited in; the job exits 1. Kept: /ws"
    assert joblog.hang_report(tmp_path / "none") == []
    _attempt(tmp_path / "fails", {}, {0: "Traceback (most recent call last):\nValueError: boom\n"})
    assert joblog.hang_report(tmp_path / "fails") == []


def test_a_quiet_job_is_said_to_be_running_once_per_quiet_stretch(tmp_path, capfdbinary, monkeypatch):
    """After SILENT_S seconds without a byte from rank 0, one line (issue 31 item 3)."""
    relay = joblog.Relay(tmp_path)
    folder = tmp_path / "run_x" / "attempt_0" / "0"
    folder.mkdir(parents=True)
    clock = [1000.0]
    monkeypatch.setattr(joblog.time, "monotonic", lambda: clock[0])
    relay.last_output = clock[0]
    clock[0] += joblog.SILENT_S - 1
    relay.pump()
    assert capfdbinary.readouterr().err == b"" and not relay.stalled
    clock[0] += 2
    relay.pump()
    relay.pump()  # once
    assert capfdbinary.readouterr().err == (f"ddpify run: no output for {joblog.SILENT_S + 1:.0f} s; the job is "
                                            f"still running (every process's output: {tmp_path})\n").encode()
    assert relay.stalled
    (folder / "stdout.log").write_bytes(b"step 9\n")
    relay.pump()
    assert capfdbinary.readouterr().out == b"step 9\n" and not relay.stalled


def test_a_job_stopped_while_quiet_keeps_its_logs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(joblog, "SILENT_S", 0.0)
    monkeypatch.setattr(launch, "run_job", lambda *a, **k: (time.sleep(0.5), launch.Finished(130, signal.SIGINT))[1])
    shutil.copy(FIXTURES / "explicit_sampler" / "before.py", "train.py")
    result = CliRunner().invoke(main, ["run", "--nproc-per-node", "1", "train.py"])
    (folder,) = tmp_path.glob("ddpify-run-*")
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == ("ddpify run: stopped by SIGINT; torchrun and its processes have ended; "
                                              f"kept its logs: {folder / 'logs'}")


def test_the_self_checks_findings_are_repeated_at_the_end(tmp_path, monkeypatch):
    """The job's DDPIFY_VERIFY_JSON is a file in the run's folder; its findings come again
    before the failure's last line, where the block printed mid-training has scrolled away
    (issue 31 item 3)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.delenv("DDPIFY_VERIFY_JSON", raising=False)
    finding = {"check": "unsharded-loader", "file": "train.py", "line": 6, "message": "every process trains on "
               "all the data", "fix": "give it a DistributedSampler"}

    def job(command, env, *args, **kwargs):
        Path(env["DDPIFY_VERIFY_JSON"]).write_text(json.dumps([finding]))
        return launch.Finished(1)

    monkeypatch.setattr(launch, "run_job", job)
    shutil.copy(FIXTURES / "explicit_sampler" / "before.py", "train.py")
    result = CliRunner().invoke(main, ["run", "--verbose", "--nproc-per-node", "1", "train.py"])
    (folder,) = tmp_path.glob("ddpify-run-*")
    assert result.stderr.splitlines()[-3:] == [
        "ddpify run: the self-check found 1 problem(s) during the job:",
        "  train.py:6: unsharded-loader: every process trains on all the data; give it a DistributedSampler",
        f"ddpify run: the job failed (exit 1). Kept: the converted script {folder / 'train.py'}"]
    assert joblog.self_check_lines(tmp_path / "none.json") == []
