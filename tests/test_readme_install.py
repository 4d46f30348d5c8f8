"""README's install lines work as written, on a fresh copy of the repository in a fresh venv:
"Try it" (install from the checkout, convert the bundled example, train it under torchrun), then
the wheel line of "Install", whose `ddpify` then converts again."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def fenced_after(heading: str) -> list[str]:
    """The lines of the first fenced block after `heading` in README.md."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```\n(.*?)```", text[text.index(heading):], re.S)
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readme_install_lines_work_as_written(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    copy = tmp_path / "ddpify"
    for name in tracked.stdout.split("\0"):
        if name and (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_bytes((ROOT / name).read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(OMP_NUM_THREADS="1", PATH=f"{copy / '.venv' / 'bin'}{os.pathsep}{env['PATH']}")
    (try_it,) = fenced_after("## Try it")
    done = subprocess.run(try_it, shell=True, cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert (copy / "demo" / "train_ddp.py").is_file() and list((copy / "demo").glob("*.pt"))
    _, wheel = fenced_after("## Install")
    done = subprocess.run(wheel, shell=True, cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    done = subprocess.run(["ddpify", "convert", "fixtures/mnist_style/before.py", "-o", "again.py"], cwd=copy,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and (copy / "again.py").read_bytes() == (copy / "demo" / "train_ddp.py").read_bytes()
