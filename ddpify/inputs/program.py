"""A program, not a file: the entry script and the modules of its project that it imports.

The project is the entry script's folder: what `python train.py` puts first on `sys.path`.
From the entry, every import statement at any depth that names a `.py` file or a package of
that folder is followed, transitively, each file read and parsed once:

    import trainer                      ->  trainer.py
    from utils import build_loaders     ->  utils.py (or utils/__init__.py)
    from models.resnet import ResNet    ->  models/__init__.py, models/resnet.py
    from models import resnet           ->  models/__init__.py, models/resnet.py
    from .layers import Block           ->  models/layers.py (inside models/resnet.py)

A module imported by a name computed at run time is followed too, as any module of its package
may run: a package whose `__init__.py` imports its own modules in a loop
(`__import__(".".join([__name__, py]))` over `os.listdir`, as project templates register their
agents) gives every module of that package; `importlib.import_module(f"models.{args.arch}")`
every module of `models/`, its sub-packages too (`commands/train/__init__.py` of a command found
by walking `commands/`); a literal `importlib.import_module("models.resnet")` that module. A name
computed from nothing written out (`importlib.import_module(module_path)` of a `target:
package.module.Class` string a configuration file gives) may load any module of the project that
the project's YAML files name as a target (`target:`, Hydra's `_target_:`, `class_path:`;
`configured_targets`): `data.synthetic` of `target: "data.synthetic.ClassificationSynthetic"`. A
name computed from a command-line option (`cfg = import_module(args.cfg.replace("/", ".")[:-3])`)
loads the module its value gives: the command line ddpify is told (`ddpify run trainer.py --cfg
cfg1.py`, `ddpify convert trainer.py --args "--cfg cfg1.py"`), else the option's default and
choices, else each module of the program's `configs/` package (`ddpify.inputs.command_line`);
the analysis reads that module's top-level names through the name (`cfg.model`, `cfg.loaders`).
So does `importlib.util.spec_from_file_location("cfg", path)` for the project's file its path
names (written out, or such an option's value), through `module_from_spec(spec)`.

A folder the program puts on `sys.path` (`sys.path.insert(0, "..")`, `sys.path.append("../helper")`,
`os.path.join(os.path.dirname(__file__), "..")`: a literal path, relative to the entry's folder,
where the program runs, or to the file's own) is searched too, after the project's: its modules
are read and converted like the project's, and written beside the converted entry (`-o DIR/`:
`DIR/helper_train.py`; in place: beside the entry), where the program's own folder comes first
on `sys.path` (ddpify.convert moves an insert at 0 to 1 so that it does).

A module neither beside the entry nor in such a folder is looked up above the entry's folder
(`_above`): `scripts/train.py` run from the repository as `PYTHONPATH=. torchrun
scripts/train.py` imports `from src.dist import setup` from the repository's `src/`, and a
src-layout project installed from it `from pkg.train import loop` from `src/pkg/`. Such a module
is named relative to the entry's folder (`../src/dist.py`): `--in-place` converts it where it
lies; `-o DIR/` writes it at its path under the folder it is imported from (`Part.beside`:
`DIR/src/dist.py`), beside the converted entry, as a module of a folder on `sys.path` is. A lone
module file above is taken too when its name is no module of Python's or of the installed packages
(`from utils import *` in `transformer/train.py` of the repository's `utils.py`). So is a module
of a folder of the project on the PYTHONPATH ddpify runs with, as the program is run with it:
`PYTHONPATH=core ddpify convert scripts/train.py` reads `from diffusion import GaussianDiffusion`
from `core/diffusion.py` (`-o DIR/`: `DIR/diffusion.py`).

Nothing else is followed (the standard library, site-packages, a name no file of the project
has), and nothing is imported or executed. A script that lies in the standard library or among
the installed packages (`ddpify convert /usr/lib/python3.11/asyncore.py`) is read alone: that
folder is not the user's project, and its siblings (the whole standard library: 298 files,
194k lines from asyncore.py) are not part of any training path. The analysis then reads one module made of the
files' statements, the entry's first; a helper's `if __name__ == "__main__":` block is left
out, as it does not run on import. So the single-file analyses see through the files: a
loader a helper returns, a trainer class that receives the model (`self.model = model`), the
loop in its method. `Program.part_of` tells which file a node of that module belongs to.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Mapping

import libcst as cst

from ddpify.inputs import command_line
from ddpify.syntax import matchers as mt
from ddpify.syntax.names import Imports, dotted, import_nodes
from ddpify.syntax.parse import INPUT_ERRORS, input_error, parse_module


@dataclass
class Part:
    """One file of the program."""

    rel: PurePosixPath  # relative to the project folder: `models/resnet.py`
    path: Path  # beside the entry's path as given
    data: bytes
    module: cst.Module
    name: str  # as imported: `models.resnet` (the entry: its file's stem)
    via: cst.Call | None = None  # the `sys.path.insert(...)` that put its folder on the path, if that
    importer: bool = False  # a script that imports the entry (`load_checked`): its main block runs
    beside: PurePosixPath | None = None  # read above the entry's folder: its path under the folder it is imported from
    # read through a folder on sys.path (`via`) and imported too as a module of a package of the project
    # (`lib/__init__.py` puts `lib/` on the path and imports `train`; `lib/evaluator.py` imports `lib.train`):
    # its path under that package, where the converted module is written as well (ddpify.output.packages)
    also: list[PurePosixPath] = field(default_factory=list)

    @functools.cached_property
    def calls(self) -> list[cst.Call]:
        """Every call of the file, in source order (`mt.findall(module, cst.Call)`), and below, its
        assignments: found in one walk, which every question the loading asks about the file's code
        imported by name reads (its computed imports, the options of its command line, the calls
        of a helper that imports by its parameter, the program's calls for `_handed_in`). Before,
        each walked the file again: four walks of a script whose `import_module` reads an option
        (`vae_celeba_importlib_config`: a fifth of its conversion, under cProfile)."""
        return self._walked[0]

    @functools.cached_property
    def assigns(self) -> list[cst.Assign]:
        """Every assignment of the file, in source order (`calls`' walk)."""
        return self._walked[1]

    @functools.cached_property
    def _walked(self) -> tuple[list[cst.Call], list[cst.Assign]]:
        calls, assigns = [], []
        for node in mt.walk(self.module):
            if type(node) is cst.Call:
                calls.append(node)
            elif type(node) is cst.Assign:
                assigns.append(node)
        return calls, assigns


@dataclass
class Program:
    root: Path  # the entry's folder
    parts: list[Part]  # the entry first, then in the order they were reached
    merged: cst.Module  # the statements of every part, in that order
    local_names: frozenset[str]  # names that hold a project module (`import trainer` -> `trainer`)
    top: dict[cst.CSTNode, Part]  # each statement of `merged` -> its part
    # the calls importing by a computed name whose modules were read -> those modules' names
    by_name: Mapping[cst.Call, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    unread: tuple[str, ...] = ()  # `ddpify check`: the imported files left out as they do not parse (one line each)

    @functools.cached_property
    def configured(self) -> tuple[str, ...]:
        """The dotted names the project's configuration files give as what to build
        (`configured_targets`): `torch.optim.Adam` of `target: "torch.optim.Adam"` too."""
        return configured_targets(self.root)

    def with_entry(self, data: bytes) -> "Program":
        """The same program with the entry's code replaced by `data` (after `check --fix`)."""
        entry = self.parts[0]
        return _assemble(self.root, [Part(entry.rel, entry.path, data, parse_module(data), entry.name),
                                     *self.parts[1:]], self.local_names, self.by_name, self.unread)

    @functools.cached_property
    def library(self) -> frozenset[cst.CSTNode]:
        """The statements of the modules other than the entry and its importer (another entry point
        may use them). Found once: the imports of every file ask it of each statement."""
        return frozenset(stmt for stmt, part in self.top.items() if part is not self.parts[0] and not part.importer)

    @property
    def lines(self) -> int:
        """The lines of every file read."""
        return sum(part.data.count(b"\n") + (bool(part.data) and not part.data.endswith(b"\n")) for part in self.parts)

    def other_entries(self, part: Part) -> list[str]:
        """The scripts beside the entry (`evaluate.py`: a `__main__` block) that import `part`'s
        module too: another entry point runs that module's code, maybe in one plain process."""
        pattern = re.compile(rf"^\s*(from\s+{re.escape(part.name)}\s+import|import\s+{re.escape(part.name)}\b)", re.M)
        found = []
        for file in sorted(self.root.glob("*.py")):
            if file.name == self.parts[0].rel.name or file.name == part.rel.name or not file.is_file():
                continue  # a FIFO or a device named `x.py` would block the read
            try:
                text = file.read_text(errors="replace")
            except OSError:
                continue
            if "__main__" in text and pattern.search(text):
                found.append(file.name)
        return found

    def unresolved_stars(self) -> list[tuple[cst.ImportFrom, str]]:
        """(statement, module) for each `from X import *` of the code read whose module ddpify did not
        read and that is no module of Python's or of the installed packages: the names it brings
        (torch, a model, an optimizer, a training loop) are unknown, and nothing using them is
        converted or checked. `from utils import *` with no `utils.py` found beside the script, in a
        folder it puts on `sys.path` or above it."""
        read = {part.name for part in self.parts}
        found = []
        for part in self.parts:
            for node, base in _star_imports(part):
                if base not in read and (base == "" or not _elsewhere(base.split(".")[0])) \
                        and not _only_in_main_guard(part, node, self.top):
                    found.append((node, base or "." * len(node.relative)))
        return found

    def part_of(self, node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]) -> Part:
        """The file `node` (a node of `merged`) was read from."""
        while node not in self.top:
            node = parents[node]
        return self.top[node]


def load(entry: Path, data: bytes, follow: bool = True, parsed: dict | None = None,
         module: cst.Module | None = None, lenient: bool = False, argv: tuple[str, ...] | None = None) -> Program:
    """The program `entry` starts (`data`: its bytes, already read; `module`: them parsed, if
    they are); without `follow`, the entry alone. `parsed` (resolved path -> (bytes, module))
    keeps the modules read across the programs of several entries (`ddpify check src/`), so each
    file is parsed once. Raises what `parse_module` raises, with `exc.path` set to the file that
    does not parse, and OSError; `lenient` (`ddpify check`): an imported file that does not parse
    is left out and named in `Program.unread` instead. `argv`: the script's command line, where
    known (`ddpify run`'s), which tells the module a name given on it imports (`ddpify.inputs.command_line`)."""
    root = entry.resolve().parent
    first = Part(PurePosixPath(entry.name), entry, data, module or _parse(entry, data), entry.stem)
    return _read(root, [first] if follow and not _installed(root) else [], [first], {} if parsed is None else parsed,
                 lenient, argv=argv)


class _Lookups:
    """What `_read` asks of the file system and of each module, kept across the programs of one
    `load_checked` (it reads the program of every script that may import the module: ultralytics'
    trainer.py, 21 scripts over the same 239 modules, was minutes of the same `stat` calls and
    walks): each answer is computed once."""

    def __init__(self) -> None:
        self._files: dict[tuple[Path, str], list[tuple[Path, str]]] = {}
        self._imports: dict[tuple, tuple] = {}
        self._resolved: dict[Path, Path] = {}
        self._installed: dict[Path, bool] = {}
        self._reach: dict[Path, int] = {}
        self._git: dict[Path, bool] = {}
        self._present: dict[tuple[Path, str], bool] = {}
        self._on_pythonpath: dict[tuple[Path, str], list[Path]] = {}
        self._names: dict[Path, frozenset[str] | None] = {}

    def absent(self, folder: Path, name: str) -> bool:
        """Does `folder` hold neither `name` nor `name.py`, so that every `stat` of a package, a
        folder or a module of that name there would fail? Answered from the folder's names, listed
        once (`_listing`), not by a `stat` per question: a program asks it of its folders for every
        module it imports (`torch`, `numpy.random`: in none of them), ~40 `stat` calls a program
        before. Compared without case (a file system that ignores it finds `Utils.py` for `utils`,
        which the `stat` then decides); never where the folder cannot be listed (a `stat` may still
        reach inside) or the name is no ASCII identifier (a file system may normalise it)."""
        if folder not in self._names:
            self._names[folder] = _listing(folder)
        names = self._names[folder]
        if names is None or not (name.isascii() and name.isidentifier()):
            return False
        lowered = name.lower()
        return lowered not in names and f"{lowered}.py" not in names

    def installed(self, folder: Path) -> bool:
        """`_installed`: asked of the same folders above the entry for each module it imports."""
        if folder not in self._installed:
            self._installed[folder] = _installed(folder)
        return self._installed[folder]

    def reach(self, root: Path) -> int:
        if root not in self._reach:
            self._reach[root] = _reach(root)
        return self._reach[root]

    def git(self, folder: Path) -> bool:
        """Does `folder` hold `.git` (a repository's root)?"""
        if folder not in self._git:
            self._git[folder] = (folder / ".git").exists()
        return self._git[folder]

    def present(self, folder: Path, top: str) -> bool:
        """Does `folder` hold `top` (a folder or anything so named) or `top.py`? Asked of the same
        folders for each name a program imports that is found nowhere beside the entry."""
        key = (folder, top)
        if key not in self._present:
            self._present[key] = not self.absent(folder, top) and (
                (folder / top).exists() or (folder / f"{top}.py").exists())
        return self._present[key]

    def on_pythonpath(self, root: Path) -> list[Path]:
        """`_on_pythonpath`, once per entry folder and PYTHONPATH (asked for each such name)."""
        key = (root, os.environ.get("PYTHONPATH", ""))
        if key not in self._on_pythonpath:
            self._on_pythonpath[key] = _on_pythonpath(root, self)
        return self._on_pythonpath[key]

    def files(self, base: Path, name: str) -> list[tuple[Path, str]]:
        key = (base, name)
        if key not in self._files:
            self._files[key] = [] if self.absent(base, name.partition(".")[0]) else _files(base, name)
        return self._files[key]

    def imports(self, part: Part, root: Path, argv: tuple[str, ...] | None = None) -> tuple:
        """`part`'s (imports, computed imports, `sys.path` additions) from `root`; `argv`: the
        script's command line, where known."""
        key = (part.module, part.name, part.rel, part.path.name, root, argv)
        if key not in self._imports:
            self._imports[key] = (list(_imported(part)), _computed_imports(part, root, argv),
                                  _path_additions(part, root))
        return self._imports[key]

    def resolved(self, path: Path) -> Path:
        if path not in self._resolved:
            self._resolved[path] = path.resolve()
        return self._resolved[path]


def _located(root: Path, name: str, folders: dict[Path, cst.Call], aboves: dict[str, Path | None],
             lookups: _Lookups) -> tuple[Path, cst.Call | None, list]:
    """Where module `name` is read from: (the folder, the `sys.path` call that added it or None,
    its files), beside the entry, in a folder the program adds, or above the entry."""
    base, via, files = root, None, lookups.files(root, name)
    for folder, call in folders.items():
        if files:
            break
        base, via, files = folder, call, lookups.files(folder, name)
    top = name.split(".")[0]
    if not files and not any(lookups.present(f, top) for f in (root, *folders)):
        # not beside the entry at all: the entry's own package, or maybe above it
        above = _own_package(root, top) or _above(root, top, aboves, lookups)
        if above is None:  # or in a folder of the project's on PYTHONPATH (`PYTHONPATH=core`)
            above = next((f for f in lookups.on_pythonpath(root) if not lookups.absent(f, top)
                          and ((f / top).is_dir() or (f / f"{top}.py").is_file())), None)
        if above is not None:
            base, via, files = above, None, lookups.files(above, name)
    return base, via, files


def _own_package(root: Path, top: str) -> Path | None:
    """The folder the package `top` is imported from where the entry's own folder lies in it: a
    folder of that name with its `__init__.py` (a package, not a plain folder) holds the entry's
    folder, and the folder above it is where `import top` finds it, however deep the entry lies (a
    library's `rltorch/algs/q_learning/DDQN/run.py`, installed with its `setup.py` or run with
    `PYTHONPATH=.`, does `from rltorch.algs.q_learning.DDQN.agent import DDQNAgent`; four folders up,
    past `ABOVE`, with no mark of the project's root copied beside it), the folders between it and the
    entry's with an `__init__.py` or without (`rltorch/algs/policy_gradients/` has none: a namespace
    package inside a regular one, imported all the same). Not past the repository's top (`.git`).

        before: rltorch/algs/q_learning/DDQN/run.py read alone ("no training loop found"): the agent's
                Q network never wrapped, every process writing the logger's files and saving
        after:  the agents, the replay and the logger read from the package: the network wrapped
    """
    folder = root
    while folder.name.isidentifier() and folder.parent != folder:
        if folder.name == top and (folder / "__init__.py").is_file():
            return folder.parent
        if (folder / ".git").exists():  # not past the repository's top
            break
        folder = folder.parent
    return None


def _on_pythonpath(root: Path, lookups: _Lookups) -> list[Path]:
    """The folders of the PYTHONPATH ddpify runs with (relative ones from the working folder), as
    the program is run with it (`PYTHONPATH=core python scripts/train.py`, the modules imported flat
    from the repository's `core/`), that lie in the entry's project: under the folder above the
    entry's and the folder `_above` reaches, never the standard library's or the installed
    packages' (a tool's own checkout on PYTHONPATH, `PYTHONPATH=~/ddpify ddpify check ../proj`, is
    not the project's)."""
    top = root
    for folder in list(root.parents)[:lookups.reach(root)] if not lookups.git(root) else ():
        top = folder
        if lookups.git(folder):
            break
    folders = [Path(f).resolve() for f in os.environ.get("PYTHONPATH", "").split(os.pathsep) if f]
    return [f for f in dict.fromkeys(folders) if f != root and f.is_relative_to(top) and f.is_relative_to(root.parent)
            and f.is_dir() and not lookups.installed(f)]


def _read(root: Path, queue: list[Part], parts: list[Part], parsed: dict, lenient: bool = False,
          lookups: _Lookups | None = None, argv: tuple[str, ...] | None = None) -> Program:
    """Follow the imports of the parts of `queue` from `root`, adding each project file they
    reach to `parts` (once), and assemble the program; `lenient`: as for `load`; `lookups`:
    answers kept from the programs read before."""
    lookups = _Lookups() if lookups is None else lookups
    entry = parts[0].path
    seen = {lookups.resolved(p.path) for p in parts}
    local: set[str] = set()
    by_name: dict[cst.Call, tuple[str, ...]] = {}
    folders: dict[Path, cst.Call] = {}  # what `sys.path.insert(...)` calls add, in order
    unread: list[str] = []
    aboves: dict[str, Path | None] = {}
    handed: dict[str, list[tuple[cst.Call, list[str]]]] = {}  # module names other files' callers give (`_handed_in`)
    tried: set[cst.Call] = set()
    while queue or _handed_in(parts, by_name, tried, handed, queue):
        part = queue.pop(0)
        imported, computed, additions = lookups.imports(part, root, argv)
        computed = [*computed, *handed.pop(part.name, [])]
        by_name.update((call, read) for call, names in computed
                       if (read := tuple(n for n in names if lookups.files(root, n))))
        for folder, call in additions:
            folders.setdefault(folder, call)
        pending = [*imported, *((None, n) for _, names in computed for n in names)]
        while pending:  # again for the names not found, after an imported module added folders
            grown, missed = len(folders), []
            for bound, name in pending:
                base, via, files = _located(root, name, folders, aboves, lookups)
                if not files:
                    missed.append((bound, name))
                if files and files[-1][1] == name and bound:
                    local.add(bound)  # a module, not a name defined in one
                for file, module_name in files:
                    real = lookups.resolved(file)
                    if real in seen and via is None and base == root:
                        _also_as_package_module(parts, lookups, real, PurePosixPath(file.relative_to(base).as_posix()))
                    if real in seen or not real.is_relative_to(base):
                        continue  # read already, or a link out of the project: not followed
                    seen.add(real)
                    # relative to the entry's folder where read above it (`../src/utils.py`: converted in place)
                    rel = PurePosixPath((file.relative_to(base) if via is not None or base == root else
                                         Path(os.path.relpath(file, root))).as_posix())
                    shown = _shown(entry, file)
                    if real not in parsed:
                        raw = file.read_bytes()
                        try:
                            parsed[real] = raw, _parse(shown, raw)
                        except INPUT_ERRORS as exc:
                            if not lenient:
                                raise
                            unread.append(input_error(str(shown), raw, exc))
                            continue
                    # read above (`../src/utils.py`), or in the entry's folder through the package it
                    # belongs to (`advertorch_examples.utils` from `advertorch_examples/train.py`): its
                    # path under the folder it is imported from, where -o writes it
                    beside = PurePosixPath(file.relative_to(base).as_posix()) \
                        if rel.parts[0] == ".." or via is None and base != root else None
                    new = Part(rel, shown, *parsed[real], module_name, via, beside=beside)
                    parts.append(new)
                    queue.append(new)
                    for folder, call in lookups.imports(new, root, argv)[2]:  # run on import: `import _init_paths`
                        folders.setdefault(folder, call)  # puts `lib/` on the path for the other imports
            pending = missed if len(folders) > grown else []
    return _assemble(root, parts, frozenset(local), MappingProxyType(by_name), tuple(unread))


def _also_as_package_module(parts: list[Part], lookups: _Lookups, real: Path, rel: PurePosixPath) -> None:
    """A file read already through a folder the program puts on `sys.path` (`Part.via`: `train` of
    `lib/train.py`, written beside the converted entry as `train.py`), imported again by its package's
    name from the project's folder (`lib.train`): that path is kept (`Part.also`), so that the converted
    module is the one either name imports. Sweep 30a's large-batch GAN: `lib/__init__.py` runs
    `sys.path.insert(0, "lib")` and `import train`, `lib/evaluator.py` `from lib.train import ...`; the
    package's `lib.train`, found in the original folder, replaced the converted `train` as the package's
    attribute, and `lib.train.BaseGANTrainer` trained unwrapped models."""
    for part in parts:
        if part.via is not None and part.rel != rel and rel not in part.also and lookups.resolved(part.path) == real:
            part.also.append(rel)


ABOVE = 2  # how many folders above the entry's an import is looked up in (`scripts/train.py`: the repository's)
# what marks a project's root folder, and how far above the entry's it is looked for (`_above`)
PROJECT_MARKERS = (".git", "setup.py", "setup.cfg", "pyproject.toml")
PROJECT_DEPTH = 6


def _above(root: Path, top: str, cache: dict[str, Path | None], lookups: _Lookups) -> Path | None:
    """The folder above `root` (the entry's, where `top` is neither a module nor a folder) that
    holds the package `top`, the nearest first, or its `src/` (a src layout): what `PYTHONPATH=. torchrun scripts/train.py` run from the
    repository, or the project installed from it, imports `top` from (`from src.data import
    loader` in `scripts/train.py`, `from pkg.train import trainer` with `src/pkg/`). Up to
    `ABOVE` folders, or up to the project's root where a folder above holds its marks (`.git`,
    `setup.py`, `pyproject.toml`: `recipes/LibriSpeech/ASR/seq2seq/train.py` of a project installed
    from its root imports `speechbrain` from there), not past the one holding `.git`, never into
    the standard library or the installed packages. A package (a folder), or a lone module file
    (`top.py`) where `top` names no module of the standard library or the installed packages
    (`_elsewhere`): `transformer/train.py` of a repository of several models run from its root
    with `PYTHONPATH=.` does `from utils import *` of the root's `utils.py`, which the import
    would not find anywhere else (left unread, every process trained alone, silently); a `json.py`
    above is never taken for `import json`. The answers about folders alone (`lookups`) are found
    once per program, not per module it imports."""
    if top not in cache:
        cache[top] = None
        lone = not _elsewhere(top)
        for folder in list(root.parents)[:lookups.reach(root)] if not lookups.git(root) else ():
            if lookups.installed(folder):
                break
            found = next((base for base in (folder, folder / "src") if not lookups.absent(base, top)
                          and ((base / top).is_dir() or lone and (base / f"{top}.py").is_file())), None)
            if found is not None:
                cache[top] = found
                break
            if lookups.git(folder):
                break
    return cache[top]


def _listing(folder: Path) -> frozenset[str] | None:
    """The names in `folder`, lowercased: none where it is no folder (nothing is reached through
    it), None where it cannot be listed."""
    try:
        return frozenset(name.lower() for name in os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    except (OSError, ValueError):
        return None


def _elsewhere(top: str) -> bool:
    """Does the top-level module name `top` name a module of the standard library, a built-in one,
    or one of the installed packages (a folder or a file of that name in site-packages)?"""
    return top in sys.stdlib_module_names or top in sys.builtin_module_names or top in _installed_names()


@functools.cache
def _installed_names() -> frozenset[str]:
    """The top-level names of the installed packages' folders and files (`torch`, `six` of `six.py`,
    `_cffi_backend` of its `.so`), listed once per process."""
    names = set()
    for library in _libraries():
        try:
            names.update(entry.name.split(".")[0] for entry in os.scandir(library))
        except OSError:
            continue
    return frozenset(names)


def _reach(root: Path) -> int:
    """How many folders above `root` an import is looked up in: `ABOVE`, or as many as reach the
    nearest folder above that marks a project's root (`PROJECT_MARKERS`, within `PROJECT_DEPTH`)."""
    for depth, folder in enumerate(list(root.parents)[:PROJECT_DEPTH], start=1):
        if any((folder / mark).exists() for mark in PROJECT_MARKERS):
            return max(ABOVE, depth)
    return ABOVE


def _shown(entry: Path, file: Path) -> Path:
    """A file's path as the user named the entry: `proj/trainer.py`, `proj/../helper_train.py`."""
    return entry.parent / os.path.relpath(file, entry.resolve().parent)


def load_checked(entry: Path, data: bytes, parsed: dict | None = None, scans: dict | None = None) -> Program:
    """The program `ddpify check` reads `entry` in. A script (a file with an `if __name__ ==
    "__main__":` block that runs some of its code, not a stub: `_stub_main`) is read with the
    modules it imports, as `load` reads it. A module is
    read from the folder its top package lies in (`src/trainer/trainer.py`, with
    `src/__init__.py` and `src/trainer/__init__.py`, from the folder of `src`, as
    `src.trainer.trainer`: its absolute imports resolve there), and, where a script of that
    folder imports it, in that script's program: the facts the script establishes (a rank it
    hands to a class of the module, a DistributedSampler that a helper of a third module builds,
    the loader it passes) are facts of the module's code too. Of the files under that folder that
    import the module's top package by name, have a main block or lie outside every package,
    and whose program reaches the module, those whose program names a class or function the
    module defines come first (`_uses`: F5-TTS's train.py, which builds the module's `Trainer`,
    not a TensorRT benchmark that says torch.distributed and reaches trainer.py only through the
    package's `__init__.py`); of them (else of all), the script is the first that starts the
    processes or their group (`STARTS`: `init_process_group`, `mp.spawn`;
    predict_from_raw_data.py, which only imports DistributedDataParallel, is not the run of
    nnU-Net's trainer, run_training.py is), else the first that names torch.distributed
    (`DISTRIBUTED`), else the first that starts a group of one process (an example whose every
    `init_process_group` says `world_size=1`: not the run the module's several processes share),
    else the first that calls a method of the module's classes (`_runs_methods`: predict.py's
    `predictor.predict_dataset(...)`, not a sweep script that builds the predictor and leaves that
    call commented out), else the first one of those naming a definition whose program names
    torch.distributed in a module other than the checked one (diffwave-sashimi's train.py, whose
    `distributed_util.py` starts the group, not generate.py, which reads none: decision 0241), else
    the first, by depth then name. The
    module stays the program's first part: only its findings are reported. `scans` (folder ->
    the candidate scripts) keeps the scans across the files of one run."""
    parsed = {} if parsed is None else parsed
    module = _parse(entry, data)
    if any(mt.is_main_guard(stmt) for stmt in module.body) and not _stub_main(module) \
            or _installed(entry.resolve().parent):
        return load(entry, data, parsed=parsed, module=module, lenient=True)
    for root, name in _roots(entry.resolve()):
        found = _importer(entry, data, module, root, name, parsed, scans)
        if found is not None:
            break
    first, chosen, lookups = found if found is not None else _importer(entry, data, module, *_package_root(
        entry.resolve()), parsed, scans, look=False)
    return _read(root if found is not None else _package_root(entry.resolve())[0], [first, *([chosen] if chosen else [])],
                 [first, *([chosen] if chosen else [])], parsed, lenient=True, lookups=lookups)


# top-level statements that define and run nothing of a module: imports, definitions, names bound
_DEFINING = (cst.Import, cst.ImportFrom, cst.Assign, cst.AnnAssign, cst.Expr, cst.Pass)


def _stub_main(module: cst.Module) -> bool:
    """Is the module's main block a stub that runs none of its code: no name of the block is a class
    or function the module defines, and the module's other top-level statements only import,
    define and bind names (no loop, no call of its own at the top)? Such a file is a module with a
    line to try it (`if __name__ == "__main__": print("Ok")` below a `Trainer` class that the
    project's train script builds after joining the process group), read in its importer's program
    as a module without a main block is.

        class Trainer: ...                      # DDP(model) in __init__
        if __name__ == "__main__":
            print("Ok")                         # a stub: read with train.py, which builds Trainer
        if __name__ == "__main__":
            Trainer(Net()).train()              # not a stub: the file runs as a program itself
    """
    defined = {stmt.name.value for stmt in module.body if isinstance(stmt, (cst.ClassDef, cst.FunctionDef))}
    for stmt in module.body:
        if mt.is_main_guard(stmt):
            if any(n.value in defined for n in mt.findall(stmt, cst.Name)):
                return False
        elif isinstance(stmt, cst.SimpleStatementLine):
            if not all(isinstance(s, _DEFINING) and not (isinstance(s, cst.Expr) and not isinstance(s.value, (
                    cst.SimpleString, cst.ConcatenatedString))) for s in stmt.body):
                return False
        elif not isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            return False
    return bool(defined)


def _roots(file: Path) -> list[tuple[Path, str]]:
    """Where `file` may be imported from, nearest first: its package root (`_package_root`), then
    one folder up from a top folder that has no `__init__.py` (a namespace package:
    `wespeaker/utils/checkpoint.py` imported as `wespeaker.utils.checkpoint`; a module of a plain
    folder too, imported by the scripts beside that folder), not above the repository's top
    (`.git`); then the packages' own folders, the top first (a clone with an `__init__.py` at its
    top whose scripts run from there: `SWAP_with_DDP/classification.py` doing `from defaults
    import *` for `defaults/trainer.py`).

        # helpers/trainer.py (checked), no helpers/__init__.py: `self.discriminator.channels`
        # helpers/ddp_training.py: class DDPTrainer(trainer.Trainer), self.discriminator = DDP(...)
        # gan_training_main.py: from helpers.ddp_training import run; mp.spawn(run, ...)
        before: helpers/ looked in alone: no importer, checked alone, "not distributed"
        after:  the repository's top too, as `helpers.trainer`: checked in gan_training_main.py's
                program (DDP008 at the base class's read)
    """
    root, name = _package_root(file)
    found = [(root, name)]
    if not (root / ".git").exists() and root.parent != root and root.name.isidentifier():
        found.append((root.parent, f"{root.name}.{name}"))
    parts = name.split(".")
    found += [(root.joinpath(*parts[:i]), ".".join(parts[i:])) for i in range(1, len(parts) - 1)]
    return found


def _importer(entry: Path, data: bytes, module: cst.Module, root: Path, name: str, parsed: dict,
              scans: dict | None, look: bool = True):
    """(the module's part, the script its program is read with or None, the lookups) for `entry`
    imported from `root` as `name`; None where `look` and no script there reaches it."""
    first = Part(PurePosixPath(entry.resolve().relative_to(root).as_posix()), entry, data, module, name)
    defined = {stmt.name.value for stmt in module.body if isinstance(stmt, (cst.ClassDef, cst.FunctionDef))}
    methods = {f.name.value for stmt in module.body if isinstance(stmt, cst.ClassDef) for f in stmt.body.body
               if isinstance(f, cst.FunctionDef) and not f.name.value.startswith("__")}
    # of the importers that name a definition of the module, and of the others: [the first, the one
    # that starts the job or else says it runs distributed, one that starts a run of one process]
    picks = {True: [None, None, None], False: [None, None, None]}
    running = None  # the first importer naming a definition that also calls a method of the module's classes
    reads_group = None  # the first importer naming a definition whose program names torch.distributed elsewhere
    lookups = _Lookups()
    # once a script that starts the job is found, only a script whose own text names a definition
    # may still come first: the others are not read (a large project has hundreds of scripts)
    words = re.compile(rb"\b(?:" + b"|".join(re.escape(d.encode()) for d in sorted(defined)) + rb")\b") \
        if defined else None
    for script in (_scripts(root, name.split(".")[0], {} if scans is None else scans) if look else []):
        if script == entry.resolve():
            continue
        try:
            if picks[False][1] is not None and STARTS.search(_uncommented(picks[False][1].data)) and (
                    words is None or not words.search(script.read_bytes())):
                continue
            importer = _script_part(entry, script, root, parsed)
            reached = _read(root, [importer], [importer], parsed, lenient=True, lookups=lookups)
        except (*INPUT_ERRORS, OSError):
            continue  # an importer that does not parse is not read: the module is checked without it
        if any(lookups.resolved(p.path) == entry.resolve() for p in reached.parts):
            pick = picks[_uses(reached, entry.resolve(), lookups, defined)]
            pick[0] = pick[0] or importer
            if pick is picks[True] and running is None and _runs_methods(importer.module, methods):
                running = importer
            code = _uncommented(importer.data)  # a start commented out starts nothing
            if STARTS.search(code) and _one_process(importer.module):
                pick[2] = pick[2] or importer  # a run of one process
            elif STARTS.search(code):
                pick[0] = pick[1] = importer  # the script that starts the distributed job
                if pick is picks[True]:
                    break
            elif pick[1] is None and DISTRIBUTED.search(code):
                pick[1] = importer  # one that says it runs distributed
            elif pick is picks[True] and reads_group is None and any(
                    DISTRIBUTED.search(_uncommented(part.data)) for part in reached.parts
                    if part is not importer and lookups.resolved(part.path) != entry.resolve()):
                reads_group = importer  # one a module of whose program says it
    earliest, named, alone = picks[True] if picks[True][0] is not None else picks[False]
    chosen = named or alone or running or reads_group or earliest
    return (first, chosen, lookups) if chosen is not None or not look else None


def _uses(reached: "Program", entry: Path, lookups: "_Lookups", defined: set[str]) -> bool:
    """Does the program of an importer name a class or function the module defines at its top
    level, outside import statements (`Trainer(...)` in train.py, not `from .trainer import
    Trainer` in the package's `__init__.py`)? A script that only reaches the module through its
    package's imports runs none of its code."""
    for part in reached.parts:
        if lookups.resolved(part.path) == entry:
            continue
        imported = {id(n) for imp in import_nodes(part.module) for n in mt.findall(imp, cst.Name)}
        if any(n.value in defined and id(n) not in imported for n in mt.findall(part.module, cst.Name)):
            return True
    return False


def _runs_methods(script: cst.Module, methods: set[str]) -> bool:
    """Does the importer's own text call a method that a class of the module defines
    (`predictor.predict_dataset(...)`, by its attribute name)?"""
    return any(isinstance(call.func, cst.Attribute) and call.func.attr.value in methods
               for call in mt.findall(script, cst.Call))


# a script that says it runs distributed (of the importers of a module, the one whose facts `check` reads)
DISTRIBUTED = re.compile(rb"torch\.distributed|DistributedDataParallel|init_process_group")
# a script that starts the processes of a job or their group
STARTS = re.compile(rb"init_process_group|\bspawn\(|start_processes\(")


def _uncommented(data: bytes) -> bytes:
    """A script's text without its comment lines: what `STARTS` and `DISTRIBUTED` are looked for
    in. A job start commented out (`# dist.init_process_group(backend='nccl')` in a Ray Tune
    script that builds the module's Trainer in one process) does not make its script the run the
    module is checked in, before the script that starts the group (`train_dist.py`, after
    `RayTune.py` by name)."""
    return re.sub(rb"(?m)^[ \t]*#.*$", b"", data)


def _one_process(module: cst.Module) -> bool:
    """Does every `init_process_group` of the script start a group of one process (`world_size=1`)?"""
    inits = [c for c in mt.findall(module, cst.Call) if (dotted(c.func) or "").split(".")[-1] == "init_process_group"]
    sizes = [mt.keyword(c, "world_size") for c in inits]
    return bool(inits) and all(s is not None and isinstance(s.value, cst.Integer) and s.value.value == "1" for s in sizes)


def _script_part(entry: Path, file: Path, root: Path, parsed: dict) -> Part:
    """`file` (a script under `root`, resolved) as the importer part of the program `entry` is checked in."""
    shown = _shown(entry, file)
    if file not in parsed:
        raw = file.read_bytes()
        parsed[file] = raw, _parse(shown, raw)
    return Part(PurePosixPath(file.relative_to(root).as_posix()), shown, *parsed[file], file.stem, importer=True)


def _package_root(file: Path) -> tuple[Path, str]:
    """The folder on `sys.path` from which `file` is imported, and its dotted name there: above
    the top package whose `__init__.py` files lead to it (`src/trainer/trainer.py` -> the folder
    of `src`, `src.trainer.trainer`), else its own folder. A folder whose name is no identifier is
    no package, whatever it holds (a clone `SWAP-with-DDP/` with an `__init__.py` at its top)."""
    folder, names = file.parent, [file.stem]
    while (folder / "__init__.py").is_file() and folder.parent != folder and folder.name.isidentifier():
        names.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(names)


SKIPPED_FOLDERS = frozenset({"__pycache__", "site-packages", "node_modules", "build", "dist"})


def _scripts(root: Path, top: str, scans: dict) -> list[Path]:
    """The files under `root` that may import the module `top` as a script does: `import top`,
    `from top[.x] import ...` at the start of a line, with a main block or outside every package
    (a project's top folder is in none, whatever it holds: its files run as scripts from there);
    by depth, then name (resolved paths).

        # main_ddp.py at a top with __init__.py and .git: init_process_group(rank=LOCAL_RANK,
        #   world_size=torch.cuda.device_count()), then `import model.trainer as trainer`
        before: not a script (a file of a package, no main block): model/trainer.py checked
                alone, its `device_ids=[dist.get_rank()]` reported (DDP001)
        after:  model/trainer.py checked in main_ddp.py's program: one machine's group, no finding
    """
    key = (root, top)
    if key not in scans:
        pattern = re.compile(rb"^[ \t]*(?:from[ \t]+" + re.escape(top.encode()) + rb"[ \t.]|import[ \t]+"
                             + re.escape(top.encode()) + rb"\b)", re.M)
        found = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
            # a project's top folder (`PROJECT_MARKERS`: a checkout, a setup file) is where its
            # scripts run from, `__init__.py` or not: a file there that imports the module is a
            # script whether or not it has a main block (main_ddp.py beside model/, at a top that
            # holds an `__init__.py`)
            package = "__init__.py" in names and not any(Path(folder, mark).exists() for mark in PROJECT_MARKERS)
            for name in names:
                if not name.endswith(".py") or name == "__init__.py":
                    continue
                path = Path(folder, name)
                try:
                    text = path.read_bytes() if path.is_file() else b""
                except OSError:
                    continue
                if pattern.search(text) and (not package or b"__main__" in text):
                    found.append(path.resolve())
        scans[key] = sorted(found, key=lambda p: (len(p.relative_to(root.resolve()).parts), str(p)))
    return scans[key]


PATH_CALLS = {"sys.path.insert": 1, "sys.path.append": 0}  # the position of the folder argument


def _path_additions(part: Part, root: Path) -> list[tuple[Path, cst.Call]]:
    """The folders outside the project that `part` puts on `sys.path`, with the call that does:
    also through a module-level name bound once (`lib_path = osp.join(this_dir, '..', 'lib')`) and
    through a helper of the module whose parameter is the folder, by what its calls there pass
    (`def add_path(path): sys.path.insert(0, path)`, then `add_path(lib_path)`: the `_init_paths.py`
    of many research projects)."""
    if b"sys.path" not in part.data:
        return []
    names = _PathNames(part.module)
    found = []
    for call, scope in names.path_calls():
        arg = mt.positional(call, PATH_CALLS[names.qualify(call.func)])
        for expr in names.passed(arg.value, scope) if arg is not None else ():
            folder = _folder(expr, root, root / part.rel.parent, names)
            if folder is not None and not folder.is_dir():
                folder = _run_from_above(names.value(expr), root) or folder
            if folder is not None and folder.is_dir() and folder != root and not _installed(folder):
                found.append((folder, call))
    return found


def _run_from_above(expr: cst.BaseExpression, root: Path) -> Path | None:
    """The folder a relative literal path (`sys.path.append("pytorch_early_stopping")`) names where
    it is no folder beside the entry: the program is run from a folder above the entry's (`python
    examples/mnist.py` from the repository, the twenty-third sweep's early-stopping example), so the
    path is taken from the nearest such folder that holds it, up to the folders `_above` looks in
    (the project's root, never past the one holding `.git`)."""
    if not (isinstance(expr, cst.SimpleString) and isinstance(expr.evaluated_value, str)) \
            or not expr.evaluated_value or os.path.isabs(expr.evaluated_value) or (root / ".git").exists():
        return None
    for folder in list(root.parents)[:_reach(root)]:
        if _installed(folder):
            return None
        if (folder / expr.evaluated_value).is_dir():
            return (folder / expr.evaluated_value).resolve()
        if (folder / ".git").exists():
            return None
    return None


def folder_inserts(part: Part, root: Path) -> list[tuple[Path, cst.Call]]:
    """The `sys.path.insert(...)` calls of `part` with the folder each puts on `sys.path`, where a
    literal path names it (`sys.path.insert(0, '.')` run from the project's folder: `root`)."""
    if b"sys.path" not in part.data:
        return []
    names, found = _PathNames(part.module), []
    for call, scope in names.path_calls():
        arg = mt.positional(call, PATH_CALLS[names.qualify(call.func)])
        if names.qualify(call.func) != "sys.path.insert" or arg is None:
            continue
        for expr in names.passed(arg.value, scope):
            folder = _folder(expr, root, root / part.rel.parent, names)
            if folder is not None:
                found.append((folder, call))
    return found


class _PathNames:
    """What a module's names hold, for the folders it puts on `sys.path`: its imports (`osp.join`
    is `os.path.join`), its module-level names bound once, its top-level functions' parameters."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.imports = Imports(module)
        assigned: dict[str, list[cst.BaseExpression]] = {}
        for stmt in module.body:
            line = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if isinstance(line, cst.Assign) and len(line.targets) == 1 and isinstance(line.targets[0].target, cst.Name):
                assigned.setdefault(line.targets[0].target.value, []).append(line.value)
        self.bound = {name: values[0] for name, values in assigned.items() if len(values) == 1}

    def qualify(self, func: cst.BaseExpression) -> str | None:
        return self.imports.qualify(func) or dotted(func)

    def path_calls(self) -> list[tuple[cst.Call, cst.FunctionDef | None]]:
        """The `sys.path.insert`/`append` calls, each with the top-level function it is in (None:
        the module's own code), in source order: one walk of each top-level statement (the calls
        of a module are those of its statements; each call's name is looked up once)."""
        return [(c, stmt if isinstance(stmt, cst.FunctionDef) else None) for stmt in self.module.body
                for c in mt.findall(stmt, cst.Call, lambda c: self.qualify(c.func) in PATH_CALLS)]

    def passed(self, expr: cst.BaseExpression, scope: cst.FunctionDef | None) -> list[cst.BaseExpression]:
        """`expr`, or for a parameter of `scope` what the module's calls of it pass."""
        params = [p.name.value for p in scope.params.params] if scope is not None else []
        if not isinstance(expr, cst.Name) or expr.value not in params:
            return [expr]
        sites = mt.findall(self.module, cst.Call, lambda c: mt.is_name(c.func, scope.name.value))
        place = params.index(expr.value)
        args = [mt.keyword(c, expr.value) or mt.positional(c, place) for c in sites]
        return [a.value for a in args if a is not None]

    def value(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """What a module-level name bound once holds (`this_dir = osp.dirname(__file__)`)."""
        seen = 0
        while isinstance(expr, cst.Name) and expr.value in self.bound and seen < 8:
            expr, seen = self.bound[expr.value], seen + 1
        return expr


def _folder(expr: cst.BaseExpression, root: Path, here: Path, names: _PathNames | None = None) -> Path | None:
    """The folder a literal path expression names: `".."` (from the entry's folder, where the program
    runs), `os.path.join(os.path.dirname(__file__), "..")` (from the file's own), `os.path.abspath(...)`;
    a parent computed from the file's own (`os.path.dirname(os.path.dirname(os.path.abspath(__file__)))`,
    `Path(__file__).resolve().parent.parent`, `Path(__file__).parents[1] / "lib"`, `str(...)` of one) or the
    folder where the program runs (`os.getcwd()`, `Path.cwd()`); through the module's names (`names`)
    where given."""
    if names is not None:
        expr = names.value(expr)
    if isinstance(expr, cst.SimpleString) and isinstance(expr.evaluated_value, str):
        return (root / expr.evaluated_value).resolve()
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide) and isinstance(
            expr.right, cst.SimpleString) and isinstance(expr.right.evaluated_value, str):  # `ROOT / "lib"`
        left = _folder(expr.left, root, here, names)
        return None if left is None else (left / expr.right.evaluated_value).resolve()
    if isinstance(expr, (cst.Attribute, cst.Subscript)) or isinstance(expr, cst.Call) and isinstance(
            expr.func, cst.Attribute) and expr.func.attr.value in ("resolve", "absolute") and not expr.args:
        return _pathlib_folder(expr, root, here, names)
    if not isinstance(expr, cst.Call):
        return None
    func, args = names.qualify(expr.func) if names is not None else dotted(expr.func), [a.value for a in expr.args]
    args = [names.value(a) for a in args] if names is not None else args
    if func in ("os.getcwd", "pathlib.Path.cwd") and not args:
        return root.resolve()
    if func in ("os.path.abspath", "os.path.realpath", "os.path.normpath", "str", "pathlib.Path") and len(args) == 1:
        return _folder(args[0], root, here, names)
    if func == "os.path.dirname" and len(args) == 1 and (
            mt.is_name(args[0], "__file__") or _folder_of_file(args[0], names)):
        return here.resolve()
    if func == "os.path.dirname" and len(args) == 1 and (inner := _folder(args[0], root, here, names)) is not None:
        return inner.parent
    if func == "os.path.join" and args:
        first = _folder(args[0], root, here, names)
        rest = [a.evaluated_value for a in args[1:] if isinstance(a, cst.SimpleString)]
        if first is None or len(rest) != len(args) - 1 or not all(isinstance(r, str) for r in rest):
            return None
        return first.joinpath(*rest).resolve()
    return None


def _pathlib_folder(expr: cst.BaseExpression, root: Path, here: Path, names: _PathNames | None) -> Path | None:
    """The folder of a pathlib expression over the file's own path: `Path(__file__)` is the file,
    `.parent` its folder, `.parents[1]` the one above, `.resolve()` and `.absolute()` the same."""
    ups = 0
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args \
                and expr.func.attr.value in ("resolve", "absolute"):
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value == "parent":
            expr, ups = expr.value, ups + 1
        elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(
                index := expr.slice[0].slice, cst.Index) and isinstance(index.value, cst.Integer) \
                and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "parents":
            expr, ups = expr.value.value, ups + 1 + int(index.value.value)
        else:
            break
    func = (names.qualify(expr.func) if names is not None else dotted(expr.func)) if isinstance(expr, cst.Call) else None
    if func not in ("pathlib.Path", "Path") or len(expr.args) != 1 or not mt.is_name(expr.args[0].value, "__file__") \
            or ups == 0:
        return None
    folder = here.resolve()  # the file's own folder: `Path(__file__).parent`
    for _ in range(ups - 1):
        folder = folder.parent
    return folder


def _folder_of_file(expr: cst.BaseExpression, names: _PathNames | None = None) -> bool:
    """`os.path.abspath(__file__)`, `os.path.realpath(__file__)`."""
    func = (names.qualify(expr.func) if names is not None else dotted(expr.func)) if isinstance(expr, cst.Call) else None
    return func in ("os.path.abspath", "os.path.realpath") and len(expr.args) == 1 \
        and mt.is_name(expr.args[0].value, "__file__")


def _installed(folder: Path) -> bool:
    """Is `folder` in the standard library or among the installed packages? Those lie under
    Python's prefixes in every installation scheme: a folder outside them is answered without
    computing sysconfig's paths (a few ms, each `ddpify convert` of a project's script)."""
    parents = folder.parents
    if not any(folder == p or p in parents for p in _prefixes()):
        return False
    return any(folder == library or library in parents for library in _libraries())


@functools.cache
def _prefixes() -> frozenset[Path]:
    """Python's prefixes, as written and with their links resolved: the interpreter's, found once
    per process."""
    written = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return frozenset(written | {p.resolve() for p in written})


@functools.cache
def _libraries() -> tuple[Path, ...]:
    """The standard library's and the installed packages' folders (sysconfig's paths, resolved):
    the interpreter's, found once per process (`ddpify convert DIR` asks for each file under it)."""
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(Path(paths[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib"))


def _assemble(root: Path, parts: list[Part], local: frozenset[str], by_name: Mapping[cst.Call, tuple[str, ...]],
              unread: tuple[str, ...] = ()) -> Program:
    top = {stmt: part for part in parts for stmt in part.module.body
           if part is parts[0] or part.importer or not mt.is_main_guard(stmt)}
    return Program(root, parts, parts[0].module.with_changes(body=list(top)), local, top, by_name, unread)


def _parse(path: Path, data: bytes) -> cst.Module:
    try:
        return parse_module(data)
    except INPUT_ERRORS as exc:
        exc.path = path
        raise


def _star_imports(part: Part) -> list[tuple[cst.ImportFrom, str]]:
    """(statement, the dotted module it names, relative ones made absolute; "" for one beyond the top
    package) for each `from X import *` of `part`."""
    if b"*" not in part.data:
        return []
    package = part.name.rpartition(".")[0] if part.path.name != "__init__.py" else part.name
    found = []
    for node in import_nodes(part.module):
        if not isinstance(node, cst.ImportFrom) or not isinstance(node.names, cst.ImportStar):
            continue
        base = dotted(node.module) if node.module is not None else ""
        if node.relative:
            up = package.split(".") if package else []
            up = up[:len(up) - (len(node.relative) - 1)] if len(node.relative) <= len(up) else None
            base = "" if up is None else ".".join(filter(None, [*up, base]))
        found.append((node, base))
    return found


def _only_in_main_guard(part: Part, node: cst.CSTNode, top: dict[cst.CSTNode, Part]) -> bool:
    """Is `node` in a statement of `part` that the merged module leaves out (a helper's main block)?"""
    return not any(stmt in top and any(n is node for n in import_nodes(cst.Module(body=[stmt])))
                   for stmt in part.module.body)


def _imported(part: Part):
    """(the name the import binds or None, the dotted module it names) for each import of
    `part`; `from X import a` names `X` and `X.a` (a submodule or not: `_files` decides)."""
    package = part.name.rpartition(".")[0] if part.path.name != "__init__.py" else part.name
    for node in import_nodes(part.module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name)
                yield (alias.asname.name.value if alias.asname else full), full
            continue
        base = dotted(node.module) if node.module is not None else ""
        if node.relative:
            up = package.split(".") if package else []
            if up and len(node.relative) > len(up):
                continue  # beyond the top package: Python's ImportError, nothing to follow
            up = up[:len(up) - (len(node.relative) - 1)]
            base = ".".join(filter(None, [*up, base]))
        if base:
            yield None, base
        if isinstance(node.names, cst.ImportStar):
            continue
        for alias in node.names:
            bound = alias.asname.name.value if alias.asname else alias.name.value
            yield bound, f"{base}.{alias.name.value}" if base else alias.name.value


DYNAMIC_IMPORTS = frozenset({"__import__", "importlib.import_module", "import_module"})


def _computed_imports(part: Part, root: Path, argv: tuple[str, ...] | None = None) -> list[tuple[cst.Call, list[str]]]:
    """(call, the modules it may import) for each call of `part` that imports by name
    (`__import__`, `importlib.import_module`): the name given as a string, else every module of
    the package the computed name lies in (a literal prefix `"models."` of an f-string or a
    concatenation, or the package itself where its `__init__.py` computes the name), else, for a
    name computed from a command-line option (`import_module(args.cfg.replace("/", ".")[:-3])`),
    the modules its values give (`command_line.module_names`: `argv`'s, else the option's default
    and choices, else the modules of a configuration package such as `configs/`)."""
    found = _file_specs(part, root, argv)
    for call in _dynamic_imports(part):
        first = call.args[0].value
        if isinstance(first, cst.SimpleString):
            found.append((call, [str(first.evaluated_value)]))
            continue
        if names := _literals_for_parameter(part.module, call, first, own=part.calls):
            found.append((call, names))
            continue
        if names := command_line.module_names(first, part.module, argv, lambda n: bool(_files(root, n)),
                                              lambda: _configuration_modules(root), part.calls, part.assigns):
            found.append((call, names))
            continue
        prefix = mt.literal_prefix(first)
        package = prefix.rpartition(".")[0] if "." in prefix else \
            (part.name if part.path.name == "__init__.py" else "")
        folder = root.joinpath(*package.split(".")) if package else None
        if folder is not None and folder.is_dir():
            found.append((call, _modules_of(folder, package)))
        elif not package and (targets := configured_targets(root)):
            found.append((call, list(dict.fromkeys(t.rpartition(".")[0] for t in targets))))
    return found


SPEC_IMPORTS = frozenset({"importlib.util.spec_from_file_location", "util.spec_from_file_location",
                          "spec_from_file_location"})


def _file_specs(part: Part, root: Path, argv: tuple[str, ...] | None) -> list[tuple[cst.Call, list[str]]]:
    """(call, the modules it loads) for each `importlib.util.spec_from_file_location(name, path)` of
    `part` whose path names a `.py` file of the project: written out, or computed from a command-line
    option (`spec_from_file_location("cfg", args.config)`: `command_line.values`), relative to the
    entry's folder."""
    if b"spec_from_file_location" not in part.data:
        return []
    found = []
    for call in [c for c in part.calls if dotted(c.func) in SPEC_IMPORTS]:
        location = mt.keyword(call, "location")
        location = location if location is not None else (call.args[1] if len(call.args) > 1 else None)
        if location is None:
            continue
        paths = [str(location.value.evaluated_value)] if isinstance(location.value, cst.SimpleString) else \
            command_line.values(location.value, part.module, argv, lambda: _configuration_modules(root),
                                part.calls, part.assigns) or []
        names = [n for p in paths if (n := _module_at(root, p)) is not None and _files(root, n)]
        if names:
            found.append((call, list(dict.fromkeys(names))))
    return found


def _module_at(root: Path, path: str) -> str | None:
    """The dotted name of the project's `.py` file at `path` (relative to `root`), or None."""
    file = (root / path).resolve() if not os.path.isabs(path) else Path(path).resolve()
    if file.suffix != ".py" or not file.is_relative_to(root.resolve()):
        return None
    parts = file.relative_to(root.resolve()).with_suffix("").parts
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _handed_in(parts: list[Part], by_name: dict, tried: set[cst.Call], handed: dict, queue: list[Part]) -> bool:
    """Once every file is read: for a helper that imports by the name of its parameter and that the
    files calling it write out in another file (`utils.py`: `def get_class(module, name): ...
    importlib.import_module(module)`; `trainer.py`: `get_class("pkg.algos", cfg.algo)`), the names
    every call of it in the program gives (`_literals_for_parameter`, over every file), kept in
    `handed` for the helper's file, which goes back on `queue` to read them. False where there is
    none (each such import is asked once)."""
    found = False
    every: list[cst.Call] | None = None  # the program's calls, gathered once
    for part in parts:
        for call in _dynamic_imports(part):
            if call in by_name or call in tried or not isinstance(call.args[0].value, cst.Name):
                continue
            tried.add(call)
            every = every if every is not None else [c for p in parts for c in p.calls]
            names = _literals_for_parameter(part.module, call, call.args[0].value, every)
            if names:
                handed.setdefault(part.name, []).append((call, names))
                queue.append(part)
                found = True
    return found


def _dynamic_imports(part: Part) -> list[cst.Call]:
    """The calls of `part` that import by name (`DYNAMIC_IMPORTS`, with an argument); its calls are
    walked only where such a call may be."""
    if b"__import__" not in part.data and b"import_module" not in part.data:
        return []
    return [c for c in part.calls if dotted(c.func) in DYNAMIC_IMPORTS and c.args]


def _literals_for_parameter(module: cst.Module, call: cst.Call, arg: cst.BaseExpression,
                            callers: list[cst.Call] | None = None, own: list[cst.Call] | None = None) -> list[str]:
    """The module names a helper's parameter is given where the helper imports it by name, where
    every call of the helper in its file writes the name out: `get_class('pkg.algos', cfg.algo)`
    and `get_class('pkg.data', cfg.data)` of `def get_class(module, name): mod =
    importlib.import_module(module)`; [] where some call passes anything else, or none is found.
    `callers`: the calls that may be of it (its own file's by default; every file's for `_handed_in`,
    the helper called by its name or as an attribute: `utils.get_class(...)`); `own`: its file's
    calls, where found already (`Part.calls`)."""
    if not isinstance(arg, cst.Name):
        return []
    defs = mt.functions_around(module, call)
    func = min(defs, key=lambda f: len(mt.findall(f, cst.Call)), default=None)  # the innermost
    params = [p.name.value for p in func.params.params] if func is not None else []
    params = params[1:] if params[:1] in (["self"], ["cls"]) else params  # a method's calls pass the rest
    if arg.value not in params or any(mt.findall(func, cst.AssignTarget, lambda t: mt.is_name(t.target, arg.value))):
        return []
    index, names = params.index(arg.value), []
    name = func.name.value
    sites = [c for c in (mt.findall(module, cst.Call) if own is None else own) if mt.is_name(c.func, name)] \
        if callers is None else \
        [c for c in callers if mt.is_name(c.func, name) or mt.is_attribute(c.func, name)]
    for site in sites:
        given = [a.value for a in site.args if a.keyword is not None and a.keyword.value == arg.value] or \
            [a.value for a in site.args[index:index + 1] if a.keyword is None and not a.star]
        if len(given) != 1 or not isinstance(given[0], cst.SimpleString):
            return []
        names.append(str(given[0].evaluated_value))
    return list(dict.fromkeys(names))


# a configuration file's target: `target: pkg.mod.Class`, Hydra's `_target_:`, jsonargparse's `class_path:`
CONFIG_TARGET = re.compile(r"""^[ \t-]*["']?(?:_target_|target|class_path)["']?[ \t]*:[ \t]*["']?"""
                           r"""([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)["']?[ \t]*(?:#.*)?$""", re.MULTILINE)
CONFIG_WALK = (3, 2000)  # how deep below the project's folder, and how many entries, configuration files are looked for


def configured_targets(root: Path) -> tuple[str, ...]:
    """The dotted names the YAML files of the project (`root` and its folders, three deep, hidden
    ones left out) give as what to build, in the order found: a config-driven framework's
    `target: "models.mlp.MLP"` builds `MLP` of `models/mlp.py` through `getattr(importlib.
    import_module(module), name)(**params)`. Read without a YAML parser: a line `key: value` whose
    key is `target`, `_target_` or `class_path` and whose value is a dotted name."""
    return _configured_targets(root.resolve())


@functools.lru_cache(maxsize=64)
def _configured_targets(root: Path) -> tuple[str, ...]:
    found: dict[str, None] = {}
    depth, budget = CONFIG_WALK
    for folder, dirs, files in os.walk(root):
        level = len(Path(folder).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and level < depth)
        budget -= len(dirs) + len(files)
        for name in sorted(f for f in files if f.endswith((".yaml", ".yml"))):
            path = Path(folder, name)
            try:
                text = path.read_text(encoding="utf-8", errors="replace") if path.stat().st_size < 1 << 20 else ""
            except OSError:
                continue
            found.update((m.group(1), None) for m in CONFIG_TARGET.finditer(text))
        if budget < 0:
            break
    return tuple(found)


def _configuration_modules(root: Path) -> list[tuple[str, str]]:
    """(path, dotted name) of each module of the project's configuration packages
    (`command_line.CONFIG_PACKAGES`: `configs/lenet.py`, `configs.lenet`)."""
    return [(f"{folder}/{f.name}", f"{folder}.{f.stem}") for folder in command_line.CONFIG_PACKAGES
            if (root / folder).is_dir() for f in sorted((root / folder).glob("*.py")) if f.name != "__init__.py"]


def _modules_of(folder: Path, package: str) -> list[str]:
    """The modules a computed name under `package` may import: its `.py` files and its
    sub-packages (a folder with an `__init__.py`: `commands/train/__init__.py` of
    `import_module(f"commands.{entry.stem}")` over the package's folder)."""
    files = [f"{package}.{f.stem}" for f in sorted(folder.glob("*.py")) if f.name != "__init__.py"]
    return files + [f"{package}.{d.name}" for d in sorted(folder.iterdir()) if (d / "__init__.py").is_file()]


def _files(root: Path, name: str) -> list[tuple[Path, str]]:
    """The project files importing the dotted `name` runs: each package's `__init__.py` on the
    way (a folder without one is a namespace package), then the module itself; [] when `name`
    is not in the project."""
    files = []
    folder = root
    parts = name.split(".")
    for i, part in enumerate(parts):
        dotted_name = ".".join(parts[:i + 1])
        package, module = folder / part / "__init__.py", folder / f"{part}.py"
        if package.is_file():
            files.append((package, dotted_name))
            folder = folder / part
        elif (folder / part).is_dir() and i < len(parts) - 1:  # a namespace package (no __init__.py)
            folder = folder / part
        elif module.is_file() and i == len(parts) - 1:
            files.append((module, dotted_name))
        else:
            return files if i == len(parts) - 1 and files else []
    return files
