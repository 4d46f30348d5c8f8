"""Conversion time against the parse + codegen floor, for the standard library's files.

    python bench/stdlib_speed.py [FILE ...] [--all] [--reps N]

For each entry FILE (default: the standard library's `email/_header_value_parser.py`, whose
origin walk once re-expanded per path and did not finish in 10 minutes; `asyncore.py` where this
Python ships it, which once followed hundreds of sibling modules; and
`fixtures/canonical/before.py`, a typical script), as bench/real_speed.py measures a program:
in-process `load` + `convert_program`, as `ddpify convert FILE` does, against LibCST's own
parse + codegen of every file the program read, CPU time (`time.process_time`), after a
warm-up, the median of REPS runs of each (default 1), alternately. Prints the files and lines
read, both times and the ratio. `--all`: every module at the top of the standard library (168
files, 132k lines on 3.11: a few minutes), then the highest ratios. Target (issue 27): <= 3 for
any file, <= 1.2 for a typical script.
"""

from __future__ import annotations

import argparse
import email
import os
import sys
import sysconfig
from pathlib import Path

from ddpify.syntax.parse import RECURSION_LIMIT
from real_speed import measure

STDLIB = Path(sysconfig.get_paths()["stdlib"])
DEFAULTS = [Path(os.path.dirname(email.__file__)) / "_header_value_parser.py", STDLIB / "asyncore.py",
            Path(__file__).resolve().parent.parent / "fixtures" / "canonical" / "before.py"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="every module at the top of the standard library")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    files = sorted(STDLIB.glob("*.py")) if args.all else args.files or [p for p in DEFAULTS if p.exists()]
    rows = []
    for entry in files:
        row = measure(entry, args.reps)
        rows.append(row)
        print(f"{entry.name}: {row['files']} files, {row['lines']} lines read: convert {row['convert_s']:.3f} s, "
              f"parse+codegen {row['floor_s']:.3f} s, ratio {row['ratio']:.2f}", flush=True)
    if args.all:
        worst = sorted(rows, key=lambda r: -r["ratio"])[:5]
        print(f"{len(rows)} files, {sum(r['lines'] for r in rows)} lines: highest ratios "
              + ", ".join(f"{Path(r['entry']).name} {r['ratio']:.2f} ({r['lines']} lines)" for r in worst))


if __name__ == "__main__":
    main()
