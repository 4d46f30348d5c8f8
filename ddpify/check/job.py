"""Which code of a module, checked in the program of a script that imports it, the job never runs.

A module without a main block is checked in the program of a distributed script that imports it
(`ddpify.inputs.program.load_checked`): its code runs in every process of that job where the job
reaches it. A class or function at the module's top level that no code read names (the importer,
the modules it reads, the rest of the module; an import that only re-exports it is no use) and
that does nothing distributed itself (no call of torch.distributed, no wrap, no collective, no
rank read, nothing of an `Accelerator`), and that no other script beside the importer that says it
runs distributed names, is not run by that job: another entry point runs it, in one process as far
as anything read shows. Its findings are not the job's. A definition a decorator may register
(`@MODELS.register_module()`) is kept.

    # train_decoder.py (accelerate): from pkg.trainer import DecoderTrainer; DecoderTrainer(...)
    # pkg/trainer.py, checked:
    class DiffusionPriorTrainer:          # named by no code read, nothing distributed in it
        def load(self, path):
            torch.load(path)              -> outside the job: no DDP014
    class DecoderTrainer:
        def load(self, path):
            torch.load(path)              -> in the job: DDP014

Where the program looks code up by a computed name (`getattr(module, name)`, `globals()`,
`vars()`), any definition may be reached: none is left out.
"""

from __future__ import annotations

import re

import libcst as cst

from ddpify.analysis.distributed import accelerate_collective, accelerators, distributed_in
from ddpify.check.context import Context
from ddpify.inputs.program import DISTRIBUTED, Program
from ddpify.syntax import matchers as mt

ACCELERATE = re.compile(rb"^\s*(from|import)\s+accelerate\b", re.M)  # a script of an accelerate job


def outside(ctx: Context, program: Program | None, node: cst.CSTNode) -> bool:
    """Is `node`, of the checked module, in a top-level definition its importer's job never runs?"""
    if program is None or not any(part.importer for part in program.parts):
        return False
    f = ctx.facts
    top = node
    while (parent := f.parent(top)) is not None and not isinstance(parent, cst.Module):
        top = parent
    if not isinstance(top, (cst.ClassDef, cst.FunctionDef)) or top.decorators:
        return False  # (a decorator may register it: `@MODELS.register_module()`)
    answers = f.__dict__.setdefault("_outside_job", {})
    if top not in answers:
        answers[top] = not _looked_up_by_name(ctx) and top.name.value not in _named_elsewhere(ctx, top) \
            and not _distributed(ctx, top) and not _distributed_scripts_name(program, top.name.value)
    return answers[top]


def _distributed_scripts_name(program: Program, name: str) -> bool:
    """Does a script beside the importer that says it runs distributed (torch.distributed,
    DistributedDataParallel, accelerate) name `name`: another job that may run it?"""
    importer = next(part for part in program.parts if part.importer)
    word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
    for file in sorted(importer.path.parent.glob("*.py")):
        try:
            text = file.read_bytes() if file.is_file() and file.resolve() != importer.path.resolve() else b""
        except OSError:
            continue
        if word.search(text) and (DISTRIBUTED.search(text) or ACCELERATE.search(text)):
            return True
    return False


def _named_elsewhere(ctx: Context, top: cst.CSTNode) -> set[str]:
    """The names read outside `top` and outside import statements (`x`, `pkg.x`)."""
    f = ctx.facts
    imported = {id(n) for imp in f.findall(f.module, (cst.Import, cst.ImportFrom)) for n in mt.findall(imp, cst.Name)}
    first, end = f.spans[top]
    names = set()
    for name in f.findall(f.module, cst.Name):
        if id(name) not in imported and not first <= f.spans[name][0] < end:
            names.add(name.value)
    return names


def _looked_up_by_name(ctx: Context) -> bool:
    """Does the program look code up by a computed name: `getattr(obj, name)` of anything but
    `self`, `globals()`, `vars()`?"""
    f = ctx.facts
    return any(mt.is_call_of(c, "globals", "vars") or mt.is_call_of(c, "getattr") and len(c.args) >= 2
               and not mt.is_name(c.args[0].value, "self") and not isinstance(c.args[1].value, cst.SimpleString)
               for c in f.calls)


def _distributed(ctx: Context, top: cst.CSTNode) -> bool:
    """Does `top` do anything distributed: a call of torch.distributed, a wrap, a collective
    (also accelerate's and a barrier of the project's), a read of the rank, anything of an
    `Accelerator`?"""
    f = ctx.facts
    if distributed_in(f, top) or any(accelerate_collective(f, c) or ctx.ranks.is_collective(c) for c in f.calls_in(top)):
        return True
    return any(ctx.ranks.is_global_rank(e) or ctx.ranks.is_local_rank(e)
               or isinstance(e, cst.Attribute) and accelerators(f, e.value)
               for e in f.findall(top, (cst.Name, cst.Attribute)))
