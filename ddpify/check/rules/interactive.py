"""Scripts that stop for a person: every process would."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.syntax.names import dotted

PROMPTS = frozenset({"input", "breakpoint", "pdb.set_trace", "ipdb.set_trace", "code.interact"})


@rule("DDP016", several=True)
def prompt_on_every_rank(ctx: Context) -> Iterator[Hit]:
    """`input()` or `breakpoint()` that every rank reaches.

    Wrong:

        import torch.distributed as dist
        dist.init_process_group("gloo")
        if input("overwrite the checkpoint? ") == "y":
            save()

    Right:

        import torch.distributed as dist
        dist.init_process_group("gloo")
        answer = [input("overwrite the checkpoint? ") if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(answer, src=0)
        if answer[0] == "y":
            save()

    Under torchrun only rank 0 gets the terminal's standard input: the other processes read
    end-of-file (`EOFError`) or wait forever, and a debugger prompt on every rank interleaves N
    sessions on one terminal. Ask on rank 0 and broadcast the answer; debug one rank
    (`if dist.get_rank() == 0: breakpoint()`). Found for `input()`, `breakpoint()`,
    `pdb.set_trace()` not under a rank test, in a script that uses torch.distributed.
    """
    if not ctx.script.distributed:
        return
    f = ctx.facts
    for call in f.calls:
        name = f.qualify(call.func) or dotted(call.func)
        if name in PROMPTS and not ctx.ranks.on_some_ranks(call) and not ctx.ranks.undistributed(call) and not any(
                isinstance(a, cst.IfExp) and ctx.ranks.rank_dependent(a.test) for a in f.ancestors(call)):
            yield Hit(call, f"`{f.code(call.func)}()` runs on every rank, but only rank 0 has the terminal: the "
                            "others fail or wait forever; ask on rank 0 and broadcast the answer")
