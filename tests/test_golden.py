"""Golden fixtures: every fixtures/<case>/before.py converts to exactly after.py.

Each case also checks that the output compiles, that converting it again changes nothing,
that every comment of the input survives (but those the report says it dropped: a comment
that named what an edit replaced), and that the report matches report.txt.
`pytest --update-goldens` rewrites after.py and report.txt from the current converter.

A case with an `after_fsdp.py` also converts with `--strategy fsdp` to exactly that file (and
`report_fsdp.txt`), with the same checks; to add one, create an empty `after_fsdp.py` and run
`pytest --update-goldens`.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from ddpify.convert import Options, convert

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p.parent.name for p in FIXTURES.glob("*/before.py"))
FSDP_CASES = sorted(p.parent.name for p in FIXTURES.glob("*/after_fsdp.py"))
STRATEGIES = [(case, "ddp") for case in CASES] + [(case, "fsdp") for case in FSDP_CASES]
SUFFIX = {"ddp": "", "fsdp": "_fsdp"}


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
