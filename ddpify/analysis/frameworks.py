"""Frameworks' own names for the process questions, one table the core of `ddpify.analysis.ranks`
consults: which of a framework's calls or fields test for the main process, which return the
global or the local rank, and which are collectives.

A framework that runs the program's code on every process spells these in its own names, which
the plain torch.distributed reading misses (a test it does not know, so a write under it is
"every rank") or misreads (a rank it takes for another):

| package | spelled | is |
|---|---|---|
| transformers | `self.is_world_process_zero()` (Trainer), `state.is_world_process_zero` (TrainerState) | a test that holds on one process of the job |
| transformers | `self.is_local_process_zero()`, `state.is_local_process_zero` | a test that holds on one process a node |
| detectron2 | `comm.is_main_process()` | a test that holds on one process of the job |
| detectron2 | `comm.get_rank()` / `comm.get_local_rank()` | the global / the local rank |
| detectron2 | `comm.synchronize()`, `comm.all_gather(x)`, `comm.gather(x)`, `comm.reduce_dict(d)` | collectives |
| transformers, trl | `compute_loss(self, model, ...)`, `training_step(self, model, ...)` of a `Trainer` subclass; `batched_forward_pass(self, model, ...)` of trl's | methods the framework calls with the model it wrapped (DDP where distributed) |
| easytorch, Lightning | `@master_only` (easytorch.utils), `@rank_zero_only` (Lightning's utilities) | decorators that run the function on the main process only |
| Lightning | `trainer.save_checkpoint(p)`; Fabric's `fabric.save(p, state)`, `fabric.barrier()`, `fabric.all_reduce(x)` ... (`lightning.collective`) | collectives |
| torch FSDP | `FSDP.optim_state_dict(m, opt)`, `FSDP.full_optim_state_dict(m, opt)`; `m.state_dict()` under `with FSDP.state_dict_type(m, StateDictType.FULL_STATE_DICT)` | collectives (each gathers every process's shards) |

A method or field is read by its name where the program imports the package (the object is
often handed in, `trainer.is_world_process_zero()`); a function of a module by the name it is
imported under (`import detectron2.utils.comm as comm`). Where the program holds the framework's
own source (a project that vendors detectron2), its functions are read as the program's.
Collectives that are methods of a library object the program builds (a sharded optimizer's
`consolidate_state_dict()`, ColossalAI's `booster.save_model(...)`) are found by that object's
class instead: `ddpify.analysis.distributed.LIBRARY_COLLECTIVES`; accelerate's in the same module.

    class RM(transformers.Trainer):
        def save_predictions(self, preds):
            if not self.is_world_process_zero():   # before: no rank test, the write "every rank's"
                return                             # after: every process but one returns here
            open("preds.jsonl", "w").write(preds)
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis import lightning
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted

# methods or fields, read by name where the program imports the package
JOB_MAIN_TESTS = {"transformers": frozenset({"is_world_process_zero"})}
NODE_MAIN_TESTS = {"transformers": frozenset({"is_local_process_zero"})}
# module functions, by qualified name
_COMM = "detectron2.utils.comm"
MAIN_TEST_CALLS = frozenset({f"{_COMM}.is_main_process"})
GLOBAL_RANK_CALLS = frozenset({f"{_COMM}.get_rank"})
LOCAL_RANK_CALLS = frozenset({f"{_COMM}.get_local_rank"})
_FSDP = "torch.distributed.fsdp.FullyShardedDataParallel"
COLLECTIVE_CALLS = frozenset(f"{_COMM}.{name}" for name in ("synchronize", "all_gather", "gather", "reduce_dict")) | {
    f"{_FSDP}.{name}" for name in ("optim_state_dict", "full_optim_state_dict", "sharded_optim_state_dict")}
FULL_STATE_DICT_TYPES = frozenset({"FULL_STATE_DICT"})
# decorators, by qualified name, whose wrapper runs the function on the main process only
_RANK_ZERO = ("pytorch_lightning.utilities", "pytorch_lightning.utilities.rank_zero", "lightning.pytorch.utilities",
              "lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities", "lightning.fabric.utilities.rank_zero",
              "lightning_utilities.core.rank_zero")
RANK_ONLY_DECORATORS = frozenset({"easytorch.utils.master_only", "easytorch.utils.dist.master_only",
                                  *(f"{module}.rank_zero_only" for module in _RANK_ZERO)})
# methods of a framework's trainer class that it calls with the model it wrapped, and that parameter
WRAPPED_PARAMETERS = {"transformers": {"compute_loss": "model", "training_step": "model"},
                      "trl": {"compute_loss": "model", "training_step": "model", "batched_forward_pass": "model"}}


def main_test(facts: Facts, expr: cst.CSTNode) -> bool:
    """Is `expr` a framework's test for the main process (of the job or of the node): the func of
    `self.is_world_process_zero()`, the field `state.is_world_process_zero`, detectron2's
    `comm.is_main_process`?"""
    if isinstance(expr, cst.Attribute):
        name = expr.attr.value
        if any(name in names and facts.imports.imports_module(package)
               for table in (JOB_MAIN_TESTS, NODE_MAIN_TESTS) for package, names in table.items()):
            return True
    return isinstance(expr, (cst.Name, cst.Attribute)) and facts.qualify(expr) in MAIN_TEST_CALLS


def one_process_test(facts: Facts, expr: cst.CSTNode) -> bool:
    """Is `expr` a framework's test that holds on one process of the job (`main_test`, not the
    node's: `is_local_process_zero` holds on one a node)?"""
    if isinstance(expr, cst.Attribute) and any(
            expr.attr.value in names and facts.imports.imports_module(package)
            for package, names in JOB_MAIN_TESTS.items()):
        return True
    return isinstance(expr, (cst.Name, cst.Attribute)) and facts.qualify(expr) in MAIN_TEST_CALLS


def rank_call(facts: Facts, call: cst.Call) -> str | None:
    """"global" or "local" for a framework's call that returns the process's rank among all
    processes or on its node (detectron2's `comm.get_rank()`, `comm.get_local_rank()`)."""
    name = facts.qualify(call.func)
    return "global" if name in GLOBAL_RANK_CALLS else "local" if name in LOCAL_RANK_CALLS else None


def collective(facts: Facts, call: cst.Call) -> bool:
    """A framework's call every process must make (detectron2's `comm.synchronize()`, Lightning's
    `trainer.save_checkpoint(p)`: `lightning.collective`), or a model's `state_dict()` where FSDP
    gathers the full one (`full_state_dict`)."""
    return facts.qualify(call.func) in COLLECTIVE_CALLS or full_state_dict(facts, call) or lightning.collective(facts, call)


def full_state_dict(facts: Facts, call: cst.Call) -> bool:
    """`model.state_dict()` in the body of `with FSDP.state_dict_type(model,
    StateDictType.FULL_STATE_DICT, ...)`: FSDP all-gathers every process's shards into it, so
    every process must call it, even where only rank 0 keeps the result (`rank0_only=True`)."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "state_dict"):
        return False
    return any(isinstance(anc, cst.With) and facts.is_inside(call, anc.body) and any(
        isinstance(item.item, cst.Call) and facts.qualify(item.item.func) == f"{_FSDP}.state_dict_type"
        and any((dotted(a.value) or "").rpartition(".")[2] in FULL_STATE_DICT_TYPES for a in item.item.args)
        for item in anc.items) for anc in facts.ancestors(call))


# packages whose trainer (a class whose name ends in `Trainer`: transformers' `Trainer` and
# `Seq2SeqTrainer`, TRL's `SFTTrainer`, `DPOTrainer`, ...) runs one process per device where torchrun
# starts several: it joins the group the launch's environment names, wraps the model and shards the
# loaders itself, and saves its own checkpoints (`trainer.save_model(d)`) on the main process only
DEVICE_JOB_TRAINERS = ("transformers", "trl")


def device_job_trainer(facts: Facts, cls: cst.ClassDef | None, name: str | None) -> bool:
    """Is the class a call builds such a trainer: `name`, the callee's qualified name (`trl.SFTTrainer`),
    or `cls`, a class of the program, derived through its bases in the program from one
    (`class RM(transformers.Trainer)`)?"""
    def trainer(q: str | None) -> bool:
        return q is not None and q.partition(".")[0] in DEVICE_JOB_TRAINERS and q.endswith("Trainer")
    return trainer(name) or cls is not None and any(trainer(facts.qualify(b.value)) for c in facts.lineage(cls)
                                                    for b in c.bases)


def wrapped_parameters(facts: Facts) -> list[tuple[cst.FunctionDef, str]]:
    """The methods of the program's subclasses of a framework's trainer (`class RM(transformers.Trainer)`,
    `class PPO(trl.PPOTrainer)`) that the framework calls with the model it wrapped, each with that
    parameter: `compute_loss(self, model, inputs)` gets Trainer's DDP wrapper where the run is
    distributed (`model.config` there is an AttributeError)."""
    found = []
    for package, methods in WRAPPED_PARAMETERS.items():
        if not facts.imports.imports_module(package):
            continue
        for name, param in methods.items():
            for func in facts.functions.get(name, ()):
                cls = facts.enclosing_class(func)
                if cls is not None and param in {p.name.value for p in func.params.params} and any(
                        (q := facts.qualify(b.value) or "").partition(".")[0] == package and q.endswith("Trainer")
                        for c in facts.lineage(cls) for b in c.bases):
                    found.append((func, param))
    return found


def rank_only_decorator(facts: Facts, decorator: cst.BaseExpression) -> bool:
    """A framework's decorator that runs the function it decorates on the main process only
    (easytorch's `@master_only`, Lightning's `@rank_zero_only`)."""
    return isinstance(decorator, (cst.Name, cst.Attribute)) and facts.qualify(decorator) in RANK_ONLY_DECORATORS
