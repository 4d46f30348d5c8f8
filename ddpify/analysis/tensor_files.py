"""Which files a `torch.load` reads hold no tensor saved from a GPU, as the file itself shows:
a file of the project, named by a literal path, that `torch.save` wrote with every storage on
the CPU (or none at all). `ddpify check`'s DDP014 asks it of a `torch.load` without
`map_location`: such a file comes back on the CPU in every process, nothing lands on GPU 0.

    X_mean = torch.load("mean_var/modelA_mean.pt").cuda()   # committed beside the script,
                                                             # its storages saved on 'cpu'
    state = torch.load(args.resume)                          # no file to read: asked no further

A file `torch.save` writes keeps, for each storage, the device it was saved from, in the
persistent id of its pickle (`('storage', torch.FloatStorage, '0', 'cpu', 4096)`): read from
the pickle's opcodes (`pickletools.genops`), nothing is unpickled, nothing of the file runs.
The newer format is a zip archive (`<name>/data.pkl`); the older one (before torch 1.6) a run
of pickles (magic number, protocol, system info, then the object). A path is looked for beside
the file that holds the load, in the project's folder and in the current folder (where the
user runs the program from, and `ddpify check` is run); a path found nowhere (a checkpoint the
training writes later, a download) or a file of another format is not known to be on the CPU.
"""

from __future__ import annotations

import io
import os
import pickletools
import zipfile
from pathlib import Path, PurePath
from typing import Iterator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts

# the opcodes that push a string (a storage's key and device are strings)
STRING_OPS = frozenset({"BINUNICODE", "SHORT_BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING",
                        "BINSTRING", "STRING"})
PUT_OPS = frozenset({"BINPUT", "LONG_BINPUT", "PUT"})
GET_OPS = frozenset({"BINGET", "LONG_BINGET", "GET"})
GLOBAL_OPS = frozenset({"GLOBAL", "STACK_GLOBAL"})
LEGACY_PICKLES = 4  # the old format: magic number, protocol version, system info, the object
_GLOBAL = object()  # a class pushed (the storage's type)
_OTHER = object()


def saved_on_the_cpu(facts: Facts, load: cst.Call) -> bool:
    """Does `load` read a file of the project (a literal path) whose every storage was saved on the CPU?"""
    arg = mt.positional(load, 0) or mt.keyword(load, "f")
    name = _literal_path(facts, arg.value) if arg is not None else None
    if name is None:
        return False
    found = [p for p in dict.fromkeys(folder / name for folder in _folders(facts, load)) if p.is_file()]
    return bool(found) and all((devices := storage_devices(p)) is not None and devices <= {"cpu"} for p in found)


def storage_devices(path: Path) -> set[str] | None:
    """The devices the storages of a file `torch.save` wrote were saved from (`{'cpu'}`, `{'cuda:0'}`;
    empty: no tensor in it); None where the file is not one of its formats or cannot be read."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                pickle = next((n for n in archive.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")), None)
                return None if pickle is None else _devices(pickletools.genops(io.BytesIO(archive.read(pickle))))
        with path.open("rb") as stream:
            ops: list[tuple[pickletools.OpcodeInfo, object, int | None]] = []
            for _ in range(LEGACY_PICKLES):
                ops.extend(pickletools.genops(stream))
            return _devices(iter(ops))
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, IndexError, UnicodeDecodeError):
        return None  # not a pickle (pickletools raises ValueError), or cut short


def _devices(ops: Iterator[tuple[pickletools.OpcodeInfo, object, int | None]]) -> set[str]:
    """The device of each persistent id `('storage', <type>, <key>, <device>, ...)`, following the
    memo (the pickler writes a repeated string or class once, then fetches it)."""
    memo: dict[object, object] = {}
    pushed: list[object] = []
    top: object = _OTHER
    for op, arg, _ in ops:
        if op.name in PUT_OPS:
            memo[arg] = top
            continue
        if op.name == "MEMOIZE":
            memo[len(memo)] = top
            continue
        if op.name in ("MARK", "STOP", "PROTO", "FRAME", "POP", "POP_MARK"):
            continue
        top = arg if op.name in STRING_OPS else _GLOBAL if op.name in GLOBAL_OPS \
            else memo.get(arg, _OTHER) if op.name in GET_OPS else _OTHER
        pushed.append(top)
    return {device for i, item in enumerate(pushed[:-3])
            if item == "storage" and pushed[i + 1] is _GLOBAL and isinstance(pushed[i + 2], str)
            and isinstance(device := pushed[i + 3], str)}


def _literal_path(facts: Facts, expr: cst.BaseExpression, depth: int = 2) -> str | None:
    """`"mean_var/a.pt"`, `os.path.join("mean_var", "a.pt")`, or a name bound only to one such path."""
    value = mt.string_value(expr)
    if value is not None:
        return value or None
    if isinstance(expr, cst.Call) and facts.qualify(expr.func) == "os.path.join" and expr.args \
            and all(a.keyword is None and a.star == "" for a in expr.args):
        parts = [mt.string_value(a.value) for a in expr.args]
        return os.path.join(*parts) if all(parts) else None  # type: ignore[arg-type]
    if isinstance(expr, cst.Name) and depth:
        origins = facts.origins(expr)
        paths = {_literal_path(facts, o, depth - 1) if isinstance(o, cst.BaseExpression) else None for o in origins}
        return paths.pop() if len(paths) == 1 and None not in paths else None
    return None


def _folders(facts: Facts, node: cst.CSTNode) -> list[Path]:
    """Where a relative path may name a file: the folder of the file that holds `node`, the
    project's folder and the current folder."""
    folders = [Path.cwd()]
    if facts.program is not None:
        part = facts.program.part_of(node, facts.parents)
        path, rel = getattr(part, "path", None), getattr(part, "rel", None)
        if isinstance(path, PurePath):
            folders.insert(0, Path(path).parent)
            if isinstance(rel, PurePath) and len(rel.parts) <= len(Path(path).parts):
                folders.insert(1, Path(*Path(path).parts[:len(Path(path).parts) - len(rel.parts)]) or Path("."))
    return folders
