"""Questions of `Ranks` asked directly: `collectives_reached` and `matched_across_branches` (which
collectives a block runs, its own, through the functions of the file it calls, through a
function it hands to a call, and when the two sides of a rank test meet in the same ones), and
`rank_dependent` on values placed on a rank's device, and `rank_zero_only` (global rank 0 alone,
under its test or at every call of the function)."""

from __future__ import annotations

import libcst as cst
import pytest

from ddpify.check.context import Context
from ddpify.syntax.facts import Facts, Ref
from ddpify.syntax.parse import parse_module

CODE = '''
import torch
import torch.distributed as dist

def sync(t):
    torch.distributed.all_reduce(t)

def step(optimizer, rank, t):
    def closure():
        dist.broadcast(t, src=0)
        return t
    if rank == 0:
        optimizer.step(closure)
        sync(t)
    elif rank == 1:
        closure()
    else:
        dist.barrier()
'''


def _context():
    facts = Facts(parse_module(CODE))
    return facts, Context(facts)


def _guard(facts):
    return next(n for n in facts.by_type[cst.If])


def test_a_block_reaches_its_own_collectives_and_those_of_the_functions_it_calls_or_hands_on():
    facts, ctx = _context()
    guard = _guard(facts)
    assert ctx.ranks.collectives_reached(guard.body) == {"torch.distributed.broadcast", "torch.distributed.all_reduce"}
    assert ctx.ranks.collectives_reached(guard.orelse) == {"torch.distributed.broadcast", "torch.distributed.barrier"}


def test_a_call_of_a_function_runs_what_that_function_reaches():
    facts, ctx = _context()
    closure_call = next(c for c in facts.calls if isinstance(c.func, cst.Name) and c.func.value == "closure")
    assert ctx.ranks.collectives_run(closure_call) == {"torch.distributed.broadcast"}


def test_matched_when_every_other_branch_runs_the_same_collectives():
    facts, ctx = _context()
    guard = _guard(facts)
    closure_call = next(c for c in facts.calls if isinstance(c.func, cst.Name) and c.func.value == "closure")
    sync_call = next(c for c in facts.calls if facts.code(c.func) == "sync")
    barrier = next(c for c in facts.calls if facts.code(c.func) == "dist.barrier")
    inner = guard.orelse  # `elif rank == 1:` is a rank test of its own, without the barrier's partner
    assert ctx.ranks.matched_across_branches(closure_call, guard)  # rank 0 hands the closure on
    assert not ctx.ranks.matched_across_branches(sync_call, guard)  # nobody else all-reduces
    assert not ctx.ranks.matched_across_branches(barrier, inner)


def test_not_matched_without_another_branch():
    facts = Facts(parse_module("import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"))
    ctx = Context(facts)
    assert not ctx.ranks.matched_across_branches(facts.calls[-1], _guard(facts))


def test_a_call_runs_the_function_it_is_handed():
    facts, ctx = _context()
    handing = next(c for c in facts.calls if facts.code(c.func) == "optimizer.step")
    assert ctx.ranks.collectives_run(handing) == {"torch.distributed.broadcast"}


PLACED_HEAD = ("import os\nimport torch\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
               "ckpt = torch.load('c.pt', map_location=f'cuda:{local_rank}')\n"
               "net = torch.nn.Linear(2, 1).cuda(local_rank)\n"
               "model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[local_rank], output_device=local_rank)\n")
PLACED = {  # where a value lives is not what it holds
    "map_location": "ckpt['best'] > 0",
    "cuda": "torch.zeros(1).cuda(local_rank)",
    "to": "torch.zeros(1).to(local_rank)",
    "device": "torch.zeros(1, device=local_rank)",
    "device_ids": "model",
}
RANK_VALUES = {  # what is placed still counts
    "placed_rank": "torch.tensor(local_rank).cuda(local_rank) == 0",
    "rank_itself": "local_rank == 0",
    "tensor_of_rank": "torch.tensor(local_rank, device='cuda') == 0",
}


def _rank_dependent(expression):
    # two names between the test and the value: followed as far as `rank_dependent` follows names
    facts = Facts(parse_module(PLACED_HEAD + "value = " + expression + "\nflag = value\nif flag:\n    pass\n"))
    return Context(facts).ranks.rank_dependent(facts.by_type[cst.If][-1].test)


@pytest.mark.parametrize("name", sorted(PLACED))
def test_a_value_placed_on_the_ranks_device_is_no_rank_test(name):
    assert not _rank_dependent(PLACED[name])


@pytest.mark.parametrize("name", sorted(RANK_VALUES))
def test_the_rank_placed_on_a_device_is_still_the_rank(name):
    assert _rank_dependent(RANK_VALUES[name])


SELF_UPDATES = '''
import argparse
import torch
args = argparse.ArgumentParser().parse_args()
def worker(gpu, args):
    args.rank = args.rank * args.ngpus + gpu
    torch.cuda.set_device(args.rank)
    step = 0
    for batch in args.data:
        step = step + 1
        torch.cuda.set_device(step)
    place(gpu)
def place(gpu):
    torch.cuda.set_device(gpu)  # the caller's `gpu`, another name of the same spelling: no update
def run(rank):
    train(rank)
def train(rank):
    torch.cuda.set_device(rank)
torch.multiprocessing.spawn(run, nprocs=2)
'''


def test_a_name_updated_from_itself_keeps_what_it_was():
    """`args.rank = args.rank * ngpus + gpu` is the global rank; `step = step + 1` is a counter,
    not a rank (the cycle used to count as one); a parameter passed a name of the same spelling
    (`train(rank)` in a spawned worker's `run(rank)`) is what that name is, a node's index."""
    facts = Facts(parse_module(SELF_UPDATES))
    ranks = Context(facts).ranks
    devices = [c.args[0].value for c in facts.calls if facts.code(c.func) == "torch.cuda.set_device"]
    assert [ranks.is_global_rank(d) for d in devices] == [True, False, False, False]


ROLES = '''
import torch.distributed as dist
import torch.multiprocessing as mp
def run(rank, world_size):
    dist.init_process_group("nccl", rank=int(rank), world_size=world_size)
def worker(index, args):
    pass
def main(device_id=None):
    is_main = device_id in {0, None}
    is_multi = device_id is not None
    dist.init_process_group("gloo", rank=device_id)
    if is_main:
        pass
    if is_multi:
        pass
mp.spawn(worker, nprocs=2)
run("cpu", 1)
'''


@pytest.mark.parametrize("scope, name, role", [
    ("run", "rank", True),  # `rank=int(rank)`: the rank, whatever `run("cpu", 1)` passes
    ("worker", "index", True),  # spawned: its first parameter is the worker's index
    ("worker", "args", False),
    ("main", "device_id", True),
    ("run", "world_size", False),
])
def test_a_rank_by_role(scope, name, role):
    facts = Facts(parse_module(ROLES))
    func = next(f for f in facts.by_type[cst.FunctionDef] if f.name.value == scope)
    assert (Ref(func, name) in Context(facts).ranks.ranks_by_role) is role


@pytest.mark.parametrize("test, parts", [("is_main", True), ("is_multi", False)])
def test_a_flag_assigned_from_a_rank_by_role_parts_the_processes(test, parts):
    """`is_main = device_id in {0, None}`, `device_id` None on the direct call: still a rank test;
    `device_id is not None` asks whether the run is distributed."""
    facts = Facts(parse_module(ROLES))
    branch = next(i for i in facts.by_type[cst.If] if facts.code(i.test) == test)
    assert Context(facts).ranks._rank_test(branch) is parts


OFFSETS = '''
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
def worker(gpu, args):
    proc = args.nr * args.gpus + gpu
    dist.init_process_group("nccl", rank=proc, world_size=args.world_size)
    torch.cuda.set_device(proc)
    slot = args.nr * args.gpus + gpu
    torch.cuda.set_device(slot)
    torch.cuda.set_device(gpu)
def single(gpu, args):
    proc = gpu
    dist.init_process_group("nccl", rank=proc, world_size=args.world_size)
    torch.cuda.set_device(proc)
mp.spawn(worker, nprocs=2)
mp.spawn(single, nprocs=2)
'''


def test_the_rank_handed_on_as_an_offset_index_is_the_global_rank_in_the_core():
    """`proc = args.nr * args.gpus + gpu` handed to `init_process_group(rank=proc)` is the job's
    rank (mp.spawn on each node), though no name of it says "rank": every rule asking
    `is_global_rank` gets it, not DDP001 alone. The same formula not handed on (`slot`), the spawn
    index itself, and a name handed on as the index as it is (`proc = gpu`, one machine's) are not."""
    facts = Facts(parse_module(OFFSETS))
    ranks = Context(facts).ranks
    devices = [c.args[0].value for c in facts.calls if facts.code(c.func) == "torch.cuda.set_device"]
    assert [ranks.is_global_rank(d) for d in devices] == [True, False, False, False]


RANK_ZERO = '''
import os
import torch.distributed as dist

def report(loader):
    for batch in loader:
        print(batch)

def main(rank, loader):
    local_rank = int(os.environ["LOCAL_RANK"])
    if rank == 0:
        for batch in loader:
            print(batch)
        report(loader)
    if dist.get_rank() == 0 and len(loader) > 1:
        print("main")
    if local_rank == 0:
        print("node")
    if rank == 3:
        print("three")
    is_master = rank == 0
    if is_master:
        print("master")
    main_process = local_rank == 0
    if main_process:
        print("node master")
'''


def test_rank_zero_only_is_global_rank_zero_here_or_at_every_call():
    facts = Facts(parse_module(RANK_ZERO))
    ctx = Context(facts)
    printed = {facts.code(c.args[0].value): c for c in facts.calls if isinstance(c.func, cst.Name)
               and c.func.value == "print"}
    batches = [c for c in facts.calls if isinstance(c.func, cst.Name) and c.func.value == "print"
               and facts.code(c.args[0].value) == "batch"]
    assert len(batches) == 2 and all(ctx.ranks.rank_zero_only(c) for c in batches)  # under `rank == 0`; `report`'s one call is
    assert ctx.ranks.rank_zero_only(printed['"main"']) is True  # a conjunct of the test
    assert ctx.ranks.rank_zero_only(printed['"node"']) is False  # one process a node
    assert ctx.ranks.rank_zero_only(printed['"three"']) is False  # one process, not rank 0
    assert ctx.ranks.rank_zero_only(printed['"master"']) is True  # a flag set by `rank == 0`
    assert ctx.ranks.rank_zero_only(printed['"node master"']) is False  # a flag set by `local_rank == 0`


ALONE = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

def worker(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    print("worker")

def generate():
    print("generate")

if __name__ == "__main__":
    # mp.spawn(worker, args=(2,), nprocs=2)
    generate()
    print("main")
"""


@pytest.mark.parametrize("main, alone", [
    ("# mp.spawn(worker, args=(2,), nprocs=2)", True),  # the group's code lies in a function the run never enters
    ("mp.spawn(worker, args=(2,), nprocs=2)", False),  # the main block starts the workers
    ("worker(0, 1)", False),  # it joins the group itself
    ("dist.init_process_group('gloo')", False),
])
def test_a_main_block_that_does_nothing_distributed_runs_alone(main, alone):
    facts = Facts(parse_module(ALONE.replace("# mp.spawn(worker, args=(2,), nprocs=2)", main)))
    ranks = Context(facts).ranks
    printed = {facts.code(c.args[0].value): c for c in facts.calls if facts.code(c.func) == "print"}
    assert ranks.undistributed(printed['"main"']) is alone
    assert ranks.undistributed(printed['"generate"']) is alone  # its one call is the main block's
    assert ranks.undistributed(printed['"worker"']) is False  # a user may still call it


WAITS = '''
import torch
import torch.distributed as dist

def evaluate(t):
    dist.all_reduce(t)

def log(s):
    print(s)

def train(rank, t, loss):
    if rank == 0:
        torch.save(t, "a.pt")
    log("saved")
    first = torch.load("a.pt")
    if rank == 0:
        torch.save(t, "b.pt")
    evaluate(t)
    second = torch.load("b.pt")
    for epoch in range(3):
        if rank == 0:
            torch.save(t, "c.pt")
            log("again")
        loss.backward()
    third = torch.load("c.pt")
    for epoch in range(3):
        if rank == 0:
            torch.save(t, "d.pt")
        log(epoch)
    fourth = torch.load("d.pt")
    return first, second, third, fourth
'''


@pytest.mark.parametrize("saved, waits", [("a.pt", False), ("b.pt", True), ("c.pt", True), ("d.pt", False)])
def test_may_wait_between_a_write_and_a_later_read(saved, waits):
    """`may_wait_between` (decision 0271): a collective, through a function of the program (`evaluate`), or
    a backward after the write in its loop, is a place where the processes meet; a print is not, nor the
    top of the loop's next round after the last one."""
    facts = Facts(parse_module(WAITS))
    ctx = Context(facts)
    save = next(c for c in facts.calls if facts.code(c).startswith("torch.save") and f'"{saved}"' in facts.code(c))
    load = next(c for c in facts.calls if facts.code(c) == f'torch.load("{saved}")')
    assert ctx.ranks.may_wait_between(facts.statement(save), load, lambda expr: False) is waits
