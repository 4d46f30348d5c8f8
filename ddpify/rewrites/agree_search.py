"""agree-search: take each hyperparameter of a search trial from the main process, on every process.

    lr = trial.suggest_float("lr", 1e-4, 1e-2, log=True)
->
    lr = from_main_process(lambda: trial.suggest_float("lr", 1e-4, 1e-2, log=True))

Every process runs the program's hyperparameter search (an optuna study), and the search draws
from a generator of its own (optuna's default sampler seeds one from the operating system; the
random state the runtime shares does not reach it): each process would train other hyperparameters,
a model of another width (DDP refuses to start, "DDP expects same model across all ranks") or the
same model at another learning rate or batch size (other updates; as many steps as batches, so
the processes stop waiting for each other). Every process now takes the main process's suggestion
(`from_main_process`, a broadcast; one process alone draws its own), and so the same pruning
decision (`trial.should_prune()`: each study would prune on its own). Read: a call of a trial's
`suggest_*` method or of `should_prune`, with the value used (not a statement of its own).
Left alone, with a warning: one under an `if` whose test may differ between processes, or in a
comprehension or lambda (a broadcast there may be reached by some processes only), and every draw
of a program that runs its trials in threads (`study.optimize(objective, n_jobs=4)`: broadcasts
from several threads at once would pair the wrong values, or wait forever), whose `optimize` call
gets the warning too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis.same_values import same_everywhere
from ddpify.syntax import matchers as mt

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options
    from ddpify.syntax.facts import Facts

NAME = "agree-search"
SUMMARY = "take each search trial's suggestions and pruning decisions from the main process (from_main_process)"

DRAWS = frozenset({"suggest_float", "suggest_int", "suggest_categorical", "suggest_uniform", "suggest_loguniform",
                   "suggest_discrete_uniform", "should_prune"})


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    threaded = [c for c in facts.calls if _in_threads(c)]
    for call in threaded:
        edits.warn(call, f"`{facts.code(call)}` runs its trials in threads: ddpify cannot take their suggestions "
                         "from the main process (broadcasts from several threads at once), and the processes may "
                         "train different hyperparameters; run the trials one at a time (n_jobs=1) under torchrun")
    for call in facts.calls_named(*DRAWS):
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in DRAWS or _unused(facts, call):
            continue
        code = facts.code(call)
        if threaded or not _reached_alike(facts, call):
            edits.warn(call, f"`{code}` draws on each process's own search (its sampler's own generator): "
                             "ddpify cannot take it from the main process here (a test that may differ between "
                             "processes, a comprehension or a lambda), and the processes may train different "
                             "hyperparameters; draw it where every process runs, or give the sampler a seed")
            continue
        edits.replace(call, lambda node: cst.Call(cst.Name("from_main_process"), [cst.Arg(cst.Lambda(
            cst.Parameters(), node))]),
            f"`{code}` taken from the main process's trial (from_main_process): each process's search draws "
            "its own, and the processes would train different hyperparameters")
        edits.add_import("ddpify_runtime", "from_main_process")


def _in_threads(call: cst.Call) -> bool:
    """`study.optimize(objective, n_jobs=...)` with other than `n_jobs=1`: trials in threads."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value != "optimize":
        return False
    jobs = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "n_jobs"), None)
    return jobs is not None and not (isinstance(jobs, cst.Integer) and jobs.value == "1")


def _unused(facts: Facts, call: cst.Call) -> bool:
    """A draw whose value nothing reads (`trial.suggest_int(...)` as a statement of its own)."""
    expr = mt.sole(facts.statement(call), cst.Expr)
    return expr is not None and expr.value is call


def _reached_alike(facts: Facts, call: cst.Call) -> bool:
    """Is `call` reached as often on every process: outside comprehensions and lambdas, and under
    no `if` (or conditional expression) whose test may differ between processes?"""
    node: cst.CSTNode = call
    for anc in facts.ancestors(call):
        if isinstance(anc, (cst.Lambda, cst.BaseComp)):
            return False
        if isinstance(anc, (cst.If, cst.While)) and node is not anc.test and not same_everywhere(facts, anc.test):
            return False
        if isinstance(anc, cst.IfExp) and node is not anc.test and not same_everywhere(facts, anc.test):
            return False
        node = anc
    return True
