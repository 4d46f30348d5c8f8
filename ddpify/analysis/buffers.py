"""Which models may hold buffers (BatchNorm statistics, a registered buffer): a DDP forward of one
with gradients on broadcasts them from rank 0, a collective (torch's `_pre_forward`), where a
forward of a model without buffers sends nothing. One answer for `check` (DDP004) and `convert`
(agree-stop)."""

from __future__ import annotations

import libcst as cst

from ddpify.analysis.objects import of
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts

# torch.nn layers that hold parameters only (no buffers): their DDP forward broadcasts nothing
NO_BUFFERS = frozenset(f"torch.nn.{name}" for name in """
    Linear Bilinear LazyLinear Identity Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d
    Embedding EmbeddingBag LSTM GRU RNN MultiheadAttention LayerNorm GroupNorm""".split())


# what makes buffers: the layers with running statistics, and spectral normalisation (its `u`, `v`)
BUFFERED = frozenset({*(f"torch.nn.{kind}Norm{d}" for kind in ("Batch", "LazyBatch", "Instance", "LazyInstance")
                        for d in ("1d", "2d", "3d")), "torch.nn.SyncBatchNorm", "torch.nn.utils.spectral_norm",
                      "torch.nn.utils.parametrizations.spectral_norm"})
# modules whose calls build no module of their own
BUILD_NOTHING = ("math.", "numpy.", "einops.", "typing.", "collections.", "itertools.", "warnings.", "logging.")



def may_hold_buffers(facts: Facts, models: list[cst.BaseExpression]) -> bool:
    """May any of `models` (what a name holds: constructor calls) hold buffers? Not where every one
    is a torch.nn layer without buffers (`nn.Linear`), or an instance of classes of the program
    that build none (`builds_no_buffers`); an empty list (nothing known) may."""
    return not (models and all(isinstance(m, cst.Call) and (facts.qualify(m.func) in NO_BUFFERS or bool(
        classes := facts.built_classes(m)) and all(builds_no_buffers(facts, cls, set(), 6) for cls in classes))
        for m in models))


def builds_no_buffers(facts: Facts, scope: cst.CSTNode, seen: set, depth: int) -> bool:
    """Does a class of the program (or a function of it that its code calls) build no buffer: no
    `register_buffer`, no layer with running statistics (`nn.BatchNorm2d`), no spectral norm, no
    module of a library it does not read (`timm`, `torchvision.models`); its bases `nn.Module` or
    classes of the program that build none, the classes of the program it builds (also through
    `functools.partial(Block, ...)`) none either, within `depth` classes and functions (deeper: not
    read, so it may)? A diffusion UNet of convolutions and GroupNorm. Of a class, what builds its
    modules is read: its `__init__` and the methods that calls (`self._build()`); a buffer
    registered or a layer with running statistics built in any method counts, but another
    method's calls of libraries (`tqdm` in `generate`, `hf_hub_download` in a `from_pretrained`)
    build none of its modules."""
    f, objects = facts, of(facts)
    if scope in seen:
        return True
    if depth == 0:
        return False
    seen.add(scope)
    if isinstance(scope, cst.ClassDef):
        for base in scope.bases:
            built = objects.constructs(cst.Call(func=base.value))
            if not (f.qualify(base.value) in ("torch.nn.Module", "torch.nn.modules.module.Module")
                    or built is not None and builds_no_buffers(facts, built, seen, depth - 1)):
                return False
    building = _building_code(f, scope) if isinstance(scope, cst.ClassDef) else [scope]
    for call in mt.findall(scope, cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "register_buffer":
            return False
        target = call.args[0].value if f.qualify(call.func) == "functools.partial" and call.args else call.func
        name = f.qualify(target)
        built = objects.constructs(cst.Call(func=target))
        if name in BUFFERED:
            return False
        if not any(f.is_inside(call, b) for b in building):
            continue
        if built is not None:
            if not builds_no_buffers(facts, built, seen, depth - 1):
                return False
            continue
        funcs = f.user_functions(call) if target is call.func else []
        if funcs:
            if not all(builds_no_buffers(facts, func, seen, depth - 1) for func in funcs):
                return False
            continue
        if name is not None and "." in name and not name.startswith(("torch.", "functools.", *BUILD_NOTHING)):
            return False  # a library's class or function: what it builds is not read
    return True


def _building_code(f: Facts, cls: cst.ClassDef) -> list[cst.CSTNode]:
    """The code of `cls` that builds its modules: the body outside its methods, its `__init__`,
    and the methods of the class `__init__` calls on `self`, transitively."""
    methods = [m for m in cls.body.body if isinstance(m, cst.FunctionDef)]
    outside: list[cst.CSTNode] = [s for s in cls.body.body if not isinstance(s, cst.FunctionDef)]
    found = [m for m in methods if m.name.value == "__init__"]
    todo = list(found)
    while todo:
        for call in f.calls_in(todo.pop()):
            if isinstance(call.func, cst.Attribute) and mt.is_name(call.func.value, "self"):
                more = [m for m in methods if m.name.value == call.func.attr.value and m not in found]
                found += more
                todo += more
    return [*outside, *found]
