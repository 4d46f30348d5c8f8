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
    assert [f.line for f in check(silenced).findings] == [10, 13, 14, 25]
    assert [f.line for f in check(source.replace(line, line + "  # noqa")).findings] == [10, 13, 14, 25]
    assert check(source.replace(line, line + "  # noqa: DDP001")).findings == check(source).findings
    done = fix(silenced)
    assert line + "  # noqa: DDP003" in done.output.decode() and done.fixed == 4


def test_a_rank_used_as_a_device_several_times_is_bound_once():
    """The DDP001 fix of one function's repeated `dist.get_rank()` binds `local_rank` once, before
    the first use (issue 31 item 11); it still does when that first use is silenced."""
    fixed = (CASES / "DDP001" / "fixed.py").read_text()
    assert fixed.count('local_rank = int(os.environ.get("LOCAL_RANK", dist.get_rank()))') == 1
    assert "device_ids=[local_rank]" in fixed and 'f"cuda:{local_rank}"' in fixed
    source = (CASES / "DDP001" / "trigger.py").read_text()
    first = "model = DDP(model, device_ids=[dist.get_rank()])"
    done = fix(source.replace(first, first + "  # noqa: DDP001"), select(frozenset({"DDP001"})))
    output = done.output.decode()
    assert f"    local_rank = int(os.environ.get(\"LOCAL_RANK\", dist.get_rank()))\n    {first}  # noqa" in output
    assert 'f"cuda:{local_rank}"' in output
    compile(output, "fixed.py", "exec")


def test_a_prepared_model_is_not_fixed_through_module():
    """accelerate's `prepare` wraps only where there are several processes: `model.module.x` would
    break a run of one. DDP008 names `accelerator.unwrap_model(model)` there and offers no fix."""
    source = (CASES / "DDP008" / "trigger_accelerate.py").read_bytes()
    found = check(source, select(frozenset({"DDP008"}))).findings
    assert found and not any(f.fixable for f in found)
    assert all("accelerator.unwrap_model(model)" in f.message for f in found)
    assert fix(source).output == source
