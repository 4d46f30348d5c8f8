"""LibCST nodes hash by identity in C, not in Python.

LibCST's `CSTNode.__hash__` is `return id(self)`, a Python function that each node class (a
frozen dataclass) carries in its own namespace: every look-up of a node in a dict or a set (the
parents, spans and scopes of `Facts`, the analyses' memos, LibCST's own tables) runs a Python
frame, ~150,000 of them in a typical conversion. `object.__hash__` is the same identity hash (a
node equals only itself, `CSTNode.__eq__`), in C. It is set when the syntax layer is first
imported, before ddpify builds or parses any node: a node must never be hashed both ways while
it is a key. `tests/test_node_hash.py` checks that every node class LibCST defines has it.
"""

from __future__ import annotations

import libcst as cst

_PYTHON_HASH = cst.CSTNode.__hash__


def node_classes() -> list[type]:
    """CSTNode and every class derived from it."""
    found: list[type] = []
    stack: list[type] = [cst.CSTNode]
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack += cls.__subclasses__()
    return found


for _cls in node_classes():
    if _cls.__dict__.get("__hash__") is _PYTHON_HASH:
        _cls.__hash__ = object.__hash__  # type: ignore[method-assign, assignment]
