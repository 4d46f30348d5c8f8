"""shard-metrics: say where a sum over one process's shard is divided by the full dataset size.

    for inputs, labels in dataloaders[phase]:       # sharded: this process sees 1/N of it
        criterion(model(inputs), labels).backward()
        running_corrects += (preds == labels).sum()
    epoch_acc = running_corrects.double() / dataset_sizes[phase]
->
    # TODO(ddpify): `running_corrects` sums this process's shard only, but is divided by the
    # full dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads about
    # 1/world_size of the true value
    epoch_acc = running_corrects.double() / dataset_sizes[phase]

Training continues correctly (DDP averages gradients); only the printed or logged number is
off. The sum cannot be reduced automatically where the same code also runs over an unsharded
loader (a shared train/val loop), so ddpify says so instead of guessing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.syntax import matchers as mt

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "shard-metrics"
SUMMARY = "flag metrics summed over one shard but divided by the full dataset size (TODO)"

def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for loop in analysis.loaders.sharded_loops:
        sums = {node.target.value for node in facts.findall(loop.body, cst.AugAssign)
                if isinstance(node.target, cst.Name) and isinstance(node.operator, cst.AddAssign)}
        if not sums:
            continue
        scope = facts.scope(loop)
        for stmt in _later_statements(facts, loop, scope):
            for division in facts.findall(stmt, cst.BinaryOperation, lambda b: isinstance(b.operator, cst.Divide)):
                used = mt.names_in(division.left) & sums
                if used and _mentions_full_size(division.right):
                    name = sorted(used)[0]
                    edits.todo(stmt, f"`{name}` sums this process's shard only, but is divided by the full "
                               "dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads "
                               "about 1/world_size of the true value")
                    break


def _later_statements(facts: Facts, loop: cst.For | cst.While, scope: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    """Simple statements of the same function that come after the loop and assign or call
    something (`avg = total / n`, `print(total / n)`)."""
    found = [stmt for _, _, stmt in facts.writes_in(scope)] + facts.calls_of(scope)
    later = {facts.statement(n) for n in found if facts.before(loop, n) and not facts.is_inside(n, loop)}
    return sorted((s for s in later if isinstance(s, cst.SimpleStatementLine)), key=lambda s: facts.spans[s][0])


def _mentions_full_size(node: cst.CSTNode) -> bool:
    """`len(loader.dataset)`, `dataset_sizes[phase]`, `num_samples`..."""
    code = cst.Module([]).code_for_node(node)  # a bare module: no need for the script's own
    return ".dataset" in code or "size" in code.lower() or "num_samples" in code
