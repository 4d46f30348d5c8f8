"""What fills a container in place, and which loops bind a name: one index each in
`ddpify.syntax.facts` (`Facts.filled`, `Facts.loops_binding`), the answer the object core, the
call graph, the wraps of a `ModuleList`'s modules and the same-on-every-process proofs all read.
Asked directly; near misses sit next to the positives."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddpify.analysis.same_values import same_everywhere
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted
from ddpify.syntax.parse import parse_module


def facts_of(source: str) -> Facts:
    return Facts(parse_module(textwrap.dedent(source)))


def read(facts: Facts, code: str) -> cst.BaseExpression:
    """The last expression of the module spelled `code`."""
    found = [n for n in [*facts.names, *facts.attributes] if dotted(n) == code]
    return max(found, key=lambda n: facts.spans[n][0])


@pytest.mark.parametrize("source, name, fills", [
    ("xs = []\nxs.append(1)\nxs.extend([2])\nxs.insert(0, 3)\nxs\n", "xs",
     ["xs.append(1)", "xs.extend([2])", "xs.insert(0, 3)"]),  # in source order
    ("s = set()\ns.add(1)\ns.update({2})\ns\n", "s", ["s.add(1)", "s.update({2})"]),
    ("d = {}\nd.setdefault('k', 1)\nd\n", "d", ["d.setdefault('k', 1)"]),
    ("from collections import deque\nq = deque()\nq.appendleft(1)\nq\n", "q", ["q.appendleft(1)"]),
    ("opt = make()\nopt.add_param_group({'params': []})\nopt\n", "opt", ["opt.add_param_group({'params': []})"]),
    ("class T:\n    def __init__(self):\n        self.xs = []\n    def add(self, x):\n        self.xs.append(x)\n"
     "    def all(self):\n        return self.xs\n", "self.xs", ["self.xs.append(x)"]),  # another method's `self.xs`
    # near misses: another name, a name of another function, a method that adds nothing, a call on an item
    ("xs = []\nys = []\nys.append(1)\nxs\n", "xs", []),
    ("xs = []\ndef f():\n    xs = []\n    xs.append(1)\nxs\n", "xs", []),
    ("xs = []\nxs.pop()\nxs.index(1)\nxs.count(1)\nxs\n", "xs", []),
    ("xs = [[]]\nxs[0].append(1)\nxs\n", "xs", []),
])
def test_what_fills_a_container_in_place(source, name, fills):
    facts = facts_of(source)
    ref = facts.ref(read(facts, name))
    assert [facts.code(c) for _, c in facts.filled(ref)] == fills


@pytest.mark.parametrize("source, name, iterated", [
    ("for net in nets:\n    pass\nnet\n", "net", ["nets"]),
    ("for n, p in model.named_parameters():\n    pass\nfor p in ps:\n    pass\np\n", "p",
     ["model.named_parameters()", "ps"]),  # in source order
    ("for i, (a, b) in enumerate(pairs):\n    pass\nb\n", "b", ["enumerate(pairs)"]),
    ("def f():\n    for x in xs:\n        pass\n    return x\n", "x", ["xs"]),
    # near misses: a comprehension's target, a loop of another function, an attribute target, a while
    ("ys = [x for x in xs]\nx = 1\nx\n", "x", []),
    ("def f():\n    for x in xs:\n        pass\nx = 1\nx\n", "x", []),
    ("class T:\n    def f(self):\n        for self.x in xs:\n            pass\n        return self.x\n", "self.x", []),
    ("x = 0\nwhile x < 3:\n    x += 1\nx\n", "x", []),
])
def test_which_loops_bind_a_name(source, name, iterated):
    facts = facts_of(source)
    ref = facts.ref(read(facts, name))
    assert [facts.code(lp.iter) for lp in facts.loops_binding(ref)] == iterated


@pytest.mark.parametrize("source, shared", [
    ("def main(args):\n    xs = []\n    xs.append(1)\n    xs.insert(0, 2)\n    if xs:\n        pass\n", True),
    # near misses: one fill of a value each process has its own
    ("import torch.distributed as dist\ndef main(args):\n    xs = []\n    xs.append(dist.get_rank())\n"
     "    if xs:\n        pass\n", False),
    ("import torch.distributed as dist\ndef main(args):\n    xs = [1]\n    xs.append(2)\n"
     "    xs.insert(0, dist.get_rank())\n    if xs:\n        pass\n", False),
])
def test_a_list_filled_in_place_is_shared_only_when_every_fill_is(source, shared):
    facts = facts_of(source)
    test = next(n for n in facts.by_type[cst.If]).test
    assert same_everywhere(facts, test) is shared  # convert's answer (the core)
