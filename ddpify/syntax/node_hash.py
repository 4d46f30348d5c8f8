"""LibCST nodes hash by identity in C, not in Python, and their classes answer `isinstance` in C.

LibCST's `CSTNode.__hash__` is `return id(self)`, a Python function that each node class (a
frozen dataclass) carries in its own namespace: every look-up of a node in a dict or a set (the
parents, spans and scopes of `Facts`, the analyses' memos, LibCST's own tables) runs a Python
frame, ~150,000 of them in a typical conversion. `object.__hash__` is the same identity hash (a
node equals only itself, `CSTNode.__eq__`), in C. It is set when the syntax layer is first
imported, before ddpify builds or parses any node: a node must never be hashed both ways while
it is a key. `tests/test_node_hash.py` checks that every node class LibCST defines has it.

The node classes derive from `abc.ABC`, so `isinstance(value, cst.Call)` of a value that is no
`Call` runs `ABCMeta.__instancecheck__`, a Python frame (about 9,000 a small conversion, the
analyses' type tests and LibCST's own), which asks the class's registry of virtual subclasses
and then its bases. LibCST registers none, so the bases answer alone: the node classes get a
metaclass of their own, `type`'s checks in C (`_NodeType`), with the same answers for every pair
of node classes and every other type; what `ABCMeta` adds at class creation (the abstract
methods) stays with each class.
"""

from __future__ import annotations

from abc import ABCMeta

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


class _NodeType(type):
    """The metaclass of LibCST's node classes once ddpify is loaded: `type`'s own `isinstance` and
    `issubclass` (the bases, in C), where no class has virtual subclasses."""


for _cls in node_classes():
    if type(_cls) is ABCMeta:
        _cls.__class__ = _NodeType  # type: ignore[assignment]
