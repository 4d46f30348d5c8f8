"""scripts/new_rewrite.py and scripts/new_rule.py, run on a copy of the repository: what they
create imports, registers where it was asked to, and its skeleton tests fail until the rewrite or
the rule is written."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.env import clean_env

REPO = Path(__file__).resolve().parent.parent


def _script(name: str = "new_rewrite"):
    """A script of scripts/ as a module (new_rule imports new_rewrite's helpers, as when run)."""
    if str(REPO / "scripts") not in sys.path:
        sys.path.insert(0, str(REPO / "scripts"))
    return importlib.import_module(name)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The package, the runtime, the docs and their generator, the test support and the docs test:
    what the scaffold edits or needs."""
    for folder in ["ddpify", "runtime", "docs", "scripts"]:
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
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
                                "(analysis: 'Analysis', edits: 'Edits', options: 'Options') -> 'None'", "True"]
    rewrites = (copy / "docs" / "rewrites.md").read_text()
    assert "| [`shard-data`](#shard-data) |" in rewrites.split("| [`sync-buffers`](#sync-buffers) | broadcast buffers once |")[0]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-k",
                            "sync_buffers or sync-buffers or up_to_date or registry_in_order",
                            "tests/rewrites/test_sync_buffers.py", "tests/test_docs.py"],
                           cwd=copy, env=clean_env(), capture_output=True, text=True)
    failed = sorted(line.split()[1].split("[")[0] for line in tests.stdout.splitlines() if line.startswith("FAILED"))
    assert failed == ["tests/rewrites/test_sync_buffers.py::test_pairs", "tests/test_docs.py::test_docstring_example"], \
        tests.stdout  # the skeleton pair and the docstring's example; the generated docs are right
    assert "2 passed" in tests.stdout.splitlines()[-1]


@pytest.mark.parametrize("args, error", [
    (["shard-data"], "already exists"),
    (["sync-buffers", "--after", "no-such-rewrite"], "no rewrite module 'no_such_rewrite'"),
])
def test_errors_write_nothing(copy, capsys, args, error):
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert _script().main([*args, "--root", str(copy)]) == 2
    assert error in capsys.readouterr().err
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before


@pytest.fixture
def rules_copy(copy: Path) -> Path:
    """The copy with the check rules' fixtures and tests."""
    shutil.copytree(REPO / "fixtures" / "check", copy / "fixtures" / "check")
    (copy / "tests" / "check").mkdir()
    for name in ["__init__.py", "test_rules.py", "test_docs.py"]:
        shutil.copy(REPO / "tests" / "check" / name, copy / "tests" / "check" / name)
    return copy


def test_a_new_rule_registers_explains_itself_and_fails_its_skeleton_tests_until_written(rules_copy, capsys):
    copy = rules_copy
    assert _script("new_rule").main(["DDP099", "save-twice", "--module", "sampling", "--root", str(copy)]) == 0
    assert _script("new_rule").main(["DDP000", "grad-twice", "--advice", "--summary", "Gradients twice.",
                                     "--root", str(copy)]) == 0
    created = capsys.readouterr().out
    for path in ["ddpify/check/rules/sampling.py", "ddpify/check/rules/grad_twice.py", "fixtures/check/DDP099/trigger.py",
                 "fixtures/check/DDP099/near_miss.py", "fixtures/check/DDP000/trigger.py"]:
        assert (copy / path).is_file() and path in created
    probe = ("from ddpify.check import BUGS, CODES\n"
             "for code in ['DDP000', 'DDP099']:\n"
             "    r = CODES[code]\n"
             "    print(code, r.name, r.find.__module__, r in BUGS, r.summary)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=copy, env=clean_env(), capture_output=True,
                         text=True, check=True).stdout
    assert out.splitlines() == ["DDP000 grad-twice ddpify.check.rules.grad_twice False Gradients twice.",
                                "DDP099 save-twice ddpify.check.rules.sampling True What the rule finds, in one line."]
    explained = subprocess.run([sys.executable, "-m", "ddpify", "check", "--explain", "DDP000"], cwd=copy,
                               env=clean_env(), capture_output=True, text=True, check=True).stdout
    assert explained.startswith("DDP000 (grad-twice)\n\nGradients twice.\n\nWrong:\n")
    assert explained.endswith("Advice: reported only when `--select` names it (`--select DDP000`).\n")
    page = (copy / "docs" / "check.md").read_text()  # regenerated by the scaffold
    assert "| [`DDP000`](#ddp000-grad-twice) | `grad-twice` | advice (`--select DDP000`): Gradients twice. |  |\n" \
           "| [`DDP001`]" in page
    assert "| [`DDP021`]" in page.split("| [`DDP099`](#ddp099-save-twice) | `save-twice` |")[0]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-k",
                            "DDP000 or DDP099 or rule_table or every_rule", "tests/check/test_rules.py",
                            "tests/check/test_docs.py"], cwd=copy, env=clean_env(), capture_output=True, text=True)
    failed = sorted(line.split()[1] for line in tests.stdout.splitlines() if line.startswith("FAILED"))
    assert failed == ["tests/check/test_docs.py::test_wrong_example_is_found_and_right_example_is_not[DDP000]",
                      "tests/check/test_docs.py::test_wrong_example_is_found_and_right_example_is_not[DDP099]",
                      "tests/check/test_rules.py::test_trigger[DDP000/trigger.py]",
                      "tests/check/test_rules.py::test_trigger[DDP099/trigger.py]"], tests.stdout
    assert "6 passed" in tests.stdout.splitlines()[-1]  # the table, the fixtures' files, the docstrings, near misses


@pytest.mark.parametrize("args, error", [
    (["DDP001", "save-twice"], "DDP001 is taken (ddpify/check/rules/devices.py)"),
    (["DDP099", "rank-as-device", "--module", "sampling"], "the rule name rank-as-device is taken"),
    (["DDP99", "save-twice"], "'DDP99': a code is DDP and three digits"),
    (["DDP099", "Save_Twice"], "'Save_Twice': a name is lower case words joined by '-'"),
    (["DDP099", "save-twice", "--module", "context"], "--module context: not a rule module name"),
    (["DDP099", "save-twice", "--module", "script"], "--module script: not a rule module name"),
    (["DDP099", "save-twice", "--module", "class"], "--module class: not a rule module name"),
])
def test_rule_errors_write_nothing(rules_copy, capsys, args, error):
    before = {p: p.read_bytes() for p in rules_copy.rglob("*") if p.is_file()}
    assert _script("new_rule").main([*args, "--root", str(rules_copy)]) == 2
    err = capsys.readouterr().err
    assert error in err and err.count("\n") == 1
    assert {p: p.read_bytes() for p in rules_copy.rglob("*") if p.is_file()} == before
