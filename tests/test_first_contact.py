"""Messages a first-time user meets (issue 31 item 10): no contradiction between "left unchanged"
and warnings about a conversion, the way on for an already-distributed script, and a Markdown
file named as input."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ddpify.cli import main

DISTRIBUTED_WITH_A_THREAD = """\
import threading
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train():
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(4, 2)).sum().backward()
        opt.step()


threading.Thread(target=train).start()
"""


def test_an_already_distributed_script_is_left_unchanged_without_warnings_and_points_to_check(tmp_path,
                                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(DISTRIBUTED_WITH_A_THREAD)
    result = CliRunner().invoke(main, ["convert", "train.py", "-o", "out.py"])
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr and "as if called directly" not in result.stderr
    assert "train.py:1: [ddpify] already distributed (uses torch.distributed); left unchanged: `ddpify check` " \
           "finds DDP bugs in it" in result.stderr


def test_a_markdown_file_is_not_a_python_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("README.md").write_text("# Training\n\nRun `python train.py`.\n")
    result = CliRunner().invoke(main, ["convert", "README.md", "-o", "out.py"])
    assert (result.exit_code, result.stderr) == (2, "README.md: not a Python file (.md does not parse as Python): "
                                                    "ddpify converts .py scripts and .ipynb notebooks\n")
    assert not Path("out.py").exists()
    Path("script.txt").write_text("print('a script named .txt still converts')\n")
    assert CliRunner().invoke(main, ["diff", "script.txt"]).exit_code == 0

