"""The command line: exit codes, the stdout/stderr split, inputs and outputs, bad input."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import pty
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

import ddpify.cli
import ddpify.convert
import ddpify.rewrites
from ddpify.inputs import files as input_files
from ddpify.cli import main, unified_diff
from ddpify.convert import Result
from ddpify.run.launch import default_nproc
from ddpify.rewrites import NAMES, REWRITES

from tests.support.env import FIXTURES
from tests.support.goldens import assert_golden

TRAIN = textwrap.dedent('''\
    import argparse

    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, default=2)
        args = parser.parse_args()
        ds = TensorDataset(torch.randn(16, 2), torch.randn(16, 1))
        loader = DataLoader(ds, batch_size=4, shuffle=True)
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(args.epochs):
            for x, y in loader:
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
        torch.save(model.state_dict(), "m.pt")


    if __name__ == "__main__":
        main()
    ''')

DISTRIBUTED = textwrap.dedent('''\
    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("gloo")
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(4, 2)).sum().backward()
        opt.step()


    if __name__ == "__main__":
        main()
    ''')

INFERENCE = textwrap.dedent('''\
    import torch

    model = torch.nn.Linear(2, 1)
    model.load_state_dict(torch.load("m.pt"))
    with torch.no_grad():
        print(model(torch.randn(4, 2)))
    ''')

HELPER = "def double(x):\n    return 2 * x\n"
BROKEN = "def f(:\n    pass\n"
INIT_CALL = '\n    init_distributed_mode(backend="gloo")\n'  # the inserted line (messages name the function too)
RUN_HINT = f"run it: torchrun --standalone --nproc_per_node={default_nproc()}"  # a number without a GPU


def converted(source: str | bytes = TRAIN, **options) -> bytes:
    """``source`` as the library converts it under ``options``: what every command writes
    (fixtures/outputs/cli_train.py pins TRAIN's)."""
    return ddpify.convert.convert(source, ddpify.convert.Options(**options)).output


def diff_of(source: str = TRAIN, **options) -> str:
    """The diff `ddpify diff` prints for ``train.py`` holding ``source``."""
    return "".join(unified_diff("train.py", ddpify.convert.convert(source, ddpify.convert.Options(**options))))


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch) -> None:
    """Every test runs in its own empty directory, so messages show short relative names."""
    monkeypatch.chdir(tmp_path)


def cli(*args: str, input: bytes | str | None = None, code: int = 0):
    """Run the command line in-process and check its exit code."""
    result = CliRunner().invoke(main, list(args), input=input)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def write(path: str, text: str | bytes, mode: int | None = None) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    if mode is not None:
        p.chmod(mode)
    return p


def files(root: str = ".") -> list[str]:
    """Every file under root, relative, sorted."""
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file())


def run_python(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120, **kw)


# ---- help, version, rewrites ------------------------------------------------------------------

def test_help_explains_with_examples():
    out = cli("--help").stdout
    for example in ("ddpify diff train.py", "ddpify convert train.py -o train_ddp.py",
                    "torchrun --nproc_per_node=4 train_ddp.py"):
        assert example in out
    assert "--in-place" in cli("convert", "--help").stdout


def test_version():
    assert cli("--version").stdout.strip() == f"ddpify, version {ddpify.__version__}"


def test_list_rewrites_names_every_rewrite_with_its_summary():
    out = cli("--list-rewrites").stdout
    assert out == cli("rewrites").stdout
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == [r.name for r in REWRITES]
    assert {line.split()[0] for line in lines} == NAMES
    for line, rewrite in zip(lines, REWRITES):
        assert line.endswith(rewrite.summary)


def test_rewrites_shows_the_description_of_a_named_rewrite():
    rewrite = REWRITES[1]
    out = cli("rewrites", rewrite.name).stdout
    assert out.startswith(f"{rewrite.name}: {rewrite.summary}")
    assert rewrite.doc.strip() in out
    assert "valid names" in cli("rewrites", "no-such-rewrite", code=2).stderr


# ---- convert: where the code goes -------------------------------------------------------------

def test_single_file_without_output_prints_code_on_stdout_and_messages_on_stderr(request):
    write("train.py", TRAIN)
    result = cli("convert", "train.py")
    assert_golden("cli_train.py", result.stdout, request)
    assert result.stdout_bytes == converted()
    assert "train.py:" in result.stderr and "[init-distributed]" in result.stderr
    assert INIT_CALL not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("train.py: ")  # the summary
    assert Path("train.py").read_text() == TRAIN
    assert files() == ["train.py"]


def test_stdin_to_stdout():
    result = cli("convert", "-", input=TRAIN)
    assert result.stdout_bytes == ddpify.convert.convert(TRAIN.encode()).output
    assert "<stdin>: " in result.stderr and INIT_CALL not in result.stderr
    assert cli("diff", "-", input=TRAIN).stdout.startswith("--- a/<stdin>\n+++ b/<stdin>\n")


def test_stdin_to_output_file():
    cli("convert", "-", "-o", "out.py", input=TRAIN)
    assert Path("out.py").read_bytes() == converted()


def test_output_file_gets_the_code_and_a_run_hint():
    write("train.py", TRAIN)
    result = cli("convert", "train.py", "-o", "train_ddp.py")
    assert result.stdout == ""
    assert Path("train_ddp.py").read_bytes() == converted()
    assert f"{RUN_HINT} train_ddp.py" in result.stderr
    assert "or: python train_ddp.py (one process)" in result.stderr
    assert Path("train.py").read_text() == TRAIN


def test_the_run_hint_puts_the_scripts_arguments_after_a_dash_where_torchrun_would_take_one_for_its_own():
    """traffic_gru/traffic_lstm (14a, decision 0108): the script's `--e` is an abbreviation of torchrun's
    `--event-log-handler`, so `torchrun ... train_ddp.py --e 3` stops before any process starts. The
    run line ends with `--` there (torchrun hands what follows to the script), and says why; not for
    a script whose options torchrun leaves alone."""
    write("train.py", TRAIN.replace('add_argument("--epochs"', 'add_argument("--e", "--epochs", dest="epochs"'))
    result = cli("convert", "train.py", "-o", "train_ddp.py")
    assert f"{RUN_HINT} train_ddp.py --\n" in result.stderr
    assert "or: python train_ddp.py (one process)\n" in result.stderr
    assert "the script's arguments go after `--` under torchrun, which would take `--e` for its own" in result.stderr
    write("plain.py", TRAIN)
    plain = cli("convert", "plain.py", "-o", "plain_ddp.py")
    assert f"{RUN_HINT} plain_ddp.py\n" in plain.stderr and "after `--`" not in plain.stderr


def test_converting_the_output_again_changes_nothing():
    write("train.py", TRAIN)
    cli("convert", "train.py", "-o", "once.py")
    result = cli("convert", "once.py", "-o", "twice.py")
    assert Path("twice.py").read_bytes() == Path("once.py").read_bytes()
    assert "already converted" in result.stderr and RUN_HINT not in result.stderr
    cli("convert", "--check", "once.py", code=0)


@pytest.mark.parametrize("script, why", [(DISTRIBUTED, "already distributed"),
                                         (INFERENCE, "no training loop")])
def test_scripts_to_leave_alone_are_unchanged_with_a_message(script, why):
    write("script.py", script)
    result = cli("convert", "script.py")
    assert result.stdout == script
    assert why in result.stderr and "script.py: unchanged" in result.stderr
    cli("convert", "--check", "script.py", code=0)
    assert cli("diff", "script.py").stdout == ""


def test_directory_is_mirrored_under_output_dir():
    write("src/train.py", TRAIN)
    write("src/sub/helper.py", HELPER)
    write("src/sub/notes.txt", "not python")
    write("src/.hidden/skip.py", TRAIN)
    write("src/__pycache__/skip.py", TRAIN)
    write("src/.venv/skip.py", TRAIN)
    result = cli("convert", "src", "-o", "out")
    assert files("out") == ["sub/helper.py", "train.py"]
    assert Path("out/train.py").read_bytes() == converted()
    assert Path("out/sub/helper.py").read_text() == HELPER  # copied, so the tree still imports
    assert result.stderr.index("src/sub/helper.py") < result.stderr.index("src/train.py")  # sorted
    assert f"{RUN_HINT} out/train.py" in result.stderr
    assert "out/sub/helper.py" not in result.stderr


def test_an_output_dir_inside_the_input_dir_is_not_converted_again():
    write("train.py", TRAIN)
    cli("convert", ".", "-o", "out")
    cli("convert", ".", "-o", "out")
    assert files() == ["out/train.py", "train.py"]


def test_several_files_keep_their_paths_relative_to_their_common_directory():
    write("a/train.py", TRAIN)
    write("b/train.py", TRAIN)
    Path("out").mkdir()
    cli("convert", "a/train.py", "b/train.py", "-o", "out")
    assert files("out") == ["a/train.py", "b/train.py"]


def test_parallel_jobs_use_a_process_pool_and_give_the_same_outputs(monkeypatch):
    pools = []

    class Pool(ProcessPoolExecutor):
        def __init__(self, max_workers, **kwargs):
            pools.append(max_workers)
            super().__init__(max_workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Pool)
    for i in range(3):
        write(f"src/train{i}.py", TRAIN)
    write("src/helper.py", HELPER)
    cli("convert", "src", "-o", "one", "-j", "1")
    cli("convert", "src", "-o", "two", "-j", "2")
    cli("convert", "src", "-o", "all", "-j", "0")
    all_cores = [min(os.cpu_count(), 4)] if os.cpu_count() > 1 else []  # one core: no pool
    assert pools == [2, *all_cores]
    for name in files("one"):
        assert Path("two", name).read_bytes() == Path("one", name).read_bytes()
        assert Path("all", name).read_bytes() == Path("one", name).read_bytes()


SLOW_WORKERS = """
import os, sys, time
from ddpify.cli import engine, main

def stuck(*args, **kwargs):  # a file that takes forever: the worker reports itself and waits
    with open(f"worker.{os.getpid()}", "w"):
        pass
    time.sleep(600)

engine.convert_one = stuck
sys.argv = ["ddpify", "convert", "a.py", "b.py", "-j", "2", "-o", "out"]
main()
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_of_convert_jobs_exit_when_the_main_process_is_killed(sig):
    write("a.py", TRAIN)
    write("b.py", TRAIN)
    job = subprocess.Popen([sys.executable, "-c", SLOW_WORKERS], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(workers := [int(p.suffix[1:]) for p in Path(".").glob("worker.*")]) < 2:
        assert job.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    job.send_signal(sig)
    job.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} outlive their parent"
        time.sleep(0.2)
    assert not Path("out").exists()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") < 0


def test_in_place_rewrites_changed_inputs_only():
    write("src/train.py", TRAIN)
    helper = write("src/helper.py", HELPER)
    os.utime(helper, (1, 1))
    result = cli("convert", "--in-place", "src")
    assert Path("src/train.py").read_bytes() == converted()
    assert helper.stat().st_mtime == 1  # untouched
    assert f"{RUN_HINT} src/train.py" in result.stderr
    assert files() == ["src/helper.py", "src/train.py"]


@pytest.mark.parametrize("args", [["--in-place", "-o", "out.py"], ["--in-place", "-"]])
def test_in_place_conflicts_are_usage_errors(args):
    write("train.py", TRAIN)
    cli("convert", "train.py", *args, code=2)
    assert files() == ["train.py"] and Path("train.py").read_text() == TRAIN


@pytest.mark.parametrize("args", [["a.py", "b.py"], ["src"], ["--json", "a.py"],
                                  ["--vendor-runtime", "a.py"]])
def test_what_cannot_go_to_stdout_is_a_usage_error(args):
    write("a.py", TRAIN)
    write("b.py", TRAIN)
    write("src/c.py", TRAIN)
    result = cli("convert", *args, code=2)
    assert result.stdout == "" and "Usage:" in result.stderr


# ---- --check, diff, --json, --only/--skip ------------------------------------------------------

def test_check_writes_nothing_and_exits_1_when_something_would_change():
    write("train.py", TRAIN)
    result = cli("convert", "--check", "train.py", "-o", "out.py", code=1)
    assert result.stdout == "" and "[init-distributed]" in result.stderr
    assert "1 of 1 file(s) would change" in result.stderr
    assert files() == ["train.py"]
    cli("convert", "--check", "--vendor-runtime", "train.py", code=1)
    assert files() == ["train.py"]


def test_strategy_fsdp_shards_instead_of_wrapping_and_a_bad_strategy_is_a_usage_error():
    write("train.py", TRAIN)
    assert cli("convert", "--strategy", "fsdp", "train.py").stdout_bytes == converted(strategy="fsdp") != converted()
    assert cli("convert", "train.py").stdout_bytes == converted()  # ddp stays the default
    assert cli("diff", "--strategy", "fsdp", "train.py").stdout == diff_of(strategy="fsdp")
    bad = cli("convert", "--strategy", "zero3", "train.py", code=2)
    assert "Invalid value for '--strategy'" in bad.stderr and bad.stdout == ""


def test_diff_prints_a_unified_diff_on_stdout_and_records_on_stderr():
    write("train.py", TRAIN)
    result = cli("diff", "train.py")
    assert result.stdout == diff_of() and result.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@ ")
    assert "[init-distributed]" in result.stderr and "[init-distributed]" not in result.stdout
    assert "\x1b[" not in result.stdout  # not a terminal: no colour
    assert files() == ["train.py"] and Path("train.py").read_text() == TRAIN
    cli("diff", "--check", "train.py", code=1)


def test_diff_marks_a_missing_final_newline():
    diff = "".join(unified_diff("t.py", Result(b"a = 1\nb = 2", b"a = 1\nb = 3\n")))
    assert diff.endswith("\n-b = 2\n\\ No newline at end of file\n+b = 3\n")


@pytest.mark.parametrize("command", [["convert", "--check"], ["diff"]])
def test_json_report_shape(command):
    write("train.py", TRAIN)
    write("helper.py", HELPER)
    result = cli(*command, "--json", "helper.py", "train.py", code=1 if "--check" in command else 0)
    report = json.loads(result.stdout)  # nothing but the JSON on stdout
    assert report["version"] == 1
    assert [(f["path"], f["changed"]) for f in report["files"]] == [("helper.py", False), ("train.py", True)]
    records = report["files"][1]["records"]
    assert records and all(set(r) == {"rewrite", "line", "message", "kind", "path"} for r in records)
    assert {r["path"] for r in records} == {"train.py"}
    assert {"launcher-arg", "init-distributed"} <= {r["rewrite"] for r in records}
    assert all(r["kind"] in ("change", "warning", "note") and isinstance(r["line"], int) for r in records)
    assert "[init-distributed]" not in result.stderr


def test_json_with_output_files():
    write("train.py", TRAIN)
    result = cli("convert", "--json", "train.py", "-o", "out.py")
    assert json.loads(result.stdout)["files"][0]["changed"] is True
    assert Path("out.py").read_bytes() == converted()


@pytest.mark.parametrize("args, options", [
    (["--only", "init-distributed"], {"only": {"init-distributed"}}),
    (["--skip", "launcher-arg"], {"skip": {"launcher-arg"}}),
    (["--only", "init-distributed,launcher-arg", "--skip", "launcher-arg"], {"only": {"init-distributed"}}),
])
def test_only_and_skip_select_rewrites(args, options):
    write("train.py", TRAIN)
    expected = converted(**{k: frozenset(v) for k, v in options.items()})
    assert cli("convert", *args, "train.py").stdout_bytes == expected != converted()


def test_only_accepts_repeats_and_commas():
    write("train.py", TRAIN)
    expected = converted(only=frozenset({"init-distributed", "launcher-arg"}))
    for args in (["--only", "init-distributed", "--only", "launcher-arg"],
                 ["--only", "launcher-arg,init-distributed"]):
        assert cli("convert", *args, "train.py").stdout_bytes == expected


@pytest.mark.parametrize("flag, option", [("--find-unused-parameters", "find_unused_parameters"),
                                          ("--sync-batchnorm", "sync_batchnorm")])
def test_engine_flags_reach_the_rewrites(flag, option):
    write("train.py", TRAIN)
    assert cli("diff", flag, "train.py").stdout == diff_of(**{option: True})
    assert cli("convert", flag, "train.py").stdout_bytes == converted(**{option: True}) != converted()


@pytest.mark.parametrize("command", ["convert", "diff"])
def test_no_shard_eval_keeps_evaluation_whole(command):
    before = (FIXTURES / "canonical" / "before.py").read_text()
    write("train.py", before)
    written = {"convert": lambda **options: converted(before, **options).decode(),
               "diff": lambda **options: diff_of(before, **options)}[command]
    assert cli(command, "train.py").stdout == written()
    kept = cli(command, "--no-shard-eval", "train.py")
    assert kept.stdout == written(skip=frozenset({"shard-eval"})) != written()
    assert "[shard-eval]" not in kept.stderr
    assert "wrapped in DistributedDataParallel" in kept.stderr  # the other rewrites still run


@pytest.mark.parametrize("option", ["--only", "--skip"])
def test_unknown_rewrite_names_are_a_usage_error_listing_the_valid_ones(option):
    write("train.py", TRAIN)
    result = cli("convert", option, "init-distributed,wrap-modle", "train.py", code=2)
    assert "wrap-modle" in result.stderr
    assert all(name in result.stderr for name in NAMES)
    assert result.stdout == ""


# ---- bad input: one line, exit 2, nothing written --------------------------------------------

def assert_one_line(stderr: str, pattern: str) -> None:
    assert len(stderr.splitlines()) == 1, stderr
    assert re.fullmatch(pattern, stderr.strip()), stderr


def test_syntax_error_is_one_line_and_writes_nothing():
    write("bad.py", BROKEN)
    result = cli("convert", "bad.py", "-o", "out.py", code=2)
    assert_one_line(result.stderr, r"bad\.py:\d+:\d+: cannot parse: .+")
    assert result.stdout == "" and files() == ["bad.py"]


@pytest.mark.parametrize("source, where, message", [
    ("def f(:\n    pass\n", "1:7", "invalid syntax"),
    ("x = (1,\ny = 2\n", "1:5", "'(' was never closed"),
])
def test_syntax_error_is_located_where_python_locates_it(source, where, message):
    write("bad.py", source)
    assert cli("diff", "bad.py", code=2).stderr.strip() == f"bad.py:{where}: cannot parse: {message}"


def test_one_unparsable_input_means_nothing_is_written():
    write("src/a.py", TRAIN)
    write("src/b.py", BROKEN)
    write("src/c.py", TRAIN)
    result = cli("convert", "src", "-o", "out", code=2)
    assert_one_line(result.stderr, r"src/b\.py:\d+:\d+: cannot parse: .+")
    assert not Path("out").exists()
    cli("convert", "--in-place", "src", code=2)
    assert Path("src/a.py").read_text() == TRAIN


def test_undecodable_bytes_are_an_input_error():
    write("latin.py", b'x = "caf\xe9"\n')  # latin-1 bytes without a coding cookie
    assert_one_line(cli("convert", "latin.py", code=2).stderr, r"latin\.py:1:\d+: cannot parse: .+")


@pytest.mark.parametrize("existing, args, pattern", [
    ([], ["missing.py"], r"missing\.py: no such file or directory"),
    (["train.py"], ["-", "train.py", "-o", "out"],
     r"'-' \(standard input\) cannot be combined with other inputs"),
    (["empty/notes.txt"], ["empty", "-o", "out"], r"empty: no \.py files in this directory"),
    (["train.py"], ["train.py", "-o", "train.py"],
     r"train\.py: -o would overwrite this input; use --in-place to rewrite inputs"),
    (["train.py"], ["train.py", "-o", "."], r"train\.py: -o would overwrite .+"),
    (["train.py"], ["train.py", "-o", "missing/out.py"], r"-o missing/out\.py: directory .+ does not exist"),
    (["src/train.py"], ["src", "-o", "missing/out"], r"-o missing/out: directory .+ does not exist"),
    (["src/train.py", "out"], ["src", "-o", "out"], r"-o out: not a directory .+"),
])
def test_bad_paths_are_one_line_and_write_nothing(existing, args, pattern):
    for name in existing:
        write(name, TRAIN)
    before = {name: Path(name).read_bytes() for name in files()}
    result = cli("convert", *args, code=2)
    assert_one_line(result.stderr, pattern)
    assert result.stdout == ""
    assert {name: Path(name).read_bytes() for name in files()} == before


def test_unreadable_file_is_an_input_error(monkeypatch):
    def deny(path, *args):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(input_files, "open", deny, raising=False)  # also as root, who may read anything
    write("train.py", TRAIN)
    assert_one_line(cli("convert", "train.py", code=2).stderr, r"train\.py: cannot read: .+")


# ---- writing: atomic, permissions, bytes exact -------------------------------------------------

def test_writes_leave_no_temporary_files():
    write("src/train.py", TRAIN)
    write("src/sub/helper.py", HELPER)
    Path("out").mkdir()
    cli("convert", "src", "-o", "out")
    assert files() == ["out/sub/helper.py", "out/train.py", "src/sub/helper.py", "src/train.py"]


def test_an_interrupted_write_keeps_the_old_file_and_leaves_no_temporary(monkeypatch):
    write("train.py", TRAIN)
    write("out.py", "old")

    def replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)
    result = cli("convert", "train.py", "-o", "out.py", code=2)
    assert_one_line(result.stderr, r"out\.py: cannot write: No space left on device")
    assert Path("out.py").read_text() == "old"
    assert files() == ["out.py", "train.py"]


def test_output_keeps_the_input_permission_bits():
    write("train.py", TRAIN, mode=0o750)
    cli("convert", "train.py", "-o", "out.py")
    assert stat.S_IMODE(Path("out.py").stat().st_mode) == 0o750
    cli("convert", "--in-place", "train.py")
    assert stat.S_IMODE(Path("train.py").stat().st_mode) == 0o750


@pytest.mark.parametrize("prefix, newline", [
    (b"\xef\xbb\xbf", b"\r\n"),                                   # BOM and CRLF
    (b"# -*- coding: latin-1 -*-\n# caf\xe9\n", b"\n"),            # latin-1 cookie, a non-UTF-8 byte
    (b"# -*- coding: latin-1 -*-\r\n# caf\xe9\r\n", b"\r\n"),
])
def test_encoding_bom_and_line_endings_are_kept(prefix, newline):
    write("train.py", prefix + TRAIN.encode().replace(b"\n", newline))
    cli("convert", "train.py", "-o", "out.py")
    out = Path("out.py").read_bytes()
    assert out.startswith(prefix)
    assert out == converted(prefix + TRAIN.encode().replace(b"\n", newline))
    if newline == b"\r\n":
        assert out.count(b"\n") == out.count(b"\r\n")
    else:
        assert b"\r" not in out
    stdout = cli("convert", "train.py").stdout_bytes
    assert stdout == out


# ---- internal errors: 123 ---------------------------------------------------------------------

def broken_rewrites(monkeypatch, apply) -> str:
    """Make the first rewrite run `apply`; its name."""
    rewrite = dataclasses.replace(ddpify.rewrites.REWRITES[0], apply=apply)
    monkeypatch.setattr(ddpify.rewrites, "REWRITES", (rewrite, *ddpify.rewrites.REWRITES[1:]))
    return rewrite.name


def test_a_crashing_rewrite_is_exit_123_one_line_and_writes_nothing(monkeypatch):
    def crash(analysis, edits, options):
        raise KeyError("boom")

    name = broken_rewrites(monkeypatch, crash)
    write("train.py", TRAIN)
    result = cli("convert", "train.py", "-o", "out.py", code=123)
    assert_one_line(result.stderr, rf"train\.py: internal error in rewrite {name}: KeyError: 'boom' "
                                   r"\(rerun with --verbose for the traceback\)")
    assert files() == ["train.py"]
    verbose = cli("convert", "-v", "train.py", "-o", "out.py", code=123).stderr
    assert "Traceback (most recent call last)" in verbose and 'raise KeyError("boom")' in verbose
    assert verbose.splitlines()[-1] == f"train.py: internal error in rewrite {name}: KeyError: 'boom'"


def test_a_rewrite_whose_output_does_not_compile_is_named(monkeypatch):
    def emit_return(analysis, edits, options):
        edits.insert_after(analysis.facts.module.body[0], "return 1\n")  # parses, does not compile

    name = broken_rewrites(monkeypatch, emit_return)
    write("train.py", TRAIN)
    result = cli("diff", "train.py", code=123)
    assert_one_line(result.stderr,
                    rf"train\.py: internal error in rewrite {name}: output does not compile: .+")
    assert result.stdout == ""


def test_internal_error_beats_input_error_and_both_are_reported(monkeypatch):
    broken_rewrites(monkeypatch, lambda analysis, edits, options: 1 / 0)
    write("src/a.py", BROKEN)
    write("src/b.py", TRAIN)
    stderr = cli("convert", "src", "-o", "out", code=123).stderr
    assert "src/a.py:" in stderr and "src/b.py: internal error" in stderr
    assert not Path("out").exists()


def test_an_unexpected_error_outside_the_engine_is_123(monkeypatch):
    def fail(*args):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(input_files, "write_all_atomic", fail)
    write("train.py", TRAIN)
    result = cli("convert", "train.py", "-o", "out.py", code=123)
    assert_one_line(result.stderr,
                    r"ddpify: internal error: RuntimeError: disk on fire \(rerun with --verbose .+")
    assert "Traceback" in cli("convert", "--verbose", "train.py", "-o", "out.py", code=123).stderr


# ---- the runtime next to the output -----------------------------------------------------------

def test_vendor_runtime_copies_the_runtime_next_to_each_output():
    runtime = input_files.runtime_source()
    write("src/train.py", TRAIN)
    write("src/sub/train.py", TRAIN)
    write("src/tools/helper.py", HELPER)
    result = cli("convert", "--vendor-runtime", "src", "-o", "out")
    assert Path("out/ddpify_runtime.py").read_bytes() == runtime
    assert Path("out/sub/ddpify_runtime.py").read_bytes() == runtime
    assert not Path("out/tools/ddpify_runtime.py").exists()  # nothing there imports it
    assert "replaced" not in result.stderr

    older = runtime.split(b"\n", 1)[0] + b"\n# an older version\n"
    write("out/ddpify_runtime.py", older)
    result = cli("convert", "--vendor-runtime", "src/train.py", "-o", "out/train.py")
    assert Path("out/ddpify_runtime.py").read_bytes() == runtime
    assert "out/ddpify_runtime.py: replaced an older copy of the runtime" in result.stderr


# ---- the real process: python -m ddpify, no torch, colour --------------------------------------

def test_python_m_ddpify_runs_and_passes_the_exit_code():
    write("train.py", TRAIN)
    done = run_python("-m", "ddpify", "convert", "train.py", "-o", "out.py")
    assert done.returncode == 0, done.stderr
    assert Path("out.py").read_bytes() == converted() and RUN_HINT in done.stderr
    assert run_python("-m", "ddpify", "convert", "--check", "train.py").returncode == 1
    assert run_python("-m", "ddpify", "convert", "missing.py").returncode == 2


def test_the_command_line_never_imports_torch():
    write("train.py", TRAIN)
    code = textwrap.dedent('''\
        import sys
        import ddpify.cli
        assert "torch" not in sys.modules, "import ddpify.cli"
        for args in (["--help"], ["rewrites"], ["diff", "train.py"],
                     ["convert", "--vendor-runtime", "train.py", "-o", "out.py"]):
            try:
                ddpify.cli.main(args)
            except SystemExit as exc:
                assert exc.code == 0, (args, exc.code)
            assert "torch" not in sys.modules, args
        ''')
    done = run_python("-c", code)
    assert done.returncode == 0, done.stderr
    assert Path("ddpify_runtime.py").exists()


def diff_on_a_terminal(**env: str) -> bytes:
    """`ddpify diff train.py` with stdout on a pseudo-terminal; what it printed there."""
    leader, follower = pty.openpty()
    env = {**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, **env}
    proc = subprocess.Popen([sys.executable, "-m", "ddpify", "diff", "train.py"], stdout=follower,
                            stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks)


def test_diff_is_coloured_on_a_terminal_unless_no_color():
    write("train.py", TRAIN)
    coloured = diff_on_a_terminal()
    assert b'\x1b[32m+    init_distributed_mode(backend="gloo")' in coloured
    assert b"\x1b[36m@@ " in coloured
    plain = diff_on_a_terminal(NO_COLOR="1")
    assert b"\x1b[" not in plain and b'+    init_distributed_mode(backend="gloo")' in plain


def test_a_file_of_a_folder_that_runs_past_the_timeout_is_skipped_and_the_others_written(monkeypatch):
    convert_program = ddpify.convert.convert_program

    def slow_on_marker(program, options=None):  # a file whose analysis never ends
        if b"SLOW" in program.parts[0].data:
            time.sleep(60)
        return convert_program(program, options)

    monkeypatch.setattr(ddpify.convert, "convert_program", slow_on_marker)
    # a limit well above a real file's conversion: at 0.5 s, a.py itself ran past it on a loaded machine
    write("src/a.py", TRAIN)
    write("src/slow.py", "SLOW = 1\n" + TRAIN)
    write("src/z.py", TRAIN)
    started = time.monotonic()
    result = cli("convert", "src", "-o", "out", "--timeout", "5", code=2)
    assert time.monotonic() - started < 30
    assert files("out") == ["a.py", "z.py"] and Path("out/z.py").read_bytes() == converted()
    assert result.stderr.splitlines()[0] == ("src/slow.py: gave up after 5 s (the limit per file; --timeout SECONDS "
                                             "raises it); skipped, the other files are written")
    assert result.stderr.splitlines()[-1] == "1 file(s) skipped after running past --timeout 5 s"
    cli("convert", "src/slow.py", "-o", "one.py", "--timeout", "1", code=2)  # one file: nothing to go on with
    assert not Path("one.py").exists()


@pytest.mark.parametrize("output", ["src", "."])
def test_tree_output_that_is_or_holds_the_input_folder_is_refused_by_name(output):
    write("src/train.py", TRAIN)
    result = cli("convert", "src", "-o", output, code=2)
    assert result.stderr == (f"-o {output}: is the input directory src (or holds it); write elsewhere, "
                             "or use --in-place to rewrite inputs\n")
    assert files() == ["src/train.py"]


def test_the_documented_shell_completion_lines_print_a_completion_script():
    """docs/cli.md's lines, as written, for bash, zsh and fish (issue 31 item 12)."""
    docs = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    found = re.findall(r"_DDPIFY_COMPLETE=(\w+_source) ddpify", docs.split("## Shell completion")[1].split("\n## ")[0])
    assert sorted(set(found)) == ["bash_source", "fish_source", "zsh_source"]
    ddpify = Path(sys.executable).parent / "ddpify"  # the console script that pip installs
    starts = {"bash_source": "_ddpify_completion() {", "zsh_source": "#compdef ddpify",
              "fish_source": "function _ddpify_completion"}
    for shell in sorted(set(found)):
        out = subprocess.run([str(ddpify)], env={**os.environ, "_DDPIFY_COMPLETE": shell}, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.lstrip().startswith(starts[shell]), (shell, out.stderr)
