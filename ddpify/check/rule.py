"""A rule of `ddpify check`: a code, a name, and a function that reports what it finds.

`@rule("DDP001")` over a function `rank_as_device` registers the rule `rank-as-device` in
`REGISTERED` (the rule's name is its function's, with dashes): importing a rule module is all it
takes to add its rules. A rule is a bug (reported by default) or advice (`bug=False`: reported
only when `--select` names it), and its explanation says which.

A rule's docstring is its documentation (`ddpify check --explain CODE`, docs/check.md):
the first line says what it finds; a `Wrong:` and a `Right:` block (indented code, each a whole
small script that the tests check) and a paragraph on why it breaks and what the fix is.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

import libcst as cst

if TYPE_CHECKING:
    from ddpify.check.context import Context
    from ddpify.output.edits import Edits


@dataclass(frozen=True)
class Hit:
    """What a rule found: the node to point at, the message, and the edit that fixes it, when
    one is safe and mechanical."""

    node: cst.CSTNode
    message: str
    fix: Callable[["Edits"], None] | None = None


Finder = Callable[["Context"], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    code: str  # DDP###
    name: str  # kebab-case, as in docs/check.md's table
    find: Finder
    fixable: bool  # does the rule offer fixes (for some of its findings)?
    bug: bool = True  # a bug (found by default) or advice (found only when `--select` names it)
    several: bool = False  # a bug only with several processes (not run where the group has one)

    @property
    def doc(self) -> str:
        """The docstring, and a last paragraph saying whether it is a bug or advice."""
        kind = "A bug: reported by default." if self.bug else \
            f"Advice: reported only when `--select` names it (`--select {self.code}`)."
        return inspect.cleandoc(self.find.__doc__ or "") + "\n\n" + kind

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0]

    def example(self, label: str) -> str:
        """The code of the docstring's `Wrong:` or `Right:` block."""
        text = self.doc.split(f"\n{label}:\n", 1)[1]
        lines = []
        for line in text.splitlines():
            if line and not line.startswith("    "):
                if lines:
                    break
                continue
            lines.append(line)
        return textwrap.dedent("\n".join(lines)).strip() + "\n"


REGISTERED: dict[str, Rule] = {}  # code -> rule, filled by `@rule` as the rule modules are imported


def rule(code: str, fixable: bool = False, bug: bool = True, several: bool = False) -> Callable[[Finder], Rule]:
    """Make a finder function a `Rule` named after it, and register it under `code`; `several`:
    what it finds goes wrong only between processes (a script whose process group is hard-coded
    to one process, `world_size=1`, is not checked for it)."""
    def register(find: Finder) -> Rule:
        if code in REGISTERED:
            raise ValueError(f"{code} is registered twice ({REGISTERED[code].name}, {find.__name__})")
        REGISTERED[code] = Rule(code, find.__name__.replace("_", "-"), find, fixable, bug, several)
        return REGISTERED[code]
    return register
