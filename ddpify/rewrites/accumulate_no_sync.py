"""accumulate-no-sync: with gradient accumulation, all-reduce once per optimizer step.

    with torch.autocast(...):
        loss = criterion(model(x), y)
    scaler.scale(loss / accum_steps).backward()
    if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
        scaler.step(optimizer)
->
    sync_step = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
    with nullcontext() if sync_step else model.no_sync():
        with torch.autocast(...):
            loss = criterion(model(x), y)
        scaler.scale(loss / accum_steps).backward()
    if sync_step:
        scaler.step(optimizer)

DDP all-reduces gradients in every backward; on the micro-steps that only accumulate, that
traffic is wasted. `no_sync()` must enclose the forward AND the backward of those steps, and
is safe only if no gradient is used before a later backward has synchronised it: a step on
unsynchronised gradients trains a different model on each process, without an error.
So the loop is changed only when all of these hold, and left alone otherwise:
- the forward through the wrapped model, the backward and the `if` that steps the optimizer
  sit in one block;
- the `if`'s condition is a periodic counter test, the same on every process
  (`(i + 1) % k == 0`, `step % k == 0`, also `or`-ed with a last-batch test), and nothing
  between the forward and the `if` changes what it reads;
- nothing else that can run after an accumulating backward (the `if`'s `else`, the rest of
  the loop and of the loops around it, the functions they call) steps an optimizer, touches
  `.grad`, clips gradients or updates parameters in place: a hand-written step such as
  `p.add_(p.grad, alpha=-lr)` is a step, not an accumulation micro-step. Scheduler steps and
  `zero_grad()` are fine.

With `--strategy fsdp` the same micro-steps skip FSDP2's gradient reduce-scatter instead:

    with torch.autocast(...):
        loss = criterion(model(x), y)
    scaler.scale(loss / accum_steps).backward()
    if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
        scaler.step(optimizer)
->
    sync_step = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
    model.set_requires_gradient_sync(sync_step)
    with torch.autocast(...):
        loss = criterion(model(x), y)
    scaler.scale(loss / accum_steps).backward()
    if sync_step:
        scaler.step(optimizer)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.analysis.same_values import same_everywhere
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.syntax.facts import Facts, Ref
    from ddpify.analysis.models import Model
    from ddpify.options import Options

NAME = "accumulate-no-sync"
SUMMARY = "skip the gradient all-reduce on accumulation micro-steps (model.no_sync())"
REQUIRES = frozenset({"wrap-model"})  # `no_sync()` is the wrapper's: selected with it, skipped without it

FLAG = "sync_step"
STEPS = {"step", "unscale_"}  # optimizer methods that use gradients, and GradScaler's on an optimizer


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    refs = analysis.models.refs
    for call in facts.calls_named("backward"):
        if not facts.is_backward(call):
            continue
        backward = facts.statement(call)
        block, body = facts.block(backward)
        if not isinstance(block, cst.IndentedBlock):
            continue
        after = body[body.index(backward) + 1:]
        step_if = next((s for s in after if isinstance(s, cst.If) and _steps_optimizer(facts, s)), None)
        model, first = _forward(facts, body[:body.index(backward)], refs)
        if step_if is None or model is None or first is None:
            continue  # no accumulation here
        if _accumulates(facts, body[body.index(first):body.index(step_if)], backward, step_if):
            _skip_sync(facts, edits, model, body[body.index(first):body.index(backward) + 1], step_if.test,
                       options.fsdp)


def _accumulates(facts: Facts, leading: list[cst.CSTNode], backward: cst.CSTNode, step_if: cst.If) -> bool:
    """Is this real accumulation: a periodic `if` decides, from values it reads before the
    forward (nothing in `leading`, the statements from the forward to the `if`, changes them),
    and no other path uses the gradients of an accumulating backward?"""
    condition = step_if.test
    return _periodic(facts, condition) and not _assigned_in(leading, condition) \
        and FLAG not in mt.names_in(condition) \
        and not any(_uses_gradients(facts, s, step_if.body) for s in _runs_after(facts, backward))


def _skip_sync(facts: Facts, edits: Edits, model: str, span: list[cst.CSTNode], condition: cst.BaseExpression,
               fsdp: bool) -> None:
    """`sync_step = <condition>` above the forward, `span` (forward to backward) in
    `model.no_sync()` unless it holds (FSDP2: `model.set_requires_gradient_sync(sync_step)`
    before it), and the `if` tests `sync_step`."""
    first = span[0]
    edits.insert_before(first, cst.parse_statement(f"{FLAG} = {facts.code(condition)}\n"))
    edits.replace(condition, lambda node: cst.Name(FLAG))
    if fsdp:
        edits.insert_before(first, cst.parse_statement(f"{model}.set_requires_gradient_sync({FLAG})\n"))
        edits.record(first, f"gradients of `{model}` are reduce-scattered only on the micro-step that steps the "
                     "optimizer (set_requires_gradient_sync)")
        return
    for stmt in span:
        edits.enclose(stmt, f"with nullcontext() if {FLAG} else {model}.no_sync():")
    edits.add_import("contextlib", "nullcontext")
    edits.record(first, f"gradients of `{model}` are all-reduced only on the micro-step that steps the "
                 "optimizer (no_sync on the others)")


def _steps_optimizer(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Does `stmt` step an optimizer (`optimizer.step()`, `scaler.step(optimizer)`), not merely
    a learning-rate scheduler?"""
    for call in facts.calls_in(stmt):
        if not mt.is_method_call(call, "step") or not isinstance(call.func, cst.Attribute):
            continue
        for candidate in [call.func.value, *(a.value for a in call.args)]:
            if any(isinstance(o, cst.Call) and o in facts.optimizers for o in facts.origins(candidate)):
                return True
    return False


def _forward(facts: Facts, stmts: list[cst.CSTNode], refs: dict[Ref, Model]
             ) -> tuple[str | None, cst.CSTNode | None]:
    """The wrapped model called in `stmts`, and the first statement that calls it."""
    for stmt in stmts:
        for call in facts.calls_in(stmt):
            ref = facts.ref(call.func) if dotted(call.func) else None
            if ref in refs:
                return dotted(call.func), stmt
    return None, None


def _periodic(facts: Facts, condition: cst.BaseExpression) -> bool:
    """A counter test, the same on every process, true every k-th micro-step:
    `(i + 1) % k == 0`, possibly `or`-ed with more such tests (`i + 1 == len(loader)`)."""
    tests = _or_operands(condition)
    return same_everywhere(facts, condition) and any(_is_modulo_test(_unparenthesized(t)) for t in tests)


def _is_modulo_test(test: cst.BaseExpression) -> bool:
    """`x % k == 0`."""
    return isinstance(test, cst.Comparison) and isinstance(test.left, cst.BinaryOperation) \
        and isinstance(test.left.operator, cst.Modulo) and len(test.comparisons) == 1 \
        and isinstance(test.comparisons[0].operator, cst.Equal)


def _or_operands(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        return [*_or_operands(expr.left), *_or_operands(expr.right)]
    return [expr]


def _unparenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.with_changes(lpar=(), rpar=()) if expr.lpar else expr


def _runs_after(facts: Facts, backward: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of the backward's function that can run after it and before the next
    backward: those after it in each block around it, and the whole body of each loop around it."""
    found: list[cst.CSTNode] = []
    stmt = backward
    for anc in facts.ancestors(backward):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            break
        if isinstance(anc, (cst.IndentedBlock, cst.Module)):
            block: list[cst.CSTNode] = list(anc.body)
            found += block[block.index(stmt) + 1:]
        if isinstance(anc, (cst.For, cst.While)):
            found += anc.body.body
        if type(anc) in mt.STATEMENTS:
            stmt = anc
    return found


def _uses_gradients(facts: Facts, node: cst.CSTNode, skip: cst.CSTNode, depth: int = 2) -> bool:
    """Does running `node` (outside `skip`) step an optimizer, read or write `.grad`, clip
    gradients or update a parameter in place, here or in the functions it calls?"""
    def counts(n: cst.CSTNode) -> bool:
        return facts.is_inside(n, node) and not facts.is_inside(n, skip)

    if any(a.attr.value == "grad" and counts(a) for a in facts.findall(node, cst.Attribute)):
        return True
    params = _parameter_names(facts, node)
    if any(counts(s) and _is_parameter(s.target, params) for s in facts.findall(node, cst.AugAssign)):
        return True
    for call in facts.calls_in(node):
        if not counts(call):
            continue
        if _uses_gradients_call(facts, call, params):
            return True
        if depth and any(_uses_gradients(facts, f, skip, depth - 1) for f in facts.user_functions(call)):
            return True
    return False


def _uses_gradients_call(facts: Facts, call: cst.Call, params: set[str]) -> bool:
    """`optimizer.step()`, `scaler.unscale_(optimizer)`, `clip_grad_norm_(...)`, `p.data.add_(...)`;
    not a scheduler's `step()`, not `zero_grad()`."""
    method = (dotted(call.func) or "").rsplit(".", 1)[-1]
    if method.startswith("clip_grad"):
        return True
    if not isinstance(call.func, cst.Attribute):
        return False
    if method in STEPS:
        return not _is_scheduler(facts, call.func.value)
    return method.endswith("_") and not method.startswith("_") and _is_parameter(call.func.value, params)


def _is_scheduler(facts: Facts, receiver: cst.BaseExpression) -> bool:
    """A learning-rate scheduler: by its name, or built by `torch.optim.lr_scheduler`."""
    if "sched" in (dotted(receiver) or "").lower():
        return True
    origins = facts.origins(receiver)
    return bool(origins) and all(isinstance(o, cst.Call) and (facts.qualify(o.func) or "").startswith(
        "torch.optim.lr_scheduler.") for o in origins)


def _parameter_names(facts: Facts, node: cst.CSTNode) -> set[str]:
    """Names `node` binds to parameters: `for p in model.parameters():`."""
    loops = facts.findall(node, cst.For, lambda lp: isinstance(lp.iter, cst.Call) and mt.is_parameters_attr(lp.iter.func))
    return {n for loop in loops for n in mt.names_in(loop.target)}


def _is_parameter(expr: cst.BaseExpression, params: set[str]) -> bool:
    """`p`, `p.data` for a parameter `p`, or any `x.data`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        return True
    name = dotted(expr)
    return name is not None and name.split(".")[0] in params


def _assigned_in(stmts: list[cst.CSTNode], condition: cst.BaseExpression) -> bool:
    names = mt.names_in(condition)
    for stmt in stmts:
        targets: list[cst.AssignTarget | cst.AugAssign] = mt.findall(stmt, (cst.AssignTarget, cst.AugAssign))
        for target in targets:
            if mt.names_in(target.target) & names:
                return True
    return False
