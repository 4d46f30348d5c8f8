"""Which loaded states hold no tensors a device could keep: an LR scheduler's and a GradScaler's
state (Python numbers: the step count, the rates, `get_scale()`), and the random generators'
states (`torch.get_rng_state()`, `torch.cuda.get_rng_state_all()`: CPU byte tensors; Python's and
NumPy's: tuples). `ddpify check`'s DDP014 asks it of a `torch.load` without `map_location`.

    scheduler.load_state_dict(torch.load(p))        # numbers: nothing lands on GPU 0
    states = torch.load(p)
    torch.set_rng_state(states["torch"])            # a CPU tensor
    model.load_state_dict(torch.load(p))            # may hold CUDA tensors: asked no further

And which loads read a pickled data set, not a checkpoint (`loaded_data_set`): what the load returns
is only handed to a DataLoader as its data set and to samplers as their data source (and counted
with `len`). The loader batches it on the CPU (its workers, `pin_memory`), so it holds no tensor
kept on a GPU:

    train_set = torch.load("final/train_dataset.pth")   # a Dataset object, pickled
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, sampler=sampler, pin_memory=True)
"""

from __future__ import annotations

import re

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted

# the classes whose `state_dict()` is numbers only, by their qualified names
NUMBER_STATES = ("torch.optim.lr_scheduler.", "torch.cuda.amp.GradScaler", "torch.amp.GradScaler",
                 "torch.cuda.amp.grad_scaler.GradScaler", "torch.amp.grad_scaler.GradScaler",
                 "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler", "fairscale.optim.grad_scaler.")
# what such an object is called where nothing read shows what made it (a library function's parameter)
NUMBER_STATE_WORDS = re.compile(r"(lr_)?schedulers?|(grad_)?scalers?")
# the setters of the random generators' states
RNG_SETTERS = frozenset({"torch.set_rng_state", "torch.cuda.set_rng_state", "torch.cuda.set_rng_state_all",
                         "torch.random.set_rng_state", "random.setstate", "numpy.random.set_state",
                         "torch_xla.core.xla_model.set_rng_state"})


def holds_no_tensors(facts: Facts, load: cst.Call) -> bool:
    """Is what `load` reads handed only to what keeps no tensors: the `load_state_dict` of an LR
    scheduler or a GradScaler (by what made it; by its name where no code read shows that), or,
    bound to a name, only items of it handed to the random generators' setters?"""
    parent = facts.parents.get(load)
    call = facts.parents.get(parent) if isinstance(parent, cst.Arg) else None
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "load_state_dict":
        return _number_state(facts, call.func.value)
    target = _bound_to(facts, load)
    return target is not None and _only_set_as_rng_state(facts, target)


def _number_state(facts: Facts, obj: cst.BaseExpression) -> bool:
    """Made by an LR scheduler's or a GradScaler's class, wherever it was made; a name, where no
    code read shows what it holds (a parameter nobody here passes), by its words."""
    origins = [o for o in facts.origins(obj) if not mt.is_name(o, "None")]  # `scaler=None`: no state at all
    return bool(origins) and all(
        isinstance(o, cst.Call) and (facts.qualify(o.func) or "").startswith(NUMBER_STATES)
        or isinstance(o, (cst.Name, cst.Attribute))
        and NUMBER_STATE_WORDS.fullmatch((dotted(o) or "").rpartition(".")[2].lower()) is not None
        for o in origins)


def _bound_to(facts: Facts, load: cst.Call) -> cst.Name | None:
    """`states` of `states = torch.load(p)`."""
    stmt = facts.parents.get(load)
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
        return stmt.targets[0].target
    return None


def _only_set_as_rng_state(facts: Facts, target: cst.Name) -> bool:
    """Is every read of the name `target` binds an item of it (`states["torch"]`) handed to a
    random generator's setter?"""
    ref = facts.ref(target)
    scope = facts.scope(target)
    reads = [n for n in mt.findall(scope, cst.Name) if n is not target and n.value == target.value
             and facts.ref(n) == ref]
    return bool(reads) and all(_rng_item(facts, n) for n in reads)


def _rng_item(facts: Facts, name: cst.Name) -> bool:
    item = facts.parents.get(name)
    arg = facts.parents.get(item) if isinstance(item, cst.Subscript) and item.value is name else None
    call = facts.parents.get(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and facts.qualify(call.func) in RNG_SETTERS


# where a data set is read as one: the data set of a DataLoader, the data source of a sampler
_DATA_SET_KEYWORDS = frozenset({"dataset", "data_source"})


def loaded_data_set(facts: Facts, load: cst.Call) -> bool:
    """Is what `load` reads a data set: handed directly to a DataLoader or a sampler as its data
    (first argument, `dataset=`, `data_source=`), or bound to a name every read of which is that or
    `len(name)`? A data set the loader batches is kept on the CPU, whatever it holds; a name also
    read otherwise (`model.load_state_dict(state)`) may be a checkpoint."""
    if _read_as_data(facts, load):
        return True
    target = _bound_to(facts, load)
    if target is None:
        return False
    ref = facts.ref(target)
    reads = [n for n in mt.findall(facts.scope(target), cst.Name) if n is not target and n.value == target.value
             and facts.ref(n) == ref and not _is_store(facts, n)]
    return bool(reads) and all(_read_as_data(facts, n) or _counted(facts, n) for n in reads)


def _read_as_data(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Is `expr` the data set of a `torch.utils.data` DataLoader or the data source of one of its
    samplers (`DistributedSampler(ds)`, `DataLoader(dataset=ds)`)?"""
    arg = facts.parents.get(expr)
    call = facts.parents.get(arg) if isinstance(arg, cst.Arg) and arg.value is expr else None
    if not isinstance(call, cst.Call) or not isinstance(arg, cst.Arg):
        return False
    name = facts.qualify(call.func) or ""
    if not (name == "torch.utils.data.DataLoader" or name.startswith("torch.utils.data.") and name.endswith("Sampler")):
        return False
    return arg.keyword.value in _DATA_SET_KEYWORDS if arg.keyword is not None else call.args[0] is arg


def _counted(facts: Facts, name: cst.Name) -> bool:
    """`len(name)`."""
    arg = facts.parents.get(name)
    call = facts.parents.get(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and mt.is_name(call.func, "len") and len(call.args) == 1


def _is_store(facts: Facts, name: cst.Name) -> bool:
    """A name bound here (an assignment's target), not read."""
    parent = facts.parents.get(name)
    return isinstance(parent, cst.AssignTarget) or isinstance(parent, (cst.AnnAssign, cst.AugAssign)) \
        and parent.target is name
