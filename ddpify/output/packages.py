"""The package `__init__.py` files a converted module needs beside it in an output folder.

`ddpify convert train.py -o out/` writes `out/engine/loop.py` for a changed `engine/loop.py`.
Python takes a regular package (a folder with an `__init__.py`) over a folder without one,
wherever each is on the path, so without `out/engine/__init__.py` the program would import the
original `engine/loop.py`. Each package folder on the way to a written module gets its
`__init__.py`, unchanged but for one line after its docstring and `__future__` imports:

    __path__ = __import__("pkgutil").extend_path(__path__, __name__)  # ddpify: ...

which adds the package's folders further on `sys.path` (the original one, on the PYTHONPATH the
run hint gives), so that the modules the conversion left unchanged are imported from there.
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath
from typing import Iterable

EXTEND = (b'__path__ = __import__("pkgutil").extend_path(__path__, __name__)  # ddpify: the modules '
          b'left unchanged are in the original folder\n')


def init_files(project: Path, written: Iterable[str]) -> dict[str, bytes]:
    """`{rel: content}`: the `__init__.py` of each package folder of `project` holding a module
    of `written` (paths relative to `project`), those among `written` left out."""
    found: dict[str, bytes] = {}
    done = set(written)
    for rel in done:
        for folder in PurePosixPath(rel).parents:
            init = str(folder / "__init__.py")
            if folder == PurePosixPath(".") or init in done or init in found:
                continue
            path = project / init
            if path.is_file():
                found[init] = extended(path.read_bytes())
    return found


def init_files_where_read(project: Path, written: dict[str, str | None]) -> dict[str, tuple[Path, bytes]]:
    """`{rel: (its original, content)}` as `init_files`, for modules of `written` (rel -> the
    path a module was read from where a folder the program puts on `sys.path` holds it, e.g.
    `nb/../lib/pkg/utils.py`; None: under `project`): each package's `__init__.py` is taken
    from where its module lies, so `lib/pkg/__init__.py` comes with `pkg/utils.py`."""
    bases: dict[Path, list[str]] = {}
    for rel, read_from in written.items():
        base = project if read_from is None else Path(read_from).resolve().parents[len(PurePosixPath(rel).parts) - 1]
        bases.setdefault(base, []).append(rel)
    found: dict[str, tuple[Path, bytes]] = {}
    for base, rels in bases.items():
        for rel, code in init_files(base, rels).items():
            found.setdefault(rel, (base / rel, code))
    return found


def extended(code: bytes) -> bytes:
    """`code` with `EXTEND` after its docstring and `from __future__` imports (unchanged if it
    does not parse)."""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        return code
    at = 0
    for i, stmt in enumerate(body):
        docstring = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
            and isinstance(stmt.value.value, str)
        if not (docstring or isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            break
        at = stmt.end_lineno or at
    lines = code.splitlines(keepends=True)
    if at and not lines[at - 1].endswith((b"\n", b"\r")):
        lines[at - 1] += b"\n"
    return b"".join([*lines[:at], EXTEND, *lines[at:]])
