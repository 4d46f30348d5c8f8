"""What a conversion wrote into an output folder, so that the next one overwrites only its own.

`convert train.py -o out/` writes `out/train.py` (named by the user) and the program's changed
modules (`out/data.py`, `out/engine/loop.py`: named by nobody). A record beside them,
`out/.ddpify-written.json`, lists each module an entry's conversion wrote, with a digest of
what it wrote:

    {"entries": {"train.py": {"data.py": "<sha256>", "engine/loop.py": "<sha256>"}}}

With it, a later conversion into the same folder
- never overwrites a file that ddpify did not write or that the user edited since (refused in
  one line naming it, suggesting a folder of its own);
- never replaces a module another entry's conversion wrote with different code (the first
  program would import the second's module);
- removes what its own previous conversion wrote and this one no longer does (a stale module
  would shadow the project's own), where the file is still as written.

Nothing here writes: `plan` returns the files to write (the record included, so it lands with
them, all or none) and the stale files to remove afterwards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ddpify.inputs.files import InputError

RECORD = ".ddpify-written.json"


@dataclass(frozen=True)
class Plan:
    record: tuple[Path, bytes]  # the updated record, written with the modules
    stale: list[Path]  # what this entry wrote last time and no longer does, unchanged since


def digest(data: bytes) -> str:
    import hashlib  # here: loading OpenSSL costs a conversion that writes no record a few ms

    return hashlib.sha256(data).hexdigest()


def plan(folder: Path, entry: str, modules: dict[str, bytes], pending: bytes | None = None) -> Plan:
    """Check that the conversion of `entry` (its name in `folder`) may write `modules` (paths
    relative to `folder`) there; raises `InputError` naming the first file it must not touch.
    `pending`: the record as an earlier plan of the same run left it (not written yet)."""
    path = folder / RECORD
    entries = _read(path, pending)
    mine = entries.get(entry, {})
    for rel, data in modules.items():
        target = folder / rel
        current = _bytes(target)
        if current is None or current == data:
            continue
        owner = next((name for name, files in entries.items() if files.get(rel) == digest(current)), None)
        if owner is None:
            raise InputError(f"{target}: exists and was not written by ddpify (or was edited since): not "
                             f"overwritten; convert {entry} into a folder of its own (-o DIR/)")
        if owner != entry:
            raise InputError(f"{target}: the conversion of {owner} wrote another version of this "
                             f"module; convert {entry} into a folder of its own (-o DIR/)")
    previous = {rel: _bytes(folder / rel) for rel in mine if rel not in modules}
    stale = [folder / rel for rel, data in previous.items() if data is not None and digest(data) == mine[rel]]
    entries[entry] = {rel: digest(data) for rel, data in sorted(modules.items())}
    if not entries[entry]:
        del entries[entry]
    text = json.dumps({"entries": entries}, indent=1, sort_keys=True) + "\n"
    return Plan((path, text.encode()), stale)


def _read(path: Path, pending: bytes | None = None) -> dict[str, dict[str, str]]:
    data = _bytes(path) if pending is None else pending
    if data is None:
        return {}
    try:
        entries = json.loads(data)["entries"]
        if isinstance(entries, dict) and all(isinstance(v, dict) for v in entries.values()):
            return entries
    except (ValueError, KeyError, TypeError):
        pass
    raise InputError(f"{path}: not a record ddpify can read; remove it, or convert into another folder")


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None
