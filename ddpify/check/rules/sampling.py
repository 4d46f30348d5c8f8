"""How the data is split between processes."""

from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.draws import SEED_FAMILIES, order_draws
from ddpify.analysis.call_branches import passed_truth, trains_for
from ddpify.analysis.evaluation import keeps_only_its_last_batch, keeps_results_by_sample_key, trims_the_padding
from ddpify.analysis.lightning import LOADER_HOOKS, in_lightning_hook
from ddpify.analysis.loaders import SHARDING_WORDS, TrainingReads, bound_or_none_tested, drawing_from, iterated_once, \
    handed_for_its_epoch_only, loaders_of, samples_data
from ddpify.analysis.ranks import counts_this_nodes_gpus
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Ref, param_names
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.check.script import INIT, SAMPLER
from ddpify.syntax.names import dotted

LOADER = "torch.utils.data.DataLoader"
# libraries' subclasses of torch's DataLoader that take its `sampler=` and shuffle the same way (PyG's batching loaders)
LIBRARY_LOADERS = ("torch_geometric.loader.DataLoader", "torch_geometric.data.DataLoader")
EVALUATES = re.compile(r"eval|valid|test|(^|_)val($|_)", re.I)  # names of what evaluates (`val_sampler`)
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
    every epoch visits the data in the same order, on every process (a `set_epoch` of another
    sampler of the program, another script's, gives this one nothing; a sampler whose helper is
    handed `shuffle=False` by every call, `DistributedSampler(ds, shuffle=shuffle)`, does not
    shuffle). Found (also for a sampler
    class picked by a conditional expression: `(DistributedSampler if ddp else RandomSampler)(ds)`,
    and for a class of the program derived from DistributedSampler that keeps its `__iter__` or
    orders by `self.epoch` in its own)
    when a file that
    trains (or reads the sampler's loader in a loop inside another loop: the training step may
    live in another module) builds a sampler that shuffles and calls no `set_epoch` (torch's
    method or ddpify_runtime's `set_epoch(loader, epoch)`) anywhere; a sampler built in a helper
    of a module the file imports (`make_dataloader(cfg, is_train=True)`) is reported at the file's
    call of that helper (not a call that runs only when the script is not distributed: in a
    function called only in the `else` of the flag every process group starts under); one built where this file never calls (a trainer handed its loaders,
    also a dict of them copied onto it under their keys, `setattr(self, key, loaders[key])`) at
    the file's loop over the epochs that trains on its loader. A sampler whose loader only
    evaluation reads (a loop that does not train, a function named for evaluation, a sampler or
    loader named for it, `val_sampler`, also where a training function is handed it under such a
    name: `fit(model, train_loader, test_loader)`) is left alone: the order of an evaluation pass does not
    change its result. So is a call of a helper that builds the sampler and returns its loader
    (also in a tuple: `test_loader, n = build_loader("test")`, also through a helper that returns
    its call as it is: `return get_val_loader_inria(cfg)`; also a list of loaders over a
    `BatchSampler` of a sampler another helper builds, `make_data_loader(cfg, is_train=False)`; also a library's loader that takes the
    sampler as torch's does, deeplake's `data.pytorch(sampler=sampler)`) whose loader only evaluation reads,
    or nothing: the helper's call for training is still reported. Nor is a sampler handed to no call
    at all (no loader draws from it: a left-over `train_sampler` beside a loader that shuffles by
    itself, which DDP021 reports; an item of a dict read by its key is that key's sampler only,
    `sampler=samplers["train"]` takes no `samplers["val"]`, and a function of the program that
    never reads its parameter takes nothing). Nor is a sampler built in a `*_dataloader` hook of a Lightning data module
    or module (or a helper only those hooks call): Lightning's loop calls its `set_epoch`. Nor is
    one whose loader is read only in loops that run once (`for epoch in range(1):`, around the read
    or around every call of the function that reads it), or only by a loop over it that no loop
    repeats (at the script's top level, or in a function no call of which is in a loop), or only
    through an iterator made once there and drawn by `next()` (`it = enumerate(loader)` above the
    step loop, never made again): one epoch has no order to repeat.
    Also found: a `set_epoch` called only `if isinstance(sampler, DistributedSampler):` where the
    sampler is the project's own (a batch sampler class with a `set_epoch`, built to shuffle), which
    never passes the test; and a `set_epoch` that runs once, before the epochs (in no loop of a
    function that runs the epoch loop after it: `sampler.set_epoch(start_epoch)` above `for epoch in
    range(start_epoch, epochs):`; not a loop inside the loop over the loader, over a batch's metrics) where no epoch calls one (not one in a function each epoch calls,
    `run_epoch(...)`, nor beside a `set_epoch(epoch)` in the loop, or in a function of the program the
    loop runs: `trainer.train_epoch(epoch)` of another module).
    """
    f = ctx.facts
    yield from _set_epoch_behind_a_failing_type_test(ctx)
    epoch_sets = [*(a for a in f.attributes if mt.is_attribute(a, "set_epoch")),
                  *(c for c in f.calls if mt.is_call_of(c, "set_epoch"))]
    reported: set[cst.Call] = set()
    subclassed = [c for c in ctx.script.subclass_calls(SAMPLER) if _shuffles_by_epoch(ctx, c)]
    samplers = [*ctx.script.calls_of(SAMPLER), *subclassed]
    for call in samplers:
        shuffle = mt.keyword(call, "shuffle")
        if (shuffle is None or not mt.is_name(shuffle.value, "False") and passed_truth(f, shuffle.value) is not False) \
                and not _evaluation_only(ctx, call, True) \
                and (f.has_training or _epochs(ctx, call)) and not in_lightning_hook(f, call, LOADER_HOOKS) \
                and not _taken_by_nothing(ctx, call):
            sets = [s for s in epoch_sets if not _sets_other_samplers(ctx, s, call, samplers)]
            if sets:
                epochs = _epoch_loops(ctx, call)
                once = [s for s in sets if _before_the_epochs(f, s, epochs)]
                if epochs and len(once) == len(sets):
                    yield Hit(once[0], "this set_epoch runs once, before the epoch loop, and no epoch calls it: every "
                                       "epoch sees the same order; call it with the epoch at the top of each epoch")
                continue
            if not f.in_library(call):
                func = f.scope(call)
                sites = f.call_sites(func) if isinstance(func, cst.FunctionDef) else []
                if sites and not any(_built_for(f, call, func, site) for site in sites):
                    continue  # every call of its helper passes what skips it (`sampler_type=SamplerType.INFINITE`)
                if sites and all(_unread_or_evaluated_at(ctx, call, site) for site in sites
                                 if _built_for(f, call, func, site)):
                    continue  # every loader its helper makes goes to evaluation or to nothing
                if _read_in_one_epoch(ctx, call):
                    continue  # `for epoch in range(1):` around every read: no second epoch to reorder
                yield Hit(call, "this DistributedSampler shuffles, but nothing calls its set_epoch(epoch): every "
                                "epoch sees the same order")
                continue
            for site in _entry_calls(f, call):  # built in a helper of another module: where this file calls it
                if site not in reported and not _unread_or_evaluated_at(ctx, call, site) \
                        and not ctx.ranks.undistributed(site):  # (a call of a one-process run's function)
                    reported.add(site)
                    yield Hit(site, f"`{f.code(site.func)}(...)` builds a DistributedSampler that shuffles (in "
                                    f"`{f.scope(call).name.value}`), but nothing calls its set_epoch(epoch): every "
                                    "epoch sees the same order")
            entry = f.program.parts[0] if f.program is not None else None
            here = [site for site in _entry_calls(f, call, skipped=True)
                    if entry is None or f.program.part_of(site, f.parents) is entry]
            for loop in [] if here else _loops_drawing_from(ctx, call):  # handed in: where this file trains on it
                epochs = f.epoch_loop(loop)  # reported at the loop over the epochs, where set_epoch belongs
                at = epochs.iter if isinstance(epochs, cst.For) else epochs.test if epochs is not None else loop.iter
                if at not in reported:
                    reported.add(at)
                    yield Hit(at, f"this {'epoch ' if epochs is not None else ''}loop trains on a loader whose "
                                  f"DistributedSampler (built in `{f.scope(call).name.value}`) shuffles, but nothing "
                                  "calls its set_epoch(epoch): every epoch sees the same order")


def _sets_other_samplers(ctx: Context, epoch_set: cst.CSTNode, sampler: cst.Call, samplers: list[cst.Call]) -> bool:
    """Is `epoch_set` (`x.set_epoch`) a method of other samplers only: everything `x` may hold (the
    object core's values; for a loader's `loader.sampler`, what the loaders `loader` may hold are
    given as their sampler) is a sampler the program builds, `sampler` not among them (pretrain.py's
    `train_loader.sampler.set_epoch(epoch)` in the program of a main.py that also runs train.py's
    own sampler)? Not where what `x` holds is not known, nor ddpify_runtime's `set_epoch(loader, epoch)`."""
    if not isinstance(epoch_set, cst.Attribute):
        return False
    f = ctx.facts
    flow = objects.of(f)
    receiver = epoch_set.value
    if isinstance(receiver, cst.Attribute) and receiver.attr.value in ("sampler", "batch_sampler"):
        loaders = flow.values(receiver.value)
        if not loaders or not all(isinstance(c, cst.Call) and flow.kind(c) == objects.LOADER for c in loaders):
            return False
        given = [arg for c in loaders for arg in _sampler_args(f, c)]
        held = {o for arg in given for o in f.origins(arg)} if len(given) == len(loaders) else set()
    else:
        held = set(flow.values(receiver))
    return bool(held) and sampler not in held and all(site in samplers for site in held)


def _epoch_loops(ctx: Context, sampler: cst.Call) -> list[cst.For | cst.While]:
    """The epoch loops of the loaders drawing from `sampler`: the loops that hold a read of such a
    loader (a loop over it, a call it is handed to: `train_epoch(model, loader)`) and are not that
    read themselves (`for epoch in range(epochs):` around `for x in loader:`), nor inside one (`for k, v in
    metrics.items():` in the batch loop, logging `epoch * len(loader) + i`: a loop of each batch)."""
    f = ctx.facts
    loops, passed = _readers(ctx, sampler)
    return [outer for read in [*loops, *passed] for outer in f.enclosing_loops(read)
            if outer not in loops and not any(f.is_inside(outer, lp.body) for lp in loops)]


def _read_in_one_epoch(ctx: Context, sampler: cst.Call) -> bool:
    """Is the loader of `sampler` read only inside loops that run once (`for epoch in range(1):`,
    `range(0, 1)`: a literal count of one), a loop over it in a function every call of which lies in
    such a loop? Or only by loops over it that no loop repeats: a `for x in loader:` in no loop, at
    the top level of the script or in a function every call of which is in no loop (also of its
    callers, up to the script's top level; not a function nothing here calls, which a launcher
    may start, nor a call the loader is handed to, which may loop over the epochs itself)? Then
    there is one epoch, and `set_epoch(0)` would give the order the sampler already draws:
    nothing to reorder.

    Also where the loader is read only through iterators made once per run and drawn by `next()`
    (`loaders.iterated_once`: `it = enumerate(loader)` above `for step in range(num_steps):
    batch = it.__next__()`): one pass, however many steps draw from it.

    Before: a tutorial's `for i, (x, y) in enumerate(train_loader):` at the top level of the
    script, its one pass over the data, was "nothing calls its set_epoch(epoch)" (DDP002); now a
    single pass is one epoch."""
    f = ctx.facts
    loops, passed = _readers(ctx, sampler)

    def once(node: cst.CSTNode, depth: int = 2) -> bool:
        if any(_runs_once(lp) for lp in f.enclosing_loops(node)):
            return True
        func = f.scope(node)
        sites = f.call_sites(func) if isinstance(func, cst.FunctionDef) and depth else []
        return bool(sites) and all(once(site, depth - 1) for site in sites)

    def unrepeated(node: cst.CSTNode, depth: int = 3) -> bool:
        if next(f.enclosing_loops(node), None) is not None:
            return False
        func = f.scope(node)
        if isinstance(func, cst.Module):
            return True
        sites = f.call_sites(func) if isinstance(func, cst.FunctionDef) and depth else []
        return bool(sites) and all(unrepeated(site, depth - 1) for site in sites)
    reads = [*loops, *passed]
    if bool(reads) and all(once(read) for read in reads):
        return True
    # `enumerate(loader)`, `tqdm(loader)` as the iterable of a loop over it: that loop's read
    handed = [c for c in passed if not any(isinstance(lp, cst.For) and f.is_inside(c, lp.iter) for lp in loops)]
    drawn = [c for c in handed if iterated_once(f, c)]  # `it = iter(loader)` made once, drawn by `next(it)`
    return bool(loops or drawn) and len(drawn) == len(handed) and all(unrepeated(lp) for lp in loops)


def _runs_once(loop: cst.For | cst.While) -> bool:
    """`for ... in range(1):`, `range(0, 1)`: a loop whose count is the literal one."""
    it = loop.iter if isinstance(loop, cst.For) else None
    if not (isinstance(it, cst.Call) and mt.is_call_of(it, "range") and 1 <= len(it.args) <= 2
            and all(isinstance(a.value, cst.Integer) and a.keyword is None for a in it.args)):
        return False
    bounds = [int(a.value.value, 0) for a in it.args if isinstance(a.value, cst.Integer)]
    return (bounds[-1] - (bounds[0] if len(bounds) == 2 else 0)) == 1


def _before_the_epochs(f, node: cst.CSTNode, epochs: list[cst.For | cst.While]) -> bool:
    """Does `node` (a `set_epoch`) run once, before the epoch loops: in no loop of its function,
    which runs an epoch loop after it (`sampler.set_epoch(start_epoch)` above `for epoch in ...:`)?
    Not one in a function each epoch calls (`run_epoch(...)`: it runs once an epoch)."""
    return next(f.enclosing_loops(node), None) is None and any(
        f.scope(loop) is f.scope(node) and f.before(node, loop) for loop in epochs)


def _set_epoch_behind_a_failing_type_test(ctx: Context) -> Iterator[Hit]:
    """`if isinstance(sampler, DistributedSampler): sampler.set_epoch(epoch)` where every object
    `sampler` may hold is built from a class of the program that is no DistributedSampler but has a
    `set_epoch` of its own (a project's distributed batch sampler, `class GroupBatchSampler(Sampler)`):
    the test never holds, so its epoch is never set and it shuffles every epoch alike (not one built
    with `shuffle=False`)."""
    f = ctx.facts
    flow = objects.of(f)
    for call in f.calls:
        if not (mt.is_method_call(call, "set_epoch") and isinstance(call.func, cst.Attribute)):
            continue
        test = next((a.test for a in f.ancestors(call) if isinstance(a, cst.If) and f.is_inside(call, a.body)), None)
        if not (isinstance(test, cst.Call) and mt.is_call_of(test, "isinstance") and len(test.args) == 2
                and f.code(test.args[0].value) == f.code(call.func.value)
                and f.qualify(test.args[1].value) in (SAMPLER, "torch.utils.data.DistributedSampler")):
            continue
        sites = flow.values(call.func.value)
        classes = [_built_class(f, flow, site) for site in sites]
        if classes and all(cls is not None and not any(
                f.qualify(b.value) in (SAMPLER, "torch.utils.data.DistributedSampler")
                for c in f.lineage(cls) for b in c.bases) for cls in classes):
            epoched = [cls for site, cls in zip(sites, classes) if cls is not None and f.method(cls, "set_epoch")
                       and not ((off := mt.keyword(site, "shuffle")) is not None and mt.is_name(off.value, "False"))]
            if not epoched:
                continue
            names = ", ".join(sorted({cls.name.value for cls in epoched}))
            yield Hit(test, f"`{f.code(call.func.value)}` holds a {names}, no DistributedSampler: this test never holds, "
                            "so its set_epoch(epoch) never runs and every epoch sees the same order; call it "
                            "wherever the sampler has set_epoch")


def _built_class(f, flow, site: cst.CSTNode) -> cst.ClassDef | None:
    """The class of the program `site` builds: `Sampler(...)`, or `cls(...)` in a `@classmethod`
    of it (`from_datasets(cls, ...)`)."""
    built = flow.constructs(site)
    if built is not None or not (isinstance(site, cst.Call) and isinstance(site.func, cst.Name)):
        return built
    scope = f.scope(site)
    if isinstance(scope, cst.FunctionDef) and scope.params.params and scope.params.params[0].name.value == site.func.value \
            and any(mt.is_name(d.decorator, "classmethod") for d in scope.decorators):
        return f.enclosing_class(scope)
    return None


def _shuffles_by_epoch(ctx: Context, call: cst.Call) -> bool:
    """Does the sampler subclass `call` builds order its items by the epoch: its `__iter__` (its
    own or a base's in the program) reads `self.epoch`, or it keeps DistributedSampler's?"""
    f = ctx.facts
    cls = f.classes.get((dotted(call.func) or "").rpartition(".")[2])
    iters = [m for c in f.lineage(cls) for m in f.functions.get("__iter__", ()) if f.enclosing_class(m) is c] \
        if cls is not None else []
    return not iters or any(mt.is_attribute(a, "epoch") and dotted(a.value) == "self"
                            for m in iters[:1] for a in mt.findall(m, cst.Attribute))


def _loops_drawing_from(ctx: Context, sampler: cst.Call) -> list[cst.For]:
    """The training loops of the checked file that draw from a loader built with `sampler`, built in
    another module that this file never calls (a trainer handed its loaders: `self.trainloader`
    copied onto it from a dict of loaders a wrapper class built)."""
    f = ctx.facts
    flow = objects.of(f)
    fed = [lp for lp in f.loops if isinstance(lp, cst.For) and not f.in_library(lp) and f.trains(lp)
           and not _evaluation_only(ctx, sampler, True)]
    return [lp for lp in fed if any(isinstance(site, cst.Call) and _samples_with(f, flow, site, sampler)
                                    for site in flow.values(lp.iter))]


def _samples_with(f, flow, loader: cst.Call, sampler: cst.Call) -> bool:
    """Is `loader` a DataLoader built with `sampler` (`sampler=train_sampler`, or the call itself)?"""
    given = mt.keyword(loader, "sampler")
    return given is not None and flow.kind(loader) == objects.LOADER and \
        (given.value is sampler or sampler in flow.values(given.value))


def _entry_calls(f, node: cst.CSTNode, depth: int = 3, skipped: bool = False) -> list[cst.Call]:
    """The checked file's calls that run `node` of a module it imports: of the function around it,
    or of the functions that call that one (at most `depth` calls deep), where the call's literal
    arguments do not skip it (`make_dataloader(cfg, is_train=False)` past `if is_train:`; with
    `skipped`, those too)."""
    func = f.scope(node)
    if not isinstance(func, cst.FunctionDef) or depth == 0:
        return []
    found: list[cst.Call] = []
    for site in f.call_sites(func):
        if not skipped and not _built_for(f, node, func, site):
            continue
        found += [site] if not f.in_library(site) else _entry_calls(f, site, depth - 1, skipped)
    return list(dict.fromkeys(found))


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
    `batch_sampler=`), by name or by place (`DataLoader(train_set, 64, True, sampler=...)`), or as an
    entry of a mapping it unpacks (`DataLoader(train_set, **train_kwargs, sampler=...)` after
    `train_kwargs.update(cuda_kwargs)` with `cuda_kwargs = {"shuffle": True}`; not where each dict the
    mapping is bound to holds one of the two, `kw = {"sampler": s}` under `if distributed:` and
    `kw = {"shuffle": True}` in its `else`), or as a flag that is
    true wherever the sampler is built (`shuffle=is_train` where `if is_train: sampler =
    DistributedSampler(ds)` and `is_train = True` on the train split), or as a shuffle setting the
    program reads and never sets (`shuffle=cfg.shuffle_train`, true where the user says so) beside a
    sampler always given, raises
    "sampler option is mutually exclusive with shuffle"; also where a function of the program hands
    its `shuffle` parameter and a sampler (a parameter, or in its `**kwargs`) on to the DataLoader
    (`LoaderFactory.create(ds, shuffle=cfg.shuffle_train, sampler=DistributedSampler(ds))`). The
    DistributedSampler shuffles already (its `shuffle=True` default). `--fix` keeps the order of
    every configuration the script has: `shuffle=(sampler is None)` where the sampler may be
    `None` (a single process still shuffles; also a sampler from a helper that may return `None`),
    `shuffle=not distributed` for
    `sampler=DistributedSampler(ds) if distributed else None`, and removes `shuffle=True` where
    the sampler is always built (not where the mapping passes it: no fix is offered there).
    """
    f = ctx.facts
    for call in ctx.script.calls_of(LOADER):
        shuffle = mt.loader_arg(call, "shuffle")  # by name, or by place: `DataLoader(ds, 64, True, ...)`
        sampler = mt.loader_arg(call, "sampler") or mt.loader_arg(call, "batch_sampler")
        if shuffle is not None and sampler is not None and not mt.is_name(sampler.value, "None") and (
                mt.is_literal_true(shuffle.value) or _true_where_sampled(f, shuffle.value, sampler.value)
                or _set_from_outside(f, shuffle.value) and _always_built(f, sampler.value)):
            kind = sampler.keyword.value if sampler.keyword is not None else \
                "sampler" if sampler is mt.loader_arg(call, "sampler") else "batch_sampler"
            if mt.is_literal_true(shuffle.value):
                yield Hit(shuffle, f"shuffle=True with {kind}=: DataLoader raises ValueError; the sampler decides "
                                   "the order", _shuffle_fix(f, call, shuffle, sampler.value) if shuffle.keyword else None)
                continue
            if _set_from_outside(f, shuffle.value):
                yield Hit(shuffle, f"shuffle={f.code(shuffle.value)} is a setting, and {kind}= is always given: "
                                   "where the setting is true DataLoader raises ValueError; the sampler decides the order",
                          _shuffle_fix(f, call, shuffle, sampler.value) if shuffle.keyword else None)
                continue
            flag, given = f.code(shuffle.value), f.code(sampler.value)
            yield Hit(shuffle, f"shuffle={flag} is true where the {kind} is built (under `{flag}`): DataLoader "
                               "raises ValueError there; the sampler decides the order",
                      _set_shuffle(shuffle, f"{flag} if {given} is None else False") if shuffle.keyword else None)
        elif shuffle is None and any(mt.is_literal_true(v) for v in f.unpacked_entries(call, "shuffle")):
            kind = next((k for k in ("sampler", "batch_sampler") if any(
                not mt.is_name(v, "None") for v in _given(f, call, k))), None)
            if kind is not None and not _held_apart(f, call, kind):
                # `DataLoader(ds, **train_kwargs, sampler=s)` after `train_kwargs.update(shuffle=True)`
                star = next(a for a in call.args if a.star == "**")
                yield Hit(star, f"`{f.code(star.value)}` passes shuffle=True with {kind}=: DataLoader raises "
                                "ValueError; the sampler decides the order")
    for shuffle, sampler, site in _through_helpers(ctx):
        if mt.is_literal_true(shuffle.value) or _true_where_sampled(f, shuffle.value, sampler) \
                or _set_from_outside(f, shuffle.value) and _always_built(f, sampler):
            yield Hit(shuffle, f"`{f.code(site.func)}` hands shuffle={f.code(shuffle.value)} and this sampler on to "
                               "a DataLoader: where shuffle is true it raises ValueError; the sampler decides the order")


def _through_helpers(ctx: Context) -> Iterator[tuple[cst.Arg, cst.BaseExpression, cst.Call]]:
    """(the `shuffle=` argument, the sampler, the call) of each call of the checked file to a
    function of the program that hands both on to a DataLoader: its `shuffle` a parameter it passes
    as it is, its sampler another such parameter or in the `**kwargs` it passes on
    (`DataLoaderFactory.create_dataloader(ds, shuffle=cfg.shuffle_train, sampler=DistributedSampler(ds))`
    where `create_dataloader(dataset, shuffle=False, **kwargs)` returns `DataLoader(dataset,
    shuffle=shuffle, **kwargs)`)."""
    f = ctx.facts
    for loader in ctx.script.calls_of(LOADER):
        func, shuffle = f.scope(loader), mt.loader_arg(loader, "shuffle")
        if not isinstance(func, cst.FunctionDef) or shuffle is None or not _passed_as_is(f, func, shuffle.value):
            continue
        sampler = mt.loader_arg(loader, "sampler") or mt.loader_arg(loader, "batch_sampler")
        star = func.params.star_kwarg.name.value if isinstance(func.params.star_kwarg, cst.Param) else None
        if sampler is not None and not _passed_as_is(f, func, sampler.value) or sampler is None and not (
                star is not None and any(a.star == "**" and mt.is_name(a.value, star) for a in loader.args)):
            continue
        for site in f.call_sites(func):
            given = f.argument_for(site, func, shuffle.value.value)
            arg = next((a for a in site.args if given is not None and a.value is given), None)
            drawn = f.argument_for(site, func, sampler.value.value) if sampler is not None else next(
                (a.value for a in site.args if a.keyword is not None and a.keyword.value in ("sampler", "batch_sampler")), None)
            if arg is not None and drawn is not None and not mt.is_name(drawn, "None") and not f.in_library(site):
                yield arg, drawn, site


def _passed_as_is(f, func: cst.FunctionDef, value: cst.BaseExpression) -> bool:
    """Is `value` a parameter of `func` that it never assigns (handed on as the caller gave it)?"""
    return isinstance(value, cst.Name) and value.value in param_names(func) and f.ref(value) == Ref(func, value.value) \
        and not f.writes(Ref(func, value.value))


def _set_from_outside(f, flag: cst.BaseExpression) -> bool:
    """Is `flag` a shuffle setting the program reads and never sets (`cfg.data.shuffle_train`, from a
    configuration file or the command line): true wherever the user says so?"""
    ref = f.ref(flag) if isinstance(flag, cst.Attribute) and "shuffle" in flag.attr.value.lower() else None
    return ref is not None and not f.writes(ref)


def _true_where_sampled(f, flag: cst.BaseExpression, sampler: cst.BaseExpression) -> bool:
    """Is `shuffle=flag` true wherever the loader gets a sampler: a flag that may be `True` (`is_train
    = True` on the train split), and a sampler the name given as `sampler=` may hold built under
    `if flag:` (`if is_train: sampler = DistributedSampler(ds)`; one in its `else` is given where the
    flag is false) or in `... if flag else None`? Not where the branch that builds the sampler, or
    code after it, sets the flag again (`shuffle = False`)."""
    ref = f.ref(flag) if isinstance(flag, (cst.Name, cst.Attribute)) else None
    held = f.ref(sampler) if isinstance(sampler, (cst.Name, cst.Attribute)) else None
    if ref is None or held is None or not any(mt.is_literal_true(v) for v in f.sources(ref)):
        return False
    built = [v for v in f.sources(held) if not mt.is_name(v, "None")]
    code = f.code(flag)

    def under_flag(value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.IfExp):
            return f.code(value.test) == code and mt.is_name(value.orelse, "None")
        child = value
        for anc in f.ancestors(value):
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                return False
            if isinstance(anc, cst.If) and child is anc.body and f.code(anc.test) == code:
                return not any(f.is_inside(stmt, anc.body) or f.before(anc, stmt) for _, _, stmt in f.writes(ref))
            child = anc
        return False

    return any(under_flag(v) for v in built)


def _held_apart(f, call: cst.Call, kind: str) -> bool:
    """Does the one `**mapping` of `call` hold the sampler (`kind`) and `shuffle=True` only in
    different dicts it is bound to, never merged (`kw = {"sampler": DistributedSampler(ds)}` under
    `if distributed:`, `kw = {"shuffle": True}` in its `else`, no `.update`): each binding replaces
    the other, so the loader never gets both."""
    stars = [a for a in call.args if a.star == "**"]
    ref = f.ref(stars[0].value) if len(stars) == 1 and mt.loader_arg(call, kind) is None \
        and dotted(stars[0].value) else None
    if ref is None or f.filled(ref):
        return False
    sources = f.sources(ref)
    if not sources or not all(isinstance(s, cst.Dict) and all(isinstance(e, cst.DictElement) for e in s.elements)
                              for s in sources):
        return False  # a dict from elsewhere, or one that unpacks another: it may hold both

    def entries(d: cst.Dict, key: str) -> list[cst.BaseExpression]:
        return [e.value for e in d.elements if isinstance(e, cst.DictElement) and mt.string_value(e.key) == key]
    return not any(any(mt.is_literal_true(v) for v in entries(d, "shuffle"))
                   and any(not mt.is_name(v, "None") for v in entries(d, kind)) for d in sources)


def _given(f, call: cst.Call, name: str) -> list[cst.BaseExpression]:
    """What a `DataLoader(...)` call is given as `name`: by keyword or place, else what the
    `**mappings` it unpacks pass (`Facts.keyword_given`, the question convert's added keywords ask)."""
    arg = mt.loader_arg(call, name)
    return [arg.value] if arg is not None else f.keyword_given(call, name).values


def _shuffle_fix(f, call: cst.Call, shuffle: cst.Arg, sampler: cst.BaseExpression):
    """The fix that keeps every configuration's order, or None when none is known to."""
    if isinstance(sampler, cst.IfExp) and (mt.is_name(sampler.orelse, "None") or mt.is_name(sampler.body, "None")):
        test = f.code(sampler.test)  # `DistributedSampler(ds) if distributed else None`: the flag decides
        test = test if dotted(sampler.test) or isinstance(sampler.test, cst.Call) else f"({test})"
        return _set_shuffle(shuffle, f"not {test}" if mt.is_name(sampler.orelse, "None") else test)
    if _always_built(f, sampler):
        return _drop(call)  # always a sampler: the loader never shuffled by itself
    if dotted(sampler):
        return _set_shuffle(shuffle, f"({f.code(sampler)} is None)")
    return None


def _always_built(f, expr: cst.BaseExpression, depth: int = 4) -> bool:
    """Is `expr` a sampler on every path: a constructor's call, a name every assignment of which
    is one, a helper of this file every path of which returns one? Not `None`, a conditional
    expression with a `None` branch, or a helper that may return None (`if distributed: return
    DistributedSampler(ds)` then `return None`, or falling off its end)."""
    if depth == 0 or mt.is_name(expr, "None") or isinstance(expr, cst.IfExp):
        return False
    if isinstance(expr, cst.Call):
        helpers = [] if f.builds(expr) else f.user_functions(expr)
        return all(not _may_fall_through(func) and all(
            r.value is not None and _always_built(f, r.value, depth - 1) for r in f.returns if f.scope(r) is func)
            for func in helpers)
    ref = f.ref(expr) if dotted(expr) else None
    sources = f.sources(ref) if ref is not None else []
    return bool(sources) and all(_always_built(f, s, depth - 1) for s in sources)


def _may_fall_through(func: cst.FunctionDef) -> bool:
    """Can `func` end without a `return` (and so return None)? Its last statement decides."""
    last = func.body.body[-1] if func.body.body else None
    ends = last is not None and (mt.sole(last, cst.Return) is not None or mt.sole(last, cst.Raise) is not None)
    return not ends


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


@rule("DDP010", several=True)
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
    (`evaluate(val_loader)`), or a name that says so where something reads the loader (not a
    `test_loader` built and never used, or only tested against None); not where a function that gathers the results cuts them back to
    the data set's length (`torch.cat(gathered)[:len(dataset)]`) or keeps one per sample id
    (`np.unique(all_ids, return_index=True)`), nor where each process writes its results to a
    file of its own (a path naming the rank, handed to the evaluation) and a function of the
    program reads every process's file back and skips a result whose key it has seen (`for x in
    range(num_tasks): ... if key in seen: continue`, as VideoMAE merges its test views), nor in a
    program that combines nothing across processes (no collective that sums or gathers, no library
    that does: torchmetrics' functional API computes in the calling process alone; the repeats go to the last processes, never to rank 0, and each reports its own
    shard's numbers), nor where rank 0 alone reads the loader (every loop over it under `if rank ==
    0:`: its shard holds no repeat, and no other process joins it), nor where every loop over the
    loader keeps only its last batch's values (no
    `+=`, no `append`, no metric updated: a test that logs its last batch's losses makes no figure
    over the set) or its results by a key the batch's items carry (`for x, y, idx in loader:` ...
    `top5[int(idx_all[i])] = p`: a repeat rewrites its own entry) or takes the repeats back out
    (`if i == 0 and rank < padded: total -= 1`, with `padded` the program's own `(world_size -
    len(ds) % world_size) % world_size`: the sampler repeats the first samples, one on each of the
    first `padded` ranks), nor for
    a sampler no DataLoader takes and no call is handed (a `test_sampler` built beside a
    `DataLoader(test_set)` without it: every process reads the whole set, nothing is padded; nor
    where its name is bound to another sampler before the loader reads it: `eval_sampler =
    SequentialSampler(eval_set)` above `DataLoader(eval_set, sampler=eval_sampler)`), also
    where a loader factory hands it to a loader only on the path its evaluation calls skip (`if
    tag == "train": DataLoader(ds, sampler=sampler)` / `else: DataLoader(ds)`, called with
    `tag="val"`), nor for a sampler named for training, it and its loaders (`train_sampler`,
    `train_loader`), that nothing reads without gradients or under a name of evaluation (its
    loop's step in a trainer class the script imports by a name in its config), nor where the
    loader is read only through iterators (`iter(loader)`, `loader.__iter__()`) one of which an
    `except` in a loop makes again (`for _ in range(num_batches):` ... `except StopIteration:
    it = iter(val_loader)`): a fixed number of batches, repeats by design, no figure over the set.
    """
    if _trims_gathered(ctx):
        return
    for call in ctx.script.calls_of(SAMPLER):
        drop = mt.keyword(call, "drop_last")
        if drop is not None and not mt.is_name(drop.value, "False"):
            continue
        if (_evaluation_only(ctx, call) or _evaluated_through_factory(ctx, call)) and not _merged_by_key(ctx, call) \
                and not _taken_by_nothing(ctx, call) and _combines_across_processes(ctx, call) \
                and not _no_figure_counts_a_repeat(ctx, call) and not _read_on_rank_zero_only(ctx, call) \
                and not _padding_trimmed(ctx, call) and not _drawn_a_fixed_number_of_batches(ctx, call) \
                and not _training_data_by_name(ctx, call):
            yield Hit(call, "DistributedSampler pads evaluation data with repeated samples until it divides by the "
                            "number of processes: metrics count them twice; shard without padding or evaluate "
                            "the whole set")


def _no_figure_counts_a_repeat(ctx: Context, sampler: cst.Call) -> bool:
    """Does every loop over the loaders of `sampler` (here or in the functions of the program they
    are handed to) keep only its last batch's values (`evaluation.keeps_only_its_last_batch`: a
    test that logs the losses of its last batch) or its results by a key the batch's items carry
    (`evaluation.keeps_results_by_sample_key`: `top5[int(idx)] = p`, a repeat rewriting its own
    entry), the loader handed to nothing else but `len` and iteration wrappers? Then no figure
    over the data set counts the padding's repeats."""
    f = ctx.facts
    loops, passed = _readers(ctx, sampler)
    return bool(loops) and all(keeps_only_its_last_batch(f, lp) or keeps_results_by_sample_key(f, lp)
                               for lp in loops) and all(
        f.user_functions(c) or (dotted(c.func) or "") in ("len", *mt.ITERATION_WRAPPERS) for c in passed)


def _drawn_a_fixed_number_of_batches(ctx: Context, sampler: cst.Call) -> bool:
    """Is every loader that draws from `sampler` a name read only as `iter(loader)` or
    `loader.__iter__()`, and is one of those iterators made again in an `except` inside a loop (the
    loop draws its batches with `next()` and starts the loader over when it runs out, `for _ in
    range(num_batches):`)? The evaluation then scores a fixed number of batches, repeating samples
    by design: no figure over the data set for the padding's repeats to change.

    Before: gifs' validation (`num_batches = 125`, `val_data_iterator = val_data_loader.__iter__()`
    again in the `except`, `ddp_train.py:180-187`) was a DDP010 (set 30; decision 0262). A loop that
    runs the loader once (`for batch in val_loader:`), or an iterator made once and never again, is
    still asked."""
    f = ctx.facts
    drawing = [call for call in ctx.script.calls_of(LOADER)
               if (arg := mt.keyword(call, "sampler") or mt.keyword(call, "batch_sampler")) is not None
               and any(f.is_inside(sampler, o) for o in f.origins(arg.value))]
    if not drawing:
        return False
    for loader in drawing:
        refs = {f.ref(target, stmt) for target, value, stmt in f.assigns if value is loader and isinstance(target, cst.Name)}
        if len(refs) != 1 or None in refs:
            return False
        ref = refs.pop()
        reads = [n for n in f.names_spelled(ref.name) if f.ref(n) == ref and not _assigned_name(f, n)]
        if not reads or not all(_made_into_an_iterator(f, n) for n in reads) or not any(
                _in_a_handler_in_a_loop(f, n) for n in reads):
            return False
    return True


def _assigned_name(f, name: cst.Name) -> bool:
    """Is `name` the target of an assignment (`val_loader = DataLoader(...)`)?"""
    return any(target is name for target, _, _ in f.assigns)


def _made_into_an_iterator(f, name: cst.Name) -> bool:
    """`iter(loader)` or `loader.__iter__()`."""
    parent = f.parent(name)
    if isinstance(parent, cst.Attribute) and parent.value is name and parent.attr.value == "__iter__":
        call = f.parent(parent)
        return isinstance(call, cst.Call) and call.func is parent
    arg = parent
    call = f.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and mt.is_name(call.func, "iter") and len(call.args) == 1 and arg.value is name


def _in_a_handler_in_a_loop(f, node: cst.CSTNode) -> bool:
    """Is `node` in an `except` handler of a `try` inside a loop of its function?"""
    handler = next((a for a in f.ancestors(node) if isinstance(a, cst.ExceptHandler)), None)
    return handler is not None and any(isinstance(a, (cst.For, cst.While)) for a in f.ancestors(handler)
                                       if f.scope(a) is f.scope(node))


def _padding_trimmed(ctx: Context, sampler: cst.Call) -> bool:
    """Does every loop over the loaders of `sampler` take the padding's repeats back out of its
    counts (`evaluation.trims_the_padding`: `if v_id == 0 and rank < padded: total -= 1`, with
    `padded` the program's own `(world_size - len(val_idx) % world_size) % world_size`), the
    loader handed to nothing else but `len`, iteration wrappers and the program's functions?"""
    f = ctx.facts
    loops, passed = _readers(ctx, sampler)
    return bool(loops) and all(trims_the_padding(f, ctx.ranks, lp) for lp in loops) and all(
        f.user_functions(c) or (dotted(c.func) or "") in ("len", *mt.ITERATION_WRAPPERS) for c in passed)


def _read_on_rank_zero_only(ctx: Context, sampler: cst.Call) -> bool:
    """Does rank 0 alone read the loaders of `sampler`: every loop over them, and every call they
    are handed to, under a test that holds on global rank 0 only (`ranks.rank_zero_only`: `if rank
    == 0:` ... `for x, y in test_loader:`, here or at every call of the function)? The padding's
    repeats go to the last processes, never to rank 0, and what one process reads alone no
    collective combines: its figures hold no repeat. Not where such a loop runs a collective
    itself (EaBNet's `evaluate`, called under `if is_master:`, all-reduces each batch's loss: it
    means to combine the processes' figures, and once every process runs it the repeats count).

    Before: VRWKV's `if rank == 0:` confusion matrix over `test_loader` (a `DistributedSampler`'s
    shard) was reported, since the training loop all-reduces its loss; now silent. Evaluated on
    every process, or under `local_rank == 0` (one process a node, the last node's may hold
    repeats), it is still reported."""
    loops, passed = _readers(ctx, sampler)
    return bool(loops or passed) and all(ctx.ranks.rank_zero_only(node) and not ctx.ranks.collectives_reached(node)
                                         for node in (*loops, *passed))


def _taken_by_nothing(ctx: Context, sampler: cst.Call) -> bool:
    """Is `sampler` handed to no call of the program: no DataLoader draws from it (`sampler=`,
    `batch_sampler=`, a `**` dict holding it) and no function is given it? Then no evaluation reads
    through it (a test sampler built beside a `DataLoader(test_set)` that does not take it), nothing
    is padded. Read through names, the values of dicts, lists and tuples (two deep). An item read by
    its literal key from a dict written out with literal keys is that key's value only, as the
    object core reads it (`sampler=samplers["train"]` takes no `samplers["val"]`), and a function
    of the program whose parameter for the argument is never read takes nothing
    (`train_model(model, samplers)` that no longer reads `samplers`). Before, both took every
    sampler of the dict: a validation sampler whose loader's `sampler=` is commented out was
    reported. A name is read as what it holds where the call reads it, where a statement on the way
    there always binds it (`Facts.reaching_sources`): DeepSpeed-Chat's step 2 builds
    `eval_sampler = DistributedSampler(eval_dataset)`, then `eval_sampler =
    SequentialSampler(eval_dataset)` above `DataLoader(eval_dataset, sampler=eval_sampler)`, which
    draws through the second only; before, any value the name was ever bound to counted."""
    f = ctx.facts
    flow = objects.of(f)

    def holds(expr: cst.BaseExpression, depth: int = 2) -> bool:
        if isinstance(expr, cst.Subscript):
            keyed = flow.values(expr)  # `samplers["train"]`: the key's value where the dict is known
            if keyed and not any(isinstance(site, objects.CONTAINERS) for site in keyed):
                return any(f.is_inside(sampler, site) for site in keyed)
        reached = f.reaching_sources(expr) if isinstance(expr, cst.Name) else None
        origins = f.origins(expr) if reached is None else [o for value in reached for o in f.origins(value)]
        for origin in origins:
            if f.is_inside(sampler, origin):
                return True
            if depth and isinstance(origin, cst.Dict):
                if any(isinstance(e, cst.DictElement) and holds(e.value, depth - 1) for e in origin.elements):
                    return True
            elif depth and isinstance(origin, (cst.List, cst.Tuple)):
                if any(isinstance(e, cst.Element) and holds(e.value, depth - 1) for e in origin.elements):
                    return True
        return False

    return not any(call is not sampler and not f.is_inside(call, sampler) and holds(arg.value)
                   and not _unread_parameter(f, call, arg) for call in f.calls for arg in call.args)


def _unread_parameter(f, call: cst.Call, arg: cst.Arg) -> bool:
    """Is `arg` bound, in every function of the program `call` may run, to a parameter that the
    function never reads (`_never_read`: `def train_model(model, samplers, ...)` whose
    `samplers["train"].set_epoch(epoch)` is commented out)?"""
    funcs = [] if arg.star else f.user_functions(call)
    params = [next((p for p in param_names(func) if f.argument_for(call, func, p) is arg.value), None) for func in funcs]
    return bool(funcs) and all(p is not None and _never_read(f, {Ref(func, p)}) for func, p in zip(funcs, params))


# collectives that combine values of several processes (a broadcast copies rank 0's, which holds no repeat)
COMBINES = frozenset(f"torch.distributed.{name}" for name in (
    "all_reduce", "reduce", "all_gather", "all_gather_object", "all_gather_into_tensor", "gather", "gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single"))
# libraries whose metrics or helpers combine the processes' values themselves (torchmetrics' sync, accelerate's gather)
COMBINING_PACKAGES = ("torchmetrics", "accelerate", "lightning", "pytorch_lightning", "ignite", "deepspeed")
# their parts that only compute on the tensors they are given, in the process that calls them
# (torchmetrics' functional API: only its `Metric` classes sync across processes)
LOCAL_ONLY_PARTS = ("torchmetrics.functional",)


def _combines_across_processes(ctx: Context, sampler: cst.Call) -> bool:
    """Are values of several processes combined anywhere: a collective of the program that sums or
    gathers (`COMBINES`), a library that does it for its metrics (not a part of one that computes
    on the tensors it is given only, torchmetrics' functional API), or the evaluation of `sampler`'s
    loader handed a path that names the rank (each process's results written to a file of its own,
    for a later merge)? DistributedSampler's repeats sit at the positions past the data set's
    length, which go to the last processes, never to rank 0: where nothing is combined, each
    process's numbers are its own shard's, and rank 0's hold no repeat."""
    f = ctx.facts
    if ctx.script.calls_of(*COMBINES) or any(
            (v == p or v.startswith(p + ".")) and not v.startswith(LOCAL_ONLY_PARTS)
            for v in f.imports.aliases.values() for p in COMBINING_PACKAGES):
        return True
    _, passed = _readers(ctx, sampler)
    return any(_rank_path(ctx, o) and _names_a_file(o) for c in passed for a in c.args for o in f.origins(a.value))


def _names_a_file(expr: cst.BaseExpression) -> bool:
    """Does a string of `expr` name a file or folder (a `.`, `/` or `\\` in it: `f"{rank}.txt"`,
    `"preds/"`), not a key (`os.environ["LOCAL_RANK"]`)?"""
    return any(any(ch in (mt.string_value(node) or "") for ch in "./\\") for node in mt.findall(expr, (cst.SimpleString,))) \
        or any(any(ch in part.value for ch in "./\\") for fs in mt.findall(expr, (cst.FormattedString,))
               for part in fs.parts if isinstance(part, cst.FormattedStringText))


GATHERS = frozenset(f"torch.distributed.{name}" for name in (
    "all_gather", "all_gather_object", "all_gather_into_tensor", "gather", "gather_object"))


def _trims_gathered(ctx: Context) -> bool:
    """Are the gathered results cut back to the data set's size (`preds = torch.cat(gathered)[:len(
    dataset)]`) or kept once per sample id (`np.unique(all_ids, return_index=True)`, as COCO's
    evaluators merge), in a function that gathers, itself or through a helper of the program
    (`all_gather(img_ids)`)? The padding's repeats are dropped there."""
    f = ctx.facts
    scopes = {f.scope(c) for c in ctx.script.calls_of(*GATHERS)}
    scopes |= {f.scope(c) for c in f.calls if any(func in scopes for func in f.user_functions(c))}
    return bool(scopes) and (any(
        f.scope(sub) in scopes and any(isinstance(e.slice, cst.Slice) and e.slice.lower is None
                                       and mt.is_call_of(e.slice.upper, "len") for e in sub.slice)
        for sub in mt.findall(f.module, cst.Subscript)) or any(
        f.scope(c) in scopes for c in ctx.script.calls_of("numpy.unique")))


def _merged_by_key(ctx: Context, sampler: cst.Call) -> bool:
    """Is the loader of `sampler` evaluated by a call also handed a path that names the rank
    (`final_test(loader, model, os.path.join(out, str(rank) + ".txt"))`: each process writes its
    own results), where a function of the program reads every process's file back and keeps one
    result per key (`_merges_per_rank_files`)?"""
    f = ctx.facts
    _, passed = _readers(ctx, sampler)
    return any(_rank_path(ctx, o) for c in passed for a in c.args for o in f.origins(a.value)) \
        and _merges_per_rank_files(ctx)


def _rank_path(ctx: Context, expr: cst.BaseExpression) -> bool:
    """A path that names the rank: built from a string and the rank (`str(rank) + ".txt"`,
    `f"preds_{rank}.pt"`), not a loader whose sampler was handed the rank."""
    return bool(mt.findall(expr, (cst.SimpleString, cst.FormattedString))) and ctx.ranks.rank_dependent(expr)


FILE_READS = frozenset({"open", "torch.load", "numpy.load", "pickle.load", "json.load"})


def _merges_per_rank_files(ctx: Context) -> bool:
    """Does a function of the program read one file per process in a loop over a count (`for x in
    range(num_tasks): lines = open(os.path.join(d, str(x) + ".txt")).readlines()`) and skip, in
    that loop, a result whose key it has already kept (`if key in seen[name]: continue`)? The
    repeats that padding added then count once."""
    f = ctx.facts
    for loop in f.loops:
        if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and mt.is_counting(loop.iter)):
            continue
        count = loop.target.value
        reads = [c for c in f.calls_in(loop.body) if (f.qualify(c.func) or dotted(c.func)) in FILE_READS and c.args
                 and any(mt.is_name(n, count) for o in f.origins(c.args[0].value) for n in mt.findall(o, cst.Name))]
        if reads and any(_skips_seen(branch) for branch in mt.findall(loop.body, cst.If)):
            return True
    return False


def _skips_seen(branch: cst.If) -> bool:
    """`if key in seen: continue`."""
    test, body = branch.test, branch.body.body
    return isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
        test.comparisons[0].operator, cst.In) and len(body) == 1 and mt.sole(body[0], cst.Continue) is not None


def _evaluation_only(ctx: Context, sampler: cst.Call, strict: bool = False) -> bool:
    """Is the loader of `sampler` read by evaluation only: loops here that do not train (`strict`:
    that run without gradients or in a function named for evaluation; the training step may be in
    another module), or calls of functions named for evaluation, or calls that hand it on with
    gradients off (`with torch.no_grad(): train(model, val_loader, training=False)`: the loops of a
    function only such calls hand it to train nothing with it), and nothing that trains? A loop
    that yields its batches is not counted: it reads for whoever draws from the generator."""
    f = ctx.facts
    loops, passed = _readers(ctx, sampler)
    # a loop that hands each batch on (`for x, y in loader: yield x`, an endless looper) reads for
    # whoever draws from it, training or evaluating: no reader of its own
    loops = [lp for lp in loops if not any(mt.findall(lp.body, (cst.Yield,)))]
    # a call that hands the loader on with gradients off (`with torch.no_grad(): train(model, val_loader,
    # training=False)`) evaluates, whatever the function does with the gradients of other calls
    # so does a call that leaves out every training step of the function it runs (`run_epoch("val",
    # val_loader, ...)` of a `run_epoch` that steps only `if phase == "train":`, `trains_for`)
    without_grad = [c for c in passed if f.grad_disabled(c) or _runs_no_training(f, c)]
    only_without_grad = {g for c in without_grad for g in f.user_functions(c)} - {
        g for c in passed if c not in without_grad for g in f.user_functions(c)}
    trains = any(f.trains(loop) for loop in loops if f.scope(loop) not in only_without_grad)
    if strict:
        loops = [lp for lp in loops if f.grad_disabled(lp) or f.scope(lp) in only_without_grad or isinstance(
            f.scope(lp), cst.FunctionDef) and EVALUATES.search(f.scope(lp).name.value)]
    as_evaluation = [c for c in passed if _handed_for_evaluation(ctx, c, sampler) or c in without_grad]
    evaluated = [c for c in passed if EVALUATES.search(_called(c)) or c in as_evaluation]
    trained = trains or any(TRAINS.search(_called(c)) and c not in as_evaluation for c in passed)
    return bool(loops or evaluated or _named_for_evaluation(ctx, sampler)
                and not _never_read(ctx.facts, _loader_names(ctx, sampler))) and not trained


def _runs_no_training(f, call: cst.Call) -> bool:
    """Does `call` run functions of the program each of which trains, but not for this call: every
    training step of each lies in a branch the call leaves out (`trains_for`)?"""
    funcs = f.user_functions(call)
    return bool(funcs) and all(f.trains(g) and not trains_for(f, g, call) for g in funcs)


def _handed_for_evaluation(ctx: Context, call: cst.Call, sampler: cst.Call) -> bool:
    """Is every argument by which `call` is handed a loader drawing from `sampler` named for
    evaluation, by its name or its keyword (`pm.train(train_loader, test_loader)`: the test loader
    goes to a training function to be evaluated there, `fit(model, val_loader=loader)`)?"""
    f = ctx.facts
    drawing = [c for c in ctx.script.calls_of(LOADER)
               if (arg := mt.keyword(c, "sampler") or mt.keyword(c, "batch_sampler")) is not None
               and any(f.is_inside(sampler, o) for o in f.origins(arg.value))]
    carrying = [a for a in call.args if dotted(a.value) and set(loaders_of(f, a.value, drawing, drawn=False))]
    return bool(carrying) and all(EVALUATES.search(a.keyword.value if a.keyword is not None else
                                                   dotted(a.value).rsplit(".", 1)[-1]) for a in carrying)


def _evaluated_through_factory(ctx: Context, sampler: cst.Call) -> bool:
    """Is `sampler` built in a function of the program that returns the loader drawing from it
    (`create_loader(dataset, is_training)`, called for training and for evaluation alike), where
    some call builds it and a loader that draws from it (not `if is_training:` passed False: `if tag
    == "train": DataLoader(ds, sampler=sampler)` / `else: DataLoader(ds)` called with `tag="val"`
    hands the sampler to nothing) and only evaluation reads that call's
    loader: the names it is bound to and handed on to (returned, unpacked, passed, kept on `self`,
    in other modules) are iterated by loops that do not train or passed to functions outside the
    program named for evaluation, or are named for it (`eval_loader = create_loader(...)`)?"""
    f = ctx.facts
    func = f.scope(sampler)
    if not isinstance(func, cst.FunctionDef):
        return False
    flow = objects.of(f)
    loaders = {c for c in ctx.script.calls_of(LOADER) if f.scope(c) is func and any(
        f.is_inside(sampler, o) for arg in _sampler_args(f, c) for o in f.origins(arg))}
    if not loaders or not any(flow.values(r) & loaders for r in f.returned(func)):
        return False
    for call in f.call_sites(func):
        bound = set(flow.bound_to(call))
        if bound and _built_for(f, sampler, func, call) and any(_built_for(f, lo, func, call) for lo in loaders) \
                and _read_for_evaluation_only(f, flow.carriers(bound), bound):
            return True
    return False


def _unread_or_evaluated_at(ctx: Context, sampler: cst.Call, site: cst.Call, depth: int = 3) -> bool:
    """Is the loader drawing from `sampler`, built in a helper of another module, bound where the
    checked file's `site` calls that helper (whole or by its place in a returned tuple:
    `test_loader, n, bs = builder.get_dataloader_ddp(split='test')`) to names nothing reads, or that
    only evaluation reads (loops that do not train, functions outside the program named for
    evaluation, names for it)? The order of such a loader repeats nothing that trains; another
    call of the same helper, for training, is still reported. Where `site` is returned as it is
    (`return get_val_loader_inria(cfg)` of a dispatching `get_val_loader`), each call of the
    function returning it is asked instead (`depth` such functions up). The loader may be a
    library's that takes the sampler as torch's does (`data.pytorch(batch_size=b, sampler=sampler)`
    of deeplake, in a `__call__` the file calls as `LoadDeeplakeDataset(...)()`): before, only a
    DataLoader counted, and a test loader's call of the helper was reported. Where the helper
    builds the sampler and no loader (`make_data_sampler`), the loaders of the program drawing from
    it (`loaders.drawing_from`: through a `BatchSampler`, in the helper's caller `make_data_loader`)
    are looked for in what `site` binds, whole or in a list (`data_loaders_val =
    make_data_loader(cfg, is_train=False)`), and where `site` is the sampler helper's call inside
    the function returning such a loader, each call of that function is asked (decision 0230)."""
    f = ctx.facts
    outer = f.scope(site)
    if isinstance(f.parent(site), cst.Return) and isinstance(outer, cst.FunctionDef) and depth:
        sites = f.call_sites(outer)
        return bool(sites) and all(_unread_or_evaluated_at(ctx, sampler, s, depth - 1) for s in sites)
    flow = objects.of(f)
    func = f.scope(sampler)
    made = [c for c in ctx.script.calls_of(LOADER) if f.scope(c) is func]
    drawing = [c for c in [*made, *_library_loaders(f, func)]
               if any(f.is_inside(sampler, o) for arg in _sampler_args(f, c) for o in f.origins(arg))]
    # a mapping of loader arguments filled by item (`params["sampler"] = sampler`) is not followed:
    # then the helper's only loader
    held = {r for c in drawing or (made if len(made) == 1 else []) for r in flow.bound_to(c)}
    bound = set(flow.bound_at(site)) & flow.carriers(held)
    if not bound and not made:
        # the sampler's helper builds no loader (`make_data_sampler`): the loaders of the program that
        # draw from it (a helper of the helper's caller, through a batch sampler), which the names
        # `site` binds may hold, whole or in a list (`make_data_loader(cfg, is_train=False)`)
        drawing = set(drawing_from(f, sampler, list(ctx.script.calls_of(LOADER))))
        bound = {r for r in flow.bound_at(site) if any(v in drawing or flow.elements(v) & drawing
                                                        for v in flow.ref_values(r))}
        if not bound and depth and isinstance(outer, cst.FunctionDef) and any(
                v in drawing or flow.elements(v) & drawing for r in f.returned(outer) for v in flow.values(r)):
            # `site` is the sampler's helper called by the loader's (`sampler = make_data_sampler(...)` in
            # `make_data_loader`, which returns the loader): each call of that function is asked
            sites = f.call_sites(outer)
            return bool(sites) and all(_unread_or_evaluated_at(ctx, sampler, s, depth - 1) for s in sites)
    if not bound:
        return False
    refs = flow.carriers(bound)
    return _never_read(f, refs) or _read_for_evaluation_only(f, refs, bound)


def _library_loaders(f, func: cst.CSTNode) -> list[cst.Call]:
    """The calls in `func` of a library's function, not torch's DataLoader, that take a sampler by
    torch's keyword (`sampler=`/`batch_sampler=`): a loader of the library over that sampler
    (deeplake's `dataset.pytorch(..., sampler=sampler)`)."""
    return [c for c in f.calls if f.scope(c) is func and not f.user_functions(c) and not f.builds(c)
            and f.qualify(c.func) != LOADER and (mt.keyword(c, "sampler") or mt.keyword(c, "batch_sampler"))]


def _read_for_evaluation_only(f, refs: set[Ref], bound: set[Ref]) -> bool:
    """Is a loader bound to `bound` and handed on to `refs` (`objects`' carriers) read only by
    evaluation: iterated by loops that do not train or passed to functions outside the program
    named for evaluation (the program's own are followed by the carriers), or named for evaluation
    where it is bound and read, and by nothing that trains?"""
    names = {ref.name for ref in refs}
    loops = [lp for lp in f.loops if isinstance(lp, cst.For) and dotted(it := mt.strip_iteration(lp.iter)) in names
             and f.ref(it) in refs]
    passed = [c for c in f.calls if not f.user_functions(c) and any(
        dotted(a.value) in names and f.ref(a.value) in refs for a in c.args)]
    evaluated = [c for c in passed if EVALUATES.search(_called(c))] or \
        all(EVALUATES.search(r.name.split(".")[-1]) for r in bound) and not _never_read(f, refs)
    trained = any(f.trains(loop) for loop in loops) or any(TRAINS.search(_called(c)) for c in passed)
    return bool(loops or evaluated) and not trained


def _loader_names(ctx: Context, sampler: cst.Call) -> set[Ref] | None:
    """The names the loaders drawing from `sampler` are bound and handed on to (`objects`'
    carriers); None where a loader is not bound to a name (returned, handed on as it is made)."""
    flow = objects.of(ctx.facts)
    bound = [flow.bound_to(c) for c in ctx.script.calls_of(LOADER) if any(
        ctx.facts.is_inside(sampler, o) for arg in _sampler_args(ctx.facts, c) for o in ctx.facts.origins(arg))]
    return flow.carriers({r for refs in bound for r in refs}) if bound and all(bound) else None


def _never_read(f, refs: set[Ref] | None) -> bool:
    """Is a loader held only by `refs` never read: each a plain name of a function, used there only
    where it is bound and in tests against None (`test_loader = DataLoader(...)` "not used in this
    example", `if val_loader is not None: pass`), by no function nested in it? Nothing evaluates
    over such a loader, whatever its name says."""
    if not refs or any("." in r.name for r in refs):
        return False
    for ref in refs:
        nested = [n for n in f.findall(ref.scope, (cst.FunctionDef, cst.Lambda)) if n is not ref.scope]
        if any(f.used_inside(ref.name, n) for n in nested) or any(
                f.ref(n) == ref and not bound_or_none_tested(f, n) for n in f.uses(ref.name, ref.scope)):
            return False
    return True


def _sampler_args(f, loader: cst.Call) -> list[cst.BaseExpression]:
    """What a `DataLoader(...)` call is given as its sampler: `sampler=`/`batch_sampler=`, or the
    entry `"sampler"` of a mapping it unpacks (`**loader_args`, `Facts.unpacked_entries`)."""
    found: list[cst.BaseExpression] = []
    for name in ("sampler", "batch_sampler"):
        arg = mt.keyword(loader, name)
        found += [arg.value] if arg is not None else f.unpacked_entries(loader, name)
    return found


def _built_for(f, sampler: cst.Call, func: cst.FunctionDef, call: cst.Call) -> bool:
    """Does `call` of `func` reach `sampler`: no test on a parameter of `func` around it that the
    call's literal argument (or the parameter's literal default) makes false (`if is_training:`,
    `DistributedSampler(ds) if is_training else None`, with `is_training=False`), and none before
    it whose branch the call takes returns (`if val_mode: return DataLoader(ds)`, then the sampler,
    with `val_mode=True`)?"""
    child: cst.CSTNode = sampler
    for anc in f.ancestors(sampler):
        if anc is func:
            return True
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            value = _literal_test(f, anc.test, func, call)
            if value is not None and value != (child is anc.body):
                return False
        if isinstance(anc, (cst.IndentedBlock, cst.Module)) and any(
                _returns_for(f, stmt, func, call) for stmt in anc.body[:anc.body.index(child)]):
            return False
        child = anc
    return True


def _returns_for(f, stmt: cst.CSTNode, func: cst.FunctionDef, call: cst.Call) -> bool:
    """Is `stmt` an `if` whose branch that `call` takes (`_literal_test`) ends in a `return` or a
    `raise`: nothing after it runs for that call?"""
    if not isinstance(stmt, cst.If):
        return False
    value = _literal_test(f, stmt.test, func, call)
    branch = stmt.body if value else stmt.orelse if value is False else None
    last = branch.body[-1] if isinstance(branch, cst.IndentedBlock) and branch.body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise))


def _passed(f, call: cst.Call, func: cst.FunctionDef, param: str) -> cst.BaseExpression | None:
    """What `call` gives `param` of `func`: its argument, else the parameter's default (None where a
    `*`/`**` argument may hold it)."""
    passed = f.argument_for(call, func, param)
    if passed is None and not any(a.star for a in call.args):
        found = next((p for p in (*func.params.params, *func.params.kwonly_params) if p.name.value == param), None)
        passed = found.default if found is not None else None
    return passed


def _constants(f, expr: cst.BaseExpression | None, depth: int = 3) -> set[str] | None:
    """The constants `expr` may be, by their code: a literal, a member of a class
    (`SamplerType.SHARDED_INFINITE`), through a name's assignments and a parameter's callers
    (`depth` deep); None where one is not a constant."""
    if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float)) or mt.is_name(expr, "True", "False", "None"):
        return {f.code(expr)}
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in f.classes:
        return {f.code(expr)}
    ref = f.ref(expr) if isinstance(expr, cst.Name) and depth else None
    if ref is None:
        return None
    if isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope) and not f.writes(ref):
        sites = f.call_sites(ref.scope)
        values = [_constants(f, _passed(f, site, ref.scope, ref.name), depth - 1) for site in sites]
    else:
        values = [_constants(f, source, depth - 1) for source in f.sources(ref)]
    return set().union(*values) if values and None not in values else None


def _compared(f, test: cst.Comparison, values: set[str] | None) -> bool | None:
    """The truth of `param == K`, `!=`, `in (K1, K2)`, `not in`, for each of the constants `param`
    may be: one answer for all of them, else None."""
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if values is None:
        return None
    if isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        keys = {f.code(e.value) for e in right.elements}
        answers = {(v in keys) == isinstance(op, cst.In) for v in values}
    elif isinstance(op, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)) and _constants(f, right, 0) is not None:
        answers = {(v == f.code(right)) == isinstance(op, (cst.Equal, cst.Is)) for v in values}
    else:
        return None
    return answers.pop() if len(answers) == 1 else None


def _literal_test(f, test: cst.BaseExpression, func: cst.FunctionDef, call: cst.Call) -> bool | None:
    """The truth of `param` / `not param` for `call`, where it passes a literal (or the parameter's
    literal default applies), or of `param == K` / `param in (K1, K2)` where every value it may pass
    is a constant (`_constants`: `sampler_type = SamplerType.SHARDED_INFINITE` handed on through
    two calls); None when not known."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _literal_test(f, test.expression, func, call)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name) \
            and test.left.value in param_names(func):  # `type == SamplerType.DISTRIBUTED`, `type in (A, B)`
        return _compared(f, test, _constants(f, _passed(f, call, func, test.left.value)))
    if not isinstance(test, cst.Name) or test.value not in param_names(func):
        return None
    passed = f.argument_for(call, func, test.value)
    if passed is None and not any(a.star for a in call.args):
        param = next((p for p in (*func.params.params, *func.params.kwonly_params) if p.name.value == test.value), None)
        passed = param.default if param is not None else None
    return {"True": True, "False": False, "None": False}.get(passed.value) if isinstance(passed, cst.Name) else None


def _named_for_evaluation(ctx: Context, sampler: cst.Call) -> bool:
    """`val_sampler = DistributedSampler(...)`, `eval_loader = DataLoader(..., sampler=...)`."""
    f = ctx.facts
    names = [dotted(t) or "" for t, v, _ in f.assigns if v is sampler or isinstance(v, cst.Call) and any(
        f.is_inside(sampler, o) for a in v.args if a.keyword and a.keyword.value == "sampler" for o in f.origins(a.value))]
    return bool(names) and all(EVALUATES.search(n.split(".")[-1]) for n in names)


def _training_data_by_name(ctx: Context, sampler: cst.Call) -> bool:
    """Is `sampler` named for training, it and its loaders (`train_sampler = DistributedSampler(
    train_set)`, `train_loader = DataLoader(..., sampler=train_sampler)`: every name says `train`
    or `fit`, none says evaluation), and read by nothing that says it evaluates: no loop over the
    loaders without gradients or in a function named for evaluation, no call named for it or run
    without gradients? A loop whose training step ddpify cannot see (`trainer.update(batch)` of a
    trainer class the script imports by a name in its config) then trains on it, as the names say.

    Before: doppelgangers' `train_sampler`, drawn by `for bidx, data in enumerate(train_loader):
    logs_info = trainer.update(data)` with `trainer = importlib.import_module(cfg.trainer.type)
    .Trainer(cfg, args)`, was "pads evaluation data" (DDP010): the loop showed no step; now its
    names settle it. A `with torch.no_grad():` pass over `train_loader` that all-reduces its
    accuracy is still reported."""
    f = ctx.facts
    names = [(dotted(t) or "").split(".")[-1] for t, v, _ in f.assigns if v is sampler or isinstance(v, cst.Call) and any(
        f.is_inside(sampler, o) for a in v.args if a.keyword and a.keyword.value == "sampler" for o in f.origins(a.value))]
    if not names or not all(TRAINS.search(n) and not EVALUATES.search(n) for n in names):
        return False
    loops, passed = _readers(ctx, sampler)
    return not any(f.grad_disabled(lp) or isinstance(scope := f.scope(lp), cst.FunctionDef)
                   and EVALUATES.search(scope.name.value) for lp in loops) \
        and not any(f.grad_disabled(c) or EVALUATES.search(_called(c)) for c in passed)


def _epochs(ctx: Context, sampler: cst.Call) -> bool:
    """Is a loader that draws from `sampler` read by a loop inside another loop (epochs)?"""
    loops, _ = _readers(ctx, sampler)
    return any(next(ctx.facts.enclosing_loops(loop), None) is not None for loop in loops)


def _called(call: cst.Call) -> str:
    return (dotted(call.func) or "").split(".")[-1]


def _readers(ctx: Context, sampler: cst.Call) -> tuple[list[cst.For], list[cst.Call]]:
    """The loops over the loaders that draw from `sampler`, and the calls they are passed to
    (`evaluate(val_loader, model)`, a function of another file, tells by its name): what the object
    core finds a loop iterates or an argument holds (`loaders.loaders_of`: through names, `self.x`
    and `obj.x` of an instance, helpers' returns and parameters at any depth, containers, `with
    tqdm(loader) as bar`, `iter()`), as `convert` finds the loaders that feed training. Not an
    instance of the program's classes built with the loader (`Trainer(model, train_loader,
    val_loader)`): the loops of its methods are followed, and its class's name says nothing of
    what each loader it holds is for."""
    f = ctx.facts
    drawing = [call for call in ctx.script.calls_of(LOADER)
               if (arg := mt.keyword(call, "sampler") or mt.keyword(call, "batch_sampler")) is not None
               and any(f.is_inside(sampler, o) for o in f.origins(arg.value))]
    if not drawing:
        return [], []
    iterated, handed = ctx.loader_reads
    loops = [lp for lp, found in iterated.items() if not found.isdisjoint(drawing) and not _relays(lp)]
    passed = [c for c, found in handed.items() if not found.isdisjoint(drawing) and not f.builds(c)]
    return loops, passed


def _relays(loop: cst.For) -> bool:
    """A loop of a generator that only hands its items on (`def cycle(it): while True: for i in it:
    yield i`): it reads nothing for itself; what draws from the generator does."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else []
    return isinstance(loop.target, cst.Name) and bool(body) and all(
        isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(small, cst.Expr) and isinstance(small.value, cst.Yield)
            and mt.is_name(small.value.value, loop.target.value) for small in stmt.body) for stmt in body)


SEEDS = frozenset({"torch.manual_seed", "random.seed", "numpy.random.seed", "torch.cuda.manual_seed",
                   "torch.cuda.manual_seed_all"})
AUGMENTS = ("torchvision.transforms.", "torchvision.transforms.v2.")


@rule("DDP020", bug=False, several=True)
def same_seed_augmentation(ctx: Context) -> Iterator[Hit]:
    """The same seed on every rank, with random augmentation in the data path.

    Wrong:

        import torch
        import torch.distributed as dist
        from torchvision import transforms
        dist.init_process_group("nccl")
        torch.manual_seed(42)
        augment = transforms.RandomResizedCrop(224)

    Right:

        import torch
        import torch.distributed as dist
        from torchvision import transforms
        dist.init_process_group("nccl")
        torch.manual_seed(42 + dist.get_rank())
        augment = transforms.RandomResizedCrop(224)

    Every process then draws the same random numbers: the k-th sample of each process gets the
    same crop, flip and noise, so the batch holds N copies of one augmentation pattern. Offset
    the seed by the rank (the DDP wrapper still broadcasts rank 0's weights at construction).
    Advice, because a script may want identical streams (and seeds its initialisation before
    the wrap on purpose). Found for a seed call that does not read the rank, in a script that
    builds a `torchvision.transforms.Random*` augmentation.
    """
    if not ctx.script.distributed:
        return
    f = ctx.facts
    if not any((f.qualify(c.func) or "").startswith(AUGMENTS) and "Random" in (dotted(c.func) or "") for c in f.calls):
        return
    for call in f.calls:
        if f.qualify(call.func) in SEEDS and call.args and not any(
                ctx.ranks.rank_dependent(a.value) or ctx.ranks.is_global_rank(a.value) for a in call.args):
            yield Hit(call, f"`{f.code(call)}` seeds every rank alike, and this script augments at random: every "
                            "process draws the same augmentations; add the rank to the seed")


@rule("DDP021", several=True)
def no_distributed_sampler(ctx: Context) -> Iterator[Hit]:
    """DDP training over a loader that every rank reads whole: no `DistributedSampler`.

    Wrong:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        model = DDP(net)
        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
        for xb, yb in loader:
            torch.nn.functional.mse_loss(model(xb), yb).backward()

    Right:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
        model = DDP(net)
        data = TensorDataset(x, y)
        loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
        for xb, yb in loader:
            torch.nn.functional.mse_loss(model(xb), yb).backward()

    Without a sampler that shards the data, every process trains on every sample: N GPUs do
    the work of one, an epoch is N epochs, and the learning-rate schedule is off. Found for a
    loader (torch's, or a library's subclass of it that takes its `sampler=`: PyTorch Geometric's)
    without `sampler=`/`batch_sampler=` (nor among the keywords of a `**kwargs` written
    out: `DataLoader(ds, **train_kwargs)` with `train_kwargs = {"batch_size": 64}` and its
    `.update(...)`s) that a DDP training loop of this file reads as
    it was built (not one `accelerator.prepare` hands back: accelerate shards it), also drawn by
    hand, `batch = next(it)` in a loop where a call that trains takes the batch (`self.run_step(batch)`;
    not a batch only a forward takes, an evaluation loss),
    whose data set is torch's or torchvision's or a class of this file that never mentions a
    rank, a world size or shards, or a comprehension over such data that reads no rank
    (`[t for lt in ds for t in lt]`) (a data set that shards itself is fine, and so is a datapipe
    with a `sharding_filter()`, the library's or one of the program's own `IterDataPipe` classes
    built over one, which torch's DataLoader splits between the processes itself; also one reordered by
    its own name, `train_ds = train_ds[order]`, and one a call handed this process's rank takes,
    `partition_dataset(data, world_size, rank)` keeping a `Subset` of its share; a yes/no rank test
    among its arguments, `download=is_primary()`, is no share), in a file that builds no sampler that a call
    takes (a `DistributedSampler` built and handed to no loader shards nothing, nor one handed only to
    functions that call its `set_epoch`, and one whose loader only
    evaluation reads shards no training loader: the test loader's `DistributedSampler` beside a training
    loader that shuffles by itself, as DDP002 tells evaluation; a class of the program named
    `...Sampler` that rests on no class outside it but `ABC`/`object`, a diffusion's
    `UniformSampler(diffusion)` of time steps, samples no data). A loader built in a
    helper of another module (`train_dl = prepare_data(...)` in data_utils.py, handed back through
    `preProcessing`) is reported where this file calls the helper (for a loader drawn by hand, the
    call whose value reaches the draw: `data = load_data_text(...)`, not `data_valid = ...`).
    """
    f = ctx.facts
    # a sampler that shards data for a loader training reads keeps the file silent
    if not ctx.ddp_refs or any((dotted(c.func) or "").endswith("Sampler") and samples_data(f, c)
                               and not _taken_by_nothing(ctx, c) and not handed_for_its_epoch_only(f, c)
                               and not _evaluation_only(ctx, c, True) for c in f.calls):
        return
    reads = TrainingReads(f, ctx.ranks, _loaders(ctx))
    reported: set[cst.Call] = set()
    for call, looped, draws in reads.read_whole():
        if not f.in_library(call):
            yield Hit(call, "every rank reads this whole loader (no DistributedSampler): each process trains on all "
                            "the data; shard it with sampler=DistributedSampler(dataset)")
            continue
        for site in _entry_calls(f, call):  # built in a helper of another module: where this file calls it
            if site not in reported and not ctx.ranks.undistributed(site) and (looped or reads.site_draws(site, draws)):
                reported.add(site)
                yield Hit(site, f"`{f.code(site.func)}(...)` builds a loader every rank reads whole (in "
                                f"`{f.scope(call).name.value}`, no DistributedSampler): each process trains on all "
                                "the data; shard it with sampler=DistributedSampler(dataset)")


def _loaders(ctx: Context) -> list[cst.Call]:
    """The DataLoaders this file builds: torch's, and the program's own subclasses of it whose code
    never mentions a sampler, a rank or shards (`class DataLoaderX(DataLoader)` with its own
    `__iter__`), in source order; a subclass that builds its own sampler shards itself."""
    f = ctx.facts
    own = [c for c in ctx.script.subclass_calls(LOADER) if not any(
        SHARDING_WORDS.search(f.code(cls)) or "ampler" in f.code(cls)
        for cls in f.lineage(f.classes[(dotted(c.func) or "").rpartition(".")[2]]))]
    return sorted([*ctx.script.calls_of(LOADER, *LIBRARY_LOADERS), *own], key=lambda c: f.spans[c][0])


@rule("DDP023", several=True)
def local_rank_as_rank(ctx: Context) -> Iterator[Hit]:
    """The local rank where the global one belongs: `DistributedSampler(rank=local_rank)`.

    Wrong:

        import os
        import torch.distributed as dist
        from torch.utils.data import DistributedSampler
        dist.init_process_group("nccl")
        local_rank = int(os.environ["LOCAL_RANK"])
        sampler = DistributedSampler(train_set, num_replicas=dist.get_world_size(), rank=local_rank)

    Right:

        import os
        import torch.distributed as dist
        from torch.utils.data import DistributedSampler
        dist.init_process_group("nccl")
        local_rank = int(os.environ["LOCAL_RANK"])
        sampler = DistributedSampler(train_set, num_replicas=dist.get_world_size(), rank=dist.get_rank())

    The sampler gives shard `rank` of `num_replicas` to this process. The local rank runs from 0
    on every node: on two nodes, GPU 0 of each node reads shard 0 and half the data is never
    seen (the other half twice). A sampler's rank is the global one (`dist.get_rank()`, or
    leave it out: the sampler asks the process group). Found for `rank=` (or the third
    positional argument) holding `LOCAL_RANK`, `args.local_rank`, an option also spelled
    `--local_rank`, a name that only ever holds one of those, or an attribute the program sets to
    one of them on the same object elsewhere (`config.device = int(os.environ["LOCAL_RANK"])` in
    another module, read as `self.config.device`; not a constant set there where no launcher ran,
    `config.device = "cpu"`), given to a DistributedSampler
    or to a sampler of the project's that takes the same `num_replicas=` and `rank=` (unless the
    program sets `MASTER_ADDR` to this machine itself, `os.environ["MASTER_ADDR"] = "localhost"`
    before `mp.spawn(run, nprocs=len(gpus))`: every process meets the others on this machine, so the
    job is one node's and the local rank the global one, as the group's test below reads it; not
    `num_replicas=torch.cuda.device_count()`, which on two nodes shards each node's data alike; before,
    such a sampler was reported where the same job's `init_process_group(rank=local_rank)` was not); and for the
    same `rank=` given to `init_process_group` (on two nodes two processes join as each rank and
    the group never forms), unless the job is one node's: its `world_size=` counts this node's
    GPUs (`torch.cuda.device_count()`, also kept on the options first: `args.nprocs =
    torch.cuda.device_count()`, read as `world_size=args.nprocs`), or the rank is the index
    `mp.spawn` gives the workers it starts on this machine (also handed on through a setup
    function's parameter; replaced by no store the read can see: one in the other branch of an
    `if`, `if launched: local_rank = dist.get_rank()` / `else: ...(rank=local_rank)`, is not).
    """
    # torch's sampler, or one of the project's that takes the same `num_replicas=`, `rank=`
    samplers = [c for c in ctx.facts.calls if mt.keyword(c, "num_replicas") and mt.keyword(c, "rank")]
    for call in dict.fromkeys([*ctx.script.calls_of(SAMPLER), *samplers]):
        rank = mt.keyword(call, "rank") or mt.positional(call, 2)
        if rank is not None and ctx.ranks.is_local_rank(rank.value) and not ctx.ranks.is_global_rank(rank.value) \
                and not ctx.ranks.loopback_master:
            yield Hit(rank.value, f"`{ctx.facts.code(rank.value)}` is this process's index on its node, not in the "
                                  "job: on several nodes their processes read the same shard; use the global rank "
                                  "(dist.get_rank())")
    for call in ctx.script.calls_of(INIT):
        rank = mt.keyword(call, "rank")
        if rank is None or not ctx.ranks.is_local_rank(rank.value) or ctx.ranks.is_global_rank(rank.value) \
                or _one_node(ctx, rank.value, mt.keyword(call, "world_size")):
            continue
        yield Hit(rank.value, f"`{ctx.facts.code(rank.value)}` is this process's index on its node, not in the job: "
                              "on several nodes two processes join the group as each rank and it never forms; pass "
                              "the global rank (int(os.environ[\"RANK\"]))")


def _one_node(ctx: Context, rank: cst.BaseExpression, world_size: cst.Arg | None) -> bool:
    """Is the job one node's: `world_size=` counts this node's GPUs (`torch.cuda.device_count()`,
    through names), or `rank` is the first parameter of a worker `mp.spawn` starts (its index
    among the processes it starts on this machine), or the program sets `MASTER_ADDR` to this
    machine itself (`Ranks.loopback_master`)? Then each process's local rank is its rank."""
    return _spawn_index(ctx, rank) or counts_this_nodes_gpus(ctx.facts, world_size.value if world_size is not None else None) \
        or ctx.ranks.loopback_master


def _spawn_index(ctx: Context, rank: cst.BaseExpression, depth: int = 3) -> bool:
    """Is `rank` the first parameter of a worker `mp.spawn` starts, or a parameter of a function
    every call of which hands it that index (`def setup(address, port, local_rank, nprocs)` called
    as `setup(..., local_rank=local_rank, ...)` from the spawned `main(local_rank, nprocs, args)`),
    `depth` calls up, read where no store of the function replaces it (one in the other branch of
    an `if`, `if cfg.LAUNCH: local_rank = dist.get_rank()` / `else: init_process_group(...,
    rank=local_rank)`, does not)?"""
    f = ctx.facts
    ref = f.ref(rank) if isinstance(rank, cst.Name) else None
    if ref is None or not isinstance(ref.scope, cst.FunctionDef) or ref.name not in param_names(ref.scope) \
            or any(not f.apart(stmt, rank) for _, _, stmt in f.writes(ref)):
        return False  # (a store in the other branch of an `if`, `if launched: rank = dist.get_rank()`, is not read here)
    if ref.scope in ctx.script.launcher.targets:
        return param_names(ref.scope)[:1] == [ref.name]
    sites = f.call_sites(ref.scope)
    return depth > 0 and bool(sites) and all((arg := f.argument_for(site, ref.scope, ref.name)) is not None
                                             and _spawn_index(ctx, arg, depth - 1) for site in sites)


@rule("DDP033")
def rank_seeded_sharded_draw(ctx: Context) -> Iterator[Hit]:
    """A seed offset by the rank reaches the draw of a data set that a DistributedSampler shards.

    Wrong:

        import os
        import torch
        import torch.distributed as dist
        from torch.utils.data import DistributedSampler, TensorDataset, random_split
        dist.init_process_group("nccl")
        torch.manual_seed(1234 + int(os.environ["LOCAL_RANK"]))
        train, val = random_split(TensorDataset(torch.randn(100, 4)), [80, 20])
        sampler = DistributedSampler(train)

    Right:

        import os
        import torch
        import torch.distributed as dist
        from torch.utils.data import DistributedSampler, TensorDataset, random_split
        dist.init_process_group("nccl")
        torch.manual_seed(1234)
        train, val = random_split(TensorDataset(torch.randn(100, 4)), [80, 20])
        torch.manual_seed(1234 + int(os.environ["LOCAL_RANK"]))
        sampler = DistributedSampler(train)

    A DistributedSampler gives each rank every n-th index of the data set it is handed, which is
    a partition only where every rank holds the same data set in the same order. A data set that
    draws its samples or their order when it is built (`torch.randperm` in its `__init__`,
    `random_split`) draws them from the global generator, which the rank-offset seed made
    different on every rank: each rank shards another permutation, so some samples are trained
    on twice and others never (and a split's validation part overlaps another rank's training
    part). Seed alike on every rank until the data sets are built, then offset the seed (or hand
    the draw a generator of its own). Found for a seed call that reads the rank, run on every
    rank, before (`Facts.runs_before`, through the calls that lead to it) the construction of a
    value a DistributedSampler is handed whose building draws from the same family's global
    generator (`ddpify.analysis.draws`: torch's seed for `torch.randperm`, numpy's for
    `np.random.permutation`); not a draw handed a generator, nor one after a fixed seed in its own
    function, nor a seed set after the data set is built.
    """
    f = ctx.facts
    if not ctx.script.distributed:
        return
    samplers = [c for c in (*ctx.script.calls_of(SAMPLER), *ctx.script.subclass_calls(SAMPLER))
                if not ctx.ranks.undistributed(c) and (c.args or mt.keyword(c, "dataset") is not None)]
    if not samplers:
        return
    flow = objects.of(f)
    for seed in f.calls:
        family = SEED_FAMILIES.get(f.qualify(seed.func) or "")
        if family is None or not seed.args or ctx.ranks.on_some_ranks(seed) or ctx.ranks.undistributed(seed) \
                or not any(ctx.ranks.rank_dependent(a.value) or ctx.ranks.is_global_rank(a.value)
                           or ctx.ranks.is_local_rank(a.value) for a in seed.args):
            continue
        for sampler in samplers:
            data = (mt.keyword(sampler, "dataset") or sampler.args[0]).value
            built = [(site, drawn) for site in flow.values(data)
                     for drawn in [order_draws(f, site, seed, family)] if drawn and f.runs_before(seed, site, strict=True)]
            if built:
                site, drawn = built[0]
                yield Hit(seed, f"`{f.code(seed)}` gives each rank its own seed before `{f.code(drawn[0])}` draws the "
                                f"data that `{f.code(sampler.func)}` shards: each rank shards another order, so samples "
                                "are repeated and dropped; seed alike on every rank until the data sets are built")
                break
