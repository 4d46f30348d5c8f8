"""agree-plateau: step a plateau scheduler on the main process's value of a metric each process computes.

    train_loss = running / len(loader)
    scheduler.step(train_loss)
->
    train_loss = running / len(loader)
    scheduler.step(from_main_process(lambda: train_loss))

A `ReduceLROnPlateau` lowers the learning rate when the metric it is stepped with stops
improving. A metric each process computes on its own shard (a training loss, an accuracy) differs
between processes, so each lowers its rate at another epoch: the same averaged gradients, other
updates, and the replicas part without a word (the self-check sees it only at exit). Every process
now steps it with the main process's value (`from_main_process`, a broadcast), so all decide alike.
Left alone: a metric the same on every process (`ddpify.analysis.same_values`, its core: arguments,
counters, literals), a step with no metric, a scheduler of another kind, and a step under a test
that may differ between processes (a broadcast there would wait for processes that never come):
that one gets a TODO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.same_values import same_everywhere
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options
    from ddpify.syntax.facts import Facts

NAME = "agree-plateau"
SUMMARY = "step a plateau scheduler on the main process's value of a metric each process computes (from_main_process)"

PLATEAU = "torch.optim.lr_scheduler.ReduceLROnPlateau"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    if not analysis.models.wrapped:
        return  # no replicas to keep equal
    for call in facts.calls:
        metric = _plateau_metric(facts, call)
        if metric is None or same_everywhere(facts, metric.value):
            continue
        if not _runs_everywhere(facts, call):
            edits.todo(facts.statement(call), f"this plateau scheduler steps on `{facts.code(metric.value)}`, which "
                       "may differ between processes, under a test that may too: give every process the same "
                       "value (from_main_process) where all of them run, or their learning rates part")
            continue
        edits.replace(metric.value, lambda node: cst.Call(cst.Name("from_main_process"), [cst.Arg(cst.Lambda(
            cst.Parameters(), node))]),
            f"the plateau scheduler steps on the main process's `{facts.code(metric.value)}` (from_main_process): "
            "each process's own would lower its learning rate at another epoch")
        edits.add_import("ddpify_runtime", "from_main_process")


def _plateau_metric(facts: Facts, call: cst.Call) -> cst.Arg | None:
    """The metric argument of `scheduler.step(metric)` where `scheduler` is a ReduceLROnPlateau
    (built as one, as the object flow finds it: `self.scheduler` of a trainer too)."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step") or not dotted(call.func.value):
        return None
    arg = next((a for a in call.args if a.keyword is None or a.keyword.value == "metrics"), None)
    if arg is None or arg.star:
        return None
    if not any(origins and all(isinstance(o, cst.Call) and facts.qualify(o.func) == PLATEAU for o in origins)
               for origins in (facts.origins(call.func.value), objects.of(facts).values(call.func.value))):
        return None  # (the objects: `for s in self.schedulers: s.step(loss)`, a list a config class builds)
    return arg


def _runs_everywhere(facts: Facts, call: cst.Call) -> bool:
    """Does every process reach `call` when one does: no `if` or `while` of its function around
    it whose test may differ between processes?"""
    for anc in facts.ancestors(call):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            return True
        if isinstance(anc, (cst.If, cst.While)) and not same_everywhere(facts, anc.test):
            return False
    return True
