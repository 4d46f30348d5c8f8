"""agree-stop: leave a training loop in the same iteration on every process.

    if epochs_no_improve >= args.patience:
        break
->
    if agree_on(epochs_no_improve >= args.patience):
        break

An early stop decided from numbers each process computed itself can differ between
processes; the one that keeps training then waits forever in its next all-reduce.
`agree_on` (runtime) broadcasts the main process's decision, so all stop together. Every
`if` between the loop (an epoch loop, or a batch loop over a sharded loader) and its `break`
is agreed, unless its condition only reads values all processes share (arguments, loop and
step counters, literals), as `if args.dry_run:` or `if step >= args.max_steps:` do.
"""

from __future__ import annotations

import libcst as cst

import libcst.matchers as m

from ddpify import build
from ddpify import matchers as mt
from ddpify.facts import param_names

NAME = "agree-stop"
SUMMARY = "make data-dependent loop exits the same on every process (agree_on)"

SAME_EVERYWHERE = {"len", "True", "False", "None", "range", "int", "float", "abs", "min", "max"}


def rewrite(facts, edits, options) -> None:
    loops = {entry.loop for entry in facts.loaders.epoch_loops} | set(facts.loaders.sharded_loops)
    for brk in facts.breaks:
        loop = next((a for a in facts.ancestors(brk) if isinstance(a, (cst.For, cst.While))), None)
        if loop not in loops:
            continue
        for anc in facts.ancestors(brk):
            if anc is loop:
                break
            if isinstance(anc, cst.If) and not _same_everywhere(facts, anc.test):
                edits.replace(anc.test, lambda node: build.call("agree_on", node),
                              "loop exit agreed across processes (agree_on): all leave in the same iteration")
                edits.add_import("ddpify_runtime", "agree_on")


def _same_everywhere(facts, test) -> bool:
    """Is the condition computed from values every process shares: arguments, loop counters,
    step counters, literals? (Then agreeing on it would only add a collective per check.)"""
    if any(not (isinstance(c.func, cst.Name) and c.func.value in SAME_EVERYWHERE) for c in m.findall(test, m.Call())):
        return False
    return all(_shared(facts, name) for name in mt.variables(test))


def _shared(facts, name: cst.Name, depth: int = 3) -> bool:
    """Does `name` hold the same value on every process where the condition reads it?"""
    if name.value in SAME_EVERYWHERE:
        return True
    for loop in facts.loops:  # `for i in range(...)`, `for i, batch in enumerate(...)`
        if isinstance(loop, cst.For) and facts.is_inside(name, loop) and (
                mt.is_counting(loop.iter) and name.value in _targets(loop)
                or m.matches(loop, _enumerate_index(name.value))):
            return True
    ref = facts.ref(name)
    if ref is None:
        return False
    if isinstance(ref.scope, cst.FunctionDef) and name.value in param_names(ref.scope):
        passed = facts.sources(ref)  # a parameter: shared when every caller passes a shared value
        return bool(passed) and depth > 0 and all(
            isinstance(p, cst.Name) and _shared(facts, p, depth - 1) or _literal_or_arguments(p) for p in passed)
    writes = [(v, s) for _, v, s in facts.writes(ref)]
    # `step = 0` ... `step += 1` on every path; `args = parser.parse_args()`
    return bool(writes) and all(_literal_or_arguments(v) and not _conditional(facts, s) for v, s in writes)


def _enumerate_index(name: str) -> m.For:
    """`for <name>, batch in enumerate(...)`."""
    return m.For(iter=m.Call(func=m.Name("enumerate")),
                 target=m.Tuple([m.Element(m.Name(name)), m.ZeroOrMore()]))


def _literal_or_arguments(value) -> bool:
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or m.matches(value, mt.PARSE_ARGS)


def _conditional(facts, stmt) -> bool:
    """Is `stmt` inside an `if` of its function (taken on some processes, maybe not others)?"""
    for anc in facts.ancestors(stmt):
        if isinstance(anc, cst.FunctionDef):
            return False
        if isinstance(anc, (cst.If, cst.IfExp)):
            return True
    return False


def _targets(loop: cst.For) -> set[str]:
    return {n.value for n in m.findall(loop.target, m.Name())}
