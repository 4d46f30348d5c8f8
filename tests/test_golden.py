"""Golden fixtures: every fixtures/<case>/before.py converts to exactly after.py.

Each case also checks that the output compiles, that converting it again changes nothing,
that every comment of the input survives (but those the report says it dropped: a comment
that named what an edit replaced), and that the report matches report.txt.
`pytest --update-goldens` rewrites after.py and report.txt from the current converter.

A case with an `after_fsdp.py` also converts with `--strategy fsdp` to exactly that file (and
`report_fsdp.txt`), with the same checks; to add one, create an empty `after_fsdp.py` and run
`pytest --update-goldens`.

A project case (several modules, ddpify.inputs.program) is a folder `fixtures/<case>/before/` whose
entry script is `train.py`: its `after/` holds exactly the files the conversion changes, at
their paths relative to `before/`, and `report.txt` the records of every file, each line
naming its file.
"""

from __future__ import annotations

import io
import re
import shutil
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from ddpify.convert import Options, convert, convert_program
from ddpify.inputs.program import load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p.parent.name for p in FIXTURES.glob("*/before.py"))
FSDP_CASES = sorted(p.parent.name for p in FIXTURES.glob("*/after_fsdp.py"))
STRATEGIES = [(case, "ddp") for case in CASES] + [(case, "fsdp") for case in FSDP_CASES]
SUFFIX = {"ddp": "", "fsdp": "_fsdp"}
PROJECTS = sorted(p.parent.parent.name for p in FIXTURES.glob("*/before/train.py"))


def comments(code: str) -> Counter:
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)


def report(result, name: str) -> str:
    return "".join(c.render(name) + "\n" for c in result.changes)


@pytest.mark.parametrize("case, strategy", STRATEGIES)
def test_golden(case, strategy, request):
    folder = FIXTURES / case
    before = (folder / "before.py").read_bytes()
    result = convert(before, Options(strategy=strategy))
    expected_report = report(result, "before.py")
    after, report_file = folder / f"after{SUFFIX[strategy]}.py", folder / f"report{SUFFIX[strategy]}.txt"
    if request.config.getoption("--update-goldens"):
        after.write_bytes(result.output)
        report_file.write_text(expected_report)
    assert result.output == after.read_bytes()
    assert expected_report == report_file.read_text()


@pytest.mark.parametrize("case, strategy", STRATEGIES)
def test_output_compiles_keeps_comments_and_is_stable(case, strategy):
    before = (FIXTURES / case / "before.py").read_text()
    result = convert(before, Options(strategy=strategy))
    compile(result.code, f"{case}/after{SUFFIX[strategy]}.py", "exec")
    dropped = Counter(re.findall(r"comment `(#[^`]*)` dropped", report(result, "before.py")))
    assert comments(before) - comments(result.code) == dropped, "a comment of the input was lost"
    again = convert(result.output, Options(strategy=strategy))
    assert again.output == result.output, "converting the output again changed it"


def convert_project(folder: Path) -> dict:
    """Convert the program `folder/train.py` starts: {relative path: result} of the entry and
    of each module it imports (changed or not)."""
    entry = folder / "train.py"
    result = convert_program(load(entry, entry.read_bytes()))
    return {"train.py": result, **result.modules}


def project_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.py"))


@pytest.mark.parametrize("case", PROJECTS)
def test_project_golden(case, request):
    folder = FIXTURES / case
    results = convert_project(folder / "before")
    changed = {rel: r for rel, r in results.items() if r.changed}
    expected_report = "".join(c.render(rel) + "\n" for rel, r in results.items() for c in r.changes)
    if request.config.getoption("--update-goldens"):
        shutil.rmtree(folder / "after", ignore_errors=True)
        for rel, result in changed.items():
            (folder / "after" / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / "after" / rel).write_bytes(result.output)
        (folder / "report.txt").write_text(expected_report)
    assert sorted(changed) == project_files(folder / "after")
    for rel, result in changed.items():
        assert result.output == (folder / "after" / rel).read_bytes(), rel
    assert expected_report == (folder / "report.txt").read_text()


@pytest.mark.parametrize("case", PROJECTS)
def test_project_output_compiles_keeps_comments_and_is_stable(case, tmp_path):
    """The converted program (before/ with after/ over it) compiles, keeps every comment, and
    converting it again changes no file."""
    shutil.copytree(FIXTURES / case / "before", tmp_path, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / case / "after", tmp_path, dirs_exist_ok=True)
    for rel in project_files(FIXTURES / case / "after"):
        code = (tmp_path / rel).read_text()
        compile(code, rel, "exec")
        assert not comments((FIXTURES / case / "before" / rel).read_text()) - comments(code), rel
    again = convert_project(tmp_path)
    assert [rel for rel, r in again.items() if r.changed] == []
