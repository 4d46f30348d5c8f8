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

from ddpify.analysis import objects
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


# statements whose body may run or be left out: a freeze under one of them is on the way to what
# follows only where that statement holds it too
BRANCHING = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


def frozen_where_used(facts: Facts, given: cst.BaseExpression, use: cst.CSTNode, depth: int = 3) -> bool:
    """Is the module `given` names wholly frozen where `use` runs (accelerate's `prepare(given)`,
    which wraps a module in DDP only where some parameter requires grad, and hands it back as it is
    otherwise): `given.requires_grad_(False)` of the same name above `use` in its function, on the
    way to it (in no branch or loop that does not hold `use` too), with nothing between that binds
    the name again or thaws a parameter, there or in a function of the program a call between runs
    (`depth` calls deep: `requires_grad_()` or `requires_grad_(True)`, `p.requires_grad = True`),
    and no walk of the module's parameters in that function (`given.parameters()`, what an
    optimizer of it or a loop that thaws some of it takes)?

        dit.requires_grad_(False); network.apply_to(dit); dit = accelerator.prepare(dit)   -> True
        dit.requires_grad_(False); dit.head.requires_grad_(True); dit = accelerator.prepare(dit)   -> False
        dit.requires_grad_(False); opt = AdamW(dit.parameters()); dit = accelerator.prepare(dit)  -> False
    """
    name = dotted(given)
    stmt, scope = facts.statement(use), facts.scope(use)
    if not name:
        return False
    for call in facts.calls_named("requires_grad_"):
        arg = mt.positional(call, 0) or mt.keyword(call, "requires_grad")
        if not (isinstance(call.func, cst.Attribute) and dotted(call.func.value) == name and arg is not None
                and mt.is_name(arg.value, "False")):
            continue
        freeze = facts.statement(call)
        if facts.scope(freeze) is not scope or not facts.before(freeze, stmt) or not _on_the_way(facts, freeze, stmt):
            continue
        between = [c for c in facts.calls_in(scope)
                   if facts.before(freeze, c) and facts.before(c, stmt) and not facts.apart(c, stmt)]
        rebound = any(name in _bound(target) for target, _, s in facts.assigns if facts.scope(s) is scope
                      and facts.before(freeze, s) and facts.before(s, stmt) and not facts.apart(s, stmt))
        if rebound or _thaws(facts, between, _span_assigns(facts, scope, freeze, stmt), depth):
            continue
        return not any(isinstance(c.func, cst.Attribute) and c.func.attr.value in PARAMETER_WALKS
                       and ((walked := dotted(c.func.value) or "") == name or walked.startswith(name + "."))
                       for c in facts.calls_in(scope))
    return False


def _on_the_way(facts: Facts, freeze: cst.CSTNode, stmt: cst.CSTNode) -> bool:
    """Does `freeze` run whenever `stmt` does: each branch, loop or `try` around it holds `stmt` too?"""
    return all(facts.is_inside(stmt, anc) for anc in facts.ancestors(freeze)
               if isinstance(anc, BRANCHING) and facts.scope(anc) is facts.scope(freeze))


def _bound(target: cst.BaseExpression) -> set[str]:
    """The dotted names an assignment target binds (`a`, `self.a`, each of `a, b`)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_bound(e.value) for e in target.elements))
    return {n} if (n := dotted(target)) else set()


def _span_assigns(facts: Facts, scope, first: cst.CSTNode, last: cst.CSTNode) -> list[tuple]:
    """The assignments of `scope` between `first` and `last`, but those in another branch of an `if`
    that holds `last`."""
    return [(t, v) for t, v, s in facts.assigns if facts.scope(s) is scope and facts.before(first, s)
            and facts.before(s, last) and not facts.apart(s, last)]


def _thaws(facts: Facts, calls: list[cst.Call], assigns: list[tuple], depth: int) -> bool:
    """Does any of `calls` or `assigns` make a parameter require grad: `x.requires_grad_()` of no
    argument or one not False, `p.requires_grad = <not False>`, or the same in a function of the
    program one of the calls runs (`depth` calls deep)?"""
    for target, value in assigns:
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and not mt.is_name(value, "False"):
            return True
    for call in calls:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_":
            arg = mt.positional(call, 0) or mt.keyword(call, "requires_grad")
            if arg is None or not mt.is_name(arg.value, "False"):
                return True
    if depth <= 0:
        return False
    seen: set[cst.FunctionDef] = set()
    for call in calls:
        callees = facts.user_functions(call) or (objects.of(facts).methods(call) if isinstance(call.func, cst.Attribute) else [])
        for func in callees:
            if func in seen:
                continue
            seen.add(func)
            inner_assigns = [(t, v) for t, v, s in facts.assigns if facts.is_inside(s, func)]
            if _thaws(facts, facts.calls_in(func), inner_assigns, depth - 1):
                return True
    return False
