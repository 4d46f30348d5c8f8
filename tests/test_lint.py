"""The house's habits, checked with the suite: ruff (pyflakes, syntax errors, McCabe complexity
past 15) over the code, tests and benchmarks, and mypy over ddpify/ (pyproject.toml lists the
modules not yet type-clean; the others, and every new one, must pass)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--quiet", "ddpify", "runtime", "scripts", "tests",
                           "bench"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
