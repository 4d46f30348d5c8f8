"""Rank 0's output under `ddpify run` is relayed from a log file, yet its progress bars fit the
user's window: `ddpify run` passes its terminal's size and the runtime answers with it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import textwrap
import time

import pytest

from tests.support.env import clean_env


def test_rank_0_answers_the_terminal_size_it_was_given_where_its_output_is_a_file(monkeypatch, tmp_path):
    import ddpify_runtime

    monkeypatch.setattr(os, "get_terminal_size", os.get_terminal_size)  # restored after the test
    with open(tmp_path / "log", "w") as log:
        with pytest.raises(OSError):
            os.get_terminal_size(log.fileno())
        ddpify_runtime._share_terminal_size(1, {"DDPIFY_TERMINAL_SIZE": "60x20"})  # not rank 0: no change
        with pytest.raises(OSError):
            os.get_terminal_size(log.fileno())
        ddpify_runtime._share_terminal_size(0, {"DDPIFY_TERMINAL_SIZE": "60x20"})
        saved = os.dup(1)
        try:
            os.dup2(log.fileno(), 1)  # stdout is the log file, as under `ddpify run`
            assert os.get_terminal_size() == os.terminal_size((60, 20))
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        with pytest.raises(OSError):  # another file is still no terminal
            os.get_terminal_size(log.fileno())


BAR = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from tqdm import tqdm

    loader = DataLoader(TensorDataset(torch.randn(64, 2), torch.randn(64, 1)), batch_size=2, shuffle=True)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in tqdm(loader, desc="training a model", mininterval=0):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    """)


@pytest.mark.slow
def test_a_progress_bar_stays_on_one_line_in_a_60_column_window(tmp_path):
    (tmp_path / "bar.py").write_text(BAR)
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 20, 60, 0, 0))
    env = {**clean_env(), "OMP_NUM_THREADS": "1", "TERM": "xterm"}
    proc = subprocess.Popen([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "2", "bar.py"], cwd=tmp_path,
                            stdin=child, stdout=child, stderr=child, env=env, start_new_session=True)
    os.close(child)
    seen = b""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if select.select([main], [], [], 1)[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal closed: every process is gone
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(main)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode("utf-8", "replace"))
    bars = [piece for piece in re.split(r"[\r\n]", text) if "training a model" in piece]
    assert proc.returncode == 0, text[-3000:]
    assert bars and "16/16" in bars[-1], text[-3000:]
    assert max(len(bar) for bar in bars) <= 60, bars
