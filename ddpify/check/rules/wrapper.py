"""The DistributedDataParallel wrapper and the model inside it."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ddpify.analysis import bare_model, forward
from ddpify.analysis.accelerator import moves_to_the_cpu
from ddpify.analysis.distributed import SAMPLER, joins_group
from ddpify.analysis.models import DDP, WRAPPER, thrown_away
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.syntax.matchers import string_value
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Ref, param_names
from ddpify.syntax.names import dotted


@rule("DDP008", fixable=True)
def wrapper_attribute(ctx: Context) -> Iterator[Hit]:
    """A custom attribute or method of the model read on the DDP wrapper.

    Wrong:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(RNN().cuda())
        hidden = model.init_hidden(batch_size)

    Right:

        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(RNN().cuda())
        hidden = model.module.init_hidden(batch_size)

    DistributedDataParallel answers nn.Module's own API (`parameters()`, `train()`, `to()`, ...)
    and passes calls to `forward`, nothing else: `model.init_hidden`, `model.num_classes` raise
    `AttributeError` once the model is wrapped. Reach them through `model.module`. An attribute
    the script sets on the wrapper itself (`model.class_weights = w`, `setattr(model, "w", w)`) is
    there to read, and so is one read where the object is not the wrapper: the `else` of the
    test the script wraps under (`if args.distributed:`; also of an `or` that holds it, `if
    args.gpus > 1 or args.distributed:`), of `isinstance(model, DDP)`, the side
    of a test every wrap is on the other side of (`if self.use_deepspeed: model.backward(loss)`,
    the wrap under its `elif self.use_ddp:`), the side of `isinstance(model, dict)` (a builtin or
    `collections` container: no wrapper is one) or of `isinstance(model, Net)` (a class of the
    program no wrapper class derives from, the model's own) where it holds, the other side of a
    test that reads `model.module` where every wrap of the script runs on every run (`if
    args.multi_gpu: model.module.x else: model.x`: the program's own test of the wrap), or under `if hasattr(model, "x"):` (or in the
    body of `model.x() if hasattr(model, "x") else y`; or a helper of the
    program that returns true only under its own such test of the object it is given:
    `isimplemented(model, "x")` testing `name in dir(obj)`), or under a test of a parameter
    (`if load_model: model.load_weights(path)`) that every call handing the function the wrapper
    fails with a literal (`load_model=False`, also through its own callers' parameters). Also found: `getattr(model, "x", default)`, which on the wrapper
    returns the default without a word, `hasattr(model, "x")` of a name a model class of the
    program defines (always False on the wrapper: what it guards silently never runs), and
    `model.dtype` (a Hugging Face model's, not nn.Module's). A function of another module of the program that reads such an attribute of
    the wrapper it is handed (a static method, `Speech.serialize(model)` of model.py reading
    `model.hidden_size`, under no branch of it, and not set on the wrapper by the script) is also
    reported at the checked file's call that hands it over. The
    wrapper is torch's, NVIDIA apex's `apex.parallel.DistributedDataParallel`, the program's own
    DDP class (an `nn.Module` that keeps the module it is handed as `self.module` and all-reduces or
    broadcasts through torch.distributed: `LM = AsyncDDP(LM)`, whose own methods and attributes it
    answers), or what Hugging
    Face accelerate's `prepare` hands back for a model (one the object core knows to be an
    `nn.Module`, or a name the program calls, or whose `forward` it calls; not a scheduler or optimizer
    class of the program, `class NoamLR(_LRScheduler)`; nor a model the program froze whole above the
    `prepare`, `dit.requires_grad_(False)` with nothing thawing it and no walk of its parameters in that
    function: `prepare` wraps a module only where a parameter requires grad, so a LoRA trainer's frozen
    base model comes back bare, decision 0259); `prepare` wraps only where there are several
    processes, so there the bare model is `accelerator.unwrap_model(model)`, and the program's
    own `model.module.x if <its test> else model.x` is its unwrapping, as is a helper of the program
    that hands back `accelerator.unwrap_model(x)` (`unet = unwrap_model(unet)`, also after taking a
    compiled model's `_orig_mod`). Not reported: a name the model inside lacks too, where every
    model the name may wrap is of the program's classes (built there, or a parameter annotated
    with one; also through `SyncBatchNorm.convert_sync_batchnorm(model)`, which hands back the
    model it is given) and none of them defines it (`ddpify.analysis.bare_model`: `model.generate` where
    the class has `sample`; `.module.generate` fails the same way). `--fix` adds `.module`
    where the name holds torch's or apex's wrapper on every path (not accelerate's, nor
    pytorch-ignite's `idist.auto_model`'s: on one process there is no `.module`). pytorch-ignite's
    `idist.auto_model(model)` is read as torch's wrap (it is one on several processes). The `model`
    of a method that Hugging Face's `Trainer` (or trl's) calls with the model it wrapped, in the
    program's subclass of it (`compute_loss(self, model, inputs)`, `training_step`;
    `ddpify.analysis.frameworks`), is that wrapper, as accelerate's. A read inside `getattr(...)`
    or `hasattr(...)` is one the program expects may fail, but not the object it asks about
    (`getattr(model.config, "model_type", None)` reads `model.config` first); so is one in the body
    of a `try` whose `except` catches an AttributeError (bare, `Exception`), not of a `try` that
    only has a `finally`, nor of one whose `except` only reports the error and leaves (`except
    Exception as e: print(e); break` around a validation step: the read fails every time).
    """
    f = ctx.facts
    if not ctx.ddp_refs:
        return
    containers = _containers(ctx)
    reported: set[cst.Call] = set()
    for attr in f.attributes:
        name = attr.attr.value
        if ctx.module_api(name):
            continue
        holds = ctx.holds_ddp(attr.value)
        if holds is None or _assigned(ctx, attr) or _probed(ctx, attr) or ctx.unwrapped_here(attr.value) \
                or _before_the_wrap(ctx, attr.value) \
                or holds != WRAPPER and f.code(attr.value) in containers or bare_model.lacks(f, attr.value, name) \
                or _off_for_every_wrapper(ctx, attr) or _asserted_one_process_under_its_test(ctx, attr):
            continue
        owner = f.code(attr.value)
        if ctx.prepared_only:  # accelerate's wrap, absent on one process: no `.module` to add
            yield Hit(attr, f"`{owner}` holds the DDP wrapper `prepare` made, which has no `{name}`: use "
                            f"`accelerator.unwrap_model({owner}).{name}`")
        else:
            yield Hit(attr, f"`{owner}` holds the DDP wrapper, which has no `{name}`: use `{owner}.module.{name}`",
                      _through_module(attr) if holds == WRAPPER and not ctx.wrapped_on_several_only else None)
        for site, arg in _handed_from_elsewhere(ctx, attr):  # `DeepSpeech.serialize(model)` of model.py's reads
            if site not in reported:
                reported.add(site)
                yield Hit(site, f"`{f.code(site.func)}()` reads `{owner}.{name}` ({f.program.part_of(attr, f.parents).rel}) "
                                f"of the DDP wrapper `{f.code(arg)}` it is handed, which has no `{name}`: "
                                f"pass `{f.code(arg)}.module`")
    for call in f.calls:  # `hasattr(model, "x")` of a method the model defines: always False on the wrapper
        name = string_value(call.args[1].value) if mt.is_call_of(call, "hasattr") and len(call.args) == 2 else None
        if not name or ctx.module_api(name) or not bare_model.a_model_defines(f, name):
            continue
        obj = call.args[0].value
        if ctx.holds_ddp(obj) is None or (f.ref(obj), name) in ctx.set_attributes or ctx.unwrapped_here(obj) \
                or _before_the_wrap(ctx, obj):
            continue
        owner = f.code(obj)
        inner = f"accelerator.unwrap_model({owner})" if ctx.prepared_only else f"{owner}.module"
        yield Hit(call, f"`{owner}` holds the DDP wrapper, which has no `{name}` (the model's class defines it): "
                        f"this hasattr is always False there, and what it guards never runs; ask `{inner}`")
    for call in f.calls:  # `getattr(model, "x", default)`: on the wrapper, the default, silently
        name = string_value(call.args[1].value) if mt.is_call_of(call, "getattr") and len(call.args) >= 2 else None
        if not name or ctx.module_api(name):
            continue
        obj = call.args[0].value
        holds = ctx.holds_ddp(obj)
        if holds is None or (f.ref(obj), name) in ctx.set_attributes or ctx.unwrapped_here(obj) \
                or _before_the_wrap(ctx, obj) \
                or holds != WRAPPER and f.code(obj) in containers:
            continue
        owner = f.code(obj)
        yield Hit(call, f"`{owner}` holds the DDP wrapper, which has no `{name}`: this getattr "
                        f"{'returns its default' if len(call.args) > 2 else 'raises'}; read `{owner}.module`")


def _off_for_every_wrapper(ctx: Context, attr: cst.Attribute) -> bool:
    """Is `attr`, a read of a parameter of its function under a test of another parameter
    (`if load_model: model.load_pretrained_weights(path)`), off for every call that hands that
    function the wrapper: each passes a literal that fails the test (`load_model=False`), itself
    or through the parameters of its own function and their callers, while the calls that pass a
    true one hand the bare model?"""
    f = ctx.facts
    func = f.scope(attr)
    if not isinstance(func, cst.FunctionDef) or not isinstance(attr.value, cst.Name) \
            or not _stands_for_parameter(f, attr.value, func):
        return False
    wanted = []  # (parameter, the truth the read needs of it)
    child: cst.CSTNode = attr
    for anc in f.ancestors(attr):
        if anc is func:
            break
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            test, holds = anc.test, child is anc.body
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, holds = test.expression, not holds
            if isinstance(test, cst.Name) and test.value in param_names(func) and not f.writes(Ref(func, test.value)):
                wanted.append((test.value, holds))
        child = anc
    return bool(wanted) and not _reached_with_wrapper(ctx, func, attr.value.value, wanted, 3)


def _asserted_one_process_under_its_test(ctx: Context, attr: cst.Attribute) -> bool:
    """Is `attr` under an `if` whose test (`args.train_stage == 2`) is, word for word, one under which
    the program asserted, earlier in `attr`'s function or in the one function that calls it (with
    the test's leading name handed on as the parameter of that name, `validate(loader, model, args)`),
    that the run is not distributed (`if args.train_stage == 2: assert not args.distributed`)?
    Past that assert, every run where the test holds is one process: no wrapper there.

    Before: AdaFocus' stage-2 reads of `model.glance`, `model.focuser` in `train` and `validate`,
    the assert in `main_worker` that stage 2 runs without DDP, were DDP008 each (set 29; decision 0243).
    Not for a test of another value (`args.train_stage == 3`), nor an assert of another flag."""
    f = ctx.facts
    func = f.scope(attr)
    child: cst.CSTNode = attr
    tests = []
    for anc in f.ancestors(attr):
        if anc is func:
            break
        if isinstance(anc, cst.If) and child is anc.body:
            tests.append(anc.test)
        child = anc
    sites = f.call_sites(func) if isinstance(func, cst.FunctionDef) else []
    caller = f.scope(sites[0]) if sites and all(f.scope(s) is f.scope(sites[0]) for s in sites) else None
    for test in tests:
        root = (dotted(test.left) or "").partition(".")[0] if isinstance(test, cst.Comparison) else ""
        scopes: list[tuple[cst.CSTNode, cst.CSTNode]] = [(func, attr)]
        if caller is not None and isinstance(func, cst.FunctionDef) and root in param_names(func) \
                and not f.writes(Ref(func, root)) and all(mt.is_name(f.argument_for(s, func, root), root) for s in sites):
            scopes.append((caller, sites[0]))
        if any(_asserted_under(ctx, scope, at, f.code(test)) for scope, at in scopes):
            return True
    return False


def _asserted_under(ctx: Context, scope: cst.CSTNode, at: cst.CSTNode, code: str) -> bool:
    """Does `scope`, before `at`, assert that the run is one process in the body of an `if` whose
    test is spelled `code`?"""
    f = ctx.facts
    for node in f.findall(scope, cst.Assert):
        if f.scope(node) is scope and f.before(node, at) and _says_one_process(ctx, node.test) and any(
                isinstance(a, cst.If) and f.is_inside(node, a.body) and f.code(a.test) == code for a in f.ancestors(node)):
            return True
    return False


def _says_one_process(ctx: Context, test: cst.BaseExpression) -> bool:
    """`not args.distributed` (a test the run has several processes, negated), `args.local_rank == -1`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return ctx.ranks.several_processes(test.expression, every=True)
    return ctx.ranks._asks_one_process(test, True) or ctx.ranks._one_world(test)


def _stands_for_parameter(f, name: cst.Name, func: cst.FunctionDef, site: cst.Call | None = None) -> bool:
    """Is `name` the parameter of that name as it was passed: never rebound but to itself moved
    (`model = model.to(device)`), or, read by `site`, rebound only by the assignment `site` is the
    value of (`model = self.prepare(model, ...)` reads the parameter)?"""
    if name.value not in param_names(func):
        return False
    return all(isinstance(value, cst.Call) and (
        isinstance(value.func, cst.Attribute) and mt.is_name(value.func.value, name.value)
        and mt.is_method_call(value, "to", "cuda", "float", "half", "eval", "train")
        or site is not None and f.is_inside(site, value)) for _, value, _ in f.writes(Ref(func, name.value)))


def _reached_with_wrapper(ctx: Context, func: cst.FunctionDef, param: str, wanted: list[tuple[str, bool]],
                          depth: int) -> bool:
    """Does some call of `func` hand `param` the wrapper with arguments that may pass every test of
    `wanted`? A call whose arguments are its own function's parameters is followed to that
    function's callers (`depth` deep); what is not known counts as passing."""
    f = ctx.facts
    sites = f.call_sites(func)
    if not sites or depth <= 0:
        return True
    for site in sites:
        given = f.argument_for(site, func, param)
        if given is None or ctx.holds_ddp(given) is None:
            if given is None and any(a.star for a in site.args):
                return True
            continue
        outer = f.scope(site)
        onward, passes = [], True
        for name, holds in wanted:
            arg = f.argument_for(site, func, name)
            if arg is None and not any(a.star for a in site.args):
                found = next((p for p in (*func.params.params, *func.params.kwonly_params) if p.name.value == name), None)
                arg = found.default if found is not None else None
            if mt.is_name(arg, "True", "False", "None"):
                passes = passes and (arg.value == "True") == holds
            elif isinstance(arg, cst.Name) and isinstance(outer, cst.FunctionDef) and arg.value in param_names(outer) \
                    and not f.writes(Ref(outer, arg.value)):
                onward.append((arg.value, holds))
            else:
                return True
        if not passes:
            continue
        if not onward:
            return True
        if not (isinstance(given, cst.Name) and isinstance(outer, cst.FunctionDef)
                and _stands_for_parameter(f, given, outer, site)) \
                or _reached_with_wrapper(ctx, outer, given.value, onward, depth - 1):
            return True
    return False


def _handed_from_elsewhere(ctx: Context, attr: cst.Attribute) -> list[tuple[cst.Call, cst.BaseExpression]]:
    """Where `attr` reads a parameter of a function of another module of the program, the calls of
    that function in other files that hand it the wrapper, with the argument (`DeepSpeech.serialize(
    model, ...)` in train.py, whose static method in model.py reads `model.version`): the checked
    file's line that breaks."""
    f = ctx.facts
    func, param = f.scope(attr), attr.value
    if f.program is None or not isinstance(func, cst.FunctionDef) or not isinstance(param, cst.Name) \
            or param.value not in param_names(func) or f.writes(Ref(func, param.value)):
        return []
    if not _every_call_reads(f, attr, func):
        return []  # `if engine == "deepspeed": model.save_checkpoint(...)`: what the call decides
    home = f.program.part_of(attr, f.parents)
    found = []
    for site in f.call_sites(func):
        arg = f.argument_for(site, func, param.value)
        if arg is not None and f.program.part_of(site, f.parents) is not home and ctx.holds_ddp(arg) is not None \
                and not ctx.unwrapped_here(arg) and not _set_on(ctx, arg, attr.attr.value):
            found.append((site, arg))
    return found


def _every_call_reads(f, attr: cst.Attribute, func: cst.FunctionDef) -> bool:
    """Does every call of `func` read `attr`: is it under no branch, loop or `try` of `func`
    (a test's own reads run)?"""
    child: cst.CSTNode = attr
    for anc in f.ancestors(attr):
        if anc is func:
            return True
        if isinstance(anc, (cst.If, cst.While)) and child is not anc.test or isinstance(anc, cst.IfExp) and \
                child is not anc.test or isinstance(anc, (cst.For, cst.Try, cst.BooleanOperation, cst.CompFor)):
            return False
        child = anc
    return False


def _set_on(ctx: Context, expr: cst.BaseExpression, name: str, depth: int = 3) -> bool:
    """Does the script set `name` on what `expr` holds: on that name itself (`model.hyp = hyp`,
    `setattr(model, "hyp", hyp)`, on the wrapper: then it is the wrapper's to read), or, for a
    parameter, on every wrapper a call passes it (a bare model passed elsewhere has its own)?"""
    f = ctx.facts
    ref = f.ref(expr) if dotted(expr) else None
    if ref is None:
        return False
    if (ref, name) in ctx.set_attributes:
        return True
    if depth <= 0 or not isinstance(ref.scope, cst.FunctionDef) or ref.name not in param_names(ref.scope):
        return False
    passed = [f.argument_for(site, ref.scope, ref.name) for site in f.call_sites(ref.scope)]
    wrappers = [p for p in passed if p is not None and ctx.holds_ddp(p) is not None]
    return bool(wrappers) and all(_set_on(ctx, p, name, depth - 1) for p in wrappers)


def _before_the_wrap(ctx: Context, expr: cst.BaseExpression) -> bool:
    """`self.model.x` read in a method that runs, by the calls that lead to both, before the one
    that wraps `self.model` (`setup()` calls `on_setup()`, then `self.model = DDP(self.model)`),
    or in `__init__` before any other method of the object can have run (`self.model =
    build_model(args); self.model.backbone` there, where only `train()` ends with `self.model =
    self.ema.module`, an average copied from the wrapper), also in a method whose one call is
    there (`__init__` calls `self.reset_head(n)`, which reads `self.model.reset_head`): there it
    is the bare model. A wrap
    is an assignment of `self.model` whose value may hold the wrapper and is not `self.model`'s
    own (`self.model = self.model.to(device)` wraps nothing)."""
    f = ctx.facts
    if not mt.is_attribute(expr) or dotted(expr.value) != "self":
        return False
    own = f.code(expr)
    wraps = [stmt for target, value, stmt in f.assigns if isinstance(value, cst.Call)
             and f.qualify(value.func) == DDP and f.code(target) == own]
    if wraps and all(f.runs_before(expr, wrap, strict=True) for wrap in wraps):
        return True
    holders = [stmt for target, value, stmt in f.assigns if f.code(target) == own
               and ctx.holds_ddp(value) is not None and not f.code(value).startswith(own)]
    chain = f.callers_up(expr, 3)  # the read, the one call of its method, ...
    return bool(holders) and all(any(_constructed_before(f, x, stmt) for x in chain) for stmt in holders)


def _constructed_before(f, expr: cst.BaseExpression, wrap: cst.CSTNode) -> bool:
    """Is `expr` read in `__init__` of a class, and `wrap` in another method of that class that
    `__init__` reaches by none of its calls (or later in `__init__` itself): the object is built
    before any of its methods runs."""
    init, func = f.scope(expr), f.scope(wrap)
    if not isinstance(init, cst.FunctionDef) or init.name.value != "__init__" or not isinstance(func, cst.FunctionDef):
        return False
    if func is init:
        return f.before(expr, wrap)
    if (cls := f.enclosing_class(init)) is None or f.enclosing_class(func) is not cls:
        return False
    seen: set[cst.FunctionDef] = set()
    todo = [init]
    while todo:
        g = todo.pop()
        if g not in seen:
            seen.add(g)
            todo += [h for call in f.calls_in(g.body) for h in f.user_functions(call)]
    return func not in seen


def _assigned(ctx: Context, attr: cst.Attribute) -> bool:
    """`model.x = ...`, or a read of `model.x` where the script sets it on the same name (also
    with `setattr(model, "x", ...)`), or on what every call passes the parameter `model` (the
    trainer's `model.hyp = hyp` after the wrap, read by a loss helper): an attribute of the
    wrapper, which works."""
    f = ctx.facts
    return any(target is attr for target, _, _ in f.assigns) or _set_on(ctx, attr.value, attr.attr.value)


def _probed(ctx: Context, attr: cst.Attribute) -> bool:
    """Inside `hasattr(...)`/`getattr(...)`, a `try` that catches AttributeError, or the branch of `if hasattr(model, "x"):`
    (also `and` something else), or of a conditional expression on it (`model.x() if hasattr(model, "x") else
    y`): the script expects it may be missing."""
    f = ctx.facts
    for anc in f.ancestors(attr):
        if isinstance(anc, cst.Call) and isinstance(anc.func, cst.Name) and anc.func.value in ("hasattr", "getattr") \
                and not (anc.args and f.is_inside(attr, anc.args[0].value)):
            return True  # (the object asked about is read first: `getattr(model.config, "x", None)` reads `model.config`)
        if isinstance(anc, (cst.If, cst.IfExp)) and f.is_inside(attr, anc.body) and any(
                _tests_attribute(ctx, c, attr) for c in _conjuncts(anc.test)):
            return True  # (`model.x() if hasattr(model, "x") else y` alike)
        if isinstance(anc, (cst.Try, cst.FunctionDef)):
            return isinstance(anc, cst.Try) and f.is_inside(attr, anc.body) and any(
                _catches_attribute_error(f, h) and not _gives_up(h) for h in anc.handlers)
    return False


_REPORTS = frozenset({"print", "info", "warning", "warn", "error", "exception", "debug", "critical", "write"})


def _gives_up(handler: cst.ExceptHandler) -> bool:
    """Does the `except` clause only report the error and leave (`print(f"Error during
    evaluation: {e}"); break`, the report also under a test, `if rank == 0: print(...)`; the leave
    also `continue`, `raise`, a bare `return`): a guard for a failing step, no fallback for a
    missing attribute, so the read it guards fails on the wrapper every time and the work after
    it never runs?"""
    body = list(handler.body.body) if isinstance(handler.body, cst.IndentedBlock) else []
    last = body.pop() if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1):
        return False
    leave = last.body[0]
    leaves = isinstance(leave, (cst.Break, cst.Continue, cst.Raise)) or isinstance(leave, cst.Return) and (
        leave.value is None or mt.is_name(leave.value, "None"))
    return leaves and _only_reports(body)


def _only_reports(stmts) -> bool:
    """Are these statements only reports of an error: calls of `print` or of a logger's methods,
    also under an `if` (and its `else`) that holds nothing else?"""
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            if not all(isinstance(r, cst.Expr) and isinstance(r.value, cst.Call) and (
                    dotted(r.value.func) or "").rpartition(".")[2] in _REPORTS for r in stmt.body):
                return False
        elif isinstance(stmt, cst.If):
            if not (isinstance(stmt.body, cst.IndentedBlock) and _only_reports(stmt.body.body)):
                return False
            if stmt.orelse is not None and not (isinstance(stmt.orelse.body, cst.IndentedBlock) and _only_reports(
                    stmt.orelse.body.body) if isinstance(stmt.orelse, cst.Else) else _only_reports([stmt.orelse])):
                return False
        else:
            return False
    return True


def _catches_attribute_error(f, handler: cst.ExceptHandler) -> bool:
    """Does the `except` clause catch an AttributeError (bare, or naming it, `Exception` or
    `BaseException`, alone or in a tuple)? A `try` with only a `finally` expects nothing to fail."""
    caught = [] if handler.type is None else [e.value for e in handler.type.elements] \
        if isinstance(handler.type, cst.Tuple) else [handler.type]
    return handler.type is None or any((dotted(c) or "").rpartition(".")[2] in
                                       ("AttributeError", "Exception", "BaseException") for c in caught)


def _tests_attribute(ctx: Context, test: cst.BaseExpression, attr: cst.Attribute) -> bool:
    """`hasattr(model, "x")` for the read `model.x`, or a call of a function of the program handed
    `model` and `"x"` that returns a true value only under its own test of that attribute
    (`isimplemented(self.model, "optimize")`: `if method_name in dir(obj) and ...: return True`;
    `return False` after), which the wrapper fails."""
    f = ctx.facts
    if not isinstance(test, cst.Call) or len(test.args) != 2 or f.code(test.args[0].value) != f.code(attr.value) \
            or string_value(test.args[1].value) != attr.attr.value:
        return False
    if mt.is_call_of(test, "hasattr"):
        return True
    funcs = f.user_functions(test)
    return bool(funcs) and all(_returns_true_only_if_present(f, func) for func in funcs)


def _returns_true_only_if_present(f, func: cst.FunctionDef) -> bool:
    """Does every `return` of `func` but `return False` (or None) sit in the body of an `if` that
    tests the attribute its second parameter names on its first (`hasattr(obj, name)`, `name in
    dir(obj)`)?"""
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if len(params) < 2:
        return False
    obj, name = params[:2]

    def present(c: cst.BaseExpression) -> bool:
        if mt.is_call_of(c, "hasattr") and len(c.args) == 2:
            return mt.is_name(c.args[0].value, obj) and mt.is_name(c.args[1].value, name)
        return isinstance(c, cst.Comparison) and mt.is_name(c.left, name) and len(c.comparisons) == 1 \
            and isinstance(c.comparisons[0].operator, cst.In) and mt.is_call_of(c.comparisons[0].comparator, "dir") \
            and len(c.comparisons[0].comparator.args) == 1 and mt.is_name(c.comparisons[0].comparator.args[0].value, obj)

    returns = [r for r in f.returns_in(func) if not (r.value is None or mt.is_name(r.value, "False", "None"))]
    return bool(returns) and all(any(isinstance(anc, cst.If) and f.is_inside(r, anc.body) and any(
        present(c) for c in _conjuncts(anc.test)) for anc in f.ancestors(r)) for r in returns)


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What the test holds whenever it is true: itself and its `and` operands (not those of an
    `or`: `if hasattr(model, "x") or hasattr(model.module, "x"):` may hold for the wrapper)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _containers(ctx: Context) -> set[str]:
    """Names the script treats as holding the model rather than being it: it wraps their
    attribute (`algo.model = DDP(algo.model)`). Where such a name is also wrapped itself on some
    other path only, that path is not the one to judge its reads by."""
    f = ctx.facts
    return {f.code(t.value) for wrap in ctx.script.calls_of(DDP) for t, v, _ in f.assigns
            if v is wrap and isinstance(t, cst.Attribute) and dotted(t.value)}


def _through_module(attr: cst.Attribute):
    def fix(edits) -> None:
        edits.replace(attr, lambda node: node.with_changes(value=cst.Attribute(value=node.value, attr=cst.Name("module"))),
                      "through `.module`")
    return fix


@rule("DDP022")
def wrap_before_device(ctx: Context) -> Iterator[Hit]:
    """A model wrapped in DDP before it is moved to its GPU.

    Wrong:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = DDP(Net())
        model.to(device)

    Right:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = DDP(Net().to(device))

    DDP builds its gradient buckets, and broadcasts rank 0's weights, for the parameters as they
    are when it is constructed: on the CPU. Moving the wrapper afterwards leaves those buckets
    behind (an error in the first backward, or gradients all-reduced on the CPU), and
    `device_ids` cannot name a GPU the module is not on. Move the model first, then wrap it.
    Found for `.to(...)`, `.cuda(...)` or `.to_empty(device=...)` (a model built on the meta device
    given its storage) on the wrapper, the name it is assigned to or, in a script that writes one
    wrap, whatever holds it (`self.model = self.init_model()`, the method wraps and returns the
    model) (not `.to(torch.float16)`, nor a `.to(device)`
    whose device is the CPU wherever it comes from, `device = "cpu"` of a CPU-only script: the
    model it wraps was not moved, it is on the CPU already, and nothing moves), when the
    model it wraps was not moved before the wrap, in the order the script runs them (methods by
    the order of their calls, not of their definitions).
    """
    f = ctx.facts
    moves = [c for c in f.calls if mt.is_method_call(c, "to", "cuda", "to_empty") and dotted(c.func.value)]
    wraps = ctx.script.calls_of(DDP) if moves else []
    for wrap in wraps:
        inner = mt.positional(wrap, 0)
        names = {f.code(t) for t, v, _ in f.assigns if v is wrap and dotted(t)}
        later = [c for c in moves if _holds_this_wrap(ctx, c.func.value, names, len(wraps) == 1)
                 and f.runs_before(wrap, c) and not _dtype_only(f, c)
                 and not moves_to_the_cpu(f, c)]  # a model never moved stays on the CPU: no move
        if inner is None or not later or _moved(ctx, inner.value, wrap, moves):
            continue
        for call in later:
            if ctx.holds_ddp(call.func.value) is not None:
                yield Hit(call, f"`{f.code(call.func.value)}` is moved after DDP wrapped it: DDP set up its "
                                "buckets for the parameters where they were; move the model before wrapping it")


def _holds_this_wrap(ctx: Context, receiver: cst.BaseExpression, names: set[str], sole: bool) -> bool:
    """Is `receiver` (what a move is called on) this wrap: a name the wrap is assigned to, or, when
    the script writes no other wrap, any name the object core finds holding a wrapper (`self.model`
    given what a method that wraps returns: `self.model = self.init_model()`, then
    `self.model.to_empty(device="cuda")`)?"""
    return dotted(receiver) in names or sole and ctx.holds_ddp(receiver) is not None


def _moved(ctx: Context, model: cst.BaseExpression, wrap: cst.Call, moves: list[cst.Call]) -> bool:
    """Was `model` put on a device before `wrap`: `DDP(net.cuda())`, `net.to(device)` before it,
    `net = Net().to(device)`, or built there (`Net(device=...)`)? A parameter, or what a helper
    of this file returns, counts as placed (by the caller, by the helper)."""
    f = ctx.facts
    if isinstance(model, cst.Call):  # built right there: on the CPU, unless told or a helper of ours moves it
        return mt.is_method_call(model, "to", "cuda") or mt.keyword(model, "device") is not None or bool(
            f.user_functions(model)) and not f.builds(model)
    name = dotted(model)
    if name is None:
        return True
    ref = f.ref(model)
    if ref is None or isinstance(ref.scope, cst.FunctionDef) and name in {p.name.value for p in ref.scope.params.params}:
        return True  # handed in: placed by the caller
    built = [v for _, v, s in f.writes(ref) if f.runs_before(s, wrap)]
    return any(dotted(c.func.value) == name and f.runs_before(c, wrap) for c in moves) or any(
        mt.findall(v, cst.Call, lambda c: mt.is_method_call(c, "to", "cuda")) for v in built) or not built


def _dtype_only(f, call: cst.Call) -> bool:
    """`.to(torch.float16)`, `.to(dtype=...)`, `.to(memory_format=...)`: not a device."""
    first = mt.positional(call, 0)
    if first is None:
        return mt.keyword(call, "device") is None and bool(call.args)
    return (f.qualify(first.value) or "").startswith("torch.") and "device" not in (f.qualify(first.value) or "")


@rule("DDP025", several=True)
def wrap_under_a_false_test(ctx: Context) -> Iterator[Hit]:
    """The DDP wrap under a test that is never true: a yes/no answer compared with a number above 1.

    Wrong:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = torch.nn.Linear(2, 1).cuda()
        if dist.is_initialized() > 1:
            model = DDP(model)

    Right:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = torch.nn.Linear(2, 1).cuda()
        if dist.is_initialized():
            model = DDP(model)

    `dist.is_initialized()` answers True or False, which compare as 1 or 0: `> 1` (meant for a
    world size) is False on every process, so the model is never wrapped, no gradient is averaged
    and each process trains its own copy without a word. Found for a wrap in the branch of an `if`
    one of whose `and`-ed tests compares a yes/no answer with `> 1`, `>= 2` or `== N` (N above 1):
    torch.distributed's `is_initialized()` or `is_available()`, `torch.cuda.is_available()`, a
    comparison, `not x`, `isinstance`/`hasattr`/`callable`/`bool` of anything, a name only ever
    set to those or to `True`/`False` (a module's flag that its `initialize()` sets), a function of
    the program every `return` of which gives one (`def initialized(): return __initialized`).
    """
    f = ctx.facts
    for wrap in ctx.script.calls_of(DDP):
        for anc in f.ancestors(wrap):
            if isinstance(anc, cst.If) and f.is_inside(wrap, anc.body):
                for test in _conjuncts(anc.test):
                    if _never_true(f, test):
                        yield Hit(test, f"`{f.code(test)}` is never true (a yes/no answer is 0 or 1): the DDP wrap "
                                        "under it never runs, and every process trains alone; test the answer itself")


YES_NO = frozenset({"torch.distributed.is_initialized", "torch.distributed.is_available", "torch.cuda.is_available",
                    "isinstance", "hasattr", "callable", "bool"})


def _never_true(f, test: cst.BaseExpression) -> bool:
    """`x > 1`, `x >= 2`, `x == 2` where `x` is a yes/no answer."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    op, bound = test.comparisons[0].operator, test.comparisons[0].comparator
    limit = int(bound.value) if isinstance(bound, cst.Integer) and bound.value.isdigit() else None
    return limit is not None and (isinstance(op, cst.GreaterThan) and limit >= 1 or isinstance(
        op, (cst.GreaterThanEqual, cst.Equal)) and limit >= 2) and _yes_no(f, test.left, 3)


def _yes_no(f, expr: cst.BaseExpression, depth: int) -> bool:
    """Does `expr` only ever hold True or False (`YES_NO` calls, comparisons, `not`, `and`/`or` of
    those, names and program functions that give only those)?"""
    if mt.is_name(expr, "True", "False") or isinstance(expr, cst.Comparison) or isinstance(
            expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return True
    if isinstance(expr, cst.BooleanOperation):
        return _yes_no(f, expr.left, depth) and _yes_no(f, expr.right, depth)
    if depth == 0:
        return False
    if isinstance(expr, cst.Call):
        if (f.qualify(expr.func) or dotted(expr.func)) in YES_NO:
            return True
        funcs = f.user_functions(expr)
        returned = [r for func in funcs for r in f.returned(func)]
        return bool(funcs) and len(returned) >= len(funcs) and all(_yes_no(f, r, depth - 1) for r in returned)
    ref = f.ref(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    values = [v for _, v, _ in f.writes(ref)] if ref is not None else []
    return bool(values) and all(_yes_no(f, v, depth - 1) for v in values)


@rule("DDP027")
def buffer_updated_in_forward(ctx: Context) -> Iterator[Hit]:
    """A model wrapped in DDP whose forward updates a registered buffer in place from the batch.

    Wrong:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")

        class Centered(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)
                self.register_buffer("mean", torch.zeros(2))

            def forward(self, x):
                self.mean.mul_(0.99).add_(x.mean(0), alpha=0.01)
                return self.fc(x - self.mean)

        model = DDP(Centered().cuda())

    Right:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")

        class Centered(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)
                self.register_buffer("mean", torch.zeros(2))

            def forward(self, x):
                batch = x.mean(0)
                dist.all_reduce(batch)
                self.mean.mul_(0.99).add_(batch / dist.get_world_size(), alpha=0.01)
                return self.fc(x - self.mean)

        model = DDP(Centered().cuda())

    DDP (`broadcast_buffers=True`, the default) copies the main process's buffers to every
    process at the start of each forward: a buffer the forward updates from its own batch (an EMA
    codebook, a running mean, a queue of keys) is overwritten on every other process, so it learns
    from the main process's batches only and the others' updates are lost, silently. All-reduce
    the statistics before the update, or wrap with `broadcast_buffers=False` and sync the buffer
    by hand. Found for a `DistributedDataParallel(...)` wrap not given `broadcast_buffers` of a
    model of the program (what reaches the wrap, `forward.wrapped_values`: not the whole model a
    sub-module was taken out of before it, `model = model.backbone`) whose forward, or a method it calls through `self.`, updates a buffer it
    registers from a value of the step (`forward.buffer_updated_in_forward`, the question behind
    convert's warning of decision 0210); not torch's norm layers, not a forward that all-reduces,
    not an update in a helper called after the step, not a buffer only read, not a buffer
    registered with `persistent=False` (a cache, a causal mask rebuilt for the input's length), not
    a buffer the program all-reduces or broadcasts itself (`dist.all_reduce(m.running_var)` after
    the step, on an object that may be of the model's class: not `m` of `if isinstance(m, Other):`).
    """
    f = ctx.facts
    for wrap in ctx.script.calls_of(DDP):
        inner = mt.positional(wrap, 0) or mt.keyword(wrap, "module")
        given = mt.keyword(wrap, "broadcast_buffers")
        if inner is None or given is not None and not mt.is_name(given.value, "True"):
            continue
        built = forward.wrapped_values(f, inner.value)
        found = next(filter(None, (forward.buffer_updated_in_forward(f, cls) for cls in forward.classes_of(f, built))),
                     None)
        if found is not None:
            yield Hit(wrap, f"{found}: DDP copies the main process's buffers to every process at each forward "
                            "(broadcast_buffers=True), so the buffer learns from the main process's batches only and "
                            "the other processes' updates are lost; all-reduce the statistics before the update "
                            "(torch.distributed.all_reduce), or wrap with broadcast_buffers=False and sync the "
                            "buffer by hand")


DATA_PARALLEL = ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel")
# what else keeps the processes' models in step: a wrapper or engine of torch or another library
# (apex's `parallel` only: its `amp` keeps no processes in step)
SYNCING_PACKAGES = ("deepspeed", "accelerate", "horovod", "apex.parallel", "fairscale", "colossalai", "torch_xla")
SYNCING = ("torch.nn.parallel.DistributedDataParallel", "torch.distributed.fsdp", "torch.distributed._composable",
           *(f"{package}." for package in SYNCING_PACKAGES))


@rule("DDP029", several=True)
def data_parallel_in_a_process_group(ctx: Context) -> Iterator[Hit]:
    """`nn.DataParallel` in a program whose processes join a group and shard the data: nothing syncs them.

    Wrong:

        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader, DistributedSampler
        dist.init_process_group("nccl")
        model = torch.nn.DataParallel(torch.nn.Linear(4, 2).cuda())
        loader = DataLoader(data, sampler=DistributedSampler(data))

    Right:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data import DataLoader, DistributedSampler
        dist.init_process_group("nccl")
        model = DistributedDataParallel(torch.nn.Linear(4, 2).cuda())
        loader = DataLoader(data, sampler=DistributedSampler(data))

    DataParallel spreads one process's batch over the GPUs it is given and averages their
    gradients inside that process; it never talks to the other processes of the group. Each
    process then trains its own copy of the model on its own shard of the data (the
    DistributedSampler's), the copies drift apart, and the checkpoint the main process saves
    holds one shard's training. Wrap in DistributedDataParallel. Found for a DataParallel wrap
    that runs where the program is distributed (not under `if args.local_rank == -1:` or in the
    `else` of `if args.distributed:`, nor on one rank) in a program that joins a process group
    and builds a DistributedSampler there, and that has nothing else to keep the models in step:
    no DDP or FSDP wrap anywhere, no engine of DeepSpeed, accelerate, Horovod, apex, fairscale,
    ColossalAI or torch_xla, and no collective handed gradients (`dist.all_reduce(p.grad)`).
    """
    f = ctx.facts
    if not ctx.script.distributed or not joins_group(f) or _synced_otherwise(ctx):
        return
    samplers = [c for c in (*ctx.script.calls_of(SAMPLER), *ctx.script.subclass_calls(SAMPLER))
                if not ctx.ranks.undistributed(c)]
    if not samplers:
        return
    for call in ctx.script.calls_of(*DATA_PARALLEL):
        if not ctx.ranks.undistributed(call) and not ctx.ranks.on_some_ranks(call):
            yield Hit(call, "DataParallel in a program whose processes join a group and each draw their own shard "
                            "(DistributedSampler): it never syncs them, so each trains its own model; wrap in "
                            "DistributedDataParallel")


def _synced_otherwise(ctx: Context) -> bool:
    """Does the program keep its processes' models in step some other way: a wrapper or an engine
    of `SYNCING`, or a collective handed a gradient (`dist.all_reduce(param.grad.data)`)?"""
    f = ctx.facts
    for call in f.calls:
        name = f.qualify(call.func) or ""
        if name.startswith(SYNCING):
            return True
        if name.startswith("torch.distributed.") and any(
                isinstance(n, cst.Attribute) and n.attr.value == "grad" for a in call.args for n in mt.findall(a.value, cst.Attribute)):
            return True
    return any(f.imports.imports_module(package) for package in SYNCING_PACKAGES)


@rule("DDP031")
def wrapper_bypassed(ctx: Context) -> Iterator[Hit]:
    """The training forward runs past the DDP wrapper (its `.module`): no gradient is averaged.

    Wrong:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = DDP(torch.nn.Linear(4, 1).cuda())
        loss = model.module(torch.randn(8, 4).cuda()).sum()
        loss.backward()

    Right:

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = DDP(torch.nn.Linear(4, 1).cuda())
        loss = model(torch.randn(8, 4).cuda()).sum()
        loss.backward()

    DDP averages the gradients in the backward of a forward it ran itself: its own `forward`
    arms the reducer's hooks for the backward that follows. A forward through `model.module`
    (`model.module(x)`, `model.module.forward_train(batch)`) records a graph DDP never saw, so
    the backward all-reduces nothing: each process steps with its own shard's gradients and the
    copies drift apart. Call the wrapper (give the model a `forward` that dispatches, or wrap the
    step's function). Found for a call through `.module` of a name that holds the wrapper whose
    result a `backward()` of the same function reads (once for each backward), where that
    function neither calls the wrapper itself nor hands it to a call (`regularizer(model, x)` may
    run its forward) before the backward with gradients on (a validation after it does not arm it), not with gradients off, not inside `with
    model.no_sync():`; and for a wrap thrown away as soon as it is made (`models.thrown_away`: its
    `.module` taken in the same expression, `self.model = DDP(self.model).module`, or only its
    parameters read, `get_grouped_parameters(DDP(model))` of a function that reads nothing else
    of it). Not in a program that all-reduces the gradients by hand
    (`dist.all_reduce(p.grad)`), nor where the name is not the wrapper there (the `else` of
    `isinstance(model, DDP)`), nor for `.module` read for anything else (saving, evaluation).
    """
    f = ctx.facts
    if not ctx.script.distributed or ctx.ddp_alone or _gradients_reduced_by_hand(ctx):
        return
    for wrap in ctx.script.calls_of(DDP):
        if (how := thrown_away(f, wrap)) is not None and not ctx.ranks.undistributed(wrap):
            yield Hit(wrap, f"`{f.code(wrap.func)}(...)` is thrown away at once ({how}): the model trains outside the "
                            "wrapper and no gradient is averaged between the processes; keep the wrapper and call it "
                            "in the training step")
    if not ctx.ddp_refs:
        return
    reported: set[cst.CSTNode] = set()
    for call in f.calls:
        held = _run_through_module(call)
        if held is None or ctx.holds_ddp(held) is None or ctx.unwrapped_here(held) or f.grad_disabled(call) \
                or _in_no_sync(f, call) or ctx.ranks.undistributed(call):
            continue
        func = f.scope(call)
        backward = _backward_of(f, call, func)
        if backward is None or backward in reported or any(
                isinstance(x, (cst.Name, cst.Attribute)) and ctx.holds_ddp(x) is not None
                for c in f.calls_in(func) if f.scope(c) is func and f.before(c, backward) and not f.grad_disabled(c)
                for x in (c.func, *(a.value for a in c.args if _may_call_what_it_is_handed(ctx, c)))):
            continue  # the wrapper's own forward runs before the backward too (or a helper it is handed to): it armed it
        reported.add(backward)
        yield Hit(call, f"`{f.code(call.func)}()` runs the forward past the DDP wrapper `{f.code(held)}`, and "
                        f"`{f.code(backward)}` averages no gradient between the processes: "
                        "DDP arms its all-reduce only in its own forward; call the wrapper")


def _gradients_reduced_by_hand(ctx: Context) -> bool:
    """Does the program hand a gradient to a collective (`dist.all_reduce(param.grad.data)`)?"""
    f = ctx.facts
    return any((f.qualify(call.func) or "").startswith("torch.distributed.") and any(
        isinstance(n, cst.Attribute) and n.attr.value == "grad" for a in call.args for n in mt.findall(a.value, cst.Attribute))
        for call in f.calls)


# builtins handed the wrapper that never call it
_ASKING = frozenset({"isinstance", "hasattr", "getattr", "type", "id", "len", "print", "str", "repr", "vars"})


def _may_call_what_it_is_handed(ctx: Context, call: cst.Call) -> bool:
    """May `call` run the forward of a model it is handed: a function of the program
    (`regularizer(model, x)`), or a call ddpify cannot name (`self.loss_fn(model, batch)`); not a
    builtin that asks about it (`isinstance(model, DDP)`) nor a library's function it names
    (`wandb.watch(model)`)."""
    f = ctx.facts
    if ctx.ranks.callees(call):
        return True
    name = call.func.value if isinstance(call.func, cst.Name) else None
    return f.qualify(call.func) is None and name not in _ASKING


def _run_through_module(call: cst.Call) -> cst.BaseExpression | None:
    """The object whose `.module` `call` runs: `model` of `model.module(x)` or of
    `model.module.forward_train(batch)`; None for any other call."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value != "module":
        func = func.value
    if isinstance(func, cst.Attribute) and func.attr.value == "module" and dotted(func.value):
        return func.value
    return None


def _in_no_sync(f, node: cst.CSTNode) -> bool:
    """Is `node` inside `with model.no_sync():` (a step that accumulates, synced by a later one)?"""
    return any(isinstance(a, cst.With) and any(isinstance(i.item, cst.Call) and mt.is_method_call(i.item, "no_sync")
                                              for i in a.items) for a in f.ancestors(node))


def _backward_of(f, call: cst.Call, func: cst.CSTNode) -> cst.Call | None:
    """The `backward()` of `func` that reads what `call` returns (through the names its value is
    bound to, in turn: `output = model.module(x)`, `loss = criterion(output, y)`,
    `loss.backward()`; `scaler.scale(loss).backward()`, `accelerator.backward(loss)`), after it."""
    tainted: set[str] = set()
    def reads(expr: cst.CSTNode) -> bool:
        return f.is_inside(call, expr) or any(n.value in tainted for n in mt.findall(expr, cst.Name))
    assigns = [(t, v, s) for t, v, s in f.assigns if f.scope(s) is func and f.before(call, s) or f.is_inside(call, s)]
    changed = True
    while changed:
        changed = False
        for target, value, _ in assigns:
            if reads(value):
                for name in mt.findall(target, cst.Name):
                    if name.value not in tainted and not (isinstance(target, cst.Attribute) and name is target.attr):
                        tainted.add(name.value)
                        changed = True
    for c in f.calls_in(func):
        if f.scope(c) is func and isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward" \
                and not f.before(c, call) and (reads(c.func.value) or any(reads(a.value) for a in c.args)):
            return c
    return None
