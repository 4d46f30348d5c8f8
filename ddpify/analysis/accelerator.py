"""Does the program place anything on an accelerator? Asked of every file the conversion read.

A program whose code never names a GPU (no `.cuda()`, no `torch.cuda.FloatTensor`, no device
string such as `"cuda:0"`, `"mps"` or `f"cuda:{i}"`, no `.to(0)`) trains on the CPU wherever it
runs: on a GPU machine too. Its converted form must keep it there: the process group a GPU
machine would get (nccl) holds no CPU tensors, and the runtime's move of a model wrapped on the
CPU onto the process's GPU would leave the inputs behind. init-distributed then asks for gloo
(`init_distributed_mode(backend="gloo")`).

Reading the state of the GPUs without using them does not place anything: `torch.cuda.is_available()`
alone, seeding (`torch.cuda.manual_seed_all`), `empty_cache`, `synchronize`, memory statistics.
A framework that places for the program (accelerate, Lightning) counts as placing.

    device = torch.device("cpu")              -> nothing placed
    model = Net().to(device)                  -> nothing placed
    torch.cuda.manual_seed_all(0)             -> nothing placed
    model = Net().cuda() if args.gpu else Net()   -> placed (on some runs)
    device = torch.device(cfg["device"] if torch.cuda.is_available() else "cpu")   -> placed (where a GPU is)
    device = 0 if torch.cuda.is_available() else "cpu"    -> placed (a GPU's index, where one is)
"""

from __future__ import annotations

import re

import libcst as cst

from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted

# `torch.cuda.X` that only reads or seeds, placing nothing
_ONLY_READS = frozenset({"is_available", "device_count", "manual_seed", "manual_seed_all", "seed", "seed_all",
                         "empty_cache", "synchronize", "get_device_name", "get_device_properties",
                         "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                         "reset_peak_memory_stats", "is_initialized", "get_rng_state", "get_rng_state_all"})
_ACCELERATORS = ("cuda", "mps", "xpu", "npu", "hpu", "xla")
_DEVICE_TEXT = re.compile(r"(cuda|mps|xpu|npu|hpu|xla)(:\d*)?$")
_FRAMEWORKS = ("accelerate", "lightning", "pytorch_lightning", "deepspeed", "torch_xla")  # place for the program


def places_on_accelerator(facts: Facts) -> bool:
    """May any code of the program (`facts.module`, the merged files of a program) place a tensor
    or a module on an accelerator?"""
    module = facts.module
    return any(_names_accelerator(facts, a) for a in facts.findall(module, cst.Attribute)) \
        or any(_DEVICE_TEXT.match(_text(s) or "") for s in facts.findall(module, (cst.SimpleString, cst.FormattedString))) \
        or any(_moves_to_index(c) for c in facts.findall(module, cst.Call)) \
        or any(_picked_when_available(facts, e) for e in facts.findall(module, cst.IfExp)) \
        or any(facts.imports.imports_module(f) for f in _FRAMEWORKS)


def _names_accelerator(facts: Facts, attr: cst.Attribute) -> bool:
    """`x.cuda()`, `torch.cuda.FloatTensor`, `torch.backends.mps`; not `torch.cuda.is_available`."""
    if attr.attr.value not in _ACCELERATORS:
        return False
    parent = facts.parent(attr)
    if isinstance(parent, cst.Attribute) and parent.value is attr and parent.attr.value in _ONLY_READS:
        return False
    return (dotted(attr) or "") not in ("torch.backends.cuda", "torch.backends.mps")


def _text(node: cst.CSTNode) -> str | None:
    """A string literal's text, or the literal start of an f-string (`f"cuda:{i}"`: `cuda:`)."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    first = node.parts[0] if isinstance(node, cst.FormattedString) and node.parts else None
    return first.value.rstrip(":") if isinstance(first, cst.FormattedStringText) else None


def _picked_when_available(facts: Facts, choice: cst.IfExp) -> bool:
    """`config["device"] if torch.cuda.is_available() else "cpu"`: the device a configuration or the
    command line names (no literal of it in the code), taken where a GPU is there: the program asks
    whether one is to place on it."""
    asks = any((facts.qualify(c.func) or dotted(c.func) or "").endswith(
        tuple(f"{a}.is_available" for a in _ACCELERATORS)) for c in facts.findall(choice.test, cst.Call))
    return asks and _is_cpu(choice.orelse) and not _is_cpu(choice.body)


def _is_cpu(expr: cst.BaseExpression) -> bool:
    """`"cpu"`, `torch.device("cpu")`."""
    if isinstance(expr, cst.Call) and len(expr.args) == 1:
        expr = expr.args[0].value
    return _text(expr) == "cpu"


def _moves_to_index(call: cst.Call) -> bool:
    """`x.to(0)`: a device given by its index is a GPU."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and bool(call.args) \
        and isinstance(call.args[0].value, cst.Integer)
