"""Which branches of a function one call of it takes, where the call decides them by constants.

A helper's branch that compares a parameter with a constant (or tests it for truth) runs for a
call only where the value the call passes (or the parameter's default, when it passes nothing)
makes the test true:

    def get_model(conf, local_rank=-1):
        model = Net(conf)
        if local_rank >= 0:
            model = DistributedDataParallel(model, device_ids=[local_rank])   # not for the call below
        return model

    model_ema = get_model(conf, local_rank=-1)

`hasattr(args, "distributed")` of a parameter holds for a call that passes an object the program
sets that attribute on (through the callers' parameters too); the other branch of such a test
is left out for it (never decided False: an attribute may be set by other means).

A parameter passed a command-line option argparse converts with `type=Path` (`args.data`) is a
path, equal to no string: `if name == "cifar10":` is left out for that call.
A test of such tests (`not`, `and`, `or`) is decided where the known parts decide it:
`if num_gpus > 1 and not for_val_only:` is left out by `Engine(for_val_only=True)`. A literal
decides itself, whatever the call (`literal_truth`): `if False and epoch % 2 == 0:` is left out
by every call, and by the module's own code (`ddpify.check.branches`).

An attribute of the instance a method sets once from a parameter before its test (`self.filter_empty
= filter_empty if mode == "train" else False` ... `if self.filter_empty:` in the same `__init__`,
the class storing it nowhere else) is decided as what it is set to: both branches of a conditional
expression alike, a parameter left at its default (`filter_empty=False`, never passed).

A dict of lambdas looked up by a parameter picks one entry: `get_dataset("wfs")` never runs the
`"cifar10": lambda: CIFAR10(root, download=True)` entry of `datasets = {...}` ... `datasets[name]()`.

`ddpify check` asks it to drop a finding in a branch no call takes (`ddpify.check.branches`), and
`holds_wrapper` to tell that a factory's result is bare for a call that leaves out every wrap it
writes. A test that is not one parameter compared with a constant (`==`, `!=`, `<`, `<=`, `>`,
`>=`, `is`, `is not`, `in`, `not in`) nor such tests joined by `not`/`and`/`or`, a parameter the
function assigns, or a call with a `*` or `**` argument decides nothing.
"""

from __future__ import annotations

import ast
import operator

import libcst as cst

from ddpify.syntax.codegen import code_for_node
from ddpify.syntax.facts import Facts, Ref, param_names

_OPS = {cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.Is: lambda a, b: a is b,
        cst.IsNot: lambda a, b: a is not b, cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b,
        cst.LessThan: operator.lt, cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
        cst.GreaterThanEqual: operator.ge}
_UNKNOWN = object()


def left_out(facts: Facts, node: cst.CSTNode, func: cst.FunctionDef, site: cst.Call) -> bool:
    """Does the call `site` of `func` leave out a branch of `func` around `node` (`if model is not
    None:` or `if model:` with `model` left at its default None; `if backend == "tflite":`), or an
    entry of a dict of lambdas that `func` looks up by a parameter the call never makes its key
    (`_entry_left_out`)?"""
    return not any(a.star for a in site.args) and (any(
        _decided(facts, func, site, test) is (not taken) for test, taken in _branches(facts, node, func))
        or _entry_left_out(facts, node, func, site))


def trains_for(facts: Facts, func: cst.FunctionDef, site: cst.Call) -> bool:
    """Does the call `site` of `func` run its training: a backward (or a differentiation of
    parameters, a call of a function of the program that trains) of `func`'s own body in a branch
    the call does not leave out? Where every one of them is left out, the call runs `func` for
    what it does besides, with gradients that nothing reads: one `run_epoch` for both phases,

        def run_epoch(phase, loader, model, optimizer):
            for x, y in loader:
                if phase == "train":
                    loss = model(x).sum()
                    optimizer.zero_grad(); loss.backward(); optimizer.step()
                elif phase == "val":
                    with torch.no_grad():
                        loss = model(x).sum()

        run_epoch("train", train_loader, model, optimizer)   # trains
        run_epoch("val", val_loader, model, optimizer)       # evaluates: trains_for is False

    Not decided (True) where `func` trains only in a function it calls whose own branches decide
    it, nor by a call with a `*` or `**` argument."""
    steps = [c for c in facts.calls_in(func) if facts.is_backward(c) or facts.parameter_gradients(c) is not None
             or any(facts.trains(g) for g in facts.user_functions(c) if g is not func)]
    return not steps or not all(left_out(facts, c, func, site) for c in steps) \
        or bool(facts.gradients_set_by_hand(func))


def _entry_left_out(facts: Facts, node: cst.CSTNode, func: cst.FunctionDef, site: cst.Call) -> bool:
    """Is `node` in a lambda that is the value of an entry of a dict `func` writes out and
    assigns to a name once (`datasets = {"wfs": lambda: WFDataset(root), "cifar10": lambda:
    CIFAR10(root, download=True)}`), a name `func` reads only as looked up by one parameter
    (`datasets[name]`), where the entry's key is none of the strings that parameter may hold for
    the call (`_strings_of`)? That lambda is never picked, so never called, for it."""
    for anc in facts.ancestors(node):
        if anc is func:
            return False
        element = facts.parent(anc)
        if not (isinstance(anc, cst.Lambda) and isinstance(element, cst.DictElement) and element.value is anc):
            continue
        key, written = _constant(element.key), facts.parent(element)
        stmt = facts.parent(written) if written is not None else None
        if not isinstance(key, str) or not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 \
                or type(stmt.targets[0].target) is not cst.Name or stmt.value is not written:
            return False
        table = stmt.targets[0].target
        reads = [n for n in facts.uses(table.value, func) if n is not table]
        if len(facts.writes(Ref(func, table.value))) != 1 or not reads:
            return False
        indexes = {_looked_up_by(facts, n) for n in reads}
        name = indexes.pop() if len(indexes) == 1 else None
        values = _strings_of(facts, func, site, name) if name is not None else None
        return values is not None and key not in values
    return False


def _looked_up_by(facts: Facts, read: cst.Name) -> str | None:
    """`name` of `table[name]` where `read` is `table`; None for any other read."""
    lookup = facts.parent(read)
    if not isinstance(lookup, cst.Subscript) or lookup.value is not read or len(lookup.slice) != 1 \
            or not isinstance(lookup.slice[0].slice, cst.Index) or type(lookup.slice[0].slice.value) is not cst.Name:
        return None
    return lookup.slice[0].slice.value.value


def _strings_of(facts: Facts, func: cst.FunctionDef, site: cst.Call, name: str) -> set[str] | None:
    """The strings the parameter `name` may hold for the call: the string the call passes (or
    its default), and that string with a constant added where the function assigns it so once
    (`if self.multi_chan: name = name + "_multichan"`); None where not known."""
    if name not in param_names(func):
        return None
    passed = facts.argument_for(site, func, name)
    default = next((p.default for p in (*func.params.params, *func.params.kwonly_params)
                    if p.name.value == name and p.default is not None), None)
    value = _constant(passed) if passed is not None else _constant(default) if default is not None else _UNKNOWN
    writes = facts.writes(Ref(func, name))
    if not isinstance(value, str) or len(writes) > 1:
        return None
    values = {value}
    for _, written, stmt in writes:
        added = written.right if isinstance(written, cst.BinaryOperation) and isinstance(written.operator, cst.Add) \
            and type(written.left) is cst.Name and written.left.value == name else \
            written if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign) else None
        suffix = _constant(added) if added is not None else _UNKNOWN
        if not isinstance(suffix, str):
            return None
        values.add(value + suffix)
    return values


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
    otherwise. Through `not`, `and` and `or` of such tests (`num_gpus > 1 and not for_val_only`
    with `for_val_only=True` passed: False, whatever `num_gpus` is)."""
    if (fixed := literal_truth(test)) is not None:
        return fixed
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        value = _decided(facts, func, site, test.expression)
        return _UNKNOWN if value is _UNKNOWN else not value
    if isinstance(test, cst.BooleanOperation):
        left, right = _decided(facts, func, site, test.left), _decided(facts, func, site, test.right)
        deciding = isinstance(test.operator, cst.Or)  # the value one side decides the whole with
        if left is deciding or right is deciding:
            return deciding
        return _UNKNOWN if _UNKNOWN in (left, right) else not deciding
    if type(test) is cst.Name:
        value = _argument(facts, func, site, test.value)
        return _UNKNOWN if value is _UNKNOWN else bool(value)
    if (kept := _kept_flag(facts, func, test)) is not None:
        value = _held_for(facts, func, site, kept)
        return _UNKNOWN if value is _UNKNOWN else bool(value)
    if isinstance(test, cst.Call) and type(test.func) is cst.Name and test.func.value == "hasattr" \
            and len(test.args) == 2 and type(test.args[0].value) is cst.Name \
            and isinstance(attr := test.args[1].value, cst.SimpleString) and isinstance(attr.evaluated_value, str):
        name = test.args[0].value.value
        passed = facts.argument_for(site, func, name) if name in param_names(func) else None
        return True if passed is not None and _sets_attribute(facts, passed, attr.evaluated_value) else _UNKNOWN
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or not isinstance(test.left, cst.Name):
        return _UNKNOWN
    target = test.comparisons[0]
    op, right = _OPS.get(type(target.operator)), _constant(target.comparator)
    value = _argument(facts, func, site, test.left.value)
    if value is _UNKNOWN and _strings(right) and _path_option(facts, func, site, test.left.value):
        value = _A_PATH  # never equal to a string, nor in a collection of them
    if op is None or right is _UNKNOWN or value is _UNKNOWN:
        return _UNKNOWN
    try:
        return bool(op(value, right))
    except TypeError:
        return _UNKNOWN


def _kept_flag(facts: Facts, func: cst.FunctionDef, test: cst.BaseExpression) -> cst.BaseExpression | None:
    """What `func` stores into `self.NAME` where `test` reads it (`if self.filter_empty:` after
    `self.filter_empty = filter_empty if mode == "train" else False` in the same `__init__`): the
    one assignment of that attribute in the class, a statement of `func`'s own body before the
    test (no branch, no loop, no other method stores it). None for any other test."""
    if not (isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self"):
        return None
    cls = facts.enclosing_class(func)
    name = test.attr.value
    if cls is None or facts.scope(test) is not func:
        return None
    stores = [t for t in facts.findall(cls, cst.AssignTarget) if isinstance(t.target, cst.Attribute)
              and isinstance(t.target.value, cst.Name) and t.target.value.value == "self" and t.target.attr.value == name]
    changed = [n for n in facts.findall(cls, (cst.AugAssign, cst.AnnAssign)) if isinstance(n.target, cst.Attribute)
               and isinstance(n.target.value, cst.Name) and n.target.value.value == "self" and n.target.attr.value == name]
    if len(stores) != 1 or changed:
        return None
    stmt = facts.parent(stores[0])
    line = facts.parent(stmt) if stmt is not None else None
    if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or line not in func.body.body \
            or not facts.before(stmt, test):
        return None
    return stmt.value


def _held_for(facts: Facts, func: cst.FunctionDef, site: cst.Call, value: cst.BaseExpression) -> object:
    """The constant `value`, read in `func`, holds for the call `site`: a literal, a parameter the
    call (or its default) gives a constant, or a conditional expression both of whose branches
    hold the same one (`filter_empty if mode == "train" else False`, `filter_empty` left at its
    default False); `_UNKNOWN` otherwise."""
    if isinstance(value, cst.IfExp):
        body, orelse = _held_for(facts, func, site, value.body), _held_for(facts, func, site, value.orelse)
        return body if body is not _UNKNOWN and orelse is not _UNKNOWN and body == orelse else _UNKNOWN
    if type(value) is cst.Name and value.value not in ("True", "False", "None"):
        return _argument(facts, func, site, value.value)
    return _constant(value)


def literal_truth(test: cst.BaseExpression) -> bool | None:
    """The truth of a test that literals decide whatever runs: `False`, `0`, `None`, `not True`, and
    `and`/`or` where one literal side decides the whole (`if False and epoch % 2 == 0:`, a branch
    turned off by hand: False); None for any other test."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = literal_truth(test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        deciding = isinstance(test.operator, cst.Or)
        sides = (literal_truth(test.left), literal_truth(test.right))
        if deciding in sides:
            return deciding
        return None if None in sides else not deciding
    if not isinstance(test, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)) \
            or isinstance(test, cst.Name) and test.value not in ("True", "False", "None"):
        return None
    value = _constant(test)
    return None if value is _UNKNOWN else bool(value)


def passed_truth(facts: Facts, expr: cst.BaseExpression) -> bool | None:
    """The truth every call gives `expr`, a parameter its function never assigns, where each call
    passes a literal (or leaves out a literal default): `shuffle` of `DistributedSampler(ds,
    shuffle=shuffle)` in `make_loader(dataset, shuffle)`, every call passing `shuffle=False`: False.
    None where a call passes anything else, has a `*` or `**` argument, or the function is named
    other than in calls (handed on, run with arguments no call here shows) or has no call."""
    func = facts.scope(expr)
    if not isinstance(expr, cst.Name) or not isinstance(func, cst.FunctionDef) or expr.value not in param_names(func):
        return None
    sites = facts.entries(func)
    if not sites or any(a.star for site in sites for a in site.args) or any(
            n is not func.name and not (isinstance(p := facts.parent(n), cst.Call) and p.func is n)
            for n in facts.references(facts.module, func.name.value)):
        return None
    truths = {bool(v) if (v := _argument(facts, func, site, expr.value)) is not _UNKNOWN else None for site in sites}
    return truths.pop() if len(truths) == 1 else None


class _Path:
    """A pathlib path: equal to no string (`Path("cifar10") == "cifar10"` is False)."""


_A_PATH = _Path()


def _strings(value: object) -> bool:
    """A string, or a collection of strings only."""
    return isinstance(value, str) or isinstance(value, (tuple, list, set, frozenset)) and bool(value) \
        and all(isinstance(v, str) for v in value)


def _path_option(facts: Facts, func: cst.FunctionDef, site: cst.Call, name: str) -> bool:
    """Does the call pass for parameter `name` a command-line option argparse converts with
    `type=Path` (`IdxDataset(args.data, ...)` with `parser.add_argument("--data", type=Path)`)?"""
    from ddpify.analysis import objects  # (objects reads call branches' callers, not this module)
    if name not in param_names(func) or facts.writes(Ref(func, name)):
        return False
    passed = facts.argument_for(site, func, name)
    return passed is not None and objects.of(facts).option_type(passed) in ("pathlib.Path", "pathlib.PosixPath")


def _sets_attribute(facts: Facts, passed: cst.BaseExpression, attr: str, depth: int = 3) -> bool:
    """Does the object a call passes have `attr` set on it by the program: `args.distributed = ...`
    where `args` is made, also where it reaches the call through the parameters of the functions
    between (every call of each passing such an object, `depth` calls up)? Then `hasattr(args,
    "distributed")` holds for that call (`save_configure(args)` from `main_worker(..., args)`)."""
    ref = facts.ref(passed) if type(passed) is cst.Name else None
    if ref is None:
        return False
    if facts.sources(Ref(ref.scope, f"{ref.name}.{attr}")):
        return True
    func = ref.scope
    if depth == 0 or not isinstance(func, cst.FunctionDef) or ref.name not in param_names(func) or facts.writes(ref):
        return False
    sites = facts.call_sites(func)
    return bool(sites) and all((arg := facts.argument_for(site, func, ref.name)) is not None
                               and _sets_attribute(facts, arg, attr, depth - 1) for site in sites)


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
        return ast.literal_eval(code_for_node(cst.Module([]), expr))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _UNKNOWN
