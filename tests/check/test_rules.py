"""Each rule on its fixtures: every `fixtures/check/<CODE>/trigger*.py` gives exactly the findings
of its snapshot `trigger*.txt` (`line:column: CODE message`, all of that rule; `pytest
--update-goldens` rewrites the snapshots, read the diff), and `near_miss*.py`, the correct shapes
closest to the bug, give none (a rule that looks at the whole file has one near miss per file).
Each fixture is checked with the default rules plus its own (advice rules run only when named).

A folder case (`<CODE>/trigger_<name>/`, `near_miss_<name>/`) is a small project: each of its
`.py` files is checked as `ddpify check FILE` checks it, in its program (the modules it imports,
and for a module a script of the folder that imports it: decision 0036), and the snapshot
`trigger_<name>.txt` lists the findings of all its files (`path:line:column: CODE message`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddpify.check import BUGS, CODES, RULES, check

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "check"
TRIGGERS = sorted([*CASES.glob("*/trigger*.py"), *(p for p in CASES.glob("*/trigger*") if p.is_dir())])
NEAR_MISSES = sorted([*CASES.glob("*/near_miss*.py"), *(p for p in CASES.glob("*/near_miss*") if p.is_dir())])


def ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in paths]


def findings(path: Path) -> str:
    rules = tuple(sorted({*BUGS, CODES[path.parent.name]}, key=lambda r: r.code))
    if path.is_dir():
        return _program_findings(path, rules)
    return "".join(f"{f.line}:{f.column}: {f.code} {f.message}\n" for f in check(path.read_bytes(), rules).findings)


def _program_findings(folder: Path, rules) -> str:
    """Each file of a folder case checked alone, as `ddpify check FILE` reads it."""
    from ddpify.cli.check import _check_one
    from ddpify.inputs.files import Source

    lines = []
    for file in sorted(folder.rglob("*.py")):
        outcome = _check_one(Source(file), rules, False)
        assert not outcome.error, outcome.error
        lines += [f"{file.relative_to(folder).as_posix()}:{f.line}:{f.column}: {f.code} {f.message}\n"
                  for f in outcome.report.findings]
    return "".join(lines)


def test_every_rule_has_a_trigger_and_a_near_miss():
    assert sorted(p.name for p in CASES.iterdir()) == sorted(CODES)
    for code in CODES:
        names = {p.name for p in (CASES / code).iterdir()}
        assert "trigger.py" in names and "near_miss.py" in names, code
        triggers = {p.stem for p in (CASES / code).glob("trigger*") if p.suffix == ".py" or p.is_dir()}
        assert triggers == {p.stem for p in (CASES / code).glob("trigger*.txt")}


@pytest.mark.parametrize("path", TRIGGERS, ids=ids(TRIGGERS))
def test_trigger(path, request):
    snapshot = path.with_suffix(".txt") if path.is_file() else path.with_name(path.name + ".txt")
    got = findings(path)
    if request.config.getoption("--update-goldens"):
        snapshot.write_text(got)
    assert got == snapshot.read_text()
    assert got and {line.split()[1] for line in got.splitlines()} == {path.parent.name}


@pytest.mark.parametrize("path", NEAR_MISSES, ids=ids(NEAR_MISSES))
def test_near_miss(path):
    assert findings(path) == ""


def test_rules_are_in_code_order_with_unique_names():
    assert [r.code for r in RULES] == sorted(r.code for r in RULES)
    assert len({r.name for r in RULES}) == len(RULES)
    assert all(r.find.__name__ == r.name.replace("-", "_") for r in RULES)


def test_advice_rules_run_only_when_selected():
    assert BUGS == tuple(r for r in RULES if r.bug)


def test_a_one_process_group_is_checked_only_for_what_one_process_gets_wrong():
    """`init_process_group(..., world_size=1)`: no other process writes, waits or disagrees (the
    rules marked `several` are skipped, with a note), but the wrapper's own bugs remain."""
    source = (CASES / "DDP006" / "near_miss_one_process.py").read_text()
    assert check(source).findings == [] and check(source).note == \
        "one process (init_process_group(world_size=1)): rules about several processes skipped"
    wrapper_bug = source.replace('torch.save(model.module.state_dict(), "model.pt")',
                                 'torch.save(model.state_dict(), "model.pt")')
    assert [f.code for f in check(wrapper_bug).findings] == ["DDP007"]
    several = {r.code for r in RULES if r.several}
    assert {"DDP004", "DDP005", "DDP006", "DDP014"} <= several and not several & {"DDP002", "DDP007", "DDP008"}
