"""Robustness: convert every .py file of the standard library shipped with this interpreter.

No crash, every output parses and compiles wherever the input does, and every file without a
training loop comes back byte-identical; a changed one would also have to settle (converting it
again changes nothing) and check clean: the sweep of bench/sweep.py, as in tests/test_sweep.py.
Deselect locally with `-m "not stdlib"`; CI runs it.
"""

from __future__ import annotations

import sysconfig
import time
from pathlib import Path

import pytest

from tests.test_sweep import pool, sweep

pytestmark = pytest.mark.stdlib


def _check(path: str) -> tuple[str, str, int]:
    """(path, outcome, warnings): outcome is "unparsable", "same", "changed" or a failure."""
    _, _, outcome, detail, warnings = sweep.sweep_one((path, "ddp", 120.0))
    if outcome in sweep.KINDS:
        return path, f"{outcome}: {detail}", warnings
    if outcome == "refused":
        return path, "unparsable", 0  # test data with deliberate syntax or encoding errors
    return path, outcome, warnings


def test_standard_library_converts_without_damage(capsys):
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(str(p) for p in root.rglob("*.py") if "site-packages" not in p.parts)
    start = time.perf_counter()
    with pool() as workers:
        results = list(workers.map(_check, files, chunksize=16))
    seconds = time.perf_counter() - start
    outcomes = [r[1] for r in results]
    failures = [f"{path}: {outcome}" for path, outcome, _ in results
                if outcome not in ("unparsable", "same", "changed")]
    with capsys.disabled():
        print(f"\nstdlib: {len(files)} files, {outcomes.count('changed')} changed, "
              f"{outcomes.count('unparsable')} unparsable, {sum(r[2] for r in results)} warnings, "
              f"{seconds:.1f} s")
    assert not failures, "\n".join(failures)
    assert len(files) > 500
    # The standard library trains nothing: any change is a false positive.
    assert outcomes.count("changed") == 0, [r[0] for r in results if r[1] == "changed"]
