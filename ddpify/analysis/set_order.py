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
a list, a dict or a generator, or by a `for` statement that stores or appends what it walks
(`for c in set(labels): index[c] = len(index)`), there or through a name bound to it whose every
use works alike on a dict's keys (`classes = set(labels)`, then `enumerate(classes)` and `c in
classes`).
`dict.fromkeys(x)` holds the same distinct items (its keys) in the order they first come, which is
the same in every process (shard-data's edit). A set only tested (`x in set(...)`,
`len(set(...))`), sorted (also once listed: `sorted(list(set(x)))`, or `xs = list(set(x))` then `xs.sort()`), combined with another, walked by a `for` statement that keeps nothing
(`print`), or kept in a name that is added to, combined, passed on or returned is left alone.
"""

from __future__ import annotations

import libcst as cst

from ddpify.syntax.facts import Facts

KEEPS_ORDER = ("list", "tuple", "enumerate")
COMPREHENSIONS = (cst.ListComp, cst.DictComp, cst.GeneratorExp)
APPENDS = ("append", "extend", "insert")


def taken_from_sets(facts: Facts) -> list[cst.Call]:
    """The `set(x)` calls whose iteration order the program keeps (see the module's docstring),
    also through a name they are bound to (`_named_sets`)."""
    found = [call for call in facts.calls if _builtin_set_of_one(facts, call) and _keeps_order(facts, call)]
    return found + [call for call in _named_sets(facts) if call not in found]


def _keeps_order(facts: Facts, node: cst.CSTNode) -> bool:
    """Is `node` listed, numbered or walked by a comprehension that builds a list, a dict or a generator?"""
    parent = facts.parent(node)
    holder = facts.parent(parent) if isinstance(parent, cst.Arg) else None
    if isinstance(holder, cst.Call) and holder.args[0] is parent and _builtin(facts, holder.func, *KEEPS_ORDER):
        return not _sorted(facts, holder)
    if isinstance(parent, cst.For) and parent.iter is node:
        return _collects(facts, parent)
    return isinstance(parent, cst.CompFor) and parent.iter is node and \
        isinstance(_comprehension(facts, parent), COMPREHENSIONS)


def _sorted(facts: Facts, listed: cst.Call) -> bool:
    """Is the list or tuple of a set sorted at once (`sorted(list(set(text)))`), or the list bound to
    a name that the next statement sorts in place (`seq = list(set(seq))`, then `seq.sort()`): its
    order then is the items' own, the same in every process?"""
    arg = facts.parent(listed)
    holder = facts.parent(arg) if isinstance(arg, cst.Arg) else None
    if isinstance(holder, cst.Call) and holder.args[0] is arg and _builtin(facts, holder.func, "sorted"):
        return True
    if not (isinstance(arg, cst.Assign) and arg.value is listed and len(arg.targets) == 1
            and isinstance(arg.targets[0].target, cst.Name)):
        return False
    line = facts.parent(arg)
    after = facts.following(line) if isinstance(line, cst.SimpleStatementLine) else []
    sort = after[0].body[0].value if after and isinstance(after[0], cst.SimpleStatementLine) and \
        isinstance(after[0].body[0], cst.Expr) else None
    return isinstance(sort, cst.Call) and isinstance(sort.func, cst.Attribute) and sort.func.attr.value == "sort" \
        and isinstance(sort.func.value, cst.Name) and sort.func.value.value == arg.targets[0].target.value


def _collects(facts: Facts, loop: cst.For) -> bool:
    """Does the loop's body keep what it walks in order: store into an item (`index[c] = len(index)`)
    or add to a list (`.append`, `.extend`, `.insert`)?"""
    stores = [t for a in facts.findall(loop.body, (cst.Assign, cst.AugAssign))
              for t in (a.targets if isinstance(a, cst.Assign) else [a])
              if isinstance(t.target, cst.Subscript)]
    return bool(stores) or any(isinstance(c.func, cst.Attribute) and c.func.attr.value in APPENDS
                               for c in facts.calls_in(loop.body))


def _named_sets(facts: Facts) -> list[cst.Call]:
    """`classes = set(labels)` ... `{c: i for i, c in enumerate(classes)}`: the `set(x)` calls a
    local or module-level name is bound to, where every value it is given is one, some use keeps its
    order, and every use works alike on `dict.fromkeys(x)`'s keys (listed, numbered, walked, sorted,
    counted, `in`); not a name that is added to, combined, passed on or returned."""
    found: list[cst.Call] = []
    for call in facts.calls:
        assign = facts.parent(call)
        if call in found or not _builtin_set_of_one(facts, call) or not isinstance(assign, cst.Assign) or \
                len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        target = assign.targets[0].target
        ref = facts.ref(target)
        writes = facts.writes(ref) if ref is not None else []
        values = [value for _, value, _ in writes]
        if not values or not all(isinstance(v, cst.Call) and _builtin_set_of_one(facts, v) for v in values):
            continue
        written = {id(t) for t, _, _ in writes}
        reads = [r for r in facts.references(facts.scope(call), target.value)
                 if id(r) not in written and facts.ref(r) == ref]
        if reads and all(_reads_alike(facts, r) for r in reads) and any(_keeps_order(facts, r) for r in reads):
            found += [v for v in values if isinstance(v, cst.Call)]
    return found


def _reads_alike(facts: Facts, read: cst.CSTNode) -> bool:
    """Does this use of a set work alike on a dict's keys: kept in order, walked, sorted, counted,
    or the right side of `in`?"""
    parent = facts.parent(read)
    holder = facts.parent(parent) if isinstance(parent, cst.Arg) else None
    if isinstance(holder, cst.Call) and holder.args[0] is parent and \
            _builtin(facts, holder.func, *KEEPS_ORDER, "sorted", "len"):
        return True
    if isinstance(parent, (cst.CompFor, cst.For)) and parent.iter is read:
        return True
    return isinstance(parent, cst.ComparisonTarget) and parent.comparator is read and \
        isinstance(parent.operator, (cst.In, cst.NotIn))


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
