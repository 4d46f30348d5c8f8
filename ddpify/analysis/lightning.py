"""Lightning's own protocol for the hooks of a `LightningDataModule` or `LightningModule`, where
`check` reads a file of one without Lightning's `Trainer` (a data module in its own module).

- the steps and `on_*` hooks of a `LightningModule` run on every process (`run_by_lightning`),
  though no code of the program calls them: a write there is every process's write;
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

Two orders of Lightning's make a write "main process first" (`Ranks.main_first`): the others run
it after one process has, and find what it wrote where it writes only what is missing:

- a loader hook (or `setup`) runs after `prepare_data` on every process: what it runs that
  `prepare_data` also reaches (a data set whose constructor writes its cache) was run first by
  one process a node (`prepared_first`);
- Lightning's `Trainer` starts the other processes in its `fit` (`validate`, `test`, `predict`),
  and Fabric in its `launch` (`fabric.launch(main, cfg)` or `fabric.launch()`): what the script
  runs before that call runs on the first process before any other starts (`before_launch`).

Fabric's `launch(main, *args, **kwargs)` calls `main(fabric, *args, **kwargs)` on every process
(`fabric_launch_arguments`): the values the script hands it are what `main`'s parameters hold.

Collectives of Lightning's objects (`collective`), which every process must call: a `Trainer`'s
`save_checkpoint(path)` (its strategy gathers what it saves and waits at a barrier; read by name
where the program imports Lightning, the trainer being handed in or built by a factory:
`trainer = instantiate(cfg.trainer)`), Fabric's `save`, `barrier`, `all_reduce`, `all_gather`,
`broadcast` (of a `Fabric(...)`, or a parameter annotated `L.Fabric`), a strategy's `barrier`,
`broadcast`, `reduce`, `all_gather` (`trainer.strategy.broadcast(x)`). What a broadcast or a
reduction returns is the same on every process (`agreed`): `if trainer.strategy.broadcast(linked):
return` is no rank test.

    if trainer.is_global_zero:
        trainer.save_checkpoint(path)      # before: no collective; after: DDP004, the others never call it
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis.objects import of
from ddpify.syntax.facts import Facts

LIGHTNING_PACKAGES = frozenset({"lightning", "pytorch_lightning"})
LIGHTNING_CLASSES = frozenset({"LightningDataModule", "LightningModule"})
ONE_PROCESS_A_NODE = frozenset({"prepare_data"})
# the methods of a LightningModule or LightningDataModule that Lightning's loop calls on every
# process, besides its `on_*` hooks: nobody in the program calls them, and they run all the same
STEP_HOOKS = frozenset({"training_step", "validation_step", "test_step", "predict_step", "configure_optimizers",
                        "setup", "teardown", "forward"})
LOADER_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})
AFTER_PREPARE = LOADER_HOOKS | {"setup"}
LAUNCHES = frozenset({"fit", "validate", "test", "predict"})  # a Trainer's methods that start the processes
FABRIC_LAUNCH = "launch"  # Fabric's method that starts the processes (and calls the function it is given)
FABRIC_PACKAGES = (*LIGHTNING_PACKAGES, "lightning_fabric")
TRAINER_COLLECTIVES = frozenset({"save_checkpoint"})  # a Trainer's methods every process must call
FABRIC_COLLECTIVES = frozenset({"save", "barrier", "all_reduce", "all_gather", "broadcast"})  # Fabric's
# a strategy's (`trainer.strategy.barrier()`), read by name where the program imports Lightning
STRATEGY_COLLECTIVES = frozenset({"barrier", "broadcast", "reduce", "all_gather", "reduce_boolean_decision"})
# of those, the calls whose result every process holds alike (rank 0's value sent, or one reduced)
AGREEING = frozenset({"broadcast", "reduce", "all_reduce", "reduce_boolean_decision"})


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


def run_by_lightning(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` a method of a Lightning class that Lightning's loop calls on every process: a step
    (`STEP_HOOKS`), a loader hook, or an `on_*` hook (`validation_step`, `on_validation_epoch_end`)?
    Not `prepare_data` (one process a node)."""
    name = func.name.value
    return (name in STEP_HOOKS or name in LOADER_HOOKS or name.startswith("on_")) and lightning_hook(
        facts, func, frozenset({name}))


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


def prepared_first(facts: Facts, node: cst.CSTNode, write: cst.CSTNode, depth: int = 3) -> bool:
    """Does `node` run in a loader hook or `setup` of a Lightning class (or in a helper only those
    call, or those and `prepare_data` itself) whose `prepare_data` also reaches the function holding `write` (`SliceDataset(root)` built
    in both: its constructor caches the root's index where it is missing)? Lightning runs
    `prepare_data` first, on one process a node."""
    func = facts.scope(node)
    if not isinstance(func, cst.FunctionDef) or depth == 0:
        return False
    if lightning_hook(facts, func, ONE_PROCESS_A_NODE):
        return True  # the preparation itself (the data set's other call)
    cls = facts.enclosing_class(func)
    if func.name.value in AFTER_PREPARE and cls is not None and lightning_class(facts, cls):
        holder = facts.scope(write)
        return any(holder in _reached(facts, prepare, 3) for prepare in facts.method(cls, "prepare_data"))
    sites = facts.entries(func)
    return bool(sites) and all(prepared_first(facts, site, write, depth - 1) for site in sites)


def _reached(facts: Facts, func: cst.FunctionDef, depth: int) -> set[cst.FunctionDef]:
    """`func` and the functions of the program its calls run, `depth` calls deep."""
    found, frontier = {func}, [func]
    for _ in range(depth):
        frontier = [g for f in frontier for c in facts.calls_in(f.body) for g in facts.user_functions(c) if g not in found]
        found.update(frontier)
    return found


def before_launch(facts: Facts, node: cst.CSTNode, depth: int = 3) -> bool:
    """Does `node` run before a call that has Lightning's `Trainer` start the other processes
    (`trainer.fit(model, data)` of `pl.Trainer(...)` or `pl.Trainer.from_argparse_args(args)`;
    Fabric's `fabric.launch(...)`):
    later in its function (or in the function of every call that runs it, `depth` calls up), a
    call that is such a launch or runs one?"""
    func = facts.scope(node)
    stmt = facts.statement(node)
    if any(facts.scope(c) is func and facts.before(stmt, c) and not facts.is_inside(c, stmt) and _runs_launch(facts, c, 2)
           for c in facts.calls_in(func.body if isinstance(func, cst.FunctionDef) else func)):
        return True
    sites = facts.entries(func) if isinstance(func, cst.FunctionDef) and depth else []
    return bool(sites) and all(before_launch(facts, site, depth - 1) for site in sites)


def _runs_launch(facts: Facts, call: cst.Call, depth: int) -> bool:
    """Is `call` a Lightning `Trainer`'s launch (`LAUNCHES`) or Fabric's (`fabric_launch`), or a
    call of the program that runs one?"""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in LAUNCHES and any(
            _lightning_trainer(facts, site) for site in of(facts).values(call.func.value)) \
            or fabric_launch(facts, call):
        return True
    return depth > 0 and any(_runs_launch(facts, c, depth - 1) for g in facts.user_functions(call)
                             for c in facts.calls_in(g.body))


def _lightning_trainer(facts: Facts, site: cst.CSTNode) -> bool:
    """`pl.Trainer(...)`, `pl.Trainer.from_argparse_args(args)`, `L.Trainer(...)`."""
    name = facts.qualify(site.func) if isinstance(site, cst.Call) else None
    parts = (name or "").split(".")
    return parts[0] in LIGHTNING_PACKAGES and "Trainer" in parts


def fabric_launch(facts: Facts, call: cst.Call) -> bool:
    """`fabric.launch(...)` of a `fabric = L.Fabric(...)` (`lightning.Fabric`, `lightning.fabric.Fabric`,
    `lightning_fabric.Fabric`)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == FABRIC_LAUNCH and fabric_object(
        facts, call.func.value)


def fabric_object(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Is `expr` a Fabric object: built as `L.Fabric(...)` (the object core's sites), or a parameter
    annotated so (`def main(fabric: L.Fabric, ...)`, which Fabric's `launch` calls)?"""
    if any(_lightning_class_named(facts, site, "Fabric", FABRIC_PACKAGES) for site in of(facts).values(expr)):
        return True
    ref = facts.ref(expr) if isinstance(expr, cst.Name) else None
    if ref is None or not isinstance(ref.scope, cst.FunctionDef):
        return False
    return any(p.name.value == ref.name and p.annotation is not None
               and (facts.qualify(p.annotation.annotation) or "").split(".")[0] in FABRIC_PACKAGES
               and (facts.qualify(p.annotation.annotation) or "").endswith(".Fabric")
               for p in (*ref.scope.params.params, *ref.scope.params.kwonly_params))


def collective(facts: Facts, call: cst.Call) -> bool:
    """A Lightning collective (`TRAINER_COLLECTIVES` of a trainer, where the program imports
    Lightning; `FABRIC_COLLECTIVES` of a Fabric object), not a method of the program's own."""
    if not isinstance(call.func, cst.Attribute) or facts.user_functions(call):
        return False
    method = call.func.attr.value
    if method in TRAINER_COLLECTIVES and _imports_lightning(facts) or method in STRATEGY_COLLECTIVES and _strategy(facts, call):
        return True
    return method in FABRIC_COLLECTIVES and fabric_object(facts, call.func.value)


def agreed(facts: Facts, call: cst.Call) -> bool:
    """Does `call` return the same value on every process: a Lightning strategy's or Fabric's
    `broadcast` or reduction (`AGREEING`: `trainer.strategy.broadcast(flag)`, `fabric.all_reduce(x)`)?"""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in AGREEING and collective(facts, call)


def _strategy(facts: Facts, call: cst.Call) -> bool:
    """`trainer.strategy.m(...)`, `self.trainer.strategy.m(...)` where the program imports Lightning."""
    owner = call.func.value if isinstance(call.func, cst.Attribute) else None
    return isinstance(owner, cst.Attribute) and owner.attr.value == "strategy" and _imports_lightning(facts)


def _imports_lightning(facts: Facts) -> bool:
    return any(facts.imports.imports_module(p) for p in LIGHTNING_PACKAGES)


def fabric_launch_arguments(facts: Facts, call: cst.Call, func: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """What Fabric's `launch` gives the parameters of `func`, the function it is handed first:
    `fabric.launch(main, devices, train=cfg)` calls `main(fabric, devices, train=cfg)` on every
    process, so of `def main(fabric, devices, train)` -> {"devices": devices, "train": cfg} (the
    first parameter is the Fabric object). Empty for any other call, or one with a `*`/`**`."""
    params = [p.name.value for p in func.params.params]
    if not fabric_launch(facts, call) or not call.args or call.args[0].keyword is not None \
            or not isinstance(call.args[0].value, cst.Name) or call.args[0].value.value != func.name.value \
            or any(a.star for a in call.args) or facts.enclosing_class(func) is not None:
        return {}
    positional = [a.value for a in call.args[1:] if a.keyword is None]
    given = dict(zip(params[1:], positional))
    given.update({a.keyword.value: a.value for a in call.args[1:] if a.keyword is not None})
    return given


def _lightning_class_named(facts: Facts, site: cst.CSTNode, name: str, packages) -> bool:
    """Is `site` a construction of Lightning's class `name` (`L.Fabric(...)`)?"""
    qualified = facts.qualify(site.func) if isinstance(site, cst.Call) else None
    parts = (qualified or "").split(".")
    return parts[0] in packages and parts[-1] == name
