"""Collectives every process must reach: barriers, all-reduces, DDP's forward and backward."""

from __future__ import annotations

from typing import Callable, Iterator

import libcst as cst

from ddpify.analysis.buffers import may_hold_buffers
from ddpify.analysis.call_branches import left_out
from ddpify.analysis.models import ACCELERATE_PREPARE, DDP, alone_in_its_group, prepares, unwrapped_before, unwraps
from ddpify.analysis.objects import of
from ddpify.analysis.ranks import _conjuncts as conjuncts
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Ref
from ddpify.syntax.names import dotted


@rule("DDP004", several=True)
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
    DDP backward all-reduces gradients, and a DDP forward with gradients on broadcasts the
    model's buffers from rank 0 (torch's `_pre_forward`: `require_forward_param_sync`, set by
    the wrap and by every forward with gradients, `broadcast_buffers`, and buffers to send):
    under a rank test they hang the same way (evaluate through `model.module`, under
    `torch.no_grad()`). After a training step, the next forward broadcasts the buffers
    (BatchNorm statistics) even under `no_grad`. A forward of a model without buffers
    broadcasts nothing, with gradients on or not (its one-time bucket rebuild after the first
    backward pairs with the other ranks' next training forward): so a DDP forward on rank 0
    alone (also of a model accelerate's `prepare` wrapped, under `inference_mode`) hangs, unless the wrap says
    `broadcast_buffers=False` (for `prepare`: the Accelerator is handed
    `DistributedDataParallelKwargs(broadcast_buffers=False)`) or wraps a torch.nn layer without buffers (an
    `nn.Linear` classifier) or a model of the program's classes that builds none (no
    `register_buffer`, no BatchNorm, no library's modules: a UNet of convolutions and GroupNorm).
    Library objects' collectives are known by what the object is: accelerate's `gather`/`reduce`
    and its `prepare` of a model (a DDP wrap again, which broadcasts rank 0's state), a sharded
    optimizer's `consolidate_state_dict()` (fairscale's OSS, torch's ZeroRedundancyOptimizer, also
    where its class is picked into a name first), ColossalAI's `booster.save_model` and
    `save_optimizer` (the plugin's checkpoint IO gathers every process's shards and writes on the
    master itself: every process calls them), Lightning's `trainer.save_checkpoint(path)` (the
    strategy ends it at a barrier), a strategy's `trainer.strategy.barrier()` / `broadcast(x)`,
    Fabric's `fabric.save(...)`, `barrier()`, `all_reduce(x)`, a torchmetrics metric's `compute()`
    and `sync()` (torchmetrics gathers every process's states there, also in a `compute` a program's
    subclass overrides; not a metric built with `sync_on_compute=False`, not a program's own
    `AverageMeter`) (what a broadcast or a reduction
    returns is the same everywhere: `if trainer.strategy.broadcast(flag):` is no rank test). Found under an `if` that reads the rank (not one proven
    the same everywhere: an entry of a configuration dict), or after an early `if rank != 0:
    return` of its function, also through a function of this file that runs a collective (eight
    calls deep, through the `forward` of the program's modules a call of one runs: an evaluator's
    `self.model(x)` whose layers, items of an `nn.ModuleList`, all-gather in their forward; not a
    forward's `if self.training:` branch where the module is called under `torch.no_grad()`),
    unless the other ranks reach the same collectives in the other branch (rank 0 broadcasts in
    `if rank == 0:`, the others receive in `else:`; also through a function of this file called
    or handed on there, as a closure to `optimizer.step`), after the `if` where the branch
    returns (`if rank != 0: dist.barrier(); return`, then rank 0's barrier in a `finally`), or
    under another rank test (`if rank != 0: dist.barrier()` ... `if rank == 0: dist.barrier()`,
    "main process first"; not where both lie inside one branch of an outer rank test, which the
    others never enter, nor in the bodies of two tests that share a conjunct reading the rank:
    `if is_master and args.eval_first: evaluate()` and `if is_master: evaluate()`). The entry of
    such a protocol of the program is itself a collective every rank must make (`with
    torch_distributed_zero_first(local_rank):`, a generator that barriers under a rank test before
    its `yield` and after it: `Ranks.takes_every_rank`): found where only some ranks enter it (after
    an early return of the others). A test of a function of the program, not called (`if
    is_main_process:`), is true on every rank: no rank test. Also found on the side of a file test where the file is missing
    (`if os.path.exists(path): load ... else: if rank == 0: download(url, path); dist.barrier()`)
    when that side makes files on some ranks (`Ranks.raced_file_test`): each process asks on its
    own, and one that asks after rank 0 has made the file never reaches the barrier; not where the
    other side runs the same collectives. A DDP forward is not found where the other branch of its
    rank test runs the same wrapper's forward as often (`if rank == 0: for b in tqdm(val_loader):
    model(b)` / `else: for b in val_loader: model(b)`: loops over the same iterables), nor where
    every DDP wrap of the script is over a process group of its own process alone
    (`process_group=dist.new_group(ranks=[rank])`): its forward and backward reach no other process.
    Nor is a backward found in a loop that reaches the wrapper only past it (`model.module(x)`, the
    program's unwrap method `self._get_model().compute_loss(batch)`): it all-reduces nothing.
    Nor is a DDP forward or backward found under a rank test on whose same side every wrap it may
    reach was built, over a process group the program names (`if local_rank < num_gpus: model =
    DDP(m, process_group=workers)` ... `model(x)` there): the ranks the test leaves out hold no
    wrapper and are no members of its group; a wrap over the default group, or one made before
    the test, is still found.
    """
    if not ctx.script.distributed:
        return
    f = ctx.facts
    ddp_used = bool(ctx.ddp_refs) and not ctx.ddp_alone  # a wrap over a group of its own process: no collective
    # a forward with gradients on broadcasts the buffers of a wrap that broadcasts them (of a wrap not
    # seen here: may); after a training step (a backward) the next one does, even under no_grad
    wraps = ctx.script.calls_of(DDP)
    broadcasting = any(_broadcasts_buffers(ctx, c) for c in wraps) or _prepare_broadcasts_buffers(ctx)
    grad_broadcasts = broadcasting or not wraps
    buffers = broadcasting and any(f.is_backward(c) for c in f.calls_named("backward"))
    for call in f.calls:
        guard = ctx.ranks.rank_guard(call)
        returned = guard is None and (guard := ctx.ranks.rank_return_guard(call)) is not None
        raced = ctx.ranks.raced_file_test(call) if ctx.ranks.is_collective(call) else None
        if raced is not None and not ctx.ranks.undistributed(call) and not _paired_across(ctx, call, raced):
            yield Hit(call, f"`{_name(f, call)}` is a collective, but only the ranks for which "
                            f"`{f.code(raced.test)}` finds no file reach it, and some rank makes that file there: "
                            "a rank that looks after it is made never calls it (deadlock)")
            continue
        if guard is None or ctx.ranks.undistributed(call):
            continue
        holds = "does not hold" if not returned and not f.is_inside(call, guard.body) else "holds"
        some = f"that return at `{f.code(guard.test)}`" if returned else f"where `{f.code(guard.test)}` {holds}"
        some = f"the ranks {'other than those ' if returned else ''}{some}"
        if ctx.ranks.is_collective(call) or ctx.ranks.takes_every_rank(call):
            if not _paired(ctx, call, guard):
                yield Hit(call, f"`{_name(f, call)}` is a collective, but only {some} reach it: the others never "
                                "call it (deadlock)")
        elif ddp_used and f.is_backward(call) and _after_a_wrap(ctx, call) and not _backward_past_the_wrapper(ctx, call) \
                and (returned or not _wrapped_on_the_same_side(ctx, call, None, guard)):
            yield Hit(call, f"a DDP backward all-reduces gradients, but only {some} run it (deadlock)")
        elif ctx.holds_ddp(call.func) and (_forward_across(ctx, call, guard) or not returned
                                            and _wrapped_on_the_same_side(ctx, call, call.func, guard)):
            continue  # the other ranks run the same forwards in the other branch, or hold no such wrapper
        elif ctx.holds_ddp(call.func) and not ctx.facts.grad_disabled(call):
            if grad_broadcasts and _has_buffers(ctx, call.func):
                yield Hit(call, f"a DDP forward with gradients on broadcasts the model's buffers (BatchNorm "
                                f"statistics), but only {some} run it (deadlock): use `{_bare(ctx, call.func)}` "
                                "under torch.no_grad()")
        elif ctx.holds_ddp(call.func) and buffers and _has_buffers(ctx, call.func):
            yield Hit(call, f"a DDP forward after a training step broadcasts the model's buffers (BatchNorm "
                            f"statistics), even under no_grad, but only {some} run it (deadlock): evaluate "
                            f"`{_bare(ctx, call.func)}`")
        elif not _called_across_branches(ctx, call, guard):
            for inner, given, chain in _forwards_of_given(ctx, call):
                no_grad = any(ctx.facts.grad_disabled(c) for c in (*chain, inner))
                trains = ddp_used and not no_grad and any(f.is_backward(c) for c in f.calls_in(f.scope(inner)))
                if trains or (buffers if no_grad else grad_broadcasts) and _has_buffers(ctx, given):
                    what = "and its backward all-reduce gradients" if trains else \
                        "with gradients on broadcasts the model's buffers (BatchNorm statistics)" if not no_grad \
                        else "after a training step broadcasts the model's buffers (BatchNorm statistics), even under no_grad"
                    yield Hit(call, f"`{_name(f, call)}` runs the forward of the DDP `{f.code(given)}` it is given: "
                                    f"a DDP forward {what}, but only {some} run it (deadlock): pass "
                                    f"`{f.code(given)}.module`")
                    break


def _forward_across(ctx: Context, call: cst.Call, guard: cst.If) -> bool:
    """Does the other branch of the rank test `guard` run the same DDP forward as often: a call of
    the same wrapper, with gradients on or off as `call`'s, inside loops over the same iterables
    (`if rank == 0: for b in tqdm(val_loader): model(b)` / `else: for b in val_loader: model(b)`,
    the same unsharded loader on every rank)? Then every rank runs the same forwards, each
    broadcast of the buffers has all its partners."""
    f = ctx.facts
    if not f.is_inside(call, guard) or guard.orelse is None:
        return False
    own, other_side = (guard.body, guard.orelse) if f.is_inside(call, guard.body) else (guard.orelse, guard.body)

    def loops(node: cst.CSTNode, side: cst.CSTNode) -> list[str] | None:
        found = []
        for anc in f.ancestors(node):
            if anc is side:
                return found[::-1]
            if isinstance(anc, cst.While):
                return None  # how often a while loop runs is not read here
            if isinstance(anc, cst.For):
                found.append(f.code(mt.strip_iteration(anc.iter)))
        return None

    mine = loops(call, own)
    return mine is not None and any(
        other is not call and f.is_inside(other, other_side) and f.code(other.func) == f.code(call.func)
        and ctx.holds_ddp(other.func) and f.grad_disabled(other) == f.grad_disabled(call)
        and loops(other, other_side) == mine for other in f.calls_in(other_side))


def _wrapped_on_the_same_side(ctx: Context, call: cst.Call, wrapper: cst.BaseExpression | None, guard: cst.If) -> bool:
    """Is every DDP wrap `wrapper` may hold (None: every wrap of the script, for a backward) made on
    the same side of the rank test `guard` as the forward or backward `call`, over a process group
    the program names (`process_group=nccl_group`, not None)?
    The ranks that test leaves out never build the wrapper, so they are no members of its group:
    the forward's broadcast waits for no rank that is not there (TGL's GPU workers, `if
    args.local_rank < args.num_gpus:` around both the wrap over `new_group(ranks=range(num_gpus))`
    and its forwards, the scheduler process outside). Not a wrap over the default group (a wrap
    there made on some ranks only is the hang itself), nor one made outside the test."""
    f = ctx.facts
    held = ctx.script.calls_of(DDP) if wrapper is None else of(f).values(wrapper)
    wraps = [s for s in held if isinstance(s, cst.Call) and f.qualify(s.func) == DDP]
    inside = f.is_inside(call, guard.body)
    return bool(wraps) and all(
        f.is_inside(w, guard) and not f.is_inside(w, guard.test) and f.is_inside(w, guard.body) == inside
        and (group := mt.keyword(w, "process_group")) is not None and not mt.is_name(group.value, "None")
        for w in wraps)


def _paired_across(ctx: Context, call: cst.Call, test: cst.If) -> bool:
    """Does the other side of `test` run the collectives `call` runs (a barrier on both sides)?"""
    f = ctx.facts
    other = test.orelse if f.is_inside(call, test.body) else test.body
    return other is not None and ctx.ranks.collectives_run(call) <= ctx.ranks.collectives_reached(other)


def _called_across_branches(ctx: Context, call: cst.Call, guard: cst.If) -> bool:
    """Is the function `call` runs also called in the other branch of the rank test `guard` (`if
    rank == 0: train(net, logger)` / `else: train(net, None)`)? Every process runs it then, and
    the forwards in it are made by all of them (`Ranks.parted_calls`)."""
    f = ctx.facts
    return any(ctx.ranks.parted_calls([call, other]) for func in f.user_functions(call) for other in f.entries(func)
               if other is not call and ctx.ranks.rank_guard(other) is guard)


def _bare(ctx: Context, wrapper: cst.BaseExpression) -> str:
    """How the program reaches the model inside `wrapper`: `model.module`, or where every wrap is
    accelerate's `prepare` (no wrapper on one process) `accelerator.unwrap_model(model)`."""
    owner = ctx.facts.code(wrapper)
    return f"accelerator.unwrap_model({owner})" if ctx.prepared_only else f"{owner}.module"


def _forwards_of_given(ctx: Context, call: cst.Call, depth: int = 6):
    """The forwards the functions of the program run on a DDP wrapper that `call` hands them
    (`evaluate(model, loader)` where `evaluate` calls `model(x)`, or hands it on to a helper that
    does: `sequence_logprobs(model, ids)` -> `model(ids)`), each with the argument of `call` and
    the calls it passed through; not after the function rebound it to its bare model (`model =
    accelerator.unwrap_model(model).eval()`), nor in a branch of the function that the call leaves out
    (`branches.left_out`: `synthesis(model, text)` with `backend="torch"` by default does not run
    its `if backend == "tf": model(x)`)."""
    f = ctx.facts

    def walk(call: cst.Call, given: Callable[[cst.BaseExpression], cst.BaseExpression | None], chain: tuple,
             depth: int, seen: frozenset):
        for func in f.user_functions(call):
            if func in seen:
                continue
            params = [p.name.value for p in (*func.params.posonly_params, *func.params.params,
                                              *func.params.kwonly_params)]
            held = {n: g for n in params if (a := f.argument_for(call, func, n)) is not None
                    and (g := given(a)) is not None}
            if not held:
                continue
            for inner in f.calls_in(func.body):
                if f.scope(inner) is not func or left_out(f, inner, func, call):
                    continue  # (a branch this call does not take: `backend == "tf"` of a call left at "torch")
                if isinstance(inner.func, cst.Name) and inner.func.value in held:
                    ref = f.ref(inner.func)
                    if ref is None or not unwrapped_before(f, ref, inner.func):  # (`model = model.module` first)
                        yield inner, held[inner.func.value], (*chain, call)
                elif depth > 0 and any(isinstance(a.value, cst.Name) and a.value.value in held for a in inner.args):
                    yield from walk(inner, lambda a, held=held: held.get(a.value) if isinstance(a, cst.Name) else None,
                                    (*chain, call), depth - 1, seen | {func})

    yield from walk(call, lambda a: a if ctx.holds_ddp(a) else None, (), depth, frozenset())


def _has_buffers(ctx: Context, wrapper: cst.BaseExpression) -> bool:
    """May the model inside this DDP wrapper hold buffers? Not where every model the object core
    traces into its wraps is a torch.nn layer without buffers (`DDP(nn.Linear(2048, 1000))`), or an
    instance of a class of the program that builds none (`buffers.builds_no_buffers`; also one of the
    classes a name picks, `model_cls(...)`, or built by its `from_pretrained`)."""
    f, objects = ctx.facts, of(ctx.facts)
    held = objects.values(wrapper)
    wraps = [s for s in held if isinstance(s, cst.Call) and f.qualify(s.func) == DDP and s.args]
    inner = [m for w in wraps for m in objects.values(w.args[0].value) if m not in wraps]  # `m = DDP(m)` names both
    prepared = [s for s in held if isinstance(s, cst.Call) and mt.is_method_call(s, *ACCELERATE_PREPARE)]
    if prepared:  # accelerate's wrap: the models the name holds besides what `prepare` hands back (and
        wraps += prepared  # its bare model again, `model = accelerator.unwrap_model(model)` to save)
        inner += [m for m in held if m not in prepared and not mt.is_method_call(m, "unwrap_model")]
    return not wraps or may_hold_buffers(f, inner)


def _broadcasts_buffers(ctx: Context, wrap: cst.Call) -> bool:
    """Does this DDP wrap broadcast buffers in its forward to other processes (the default,
    `broadcast_buffers=True`; not over a group of its own process alone, `alone_in_its_group`)?"""
    flag = mt.keyword(wrap, "broadcast_buffers")
    return (flag is None or not mt.is_name(flag.value, "False")) and not alone_in_its_group(ctx.facts, wrap)


def _prepare_broadcasts_buffers(ctx: Context) -> bool:
    """Does a model `accelerator.prepare` wraps broadcast buffers in its forward? accelerate builds
    its DistributedDataParallel with `broadcast_buffers=True` unless the program hands its
    Accelerator `DistributedDataParallelKwargs(broadcast_buffers=False)`."""
    f = ctx.facts
    if not any(isinstance(m.defined, (cst.Assign, cst.AnnAssign)) and m.defined.value is not None
               and prepares(f, m.defined.value) for m in ctx.ddp_refs.values()):
        return False
    return not any((f.qualify(c.func) or "").endswith(".DistributedDataParallelKwargs")
                   and (flag := mt.keyword(c, "broadcast_buffers")) is not None and mt.is_name(flag.value, "False")
                   for c in f.calls)


def _after_a_wrap(ctx: Context, node: cst.CSTNode) -> bool:
    """May `node` run after a model is wrapped: a wrap in another function, or earlier in its own?"""
    f = ctx.facts
    return any(f.scope(m.anchor) is not f.scope(node) or f.before(m.anchor, node) for m in ctx.ddp_refs.values())


def _name(f, call: cst.Call) -> str:
    return f"{dotted(call.func) or f.code(call.func)}()"


def _paired(ctx: Context, call: cst.Call, guard: cst.If) -> bool:
    """Do the other ranks reach the same collective: in the other branch of `guard`
    (`Ranks.matched_across_branches`), or under another rank test of the same function, or of
    the function that defines it (a closure whose rank 0 broadcasts a signal that the others
    receive in the caller's `else`)? Not in the same branch of another test that reads the same
    (`if rank <= 0: ... else: barrier()` twice: the same ranks again), nor where both lie in one
    branch of a rank test around `guard` (`if local_rank in [-1, 0] and ...:` holding `if
    local_rank not in [-1, 0]: barrier()` ... `if local_rank == 0: barrier()`: the ranks that
    test leaves out reach neither)."""
    if ctx.ranks.matched_across_branches(call, guard):
        return True
    f = ctx.facts
    key = _name(f, call)
    unit = _outermost_function(f, call)
    for other in f.calls_in(unit) if unit is not None else f.calls:
        if other is call or _name(f, other) != key or _outermost_function(f, other) is not unit:
            continue
        if _one_branch_of_an_outer_rank_test(ctx, call, other, guard):
            continue
        other_guard = ctx.ranks.rank_guard(other)
        if other_guard not in (None, guard) and not _same_ranks_again(ctx, call, guard, other, other_guard):
            return True
    return False


def _same_ranks_again(ctx: Context, call: cst.Call, guard: cst.If, other: cst.Call, other_guard: cst.If) -> bool:
    """Does `other` run on no rank that `call` leaves out: in the same branch of a test that reads
    the same, or in the bodies of two tests that share a conjunct reading the rank (`if is_master
    and args.validate_first: evaluate()` before the loop, `if is_master: evaluate()` in it): the
    ranks that conjunct leaves out reach neither call."""
    f = ctx.facts
    in_body, other_in_body = f.is_inside(call, guard.body), f.is_inside(other, other_guard.body)
    if f.code(other_guard.test) == f.code(guard.test) and in_body == other_in_body:
        return True
    if not (in_body and other_in_body):
        return False
    mine = {f.code(c) for c in conjuncts(guard.test) if ctx.ranks.rank_test(c)}
    return bool(mine & {f.code(c) for c in conjuncts(other_guard.test) if ctx.ranks.rank_test(c)})


def _one_branch_of_an_outer_rank_test(ctx: Context, call: cst.Call, other: cst.Call, guard: cst.If) -> bool:
    """Do `call` and `other` lie in one branch of a rank test around `guard` (its function's)?"""
    f = ctx.facts
    outer = ctx.ranks.rank_guard(guard)
    while outer is not None:
        if f.is_inside(other, outer) and f.is_inside(other, outer.body) == f.is_inside(call, outer.body):
            return True
        outer = ctx.ranks.rank_guard(outer)
    return False


def _outermost_function(f, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The outermost function around `node` (a closure and the function that defines it are one)."""
    found = None
    for anc in f.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            found = anc
        elif isinstance(anc, cst.ClassDef):
            break
    return found


@rule("DDP005", several=True)
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
    (the ranks then pair different all-reduces, or hang), or before a collective; not a backward
    of a loop that never reads the wrapper (its forward the bare model's, `model_without_ddp(x)`:
    its backward all-reduces nothing).
    Decide together (`all_reduce` the flag, or ddpify_runtime's `agree_on(...)`). Conditions on
    arguments, counters, constants and `len()` of a loader are the same everywhere and fine.
    Found for loops that run a DDP backward or a collective, here or in a function they call,
    and that every rank runs (not a loop under a rank test, or in a function every call of which
    is: no other rank is in it to wait); reported once per exit, at the innermost test around it
    that can differ. An `except` whose `try` runs the step's backward (of a loss the DDP model's
    forward made: it reads the wrapper, not only a fit of its own) or a collective is such a
    test (`try: loss = model(x); loss.backward() / except SkipBatch: continue`): one rank can raise
    alone. So is a `return` of a function that runs one step, before its backward, where every
    call of the function is in such a loop (`def train_step(x): ...; if not torch.isfinite(loss):
    return None; loss.backward()`). A loop that reaches the DDP wrapper only past it, through
    `.module` (`model.module.forward_vid(x)`, also in the functions it hands the wrapper to), runs
    no forward of the wrapper, so its backward all-reduces nothing: not such a loop by its
    backward alone; nor is a loop whose DDP model is wrapped over a process group of its own
    process alone (`process_group=dist.new_group(ranks=[rank])`, every wrap of the script so):
    its backward waits for no other process.
    """
    if not ctx.script.distributed:
        return
    f = ctx.facts
    ddp_used = bool(ctx.ddp_refs) and not ctx.ddp_alone  # a wrap over a group of its own process: no collective
    loops = {lp for lp in f.loops if (ddp_used and f.trains(lp) and not _past_the_wrapper(ctx, lp))
             or any(ctx.ranks.is_collective(c) for c in f.calls_in(lp.body))}
    seen = set()
    for exit_ in [*f.breaks, *f.returns, *f.continues]:
        if isinstance(exit_, cst.Continue) and not _skips_backward(ctx, exit_, loops) \
                and _handled_step(ctx, exit_, ddp_used) is None:
            continue
        left = None
        for loop in f.enclosing_loops(exit_):
            if isinstance(exit_, (cst.Break, cst.Continue)):
                left = loop if loop in loops else None
                break
            if loop in loops:
                left = loop
        if left is None or ctx.ranks.undistributed(exit_) or ctx.ranks.on_some_ranks(left):
            continue  # a loop only some ranks run: none of the others is in it to be left waiting
        for anc in f.ancestors(exit_):  # the innermost test that can differ decides: one finding per exit
            if anc is left or isinstance(anc, cst.If) and anc in seen:
                break
            if anc is _handled_step(ctx, exit_, ddp_used):
                kind = type(exit_).__name__.lower()
                yield Hit(anc, f"`{f.code(anc.type) if anc.type else 'except'}` catches an error a rank can raise "
                               f"alone in a step that runs collectives, and the `{kind}` in it leaves that step on "
                               "that rank only: the others wait for its all-reduce; agree on it first (all_reduce "
                               "a flag) or let the error stop every rank")
                break
            if isinstance(anc, cst.If) and not ctx.values.same_everywhere(anc.test):
                seen.add(anc)
                if isinstance(exit_, cst.Continue):
                    skipped = "a collective" if _skips_a_collective_only(ctx, exit_) else "the backward's all-reduce"
                    yield Hit(anc.test, f"`{f.code(anc.test)}` can differ between ranks, and the `continue` it "
                                        f"decides skips {skipped} on some ranks only: the others "
                                        "wait for it; agree on it first (all_reduce the flag)")
                    break
                kind = "break" if isinstance(exit_, cst.Break) else "return"
                yield Hit(anc.test, f"`{f.code(anc.test)}` can differ between ranks, and the `{kind}` it decides "
                                    "leaves a loop that runs collectives: the ranks that stay wait forever; agree "
                                    "on it first (all_reduce the flag)")
                break
    yield from _steps_left_early(ctx, loops, ddp_used)
    for loop in loops:
        if isinstance(loop, cst.While) and not ctx.values.same_everywhere(loop.test) and not mt.is_literal_true(loop.test):
            yield Hit(loop.test, f"`{f.code(loop.test)}` can differ between ranks and ends a loop that runs "
                                 "collectives: the ranks that stay wait forever; agree on it first")


def _steps_left_early(ctx: Context, loops, ddp_used: bool) -> Iterator[Hit]:
    """The `return`s of functions that run one training step of the DDP model, before the
    backward (`_step_left_early`)."""
    for ret in ctx.facts.returns if ddp_used else []:
        func = ctx.facts.scope(ret)
        if isinstance(func, cst.FunctionDef) and not ctx.ranks.undistributed(ret) and not any(
                ctx.facts.scope(lp) is func for lp in ctx.facts.enclosing_loops(ret)):
            yield from _step_left_early(ctx, ret, func, loops)


def _step_left_early(ctx: Context, ret: cst.Return, func: cst.FunctionDef, loops) -> Iterator[Hit]:
    """A `return` of a function that runs one training step, before its backward (`def
    train_step(x): loss = ...; if not torch.isfinite(loss): return None; loss.backward()`), where
    every call of the function is in a loop that runs collectives on every rank: a test that can
    differ sends some ranks back without the backward whose all-reduce the others wait in."""
    f = ctx.facts
    if not any(f.is_backward(c) and f.before(ret, c) for c in f.calls_in(func.body)):
        return
    sites = f.call_sites(func)
    if not sites or not all(any(lp in loops for lp in f.enclosing_loops(site)) and not ctx.ranks.on_some_ranks(site)
                            for site in sites):
        return
    for anc in f.ancestors(ret):
        if anc is func:
            return
        if isinstance(anc, cst.If) and not ctx.values.same_everywhere(anc.test):
            yield Hit(anc.test, f"`{f.code(anc.test)}` can differ between ranks, and the `return` it decides "
                                f"leaves `{func.name.value}` before its backward on some ranks only: the others "
                                "wait in that backward's all-reduce; agree on it first (all_reduce the flag)")
            return


def _handled_step(ctx: Context, exit_: cst.CSTNode, ddp_used: bool) -> cst.ExceptHandler | None:
    """The `except` handler `exit_` is in, inside its innermost loop, whose `try` runs a DDP backward
    (also in a function of the program it calls: `try: loss = trainer.train_step(x, y) / except
    RuntimeError: continue`) or a collective (`try: loss = model(x); loss.backward() / except
    SkipBatch: continue`): an exception one rank raises leaves the step there alone."""
    f = ctx.facts
    loop = next(f.enclosing_loops(exit_), None)
    for anc in f.ancestors(exit_):
        if anc is loop or isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return None
        if isinstance(anc, cst.ExceptHandler):
            try_ = f.parent(anc)
            if isinstance(try_, cst.Try) and (ddp_used and f.trains(try_.body) and _reaches_the_wrapper(ctx, try_.body)
                                              or any(ctx.ranks.is_collective(c) for c in f.calls_in(try_.body))):
                return anc
    return None


def _reaches_the_wrapper(ctx: Context, node: cst.CSTNode, depth: int = 3) -> bool:
    """Does `node` read a name that may hold the DDP wrapper, itself or in the functions of the
    program it calls (`depth` calls deep)? A `try` that trains something else (a polygon fit by
    gradient descent of its own, no DDP model in it) runs no backward that all-reduces."""
    f = ctx.facts
    seen: set[cst.CSTNode] = set()

    def reaches(body: cst.CSTNode, level: int) -> bool:
        if body in seen:
            return False
        seen.add(body)
        if any(ctx.holds_ddp(ref) is not None or _wrapper_stored_on_its_instance(ctx, ref)
               for ref in f.findall(body, (cst.Name, cst.Attribute))):
            return True
        return level > 0 and any(reaches(func.body, level - 1) for c in f.calls_in(body) for func in f.user_functions(c))

    return reaches(node, depth)


# what a read of the wrapper may do without running its forward
_NOT_A_FORWARD = frozenset({"isinstance", "hasattr", "getattr", "print", "len", "id", "type", "repr", "str"})


def _past_the_wrapper(ctx: Context, loop: cst.CSTNode, depth: int = 3) -> bool:
    """Does the loop reach the DDP wrapper only past it, through `.module` (`model.module.forward_vid(x)`,
    here or in the functions of the program it calls, a few calls deep), besides its own
    methods (`model.train()`, `model.parameters()`), and never call it (nor its `forward`), hand
    it to a call of another library, or pass it on otherwise? Then no forward of the wrapper
    prepares a reduction, and the loop's backward all-reduces nothing (the gradients are never
    averaged, which is a bug of its own): a step skipped on one rank leaves no other waiting.
    Needs one run of the model inside at least (`model.module(x)`, `model.module.encode(x)`: not its
    `state_dict()`), or of what the program's unwrap helper returns (`self._get_model().compute_loss(b)`
    of a method that returns `self.model.module`: `_runs_an_unwrapped_model`), so that the step is
    seen to compute its loss past the wrapper."""
    f = ctx.facts
    seen: set[cst.CSTNode] = set()
    through_module = False

    def past(node: cst.CSTNode, level: int) -> bool:
        nonlocal through_module
        if node in seen:
            return True
        seen.add(node)
        body = node.body if isinstance(node, (cst.FunctionDef, cst.For, cst.While)) else node
        for ref in f.findall(body, (cst.Name, cst.Attribute)):
            parent = f.parents.get(ref)
            if isinstance(parent, cst.Attribute) and parent.value is ref and ctx.holds_ddp(parent) is not None \
                    or ctx.holds_ddp(ref) is None:
                continue  # (the longer read is asked itself: `self.model` of `self`)
            if isinstance(parent, cst.Attribute) and parent.value is ref:
                if parent.attr.value == "forward":
                    return False
                through_module = through_module or parent.attr.value == "module" and _runs_the_inner_model(ctx, parent)
                continue
            arg = parent if isinstance(parent, cst.Arg) else None
            call = f.parents.get(arg) if arg is not None else None
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _NOT_A_FORWARD:
                continue
            if isinstance(call, cst.Call) and f.user_functions(call) and level > 0:
                continue  # the function it is handed is read below
            return False
        calls = f.calls_in(body)
        through_module = through_module or any(_runs_an_unwrapped_model(ctx, c) for c in calls)
        return level == 0 or all(past(func, level - 1) for c in calls for func in f.user_functions(c)
                                 if not unwraps(f, func))  # the unwrap helper hands back the bare model

    return past(loop, depth) and through_module


def _backward_past_the_wrapper(ctx: Context, backward: cst.Call) -> bool:
    """Is `backward` in a loop that reaches the DDP wrapper only past it (`_past_the_wrapper`: the
    loss from `self._get_model().compute_loss(batch)` of the program's unwrap method)? Its backward
    all-reduces nothing, so it waits for no other rank."""
    loop = next(ctx.facts.enclosing_loops(backward), None)
    return loop is not None and _past_the_wrapper(ctx, loop)


def _runs_an_unwrapped_model(ctx: Context, call: cst.Call) -> bool:
    """Is `call` a run of what the program's unwrap helper returns (`unwraps`): the bare model
    called (`get_model()(x)`) or a method of its own called on it (`self._get_model().compute_loss(b)`;
    not nn.Module's API, `get_model().state_dict()`)?"""
    f = ctx.facts
    inner = call.func
    if isinstance(inner, cst.Attribute):
        if ctx.module_api(inner.attr.value):
            return False
        inner = inner.value
    funcs = f.user_functions(inner) if isinstance(inner, cst.Call) else []
    return bool(funcs) and all(unwraps(f, func) for func in funcs)


def _runs_the_inner_model(ctx: Context, inner: cst.Attribute) -> bool:
    """Is `inner`, a wrapper's `.module`, called (`model.module(x)`) or a method of the model's own
    called on it (`model.module.forward_vid(x)`; not nn.Module's API, `model.module.state_dict()`)?"""
    f = ctx.facts
    parent = f.parents.get(inner)
    if isinstance(parent, cst.Call) and parent.func is inner:
        return True
    call = f.parents.get(parent) if isinstance(parent, cst.Attribute) and parent.value is inner else None
    return isinstance(call, cst.Call) and call.func is parent and not ctx.module_api(parent.attr.value)


def _skips_backward(ctx: Context, cont: cst.Continue, loops) -> bool:
    """Does a collective of the innermost loop around `cont` come after it in the loop's body, or a
    backward, in a loop that reads the DDP wrapper (`_reaches_the_wrapper`: a loop whose forward is
    the bare model's, `model_without_ddp(x)`, prepares no reduction, and its backward all-reduces
    nothing)?"""
    f = ctx.facts
    loop = next(f.enclosing_loops(cont), None)
    return loop in loops and (_skips_a_ddp_backward(ctx, cont) or any(
        ctx.ranks.is_collective(c) for c in f.calls_in(loop.body) if f.before(cont, c)))


def _wrapper_stored_on_its_instance(ctx: Context, read: cst.CSTNode) -> bool:
    """Is `read` a method's `self.x` where the program stores the DDP wrapper into `x` of an object
    that may be an instance of that class (`trainer.model = DDP(trainer.model, ...)` in the script,
    read as `self.model` in the trainer's `train`)?"""
    f = ctx.facts
    if not (isinstance(read, cst.Attribute) and mt.is_name(read.value, "self")) \
            or (cls := f.enclosing_class(read)) is None:
        return False
    flow = of(f)
    root = f._root_class(cls)
    return any((ctx.holds_ddp(value) is not None or value in ctx.script.calls_of(DDP)) and any(
        f._root_class(c) is root for site in flow.values(target.value) for c in flow.classes_built(site))
        for target, value in flow._attribute_stores.get(read.attr.value, ()) if target is not read)


def _skips_a_collective_only(ctx: Context, cont: cst.Continue) -> bool:
    """Does `cont` skip collectives of its loop but no backward (an evaluation loop's `all_reduce`)?"""
    f = ctx.facts
    loop = next(f.enclosing_loops(cont), None)
    after = [c for c in f.calls_in(loop.body) if f.before(cont, c)] if loop is not None else []
    return not any(f.is_backward(c) for c in after) and any(ctx.ranks.is_collective(c) for c in after)


def _skips_a_ddp_backward(ctx: Context, cont: cst.Continue) -> bool:
    """Does a backward come after `cont` in its innermost loop, a loop that reads the DDP wrapper?"""
    f = ctx.facts
    loop = next(f.enclosing_loops(cont), None)
    return loop is not None and any(f.is_backward(c) and f.before(cont, c) for c in f.calls_in(loop.body)) \
        and _reaches_the_wrapper(ctx, loop.body)


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
    gradients are not what the script means. Found for a `no_sync()` block (written in the
    `with`, picked by a conditional expression, or held in a name first) that runs a
    backward but no call of the model (a method of the same object that calls `self.model`,
    `self._step(batch)`, is one).
    """
    f = ctx.facts
    for with_, call in _no_sync_items(ctx):
        block = with_.body
        model = dotted(call.func.value)
        inside = f.calls_in(block)
        forwards = [c for c in inside if dotted(c.func) in (model, f"{model}.forward") or any(
            dotted(a.value) == model for a in c.args if f.user_functions(c)) or _method_runs(f, c, model)]
        if model and not forwards and any(f.is_backward(c) for c in inside):
            yield Hit(call, f"the forward of `{model}` runs outside `no_sync()`, so the backward in it still "
                            "all-reduces: put the forward inside the block too")


def _method_runs(f, call: cst.Call, model: str | None, depth: int = 2) -> bool:
    """Does `call`, a call of a method of the same object (`self._step(batch)`), run the model
    `self.model` it holds, in its body or in such a call of its own, `depth` calls deep?"""
    if not model or not model.startswith("self.") or not mt.is_attribute(call.func) or dotted(call.func.value) != "self":
        return False
    cls = f.enclosing_class(f.scope(call))
    for func in f.user_functions(call):
        if cls is None or f.enclosing_class(func) not in f.lineage(cls):
            continue
        inner = f.calls_in(func.body)
        if any(dotted(c.func) in (model, f"{model}.forward") for c in inner) or depth > 1 and any(
                _method_runs(f, c, model, depth - 1) for c in inner):
            return True
    return False


def _no_sync_items(ctx: Context):
    """(`with` statement, `no_sync()` call) for each `with` that may enter a `no_sync()`: written in the
    `with`, picked by a conditional expression (`model.no_sync() if accumulating else
    nullcontext()`), or held in a name first (`sync_context = ...; with sync_context:`)."""
    f = ctx.facts

    def entered(expr: cst.BaseExpression, depth: int = 3):
        if isinstance(expr, cst.Call) and mt.is_method_call(expr, "no_sync"):
            yield expr
        elif isinstance(expr, cst.IfExp) and depth:
            yield from entered(expr.body, depth - 1)
            yield from entered(expr.orelse, depth - 1)
        elif isinstance(expr, cst.Name) and depth and (ref := f.ref(expr)) is not None:
            for source in f.sources(ref):
                yield from entered(source, depth - 1)
    if not any(mt.is_method_call(c, "no_sync") for c in f.calls_named("no_sync")):
        return
    for node in f.parents:
        if isinstance(node, cst.With):
            for item in node.items:
                yield from ((node, call) for call in entered(item.item))


NONFINITE = frozenset({"isnan", "isinf", "isfinite"})


@rule("DDP018", several=True)
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
    if not ctx.script.distributed or not ctx.ddp_refs:
        return
    f = ctx.facts
    for call in f.calls:
        if call not in ctx.optimizer_steps:
            continue
        for anc in f.ancestors(call):
            if isinstance(anc, cst.If) and not f.is_inside(call, anc.test) and any(
                    (dotted(c.func) or "").split(".")[-1] in NONFINITE for c in f.calls_in(anc.test)) \
                    and not ctx.values.same_everywhere(anc.test) and not _tests_gradients(f, anc.test):
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
    == 0: optimizer.step()`), which is inverted, or left on another micro-step than the one that
    steps (`ctx = model.no_sync if i % k != 0 else nullcontext` ... `if (i + 1) % k == 0:`: the
    gradients are averaged on the first micro-step, the step takes the last ones unaveraged).
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
    steps = [guard.test for c in f.calls if c in ctx.optimizer_steps
             for guard in f.ancestors(c) if isinstance(guard, cst.If) and f.is_inside(c, guard.body)]
    for node in f.by_type[cst.Attribute]:  # `model.no_sync()`, or `model.no_sync` entered later
        ifexp = f.parent(f.parent(node)) if isinstance(f.parent(node), cst.Call) else f.parent(node)
        if not (mt.is_attribute(node, "no_sync") and isinstance(ifexp, cst.IfExp)):
            continue  # DDP's method (FSDP's means the same)
        if _entered_on_the_last_micro_step(ctx, ifexp, ifexp.body in (node, f.parent(node))):
            yield Hit(ifexp.test, f"`no_sync()` is entered on the last micro-step of `for ... in "
                                  f"{f.code(next(f.enclosing_loops(ifexp)).iter)}`, whose backward the "
                                  "optimizer step after the loop uses: the step takes gradients that were not "
                                  "averaged; enter no_sync() on the other micro-steps")
            continue
        if ifexp.body not in (node, f.parent(node)):
            continue
        if f.code(ifexp.test) in {f.code(t) for t in steps}:
            yield Hit(ifexp.test, f"`no_sync()` is entered when `{f.code(ifexp.test)}`, the very test that "
                                  "steps the optimizer: the steps use unsynchronised gradients; swap the branches")
            continue
        entered = _micro_step(f, ifexp.test)  # `i % k != 0`: synchronised where `i % k == 0`
        for test in steps if entered is not None and not entered[2] else ():
            stepped = _micro_step(f, test)
            if stepped is not None and stepped[2] and stepped[1] == entered[1] and stepped[0] != entered[0] \
                    and _same_loop(f, test, ifexp):
                yield Hit(ifexp.test, f"`no_sync()` is left when `{entered[0]} % {entered[1]} == 0`, but the "
                                      f"optimizer steps when `{f.code(test)}`: the step takes gradients that were "
                                      "not averaged; leave no_sync() on the micro-step that steps")
                break


def _entered_on_the_last_micro_step(ctx: Context, ifexp: cst.IfExp, in_body: bool) -> bool:
    """Is the `no_sync()` an inner loop picks per micro-step entered on its last one, when the
    optimizer steps after that loop (so the last backward is the one that must all-reduce)?

        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            ctx = model.no_sync() if last else nullcontext()                # entered on the last
            ctx = nullcontext() if i < len(parts) - 1 else model.no_sync()  # the same
            with ctx:
                model(part).sum().backward()
        optimizer.step()

    The test may be held in a name set in the loop (`last = ...`); a conjunct that does not
    count the micro-step (`multi_gpu and ...`) is the same on every one of them."""
    f = ctx.facts
    loop = next(f.enclosing_loops(ifexp), None)
    index = _loop_index(loop)
    if index is None or not any(c in ctx.optimizer_steps and f.before(loop, c)
                                and not f.is_inside(c, loop) and f.scope(c) is f.scope(loop) for c in f.calls):
        return False
    test = ifexp.test
    if isinstance(test, cst.Name) and (ref := f.ref(test)) is not None and len(sources := f.sources(ref)) == 1 \
            and f.is_inside(sources[0], loop.body):
        test = sources[0]
    parts = [test]
    while isinstance(parts[-1], cst.BooleanOperation) and isinstance(parts[-1].operator, cst.And):
        parts[-1:] = [parts[-1].left, parts[-1].right]
    senses = {sense for part in parts if (sense := _last_micro_step(f, part, index, loop)) is not None}
    return len(senses) == 1 and senses.pop() == in_body


def _loop_index(loop) -> str | None:
    """`i` of `for i, x in enumerate(xs)` or `for i in range(n)`."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
        return None
    if mt.is_call_of(loop.iter, "enumerate") and isinstance(loop.target, cst.Tuple) and loop.target.elements \
            and isinstance(loop.target.elements[0].value, cst.Name):
        return loop.target.elements[0].value.value
    if mt.is_call_of(loop.iter, "range") and len(loop.iter.args) == 1 and isinstance(loop.target, cst.Name):
        return loop.target.value
    return None


def _last_micro_step(f, test: cst.BaseExpression, index: str, loop: cst.For) -> bool | None:
    """`i == len(xs) - 1` -> True (the last micro-step); `i < len(xs) - 1`, `i != n - 1` -> False
    (the others); anything else -> None. `xs`/`n` is what the loop counts."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and mt.is_name(test.left, index)):
        return None
    operator, bound = test.comparisons[0].operator, test.comparisons[0].comparator
    counted = loop.iter.args[0].value
    last = f"len({f.code(counted)}) - 1" if mt.is_call_of(loop.iter, "enumerate") else f"{f.code(counted)} - 1"
    if f.code(bound).replace(" ", "") != last.replace(" ", ""):
        return None
    if isinstance(operator, cst.Equal):
        return True
    return False if isinstance(operator, (cst.LessThan, cst.NotEqual)) else None


def _same_loop(f, step: cst.CSTNode, entered: cst.CSTNode) -> bool:
    """The optimizer's step and the no_sync() test in one function, or in methods of one class
    (`train_epoch` enters no_sync(), `update_step` steps), counting the same names."""
    same = f.scope(step) is f.scope(entered) or (
        f.enclosing_class(step) is not None and f.enclosing_class(step) is f.enclosing_class(entered))
    names = [{n.value for n in mt.findall(t.left.left, cst.Name)} for t in (step, entered.test)]
    return same and names[0] == names[1]


def _micro_step(f, test: cst.BaseExpression) -> tuple[str, str, bool] | None:
    """`(i + 1) % k == 0` -> ("i + 1", "k", True); `i % self.k != 0` -> ("i", "k", False): the
    micro-step counted, the accumulation (by its last name), and whether it asks for the step."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, (cst.Equal, cst.NotEqual))
            and isinstance(test.comparisons[0].comparator, cst.Integer) and test.comparisons[0].comparator.value == "0"
            and isinstance(test.left, cst.BinaryOperation) and isinstance(test.left.operator, cst.Modulo)):
        return None
    counted, every = test.left.left, test.left.right
    while isinstance(counted, cst.Call) and mt.is_call_of(counted, "int") and counted.args:
        counted = counted.args[0].value
    return f.code(counted).strip("() "), (dotted(every) or f.code(every)).rpartition(".")[2], \
        isinstance(test.comparisons[0].operator, cst.Equal)


def _never_true(f, value: cst.BaseExpression, loop) -> bool:
    """`i == n` where the loop is `for i in range(n)`: `i` stops at n - 1."""
    if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and mt.is_call_of(loop.iter, "range")
            and len(loop.iter.args) == 1):
        return False
    return isinstance(value, cst.Comparison) and len(value.comparisons) == 1 \
        and isinstance(value.comparisons[0].operator, cst.Equal) and mt.is_name(value.left, loop.target.value) \
        and f.code(value.comparisons[0].comparator) == f.code(loop.iter.args[0].value)


@rule("DDP024", several=True)
def sum_not_averaged(ctx: Context) -> Iterator[Hit]:
    """A mean all-reduced with SUM and never divided by the number of processes.

    Wrong:

        import torch.distributed as dist
        import torch.nn.functional as F
        dist.init_process_group("nccl")
        loss = F.cross_entropy(model(x), y)
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        print(f"loss {reduced.item():.4f}")

    Right:

        import torch.distributed as dist
        import torch.nn.functional as F
        dist.init_process_group("nccl")
        loss = F.cross_entropy(model(x), y)
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        reduced /= dist.get_world_size()
        print(f"loss {reduced.item():.4f}")

    `all_reduce` sums by default: the mean loss (or accuracy) of N processes comes back N times
    too large, and the logged curve, the best-checkpoint test or the early stop that reads it
    changes with the number of GPUs. Divide by `dist.get_world_size()` or reduce with
    `op=dist.ReduceOp.AVG`. Found for a value that is a mean (a loss, `.mean()`, a quotient, its
    negation, what a function or method of the program returns where every `return` gives one:
    `pm.loss(x)` returning `-log_prob.mean()`, a running mean: `avg += loss / steps` from
    `avg = 0.0` or a zero tensor)
    all-reduced with the default or SUM op (also torch's `all_reduce` read off a module of the
    project that imports it: `ddp.all_reduce(cost)`), when nothing in its function divides it afterwards
    (also the number read out of it: `loss.item() / world_size`) or hands it to another function;
    a sum of counts (`correct`, `total`) is what SUM is for.
    """
    f = ctx.facts
    for call in ctx.script.calls_of("torch.distributed.all_reduce"):
        value = mt.positional(call, 0)
        op = mt.keyword(call, "op") or mt.positional(call, 1)
        if value is None or not isinstance(value.value, cst.Name) or op is not None and not (
                dotted(op.value) or "").endswith("SUM"):
            continue
        name, scope = value.value.value, f.scope(call)
        uses = [u for u in f.uses(name, scope) if u is not value.value]
        later = [u for u in uses if f.before(call, u)]
        if _a_mean(ctx, value.value) and later and not any(_divided_or_handed_on(ctx, u) for u in uses):
            yield Hit(call, f"`{name}` is a mean, and all_reduce sums it over the processes: it comes back "
                            f"multiplied by their number; divide by dist.get_world_size() (or op=ReduceOp.AVG)")


_KEEPS_VALUE = ("detach", "clone", "float", "double", "cpu", "cuda", "to")  # methods that return the same number


def _a_mean(ctx: Context, expr: cst.BaseExpression, depth: int = 8) -> bool:
    """Is `expr` a mean: `.mean()`, a quotient, its negation, what a loss function or an `nn.*Loss`
    object returns, or a function of the program each of whose returns is one, followed through
    names and `.detach()`, `.clone()`, `.float()`, or a running mean (`_running_mean`)?"""
    f = ctx.facts
    if depth == 0:
        return False
    if isinstance(expr, cst.BinaryOperation):  # a quotient, unless already by the number of processes
        return isinstance(expr.operator, cst.Divide) and not _world_size(ctx, expr.right)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):  # `-log_prob.mean()`
        return _a_mean(ctx, expr.expression, depth - 1)
    if isinstance(expr, cst.Call):
        if mt.is_method_call(expr, *_KEEPS_VALUE):
            return _a_mean(ctx, expr.func.value, depth - 1)
        qualified = f.qualify(expr.func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if mt.is_method_call(expr, "mean") or qualified == "torch.mean" or qualified.startswith(
                "torch.nn.functional.") and ("loss" in last or "entropy" in last):
            return True
        if qualified == "torch.tensor":
            return bool(expr.args) and _a_mean(ctx, expr.args[0].value, depth - 1)
        returned = [r for func in f.user_functions(expr) for r in f.returned(func)]
        if returned:  # `pm.loss(x)`: a method of the program every `return` of which gives a mean
            return all(_a_mean(ctx, r, depth - 1) for r in returned)
        return any(isinstance(o, cst.Call) and (f.qualify(o.func) or "").startswith("torch.nn.")
                   and (f.qualify(o.func) or "").endswith("Loss") for o in f.origins(expr.func))
    ref = f.ref(expr) if isinstance(expr, cst.Name) else None
    if ref is not None and _running_mean(ctx, ref, depth):
        return True
    sources = f.sources(ref) if ref is not None else []
    return bool(sources) and all(_a_mean(ctx, s, depth - 1) for s in sources)


def _running_mean(ctx: Context, ref: Ref, depth: int) -> bool:
    """Is the name a mean built up term by term: set to zero, then only added to, each term a
    quotient (not by the number of processes)?

        avg = 0.0                              # or torch.zeros(1), torch.tensor(0.0)
        for x, y in batches:
            avg += F.mse_loss(model(x), y) / steps     -> a mean: all_reduce sums it (DDP024)
        total = 0.0
        for x, y in batches:
            total += F.mse_loss(model(x), y).detach()  -> a sum of means, as SUM sums: no finding
    """
    writes = ctx.facts.writes(ref)
    return any(isinstance(stmt, cst.AugAssign) for _, _, stmt in writes) and all(
        isinstance(stmt.operator, cst.AddAssign) and _a_quotient(ctx, value, depth - 1)
        if isinstance(stmt, cst.AugAssign) else _zero(ctx, value) for _, value, stmt in writes)


def _zero(ctx: Context, expr: cst.BaseExpression) -> bool:
    """`0`, `0.0`, `torch.zeros(...)`, `torch.zeros_like(x)`, `torch.tensor(0.0)`."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value) == 0
    if not isinstance(expr, cst.Call):
        return False
    qualified = ctx.facts.qualify(expr.func)
    return qualified in ("torch.zeros", "torch.zeros_like") or qualified == "torch.tensor" and bool(expr.args) \
        and _zero(ctx, expr.args[0].value)


def _a_quotient(ctx: Context, expr: cst.BaseExpression, depth: int) -> bool:
    """Is `expr` a quotient not by the number of processes (`step_cost / num_steps`), followed
    through names and the calls that keep the value (`.detach()`, `.float()`)?"""
    if depth == 0:
        return False
    if isinstance(expr, cst.BinaryOperation):
        return isinstance(expr.operator, cst.Divide) and not _world_size(ctx, expr.right)
    if isinstance(expr, cst.Call) and mt.is_method_call(expr, *_KEEPS_VALUE):
        return _a_quotient(ctx, expr.func.value, depth - 1)
    ref = ctx.facts.ref(expr) if isinstance(expr, cst.Name) else None
    sources = ctx.facts.sources(ref) if ref is not None else []
    return bool(sources) and all(_a_quotient(ctx, s, depth - 1) for s in sources)


def _world_size(ctx: Context, expr: cst.BaseExpression) -> bool:
    """`dist.get_world_size()`, `args.world_size`, `int(os.environ["WORLD_SIZE"])`, `world_size`."""
    f = ctx.facts
    if mt.is_call_of(expr, "int", "float") and expr.args:
        expr = expr.args[0].value
    if isinstance(expr, cst.Call) and f.qualify(expr.func) == "torch.distributed.get_world_size":
        return True
    key = ctx.ranks.environment_key(expr)
    return key == "WORLD_SIZE" or (dotted(expr) or "").split(".")[-1] == "world_size"


_SAME_NUMBER = ("item", "detach", "cpu", "float", "double", "clone")


def _divided_or_handed_on(ctx: Context, use: cst.Name) -> bool:
    """Is this use of the value (before or after the reduce) a division (`x / n`, `x /= n`,
    `x.div_(n)`, also of the number read out of it or of a product of it: `x.item() / n`,
    `x.detach().cpu() / n`, `x * 1.0 / n`), or does it go somewhere this function cannot see (an
    argument of a call other than a print, a return, another name)?

    The product: axial-deeplab's `val_loss.update(loss * 1.0 / args.ngpus_per_node)` divides the
    sum right after the reduce; read as undivided before (the division's left side is `loss * 1.0`,
    not `loss`), as divided now. A product that nothing divides (`meter.update(loss * 100)`) is
    still the sum."""
    f = ctx.facts
    read, outer = use, f.parent(use)
    while True:
        if isinstance(outer, cst.Attribute) and outer.value is read and outer.attr.value in _SAME_NUMBER \
                and isinstance(call := f.parent(outer), cst.Call) and call.func is outer and not call.args:
            read, outer = call, f.parent(call)
        elif isinstance(outer, cst.BinaryOperation) and isinstance(outer.operator, cst.Multiply):
            read, outer = outer, f.parent(outer)
        else:
            break
    if read is not use and isinstance(outer, cst.BinaryOperation) and outer.left is read \
            and isinstance(outer.operator, (cst.Divide, cst.FloorDivide)):
        return True  # `loss.item() / world_size`, `loss * 1.0 / n`: the number read out of it, divided
    parent = f.parent(use)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Divide, cst.FloorDivide)) \
            or isinstance(parent, cst.AugAssign) and isinstance(parent.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
        return True
    if isinstance(parent, cst.Attribute) and parent.attr.value in ("div", "div_", "true_divide", "true_divide_"):
        return True
    return isinstance(parent, cst.Return) or isinstance(parent, cst.Assign) and parent.value is use \
        or isinstance(parent, cst.Arg) and not mt.is_call_of(f.parent(parent), "print") \
        and not ctx.ranks.is_collective(f.parent(parent))


# gathers to one process, each with the place and keyword of the list it fills on the destination
GATHERS = {"torch.distributed.gather": "gather_list", "torch.distributed.gather_object": "object_gather_list"}


@rule("DDP028", several=True)
def gather_list_on_every_rank(ctx: Context) -> Iterator[Hit]:
    """`dist.gather(t, gather_list)` on every rank: a ValueError on every rank but the destination.

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        t = torch.rand(4)
        out = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
        dist.gather(t, out, dst=0)

    Right:

        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        t = torch.rand(4)
        out = [torch.zeros_like(t) for _ in range(dist.get_world_size())] if dist.get_rank() == 0 else None
        dist.gather(t, out, dst=0)

    `gather` (and `gather_object`) fills the list on the destination process only, and checks
    that no other process passes one: every other process raises "Argument ``gather_list`` must
    NOT be specified on non-destination ranks" (the destination then waits for them until the
    timeout). Pass the list on the destination, None (or nothing) elsewhere. Found where the list
    handed (second by place, or `gather_list=` / `object_gather_list=`) can only hold a list with
    items (a list comprehension, a literal with elements, `[t] * n`, followed through names), in a
    call every process makes; not under a rank test (`if rank == 0: dist.gather(t, out)` beside
    `else: dist.gather(t)`), not one that holds None or `[]` on some way (`out if rank == 0 else
    None`, `gather_list = None` in the `else` of a rank test), nor a parameter whose value is not in view.
    """
    f = ctx.facts
    for call in ctx.script.calls_of(*GATHERS):
        keyword = next((k for name, k in GATHERS.items() if call in ctx.script.calls_of(name)), "gather_list")
        handed = mt.keyword(call, keyword) or mt.positional(call, 1)
        if handed is None or ctx.ranks.on_some_ranks(call):
            continue
        if _filled_list(f, handed.value):
            yield Hit(call, f"every rank hands `{f.code(handed.value)}` as the {keyword}: torch raises ValueError on "
                            "every rank but the destination; pass it there only (`... if rank == dst else None`)")


def _filled_list(f, expr: cst.BaseExpression, depth: int = 4) -> bool:
    """Can `expr` only hold a list with items: a list comprehension, a list literal with
    elements, `[t] * n` (or `n * [t]`), followed through names and both sides of a conditional
    expression? Not None, `[]`, a parameter or a call's value, whose contents are not in view."""
    if isinstance(expr, cst.IfExp):
        return depth > 0 and _filled_list(f, expr.body, depth - 1) and _filled_list(f, expr.orelse, depth - 1)
    if isinstance(expr, cst.ListComp):
        return True
    if isinstance(expr, cst.List):
        return bool(expr.elements)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return any(isinstance(side, cst.List) and side.elements for side in (expr.left, expr.right))
    if isinstance(expr, cst.Name) and depth > 0:
        ref = f.ref(expr)
        values = f.sources(ref) if ref is not None else []
        return bool(values) and all(_filled_list(f, v, depth - 1) for v in values)
    return False
