"""The fresh sweep (issue 27): real public training programs nobody here had used, each
converted by `ddpify convert` and launched under `torchrun --standalone --nproc_per_node=2`
(gloo, CPU), judged from the outside.

    .venv/bin/python bench/fresh_sweep.py build [--manifest M] [--mirrors /work/.mirror] [--cache DIR] [--dest /work/sweep]
    .venv/bin/python bench/fresh_sweep.py run --half tuning [--manifest M] [--dest /work/sweep] [--only NAME,...] [--json OUT]

The programs are listed in bench/fresh_sweep.json (`--manifest`: another set of the same schema,
bench/fresh_sweep2.json the second sweep's, bench/fresh_sweep3.json the third's,
bench/fresh_sweep4a.json and bench/fresh_sweep4b.json the fourth's parts A and B, bench/fresh_sweep5a.json and bench/fresh_sweep5b.json the fifth's parts A and B, bench/fresh_sweep6a.json the sixth's part A, bench/fresh_sweep7a.json and bench/fresh_sweep7b.json the seventh's parts A and B, bench/fresh_sweep8a.json and bench/fresh_sweep8b.json the eighth's parts A and B, bench/fresh_sweep9a.json and bench/fresh_sweep9b.json the ninth's parts A and B, bench/fresh_sweep10a.json the tenth's part A, bench/fresh_sweep11a.json and bench/fresh_sweep11b.json the eleventh's parts A and B, bench/fresh_sweep12a.json, bench/fresh_sweep12b.json and bench/fresh_sweep12c.json the twelfth's parts A, B and C, bench/fresh_sweep13a.json, bench/fresh_sweep13b.json and bench/fresh_sweep13c.json the thirteenth's parts A, B and C, bench/fresh_sweep14a.json and bench/fresh_sweep14c.json the fourteenth's parts A and C, bench/fresh_sweep16b.json the sixteenth's part B, bench/fresh_sweep17b.json the seventeenth's part B, bench/fresh_sweep18b.json the eighteenth's part B) (repository, commit, the files taken, entry,
arguments, environment, `pythonpath` (the project's folders its README installs), and `prep`: the few literal edits that make a program run here
(or a file to add, `new` written `times` times, where it needs an input; `copies` files named with `{i}`), each with its reason: no GPU, no downloads, no torchvision, a short step budget). Their code
is never committed: `build` copies the files from the snapshots the library's `fetch` tool
brings (`--mirrors`: `OWNER+NAME/repo`, a git directory) or from a folder of earlier copies
(`--cache`: `OWNER+NAME/PATH`, filled by every build), applies the edits (each must match
exactly once, or `count` times) and writes `DEST/NAME/`.

The set was split before any conversion was looked at (the manifest's `split`): repositories
ordered by the sha1 of their name, alternately tuning and held out; a program goes with its
repository. `run` refuses the held-out half unless `--half heldout` is given (the lead runs it
once: bench/RUN_HELDOUT.md); `--half all` runs both, for a set whose held-out run is done (a
regression check).

For each program, in a fresh temporary folder:
1. `original`: the unconverted entry under plain `python` (the stand-ins only): whether the
   program runs here at all; a program whose original fails is not judged;
2. `ddpify convert ENTRY -o out/ --json --args 'ARGS'` (program mode, told the command line the
   program is launched with, as `ddpify run` is), timed (where it refuses -o because the
   conversion changes files above the script's folder, a copy converted `--in-place`, as the
   refusal says); and, in this process, the
   conversion (`load` + `convert_program`) against LibCST's parse + codegen of the files it
   read (medians of 3): files and lines read, the ratio;
3. the converted program under `torchrun --standalone --nproc_per_node=2` with
   `bench/fresh_sweep_env/probe` (sitecustomize: the test probe plus the sites of loaders,
   optimizers, saves, writes and rank-1 prints) and the stand-ins on PYTHONPATH, with the
   folders the conversion's "run it:" line puts there (the entry's, and those of the unchanged
   modules a program written with -o imports from above it), each rank's stdout kept apart
   (`--redirects 1`), the program's arguments after `--` where that line ends with one (torchrun
   would take one of them for its own option), rank 1 held back `STAGGER` seconds once it has joined the process group
   (`FRESH_SWEEP_STAGGER`), so that rank 0 runs ahead to the next collective: a program that
   passes only when the processes keep step (one asks whether a folder exists, the main process
   makes it) fails every time;
4. the converted program under plain `python`.

Verdicts (torchrun), each `ok`, `FAIL` or `n/a`:
- `runs`: exit 0 within the time limit, 2 processes;
- `sharded`: every loader that fed an optimizer step (a step after its batch) was split across
  the 2 processes: a distributed sampler of 2 replicas on different ranks, or, where the
  indices are seen (an `IterableDataset`'s: its items' digests), passes whose index sets
  overlap by at most 1 per process (padding);
  n/a without a DataLoader in training;
- `reshuffled`: where the original drew a training loader at random, the converted one's
  order changes from its 1st to its 2nd training pass (one a step follows) on rank 0, or its
  sampler's `epoch` does (where worker processes fetch, unseen; or where a sampler given a new
  epoch draws the same order by its generator's chance, as over 4 items); n/a with one pass;
  asked only of the loaders the original drew at random where both runs made the same loaders
  (`random_loaders`: a validation loader drawn in order whose loop steps an optimizer need not
  reshuffle), of every training loader where they differ;
- `params`: every optimizer's parameters are bitwise identical on both ranks after its 2nd
  step and at exit (the test probe's checksums); where the original stepped an optimizer
  twice, the converted program steps one twice on both ranks (a program that catches its own
  crash and exits 0 trains no further);
- `saves`: no `torch.save` and no file write (open for writing, images, plots, loggers) on
  rank 1; no saved key starting with `module.` (but those the original saved too: an AveragedModel's own `module`);
  no DistributedDataParallel saved whole;
- `voice`: rank 1 writes nothing on stdout;
- `python`: the converted program exits 0 under plain `python`.
`wrapped` (information): `no` where an optimizer steps parameters of no DDP- or FSDP-wrapped
module after its 2nd step (identical data on every process keeps such replicas equal, so
`params` can pass). `selfcheck`: the problems the runtime's own check (issue 28) printed, if any (information,
not a verdict). A failed verdict is `silent` when neither the conversion's report nor the
self-check names anything on its path. The path: the frames of the user's stack at each failing
site (the loader's or optimizer's construction, the save, the write, the print, the crash's
traceback; for a `params` failure for want of a 2nd step in a run that crashed, the crash's too),
in the files as they ran. A warning of the report (its line carried into the
converted file) or a finding of the self-check (`FILE:LINE: CHECK:`, printed or in
`DDPIFY_VERIFY_JSON`; in a plain `python` run, a `ddpify: FILE:LINE: CHECK:` line the runtime
printed alone) names it when it lies at a frame's statement (or the header of a statement
around it: a loop's `for` line), or when it is of the failing check's class (`CLASSES`: the
rewrites and self-check checks that speak of it; the report's "ddpify cannot follow this" speaks
of every class) and lies in the frame's function (a module-level frame: at the module level).
Not any warning of the file: the report's advice on the batch size names no failure (`ADVICE`).
A failure with no site (the probe saw no stack) is named only by a self-check finding of its class,
or, where torchrun itself refused the command line over one of the script's options before it
started a process (`ambiguous option: --e could match --event-log-handler, ...`), by a report
warning of `launcher-arg` that names that option: the report tells the user what to pass
(the script's arguments after `--`, as its "run it:" line now reads; decision 0108).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = HERE / "fresh_sweep.json"
ENV_DIR = HERE / "fresh_sweep_env"
STAGGER = "2"  # seconds rank 1 starts late after joining the process group (FRESH_SWEEP_STAGGER)
sys.path.insert(0, str(ROOT / "tests" / "support"))  # records.Probe, the test probe's reader
from records import Probe  # noqa: E402

VERDICTS = ("runs", "sharded", "reshuffled", "params", "saves", "voice", "python")
RANDOM_SAMPLERS = ("RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler")
SELF_CHECK = re.compile(r"ddpify self-check: (\d+) problem")
REFUSED = re.compile(r"error: ambiguous option: (\S+) could match")  # torchrun's parser, before any process
SELF_CHECK_LINE = re.compile(r"(?:\[[^\]]*\]:)?(.+?):(\d+): ([a-z]+(?:-[a-z]+)*): ")  # a finding's line in its block
SAID_LINE = re.compile(r"(?:\[[^\]]*\]:)?ddpify: (.+?):(\d+): ([a-z]+(?:-[a-z]+)*): ")  # one printed alone (checks off)
# verdict -> the report's rewrites whose warnings are of its class, the self-check's checks of its class
CLASSES = {
    "runs": (("init-distributed", "launcher-arg", "local-device", "load-map-location", "unwrap-model", "agree-search"),
             ("uneven-batches", "missing-step", "empty-shard", "schedule-steps", "early-read")),
    "sharded": (("shard-data", "set-epoch"), ("unsharded-loader",)),
    "reshuffled": (("shard-data", "set-epoch"), ("same-order",)),
    "params": (("wrap-model", "accumulate-no-sync", "agree-plateau", "agree-stop", "agree-clock", "agree-search"),
               ("unwrapped-parameters", "bypassed-wrapper", "diverged-parameters", "diverged-at-exit",
                "differing-settings", "outside-forward", "missing-step", "late-parameters", "empty-shard",
                "schedule-steps")),
    "wrapped": (("wrap-model",), ("unwrapped-parameters", "bypassed-wrapper")),
    "saves": (("main-process-only", "unwrap-model", "download-first"), ("saved-wrapper", "shared-write", "own-copy")),
    "voice": (("main-process-only",), ()),
    "python": (("init-distributed", "launcher-arg", "local-device", "load-map-location", "unwrap-model"), ()),
}
EVERY_CLASS = ("ddpify",)  # the report's "ddpify cannot follow this" (analysis.reach): whatever fails on its path
ADVICE = ("batch_size is now per process", "DataParallel split each batch across GPUs")  # warnings naming no failure


# --------------------------------------------------------------------------- manifest, build

def manifest(path: Path = MANIFEST) -> dict:
    return json.loads(path.read_text())


def split(repos: list[str]) -> dict[str, str]:
    """repo -> "tuning" | "heldout": ordered by sha1 of the name, alternately (the manifest's rule)."""
    ordered = sorted(set(repos), key=lambda r: hashlib.sha1(r.encode()).hexdigest())
    return {repo: ("tuning", "heldout")[i % 2] for i, repo in enumerate(ordered)}


def _git_dir(mirrors: Path, repo: str) -> Path | None:
    base = mirrors / repo.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def _blobs(git_dir: Path, commit: str, prefixes: list[str]) -> list[str]:
    # -z: the names as they are (without it git quotes a name of non-ASCII letters in octal escapes,
    # which `cat-file` then cannot find)
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only", commit, "--", *prefixes],
                         capture_output=True, text=True, check=True).stdout
    return [name for name in out.split("\0") if name]


def build_one(program: dict, mirrors: Path, cache: Path | None, dest: Path) -> str:
    """Copy the program's files into dest/NAME and apply its prep edits; '' or why not."""
    repo, commit = program["repo"], program["commit"]
    target = dest / program["name"]
    cached = cache / repo.replace("/", "+") if cache else None
    git_dir = _git_dir(mirrors, repo)
    files: dict[str, bytes] = {}
    if git_dir is not None:
        for path in _blobs(git_dir, commit, program["files"]):
            files[path] = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", f"{commit}:{path}"],
                                         capture_output=True, check=True).stdout
        if cached is not None:
            for path, data in files.items():
                (cached / path).parent.mkdir(parents=True, exist_ok=True)
                (cached / path).write_bytes(data)
    elif cached is not None and cached.is_dir():
        for prefix in program["files"]:
            root = cached / prefix
            for path in ([root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())):
                files[str(path.relative_to(cached))] = path.read_bytes()
    if not files:
        return f"no snapshot of {repo} (fetch it: the library's fetch tool, github:{repo}) and no cache"
    if target.exists():
        shutil.rmtree(target)
    for path, data in files.items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_bytes(data)
    for edit in program.get("prep", []):
        path = target / edit["file"]
        text = path.read_text() if path.exists() else ""
        if "old" not in edit:  # a new file (synthetic data); `copies`: N files, {i} in the name
            for i in range(edit.get("copies", 0) or 1):
                path = target / (edit["file"].format(i=i) if "copies" in edit else edit["file"])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(edit["new"] * edit.get("times", 1))
            continue
        count = edit.get("count", 1)
        if text.count(edit["old"]) != count:
            return f"prep of {edit['file']}: {edit['old']!r} found {text.count(edit['old'])} times, not {count}"
        path.write_text(text.replace(edit["old"], edit["new"]))
    return ""


# --------------------------------------------------------------------------- running

def _env(program: dict, probe_dir: Path | None, roots: list[Path], pythonpath: list[Path]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DDPIFY_", "PYTHON"))}
    env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", CUDA_VISIBLE_DEVICES="",
               MPLBACKEND="Agg", FRESH_SWEEP_SAMPLES="256", TORCH_CPP_LOG_LEVEL="ERROR")
    env.update(program.get("env", {}))
    # the stand-ins play installed packages: after the program's own folders, as site-packages
    # comes after PYTHONPATH (a project's own omegaconf.py is imported before an installed one)
    env["PYTHONPATH"] = os.pathsep.join(map(str, [ENV_DIR / "probe", *pythonpath, ENV_DIR / "stubs"]))
    env["FRESH_SWEEP_USER_ROOTS"] = os.pathsep.join(map(str, roots))
    if probe_dir is not None:
        env["DDPIFY_PROBE_DIR"] = str(probe_dir)
    return env


def _installed(program: dict, copy: Path) -> list[Path]:
    """The manifest's `pythonpath` (folders of the program's copy): the project's own packages as
    its README installs them (`setup.py develop`), found on the path and not beside the entry."""
    return [copy / folder for folder in program.get("pythonpath", [])]


def _run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int, str, float]:
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              errors="replace")
        return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - start
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") + (exc.stderr or b"")
        return 124, out.decode(errors="replace") if isinstance(out, bytes) else out, time.perf_counter() - start


def _python() -> str:
    return sys.executable


def run_one(program: dict, dest: Path, keep: Path | None = None, original_only: bool = False,
            timeout_scale: float = 1.0) -> dict:
    name, entry = program["name"], program["entry"]
    src = dest / name
    row: dict = {"name": name, "repo": program["repo"], "entry": entry, "shape": program.get("shape", "")}
    timeout = program.get("timeout", 240) * timeout_scale
    tmp = Path(tempfile.mkdtemp(prefix=f"fresh-{name}-"))
    try:
        entry_dir = Path(entry).parent
        cwd_rel = Path(program.get("cwd", str(entry_dir)))
        args = program.get("args", [])
        # 1. the original, plain python, with the probe (which training loaders drew at random)
        rc, out, secs = run_original(program, src, tmp, timeout)
        row["original"] = {"rc": rc, "seconds": round(secs, 1), "tail": _tail(out)}
        if rc != 0 or original_only:
            row["verdict"] = "not judged: the original fails here" if rc else "original runs"
            return row
        # 2. conversion
        out_dir = tmp / "out"
        # converted with the project's folders on PYTHONPATH as it runs with them (`core/` of a flat import)
        told_env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, _installed(program, src)))}
        start = time.perf_counter()
        command_line = ["--args", shlex.join(args)] if args else []  # the one it is launched with, as `ddpify run`
        proc = subprocess.run([str(Path(_python()).parent / "ddpify"), "convert", str(src / entry), "-o",
                               str(out_dir) + "/", "--json", *command_line], capture_output=True, text=True, timeout=600,
                              env=told_env)
        row["convert"] = {"rc": proc.returncode, "seconds": round(time.perf_counter() - start, 2),
                          "stderr": _tail(proc.stderr, 6)}
        base, in_place = src, proc.returncode == 2 and "--in-place" in proc.stderr
        if in_place:  # it changes files above the script's folder: converted as told, a copy in place
            base = tmp / "inplace"
            shutil.copytree(src, base)
            start = time.perf_counter()
            proc = subprocess.run([str(Path(_python()).parent / "ddpify"), "convert", str(base / entry), "--in-place",
                                   "--json", *command_line], capture_output=True, text=True, timeout=600,
                                  env={**told_env, "PYTHONPATH": os.pathsep.join(map(str, _installed(program, base)))})
            row["convert"] = {"rc": proc.returncode, "seconds": round(time.perf_counter() - start, 2),
                              "stderr": _tail(proc.stderr, 6), "in_place": True}
        if proc.returncode != 0:
            row["verdict"] = "FAIL: convert"
            return row
        report = json.loads(proc.stdout)
        row["report"] = _report_summary(report)
        row["speed"] = speed(src / entry, _installed(program, src), argv=tuple(args) or None)
        converted = out_dir / _output_name(src, entry)
        if not converted.exists():
            converted = src / entry  # left unchanged: run the original file
        # 3. torchrun
        ddp = tmp / "ddp"
        shutil.copytree(base, ddp)
        if in_place:
            converted = ddp / entry
        probe_dir, logs = tmp / "probe", tmp / "logs"
        hint = "" if in_place else subprocess.run(  # --json prints no "run it:" line
            [str(Path(_python()).parent / "ddpify"), "convert", str(src / entry), "-o", str(out_dir) + "/", *command_line],
            capture_output=True, text=True, timeout=600, env=told_env).stderr
        told = _run_line_path(hint)
        env = _env(program, probe_dir, [out_dir, ddp], [*_within(told, src, ddp, ddp / entry_dir), *_installed(program, ddp)])
        env["DDPIFY_VERIFY_JSON"] = str(tmp / "verify.json")
        env.setdefault("FRESH_SWEEP_STAGGER", STAGGER)  # rank 0 runs ahead: a race is lost every time
        torchrun = str(Path(_python()).parent / "torchrun")
        rc, out, secs = _run([torchrun, "--standalone", "--nproc_per_node=2", "--redirects", "1",
                              "--log-dir", str(logs), str(converted), *_run_line_dash(hint), *args], ddp / cwd_rel,
                             env, timeout)
        stdout = _rank_stdout(logs)
        row["torchrun"] = {"rc": rc, "seconds": round(secs, 1), "tail": _tail(out)}
        # 4. plain python, converted
        py = tmp / "py"
        shutil.copytree(base, py)
        prc, pout, psecs = _run([_python(), str(py / entry if in_place else converted), *args], py / cwd_rel,
                                _env(program, None, [out_dir, py], [*_within(told, src, py, py / entry_dir),
                                                                   *_installed(program, py)]), timeout)
        row["python"] = {"rc": prc, "seconds": round(psecs, 1), "tail": _tail(pout)}
        base_probe, probe = Probe.read(tmp / "orig_probe"), Probe.read(probe_dir)
        row["checks"], sites = judge(probe, base_probe, rc, stdout, prc)
        if rc != 0:
            sites["runs"] = _traceback_sites(out, [out_dir, ddp])
            if _stalled(probe, base_probe):  # the crash is why no 2nd step compared the parameters
                sites["params"] += sites["runs"]
        if prc != 0:
            sites["python"] = _traceback_sites(pout, [out_dir, py])
        joined = "\n".join(stdout.values()) + out
        found = [int(n) for n in SELF_CHECK.findall(joined)]
        row["selfcheck"] = max(found) if found else 0
        if (tmp / "verify.json").exists():
            row["selfcheck_json"] = _tail((tmp / "verify.json").read_text(), 20)
        findings = selfcheck_findings(joined, (tmp / "verify.json").read_text(errors="replace")
                                      if (tmp / "verify.json").exists() else None)
        findings += [dict(f, file=str(py / cwd_rel / f["file"])) for f in selfcheck_findings(pout, None)]
        row["silent"] = silent(row["checks"], sites, report, src, entry, {out_dir: src, ddp: src, py: src, base: src},
                               findings, ddp / cwd_rel, refused_option(out) if rc != 0 else None)
        row["sites"] = {k: v[:3] for k, v in sites.items() if row["checks"].get(k) in ("FAIL", "no")}
        failed = [k for k in VERDICTS if row["checks"].get(k) == "FAIL"]
        row["verdict"] = "pass" if not failed else "FAIL: " + ", ".join(failed)
        return row
    finally:
        if keep is not None:
            shutil.copytree(tmp, keep / name, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _run_line_path(stderr: str) -> list[str]:
    """The PYTHONPATH of the conversion's own "run it:" line (the folders whose unchanged modules
    a program written with -o still imports: the entry's, and those its modules came from)."""
    for line in stderr.splitlines():
        if line.startswith("run it: "):
            words = shlex.split(line[len("run it: "):])
            return next((w[len("PYTHONPATH="):].split(os.pathsep) for w in words if w.startswith("PYTHONPATH=")), [])
    return []


def _run_line_dash(stderr: str) -> list[str]:
    """`["--"]` where the conversion's "run it:" line ends with `--` (the script's arguments go
    after it: torchrun would take one of them for its own option), else nothing: the sweep
    launches as the line reads."""
    for line in stderr.splitlines():
        if line.startswith("run it: "):
            return ["--"] if shlex.split(line)[-1] == "--" else []
    return []


def _within(told: list[str], src: Path, copy: Path, default: Path) -> list[Path]:
    """`told` (folders of the program's build, `src`) as the same folders of its `copy`; `default`
    (the entry's folder there) when the run line named none."""
    found = [copy / Path(p).resolve().relative_to(src.resolve()) for p in told
             if Path(p).resolve().is_relative_to(src.resolve())]
    return found or [default]


def run_original(program: dict, src: Path, tmp: Path, timeout: float) -> tuple[int, str, float]:
    """The unconverted program under plain python with the probe (tmp/orig_probe). A notebook
    runs as the script of its code cells (ddpify's own extraction, which turns IPython lines into
    comments: what a kernel runs, minus the magics)."""
    orig = tmp / "orig"
    shutil.copytree(src, orig)
    entry = orig / program["entry"]
    if entry.suffix == ".ipynb":
        from ddpify.inputs.notebook import to_script
        script = entry.with_name(entry.stem + "_original.py")
        script.write_text(to_script(entry.name, entry.read_bytes()).code)
        entry = script
    cwd = orig / program.get("cwd", str(Path(program["entry"]).parent))
    return _run([_python(), str(entry), *program.get("args", [])], cwd,
                _env(program, tmp / "orig_probe", [orig], [entry.parent, *_installed(program, orig)]), timeout)


def _rank_stdout(logs: Path) -> dict[int, str]:
    """rank -> what it wrote on stdout (torchrun --redirects 1 --log-dir: .../attempt_0/RANK/stdout.log)."""
    result = {}
    for path in logs.rglob("stdout.log"):
        try:
            result[int(path.parent.name)] = path.read_text(errors="replace")
        except ValueError:
            continue
    return result


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _traceback_sites(output: str, roots: list[Path]) -> list[list]:
    """The user's frames of the last traceback in `output`, innermost first."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', output)
    real = tuple(os.path.realpath(r) + os.sep for r in roots)
    user = [[os.path.realpath(f), int(n), fn] for f, n, fn in frames if os.path.realpath(f).startswith(real)]
    return [list(reversed(user))] if user else []


# --------------------------------------------------------------------------- judging

def training_loaders(probe: Probe, rank: int) -> set[int]:
    """Loaders (probe numbers) a batch of which an optimizer step followed on `rank`: the loader of
    the last batch taken (`fetch`, `batch`), else the one whose pass began last (`pass`)."""
    last, found = None, set()
    for event in probe.events:
        if event["rank"] != rank:
            continue
        if event["ev"] in ("fetch", "batch", "pass") and event.get("loader") is not None:
            last = event["loader"]
        elif event["ev"] == "step" and last is not None:
            found.add(last)
    return found


def training_passes(probe: Probe, rank: int) -> set[tuple[int, int]]:
    """(loader, pass) of the passes on `rank` a batch of which an optimizer step followed: not an
    evaluation over the training loader (`eval_train(model, train_loader)` after each epoch), which
    draws that epoch's order again."""
    last, found = None, set()
    for event in probe.events:
        if event["rank"] != rank:
            continue
        if event["ev"] in ("fetch", "pass") and event.get("loader") is not None:
            last = (event["loader"], event["pass"])
        elif event["ev"] == "step" and last is not None:
            found.add(last)
    return found


def random_loaders(original: Probe, probe: Probe) -> set[int] | None:
    """The loaders (probe numbers) the original drew at random and trained on, as the converted
    program numbers them: where both made the same loaders in the same order (each `made`'s
    innermost frame: its file's name and its function), the original's numbers; None where they
    differ or are unseen (then every training loader is asked to reshuffle). A loader the original
    drew in order (a validation loader whose loop calls `optimizer.step()` under `no_grad`: a
    training loader by its steps) need not draw a new order at each pass; the seq2seq translator of
    the twenty-sixth sweep's part B failed `reshuffled` on it (decision 0203)."""
    def sites(run: Probe) -> list:
        made = sorted((e for e in run.of("made") if e["rank"] == 0 and e["kind"] == "loader"), key=lambda e: e["number"])
        return [(e["number"], os.path.basename(e["stack"][0][0]), e["stack"][0][2]) if e["stack"] else None for e in made]
    before, after = sites(original), sites(probe)
    if not before or before != after or None in before:
        return None
    return {e["loader"] for e in original.of("pass") if e.get("sampler") in RANDOM_SAMPLERS
            and e["loader"] in training_loaders(original, 0)}


def judge(probe: Probe, original: Probe, rc: int, stdout: dict[int, str], python_rc: int) -> tuple[dict, dict]:
    """{verdict: ok | FAIL | n/a}, {verdict: [user stacks at the failing sites]}."""
    checks, sites = {}, defaultdict(list)
    ranks = probe.ranks
    checks["runs"] = "ok" if rc == 0 and len(ranks) == 2 else "FAIL"
    made = {(e["kind"], e["number"]): e["stack"] for e in probe.of("made") if e["rank"] == 0}
    # sharded
    train = training_loaders(probe, 0) | training_loaders(probe, 1)
    passes = probe.passes()
    if not train:
        checks["sharded"] = "n/a"
    else:
        bad = []
        for loader in sorted(train):
            first = {r: passes.get((r, loader), []) for r in (0, 1)}
            infos = [p[0].info for p in first.values() if p]
            by_sampler = len(infos) == 2 and all(i.get("num_replicas") == 2 for i in infos) and \
                {i.get("sampler_rank") for i in infos} == {0, 1}
            seen = [set(map(str, first[r][0].indices)) for r in (0, 1) if first[r] and first[r][0].indices]
            by_indices = len(seen) == 2 and len(seen[0] & seen[1]) <= 1
            if not (by_sampler or by_indices):
                bad.append(loader)
                sites["sharded"].append(made.get(("loader", loader), []))
        checks["sharded"] = "FAIL" if bad else "ok"
    # reshuffled: needed where the original drew a training loader at random
    random_before = any(e.get("sampler") in RANDOM_SAMPLERS for e in original.of("pass")
                        if e["loader"] in training_loaders(original, 0))
    drawn_at_random = random_loaders(original, probe)
    shuffled = sorted(train if drawn_at_random is None else train & drawn_at_random)
    stepped = training_passes(probe, 0)  # an evaluation over the training loader is no epoch of it
    orders = [[p.indices for p in passes.get((0, loader), []) if p.indices and (loader, p.number) in stepped]
              for loader in shuffled]
    # the sampler's epoch at each pass a step follows: not an iterator made and dropped before the
    # training's own (tqdm.auto's `tqdm(loader)` calls `iter(loader)` when it is built), which draws
    # the epoch's order once more
    epochs = {loader: [e["epoch"] for e in sorted(probe.of("pass_epoch", 0), key=lambda e: e["number"] or 0)
                       if e["loader"] == loader and (loader, e["number"]) in stepped] for loader in shuffled}
    if not random_before or not shuffled:
        checks["reshuffled"] = "n/a"
    elif any(len(o) >= 2 for o in orders):
        # a sampler given a new epoch that draws the same order again did reshuffle: its generator repeats
        # it (a DistributedSampler over 4 items: torch.randperm(4) is one permutation under seeds 10 and 11)
        renumbered = {loader for loader, e in epochs.items() if len(e) >= 2 and None not in e[:2] and e[0] != e[1]}
        same = [loader for loader, o in zip(shuffled, orders) if len(o) >= 2 and o[0] == o[1]
                and loader not in renumbered]
        checks["reshuffled"] = "FAIL" if same else "ok"
        sites["reshuffled"] += [made.get(("loader", loader), []) for loader in same]
    elif any(len(e) >= 2 and e[0] is not None for e in epochs.values()):  # indices unseen: the sampler's epoch
        same = [loader for loader, e in epochs.items() if len(e) >= 2 and e[0] == e[1]]
        checks["reshuffled"] = "FAIL" if same else "ok"
        sites["reshuffled"] += [made.get(("loader", loader), []) for loader in same]
    else:
        checks["reshuffled"] = "n/a"  # one pass only, or an unsharded loader whose indices are unseen
    # params
    differ = []
    for when in ("step2", "exit"):
        for number, by_rank in probe.optimizers(when).items():
            if len(by_rank) == 2 and len({e["sha256"] for e in by_rank.values()}) > 1:
                differ.append(number)
    steps2 = probe.optimizers("step2")
    # a program that swallows its crash (`except Exception: logging.error(...)`, exit 0) trains no
    # further: where the original stepped an optimizer twice, the converted one must on both ranks
    if _stalled(probe, original):
        differ += sorted(original.optimizers("step2"))
    checks["params"] = "FAIL" if differ else ("ok" if steps2 else "n/a")
    sites["params"] += [made.get(("optimizer", n), []) for n in sorted(set(differ))]
    # wrapped (information, not one of issue 27's verdicts): optimizers that step bare parameters
    bare = sorted({e["number"] for e in probe.of("coverage", 0) if e["bare"]})
    checks["wrapped"] = "no" if bare else ("ok" if probe.of("coverage", 0) else "n/a")
    sites["wrapped"] = [made.get(("optimizer", n), []) for n in bare]
    # saves and writes: a torch.save into memory writes no file (all_gather_object pickles a
    # tensor's storage with torch.save into a BytesIO on every process)
    save_sites = [e for e in probe.of("save_site") if e["path"] != IN_MEMORY]
    bad_saves = [e for e in save_sites if e["rank"] != 0 or e.get("wrapper")]
    # a key `module.` starts that the original saved too is the program's own (an AveragedModel's,
    # `self.module` of an EMA): only one the original never saved comes from a wrapper
    own = {k for e in original.saves() for k in _saved_keys(e) if k.startswith("module.")}
    keyed = [e for e in probe.saves() if e["path"] != IN_MEMORY
             and any(k.startswith("module.") and k not in own for k in _saved_keys(e))]
    writes = [e for e in probe.of("write") if e["rank"] != 0 and e["path"] != os.devnull]  # (no file: a sink)
    checks["saves"] = "FAIL" if bad_saves or keyed or writes else \
        ("ok" if save_sites or probe.of("write") else "n/a")
    sites["saves"] += [e["stack"] for e in bad_saves + writes]
    if keyed:
        by_path = {_final_path(e["path"]): e["stack"] for e in save_sites}
        sites["saves"] += [by_path.get(e["path"], []) for e in keyed]
    # one voice
    spoken = stdout.get(1, "").strip()
    checks["voice"] = "FAIL" if spoken else ("ok" if stdout else "n/a")
    sites["voice"] += [e["stack"] for e in probe.of("print") if e["rank"] != 0]
    checks["python"] = "ok" if python_rc == 0 else "FAIL"
    return checks, dict(sites)


def _stalled(probe: "Probe", original: "Probe") -> bool:
    """The converted program reached no optimizer's 2nd step on both ranks where the original
    stepped one twice: `params` fails for want of a comparison, and a crash of the run is on its
    path (what names the crash names that failure too)."""
    return bool(original.optimizers("step2")) and not any(len(by_rank) == 2
                                                          for by_rank in probe.optimizers("step2").values())


IN_MEMORY = repr(io.BytesIO)  # the path both probes record for a torch.save into a BytesIO
ATOMIC_TMP = re.compile(r"^(?P<folder>.*?)\.(?P<name>[^/]+)\.\d+\.[0-9a-f]{8}\.tmp$")  # runtime.atomic_write's temporary file


def _final_path(path: str) -> str:
    """The file a save goes to: `results/.steps_4.pt.2525.812f71b6.tmp` (atomic_write's temporary
    file, renamed over it) -> `results/steps_4.pt` (the name's first 64 characters, as written)."""
    found = ATOMIC_TMP.match(path)
    return found["folder"] + found["name"] if found else path


def _saved_keys(save: dict) -> list[str]:
    """A save event's keys and the keys of the dicts it holds (`{"model": sd, "ema": sd}`)."""
    return [str(k) for k in (save.get("keys") or []) + [kk for v in (save.get("nested") or {}).values() for kk in v]]


def _report_summary(report: dict) -> dict:
    records = [r for f in report["files"] for r in f["records"]]
    return {"files": len(report["files"]), "changed": sum(f["changed"] for f in report["files"]),
            "warnings": sum(r["kind"] == "warning" for r in records),
            "records": [(r["path"], r["line"], r["kind"], r["rewrite"], r["message"][:160]) for r in records]}


def _original_code(path: Path) -> str:
    """The code the report's lines count in: a file's text, a notebook's script."""
    if path.suffix == ".ipynb":
        from ddpify.inputs.notebook import to_script
        return to_script(path.name, path.read_bytes()).code
    return path.read_text(errors="replace")


class _Ran:
    """One file as it ran (a frame's file: the conversion's output or a copy): its functions'
    spans by qualname, the statements around a line, and the line a line of its original (the
    report counts there) became, matched on the lines' stripped text."""

    def __init__(self, code: str, original: str | None = None) -> None:
        self.scopes: dict[str, tuple[int, int]] = {}
        self.statements: list[ast.stmt] = []
        try:
            self._visit(ast.parse(code), "")
        except SyntaxError:
            pass
        self.moved: dict[int, int] = {}
        if original is not None and original != code:
            old = [line.strip() for line in original.splitlines()]
            new = [line.strip() for line in code.splitlines()]
            for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
                for i in range(a1, a2):  # a changed line: the same place in the changed block
                    self.moved[i + 1] = b1 + min(i - a1, max(b2 - b1 - 1, 0)) + 1

    def _visit(self, node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    self.scopes[name] = (child.lineno, child.end_lineno or child.lineno)
                self._visit(child, name + "." if isinstance(child, ast.ClassDef) else name + ".<locals>.")
            elif isinstance(child, ast.stmt):
                self.statements.append(child)
                self._visit(child, prefix)

    def line(self, original_line: int) -> int:
        return self.moved.get(original_line, original_line)

    def site(self, line: int) -> set[int]:
        """The lines of the statement running at `line` (all of it) and the headers of the
        statements around it (a loop's `for` line: a warning there names the loop)."""
        around = [s for s in self.statements if s.lineno <= line <= (s.end_lineno or s.lineno)]
        if not around:
            return {line}
        inner = min(around, key=lambda s: (s.end_lineno or s.lineno) - s.lineno)
        lines = set(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
        for s in around:
            body = getattr(s, "body", None)
            if s is not inner and body:
                lines |= set(range(s.lineno, body[0].lineno))
        return lines

    def within(self, qualname: str, line: int) -> bool:
        """`line` lies in the function `qualname` (module-level code: in no function)."""
        if qualname == "<module>":
            return not any(a <= line <= b for a, b in self.scopes.values())
        span = self.scopes.get(qualname)
        return span is not None and span[0] <= line <= span[1]


def selfcheck_findings(output: str, verify_json: str | None) -> list[dict]:
    """The runtime's self-check findings, each {"check", "file", "line"}: from the JSON file
    ``DDPIFY_VERIFY_JSON`` names, and from the blocks it printed (``FILE:LINE: CHECK: ...`` after
    its header), whichever has them; and the findings the runtime prints as lines of their own
    where the checks are off (``ddpify: FILE:LINE: CHECK: ...``, a plain ``python`` run's)."""
    found = []
    if verify_json:
        try:
            found = [{k: f[k] for k in ("check", "file", "line")} for f in json.loads(verify_json)]
        except (ValueError, TypeError, KeyError):
            found = []
    block = False
    for line in output.splitlines():
        if SELF_CHECK.search(line):
            block = True
            continue
        hit = SELF_CHECK_LINE.match(line.strip()) if block else None
        if hit is None:
            block = False
            hit = SAID_LINE.match(line.strip())
            if hit is None:
                continue
        found.append({"check": hit[3], "file": hit[1], "line": int(hit[2])})
    return found


def refused_option(out: str) -> str | None:
    """The script's option over which torchrun's own parser refused the command line, before it
    started any process (`torchrun: error: ambiguous option: --e could match ...`), or None."""
    found = REFUSED.search(out)
    return found.group(1) if found else None


def silent(checks: dict, sites: dict, report: dict, src: Path, entry: str, copies: dict[Path, Path],
           findings: list[dict] = (), cwd: Path | None = None, refused: str | None = None) -> dict:
    """verdict -> True when it failed and neither the report nor the self-check names anything on
    the path of any of its failing sites: a warning or finding at a site's statement (or the
    header of a statement around it), or one of the failing check's class (`CLASSES`) in the
    function of a frame on the stack (module-level code: at the module level); the report's
    advice on the batch size (`ADVICE`) names no failure. A failure with no site is named only
    by a self-check finding of its class, or, where torchrun `refused` the command line over
    one of the script's options, by a report warning of `launcher-arg` naming that option.
    `findings`' relative files are relative to `cwd`."""
    told = refused is not None and any(
        r["kind"] == "warning" and r["rewrite"] == "launcher-arg" and f"`{refused}`" in r["message"]
        for f in report["files"] for r in f["records"])
    entry_dir = (src / entry).parent
    warnings = defaultdict(list)  # project path (relative to src) -> (line, rewrite)
    for f in report["files"]:
        for r in f["records"]:
            if r["kind"] == "warning" and not r["message"].startswith(ADVICE):
                path = Path(r["path"]) if os.path.isabs(r["path"]) else entry_dir / r["path"]
                warnings[os.path.normpath(os.path.relpath(path, src))].append((r["line"], r["rewrite"]))
    found = [(os.path.realpath(os.path.join(cwd or "", f["file"])), int(f["line"]), f["check"]) for f in findings]
    ran: dict[str, _Ran] = {}
    result = {}
    for verdict, state in checks.items():
        if state not in ("FAIL", "no"):
            continue
        rewrites, kinds = CLASSES.get(verdict, ((), ()))
        frames = [frame for stack in sites.get(verdict, []) if stack for frame in stack]
        named = not frames and (told or any(kind in kinds for _, _, kind in found))
        for path, line, qualname in frames:
            real = os.path.realpath(path)
            rel = _relative(Path(path), copies, src, entry)
            if real not in ran:
                original = _original_code(src / rel) if rel is not None and (src / rel).is_file() else None
                code = Path(real).read_text(errors="replace") if os.path.isfile(real) else original
                ran[real] = _Ran(code or "", original)
            file = ran[real]
            site = file.site(line)
            said = [(ln, kind in kinds) for p, ln, kind in found if p == real]
            if rel is not None:
                said += [(file.line(ln), rw in rewrites or rw in EVERY_CLASS)
                         for ln, rw in warnings.get(os.path.normpath(rel), [])]
            named |= any(ln in site or (of_class and file.within(qualname, ln)) for ln, of_class in said)
        result[verdict] = not named
    return result


def _output_name(src: Path, entry: str) -> str:
    """The entry's name in the conversion's output: a notebook's script is NAME.py, or NAME_ddp.py
    where a module NAME.py lies beside the notebook (`ddpify convert`'s rule since 1535771)."""
    path = Path(entry)
    if path.suffix != ".ipynb":
        return path.name
    return path.stem + ("_ddp.py" if (src / path).with_suffix(".py").exists() else ".py")


def _relative(path: Path, copies: dict[Path, Path], src: Path, entry: str) -> str | None:
    """The project path (relative to the program's folder) of a frame's file, in a copy or in the
    conversion's output (out/NAME.py is the entry; out/REL is the module REL beside the entry)."""
    path = Path(os.path.realpath(path))
    entry_dir = Path(entry).parent
    for copy in copies:
        copy = Path(os.path.realpath(copy))
        if path.is_relative_to(copy):
            rel = path.relative_to(copy)
            if copy.name == "out":
                if rel == Path(_output_name(src, entry)):
                    return entry
                if not (src / entry_dir / rel).is_file():  # a module read through a folder on sys.path
                    found = [up / rel for up in entry_dir.parents if (src / up / rel).is_file()]
                    return str(found[0]) if found else None
                return str(entry_dir / rel)
            return str(rel)
    return None


# --------------------------------------------------------------------------- speed

def speed(entry: Path, pythonpath: list[Path], reps: int = 3, argv: tuple[str, ...] | None = None) -> dict:
    """Files and lines the conversion reads (a notebook's included: the modules it imports; with
    the program's `pythonpath` folders on PYTHONPATH and told its command line `argv`, as it was
    converted); its in-process CPU time against LibCST's parse + codegen of those files
    (bench/real_speed.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_speed import measure

    found = measure(entry, reps, tuple(pythonpath), argv)
    return {"files": found["files"], "lines": found["lines"], "convert_s": round(found["convert_s"], 3),
            "floor_s": round(found["floor_s"], 3), "ratio": found["ratio"]}


# --------------------------------------------------------------------------- table

def table(rows: list[dict]) -> str:
    head = ["program", "shape", "conv", *VERDICTS, "silent", "wrapped", "self", "warn", "files/lines", "ratio"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        checks = r.get("checks", {})
        sil = [k for k, v in r.get("silent", {}).items() if v]
        rep, sp = r.get("report", {}), r.get("speed", {})
        conv = "-" if "convert" not in r else ("ok" if r["convert"]["rc"] == 0 else f"rc {r['convert']['rc']}")
        cells = [r["name"], r.get("shape", ""), conv, *[checks.get(k, "-") for k in VERDICTS],
                 ",".join(sil) or ("-" if checks else ""), checks.get("wrapped", "-"), str(r.get("selfcheck", "-")), str(rep.get("warnings", "-")),
                 f"{sp['files']}/{sp['lines']}" if sp else "-", str(sp.get("ratio", "-"))]
        if "checks" not in r:
            cells[3] = r.get("verdict", "")
        out.append("| " + " | ".join(cells) + " |")
    judged = [r for r in rows if "checks" in r]
    passed = [r for r in judged if r["verdict"] == "pass"]
    silent_n = sum(any(v for k, v in r.get("silent", {}).items() if k in VERDICTS) for r in judged)
    ratios = [r["speed"]["ratio"] for r in rows if r.get("speed")]
    out.append("")
    out.append(f"{len(rows)} programs: {len(judged)} judged, {len(passed)} pass every check, "
               f"{len(judged) - len(passed)} fail ({silent_n} with a silent failure), "
               f"{len(rows) - len(judged)} not judged"
               + (f"; conversion / LibCST floor: median {statistics.median(ratios):.2f}, max {max(ratios):.2f}"
                  if ratios else ""))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--manifest", type=Path, default=MANIFEST)
    b.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    b.add_argument("--cache", type=Path)
    b.add_argument("--dest", type=Path, default=Path("/work/sweep"))
    r = sub.add_parser("run")
    r.add_argument("--half", choices=("tuning", "heldout", "all"), required=True,
                   help="all: both halves, for a set whose held-out half has had its one run")
    r.add_argument("--manifest", type=Path, default=MANIFEST)
    r.add_argument("--dest", type=Path, default=Path("/work/sweep"))
    r.add_argument("--only", default="")
    r.add_argument("--json", type=Path, help="write the rows here (JSON lines)")
    r.add_argument("--keep", type=Path, help="keep each program's run folder here")
    r.add_argument("--original-only", action="store_true", help="run the originals only (checks the prep)")
    r.add_argument("--timeout-scale", type=float, default=1.0,
                   help="multiply each program's time limit (a machine busier than the one the limits were set on)")
    args = parser.parse_args(argv)
    data = manifest(args.manifest)
    halves = split([p["repo"] for p in data["programs"]])
    for program in data["programs"]:
        assert program["half"] == halves[program["repo"]], f"{program['name']}: half differs from the rule"
    if args.command == "build":
        failed = 0
        for program in data["programs"]:
            why = build_one(program, args.mirrors, args.cache, args.dest)
            print(f"{program['name']}: {why or 'built'}")
            failed += bool(why)
        return 1 if failed else 0
    only = set(filter(None, args.only.split(",")))
    programs = [p for p in data["programs"] if args.half in (p["half"], "all") and (not only or p["name"] in only)]
    rows = []
    for program in programs:
        row = run_one(program, args.dest, args.keep, args.original_only, args.timeout_scale)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if args.json:
            with args.json.open("a") as f:
                f.write(json.dumps(row) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
