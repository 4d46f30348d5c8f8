"""Collectives every process must reach: barriers, all-reduces, DDP's forward and backward."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.syntax.names import dotted


@rule("DDP004")
def collective_on_some_ranks(ctx: Context) -> Iterator[Hit]:
    """A collective (`barrier`, `all_reduce`, a DDP forward or backward) that only some ranks reach.

    Wrong:

        import torch.distributed as dist
        if dist.get_rank() == 0:
            save_samples()
            dist.barrier()

    Right:

        import torch.distributed as dist
        if dist.get_rank() == 0:
            save_samples()
        dist.barrier()

    A collective returns when every process of the group has called it: one that only the
    processes passing `if rank == 0:` call waits forever (until the timeout kills the job). A
    DDP backward all-reduces gradients, and a DDP forward with gradients on synchronises
    buffers: under a rank test they hang the same way (evaluate through `model.module`, under
    `torch.no_grad()`). Found under an `if` that reads the rank, also through a function of this
    file that runs a collective, unless the other ranks reach the same call in the other branch
    or under another rank test (`if rank != 0: dist.barrier()` ... `if rank == 0:
    dist.barrier()`, "main process first").
    """
    if not ctx.distributed:
        return
    f = ctx.facts
    ddp_used = bool(ctx.ddp_refs)
    for call in f.calls:
        guard = ctx.rank_guard(call)
        if guard is None or ctx.undistributed(call):
            continue
        if ctx.is_collective(call):
            if not _paired(ctx, call, guard):
                yield Hit(call, f"`{_name(f, call)}` is a collective, but only the ranks where "
                                f"`{f.code(guard.test)}` holds reach it: the others never call it (deadlock)")
        elif ddp_used and f.is_backward(call) and _after_a_wrap(ctx, call):
            yield Hit(call, f"a DDP backward all-reduces gradients, but only the ranks where `{f.code(guard.test)}` "
                            "holds run it (deadlock)")
        elif ctx.holds_ddp(call.func) and not ctx.grad_disabled(call):
            yield Hit(call, f"a DDP forward with gradients on is a collective, but only the ranks where "
                            f"`{f.code(guard.test)}` holds run it: use `{f.code(call.func)}.module` under "
                            "torch.no_grad()")


def _after_a_wrap(ctx: Context, node: cst.CSTNode) -> bool:
    """May `node` run after a model is wrapped: a wrap in another function, or earlier in its own?"""
    f = ctx.facts
    return any(f.scope(m.anchor) is not f.scope(node) or f.before(m.anchor, node) for m in ctx.ddp_refs.values())


def _name(f, call: cst.Call) -> str:
    return f"{dotted(call.func) or f.code(call.func)}()"


def _paired(ctx: Context, call: cst.Call, guard: cst.If) -> bool:
    """Do the other ranks reach the same collective: in the other branch of `guard`, or under
    another rank test of the same function?"""
    f = ctx.facts
    key = _name(f, call)
    for other in f.calls_in(f.scope(call)) if isinstance(f.scope(call), cst.FunctionDef) else f.calls:
        if other is call or _name(f, other) != key or f.scope(other) is not f.scope(call):
            continue
        other_guard = ctx.rank_guard(other)
        if other_guard is not None and (other_guard is not guard or _branch(f, other, guard) != _branch(f, call, guard)):
            return True
    return False


def _branch(f, node: cst.CSTNode, guard: cst.If) -> bool:
    """Is `node` in the `if` branch (True) or the `else` branch (False) of `guard`?"""
    return f.is_inside(node, guard.body)


@rule("DDP005")
def data_dependent_exit(ctx: Context) -> Iterator[Hit]:
    """A `break` or `return` that some ranks take out of a loop that runs collectives: a hang.

    Wrong:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            if loss.item() < 0.01:
                break

    Right:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            done = torch.tensor(float(loss.item() < 0.01))
            dist.all_reduce(done)
            if done.item() > 0:
                break

    Each process sees its own shard, so its loss, metric or NaN check differs: the process that
    leaves the loop stops calling the backward's all-reduce and the others wait for it forever.
    A `continue` that skips the rest of a step before its backward does the same for one step
    (the ranks then pair different all-reduces, or hang).
    Decide together (`all_reduce` the flag, or ddpify_runtime's `agree_on(...)`). Conditions on
    arguments, counters, constants and `len()` of a loader are the same everywhere and fine.
    Found for loops that run a DDP backward or a collective, here or in a function they call.
    """
    if not ctx.distributed:
        return
    f = ctx.facts
    ddp_used = bool(ctx.ddp_refs)
    loops = {lp for lp in f.loops if (ddp_used and f.trains(lp)) or any(ctx.is_collective(c) for c in f.calls_in(lp.body))}
    seen = set()
    for exit_ in [*f.breaks, *f.returns, *f.continues]:
        if isinstance(exit_, cst.Continue) and not _skips_backward(f, exit_, loops):
            continue
        left = None
        for loop in f.enclosing_loops(exit_):
            if isinstance(exit_, (cst.Break, cst.Continue)):
                left = loop if loop in loops else None
                break
            if loop in loops:
                left = loop
        if left is None or ctx.undistributed(exit_):
            continue
        for anc in f.ancestors(exit_):
            if anc is left:
                break
            if isinstance(anc, cst.If) and anc not in seen and not ctx.same_everywhere(anc.test):
                seen.add(anc)
                if isinstance(exit_, cst.Continue):
                    yield Hit(anc.test, f"`{f.code(anc.test)}` can differ between ranks, and the `continue` it "
                                        "decides skips the backward's all-reduce on some ranks only: the others "
                                        "wait for it; agree on it first (all_reduce the flag)")
                    continue
                kind = "break" if isinstance(exit_, cst.Break) else "return"
                yield Hit(anc.test, f"`{f.code(anc.test)}` can differ between ranks, and the `{kind}` it decides "
                                    "leaves a loop that runs collectives: the ranks that stay wait forever; agree "
                                    "on it first (all_reduce the flag)")
    for loop in loops:
        if isinstance(loop, cst.While) and not ctx.same_everywhere(loop.test) and not mt.is_literal_true(loop.test):
            yield Hit(loop.test, f"`{f.code(loop.test)}` can differ between ranks and ends a loop that runs "
                                 "collectives: the ranks that stay wait forever; agree on it first")


def _skips_backward(f, cont: cst.Continue, loops) -> bool:
    """Does a backward of the innermost loop around `cont` come after it in the loop's body?"""
    loop = next(f.enclosing_loops(cont), None)
    return loop in loops and any(f.is_backward(c) and f.before(cont, c) for c in f.calls_in(loop.body))


@rule("DDP009")
def no_sync_backward_only(ctx: Context) -> Iterator[Hit]:
    """`with model.no_sync():` around the backward only: gradients are still all-reduced.

    Wrong:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        loss = criterion(model(x), y)
        with model.no_sync():
            loss.backward()

    Right:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        with model.no_sync():
            loss = criterion(model(x), y)
            loss.backward()

    DDP decides in its forward whether the next backward synchronises: `no_sync()` must enclose
    the forward too, or the accumulation steps all-reduce every time (no speed-up) and the
    gradients are not what the script means. Found for a `no_sync()` block that runs a
    backward but no call of the model.
    """
    f = ctx.facts
    for call in f.calls:
        if not mt.is_method_call(call, "no_sync") or not isinstance(f.parent(call), cst.WithItem):
            continue
        block = f.parent(f.parent(call)).body
        model = dotted(call.func.value)
        inside = f.calls_in(block)
        forwards = [c for c in inside if dotted(c.func) in (model, f"{model}.forward") or any(
            dotted(a.value) == model for a in c.args if f.user_functions(c))]
        if model and not forwards and any(f.is_backward(c) for c in inside):
            yield Hit(call, f"the forward of `{model}` runs outside `no_sync()`, so the backward in it still "
                            "all-reduces: put the forward inside the block too")


NONFINITE = frozenset({"isnan", "isinf", "isfinite"})


@rule("DDP018")
def step_on_some_ranks(ctx: Context) -> Iterator[Hit]:
    """A rank-local NaN/inf check that skips `optimizer.step()` on some ranks.

    Wrong:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        loss = criterion(model(x), y)
        loss.backward()
        if torch.isfinite(loss):
            optimizer.step()

    Right:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        loss = criterion(model(x), y)
        loss.backward()
        finite = torch.isfinite(loss).float()
        dist.all_reduce(finite, op=dist.ReduceOp.MIN)
        if finite.item() > 0:
            optimizer.step()

    The loss is each process's own: where it is NaN on one rank only, that rank skips the step
    and the others take it, and the replicas silently stop being the same model (DDP only
    synchronises gradients, not weights). Decide together, or test the gradients, which the
    backward already all-reduced. Found for an `optimizer.step()` under a test that calls
    `isnan`/`isinf`/`isfinite` on a value that can differ between ranks.
    """
    if not ctx.distributed or not ctx.ddp_refs:
        return
    f = ctx.facts
    optimizers = {f.ref(t, s) for t, v, s in f.assigns if v in f.optimizers}
    for call in f.calls:
        if not mt.is_method_call(call, "step") or f.ref(call.func.value) not in optimizers and \
                "optim" not in (dotted(call.func.value) or "").lower():
            continue
        for anc in f.ancestors(call):
            if isinstance(anc, cst.If) and not f.is_inside(call, anc.test) and any(
                    (dotted(c.func) or "").split(".")[-1] in NONFINITE for c in f.calls_in(anc.test)) \
                    and not ctx.same_everywhere(anc.test) and not _tests_gradients(f, anc.test):
                yield Hit(anc.test, f"`{f.code(anc.test)}` is this rank's own check: where it fails on some ranks "
                                    "only, they skip optimizer.step() and the replicas drift apart; agree on it first")
                break


def _tests_gradients(f, test: cst.BaseExpression) -> bool:
    """`p.grad`, `grad_norm`, a scaler's own check: values the backward already all-reduced."""
    return any("grad" in n.value.lower() for n in mt.findall(test, cst.Name)) or any(
        "grad" in a.attr.value.lower() for a in mt.findall(test, cst.Attribute))


@rule("DDP019")
def sync_on_wrong_micro_step(ctx: Context) -> Iterator[Hit]:
    """Gradient accumulation whose all-reduce lands on the wrong micro-step.

    Wrong:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        for micro_step in range(accum):
            loss = model(x).sum()
            model.require_backward_grad_sync = micro_step == accum - 1
            loss.backward()

    Right:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(net)
        for micro_step in range(accum):
            model.require_backward_grad_sync = micro_step == accum - 1
            loss = model(x).sum()
            loss.backward()

    DDP decides in its forward whether the coming backward all-reduces: a
    `require_backward_grad_sync` set after the forward acts one micro-step late, so the
    optimizer steps on gradients that were never averaged (each process trains its own model)
    or averages the wrong ones. Found for that flag set between the forward and the backward
    of a loop body; for a flag that can never be true (`micro_step == accum` in `for
    micro_step in range(accum)`); and for `no_sync()` entered on exactly the test that steps
    the optimizer (`model.no_sync() if (i + 1) % k == 0 else nullcontext()` ... `if (i + 1) % k
    == 0: optimizer.step()`), which is inverted.
    """
    if not ctx.ddp_refs:
        return
    f = ctx.facts
    for target, value, stmt in f.assigns:
        if not mt.is_attribute(target, "require_backward_grad_sync") or ctx.holds_ddp(target.value) is None:
            continue
        loop = next(f.enclosing_loops(stmt), None)
        if loop is None:
            continue
        model = dotted(target.value)
        body = f.calls_in(loop.body)
        if any(dotted(c.func) == model and f.before(c, stmt) for c in body) and any(
                f.is_backward(c) and f.before(stmt, c) for c in body):
            yield Hit(target, f"`{model}.require_backward_grad_sync` is set after `{model}`'s forward, which "
                              "already decided whether this backward all-reduces: set it before the forward")
        elif _never_true(f, value, loop):
            yield Hit(value, f"`{f.code(value)}` is never true in `for ... in {f.code(loop.iter)}`: the "
                             "gradients are never all-reduced; compare with the last micro-step")
    steps = {f.code(guard.test) for c in f.calls if mt.is_method_call(c, "step") and "optim" in f.code(c.func.value)
             for guard in [next((a for a in f.ancestors(c) if isinstance(a, cst.If)), None)]
             if guard is not None and f.is_inside(c, guard.body)}
    for call in f.calls:
        if mt.is_method_call(call, "no_sync") and ctx.holds_ddp(call.func.value) is not None:
            ifexp = f.parent(call)
            if isinstance(ifexp, cst.IfExp) and ifexp.body is call and f.code(ifexp.test) in steps:
                yield Hit(ifexp.test, f"`no_sync()` is entered when `{f.code(ifexp.test)}`, the very test that "
                                      "steps the optimizer: the steps use unsynchronised gradients; swap the branches")


def _never_true(f, value: cst.BaseExpression, loop) -> bool:
    """`i == n` where the loop is `for i in range(n)`: `i` stops at n - 1."""
    if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and mt.is_call_of(loop.iter, "range")
            and len(loop.iter.args) == 1):
        return False
    return isinstance(value, cst.Comparison) and len(value.comparisons) == 1 \
        and isinstance(value.comparisons[0].operator, cst.Equal) and mt.is_name(value.left, loop.target.value) \
        and f.code(value.comparisons[0].comparator) == f.code(loop.iter.args[0].value)
