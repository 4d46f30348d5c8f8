"""A module converted inside a regular package is the one the converted program imports
(issue 27 class 7): `-o out/` writes the package's `__init__.py` beside it (ddpify.output.packages)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from click.testing import CliRunner
from ddpify.cli import main
from ddpify.output.packages import EXTEND, extended

INIT = '"""The engine."""\nfrom __future__ import annotations\n\nVERSION = 1\n'
LOOP = """\
import torch


def fit(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
"""
ENTRY = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

from engine.loop import fit
from engine.util import helper

loader = DataLoader(TensorDataset(torch.randn(16, 2), torch.randn(16, 1)), batch_size=4, shuffle=True)
fit(torch.nn.Linear(2, 1), loader, helper())
"""


def test_the_converted_module_of_a_package_is_imported_and_its_unchanged_siblings_too(tmp_path):
    project, out = tmp_path / "proj", tmp_path / "out"
    (project / "engine").mkdir(parents=True)
    (project / "engine" / "__init__.py").write_text(INIT)
    (project / "engine" / "loop.py").write_text(LOOP)
    (project / "engine" / "util.py").write_text("def helper():\n    return 2\n")
    (project / "train.py").write_text(ENTRY)
    result = CliRunner().invoke(main, ["convert", str(project / "train.py"), "-o", f"{out}/"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (out / "engine").iterdir()) == ["__init__.py", "loop.py"]
    assert (out / "engine" / "__init__.py").read_bytes() == extended(INIT.encode())
    probe = textwrap.dedent("""\
        import importlib.util
        import engine.util
        print(importlib.util.find_spec("engine.loop").origin, engine.util.__file__, engine.VERSION)
    """)  # (the spec, not the import: loop.py imports torch)
    (out / "probe.py").write_text(probe)
    run = subprocess.run([sys.executable, str(out / "probe.py")], capture_output=True, text=True,
                         env={"PYTHONPATH": str(project)}, check=True)
    assert run.stdout.split() == [str(out / "engine" / "loop.py"), str(project / "engine" / "util.py"), "1"]


def test_the_path_line_goes_after_the_docstring_and_future_imports():
    assert extended(INIT.encode()) == ('"""The engine."""\nfrom __future__ import annotations\n'.encode()
                                       + EXTEND + b"\nVERSION = 1\n")
    assert extended(b"") == EXTEND
    assert extended(b"x = (\n") == b"x = (\n"  # does not parse: copied as it is


@pytest.mark.slow
def test_under_ddpify_run_the_converted_module_of_a_package_is_imported(tmp_path):
    project = tmp_path / "proj"
    (project / "engine").mkdir(parents=True)
    (project / "engine" / "__init__.py").write_text(INIT)
    (project / "engine" / "loop.py").write_text(LOOP)
    (project / "engine" / "util.py").write_text("def helper():\n    return 2\n")
    (project / "train.py").write_text(ENTRY + "import engine.loop, engine.util\n"
                                      "print(engine.loop.__file__, engine.util.__file__)\n")
    run = subprocess.run([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "1", "--keep", "train.py"],
                         cwd=project, capture_output=True, text=True, timeout=240,
                         env={**os.environ, "TMPDIR": str(tmp_path)})  # the kept run folder, in tmp_path
    assert run.returncode == 0, run.stderr
    loop, util = (Path(p) for p in run.stdout.split())
    kept = Path(run.stderr.splitlines()[-1].split("(the converted script: ")[1].rstrip(")")).parent
    assert loop == kept / "engine" / "loop.py" and "set_epoch" in loop.read_text()
    assert util == project / "engine" / "util.py"
