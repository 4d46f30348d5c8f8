"""`--fix`: each fixable rule's trigger fixture becomes exactly `fixed.py` (that rule alone;
`pytest --update-goldens` rewrites it, read the diff), which compiles and has no fixable finding
left; correct code and `# noqa` lines are left as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddpify.check import CODES, check, fix, select

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "check"
FIXABLE = sorted(code for code, rule in CODES.items() if rule.fixable)


def test_the_fixable_rules_are_those_with_a_fixed_fixture():
    assert FIXABLE == sorted(p.parent.name for p in CASES.glob("*/fixed.py"))
    assert FIXABLE == ["DDP001", "DDP003", "DDP006", "DDP007", "DDP008", "DDP013"]


@pytest.mark.parametrize("code", FIXABLE)
def test_fix(code, request):
    rules = select(frozenset({code}))
    done = fix((CASES / code / "trigger.py").read_bytes(), rules)
    if request.config.getoption("--update-goldens"):
        (CASES / code / "fixed.py").write_bytes(done.output)
    expected = (CASES / code / "fixed.py").read_bytes()
    assert done.output == expected
    compile(expected, "fixed.py", "exec")
    assert done.fixed == sum(f.fixable for f in check((CASES / code / "trigger.py").read_bytes(), rules).findings)
    assert not any(f.fixable for f in done.report.findings)
    assert done.report == check(expected, rules)


@pytest.mark.parametrize("code", sorted(CODES))
def test_fix_leaves_correct_code_alone(code):
    source = (CASES / code / "near_miss.py").read_bytes()
    assert fix(source).output == source


def test_rules_without_a_fix_offer_none():
    for code in sorted(set(CODES) - set(FIXABLE)):
        assert not any(f.fixable for f in check((CASES / code / "trigger.py").read_bytes()).findings), code


def test_noqa_silences_a_finding_and_its_fix():
    source = (CASES / "DDP003" / "trigger.py").read_text()
    line = "loader = DataLoader(ds, batch_size=8, shuffle=True, sampler=sampler)"
    silenced = source.replace(line, line + "  # noqa: DDP003")
    assert [f.line for f in check(silenced).findings] == [10, 13, 14]
    assert [f.line for f in check(source.replace(line, line + "  # noqa")).findings] == [10, 13, 14]
    assert check(source.replace(line, line + "  # noqa: DDP001")).findings == check(source).findings
    done = fix(silenced)
    assert line + "  # noqa: DDP003" in done.output.decode() and done.fixed == 3
