"""shard-data: give each process its own part of the training data.

    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
->
    train_loader = DataLoader(train_set, batch_size=64, sampler=DistributedSampler(train_set, shuffle=True))

`shuffle=` moves into the sampler with its original value, literal or expression (DataLoader
refuses both); so does a `shuffle` given by place (`DataLoader(train_set, 64, True)`), and what
follows it by place is then given by name. A `sampler=None` given makes way for the new sampler
(`DataLoader(ds, shuffle=True, sampler=None)` -> `DataLoader(ds, sampler=DistributedSampler(ds,
shuffle=True))`). Other shapes:

    sampler = RandomSampler(ds)              ->  sampler = DistributedSampler(ds)
    sampler = SequentialSampler(ds)          ->  sampler = DistributedSampler(ds, shuffle=False)
    sampler = WeightedRandomSampler(w, n)    ->  sampler = ShardedSampler(WeightedRandomSampler(w, n))
    sampler = RandomSampler(ds, num_samples=bs * steps)
                                             ->  sampler = ShardedSampler(RandomSampler(ds, num_samples=(bs * steps) * get_world_size()))
    loader = DataLoader(ds, **kwargs)        ->  loader = DataLoader(ds, **kwargs)
                                                 loader = shard_loader(loader)
    {x: DataLoader(ds[x], shuffle=(x == "train")) for x in phases}
                                             ->  {x: DataLoader(ds[x], sampler=DistributedSampler(ds[x]) if (x == "train") else None) ...}
    loaders = {x: DataLoader(ds[x], shuffle=True) for x in ["train", "val"]}
                                             ->  loaders = {x: DataLoader(ds[x], shuffle=True) for x in ["train", "val"]}
                                                 loaders['train'] = shard_loader(loaders['train'])

The same holds for a loader made anew in a loop over phases whose `shuffle` is the phase's test
(`for split in splits:` / `data_loader = DataLoader(datasets[split], shuffle=split == 'train')`, with
`splits` a list of strings: `Facts.over_phases`): its sampler is a DistributedSampler in the phases
that shuffle and None in the others, which evaluate on the whole set. Made so with another `shuffle`
(`True`, or a test of other phases than those that train), it is passed through `shard_loader` in the
phases that train only (`phases.made_per_phase`): `if split == 'train': data_loader =
shard_loader(data_loader)` after the statement.

A loader a helper makes for training and for evaluation alike (`def get_dataloader(ds, shuffle=True):
return DataLoader(ds, shuffle=shuffle)`, its value bound to `valid_loader`, or given `VALID`, at
one call) is sharded at the training caller, the helper left as it is:

    train_loader = get_dataloader(TRAIN)
->
    train_loader = get_dataloader(TRAIN)
    train_loader = shard_loader(train_loader)

(sharded in the helper, the evaluation loader would be sharded too, its numbers one process's).

A loader a function makes and passes over itself, where every call of that function comes in a loop
(an epoch loop calls `train()`, which builds its loaders: no epoch loop can name them), is made anew
for each pass: it goes through `shard_loader`, which gives each the epoch after the last one made
there, so each pass draws a new order (decision 0235): `loader = DataLoader(ds, shuffle=True)` is
followed by `loader = shard_loader(loader)`.

A sampler passed by name is the one bound last before the loader is built (`s = A(...)` for one
loader, `s = balanced(y)` for the next: the next's is the function's), and one that several loaders
share is wrapped once; one made by another sampler class on another branch is wrapped too
(`SubsetRandomSampler(idx)` if a flag asks for shuffling, else the program's own `SubsetSampler(idx)`:
both become `ShardedSampler(...)`). A `BatchSampler` keeps its batching around the new sampler. `ShardedSampler` (runtime) keeps a
custom sampler's weighting and gives every process the same number of batches. A `RandomSampler` told how
many samples to draw (`num_samples=`, a count of draws, not the data set's size) draws that many on every
process: a loop that counts its steps up to what it was sized for (RPipe's `while step < num_steps` over one
`enumerate(loader)` iterator) would otherwise run out of batches halfway, and go round forever. `shard_loader`
(runtime) rebuilds a loader whose arguments are not visible here with a distributed sampler
that keeps its shuffle setting (`'shuffle'` arriving through a dict only on CUDA stays so); a
batch sampler of another class (`batch_sampler=BalancedBatchSampler(labels, ...)`) has its
batches dealt out in turn to the processes, drawn alike on every process.
An instance of the program's own DataLoader subclass (`class PairsLoader(data.DataLoader)`, whose
`__init__` takes parameters of its own and hands them to `super().__init__`, and whose methods the
training calls: `train_loader.negatives(k)`) is a training loader too; its call takes no `sampler=`,
so it passes through `shard_loader` (`train_loader = shard_loader(train_loader)` after it), which
replaces its sampling and keeps its class and attributes. So does one a configuration's registry
builds by name from a module of such classes (pytorch-template's `config.init_obj('data_loader',
module_data)`, `Facts.looked_up_in`).
An iterator the program draws a fixed number of times and never expects to run out
(`batches = iter(get_loader(ds))`, then `next(batches)` in a loop, no `except StopIteration`)
becomes `endless(...)` (runtime): a process's shard holds 1/N of the batches, and where one pass
ends it starts the next, with the next epoch. So does an `enumerate` over the loader drawn so,
also in a helper the loader is handed to (`sample = enumerate(data)` ->
`sample = enumerate(endless(data))`). Evaluation loaders stay whole here (shard-eval splits their loops where the numbers stay
exact); in a dict keyed by phase, the key whose loop steps no optimizer ('val') evaluates
(ddpify.analysis.phases), and the comprehension that builds both has its training item sharded. A loader over
an `IterableDataset` of the program's, which no sampler can split, passes through `shard_loader`:

    loader = DataLoader(Stream(files), batch_size=32)
->
    loader = DataLoader(Stream(files), batch_size=32)
    loader = shard_loader(loader)

and each process takes its item of every round of world_size items of the stream (each worker's
copy: of the part the dataset gives that worker), an incomplete last round dropped on every process, so
every process takes as many steps where every process's stream is as long (files read in order; any
endless stream); a warning there says so, and that a stream drawn at random is each process's own
draw. So does a library's stream that every process would read whole: a `datasets` stream
(`load_dataset(..., streaming=True)`, `.to_iterable_dataset()`) or a datapipe (`IterableWrapper(items).map(f)`),
where a `sampler=` would stop every process at the loader's line. A datapipe with a `sharding_filter()`
is left as it is (DataLoader splits it by process itself). One whose class speaks of ranks or world
sizes (`get_rank()` in its `__iter__`: it may split itself) gets a TODO instead, as does a library's
stream that splits itself only where told how (a webdataset pipeline, `split_dataset_by_node`). So does training that no DataLoader feeds (generated batches, RL rollouts): every process then makes its
own data, and the TODO says what that means. A count of a sharded loader's batches that the program
lowers and divides by (`num = len(trn_loader) - 1`, then `1 / num`) gets a TODO with the least
number of batches per process it needs (ddpify.analysis.counts). A learning-rate schedule stepped
once per batch of a sharded loader whose total steps count the training set's samples
(`OneCycleLR(opt, max_lr, total_steps=len(train_set) // bs * epochs)`) runs 1/world_size of its course:
it is named with a warning at the schedule (ddpify.analysis.schedules); one counted by the loader
(`len(train_loader) * epochs`) shrinks with the shard, as it should, and is left alone. One of a fixed
number of steps (`StepLR(opt, step_size=2000)`, `MultiStepLR(opt, milestones=[...])`, `T_max=`, an
`ExponentialLR`) stepped per batch in a `for` over a sharded loader now runs over world_size times as
many epochs: named with a warning at its `step()`.

Training batched by hand, with no DataLoader (ddpify.analysis.hand_batches: a `range` whose variable
slices a window of the data, or splits of tensors, in a loop that trains), is dealt out the same way:

    for epoch in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, bs):
            idx = perm[i:i + bs]
->
    for epoch in range(epochs):
        agree_random_state()
        perm = torch.randperm(n)
        for i in shard_batches(range(0, n, bs)):
            idx = perm[i:i + bs]

    for xb, yb in zip(X.split(bs), y.split(bs)):  ->  for xb, yb in shard_batches(zip(X.split(bs), y.split(bs))):

`shard_batches` (runtime) gives each process every world_size-th batch, all as many (the last round
wrapped round to the first), and the batches as they are with one process; `agree_random_state()`
(runtime), before the permutation drawn at each epoch (or in a function a loop calls), gives every
process the main process's random state, so that they deal from the same order. A loop the analysis
cannot prove safe (a state carried from batch to batch, a `break` or `continue`, steps counted round
the data) keeps its TODO, which says why.

Training on batches drawn at random offsets into the data, with no DataLoader (nanoGPT's
`get_batch`: `ix = torch.randint(len(data) - block, (bs,))`, `hand_batches.random_offset_draws`),
draws each process's batch from a random stream of its own:

    X, Y = get_batch("train")  ->  with own_random_stream():
                                       X, Y = get_batch("train")

`own_random_stream()` (runtime) runs the block on the process's own stream, seeded by its rank, and
gives the program back the shared one, unmoved: each process trains on batches of its own (DDP
averages the gradients over distinct draws; the global batch is batch_size x the number of
processes), and what else the program draws (dropout, `estimate_loss()`'s batches, which decide a
save) stays alike on every process. With one process it does nothing.

Every process builds its own data set, and a distributed sampler's index i must name the same
sample on all of them. A sequence listed from a set of strings does not: str hashes are salted per
process, so each process lists the set in its own order (ddpify.analysis.set_order), and the shards
overlap and miss samples; a class numbering taken from a set gives each process other labels:

    self.files = list(set(names))  ->  self.files = list(dict.fromkeys(names))

`dict.fromkeys` holds the same distinct items, in the order they first come, on every process
(also in `tuple(...)`, `enumerate(...)` and list, dict and generator comprehensions over the set).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis import objects, phases, schedules, set_order
from ddpify.analysis.hand_batches import random_offset_draws
from ddpify.analysis.loaders import (NAMED, is_iterable_dataset, library_stream, made_per_pass, shared_helper_callers,
                                     unfed_training)
from ddpify.analysis.models import lazy_unwrapped
from ddpify.output import build
from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.loaders import Loaders
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "shard-data"
SUMMARY = "give each process a disjoint shard of every training loader (evaluation loaders stay whole)"

SAMPLER_FIXES = {
    "torch.utils.data.RandomSampler": "DistributedSampler({dataset})",
    "torch.utils.data.SequentialSampler": "DistributedSampler({dataset}, shuffle=False)",
}


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    found = analysis.loaders
    done: set[cst.Call] = set()  # samplers wrapped already: two loaders may share one
    _name_streams(facts, edits, found)
    for call in found.training:
        _shard_training(facts, edits, found, call, done)
    for loop in found.manual:
        why = found.hand.whole.get(loop)
        edits.todo(loop, "batches are sliced by hand, so every process trains on all the data (correct, "
                   "no speed-up): use a DataLoader, which ddpify shards with a DistributedSampler" +
                   (f" (ddpify deals such batches out to the processes, but not here: {why})" if why else ""))
    _deal(facts, edits, found)
    for made in _drawn_without_end(facts, found.training):  # (sharded: a model wrapped, or tensors synced)
        why = ("this iterator is drawn by next() a fixed number of times and never expected to run out; each "
               "process's pass now holds 1/N of the batches: endless() starts the next pass (next epoch) where one ends")
        if mt.is_name(made.func, "iter"):
            edits.replace(made.func, lambda node: cst.Name("endless"), why)
        else:  # `enumerate(loader)`: its loader, `enumerate(endless(loader))`
            edits.replace(made.args[0].value, lambda node: cst.Call(cst.Name("endless"), [cst.Arg(node)]), why)
        edits.add_import("ddpify_runtime", "endless")
    for call, optimizer in found.withheld:
        stepping = f"`{facts.code(optimizer.func)}(...)`" if isinstance(optimizer, cst.Call) else "an optimizer"
        lazy = lazy_unwrapped(facts, optimizer)
        model = "a model ddpify could not find, and so did not wrap" if lazy is None else \
            f"`{lazy[1].name}`, left unwrapped for its lazy layer ({lazy[0]}) until a dry run makes its parameters"
        edits.todo(facts.statement(call), f"this loader trains but is left whole: {stepping} (a TODO there) steps "
                   f"{model}; on sharded data that model would train apart on each process: wrap it by hand, then "
                   "shard this loader (DistributedSampler)")
    for call in found.unwrapped:
        edits.todo(facts.statement(call), "this loader trains but is left whole: no model is wrapped in "
                   "DistributedDataParallel (no optimizer that ddpify could read steps one: see the warning at the "
                   "training); on sharded data each process would train its own model, so every process trains on "
                   "all the data (correct, no speed-up): build the optimizer where ddpify can read it, or wrap the "
                   "model and shard this loader by hand")
    if analysis.models.wrapped:
        for taken in set_order.taken_from_sets(facts):
            edits.replace(taken.func, lambda node: cst.parse_expression("dict.fromkeys"),
                          "`set(...)` lists its items in an order that differs between processes (str hashes are "
                          "salted per process): `dict.fromkeys(...)` holds the same items in the order they first "
                          "come, the same on every process, so an index or a number taken from it names the same "
                          "item everywhere")
    if found.training or found.hand.dealt:
        edits.warn(found.training[0] if found.training else found.hand.dealt[0].loop, "batch_size is now per "
                   "process: the global batch is batch_size x the number of processes")
    elif (outer := unfed_training(facts, analysis.models, found)) is not None and not _own_draws(facts, edits, outer):
        if outer is not None:
            edits.todo(outer, "no DataLoader feeds this training, so ddpify cannot shard its data: every process "
                       "trains on all the data it reads (correct, no speed-up; to share the work, feed it from a "
                       "DataLoader, which ddpify shards), and batches it generates "
                       "(random batches, RL rollouts) start from the same random state on every process: "
                       "seed with an offset of get_rank() before this loop if they should differ")
    if analysis.models.wrapped:
        _name_schedules(facts, found, edits)
    for count in analysis.counts:
        divided = count.divided.with_changes(lpar=[], rpar=[]) if isinstance(count.divided, cst.BinaryOperation) \
            else count.divided
        edits.todo(facts.statement(count.lowered), f"`{facts.code(count.lowered)}` counts this process's batches of "
                   f"a sharded loader (about 1/world_size of the single-GPU count), and `{facts.code(divided)}` "
                   f"divides by it: it needs at least {count.least} batches per process, or it divides by 0; give "
                   "each process that many (more data, a smaller batch_size or fewer processes)")


def _own_draws(facts: Facts, edits: Edits, outer: cst.For | cst.While) -> bool:
    """Run each draw of a training batch at random offsets (ddpify.analysis.hand_batches.random_offset_draws)
    on the process's own random stream; False where the loop `outer`, fed by no DataLoader, has none."""
    drawn = random_offset_draws(facts, outer)
    for stmt in drawn:
        edits.enclose(stmt, "with own_random_stream():")
        edits.record(stmt, "a batch drawn at random offsets: each process draws its own, from a random stream of its "
                     "own (own_random_stream); the program's shared stream, which its other draws use, is left as it was")
    if drawn:
        edits.add_import("ddpify_runtime", "own_random_stream")
        edits.warn(outer, "batches are drawn per process: the global batch is the batch drawn x the number of processes")
    return bool(drawn)


def _deal(facts: Facts, edits: Edits, found: Loaders) -> None:
    """Deal out to the processes the batches of the training loops that batch by hand
    (ddpify.analysis.hand_batches), and agree the random state before a permutation drawn for them."""
    agreed: set[cst.CSTNode] = set()
    for dealt in found.hand.dealt:
        edits.replace(dealt.batches, lambda node: cst.Call(cst.Name("shard_batches"), [cst.Arg(node)]),
                      f"batches sliced by hand dealt out to the processes: each takes every world_size-th of "
                      f"`{facts.code(dealt.batches)}`, all as many (the last round wrapped round to the first)",
                      needs_group=True)
        edits.add_import("ddpify_runtime", "shard_batches")
        if dealt.agree_at is not None and dealt.agree_at not in agreed:
            agreed.add(dealt.agree_at)
            edits.insert_before(dealt.agree_at, "agree_random_state()\n")
            edits.record(dealt.agree_at, "every process takes the main process's random state here, so that the "
                         "random order drawn below for the batches dealt out is the same on every process (their "
                         "parts disjoint)", needs_group=True)
            edits.add_import("ddpify_runtime", "agree_random_state")
        edits.warn(dealt.loop, "the batches of this loop are dealt out to the processes: each takes about "
                   "1/world_size of the steps of a pass, so a schedule the program counts in steps from the data's "
                   "size (epochs * ceil(n / batch_size)) runs that part of its course, and what the loop sums or "
                   "averages (an epoch's loss) is this process's part of the data; all_reduce it "
                   "(torch.distributed.all_reduce) where the whole data's number matters")


def _shard_training(facts: Facts, edits: Edits, found: Loaders, call: cst.Call, done: set[cst.Call]) -> None:
    """Shard one training loader: by the keys of the dict a comprehension builds, through
    `shard_loader` where a loop makes it anew at each round and numbers no epoch (each one made
    there continues the epochs of the last), at its callers, or in its call."""
    if call in found.by_key:
        _shard_keys(facts, edits, call, *found.by_key[call])
    elif call in found.rebuilt and not mt.loader_arg(call, "sampler") and not mt.loader_arg(call, "batch_sampler"):
        _wrap_loader(facts, edits, call, "it is made anew at each round of a loop that numbers no epoch: each "
                     "one made there continues the epochs of the last, so each pass draws a new order")
    elif not _shard_at_callers(facts, edits, call):
        _shard(facts, edits, call, done)


def _name_schedules(facts: Facts, found: Loaders, edits: Edits) -> None:
    """Warn at the learning-rate schedules stepped once per batch of a sharded loader whose course
    sharding changes: counted by the data set's samples (at the schedule), or a fixed number of
    steps (at its `step()`; ddpify.analysis.schedules)."""
    for built, length in schedules.counted_by_samples(facts, found):
        edits.warn(facts.statement(built), f"`{facts.code(built.func)}(...)` counts its steps by `{facts.code(length)}`, "
                   "the whole training set, but steps once per batch of a sharded loader: each process draws about "
                   "1/world_size of those batches, so the schedule runs only that part of its course; count by the "
                   "loader (`len(train_loader)`, this process's batches) or divide by get_world_size()")
    for step, built in schedules.counted_in_steps(facts, found):
        edits.warn(facts.statement(step), f"`{facts.code(step.func)}()` steps `{facts.code(built.func)}(...)`, a "
                   "schedule of a fixed number of steps, once per batch of a sharded loader: each process draws about "
                   "1/world_size of the batches an epoch, so the schedule now runs over world_size times as many "
                   "epochs (its changes come later, perhaps after the run ends); divide its step counts by "
                   "get_world_size(), or count them by the loader (len(train_loader))")


def _drawn_without_end(facts: Facts, training: list[cst.Call]) -> list[cst.Call]:
    """The `iter(loader)` and `enumerate(loader)` calls of training loaders whose iterator, kept in
    a name made nowhere else, is drawn only by `next(it)` in a loop, with no default and no `except`
    around it that catches its end (`StopIteration`, `Exception`, a bare `except`): the program never
    expects it to run out (`it = iter(get_loader(data)); for step in range(n): x, y = next(it)`), also
    where it is made on some paths only (`iter(loader) if previous else None`), and where a helper
    is handed the loader: YasminaKerkeb's `get_target_distribution(data, batch_size, n_rows)` walks
    `sample = enumerate(data)` by `next(sample)` `int(n_rows / batch_size) + 1` times, the batches
    of the whole training split, and ran out of a process's shard (StopIteration) before."""
    flow, found = objects.of(facts), []
    for call in facts.calls_named("iter", "enumerate"):
        if not (mt.is_name(call.func, "iter") and len(call.args) == 1 or mt.is_name(call.func, "enumerate") and
                len(call.args) in (1, 2) and call.args[0].keyword is None and call.args[0].star == "") or \
                not flow.of_kind(call.args[0].value, objects.LOADER) & set(training):
            continue
        assign = mt.sole(facts.statement(call), cst.Assign)
        value = assign.value if assign is not None else None
        if isinstance(value, cst.IfExp) and call in (value.body, value.orelse) and \
                mt.is_name(value.orelse if value.body is call else value.body, "None"):
            value = call  # `it = iter(loader) if previous else None`: made on some paths only
        if assign is None or value is not call or len(assign.targets) != 1 or \
                not isinstance(assign.targets[0].target, cst.Name):
            continue
        target = assign.targets[0].target
        ref = facts.ref(target, facts.statement(call))
        reads = [r for r in facts.references(facts.scope(call), target.value)
                 if r is not target and facts.ref(r) == ref] if ref is not None else []
        reads = [r for r in reads if not isinstance(facts.parent(r), cst.Comparison)]  # `if it is not None:`
        if ref is None or len(facts.writes(ref)) != 1 or not reads:
            continue
        drawn = [facts.parent(arg) for r in reads if isinstance(arg := facts.parent(r), cst.Arg)]
        if len(drawn) != len(reads) or not all(
                isinstance(c, cst.Call) and mt.is_name(c.func, "next") and len(c.args) == 1
                and next(facts.enclosing_loops(c), None) is not None and not _ends_caught(facts, c) for c in drawn):
            continue
        found.append(call)
    return found


def _ends_caught(facts: Facts, node: cst.CSTNode) -> bool:
    """Is `node` inside a `try` one of whose handlers catches StopIteration (or all exceptions)?"""
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.Try) and any(h.type is None or (dotted(h.type) or "").split(".")[-1] in
                                            ("StopIteration", "Exception", "BaseException") or
                                            isinstance(h.type, cst.Tuple) for h in anc.handlers):
            return True
    return False


def _name_streams(facts: Facts, edits: Edits, found: Loaders) -> None:
    """The TODOs at the training loaders over a stream left whole (`Loaders.iterable`), and a line at
    each over a datapipe DataLoader splits itself (`Loaders.self_split`)."""
    for call in found.iterable:
        if library_stream(facts, call) == NAMED:
            edits.todo(facts.statement(call), "this loader reads a library's stream that splits itself between "
                       "processes only where it is told how (a webdataset pipeline: `nodesplitter=wds.split_by_node`, "
                       "newer versions refuse several processes without one; `split_dataset_by_node(ds, "
                       "rank=get_rank(), world_size=get_world_size())`), so ddpify leaves it whole: tell it, or "
                       "every process trains on all of it")
            continue
        edits.todo(facts.statement(call), "this loader reads an IterableDataset whose class speaks of ranks or "
                   "world sizes, so ddpify leaves it whole: check that its __iter__ splits the stream by "
                   "ddpify_runtime.get_rank()/get_world_size(), or every process trains on all of it")
    for call in found.self_split:
        edits.record(call, "training loader left as it is: it reads a datapipe with a `sharding_filter()`, which "
                     "DataLoader splits between the processes itself", needs_group=True)


def _shard_at_callers(facts: Facts, edits: Edits, call: cst.Call) -> bool:
    """Shard where a helper shared by training and evaluation is called for training
    (`analysis.loaders.shared_helper_callers`); False where `call` is no such helper's loader."""
    callers = shared_helper_callers(facts, call)
    if callers is None:
        return False
    training, evaluating = callers
    for site in training:
        _wrap_loader(facts, edits, site, f"`{facts.code(site.func)}` makes it where it trains, and also the "
                     f"evaluation loader `{facts.code(evaluating[0])}`, which stays whole")
    return True


def _rebuilt_at_run_time(facts: Facts, edits: Edits, call: cst.Call) -> bool:
    """Pass through `shard_loader` the loaders whose sampler the call cannot be given: over an
    IterableDataset, of a DataLoader class a configuration names or the program defines, made
    through a `functools.partial`. True where it did."""
    if is_iterable_dataset(facts, call):
        _wrap_loader(facts, edits, call, "it reads an IterableDataset, which no sampler can split",
                     "each process takes its item of every round of world_size items of the stream")
        edits.warn(facts.statement(call), "this loader's IterableDataset is split in turn: each process takes "
                   "every world_size-th item of its stream, whole rounds only, so the processes take as many steps "
                   "where their streams are as long (files read in order, an endless stream); a finite stream whose "
                   "length differs between processes would leave one waiting for the others, and one drawn at "
                   "random is each process's own draw")
        return True
    module = facts.looked_up_in(call)
    if module is not None:  # `config.init_obj('data_loader', module_data)`: a class the configuration names
        _wrap_loader(facts, edits, call, f"it is an instance of a DataLoader class of `{module}` that a configuration "
                     "names", "its sampler is made distributed, keeping its shuffle setting, its class and its attributes")
        return True
    if objects.of(facts).partial_callee(call) is not None:  # `make(ds)` of `make = partial(DataLoader, ...)`
        _wrap_loader(facts, edits, call, "it is made through a functools.partial that gives some of its arguments, "
                     "a shuffle setting among them maybe")
        return True
    if objects.of(facts).constructs(call) is not None:  # the program's DataLoader subclass: its own parameters
        _wrap_loader(facts, edits, call, "it is an instance of the program's own DataLoader subclass, whose "
                     "parameters are its own", "its sampler is made distributed, keeping its shuffle setting, "
                     "its class and its attributes")
        return True
    if made_per_pass(facts, call):
        _wrap_loader(facts, edits, call, "it is made anew for each pass, where no epoch loop can name it: each "
                     "one made there continues the epochs of the last", "it is rebuilt with a distributed sampler "
                     "that keeps its shuffle setting")
        return True
    return False



def _shard(facts: Facts, edits: Edits, call: cst.Call, done: set[cst.Call]) -> None:
    if _rebuilt_at_run_time(facts, edits, call):
        return
    for key in ("batch_sampler", "sampler"):
        arg = mt.loader_arg(call, key)
        if arg is not None and not mt.is_name(arg.value, "None"):
            _shard_given(facts, edits, call, key, arg.value, done)
            return
    dataset = mt.positional(call, 0) or mt.keyword(call, "dataset")
    if mt.has_double_star(call) or dataset is None or not mt.is_simple_reference(dataset.value):
        _wrap_loader(facts, edits, call, "its arguments are built elsewhere" if mt.has_double_star(call)
                     else "its dataset is built in the call")
        return
    shuffle = mt.loader_arg(call, "shuffle")
    per_phase = phases.made_per_phase(facts, call)
    if per_phase is not None and not _shuffled_where_it_trains(shuffle, *per_phase) \
            and _shard_in_phases(facts, edits, call, *per_phase[:2]):
        return
    ds = facts.code(dataset.value)
    value = None if shuffle is None else facts.code(shuffle.value)
    if shuffle is not None and value is not None and _depends_on_phase(facts, call, shuffle.value):
        sampler_code = f"DistributedSampler({ds}) if {value} else None"
    elif value == "True":
        sampler_code = f"DistributedSampler({ds}, shuffle=True)"
    else:
        sampler_code = f"DistributedSampler({ds}, shuffle={value or 'False'})"
    new_arg = build.keyword("sampler", sampler_code)

    def fix(node: cst.Call) -> cst.Call:
        args = list(node.args)
        idx = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == "shuffle"), None)
        places = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        if idx is None and len(places) > mt.LOADER_PLACES["shuffle"]:  # `DataLoader(train_set, 64, True, ...)`
            # what is given by place from `shuffle` on is given by name
            for place, i in enumerate(places[2:len(mt.LOADER_ORDER)], start=2):
                args[i] = args[i].with_changes(keyword=cst.Name(mt.LOADER_ORDER[place]), equal=build.NO_SPACE)
        # a `sampler=None` given is dropped, the new sampler given instead (`shuffle=True, ..., sampler=None`)
        given = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == "sampler"
                      and mt.is_name(a.value, "None")), None)
        if given is not None:
            args = _without(args, given)
        idx = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == "shuffle"), None)
        if idx is None:
            return build.append_arg(node.with_changes(args=args), new_arg)
        args[idx] = new_arg.with_changes(comma=args[idx].comma, whitespace_after_arg=args[idx].whitespace_after_arg)
        return node.with_changes(args=args)

    edits.replace(call, fix, f"training loader sharded with {sampler_code}", needs_group=True)
    edits.add_import("torch.utils.data.distributed", "DistributedSampler")


def _without(args: list[cst.Arg], i: int) -> list[cst.Arg]:
    """`args` less its `i`th; the one before takes its comma where it was the last."""
    if i == len(args) - 1 and i > 0:
        args[i - 1] = args[i - 1].with_changes(comma=args[i].comma, whitespace_after_arg=args[i].whitespace_after_arg)
    return args[:i] + args[i + 1:]


def _shard_given(facts: Facts, edits: Edits, call: cst.Call, key: str, given_value: cst.BaseExpression,
                 done: set[cst.Call]) -> None:
    """A loader given its `sampler` or `batch_sampler` (`key`): the samplers it may be given are
    sharded where they are made; where none is seen, or it may be None, the loader is passed
    through `shard_loader`."""
    given = [sampler for value in _values_at(facts, given_value, call)
             for sampler in _sampler_calls(facts, value, unbatch=(key == "batch_sampler"))]
    for sampler in dict.fromkeys(given):
        if sampler not in done:
            done.add(sampler)
            _replace_sampler(facts, edits, sampler)
    if not given and key == "batch_sampler":  # a batch sampler of the program's own class, say
        _wrap_loader(facts, edits, call, "its batch_sampler is built elsewhere",
                     "its batch sampler's batches are dealt out in turn, the same number to each process")
    elif not given:
        _wrap_loader(facts, edits, call, f"its {key} is built elsewhere")
    elif _may_be_none(facts, given_value, call):
        _wrap_loader(facts, edits, call, f"its {key} is None on some paths")


def _depends_on_phase(facts: Facts, call: cst.Call, expr: cst.BaseExpression) -> bool:
    """Is `expr` computed from a phase key: the variable of a comprehension around the loader, or
    of a loop over phases (`for split in splits:` with `splits = ['train', 'valid']`,
    `Facts.over_phases`) that makes a loader for each?"""
    names = mt.names_in(expr)
    for anc in facts.ancestors(call):
        if isinstance(anc, (cst.DictComp, cst.ListComp, cst.GeneratorExp)):
            targets = mt.names_in(anc.for_in.target)
        elif isinstance(anc, cst.For) and facts.over_phases(anc) and not facts.in_header(call, anc):
            targets = mt.names_in(anc.target)
        else:
            continue
        if names & targets:
            return True
    return False


def _values_at(facts: Facts, expr: cst.BaseExpression, call: cst.Call) -> list[cst.BaseExpression]:
    """The values the name `expr` may hold where `call` reads it: a binding in the same function
    after the call, in no loop around the call, never reaches it (`sampler = None`, the loader
    built with `sampler=sampler`, then `sampler = ImbalancedSampler(ds)` in the epoch loop after
    it: the loader keeps None). `[expr]` when every binding may reach it, or for another expression."""
    ref = facts.ref(expr) if isinstance(expr, cst.Name) else None
    if ref is None:
        return [expr]
    scope, loops = facts.scope(call), list(facts.enclosing_loops(call))
    writes = [(value, stmt) for _, value, stmt in facts.writes(ref) if not isinstance(stmt, cst.AugAssign)]
    reach = [(value, stmt) for value, stmt in writes if facts.scope(stmt) is not scope or facts.before(stmt, call)
             or any(facts.is_inside(stmt, loop) for loop in loops)]
    last = max((stmt for _, stmt in reach if _runs_before_each(facts, stmt, call)), key=lambda stmt: facts.spans[stmt][0],
               default=None)
    if last is not None:  # `s = A(); loader(sampler=s); s = balanced(y); loader(sampler=s)`: A() is not the 2nd's
        reach = [(value, stmt) for value, stmt in reach if facts.scope(stmt) is not scope or not facts.before(stmt, last)]
    return [value for value, _ in reach] if reach and len(reach) < len(writes) else [expr]


def _may_be_none(facts: Facts, expr: cst.BaseExpression, call: cst.Call) -> bool:
    """May the name `expr` hold `None` where `call` reads it (`train_sampler = None` unless a flag
    asks for a weighted one, the loader then made with `shuffle=(train_sampler is None)`)? The
    loader's own default sampler then reads the whole data set in every process."""
    values = _values_at(facts, expr, call)
    ref = facts.ref(expr) if isinstance(expr, cst.Name) else None
    if values == [expr] and ref is not None:
        values = [value for _, value, stmt in facts.writes(ref) if not isinstance(stmt, cst.AugAssign)]
    return any(mt.is_name(value, "None") for value in values)


CONDITIONAL = (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler, cst.Match)


def _runs_before_each(facts: Facts, stmt: cst.CSTNode, call: cst.Call) -> bool:
    """Does `stmt` run before `call` each time it runs: in its function, before it, in no
    branch, loop or `try` that does not also hold the call?"""
    return facts.scope(stmt) is facts.scope(call) and facts.before(stmt, call) and \
        all(facts.is_inside(call, anc) for anc in facts.ancestors(stmt) if isinstance(anc, CONDITIONAL))


def _sampler_calls(facts: Facts, expr: cst.BaseExpression, unbatch: bool) -> list[cst.Call]:
    """The constructor calls of the sampler behind `sampler=`/`batch_sampler=`: the first call it
    comes from, the other calls of that constructor it may come from (a function the program
    defines twice, returning one each), and the samplers of other classes it may come from by the
    branch taken (`SubsetRandomSampler(idx)` if a flag asks for it, else the program's own
    `SubsetSampler(idx)`: the held-out aps_train_seq trained on all the data on every process)."""
    calls = [origin for origin in facts.origins(expr, depth=3) if isinstance(origin, cst.Call)]
    if not calls:
        return []
    callee = facts.qualify(calls[0].func) or dotted(calls[0].func)
    calls = [c for c in calls if (facts.qualify(c.func) or dotted(c.func)) == callee
             or not unbatch and _makes_sampler(facts, calls[0]) and _makes_sampler(facts, c)]
    if not unbatch:
        return calls
    if callee != "torch.utils.data.BatchSampler":
        return []
    inner = [arg for c in calls if (arg := mt.positional(c, 0) or mt.keyword(c, "sampler")) is not None]
    return [sampler for arg in inner for sampler in _sampler_calls(facts, arg.value, unbatch=False)]


def _makes_sampler(facts: Facts, call: cst.Call) -> bool:
    """Does `call` make a sampler of single indices: one of `torch.utils.data`'s (not a
    `BatchSampler`), or of a class of the program whose base is one (`class SubsetSampler(Sampler)`)?"""
    qualified = facts.qualify(call.func) or ""
    cls = facts.classes.get(call.func.value) if isinstance(call.func, cst.Name) else None
    bases = [facts.qualify(base.value) or "" for base in cls.bases] if cls is not None else [qualified]
    return any(b.startswith("torch.utils.data") and b.endswith("Sampler") and not b.endswith("BatchSampler")
               for b in bases)


def _replace_sampler(facts: Facts, edits: Edits, sampler: cst.Call) -> None:
    qualified = facts.qualify(sampler.func)
    dataset = mt.positional(sampler, 0) or mt.keyword(sampler, "data_source")
    plain = len(sampler.args) == 1 and dataset is not None
    if qualified in SAMPLER_FIXES and plain and dataset is not None:
        text = SAMPLER_FIXES[qualified].format(dataset=facts.code(dataset.value))
        edits.replace(sampler, lambda node: cst.parse_expression(text),
                      f"{dotted(sampler.func)} -> {text}: each process draws its own shard")
        edits.add_import("torch.utils.data.distributed", "DistributedSampler")
        return
    name = dotted(sampler.func) or "sampler"
    if qualified == "torch.utils.data.RandomSampler" and _drawn_count(sampler) is not None:
        edits.replace(sampler, lambda node: build.call("ShardedSampler", _per_process(node)),
                      f"{name} wrapped in ShardedSampler, its num_samples drawn on every process (a count of "
                      "draws: each process makes as many steps as the single process did)")
        edits.add_import("ddpify_runtime", "ShardedSampler")
        edits.add_import("ddpify_runtime", "get_world_size")
        return
    share = ("its weighting is kept, each process draws an equal share of its indices"
             if (qualified or "").startswith("torch.") else
             "each process takes whole batches of its stream in turn, so that a batch its order makes "
             "(an episode, a bucket) stays whole")
    edits.replace(sampler, lambda node: build.call("ShardedSampler", node), f"{name} wrapped in ShardedSampler: {share}")
    edits.add_import("ddpify_runtime", "ShardedSampler")


def _drawn_count(sampler: cst.Call) -> cst.Arg | None:
    """`RandomSampler`'s `num_samples` (by name, or third by place), where given and not None."""
    arg = mt.keyword(sampler, "num_samples") or mt.positional(sampler, 2)
    return None if arg is None or mt.is_name(arg.value, "None") else arg


def _per_process(sampler: cst.Call) -> cst.Call:
    """`RandomSampler(ds, num_samples=n)` -> `RandomSampler(ds, num_samples=(n) * get_world_size())`."""
    arg = _drawn_count(sampler)
    if arg is None:
        return sampler
    value = arg.value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
        if isinstance(arg.value, (cst.BinaryOperation, cst.BooleanOperation, cst.IfExp)) and not arg.value.lpar else arg.value
    scaled = cst.BinaryOperation(value, cst.Multiply(), build.call("get_world_size"))
    return sampler.with_changes(args=[a.with_changes(value=scaled) if a is arg else a for a in sampler.args])


def _shard_keys(facts: Facts, edits: Edits, call: cst.Call, name: str, keys: tuple[str, ...]) -> None:
    """A comprehension builds the loaders of every phase and only `keys` train: those items are
    sharded after the statement, the others stay whole (they evaluate)."""
    edits.add_import("ddpify_runtime", "shard_loader")
    items = [f"{name}[{key!r}]" for key in keys]
    edits.insert_after(facts.statement(call), "".join(f"{item} = shard_loader({item})\n" for item in items))
    edits.record(call, f"training loader {', '.join(items)} passed through shard_loader() (the comprehension "
                 "also builds loaders that only evaluate, which stay whole): it is rebuilt with a distributed "
                 "sampler that keeps its shuffle setting")


def _shuffled_where_it_trains(shuffle: cst.Arg | None, var: str, training: list[str], keys: list[str]) -> bool:
    """Is the loader's `shuffle` the test of the phases that train (`shuffle=split == 'train'`,
    read with each phase put in): then `DistributedSampler(ds) if <shuffle> else None` shards
    exactly those, and the others keep their unshuffled whole loader."""
    return shuffle is not None and all(phases.evaluate(shuffle.value, var, k) is (k in training) for k in keys)


def _shard_in_phases(facts: Facts, edits: Edits, call: cst.Call, var: str, training: list[str]) -> bool:
    """A loader made anew for each phase, whose training phases are `training`: passed through
    `shard_loader` in those phases only, after the statement that makes it (the others evaluate on
    the whole set). False where that statement does not bind it to a name."""
    stmt = facts.statement(call)
    assign = mt.sole(stmt, cst.Assign)
    if assign is None or assign.value is not call or len(assign.targets) != 1 \
            or not isinstance(assign.targets[0].target, (cst.Name, cst.Attribute)):
        return False
    name = facts.code(assign.targets[0].target)
    test = f"{var} == {training[0]!r}" if len(training) == 1 else f"{var} in {tuple(training)!r}"
    edits.insert_after(stmt, f"if {test}:\n    {name} = shard_loader({name})\n")
    edits.add_import("ddpify_runtime", "shard_loader")
    edits.record(call, f"training loader passed through shard_loader() where `{test}` (made anew for each "
                 "phase; the phases that do not train evaluate on the whole set): it is rebuilt with a "
                 "distributed sampler that keeps its shuffle setting")
    return True


def _wrap_loader(facts: Facts, edits: Edits, call: cst.Call, why: str,
                 how: str = "it is rebuilt with a distributed sampler that keeps its shuffle setting") -> None:
    message = f"training loader passed through shard_loader() ({why}): {how}"
    edits.add_import("ddpify_runtime", "shard_loader")
    stmt = facts.statement(call)
    assign = mt.sole(stmt, cst.Assign)
    if assign is not None and assign.value is call and len(assign.targets) == 1 \
            and isinstance(assign.targets[0].target, (cst.Name, cst.Attribute)):
        name = facts.code(assign.targets[0].target)
        edits.insert_after(stmt, f"{name} = shard_loader({name})\n")
        edits.record(call, message)
    else:
        edits.replace(call, lambda node: build.call("shard_loader", node), message)
