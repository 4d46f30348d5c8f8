"""`ddpify run`: convert a script into a file next to it and launch that under torchrun.

The command line is `[ddpify's and torchrun's options] SCRIPT [the script's arguments]`: the
first argument that is not an option (or an option's value) is the script, everything after it
belongs to the script. torchrun runs as `python -m torch.distributed.run` with this interpreter,
in a process group of its own: a Ctrl-C (SIGINT) or SIGTERM that reaches ddpify is forwarded to
that whole group (torchrun and its workers), ddpify waits for it, removes the converted file
and exits with 128 + the signal's number. Nothing here imports torch.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ddpify.io import InputError

CONVERTED_SUFFIX = ".ddpify.py"
OWN_FLAGS = frozenset({"--keep"})
STRATEGIES = ("ddp", "fsdp")  # `--strategy S`, ddpify's own option with a value
# torchrun's options that take no value; every other option takes one (`--opt V` or `--opt=V`).
TORCHRUN_FLAGS = frozenset({"--standalone", "--virtual-local-rank", "--virtual_local_rank"})
# torchrun's options that do not run a Python file, which ddpify needs to convert.
NOT_A_SCRIPT = frozenset({"-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path"})
NPROC = ("--nproc-per-node", "--nproc_per_node")
# With any of these, the user sets up the rendezvous: no `--standalone`.
RENDEZVOUS_PREFIXES = ("--standalone", "--rdzv", "--master", "--nnodes")
RENDEZVOUS_ENV = ("PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_MASTER_ADDR", "PET_NNODES")
DEFAULT_NPROC = "auto"  # torchrun: one process per GPU, or per CPU core without an accelerator
ESCALATION = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)  # forwarded on the 1st, 2nd, 3rd signal


@dataclass
class Plan:
    """`ddpify run`'s command line, split."""

    script: Path
    script_args: list[str] = field(default_factory=list)
    torchrun_args: list[str] = field(default_factory=list)
    keep: bool = False
    strategy: str = "ddp"


def parse(args: list[str]) -> Plan:
    """Split `ddpify run`'s arguments; `InputError` for a missing script or an option ddpify
    cannot honour."""
    torchrun: list[str] = []
    keep, strategy = False, "ddp"
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        arg = args[i]
        name = arg.split("=", 1)[0]
        if arg == "--":
            i += 1
            break
        if name in NOT_A_SCRIPT:
            raise InputError(f"ddpify run: {name} is not supported: ddpify converts a Python script, "
                             "so give its path")
        if arg in OWN_FLAGS:
            keep = True
        elif name == "--strategy":
            strategy = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            i += "=" not in arg
            if strategy not in STRATEGIES:
                raise InputError(f"ddpify run: --strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        elif "=" in arg or arg in TORCHRUN_FLAGS:
            torchrun.append(arg)
        elif i + 1 < len(args):
            torchrun += [arg, args[i + 1]]
            i += 1
        else:
            raise InputError(f"ddpify run: {arg} needs a value")
        i += 1
    if i >= len(args):
        raise InputError("ddpify run: no script given (usage: ddpify run [OPTIONS] SCRIPT [ARGS]...)")
    if not torch_installed():
        raise InputError("ddpify run: torch is not installed (torchrun comes with it): pip install 'ddpify[torch]'")
    return Plan(Path(args[i]), list(args[i + 1:]), torchrun, keep, strategy)


def torch_installed() -> bool:
    """Is torch importable here? Found without importing it (`ddpify check` and `convert` need
    only LibCST and click; torch is what `run` and the converted scripts need)."""
    return importlib.util.find_spec("torch") is not None


def converted_path(script: Path) -> Path:
    """Where the converted copy of `script` goes: next to it (so that its sibling imports and
    relative paths keep working), named so that nobody takes it for the original."""
    return script.with_name(script.stem + CONVERTED_SUFFIX)


def torchrun_command(plan: Plan, target: Path, env: dict[str, str] | None = None) -> list[str]:
    """`python -m torch.distributed.run` with the user's options, plus `--standalone` and
    `--nproc_per_node=auto` unless the user (or a PET_* variable) set them."""
    env = os.environ if env is None else env
    given = [a.split("=", 1)[0] for a in plan.torchrun_args if a.startswith("-")]
    defaults = []
    if not any(name.startswith(RENDEZVOUS_PREFIXES) for name in given) and \
            not any(v in env for v in RENDEZVOUS_ENV):
        defaults.append("--standalone")
    if not any(name in NPROC for name in given) and "PET_NPROC_PER_NODE" not in env:
        defaults.append(f"--nproc_per_node={DEFAULT_NPROC}")
    return [sys.executable, "-m", "torch.distributed.run", *defaults, *plan.torchrun_args,
            str(target), *plan.script_args]


def run_job(command: list[str]) -> int:
    """Run `command` in a process group of its own and return its exit code. SIGINT and SIGTERM
    are forwarded to the group (a second signal escalates to SIGTERM, a third to SIGKILL); then
    the exit code is 128 + the first signal's number. Whatever is left of the group when the
    launcher exits is killed, so no worker outlives the job."""
    received: list[int] = []
    proc = subprocess.Popen(command, start_new_session=True)

    def forward(signum, frame):
        received.append(signum)
        _signal_group(proc.pid, ESCALATION[min(len(received), len(ESCALATION)) - 1])

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    if received:
        return 128 + received[0]
    return code if code >= 0 else 128 - code  # torchrun itself killed by a signal


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass
