"""What the analysis' front end would cost on Python's `ast` instead of LibCST (decision 0135): the
files a conversion reads, parsed and indexed each way, and the share of them a conversion edits.

    python bench/ast_front_end.py [ENTRY|FOLDER ...] [--manifest JSON --root DIR ...] [--reps N]

For each entry (as bench/phases.py takes them: scripts, notebooks, folders, fresh-sweep manifests
with their `pythonpath`), the files `ddpify convert ENTRY` reads (`load(...).parts`). Times, CPU,
the median of REPS rounds over all of them (default 5), each step after a collection of the
garbage before it, under the command's garbage collector settings (`collect_less`), as a share of the floor (LibCST's
parse + codegen, bench/real_speed.py's): LibCST's parse; its codegen; `Facts` of each file (the one
walk of every syntax node, its parents, spans, nodes by type, calls, names, assignments: the index
every question of the analyses reads); Python's `ast.parse`; the same walk over the `ast` tree
(parents, pre-order spans, nodes by type, the same lists kept); `ast.unparse`. Then the lines of
the files the conversion changes, of all lines read: LibCST's parse and print would still be needed
for those (the edits keep comments and layout), the rest could be read with `ast` alone.

A prototype of the front end only: the ~30 analysis steps and rewrites that ask their questions of
LibCST nodes are not ported; what they cost beyond the parse is bench/phases.py's table.
"""

from __future__ import annotations

import ast
import gc
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import libcst

from ddpify.cli import collect_less
from ddpify.convert import convert_program
from ddpify.inputs.files import is_notebook
from ddpify.inputs.program import load
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import RECURSION_LIMIT, _expand_indentation
from real_speed import programs_from_arguments

# the lists `ddpify.syntax.facts._collect` keeps, by the `ast` node types that hold the same things
KEPT = {ast.Call: "calls", ast.For: "loops", ast.AsyncFor: "loops", ast.While: "loops", ast.Attribute: "attributes",
        ast.Break: "breaks", ast.Continue: "continues", ast.Return: "returns", ast.Name: "names",
        ast.Constant: "strings", ast.JoinedStr: "fstrings"}
_END = object()


def ast_index(tree: ast.AST) -> dict:
    """`_collect`'s walk over an `ast` tree: each node's parent and pre-order span, every node by
    its type, and the lists the analyses read (calls, loops, functions by name, classes, assignments)."""
    kept: dict[str, list] = defaultdict(list)
    functions: dict[str, list] = defaultdict(list)
    classes: dict[str, ast.ClassDef] = {}
    assigns: list = []
    parents: dict = {}
    spans: dict = {}
    by_type: dict = {}
    count = 0
    stack: list = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if parent is _END:
            node[1] = count
            continue
        if parent is not None:
            parents[node] = parent
        count += 1
        span = spans[node] = [count - 1, count]
        kind = type(node)
        by_type.setdefault(kind, []).append(node)
        key = KEPT.get(kind)
        if key is not None:
            kept[key].append(node)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            functions[node.name].append(node)
        elif kind is ast.ClassDef:
            classes[node.name] = node
        elif kind is ast.Assign:
            assigns += [(target, node.value, node) for target in node.targets]
        elif kind is ast.AnnAssign or kind is ast.AugAssign:
            assigns += [(node.target, node.value, node)] if node.value is not None else []
        children = list(ast.iter_child_nodes(node))
        if children:
            stack.append((span, _END))
            stack += [(child, node) for child in reversed(children)]
    return {"parents": parents, "spans": spans, "by_type": by_type, "functions": functions, "classes": classes,
            "assigns": assigns, **kept}


def _script(entry: Path) -> bytes:
    if is_notebook(entry.name):
        from ddpify.inputs.notebook import to_script

        return to_script(str(entry), entry.read_bytes()).code.encode()
    return entry.read_bytes()


def main() -> None:
    found, args = programs_from_arguments(__doc__.splitlines()[0])
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    collect_less()
    sources: list[bytes] = []
    lines = changed = 0
    for _, entry, pythonpath in found:
        if pythonpath is not None:
            os.environ["PYTHONPATH"] = os.pathsep.join(map(str, pythonpath))
        program = load(entry, _script(entry))
        sources += [_expand_indentation(part.data) or part.data for part in program.parts]
        result = convert_program(load(entry, _script(entry)))
        for one in (result, *result.modules.values()):
            lines += len(one.source.splitlines())
            changed += len(one.source.splitlines()) if one.changed else 0
    spent: dict[str, list[float]] = defaultdict(list)

    def timed(name: str, work, items: list) -> list:
        """`work` of each of `items`, its CPU time added to `spent[name]`."""
        gc.collect()  # (each step on a heap without the garbage of the one before: `Facts` leaves cycles)
        start = time.process_time()
        out = [work(item) for item in items]
        spent[name].append(time.process_time() - start)
        return out

    for _ in range(args.reps):
        trees = timed("LibCST parse", libcst.parse_module, sources)
        timed("LibCST codegen", lambda tree: tree.code, trees)
        timed("Facts of each file (the walk and its index)", Facts, trees)
        tiny = timed("ast.parse", ast.parse, sources)
        timed("the same walk over ast", ast_index, tiny)
        timed("ast.unparse", ast.unparse, tiny)
    each = {name: statistics.median(times) for name, times in spent.items()}
    floor = each["LibCST parse"] + each["LibCST codegen"]
    print(f"{len(found)} programs, {len(sources)} files, {lines} lines read (CPU, medians of {args.reps}); "
          f"floor (LibCST parse + codegen) {floor * 1e3:.0f} ms")
    for name, seconds in each.items():
        print(f"  {name:<45} {seconds * 1e3:8.1f} ms  {seconds / floor:5.2f} floors")
    print(f"lines of the files the conversion changes: {changed} of {lines} ({changed / lines:.0%})")


if __name__ == "__main__":
    main()
