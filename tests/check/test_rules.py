"""Each rule on its fixtures: `fixtures/check/<CODE>/trigger.py` gives exactly the findings below
(code, line, column), and `near_miss*.py`, the correct shapes closest to the bug, give none (a
rule that looks at the whole file has one near miss per file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddpify.check import CODES, RULES, check

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "check"

TRIGGERS = {
    "DDP001": [(12, 27), (22, 40), (23, 36), (24, 35), (25, 69)],  # RANK, args.rank, get_rank(), f-string, .get
    "DDP002": [(16, 51)],
    "DDP003": [(7, 39), (9, 22)],  # sampler=, batch_sampler=
    "DDP004": [(17, 23), (18, 9), (19, 17), (20, 9)],  # helper that all-reduces, barrier, forward, backward
    "DDP005": [(15, 12), (17, 12), (24, 11)],  # return on NaN, break on time, while on loss
    "DDP006": [(9, 5), (18, 5)],  # in a helper every rank calls, in a spawned worker
    "DDP007": [(8, 47), (15, 20), (16, 20)],  # state_dict() through a parameter, state_dict(), the wrapper
    "DDP008": [(20, 19), (25, 42), (32, 14), (33, 38)],  # through a parameter, after a wrap, after a conditional wrap
    "DDP009": [(12, 18)],
    "DDP010": [(20, 37), (22, 20), (28, 43)],  # read by a loop here, passed to a test function, from a helper
    "DDP011": [(7, 5)],
    "DDP012": [(11, 5)],
    "DDP013": [(8, 37)],
}


def found(path: Path) -> list[tuple[str, int, int]]:
    return [(f.code, f.line, f.column) for f in check(path.read_bytes()).findings]


def test_every_rule_has_a_trigger_and_a_near_miss():
    assert set(TRIGGERS) == set(CODES)
    assert sorted(p.name for p in CASES.iterdir()) == sorted(CODES)
    for code in CODES:
        assert {p.name for p in (CASES / code).iterdir()} >= {"trigger.py", "near_miss.py"}


@pytest.mark.parametrize("code", sorted(TRIGGERS))
def test_trigger(code):
    assert found(CASES / code / "trigger.py") == [(code, line, column) for line, column in TRIGGERS[code]]


NEAR_MISSES = sorted(CASES.glob("*/near_miss*.py"))


@pytest.mark.parametrize("path", NEAR_MISSES, ids=[f"{p.parent.name}/{p.name}" for p in NEAR_MISSES])
def test_near_miss(path):
    assert found(path) == []


def test_rules_are_in_code_order_with_unique_names():
    assert [r.code for r in RULES] == sorted(r.code for r in RULES)
    assert len({r.name for r in RULES}) == len(RULES)
