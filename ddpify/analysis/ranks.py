"""Which tests ask which process this is: one answer, for every rewrite (and check) that asks.

A test is a rank test by what its values are, not by a substring of a name:

    if rank == 0:                         # a name that is a rank (`rank`, `local_rank`, `myrank`)
    if dist.get_rank() == 0:              # a call that returns one
    if is_main_process():                 # a call that asks for the main process
    if int(os.environ["RANK"]) == 0:      # the launcher's environment
    if me == 0:  (me = int(os.environ.get("LOCAL_RANK", 0)))   # a value that comes from one of those
    if gpu == 0:  (init_process_group(..., rank=gpu))         # a name the script hands on as the rank
    if args.ranking_loss > 0:             # NOT a rank test: `ranking` is another word
"""

from __future__ import annotations

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref
from ddpify.syntax.names import dotted, rank_word

# Calls whose `rank=` argument is the calling process's rank.
# calls that start workers and pass each its index as the first argument (`mp.spawn(train, ...)`)
SPAWNED_WITH_INDEX = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})
RANK_TAKERS = frozenset({"torch.distributed.init_process_group", "torch.utils.data.DistributedSampler",
                         "torch.utils.data.distributed.DistributedSampler"})

# The launcher's variables that differ between processes.
RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "SLURM_PROCID", "SLURM_LOCALID",
                            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK"})


def is_rank_test(facts: Facts, test: cst.CSTNode) -> bool:
    """Does `test` read a value that differs by process: a rank, the main-process question, or
    the launcher's RANK variables, directly or through the assignments it comes from?"""
    nodes: list[cst.CSTNode] = facts.findall(test, (cst.Name, cst.Attribute, cst.Subscript, cst.Call))
    return any(is_rank_value(facts, node) for node in nodes)


def is_rank_value(facts: Facts, expr: cst.CSTNode) -> bool:
    """`rank`, `args.local_rank`, `dist.get_rank()`, `os.environ["RANK"]`, or a name assigned one."""
    if isinstance(expr, cst.Call):
        return rank_word(expr.func) or _reads_rank_variable(facts, expr)
    if isinstance(expr, cst.Subscript):
        return _reads_rank_variable(facts, expr)
    if rank_word(expr):
        return True
    if not isinstance(expr, cst.Name) or facts.ref(expr) is None:
        return False
    def direct_in(origin: cst.CSTNode) -> bool:
        found: list[cst.CSTNode] = facts.findall(origin, (cst.Call, cst.Subscript))
        return any(_direct(facts, n) for n in found)
    return any(o is not expr and direct_in(o) for o in facts.origins(expr))


def _direct(facts: Facts, node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and rank_word(node.func) or _reads_rank_variable(facts, node)


def _reads_rank_variable(facts: Facts, node: cst.CSTNode) -> bool:
    """`os.environ["RANK"]`, `os.environ.get("LOCAL_RANK", 0)`, `os.getenv("RANK")`."""
    holder: cst.BaseExpression | None
    key: cst.BaseExpression | None
    if isinstance(node, cst.Subscript):
        index = node.slice[0].slice if node.slice else None
        holder, key = node.value, index.value if isinstance(index, cst.Index) else None
    elif isinstance(node, cst.Call) and node.args:
        name = facts.qualify(node.func) or dotted(node.func) or ""
        if name not in ("os.environ.get", "os.getenv", "os.environ.__getitem__"):
            return False
        holder, key = None, node.args[0].value
    else:
        return False
    if holder is not None and (facts.qualify(holder) or dotted(holder)) != "os.environ":
        return False
    return isinstance(key, cst.SimpleString) and key.evaluated_value in RANK_VARIABLES


def ranks_by_role(facts: Facts) -> frozenset[Ref]:
    """The names the script hands on as its process's rank, whatever they are called:
    `def train(gpu, args): dist.init_process_group("nccl", rank=gpu)` makes `gpu` a rank in
    `train`, so `if gpu == 0:` is a rank test there (`rank=int(gpu)` too). `rank=0` (a constant)
    names nothing. The first parameter of a function handed to `mp.spawn` is one as well: spawn
    passes each worker its index (`def run(rank, world_size)`, also called `run("cpu", 1)` on a
    CPU run, so what its callers pass does not say it).

    Before: `gpu` was a rank only by its name, so `if gpu == 0: torch.save(...)` read as every
    rank saving. After: the name's role in the script decides."""
    found = set()
    for call in facts.calls:
        name = facts.qualify(call.func)
        if name in RANK_TAKERS:
            arg = mt.keyword(call, "rank")
            value = arg.value if arg is not None else None
            if isinstance(value, cst.Call) and mt.is_call_of(value, "int") and value.args:
                value = value.args[0].value
            ref = facts.ref(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
            if ref is not None:
                found.add(ref)
        elif name in SPAWNED_WITH_INDEX:
            worker = mt.keyword(call, "fn") or (call.args[0] if call.args and call.args[0].keyword is None else None)
            for func in facts.functions.get(worker.value.value, ()) if worker is not None and isinstance(
                    worker.value, cst.Name) else ():
                params = func.params.params
                if params and facts.enclosing_class(func) is None:
                    found.add(Ref(func, params[0].name.value))
    return frozenset(found)
