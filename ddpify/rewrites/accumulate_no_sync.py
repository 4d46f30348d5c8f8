"""accumulate-no-sync: with gradient accumulation, all-reduce once per optimizer step.

    with torch.autocast(...):
        loss = criterion(model(x), y)
    scaler.scale(loss / accum_steps).backward()
    if (i + 1) % accum_steps == 0:
        scaler.step(optimizer)
->
    sync_step = (i + 1) % accum_steps == 0
    with nullcontext() if sync_step else model.no_sync():
        with torch.autocast(...):
            loss = criterion(model(x), y)
        scaler.scale(loss / accum_steps).backward()
    if sync_step:
        scaler.step(optimizer)

DDP all-reduces gradients in every backward; on the micro-steps that only accumulate, that
traffic is wasted. `no_sync()` must enclose the forward AND the backward of those steps.
Applied when the forward, the backward and the `if` that steps the optimizer sit in one
block, the optimizer steps nowhere else after the backward, and the condition does not depend
on what the forward computes. An `if` that only steps a scheduler is no accumulation boundary.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from ddpify import matchers as mt
from ddpify.names import dotted

NAME = "accumulate-no-sync"
SUMMARY = "skip the gradient all-reduce on accumulation micro-steps (model.no_sync())"

FLAG = "sync_step"


def rewrite(facts, edits, options) -> None:
    refs = facts.wrapped_refs
    for call in facts.calls:
        if not facts.is_backward(call):
            continue
        backward = facts.statement(call)
        block, body = facts.block(backward)
        if not isinstance(block, cst.IndentedBlock):
            continue
        after = body[body.index(backward) + 1:]
        step_if = next((s for s in after if isinstance(s, cst.If) and _steps_optimizer(facts, s)), None)
        model, first = _forward(facts, body[:body.index(backward)], refs)
        if step_if is None or model is None or any(_steps_optimizer(facts, s) for s in after
                                                   if not isinstance(s, cst.If)):
            continue  # no accumulation here: the optimizer steps after every backward
        span = body[body.index(first):body.index(backward) + 1]
        condition = step_if.test
        if _assigned_in(span, condition) or FLAG in _names(facts.module.code_for_node(condition)):
            continue
        edits.insert_before(first, cst.parse_statement(f"{FLAG} = {facts.module.code_for_node(condition)}\n"))
        for stmt in span:
            edits.enclose(stmt, f"with nullcontext() if {FLAG} else {model}.no_sync():")
        edits.replace(condition, lambda node: cst.Name(FLAG))
        edits.add_import("contextlib", "nullcontext")
        edits.record(first, f"gradients of `{model}` are all-reduced only on the micro-step that steps the "
                     "optimizer (no_sync on the others)")


def _steps_optimizer(facts, stmt) -> bool:
    """Does `stmt` step an optimizer (`optimizer.step()`, `scaler.step(optimizer)`), not merely
    a learning-rate scheduler?"""
    for call in facts.calls_in(stmt):
        if not m.matches(call.func, m.Attribute(attr=m.Name("step"))):
            continue
        for candidate in [call.func.value, *(a.value for a in call.args)]:
            if any(isinstance(o, cst.Call) and o in facts.optimizers for o in facts.origins(candidate)):
                return True
    return False


def _forward(facts, stmts, refs):
    """The wrapped model called in `stmts`, and the first statement that calls it."""
    for stmt in stmts:
        for call in facts.calls_in(stmt):
            ref = facts.ref(call.func) if dotted(call.func) else None
            if ref in refs:
                return dotted(call.func), stmt
    return None, None


def _assigned_in(stmts, condition) -> bool:
    names = {n.value for n in m.findall(condition, m.Name())}
    for stmt in stmts:
        for target in m.findall(stmt, m.AssignTarget()):
            if {n.value for n in m.findall(target, m.Name())} & names:
                return True
    return False


def _names(code: str) -> set[str]:
    return set(mt.IDENTIFIER.findall(code))
