"""Files for the command line: find the inputs, plan where outputs go, write them atomically.

Nothing here converts code or prints; every problem with the user's paths is an `InputError`
whose message is one line, ready for stderr.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import os
import re
import signal
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ddpify.inputs import journal

STDIN = "-"
STDIN_NAME = "<stdin>"
RUNTIME_NAME = "ddpify_runtime.py"
SKIPPED_DIRS = frozenset({"__pycache__", ".venv"})  # hidden directories are skipped too


def is_notebook(name: str) -> bool:
    """A Jupyter notebook, by its name (ddpify.inputs.notebook reads it; asked here, so that a
    script's conversion does not import that module)."""
    return name.endswith(".ipynb")


class InputError(Exception):
    """A problem with the user's inputs or outputs (exit 2). `str()` is one line."""


@dataclass(frozen=True)
class Source:
    """One input: a file, or standard input (`path` None)."""

    path: Path | None
    rel: Path | None = None  # relative to the inputs' common directory; mirrored under `-o DIR`

    @property
    def name(self) -> str:
        return STDIN_NAME if self.path is None else str(self.path)


@dataclass(frozen=True)
class Inputs:
    sources: list[Source]
    tree: bool  # several inputs or a directory: `-o` names a directory


@dataclass(frozen=True)
class Loaded:
    """An input's bytes, and the permission bits its output keeps (None for standard input)."""

    data: bytes
    mode: int | None


def collect(args: Sequence[str], exclude: Path | None = None) -> Inputs:
    """Expand the command line's SRC arguments: files as given, directories into their `*.py`
    files (sorted by path; hidden directories, `__pycache__` and anything under `exclude` skipped)."""
    if STDIN in args:
        if len(args) > 1:
            raise InputError(f"'{STDIN}' (standard input) cannot be combined with other inputs")
        return Inputs([Source(None)], tree=False)
    found: list[tuple[Path, Path]] = []  # (file, the directory its relative name starts from)
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            if exclude is not None and _within(path, exclude):
                raise InputError(f"-o {exclude}: is the input directory {arg} (or holds it); write elsewhere, "
                                 "or use --in-place to rewrite inputs")
            files = sorted(f for f in _python_files(path) if exclude is None or not _within(f, exclude))
            if not files:
                raise InputError(f"{arg}: no .py files in this directory")
            found += [(f, path) for f in files]
        elif path.is_file():
            found.append((path, path.parent))
        elif path.exists():
            raise InputError(f"{arg}: not a regular file or directory")
        else:
            raise InputError(f"{arg}: no such file or directory")
    base = os.path.commonpath([os.path.abspath(b) for _, b in found])
    seen: set[Path] = set()
    sources = []
    for file, _ in found:
        if file.resolve() not in seen:
            seen.add(file.resolve())
            sources.append(Source(file, Path(os.path.relpath(os.path.abspath(file), base))))
    return Inputs(sources, tree=len(args) > 1 or any(Path(a).is_dir() for a in args))


def _python_files(root: Path) -> Iterator[Path]:
    """The `*.py` files under `root` that are regular files (or links to one): a FIFO or a
    device named `x.py` would block the read or never end, and a link loop has no file."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS]
        yield from (Path(folder, f) for f in files if f.endswith(".py") and os.path.isfile(os.path.join(folder, f)))


def is_special(path: Path) -> bool:
    """A device, a FIFO or a socket (through links): written into, never renamed over."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _within(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def destinations(inputs: Inputs, output: str | None, in_place: bool) -> list[Path | None]:
    """Where each source's output goes: a file, or None for standard output.

    `--in-place` rewrites the inputs; `-o FILE` takes one input (into an existing directory it
    keeps the input's name); with several inputs or a directory, `-o DIR` mirrors the inputs'
    relative names under DIR (created if its parent exists). Refuses to overwrite an input
    unless `in_place`."""
    sources = inputs.sources
    if in_place:
        for source in sources:
            writable(source.path)
        return [s.path for s in sources]
    if output is None:
        return [None] * len(sources)
    out = Path(output)
    if inputs.tree:
        if out.exists() and not out.is_dir():
            raise InputError(f"-o {output}: not a directory "
                             "(several inputs or a directory need an output directory)")
        _parent_exists(out, output)
        dests = [out / s.rel for s in sources]
    elif out.is_dir() or output.endswith(("/", os.sep)):  # `-o OUT/`: a directory, created if need be
        if sources[0].path is None:
            raise InputError(f"-o {output}: is a directory; name the output file when reading standard input")
        if out.exists() and not out.is_dir():
            raise InputError(f"-o {output}: not a directory")
        _parent_exists(out, output)
        dests = [out / sources[0].path.name]
    else:
        _parent_exists(out, output)
        dests = [out]
    inputs_by_path = {s.path.resolve(): s for s in sources if s.path is not None}
    for dest in dests:
        clash = inputs_by_path.get(dest.resolve())
        if clash is not None and not dest.name.endswith(".ipynb"):  # a notebook's output is NAME.py
            raise InputError(f"{clash.name}: -o would overwrite this input; use --in-place to rewrite inputs")
    return dests


def _parent_exists(out: Path, given: str) -> None:
    parent = out.resolve().parent
    if not parent.is_dir():
        raise InputError(f"-o {given}: directory {parent} does not exist")


WRITE_ELSEWHERE = "write elsewhere with -o"  # convert's way around a read-only input


def writable(path: Path, elsewhere: str | None = WRITE_ELSEWHERE) -> None:
    """Refuse to replace a read-only file (no write permission for its owner), as an editor would;
    the message offers `elsewhere` where the command has one (`check --fix` has no `-o`)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not mode & stat.S_IWUSR:
        hint = f"make it writable, or {elsewhere}" if elsewhere else "make it writable"
        raise InputError(f"{path}: is read-only; not rewritten ({hint})")


def distinct(sources: Sequence[Source], dests: Sequence[Path | None]) -> None:
    """Refuse two inputs whose outputs are one file (`x.py` and `x.ipynb` into one directory)."""
    seen: dict[str, Source] = {}
    for source, dest in zip(sources, dests):
        if dest is None:
            continue
        first = seen.setdefault(os.path.realpath(dest), source)
        if first is not source:
            raise InputError(f"{dest}: both {first.name} and {source.name} would be written here; "
                             "convert them separately")


def read(source: Source) -> Loaded:
    """The source's bytes and permission bits."""
    if source.path is None:
        return Loaded(sys.stdin.buffer.read(), None)
    try:
        with open(source.path, "rb") as f:
            return Loaded(f.read(), stat.S_IMODE(os.fstat(f.fileno()).st_mode))
    except OSError as exc:
        raise InputError(f"{source.name}: cannot read: {exc.strerror}") from exc


def write_all_atomic(files: Sequence[tuple[Path, bytes, int | None]], elsewhere: str | None = WRITE_ELSEWHERE,
                     remove: Sequence[Path] = (), also_in: Iterable[Path] = ()) -> None:
    """Write each `(path, data, mode)` exactly, through a temporary file in the same directory and
    `os.replace`: readers see the old file or the new one, never half of one. A symlink is written
    through (its target is replaced, the link stays); a read-only file is refused. `mode`: the
    permission bits; None keeps those of an existing file, else the umask's default. Raises
    `InputError` when a file cannot be written.

    In two phases: every file is written to its temporary file first, then all are renamed at once, so that a failure or a kill while writing leaves
    every target as it was (and no temporary file after a failure). `remove`: files removed
    after the renames (where they exist). A kill during the renames leaves a journal
    (`ddpify.inputs.journal`) in each folder written and in each of `also_in`, from which the
    next command finishes them. `elsewhere`: see `writable`."""
    staged: list[tuple[Path, Path, Path]] = []  # (temporary file, target, the path as given)
    special = [(path, data) for path, data, _ in files if is_special(path)]
    journals: list[Path] = []
    try:
        for path, data, mode in files:
            if is_special(path):
                continue
            target = Path(os.path.realpath(path))
            try:
                writable(target, elsewhere)
                staged.append((_stage(target, data, mode), target, path))
            except OSError as exc:
                raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        removed = [Path(os.path.abspath(p)) for p in remove if os.path.lexists(p)]
        if staged or removed:
            try:
                journals = journal.begin([(tmp, target) for tmp, target, _ in staged], removed, also_in)
            except OSError as exc:
                raise InputError(f"{exc.filename}: cannot write: {exc.strerror or exc}") from exc
        with _signals_held():
            for done, (tmp, target, path) in enumerate(staged):
                try:
                    os.replace(tmp, target)
                except OSError as exc:
                    written = f"; already replaced: {', '.join(str(p) for _, _, p in staged[:done])}, " \
                              "the other files are as they were" if done else ""
                    raise InputError(f"{path}: cannot write: {exc.strerror or exc}{written}") from exc
            for path in removed:
                path.unlink(missing_ok=True)
            journal.end(journals)
            journals = []
        for path, data in special:
            _write_into(path, data)
    finally:
        journal.end(journals)
        for tmp, _, _ in staged:
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP during the block (the renames, microseconds each): the
    files are all renamed, then the signal arrives. Only SIGKILL can cut the renames short."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _write_into(path: Path, data: bytes) -> None:
    """Write into a device or a FIFO (`-o /dev/null`), never replacing the node itself; a FIFO
    that nobody reads is refused rather than waited on."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        reason = "a FIFO that nobody reads" if exc.errno == errno.ENXIO else exc.strerror or exc
        raise InputError(f"{path}: cannot write: {reason}") from exc
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc


KILLED_AFTER_S = 60.0  # a temporary file this old is a killed run's: staging renames within seconds


def remove_killed_temporaries(folder: Path, name: str | None = None) -> None:
    """Remove the temporary files that runs killed between staging and renaming left in `folder`
    (`.NAME.XXXXXXXX.ddpify-tmp`, older than `KILLED_AFTER_S`; only those of `name` if given).
    A journal names the staged files of a kill during the renames; those are finished first."""
    now = time.time()
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        match = re.fullmatch(r"\.(.+)\.[0-9a-f]{8}\.ddpify-tmp", entry)
        if match and name in (None, match[1]):
            with contextlib.suppress(OSError):
                if now - os.lstat(os.path.join(folder, entry)).st_mtime > KILLED_AFTER_S:
                    os.unlink(os.path.join(folder, entry))


def _stage(path: Path, data: bytes, mode: int | None) -> Path:
    """`data` in a new temporary file next to `path`, synced, with `path`'s permission bits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None and path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
    remove_killed_temporaries(path.parent, path.name)
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.ddpify-tmp")  # no `secrets`: 25 ms of imports
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def runtime_source() -> bytes:
    """The runtime module's source, found without importing it (it imports torch), and not in the
    current folder (`python -m ddpify` puts it first on sys.path), where a vendored copy, maybe
    older or the user's own, would pass for it."""
    here = {"", ".", os.getcwd()}
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if p not in here]
    try:
        spec = importlib.util.find_spec("ddpify_runtime")
    finally:
        sys.path[:] = saved
    if spec is None or not spec.origin:
        raise InputError("cannot find the ddpify_runtime package: is ddpify installed?")
    return Path(spec.origin).read_bytes()


def vendor_runtime(folder: Path, code: bytes) -> tuple[Path, str | None] | None:
    """The copy of the runtime to write into `folder` as `ddpify_runtime.py` (written with the
    converted files, all or none): its path and a message when an older copy is replaced; None
    when the same copy is there. A file there that is not a copy of the runtime (see
    `vendor_target`) is never replaced."""
    target = vendor_target(folder, code)
    previous = target.read_bytes() if target.exists() else None
    if previous == code:
        return None
    return target, None if previous is None else f"{target}: replaced an older copy of the runtime"


def vendor_target(folder: Path, code: bytes) -> Path:
    """`folder/ddpify_runtime.py`, where it is new or a copy of some version of the runtime (it
    starts with the runtime's first line); raises `InputError` for a file of the user's own."""
    target = folder / RUNTIME_NAME
    if target.exists() or target.is_symlink():
        try:
            ours = target.is_file() and target.read_bytes().startswith(code.split(b"\n", 1)[0] + b"\n")
        except OSError:
            ours = False
        if not ours:
            raise InputError(f"{target}: exists and is not ddpify's runtime: not replaced (move it away, "
                             "or convert without --vendor-runtime)")
    return target
