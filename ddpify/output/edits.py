"""The edits rewrites ask for, recorded against nodes of the ORIGINAL tree and applied in one pass.

Rewrites never transform the tree themselves: they read the facts and call `replace`,
`insert_before`, `insert_after`, `todo` and `add_import` on the `Edits` handed to them.
`apply` then walks the tree once. Replacements compose: a rewrite's function receives the
node as already updated by its children's edits and by earlier rewrites, so an edit inside
an edited statement is never lost.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Callable, Iterable, Mapping, NamedTuple, TypeVar

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.lines import line_numbers
from ddpify.syntax.names import dotted
from ddpify.syntax.parse import one_line
from ddpify.output.report import CHANGE, WARNING, Change

NodeFn = Callable[[cst.CSTNode], cst.CSTNode]
N = TypeVar("N", bound=cst.CSTNode)


class Record(NamedTuple):
    """What a rewrite says about a node of the original tree: a report line before it has a line
    number, and whether the edit needs the process group (`needs_group`: a script that imports the
    edited module without joining a group would fail on it, as on a DistributedDataParallel)."""

    rewrite: str
    node: cst.CSTNode
    message: str
    kind: str
    needs_group: bool = False


class Edits:
    """Collects edits and report records; `for_rewrite` names the rewrite whose records follow (it
    returns this same object, not a copy)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.replacements: dict[cst.CSTNode, list[NodeFn]] = defaultdict(list)
        self.before: dict[cst.CSTNode, list[cst.BaseStatement]] = defaultdict(list)
        self.after: dict[cst.CSTNode, list[cst.BaseStatement]] = defaultdict(list)
        self.comments: dict[cst.CSTNode, list[str]] = defaultdict(list)
        self.todos: set[tuple[cst.CSTNode, str]] = set()
        self.enclosed: dict[cst.CSTNode, str] = {}
        self.removed: set[cst.CSTNode] = set()
        self.imports: list[tuple[str, str | None]] = []
        self.records: list[Record] = []
        self.rewrite = ""
        self._parsed: dict[str, cst.BaseStatement] = {}

    def for_rewrite(self, name: str) -> "Edits":
        self.rewrite = name
        return self

    # report -----------------------------------------------------------------------------------
    def record(self, node: cst.CSTNode, message: str, kind: str = CHANGE, *, needs_group: bool = False) -> None:
        self.records.append(Record(self.rewrite, node, message, kind, needs_group))

    def warn(self, node: cst.CSTNode, message: str) -> None:
        """A warning in the report: behaviour differs from the single-GPU script, or needs a look."""
        self.record(node, message, WARNING)

    def changes(self, module: cst.Module | None = None, where: Callable[[cst.CSTNode], bool] | None = None,
                source: bytes | None = None, parents: Mapping[cst.CSTNode, cst.CSTNode] | None = None,
                starts: Mapping[cst.CSTNode, int] | None = None) -> list[Change]:
        """The records as report lines, in source order (lines computed once, for these nodes
        only: from the statements that hold them, given the module's `source` and the nodes'
        `parents`; `starts`: the lines of its statements, where known already); for a program
        (ddpify.inputs.program), those on the nodes `where` accepts, with the lines of their
        file's `module`."""
        records = [r for r in self.records if where is None or where(r.node)]
        if not records:
            return []  # (no code generation for a file with nothing to say)
        lines = line_numbers(module or self.module, {r.node for r in records}, source, parents, starts)
        changes = [Change(r.rewrite, lines[r.node], r.message, r.kind) for r in records]
        return sorted(changes, key=lambda c: c.line)

    def todo(self, stmt: cst.CSTNode, message: str) -> None:
        """A `# TODO(ddpify): message` above `stmt`, and a warning in the report. The warning
        stays when a conversion before put the same TODO there already; the line is not repeated.
        A comment is one line: code quoted from several lines (a call spread over lines) is
        joined with single spaces."""
        message = one_line(message)
        if (stmt, message) in self.todos:
            return
        self.todos.add((stmt, message))
        self.record(stmt, message, WARNING)
        comment = f"# TODO(ddpify): {message}"
        above = [*getattr(stmt, "leading_lines", ())]
        if self.module.body and stmt is self.module.body[0]:  # comments opening the file are the module's header
            above += self.module.header
        if not any(line.comment is not None and line.comment.value == comment for line in above):
            self.comments[stmt].append(message)

    # edits ------------------------------------------------------------------------------------
    def replace(self, node: N, fn: Callable[[N], cst.CSTNode], message: str | None = None, *, needs_group: bool = False
                ) -> None:
        self.replacements[node].append(fn)
        if message:
            self.record(node, message, needs_group=needs_group)

    def remove(self, stmt: cst.CSTNode) -> None:
        """Drop `stmt`; `removed` keeps it, so that a later edit can tell a block it empties
        (a rewrite that drops the last statement left in an `if` drops the `if`)."""
        self.removed.add(stmt)
        self.replace(stmt, lambda node: cst.RemoveFromParent())

    def insert_before(self, stmt: cst.CSTNode, *new: cst.BaseStatement | str) -> None:
        self.before[stmt].extend(self._statements(new))

    def insert_after(self, stmt: cst.CSTNode, *new: cst.BaseStatement | str) -> None:
        self.after[stmt].extend(self._statements(new))

    def enclose(self, stmt: cst.CSTNode, header: str) -> None:
        """Put `stmt` in the block of a new compound statement, `header` being its first line
        (`if is_main_process():`); adjacent statements with the same header share one block."""
        self.enclosed.setdefault(stmt, header)

    def guard(self, stmt: cst.CSTNode, condition: str, message: str) -> None:
        """Run `stmt` only when `condition` holds."""
        if stmt not in self.enclosed:
            self.enclose(stmt, f"if {condition}:")
            self.record(stmt, message)

    def add_import(self, module: str, name: str | None = None) -> None:
        if (module, name) not in self.imports:
            self.imports.append((module, name))

    def parsed(self, text: str) -> cst.BaseStatement:
        """The statement `text`, parsed once per conversion (`if is_main_process():` heads a block
        in every file that saves): LibCST's nodes are immutable, so one serves every place it goes."""
        if text not in self._parsed:
            self._parsed[text] = cst.parse_statement(text)
        return self._parsed[text]

    def _statements(self, items: Iterable[cst.BaseStatement | str]) -> list[cst.BaseStatement]:
        return [self.parsed(s) if isinstance(s, str) else s for s in items]


class _Apply(cst.CSTTransformer):
    def __init__(self, edits: Edits, on_path: set[cst.CSTNode], root: cst.Module) -> None:
        super().__init__()
        self.edits = edits
        self.enclosed: dict[cst.CSTNode, str] = {}  # updated statement -> its compound's header
        self.on_path = on_path
        self.root = root

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node in self.on_path or node is self.root  # subtrees without edits are kept as they are

    def on_leave(self, original_node, updated_node):
        if original_node not in self.on_path and original_node is not self.root:
            return updated_node  # a child of an edited node, itself without edits
        e = self.edits
        if original_node in e.replacements:
            updated_node = _replaced(updated_node, e.replacements[original_node])
        if isinstance(updated_node, cst.RemovalSentinel):
            return _flatten(e.before.get(original_node, ()), e.after.get(original_node, ()))
        if isinstance(updated_node, cst.FlattenSentinel):  # a statement replaced by several: the lines go around them all
            return self._around(original_node, list(updated_node.nodes))
        if original_node in e.comments:  # before `enclosed` records the node: a TODO'd statement is guarded too
            lines = [cst.EmptyLine(comment=cst.Comment(f"# TODO(ddpify): {m}")) for m in e.comments[original_node]]
            updated_node = updated_node.with_changes(leading_lines=[*updated_node.leading_lines, *lines])
        if original_node in e.enclosed:
            self.enclosed[updated_node] = e.enclosed[original_node]
        if isinstance(updated_node, (cst.Module, cst.IndentedBlock)) and self.enclosed:
            updated_node = updated_node.with_changes(body=self._group(updated_node.body))
        before, after = e.before.get(original_node, ()), e.after.get(original_node, ())
        if before or after:
            return cst.FlattenSentinel([*before, updated_node, *after])
        return updated_node

    def _around(self, original_node: cst.CSTNode, nodes: list) -> cst.FlattenSentinel:
        """The statements that replace one (`model = nn.DataParallel(Net())` -> `model = Net()` and
        its wrap), with the statements inserted before and after it, and its TODOs above the first."""
        e = self.edits
        if original_node in e.comments and nodes:
            lines = [cst.EmptyLine(comment=cst.Comment(f"# TODO(ddpify): {m}")) for m in e.comments[original_node]]
            nodes[0] = nodes[0].with_changes(leading_lines=[*nodes[0].leading_lines, *lines])
        return cst.FlattenSentinel([*e.before.get(original_node, ()), *nodes, *e.after.get(original_node, ())])

    def _group(self, body) -> list[cst.BaseStatement]:
        """Put each run of adjacent statements with the same header into one compound statement."""
        out: list[cst.BaseStatement] = []
        run: list[cst.BaseStatement] = []
        for stmt in [*body, None]:
            header = self.enclosed.get(stmt)
            if run and header != self.enclosed[run[0]]:
                out.append(_compound(self.edits.parsed(f"{self.enclosed[run[0]]}\n    pass\n"), run))
                run = []
            if header is not None:
                run.append(stmt)
            elif stmt is not None:
                out.append(stmt)
        return out


_OWN_PARENS = (cst.Tuple, cst.GeneratorExp, cst.Yield)  # parentheses that are part of the expression


def _replaced(node: cst.CSTNode, fns: list[NodeFn]) -> cst.CSTNode:
    """`node` through its replacement functions. The parentheses around an expression stay around
    what replaces it: `if(os.path.isfile(p)):` -> `if(agree_on(os.path.isfile(p))):`, where
    `agree_on((os.path.isfile(p)))` would have left `ifagree_on(...)`, which LibCST refuses (no space
    after the keyword was needed while the test began with its parenthesis)."""
    lpar, rpar = getattr(node, "lpar", ()), getattr(node, "rpar", ())
    if lpar and not isinstance(node, _OWN_PARENS):
        node = node.with_changes(lpar=(), rpar=())
    for fn in fns:
        node = fn(node)
    if lpar and isinstance(node, cst.BaseExpression) and not node.lpar:
        node = node.with_changes(lpar=lpar, rpar=rpar)
    return node


def _compound(shell: cst.BaseStatement, body: list[cst.BaseStatement]) -> cst.BaseCompoundStatement:
    """`shell` (`if is_main_process():` over a `pass`) with an indented block of `body`; the
    comments above the first statement move above it, and a blank line between two of them stays
    blank (no indentation left on it)."""
    first = body[0]
    rest = [stmt.with_changes(leading_lines=[_unindented(line) for line in stmt.leading_lines]) for stmt in body[1:]]
    block = shell.body.with_changes(body=[first.with_changes(leading_lines=()), *rest])
    return shell.with_changes(body=block, leading_lines=first.leading_lines)


def _unindented(line: cst.EmptyLine) -> cst.EmptyLine:
    """A blank line moved into a new block: written without the block's indentation, which would
    leave trailing whitespace (`torch.save(a)`, blank, `torch.save(b)` under one `if`)."""
    if line.comment is None and not line.whitespace.value:
        return line.with_changes(indent=False)
    return line


def _flatten(before, after):
    return cst.FlattenSentinel([*before, *after]) if before or after else cst.RemoveFromParent()


def edited_paths(edits: Edits, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> set[cst.CSTNode]:
    """The edited nodes and all their ancestors: the only nodes the walk has to enter (for a
    program, computed once for all its files: `apply_part`'s `on_path`)."""
    path: set[cst.CSTNode] = set()
    targets = [*edits.replacements, *edits.before, *edits.after, *edits.comments, *edits.enclosed]
    for node in targets:
        while node is not None and node not in path:
            path.add(node)
            node = parents.get(node)
    return path


def apply(module: cst.Module, edits: Edits, parents: dict[cst.CSTNode, cst.CSTNode]) -> cst.Module:
    """Apply every edit in one walk over the edited paths, then add the imports the edits need."""
    module = module.visit(_Apply(edits, edited_paths(edits, parents), module))
    return _add_imports(module, edits.imports) if edits.imports else module


def apply_part(module: cst.Module, edits: Edits, facts: Facts, on_path: set[cst.CSTNode] | None = None,
               local: frozenset[str] = frozenset()) -> cst.Module:
    """`apply` for one file of a program: `edits` and `facts` are over the program's merged
    module (ddpify.inputs.program), whose statements include `module`'s (`on_path`: their
    `edited_paths`, when computed already). Applies the edits on this file's nodes, and adds the
    imports of the names its code uses (before the first import of the program's `local` modules,
    whose top level runs at that import)."""
    on_path = edited_paths(edits, facts.parents) if on_path is None else on_path
    if not any(stmt in on_path for stmt in module.body):  # no edit in this file
        return module
    output = module.visit(_Apply(edits, on_path, module))
    used = _names_used(output, {_bound(name) for _, name in edits.imports}, facts)
    needed = [(mod, name) for mod, name in edits.imports if _bound(name) in used]
    return _add_imports(output, needed, local) if needed else output


def _bound(name: str) -> str:
    """The name an import binds: `device_ids as ddpify_device_ids` -> `ddpify_device_ids`."""
    return name.rpartition(" as ")[2]


def _alias(name: str) -> cst.ImportAlias:
    """`device_ids`, or `device_ids as ddpify_device_ids`, as an item of a `from ... import`."""
    imported, _, bound = name.partition(" as ")
    return cst.ImportAlias(name=cst.Name(imported), asname=cst.AsName(cst.Name(bound)) if bound else None)


def _names_used(tree: cst.CSTNode, names: set[str], facts: Facts) -> set[str]:
    """Which of `names` are the value of some Name in `tree`: walked where it is new, answered
    from `facts`' index in the subtrees it kept of the tree `facts` describes (immutable)."""
    found: set[str] = set()
    kept = [name for name in names if facts.names_spelled(name)]  # (the rest are new to the file)
    stack = [tree]
    while stack and found != names:
        node = stack.pop()
        if node in facts.spans:
            found.update(name for name in kept if facts.has_name(node, name))
        elif type(node) is cst.Name:
            if node.value in names:
                found.add(node.value)
        else:
            stack.extend(mt.syntax_children(node))  # (no Name lies in whitespace or punctuation)
    return found


def _add_imports(module: cst.Module, imports, local: frozenset[str] = frozenset()) -> cst.Module:
    """Add `from MODULE import NAME` for each of `imports` not imported yet, as LibCST's
    AddImportsVisitor does (without importing `libcst.codemod`): names join an existing
    `from MODULE import ...` among the leading imports, sorted, in front; other modules get new
    lines, sorted by module, after the leading imports (and a blank line before the code), or
    before the first leading import of one of the program's own modules (`local`; a relative
    import): such a module runs its top level at that import, and the runtime's import, which
    quiets every process but the main one under a launcher, must come first, or what the module
    prints there is heard from every process.

        Before:                                   After:
            import torch                              import torch
            from data import *   # prints            from torch.nn.parallel import DistributedDataParallel
                                                      try:
                                                          from ddpify_runtime import (...)
                                                      ...
                                                      from data import *
    """
    body = list(module.body)
    start = 1 if body and _is_strict_or_docstring(body[0]) else 0
    leading = start
    while leading < len(body) and mt.sole(body[leading], (cst.Import, cst.ImportFrom)) is not None:
        leading += 1
    wanted: dict[str, set[str]] = {}
    for mod, name in imports:
        wanted.setdefault(mod, set()).add(name)
    present: dict[str, set[str]] = {}
    for stmt in body[start:leading]:
        imp = stmt.body[0]
        if isinstance(imp, cst.ImportFrom) and not imp.relative:
            names = {"*"} if isinstance(imp.names, cst.ImportStar) else {a.evaluated_name for a in imp.names
                                                                         if a.asname is None}
            present.setdefault(dotted(imp.module), set()).update(names)
    for mod, names in present.items():
        if mod in wanted:
            wanted[mod] = set() if "*" in names else wanted[mod] - names
    wanted = {mod: names for mod, names in sorted(wanted.items(), key=lambda item: (item[0] == RUNTIME, item[0]))
              if names}  # the runtime's `try` last, after the plain imports
    for i in range(start, leading):
        imp = body[i].body[0]
        mod = dotted(imp.module) if isinstance(imp, cst.ImportFrom) and not imp.relative else None
        if mod in wanted and not isinstance(imp.names, cst.ImportStar):
            added = [_alias(n) for n in sorted(wanted.pop(mod))]
            body[i] = body[i].with_changes(body=[imp.with_changes(names=[*added, *imp.names])])
    if not wanted:
        return module.with_changes(body=body)
    new = [_import(module.default_indent, mod, sorted(names)) for mod, names in wanted.items()]
    first = next((i for i in range(start, leading) if _imports_local(body[i].body[0], local)), leading)
    if first < leading:
        return module.with_changes(body=[*body[:first], *new, *body[first:leading], *_blank_line_before(body[leading:])])
    return module.with_changes(body=[*body[:leading], *new, *_blank_line_before(body[leading:])])


def _imports_local(imp: cst.Import | cst.ImportFrom, local: frozenset[str]) -> bool:
    """Does `imp` import one of the program's own modules (`local`, by their top-level names; a
    relative import)?"""
    if isinstance(imp, cst.ImportFrom):
        return bool(imp.relative) or imp.module is not None and dotted(imp.module).split(".")[0] in local
    return any(dotted(alias.name).split(".")[0] in local for alias in imp.names)


RUNTIME = "ddpify_runtime"
LINE_LENGTH = 79


def _import(indent: str, mod: str, names: list[str]) -> cst.BaseStatement:
    """`from MOD import NAMES`, wrapped in parentheses as a person would past the line length;
    the runtime's import inside a `try` whose failure is one line. Built as nodes, not parsed
    from text: a parse of these lines cost 0.1-0.3 ms per edited file (decision 0145); the
    nodes are those LibCST's parser gives for the text (tests/test_edits_import.py).

    Before: (nothing)
    After:
        try:
            from ddpify_runtime import (
                atomic_write, end_epoch, init_distributed_mode, is_main_process,
                set_epoch, shard_loader,
            )
        except ModuleNotFoundError as exc:  # ddpify_runtime or torch not installed
            raise SystemExit(f"{exc}: pip install 'ddpify[torch]', "
                             "or convert with --vendor-runtime") from None
    """
    runtime = mod == RUNTIME
    indent = indent if runtime else ""
    wrapped = len(f"{indent}from {mod} import {', '.join(names)}") > LINE_LENGTH
    rows: list[list[str]] = [[]]
    width = 0  # of the row's text, `a, b,`
    for name in names:
        if wrapped and rows[-1] and len(indent * 2) + width + 1 + len(name) + 1 > LINE_LENGTH:
            rows.append([])
            width = 0
        width += len(name) + 1 + (1 if rows[-1] else 0)
        rows[-1].append(name)
    commas: list[cst.Comma | cst.MaybeSentinel] = []
    for i, row in enumerate(rows):
        commas += [cst.Comma(whitespace_after=_SPACE) for _ in row[1:]]
        commas.append(cst.Comma(whitespace_after=_line_break(indent if i < len(rows) - 1 else "")) if wrapped
                      else cst.MaybeSentinel.DEFAULT)
    aliases = [cst.ImportAlias(cst.Name(imported), cst.AsName(cst.Name(bound)) if bound else None, comma)
               for (imported, _, bound), comma in zip((n.partition(" as ") for n in names), commas)]
    imp = cst.SimpleStatementLine([cst.ImportFrom(
        _dotted_name(mod), aliases, lpar=cst.LeftParen(_line_break(indent)) if wrapped else None,
        rpar=cst.RightParen() if wrapped else None)])
    if not runtime:
        return imp
    return cst.Try(cst.IndentedBlock([imp]), [_missing_runtime()])


@functools.cache
def _missing_runtime() -> cst.ExceptHandler:
    """The runtime import's `except`, one line naming both ways out; the same for every import
    (LibCST's nodes are immutable: one object serves every output tree)."""
    return cst.ExceptHandler(
        cst.IndentedBlock([cst.SimpleStatementLine([cst.Raise(
            cst.Call(cst.Name("SystemExit"), [cst.Arg(cst.ConcatenatedString(
                cst.FormattedString([cst.FormattedStringExpression(cst.Name("exc")),
                                     cst.FormattedStringText(": pip install 'ddpify[torch]', ")], start='f"'),
                cst.SimpleString('"or convert with --vendor-runtime"'),
                whitespace_between=_line_break(" " * len("raise SystemExit("))))]),
            cst.From(cst.Name("None"), whitespace_before_from=_SPACE),
            whitespace_after_raise=_SPACE)])],
            header=cst.TrailingWhitespace(cst.SimpleWhitespace("  "),
                                          cst.Comment("# ddpify_runtime or torch not installed"))),
        cst.Name("ModuleNotFoundError"), cst.AsName(cst.Name("exc")))


_SPACE = cst.SimpleWhitespace(" ")


def _line_break(indent: str) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, the next line indented by `indent` past its block's."""
    return cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(indent))


def _dotted_name(mod: str) -> cst.Name | cst.Attribute:
    """`torch.nn.parallel` as the Name/Attribute chain of an import's module."""
    first, *rest = mod.split(".")
    node: cst.Name | cst.Attribute = cst.Name(first)
    for part in rest:
        node = cst.Attribute(node, cst.Name(part))
    return node


def _is_strict_or_docstring(stmt: cst.CSTNode) -> bool:
    """A module docstring (a plain string) or a `__strict__ = ...` flag: imports go after it."""
    expr, assign = mt.sole(stmt, cst.Expr), mt.sole(stmt, cst.Assign)
    return expr is not None and isinstance(expr.value, cst.SimpleString) or assign is not None and \
        len(assign.targets) == 1 and mt.is_name(assign.targets[0].target, "__strict__")


def _blank_line_before(statements: list) -> list:
    """At least one empty line between the imports and the first statement after them."""
    if not statements:
        return statements
    first = statements[0]
    if first.leading_lines and first.leading_lines[0].comment is None:
        return statements
    return [first.with_changes(leading_lines=(cst.EmptyLine(), *first.leading_lines)), *statements[1:]]
