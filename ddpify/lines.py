"""Line numbers (and columns) of a few nodes, from one code-generation pass.

The report needs the line of each node a rewrite touched, nothing else. LibCST's
PositionProvider records a range for every node of the file, which costs several times a
parse; this pass counts newlines while the module prints itself and notes the line of the
first token of each node asked about (for a statement: its first token after the comments and
blank lines above it, as PositionProvider does).
"""

from __future__ import annotations

from typing import Collection

import libcst as cst
from libcst._nodes.internal import CodegenState  # the state LibCST's own position providers extend


class _LineState(CodegenState):
    def __init__(self, module: cst.Module, wanted: Collection[cst.CSTNode]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.lines: dict[cst.CSTNode, tuple[int, int]] = {}
        self.pending: list[cst.CSTNode] = []
        self.line = 1
        self.column = 0  # characters since the last newline
        self.in_empty_line = 0

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        self.column += sum(map(len, self.indent_tokens))

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if self.pending and not self.in_empty_line and value.strip():
            start = (self.line, self.column + len(value) - len(value.lstrip()) + 1)
            for node in self.pending:
                self.lines[node] = start
            self.pending.clear()
        breaks = value.count("\n") + (value.count("\r") - value.count("\r\n"))
        if breaks:
            self.line += breaks
            self.column = len(value) - max(value.rfind("\n"), value.rfind("\r")) - 1
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.EmptyLine):
            self.in_empty_line += 1
        elif node in self.wanted:
            self.pending.append(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.EmptyLine):
            self.in_empty_line -= 1


def positions(module: cst.Module, nodes: Collection[cst.CSTNode]) -> dict[cst.CSTNode, tuple[int, int]]:
    """The 1-based (line, column) where each of `nodes` starts (columns count characters, as
    Python's own error messages and ruff do)."""
    state = _LineState(module, set(nodes))
    module._codegen(state)
    return state.lines


def line_numbers(module: cst.Module, nodes: Collection[cst.CSTNode]) -> dict[cst.CSTNode, int]:
    """The 1-based line where each of `nodes` starts."""
    return {node: line for node, (line, _) in positions(module, nodes).items()}
