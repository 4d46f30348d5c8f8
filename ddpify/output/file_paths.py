"""Paths a module builds from its `__file__` above its own folder, anchored at its original where the
converted module is written into another folder.

`ddpify convert scripts/train.py -o out/` writes `out/train.py`, whose `__file__` names the output.
What a path built from it names beside the module is taken care of where it is written
(ddpify.output.packages copies the files it reads there and makes the folders it writes into), but
a path that climbs above the module's folder names a place the output cannot hold:

    base_config_path = Path(__file__).parent.parent / "configs" / "base.yaml"   # scripts/../configs
    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))          # the project's root
    sys.path.insert(1, os.path.join(os.path.dirname(__file__), "..", "src"))

From `out/train.py` these name `out/../configs/base.yaml`, and the converted program stopped at its
first read, with nothing in the report. In the written module, `__file__` in such a path (or in the
binding of a name such a path reads, `ROOT = ...` above) names the original file, relative to the
output (`os.path.normpath(os.path.join(os.path.dirname(__file__), "../scripts/train.py"))`), so
the path names what it named in the single-GPU program; each is said in the report. So does a path
from `__file__` completed by a value read at run time, whose place the conversion cannot know, so
that nothing it copies holds it (`cfg["data"] = os.path.join(os.path.dirname(__file__),
cfg["data"])`: a data set named on the command line; a name bound once to a string literal is
that literal), and `__file__` handed as it is to a function of the program, which may climb
(`root = get_project_root(__file__)`: `_handed_on`). `ddpify run`
writes its copies into a private folder and anchors them the same way. A path that stays in the
module's folder keeps `__file__` as it is. `sys.modules[__name__].__file__` is the module's
`__file__` too (a module that names itself so): anchored the same way. So is the folder
`@hydra.main(config_path=...)` names relative to the decorated module's file where it climbs
above that folder or is known at run time only (`config_path="../configs/toy"` in
`scripts/train.py`, or a name bound to it; the configuration beside the script is copied beside
the output; decision 0267): hydra takes an absolute folder, the original's
(`config_path=os.path.join(os.path.dirname(<the original's file>), "../configs/toy")`).
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from pathlib import Path
from typing import TypeGuard

SAME = ("os.path.abspath", "os.path.realpath", "os.path.normpath", "os.path.expanduser", "abspath", "realpath",
        "normpath", "os.fspath", "str", "Path", "pathlib.Path", "PurePath", "pathlib.PurePath", "PosixPath")
DIRNAME = ("os.path.dirname", "path.dirname", "dirname")
JOIN = ("os.path.join", "path.join", "join")
SAME_METHODS = ("resolve", "absolute", "expanduser")
UNKNOWN = "?"  # a place below the module's folder known at run time only
BUILTINS = frozenset(dir(builtins))


def anchored(code: bytes, original: Path, written: Path) -> tuple[bytes, list[int]]:
    """`code` of a module read from `original` and written at `written`, with `__file__` naming the
    original in each path built from it that climbs above the module's folder, and the lines changed
    (1-based, in `code`); unchanged where the module is written into its own folder or nothing climbs."""
    original, written = Path(os.path.realpath(original)), Path(os.path.realpath(written))
    if b"__file__" not in code and b"hydra" not in code or original.parent == written.parent:
        return code, []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code, []
    rel = os.path.relpath(original, written.parent).replace(os.sep, "/")
    prefix = "os." if any(isinstance(n, ast.Import) and any(a.name == "os" and a.asname is None for a in n.names)
                          for n in tree.body) else '__import__("os").'
    anchor = f'{prefix}path.normpath({prefix}path.join({prefix}path.dirname(__file__), "{rel}"))'
    lines = code.splitlines(keepends=True)
    found = _edits(tree, lines, anchor.encode()) | _hydra_edits(tree, lines, anchor.encode(), prefix.encode())
    edits = {e for e in found if not any(o != e and o[0] == e[0] and o[1] <= e[1] and e[2] <= o[2] for o in found)}
    for line, start, end, text in sorted(edits, reverse=True):  # (one inside another's span: the other does it)
        lines[line - 1] = lines[line - 1][:start] + text + lines[line - 1][end:]
    return b"".join(lines), sorted({line for line, *_ in edits})


def _edits(tree: ast.Module, lines: list[bytes], anchor: bytes) -> set[tuple[int, int, int, bytes]]:
    """(line, start, end, text): `__file__` replaced by `anchor` in each path built from it that
    climbs above the module's folder; where the path reads a name bound once to a path from
    `__file__`, in that binding if it climbs itself (`ROOT = Path(__file__).parents[1]`: every use
    of it names the original's places), else at the use, by the binding's value with the anchor
    (`here = os.path.dirname(__file__)`, `os.path.join(here, "..", "src")`: the other uses of
    `here` keep naming the output's folder)."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    bound = {name: values[0] for name, values in bindings_of(tree).items() if len(values) == 1}
    literals = {name: v.value for name, v in bound.items() if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    files = [n for n in ast.walk(tree) if _is_file(n)]
    edits = set()
    for node in ast.walk(tree):
        if _is_file(node):
            if _climbs(node, ["F"], parents, literals) or _handed_on(node, parents):
                edits.add(_spanned(node, anchor))
            continue
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        value = bound.get(node.id)
        path = _value(value, bound, parents, literals, depth=3) if value is not None else None
        if value is None or path is None or not _climbs(node, path, parents, literals):
            continue
        inside = [f for f in files if _within(f, value, parents)]
        text = _anchored_text(value, lines, anchor, bound, parents, literals, depth=3)
        if path and path[0] == ".." and inside:
            edits |= {_spanned(f, anchor) for f in inside}
        elif path and path[0] == ".." and text is not None:  # `ROOT = os.path.join(HERE, "..")`: at the binding
            edits.add((value.lineno, value.col_offset, value.col_offset + len(_source(value, lines)), text))
        elif text is not None:
            edits.add((node.lineno, node.col_offset, node.col_offset + len(node.id), b"(" + text + b")"))
    return edits


def hydra_main_arguments(tree: ast.Module) -> list[dict[str, ast.expr]]:
    """`{"config_path": ..., "config_name": ...}` (the arguments given, positional or by keyword) of
    each `@hydra.main(...)` (or `@main(...)`) decorating a function of the module (`string_value`
    reads them)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for call in node.decorator_list:
            if isinstance(call, ast.Call) and ast.unparse(call.func) in ("hydra.main", "main"):
                given = dict(zip(("config_path", "config_name"), call.args))
                found.append(given | {k.arg: k.value for k in call.keywords if k.arg in ("config_path", "config_name")})
    return found


def _hydra_edits(tree: ast.Module, lines: list[bytes], anchor: bytes, prefix: bytes) -> set[tuple[int, int, int, bytes]]:
    """(line, start, end, text): each `@hydra.main` `config_path` that climbs above the module's
    folder (a literal, or a name bound once to one: `config_path = f"../configs/toy"`) or is known
    at run time only, joined to the original's folder (hydra reads a relative one beside the
    decorated module's own file, the output's; an absolute one is kept by the join)."""
    bindings = bindings_of(tree)
    edits = set()
    for given in hydra_main_arguments(tree):
        path = given.get("config_path")
        if path is None or isinstance(path, ast.Constant) and not isinstance(path.value, str):
            continue  # (config_path=None: no folder)
        value = string_value(path, bindings)
        if value is not None and (value.startswith("pkg://") or os.path.isabs(value)
                                  or os.path.normpath(value).split(os.sep)[0] != ".."):
            continue  # (beside the module: copied beside the output; a value known at run time only: anchored)
        text = _source(path, lines)
        if text:
            edits.add((path.lineno, path.col_offset, path.col_offset + len(text),
                       prefix + b"path.join(" + prefix + b"path.dirname(" + anchor + b"), " + text + b")"))
    return edits


def bindings_of(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """name -> the values assigned to it (`NAME = value`) anywhere in the module."""
    bindings: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bindings.setdefault(node.targets[0].id, []).append(node.value)
    return bindings


def string_value(expr: ast.expr, bindings: dict[str, list[ast.expr]]) -> str | None:
    """The string `expr` is: a literal, an f-string with nothing to format, or a name bound once to
    one (`config_path = f"../configs/toy"`); else None (known at run time only)."""
    if isinstance(expr, ast.Name) and len(bindings.get(expr.id, [])) == 1:
        expr = bindings[expr.id][0]
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in expr.values):
        return "".join(str(v.value) for v in expr.values if isinstance(v, ast.Constant))
    return None


def _is_file(node: ast.AST) -> TypeGuard[ast.expr]:
    """`__file__`, or `sys.modules[__name__].__file__` (the same module's file)."""
    if isinstance(node, ast.Name):
        return node.id == "__file__" and isinstance(node.ctx, ast.Load)
    return isinstance(node, ast.Attribute) and node.attr == "__file__" and isinstance(node.ctx, ast.Load) \
        and ast.unparse(node.value) == "sys.modules[__name__]"


def _spanned(node: ast.expr, text: bytes) -> tuple[int, int, int, bytes]:
    """(line, start, end, text): `node` (a `__file__` on one line) replaced by `text`."""
    end = node.end_col_offset if node.end_lineno == node.lineno and node.end_col_offset is not None \
        else node.col_offset + len("__file__")
    return node.lineno, node.col_offset, end, text


def _source(expr: ast.expr, lines: list[bytes]) -> bytes:
    """The text of `expr`, written on one line (empty where it spans several)."""
    if expr.lineno != expr.end_lineno or expr.end_col_offset is None:
        return b""
    return lines[expr.lineno - 1][expr.col_offset:expr.end_col_offset]


def _anchored_text(value: ast.expr, lines: list[bytes], anchor: bytes, bound: dict[str, ast.expr],
                   parents: dict[ast.AST, ast.AST], literals: dict[str, str], depth: int) -> bytes | None:
    """The text of `value` (on one line) with `__file__` replaced by `anchor`, and each name in it
    bound once to a path from `__file__` by the anchored text of its binding, or None."""
    text = _source(value, lines)
    if not text:
        return None
    names = [n for n in ast.walk(value) if _is_file(n) or isinstance(n, ast.Name) and n.id in bound and depth
             and _value(bound[n.id], bound, parents, literals, depth - 1) is not None]
    for name in sorted(names, key=lambda n: n.col_offset, reverse=True):
        if _is_file(name):
            inner: bytes | None = anchor
        else:
            assert isinstance(name, ast.Name)
            inner = _anchored_text(bound[name.id], lines, anchor, bound, parents, literals, depth - 1)
        if inner is None:
            return None
        start, end = (s - value.col_offset for s in _spanned(name, b"")[1:3])
        text = text[:start] + (inner if _is_file(name) else b"(" + inner + b")") + text[end:]
    return text


def _handed_on(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> bool:
    """Is `__file__` handed as it is to a function the module does not show, which may build any
    path from it (`root_path = get_project_root(__file__)`, with `def get_project_root(file): return
    os.path.dirname(os.path.dirname(os.path.abspath(file)))` in another module: from `out/train.py`
    the root became the folder above `out/`, and the program wrote its logs there while a relative
    `logs/...` read them beside the working folder; decision 0274)? Not a path operation of this
    module (`os.path.dirname(__file__)`, `Path(__file__)`: followed by `_climbs`), nor a builtin's
    or the standard library's call (`open(__file__)`, `os.path.basename(__file__)`), which names
    no place above the file's folder."""
    parent = parents.get(node)
    call = parents.get(parent) if isinstance(parent, ast.keyword) else parent
    if not isinstance(call, ast.Call) or call.func is node:
        return False
    name = ast.unparse(call.func)
    root = name.split(".")[0]
    return name not in (*DIRNAME, *SAME, *JOIN) and root not in sys.stdlib_module_names and root not in BUILTINS


def _within(node: ast.AST, top: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node is not None and node is not top:
        node = parents.get(node)  # type: ignore[assignment]
    return node is top


def _value(expr: ast.expr, bound: dict[str, ast.expr], parents: dict[ast.AST, ast.AST], literals: dict[str, str],
           depth: int) -> list[str] | None:
    """The path `expr` names relative to the module's folder (`["F"]`: the module's file, `[".."]`:
    the folder above), or None where it is not a path built from `__file__` (through names bound
    once, `depth` deep)."""
    for leaf in ast.walk(expr):
        if _is_file(leaf):
            path: list[str] | None = ["F"]
        elif not isinstance(leaf, ast.Name):
            continue
        elif leaf.id in bound and depth:
            path = _value(bound[leaf.id], bound, parents, literals, depth - 1)
        else:
            continue
        node: ast.expr = leaf
        while path is not None and node is not expr:
            path, node = _applied(node, path, parents, literals), _outer(node, parents)
        if path is not None:
            return path
    return None


def _climbs(node: ast.expr, path: list[str] | None, parents: dict[ast.AST, ast.AST], literals: dict[str, str]) -> bool:
    """Does `path` (what `node` names), or a path operation around `node`, reach above the
    module's folder, or to a place below it known at run time only (which the output's folder
    does not hold: nothing the conversion reads names it)?"""
    while path is not None:
        if path and (path[0] == ".." or path[-1] == UNKNOWN):
            return True
        path, node = _applied(node, path, parents, literals), _outer(node, parents)
    return False


def _outer(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> ast.expr:
    """The expression a path operation on `node` makes: the call of a `.method()` on it, the
    subscript of its `.parents[...]`, else its parent."""
    parent = parents.get(node)
    if isinstance(parent, ast.Attribute) and isinstance(parents.get(parent), (ast.Call, ast.Subscript)):
        return parents[parent]  # type: ignore[return-value]
    return parent  # type: ignore[return-value]


def _applied(node: ast.expr, path: list[str], parents: dict[ast.AST, ast.AST],
             literals: dict[str, str]) -> list[str] | None:
    """What the path operation whose operand is `node` (naming `path`) names, or None where the
    expression around `node` is not a path operation on it."""
    parent = parents.get(node)
    if isinstance(parent, ast.Call) and node in parent.args:
        name = ast.unparse(parent.func)
        if name in DIRNAME and len(parent.args) == 1:
            return _up(path)
        if name in SAME and len(parent.args) == 1:
            return path
        if (name in JOIN or name in SAME) and parent.args[0] is node:
            return _joined(path, parent.args[1:], literals)
        return None
    if isinstance(parent, ast.Attribute) and parent.value is node:
        outer = parents.get(parent)
        if parent.attr == "parent":
            return _up(path)
        if parent.attr in SAME_METHODS and isinstance(outer, ast.Call) and not outer.args:
            return path
        if parent.attr == "joinpath" and isinstance(outer, ast.Call):
            return _joined(path, outer.args, literals)
        if parent.attr == "parents" and isinstance(outer, ast.Subscript) and isinstance(outer.slice, ast.Constant) \
                and isinstance(outer.slice.value, int):
            for _ in range(outer.slice.value + 1):
                path = _up(path)
            return path
        return None
    if isinstance(parent, ast.BinOp) and parent.left is node:
        if isinstance(parent.op, ast.Div):
            return _joined(path, [parent.right], literals)
        if isinstance(parent.op, ast.Add) and isinstance(parent.right, ast.Constant) and \
                isinstance(parent.right.value, str) and parent.right.value.startswith("/"):
            return _joined(path, [ast.Constant(parent.right.value.lstrip("/"))], literals)
    return None


def _up(path: list[str]) -> list[str]:
    if path and path[-1] == UNKNOWN:
        return path
    return path[:-1] if path and path[-1] != ".." else [*path, ".."]


def _joined(path: list[str], parts: list[ast.expr], literals: dict[str, str]) -> list[str] | None:
    """`path` joined with string literals (`".."`, `"configs/base.yaml"`, or a name bound once to
    one), or None (another constant, an absolute path); joined with a value read at run time
    (`os.path.join(os.path.dirname(__file__), cfg["data"])`), an unknown place (`UNKNOWN`) there."""
    for part in parts:
        text = part.value if isinstance(part, ast.Constant) else literals.get(part.id) if isinstance(part, ast.Name) \
            else None
        if text is None and not isinstance(part, ast.Constant):
            return [*path, UNKNOWN]
        if not isinstance(text, str) or text.startswith("/"):
            return None
        for segment in text.split("/"):
            if segment not in ("", "."):
                path = _up(path) if segment == ".." else [*path, segment]
    return path
