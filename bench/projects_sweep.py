"""Sweep real multi-file projects: convert each entry script as a program, and say for each
whether it converted, how many files changed, its warnings, and whether some gap (no DDP wrap,
unsharded training data, no set_epoch) went without a warning that explains it ("silent").

    python bench/projects_sweep.py /tmp/sweep/repo-a/train.py /tmp/sweep/repo-b/main.py ...

Convert copies of the projects (never commit them): this writes nothing, it only reads.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ddpify.convert import convert_program
from ddpify.program import load

GAP_WORDS = {  # a warning that explains the gap mentions one of these
    "wrap": ("wrap", "distributeddataparallel", "outside the project", "by name", "run time", "no training loop"),
    "shard": ("shard", "dataloader", "training data whole"),
    "set_epoch": ("epoch",),
}


def sweep(entry: Path) -> dict:
    start = time.perf_counter()
    try:
        result = convert_program(load(entry, entry.read_bytes()))
    except Exception as exc:  # the failure class is the point of the sweep
        return {"entry": str(entry), "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
    seconds = time.perf_counter() - start
    files = [result, *result.modules.values()]
    code = "\n".join(line for r in files if r.changed for line in r.code.splitlines()
                     if not line.lstrip().startswith("#"))
    warnings = [c for r in files for c in r.changes if c.kind == "warning"]
    text = " ".join(w.message.lower() for w in warnings)
    wrapped = "DistributedDataParallel(" in code
    sharded = "shard_loader(" in code or "DistributedSampler(" in code
    gaps = ["wrap"] if not wrapped else ["shard"] if not sharded else [] if "set_epoch(" in code else ["set_epoch"]
    return {"entry": str(entry), "files": len(files), "changed": sum(r.changed for r in files),
            "warnings": len(warnings), "unseen": sum(w.rewrite == "ddpify" for w in warnings),
            "gaps": gaps, "silent": [g for g in gaps if not any(w in text for w in GAP_WORDS[g])],
            "note": next((c.message for c in result.changes if c.kind == "note"), ""),
            "seconds": round(seconds, 2)}


def main(entries: list[str]) -> None:
    rows = [sweep(Path(e)) for e in entries]
    for row in rows:
        print(json.dumps(row))
    done = [r for r in rows if "error" not in r]
    print(f"{len(rows)} projects: {len(done)} converted, {sum(r['changed'] > 1 for r in done)} with modules "
          f"changed besides the entry, {sum(bool(r['silent']) for r in done)} silent, "
          f"{len(rows) - len(done)} failed", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
