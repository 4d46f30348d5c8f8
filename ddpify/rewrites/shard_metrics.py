"""shard-metrics: add up over the processes a sum over one shard that is divided by the full dataset size.

    for inputs, labels in dataloaders[phase]:       # sharded: this process sees 1/N of it
        criterion(model(inputs), labels).backward()
        running_corrects += (preds == labels).sum()
    epoch_acc = running_corrects.double() / dataset_sizes[phase]
->
    for inputs, labels in dataloaders[phase]:       # sharded: this process sees 1/N of it
        criterion(model(inputs), labels).backward()
        running_corrects += (preds == labels).sum()
    running_corrects = sum_over_shards(dataloaders[phase], running_corrects)
    epoch_acc = running_corrects.double() / dataset_sizes[phase]

The same where a sum is divided by a count of what its own loop saw (`n += y.size(0)`, `len(y)`,
`y.shape[0]`, `y.numel()`, `n += 1`, `n += loader.batch_size`, or a name the loop sets to one, `bs =
y.size(0)`; kept from zero, `max(n, 1)`, too), the count summed with it, so that every process reports
the whole set's mean and not its shard's:

    mae, n = 0., 0
    for x, y in data_loader:                         # run over the sharded training loader too
        n += y.size(0)
        mae += torch.sum(torch.abs(model(x) - y))
    return mae / n
->
    mae, n = 0., 0
    for x, y in data_loader:                         # run over the sharded training loader too
        n += y.size(0)
        mae += torch.sum(torch.abs(model(x) - y))
    mae, n = sum_over_shards(data_loader, mae, n)
    return mae / n

A sum divided by the number of batches its loop drew (`len(train_loader)`, or a name that holds it)
is one shard's mean: averaged over the processes (each drew as many batches), it is the whole pass's:

    this_epoch_train_loss = 0
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        this_epoch_train_loss += loss.item()
    this_epoch_train_loss /= len(train_loader)
->
    this_epoch_train_loss = 0
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        this_epoch_train_loss += loss.item()
    this_epoch_train_loss = mean_over_shards(train_loader, this_epoch_train_loss)
    this_epoch_train_loss /= len(train_loader)

The full dataset size is also what a data set class of the program reads in its `__len__`
(`return self.mat.nnz`), read through the same attribute (`total_loss /= self.train.nnz`). A sum
divided by anything else ddpify cannot tell is named with a warning at the division.

A sum divided by the full dataset size inside its own loop (a running value on a progress line:
`show(j, total_loss / len(loader.dataset))`) is named with a warning there: adding it up over the
processes at every batch, for a number only shown, would cost every step.

A sum read undivided after the loop (returned, printed, logged: `return train_loss, correct / n`)
is a sum over the data too, added up with the others (and the counts read with it:
`print(correct, seen)`); one carried over the passes and read undivided gets a TODO. A list started
afresh before the loop, filled in it and read after it (one loss per batch) is gathered from every
process, so that what is computed from it covers the whole set:

    losses = []
    for x, y in train_loader:
        losses.append(loss_fn(model(x), y).item())
    print(sum(losses) / len(losses))
->
    losses = []
    for x, y in train_loader:
        losses.append(loss_fn(model(x), y).item())
    losses = gather_over_shards(train_loader, losses)
    print(sum(losses) / len(losses))

`sum_over_shards` (runtime) adds the sums up over the processes where that loader is sharded and
leaves them as they are where it is read whole (the 'val' phase of a loop shared with training,
ddpify.analysis.phases, or an evaluation function a caller also runs over the training loader),
so the number printed is the single process's (a DistributedSampler's padding may count up to
world size - 1 samples twice). It is inserted where each sum starts afresh in the statements just
before the loop or the `with` around it (`running_corrects = 0`: one pass's sum), and the loop's
loader can be read again after it (a name, an attribute, `d[phase]`). Elsewhere (a sum carried
over passes, which adding up after each pass would count again; `for x in DataLoader(...)`) a
TODO says to all_reduce it; a mean over a count that does not start afresh there is left alone
(one shard's mean is an estimate of the whole set's, not a fraction of it). Training itself is
right either way (DDP averages gradients); only the printed or logged number is at stake. A pass
that trains nothing over a sharded training loader and sums nothing this rewrite adds up
(`validate(net, train_loader)` after training, collecting its predictions in a list) is named with a
warning at the call that hands it that loader: it covers one shard. An array of zeros made just
before such a pass and counted cell by cell in it (`conf_mat[label, predicted] += 1.0`) is summed
over the processes after it, as a sum is.

An object of the program's own classes that a method called in the loop adds to (an `AverageMeter`
whose `update(val, n)` does `self.sum += val * n; self.count += n`, a `Logger` keeping running sums)
and that is read after the loop (`print(loss_meter.avg)`, `return loss_meter.avg`) holds one
shard's figures. Where its figures are plain sums made for this pass (the meter made in the loop's
block before it, touched in the loop only by methods that add to fields starting as numbers and set
fields from those alone), they are added up after the loop and what the class computes from them is
computed again, on every process:

    losses = AverageMeter()
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        losses.update(loss.item(), x.size(0))
    return losses.avg
->
    losses = AverageMeter()
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        losses.update(loss.item(), x.size(0))
    losses.sum, losses.count = sum_over_shards(train_loader, losses.sum, losses.count)
    losses.avg = losses.sum / losses.count
    return losses.avg

Any other such object (kept over the epochs, reset in the loop, a method that does more) is named
with a warning at the read, not added up: what its fields mean, and whether it starts afresh for
the pass, are its class's own. Not a meter of the process's own time (`batch_time.update(time.time() - end)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.meters import adds_to_self, made_afresh, on_owner, only_added_to, plain_sums, reads_clock
from ddpify.analysis.loaders import drawn_from, loaders_of, shared_helper_callers, zipped_loaders
from ddpify.syntax.codegen import code_for_node
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import param_names
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "shard-metrics"
SUMMARY = ("add up over the processes a sum over one shard divided by the full dataset size (else a TODO), "
           "or by a count of the samples its loop saw; average one divided by the batches its loop drew")

def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for loop in analysis.loaders.sharded_loops:
        gathered = _gather_lists(facts, loop, edits)
        _name_meters(facts, loop, edits)
        sums = {node.target.value for node in facts.findall(loop.body, cst.AugAssign)
                if isinstance(node.target, cst.Name) and isinstance(node.operator, cst.AddAssign)}
        sums -= _restarted(facts, loop, lists=True)  # `losses = []`, then `losses += [loss.item()]`: a list, extended
        _name_running(facts, loop, sums, edits)
        celled = _sum_cells(facts, loop, edits)
        if not sums:
            if not celled and not gathered:
                _name_shard_pass(facts, analysis.loaders.training, loop, edits)
            continue
        scope = facts.scope(loop)
        counts = _counts(facts, loop, sums)
        loader = drawn_from(facts, loop.iter) if isinstance(loop, cst.For) else None
        divided, averaged, meaned, unknown, read, in_divisions = _read_after(facts, loop, sums, counts, loader)
        undivided = read - in_divisions - counts  # `return train_loss`, `print(total)`: a sum over the data
        undivided |= (read - in_divisions) & counts if undivided else set()  # `print(correct, seen)`: both
        summable = loader is not None and _rereadable(loader)
        restarted = _restarted(facts, loop) if summable else set()
        _mean_or_name(facts, loop, loader, meaned & restarted, unknown, {name for name, _ in divided} | averaged, edits)
        averaged = averaged if averaged <= restarted else set()  # else left alone: a ratio of one shard's
        undivided, carried = (undivided & restarted, undivided - restarted) if summable else (set(), undivided)
        for name in sorted(carried - counts):  # a sum over passes, or over a loader not read again: named
            edits.todo(next(s for s in _later_statements(facts, loop, scope) if name in _read_in(facts, s)),
                       f"`{name}` sums this process's shard of the data only and is read undivided: it covers "
                       "about 1/world_size of it; all_reduce it first (torch.distributed.all_reduce)")
        names = sorted({name for name, _ in divided} | averaged | undivided)
        itemized = _items_divided_by(facts, loop, scope, counts & set(names)) if not celled else None
        if itemized is not None and names and summable and set(names) <= restarted:
            at, containers, count = itemized
            if set(containers) <= _restarted(facts, loop, dicts=True) - _bound_in(facts, loop):
                summed = ", ".join([*names, *containers])
                edits.insert_after(loop, f"{summed} = sum_over_shards({facts.code(loader)}, {summed})\n")
                edits.add_import("ddpify_runtime", "sum_over_shards")
                divided_too = [f"`{n}`" for n in names if n != count] + [f"each item of `{c}`" for c in containers]
                edits.record(loop, f"{', '.join(f'`{n}`' for n in [*names, *containers])} summed over the processes "
                             f"after the loop (sum_over_shards, where `{facts.code(loader)}` is sharded), "
                             f"{', '.join(f'`{c}`' for c in containers)} item by item: {' and '.join(divided_too)} "
                             f"divided by `{count}`, which counts the samples they saw")
                continue
            cells = containers[0]
            edits.todo(at, f"`{cells}` adds up this process's shard item by item and is divided here by "
                       f"`{count}`, which counts it too: ddpify adds up no item of it over the processes, so it "
                       f"leaves {', '.join(f'`{n}`' for n in names)} this process's as well (about 1/world_size of "
                       f"the data); all_reduce them and each item of `{cells}` first (torch.distributed.all_reduce)")
            continue
        if names and summable and set(names) <= restarted:
            summed = ", ".join(names)
            edits.insert_after(loop, f"{summed} = sum_over_shards({facts.code(loader)}, {summed})\n")
            edits.add_import("ddpify_runtime", "sum_over_shards")
            raw = "read undivided after the loop: a sum over all the data"
            how = f"each is {raw}" if set(names) == undivided else "each is divided by the " + (
                "full dataset size" if divided else "count of the samples it saw") + (
                f"; {', '.join(f'`{n}`' for n in sorted(undivided))} {raw}" if undivided else "")
            edits.record(loop, f"{', '.join(f'`{n}`' for n in names)} summed over the processes after the loop "
                         f"(sum_over_shards, where `{facts.code(loader)}` is sharded): {how}")
            continue
        for name, flagged in divided:
            edits.todo(flagged, f"`{name}` sums this process's shard only, but is divided by the full "
                       "dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads "
                       "about 1/world_size of the true value")
        if not divided and not celled and not gathered:
            _name_shard_pass(facts, analysis.loaders.training, loop, edits)


def _name_meters(facts: Facts, loop: cst.For | cst.While, edits: Edits) -> None:
    """Name with a warning where it is read after the loop an object of the program's own classes
    that a method called in the loop adds to (`loss_meter.update(loss.item(), x.size(0))`, whose
    `update` does `self.sum += val * n; self.count += n`; a `Logger` keeping running sums): read
    after the loop (`print(loss_meter.avg)`, `return logger`), it holds this process's shard's
    figures only. Not added up here: what its fields mean (a sum, a count, a mean set in `update`,
    the last batch's value), and whether it was started afresh for this pass (`reset()`, or kept
    over the epochs), are the class's own; a reading of one shard's mean, unnamed, was silent."""
    meters: dict[str, cst.Call] = {}
    kept: dict[str, set[str]] = {}  # what the object keeps that those methods set, and its class's methods
    adders: dict[str, list[cst.FunctionDef]] = {}
    for call in facts.findall(loop.body, cst.Call):
        held = call.func.value if isinstance(call.func, cst.Attribute) else None
        if isinstance(held, cst.Subscript):  # `meters["loss"].update(...)`: the figures are read through `meters`
            held = held.value
        owner = dotted(held) if held is not None else None
        if owner is None or owner == "self" or reads_clock(facts, call):
            continue
        methods = facts.user_functions(call) or objects.of(facts).methods(call)  # `meter = make_meter()`, `= SHARED`
        adding = [f for f in methods if facts.enclosing_class(f) is not None and adds_to_self(facts, f)]
        if adding:
            meters.setdefault(owner, call)
            kept.setdefault(owner, set()).update(*(_fields_set(f) | _methods(facts, f) for f in adding))
            adders.setdefault(owner, []).extend(f for f in adding if f not in adders.get(owner, []))
    later = _later_statements(facts, loop, facts.scope(loop)) if meters else []
    reads: dict[cst.CSTNode, list[str]] = {}
    for owner in meters:
        read = next((s for s in later if _reads_object(facts, s, owner, kept[owner])), None)
        if read is not None:
            reads.setdefault(read, []).append(owner)
    added = _add_up_meters(facts, loop, {o: adders[o] for owners in reads.values() for o in owners}, edits)
    reads = {at: kept_whole for at, owners in reads.items() if (kept_whole := [o for o in owners if o not in added])}
    loader = f"`{facts.code(drawn_from(facts, loop.iter))}`" if isinstance(loop, cst.For) else "its loader"
    for at, owners in reads.items():
        edits.warn(at, f"the figures of {', '.join(f'`{o}`' for o in owners)}, added up in the loop by "
                   f"{', '.join(f'`{facts.code(meters[o].func)}(...)`' for o in owners)}, are read here after it: "
                   f"where {loader} is sharded, they are this process's shard's (about 1/world_size of the data), "
                   "not the whole pass's; add "
                   "the sums and counts up over the processes first (torch.distributed.all_reduce), or say that "
                   "they are one process's")


def _add_up_meters(facts: Facts, loop: cst.For | cst.While, adders: dict[str, list[cst.FunctionDef]],
                   edits: Edits) -> set[str]:
    """Add up over the processes, after the loop, the meters (`owner -> the methods of its class the
    loop calls to add to it`) read after it whose figures are plain sums: each made afresh for this
    pass (`losses = AverageMeter()` in the loop's block, before it), touched in the loop only by
    those methods, whose bodies only add to fields that start as numbers (`self.sum += val * n`,
    `self.count += n`), set fields from those alone (`self.avg = self.sum / self.count`) or keep
    an argument (`self.val = val`, the last batch's, left as it is); over a loader read again after
    the loop. The fields added to are summed (`sum_over_shards`, one collective, on every process:
    the loop runs on every process), and the ones set from them set again from the sums; the
    meters done. Others are left to the warning: a meter kept over the epochs, reset or set in the
    loop, or whose methods do more, holds figures whose meaning is its class's own."""
    loader = drawn_from(facts, loop.iter) if isinstance(loop, cst.For) else None
    if loader is None or not _rereadable(loader):
        return set()
    plans = {}
    for owner, methods in adders.items():
        shape = plain_sums(facts, methods)
        if shape is not None and "." not in owner and made_afresh(facts, loop, owner, methods, shape[0]) and \
                only_added_to(facts, loop, owner, {m.name.value for m in methods}):
            plans[owner] = shape
    if not plans:
        return set()
    fields = ", ".join(f"{owner}.{field}" for owner, (summed, _) in plans.items() for field in summed)
    again = [f"{owner}.{facts.code(a.targets[0].target).split('.', 1)[1]} = "
             f"{on_owner(facts.code(a.value), owner)}\n" for owner, (_, derived) in plans.items() for a in derived]
    edits.insert_after(loop, f"{fields} = sum_over_shards({facts.code(loader)}, {fields})\n", *again)
    edits.add_import("ddpify_runtime", "sum_over_shards")
    edits.record(loop, f"the figures of {', '.join(f'`{o}`' for o in plans)} summed over the processes after the "
                 f"loop (sum_over_shards, where `{facts.code(loader)}` is sharded), and what "
                 f"{'its class computes' if len(plans) == 1 else 'their classes compute'} from them computed again: "
                 "read after the loop, they are the whole pass's")
    return set(plans)


def _reads_object(facts: Facts, stmt: cst.CSTNode, owner: str, kept: set[str]) -> bool:
    """Does `stmt` read the figures the object `owner` holds: one of `kept`, what its adding methods
    set or its class's methods and properties (`loss_meter.avg`), a method's value (`print(logger.write())`),
    the object itself (`print(meter)`, `return meter`)? Not a method called for its effect
    (`loss_meter.reset()`), nor something else it holds (`logger.profiler.stop()`)."""
    for node in facts.findall(stmt, (cst.Name, cst.Attribute)):
        parent = facts.parent(node)
        if dotted(node) != owner or isinstance(parent, cst.Attribute) and parent.attr is node or \
                isinstance(parent, cst.AssignTarget) and parent.target is node:
            continue
        if not (isinstance(parent, cst.Attribute) and parent.value is node):
            return True
        above = facts.parent(parent)
        if isinstance(above, cst.Call) and above.func is parent:
            if not isinstance(facts.parent(above), cst.Expr):
                return True
        elif parent.attr.value in kept:
            return True
    return False


def _fields_set(method: cst.FunctionDef) -> set[str]:
    """What the method sets on its object: `sum`, `count`, `avg` of `self.sum += val * n` ...
    `self.avg = self.sum / self.count`; `mean` of `self.mean[name] = ...`."""
    targets = [t.target for a in mt.findall(method, cst.Assign) for t in a.targets] + \
        [a.target for a in mt.findall(method, cst.AugAssign)]
    return {name.split(".")[1] for t in targets for n in mt.findall(t, cst.Attribute)
            if (name := dotted(n) or "").startswith("self.") and name.count(".") == 1}


def _methods(facts: Facts, method: cst.FunctionDef) -> set[str]:
    """The names of the methods (and properties) of the class that defines `method`."""
    cls = facts.enclosing_class(method)
    return {f.name.value for f in cls.body.body if isinstance(f, cst.FunctionDef)} if cls is not None else set()


def _name_running(facts: Facts, loop: cst.For | cst.While, sums: set[str], edits: Edits) -> None:
    """Name with a warning a sum divided by the full dataset size inside its own loop, where it
    only has the batches drawn so far (a progress line: `show(j, total_loss / len(loader.dataset))`):
    the last value shown is the pass's mean on one process, but a shard's sum over the whole set's
    size there, about 1/world_size of it. Nothing is added up: a collective per batch, for a number
    only shown, would cost every step."""
    loader = drawn_from(facts, loop.iter) if isinstance(loop, cst.For) else None
    named: set[str] = set()
    for stmt in facts.findall(loop.body, cst.SimpleStatementLine):
        if facts.scope(stmt) is not facts.scope(loop):
            continue
        for left, right in _divisions(facts, stmt):
            used = sorted((mt.names_in(left) & sums) - named)
            if used and (_full_size(facts, right, stmt) or loader is not None and _data_set_length(facts, right, loader)):
                edits.warn(stmt, f"`{used[0]}` sums this process's shard so far and is divided here, inside its loop, "
                           f"by the full dataset size (`{facts.code(right)}`): the value shown covers about "
                           "1/world_size of the data; all_reduce the sum before it is shown "
                           "(torch.distributed.all_reduce), or divide it by the samples this process has drawn")
                named.add(used[0])


def _read_after(facts: Facts, loop: cst.For | cst.While, sums: set[str], counts: set[str],
                loader: cst.BaseExpression | None) -> tuple[
                    list[tuple[str, cst.CSTNode]], set[str], set[str],
                    list[tuple[str, cst.BaseExpression, cst.CSTNode]], set[str], set[str]]:
    """How the statements after the loop read its sums: (divided by the full size, with the statement;
    divided by a count of the loop, with those counts; divided by the batches the loop drew; divided
    by what ddpify cannot tell, with the divisor and the statement; read; read in a division)."""
    divided: list[tuple[str, cst.CSTNode]] = []
    averaged: set[str] = set()
    meaned: set[str] = set()
    unknown: list[tuple[str, cst.BaseExpression, cst.CSTNode]] = []
    read: set[str] = set()
    in_divisions: set[str] = set()
    for stmt in _later_statements(facts, loop, facts.scope(loop)):
        read |= _read_in(facts, stmt) & sums
        for left, right in _divisions(facts, stmt):
            used = mt.names_in(left) & sums
            in_divisions |= (mt.names_in(left) | mt.names_in(right)) & sums
            drew = bool(used - counts) and loader is not None and _batches_drawn(facts, right, loader, stmt, loop)
            if used and not drew and (_full_size(facts, right, stmt) or
                                      loader is not None and _data_set_length(facts, right, loader)):
                divided.append((sorted(used)[0], stmt))  # (`batch_id * batch_size` names a size, counts a shard's)
            elif used - counts and (count := _count_in(right)) in counts:
                averaged |= {*(used - counts), count}
            elif drew:
                meaned |= used - counts
            elif used - counts and not mt.names_in(right) & counts:
                unknown.append((sorted(used - counts)[0], right, stmt))
    return divided, averaged, meaned, unknown, read, in_divisions


def _mean_or_name(facts: Facts, loop: cst.For | cst.While, loader: cst.BaseExpression | None, meaned: set[str],
                  unknown: list[tuple[str, cst.BaseExpression, cst.CSTNode]], summed: set[str], edits: Edits) -> None:
    """Average the sums divided by the batches the loop drew (`_average`), where they start afresh
    before it and are not added up otherwise (`summed`); name with a warning at the division each
    sum divided by what ddpify cannot tell and handled no other way."""
    meaned = meaned - summed
    if loader is not None and meaned:
        _average(facts, loop, loader, sorted(meaned), edits)
    handled = meaned | summed
    for name, right, at in unknown:
        if name not in handled:
            edits.warn(at, f"`{name}` sums this process's shard of the data only (about 1/world_size of it) and is "
                       f"divided by `{facts.code(right)}`, which ddpify cannot tell: where it counts the whole data "
                       "set, add the sums up over the processes first (torch.distributed.all_reduce); where it "
                       "counts what this process drew, average the result over the processes")
            handled.add(name)


def _average(facts: Facts, loop: cst.For | cst.While, loader: cst.BaseExpression, names: list[str], edits: Edits) -> None:
    """Average over the processes after the loop the sums that are divided by the number of batches
    the loop drew (`this_epoch_train_loss /= len(train_loader)`): each process drew as many
    (a DistributedSampler gives each an equal share), so the mean of the processes' sums over that
    number is the whole pass's mean over all the batches."""
    averaged = ", ".join(names)
    edits.insert_after(loop, f"{averaged} = mean_over_shards({facts.code(loader)}, {averaged})\n")
    edits.add_import("ddpify_runtime", "mean_over_shards")
    edits.record(loop, f"{', '.join(f'`{n}`' for n in names)} averaged over the processes after the loop "
                 f"(mean_over_shards, where `{facts.code(loader)}` is sharded): each is divided by the number of "
                 "batches this process drew, the same on every process")


def _batches_drawn(facts: Facts, divisor: cst.BaseExpression, loader: cst.BaseExpression, stmt: cst.CSTNode,
                   loop: cst.For | cst.While) -> bool:
    """Is the divisor the number of batches the loop drew from `loader`: `len(loader)` (of any loader
    the loop zips with it, and the `min(...)` of those: `min(len(source), len(target))` after `for a,
    b in zip(source, target)`, which stops at the shorter), or the loop's `enumerate` index plus one
    (`losses / (idx + 1)` after `for idx, batch in enumerate(loader)`), or that index itself (`total_loss
    /= i`: the batches drawn less one, a program's off-by-one, a count of this process's batches all
    the same), or a name of the function every assignment of which is one of those (`n_batches =
    len(train_loader)`, `train_steps = i + 1` right after the loop)?"""
    zipped = {facts.code(loader)} | ({facts.code(z) for z in zipped_loaders(facts, loop.iter)}
                                     if isinstance(loop, cst.For) else set())

    def drawn(node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call) and mt.is_name(node.func, "min") and len(node.args) > 1:
            return all(not a.star and drawn(a.value) for a in node.args)
        return isinstance(node, cst.Call) and mt.is_name(node.func, "len") and len(node.args) == 1 \
            and facts.code(node.args[0].value) in zipped
    if drawn(divisor) or _index_plus_one(facts, divisor, loop) or _loop_index(facts, divisor, loop):
        return True
    ref = facts.ref(divisor, stmt) if isinstance(divisor, cst.Name) else None
    writes = facts.writes(ref) if ref is not None and ref.scope is facts.scope(stmt) else []
    return bool(writes) and all(isinstance(at, cst.Assign) and (drawn(value) or _index_plus_one(facts, value, loop))
                                for _, value, at in writes)


def _index_plus_one(facts: Facts, divisor: cst.BaseExpression, loop: cst.For | cst.While) -> bool:
    """`idx + 1` where `idx` is the index `loop` takes from `enumerate(...)` (also in a progress
    bar): after the loop, the number of batches it drew; also that index, or `idx + 1`, times a
    factor the loop does not set (`batch_id * batch_size`: about the samples it drew), a count that
    is the same on every process as the number of batches is."""
    if isinstance(divisor, cst.BinaryOperation) and isinstance(divisor.operator, cst.Multiply):
        for count, factor in ((divisor.left, divisor.right), (divisor.right, divisor.left)):
            if (_loop_index(facts, count, loop) or _index_plus_one(facts, count, loop)) and \
                    not mt.names_in(factor) & _set_in(loop):
                return True
        return False
    if not (isinstance(divisor, cst.BinaryOperation) and isinstance(divisor.operator, cst.Add)
            and isinstance(divisor.right, cst.Integer) and divisor.right.value == "1"):
        return False
    return _loop_index(facts, divisor.left, loop)


def _set_in(loop: cst.For | cst.While) -> set[str]:
    """The names the loop assigns, its own target among them."""
    found = mt.names_in(loop.target) if isinstance(loop, cst.For) else set()
    for node in mt.findall(loop.body, cst.Assign):
        found |= {n for t in node.targets for n in mt.names_in(t.target)}
    for aug in mt.findall(loop.body, cst.AugAssign):
        found |= mt.names_in(aug.target)
    for ann in mt.findall(loop.body, cst.AnnAssign):
        found |= mt.names_in(ann.target)
    return found


def _loop_index(facts: Facts, node: cst.BaseExpression, loop: cst.For | cst.While) -> bool:
    """Is `node` the index `loop` takes from `enumerate(...)` (also inside a progress bar)?"""
    if not (isinstance(node, cst.Name) and isinstance(loop, cst.For)
            and isinstance(loop.target, cst.Tuple) and loop.target.elements
            and mt.is_name(loop.target.elements[0].value, node.value)):
        return False
    iterated = loop.iter
    ref = facts.ref(iterated) if isinstance(iterated, cst.Name) else None
    sources = facts.sources(ref) if ref is not None else []
    iterated = sources[0] if len(sources) == 1 else iterated  # `loop = enumerate(...)`, then `for i, b in loop`
    while isinstance(iterated, cst.Call) and not mt.is_name(iterated.func, "enumerate") and iterated.args:
        iterated = iterated.args[0].value  # `tqdm(enumerate(loader), ...)`
    return isinstance(iterated, cst.Call) and mt.is_name(iterated.func, "enumerate")


def _gather_lists(facts: Facts, loop: cst.For | cst.While, edits: Edits) -> bool:
    """Gather over the processes after the loop the lists started afresh just before it (`losses =
    []`), filled in it (`losses.append(loss.item())`, `losses += [loss.item()]`) and read after it
    (`sum(losses) / len(losses)`, `return losses`): each holds what this process's shard gave
    (dc_ddpm's epoch loss, a mean over a list of batch losses), so the number read was one shard's.
    Whether any was gathered. A list extended by `+=` is no sum (`rewrite` leaves it out of those):
    before, `trainLosses += [loss.item()]` (the twenty-fifth sweep's SimCLR, decision 0194) was summed
    with `sum_over_shards`, which adds numbers and tensors, and every process stopped with a TypeError
    after its first pass; now it is gathered as an appended list is."""
    loader = drawn_from(facts, loop.iter) if isinstance(loop, cst.For) else None
    if loader is None or not _rereadable(loader):
        return False
    filled = {c.func.value.value for c in facts.findall(loop.body, cst.Call)
              if mt.is_method_call(c, "append", "extend") and isinstance(c.func.value, cst.Name)}
    filled |= {a.target.value for a in facts.findall(loop.body, cst.AugAssign)
               if isinstance(a.target, cst.Name) and isinstance(a.operator, cst.AddAssign)}  # `losses += [x]`
    started = _restarted(facts, loop, lists=True)
    later = _later_statements(facts, loop, facts.scope(loop))
    reads = {s: _read_in(facts, s) for s in later}
    read = {n for s in later for n in reads[s]}
    backward = {n for s in later if any(mt.is_method_call(c, "backward") for c in facts.findall(s, cst.Call))
                for n in reads[s]}  # `torch.stack(losses).mean().backward()`: the graph, not a metric
    names = sorted(filled & started & read - backward)
    if not names:
        return False
    gathered = ", ".join(names)
    edits.insert_after(loop, f"{gathered} = gather_over_shards({facts.code(loader)}, {gathered})\n")
    edits.add_import("ddpify_runtime", "gather_over_shards")
    edits.record(loop, f"{', '.join(f'`{n}`' for n in names)} gathered over the processes after the loop "
                 f"(gather_over_shards, where `{facts.code(loader)}` is sharded): each collects what one pass "
                 "over the data gives, read after it")
    return True


def _sum_cells(facts: Facts, loop: cst.For | cst.While, edits: Edits) -> bool:
    """Add up over the processes after a pass that trains nothing the arrays of zeros made just
    before it and counted cell by cell in it (`conf_mat[label, predicted] += 1.0`, a confusion
    matrix of `validate(net, train_loader)`): each cell counts what this process's shard holds."""
    loader = drawn_from(facts, loop.iter) if isinstance(loop, cst.For) else None
    if loader is None or not _rereadable(loader) or facts.trains(loop):
        return False
    counted = {n.target.value.value for n in facts.findall(loop.body, cst.AugAssign)
               if isinstance(n.operator, cst.AddAssign) and isinstance(n.target, cst.Subscript)
               and isinstance(n.target.value, cst.Name)}
    rebound = {n for a in facts.findall(loop.body, cst.Assign) for t in a.targets for n in mt.names_in(t.target)}
    names = sorted(counted & _restarted(facts, loop, zeros=True) - rebound)
    if not names:
        return False
    summed = ", ".join(names)
    edits.insert_after(loop, f"{summed} = sum_over_shards({facts.code(loader)}, {summed})\n")
    edits.add_import("ddpify_runtime", "sum_over_shards")
    edits.record(loop, f"{', '.join(f'`{n}`' for n in names)} summed over the processes after the loop "
                 f"(sum_over_shards, where `{facts.code(loader)}` is sharded): counted cell by cell over the data")
    return True


def _items_divided_by(facts: Facts, loop: cst.For | cst.While, scope: cst.CSTNode,
                      counts: set[str]) -> tuple[cst.SimpleStatementLine, list[str], str] | None:
    """A statement after the loop that divides by one of its counts the containers the loop adds to
    item by item (`total_metrics[k] += n * value` in the batch loop, then `total_metrics = {k: v /
    num_samples for k, v in total_metrics.items()}`, a template's `fit_epoch`), with the containers and
    the count: the count summed over the processes alone would divide items that are this process's
    (each metric about 1/world_size of its mean, silently); None where there is none."""
    cells = {n.target.value.value for n in facts.findall(loop.body, cst.AugAssign)
             if isinstance(n.operator, cst.AddAssign) and isinstance(n.target, cst.Subscript)
             and isinstance(n.target.value, cst.Name)}
    if not cells or not counts:
        return None
    for stmt in _later_statements(facts, loop, scope):
        read = {n.value for n in facts.findall(stmt, cst.Name)} & cells  # (bound again there too: `d = {k: v / n ...}`)
        count = next((c for _, divisor in _divisions(facts, stmt) if (c := _count_in(divisor)) in counts), None)
        if read and count is not None:
            return stmt, sorted(read), count
    return None


def _bound_in(facts: Facts, loop: cst.For | cst.While) -> set[str]:
    """The names the loop's body binds whole (`total = ...`; not `total[k] += ...`)."""
    return {n for a in facts.findall(loop.body, cst.Assign) for t in a.targets for n in mt.names_in(t.target)
            if isinstance(t.target, (cst.Name, cst.Tuple, cst.List))}


def _name_shard_pass(facts: Facts, training: list[cst.Call], loop: cst.For | cst.While, edits: Edits) -> None:
    """Warn where a pass that trains nothing reads a sharded training loader and nothing of it was
    summed (`validate(net, train_loader)` after training, whose loop collects its predictions): each
    process evaluates its own shard, so what it reports covers about 1/world_size of the training
    set. Said at each call that hands the function such a loader. Not a loop over a loader it does
    not take as an argument (`for x, y in train_loader: print(x.shape); break`, or one that trains
    through a step ddpify cannot follow), nor one that hands the batches on (`yield batch`): its
    consumer trains. Only where every loader the argument may be is sharded (not one read from a dict
    a helper returns beside the training loader)."""
    if not isinstance(loop, cst.For) or facts.trains(loop) or facts.findall(loop.body, cst.Yield):
        return
    loader = mt.strip_iteration(loop.iter)
    scope = facts.scope(loop)
    if not (isinstance(scope, cst.FunctionDef) and isinstance(loader, cst.Name) and loader.value in
            {p.name.value for p in (*scope.params.posonly_params, *scope.params.params, *scope.params.kwonly_params)}):
        return
    loader_calls = objects.of(facts).loader_calls
    for call in facts.entries(scope):
        arg = facts.argument_for(call, scope, loader.value)
        found = loaders_of(facts, arg, loader_calls) if arg is not None else []
        if arg is None or not found or any(c not in training for c in found) or _made_to_evaluate(facts, arg, found):
            continue
        edits.warn(facts.statement(call), f"`{dotted(call.func) or 'this call'}(...)` passes over `{facts.code(arg)}`, "
                   "a sharded training loader, without training: each process reads its own part "
                   "(about 1/world_size of the training set), so what it computes there covers that part only; "
                   "hand it a loader over the whole set (no DistributedSampler) or add its results up over the "
                   "processes (torch.distributed.all_reduce)")


def _made_to_evaluate(facts: Facts, arg: cst.BaseExpression, found: list[cst.Call]) -> bool:
    """Is `arg` a name bound only by the calls of a helper shared by training and evaluation that
    make evaluation loaders (`dv_set = prep_dataloader(path, 'dev', ...)`,
    `analysis.loaders.shared_helper_callers`)? shard-data shards that helper's loader at its
    training callers only: these stay whole."""
    evaluating = {id(site) for c in found if (callers := shared_helper_callers(facts, c)) is not None for site in callers[1]}
    return _bound_by(facts, arg, evaluating)


def _bound_by(facts: Facts, expr: cst.BaseExpression, calls: set[int], depth: int = 3) -> bool:
    """Is the name `expr` bound only by the calls `calls` (their ids), or, a parameter, handed only
    names so bound by every call of its function, `depth` hand-offs up? disentangling-vae's
    evaluator (25c; decision 0206): `test_loader = get_dataloaders(name, shuffle=False)` in main,
    then `evaluator(test_loader)`, whose `__call__` hands it to `compute_metrics(dataloader)`; the
    pass there was said to read a sharded training loader, the parameter being bound by no call."""
    ref = facts.ref(expr) if isinstance(expr, cst.Name) else None
    if ref is None:
        return False
    writes = facts.writes(ref)
    if writes:
        return all(id(value) in calls for _, value, _ in writes)
    func = ref.scope
    if depth == 0 or not isinstance(func, cst.FunctionDef) or ref.name not in param_names(func):
        return False
    passed = [facts.argument_for(site, func, ref.name) for site in facts.call_sites(func)]
    return bool(passed) and all(a is not None and _bound_by(facts, a, calls, depth - 1) for a in passed)


def _counts(facts: Facts, loop: cst.For | cst.While, sums: set[str]) -> set[str]:
    """The sums of `loop` that only count what it saw: `n += y.size(0)`, `n += len(y)`,
    `n += y.shape[0]`, `total += targets.numel()`, `n += 1`, also through a name the loop's body
    sets to such a count (`bs = real.size(0)` ... `n += bs`)."""
    added: dict[str, list[cst.BaseExpression]] = {}
    for node in facts.findall(loop.body, cst.AugAssign):
        if isinstance(node.target, cst.Name) and node.target.value in sums:
            added.setdefault(node.target.value, []).append(node.value)
    sizes: dict[str, list[cst.BaseExpression]] = {}
    for node in facts.findall(loop.body, cst.Assign):
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                sizes.setdefault(target.target.value, []).append(node.value)
    return {name for name, values in added.items()
            if all(_counted(v) or isinstance(v, cst.Name) and v.value in sizes and all(_counted(s) for s in sizes[v.value])
                   for v in values)}


def _count_in(divisor: cst.BaseExpression) -> str | None:
    """The name a divisor counts by: `n`, also kept from zero (`max(n, 1)`, `max(1, n)`)."""
    if isinstance(divisor, cst.Call) and mt.is_name(divisor.func, "max") and len(divisor.args) == 2:
        names = [a.value for a in divisor.args if not isinstance(a.value, cst.Integer)]
        divisor = names[0] if len(names) == 1 else divisor
    return divisor.value if isinstance(divisor, cst.Name) else None


def _counted(value: cst.BaseExpression) -> bool:
    """A count of what one batch holds: `1`, `y.size(0)`, `len(y)`, `y.shape[0]`, `y.numel()`, or a
    batch size (`loader.batch_size`, `args.batch_size`): the same on every batch, so added up per
    batch it counts what this process's loop drew."""
    if isinstance(value, cst.Integer):
        return value.value == "1"
    if isinstance(value, cst.Attribute):  # `data_loader.batch_size`
        return value.attr.value == "batch_size"
    if isinstance(value, cst.Subscript):  # `y.shape[0]`
        index = value.slice[0].slice if len(value.slice) == 1 else None
        return mt.is_attribute(value.value, "shape") and isinstance(index, cst.Index) and \
            isinstance(index.value, cst.Integer) and index.value.value == "0"
    if not isinstance(value, cst.Call):
        return False
    if isinstance(value.func, cst.Name):  # `len(y)`
        return value.func.value == "len" and len(value.args) == 1
    arg = [a.value for a in value.args]
    return mt.is_attribute(value.func, "size") and len(arg) == 1 and isinstance(arg[0], cst.Integer) and \
        arg[0].value == "0" or mt.is_attribute(value.func, "numel") and not arg


def _rereadable(loader: cst.BaseExpression) -> bool:
    """`train_loader`, `self.loader`, `dataloaders[phase]`: read again after the loop, the same
    loader, with nothing run."""
    if isinstance(loader, cst.Subscript):
        index = loader.slice[0].slice if len(loader.slice) == 1 else None
        return isinstance(index, cst.Index) and isinstance(index.value, (cst.Name, cst.SimpleString)) and \
            dotted(loader.value) is not None
    return dotted(loader) is not None


def _restarted(facts: Facts, loop: cst.For | cst.While, zeros: bool = False, lists: bool = False,
               dicts: bool = False) -> set[str]:
    """The names set afresh in the statements before `loop` in its block, or before the `with`
    blocks around it (`running_loss = 0.0`, `correct = 0` above `with torch.no_grad():`): a sum
    that starts there is one pass's, so adding it up over the processes after the loop counts
    each pass once. With `zeros`, those set to an array of zeros (`conf_mat = np.zeros([n, n])`);
    with `lists`, to an empty list (`losses = []`); with `dicts`, to a dict of zeros (`total_metrics
    = {n: 0. for n in self.metric_funcs}`, `{"mae": 0, "mse": 0}`, `dict.fromkeys(names, 0)`)."""
    found: set[str] = set()
    node: cst.CSTNode = loop
    while True:
        block = facts.parent(node)
        body = list(getattr(block, "body", ()))
        for stmt in body[:body.index(node)] if node in body else ():
            for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                for target, value in _pairs(small) if isinstance(small, (cst.Assign, cst.AnnAssign)) else ():
                    if (not zeros or isinstance(value, cst.Call) and (dotted(value.func) or "").endswith(("zeros", "zeros_like"))) \
                            and (not lists or isinstance(value, cst.List) and not value.elements) \
                            and (not dicts or _zero_dict(value)):
                        found |= {n for n in mt.names_in(target)} - mt.names_in(value)
        owner = facts.parent(block) if block is not None else None
        if not isinstance(owner, cst.With):
            return found
        node = owner


def _zero_dict(value: cst.BaseExpression) -> bool:
    """A dict display whose every value is a zero written out (`{n: 0. for n in names}`, `{"mae": 0}`),
    or `dict.fromkeys(names, 0)`."""
    def zero(node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.Integer, cst.Float)) and float(node.value) == 0

    if isinstance(value, cst.DictComp):
        return zero(value.value)
    if isinstance(value, cst.Dict):
        return bool(value.elements) and all(isinstance(e, cst.DictElement) and zero(e.value) for e in value.elements)
    return isinstance(value, cst.Call) and dotted(value.func) == "dict.fromkeys" and len(value.args) == 2 \
        and zero(value.args[1].value)


def _pairs(assign: cst.Assign | cst.AnnAssign) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """Each target of `assign` with its value, element by element where both are tuples of one length
    (`losses, correct, seen = [], 0, 0`: `losses` is a list started afresh, as `losses = []`); an
    annotated one with its value (`images: List[Tensor] = []`), none where it has no value."""
    if isinstance(assign, cst.AnnAssign):
        return [(assign.target, assign.value)] if assign.value is not None else []
    pairs = []
    for target in assign.targets:
        left, right = target.target, assign.value
        if isinstance(left, (cst.Tuple, cst.List)) and isinstance(right, cst.Tuple) and len(left.elements) == len(right.elements):
            pairs += [(t.value, v.value) for t, v in zip(left.elements, right.elements)]
        else:
            pairs.append((left, right))
    return pairs


def _later_statements(facts: Facts, loop: cst.For | cst.While, scope: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    """Simple statements of the same function that come after the loop and assign, call or
    return something (`avg = total / n`, `print(total / n)`, `return total / n`)."""
    returned = [r for r in facts.findall(scope, cst.Return) if facts.scope(r) is scope] \
        if isinstance(scope, cst.FunctionDef) else []
    found = [stmt for _, _, stmt in facts.writes_in(scope)] + facts.calls_of(scope) + returned
    later = {facts.statement(n) for n in found if facts.before(loop, n) and not facts.is_inside(n, loop)}
    return sorted((s for s in later if isinstance(s, cst.SimpleStatementLine)), key=lambda s: facts.spans[s][0])


def _read_in(facts: Facts, stmt: cst.CSTNode) -> set[str]:
    """The names `stmt` reads: all it names but the names it binds (`total = 0.0` reads nothing);
    from the facts' index of the tree's nodes, not a walk of `stmt`."""
    bound = {t.target.value for a in facts.findall(stmt, cst.Assign) for t in a.targets if isinstance(t.target, cst.Name)}
    return {n.value for n in facts.findall(stmt, cst.Name)} - bound


def _divisions(facts: Facts, stmt: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(dividend, divisor) of each division in `stmt`: `total / n`, and `total /= n`."""
    found = [(b.left, b.right) for b in facts.findall(stmt, cst.BinaryOperation, lambda b: isinstance(b.operator, cst.Divide))]
    return found + [(a.target, a.value) for a in facts.findall(stmt, cst.AugAssign)
                    if isinstance(a.operator, cst.DivideAssign)]


def _full_size(facts: Facts, node: cst.BaseExpression, stmt: cst.CSTNode) -> bool:
    """Is the divisor the full dataset size: written out, or a name of the function that holds it
    (`n = len(self.train_loader.dataset)`, then `correct / n`)? A name the function binds is what it
    is bound to, whatever it is called: a template's `num_samples = 0` ... `num_samples +=
    batch[0].size(0)` is a count of its own, though its name says size (read by its name, the loss
    summed over the processes was divided by this process's count: twice the mean on two)."""
    ref = facts.ref(node, stmt) if isinstance(node, cst.Name) else None
    writes = facts.writes(ref) if ref is not None and ref.scope is facts.scope(stmt) else []
    if writes:
        return all(isinstance(at, cst.Assign) and _mentions_full_size(value)
                   for _, value, at in writes)  # not a count of its own (`seen += y.size(0)`)
    return _mentions_full_size(node) or isinstance(node, cst.Attribute) and node.attr.value in _length_attributes(facts)


def _data_set_length(facts: Facts, divisor: cst.BaseExpression, loader: cst.BaseExpression) -> bool:
    """`len(X)` where `X` is the data set the loop's loader was made over (`loader =
    DataLoader(datasets[split], ...)`, then `total / len(datasets[split])`): the full size."""
    if not (isinstance(divisor, cst.Call) and mt.is_name(divisor.func, "len") and len(divisor.args) == 1):
        return False
    made = facts.calls_to("torch.utils.data.DataLoader")
    sets = [c.args[0].value for c in loaders_of(facts, loader, made) if c.args and not c.args[0].keyword]
    return any(facts.code(s) == facts.code(divisor.args[0].value) for s in sets)


def _length_attributes(facts: Facts) -> set[str]:
    """The attributes through which the program's data sets tell their size: what a `__len__`
    returns from an object it holds (`return self.mat.nnz`: `nnz`), so a divisor that reads it
    (`total_loss /= self.train.nnz`, the matrix the data set was made from) is the full size."""
    found = facts.__dict__.get("_length_attributes")
    if found is None:
        found = facts.__dict__["_length_attributes"] = {
            value.attr.value for cls in facts.classes.values() for func in facts.method(cls, "__len__")
            for value in facts.returned(func) if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Attribute)
            and dotted(value.value.value) == "self"}
    return found


def _mentions_full_size(node: cst.CSTNode) -> bool:
    """`len(loader.dataset)`, `dataset_sizes[phase]`, `num_samples`..."""
    code = code_for_node(cst.Module([]), node)  # a bare module: no need for the script's own
    return ".dataset" in code or "size" in code.lower() or "num_samples" in code
