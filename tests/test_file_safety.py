"""What ddpify writes never costs the user a file: symlinks are written through, read-only files
and a user's own `ddpify_runtime.py` are left alone, two inputs never share an output, line
endings survive, and `check --fix` changes all its files or none."""

from __future__ import annotations

import errno
import os
import signal
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddpify.inputs import files as input_files
from ddpify.cli import main

from tests.support.env import FIXTURES

TRAIN = (FIXTURES / "mnist_style" / "before.py").read_bytes()
FIXABLE = (FIXTURES / "check" / "DDP001" / "trigger.py").read_bytes()
FIXED = (FIXTURES / "check" / "DDP001" / "fixed.py").read_bytes()


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)


def cli(*args: str, code: int = 0):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def files() -> list[str]:
    return sorted(str(p) for p in Path(".").rglob("*") if p.is_file() or p.is_symlink())


def converted(data: bytes) -> bytes:
    Path("scratch.py").write_bytes(data)
    cli("convert", "scratch.py", "-o", "scratch_out.py")
    out = Path("scratch_out.py").read_bytes()
    Path("scratch.py").unlink(), Path("scratch_out.py").unlink()
    return out


@pytest.mark.parametrize("command", [["convert", "--in-place"], ["check", "--fix"]])
def test_rewriting_through_a_symlink_writes_its_target_and_keeps_the_link(command):
    data = TRAIN if command[0] == "convert" else FIXABLE
    want = converted(TRAIN) if command[0] == "convert" else FIXED
    Path("real").mkdir()
    Path("real/train.py").write_bytes(data)
    Path("train.py").symlink_to("real/train.py")
    cli(*command, "train.py")
    assert Path("train.py").is_symlink() and os.readlink("train.py") == "real/train.py"
    assert Path("real/train.py").read_bytes() == want
    assert files() == ["real/train.py", "train.py"]


@pytest.mark.parametrize("command", [["convert", "--in-place"], ["check", "--fix"]])
def test_a_read_only_file_is_not_rewritten(command):
    Path("a.py").write_bytes(TRAIN if command[0] == "convert" else FIXABLE)
    Path("b.py").write_bytes(TRAIN if command[0] == "convert" else FIXABLE)
    Path("b.py").chmod(0o444)
    before = {p: Path(p).read_bytes() for p in files()}
    result = cli(*command, "a.py", "b.py", code=2)
    hint = "make it writable, or write elsewhere with -o" if command[0] == "convert" else "make it writable"
    assert result.stderr.endswith(f"b.py: is read-only; not rewritten ({hint})\n"), result.stderr  # check has no -o
    assert {p: Path(p).read_bytes() for p in files()} == before  # not even a.py: nothing half-done
    assert Path("b.py").stat().st_mode & 0o777 == 0o444


def test_two_inputs_with_one_output_are_refused():
    Path("x.py").write_bytes(TRAIN)
    Path("x_ddp.py").write_bytes(TRAIN)
    Path("x.ipynb").write_bytes((FIXTURES / "notebook_train" / "train.ipynb").read_bytes())
    Path("d").mkdir()
    # x.ipynb becomes x_ddp.py (a module x.py lies beside it), as does x_ddp.py
    result = cli("convert", "x_ddp.py", "x.ipynb", "-o", "d", code=2)
    assert result.stderr == "d/x_ddp.py: both x_ddp.py and x.ipynb would be written here; convert them separately\n"
    assert files() == ["x.ipynb", "x.py", "x_ddp.py"]


def test_a_script_and_the_notebook_of_the_same_name_are_written_side_by_side():
    Path("x.py").write_bytes(TRAIN)
    Path("x.ipynb").write_bytes((FIXTURES / "notebook_train" / "train.ipynb").read_bytes())
    Path("d").mkdir()
    cli("convert", "x.py", "x.ipynb", "-o", "d")
    assert files() == ["d/x.py", "d/x_ddp.py", "x.ipynb", "x.py"]


def test_vendor_runtime_never_replaces_a_users_own_module():
    Path("train.py").write_bytes(TRAIN)
    Path("out").mkdir()
    Path("out/ddpify_runtime.py").write_text("def is_main_process():\n    return True\n")
    result = cli("convert", "--vendor-runtime", "train.py", "-o", "out/train.py", code=2)
    assert result.stderr == ("out/ddpify_runtime.py: exists and is not ddpify's runtime: not replaced (move it "
                             "away, or convert without --vendor-runtime)\n")
    assert files() == ["out/ddpify_runtime.py", "train.py"]  # and the conversion was not written either
    assert Path("out/ddpify_runtime.py").read_text().startswith("def is_main_process")


@pytest.mark.parametrize("newline", [b"\r", b"\n", b"\r\n"])
def test_a_file_keeps_its_final_line_ending(newline):
    out = converted(TRAIN.replace(b"\n", newline))
    assert out.endswith(b"main()" + newline)
    assert (b"\n" in out) == (newline != b"\r") and (b"\r" in out) == (newline != b"\n")


def test_check_fix_writes_every_file_or_none(monkeypatch):
    for name in ("a.py", "b.py"):
        Path(name).write_bytes(FIXABLE)
    staged = []

    def stage_then_fail(path, data, mode):
        if staged:
            raise OSError(28, "No space left on device")
        staged.append(real_stage(path, data, mode))
        return staged[-1]

    real_stage = input_files._stage
    monkeypatch.setattr(input_files, "_stage", stage_then_fail)
    result = cli("check", "--fix", "a.py", "b.py", code=2)
    assert result.stderr.endswith("b.py: cannot write: No space left on device\n")
    assert files() == ["a.py", "b.py"] and Path("a.py").read_bytes() == FIXABLE  # a.py's staged copy removed
    monkeypatch.setattr(input_files, "_stage", real_stage)
    cli("check", "--fix", "a.py", "b.py")
    assert Path("a.py").read_bytes() == Path("b.py").read_bytes() == FIXED


PROJECT = FIXTURES / "project_trainer"


def test_a_programs_modules_are_written_through_symlinks_and_refused_read_only():
    """`convert --in-place train.py` rewrites the changed modules of its program too: with the
    same protections as the entry, and all of its files or none."""
    import shutil

    shutil.copytree(PROJECT / "before", "proj")
    Path("proj/trainer.py").rename("proj/trainer_real.py")
    Path("proj/trainer.py").symlink_to(Path("proj/trainer_real.py").resolve())
    Path("proj/data.py").chmod(0o444)
    before = {p: Path(p).read_bytes() for p in files()}
    result = cli("convert", "--in-place", "proj/train.py", code=2)
    assert result.stderr.endswith("data.py: is read-only; not rewritten (make it writable, or write elsewhere "
                                  "with -o)\n"), result.stderr
    assert {p: Path(p).read_bytes() for p in files()} == before  # not the entry, not trainer.py
    Path("proj/data.py").chmod(0o644)
    cli("convert", "--in-place", "proj/train.py")
    assert Path("proj/trainer.py").is_symlink()
    for rel in ("train.py", "data.py"):
        assert Path("proj", rel).read_bytes() == (PROJECT / "after" / rel).read_bytes()
    assert Path("proj/trainer_real.py").read_bytes() == (PROJECT / "after" / "trainer.py").read_bytes()


# ---- special files: devices and FIFOs are written into or refused, never replaced or read ------

def test_output_onto_a_device_writes_into_it_and_keeps_the_node():
    import stat
    Path("train.py").write_bytes(TRAIN)
    os.mknod("null.py", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of the test's own
    cli("convert", "train.py", "-o", "null.py")
    assert Path("null.py").is_char_device()


def test_output_onto_a_fifo_nobody_reads_is_refused_in_one_line():
    Path("train.py").write_bytes(TRAIN)
    os.mkfifo("out.py")
    result = cli("convert", "train.py", "-o", "out.py", code=2)
    assert result.stderr.strip().splitlines()[-1] == "out.py: cannot write: a FIFO that nobody reads"
    assert Path("out.py").is_fifo()


def test_fifos_and_link_loops_named_py_are_not_sources(tmp_path):
    import subprocess
    import sys
    Path("proj").mkdir()
    Path("proj/train.py").write_bytes(TRAIN)
    os.mkfifo("proj/pipe.py")  # opening it to read would wait for a writer forever
    Path("proj/loop.py").symlink_to("loop.py")
    for args in (["check", "proj"], ["convert", "proj", "-o", "out"], ["convert", "proj/train.py", "-o", "one.py"]):
        done = subprocess.run([sys.executable, "-m", "ddpify", *args], capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 1), (args, done.stderr)
        assert "internal error" not in done.stderr
    assert sorted(str(p) for p in Path("out").rglob("*.py")) == ["out/train.py"]


def test_a_closed_pipe_on_stdout_ends_quietly(tmp_path):
    import subprocess
    import sys
    Path("many").mkdir()
    for i in range(30):  # more diff than a pipe's buffer
        Path(f"many/t{i}.py").write_bytes(TRAIN)
    done = subprocess.run(f"{sys.executable} -m ddpify diff many | head -1", shell=True, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout == "--- a/many/t0.py\n"
    assert "Error" not in done.stderr and "internal error" not in done.stderr


# ---- a program's output folder: only ddpify's own files are overwritten --------------------------

PROJECT = FIXTURES / "project_trainer"


def project() -> None:
    import shutil
    shutil.copytree(PROJECT / "before", "proj")


def test_o_naming_a_module_of_the_program_is_refused():
    project()
    before = Path("proj/data.py").read_bytes()
    result = cli("convert", "proj/train.py", "-o", "proj/data.py", code=2)
    assert result.stderr.strip().splitlines()[-1] == ("proj/data.py: -o would overwrite a module of the program; "
                                                      "write it to another file or directory")
    assert Path("proj/data.py").read_bytes() == before


def test_a_file_ddpify_did_not_write_is_never_overwritten():
    project()
    Path("elsewhere").mkdir()
    Path("elsewhere/data.py").write_text("# the user's own data.py\n")
    result = cli("convert", "proj/train.py", "-o", "elsewhere/train_ddp.py", code=2)
    assert result.stderr.strip().splitlines()[-1] == (
        "elsewhere/data.py: exists and was not written by ddpify (or was edited since): not overwritten; "
        "convert train_ddp.py into a folder of its own (-o DIR/)")
    assert sorted(os.listdir("elsewhere")) == ["data.py"]


def test_converting_again_into_the_same_folder_overwrites_only_what_ddpify_wrote():
    project()
    cli("convert", "proj/train.py", "-o", "out/")
    cli("convert", "proj/train.py", "-o", "out/")  # the record says these are ddpify's
    assert Path("out/data.py").read_bytes() == (PROJECT / "after" / "data.py").read_bytes()
    Path("out/data.py").write_text("# edited by hand since\n")
    cli("convert", "proj/train.py", "-o", "out/", code=2)
    assert Path("out/data.py").read_text() == "# edited by hand since\n"


def test_a_second_entry_may_not_replace_a_shared_module_with_another_version():
    project()
    cli("convert", "proj/train.py", "-o", "out/")
    before = Path("out/data.py").read_bytes()
    Path("proj/other.py").write_text((PROJECT / "before" / "train.py").read_text())
    Path("proj/data.py").write_text(Path("proj/data.py").read_text() + "\nEXTRA = 1\n")  # another version now
    result = cli("convert", "proj/other.py", "-o", "out/", code=2)
    assert "out/data.py: the conversion of train.py wrote another version of this module" in result.stderr
    assert Path("out/data.py").read_bytes() == before


def test_what_an_earlier_conversion_wrote_and_this_one_does_not_is_removed_where_unchanged(tmp_path):
    from ddpify.inputs import written
    Path("out").mkdir()
    Path("out/old.py").write_bytes(b"converted once\n")
    Path("out/edited.py").write_bytes(b"edited since\n")
    record = {"entries": {"train.py": {"old.py": written.digest(b"converted once\n"),
                                       "edited.py": written.digest(b"converted once\n")}}}
    Path("out", written.RECORD).write_text(__import__("json").dumps(record))
    plan = written.plan(Path("out"), "train.py", {"data.py": b"new\n"})
    assert plan.stale == [Path("out/old.py")]  # the edited one is the user's now
    assert __import__("json").loads(plan.record[1]) == {"entries": {"train.py": {"data.py": written.digest(b"new\n")}}}


def full_disk_at(monkeypatch, name: str) -> None:
    """Staging `name`'s temporary file fails as on a full disk."""
    stage = input_files._stage

    def staged(path, data, mode):
        if path.name == name:
            raise OSError(errno.ENOSPC, "No space left on device")
        return stage(path, data, mode)

    monkeypatch.setattr(input_files, "_stage", staged)


def test_in_place_over_several_inputs_writes_all_or_none(monkeypatch):
    Path("a.py").write_bytes(TRAIN)
    Path("b.py").write_bytes(TRAIN)
    full_disk_at(monkeypatch, "b.py")
    result = cli("convert", "--in-place", "a.py", "b.py", code=2)
    assert result.stderr.strip().splitlines()[-1] == "b.py: cannot write: No space left on device"
    assert Path("a.py").read_bytes() == TRAIN and Path("b.py").read_bytes() == TRAIN
    assert files() == ["a.py", "b.py"]


def test_vendor_runtime_that_does_not_fit_leaves_the_sources_as_they_were(monkeypatch):
    Path("train.py").write_bytes(TRAIN)
    full_disk_at(monkeypatch, "ddpify_runtime.py")
    result = cli("convert", "--in-place", "--vendor-runtime", "train.py", code=2)
    assert result.stderr.strip().splitlines()[-1] == "ddpify_runtime.py: cannot write: No space left on device"
    assert Path("train.py").read_bytes() == TRAIN and files() == ["train.py"]


def test_a_rename_that_fails_midway_says_which_files_were_replaced(monkeypatch):
    Path("a.py").write_bytes(TRAIN)
    Path("b.py").write_bytes(TRAIN)
    replace = os.replace

    def failing(src, dst):
        if Path(dst).name == "b.py":
            raise OSError(errno.EIO, "Input/output error")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    result = cli("convert", "--in-place", "a.py", "b.py", code=2)
    assert result.stderr.strip().splitlines()[-1] == (
        "b.py: cannot write: Input/output error; already replaced: a.py, the other files are as they were")
    assert Path("b.py").read_bytes() == TRAIN and files() == ["a.py", "b.py"]


def test_in_place_through_a_linked_entry_converts_the_program_where_it_lives():
    project()
    Path("link").mkdir()
    Path("link/train.py").symlink_to("../proj/train.py")
    Path("link/data.py").write_text("# the user's own data.py beside the link\n")
    cli("convert", "--in-place", "link/train.py")
    assert Path("link/data.py").read_text() == "# the user's own data.py beside the link\n"
    assert sorted(os.listdir("link")) == ["data.py", "train.py"]
    for name in ("train.py", "data.py"):
        assert Path("proj", name).read_bytes() == (PROJECT / "after" / name).read_bytes()


def test_a_module_linked_from_outside_the_project_is_not_followed():
    project()
    Path("shared").mkdir()
    Path("proj/data.py").rename("shared/data.py")
    Path("proj/data.py").symlink_to("../shared/data.py")
    before = Path("shared/data.py").read_bytes()
    result = cli("convert", "--in-place", "proj/train.py")
    assert Path("shared/data.py").read_bytes() == before and Path("proj/data.py").is_symlink()
    assert "ddpify cannot trace to a DataLoader in the code it read" in result.stderr


def test_the_runtime_vendored_is_never_a_copy_in_the_current_folder(monkeypatch):
    Path("ddpify_runtime.py").write_text("# the user's own, or an old vendored copy\n")
    monkeypatch.syspath_prepend("")  # as `python -m ddpify` starts
    assert input_files.runtime_source().startswith(b'"""')
    Path("train.py").write_bytes(TRAIN)
    cli("convert", "--in-place", "--vendor-runtime", "train.py", code=2)
    assert Path("train.py").read_bytes() == TRAIN


def test_a_write_removes_the_temporary_files_of_killed_runs():
    Path("train.py").write_bytes(TRAIN)
    killed = Path(".train.py.0a1b2c3d.ddpify-tmp")
    killed.write_bytes(b"half")
    os.utime(killed, (1, 1))
    fresh = Path(".train.py.00000000.ddpify-tmp")  # another run's, staged moments ago
    fresh.write_bytes(b"staging")
    cli("convert", "--in-place", "train.py")
    assert files() == [".train.py.00000000.ddpify-tmp", "train.py"]


def test_ctrl_c_during_the_renames_lets_them_all_finish(monkeypatch):
    want = converted(TRAIN)
    Path("a.py").write_bytes(TRAIN)
    Path("b.py").write_bytes(TRAIN)
    replace = os.replace

    def interrupted(src, dst):
        # Ctrl-C after the first rename has begun, to the thread that runs the command: the only
        # thread of a `ddpify` process; here, where the test runner may have threads of its own
        # (pytest-xdist's worker), a signal to the whole process may land on one of those, which
        # does not hold SIGINT (2 runs of this file in 3 under pytest-xdist reached the rollback)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        replace(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    result = CliRunner().invoke(main, ["convert", "--in-place", "a.py", "b.py"])
    assert result.exit_code == 130  # the interrupt arrives, after the renames
    assert Path("a.py").read_bytes() == want and Path("b.py").read_bytes() == want
