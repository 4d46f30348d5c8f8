"""set-epoch: reshuffle every epoch, end it alike on every process.

    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
->
    for epoch in range(1, args.epochs + 1):
        set_epoch(train_loader, epoch)
        train(args, model, device, train_loader, optimizer, epoch)
        end_epoch()

Without `set_epoch` a DistributedSampler draws the same order every epoch. `end_epoch()` ends
the training pass that `set_epoch` started (processes other than the main one drew their own
random numbers during it, and take the main process's again: what is drawn between two
trainings is the same everywhere) and waits for every process (a barrier). The epoch loop is
found through the functions that own the batch loop (`train(...)`, `Trainer._run_epoch`), and
the loader is named as that loop sees it. A `while step < max_steps:` loop numbers its passes
with `step`; a loop with no number (`while True:`, `for _ in range(n):`) calls `set_epoch(loader)`,
which gives each pass the number after the last one. A generator that hands out a loader's
batches to a training loop is a pass over the loader, reshuffled in the loop around it:

    def inf_train_gen():
        while True:
            for images, _ in train_loader:
                yield images
->
    def inf_train_gen():
        while True:
            set_epoch(train_loader)
            for images, _ in train_loader:
                yield images
            end_epoch()

Weights drawn anew at the top of an epoch, before its pass (`self.apply(self.init_weights)` of
`torch.nn.init.*_`, `reset_parameters()`, in the program's functions the statement calls) are drawn
before `set_epoch`, from the stream every process shares, so every process starts the epoch from the
same weights:

    for epoch in range(epochs):
        reinitialise(model)
        for x, y in loader:
->
    for epoch in range(epochs):
        reinitialise(model)
        set_epoch(loader, epoch)
        for x, y in loader:

A loop that draws one batch per round and makes the loader's iterator again when it runs out (a
step loop, or a generator's `while True`, reading it with `next()` or `__next__()`) passes over
the loader once per iterator, not once per round: a pass begins where the iterator is made, and
the handler ends the last one first (`end_epoch()`: a barrier and a comparison of the parameters,
once per pass, not per batch). The pass under way when the loop ends is left open, as a
generator's is (a collective after the loop would make a process that left it alone wait there):

    it = iter(train_loader)
    for step in range(steps):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(train_loader)
            x, y = next(it)
        train_step(x, y)
->
    set_epoch(train_loader)
    it = iter(train_loader)
    for step in range(steps):
        try:
            x, y = next(it)
        except StopIteration:
            end_epoch()
            set_epoch(train_loader)
            it = iter(train_loader)
            x, y = next(it)
        train_step(x, y)

Every process runs out in the same round: the sharded loaders give each as many batches.

An iterator made once per call of a function, above its step loop, is one pass per call, and
so is one a helper with no loop of its own draws from (`next(it)` in `_step(self, it)`): the
epoch loop around the calls reshuffles it, as it does a batch loop's loader:

    def train_epoch(loader):
        it = iter(loader)
        for _ in range(len(loader)):
            train_step(next(it))

    for epoch in range(epochs):
        train_epoch(loader)
->
    for epoch in range(epochs):
        set_epoch(loader, epoch)
        train_epoch(loader)
        end_epoch()

Wherever else the program makes a training loader's iterator again once it has run out (in a
method with no loop of its own, as a trainer's `_fetch_data`), that is a new pass:

    except StopIteration:
        self.it = iter(self.loader)
->
    except StopIteration:
        set_epoch(self.loader)
        self.it = iter(self.loader)

A loader the epoch makes anew before it reads it (`data_loader = utils.get_data_loader(ds, 64)`
at the top of its body) gets `set_epoch` right after that statement, where the name holds it.

`set_epoch` (runtime) finds the sampler behind `sampler=` or `batch_sampler=`, and
takes dicts of loaders. A loader the loop builds itself (`for x, y in DataLoader(ds, ...):`,
`for x, y in batches():`) is reshuffled where it is built, since naming it again would build
another: `for x, y in set_epoch(DataLoader(ds, ...), epoch):` (set_epoch returns its loader).
A comprehension whose items train is a pass over its loader, as a batch loop is:

    for epoch in range(epochs):
        losses = [self.step(b) for b in dm.train_dataloader()]
->
    for epoch in range(epochs):
        losses = [self.step(b) for b in set_epoch(dm.train_dataloader(), epoch)]
        end_epoch()

A sharded loader that no epoch loop re-iterates gets a TODO, unless it draws its samples in
order (no `shuffle`, or `shuffle=False`, and no sampler of its own: `DistributedSampler(ds,
shuffle=False)` gives every epoch the same shard whatever its number).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Sequence

import libcst as cst

from ddpify.analysis.loaders import draws_in_order, is_iterable_dataset
from ddpify.syntax import matchers as mt

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.syntax.facts import Facts
    from ddpify.options import Options

NAME = "set-epoch"
SUMMARY = "call set_epoch(loader, epoch) at the top of each epoch and end_epoch() at its end"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    found = analysis.loaders
    for entry in found.epoch_loops:
        loop = entry.loop
        epoch = "" if entry.epoch is None else f", {entry.epoch}"  # no number: each pass takes the next
        body = loop.body.body
        for loader in entry.loaders:
            bound = _bound_first(facts, body, loader) or _weights_drawn_first(facts, body, loader)
            line = f"set_epoch({loader}{epoch})\n"
            if bound is None:
                edits.insert_before(body[0], line)
            else:
                edits.insert_after(bound, line)
        for built in entry.built:
            if entry.epoch is None:  # a loader built anew each pass has no last number to follow
                edits.todo(loop, "no epoch number here: call set_epoch(loader, n) with the pass number where "
                           "this loop builds its loader, or every pass draws the same order")
            else:
                edits.replace(built, partial(_with_epoch, epoch=entry.epoch))
        for built in entry.unreached:
            edits.todo(loop, f"this loop iterates a loader built once, before it (`{facts.code(built)}`), that no "
                       f"name holds: bind it to a name and call set_epoch(name{epoch}) here, or every "
                       "epoch draws the same order")
        rebuilt = _rebuilt_after(facts, body, entry.loaders)
        if rebuilt is None:
            edits.insert_after(body[-1], "end_epoch()\n")
        else:  # before what builds the next epoch's loader: drawn from the stream every process shares
            edits.insert_before(rebuilt, "end_epoch()\n")
        edits.add_import("ddpify_runtime", "set_epoch")
        edits.add_import("ddpify_runtime", "end_epoch")
        in_order = [loader for loader in entry.loaders
                    if (drawn := entry.drawn.get(loader)) and all(_reads_in_order(facts, c) for c in drawn)]
        calls = ", ".join([*(f"set_epoch({loader}{epoch})" for loader in entry.loaders if loader not in in_order),
                           *(f"set_epoch({facts.code(b)}{epoch}) where the loop builds it"
                             for b in entry.built if entry.epoch is not None)])
        if calls:
            edits.record(loop, f"{calls} reshuffles each epoch; end_epoch() ends it")
        if in_order:  # (its sampler draws one order at every epoch: the call starts the pass, and reshuffles nothing)
            edits.record(loop, f"{', '.join(f'set_epoch({loader}{epoch})' for loader in in_order)} starts each epoch "
                         "(the loader draws in order, each process its part: the same order every epoch); "
                         "end_epoch() ends it")
    rounds = {entry.loop for entry in found.epoch_loops}  # each of their rounds ends with end_epoch() already
    ended: set[cst.CSTNode] = set()
    for stmt, loader in found.remade:
        handler = next((a for a in facts.ancestors(stmt) if isinstance(a, cst.ExceptHandler)), None)
        around = next(facts.enclosing_loops(handler), None) if handler is not None else None
        ends = around is not None and around not in rounds  # a loop's round that found the last pass over
        if around is not None and ends and stmt not in ended:
            ended.add(stmt)
            edits.insert_before(stmt, "end_epoch()\n")
            edits.add_import("ddpify_runtime", "end_epoch")
        edits.insert_before(stmt, f"set_epoch({loader})\n")
        edits.add_import("ddpify_runtime", "set_epoch")
        edits.record(stmt, f"set_epoch({loader}) " + (
            "before its iterator is first made: the first pass draws its own order" if handler is None else
            "before its iterator is made again: each new pass draws a new order" + (
                "; end_epoch() ends the pass before it, once per pass over the loader" if ends else "")))
    for call in found.unlooped:
        if draws_in_order(call):  # (its sampler draws the same order at every epoch: nothing to number)
            continue
        edits.todo(facts.statement(call), "no epoch loop found for this loader: call set_epoch(loader, epoch) "
                   "at the start of each epoch, or every epoch draws the same order")


def _reads_in_order(facts: Facts, call: cst.Call) -> bool:
    """A `DataLoader(...)` of torch's own, over a map-style data set, that draws its samples in order
    (`draws_in_order`): every epoch reads them in the same order, whatever its number. Not a loader
    class of the program or a registry's (its `shuffle` may be set inside), nor a stream (an
    `IterableDataset` orders its own items)."""
    return facts.qualify(call.func) == "torch.utils.data.DataLoader" and draws_in_order(call) \
        and not is_iterable_dataset(facts, call)


def _bound_first(facts: Facts, body: Sequence[cst.CSTNode], loader: str) -> cst.CSTNode | None:
    """The last statement at the top of the epoch's body that binds `loader` before any statement
    reads it (`data_loader = get_data_loader(...)` made anew each epoch, or unpacked from what
    holds it: `train_loader, test_loader = cfg.dataset_loader`): `set_epoch` goes after
    it, as the name holds no loader (or the last epoch's) before it. None when the body reads the
    loader first (it was made before the loop). A loop of the body over phases that makes the
    loader for each (`for split in splits: data_loader = DataLoader(ds[split], ...)`) is looked
    into: set_epoch goes after the statement that makes it there."""
    bound = None
    for stmt in body:
        assign = mt.sole(stmt, cst.Assign)
        if assign is not None and any(loader in _bound_names(facts, t.target) for t in assign.targets):
            bound = stmt
        elif facts.has_name(stmt, loader.rsplit(".", 1)[-1]):  # reads it (or a namesake: then as before)
            if bound is None and isinstance(stmt, cst.For) and facts.over_phases(stmt) \
                    and isinstance(stmt.body, cst.IndentedBlock):
                return _bound_first(facts, stmt.body.body, loader)
            break
    return bound


def _weights_drawn_first(facts: Facts, body: Sequence[cst.CSTNode], loader: str) -> cst.CSTNode | None:
    """The last statement at the top of the epoch's body, before any reads `loader`, that draws a
    model's weights anew (`torch.nn.init.*_`, `reset_parameters()`, `module.apply(init)` of such a
    function, in the program's functions it calls): `set_epoch` goes after it, so that it draws from
    the random stream every process shares, before the pass gives each process its own (YasminaKerkeb's
    `compute_training` calls `self.weight_initializer()`, `self.apply(self.init_weights)` of
    `xavier_uniform_`, at every epoch's start: after `set_epoch`, each process trained its epoch from
    weights of its own, their gradients averaged, until `end_epoch()` gave all the main process's)."""
    drawn = None
    for stmt in body:
        if facts.has_name(stmt, loader.rsplit(".", 1)[-1]):
            break
        if _draws_weights(facts, stmt, 3):
            drawn = stmt
    return drawn


def _draws_weights(facts: Facts, node: cst.CSTNode, depth: int) -> bool:
    """Does `node` draw weights anew (`_weights_drawn_first`), here or in the program's functions it
    calls, `depth` calls deep?"""
    for call in facts.calls_in(node):
        qualified = facts.qualify(call.func) or ""
        if qualified.startswith("torch.nn.init.") and qualified.endswith("_") or mt.is_method_call(call, "reset_parameters"):
            return True
        if depth and any(_draws_weights(facts, f, depth - 1) for f in [*facts.user_functions(call),
                                                                        *_applied(facts, call)]):
            return True
    return False


def _applied(facts: Facts, call: cst.Call) -> list[cst.FunctionDef]:
    """The methods of the class around `call` that `module.apply(self.fn)` runs on every submodule."""
    if not mt.is_method_call(call, "apply") or len(call.args) != 1:
        return []
    fn = call.args[0].value
    cls = next((a for a in facts.ancestors(call) if isinstance(a, cst.ClassDef)), None)
    if cls is None or not isinstance(fn, cst.Attribute) or not mt.is_name(fn.value, "self"):
        return []
    return facts.method(cls, fn.attr.value)


def _rebuilt_after(facts: Facts, body: Sequence[cst.CSTNode], loaders: list[str]) -> cst.CSTNode | None:
    """The first of the statements at the end of the epoch's body that build a training loader anew
    for the next epoch, after the statements that read it (the eighteenth sweep's protonet:
    `train_sampler = BatchSampler(...)`, whose `__init__` draws the episodes, then `train_dataloader =
    DataLoader(train_dataset, batch_size=B, sampler=train_sampler)`): `end_epoch()` goes before them,
    so that what they draw comes from the stream every process shares again, as before the first
    epoch (drawn before it, each process would deal its batches from a stream of its own, and the
    shards would overlap). The statements just before the loader's that bind names it is built from
    are part of it. None where the body builds no loader after reading it, or reads it again after."""
    names = set(loaders)
    first = next((i for i, stmt in enumerate(body) if any(facts.has_name(stmt, n.rsplit(".", 1)[-1]) for n in names
                                                          if not _binds(facts, stmt, n))), None)
    if first is None:
        return None
    built = [i for i in range(first + 1, len(body)) if any(_binds(facts, body[i], n) for n in names)]
    if not built or any(facts.has_name(stmt, n.rsplit(".", 1)[-1]) and not _binds(facts, stmt, n)
                        for stmt in body[built[0] + 1:] for n in names):
        return None
    start = built[0]
    needed = set(mt.names_in(body[start]))
    while start - 1 > first and (bound := _assigned(facts, body[start - 1])) and bound & needed:
        start -= 1
        needed |= set(mt.names_in(body[start]))
    return body[start]


def _binds(facts: Facts, stmt: cst.CSTNode, loader: str) -> bool:
    return loader in _assigned(facts, stmt)


def _assigned(facts: Facts, stmt: cst.CSTNode) -> set[str]:
    """The names a statement of one assignment binds, as written."""
    assign = mt.sole(stmt, cst.Assign)
    return {n for t in assign.targets for n in _bound_names(facts, t.target)} if assign is not None else set()


def _bound_names(facts: Facts, target: cst.BaseExpression) -> list[str]:
    """The names an assignment's target binds, as written: `loader`, and each of `train_loader,
    test_loader = cfg.dataset_loader` (nested unpacking too)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _bound_names(facts, e.value)]
    return [facts.code(target)]


def _with_epoch(node: cst.BaseExpression, epoch: str) -> cst.Call:
    """`DataLoader(...)` -> `set_epoch(DataLoader(...), epoch)`: the loader a loop builds in its
    own header is reshuffled where it is built (a second `DataLoader(...)` would be another one)."""
    return cst.Call(cst.Name("set_epoch"), [cst.Arg(node, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                                            cst.Arg(cst.parse_expression(epoch))])
