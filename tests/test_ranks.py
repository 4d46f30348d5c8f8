"""ddpify.analysis.ranks: a test asks which process this is by what its values are, not by a
substring of a name (issue 27, class 13)."""

from __future__ import annotations

import libcst as cst
import pytest

from ddpify.analysis.same_values import is_rank_test
from ddpify.syntax.facts import Facts
from ddpify.syntax import matchers as mt
from tests.support.snippets import only

HEADER = """\
import os
import argparse
import torch.distributed as dist
from ddpify_runtime import is_main_process
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--ranking_loss", type=float, default=0.0)
args = parser.parse_args()
me = int(os.environ.get("LOCAL_RANK", 0))
who = int(os.environ["RANK"])
here = dist.get_rank()
ranking = [3, 1, 2]
"""

CASES = [
    ("rank == 0", True),
    ("args.local_rank in (-1, 0)", True),
    ("dist.get_rank() == 0", True),
    ("is_main_process()", True),
    ('int(os.environ["RANK"]) == 0', True),
    ("me == 0", True),      # from the launcher's LOCAL_RANK, whatever its name
    ("who == 0", True),     # from RANK
    ("here == 0", True),    # from dist.get_rank()
    ("args.ranking_loss > 0", False),   # `ranking` is another word
    ("len(ranking) > 2", False),
    ('os.environ.get("RANKING_MODE") == "x"', False),
    ("args.lr > 0", False),
]


@pytest.mark.parametrize("test, expected", CASES, ids=[c[0] for c in CASES])
def test_rank_tests_are_recognised_by_value(test, expected):
    module = cst.parse_module(HEADER + f"if {test}:\n    pass\n")
    facts = Facts(module)
    branch = mt.findall(module, cst.If)[-1]
    assert is_rank_test(facts, branch.test) is expected


def test_a_branch_on_a_ranking_option_is_not_a_rank_guard():
    """`if args.ranking_loss > 0: torch.save(...)` is guarded like any other save (it stayed on
    every process, silently, while any name holding "rank" counted as the user's own guard)."""
    code = """\
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset
parser = argparse.ArgumentParser()
parser.add_argument("--ranking_loss", type=float, default=1.0)
args = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
if args.ranking_loss > 0:
    torch.save(model.state_dict(), "m.pt")
"""
    out = only("main-process-only", code)
    assert "if args.ranking_loss > 0 and is_main_process():" in out
    guarded = code.replace("if args.ranking_loss > 0:", "if args.local_rank in (-1, 0):") \
        .replace('"--ranking_loss", type=float, default=1.0', '"--local_rank", type=int, default=-1')
    assert "is_main_process()" not in only("main-process-only", guarded)


def test_each_rank_question_is_answered_once(monkeypatch):
    """`rank_dependent` follows a name to what it holds: each test of a chain of 40 names
    (`a1 = a0` ... `if a39:`) followed the whole chain again, 940 questions for 40 tests
    (DomainBed: 31,172 for 54). Its answers are kept (`ddpify.analysis.cycles`): about three
    questions per test, the same answers."""
    from ddpify.analysis.ranks import Ranks

    n = 40
    code = "import torch.distributed as dist\na0 = dist.get_rank() == 0\n" + "".join(
        f"a{i} = a{i - 1}\n" for i in range(1, n)) + "".join(f"if a{i}:\n    pass\n" for i in range(n))
    module = cst.parse_module(code)
    facts = Facts(module)
    asked = []
    original = Ranks.rank_dependent
    monkeypatch.setattr(Ranks, "rank_dependent", lambda self, test, depth=2: asked.append(test) or original(
        self, test, depth))
    assert all(is_rank_test(facts, branch.test) for branch in mt.findall(module, cst.If))
    assert len(asked) <= 4 * n


def test_a_kept_answer_is_not_reused_inside_its_own_cycle():
    """`a = b`, `b = a or rank == 0`: `b` answered while `a` is being followed cuts the cycle at
    `a`; that answer is not kept for a question asked where `a` is not followed."""
    code = HEADER + "a = None\nb = a or me == 0\na = b\nif a:\n    pass\nif b:\n    pass\n"
    module = cst.parse_module(code)
    facts = Facts(module)
    first, second = mt.findall(module, cst.If)[-2:]
    assert is_rank_test(facts, first.test) and is_rank_test(facts, second.test)
