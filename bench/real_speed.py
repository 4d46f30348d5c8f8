"""Conversion cost on real programs: in-process CPU time against LibCST's parse + codegen of the
files the conversion reads (issue 27 "Speed": typical <= 1.2x, none above 3x).

    python bench/real_speed.py [ENTRY|FOLDER ...] [--manifest JSON --root DIR] [--reps N] [--json OUT]

Each ENTRY (a script or a notebook; a FOLDER gives its `*.py` and `*.ipynb`, not recursively) and
each program of a fresh-sweep manifest (`bench/fresh_sweep2.json`, built under `--root`, as
`bench/fresh_sweep.py build` lays them out: ROOT/NAME/ENTRY) is converted as `ddpify convert
ENTRY` converts it: `load` + `convert_program`, with the project modules it imports; a notebook's
code cells first (`to_script`), then the modules it imports, as the CLI does since 0015; a
manifest program with the manifest's `pythonpath` folders as PYTHONPATH, as the sweep converts
it (a project folder there is read: decision 0087). The floor is LibCST's
`parse_module(...).code` of every file read (a notebook: its cells' script).
Both run once untimed (lazy imports, first-call caches), then REPS times each, alternately, timed
with `time.process_time` (CPU: the machine is shared; wall time counts the other jobs), under
the garbage collector's settings of the `ddpify` command (`ddpify.cli.collect_less`; before
decision 0027's round 5, Python's defaults: 2-15% more for a conversion, ~3% for the floor). Prints
per program the files and lines read, both medians and the ratio, then the median and the
maximum ratio. What a whole `ddpify convert` process adds (interpreter start, imports) is
bench/run.py's figure; this one is the conversion alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import libcst

from ddpify.cli import collect_less
from ddpify.convert import Options, convert_program
from ddpify.inputs.files import is_notebook
from ddpify.syntax.parse import _expand_indentation
from ddpify.inputs.program import load
from ddpify.syntax.parse import RECURSION_LIMIT


def jobs(entry: Path, pythonpath: tuple[Path, ...] | None = None, argv: tuple[str, ...] | None = None):
    """(convert, floor, files read, lines read) for `entry`, converted with `pythonpath` as
    PYTHONPATH (None: this process's) and told its command line `argv` (`ddpify convert --args`):
    the two functions timed (under the command's garbage collector settings from here on)."""
    collect_less()
    told = os.environ.get("PYTHONPATH", "") if pythonpath is None else os.pathsep.join(map(str, pythonpath))
    if is_notebook(entry.name):
        from ddpify.inputs.notebook import to_script

        def code() -> bytes:
            return to_script(str(entry), entry.read_bytes()).code.encode()
    else:
        def code() -> bytes:
            return entry.read_bytes()

    def convert():
        os.environ["PYTHONPATH"] = told
        convert_program(load(entry, code(), argv=argv), Options(argv=argv))

    os.environ["PYTHONPATH"] = told
    parts = load(entry, code(), argv=argv).parts
    # as LibCST is given them: a file whose tab indentation its tokenizer cannot read, expanded
    sources = [_expand_indentation(part.data) or part.data for part in parts]

    def floor():
        for data in sources:
            libcst.parse_module(data).code

    return convert, floor, len(sources), sum(len(data.splitlines()) for data in sources)


def measure(entry: Path, reps: int, pythonpath: tuple[Path, ...] | None = None,
            argv: tuple[str, ...] | None = None) -> dict:
    """Files and lines read; medians of CPU seconds of the conversion and of the floor; the ratio."""
    convert, floor, files, lines = jobs(entry, pythonpath, argv)
    times: dict = {convert: [], floor: []}
    convert(), floor()  # warm-up
    for rep in range(reps):
        for fn in (list(times) if rep % 2 == 0 else list(times)[::-1]):
            start = time.process_time()
            fn()
            times[fn].append(time.process_time() - start)
    ours, base = statistics.median(times[convert]), statistics.median(times[floor])
    return {"entry": str(entry), "files": files, "lines": lines, "convert_s": round(ours, 4),
            "floor_s": round(base, 4), "ratio": round(ours / base, 2)}


def entries(paths: list[Path], manifest: Path | None, root: Path | None) -> list[tuple[str, Path, tuple | None]]:
    """(name, entry, PYTHONPATH folders) for each path (a folder: its scripts and notebooks; None:
    this process's PYTHONPATH) and manifest program (its `pythonpath`, folders of its copy)."""
    found = []
    for path in paths:
        if path.is_dir():
            found += [(p.stem, p, None) for p in sorted(path.iterdir()) if p.suffix in (".py", ".ipynb")]
        else:
            found.append((path.stem, path, None))
    if manifest is not None:
        for program in json.loads(manifest.read_text())["programs"]:
            copy = root / program["name"]
            found.append((program["name"], copy / program["entry"],
                          tuple(copy / folder for folder in program.get("pythonpath", []))))
    return found



def programs_from_arguments(description: str) -> tuple[list, argparse.Namespace]:
    """The programs named on the command line of phases.py and ast_front_end.py (entries or
    folders, and any number of `--manifest JSON --root DIR` pairs) and the parsed arguments
    (`--reps`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--manifest", type=Path, action="append", default=[])
    parser.add_argument("--root", type=Path, action="append", default=[], help="where each manifest's programs are built")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    if len(args.manifest) != len(args.root):
        parser.error("each --manifest needs its --root")
    found = entries(args.paths, None, None)
    for manifest, root in zip(args.manifest, args.root):
        found += entries([], manifest, root)
    return found, args

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--manifest", type=Path)
    parser.add_argument("--root", type=Path, help="where the manifest's programs are built")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args()
    if args.manifest is not None and args.root is None:
        parser.error("--manifest needs --root")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    rows = []
    for name, entry, pythonpath in entries(args.paths, args.manifest, args.root):
        row = {"name": name, **measure(entry, args.reps, pythonpath)}
        rows.append(row)
        print(f"{name:24} {row['files']:3} files {row['lines']:6} lines  convert {row['convert_s']:.3f} s  "
              f"floor {row['floor_s']:.3f} s  ratio {row['ratio']:.2f}", flush=True)
    ratios = [r["ratio"] for r in rows]
    worst = max(rows, key=lambda r: r["ratio"])
    print(f"{len(rows)} programs, {sum(r['files'] for r in rows)} files, {sum(r['lines'] for r in rows)} lines: "
          f"ratio median {statistics.median(ratios):.2f}, max {worst['ratio']:.2f} ({worst['name']}) "
          f"(CPU, medians of {args.reps}; target: typical <= 1.2, max <= 3)")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
