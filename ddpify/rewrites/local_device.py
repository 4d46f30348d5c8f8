"""local-device: every process uses its own GPU, not GPU 0.

    device = torch.device("cuda:0" if use_cuda else "cpu")   ->  torch.device("cuda" if use_cuda else "cpu")
    model.cuda(0)                                            ->  model.cuda()
    device = 0 if torch.cuda.is_available() else "cpu"       ->  local_rank() if ... else "cpu"
    device = 0; model.to(0)                                  ->  device = local_rank(); model.to(local_rank())
    device = 0  # shorthand for cuda:0                       ->  device = local_rank()
    device = torch.device("cuda:3" if ok else "cpu")          ->  torch.device("cuda" if ok else "cpu")
    torch.device("cuda:" + args.device if ok else "cpu")      ->  torch.device("cuda" if ok else "cpu")

`init_distributed_mode()` makes each process's GPU (`LOCAL_RANK`) the current CUDA device,
so plain `"cuda"` and `.cuda()` mean the right GPU; a hard-coded index 0 would put every
process on the first GPU. `RANK` is never used as a device index. A comment at the end of an
edited line that names GPU 0 is dropped (it would describe the old value).

The GPU a single-GPU script picks by number (`"cuda:3"`, or from its options: `"cuda:" +
args.device`, `f"cuda:{args.gpu}"`, `"cuda:{}".format(gpu)`, where the string becomes a device)
would put every process on that one GPU (NCCL refuses two processes on one; on a machine with
fewer GPUs the index does not exist): it becomes `"cuda"` too, and the report says that the GPUs
are picked with CUDA_VISIBLE_DEVICES now (the option no longer picks one). An option named for a
device whose integer default the program uses as one (`--device` with `default=0`, then
`model.to(args.device)`: `accelerator.device_index_defaults`) defaults to this process's GPU,
`default=local_rank()`; a value given on the command line still picks one GPU for every process (the
report says so).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Iterator

import libcst as cst

from ddpify.analysis.accelerator import device_index_defaults
from ddpify.output import build
from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "local-device"
SUMMARY = 'turn hard-coded "cuda:0", .cuda(0) and device index 0 into this process\'s GPU'

DEVICE_NAME = re.compile(r"(?i)^(?!n_|num_)(\w+_)?(device|gpu|dev)(_?(id|idx|index))?$")  # not n_gpu


# A comment that names GPU 0 ("cuda:0", "GPU 0", "the first GPU", "device 0"), stale once the
# line means this process's GPU.
STALE_COMMENT = re.compile(r"(?i)\bcuda\s*(:\s*|\(\s*)0\b|\bgpu\s*[:#]?\s*0\b|\bfirst\s+gpu\b|\bdevice\s*[:#]?\s*0\b")
STALE_WHY = "it named GPU 0, which this line no longer means"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    edited: list[cst.CSTNode] = []
    for string in facts.strings:
        if string.value[1:-1] == "cuda:0" and not _in_message(facts, string):
            edits.replace(string, lambda node: node.with_changes(value=f"{node.value[0]}cuda{node.value[0]}"),
                          '"cuda:0" -> "cuda": the current device, set to this process\'s GPU')
            edited.append(string)
    for picked, index in _picked_gpus(facts):
        quote = next((q.value[0] for q in mt.findall(picked, cst.SimpleString)), '"')
        edits.replace(picked, _as_string(f"{quote}cuda{quote}"),
                      f'{facts.code(picked)} -> "cuda": this process\'s GPU (init_distributed_mode() makes it the '
                      f"current device), not GPU {index} on every process; pick the GPUs with CUDA_VISIBLE_DEVICES")
        edited.append(picked)
    for call in facts.calls:
        if mt.is_method_call(call, "cuda") and len(call.args) == 1 and mt.is_zero(call.args[0].value):
            edits.replace(call, lambda node: node.with_changes(args=[]),
                          ".cuda(0) -> .cuda(): the current device, set to this process's GPU")
            edited.append(call)
        elif facts.qualify(call.func) == "torch.device" and len(call.args) == 2 and \
                isinstance(call.args[0].value, cst.SimpleString) and mt.is_zero(call.args[1].value):
            edits.replace(call, _drop_index,
                          'torch.device("cuda", 0) -> torch.device("cuda"): this process\'s GPU')
            edited.append(call)
    for zero in _device_zeros(facts):
        edits.replace(zero, lambda node: cst.parse_expression("local_rank()"),
                      "device index 0 -> local_rank(): this process's GPU")
        edits.add_import("ddpify_runtime", "local_rank")
        edited.append(zero)
    for default in device_index_defaults(facts):
        edits.replace(default, lambda node: cst.parse_expression("local_rank()"),
                      f"the option's default device index {default.value} -> local_rank(): this process's GPU (a "
                      "value given on the command line still puts every process on that one GPU)")
        edits.add_import("ddpify_runtime", "local_rank")
        edited.append(default)
    for stmt in dict.fromkeys(facts.statement(node) for node in edited):
        build.drop_stale_comment(edits, stmt, STALE_COMMENT, STALE_WHY)


def _drop_index(call: cst.Call) -> cst.Call:
    """`torch.device("cuda", 0)` -> `torch.device("cuda")`, a line break before `)` kept."""
    kind, index = call.args
    return call.with_changes(args=[kind.with_changes(comma=cst.MaybeSentinel.DEFAULT,
                                                     whitespace_after_arg=index.whitespace_after_arg)])


def _device_zeros(facts: Facts) -> Iterator[cst.BaseExpression]:
    """The `0` of `0 if torch.cuda.is_available() else "cpu"`, `device = 0` and `.to(0)`."""
    for call in facts.calls_named("to"):
        if mt.is_method_call(call, "to") and call.args and mt.is_zero(call.args[0].value):
            yield call.args[0].value
    for target, value, stmt in facts.assigns:
        if isinstance(value, cst.IfExp) and mt.is_zero(value.body) and mt.is_available_test(value.test):
            yield value.body
        elif mt.is_zero(value) and isinstance(target, cst.Name) and DEVICE_NAME.match(target.value):
            yield value


def _as_string(value: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An edit that puts the string literal `value` where the node was."""
    return lambda node: cst.SimpleString(value)


def _picked_gpus(facts: Facts) -> Iterator[tuple[cst.BaseExpression, str]]:
    """(the expression, the index as written) of each GPU the script picks by number where a device
    is made of it: `"cuda:3"`, `"cuda:" + args.device`, `f"cuda:{args.gpu}"`, `"cuda:{}".format(gpu)`
    (not `"cuda:0"`, which the loop above turns into `"cuda"`, and not one in a message)."""
    for node in [*facts.strings, *facts.fstrings, *facts.findall(facts.module, cst.BinaryOperation), *facts.calls]:
        index = _gpu_index(facts, node)
        if index is not None and _made_a_device(facts, node):
            yield node, index


def _gpu_index(facts: Facts, node: cst.CSTNode) -> str | None:
    """The GPU index `node` spells after `cuda:` (`3`, `args.device`), or None."""
    if isinstance(node, cst.SimpleString):
        text = node.value[1:-1]
        return text[5:] if re.fullmatch(r"cuda:[1-9][0-9]*", text) else None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) \
            and isinstance(node.left, cst.SimpleString) and node.left.value[1:-1] == "cuda:":
        return facts.code(node.right)
    if isinstance(node, cst.FormattedString) and len(node.parts) == 2 \
            and isinstance(node.parts[0], cst.FormattedStringText) and node.parts[0].value == "cuda:" \
            and isinstance(node.parts[1], cst.FormattedStringExpression):
        return facts.code(node.parts[1].expression)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format" \
            and isinstance(node.func.value, cst.SimpleString) and node.func.value.value[1:-1] == "cuda:{}" \
            and len(node.args) == 1 and node.args[0].keyword is None:
        return facts.code(node.args[0].value)
    return None


def _made_a_device(facts: Facts, node: cst.CSTNode) -> bool:
    """Is `node` (or the `if`/`else` value it is a side of) a device: the argument of
    `torch.device(...)`, `.to(...)` or a `device=` keyword, or bound to a device's name (`device =
    ...`, `args.device = ...`)?"""
    while isinstance(parent := facts.parent(node), cst.IfExp) and node is not parent.test:
        node = parent
    parent = facts.parent(node)
    if isinstance(parent, cst.Arg):
        call = facts.parent(parent)
        return parent.keyword is not None and parent.keyword.value == "device" or isinstance(call, cst.Call) and (
            facts.qualify(call.func) == "torch.device" or mt.is_method_call(call, "to")) and call.args[0] is parent
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        name = dotted(parent.targets[0].target)
        return name is not None and bool(DEVICE_NAME.match(name.rsplit(".", 1)[-1]))
    return False


MESSAGE_CALLS = {"print", "info", "debug", "warning", "warn", "error", "write", "log", "format"}


def _in_message(facts: Facts, string: cst.SimpleString) -> bool:
    """Is the string text to show (`print("cuda:0")`, `logger.info(...)`), not a device?"""
    call = next((a for a in facts.ancestors(string) if isinstance(a, cst.Call)), None)
    return call is not None and (dotted(call.func) or "").rsplit(".", 1)[-1] in MESSAGE_CALLS
