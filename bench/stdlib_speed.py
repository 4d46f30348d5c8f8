"""Conversion time against the parse + codegen floor, for the files whose analysis once blew up.

    python bench/stdlib_speed.py [FILE ...] [--reps N]

For each entry FILE (default: the standard library's `email/_header_value_parser.py`, whose
origin walk once re-expanded per path and did not finish in 10 minutes; `asyncore.py` where this
Python ships it, which follows hundreds of sibling modules; and `fixtures/canonical/before.py`,
a typical script), in-process: `load` + `convert_program`, as `ddpify diff FILE` does, against
LibCST's own parse + codegen of every file the program read; after a warm-up (under 20,000 lines),
the median of REPS runs of each (default 1), alternately. Prints the files and lines read, both times and the ratio. Target
(issue 27): <= 3 for any file, <= 1.2 for a typical script.
"""

from __future__ import annotations

import argparse
import email
import os
import statistics
import sys
import sysconfig
import time
from pathlib import Path

import libcst

from ddpify.convert import convert_program
from ddpify.inputs.program import load
from ddpify.syntax.parse import RECURSION_LIMIT

STDLIB = Path(sysconfig.get_paths()["stdlib"])
DEFAULTS = [Path(os.path.dirname(email.__file__)) / "_header_value_parser.py", STDLIB / "asyncore.py",
            Path(__file__).resolve().parent.parent / "fixtures" / "canonical" / "before.py"]


def measure(entry: Path, reps: int) -> str:
    files = [p.path for p in load(entry, entry.read_bytes()).parts]
    lines = sum(len(p.read_bytes().splitlines()) for p in files)

    def ours():
        convert_program(load(entry, entry.read_bytes()))

    def libcst_alone():
        for path in files:
            libcst.parse_module(path.read_bytes()).code

    if lines < 20_000:
        ours(), libcst_alone()  # warm-up (lazy imports), where it costs little
    times: dict = {ours: [], libcst_alone: []}
    for _ in range(reps):
        for fn in times:
            start = time.perf_counter()
            fn()
            times[fn].append(time.perf_counter() - start)
    a, b = statistics.median(times[ours]), statistics.median(times[libcst_alone])
    return (f"{entry.name}: {len(files)} files, {lines} lines read: convert {a:.2f} s, "
            f"parse+codegen {b:.2f} s, ratio {a / b:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    for entry in args.files or [p for p in DEFAULTS if p.exists()]:
        print(measure(entry, args.reps), flush=True)


if __name__ == "__main__":
    main()
