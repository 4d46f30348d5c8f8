"""Qualified names for the expressions ddpify cares about, from one pass over the imports.

`from torch.utils.data import DataLoader as DL` makes `DL(...)` a
`torch.utils.data.DataLoader` call; `import torch.utils.data as tud` makes `tud.DataLoader`
one. LibCST's QualifiedNameProvider gives the same answer at several times the cost of a
parse; the names a training script imports are few, so a dictionary does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import libcst as cst

# The names `deepspeed.comm` shares with `torch.distributed`, with the same meaning.
DEEPSPEED_COMM_MIRRORS = (
    "get_rank", "get_world_size", "get_global_rank", "is_initialized", "is_available", "barrier", "monitored_barrier",
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "broadcast", "broadcast_object_list", "gather", "scatter", "all_to_all_single", "send",
    "recv", "isend", "irecv", "new_group", "destroy_process_group", "ReduceOp")

# Public spellings re-exported elsewhere in torch, mapped to the name ddpify matches on.
CANONICAL = {
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.utils.data.sampler.RandomSampler": "torch.utils.data.RandomSampler",
    "torch.utils.data.sampler.SequentialSampler": "torch.utils.data.SequentialSampler",
    "torch.utils.data.sampler.BatchSampler": "torch.utils.data.BatchSampler",
    "torch.utils.data.sampler.WeightedRandomSampler": "torch.utils.data.WeightedRandomSampler",
    "torch.utils.data.sampler.SubsetRandomSampler": "torch.utils.data.SubsetRandomSampler",
    "torch.utils.data.dataset.IterableDataset": "torch.utils.data.IterableDataset",
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.utils.data.distributed.DistributedSampler": "torch.utils.data.DistributedSampler",
    "torch.utils.tensorboard.writer.SummaryWriter": "torch.utils.tensorboard.SummaryWriter",
    "tensorboardX.writer.SummaryWriter": "tensorboardX.SummaryWriter",
    # tqdm's other front ends: the same bar (`disable=`, `file=`), drawn otherwise (`from tqdm.rich import
    # tqdm`: 25a's midigpt trainer, whose bar was drawn on every process; decision 0206)
    **{f"tqdm.{front}.{bar}": f"tqdm.{bar}" for front in ("auto", "autonotebook", "notebook", "rich", "std", "asyncio",
                                                          "gui", "tk") for bar in ("tqdm", "trange")},
    # DeepSpeed's communication module mirrors torch.distributed's API over the same process group
    # (`from deepspeed import comm as dist; dist.get_rank()`, `deepspeed.comm.barrier()`): read as
    # torch.distributed's calls, the rank, the collectives and the barrier are the same facts
    # (27x's diffusion-pipe: the GPU index, the collectives under a rank test were missed; decision
    # 0222). Its own starter (`deepspeed.comm.init_distributed`) stays its own name.
    **{f"deepspeed.comm.{name}": f"torch.distributed.{name}" for name in DEEPSPEED_COMM_MIRRORS},
}


# "this is the main process" without `rank` in the name: `is_main_process`, `master_process`,
# `is_root_worker`, `is_global_zero`, `is_local_master`, `am_chief`, `is_primary()` (not a bare
# `main`, `root` or `zero`: a function, a path, a number)
MAIN_PROCESS_WORDS = re.compile(r"(is_|am_|i_am_)?(local_|global_)?(main|master|root|primary|chief|leader|zero)"
                                r"(_(process|proc|worker|node|gpu|device|host))?")
# `rank` as a word of the name (`rank`, `local_rank`, `get_rank`, `rank0`, `myrank`, `getRank`), not as
# the start or the end of another word (`ranking_loss`, `ranks`, `rerank_sequences`, `prank`): before
# it the name starts, a word ends (`_`, a digit) or one of the rank's own short prefixes stands; not a
# count for each rank (`layers_per_rank`, `samples_per_rank`: the same on every process)
RANK_WORD = re.compile(r"(?<![a-z])(?<!per_)(my|local|global|get|world|node|proc|l|g)?rank(?![a-z])")
# the rank under another name: accelerate's `process_index`, `local_process_index`
PROCESS_INDEX_WORDS = re.compile(r"(local_|global_)?process_index")


def rank_word(node: cst.CSTNode) -> bool:
    """`rank`, `args.local_rank`, `dist.get_rank`, `is_main_process`, `master_process`,
    `state.process_index`: the last name says it is a process's rank or asks for the main one
    (`world_size`, `args.ranking_loss` are not), whatever object it is read from
    (`AcceleratorState().local_process_index`, `PartialState().is_main_process`)."""
    kind = type(node)
    last = node.attr.value if kind is cst.Attribute else node.value if kind is cst.Name else None
    return _rank_name(last.lower()) if last else False


def rank_word_named(name: str) -> bool:
    """`rank_word` of an attribute named by a string (`getattr(opts, "ddp.rank", 0)`: its last
    dotted part, `rank`)."""
    return _rank_name(name.rpartition(".")[2].lower())


@lru_cache(maxsize=4096)
def _rank_name(last: str) -> bool:
    return RANK_WORD.search(last) is not None or PROCESS_INDEX_WORDS.fullmatch(last) is not None \
        or MAIN_PROCESS_WORDS.fullmatch(last) is not None and last not in ("main", "root", "zero")


def dotted(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    kind = type(node)  # (not isinstance: a miss asks LibCST's abstract base class, in Python)
    if kind is cst.Name:
        return node.value
    if kind is cst.Attribute:
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


class Imports:
    """Maps the names bound by the module's imports to what they import. A name the first file's
    top level imports twice is what the later import binds, as Python runs them (`import
    torch.distributed as dist` ... `from tensorfn import distributed as dist`: tensorfn's); `first`
    says which top-level statements are that file's (of a program's merged module: the entry's;
    by default, every one)."""

    def __init__(self, module: cst.Module, first: Callable[[cst.CSTNode], bool] | None = None) -> None:
        self.aliases: dict[str, str] = {}
        self.stars: list[str] = []  # modules imported with `from X import *` (relative ones with their dots)
        for node in import_nodes(module):
            self._bind(node)
        top = [s for stmt in module.body if type(stmt) is cst.SimpleStatementLine and (first is None or first(stmt))
               for s in stmt.body if type(s) is cst.Import or type(s) is cst.ImportFrom]
        rebound = [node for node in top if any(n in self._bound(other) for other in top if other is not node
                                               for n in self._bound(node))]
        for node in rebound:  # in source order: the later import wins
            self._bind(node)

    def _bind(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name)
                if alias.asname:
                    self.aliases[alias.asname.name.value] = full
                else:
                    top = full.split(".")[0]
                    self.aliases[top] = top
        elif isinstance(node.names, cst.ImportStar):
            self.stars.append("." * len(node.relative) + (dotted(node.module) or ""))
        elif node.module is not None and not node.relative:
            base = dotted(node.module)
            for alias in node.names:
                local = alias.asname.name.value if alias.asname else alias.name.value
                self.aliases[local] = f"{base}.{alias.name.value}"

    @staticmethod
    def _bound(node: cst.Import | cst.ImportFrom) -> set[str]:
        """The names an import binds (none for `from X import *`)."""
        if isinstance(node.names, cst.ImportStar):
            return set()
        return {alias.asname.name.value if alias.asname else (dotted(alias.name) or "").split(".")[0]
                for alias in node.names}

    def qualify(self, node: cst.CSTNode) -> str | None:
        """The qualified name an expression refers to through the imports, or None."""
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head not in self.aliases:
            return None
        full = self.aliases[head] + ("." + rest if rest else "")
        return CANONICAL.get(full, full)

    def imports_module(self, prefix: str) -> bool:
        return any(v == prefix or v.startswith(prefix + ".") for v in self.aliases.values())


def import_nodes(module: cst.Module):
    """Import statements at any depth of the statement tree (scripts import inside functions
    and `try` blocks too), found without walking into expressions."""
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        stmt = stack.pop()
        if type(stmt) is cst.SimpleStatementLine:  # (type tests: LibCST's isinstance is Python)
            yield from (s for s in stmt.body if type(s) is cst.Import or type(s) is cst.ImportFrom)
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            child = getattr(stmt, field, None)
            kind = type(child)
            if kind is list or kind is tuple:
                stack.extend(child)
            elif kind is cst.IndentedBlock:
                stack.extend(child.body)
            elif child is not None and hasattr(child, "body"):  # a one-line suite, an else, a finally
                stack.append(child)
