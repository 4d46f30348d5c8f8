"""Which models train, where each is wrapped, and which later uses see the wrapper.

A model trains when an optimizer is built over its `parameters()` (over `self.parameters()` in a
method of the model's own class: each instance the program makes). It is wrapped once it is
ready: after the statement that builds or moves it (`model = Net().to(device)`) and after the
set-up that follows in the same block (weight init, `load_state_dict` of a resumed checkpoint,
freezing, `raw_model = model`), but before it is compiled, trained, handed to a training
function, or stored where training reads it (`self.model = model`, `Trainer(model)` whose
`__init__` does that). A `DataParallel` wrap is replaced at that same point.

A model that arrives as a parameter of the function that builds its optimizer
(`def train(model, loader): optimizer = Adam(model.parameters())`) is wrapped where that
function is entered: the parameter is rebound to the wrapper, so each call wraps the model it
was given and the caller keeps the bare model (trained in place) for evaluation and later calls.
Under `--strategy fsdp`, `ddpify.analysis.fsdp.place_shard` may move that point up (see there).
"""

from __future__ import annotations

import builtins
import itertools
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
import libcst as cst

from ddpify.analysis import forward, frameworks, freezing, objects, writes
from ddpify.analysis.call_branches import left_out
from ddpify.analysis.module_classes import is_module_class
from ddpify.analysis.objects import Sites
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref, argument_slot, param_names, target_names, unpacking_paths
from ddpify.syntax.names import dotted


@dataclass
class Model:
    name: str  # as written where it is wrapped: "model", "self.model"
    defined: cst.CSTNode  # the statement that builds, moves or DataParallel-wraps it
    anchor: cst.CSTNode  # the wrap goes right after this statement
    dataparallel: cst.Call | None = None  # the `nn.DataParallel(...)` call being replaced
    partial: bool = False  # its optimizer trains some sub-modules only: others may get no gradient
    unused: str | None = None  # why some parameters may get no gradient in a step (ddpify.analysis.forward)
    setup: list[cst.CSTNode] = field(default_factory=list)  # statements between defined and anchor
    before_anchor: bool = False  # the wrap goes right before `anchor` (a function's first statement)
    optimizers: list[cst.CSTNode] = field(default_factory=list)  # what trains it (optimizer calls)
    moved: list[cst.CSTNode] = field(default_factory=list)  # FSDP: statements moved after the sharding
    blocked: list[cst.CSTNode] = field(default_factory=list)  # FSDP: optimizers built before it, unmovable
    rebuilds: list["Model"] = field(default_factory=list)  # every wrap of this name here, in order
    param: str | None = None  # the parameter a received model arrives as, when `name` is where it is kept
    empty: str | None = None  # why it may have no parameter at run time: wrapped only where it has one to train
    maybe_none: bool = False  # its defining statement binds it to None on some path: wrapped only where it is not
    synced: str | None = None  # trained through its own methods, never its forward: why (the method call)
    beside: bool = False  # synced: its forward runs too, and the `synced` call runs sub-modules beside it
    read_beside: bool = False  # beside: `synced` reads a sub-module's parameter (`model.decoder.bias`), no call
    idle_read: bool = False  # beside: `synced` is a method of its own that reads a parameter its forward never uses
    penalty: bool = False  # synced: `synced` is a gradient penalty through it, and a step may leave parameters without gradient
    kept: bool = False  # synced: `synced` is a statement that keeps the model in an object before it is ready to wrap
    item: bool = False  # synced: an item of a container of modules, picked where its optimizer is built (`nets[net]`)
    held: bool = False  # synced: `synced` reads or loads the state dict of the module that holds it as `self.x`
    copied: bool = False  # synced: `synced` is a deep copy of it that gradients are taken through
    again: bool = False  # synced: `synced` is a backward through a forward of it that an earlier backward came after
    # item: what holds it in its optimizer's call (`m` of `m.parameters()`, a loop variable; `ema.model`, an attribute
    # of an object that is no model, `_held_unnamed`; `nets[k]`, picked by a comprehension's key)
    inline: cst.Name | cst.Attribute | cst.Subscript | None = None
    bypassed: str | None = None  # a DataParallel model trained through its `.module`'s own method: that call
    written: bool = False  # wrapped by the program itself (`ddpify check`): a copy of it is a wrapper too,
    # where a copy of a wrap ddpify places copies its module (unwrap-model)

    def __setattr__(self, name: str, value: object) -> None:
        """Setting again a field `holds_wrapper`'s answers depend on starts a new state of them
        (`_answers`; a model being built is in no `refs` yet)."""
        if name in _ANSWERED_FIELDS and name in self.__dict__:
            global _state
            _state += 1
        object.__setattr__(self, name, value)

    def sees_wrapper(self, facts: Facts, node: cst.CSTNode) -> bool:
        """Does `node`, in the wrap's own function, run after the wrap? At the top level of another
        file than a module's whose top level wraps the model (`model = DistributedDataParallel(...)`
        in `setup_objects.py`, `from setup_objects import model` then `torch.save(model.state_dict(),
        ...)` in the entry), always: the module ran whole when it was imported, before any other
        file could read its names (the merged module's order of the files is no order of running)."""
        if facts.imported_top_level(self.anchor, node):
            return True
        if self.before_anchor:
            return not facts.before(node, self.anchor)
        return facts.before(self.anchor, node) and not facts.is_inside(node, self.anchor)


_ANSWERED_FIELDS = frozenset({"empty", "maybe_none", "rebuilds"})  # the fields of a Model `holds_wrapper` reads
_state = 0  # bumped each time one of them is set on any Model (`_answers`)


@dataclass(frozen=True)
class Models:
    wrapped: list[Model]
    untraced: list[cst.CSTNode]  # optimizers (or loops that step by hand) whose model could not be found
    refs: dict[Ref, Model]  # names that hold a wrapper once the wraps have run (`wrapped_refs`)


def find(facts: Facts, place: Callable[[Model], Model] | None = None) -> Models:
    """The models that train, each wrapped where it is ready, or where `place` moves it
    (`ddpify.analysis.fsdp.place_shard`), before the names that hold it are followed from there."""
    wrapped: list[Model] = [m for m in (_trains_itself(facts, o) for o in facts.optimizers) if m is not None]
    untraced: list[cst.CSTNode] = []
    own = frozenset(o for m in wrapped for o in m.optimizers)
    for key, optimizer, partial, at in _trained_names(facts, untraced, own):
        if _built_for_no_caller(facts, key, at):
            continue
        read = {r} if at is not optimizer and (r := facts.ref(_expression(key), at)) is not None else None
        passed = _passed_by_callers(facts, key, at)  # `optimizer(net, lr)` called for `self.D`, then for `self.G`
        found = passed or [m for m in [_received(facts, key, at) or _handed_in(facts, key, at)] if m is not None] \
            or _located_in_subclasses(facts, key, at, read) or [m for m in [_locate(facts, key, at, read)] if m is not None]
        if not found or any(_holds_modules_only(facts, m) or _passed_containers(facts, m) for m in found):
            untraced.append(optimizer)
            continue
        modules = []
        for model in found:
            held = _held_modules(facts, model, at)
            if held is not None and held[1]:  # some it holds are not found: a TODO at the optimizer
                untraced.append(optimizer)
            modules += [model] if held is None else held[0]  # `trainable_list.parameters()` of an nn.ModuleList: its modules
        for one in modules:
            known = next((w for w in wrapped if w.defined is one.defined and w.name == one.name), None)
            if known is None:
                one.partial = partial
                wrapped.append(one)
            (known or one).optimizers.append(optimizer)
    _found_by_object(facts, wrapped, untraced)
    _found_as_items(facts, wrapped, untraced)
    if place is not None:
        wrapped = [place(model) for model in wrapped]
    models = _wrapped_once(facts, wrapped, untraced)
    wrapped = models.wrapped
    calls = _calls_on_models(facts, models.refs) if place is None else []
    for model in wrapped if place is None else ():  # DDP's (FSDP2 shards such a model all the same)
        _settle_sync(facts, calls, models, model)
    if any(model.synced for model in wrapped):  # no wrapper: the names hold the model itself
        models = Models(wrapped, untraced, wrapped_refs(facts, [m for m in wrapped if not m.synced]))
    for model in wrapped:
        model.unused = _idle_in_some_class(facts, model_classes(facts, model))
        model.empty = _maybe_empty(facts, model)
        model.maybe_none = _maybe_none(facts, model)
    for call, model in _forwards(facts, models):
        if model.unused is None and _leaves_outputs_unread(facts, call, model):
            model.unused = f"a training step leaves outputs of `{model.name}` unread (`{facts.code(facts.parent(call) or call)}`)"
    _frozen_after_wrap(facts, wrapped)
    # both asked (`|`): a model a penalty runs through is synced for that first, and the other skips it
    if place is None and (_sync_penalised(facts, models) | _sync_idle_read(facts, calls, models)):
        models = Models(wrapped, untraced, wrapped_refs(facts, [m for m in wrapped if not m.synced]))
    return models


def _sync_idle_read(facts: Facts, calls: list[tuple[cst.Call, bool]], models: Models) -> bool:
    """Sync (no wrapper) each model some of whose parameters its forward never uses
    (`forward.never_used_in_forward`) where a training step calls, with gradients, a method of the
    model's own that reads one of them (elastic-resnet's `self.net.get_hidden_channels_penalty()`,
    a penalty over each block's `hidden_channels`, added to the loss of `self.net(inputs)`): that
    parameter gets its gradient outside DistributedDataParallel's forward, which, with
    find_unused_parameters, took it for unused at the forward's end and stops when backward reaches it
    ("marked as ready twice"). Whether any was. A call whose value is only written out, or made
    without gradients, and a method that reads no such parameter, leave the wrapper."""
    for model in models.wrapped:
        if model.synced or model.dataparallel is not None or model.item:
            continue
        classes = model_classes(facts, model)
        idle = set().union(*(forward.never_used_in_forward(facts, cls) for cls in classes))
        if not idle:
            continue
        own = _own_refs(models.refs, model)
        for call, without_grad in calls:
            func = call.func
            if without_grad or not isinstance(func, cst.Attribute) or func.attr.value in mt.MODULE_API | STATE \
                    or not dotted(func.value) or _holds_own(facts, models.refs, own, func.value) is None \
                    or _only_written_out(facts, call):
                continue
            methods = facts.user_functions(call) or [f for c in classes for f in facts.method(c, func.attr.value)]
            if any(_reads_attribute(method, idle) for method in methods):
                model.synced, model.beside, model.idle_read = facts.code(call.func), True, True
                break
    return any(model.idle_read for model in models.wrapped)


def _reads_attribute(func: cst.FunctionDef, names: set[str]) -> bool:
    """Does `func` read an attribute of one of `names` (`block.hidden_channels`, `self.hidden_channels`)?"""
    return any(isinstance(node, cst.Attribute) and node.attr.value in names
               for node in _walk(func.body))


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _frozen_after_wrap(facts: Facts, wrapped: list[Model]) -> None:
    """A wrapped model some of whose parameters the program freezes where the wrapper is built
    already (`ddpify.analysis.freezing`) may leave them without gradient in a step: `unused` says so."""
    for model in wrapped:
        if model.unused is None and not model.synced:
            model.unused = freezing.frozen_after_wrap(facts, model.name, lambda stmt, m=model: _sees_wrap(facts, m, stmt))


def _idle_in_some_class(facts: Facts, classes: list[cst.ClassDef]) -> str | None:
    """Why some parameters of a model may get no gradient in a step (`forward.idle_parameters`), of
    the first of the classes it may be that says so; where it may be one of several (a class
    looked up by name, a module handed on), the reason names the class it is about, with its file."""
    for cls in classes:
        reason = forward.idle_parameters(facts, cls)
        if reason is not None:
            if len(classes) == 1:
                return reason
            part = facts._part(cls)
            return f"in `{f'{part}.' if part else ''}{cls.name.value}` (one of the classes it may be), {reason}"
    return None


def _sees_wrap(facts: Facts, model: Model, stmt: cst.CSTNode) -> bool:
    """Does `stmt` run where `model` is wrapped already? Not a statement of another function that
    runs before the wrap through the calls between them: a transfer-learning script that freezes
    the backbone in `main` (`for name, p in model.named_parameters(): p.requires_grad = False`),
    then hands the model to a trainer whose `__init__` wraps it, froze it before DDP was built. Nor a
    method of a sibling class under the same base, whose `self.model` is another object."""
    if facts.scope(stmt) is not facts.scope(model.anchor) and facts.runs_before(stmt, model.anchor, strict=True):
        return False
    owner, cls = facts.enclosing_class(model.anchor), facts.enclosing_class(stmt)
    if model.name.startswith("self.") and owner is not None and cls is not None and not facts.kin_classes(owner, cls):
        return False
    return model.sees_wrapper(facts, stmt)


def _settle_sync(facts: Facts, calls: list[tuple[cst.Call, bool]], models: Models, model: Model) -> None:
    """Whether `model` is synced rather than wrapped, and why: trained through its own methods,
    or kept by an object before it is ready to wrap. An item picked by key is synced already
    (`_found_as_items`)."""
    if model.item:
        return
    model.synced, model.beside = _trained_by_methods(facts, calls, models.refs, model)
    copies = differentiated_copies(facts, model, grads_only=True) if model.synced is None else []
    if copies:  # `self.v_net = copy.deepcopy(net)` that a DARTS architect takes `torch.autograd.grad` through
        model.synced, model.copied = facts.code(copies[0][0]), True
    if model.synced is None and model.dataparallel is None and (read := _parameter_read_beside(
            facts, calls, models.refs, model)) is not None:
        model.synced, model.beside, model.read_beside = read, True, True
    model.bypassed = _through_module(facts, models.refs, model)
    keeper = _kept_before_ready(facts, model) if not model.synced else None
    if keeper is not None:  # `trainer = Trainer(model)`, then `model = model.to(device)`: the trainer keeps the bare model
        model.synced, model.kept = facts.code(keeper).strip(), True
    state = _holders_state_read(facts, model) if not model.synced and model.dataparallel is None else None
    if state is not None:  # `torch.save(vae.state_dict(), path)` of the module whose `self.encoder` it is
        model.synced, model.held = facts.code(state), True
    again = _backward_again(facts, calls, models, model) if not model.synced and model.dataparallel is None else None
    if again is not None:  # SAC's critic: the actor's backward through its second forward, then its own loss's
        model.synced, model.again = facts.code(again), True


def _backward_again(facts: Facts, calls: list[tuple[cst.Call, bool]], models: Models, model: Model) -> cst.Call | None:
    """A backward pass through a forward of `model` that an earlier backward of the same function
    came after (`q_1 = self.qf_1(s, a)`, `q_new = self.qf_1(s, actor(s))`, `actor_loss.backward()`
    through `q_new`, then `qf_1_loss.backward()` through `q_1`): DistributedDataParallel averages the
    gradients of the first backward after its last forward only, and this one's stay each process's
    own (round 30's held-out SAC: its critics differed after their second step; decision 0261). The
    later backward, or None. A loss is followed through the names the function binds before it,
    not through `.detach()`; a backward whose forwards all come after the earlier backward (a GAN's
    generator step, `D(G(z))` after the discriminator's backward) is reduced by its own forward."""
    own = _own_refs(models.refs, model)
    forwards: dict[cst.FunctionDef, list[cst.Call]] = defaultdict(list)
    for call, without_grad in calls:
        scope = facts.scope(call)
        if not without_grad and dotted(call.func) and isinstance(scope, cst.FunctionDef) \
                and _holds_own(facts, models.refs, own, call.func) is not None:
            forwards[scope].append(call)
    for func, made in forwards.items():
        if len(made) < 2:
            continue
        backwards = [(c, c.func.value) for c in facts.calls_of(func)
                     if isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"]
        reached = [(b, _forwards_reached(facts, loss, func, b, frozenset(made))) for b, loss in backwards]
        reached = sorted([(b, r) for b, r in reached if r], key=lambda pair: facts.spans[pair[0]][0])
        for i, (later, through) in enumerate(reached):
            for earlier, _ in reached[:i]:
                if all(facts.before(f, earlier) for f in through) and not any(
                        facts.before(earlier, f) and facts.before(f, later) for f in made):
                    return later
    return None


def _forwards_reached(facts: Facts, expr: cst.BaseExpression, func: cst.FunctionDef, at: cst.CSTNode,
                      made: frozenset[cst.Call], depth: int = 8) -> set[cst.Call]:
    """The calls of `made` whose outputs `expr` may be computed from, through the names `func` binds
    before `at` (each binding of a name there), not through `.detach()` or `.item()`."""
    found: set[cst.Call] = set()
    names: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("detach", "item"):
            continue
        if isinstance(node, cst.Call) and node in made:
            found.add(node)
        if isinstance(node, cst.Name) or isinstance(node, cst.Attribute) and mt.is_name(node.value, "self"):
            names.append(node)
            continue
        stack.extend(node.children)
    if depth <= 0:
        return found
    refs = {r for n in names if (r := facts.ref(n)) is not None}
    for target, value, stmt in facts.assigns if refs else ():
        if facts.scope(stmt) is func and facts.before(stmt, at) and \
                any(facts.ref(t, stmt) in refs for t, _ in unpacking_paths(target)):
            found |= _forwards_reached(facts, value, func, stmt, made, depth - 1)
    return found


def _holders_state_read(facts: Facts, model: Model) -> cst.Call | None:
    """A call that reads or loads the state dict of the module that holds `model` as a sub-module
    (`self.encoder` built in `IntroVAE.__init__`, which its own forward trains with an Adam over
    `self.encoder.parameters()`; then `torch.save(vae.state_dict(), path)` and
    `vae.load_state_dict(torch.load(ckpt))` in `main()`), or that saves that module whole: a wrapper
    there becomes a sub-module of it, and every key of the holder's state dict under it gets a
    `module.` (`encoder.module.net.0.weight`), so that checkpoints no longer load into the single-GPU
    model, nor its checkpoints into this one. None where no such call is found."""
    if not model.name.startswith("self.") or model.name.count(".") != 1:
        return None
    holder = facts.enclosing_class(model.anchor)
    if holder is None or not is_module_class(facts, holder):
        return None
    flow = objects.of(facts)

    def holder_of(expr: cst.BaseExpression) -> bool:
        if mt.is_name(expr, "self"):
            cls = facts.enclosing_class(expr)
            return cls is not None and facts.kin_classes(cls, holder)
        return any((cls := flow.constructs(site)) is not None and facts.kin_classes(cls, holder)
                   for site in flow.values(expr))
    for call in facts.calls_named("state_dict", "load_state_dict"):
        if isinstance(call.func, cst.Attribute) and holder_of(call.func.value):
            return call
    for call in facts.calls_to("torch.save"):
        if call.args and holder_of(call.args[0].value):
            return call
    return None


def _sync_penalised(facts: Facts, models: Models) -> bool:
    """Sync (no wrapper) each model a gradient penalty runs through whose step may leave
    parameters without a gradient (`model.partial` or `model.unused`); whether any was."""
    for call, _, through in penalties(facts, models.refs):
        for model in through:
            if not model.synced and model.dataparallel is None and (model.partial or model.unused):
                model.synced, model.penalty = facts.code(call.func), True
    return any(model.penalty for model in models.wrapped)


def penalties(facts: Facts, refs: dict[Ref, Model]) -> Iterator[tuple[cst.Call, cst.BaseExpression | None, list[Model]]]:
    """`torch.autograd.grad(D(x).sum(), x, create_graph=True)` with `D` wrapped (held by `refs`), its
    output kept in a name or unpacked from the forward's result (`out, _ = D(x)`) and read by the
    `grad` call (`grad(out, x)`, `grad(out.mean(), x)`): the call, `D` where the forward runs in the
    function of the `grad` call (None elsewhere: its name may not hold it there), and the models
    the forwards run.

    A model with a gradient penalty whose step may leave some parameters without gradient is
    synced, not wrapped (`find`): DDP then needs find_unused_parameters, which takes those for
    unused at the forward's end, while the penalty's backward, tied to every parameter so that DDP
    sees a gradient of each (`penalty_gradients`), reaches them again: "marked as ready twice"
    (progressive-gan's WGAN-GP discriminator, whose layers run by resolution)."""
    for call in facts.calls:
        outputs = mt.positional(call, 0) or mt.keyword(call, "outputs")
        if facts.qualify(call.func) != "torch.autograd.grad" or outputs is None or \
                facts.parameter_gradients(call) is not None:
            continue
        computed = [outputs.value, *facts.origins(outputs.value)]
        for name in facts.variables_in(outputs.value):  # `out = D(x)`, then `grad(out, x)` or `grad(out.sum(), x)`
            ref = facts.ref(name) if name.value != "self" else None
            if ref is not None:  # `out, attention = D(x)`: a part of the forward's result
                computed += [*facts.origins(name), *facts.unpacked_from(ref)]
        forwards = [c for e in computed for c in facts.calls_in(e)
                    if dotted(c.func) and facts.ref(c.func) in refs]
        if forwards:
            here = [c.func for c in forwards if facts.scope(c) is facts.scope(call)]
            through = list({id(m): m for c in forwards if (r := facts.ref(c.func)) is not None and (m := refs.get(r)) is not None}.values())
            yield call, here[0] if len({facts.code(f) for f in here}) == 1 else None, through


def _calls_on_models(facts: Facts, refs: dict[Ref, Model]) -> list[tuple[cst.Call, bool]]:
    """The calls `_trained_by_methods` asks about, each with whether it runs without gradients: those
    whose callee (`model(x)`) or its object (`model.classify(x)`) may hold one of the models."""
    found = []
    for call in facts.calls:
        func = call.func
        if facts.library_callee(func):
            continue  # `transforms.Compose(...)`, `plt.plot(...)`: a library's, no model of the program
        if dotted(func) and holds_wrapper(facts, refs, func) is not None or isinstance(func, cst.Attribute) \
                and dotted(func.value) and holds_wrapper(facts, refs, func.value) is not None:
            found.append((call, facts.grad_disabled(call)))
    return found


def _trained_by_methods(facts: Facts, calls: list[tuple[cst.Call, bool]], refs: dict[Ref, Model],
                        model: Model) -> tuple[str | None, bool]:
    """A model the program never calls with gradients (no `model(x)` where a name holds it, but
    under `torch.no_grad()`) but whose own methods it calls (`wgan.c_loss(x, z)`,
    `scholar.train_with_replay(data)`: not nn.Module's API): they run its sub-modules outside
    DistributedDataParallel's forward, where DDP averages gradients, so a wrapper around it would
    average none. The first such call, as written, or None (and False). Also a model whose
    forward the program runs and whose own method it calls with gradients where that method runs a sub-module
    (`model.classify(x)` beside `elbo(x, y)`, which runs `model(...)` twice in one step), or that
    calls a sub-module of it directly (`model.decoder(z)` beside `z = model(x)`): DDP would see
    those parameters used outside its forward, and with find_unused_parameters (a sub-module the
    forward never runs) marks them ready at the forward's end and again in backward ("marked as
    ready twice"): that call, and True. Also a model whose forward runs somewhere but whose step
    takes its loss from a method of its own that runs the forward itself (`out, loss =
    self.model.forward_vs_target(x, y)`, then `loss.backward()`) without running the model's forward
    beside it: that step trains the bare model (the first such call, and False). Not for a
    DataParallel model (its `.module` reads go with the wrapper)."""
    if model.dataparallel is not None:
        return None, False
    own = _own_refs(refs, model)
    found, forward, beside, trains = None, False, None, None
    forward_in: set = set()  # the functions that run its forward with gradients
    bare: list[cst.Call] = []  # calls of its methods that run its forward themselves, with gradients
    for call, without_grad in calls:
        if dotted(call.func) and not without_grad and _holds_own(facts, refs, own, call.func) is not None:
            forward = True  # its forward runs with gradients (an evaluation's no_grad forward trains nothing)
            forward_in.add(facts.scope(call))
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value not in mt.MODULE_API | STATE \
                and dotted(func.value) and _holds_own(facts, refs, own, func.value) is not None:
            found = found or facts.code(call.func)
            classes = model_classes(facts, model)
            methods = facts.user_functions(call) or [  # the method of a class the model may be, or of its bases
                f for c in classes for f in facts.method(c, func.attr.value)]
            runs = any(_runs_submodules(facts, m) or _steps_itself(facts, m) for m in methods) if methods else \
                _submodule_of(facts, classes, func.attr.value) and not _losses_only(facts, classes, func.attr.value)
            if beside is None and not without_grad and runs and not _only_written_out(facts, call):
                beside = facts.code(call.func)
            if trains is None and not without_grad and any(facts.trains(m) for m in methods):
                trains = facts.code(call.func)  # `vae.fit_on_data`, not `vae.get_prior_samples_given_Z` before it
            if not without_grad and any(_runs_own_forward(facts, m) for m in methods):
                bare.append(call)
    # a step whose loss comes from a method that runs the forward itself (`out, loss =
    # self.model.forward_vs_target(x, y)`, then `loss.backward()`) and that runs no forward of the
    # model beside it trains the bare model, whatever runs its forward elsewhere
    stepped = next((c for c in bare if (f := facts.scope(c)) not in forward_in and isinstance(f, cst.FunctionDef)
                    and facts.trains(f)), None)
    if forward and stepped is not None:
        return facts.code(stepped.func), False
    # named by the method that trains (`netD.train_step`), not the first one called (`restore_checkpoint`)
    return (beside, beside is not None) if forward else (trains or beside or found, False)


def _runs_own_forward(facts: Facts, method: cst.FunctionDef) -> bool:
    """Does `method` run its object's forward (`self.forward(x)`, `self(x)`) with gradients: a loss
    method (`forward_vs_target`: `logits = self.forward(idx)`, then a cross entropy), which run on
    the bare model trains outside DistributedDataParallel's forward?"""
    return any(not facts.grad_disabled(c) and (mt.is_name(c.func, "self") or isinstance(c.func, cst.Attribute)
                                                and mt.is_name(c.func.value, "self") and c.func.attr.value == "forward")
               for c in facts.calls_in(method))


def _only_written_out(facts: Facts, call: cst.Call) -> bool:
    """Is what `call` returns only written out: an argument of a file write or a print, or bound to
    a name every read of which is one (`zx = model.decoder(fixed_z)`, then `save_image(zx.view(24, 1,
    28, 28), path)`: a VAE's sample drawn each epoch)? No backward reaches its graph, so the
    parameters it runs outside the model's forward get no gradient there: DistributedDataParallel
    may wrap the model (`_trained_by_methods`). A read of the name anywhere else (a loss, a helper of
    the program, a container) may reach a backward."""
    def written(node: cst.CSTNode) -> bool:
        return any(isinstance(a, cst.Call) and (mt.is_call_of(a, "print") or writes.file_write(facts, a) is not None)
                   for a in itertools.takewhile(lambda a: type(a) not in mt.STATEMENTS, facts.ancestors(node)))

    if written(call):
        return True
    stmt = facts.statement(call)
    bound = [t for t, v, _ in facts.assigns if v is call and isinstance(t, cst.Name)]
    if len(bound) != 1 or not isinstance(stmt, cst.SimpleStatementLine):
        return False
    reads = [n for n in facts.uses(bound[0].value, facts.scope(call)) if n is not bound[0]
             and not any(t is n for t, _, _ in facts.assigns)]
    return bool(reads) and all(written(n) for n in reads)


def _parameter_read_beside(facts: Facts, calls: list[tuple[cst.Call, bool]], refs: dict[Ref, Model],
                           model: Model) -> str | None:
    """A parameter of a sub-module of `model` that a training step hands to a call beside the
    model's forward (AWD-LSTM's `criterion(model.decoder.weight, model.decoder.bias, output,
    targets)`, a split softmax over the decoder's weights): that parameter gets its gradient outside
    DistributedDataParallel's forward, and where the forward never runs that sub-module
    (find_unused_parameters) DDP takes it for unused at the forward's end and stops when backward
    reaches it ("marked as ready twice"). The read as written, or None. Only for a model whose forward
    runs with gradients too; only an argument of a call with gradients in a function that trains; not a
    module's metadata (`model.fc.weight.shape`)."""
    own = _own_refs(refs, model)
    if not any(dotted(c.func) and not without_grad and _holds_own(facts, refs, own, c.func) is not None
               for c, without_grad in calls):
        return None  # its forward never runs with gradients: `_trained_by_methods` answers
    classes = model_classes(facts, model)
    for call in facts.calls:
        for arg in call.args:
            read = arg.value
            if not (isinstance(read, cst.Attribute) and isinstance(read.value, cst.Attribute)
                    and read.attr.value not in mt.MODULE_API | STATE | forward.METADATA
                    and dotted(read.value.value) and _submodule_of(facts, classes, read.value.attr.value)
                    and not _never_a_module(facts, classes, read.value.attr.value)):
                continue
            scope = facts.scope(call)
            if facts.trains(scope) and not facts.grad_disabled(call) \
                    and _holds_own(facts, refs, own, read.value.value) is not None:
                return facts.code(read)
    return None


def _own_refs(refs: dict[Ref, Model], model: Model) -> dict[Ref, Model]:
    """The names of `refs` that hold `model` (the wraps of one name share its refs): `refs` itself
    where that is every one of them (one model), so that `holds_wrapper` answers from what it
    already answered about `refs` (`_answers` keeps answers per dict of names)."""
    own = {ref: m for ref, m in refs.items() if m is model or m in model.rebuilds}
    return refs if len(own) == len(refs) else own


def _holds_own(facts: Facts, refs: dict[Ref, Model], own: dict[Ref, Model], expr: cst.BaseExpression) -> Holds | None:
    """`holds_wrapper(facts, own, expr)` for the names of one model of `refs` (`own`: `_own_refs`),
    asked of every call on any model: where `own` is not all of `refs` (and holds wraps ddpify
    places, `_copies_wrap`), None without asking where the question never reads a name of `own`
    (`_asked`), as it then answers as it does of no name at all, so that each model's questions
    about the calls of the others are not answered model by model (quadratic in the models). (A
    program's one model: `own` is `refs`, whose answers `_calls_on_models` already gave.)"""
    asked = _asked(facts, expr) if own is not refs and not _copies_wrap(facts, own) else None
    if asked is not None and asked.isdisjoint(own):
        return None
    return holds_wrapper(facts, own, expr)


class _Asking(dict):
    """An empty `refs` that keeps the names `holds_wrapper` asks it about (`_asked`); `every`: it
    read every model it holds (`_object_holds`), so that any may change the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[Ref] = set()
        self.every = False

    def __contains__(self, ref: object) -> bool:
        self.asked.add(ref)  # type: ignore[arg-type]
        return False

    def get(self, ref: Ref, default: Model | None = None) -> Model | None:  # type: ignore[override]
        self.asked.add(ref)
        return default

    def values(self):  # type: ignore[override]
        self.every = True
        return super().values()


def _asked(facts: Facts, expr: cst.BaseExpression) -> frozenset[Ref] | None:
    """The names whose presence in `refs` the answer of `holds_wrapper(facts, refs, expr)` reads,
    found once per expression by asking it of no name at all: while none of them is in `refs`, the
    question takes the same steps as it does then, and answers None. None where the answer may
    depend on more (every model of `refs` read, or an answer but None of no name)."""
    memo = facts.__dict__.setdefault("_holds_asked", {})
    if id(expr) not in memo:
        probe = _Asking()
        answer = _holds(facts, probe, {}, expr, 3)
        memo[id(expr)] = (expr, None if probe.every or answer is not None else frozenset(probe.asked))
    return memo[id(expr)][1]


def _through_module(facts: Facts, refs: dict[Ref, Model], model: Model) -> str | None:
    """For a model whose `nn.DataParallel` the wrap replaces: the first call with gradients of a
    method of its own through `.module` that runs its sub-modules or a training step
    (`policy.module.sample(x)`), as written; None where there is none. It runs the module inside
    the wrapper, outside DistributedDataParallel's forward, the only place where DDP averages
    gradients (DataParallel's `.module` ran on one GPU, with the same gradients)."""
    if model.dataparallel is None:
        return None
    own = _own_refs(refs, model)
    classes = model_classes(facts, model)
    for call in facts.calls:
        func = call.func
        if not isinstance(func, cst.Attribute) or not isinstance(inner := func.value, cst.Attribute) \
                or inner.attr.value != "module" or not dotted(inner.value) \
                or func.attr.value in mt.MODULE_API | STATE or facts.grad_disabled(call) \
                or holds_wrapper(facts, own, inner.value) is None:
            continue
        methods = [f for c in classes for f in facts.method(c, func.attr.value)]
        if any(_runs_submodules(facts, m) or _runs_forward(facts, m) for m in methods) or \
                not methods and _submodule_of(facts, classes, func.attr.value):
            return facts.code(func)
    return None


def _runs_forward(facts: Facts, method: cst.FunctionDef) -> bool:
    """Does `method` run its object's forward (`self.forward(x)`, `self(x)`)?"""
    return any(mt.is_name(c.func, "self") or isinstance(c.func, cst.Attribute) and dotted(c.func.value) == "self"
               and c.func.attr.value == "forward" for c in facts.calls_in(method))


def _kept_before_ready(facts: Facts, model: Model) -> cst.CSTNode | None:
    """A statement that keeps the model in an object (`trainer = Trainer(model)` whose `__init__`
    stores it on `self`, `self.net = model`, `[model, ema]`) after it is built and before the
    statement the wrap follows, a later step of its set-up that rebinds the same object (`model =
    model.to(device)`, `model = model.train()`): the object would train the bare model while the
    wrapper's forward never runs, and DDP would average nothing. The wrap cannot go before the
    keeper (DDP must be built once the model is on its device), so such a model is synced (no
    wrapper: the object and the name share the one model). None where there is no such statement."""
    if isinstance(model.defined, cst.FunctionDef) or model.dataparallel is not None:
        return None
    name, defined = model.name, model.defined
    scope = facts.scope(defined)
    ref = facts.ref(_expression(name), defined)
    if ref is None:
        return None
    earlier = [stmt for _, value, stmt in facts.writes(ref) if facts.before(stmt, defined)
               and not isinstance(stmt, cst.AugAssign) and not _mentions(facts, value, name)]
    moved = [stmt for _, value, stmt in facts.writes(ref) if facts.is_inside(stmt, defined)
             and _mentions(facts, value, name)]
    if not earlier or not moved:  # built where it is wrapped: any keeper comes after the wrap
        return None
    start, end = earlier[-1], moved[-1]
    for call in facts.calls_of(scope):
        if facts.before(start, call) and facts.before(call, end) and not facts.is_inside(call, start) \
                and any(_keeps_argument(facts, call, f, name, copies=False) for f in facts.user_functions(call)):
            return facts.statement(call)
    for _, _, stmt in facts.writes_in(scope):
        line = facts.statement(stmt)
        if facts.before(start, line) and facts.before(line, end) and (_stores(line, name) or _collects(line, name)):
            return line
    return None


def _submodule_of(facts: Facts, classes: list[cst.ClassDef], attr: str) -> bool:
    """Does one of `classes` keep `self.<attr>` (`self.decoder = nn.Linear(2, 4)`), so that
    `model.<attr>(z)` runs a sub-module of the model?"""
    return any(cls in classes for cls in _kept_attributes(facts).get(attr, ()))


def _losses_only(facts: Facts, classes: list[cst.ClassDef], attr: str) -> bool:
    """Is every value `classes` keep as `self.<attr>` a torch loss module (`self.loss =
    nn.MSELoss()`), which makes no parameter? `model.loss(pred, target)` beside `model(x)` runs none
    outside the model's forward: no reason to sync the model rather than wrap it.

    Before, the twenty-third sweep's DQN policy (`self.policy_net.loss(...)` beside
    `self.policy_net(states)`) was synced, its report saying DistributedDataParallel "would see their
    parameters used outside its forward": it has none (decision 0191)."""
    values = [v for t, v, s in facts.assigns if dotted(t) == f"self.{attr}" and facts.enclosing_class(s) in classes]
    return bool(values) and all(isinstance(v, cst.Call) and _loss_class(facts.qualify(v.func)) for v in values)


def _loss_class(qualified: str | None) -> bool:
    """`torch.nn.MSELoss`, `torch.nn.modules.loss.CrossEntropyLoss`: a loss of torch's, none of which
    makes a parameter but the adaptive softmax's (`AdaptiveLogSoftmaxWithLoss`)."""
    return qualified is not None and qualified.startswith("torch.nn.") and qualified.endswith("Loss") \
        and not qualified.endswith("WithLoss")


def differentiated_copies(facts: Facts, model: Model, grads_only: bool = False) -> list[tuple[cst.Call, str]]:
    """The deep copies of `model` that gradients are taken through (a DARTS architect's unrolled
    step: `self.v_net = copy.deepcopy(net)`, then `torch.autograd.grad(self.v_net.loss(x, y),
    self.v_net.alphas())`), each with the name that keeps it: a reason to sync the model rather
    than wrap it (a copy of the wrapper would be a wrapper, whose methods are not the model's), and
    copies to sync with it (`wrap_model._sync_copies`). `grads_only`: through `torch.autograd.grad`
    only, not a backward (an object that trains its own copy). A copy nothing differentiates (an
    EMA copy, a best model kept) is none. An item picked by key (`nets[net]`) has no name to follow its copies
    by.

    Before, only the rewrite asked it, of a model already synced for another reason: pt.darts'
    search model was synced for its `model.criterion(...)` (a loss module) beside its forward
    (decision 0191)."""
    if model.item:
        return []
    flow = objects.of(facts)
    held = next(iter(_assigned_as(model.anchor, model.name) + _assigned_as(model.defined, model.name)), None)
    if held is None and "." in model.name:
        return []  # `self.net` bound where ddpify does not see the statement: no copy of it is known
    sites = set(flow.values(held or cst.Name(model.name)))
    found = []
    for call in facts.calls_to("copy.deepcopy"):
        if not call.args or not sites & set(flow.values(call.args[0].value)):
            continue
        stmt = facts.statement(call)
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else stmt
        if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
            continue
        kept = dotted(assign.targets[0].target)
        if kept is not None and (_differentiated(facts, stmt, kept, grads_only)
                                 or _differentiated_elsewhere(facts, call, grads_only)):
            found.append((call, kept))
    return found


def _assigned_as(stmt: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The targets of `stmt` (a line of one assignment, or the assignment) spelled `name`."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        stmt = stmt.body[0]
    found = [t.target for t in getattr(stmt, "targets", ())] + ([stmt.target] if isinstance(stmt, cst.AnnAssign) else [])
    return [t for t in found if dotted(t) == name]


def _differentiated(facts: Facts, stmt: cst.CSTNode, kept: str, grads_only: bool) -> bool:
    """Is a gradient taken (`torch.autograd.grad`, `.backward()`) in a function of the class (or
    the function) that keeps the copy as `kept`, one that reads `kept` with gradients on? A
    target network (TD3's `self.critic_target`) is not: it runs under `torch.no_grad()`, and its
    parameters are read only to be overwritten (`target.parameters()` of a soft update)."""
    owner = facts.enclosing_class(stmt) or facts.scope(stmt)
    for read in facts.findall(owner, (cst.Name, cst.Attribute), lambda n: dotted(n) == kept):
        scope = facts.scope(read)
        if facts.grad_disabled(read) or facts.is_inside(read, stmt) or _no_gradient_through(facts, read):
            continue
        if scope is not None and any(_takes_gradient(facts, c, grads_only) for c in facts.calls_in(scope)):
            return True
    return False


def _differentiated_elsewhere(facts: Facts, copy: cst.Call, grads_only: bool) -> bool:
    """Is a gradient taken, with gradients on, in a function that runs the object `copy` makes
    under any name (`unrolled_gradient(self.v_net, x, y)`, whose `net.loss(x, y)` goes into
    `torch.autograd.grad`)? The calls that run it: the object called, or a method of it that is no
    read of its state; found by the object flow, in the whole program."""
    flow = objects.of(facts)
    for call in facts.calls:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STATE_METHODS or facts.grad_disabled(call):
            continue
        held = [e for e in [func, func.value if isinstance(func, cst.Attribute) else None] if e is not None and dotted(e)]
        if not any(copy in flow.values(e) for e in held):
            continue
        scope = facts.scope(call)  # a function's (the top level's reads are `_differentiated`'s)
        if isinstance(scope, cst.FunctionDef) and any(_takes_gradient(facts, c, grads_only) for c in facts.calls_in(scope)):
            return True
    return False


def _takes_gradient(facts: Facts, call: cst.Call, grads_only: bool) -> bool:
    """`torch.autograd.grad(...)`, or (not `grads_only`) a backward."""
    return facts.qualify(call.func) == "torch.autograd.grad" or not grads_only and facts.is_backward(call)


_STATE_METHODS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "state_dict",
                            "load_state_dict", "eval", "train", "to", "cpu", "cuda", "zero_grad", "requires_grad_"})


def _no_gradient_through(facts: Facts, read: cst.CSTNode) -> bool:
    """`read.parameters()`, `read.load_state_dict(...)`, `read.eval()`: the module's state, not a
    forward a gradient could go through."""
    attr = facts.parent(read)
    return isinstance(attr, cst.Attribute) and attr.value is read and attr.attr.value in _STATE_METHODS \
        and isinstance(call := facts.parent(attr), cst.Call) and call.func is attr


NO_MODULES = frozenset({"open", "io.open", "codecs.open", "logging.getLogger", "csv.writer", "csv.DictWriter"})


def _never_a_module(facts: Facts, classes: list[cst.ClassDef], attr: str) -> bool:
    """Does every value `classes` keep as `self.<attr>` hold no module: a file `open(...)` gives
    (the twenty-first sweep's vision-hw5: `self.logFile = open(path, 'w')` in the model's
    `__init__`, its `net.logFile.name` printed in main), a logger, a loader, an optimizer, a
    literal? What is read of it (`.name`) is no parameter of a sub-module."""
    values = [v for t, v, s in facts.assigns if dotted(t) == f"self.{attr}" and facts.enclosing_class(s) in classes]
    return bool(values) and all(_no_module_value(facts, v) for v in values)


def _no_module_value(facts: Facts, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.IfExp):
        return _no_module_value(facts, value.body) and _no_module_value(facts, value.orelse)
    if isinstance(value, (cst.BaseString, cst.Integer, cst.Float)) or mt.is_name(value, "None"):
        return True
    if not isinstance(value, cst.Call):
        return False
    name = dotted(value.func)  # a builtin (`open`) qualifies to nothing: its name, unless the program defines one
    qualified = facts.qualify(value.func) or (name if name not in facts.functions and name not in facts.classes else None)
    return qualified in NO_MODULES or objects.of(facts).kind(value) in (objects.LOADER, objects.OPTIMIZER, objects.WRITER)


def _kept_attributes(facts: Facts) -> dict[str, set[cst.ClassDef | None]]:
    """attr -> the classes whose methods assign `self.<attr>`, from one pass over the assignments
    (asked of every argument of every call, for each model: a framework with ten trainer classes
    asked it millions of times)."""
    found = facts.__dict__.get("_kept_attributes")
    if found is None:
        found = facts.__dict__["_kept_attributes"] = defaultdict(set)
        for target, _, stmt in facts.assigns:
            name = dotted(target)
            if name is not None and name.startswith("self.") and name.count(".") == 1:
                found[name[5:]].add(facts.enclosing_class(stmt))
    return found


def _runs_submodules(facts: Facts, method: cst.FunctionDef) -> bool:
    """Does `method` call a sub-module of its object (`self.classifier(x)` in `classify`)? Not
    nn.Module's API (`next(self.parameters())` in `init_hidden`), not another method."""
    return any(isinstance(c.func, cst.Attribute) and dotted(c.func.value) == "self"
               and c.func.attr.value not in mt.MODULE_API | STATE and not facts.user_functions(c)
               for c in facts.calls_in(method))


def _steps_itself(facts: Facts, method: cst.FunctionDef) -> bool:
    """Does `method` run its object's forward (`self.forward(x)`, `self(x)`) and a backward, itself
    or in the methods of its object it calls (`self.generate_images(n)`), with gradients: a training
    step on the bare model (mimicry's `netD.train_step(real_batch, netG, optD)`), whose gradients
    no DistributedDataParallel wrapper sees? A method that only computes with the forward
    (`temperature_logits`: `self(x) / t`) leaves the backward to a step that runs the wrapper too."""
    forward = backward = False
    todo, seen = [method], {method}
    while todo and not (forward and backward):
        for c in facts.calls_in(todo.pop()):
            if facts.grad_disabled(c):  # `@torch.no_grad() def generate(...)`: trains nothing
                continue
            func = c.func
            backward = backward or isinstance(func, cst.Attribute) and func.attr.value == "backward" \
                or facts.qualify(func) == "torch.autograd.backward"
            if mt.is_name(func, "self") or isinstance(func, cst.Attribute) and dotted(func.value) == "self" \
                    and func.attr.value == "forward":
                forward = True
            elif isinstance(func, cst.Attribute) and dotted(func.value) == "self":
                fresh = [f for f in facts.user_functions(c) if f not in seen and f.name.value != "__init__"]
                seen.update(fresh)
                todo += fresh
    return forward and backward


STATE = frozenset({"state_dict", "load_state_dict"})
CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.ModuleDict"})


def _held_modules(facts: Facts, model: Model, optimizer: cst.CSTNode) -> tuple[list[Model], bool] | None:
    """For a model that is an `nn.ModuleList` or `nn.ModuleDict` (no forward of its own, so a
    DistributedDataParallel around it never averages a gradient: training runs its modules), the
    modules it holds, each wrapped before it is stored: those of its literal and those `.append(x)`
    adds (`trainable_list.append(model_s)`); a module built where its append is (a branch) is
    wrapped right before the append. Also whether some it holds were not found (an attribute, a
    call, a container again). None for any other model."""
    stmt = model.defined.body[0] if isinstance(model.defined, cst.SimpleStatementLine) else model.defined
    value = _assigned_value(stmt)
    if not isinstance(value, cst.Call) or facts.qualify(value.func) not in CONTAINERS:
        return None
    ref = facts.ref(_expression(model.name), model.defined)
    first = mt.positional(value, 0)
    literal = first.value if first is not None else None
    items = [(e.value, model.defined) for e in getattr(literal, "elements", ())
             if isinstance(e, (cst.Element, cst.DictElement))]
    items += [(c.args[0].value, facts.statement(c)) for method, c in (facts.filled(ref) if ref is not None else ())
              if method == "append" and len(c.args) == 1]
    found: dict = {}
    missed = not items
    for item, stored in items:
        name = dotted(item)
        located = _locate(facts, name, optimizer) if name is not None and "." not in name else None
        if name is None or located is None:
            missed = True
            continue
        built, at = _built_before(facts, name, stored)
        if isinstance(built, cst.Call) and facts.qualify(built.func) in CONTAINERS:
            missed = True
            continue
        if facts.is_inside(stored, located.defined) or not facts.before(located.anchor, stored):
            # built in the branch that stores it: wrapped where it is built there, else before the store
            located = Model(name, at, at) if at is not None else Model(name, stored, stored, before_anchor=True)
        found.setdefault((located.name, located.defined), located)
    return list(found.values()), missed


def _passed_containers(facts: Facts, model: Model) -> bool:
    """A model a function receives that every caller passes as an `nn.ModuleList` or
    `nn.ModuleDict` (`init(model_s, model_t, nn.ModuleList([connector]), ...)`): no forward to
    wrap, the TODO instead. So too where any caller passes a plain container, a name bound to a
    display or to `dict()`/`list()` and filled by item (kuro, round 31: `nets = dict()`, `nets[n] =
    getattr(module, n)(size)` in a loop, `train(nets[names[0]])` on one branch and `train(nets)` on
    the other): DistributedDataParallel takes no dict, so a wrap where the function receives it
    stops that call's path (`'dict' object has no attribute 'parameters'`)."""
    if not isinstance(model.defined, cst.FunctionDef):
        return False
    passed = [facts.argument_for(c, model.defined, model.param or model.name) for c in facts.call_sites(model.defined)]
    origins = [o for arg in passed if arg is not None for o in facts.origins(arg)]
    whole = [o for arg in passed if arg is not None and not isinstance(arg, cst.Subscript) for o in facts.origins(arg)]
    return bool(origins) and (all(isinstance(o, cst.Call) and facts.qualify(o.func) in CONTAINERS for o in origins)
                              or any(_plain_container(facts, o) for o in whole))  # (an item read, `nets[k]`: its own)


PLAIN_CONTAINERS = frozenset({"dict", "list", "tuple", "collections.OrderedDict", "collections.defaultdict"})


def _plain_container(facts: Facts, value: cst.CSTNode) -> bool:
    """A dict, list or tuple of Python's, never a module: a display or comprehension, or a call of
    `dict`, `list`, `tuple`, `OrderedDict` or `defaultdict`."""
    return isinstance(value, (cst.Dict, cst.List, cst.Tuple, cst.DictComp, cst.ListComp)) or isinstance(
        value, cst.Call) and (facts.qualify(value.func) or dotted(value.func)) in PLAIN_CONTAINERS


def _built_before(facts: Facts, name: str, stmt: cst.CSTNode) -> tuple[cst.BaseExpression | None, cst.CSTNode | None]:
    """The value `name` is last given before `stmt` in the block of `stmt`, and that statement."""
    block = facts.parent(stmt)
    found = [(v, facts.statement(s)) for t, v, s in facts.assigned_names.get(name, ())
             if facts.parent(facts.statement(s)) is block and facts.before(s, stmt)]
    return found[-1] if found else (None, None)


def _maybe_empty(facts: Facts, model: Model) -> str | None:
    """Why `model` may have no parameter at run time, when every class of the program its name is
    built from (`criterion = SplitCrossEntropyLoss(emsize, splits=splits)`) makes its parameters on
    some paths only (`ddpify.analysis.forward.parameters_on_some_paths`); None otherwise."""
    if isinstance(model.defined, cst.FunctionDef):
        return None  # received from callers: what they pass is theirs to tell
    home = facts.ref(_expression(model.name), model.anchor)
    flow = objects.of(facts)
    classes = {c for s in (flow.ref_values(home) if home is not None else ()) if (c := flow.constructs(s)) is not None}
    reasons = [forward.parameters_on_some_paths(facts, c) for c in classes]
    return reasons[0] if reasons and all(reasons) else None


def _maybe_none(facts: Facts, model: Model) -> bool:
    """Does the statement that defines `model` bind its name to None on some path (`if train_gen:
    generator = define_vae(...)` / `else: generator = None`, `g = G() if c else None`)?"""
    if isinstance(model.defined, cst.FunctionDef):
        return False
    return any(facts.is_inside(stmt, model.defined) for stmt in _none_bindings(facts).get(model.name, ()))


def _none_bindings(facts: Facts) -> dict[str, list[cst.CSTNode]]:
    """The statements that may bind each name (`x`, `self.x`) to None (`g = None`, `g = G() if c
    else None`), found in one pass over the assignments (each model asks)."""
    index = facts.__dict__.get("_none_bindings")
    if index is None:
        index = facts.__dict__["_none_bindings"] = defaultdict(list)
        for target, value, stmt in facts.assigns:
            if isinstance(value, cst.IfExp):
                value = value.body if mt.is_name(value.body, "None") else value.orelse
            if mt.is_name(value, "None") and (name := dotted(target)) is not None:
                index[name].append(stmt)
    return index


def _holds_modules_only(facts: Facts, model: Model) -> bool:
    """A plain object of this file that holds the trained modules (`holder.encoder`): no
    nn.Module, so DDP cannot wrap it."""
    classes = model_classes(facts, model)
    return bool(classes) and not any(is_module_class(facts, c) for c in classes)


def model_classes(facts: Facts, model: Model) -> list[cst.ClassDef]:
    """The classes of this file the model may be: built where it is defined (or, through the
    object flow, where what defines it was made: `model = create_model()`, or each class a registry
    may build: `model = config.init_obj('arch', module_arch)`), or passed by every caller of the
    function that receives it. A model bound to `self.x` in a class is none of what a sibling class
    under the same base binds there (`self.model` of each trainer subclass: `_located_in_subclasses`)."""
    if not isinstance(model.defined, cst.FunctionDef):
        built = forward.classes_of(facts, [model.defined])
        home = facts.ref(_expression(model.name), model.anchor)
        flow = objects.of(facts)
        owner = facts.enclosing_class(model.defined)
        sites = [s for s in (flow.ref_values(home) if home is not None else ())
                 if owner is None or (cls := facts.enclosing_class(s)) is None or facts.kin_classes(owner, cls)]
        made = {c for s in sites for c in flow.classes_built(s)}
        return built + sorted(made - set(built), key=lambda c: c.name.value)
    passed = [facts.argument_for(c, model.defined, model.param or model.name) for c in facts.call_sites(model.defined)]
    return forward.classes_of(facts, [o for arg in passed if arg is not None for o in facts.origins(arg)])


def _forwards(facts: Facts, models: Models) -> Iterator[tuple[cst.Call, Model]]:
    """(call, model) for every call of a wrapped model in a loop that trains, or in a function that
    trains (a step method an agent's loop calls: TD3's `update()`, whose `pi_a, _ = self.actor(state)`
    is followed by the actor's backward), outside `no_grad` (DDP expects a gradient for every
    parameter only after a forward that records one)."""
    refs = models.refs
    for call in facts.calls:
        ref = facts.ref(call.func) if dotted(call.func) else None
        model = refs.get(ref) if ref is not None else None
        if model is None or facts.grad_disabled(call):
            continue
        scope = facts.scope(call)
        if any(isinstance(a, (cst.For, cst.While)) and facts.trains(a) for a in facts.ancestors(call)) \
                or isinstance(scope, cst.FunctionDef) and facts.trains(scope):
            yield call, model


def partly_read(facts: Facts, models: Models, model: Model) -> list[tuple[cst.Call, cst.Call | cst.Subscript]]:
    """(forward, pick) for each training forward of `model` whose value, bound to a name, the step reads
    by picking an item of it (`out = self.model(x)`, then `pred = out.get("pred")` or `out["pred"]`): the
    forward may return more than the loss reads (round 30's forecasting notebook: a dict of every
    intermediate result of the encoder and decoder, `pred` alone read; decision 0261). DDP that finds
    unused parameters takes every parameter those outputs were computed from for used, and waits for
    its gradient."""
    found: list[tuple[cst.Call, cst.Call | cst.Subscript]] = []
    for call, held in _forwards(facts, models):
        if held is not model and held not in model.rebuilds:
            continue
        assign = facts.parent(call)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        ref = facts.ref(assign.targets[0].target, assign)
        scope = facts.scope(call)
        if ref is None:
            continue
        for name in facts.names:
            if name.value != ref.name or facts.scope(name) is not scope or not facts.before(call, name) \
                    or facts.ref(name) != ref:
                continue
            parent = facts.parent(name)
            if isinstance(parent, cst.Subscript) and parent.value is name and len(parent.slice) == 1 \
                    and isinstance(parent.slice[0].slice, cst.Index) and mt.string_value(parent.slice[0].slice.value):
                found.append((call, parent))
                break
            picked = parent.attr.value if isinstance(parent, cst.Attribute) and parent.value is name else None
            grand = facts.parent(parent) if picked == "get" and parent is not None else None
            if isinstance(grand, cst.Call) and grand.func is parent and grand.args and mt.string_value(grand.args[0].value):
                found.append((call, grand))
                break
    return found


def _leaves_outputs_unread(facts: Facts, call: cst.Call, model: Model) -> bool:
    """`validity, _, _ = netD(x)`, `out, aux = model(x)` with `aux` never read, `model(x)[0]`:
    the parameters behind the other outputs get no gradient in that step. Where the model's
    class is in this file, only outputs that are heads of their own count (an RNN's discarded
    hidden state is no head, nor a logits output the returned loss is computed from); where it is
    not, only an unpacking into three or more names counts."""
    parent = facts.parent(call)
    classes = model_classes(facts, model)
    heads = forward.heads(facts, classes[0]) if len(classes) == 1 else None
    keys = forward.dict_heads(facts, classes[0]) if len(classes) == 1 else set()
    if isinstance(parent, cst.Subscript) and parent.value is call:
        return bool(keys - _keys_read([parent])) if keys else heads is None or len(heads) > 1
    if not (isinstance(parent, cst.Assign) and parent.value is call):
        return False
    scope = facts.scope(call)
    bound = parent.targets[0].target if len(parent.targets) == 1 else None
    if keys and isinstance(bound, cst.Name):  # `out = model(x)`, then `out["logits"]` only: "aux" unread
        reads = [r for r in facts.references(scope, bound.value) if r is not bound]
        items = [facts.parent(r) for r in reads]
        if reads and all(isinstance(i, cst.Subscript) and i.value is r for i, r in zip(items, reads)):
            return bool(keys - _keys_read(items))
    for target in parent.targets:
        if heads is None and isinstance(target.target, (cst.Tuple, cst.List)) and len(target.target.elements) < 3:
            continue  # `_, loss = model(x, y)`, `out, _ = rnn(x)`: too common to mean a head, unseen
        if isinstance(target.target, (cst.Tuple, cst.List)):
            for i, element in enumerate(target.target.elements):
                name = element.value
                unread = isinstance(name, cst.Name) and (
                    name.value.startswith("_") or len(facts.references(scope, name.value)) == 1)
                if unread and (heads is None or i in heads):
                    return True
    return False


def _keys_read(items: list) -> set[str]:
    """The literal string keys of the subscripts `items` (`out["logits"]` -> {"logits"})."""
    keys = set()
    for item in items:
        index = item.slice[0].slice if len(item.slice) == 1 and isinstance(item.slice[0].slice, cst.Index) else None
        if index is not None and isinstance(index.value, cst.SimpleString) and isinstance(index.value.evaluated_value, str):
            keys.add(index.value.evaluated_value)
    return keys


def _trained_names(facts: Facts, untraced: list[cst.CSTNode], skip: frozenset[cst.CSTNode] = frozenset()
                   ) -> list[tuple[str, cst.CSTNode, bool, cst.CSTNode]]:
    """(last name component of each trained model, what trains it, whether only some of its
    sub-modules are trained, where that name is read: the optimizer, or the statement that names
    the parameters where they are not the optimizer's to name), in source order; not the optimizers
    in `skip` (their model is found already)."""
    found: list[tuple[str | None, cst.CSTNode, bool, cst.CSTNode]] = []
    for opt in facts.optimizers:
        if opt in skip:
            continue
        if mt.is_optimizer_factory(opt.func) and isinstance(opt.func, cst.Attribute):  # `model.configure_optimizers(...)`
            found.append((_owner(opt.func.value), opt, False, opt))
            continue
        if _built_by_a_factory_call(facts, opt):
            continue
        calls = parameter_calls(facts, opt)
        owners: dict[tuple[str, cst.CSTNode], list[bool]] = {}
        several = _read_in_several_classes(facts, calls, opt)
        for call in calls:
            receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
            whole, of_part = _looped_submodule(facts, receiver)
            receiver = whole if whole is not None else receiver  # `m` of `for mn, m in self.named_modules():`
            if receiver is not None and mt.is_name(receiver, "self"):  # `self.optimizer = Adam(self.parameters())` in a model's own method
                for name, stmt in _instances(facts, facts.enclosing_class(call), opt):
                    owners.setdefault((name, stmt), []).append(of_part)
                continue
            if receiver is not None and _holds_a_model(facts, receiver):
                continue  # `args.model`: found by the object it steps (`_bound_once`), not by `args`
            if receiver is not None and (owner := _owner(receiver)):
                aliased = _aliased_owner(facts, receiver)
                of, part = aliased or (owner, False)
                at = facts.statement(call) if aliased or _stored_elsewhere(facts, call, opt) or of in several else opt
                owners.setdefault((of, at), []).append(part or of_part or _is_submodule(receiver))
        if not owners or any(_loop_variable(facts, o, opt) for o, _ in owners):
            untraced.append(opt)  # `{k: Adam(net.parameters()) for k, net in nets.items()}`: an item of what it
            continue  # loops over (`_found_as_items`), not a `self.net` of some class
        found += [(o, opt, all(subs), at) for (o, at), subs in owners.items()]
    if not facts.optimizers:  # plain SGD by hand: `for p in model.parameters(): p.data.add_(p.grad, ...)`
        for loop in facts.loops:
            if isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Attribute) \
                    and mt.is_parameters_attr(loop.iter.func) \
                    and facts.findall(loop.body, cst.Attribute, lambda a: a.attr.value == "grad") \
                    and _owner(loop.iter.func.value):
                found.append((_owner(loop.iter.func.value), loop, False, loop))
    return [(owner, node, partial, at) for owner, node, partial, at in found if owner]


def _built_by_a_factory_call(facts: Facts, optimizer: cst.CSTNode) -> bool:
    """Is `optimizer` built over `self`'s parameters in the method a `model.configure_optimizers(...)`
    call of the program runs (the method of that name)? That call is the optimizer the program keeps, and names the model
    (`_trained_names`); the one inside, over `self.parameters()`, named the same model again by each
    of its instances: before, a GPT built in both branches of `if resume:` was wrapped in each branch
    and again after them, a wrapper in a wrapper (nanoGPT's `configure_optimizers`); now once, after
    the `if`, where the call names it."""
    method = facts.scope(optimizer)
    calls = parameter_calls(facts, optimizer) if isinstance(optimizer, cst.Call) else []
    if not isinstance(method, cst.FunctionDef) or facts.enclosing_class(optimizer) is None or not calls \
            or not all(isinstance(c.func, cst.Attribute) and mt.is_name(c.func.value, "self") for c in calls):
        return False  # a trainer's `configure_optimizers` over `self.model.parameters()` names its model itself
    return any(o is not optimizer and mt.is_optimizer_factory(o.func) and isinstance(o.func, cst.Attribute)
               and o.func.attr.value == method.name.value  # by the method's name, as the call is found: a `model`
               for o in facts.optimizers if isinstance(o, cst.Call))  # `torch.compile` rebinds resolves to no class


def _trains_itself(facts: Facts, optimizer: cst.CSTNode) -> Model | None:
    """A module that trains itself in a method of its own: the method (not `__init__`) builds the
    optimizer over `self.parameters()` and runs the forward and a backward (`_steps_itself`), and
    the program calls it on an object it makes (`_called_on`: `method.run()` -> `self.train(X, y)`),
    a course's `method` class or a Keras-like `fit`:

        def train_model(self, X, y):                 def train_model(self, X, y):
            self._build_model()                          self._build_model()
            opt = Adam(self.parameters())       ->       opt = Adam(sync_gradients(self).parameters())
            ... self.forward(x) ... backward()           ... self.forward(x) ... backward()

    Synced where the optimizer takes it, no wrapper (DDP's forward never runs; the object's own
    methods stay callable): every layer it has built by then is hooked, layers the method builds
    first too (a vocabulary's embedding, made once the data is seen), on whichever object runs it,
    whatever names the program binds it to. None for any other optimizer."""
    calls = parameter_calls(facts, optimizer) if isinstance(optimizer, cst.Call) else []
    receiver = calls[0].func.value if len(calls) == 1 and isinstance(calls[0].func, cst.Attribute) else None
    method, cls = facts.scope(optimizer), facts.enclosing_class(optimizer)
    if not isinstance(receiver, cst.Name) or receiver.value != "self" or cls is None \
            or not isinstance(method, cst.FunctionDef) or method.name.value == "__init__" or not is_module_class(facts, cls) \
            or facts.enclosing_class(calls[0]) is not cls or not _steps_itself(facts, method) \
            or not _called_on(facts, method, set()):
        return None
    stmt = facts.statement(optimizer)
    model = Model("self", stmt, stmt, before_anchor=True, synced=f"{cls.name.value}.{method.name.value}", item=True,
                  inline=receiver)
    model.optimizers.append(optimizer)
    return model


def _instances(facts: Facts, cls: cst.ClassDef | None, optimizer: cst.Call) -> list[tuple[str, cst.CSTNode]]:
    """For a module class whose own method builds `optimizer` over `self.parameters()` (in `cls` or
    its kin): (the last name, the statement) of each name the program binds to an instance of it
    (or of a subclass) where it is made, `net = Net(lr)`, `q1, q2 = Net(lr), Net(lr)` (or a helper's
    returned tuple), `model = build(args)` whose value comes
    through a factory, and on which that method runs (`__init__`: every instance; another method:
    an instance the program calls it on, `feature_extractor.train_discriminatively(...)`). Not a
    factory's own local it returns (`model = Net().to(device)`, `return model`), whose caller's
    name is the one bound, nor an alias (`m = net`). Empty for any other class, and where the
    optimizer is built outside the class (a `self.parameters()` its arguments reach through a
    model's own helper is no sign of whose parameters it steps). Where the method keeps the
    optimizer as `self.<attr>` and the program steps it through instances it names
    (`self.policy_net.optimizer.step()`), only those instances train (`_stepped_on`): a DQN's
    target network, another instance of the class whose own optimizer is never stepped, is no
    model to wrap."""
    method, built_in = facts.scope(optimizer), facts.enclosing_class(optimizer)
    if cls is None or built_in is None or not isinstance(method, cst.FunctionDef) \
            or not facts.kin_classes(cls, built_in) or not is_module_class(facts, cls):
        return []
    flow = objects.of(facts)
    called = None if method.name.value == "__init__" else _called_on(facts, method, set())
    stepped = _stepped_on(facts, optimizer)
    if stepped is not None:
        called = stepped if called is None else called & stepped
    found = []
    for target, value, stmt in [*facts.assigns, *_unpacked_elements(facts)]:
        name = dotted(target)
        if name is None or isinstance(stmt, cst.AugAssign) or not isinstance(value, cst.Call) or \
                name.count(".") > (1 if name.startswith("self.") else 0):
            continue
        made = flow.values(value)
        if not any(cls in facts._lineage(c) for site in made for c in flow.classes_built(site)) \
                or called is not None and not made & called:
            continue
        func = facts.scope(stmt)
        if isinstance(func, cst.FunctionDef) and any(mt.is_name(r, name) for r in facts.returned(func)):
            continue
        found.append((name.split(".")[-1], stmt))
    return found


def _stepped_on(facts: Facts, optimizer: cst.Call) -> Sites | None:
    """For an optimizer a module's method keeps as `self.<attr>` (`self.optimizer = Adam(self.
    parameters())` in `__init__`): the instances the program steps it on, where every `.step()`
    of it is reached through an instance it names (`self.policy_net.optimizer.step()`: the objects
    `self.policy_net` holds; `self.optimizer.step()` in a method: the objects that method is called
    on). None (every instance may train) where it is kept otherwise, never stepped where ddpify
    sees, or stepped through another name (`opt = net.optimizer; opt.step()`)."""
    flow = objects.of(facts)
    kept = [dotted(t) or "" for t, v, _ in facts.assigns if v is optimizer]
    if len(kept) != 1 or not kept[0].startswith("self.") or kept[0].count(".") != 1:
        return None
    attr, site = kept[0].split(".")[1], Sites([optimizer])
    found: Sites = Sites()
    steps = [c.func.value for c in facts.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == "step"
             and flow.values(c.func.value) & site]
    for held in steps:
        if not (isinstance(held, cst.Attribute) and held.attr.value == attr and dotted(held.value)):
            return None
        method = facts.scope(held)
        if mt.is_name(held.value, "self"):
            if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
                return None
            on = _called_on(facts, method, set())
        else:
            on = flow.values(held.value)
        if not on:
            return None
        found |= on
    return found or None


def _called_on(facts: Facts, method: cst.FunctionDef, seen: set[cst.FunctionDef]) -> Sites:
    """The objects the program calls `method` on (a method of a class, by its name): each receiver
    of `x.method(...)`; a call on `self` in a method of the class or its kin (`self.train(X, y)` in
    the model's own `run()`) is on the objects that method is called on, followed up the chain
    (`setting.method.run()`), and one in `__init__` on every instance built of that class."""
    if method in seen:
        return Sites()
    seen.add(method)
    flow, cls = objects.of(facts), facts.enclosing_class(method)
    found: Sites = Sites()
    for call in facts.calls:
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value != method.name.value or not dotted(call.func.value):
            continue
        caller, caller_class = facts.scope(call), facts.enclosing_class(call)
        if not mt.is_name(call.func.value, "self"):
            found |= flow.values(call.func.value)
        elif isinstance(caller, cst.FunctionDef) and cls is not None and caller_class is not None \
                and facts.kin_classes(caller_class, cls):
            found |= Sites(c for c in facts.calls if (built := flow.constructs(c)) is not None
                           and facts.kin_classes(built, caller_class)) if caller.name.value == "__init__" \
                else _called_on(facts, caller, seen)
    return found


def _unpacked_elements(facts: Facts) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]:
    """(name, element, statement) for each name or `self.x` bound by unpacking, and each element
    it may be given: `q1, q2 = QNet(lr), QNet(lr)`, or `self.q1, self.q2 = make_critics()` whose
    function returns such a tuple."""
    for target, _, stmt in facts.assigns:
        if isinstance(target, (cst.Tuple, cst.List)) and not isinstance(stmt, cst.AugAssign):
            for part, _ in unpacking_paths(target):
                ref = facts.ref(part, stmt)
                for value in facts.unpacked_elements(ref) if ref is not None else ():
                    yield part, value, stmt


def _read_in_several_classes(facts: Facts, calls: list[cst.Call], optimizer: cst.Call) -> set[str]:
    """The owners (`online_network` of `self.online_network.parameters()`) whose parameters reach
    `optimizer`, built in a helper (`get_optimizer(cfg, params=...)`), from the methods of several
    classes, an attribute the program never names bare: each class's attribute is a model of its
    own, found where it is read. Keyed by the name alone, one class's was wrapped and the others'
    trained bare on every process (decision 0214: a library's BYOL, ReLIC and SimSiam classes each
    hand `self.online_network.parameters()` to one `train_utils.get_optimizer`; only ReLIC's was
    wrapped). A name also bound bare (`encoder = NETWORKS[arch]`, `model = ALGORITHMS[algo](...)`)
    is left to the name's search, as before."""
    classes: dict[str, set[cst.ClassDef]] = {}
    for call in calls:
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        owner = _owner(receiver) if isinstance(receiver, cst.Attribute) and mt.is_name(receiver.value, "self") else None
        cls = facts.enclosing_class(call)
        if owner and cls is not None and facts.scope(call) is not facts.scope(optimizer):
            classes.setdefault(owner, set()).add(cls)
    several = {owner for owner, found in classes.items() if len(found) > 1}
    if several:
        bare = {n.value for n in facts.names if n.value in several and not (
            isinstance(parent := facts.parent(n), cst.Attribute) and parent.attr is n)}
        several -= bare
    return several


def _stored_elsewhere(facts: Facts, call: cst.Call, optimizer: cst.Call) -> bool:
    """Is `call` (`model.parameters()`) reached by `optimizer` only through an attribute stored on
    an object in another function (`model.optim_list = [...]` where the model is set up, then
    `Adam(model.optim_list)` in the training function)? Its names belong to where it is written."""
    return call in objects.of(facts).stored_parameters and facts.scope(call) is not facts.scope(optimizer)


# the methods of a module that iterate its sub-modules: (method, whether the module's own parameters are left out)
SUBMODULE_LOOPS = {"modules": False, "named_modules": False, "children": True, "named_children": True}


def _looped_submodule(facts: Facts, receiver: cst.BaseExpression | None) -> tuple[cst.BaseExpression | None, bool]:
    """For a receiver that is a name bound only by loops over a module's sub-modules (`m` of `for mn,
    m in self.named_modules():`, minGPT's `configure_optimizers` naming the parameters to decay by
    `m.named_parameters()`): that module (`self`), and whether its parameters are only some of the
    module's (`children()` leaves its own out; `modules()` yields the module itself too). (None,
    False) for any other receiver: the name is not a model of its own, whatever else the program
    binds to the same name elsewhere."""
    if not isinstance(receiver, cst.Name) or (ref := facts.ref(receiver)) is None or facts.writes(ref):
        return None, False
    found: list[tuple[cst.BaseExpression, bool]] = []
    for loop in facts.loops_binding(ref):
        iterated, target = loop.iter, loop.target
        if not (isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute)
                and iterated.func.attr.value in SUBMODULE_LOOPS):
            return None, False
        last = target.elements[-1].value if isinstance(target, (cst.Tuple, cst.List)) and target.elements else target
        if not mt.is_name(last, receiver.value):
            return None, False
        found.append((iterated.func.value, SUBMODULE_LOOPS[iterated.func.attr.value]))
    wholes = {dotted(whole) for whole, _ in found}
    if not found or len(wholes) != 1 or None in wholes:
        return None, False
    return found[0][0], any(part for _, part in found)


def _aliased_owner(facts: Facts, receiver: cst.BaseExpression) -> tuple[str, bool] | None:
    """For a receiver that is a plain name every binding of which, in its function, gives an object
    another name holds or one of its parts (`model_to_set = getattr(model, f"context{i}") if
    separate else model`): that name (`model`, the model that is built and trained) and whether some
    binding gives a part. None for any other receiver: a name with a binding that builds, loads or
    calls something, or whose bindings name two objects; and a plain alias (`model = net`, the
    name the training reads then is the one wrapped: `_trained_alias`)."""
    if not isinstance(receiver, cst.Name) or (ref := facts.ref(receiver)) is None:
        return None
    writes = facts.writes(ref)
    owners = [_branch_owners(value) for _, value, stmt in writes if not isinstance(stmt, cst.AugAssign)]
    if not writes or len(owners) < len(writes) or any(o is None for o in owners) \
            or all(isinstance(value, cst.Name) for _, value, _ in writes):
        return None
    names = {name for found in owners for name, _ in found or ()}
    if len(names) != 1 or receiver.value in names:
        return None
    return names.pop(), any(part for found in owners for _, part in found or ())


def _branch_owners(value: cst.BaseExpression) -> list[tuple[str, bool]] | None:
    """(name, whether a part of it) for each branch of `a if c else getattr(a, n)` (`a`, `a.sub`,
    `getattr(a, n)`, through nested conditionals and `or`); None where a branch is anything else."""
    if isinstance(value, cst.IfExp):
        body, orelse = _branch_owners(value.body), _branch_owners(value.orelse)
        return None if body is None or orelse is None else body + orelse
    if isinstance(value, cst.BooleanOperation):
        left, right = _branch_owners(value.left), _branch_owners(value.right)
        return None if left is None or right is None else left + right
    if isinstance(value, cst.Call) and mt.is_name(value.func, "getattr") and len(value.args) >= 2:
        held = _branch_owners(value.args[0].value)
        return None if held is None else [(name, True) for name, _ in held]
    name = dotted(value)
    if name is None or name.startswith("self."):
        return None
    return [(name.split(".")[0], "." in name)]


def _holds_a_model(facts: Facts, receiver: cst.BaseExpression) -> bool:
    """Is `receiver` (`args.model`, `setup.net.encoder`, `self.ema.model`) a model kept on an object
    that is none (an argparse namespace, a dataclass or another plain class of the program: every
    object its first name, or `self.` attribute, may hold is known and no model) rather than a part
    of a model (`model.fc`)? Wrapping that first name would wrap the holder."""
    head = receiver
    while isinstance(head, (cst.Attribute, cst.Subscript)) and not _of_self(head):  # `args.model`, `state["model"]`
        head = head.value
    if head is receiver or not isinstance(head, (cst.Name, cst.Attribute)) or mt.is_name(head, "self"):
        return False
    flow = objects.of(facts)
    held = flow.values(head)
    return bool(held) and not any(flow.kind(s) == objects.MODEL or builds_module(facts, s) and not _of_a_plain_class(facts, s)
                                  for s in held) \
        and any(flow.kind(s) == objects.MODEL or builds_module(facts, s) for s in flow.values(receiver))


def _of_self(expr: cst.BaseExpression) -> bool:
    """`self.ema`: an attribute of `self`, the first name of what it holds (`self.ema.model`)."""
    return isinstance(expr, cst.Attribute) and mt.is_name(expr.value, "self")


def _of_a_plain_class(facts: Facts, site: cst.BaseExpression) -> bool:
    """Is `site` an instance of a class of the program that is no module (`EMA(net)`, `Trainer(Net(), cfg)`:
    no base, or `object`), a holder of models rather than one?"""
    built = _built(site)
    cls = facts.classes.get(built.func.value) if isinstance(built, cst.Call) and isinstance(built.func, cst.Name) else None
    return cls is not None and not is_module_class(facts, cls)


def _is_submodule(receiver: cst.BaseExpression) -> bool:
    """`model.fc` (a part of `model`) rather than `model` or `self.model` itself."""
    parts = (dotted(receiver) or "").split(".")
    return len(parts) > (2 if parts[0] == "self" else 1)


def parameter_calls(facts: Facts, opt: cst.Call) -> list[cst.Call]:
    """The `x.parameters()` calls `opt` is given, through derived iterables (ddpify.analysis.objects)."""
    return objects.of(facts).parameter_calls(opt)


def _owner(expr: cst.BaseExpression) -> str | None:
    """`model.fc` -> "model"; `self.model.head` -> "model"; `self.netG` -> "netG"."""
    name = dotted(expr)
    if name is None:
        return None
    parts = name.split(".")
    if parts[0] == "self":
        return parts[1] if len(parts) > 1 else None
    return parts[0]


# where a trained model may be built: (3 for a DataParallel wrap, 2 a move to a device, 1 a
# construction; the statement; the name; the DataParallel call)
Candidate = tuple[int, cst.CSTNode, str, cst.Call | None]


def _locate(facts: Facts, key: str, optimizer: cst.CSTNode, read: set[Ref] | None = None) -> Model | None:
    """Where the model named `key` that `optimizer` trains is built; the optimizer's own
    function first (two `main_*()` functions may each build a `model`). `read`: the names whose
    parameters it steps, where the optimizer does not name them itself."""
    return _pick(facts, _candidates(facts, key, optimizer, read), optimizer)


def _located_in_subclasses(facts: Facts, key: str, optimizer: cst.CSTNode, read: set[Ref] | None) -> list[Model]:
    """`self.model`, stepped by an optimizer a base class's method builds (`optim_class(self.model.
    parameters(), lr=lr)` in `BaseTrainer.setup_train()`), where only its subclasses bind it, two or
    more of them each in a method of its own (`self.model = self.cls(cfg).to(dev)` in one trainer's
    `setup_model()`, `self.model = STMetaNet(cfg)` in another's): whichever subclass runs, the
    optimizer trains the model that subclass built, so each is wrapped where its subclass builds it
    (one of them picked, the others trained bare on each process's shard). [] otherwise: a binding
    in the optimizer's class or a base of it, in one class only, or in a subclass of another that binds
    it (`self.model = self.model.to(dev)` after the base's `__init__` built it: one object), is `_locate`'s."""
    cls = facts.enclosing_class(optimizer)
    candidates = _candidates(facts, key, optimizer, read) if cls is not None else []
    owners = list(dict.fromkeys(facts.enclosing_class(c[1]) for c in candidates))
    classes = [o for o in owners if o is not None and o is not cls and cls in facts.lineage(o)]
    if len(classes) < 2 or len(classes) < len(owners) or not all(c[2].startswith("self.") for c in candidates) \
            or any(facts.kin_classes(a, b) for a, b in itertools.combinations(classes, 2)):
        return []
    found = [_pick(facts, [c for c in candidates if facts.enclosing_class(c[1]) is o], optimizer) for o in owners]
    return [m for m in found if m is not None]


def _candidates(facts: Facts, key: str, optimizer: cst.CSTNode, read: set[Ref] | None) -> list[Candidate]:
    """The bindings of `key` that may build the model `optimizer` trains, as `_locate` weighs them."""
    candidates: list[Candidate] = []
    unpacked = objects.of(facts).unpacked_names.get(key, ())  # `self.G, self.D = build_models(cfg)`
    for target, value, stmt in [*facts.assigned_names.get(key, ()), *unpacked]:
        name = dotted(target)
        if name is None or name.count(".") == 1 and not name.startswith("self."):
            continue
        branches = _branch_calls(value)
        if facts.instantiated(value, name) and not isinstance(stmt, cst.AugAssign):
            # `self.model = self.model(n).cuda() if cuda else self.model(n)`: the class it held (a registry's), built
            candidates.append((2 if any(mt.is_device_move(b) for b in branches or [value]) else 1, stmt, name, None))
            continue
        if branches is not None and len(branches) > 1 and not isinstance(stmt, cst.AugAssign):
            # `model = Net().cuda() if use_cuda else Net()`: a construction (or a move) on every path
            if not any(_dataparallel_call(facts, b) or _mentions(facts, b, name) for b in branches):
                candidates.append((2 if any(mt.is_device_move(b) for b in branches) else 1, stmt, name, None))
            continue
        if not isinstance(value, cst.Call) or isinstance(stmt, cst.AugAssign):
            if _trained_alias(facts, stmt, alias=name) or _picked_built_module(facts, value, stmt):
                candidates.append((1, stmt, name, None))  # `model = embedding_net`, and the training reads `model`
            continue
        qualified = facts.qualify(value.func)
        dataparallel = _dataparallel_call(facts, value)
        if dataparallel is not None:
            candidates.append((3, stmt, name, dataparallel))
        elif mt.is_device_move(value):
            candidates.append((2, stmt, name, None))
        elif (not _mentions(facts, value, name) or _names_its_import(facts, value, name, stmt)) and \
                qualified != "torch.compile":
            candidates.append((1, stmt, name, None))
    built = {c[2] for c in candidates if facts.instantiated(_assigned_value(mt.sole(c[1], cst.Assign) or c[1]), c[2])}
    # a name that holds a class first (`self.model = self._build_model()`, a registry's) and is then rebound to its instance
    candidates = [c for c in candidates if c[2] not in built
                  or facts.instantiated(_assigned_value(mt.sole(c[1], cst.Assign) or c[1]), c[2])]
    exact = [c for c in candidates if c[1] is optimizer]  # the instance bound here (`_instances`), not another binding
    candidates = exact or candidates
    trained = read if read is not None else _trained_refs(facts, key, optimizer) if isinstance(optimizer, cst.Call) else set()
    flow = objects.of(facts)
    # an attrs field's `@net.default` method of the optimizer's class: the `net` it returns (not another class's)
    trained = trained | frozenset().union(*(flow.names_through(v) for r in trained for v in field_defaults(facts, r)))
    own = [c for c in candidates if (ref := facts.ref(_expression(c[2]), c[1])) is not None and ref in trained
           or trained & flow.names_through(_assigned_value(c[1]))]  # `self.model = model.to(gpu)`
    candidates = own or candidates  # `self.model = build_model()` it steps, not a `model` a helper loads
    cls = facts.enclosing_class(optimizer)
    if cls is not None:  # DANN's `self.classifier = Classifier(...)`, not a sibling algorithm's `nn.Linear(...).cuda()`
        candidates = [c for c in candidates if (built_in := facts.enclosing_class(c[1])) is None
                      or not c[2].startswith("self.") or facts.kin_classes(cls, built_in)] or candidates
    return candidates


def _picked_built_module(facts: Facts, value: cst.BaseExpression, stmt: cst.CSTNode) -> bool:
    """Is `value` an item, picked by a key known at run time, of a container whose every item is a
    module of the program built there (`self.model = self.model_dic[self.model_name]` after
    `self.model_dic = {'AlexNet': AlexNet(), 'ResNet18': ResNet18(), ...}`)? The name bound to it
    holds one module object, whichever key picks it: the model, wrapped there like a construction.
    Before, the optimizer over `self.model.parameters()` found no model (a TODO), and the loader
    and the model were both left whole. Not an item of a container of anything else (a tensor, a
    class, a module the program did not build), nor a plain augmented assignment."""
    if not isinstance(value, cst.Subscript) or isinstance(stmt, cst.AugAssign) or not dotted(value.value):
        return False
    sites = [s for s in objects.of(facts).values(value) if not isinstance(s, objects.CONTAINERS)]
    classes = [objects.of(facts).classes_built(s) for s in sites]
    return bool(sites) and all(len(c) == 1 and is_module_class(facts, c[0]) for c in classes)


def _pick(facts: Facts, candidates: list[Candidate], optimizer: cst.CSTNode) -> Model | None:
    """The binding among `candidates` that builds the model `optimizer` trains, as `_locate` picks it."""
    rebuilt = _this_round(facts, candidates, optimizer)
    candidates = rebuilt or [c for c in candidates if not _after_training(facts, c[1])]
    candidates = _reaching(facts, candidates, optimizer)
    candidates = _handed_to_its_class(facts, candidates, optimizer)
    by_object = _dataparallel_of_object(facts, optimizer) if not any(c[0] == 3 for c in candidates) else []
    candidates += by_object  # no DataParallel of the name: the program's own of the object, if any
    if not candidates:
        return None
    candidates = _received_elsewhere(facts, candidates, optimizer)
    best = max(c[0] for c in candidates)  # DataParallel > a move to a device > a construction
    near = [c for c in candidates if facts.scope(c[1]) is facts.scope(optimizer) and c[0] == best]
    if not near:  # built where the optimizer's helper is called (`self.model = build(...)` then
        # `self.optimizer = optimizer_builder.build(cfg, self.model.parameters())`), not where it is built again
        callers = _calling_scopes(facts, optimizer)
        near = [c for c in candidates if facts.scope(c[1]) in callers and c[0] == best]
    candidates = near or candidates
    return _model_at(facts, [c for c in candidates if c[0] == best][-1], optimizer, by_object)


def _handed_to_its_class(facts: Facts, candidates: list[Candidate], optimizer: cst.CSTNode) -> list[Candidate]:
    """Of the bindings of a name in a function that builds several objects by it, those whose
    object the function hands to the class (or a subclass) whose method builds the optimizer,
    before the name is bound again (`model = Net(); pinn = Helmholtz2DPINN(params, model)` in one
    branch, `model = Net(); train_supervised(model, ...)` in another: the optimizer of
    `GeneralPINN.__train_model_LBFGS` steps `self.model`, the object of the first). All of them
    where none is handed so (the class is made elsewhere)."""
    cls = facts.enclosing_class(optimizer)
    if cls is None or len(candidates) < 2:
        return candidates

    def handed(candidate: Candidate) -> bool:
        _, stmt, name, _ = candidate
        if "." in name:
            return False
        for following in facts.following(facts.statement(stmt)):
            for call in facts.calls_in(following):
                built = facts.constructed_class(call)
                if built is not None and cls in facts.lineage(built) and any(
                        dotted(a.value) == name for a in call.args):
                    return True
            if any(dotted(t) == name and facts.is_inside(at, following) for t, _, at in facts.assigns):
                return False
        return False

    return [c for c in candidates if handed(c)] or candidates


def _received_elsewhere(facts: Facts, candidates: list[Candidate], optimizer: cst.CSTNode) -> list[Candidate]:
    """Without the moves of a model two or more classes receive (`self.model = model.to(device)` in
    a DDPM trainer's `__init__` and in a flow-matching trainer's, the script building one of them by
    its `--method`), where the optimizer's own function builds the model they receive: each class's
    move is of that one object, and a wrap at one of them left the other trainer's model bare; the
    wrap where it is built serves whichever trainer runs."""
    moves = [c for c in candidates if c[0] == 2 and _moves_a_parameter(facts, c[1])]
    if len({facts.enclosing_class(c[1]) for c in moves}) < 2:
        return candidates
    own = [c for c in candidates if c not in moves and facts.scope(c[1]) is facts.scope(optimizer)]
    return own or candidates


def _moves_a_parameter(facts: Facts, stmt: cst.CSTNode) -> bool:
    """`self.model = model.to(device)` where `model` is a parameter of the function around it."""
    value = _assigned_value(stmt)
    func = facts.scope(stmt)
    return isinstance(value, cst.Call) and mt.is_device_move(value) and isinstance(value.func, cst.Attribute) \
        and isinstance(value.func.value, cst.Name) and isinstance(func, cst.FunctionDef) \
        and value.func.value.value in param_names(func)


def _calling_scopes(facts: Facts, node: cst.CSTNode, depth: int = 2) -> set[cst.CSTNode]:
    """The functions that call the one holding `node`, and theirs, up to `depth` levels."""
    found: set[cst.CSTNode] = set()
    scopes = {facts.scope(node)}
    for _ in range(depth):
        scopes = {facts.scope(site) for func in scopes if isinstance(func, cst.FunctionDef)
                  for site in facts.call_sites(func)} - found
        found |= scopes
    return found


def _model_at(facts: Facts, chosen: Candidate, optimizer: cst.CSTNode, by_object: list[Candidate]) -> Model:
    """The model wrapped at the candidate `chosen`, after its set-up."""
    _, stmt, name, dp = chosen
    # the program's own DataParallel of the object: on every path that binds the object to its name
    defined = _unconditional(facts, facts.statement(stmt), optimizer, bound=name if chosen in by_object else None,
                             name=name)
    lazy = any(forward.lazy_layers(facts, cls) for cls in forward.classes_of(facts, [defined])) or any(
        _lazy_call(facts, c) for c in facts.calls_in(defined))  # (`model = nn.LazyLinear(1)` too)
    setup, anchor = _setup_after(facts, defined, name, lazy)
    alias = next((s for s in setup if _trained_alias(facts, s, of=name)), None)
    pair = _alias_of(alias) if alias is not None and dp is None else None
    if alias is not None and pair is not None:  # `model = net` in the set-up, and the training reads `model`
        name, defined = pair[0], _unconditional(facts, alias)
        setup, anchor = _setup_after(facts, defined, name, lazy)
    return Model(name, defined, anchor, dataparallel=dp, setup=setup)


def _dataparallel_of_object(facts: Facts, optimizer: cst.CSTNode) -> list[Candidate]:
    """The program's own `x = nn.DataParallel(x)` wraps of the object `optimizer` steps, found by
    the object (`objects.trained`), not by the optimizer's name: `DISCRIMINATOR = Net()` and
    `DIS_OPTIMIZER = Adam(DISCRIMINATOR.parameters())` in a config class, moved into a trainer as
    `self.discriminator = config.DISCRIMINATOR.to(device)` and wrapped there after the group is
    joined, `self.discriminator = nn.DataParallel(self.discriminator)` (pettod/pytorch-template).
    That wrap is the place for DDP; the name alone found the construction in the config class, and
    the DataParallel later wrapped the DDP wrapper. Only a DataParallel of this optimizer's objects
    alone, and not a factory's (`net = nn.DataParallel(net)`, `return net`: its callers' names are
    the places, found by name)."""
    if not isinstance(optimizer, cst.Call):
        return []
    flow = objects.of(facts)
    trained = flow.trained(optimizer)
    found: list[Candidate] = []
    for stmt, name, dp, inner in _dataparallel_wraps(facts) if trained else ():
        # (`self.d = nn.DataParallel(self.d)`: the name holds the wrapper after; an item: its list too)
        held = Sites(s for s in flow.values(inner.value) if s is not dp and not isinstance(s, objects.CONTAINERS))
        scope = facts.scope(stmt)
        factory = isinstance(scope, cst.FunctionDef) and any(dotted(r) == name for r in facts.returned(scope))
        if held and held <= trained and not factory:
            found.append((3, stmt, name, dp))
    return found


def _dataparallel_wraps(facts: Facts) -> list[tuple[cst.CSTNode, str, cst.Call, cst.Arg]]:
    """(statement, name, the DataParallel call, its module argument) for each `x = nn.DataParallel(x)`
    of the program (`self.x = ...`, an item of a list: `nets[i] = ...`), in source order, found in
    one pass over the assignments (each optimizer asks)."""
    found = facts.__dict__.get("_dataparallel_wraps")
    if found is None:
        found = facts.__dict__["_dataparallel_wraps"] = []
        for target, value, stmt in facts.assigns:
            name = dotted(target) or (facts.code(target) if isinstance(target, cst.Subscript) and dotted(target.value)
                                      and _same_item(facts, target, value) else None)
            dp = _dataparallel_call(facts, value) if isinstance(value, cst.Call) and not isinstance(stmt, cst.AugAssign) \
                else None
            inner = (mt.positional(dp, 0) or mt.keyword(dp, "module")) if dp is not None else None
            if inner is not None and name is not None and name.count(".") <= (1 if name.startswith("self.") else 0):
                found.append((stmt, name, dp, inner))
    return found


def _found_by_object(facts: Facts, wrapped: list[Model], untraced: list[cst.CSTNode]) -> None:
    """The models of the optimizers in `untraced` that name none (`Adam(MODELS[0].parameters())`),
    found by the object they step (`_by_object`), or that read it off an object they are handed
    (`_bound_once`): added to `wrapped`, and the optimizers traced."""
    placed = {id(o) for w in wrapped for o in w.optimizers}  # some of its models found: the TODO stays for the rest
    for optimizer in [o for o in untraced if isinstance(o, cst.Call) and o in facts.optimizers]:
        named = _names_a_model(facts, optimizer)
        if named and id(optimizer) in placed:
            continue
        model = _bound_once(facts, optimizer) if named else _by_object(facts, optimizer) or _bound_once(facts, optimizer)
        each = _bound_each(facts, optimizer) if model is None else []
        for one in each:
            known = next((w for w in wrapped if w.defined is one.defined and w.name == one.name), None)
            if known is None:
                wrapped.append(one)
            (known or one).optimizers.append(optimizer)
        if each:
            untraced.remove(optimizer)
            continue
        if model is None:
            model = _one_name_bound(facts, optimizer) or _held_unnamed(facts, optimizer)
            if model is not None:
                wrapped.append(model)
                untraced.remove(optimizer)
            continue
        known = next((w for w in wrapped if w.defined is model.defined and w.name == model.name), None)
        if known is None:
            wrapped.append(model)
        (known or model).optimizers.append(optimizer)
        untraced.remove(optimizer)


def _bound_once(facts: Facts, optimizer: cst.Call) -> Model | None:
    """For an optimizer that reads its model off an object it is handed (`Adam(s.model.parameters())`
    in `def fit(s)`, where `s` is `Setup(net, loader)` of a dataclass, a trainer's config or an
    argparse namespace given `net`): the one module it steps (`objects.trained`), wrapped where the
    one name the program binds to it is built (`net = Net().to(device)`), before it is stored in the
    object, or where a plain class builds it into a `self.` attribute (`self.actor = Actor(n)` in a
    `Networks` object's `__init__`, the optimizer over `networks.actor.parameters()` in a trainer it
    is handed to). None where it steps several objects, or the object has no name or more than one."""
    trained = objects.of(facts).trained(optimizer)
    site = next(iter(trained)) if len(trained) == 1 else None
    if site is None or not _module_site(facts, site):
        return None
    bound = _bound_names(facts, site, attributes=_whole_objects(facts, optimizer))
    if len(bound) != 1:
        return None
    stmt, name, value = bound[0]
    return _model_at(facts, (2 if _built(value) is not value else 1, stmt, name, None), optimizer, [])


def _bound_each(facts: Facts, optimizer: cst.Call) -> list[Model]:
    """For an optimizer over the parameters of several modules that it names by no name of theirs
    (`create_optimizer([gen, qhead], lr)`, whose `for m in models: params += list(m.parameters())`
    gathers them): each module it steps (`objects.trained`), wrapped where the one name the program
    binds to it is built (`gen, dis = Generator(z), Discriminator()`), as `_bound_once` wraps one.
    Empty unless every one of them is so bound, and unless a receiver that may hold several is
    one of them in turn (a loop's or a comprehension's item), not a choice of one."""
    flow = objects.of(facts)
    trained = sorted(flow.trained(optimizer), key=lambda site: facts.spans[site][0])
    chosen = [c.func.value for c in parameter_calls(facts, optimizer) if isinstance(c.func, cst.Attribute)
              and len(flow.values(c.func.value)) > 1 and not _each_item(facts, c.func.value)]
    whole = _whole_objects(facts, optimizer)
    found: list[Model] = []
    for site in trained if len(trained) > 1 and not chosen else ():  # (`m = a if x else b`: one or the other)
        bound = _bound_names(facts, site, attributes=whole)
        if not _module_site(facts, site) or len(bound) != 1:
            return []
        stmt, name, value = bound[0]
        found.append(_model_at(facts, (2 if _built(value) is not value else 1, stmt, name, None), optimizer, []))
    return found


def _one_name_bound(facts: Facts, optimizer: cst.Call) -> Model | None:
    """For an optimizer that reads its model off an object it is handed, where the modules it may
    step are built in the branches of one function, each bound to the same name there (`model =
    SimpleModel(ch_layer0=64, ...)` under `if ATTENTION_FLAG == "attention":`, `model = SimpleModel(
    ch_layer0=16, ...)` under its `elif`, then `diffusion_model = DiffusionModel(model, ...)` and
    `Adam(diffusion_model.model.parameters())`): that name, wrapped where it is ready (after the
    branches: `_pick`, of its bindings in that function), as an optimizer over the name itself wraps it. Before, the several sites
    were taken for a choice the object made, and the optimizer got a TODO. None where the name
    is read before that place (an object given the bare module there would keep it), or where the
    optimizer is built in another function, or where a module has lazy layers (`nn.LazyConv2d`: DDP
    refuses parameters not made yet, and the first forward runs after that place; ddpm's SimpleModel
    has one, and the first version of this wrap stopped every process there, unnamed)."""
    model = _one_name_place(facts, optimizer)
    if model is None or _lazy_trained(facts, optimizer) is not None and not _dry_run_in(facts, model):
        return None  # lazy layers: made at the first forward, after the place of this wrap (DDP refuses them)
    return model


def lazy_unwrapped(facts: Facts, optimizer: cst.CSTNode) -> tuple[str, Model] | None:
    """(the lazy layer, the model) where `_one_name_bound` would wrap the model `optimizer` steps but
    for a lazy layer of it (`nn.LazyConv2d` of `SimpleModel`, ddpm's U-Net) and no dry run before
    that place: the wrap-model rewrite names the layer and the place where one forward on a batch
    of the input's shape would make its parameters (decision 0242); else None."""
    if not isinstance(optimizer, cst.Call):
        return None
    lazy = _lazy_trained(facts, optimizer)
    model = _one_name_place(facts, optimizer) if lazy is not None else None
    return (lazy, model) if lazy is not None and model is not None and not _dry_run_in(facts, model) else None


def _lazy_trained(facts: Facts, optimizer: cst.Call) -> str | None:
    """A lazy layer of a module `optimizer` steps (`forward.lazy_layers`, or a `torch.nn.Lazy*`
    built directly), as "`nn.LazyConv2d` of `SimpleModel`"; else None."""
    flow = objects.of(facts)
    for site in flow.trained(optimizer):
        if isinstance(site, cst.Call) and _lazy_call(facts, site):
            return f"`{facts.code(site.func)}`"
        if (found := next(filter(None, (forward.lazy_layers(facts, cls) for cls in flow.classes_built(site))), None)):
            return found
    return None


def _lazy_call(facts: Facts, call: cst.Call) -> bool:
    """Does `call` build one of torch's lazy layers (`nn.LazyLinear(1)`, `torch.nn.LazyConv2d(64, 3)`)?"""
    qualified = facts.qualify(call.func) or ""
    return qualified.startswith("torch.nn.") and qualified.rpartition(".")[2].startswith("Lazy")


def _dry_run_in(facts: Facts, model: Model) -> bool:
    """Does the set-up before `model`'s wrap run it once (`dry_run`: the wrap comes after it)?"""
    return any(dry_run(facts, stmt, model.name) for stmt in [*model.setup, model.anchor])


def _one_name_place(facts: Facts, optimizer: cst.Call) -> Model | None:
    """The place of `_one_name_bound`'s wrap, lazy layers or not."""
    flow = objects.of(facts)
    trained = flow.trained(optimizer)
    if len(trained) < 2 or not all(_module_site(facts, site) for site in trained):
        return None
    bound = [b for site in trained for b in _bound_names(facts, site)]
    scope = facts.scope(optimizer)
    if len(bound) != len(trained) or len({name for _, name, _ in bound}) != 1 \
            or any(facts.scope(stmt) is not scope for stmt, _, _ in bound):
        return None
    name = bound[0][1]
    model = _pick(facts, [c for c in _candidates(facts, name, optimizer, None) if facts.scope(c[1]) is scope], optimizer)
    if model is None or not all(stmt is model.anchor or facts.is_inside(stmt, model.anchor) or (
            facts.before(stmt, model.anchor) and not facts.apart(stmt, model.anchor))
            for stmt, _, _ in bound if not facts.apart(stmt, optimizer)):
        return None  # (wrapped in one branch: the other branch's module, which reaches the optimizer too, stays bare)
    reads = [n for n in facts.names if n.value == name and facts.scope(n) is scope
             and not any(facts.is_inside(n, stmt) for stmt, _, _ in bound) and facts.statement(n) is not model.anchor
             and not any(facts.is_inside(n, stmt) and dry_run(facts, stmt, name) for stmt in [*model.setup, model.anchor])
             and not facts.apart(n, model.anchor)]  # (a read in another branch of an `if` sees its own binding; a dry run's
    # read, under `with torch.no_grad():` too, is before the wrap, which follows it)
    return None if any(not facts.before(model.anchor, n) or facts.is_inside(n, model.anchor) for n in reads) else model


def _module_site(facts: Facts, site: cst.BaseExpression) -> bool:
    """Is the site an optimizer steps a module built where it is (`builds_module`), or a model the
    object core takes it for (`objects.kind`: a library's constructor, `models.resnet18(weights)`)?
    The latter is the answer a name bound to it gets; without it, `self.student = models.resnet18()`
    in a plain class's `__init__`, stepped by `Adam(model.student.parameters())`, was not wrapped
    (a TODO "could not tell which model this optimizer trains"), and is now, as `nn.Linear` there is:

        self.student = models.resnet18()  ->  self.student = models.resnet18()
                                              self.student = DistributedDataParallel(self.student, ...)

    (fixture plain_class_library_model; its teacher, the same constructor no optimizer steps, stays whole)."""
    return builds_module(facts, site) or objects.of(facts).kind(site) == objects.MODEL


def _each_item(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Is `expr` the name a `for` loop or a comprehension binds to each item in turn (`m` of `for m
    in models:`, of `[p for m in modules for p in m.parameters()]`)?"""
    if not isinstance(expr, cst.Name):
        return False
    ref = facts.ref(expr)
    if ref is not None and objects.of(facts).loop_bound(ref):
        return True
    for comp in facts.ancestors(expr):
        clause = getattr(comp, "for_in", None) if isinstance(comp, (cst.ListComp, cst.SetComp, cst.GeneratorExp,
                                                                       cst.DictComp)) else None
        while clause is not None:
            if mt.is_name(clause.target, expr.value):
                return True
            clause = clause.inner_for_in
    return False


def _bound_names(facts: Facts, site: cst.BaseExpression, attributes: bool = False
                 ) -> list[tuple[cst.CSTNode, str, cst.BaseExpression]]:
    """(statement, name, value) of each plain assignment of the construction `site` (moved or not)
    to a name, also as an item of a tuple written out on both sides (`gen, dis = Generator(z), Discriminator()`);
    with `attributes`, also to a `self.` attribute in a method of a plain class (`self.actor = Actor(n)`
    in `Networks.__init__`)."""
    return [(stmt, target.value if isinstance(target, cst.Name) else facts.code(target), value)
            for written, stored, stmt in facts.assigns if not isinstance(stmt, cst.AugAssign)
            for target, value in _unpacked(written, stored)
            if (isinstance(target, cst.Name) or attributes and _of_self(target) and _in_a_plain_class(facts, stmt))
            and _built(value) is site]


def _whole_objects(facts: Facts, optimizer: cst.Call) -> bool:
    """Does `optimizer` take the parameters of objects themselves, each read off a name and
    attributes (`network.actor.parameters()`, `chain(nets.actor.parameters(), nets.critic.parameters())`),
    not of an item of a container (`self.nets["gen"].parameters()`, an item of a `ModuleDict`)?"""
    def chain(expr: cst.BaseExpression) -> bool:
        while isinstance(expr, cst.Attribute):
            expr = expr.value
        return isinstance(expr, cst.Name)
    return all(isinstance(c.func, cst.Attribute) and chain(c.func.value) for c in parameter_calls(facts, optimizer))


def _in_a_plain_class(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Is `stmt` in a method of a class of the program that is no module (`class Agent:` whose
    `__init__` builds `self.net = Net()`)? A `self.` attribute it binds holds a model the way a name
    does, where a module's own `self.fc` is a part of its model."""
    cls = next((a for a in facts.ancestors(stmt) if isinstance(a, cst.ClassDef)), None)
    return cls is not None and not is_module_class(facts, cls)


def _held_unnamed(facts: Facts, optimizer: cst.Call) -> Model | None:
    """For an optimizer that reads its model off an object that is none (`SGD(ema.model.parameters())`),
    where the one module it steps was built where no name holds it (`ema = EMA(Net())`,
    `Solver(model=Net().to(device))`): the module synced where the optimizer takes it
    (`SGD(sync_gradients(ema.model).parameters())`, no wrapper: the object keeps the module itself,
    and what the program reads, saves and copies of it stays as it is). None for anything else."""
    calls = parameter_calls(facts, optimizer)
    receiver = calls[0].func.value if len(calls) == 1 and isinstance(calls[0].func, cst.Attribute) else None
    if not isinstance(receiver, cst.Attribute) or dotted(receiver) is None or not _holds_a_model(facts, receiver):
        return None
    trained = objects.of(facts).trained(optimizer)
    if len(trained) != 1 or not builds_module(facts, next(iter(trained))):
        return None
    stmt = facts.statement(optimizer)
    code = facts.code(receiver)
    model = Model(code, stmt, stmt, before_anchor=True, synced=code, item=True, inline=receiver)
    model.optimizers.append(optimizer)
    return model


def _built(value: cst.BaseExpression) -> cst.BaseExpression:
    """The construction a value moves or sets up in place (`Net()` of `Net().to(device).train()`)."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in mt.SELF_RETURNING:
        value = value.func.value
    return value


def _found_as_items(facts: Facts, wrapped: list[Model], untraced: list[cst.CSTNode]) -> None:
    """The models of the optimizers in `untraced` whose parameters are those of an item of a
    container the program fills with modules it builds (`nets['plain'] = Plain().to(device)`, or a
    dict or list display of them), picked by a key (`AdamW(nets[net].parameters())` in `for net in
    nets:`): no name holds the model, so the item is synced where the optimizer is built (no wrapper:
    what the program reads, saves and loads of the item stays as it is), and the optimizer traced."""
    for optimizer in [o for o in untraced if isinstance(o, cst.Call) and o in facts.optimizers]:
        calls = parameter_calls(facts, optimizer)
        receiver = calls[0].func.value if len(calls) == 1 and isinstance(calls[0].func, cst.Attribute) else None
        stmt = facts.statement(optimizer)
        if isinstance(receiver, cst.Name):  # `[SGD(m.parameters()) for m in models]`, `for m in models:`
            looped = _looped_over(facts, receiver, optimizer)
            container = dotted(looped) if looped is not None else None
            if looped is None or container is None or not (_filled_with_modules(facts, container, facts.ref(looped))
                                                           or _holds_modules(facts, looped)):
                continue
            model = Model(receiver.value, stmt, stmt, before_anchor=True, synced=receiver.value, item=True, inline=receiver)
            model.optimizers.append(optimizer)
            wrapped.append(model)
            untraced.remove(optimizer)
            continue
        if not isinstance(receiver, cst.Subscript):
            continue
        container = dotted(receiver.value)
        in_comprehension = _picked_by_comprehension(receiver, optimizer, facts)
        if container is None or not (in_comprehension or _picked_by_loop(facts, receiver, optimizer)
                                     or _displayed_key(facts, container, receiver)) \
                or not (_filled_with_modules(facts, container, facts.ref(receiver.value))
                        or _holds_modules(facts, receiver.value)):
            continue
        model = Model(facts.code(receiver), stmt, stmt, before_anchor=True, synced=facts.code(receiver), item=True,
                      inline=receiver if in_comprehension else None)  # the key is the comprehension's: synced in place
        model.optimizers.append(optimizer)
        wrapped.append(model)
        untraced.remove(optimizer)


def _displayed_key(facts: Facts, container: str, item: cst.Subscript) -> bool:
    """Is `item`'s key a string the dict display that fills `container` names (`self.nets["gen"]` of
    `self.nets = nn.ModuleDict({"gen": Gen(), "disc": Disc()})`, or of a plain dict display)? Such an
    item is the module built at that key; an index into a list a config class keeps (`MODELS[0]`) is not."""
    key = item.slice[0].slice if len(item.slice) == 1 and isinstance(item.slice[0].slice, cst.Index) else None
    name = mt.string_value(key.value) if key is not None else None
    return name is not None and any(
        isinstance(e, cst.DictElement) and mt.string_value(e.key) == name
        for target, v, _ in facts.assigns if dotted(target) == container
        and isinstance(d := _display(facts, v), cst.Dict) for e in d.elements)


def _display(facts: Facts, value: cst.BaseExpression) -> cst.BaseExpression:
    """The display a container is made of: `{...}` of `nn.ModuleDict({...})`, `[...]` of
    `nn.ModuleList([...])`, else `value` itself."""
    if isinstance(value, cst.Call) and facts.qualify(value.func) in ("torch.nn.ModuleDict", "torch.nn.ModuleList") \
            and value.args and isinstance(value.args[0].value, (cst.Dict, cst.List)):
        return value.args[0].value
    return value


def _picked_by_loop(facts: Facts, item: cst.Subscript, optimizer: cst.Call) -> bool:
    """Is `item`'s key a name a `for` around `optimizer` binds, in its function (`nets[net]` in
    `for i, net in enumerate(nets):`)? An item at a fixed key (`MODELS[0]` in a config class) is not."""
    key = item.slice[0].slice if len(item.slice) == 1 and isinstance(item.slice[0].slice, cst.Index) else None
    name = key.value if key is not None and isinstance(key.value, cst.Name) else None
    return name is not None and any(
        isinstance(loop, cst.For) and facts.scope(loop) is facts.scope(optimizer)
        and any(n.value == name.value for n in target_names(loop.target)) for loop in facts.enclosing_loops(optimizer))


def _picked_by_comprehension(item: cst.Subscript, optimizer: cst.Call, facts: Facts) -> bool:
    """Is `item`'s key a name the comprehension around `optimizer` binds (`nets[k]` in `{k:
    SGD(nets[k].parameters()) for k in nets}`)?"""
    key = item.slice[0].slice if len(item.slice) == 1 and isinstance(item.slice[0].slice, cst.Index) else None
    if key is None or not isinstance(key.value, cst.Name):
        return False
    for anc in facts.ancestors(optimizer):
        if isinstance(anc, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            clause: cst.CompFor | None = anc.for_in
            while clause is not None:
                if any(n.value == key.value.value for n in target_names(clause.target)):
                    return True
                clause = clause.inner_for_in
        elif isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
    return False


def _loop_variable(facts: Facts, key: str, optimizer: cst.CSTNode) -> bool:
    """Is the model `optimizer` trains named `key` by the variable of a comprehension or `for`
    around it that goes over a container's items (`net` of `[SGD(net.parameters()) for net in
    nets]`, of `for name, net in nets.items():`)? Such a name holds each item in turn: no
    assignment elsewhere that binds `key` (a `self.net = nn.Sequential(...)` inside some model's
    class) is what it steps."""
    if not isinstance(optimizer, cst.Call) or "." in key:
        return False
    return any(isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name) and c.func.value.value == key
               and _looped_over(facts, c.func.value, optimizer) is not None for c in parameter_calls(facts, optimizer))


def _looped_over(facts: Facts, name: cst.Name, optimizer: cst.Call) -> cst.BaseExpression | None:
    """What the comprehension or `for` around `optimizer` that binds `name` whole iterates (`models`
    of `[SGD(m.parameters()) for m in models]`, of `for m in models:` or `for k, m in
    models.items():` in its function)."""
    for anc in facts.ancestors(optimizer):
        if isinstance(anc, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            clause: cst.CompFor | None = anc.for_in
            while clause is not None:
                if (found := _items_bound(clause.target, clause.iter, name.value)) is not None:
                    return found
                clause = clause.inner_for_in
        elif isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            break
    for loop in facts.enclosing_loops(optimizer):
        if isinstance(loop, cst.For) and (found := _items_bound(loop.target, loop.iter, name.value)) is not None:
            return found
    return None


def _items_bound(target: cst.BaseExpression, iterated: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
    """The container whose items a loop (or a comprehension's `for`) binds `name` to: `models` of
    `for m in models:`, `for m in models.values():`, `for key, m in models.items():`, `for i, m in
    enumerate(models):`."""
    pair = isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2 and \
        mt.is_name(target.elements[1].value, name)
    if mt.is_name(target, name):
        if isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute) and not iterated.args \
                and iterated.func.attr.value == "values":
            return iterated.func.value
        return iterated
    if pair and isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute) and not iterated.args \
            and iterated.func.attr.value == "items":
        return iterated.func.value
    if pair and isinstance(iterated, cst.Call) and mt.is_call_of(iterated, "enumerate") and iterated.args:
        return iterated.args[0].value
    return None


def _filled_with_modules(facts: Facts, container: str, ref: Ref | None = None) -> bool:
    """Does the program store modules it builds into `container` (`nets['a'] = Net().to(device)`,
    `nets = {'a': Net()}`, `nets = [Net(), nn.Linear(2, 2)]`, and with `ref`, the name, also
    `nets = [Net() for _ in range(3)]`, `nets = {k: MODELS[k]() for k in names}` (a class a
    registry holds, made per key), `[make() for _ in range(3)]` (a factory of the program's that returns
    modules) and `nets.append(Net())`), and only those or placeholders?"""
    values = [v for target, v, _ in facts.assigns if isinstance(target, cst.Subscript) and dotted(target.value) == container]
    values += [e.value for target, v, _ in facts.assigns if dotted(target) == container
               and isinstance(d := _display(facts, v), (cst.Dict, cst.List, cst.Tuple)) for e in d.elements
               if isinstance(e, (cst.DictElement, cst.Element))]
    made: list[cst.BaseExpression] = []
    if ref is not None:
        made = [v.elt if isinstance(v, cst.ListComp) else v.value for target, v, _ in facts.assigns
                if dotted(target) == container and isinstance(v, (cst.ListComp, cst.DictComp))]
        values += made + [c.args[0].value for method, c in facts.filled(ref) if method == "append" and len(c.args) == 1]
    built = [v for v in values if builds_module(facts, v) or v in made and (_registry_made(v) or _from_factory(facts, v))]
    return bool(built) and all(v in built or isinstance(v, (cst.List, cst.Tuple, cst.Name)) and
                               (not isinstance(v, cst.Name) or v.value == "None") for v in values)


def _holds_modules(facts: Facts, container: cst.BaseExpression) -> bool:
    """Is every object `container` may hold a container the program fills with modules it builds,
    as the object core follows it (`ensemble.members` of a plain class's `self.members =
    [Net() for _ in range(n)]`, the ensemble handed to a runner that builds the optimizers; `self.nets`
    of `self.nets, self.nets_ema = build_model(args)`, whose `nets = Munch(generator=generator, ...)`)?"""
    core = objects.of(facts)
    sites = core.values(container)
    return bool(sites) and all(core.is_container(site) and (held := core.elements(site))
                               and all(isinstance(e, cst.Call) and builds_module(facts, e) for e in held)
                               for site in sites)


def _from_factory(facts: Facts, value: cst.BaseExpression) -> bool:
    """`make()` of the program's function that returns only modules it builds (`def make(): return
    nn.Sequential(...)`), made by the comprehension that fills a container (`[make() for _ in range(3)]`)."""
    value = _built(value)
    if not isinstance(value, cst.Call) or not facts.user_functions(value):
        return False
    origins = facts.origins(value)
    return bool(origins) and all(builds_module(facts, o) for o in origins)


def _registry_made(value: cst.BaseExpression) -> bool:
    """`MODELS[name](...)` (and it moved, `.to(device)`): an instance of a class a registry holds,
    made by the comprehension that fills a container an optimizer's loop goes over (what the
    optimizer steps tells it is a module)."""
    value = _built(value)
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Subscript)


def weight_copies(facts: Facts, refs: dict[Ref, Model]) -> set[Ref]:
    """The modules whose weights the program copies from a model that trains (held by `refs`): a
    target network loaded from it (`target.load_state_dict(online.state_dict())`) or an EMA copy
    updated through a `zip` of both modules' parameters (`for t, p in zip(target.parameters(),
    online.parameters()): t.data.copy_(tau * p.data + (1 - tau) * t.data)`). They follow that
    model: the same on every process as it is, with no optimizer of their own."""
    copies: set[Ref] = set()
    for call in facts.calls:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict" and call.args:
            sources = [c.func.value for c in facts.calls_in(call.args[0].value)
                       if isinstance(c.func, cst.Attribute) and c.func.attr.value == "state_dict"]
            pairs = [(func.value, sources)]
        elif mt.is_call_of(call, "zip"):
            owners = [a.value.func.value for a in call.args if isinstance(a.value, cst.Call)
                      and isinstance(a.value.func, cst.Attribute) and a.value.func.attr.value == "parameters"]
            pairs = [(o, [s for s in owners if s is not o]) for o in owners] if len(owners) == len(call.args) else []
        else:
            continue
        for copy, sources in pairs:
            ref = facts.ref(copy, call)
            if ref is not None and ref not in refs and any(facts.ref(_unwrapped(s), call) in refs for s in sources):
                copies.add(ref)
    return copies


def _unwrapped(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The model of `model.module` (a script that reads its wrapper's module itself)."""
    return expr.value if isinstance(expr, cst.Attribute) and expr.attr.value == "module" else expr


def builds_module(facts: Facts, value: cst.BaseExpression) -> bool:
    """`Net(...)`, `nn.Linear(...)`, and those moved (`Net().to(device)`): a module the program builds."""
    value = _built(value)
    if not isinstance(value, cst.Call):
        return False
    return (facts.qualify(value.func) or "").startswith("torch.nn.") or \
        isinstance(value.func, cst.Name) and value.func.value in facts.classes


def _names_a_model(facts: Facts, optimizer: cst.Call) -> bool:
    """Does `optimizer` step the parameters of a model it names (`model.parameters()`, not `MODELS[0].parameters()`)?"""
    return any(isinstance(c.func, cst.Attribute) and _owner(c.func.value) for c in parameter_calls(facts, optimizer))


def _same_item(facts: Facts, target: cst.Subscript, value: cst.BaseExpression) -> bool:
    """`self.models[i] = nn.DataParallel(self.models[i])`: the item wrapped where it lies."""
    dp = _dataparallel_call(facts, value) if isinstance(value, cst.Call) else None
    inner = (mt.positional(dp, 0) or mt.keyword(dp, "module")) if dp is not None else None
    return inner is not None and facts.code(inner.value) == facts.code(target)


def _by_object(facts: Facts, optimizer: cst.CSTNode) -> Model | None:
    """For an optimizer whose model has no name to find (`Adam(MODELS[0].parameters())`, an item of
    a list a config class builds): the model at the program's own DataParallel of the object it
    steps, when there is exactly one (`self.models[i] = nn.DataParallel(self.models[i])` in the
    trainer's loop over the list moved from the config)."""
    found = _dataparallel_of_object(facts, optimizer)
    return _model_at(facts, found[0], optimizer, found) if len(found) == 1 else None


def _branch_calls(value: cst.BaseExpression) -> list[cst.Call] | None:
    """The calls a conditional expression may give, when every branch is one (`Net().cuda() if
    use_cuda else Net()` -> both calls); `[value]` for a call; None otherwise (a branch that is a
    name, `model.cuda() if use_cuda else model`, gives an object bound elsewhere)."""
    if isinstance(value, cst.Call):
        return [value]
    if isinstance(value, cst.IfExp):
        body, orelse = _branch_calls(value.body), _branch_calls(value.orelse)
        return None if body is None or orelse is None else [*body, *orelse]
    return None


def _alias_of(stmt: cst.CSTNode) -> tuple[str, cst.Name] | None:
    """(`model`, the name `embedding_net`) of `model = embedding_net`: a second name bound to an object."""
    assign = stmt if isinstance(stmt, cst.Assign) else mt.sole(stmt, cst.Assign)
    if assign is None or len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, cst.Name) and isinstance(value, cst.Name) and target.value != value.value:
        return target.value, value
    return None


def _trained_alias(facts: Facts, stmt: cst.CSTNode, alias: str | None = None, of: str | None = None) -> bool:
    """Is `stmt` an alias binding `alias = name` (of `of`, when given) of an object the program
    makes, whose new name is the one the training after it reads (the first statement that trains,
    hands the model on or forwards it names `alias`, not `name`)? The wrap then goes on `alias`: the
    training steps the wrapper, and `name` keeps the bare model, trained in place (a read of either
    is then right as written). `raw_model = model` before `model = torch.compile(model)` is not
    one: what follows reads `model`."""
    pair = _alias_of(stmt)
    if pair is None or alias is not None and pair[0] != alias or of is not None and pair[1].value != of \
            or not objects.of(facts).values(pair[1]):
        return False
    names = (pair[0], pair[1].value)
    for later in facts.following(facts.statement(stmt)):
        if any(_stops(facts, later, n) for n in names):
            return [_mentions(facts, later, n) for n in names] == [True, False]
    return False


def _reaching(facts: Facts, candidates: list[Candidate], optimizer: cst.CSTNode) -> list[Candidate]:
    """Without the candidates that cannot be the object the optimizer steps: in the optimizer's own
    function, a new object bound to the name after it (`model = Network(...)` rebuilt, `model =
    load_checkpoint(path)` after a training in another module: that binding is not yet made when
    the optimizer reads `model.parameters()`), when one is bound before it. A later move or
    DataParallel wrap of the same object stays (`model = nn.DataParallel(model)`)."""
    scope = facts.scope(optimizer)
    here = [c for c in candidates if facts.scope(c[1]) is scope]
    if not any(facts.before(c[1], optimizer) for c in here):
        return candidates
    loops = [lp for lp in facts.enclosing_loops(optimizer)]
    return [c for c in candidates if not _other_branch(facts, c[1], optimizer) and (
            facts.scope(c[1]) is not scope or facts.before(c[1], optimizer)
            or _mentions(facts, _assigned_value(c[1]), c[2]) or any(facts.is_inside(c[1], lp) for lp in loops))]


def _other_branch(facts: Facts, stmt: cst.CSTNode, optimizer: cst.CSTNode) -> bool:
    """Do `stmt` and `optimizer` lie in different branches of one `if` (`elif args.train:` and
    `elif args.test:`), so that no run reaches both?"""
    for anc in facts.ancestors(stmt):
        if isinstance(anc, cst.If) and facts.is_inside(optimizer, anc):
            return facts.is_inside(stmt, anc.body) != facts.is_inside(optimizer, anc.body)
    return False


def _assigned_value(stmt: cst.CSTNode) -> cst.BaseExpression:
    value = stmt.value if isinstance(stmt, (cst.Assign, cst.AnnAssign)) else None
    return cst.Name("_") if value is None else value


def _trained_refs(facts: Facts, key: str, optimizer: cst.Call) -> set[Ref]:
    """The names (`self.model` of a trainer, `model` of a function) whose `parameters()` the
    optimizer is given, of those whose last name is `key`."""
    refs = set()
    for call in parameter_calls(facts, optimizer):
        parts = ((dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None) or "").split(".")
        head = parts[:2] if parts[0] == "self" else parts[:1]
        if head[-1] == key and (ref := facts.ref(_expression(".".join(head)), call)) is not None:
            refs.add(ref)
    return refs


def _received(facts: Facts, key: str, optimizer: cst.CSTNode) -> Model | None:
    """A model the optimizer's function receives as its parameter `key`, not rebound there
    before the optimizer: wrapped on entry, after the set-up that opens the function."""
    func = facts.scope(optimizer)
    if not isinstance(func, cst.FunctionDef) or key not in param_names(func):
        return None
    if any(facts.before(stmt, optimizer) for _, _, stmt in facts.writes(Ref(func, key))):
        return None
    if not facts.trains(func) and not _kept_on_self(facts, Ref(func, key)):
        # `build_optimizer(model, lr)`: the caller trains what it passed (`_passed_by_callers`)
        return None
    body = [s for s in func.body.body if not mt.is_docstring(s)]
    if not body:
        return None
    setup, anchor = _setup_in(facts, body, key)
    kept = [target for stmt in setup if (target := _moved_onto(stmt, key))]
    if kept and anchor is not None:  # `self.model = model.to(device)`: the attribute is what trains, wrapped after its set-up
        return Model(kept[-1], func, anchor, setup=setup, param=key)
    stored = _stored_then_moved(facts, body, key)
    if stored is not None:  # `self.G = G`, then `self.G.to(self.device)`: wrapped once on its device
        attr, moves = stored
        return Model(attr, func, moves[-1], setup=[*setup, *moves], param=key)
    return Model(key, func, anchor or body[0], setup=setup, before_anchor=anchor is None)


def _wrapped_once(facts: Facts, wrapped: list[Model], untraced: list[cst.CSTNode]) -> Models:
    """The models and the names that hold their wrappers, less each model a function receives
    that every call hands a wrapper already (`_given_wrappers`), and each built into another that
    trains (`_built_into_another`)."""
    wrapped = [_sub_module_alias(facts, wrapped, model) or model for model in wrapped]
    wrapped = [model for model in wrapped if not _built_into_another(facts, wrapped, model)]
    models = Models(wrapped, untraced, wrapped_refs(facts, wrapped))
    given = [model for model in wrapped if _given_wrappers(facts, models.refs, model)]
    if not given:
        return models
    kept = [model for model in wrapped if model not in given]
    return Models(kept, untraced, wrapped_refs(facts, kept))


def _sub_module_alias(facts: Facts, wrapped: list[Model], model: Model) -> Model | None:
    """A model built as a sub-module of another model that trains (`self.feature = Embed()` in
    `Net.__init__`, a `Net` wrapped where a trainer keeps it), trained on its own through a name
    its optimizer's function gives it (`feature = self.model.feature`, then `Adam(feature.parameters())`):
    wrapped at that name, not where its class builds it. Wrapped there, the sub-module would be a
    DistributedDataParallel inside the other's (two reducers averaging its gradients), and the
    other's `state_dict()` would save its keys as `feature.module.fc.weight`, which the
    single-GPU script cannot load (a few-shot GNN's `self.cnn_feature`, pretrained alone)."""
    assign = mt.sole(model.defined, cst.Assign)
    built_in = facts.enclosing_class(model.defined)
    if model.synced or model.dataparallel is not None or built_in is None or not model.name.startswith("self.") \
            or model.name.count(".") != 1 or assign is None or not model.optimizers:
        return None
    if not any(other is not model and any(facts.kin_classes(c, built_in) for c in model_classes(facts, other))
               for other in wrapped):
        return None
    attr = model.name.split(".")[1]
    aliases = {_sub_module_read(facts, o, attr) for o in model.optimizers}
    if len(aliases) != 1 or (alias := aliases.pop()) is None:
        return None
    stmt, name = alias
    found = _model_at(facts, (1, stmt, name, None), model.optimizers[0], [])
    found.optimizers, found.partial = model.optimizers, model.partial
    return found


def _built_into_another(facts: Facts, wrapped: list[Model], model: Model) -> bool:
    """Is `model` handed, by the name that holds it, to the construction of another model that trains,
    whose class keeps it as a sub-module (`encoder = EncoderRNN(size, hidden, input_embeddings)`,
    its `__init__` storing `self.embedding = embedding`), while an optimizer steps its parameters by
    that name too (`Adam(list(encoder.parameters()) + list(input_embeddings.parameters()))`)? It
    trains inside the other's forward, under the other's wrapper. Wrapped on its own as well, it would
    be a DistributedDataParallel inside the other's (two reducers averaging its gradients), and the
    other's `state_dict()` would save its keys as `embedding.module.weight`, which the single-GPU
    script cannot load (round 29's translation homework, decision 0236)."""
    if "." in model.name or model.synced or model.dataparallel is not None or model.item:
        return False
    for other in wrapped:
        if other is model:
            continue
        for call in facts.calls_in(other.defined):
            cls = facts.classes.get(dotted(call.func) or "")
            inits = facts.method(cls, "__init__") if cls is not None and is_module_class(facts, cls) else []
            if len(inits) != 1:
                continue
            params = param_names(inits[0])[1:]  # after `self`
            for i, arg in enumerate(call.args):
                if not (mt.is_name(arg.value, model.name) and facts.scope(arg.value) is facts.scope(model.defined)
                        and facts.before(model.defined, call)) or arg.star:
                    continue
                param = arg.keyword.value if arg.keyword is not None else params[i] if i < len(params) else None
                if param is not None and any(mt.is_name(value, param) and (name := dotted(target)) is not None
                                             and name.startswith("self.") and name.count(".") == 1
                                             for target, value, _ in facts.writes_in(inits[0])):
                    return True
    return False


def _sub_module_read(facts: Facts, optimizer: cst.CSTNode, attr: str) -> tuple[cst.CSTNode, str] | None:
    """The statement of the optimizer's function, before it, that names the sub-module `attr` of
    another object (`feature = self.model.feature`), where the optimizer steps that name's parameters."""
    if not isinstance(optimizer, cst.Call):
        return None
    for call in parameter_calls(facts, optimizer):
        owner = call.func.value if isinstance(call.func, cst.Attribute) else None
        ref = facts.ref(owner) if isinstance(owner, cst.Name) else None
        if ref is None or ref.scope is not facts.scope(optimizer):
            continue
        for _, value, stmt in facts.writes(ref):
            if isinstance(value, cst.Attribute) and value.attr.value == attr and dotted(value) is not None \
                    and facts.before(stmt, optimizer):
                return facts.statement(stmt), ref.name
    return None


def _given_wrappers(facts: Facts, refs: dict[Ref, Model], model: Model) -> bool:
    """A model a function receives (`def finetune(net): opt = Adam(net.parameters())`) that every
    call of that function hands a wrapper already (`finetune(model)`, `model` wrapped where the
    program trains it): the caller's wrap serves. Wrapped again on entry, it would nest
    DistributedDataParallel in DistributedDataParallel, two reducers averaging the same gradients
    (a MAML homework's `test_model(model, t)` after `main()` trained `model`). A name some calls
    hand a bare model (MAYBE) keeps its wrap on entry."""
    func = model.defined
    if not isinstance(func, cst.FunctionDef):
        return False
    calls = [call for call in facts.call_sites(func) if not facts.is_inside(call, func)]
    others = {ref: other for ref, other in refs.items() if other is not model}
    passed = [facts.argument_for(call, func, model.param or model.name) for call in calls]
    return bool(passed) and all(arg is not None and holds_wrapper(facts, others, arg) is WRAPPER for arg in passed)


def _stored_then_moved(facts: Facts, body: Sequence[cst.CSTNode], key: str) -> tuple[str, list[cst.CSTNode]] | None:
    """`self.G = G` and, later in the same function, `self.G.to(self.device)` (or `G.cuda()`,
    `self.G = self.G.to(device)`): the attribute and the statements that move it, the last of
    them before anything trains, runs or stores it again. DDP takes a module on its device: wrapped
    at the store, a model the method moves afterwards (onto a GPU) would be wrapped on the CPU."""
    stores = [i for i, stmt in enumerate(body) if _stores(stmt, key)]
    if not stores or any(_stops(facts, s, key) and not _stores(s, key) for s in body[:stores[0]]):
        return None
    assign = mt.sole(body[stores[0]], cst.Assign)
    attr = dotted(assign.targets[0].target) if assign is not None else None
    if attr is None:
        return None
    moves: list[cst.CSTNode] = []
    for stmt in body[stores[0] + 1:]:
        if any(_moves(stmt, name) for name in (attr, key)):
            moves.append(stmt)
        elif _stops(facts, stmt, attr) or _stops(facts, stmt, key) or _rebinds(stmt, attr):
            break
    return (attr, moves) if moves else None


def _moves(stmt: cst.CSTNode, name: str) -> bool:
    """`name.to(device)`, `name.cuda()` as a statement, or `name = name.to(device)`."""
    expr, assign = mt.sole(stmt, cst.Expr), mt.sole(stmt, cst.Assign)
    value = expr.value if expr is not None else assign.value if assign is not None and len(assign.targets) == 1 \
        and dotted(assign.targets[0].target) == name else None
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and mt.is_device_move(value) \
        and dotted(value.func.value) == name


def _rebinds(stmt: cst.CSTNode, name: str) -> bool:
    assign = mt.sole(stmt, cst.Assign)
    return assign is not None and any(dotted(t.target) == name for t in assign.targets)


def _built_for_no_caller(facts: Facts, key: str, optimizer: cst.CSTNode) -> bool:
    """Is the optimizer built from the parameter `key` of a function of the program that nothing
    calls or names (an import of it aside): `def SGD(model, lr): return torch.optim.SGD(model.parameters(),
    lr=lr)` beside the `Adam` the program uses? It builds nothing when the program runs, and no
    caller says what `key` holds: another `model` of the program that shares the name is not it
    (it was wrapped there too, twice where that model was the one the program trains)."""
    func = facts.scope(optimizer)
    if not isinstance(func, cst.FunctionDef) or key not in param_names(func) or facts.enclosing_class(func) \
            or facts.call_sites(func):
        return False
    return not any(_names_function(facts, n, func) for n in facts.names if n.value == func.name.value)


def _names_function(facts: Facts, name: cst.Name, func: cst.FunctionDef) -> bool:
    """Could `name` be a use of the program's function `func`: not its definition, not an import of
    it, not the attribute of a library's module (`torch.optim.SGD` beside `def SGD`); an attribute
    of a program module (`optimiser.SGD`) or of an object ddpify cannot name (`self.kind.optimizer`
    of a module handed in at run time) may be."""
    parent = facts.parent(name)
    if name is func.name or isinstance(parent, cst.ImportAlias):
        return False
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return facts.qualify(parent) is None or facts.is_program_module(parent.value)
    return True


def _passed_by_callers(facts: Facts, key: str, optimizer: cst.CSTNode) -> list[Model]:
    """The models the calls of a function that only builds the optimizer pass for its parameter
    `key`, not rebound there before the optimizer (`optimizer = build_optimizer(net, lr)`: `net`,
    where the caller builds it; `optimizer(self.D, lr)` and `optimizer(self.G, lr)` of a GAN's
    model module: both). Wrapping the parameter there would leave the callers training their bare
    models. [] unless every call passes one ddpify finds."""
    func = facts.scope(optimizer)
    if not isinstance(func, cst.FunctionDef) or key not in param_names(func) or facts.trains(func) \
            or _kept_on_self(facts, Ref(func, key)) \
            or any(facts.before(stmt, optimizer) for _, _, stmt in facts.writes(Ref(func, key))):
        return []
    found = []
    for site in facts.call_sites(func):
        arg = facts.argument_for(site, func, key)
        owner = _owner(arg) if arg is not None and dotted(arg) else None
        model = _locate(facts, owner, site) if owner else None
        if model is None:
            return []
        found.append(model)
    return found


def _moved_onto(stmt: cst.CSTNode, name: str) -> str | None:
    """`self.model` of `self.model = model.to(device)`: an attribute that keeps the moved model."""
    assign = mt.sole(stmt, cst.Assign)
    if assign is None or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Attribute):
        return None
    value = assign.value
    moved = isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and mt.is_device_move(value) \
        and dotted(value.func.value) == name
    return dotted(assign.targets[0].target) if moved else None


def _handed_in(facts: Facts, key: str, optimizer: cst.CSTNode) -> Model | None:
    """`self.model` of a class whose method stores its parameter there (`self.model = net`): the
    model the one call of that method passes (`Fitter(scaled, loader)`: `scaled`), not another
    `model` of the file that shares the attribute's last name."""
    ref = facts.ref(_expression(f"self.{key}"), optimizer) if facts.enclosing_class(optimizer) else None
    writes = facts.writes(ref) if ref is not None else []
    if len(writes) != 1 or not isinstance(writes[0][1], cst.Name):
        return None
    param, func = writes[0][1].value, facts.scope(writes[0][2])
    if not isinstance(func, cst.FunctionDef) or param not in param_names(func) or len(facts.call_sites(func)) != 1:
        return None
    site = facts.call_sites(func)[0]
    arg = facts.argument_for(site, func, param)
    return _locate(facts, arg.value, site) if isinstance(arg, cst.Name) else None


def _this_round(facts: Facts, candidates: list, optimizer: cst.CSTNode) -> list:
    """The candidates of the optimizer's own function that lie between the training before the
    optimizer and the training after it: a notebook or experiment that trains `model = Net()`,
    then builds `model = Net()` again with a new optimizer, trains each binding in its round.
    Empty in the first round (nothing trained before the optimizer), and when the round builds
    no candidate (the model comes from an earlier round)."""
    scope = facts.scope(optimizer)
    at = facts.spans[optimizer][0]
    points = [facts.spans[t] for t in _training_points(facts, scope) if not facts.is_inside(optimizer, t)]
    start = max((end for first, end in points if end <= at), default=None)
    if start is None:
        return []
    stop = min((first for first, _ in points if first > at), default=len(facts.spans) + 1)
    return [c for c in candidates if facts.scope(c[1]) is scope and start <= facts.spans[c[1]][0] < stop]


def _training_points(facts: Facts, scope) -> list[cst.CSTNode]:
    """The loops of `scope` that train, and its statements that call a function that trains."""
    points: list[cst.CSTNode] = [lp for lp in facts.loops_in(scope) if facts.trains(lp)]
    for call in facts.calls_of(scope):
        if any(facts.trains(f) for f in facts.user_functions(call)):
            points.append(facts.statement(call))
    return points


def _unconditional(facts: Facts, stmt: cst.CSTNode, optimizer: cst.CSTNode | None = None,
                   bound: str | None = None, name: str | None = None) -> cst.CSTNode:
    """The outermost `if`/`with`/`try` of its function that holds `stmt`: a model built or moved
    under `if use_cuda:` is wrapped after that `if`, on every path. Not one that holds the
    optimizer too (`elif args.train: model = LeNet(); optimizer = ...; train_model(model, ...)`:
    that branch uses the model it builds, and the wrap stays in it, before that use), nor, given the
    model's `name`, one that hands the model on to what trains it or keeps it after `stmt` although
    the optimizer is built elsewhere (`if train: model = Net(); pinn = PINN(model); pinn.fit()`, the
    optimizer made in the class's method: a wrap after the `if` comes after that training, and the
    object the branch handed on stays bare), unless,
    given the model's `name`, the branch neither trains, returns, keeps nor hands on the model
    after `stmt` and the program moves it right after the `if` (`if arch == 'a': model = A();
    optimizer = Adam(...)`, then `model.to(device)` after the chain): that is set-up, and the wrap
    follows the chain and the move, where DDP must be built. Nor, given the name `bound`, one that binds
    it before `stmt` (`if self.use_gan: self.discriminator = config.DISCRIMINATOR.to(device)`: the
    object is there on that path only)."""
    result = stmt
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.For, cst.While)) or mt.is_main_guard(anc):
            break
        if isinstance(anc, (cst.If, cst.With, cst.Try)):
            if optimizer is not None and facts.is_inside(optimizer, anc) and (
                    name is None or _used_inside(facts, anc, stmt, name) or not _moved_after(facts, anc, name)) \
                    or optimizer is not None and name is not None and not facts.is_inside(optimizer, anc) \
                    and _used_inside(facts, anc, stmt, name) \
                    or bound is not None and any(
                    dotted(t) == bound and s is not stmt and facts.is_inside(s, anc) and facts.before(s, stmt)
                    for t, _, s in facts.assigns):
                break
            if not _is_elif(facts, anc):  # an `elif` is no statement of a block: its chain answers for it
                result = anc
    return result


def _is_elif(facts: Facts, node: cst.CSTNode) -> bool:
    """Is `node` the `elif` of an `if` (the `If` in its parent's `orelse`)?"""
    parent = facts.parent(node)
    return isinstance(node, cst.If) and isinstance(parent, cst.If) and parent.orelse is node


def _moved_after(facts: Facts, anc: cst.CSTNode, name: str) -> bool:
    """Is the first statement after `anc` that mentions `name` a move of it (`model.to(device)`)?
    The program reads the model there on every path, so a wrap after it binds nothing new. An
    `elif` answers for its whole chain."""
    while isinstance(outer := facts.parent(anc), cst.If):
        anc = outer
    first = next((s for s in facts.following(anc) if _mentions(facts, s, name)), None)
    return first is not None and _moves(first, name)


def _used_inside(facts: Facts, anc: cst.CSTNode, stmt: cst.CSTNode, name: str) -> bool:
    """Does `anc` train, return, keep or hand on `name` after `stmt` (`_stops`), on `stmt`'s own
    path? A statement of another branch of an `if` in it runs instead of `stmt` (`else: logger(...);
    return None` after `elif name == 'resnet20': model = resnet20()` in a factory's chain): the
    object `stmt` binds never reaches it, and the wrap after the chain serves every branch that builds one."""
    inside = [facts.statement(c) for c in facts.calls_in(anc)]
    inside += [facts.statement(s) for _, _, s in facts.assigns if facts.is_inside(s, anc)]
    inside += [facts.statement(r) for r in facts.returns if facts.is_inside(r, anc)]
    inside += [lp for lp in facts.loops_in(facts.scope(anc)) if facts.is_inside(lp, anc)]
    return any(facts.before(stmt, s) and not facts.apart(stmt, s) and _stops(facts, s, name) for s in inside)


def _dataparallel_call(facts: Facts, value: cst.Call) -> cst.Call | None:
    """`nn.DataParallel(model)`, also inside `nn.DataParallel(model).to(device)`."""
    call: cst.BaseExpression | None = value
    while isinstance(call, cst.Call):
        if facts.qualify(call.func) == "torch.nn.DataParallel":
            return call
        call = call.func.value if isinstance(call.func, cst.Attribute) else None
    return None


def _after_training(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Does `stmt` come after training has started in its own function (a reload, say)? Also
    after a call that trains (`pinn.train_model(hp, data)`, the loop in the object's method), when
    no training comes after `stmt` in its function: the model built there (`if load_model: model =
    Net(); model.load_state_dict(...)`) is never trained, and the optimizer steps the one built
    before that call."""
    scope = facts.scope(stmt)
    if any(facts.before(lp, stmt) and not facts.is_inside(stmt, lp) and facts.trains(lp) for lp in facts.loops_in(scope)):
        return True
    points = _training_points(facts, scope)
    return any(facts.before(p, stmt) and not facts.is_inside(stmt, p) for p in points) and \
        not any(facts.before(stmt, p) or facts.is_inside(p, stmt) for p in points)


def _setup_after(facts: Facts, defined: cst.CSTNode, name: str,
                 lazy: bool = False) -> tuple[list[cst.CSTNode], cst.CSTNode]:
    """The set-up statements after `defined` that must run before the wrap, and the last of them."""
    setup, anchor = _setup_in(facts, facts.following(defined), name, lazy)
    return setup, anchor or defined


def _setup_in(facts: Facts, stmts: Sequence[cst.CSTNode], name: str,
              lazy: bool = False) -> tuple[list[cst.CSTNode], cst.CSTNode | None]:
    """The leading statements of `stmts` that set `name` up before it can be wrapped, and the
    last of them (None when there is none): those that use it, and those that call a method of an
    object of another package it was handed (`_holders`). For a model with lazy layers
    (`forward.lazy_layers`), a dry run too (`dry_run`: `model(torch.zeros(1, 3, 32, 32))`): its
    parameters are made there, and DistributedDataParallel refuses them before. Before, the wrap
    came ahead of the dry run, the first forward that stops the set-up of any other model, and DDP
    stopped every process ("Modules with uninitialized parameters can't be used"); now it follows it."""
    setup: list[cst.CSTNode] = []
    anchor = None
    holders: set[str] = set()
    for stmt in stmts:
        if lazy and dry_run(facts, stmt, name):
            setup.append(stmt)
            anchor = stmt
            continue
        if _stops(facts, stmt, name):
            break
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue  # `def train(model, ...)` defines a function; its parameter is another name
        if _mentions(facts, stmt, name) and not _neutral(facts, stmt, name) or any(
                isinstance(c.func, cst.Attribute) and dotted(c.func.value) in holders for c in facts.calls_in(stmt)):
            setup.append(stmt)
            anchor = stmt
            holders |= _holders(facts, stmt, name)
    return setup, anchor


def dry_run(facts: Facts, stmt: cst.CSTNode, name: str) -> bool:
    """Is `stmt` one forward pass of `name` outside any loop, with no backward nor step
    (`model(torch.zeros(1, 3, 32, 32))`, alone or under `with torch.no_grad():`): the dry run that
    makes a lazy layer's parameters?"""
    if not isinstance(stmt, (cst.SimpleStatementLine, cst.With)) or facts.findall(stmt, (cst.For, cst.While, cst.Return)):
        return False
    calls = facts.calls_in(stmt)
    return any(dotted(c.func) == name for c in calls) and not any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value in ("backward", "step") for c in calls)


def _holders(facts: Facts, stmt: cst.CSTNode, name: str) -> set[str]:
    """`finder = LRFinder(net, optimizer, criterion)`: the name of an object a class of another
    package (not torch's, numpy's or the standard library's, nor the program's) builds with `name`
    among its arguments. It keeps the bare model, and its methods (`finder.range_test(...)`,
    `finder.reset()`, which puts back the weights the model had when it was handed over) act on it:
    the wrap comes after them, so that DistributedDataParallel hands every process rank 0's weights
    after the reset, not before it (a course notebook ran an LR finder over the network it then
    trained: each process got its own initial weights back, unless the seed made them equal)."""
    assign = mt.sole(stmt, cst.Assign)
    if assign is None or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) \
            or not isinstance(assign.value, cst.Call) or facts.user_functions(assign.value) \
            or dotted(assign.value.func) in facts.classes:
        return set()
    qualified = facts.qualify(assign.value.func) or ""
    handed = any(dotted(a.value) == name for a in assign.value.args)
    outside = "." in qualified and not qualified.startswith(KNOWN_LIBRARIES) \
        and qualified.partition(".")[0] not in sys.stdlib_module_names
    return {assign.targets[0].target.value} if handed and outside else set()


def _stops(facts: Facts, stmt: cst.CSTNode, name: str) -> bool:
    """Training, compiling, forwarding or returning the model: the wrap must come first. A
    statement that holds a training loop stops it too (`if not os.path.exists(path):` around the
    loop, its `else:` loading and moving the model): a wrap after it would come after the training."""
    if isinstance(stmt, (cst.For, cst.While)) and (facts.trains(stmt) or any(
            _hands_to_unread(facts, c, name) for c in facts.calls_in(stmt))):
        return True
    if isinstance(stmt, (cst.If, cst.With, cst.Try)) and any(
            facts.is_inside(loop, stmt) and _stops(facts, loop, name) for loop in facts.loops_in(facts.scope(stmt))):
        return True
    if mt.sole(stmt, cst.Return) is not None or _collects(stmt, name) or _stores(stmt, name) or _puts(stmt, name):
        return True
    for call in facts.calls_in(stmt):
        if facts.qualify(call.func) == "torch.compile" or dotted(call.func) == name \
                or _hands_to_looked_up(facts, call, name) or _kept_as_field(facts, call, name):
            return True
        if any(facts.trains(f) or _keeps_argument(facts, call, f, name) for f in facts.user_functions(call)):
            return True
        if _run_for_effect(facts, call) and any(dotted(a.value) == name for a in call.args) and \
                any(_builds_optimizer(facts, f) for f in facts.user_functions(call)):
            return True  # `train(scholar, data)` builds its optimizers: it trains, through calls ddpify cannot follow
    return False


def _kept_as_field(facts: Facts, call: cst.Call, name: str) -> bool:
    """`trainer = Trainer(model=model, optimizer=optimizer)` of a class whose `__init__` Python or a
    library writes (a dataclass, a pydantic model: `Facts.generated_fields`): the instance keeps
    the model it is handed as a field, and its methods train that; the wrap comes first, as for an
    `__init__` that stores its argument (`_keeps_argument`)."""
    cls = facts.constructed_class(call)
    return cls is not None and bool(facts.generated_fields(cls)) and any(dotted(a.value) == name for a in call.args)


def _run_for_effect(facts: Facts, call: cst.Call) -> bool:
    """Is `call` a statement of its own, its result unused (`train(model, data)`, not
    `optimizer = build_optimizer(model)`)?"""
    expr = mt.sole(facts.statement(call), cst.Expr)
    return expr is not None and expr.value is call


def _builds_optimizer(facts: Facts, func: cst.FunctionDef) -> bool:
    """Does `func` build an optimizer (`def train(model, ...): opt = Adam(model.parameters())`)?"""
    return any(facts.scope(opt) is func for opt in facts.optimizers)


KNOWN_LIBRARIES = ("torch.", "numpy.", "copy.", "math.")  # what they do with a model ddpify knows


def _hands_to_looked_up(facts: Facts, call: cst.Call, name: str) -> bool:
    """Does `call` hand `name` to a callee found at run time (`train_fn(model, ...)` with `train_fn
    = train_a if ... else train_b`, `TRAINERS[name](model)`)? It may train the model there."""
    return looked_up_callee(facts, call.func) and not facts.user_functions(call) \
        and any(dotted(a.value) == name for a in call.args)


def looked_up_callee(facts: Facts, func: cst.BaseExpression) -> bool:
    """A callee found at run time: `TRAINERS[name]`, `getattr(obj, name)`, or a bare name that no
    import, definition or builtin binds (a parameter, a variable holding a callable). Not an item
    of dicts the program writes out whose every value is a class or function of torch
    (`all_scheduler_dict[name](optimizer, **kw)` over `{'StepLR': lr_scheduler.StepLR, ...}`, merged
    with an empty dict of its own: `Facts.dict_values`): torch's schedulers and optimizers run no
    training loop of the program's; nor a class or function of torch picked by a name the
    configuration gives, or a name bound to one (`_picked_from_torch`); nor a name bound only to
    lambdas the program writes (`_bound_to_lambdas`)."""
    if _picked_from_torch(facts, func):
        return False
    if isinstance(func, cst.Subscript):
        values = facts.dict_values(func.value)
        return not values or not all(dotted(v) and (facts.qualify(v) or "").startswith("torch.") for v in values)
    if isinstance(func, cst.Call) and dotted(func.func) == "getattr":
        return True
    return isinstance(func, cst.Name) and func.value not in BUILTINS and facts.qualify(func) is None \
        and func.value not in facts.classes and not _bound_to_lambdas(facts, func)


def _bound_to_lambdas(facts: Facts, name: cst.Name) -> bool:
    """A name every value of which is a lambda the program writes (`cudafy = lambda x: x if cuda is
    None else x.cuda(cuda)`): code ddpify reads, not a callee looked up at run time."""
    ref = facts.ref(name)
    values = facts.sources(ref) if ref is not None else []
    return bool(values) and all(isinstance(v, cst.Lambda) for v in values)


BUILTINS = frozenset(dir(builtins))


def _picked_from_torch(facts: Facts, func: cst.BaseExpression) -> bool:
    """`getattr(importlib.import_module('torch.optim.lr_scheduler'), name)`, `torch.optim.__dict__[name]`
    (`Facts.library_lookup`), or a name every value of which is one (`scheduler_class(**args)` after
    `scheduler_class = getattr(...)`): a class or function of torch, picked by name."""
    ref = facts.ref(func) if isinstance(func, cst.Name) else None
    values = facts.sources(ref) if ref is not None else [func]
    return bool(values) and all((facts.library_lookup(v) or "").split(".")[0] == "torch" for v in values)


def _hands_to_unread(facts: Facts, call: cst.Call, name: str) -> bool:
    """Does `call` hand `name` to an imported function ddpify does not read (`train(epoch, loader,
    model, optimizer)` of another package), or to a method of an object built from a class looked up
    at run time that ddpify cannot tell (`self.algo.step(model, x)` with `self.algo =
    lookup(args.package, name)(cfg)`, or `= ALGOS[name](cfg)` of a registry it cannot read)? In a
    loop, it may train the model there."""
    if not any(dotted(a.value) == name for a in call.args) or facts.user_functions(call):
        return False
    qualified = facts.qualify(call.func)
    if qualified is not None:
        return not qualified.startswith(KNOWN_LIBRARIES)
    if not isinstance(call.func, cst.Attribute) or dotted(call.func.value) in (None, name):
        return False
    flow = objects.of(facts)
    sites = flow.values(call.func.value)
    return bool(sites) and not flow.methods(call) and all(
        isinstance(s, cst.Call) and isinstance(s.func, (cst.Call, cst.Subscript)) for s in sites)


def _stores(stmt: cst.CSTNode, name: str) -> bool:
    """`self.model = model`: an attribute that would keep the bare model if the wrap came after
    it (a trainer's methods train `self.model`)."""
    assign = mt.sole(stmt, cst.Assign)
    return assign is not None and dotted(assign.value) == name \
        and any(isinstance(t.target, cst.Attribute) for t in assign.targets)


def _keeps_argument(facts: Facts, call: cst.Call, func: cst.FunctionDef, name: str, copies: bool = True) -> bool:
    """Does `call` hand `name` to a function that stores it on `self` (`trainer = Trainer(model)`
    with `self.model = model` in `__init__`), itself or in a function it hands it on to
    (`super().__init__(model)`, `self.setup(model)`)? The instance would keep the bare model.
    `copies`: a copy it stores counts too (`_kept_on_self`)."""
    flow = objects.of(facts)
    handed = [Ref(func, param) for param in param_names(func)
              if dotted(facts.argument_for(call, func, param) or cst.Name("_")) == name]
    handed = handed or facts.star_receivers(func, argument_slot(call, name))
    return any(_kept_on_self(facts, r, copies) for ref in handed for r in [ref, *flow.receivers(ref)])


CONTAINER_PUTS = ("append", "insert", "add", "appendleft")


def _puts(stmt: cst.CSTNode, name: str) -> bool:
    """`self.models.append(model)`, `nets.insert(0, model)`, `nets["gen"] = model`: the model itself put
    into a container the training reads it back from (deep mutual learning's peers, run as `for model in
    self.models`), which would keep the bare model if the wrap came after it; the wrap comes first, as
    for an attribute that keeps it (`_stores`):

        model = resnet32()                    model = resnet32()
        self.models.append(model)       ->    model = DistributedDataParallel(model, device_ids=device_ids(model))
        optimizer = SGD(model.parameters())   self.models.append(model)
                                              optimizer = SGD(model.parameters())

    Not a value computed from the model (`sizes.append(model.fc.out_features)`, `copies.append(deepcopy(model))`):
    the container keeps no model, and the set-up may go on after it."""
    expr = mt.sole(stmt, cst.Expr)
    if expr is not None and isinstance(call := expr.value, cst.Call) and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value in CONTAINER_PUTS:
        return any(dotted(a.value) == name for a in call.args if a.keyword is None)
    assign = mt.sole(stmt, cst.Assign)
    return assign is not None and dotted(assign.value) == name \
        and any(isinstance(t.target, cst.Subscript) for t in assign.targets)


def _collects(stmt: cst.CSTNode, name: str) -> bool:
    """`nets = [net_a, net_b]`: an alias in a container, which would keep the bare model if the
    wrap came after it; also a dict built from keywords (`nets = Munch(generator=generator, ...)`,
    `dict(generator=generator)`: `objects.KEYWORD_DICTS`)."""
    assign = mt.sole(stmt, cst.Assign)
    if assign is not None and isinstance(assign.value, cst.Call) and \
            (dotted(assign.value.func) or "").rpartition(".")[2] in _KEYWORD_DICT_NAMES:
        return any(a.keyword is not None and dotted(a.value) == name for a in assign.value.args)
    if assign is None or not isinstance(assign.value, (cst.List, cst.Tuple, cst.Set, cst.Dict)):
        return False
    elements = assign.value.elements
    return any(dotted(e.value) == name for e in elements)


_KEYWORD_DICT_NAMES = frozenset(q.rpartition(".")[2] for q in objects.KEYWORD_DICTS)  # (as written: `Munch`, `dict`)


def _neutral(facts: Facts, stmt: cst.CSTNode, name: str) -> bool:
    """Statements that use the model but need not precede the wrap: optimizers, prints."""
    calls = facts.calls_in(stmt)
    if any(mt.is_optimizer(facts.qualify(c.func), c) for c in calls):
        return True
    expr = mt.sole(stmt, cst.Expr)
    return expr is not None and mt.is_call_of(expr.value, "print")


def _mentions(facts: Facts, node: cst.CSTNode, name: str) -> bool:
    return bool(facts.references(node, name))


def _names_its_import(facts: Facts, value: cst.BaseExpression, name: str, stmt: cst.CSTNode) -> bool:
    """`import model` then `model = model.Net()`: the name's first binding in its scope builds a class
    of the module the name imports (read through it: `model.Net`), so the value is a construction, not
    the name's own model again (`model = torch.compile(model)`)."""
    if "." in name or name not in facts.imports.aliases:
        return False
    scope = facts.scope(stmt)
    if any(s is not stmt and facts.scope(s) is scope and facts.before(s, stmt) for _, _, s in facts.assigned_names.get(name, ())):
        return False
    uses = facts.references(value, name)
    return all(isinstance(parent := facts.parent(use), cst.Attribute) and parent.value is use for use in uses)


def wrapped_refs(facts: Facts, wrapped: list[Model]) -> dict[Ref, Model]:
    """Names that hold a wrapper once the wraps have run: the wrapped name itself, the
    parameters of functions it is passed to, and `self.x` in every method of its class."""
    refs: dict[Ref, Model] = {}
    homes: dict[Ref, list[Model]] = {}
    for model in wrapped:
        home = facts.ref(_expression(model.name), model.anchor)
        if home is not None:
            flow = objects.of(facts)
            received = _received_after_the_wrap(facts, model, home)
            kept = {k for r in [home, *received] for k in [*_kept_on_self(facts, r, model.written),  # `self.model = model`
                                                           *facts.kept_by_generated_init(r)]}  # `Setup(model, loader)`
            held = {home, *received, *kept, *(r for k in kept for r in flow.receivers(k))}
            taken = set(_taken_out(facts, held, model, home))  # `gen = self.models["gen"]`
            refs.update(dict.fromkeys([*held, *taken, *(r for t in taken for r in flow.receivers(t))], model))
            model.rebuilds = homes.setdefault(home, [])  # one list, shared by the wraps of one name
            model.rebuilds.append(model)
    return refs


def _received_after_the_wrap(facts: Facts, model: Model, home: Ref) -> set[Ref]:
    """The parameters the wrapped name is passed to (`objects.receivers`), at any depth, less
    those only calls that run before the wrap hand it to: a call in the wrap's own function,
    above the wrap and in no loop around it, passes the bare model (Sparsebit's
    `model = QuantModel(model, config=qconfig)` ... `model = DistributedDataParallel(model, ...)`:
    QuantModel's `self.model` is the traced graph module, not the wrapper; its
    `model.model.conv1` read before the wrap was taken for the wrapper's). A parameter a call
    after the wrap, or in another function, hands the name to is kept, as is one it reaches
    otherwise (through `*args`, a dict of keywords) and a framework's parameter
    (`before_anchor`: it holds the wrapper from the method's first line)."""
    flow = objects.of(facts)
    first = facts._passed_to.get(home, set())
    if model.before_anchor:
        return flow.receivers(home)
    kept = set()
    for param in first:
        func = param.scope
        if not isinstance(func, cst.FunctionDef):
            kept.add(param)
            continue
        passing = [call for call in facts.call_sites(func)
                   if (arg := facts.argument_for(call, func, param.name)) is not None and facts.ref(arg) == home]
        if not passing or any(not _runs_before_the_wrap(facts, model, call) for call in passing):
            kept.add(param)
    return kept | {r for param in kept for r in flow.receivers(param)}


def _runs_before_the_wrap(facts: Facts, model: Model, node: cst.CSTNode) -> bool:
    """Does `node`, in the wrap's own function, run only before the wrap: above it, in no loop
    whose body holds the wrap too (a later round would see the wrapper)? Not a node of another
    file of the program where the wrap is at the top level all files share: the entry's `if
    __name__ == "__main__":` block above a config module's `model = DDP(model)` in the merged
    module runs after the import that wraps it (nuclei-segmentation's `train(model, ...)`)."""
    if facts.scope(node) is not facts.scope(model.anchor) or not facts.before(node, model.anchor) \
            or facts.is_inside(node, model.anchor) or facts._part(node) != facts._part(model.anchor):
        return False
    return not any(facts.is_inside(model.anchor, loop) for loop in facts.enclosing_loops(node))


def _taken_out(facts: Facts, held: set[Ref], model: Model, home: Ref) -> list[Ref]:
    """Names bound to an item of a container that holds the wrapper: a dict, list or tuple
    display one of whose items reads a name of `held` after the wrap (`models = {"gen": gen,
    "dis": dis}` below `gen = DistributedDataParallel(gen)`), read by key wherever the container is
    handed on (`Trainer(loader, models)` keeps it as `self.models`; `gen, dis = self.models["gen"],
    self.models["dis"]` in its `train()`, then `gen = gen.to(device)`), where the item can hold
    nothing but the model (ddpify.analysis.objects, by key)."""
    flow = objects.of(facts)
    sites = flow.ref_values(home)
    displays = set()
    for kind in (cst.Dict, cst.List, cst.Tuple) if sites else ():
        for display in facts.by_type.get(kind, ()):
            elements = getattr(display, "elements", ())
            values = [e.value for e in elements if isinstance(e, (cst.DictElement, cst.Element))]
            if any(isinstance(v, cst.Name) and facts.ref(v) in held and (
                    facts.scope(v) is not facts.scope(model.anchor) or facts.before(model.anchor, v)) for v in values):
                displays.add(display)
    found: list[Ref] = []
    for written, stored, stmt in facts.assigns if displays else ():
        for target, value in _unpacked(written, stored):
            if not isinstance(target, cst.Name) or not isinstance(value, cst.Subscript):
                continue
            containers, items = flow.values(value.value), flow.values(value)
            if containers and all(c in displays for c in containers) and items and items <= sites \
                    and (ref := facts.ref(target, stmt)) is not None:
                found.append(ref)
    return found


def _kept_on_self(facts: Facts, param: Ref, copies: bool = True) -> list[Ref]:
    """`self.model` where a method stores its parameter `model` (`self.model = model` in a
    trainer's `__init__`, also `self.model = model.float()`): every method of the class, and of
    its subclasses, reads the same object. `copies`: a copy kept (`self.ema = deepcopy(model)`)
    counts too."""
    if not isinstance(param.scope, cst.FunctionDef) or facts.enclosing_class(param.scope) is None:
        return []
    return [ref for written, stored, stmt in facts.writes_in(param.scope) for target, value in _unpacked(written, stored)
            if mt.is_name(_same_object(facts, value, copies), param.name) and (dotted(target) or "").startswith("self.")
            and (ref := facts.ref(target, stmt)) is not None]


def _unpacked(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(target, value) of an assignment, each pair of a tuple unpacked from a tuple of as many
    values (`self.model, self.loader = model, loader`), none starred."""
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
            and len(target.elements) == len(value.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
    return [(target, value)]


def _same_object(facts: Facts, value: cst.BaseExpression, copies: bool = True) -> cst.BaseExpression:
    """The object a value is, or is a copy of, through calls that hand back the object they are
    called on (`model` of `model.float()`, `model.to(device).train()`: nn.Module's own methods
    return the module, the DDP wrapper's the wrapper) and copies (`copy.deepcopy(model)`: a copy
    of the wrapper is a wrapper; not with `copies=False`)."""
    while isinstance(value, cst.Call):
        if facts.self_returning(value):  # (not a program's `trainer.train(net)`: what that returns)
            value = value.func.value  # type: ignore[attr-defined]
        elif copies and facts.qualify(value.func) in ("copy.deepcopy", "copy.copy") and len(value.args) == 1:
            value = value.args[0].value
        else:
            break
    return value


class Holds(Enum):
    """What a name holds where it is read (`holds_wrapper`; None: never the wrapper)."""

    WRAPPER = "wrapper"  # the DistributedDataParallel wrapper, on every path that reaches the read
    MAYBE = "maybe"      # the wrapper on some paths, the bare model on others


WRAPPER, MAYBE = Holds.WRAPPER, Holds.MAYBE
DDP = "torch.nn.parallel.DistributedDataParallel"
APEX_DDP = "apex.parallel.DistributedDataParallel"  # NVIDIA apex's wrapper: the model is its `.module` too
# pytorch-ignite's `idist.auto_model(model)`: torch's DistributedDataParallel of the model on a run of several processes
IGNITE_AUTO_MODEL = ("ignite.distributed.auto_model", "ignite.distributed.auto.auto_model")
ACCELERATE = "accelerate"  # what Hugging Face accelerate's `prepare` hands back for a model (`wrap_kind`)


def written_wraps(facts: Facts) -> dict[Ref, Model]:
    """The names a script that is already distributed wraps itself (`model = DDP(model, ...)`), as
    `wrapped_refs` gives them for the wraps ddpify places: `ddpify check` asks `holds_wrapper`
    about these. The first wrap of a name is its `Model`; later ones are writes that keep it."""
    wraps = [Model(name, stmt, stmt, written=True) for target, value, stmt in facts.assigns
             if wrap_kind(facts, value) == DDP and (name := dotted(target)) and not isinstance(stmt, cst.AugAssign)]
    wraps += [Model(name, stmt, stmt, written=True) for target, value, stmt in facts.assigns
              for name in _prepared_models(facts, target, value)]
    # `setattr(self, "net" + name, DDP(net))`: each attribute of the class the name may be
    wraps += [Model(ref.name, stmt, stmt, written=True) for call in facts.calls if mt.is_name(call.func, "setattr")
              for arg in call.args[2:3] if wrap_kind(facts, arg.value) == DDP
              for ref in facts.names_set(arg.value) for stmt in [facts.statement(call)]]
    # a framework's trainer hands its wrapper to a method of the program (`compute_loss(self, model, ...)`)
    wraps += [Model(param, first, first, before_anchor=True, written=True) for func, param in frameworks.wrapped_parameters(facts)
              if isinstance(func.body, cst.IndentedBlock) and func.body.body for first in func.body.body[:1]]
    return wrapped_refs(facts, wraps[::-1])  # the first wrap of a name wins


# what a DDP-like class of the program makes to keep its processes' replicas equal
REPLICA_COLLECTIVES = frozenset(f"torch.distributed.{name}" for name in ("all_reduce", "broadcast", "reduce_scatter",
                                                                          "reduce_scatter_tensor", "all_gather"))


def own_wrapper_classes(facts: Facts) -> list[cst.ClassDef]:
    """The program's own DDP classes: an nn.Module subclass whose `__init__` keeps the module it is
    handed as `self.module` and whose methods all-reduce or broadcast through torch.distributed
    (a course's `DDPAsyncParameter(nn.Module)` that broadcasts the parameters and all-reduces each
    gradient in a hook). An instance is a wrapper as torch's is (`wrap_kind`): `state_dict()` keys
    start with `module.`, and the model's own methods are on `.module`."""
    memo = facts.__dict__.setdefault("_own_wrappers", {})
    if "classes" not in memo:
        found = []
        for cls in facts.classes.values():
            inits = [f for f in facts.method(cls, "__init__") if facts.enclosing_class(f) is cls]
            kept = any(isinstance(t, cst.Attribute) and t.attr.value == "module" and mt.is_name(t.value, "self")
                       and isinstance(v, cst.Name) and v.value in param_names(init)
                       for init in inits for t, v, _ in facts.writes_in(init))
            if kept and is_module_class(facts, cls) and any(
                    facts.qualify(c.func) in REPLICA_COLLECTIVES for c in facts.findall(cls, cst.Call)):
                found.append(cls)
        memo["classes"] = found
    return memo["classes"]


# builtin types no DDP wrapper is an instance of (`isinstance(model, dict)` holds for a dict of models)
CONTAINER_TYPES = ("dict", "list", "tuple", "set", "frozenset", "str", "bytes", "int", "float", "bool")


def never_a_wrapper(facts: Facts, kind: cst.BaseExpression) -> bool:
    """Is no DDP wrapper an instance of the class `kind` names, so that where `isinstance(model,
    kind)` holds `model` is not the wrapper: a builtin container or scalar type, one of
    `collections`/`typing`'s (Amphion's `isinstance(self.model, dict)`), or a class of the program
    (the model's own: `isinstance(model, GFV)`, whose `else` reads `model.module...`) that derives
    from no wrapper class (torch's, apex's: a library class named `...DataParallel`), is no
    wrapper class of the program (`own_wrapper_classes`), and that no such class derives from.
    `nn.Module` is none of these: the wrapper is a Module.

        isinstance(model, dict)           -> True
        isinstance(model, GFV)            -> True   (class GFV(nn.Module) of the program)
        isinstance(model, nn.Module)      -> False
        isinstance(model, MyDDP)          -> False  (class MyDDP(DistributedDataParallel))
    """
    qualified = facts.qualify(kind) or ""
    if isinstance(kind, cst.Name) and kind.value in CONTAINER_TYPES and qualified in ("", kind.value) \
            or qualified.startswith(("collections.", "typing.")):
        return True
    cls = facts.class_named(kind)
    return cls is not None and cls not in _may_be_wrappers(facts)


def _may_be_wrappers(facts: Facts) -> frozenset[cst.ClassDef]:
    """The program's classes an instance of a wrapper class may be an instance of: each class
    that derives (through any of its bases in the program) from a library class named
    `...DataParallel` or is, or derives from, one of `own_wrapper_classes`, and every base of it
    in the program."""
    memo = facts.__dict__.setdefault("_own_wrappers", {})
    if "kin" not in memo:
        wrappers = set(own_wrapper_classes(facts))
        kin: set[cst.ClassDef] = set()
        for cls in (c for c in facts.by_type.get(cst.ClassDef, ()) if isinstance(c, cst.ClassDef)):
            line, todo, foreign = [cls], [cls], False
            while todo:
                for base in todo.pop().bases:
                    inner = facts.class_named(base.value) if base.keyword is None else None
                    if inner is None:
                        foreign |= base.keyword is None and "DataParallel" in (
                            facts.qualify(base.value) or dotted(base.value) or "")
                    elif inner not in line:
                        line.append(inner)
                        todo.append(inner)
            if foreign or wrappers & set(line):
                kin.update(line)
        memo["kin"] = frozenset(kin)
    return memo["kin"]


ACCELERATE_PREPARE = ("prepare", "prepare_model")


def _prepared_models(facts: Facts, target: cst.BaseExpression, value: cst.BaseExpression) -> list[str]:
    """The names Hugging Face accelerate's `prepare` binds to the DDP wrapper of a model, in a
    program that imports accelerate: of `model, opt, loader = accelerator.prepare(model, opt,
    loader)`, the names handed a model (the object core's `kind` of what is prepared there: an
    `nn.Module` of the program or of torch), or, where that is not known, the names the program
    calls (runs a forward on: `model(x)`); not the optimizer or the loader it also hands back; the
    name `accelerator.prepare_model(model)` is bound to.

        model, opt, dl = accelerator.prepare(model, opt, dl)   -> ["model"]
        policy = accelerator.prepare(Policy())                  -> ["policy"] (called as `self.model(x)` elsewhere)
        accelerator.unwrap_model(model)                          (the bare model: no name bound)
    """
    element = _prepared_element(facts, value)
    if element is not None and facts.imports.imports_module("accelerate"):
        (prepare, index), name = element, dotted(target)
        given = [a.value for a in prepare.args if a.keyword is None]
        return [name] if name and (name in _called(facts) or _a_model_itself(facts, given[index])) else []
    if not mt.is_method_call(value, *ACCELERATE_PREPARE) or not facts.imports.imports_module("accelerate"):
        return []
    names = [dotted(e.value) for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [dotted(target)]
    given = [a.value for a in value.args if a.keyword is None and not a.star] if isinstance(value, cst.Call) else []
    return [n for i, n in enumerate(names) if n and (n in _called(facts) or i < len(given) and _a_model_itself(facts, given[i]))
            and not (i < len(given) and (_frozen(facts, given[i]) or freezing.frozen_where_used(facts, given[i], value)))]


# library modules whose parameters are frozen copies (`requires_grad_(False)`), unless the keyword given
# True also registers the trained model in them: ema_pytorch's EMA
FROZEN_MODULES = {"ema_pytorch.EMA": "include_online_model", "ema_pytorch.ema_pytorch.EMA": "include_online_model"}


def _frozen(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Does `expr` hold only modules none of whose parameters requires grad, which accelerate's
    `prepare` hands back as they are (it wraps a module in DDP only where one does): an
    ema_pytorch `EMA(model)`, whose parameters are its frozen copy (not `include_online_model=True`)?

        ema = EMA(model); model, ema = accelerator.prepare(model, ema)   -> ema is bare: `ema.update()`
    """
    sites = [s for s in objects.of(facts).values(expr) if not mt.is_method_call(s, *ACCELERATE_PREPARE)]  # what it hands back
    return bool(sites) and all(
        isinstance(s, cst.Call) and (keyword := FROZEN_MODULES.get(facts.qualify(s.func) or "")) is not None
        and not ((given := mt.keyword(s, keyword)) is not None and not mt.is_name(given.value, "False")) for s in sites)


def prepared_model(facts: Facts, given: cst.BaseExpression) -> bool:
    """Is `given`, handed to accelerate's `prepare`, a model: an `nn.Module` by the object core's
    `kind`, or a name the program calls (runs a forward on), as `_prepared_models` reads it?"""
    return dotted(given) in _called(facts) or bool(objects.of(facts).of_kind(given, objects.MODEL))


def _a_model_itself(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Does `expr` hold a model itself, not only the models the program stores into it by item?
    accelerate's `prepare` wraps an `nn.Module` and hands any other object back as it is: a dict
    (a Munch) of models, `nets[key] = MyDataParallel(nets[key])`, stays the dict.

        nets = Munch(encoder=enc, decoder=dec); nets[k] = DP(nets[k]); nets, opt = acc.prepare(nets, opt)
                                                              -> False (`nets.encoder` is no wrapper's)
        model = Net(); model, opt = acc.prepare(model, opt)   -> True
    """
    flow = objects.of(facts)
    ref = facts.ref(expr) if isinstance(expr, cst.Name) else None
    items = Sites().union(*(flow.values(v) for v in facts._item_writes.get(ref, ()))) if ref is not None else Sites()
    return bool(flow.of_kind(expr, objects.MODEL) - items)


def _called(facts: Facts) -> set[str | None]:
    """The names the program calls, or whose `forward` it calls (`model(x)`, `policy.forward(batch)`:
    `model`, `policy`), computed once."""
    found = facts.__dict__.get("_called_names")
    if found is None:
        found = facts.__dict__["_called_names"] = {dotted(c.func) for c in facts.calls} | {
            dotted(c.func.value) for c in facts.calls if mt.is_method_call(c, "forward") and isinstance(c.func, cst.Attribute)}
    return found


def prepares(facts: Facts, value: cst.BaseExpression) -> bool:
    """Is `value` accelerate's wrap: `accelerator.prepare(...)`, or one item of what it handed
    back (`_prepared_element`)?"""
    return mt.is_method_call(value, *ACCELERATE_PREPARE) or _prepared_element(facts, value) is not None


def _prepared_element(facts: Facts, value: cst.BaseExpression) -> tuple[cst.Call, int] | None:
    """(the `prepare` call, the place of its argument) where `value` takes one item of what
    `prepare` handed back, kept whole in a name first: `results[0]`, or `results.pop(0)` (the
    first pop of `results`, none in a loop before it) of `results = list(accelerator.prepare(decoder,
    *optimizers))`; None for any other value, or a place at or past a starred argument.

        results = list(accelerator.prepare(decoder, *optimizers))
        self.decoder = results.pop(0)      -> (prepare, 0): the decoder's wrapper
    """
    index: int | None
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index) \
            and isinstance(value.slice[0].slice.value, cst.Integer):
        seq, index = value.value, int(value.slice[0].slice.value.value)
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "pop" \
            and len(value.args) == 1 and isinstance(value.args[0].value, cst.Integer) and value.args[0].value.value == "0":
        seq, index = value.func.value, _earlier_pops(facts, value, value.func.value)
    else:
        return None
    ref = facts.ref(seq) if isinstance(seq, cst.Name) else None
    held = facts.sources(ref) if ref is not None and index is not None else []
    prepare = held[0] if len(held) == 1 else None
    if isinstance(prepare, cst.Call) and mt.is_call_of(prepare, "list", "tuple") and len(prepare.args) == 1:
        prepare = prepare.args[0].value
    if index is None or not (isinstance(prepare, cst.Call) and mt.is_method_call(prepare, *ACCELERATE_PREPARE)):
        return None
    args = [a for a in prepare.args if a.keyword is None]
    return (prepare, index) if index < len(args) and not any(a.star for a in args[:index + 1]) else None


def _earlier_pops(facts: Facts, pop: cst.Call, seq: cst.BaseExpression) -> int | None:
    """How many `seq.pop(0)` of the same list ran before this one in its function (None where one
    of them, or this one, is in a loop: how often it ran is not read)."""
    scope = facts.scope(pop)
    pops = [c for c in facts.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == "pop"
            and facts.scope(c) is scope and facts.code(c.func.value) == facts.code(seq) and (c is pop or facts.before(c, pop))]
    if any(isinstance(a, (cst.For, cst.While)) for c in pops for a in facts.ancestors(c)
           if facts.scope(a) is scope and a is not scope):
        return None
    return len(pops) - 1


def holds_wrapper(facts: Facts, refs: dict[Ref, Model], expr: cst.BaseExpression, depth: int = 3) -> Holds | None:
    """What the name `expr` holds where it is read: WRAPPER when it is proven to be a
    DistributedDataParallel wrapper, MAYBE when it may be one or the bare model (rebound after
    the wrap, wrapped on some paths only, or a parameter some callers pass a wrapper and others
    not; `self.model` a method stores holds what every such store is given), None when it is
    not. Edits that depend on it use `.module` for WRAPPER and `unwrap(...)`
    for MAYBE. `refs` are the names that hold a wrapper: `Models.refs` (the wraps
    ddpify places), or `written_wraps` for a script that wraps its models itself (`ddpify check`).
    A conditional expression (`model if feedback else generator`) holds what either branch may,
    unless it is the program's own unwrapping (`model.module if world_size > 1 else model`).

    Each answer is given once per conversion (`_answers`): the question recurs through the
    functions a name is passed to and returned from, for every read of every name.
    """
    if not refs:
        return None  # no name holds a wrapper (`--skip wrap-model`)
    return _holds(facts, refs, _answers(facts, refs), expr, depth)


def _answers(facts: Facts, refs: dict[Ref, Model]) -> dict:
    """The answers `holds_wrapper` gave about `refs`, by the expression asked (by id: each
    expression is held beside its answer, so that its id is not reused) and the depth. An answer
    depends on the program (`facts`), on `refs` (never changed once built) and on fields of their
    models that `find` sets after it first asks (`empty`, `maybe_none`; `rebuilds`, made anew by
    each `wrapped_refs`, which fills each list right after setting it): the answers are kept per
    `refs` (held here, for the same reason) and per state of those fields (`_state`, which
    `Model.__setattr__` bumps), a look-up for each question, not a read of every model."""
    memos = facts.__dict__.setdefault("_holds_answers", {})
    entry = memos.get(id(refs))
    if entry is None or entry[1] != _state:
        entry = memos[id(refs)] = (refs, _state, {})
    return entry[2]


def _holds(facts: Facts, refs: dict[Ref, Model], answers: dict, expr: cst.BaseExpression, depth: int) -> Holds | None:
    """`holds_wrapper`, answered once (`answers`: `_answers`)."""
    known = answers.get((id(expr), depth))
    if known is None:
        known = answers[id(expr), depth] = (expr, _holds_uncached(facts, refs, answers, expr, depth))
    return known[1]


def _holds_uncached(facts: Facts, refs: dict[Ref, Model], answers: dict, expr: cst.BaseExpression,
                    depth: int) -> Holds | None:
    if isinstance(expr, cst.IfExp) and not any(mt.is_attribute(e, "module") for e in (expr.body, expr.orelse)):
        verdicts = {_holds(facts, refs, answers, e, depth) for e in (expr.body, expr.orelse)}
        return WRAPPER if verdicts == {WRAPPER} else MAYBE if verdicts & {WRAPPER, MAYBE} else None
    if isinstance(expr, cst.Call) and depth:
        return _passed_through(facts, refs, answers, expr, depth)
    read_off = facts.module_attribute(expr)  # `cfg.model`: the top-level `model` of `cfg`'s module, once imported
    ref = read_off or facts.ref(expr)
    if ref not in refs and isinstance(expr, cst.Attribute) and not mt.is_name(expr.value, "self") and \
            (dotted(expr.value) or isinstance(expr.value, (cst.Subscript, cst.Call))):
        held = _instance_attribute(facts, refs, expr)  # `runner.model`, `models[0].model`: the class's `self.model`
        if len(held) > 1:  # `model_cls(params=params)` of a registry of classes: what each class's attribute holds
            verdicts = {_ref_holds(facts, refs, answers, expr, each, None, depth) for each in held}
            return WRAPPER if verdicts == {WRAPPER} else MAYBE if verdicts & {WRAPPER, MAYBE} else None
        ref = held[0] if held else ref
    return _ref_holds(facts, refs, answers, expr, ref, read_off, depth)


def _ref_holds(facts: Facts, refs: dict[Ref, Model], answers: dict, expr: cst.BaseExpression, ref: Ref | None,
               read_off: Ref | None, depth: int) -> Holds | None:
    """`_holds_uncached` of `expr`, read as the name `ref` (`self.net` of the class `model` of `model.net` is
    an instance of)."""
    model = refs.get(ref) if ref is not None else None
    if model is None or ref is None:
        if ref is None or not depth:  # `state["model"]` of a dict handed in: what the dict display holds
            return _kept_holds(facts, refs, answers, expr, depth) if depth else None
        if isinstance(ref.scope, cst.ClassDef) and read_off is None \
                and (last := _stored_on_the_way(facts, ref, expr)) is not None:
            return _holds(facts, refs, answers, _same_object(facts, last), depth - 1)  # (the method's own store)
        return _alias_holds(facts, refs, answers, ref, depth) or _returned_holds(facts, refs, answers, ref, depth, expr) \
            or _object_holds(facts, refs, expr, ref) or _param_holds(facts, refs, answers, ref, depth) \
            or _stored_holds(facts, refs, answers, ref, depth) or _kept_holds(facts, refs, answers, expr, depth)
    home = facts.ref(_expression(model.name), model.anchor)
    if ref != home:  # a parameter the wrapper is passed to
        if facts.in_library(ref.scope):
            return MAYBE  # a module's function: another entry point may pass the bare model
        if isinstance(ref.scope, cst.ClassDef):  # `self.model` a method stores: what it was given
            last = _stored_on_the_way(facts, ref, expr)
            if last is not None:  # stored by the read's own method on every way to it: that value only
                return _holds(facts, refs, answers, _same_object(facts, last, model.written), depth - 1) if depth else MAYBE
            stored = [value for _, value, stmt in facts.writes(ref) if not isinstance(stmt, cst.AugAssign)]
            stored += facts.unpacked_from(ref)  # `self.model, self.path = model, path`: its element
            verdicts = {_holds(facts, refs, answers, _same_object(facts, value, model.written), depth - 1) if depth else MAYBE
                        for value in [*stored, *facts.generated_init_arguments(ref)]}  # a dataclass's field: its constructions
            return WRAPPER if verdicts == {WRAPPER} else MAYBE if verdicts & {WRAPPER, MAYBE} else None
        if unwrapped_before(facts, ref, expr):
            return None  # `unet = accelerator.unwrap_model(unet)` first: the bare model
        passed = [facts.argument_for(call, ref.scope, ref.name) for call in facts.call_sites(ref.scope)] \
            if isinstance(ref.scope, cst.FunctionDef) else []
        verdicts = {_holds(facts, refs, answers, arg, depth - 1) if depth and arg is not None else MAYBE
                    for arg in passed}
        return WRAPPER if verdicts == {WRAPPER} else MAYBE if verdicts & {WRAPPER, MAYBE} else None
    if facts.scope(expr) is facts.scope(model.anchor) and read_off is None:
        model = _binding_at(facts, model, expr)
        if model is None:
            return None
    holds: Holds | None = MAYBE if model.empty or model.maybe_none or _wrapped_on_some_paths(facts, model, ref, expr) else WRAPPER
    for target, value, stmt in [*facts.writes(ref), *_unpacked_writes(facts, ref)]:
        unwraps = _unwrapping(facts, value, dotted(target) or "")  # `model = model.module`: the bare model
        # a wrap again (`model = accelerator.prepare(model)` after unwrapping it to save) holds a wrapper too
        if not unwraps and (_keeps_binding(facts, target, value) or is_wrap(facts, value)
                            or dotted(target) in _prepared_models(facts, target, value)) \
                or not _may_run_between(facts, model, stmt, expr):
            continue
        if facts.scope(stmt) is not facts.scope(expr) or facts.before(expr, stmt) or _conditional_to(facts, stmt, expr):
            return MAYBE  # rebound somewhere, sometimes: either may be there
        holds = None if unwraps else MAYBE if facts.references(value, dotted(target) or "") \
            or _returns_wrapper(facts, refs, answers, value, depth) else None  # last rebinding wins
    return holds


def _stored_on_the_way(facts: Facts, ref: Ref, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What the read `expr` of `self.x` (`ref`) holds when a statement of its own method stores
    `self.x` on every way to it: the value of the last such store (`self.x = v`, a statement of a
    block that holds the read, before it), through stores that only call a method of it
    (`self.model = self.model.to(device)`: what it held before); None where the way back meets a
    loop's start, the method's start, or a statement that may store `self.x` otherwise (in a branch,
    a loop or a `with`, unpacked, or through a call handed `self` or of a method of `self`). A
    method that builds its own bare model (`self.model = Model(cf).create()` in `inference`) reads
    that model, not the wrapper another method stores there (`run`'s `self.model, params =
    self.init_model_and_shard(cf)`)."""
    name = dotted(expr)
    func = facts.scope(expr)
    if name is None or not isinstance(func, cst.FunctionDef):
        return None
    child: cst.CSTNode = facts.statement(expr)
    for anc in facts.ancestors(child):
        if anc is func or isinstance(anc, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if not isinstance(anc, cst.IndentedBlock) or child not in anc.body:
            if type(anc) in mt.STATEMENTS:
                child = anc
            continue
        for stmt in reversed(anc.body[:anc.body.index(child)]):
            assign = mt.sole(stmt, cst.Assign) if isinstance(stmt, cst.SimpleStatementLine) else None
            if assign is not None and len(assign.targets) == 1 and dotted(assign.targets[0].target) == name:
                value = assign.value
                through = value
                while isinstance(through, cst.Call) and isinstance(through.func, cst.Attribute) \
                        and isinstance(through.func.value, (cst.Call, cst.Attribute, cst.Name)):
                    through = through.func.value
                if dotted(through) == name and through is not value:
                    continue  # `self.model = self.model.to(device)`: what it held before
                return None if any(dotted(n) == name for n in mt.walk(value) if isinstance(n, cst.Attribute)) \
                    else value
            if _may_store(facts, stmt, name):
                return None
        child = anc
    return None


def _may_store(facts: Facts, stmt: cst.CSTNode, name: str) -> bool:
    """May `stmt` store `name` (`self.x`): an assignment to it anywhere in it, or a call that hands
    `self` on or calls a method of `self` (which may store it)."""
    for node in mt.walk(stmt):
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and any(
                dotted(n) == name for n in mt.walk(node.target) if isinstance(n, cst.Attribute)):
            return True
        if isinstance(node, cst.Call) and (any(mt.is_name(a.value, "self") for a in node.args) or isinstance(
                node.func, cst.Attribute) and mt.is_name(node.func.value, "self")):
            return True
    return False


def _returns_wrapper(facts: Facts, refs: dict[Ref, Model], answers: dict, value: cst.BaseExpression,
                     depth: int) -> bool:
    """Does `value`, a call of a function of the program, hand back what may be a wrapper? `model =
    trainer.train(3)`, rebinding the wrapped `model` to what a trainer's `train` returns (`return
    self.model`, the wrapper it was given): the name still holds the wrapper."""
    if not depth or not isinstance(value, cst.Call):
        return False
    return any(not _unwraps(facts, func) and _holds(facts, refs, answers, r, depth - 1)
               for func in facts.user_functions(value) for r in _returned_for(facts, func, value))


def _unwrapping(facts: Facts, value: cst.BaseExpression, name: str, depth: int = 2) -> bool:
    """`model.module`, `accelerator.unwrap_model(model)` (options by keyword too:
    `accelerator.unwrap_model(model, keep_fp32_wrapper=False)`), or a call of the program's own helper that
    hands back the bare model of the one it is given (`unwrap_model(unet)` of `def
    unwrap_model(model): model = accelerator.unwrap_model(model); model = model._orig_mod if
    is_compiled_module(model) else model; return model`): the bare model `name`'s wrapper holds.
    A method called on the bare model (`accelerator.unwrap_model(model).eval()`, `model.module.to(device)`)
    hands back no wrapper: it is read as the value it is called on."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
            isinstance(value.func.value, cst.Call) or dotted(value.func.value) == f"{name}.module"):
        value = value.func.value
    if dotted(value) == f"{name}.module":
        return True
    if not (isinstance(value, cst.Call) and value.args and _only_argument_by_position(value)
            and dotted(value.args[0].value) == name):
        return False
    if mt.is_method_call(value, "unwrap_model"):
        return True
    funcs = facts.user_functions(value) if depth > 0 else []
    return bool(funcs) and all(_returns_unwrapped(facts, func, value, depth - 1) for func in funcs)


def _only_argument_by_position(call: cst.Call) -> bool:
    """Is the call's first argument its only positional one, every other one a keyword
    (`unwrap_model(model, keep_fp32_wrapper=False)`)?"""
    first, *rest = call.args
    return first.keyword is None and not first.star and all(arg.keyword is not None for arg in rest)


def _returns_unwrapped(facts: Facts, func: cst.FunctionDef, call: cst.Call, depth: int) -> bool:
    """Does every `return` of `func` hand back the bare model of the argument `call` passes it:
    its parameter unwrapped there (`_unwrapping`), or the parameter after the function rebound it
    so (`unwrapped_before`)?"""
    param = next((p.name.value for p in (*func.params.posonly_params, *func.params.params)
                  if facts.argument_for(call, func, p.name.value) is call.args[0].value), None)
    returned = facts.returned(func)
    if param is None or not returned:
        return False
    for value in returned:
        ref = facts.ref(value) if mt.is_name(value, param) else None
        if not (_unwrapping(facts, value, param, depth) or ref is not None and unwrapped_before(facts, ref, value, depth)):
            return False
    return True


def unwrapped_before(facts: Facts, ref: Ref, expr: cst.BaseExpression, depth: int = 2) -> bool:
    """Has `expr`'s function rebound `ref` to its bare model before `expr` (`unet =
    accelerator.unwrap_model(unet)`, not under a test `expr` is outside of), rebinding it after that
    only to itself or a part of it (`model = model._orig_mod if compiled else model`: a part of the
    bare model is no wrapper)?"""
    rebound = [(value, stmt) for _, value, stmt in facts.writes(ref) if not isinstance(stmt, cst.AugAssign)
               and facts.scope(stmt) is facts.scope(expr) and facts.before(stmt, expr) and not facts.is_inside(expr, stmt)]
    last = max((i for i, (value, _) in enumerate(rebound) if _unwrapping(facts, value, ref.name, depth)), default=None)
    return last is not None and not _conditional_to(facts, rebound[last][1], expr) \
        and all(_part_of(value, ref.name) for value, _ in rebound[last + 1:])


def _part_of(value: cst.BaseExpression, name: str) -> bool:
    """`model`, `model._orig_mod`, either one picked by a test: the object `name` holds or a part of it."""
    if isinstance(value, cst.IfExp):
        return _part_of(value.body, name) and _part_of(value.orelse, name)
    return (dotted(value) or "").partition(".")[0] == name


def _unpacked_writes(facts: Facts, ref: Ref) -> list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]:
    """`model, opt = torch.load(f, weights_only=False)`: (target, the object it unpacks to, statement)
    for each unpacking that binds `ref`; the object is the element of a literal tuple, else what
    the whole value is made of (a reloaded whole model is not the wrapper)."""
    found: list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]] = []
    for value, path in facts._unpacking.get(ref, ()):
        stmt = facts.parent(value)
        if stmt is None:
            continue
        elements = facts._unpacked(value, path)
        tuples = [t.target for t in stmt.targets if isinstance(t.target, (cst.Tuple, cst.List))] \
            if isinstance(stmt, cst.Assign) else []
        target = next((part for t in tuples for part, at in unpacking_paths(t) if at == path), None)
        if target is not None:
            found += [(target, e, stmt) for e in elements] or [(target, value, stmt)]
    return found


@lru_cache(maxsize=4096)
def _expression(name: str) -> cst.BaseExpression:
    """`self.model` as an expression (built, not parsed: this runs for every question asked; an
    item wrapped where it lies, `self.models[i]`, parsed). Built once per name: a node is never
    changed, and one that is in no module is where its name is read only with an `at`
    (`Facts.ref(expr, at)`), which then finds the name kept from the last question."""
    if "[" in name:
        return cst.parse_expression(name)
    head, *rest = name.split(".")
    expr: cst.BaseExpression = cst.Name(head)
    for part in rest:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def is_wrap(facts: Facts, value: cst.CSTNode) -> bool:
    """Does `value` hand back a wrapper of the model it is given (`wrap_kind`: torch's, apex's or
    accelerate's)? The one answer for `convert` and `check` (`bare_model`)."""
    return wrap_kind(facts, value) is not None


def alone_in_its_group(facts: Facts, wrap: cst.Call) -> bool:
    """Is the DDP wrap `wrap` over a process group of one process: its `process_group=` (or the
    sixth positional argument) holds only groups `torch.distributed.new_group` made of a single
    rank (`new_group(ranks=[rank])`, each process a group of its own)? Its forward's buffer
    broadcast and its backward's all-reduce then reach no other process: no collective across
    processes, and no gradient averaged either.

        group = dist.new_group(ranks=[rank])
        model = DDP(net, device_ids=[rank], process_group=group)   # alone in its group
        model = DDP(net, device_ids=[rank])                        # the default group: not
    """
    arg = mt.keyword(wrap, "process_group") or mt.positional(wrap, 5)
    origins = facts.origins(arg.value) if arg is not None else []
    return bool(origins) and all(
        isinstance(o, cst.Call) and facts.qualify(o.func) == "torch.distributed.new_group"
        and _one_rank(facts, mt.keyword(o, "ranks") or mt.positional(o, 0)) for o in origins)


def _one_rank(facts: Facts, ranks: cst.Arg | None) -> bool:
    """A list or tuple of one rank, written there or bound to the name read (`[rank]`)."""
    if ranks is None:
        return False
    displays = [ranks.value] if isinstance(ranks.value, (cst.List, cst.Tuple)) else facts.origins(ranks.value)
    return bool(displays) and all(isinstance(d, (cst.List, cst.Tuple)) and len(d.elements) == 1
                                  and not isinstance(d.elements[0], cst.StarredElement) for d in displays)


def wrap_kind(facts: Facts, value: cst.CSTNode, depth: int = 2) -> str | None:
    """Which wrapper `value` hands back: DDP for `DDP(model, ...)` (torch's, or apex's
    `apex.parallel.DistributedDataParallel`, the same wrapper of `.module`, or pytorch-ignite's
    `idist.auto_model(model)`, torch's on several processes), ACCELERATE for Hugging
    Face accelerate's `accelerator.prepare(...)` / `prepare_model(...)` in a program that imports
    accelerate (on several processes, a DDP wrapper), or either for a call of a program function
    that returns one (`model = ddp_wrap(model, ctx)` of a project's helper: `return DDP(model,
    ...)`, maybe after `if not distributed: return model`, the one-process run, which `check` is
    not about); None for any other value.

        DDP(model, device_ids=[rank])          -> DDP
        DDPAsyncParameter(model)               -> DDP (the program's own DDP class: `own_wrapper_classes`)
        accelerator.prepare(model, opt)        -> ACCELERATE (accelerate imported)
        wrap(model)  (def wrap(m): return DDP(m))  -> DDP
        dataset.prepare(model)                 -> None (accelerate not imported)
    """
    if not isinstance(value, cst.Call):
        return None
    if facts.qualify(value.func) in (DDP, APEX_DDP, *IGNITE_AUTO_MODEL):
        return DDP
    if mt.is_method_call(value, *ACCELERATE_PREPARE) and facts.imports.imports_module("accelerate"):
        return ACCELERATE
    own = own_wrapper_classes(facts)
    if own and any(cls in own for cls in facts.built_classes(value)):
        return DDP  # `LM_DDP = DDPAsyncParameter(LM)`: the program's own DDP class
    if depth == 0:
        return None
    return next((kind for func in facts.user_functions(value) for r in facts.returned(func)
                 if (kind := wrap_kind(facts, r, depth - 1)) is not None), None)


def _wrapped_on_some_paths(facts: Facts, model: Model, ref: Ref, expr: cst.CSTNode) -> bool:
    """Does the wrap run on some of the paths to `expr` only (`if args.distributed: model =
    DDP(model)`), with no other wrap of the name on the remaining ones (`else: model =
    DDP(model, device_ids=None)`)? ddpify's own wraps never are: they go after the `if`."""
    if facts.scope(expr) is not facts.scope(model.anchor):
        return False
    wraps = [model.anchor, *(s for _, v, s in facts.writes(ref) if is_wrap(facts, v) and s is not model.anchor
                             and facts.scope(s) is facts.scope(expr) and facts.before(s, expr))]
    found = [_branch_of(facts, w, expr) for w in wraps]
    branches = [b for b in found if b is not None]
    if len(branches) < len(found):
        return False
    return not any(a[0] is b[0] and a[1] != b[1] for a in branches for b in branches)


def _branch_of(facts: Facts, stmt: cst.CSTNode, expr: cst.CSTNode) -> tuple[cst.CSTNode, bool] | None:
    """The innermost `if` or `try` around `stmt` that `expr` is not in, and whether `stmt` is in its
    body (None when there is none: `stmt` runs on every path to `expr`)."""
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            return None
        if isinstance(anc, (cst.If, cst.Try)) and not facts.is_inside(expr, anc):
            return anc, facts.is_inside(stmt, anc.body)
    return None


def _copies_wrap(facts: Facts, refs: dict[Ref, Model]) -> bool:
    """Is a copy of a wrapper (`copy.deepcopy(model)`) a wrapper? In a program that wraps its
    models itself, yes; a copy of a wrap ddpify places copies the module (unwrap-model). A
    question asked of no name (`_asked`) answers as for the wraps ddpify places, which are the
    only ones `_holds_own` asks it for. Read once per `refs` (held beside the answer, so that its
    id is not reused): `written` is set when a model is made, and `refs` never changes."""
    if isinstance(refs, _Asking):
        return False
    memo = facts.__dict__.setdefault("_copies_wrap", {})
    if id(refs) not in memo:
        memo[id(refs)] = (refs, any(model.written for model in refs.values()))
    return memo[id(refs)][1]


def _by_name(answers: dict, kind: str, ref: Ref, depth: int,
             find: Callable[[], Holds | None]) -> Holds | None:
    """What a question of `holds_wrapper` that reads the name only (`ref`, not the place it is read:
    `_alias_holds`, `_param_holds`, `_stored_holds`) answered for that name and depth, kept beside
    the answers by expression (`answers`): a name read at several places (`optimizer.zero_grad()`,
    `optimizer.step()`; a parameter handed on) was followed through its values, callers and stores
    once per read."""
    key = (kind, ref, depth)
    if key not in answers:
        answers[key] = find()
    return answers[key]


def _alias_holds(facts: Facts, refs: dict[Ref, Model], answers: dict, ref: Ref, depth: int) -> Holds | None:
    """MAYBE for a local name (not a parameter) of a function every value of which is a name that
    may hold a wrapper (`model, config = self.model, self.config`), or a copy of one
    (`best = copy.deepcopy(self.model)`): `unwrap(model)` takes either (once per name: `_by_name`)."""
    if not isinstance(ref.scope, cst.FunctionDef) or "." in ref.name or ref.name in param_names(ref.scope):
        return None
    return _by_name(answers, "alias", ref, depth, lambda: _alias_holds_uncached(facts, refs, answers, ref, depth))


def _alias_holds_uncached(facts: Facts, refs: dict[Ref, Model], answers: dict, ref: Ref, depth: int) -> Holds | None:
    copies = _copies_wrap(facts, refs)
    values = [_same_object(facts, value, copies) for value in facts.sources(ref)]
    if not values or not all(dotted(value) is not None for value in values):
        return None
    verdicts = {_holds(facts, refs, answers, value, depth - 1) for value in values}
    return MAYBE if verdicts <= {WRAPPER, MAYBE} else None


def _param_holds(facts: Facts, refs: dict[Ref, Model], answers: dict, ref: Ref, depth: int) -> Holds | None:
    """A parameter no wrap reaches by name holds what its callers pass: `save_model(model, ...)`
    in another module, given a `model` unpacked from `set_model()`'s returned tuple, where
    `set_model` wraps it (WRAPPER where every caller passes one, MAYBE where some may; once per
    name: `_by_name`)."""
    func = ref.scope
    if not isinstance(func, cst.FunctionDef) or ref.name not in param_names(func):
        return None
    return _by_name(answers, "param", ref, depth, lambda: _param_holds_uncached(facts, refs, answers, func, ref.name, depth))


def _param_holds_uncached(facts: Facts, refs: dict[Ref, Model], answers: dict, func: cst.FunctionDef, name: str,
                          depth: int) -> Holds | None:
    passed = [facts.argument_for(call, func, name) for call in facts.call_sites(func)]
    verdicts = {_holds(facts, refs, answers, arg, depth - 1) if arg is not None else None for arg in passed}
    return WRAPPER if verdicts == {WRAPPER} else MAYBE if verdicts & {WRAPPER, MAYBE} else None


def _stored_holds(facts: Facts, refs: dict[Ref, Model], answers: dict, ref: Ref, depth: int) -> Holds | None:
    """`self.model` of a class whose methods store another object's model into it (`self.model =
    trainer.model` in a visualizer's `__init__`, `trainer` an instance of the class that wraps its
    `self.model`): what every store gives it (WRAPPER where each gives the wrapper, MAYBE where some
    may; once per name: `_by_name`)."""
    if not isinstance(ref.scope, cst.ClassDef) or not ref.name.startswith("self."):
        return None
    return _by_name(answers, "stored", ref, depth, lambda: _stored_holds_uncached(facts, refs, answers, ref, depth))


def _stored_holds_uncached(facts: Facts, refs: dict[Ref, Model], answers: dict, ref: Ref, depth: int) -> Holds | None:
    copies = _copies_wrap(facts, refs)
    values = [_same_object(facts, value, copies) for _, value, stmt in facts.writes(ref)
              if not isinstance(stmt, cst.AugAssign)]
    values += field_defaults(facts, ref)  # an attrs field's `@net.default` method: what it returns
    verdicts = {_holds(facts, refs, answers, value, depth - 1) for value in values}
    return WRAPPER if verdicts == {WRAPPER} else MAYBE if verdicts & {WRAPPER, MAYBE} else None


def field_defaults(facts: Facts, ref: Ref) -> list[cst.BaseExpression]:
    """What the `@x.default` methods of an attrs class return for `self.x` (`ref`, of the class's
    topmost base): the value its generated `__init__` stores when none is given (`net = attrib()`
    with `@net.default def default_net(self): ... return net`, the model wrapped before the return)."""
    if not isinstance(ref.scope, cst.ClassDef) or not ref.name.startswith("self."):
        return []
    attr = ref.name.removeprefix("self.")
    return [value for funcs in facts.functions.values() for func in funcs
            if any(mt.is_attribute(d.decorator, "default") and mt.is_name(d.decorator.value, attr)  # type: ignore[attr-defined]
                   for d in func.decorators)
            and (cls := facts.enclosing_class(func)) is not None and facts._root_class(cls) is ref.scope
            for value in facts.returned(func)]


def _kept_holds(facts: Facts, refs: dict[Ref, Model], answers: dict, expr: cst.BaseExpression, depth: int) -> Holds | None:
    """`args.model` where the program stores a model into that attribute of the object (`args.model =
    net` on the namespace `train(args)` is handed, net wrapped before), or `state["model"]` of a dict
    display (`state = {"model": net, ...}`): what every such store gives it (ddpify.analysis.objects
    follows the object, not the name)."""
    if not isinstance(expr, (cst.Attribute, cst.Subscript)) or dotted(expr.value) in (None, "self"):
        return None
    copies = _copies_wrap(facts, refs)  # `state.model = model.to(DEVICE)`: the object `.to()` hands back, `model`
    verdicts = {_holds(facts, refs, answers, _same_object(facts, value, copies), depth - 1)
                for value in objects.of(facts).stored_into(expr)}
    return WRAPPER if verdicts == {WRAPPER} else MAYBE if verdicts & {WRAPPER, MAYBE} else None


def _returned_holds(facts: Facts, refs: dict[Ref, Model], answers: dict, ref: Ref, depth: int,
                    read: cst.BaseExpression | None = None) -> Holds | None:
    """MAYBE for a name bound to what a function of the program returns, where that may be a
    wrapper (`trained = train(net, loader)`, `train` wrapping its `model` and returning it):
    `unwrap(trained)` takes either. Also a name, or `self.x`, unpacked from the tuple such a
    function returns (`self.model, self.criterion, self.optimizer = get_model(args)`, `get_model`
    wrapping its `model` before `return model, criterion, optimizer`). Not by a binding that runs
    only after the `read` (`model = AutoModel(...)`; `model.kwargs`; ...; `model = trainer.wrap(model)`,
    or `model, opt = distributed_opt(model, opt)`)."""
    calls = [] if "." in ref.name else [value for value in facts.sources(ref) if isinstance(value, cst.Call)]
    unpacked = [(value, path) for value, path in facts._unpacking.get(ref, ()) if isinstance(value, cst.Call)]
    if not calls and not unpacked:
        return None
    later = {id(value) for _, value, stmt in facts.writes(ref) if read is not None and _only_after(facts, read, stmt)}
    funcs = [(func, value) for value in calls if id(value) not in later for func in facts.user_functions(value)
             if not _unwraps(facts, func) and not _wraps_left_out(facts, refs, func, value)]
    if any(_returns_its_wrap(facts, refs, func) for func, _ in funcs):
        return MAYBE
    returned = [r for func, value in funcs for r in _returned_for(facts, func, value)]
    returned += [e for value, path in unpacked if id(value) not in later
                 and not (read is not None and _only_after(facts, read, facts.statement(value)))
                 and not any(_unwraps(facts, func) for func in facts.user_functions(value)) for e in facts._unpacked(value, path)]
    return MAYBE if any(_holds(facts, refs, answers, r, depth - 1) for r in returned) else None


def _returns_its_wrap(facts: Facts, refs: dict[Ref, Model], func: cst.FunctionDef) -> bool:
    """Does `func` return a parameter that ddpify wraps in its body (`def fit(model, dm, ...)`, the
    wrap where `fit()` receives `model`, then `return model`): the caller's `net = fit(net, ...)`
    holds the wrapper, though the parameter is never rebound in the code as written (a notebook
    loaded the best checkpoint into it, `net.load_state_dict(torch.load(path))`, and failed on the
    wrapper's `module.` keys)."""
    return any(isinstance(r, cst.Name) and Ref(func, r.value) in refs for r in facts.returned(func))


def _returned_for(facts: Facts, func: cst.FunctionDef, call: cst.Call) -> list[cst.BaseExpression]:
    """What `func` returns to `call`: each returned expression (both branches of a conditional
    one), where a parameter the function never rebinds is what this call passes for it, else its
    default; not what other calls pass (`noise = default(noise, torch.randn_like(data))` of `def
    default(v, d): return v if exists(v) else d` is this call's `noise` or fresh noise, though
    another call is `default(self.ema_model, self.model)` with the prepared model)."""
    def of(value: cst.BaseExpression) -> list[cst.BaseExpression]:
        if isinstance(value, cst.IfExp):
            return [*of(value.body), *of(value.orelse)]
        if isinstance(value, cst.Name) and value.value in param_names(func) and not facts.writes(Ref(func, value.value)):
            given = facts.argument_for(call, func, value.value)
            if given is None and not any(a.star for a in call.args):
                given = next((p.default for p in (*func.params.params, *func.params.kwonly_params)
                              if p.name.value == value.value), None)
            return [given] if given is not None else [value]
        return [value]
    return [e for r in facts.returned(func) for e in of(r)]


def _wraps_left_out(facts: Facts, refs: dict[Ref, Model], func: cst.FunctionDef, call: cst.Call) -> bool:
    """Does `call` leave out every wrap `func` writes, each in a branch its constant arguments
    decide against (`get_model(conf, local_rank=-1)` of a factory that wraps under `if local_rank
    >= 0:`): it returns the bare model?"""
    anchors = [model.anchor for r, model in refs.items() if r.scope is func]
    return bool(anchors) and all(left_out(facts, anchor, func, call) for anchor in anchors)


def _passed_through(facts: Facts, refs: dict[Ref, Model], answers: dict, call: cst.Call, depth: int) -> Holds | None:
    """MAYBE for a call of a function of the program that returns a parameter it is given as it is,
    where the argument may be a wrapper (`get_module(model).state_dict()` of a `get_module` that
    unwraps DataParallel only), or that returns a name or an attribute of its own that may hold one
    (`fitter.trained().state_dict()` of a method that returns `self.__model`, which `fit(model, ...)`
    stored: the wrapper it was handed); None for the program's unwrap helper (`_unwraps`)."""
    funcs = facts.user_functions(call)
    if not funcs or any(_unwraps(facts, func) for func in funcs):
        return None
    returned = [(func, r) for func in funcs for r in facts.returned(func)]
    passed = [facts.argument_for(call, func, r.value) for func, r in returned
              if isinstance(r, cst.Name) and r.value in param_names(func)]
    own = [r for func, r in returned if isinstance(r, cst.Attribute) and dotted(r)
           or isinstance(r, cst.Name) and r.value not in param_names(func)]
    return MAYBE if any(_returns_its_wrap(facts, refs, func) for func in funcs) \
        or any(p is not None and _holds(facts, refs, answers, p, depth - 1) for p in passed) \
        or any(_holds(facts, refs, answers, r, depth - 1) for r in own) else None


def unwraps(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` the program's unwrap helper (`_unwraps`): what a call of it returns is the bare
    model, never the DDP wrapper?"""
    return _unwraps(facts, func)


def _unwraps(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` the program's unwrap helper: it takes `.module` of its parameter (`return
    model.module`, `model = model.module` in a loop until no wrapper is left), not only under a test
    that a DistributedDataParallel wrapper fails (`if isinstance(m, nn.DataParallel): return
    m.module`: the DDP wrapper is returned as it is)? Answered once per function (it is asked for
    every call of the function that `holds_wrapper` follows)."""
    memo = facts.__dict__.setdefault("_unwraps", {})
    if func not in memo:
        memo[func] = _takes_module(facts, func)
    return memo[func]


def _takes_module(facts: Facts, func: cst.FunctionDef) -> bool:
    """`_unwraps`, not memoised. The `.module` taken is of a parameter (`model.module`) or of what
    the function reads through one (`self.model.module` of a trainer's `_get_model(self)`, which
    returns it `if hasattr(self.model, "module")` and `self.model` otherwise: decision 0228)."""
    params = {p.name.value for p in func.params.params}
    values = [*facts.returned(func), *(v for _, v, _ in facts.writes_in(func))]
    return any(isinstance(a, cst.Attribute) and a.attr.value == "module" and _read_through(a.value, params)
               and not _not_for_ddp(facts, a, dotted(a.value) or "")
               for v in values for a in (v, *facts.findall(v, cst.Attribute)))  # `return get_module(m.module)` too


def _read_through(expr: cst.BaseExpression, params: set[str]) -> bool:
    """Is `expr` a parameter, or a dotted read off one (`self.model`, `self.nets.g`)?"""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value in params


def _not_for_ddp(facts: Facts, node: cst.CSTNode, param: str) -> bool:
    """Is `node` in the body of `if isinstance(param, X):` of its function (`param` a parameter or
    a dotted read off one, `self.model`), where X names only classes a DistributedDataParallel
    wrapper is no instance of: DataParallel, a class of the program not derived from
    DistributedDataParallel?"""
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            return False
        test = anc.test if isinstance(anc, cst.If) and facts.is_inside(node, anc.body) else None
        if isinstance(test, cst.Call) and mt.is_call_of(test, "isinstance") and len(test.args) == 2 \
                and dotted(test.args[0].value) == param:
            kinds = test.args[1].value
            classes = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
            return all((facts.qualify(c) or "").rsplit(".", 1)[-1] == "DataParallel" or _program_class_not_ddp(facts, c)
                       for c in classes)
    return False


def _program_class_not_ddp(facts: Facts, expr: cst.BaseExpression) -> bool:
    cls = facts.classes.get((dotted(expr) or "").rpartition(".")[2])
    return cls is not None and not any((dotted(b.value) or "").endswith("DistributedDataParallel") for b in cls.bases)


def _only_after(facts: Facts, read: cst.CSTNode, stmt: cst.CSTNode) -> bool:
    """Does `stmt` run only after `read`: later in the same function, no loop around both?"""
    return facts.scope(stmt) is facts.scope(read) and facts.before(read, stmt) and not any(
        facts.is_inside(stmt, loop) for loop in facts.enclosing_loops(read))


def _instance_attribute(facts: Facts, refs: dict[Ref, Model], expr: cst.Attribute) -> list[Ref]:
    """`self.x` of the class of the program `obj` of `obj.x` is an instance of (ddpify.analysis.objects),
    when that attribute holds a wrapper; or, where `obj` is a class of the program itself (a
    configuration class handed over whole, `Runner(Config)`, read as `self.cfg.model`), the `x` its
    body binds, when the wrap is there (`class Config: model = Net()`, wrapped in the class body).
    Where `obj` may be an instance of several classes (`model = model_cls(params=params)`, `model_cls`
    taken from a registry of classes: `objects.classes_built`), the `self.x` of each that binds it,
    when one of them holds a wrapper: the read holds what each may."""
    flow = objects.of(facts)
    found: list[Ref] = []
    for site in flow.values(expr.value):
        if isinstance(site, cst.ClassDef):
            bound = [ref for ref, model in refs.items() if ref.name == expr.attr.value
                     and facts.enclosing_class(model.anchor) is site and facts.scope(model.anchor) is not None
                     and not isinstance(facts.scope(model.anchor), cst.FunctionDef)]
            if bound and not found:
                return bound[:1]
            continue
        found += [Ref(facts._root_class(cls), f"self.{expr.attr.value}") for cls in flow.classes_built(site)]
    found = list(dict.fromkeys(found))
    wrapped = [ref for ref in found if ref in refs or field_defaults(facts, ref)]  # an attrs field set by its default method
    if len(wrapped) < 2 and len({r.scope for r in found}) < 2:
        return wrapped[:1]
    return [ref for ref in found if ref in wrapped or facts.writes(ref)] if wrapped else []


def _object_holds(facts: Facts, refs: dict[Ref, Model], expr: cst.BaseExpression, ref: Ref) -> Holds | None:
    """MAYBE for a local name the name-based flow cannot see into, bound only by `getattr(...)`,
    an item or a loop over a container (`net = getattr(self, "net" + name)`, `for net in
    [self.G, self.D]:`), when the object core finds it may hold a model that is wrapped."""
    if not isinstance(expr, cst.Name) or not isinstance(ref.scope, cst.FunctionDef) or \
            ref.name in param_names(ref.scope):
        return None
    flow = objects.of(facts)
    sources = facts.sources(ref)
    unseen = all(isinstance(s, cst.Subscript) or isinstance(s, cst.Call) and dotted(s.func) == "getattr"
                 for s in sources) and (sources or flow.loop_bound(ref))
    if not unseen:
        return None  # names and calls: the name-based flow answers
    wrapped = frozenset().union(*(_made(facts, m) for m in {id(m): m for m in refs.values()}.values()))
    return MAYBE if flow.values(expr) & wrapped else None


def _made(facts: Facts, model: Model) -> frozenset:
    """The objects a model wrapped where it is built is made from (none for a model wrapped where a
    function receives it: its callers keep the bare one)."""
    if isinstance(model.defined, cst.FunctionDef):
        return frozenset()
    home = facts.ref(_expression(model.name), model.anchor)
    if home is None:
        return frozenset()
    flow = objects.of(facts)
    stored = [value for value in facts.set_by_name(home) if facts.is_inside(value, model.defined)]  # `setattr(self, ...)`
    return frozenset().union(*(flow.values(value) for _, value, stmt in [*facts.writes(home), *_unpacked_writes(facts, home)]
                               if facts.is_inside(stmt, model.defined)),  # `gen, dis = Generator(z), Discriminator()` too
                             *(flow.values(value) for value in stored))


def _binding_at(facts: Facts, model: Model, expr: cst.CSTNode) -> Model | None:
    """Of the wraps of one name in one function (a model rebuilt and trained again), the last
    one before `expr`: the binding `expr` reads."""
    seen = [m for m in model.rebuilds or [model] if m.sees_wrapper(facts, expr)]
    return max(seen, key=lambda m: facts.spans[m.anchor][0], default=None)


def _keeps_binding(facts: Facts, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """`model = model.to(device)`, `model = train(model, ...)` (which returns its argument),
    `model = setup_objects.model` at the top level of another file than `setup_objects.py`'s (the
    name that module binds, which the program's modules share: `Facts.module_attribute`): the name
    still holds what it held.

    Before, `import setup_objects` then `model = setup_objects.model` in the entry, the module
    wrapping its `model` at its top level, read as a rebinding of the wrapped `model` to what
    ddpify could not tell: the entry's `torch.save(model.state_dict(), ...)` kept the wrapper's
    `module.` keys (decision 0174's fx7, the `from setup_objects import model` spelling fixed
    there; 0191)."""
    name = dotted(target)
    if isinstance(value, cst.Attribute) and isinstance(target, cst.Name):
        held = facts.module_attribute(value)
        return held is not None and held == facts.ref(target)
    if not isinstance(value, cst.Call) or name is None:
        return False
    if isinstance(value.func, cst.Attribute) and dotted(value.func.value) == name:
        return value.func.attr.value in ("to", "cuda", "cpu", "train", "eval", "float", "half", "requires_grad_")
    funcs = facts.user_functions(value)
    return bool(funcs) and all(
        r and all(isinstance(v, cst.Name) and dotted(facts.argument_for(value, f, v.value) or cst.Name("_")) == name
                  for v in r)
        for f in funcs for r in [facts.returned(f)])


def _may_run_between(facts: Facts, model: Model, stmt: cst.CSTNode, expr: cst.CSTNode) -> bool:
    """May the assignment `stmt` run after the wrap and before `expr` reads the name?"""
    if facts.scope(stmt) is not facts.scope(model.anchor):
        return True  # another function: when it runs is not known here
    if not model.sees_wrapper(facts, stmt) or facts.is_inside(expr, stmt):
        return False  # the set-up before the wrap, or the very statement that reads it
    if facts.scope(expr) is not facts.scope(stmt):
        return True
    return facts.before(stmt, expr) or _in_same_loop(facts, stmt, expr)


def _conditional_to(facts: Facts, stmt: cst.CSTNode, expr: cst.CSTNode) -> bool:
    """Does `stmt` run only on some paths that reach `expr` (under an `if`, a loop, a `try`
    that `expr` is not in)?"""
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            return False
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.Try, cst.With)) and not facts.is_inside(expr, anc):
            return True
    return False


def _in_same_loop(facts: Facts, stmt: cst.CSTNode, expr: cst.CSTNode) -> bool:
    """Is there a loop around both (a later rebinding is seen by the next iteration)?"""
    return any(isinstance(a, (cst.For, cst.While)) and facts.is_inside(stmt, a) for a in facts.ancestors(expr))


TENSORS = frozenset(f"torch.{f}" for f in (
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "rand", "randn", "arange", "linspace",
    "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like"))
PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def bare_tensors(facts: Facts, optimizer: cst.CSTNode) -> cst.BaseExpression | None:
    """What an optimizer is given where every tensor in it is made by a tensor factory of torch
    (`torch.zeros(1, requires_grad=True)`, `torch.tensor(x)`, moved or not) or is an
    `nn.Parameter(...)` no module registers: no module holds it, so no wrapper would sync it. Either
    a list of them (`Adam([self.log_alpha], lr=lr)`) or the values of a dict that holds them
    (`Adam(self.weights.values())` over `weights[f"w{i}"] = nn.Parameter(...)`, a plain dict
    attribute of a module: `_dict_of_tensors`). None for anything else. A name the module's top
    level binds again after the optimizer is built (a notebook's `x` drawn anew for a plot) is the
    tensor its last binding before that holds (`_bound_last`)."""
    arg = (mt.positional(optimizer, 0) or mt.keyword(optimizer, "params")) if isinstance(optimizer, cst.Call) else None
    if arg is None:
        return None
    if not isinstance(arg.value, (cst.List, cst.Tuple)):
        return arg.value if _dict_of_tensors(facts, arg.value, optimizer) else None
    if not arg.value.elements:
        return None
    flow = objects.of(facts)
    for element in arg.value.elements:
        sites = flow.values(element.value) if isinstance(element, cst.Element) else None
        if not sites or not all(_tensor_made(facts, s) for s in sites):
            if not isinstance(element, cst.Element) or not _tensor_made(facts, _bound_last(facts, element.value, optimizer)):
                return None
    return arg.value


def _dict_of_tensors(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """`weights.values()` (or `list(weights.values())`) of a dict every item of which is a tensor
    made by a factory of torch or an `nn.Parameter(...)`: an `OrderedDict` a meta-learner fills
    under computed keys (`weights[f"w{i}"] = Parameter(...)`) and keeps as a plain attribute, which
    registers none of them. The dict is what its name holds where the optimizer is built: the
    last binding of that name (`self.weights = self.build()`) before it in the same function, not
    a later one (a test pass's `self.weights = torch.load(...)["weights"]`)."""
    if isinstance(expr, cst.Call) and mt.is_name(expr.func, "list") and len(expr.args) == 1 and not expr.args[0].star:
        expr = expr.args[0].value
    if not (isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "values"):
        return False
    flow = objects.of(facts)

    def made(site: cst.CSTNode) -> bool:
        return _tensor_made(facts, site) or isinstance(site, cst.Call) and facts.qualify(site.func) in PARAMETERS

    def made_each(values: Iterable[cst.CSTNode]) -> bool:
        values = list(values)
        return bool(values) and all(made(v) for v in values)

    sites = flow.values(_held_at(facts, expr.func.value, at))
    return bool(sites) and all(  # a dict display written out: each of its values made so
        made_each(v for e in s.elements if isinstance(e, cst.DictElement) for v in flow.values(e.value) or [e.value])
        and all(isinstance(e, cst.DictElement) for e in s.elements) if isinstance(s, cst.Dict) else made(s)
        for s in sites)


def _held_at(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode) -> cst.BaseExpression:
    """The value of the last assignment of `expr` (a name or `self.x`) before `at` in `at`'s
    function, where that assignment is a statement of the function's own body (no branch, no loop
    around it); `expr` itself otherwise."""
    name, scope, line = dotted(expr), facts.scope(at), facts.statement(at)
    if name is None:
        return expr
    earlier = [(value, stmt) for target, value, stmt in facts.assigns
               if dotted(target) == name and facts.scope(stmt) is scope and facts.before(stmt, line)]
    last = max(earlier, key=lambda pair: facts.spans[pair[1]][0], default=None)
    if last is None or facts.parent(facts.statement(last[1])) is not facts.parent(line) or isinstance(last[0], cst.Call) \
            and facts.qualify(last[0].func) in ("collections.OrderedDict", "dict"):
        return expr  # (an empty dict made there: the name holds what the program stores into it)
    return last[0]


def _tensor_made(facts: Facts, site: cst.CSTNode | None) -> bool:
    return isinstance(site, cst.Call) and facts.qualify(site.func) in TENSORS


def _bound_last(facts: Facts, name: cst.BaseExpression, at: cst.CSTNode) -> cst.BaseExpression | None:
    """What a name holds at `at`, a statement of the module's top level (run once, in order): the
    value of its last assignment before `at`, where every assignment before it is a top-level
    statement too (none in a loop or branch); None otherwise. `x = torch.tensor([0.0],
    requires_grad=True)`, `SGD([x], lr=0.1)`, then `x = torch.linspace(0, 10, 30)` in a later cell:
    `torch.tensor(...)`."""
    line = facts.statement(at)
    ref = facts.ref(name) if isinstance(name, cst.Name) else None
    if ref is None or facts.parent(line) is not facts.module:
        return None
    earlier = [(value, stmt) for _, value, stmt in facts.writes(ref) if facts.before(stmt, line)]
    if not earlier or any(facts.parent(facts.statement(stmt)) is not facts.module for _, stmt in earlier):
        return None
    return max(earlier, key=lambda pair: facts.spans[pair[1]][0])[0]


PARAMETER_READS = frozenset({"parameters", "named_parameters"})


def thrown_away(facts: Facts, wrap: cst.Call) -> str | None:
    """How the wrapper a wrap builds is thrown away as soon as it is made, so that no forward can
    run through it (and no gradient is averaged): its `.module` taken in the same expression
    (`self.model = DDP(self.model, ...).module`), its parameters read there and nothing else
    (`SGD(DDP(model).parameters())`), or handed to a function of the program that reads only its
    parameters (`get_grouped_parameters(DDP(model, ...))`, whose parameter `model` is read only as
    `model.named_parameters()` / `model.parameters()`); None where anything may keep it."""
    up = facts.parent(wrap)
    if isinstance(up, cst.Attribute) and up.value is wrap:
        return f"`.{up.attr.value}`" if up.attr.value == "module" or up.attr.value in PARAMETER_READS \
            and _called_attribute(facts, up) else None
    if not isinstance(up, cst.Arg) or up.keyword is not None or up.star or not isinstance(call := facts.parent(up), cst.Call):
        return None
    funcs = facts.user_functions(call)
    if not funcs or len(funcs) > 1:
        return None
    func = funcs[0]
    index = next(i for i, a in enumerate(call.args) if a is up)
    params = [p for p in (*func.params.posonly_params, *func.params.params)]
    if isinstance(call.func, cst.Attribute) and facts.enclosing_class(func) is not None and params:
        params = params[1:]  # `self`
    if index >= len(params):
        return None
    name = params[index].name.value
    reads = [n for n in facts.findall(func.body, cst.Name, lambda n: n.value == name)]
    def read_for_parameters(n: cst.Name) -> bool:
        attr = facts.parent(n)
        return isinstance(attr, cst.Attribute) and attr.value is n and attr.attr.value in PARAMETER_READS \
            and _called_attribute(facts, attr)
    if reads and all(read_for_parameters(n) for n in reads):
        return f"`{func.name.value}()`, which reads only its parameters"
    return None


def _called_attribute(facts: Facts, attr: cst.Attribute) -> bool:
    """Is `attr` the function a call calls (`model.parameters()`)?"""
    call = facts.parent(attr)
    return isinstance(call, cst.Call) and call.func is attr
