"""A record of one rename phase, so that the next ddpify command finishes a write killed in it.

`files.write_all_atomic` writes and syncs every new file beside its target first
(`.NAME.XXXXXXXX.ddpify-tmp`), then renames them all. Ctrl-C, SIGTERM and SIGHUP are held during
the renames; SIGKILL cannot be. So, between the staging and the first rename, `begin` writes a
journal, `.ddpify-journal.XXXXXXXX.json`, into every folder the phase writes in (and the folders
of the command's inputs), and `end` removes it after the last rename:

    {"owner": {"host": "node7", "pid": 4242, "started": 1718233},
     "renames": [["/p/.a.py.1f2e3d4c.ddpify-tmp", "/p/a.py", [ino, size, mtime_ns], [ino, size, mtime_ns]]],
     "removals": [["/out/old.py", [ino, size, mtime_ns]]],
     "journals": ["/p/.ddpify-journal.0a1b2c3d.json"]}

Each rename names the staged file, its target, the target's identity before (None: new) and the
staged file's (a rename keeps a file's inode, size and mtime). Removals are files an earlier
conversion wrote that this one no longer does (`ddpify.inputs.written`), removed after the renames.

A journal whose owner has ended (`ddpify.inputs.owner`) means: every new file was staged, some were
renamed. `finish` completes it, as the user asked for the write and all of it is on disk: the
renames still to do are done, where the target is still as it was and the staged file as staged.
A file changed since (an edit after the kill) is left as it is and named. Before: a kill after 2
of 51 renames leaves 2 modules converted, 49 not, and 49 staged files. After: the next `ddpify
convert`, `diff`, `check` or `run` on a file of that folder prints one line and the 51 are
converted. Rolling back instead would need a copy of every original made before the renames.

Nothing here prints: `finish` returns the lines for stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Iterable, Sequence

from ddpify.inputs import owner

PREFIX, SUFFIX = ".ddpify-journal.", ".json"
UNREADABLE_AFTER_S = 60.0  # an unreadable journal this old was cut short while written: no rename yet


def begin(renames: Sequence[tuple[Path, Path]], removals: Sequence[Path], also_in: Iterable[Path] = ()
          ) -> list[Path]:
    """Write the journal of `renames` ((staged file, target)) and `removals` into each folder they
    touch (an `OSError` if one cannot be written) and into each of `also_in` where it can be; the
    journals written, for `end`."""
    folders = list(dict.fromkeys([*(t.parent for _, t in renames), *(p.parent for p in removals)]))
    extra = [f for f in dict.fromkeys(Path(os.path.realpath(f)) for f in also_in) if f not in folders]
    name = f"{PREFIX}{os.urandom(4).hex()}{SUFFIX}"
    paths = [f / name for f in [*folders, *extra]]
    text = json.dumps({"owner": owner.me(),
                       "renames": [[str(s), str(t), _identity(t), _identity(s)] for s, t in renames],
                       "removals": [[str(p), _identity(p)] for p in removals],
                       "journals": [str(p) for p in paths]}).encode()
    written: list[Path] = []
    try:
        for path in paths:
            try:
                _write_new(path, text)
            except OSError:
                if path.parent in folders:
                    raise
                continue
            written.append(path)
    except BaseException:
        end(written)
        raise
    return written


def end(journals: Iterable[Path]) -> None:
    for path in journals:
        with contextlib.suppress(OSError):
            os.unlink(path)


def finish(folders: Iterable[Path]) -> list[str]:
    """Finish the rename phases killed in `folders` (see the module's docstring); one line each."""
    lines, seen = [], set()
    for folder in dict.fromkeys(folders):
        try:
            names = sorted(n for n in os.listdir(folder) if n.startswith(PREFIX) and n.endswith(SUFFIX))
        except OSError:
            continue
        for name in names:
            path = Path(folder, name)
            if name in seen or not path.is_file():  # a copy of a journal finished from another folder
                continue
            seen.add(name)
            line = _finish_one(path)
            if line:
                lines.append(line)
    return lines


def _finish_one(path: Path) -> str | None:
    try:
        record = json.loads(path.read_bytes())
        renames, removals, journals = record["renames"], record["removals"], record["journals"]
        ours = record["owner"]
    except (OSError, ValueError, KeyError, TypeError):
        return _unreadable(path)
    if not owner.gone(ours):
        return None  # a write in progress, or another machine's
    done = left = 0
    changed: list[str] = []
    for staged, target, before, new in renames:
        now, tmp = _identity(Path(target)), _identity(Path(staged))
        if tmp is None and now == new:
            done += 1
        elif tmp == new and now == before and _renamed(staged, target):
            done, left = done + 1, left + 1
        else:
            changed.append(target)
            if tmp == new:
                with contextlib.suppress(OSError):
                    os.unlink(staged)
    for removed, before in removals:
        now = _identity(Path(removed))
        if now is not None and now == before:
            with contextlib.suppress(OSError):
                os.unlink(removed)
        elif now is not None:
            changed.append(removed)
    end(Path(p) for p in journals)
    end([path])
    state = f"{left} of {len(renames)} file(s) renamed now; " + (
        "all are written" if not changed else
        f"{done} written, left as they are (changed since the kill): {', '.join(map(_shown, changed))}")
    return f"{path}: finished a ddpify write that was killed during its renames: {state}"


def _shown(path: str) -> str:
    """`path` relative to the working directory where it is inside it (as the user named it)."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _renamed(staged: str, target: str) -> bool:
    try:
        os.replace(staged, target)
    except OSError:
        return False
    return True


def _unreadable(path: Path) -> str | None:
    """A journal that is not JSON was cut short while written, before any rename: removed once it
    is old enough not to be one being written now."""
    try:
        if time.time() - os.lstat(path).st_mtime < UNREADABLE_AFTER_S:
            return None
        os.unlink(path)
    except OSError:
        return None
    return f"{path}: removed the journal of a ddpify write killed before its renames: no file was replaced"


def _identity(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
