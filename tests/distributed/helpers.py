"""Launch converted fixtures on CPU (gloo) and read what the probe recorded.

Every launch runs with ``OMP_NUM_THREADS=1``, without any launcher variable inherited from the
test's environment, in its own session (so a timeout kills the launcher and its workers), and
with a timeout. The probe (``probe/sitecustomize.py``) is switched on per launch.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ddpify.convert import Options, convert

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
PROBE = Path(__file__).resolve().parent / "probe"
TIMEOUT_S = 120
LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE",
               "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE", "GROUP_WORLD_SIZE")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def free_port() -> int:
    """A TCP port nobody listens on right now (bind port 0, read it back, release it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def convert_fixture(name: str, target: Path, options: Options = Options()) -> Path:
    """Convert ``fixtures/<name>/before.py`` with ``options`` and write it to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(convert((FIXTURES / name / "before.py").read_bytes(), options).output)
    return target


def env(probe_dir: Optional[Path] = None, count: bool = False, **extra: str) -> Dict[str, str]:
    """The test's environment minus launcher variables; the probe on when ``probe_dir``."""
    result = {k: v for k, v in os.environ.items()
              if k not in LAUNCH_VARS and not k.startswith(("SLURM_", "TORCHELASTIC_", "DDPIFY_",
                                                            "FAIL_ON_RANK"))}
    result.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    if probe_dir is not None:
        result["DDPIFY_DIST_PROBE_DIR"] = str(probe_dir)
        result["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROBE), result.get("PYTHONPATH")]))
        if count:
            result["DDPIFY_DIST_PROBE_COUNT"] = "1"
    result.update(extra)
    return result


@dataclass
class Done:
    cmd: List[str]
    returncode: Optional[int]  # None: killed at the timeout
    output: str  # stdout + stderr
    wall_s: float

    def __str__(self) -> str:
        tail = "\n".join(self.output.rstrip().splitlines()[-40:])
        return f"$ {' '.join(self.cmd)}\nrc={self.returncode} after {self.wall_s:.1f} s\n{tail}"


class Job:
    """One started process (a launcher or a worker), in its own session."""

    def __init__(self, cmd: Sequence[str], cwd: Path, environ: Dict[str, str]) -> None:
        self.cmd = [str(c) for c in cmd]
        self.start = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, cwd=cwd, env=environ, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def wait(self, timeout: float = TIMEOUT_S) -> Done:
        try:
            out, _ = self.proc.communicate(timeout=max(1.0, timeout))
            rc = self.proc.returncode
        except subprocess.TimeoutExpired:
            self.kill()
            out, _ = self.proc.communicate()
            rc, out = None, out + f"\n[tests/distributed: killed after {timeout:.0f} s]"
        return Done(self.cmd, rc, out, time.monotonic() - self.start)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run(cmd: Sequence[str], cwd: Path, environ: Dict[str, str], timeout: float = TIMEOUT_S) -> Done:
    return Job(cmd, cwd, environ).wait(timeout)


def run_all(cmds: Sequence[Sequence[str]], cwd: Path, environs: Sequence[Dict[str, str]],
            timeout: float = TIMEOUT_S) -> List[Done]:
    """Start every command at once; wait for all of them under one shared deadline."""
    jobs = [Job(cmd, cwd, e) for cmd, e in zip(cmds, environs)]
    deadline = time.monotonic() + timeout
    try:
        return [job.wait(deadline - time.monotonic()) for job in jobs]
    finally:
        for job in jobs:
            job.kill()


def torchrun(script: Path, *args: str, nproc: int = 2, launcher: Sequence[str] = ()) -> List[str]:
    """``torchrun --standalone --nproc_per_node=N script args`` (or ``launcher`` options)."""
    options = list(launcher) or ["--standalone"]
    return [*TORCHRUN, *options, f"--nproc_per_node={nproc}", str(script), *args]


# --------------------------------------------------------------------------- probe records


class Probe:
    """Events of every worker process of one launch, grouped by global rank."""

    def __init__(self, probe_dir: Path) -> None:
        self.events: List[dict] = []
        for path in sorted(probe_dir.glob("*.jsonl")) if probe_dir.is_dir() else []:
            self.events += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def of(self, ev: str, rank: Optional[int] = None) -> List[dict]:
        return [e for e in self.events if e["ev"] == ev and (rank is None or e["rank"] == rank)]

    def init(self) -> Dict[int, dict]:
        """rank -> its ``init`` event (fails if two processes claim one rank)."""
        by_rank: Dict[int, dict] = {}
        for e in self.of("init"):
            assert e["rank"] not in by_rank, f"two processes joined as rank {e['rank']}"
            by_rank[e["rank"]] = e
        return by_rank

    def first_loader(self) -> Optional[int]:
        """The first-created loader that fetched anything: the training loader of the fixtures
        here (``shard_loader`` rebuilds a loader, so the original, never iterated, is skipped)."""
        return min((e["loader"] for e in self.of("fetch") if e["loader"] is not None), default=None)

    def passes(self, loader: Optional[int] = None) -> Dict[int, List[List[int]]]:
        """rank -> the indices fetched in each pass over ``loader`` (creation number; default:
        ``first_loader()``)."""
        loader = self.first_loader() if loader is None else loader
        by_rank: Dict[int, Dict[int, List[int]]] = defaultdict(lambda: defaultdict(list))
        for e in self.of("fetch"):
            if e["loader"] == loader:
                by_rank[e["rank"]][e["pass"]].extend(e["idx"])
        return {r: [p[k] for k in sorted(p)] for r, p in sorted(by_rank.items())}

    def batches(self, loader: Optional[int] = None) -> Dict[int, List[int]]:
        """rank -> the number of batches fetched in each pass over ``loader`` (as ``passes``)."""
        loader = self.first_loader() if loader is None else loader
        by_rank: Dict[int, Dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for e in self.of("fetch"):
            if e["loader"] == loader:
                by_rank[e["rank"]][e["pass"]] += 1
        return {r: [p[k] for k in sorted(p)] for r, p in sorted(by_rank.items())}

    def saves(self) -> Dict[int, List[str]]:
        by_rank: Dict[int, List[str]] = defaultdict(list)
        for e in self.of("save"):
            by_rank[e["rank"]].append(e["path"])
        return dict(by_rank)


def shard_problems(probe: Probe, world: int, dataset_len: int, loader: Optional[int] = None) -> List[str]:
    """Every rank makes the same passes with equal counts; within a pass the ranks' indices are
    disjoint (except DistributedSampler's padding, < ``world`` repeats) and cover the dataset."""
    loader = probe.first_loader() if loader is None else loader
    passes = probe.passes(loader)
    problems = []
    if sorted(passes) != list(range(world)):
        return [f"ranks that fetched from loader {loader}: {sorted(passes)}, expected 0..{world - 1}"]
    counts = {r: len(p) for r, p in passes.items()}
    if len(set(counts.values())) != 1:
        return [f"passes per rank differ: {counts}"]
    for number, group in enumerate(zip(*(passes[r] for r in range(world)))):
        sizes = [len(g) for g in group]
        everything = [i for g in group for i in g]
        repeats = len(everything) - len(set(everything))
        if len(set(sizes)) != 1:
            problems.append(f"pass {number}: ranks fetched {sizes} samples")
        if repeats >= world:
            problems.append(f"pass {number}: {repeats} indices fetched by more than one rank")
        if set(everything) != set(range(dataset_len)):
            problems.append(f"pass {number}: the ranks covered {len(set(everything))} of "
                            f"{dataset_len} samples")
    return problems
