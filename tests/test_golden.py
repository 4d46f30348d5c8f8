"""Golden fixtures: every fixtures/<case>/before.py converts to exactly after.py.

Each case also checks that the output compiles, that converting it again changes nothing,
that every comment of the input survives, and that the report matches report.txt.
`pytest --update-goldens` rewrites after.py and report.txt from the current converter.
"""

from __future__ import annotations

import io
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from ddpify.convert import convert

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p.parent.name for p in FIXTURES.glob("*/before.py"))


def comments(code: str) -> Counter:
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)


def report(result, name: str) -> str:
    return "".join(c.render(name) + "\n" for c in result.changes)


@pytest.mark.parametrize("case", CASES)
def test_golden(case, request):
    folder = FIXTURES / case
    before = (folder / "before.py").read_bytes()
    result = convert(before)
    expected_report = report(result, "before.py")
    if request.config.getoption("--update-goldens"):
        (folder / "after.py").write_bytes(result.output)
        (folder / "report.txt").write_text(expected_report)
    assert result.output == (folder / "after.py").read_bytes()
    assert expected_report == (folder / "report.txt").read_text()


@pytest.mark.parametrize("case", CASES)
def test_output_compiles_keeps_comments_and_is_stable(case):
    before = (FIXTURES / case / "before.py").read_text()
    result = convert(before)
    compile(result.code, f"{case}/after.py", "exec")
    assert not comments(before) - comments(result.code), "a comment of the input was lost"
    again = convert(result.output)
    assert again.output == result.output, "converting the output again changed it"
