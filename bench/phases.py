"""Where a conversion spends its time beyond LibCST's parse + codegen, phase by phase, without a
profiler's overhead.

    .venv/bin/python bench/phases.py [ENTRY|FOLDER ...] [--manifest JSON --root DIR ...] [--reps N]

Converts each ENTRY (a FOLDER: its scripts and notebooks; as bench/real_speed.py's `jobs`, so as
`ddpify convert ENTRY` converts it, with its project modules; a fresh-sweep manifest's programs with their `pythonpath`, `--manifest`
and `--root` given in pairs) once to warm up, then REPS times
(default 5) in turn with the floor (LibCST's parse + codegen of the files read), and prints the
CPU milliseconds per round of each phase, exclusive (what a timed step inside it spends counts
as that step), as a share of the conversion and in floors: the parse, CPython's compile of the
input, `Facts`, each analysis, each rewrite, applying the edits, the lines of the edited files'
statements (Python's `ast`, read by the output's print and the report), the output's print, the
report's line numbers, the compile check of the output, loading the program, what the report
warns is not read; "other" is the rest (glue). What the facts compute on first use inside a rewrite counts as that rewrite. For the
functions inside a phase: bench/hotspots.py (cProfile).
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import time
import types
from collections import defaultdict

import libcst

import ddpify.analysis.result as result
import ddpify.convert as conv
import ddpify.output.edits as edits
import ddpify.syntax.parse as parse
import real_speed
from ddpify.analysis import reach
from ddpify.syntax import codegen
from real_speed import jobs, programs_from_arguments

SPENT: dict[str, float] = defaultdict(float)
_STACK: list[str] = []


def timed(name: str, fn):
    """`fn`, adding its exclusive CPU time (less that of timed steps inside it) to SPENT[name]."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _STACK.append(name)
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            elapsed = time.process_time() - start
            _STACK.pop()
            SPENT[name] += elapsed
            if _STACK:
                SPENT[_STACK[-1]] -= elapsed
    return wrapper


def install() -> None:
    libcst.parse_module = timed("parse (LibCST)", libcst.parse_module)
    parse.python_compile = timed("compile of the input (CPython)", parse.python_compile)
    conv.Facts = timed("Facts", conv.Facts)
    result.Facts = timed("Facts", result.Facts)
    for module in (result.models, result.loaders, result.evaluation, result.counts):
        module.find = timed(f"{module.__name__.rsplit('.', 1)[-1]}.find", module.find)
    run = conv._run

    def run_timed(rewrites, options, analysis, edit_set):
        rewrites = tuple(dataclasses.replace(r, apply=timed(f"rewrite {r.name}", r.apply)) for r in rewrites)
        return run(rewrites, options, analysis, edit_set)
    conv._run = run_timed
    edits.apply = timed("edits.apply", edits.apply)
    edits.apply_part = timed("edits.apply_part (a program's files)", edits.apply_part)
    unseen = reach.unseen
    reach.unseen = timed("reach.unseen (what the report warns is not read)", lambda *args: list(unseen(*args)))
    real_speed.load = timed("loading the program (less its parses and compiles)", real_speed.load)
    edits.Edits.changes = timed("report line numbers", edits.Edits.changes)
    conv.statement_lines = timed("statement lines (ast; the print and the report)", conv.statement_lines)
    conv.codegen = types.SimpleNamespace(code=timed("the output's print", codegen.code))
    conv.compile = timed("compile check of the output", compile)  # a program's files
    conv._check_compiles = timed("compile check of the output", conv._check_compiles)


def main() -> None:
    found, args = programs_from_arguments(__doc__.splitlines()[0])
    install()
    pairs = [jobs(entry, pythonpath)[:2] for _, entry, pythonpath in found]
    for convert, floor in pairs:
        convert(), floor()
    SPENT.clear()
    totals, floors = [], []
    for _ in range(args.reps):
        start = time.process_time()
        for convert, _ in pairs:
            convert()
        totals.append(time.process_time() - start)
        kept = dict(SPENT)  # (the floor's parse is not the conversion's)
        start = time.process_time()
        for _, floor in pairs:
            floor()
        floors.append(time.process_time() - start)
        SPENT.clear()
        SPENT.update(kept)
    total, base = statistics.median(totals), statistics.median(floors)
    SPENT["other (glue)"] = sum(totals) - sum(SPENT.values())
    print(f"{len(pairs)} programs: conversion {total * 1e3:.0f} ms, floor {base * 1e3:.0f} ms per round "
          f"(CPU, medians of {args.reps}): {total / base:.2f}x")
    for name, seconds in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        each = seconds / args.reps
        print(f"  {name:<40} {each * 1e3:8.1f} ms {each / total:6.1%}  {each / base:5.2f} floors")


if __name__ == "__main__":
    main()
