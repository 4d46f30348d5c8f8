"""Which models train, where each is wrapped, and which later uses see the wrapper.

A model trains when an optimizer is built over its `parameters()`. It is wrapped once it is
ready: after the statement that builds or moves it (`model = Net().to(device)`) and after the
set-up that follows in the same block (weight init, `load_state_dict` of a resumed checkpoint,
freezing, `raw_model = model`), but before it is compiled, trained or handed to a training
function. A `DataParallel` wrap is replaced at that same point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from ddpify import matchers as mt
from ddpify.facts import Facts, Ref
from ddpify.names import dotted


@dataclass
class Model:
    name: str  # as written where it is wrapped: "model", "self.model"
    defined: cst.CSTNode  # the statement that builds, moves or DataParallel-wraps it
    anchor: cst.CSTNode  # the wrap goes right after this statement
    dataparallel: cst.Call | None = None  # the `nn.DataParallel(...)` call being replaced
    partial: bool = False  # its optimizer trains some sub-modules only: others may get no gradient
    setup: list[cst.CSTNode] = field(default_factory=list)  # statements between defined and anchor


@dataclass
class Models:
    wrapped: list[Model]
    untraced: list[cst.Call]  # optimizers whose model could not be found


def find(facts: Facts) -> Models:
    wrapped: list[Model] = []
    untraced = []
    for key, optimizer, partial in _trained_names(facts, untraced):
        model = _locate(facts, key, optimizer)
        if model is None:
            untraced.append(optimizer)
        elif not any(w.defined is model.defined for w in wrapped):
            model.partial = partial
            wrapped.append(model)
    return Models(wrapped, untraced)


def _trained_names(facts: Facts, untraced: list) -> list[tuple[str, cst.CSTNode, bool]]:
    """(last name component of each trained model, what trains it, whether only some of its
    sub-modules are trained), in source order."""
    found = []
    for opt in facts.optimizers:
        if m.matches(opt.func, mt.OPTIMIZER_FACTORY):  # `model.configure_optimizers(...)`
            found.append((_owner(opt.func.value), opt, False))
            continue
        receivers = [c.func.value for c in _parameter_calls(facts, opt)]
        owners = {o: [] for o in map(_owner, receivers) if o}
        for receiver in receivers:
            if _owner(receiver):
                owners[_owner(receiver)].append(_is_submodule(receiver))
        if not owners:
            untraced.append(opt)
        found += [(o, opt, all(subs)) for o, subs in owners.items()]
    if not facts.optimizers:  # plain SGD by hand: `for p in model.parameters(): p.data.add_(p.grad, ...)`
        for loop in facts.loops:
            if m.matches(loop, m.For(iter=m.Call(func=mt.PARAMETERS_ATTR))) and \
                    m.findall(loop.body, m.Attribute(attr=m.Name("grad"))) and _owner(loop.iter.func.value):
                found.append((_owner(loop.iter.func.value), loop, False))
    return [f for f in found if f[0]]


def _is_submodule(receiver: cst.BaseExpression) -> bool:
    """`model.fc` (a part of `model`) rather than `model` or `self.model` itself."""
    parts = (dotted(receiver) or "").split(".")
    return len(parts) > (2 if parts[0] == "self" else 1)


def _parameter_calls(facts: Facts, opt: cst.Call) -> list[cst.Call]:
    calls = [c for c in facts.calls_in(opt) if m.matches(c.func, mt.PARAMETERS_ATTR)]
    if calls:
        return calls
    # `params = model.parameters()` (or a list of param groups) built first, then passed in
    for arg in opt.args:
        for src in facts.origins(arg.value, depth=2):
            calls += [c for c in facts.calls_in(src) if m.matches(c.func, mt.PARAMETERS_ATTR)]
    return calls


def _owner(expr: cst.BaseExpression) -> str | None:
    """`model.fc` -> "model"; `self.model.head` -> "model"; `self.netG` -> "netG"."""
    name = dotted(expr)
    if name is None:
        return None
    parts = name.split(".")
    if parts[0] == "self":
        return parts[1] if len(parts) > 1 else None
    return parts[0]


def _locate(facts: Facts, key: str, optimizer: cst.CSTNode) -> Model | None:
    """Where the model named `key` that `optimizer` trains is built; the optimizer's own
    function first (two `main_*()` functions may each build a `model`)."""
    candidates = []
    for target, value, stmt in facts.assigns:
        name = dotted(target)
        if name is None or name.split(".")[-1] != key or len(name.split(".")) > 2:
            continue
        if name.count(".") == 1 and not name.startswith("self."):
            continue
        if not isinstance(value, cst.Call) or isinstance(stmt, cst.AugAssign):
            continue
        if _after_training(facts, stmt):
            continue
        qualified = facts.qualify(value.func)
        dataparallel = _dataparallel_call(facts, value)
        if dataparallel is not None:
            candidates.append((3, stmt, name, dataparallel))
        elif mt.is_device_move(value):
            candidates.append((2, stmt, name, None))
        elif not _mentions(value, name) and qualified != "torch.compile":
            candidates.append((1, stmt, name, None))
    if not candidates:
        return None
    best = max(c[0] for c in candidates)  # DataParallel > a move to a device > a construction
    near = [c for c in candidates if facts.scope(c[1]) is facts.scope(optimizer) and c[0] == best]
    candidates = near or candidates
    _, stmt, name, dp = [c for c in candidates if c[0] == best][-1]
    defined = _unconditional(facts, facts.statement(stmt))
    setup, anchor = _setup_after(facts, defined, name)
    return Model(name, defined, anchor, dataparallel=dp, setup=setup)


def _unconditional(facts: Facts, stmt: cst.CSTNode) -> cst.CSTNode:
    """The outermost `if`/`with`/`try` of its function that holds `stmt`: a model built or moved
    under `if use_cuda:` is wrapped after that `if`, on every path."""
    result = stmt
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.For, cst.While)) or m.matches(anc, mt.MAIN_GUARD):
            break
        if isinstance(anc, (cst.If, cst.With, cst.Try)):
            result = anc
    return result


def _dataparallel_call(facts: Facts, value: cst.Call) -> cst.Call | None:
    """`nn.DataParallel(model)`, also inside `nn.DataParallel(model).to(device)`."""
    while isinstance(value, cst.Call):
        if facts.qualify(value.func) == "torch.nn.DataParallel":
            return value
        value = value.func.value if isinstance(value.func, cst.Attribute) else None
    return None


def _after_training(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Does `stmt` come after training has started in its own function (a reload, say)?"""
    scope = facts.scope(stmt)
    return any(facts.scope(lp) is scope and facts.before(lp, stmt) and not facts.is_inside(stmt, lp)
               and facts.trains(lp) for lp in facts.loops)


def _setup_after(facts: Facts, defined: cst.CSTNode, name: str):
    """The set-up statements after `defined` that must run before the wrap, and the last of them."""
    setup, anchor = [], defined
    for stmt in facts.following(defined):
        if _stops(facts, stmt, name):
            break
        if _mentions(stmt, name) and not _neutral(facts, stmt, name):
            setup.append(stmt)
            anchor = stmt
    return setup, anchor


def _stops(facts: Facts, stmt: cst.CSTNode, name: str) -> bool:
    """Training, compiling, forwarding or returning the model: the wrap must come first."""
    if isinstance(stmt, (cst.For, cst.While)) and facts.trains(stmt):
        return True
    if m.matches(stmt, m.SimpleStatementLine(body=[m.Return()])):
        return True
    for call in facts.calls_in(stmt):
        if facts.qualify(call.func) == "torch.compile" or dotted(call.func) == name:
            return True
        if any(facts.trains(f) for f in facts.user_functions(call)):
            return True
    return False


def _neutral(facts: Facts, stmt: cst.CSTNode, name: str) -> bool:
    """Statements that use the model but need not precede the wrap: optimizers, prints."""
    calls = facts.calls_in(stmt)
    if any(mt.is_optimizer(facts.qualify(c.func), c) for c in calls):
        return True
    return m.matches(stmt, m.SimpleStatementLine(body=[m.Expr(m.Call(func=m.Name("print")))]))


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return bool(mt.references(node, name))


def wrapped_refs(facts: Facts, models: Models) -> dict[Ref, Model]:
    """Names that hold a wrapper once the wraps have run: the wrapped name itself, the
    parameters of functions it is passed to, and `self.x` in every method of its class."""
    refs: dict[Ref, Model] = {}
    for model in models.wrapped:
        home = facts.ref(cst.parse_expression(model.name), model.anchor)
        if home is not None:
            refs.update(dict.fromkeys([home, *facts.receivers(home)], model))
    return refs
