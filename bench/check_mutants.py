"""Recall of `ddpify check` on classic DDP bugs seeded into clean, real DDP code (issue 29, decision 0220).

    python bench/check_mutants.py bench/check_sweep24.jsonl TREES --half all --work /tmp/mutants
    python bench/check_mutants.py bench/check_sweep27.jsonl TREES --half heldout --work /tmp/mutants

Mutation testing: for each row of a check-set manifest that claims no bug (`expected` names no
rule's code; trees built by `bench/check_sweep.py ... --whole-repo`), each OPERATOR seeds one
classic bug at one site of the row's file (a LibCST edit of that file only), and `ddpify check`
runs on the mutant in a copy of the row's tree (under `--work`; the file is written back after
each mutant), in-process, as the CLI checks one file. A mutant is KILLED when a finding of the
operator's rule(s) that the original does not have (same code on the line the original's maps
to, by a line diff) lies within `NEAR` lines of the edit (anywhere in the file for an operator
whose rule reports elsewhere: DDP002 names the sampler, not the deleted `set_epoch`). Prints
per operator and overall `killed/applied`, and every survivor with file:line.

The operators are conservative: each applies only where the edit surely makes the bug (a
`set_epoch` of a sampler that shuffles and feeds a loader; a rank-0 guard of a `torch.save`
with no other branch, no collective inside and no rank in the path; ...) and skips the site
otherwise. Their rank-0 test is this module's own, by name (`rank == 0`, `is_main_process()`),
not check's: the seeds do not follow what check already recognises.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

NEAR = 3  # a finding this many lines from the edit reports the seeded bug
CODE = cst.Module([]).code_for_node
COLLECTIVES = {"barrier", "all_reduce", "all_gather", "broadcast", "reduce", "all_gather_object",
               "broadcast_object_list", "gather", "scatter", "reduce_scatter"}
EVALUATION = re.compile(r"val|test|eval", re.I)
MAIN_NAME = re.compile(r"^(is_)?(local_)?(main|master)(_process|_proc|_rank|_node|_worker)$|^is_(main|master)$"
                       r"|^(is_)?rank_?(0|zero)$", re.I)
STRIPS_PREFIX = re.compile(r"""["']module\.["']|\[7:\]""")
LOCAL_RANK = re.compile(r"""(environ(\[|\.get\()|getenv\()\s*["']LOCAL_RANK["']""")  # not a dict of the environment's values
OFF_NAME = re.compile(r"distributed|ddp|is_initialized|world_size|n_?gpus|num_gpus", re.I)


@dataclass(frozen=True)
class Mutant:
    operator: str
    line: int  # the site's first line, in the original
    end: int  # its last line
    code: str  # the mutated file


@dataclass(frozen=True)
class Operator:
    name: str
    codes: tuple[str, ...]  # the rules whose finding kills it
    anywhere: bool  # the rule reports elsewhere than the edit
    sites: Callable[["Module"], Iterator[tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel]]]
    why: str


class Module:
    """A parsed file with its parents and positions, and the questions the operators share."""

    def __init__(self, source: str, elsewhere: str = "") -> None:
        self.source, self.elsewhere = source, elsewhere  # the other Python files of the project
        self.wrapper = MetadataWrapper(cst.parse_module(source))
        self.module = self.wrapper.module
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.positions = self.wrapper.resolve(PositionProvider)
        self.nodes = [n for n in self.positions if isinstance(n, cst.CSTNode)]

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def scope(self, node: cst.CSTNode) -> cst.CSTNode:
        return next((a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)), self.module)

    def calls(self, within: cst.CSTNode | None = None) -> list[cst.Call]:
        found = [n for n in self.nodes if isinstance(n, cst.Call)]
        return [c for c in found if within is None or within in self.ancestors(c)]

    def assigned(self, target: str) -> list[cst.BaseExpression]:
        """Every value the file assigns to `target` (a name or dotted attribute, as spelled)."""
        return [n.value for n in self.nodes if isinstance(n, (cst.Assign, cst.AnnAssign)) and n.value is not None
                and any(CODE(t) == target for t in _targets(n))]

    def dead(self, node: cst.CSTNode) -> bool:
        """Is `node` under `if flag:` where the file sets `flag` to False only, after a `raise` or
        `return` of its block, or in a function nothing names: not this
        file's code (a def's own name, comments and strings left out), not another file of the
        project (by the word, comments counted)?"""
        for branch in (a for a in self.ancestors(node) if isinstance(a, cst.If) and _in_body(a, node, self)):
            values = self.assigned(CODE(branch.test)) if isinstance(branch.test, cst.Name) else []
            if values and all(CODE(v) == "False" for v in values):
                return True  # `load_cp = False` ... `if load_cp:`
        for child, block in zip([node, *self.ancestors(node)], self.ancestors(node)):
            body = getattr(block, "body", None)
            if isinstance(block, (cst.IndentedBlock, cst.Module)) and isinstance(body, (list, tuple)) \
                    and child in body and any(isinstance(s, cst.SimpleStatementLine) and isinstance(
                        s.body[0], (cst.Raise, cst.Return)) for s in body[:body.index(child)]):
                return True
        for func in (a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)):
            name = func.name.value
            named = any(isinstance(n, cst.Name) and n.value == name and n is not func.name for n in self.nodes)
            if not named and not re.search(rf"\b{re.escape(name)}\b", self.elsewhere):
                return True
        return False

    def same_holder(self, wrap: cst.CSTNode, use: cst.CSTNode, name: cst.BaseExpression) -> bool:
        """Does `name` at `use` read what was bound at `wrap`: the same function's name, a module
        name outside functions, `self.x` in the same class?"""
        if CODE(name).startswith("self."):
            classes = [next((a for a in self.ancestors(n) if isinstance(a, cst.ClassDef)), None) for n in (wrap, use)]
            return classes[0] is not None and classes[0] is classes[1]
        return self.scope(wrap) is self.scope(use)

    def under_rank_zero(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, cst.If) and rank_zero(a.test) and _in_body(a, node, self) for a in self.ancestors(node))

    def mutate(self, old: cst.CSTNode, new) -> str:
        return self.module.visit(_Swap(old, new)).code


class _Swap(cst.CSTTransformer):
    def __init__(self, old: cst.CSTNode, new) -> None:
        self.old, self.new = old, new

    def on_leave(self, original_node, updated_node):
        return self.new if original_node is self.old else updated_node


def _targets(node: cst.Assign | cst.AnnAssign) -> list[cst.BaseExpression]:
    return [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]


def _in_body(branch: cst.If, node: cst.CSTNode, module: Module) -> bool:
    return branch.body in module.ancestors(node) or branch.body is node


def name_of(func: cst.BaseExpression) -> str:
    """The last segment of a called name: `torch.utils.data.DataLoader` -> `DataLoader`."""
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def rank_zero(test: cst.BaseExpression) -> bool:
    """Does `test` hold on rank 0 only: `rank == 0`, `args.local_rank in [-1, 0]`, `not rank`,
    `is_main_process()`, `dist.get_rank() == 0 and epoch % 5 == 0`, `not distributed or rank == 0`?"""
    if isinstance(test, cst.BooleanOperation):
        left, right = rank_zero(test.left), rank_zero(test.right)
        if isinstance(test.operator, cst.And):
            return left or right
        return (left or _turned_off(test.left)) and (right or _turned_off(test.right)) and (left or right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _ranky(test.expression) and not isinstance(test.expression, cst.Call)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op, right = test.comparisons[0].operator, test.comparisons[0].comparator
        zero = CODE(right) in ("0", "[-1, 0]", "(-1, 0)", "[0, -1]", "(0, -1)", "{-1, 0}", "{0, -1}")
        if isinstance(op, (cst.Equal, cst.In, cst.LessThanEqual)) and zero or isinstance(op, cst.LessThan) \
                and CODE(right) == "1":
            return _ranky(test.left)
        return isinstance(op, cst.Equal) and CODE(test.left) == "0" and _ranky(right)
    func = test.func if isinstance(test, cst.Call) else test
    return bool(MAIN_NAME.match(name_of(func)))


def _ranky(expr: cst.BaseExpression) -> bool:
    return "rank" in CODE(expr).lower()


def _turned_off(test: cst.BaseExpression) -> bool:
    """`not distributed`, `world_size == 1`: true where no group of several processes runs."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return bool(OFF_NAME.search(CODE(test.expression)))
    return isinstance(test, cst.Comparison) and bool(OFF_NAME.search(CODE(test.left))) \
        and CODE(test.comparisons[0].comparator) == "1"


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and not test.lpar:
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def _distributed_sampler(value: cst.BaseExpression) -> cst.Call | None:
    """The `DistributedSampler(...)` call a value is (also `DistributedSampler(ds) if ddp else None`)."""
    if isinstance(value, cst.IfExp):
        calls = [v for v in (value.body, value.orelse) if not (isinstance(v, cst.Name) and v.value == "None")]
        return _distributed_sampler(calls[0]) if len(calls) == 1 else None
    return value if isinstance(value, cst.Call) and name_of(value.func) == "DistributedSampler" else None


def _samplers(module: Module, expr: cst.BaseExpression) -> list[cst.Call] | None:
    """The DistributedSampler calls `expr` holds, when every value the file gives it is one."""
    inline = _distributed_sampler(expr)
    if inline is not None:
        return [inline]
    values = module.assigned(CODE(expr)) if isinstance(expr, (cst.Name, cst.Attribute)) else []
    calls = [_distributed_sampler(v) for v in values]
    return [c for c in calls if c is not None] if values and None not in calls else None


def _shuffles(call: cst.Call) -> bool:
    arg = keyword(call, "shuffle")
    return arg is None or CODE(arg.value) == "True"


def _evaluated_only(module: Module, loader: cst.Call) -> bool:
    """Is the name the loader is bound to read only as an argument of calls named for evaluation
    (`test(model, unlabelled_train_loader)`)?"""
    bind = module.parents.get(loader)
    if not isinstance(bind, cst.Assign) or len(bind.targets) != 1 or not isinstance(bind.targets[0].target, cst.Name):
        return False
    name = bind.targets[0].target
    reads = [n for n in module.nodes if isinstance(n, cst.Name) and n.value == name.value and n is not name]
    return bool(reads) and all(isinstance(arg := module.parents.get(n), cst.Arg) and isinstance(
        call := module.parents.get(arg), cst.Call) and EVALUATION.search(name_of(call.func)) for n in reads)


def _statement_line(module: Module, call: cst.Call) -> cst.SimpleStatementLine | None:
    """The statement line that is `call` alone (an expression statement)."""
    expr, line = module.parents.get(call), module.parents.get(module.parents.get(call))
    return line if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 \
        else None


def _deleted(module: Module, line: cst.SimpleStatementLine):
    block = module.parents[line]
    alone = isinstance(block, cst.IndentedBlock) and len(block.body) == 1
    return line.with_changes(body=[cst.Pass()]) if alone else cst.RemovalSentinel.REMOVE


# -- the operators ------------------------------------------------------------------------------

def set_epoch_deleted(module: Module):
    """`sampler.set_epoch(epoch)` deleted, where the sampler is a DistributedSampler that shuffles,
    a loader reads it, it is not an evaluation sampler (by its name, or its loader's only readers:
    `test(model, loader)`), and it is the receiver's only set_epoch."""
    calls = [c for c in module.calls() if isinstance(c.func, cst.Attribute) and c.func.attr.value == "set_epoch"]
    for call in calls:
        receiver = call.func.value  # type: ignore[attr-defined]
        line = _statement_line(module, call)
        if line is None or sum(CODE(c.func.value) == CODE(receiver) for c in calls) > 1:  # type: ignore[attr-defined]
            continue
        loaders = [c for c in module.calls() if name_of(c.func) == "DataLoader"]
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "sampler":  # loader.sampler.set_epoch
            fed = [keyword(v, "sampler") for v in module.assigned(CODE(receiver.value)) if isinstance(v, cst.Call)
                   and name_of(v.func) == "DataLoader"]
            held = fed[0].value if len(fed) == 1 and fed[0] is not None else None
            names = CODE(receiver)
            drawing = [v for v in module.assigned(CODE(receiver.value)) if isinstance(v, cst.Call)]
        else:
            drawing = [c for c in loaders if (a := keyword(c, "sampler")) is not None and CODE(a.value) == CODE(receiver)]
            held = receiver if drawing else None
            names = CODE(receiver)
        samplers = _samplers(module, held) if held is not None else None
        if samplers and all(_shuffles(s) for s in samplers) and not EVALUATION.search(names + CODE(held)) \
                and not all(_evaluated_only(module, c) for c in drawing):
            yield line, _deleted(module, line)


def rank_zero_guard_removed(module: Module):
    """`if rank == 0: torch.save(...)` -> `torch.save(...)` on every process (a rank-0 conjunct of
    an `and` dropped, the other conjuncts kept): only where the `if` has no other branch, holds no
    collective and no save whose arguments name a rank (a file per process), and the save sits
    under no other `if` inside it (`if val_loss < best:`: which processes pass it is not known);
    not in a helper every call of which is under a rank-0 test already."""
    for branch in (n for n in module.nodes if isinstance(n, cst.If) and n.orelse is None and rank_zero(n.test)
                   and not isinstance(module.parents[n], cst.If)):  # not an `elif`
        inside = module.calls(branch.body)
        saves = [c for c in inside if CODE(c.func) == "torch.save"
                 and not any(isinstance(a, cst.If) for a in module.ancestors(c) if branch.body in module.ancestors(a))]
        if not saves or any(name_of(c.func) in COLLECTIVES for c in inside) \
                or any("rank" in CODE(a.value).lower() for c in saves for a in c.args):
            continue
        func = module.scope(branch)
        sites = [c for c in module.calls() if isinstance(func, cst.FunctionDef) and name_of(c.func) == func.name.value]
        if sites and all(module.under_rank_zero(c) for c in sites):
            continue  # every call of the helper is on rank 0 already: its own guard is a second one
        kept = [t for t in _conjuncts(branch.test) if not rank_zero(t)]
        if kept:
            test = kept[0]
            for more in kept[1:]:
                test = cst.BooleanOperation(test, cst.And(), more)
            yield branch, branch.with_changes(test=test)
        else:
            body = list(branch.body.body)  # type: ignore[attr-defined]
            body[0] = body[0].with_changes(leading_lines=[*branch.leading_lines, *body[0].leading_lines])
            yield branch, cst.FlattenSentinel(body)


def module_dropped(module: Module):
    """`torch.save(model.module.state_dict(), p)` -> `torch.save(model.state_dict(), p)`, where the file
    wraps `model` in DDP; also a dict (or a dict's key) assigned the state and saved by name. Not in
    a project that takes the prefix off somewhere (`k.replace("module.", "")`, `k[7:]`): its loader
    may fit the wrapper's keys."""
    if STRIPS_PREFIX.search(module.source + module.elsewhere):
        return
    saved = {CODE(c.args[0].value) for c in module.calls() if CODE(c.func) == "torch.save" and c.args}
    for call in module.calls():
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "state_dict"
                and isinstance(func.value, cst.Attribute) and func.value.attr.value == "module"):
            continue
        wrapper = func.value.value
        if not any(isinstance(v, cst.Call) and name_of(v.func) in ("DDP", "DistributedDataParallel")
                   and module.same_holder(v, call, wrapper) for v in module.assigned(CODE(wrapper))):
            continue
        if any(isinstance(a, cst.Call) and CODE(a.func) == "torch.save" for a in module.ancestors(call)) \
                or _assigned_then_saved(module, call, saved):
            yield func, func.with_changes(value=wrapper)


def _assigned_then_saved(module: Module, call: cst.Call, saved: set[str]) -> bool:
    statement = next((a for a in module.ancestors(call) if isinstance(a, (cst.Assign, cst.AnnAssign))), None)
    if statement is None:
        return False
    bases = [t.value if isinstance(t, cst.Subscript) else t for t in _targets(statement)]
    return any(CODE(b) in saved for b in bases)


def map_location_removed(module: Module):
    """`torch.load(p, map_location=device)` -> `torch.load(p)`, where no rank-0 test guards the load."""
    for call in module.calls():
        arg = keyword(call, "map_location")
        if CODE(call.func) != "torch.load" or arg is None or module.under_rank_zero(call):
            continue
        args = [a for a in call.args if a is not arg]
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        yield call, call.with_changes(args=args)


def sampler_replaced_by_shuffle(module: Module):
    """`DataLoader(ds, sampler=DistributedSampler(ds))` -> `DataLoader(ds, shuffle=True)`: every process
    reads the whole set; a training loader only (no val/test/eval in its or its sampler's name, not
    read only by calls named for evaluation)."""
    for call in (c for c in module.calls() if name_of(c.func) == "DataLoader"):
        arg = keyword(call, "sampler")
        if arg is None or keyword(call, "batch_sampler") is not None or not _samplers(module, arg.value):
            continue
        target = next((a for a in module.ancestors(call) if isinstance(a, (cst.Assign, cst.AnnAssign))), None)
        named = CODE(arg.value) + (" ".join(CODE(t) for t in _targets(target)) if target is not None else "")
        if EVALUATION.search(named) or _evaluated_only(module, call):
            continue
        true = cst.Name("True")
        shuffle = keyword(call, "shuffle")
        args = [a.with_changes(value=true) if a is shuffle else a for a in call.args if a is not arg or shuffle is None]
        args = [a.with_changes(keyword=cst.Name("shuffle"), value=true) if a is arg else a for a in args]
        if shuffle is not None and call.args[-1] is arg:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        yield call, call.with_changes(args=args)


def collective_under_rank_zero(module: Module):
    """`dist.barrier()` (or `dist.all_reduce(t)`) on every process -> under the rank-0 test nearest it
    in its function (its first rank conjunct), else `if dist.get_rank() == 0:`."""
    for call in module.calls():
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("barrier", "all_reduce")
                and re.search(r"(^|\.)(dist|distributed)$", CODE(func.value))):
            continue
        line = _statement_line(module, call)
        if line is None or any(isinstance(a, cst.If) and _ranky(a.test) for a in module.ancestors(call)):
            continue
        scope = module.scope(call)
        guards = [n for n in module.nodes if isinstance(n, cst.If) and rank_zero(n.test) and module.scope(n) is scope]
        guards.sort(key=lambda g: abs(module.line(g) - module.line(call)))
        test = next((t for t in _conjuncts(guards[0].test) if rank_zero(t)), None) if guards else None
        test = test or cst.parse_expression(f"{CODE(func.value)}.get_rank() == 0")
        yield line, cst.If(test=test, body=cst.IndentedBlock([line.with_changes(leading_lines=[])]),
                           leading_lines=line.leading_lines)


def global_rank_as_device(module: Module):
    """`torch.cuda.set_device(local_rank)` -> `torch.cuda.set_device(rank)`, where the same function
    (or the module) bound a global-rank name before: `rank = dist.get_rank()`, `int(os.environ["RANK"])`."""
    for call in module.calls():
        if name_of(call.func) != "set_device" or len(call.args) != 1 or "local_rank" not in CODE(call.args[0].value):
            continue
        scope, here = module.scope(call), module.line(call)
        ranks = [t for n in module.nodes if isinstance(n, cst.Assign) and module.scope(n) is scope
                 and module.line(n) < here and _global_rank(n.value) for t in _targets(n)
                 if isinstance(t, (cst.Name, cst.Attribute)) and "local" not in CODE(t)]
        if ranks:
            yield call.args[0].value, ranks[-1].deep_clone()


def _global_rank(value: cst.BaseExpression) -> bool:
    code = CODE(value)
    return bool(re.search(r"(?<!local_)get_rank\(\)|\[[\"']RANK[\"']\]|\([\"']RANK[\"']", code))


def local_rank_as_sampler_rank(module: Module):
    """`DistributedSampler(ds, rank=rank)` -> `DistributedSampler(ds, rank=local_rank)`, where the same
    function (or the module) bound a local-rank name before."""
    for call in module.calls():
        arg = keyword(call, "rank")
        if name_of(call.func) != "DistributedSampler" or arg is None or "local" in CODE(arg.value):
            continue
        scope, here = module.scope(call), module.line(call)
        locals_ = [t for n in module.nodes if isinstance(n, cst.Assign) and module.scope(n) is scope
                   and module.line(n) < here and LOCAL_RANK.search(CODE(n.value)) for t in _targets(n)
                   if isinstance(t, (cst.Name, cst.Attribute))]
        if locals_:
            yield arg.value, locals_[-1].deep_clone()


OPERATORS = (
    Operator("set_epoch-deleted", ("DDP002",), True, set_epoch_deleted,
             "every epoch shuffles in the same order (the sampler's seed plus epoch 0)"),
    Operator("rank0-guard-removed", ("DDP006",), False, rank_zero_guard_removed,
             "every process writes the same checkpoint file at once"),
    Operator("module-dropped", ("DDP007",), False, module_dropped,
             "the checkpoint's keys start with `module.`: it loads into the bare model nowhere"),
    Operator("map_location-removed", ("DDP014",), False, map_location_removed,
             "every process loads the checkpoint's CUDA tensors onto GPU 0"),
    Operator("sampler-to-shuffle", ("DDP021",), True, sampler_replaced_by_shuffle,
             "every process trains on the whole data set: N copies of each batch per epoch"),
    Operator("collective-under-rank0", ("DDP004",), False, collective_under_rank_zero,
             "the other processes never reach the collective: rank 0 waits for ever"),
    Operator("global-rank-as-device", ("DDP001",), False, global_rank_as_device,
             "on the second node the global rank names a GPU that does not exist"),
    Operator("local-rank-as-sampler-rank", ("DDP023",), False, local_rank_as_sampler_rank,
             "on two nodes each node's processes read the same shards, half the data never"),
)


def mutants(source: str, elsewhere: str = "", operators=OPERATORS) -> Iterator[Mutant]:
    """Each operator at each site of `source` where it applies, one mutant each; not in a function
    nothing calls (`elsewhere`: the project's other Python files), where no bug would run."""
    module = Module(source, elsewhere)
    for op in operators:
        for old, new in op.sites(module):
            if module.dead(old):
                continue
            span = module.positions[old]
            yield Mutant(op.name, span.start.line, span.end.line, module.mutate(old, new))


# -- checking and scoring -----------------------------------------------------------------------

def findings(tree: Path, path: str) -> list[tuple[str, int]] | None:
    """`ddpify check PATH` in `tree`, in-process, as the CLI checks one file: (code, line) each;
    None where check stops on an error."""
    from ddpify.check import BUGS, job
    from ddpify.cli.check import _check_one
    from ddpify.inputs import files

    job._project_texts.cache_clear()  # a cache of the project's texts: the mutant is a new text
    here = os.getcwd()
    os.chdir(tree)
    try:
        outcome = _check_one(files.Source(Path(path)), BUGS, False, {}, {})
    finally:
        os.chdir(here)
    return None if outcome.report is None else [(f.code, f.line) for f in outcome.report.findings]


def killed(operator: Operator, original: str, mutant: Mutant, before: list[tuple[str, int]],
           after: list[tuple[str, int]]) -> bool:
    """Does the mutant have a finding of the operator's rules that the original has not (on the
    line the mutant's line maps to, by a line diff; an edited line maps to the line it replaced)
    within NEAR lines of the edited node?"""
    old_of = {}
    for _, i1, i2, j1, j2 in difflib.SequenceMatcher(None, original.splitlines(), mutant.code.splitlines(),
                                                     autojunk=False).get_opcodes():
        old_of.update({j + 1: min(i1 + (j - j1), max(i2 - 1, i1)) + 1 for j in range(j1, j2)})
    for code, line in after:
        at = old_of.get(line, line)
        if code in operator.codes and (code, at) not in before \
                and (operator.anywhere or mutant.line - NEAR <= at <= mutant.end + NEAR):
            return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("trees", type=Path, help="the trees bench/check_sweep.py --whole-repo built (read only)")
    parser.add_argument("--half", choices=("tuning", "heldout", "all"), default="tuning")
    parser.add_argument("--work", type=Path, required=True, help="where the trees are copied and mutated")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print each original's findings")
    args = parser.parse_args()
    from check_sweep import half  # bench/ is this script's folder

    rows = [json.loads(line) for line in args.manifest.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if args.half in ("all", r.get("half") or half(r["repo"]))
            and not any(bug["code"] for bug in r["expected"])]
    tally: dict[str, list[int]] = {op.name: [0, 0] for op in OPERATORS}
    survivors, seen = [], set()
    for row in rows:
        if (row["key"], row["path"]) in seen or not (args.trees / row["key"] / row["path"]).exists():
            continue
        seen.add((row["key"], row["path"]))
        tree = args.work / row["key"]
        if not tree.exists():
            shutil.copytree(args.trees / row["key"], tree)
        file = tree / row["path"]
        original = file.read_text(encoding="utf-8", errors="surrogateescape")
        elsewhere = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(tree.rglob("*.py"))
                              if p != file)
        before = findings(tree, row["path"])
        if before is None:
            print(f"{row['repo']}:{row['path']}: check fails on the original; skipped")
            continue
        if args.verbose:
            print(f"ORIGINAL {row['repo']}:{row['path']}: {' '.join(f'{c}:{n}' for c, n in before)}")
        try:
            for mutant in mutants(original, elsewhere):
                op = next(o for o in OPERATORS if o.name == mutant.operator)
                file.write_text(mutant.code, encoding="utf-8", errors="surrogateescape")
                after = findings(tree, row["path"]) or []
                tally[op.name][1] += 1
                if killed(op, original, mutant, before, after):
                    tally[op.name][0] += 1
                else:
                    survivors.append(f"{row['repo']}@{row['commit'][:7]}:{row['path']}:{mutant.line}: "
                                     f"{op.name} survived ({'/'.join(op.codes)})")
        finally:
            file.write_text(original, encoding="utf-8", errors="surrogateescape")
    print(*survivors, sep="\n")
    for op in OPERATORS:
        k, n = tally[op.name]
        print(f"{op.name:28} {'/'.join(op.codes):8} {k}/{n}")
    k, n = (sum(t[i] for t in tally.values()) for i in (0, 1))
    print(f"{args.half}: {len(seen)} files; killed {k}/{n} mutants ({100 * k / max(n, 1):.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
