"""Every edit ddpify makes, and everything it could not do, is a `Change` record.

The diff summary, the `--json` output and the tests all read the same records.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Iterable

CHANGE = "change"
WARNING = "warning"
NOTE = "note"


@dataclass(frozen=True)
class Change:
    """One line of the report: `train.py:42: [wrap-model] wrapped `model` in ...`."""

    rewrite: str
    line: int
    message: str
    kind: str = CHANGE  # CHANGE, WARNING (a TODO the user must act on) or NOTE (nothing edited)

    def render(self, path: str) -> str:
        tag = "warning: " if self.kind == WARNING else ""
        where = f"{path}:{self.line}" if self.line else path  # line 0: the file as a whole
        return f"{where}: {tag}[{self.rewrite}] {self.message}"


def summary(path: str, changes: Iterable[Change], changed: bool) -> str:
    """The one-line summary printed after the records of a file."""
    changes = list(changes)
    edits = sum(c.kind == CHANGE for c in changes)
    warnings = sum(c.kind == WARNING for c in changes)
    if not changed:
        return f"{path}: unchanged" + (f", {warnings} warning(s)" if warnings else "")
    return f"{path}: {edits} change(s), {warnings} warning(s)"


def to_json(files: Iterable[tuple[str, bool, Iterable[Change]]]) -> str:
    """The documented `--json` format: {"files": [{"path", "changed", "records": [...]}]}; each
    record names its file's path too (a program's modules are files of their own)."""
    payload = {
        "version": 1,
        "files": [
            {
                "path": path,
                "changed": changed,
                "records": [{**asdict(c), "path": path} for c in changes],
            }
            for path, changed, changes in files
        ],
    }
    return json.dumps(payload, indent=2)
