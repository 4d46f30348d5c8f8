"""Build large, valid training scripts for the benchmarks by repeating fixtures.

A *unit* is the bodies of a few fixtures that define a ``main()`` (``UNIT``). Copy ``k`` of the
unit gets every top-level name it defines (classes, functions, module constants) renamed with
a suffix naming the fixture and the copy (``main_a1``, ``Net_b3``): LibCST renames the ``Name``
nodes that refer to them; attributes such as ``model.train``, keyword arguments such as
``train=True`` and strings are untouched. The imports of all fixtures come once, at the top;
one ``if __name__ == "__main__":`` guard at the end calls the first fixture's first ``main``.
Every copy keeps its own argparse, DataLoaders, model, optimizer, epoch loop and
``torch.save``, so ddpify converts every copy (the conversion work grows with the copies), and
``n`` units have ``n`` times the body lines of one unit plus a fixed header.

    python bench/make_large.py UNITS OUT.py      # e.g. 10 units: ~3,300 lines
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
UNIT = ("canonical", "mnist_style", "trainer_class")


def _is_main_guard(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.If) and "__name__" in cst.Module([]).code_for_node(stmt.test)


def _is_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString))


def _defined_names(body) -> set[str]:
    """Top-level names a fixture binds (other than by import)."""
    names = set()
    for stmt in body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                    [small.target] if isinstance(small, cst.AnnAssign) else [])
                names.update(t.value for t in targets if isinstance(t, cst.Name))
    return names


class _Rename(cst.CSTTransformer):
    def __init__(self, names: set[str], suffix: str) -> None:
        super().__init__()
        self.names, self.suffix = names, suffix

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=updated.value + self.suffix) if updated.value in self.names else updated

    # `model.train()` and `MNIST(train=True)` are not the top-level `train`: keep those names
    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def _parts(name: str):
    module = cst.parse_module((FIXTURES / name / "before.py").read_text())
    imports = [s for s in module.body if _is_import(s)]
    body = [s for s in module.body if not (_is_import(s) or _is_main_guard(s))]
    if body and _is_docstring(body[0]):
        body = body[1:]
    return imports, body


def build(units: int, unit: tuple[str, ...] = UNIT) -> str:
    """The source of a script made of `units` renamed copies of the fixtures in `unit`."""
    imports, seen, bodies = [], set(), []
    for name in unit:
        fixture_imports, body = _parts(name)
        for stmt in fixture_imports:
            code = cst.Module([]).code_for_node(stmt).strip()
            if code not in seen:
                seen.add(code)
                imports.append(stmt)
        bodies.append(body)
    out = [f'"""Benchmark input: {units} renamed copies of fixtures {", ".join(unit)} (bench/make_large.py)."""\n']
    out += [cst.Module([]).code_for_node(s) for s in imports]
    for k in range(1, units + 1):
        for i, body in enumerate(bodies):
            copy = cst.Module(body=body).visit(_Rename(_defined_names(body), f"_{chr(ord('a') + i)}{k}"))
            out.append("\n\n" + copy.code.strip("\n") + "\n")
    out.append('\n\nif __name__ == "__main__":\n    main_a1()\n')
    return "".join(out)


def main(argv: list[str]) -> None:
    units, path = int(argv[0]), Path(argv[1])
    path.write_text(build(units))
    print(f"{path}: {units} units, {len(path.read_text().splitlines())} lines")


if __name__ == "__main__":
    main(sys.argv[1:])
