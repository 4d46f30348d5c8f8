"""The script `ddpify check` reads: its facts, whether it is distributed, its calls by qualified
name, how it spells what it imports. The base of the questions the rules share (`Context`:
`analysis/ranks.py`, `analysis/same_values.py`, `check/context.py` build on it)."""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted
from ddpify.analysis.distributed import SAMPLER, Launcher, is_distributed
from ddpify.analysis.models import DDP

INIT = "torch.distributed.init_process_group"

# what a star import of a project's utilities conventionally brings (see `_assume_star_imports`)
STAR_NAMES = {"torch": "torch", "dist": "torch.distributed", "nn": "torch.nn", "F": "torch.nn.functional",
              "DDP": DDP, "DistributedDataParallel": DDP, "DistributedSampler": SAMPLER,
              "DataLoader": "torch.utils.data.DataLoader", "os": "os"}


class Script:
    """One script's facts (a star import of the project's utilities assumed to bring the usual
    names) and the lookups every question uses."""

    def __init__(self, facts: Facts, imported_by_ddp: bool = False) -> None:
        self.facts = facts
        self.imported_by_ddp = imported_by_ddp  # a module a distributed script of the same run imports
        if facts.imports.stars:
            _assume_star_imports(facts)

    @cached_property
    def distributed(self) -> bool:
        """Does the script do something distributed (`ddpify.analysis.distributed`: a call of
        torch.distributed, a DDP wrap, a DistributedSampler), import ddpify_runtime, or is it a module
        that a distributed script imports (its code runs in every process of that job)?"""
        return self.imported_by_ddp or self.facts.imports.imports_module("ddpify_runtime") or \
            is_distributed(self.facts)

    @cached_property
    def launcher(self) -> Launcher:
        """The code that runs in the launching process only, where the script starts its own
        workers (`ddpify.analysis.distributed.Launcher`): rules about several processes skip it."""
        return Launcher(self.facts)

    @cached_property
    def one_process(self) -> bool:
        """Is the process group hard-coded to one process (`init_process_group(..., world_size=1,
        rank=0)`, every call)? Then no other process can disagree or wait."""
        f = self.facts
        inits = [c for c in f.calls if f.qualify(c.func) == INIT]
        sizes = [mt.keyword(c, "world_size") for c in inits]
        return bool(inits) and all(s is not None and isinstance(s.value, cst.Integer) and s.value.value == "1"
                                   for s in sizes)

    def calls_of(self, *qualified: str) -> list[cst.Call]:
        """The calls of these qualified names, in source order."""
        if len(qualified) == 1:
            return self._calls_by_name.get(qualified[0], [])
        calls = [c for name in qualified for c in self._calls_by_name.get(name, [])]
        return sorted(calls, key=lambda c: self.facts.spans[c][0])

    @cached_property
    def _calls_by_name(self) -> dict[str, list[cst.Call]]:
        """Each call under every name it may call: `(DistributedSampler if ddp else RandomSampler)(ds)`,
        or `cls(ds)` after `cls = DistributedSampler if ddp else RandomSampler`, under both."""
        index: dict[str, list[cst.Call]] = {}
        for call in self.facts.calls:
            for name in dict.fromkeys(self.callees(call.func)):
                if name is not None:
                    index.setdefault(name, []).append(call)
        return index

    def subclass_calls(self, qualified: str) -> list[cst.Call]:
        """The calls that build an instance of a class of the program derived, through its bases
        in the program, from the library class `qualified` (`class TaskSampler(DistributedSampler)`
        ... `TaskSampler(ds, tasks)`), in source order."""
        f = self.facts
        derived = {cls for cls in f.classes.values()
                   if any(f.qualify(b.value) == qualified for c in f.lineage(cls) for b in c.bases)}
        return [c for c in f.calls if isinstance(c.func, (cst.Name, cst.Attribute))
                and f.classes.get((dotted(c.func) or "").rpartition(".")[2]) in derived]

    def callees(self, func: cst.BaseExpression, depth: int = 3) -> list[str | None]:
        """The qualified names a called expression may be: itself, both branches of a conditional
        expression, what a local name is assigned (`cls = A if x else B`)."""
        f = self.facts
        if isinstance(func, cst.IfExp) and depth:
            return self.callees(func.body, depth - 1) + self.callees(func.orelse, depth - 1)
        name = f.qualify(func)
        if name is None and isinstance(func, cst.Name) and depth:
            ref = f.ref(func)
            sources = f.sources(ref) if ref is not None else []
            if sources and all(isinstance(s, (cst.IfExp, cst.Name, cst.Attribute)) for s in sources):
                return [n for s in sources for n in self.callees(s, depth - 1)]
        return [name]

    def spelled(self, qualified: str) -> str | None:
        """How the script spells a module or name it imports (`dist` for torch.distributed)."""
        for local, full in self.facts.own_imports.aliases.items():
            if full == qualified:
                return local
        head, _, rest = qualified.rpartition(".")
        spelled_head = self.spelled(head) if head else None
        return f"{spelled_head}.{rest}" if spelled_head else None


LOAD_WORD = re.compile(r"(?:^|_)(?:load|resume|restore)(?:_|$)")


def reads_saved_state(facts: Facts, call: cst.Call) -> bool:
    """A call that reads saved state ddpify does not follow: a method or an unread function
    (another module's, not torch's) whose name has the word load, resume or restore
    (`checkpointer.resume_or_load(p)`, `load_state(path, model)`, `load_checkpoint(...)`; not
    `DataLoader(...)`, not `get_loader()`). Every process reads the same file; what the loaded
    objects expect is that loader's business."""
    name = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
    if not name or not LOAD_WORD.search(name) or (facts.qualify(call.func) or "").startswith("torch."):
        return False
    return isinstance(call.func, cst.Attribute) or not facts.user_functions(call)


def _assume_star_imports(f: Facts) -> None:
    """A script that star-imports its project's utilities (`from utils.torch_utils import *`)
    reaches `torch`, `dist` and `DDP` through them: the names of `STAR_NAMES` it uses and binds
    nowhere itself are taken to be what they conventionally are."""
    bound = f.imports.aliases.keys() | f.assigned_names.keys() | f.functions.keys() | f.classes.keys()
    used = {n.value for n in f.names}
    for name, qualified in STAR_NAMES.items():
        if name in used and name not in bound:
            f.assume_import(name, qualified)
