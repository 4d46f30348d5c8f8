"""The driver: parse once -> analyse (ddpify.analysis.result) -> apply rewrites -> code + report.

`convert` never touches the file system; the CLI reads and writes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from functools import partial

import libcst as cst

from ddpify.output import edits as edit_set
from ddpify.analysis import reach
from ddpify.analysis.distributed import is_distributed, joins_group
from ddpify.analysis.result import Analysis, analyse
from ddpify.options import Options
from ddpify.syntax import codegen
from ddpify.syntax.facts import Facts
from ddpify.syntax.lines import statement_lines
from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted
from ddpify.syntax.parse import parse_module
from ddpify.inputs.program import Part, Program, folder_inserts
from ddpify.output.report import CHANGE, NOTE, Change
from ddpify.rewrites import Rewrite, select

__all__ = ["Options", "Result", "RewriteError", "analyse", "convert", "convert_program", "plan_program"]


@dataclass
class Result:
    source: bytes
    output: bytes
    changes: list[Change] = field(default_factory=list)
    encoding: str = "utf-8"
    # the other files of a program (ddpify.inputs.program), changed or not, by their path relative
    # to the entry's folder (`models/net.py`)
    modules: dict[str, "Result"] = field(default_factory=dict)
    # where a module read through a folder on sys.path or above the entry's lies, as the report
    # names it (`nb/../helper_train.py`; its output goes beside the entry, at its key in `modules`)
    read_from: str | None = None
    # a module read above the entry's folder (key `../src/pkg/lib.py`, imported as `pkg.lib`): its
    # path beside the converted entry under -o (`pkg/lib.py`); --in-place converts it where it lies
    beside: str | None = None
    # a module read through a folder on sys.path that the program also imports as a module of a
    # package of the project (`Part.also`): those paths too get its output (ddpify.output.packages)
    also: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.output != self.source

    @property
    def code(self) -> str:
        return self.output.decode(self.encoding)


class RewriteError(Exception):
    """A rewrite crashed, or its output does not compile. Names the rewrite."""

    def __init__(self, rewrite: str, detail: str) -> None:
        super().__init__(rewrite, detail)
        self.rewrite = rewrite
        self.detail = detail

    def __str__(self) -> str:
        return f"rewrite {self.rewrite!r} failed: {self.detail}"


# Libraries that launch and synchronise processes themselves: their scripts are not single-GPU.
DISTRIBUTING_FRAMEWORKS = ("accelerate", "lightning", "pytorch_lightning", "deepspeed", "horovod",
                           "fairscale", "colossalai", "ray.train")

def convert(source: str | bytes, options: Options = Options()) -> Result:
    """Convert one script.

    Raises `libcst.ParserSyntaxError` on code that does not parse, `SyntaxError` on bytes that
    do not decode (a bad encoding cookie), and `RewriteError` on a bug of ours.
    """
    data = source.encode("utf-8") if isinstance(source, str) else source
    return _convert(data, parse_module(data), options)


def _convert(data: bytes, module: cst.Module, options: Options, program: Program | None = None) -> Result:
    """Convert one file; given the one-file `program` it is, with `ddpify.analysis.reach`'s warnings.
    A file left alone (`_leave_alone`: no training, already distributed) is told so from its facts,
    before any analysis runs."""
    facts = Facts(module)
    gate = _leave_alone(facts)
    if gate is not None:  # no warnings about a conversion that does not happen
        edits = edit_set.Edits(module)
        for node, message in _gate_warnings(facts, program):
            edits.for_rewrite("ddpify").warn(node, message)
        return Result(data, data, [Change("ddpify", 1, gate, NOTE),
                                   *edits.changes(source=data, parents=facts.parents)], module.encoding)
    analysis = analyse(module, options.fsdp, facts=facts)
    edits = edit_set.Edits(module)
    for node, message in reach.unseen(analysis, program) if program is not None else ():
        edits.for_rewrite("ddpify").warn(node, message)
    rewrites, options = selected(options)
    _run(rewrites, options, analysis, edits)
    try:
        output = edit_set.apply(module, edits, analysis.facts.parents)
    except Exception as exc:
        raise RewriteError(_culprit(module, analysis, rewrites, options), f"{type(exc).__name__}: {exc}") from exc
    starts = statement_lines(module, data)  # (read by the print and by the report's line numbers)
    code = codegen.code(output, module, data, starts)  # generated once: checked, then returned
    _check_compiles(code, module, analysis, rewrites, options)
    return Result(data, code.encode(output.encoding),
                  edits.changes(source=data, parents=analysis.facts.parents, starts=starts), module.encoding)


def convert_program(program: Program, options: Options = Options()) -> Result:
    """Convert a program (ddpify.inputs.program): the entry script's result, with the project modules
    it changed (or has something to say about) in `modules`. A program of one file converts as
    `convert` converts it, with the warnings of `ddpify.analysis.reach` added."""
    entry = program.parts[0]
    if len(program.parts) == 1:
        return _convert(entry.data, entry.module, options, program)
    analysis, edits, gate = plan_program(program, options)
    facts = analysis.facts
    if gate is not None:
        unseen = edits.changes(entry.module, lambda n: program.part_of(n, facts.parents) is entry)
        main = Result(entry.data, entry.data, [Change("ddpify", 1, gate, NOTE), *unseen], entry.module.encoding)
        for part in program.parts[1:]:  # a warning in a module (its DDP wrap): said at its line
            changes = edits.changes(part.module, partial(_in_part, program, facts.parents, part), part.data,
                                    facts.parents)
            if changes:
                main.modules[str(part.rel)] = Result(
                    part.data, part.data, changes, part.module.encoding,
                    read_from=str(part.path) if part.via is not None or part.beside else None,
                    beside=str(part.beside) if part.beside else None)
        return main
    results = {}
    on_path = edit_set.edited_paths(edits, facts.parents)
    local = frozenset(part.name.split(".")[0] for part in program.parts[1:])  # the program's own modules
    for part in program.parts:
        starts = None
        try:
            output = edit_set.apply_part(part.module, edits, facts, on_path, local)
            if output is not part.module:  # (read by the print and by the report's line numbers)
                starts = statement_lines(part.module, part.data)
            code = None if output is part.module else codegen.code(output, part.module, part.data, starts)
            if code is not None:  # (an unchanged file is its bytes)
                with warnings.catch_warnings():  # the user's code's SyntaxWarnings are not ddpify's to show
                    warnings.simplefilter("ignore")
                    compile(code, str(part.rel), "exec", dont_inherit=True)
        except Exception as exc:
            raise RewriteError("ddpify", f"{part.rel}: {type(exc).__name__}: {exc}") from exc
        changes = edits.changes(part.module, partial(_in_part, program, facts.parents, part), part.data, facts.parents,
                                starts)
        results[part.rel] = Result(part.data, part.data if code is None else code.encode(part.module.encoding),
                                   changes, part.module.encoding,
                                   read_from=str(part.path) if part.via is not None or part.beside else None,
                                   beside=str(part.beside) if part.beside else None,
                                   also=tuple(str(rel) for rel in part.also))
    main = results.pop(entry.rel)
    main.modules = {str(rel): r for rel, r in results.items()}
    return main


def plan_program(program: Program, options: Options = Options()
                 ) -> tuple[Analysis, edit_set.Edits, str | None]:
    """The analysis of `program`'s merged module and the edits and records the rewrites ask for
    (none but `ddpify.analysis.reach`'s warnings when the program is left alone: then the reason, else
    None). `convert_program` applies them; `bench/projects_sweep.py` audits them."""
    analysis = analyse(program.merged, options.fsdp, program)
    edits = edit_set.Edits(program.merged)
    gate = _leave_alone(analysis.facts)
    for node, message in _gate_warnings(analysis.facts, program) if gate is not None else ():
        edits.for_rewrite("ddpify").warn(node, message)
    if gate is None:  # no warnings about a conversion that does not happen
        for node, message in reach.unseen(analysis, program):
            edits.for_rewrite("ddpify").warn(node, message)
        _run(*selected(options), analysis, edits)
        _shared_conflicts(program, analysis.facts, edits)
        _own_folder_first(program, analysis.facts, edits)
    return analysis, edits, gate


def _in_part(program: Program, parents: dict[cst.CSTNode, cst.CSTNode], part: Part, node: cst.CSTNode) -> bool:
    """Is `node` of the merged module in `part` of `program`?"""
    return program.part_of(node, parents) is part


def _own_folder_first(program: Program, facts: Facts, edits: edit_set.Edits) -> None:
    """`sys.path.insert(0, "..")` -> `sys.path.insert(1, "..")` where a module read from that folder
    is converted: the converted module is written beside the converted entry (ddpify.inputs.program),
    in the script's own folder, which Python searches first unless an insert at 0 goes before it.
    Where any module is written there, every insert at 0 of a folder a literal path names goes at 1
    too: the project's own (`sys.path.insert(0, '.')` run from it), one above it, one elsewhere. Any
    of them, made by one module after another, would push the script's folder down, and the next
    insert of the project's folder would put the unconverted modules before the converted ones."""
    changed = [program.part_of(r.node, facts.parents) for r in edits.records if r.kind == CHANGE]
    moved = [(p.via, f"{p.rel} is written there, beside it (read from {p.path.parent})")
             for p in program.parts if p.via is not None and any(c is p for c in changed)]
    if any(c is p for c in changed for p in program.parts[1:]):
        moved += [(call, "modules are written there, beside it") for part in program.parts
                  for _, call in folder_inserts(part, program.root) if call in facts.parents]
    done: list[cst.Call] = []
    for call, where in moved:
        if any(c is call for c in done) or dotted(call.func) != "sys.path.insert" or not _is_zero(call.args[0].value):
            continue
        done.append(call)
        edits.for_rewrite("ddpify").replace(call.args[0].value, lambda node: cst.Integer("1"),
                                            f"the script's own folder stays first on sys.path: the converted {where}")


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == 0


def _shared_conflicts(program: Program, facts: Facts, edits: edit_set.Edits) -> None:
    """A TODO at each edit of a module that another entry point imports (ddpify.inputs.program's
    `other_entries`) when the edit is not right for that one too (its record `needs_group`): a DistributedDataParallel
    wrap (also one that replaces the module's DataParallel) or a DistributedSampler is made for the processes the
    converted entry launches; the other entry would get the wrapper or a shard, also where the module now joins a
    process group itself (a one-process group under plain python): its `load_state_dict` of a checkpoint saved
    without `module.`, its attributes of the model, its pass over the whole data (the runtime's helpers, no-ops in
    one process, are right for both)."""
    others: dict = {}
    for record in list(edits.records):
        if record.kind != CHANGE or not record.needs_group:
            continue
        node = record.node
        part = program.part_of(node, facts.parents)
        if part is program.parts[0]:
            continue
        if part.rel not in others:
            others[part.rel] = program.other_entries(part)
        if others[part.rel]:
            names = ", ".join(others[part.rel])
            edits.for_rewrite("ddpify").todo(facts.statement(node), (
                f"{names} also import{'s' if len(others[part.rel]) == 1 else ''} this module; this edit, right for "
                f"{program.parts[0].rel}, is made for the processes {program.parts[0].rel} launches, and hands "
                f"{names} a DistributedDataParallel wrapper or a sharded loader where it expects the model or the "
                f"whole data: convert {names} too, or move this edit into {program.parts[0].rel}"))


def _run(rewrites: tuple[Rewrite, ...], options: Options, analysis: Analysis, edits: edit_set.Edits) -> None:
    for rewrite in rewrites:
        try:
            rewrite.apply(analysis, edits.for_rewrite(rewrite.name), options)
        except Exception as exc:  # report which rewrite broke, with the cause chained
            raise RewriteError(rewrite.name, f"{type(exc).__name__}: {exc}") from exc


def selected(options: Options) -> tuple[tuple[Rewrite, ...], Options]:
    """The rewrites `options` selects, in the order they run (`ddpify.rewrites.select`: with what
    they require), and the options they are given: these, with that selection resolved."""
    rewrites = select(options.only, options.skip)
    return rewrites, replace(options, only=frozenset(r.name for r in rewrites), skip=frozenset())


def _leave_alone(facts: Facts) -> str | None:
    """Why the file must not be touched, or None."""
    imports = facts.imports
    if imports.imports_module("ddpify_runtime"):
        return "already converted by ddpify; left unchanged"
    framework = next((f for f in DISTRIBUTING_FRAMEWORKS if imports.imports_module(f)), None)
    if framework is not None:  # (before torch.distributed: `Accelerator()` counts as distributed too)
        return f"distributed by {framework}, which ddpify does not convert; left unchanged"
    if is_distributed(facts) and joins_group(facts):  # (DDP code that never joins a group: converted)
        return "already distributed (uses torch.distributed); left unchanged: `ddpify check` finds DDP bugs in it"
    if not facts.imports.imports_module("torch"):
        return "no training loop found (torch is not imported in the code ddpify read); left unchanged"
    if not facts.has_training:
        return "no training loop found (no optimizer, no .backward()); left unchanged"
    return None


def _gate_warnings(facts: Facts, program: Program | None = None) -> list[tuple[cst.CSTNode, str]]:
    """Why a file `_leave_alone` leaves unchanged may still be wrong under torchrun, at the line:
    a `from X import *` of a module not found (`reach.star_imports`: it may bring torch and the
    training), code loaded by name where torch is imported and nothing trains (`reach.loads_by_name`:
    the training may be there), or a file with `.backward()` and `.step()` where no training was
    found (torch not imported in the code read).

        from utils import *                     # warning: no `utils` module found
        spec_from_file_location(name, path)     # warning, and at the calls on the way to it
        loss.backward()                         # warning: no torch import or optimizer read
    """
    if any(facts.imports.imports_module(f) for f in ("ddpify_runtime", *DISTRIBUTING_FRAMEWORKS)):
        return []  # (a framework joins its own group: `hvd.init()`)
    stars = list(reach.star_imports(program)) if program is not None else []
    if facts.has_training:
        return stars
    if program is not None and facts.imports.imports_module("torch"):
        stars += reach.loads_by_name(facts, program)
    backward = next((c for c in facts.calls_named("backward") if facts.is_backward(c) and not c.args), None)
    if backward is None or not any(mt.is_method_call(c, "step") for c in facts.calls_named("step")):
        return stars
    return stars + [(facts.statement(backward), (
        f"`{facts.code(backward)}` and `.step()` but no torch import or optimizer in the code ddpify read (a "
        f"`from ... import *` of a module it did not read?); left unchanged: import torch and the optimizer "
        f"in this file, or convert by hand"))]


def _check_compiles(code: str, module: cst.Module, analysis: Analysis, rewrites: tuple[Rewrite, ...],
                    options: Options) -> None:
    try:
        compile(code, "<ddpify output>", "exec")
    except SyntaxError as exc:
        raise RewriteError(_culprit(module, analysis, rewrites, options), f"output does not compile: {exc}") from exc


def _culprit(module: cst.Module, analysis: Analysis, rewrites: tuple[Rewrite, ...], options: Options) -> str:
    """The first rewrite whose edits, applied with those of the rewrites before it, break the code."""
    for i in range(1, len(rewrites) + 1):
        edits = edit_set.Edits(module)
        try:
            for rewrite in rewrites[:i]:
                rewrite.apply(analysis, edits.for_rewrite(rewrite.name), options)
            compile(edit_set.apply(module, edits, analysis.facts.parents).code, "<ddpify output>", "exec")
        except Exception:
            return rewrites[i - 1].name
    return "ddpify"
