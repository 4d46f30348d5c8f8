"""Code that never runs: what `ddpify check` does not report.

Three shapes. Code after a `raise` or `return` of its own block (a method left unfinished,
`raise NotImplementedError` above the code it will run) runs on no process:

    def forward(self):
        raise NotImplementedError
        pkg = torch.load(path)                # never runs

Code under `if flag:` where every assignment of `flag` is `False` (a mode left over
from debugging, `extract_boxes = False` and never set again) runs on no process:

    extract_boxes = False
    if extract_boxes:
        cv2.imwrite(f"crop_{i}.png", image)   # never runs

And a helper's branch that compares a parameter with a constant runs only for the calls that pass a
value making the test true. When every call of the function in the program passes a constant (or
leaves out the parameter, whose default is a constant) that makes the test false, the branch never
runs, nor does a function called only from such a branch:

    def synthesis(model, text, backend="torch"):
        if backend == "torch":
            return run_torch(model, text)
        elif backend == "tflite":
            return run_tflite(model, text)   # never runs: no call passes backend="tflite"

    synthesis(ddp_model, text)               # the program's only call

Conservative: a method (reached through its class in ways no call site shows: by reference,
by dispatch, `model(x)` running `forward`), a function with no call in the program (called from
outside it, or only by reference), a call with a `*` or `**` argument, a parameter the function assigns, or a test that
is not one parameter compared with constants (`==`, `!=`, `is`, `is not`, `in`, `not in`) keeps
every branch.
"""

from __future__ import annotations

import ast
import operator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref

_OPS = {cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.Is: lambda a, b: a is b,
        cst.IsNot: lambda a, b: a is not b, cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b}
_UNKNOWN = object()


def never_runs(facts: Facts, node: cst.CSTNode, depth: int = 3) -> bool:
    """Is `node` after a `raise` or `return` of its own block, under a flag that is only ever
    False, or in a branch (of its function, or of a function calling it, `depth` calls up) that no
    call in the program takes?"""
    if _under_false_flag(facts, node) or _after_an_exit(facts, node):
        return True
    func = facts.scope(node)
    if depth <= 0 or not isinstance(func, cst.FunctionDef) or facts.enclosing_class(func) is not None:
        return False
    sites = facts.entries(func)
    if not sites or any(any(a.star for a in site.args) for site in sites):
        return False
    return all(left_out(facts, node, func, site) or never_runs(facts, site, depth - 1) for site in sites)


def _after_an_exit(facts: Facts, node: cst.CSTNode) -> bool:
    """Does a statement before `node`'s, in a block around it in its function, leave that block
    whatever happens (`raise NotImplementedError`, `return`)?"""
    child = node
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.IndentedBlock):
            for stmt in anc.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.SimpleStatementLine) and any(
                        isinstance(s, (cst.Raise, cst.Return)) for s in stmt.body):
                    return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return False
        child = anc
    return False


def _under_false_flag(facts: Facts, node: cst.CSTNode) -> bool:
    """Under `if flag:` of its function (or of the module) where every assignment of `flag` is
    `False`."""
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            return False
        if isinstance(anc, cst.If) and isinstance(anc.test, cst.Name) and facts.is_inside(node, anc.body):
            ref = facts.ref(anc.test)
            sources = facts.sources(ref) if ref is not None else []
            if sources and all(mt.is_name(s, "False") for s in sources):
                return True
    return False


def left_out(facts: Facts, node: cst.CSTNode, func: cst.FunctionDef, site: cst.Call) -> bool:
    """Does the call `site` of `func` leave out a branch of `func` around `node` (`if model is not
    None:` or `if model:` with `model` left at its default None; `if backend == "tflite":`)?"""
    return not any(a.star for a in site.args) and any(
        _decided(facts, func, site, test) is (not taken) for test, taken in _branches(facts, node, func))


def _branches(facts: Facts, node: cst.CSTNode, func: cst.FunctionDef) -> list[tuple[cst.BaseExpression, bool]]:
    """The tests of the `if`s of `func` around `node`, each with the value it must have for `node`
    to run (True in the body, False in the `else` or `elif`)."""
    found = []
    for anc in facts.ancestors(node):
        if anc is func:
            break
        if isinstance(anc, cst.If) and anc.orelse is not None and facts.is_inside(node, anc.orelse):
            found.append((anc.test, False))
        elif isinstance(anc, cst.If) and facts.is_inside(node, anc.body):
            found.append((anc.test, True))
    return found


def _decided(facts: Facts, func: cst.FunctionDef, site: cst.Call, test: cst.BaseExpression) -> object:
    """The value of `test` for the call `site`, when it compares one parameter of `func` that the
    call gives a constant (`backend == "torch"`), or tests one for truth (`if model:`); `_UNKNOWN`
    otherwise."""
    if type(test) is cst.Name:
        value = _argument(facts, func, site, test.value)
        return _UNKNOWN if value is _UNKNOWN else bool(value)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or not isinstance(test.left, cst.Name):
        return _UNKNOWN
    target = test.comparisons[0]
    op, right = _OPS.get(type(target.operator)), _constant(target.comparator)
    value = _argument(facts, func, site, test.left.value)
    if op is None or right is _UNKNOWN or value is _UNKNOWN:
        return _UNKNOWN
    try:
        return bool(op(value, right))
    except TypeError:
        return _UNKNOWN


def _argument(facts: Facts, func: cst.FunctionDef, site: cst.Call, name: str) -> object:
    """The constant the call passes for parameter `name` (its default when it passes nothing);
    `_UNKNOWN` when it is no constant, or the function assigns the parameter."""
    params = [p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
              if p.name.value == name]
    if not params or facts.writes(Ref(func, name)):
        return _UNKNOWN
    passed = facts.argument_for(site, func, name)
    if passed is None:
        return _constant(params[0].default) if params[0].default is not None else _UNKNOWN
    return _constant(passed)


def _constant(expr: cst.BaseExpression) -> object:
    """The value of a literal (`"torch"`, `None`, `("tf", "tflite")`); `_UNKNOWN` for anything else."""
    try:
        return ast.literal_eval(cst.Module([]).code_for_node(expr))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _UNKNOWN
