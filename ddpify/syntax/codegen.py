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

Inside an edited top-level statement the same holds one level down, and further: a statement of
an indented block that the edits kept (the node parsed from the source) is the text it was parsed
from, where it sits at the indentation it had there. Its lines run from its own `leading_lines` to
those of the statement that followed it in the source's block; the last statement of a block is
printed (which lines after it are its block's footer and which the next statement's own is
LibCST's call), the statements inside it copied in turn. The edited statement is printed with
each copied one standing in as a marker line (`_ddpify_kept_0`), then the markers replaced; where
a marker is not alone on its line at the indentation the source gave that statement (a statement
the edits moved into a new block: `if is_main_process():`), or where the same signs as above say
that the cut could be wrong, the statement is printed whole. Before, a `def main():` with one
edited line printed all of its hundred; now that line's block, and the last statement of each
block around it.

    def main():                     # edited: printed
        model = Net()               # kept: copied
        for epoch in range(10):     # edited (its body holds the edit): printed
            train(model)            # kept: copied
            torch.save(model, p)    # edited: printed
        return model                # the block's last: printed
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
    header, texts, footer, cut = kept
    present = set(module.body)
    cut.edited = [stmt for stmt in original.body if stmt not in present]  # where a kept inner statement comes from
    out = [header if _same(module.header, original.header) else _printed(module, module.header)]
    out += [texts[stmt] if stmt in texts else _printed_keeping(module, stmt, cut) for stmt in module.body]
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
          ) -> tuple[str, dict[cst.CSTNode, str], str, _Cut] | None:
    """The text of `module`'s header, of each of its top-level statements and of its footer, cut
    from `source` at the lines `starts` gives (a file without a final newline: as LibCST prints
    it before taking that newline off), and the source's lines, to cut nested statements from
    (`_Cut`); None where anything says the cut could be wrong."""
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
        begin = _begin(stmt, lines, starts, "")
        if begin is None:
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
    return text[:offsets[begins[0] - 1]], texts, text[offsets[end]:], _Cut(text, lines, offsets, starts)


def _begin(stmt: cst.CSTNode, lines: list[str], starts: Mapping[cst.CSTNode, int], indent: str) -> int | None:
    """The first line of `stmt`'s text (its `leading_lines`, its first decorator's), where its own
    line (`starts`: ast's) starts it at `indent` and the lines above it down to there are blank or
    comments; None otherwise."""
    line = starts.get(stmt)
    decorators = getattr(stmt, "decorators", ())
    if line is None or not 0 < line <= len(lines) or not _starts_at(lines[line - 1], bool(decorators), indent):
        return None
    begin = line - len(stmt.leading_lines) - (len(decorators[0].leading_lines) if decorators else 0)  # type: ignore[attr-defined]
    if begin < 1 or any(not _empty(lines[i]) for i in range(begin - 1, line - 1)):
        return None
    return begin


def _starts_at(line: str, decorated: bool, indent: str = "") -> bool:
    """Does `line` start a statement right after `indent` (a top-level one: at column 0; a
    decorated one with its `@`)?"""
    if not line.startswith(indent):
        return False
    rest = line[len(indent):]
    return rest.startswith("@") if decorated else bool(rest) and rest[0] not in " \t\f#\r\n\\"


class _Cut:
    """The source's lines, to cut from them the text of a statement nested in a block (`text`):
    from its first line to the first of the statement that follows it in its block, as the
    source's blocks hold them (`_following`, found on first use in the top-level statements the
    output does not keep, `edited`: a kept one is copied whole)."""

    def __init__(self, text: str, lines: list[str], offsets: list[int], starts: Mapping[cst.CSTNode, int]) -> None:
        self.source, self.lines, self.offsets, self.starts = text, lines, offsets, starts
        self.edited: Sequence[cst.CSTNode] = ()
        self._next: dict[cst.CSTNode, cst.CSTNode] | None = None
        self._texts: dict[cst.CSTNode, tuple[str, str] | None] = {}

    def text(self, stmt: cst.CSTNode) -> tuple[str, str] | None:
        """The indentation of `stmt`'s own line and its text, where it follows a statement of the
        source's blocks and is not the last of its block; None otherwise."""
        if stmt in self._texts:
            return self._texts[stmt]
        if self._next is None:
            self._next = {}
            for node in self.edited:
                _following(node, self._next)
        found = None
        after = self._next.get(stmt)
        line = self.starts.get(stmt)
        if after is not None and line is not None and 0 < line <= len(self.lines):
            own = self.lines[line - 1]
            indent = own[:len(own) - len(own.lstrip(" \t"))]
            begin, end = _begin(stmt, self.lines, self.starts, indent), _begin(after, self.lines, self.starts, indent)
            if begin is not None and end is not None and 1 < begin < end and \
                    not any(_continued(self.lines[b - 2]) for b in (begin, end)):
                found = indent, self.source[self.offsets[begin - 1]:self.offsets[end - 1]]
        self._texts[stmt] = found
        return found


# the nodes that hold blocks of statements (by exact type: no isinstance against LibCST's abstract
# classes), and their fields that may hold one; a statement of any other type holds none
_BLOCKS: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("body",), cst.ClassDef: ("body",), cst.With: ("body",), cst.If: ("body", "orelse"),
    cst.For: ("body", "orelse"), cst.While: ("body", "orelse"), cst.Try: ("body", "handlers", "orelse", "finalbody"),
    cst.TryStar: ("body", "handlers", "orelse", "finalbody"), cst.Match: ("cases",), cst.Else: ("body",),
    cst.Finally: ("body",), cst.ExceptHandler: ("body",), cst.ExceptStarHandler: ("body",), cst.MatchCase: ("body",),
}
_MARKER = "_ddpify_kept_"
_MARKER_LINE = re.compile(rf"^([ \t]*)({_MARKER}\d+)(?:\r\n|\n)", re.MULTILINE)


def _following(node: cst.CSTNode, found: dict[cst.CSTNode, cst.CSTNode]) -> None:
    """Note, for each statement of the indented blocks inside `node` but the last of each, the
    statement that follows it."""
    if type(node) is cst.IndentedBlock:
        found.update(zip(node.body, node.body[1:]))
        for stmt in node.body:
            if type(stmt) in _BLOCKS:
                _following(stmt, found)
        return
    for name in _BLOCKS.get(type(node), ()):
        value = getattr(node, name)
        for held in value if type(value) in (list, tuple) else (value,):
            if type(held) in _BLOCKS or type(held) is cst.IndentedBlock:
                _following(held, found)


def _with_markers(node: cst.CSTNode, cut: _Cut, kept: list[tuple[str, str]]) -> cst.CSTNode:
    """`node` with each statement of its indented blocks that `cut` has the text of replaced by a
    marker line, whose (indentation, text) is appended to `kept`."""
    if type(node) is cst.IndentedBlock:
        body: list[cst.CSTNode] = []
        last = node.body[-1] if node.body else None
        for stmt in node.body:
            found = cut.text(stmt) if stmt is not last else None
            if found is not None:
                body.append(cst.SimpleStatementLine([cst.Expr(cst.Name(f"{_MARKER}{len(kept)}"))]))
                kept.append(found)
            else:
                body.append(_with_markers(stmt, cut, kept) if type(stmt) in _BLOCKS else stmt)
        return node.with_changes(body=body) if any(a is not b for a, b in zip(body, node.body)) else node
    changes: dict[str, object] = {}
    for name in _BLOCKS.get(type(node), ()):
        value = getattr(node, name)
        if type(value) in (list, tuple):
            items = [_with_markers(v, cut, kept) for v in value]
            if any(a is not b for a, b in zip(items, value)):
                changes[name] = items
        elif type(value) in _BLOCKS or type(value) is cst.IndentedBlock:
            held = _with_markers(value, cut, kept)
            if held is not value:
                changes[name] = held
    return node.with_changes(**changes) if changes else node


def _printed_keeping(module: cst.Module, stmt: cst.CSTNode, cut: _Cut) -> str:
    """`code_for_node(module, stmt)`, the statements of its blocks that the edits kept copied
    from the source (`_with_markers`), where each marker is found alone on its line at the
    indentation its statement had in the source."""
    kept: list[tuple[str, str]] = []
    marked = _with_markers(stmt, cut, kept)
    if not kept:
        return code_for_node(module, stmt)
    printed = code_for_node(module, marked)
    found = list(_MARKER_LINE.finditer(printed))
    if printed.count(_MARKER) != len(kept) or [m.group(2) for m in found] != [f"{_MARKER}{i}" for i in range(len(kept))] \
            or any(m.group(1) != indent for m, (indent, _) in zip(found, kept)):
        return code_for_node(module, stmt)
    out, done = [], 0
    for match, (_, text) in zip(found, kept):
        out += [printed[done:match.start()], text]
        done = match.end()
    out.append(printed[done:])
    return "".join(out)


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
