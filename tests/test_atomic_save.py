"""Checkpoints are written whole or not at all: `atomic_write` in the runtime, and a converted
script killed in the middle of a save still has its previous checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from ddpify.convert import convert
from ddpify_runtime import atomic_write

from tests.support.env import clean_env
from tests.support.goldens import assert_golden


def test_atomic_write_replaces_the_file_only_when_the_block_ends(tmp_path):
    target = tmp_path / "last.pt"
    torch.save({"epoch": 0}, target)
    target.chmod(0o640)
    with pytest.raises(RuntimeError):
        with atomic_write(str(target)) as tmp:
            torch.save({"epoch": 1}, tmp)
            assert Path(tmp).parent == tmp_path and torch.load(target) == {"epoch": 0}
            raise RuntimeError("killed")
    assert torch.load(target) == {"epoch": 0} and os.listdir(tmp_path) == ["last.pt"]
    with atomic_write(target) as tmp:  # a Path too
        torch.save({"epoch": 2}, tmp)
    assert torch.load(target) == {"epoch": 2} and os.listdir(tmp_path) == ["last.pt"]
    assert target.stat().st_mode & 0o777 == 0o640


def test_atomic_write_goes_through_a_symlink_and_passes_buffers_on(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "last.pt").symlink_to("runs/last.pt")
    with atomic_write(str(tmp_path / "last.pt")) as tmp:
        torch.save(3, tmp)
    assert (tmp_path / "last.pt").is_symlink() and torch.load(tmp_path / "runs" / "last.pt") == 3
    with open(tmp_path / "f.pt", "wb") as f, atomic_write(f) as same:
        assert same is f



def test_devices_and_fifos_are_written_into_never_renamed_over(tmp_path):
    fifo = tmp_path / "out.pt"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-c", f"print(len(open({str(fifo)!r}, 'rb').read()))"],
                              stdout=subprocess.PIPE, text=True)
    with atomic_write(fifo) as same:
        torch.save({"epoch": 1}, same)
    assert same == fifo and int(reader.communicate(timeout=30)[0]) > 0
    assert fifo.is_fifo() and os.listdir(tmp_path) == ["out.pt"]
    with atomic_write(os.devnull) as same:  # as a converted `torch.save(state, os.devnull)` does
        torch.save(1, same)
    assert same == os.devnull and Path(os.devnull).is_char_device()


def test_a_240_character_name_is_saved_atomically(tmp_path):
    target = tmp_path / ("c" * 237 + ".pt")  # 240 characters: a longer temporary name would not fit
    with atomic_write(target) as tmp:
        torch.save(5, tmp)
    assert torch.load(target) == 5 and os.listdir(tmp_path) == [target.name]


def test_where_no_temporary_file_can_be_made_the_file_is_written_in_place(tmp_path, monkeypatch):
    target = tmp_path / "last.pt"
    real_open = os.open

    def read_only_folder(path, flags, *args):  # a writable file in a folder that is not (root may write anyway)
        if flags & os.O_CREAT and str(path).endswith(".tmp"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only_folder)
    with pytest.warns(RuntimeWarning, match="cannot create a temporary file beside it .*written in place"):
        with atomic_write(target) as tmp:
            torch.save(6, tmp)
    assert tmp == target and torch.load(target) == 6


def test_a_file_that_cannot_be_renamed_over_is_written_in_place(tmp_path, monkeypatch):
    target = tmp_path / "last.pt"
    torch.save(0, target)

    def busy(src, dst):  # a bind-mounted file
        raise OSError(16, "Device or resource busy")

    monkeypatch.setattr(os, "replace", busy)
    with pytest.warns(RuntimeWarning, match="cannot rename over it"):
        with atomic_write(target) as tmp:
            torch.save(7, tmp)
    assert torch.load(target) == 7 and os.listdir(tmp_path) == ["last.pt"]


def test_a_folder_that_cannot_be_read_still_gets_the_renamed_file(tmp_path, monkeypatch):
    target = tmp_path / "last.pt"
    real_open = os.open

    def write_execute_only(path, flags, *args):
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", write_execute_only)
    with atomic_write(target) as tmp:
        torch.save(8, tmp)
    assert torch.load(target) == 8 and os.listdir(tmp_path) == ["last.pt"]


def test_the_next_save_removes_what_killed_saves_left(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = tmp_path / f".last.pt.{dead.pid}.0a0b0c0d.tmp"
    leftover.write_bytes(b"half a checkpoint")
    live = tmp_path / f".last.pt.{os.getppid()}.0a0b0c0d.tmp"  # a save still running elsewhere
    live.write_bytes(b"")
    other = tmp_path / f".best.pt.{dead.pid}.0a0b0c0d.tmp"  # another file's: not this save's business
    other.write_bytes(b"")
    with atomic_write(tmp_path / "last.pt") as tmp:
        torch.save(9, tmp)
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, other.name, "last.pt"])


TRAIN = textwrap.dedent('''\
    import time
    from pathlib import Path

    import torch


    class SlowToSave:
        """Pickling it takes a minute: the test kills the process meanwhile."""

        def __reduce__(self):
            Path("saving").touch()
            time.sleep(60)
            return (int, (0,))


    def main():
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
            state = {"epoch": epoch, "model": model.state_dict()}
            if epoch == 1:
                state["extra"] = SlowToSave()
            torch.save(state, "last.pt")


    if __name__ == "__main__":
        main()
    ''')


@pytest.mark.slow
def test_a_kill_during_a_save_keeps_the_previous_checkpoint(tmp_path, request):
    code = convert(TRAIN).code
    assert_golden("atomic_save_train.py", code, request)  # the save: `with atomic_write("last.pt") as tmp_path:`
    (tmp_path / "train_ddp.py").write_text(code)
    job = subprocess.Popen([sys.executable, "train_ddp.py"], cwd=tmp_path, env=clean_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not (tmp_path / "saving").exists():
        assert job.poll() is None and time.monotonic() < deadline, job.communicate()[0].decode()[-2000:]
        time.sleep(0.1)
    job.send_signal(signal.SIGKILL)  # rank 0 dies in the middle of the second save
    job.wait(timeout=30)
    state = torch.load(tmp_path / "last.pt")
    assert state["epoch"] == 0 and set(state["model"]) == {"weight", "bias"}
