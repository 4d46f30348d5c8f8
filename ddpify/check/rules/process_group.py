"""Starting and ending the process group."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.check.script import INIT
from ddpify.syntax.matchers import string_value
from ddpify.analysis.distributed import SAMPLER, ungrouped
from ddpify.analysis.models import DDP
from ddpify.analysis.ranks import SPAWNED_WITH_INDEX
from ddpify.syntax.names import dotted

DESTROY = "torch.distributed.destroy_process_group"
NEW_GROUP = "torch.distributed.new_group"
BARRIER = "torch.distributed.barrier"


@rule("DDP011", bug=False)
def no_destroy_process_group(ctx: Context) -> Iterator[Hit]:
    """`init_process_group` without `destroy_process_group`.

    Wrong:

        import torch.distributed as dist
        dist.init_process_group("gloo")
        train()

    Right:

        import torch.distributed as dist
        dist.init_process_group("gloo")
        train()
        dist.destroy_process_group()

    A process group left open at exit leaks its communicators: NCCL can hang the exit or abort
    it, and torch warns "process group has NOT been destroyed". Advice, because most exits
    free the group without harm and some projects drop the call on purpose (YOLOv5 did, after
    it hung their shutdown). Found when the file starts a group and nothing in it calls or names
    `destroy_process_group` (`atexit.register(...)` counts).
    """
    inits = ctx.script.calls_of(INIT)
    if inits and not _destroys(ctx):
        yield Hit(inits[0].func, "the process group is never destroyed: call dist.destroy_process_group() "
                                 "when training ends")


def _destroys(ctx: Context) -> bool:
    f = ctx.facts
    return DESTROY in f.imports.aliases.values() or any(
        f.qualify(a) == DESTROY for a in f.attributes if a.attr.value == "destroy_process_group")


@rule("DDP012", several=True)
def set_device_after_init(ctx: Context) -> Iterator[Hit]:
    """`torch.cuda.set_device` after a collective on an NCCL process group: GPU 0 for every process.

    Wrong:

        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        dist.barrier()
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))

    Right:

        import os
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl")
        dist.barrier()

    NCCL creates a process's communicator on the current GPU at the group's first collective.
    Until `set_device` runs that is GPU 0 on every process: a barrier, a broadcast or a DDP
    construction before it puts every process's NCCL context on GPU 0 (out of memory, or a
    hang). Set the device before `init_process_group` (or pass it `device_id=`). Found in one
    function, or in a function of the file called after the group is started (`main(cfg)` of
    `if __name__ == "__main__":` after `init_process_group`), for a backend that is `"nccl"` as
    written (in any case: torch lowercases it), when a collective runs between the two.
    `set_device` right after `init_process_group`, before any collective, is fine: the
    communicator does not exist yet; so is one after `new_group(...)` (a gloo group for the CPU),
    which every process calls but which agrees through the store, not over NCCL, or after a barrier
    given its GPU (`dist.barrier(device_ids=[local_rank])`, also in a helper whose plain barrier is
    the `else` of `if dist.get_backend() == "nccl":`). Nor a `set_device` that repeats one the
    function starting the group made before its first collective, outside any branch, with the same
    argument over the same variables (`torch.cuda.set_device(args.local_rank)` in `train`, which
    `main` set right after `init_process_group`): the communicator is on that GPU already.
    """
    f = ctx.facts
    for init in ctx.script.calls_of(INIT):
        if not _nccl(ctx, init) or mt.keyword(init, "device_id") is not None:
            continue
        scope = f.scope(init)
        for call in ctx.script.calls_of("torch.cuda.set_device"):
            if f.scope(call) is scope and f.before(init, call):
                between = [c for c in f.calls if f.scope(c) is scope and f.before(init, c) and f.before(c, call)]
            elif (site := _site_after(ctx, init, f.scope(call))) is not None:
                between = [c for c in f.calls if f.scope(c) is scope and f.before(init, c) and f.before(c, site)] \
                    + [c for c in f.calls if f.scope(c) is f.scope(call) and f.before(c, call)]
            else:
                continue
            first = next((c for c in between if _on_current_gpu(ctx, c)), None)
            if first is not None and not _set_before(ctx, call, scope, first):
                yield Hit(call, f"set_device runs after `{f.code(first.func)}(...)` on an NCCL group, which already "
                                "bound this process's communicator to GPU 0: set the device before "
                                "init_process_group")
                break


def _set_before(ctx: Context, call: cst.Call, scope: cst.CSTNode, first: cst.Call) -> bool:
    """Did the function that starts the group (`scope`) already set the device `call` sets, with
    the same value, before `first`, its first collective: a `set_device` of the same argument
    (spelled the same, every name it reads the same variable, none of them set anew between) that
    runs on every path through that function, outside any branch, loop or `try`? Then `call`
    repeats the device the communicator was bound to (CT-Net's `train` sets
    `args.local_rank` again, which `main` set right after `init_process_group`; decision 0262)."""
    f = ctx.facts
    arg = mt.positional(call, 0) or mt.keyword(call, "device")
    if arg is None:
        return False
    names = [(n.value, f.ref(n)) for n in f.variables_in(arg.value)]
    for prev in ctx.script.calls_of("torch.cuda.set_device"):
        given = mt.positional(prev, 0) or mt.keyword(prev, "device")
        if prev is call or f.scope(prev) is not scope or not f.before(prev, first) or given is None \
                or f.code(given.value) != f.code(arg.value) or _branched(f, prev, scope):
            continue
        if sorted(names, key=lambda x: x[0]) == sorted(((n.value, f.ref(n)) for n in f.variables_in(given.value)),
                                                       key=lambda x: x[0]) \
                and all(ref is not None and not any(
                    f.scope(stmt) is scope and f.before(prev, stmt) or f.scope(stmt) is f.scope(call)
                    and f.before(stmt, call) for _, _, stmt in f.writes(ref)) for _, ref in names):
            return True
    return False


def _branched(f, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    """Is `node` under a branch, loop or `try` of `scope`?"""
    for anc in f.ancestors(node):
        if anc is scope:
            return False
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.IfExp, cst.BooleanOperation)):
            return True
    return False


def _site_after(ctx: Context, init: cst.Call, func: cst.CSTNode) -> cst.Call | None:
    """The call after `init_process_group`, in its own function or block, that runs the function
    `func` of this file (`main(cfg)` of `if __name__ == "__main__":`, after the group is started
    there), or None."""
    f = ctx.facts
    return next((c for c in f.calls if f.scope(c) is f.scope(init) and f.before(init, c)
                 and func in ctx.ranks.callees(c)), None) if isinstance(func, cst.FunctionDef) else None


def _on_current_gpu(ctx: Context, call: cst.Call, depth: int = 2) -> bool:
    """Does `call` run an NCCL collective on the current GPU: a DDP wrap, a collective of
    torch.distributed (not `new_group`, which agrees through the store, nor a barrier given
    `device_ids=`, which runs on that GPU), or a function of the program that runs one outside the
    branch an NCCL group does not take (the `else` of `if dist.get_backend() == "nccl":`)?"""
    f = ctx.facts
    name = f.qualify(call.func)
    if name == DDP:
        return True
    if name == NEW_GROUP or name == BARRIER and mt.keyword(call, "device_ids") is not None \
            or not ctx.ranks.is_collective(call):
        return False
    helpers = ctx.ranks.callees(call) if depth else []
    return not helpers or any(_on_current_gpu(ctx, c, depth - 1) for func in helpers
                              for c in f.calls_in(func.body) if not _off_nccl(f, c))


def _off_nccl(f, node: cst.CSTNode) -> bool:
    """Is `node` on the side of a backend test an NCCL group does not take (`else:` of
    `if dist.get_backend() == dist.Backend.NCCL:`, the body of `!= "nccl"`)?"""
    for anc in f.ancestors(node):
        if isinstance(anc, cst.If) and isinstance(anc.test, cst.Comparison) and len(anc.test.comparisons) == 1 \
                and _names_nccl_backend(f, anc.test):
            equal = isinstance(anc.test.comparisons[0].operator, cst.Equal)
            in_else = anc.orelse is not None and f.is_inside(node, anc.orelse)
            if in_else == equal and (in_else or f.is_inside(node, anc.body)):
                return True
    return False


def _names_nccl_backend(f, test: cst.Comparison) -> bool:
    """`dist.get_backend() == dist.Backend.NCCL`, `dist.get_backend() != "nccl"`."""
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(x, cst.Call) and f.qualify(x.func) == "torch.distributed.get_backend" for x in sides) \
        and any(_says_nccl(x) or isinstance(x, cst.Attribute) and x.attr.value == "NCCL" for x in sides)


@rule("DDP013", bug=False, fixable=True)
def nccl_on_cpu(ctx: Context) -> Iterator[Hit]:
    """A hard-coded `"nccl"` backend in a script that also runs on CPU.

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    Right:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    NCCL works on GPUs only: where the script falls back to the CPU (it tests
    `torch.cuda.is_available()` to choose), the process group fails to start. A script that
    demands CUDA (`assert torch.cuda.is_available()`, an exit without it, a `set_device` that
    runs on every path, or on the path that starts the group, as does a `torch.device` of a GPU
    with no other choice there: `torch.device(f"cuda:{local_rank}")`) or only moves results to a
    `"cpu"` device has no CPU path.
    A group started only on a branch that tests for GPUs (`if torch.cuda.device_count() > 1:`,
    `if device.type != "cpu":`, or a test of the name its body hands DistributedDataParallel as
    `device_ids`: `if device_id is not None:`) never starts on the CPU path either, nor one started
    only where the run has several processes (`if world_size > 1:`) in a worker that the program
    spawns only where it demands GPUs (`mp.spawn(run, ...)` after `assert world_size <=
    torch.cuda.device_count()`, or under a GPU test; the CPU path calls `run("cpu", 1)`, one
    process), nor one in a worker spawned once per GPU (`mp.spawn(run, nprocs=world_size)` with
    `world_size = torch.cuda.device_count()`: no worker without a GPU). `dist.is_available()` asks
    about the build's distributed support, not about a GPU.
    `gloo` runs on CPU. `--fix` chooses the backend the same way the script chooses its device.
    Advice (decision 0133): no set of real DDP code ever held a bug of this class that upstream fixed,
    and all 17 of its findings judged there were false (a CPU path that never starts a group).
    """
    f = ctx.facts
    gpu_only = any(not _under_if(f, c) for c in ctx.script.calls_of("torch.cuda.set_device"))
    falls_back = not gpu_only and any(mt.is_available_test(c) and not _requires(ctx, c)
                                      and f.qualify(c.func) != "torch.distributed.is_available" for c in f.calls)
    torch = ctx.script.spelled("torch")
    for init in ctx.script.calls_of(INIT):
        backend = _backend(init)
        if falls_back and backend is not None and _says_nccl(backend) and not _binds_gpu(ctx, init) \
                and not _gpu_branch(ctx, init) and not _spawned_on_gpus(ctx, init) and not _cpu_picks_another(ctx, init):
            fix = None if torch is None else _choose_backend(backend, torch)
            yield Hit(backend, "the backend is always NCCL, but this script also runs on CPU, where NCCL "
                               "cannot start: use gloo there", fix)


def _requires(ctx: Context, test: cst.Call) -> bool:
    """`assert torch.cuda.is_available()`, `if not torch.cuda.is_available(): sys.exit(...)`: the
    script demands CUDA rather than falling back."""
    f = ctx.facts
    stmt = f.statement(test)
    if mt.sole(stmt, cst.Assert) is not None:
        return True
    guard = next((a for a in f.ancestors(test) if isinstance(a, cst.If)), None)
    if guard is None or not f.is_inside(test, guard.test) or not guard.body.body:
        return False
    last = guard.body.body[-1]
    return mt.sole(last, cst.Raise) is not None or any(
        dotted(c.func) in ("sys.exit", "exit", "os.sys.exit", "quit") for c in f.calls_in(last))


def _binds_gpu(ctx: Context, init: cst.Call) -> bool:
    """Does a `set_device`, or a `torch.device` of a GPU with no other choice (`torch.device(f"cuda:{local_rank}")`),
    run on the path to `init` (in its block or a block around it)? Then the branch that starts NCCL
    uses a GPU (`else: torch.cuda.set_device(args.local_rank) ...`)."""
    f = ctx.facts
    binding = [*ctx.script.calls_of("torch.cuda.set_device"),
               *(c for c in ctx.script.calls_of("torch.device") if c.args and _names_gpu(c.args[0].value)
                 and not _chosen(f, c))]
    return any(f.scope(c) is f.scope(init) and f.is_inside(init, f.parent(f.statement(c))) for c in binding)


def _chosen(f, call: cst.Call) -> bool:
    """Is `call` one side of a choice in its statement (`torch.device("cuda") if ... else
    torch.device("cpu")`, `... or ...`)?"""
    stmt = f.statement(call)
    for anc in f.ancestors(call):
        if anc is stmt:
            return False
        if isinstance(anc, (cst.IfExp, cst.BooleanOperation)):
            return True
    return False


def _names_gpu(expr: cst.BaseExpression) -> bool:
    """`"cuda"`, `"cuda:0"`, `f"cuda:{local_rank}"`: a device string that says a GPU, whatever else."""
    if isinstance(expr, cst.FormattedString):
        first = expr.parts[0] if expr.parts else None
        return isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda")
    return (string_value(expr) or "").startswith("cuda")


def _gpu_branch(ctx: Context, init: cst.Call) -> bool:
    """Does `init` run under an `if` that tests for GPUs (`torch.cuda.*()`, `device.type`, a
    `"cuda"`/`"cpu"` string), in either branch?"""
    f = ctx.facts
    for anc in f.ancestors(init):
        if isinstance(anc, cst.If) and not f.is_inside(init, anc.test) and (
                any((f.qualify(c.func) or "").startswith("torch.cuda.") for c in f.calls_in(anc.test))
                or any(a.attr.value == "type" for a in mt.findall(anc.test, cst.Attribute))
                or any(string_value(s) in ("cuda", "cpu") for s in mt.findall(anc.test, cst.SimpleString))
                or _tests_gpu_index(f, anc)):
            return True
    return False


def _cpu_picks_another(ctx: Context, init: cst.Call) -> bool:
    """Does `init` run under a test of a setting against a constant (`if method == "nccl-openmpi":`)
    that the CPU path of its function sets, before it, to another constant (`if not
    torch.cuda.is_available(): method = "gloo"`)? There the branch that starts NCCL is not taken."""
    f = ctx.facts
    for anc in f.ancestors(init):
        if isinstance(anc, cst.FunctionDef):
            return False
        mode = _mode_test(anc.test) if isinstance(anc, cst.If) and f.is_inside(init, anc.body) else None
        if mode is None:
            continue
        setting, value = mode
        for target, assigned, stmt in f.assigns:
            if f.code(target) == setting and f.scope(stmt) is f.scope(init) and f.before(stmt, init) \
                    and _cpu_path(f, stmt) and (string_value(assigned) if isinstance(assigned, cst.SimpleString)
                                                 else None) not in (None, value):
                return True
    return False


def _mode_test(test: cst.BaseExpression) -> tuple[str, str] | None:
    """`method == "nccl-openmpi"`: a setting (its code) compared with a string (its value)."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, cst.Equal) and isinstance(test.left, (cst.Name, cst.Attribute)):
        value = string_value(test.comparisons[0].comparator)
        return None if value is None else (cst.Module([]).code_for_node(test.left), value)
    return None


def _cpu_path(f, stmt: cst.CSTNode) -> bool:
    """Does `stmt` run only where there is no GPU: in the body of `if not torch.cuda.is_available():`
    or the `else` of `if torch.cuda.is_available():`?"""
    child = stmt
    for anc in f.ancestors(stmt):
        if isinstance(anc, cst.FunctionDef):
            return False
        if isinstance(anc, cst.If) and child is not anc.test:
            test = anc.test
            negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            if mt.is_available_test(test.expression if negated else test) and (child is anc.body) == negated:
                return True
        child = anc
    return False


def _spawned_on_gpus(ctx: Context, init: cst.Call) -> bool:
    """Does `init` run only where the run has several processes (under `if world_size > 1:` in its
    function), in a worker that the program starts several of only where it demands GPUs: every
    `mp.spawn` of that function runs under a GPU test or after an `assert` on `torch.cuda`
    (`assert world_size <= torch.cuda.device_count()`)? Or, wherever `init` runs in it, does every
    spawn start one worker per GPU (`nprocs=torch.cuda.device_count()`: none without a GPU)? Its
    processes then have GPUs."""
    f = ctx.facts
    func = f.scope(init)
    if not isinstance(func, cst.FunctionDef):
        return False
    spawns = [c for c in f.calls if f.qualify(c.func) in SPAWNED_WITH_INDEX and _worker(c) == func.name.value]
    if spawns and all(_one_per_gpu(f, s) for s in spawns):
        return True
    if not any(isinstance(a, cst.If) and f.is_inside(a, func) and f.is_inside(init, a.body)
               and ctx.ranks.several_processes(a.test) for a in f.ancestors(init)):
        return False
    return bool(spawns) and all(_gpu_branch(ctx, s) or _after_gpu_assert(ctx, s) for s in spawns)


def _one_per_gpu(f, spawn: cst.Call) -> bool:
    """`mp.spawn(run, nprocs=torch.cuda.device_count())` (or a name every value of which is that
    count): one worker per GPU, and none where there is no GPU."""
    nprocs = mt.keyword(spawn, "nprocs")
    if nprocs is None:
        return False
    origins = f.origins(nprocs.value)
    return bool(origins) and all(isinstance(o, cst.Call) and f.qualify(o.func) == "torch.cuda.device_count"
                                 for o in origins)


def _worker(spawn: cst.Call) -> str | None:
    """The name of the function `mp.spawn(fn, ...)` starts."""
    arg = mt.keyword(spawn, "fn") or mt.positional(spawn, 0)
    return arg.value.value if arg is not None and isinstance(arg.value, cst.Name) else None


def _after_gpu_assert(ctx: Context, node: cst.CSTNode) -> bool:
    """Does an `assert` that reads `torch.cuda` run on the path to `node`, before it, in its block or
    a block around it (`assert world_size <= torch.cuda.device_count()`)?"""
    f = ctx.facts
    for call in f.calls:
        stmt = f.statement(call)
        if (f.qualify(call.func) or "").startswith("torch.cuda.") and mt.sole(stmt, cst.Assert) is not None \
                and f.scope(stmt) is f.scope(node) and f.is_inside(node, f.parent(stmt)) and f.before(stmt, node):
            return True
    return False


def _tests_gpu_index(f, branch: cst.If) -> bool:
    """Does `branch` test a name that its body hands to DistributedDataParallel as the GPU
    (`if device_id is not None:` ... `device_ids=[device_id]`): the processes that have one?"""
    tested = {n.value for n in mt.findall(branch.test, cst.Name)}
    return any(n.value in tested for c in f.calls_in(branch.body) for a in c.args
               if a.keyword is not None and a.keyword.value == "device_ids" for n in mt.findall(a.value, cst.Name))


def _under_if(f, node: cst.CSTNode) -> bool:
    """Does `node` run under an `if` (or a conditional expression) of its function?"""
    for anc in f.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            return False
        if isinstance(anc, (cst.If, cst.IfExp)):
            return True
    return False


def _backend(init: cst.Call) -> cst.BaseExpression | None:
    arg = mt.keyword(init, "backend") or mt.positional(init, 0)
    return None if arg is None else arg.value


def _nccl(ctx: Context, init: cst.Call) -> bool:
    backend = _backend(init)
    return backend is not None and any(
        _says_nccl(s) for o in ctx.facts.origins(backend) for s in mt.findall(o, cst.SimpleString))


def _says_nccl(string: cst.BaseExpression) -> bool:
    """`"nccl"`, `"NCCL"`: torch's `Backend` lowercases the name it is given."""
    return (string_value(string) or "").lower() == "nccl"


def _choose_backend(backend: cst.BaseExpression, torch: str):
    def fix(edits) -> None:
        quote = backend.quote
        edits.replace(backend, lambda _: cst.parse_expression(
            f"{quote}nccl{quote} if {torch}.cuda.is_available() else {quote}gloo{quote}"),
            "NCCL on GPUs, gloo on CPU")
    return fix


@rule("DDP026")
def no_process_group(ctx: Context) -> Iterator[Hit]:
    """A program that wraps in DDP (or shards with a DistributedSampler) but never joins a process group.

    Wrong:

        import argparse
        import torch
        from torch.nn.parallel import DistributedDataParallel
        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--world-size", type=int, default=1)
            args = parser.parse_args()
            model = torch.nn.Linear(4, 2)
            if args.world_size > 1:
                model = DistributedDataParallel(model)
        if __name__ == "__main__":
            main()

    Right:

        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--world-size", type=int, default=1)
            args = parser.parse_args()
            model = torch.nn.Linear(4, 2)
            if args.world_size > 1:
                dist.init_process_group("gloo")
                model = DistributedDataParallel(model)
        if __name__ == "__main__":
            main()

    Without a process group, torchrun starts N processes that know nothing of each other: each
    trains its own model on all the data (the wrap is skipped), or DDP and the sampler stop
    with "Default process group has not been initialized". Found at the first DDP wrap or
    DistributedSampler (one not given both `num_replicas=` and `rank=`) of a file that runs as a
    program (its own `if __name__ == "__main__":` block: a module's wrap, run by whichever script
    imports it, is that script's question; so is one below a stub main block that runs none of the
    module's code, `print("run train.py")`, read in the program of the script that imports it), where
    nothing in the code read joins a group (`ddpify.analysis.distributed.ungrouped`, the answer
    `convert` gives too: no `init_process_group`, group helper, launcher API, framework that starts
    its own, or function handed to a library that may start workers).
    """
    f = ctx.facts
    if not ctx.script.distributed or not any(mt.is_main_guard(s) and _own(f, s) for s in f.module.body) \
            or ungrouped(f) is None:
        return
    for call in f.calls:
        name = f.qualify(call.func)
        if _own(f, call) and (name == DDP or name == SAMPLER and not (
                mt.keyword(call, "num_replicas") and mt.keyword(call, "rank"))):
            yield Hit(call.func, f"`{f.code(call.func)}(...)` but the program never joins a process group (no "
                                 "`init_process_group` in the code read): under torchrun every process trains alone "
                                 "on all the data, or this call fails; call `dist.init_process_group(...)` first")
            return


def _own(f, node: cst.CSTNode) -> bool:
    """Is `node` in the checked file itself (not a module it imports, nor the script that imports it)?"""
    program = f.program
    return program is None or program.part_of(node, f.parents) is program.parts[0]
