"""cProfile of a conversion, narrowed to ddpify's own functions: where to optimise.

    .venv/bin/python bench/hotspots.py ENTRY [REPS] [TOP]

Converts ENTRY (a script or a notebook, with the project modules it imports, as `ddpify convert
ENTRY` does: bench/real_speed.py's `jobs`) once to warm up, then REPS times (default 1) under
cProfile, and prints ddpify's TOP (default 25) functions by cumulative time, as a share of the
conversion's total, in CPU time (`time.process_time`: the machine is shared): `cum` includes
what the function calls (libcst included), `self` is its own code. cProfile slows LibCST's many
small calls more than plain Python, and its native parser not at all, so read shares, not
seconds (bench/phases.py times the phases without a profiler).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

import ddpify
from ddpify.syntax.parse import RECURSION_LIMIT
from real_speed import jobs

PACKAGE = str(Path(ddpify.__file__).resolve().parent)


def main(path: str, reps: int = 1, top: int = 25) -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    convert, _, files, lines = jobs(Path(path))
    convert()
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    for _ in range(reps):
        convert()
    profile.disable()
    stats = pstats.Stats(profile).stats  # (file, line, name) -> (prim calls, calls, self, cum, callers)
    total = sum(own for _, _, own, _, _ in stats.values())
    ours = sorted(((cum, own, calls, key) for key, (_, calls, own, cum, _) in stats.items()
                   if key[0].startswith(PACKAGE)), reverse=True)
    print(f"{path}: {files} files, {lines} lines; {total / reps:.3f} s per conversion under cProfile")
    print("   cum   self      calls  function")
    for cum, own, calls, (file, line, name) in ours[:top]:
        where = f"ddpify/{Path(file).relative_to(PACKAGE)}:{line}"
        print(f"{cum / total:6.1%} {own / total:6.1%} {calls:>10}  {where} {name}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
