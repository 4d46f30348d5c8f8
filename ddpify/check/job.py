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

A checked script that runs code of its own (a main block, a call at its top level) does not run a
top-level function of its that no code of the program and no other file of the project names, and
the module looks nothing up by a computed name (`globals()`): dead code, left from an earlier
version (N4DE's `def old_iteration():`); its findings are no run's. A script that only defines
functions is run by something not read: they are its entry points, kept.

Where the program looks code up by a computed name (`getattr(module, name)`, `globals()`,
`vars()`), any definition may be reached: none is left out.

A definition that does something distributed, or in a program that looks anything up by name, is
outside the job where no file of the project names it at all (its scripts, tests, shell scripts,
configurations and notes: `_named_in_project`) and the program looks up nothing by a computed name
where the module's own definitions may be found (`getattr` of a module, `globals()` of the module):
no launch of the project runs it.

    # main_ddp.py: from pkg.train import training_process; training_process(args)
    # pkg/train.py, checked:
    def training_process(args): ...      # in the job
    def self_training_process(args):     # named by no file of the project: outside every job
        ds.pseudo_label(...)             -> no DDP006
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import libcst as cst

from ddpify.analysis.distributed import accelerate_collective, accelerators, distributed_in, is_distributed
from ddpify.check.context import Context
from ddpify.inputs.program import DISTRIBUTED, Program, load_checked
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import INPUT_ERRORS
from ddpify.syntax.names import dotted

ACCELERATE = re.compile(rb"^\s*(from|import)\s+accelerate\b", re.M)  # a script of an accelerate job
# the files that may name a function of the project: code, shell scripts, configurations, notebooks, notes
PROJECT_TEXTS = (".py", ".sh", ".bash", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".ipynb", ".md", ".rst", ".txt")
TEXT_WALK = (4, 5000)
IMPORTERS = frozenset({"importlib.import_module", "__import__", "sys.modules"})  # what loads a module by a computed name  # folders deep, folders and files in all


def outside(ctx: Context, program: Program | None, node: cst.CSTNode) -> bool:
    """Is `node`, of the checked module, in a top-level definition its importer's job never runs,
    or, of a checked script, in a top-level function that nothing of the project names (dead code:
    `def old_iteration():` that no call, reference or other file reads)?"""
    if program is None:
        return False
    f = ctx.facts
    top = node
    while (parent := f.parent(top)) is not None and not isinstance(parent, cst.Module):
        top = parent
    if not isinstance(top, (cst.ClassDef, cst.FunctionDef)) or top.decorators:
        return False  # (a decorator may register it: `@MODELS.register_module()`)
    imported = any(part.importer for part in program.parts)
    if not imported and not (isinstance(top, cst.FunctionDef) and _runs_something(program.parts[0].module)):
        return False  # (a script that only defines is run by something not read: its functions are its entry points)
    answers = f.__dict__.setdefault("_outside_job", {})
    if top not in answers:
        name = top.name.value
        unnamed = name not in _named_elsewhere(ctx, top) and (not imported or not _distributed_scripts_name(program, name))
        if imported:
            answers[top] = unnamed and (not _looked_up_by_name(ctx) and not _distributed(ctx, top)
                                        or not _module_looked_up_by_name(ctx)
                                        and not _named_in_project(program.root, program.parts[0].path, name))
        else:
            answers[top] = unnamed and not _module_looked_up_by_name(ctx) \
                and not _named_in_project(program.root, program.parts[0].path, name, defined_too=False)
    return answers[top]


def _runs_something(module: cst.Module) -> bool:
    """Does the script run code of its own: a main block (`if __name__ == "__main__":`) or a call
    at its top level?"""
    return any(isinstance(stmt, cst.If) and any(mt.is_name(n, "__name__") for n in mt.findall(stmt.test, cst.Name))
               or isinstance(stmt, cst.SimpleStatementLine) and any(
                   isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) for s in stmt.body)
               for stmt in module.body)


def _named_in_project(root: Path, own: Path, name: str, defined_too: bool = True) -> bool:
    """Does a file of the project other than the module's own (its scripts, tests, shell scripts,
    configurations, notes: `PROJECT_TEXTS` under `root`) name `name`? A
    distributed function of a module that none names (sngp-segmentation's `self_training_process`,
    beside the `training_process` its four scripts run) is run by no launch of the project.
    Without `defined_too`, a file's own `def name(` does not count: a function of the same name
    that another script defines (N4DE's main_animated.py beside main_distributed.py) runs not this one."""
    word = re.compile((rb"" if defined_too else rb"(?<!def )") + rb"\b" + re.escape(name.encode()) + rb"\b")
    return any(word.search(text) and not _one_process_script(path, text)
               for path, text in _project_texts(root.resolve()) if path != own.resolve())


@functools.lru_cache(maxsize=32)
def _one_process_script(path: Path, text: bytes) -> bool:
    """Is the file a Python script (it runs code of its own) whose program does nothing
    distributed (`is_distributed`: no process group, no wrap, no collective on any path it runs)?
    What it names it runs in one process: SemanticSeg's train.py, which calls the one-process
    `train_model` beside the `train_model_multigpu` that the spawned workers of train_multigpu.py
    run, is no launch of the distributed job's code. A file that does not parse names, as text."""
    if path.suffix != ".py":
        return False
    try:
        program = load_checked(path, text)
    except (*INPUT_ERRORS, OSError):
        return False
    if not program.parts or program.parts[0].importer or not _runs_something(program.parts[0].module):
        return False
    return not is_distributed(Facts(program.merged, program))


@functools.lru_cache(maxsize=8)
def _project_texts(root: Path) -> tuple[tuple[Path, bytes], ...]:
    """The project's text files under `root` (`PROJECT_TEXTS`, under 1 MiB, hidden folders left out;
    at most `TEXT_WALK` folders deep and files in all): where its code may be named."""
    found: list[tuple[Path, bytes]] = []
    depth, budget = TEXT_WALK
    for folder, dirs, files in os.walk(root):
        level = len(Path(folder).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and level < depth)
        for file in sorted(f for f in files if f.endswith(PROJECT_TEXTS)):
            path = Path(folder, file)
            try:
                found += [(path.resolve(), path.read_bytes())] if path.stat().st_size < 1 << 20 else []
            except OSError:
                continue
        budget -= len(dirs) + len(files)
        if budget < 0:
            break
    return tuple(found)


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
               for c in f.calls_named("globals", "vars", "getattr"))


def _module_looked_up_by_name(ctx: Context) -> bool:
    """Does the program look up a name computed at run time where the checked module's own
    definitions may be found: `globals()` or `vars()` in the module itself, `getattr(m, name)` of
    a module of the program or of one imported by a computed name (`importlib.import_module`,
    `__import__`, `sys.modules[...]`)? Not `getattr(mod, substr)` walking a model's submodules."""
    f = ctx.facts
    program = f.program
    own = program.parts[0] if program is not None else None
    for call in f.calls:
        if mt.is_call_of(call, "globals", "vars") and not call.args:
            if program is None or program.part_of(call, f.parents) is own:
                return True
        elif mt.is_call_of(call, "getattr") and len(call.args) >= 2 and not isinstance(call.args[1].value, cst.SimpleString):
            held = call.args[0].value
            if f.is_program_module(held) or any(isinstance(o, (cst.Call, cst.Subscript)) and (
                    f.qualify(x := o.func if isinstance(o, cst.Call) else o.value) or dotted(x) or "") in IMPORTERS
                    for o in f.origins(held)):
                return True
    return False


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
