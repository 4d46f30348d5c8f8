"""Where convert() spends its time, phase by phase, without a profiler's overhead.

    .venv/bin/python bench/phases.py FILE [REPS]     # e.g. a script from bench/make_large.py

Wraps, in this process only, the steps `ddpify.convert.convert` goes through (parse, the
`Facts` pass, the analyses `ddpify.analysis.result.analyse` runs, each rewrite, applying
the edits, the compile check and the report's line numbers) and prints the median seconds
of each over REPS conversions (after one warm-up). Times are exclusive: what the facts compute
on first use inside a rewrite counts as that rewrite. A step the
code no longer has is skipped; "other" is the rest of convert() (mostly the final codegen).
For the functions inside a phase: bench/hotspots.py (cProfile, ddpify's functions only).
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import libcst

import ddpify.analysis.result as result
import ddpify.convert as conv
import ddpify.output.edits as edits

SPENT: dict[str, float] = defaultdict(float)
_STACK: list[str] = []


def timed(name: str, fn):
    """`fn`, adding its exclusive time (less that of timed steps inside it) to SPENT[name]."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _STACK.append(name)
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            _STACK.pop()
            SPENT[name] += elapsed
            if _STACK:
                SPENT[_STACK[-1]] -= elapsed
    return wrapper


def _patch(owner, attr: str, name: str) -> None:
    if hasattr(owner, attr):
        setattr(owner, attr, timed(name, getattr(owner, attr)))


def install() -> None:
    libcst.parse_module = timed("parse", libcst.parse_module)
    _patch(result, "Facts", "facts: collect pass")
    for module in (result.models, result.loaders, result.evaluation):
        _patch(module, "find", f"{module.__name__}.find")
    registry = sys.modules["ddpify.rewrites"]
    registry.REWRITES = tuple(dataclasses.replace(r, apply=timed(f"rewrite {r.name}", r.apply))
                              for r in registry.REWRITES)
    _patch(edits, "apply", "edits.apply: transform")
    _patch(edits, "_add_imports", "edits.apply: add imports")
    _patch(edits.Edits, "changes", "report line numbers")
    _patch(conv, "_check_compiles", "compile check (codegen + compile)")


def main(path: str, reps: int = 3) -> None:
    install()
    data = Path(path).read_bytes()
    conv.convert(data)
    samples: dict[str, list[float]] = defaultdict(list)
    for _ in range(reps):
        SPENT.clear()
        start = time.perf_counter()
        conv.convert(data)
        total = time.perf_counter() - start
        for name, seconds in SPENT.items():
            samples[name].append(seconds)
        samples["other (final codegen, glue)"].append(total - sum(SPENT.values()))
        samples["TOTAL convert()"].append(total)
    print(f"{path}: {len(data.splitlines())} lines, median of {reps}")
    total = statistics.median(samples["TOTAL convert()"])
    for name, values in sorted(samples.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {name:<46} {statistics.median(values):8.3f} s  {statistics.median(values) / total:6.1%}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
