"""Which GPU a process uses."""

from __future__ import annotations

import re

from typing import Iterator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.check.script import INIT
from ddpify.syntax.matchers import string_value
from ddpify.analysis.models import DDP
from ddpify.analysis.ranks import SPAWNED_WITH_INDEX, counts_this_nodes_gpus
from ddpify.syntax.facts import Ref
from ddpify.syntax.names import dotted


@rule("DDP001", fixable=True, several=True)
def rank_as_device(ctx: Context) -> Iterator[Hit]:
    """The global rank picks the GPU: right on the first node only.

    Wrong:

        import os
        import torch
        import torch.distributed as dist
        rank = int(os.environ["RANK"])
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl")

    Right:

        import os
        import torch
        import torch.distributed as dist
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")

    Ranks number the processes of the whole job: on the second node of 8 GPUs they run from 8
    to 15, and `set_device(8)` fails (or, with `% device_count()` missing, picks a GPU another
    process already uses). A GPU index is the process's rank on its node: `LOCAL_RANK`. Found
    where `dist.get_rank()`, `os.environ["RANK"]`, `args.rank` (not an option also spelled
    `--local_rank`, which the launcher fills with the local rank), a name holding one of them, an
    attribute the program sets to one of them on the same object elsewhere (`config.gpu =
    int(os.environ["RANK"])` in another module, read as `self.config.gpu`), or the name
    `init_process_group(rank=...)` is given where each assignment of it adds an offset (`rank = args.nr * args.gpus + gpu`)
    (a name read after its own assignment earlier in its block holds that value only: `local_rank =
    dist.get_rank()` then `set_device(local_rank)`, `local_rank` also the worker's parameter) is
    a device: `set_device(...)` (torch.cuda's, or an accelerator's: `get_accelerator().set_device(...)`), `device_ids=[...]`
    (DDP's, or `dist.barrier`'s: NCCL's barrier runs on that GPU), `output_device=`, `torch.device("cuda", ...)`,
    `f"cuda:{...}"` (or `"cuda:{}".format(...)`, `"cuda:%d" % ...`), `.cuda(...)`, `.to(...)`. `--fix` reads `LOCAL_RANK` there when the launcher
    sets it (torchrun does) and keeps the script's own expression when not (a single process
    without a launcher, `srun`): `int(os.environ.get("LOCAL_RANK", rank))`, bound once to
    `local_rank` where one function uses the same rank as a device several times. Not where
    the script starts every process itself, one `mp.spawn` numbering them by the index it passes
    each worker (`init_process_group(rank=rank)` in `def run(rank, world_size)`), nor where the
    job's size is this machine's GPU count (`init_process_group(world_size=n)` with `n =
    torch.cuda.device_count()`, through names and arguments), nor where the program sets
    `MASTER_ADDR` to this machine itself (`os.environ["MASTER_ADDR"] = "localhost"`: no group
    forms across nodes, `Ranks.loopback_master`; not a default made only where the environment has
    no address, `if not os.environ.get("MASTER_ADDR"):`, which a launcher's address passes by, nor a
    store in a function nothing runs, a `setup()` whose call is commented out):
    those ranks are the GPUs of one machine. Nor in a
    program that uses no GPU (every process group "gloo", nothing naming CUDA or NCCL): there a
    device index is wrong on every process, node 0 included, not only past the first node.
    """
    f = ctx.facts
    if not ctx.script.distributed or _one_machine(f) or ctx.ranks.loopback_master or _no_gpu(f):
        return
    sites = [(expr, quote) for expr, quote in _device_indices(ctx) if ctx.ranks.is_global_rank(expr)]
    shared = _bindings(f, [expr for expr, _ in sites])
    for expr, quote in sites:
        fix = None
        if f.own_imports.aliases.get("os") == "os":
            fix = _read_local_rank(expr, quote, f) if expr not in shared else _bound_local_rank(expr, *shared[expr], f)
        yield Hit(expr, f"`{f.code(expr)}` is the global rank, used as a GPU index: on every node but the "
                        "first it names a GPU that does not exist; use the local rank (LOCAL_RANK)", fix)


def _no_gpu(f) -> bool:
    """Does the program use no GPU: every `init_process_group` asks for "gloo" by name, and nothing
    names CUDA or NCCL (no `torch.cuda...`, `.cuda()`, `"cuda:0"`, `"nccl"`; docstrings aside)? A GPU index it passes
    (`DDP(model, device_ids=[rank])` of a model on the CPU) is an error on every process, node 0
    too, that the local rank would not fix."""
    inits = [call for call in f.calls if f.qualify(call.func) == INIT]
    backends = [mt.keyword(call, "backend") or (call.args[0] if call.args and call.args[0].keyword is None else None)
                for call in inits]
    if not inits or any(b is None or mt.string_value(b.value) != "gloo" for b in backends):
        return False
    return not any((f.qualify(n) or "").startswith("torch.cuda") for n in mt.findall(f.module, cst.Attribute)) \
        and not any(n.attr.value == "cuda" for n in mt.findall(f.module, cst.Attribute)) \
        and not any(re.search("cuda|nccl", mt.string_value(n) or "", re.I) for n in mt.findall(f.module, cst.SimpleString)
                    if not isinstance(f.parent(n), cst.Expr)) \
        and not any(re.search("cuda|nccl", p.value, re.I) for fs in mt.findall(f.module, cst.FormattedString)
                    for p in fs.parts if isinstance(p, cst.FormattedStringText))


def _one_machine(f) -> bool:
    """Does every `init_process_group` of the program take as its rank the index `mp.spawn`
    passes its worker, as it is (not `node_rank * ngpus + gpu`), or as its `world_size` this
    machine's GPU count (`torch.cuda.device_count()`)? Then the processes are one machine's, and a
    rank is a GPU index there."""
    spawned = {Ref(func, func.params.params[0].name.value)
               for call in f.calls if f.qualify(call.func) in SPAWNED_WITH_INDEX
               for worker in [mt.keyword(call, "fn") or (call.args[0] if call.args and call.args[0].keyword is None else None)]
               if worker is not None and isinstance(worker.value, cst.Name)
               for func in f.functions.get(worker.value.value, ()) if func.params.params}
    inits = [call for call in f.calls if f.qualify(call.func) == INIT]
    for call in inits:
        rank = mt.keyword(call, "rank")
        value = rank.value if rank is not None else None
        if isinstance(value, cst.Call) and mt.is_call_of(value, "int") and value.args:
            value = value.args[0].value
        size = mt.keyword(call, "world_size")
        if not (_spawn_index(f, value, spawned) or counts_this_nodes_gpus(f, size.value if size is not None else None)):
            return False
    return bool(inits)


def _spawn_index(f, value: cst.BaseExpression | None, spawned: set, depth: int = 3) -> bool:
    """Is `value` the index spawn passed its worker, as it is: the worker's parameter, or a
    parameter every caller passes it on to (`def setup(rank, world): init_process_group(rank=rank)`
    called `setup(rank, n)` from the worker)?"""
    ref = f.ref(value) if isinstance(value, cst.Name) else None
    if ref is None or f.writes(ref):
        return False
    if ref in spawned:
        return True
    sources = f.sources(ref) if isinstance(ref.scope, cst.FunctionDef) else []
    return depth > 0 and bool(sources) and all(_spawn_index(f, s, spawned, depth - 1) for s in sources)


def _bindings(f, exprs: list[cst.BaseExpression]) -> dict[cst.BaseExpression, tuple[str, cst.CSTNode, dict]]:
    """Where one function uses the same rank expression as a device several times, its fix binds
    the local rank once (`local_rank = int(os.environ.get("LOCAL_RANK", rank))`, before the first
    use) and every use reads that name: for each such expression, (the name, the statement the
    binding goes before, the state its fixes share). Only where that statement's block holds
    every later use, so the binding runs before each of them."""
    groups: dict[tuple, list[cst.BaseExpression]] = {}
    for expr in exprs:
        groups.setdefault((f.scope(expr), f.code(expr)), []).append(expr)
    found = {}
    for (scope, _), uses in groups.items():
        uses = sorted(uses, key=lambda e: f.spans[e][0])
        first = f.statement(uses[0])
        if len(uses) < 2 or not all(_in_block_after(f, first, e) for e in uses[1:]):
            continue
        name, n = "local_rank", 1
        while f.used_inside(name, scope):
            n += 1
            name = f"local_rank_{n}"
        state: dict = {}
        found.update({e: (name, first, state) for e in uses})
    return found


def _in_block_after(f, stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Is `node` in a statement of `stmt`'s block that comes after `stmt` (or in `stmt` itself)?"""
    parent, body = f.block(stmt)
    return any(s is stmt or f.before(stmt, s) and f.is_inside(node, s) for s in body if f.is_inside(node, s))


def _bound_local_rank(expr: cst.BaseExpression, name: str, first: cst.CSTNode, state: dict, f):
    binding = f"{name} = int(os.environ.get(\"LOCAL_RANK\", {f.code(expr)}))"

    def fix(edits) -> None:
        if state.get("edits") is not edits:  # the first of these fixes that runs binds the name
            state["edits"] = edits
            edits.insert_before(first, binding)
        edits.replace(expr, lambda _: cst.Name(name), f"`{dotted(expr) or 'the global rank'}` -> `{name}`, "
                                                    "LOCAL_RANK (when set) as the device")
    return fix


def _device_indices(ctx: Context) -> Iterator[tuple[cst.BaseExpression, str]]:
    """Expressions the script uses as a GPU index, with the quote a string in their place takes
    (the other one inside an f-string: Python before 3.12 refuses the same)."""
    f = ctx.facts
    for call in f.calls:
        name = f.qualify(call.func)
        first = mt.positional(call, 0)
        if (name in ("torch.cuda.set_device", "torch.cuda.device") or mt.is_method_call(call, "set_device")) \
                and first is not None:  # also an accelerator's: `get_accelerator().set_device(i)`, `torch.xpu`'s
            yield first.value, '"'
        elif name in (DDP, "torch.distributed.barrier"):  # NCCL's barrier runs on `device_ids`' GPU
            ids, out = mt.keyword(call, "device_ids"), mt.keyword(call, "output_device")
            if ids is not None and isinstance(ids.value, (cst.List, cst.Tuple)):
                yield from ((e.value, '"') for e in ids.value.elements)
            if out is not None:
                yield out.value, '"'
        elif name == "torch.device" and len(call.args) == 2 and string_value(call.args[0].value) == "cuda":
            yield call.args[1].value, '"'
        elif mt.is_method_call(call, "cuda", "to") and first is not None and name is None \
                and isinstance(first.value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            yield first.value, '"'
        elif mt.is_method_call(call, "format") and isinstance(call.func, cst.Attribute) \
                and isinstance(call.func.value, cst.SimpleString) and string_value(call.func.value) == "cuda:{}" \
                and len(call.args) == 1 and first is not None:
            yield first.value, '"'  # `"cuda:{}".format(rank)`: the f-string below, spelled the older way
    for text in f.strings:  # `"cuda:%d" % rank`: the same, with %
        op = f.parents.get(text)
        if isinstance(op, cst.BinaryOperation) and op.left is text and isinstance(op.operator, cst.Modulo) \
                and string_value(text) in ("cuda:%d", "cuda:%s", "cuda:%i") and not isinstance(op.right, cst.Tuple):
            yield op.right, '"'
    for string in f.fstrings:
        parts = string.parts
        if len(parts) == 2 and isinstance(parts[0], cst.FormattedStringText) and parts[0].value == "cuda:" \
                and isinstance(parts[1], cst.FormattedStringExpression):
            yield parts[1].expression, "'" if '"' in string.start else '"'


def _read_local_rank(expr: cst.BaseExpression, quote: str, f):
    local_rank = f"int(os.environ.get({quote}LOCAL_RANK{quote}, {f.code(expr)}))"

    def fix(edits) -> None:
        edits.replace(expr, lambda _: cst.parse_expression(local_rank),
                      f"`{dotted(expr) or 'the global rank'}` -> LOCAL_RANK (when set) as the device")
    return fix


@rule("DDP015", bug=False, several=True)
def hard_coded_gpu(ctx: Context) -> Iterator[Hit]:
    """GPU 0 written into a DDP script (`"cuda:0"`, `.cuda(0)`, `.to(0)`, `device_ids=[0]`).

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        model = Net().to("cuda:0")

    Right:

        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        model = Net().to(f"cuda:{int(os.environ['LOCAL_RANK'])}")

    Every process of the node then works on GPU 0: the others stay idle, GPU 0 runs out of
    memory, and NCCL reports a duplicate GPU. Use the process's local rank. A default that a
    later assignment replaces (`args.device = "cuda:0"` ... `args.device = f"cuda:{local_rank}"`)
    is fine, and so is `cuda:0` where the script gives each process its own GPU only
    (`os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["SLURM_LOCALID"]`), and so is `"cuda:0"` as
    a key of a `map_location` table (`{"cuda:0": "cpu"}`: the device the checkpoint was saved
    from, which the load remaps). Found where every process runs it (not under a rank test, not on the branch of `if args.local_rank == -1:`), in
    a script that starts a process group or wraps a model in DDP. Advice (decision 0133): no set of
    real DDP code ever held a bug of this class that upstream fixed, and 18 of its 23 findings judged
    there were false (a GPU the launcher or the script's other branch makes each process's own).
    """
    f = ctx.facts
    if not (ctx.script.calls_of(INIT) or ctx.ddp_refs) or ctx.ranks.own_gpu_only:
        return
    for expr in _gpu_zero(ctx):
        if not ctx.ranks.on_some_ranks(expr) and not ctx.ranks.undistributed(expr) and not _default(ctx, expr):
            yield Hit(expr, f"`{f.code(expr)}` puts every process on GPU 0: use this process's local rank "
                            "(LOCAL_RANK)")


def _default(ctx: Context, expr: cst.BaseExpression) -> bool:
    """`args.device = "cuda:0"` (or `device = torch.device("cuda:0")`) that a later assignment
    may replace (`if args.distributed: args.device = f"cuda:{args.local_rank}"`): a default for
    the one-process run."""
    f = ctx.facts
    stmt = f.statement(expr)
    for target, value, assign in f.assigns:
        if f.statement(value) is stmt and f.is_inside(expr, value):
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                    and len(target.elements) == len(value.elements):  # `rank, DEVICE = 0, "cuda:0"`
                target = next((t.value for t, v in zip(target.elements, value.elements) if f.is_inside(expr, v.value)), target)
            if not dotted(target):
                continue
            ref = f.ref(target, assign)
            return ref is not None and any(s is not assign and _runs_after(f, assign, s) for _, _, s in f.writes(ref))
    return _option_default(f, expr)


def _runs_after(f, first: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Does `later` come after `first`: below it, or in a function (`init_distributed_mode()`,
    whose `global DEVICE` it rebinds) that a call below `first` runs?"""
    if f.before(first, later):
        return True
    func = f.scope(later)
    return isinstance(func, cst.FunctionDef) and f.scope(first) is not func and any(
        f.before(first, site) for site in f.call_sites(func))


def _option_default(f, expr: cst.BaseExpression) -> bool:
    """The `default=` of a command-line option (`parser.add_argument("--device", default="cuda:0")`)
    that the script assigns again (`args.device = f"cuda:{local_rank}"` where the run is
    distributed): the parsed value is a default for the one-process run."""
    arg = next((a for a in f.ancestors(expr) if isinstance(a, cst.Arg)), None)
    if arg is None or arg.keyword is None or arg.keyword.value != "default":
        return False
    call = f.parents.get(arg)
    if not (isinstance(call, cst.Call) and mt.is_method_call(call, "add_argument")):
        return False
    dest = mt.keyword(call, "dest")
    names = [string_value(a.value) for a in call.args if a.keyword is None]
    name = string_value(dest.value) if dest is not None else next(
        (n.lstrip("-").replace("-", "_") for n in names if n and n.startswith("--")), None)
    return name is not None and any(mt.is_parse_args(source) for target, _, assign in f.assigns
                                    if isinstance(target, cst.Attribute) and target.attr.value == name
                                    and isinstance(target.value, cst.Name)
                                    for ref in [f.ref(target.value, assign)] if ref is not None
                                    for source in f.sources(ref))


def _saved_device(f, string: cst.BaseExpression) -> bool:
    """Is the string a key of a `map_location` dict (`torch.load(p, map_location={"cuda:0": "cpu"})`):
    the device the checkpoint was saved from, which the load remaps?"""
    element = f.parents.get(string)
    table = f.parents.get(element)
    if not (isinstance(element, cst.DictElement) and element.key is string and isinstance(table, cst.Dict)):
        return False
    arg = f.parents.get(table)
    call = f.parents.get(arg)
    if isinstance(arg, cst.Arg) and isinstance(call, cst.Call):
        return arg.keyword is not None and arg.keyword.value == "map_location" or mt.positional(call, 1) is arg
    ref = next((f.ref(t, a) for t, v, a in f.assigns if v is table and isinstance(t, cst.Name)), None)
    locations = (mt.keyword(c, "map_location") for c in f.calls if f.qualify(c.func) == "torch.load")
    return ref is not None and any(loc is not None and mt.is_name(loc.value, ref.name) for loc in locations)


def _gpu_zero(ctx: Context) -> Iterator[cst.BaseExpression]:
    """`"cuda:0"` anywhere, and a literal 0 as the index of `.cuda()`, `.to()`, `set_device`,
    `device_ids=[...]`, `output_device=`, `torch.device("cuda", 0)`."""
    f = ctx.facts
    yield from (s for s in f.strings if string_value(s) == "cuda:0" and not _saved_device(f, s))
    for call in f.calls:
        name = f.qualify(call.func)
        first = mt.positional(call, 0)
        if name in ("torch.cuda.set_device", "torch.cuda.device") or mt.is_method_call(call, "cuda", "to") \
                and name is None:
            if first is not None and mt.is_zero(first.value):
                yield first.value
        elif name in (DDP, "torch.distributed.barrier"):  # NCCL's barrier runs on `device_ids`' GPU
            ids, out = mt.keyword(call, "device_ids"), mt.keyword(call, "output_device")
            if ids is not None and isinstance(ids.value, (cst.List, cst.Tuple)):
                yield from (e.value for e in ids.value.elements if mt.is_zero(e.value))
            if out is not None and mt.is_zero(out.value):
                yield out.value
        elif name == "torch.device" and len(call.args) == 2 and string_value(call.args[0].value) == "cuda" \
                and mt.is_zero(call.args[1].value):
            yield call.args[1].value
