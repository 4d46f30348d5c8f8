"""A keyword a rewrite adds to a call (`disable=` of a progress bar, `file=`, `map_location=`,
`exist_ok=`) must not be one the call already passes, in writing or through a `**` mapping it
unpacks: "got multiple values for keyword argument", a TypeError on every process. Each such
rewrite asks `Facts.keyword_given` first and adds it with `build.add_keyword`. Decision 0206:
disentangling-vae's trainer (25c) built `kwargs = dict(..., disable=not self.is_progress_bar)`
and called `trange(len(data_loader), **kwargs)`; the converted call added `disable=` beside it.
Asked directly; near misses sit next to the positives."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddpify.output import build
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module


def facts_of(source: str) -> Facts:
    return Facts(parse_module(textwrap.dedent(source)))


def last_call(facts: Facts, name: str) -> cst.Call:
    calls = [c for c in facts.calls if facts.code(c.func) == name]
    return max(calls, key=lambda c: facts.spans[c][0])


@pytest.mark.parametrize("source, values, spread, known", [
    # written in the call
    ("bar(xs, leave=False, disable=not verbose)", ["not verbose"], False, True),
    # a dict bound once, `dict(...)` or written out (the 25c trainer's)
    ("kw = dict(leave=False, disable=not verbose)\nbar(xs, **kw)", ["not verbose"], True, True),
    ("kw = {'disable': quiet}\nbar(xs, **kw)", ["quiet"], True, True),
    ("bar(xs, **{'disable': quiet})", ["quiet"], True, True),
    # stored by item, or merged by update, before the call
    ("kw = {}\nkw['disable'] = quiet\nbar(xs, **kw)", ["quiet"], True, True),
    ("kw = dict(leave=False)\nkw.update(disable=quiet)\nbar(xs, **kw)", ["quiet"], True, True),
    # keys not known: a call's result, a parameter nobody fills, a `**` inside
    ("kw = options()\nbar(xs, **kw)", [], True, False),
    ("def f(kw):\n    bar(xs, **kw)", [], True, False),
    ("kw = dict(leave=False, **more)\nbar(xs, **kw)", [], True, False),
    # near misses: known keys without it, no mapping at all
    ("kw = dict(leave=False, desc='train')\nbar(xs, **kw)", [], False, True),
    ("kw = {}\nkw['leave'] = False\nbar(xs, **kw)", [], False, True),
    ("bar(xs, leave=False)", [], False, True),
    ("kw = dict(disable=True)\nbar(xs, leave=False)", [], False, True),
])
def test_what_a_call_passes_as_a_keyword(source, values, spread, known):
    facts = facts_of(source + "\n")
    given = facts.keyword_given(last_call(facts, "bar"), "disable")
    assert ([facts.code(v) for v in given.values], given.spread, given.known) == (values, spread, known)


@pytest.mark.parametrize("call, spread, override, after", [
    ("bar(xs)", False, False, "bar(xs, disable=not main())"),
    ("bar(xs, **kw)", False, False, "bar(xs, **kw, disable=not main())"),  # keys known, `disable` not among them
    ("bar(xs, **kw)", True, False, 'bar(xs, **{"disable": not main(), **kw})'),
    ("bar(xs, **kw, leave=False)", True, False, 'bar(xs, **{"disable": not main(), **kw}, leave=False)'),
    ("bar(xs, **a, **b)", True, False, 'bar(xs, **{"disable": not main(), **a, **b})'),
    ("bar(xs, **kw)", True, True, 'bar(xs, **{**kw, "disable": not main()})'),
])
def test_a_keyword_is_added_where_it_cannot_be_given_twice(call, spread, override, after):
    node = cst.ensure_type(cst.parse_expression(call), cst.Call)
    added = build.add_keyword(node, "disable", "not main()", spread, override)
    assert cst.Module([]).code_for_node(added) == after


@pytest.mark.parametrize("value, after", [
    ("not verbose", "not verbose or not main()"),
    ("quiet if a else loud", "(quiet if a else loud) or not main()"),
    ("a and b", "a and b or not main()"),
    ("False", "not main()"),
])
def test_a_value_is_combined_with_a_test_as_written(value, after):
    combined = build.either(cst.parse_expression(value), "not main()")
    assert cst.Module([]).code_for_node(combined) == after

