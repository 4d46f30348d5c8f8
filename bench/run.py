"""ddpify benchmarks: one command runs every axis and prints a table (axis, measured, target, ratio, verdict).

    .venv/bin/python bench/run.py            # everything (~15 min on 2 cores)
    .venv/bin/python bench/run.py --quick    # fewer repetitions, smaller training run (~3 min)
    .venv/bin/python bench/run.py --axes 1,6 # a subset (axis 3 needs /tmp/peers, see below)

Axes (README "Benchmarks" section; bench/RESULTS.md has the numbers and the commands):
 1 convert a typical script: `ddpify convert F -o OUT` vs `python -c "import libcst, click;
   libcst.parse_module(src).code"`, whole processes, fixtures of 100-400 lines that convert
 2 a large script (bench/make_large.py): in-process convert() vs parse_module().code, and
   10x the lines vs the time
 3 peers on the axis-1 files: `torchfix --fix` (its own venv: python3 -m venv /tmp/peers &&
   /tmp/peers/bin/pip install torchfix) and `python -m libcst.tool codemod` with a no-op command
 4 200 copies of the fixtures in a directory: `-j 0` vs `-j 1`, vs in-process convert() per file
 5 training: the converted fixtures/canonical vs bench/handwritten_ddp.py under
   `torchrun --standalone --nproc_per_node=2` (gloo, CPU): optimizer steps/s and collectives
 6 start-up: `ddpify --help` vs importing libcst and click; `import torch, ddpify_runtime` vs
   `import torch`
 7 peak RSS of converting the large script
 8 `ddpify check` on one file (the axis-1 files, converted: DDP scripts) vs the axis-1 floor

Every comparison runs its candidates alternately, side by side in the same loop, and reports
the ratio of the medians: other work on the machine slows both alike. Children run from
bytecode, as an installed ddpify does (pip compiles a wheel's modules at install): Python
writes it once under the work folder (PYTHONPYCACHEPREFIX), and every timed command runs once
untimed first. Axis 1 also shows, for information, ddpify compiling its own source on every
run (PYTHONDONTWRITEBYTECODE in an editable checkout without __pycache__), as the rows before
0027's bytecode note were measured. Wall time is the
measure; CPU time (user+sys of the child and its children, from wait4) is shown beside it, as
it is less disturbed by other load. Every child runs with OMP_NUM_THREADS=1. Generated inputs
and outputs live in a temporary folder that is deleted at the end (--keep to keep it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))  # the test-support package: launch environment, probe and its reader
from tests.support.env import clean_env, with_probe  # noqa: E402
from tests.support.records import read_bench  # noqa: E402

VENV = REPO / ".venv" / "bin"
PY = str(VENV / "python") if (VENV / "python").exists() else sys.executable
DDPIFY = str(VENV / "ddpify") if (VENV / "ddpify").exists() else shutil.which("ddpify")
TORCHRUN = str(VENV / "torchrun") if (VENV / "torchrun").exists() else shutil.which("torchrun")
PEERS = Path(os.environ.get("DDPIFY_BENCH_PEERS", "/tmp/peers/bin"))
ENV = {k: v for k, v in clean_env().items() if k != "PYTHONPATH"}  # sets OMP_NUM_THREADS=1
TORCH_ENV = dict(ENV)  # for the children that import torch: no bytecode of torch's thousands of modules written
CORES = os.cpu_count() or 1


# ---- running and timing children ----------------------------------------------------------------

@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # user + sys seconds, the child and its reaped children
    maxrss_kb: int
    out: str
    err: str


def run(cmd: list[str], cwd=None, env=None, check=True) -> Run:
    """Run `cmd` to completion; wall time around it, CPU time and peak RSS from wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env or ENV, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        result = Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
                     out.read().decode(errors="replace"), err.read().decode(errors="replace"))
    if check and proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(cmd)}\n{result.err[-3000:]}")
    return result


def alternate(candidates: dict, reps: int, before=None, warm: bool = False) -> dict[str, list[Run]]:
    """Run every candidate (name -> command or callable returning a Run) `reps` times,
    rotating the order each repetition so that none always runs first (`warm`: each once
    first, untimed, so that what it imports is compiled to bytecode before it is timed)."""
    names = list(candidates)
    runs = {name: [] for name in names}
    for name in names if warm else ():
        if before:
            before(name)
        what = candidates[name]
        what() if callable(what) else run(what)
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            if before:
                before(name)
            what = candidates[name]
            runs[name].append(what() if callable(what) else run(what))
    return runs


def med(runs: list[Run], attr: str = "wall") -> float:
    return statistics.median(getattr(r, attr) for r in runs)


# ---- the table ------------------------------------------------------------------------------------

ROWS: list[tuple[str, str, str, str, str]] = []
NOTES: list[str] = []


def row(axis: str, measured: str, target: str, ratio: float | None = None,
        limit: float | None = None, at_least: bool = False, show_ratio: bool = True) -> None:
    """One table line. With `limit`, the verdict compares `ratio` to it (<=, or >= if `at_least`)."""
    if ratio is None or limit is None:
        verdict = "info"
    elif (ratio >= limit) if at_least else (ratio <= limit):
        verdict = "PASS"
    else:
        miss = (limit / ratio - 1) if at_least else (ratio / limit - 1)
        verdict = f"MISS by {miss:.0%}"
    ROWS.append((axis, measured, target, f"{ratio:.2f}" if ratio is not None and show_ratio else "", verdict))
    print(f"  -> {axis}: {measured} | target {target} | {verdict}", flush=True)


def note(text: str) -> None:
    NOTES.append(text)
    print(f"  {text}", flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def print_table() -> None:
    header = ("axis", "measured (median)", "target", "ratio", "verdict")
    widths = [max(len(r[i]) for r in ROWS + [header]) for i in range(5)]
    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    print("\n" + line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in ROWS:
        print(line(r))


# ---- inputs ---------------------------------------------------------------------------------------

def typical_fixtures(work: Path) -> list[Path]:
    """Fixtures of 100-400 lines that ddpify changes (left-alone scripts are not typical work)."""
    chosen = []
    for before in sorted((REPO / "fixtures").glob("*/before.py")):
        if 100 <= len(before.read_text().splitlines()) <= 400:
            out = work / "typical" / f"{before.parent.name}.py"
            out.parent.mkdir(exist_ok=True)
            run([DDPIFY, "convert", str(before), "-o", str(out)])
            if out.read_bytes() != before.read_bytes():
                chosen.append(before)
    return chosen


def large_scripts(work: Path) -> tuple[Path, Path]:
    """1 unit (~350 lines) and 10 units (~3,300 lines) of bench/make_large.py."""
    paths = []
    for units in (1, 10):
        path = work / f"large_{units}.py"
        run([PY, str(BENCH / "make_large.py"), str(units), str(path)])
        paths.append(path)
    return paths[0], paths[1]


# ---- axes -----------------------------------------------------------------------------------------

def axes_1_and_3(work: Path, files: list[Path], reps: int, peers: bool) -> None:
    print(f"\n[1{'+3' if peers else ''}] typical scripts: {len(files)} fixtures x {reps} reps, whole processes"
          f" (load {os.getloadavg()[0]:.1f})", flush=True)
    out = work / "out.py"
    copy = work / "peer" / "script.py"
    copy.parent.mkdir(exist_ok=True)
    floor = "import libcst, click, sys; libcst.parse_module(open(sys.argv[1], 'rb').read()).code"
    totals: dict[str, list[float]] = {}
    per_file = []
    source_env = compiling_ddpify(work)
    for path in files:
        candidates = {"ddpify": [DDPIFY, "convert", str(path), "-o", str(out)],
                      "floor": [PY, "-c", floor, str(path)],
                      "from source": lambda path=path: run([DDPIFY, "convert", str(path), "-o", str(out)],
                                                           env=source_env)}
        if peers:
            candidates["torchfix"] = [str(PEERS / "torchfix"), "--fix", "-j", "1", str(copy)]
            candidates["libcst-noop"] = lambda: run(
                [PY, "-m", "libcst.tool", "codemod", "-x", "bench_noop.NoOpCommand", "--no-format",
                 "-j", "1", "--hide-progress", str(copy)], cwd=copy.parent,
                env={**ENV, "PYTHONPATH": str(BENCH)})
        runs = alternate(candidates, reps, before=lambda name: shutil.copyfile(path, copy), warm=True)
        for name, rs in runs.items():
            totals.setdefault(name, []).append(med(rs))
            totals.setdefault(name + ":cpu", []).append(med(rs, "cpu"))
        per_file.append((path.parent.name, med(runs["ddpify"]) / med(runs["floor"])))
        print(f"  {path.parent.name:<22} " + "  ".join(f"{n} {ms(med(rs))}" for n, rs in runs.items()),
              flush=True)
    total = {name: sum(values) / len(values) for name, values in totals.items()}  # mean of medians
    ratio = total["ddpify"] / total["floor"]
    worst = max(per_file, key=lambda x: x[1])
    row("1 typical script: ddpify convert / parse+codegen floor",
        f"{ms(total['ddpify'])} vs {ms(total['floor'])} per file (CPU {total['ddpify:cpu'] / total['floor:cpu']:.2f}x; "
        f"worst {worst[0]} {worst[1]:.2f}x)", "<= 1.20x", ratio, 1.2)
    row("1 the same, ddpify compiling its own source each run (no bytecode; info)",
        f"{ms(total['from source'])} vs {ms(total['floor'])} per file "
        f"(CPU {total['from source:cpu'] / total['floor:cpu']:.2f}x)", "info", total["from source"] / total["floor"])
    if peers:
        for peer in ("torchfix", "libcst-noop"):
            r = total["ddpify"] / total[peer]
            row(f"3 peers: ddpify / {peer}",
                f"{ms(total['ddpify'])} vs {ms(total[peer])} per file (CPU {total['ddpify:cpu'] / total[peer + ':cpu']:.2f}x)",
                "report", r)


def compiling_ddpify(work: Path) -> dict[str, str]:
    """The environment of a child that runs ddpify from its source, compiling every module it
    imports (LibCST, click and the standard library from bytecode, as in the floor): the
    bytecode folder without ddpify's own files, written to no more."""
    prefix = Path(ENV["PYTHONPYCACHEPREFIX"])
    run([DDPIFY, "--help"])  # ddpify's and click's bytecode is there, as the other children's
    own = prefix / (REPO / "ddpify").resolve().relative_to("/")  # the bytecode of the package benchmarked
    without = work / "pycache-without-ddpify"
    shutil.copytree(prefix, without, ignore=lambda folder, names: [own.name] if Path(folder) == own.parent else [])
    return {**ENV, "PYTHONPYCACHEPREFIX": str(without), "PYTHONDONTWRITEBYTECODE": "1"}


def axis_1_no_torch(work: Path, files: list[Path]) -> None:
    """The CLI must never import torch: -X importtime lists every module imported."""
    many = work / "notorch"
    many.mkdir(exist_ok=True)
    for path in files[:4]:
        shutil.copyfile(path, many / f"{path.parent.name}.py")
    commands = {"--help": [PY, "-X", "importtime", DDPIFY, "--help"],
                "convert FILE": [PY, "-X", "importtime", DDPIFY, "convert", str(files[0]), "-o", str(work / "o.py")],
                "convert DIR -j 2": [PY, "-X", "importtime", DDPIFY, "convert", str(many), "-o", str(work / "notorch-out"), "-j", "2"]}
    found = {}
    for name, cmd in commands.items():
        modules = [line.rsplit("|", 1)[1].strip() for line in run(cmd).err.splitlines() if line.startswith("import time:")]
        found[name] = sorted(m for m in modules if m == "torch" or m.startswith("torch."))
    bad = {k: v for k, v in found.items() if v}
    row("1 CLI never imports torch (-X importtime: --help, convert FILE, convert DIR -j 2)",
        "torch imported by " + ", ".join(bad) if bad else "no torch module imported", "none",
        len(bad), 0, show_ratio=False)


def axis_8(work: Path, files: list[Path], reps: int) -> None:
    """`ddpify check` on scripts that are already DDP (the converted typical fixtures), whole
    processes, against the same floor as axis 1 on the same file."""
    print(f"\n[8] ddpify check on {len(files)} DDP scripts x {reps} reps, whole processes"
          f" (load {os.getloadavg()[0]:.1f})", flush=True)
    floor = "import libcst, click, sys; libcst.parse_module(open(sys.argv[1], 'rb').read()).code"
    totals: dict[str, list[float]] = {}
    per_file = []
    for path in files:
        script = work / "typical" / f"{path.parent.name}.py"  # written by typical_fixtures
        runs = alternate({"check": lambda: run([DDPIFY, "check", str(script)], check=False),
                          "floor": [PY, "-c", floor, str(script)]}, reps, warm=True)
        for name, rs in runs.items():
            totals.setdefault(name, []).append(med(rs))
            totals.setdefault(name + ":cpu", []).append(med(rs, "cpu"))
        per_file.append((path.parent.name, med(runs["check"]) / med(runs["floor"])))
        print(f"  {path.parent.name:<22} " + "  ".join(f"{n} {ms(med(rs))}" for n, rs in runs.items()), flush=True)
    total = {name: sum(values) / len(values) for name, values in totals.items()}
    worst = max(per_file, key=lambda x: x[1])
    row("8 check one file: ddpify check / parse+codegen floor",
        f"{ms(total['check'])} vs {ms(total['floor'])} per file (CPU {total['check:cpu'] / total['floor:cpu']:.2f}x; "
        f"worst {worst[0]} {worst[1]:.2f}x)", "<= 1.20x", total["check"] / total["floor"], 1.2)


def axis_2_and_7(work: Path, small: Path, large: Path, reps: int) -> None:
    print(f"\n[2] large script, in-process, {reps} reps (load {os.getloadavg()[0]:.1f})", flush=True)
    r = json.loads(run([PY, str(BENCH / "inproc.py"), "scale", str(small), str(large), str(reps)]).out)
    lines_s, lines_l = r["lines"]["small"], r["lines"]["large"]
    for key in ("convert_small", "parse_small", "convert_large", "parse_large"):
        print(f"  {key:<14} {ms(r[key]['wall'])} (CPU {ms(r[key]['cpu'])})")
    ratio = r["convert_large"]["wall"] / r["parse_large"]["wall"]
    row(f"2 large script ({lines_l} lines): convert() / parse_module().code",
        f"{r['convert_large']['wall']:.2f} s vs {r['parse_large']['wall']:.2f} s "
        f"(CPU {r['convert_large']['cpu'] / r['parse_large']['cpu']:.2f}x)", "<= 2.5x", ratio, 2.5)
    line_ratio = lines_l / lines_s
    growth = r["convert_large"]["wall"] / r["convert_small"]["wall"]
    parse_growth = r["parse_large"]["wall"] / r["parse_small"]["wall"]
    row(f"2 linearity: convert() time x{growth:.1f} for lines x{line_ratio:.1f} ({lines_s} -> {lines_l})",
        f"{ms(r['convert_small']['wall'])} -> {r['convert_large']['wall']:.2f} s "
        f"(normalised {growth / line_ratio:.2f}; libcst parse+codegen alone {parse_growth / line_ratio:.2f}; "
        f"CPU {r['convert_large']['cpu'] / r['convert_small']['cpu'] / line_ratio:.2f})",
        "time x <= 1.1 * lines x", growth / line_ratio, 1.1)

    print("\n[7] peak RSS of converting the large script (fresh process each)", flush=True)
    peaks = {what: json.loads(run([PY, str(BENCH / "inproc.py"), "rss", what, str(large)]).out)
             for what in ("convert", "parse")}
    conv, parse = peaks["convert"], peaks["parse"]
    row(f"7 peak RSS, convert() of {lines_l} lines",
        f"{conv['maxrss_kb'] / 1024:.0f} MiB (parse+codegen alone {parse['maxrss_kb'] / 1024:.0f} MiB; "
        f"imports {conv['maxrss_kb_after_imports'] / 1024:.0f} MiB)", "report",
        conv["maxrss_kb"] / parse["maxrss_kb"])


def axis_4(work: Path, reps: int) -> None:
    print(f"\n[4] 200 scripts in a directory, -j 0 vs -j 1, {reps} reps (load {os.getloadavg()[0]:.1f})", flush=True)
    fixtures = sorted((REPO / "fixtures").glob("*/before.py"))
    src = work / "many"
    src.mkdir(exist_ok=True)
    for i in range(200):
        shutil.copyfile(fixtures[i % len(fixtures)], src / f"{i:03d}_{fixtures[i % len(fixtures)].parent.name}.py")
    dst = work / "many-out"
    candidates = {f"-j {j}": [DDPIFY, "convert", str(src), "-o", str(dst), "-j", str(j)] for j in (0, 1)}
    candidates["in-process"] = [PY, str(BENCH / "inproc.py"), "many", "1", *map(str, sorted(src.iterdir()))]
    runs = alternate(candidates, reps, before=lambda name: shutil.rmtree(dst, ignore_errors=True))
    inproc = {"per_file_wall": statistics.median(json.loads(r.out)["per_file_wall"] for r in runs["in-process"])}
    j0, j1 = med(runs["-j 0"]), med(runs["-j 1"])
    busy0, busy1 = med(runs["-j 0"], "cpu") / j0, med(runs["-j 1"], "cpu") / j1
    print(f"  -j 0 {j0:.2f} s (CPU {med(runs['-j 0'], 'cpu'):.2f} s), -j 1 {j1:.2f} s (CPU {med(runs['-j 1'], 'cpu'):.2f} s), "
          f"in-process {ms(inproc['per_file_wall'])}/file", flush=True)
    # CPU s / wall s is the number of cores kept busy; divided by that of -j 1, it discounts the
    # share of the machine that other work takes from both runs alike.
    row(f"4 200 files: cores kept busy by -j 0, relative to -j 1 ({CORES} cores)",
        f"-j 0 {busy0:.2f}, -j 1 {busy1:.2f} cores busy (CPU s / wall s); -j 1 / -j 0 wall = {j1 / j0:.2f}x; "
        f"CPU s -j 0 / -j 1 = {med(runs['-j 0'], 'cpu') / med(runs['-j 1'], 'cpu'):.2f}; load {os.getloadavg()[0]:.1f}",
        f">= {0.8 * CORES:.1f}", busy0 / busy1, 0.8 * CORES, at_least=True)
    row("4 200 files: per-file wall with -j 0 / in-process convert() per file",
        f"{ms(j0 / 200)} vs {ms(inproc['per_file_wall'])} (-j 1: {ms(j1 / 200)})", "<= 1.00",
        (j0 / 200) / inproc["per_file_wall"], 1.0)


def axis_5(work: Path, reps: int, quick: bool) -> None:
    epochs, num_train = (2, 8000) if quick else (3, 24000)
    print(f"\n[5] training overhead: torchrun --standalone --nproc_per_node=2, --epochs {epochs} "
          f"--num-train {num_train}, {reps} reps (load {os.getloadavg()[0]:.1f})", flush=True)
    converted = work / "canonical_ddp.py"
    run([DDPIFY, "convert", str(REPO / "fixtures" / "canonical" / "before.py"), "-o", str(converted)])
    golden = REPO / "fixtures" / "canonical" / "after.py"
    if golden.exists() and golden.read_bytes() != converted.read_bytes():
        note("note: ddpify's output for fixtures/canonical differs from after.py; benchmarked the fresh output")
    scripts = {"converted": converted, "handwritten": BENCH / "handwritten_ddp.py"}
    args = ["--epochs", str(epochs), "--num-train", str(num_train), "--out", str(work / "model.pt")]

    def launch(name: str, hook: bool) -> dict:
        probe = work / f"probe-{name}"
        shutil.rmtree(probe, ignore_errors=True)
        probe.mkdir()
        env = with_probe(TORCH_ENV, DDPIFY_BENCH_PROBE=str(probe), DDPIFY_BENCH_PROBE_HOOK="1" if hook else "0")
        r = run([TORCHRUN, "--standalone", "--nproc_per_node=2", str(scripts[name]), *args], env=env, cwd=work)
        ranks = read_bench(probe, 2)
        steps, cpu = ranks[0]["steps"], [rank["cpu"] for rank in ranks]
        return {"wall": r.wall, "steps": len(steps), "rate": (len(steps) - 1) / (steps[-1] - steps[0]),
                "cpu_per_step": statistics.mean((c[-1] - c[0]) / (len(c) - 1) for c in cpu),
                "events": ranks[0]["events"], "losses": [line for line in r.out.splitlines() if "loss" in line]}

    timed = {name: [] for name in scripts}
    for rep in range(reps):
        for name in (list(scripts) if rep % 2 == 0 else list(scripts)[::-1]):
            timed[name].append(launch(name, hook=False))
            t = timed[name][-1]
            print(f"  {name:<11} {t['rate']:.0f} steps/s, {t['steps']} steps, {t['cpu_per_step'] * 1e3:.2f} CPU ms/step/rank, "
                  f"whole run {t['wall']:.1f} s", flush=True)
    rate = {name: statistics.median(t["rate"] for t in ts) for name, ts in timed.items()}
    wall = {name: statistics.median(t["wall"] for t in ts) for name, ts in timed.items()}
    cpu = {name: statistics.median(t["cpu_per_step"] for t in ts) for name, ts in timed.items()}
    # The two runs of a repetition are back to back, so they share the machine's load best:
    # the verdict takes the median of the per-repetition ratios.
    pairs = [c["rate"] / h["rate"] for c, h in zip(timed["converted"], timed["handwritten"])]
    if timed["converted"][0]["losses"] != timed["handwritten"][0]["losses"]:
        note("note: converted and hand-written runs printed different losses")
    row("5 training: converted / hand-written DDP, optimizer steps/s (rank 0, first to last step)",
        f"median of per-pair ratios {statistics.median(pairs):.3f} (pairs {', '.join(f'{p:.2f}' for p in pairs)}); "
        f"medians {rate['converted']:.0f} vs {rate['handwritten']:.0f} steps/s = {rate['converted'] / rate['handwritten']:.3f}; "
        f"CPU/step {cpu['handwritten'] / cpu['converted']:.3f}; whole run {wall['converted']:.1f} s vs {wall['handwritten']:.1f} s; "
        f"{timed['converted'][0]['steps']} steps/rank", ">= 0.98", statistics.median(pairs), 0.98, at_least=True)

    counted = {name: launch(name, hook=True) for name in scripts}
    table = {}
    for name, result in counted.items():
        n = result["steps"]
        for kind, done in result["events"]:
            phase = "setup" if done == 0 else ("teardown" if done >= n else "training")
            key = (kind, phase)
            table.setdefault(key, {"converted": 0, "handwritten": 0})[name] += 1
    n = counted["converted"]["steps"]
    print(f"  collectives on rank 0 over {n} optimizer steps, {epochs} epochs (DDP buckets via a comm hook):")
    for (kind, phase), counts in sorted(table.items()):
        print(f"    {kind:<22} {phase:<9} converted {counts['converted']:>6}  handwritten {counts['handwritten']:>6}")
    extra = {key: c["converted"] - c["handwritten"] for key, c in sorted(table.items())
             if c["converted"] != c["handwritten"]}
    extra_training = sum(v for (k, p), v in extra.items() if p == "training")
    per_step = {name: sum(c[name] for (k, p), c in table.items() if p == "training") / n for name in scripts}
    row("5 collectives during training: converted vs hand-written",
        f"{per_step['converted']:.3f} vs {per_step['handwritten']:.3f} per step; extra: "
        + (", ".join(f"{k} x{v} ({p})" for (k, p), v in extra.items()) or "none"),
        f"extra <= 1 per epoch ({epochs})", extra_training / epochs, 1.0)


def import_breakdown(reps: int) -> None:
    """Median -X importtime cumulative ms of what `ddpify --help` imports beyond `import libcst, click`."""
    watch = ("libcst", "click", "libcst.matchers", "libcst.codemod", "libcst.metadata", "ddpify.cli",
             "concurrent.futures.process", "difflib")
    found: dict[str, list[float]] = {}
    own: list[float] = []
    for _ in range(reps):
        err = run([PY, "-X", "importtime", DDPIFY, "--help"]).err
        total_own = 0.0
        for line in err.splitlines():
            if not line.startswith("import time:") or "|" not in line:
                continue
            self_us, cum_us, name = (x.strip() for x in line[len("import time:"):].split("|"))
            if not self_us.isdigit():  # the header line
                continue
            if name in watch:
                found.setdefault(name, []).append(int(cum_us) / 1e3)
            if name.startswith("ddpify"):
                total_own += int(self_us) / 1e3
        own.append(total_own)
    parts = [f"{name} {statistics.median(v):.0f}" for name, v in found.items()]
    note("ddpify --help imports (-X importtime, cumulative ms, median of "
         f"{reps}; nested modules count in their parents): " + ", ".join(parts)
         + f"; ddpify's own modules' self time {statistics.median(own):.0f}")


def axis_6(reps: int) -> None:
    print(f"\n[6] start-up, {reps} reps each (load {os.getloadavg()[0]:.1f})", flush=True)
    runs = alternate({"ddpify --help": [DDPIFY, "--help"], "import libcst, click": [PY, "-c", "import libcst, click"]},
                     reps, warm=True)
    a, b = med(runs["ddpify --help"]), med(runs["import libcst, click"])
    row("6 start-up: ddpify --help / python -c 'import libcst, click'",
        f"{ms(a)} vs {ms(b)} (CPU {med(runs['ddpify --help'], 'cpu') / med(runs['import libcst, click'], 'cpu'):.2f}x)",
        "<= 1.20x", a / b, 1.2)
    import_breakdown(max(3, reps // 4))

    runs = alternate({"torch": lambda: run([PY, "-c", "import torch"], env=TORCH_ENV),
                      "torch+runtime": lambda: run([PY, "-c", "import torch, ddpify_runtime"], env=TORCH_ENV)}, reps)
    diffs = [b.wall - a.wall for a, b in zip(runs["torch"], runs["torch+runtime"])]
    cpu_diffs = [b.cpu - a.cpu for a, b in zip(runs["torch"], runs["torch+runtime"])]
    cum = []
    for _ in range(max(3, reps // 3)):
        err = run([PY, "-X", "importtime", "-c", "import torch, ddpify_runtime"], env=TORCH_ENV).err
        cum += [int(m.group(1)) / 1e6 for m in re.finditer(r"\|\s*(\d+) \| ddpify_runtime$", err, re.M)]
    row("6 import ddpify_runtime on top of import torch",
        f"-X importtime cumulative {ms(statistics.median(cum))}; median paired difference wall "
        f"{ms(statistics.median(diffs))}, CPU {ms(statistics.median(cpu_diffs))} (import torch alone "
        f"{ms(med(runs['torch']))}: both differences are noise-bound)",
        "<= 20 ms", statistics.median(cum) / 0.020, 1.0)


# ---- main -----------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, smaller training run")
    parser.add_argument("--axes", default="1,2,3,4,5,6,7,8", help="comma-separated axes to run (default all)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    axes = set(args.axes.split(","))
    q = args.quick
    peers = "3" in axes and (PEERS / "torchfix").exists()
    if "3" in axes and not peers:
        note(f"axis 3 skipped: no {PEERS / 'torchfix'} (python3 -m venv /tmp/peers && /tmp/peers/bin/pip install torchfix)")

    work = Path(tempfile.mkdtemp(prefix="ddpify-bench-"))
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)  # children run from bytecode, written once there
    ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    print(f"ddpify bench: {commit}, {CORES} cores, load {os.getloadavg()[0]:.1f}, "
          f"{'quick' if q else 'full'}, work dir {work}", flush=True)
    start = time.perf_counter()
    try:
        if axes & {"1", "3", "8"}:
            files = typical_fixtures(work)
            if q:
                files = files[:3]
            if axes & {"1", "3"}:
                axes_1_and_3(work, files, 2 if q else 5, peers)
            if "1" in axes:
                axis_1_no_torch(work, files)
            if "8" in axes:
                axis_8(work, files, 2 if q else 5)
        if axes & {"2", "7"}:
            small, large = large_scripts(work)
            axis_2_and_7(work, small, large, 2 if q else 5)
        if "4" in axes:
            axis_4(work, 1 if q else 3)
        if "5" in axes:
            axis_5(work, 2 if q else 6, q)
        if "6" in axes:
            axis_6(6 if q else 20)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print_table()
    for text in NOTES:
        print(text)
    print(f"\n{time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.1f}, {commit}")


if __name__ == "__main__":
    main()
