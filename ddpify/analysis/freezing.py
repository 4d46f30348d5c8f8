"""Parameters a program freezes while it trains: where DistributedDataParallel is built already.

DDP registers a gradient hook on every parameter that requires one when it is built, and waits
at each step for all of them. A program that freezes some later, in its epoch loop (transfer
learning that freezes the backbone after a warm-up):

    for epoch in range(epochs):
        if epoch == warmup:
            for name, param in model.named_parameters():
                if name.startswith("body"):
                    param.requires_grad = False

stops at the next step ("Expected to have finished reduction in the prior iteration"), unless
DDP looks for unused parameters (`find_unused_parameters=True`, which wrap-model adds for the
reason `frozen_after_wrap` gives). Freezing before the wrap needs nothing: the wrap follows the
model's set-up, and DDP leaves out what is frozen then; nor does freezing the whole model
(`for p in D.parameters(): p.requires_grad = False` around a GAN's generator step).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted

PARAMETER_WALKS = frozenset({"parameters", "named_parameters", "children", "named_children", "modules",
                             "named_modules"})


def frozen_after_wrap(facts: Facts, name: str, after_wrap) -> str | None:
    """Why some parameters of the model held by `name` (`model`, `self.model`) may get no gradient
    in a step: a statement that freezes them where `after_wrap(stmt)` (`Model.sees_wrapper`) says
    the wrapper is built already; its code, or None."""
    for stmt, frozen in _freezes(facts):
        owner, chosen = _owner(facts, stmt, frozen)
        if owner is not None and (owner.startswith(name + ".") or owner == name and chosen) and after_wrap(stmt):
            return f"parameters of `{name}` are frozen after it is wrapped (`{facts.code(stmt).strip()}`)"
    return None


def _freezes(facts: Facts) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression]]:
    """Each statement that freezes, with what it freezes: `x.requires_grad = False` (x) and
    `x.requires_grad_(False)` (x)."""
    for target, value, stmt in facts.assigns:
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and mt.is_name(value, "False"):
            yield stmt, target.value
    for call in facts.calls_named("requires_grad_"):
        arg = mt.positional(call, 0) or mt.keyword(call, "requires_grad")
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_" and arg is not None \
                and mt.is_name(arg.value, "False"):
            yield facts.statement(call), call.func.value


def _owner(facts: Facts, stmt: cst.CSTNode, frozen: cst.BaseExpression) -> tuple[str | None, bool]:
    """The dotted name of the module whose parameters `frozen` reaches: itself (`model.body.weight`,
    `model.body`), or, for the variable of a loop around `stmt` over a walk of a module's parameters
    or sub-modules (`for name, p in model.named_parameters():`), that module; and whether an `if`
    in that loop chooses some of them (`if name.startswith("body"):`). A whole model frozen and
    thawed in turn (a GAN's critic around the generator's step) needs nothing: DDP runs it."""
    if isinstance(frozen, cst.Name):
        for loop in facts.enclosing_loops(stmt):
            if isinstance(loop, cst.For) and frozen.value in {n.value for n in facts.findall(loop.target, cst.Name)}:
                walk = loop.iter
                if isinstance(walk, cst.Call) and isinstance(walk.func, cst.Attribute) \
                        and walk.func.attr.value in PARAMETER_WALKS:
                    chosen = any(isinstance(anc, cst.If) for anc in _between(facts, stmt, loop))
                    return dotted(walk.func.value), chosen
                return None, False
    return dotted(frozen), False


def _between(facts: Facts, stmt: cst.CSTNode, loop: cst.For) -> Iterator[cst.CSTNode]:
    """The nodes that hold `stmt` inside `loop`."""
    for anc in facts.ancestors(stmt):
        if anc is loop:
            return
        yield anc
