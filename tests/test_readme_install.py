"""README's install lines work as written, on a fresh copy of the repository in a fresh venv:
"Try it" (install from the checkout, convert the bundled example, train it under torchrun), then
the wheel line of "Install", whose `ddpify` then converts again. The wheel that line builds
ships the codemod, every rewrite, the runtime as `ddpify_runtime`, and the `ddpify` console
script (one wheel build serves both tests: building it is most of a packaging test's time)."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def fenced_after(heading: str) -> list[str]:
    """The lines of the first fenced block after `heading` in README.md."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```\n(.*?)```", text[text.index(heading):], re.S)
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A copy of the tracked files where "Try it" and then the wheel line ran: (copy, env, the two
    finished commands)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    copy = tmp_path_factory.mktemp("readme") / "ddpify"
    for name in tracked.stdout.split("\0"):
        if name and (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_bytes((ROOT / name).read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(OMP_NUM_THREADS="1", PATH=f"{copy / '.venv' / 'bin'}{os.pathsep}{env['PATH']}")
    (try_it,) = fenced_after("## Try it")
    try_done = subprocess.run(try_it, shell=True, cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    wheel_done = None
    if try_done.returncode == 0:
        _, wheel = fenced_after("## Install")
        wheel_done = subprocess.run(wheel, shell=True, cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    return copy, env, try_done, wheel_done


def test_the_readme_install_lines_work_as_written(installed):
    copy, env, try_done, wheel_done = installed
    assert try_done.returncode == 0, try_done.stdout[-2000:] + try_done.stderr[-3000:]
    assert (copy / "demo" / "train_ddp.py").is_file() and list((copy / "demo").glob("*.pt"))
    assert wheel_done.returncode == 0, wheel_done.stdout[-2000:] + wheel_done.stderr[-3000:]
    done = subprocess.run(["ddpify", "convert", "fixtures/mnist_style/before.py", "-o", "again.py"], cwd=copy,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and (copy / "again.py").read_bytes() == (copy / "demo" / "train_ddp.py").read_bytes()


def test_wheel_contains_the_runtime_and_the_console_script(installed):
    copy, _, try_done, wheel_done = installed
    assert wheel_done is not None and wheel_done.returncode == 0, (try_done.stderr + (wheel_done or try_done).stderr)[-3000:]
    (wheel,) = (copy / "dist").glob("ddpify-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "ddpify_runtime/__init__.py" in names
    rewrites = {p.name for p in (copy / "ddpify" / "rewrites").glob("*.py")}
    assert rewrites <= {Path(n).name for n in names if n.startswith("ddpify/rewrites/")}
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "ddpify = ddpify.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
