"""A module's code (or one node's) as LibCST prints it, without the hooks nobody here listens to.

LibCST prints a tree by calling, for each node, `state.before_codegen(node)`, its own
`_codegen_impl`, `state.after_codegen(node)`, each inside `with
state.record_syntactic_position(node)` (a `contextlib.contextmanager`: a generator and its
manager built, entered and left per node), and `state.add_token(text)` per token. Only its
position provider listens to those hooks; `Module.code` pays them all the same, about a third
of its time. `State` is a `CodegenState` whose hooks do nothing and cost (almost) nothing: the
tokens appended by the list's own `append`, the before and after hooks `id` (a builtin that
ignores the node), the position a shared context that enters and leaves doing nothing. The text
is the same token for token (the hooks add none); `tests/test_codegen.py` holds it against
LibCST's own print.

    code(module)              # == module.code
    code_for_node(module, n)  # == module.code_for_node(n)

An output that keeps most of its input's top-level statements (the same nodes: the edits rebuild
only the statements on their paths) need not print those again: they are the text they were
parsed from. Given the input module, its source and the line of each of its statements
(`ddpify.syntax.lines.statement_lines`, Python's `ast`, which the report's line numbers read
too), `code` copies each kept statement's lines from the source and prints the others. A
statement's lines run from those above its first token that LibCST gives it (`leading_lines`,
one comment or blank line each) to the line before the next statement's; where any sign says
that `ast` and LibCST may split the lines otherwise (ast's line not starting with the
statement's first token at column 0, a line above it that is not blank or a comment, a line
ending in a backslash before it, indentation that mixes tabs and spaces, which the parse may
have expanded, a file ending in a lone carriage return), the whole module is printed as before.

    def main():            # edited: printed
        ...
    # a comment            # the next statement's `leading_lines`: copied with it
    def helper():          # kept: its lines copied from the source
        ...
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Mapping, Sequence

import libcst as cst
# LibCST's private API, as its own position providers (and ddpify.syntax.lines) use it:
# pyproject.toml pins the tested range
from libcst._nodes.internal import CodegenState


class _Nothing:
    """A context manager that enters and leaves doing nothing (`contextlib.nullcontext` without
    its state), shared by every node printed."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


NOTHING = _Nothing()


class State(CodegenState):
    """LibCST's print state, its hooks made (almost) free; subclasses that listen to one
    (ddpify.syntax.lines) define it again."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.add_token = self.tokens.append  # type: ignore[method-assign,assignment]
        if type(self).before_codegen is CodegenState.before_codegen:
            self.before_codegen = id  # type: ignore[method-assign,assignment]
        if type(self).after_codegen is CodegenState.after_codegen:
            self.after_codegen = id  # type: ignore[method-assign,assignment]

    def record_syntactic_position(  # type: ignore[override]
            self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
            end_node: cst.CSTNode | None = None) -> _Nothing:
        return NOTHING


def code_for_node(module: cst.Module, node: cst.CSTNode) -> str:
    """`module.code_for_node(node)`: `node` printed with `module`'s indentation and newline."""
    state = State(module.default_indent, module.default_newline)
    node._codegen(state)
    return "".join(state.tokens)


def code(module: cst.Module, original: cst.Module | None = None, source: bytes | None = None,
         starts: Mapping[cst.CSTNode, int] | None = None) -> str:
    """`module.code`; given the `original` module it was edited from, the `source` that was parsed
    from and the line of each of its statements (`starts`), with the top-level statements it
    kept from `original` copied from `source`."""
    if original is None or source is None or starts is None or (
            module.has_trailing_newline, module.default_newline, module.default_indent) != (
            original.has_trailing_newline, original.default_newline, original.default_indent):
        return code_for_node(module, module)
    kept = _kept(original, source, starts)
    if kept is None:
        return code_for_node(module, module)
    header, texts, footer = kept
    out = [header if _same(module.header, original.header) else _printed(module, module.header)]
    out += [texts[stmt] if stmt in texts else code_for_node(module, stmt) for stmt in module.body]
    out.append(footer if _same(module.footer, original.footer) else _printed(module, module.footer))
    text = "".join(out)
    if not text:
        return code_for_node(module, module)  # (an empty module is its newline)
    # LibCST prints a file without a final newline with one, then takes its last token (a newline) off
    return text if module.has_trailing_newline else _LAST_NEWLINE.sub("", text)


# indentation mixing tabs and spaces (ddpify.syntax.parse may have parsed it expanded)
_MIXED = re.compile(r"^[ \t]*(?: \t|\t )", re.MULTILINE)
# a line with its end, as Python and LibCST break lines: at \r\n, \r and \n only
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)")
_LAST_NEWLINE = re.compile(r"(?:\r\n|\r|\n)\Z")


def _kept(module: cst.Module, source: bytes, starts: Mapping[cst.CSTNode, int]
          ) -> tuple[str, dict[cst.CSTNode, str], str] | None:
    """The text of `module`'s header, of each of its top-level statements and of its footer, cut
    from `source` at the lines `starts` gives (a file without a final newline: as LibCST prints
    it before taking that newline off); None where anything says the cut could be wrong."""
    if not module.body:
        return None
    try:
        text = source.decode(module.encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    if text.endswith("\r") or _MIXED.search(text):
        return None
    if not module.has_trailing_newline:
        text += module.default_newline
    if not text.endswith("\n"):
        return None
    lines = _LINE.findall(text)
    offsets = [0, *accumulate(map(len, lines))]
    if offsets[-1] != len(text):
        return None
    begins = []
    for stmt in module.body:
        line = starts.get(stmt)
        decorators = getattr(stmt, "decorators", ())
        if line is None or not 0 < line <= len(lines) or not _starts_at(lines[line - 1], bool(decorators)):
            return None
        begin = line - len(stmt.leading_lines) - (len(decorators[0].leading_lines) if decorators else 0)
        if begin < 1 or any(not _empty(lines[i]) for i in range(begin - 1, line - 1)):
            return None
        begins.append(begin)
    end = len(lines) - len(module.footer)
    if begins[0] != len(module.header) + 1 or end < begins[-1] or any(a >= b for a, b in zip(begins, begins[1:])) \
            or any(_continued(lines[b - 2]) for b in begins[1:]) or _continued(lines[end - 1]) \
            or any(not _empty(line) for line in lines[:len(module.header)] + lines[end:]):
        return None
    cuts = [*begins, end + 1]
    texts: dict[cst.CSTNode, str] = {stmt: text[offsets[a - 1]:offsets[b - 1]]
                                     for stmt, a, b in zip(module.body, cuts, cuts[1:])}
    return text[:offsets[begins[0] - 1]], texts, text[offsets[end]:]


def _starts_at(line: str, decorated: bool) -> bool:
    """Does `line` start a top-level statement at column 0 (a decorated one with its `@`)?"""
    return line.startswith("@") if decorated else bool(line) and line[0] not in " \t\f#\r\n\\"


def _empty(line: str) -> bool:
    """A blank line, or one holding a comment only."""
    stripped = line.lstrip(" \t\f")
    return stripped.startswith("#") or not stripped.strip("\r\n")


def _continued(line: str) -> bool:
    """Does `line` end in a backslash (its statement goes on)?"""
    return line.rstrip("\r\n").endswith("\\")


def _same(nodes: Sequence[cst.CSTNode], others: Sequence[cst.CSTNode]) -> bool:
    return len(nodes) == len(others) and all(a is b for a, b in zip(nodes, others))


def _printed(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> str:
    return "".join(code_for_node(module, node) for node in nodes)
