"""What `--strategy fsdp` reads beyond the DDP rewrites: sharded models, the optimizers over
them, their state dicts (collectives under FSDP2) and the blocks `shard_model` shards.

FSDP2's `fully_shard` keeps the model's class (no `.module`), replaces its parameters with
sharded ones (an optimizer must be built over those), and makes every forward and every full
state dict a collective: all ranks run them, the main process only writes.

Where a model is sharded: where DDP would wrap it (`ddpify.analysis.models`), unless an optimizer of it
is built before that point. Such an optimizer moves after the sharding, with the statements up
to there that use it, when none of them also sets the model up; otherwise the sharding moves
up, right before the optimizer, when what follows it in the set-up is fine on a sharded model
(loading a checkpoint, which then loads a full state dict; `train()`, `eval()`); otherwise a
TODO (`place_shard`).
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ddpify.analysis.module_classes import is_module_class
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref
from ddpify.analysis.models import Model, Models, holds_wrapper, model_classes, parameter_calls
from ddpify.syntax.names import dotted

CONTAINERS = {"torch.nn.ModuleList": "nn.ModuleList", "torch.nn.Sequential": "nn.Sequential"}
ANY_BLOCKS = "the runtime shards the blocks of each nn.ModuleList/nn.Sequential it finds, then the root"


def place_shard(facts: Facts, model: Model) -> Model:
    """`model` as FSDP2 shards it, whose optimizers are built after the sharding: with those built
    before it (and the parameter lists they are given) moved down (`moved`), or the sharding
    moved up to the first of them, or those listed in `blocked` (a TODO)."""
    built = [c for o in model.optimizers if isinstance(o, cst.Call) for c in [o, *parameter_calls(facts, o)]]
    early = sorted({s for s in map(facts.statement, built)  # `params = [p for p in model.parameters() ...]` too
                    if not model.before_anchor and facts.scope(s) is facts.scope(model.anchor)
                    and not facts.before(model.anchor, s)}, key=lambda s: facts.spans[s][0])
    groups = [_movable(facts, stmt, model) for stmt in early]
    if all(g is not None for g in groups):
        return replace(model, moved=[s for g in groups if g is not None for s in g])
    first = early[0]
    _, body = facts.block(first)
    if model.anchor in body and all(_fine_sharded(facts, s, model.name) for s in
                                    body[body.index(first):body.index(model.anchor) + 1]):
        return replace(model, anchor=first, before_anchor=True, setup=[s for s in model.setup if facts.before(s, first)])
    return replace(model, blocked=[s for s, g in zip(early, groups) if g is None],
                   moved=[s for g in groups if g is not None for s in g])


def _movable(facts: Facts, stmt: cst.CSTNode, model: Model) -> list[cst.CSTNode] | None:
    """`stmt` and the statements up to the sharding point that use what it binds, when none of
    them sets the model up; None otherwise (or when `stmt` is in another block)."""
    _, body = facts.block(stmt)
    if model.anchor not in body:
        return None
    group, bound = [stmt], _bound(stmt)
    for later in body[body.index(stmt) + 1:body.index(model.anchor) + 1]:
        if not any(facts.references(later, n) for n in bound):
            continue
        if later is model.anchor or facts.references(later, model.name):
            return None
        group.append(later)
        bound |= _bound(later)
    return group


def _bound(stmt: cst.CSTNode) -> set[str]:
    """The names (and `self.x` attributes) a simple statement assigns."""
    return {name for t in mt.findall(stmt, cst.AssignTarget) if (name := dotted(t.target))}


SHARDED_OK = {"load_state_dict", "train", "eval", "parameters", "named_parameters"}


def _fine_sharded(facts: Facts, stmt: cst.CSTNode, name: str) -> bool:
    """Does `stmt` use the model only in ways a sharded model supports as they are
    (`model.load_state_dict(...)`, `model.train()`)?"""
    for use in facts.references(stmt, name):
        attr = facts.parent(use)
        if not (isinstance(attr, cst.Attribute) and attr.value is use and attr.attr.value in SHARDED_OK
                and isinstance(facts.parent(attr), cst.Call)):
            return False
    return True


def sharded_name(facts: Facts, models: Models, refs: dict[Ref, Model], expr: cst.BaseExpression) -> str | None:
    """The sharded model `expr` reads, as code (`model` also for `model.module`, a DataParallel
    script's spelling), or None. A name that may hold the bare model too counts: the runtime's
    state-dict helpers accept both. So do the other names of the same object, which FSDP2
    shards in place: one passed to a function that shards the model it receives
    (`train(student, ...)`), an alias (`raw_model = model`). `refs`: the names that hold a sharded
    model in this conversion (`ddpify.rewrites.wrap_model.wrapped_refs`)."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "module":
        expr = expr.value
    name = dotted(expr)
    if name is None:
        return None
    sharded = holds_wrapper(facts, refs, expr) is not None or _passed_to_sharding(facts, models, expr) \
        or _alias(facts, refs, expr)
    return name if sharded else None


def _alias(facts: Facts, refs: dict[Ref, Model], expr: cst.BaseExpression) -> bool:
    """`raw_model` after `raw_model = model` (a handle kept for saving, nanoGPT's): the same
    object, which FSDP2 shards in place, also where the alias was taken before the sharding."""
    ref = facts.ref(expr)
    writes = facts.writes(ref) if ref is not None else []
    return bool(writes) and all(dotted(value) is not None and facts.ref(value, stmt) in refs
                                for _, value, stmt in writes)


def _passed_to_sharding(facts: Facts, models: Models, expr: cst.BaseExpression) -> bool:
    """Is `expr` read after a call that passed it to a function that shards what it receives?"""
    ref = facts.ref(expr)
    return ref is not None and any(
        facts.before(call, expr) and facts.ref(arg) == ref
        for model in models.wrapped if isinstance(model.defined, cst.FunctionDef)
        for call in facts.call_sites(model.defined)
        for arg in [facts.argument_for(call, model.defined, model.param or model.name)] if arg is not None)


def optimizer_models(facts: Facts, models: Models, expr: cst.BaseExpression) -> list[Model]:
    """The sharded models that the optimizer `expr` (`optimizer`, `self.opt`) trains."""
    optimizers = [o for o in facts.origins(expr) if isinstance(o, cst.Call) and o in facts.optimizers]
    return [m for m in models.wrapped if any(o in m.optimizers for o in optimizers)]


def model_name_at(facts: Facts, refs: dict[Ref, Model], model: Model, node: cst.CSTNode) -> str | None:
    """How `node`'s function names the sharded `model` (`model`, `self.model`), or None."""
    visible = (facts.scope(node), facts.enclosing_class(node), facts.module)
    names = {ref.name for ref, m in refs.items() if m is model and ref.scope in visible}
    return names.pop() if len(names) == 1 else None


def gather(facts: Facts, models: Models, refs: dict[Ref, Model], call: cst.Call) -> str | None:
    """The collective that replaces `call`, as code, or None: `model.state_dict()` ->
    `full_state_dict(model)`, `optimizer.state_dict()` -> `full_optimizer_state_dict(model,
    optimizer)` for an optimizer over a sharded model whose name is known here."""
    if not mt.is_method_call(call, "state_dict") or call.args or not isinstance(call.func, cst.Attribute):
        return None
    receiver = call.func.value
    model = sharded_name(facts, models, refs, receiver)
    if model is not None:
        return f"full_state_dict({model})"
    trained = optimizer_models(facts, models, receiver)
    name = model_name_at(facts, refs, trained[0], call) if len(trained) == 1 else None
    return f"full_optimizer_state_dict({name}, {facts.code(receiver)})" if name else None


def collectives(facts: Facts, models: Models, refs: dict[Ref, Model]) -> list[cst.Call]:
    """The calls that are collectives under FSDP2 only: forwards of sharded models, and the
    state dicts of sharded models and their optimizers (gathered, or loaded after the sharding)."""
    found = []
    for call in facts.calls:
        loaded = call.func.value if mt.is_method_call(call, "load_state_dict") and isinstance(
            call.func, cst.Attribute) else None
        if sharded_forward(facts, models, refs, call) or gather(facts, models, refs, call) or loaded is not None and (
                sharded_name(facts, models, refs, loaded) or optimizer_models(facts, models, loaded)):
            found.append(call)
    return found


def sharded_forward(facts: Facts, models: Models, refs: dict[Ref, Model], call: cst.Call) -> str | None:
    """`model(x)` (or `model.module(x)`) of a sharded model: the model's name, or None."""
    return sharded_name(facts, models, refs, call.func) if dotted(call.func) else None


def blocks(facts: Facts, model: Model) -> str:
    """Which modules `shard_model` shards before the root, as far as the source shows it."""
    built = [] if isinstance(model.defined, cst.FunctionDef) else [model.defined]
    if any(facts.qualify(c.func) == "torch.nn.Sequential" for node in built for c in facts.calls_in(node)):
        return "each layer with parameters of the nn.Sequential, then the root"
    classes = model_classes(facts, model)
    if len(classes) != 1:
        return ANY_BLOCKS
    found = _containers(facts, classes[0], model.name)
    if found:
        return f"each block of {', '.join(found)}, then the root"
    return f"the root only ({classes[0].name.value} holds no nn.ModuleList/nn.Sequential)"


def _containers(facts: Facts, cls: cst.ClassDef, prefix: str, depth: int = 2) -> list[str]:
    """`model.layers` (nn.ModuleList) and the like, assigned in `cls.__init__`, also inside
    attributes that are module classes of this file (`model.encoder.layers`); `model` itself
    for a subclass of nn.Sequential. `prefix` names an instance of `cls`."""
    for base in cls.bases:
        kind = CONTAINERS.get(facts.qualify(base.value) or "")
        if kind is not None:
            return [f"`{prefix}` ({kind})"]
    init = next((f for f in facts.functions.get("__init__", ()) if facts.enclosing_class(f) is cls), None)
    found: list[str] = []
    for target, value, _ in facts.writes_in(init) if init is not None else ():
        name = dotted(target)
        if not (name and name.startswith("self.") and name.count(".") == 1 and isinstance(value, cst.Call)):
            continue
        path = prefix + name[len("self"):]
        kind = CONTAINERS.get(facts.qualify(value.func) or "")
        if kind is not None:
            found.append(f"`{path}` ({kind})")
        elif depth and (inner := facts.classes.get(dotted(value.func) or "")) is not None and \
                is_module_class(facts, inner):
            found += _containers(facts, inner, path, depth - 1)
    return found
