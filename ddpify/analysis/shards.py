"""Which values each process draws from its own shard of the data.

A loader shards its data between the processes where its sampler hands each process its own
indices: a `DistributedSampler` given as `sampler=`/`batch_sampler=` (or stored into the mapping
the loader unpacks, `DataLoader(**data_args)` after `data_args["sampler"] = ...`), or a sampler
class of the program whose constructor reads the rank (`DistributedInfSampler(dataset)`, whose
`__init__` sets `rank = dist.get_rank()`). A batch a loop over such a loader draws differs
between the processes, and so does a value computed from it:

    for i, batch in enumerate(test_loader):           # a loader over a DistributedSampler
        scene = paths[batch["index"]]                  # this process's own scene
        open(f"{scene}.txt", "w")                      # a file no other process writes

Followed from the value read back to the loop's target: through the names of its function (5
steps), a parameter to the argument every call of the function passes (`depth` calls up; a call
in a function that nothing runs is not one), and an attribute of the instance (`self.x`, or its
entry `self.cache["indexes"]`) to what any method of its class stores there
(`self.cache["indexes"] = batch["indexes"]` in `step(self, batch)`, which the loop calls with
its batch). Not the loop's count (`i` of `enumerate`, the same on every process), the epoch, a
constant, nor the batch of a loader without such a sampler.

Asked by `ddpify check`'s DDP006 (a file named from a process's own shard is no file every
process writes; decisions 0161, 0234, 0241). The loaders each loop iterates are the object
core's (`ddpify.analysis.loaders.loaders_of`); the caller hands over the loader and sampler calls
it reads (check's `Script.calls_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, param_names
from ddpify.syntax.matchers import string_value


class Shards:
    """The sharded loaders of one program and the values drawn from them."""

    def __init__(self, facts: Facts, loader_calls: list[cst.Call], sampler_calls: list[cst.Call],
                 loops: Mapping[cst.For, frozenset[cst.Call]], rank_dependent: Callable[[cst.CSTNode], bool],
                 runs: Callable[[cst.FunctionDef], bool]) -> None:
        self.facts = facts
        self._loader_calls = loader_calls
        self._sampler_calls = frozenset(sampler_calls)
        self._loops = loops
        self._rank_dependent = rank_dependent
        self._runs = runs

    @cached_property
    def loaders(self) -> frozenset[cst.Call]:
        """The `DataLoader(...)` calls whose sampler hands each process its own indices."""
        f = self.facts
        found = set()
        for c in self._loader_calls:
            given = [a.value for a in (mt.keyword(c, "sampler"), mt.keyword(c, "batch_sampler")) if a is not None]
            given += [*f.unpacked_entries(c, "sampler", stored=True), *f.unpacked_entries(c, "batch_sampler", stored=True)]
            if any(isinstance(o, cst.Call) and (o in self._sampler_calls or self._rank_reading_sampler(o))
                   for g in given for o in f.origins(g)):
                found.add(c)
        return frozenset(found)

    def _rank_reading_sampler(self, call: cst.Call) -> bool:
        """A call of a class of the program whose constructor reads this process's rank."""
        f = self.facts
        inits = [stmt for cls in f.built_classes(call) for stmt in cls.body.body
                 if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__"]
        read: list[cst.CSTNode] = []
        for init in inits:
            read += mt.findall(init.body, cst.Name) + mt.findall(init.body, cst.Attribute)
        return any(self._rank_dependent(node) for node in read)

    def loops(self, node: cst.CSTNode) -> list[cst.For]:
        """The `for` loops around `node` (in their bodies) over a sharded loader."""
        f = self.facts
        sharded = self.loaders
        return [lp for lp in f.ancestors(node) if isinstance(lp, cst.For) and f.is_inside(node, lp.body)
                and not self._loops.get(lp, frozenset()).isdisjoint(sharded)]

    def drawn(self, at: cst.CSTNode, expr: cst.BaseExpression, depth: int = 2, steps: int = 5) -> bool:
        """Is `expr`, read at `at`, computed from a batch a loop over a sharded loader draws?"""
        return self._drawn(at, expr, depth, steps, frozenset())

    def _drawn(self, at: cst.CSTNode, expr: cst.BaseExpression, depth: int, steps: int, kept: frozenset) -> bool:
        f = self.facts
        targets = {n.value for lp in self.loops(at) for n in mt.findall(loop_draws(lp), cst.Name)}
        func = f.scope(at)
        seen: set[cst.CSTNode] = set()
        todo: list[tuple[cst.BaseExpression, int]] = [(expr, steps)]
        while todo:
            node, left = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            for stored, where in self._kept_on_self(node, kept):  # `self.cache["indexes"]` of another method
                if self._drawn(where, stored, depth, left, kept | {id(stored)}):
                    return True
            for n in [node] if isinstance(node, cst.Name) else mt.findall(node, cst.Name):
                if not isinstance(n, cst.Name) or (ref := f.ref(n)) is None or ref.scope is not func:
                    continue
                if n.value in targets:
                    return True
                if depth and isinstance(func, cst.FunctionDef) and n.value in param_names(func) \
                        and not f.writes(ref) and (sites := self._running_entries(func)) and all(
                            (arg := f.argument_for(site, func, n.value)) is not None
                            and self._drawn(site, arg, depth - 1, steps, kept) for site in sites):
                    return True
                if left:
                    todo += [(v, left - 1) for v in f.sources(ref) if f.scope(v) is func]
        return False

    def _running_entries(self, func: cst.FunctionDef) -> list[cst.Call]:
        """The calls that enter `func`, but for those in a function nothing runs (`run_eval` of a
        module no call reaches)."""
        f = self.facts
        return [s for s in f.entries(func) if not isinstance(scope := f.scope(s), cst.FunctionDef) or self._runs(scope)]

    def _kept_on_self(self, node: cst.CSTNode, kept: frozenset) -> list[tuple[cst.BaseExpression, cst.CSTNode]]:
        """For each `self.x` (or `self.x["key"]`) `node` reads in a method: what the methods of its
        class and of the classes it derives from or that derive from it store there (`self.x =
        value`, `self.x["key"] = value`; a bare `self.x` read takes its keyed stores too), each with
        the statement it is stored at."""
        f = self.facts
        cls = f.enclosing_class(node)
        if cls is None:
            return []
        family = set(f.lineage(cls)) | {c for c in f.classes.values() if cls in f.lineage(c)}
        found = []
        for attr in [node] if isinstance(node, cst.Attribute) else mt.findall(node, cst.Attribute):
            if not (isinstance(attr, cst.Attribute) and mt.is_name(attr.value, "self")):
                continue
            read = f.parent(attr)
            key = _key(read) if isinstance(read, cst.Subscript) and read.value is attr else None
            for stored, value, stmt in self._self_stores.get(attr.attr.value, ()):
                if id(value) in kept or f.enclosing_class(stmt) not in family:
                    continue
                if stored is None or key is None or stored == key:
                    found.append((value, stmt))
        return found

    @cached_property
    def _self_stores(self) -> dict[str, list[tuple[str | None, cst.BaseExpression, cst.CSTNode]]]:
        """`self.x = value` and `self.x["key"] = value` of the program: by attribute name, (the
        key, None for the attribute itself; the value; the statement)."""
        found: dict[str, list[tuple[str | None, cst.BaseExpression, cst.CSTNode]]] = {}
        for target, value, stmt in self.facts.assigns:
            if isinstance(stmt, cst.AugAssign):
                continue
            if isinstance(target, cst.Attribute) and mt.is_name(target.value, "self"):
                found.setdefault(target.attr.value, []).append((None, value, stmt))
            elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute) \
                    and mt.is_name(target.value.value, "self") and (key := _key(target)) is not None:
                found.setdefault(target.value.attr.value, []).append((key, value, stmt))
        return found


def loop_draws(loop: cst.For) -> cst.BaseExpression:
    """What a loop binds to the batches it draws: its target, but for the count of
    `for i, batch in enumerate(loader)` (the same on every process)."""
    target = loop.target
    if mt.is_call_of(loop.iter, "enumerate") and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        return target.elements[1].value
    return target


def _key(item: cst.Subscript) -> str | None:
    """The literal string an item is read or stored at (`cache["indexes"]`: "indexes")."""
    index = item.slice[0].slice if len(item.slice) == 1 else None
    return string_value(index.value) if isinstance(index, cst.Index) else None
