"""shard-eval: split evaluation across processes where the numbers stay the single-process ones.

    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (output.argmax(1) == target).sum().item()
    test_loss /= len(test_loader.dataset)
->
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in shard_eval(test_loader, model):
            output = model.module(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (output.argmax(1) == target).sum().item()
        test_loss, correct = reduce_sum(test_loss, correct)
    test_loss /= len(test_loader.dataset)

`shard_eval` (runtime) gives every sample to exactly one process (101 on 2: 51 + 50, no padding,
nothing dropped), and first copies the main process's buffers (BatchNorm statistics) into the
models the loop runs, as DDP's forward would. Forwards go through the bare module, so the loop
holds no collective and uneven batch counts cannot hang. After the loop, sums and counts are
added up over the processes (`reduce_sum`) and lists of per-sample values are gathered in the
loader's order (`gather_ordered`): `preds = gather_ordered(preds)`. A meter of the program's class made
afresh for the pass and only added to in the loop (`meter = AverageMeter()` before it, `meter.update(loss.item(),
x.size(0))` in it, an `update` that only adds to fields starting as numbers: ddpify.analysis.meters) has those
fields summed and what its class computes from them computed again: `meter.sum, meter.count =
reduce_sum(meter.sum, meter.count)`, `meter.avg = meter.sum / meter.count`. Every process then holds the same numbers,
so decisions made from them (best checkpoint, early stop) agree. A progress bar bound to a name before
the loop (`bar = tqdm(val_loader)`, then `for x, y in bar`) gets the split loader inside it:
`bar = tqdm(shard_eval(val_loader, model))`. Integer counts are exact; float
sums are added in another grouping, so they may differ from the single process in the last bits.

Where a split would change a number, the loader stays whole and the report says why
(ddpify.analysis.evaluation): `evaluation of `test_loader` kept whole: the loss is averaged per batch
(`len(test_loader)`), and the batches differ once split`. `--no-shard-eval` keeps every
evaluation whole, and so does `--strategy fsdp`: there every forward is a collective (the
parameters are gathered from the shards), so every process runs every batch.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis.evaluation import called_model
from ddpify.analysis.meters import on_owner
from ddpify.analysis.models import WRAPPER
from ddpify.output import build
from ddpify.output.report import NOTE
from ddpify.rewrites.wrap_model import wrapped_refs

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "shard-eval"
SUMMARY = "split evaluation loops across processes and reduce their sums and lists, where that is exact"
FSDP_KEEPS_WHOLE = "under FSDP every forward gathers the parameters from all processes, so each runs every batch"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts, wrapped = analysis.facts, bool(wrapped_refs(analysis, options))
    for entry in analysis.evaluation:
        name = facts.code(entry.loader)
        kept = FSDP_KEEPS_WHOLE if options.fsdp else entry.kept or (entry.kept_wrapped if wrapped else None)
        if kept:
            edits.record(entry.loop, f"evaluation of `{name}` kept whole: {kept}", NOTE)
            continue
        forwards = entry.forwards if wrapped else []  # a model the user keeps unwrapped runs as it is
        models = [cst.parse_expression(m) for m in dict.fromkeys(facts.code(called_model(c)) for c, _ in forwards)]
        edits.replace(entry.loader, partial(_shard_eval, models))
        edits.add_import("ddpify_runtime", "shard_eval")
        lines = []
        summed = [*entry.sums, *(f"{owner}.{f}" for owner, (fields, _) in entry.meters.items() for f in fields)]
        if summed:
            names = ", ".join(summed)
            lines.append(f"{names} = reduce_sum({names})\n")
            edits.add_import("ddpify_runtime", "reduce_sum")
        lines += [f"{owner}.{facts.code(a.targets[0].target).split('.', 1)[1]} = {on_owner(facts.code(a.value), owner)}\n"
                  for owner, (_, derived) in entry.meters.items() for a in derived]
        for xs in entry.lists:
            lines.append(f"{xs} = gather_ordered({xs})\n")
            edits.add_import("ddpify_runtime", "gather_ordered")
        edits.insert_after(entry.loop, *lines)
        reduced = [f"{_names(entry.sums)} summed over the processes (reduce_sum)"] if entry.sums else []
        reduced += [f"the figures of {_names(list(entry.meters))} summed over the processes (reduce_sum) and what "
                    f"{'its class computes' if len(entry.meters) == 1 else 'their classes compute'} from them "
                    "computed again"] if entry.meters else []
        reduced += [f"{_names(entry.lists)} gathered in order (gather_ordered)"] if entry.lists else []
        edits.record(entry.loop, f"evaluation of `{name}` split across processes, each sample read once "
                     f"(shard_eval); after the loop {' and '.join(reduced)}")
        for call, holds in forwards:
            edits.replace(called_model(call), partial(build.bare_model, edits, proven=holds is WRAPPER),
                          f"`{facts.code(call.func)}(...)` in evaluation runs the bare module: no collective inside the loop")


def _shard_eval(models: list[cst.BaseExpression], loader: cst.BaseExpression) -> cst.Call:
    """`test_loader` -> `shard_eval(test_loader, model)`."""
    return build.call("shard_eval", loader, *models)


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)
