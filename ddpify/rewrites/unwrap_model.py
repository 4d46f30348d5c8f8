"""unwrap-model: reach the user's own module behind the DistributedDataParallel wrapper.

    hidden = model.init_hidden(bsz)           ->  hidden = model.module.init_hidden(bsz)
    loss = criterion(out.view(-1, model.ntoken))  ->  ... model.module.ntoken ...
    torch.save(model.state_dict(), path)      ->  torch.save(model.module.state_dict(), path)
    torch.save(model, path)                   ->  torch.save(model.module, path)
    torch.jit.trace(model, x)                 ->  torch.jit.trace(model.module, x)
    head = model[-1]                          ->  head = model.module[-1]
    n = len(model)                            ->  n = len(model.module)
    ema = copy.deepcopy(model)                ->  ema = copy.deepcopy(model.module)
    isinstance(model, Net)                    ->  isinstance(model.module, Net)
    name = type(model).__name__               ->  name = type(model.module).__name__
    layer = getattr(model, f"layer{i}")       ->  layer = getattr(model.module, f"layer{i}")
    hasattr(model, "num_layers")              ->  hasattr(model.module, "num_layers")
    model.load_state_dict(best_weights)       ->  model.module.load_state_dict(best_weights)

Tracing and exporting (`torch.jit.trace`, `torch.onnx.export`, `torch.export.export`, a
SummaryWriter's `add_graph`) get the module too: tracing the wrapper fails on its process group.
DDP answers nn.Module's own API (forward, train(), eval(), parameters(), to(), ...) but not
the model's custom methods and attributes. The names of its modules and parameters
(`named_modules()`, `named_parameters()`, `named_children()`, `named_buffers()`) are read from
the model itself, as the single-GPU script named them (`for name, layer in
model.named_modules(): if name in layers_to_hook:`, or `dict(model2.named_parameters())` in a
function handed the wrapper, paired with an EMA copy's): the wrapper's all start with `module.`. So is its module tree (`modules()`, `children()`):
the wrapper's holds the wrapper itself and the model as its one child, so a walk paired with another
model's (`for a, b in zip(theta.modules(), phi.modules()):`) would pair the wrong layers. State dicts go through the module so checkpoints
keep the single-GPU key names (no `module.` prefix) and load into a plain model. Only uses
that see the wrapper change: after the wrap in its own function, in functions the wrapped
model is passed to, and `self.x` in the class's methods. Where the name may hold the bare
model too (rebound after the wrap: `model = torch.load(path)`, `model = model.module`; a
parameter that some callers pass the wrapper and others the model), the use goes through the
runtime's `unwrap(...)`, which accepts both:

    model = torch.load("best.pt")             ->  model = torch.load("best.pt")
    model.init_hidden(1)                      ->  unwrap(model).init_hidden(1)

A script that used `nn.DataParallel` saved checkpoints with `module.` keys; the converted one
saves without them, and loads both:

    model.load_state_dict(ckpt["model"])      ->  model.module.load_state_dict(without_module_prefix(ckpt["model"]))

Its own code that unwraps the DataParallel it made takes the wrapper that replaced it too (an EMA
helper that registers the bare model's parameter names and updates through the wrapper):
`isinstance(module, nn.DataParallel)` becomes `isinstance(module, (nn.DataParallel,
DistributedDataParallel))`, and `module = module.module` then unwraps either; so does a comparison
of its type (a callback that saves `model[i].module` when `type(model[i]) == nn.DataParallel`):
`type(m) == nn.DataParallel` becomes `type(m) in (nn.DataParallel, DistributedDataParallel)`.

With `--strategy fsdp` the model keeps its class (FSDP2 has no `.module`: custom attributes stay
as written, a DataParallel script's `model.module.x` becomes `model.x`), and its state dicts are
sharded, so checkpoints go through full state dicts, gathered and loaded by every rank:

    model.state_dict()                        ->  full_state_dict(model)
    optimizer.state_dict()                    ->  full_optimizer_state_dict(model, optimizer)
    model.load_state_dict(ckpt["model"])      ->  load_full_state_dict(model, ckpt["model"])
    optimizer.load_state_dict(ckpt["opt"])    ->  load_full_optimizer_state_dict(model, optimizer, ckpt["opt"])

The file stays the plain state dict the single-GPU script writes and loads (main-process-only
keeps the gathers on every rank and only the write on the main process). Loads in the model's
set-up, before the sharding, stay as written. Pickling a whole sharded model gets a TODO.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from ddpify.output import build
from ddpify.analysis import fsdp, objects
from ddpify.syntax import matchers as mt
from ddpify.analysis.models import WRAPPER, Holds, holds_wrapper
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from collections.abc import Callable

    from ddpify.analysis.result import Analysis
    from ddpify.analysis.models import Model, Models
    from ddpify.syntax.facts import Facts, Ref
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "unwrap-model"
SUMMARY = "send custom attributes and state_dict()/load_state_dict() of wrapped models through .module"
REQUIRES = frozenset({"wrap-model"})  # `.module` is the wrapper's: selected with it, skipped without it

STATE = {"state_dict", "load_state_dict"}
COPIES = frozenset({"copy.deepcopy", "copy.copy"})  # a copy of the model is bare: of the module, not the wrapper
TRACERS = frozenset({"torch.jit.trace", "torch.jit.trace_module", "torch.jit.script", "torch.onnx.export",
                     "torch.onnx.dynamo_export", "torch.export.export"})


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts, refs = analysis.facts, analysis.models.refs
    if not refs:
        return
    if options.fsdp:
        _full_state_dicts(facts, analysis.models, refs, edits)
        return
    _custom_attributes(facts, refs, edits)
    _dataparallel_loads(facts, refs, edits)
    if any(model.dataparallel is not None for model in refs.values()):
        _dataparallel_tests(facts, edits)
        _dataparallel_type_tests(facts, edits)
    for value in _container_reads(facts):  # `model[-1]`, `for layer in model:`: DDP is no container
        _give_bare_model(facts, refs, edits, value, lambda bare: (
            f"the layers of `{bare}`, read as a container's items: the DistributedDataParallel wrapper is neither "
            "subscriptable nor iterable"))
    for call, tested in _tested_models(facts):
        _give_bare_model(facts, refs, edits, tested, lambda bare: (
            f"`{dotted(call.func)}` tests `{bare}`, the model itself: the DistributedDataParallel wrapper is not of "
            "the model's class and has none of its attributes"))
    given: set[int] = set()  # a dict item stored once and saved by two calls (last.pt, best.pt) is edited once
    for call in facts.calls_to("torch.save"):  # `torch.save(model, path)` would pickle the wrapper
        saved = mt.positional(call, 0)
        if saved is not None:
            for value in _saved_models(facts, saved.value):
                if id(value) in given:
                    continue
                given.add(id(value))
                _give_bare_model(facts, refs, edits, value, lambda bare: (
                    f"torch.save saves `{bare}`, the model itself: a pickled DistributedDataParallel would not load "
                    "without a process group"), any_value=True)
    for call, typed in _typed_models(facts):  # `type(model).__name__` in a file name, `type(model)(cfg)`
        _give_bare_model(facts, refs, edits, typed, lambda bare: (
            f"`type({bare})`, the model's class as the single-GPU script names it: the wrapper's is "
            "DistributedDataParallel"))
    for call, traced in _traced_models(facts):
        _give_bare_model(facts, refs, edits, traced, lambda bare: (
            f"`{dotted(call.func)}` traces `{bare}`, the model itself: tracing the DistributedDataParallel wrapper "
            "fails on its process group"))
    for call in facts.calls_to(*COPIES):  # `self.shadow = copy.deepcopy(model)` would copy the wrapper: a second DDP
        copied = mt.positional(call, 0)
        if copied is not None and len(call.args) == 1:
            _give_bare_model(facts, refs, edits, copied.value, lambda bare: (
                f"`{dotted(call.func)}` copies `{bare}`, the model itself: a copy of the DistributedDataParallel "
                "wrapper is a second wrapper, whose forward is a collective of its own"))


def _custom_attributes(facts: Facts, refs: dict[Ref, Model], edits: Edits) -> None:
    """`model.x` of a custom attribute, `state_dict()` or `load_state_dict()` -> through the bare model."""
    for attr in facts.attributes:
        name = attr.attr.value
        if name in mt.MODULE_API and name not in STATE | NAMING | TREE | CLASS or _module_path(facts, attr) \
                or name in CLASS and _compared_to_torch(facts, attr):
            continue
        attr = _through_self_returning(attr)  # `model.cpu().state_dict` -> `model.cpu`: the wrapper's own `cpu()`
        if facts.library_callee(attr.value):
            continue  # `torch.nn.Linear`, `np.random.seed`: a name only a library's import binds holds no model
        holds = holds_wrapper(facts, refs, attr.value)  # `model.x`, not `model.fc.x`
        if holds is None:
            continue
        owner = facts.code(attr.value)
        why = "checkpoint keys stay as in the single-GPU script" if name in STATE else \
            "the names stay as in the single-GPU script: the wrapper's start with `module.`" if name in NAMING else \
            "the modules stay as in the single-GPU script: the wrapper's are itself and the model" if name in TREE else \
            "the model's class, as the single-GPU script names it: the wrapper's is DistributedDataParallel" if name in CLASS else \
            "DistributedDataParallel does not forward custom attributes"
        edits.replace(attr, partial(_through_bare_model, edits, holds is WRAPPER),
                      f"`{owner}.{name}` -> `{_bare_text(owner, holds)}.{name}` ({why})")


def _through_self_returning(attr: cst.Attribute) -> cst.Attribute:
    """`model.cpu().state_dict` -> `model.cpu`, the attribute whose value may be the wrapper:
    nn.Module's methods that return the module they are called on (`cpu()`, `to(device)`,
    `eval()`, `float()`, ...) return the wrapper when called on it, so `model.cpu().state_dict()`
    is the wrapper's state dict (keys that start with `module.`), as `model.state_dict()` is. The
    bare model goes in front of the chain: `model.module.cpu().state_dict()`."""
    while isinstance(call := attr.value, cst.Call) and isinstance(call.func, cst.Attribute) and \
            call.func.attr.value in mt.SELF_RETURNING - {"__iter__"}:
        attr = call.func
    return attr


def _module_path(facts: Facts, attr: cst.Attribute) -> bool:
    """Is `attr` a dotted module name of an import (`import model.net as net`, the project's package
    `model/`), not a value, whatever a name of the same spelling holds elsewhere?"""
    node: cst.CSTNode | None = attr
    while isinstance(node, cst.Attribute):
        node = facts.parent(node)
    return isinstance(node, (cst.ImportAlias, cst.ImportFrom))


def _dataparallel_loads(facts: Facts, refs: dict[Ref, Model], edits: Edits) -> None:
    """`model.load_state_dict(sd)` of a DataParallel script -> `load_state_dict(without_module_prefix(sd))`:
    its old checkpoints have `module.` keys."""
    for call in facts.calls_named("load_state_dict"):
        if mt.is_method_call(call, "load_state_dict") and call.args and isinstance(call.func, cst.Attribute):
            ref = facts.ref(call.func.value)
            model = refs.get(ref) if ref is not None else None
            if model is not None and model.dataparallel is not None:
                edits.replace(call.args[0], lambda arg: arg.with_changes(value=build.call("without_module_prefix",
                                                                                          arg.value)),
                              "checkpoints of the DataParallel script have `module.` keys: without_module_prefix "
                              "loads them as well as the new ones")
                edits.add_import("ddpify_runtime", "without_module_prefix")


def _dataparallel_tests(facts: Facts, edits: Edits) -> None:
    """`isinstance(m, nn.DataParallel)` (or a tuple naming it) -> `isinstance(m, (nn.DataParallel,
    DistributedDataParallel))`, in a program whose DataParallel became DistributedDataParallel."""
    for call in facts.calls_named("isinstance"):
        second = mt.positional(call, 1)
        if second is None or not mt.is_name(call.func, "isinstance"):
            continue
        tested = second.value
        classes = [e.value for e in tested.elements] if isinstance(tested, cst.Tuple) else [tested]
        named = {facts.qualify(c) for c in classes}
        if "torch.nn.DataParallel" not in named or "torch.nn.parallel.DistributedDataParallel" in named:
            continue
        edits.replace(second.value, _with_ddp, f"`{facts.code(call)}` also takes the DistributedDataParallel that "
                      "replaced the DataParallel")
        edits.add_import("torch.nn.parallel", "DistributedDataParallel")


# `type(m) == nn.DataParallel` -> `type(m) in (nn.DataParallel, DistributedDataParallel)`; `!=` -> `not in`
_TYPE_TESTS = {cst.Equal: cst.In, cst.Is: cst.In, cst.NotEqual: cst.NotIn, cst.IsNot: cst.NotIn}


def _dataparallel_type_tests(facts: Facts, edits: Edits) -> None:
    """`type(m) == nn.DataParallel` (`is`, `!=`, `is not`) -> `type(m) in (nn.DataParallel,
    DistributedDataParallel)` (`not in`), in a program whose DataParallel became
    DistributedDataParallel: pettod/pytorch-template's callback saves `model[i].module` when
    `type(model[i]) == nn.DataParallel`, else `model[i]`, which then saved the DDP wrapper
    (`module.` keys)."""
    for node in facts.by_type.get(cst.Comparison, ()):
        assert isinstance(node, cst.Comparison)
        if len(node.comparisons) != 1 or type(node.comparisons[0].operator) not in _TYPE_TESTS \
                or not (isinstance(node.left, cst.Call) and mt.is_name(node.left.func, "type") and len(node.left.args) == 1) \
                or facts.qualify(node.comparisons[0].comparator) != "torch.nn.DataParallel":
            continue
        edits.replace(node, _in_ddp, f"`{facts.code(node)}` also takes the DistributedDataParallel that replaced the "
                      "DataParallel")
        edits.add_import("torch.nn.parallel", "DistributedDataParallel")


def _in_ddp(node: cst.Comparison) -> cst.Comparison:
    target = node.comparisons[0]
    operator = _TYPE_TESTS[type(target.operator)]()
    return node.with_changes(comparisons=[target.with_changes(operator=operator, comparator=_with_ddp(target.comparator))])


def _with_ddp(node: cst.BaseExpression) -> cst.Tuple:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    elements = [e.with_changes(comma=comma) for e in node.elements] if isinstance(node, cst.Tuple) else \
        [cst.Element(node, comma=comma)]
    return cst.Tuple([*elements, cst.Element(cst.Name("DistributedDataParallel"))])


def _give_bare_model(facts: Facts, refs: dict[Ref, Model], edits: Edits, value: cst.BaseExpression,
                     why: Callable[[str], str], any_value: bool = False) -> None:
    """`value` -> the bare model where it holds the wrapper (a dotted name, or `any_value`)."""
    holds = holds_wrapper(facts, refs, value) if any_value or dotted(value) else None
    if holds is not None:
        edits.replace(value, partial(build.bare_model, edits, proven=holds is WRAPPER),
                      why(_bare_text(dotted(value) or facts.code(value), holds)))


def _through_bare_model(edits: Edits, proven: bool, attr: cst.Attribute) -> cst.Attribute:
    """`model.x` -> `model.module.x` (`proven` to hold the wrapper), else `unwrap(model).x`."""
    return attr.with_changes(value=build.bare_model(edits, attr.value, proven))


def _parsed(code: str, node: cst.CSTNode) -> cst.BaseExpression:
    """What replaces `node`: `code`, as an expression."""
    return cst.parse_expression(code)


def _traced_models(facts: Facts) -> list[tuple[cst.Call, cst.BaseExpression]]:
    """(call, model argument) of the calls that trace or export a module: `torch.jit.trace(model,
    x)`, `torch.onnx.export(model, ...)`, `torch.export.export(model, ...)`, `writer.add_graph(model,
    x)` on a SummaryWriter. They run the module outside DDP's forward (tracing the wrapper fails on
    its process group) and must be given the module itself."""
    found = []
    for call in facts.calls:
        traced = mt.positional(call, 0) or mt.keyword(call, "model") or mt.keyword(call, "mod")
        if traced is None:
            continue
        if facts.qualify(call.func) in TRACERS or mt.is_method_call(call, "add_graph") and \
                isinstance(call.func, cst.Attribute) and objects.of(facts).of_kind(call.func.value, objects.WRITER):
            found.append((call, traced.value))
    return found


def _typed_models(facts: Facts) -> list[tuple[cst.Call, cst.BaseExpression]]:
    """(call, argument) of each `type(x)` of one argument that is not compared with a class of
    torch (`type(m) == nn.DataParallel` tests for a wrapper: `_dataparallel_type_tests`). Given the
    wrapper it names DistributedDataParallel: a checkpoint named `f"{type(model).__name__}.pt"`
    would be `DistributedDataParallel.pt`, and `type(model)(cfg)` would build a wrapper."""
    return [(call, call.args[0].value) for call in facts.calls_named("type")
            if mt.is_name(call.func, "type") and len(call.args) == 1 and not call.args[0].star
            and not _compared_to_torch(facts, call)]


def _compared_to_torch(facts: Facts, node: cst.BaseExpression) -> bool:
    """Is `node` the left side of a comparison with a class of torch (`type(m) is nn.DataParallel`,
    `m.__class__ == DistributedDataParallel`)?"""
    parent = facts.parent(node)
    return isinstance(parent, cst.Comparison) and parent.left is node and any(
        (facts.qualify(c.comparator) or "").split(".")[0] == "torch" or
        any((facts.qualify(e.value) or "").split(".")[0] == "torch"
            for e in getattr(c.comparator, "elements", ()) if isinstance(e, cst.Element))
        for c in parent.comparisons)


def _tested_models(facts: Facts) -> list[tuple[cst.Call, cst.BaseExpression]]:
    """(call, tested argument) of the tests of a value's class or custom attributes:
    `isinstance(model, Net)` against classes not of torch (`isinstance(model, nn.Module)` and a
    test for a DataParallel stay as written), `hasattr(model, "ntoken")`, `getattr(model,
    "ntoken", d)` and `setattr(model, "fc", head)` of a name nn.Module's own API does not
    answer, or of a name computed at run time (`getattr(model, "layer%d" % i)`: its layers).
    Given the wrapper, each says no where the single-GPU script's said yes (or sets the
    wrapper's attribute, which the model's forward never reads)."""
    found = []
    for call in facts.calls_named("isinstance", "hasattr", "getattr", "setattr"):
        first, second = mt.positional(call, 0), mt.positional(call, 1)
        if first is None or second is None or not mt.is_name(call.func, "isinstance", "hasattr", "getattr", "setattr"):
            continue
        if mt.is_name(call.func, "isinstance"):
            classes = [e.value for e in second.value.elements] if isinstance(second.value, cst.Tuple) else [second.value]
            if not any((facts.qualify(c) or "").split(".")[0] == "torch" for c in classes):
                found.append((call, first.value))
        elif (name := mt.string_value(second.value)) is None or name not in mt.MODULE_API:
            found.append((call, first.value))  # a computed name (`getattr(model, "layer%d" % i)`): the model's own
    return found


ITEMS = frozenset({"len", "list", "tuple", "iter", "enumerate", "reversed", "zip"})  # builtins that read a container's items


def _container_reads(facts: Facts) -> list[cst.BaseExpression]:
    """The names read as a container of layers, as an `nn.Sequential` or `nn.ModuleList` model is:
    subscripted (`model[-1]`, `model[:2]`), iterated (`for layer in model:`, a comprehension's
    `for`, `enumerate(model)`, `len(model)`), or unpacked (`nn.Sequential(*model)`). The wrapper
    answers none of them (TypeError); `_give_bare_model` keeps those that may not hold it."""
    found: list[cst.BaseExpression] = []
    flow = objects.of(facts)
    for sub in facts.by_type.get(cst.Subscript, ()):
        if isinstance(sub, cst.Subscript) and dotted(sub.value) and not isinstance(facts.parent(sub), (cst.AssignTarget, cst.Del)):
            found.append(sub.value)
    for loop in [*facts.loops, *facts.by_type.get(cst.CompFor, ())]:
        if isinstance(loop, (cst.For, cst.CompFor)) and dotted(loop.iter):
            found.append(loop.iter)
    for call in facts.calls:
        items = mt.is_name(call.func, *ITEMS)
        found += [a.value for a in call.args if dotted(a.value) and (a.star == "*" or items and not a.keyword and not a.star)]
    # a name that may hold a list, tuple or dict is read as that container (`nets = [nets]`, then `for net in nets:`)
    return [e for e in found if not any(isinstance(site, objects.CONTAINERS) for site in flow.values(e))]


NAMING = frozenset({"named_parameters", "named_buffers", "named_modules", "named_children"})
TREE = frozenset({"modules", "children"})  # the wrapper's tree: itself first, the model as its one child
CLASS = frozenset({"__class__"})  # the wrapper's is DistributedDataParallel


def _saved_models(facts: Facts, saved: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names `torch.save` may pickle whole: the saved name itself, or the values of a dict,
    list or tuple saved (`{"epoch": e, "model": model}`), written in the call or assigned to the
    saved name just before (`checkpoint = {...}`, then `torch.save(checkpoint, path)`); of a
    value that picks one (`'net': net.module if use_cuda else net`, or the saved value itself:
    `torch.save(model.module if args.cuda else model, path)`), each name it may pick."""
    if isinstance(saved, cst.IfExp):
        return _picked([saved])
    if dotted(saved):
        ref = facts.ref(saved)
        writes = facts.writes(ref) if ref is not None else []
        if len(writes) != 1 or facts.scope(writes[0][2]) is not facts.scope(saved) or \
                not isinstance(writes[0][1], (cst.Dict, cst.List, cst.Tuple)):
            return [saved, *_stored_items(facts, ref, saved)]
        saved = writes[0][1]
    if isinstance(saved, (cst.Dict, cst.List, cst.Tuple)):
        return _picked([e.value for e in saved.elements if not isinstance(e, cst.StarredElement)])
    return []


def _stored_items(facts: Facts, ref: Ref | None, saved: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The models stored under a key of the saved dict in its function before the save
    (`model_dict['model'] = model.eval()` into a dict handed in, then `torch.save(model_dict,
    path)`): each stored name, or the name in front of a chain of nn.Module's methods that return
    the module they are called on (`model` of `model.eval()`: the wrapper's `eval()` returns the
    wrapper)."""
    found = []
    for value, stmt in facts._item_stores.get(ref, []) if ref is not None else []:
        if facts.scope(stmt) is not facts.scope(saved) or not facts.before(stmt, saved):
            continue
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                value.func.attr.value in mt.SELF_RETURNING - {"__iter__"}:
            value = value.func.value
        found += _picked([value])
    return found


def _picked(values: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
    """The names `values` may be, either branch of a conditional expression, less `x.module`."""
    picked = [v for value in values for v in ((value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,))]
    return [v for v in picked if dotted(v) and not (dotted(v) or "").endswith(".module")]


def _bare_text(owner: str, holds: Holds | None) -> str:
    return f"{owner}.module" if holds == WRAPPER else f"unwrap({owner})"


def _full_state_dicts(facts: Facts, models: Models, refs: dict[Ref, Model], edits: Edits) -> None:
    """The `--strategy fsdp` form: no `.module`; state dicts of sharded models (held by `refs`) and
    of their optimizers through the runtime's full-state-dict helpers."""
    for attr in facts.attributes:  # `model.module.x` of a DataParallel script: the model itself now
        if attr.attr.value == "module" and holds_wrapper(facts, refs, attr.value) is not None:
            edits.replace(attr, lambda node: node.value, f"`{facts.code(attr)}` -> `{facts.code(attr.value)}` "
                          "(FSDP2 keeps the model's class: there is no .module)")
    for call in facts.calls_named("state_dict", "load_state_dict"):
        if not mt.is_method_call(call, "state_dict", "load_state_dict") or not isinstance(call.func, cst.Attribute):
            continue
        receiver = call.func.value
        if call.func.attr.value == "state_dict":
            code = fsdp.gather(facts, models, refs, call)
            if code is not None:
                edits.replace(call, partial(_parsed, code),
                              f"`{facts.code(call)}` -> `{code}`: the full state dict, gathered from the shards "
                              "by every process (a collective), with the single-GPU key names")
                edits.add_import("ddpify_runtime", code.split("(")[0])
            elif fsdp.optimizer_models(facts, models, receiver):
                edits.todo(facts.statement(call), _UNNAMED.format(code=facts.code(receiver), what="state_dict()"))
            continue
        model = fsdp.sharded_name(facts, models, refs, receiver)
        if model is not None:
            _load(edits, call, "load_full_state_dict", model)
            ref = facts.ref(cst.parse_expression(model), call)
            owner = refs.get(ref) if ref is not None else None
            if owner is not None and owner.dataparallel is not None and call.args:
                edits.replace(call.args[0], lambda arg: arg.with_changes(
                    value=build.call("without_module_prefix", arg.value)))
                edits.add_import("ddpify_runtime", "without_module_prefix")
        elif fsdp.optimizer_models(facts, models, receiver):
            trained = fsdp.optimizer_models(facts, models, receiver)
            name = fsdp.model_name_at(facts, refs, trained[0], call) if len(trained) == 1 else None
            if name is None:
                edits.todo(facts.statement(call), _UNNAMED.format(code=facts.code(receiver), what="load_state_dict()"))
            else:
                _load(edits, call, "load_full_optimizer_state_dict", name, facts.code(receiver))
    for call in facts.calls_to("torch.save"):
        saved = mt.positional(call, 0)
        if saved is not None and fsdp.sharded_name(facts, models, refs, saved.value):
            edits.todo(facts.statement(call), f"this pickles the sharded `{facts.code(saved.value)}` (its parameters "
                       "are shards): save `full_state_dict(...)` instead, or gather it first")


_UNNAMED = ("`{code}` trains a sharded model whose name ddpify cannot tell here, and its {what} is sharded: "
            "use full_optimizer_state_dict(model, {code}) / load_full_optimizer_state_dict(model, {code}, state)")


def _load(edits: Edits, call: cst.Call, helper: str, *leading: str) -> None:
    """`x.load_state_dict(args)` -> `helper(leading..., args)`."""
    edits.replace(call, lambda node: cst.Call(cst.Name(helper), [
        *(cst.Arg(cst.parse_expression(code)) for code in leading), *node.args]),
        f"`{leading[-1]}.load_state_dict(...)` -> `{helper}(...)`: loads a full state dict into "
        "the shards (a collective)")
    edits.add_import("ddpify_runtime", helper)
