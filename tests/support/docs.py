"""The before/after examples in the rewrites' docstrings, as data.

Two forms are read. A block: indented lines, a line ``->`` alone, indented lines. A line:
``    before  ->  after`` (two spaces either side of the arrow), where a following line that is
blank up to the arrow's column continues the after side (or, with ``->`` in it, starts the after
side of the indented line above). ``...`` in an example stands for code left out; a comment
wrapped over several lines stands for one line. Examples after a line that mentions
``--strategy fsdp`` show that strategy's form (``Example.strategy``).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import List

ARROW = "  ->  "


@dataclass(frozen=True)
class Example:
    before: str  # dedented
    after: str  # dedented
    inline: bool  # the one-line form: ``after`` may be a part of its line only
    strategy: str = "ddp"  # "fsdp": converted with --strategy fsdp

    def pattern(self) -> "re.Pattern[str]":
        """``after`` as a regular expression over the converted code: ``...`` matches anything on
        its line; a block keeps its relative indentation under any common indentation; in the
        one-line form every line may have more before and after it."""
        parts = []
        for n, line in enumerate(_join_comments(self.after.splitlines())):
            text = line.lstrip()
            body = "[^\\n]*?".join(re.escape(piece) for piece in re.split(r" ?\.\.\. ?", text))
            if self.inline:
                parts.append(r"[^\n]*" + body + r"[^\n]*")
            else:
                indent = re.escape(line[:len(line) - len(text)])
                parts.append((r"(?P<base>[ \t]*)" if n == 0 else r"(?P=base)") + indent + body)
        return re.compile(r"^" + r"\n".join(parts) + r"$", re.M)


def examples(doc: str) -> List[Example]:
    lines = doc.splitlines()
    found: List[Example] = []
    strategy = "ddp"
    i = 0
    while i < len(lines):
        line = lines[i]
        if "--strategy fsdp" in line:
            strategy = "fsdp"
        if line.strip() == "->" and not line.startswith(" "):
            before = _indented_run(lines, i - 1, -1)
            after = _indented_run(lines, i + 1, 1)
            found.append(Example(_dedent(before), _dedent(after), inline=False, strategy=strategy))
            i += 1 + len(after)
            continue
        if line.startswith("    ") and "->" in line:
            column = line.index("->")
            left, right = line[:column].rstrip(), line[column + 2:].strip()
            if not left.strip():  # `->` below a line that has none: that line is the before
                left = lines[i - 1]
            after_lines = [right]
            j = i + 1
            while j < len(lines) and lines[j].startswith("    ") and not lines[j][:column].strip() \
                    and "->" not in lines[j]:
                after_lines.append(lines[j][column:].strip())
                j += 1
            found.append(Example(left.strip(), "\n".join(after_lines), inline=True, strategy=strategy))
            i = j
            continue
        i += 1
    return found


def _indented_run(lines: List[str], start: int, step: int) -> List[str]:
    run = []
    k = start
    while 0 <= k < len(lines) and lines[k].startswith("    "):
        run.append(lines[k])
        k += step
    return run[::-1] if step < 0 else run


def _dedent(lines: List[str]) -> str:
    return textwrap.dedent("\n".join(lines))


def _join_comments(lines: List[str]) -> List[str]:
    """A comment wrapped over several lines in a docstring is one line in the output."""
    joined: List[str] = []
    for line in lines:
        if joined and line.lstrip().startswith("#") and joined[-1].lstrip().startswith("#"):
            joined[-1] += " " + line.lstrip()[1:].strip()
        else:
            joined.append(line)
    return joined
