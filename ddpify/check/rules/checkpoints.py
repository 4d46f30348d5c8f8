"""Checkpoints: written once, loadable without the wrapper."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.check.script import string_value
from ddpify.analysis.models import WRAPPER
from ddpify.syntax.names import dotted


@rule("DDP006", fixable=True)
def save_on_every_rank(ctx: Context) -> Iterator[Hit]:
    """`torch.save` on every rank.

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        torch.save(model.module.state_dict(), "model.pt")

    Right:

        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")

    Every process writes the same file at the same time: N times the I/O, and on a shared file
    system a reader can see a half-written or interleaved checkpoint. Save on rank 0. Found for a
    `torch.save` that runs on every process: not under a rank test, not after an early
    `if rank != 0: return`, and in a function that some call reaches on every process (or
    that is handed to `mp.spawn`). `--fix` puts it under `if not dist.is_initialized() or
    dist.get_rank() == 0:`.
    """
    if not ctx.distributed:
        return
    f = ctx.facts
    dist = ctx.spelled("torch.distributed")
    for call in ctx.calls_of("torch.save"):
        func = f.scope(call)
        if ctx.on_some_ranks(call) or isinstance(func, cst.FunctionDef) and not ctx.entry_point(func):
            continue
        stmt = f.statement(call)
        alone = mt.sole(stmt, cst.Expr) is not None and stmt.body[0].value is call
        fix = _guard(stmt, dist) if alone and dist is not None else None
        yield Hit(call, "every rank writes this checkpoint: save on rank 0 only", fix)


def _guard(stmt: cst.CSTNode, dist: str):
    def fix(edits) -> None:
        edits.guard(stmt, f"not {dist}.is_initialized() or {dist}.get_rank() == 0", "saved on rank 0 only")
    return fix


@rule("DDP007", fixable=True)
def save_wrapper(ctx: Context) -> Iterator[Hit]:
    """A checkpoint of the DDP wrapper (`module.` keys) instead of the model.

    Wrong:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(Net().cuda())
        torch.save(model.state_dict(), "model.pt")

    Right:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(Net().cuda())
        torch.save(model.module.state_dict(), "model.pt")

    The wrapper's `state_dict()` names every weight `module.<name>`: the checkpoint does not load
    into the plain model (evaluation, export, a single-GPU run) without renaming the keys, and
    `torch.save(model)` pickles the wrapper, which needs a process group to load. Save
    `model.module`. `--fix` adds `.module` where the name holds the wrapper on every path.
    """
    f = ctx.facts
    if not ctx.ddp_refs:
        return
    for call in ctx.calls_of("torch.save"):
        saved = mt.positional(call, 0)
        if saved is None:
            continue
        if dotted(saved.value):
            candidates = [saved.value]
        else:
            candidates = [c.func.value for c in f.calls_in(saved.value) if mt.is_method_call(c, "state_dict")]
        for expr in candidates:
            holds = ctx.holds_ddp(expr)
            if holds is None:
                continue
            what = "the DDP wrapper" if expr is saved.value else f"`{f.code(expr)}.state_dict()`, whose keys start with `module.`"
            yield Hit(expr, f"this checkpoint saves {what}: it does not load into the model itself; save "
                            f"`{f.code(expr)}.module`", _module_of(expr) if holds == WRAPPER else None)


def _module_of(expr: cst.BaseExpression):
    def fix(edits) -> None:
        edits.replace(expr, lambda node: cst.Attribute(value=node, attr=cst.Name("module")), "saves `.module`")
    return fix


@rule("DDP014")
def load_without_map_location(ctx: Context) -> Iterator[Hit]:
    """`torch.load` without `map_location` in a DDP script: every rank loads onto GPU 0.

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        state = torch.load("model.pt")

    Right:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        state = torch.load("model.pt", map_location="cpu")

    A checkpoint saved from GPU tensors remembers their device, `cuda:0`: loaded without
    `map_location`, every process allocates its copy on GPU 0 (out of memory there, and a CUDA
    context on GPU 0 for every process). Load to the CPU or to the process's own device. Found
    for a `torch.load` with neither `map_location` nor a second positional argument, in a
    script that uses torch.distributed; not where the other branch of its `if` loads with a
    `map_location` (the script chose: `if args.gpu is None: torch.load(path) else: ...`), nor for
    a file of this rank's own (`f"queue{rank}.pth"`), which comes back on the device it left.
    """
    if not ctx.distributed:
        return
    for call in ctx.calls_of("torch.load"):
        if not _maps(call) and not _chosen(ctx, call) and not _per_rank_file(ctx, call):
            yield Hit(call, "torch.load without map_location: every rank puts this checkpoint's GPU tensors on "
                            "GPU 0; pass map_location (\"cpu\" or this process's device)")


def _maps(call: cst.Call) -> bool:
    return mt.keyword(call, "map_location") is not None or mt.positional(call, 1) is not None \
        or mt.has_double_star(call)


def _chosen(ctx: Context, call: cst.Call) -> bool:
    """Is `call` in one branch of an `if` whose other branch loads the same file with a
    map_location?"""
    f = ctx.facts
    path = mt.positional(call, 0)
    for anc in f.ancestors(call):
        if isinstance(anc, cst.If) and anc.orelse is not None and path is not None:
            other = anc.orelse if f.is_inside(call, anc.body) else anc.body
            if any(f.qualify(c.func) == "torch.load" and _maps(c) and mt.positional(c, 0) is not None
                   and f.code(mt.positional(c, 0).value) == f.code(path.value) for c in f.calls_in(other)):
                return True
    return False


def _per_rank_file(ctx: Context, call: cst.Call) -> bool:
    """`torch.load(os.path.join(d, "queue" + str(args.rank) + ".pth"))`: each rank reads its own."""
    path = mt.positional(call, 0)
    return path is not None and any(ctx.rank_dependent(o) for o in ctx.facts.origins(path.value))


@rule("DDP017", bug=False)
def save_on_local_rank_zero(ctx: Context) -> Iterator[Hit]:
    """`torch.save` under a local-rank test: one writer per node.

    Wrong:

        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        if int(os.environ["LOCAL_RANK"]) == 0:
            torch.save(model.module.state_dict(), "model.pt")

    Right:

        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")

    `LOCAL_RANK` is 0 once on every node: with several nodes, several processes write the same
    file, which a shared file system sees half-written or interleaved. Save on global rank 0.
    Advice, because a job whose nodes each write to their own local disk means it.
    Found for a `torch.save` whose innermost rank test reads a name with `local_rank` in it.
    """
    if not ctx.distributed:
        return
    f = ctx.facts
    for call in ctx.calls_of("torch.save"):
        guard = _guard_of(ctx, call)
        if guard is not None and (any("local_rank" in (dotted(n) or "").lower()
                                      for n in mt.findall(guard.test, (cst.Name, cst.Attribute))) or any(
                string_value(s) == "LOCAL_RANK" for s in mt.findall(guard.test, cst.SimpleString))):
            yield Hit(call, f"saved under `{f.code(guard.test)}`, which holds once per node: on several nodes "
                            "several processes write this file; save on global rank 0")


def _guard_of(ctx: Context, node: cst.CSTNode, depth: int = 2) -> cst.If | None:
    """The rank test `node` runs under: its own, or that of every call of its function
    (`if self.local_rank == 0: self._save_snapshot(epoch)`)."""
    guard = ctx.rank_guard(node)
    func = ctx.facts.scope(node)
    if guard is not None or depth == 0 or not isinstance(func, cst.FunctionDef):
        return guard
    guards = [_guard_of(ctx, site, depth - 1) for site in ctx.facts.call_sites(func)]
    return guards[0] if guards and all(g is not None for g in guards) else None
