"""init-distributed: join the process group before anything touches a device.

    args = parser.parse_args()
    device = torch.device("cuda" if use_cuda else "cpu")
->
    args = parser.parse_args()
    init_distributed_mode()
    device = torch.device("cuda" if use_cuda else "cpu")

`init_distributed_mode()` (from `ddpify_runtime`) reads torchrun's or SLURM's environment,
binds the process to its GPU (`LOCAL_RANK`) before `init_process_group`, picks nccl or gloo,
and without a launcher forms a one-process group, so `python train.py` still runs. It
destroys the group at exit.

Where it goes: right after argument parsing (after the call of a `parse_args()` helper); else
at the top of the function the `if __name__ == "__main__":` block does nothing but call (`main()`,
beside imports and constants), or at the top of the main block where it does more (a data helper it
calls first would join the group for whatever else imports it); else after the imports of a script
that runs at top level. In a program, a module of the project whose top-level code
shards a loader, wraps a model or draws random numbers (builds a model: its weights) when it is
imported (`loaders = {"train": DataLoader(...)}` in `data.py`, imported before `main()` runs; or a
class body's `NET = Net()`, which runs on import too) calls it too, after its imports (a second call does nothing). A module that only defines a trainer (no entry point, nothing
run at import) gets a TODO instead: its importer must initialise. `CUDA_VISIBLE_DEVICES` set in
the script gets a TODO too: it would pin every process to one GPU.

A program that places nothing on an accelerator (`accelerator.places_on_accelerator`: no `.cuda()`,
no `"cuda"` device, in any file it reads) trained on the CPU on a GPU machine too, and keeps doing so:

    args = parser.parse_args()
    model = Net()
->
    args = parser.parse_args()
    init_distributed_mode(backend="gloo")
    model = Net()

(without it a GPU machine's process group would be nccl, which holds no CPU tensors, and the model
wrapped on the CPU would be moved to the GPU with its inputs left behind).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.accelerator import places_on_accelerator
from ddpify.syntax import matchers as mt

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "init-distributed"
SUMMARY = "call init_distributed_mode() after argument parsing (torchrun, SLURM or one plain process)"

CALL = "init_distributed_mode()\n"
ON_CPU = 'init_distributed_mode(backend="gloo")\n'


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for stmt in _pinned_gpus(facts):
        edits.todo(stmt, "CUDA_VISIBLE_DEVICES set here would show every process the same GPU: remove it "
                   "and choose GPUs on the launcher's command line")
    anchor = _after_parsing(facts)
    after = anchor is not None and not _runs_entry(facts, anchor)
    if anchor is None and _is_library(facts):
        edits.todo(facts.module.body[0], "this module trains but runs nothing when imported: call "
                   "init_distributed_mode() (from ddpify_runtime) first thing in the script that uses it")
        return
    if anchor is None:
        anchor = _entry_point_start(facts)
    earlier = _needed_earlier(facts, analysis, anchor)
    if earlier is not None:
        anchor, after = earlier, False
    on_cpu = not places_on_accelerator(facts)
    call = ON_CPU if on_cpu else CALL
    (edits.insert_after if after else edits.insert_before)(anchor, call)
    edits.add_import("ddpify_runtime", "init_distributed_mode")
    edits.record(anchor, "init_distributed_mode() joins the process group (torchrun, SLURM, or one process)" + (
        "; gloo, as the program places nothing on an accelerator (no .cuda(), no \"cuda\" device): it trains on "
        "the CPU on a GPU machine too" if on_cpu else ""))
    for first in _on_import(facts, analysis):
        if first is anchor and not after:  # the entry's own call already goes there
            continue
        edits.insert_before(first, call)
        edits.record(first, "init_distributed_mode() joins the process group when this module is imported: "
                     "its top-level code shards a loader, wraps a model or draws random numbers")


def _pinned_gpus(facts: Facts) -> Iterator[cst.CSTNode]:
    """`os.environ["CUDA_VISIBLE_DEVICES"] = "0"` statements."""
    for target, value, stmt in facts.assigns:
        if isinstance(target, cst.Subscript) and mt.is_attribute(target.value, "environ") and len(target.slice) == 1 \
                and isinstance(target.slice[0].slice, cst.Index) and isinstance(target.slice[0].slice.value, cst.SimpleString) \
                and target.slice[0].slice.value.value[1:-1] == "CUDA_VISIBLE_DEVICES":
            yield facts.statement(stmt)


def _is_library(facts: Facts) -> bool:
    """No entry point and nothing run at top level: only imports, definitions and constants."""
    return not any(mt.is_main_guard(s) for s in facts.module.body) and all(
        mt.is_preamble(s) or mt.sole(s, (cst.Assign, cst.AnnAssign)) is not None
        for s in facts.module.body) and not any(
        facts.user_functions(c) for c in facts.calls if facts.scope(c) is facts.module)


def _after_parsing(facts: Facts) -> cst.CSTNode | None:
    calls = mt.parse_args_calls(facts)
    if not calls:
        return None
    stmt = facts.statement(calls[0])
    if mt.sole(stmt, cst.Return) is not None:
        func = facts.scope(stmt)
        sites = facts.call_sites(func) if isinstance(func, cst.FunctionDef) else []
        return facts.statement(sites[0]) if sites else None
    return stmt


def _runs_entry(facts: Facts, stmt: cst.CSTNode) -> bool:
    """`main(parser.parse_args())`: the statement that parses also enters the program's code, so
    the call goes before it (it reads the environment, not the arguments)."""
    parsing = mt.parse_args_calls(facts)[0]
    return any(not facts.is_inside(parsing, f) for c in facts.calls_in(stmt) if not facts.is_inside(c, parsing)
               for f in facts.user_functions(c))  # not the helper that parses (`args = get_args()`)


def _entry_point_start(facts: Facts) -> cst.CSTNode:
    main_block = next((i for i in facts.module.body if isinstance(i, cst.If) and mt.is_main_guard(i)), None)
    if main_block is not None:
        running = [s for s in main_block.body.body if not mt.is_preamble(s) and any(True for _ in facts.calls_in(s))]
        for call in facts.calls_in(running[0]) if len(running) == 1 else ():  # `main()`: its first statement
            if isinstance(call.func, cst.Name) and call.func.value not in facts.classes:
                for func in facts.user_functions(call):
                    return _first_statement(func.body.body)
        return main_block.body.body[0]
    return next((s for s in facts.module.body if not mt.is_preamble(s)), facts.module.body[-1])


def _needed_earlier(facts: Facts, analysis: Analysis, anchor: cst.CSTNode) -> cst.CSTNode | None:
    """Where the call must go instead of `anchor` when code at module level wraps a model,
    shards a loader or draws from numpy's or Python's generator (synthetic data) before `anchor`
    runs (a script without `main()` whose main block calls a `train()` helper, or starts after a
    module-level loader): the main block's first statement when that code is in the main block,
    else the module's first statement after the imports. None when `anchor` already comes first."""
    func = facts.scope(anchor)
    entered = anchor if not isinstance(func, cst.FunctionDef) else func
    sites = [m.anchor for m in analysis.models.wrapped] + list(analysis.loaders.training)
    for stmt, main_block, owner in _top_level(facts):
        if _reaches(facts, stmt, lambda node: node is entered or facts.is_inside(entered, node)):
            return None  # `anchor` runs first
        if _reaches(facts, stmt, lambda node: any(facts.is_inside(site, node) or facts.is_inside(node, site)
                                                  for site in sites)  # (a part of a compound site)
                    or any(_draws(facts, c) for c in facts.calls_in(node))):
            return main_block.body.body[0] if main_block is not None else \
                next(s for s in facts.module.body if not mt.is_preamble(s) or s is owner)
    return None


def _on_import(facts: Facts, analysis: Analysis) -> list[cst.CSTNode]:
    """The first statement after the imports of each other module of a program whose top-level
    code (run when it is imported, maybe before the entry's call) shards a loader, wraps a model
    or draws from numpy's or Python's generator: `init_distributed_mode()` goes there too (a
    second call does nothing). `dataloader_train = DataLoader(...)` at the top of `data.py`, which
    `main.py` imports first, builds its DistributedSampler before `main()` has joined the group."""
    if facts.program is None:
        return []
    library = facts.program.library
    sites = [m.anchor for m in analysis.models.wrapped] + list(analysis.loaders.training)
    firsts: dict[str, cst.CSTNode] = {}  # by the module's name
    needed: list[cst.CSTNode] = []
    for stmt in facts.module.body:
        run = _class_body(stmt) if isinstance(stmt, cst.ClassDef) else [stmt]
        if stmt not in library or not run or mt.is_preamble(stmt) and not isinstance(stmt, cst.ClassDef):
            continue
        first = firsts.setdefault(facts.program.part_of(stmt, facts.parents).name, stmt)
        if first not in needed and any(_reaches(
                facts, part, lambda node: any(facts.is_inside(site, node) for site in sites)
                or any(_draws(facts, c) or _builds_module(facts, c) for c in facts.calls_in(node))) for part in run):
            needed.append(first)
    return needed


def _class_body(cls: cst.ClassDef) -> list[cst.CSTNode]:
    """The statements of a class body that run when the class is defined (`NET = Net()` in `class
    CONFIG:`), nested classes' included; not its methods."""
    found: list[cst.CSTNode] = []
    for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.ClassDef):
            found += _class_body(stmt)
        elif not isinstance(stmt, cst.FunctionDef) and not mt.is_docstring(stmt):
            found.append(stmt)
    return found


def _builds_module(facts: Facts, call: cst.Call) -> bool:
    """A module built when a module of the program is imported (`MODELS = [Net()]` in a config
    class's body): its weights are drawn from torch's generator, seeded from the operating system
    in each process, so a model no DistributedDataParallel broadcasts (a frozen or unused network
    built beside the trained ones) would differ between processes unless the group is joined, and
    every process given rank 0's state, first. Not a loss (`nn.CrossEntropyLoss()`: no weights drawn)."""
    return objects.of(facts).kind(call) == objects.MODEL and not (facts.qualify(call.func) or "").endswith("Loss")


_STATE = frozenset({"seed", "get_state", "set_state", "getstate", "setstate"})


def _draws(facts: Facts, call: cst.Call) -> bool:
    """A draw from numpy's or Python's global generator: seeded from the operating system in
    each process, so one made before `init_distributed_mode()` shares rank 0's state differs
    between processes (so is torch's: `_builds_module`). Not a seed or a state set or read
    (`np.random.seed(0)` at the top of a module): it draws nothing, and the call that joins the
    group gives every process rank 0's state whatever was set before."""
    name = facts.qualify(call.func) or ""
    return name.startswith(("numpy.random.", "random.")) and name.rpartition(".")[2] not in _STATE


def _top_level(facts: Facts) -> Iterator[tuple[cst.CSTNode, cst.If | None, cst.CSTNode]]:
    """(part, the main block holding it or None, the module's statement holding it) for what runs at
    import, in order: the parts of a compound statement (`for`, `while`, `with`, `if`, `try`) one by
    one (`_in_order`), so that a fold loop building its loader before it calls the helper that builds
    the model is seen to shard first; and the statements of a class body (`_class_body`), which run
    when the class is defined: a configuration class whose body builds the loader and wraps the model
    (`class Config: train_loader = DataLoader(...)`, `model = ...`) needs the group joined before it,
    where a call in the main block came after the class had built its DistributedSampler."""
    for stmt in facts.module.body:
        if isinstance(stmt, cst.If) and mt.is_main_guard(stmt):
            yield from ((part, stmt, stmt) for s in stmt.body.body for part in _in_order(s))
        elif isinstance(stmt, cst.ClassDef):
            yield from ((part, None, stmt) for s in _class_body(stmt) for part in _in_order(s))
        elif not isinstance(stmt, cst.FunctionDef):
            yield from ((part, None, stmt) for part in _in_order(stmt))


def _in_order(stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`stmt`, or for a compound statement its header's expressions and then its blocks'
    statements, in the order they run (both branches of an `if`: either may run)."""
    heads: list[cst.CSTNode]
    blocks: list[cst.CSTNode | None]
    if isinstance(stmt, cst.For):
        heads, blocks = [stmt.iter], [stmt.body, stmt.orelse]
    elif isinstance(stmt, (cst.While, cst.If)):
        heads, blocks = [stmt.test], [stmt.body, stmt.orelse]
    elif isinstance(stmt, cst.With):
        heads, blocks = [item.item for item in stmt.items], [stmt.body]
    elif isinstance(stmt, cst.Try):
        heads, blocks = [], [stmt.body, *stmt.handlers, stmt.orelse, stmt.finalbody]
    else:
        yield stmt
        return
    yield from heads
    for block in blocks:
        block = block.body if isinstance(block, (cst.Else, cst.ExceptHandler, cst.Finally)) else block
        if isinstance(block, cst.If):  # `elif`
            yield from _in_order(block)
        elif isinstance(block, cst.IndentedBlock):
            for inner in block.body:
                yield from _in_order(inner)
        elif isinstance(block, cst.SimpleStatementSuite):  # `if cond: x = f()` on one line
            yield block


def _reaches(facts: Facts, stmt: cst.CSTNode, found: Callable[[cst.CSTNode], bool], depth: int = 3) -> bool:
    """Does running `stmt` run a node for which `found` holds (itself, or a function it calls)?"""
    if found(stmt):
        return True
    return depth > 0 and any(_reaches(facts, f, found, depth - 1)
                             for c in facts.calls_in(stmt) for f in facts.user_functions(c))


def _first_statement(body: Sequence[cst.CSTNode]) -> cst.CSTNode:
    """The first statement after a docstring."""
    if len(body) > 1 and mt.is_docstring(body[0]):
        return body[1]
    return body[0]
