"""A write killed by SIGKILL during its renames (issue 30 item 5): the journal it leaves lets the
next ddpify command on those files finish it, with one line saying what it found and did; a
live write's journal, a file edited since the kill and a journal cut short are left alone or
handled by name (ddpify.inputs.journal, ddpify.inputs.owner)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddpify.cli import main
from ddpify.inputs import files, journal, owner, written

from tests.support.env import FIXTURES, REPO, clean_env

TRAIN = (FIXTURES / "mnist_style" / "before.py").read_bytes()
PROJECT = FIXTURES / "project_trainer"
TREE = ["src/a.py", "src/b.py", "src/sub/c.py", "src/sub/d.py"]

# ddpify, SIGKILLed by a fault-injection point: before rename number AT (0: right after the
# journal is written), or with AT past the last rename, before the journal is removed
KILLED_AT = """\
import os, signal, sys
from ddpify.cli import main
from ddpify.inputs import journal
at, renamed, replace, end = int(sys.argv[1]), [], os.replace, journal.end
def rename(src, dst):
    if len(renamed) == at:
        os.kill(os.getpid(), signal.SIGKILL)
    renamed.append(dst)
    replace(src, dst)
def end_journal(paths):
    paths = list(paths)
    if paths and len(renamed) == at:
        os.kill(os.getpid(), signal.SIGKILL)
    end(paths)
os.replace, journal.end = rename, end_journal
sys.argv = ["ddpify", *sys.argv[2:]]
main()
"""


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)


def cli(*args: str, code: int = 0):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def killed(at: int, *args: str) -> None:
    job = subprocess.run([sys.executable, "-c", KILLED_AT, str(at), *args], env=clean_env(PYTHONPATH=str(REPO)),
                         capture_output=True, timeout=120)
    assert job.returncode == -9, job.stderr.decode()


def hidden() -> list[str]:
    return sorted(str(p) for p in Path(".").rglob(".*"))


def converted_train() -> bytes:
    Path("scratch.py").write_bytes(TRAIN)
    cli("convert", "scratch.py", "-o", "scratch_out.py")
    out = Path("scratch_out.py").read_bytes()
    Path("scratch.py").unlink(), Path("scratch_out.py").unlink()
    return out


@pytest.mark.parametrize("at", [2, 4])  # 0 (right after the journal): the next test
def test_a_rename_phase_killed_by_sigkill_is_finished_by_the_next_command(at):
    """4 files in 2 folders converted in place, SIGKILLed after `at` of their 4 renames; the next
    command, on a file of the other folder, finishes the conversion."""
    want = converted_train()
    for name in TREE:
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_bytes(TRAIN)
    killed(at, "convert", "--in-place", "src")
    assert sum(Path(name).read_bytes() == want for name in TREE) == at  # the rest as they were
    staged = [p for p in hidden() if p.endswith(".ddpify-tmp")]
    journals = [p for p in hidden() if re.fullmatch(r"src(/sub)?/\.ddpify-journal\.[0-9a-f]{8}\.json", p)]
    assert len(staged) == 4 - at and len(journals) == 2  # one in each folder written
    result = cli("diff", "src/sub/c.py")
    line = result.stderr.splitlines()[0]
    assert re.fullmatch(r"src/sub/\.ddpify-journal\.[0-9a-f]{8}\.json: finished a ddpify write that was killed "
                        rf"during its renames: {4 - at} of 4 file\(s\) renamed now; all are written", line), line
    assert all(Path(name).read_bytes() == want for name in TREE)
    assert hidden() == []
    assert "ddpify write" not in cli("diff", "src/a.py").stderr  # finished once


def test_a_conversion_into_a_folder_killed_before_its_first_rename_is_finished_by_the_next_one():
    shutil.copytree(PROJECT / "before", "proj")
    killed(0, "convert", "proj/train.py", "-o", "out/")  # 4 renames: 3 files and the record
    assert not any(Path("out").glob("*.py")) and not (Path("out") / written.RECORD).exists()
    result = cli("convert", "proj/train.py", "-o", "out/")
    assert "killed during its renames: 4 of 4 file(s) renamed now; all are written" in result.stderr
    for name in ("train.py", "data.py", "trainer.py"):
        assert Path("out", name).read_bytes() == (PROJECT / "after" / name).read_bytes()
    assert json.loads((Path("out") / written.RECORD).read_text())["entries"]["train.py"]
    assert [p for p in hidden() if p != f"out/{written.RECORD}"] == []


def dead() -> dict:
    """An owner whose process has ended."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    me = {**owner.me(), "pid": child.pid}
    child.wait()
    return me


def staged_journal(monkeypatch, owned_by: dict) -> tuple[list[Path], list[Path]]:
    """a.py and b.py staged with new text and journaled by `owned_by`, as a kill before the first
    rename leaves them: (the staged files, the journals)."""
    for name in ("a.py", "b.py"):
        Path(name).write_text("old\n")
    staged = [files._stage(Path(name).resolve(), b"new\n", None) for name in ("a.py", "b.py")]
    with monkeypatch.context() as patched:
        patched.setattr(owner, "me", lambda: owned_by)
        journals = journal.begin(list(zip(staged, [Path("a.py").resolve(), Path("b.py").resolve()])), [])
    return staged, journals


def test_owners_that_ended_are_told_from_running_ones():
    assert not owner.gone(owner.me())
    assert owner.gone(dead())
    assert not owner.gone({**dead(), "host": "another-machine"})  # a shared folder: nothing to tell
    assert owner.gone({**owner.me(), "started": -1})  # a new process under the same pid
    assert not owner.gone("not a record") and not owner.gone({"pid": 0})


def test_the_journal_of_a_write_still_running_is_left_alone(monkeypatch):
    staged, journals = staged_journal(monkeypatch, owner.me())
    assert journal.finish([Path(".")]) == []
    assert all(p.exists() for p in [*staged, *journals]) and Path("a.py").read_text() == "old\n"


def test_a_file_edited_after_the_kill_is_left_as_it_is_and_named(monkeypatch):
    staged, journals = staged_journal(monkeypatch, dead())
    Path("a.py").write_text("edited by hand after the kill, longer\n")
    [line] = journal.finish([Path(".")])
    assert line == (f"{journals[0].name}: finished a ddpify write that was killed during its renames: 1 of 2 "
                    "file(s) renamed now; 1 written, left as they are (changed since the kill): a.py")
    assert Path("a.py").read_text() == "edited by hand after the kill, longer\n" and Path("b.py").read_text() == "new\n"
    assert hidden() == []


def test_removals_are_journaled_and_finished(monkeypatch):
    """A stale module of an earlier conversion (ddpify.inputs.written) is removed after the renames;
    a kill before its removal leaves it in the journal."""
    Path("stale.py").write_text("written by an earlier conversion\n")
    Path("kept.py").write_text("x\n")
    ended = dead()
    with monkeypatch.context() as patched:
        patched.setattr(owner, "me", lambda: ended)
        journal.begin([], [Path("stale.py").resolve(), Path("kept.py").resolve()])
    Path("kept.py").write_text("edited since\n")
    [line] = journal.finish([Path(".")])
    assert line.endswith("0 of 0 file(s) renamed now; 0 written, left as they are (changed since the kill): "
                         "kept.py")
    assert not Path("stale.py").exists() and Path("kept.py").exists()


def test_a_journal_cut_short_while_written_is_removed_once_old(monkeypatch):
    Path("a.py").write_text("x\n")
    cut = Path(".ddpify-journal.0a1b2c3d.json")
    cut.write_text('{"owner": {"host"')
    assert journal.finish([Path(".")]) == []  # maybe one being written now
    os.utime(cut, (1, 1))
    assert journal.finish([Path(".")]) == [
        f"{cut}: removed the journal of a ddpify write killed before its renames: no file was replaced"]
    assert not cut.exists()


def test_a_write_that_completes_leaves_no_journal_and_one_that_fails_none_either(monkeypatch):
    for name in ("a.py", "b.py"):
        Path(name).write_bytes(TRAIN)
    cli("convert", "--in-place", "a.py", "b.py")
    assert hidden() == []
    monkeypatch.setattr(journal, "_write_new", lambda path, data: (_ for _ in ()).throw(
        OSError(28, "No space left on device", str(path))))
    Path("c.py").write_bytes(TRAIN)
    result = cli("convert", "--in-place", "c.py", code=2)
    assert re.fullmatch(r".*/\.ddpify-journal\.[0-9a-f]{8}\.json: cannot write: No space left on device",
                        result.stderr.splitlines()[-1])
    assert Path("c.py").read_bytes() == TRAIN and hidden() == []


def test_the_temporary_files_of_a_write_killed_while_staging_go_at_the_next_command_on_the_folder():
    """Killed before its journal, a write replaced nothing; what it staged is removed by the next
    command on a file of that folder, once a minute old (a write in progress renames sooner)."""
    Path("a.py").write_bytes(TRAIN)
    old, fresh = Path(".a.py.0a1b2c3d.ddpify-tmp"), Path(".b.py.00000000.ddpify-tmp")
    for path in (old, fresh):
        path.write_bytes(b"staged")
    os.utime(old, (1, 1))
    cli("diff", "a.py")
    assert hidden() == [str(fresh)] and Path("a.py").read_bytes() == TRAIN
