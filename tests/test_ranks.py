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


INSTANCE = """\
import torch.distributed as dist
class Learner:
    def __init__(self):
        self.lead = True
    def step(self):
        if self.lead:
            pass
def run(flag):
    learner = Learner()
    learner.lead = {value}
    learner.step()
"""


@pytest.mark.parametrize("value, expected", [("dist.get_rank() == 0", True), ("flag", False), ("False", False)])
def test_a_flag_the_program_sets_on_its_instance_is_read_where_the_class_tests_it(value, expected):
    """`learner.lead = dist.get_rank() == 0` outside the class makes `if self.lead:` of its method a
    rank test (DiffWave's `is_master`), for convert and check alike; a flag set from anything else
    does not."""
    module = cst.parse_module(INSTANCE.format(value=value))
    facts = Facts(module)
    assert is_rank_test(facts, mt.findall(module, cst.If)[0].test) is expected


COORDINATE = """\
class Dims:
    @property
    def dp_coord(self):
        return self.mesh.get_local_rank(mesh_dim="dp"), self.replicas
class Trainer:
    def __init__(self, dims):
        self.dims = dims
    def save(self):
        if self.dims.dp_coord[0] == 0:
            pass
"""


def test_a_device_mesh_coordinate_of_an_object_made_elsewhere_is_a_rank():
    """`self.dims.dp_coord[0] == 0`, a property of the program returning the rank's coordinate along
    a mesh, read on an object whose maker ddpify does not see: a rank test."""
    module = cst.parse_module(COORDINATE)
    assert is_rank_test(Facts(module), mt.findall(module, cst.If)[0].test)
    plain = cst.parse_module(COORDINATE.replace('self.mesh.get_local_rank(mesh_dim="dp")', "0"))
    assert not is_rank_test(Facts(plain), mt.findall(plain, cst.If)[0].test)


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


def _questions(n: int, entry: str, monkeypatch) -> tuple[int, int, set[bool]]:
    """The rank questions (`rank_dependent`) and shared-value questions (`SameValues._core`) that
    answering every test of a ring of `n` functions asks: each `f{i}(x)` passes `x` on to the next
    two and tests it, so every parameter is a source of every other (one cycle of names). Past a
    budget of questions it stops (without the answers kept per question, the count doubles with
    every function or two: 1,064 rank questions for 8 functions, 11,148 for 12)."""
    from ddpify.analysis.ranks import Ranks
    from ddpify.analysis.same_values import SameValues

    code = "import torch\nimport torch.distributed as dist\n" + "".join(
        f"def f{i}(x):\n    f{(i + 1) % n}(x)\n    f{(i + 2) % n}(x)\n    if x:\n        torch.save(x, 'a')\n"
        for i in range(n)) + entry
    module = cst.parse_module(code)
    facts = Facts(module)
    asked, proved = [], []

    def count(log, original):
        def counted(*args):
            log.append(args[1])
            if len(log) > 100_000:
                raise RecursionError("over budget")
            return original(*args)
        return counted

    monkeypatch.setattr(Ranks, "rank_dependent", count(asked, Ranks.rank_dependent))
    monkeypatch.setattr(SameValues, "_core", count(proved, SameValues._core))
    answers = {is_rank_test(facts, branch.test) for branch in mt.findall(module, cst.If)}
    monkeypatch.undo()
    return len(asked), len(proved), answers


@pytest.mark.parametrize("entry, expected", [("", False), ("f0(dist.get_rank() == 0)\n", True)],
                         ids=["no rank", "rank passed in"])
def test_a_cycle_of_calls_costs_no_more_than_the_square_of_its_size(entry, expected, monkeypatch):
    """A name passed on to callees costs no depth, so in a cycle of calls `rank_dependent` and the
    shared-value core (which assumes a name it is proving shared) followed every path again: the
    cut answers inside the cycle were never kept (pytorch_geometric's distributed_sampling.py in
    its checkout, 550 files, did not finish in 28 minutes). Each question now keeps its names'
    answers until it ends (`Cycles.remember`, `SameValues._core_of`): twice the functions, at most
    about four times the questions, the same answers (all False without a rank; all True where the
    rank is passed into the cycle)."""
    small = _questions(8, entry, monkeypatch)
    large = _questions(16, entry, monkeypatch)
    assert small[2] == large[2] == {expected}
    assert large[0] <= 5 * small[0] and large[1] <= 5 * small[1]


EXPORT = """\
import torch.distributed as dist
class Trainer:
    def export(self):
        if self.dims.replica_rank > 0:
            return
        dist.barrier()
    def save(self):
        self.export()
"""


@pytest.mark.parametrize("code, expected", [(EXPORT, False), (EXPORT.replace("            return\n", "            pass\n"), True)],
                         ids=["after_its_own_rank_return", "on_every_rank"])
def test_a_helper_whose_collective_follows_its_own_rank_return_is_not_one_at_its_call(code, expected):
    """`self.export()` whose barrier runs after `if replica_rank > 0: return` follows a protocol of
    its own (cosmos-rl's export_safetensors, called in the first replica's block): its call is no
    collective every process must make, as one whose barrier is under its own rank test."""
    from ddpify.analysis.same_values import ranks
    module = cst.parse_module(code)
    facts = Facts(module)
    call = next(c for c in facts.calls if mt.is_method_call(c, "export"))
    assert ranks(facts).is_collective(call) is expected
