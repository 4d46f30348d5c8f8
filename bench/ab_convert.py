"""`ddpify convert` of typical scripts, this checkout against another commit, both against the floor.

    OMP_NUM_THREADS=1 .venv/bin/python bench/ab_convert.py --base 10efd53 [--rounds 10] [--source] [FILE ...]

Whole processes, as axis 1 of bench/run.py: `python -m ddpify convert FILE -o OUT` of the
commit `--base` (its files from `git archive`, first on PYTHONPATH), of this checkout, and the
floor `python -c "import libcst, click; libcst.parse_module(src).code"`, the three alternating
in a rotating order, `--rounds` times per file (default: bench/run.py's three typical fixtures).
Every child runs from bytecode written once into a temporary folder (PYTHONPYCACHEPREFIX), as an
installed ddpify does; `--source`: the two ddpify candidates compile their own modules on every
run instead. Prints the medians per file (wall/CPU ms) and the ratios to the floor of the sums.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
TYPICAL = [REPO / "fixtures" / name / "before.py" for name in ("amp_accumulation", "canonical", "dataparallel_legacy")]
FLOOR = "import libcst, click, sys; libcst.parse_module(open(sys.argv[1], 'rb').read()).code"


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys, from wait4) of one child run to completion."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"failed: {' '.join(cmd)}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--base", required=True, help="the commit to compare with (e.g. main's before a change)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--source", action="store_true", help="ddpify compiles its modules on every run")
    args = parser.parse_args()
    files = [f.resolve() for f in args.files] or TYPICAL
    work = Path(tempfile.mkdtemp(prefix="ddpify-ab-"))
    try:
        base = work / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.base, "ddpify"], cwd=REPO, capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(base, filter="data")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
        env.update(OMP_NUM_THREADS="1", PYTHONPYCACHEPREFIX=str(work / "pycache"))
        candidates = {"floor": ([PY, "-c", FLOOR], env),
                      "base": ([PY, "-m", "ddpify", "convert"], {**env, "PYTHONPATH": str(base)}),
                      "this": ([PY, "-m", "ddpify", "convert"], {**env, "PYTHONPATH": str(REPO)})}

        def command(name: str, path: Path) -> list[str]:
            cmd, _ = candidates[name]
            out = work / f"out-{name}.py"
            out.unlink(missing_ok=True)  # (untimed) an output keeps its input's mode: a read-only one is not rewritten
            return [*cmd, str(path)] + ([] if name == "floor" else ["-o", str(out)])

        for path in files:  # once each, untimed: every module they import is compiled to bytecode
            for name, (_, child_env) in candidates.items():
                timed(command(name, path), child_env, work)
        if args.source:  # the bytecode of both ddpify packages gone, and none written again
            for folder in (base / "ddpify", REPO / "ddpify"):
                shutil.rmtree(work / "pycache" / folder.resolve().relative_to("/"), ignore_errors=True)
            for name in ("base", "this"):
                candidates[name] = (candidates[name][0], {**candidates[name][1], "PYTHONDONTWRITEBYTECODE": "1"})
        runs: dict[tuple[str, Path], list[tuple[float, float]]] = {(n, f): [] for n in candidates for f in files}
        names = list(candidates)
        load = os.getloadavg()[0]
        for r in range(args.rounds):
            order = names[r % 3:] + names[:r % 3]
            for path in files:
                for name in order:
                    runs[name, path].append(timed(command(name, path), candidates[name][1], work))
        total = {name: [0.0, 0.0] for name in names}
        print(f"bytecode: {'compiled each run' if args.source else 'cached'}; {args.rounds} rounds; base {args.base}; "
              f"load {load:.1f} -> {os.getloadavg()[0]:.1f}")
        for path in files:
            cells = []
            for name in names:
                wall = statistics.median(w for w, _ in runs[name, path])
                cpu = statistics.median(c for _, c in runs[name, path])
                total[name][0] += wall
                total[name][1] += cpu
                cells.append(f"{name} {wall * 1e3:.0f}/{cpu * 1e3:.0f}")
            print(f"  {path.parent.name:<22} " + "  ".join(cells) + "  (wall/CPU ms)")
        for name in ("base", "this"):
            print(f"{name}: wall {total[name][0] / total['floor'][0]:.3f}x, CPU {total[name][1] / total['floor'][1]:.3f}x the floor")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
