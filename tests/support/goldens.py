"""Converted code compared whole with a file kept in ``fixtures/outputs/`` (as test_golden does
for ``fixtures/*/after.py``), for tests whose input is built in the test or goes through the
command line: ``pytest --update-goldens`` rewrites the file; read its diff."""

from __future__ import annotations

import shutil

import pytest

from tests.support.env import FIXTURES

OUTPUTS = FIXTURES / "outputs"


def assert_golden(name: str, code: str, request: pytest.FixtureRequest) -> None:
    """``code`` is exactly ``fixtures/outputs/<name>``."""
    path = OUTPUTS / name
    if request.config.getoption("--update-goldens"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    assert code == path.read_text(), f"{path} differs (pytest --update-goldens rewrites it)"


def assert_program_golden(name: str, result, request: pytest.FixtureRequest) -> None:
    """The converted entry (``result.code``, as ``train.py``) and each module the conversion
    changed are exactly the files of ``fixtures/outputs/<name>/``, and no other is there."""
    files = {"train.py": result.code, **{rel: r.code for rel, r in result.modules.items() if r.changed}}
    if request.config.getoption("--update-goldens"):
        shutil.rmtree(OUTPUTS / name, ignore_errors=True)
    for rel, code in files.items():
        assert_golden(f"{name}/{rel}", code, request)
    assert sorted(str(p.relative_to(OUTPUTS / name)) for p in (OUTPUTS / name).rglob("*.py")) == sorted(files)
