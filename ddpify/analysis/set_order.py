"""Orders taken from a set, which differ between processes.

A set of strings iterates in an order that depends on their hashes, and Python salts the hashes
of str and bytes per process (PYTHONHASHSEED): two processes that build the same set list it in
different orders. One process never notices. Under DDP each process builds its own data set, and a
DistributedSampler hands process 0 the indices 0, 2, 4, ... and process 1 the indices 1, 3, 5, ...
of what it assumes is one sequence; when the sequence was listed from a set, index i names another
file on each process, so the shards overlap and miss samples; a class numbering taken from a set
gives each process other labels for the same class, and DDP averages gradients of different tasks:

    self.filenames = list(set(df.index.tolist()))
    self.class_to_idx = {c: i for i, c in enumerate(set(labels))}

`taken_from_sets` finds each `set(x)` (the builtin, one argument) whose order is kept: listed
(`list(...)`, `tuple(...)`), numbered (`enumerate(...)`), or walked by a comprehension that builds
a list, a dict or a generator. `dict.fromkeys(x)` holds the same distinct items (its keys) in the
order they first come, which is the same in every process (shard-data's edit). A set only tested
(`x in set(...)`, `len(set(...))`), sorted, combined with another, kept in a name, or walked by a
`for` statement is left alone.
"""

from __future__ import annotations

import libcst as cst

from ddpify.syntax.facts import Facts

KEEPS_ORDER = ("list", "tuple", "enumerate")
COMPREHENSIONS = (cst.ListComp, cst.DictComp, cst.GeneratorExp)


def taken_from_sets(facts: Facts) -> list[cst.Call]:
    """The `set(x)` calls whose iteration order the program keeps (see the module's docstring)."""
    found = []
    for call in facts.calls:
        if not _builtin_set_of_one(facts, call):
            continue
        parent = facts.parent(call)
        holder = facts.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(holder, cst.Call) and holder.args[0] is parent and _builtin(facts, holder.func, *KEEPS_ORDER):
            found.append(call)
        elif isinstance(parent, cst.CompFor) and parent.iter is call and isinstance(_comprehension(facts, parent),
                                                                                   COMPREHENSIONS):
            found.append(call)
    return found


def _comprehension(facts: Facts, clause: cst.CompFor) -> cst.CSTNode | None:
    """The comprehension a `for` clause belongs to (an inner clause's parent is the outer one)."""
    node: cst.CSTNode | None = clause
    while isinstance(node, cst.CompFor):
        node = facts.parent(node)
    return node


def _builtin_set_of_one(facts: Facts, call: cst.Call) -> bool:
    return _builtin(facts, call.func, "set") and len(call.args) == 1 and call.args[0].keyword is None and \
        not call.args[0].star


def _builtin(facts: Facts, func: cst.BaseExpression, *names: str) -> bool:
    """Is `func` one of the builtins `names`, which no import, definition or assignment rebinds?"""
    if not isinstance(func, cst.Name) or func.value not in names or facts.qualify(func) is not None:
        return False
    ref = facts.ref(func)
    return ref is not None and not facts.writes(ref) and func.value not in facts.functions and \
        func.value not in facts.classes
