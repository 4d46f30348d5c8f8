"""Tracebacks of a `ddpify run` job in the user's own terms: a frame of the converted copy in the
run's private folder (`/tmp/ddpify-run-x1/train.py", line 75`) names the user's file and the line
it came from (`/home/me/train.py", line 71`); so does a place named `PATH:LINE`, as in the
self-check's findings and its `ddpify hang:` lines.

The converted file's lines map to the original's through a diff of the two: a kept line maps to
itself, a changed one to the line it replaced, an added one to the line before it (the line the
rewrite added it for). Notebooks are mapped to their cells elsewhere (`Script.locate_converted`).
"""

from __future__ import annotations

import difflib
import re
from typing import Mapping

FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def line_map(original: str, converted: str) -> list[int]:
    """For each line of `converted` (index 0 is line 1), the line of `original` it comes from."""
    lines = [0] * len(converted.splitlines())
    matcher = difflib.SequenceMatcher(None, original.splitlines(), converted.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                lines[j] = i1 + (j - j1) + 1
            elif tag == "replace":
                lines[j] = i1 + min(j - j1, i2 - i1 - 1) + 1
            else:  # added: the line before it, or the first
                lines[j] = max(i1, 1)
    return lines


class Frames:
    """Rewrites traceback frames of the private copies to the user's files: `copies` maps each
    copy's path to (the user's path, the original text, the converted text)."""

    def __init__(self, copies: Mapping[str, tuple[str, str, str]]) -> None:
        self.copies = {path: (user, line_map(original, converted)) for path, (user, original, converted)
                       in copies.items()}
        # `PATH:LINE`, as the self-check's findings and `ddpify hang:` lines name a place
        self.at = re.compile("(?P<file>" + "|".join(map(re.escape, sorted(self.copies, key=len, reverse=True)))
                             + r"):(?P<line>\d+)") if self.copies else None

    def __call__(self, text: str) -> str:
        if 'File "' in text:
            text = FRAME.sub(self._frame, text)
        return self.at.sub(self._at, text) if self.at is not None and ":" in text else text

    def bytes(self, data: bytes) -> bytes:
        return self(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape") \
            if b'File "' in data or self.at is not None and b":" in data else data

    def _at(self, match: re.Match) -> str:
        user, lines = self.copies[match.group("file")]
        line = int(match.group("line"))
        return f"{user}:{lines[line - 1] if 0 < line <= len(lines) else line}"

    def _frame(self, match: re.Match) -> str:
        found = self.copies.get(match.group("file"))
        if found is None:
            return match.group(0)
        user, lines = found
        line = int(match.group("line"))
        return f'File "{user}", line {lines[line - 1] if 0 < line <= len(lines) else line}'
