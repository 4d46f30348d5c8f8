"""wrap-model: wrap every model an optimizer trains in DistributedDataParallel.

    model = Net().to(device)
    model.load_state_dict(checkpoint["model"])
    optimizer = optim.Adam(model.parameters())
->
    model = Net().to(device)
    model.load_state_dict(checkpoint["model"])
    model = DistributedDataParallel(model, device_ids=device_ids(model))
    optimizer = optim.Adam(model.parameters())

The wrap follows the model's set-up (weight init, resumed weights, freezing: DDP must see
the final `requires_grad`), after it is on its device and before `torch.compile`.
`device_ids(model)` (runtime) is `[local GPU]` for a CUDA model and None on CPU, as DDP
requires; where the program has a `device_ids` of its own (`device, device_ids =
prepare_device(n_gpu)`), the runtime's is imported as `ddpify_device_ids`.
`nn.DataParallel(model)` is replaced by the same wrap; `model.module.x` between the two points becomes `model.x`, since the model is not wrapped yet there. One that no wrap replaces
in the function that builds a wrapped model (`if torch.cuda.device_count() > 1: model =
nn.DataParallel(model)` in `build_model`, then `model = build_model()`) is removed (with the `if`
around it when nothing else is left in it): a process that sees several GPUs would run it inside
DDP, and stop; each process drives one GPU, and the caller's wrap takes the module. Modules no optimizer
trains (frozen teachers, loss networks) are never wrapped; one run in training gets a warning, unless
the program copies a trained model's weights into it (a target network,
`target.load_state_dict(online.state_dict())`, or an EMA copy updated through
`zip(ema.parameters(), model.parameters())`): it follows that model, the same on every process. An optimizer whose model cannot be
found gets a TODO. A model whose optimizer trains only some sub-modules (`model.fc.parameters()`)
gets `find_unused_parameters=True`: DDP would otherwise wait for gradients of the rest. So
does a model some of whose parameters a step may leave without gradient (`ddpify.analysis.forward`):
outputs a training forward leaves unread (`validity, _, _ = netD(fake)`; `out["logits"]` alone of a
dict `forward` returns with another head), layers `forward`
never uses, parameters read for their device only, sub-modules used on some paths, the one module of a
container that a key picks (`self.heads[task](h)`), a sub-module it runs without gradients only (a target
network under `torch.no_grad()` or detached, its parameters not frozen); without it
DDP stops at the next step with "Expected to have finished reduction in the prior iteration".
A gradient penalty (`torch.autograd.grad` through the wrapper) gets its gradients tied to every
parameter of the model (`penalty_gradients(D, torch.autograd.grad(D(x), x, ...))`, a zero
weight): DDP waits after a forward for a gradient of all its parameters or none, and the
penalty's own backward reaches only some (not the biases). A module whose parameters may all be missing at run time (its class makes them under an
`if` of `__init__`: `criterion` of `Adam(list(model.parameters()) + list(criterion.parameters()))`
with a vocabulary too small to split) is wrapped only where it has one to train, and read
through `unwrap(...)`:

    criterion = SplitCrossEntropyLoss(emsize, splits=splits)
->
    criterion = SplitCrossEntropyLoss(emsize, splits=splits)
    if any(p.requires_grad for p in criterion.parameters()):
        criterion = DistributedDataParallel(criterion, device_ids=device_ids(criterion))

A model the program never calls but trains through its own methods (`loss = wgan.c_loss(x, z)`,
`scholar.train_with_replay(data)`: they run its sub-modules, outside DDP's forward, where DDP
averages gradients), or that runs a sub-module outside its forward beside it in a training step
(`model.classify(x)`, a method that runs `self.classifier`; `model.decoder(z)` after `z =
model(x)`: DDP would see those parameters used outside its forward, and with
find_unused_parameters stops, "marked as ready twice"; not a torch loss module, `model.loss(pred, y)`
of `self.loss = nn.MSELoss()`, which has no parameter), or whose deep copy `torch.autograd.grad`
goes through (a DARTS architect's `self.v_net = copy.deepcopy(net)`: a copy of the wrapper would
be a wrapper, without the model's methods), or that has a gradient penalty through it
while a step may leave some of its parameters without gradient (find_unused_parameters takes those
for unused, and the penalty's tied backward reaches them again: "marked as ready twice"), or that
an object keeps before its set-up ends (`trainer = Trainer(model)` whose `__init__` stores it, then
`model = model.to(device)`: the wrap follows the move, and the trainer would run the bare model),
is not wrapped:
`model = sync_gradients(model)` (runtime) starts every process from the main process's weights
and averages each gradient as backward computes it; the model keeps its class, its attributes
and its checkpoint keys. A deep copy of such a model that gradients are taken through (a DARTS
architect's unrolled copy, `self.v_net = copy.deepcopy(net)`) becomes
`sync_gradients(copy.deepcopy(net))`, since a copy keeps none of the original's hooks.

A model that is an item of a container the program fills with the modules it builds, picked by the
key of a loop where its optimizer is built (`nets['plain'] = Plain().to(device)`, then `for net in
nets: optim = AdamW(nets[net].parameters())`), has no name a wrapper could take: the item is synced
right before that optimizer, `nets[net] = sync_gradients(nets[net])`, and what the program reads,
saves and loads of it stays as it is. So is an item at a string key of the dict display (or
`nn.ModuleDict`) the program fills (`self.nets["gen"]` of `self.nets = nn.ModuleDict({"gen": Gen(),
"disc": Disc()})`); an item at a fixed index (`MODELS[0]`) keeps the TODO below.
So is each module of a list or dict the program builds (`models.append(Net())`, `[Net() for _ in
range(3)]`, `{'small': Net(), 'big': Big()}`, `{k: MODELS[k]() for k in names}` from a registry of
classes: an ensemble) where a comprehension or loop over it (its `values()`, `items()`,
`enumerate`) gives it its optimizer; the loop's variable names each item, never a model bound to
that name elsewhere (`self.net` inside some class); the container keeps the modules themselves, hooked:

    opts = [SGD(m.parameters()) for m in models]  ->  opts = [SGD(sync_gradients(m).parameters()) for m in models]

A DataParallel model that the training runs through its module's own method (`policy.module.sample(x)`,
a method that runs its forward or sub-modules, with gradients) gets a TODO at the wrap: that call
runs the module inside DDP, outside its forward, so its gradients would not be averaged (the
runtime's self-check names it too, `bypassed-wrapper`).

A program that wraps in DistributedDataParallel itself but never joins a process group
(`ddpify.analysis.distributed.own_wraps`: torch.distributed imported, a branch for
`--world-size > 1`, no `init_process_group`) is converted: the runtime joins the group, and the
program's own wrap of a model ddpify wraps is dropped, as a DataParallel is (the wrap after the
set-up applies on every path; two would nest):

    if args.world_size > 1:
        model.cuda()
        model = torch.nn.parallel.DistributedDataParallel(model)
->
    if args.world_size > 1:
        model.cuda()

Tensors that no module holds, given to an optimizer of their own (SAC's entropy temperature,
`log_alpha = torch.zeros(1, requires_grad=True)`), are synced where the optimizer takes them:

    alpha_optim = Adam([log_alpha], lr=lr)  ->  alpha_optim = Adam(sync_gradients([log_alpha]), lr=lr)

So are the values of a dict every item of which is such a tensor or an `nn.Parameter(...)` (a
meta-learner's weights in a plain `OrderedDict` its module never registers, `Adam(self.weights.values())`);
where the program also takes `torch.autograd.grad` of them in the class that builds the optimizer (an
inner loop), they are synced at the start only, `sync_gradients(self.weights.values(), at_step=True)`,
and `average_gradients(self.optimizer)` goes right before each of its steps, so that the inner loop's
gradients stay each process's own.

A sub-module of the wrapped model replaced after the wrap in its function (the critic's
`netD.main` rebuilt without its Sigmoid under the `if` that trains a WGAN, a new head in a
fine-tuning branch) gets the model wrapped again right after, so that DDP holds the new
parameters (and waits for none of those the model no longer runs; unwrap-model then reads
`netD.main` as `netD.module.main`):

    netD.main = nn.Sequential(*layers)  ->  netD.main = nn.Sequential(*layers)
                                            netD = DistributedDataParallel(netD.module, device_ids=device_ids(netD.module))

The same where a function of the program handed the wrapped model replaces its sub-module
(`as_critic(netD)`, whose body sets `net.main = ...`): the caller wraps it again after the call.

A name bound to the wrapped model after its wrap and wrapped itself below (a model trained, then
turned into another by a method that adds a sub-module, `model_tnet = model`,
`model_tnet.base.set_input_transform(tnet)`, and trained again with an optimizer of its own) takes
the module: its own wrap holds the module, not a wrapper (DDP in DDP), and what the program reads of
it before that wrap is the model's (the wrapper has no `base`):

    model_tnet = model  ->  model_tnet = model.module

Gradients of a wrapped model's parameters that `torch.autograd.grad` computes (first order) and
the program sets into `p.grad` by hand before a step (a meta-learning outer step summing each
task's) never reach DDP's backward: `average_gradients(model)` follows the loop that sets them;
where nothing sets them, a warning names them. A step with no backward at all, whose gradients the
program computes and sets by hand (contrastive divergence: `rbm.W.grad = -w_grad`, then
`optimizer.step()`), trains too: its loader is a training loader, the model (trained through its
own methods) is synced, so every process starts from the main process's parameters, and the
gradients are averaged right before the step, over the optimizer's parameters:

```
rbm.W.grad = -w_grad   ->  rbm.W.grad = -w_grad
optimizer.step()           average_gradients(optimizer)
                           optimizer.step()
```

A wrapped model that `torch.func.functional_call` runs with weights of the program's (a MAML
inner loop's adapted parameters) gets a TODO there: its gradients flow outside DDP's forward, and
averaging them as backward computes them would average the inner loop's own gradients too.

A model received by the function that builds its optimizer
(`def train(model, loader): optimizer = Adam(model.parameters())`) is wrapped where that
function is entered, after its set-up: the parameter is rebound, callers keep the bare model.

With `--strategy fsdp` the model is sharded with FSDP2 at the same point instead, and an
optimizer built before that point moves after it (`fully_shard` replaces the parameters, so an
optimizer over the old ones would train nothing):

    model = Net()
    optimizer = optim.Adam(model.parameters())
    model.to(device)
->
    model = Net()
    model.to(device)
    model = shard_model(model)
    optimizer = optim.Adam(model.parameters())

`shard_model` (runtime) shards each block of the model's `nn.ModuleList`/`nn.Sequential`
containers, then the root; the report names the containers where the model's class is in the
file. The statements that use the optimizer before that point move with it; one that also
sets the model up, or an optimizer in another block, gets a TODO instead.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from ddpify.analysis import forward, fsdp, objects
from ddpify.analysis.distributed import own_wraps
from ddpify.analysis.models import (WRAPPER, bare_tensors, builds_module, differentiated_copies, dry_run, partly_read,
                                   holds_wrapper, lazy_unwrapped, model_classes, penalties, weight_copies)
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import param_names, parameters_of
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts, Ref
    from ddpify.output.edits import Edits
    from ddpify.analysis.models import Model, Models
    from ddpify.options import Options

NAME = "wrap-model"
SUMMARY = "wrap each trained model in DistributedDataParallel (replacing DataParallel) after its set-up"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts, models = analysis.facts, analysis.models
    own = own_wraps(facts)
    ids = "ddpify_device_ids" if _names_its_own(facts, "device_ids") else "device_ids"
    rehanded: set[cst.CSTNode] = set()  # holders handed the wrapper after the wrap (`_holders_of_bare`)
    for model in models.wrapped:
        name = model.name
        _warn_made_in_forward(facts, edits, model, options)
        _warn_lazy(facts, edits, model, options)
        _warn_redrawn_in_forward(facts, edits, model)
        if options.fsdp:
            _shard(facts, edits, model, options)
            continue
        if model.synced:
            _sync(edits, model, any(facts.is_backward(c) or facts.parameter_gradients(c) is not None
                                    for c in facts.calls_named("backward", "grad")))
            _sync_copies(facts, edits, model)
            continue
        _warn_buffer_updated_in_forward(facts, edits, model)
        unused = _why_unused(model)
        extra = ", find_unused_parameters=True" if options.find_unused_parameters or unused else ""
        if unused and not options.find_unused_parameters:
            edits.warn(model.anchor, f"{unused}: DDP is built with find_unused_parameters=True, since the "
                         "other parts may get no gradient in a step")
        _warn_partly_read(facts, edits, models, model, bool(extra))
        wrap = f"{name} = DistributedDataParallel({name}, device_ids={ids}({name}){extra})\n"
        if model.empty:  # DDP refuses a module with no parameter to train
            wrap = f"if any(p.requires_grad for p in {name}.parameters()):\n    {wrap}"
        elif model.maybe_none:  # built on some paths only
            wrap = f"if {name} is not None:\n    {wrap}"
        holders = list(_holders_of_bare(facts, model))
        lines = [wrap, *(f"{holder}.{attribute} = {name}\n" for holder, attribute, _ in holders)]
        rehanded.update(site for _, _, site in holders)
        if options.sync_batchnorm:
            lines.insert(0, f"{name} = convert_sync_batchnorm({name})\n")
            edits.add_import("ddpify_runtime", "convert_sync_batchnorm")
        if model.dataparallel is not None:
            _replace_dataparallel(facts, edits, model, lines, "DistributedDataParallel")
        else:
            (edits.insert_before if model.before_anchor else edits.insert_after)(model.anchor, *lines)
            where = (f" where {model.defined.name.value}() receives it" + (
                " (it returns the wrapper: a caller that keeps what it returns holds the wrapper)"
                if any(mt.is_name(r, name) for r in facts.returned(model.defined))
                else " (the caller keeps the bare model)")) if isinstance(model.defined, cst.FunctionDef) else ""
            if model.empty:
                where += f" where it has a parameter to train ({model.empty}, and DDP refuses a module without one)"
            elif model.maybe_none:
                where += " where it is built (it is None on the other path)"
            edits.record(model.anchor, f"`{name}` wrapped in DistributedDataParallel{where}", needs_group=True)
            _record_holders(edits, model, holders)
        edits.add_import("torch.nn.parallel", "DistributedDataParallel")
        edits.add_import("ddpify_runtime", "device_ids" if ids == "device_ids" else f"device_ids as {ids}")
        _rewrap_replaced(facts, edits, model, extra, ids)
        _sync_reloaded(facts, edits, model)
        _drop_own_wraps(facts, edits, model, own)
    if not options.fsdp and any(not model.synced for model in models.wrapped):
        _stray_dataparallel(facts, edits, models)
    _alias_takes_module(facts, edits, models, options)
    left = "unsharded" if options.fsdp else "unwrapped"
    for name, stmt in _untrained_models(facts, models, rehanded):
        edits.warn(stmt, f"`{name}` runs in training but no optimizer trains it: left {left} (right for a "
                     "frozen or loss-only module; wrap it if it should learn)")
    for call, model, _ in penalties(facts, models.refs):
        if options.fsdp or model is None:
            edits.todo(facts.statement(call), _PENALTY_FSDP if options.fsdp else _PENALTY_DDP)
            continue
        code = facts.code(model)
        edits.replace(call, lambda node, code=code: cst.Call(cst.Name("penalty_gradients"), [
            cst.Arg(cst.parse_expression(code)), cst.Arg(node)]),
            f"the gradient penalty's gradients tied to every parameter of `{code}` (penalty_gradients): DDP "
            "waits for a gradient of all of them after its forward, and the penalty's backward gives some only")
        edits.add_import("ddpify_runtime", "penalty_gradients")
    _untraced(facts, edits, models, options)
    _functional_calls(facts, edits, models, options)
    _hand_set_gradients(facts, edits, models, options)
    _hand_set_steps(facts, edits, options)


def _hand_set_gradients(facts: Facts, edits: Edits, models: Models, options: Options) -> None:
    """Gradients of a wrapped model's parameters that `torch.autograd.grad` computes, first order,
    and the program sets by hand (a meta-learning outer step summing each task's gradients, then
    `p.grad = g / len(tasks)` and `meta_opt.step()`): DDP averages only what `.backward()`
    accumulates, so each process stepped its own and the replicas diverged. They are averaged
    over the processes after the loop that sets them:

        for p, g in zip(model.parameters(), grads):  ->  for p, g in zip(model.parameters(), grads):
            p.grad = g / len(tasks)                          p.grad = g / len(tasks)
                                                         average_gradients(model)

    Where no loop of that function sets them (an inner loop that adapts a copy, an update by hand),
    a warning says DDP does not average them. (Not with `--strategy fsdp`.)"""
    if options.fsdp:
        return
    done: set[cst.CSTNode] = set()
    for call in facts.calls_named("grad"):
        owner = facts.parameter_gradients(call)
        if owner is None or holds_wrapper(facts, models.refs, owner) is None:
            continue
        code = facts.code(owner)
        loops = [lp for lp in facts.loops_in(facts.scope(call)) if _sets_gradients_of(facts, lp, code)]
        for loop in loops:
            if loop not in done:
                done.add(loop)
                edits.insert_after(loop, f"average_gradients({code})\n")
                edits.record(loop, f"gradients of `{code}`'s parameters set by hand (torch.autograd.grad) averaged "
                             "over the processes (average_gradients): DDP averages only what .backward() accumulates")
                edits.add_import("ddpify_runtime", "average_gradients")
        if not loops:
            edits.warn(facts.statement(call), f"torch.autograd.grad of `{code}`'s parameters: DDP does not average "
                       "these gradients (it averages what .backward() accumulates); where an optimizer steps with "
                       f"them, call average_gradients({code}) after setting them, or the processes diverge")


def _hand_set_steps(facts: Facts, edits: Edits, options: Options) -> None:
    """An optimizer stepped after the program set gradients by hand, with no backward in that loop
    (contrastive divergence: the model's own method returns the gradients, the loop assigns them
    and Adam steps; `Facts.gradients_set_by_hand`, a training step): DDP averages only what
    `.backward()` accumulates, so each process would step its own. They are averaged over the
    processes right before the step, over the optimizer's parameters:

        rbm.W.grad = -w_grad          ->  rbm.W.grad = -w_grad
        rbm.h_bias.grad = -h_grad         rbm.h_bias.grad = -h_grad
        optimizer.step()                  average_gradients(optimizer)
                                          optimizer.step()

    The same where a helper the loop calls before the step sets them (`set_grads(g)`, whose body
    sets `rbm.W.grad = -g`). (The model that trains this way, never through its forward, is synced,
    not wrapped: its processes start from the main process's parameters, `sync_gradients`.) Not
    with `--strategy fsdp`, where the TODO of reach stays."""
    if options.fsdp:
        return
    for call in facts.calls:
        if not facts.steps_an_optimizer(call):
            continue
        node = next(facts.enclosing_loops(call), None) or facts.scope(call)
        set_before = [target for where, target in facts.hand_set_gradients(node) if facts.before(where, call)]
        if not set_before or any(facts.is_backward(c) or facts.parameter_gradients(c) is not None
                                 for c in (facts.calls_of(node) if isinstance(node, cst.FunctionDef)
                                           else facts.calls_in(node))):
            continue
        optimizer = facts.code(call.func.value)  # type: ignore[attr-defined]
        stmt = facts.statement(call)
        edits.insert_before(stmt, f"average_gradients({optimizer})\n")
        edits.record(stmt, f"gradients set by hand (`{facts.code(set_before[0])} = ...`, no .backward()) averaged "
                     f"over the processes before `{optimizer}` steps (average_gradients, over its parameters): DDP "
                     "averages only what .backward() accumulates", needs_group=True)
        edits.add_import("ddpify_runtime", "average_gradients")


def _sets_gradients_of(facts: Facts, loop: cst.For | cst.While, code: str) -> bool:
    """`for p, g in zip(model.parameters(), grads): p.grad = ...` (or over `model.parameters()`):
    a loop over `code`'s parameters that sets a gradient of each to a value."""
    if not isinstance(loop, cst.For):
        return False
    it = loop.iter
    over = [it, *(a.value for a in it.args)] if isinstance(it, cst.Call) and mt.is_name(it.func, "zip") else [it]
    if not any(facts.code(o) == code for e in over if (o := parameters_of(e)) is not None):
        return False
    bound = {n.value for n in facts.findall(loop.target, cst.Name)}
    return any(isinstance(t, cst.Attribute) and t.attr.value == "grad" and isinstance(t.value, cst.Name)
               and t.value.value in bound and not mt.is_name(v, "None")
               for t, v, _ in facts.writes_in(facts.scope(loop)) if facts.is_inside(t, loop.body))


def _alias_takes_module(facts: Facts, edits: Edits, models: Models, options: Options) -> None:
    """A name bound to a wrapped model after its wrap, and wrapped itself below, takes the wrapped
    model's module (a PointNet study trains the vanilla classifier, then turns it into a T-Net model,
    `model_tnet = model`, `model_tnet.base.set_input_transform(tnet)`, a new optimizer, decision
    0226): its own wrap then holds the module (a wrapper wrapped again would nest DDP, and hold the
    parameters of the first wrap's time), and what the program reads of it before that wrap is the
    model's own (the wrapper has no `base`):

        model_tnet = model  ->  model_tnet = model.module

    A name bound so that no wrap of its own follows (`evaluator = model`, run for its forward) keeps
    the wrapper, as one bound before the wrap keeps the bare model. Not with FSDP (nothing nests)."""
    if options.fsdp:
        return
    plain = [m for m in models.wrapped if not (m.synced or m.maybe_none or m.empty or m.dataparallel is not None)]
    for alias in plain:
        scope = facts.scope(alias.anchor)
        for target, value, stmt in facts.assigns:
            if not mt.is_name(target, alias.name) or not isinstance(value, cst.Name) or facts.scope(stmt) is not scope \
                    or alias.sees_wrapper(facts, stmt):
                continue
            source = next((m for m in plain if m is not alias and m.name == value.value
                           and facts.scope(m.anchor) is scope and m.sees_wrapper(facts, stmt)), None)
            if source is not None:
                edits.replace(value, lambda node: cst.Attribute(node, cst.Name("module")),
                              f"`{alias.name} = {source.name}` takes `{source.name}.module`: `{source.name}` is "
                              f"wrapped here, and `{alias.name}` is wrapped itself below (DDP in DDP would not run)")


def _rewrap_replaced(facts: Facts, edits: Edits, model: Model, extra: str, ids: str = "device_ids") -> None:
    """A sub-module of the wrapped model replaced after the wrap, in its function (`netD.main =
    nn.Sequential(*list(netD.main.children())[:-1], nn.Linear(4, 1))` under the `if` that trains
    a WGAN's critic, `model.fc = nn.Linear(512, 10)` in a fine-tuning branch): DDP averages the
    gradients of the parameters it held when it was built, so the new ones trained apart on each
    process, and one it held that the model no longer runs stops the next step ("Expected to have
    finished reduction"). The model is wrapped again right after:

        netD.main = nn.Sequential(...)  ->  netD.main = nn.Sequential(...)
                                            netD = DistributedDataParallel(netD.module, device_ids=device_ids(netD.module))

    The same where a function of the program handed the wrapped model replaces it
    (`def as_critic(net): net.main = ...` called as `as_critic(netD)` after the wrap): rebinding
    its parameter would not reach the caller, so the caller wraps it again after the call:

        as_critic(netD)  ->  as_critic(netD)
                             netD = DistributedDataParallel(netD.module, device_ids=device_ids(netD.module))
    """
    if model.maybe_none or model.empty:
        return
    name = model.name
    scope = facts.scope(model.anchor)
    for target, value, stmt in facts.assigns:
        owner = target.value if isinstance(target, cst.Attribute) else None
        if owner is None or dotted(owner) != name or not builds_module(facts, value) \
                or not model.sees_wrapper(facts, stmt) or facts.scope(stmt) is not scope:
            continue
        _rewrap_after(facts, edits, facts.statement(target), name, extra, ids, f"`{dotted(target)}` replaced")
    for call in facts.calls_of(scope):
        if not any(mt.is_name(arg.value, name) for arg in call.args) or not model.sees_wrapper(facts, call):
            continue
        replaced = [f"`{dotted(target)}`" for func in facts.user_functions(call) for target in _replaced_in(facts, func)
                    if mt.is_name(facts.argument_for(call, func, dotted(target.value) or ""), name)]
        if replaced:
            _rewrap_after(facts, edits, facts.statement(call), name, extra, ids,
                          f"{replaced[0]} replaced by `{facts.code(call.func)}()`")


WHOLE_LOADS = frozenset({"torch.load", "pickle.load", "dill.load"})


def _sync_reloaded(facts: Facts, edits: Edits, model: Model) -> None:
    """The wrapped model's name rebound, after the wrap and in its function, to a model the program
    loads whole (`model, opt = torch.load(f, weights_only=False)` after `torch.save([model, opt],
    f)`, which saves the model itself: unwrap-model), and trained after that: the name then holds
    the bare model, which each process trained apart on its shard, its copies drifting, and
    nothing said so. Its gradients are averaged from there on as backward computes them (the
    optimizer loaded with it holds its parameters): synced, not wrapped, since what the program
    reads of the name after the load (`model.init_hidden(2)`) is the model's own, as the analysis
    reads it:

        model, opt = torch.load(f, weights_only=False)  ->  model, opt = torch.load(f, weights_only=False)
                                                            model = sync_gradients(model)
    """
    if model.maybe_none or model.empty:
        return
    name = model.name
    scope = facts.scope(model.anchor)
    for target, value, stmt in facts.assigns:
        names = [dotted(e.value) for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [dotted(target)]
        if name not in names or not isinstance(value, cst.Call) or facts.qualify(value.func) not in WHOLE_LOADS \
                or facts.scope(stmt) is not scope or not model.sees_wrapper(facts, stmt) \
                or not _trains_after(facts, facts.statement(stmt), scope):
            continue
        line = facts.statement(stmt)
        edits.insert_after(line, f"{name} = sync_gradients({name})\n")
        edits.add_import("ddpify_runtime", "sync_gradients")
        edits.record(line, f"`{name}` loaded whole after the wrap and trained again: the load gives the model "
                     "itself, which each process would train apart; its gradients are averaged as backward "
                     "computes them (sync_gradients), the model stays as it is", needs_group=True)


def _trains_after(facts: Facts, stmt: cst.CSTNode, scope: cst.CSTNode) -> bool:
    """Does a statement after `stmt` in its function (or module) train, itself or through the
    functions it calls (`facts.trains`)?"""
    node = stmt
    while node is not None and node is not scope:
        parent = facts.parent(node)
        body = getattr(parent, "body", None)
        items = body if isinstance(body, (list, tuple)) else getattr(body, "body", ())
        if isinstance(items, (list, tuple)) and node in items:
            if any(facts.trains(later) for later in items[items.index(node) + 1:]):
                return True
        node = parent
    return False


def _replaced_in(facts: Facts, func: cst.FunctionDef) -> list[cst.Attribute]:
    """The attributes of `func`'s parameters it sets to a module it builds (`net.main = nn.Sequential(...)`)."""
    params = param_names(func)
    return [target for target, value, stmt in facts.assigns
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
            and target.value.value in params and facts.scope(stmt) is func and builds_module(facts, value)]


def _rewrap_after(facts: Facts, edits: Edits, stmt: cst.CSTNode, name: str, extra: str, ids: str, what: str) -> None:
    inner = f"{name}.module"
    edits.insert_after(stmt, f"{name} = DistributedDataParallel({inner}, device_ids={ids}({inner}){extra})\n")
    edits.record(stmt, f"{what} after the wrap: `{name}` wrapped again, so that DistributedDataParallel "
                 "averages the gradients of the new parameters (and waits for no gradient of those it no longer "
                 "runs)", needs_group=True)


FUNCTIONAL_CALLS = frozenset({"torch.func.functional_call", "torch.nn.utils.stateless.functional_call"})


def _functional_calls(facts: Facts, edits: Edits, models: Models, options: Options) -> None:
    """A TODO at each `torch.func.functional_call(model, params, args)` with gradients whose model is
    wrapped (a MAML inner loop's adapted weights, `{k: v - lr * g ...}` of its `named_parameters()`):
    the module runs with the program's tensors in place of its parameters, outside DDP's forward,
    so DDP averages none of the gradients that reach the parameters through them (and, handed the
    wrapper, functional_call looks the module's names up on DDP: AttributeError). Averaging each
    gradient as backward computes it would also average the inner loop's own `autograd.grad`
    across the processes' tasks: only the meta-gradient may be averaged, by hand. (FSDP2 keeps the
    model's class and names: not looked at.)"""
    for call in facts.calls_to(*FUNCTIONAL_CALLS) if not options.fsdp else ():
        first = mt.positional(call, 0) or mt.keyword(call, "module")
        if first is not None and not facts.grad_disabled(call) \
                and holds_wrapper(facts, models.refs, first.value) is not None:
            edits.todo(facts.statement(call), f"`{facts.code(call.func)}` runs `{facts.code(first.value)}` with "
                       "weights of the program's, outside DistributedDataParallel's forward: DDP averages none of the "
                       "gradients that flow through them, and given the wrapper the call fails (AttributeError); "
                       "ddpify cannot convert this: pass the module (`.module`) and average each parameter's .grad "
                       "by hand (torch.distributed.all_reduce, then divide by get_world_size()) before the "
                       "optimizer's step")


def _untraced(facts: Facts, edits: Edits, models: Models, options: Options) -> None:
    """The optimizers whose model was not found: the tensors of one that no module holds are synced;
    the others get a TODO. Where the program also takes `torch.autograd.grad` of them (a
    meta-learner's inner loop, in the class that builds the optimizer), averaging each gradient
    as backward computes it would average the inner loop's gradients across the processes' tasks
    too: only the step's may be averaged, so they are synced at the start only and averaged
    right before each step of that optimizer (`_synced_at_step`)."""
    unsharded = " (until a model is wrapped, ddpify leaves the training data whole too)" if not models.wrapped \
        else " (until it is, ddpify leaves the training data whole too)"
    wrap = "shard it with `model = shard_model(model)` before building the optimizer" if options.fsdp else \
        "wrap that model in DistributedDataParallel(model, device_ids=device_ids(model))"
    for optimizer in models.untraced:
        tensors = bare_tensors(facts, optimizer)
        if tensors is not None and _synced_at_step(facts, edits, optimizer, tensors):
            continue
        if tensors is not None:
            edits.replace(tensors, lambda node: cst.Call(cst.Name("sync_gradients"), [cst.Arg(node)]),
                          f"the optimizer's tensors `{facts.code(tensors)}` belong to no module, so no wrapper syncs "
                          "them: their gradients are averaged as backward computes them (sync_gradients)",
                          needs_group=True)
            edits.add_import("ddpify_runtime", "sync_gradients")
            continue
        if (lazy := lazy_unwrapped(facts, optimizer)) is not None:
            _todo_dry_run(facts, edits, optimizer, *lazy, options, unsharded)
            continue
        edits.todo(facts.statement(optimizer), f"could not tell which model this optimizer trains: {wrap} "
                   f"by hand{unsharded}")


def _todo_dry_run(facts: Facts, edits: Edits, optimizer: cst.CSTNode, lazy: str, model: Model, options: Options,
                  unsharded: str) -> None:
    """The TODOs of an optimizer whose model would be wrapped where it is ready (`models.lazy_unwrapped`:
    after the branches that bind it) but for a lazy layer, no dry run before that place: one at the
    statement the wrap would follow (a dry run belongs right after it: torch's LazyModuleMixin asks
    for "dry runs" that "send inputs of the correct size, dtype, and device through the network"
    before it is used; DDP refuses uninitialized parameters), and one at the optimizer. Where the
    program runs one there, the model is wrapped after it. Round 28's ddpm U-Net (`nn.LazyConv2d`):
    before, "could not tell which model this optimizer trains", the layer and the place unnamed.
    ddpify writes no dry run itself: it cannot tell the input's shape (ddpm's forward takes `x_t, t`
    made inside the object's `train`), and a forward there draws random numbers and moves the
    running statistics of the batch norms the single-process run would not have moved yet."""
    wrapper = "FSDP" if options.fsdp else "DistributedDataParallel"
    name = model.name
    wrap = f"shard_model({name})" if options.fsdp else f"DistributedDataParallel({name}, device_ids=device_ids({name}))"
    edits.todo(model.anchor, f"{lazy} makes its parameters at the first forward, and {wrapper} refuses parameters not "
               f"made yet, so `{name}` is left unwrapped{unsharded}: right after this statement (and its block), run "
               f"`{name}` once on a batch of the input's shape (a dry run), then {name} = {wrap} (ddpify wraps it "
               "after a dry run it finds there)")
    edits.todo(facts.statement(optimizer), f"this optimizer trains `{name}`, left unwrapped: {lazy} makes its "
               "parameters at the first forward (see the TODO where the dry run belongs)")


def _synced_at_step(facts: Facts, edits: Edits, optimizer: cst.CSTNode, tensors: cst.BaseExpression) -> bool:
    """Tensors no module holds, stepped by their own optimizer, whose gradients the program also
    takes by `torch.autograd.grad` in the class that builds it (or its function): the start is the
    main process's, and the gradients are averaged right before each step of that optimizer, not
    as backward computes them (the inner loop's `autograd.grad` stays each process's own). A
    meta-learner's weights in a plain dict of Parameters, stepped in its forward:

        self.optimizer = Adam(self.weights.values())  ->  self.optimizer = Adam(sync_gradients(self.weights.values(), at_step=True))
        ...                                               ...
        losses.backward()                                 losses.backward()
        self.optimizer.step()                             average_gradients(self.optimizer)
                                                          self.optimizer.step()

    False (nothing done) where no such gradient is taken, or no `.step()` of the optimizer is found:
    the hooks of `sync_gradients` average them then."""
    owner = facts.enclosing_class(optimizer) or facts.scope(optimizer)
    if not any(facts.qualify(c.func) == "torch.autograd.grad" for c in facts.calls_in(owner)):
        return False
    flow = objects.of(facts)
    steps = [c for c in facts.calls if mt.is_method_call(c, "step") and not c.args
             and optimizer in flow.values(c.func.value)]  # type: ignore[attr-defined]
    if not steps:
        return False
    synced = cst.ensure_type(cst.parse_expression("sync_gradients(_, at_step=True)"), cst.Call)
    edits.replace(tensors, lambda node: synced.with_changes(args=[cst.Arg(node), synced.args[1]]),
        f"the optimizer's tensors `{facts.code(tensors)}` belong to no module, so no wrapper syncs them, and the "
        "program takes torch.autograd.grad of them too: every process starts from the main process's values "
        "(sync_gradients), and the optimizer's gradients are averaged right before each step (average_gradients), "
        "so that the other gradients stay each process's own", needs_group=True)
    for call in steps:
        code = facts.code(call.func.value)  # type: ignore[attr-defined]
        edits.insert_before(facts.statement(call), f"average_gradients({code})\n")
        edits.record(facts.statement(call), f"the gradients of `{code}`'s tensors averaged over the processes before "
                     "it steps (average_gradients)", needs_group=True)
    edits.add_import("ddpify_runtime", "sync_gradients")
    edits.add_import("ddpify_runtime", "average_gradients")
    return True


_PENALTY_DDP = ("torch.autograd.grad through a model DistributedDataParallel wraps (a gradient penalty), run in "
                "another function than the model's forward: DDP waits after each forward for a gradient of every "
                "parameter, which the penalty's backward does not give, and training stops with \"Expected to "
                "have finished reduction\"; wrap the result: penalty_gradients(model, torch.autograd.grad(...))")
_PENALTY_FSDP = ("torch.autograd.grad through a sharded model (a gradient penalty): FSDP2 reduce-scatters "
                 "gradients in its backward hooks, which this pass runs too; ddpify has not verified this "
                 "form: check it by hand")


def _sync_copies(facts: Facts, edits: Edits, model: Model) -> None:
    """`copy.deepcopy(net)` of a synced model, where gradients are taken through the copy (a DARTS
    architect's unrolled step: `torch.autograd.grad(self.v_net.loss(x, y), self.v_net.alphas())`):
    the copy is synced too (`models.differentiated_copies`). A deep copy keeps no hook of the
    original's, so each process would step its own gradients from the copy into the model
    (`alpha.grad = ...`) and the processes' parameters would part. A copy nothing differentiates
    (an EMA copy, a best model kept) is left as it is."""
    for call, kept in differentiated_copies(facts, model):
        edits.replace(call, lambda node: cst.Call(cst.Name("sync_gradients"), [cst.Arg(node)]),
                      f"`{kept}`, a copy of the synced `{model.name}` that gradients are taken through: its gradients "
                      "are averaged too (sync_gradients), or each process would step the model by its own",
                      needs_group=True)
        edits.add_import("ddpify_runtime", "sync_gradients")


def _warn_partly_read(facts: Facts, edits: Edits, models: Models, model: Model, unused: bool) -> None:
    """A warning at each training forward of a model DDP finds unused parameters of whose value the
    step reads in part (`models.partly_read`: `pred = out.get("pred")`): the parameters behind the
    unread outputs count as used, and DDP stops at the next step waiting for their gradients.
    `unused`: DDP is built with find_unused_parameters=True."""
    for call, pick in partly_read(facts, models, model) if unused else ():
        edits.warn(facts.statement(call), f"`{facts.code(call)}` may return more than the step reads "
                   f"(`{facts.code(pick)}` is taken from it): DistributedDataParallel, built with "
                   "find_unused_parameters=True, counts every parameter the unread outputs were computed from "
                   "as used and waits for its gradient (\"not all `forward` outputs participate in computing "
                   "loss\" at the next step); where the same parameters go without gradient every step, build "
                   f"`{model.name}`'s wrapper with static_graph=True instead, or have forward return only what "
                   "the loss reads")


def _warn_made_in_forward(facts: Facts, edits: Edits, model: Model, options: Options) -> None:
    """A warning at a model whose forward makes sub-modules the first time it runs (`self.fc =
    nn.Linear(n, h)` under `if self.fc is None:`): the wrapper is built before, so it neither
    broadcasts those parameters nor averages their gradients, and the optimizer, built before the
    first forward, does not step them: they differ between the processes (and so does anything
    computed over all of `model.parameters()`, such as the norm gradient clipping scales by)."""
    late = next(filter(None, (forward.made_in_forward(facts, cls) for cls in model_classes(facts, model))), None)
    if late is not None:
        wrapper = "FSDP" if options.fsdp else "DistributedDataParallel"
        edits.warn(model.anchor, f"{late}: parameters a model makes after it is wrapped are not in {wrapper} "
                   f"(not broadcast, their gradients not averaged) nor in an optimizer built before its first "
                   f"forward: `{model.name}` trains them apart on each process; make them in __init__, or run "
                   "one forward pass before the wrap and the optimizer")


def _warn_lazy(facts: Facts, edits: Edits, model: Model, options: Options) -> None:
    """A warning at a model with lazy layers (`forward.lazy_layers`: `nn.LazyLinear`) that no dry
    run of its set-up builds before the wrap (`models.dry_run`; the wrap follows one where there is):
    DistributedDataParallel (and FSDP) refuse parameters that are not made yet, and the program
    stops there ("Modules with uninitialized parameters can't be used")."""
    lazy = next(filter(None, (forward.lazy_layers(facts, cls) for cls in model_classes(facts, model))), None)
    if lazy is not None and not any(dry_run(facts, stmt, model.name) for stmt in model.setup):
        wrapper = "FSDP" if options.fsdp else "DistributedDataParallel"
        edits.warn(model.anchor, f"{lazy} makes its parameters at the first forward, and {wrapper} refuses "
                   f"parameters not made yet: run `{model.name}` once on a batch of the input's shape right "
                   "after building it (a dry run), before the wrap and the optimizer")


def _warn_redrawn_in_forward(facts: Facts, edits: Edits, model: Model) -> None:
    """A warning at a model whose forward draws a parameter again from random numbers
    (`forward.redrawn_in_forward`: `torch.nn.init.xavier_uniform_(self.proj.weight)` at every call):
    each process draws its own, so that parameter differs between the processes in training, where
    one process would use one draw per batch; the runtime's end_epoch() gives every process the main
    process's again at each epoch's end."""
    drawn = next(filter(None, (forward.redrawn_in_forward(facts, cls) for cls in model_classes(facts, model))), None)
    if drawn is not None:
        edits.warn(model.anchor, f"{drawn}: each process draws its own, so `{model.name}`'s copies of it differ "
                   "between the processes in training (DDP averages gradients, it copies no parameter; at each "
                   "epoch's end every process takes the main process's); draw it from a generator seeded alike "
                   "on every process where the copies should agree")


def _warn_buffer_updated_in_forward(facts: Facts, edits: Edits, model: Model) -> None:
    """A warning at a model whose forward updates a registered buffer in place from the batch
    (`forward.buffer_updated_in_forward`: the EMA codebook of a VQ-VAE, `self.ema_w.data.mul_(decay)
    .add_(...)` under `if self.training:`): DistributedDataParallel (broadcast_buffers=True) copies
    the main process's buffers to every process at each forward, so the buffer learns from the main
    process's batches only and the others' updates are lost, silently. (Torch's norm layers' running
    statistics are the known, accepted case: not warned.)"""
    found = next(filter(None, (forward.buffer_updated_in_forward(facts, cls) for cls in model_classes(facts, model))),
                 None)
    if found is not None:
        edits.warn(model.anchor, f"{found}: DistributedDataParallel copies the main process's buffers to every "
                   f"process at each forward (broadcast_buffers=True), so `{model.name}`'s buffer learns from the "
                   "main process's batches only and the other processes' updates are lost; all-reduce the "
                   "statistics before the update (torch.distributed.all_reduce), or wrap with "
                   "broadcast_buffers=False and sync the buffer by hand")


def _names_its_own(facts: Facts, name: str) -> bool:
    """Does the program use `name` as a name of its own (`device, device_ids = prepare_device(n_gpu)`,
    `def run(model, device_ids):`), not only as a keyword or an attribute (`device_ids=...`,
    `self.device_ids`)? The runtime's function of that name is then imported as `ddpify_<name>`, or
    the program's would hide it where the wrap calls it ("'list' object is not callable")."""
    return any(not (isinstance(parent := facts.parent(n), cst.Arg) and parent.keyword is n)
               and not (isinstance(parent, cst.Attribute) and parent.attr is n)
               for n in facts.names_spelled(name))


def _sync(edits: Edits, model: Model, backward: bool = True) -> None:
    """`model = sync_gradients(model)` where DDP would wrap it: a model trained through its own
    methods (`model.synced`), whose forward DDP never sees. `backward`: the program runs one (else
    it steps only gradients it sets by hand, `_hand_set_steps`, and the record says so)."""
    name = model.name
    line = f"{name} = sync_gradients({name})\n"
    if model.inline is not None:  # `[SGD(sync_gradients(m).parameters()) for m in models]`: the item itself, hooked
        edits.replace(model.inline, lambda node: cst.Call(cst.Name("sync_gradients"), [cst.Arg(node)]),
                      f"`{model.synced.split('.')[0]}` trains itself in `{model.synced}()` (its optimizer over `self.parameters()`, its "
                      "forward and backward there), never through DistributedDataParallel's forward: its gradients are "
                      "averaged as backward computes them (sync_gradients) where the optimizer takes it, with every "
                      "layer it holds by then; the object stays as it is" if mt.is_name(model.inline, "self") else
                      f"`{name}`, a module kept on an object that is no model, built where no name holds it to wrap: its "
                      "gradients are averaged as backward computes them (sync_gradients) where its optimizer takes "
                      "it; the object keeps the module itself" if isinstance(model.inline, cst.Attribute) else
                      f"`{name}`, each module of the container its optimizer's loop goes over, which no name holds "
                      "to wrap: its gradients are averaged as backward computes them (sync_gradients); the "
                      "container keeps the modules themselves", needs_group=True)
        edits.add_import("ddpify_runtime", "sync_gradients")
        return
    if model.empty:
        line = f"if any(p.requires_grad for p in {name}.parameters()):\n    {line}"
    elif model.maybe_none:
        line = f"if {name} is not None:\n    {line}"
    (edits.insert_before if model.before_anchor else edits.insert_after)(model.anchor, line)
    where = f" where {model.defined.name.value}() receives it" if isinstance(model.defined, cst.FunctionDef) else ""
    why = (f"`{name}` has a gradient penalty through it (`{model.synced}(...)`) and parameters a step may leave "
           f"without gradient ({_why_unused(model)}): DistributedDataParallel with find_unused_parameters takes "
           f"those for unused at the forward's end and the penalty's backward reaches them again (\"marked as "
           f"ready twice\")" if model.penalty else
           f"`{name}` is an item of a container of modules that the training picks by key, which no name "
           f"holds to wrap: it is synced where its optimizer is built, and the program's reads, saves and "
           f"loads of the item stay as they are" if model.item else
           f"`{model.synced}` keeps `{name}` before it is ready to wrap (on its device, set up): that "
           f"object would run the bare model, never DistributedDataParallel's forward, which averages "
           f"gradients" if model.kept else
           f"`{name}` is a sub-module of the module that holds it, whose state dict the program reads or "
           f"loads (`{model.synced}`): a DistributedDataParallel there would put `module.` into each of its "
           f"keys under `{name.split('.', 1)[1]}.`, and checkpoints would no longer load into the single-GPU model"
           if model.held else
           f"`{name}` is deep-copied and gradients are taken through the copy (`{model.synced}`): a copy of a "
           f"DistributedDataParallel wrapper would be a wrapper, which has none of the model's own methods, and no "
           f"wrapper averages the gradients taken through it" if model.copied else
           f"`{name}` runs more than once before a backward through an earlier run of it (`{model.synced}`, after "
           f"another backward since): DistributedDataParallel averages the gradients of the first backward after "
           f"its last forward only, and this one's would stay each process's own" if model.again else
           f"`{name}` hands a parameter of a sub-module to a call outside its forward in training "
           f"(`{model.synced}`, beside `{name}(...)`): DistributedDataParallel would see it get its gradient outside "
           f"its forward (with find_unused_parameters, for a sub-module the forward never runs, it stops: \"marked "
           f"as ready twice\")" if model.read_beside else
           f"`{name}` has parameters its forward never uses ({_why_unused(model)}), and a method of its own reads one "
           f"in training (`{model.synced}(...)`, beside `{name}(...)`): DistributedDataParallel with "
           f"find_unused_parameters takes it for unused at the forward's end and stops when backward reaches it "
           f"(\"marked as ready twice\")" if model.idle_read else
           f"`{name}` runs sub-modules outside its forward in training (`{model.synced}(...)`, beside `{name}(...)`): "
           f"DistributedDataParallel would see their parameters used outside its forward (it averages the "
           f"gradients of its own forward only; with find_unused_parameters it stops: \"marked as ready twice\")"
           if model.beside else
           f"`{name}` trains through its own methods (`{model.synced}(...)`), never its forward, which "
           f"DistributedDataParallel needs to average gradients")
    how = "its gradients are averaged as backward computes them (sync_gradients)" if backward else (
        "every process starts from the main process's parameters (sync_gradients), and the gradients the program "
        "sets by hand are averaged before each step (average_gradients)")
    edits.record(model.anchor, f"{why}: {how}{where}; the model stays as it is", needs_group=True)
    edits.add_import("ddpify_runtime", "sync_gradients")


def _shard(facts: Facts, edits: Edits, model: Model, options: Options) -> None:
    """`model = shard_model(model)` where DDP would wrap it; optimizers built before move after it."""
    name = model.name
    lines = [f"{name} = shard_model({name})\n"]
    if options.sync_batchnorm:
        lines.insert(0, f"{name} = convert_sync_batchnorm({name})\n")
        edits.add_import("ddpify_runtime", "convert_sync_batchnorm")
    lines += _move_optimizers(facts, edits, model)
    if model.dataparallel is not None:
        _replace_dataparallel(facts, edits, model, lines, "fully_shard (FSDP2)")
    else:
        (edits.insert_before if model.before_anchor else edits.insert_after)(model.anchor, *lines)
        if isinstance(model.defined, cst.FunctionDef):
            where = f" where {model.defined.name.value}() receives it"
        elif model.before_anchor:  # moved up by the analysis (models._place_shard)
            where = " before its optimizer is built (what follows loads into the shards)"
        else:
            where = ""
        edits.record(model.anchor, f"`{name}` sharded with fully_shard (FSDP2){where}: {fsdp.blocks(facts, model)}")
    edits.add_import("ddpify_runtime", "shard_model")


def _move_optimizers(facts: Facts, edits: Edits, model: Model) -> list[cst.CSTNode]:
    """The statements that build an optimizer of `model` before the sharding (`model.moved`,
    decided by the analysis), removed to be re-inserted after it; a TODO on those that cannot move."""
    for stmt in model.moved:
        edits.replace(stmt, lambda node: cst.RemoveFromParent())
    if model.moved:
        edits.record(model.moved[0], f"optimizer built after `{model.name}` is sharded (moved down): FSDP2 "
                     "replaces the parameters it trains")
    for stmt in model.blocked:
        edits.todo(stmt, f"this optimizer is built before `{model.name}` is sharded, and ddpify cannot move it "
                   f"safely: FSDP2 replaces the parameters, so build it after `{model.name} = "
                   f"shard_model({model.name})`")
    return model.moved


def wrapped_refs(analysis: Analysis, options: Options) -> dict[Ref, Model]:
    """The names that hold a wrapper in this conversion: those the analysis follows from the
    wraps (`analysis.models.refs`) when this rewrite places them, none when it is not selected
    (`--skip wrap-model`). The rewrites that adapt to the wrapper ask this."""
    return analysis.models.refs if options.runs(NAME) else {}


def _why_unused(model: Model) -> str | None:
    """Why some parameters of `model` may get no gradient in a step, or None."""
    if model.partial:
        return f"the optimizer trains only parts of `{model.name}`"
    return model.unused


def _holders_of_bare(facts: Facts, model: Model) -> Iterator[tuple[str, str, cst.CSTNode]]:
    """Modules the wrap's function holds, built before the wrap around the bare model, that keep it
    as an attribute and run it in their forward (`forward.kept_modules`: a noise-prediction trainer
    `NoiseTrainer(net)` that a factory returns beside `net`): their forward would run the bare
    model, whose gradients DDP never averages. Each is handed the wrapper after the wrap:

        net, trainer = build(device)   ->  net, trainer = build(device)
                                           net = DistributedDataParallel(net, device_ids=device_ids(net))
                                           trainer.model = net

    Yields (the holder's name, its attribute, the holder's construction)."""
    if model.dataparallel is not None or model.before_anchor or isinstance(model.defined, cst.FunctionDef):
        return
    flow = objects.of(facts)
    scope = facts.scope(model.anchor)
    writes = [(one, stmt) for target, _, stmt in facts.writes_in(scope) if facts.before(stmt, model.anchor)
              or facts.is_inside(stmt, model.anchor) for one in (
                  [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target])]
    bare = frozenset().union(*(flow.ref_values(ref) for one, _ in writes
                               if dotted(one) == model.name and (ref := facts.ref(one)) is not None))
    if not bare:
        return
    seen = set()
    for one, _ in writes:
        holder = dotted(one)
        ref = facts.ref(one) if isinstance(one, cst.Name) and holder != model.name else None
        for site in flow.ref_values(ref) if ref is not None else ():
            for attribute, handed in forward.kept_modules(facts, site) or ():
                if flow.values(handed) & bare and (holder, attribute) not in seen:
                    seen.add((holder, attribute))
                    yield holder, attribute, site


def _record_holders(edits: Edits, model: Model, holders: list[tuple[str, str, cst.CSTNode]]) -> None:
    for holder, attribute, _ in holders:
        edits.record(model.anchor, f"`{holder}` was built around the bare `{model.name}` before the wrap: "
                     f"`{holder}.{attribute}` now holds the wrapper, so its forward runs DDP's")


def _untrained_models(facts: Facts, models: Models, rehanded: set[cst.CSTNode]) -> Iterator[tuple[str, cst.CSTNode]]:
    """Modules built and moved to a device (`teacher = Net().to(device)`), called inside a loop
    that trains, that no optimizer covers (none of `models`), nor copy the weights of one that
    does (a target network, an EMA copy: `models.weight_copies`); not one that makes no parameter
    (`forward.makes_no_parameter`), which has nothing to learn, nor one whose only parameters are
    those of the wrapped models it is handed (`forward.handed_modules`: a DDPM's
    `GaussianDiffusionTrainer(unet, ...)` built after `unet`'s wrap, which its forward calls)."""
    wrapped = {w.name for w in models.wrapped}
    copies = weight_copies(facts, models.refs)
    seen = set()
    for target, value, stmt in facts.assigns:
        name = dotted(target)
        if name is None or name in wrapped or name in seen or not isinstance(value, cst.Call) \
                or not mt.is_device_move(value) or not isinstance(value.func.value, cst.Call) \
                or (dotted(value.func.value.func) or "").endswith("Loss") or not builds_module(facts, value):
            continue  # not `criterion = nn.CrossEntropyLoss().cuda()`, nor a tensor (`buf[i] = torch.from_numpy(s).to(dev)`)
        if forward.makes_no_parameter(facts, value.func.value):
            continue  # nothing to train (a fixed sinusoidal embedding)
        handed = forward.handed_modules(facts, value.func.value)
        if handed and all(holds_wrapper(facts, models.refs, arg) is WRAPPER for arg in handed) \
                or value.func.value in rehanded:
            continue  # every parameter it holds is a wrapped model's, which an optimizer trains
        if objects.of(facts).receivers(facts.ref(target, stmt)) & models.refs.keys():
            continue  # trained by a function that wraps it on entry
        if facts.ref(target, stmt) in copies:
            continue  # `target.load_state_dict(online.state_dict())`: it follows a model that trains
        if any(dotted(c.func) == name and any(facts.is_inside(c, lp) and facts.trains(lp) for lp in facts.loops)
               for c in facts.calls_named(name.rpartition(".")[2])):
            seen.add(name)
            yield name, facts.statement(stmt)


STALE_COMMENT = re.compile(r"(?<!Distributed)DataParallel")  # a comment on a replaced DataParallel line


def _replace_dataparallel(facts: Facts, edits: Edits, model: Model, lines: list[str], by: str) -> None:
    call = model.dataparallel
    edits.warn(call, "DataParallel split each batch across GPUs; now every process loads its own "
                 "batch: divide a total batch size by get_world_size() to keep the old global batch")
    if model.bypassed:
        edits.todo(facts.statement(call), f"`{model.bypassed}(...)` trains the module inside the wrapper, outside "
                   f"{by}'s forward, where gradients are averaged: each process would train its own copy; "
                   f"call `{model.name}(...)` instead, or keep the model unwrapped with "
                   f"`{model.name} = sync_gradients({model.name})` and drop `.module`")
    inner = mt.positional(call, 0) or mt.keyword(call, "module")
    target = model.name
    statement = facts.statement(call)
    assign = mt.sole(statement, cst.Assign)
    whole = assign is not None and assign.value is call
    if statement is model.anchor and whole:  # `model = nn.DataParallel(model)`: wrap in place
        built = [] if facts.code(inner.value) == target else [f"{target} = {facts.code(inner.value)}\n"]
        comment = statement.trailing_whitespace.comment
        stale = comment is not None and STALE_COMMENT.search(comment.value) is not None

        def in_place(node: cst.SimpleStatementLine) -> cst.FlattenSentinel:
            """The new lines, with the comments above the old one and (unless stale) its own."""
            new = [cst.parse_statement(s) if isinstance(s, str) else s for s in built + lines]
            new[0] = new[0].with_changes(leading_lines=node.leading_lines)
            if not stale:
                new[-1] = new[-1].with_changes(trailing_whitespace=node.trailing_whitespace)
            return cst.FlattenSentinel(new)

        edits.replace(statement, in_place, f"nn.DataParallel replaced by {by} for `{target}`"
                      + (f" (comment `{comment.value}` dropped: it named DataParallel)" if stale else ""), needs_group=True)
        return
    if whole and facts.code(inner.value) == target:
        _remove(facts, edits, statement)
    else:
        edits.replace(call, lambda node: inner.value)
    (edits.insert_before if model.before_anchor else edits.insert_after)(model.anchor, *lines)
    later = ", wrapped after the set-up that follows it" if model.setup else ""
    edits.record(statement, f"nn.DataParallel replaced by {by} for `{target}`{later}", needs_group=True)
    for stmt in model.setup:
        for attr in facts.findall(stmt, cst.Attribute, lambda a: a.attr.value == "module" and dotted(a.value) == target):
            edits.replace(attr, lambda node: node.value)


def _stray_dataparallel(facts: Facts, edits: Edits, models: Models) -> None:
    """Remove each `nn.DataParallel(...)` in a function whose call builds a model wrapped in DDP
    that no wrap replaces (`if torch.cuda.device_count() > 1: model = nn.DataParallel(model)` in the
    `build_model` of `model = build_model()`): under torchrun a process that sees several GPUs
    would run it inside DDP, whose forward refuses a model on any GPU but its first, `cuda:0`;
    each process drives one GPU, the caller's DDP wraps the module. `model = nn.DataParallel(model)`
    goes (with the `if` around it when nothing else is left in it); elsewhere the call becomes the
    module it is given (`return nn.DataParallel(net)` -> `return net`). One without the module it
    wraps gets a warning."""
    replaced = {model.dataparallel for model in models.wrapped}
    assigns = [mt.sole(m.defined, cst.Assign) for m in models.wrapped if not m.synced]
    builders = {f for a in assigns if a is not None and isinstance(a.value, cst.Call) for f in facts.user_functions(a.value)}
    for call in facts.calls_to("torch.nn.DataParallel"):
        if call in replaced or facts.scope(call) not in builders:
            continue
        statement, inner = facts.statement(call), mt.positional(call, 0) or mt.keyword(call, "module")
        if inner is None:
            edits.warn(statement, "this nn.DataParallel is left as it is: a process that sees several GPUs "
                       "under torchrun runs it inside DDP, and its forward stops on every process but the first "
                       "('module must have its parameters and buffers on device cuda:0'); remove it, or give each "
                       "process one GPU (CUDA_VISIBLE_DEVICES)")
            continue
        assign = mt.sole(statement, cst.Assign)
        if assign is not None and assign.value is call and len(assign.targets) == 1 \
                and facts.code(assign.targets[0].target) == facts.code(inner.value):
            _remove(facts, edits, statement)
        else:
            edits.replace(call, lambda node, module=inner.value: module)
        edits.record(statement, f"nn.DataParallel of `{facts.code(inner.value)}` removed: the caller's "
                     "DistributedDataParallel wraps the model this function builds, one GPU per process "
                     "(DataParallel inside DDP stops on a node with several GPUs)")


def _drop_own_wraps(facts: Facts, edits: Edits, model: Model, own: list[cst.Call]) -> None:
    """Drop the program's own `model = DistributedDataParallel(model, ...)` of the model just wrapped
    (`own`: its wraps, made where no process group was joined): the wrap after the set-up replaces it."""
    for call in own:
        inner = mt.positional(call, 0) or mt.keyword(call, "module")
        statement = facts.statement(call)
        assign = mt.sole(statement, cst.Assign)
        if inner is None or dotted(inner.value) != model.name or assign is None or assign.value is not call \
                or len(assign.targets) != 1 or dotted(assign.targets[0].target) != model.name:
            continue
        _remove(facts, edits, statement)
        edits.record(statement, f"the program's own DistributedDataParallel of `{model.name}` (it never joined a "
                                f"process group) replaced by the wrap after its set-up, in the group "
                                f"init_distributed_mode() joins")


def _remove(facts: Facts, edits: Edits, statement: cst.CSTNode) -> None:
    """Drop `model = nn.DataParallel(model)`; and the `if n_gpu > 1:` around it when nothing else
    is left in it (the wrap that replaces it applies on every path): nothing but the statements
    dropped before it. Before, an `if ngpu > 1:` over `net_g = nn.DataParallel(net_g)` and
    `net_d = nn.DataParallel(net_d)` (both wrapped in DDP after it) was left as `if ngpu > 1: pass`;
    now it goes, as the `if` over one does."""
    block = facts.parent(statement)
    owner = facts.parent(block)
    if isinstance(block, cst.IndentedBlock) and all(s is statement or s in edits.removed for s in block.body):
        if isinstance(owner, cst.If) and owner.orelse is None and not isinstance(facts.parent(owner), cst.If):
            edits.remove(owner)
        else:
            edits.replace(statement, lambda node: cst.parse_statement("pass\n"))
    else:
        edits.remove(statement)
