"""The DistributedDataParallel wrapper and the model inside it."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.analysis.models import WRAPPER


@rule("DDP008", fixable=True)
def wrapper_attribute(ctx: Context) -> Iterator[Hit]:
    """A custom attribute or method of the model read on the DDP wrapper.

    Wrong:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(RNN().cuda())
        hidden = model.init_hidden(batch_size)

    Right:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(RNN().cuda())
        hidden = model.module.init_hidden(batch_size)

    DistributedDataParallel answers nn.Module's own API (`parameters()`, `train()`, `to()`, ...)
    and passes calls to `forward`, nothing else: `model.init_hidden`, `model.num_classes` raise
    `AttributeError` once the model is wrapped. Reach them through `model.module`. An attribute
    the script sets on the wrapper itself (`model.class_weights = w`, `setattr(model, "w", w)`) is
    there to read. `--fix` adds `.module` where the name holds the wrapper on every path.
    """
    f = ctx.facts
    if not ctx.ddp_refs:
        return
    for attr in f.attributes:
        name = attr.attr.value
        if ctx.module_api(name):
            continue
        holds = ctx.holds_ddp(attr.value)
        if holds is None or _assigned(ctx, attr) or _probed(ctx, attr):
            continue
        owner = f.code(attr.value)
        yield Hit(attr, f"`{owner}` holds the DDP wrapper, which has no `{name}`: use `{owner}.module.{name}`",
                  _through_module(attr) if holds == WRAPPER else None)


def _assigned(ctx: Context, attr: cst.Attribute) -> bool:
    """`model.x = ...`, or a read of `model.x` where the script sets it on the same name (also
    with `setattr(model, "x", ...)`): an attribute of the wrapper, which works."""
    f = ctx.facts
    return any(target is attr for target, _, _ in f.assigns) or (
        f.ref(attr.value), attr.attr.value) in ctx.set_attributes


def _probed(ctx: Context, attr: cst.Attribute) -> bool:
    """Inside `hasattr(...)`/`getattr(...)` or a `try`: the script expects it may be missing."""
    for anc in ctx.facts.ancestors(attr):
        if isinstance(anc, cst.Call) and isinstance(anc.func, cst.Name) and anc.func.value in ("hasattr", "getattr"):
            return True
        if isinstance(anc, (cst.Try, cst.FunctionDef)):
            return isinstance(anc, cst.Try)
    return False


def _through_module(attr: cst.Attribute):
    def fix(edits) -> None:
        edits.replace(attr, lambda node: node.with_changes(value=cst.Attribute(value=node.value, attr=cst.Name("module"))),
                      "through `.module`")
    return fix
