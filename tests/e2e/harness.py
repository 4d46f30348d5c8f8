"""Launch converted scripts (torchrun or plain python) with the probe, and read what it recorded.

The probe (``tests/support/probe/sitecustomize.py``) logs, from inside every process, which
indices each DataLoader pass fetched, every ``torch.save``, and a hash of every DDP-wrapped
module's parameters at exit (of FSDP2-sharded ones: the full parameters, gathered);
``tests/support/records.py`` reads it. The tests assert on those records, not on the scripts'
prints. ``start_batch`` runs many scripts in one launch (``tests/support/batch_job.py``: a process
of its own for each, forked after ``import torch``) and gives each its Run as its own launch would.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ddpify.convert import Options, convert
from tests.support.env import FIXTURES, PROBE, probe_env  # noqa: F401 (FIXTURES: for the tests)
from tests.support.records import Pass, Probe

WORLD = 2
TIMEOUT_S = 180
WRAPPER_PREFIXES = ("module.", "_orig_mod.")


def convert_to(source: Path, target: Path, options: Options = Options()) -> bytes:
    """Convert ``source`` with ddpify (``options``) and write the output to ``target``."""
    output = convert(source.read_bytes(), options).output
    target.write_bytes(output)
    return output


@dataclass
class Run:
    """One launch: exit status, per-rank output, and the probe's records."""

    cmd: List[str]
    cwd: Path
    returncode: Optional[int]  # None: timed out (killed)
    wall_s: float
    output: str  # launcher's (or the single process's) stdout+stderr
    rank_output: Dict[int, str] = field(default_factory=dict)  # torchrun: per-rank stdout+stderr
    probe: Optional["Probe"] = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 25) -> str:
        """The end of every stream, for assertion messages."""
        def cut(text):
            return "\n".join(text.rstrip().splitlines()[-lines:])
        parts = [f"$ {' '.join(self.cmd)}  (cwd {self.cwd}, rc {self.returncode}, "
                 f"{self.wall_s:.1f} s)", "--- launcher output ---", cut(self.output)]
        for rank, text in sorted(self.rank_output.items()):
            if text is not self.output:  # torchrun's per-rank logs (plain runs: the same text)
                parts += [f"--- rank {rank} ---", cut(text)]
        return "\n".join(parts)


class Pending:
    """A started launch; ``wait()`` returns its Run (timeout counted from the start)."""

    def __init__(self, cmd: List[str], cwd: Path, probe_dir: Optional[Path], timeout: float,
                 rank_logs: Optional[Path] = None, nproc: int = 1, count: bool = False):
        self.cmd, self.cwd, self.probe_dir, self.timeout = cmd, cwd, probe_dir, timeout
        self.rank_logs, self.nproc = rank_logs, nproc
        self.start = time.monotonic()
        # Output to a file, not a pipe: nobody has to drain it while another launch runs.
        self.output = cwd.parent / f"{cwd.name}.output.txt"
        with open(self.output, "w") as out:
            # Own session: on timeout the launcher and all its workers are killed together.
            self.proc = subprocess.Popen(cmd, cwd=cwd, env=probe_env(probe_dir, count), stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self) -> Run:
        left = max(1.0, self.timeout - (time.monotonic() - self.start))
        try:
            rc = self.proc.wait(timeout=left)
            out = self.output.read_text(errors="replace")
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
            rc = None
            out = self.output.read_text(errors="replace")
            out += f"\n[e2e harness: killed after {self.timeout} s]"
        run = Run(self.cmd, self.cwd, rc, time.monotonic() - self.start, out)
        if self.rank_logs is None:
            run.rank_output = {0: out}
        else:  # torchrun --redirects 3: <log-dir>/<run id>/attempt_<n>/<local rank>/std*.log
            for rank in range(self.nproc):
                texts = [p.read_text(errors="replace")
                         for name in ("stdout.log", "stderr.log")
                         for p in sorted(self.rank_logs.glob(f"*/attempt_*/{rank}/{name}"))]
                run.rank_output[rank] = "\n".join(texts)
        run.probe = Probe.read(self.probe_dir) if self.probe_dir is not None else None
        return run


def start_torchrun(script: Path, args: Sequence[str], cwd: Path, probe_dir: Optional[Path],
                   nproc: int = WORLD, timeout: float = TIMEOUT_S, count: bool = False) -> Pending:
    """Start ``torchrun --standalone --nproc_per_node=N script args`` in ``cwd`` (``count``: the
    probe also counts DDP's gradient all-reduce rounds before each optimizer step)."""
    log_dir = cwd.parent / f"{cwd.name}.torchrun-logs"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={nproc}", "--redirects", "3", "--log-dir", str(log_dir),
           str(script), *args]
    return Pending(cmd, cwd, probe_dir, timeout, log_dir, nproc, count)


def start_python(script: Path, args: Sequence[str], cwd: Path, probe_dir: Optional[Path],
                 timeout: float = TIMEOUT_S) -> Pending:
    """Start ``python script args`` in ``cwd``: one process, no launcher."""
    return Pending([sys.executable, str(script), *args], cwd, probe_dir, timeout)


BATCH_JOB = Path(__file__).resolve().parents[1] / "support" / "batch_job.py"


@dataclass
class Program:
    """One program of a batch: ``script args`` run in ``cwd``, the probe recording into ``probe_dir``."""

    script: Path
    args: Sequence[str]
    cwd: Path
    probe_dir: Path


def _logs(program: Program) -> Path:
    return program.cwd.parent / f"{program.cwd.name}.logs"


class PendingBatch:
    """A started batch (``tests/support/batch_job.py``): every program in one launch, each in its
    own process forked from the launched one; ``wait()`` returns a Run per program, as separate
    launches would."""

    def __init__(self, programs: Dict[str, Program], root: Path, nproc: Optional[int],
                 timeout: float = TIMEOUT_S, count: bool = False):
        self.programs, self.nproc, self.timeout = programs, nproc or 1, timeout
        root.mkdir(parents=True, exist_ok=True)
        spec = []
        for p in programs.values():
            _logs(p).mkdir()
            spec.append({"script": str(p.script), "args": list(p.args), "cwd": str(p.cwd),
                         "probe_dir": str(p.probe_dir), "logs": str(_logs(p))})
        (root / "batch.json").write_text(json.dumps(spec, indent=1))
        self.launch = [sys.executable]
        if nproc is not None:
            self.launch += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
        # Each program gets `timeout` (batch_job kills it past that); the launch, all of theirs.
        self.pending = Pending([*self.launch, str(BATCH_JOB), str(root / "batch.json"), str(timeout)], root,
                               root / "probe-launch", timeout * len(programs) + 60, count=count)

    def wait(self) -> Dict[str, Run]:
        launch = self.pending.wait()
        return {key: self._run(p, launch) for key, p in self.programs.items()}

    def _run(self, program: Program, launch: Run) -> Run:
        """Program ``program``'s Run, from what batch_job left in its logs folder."""
        results, rank_output, notes = {}, {}, []
        for rank in range(self.nproc):
            result, log = _logs(program) / f"{rank}.json", _logs(program) / f"{rank}.log"
            rank_output[rank] = log.read_text(errors="replace") if log.is_file() else ""
            if not result.is_file():
                results[rank] = {"returncode": None, "wall_s": launch.wall_s}
                notes.append(f"rank {rank}: the batch launch ended (rc {launch.returncode}) before this "
                             f"program did:\n{launch.tail()}")
                continue
            results[rank] = json.loads(result.read_text())
            if results[rank]["returncode"] is None:
                notes.append(f"rank {rank}: killed: past {self.timeout:g} s, or it failed on another rank")
        returncode = next((r["returncode"] for r in results.values() if r["returncode"] != 0), 0)
        cmd = [*self.launch, str(program.script), *program.args]
        wall_s = max(r["wall_s"] for r in results.values())
        if self.nproc == 1 and not notes:  # one process: its output is the run's, as start_python's
            run = Run(cmd, program.cwd, returncode, wall_s, rank_output[0])
            run.rank_output = {0: run.output}
        else:
            run = Run(cmd, program.cwd, returncode, wall_s, "\n".join(notes), rank_output)
        run.probe = Probe.read(program.probe_dir)
        return run


def start_batch(programs: Dict[str, Program], root: Path, nproc: Optional[int] = WORLD,
                count: bool = False) -> PendingBatch:
    """Start ``programs`` in one launch: ``torchrun --standalone --nproc_per_node=nproc`` (None:
    plain ``python``, one process per program); ``count`` as for ``start_torchrun``."""
    return PendingBatch(programs, root, nproc, count=count)


def run_torchrun(*args, **kwargs) -> Run:
    return start_torchrun(*args, **kwargs).wait()


def run_python(*args, **kwargs) -> Run:
    return start_python(*args, **kwargs).wait()


# --------------------------------------------------------------------------- checks on the records


SHARDED_SAMPLERS = ("DistributedSampler", "ShardedSampler")


def is_sharded(info: dict) -> bool:
    return info["sampler"] in SHARDED_SAMPLERS


def prefixed_keys(save_event: dict) -> List[str]:
    """Keys of a saved mapping (top level or one level down) that DDP/compile prefixed."""
    keys = list(save_event.get("keys") or [])
    for outer, inner in (save_event.get("nested") or {}).items():
        keys += [f"{outer}/{k}" for k in inner]
    return [k for k in keys if k.rsplit("/", 1)[-1].startswith(WRAPPER_PREFIXES)]


def check_sharded_passes(probe: Probe, world: int, loader: int) -> List[str]:
    """Problems with one sharded loader's passes across ``world`` ranks (empty: all good).

    Every rank makes the same number of passes over the same data (the same `Subset` of a
    `random_split`), and fetches the same number of samples in each (uneven counts hang DDP). A pass may end early (a step budget, ``next(iter(loader))``
    to peek at a batch) as long as every rank ends it alike. Without replacement
    (DistributedSampler): the ranks' indices are disjoint except DistributedSampler's padding
    (fewer than ``world`` repeats), and a complete pass covers the dataset (all of it, or all
    but ``world * batch_size`` when the loader drops last batches).
    """
    problems = []
    passes = probe.passes()
    per_rank = [passes.get((r, loader), []) for r in range(world)]
    counts = [len(p) for p in per_rank]
    if len(set(counts)) != 1:
        return [f"loader {loader}: the ranks made different numbers of passes: {counts}"]
    for number, group in enumerate(zip(*per_rank), 1):
        sizes = [len(p.indices) for p in group]
        info = group[0].info
        where = f"loader {loader} ({info['dataset']}, len {info['dataset_len']}) pass {number}"
        subsets = {p.info.get("subset") for p in group}
        if len(subsets) != 1:
            problems.append(f"{where}: the ranks shard different subsets of the data (an unseeded "
                            f"random_split?): {sorted(map(str, subsets))}")
        if len(set(sizes)) != 1:
            problems.append(f"{where}: ranks fetched different numbers of samples: {sizes}")
            continue
        if len({p.complete for p in group}) != 1:
            problems.append(f"{where}: complete on some ranks only")
        replicas = {p.info.get("num_replicas") for p in group}
        sampler_ranks = sorted(p.info.get("sampler_rank") for p in group)
        if replicas != {world} or sampler_ranks != list(range(world)):
            problems.append(f"{where}: {info['sampler']} num_replicas {replicas}, ranks "
                            f"{sampler_ranks} (expected {world} replicas, ranks 0..{world - 1})")
        if info["sampler"] != "DistributedSampler":
            continue  # drawn with replacement (ShardedSampler over a weighted sampler): no
            # disjointness to check; the caller checks what that sampler promises
        everything = [i for p in group for i in p.indices]
        repeats = len(everything) - len(set(everything))
        if repeats >= world:
            problems.append(f"{where}: {repeats} indices fetched twice (by two ranks, or twice "
                            f"by one; DistributedSampler padding allows < {world})")
        if group[0].complete:
            covered = len(set(everything))
            n = info["dataset_len"]
            floor = n - world * (info["batch_size"] or 1) if info["drop_last"] else n
            if covered < floor:
                problems.append(f"{where}: the ranks together covered {covered} of {n} samples "
                                f"(expected at least {floor})")
    return problems


def split_problems(probe: Probe, world: int, loader: int) -> List[str]:
    """Problems with one loader split for evaluation (``ExactSplitSampler``) across ``world``
    ranks: in every pass each sample is fetched by exactly one rank (no padding, nothing
    dropped), the ranks' shares differ by at most one sample, and each rank reads a contiguous
    block of the loader's order (so concatenating the ranks' results in rank order restores it)."""
    problems = []
    per_rank = [probe.passes().get((r, loader), []) for r in range(world)]
    counts = [len(p) for p in per_rank]
    if len(set(counts)) != 1 or not counts[0]:
        return [f"loader {loader}: passes per rank {counts}"]
    for number, group in enumerate(zip(*per_rank), 1):
        info = group[0].info
        where = f"loader {loader} ({info['dataset']}, len {info['dataset_len']}) pass {number}"
        everything = [i for p in group for i in p.indices]
        sizes = [len(p.indices) for p in group]
        if sorted(everything) != list(range(info["dataset_len"])):
            problems.append(f"{where}: the ranks fetched {len(everything)} indices, {len(set(everything))} "
                            f"distinct, of {info['dataset_len']} (expected each exactly once)")
        if max(sizes) - min(sizes) > 1 or not all(p.complete for p in group):
            problems.append(f"{where}: shares {sizes}, complete {[p.complete for p in group]}")
        if info.get("inner") == "SequentialSampler" and everything != sorted(everything):
            problems.append(f"{where}: a sequential loader's blocks are out of order")
    return problems


def whole_problems(probe: Probe, world: int, loader: int) -> List[str]:
    """Problems with a loader evaluated whole: every complete pass on every rank fetches each sample
    once (all of them, or all but the tail a ``drop_last`` loader leaves)."""
    problems = []
    for rank in range(world):
        for p in complete_passes(probe, rank, loader):
            everything = range(p.info["dataset_len"])
            if len(set(p.indices)) != len(p.indices) or not set(p.indices) <= set(everything) or \
                    not p.info["drop_last"] and len(p.indices) != len(everything):
                problems.append(f"loader {loader} rank {rank} pass {p.number}: {len(p.indices)} samples, "
                                f"not the whole set of {p.info['dataset_len']}")
    return problems


def evaluation_loaders(probe: Probe) -> Dict[int, str]:
    """Loader number -> "split" (ExactSplitSampler) or "whole" (any sampler that does not shard),
    for every iterated loader that training does not shard."""
    return {number: "split" if info["sampler"] == "ExactSplitSampler" else "whole"
            for number, info in sorted(probe.loaders().items()) if not is_sharded(info)}


def complete_passes(probe: Probe, rank: int, loader: int) -> List[Pass]:
    return [p for p in probe.passes().get((rank, loader), []) if p.complete]


def check_reshuffled(probe: Probe, world: int, loader: int) -> List[str]:
    """Every complete pass on every rank draws an order no earlier pass drew (also when a second
    training counts its epochs from 0 again)."""
    problems = []
    for rank in range(world):
        complete = complete_passes(probe, rank, loader)
        if len(complete) < 2:
            problems.append(f"loader {loader} rank {rank}: fewer than 2 complete passes, "
                            "cannot check reshuffling")
        for i, b in enumerate(complete):
            same = [a.number for a in complete[:i] if a.indices == b.indices]
            if same:
                problems.append(f"loader {loader} rank {rank}: pass {b.number} fetched the same order as "
                                f"pass {same[0]} (set_epoch missing, or the same epoch again?)")
    return problems


def check_params_identical(probe: Probe, world: int) -> List[str]:
    problems = []
    params = probe.params()
    for model, by_rank in sorted(params.items()):
        if sorted(by_rank) != list(range(world)):
            problems.append(f"model {model}: parameters dumped by ranks {sorted(by_rank)}")
            continue
        digests = {r: e["sha256"][:12] for r, e in by_rank.items()}
        if len(set(digests.values())) != 1:
            sums = {r: e["sum"] for r, e in by_rank.items()}
            problems.append(f"model {model} ({by_rank[0]['module']}): parameters differ across "
                            f"ranks: sha256 {digests}, sums {sums}")
    return problems


def check_optimizers_identical(probe: Probe, world: int) -> List[str]:
    """Every optimizer's parameters are the same on every rank after its 2nd step and at exit (a
    model trained bare on each rank's shard, or trained before DDP wrapped it, differs at one of
    them; DDP's broadcast at the wrap hides the second from the final weights)."""
    problems = []
    for when in ("step2", "exit"):
        for number, by_rank in sorted(probe.optimizers(when).items()):
            if sorted(by_rank) != list(range(world)):
                problems.append(f"optimizer {number} ({when}): recorded by ranks {sorted(by_rank)}")
                continue
            digests = {r: (e["sha256"] or "sharded")[:12] for r, e in by_rank.items()}
            if len(set(digests.values())) != 1:
                problems.append(f"optimizer {number} ({by_rank[0]['optimizer']}, {when}, "
                                f"{by_rank[0]['steps']} steps): parameters differ across ranks: {digests}")
    return problems


def sharded_loaders(probe: Probe, dataset_len: int) -> List[int]:
    """Numbers of the iterated, sharded loaders over a dataset of ``dataset_len`` samples."""
    return [number for number, info in sorted(probe.loaders().items())
            if info["dataset_len"] == dataset_len and is_sharded(info)]


def _load_probe_module():
    spec = importlib.util.spec_from_file_location("ddpify_test_probe", PROBE / "sitecustomize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def digest(named_parameters) -> str:
    """The probe's parameter hash, for comparing a checkpoint with a rank's final weights."""
    return _load_probe_module().digest(named_parameters)


def files_under(folder: Path) -> List[str]:
    """Relative paths of the files a run left in its working directory."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
