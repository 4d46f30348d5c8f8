"""Which learning-rate schedules count their steps by the training data set's samples while they are
stepped once per batch of a sharded loader?

    total_steps = len(train_set) // batch_size * epochs          # the whole set's batches
    scheduler = OneCycleLR(optimizer, max_lr=0.1, total_steps=total_steps)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)   # sharded
    for epoch in range(epochs):
        for x, y in train_loader:
            ...
            scheduler.step()                                     # once per batch of this process's shard

Each process now draws about 1/world_size of the batches the count was made from, so the schedule
runs only that part of its course (a one-cycle schedule ends at its peak, a linear warm-up decay
never decays). Counted by the loader (`len(train_loader) * epochs`) the count shrinks with the shard:
right, and left alone; where a process's share is too small for the schedule's phases (OneCycleLR
divides by zero at 4 steps with `pct_start=0.25`), the runtime names the counts where it raises
(the self-check's `schedule-steps`), and a shard of no batch where it is made (`empty-shard`): the
data's size is known there, not here. `shard-data` names each found with a warning at the schedule.

The other way round, a schedule whose course is a fixed number of steps (`StepLR(opt, step_size=2000)`,
`MultiStepLR(opt, milestones=[30000, 60000])`, `CosineAnnealingLR(opt, T_max=10000)`, an
`ExponentialLR` decaying once per step) stepped once per batch of a sharded loader in a `for` over it
(an epoch is the loader's pass: 1/world_size as many steps as one process took) runs its course over
world_size times as many epochs: its changes come later, and the run may end before them.
`counted_in_steps` finds them where the counts read no `len(...)` (counted by the loader, they
shrink with it; by the data set, `counted_by_samples` names them); a training that ends by a count of
steps (`while step < n:` around the loop, `next(it)` in a loop of its own, a `break` of the loop's
own) takes as many steps as one process did, and is left alone.
`shard-data` names each with a warning at the step.
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.loaders import Loaders, drawn_from, loaders_of
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted


def counted_by_samples(facts: Facts, found: Loaders) -> list[tuple[cst.Call, cst.Call]]:
    """(the schedule built, the `len(data set)` its arguments count by) for each schedule stepped in
    a training loop over a sharded loader made over that data set."""
    made = objects.of(facts).loader_calls
    hits: dict[cst.Call, cst.Call] = {}
    for loop in found.sharded_loops:
        if not isinstance(loop, cst.For) or not facts.trains(loop):
            continue
        sharded = [c for c in loaders_of(facts, drawn_from(facts, loop.iter), made) if c in found.training]
        sets = {facts.code(a.value) for c in sharded if (a := mt.keyword(c, "dataset") or mt.positional(c, 0)) is not None}
        for step in facts.findall(loop.body, cst.Call) if sets else ():
            if not mt.is_method_call(step, "step"):
                continue
            for built in facts.origins(step.func.value):
                if isinstance(built, cst.Call) and built not in hits and _schedule(facts, built) and \
                        (length := _length_of(facts, built, sets)) is not None:
                    hits[built] = length
    return list(hits.items())


def _schedule(facts: Facts, call: cst.Call) -> bool:
    """`torch.optim.lr_scheduler.OneCycleLR(...)`, transformers' `get_linear_schedule_with_warmup(...)`."""
    name = facts.qualify(call.func) or dotted(call.func) or ""
    return name.startswith("torch.optim.lr_scheduler.") or "schedule" in name.rsplit(".", 1)[-1].lower()


def _length_of(facts: Facts, built: cst.Call, sets: set[str], depth: int = 3) -> cst.Call | None:
    """The `len(X)` of one of `sets` (or of a loader's `.dataset`) in the schedule's arguments, or in
    what the names they read were set to in their function (`total = len(ds) // bs * epochs`)."""
    todo: list[tuple[cst.CSTNode, cst.CSTNode, int]] = [(a.value, built, depth) for a in built.args]
    while todo:
        expr, at, left = todo.pop()
        for call in mt.findall(expr, cst.Call):
            if mt.is_name(call.func, "len") and len(call.args) == 1 and (
                    facts.code(call.args[0].value) in sets or mt.is_attribute(call.args[0].value, "dataset")):
                return call
        for name in mt.findall(expr, cst.Name) if left else ():
            ref = facts.ref(name, facts.statement(at))
            todo += [(value, stmt, left - 1) for _, value, stmt in (facts.writes(ref) if ref is not None else [])
                     if _numeric(facts, value)]
    return None


def _numeric(facts: Facts, value: cst.BaseExpression) -> bool:
    """A count written out: `len(ds) // bs * epochs`, `math.ceil(len(ds) / bs)`, `n`, `100`; not a
    loader or a sampler a name holds (whose arguments may count something else)."""
    if isinstance(value, cst.BinaryOperation):
        return _numeric(facts, value.left) and _numeric(facts, value.right)
    if isinstance(value, cst.Call):
        return (facts.qualify(value.func) or dotted(value.func) or "") in COUNTING
    return isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Integer, cst.Float))


COUNTING = frozenset({"len", "int", "round", "max", "min", "math.ceil", "math.floor", "numpy.ceil", "np.ceil"})


# the schedules whose course is a count of steps (ExponentialLR: one decay per step)
FIXED_STEPS = frozenset({
    "torch.optim.lr_scheduler.StepLR", "torch.optim.lr_scheduler.MultiStepLR",
    "torch.optim.lr_scheduler.CosineAnnealingLR", "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts",
    "torch.optim.lr_scheduler.CyclicLR", "torch.optim.lr_scheduler.LinearLR", "torch.optim.lr_scheduler.ConstantLR",
    "torch.optim.lr_scheduler.PolynomialLR", "torch.optim.lr_scheduler.ExponentialLR",
})


def counted_in_steps(facts: Facts, found: Loaders) -> list[tuple[cst.Call, cst.Call]]:
    """(the `scheduler.step()` call, the schedule built) for each schedule of `FIXED_STEPS` stepped
    in a training `for` loop over a sharded loader, whose arguments (and what the names they read
    were set to) count no `len(...)`."""
    made = objects.of(facts).loader_calls
    hits: dict[cst.Call, cst.Call] = {}
    for loop in found.sharded_loops:
        if not isinstance(loop, cst.For) or not facts.trains(loop) or _bounded_by_steps(facts, loop) or \
                not any(c in found.training for c in loaders_of(facts, drawn_from(facts, loop.iter), made)):
            continue
        for step in facts.findall(loop.body, cst.Call):
            if not mt.is_method_call(step, "step") or step in hits:
                continue
            for built in facts.origins(step.func.value):
                if isinstance(built, cst.Call) and (facts.qualify(built.func) or "") in FIXED_STEPS and \
                        not _counts_a_length(facts, built):
                    hits[step] = built
                    break
    return list(hits.items())


def _bounded_by_steps(facts: Facts, loop: cst.For) -> bool:
    """Does the training around `loop` end by a count of steps rather than by passes: a `while`
    around it (`while step < max_steps: for x, y in loader:`), or a `break` of its own (`if step >=
    max_steps: break`)? Each process then takes as many steps as one did."""
    node = facts.parent(loop)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.Module)):
        if isinstance(node, cst.While):
            return True
        node = facts.parent(node)
    return any(_loop_of(facts, b) is loop for b in facts.findall(loop.body, cst.Break))


def _loop_of(facts: Facts, node: cst.CSTNode) -> cst.CSTNode | None:
    """The innermost loop around `node`."""
    around = facts.parent(node)
    while around is not None and not isinstance(around, (cst.For, cst.While, cst.FunctionDef, cst.Module)):
        around = facts.parent(around)
    return around if isinstance(around, (cst.For, cst.While)) else None


def _counts_a_length(facts: Facts, built: cst.Call, depth: int = 3) -> bool:
    """Do the schedule's arguments, or what the names they read were set to in their function,
    read a `len(...)` (`step_size=len(train_loader) * 10`)?"""
    todo: list[tuple[cst.CSTNode, cst.CSTNode, int]] = [(a.value, built, depth) for a in built.args]
    while todo:
        expr, at, left = todo.pop()
        if any(mt.is_name(c.func, "len") for c in mt.findall(expr, cst.Call)):
            return True
        for name in mt.findall(expr, cst.Name) if left else ():
            ref = facts.ref(name, facts.statement(at))
            todo += [(value, stmt, left - 1) for _, value, stmt in (facts.writes(ref) if ref is not None else [])]
    return False
