"""In-process measurements, run by bench/run.py in a fresh child interpreter; prints one JSON object.

    python bench/inproc.py scale SMALL.py LARGE.py REPS   # convert() vs parse_module().code, both files
    python bench/inproc.py many REPS FILE...               # convert() of every FILE, per-file mean
    python bench/inproc.py rss convert|parse FILE          # peak RSS of one convert() / parse+codegen

`scale` warms both functions up once, then per repetition runs the four (function, file) pairs
in an order that alternates between repetitions, and reports the medians (wall and CPU
seconds). Inputs are bytes, as the CLI hands them to convert().
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from pathlib import Path


def _timed(fn, data):
    wall, cpu = time.perf_counter(), time.process_time()
    fn(data)
    return time.perf_counter() - wall, time.process_time() - cpu


def _parse(data: bytes) -> str:
    import libcst

    return libcst.parse_module(data).code


def _convert(data: bytes):
    from ddpify.convert import convert

    return convert(data)


def scale(small: str, large: str, reps: str) -> dict:
    files = {"small": Path(small).read_bytes(), "large": Path(large).read_bytes()}
    jobs = [(f"{fn.__name__.strip('_')}_{size}", fn, data)
            for size, data in files.items() for fn in (_convert, _parse)]
    for _, fn, data in jobs:  # warm-up: lazy imports, first-call caches
        fn(data)
    times = {name: [] for name, _, _ in jobs}
    for rep in range(int(reps)):
        for name, fn, data in (jobs if rep % 2 == 0 else jobs[::-1]):
            times[name].append(_timed(fn, data))
    out = {"lines": {size: len(data.splitlines()) for size, data in files.items()}}
    for name, samples in times.items():
        out[name] = {"wall": statistics.median(w for w, _ in samples),
                     "cpu": statistics.median(c for _, c in samples), "n": len(samples)}
    return out


def many(reps: str, *paths: str) -> dict:
    datas = [Path(p).read_bytes() for p in paths]
    for data in datas[:30]:  # warm-up
        _convert(data)
    walls, cpus = [], []
    for _ in range(int(reps)):
        wall, cpu = time.perf_counter(), time.process_time()
        for data in datas:
            _convert(data)
        walls.append((time.perf_counter() - wall) / len(datas))
        cpus.append((time.process_time() - cpu) / len(datas))
    return {"per_file_wall": statistics.median(walls), "per_file_cpu": statistics.median(cpus),
            "files": len(datas), "reps": int(reps)}


def rss(what: str, path: str) -> dict:
    data = Path(path).read_bytes()
    import libcst  # noqa: F401  (imported in both cases, so the difference is the work)
    from ddpify.convert import convert  # noqa: F401

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall = time.perf_counter()
    (_convert if what == "convert" else _parse)(data)
    return {"what": what, "wall": time.perf_counter() - wall, "maxrss_kb_after_imports": before,
            "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    print(json.dumps({"scale": scale, "many": many, "rss": rss}[command](*args)))
