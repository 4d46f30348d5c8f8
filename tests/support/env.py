"""Environments for launching converted scripts: no launcher variable leaks in from the test's
own environment, one thread per process, and the probe switched on where asked."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
PROBE = Path(__file__).resolve().parent / "probe"  # holds sitecustomize.py: put it on PYTHONPATH
STANDINS = Path(__file__).resolve().parent / "standins"  # packages not installed here (tensorboardX), beside it

# What torchrun, torch.distributed.launch and ddpify_runtime read; SLURM_*, TORCHELASTIC_*,
# DDPIFY_* and the fixtures' FAIL_ON_RANK* switches are dropped by prefix.
LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE",
               "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE", "GROUP_WORLD_SIZE")
DROPPED_PREFIXES = ("SLURM_", "TORCHELASTIC_", "DDPIFY_", "FAIL_ON_RANK")
# The test runner's window (pytest-xdist's workers export COLUMNS=80 and LINES=24, which
# shutil.get_terminal_size reads before the terminal): a launched process sizes itself by its own.
TERMINAL_VARS = ("COLUMNS", "LINES")


def clean_env(**extra: str) -> Dict[str, str]:
    """The test's environment without any launcher variable or window size, one thread,
    unbuffered, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k not in LAUNCH_VARS + TERMINAL_VARS and not k.startswith(DROPPED_PREFIXES)}
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def with_probe(env: Dict[str, str], **switches: str) -> Dict[str, str]:
    """``env`` with the probe first on ``PYTHONPATH`` (then the stand-ins) and ``switches``
    (``DDPIFY_PROBE_DIR=...``)."""
    path = os.pathsep.join(filter(None, [str(PROBE), str(STANDINS), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, **switches}


def probe_env(probe_dir: Optional[Path], count: bool = False, **extra: str) -> Dict[str, str]:
    """``clean_env(**extra)``; with ``probe_dir`` the recording probe writes its events there
    (``count``: and counts DDP's gradient buckets through a comm hook)."""
    env = clean_env(**extra)
    if probe_dir is None:
        return env
    switches = {"DDPIFY_PROBE_DIR": str(probe_dir)}
    if count:
        switches["DDPIFY_PROBE_COUNT"] = "1"
    return with_probe(env, **switches)


def free_port() -> int:
    """A TCP port nobody listens on right now (bind port 0, read it back, release it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_job(source: str, folder: Path, nproc: int = 2, timeout: float = 120):
    """Write ``source`` to ``folder/job.py`` and run it under ``torchrun --standalone`` with
    ``folder`` as its argument; it must exit 0. Returns the finished process and what each rank
    wrote to ``folder/rank<R>.json``."""
    script = folder / "job.py"
    script.write_text(source)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           f"--nproc_per_node={nproc}", str(script), str(folder)],
                          env=clean_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc, [json.loads((folder / f"rank{r}.json").read_text()) for r in range(nproc)]
