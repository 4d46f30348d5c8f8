"""agree-stop: stop every process in the same epoch.

    if epochs_no_improve >= args.patience:
        break
->
    if agree_on(epochs_no_improve >= args.patience):
        break

An early stop decided from numbers each process computed itself can differ between
processes; the one that keeps training then waits forever in its next all-reduce.
`agree_on` (runtime) broadcasts the main process's decision, so all stop together. Every
`if` between the epoch loop and its `break` is agreed, outermost first.
"""

from __future__ import annotations

import libcst as cst

from ddpify import build

NAME = "agree-stop"
SUMMARY = "make early-stop decisions in epoch loops the same on every process (agree_on)"


def rewrite(facts, edits, options) -> None:
    epoch_loops = {entry.loop for entry in facts.loaders.epoch_loops}
    for brk in facts.breaks:
        loop = next((a for a in facts.ancestors(brk) if isinstance(a, (cst.For, cst.While))), None)
        if loop not in epoch_loops:
            continue
        for anc in facts.ancestors(brk):
            if anc is loop:
                break
            if isinstance(anc, cst.If):
                edits.replace(anc.test, lambda node: build.call("agree_on", node),
                              "early stop agreed across processes (agree_on): all stop in the same epoch")
                edits.add_import("ddpify_runtime", "agree_on")
