"""Sweep real multi-file projects: convert each entry script as a program, and say for each
whether it converted, how many files changed, its warnings, and which gaps of the converted
program no record of the conversion covers ("silent").

    python bench/projects_sweep.py /tmp/sweep/repo-a/train.py /tmp/sweep/repo-b/main.py ...

The verdict reads the conversion's own facts and records (`convert.plan_program`), not the
text of its output or of its warnings. In every file of the program, reached from the entry:

- writes: each statement that writes a file (`torch.save`, `open(..., "w")`, json/pickle/numpy
  dumps, SummaryWriter and wandb, CSV `to_csv`) is guarded by main-process-only (a record on it
  or on a statement around it), sits under a rank check of the user's, carries a warning, or
  is in a function whose every call is covered so; a function no call of the program reaches
  is not on the path (counted apart as `unreached`);
- loaders: each loop that trains over batches draws them from DataLoaders that shard-data
  sharded, or the loop or its loaders carry a warning;
- models: each optimizer trains a model wrap-model wrapped (a record at the model), or its
  statement carries a warning;
- epochs: each loop over a sharded loader is repeated by a loop that set-epoch edited (in its
  function or around a call of it, up to 4 calls out), or the loop or loader carries a warning.

Convert copies of the projects (never commit them): this writes nothing, it only reads.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.convert import convert_program, plan_program
from ddpify.analysis.loaders import DATALOADER
from ddpify.analysis.same_values import is_rank_test
from ddpify.inputs.program import load
from ddpify.output.report import WARNING
from ddpify.rewrites import main_process_only as mpo

# the records that may cover each kind of gap: the rewrite that owns it, ddpify.analysis.reach's warnings
MODELS = ("wrap-model", "ddpify")
LOADERS = ("shard-data", "ddpify")
EPOCHS = ("set-epoch", "ddpify")


def sweep(entry: Path) -> dict:
    start = time.perf_counter()
    try:
        program = load(entry, entry.read_bytes())
        result = convert_program(program)
    except Exception as exc:  # the failure class is the point of the sweep
        return {"entry": str(entry), "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
    seconds = time.perf_counter() - start
    files = [result, *result.modules.values()]
    warnings = [c for r in files for c in r.changes if c.kind == WARNING]
    row = {"entry": str(entry), "files": len(files), "changed": sum(r.changed for r in files),
           "warnings": len(warnings), "unseen": sum(w.rewrite == "ddpify" for w in warnings),
           "note": next((c.message for c in result.changes if c.kind == "note"), ""),
           "seconds": round(seconds, 2)}
    analysis, edits, gate = plan_program(program)
    if gate is None:
        row.update(audit(program, analysis, edits))
    return row


def audit(program, analysis, edits) -> dict:
    """{category: [file:line of each gap no record covers]}, `silent`: their count, and the
    number of each kind checked."""
    facts = analysis.facts
    by_node: dict[cst.CSTNode, list[tuple[str, str]]] = {}
    for record in edits.records:
        by_node.setdefault(record.node, []).append((record.rewrite, record.kind))

    def recorded(node, *rewrites) -> bool:
        """A record of one of `rewrites` (the one that owns the gap, or "ddpify", the warnings of
        ddpify.analysis.reach) on `node`, on a statement around it, or on a node inside it."""
        around = [node, *facts.ancestors(node)]
        around += [a.test for a in around if isinstance(a, cst.If)]  # `if save and is_main_process():`
        if any(r in rewrites for n in around for r, _ in by_node.get(n, ())):
            return True
        return any(facts.is_inside(n, node) and any(r in rewrites for r, _ in records)
                   for n, records in by_node.items())

    def where(node) -> str:
        part = program.part_of(node, facts.parents)
        code = facts.code(facts.statement(node)).splitlines()
        return f"{part.rel}:{next(line.strip() for line in code if line.strip() and not line.lstrip().startswith('#'))[:70]}"

    writes, unreached = _writes(facts), 0

    def covered_write(stmt, depth=4) -> bool | None:  # None: not reached from the program
        if recorded(stmt, mpo.NAME, "ddpify") or any(isinstance(a, cst.If) and is_rank_test(facts, a.test)
                                           for a in facts.ancestors(stmt)):
            return True
        func = next((a for a in facts.ancestors(stmt) if isinstance(a, cst.FunctionDef)), None)
        if func is None or depth == 0:
            return False
        sites = facts.call_sites(func)
        if not sites:
            return None
        verdicts = [covered_write(facts.statement(c), depth - 1) for c in sites]
        reached = [v for v in verdicts if v is not None]
        return all(reached) if reached else None

    gaps: dict[str, list[str]] = {"writes": [], "loaders": [], "models": [], "epochs": []}
    for stmt in writes:
        verdict = covered_write(stmt)
        if verdict is None:
            unreached += 1
        elif not verdict:
            gaps["writes"].append(where(stmt))
    models_warned = not analysis.models.wrapped and any(
        r.kind == WARNING for r in edits.records if r.rewrite in MODELS)
    wrapped_at = {o for m in analysis.models.wrapped if _changed(by_node, m.anchor, "wrap-model") or m.dataparallel
                  for o in m.optimizers}
    for optimizer in facts.optimizers:
        if optimizer not in wrapped_at and not recorded(facts.statement(optimizer), *MODELS):
            gaps["models"].append(where(optimizer))
    loader_calls = [c for c in facts.calls if facts.qualify(c.func) == DATALOADER]
    sharded_loops = []
    for loop in facts.batch_loops():
        feeding = [c for o in facts.origins(mt.strip_iteration(loop.iter)) for c in loader_calls
                   if facts.is_inside(c, o)]
        if feeding and all(_changed(by_node, c, "shard-data") for c in feeding):
            sharded_loops.append((loop, feeding))
        elif not (models_warned or recorded(loop, *LOADERS) or any(recorded(facts.statement(c), *LOADERS)
                                                                  for c in feeding)):
            gaps["loaders"].append(where(loop))
    for loop, feeding in sharded_loops:
        if not (_epoch_edited(facts, by_node, loop, 4) or recorded(loop, *EPOCHS)
                or any(recorded(facts.statement(c), *EPOCHS) for c in feeding)):
            gaps["epochs"].append(where(loop))
    return {"checked": {"writes": len(writes) - unreached, "unreached_writes": unreached,
                        "optimizers": len(facts.optimizers), "batch_loops": len(facts.batch_loops()),
                        "sharded_loops": len(sharded_loops)},
            "gaps": {k: v for k, v in gaps.items() if v}, "silent": sum(map(len, gaps.values()))}


def _writes(facts) -> list[cst.CSTNode]:
    """The statements main-process-only counts as file writes (os.makedirs aside: harmless)."""
    opened = mpo._opened_for_writing(facts)
    loggers = mpo._loggers(facts, opened)
    return [s for s in mpo._statements(facts) if (w := mpo._writes(facts, s, loggers, opened)) and w != "os.makedirs"]


def _changed(by_node, node, rewrite) -> bool:
    """An edit of `rewrite` (not a warning) recorded on `node`."""
    return any(r == rewrite and kind != WARNING for r, kind in by_node.get(node, ()))


def _epoch_edited(facts, by_node, node, depth) -> bool:
    """A loop set-epoch recorded around `node`, or around a call of its function (`depth` calls out)."""
    for anc in facts.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)) and any(r == "set-epoch" for r, _ in by_node.get(anc, ())):
            return True
        if isinstance(anc, cst.FunctionDef):
            return depth > 0 and any(_epoch_edited(facts, by_node, c, depth - 1) for c in facts.call_sites(anc))
    return False


def main(entries: list[str]) -> None:
    rows = [sweep(Path(e)) for e in entries]
    for row in rows:
        print(json.dumps(row))
    done = [r for r in rows if "error" not in r]
    print(f"{len(rows)} projects: {len(done)} converted, {sum(r['changed'] > 1 for r in done)} with modules "
          f"changed besides the entry, {sum(bool(r.get('silent')) for r in done)} with silent gaps "
          f"({sum(r.get('silent', 0) for r in done)} gaps), {len(rows) - len(done)} failed", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
