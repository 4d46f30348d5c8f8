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
that one gets a TODO. A test whether an object is None, where every value it may hold is an object
the program constructs, is the same on every process: `if scheduler is not None:
scheduler.step(val_loss)` in a training function handed the scheduler that a configuration function
built is stepped on the main process's value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.same_values import same_everywhere
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import param_names
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
        if isinstance(anc, (cst.If, cst.While)) and not same_everywhere(facts, anc.test) \
                and not _tests_a_constructed_object(facts, anc.test):
            return False
    return True


def _tests_a_constructed_object(facts: Facts, test: cst.BaseExpression) -> bool:
    """`x is None` / `x is not None`, or `x` / `not x` itself (`if scheduler: scheduler.step(loss)`),
    where every value `x` may hold is an object the program constructs (`_never_none`): the same
    answer on every process."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, (cst.Name, cst.Attribute)) and dotted(test) is not None:
        return _never_none(facts, test, 6)
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot))):
        return False
    left, right = test.left, test.comparisons[0].comparator
    tested = left if mt.is_name(right, "None") else right if mt.is_name(left, "None") else None
    return tested is not None and _never_none(facts, tested, 6)


def _never_none(facts: Facts, expr: cst.BaseExpression, depth: int) -> bool:
    """Is every value `expr` may hold a constructed object: a class's construction (`Cls(...)`, a
    class of the program or a library's, by its capitalised name), followed through the names and
    `self.x` attributes it is bound to, the tuples it is unpacked from, the returns of the program's
    functions and, for a parameter, what every call passes (its default where a call leaves it out)?
    Not `None`, nor anything else."""
    if depth == 0:
        return False
    if isinstance(expr, cst.Call):
        funcs = facts.user_functions(expr)
        if funcs and not facts.builds(expr):
            returns = [r for f in funcs for r in facts.returned(f)]
            return bool(returns) and all(_never_none(facts, r, depth - 1) for r in returns)
        name = (dotted(expr.func) or "").rpartition(".")[2]
        return facts.builds(expr) or name[:1].isupper()
    if not isinstance(expr, (cst.Name, cst.Attribute)) or mt.is_name(expr, "None") or not dotted(expr):
        return False
    ref = facts.ref(expr)  # `self.scheduler` of a trainer: every value its methods store
    if ref is None:
        return False
    func = ref.scope
    if isinstance(func, cst.FunctionDef) and ref.name in param_names(func) and not facts.writes(ref):
        sites = facts.call_sites(func)
        default = next((p.default for p in (*func.params.params, *func.params.kwonly_params)
                        if p.name.value == ref.name), None)
        passed = [facts.argument_for(site, func, ref.name) or default for site in sites]
        return bool(sites) and all(v is not None and _never_none(facts, v, depth - 1) for v in passed)
    values = [*facts.sources(ref), *facts.unpacked_parts(ref)]
    return bool(values) and all(_never_none(facts, v, depth - 1) for v in values)
