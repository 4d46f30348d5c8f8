"""Line numbers (and columns) of a few nodes, from one code-generation pass.

The report needs the line of each node a rewrite touched, nothing else. LibCST's
PositionProvider records a range for every node of the file, which costs several times a
parse. Here the module prints itself into a plain token list (`ddpify.syntax.codegen.State`:
`add_token` is the list's own `append`, so printing costs what `module.code` costs, less); the pass notes at which token each node
asked about starts, and where comment and blank lines are, and the newlines before those
tokens are counted afterwards with string operations. A node's position is that of its first
token after the comments and blank lines above it (as PositionProvider does).

`line_numbers` given the source and the nodes' parents prints less: Python's own parser (`ast`)
gives the line of every statement, and only the statements holding the nodes asked about are
printed, each up to the last of those nodes (where a statement's line does not start with its
first token, ast and LibCST disagree, and the whole module is printed as above).
"""

from __future__ import annotations

import ast
import sys
from bisect import bisect_right
from collections import defaultdict
from typing import Collection, Mapping

import libcst as cst

from ddpify.syntax.codegen import State
from ddpify.syntax.matchers import STATEMENTS
from ddpify.syntax.parse import PYTHON_RECURSION_LIMIT


class _Marks(State):
    def __init__(self, module: cst.Module, wanted: Collection[cst.CSTNode]) -> None:
        super().__init__(module.default_indent, module.default_newline)
        self.wanted = {id(node) for node in wanted}  # ids: a node's own __hash__ is Python code
        self.starts: list[tuple[int, cst.CSTNode]] = []  # (index of the node's first token, node)
        self.empty: list[int] = []  # [start, end) token ranges of the comment and blank lines, flattened

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.starts.append((len(self.tokens), node))
        if type(node) is cst.EmptyLine:
            self.empty.append(len(self.tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) is cst.EmptyLine:
            self.empty.append(len(self.tokens))


def positions(module: cst.Module, nodes: Collection[cst.CSTNode]) -> dict[cst.CSTNode, tuple[int, int]]:
    """The 1-based (line, column) where each of `nodes` starts (columns count characters, as
    Python's own error messages and ruff do)."""
    state = _Marks(module, nodes)
    module._codegen(state)
    return _resolve(state)


def line_numbers(module: cst.Module, nodes: Collection[cst.CSTNode], source: bytes | None = None,
                 parents: Mapping[cst.CSTNode, cst.CSTNode] | None = None,
                 starts: Mapping[cst.CSTNode, int] | None = None) -> dict[cst.CSTNode, int]:
    """The 1-based line where each of `nodes` starts; given `module`'s `source` and the nodes'
    `parents`, from the lines of their statements (ast; `starts`: `statement_lines`, where known
    already) and a print of those statements only."""
    found = None if source is None or parents is None else _by_statement(module, nodes, source, parents, starts)
    if found is None:
        found = {node: line for node, (line, _) in positions(module, nodes).items()}
    return found


def _resolve(state: _Marks) -> dict[cst.CSTNode, tuple[int, int]]:
    """The (line, column) of the first token of each node `state` marked, counted in its tokens."""
    tokens = state.tokens
    firsts = []
    for index, node in state.starts:
        if type(node) is cst.EmptyLine:
            continue  # a comment or blank line has no position of its own
        index = _first_token(state, index)
        if index < len(tokens):
            firsts.append((index, node))
    found: dict[cst.CSTNode, tuple[int, int]] = {}
    line, column, done = 1, 0, 0
    for index, node in sorted(firsts, key=lambda pair: pair[0]):
        text = "".join(tokens[done:index])
        done = index
        breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
        if breaks:
            line += breaks
            column = len(text) - max(text.rfind("\n"), text.rfind("\r")) - 1
        else:
            column += len(text)
        token = tokens[index]
        found[node] = (line, column + len(token) - len(token.lstrip()) + 1)
    return found


def _first_token(state: _Marks, index: int) -> int:
    """The first token from `index` on that is neither blank nor part of a comment or blank line."""
    tokens, empty = state.tokens, state.empty
    while index < len(tokens) and (not tokens[index].strip() or bisect_right(empty, index) % 2):
        index += 1
    return index


class _Upto(_Marks):
    """`_Marks` that stops printing once the first token of every node asked about is printed."""

    def before_codegen(self, node: cst.CSTNode) -> None:
        super().before_codegen(node)
        if len(self.starts) == len(self.wanted) and _first_token(self, self.starts[-1][0]) < len(self.tokens):
            raise _Printed()


class _Printed(Exception):
    pass


def _by_statement(module: cst.Module, nodes: Collection[cst.CSTNode], source: bytes,
                  parents: Mapping[cst.CSTNode, cst.CSTNode], starts: Mapping[cst.CSTNode, int] | None = None
                  ) -> dict[cst.CSTNode, int] | None:
    """`line_numbers` from the statements holding `nodes`, or None where that cannot answer."""
    held: dict[cst.CSTNode, list[cst.CSTNode]] = defaultdict(list)
    for node in nodes:
        stmt = node
        while stmt is not None and type(stmt) not in STATEMENTS:
            stmt = parents.get(stmt)
        if stmt is None:
            return None
        held[stmt].append(node)
    starts = statement_lines(module, source) if starts is None else starts
    if starts is None:
        return None
    lines = source.splitlines()  # (bytes break at \n, \r\n and \r only, as Python counts lines)
    found: dict[cst.CSTNode, int] = {}
    for stmt, inside in held.items():
        state = _Upto(module, {stmt, *inside})
        parent = parents.get(stmt)
        try:
            if type(parent) is cst.If and parent.orelse is stmt:
                stmt._codegen(state, is_elif=True)  # (printed alone, an `elif` prints `if`)
            else:
                stmt._codegen(state)
        except _Printed:
            pass
        at = _resolve(state)
        line = starts.get(stmt)
        if line is None or stmt not in at or any(node not in at for node in inside):
            return None
        first = state.tokens[_first_token(state, 0)].strip().splitlines()[0].encode(module.encoding, "replace")
        if line > len(lines) or not lines[line - 1].lstrip().startswith(first):
            return None  # ast and LibCST disagree about where the statement starts
        for node in inside:
            found[node] = line + at[node][0] - at[stmt][0]
    return found


def statement_lines(module: cst.Module, source: bytes) -> dict[cst.CSTNode, int] | None:
    """The line of every statement of `module` as it sits in a block (a simple line or a compound
    statement), from Python's own parse of `source` (under the recursion limit Python compiles
    with); None where the two trees do not pair up."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(PYTHON_RECURSION_LIMIT)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    finally:
        sys.setrecursionlimit(limit)
    lines: dict[cst.CSTNode, int] = {}
    return lines if _pair_block(module.body, tree.body, lines) else None


def _pair_block(body, statements: list[ast.stmt], lines: dict) -> bool:
    """Pair a block's LibCST statements with ast's (a line `a; b` holds two of ast's), noting the
    line of each in `lines`."""
    i = 0
    for stmt in body:
        if i >= len(statements):
            return False
        node = statements[i]
        if type(stmt) is cst.SimpleStatementLine:
            lines[stmt] = node.lineno
            i += len(stmt.body)
            continue
        decorators = getattr(node, "decorator_list", None)
        lines[stmt] = decorators[0].lineno if decorators else node.lineno
        if not _pair_compound(stmt, node, lines):
            return False
        i += 1
    return i == len(statements)


def _pair_compound(stmt: cst.BaseCompoundStatement, node: ast.stmt, lines: dict) -> bool:
    """Pair the blocks of a compound statement with those of ast's."""
    if type(stmt) is cst.Match:
        pairs = [(case.body, a.body) for case, a in zip(stmt.cases, node.cases)]
    else:
        pairs = [(stmt.body, node.body)]
    if type(stmt) in (cst.Try, cst.TryStar):
        pairs += [(handler.body, a.body) for handler, a in zip(stmt.handlers, node.handlers)]
        if stmt.finalbody is not None:
            pairs.append((stmt.finalbody.body, node.finalbody))
    orelse = getattr(stmt, "orelse", None)
    if type(orelse) is cst.If:  # `elif`: in ast, an `else` holding one `if`
        if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
            return False
        lines[orelse] = node.orelse[0].lineno
        if not _pair_compound(orelse, node.orelse[0], lines):
            return False
    elif orelse is not None:
        pairs.append((orelse.body, node.orelse))
    return all(_pair_block(suite.body, statements, lines) for suite, statements in pairs
               if type(suite) is cst.IndentedBlock)
