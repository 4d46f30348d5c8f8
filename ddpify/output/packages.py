"""The package `__init__.py` files a converted module needs beside it in an output folder.

`ddpify convert train.py -o out/` writes `out/engine/loop.py` for a changed `engine/loop.py`.
Python takes a regular package (a folder with an `__init__.py`) over a folder without one,
wherever each is on the path, so without `out/engine/__init__.py` the program would import the
original `engine/loop.py`. Each package folder on the way to a written module gets its
`__init__.py`, unchanged but for one line after its docstring and `__future__` imports:

    __path__ = __import__("pkgutil").extend_path(__path__, __name__)  # ddpify: ...

which adds the package's folders further on `sys.path` (the original one, on the PYTHONPATH the
run hint gives), so that the modules the conversion left unchanged are imported from there. A
package `__init__.py` the conversion changed gets the same line.

A file a written module reads beside itself through a path built from its `__file__`
(`open(os.path.join(os.path.dirname(__file__), 'VERSION'))` in a package's `__init__.py`) is
copied beside the copy: its `__file__` names the output folder; so is the configuration
`@hydra.main(config_path=...)` reads beside the module. A folder it builds paths into
(`os.path.join(os.path.dirname(__file__), 'trained_models')`) is made there, empty, and said.

A changed module goes at its path under the folder it is imported from: the entry's folder
(`engine/loop.py`), a folder the program puts on `sys.path` (`../helper_train.py` through
`sys.path.insert(0, "..")`: `helper_train.py`), or a folder above the entry's that holds its
package (`scripts/train.py` importing `src.lib` from the repository: `src/lib.py`). Python puts
the converted entry's folder first on `sys.path`, so the converted modules beside it are the ones
imported however the program's folders are put on the path (`PYTHONPATH=.`, an install, an
insert); `original_folders` are the folders where the unchanged ones stay.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Iterable, Mapping

if TYPE_CHECKING:
    from ddpify.convert import Result

EXTEND = (b'__path__ = __import__("pkgutil").extend_path(__path__, __name__)  # ddpify: the modules '
          b'left unchanged are in the original folder\n')


def beside_entry(modules: Mapping[str, Result]) -> dict[str, Result]:
    """`{path beside the converted entry: module}` for each changed module of a program's
    `modules` (`Result.modules`): its key, or for one read above the entry's folder (key
    `../src/lib.py`) its path under the folder it is imported from (`src/lib.py`). A changed
    package `__init__.py` gets the `EXTEND` line too: its package's unchanged modules
    (`datasets/celeba.py` beside a converted `datasets/__init__.py` that imports it) stay in the
    original folder. A module read through a folder on sys.path that the program imports by its
    package's name too (`Result.also`: `train.py` and `lib/train.py`) is placed at both paths."""
    placed = {module.beside or rel: module for rel, module in modules.items() if module.changed}
    placed |= {also: module for module in list(placed.values()) for also in module.also if also not in placed}
    return {rel: replace(module, output=extended(module.output)) if _package_init(rel) else module
            for rel, module in placed.items()}


def _package_init(rel: str) -> bool:
    path = PurePosixPath(rel)
    return path.name == "__init__.py" and path.parent != PurePosixPath(".")


def original_folders(project: Path, modules: Mapping[str, Result]) -> list[Path]:
    """The folders other than `project` (the entry's) that a program's `modules` (`Result.modules`)
    were imported from, in order. On PYTHONPATH after the output's folder they give the modules
    the conversion left unchanged (a package's, through its `__init__.py`'s line; a folder's), also
    where the program's own `sys.path.insert(0, os.path.dirname(__file__) + "/../lib")` names a
    folder relative to the converted copy."""
    found: list[Path] = []
    for rel, module in modules.items():
        base = _base(project, module.beside or rel, module.read_from)
        if base != project.resolve() and base not in found:
            found.append(base)
    return found


def _base(project: Path, rel: str, read_from: str | None) -> Path:
    """The folder on `sys.path` a module at `rel` beside the entry was imported from."""
    if read_from is None:
        return project.resolve()
    return Path(read_from).resolve().parents[len(PurePosixPath(rel).parts) - 1]


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
        bases.setdefault(_base(project, rel, read_from), []).append(rel)
    found: dict[str, tuple[Path, bytes]] = {}
    for base, rels in bases.items():
        for rel, code in init_files(base, rels).items():
            found.setdefault(rel, (base / rel, code))
    return found


def files_read_beside(project: Path, written: Mapping[str, Result],
                      inits: Mapping[str, tuple[Path, bytes]]) -> dict[str, tuple[Path, bytes]]:
    """`{rel: (its original, content)}`: the files a module written beside the entry (`written`,
    `beside_entry`'s, and the package `inits`, `init_files_where_read`'s) reads through a path
    built from its `__file__` that lie beside its original (advertorch's `advertorch/__init__.py`
    opens `os.path.join(os.path.dirname(__file__), 'VERSION')`: the package's `VERSION`). The
    copy's `__file__` names the output folder, so the file goes there too (`out/advertorch/VERSION`);
    without it the converted program stopped at import. Only the files that the string literals of
    such an expression name, under the module's folder."""
    return {rel: (original, original.read_bytes())
            for rel, original in _named_beside(project, written, inits).items() if original.is_file()}


def folders_built_beside(project: Path, written: Mapping[str, Result],
                         inits: Mapping[str, tuple[Path, bytes]],
                         program: Mapping[str, Result] | None = None) -> dict[str, tuple[Path, int]]:
    """`{rel: (the original folder, how many files it holds)}`: the folders beside a written
    module's original that a path built from its `__file__` names (advertorch_examples'
    `TRAINED_MODEL_PATH = os.path.join(os.path.dirname(__file__), 'trained_models')`, where the
    program saves its model). The copy's `__file__` names the output folder, where the folder did
    not exist: the final save failed. Such a folder is made, empty, in the output, and said with the
    number of files the original holds, which are not copied (a folder of unknown size, most often
    the program's own outputs; a program that reads them there is told to copy or link them).

    A path from `__file__` handed to a function of the `program` (its modules, `Result.modules`,
    changed or not) names what that function builds from its parameter, beside the caller's file:

        save_model(os.path.dirname(os.path.realpath(__file__)), model.state_dict(), "actor")  # main.py
        def save_model(current_path, model, name):                                           # common/tools.py
            torch.save(model, current_path + "/models/" + name + ".pth")
        -> `models/` beside main.py
    """
    outputs = [PurePosixPath(rel) for rel in [*written, *inits]]
    return {rel: (original, sum(1 for f in original.rglob("*") if f.is_file()))
            for rel, original in _named_beside(project, written, inits, program or {}).items()
            if original.is_dir() and not any(out.is_relative_to(rel) for out in outputs)}  # (a written package: there)


def _named_beside(project: Path, written: Mapping[str, Result],
                  inits: Mapping[str, tuple[Path, bytes]], program: Mapping[str, Result] | None = None) -> dict[str, Path]:
    """`{rel in the output: original}`: what the string literals of a path built from a written
    module's `__file__` name beside its original, under the module's folder (not itself a
    written module); with the `program`'s modules, also what a function of theirs builds from a
    parameter such a path is handed to (`_named_through_calls`)."""
    sources = {rel: ((_base(project, rel, m.read_from) / rel), m.source) for rel, m in written.items()}
    sources |= {rel: (original, original.read_bytes()) for rel, (original, _) in inits.items()}
    found: dict[str, Path] = {}
    for rel, (path, code) in sources.items():
        folder = path.resolve().parent
        configs = _hydra_configs(code)
        for name in _named_from_file(code) | _named_through_calls(code, program or {}) | configs:
            name = name.strip("/")  # `here + "/models/"`: the folder `models`
            if not name:
                continue
            original = folder / name
            if not original.exists() or folder not in original.resolve().parents:
                continue
            if name in configs and original.is_dir():  # hydra's config folder: its files, config groups too
                for file in sorted(f for f in original.rglob("*") if f.is_file()):
                    found.setdefault(str(PurePosixPath(rel).parent / file.relative_to(folder).as_posix()), file)
            else:
                found.setdefault(str(PurePosixPath(rel).parent / name), original)
    return {rel: original for rel, original in found.items() if rel not in sources}


@lru_cache(maxsize=16)
def _parsed(code: bytes) -> ast.Module | None:
    """A module's tree, once for the questions asked of it here (None: it does not parse)."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _hydra_configs(code: bytes) -> set[str]:
    """What `@hydra.main(config_path=..., config_name=...)` reads beside the module's file: its
    `config_path`, a folder (with `config_name`.yaml and the config groups in it) or, as hydra < 1.0
    took it, the file itself; `pkg://` and absolute paths are not beside it.

        @hydra.main(config_path="conf", config_name="config")   -> {"conf", "conf/config.yaml"}
        @hydra.main(config_path="simclr_config.yml")             -> {"simclr_config.yml"}
    """
    tree = _parsed(code) if b"hydra" in code else None
    if tree is None:
        return set()
    from ddpify.output.file_paths import bindings_of, hydra_main_arguments, string_value

    found, bindings = set(), bindings_of(tree)
    for given in hydra_main_arguments(tree):  # (a name bound once to a literal: `CONFIG = "conf"`, that literal)
        values = {k: v for k, v in ((k, string_value(e, bindings)) for k, e in given.items()) if v is not None}
        path = values.get("config_path", "")
        if path.startswith("pkg://") or Path(path).is_absolute():
            continue
        if path.strip(". /"):
            found.add(path)
        if "config_name" in values:
            name = values["config_name"]
            found.add(str(PurePosixPath(path or ".") / (name if name.endswith((".yaml", ".yml")) else name + ".yaml")))
    return found


def _named_from_file(code: bytes) -> set[str]:
    """The string literals of each expression that builds a path from `__file__` (also
    `sys.modules[__name__].__file__`), or from a name bound to such a path (`here =
    os.path.dirname(__file__)`, then `os.path.join(here, 'trained_models')`)."""
    tree = _parsed(code) if b"__file__" in code else None  # no such expression: not parsed at all
    if tree is None:
        return set()
    return _literals_built_from(tree, _names_from(tree, {"__file__"}))


def _names_from(scope: ast.AST, names: set[str]) -> set[str]:
    """`names` and the names bound in `scope` to a value built from one of them, to a fixed point."""
    bound = [(node.targets[0].id, node.value) for node in ast.walk(scope) if isinstance(node, ast.Assign)
             and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]
    names = set(names)
    while True:  # each round adds one or ends
        more = {name for name, value in bound if name not in names and any(_from_file(n, names) for n in ast.walk(value))}
        if not more:
            return names
        names |= more


def _literals_built_from(scope: ast.AST, names: set[str]) -> set[str]:
    """The string literals of each outermost expression of `scope` built from one of `names`."""
    parents = {child: node for node in ast.walk(scope) for child in ast.iter_child_nodes(node)}
    tops = set()
    for node in ast.walk(scope):
        if _from_file(node, names):
            while isinstance(parents.get(node), (ast.expr, ast.keyword)):
                node = parents[node]
            tops.add(node)
    return {n.value for top in tops for n in ast.walk(top)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip()}


def _named_through_calls(code: bytes, program: Mapping[str, Result]) -> set[str]:
    """The string literals a function of the `program` builds a path from, where it is handed a
    path from the module's `__file__` (`save_model(os.path.dirname(__file__), ...)`, then
    `current_path + '/models/'` in `save_model`): the literals name places beside the caller's
    file, as its own would. The function: defined in the module itself, or imported by name
    (`from common.tools import save_model`) from a module of the program; its parameter: the
    argument's place or keyword."""
    tree = _parsed(code) if b"__file__" in code and program else None
    if tree is None:
        return set()
    names = _names_from(tree, {"__file__"})
    found: set[str] = set()
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            continue
        given = [(i, None, arg) for i, arg in enumerate(call.args)] + [(None, k.arg, k.value) for k in call.keywords]
        handed = [(i, key) for i, key, arg in given if any(_from_file(n, names) for n in ast.walk(arg))]
        function = _defined(tree, call.func.id, program) if handed else None
        if function is None:
            continue
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        chosen = {name for i, key in handed if (name := params[i] if i is not None and i < len(params) else key)}
        chosen &= {*params, *(a.arg for a in function.args.kwonlyargs)}
        if chosen:
            found |= _literals_built_from(function, _names_from(function, chosen))
    return found


def _defined(tree: ast.Module, name: str, program: Mapping[str, Result]) -> ast.FunctionDef | None:
    """The module-level function `name` of the module `tree`, or the one it imports by that name
    from a module of the `program` (found by its dotted path at the end of the module's path)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            continue
        for alias in node.names:
            if (alias.asname or alias.name) != name:
                continue
            ending = node.module.replace(".", "/") + ".py"
            for rel, module in program.items():
                path = PurePosixPath(module.read_from or rel).as_posix()
                if path != ending and not path.endswith("/" + ending):
                    continue
                other = _parsed(module.source)
                for defined in other.body if other is not None else []:
                    if isinstance(defined, ast.FunctionDef) and defined.name == alias.name:
                        return defined
    return None


def _from_file(node: ast.AST, names: set[str]) -> bool:
    """`__file__`, `module.__file__`, or a name bound to a path built from it."""
    return isinstance(node, ast.Name) and node.id in names or isinstance(node, ast.Attribute) and node.attr == "__file__"


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
