"""`Facts.origins` expands each expression once, however many paths reach it.

A lattice of names where each is assigned from every name of the level below has width**depth
paths from the top to the loader it comes from; a walk that re-expands per path (as it did,
when the standard library's `email/_header_value_parser.py` did not convert in 10 minutes)
looks up the sources of a name once per path. Counted, not timed (timing is in
bench/stdlib_speed.py).
"""

from __future__ import annotations

import libcst as cst

from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module

WIDTH, LEVELS = 4, 5  # within `origins`' depth of 6


def _lattice() -> str:
    lines = ["from torch.utils.data import DataLoader", *(f"v0_{j} = DataLoader(data{j})" for j in range(WIDTH))]
    for level in range(1, LEVELS + 1):
        lines += [f"v{level}_{j} = v{level - 1}_{i}" for j in range(WIDTH) for i in range(WIDTH)]
    return "\n".join(lines) + f"\nfor batch in v{LEVELS}_0:\n    pass\n"


def _counted(monkeypatch) -> list[int]:
    calls = [0]
    sources = Facts.sources

    def counting(self, ref):
        calls[0] += 1
        return sources(self, ref)

    monkeypatch.setattr(Facts, "sources", counting)
    return calls


def test_origins_expands_each_expression_once_per_depth(monkeypatch):
    facts = Facts(parse_module(_lattice().encode()))
    calls = _counted(monkeypatch)
    origins = facts.origins(facts.loops[0].iter)
    assert [facts.code(o) for o in origins] == [f"DataLoader(data{j})" for j in range(WIDTH)]
    # each value sits at one depth from the loop here: one lookup per name read, not per path
    assert calls[0] == 1 + WIDTH + WIDTH * WIDTH * (LEVELS - 1) < WIDTH ** LEVELS
    facts.origins(facts.loops[0].iter)
    assert calls[0] == 1 + WIDTH + WIDTH * WIDTH * (LEVELS - 1)  # asked again: memoised


def test_origins_through_returned_tuples_of_a_recursive_helper():
    source = ("from torch.utils.data import DataLoader\n"
              "def build(n):\n"
              "    if n:\n"
              "        return build(n - 1)\n"
              "    return DataLoader(a), DataLoader(b)\n"
              "train, val = build(3)\n"
              "for batch in train:\n"
              "    pass\n")
    facts = Facts(parse_module(source.encode()))
    origins = facts.origins(facts.loops[0].iter)
    assert [facts.code(o) for o in origins if isinstance(o, cst.Call)] == ["DataLoader(a)"]
