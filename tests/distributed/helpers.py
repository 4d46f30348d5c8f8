"""Launch converted fixtures on CPU (gloo) and read what the probe recorded.

Every launch runs with ``OMP_NUM_THREADS=1``, without any launcher variable inherited from the
test's environment, in its own session (so a timeout kills the launcher and its workers), and
with a timeout. The probe (``tests/support/probe/sitecustomize.py``) is switched on per launch
and ``tests/support/records.py`` reads what it recorded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ddpify.convert import Options, convert
from tests.support.env import FIXTURES, free_port, probe_env  # noqa: F401 (free_port: for the tests)
from tests.support.records import Probe

TIMEOUT_S = 120
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def convert_fixture(name: str, target: Path, options: Options = Options()) -> Path:
    """Convert ``fixtures/<name>/before.py`` with ``options`` and write it to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(convert((FIXTURES / name / "before.py").read_bytes(), options).output)
    return target


def env(probe_dir: Optional[Path] = None, count: bool = False, **extra: str) -> Dict[str, str]:
    """The test's environment minus launcher variables; the probe on when ``probe_dir``."""
    return probe_env(probe_dir, count, **extra)


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


# --------------------------------------------------------------------------- checks on the records


def shard_problems(probe: Probe, world: int, dataset_len: int, loader: Optional[int] = None) -> List[str]:
    """Every rank makes the same passes with equal counts; within a pass the ranks' indices are
    disjoint (except DistributedSampler's padding, < ``world`` repeats) and cover the dataset."""
    loader = probe.first_loader() if loader is None else loader
    passes = probe.indices(loader)
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
