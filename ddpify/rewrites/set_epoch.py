"""set-epoch: reshuffle every epoch, and keep the processes in step.

    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
->
    for epoch in range(1, args.epochs + 1):
        set_epoch(train_loader, epoch)
        train(args, model, device, train_loader, optimizer, epoch)
        barrier()

Without `set_epoch` a DistributedSampler draws the same order every epoch. The epoch loop is
found through the functions that own the batch loop (`train(...)`, `Trainer._run_epoch`), and
the loader is named as that loop sees it. A `while step < max_steps:` loop numbers its passes
with `step`. `set_epoch` (runtime) finds the sampler behind `sampler=` or `batch_sampler=`, and
takes dicts of loaders. A sharded loader that no epoch loop re-iterates gets a TODO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ddpify.analysis import Analysis
    from ddpify.edits import Edits
    from ddpify.options import Options

NAME = "set-epoch"
SUMMARY = "call set_epoch(loader, epoch) at the top of each epoch and barrier() at its end"


def rewrite(facts: Analysis, edits: Edits, options: Options) -> None:
    found = facts.loaders
    for entry in found.epoch_loops:
        loop = entry.loop
        if entry.epoch is None:
            edits.todo(loop, "no epoch number here: call set_epoch(loader, n) with the pass number at the top "
                       "of this loop, or every pass draws the same order")
            continue
        body = loop.body.body
        edits.insert_before(body[0], *[f"set_epoch({loader}, {entry.epoch})\n" for loader in entry.loaders])
        edits.insert_after(body[-1], "barrier()\n")
        edits.add_import("ddpify_runtime", "set_epoch")
        edits.add_import("ddpify_runtime", "barrier")
        calls = ", ".join(f"set_epoch({loader}, {entry.epoch})" for loader in entry.loaders)
        edits.record(loop, f"{calls} reshuffles each epoch; barrier() ends it")
    for call in found.unlooped:
        edits.todo(facts.statement(call), "no epoch loop found for this loader: call set_epoch(loader, epoch) "
                   "at the start of each epoch, or every epoch draws the same order")
