"""`ddpify run`: split its command line, place the converted script in a private folder, build
the torchrun command (on one machine or under SLURM), run it and forward signals to it.

The command line is `[ddpify's and torchrun's options] SCRIPT [the script's arguments]`: the
first argument that is not an option (or an option's value) is the script, everything after it
belongs to the script. torchrun runs as this interpreter's `torch.distributed.run`, in a process
group of its own: SIGINT, SIGTERM or SIGHUP reaching ddpify is forwarded to that group
(torchrun, which stops its workers), ddpify waits for it and exits with 128 + the signal's
number; a third signal, or torchrun's end, kills whatever of the job is left.
Nothing here imports torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Mapping, Sequence

from ddpify.inputs import owner
from ddpify.inputs.files import InputError

# torchrun's options that take no value; every other option takes one (`--opt V` or `--opt=V`).
TORCHRUN_FLAGS = frozenset({"--standalone", "--virtual-local-rank", "--virtual_local_rank"})
# torchrun's options that do not run a Python file, which ddpify needs to convert.
NOT_A_SCRIPT = frozenset({"-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path"})
NPROC = ("--nproc-per-node", "--nproc_per_node")
NNODES = ("--nnodes",)
# With any of these, the user sets up the rendezvous: no `--standalone`, no SLURM defaults.
RENDEZVOUS_PREFIXES = ("--standalone", "--rdzv", "--master", "--nnodes", "--node-rank", "--node_rank")
RENDEZVOUS_ENV = ("PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_MASTER_ADDR", "PET_NNODES")
# With any of these the user chose where the workers' output goes: ddpify passes it through.
OUTPUT_OPTIONS = ("--redirects", "-r", "--tee", "-t", "--local-ranks-filter", "--local_ranks_filter")
LOG_DIR = ("--log-dir", "--log_dir")
NPROC_WORDS = ("auto", "cpu", "gpu", "cuda", "xpu")  # torchrun's --nproc-per-node words
# torchrun's and ddpify's options that a script hardly takes: after the script, a mistake.
LAUNCH_ONLY = frozenset({*NPROC, *NNODES, "--standalone", "--node-rank", "--node_rank", "--master-addr",
                         "--master_addr", "--master-port", "--master_port", "--rdzv-backend", "--rdzv_backend",
                         "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--sbatch", "--dry-run"})
CPU_PROCESSES = 4  # the default number of processes without a GPU (see `default_nproc`)
SLURM_PORTS = (20000, 10000)  # the rendezvous port under SLURM: 20000 + job id % 10000
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ESCALATION = (signal.SIGTERM,)  # sent on the 2nd signal; the 3rd kills the job (`_kill_job`)


@dataclass
class Plan:
    """`ddpify run`'s command line, split."""

    script: Path
    script_args: list[str] = field(default_factory=list)
    torchrun_args: list[str] = field(default_factory=list)
    own_args: list[str] = field(default_factory=list)  # ddpify's own options, as given

    def given(self, names: tuple[str, ...]) -> str | None:
        """The value of the torchrun option spelled as one of `names`, or None."""
        args = self.torchrun_args
        for i, arg in enumerate(args):
            name, _, value = arg.partition("=")
            if name in names:
                return value if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
        return None


def parse(args: list[str], own: Mapping[str, bool]) -> Plan:
    """Split `ddpify run`'s arguments; `own` maps ddpify's own options to whether they take a
    value. `InputError` for a missing script or an option ddpify cannot honour."""
    torchrun: list[str] = []
    mine: list[str] = []
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
        into = mine if name in own else torchrun
        takes_value = own[name] if name in own else arg not in TORCHRUN_FLAGS
        if "=" in arg or not takes_value:
            into.append(arg)
        elif i + 1 < len(args):
            into += [arg, args[i + 1]]
            i += 1
        else:
            raise InputError(f"ddpify run: {arg} needs a value")
        i += 1
    if i >= len(args):
        raise InputError("ddpify run: no script given (usage: ddpify run [OPTIONS] SCRIPT [ARGS]...)")
    if args[i - 1:i] != ["--"]:
        late = next((a for a in args[i + 1:] if a.split("=", 1)[0] in LAUNCH_ONLY), None)
        if late is not None:
            name = late.split("=", 1)[0]
            raise InputError(f"ddpify run: {name} comes after the script, so it would go to {Path(args[i]).name}: "
                             f"put it before the script (ddpify run {name} ... {args[i]}), or `--` before "
                             "the script to pass it on")
    return Plan(Path(args[i]), list(args[i + 1:]), torchrun, mine)


def check_nproc(nproc: str) -> str | None:
    """`InputError` for a process count torchrun would reject with a traceback; a warning (or
    None) where more processes than cores would share this machine's cores."""
    if nproc.isdigit():
        if int(nproc) < 1:
            raise InputError(f"ddpify run: --nproc-per-node {nproc}: at least 1 process")
        if int(nproc) > cpu_count():
            return (f"ddpify run: warning: {nproc} processes on {cpu_count()} core(s): each waits for a core "
                    "(slower than fewer processes)")
        return None
    if nproc not in NPROC_WORDS:
        raise InputError(f"ddpify run: --nproc-per-node {nproc!r}: a number, or one of {', '.join(NPROC_WORDS)}")
    return None


def torch_installed() -> bool:
    """Is torch importable here? Found without importing it (`ddpify check` and `convert` need
    only LibCST and click; torch is what `run` and the converted scripts need)."""
    return importlib.util.find_spec("torch") is not None


# ---- how many processes, how many threads ------------------------------------------------------

def gpu_count(env: Mapping[str, str] | None = None) -> int:
    """GPUs this process may use, found without importing torch: NVIDIA's driver lists one
    folder per GPU under /proc/driver/nvidia/gpus (narrowed by CUDA_VISIBLE_DEVICES); AMD's
    ROCm driver shows /dev/kfd (counted as one: torchrun's `auto` then finds them all)."""
    env = os.environ if env is None else env
    try:
        found = len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        found = 1 if os.path.exists("/dev/kfd") else 0
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and found:
        found = min(found, len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"]))
    return found


def cpu_count() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_nproc(env: Mapping[str, str] | None = None) -> str:
    """The processes per node when the user gives no number: one per GPU where there are GPUs
    (torchrun's `auto`), else `min(4, cores)`. torchrun's `auto` without a GPU starts one per
    core, 64 on a 64-core machine: 64 copies of the model and the data in memory, each with one
    thread, and a gloo all-reduce across all of them per step. On CPU a DDP run mostly tries a
    conversion out; a few processes show the sharding and the collectives, and each gets its
    share of the cores as threads (`omp_threads`)."""
    return "auto" if gpu_count(env) else str(min(CPU_PROCESSES, cpu_count()))


def local_processes(nproc: str, env: Mapping[str, str] | None = None) -> int:
    """How many processes `--nproc-per-node nproc` starts on this machine."""
    if nproc.isdigit():
        return max(1, int(nproc))
    gpus = gpu_count(env)
    return gpus if nproc in ("gpu", "cuda") or nproc == "auto" and gpus else cpu_count()


def omp_threads(nproc: str, env: Mapping[str, str] | None = None) -> str:
    """OMP_NUM_THREADS for each of `nproc` processes: the cores shared between them."""
    return str(max(1, cpu_count() // local_processes(nproc, env)))


# ---- SLURM -------------------------------------------------------------------------------------

def first_host(nodelist: str) -> str:
    """The first host of a SLURM node list: `node[03-05,9],gpu1` -> `node03`."""
    first, depth = "", 0
    for char in nodelist:
        if char == "," and depth == 0:
            break
        depth += (char == "[") - (char == "]")
        first += char
    return re.sub(r"\[([^\],-]+)[^\]]*\]", r"\1", first.strip())


def slurm_args(env: Mapping[str, str]) -> list[str]:
    """torchrun's rendezvous options for a job step that `srun` started once per node: the node
    count, this node's rank, the first node as the rendezvous host and the job id as the run id.
    Empty outside `srun` (a batch script or an `salloc` shell has no step variables) and for one
    node (then `--standalone`)."""
    if "SLURM_STEP_NUM_NODES" not in env or "SLURM_NODEID" not in env:
        return []
    nodes, tasks = (env.get(name) or "" for name in ("SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS"))
    if not nodes.isdigit() or not (tasks or nodes).isdigit():
        raise InputError(f"ddpify run: SLURM_STEP_NUM_NODES={nodes!r}, SLURM_STEP_NUM_TASKS={tasks!r}: "
                         "not node and task counts")
    nodes, tasks = int(nodes), int(tasks or nodes)
    if tasks != nodes:
        raise InputError(f"ddpify run: srun started {tasks} tasks on {nodes} node(s): start one per node "
                         "(srun --ntasks-per-node=1 ddpify run ...); torchrun starts each node's processes")
    if nodes == 1:
        return []
    job = env.get("SLURM_JOB_ID", "")
    host = first_host(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST", ""))
    port = env.get("MASTER_PORT") or str(SLURM_PORTS[0] + (int(job) if job.isdigit() else 0) % SLURM_PORTS[1])
    return [f"--nnodes={nodes}", f"--node-rank={env['SLURM_NODEID']}", f"--master-addr={host}",
            f"--master-port={port}", f"--rdzv-id={job}"]


def sbatch_script(plan: Plan, own_args: list[str]) -> str:
    """A batch script that runs the same `ddpify run` on `--nnodes` nodes (default 1) with
    `--nproc-per-node` GPUs each: one srun task per node, each a torchrun of its node. Every
    word of the command is shell-quoted; the script's name in `#SBATCH` lines (which no shell
    reads) keeps only letters, digits, `.`, `_` and `-`."""
    nodes = plan.given(NNODES) or "1"
    if not re.fullmatch(r"[0-9]+(:[0-9]+)?", nodes):
        raise InputError(f"ddpify run: --nnodes {nodes!r}: not a node count (N or MIN:MAX)")
    nproc = plan.given(NPROC)
    rest, skip = [], False
    for arg in plan.torchrun_args:  # --nnodes becomes #SBATCH --nodes; srun's variables give the rest
        if skip:
            skip = False
            continue
        if arg.split("=", 1)[0] in NNODES:
            skip = "=" not in arg
            continue
        rest.append(arg)
    command = [sys.executable, "-m", "ddpify", "run", *own_args, *rest, str(plan.script), *plan.script_args]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", plan.script.stem) or "ddpify"  # #SBATCH lines are not shell
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --nodes={nodes}",
             "#SBATCH --ntasks-per-node=1"]
    if nproc and nproc.isdigit():
        lines.append(f"#SBATCH --gpus-per-node={nproc}")
    lines += [f"#SBATCH --output={name}-%j.out", "",
              "# one task per node; each runs torchrun, which starts that node's processes",
              f"cd {shlex.quote(os.getcwd())}", f"srun {shlex.join(command)}"]
    return "\n".join(lines) + "\n"


# ---- the private folder ------------------------------------------------------------------------

class Workspace:
    """A folder of one run's own: the converted script (and, for a project, its converted
    modules), torchrun's logs. Made with `tempfile.mkdtemp`, so it is new, private (0700) and
    unique: two runs of one script never share a file, and nothing in it belongs to the user.
    `add` writes files into it by relative path; `remove` deletes it and only it; `keep` leaves it
    to the user. Until then its marker (`MARKER`) names the ddpify process it is for, so that a
    later run removes it where that process was killed (`remove_stale`)."""

    def __init__(self) -> None:
        import tempfile  # here, as shutil below: `ddpify convert` imports this module for `default_nproc`

        self.path = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
        try:
            (self.path / MARKER).write_text(json.dumps(owner.me()))
        except OSError:
            self.remove()
            raise

    def add(self, files: Mapping[str, bytes], mode: int | None = None) -> list[Path]:
        """Write `files` ({relative POSIX path: bytes}) into the folder; the paths written."""
        written = []
        for rel, data in files.items():
            parts = PurePosixPath(rel).parts
            if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
                raise ValueError(f"not a relative path inside the run's folder: {rel!r}")
            path = self.path.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            if mode is not None:
                path.chmod(mode)
            written.append(path)
        return written

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.path, ignore_errors=True)

    def keep(self) -> None:
        """The folder is the user's now (kept after a failure, `--keep`, `--dry-run`): never a stale one."""
        (self.path / MARKER).unlink(missing_ok=True)


RUN_PREFIX = "ddpify-run-"
MARKER = ".ddpify-run.json"  # in a run's folder while its ddpify runs: {"host", "pid", "started"}


def remove_stale() -> list[Path]:
    """Remove the folders that runs killed by SIGKILL left in $TMPDIR: this user's
    `ddpify-run-*` folders whose marker names a process that has ended. The folders of running
    jobs, the folders kept for the user and anything without the marker stay; the folders removed."""
    import shutil
    import tempfile

    folder = Path(tempfile.gettempdir())
    removed = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(RUN_PREFIX)]
    except OSError:
        return []
    for name in names:
        path = folder / name
        try:
            if os.lstat(path).st_uid != os.getuid() or not path.is_dir() or path.is_symlink():
                continue
            ours = json.loads((path / MARKER).read_text())
        except (OSError, ValueError):
            continue
        if owner.gone(ours):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def script_name(script: Path) -> str:
    """The converted script's name in the run's folder: the script's own (`train.py`, so that
    tracebacks and `sys.argv[0]` read as the user's), and for a notebook `NAME.ipynb.py`, which
    no import can reach (a sibling `NAME.py` stays the one that `import NAME` finds)."""
    return script.name if script.suffix == ".py" else script.name + ".py"


# ---- the command and its environment -----------------------------------------------------------

# torchrun's own interpreter: `python -m` and `-c` put the working directory first on sys.path
# (a `torch.py` there would be imported); the entry is dropped, as is the script's folder, which
# PYTHONPATH carries for the workers only. What remains is what the `torchrun` command sees.
LAUNCHER = ("import os, sys; folder = {folder!r}; "
            "sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != folder]; "
            "from torch.distributed.run import main; main()")


def torchrun_command(plan: Plan, target: Path, log_dir: Path, capture: bool,
                     env: Mapping[str, str] | None = None) -> list[str]:
    """torchrun with the user's options, plus defaults for what they did not set: the
    rendezvous (from SLURM's step variables under `srun`, else `--standalone`), the process
    count (`default_nproc`), the log folder `log_dir` (torchrun's own default is a folder of
    its own under $TMPDIR, left behind) and, with `capture`, each worker's stdout and stderr
    into files there, which `ddpify.run.joblog` shows. The script's arguments follow a `--`, which
    torchrun drops: without it, torchrun's parser takes a script option that abbreviates several of
    its own (`--log` for `--log-dir` and `--logs-specs`) for one of them and stops, "ambiguous option"."""
    env = os.environ if env is None else env
    given = [a.split("=", 1)[0] for a in plan.torchrun_args if a.startswith("-")]
    defaults = []
    if not any(name.startswith(RENDEZVOUS_PREFIXES) for name in given) and \
            not any(v in env for v in RENDEZVOUS_ENV):
        defaults += slurm_args(env) or ["--standalone"]
    if not any(name in NPROC for name in given) and "PET_NPROC_PER_NODE" not in env:
        defaults.append(f"--nproc-per-node={env.get('SLURM_GPUS_ON_NODE') or default_nproc(env)}")
    defaults += (["--redirects=3"] if capture else []) + ([] if plan.given(LOG_DIR) else [f"--log-dir={log_dir}"])
    return [sys.executable, "-c", LAUNCHER.format(folder=script_folder(plan)), *defaults, *plan.torchrun_args,
            str(target), *(["--"] if plan.script_args else []), *plan.script_args]


def captures_output(plan: Plan, verbose: bool) -> bool:
    """Whether ddpify shows the workers' output itself (rank 0's live, the first failure's
    traceback at the end): not with --verbose, nor when the user chose torchrun's --redirects,
    --tee or --local-ranks-filter."""
    return not verbose and not any(a.split("=", 1)[0] in OUTPUT_OPTIONS for a in plan.torchrun_args)


def script_folder(plan: Plan) -> str:
    """The folder the script really lives in, as `python SCRIPT` puts on sys.path: a symlinked
    script's siblings are those of the file it links to."""
    return os.path.dirname(os.path.realpath(plan.script))


def job_env(plan: Plan, nproc: str, env: Mapping[str, str] | None = None,
            workspace: Path | None = None, folders: Sequence[Path] = ()) -> dict[str, str]:
    """The job's environment: the script's folder first on PYTHONPATH (the run's folder comes
    before it, as the folder of the script that runs), the user's entries, then `folders` (those
    outside the script's that the program's modules were imported from: their unchanged modules,
    beside the converted ones in the run's folder), and OMP_NUM_THREADS unless the user set
    it (torchrun would set 1 with a four-line notice). PYTHONPATH splits on `:`, so a folder
    named with one (`exp_12:30`) is reached through a link to it in the run's `workspace`.
    From a terminal, DDPIFY_TERMINAL_SIZE tells rank 0 (whose output is relayed from a file) the
    window's size, so its progress bars fit it as under torchrun."""
    env = dict(os.environ if env is None else env)
    folder = script_folder(plan)
    if os.pathsep in folder and workspace is not None:
        link = workspace / "script-folder"
        if not link.is_symlink():
            link.symlink_to(folder, target_is_directory=True)
        folder = str(link)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, env.get("PYTHONPATH"),
                                                      *(str(f) for f in folders if os.pathsep not in str(f))]))
    env.setdefault("OMP_NUM_THREADS", omp_threads(nproc, env))
    if sys.stdout.isatty():  # rank 0's output is relayed from a file: tell it the window's size
        import shutil

        size = shutil.get_terminal_size()
        env.setdefault("DDPIFY_TERMINAL_SIZE", f"{size.columns}x{size.lines}")
    return env


@dataclass
class Finished:
    """How a job ended: its exit code, and the signal that stopped it (0 if none)."""

    code: int
    signal: int = 0


def run_job(command: list[str], env: Mapping[str, str] | None = None, output: Path | None = None,
            on_signal=None) -> Finished:
    """Run `command` in a process group of its own (its stdout and stderr into the file `output`
    if given) and wait for it. SIGINT, SIGTERM and SIGHUP are forwarded to the group (a second
    signal escalates to SIGTERM, a third kills every process of the job; `on_signal` is called
    at the first); the exit code is then 128 + the first signal's number. Whatever is left of
    the job when the launcher exits is killed, so no worker outlives it; where ddpify itself is
    killed (SIGKILL, which it cannot catch), Linux sends the launcher SIGTERM, on which torchrun
    stops its workers. A signal ignored when ddpify starts (`nohup` ignores SIGHUP) stays ignored,
    by the job too."""
    received: list[int] = []
    sink = open(output, "wb") if output is not None else None
    try:
        proc = subprocess.Popen(command, env=env, start_new_session=True, stdout=sink, stderr=sink,
                                preexec_fn=_parent_death_signal())
    finally:
        if sink is not None:
            sink.close()

    def forward(signum, frame):
        received.append(signum)
        if len(received) >= len(ESCALATION) + 1:
            _kill_job(proc.pid)
            return
        _signal_group(proc.pid, signum if len(received) == 1 else ESCALATION[len(received) - 2])
        if len(received) == 1 and on_signal is not None:
            on_signal(signum)

    previous = {s: signal.signal(s, forward) for s in FORWARDED if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        code = proc.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _kill_job(proc.pid)
        proc.wait()
    if received:
        return Finished(128 + received[0], received[0])
    return Finished(code if code >= 0 else 128 - code)  # torchrun itself killed by a signal


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that started it ends


def _parent_death_signal():
    """A `preexec_fn` that has the launcher sent SIGTERM when ddpify dies, or None off Linux.
    libc's prctl is looked up here, before the fork: the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _kill_job(pid: int) -> None:
    """SIGKILL the launcher `pid`, its process group, and every process it started: torchrun
    starts each worker in a session of its own, which a signal to its group does not reach."""
    for target in [pid, *_descendants(pid)]:
        try:
            group = os.getpgid(target)
        except (ProcessLookupError, PermissionError):
            continue
        if group != os.getpgrp():
            _signal_group(group, signal.SIGKILL)
    _signal_group(pid, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs, from Linux's /proc (none found elsewhere)."""
    found, parents = [], [pid]
    while parents:
        parent = parents.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(k) for k in children.read_text().split()]
            except (OSError, ValueError):
                continue
            found += kids
            parents += kids
    return found


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass
