"""`ddpify check` on one large DDP training script vs LibCST's own parse of it (issue 21's target:
at most 2x). Ratios only: the figure goes in bench/RESULTS.md, never into a pass/fail test.

    python bench/check_speed.py [REPS] [LINES]    # defaults: 15 repetitions, ~1,500 lines
    python bench/check_speed.py REPS 0 FILE.py    # a script of your own instead

The script is `make_large.build(units)` converted by ddpify (so it is a real DDP script: process
group, DDP wraps, DistributedSampler, rank-0 saves), with as many units as reach LINES. Both
functions are warmed up once, then run alternately REPS times on the same bytes; the output is
the median wall and CPU time of each and their ratios, as one JSON object.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # make_large, next to this file
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import libcst  # noqa: E402
import make_large  # noqa: E402

from ddpify.check import check  # noqa: E402
from ddpify.convert import convert  # noqa: E402


def script(lines: int) -> bytes:
    units = 1
    while True:
        data = convert(make_large.build(units).encode()).output
        if data.count(b"\n") >= lines:
            return data
        units += 1


def timed(fn, data: bytes) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn(data)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(reps: int = 15, lines: int = 1500, path: str | None = None) -> dict:
    data = Path(path).read_bytes() if path else script(lines)
    runs = {"check": check, "parse": libcst.parse_module}
    for fn in runs.values():
        fn(data)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for i in range(reps):
        for name in (list(runs) if i % 2 == 0 else list(runs)[::-1]):
            times[name].append(timed(runs[name], data))
    medians = {name: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
               for name, ts in times.items()}
    return {"lines": data.count(b"\n"), "findings": len(check(data).findings), "reps": reps,
            "check_s": medians["check"], "parse_s": medians["parse"],
            "ratio_wall": medians["check"][0] / medians["parse"][0],
            "ratio_cpu": medians["check"][1] / medians["parse"][1]}


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(*map(int, args[:2]), *args[2:])))
