"""The built wheel ships the codemod, every rewrite, the runtime as `ddpify_runtime`, and the
`ddpify` console script; the CLI never imports torch."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_contains_the_runtime_and_the_console_script(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, timeout=300, capture_output=True)
    wheel = next(tmp_path.glob("ddpify-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "ddpify_runtime/__init__.py" in names
    rewrites = {p.name for p in (ROOT / "ddpify" / "rewrites").glob("*.py")}
    assert rewrites <= {Path(n).name for n in names if n.startswith("ddpify/rewrites/")}
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "ddpify = ddpify.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
