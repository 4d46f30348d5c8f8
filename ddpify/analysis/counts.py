"""Counts of a sharded loader's batches that the program divides by, and the least each needs.

Sharded, `len(train_loader)` counts one process's batches: about 1/world_size of what the
single-GPU script counted. That is the right count for the program's own uses of it: steps per
epoch (`OneCycleLR(..., steps_per_epoch=len(loader))`), a progress bar's total, an average over an
epoch's batches, the last batch (`i == len(loader) - 1`). A count the program lowers by a constant
and divides by is one more thing: it holds only while each process has more batches than the
program takes away, and a process whose share is smaller divides by zero where the single process
did not (a learning-rate finder's `num = len(trn_loader) - 1`, then `(end / start) ** (1 / num)`,
with one batch per process):

    num = len(trn_loader) - 1          # trn_loader: a training loader, sharded
    mult = (final / init) ** (1 / num)
->  # TODO(ddpify): `len(trn_loader) - 1` ... needs at least 2 batches per process ...

Named (shard-data's TODO) where the lowered count (`len(L) - c`, `len(L) // c`) is a divisor or a
modulus, written there or read through a name its function binds to it; every other use of
`len()` of a sharded loader is left alone, as above.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.loaders import Loaders, loaders_of
from ddpify.syntax.facts import Facts

DIVIDING = (cst.Divide, cst.FloorDivide, cst.Modulo)


@dataclass(frozen=True)
class Count:
    """`len(loader) - 1` (`lowered`), divided by at `divided`; it needs `least` batches per process."""

    lowered: cst.BinaryOperation
    divided: cst.CSTNode
    least: int


def find(facts: Facts, fed: Loaders) -> tuple[Count, ...]:
    """The lowered counts of a sharded training loader's batches that the program divides by."""
    if not fed.training:
        return ()
    loader_calls = objects.of(facts).loader_calls
    found = []
    for call in facts.calls_named("len"):
        if not (isinstance(call.func, cst.Name) and call.func.value == "len" and len(call.args) == 1):
            continue
        lowered, least = _lowered(facts, call)
        if lowered is None or not any(c in fed.training for c in loaders_of(facts, call.args[0].value, loader_calls)):
            continue
        divided = _divisor_at(facts, lowered)
        if divided is not None:
            found.append(Count(lowered, divided, least))
    return tuple(found)


def _lowered(facts: Facts, call: cst.Call) -> tuple[cst.BinaryOperation | None, int]:
    """`len(L) - c` (it needs c + 1 batches to stay above 0) or `len(L) // c` (c batches), with c a
    positive whole number written out; (None, 0) for any other use of `len(L)`."""
    parent = facts.parent(call)
    if not isinstance(parent, cst.BinaryOperation) or parent.left is not call \
            or not isinstance(parent.right, cst.Integer):
        return None, 0
    c = int(parent.right.value, 0)
    if isinstance(parent.operator, cst.Subtract) and c > 0:
        return parent, c + 1
    if isinstance(parent.operator, cst.FloorDivide) and c > 1:
        return parent, c
    return None, 0


def _divisor_at(facts: Facts, expr: cst.BaseExpression) -> cst.CSTNode | None:
    """Where `expr` divides: the division it is the right side of (`x / (len(L) - 1)`), or one the
    name it is bound to (`num = len(L) - 1`) is the right side of in the same function (`1 / num`)."""
    if _divides(facts, expr):
        return facts.parent(expr)
    assign = facts.parent(expr)
    if not (isinstance(assign, cst.Assign) and assign.value is expr and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return None
    name = assign.targets[0].target.value
    return next((facts.parent(use) for use in facts.uses(name, facts.scope(assign))
                 if _divides(facts, use)), None)


def _divides(facts: Facts, expr: cst.CSTNode) -> bool:
    """Is `expr` the right side of `/`, `//` or `%`, or the value of `/=`, `//=`, `%=`?"""
    parent = facts.parent(expr)
    if isinstance(parent, cst.BinaryOperation):
        return parent.right is expr and isinstance(parent.operator, DIVIDING)
    return isinstance(parent, cst.AugAssign) and parent.value is expr and \
        isinstance(parent.operator, (cst.DivideAssign, cst.FloorDivideAssign, cst.ModuloAssign))
