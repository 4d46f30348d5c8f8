"""How long the pairs of tests/rewrites are: the lines written per case of each file's ``PAIRS``
(``pair``: before + after; ``kept``: its one script; a plain ``(before, after)``: both), and the
before side alone. Run from a checkout: ``python bench/pair_lengths.py``; on an older commit,
``git archive COMMIT tests | tar -x -C DIR`` and run it in DIR (decision 0026 has the figures)."""

from __future__ import annotations

import ast
import importlib
import statistics
import sys
from pathlib import Path


def lengths(root: Path) -> tuple[list[int], list[int]]:
    """(lines written per case, lines of its before) over ``root/tests/rewrites/test_*.py``."""
    sys.path.insert(0, str(root))
    written, before = [], []
    for path in sorted((root / "tests" / "rewrites").glob("test_*.py")):
        module = importlib.import_module(f"tests.rewrites.{path.stem}")
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PAIRS" for t in node.targets):
                for case in node.value.elts:
                    texts = [eval(compile(ast.Expression(e), str(path), "eval"), vars(module))
                             for e in _scripts(case)]
                    written.append(sum(len(t.splitlines()) for t in texts))
                    before.append(len(texts[0].splitlines()))
    return written, before


def _scripts(case: ast.expr) -> list[ast.expr]:
    """The script arguments of one ``PAIRS`` entry, as written."""
    if isinstance(case, ast.Call) and getattr(case.func, "attr", "") == "param":  # pytest.param(pair(...))
        case = case.args[0]
    if isinstance(case, ast.Tuple):
        return case.elts[:2]
    return case.args[:1] if getattr(case.func, "id", "") == "kept" else case.args[:2]


def main() -> None:
    written, before = lengths(Path.cwd())
    print(f"{len(written)} pairs: median {statistics.median(written)} lines written (before + after), "
          f"{sum(n <= 10 for n in written)} of them <= 10; before alone: median {statistics.median(before)}")


if __name__ == "__main__":
    main()
