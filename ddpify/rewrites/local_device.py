"""local-device: every process uses its own GPU, not GPU 0.

    device = torch.device("cuda:0" if use_cuda else "cpu")   ->  torch.device("cuda" if use_cuda else "cpu")
    model.cuda(0)                                            ->  model.cuda()
    device = 0 if torch.cuda.is_available() else "cpu"       ->  local_rank() if ... else "cpu"
    device = 0; model.to(0)                                  ->  device = local_rank(); model.to(local_rank())

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
DEVICE_NAME = m.Name(value=m.MatchRegex(r"(?i)^(?!n_|num_)(\w+_)?(device|gpu|dev)(_?(id|idx|index))?$"))  # not n_gpu


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
    for zero in _device_zeros(facts):
        edits.replace(zero, lambda node: cst.parse_expression("local_rank()"),
                      "device index 0 -> local_rank(): this process's GPU")
        edits.add_import("ddpify_runtime", "local_rank")


def _device_zeros(facts):
    """The `0` of `0 if torch.cuda.is_available() else "cpu"`, `device = 0` and `.to(0)`."""
    for call in facts.calls:
        if m.matches(call, m.Call(func=m.Attribute(attr=m.Name("to")), args=[m.Arg(value=ZERO), m.ZeroOrMore()])):
            yield call.args[0].value
    for target, value, stmt in facts.assigns:
        if m.matches(value, m.IfExp(body=ZERO, test=mt.IS_AVAILABLE_TEST)):
            yield value.body
        elif m.matches(value, ZERO) and m.matches(target, DEVICE_NAME):
            yield value
