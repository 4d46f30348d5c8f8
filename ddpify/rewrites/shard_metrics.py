"""shard-metrics: add up over the processes a sum over one shard that is divided by the full dataset size.

    for inputs, labels in dataloaders[phase]:       # sharded: this process sees 1/N of it
        criterion(model(inputs), labels).backward()
        running_corrects += (preds == labels).sum()
    epoch_acc = running_corrects.double() / dataset_sizes[phase]
->
    for inputs, labels in dataloaders[phase]:       # sharded: this process sees 1/N of it
        criterion(model(inputs), labels).backward()
        running_corrects += (preds == labels).sum()
    running_corrects = sum_over_shards(dataloaders[phase], running_corrects)
    epoch_acc = running_corrects.double() / dataset_sizes[phase]

`sum_over_shards` (runtime) adds the sums up over the processes where that loader is sharded and
leaves them as they are where it is read whole (the 'val' phase of a loop shared with training,
ddpify.analysis.phases, or an evaluation function a caller also runs over the training loader),
so the number printed is the single process's (a DistributedSampler's padding may count up to
world size - 1 samples twice). It is inserted where each sum starts afresh in the statements just
before the loop or the `with` around it (`running_corrects = 0`: one pass's sum), and the loop's
loader can be read again after it (a name, an attribute, `d[phase]`). Elsewhere (a sum carried
over passes, which adding up after each pass would count again; `for x in DataLoader(...)`) a
TODO says to all_reduce it. Training itself is right either way (DDP averages gradients); only
the printed or logged number is at stake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis.loaders import drawn_from
from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "shard-metrics"
SUMMARY = "add up over the processes a sum over one shard divided by the full dataset size (else a TODO)"

def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for loop in analysis.loaders.sharded_loops:
        sums = {node.target.value for node in facts.findall(loop.body, cst.AugAssign)
                if isinstance(node.target, cst.Name) and isinstance(node.operator, cst.AddAssign)}
        if not sums:
            continue
        scope = facts.scope(loop)
        divided: list[tuple[str, cst.CSTNode]] = []  # (a sum, a statement dividing it by the full size)
        for stmt in _later_statements(facts, loop, scope):
            for left, right in _divisions(facts, stmt):
                used = mt.names_in(left) & sums
                if used and _full_size(facts, right, stmt):
                    divided.append((sorted(used)[0], stmt))
        names = sorted({name for name, _ in divided})
        loader = drawn_from(facts, loop.iter) if isinstance(loop, cst.For) else None
        if names and loader is not None and _rereadable(loader) and set(names) <= _restarted(facts, loop):
            summed = ", ".join(names)
            edits.insert_after(loop, f"{summed} = sum_over_shards({facts.code(loader)}, {summed})\n")
            edits.add_import("ddpify_runtime", "sum_over_shards")
            edits.record(loop, f"{', '.join(f'`{n}`' for n in names)} summed over the processes after the loop "
                         f"(sum_over_shards, where `{facts.code(loader)}` is sharded): each is divided by the "
                         "full dataset size")
            continue
        for name, flagged in divided:
            edits.todo(flagged, f"`{name}` sums this process's shard only, but is divided by the full "
                       "dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads "
                       "about 1/world_size of the true value")


def _rereadable(loader: cst.BaseExpression) -> bool:
    """`train_loader`, `self.loader`, `dataloaders[phase]`: read again after the loop, the same
    loader, with nothing run."""
    if isinstance(loader, cst.Subscript):
        index = loader.slice[0].slice if len(loader.slice) == 1 else None
        return isinstance(index, cst.Index) and isinstance(index.value, (cst.Name, cst.SimpleString)) and \
            dotted(loader.value) is not None
    return dotted(loader) is not None


def _restarted(facts: Facts, loop: cst.For | cst.While) -> set[str]:
    """The names set afresh in the statements before `loop` in its block, or before the `with`
    blocks around it (`running_loss = 0.0`, `correct = 0` above `with torch.no_grad():`): a sum
    that starts there is one pass's, so adding it up over the processes after the loop counts
    each pass once."""
    found: set[str] = set()
    node: cst.CSTNode = loop
    while True:
        block = facts.parent(node)
        body = list(getattr(block, "body", ()))
        for stmt in body[:body.index(node)] if node in body else ():
            for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        found |= {n for n in mt.names_in(target.target)} - mt.names_in(small.value)
        owner = facts.parent(block) if block is not None else None
        if not isinstance(owner, cst.With):
            return found
        node = owner


def _later_statements(facts: Facts, loop: cst.For | cst.While, scope: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    """Simple statements of the same function that come after the loop and assign, call or
    return something (`avg = total / n`, `print(total / n)`, `return total / n`)."""
    returned = [r for r in facts.findall(scope, cst.Return) if facts.scope(r) is scope] \
        if isinstance(scope, cst.FunctionDef) else []
    found = [stmt for _, _, stmt in facts.writes_in(scope)] + facts.calls_of(scope) + returned
    later = {facts.statement(n) for n in found if facts.before(loop, n) and not facts.is_inside(n, loop)}
    return sorted((s for s in later if isinstance(s, cst.SimpleStatementLine)), key=lambda s: facts.spans[s][0])


def _divisions(facts: Facts, stmt: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(dividend, divisor) of each division in `stmt`: `total / n`, and `total /= n`."""
    found = [(b.left, b.right) for b in facts.findall(stmt, cst.BinaryOperation, lambda b: isinstance(b.operator, cst.Divide))]
    return found + [(a.target, a.value) for a in facts.findall(stmt, cst.AugAssign)
                    if isinstance(a.operator, cst.DivideAssign)]


def _full_size(facts: Facts, node: cst.BaseExpression, stmt: cst.CSTNode) -> bool:
    """Is the divisor the full dataset size: written out, or a name of the function that holds it
    (`n = len(self.train_loader.dataset)`, then `correct / n`)?"""
    if _mentions_full_size(node):
        return True
    ref = facts.ref(node, stmt) if isinstance(node, cst.Name) else None
    writes = facts.writes(ref) if ref is not None and ref.scope is facts.scope(stmt) else []
    return bool(writes) and all(isinstance(at, cst.Assign) and _mentions_full_size(value)
                                for _, value, at in writes)  # not a count of its own (`seen += y.size(0)`)


def _mentions_full_size(node: cst.CSTNode) -> bool:
    """`len(loader.dataset)`, `dataset_sizes[phase]`, `num_samples`..."""
    code = cst.Module([]).code_for_node(node)  # a bare module: no need for the script's own
    return ".dataset" in code or "size" in code.lower() or "num_samples" in code
