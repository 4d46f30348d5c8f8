"""Lightning's own protocol for the hooks of a `LightningDataModule` or `LightningModule`, where
`check` reads a file of one without Lightning's `Trainer` (a data module in its own module).

- `prepare_data` runs on one process a node (the main process of each node; Lightning calls it
  before it builds the loaders on every process): a write in it, or in a helper only it calls,
  is one process's write (`Ranks.on_some_ranks`).
- a loader a `*_dataloader` hook returns gets `sampler.set_epoch(epoch)` from Lightning's loop at
  each epoch's start: a shuffling `DistributedSampler` built in the hook, or in a helper only the
  hooks call, needs no `set_epoch` of the program's (DDP002).

Before: `class Data(pl.LightningDataModule)` with `def prepare_data(self): torch.save(x, cache)`
was "every rank writes this checkpoint" (DDP006), and its `train_dataloader` returning
`DataLoader(ds, sampler=DistributedSampler(ds))` was "nothing calls its set_epoch" (DDP002).
After: neither is reported. The same methods of a plain class (no Lightning base) still are: the
script calls them itself, on every process.
"""

from __future__ import annotations

import libcst as cst

from ddpify.syntax.facts import Facts

LIGHTNING_PACKAGES = frozenset({"lightning", "pytorch_lightning"})
LIGHTNING_CLASSES = frozenset({"LightningDataModule", "LightningModule"})
ONE_PROCESS_A_NODE = frozenset({"prepare_data"})
LOADER_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})


def lightning_class(facts: Facts, cls: cst.ClassDef) -> bool:
    """Does `cls`, or a base of it in the program, derive from Lightning's `LightningDataModule` or
    `LightningModule` (`pl.LightningDataModule`, `L.LightningModule`, `from lightning.pytorch
    import LightningDataModule`)?"""
    for klass in facts.lineage(cls):
        for base in klass.bases:
            name = facts.qualify(base.value) or ""
            if name.partition(".")[0] in LIGHTNING_PACKAGES and name.rpartition(".")[2] in LIGHTNING_CLASSES:
                return True
    return False


def lightning_hook(facts: Facts, func: cst.FunctionDef, hooks: frozenset[str]) -> bool:
    """Is `func` a method named in `hooks` of a Lightning class (`lightning_class`)?"""
    cls = facts.enclosing_class(func)
    return func.name.value in hooks and cls is not None and lightning_class(facts, cls)


def in_lightning_hook(facts: Facts, node: cst.CSTNode, hooks: frozenset[str], depth: int = 3) -> bool:
    """Does `node` run in a Lightning hook named in `hooks`: in its body, or in a function of the
    program every call of which does (at most `depth` calls deep)?"""
    func = facts.scope(node)
    if not isinstance(func, cst.FunctionDef) or depth == 0:
        return False
    if lightning_hook(facts, func, hooks):
        return True
    sites = facts.entries(func)
    return bool(sites) and all(in_lightning_hook(facts, site, hooks, depth - 1) for site in sites)
