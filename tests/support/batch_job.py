"""Run many programs in one launch, each in a fresh process forked from one that imported torch once.

    python -m torch.distributed.run ... batch_job.py SPEC.json TIMEOUT   (each worker runs every program)
    python batch_job.py SPEC.json TIMEOUT                                (plain: one process per program)

SPEC.json lists the programs, in order: ``{"script", "args", "cwd", "probe_dir", "logs"}``. The
launched process imports torch (and, with ``DDPIFY_PROBE_DIR`` set, the probe's patches) once,
then for each program forks a process that is what ``python script args`` in ``cwd`` would be:
``__main__`` run from the script, ``sys.argv`` and ``sys.path[0]`` as Python sets them, its own
exit and ``atexit`` hooks, nothing of the programs before it. Its standard output and error go
to ``LOGS/<rank>.log``, the probe records into ``probe_dir`` (``probe.restart``), and the worker
writes ``LOGS/<rank>.json``: the exit code (None: killed) and the seconds it ran. This saves a
launch per program: the launcher's, and every worker's, interpreter start and ``import torch``.

Under torchrun each program gets its own process group: rank 0's worker picks a free port for it
(``BATCH/<n>.port``), where the program's rank 0 hosts the store (torchrun's agent store would
hand the second program the first one's keys). A program that fails on one rank is stopped on
the others (``BATCH/<n>.failed``), as torchrun stops the other workers of a failed launch; one
that runs past TIMEOUT seconds is killed.
"""

import json
import os
import runpy
import signal
import socket
import sys
import time

# Imported once here, the point of the batch: torch, and what torch imports on the way through a
# training step under DDP or FSDP (dynamo, by the optimizers and DDP; fsdp, by the runtime).
import torch  # noqa: F401
import torch._dynamo  # noqa: F401
import torch.distributed.fsdp  # noqa: F401
import torch.nn.parallel  # noqa: F401

POLL_S = 0.05
PEER_GRACE_S = 5.0


def _port(batch: str, number: int, rank: int, deadline: float) -> str:
    """The port of program ``number``'s store: rank 0 picks it, the other ranks read it."""
    path = os.path.join(batch, f"{number}.port")
    if rank == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        with open(path + ".tmp", "w") as f:
            f.write(port)
        os.replace(path + ".tmp", path)
        return port
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"batch_job: rank 0 never started program {number}")
        time.sleep(POLL_S)
    with open(path) as f:
        return f.read()


def _child(program: dict, rank: int, port) -> None:
    """Become ``python script args`` in the program's folder (never returns)."""
    os.chdir(program["cwd"])
    log = os.open(os.path.join(program["logs"], f"{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    if port is not None:
        os.environ.update(MASTER_PORT=port, TORCHELASTIC_USE_AGENT_STORE="False")
    script = os.path.abspath(program["script"])
    sys.argv = [program["script"], *program["args"]]
    sys.path[0] = os.path.dirname(script)
    if program["probe_dir"] is not None:
        os.environ["DDPIFY_PROBE_DIR"] = program["probe_dir"]
        sys.modules["sitecustomize"].restart(program["probe_dir"], [sys.executable, *sys.argv])
    runpy.run_path(script, run_name="__main__")
    sys.exit(0)


def _wait(pid: int, failed: str, deadline: float):
    """The child's exit code; None when it was killed (past ``deadline``, or after another rank's
    process of the same program failed)."""
    peer_failed_at = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        now = time.monotonic()
        if peer_failed_at is None and os.path.exists(failed):
            peer_failed_at = now
        if now > deadline or peer_failed_at is not None and now - peer_failed_at > PEER_GRACE_S:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(POLL_S)


def main() -> None:
    spec = sys.argv[1]
    with open(spec) as f:
        programs = json.load(f)
    batch = os.path.dirname(os.path.abspath(spec))
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    timeout = float(sys.argv[2])
    for number, program in enumerate(programs):
        start = time.monotonic()
        port = _port(batch, number, rank, start + timeout) if world > 1 else None
        failed = os.path.join(batch, f"{number}.failed")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(program, rank, port)
        code = _wait(pid, failed, start + timeout)
        if code != 0:
            open(failed, "a").close()
        with open(os.path.join(program["logs"], f"{rank}.json"), "w") as f:
            json.dump({"returncode": code, "wall_s": time.monotonic() - start}, f)


if __name__ == "__main__":
    main()
