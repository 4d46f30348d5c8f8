"""Line numbers (and columns) of a few nodes, from one code-generation pass.

The report needs the line of each node a rewrite touched, nothing else. LibCST's
PositionProvider records a range for every node of the file, which costs several times a
parse. Here the module prints itself into a plain token list (`add_token` is the list's own
`append`, so printing costs what `module.code` costs); the pass notes at which token each node
asked about starts, and where comment and blank lines are, and the newlines before those
tokens are counted afterwards with string operations. A node's position is that of its first
token after the comments and blank lines above it (as PositionProvider does).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Collection

import libcst as cst
# LibCST's private API, as its own position providers use it: pyproject.toml pins the tested range
from libcst._nodes.internal import CodegenState


class _Marks(CodegenState):
    def __init__(self, module: cst.Module, wanted: Collection[cst.CSTNode]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.add_token = self.tokens.append  # type: ignore[method-assign]
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
    tokens, empty = state.tokens, state.empty
    firsts = []
    for index, node in state.starts:
        if type(node) is cst.EmptyLine:
            continue  # a comment or blank line has no position of its own
        while index < len(tokens) and (not tokens[index].strip() or bisect_right(empty, index) % 2):
            index += 1  # a blank token, or one of a comment line
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


def line_numbers(module: cst.Module, nodes: Collection[cst.CSTNode]) -> dict[cst.CSTNode, int]:
    """The 1-based line where each of `nodes` starts."""
    return {node: line for node, (line, _) in positions(module, nodes).items()}
