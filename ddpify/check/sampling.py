"""How the data is split between processes."""

from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ddpify import matchers as mt
from ddpify.check.context import SAMPLER, Context
from ddpify.check.rule import Hit, rule
from ddpify.names import dotted

LOADER = "torch.utils.data.DataLoader"
EVALUATES = re.compile(r"eval|valid|test", re.I)  # names of functions that evaluate
TRAINS = re.compile(r"train|fit", re.I)


@rule("DDP002")
def sampler_without_set_epoch(ctx: Context) -> Iterator[Hit]:
    """A shuffling `DistributedSampler` whose epochs never call `set_epoch`.

    Wrong:

        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(train_set)
        loader = DataLoader(train_set, batch_size=32, sampler=sampler)
        for epoch in range(10):
            for x, y in loader:
                model(x).sum().backward()

    Right:

        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(train_set)
        loader = DataLoader(train_set, batch_size=32, sampler=sampler)
        for epoch in range(10):
            sampler.set_epoch(epoch)
            for x, y in loader:
                model(x).sum().backward()

    The sampler shuffles with a seed plus its epoch; without `set_epoch` the epoch stays 0 and
    every epoch visits the data in the same order, on every process. Found when a file that
    trains builds a sampler that shuffles and calls no `set_epoch` (torch's method or
    ddpify_runtime's `set_epoch(loader, epoch)`) anywhere. A sampler whose loader only evaluation
    reads (a loop that does not train, a function named for evaluation) is left alone: the order
    of an evaluation pass does not change its result.
    """
    f = ctx.facts
    if not f.has_training or any(mt.is_attribute(a, "set_epoch") for a in f.attributes) or any(
            mt.is_call_of(c, "set_epoch") for c in f.calls):
        return
    for call in ctx.calls_of(SAMPLER):
        shuffle = mt.keyword(call, "shuffle")
        if (shuffle is None or not mt.is_name(shuffle.value, "False")) and not _evaluation_only(ctx, call):
            yield Hit(call, "this DistributedSampler shuffles, but nothing calls its set_epoch(epoch): every epoch "
                            "sees the same order")


@rule("DDP003", fixable=True)
def shuffle_with_sampler(ctx: Context) -> Iterator[Hit]:
    """`DataLoader(..., shuffle=True, sampler=...)`: a `ValueError` at start-up.

    Wrong:

        from torch.utils.data import DataLoader, DistributedSampler
        loader = DataLoader(train_set, shuffle=True, sampler=DistributedSampler(train_set))

    Right:

        from torch.utils.data import DataLoader, DistributedSampler
        loader = DataLoader(train_set, sampler=DistributedSampler(train_set))

    A DataLoader takes its order from the sampler; `shuffle=True` next to `sampler=` (or
    `batch_sampler=`) raises "sampler option is mutually exclusive with shuffle". The
    DistributedSampler shuffles already (its `shuffle=True` default). `--fix` keeps the order of
    every configuration the script has: `shuffle=(sampler is None)` where the sampler may be
    `None` (a single process still shuffles), `shuffle=not distributed` for
    `sampler=DistributedSampler(ds) if distributed else None`, and removes `shuffle=True` where
    the sampler is always built.
    """
    f = ctx.facts
    for call in ctx.calls_of(LOADER):
        shuffle = mt.keyword(call, "shuffle")
        sampler = mt.keyword(call, "sampler") or mt.keyword(call, "batch_sampler")
        if shuffle is not None and mt.is_literal_true(shuffle.value) and sampler is not None \
                and not mt.is_name(sampler.value, "None"):
            yield Hit(shuffle, f"shuffle=True with {sampler.keyword.value}=: DataLoader raises ValueError; "
                               "the sampler decides the order", _shuffle_fix(f, call, shuffle, sampler.value))


def _shuffle_fix(f, call: cst.Call, shuffle: cst.Arg, sampler: cst.BaseExpression):
    """The fix that keeps every configuration's order, or None when none is known to."""
    if isinstance(sampler, cst.IfExp) and (mt.is_name(sampler.orelse, "None") or mt.is_name(sampler.body, "None")):
        test = f.code(sampler.test)  # `DistributedSampler(ds) if distributed else None`: the flag decides
        test = test if dotted(sampler.test) or isinstance(sampler.test, cst.Call) else f"({test})"
        return _set_shuffle(shuffle, f"not {test}" if mt.is_name(sampler.orelse, "None") else test)
    if isinstance(sampler, cst.Call) or dotted(sampler) and all(
            isinstance(o, cst.Call) for o in f.origins(sampler)) and f.origins(sampler):
        return _drop(call)  # always a sampler: the loader never shuffled by itself
    if dotted(sampler):
        return _set_shuffle(shuffle, f"({f.code(sampler)} is None)")
    return None


def _set_shuffle(shuffle: cst.Arg, value: str):
    def fix(edits) -> None:
        edits.replace(shuffle.value, lambda _: cst.parse_expression(value),
                      f"shuffle={value}: shuffles where there is no sampler")
    return fix


def _drop(call: cst.Call):
    def fix(edits) -> None:
        def without(node: cst.Call) -> cst.Call:
            args = [a for a in node.args if not (a.keyword is not None and a.keyword.value == "shuffle")]
            last = node.args[-1]
            if args and args[-1] is not last:  # the removed one was last: keep its closing layout
                args[-1] = args[-1].with_changes(comma=last.comma)
            return node.with_changes(args=args)
        edits.replace(call, without, "shuffle=True removed: the sampler shuffles")
    return fix


@rule("DDP010")
def padded_evaluation(ctx: Context) -> Iterator[Hit]:
    """Evaluation over a `DistributedSampler`, which pads the data with repeated samples.

    Wrong:

        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader, DistributedSampler
        val_loader = DataLoader(val_set, sampler=DistributedSampler(val_set, shuffle=False))
        correct = torch.zeros(1)
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum()
        dist.all_reduce(correct)

    Right:

        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader, Subset
        shard = Subset(val_set, range(dist.get_rank(), len(val_set), dist.get_world_size()))
        val_loader = DataLoader(shard, batch_size=256)
        correct = torch.zeros(1)
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum()
        dist.all_reduce(correct)

    To give every process the same number of samples, DistributedSampler repeats the first
    ones until the data set divides by the number of processes: 10,001 validation images on 8
    GPUs are scored as 10,008, and the metric is not the single-GPU number. Shard evaluation
    without padding (a strided `Subset`, summing counts with `all_reduce`), or evaluate the
    whole set on every process. Found for a sampler that does not drop the tail and whose loader
    only evaluation reads: loops here that do not train, or functions named for it
    (`evaluate(val_loader)`).
    """
    for call in ctx.calls_of(SAMPLER):
        drop = mt.keyword(call, "drop_last")
        if drop is not None and not mt.is_name(drop.value, "False"):
            continue
        if _evaluation_only(ctx, call):
            yield Hit(call, "DistributedSampler pads evaluation data with repeated samples until it divides by the "
                            "number of processes: metrics count them twice; shard without padding or evaluate "
                            "the whole set")


def _evaluation_only(ctx: Context, sampler: cst.Call) -> bool:
    """Is the loader of `sampler` read by evaluation only: loops here that do not train, or calls
    of functions named for evaluation, and nothing that trains?"""
    loops, passed = _readers(ctx, sampler)
    evaluated = [c for c in passed if EVALUATES.search(_called(c))]
    trained = any(ctx.facts.trains(loop) for loop in loops) or any(TRAINS.search(_called(c)) for c in passed)
    return bool(loops or evaluated) and not trained


def _called(call: cst.Call) -> str:
    return (dotted(call.func) or "").split(".")[-1]


def _readers(ctx: Context, sampler: cst.Call) -> tuple[list[cst.For], list[cst.Call]]:
    """The loops over the loaders that draw from `sampler` (here or in functions of this file they
    are passed to), and the calls they are passed to (`evaluate(val_loader, model)`, a function
    of another file, tells by its name)."""
    f = ctx.facts
    loaders = set()
    for call in ctx.calls_of(LOADER):
        arg = mt.keyword(call, "sampler") or mt.keyword(call, "batch_sampler")
        if arg is not None and any(f.is_inside(sampler, o) for o in f.origins(arg.value)):
            loaders |= {f.ref(t, s) for t, v, s in f.assigns if v is call}
    refs = {r for r in loaders if r is not None}
    for ref in list(refs):
        refs |= f.receivers(ref)
    loops = [lp for lp in f.loops if isinstance(lp, cst.For) and dotted(mt.strip_iteration(lp.iter))
             and f.ref(mt.strip_iteration(lp.iter)) in refs]
    passed = [c for c in f.calls if any(dotted(a.value) and f.ref(a.value) in refs for a in c.args)]
    return loops, passed
