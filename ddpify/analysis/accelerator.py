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
    parser.add_argument("--device", default=0); x.to(args.device)   -> placed (an option's default GPU index)
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
        or bool(device_index_defaults(facts)) \
        or any(facts.imports.imports_module(f) for f in _FRAMEWORKS)


# an option's name that names a device (`--device`, `--gpu`, `--gpu_id`, `--cuda-device`), not a count (`--n_gpu`)
DEVICE_OPTION = re.compile(r"(?i)^(?!n_|num_)(\w+_)?(device|gpu|dev)(_?(id|idx|index))?$")


def device_index_defaults(facts: Facts) -> list[cst.Integer]:
    """The integer `default=` of each command-line option named for a device whose value the program
    uses as one (`parser.add_argument("--device", default=0)`, then `model.to(args.device)`,
    `torch.device(args.device)`, `x.cuda(args.device)` or `device=args.device`): a GPU's index, where
    the run gives no other (a wavenet amp emulator of the twenty-sixth sweep, decision 0203: every
    process on GPU 0, and the conversion, seeing no `"cuda"`, asked for gloo). Not an option read
    only as a switch (`if args.gpu: model.cuda()`)."""
    used = {attr.attr.value for attr in facts.findall(facts.module, cst.Attribute) if _used_as_device(facts, attr)}
    found = []
    for call in facts.calls_named("add_argument"):
        default = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "default"), None)
        dest = _option_dest(call)
        if isinstance(default, cst.Integer) and dest is not None and DEVICE_OPTION.match(dest) and dest in used:
            found.append(default)
    return found


def _used_as_device(facts: Facts, attr: cst.Attribute) -> bool:
    """Is `attr` (`args.device`) a device: the first argument of `.to(...)`, `.cuda(...)` or
    `torch.device(...)`, or a `device=` keyword's value?"""
    arg = facts.parent(attr)
    if not isinstance(arg, cst.Arg):
        return False
    if arg.keyword is not None:
        return arg.keyword.value == "device"
    call = facts.parent(arg)
    return isinstance(call, cst.Call) and call.args[0] is arg and (
        isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda")
        or facts.qualify(call.func) == "torch.device")


def _option_dest(call: cst.Call) -> str | None:
    """The attribute argparse stores an `add_argument(...)` option under: its `dest=`, else its
    first long flag (`--gpu-id`: `gpu_id`), else its first flag."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            return arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) \
                and isinstance(arg.value.evaluated_value, str) else None
    flags: list[str] = [a.value.evaluated_value for a in call.args if a.keyword is None
                        and isinstance(a.value, cst.SimpleString) and isinstance(a.value.evaluated_value, str)]
    name = next((f for f in flags if f.startswith("--")), flags[0] if flags else None)
    return name.lstrip("-").replace("-", "_") if name else None


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


def moves_to_the_cpu(facts: Facts, call: cst.Call) -> bool:
    """Is `call` a `.to(device)` whose device is the CPU wherever it comes from: `"cpu"` or
    `torch.device("cpu")`, written there or held by a name every assignment of which gives one
    (`device = "cpu"` at the top of a CPU-only script, then `model.to(device)`)? A module built on
    the CPU and moved there stays where it was."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"):
        return False
    given = call.args[0].value if call.args and call.args[0].keyword is None else next(
        (a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    origins = facts.origins(given) if given is not None else []
    return bool(origins) and all(_is_cpu(o) for o in origins)


def _moves_to_index(call: cst.Call) -> bool:
    """`x.to(0)`: a device given by its index is a GPU."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and bool(call.args) \
        and isinstance(call.args[0].value, cst.Integer)
