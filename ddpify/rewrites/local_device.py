"""local-device: every process uses its own GPU, not GPU 0.

    device = torch.device("cuda:0" if use_cuda else "cpu")   ->  torch.device("cuda" if use_cuda else "cpu")
    model.cuda(0)                                            ->  model.cuda()
    device = 0 if torch.cuda.is_available() else "cpu"       ->  local_rank() if ... else "cpu"

`init_distributed_mode()` makes each process's GPU (`LOCAL_RANK`) the current CUDA device,
so plain `"cuda"` and `.cuda()` mean the right GPU; a hard-coded index 0 would put every
process on the first GPU. `RANK` is never used as a device index.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from ddpify import matchers as mt

NAME = "local-device"
SUMMARY = 'turn hard-coded "cuda:0", .cuda(0) and device index 0 into this process\'s GPU'

CUDA0 = m.SimpleString(value=m.MatchIfTrue(lambda v: v[1:-1] == "cuda:0"))
ZERO = m.Integer("0")


def rewrite(facts, edits, options) -> None:
    for string in facts.strings:
        if m.matches(string, CUDA0):
            quote = string.value[0]
            edits.replace(string, lambda node, q=quote: node.with_changes(value=f"{q}cuda{q}"),
                          '"cuda:0" -> "cuda": the current device, set to this process\'s GPU')
    for call in facts.calls:
        if m.matches(call, m.Call(func=m.Attribute(attr=m.Name("cuda")), args=[m.Arg(value=ZERO)])):
            edits.replace(call, lambda node: node.with_changes(args=[]),
                          ".cuda(0) -> .cuda(): the current device, set to this process's GPU")
        elif facts.qualify(call.func) == "torch.device" and m.matches(
                call, m.Call(args=[m.Arg(value=m.SimpleString()), m.Arg(value=ZERO)])):
            edits.replace(call, lambda node: node.with_changes(args=[node.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)]),
                          'torch.device("cuda", 0) -> torch.device("cuda"): this process\'s GPU')
    for node in _index_choices(facts):
        edits.replace(node.body, lambda body: cst.parse_expression("local_rank()"),
                      "device index 0 -> local_rank(): this process's GPU")
        edits.add_import("ddpify_runtime", "local_rank")


def _index_choices(facts):
    """`0 if torch.cuda.is_available() else "cpu"`."""
    for assign_target, value, stmt in facts.assigns:
        if m.matches(value, m.IfExp(body=ZERO, test=mt.IS_AVAILABLE_TEST)):
            yield value
