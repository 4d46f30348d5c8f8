"""The two passes every conversion and every check pays for besides LibCST's own: the collect
walk (syntax only) and the line numbers (one plain codegen), held against LibCST itself."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax import lines
from ddpify.syntax.lines import line_numbers, positions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRIVIA = {"BaseParenthesizableWhitespace", "SimpleWhitespace", "ParenthesizedWhitespace", "TrailingWhitespace",
          "EmptyLine", "Newline", "Comment", "Comma", "Dot", "AssignEqual", "Semicolon", "Colon", "LeftParen",
          "RightParen", "LeftSquareBracket", "RightSquareBracket", "LeftCurlyBrace", "RightCurlyBrace"}


def test_the_fields_the_walk_skips_hold_whitespace_comments_and_punctuation_only():
    """From the annotations of every LibCST node class: a field is skipped exactly when every
    node type it may hold is trivia (a LibCST release that mixes syntax into one fails here)."""
    trivia_only, mixed = set(), set()
    for node_type in vars(cst).values():
        if inspect.isclass(node_type) and issubclass(node_type, cst.CSTNode) and dataclasses.is_dataclass(node_type):
            for f in dataclasses.fields(node_type):
                held = set(re.findall(r"\b[A-Z]\w+", str(f.type))) - {"Sequence", "Union", "Optional",
                                                                       "MaybeSentinel", "None", "Literal", "DEFAULT"}
                if held:
                    (trivia_only if held <= TRIVIA else mixed).add(f.name)
    skipped = {n for n in trivia_only | mixed if n in mt.TRIVIA_FIELDS or n.startswith("whitespace_")}
    assert skipped == trivia_only - mixed


@pytest.mark.parametrize("case", ["canonical", "gan_two_models", "variant_import_spellings"])
def test_the_walk_reaches_every_syntax_node_and_line_numbers_match_libcst(case):
    module = cst.parse_module((FIXTURES / case / "before.py").read_text())
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    found = wrapper.resolve(PositionProvider)
    syntax = [n for n in _every_node(module) if not _trivia(n)]
    assert set(Facts(module).spans) == set(syntax)
    wanted = [n for n in syntax if isinstance(n, (cst.SimpleStatementLine, cst.BaseCompoundStatement, cst.Call,
                                                  cst.Attribute, cst.Name, cst.Arg))]
    expected = {n: (found[n].start.line, found[n].start.column + 1) for n in wanted}
    assert positions(module, wanted) == expected


def _trivia(node: cst.CSTNode) -> bool:
    return any(t.__name__ in TRIVIA for t in type(node).__mro__)


def _every_node(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node` and every node below it, in source order, as LibCST's own `children` give them."""
    return [node, *(n for child in node.children for n in _every_node(child))]


@pytest.mark.parametrize("case", ["canonical", "gan_two_models", "amp_accumulation"])
def test_a_walk_of_a_subtree_gives_its_syntax_nodes_in_source_order(case):
    """`matchers.walk` (under every `findall`) skips whitespace, comments and punctuation, about
    60% of a file's nodes, which no search asks for: the same names, calls and statements, in the
    same order, as a walk of every node gives (it walked all of them, and every search a little
    more than twice the nodes it could find)."""
    module = cst.parse_module((FIXTURES / case / "before.py").read_text())
    every = _every_node(module)
    assert list(mt.walk(module)) == [n for n in every if not _trivia(n)]
    for node in [n for n in every if not _trivia(n)][::5]:
        assert list(mt.walk(node)) == [n for n in _every_node(node) if not _trivia(n)]


KINDS = [cst.Name, cst.Attribute, cst.For, cst.SimpleStatementLine, cst.BaseSmallStatement, cst.BaseExpression,
         (cst.AssignTarget, cst.AugAssign), (cst.Name, cst.Attribute, cst.Subscript, cst.Call), cst.AsName]


@pytest.mark.parametrize("case", ["canonical", "gan_two_models", "amp_accumulation"])
def test_the_index_of_the_collect_pass_answers_as_a_walk_of_the_subtree(case):
    """`Facts.findall`, `references` and `variables_in` read the nodes the collect pass indexed by
    type; for every node of the file they give what walking its subtree gives, in the same order."""
    module = cst.parse_module((FIXTURES / case / "before.py").read_text())
    facts = Facts(module)
    for node in facts.spans:
        assert [facts.findall(node, kind) for kind in KINDS] == [mt.findall(node, kind) for kind in KINDS]
        assert facts.variables_in(node) == mt.variables(node)
        for name in ("model", "self.model", "loader", "x"):
            assert facts.references(node, name) == mt.references(node, name)
    built = cst.parse_expression("model(x).y")  # a node of no collected tree: walked
    assert facts.findall(built, cst.Name) == mt.findall(built, cst.Name)
    assert facts.references(built, "model") == mt.references(built, "model")


def test_the_node_classes_tested_by_type_have_no_subclasses():
    """`names.dotted`, `names.import_nodes`, `matchers.is_name`/`is_attribute`/`is_call_of`/
    `is_method_call` and `Facts.scope`/`enclosing_class`/`ref`/`is_backward` test `type(node) is
    cst.Name` (an `isinstance` that answers no asks LibCST's abstract base class, in Python): right
    only while no class derives from these."""
    for kind in (cst.Name, cst.Attribute, cst.Call, cst.FunctionDef, cst.ClassDef, cst.Arg, cst.SimpleStatementLine,
                 cst.IndentedBlock, cst.Import, cst.ImportFrom):
        assert kind.__subclasses__() == []


TRICKY = """\
# a header comment
import os; import sys
\"\"\"a string
on two lines\"\"\"; x = 1
@decorator
# a comment between decorators
@other(
    1)
class A(object):
    async def f(self):
        async for a in b:
            pass
        async with c as d: e = 1; f = 2
    def g(self): return (
        1)


if x:
    y = \\
        2
elif y:
    pass
else:
    while z:
        break
    else:
        pass
try:
    pass
except ValueError:
    pass
except (TypeError,
        KeyError):
    (a,
     b) = 1, 2
else:
    pass
finally:
    pass
match x:
    case 1:
        pass
    case _:
        pass
"""


@pytest.mark.parametrize("source", [
    TRICKY, TRICKY.replace("\n", "\r\n"), (FIXTURES / "canonical" / "before.py").read_text(),
    "@(\n    decorator\n)\ndef f():\n    return 1\n",  # ast puts the decorator on line 2: the whole pass answers
])
def test_line_numbers_from_the_statements_are_those_of_the_whole_pass(source):
    """`line_numbers` given the source and the parents (ast's line of each statement, and a print
    of the statements asked about) answers as the whole pass, for every syntax node."""
    module = cst.parse_module(source)
    facts = Facts(module)
    nodes = [n for n in facts.spans if n is not module]
    whole = {node: line for node, (line, _) in positions(module, nodes).items()}
    assert line_numbers(module, nodes, source.encode(), facts.parents) == whole
    one_each = {node: line_numbers(module, [node], source.encode(), facts.parents)[node] for node in nodes[::7]}
    assert one_each == {node: whole[node] for node in nodes[::7]}


def test_the_statements_pass_answers_for_every_statement_shape_and_stands_down_where_ast_differs():
    """Nodes of every statement shape of TRICKY are answered from the statements (not by the
    whole pass, which would still answer right, at the cost of a print of the whole module);
    where ast's line is not the statement's first token's, the check sends it to the whole pass."""
    module = cst.parse_module(TRICKY)
    facts = Facts(module)
    assert all(lines._by_statement(module, [n], TRICKY.encode(), facts.parents) is not None
               for n in facts.spans if n is not module)
    odd = "@(\n    decorator\n)\ndef f():\n    return 1\n"
    module = cst.parse_module(odd)
    assert lines._by_statement(module, [module.body[0]], odd.encode(), Facts(module).parents) is None


def test_a_class_lineage_is_found_once(monkeypatch):
    """`Facts.ref` of `self.x` names the attribute by the root class of its lineage: each read
    walked the bases again (DomainBed's 8,570 root-class questions); now once per class."""
    from ddpify.syntax.facts import Facts

    code = "class A:\n    pass\nclass B(A):\n    pass\nclass C(B):\n" + "".join(
        f"    def f{i}(self):\n        return self.x{i}\n" for i in range(20))
    module = cst.parse_module(code)
    facts = Facts(module)
    asked = []
    original = Facts._base
    monkeypatch.setattr(Facts, "_base", lambda self, cls: asked.append(cls) or original(self, cls))
    reads = [n for n in facts.by_type[cst.Attribute] if facts.code(n).startswith("self.")]
    roots = {facts.ref(n).scope for n in reads}
    assert [c.name.value for c in roots] == ["A"]
    assert len(asked) <= 3
