"""astroid against ddpify's own core (decision 0015): on fixtures of issue 27's class shapes, does
astroid infer what the instance attributes, calls and rank values are, and at what cost
against LibCST parse + our analysis? Needs `pip install astroid` (not a dependency of ddpify).

    python bench/astroid_vs_core.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import astroid
from astroid import nodes
import libcst as cst

from ddpify.analysis.result import analyse

ROOT = Path(__file__).resolve().parent.parent
# (fixture folder, module, question: (function name, expression text), expected class name)
QUESTIONS = [
    ("fixtures/objects_solver/before", "solver.py", ("train", "self.G"), "Generator"),
    ("fixtures/objects_solver/before", "solver.py", ("train", "self.D"), "Discriminator"),
    ("fixtures/objects_solver/before", "solver.py", ("train", "self.g_optimizer"), "Adam"),
    ("fixtures/objects_stopper/before", "train.py", ("main", "stopper"), "EarlyStopping"),
]


def _infer(folder: Path, module: str, func: str, expr: str) -> str:
    sys.path.insert(0, str(folder))
    try:
        tree = astroid.MANAGER.ast_from_file(str(folder / module))
        for node in tree.nodes_of_class((nodes.Attribute, nodes.Name)):
            scope = node.scope()
            if getattr(scope, "name", None) == func and node.as_string() == expr:
                found = {getattr(v, "name", type(v).__name__) for v in node.infer()}
                return ",".join(sorted(found))
        return "(expression not found)"
    except astroid.InferenceError as exc:
        return f"InferenceError: {exc}"
    finally:
        sys.path.pop(0)


def main() -> None:
    for folder, module, (func, expr), expected in QUESTIONS:
        got = _infer(ROOT / folder, module, func, expr)
        print(f"{folder.split('/')[1]}:{module} {func}: {expr} -> {got} (expected {expected}: "
              f"{'yes' if expected in got.split(',') else 'NO'})")
    files = sorted((ROOT / "fixtures").glob("objects_*/before/**/*.py")) + sorted(
        (ROOT / "fixtures").glob("canonical/before.py"))
    ours, theirs, floor = [], [], []
    for _ in range(5):
        for target, fn in ((ours, lambda s: analyse(cst.parse_module(s)).models),
                           (theirs, lambda s: [list(n.infer()) for n in astroid.parse(s).nodes_of_class(
                               nodes.Attribute)]),
                           (floor, lambda s: cst.parse_module(s).code)):
            start = time.perf_counter()
            for path in files:
                try:
                    fn(path.read_text())
                except astroid.AstroidError:
                    pass
            target.append(time.perf_counter() - start)
    lines = sum(len(p.read_text().splitlines()) for p in files)
    a, t, f = (statistics.median(x) for x in (ours, theirs, floor))
    print(f"{len(files)} files, {lines} lines: LibCST parse+codegen {f:.3f} s; ours (parse + analyse) {a:.3f} s "
          f"({a / f:.2f}x); astroid (parse + infer every attribute) {t:.3f} s ({t / f:.2f}x)")


if __name__ == "__main__":
    main()
