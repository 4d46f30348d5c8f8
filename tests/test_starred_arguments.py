"""What a call passes for a parameter that a `*xs` or `**kw` argument fills (`Facts.argument_for`,
`Facts.spread_argument`, and what the parameter may hold, `Facts.sources`): the items are bound
where they are written out (a tuple, list or dict in the call, a name bound once to one, a
parameter the one call of its function fills with one). Decision 0162: the twentieth sweep's
torch-associative handed its two loaders as one tuple to a generator, `dual_iterator(*dataset)`,
and no parameter of it was bound. Asked directly; near misses sit next to the positives."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddpify.syntax.facts import Facts, Ref
from ddpify.syntax.names import dotted
from ddpify.syntax.parse import parse_module


def facts_of(source: str) -> Facts:
    return Facts(parse_module(textwrap.dedent(source)))


def function(facts: Facts, name: str) -> cst.FunctionDef:
    (func,) = [f for f in facts.findall(facts.module, cst.FunctionDef) if f.name.value == name]
    return func


def last_call(facts: Facts, name: str) -> cst.Call:
    """The last call whose function is spelled `name` (`f`, `c.m`)."""
    calls = [c for c in facts.calls if facts.code(c.func) == name]
    return max(calls, key=lambda c: facts.spans[c][0])


def code(facts: Facts, node: cst.CSTNode | None) -> str | None:
    return None if node is None else facts.code(node)


F = "def f(a, b, c=0):\n    pass\n"


@pytest.mark.parametrize("source, call, param, passed", [
    (F + "f(*(x, y))\n", "f", "b", "y"),  # a tuple written in the call
    (F + "xs = [x, y]\nf(*xs)\n", "f", "a", "x"),  # a name bound once to a list
    (F + "rest = (y,)\nf(x, *rest)\n", "f", "b", "y"),  # after a plain argument
    (F + "rest = (y, *(z,))\nf(x, *rest)\n", "f", "c", "z"),  # a starred item inside the tuple
    (F + "kw = dict(a=x, b=y)\nf(**kw)\n", "f", "b", "y"),  # `**` of dict(...)
    (F + "f(**{'a': x, 'b': y})\n", "f", "a", "x"),  # `**` of a dict written out
    ("class C:\n    def m(self, a, b):\n        pass\nxs = (x, y)\nC().m(*xs)\n", "C().m", "b", "y"),  # a method
    # near misses: the items unknown, so the places after them too (the plain `y` after `*xs` is no
    # longer taken for the first parameter); a name bound twice; past the items; a key not given
    (F + "f(*load(), y)\n", "f", "a", None),
    (F + "f(*load(), y)\n", "f", "b", None),
    (F + "xs = [x, y]\nxs = [y, x]\nf(*xs)\n", "f", "a", None),
    (F + "xs = (x, y)\nf(*xs)\n", "f", "c", None),
    (F + "kw = dict(a=x)\nf(**kw)\n", "f", "b", None),
    (F + "kw = dict(a=x, **more)\nf(**kw)\n", "f", "a", "x"),
    (F + "kw = dict(x, a=x)\nf(**kw)\n", "f", "a", None),  # a mapping beside the keywords: unknown
])
def test_what_a_starred_argument_passes_where_the_call_writes_its_items(source, call, param, passed):
    facts = facts_of(source)
    site = last_call(facts, call)
    func = facts.user_functions(site)[0]
    assert code(facts, facts.argument_for(site, func, param)) == passed


THROUGH = """
def pair(ref, other):
    yield from zip(ref, other)

def fit(model, loaders):
    for batch in pair(*loaders):
        pass

fit(net, (source, target))
"""


@pytest.mark.parametrize("source, param, spread, held", [
    # through a parameter that the one call of `fit` fills with a tuple: not nameable at the call
    # (`argument_for` is None there), but `loaders[1]` is what `other` holds there, and `target` is its source
    (THROUGH, "other", ("loaders", 1, "target"), ["target"]),
    (THROUGH.replace("(source, target)", "[source, *rest]"), "other", None, []),  # items unknown
    (THROUGH + "fit(net, (a, b))\n", "other", None, []),  # two calls of fit: which tuple is not one answer
    (THROUGH.replace("def fit(model, loaders):", "def fit(model, loaders):\n    loaders = list(loaders)"),
     "other", None, []),  # bound again inside fit
    (THROUGH.replace("pair(*loaders)", "pair(**loaders)").replace("(source, target)", "dict(ref=source, other=target)"),
     "other", ("loaders", "other", "target"), ["target"]),
])
def test_what_a_parameter_filled_by_a_starred_parameter_holds(source, param, spread, held):
    facts = facts_of(source)
    site = next(c for c in facts.calls if dotted(c.func) == "pair")
    func = function(facts, "pair")
    assert facts.argument_for(site, func, param) is None
    found = facts.spread_argument(site, func, param)
    assert (None if found is None else (code(facts, found[0]), found[1], code(facts, found[2]))) == spread
    assert [code(facts, s) for s in facts.sources(Ref(func, param))] == held
