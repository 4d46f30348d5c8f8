"""Which loops evaluate, what they accumulate, and whether a split across processes is exact.

An evaluation loop is a `for` over a DataLoader that no training loop reads, with no backward in
reach. Split across processes (every sample to exactly one process), it leaves the single-process
numbers behind only when each value it carries out of the loop is
- a sum over samples: `x += ...` from a number or tensor set just before the loop, adding what
  is visibly a per-sample total (`.sum()`, `reduction="sum"`, `* y.size(0)`, `len(y)`, or
  anything inside a loop over a batch's items), reduced with `reduce_sum` after the loop;
- a list of per-sample values: `xs.extend(...)`/`xs += ...`, `xs.append(...)` per item, or per
  batch when the list is only concatenated afterwards, from `[]`, gathered with `gather_ordered`;
- a meter made afresh for the pass whose figures are plain sums (`meter.update(loss.item(), n)`,
  `ddpify.analysis.meters`): its sums reduced, what its class computes from them computed again.
Anything else keeps the loader whole, and `kept` says why: a value added once per batch
(a mean of per-batch means), a batch counter, `len(loader)`, a running max or average, a method
that accumulates elsewhere (another `meter.update(...)`), an early exit, an accumulator read inside the
loop, prints or writes inside it, or a loop that runs only on a condition that may differ
between processes (its collectives would then hang).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
import libcst as cst

from ddpify.analysis import meters, objects
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref, Scope
from ddpify.analysis.loaders import DATALOADER, Loaders, is_iterable_dataset
from ddpify.analysis.models import Holds, Model, Models, holds_wrapper
from ddpify.analysis.ranks import Ranks
from ddpify.analysis.same_values import same_everywhere
from ddpify.syntax.names import dotted

PER_SAMPLE = ("sum", "size", "shape", "numel", "len")  # calls and attributes that count samples
CONCATENATIONS = {"torch.cat", "torch.concat", "torch.vstack", "torch.hstack", "numpy.concatenate",
                  "numpy.vstack", "numpy.hstack"}
TENSOR_STARTS = {"torch.zeros", "torch.tensor", "torch.zeros_like"}


class Kept(Exception):
    """Why an evaluation loop stays whole."""


@dataclass
class EvalLoop:
    loop: cst.For | cst.Call  # a call for a comprehension (kept whole)
    loader: cst.BaseExpression  # what the loop iterates (inside `enumerate(...)`, `tqdm(...)`)
    sums: list[str] = field(default_factory=list)  # reduced with reduce_sum after the loop
    lists: list[str] = field(default_factory=list)  # gathered with gather_ordered after the loop
    tensors: list[str] = field(default_factory=list)  # sums that start as a tensor (`torch.zeros(3)`)
    # meters made afresh for the pass and only added to in it: owner -> (its fields added to, the assignments of
    # its class that set fields from those: `self.avg = self.sum / self.count`), summed and set again after the loop
    meters: dict[str, tuple[list[str], list[cst.Assign]]] = field(default_factory=dict)
    forwards: list[tuple[cst.Call, Holds | None]] = field(default_factory=list)  # (model call, holds_wrapper)
    kept: str | None = None  # why the loader stays whole; None: split
    kept_wrapped: str | None = None  # why it stays whole once the model is wrapped (a forward elsewhere)


def find(facts: Facts, models: Models, loaders: Loaders) -> list[EvalLoop]:
    """Every evaluation loop over a loader the training leaves whole (`loaders.training` are
    sharded), split or kept with a reason; the forwards of wrapped models in it (`models.refs`),
    and a reason it stays whole that holds only once the models are wrapped (`kept_wrapped`)."""
    if not models.wrapped:
        return []
    loader_calls = facts.calls_to(DATALOADER)
    found = []
    for loop in facts.loops:
        if not isinstance(loop, cst.For) or mt.is_counting(loop.iter) or facts.trains(loop):
            continue
        loader = _behind_wrapper(facts, mt.strip_iteration(loop.iter), loop)
        origins, calls = _loader_sites(facts, loader, loader_calls)
        if not calls or any(c in loaders.training for c in calls) or loop in loaders.sharded_loops:
            continue  # not over a loader, or over a sharded training loader (shard-metrics)
        if not _leaves_values(facts, loop):
            continue  # nothing to reduce (a peek at one batch, a loop that only prints)
        entry = EvalLoop(loop, loader)
        try:
            _judge(facts, models.refs, entry, loop, origins, calls)
        except Kept as why:
            entry.kept = str(why)
        found.append(entry)
    return found + list(_unsplit(facts, loaders, loader_calls))


def _loader_sites(facts: Facts, loader: cst.BaseExpression, loader_calls: list[cst.Call]
                  ) -> tuple[list[cst.BaseExpression], list[cst.Call]]:
    """(where `loader` comes from, the DataLoader calls among them): the objects it may hold
    (ddpify.analysis.objects), when every one of them is a DataLoader the program builds
    (`evaluate(model, dm.val_loader)`, the loader an attribute a data module's `setup()` set;
    `loaders["test"]` of `return {"train": train_loader, "test": test_loader}`, that item only),
    else its origins by name (which take a dict's every item for the one read)."""
    held = objects.of(facts).values(loader)
    made = [c for c in loader_calls if c in held]
    if made and len(made) == len(held):
        return list(made), made
    origins = facts.origins(loader)
    return origins, [c for c in loader_calls if any(facts.is_inside(c, o) for o in origins)]


def _behind_wrapper(facts: Facts, iterated: cst.BaseExpression, loop: cst.For) -> cst.BaseExpression:
    """What a name the loop iterates wraps, where it is bound once, before the loop in its function,
    to a progress bar or `enumerate` over it (`bar = tqdm(val_loader)`, then `for x, y in bar`):
    `val_loader`, which shard_eval then splits inside the wrapper; else `iterated` itself."""
    ref = facts.ref(iterated) if isinstance(iterated, cst.Name) else None
    if ref is None or len(writes := facts.writes(ref)) != 1 or facts.sources(ref) != [writes[0][1]]:
        return iterated
    _, value, stmt = writes[0]
    inner = mt.strip_iteration(value)
    if inner is value or facts.scope(stmt) is not facts.scope(loop) or not facts.before(stmt, loop):
        return iterated
    return inner


def _unsplit(facts: Facts, loaders: Loaders, loader_calls: list[cst.Call]) -> Iterator[EvalLoop]:
    """Evaluations no `for` loop of their own runs: through a loop that also trains (a shared
    `run_epoch(model, val_loader, train=False)`), or in a comprehension (`sum(... for x, y in
    val_loader)`). They stay whole, and say so."""
    shared = [(lp, lp.iter) for lp in facts.batch_loops()]
    comprehensions = [(c, a.value.for_in.iter) for c in facts.calls for a in c.args
                      if isinstance(a.value, (cst.GeneratorExp, cst.ListComp))]
    found: list[tuple[cst.For | cst.Call, cst.BaseExpression]] = [*shared, *comprehensions]
    for node, iterated in found:
        loader = mt.strip_iteration(iterated)
        _, calls = _loader_sites(facts, loader, loader_calls)
        if not any(c not in loaders.training and c not in loaders.iterable for c in calls):
            continue
        why = "it runs through a loop that also trains" if isinstance(node, cst.For) else \
            f"it runs in a comprehension (`{facts.code(node)}`), not in a loop ddpify splits"
        yield EvalLoop(node, loader, kept=why)


def _leaves_values(facts: Facts, loop: cst.For) -> bool:
    """Does the loop build something: `x += ...`, `xs.append(...)`, `meter.update(...)`, or a
    name it sets that is read after it?"""
    for small in _simple_statements(facts, loop):
        if isinstance(small, cst.AugAssign) or isinstance(small, cst.Expr) and \
                isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute):
            return True
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            targets = small.targets if isinstance(small, cst.Assign) else [small]
            if any(_carried(facts, loop, n, small) for t in targets for n in _targets(t.target)):
                return True
    return False


def _judge(facts: Facts, refs: dict[Ref, Model], entry: EvalLoop, loop: cst.For,
           origins: list[cst.BaseExpression], calls: list[cst.Call]) -> None:
    """Why `entry`, the evaluation `loop`, stays whole (raises `Kept`), or what it reduces."""
    name = facts.code(entry.loader)
    if not all(any(facts.is_inside(c, o) for c in calls) for o in origins):
        raise Kept(f"`{name}` may also hold something other than a DataLoader of this script")
    if any(is_iterable_dataset(facts, c) for c in calls):
        raise Kept("it reads an IterableDataset, which a sampler cannot split")
    _check_runs_everywhere(facts, loop)
    if loop.orelse is not None:
        raise Kept("its `else` block runs before the processes' shares could be added up")
    _check_exits(facts, loop)
    _check_batch_averages(facts, entry, loop)
    for stmt in _simple_statements(facts, loop):
        _visit(facts, entry, loop, stmt)
    for call in facts.calls_in(loop.body):
        holds = holds_wrapper(facts, refs, called_model(call)) if dotted(called_model(call)) else None
        if holds is not None:
            entry.forwards.append((call, holds))
        for arg in call.args:
            if entry.kept_wrapped is None and dotted(arg.value) and holds_wrapper(facts, refs, arg.value) is not None:
                entry.kept_wrapped = (f"the model is passed to `{facts.code(call.func)}(...)` inside the loop, "
                                      "which may run a forward that waits for the other processes")


def called_model(call: cst.Call) -> cst.BaseExpression:
    """What a forward call runs: `model` of `model(x)`, and of `model.forward(x)` (a course's
    validation loop calls the wrapper's own forward, which broadcasts its buffers: a collective)."""
    func = call.func
    return func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func


def _check_runs_everywhere(facts: Facts, node: cst.CSTNode, depth: int = 3) -> None:
    """Every condition on the way to `node` (here and around the calls of its function) is the
    same on every process, and no file is written around it (main-process-only guards that)."""
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            break
        if isinstance(anc, (cst.If, cst.While)) and not mt.is_main_guard(anc) and not same_everywhere(facts, anc.test):
            raise Kept(f"it runs only while `{facts.code(anc.test)}`, which may differ between processes")
        if isinstance(anc, cst.ExceptHandler):
            raise Kept("it runs in an `except` block, which may run on some processes only")
        if isinstance(anc, cst.With) and any(mt.is_open_for_writing(i.item) for i in anc.items):
            raise Kept("it runs inside a file write, which only the main process makes")
    func = facts.scope(node)
    if isinstance(func, cst.FunctionDef) and depth > 0:
        for call in facts.call_sites(func):
            _check_runs_everywhere(facts, call, depth - 1)


def _check_exits(facts: Facts, loop: cst.For) -> None:
    """A `return` anywhere in the loop, or a `break` of the loop itself (not of a loop inside it)."""
    for exit_ in [*facts.breaks, *facts.returns]:
        if facts.is_inside(exit_, loop.body) and facts.scope(exit_) is facts.scope(loop) and \
                (isinstance(exit_, cst.Return) or next(facts.enclosing_loops(exit_), loop) is loop):
            raise Kept(f"the loop may stop early (`{facts.code(exit_).strip()}`)")


def _check_batch_averages(facts: Facts, entry: EvalLoop, loop: cst.For) -> None:
    """`len(loader)` next to the loop (a mean of per-batch means) or the loop index read after it."""
    scope = facts.scope(loop)
    name = facts.code(entry.loader)
    names = {name, facts.code(mt.strip_iteration(loop.iter))}  # the loader, and a progress bar over it
    for func in facts.uses("len", scope):
        call = facts.parent(func)
        if isinstance(call, cst.Call) and call.func is func and call.args and not facts.before(call, loop) \
                and facts.code(call.args[0].value) in names:
            division = facts.parent(call)
            if isinstance(division, cst.BinaryOperation) and isinstance(division.operator, cst.Divide):
                raise Kept(f"the loss is averaged per batch (`{facts.code(division)}`), and the batches "
                           "differ once split")
            raise Kept(f"it reads `len({name})`, the number of batches, which differs once split")
    targets = {n.value for n in _targets(loop.target)}
    for target in targets:
        if _read_after(facts, loop, target):
            raise Kept(f"`{target}` (the batch) is read after the loop")


def _simple_statements(facts: Facts, loop: cst.For) -> Iterator[cst.BaseSmallStatement]:
    """The simple statements of the loop's body, in its own scope."""
    for stmt in facts.findall(loop.body, cst.SimpleStatementLine):
        if facts.scope(stmt) is facts.scope(loop):
            yield from stmt.body


def _visit(facts: Facts, entry: EvalLoop, loop: cst.For, small: cst.BaseSmallStatement) -> None:
    """One statement of the loop body: an accumulation, a per-batch temporary, or a reason to stay whole."""
    if isinstance(small, cst.AugAssign):
        target = small.target.value if isinstance(small.target, cst.Subscript) else small.target
        if not isinstance(target, cst.Name):
            raise Kept(f"`{facts.code(small.target)}` accumulates where ddpify cannot reduce it")
        if not isinstance(small.operator, cst.AddAssign):
            raise Kept(f"`{facts.code(small).strip()}` is not a sum")
        _accumulator(facts, entry, loop, target.value, small)
        if target is not small.target and target.value not in entry.tensors:  # `total[c] += ...`
            raise Kept(f"`{facts.code(small.target)}` accumulates into `{target.value}`, which does not start "
                       "as a tensor")
    elif isinstance(small, (cst.Assign, cst.AnnAssign)):
        targets = small.targets if isinstance(small, cst.Assign) else [small]
        for target in (n for t in targets for n in _targets(t.target)):
            if _carried(facts, loop, target, small):
                raise Kept(f"`{target.value}` is carried out of the loop by `{facts.code(small).strip()}`, "
                           "which is not a sum over samples")
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        if mt.is_call_of(call, "print"):
            raise Kept("it prints inside the loop (the main process would print its share only)")
        if mt.is_method_call(call, "append", "extend") and isinstance(call.func, cst.Attribute) and \
                isinstance(call.func.value, cst.Name):
            _accumulator(facts, entry, loop, call.func.value.value, small)
        elif not _meter(facts, entry, loop, call):
            raise Kept(f"`{facts.code(call)}` may accumulate where ddpify cannot reduce it")


def _meter(facts: Facts, entry: EvalLoop, loop: cst.For, call: cst.Call) -> bool:
    """`meter.update(loss.item(), x.size(0))` of a meter made afresh for this pass (`meter =
    AverageMeter()` before the loop), only added to in it, whose methods only add to fields that
    start as numbers and set fields from those (`ddpify.analysis.meters`): its figures are sums
    over samples, added up after the loop as a sum is, and what its class computes from them
    computed again (`entry.meters`). Not a meter of the process's own time."""
    owner = call.func.value if isinstance(call.func, cst.Attribute) else None
    if not isinstance(owner, cst.Name) or owner.value == "self" or meters.reads_clock(facts, call):
        return False
    methods = facts.user_functions(call)
    if not methods or not all(facts.enclosing_class(m) is not None and meters.adds_to_self(facts, m) for m in methods):
        return False
    shape = meters.plain_sums(facts, methods)
    if shape is None or not meters.made_afresh(facts, loop, owner.value, methods, shape[0]) or \
            not meters.only_added_to(facts, loop, owner.value, {m.name.value for m in methods}):
        return False
    entry.meters[owner.value] = shape
    return True


def _accumulator(facts: Facts, entry: EvalLoop, loop: cst.For, name: str, update: cst.AugAssign | cst.Expr) -> None:
    if name in entry.sums or name in entry.lists:
        kind = "list" if name in entry.lists else "sum"
    else:
        start = _start(facts, loop, name)
        kind = _kind(facts, start, name)
        _check_unread_inside(facts, loop, name)
        (entry.lists if kind == "list" else entry.sums).append(name)
        if isinstance(start, cst.Call):
            entry.tensors.append(name)
    per_item = _in_item_loop(facts, update, loop)
    if kind == "sum" and isinstance(update, cst.AugAssign) and not per_item and \
            not _counts_samples(facts, update.value, loop):
        what = "counts batches" if isinstance(update.value, cst.Integer) else \
            f"adds one value per batch (`{facts.code(update.value)}`)"
        raise Kept(f"`{name}` {what}, and the batches differ once split")
    if kind == "list" and not per_item and _adds_one_item(update):
        _check_only_concatenated(facts, loop, name)


def _adds_one_item(update: cst.AugAssign | cst.Expr) -> bool:
    """`xs.append(v)`, `xs.extend([v])`, `xs += [v]`: one item per batch, unlike `xs.extend(batch.tolist())`."""
    call = update.value
    added = call if isinstance(update, cst.AugAssign) else \
        call.args[0].value if isinstance(call, cst.Call) and call.args else None
    return mt.is_method_call(update.value, "append") or isinstance(added, (cst.List, cst.Tuple))


def _start(facts: Facts, loop: cst.For, name: str) -> cst.BaseExpression:
    """The assignment that sets `name` before the loop, each time the loop is reached."""
    writes = _assignments(facts, facts.scope(loop), name)
    before = [(v, s) for v, s in writes if facts.before(s, loop) and not facts.is_inside(s, loop)]
    if not before:
        raise Kept(f"`{name}` has no start value before the loop")
    value, stmt = before[-1]
    line = facts.statement(stmt)
    reached = facts.parent(line)  # the block that sets it must hold the loop, inside every loop around it
    if reached is None or not facts.is_inside(loop, reached) or any(not facts.is_inside(line, lp) for lp in facts.enclosing_loops(loop)):
        raise Kept(f"`{name}` is not set to its start value every time the loop runs")
    if value is None or isinstance(stmt, cst.AugAssign):
        raise Kept(f"`{name}` changes between its start value and the loop")
    return value


def _assignments(facts: Facts, scope: Scope, name: str) -> list[tuple[cst.BaseExpression | None, cst.CSTNode]]:
    """(value, statement) of every write of `name` in `scope`; `a, b = 0, []` gives each its element
    (None where the value cannot be split)."""
    found: list[tuple[cst.BaseExpression | None, cst.CSTNode]] = []
    for target, value, stmt in facts.writes_in(scope):
        if isinstance(target, cst.Name) and target.value == name:
            found.append((value, stmt))
        elif isinstance(target, (cst.Tuple, cst.List)):
            names = [e.value for e in target.elements]
            if any(isinstance(n, cst.Name) and n.value == name for n in names):
                i = next(i for i, n in enumerate(names) if isinstance(n, cst.Name) and n.value == name)
                split = isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names)
                found.append((value.elements[i].value if split and isinstance(value, (cst.Tuple, cst.List)) else None,
                              stmt))
    return found


def _kind(facts: Facts, value: cst.BaseExpression, name: str) -> str:
    if isinstance(value, cst.List) and not value.elements or isinstance(value, cst.Call) and \
            mt.is_call_of(value, "list") and not value.args:
        return "list"
    number = value.expression if isinstance(value, cst.UnaryOperation) else value
    if isinstance(number, (cst.Integer, cst.Float)) or isinstance(value, cst.Call) and \
            facts.qualify(value.func) in TENSOR_STARTS:
        return "sum"
    raise Kept(f"`{name}` starts as `{facts.code(value)}`, not a number, tensor or empty list")


def _check_unread_inside(facts: Facts, loop: cst.For, name: str) -> None:
    """The accumulator appears in the loop only as what it updates."""
    for use in _uses_in(facts, loop, name):
        node: cst.CSTNode = use
        parent = facts.parent(node)
        if isinstance(parent, cst.Subscript) and parent.value is node:  # `total[c] += ...`
            node, parent = parent, facts.parent(parent)
        updated = isinstance(parent, cst.AugAssign) and parent.target is node or \
            isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in ("append", "extend")
        if not updated:
            raise Kept(f"`{name}` is read inside the loop, before every process has added its share")


def _in_item_loop(facts: Facts, node: cst.CSTNode, loop: cst.For) -> bool:
    """Inside a loop over a batch's items (not a counting loop) within the evaluation loop."""
    inner = next(facts.enclosing_loops(node), loop)
    return isinstance(inner, cst.For) and inner is not loop and not mt.is_counting(inner.iter)


def _counts_samples(facts: Facts, expr: cst.BaseExpression, loop: cst.CSTNode, depth: int = 2) -> bool:
    """Is `expr` visibly a total over the batch's samples (following names set in the loop, and the
    returns of a function of the program it is the value of)?"""
    if depth and _returns_counts(facts, _unwrapped_number(expr), depth - 1):
        return True
    for node in mt.walk(expr):
        if isinstance(node, cst.Attribute) and node.attr.value in PER_SAMPLE or \
                mt.is_call_of(node, "len", "sum") or _sums_reduction(facts, node) or \
                isinstance(node, cst.Call) and _summing_criterion(facts, node.func):
            return True
    for name in facts.variables_in(expr) if depth else ():
        ref = facts.ref(name)
        if ref is not None and any(facts.is_inside(s, loop) and _counts_samples(facts, v, loop, depth - 1)
               for _, v, s in facts.writes(ref)):
            return True
    return False


def _sums_reduction(facts: Facts, node: cst.CSTNode) -> bool:
    """`reduction="sum"` (a keyword argument whose value says "sum")."""
    return isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "reduction" \
        and "sum" in facts.code(node.value)


def _summing_criterion(facts: Facts, func: cst.BaseExpression) -> bool:
    """Is `func` (a criterion called in the loop) an object built with `reduction="sum"` wherever
    it is made: a loss handed in by the callers (`test(model, loader, nn.CrossEntropyLoss(
    reduction='sum'))`), kept on an object, or bound to a name? Every object it may hold is such a
    construction (`ddpify.analysis.objects`); none that ddpify does not see."""
    if not mt.is_simple_reference(func) or mt.is_name(func, "sum", "len"):
        return False
    sites = objects.of(facts).values(func)
    return bool(sites) and all(isinstance(site, cst.Call) and any(_sums_reduction(facts, a) for a in site.args)
                               for site in sites)


def _unwrapped_number(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`f(x).item()`, `float(f(x))`, `int(f(x))` -> `f(x)`."""
    while isinstance(expr, cst.Call):
        if mt.is_method_call(expr, "item") and isinstance(expr.func, cst.Attribute) and not expr.args:
            expr = expr.func.value
        elif mt.is_call_of(expr, "float", "int") and len(expr.args) == 1:
            expr = expr.args[0].value
        else:
            break
    return expr


def _returns_counts(facts: Facts, expr: cst.BaseExpression, depth: int) -> bool:
    """`correct += count_correct(output, target)`, a function of the program (not a method) whose
    every return is a total over the batch's samples (`return pred.argmax(dim=1).eq(labels).sum().item()`).
    Not a model's call: its forward reads `x.size(0)` and returns one value per sample."""
    if not isinstance(expr, cst.Call):
        return False
    functions = facts.user_functions(expr)
    return bool(functions) and all(facts.enclosing_class(f) is None and facts.returned(f) and
                                   all(_counts_samples(facts, v, f, depth) for v in facts.returned(f))
                                   for f in functions)


def _check_only_concatenated(facts: Facts, loop: cst.For, name: str) -> None:
    """A list of one item per batch is exact only when it is read as one concatenation."""
    uses = _reads_after(facts, loop, name)
    store = next((n for n in uses if _is_store(facts, n)), None)  # `preds = torch.cat(preds)`: the list ends
    for node in uses:
        if store is not None and not facts.before(node, store) and not facts.is_inside(node, facts.statement(store)):
            break
        if node is store:
            continue
        arg = facts.parent(node)
        call = facts.parent(arg) if arg is not None else None
        if not (isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and facts.qualify(call.func) in CONCATENATIONS):
            raise Kept(f"`{name}` holds one item per batch, and the batches differ once split")


def _uses_in(facts: Facts, loop: cst.For, name: str) -> list[cst.Name]:
    return [n for n in facts.uses(name, facts.scope(loop)) if facts.is_inside(n, loop.body)]


def _reads_after(facts: Facts, loop: cst.For, name: str) -> list[cst.Name]:
    """The uses of `name` after the loop, in its function; not a lambda's own parameter of that name
    (`filenameToPILImage = lambda x: Image.open(x)`, in a module of the program merged after it)."""
    return [n for n in facts.uses(name, facts.scope(loop)) if facts.before(loop, n) and not facts.is_inside(n, loop)
            and not _lambdas_own(facts, n)]


def _lambdas_own(facts: Facts, name: cst.Name) -> bool:
    """Is `name` a parameter of a lambda around it (or the parameter itself)?"""
    return any(isinstance(a, cst.Lambda) and any(p.name.value == name.value for p in
                                                 (*a.params.posonly_params, *a.params.params, *a.params.kwonly_params))
               for a in facts.ancestors(name))


def keeps_only_its_last_batch(facts: Facts, loop: cst.For) -> bool:
    """Does each batch of `loop` leave nothing behind that the next batch does not overwrite: no
    `+=`, no call made for its effect (`xs.append(...)`, `meter.update(...)`, `writer.add_scalar(...)`),
    no store into an attribute or an item, no `return` from inside it, no name read before the
    batch sets it (`best = max(best, acc)`), and no function of the program called there that
    stores into its object (a metric class's `__call__` that adds to `self.correct`)? What such a
    loop hands on after it is its last batch's values: no figure over the data set.

        for x in test_loader:
            output = model(x)
            loss = criterion(output, x)      # overwritten each batch
        log(loss.item())                     # the last batch's loss
    """
    return _leaves_behind(facts, loop, keyed=False) is not None


def trims_the_padding(facts: Facts, ranks: Ranks, loop: cst.For) -> bool:
    """Does `loop` take a DistributedSampler's repeats back out of what it counts: an `if` in it
    that subtracts (`-=`) under a test comparing the rank with the number of samples the sampler
    pads, as the program computes it, a length modulo the number of processes (`padded =
    (world_size - len(val_idx) % world_size) % world_size`)? The sampler repeats the set's first
    samples, one on each of the first `padded` ranks; such a test picks those ranks out.

        padded = (world_size - len(val_idx) % world_size) % world_size
        for i, (x, y) in enumerate(val_loader):
            total = torch.tensor(len(y))
            if i == 0 and rank < padded:     # this rank's first sample is a repeat
                total -= 1
            dist.reduce(total, dst=0)
    """
    for branch in facts.findall(loop.body, cst.If):
        if not any(isinstance(a.operator, cst.SubtractAssign) for a in facts.findall(branch.body, cst.AugAssign)):
            continue
        for test in mt.conjuncts(branch.test):
            if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
                sides = (test.left, test.comparisons[0].comparator)
                if any(ranks.rank_dependent(s) for s in sides) and any(_padding_count(facts, ranks, s) for s in sides):
                    return True
    return False


def _padding_count(facts: Facts, ranks: Ranks, expr: cst.BaseExpression) -> bool:
    """Is `expr`, or every value its name is assigned, computed with a length modulo the number of
    processes (`(world_size - len(ds) % world_size) % world_size`, `len(ds) % dist.get_world_size()`)?"""
    values = [expr] if not dotted(expr) else facts.origins(expr)
    return bool(values) and all(any(
        isinstance(op.operator, cst.Modulo) and ranks.is_world_size(op.right)
        and any(mt.is_call_of(c, "len") for c in facts.findall(op.left, cst.Call))
        for op in facts.findall(value, cst.BinaryOperation)) for value in values)


def keeps_results_by_sample_key(facts: Facts, loop: cst.For) -> bool:
    """Does each batch of `loop` leave behind only results stored by a key its own items carry
    (`preds[int(ids[i])] = p` with `for x, y, idx in loader`, also after the keys are gathered:
    `ids = all_gather(idx)`), besides what `keeps_only_its_last_batch` allows, and at least one
    such store? A sample the loader hands twice (a padding sampler's repeat) rewrites its own
    entry: nothing is counted twice.

        for x, idx in test_loader:
            all_idx = gather(idx)
            for i, p in enumerate(gather(model(x).argmax(1))):
                preds[int(all_idx[i])] = p    # one entry per sample
    """
    return bool(_leaves_behind(facts, loop, keyed=True))


def _leaves_behind(facts: Facts, loop: cst.For, keyed: bool) -> int | None:
    """None where a batch of `loop` leaves behind something the next does not overwrite (but,
    where `keyed`, an item stored by a key the batch's items carry); else how many such keyed
    stores there are."""
    batch = {n.value for n in _targets(loop.target)}  # set afresh by the loop itself
    stores = 0
    for small in _simple_statements(facts, loop):
        if isinstance(small, (cst.AugAssign, cst.Return)) or isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return None
        if keyed and isinstance(small, cst.Assign) and len(small.targets) == 1 \
                and _keyed_by_the_batch(facts, loop, small.targets[0].target, small.value, batch):
            stores += 1
            continue
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            names = [n for t in targets for n in _targets(t)]
            if any(not isinstance(t, (cst.Name, cst.Tuple, cst.List)) for t in targets) or \
                    len(names) != sum(1 for t in targets for _ in mt.findall(t, (cst.Name,))) or \
                    any(n.value not in batch and _read_before_set(facts, loop, n, small) for n in names):
                return None
    if any(_stores_into_its_object(facts, func) for call in facts.findall(loop.body, cst.Call)
           for func in facts.user_functions(call)):
        return None
    return stores


def _keyed_by_the_batch(facts: Facts, loop: cst.For, target: cst.BaseExpression, value: cst.BaseExpression,
                        batch: set[str]) -> bool:
    """Is `target = value` a store into a name's item by a key made from the batch's own items
    (`top5[int(idxs_all[i])] = p`, `idxs_all` set in the loop from the loop's `idxs`), the value not
    reading the container (no `counts[k] = counts[k] + 1`)?"""
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)):
        return False
    container = target.value.value
    if container in batch or any(n.value == container for n in mt.findall(value, cst.Name)):
        return False
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for small in _simple_statements(facts, loop):
        if isinstance(small, cst.Assign):
            for t in small.targets:
                for n in _targets(t.target):
                    assigned.setdefault(n.value, []).append(small.value)
    seen: set[str] = set()
    todo = [n.value for n in mt.findall(target.slice[0].slice.value, cst.Name)]
    while todo:
        name = todo.pop()
        if name in batch:
            return True
        if name in seen:
            continue
        seen.add(name)
        todo += [n.value for v in assigned.get(name, []) for n in mt.findall(v, cst.Name)]
    return False


def _read_before_set(facts: Facts, loop: cst.For, target: cst.Name, stmt: cst.CSTNode) -> bool:
    """Is the name `stmt` sets read in the loop before a batch sets it: carried from batch to batch?"""
    uses = _uses_in(facts, loop, target.value)
    fresh = next((n for n in uses if _is_store(facts, n) and _in_own_body(facts, loop, n)), None)
    return any(not _is_store(facts, n) for n in uses if (facts.before(n, stmt) or facts.is_inside(n, stmt))
               and (fresh is None or not facts.before(fresh, n) or facts.is_inside(n, facts.statement(fresh))))


def _stores_into_its_object(facts: Facts, func: cst.FunctionDef) -> bool:
    """Does a method store into `self` (`self.total += n`, `self.preds.append(p)`)?"""
    return any(dotted(t) is not None and (dotted(t) or "").startswith("self.") for t, _, stmt in facts.writes_in(func)) \
        or any(isinstance(c.func, cst.Attribute) and (dotted(c.func.value) or "").startswith("self")
               and c.func.attr.value in ("append", "extend", "update", "add_", "copy_")
               for c in facts.findall(func, cst.Call))


def _read_after(facts: Facts, loop: cst.For, name: str) -> bool:
    """Is the value `name` has after the loop read (its next use after the loop is no assignment)?"""
    uses = _reads_after(facts, loop, name)
    return bool(uses) and not _is_store(facts, uses[0])


def _is_store(facts: Facts, name: cst.Name) -> bool:
    node: cst.CSTNode | None = name
    parent = facts.parent(name)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List)):
        node, parent = parent, facts.parent(parent)
    return isinstance(parent, cst.AssignTarget) or \
        isinstance(parent, (cst.For, cst.AnnAssign)) and parent.target is node


def _carried(facts: Facts, loop: cst.For, target: cst.Name, stmt: cst.CSTNode) -> bool:
    """A name set in the loop that carries state from batch to batch (read in the loop before it is
    set there: `best = max(best, acc)`) or out of the loop (read after it). A read after a statement
    of the loop's own body that sets it anew for the batch (`inputs = data`, then `inputs =
    inputs.to(device)`) reads this batch's value."""
    if target.value in {n.value for n in _targets(loop.target)}:
        return _read_after(facts, loop, target.value)
    return _read_before_set(facts, loop, target, stmt) or _read_after(facts, loop, target.value)


def _in_own_body(facts: Facts, loop: cst.For, node: cst.CSTNode) -> bool:
    """Does `node` run at every batch of `loop`, before what follows it there: in a statement of the
    loop's body itself, or of a `with` block there (not under an `if`, a `try` or an inner loop)?"""
    for anc in facts.ancestors(facts.statement(node)):
        if anc is loop:
            return True
        if not isinstance(anc, (cst.IndentedBlock, cst.With)):
            return False
    return False


def _targets(node: cst.BaseExpression) -> Iterator[cst.Name]:
    """The names an assignment target binds: `a`, `a, (b, c)`."""
    if isinstance(node, cst.Name):
        yield node
    elif isinstance(node, (cst.Tuple, cst.List)):
        for el in node.elements:
            yield from _targets(el.value)
