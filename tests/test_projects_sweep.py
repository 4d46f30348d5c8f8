"""bench/projects_sweep.py's verdict: it reads the conversion's records, so a gap that no
edit or warning covers is named (a rewrite left out stands in for a rewrite that missed)."""

from __future__ import annotations

import importlib.util

import pytest

from ddpify.convert import plan_program
from ddpify.options import Options
from ddpify.inputs.program import load

from tests.support.env import FIXTURES

_spec = importlib.util.spec_from_file_location("projects_sweep", FIXTURES.parent / "bench" / "projects_sweep.py")
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

ENTRY = FIXTURES / "project_trainer" / "before" / "train.py"


def audit(skip: frozenset[str] = frozenset()) -> dict:
    program = load(ENTRY, ENTRY.read_bytes())
    facts, edits, gate = plan_program(program, Options(skip=skip))
    assert gate is None
    return sweep.audit(program, facts, edits)


def test_the_converted_project_has_no_silent_gap_and_every_kind_is_checked():
    found = audit()
    assert found["silent"] == 0 and found["gaps"] == {}
    assert found["checked"] == {"writes": 2, "unreached_writes": 0, "optimizers": 1, "batch_loops": 1,
                                "sharded_loops": 1}


@pytest.mark.parametrize("skip, kind, where", [
    ("main-process-only", "writes", ["trainer.py:with open(\"history.csv\", \"a\", newline=\"\") as f:",
                                     "trainer.py:torch.save(self.model.state_dict(), self.checkpoint)"]),
    ("wrap-model", "models", ["train.py:optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0"]),
    ("set-epoch", "epochs", ["trainer.py:for x, y in loader:"]),
])
def test_a_gap_no_record_covers_is_named_with_its_file(skip, kind, where):
    found = audit(frozenset({skip}))
    assert found["gaps"] == {kind: where} and found["silent"] == len(where)


def test_an_unsharded_loader_is_a_gap_unless_a_warning_covers_it():
    found = audit(frozenset({"shard-data"}))
    assert list(found["gaps"]) == ["loaders"] and found["gaps"]["loaders"][0].startswith("trainer.py:")


def test_a_write_whose_if_takes_the_guard_is_covered(tmp_path):
    entry = tmp_path / "train.py"
    entry.write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "model = torch.nn.Linear(2, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)\n"
        "def keep(epoch):\n    torch.save(model.state_dict(), f'{epoch}.pt')\n"
        "for epoch in range(4):\n    for x, y in loader:\n        ((model(x) - y) ** 2).mean().backward()\n"
        "        optimizer.step()\n    if epoch % 2 == 0:\n        keep(epoch)\n")
    program = load(entry, entry.read_bytes())
    for skip, gaps in [(frozenset(), {}), (frozenset({"main-process-only"}), {"writes": ["train.py:torch.save("
                                                                                      "model.state_dict(), f'{epoch}.pt')"]})]:
        found = sweep.audit(program, *plan_program(program, Options(skip=skip))[:2])
        assert found["gaps"] == gaps and found["checked"]["writes"] == 1
