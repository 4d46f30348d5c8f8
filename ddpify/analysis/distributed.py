"""Is the script already distributed? The one answer `convert` (which leaves such a script
unchanged where it also joins a process group, `joins_group`) and `check` (which checks only such
scripts) both use.

A script is distributed when it *does* something distributed, not when it merely imports it:
- it calls anything of `torch.distributed` (`init_process_group`, a collective, `get_rank`,
  the launcher API `torch.distributed.run` / `torch.distributed.launcher`, FSDP), except
  `torch.distributed.is_available()`, which asks what the build supports;
- or it wraps in `DistributedDataParallel` (also through pytorch-ignite's `idist.auto_model`) or
  builds a `DistributedSampler`, called directly,
  picked by a conditional expression (`(DistributedSampler if ddp else RandomSampler)(ds)`)
  or handed to a call (`functools.partial(DDP, device_ids=...)`);
- or it builds Hugging Face accelerate's `Accelerator(...)`, which joins the job's process group;
- or it waits at the barrier of a process-group helper of the project (`distr.barrier()` after
  `distr = DistribTorch.instance()`, the helper's module doing the torch.distributed calls);
- or it defines a Composer event handler (a class derived from `composer.Callback` or
  `composer.Algorithm`): Composer's `Trainer` runs it in every process of the job the `composer`
  launcher starts, and joins that job's process group itself.

Before (two answers): `import torch.distributed as dist` and no call of it was distributed for
`check` (it ran the rules) and not for `convert` (it converted the script).
After: neither; both treat it as a single-process script. A script with DDP code that joins no
process group on any path (`joins_group`: `DistributedDataParallel` under `--world-size > 1` and no
`init_process_group`) is distributed for `check` (its DDP026 says so) and converted by `convert`
(the runtime joins the group; decision 0067).

Near misses, not distributed: the import alone, `dist.is_available()` alone,
`isinstance(model, DistributedDataParallel)` (a library that accepts a wrapped model),
`torch.multiprocessing.spawn` alone (Hogwild training shares one model without a group),
a name of the script's own that merely contains "distributed".
"""

from __future__ import annotations

import sys
from functools import cached_property

import libcst as cst

from ddpify.syntax import matchers as mt

from ddpify.analysis import frameworks, objects
from ddpify.analysis.models import ACCELERATE_PREPARE, DDP, prepared_model
from ddpify.syntax.facts import Facts, Ref, param_names
from ddpify.syntax.names import dotted

SAMPLER = "torch.utils.data.DistributedSampler"
IGNITE_WRAPS = frozenset({"ignite.distributed.auto_model", "ignite.distributed.auto.auto_model"})
WRAPPERS = frozenset({DDP, SAMPLER, *IGNITE_WRAPS})
NOT_DISTRIBUTED_CALLS = frozenset({"torch.distributed.is_available"})


def is_distributed(facts: Facts) -> bool:
    """Does the script call torch.distributed (or `deepspeed.init_distributed()`, which starts its
    process group, or accelerate's `Accelerator()`, which joins it), or wrap in DDP, or build a DistributedSampler, or wait at a barrier of an object the project made (`distr.barrier()`)?
    Or build a library's trainer that runs one process per device and read the variables torchrun
    sets (`library_trainer_job`)? Not by a call that never runs (`never_called`: `setup()` of a helper module the script
    star-imports and never calls), nor by `destroy_process_group()` alone, where the program never
    joins a group (`joins_group`): a run of one process that tears down a group it never started."""
    if composer_handlers(facts) or library_trainer_job(facts):
        return True
    destroys = False
    for call in facts.calls:
        if not (_distributed_call(facts, call) or barrier_method(facts, call)) or never_called(facts, call):
            continue
        if facts.qualify(call.func) != DESTROY:
            return True
        destroys = True
    return destroys and joins_group(facts)


DESTROY = "torch.distributed.destroy_process_group"
# the variables torchrun (and torch.distributed.launch) sets in each process it starts
TORCHRUN_VARIABLES = frozenset({"WORLD_SIZE", "LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE"})


def library_trainer_job(facts: Facts) -> bool:
    """Does the program build the trainer of a library that runs one process per device
    (`frameworks.device_job_trainer`: transformers' `Trainer`, TRL's `SFTTrainer`, a program class
    derived from one) and read a variable torchrun sets (`TORCHRUN_VARIABLES`: `world_size =
    int(os.environ.get("WORLD_SIZE", 1))`, `os.environ["LOCAL_RANK"]`), each in code that runs
    (`never_called`)? The program is written for torchrun's processes, which the trainer joins into
    its group: its own code runs on every one of them (PraisonAI's final `self.model.save_pretrained(d)`
    after `trainer.train()`, decision 0260). Not a program that reads such a variable and builds no
    such trainer (a script of one process reading `LOCAL_RANK` with a default), nor one that builds
    the trainer and reads none (a run of one process; the launch is not in view)."""
    trainer = any(_builds_device_job_trainer(facts, call) and not never_called(facts, call) for call in facts.calls)
    return trainer and any(
        environment_key(facts, node) in TORCHRUN_VARIABLES and not never_called(facts, node)
        for node in (*facts.calls, *facts.by_type.get(cst.Subscript, ())))


def _builds_device_job_trainer(facts: Facts, call: cst.Call) -> bool:
    """Does `call` build a library's trainer that runs one process per device (`frameworks.device_job_trainer`)?"""
    return frameworks.device_job_trainer(facts, objects.of(facts).constructs(call), facts.qualify(call.func))


def environment_key(facts: Facts, node: cst.CSTNode) -> str | None:
    """"X" for `os.environ["X"]`, `os.environ.get("X", ...)`, `os.getenv("X")`."""
    if isinstance(node, cst.Subscript) and facts.qualify(node.value) == "os.environ" and len(node.slice) == 1 \
            and isinstance(node.slice[0].slice, cst.Index):
        return mt.string_value(node.slice[0].slice.value)
    if isinstance(node, cst.Call) and node.args and (facts.qualify(node.func) == "os.getenv" or isinstance(
            node.func, cst.Attribute) and node.func.attr.value == "get" and facts.qualify(node.func.value) == "os.environ"):
        return mt.string_value(node.args[0].value)
    return None


def never_called(facts: Facts, call: cst.Call) -> bool:
    """Is `call` in a function of a module the program's entry imports that no code of the program
    calls or names (`def setup(rank, world_size): dist.init_process_group(...)` in a helper module
    the script star-imports and never calls)? It does not run in this program. Not a decorated
    function: its decorator may hand it to a registry or a framework that calls it."""
    return facts.in_library(call) and runs_nowhere(facts, call)


def runs_nowhere(facts: Facts, call: cst.CSTNode) -> bool:
    """Is `call` in a top-level function that no code of the program that runs calls or names
    (`_unused`), in whichever file of the program? Also in a function defined inside such a one
    (`def _save_checkpoint():` of `train_model_multigpu`): it exists only where the outer one runs."""
    func = facts.scope(call)
    while isinstance(func, cst.FunctionDef) and isinstance(outer := facts.scope(func), cst.FunctionDef):
        func = outer
    return isinstance(func, cst.FunctionDef) and _unused(facts, func, 3)


def _unused(facts: Facts, func: cst.FunctionDef, depth: int) -> bool:
    """Is the top-level function `func` (not decorated) named by no code that runs: every name
    spelled as it is another's (a parameter of that name, `def runner(setup, n): mp.spawn(setup,
    ...)`), or the call of it in a function that is itself unused, `depth` functions up? A
    function of the checked file that nothing names at all is not: users may call it, unless it is
    private to a script (`private_to_a_script`)."""
    if not isinstance(facts.parent(func), cst.Module) or func.decorators \
            or not facts.in_library(func) and len(facts.names_spelled(func.name.value)) < 2 \
            and not private_to_a_script(facts, func):
        return False
    for name in facts.names_spelled(func.name.value):
        if name is func.name or isinstance(parent := facts.parent(name), (cst.Param, cst.Attribute)) \
                and getattr(parent, "name", getattr(parent, "attr", None)) is name:
            continue  # its own definition; a parameter so named; an attribute `x.setup`
        ref = facts.ref(name)
        if ref is not None and isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope):
            continue  # a use of that parameter
        caller = facts.scope(name)
        if depth > 0 and isinstance(parent, cst.Call) and parent.func is name and isinstance(caller, cst.FunctionDef) \
                and caller is not func and _unused(facts, caller, depth - 1):
            continue  # called by a function nothing runs
        return False
    return True


def private_to_a_script(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` a top-level function of the checked file whose name says it is the file's own
    (`_create_data_loader`: one leading underscore, not a dunder), in a file run as a script (it
    has an `if __name__ == "__main__":` block)? No user of the file calls it from outside: where the
    program names it nowhere else (its calls commented out), it never runs."""
    name = func.name.value
    return not facts.in_library(func) and name.startswith("_") and not name.startswith("__") \
        and isinstance(facts.parent(func), cst.Module) and any(
            mt.is_main_guard(s) and not facts.in_library(s) for s in facts.module.body)


def never_called_in_its_script(facts: Facts, node: cst.CSTNode) -> bool:
    """Is `node` in a function private to the checked script (`private_to_a_script`, or defined
    inside one) that no code of the program that runs calls or names (`runs_nowhere`): every call
    of `_create_data_loader(args)` commented out? Its code runs on no process.

    Before: compression_imagenet_code's DistributedSampler in `_create_data_loader`, whose three
    calls are comments, was a DDP002 (set 30; decision 0262). A public function nothing names
    (`def evaluate(model):`) is still read: a user may import the script and call it."""
    func = facts.scope(node)
    while isinstance(func, cst.FunctionDef) and isinstance(outer := facts.scope(func), cst.FunctionDef):
        func = outer
    return isinstance(func, cst.FunctionDef) and private_to_a_script(facts, func) and runs_nowhere(facts, node)


def distributed_in(facts: Facts, node: cst.CSTNode) -> bool:
    """Does the code of `node` (a class, a function) do what `is_distributed` asks of a script?"""
    return any(_distributed_call(facts, call) or barrier_method(facts, call) for call in facts.calls_in(node)) \
        or any(facts.is_inside(cls, node) for cls in composer_handlers(facts))


# Composer's event handlers: its `Trainer` calls their methods in every process of the job
COMPOSER_HANDLERS = frozenset({"composer.Callback", "composer.core.Callback", "composer.core.callback.Callback",
                               "composer.Algorithm", "composer.core.Algorithm", "composer.core.algorithm.Algorithm"})


def composer_handlers(facts: Facts) -> list[cst.ClassDef]:
    """The classes of the program derived from a Composer event handler (`class Saver(Callback)`
    with `from composer.core import Callback`)."""
    return [cls for cls in facts.classes.values()
            if any(facts.qualify(base.value) in COMPOSER_HANDLERS for base in cls.bases)]


def joins_group(facts: Facts) -> bool:
    """Does the program join a process group on some path of the code read? It calls
    `init_process_group` (or `init_device_mesh`), another library's group starter
    (`GROUP_STARTERS`), a launcher API, a spawner whose workers may join one, a framework that
    starts its own group (`hvd.init()`, `Accelerator()`: `FRAMEWORKS`; the `Trainer` of a Composer
    event handler, `composer_handlers`), or a helper that may
    start one (`init_distributed_mode(args)`, `setup_ddp(rank)`: a name with `init`/`setup` and
    `dist`/`ddp`/`group`), hands a function of the program to a library ddpify does not read
    (detectron2's `launch(main, num_gpus, ...)` starts workers that join the group), or waits at
    the barrier of a process-group helper of the project (`distr.barrier()`: the helper's module
    joins the group). The one answer to "already
    distributed" with `is_distributed`: `convert` leaves a script alone only when it does both, and
    converts one that has DDP machinery but never joins a group (the runtime joins it); `check`
    checks both."""
    return any(_joins(facts, call) and not never_called(facts, call) for call in facts.calls) \
        or bool(composer_handlers(facts))


def _joins(facts: Facts, call: cst.Call) -> bool:
    name = facts.qualify(call.func)
    if name is None:
        return _group_helper(call.func) or barrier_method(facts, call)
    return name in GROUP_JOINS or name in GROUP_STARTERS or name.startswith(LAUNCHERS) or name in SPAWNERS \
        or _group_helper(call.func) or name.split(".")[0] in FRAMEWORKS or _hands_on_a_function(facts, call, name)


def _hands_on_a_function(facts: Facts, call: cst.Call, name: str) -> bool:
    """`launch(main, args.num_gpus, ...)` of an installed library (not the standard library's, not
    torch's, not a function the program defines): it may run `main` in workers of its own."""
    top = name.split(".")[0]
    if not top or top in sys.stdlib_module_names or top in ("torch", "builtins") or facts.user_functions(call):
        return False
    return any(isinstance(a.value, cst.Name) and facts.functions.get(a.value.value) for a in call.args)


def ungrouped(facts: Facts) -> cst.Call | None:
    """The first distributed call of a distributed script that never joins a process group
    (`joins_group`), or None.

        import torch.distributed as dist
        if args.world_size > 1:
            model = DistributedDataParallel(model)   # <- this call: under torchrun every process
                                                     #    trains its own model on all the data
    """
    if joins_group(facts):
        return None
    return next((c for c in facts.calls if _distributed_call(facts, c) or barrier_method(facts, c)), None)


def own_wraps(facts: Facts) -> list[cst.Call]:
    """The program's own `DistributedDataParallel(...)` wraps when it never joins a process group
    (`ungrouped`): `convert` joins the group and wraps each trained model itself, after its set-up,
    so such a wrap of the same model is replaced by that one (two wrappers would nest)."""
    if ungrouped(facts) is None:
        return []
    return [c for c in facts.calls_to(DDP) if c.args]


def _group_helper(func: cst.BaseExpression) -> bool:
    """`init_distributed_mode`, `utils.setup_ddp`, `dist_init`: a helper that may join the group."""
    last = (func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name)
            else "").lower()
    return ("init" in last or "setup" in last) and any(w in last for w in ("dist", "ddp", "group"))


def barrier_method(facts: Facts, call: cst.Call) -> bool:
    """`distr.barrier()`, `self.comm.barrier()`: a barrier of a process-group helper the project
    wraps torch.distributed in (`distr = DistribTorch.instance()`), seen from a module that
    imports only the helper. Every process must reach it, as `dist.barrier()`. Not
    `threading.Barrier(n).wait()` (another name), not a module-level function of another
    library (`hvd.barrier`, qualified: one of its own). In a program that imports accelerate,
    `accelerator.wait_for_everyone()` is its barrier (of the `Accelerator`'s process group)."""
    if not (mt.is_method_call(call, "barrier") or mt.is_method_call(call, ACCELERATE_BARRIER)
            and facts.imports.imports_module("accelerate")):
        return False
    name = facts.qualify(call.func)
    return name is None or name.startswith("torch.distributed.")


# `accelerator.gather(t)` and its kin: collectives of the Accelerator's process group
ACCELERATE_COLLECTIVES = frozenset({"gather", "gather_for_metrics", "reduce", "pad_across_processes"})
# sharded optimizers, whose `consolidate_state_dict()` gathers every process's shard of the state
# on one: each process must call it (fairscale's OSS, torch's ZeroRedundancyOptimizer)
LIBRARY_COLLECTIVES = {cls: frozenset({"consolidate_state_dict"}) for cls in (
    "fairscale.optim.OSS", "fairscale.optim.oss.OSS", "torch.distributed.optim.ZeroRedundancyOptimizer",
    "torch.distributed.optim.zero_redundancy_optimizer.ZeroRedundancyOptimizer")} | {
    # ColossalAI's Booster: its checkpoint IO gathers the shards of a ZeRO, Gemini or hybrid-parallel
    # plugin from every process (and writes on the master itself), so every process saves
    cls: frozenset({"save_model", "save_optimizer"}) for cls in (
        "colossalai.booster.Booster", "colossalai.booster.booster.Booster")}


def accelerate_collective(facts: Facts, call: cst.Call) -> bool:
    """A collective of a library object, by what the object is (the object core's sites of the
    receiver), not by the method's name alone: `accelerator.gather(loss)`,
    `self.accelerator.reduce(t)`, `gather_for_metrics`, `pad_across_processes` of an
    `Accelerator(...)`, and its `prepare(model)` of a model (it wraps it in DDP, which broadcasts
    rank 0's state to every process: `prepare_model`'s kin, `models.prepared_model`); a sharded
    optimizer's `consolidate_state_dict()` and ColossalAI's `booster.save_model(...)` /
    `save_optimizer(...)` (not a booster of a `TorchDDPPlugin`, whose saves gather nothing)
    (`LIBRARY_COLLECTIVES`, the class also picked into a name first:
    `optim_class = OSS` ... `optim_class(params, ...)`). Not a tensor's
    `x.gather(dim, index)`, not `prepare(loader)`, not a plain optimizer's method."""
    if not isinstance(call.func, cst.Attribute):
        return False
    method = call.func.attr.value
    if method in ACCELERATE_COLLECTIVES or method in ACCELERATE_PREPARE and any(
            prepared_model(facts, a.value) for a in call.args if a.keyword is None and not a.star):
        return bool(accelerators(facts, call.func.value))
    return any(method in LIBRARY_COLLECTIVES.get(cls, ()) for cls in _library_classes(facts, call.func.value)) \
        and not _plain_ddp_booster(facts, call.func.value)


# torchmetrics' `Metric` wraps `compute` (also one a subclass overrides) to all-gather every process's
# states first where a process group is up; `sync()` gathers them outright
METRIC_COLLECTIVES = frozenset({"compute", "sync"})


def metric_collective(facts: Facts, call: cst.Call, depth: int = 4) -> bool:
    """`metric.compute()` / `metric.sync()` of a torchmetrics metric: one built by torchmetrics'
    class (`Accuracy(task="binary")`) or by a class of the program deriving from one (`class
    Mean(BaseAggregator)`, also picked into a name first: `meter = Mean if test else Meter`). Every
    process must call it, as a gather. Not one built with `sync_on_compute=False` (its `compute()`
    syncs nothing), not the `compute()` of a program's own meter (`class AverageMeter:`)."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value in METRIC_COLLECTIVES):
        return False
    method = call.func.attr.value
    sites = [s for s in objects.of(facts).values(call.func.value) if isinstance(s, cst.Call)]
    return any(_builds_metric(facts, s, depth) for s in sites if not (
        method == "compute" and _false_keyword(mt.keyword(s, "sync_on_compute"))))


def metric_object(facts: Facts, expr: cst.BaseExpression, depth: int = 4) -> bool:
    """Does `expr` hold a torchmetrics metric on every way (`val_loss = MeanMetric()`), one whose
    `compute()` syncs (not built with `sync_on_compute=False`)? Compared or combined as a value
    (`val_loss < best`), it is what its synced `compute()` answers (decision 0229)."""
    sites = objects.of(facts).values(expr)
    return bool(sites) and all(isinstance(s, cst.Call) and _builds_metric(facts, s, depth)
                               and not _false_keyword(mt.keyword(s, "sync_on_compute")) for s in sites)


def _builds_metric(facts: Facts, site: cst.Call, depth: int) -> bool:
    if (facts.qualify(site.func) or "").startswith("torchmetrics."):
        return True
    return any(_metric_class(facts, cls, depth) for cls in objects.of(facts).classes_built(site))


def _metric_class(facts: Facts, cls: cst.ClassDef, depth: int) -> bool:
    """Does the program's class `cls` derive from a torchmetrics class, directly or through its own bases?"""
    for base in cls.bases:
        name = dotted(base.value)
        if name in facts.classes:
            if depth and _metric_class(facts, facts.classes[name], depth - 1):
                return True
        elif (facts.qualify(base.value) or "").startswith("torchmetrics."):
            return True
    return False


def _false_keyword(arg: cst.Arg | None) -> bool:
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"


# ColossalAI's plugin whose checkpoint IO writes on the master and gathers nothing (plain DDP)
COLOSSALAI_DDP_PLUGINS = frozenset({"colossalai.booster.plugin.TorchDDPPlugin",
                                    "colossalai.booster.plugin.torch_ddp_plugin.TorchDDPPlugin"})


def _plain_ddp_booster(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Is every `Booster(...)` that `expr` may hold given a `TorchDDPPlugin` (also through a name:
    `plugin = TorchDDPPlugin()` ... `Booster(plugin=plugin)`)? Its saves run on the master alone."""
    boosters = [s for s in objects.of(facts).values(expr) if isinstance(s, cst.Call)]
    plugins = [a.value for b in boosters for a in b.args if a.keyword is None or a.keyword.value == "plugin"]
    return bool(plugins) and len(plugins) == len(boosters) and all(
        _library_classes(facts, p) & COLOSSALAI_DDP_PLUGINS for p in plugins)


def _library_classes(facts: Facts, expr: cst.BaseExpression) -> set[str]:
    """The qualified names of the library classes `expr` may be an instance of: what builds each
    site the object core gives (`OSS(...)`), or what the name called there may hold (`optim_class
    = OSS`)."""
    found: set[str] = set()
    for site in objects.of(facts).values(expr):
        if not isinstance(site, cst.Call):
            continue
        ref = facts.ref(site.func) if isinstance(site.func, cst.Name) else None
        found.update(q for built in [site.func, *(facts.sources(ref) if ref is not None else ())]
                     if (q := facts.qualify(built)) is not None)
    return found


# accelerate's hook registrations, with the method of the Accelerator that runs the hooks
ACCELERATE_HOOKS = {"register_save_state_pre_hook": "save_state", "register_load_state_pre_hook": "load_state"}


def hook_runs(facts: Facts, func: cst.FunctionDef) -> list[cst.Call]:
    """The calls that run `func` where the program registers it as a hook of an `Accelerator`
    (`accelerator.register_save_state_pre_hook(save_model_hook)`): each `accelerator.save_state(...)`
    of that object runs it, on the processes that make that call."""
    index = facts.__dict__.get("_hook_runs")
    if index is None:
        index = facts.__dict__["_hook_runs"] = _hook_index(facts)
    return index.get(func.name.value, [])


def _hook_index(facts: Facts) -> dict[str, list[cst.Call]]:
    """The name of each function registered as an accelerate hook, with the calls that run it."""
    index: dict[str, list[cst.Call]] = {}
    for call in facts.calls:
        func = call.func
        runner = ACCELERATE_HOOKS.get(func.attr.value) if isinstance(func, cst.Attribute) else None
        if runner is None or not isinstance(func, cst.Attribute):
            continue
        owners = accelerators(facts, func.value)
        runs = [c for c in facts.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == runner
                and accelerators(facts, c.func.value) & owners]
        for arg in call.args:
            if isinstance(arg.value, cst.Name):
                index.setdefault(arg.value.value, []).extend(runs)
    return index


def accelerators(facts: Facts, expr: cst.BaseExpression) -> frozenset[cst.CSTNode]:
    """The `Accelerator(...)` sites `expr` may hold."""
    return frozenset(s for s in objects.of(facts).values(expr)
                     if isinstance(s, cst.Call) and facts.qualify(s.func) in ACCELERATORS)


def _distributed_call(facts: Facts, call: cst.Call) -> bool:
    func = call.func
    callees = [func.body, func.orelse] if isinstance(func, cst.IfExp) else [func]
    if any(_distributed_name(facts.qualify(c), called=True) for c in callees):
        return True
    if mt.is_call_of(call, "isinstance", "issubclass"):
        return False  # `isinstance(unet, DistributedDataParallel)` asks, wraps nothing
    return any(_distributed_name(facts.qualify(a.value), called=False) for a in call.args
               if isinstance(a.value, (cst.Name, cst.Attribute)))


def _distributed_name(name: str | None, called: bool) -> bool:
    if name is None:
        return False
    if name in WRAPPERS:
        return True
    return called and (name.startswith("torch.distributed.") and name not in NOT_DISTRIBUTED_CALLS
                       or name in GROUP_STARTERS or name in ACCELERATORS)


# other libraries' calls that start the torch.distributed process group of the job: DeepSpeed's
# `deepspeed.initialize(model=...)` starts it too where no one has yet (its `dist_init_required`)
GROUP_STARTERS = frozenset({"deepspeed.init_distributed", "deepspeed.comm.init_distributed", "deepspeed.initialize"})

# Hugging Face accelerate's `Accelerator(...)`: it joins the process group of the job the launcher
# (`accelerate launch`, torchrun) starts, and its methods are that group's collectives
ACCELERATORS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
ACCELERATE_BARRIER = "wait_for_everyone"  # `accelerator.wait_for_everyone()`: accelerate's barrier

# frameworks that start (or stand in for) the process group themselves: any call of theirs may
FRAMEWORKS = frozenset({"accelerate", "lightning", "pytorch_lightning", "deepspeed", "horovod", "fairscale",
                        "colossalai", "ray", "composer", "ignite"})


# calls that join the process group, and the launcher APIs (the workers they start join it)
GROUP_JOINS = frozenset({"torch.distributed.init_process_group", "torch.distributed.device_mesh.init_device_mesh",
                         "torch.distributed.init_device_mesh"})
LAUNCHERS = ("torch.distributed.run.", "torch.distributed.launcher.", "torch.distributed.elastic.")


# calls that start worker processes, with where they take the worker function (its position,
# and its keyword: `mp.spawn(train, ...)`, `mp.spawn(fn=train, ...)`, `Process(target=train)`)
SPAWNERS: dict[str, tuple[int | None, str]] = {
    "torch.multiprocessing.spawn": (0, "fn"), "torch.multiprocessing.start_processes": (0, "fn"),
    "multiprocessing.Process": (None, "target"), "torch.multiprocessing.Process": (None, "target")}


class Launcher:
    """Which code of a script that starts its own workers (`mp.spawn(train, ...)`,
    `mp.Process(target=train)`) runs in the launching process only: what the `if __name__ ==
    "__main__":` block runs, the function that starts the workers (a test that spawns them and
    then reads their results), a subclass's override of a method that starts them (its own
    `train` that trains in the calling process), and the functions these reach that no worker
    reaches. A worker may be a method (`mp.spawn(self._do_train, ...)`).

        def train(gpu, args): ...               # a worker: every process
        def test(args): torch.load(p)           # reached from the main block only: one process
        if __name__ == "__main__":
            args = check_args(parse())          # one process
            mp.spawn(train, nprocs=n, args=(args,))
            test(args)

    Code outside the main block (module level, functions nobody here calls) is not counted:
    with the spawn start method every worker imports the module again and runs it. A script
    that starts no workers has no launcher-only code (torchrun starts every process the same).
    Nor is code that also runs a worker itself, and what leads to it: launched once per process
    (torchrun, env://) it is every process's. Not where the worker runs itself on the side of a
    count's test that means one process (`if n_gpus > 1: mp.spawn(...) else: train(0, args)`).

        def main():
            save_hparams(args)                  # every process: main runs the worker itself too
            if args.spawn:
                mp.spawn(train, nprocs=n, args=(args,))
            else:
                train(args.gpu, args)
    """

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    @cached_property
    def _spawns(self) -> tuple[cst.Call, ...]:
        """The calls that start the program's own workers: not a helper process (`Process(target=
        worker_process)` of an image writer an imported module starts) whose function reaches
        nothing distributed while the code the main block reaches does (`Accelerator()`): there
        the main block's process is itself one of the job's, started by the launcher."""
        spawns = tuple(c for c in self.facts.calls if (self.facts.qualify(c.func) or "") in SPAWNERS)
        return tuple(c for c in spawns if not self._helper(c))

    def _helper(self, spawn: cst.Call) -> bool:
        """Does `spawn` start a helper process of a program whose main block does the distributed work?"""
        worker = self._reach(self._targets_of(spawn))
        if any(distributed_in(self.facts, f) for f in worker):
            return False
        main = self._reach([g for block in self._main_blocks for call in self.facts.calls_in(block.body)
                            for g in self.facts.user_functions(call)]) - worker
        return any(distributed_in(self.facts, node) for node in (*main, *self._main_blocks))

    @cached_property
    def _workers(self) -> frozenset[cst.FunctionDef]:
        return self._reach([*self.targets, *self._running_a_worker])

    @cached_property
    def _running_a_worker(self) -> frozenset[cst.FunctionDef]:
        """The functions that call a worker themselves (not through a spawner), and the functions
        whose calls lead to one."""
        found: set[cst.FunctionDef] = set()
        calls = [c for c in self.facts.calls if c not in self._spawns and not self._one_process(c)] if self.targets else []
        while True:
            more = {f for c in calls if set(self.facts.user_functions(c)) & (self.targets | found)
                    for f in [self.facts.scope(c)] if isinstance(f, cst.FunctionDef) and f not in self.targets} - found
            if not more:
                return frozenset(found)
            found |= more

    def _one_process(self, call: cst.CSTNode) -> bool:
        """Is `call` on the side of an `if` comparing a count with one that means a single process
        (the `else` of `n > 1`, `n >= 2`, `n != 1`; the body of `n == 1`, `n < 2`, `n <= 1`), or a
        run of the worker that joins no group (`_run_without_a_group`)?"""
        if isinstance(call, cst.Call) and self._run_without_a_group(call):
            return True
        child = call
        for anc in self.facts.ancestors(call):
            if isinstance(anc, cst.If) and child is not anc.test and isinstance(anc.test, cst.Comparison) \
                    and len(anc.test.comparisons) == 1:
                op, bound = anc.test.comparisons[0].operator, anc.test.comparisons[0].comparator
                several = {cst.GreaterThan: "1", cst.GreaterThanEqual: "2", cst.NotEqual: "1"}
                single = {cst.Equal: "1", cst.LessThan: "2", cst.LessThanEqual: "1"}
                value = bound.value if isinstance(bound, cst.Integer) else None
                if value is not None and (child is anc.body and single.get(type(op)) == value
                                          or child is not anc.body and several.get(type(op)) == value):
                    return True
            if isinstance(anc, cst.FunctionDef):
                return False
            child = anc
        return False

    def _run_without_a_group(self, call: cst.Call) -> bool:
        """Is `call` a run of a worker in the `else` of the `if` whose body spawns that worker
        (`if args.distributed: mp.spawn(main_worker, ...)` / `else: main_worker(0, args)`), where the
        worker joins the process group only under the same test (`if args.distributed: setup(rank,
        world_size)`, the join directly or through the functions it calls)? Where the test fails the
        worker joins no group: the process is alone, and the function that so calls the worker
        (`main`) runs in one process whichever side is taken: the launcher's, its code run once.

            def main():
                prep_experiment(args)                       # one process
                if args.distributed:
                    mp.spawn(main_worker, nprocs=n, args=(args,))
                else:
                    main_worker(0, args)                    # no group: one process
            def main_worker(gpu, args):
                if args.distributed:
                    dist.init_process_group(..., rank=gpu, world_size=n)

        Not where the worker also joins outside that test (the ImageNet example's `if args.distributed:`
        join under a spawn flag `args.multiprocessing_distributed`: each launch of the script then joins
        as one process of the job, and the function that runs the worker runs in each).

        Before: `main` of such a script was read as every process's, and its experiment folders, made
        before the spawn, were reported as made by every rank (rNPC, set 30; decision 0248)."""
        f = self.facts
        child: cst.CSTNode = call
        for anc in f.ancestors(call):
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                return False
            if isinstance(anc, cst.If) and child is anc.orelse and isinstance(anc.orelse, cst.Else):
                workers = set(f.user_functions(call))
                spawned = {g for spawn in self._spawns if f.is_inside(spawn, anc.body) for g in self._targets_of(spawn)}
                if workers and workers <= spawned:
                    flag = f.code(anc.test)
                    return all(self._joins_only_under(w, flag) for w in workers)
                return False
            child = anc
        return False

    def _joins_only_under(self, worker: cst.FunctionDef, flag: str) -> bool:
        """Does `worker` join the process group somewhere, and each time (a call that joins, or that
        reaches a function that does) in the body of an `if` of its own whose test is `flag`?"""
        f = self.facts
        joining = self._joining_functions
        calls = [c for c in f.calls_in(worker.body) if _joins(f, c) or set(f.user_functions(c)) & joining]
        return bool(calls) and all(self._under_flag(c, worker, flag) for c in calls)

    def _under_flag(self, call: cst.Call, worker: cst.FunctionDef, flag: str) -> bool:
        child: cst.CSTNode = call
        for anc in self.facts.ancestors(call):
            if anc is worker:
                return False
            if isinstance(anc, cst.If) and child is anc.body and self.facts.code(anc.test) == flag:
                return True
            child = anc
        return False

    @cached_property
    def _joining_functions(self) -> frozenset[cst.FunctionDef]:
        """The functions of the program that join the process group, directly or through others."""
        f = self.facts
        found: set[cst.FunctionDef] = set()
        funcs = [g for group in f.functions.values() for g in group]
        while True:
            more = {g for g in funcs if g not in found and any(
                _joins(f, c) and (f.qualify(c.func) or "") not in SPAWNERS or set(f.user_functions(c)) & found
                for c in f.calls_in(g.body))}
            if not more:
                return frozenset(found)
            found |= more

    def _runs_a_worker(self, block: cst.If) -> bool:
        """Does the main block `block` run a worker itself, directly or through a function?"""
        return any(set(self.facts.user_functions(c)) & (self.targets | self._running_a_worker)
                   for c in self.facts.calls_in(block.body) if c not in self._spawns and not self._one_process(c))

    @cached_property
    def spawn_flags(self) -> frozenset[str]:
        """The tests under which the script spawns its workers and otherwise runs a worker itself, in
        the launching process (`if args.multiprocessing_distributed: mp.spawn(main_worker, ...)` /
        `else: main_worker(args.gpu, ngpus_per_node, args)`), as code: where such a test fails, each
        launch of the script (a node) runs one process."""
        found = set()
        for spawn in self._spawns:
            child: cst.CSTNode = spawn
            for anc in self.facts.ancestors(spawn):
                if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                    break
                if isinstance(anc, cst.If) and child is anc.body and isinstance(anc.orelse, cst.Else) and any(
                        set(self.facts.user_functions(c)) & set(self._targets_of(spawn))
                        for c in self.facts.calls_in(anc.orelse.body)):
                    found.add(self.facts.code(anc.test))
                    break
                child = anc
        return frozenset(found)

    @cached_property
    def targets(self) -> frozenset[cst.FunctionDef]:
        """The functions the script starts as workers (`mp.spawn(train, ...)`, `Process(target=self._do_train)`)."""
        return frozenset(f for call in self._spawns for f in self._targets_of(call))

    def spawns_of(self, func: cst.FunctionDef) -> list[cst.Call]:
        """The calls that start `func` as a worker (`torch.multiprocessing.spawn(run_job, ...)`)."""
        return [call for call in self._spawns if func in self._targets_of(call)]

    def _targets_of(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions of the program that `call` (a spawner) starts as workers."""
        position, keyword = SPAWNERS[self.facts.qualify(call.func) or ""]
        arg = mt.keyword(call, keyword) or (mt.positional(call, position) if position is not None else None)
        partial = self._partial_of(arg.value) if arg is not None else []
        if partial:
            return partial  # `spawn(partial(train, lr=...), nprocs=n)`, or a name assigned that partial
        if arg is not None and isinstance(arg.value, cst.Name):
            scope = self.facts.scope(call)
            if isinstance(scope, cst.FunctionDef) and arg.value.value in param_names(scope) \
                    and not self.facts.writes(Ref(scope, arg.value.value)):
                # a launching helper hands on the function it is given (`def run(fn, n): mp.spawn(fn, nprocs=n)`):
                # its callers' functions (`run(main_ddp, n)`), not one of the parameter's name elsewhere
                passed = [self.facts.argument_for(site, scope, arg.value.value) for site in self.facts.call_sites(scope)]
                return [g for p in passed if isinstance(p, cst.Name) for g in self._named(p.value)]
            return self._held(arg.value)
        if arg is not None and isinstance(arg.value, cst.Attribute) and mt.is_name(arg.value.value, "self") \
                and (cls := self.facts.enclosing_class(call)) is not None:
            return list(self.facts.method(cls, arg.value.attr.value))  # `mp.spawn(self._do_train, ...)`
        return []

    @cached_property
    def started_with_index(self) -> frozenset[Ref]:
        """The parameters of the workers that each process is started with its own index in: the
        first one `mp.spawn(train, ...)` fills (spawn passes each worker its index), and one an item of
        `Process(target=train, args=(i, ...))` fills where `i` counts the loop that starts the
        processes (`for i in range(num_gpus):`); through `functools.partial` too (`train_fn =
        partial(distributed_train, num_gpus=n, cfg=cfg)` ... `Process(target=train_fn, args=(i,))`
        fills `rank` of `distributed_train(rank, num_gpus, group_name, cfg)`: the parameters the
        partial binds, by position or by name, are not the ones the index fills). The rank a
        process is started with is its rank.

        Before: only a top-level function named in `mp.spawn(...)` itself was so read, so a
        `rank == 0` test in a worker started through a partial by `multiprocessing.Process` (whose
        one-process run calls it `train_fn(0)`) passed for the same on every process, and its
        checkpoint save for a write of every rank (diffwave-sashimi, set 28x; decision 0241)."""
        f = self.facts
        found: set[Ref] = set()
        for call in self._spawns:
            position, keyword = SPAWNERS[f.qualify(call.func) or ""]
            arg = mt.keyword(call, keyword) or (mt.positional(call, position) if position is not None else None)
            if arg is None:
                continue
            if position is not None:  # spawn: the index comes first
                filled = {0}
            else:
                items = mt.keyword(call, "args")
                if items is None or not isinstance(items.value, (cst.Tuple, cst.List)):
                    continue
                filled = {i for i, e in enumerate(items.value.elements) if not isinstance(e, cst.StarredElement)
                          and self._counts_the_processes(e.value, call)}
            bound = self._bound_by_partial(arg.value)
            workers = self._targets_of(call) if bound is not None or isinstance(arg.value, cst.Name) else []
            for func in workers:
                if f.enclosing_class(func) is not None:
                    continue
                by_position, by_name = bound if bound is not None else (0, frozenset())
                free = [p.name.value for p in func.params.params][by_position:]
                free = [p for p in free if p not in by_name]
                found.update(Ref(func, free[i]) for i in filled if i < len(free))
        return frozenset(found)

    def _counts_the_processes(self, expr: cst.BaseExpression, call: cst.Call) -> bool:
        """Is `expr` the count of a `for` loop around `call` (`for i in range(n):`, the index of
        `for i, d in enumerate(devices):`): each process started there is handed its own?"""
        if not isinstance(expr, cst.Name):
            return False
        for loop in self.facts.ancestors(call):
            if isinstance(loop, (cst.FunctionDef, cst.ClassDef)):
                return False
            if isinstance(loop, cst.For) and self.facts.is_inside(call, loop.body):
                target = loop.target
                if mt.is_call_of(loop.iter, "range") and mt.is_name(target, expr.value):
                    return True
                if mt.is_call_of(loop.iter, "enumerate") and isinstance(target, (cst.Tuple, cst.List)) \
                        and target.elements and mt.is_name(target.elements[0].value, expr.value):
                    return True
        return False

    def _bound_by_partial(self, expr: cst.BaseExpression) -> tuple[int, frozenset[str]] | None:
        """How many positional parameters, and which names, the `functools.partial` a worker
        argument is (written out or assigned to the name handed on) binds; None where it is no
        partial, or more than one."""
        f = self.facts
        ref = f.ref(expr) if isinstance(expr, cst.Name) else None
        values = [expr] if isinstance(expr, cst.Call) else f.sources(ref) if ref is not None else []
        partials = [v for v in values if isinstance(v, cst.Call) and f.qualify(v.func) == "functools.partial" and v.args]
        if len(partials) != 1 or len(values) != 1 or any(a.star for a in partials[0].args):
            return None
        rest = partials[0].args[1:]
        return sum(a.keyword is None for a in rest), frozenset(a.keyword.value for a in rest if a.keyword is not None)

    def _partial_of(self, expr: cst.BaseExpression) -> list[cst.FunctionDef]:
        """The functions of the program a worker argument binds with `functools.partial`:
        `partial(train, master_port=p, ...)`, written out or assigned to the name handed on
        (`train_fn = partial(train, ...)` ... `spawn(train_fn, nprocs=n)`)."""
        f = self.facts
        ref = f.ref(expr) if isinstance(expr, cst.Name) else None
        values = [expr] if isinstance(expr, cst.Call) else f.sources(ref) if ref is not None else []
        return [g for v in values if isinstance(v, cst.Call) and f.qualify(v.func) == "functools.partial" and v.args
                and isinstance(v.args[0].value, cst.Name) for g in self._named(v.args[0].value.value)]

    @cached_property
    def _main_blocks(self) -> tuple[cst.If, ...]:
        return tuple(s for s in self.facts.module.body if isinstance(s, cst.If) and _is_main_test(s.test)
                     and not self.facts.in_library(s))  # an imported module's main block does not run

    @cached_property
    def _launching_blocks(self) -> tuple[cst.If, ...]:
        """The main blocks that run no worker themselves, and start the workers or join no group
        themselves: not a main block whose code joins the process group (through a helper,
        `init_distributed_environment()`) and reaches none of the program's spawns (a worker pool
        of another module, `mp.Process(target=run_worker_process)`, that this script never
        starts): the launcher (torchrun) runs that block in every process.

            if __name__ == "__main__":
                main()       # main(): maybe_init_distributed(...); build_loader(...) -- every process
        """
        return tuple(s for s in self._main_blocks if not self._runs_a_worker(s)
                     and (self._reaches_a_spawn(s) or not self._joins_itself(s)))

    def _reached_from(self, block: cst.If) -> frozenset[cst.FunctionDef]:
        return self._reach([g for call in self.facts.calls_in(block.body) for g in self.facts.user_functions(call)])

    def _reaches_a_spawn(self, block: cst.If) -> bool:
        """Does the main block start a spawn itself, or through a function it reaches?"""
        reached = self._reached_from(block)
        return any(self.facts.is_inside(spawn, block) or self.facts.scope(spawn) in reached for spawn in self._spawns)

    def _joins_itself(self, block: cst.If) -> bool:
        """Does the main block join the process group itself, or through a function it reaches
        (`init_process_group`, a group helper)?"""
        nodes = [block, *self._reached_from(block)]
        return any(_joins(self.facts, c) and (self.facts.qualify(c.func) or "") not in SPAWNERS
                   for node in nodes for c in self.facts.calls_in(node.body if isinstance(node, cst.FunctionDef) else node))

    @cached_property
    def _launcher(self) -> frozenset[cst.FunctionDef]:
        roots = [g for block in self._launching_blocks for call in self.facts.calls_in(block.body)
                 for g in self.facts.user_functions(call)]
        spawning = [s for s in map(self.facts.scope, self._spawns) if isinstance(s, cst.FunctionDef)]
        # a subclass's override of the method that spawns runs where the workers would have been started
        roots += [m for s in spawning if (cls := self.facts.enclosing_class(s)) is not None
                  for m in self.facts.method(cls, s.name.value) if m is not s] + spawning
        return self._reach(roots) - self._workers

    def only(self, node: cst.CSTNode) -> bool:
        """Does `node` run in the launching process only (never in a worker it starts)?"""
        if not self._workers:
            return False
        for anc in self.facts.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                if anc in self._workers:
                    return False
                if anc in self._launcher:
                    return True
            if anc in self._launching_blocks:
                return True
        return False

    def at_import_first(self, node: cst.CSTNode, depth: int = 3) -> bool:
        """Does `node` run when the script is imported, before any worker starts: at the top level
        of the module the launching main block spawns the workers from (not in its main block), or
        in a function every call of which does, `depth` calls deep (`trainset = get_dataset()`)?
        The launching process runs it to the end before its main block calls `mp.spawn`; each
        worker runs it again on its own import, after."""
        if not self._workers or not self._launching_blocks:
            return False
        f = self.facts
        scope = f.scope(node)
        if isinstance(scope, cst.Module):  # (an imported module's top level runs at import too)
            return not any(f.is_inside(node, block) for block in self._main_blocks)
        sites = f.entries(scope) if isinstance(scope, cst.FunctionDef) else []
        return depth > 0 and bool(sites) and all(self.at_import_first(site, depth - 1) for site in sites)

    def alone(self, node: cst.CSTNode) -> bool:
        """Is `node` in the checked file's main block (`if __name__ == "__main__":`), where the run
        of the file as a program does nothing distributed: its top level (the statements outside
        functions, the main block among them, and the imported modules' top levels) and every
        function of the program those reach (by a call, handed on by name, or a method of a class
        they build) call nothing of torch.distributed, wrap no model, build no DistributedSampler,
        join no group and start no worker (`_joins`)? Then the process that runs it is no group's,
        alone: the program's distributed code lies in functions its run never enters
        (`main_worker`, whose `mp.spawn` in the main block is commented out, the main block now
        generating images in one process), which a user may still call (their findings stay). Not
        the module's other top-level code: it runs in every process of a script that imports it.

        Before: JeremGamingYT's `generate_sequence`, which only such a main block calls, saved its
        frames and GIF "on every rank" (DDP006); now its call is one process's."""
        return any(self.facts.is_inside(node, block) for block in self._main_blocks) and self._runs_alone

    @cached_property
    def _runs_alone(self) -> bool:
        f = self.facts
        if composer_handlers(f):
            return False
        flow = objects.of(f)
        trainer = library_trainer_job(f)  # then a call that builds the library's trainer joins the group
        top = [c for c in f.calls if isinstance(f.scope(c), (cst.Module, cst.ClassDef))
               and not any(f.is_inside(c, block) for block in f.module.body
                           if isinstance(block, cst.If) and _is_main_test(block.test) and f.in_library(block))]
        seen: set[cst.FunctionDef] = set()
        calls, todo = list(top), list[cst.FunctionDef]()
        while calls or todo:
            for call in calls:
                if _distributed_call(f, call) or barrier_method(f, call) or _joins(f, call) \
                        or trainer and _builds_device_job_trainer(f, call):
                    return False
                todo += f.user_functions(call)
                todo += [g for a in call.args if isinstance(a.value, cst.Name) for g in self._named(a.value.value)]
                todo += [m for cls in flow.classes_built(call) for c in f.lineage(cls)
                         for m in f.findall(c.body, cst.FunctionDef)]
            calls = []
            while todo:
                func = todo.pop()
                if func not in seen:
                    seen.add(func)
                    calls += f.calls_in(func.body)
        return True

    def _named(self, name: str) -> list[cst.FunctionDef]:
        return [f for f in self.facts.functions.get(name, ()) if self.facts.enclosing_class(f) is None]

    def _held(self, name: cst.Name) -> list[cst.FunctionDef]:
        """The top-level functions of the program a worker name stands for: the function so named,
        or else those the name is assigned (`main_worker = train_net` ... `mp.spawn(main_worker, ...)`).

        Before: an alias named no function, so the spawn started no worker the launcher knew of, and
        `not args.multiprocessing_distributed` (the `else` runs `main_worker(...)` itself) was read as
        a test every process of a run may pass. After: the alias's function is the worker."""
        named = self._named(name.value)
        ref = self.facts.ref(name) if not named else None
        values = self.facts.sources(ref) if ref is not None else []
        return named or [g for v in values if isinstance(v, cst.Name) for g in self._named(v.value)]

    def _reach(self, roots: list[cst.FunctionDef]) -> frozenset[cst.FunctionDef]:
        """`roots` and every function of the script their calls reach (or hand on by name)."""
        seen: set[cst.FunctionDef] = set()
        todo = list(roots)
        while todo:
            func = todo.pop()
            if func in seen:
                continue
            seen.add(func)
            for call in self.facts.calls_in(func.body):
                todo += self.facts.user_functions(call)
                todo += [g for a in call.args if isinstance(a.value, cst.Name) for g in self._named(a.value.value)]
        return frozenset(seen)


def _is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"`."""
    return isinstance(test, cst.Comparison) and mt.is_name(test.left, "__name__") and len(test.comparisons) == 1 \
        and isinstance(test.comparisons[0].operator, cst.Equal) \
        and isinstance(test.comparisons[0].comparator, cst.SimpleString) \
        and test.comparisons[0].comparator.evaluated_value == "__main__"


def one_visible_gpu_each(facts: Facts) -> bool:
    """Does every process of the program see one GPU only, or train on GPU 0 whatever it sees, as
    the program itself shows? It wraps its models in DDP on the device each process starts on
    (`device_ids=[device]` with `device = torch.device(f"cuda:{torch.cuda.current_device()}")`) or
    on GPU 0 (`device_ids=[0]`), and picks none but that one (no `torch.cuda.set_device`, or only
    `set_device(0)`): with all of a node's GPUs visible every process would train on GPU 0, so its
    launcher gives each one GPU (srun's `--gpus-per-task=1`), and `cuda:0` is each process's own (a
    checkpoint saved from it loads back onto the loading process's GPU, the one it trains on)."""
    wraps = facts.calls_to(DDP)
    if not wraps or not all((a := mt.positional(c, 0)) is not None and _gpu_zero(a.value)
                            for c in facts.calls_to("torch.cuda.set_device")):
        return False
    given = [mt.keyword(w, "device_ids") for w in wraps]
    return all(g is not None and isinstance(g.value, cst.List) and g.value.elements
               and all(_current_device(facts, e.value) or _gpu_zero(e.value) for e in g.value.elements) for g in given)


def _gpu_zero(expr: cst.BaseExpression) -> bool:
    """`0` or `"cuda:0"`: GPU 0 of what the process sees."""
    return isinstance(expr, cst.Integer) and expr.evaluated_value == 0 or mt.string_value(expr) == "cuda:0"


def _current_device(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Is `expr` the device the process starts on: `torch.cuda.current_device()`, or a device
    made of it (`torch.device("cuda:{}".format(torch.cuda.current_device()))`), through names?"""
    origins = facts.origins(expr)
    return bool(origins) and all(any(facts.qualify(c.func) == "torch.cuda.current_device"
                                     for c in [o, *mt.findall(o, cst.Call)] if isinstance(c, cst.Call)) for o in origins)
