"""scripts/new_rewrite.py, run on a copy of the repository: what it creates imports, registers
where it was asked to, and its skeleton tests fail until the rewrite is written."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.env import clean_env

REPO = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("new_rewrite", REPO / "scripts" / "new_rewrite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The package, README, the test support and the docs test: what the scaffold edits or needs."""
    shutil.copytree(REPO / "ddpify", tmp_path / "ddpify", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "tests" / "support", tmp_path / "tests" / "support",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests" / "rewrites").mkdir()
    for name in ["README.md", "conftest.py", "pyproject.toml", "tests/__init__.py", "tests/rewrites/__init__.py",
                 "tests/test_docs.py"]:
        shutil.copy(REPO / name, tmp_path / name)
    (tmp_path / "fixtures").mkdir()
    return tmp_path


def test_a_new_rewrite_is_registered_imports_and_fails_its_skeleton_tests_until_written(copy, capsys):
    assert _script().main(["sync-buffers", "--after", "shard-data", "--summary", "broadcast buffers once",
                           "--root", str(copy)]) == 0
    created = capsys.readouterr().out
    for path in ["ddpify/rewrites/sync_buffers.py", "tests/rewrites/test_sync_buffers.py",
                 "fixtures/sync_buffers/before.py"]:
        assert (copy / path).is_file() and path in created
    probe = ("import inspect\n"
             "from ddpify.convert import convert\n"
             "from ddpify.rewrites import REWRITES, sync_buffers\n"
             "print([r.name for r in REWRITES][4:7])\n"
             "print(inspect.signature(sync_buffers.rewrite))\n"
             "print(convert(open('fixtures/sync_buffers/before.py').read()).changed)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=copy, env=clean_env(), capture_output=True,
                         text=True, check=True).stdout
    assert out.splitlines() == ["['shard-data', 'sync-buffers', 'wrap-model']",
                                "(facts: 'Analysis', edits: 'Edits', options: 'Options') -> 'None'", "True"]
    assert "| `shard-data` |" in (copy / "README.md").read_text().split("| `sync-buffers` | broadcast buffers once |")[0]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-k",
                            "sync_buffers or sync-buffers or readme", "tests/rewrites/test_sync_buffers.py",
                            "tests/test_docs.py"], cwd=copy, env=clean_env(), capture_output=True, text=True)
    failed = sorted(line.split()[1].split("[")[0] for line in tests.stdout.splitlines() if line.startswith("FAILED"))
    assert failed == ["tests/rewrites/test_sync_buffers.py::test_pairs", "tests/test_docs.py::test_docstring_example"], \
        tests.stdout  # the skeleton pair and the docstring's example; README's table is right
    assert "1 passed" in tests.stdout.splitlines()[-1]


@pytest.mark.parametrize("args, error", [
    (["shard-data"], "already exists"),
    (["sync-buffers", "--after", "no-such-rewrite"], "no rewrite module 'no_such_rewrite'"),
])
def test_errors_write_nothing(copy, capsys, args, error):
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert _script().main([*args, "--root", str(copy)]) == 2
    assert error in capsys.readouterr().err
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before


def test_a_readme_without_a_hand_kept_table_is_left_as_it_is(copy, capsys):
    (copy / "README.md").write_text("# ddpify\n\nThe rewrites are listed in docs/, generated from the registry.\n")
    assert _script().main(["sync-buffers", "--root", str(copy)]) == 0
    assert "nothing to register in README.md" in capsys.readouterr().out
    assert (copy / "README.md").read_text().endswith("generated from the registry.\n")
    assert "    sync_buffers,\n))" in (copy / "ddpify" / "rewrites" / "__init__.py").read_text()
