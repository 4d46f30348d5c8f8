"""Fuzz and idempotence sweep: convert every .py file under the given paths, under each strategy,
and count what must never happen.

    OMP_NUM_THREADS=1 .venv/bin/python bench/sweep.py PATH... [--strategy ddp,fsdp] [-j N] [--timeout S]

For each file and strategy: converted in-process with `ddpify.convert.convert`;
- refused: the input is not Python this interpreter compiles (Python 2, test data with
  deliberate errors): an input error, exit 2 on the command line, as it should be;
- internal: any other exception (exit 123 on the command line) or a conversion past --timeout;
- not compiling: the output does not compile;
- not idempotent: converting the output again changes it;
- findings: `ddpify check` findings on the output of a changed file, except on a statement
  ddpify marked with a `# TODO(ddpify): ...` line (what it could not convert may be a finding).
Prints one line per failure (file, strategy, what), then the counts; exits 1 if any. Takes no
network and no fixed corpus: the standard library and any checkout of training code will do.
"""

from __future__ import annotations

import argparse
import ast
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ddpify.check import check
from ddpify.convert import convert
from ddpify.options import Options
from ddpify.syntax.parse import INPUT_ERRORS
from ddpify.output.report import WARNING

KINDS = ("internal", "not compiling", "not idempotent", "findings")


def python_files(paths: list[str]) -> list[str]:
    files: list[str] = []
    for arg in paths:
        path = Path(arg)
        files += [str(path)] if path.is_file() else sorted(str(p) for p in path.rglob("*.py") if p.is_file())
    return files


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def sweep_one(job: tuple[str, str, float]) -> tuple[str, str, str, str, int]:
    """(path, strategy, outcome, detail, warnings of the conversion): outcome "refused", "same",
    "changed" or one of KINDS."""
    path, strategy, timeout = job
    data = Path(path).read_bytes()
    options = Options(strategy=strategy)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        try:
            first = convert(data, options)
        except INPUT_ERRORS:
            return path, strategy, "refused", "", 0
        warnings = sum(c.kind == WARNING for c in first.changes)
        if not first.changed:
            return path, strategy, "same", "", warnings
        try:
            compile(first.output, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return path, strategy, "not compiling", str(exc), warnings
        second = convert(first.output, options)
        if second.output != first.output:
            return path, strategy, "not idempotent", _first_difference(first.output, second.output), warnings
        unmarked = [f for f in check(first.output).findings if not _marked(first.code, f.line)]
        if unmarked:
            return path, strategy, "findings", "; ".join(f"{f.line}: {f.code} {f.message}"[:160] for f in unmarked), \
                warnings
        return path, strategy, "changed", "", warnings
    except Timeout:
        return path, strategy, "internal", f"took longer than {timeout:g} s", 0
    except Exception as exc:
        return path, strategy, "internal", f"{type(exc).__name__}: {exc}"[:300], 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _marked(code: str, line: int) -> bool:
    """Is the statement on `line` (the innermost one whose header spans it) right below a
    `# TODO(ddpify): ...` line?"""
    starts = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            header_end = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno or node.lineno
            if node.lineno <= line <= header_end:
                starts.append(node.lineno)
    start = max(starts, default=line)
    lines = code.splitlines()
    return start >= 2 and "TODO(ddpify)" in lines[start - 2]


def _first_difference(a: bytes, b: bytes) -> str:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), 1):
        if x != y:
            return f"line {n}: {x.decode(errors='replace').strip()[:80]!r} -> {y.decode(errors='replace').strip()[:80]!r}"
    return f"{len(a.splitlines())} -> {len(b.splitlines())} lines"


def sweep(files: list[str], strategies: list[str], jobs: int, timeout: float) -> list[tuple]:
    work = [(f, s, timeout) for f in files for s in strategies]
    with ProcessPoolExecutor(max_workers=jobs or os.cpu_count()) as pool:
        return list(pool.map(sweep_one, work, chunksize=8))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--strategy", default="ddp,fsdp", help="comma-separated (default: ddp,fsdp)")
    parser.add_argument("-j", "--jobs", type=int, default=0, help="processes (default: one per core)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per conversion")
    args = parser.parse_args(argv)
    files = python_files(args.paths)
    strategies = args.strategy.split(",")
    start = time.perf_counter()
    results = sweep(files, strategies, args.jobs, args.timeout)
    failures = [r for r in results if r[2] in KINDS]
    for path, strategy, outcome, detail, _ in failures:
        print(f"{path} [{strategy}]: {outcome}: {detail}")
    count = {k: sum(r[2] == k for r in results) for k in ("refused", "same", "changed", *KINDS)}
    print(f"{len(files)} files x {len(strategies)} strategies = {len(results)} conversions in "
          f"{time.perf_counter() - start:.0f} s: " + ", ".join(f"{v} {k}" for k, v in count.items()))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
