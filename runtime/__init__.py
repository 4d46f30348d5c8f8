"""ddpify_runtime: the small runtime that scripts converted by ddpify import.

``init_distributed_mode()`` reads the launch from the environment (torchrun, SLURM ``srun``, or
none), binds the process to its GPU (``LOCAL_RANK`` for the device, ``RANK`` for identity),
initialises the process group (``cpu:gloo,cuda:nccl`` on CUDA, ``gloo`` otherwise). With no
launcher it still creates a one-process group on an in-memory store, so ``DistributedSampler``, DDP and barriers
work unchanged under plain ``python``. The other helpers work before initialisation too (rank 0
of 1): rank queries, ``unwrap``, ``without_module_prefix``, ``set_epoch``, ``agree_on`` and
loader sharding (``ShardedSampler``, ``shard_loader``).

With more than one process the runtime keeps the script's single-process meaning:

* Random state: what a single process would make once is the same on every rank, what is drawn
  per sample differs. ``init_distributed_mode()`` gives every rank rank 0's state of the torch
  (CPU), ``random`` and numpy generators, so data splits, synthetic data and random targets made
  before training agree even when the script never seeds. A training pass starts at a
  ``set_epoch()``: there ranks > 0 switch to their own streams (seeded from
  ``torch.initial_seed()`` and their rank at the first pass, resumed at later ones), so dropout,
  augmentation, generator noise and DataLoader worker seeds are not one stream copied N times.
  The ``end_epoch()`` that ends the epoch gives every rank rank 0's state again, so draws between
  trainings (a permutation, a new model's weights) agree too. Rank 0 is never touched: it draws
  exactly what the single-process run draws. A script that seeds after ``init_distributed_mode()``
  keeps that seed; samplers (``DistributedSampler``, ``ShardedSampler``) seed their own streams,
  and a sampler asked for an epoch again (a second training from epoch 0) gets a new one.
* Terminal: on ranks > 0 ``print`` and ``sys.stdout`` (progress bars written with
  ``sys.stdout.write``, logging to stdout) are silenced, from the runtime's import under a
  launcher (what a script prints before ``init_distributed_mode()`` too);
  ``print(..., force=True)`` still prints and ``sys.stderr`` (warnings, tracebacks) is left
  alone, but for log records below WARNING that a logging handler writes there
  (``logging.basicConfig()``'s default, a ``logging.StreamHandler()`` added to the root logger):
  the main process logs them once, as it prints once; every process still logs its warnings and
  errors, and log files are the conversion's. ``DDPIFY_ALL_RANKS=1`` shows every rank's output,
  for debugging.
* Errors: an uncaught DDP error about parameters that got no gradient ends with a line naming
  ``ddpify convert --find-unused-parameters``, and ``penalty_gradients`` for a gradient penalty
  (the only way out where the model that raised finds unused parameters already).
* Self-check (``DDPIFY_VERIFY``): during the first training steps the runtime checks that every
  stepped parameter is in DDP or FSDP, that training loaders are sharded and reshuffled, that the
  processes' parameters agree after the 2nd step (exchanged through the store, a bounded wait:
  a process that never gets there is a finding, not a hang) and that their batch counts do; then
  its hooks go. The main process prints one block per finding time, at the user's lines. A process waiting
  in a runtime collective for nearly the timeout makes every process print where it is.

Stdlib and torch only, one file with no relative imports: it can be copied next to a converted
script as ``ddpify_runtime.py`` on machines where ddpify is not installed.
"""

import atexit
import builtins
import contextlib
import copy
import datetime
import functools
import gc
import hashlib
import io
import itertools
import logging
import math
import operator
import os
import random
import re
import sys
import types
import warnings
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, List, Mapping, Optional

import torch
import torch.distributed as dist
from torch.utils.data import (BatchSampler, DataLoader, DistributedSampler, IterableDataset,
                              RandomSampler, Sampler, SequentialSampler)

# What a script may import, by section (the `# ---- title` banners below, and docs/runtime.md).
# The upper-case constants are the runtime's own settings, not API.
__all__ = [
    # launch detection
    "Launch", "detect_launch", "parse_nodelist",
    # process group
    "init_distributed_mode",
    # ranks and collectives
    "get_rank", "get_world_size", "is_main_process", "local_rank", "local_device", "barrier",
    "main_process_first", "agree_on", "agree_any", "agree_all", "from_main_process", "atomic_write", "open_on_main",
    "log_config_on_main", "bar_file",
    # models
    "device_ids", "convert_sync_batchnorm", "unwrap", "without_module_prefix", "penalty_gradients",
    "sync_gradients", "average_gradients",
    # data
    "set_epoch", "end_epoch", "endless", "ShardedSampler", "shard_loader", "shard_batches", "agree_random_state",
    "own_random_stream",
    # fsdp
    "shard_model", "sharded_blocks", "full_state_dict", "load_full_state_dict",
    "full_optimizer_state_dict", "load_full_optimizer_state_dict",
    # evaluation
    "ExactSplitSampler", "shard_eval", "reduce_sum", "gather_ordered", "sum_over_shards", "mean_over_shards",
    "gather_over_shards",
    # self-check
    "SelfCheckError",
]

DEFAULT_PORT = 29500
# A rank that stops dead (SIGSTOP, a hung GPU) ends the job after this long: torch's own default
# for NCCL. Raise it with DDPIFY_TIMEOUT where one process works alone for longer between
# collectives (a large download in main_process_first, a very long save).
DEFAULT_TIMEOUT_S = 600
# The process group with CUDA: nccl for tensors on GPUs, gloo for those the program keeps on the CPU
GPU_BACKEND = "cpu:gloo,cuda:nccl"
MATERIALISE_UP_TO = 10_000_000  # ShardedSampler holds a stream up to this length in memory
SAMPLER_DEPTH = 8  # samplers looked at in a loader's chain of wrapped samplers (``_sampler_chain``)

# --------------------------------------------------------------------------- launch detection


@dataclass(frozen=True)
class Launch:
    """Where this process sits in the job: launcher in {"torchrun", "slurm", "none"}."""

    launcher: str
    rank: int
    local_rank: int
    world_size: int
    master_addr: Optional[str]
    master_port: Optional[int]


def _int(environ: Mapping[str, str], name: str, default: Optional[int] = None) -> int:
    value = environ.get(name)
    if value is None and default is not None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"ddpify: environment variable {name}={value!r} is not an integer"
                         ) from None


def detect_launch(environ: Mapping[str, str]) -> Launch:
    """Read the launch from ``environ`` without touching torch.distributed.

    torchrun variables (``RANK``, ``WORLD_SIZE``) win over SLURM's (under torchrun inside a
    SLURM job, ``SLURM_PROCID`` is 0 in every process); with neither, one process.
    """
    if "RANK" in environ and "WORLD_SIZE" in environ:
        launch = Launch("torchrun", _int(environ, "RANK"), _int(environ, "LOCAL_RANK", 0),
                        _int(environ, "WORLD_SIZE"), environ.get("MASTER_ADDR", "127.0.0.1"),
                        _int(environ, "MASTER_PORT", DEFAULT_PORT))
    elif "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ:
        nodelist = (environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST")
                    or environ.get("SLURM_NODELIST") or "127.0.0.1")
        if "MASTER_PORT" in environ:
            port = _int(environ, "MASTER_PORT")
        elif "SLURM_JOB_ID" in environ:  # same port on every node, different across jobs
            port = 20000 + _int(environ, "SLURM_JOB_ID") % 10000
        else:
            port = DEFAULT_PORT
        launch = Launch("slurm", _int(environ, "SLURM_PROCID"), _int(environ, "SLURM_LOCALID", 0),
                        _int(environ, "SLURM_NTASKS"),
                        environ.get("MASTER_ADDR") or parse_nodelist(nodelist)[0], port)
    else:
        return Launch("none", 0, 0, 1, None, None)
    if not 0 <= launch.rank < launch.world_size:
        raise ValueError(f"ddpify: rank {launch.rank} is outside world size {launch.world_size}")
    return launch


def parse_nodelist(nodelist: str) -> List[str]:
    """Expand a SLURM host list: ``node[01-03,07],login`` -> node01 node02 node03 node07 login."""
    hosts, depth, start = [], 0, 0
    for i, char in enumerate(nodelist + ","):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            if nodelist[start:i].strip():
                hosts.extend(_expand_host(nodelist[start:i].strip()))
            start = i + 1
    return hosts


def _expand_host(pattern: str) -> List[str]:
    """Cartesian product of every bracket group in one host pattern, as scontrol does."""
    if "[" not in pattern:
        return [pattern]
    head, rest = pattern.split("[", 1)
    ranges, tail = rest.split("]", 1)
    choices = []
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        if not high:
            choices.append(low)
            continue
        choices.extend(str(n).zfill(len(low)) for n in range(int(low), int(high) + 1))
    return [head + choice + suffix for choice in choices for suffix in _expand_host(tail)]


# --------------------------------------------------------------------------- the runtime's state


class _State:
    """What the runtime remembers in this process, in one object (as Accelerate's ``PartialState``):
    the runtime's functions write it, tests read it, ``_reset_for_tests()`` sets it back to its
    start. The process group itself is torch's."""

    def __init__(self) -> None:
        self.launch: Optional[Launch] = None  # set by init_distributed_mode()
        # random state across ranks (docs/decisions/0007): a training pass runs from a
        # set_epoch() to the end_epoch() that ends its epoch
        self.in_pass = False
        self.passes = 0  # training passes started so far
        self.first_depth = 0  # main_process_first() blocks this process is inside
        self.own_streams: Any = None  # ranks > 0: their own generators' states between passes
        self.own_draws: Any = None  # every rank: its own generators' states between own_random_stream() blocks
        # terminal output
        self.stdout: Any = None  # the real standard output, where print(..., force=True) goes
        self.sink: Any = None  # what sys.stdout became on a quiet rank
        self.quiet_logs = False  # a quiet rank: log records below WARNING are not written to sys.stderr
        self.eval_splits: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # shard_eval's copies
        self.remade: "dict[tuple[str, int], Any]" = {}  # shard_loader's line -> the last sampler it made there
        self.remade_over: "dict[int, Any]" = {}  # id of a data set -> the last sampler shard_loader made over it
        self.numbered_at: "dict[tuple[Any, int], Any]" = {}  # (set_epoch's line, n) -> the n-th sampler it numbered last
        # self-check
        self.self_check: Any = None  # the installed _SelfCheck, while any of its hooks is in place
        self.exit_check: Any = None  # the installed _SelfCheck, until it compared the models at exit
        self.failed = False  # an exception ended the program (the excepthook saw it)
        self.installs = 0  # self-checks installed so far: names their exchanges in the store
        self.watchdog: Any = None
        self.waiting: Any = None  # (what, (file, line), since): this process waits in a runtime collective
        self.shown: "dict[str, str]" = {}  # file name -> as a finding or a hang report shows it
        self.first_forward_undo: Any = None  # puts DistributedDataParallel.__init__ back (_install_first_forward_sync)
        self.moved_to_gpu = False  # device_ids() moved a CPU model to this process's GPU (said once)
        self.full_batches_undo: Any = None  # puts DataLoader.__init__ back (_install_full_batches)
        self.kept_full: "set[tuple[str, int]]" = set()  # the lines of loaders whose batches were kept full (said once)
        self.wrapped: "list[tuple[int, Any]]" = []  # (number, weak reference) of each live DDP (_resync_wrapped)
        self.wraps_made = 0  # DDP models built so far: their numbers, the same on every process
        self.resynced: "set[int]" = set()  # the numbers of the wrapped models _resync_wrapped said it resynced
        self.thawed: "set[str]" = set()  # the models _average_once_unfrozen said it averages unfrozen parameters of
        self.shard_batches: "dict[tuple[str, int], tuple[int, int]]" = {}  # shard_loader's line -> (batches whole, per process)


_STATE = _State()


class _SyncedMark:
    """A parameter's ``_ddpify_synced`` while a hook of this process averages its gradient (or the
    program's ``average_gradients`` before each step: ``sync_gradients(..., at_step=True)``): true
    here, and ``False`` once pickled (``torch.save(model)`` of a synced model), since the hook is not
    pickled: a process that loads the model and syncs it again hooks its parameters again (a saved
    ``True`` made ``sync_gradients`` skip them, and their gradients were never averaged)."""

    def __bool__(self) -> bool:
        return True

    def __reduce__(self) -> tuple:
        return (bool, ())


_SYNCED = _SyncedMark()


def _reset_for_tests() -> None:
    """Set the runtime's state back to its start, as a fresh import has it (for tests); the
    self-check's hooks go first. The process group, ``print`` and ``sys.stdout`` stay as they are."""
    if _STATE.self_check is not None:
        _STATE.self_check.remove()
    if _STATE.first_forward_undo is not None:
        _STATE.first_forward_undo()
    if _STATE.full_batches_undo is not None:
        _STATE.full_batches_undo()
    _STATE.__init__()


# --------------------------------------------------------------------------- process group

_BUILTIN_PRINT = builtins.print


def init_distributed_mode(backend: Optional[str] = None) -> None:
    """Join the process group of this launch (idempotent: a second call does nothing).

    The backend: ``DDPIFY_BACKEND`` if set, else ``backend`` (``"gloo"`` where the conversion found
    that the program places nothing on an accelerator: it keeps training on the CPU on a GPU
    machine), else ``cpu:gloo,cuda:nccl`` with CUDA (nccl for the tensors on GPUs, gloo for those a
    program keeps on the CPU, as ``charrnn``'s ``if cuda: net.cuda()`` does when not asked) and
    ``gloo`` without. Then, with more than one process, every rank takes rank 0's random state
    (``_share_random_state``); ranks > 0 silence their standard output, and the log records below
    WARNING that logging's stream handlers write to their standard error, unless
    ``DDPIFY_ALL_RANKS=1`` (``_setup_output``, ``_install_quiet_logs``); and a hint follows DDP's unused-parameter error
    (``_install_excepthook``). ``DDPIFY_TIMEOUT`` (seconds) sets the 10 min timeout of every
    collective.
    """
    if _STATE.launch is not None:
        return
    launch = detect_launch(os.environ)
    verify = _verify_mode(os.environ, launch.world_size)
    if torch.cuda.is_available():
        torch.cuda.set_device(launch.local_rank % torch.cuda.device_count())
    backend = os.environ.get("DDPIFY_BACKEND") or backend or (GPU_BACKEND if torch.cuda.is_available() else "gloo")
    timeout = datetime.timedelta(seconds=float(os.environ.get("DDPIFY_TIMEOUT", DEFAULT_TIMEOUT_S)))
    if not dist.is_initialized():
        if launch.launcher == "none":
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1,
                                    timeout=timeout)
        else:
            for name, value in [("MASTER_ADDR", launch.master_addr),
                                ("MASTER_PORT", launch.master_port), ("RANK", launch.rank),
                                ("WORLD_SIZE", launch.world_size),
                                ("LOCAL_RANK", launch.local_rank)]:
                os.environ.setdefault(name, str(value))
            dist.init_process_group(backend, init_method="env://", timeout=timeout)
        atexit.register(_destroy)
    _STATE.launch = launch
    if get_world_size() > 1:
        _share_random_state()
    _setup_output(get_rank(), os.environ)
    _share_terminal_size(get_rank(), os.environ)
    _install_excepthook()
    if get_world_size() > 1:
        _install_first_forward_sync()
        _install_full_batches()
    _install_self_check(verify, timeout.total_seconds())
    if get_rank() == 0 and get_world_size() > 1:
        _BUILTIN_PRINT(f"ddpify: {get_world_size()} processes ({launch.launcher}, {dist.get_backend()})",
                       file=sys.stderr)


def _destroy() -> None:
    """At exit: free what still holds the process group, then destroy it, while the interpreter
    is fully alive. DDP's wrapper sits in reference cycles, so after the script returns its
    reducer (and through it gloo's worker threads) would otherwise live until interpreter
    finalization, where their destruction aborted 1 launch in ~17 ("terminate called without an
    active exception", SIGABRT on the rank that finished first)."""
    if dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()


# ---------------------------------------------------------------- random state across ranks


def _random_states() -> Any:
    """This process's torch (CPU, and CUDA on this device once CUDA is in use), ``random`` and
    numpy generator states, as plain values (pickling a tensor would go through torch.save)."""
    numpy = sys.modules.get("numpy")  # imported by torch when installed; optional here
    cuda = torch.cuda.get_rng_state().tolist() if torch.cuda.is_available() and torch.cuda.is_initialized() \
        else None
    return (torch.get_rng_state().tolist(), cuda, random.getstate(),
            numpy.random.get_state() if numpy is not None else None)


def _set_random_states(states: Any) -> None:
    torch_state, cuda_state, python_state, numpy_state = states
    torch.set_rng_state(torch.tensor(torch_state, dtype=torch.uint8))
    if cuda_state is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(torch.tensor(cuda_state, dtype=torch.uint8))
    random.setstate(python_state)
    numpy = sys.modules.get("numpy")
    if numpy is not None and numpy_state is not None:
        numpy.random.set_state(numpy_state)


def _share_random_state() -> None:
    """Give every rank rank 0's torch, ``random`` and numpy generator states.

    Outside training passes a single process would draw once what every rank now draws: a
    ``random_split``, a synthetic data set, random targets, a permutation or a new model's
    initial weights between two trainings. Copying rank 0's states (rather than re-seeding)
    leaves rank 0 exactly as the single-process run and keeps a seed the script set before
    ``init_distributed_mode()``. A collective: every rank calls it, after the group exists.
    """
    states = [_random_states()]
    dist.broadcast_object_list(states, src=0)
    if get_rank() != 0:
        _set_random_states(states[0])


def _start_pass() -> None:
    """A training pass starts (``set_epoch``): ranks > 0 draw from their own streams, seeded at
    their first pass (``_diverge_random_state``), resumed where their last pass left them after."""
    _STATE.in_pass = True
    _STATE.passes += 1
    if get_rank() != 0:
        if _STATE.own_streams is None:
            _diverge_random_state(get_rank())
        else:
            _set_random_states(_STATE.own_streams)
    elif _STATE.passes == 1:  # said here, where a sharded loader exists, not at start-up (a script may have none)
        _BUILTIN_PRINT(f"ddpify: batch sizes are per process: global batch = batch_size x "
                       f"{get_world_size()}", file=sys.stderr)


def _end_pass() -> None:
    """The training pass ends (``end_epoch()``): ranks > 0 keep their own streams for the next
    pass and take rank 0's, the single process's, until then."""
    _STATE.in_pass = False
    if get_rank() != 0:
        _STATE.own_streams = _random_states()
    _share_random_state()


def _diverge_random_state(rank: int) -> None:
    """Re-seed torch (CPU and CUDA), ``random`` and numpy for training on rank ``rank`` > 0.

    The seed is a hash of ``torch.initial_seed()`` (the script's seed, or rank 0's shared one)
    and the rank: the same in every run with the same seed, different on every rank, so that
    dropout, augmentation and noise are not copies of rank 0's stream.
    """
    digest = hashlib.sha256(f"ddpify:{torch.initial_seed()}:{rank}".encode()).digest()
    seed = int.from_bytes(digest[:8], "little") >> 1
    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


# --------------------------------------------------------------------------- terminal output


def _quiet(rank: int, environ: Mapping[str, str]) -> bool:
    """True when this process's output is silenced: ranks > 0 unless ``DDPIFY_ALL_RANKS`` is
    set to anything but ``""`` or ``"0"``."""
    return rank != 0 and environ.get("DDPIFY_ALL_RANKS", "") in ("", "0")


def _setup_output(rank: int, environ: Mapping[str, str]) -> None:
    """Install ``print`` (``_setup_print``) and, on a quiet rank, swap ``sys.stdout`` for
    ``os.devnull``: writes that bypass ``print`` (progress bars, logging handlers created later
    on ``sys.stdout``, library chatter) vanish too. ``sys.stderr`` is left alone.

    Called again (by ``init_distributed_mode()`` where the runtime's import quieted the process
    already, ``_quiet_before_init``), a quiet rank keeps the sink in place (what took
    ``sys.stdout`` meanwhile keeps writing nowhere) and a rank that prints gets the real
    ``sys.stdout`` back."""
    quiet = _quiet(rank, environ)
    _setup_print(quiet)
    _STATE.quiet_logs = quiet
    _install_quiet_logs()
    if quiet and _STATE.sink is None:
        _STATE.stdout, _STATE.sink = sys.stdout, open(os.devnull, "w")
        sys.stdout = _STATE.sink
        _move_log_handlers(_STATE.stdout, _STATE.sink)
    elif not quiet and _STATE.sink is not None:
        if sys.stdout is _STATE.sink:
            sys.stdout = _STATE.stdout
        _move_log_handlers(_STATE.sink, _STATE.stdout)
        _STATE.sink = None


def _move_log_handlers(old: Any, new: Any) -> None:
    """Point the logging handlers that write to ``old`` at ``new``: a handler made on
    ``sys.stdout`` before the process was quieted (``logging.basicConfig(stream=sys.stdout)`` in a
    module the script imports before the runtime) kept the real standard output, and every
    process logged to the terminal."""
    loggers = [logging.getLogger(), *(lg for lg in list(logging.Logger.manager.loggerDict.values())
                                      if isinstance(lg, logging.Logger))]
    for logger in loggers:
        for handler in list(logger.handlers):
            if isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) is old:
                handler.setStream(new)


def _install_quiet_logs() -> None:
    """Make ``logging.StreamHandler`` drop, on a quiet rank (``_STATE.quiet_logs``), a record below
    WARNING that it would write to the standard error: a script's ``logging.basicConfig(level=...)``
    or ``logger.addHandler(logging.StreamHandler())`` logs to stderr, which stays every process's
    (tracebacks, warnings), and each INFO line showed once per process (the nineteenth sweep's
    few-shot GNN and SimCLR trainer). Handlers made before or after this, on any logger, are
    covered (the class's method, replaced once); a FileHandler (a stream of its own) and other
    streams are not touched. Warnings and errors still come from every process: they may differ."""
    emit = logging.StreamHandler.emit
    if getattr(emit, "ddpify_quiet", False):
        return

    def quiet_emit(self: Any, record: Any) -> None:
        if _STATE.quiet_logs and record.levelno < logging.WARNING \
                and (self.stream is sys.stderr or self.stream is sys.__stderr__):
            return
        emit(self, record)

    quiet_emit.ddpify_quiet = True  # type: ignore[attr-defined]
    logging.StreamHandler.emit = quiet_emit  # type: ignore[method-assign]


def _quiet_before_init(environ: Mapping[str, str]) -> None:
    """At the runtime's import, under a launcher of more than one process: a process other than
    the main one is quiet already (``_setup_output`` by the launcher's rank), so what a converted
    script prints before ``init_distributed_mode()`` (a version at the top of the module, the
    runtime being imported with the script's imports) is said once, as everything after it.
    ``init_distributed_mode()`` sets the output up again by the process group's rank. A launch
    the environment does not describe well is left to ``init_distributed_mode()`` to report."""
    try:
        launch = detect_launch(environ)
    except ValueError:
        return
    if launch.world_size > 1 and _quiet(launch.rank, environ):
        _setup_output(launch.rank, environ)


def _share_terminal_size(rank: int, environ: Mapping[str, str]) -> None:
    """Under ``ddpify run``, rank 0's output reaches the user's terminal through a log file, so
    ``os.get_terminal_size`` of its stdout and stderr fails and progress bars take a width that
    wraps in a narrow window. ``DDPIFY_TERMINAL_SIZE=COLSxLINES`` (set by ``ddpify run`` from its
    own terminal) answers that question on rank 0 instead; a real terminal still answers first."""
    cols, _, lines = environ.get("DDPIFY_TERMINAL_SIZE", "").partition("x")
    if rank != 0 or not (cols.isdigit() and lines.isdigit()):
        return
    real = os.get_terminal_size

    def get_terminal_size(fd: int = 1) -> os.terminal_size:
        try:
            return real(fd)
        except OSError:
            if fd not in (1, 2):
                raise
            return os.terminal_size((int(cols), int(lines)))

    os.get_terminal_size = get_terminal_size


def _setup_print(quiet: bool) -> None:
    """Replace ``builtins.print``: nothing prints when ``quiet``, unless called with
    ``force=True``, which writes to the real standard output even where ``sys.stdout`` was
    silenced."""

    def print(*args: Any, force: bool = False, **kwargs: Any) -> None:
        if force or not quiet:
            file = kwargs.get("file")
            if _STATE.sink is not None and (sys.stdout if file is None else file) is _STATE.sink:
                kwargs["file"] = _STATE.stdout
            _BUILTIN_PRINT(*args, **kwargs)

    builtins.print = print


_quiet_before_init(os.environ)

# --------------------------------------------------------------------------- error hints

UNUSED_PARAMETERS_ERROR = "Expected to have finished reduction in the prior iteration"
UNUSED_PARAMETERS_HINT = (
    "ddpify: some parameters of a DistributedDataParallel model got no gradient in a step: "
    "convert the script again with `ddpify convert --find-unused-parameters`, or pass "
    "find_unused_parameters=True to DistributedDataParallel(...); where the step's loss comes from "
    "torch.autograd.grad(..., create_graph=True) through the model (a gradient penalty), that does not "
    "help: tie its gradients to every parameter, penalty_gradients(model, torch.autograd.grad(...)) "
    "(from ddpify_runtime)")
PENALTY_HINT = (
    "ddpify: some parameters of a DistributedDataParallel model that finds unused parameters got no "
    "gradient in a step: a backward reached only some of the parameters its forward used, as a gradient "
    "penalty's does (torch.autograd.grad(..., create_graph=True) through the model, then backward): tie "
    "its gradients to every parameter, penalty_gradients(model, torch.autograd.grad(...)) (from "
    "ddpify_runtime); or the forward returns outputs the loss never reads (a dict or object of intermediate "
    "results, one item read): build DistributedDataParallel with static_graph=True where the same parameters "
    "go without gradient every step, or have forward return only what the loss reads")


def _install_excepthook() -> None:
    """Chain ``sys.excepthook``: the exception is recorded in torchrun's error file
    (``_record_error``); after the usual traceback, DDP's unused-parameter error (raised at the
    step after the one where some parameters got no gradient) gets a line naming the fix: the
    flag, or ``penalty_gradients`` where the model that raised finds unused parameters already
    (``_unused_parameters_hint``); an error of a learning-rate schedule while this process trains
    on shards, one naming each sharded loader's batches per process (``_schedule_hint``); an
    attribute of the model read from its DDP wrapper, one naming the line and the fix
    (``_wrapper_attribute_hint``); a read, on another process than the main one, of a file the
    main process writes in this run and had not written yet, one naming the read and the write
    (``_early_read_hint``)."""
    previous = sys.excepthook

    def excepthook(kind: Any, value: Any, traceback: Any) -> None:
        _STATE.failed = True  # no comparison of the models at exit (_check_at_exit)
        _record_error(kind, value, traceback)
        previous(kind, value, traceback)
        seen = set()
        while value is not None and id(value) not in seen:
            seen.add(id(value))
            if UNUSED_PARAMETERS_ERROR in str(value):
                sys.stderr.write(_unused_parameters_hint(value.__traceback__) + "\n")
                return
            if (hint := _schedule_hint(value.__traceback__) or _wrapper_attribute_hint(value)) is not None:
                _say(hint, raising=False)
                return
            if (hint := _early_read_hint(value)) is not None:
                _say(hint, raising=False, speaker=True)  # this process alone knows it
                return
            value = value.__cause__ or value.__context__

    sys.excepthook = excepthook


def _install_first_forward_sync() -> None:
    """Every ``DistributedDataParallel`` built from now on takes its parameters from the main
    process once more after its first forward with gradients, where they changed since its
    construction (``_sync_after_first_forward``). DDP broadcasts them at construction only: a
    layer that sets its parameters from the first batch it sees (ActNorm's or weight norm's
    data-dependent initialization, ``if not self.initialized: self.bias.data.copy_(-mean)``) sets
    them from each process's own shard, and the replicas would train apart from the first step.
    The same patch has a wrapper that holds frozen parameters average their gradients once they
    are unfrozen (``_average_once_unfrozen``).
    The patch stays for the run (it runs at construction only); nothing of it runs in a step."""
    if _STATE.first_forward_undo is not None:
        return

    def make(original: Any) -> Any:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            with _waiting("DistributedDataParallel(...)"):  # its broadcast of the parameters: a collective
                original(self, *args, **kwargs)
            _sync_after_first_forward(self)
            _average_once_unfrozen(self)
            _remember_wrapped(self)
        return init

    _STATE.first_forward_undo = _patch(torch.nn.parallel.DistributedDataParallel, "__init__", make)


def _install_full_batches() -> None:
    """Every ``DataLoader`` built from now on over a sharded sampler keeps the batches full where
    the single process's were (``_keep_batches_full``). The patch stays for the run; it runs at
    construction only."""
    if _STATE.full_batches_undo is not None:
        return

    def make(original: Any) -> Any:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            _deal_whole_batches(self)
            _keep_batches_full(self)
        return init

    _STATE.full_batches_undo = _patch(DataLoader, "__init__", make)


def _deal_whole_batches(loader: Any) -> None:
    """A ``ShardedSampler`` around a sampler of the program's own that ``loader`` batches
    (``DataLoader(data, batch_size=B, sampler=...)``) deals whole batches of its stream: such a
    sampler may compose each batch of B (an episode of N classes times K pictures, a bucket of
    similar lengths), and every ``num_replicas``-th index of it was none of them. torch's own
    samplers (random, weighted, sequential) keep index dealing: their batches have no shape."""
    batches = getattr(loader, "batch_sampler", None)
    sampler = getattr(batches, "sampler", None)
    if type(batches) is BatchSampler and isinstance(sampler, ShardedSampler) and batches.batch_size > 1 \
            and not type(sampler.sampler).__module__.startswith(("torch.", "ddpify_runtime")):
        sampler._batch_size, sampler._drop_last = batches.batch_size, batches.drop_last


def _keep_batches_full(loader: Any) -> None:
    """``loader``'s batches kept full (its ``BatchSampler`` drops the last partial one) where it
    draws from a sampler that shards its data set among the processes (``DistributedSampler``,
    ``ShardedSampler``: the converted loader), every batch of the same loader in one process was
    full (the data set, or the sharded sampler's own, a multiple of the batch size) and each
    process's shard would end in a short one. A program may size tensors by its batch size
    (``real = torch.ones(batch_size)`` beside each batch's loss): one process never met a short
    batch, and each process's shard would, at the end of every pass. What is left out (fewer
    samples than a batch, other ones each epoch where the sampler reshuffles) the main process
    names once per loader line."""
    batches = getattr(loader, "batch_sampler", None)
    sampler = getattr(batches, "sampler", None)
    if type(batches) is not BatchSampler or batches.drop_last or not isinstance(sampler, (DistributedSampler, ShardedSampler)) \
            or sampler.num_replicas < 2:
        return
    try:
        whole = len(sampler.sampler) if isinstance(sampler, ShardedSampler) else len(sampler.dataset)
        shard = len(sampler)
    except TypeError:  # a sampler without a length
        return
    size = batches.batch_size
    if whole % size or not shard % size or shard < size:
        return
    batches.drop_last = True
    site = _site()
    if is_main_process() and site not in _STATE.kept_full:
        _STATE.kept_full.add(site)
        _BUILTIN_PRINT(f"ddpify: {site[0]}:{site[1]}: every batch of {size} of this loader was full in one process, "
                       f"and each process's shard of {shard} would end in a batch of {shard % size}: those "
                       f"{shard % size} samples are left out of each pass (drop_last), so that every batch stays full",
                       file=sys.stderr)


def _remember_wrapped(model: Any) -> None:
    """Number ``model`` (a DistributedDataParallel, or a module ``sync_gradients`` synced) for
    ``_resync_wrapped``: every process builds its models in the same order, so the numbers agree."""
    _STATE.wrapped.append((_STATE.wraps_made, weakref.ref(model)))
    _STATE.wraps_made += 1


def _sync_after_first_forward(model: Any) -> None:
    """After ``model``'s first forward with gradients enabled (the training forward, which every
    process runs; a forward under ``no_grad`` before it, an initialization pass over a batch, is
    waited out): compare a checksum of its parameters with the one taken at its construction, when
    every process held the main process's. Where any process's changed, every process takes the
    main process's parameters (one broadcast each, in place; the backward of that first forward
    still uses each process's own values, and the averaged gradient then steps equal parameters),
    and the main process says so once. One all-reduce of a flag, once per wrapper; the hook then
    goes. Parameters DDP ignores (``parameters_to_ignore``) are left as they are."""
    ignored = set(getattr(model, "parameters_to_ignore", ()) or ())
    params = [p for key, p in model.module.named_parameters() if key not in ignored]
    if not params:
        return
    group, name = model.process_group, type(model.module).__name__  # (the hook holds no reference to the model)
    before = torch.stack([_checksum(p) for p in params])

    def after(module: Any, inputs: Any, output: Any) -> None:
        if not torch.is_grad_enabled():
            return
        handle.remove()
        with torch.no_grad():
            changed = torch.tensor([int(not torch.equal(before, torch.stack([_checksum(p) for p in params])))],
                                   device=params[0].device)
            dist.all_reduce(changed, op=dist.ReduceOp.MAX, group=group)
            if not changed.item():
                return
            source = dist.get_global_rank(group, 0) if group is not None else 0
            for param in params:
                dist.broadcast(param.data, source, group=group)
        if get_rank() == 0:
            _BUILTIN_PRINT(f"ddpify: the parameters of {name} changed between its DistributedDataParallel wrap "
                           "and its first training forward (data-dependent initialization, as ActNorm's, or a load "
                           "on some processes): every process now starts from the main process's", file=sys.stderr)

    handle = model.register_forward_hook(after)


def _average_once_unfrozen(model: Any) -> None:
    """DDP averages the gradients of the parameters that required them when it was built. A
    parameter frozen then (``requires_grad = False``: a pretrained backbone) and unfrozen later
    (``for p in model.parameters(): p.requires_grad = True`` after some epochs, to fine-tune it)
    gets no averaging, and each process would step its own copy from its own batches. Where the
    wrapper holds such parameters, a hook looks at them before each of its forwards with
    gradients; those that require gradients now get ``sync_gradients``' averaging hook (one
    all-reduce per parameter per backward; every process unfreezes them at the same forward, as
    they run the same code), and the main process says so once. A wrapper with nothing frozen
    gets no hook; the hook goes once nothing is left frozen."""
    ignored = set(getattr(model, "parameters_to_ignore", ()) or ())
    frozen = [p for key, p in model.module.named_parameters() if key not in ignored and not p.requires_grad]
    if not frozen:
        return
    group, name = model.process_group, type(model.module).__name__  # (the hook holds no reference to the model)

    def before(module: Any, inputs: Any) -> None:
        thawed = [p for p in frozen if p.requires_grad] if torch.is_grad_enabled() else []
        if not thawed:
            return
        world = dist.get_world_size(group)
        for param in thawed:
            if not getattr(param, "_ddpify_synced", False):
                param.register_hook(_averaging_hook(param, world, group))
                param._ddpify_synced = _SYNCED  # type: ignore[attr-defined]
        frozen[:] = [p for p in frozen if not p.requires_grad]
        if not frozen:
            handle.remove()
        if get_rank() == 0 and name not in _STATE.thawed:
            _STATE.thawed.add(name)
            _BUILTIN_PRINT(f"ddpify: {len(thawed)} parameter(s) of {name} were frozen when DistributedDataParallel "
                           "was built and now require gradients: DDP does not average them, ddpify does (one "
                           "all-reduce each per backward; wrapping the model after unfreezing lets DDP do it)",
                           file=sys.stderr)

    handle = model.register_forward_pre_hook(before)


def _unused_parameters_hint(traceback: Any) -> str:
    """The way out of DDP's unused-parameter error: DDP looks for unused parameters only in the
    forward's graph, so a model that raised with ``find_unused_parameters=True`` (its ``forward``
    in the traceback) lost a gradient in a backward that reached part of that graph: a penalty."""
    while traceback is not None:
        model = traceback.tb_frame.f_locals.get("self")
        if isinstance(model, torch.nn.parallel.DistributedDataParallel) and model.find_unused_parameters:
            return PENALTY_HINT
        traceback = traceback.tb_next
    return UNUSED_PARAMETERS_HINT


def _schedule_hint(traceback: Any) -> "Optional[_Finding]":
    """What to do where a learning-rate schedule of torch raised (``torch/optim/lr_scheduler.py``
    in the traceback) while this process trains on shards (``schedule-steps``, at the user's line
    that led there): a schedule sized by a sharded loader's length (``OneCycleLR(...,
    steps_per_epoch=len(train_loader))``, ``total_steps=epochs * len(loader)``) counts this
    process's batches, 1/world_size of one process's, which is right, and with little data too few
    for its phases (OneCycleLR divides by ``pct_start * total_steps - 1``: zero at 4 steps and
    ``pct_start=0.25``; no step at all it refuses). None elsewhere."""
    shards = [(site, whole, shard) for site, (whole, shard) in _STATE.shard_batches.items() if shard < whole]
    if not shards or get_world_size() < 2:
        return None
    user = None
    while traceback is not None and not traceback.tb_frame.f_code.co_filename.endswith(SCHEDULES_FILE):
        user = traceback.tb_frame if not _is_library(traceback.tb_frame.f_code.co_filename) else user
        traceback = traceback.tb_next
    if traceback is None or user is None:
        return None
    counts = "; ".join(f"{file}:{line}: {shard} per process, where one process had {whole}"
                       for (file, line), whole, shard in shards)
    return _Finding("schedule-steps", _shown_path(user.f_code.co_filename), user.f_lineno,
                    f"a learning-rate schedule failed on its count of steps: with {get_world_size()} processes each "
                    f"takes the batches of its shard of the training data ({counts}), so a schedule sized by "
                    "len(loader) (OneCycleLR's steps_per_epoch, total_steps = epochs * len(loader)) has that many "
                    "steps per epoch, too few here for its phases",
                    "give each process more steps (more epochs or data, a smaller batch_size) or run fewer processes")


def _last_user_entry(traceback: Any) -> Any:
    """The innermost entry of ``traceback`` in the user's code (not a library's), or None."""
    user = None
    while traceback is not None:
        user = traceback if not _is_library(traceback.tb_frame.f_code.co_filename) else user
        traceback = traceback.tb_next
    return user


def _wrapper_attribute_hint(error: BaseException) -> "Optional[_Finding]":
    """What to do where the program read an attribute of its model from the DistributedDataParallel
    wrapper (``wrapper-attribute``, at the user's line that read it): ``AttributeError:
    'DistributedDataParallel' object has no attribute 'num_params'`` where the module inside has
    one, a method or field of the model that the conversion did not see read through the wrapper
    (a model kept in a field of an object it could not follow, ``task.net.num_params()``), in plain
    ``python`` too. None for any other error, or where the module inside lacks it as well."""
    wrapper, name = getattr(error, "obj", None), getattr(error, "name", None)
    if not (isinstance(error, AttributeError) and isinstance(wrapper, torch.nn.parallel.DistributedDataParallel)
            and isinstance(name, str) and hasattr(wrapper.module, name)):
        return None
    user = _last_user_entry(error.__traceback__)
    if user is None:
        return None
    return _Finding("wrapper-attribute", _shown_path(user.tb_frame.f_code.co_filename), user.tb_lineno,
                    f"`{name}` of the model ({type(wrapper.module).__name__}) was read from its "
                    "DistributedDataParallel wrapper, which has no such attribute",
                    f"read it from the model inside: `.module.{name}` on the wrapper, or "
                    f"`unwrap(model).{name}` (unwrap from ddpify_runtime)")


def _early_read_hint(error: BaseException) -> "Optional[_Finding]":
    """What to do where a read ended this process (not the main one) for want of a file that the
    main process writes in this run (``early-read``, at the user's line that read it): the
    conversion runs a save on the main process only, and no barrier stands between it and a
    read on every process (one it could not place: the save's function is called inside an
    ``except`` or an ``if`` that some processes may skip), so this process read before the main
    process wrote. The main process puts each path it writes, with its line, in the process
    group's store (``_SelfCheck.announce``); on a ``FileNotFoundError`` this process waits up to
    ``READ_WAIT_S`` seconds for its path there, then names both lines. None for any other error,
    on the main process, with one process or the checks off, and where the main process does
    not write that file within the wait (a file missing before the run and never written: the
    program's own error)."""
    check = _STATE.self_check or _STATE.exit_check
    name = getattr(error, "filename", None)
    if not isinstance(error, FileNotFoundError) or not isinstance(name, (str, bytes, os.PathLike)) \
            or check is None or get_world_size() < 2 or get_rank() == 0:
        return None
    store = _default_store()
    if store is None:
        return None
    import time
    try:
        key = check.wrote_key(os.path.abspath(os.fsdecode(name)))
        deadline = time.monotonic() + READ_WAIT_S
        while not store.check([key]):
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)
        written = store.get(key).decode()
    except Exception:  # the store went away, a path that is no text: no finding
        return None
    user = _last_user_entry(error.__traceback__)
    if user is None:
        return None
    return _Finding("early-read", _shown_path(user.tb_frame.f_code.co_filename), user.tb_lineno,
                    f"rank {get_rank()} read {os.path.basename(os.fsdecode(name))} before the main process had "
                    f"written it: the main process writes it in this run ({written}), this process found no file",
                    "put a barrier() between the write and this read where every process passes it (after the "
                    "statement that calls the save, outside any `if`, `try` or `except` that some processes may "
                    "skip), or save on every process under a name of its own")


def _say(finding: "_Finding", raising: bool = True, speaker: Optional[bool] = None) -> None:
    """A finding every process makes alike, outside the self-check's exchanges: reported by the
    self-check where it is on (its block, ``DDPIFY_VERIFY_JSON``, strict), else printed by the
    main process as a line of its own. ``raising``: never raise for it (an exception hook).
    ``speaker``: True where this process alone knows it (``early-read``)."""
    check = _STATE.self_check or _STATE.exit_check
    if check is not None:
        check.report([finding], speaker=speaker, raising=raising)
    elif is_main_process() if speaker is None else speaker:
        _BUILTIN_PRINT(f"ddpify: {finding.file}:{finding.line}: {finding.check}: {finding.message}; {finding.fix}",
                       file=sys.stderr)


SCHEDULES_FILE = os.path.join("torch", "optim", "lr_scheduler.py")


def _record_error(kind: Any, value: Any, tb: Any) -> None:
    """Write the exception to ``TORCHELASTIC_ERROR_FILE`` as torch's ``@record`` does, unless a
    ``@record`` already did: torchrun then names the first process that failed and shows its
    traceback, and ``ddpify run`` orders the failures by ``ddpify_time`` (torchrun's
    ``timestamp`` counts whole seconds)."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path or os.path.exists(path):
        return
    import json
    import time
    import traceback

    extra = {"py_callstack": "".join(traceback.format_exception(kind, value, tb)),
             "timestamp": str(int(time.time())), "ddpify_time": repr(time.time())}
    try:
        with open(path, "w") as f:
            json.dump({"message": {"message": f"{kind.__name__}: {value}", "extraInfo": extra}}, f)
    except OSError:
        pass


# ------------------------------------------------------------------------ ranks and collectives


def _initialised() -> bool:
    return dist.is_available() and dist.is_initialized()


def get_rank() -> int:
    """Global rank of this process (0 before initialisation). After the process group is
    destroyed at exit, the rank it was launched with: a guarded write run at interpreter shutdown
    (a `Tee` on `sys.stdout` flushing its main-process-only file) must not take every process for
    the main one."""
    if _initialised():
        return dist.get_rank()
    return _STATE.launch.rank if _STATE.launch is not None else 0


def get_world_size() -> int:
    """Number of processes in the job (1 before initialisation)."""
    return dist.get_world_size() if _initialised() else 1


def is_main_process() -> bool:
    """True on global rank 0: the process that saves, logs and prints. Before
    ``init_distributed_mode()``, the rank the launcher gave this process: a guard run on import
    (a module-level ``SummaryWriter(...) if is_main_process() else None`` above the ``__main__``
    block that initialises) holds on the main process only, as the output does
    (``_quiet_before_init``)."""
    if _initialised() or _STATE.launch is not None:
        return get_rank() == 0
    try:
        return detect_launch(os.environ).rank == 0
    except ValueError:  # a launch the environment describes wrongly: init_distributed_mode() says so
        return True


def local_rank() -> int:
    """Rank of this process on its node (selects the GPU)."""
    return (_STATE.launch or detect_launch(os.environ)).local_rank


def local_device() -> torch.device:
    """This process's GPU (local rank modulo the GPU count), or the CPU without CUDA."""
    if torch.cuda.is_available():
        return torch.device("cuda", local_rank() % torch.cuda.device_count())
    return torch.device("cpu")


def barrier() -> None:
    """Wait for every rank; does nothing before initialisation. Only a barrier: the end of an
    epoch, with its random state, is ``end_epoch()`` (scripts converted before it existed call
    ``barrier()`` there; see docs/runtime.md#earlier-conversions)."""
    _wait_for_all("barrier()")


def _wait_for_all(what: str) -> None:
    """The barrier of ``barrier()`` and ``end_epoch()`` (``what``, for a hang report)."""
    if not _initialised():
        return
    with _waiting(what):
        if dist.get_backend() == "nccl":
            dist.barrier(device_ids=[torch.cuda.current_device()])
        else:
            dist.barrier()


@contextlib.contextmanager
def main_process_first() -> Iterator[None]:
    """Run the block on each node's local rank 0 first (a data set download), then on the other
    processes, which find its files in place.

    Outside a training pass, every process then takes rank 0's random states (torch, ``random``,
    numpy): the first process may have drawn numbers the others did not (a synthetic data set
    generated and saved where its file was missing, which the others then read), and what is drawn
    after the block (a ``random_split``, a model's initial weights) must be the same on every
    process, as one process draws it once.

    A block inside another (an object whose own construction holds one, built under another where
    it is called) is part of the outer one, which orders the processes already: its own barriers,
    met by the main process inside the outer block and by the others before it, would pair one's
    with another's (a barrier with the random state's broadcast) and hang."""
    outer = not _STATE.first_depth
    if outer and local_rank() != 0:
        barrier()
    _STATE.first_depth += 1
    try:
        yield
    finally:
        _STATE.first_depth -= 1
    if not outer:
        return
    if local_rank() == 0:
        barrier()
    if _initialised() and get_world_size() > 1 and not _STATE.in_pass:
        _share_random_state()


@contextlib.contextmanager
def atomic_write(path: Any) -> Iterator[Any]:
    """Write a file whole or not at all: ``with atomic_write("last.pt") as tmp_path:
    torch.save(state, tmp_path)``. The block writes a temporary file in the same folder; when it
    ends normally the file is synced to disk and renamed over ``path`` (through a symlink, keeping
    the old file's permission bits), so a kill during the save (preemption, an OOM kill, a
    restart) leaves the previous checkpoint whole; when it raises, the temporary file is removed.
    Temporary files that killed saves of ``path`` left behind are removed first.

    Anything that is not a path (an open file, a buffer) is handed to the block as it is, and so
    is a device or a FIFO (``os.devnull``): written into, never renamed over. Where a rename
    cannot work (a read-only folder with a writable file, a bind-mounted file), the block writes
    ``path`` itself, with a warning: as ``torch.save`` would."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        yield path
        return
    target = os.path.realpath(os.fsdecode(path)) if os.path.islink(path) else os.fsdecode(path)
    if os.path.exists(target) and not os.path.isfile(target):  # a device or a FIFO
        yield path
        return
    folder, name = os.path.split(target)
    prefix = f".{name[:64]}."  # within any file system's name limit, whatever the name's length
    _remove_killed_saves(folder, prefix)
    tmp = os.path.join(folder, f"{prefix}{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.remove(tmp)
    except OSError as exc:
        _warn_in_place(target, f"cannot create a temporary file beside it ({exc.strerror})")
        yield path
        return
    try:
        yield tmp
        if not os.path.exists(tmp):  # the block wrote nothing
            return
        if os.path.exists(target):
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        if _STATE.self_check is not None:  # the target, not the temporary file (hidden, per process)
            _STATE.self_check.wrote(target, sys._getframe(1))
        try:
            os.replace(tmp, target)
        except OSError as exc:  # EBUSY: a bind-mounted file cannot be renamed over
            _warn_in_place(target, f"cannot rename over it ({exc.strerror})")
            with open(tmp, "rb") as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            return
        try:
            folder_fd = os.open(folder or ".", os.O_RDONLY)
        except OSError:  # a folder we may write but not read: the rename is done, unsynced
            return
        try:
            os.fsync(folder_fd)  # the rename itself survives a power cut
        finally:
            os.close(folder_fd)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _remove_killed_saves(folder: str, prefix: str) -> None:
    """Remove this file's temporary files whose writing process is gone (a killed save)."""
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return
    for entry in names:
        pid = entry[len(prefix):].split(".", 1)[0]
        if entry.startswith(prefix) and entry.endswith(".tmp") and pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, entry))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _warn_in_place(target: str, why: str) -> None:
    warnings.warn(f"ddpify: {target}: {why}; written in place, so a kill during this save can "
                  "leave it half-written", RuntimeWarning, stacklevel=4)


def agree_on(flag: Any) -> bool:
    """Rank 0's truth value of ``flag`` (bool, number or 0-d tensor), the same on every rank.

    Use it for decisions that must not diverge, such as an early-stop ``break``.
    """
    if get_world_size() == 1:
        return bool(flag)
    device = local_device() if dist.get_backend() == "nccl" else torch.device("cpu")
    value = torch.tensor(int(bool(flag)), device=device)
    with _waiting("agree_on()"):
        dist.broadcast(value, src=0)
    return bool(value.item())


def agree_any(flag: Any) -> bool:
    """True on every rank where ``flag`` (bool, number or 0-d tensor) is true on any rank.

    For the end of an episode whose environment each process steps on its own (``if done:
    break``): an environment that seeds itself from the OS ends its episodes at other steps on
    each process, so all leave when the first one's has ended, and none steps an environment
    past its end (rank 0's decision, ``agree_on``, would have the others step theirs on).
    """
    return _agree(flag, "agree_any()", dist.ReduceOp.MAX)


def agree_all(flag: Any) -> bool:
    """True on every rank where ``flag`` is true on every rank: ``while agree_all(not done):``
    goes on only while no process's episode has ended (``agree_any``)."""
    return _agree(flag, "agree_all()", dist.ReduceOp.MIN)


def _agree(flag: Any, what: str, op: Any) -> bool:
    if get_world_size() == 1:
        return bool(flag)
    device = local_device() if dist.get_backend() == "nccl" else torch.device("cpu")
    value = torch.tensor(int(bool(flag)), device=device)
    with _waiting(what):
        dist.all_reduce(value, op=op)
    return bool(value.item())


def from_main_process(compute: Callable[[], Any]) -> Any:
    """The main process's ``compute()``, on every process: what the program reads of an object
    that exists on the main process only (``from_main_process(lambda: writer.log_dir)``, the
    writer being None elsewhere). The value is pickled; a collective: every rank calls it.
    """
    if get_world_size() == 1:
        return compute()
    box = [compute() if is_main_process() else None]
    with _waiting("from_main_process()"):
        dist.broadcast_object_list(box, src=0)
    return box[0]


def open_on_main(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    """``open(file, mode, ...)`` on the main process; on the others, where ``mode`` writes (``w``,
    ``a``, ``x``), ``os.devnull`` opened to write instead: a handle the program keeps and uses
    later (a stdout ``Tee`` that seeks and tells, a log handle handed around) works on every
    process, and one process writes the file. A mode that only reads, or a file descriptor, opens
    ``file`` on every process."""
    if isinstance(file, (str, bytes, os.PathLike)) and isinstance(mode, str) and any(c in mode for c in "wax") \
            and not is_main_process():
        file, mode = os.devnull, mode.replace("x", "w")  # os.devnull exists: "x" would refuse it
    return open(file, mode, *args, **kwargs)


def log_config_on_main(config: Any, defaults: Any = None, encoding: Optional[str] = None) -> Any:
    """``logging.config.dictConfig``'s dict, or ``logging.config.fileConfig``'s file (a path, an
    open file or a ``ConfigParser``; ``defaults`` and ``encoding`` as ``fileConfig`` was given
    them), as the program gives it on the main process; on the others a copy whose handlers that
    write a file are ``NullHandler`` instead, keeping their level, formatter and filters: every
    process logs through the loggers the configuration sets (its console handler too, which the
    runtime silences on standard output off the main process), and one process writes each log
    file (pytorch-template's ``logger_config.json`` wrote ``info.log`` from every process). In a
    dict such a handler has a ``filename`` (as ``FileHandler`` and the rotating ones take); in a
    file its ``class`` is a ``FileHandler`` (``handlers.RotatingFileHandler``, ...), and the copy
    is the ``ConfigParser`` that ``fileConfig`` takes as it is."""
    if is_main_process():
        return config
    if not isinstance(config, dict):
        return _file_config_on_main(config, defaults, encoding)
    if not isinstance(config.get("handlers"), dict):
        return config
    handlers = {}
    for name, handler in config["handlers"].items():
        if isinstance(handler, dict) and "filename" in handler:
            handler = {key: value for key, value in handler.items() if key in ("level", "formatter", "filters")}
            handler["class"] = "logging.NullHandler"
        handlers[name] = handler
    return {**config, "handlers": handlers}


def _file_config_on_main(source: Any, defaults: Any, encoding: Optional[str]) -> Any:
    """``fileConfig``'s source read as ``fileConfig`` reads it, each handler whose class (looked
    up as ``fileConfig`` looks it up, in ``logging``'s names) is a ``logging.FileHandler`` made a
    ``NullHandler``; the source as it is where it cannot be read here (``fileConfig`` then says
    why)."""
    import configparser
    import logging.config
    import logging.handlers  # noqa: F401 (``handlers.RotatingFileHandler`` is looked up through it)

    if isinstance(source, configparser.RawConfigParser):
        parser = copy.deepcopy(source)
    else:
        parser = configparser.ConfigParser(defaults)
        try:
            if hasattr(source, "readline"):
                parser.read_file(source)
            elif not parser.read(source, encoding=encoding):
                return source  # no such file: fileConfig says so
        except (OSError, configparser.Error):
            return source
    names = parser.get("handlers", "keys", fallback="") if parser.has_section("handlers") else ""
    for name in filter(None, (n.strip() for n in names.split(","))):
        section = f"handler_{name}"
        try:
            named = parser[section]["class"]
            try:
                made = eval(named, vars(logging))  # as fileConfig looks it up
            except (AttributeError, NameError):
                made = logging.config._resolve(named)  # a handler of the program's: `mypackage.Handler`
        except Exception:  # (fileConfig says what is wrong with it)
            continue
        if isinstance(made, type) and issubclass(made, logging.FileHandler):
            parser.set(section, "class", "NullHandler")
            parser.set(section, "args", "()")
            parser.remove_option(section, "kwargs")
    return parser


def bar_file() -> Any:
    """A progress bar's ``file=`` that keeps it counting on every process: None (tqdm's default,
    standard error) on the main process, standard output on the others, which the runtime
    silences (``DDPIFY_ALL_RANKS`` shows it). A bar disabled on the others (``disable=True``)
    counts nothing: its ``update()`` returns first, ``pbar.n`` stays at its start, and a program
    that reads it (``while pbar.n < total_steps:``, ``if pbar.n % log_every == 0:``) takes other
    branches there. Call it once the process group is up (``init_distributed_mode()``)."""
    return None if is_main_process() else sys.stdout


# --------------------------------------------------------------------------- models


def device_ids(model: torch.nn.Module) -> Optional[List[int]]:
    """DDP's ``device_ids=``: ``[index]`` for a module on one CUDA device, else None.

    A module whose parameters are all on the CPU while the process group has nccl for CUDA is
    first moved to this process's GPU (``local_device()``), and the main process says so once: a
    DistributedDataParallel cannot follow its module to another device later. That is a program
    that moves its model later, in a function it hands the wrapped model to (``train(model, ...)``
    doing ``model.to(device)``), as the same program on one GPU would have it there by its first
    step. A program that places nothing on an accelerator is converted with
    ``init_distributed_mode(backend="gloo")`` and keeps its model on the CPU; one that keeps it
    there only when not asked for a GPU (a flag) stops at its first step on a GPU machine: the
    line says to run it with ``DDPIFY_BACKEND=gloo``.
    """
    _to_process_gpu(model, moves_later=True)
    devices = {p.device for p in model.parameters()}
    if len(devices) == 1:
        device = devices.pop()
        if device.type == "cuda":
            return [device.index]
    return None


def _to_process_gpu(model: torch.nn.Module, moves_later: bool) -> None:
    """``model`` onto ``local_device()`` where every parameter is on the CPU and the process group
    holds no CPU tensors (nccl alone), or, for a wrapper that cannot follow a later move
    (``moves_later``: DDP), has nccl for CUDA."""
    params = list(model.parameters())
    backend = dist.get_backend() if _initialised() else ""
    if not params or "nccl" not in backend or (backend != "nccl" and not moves_later) \
            or any(p.device.type != "cpu" for p in params):
        return
    device = local_device()
    model.to(device)
    if is_main_process() and not _STATE.moved_to_gpu:
        _STATE.moved_to_gpu = True
        _BUILTIN_PRINT(f"ddpify: {type(model).__name__} was on the CPU when it was wrapped; moved to {device} "
                       "first (nccl, the process group on GPUs, holds no CPU tensors); a program that trains "
                       "on the CPU on purpose: run it with DDPIFY_BACKEND=gloo", file=sys.stderr)


def penalty_gradients(model: Any, gradients: Any) -> Any:
    """``torch.autograd.grad(...)``'s result for a gradient penalty through ``model``, tied to
    every trainable parameter of a DDP ``model`` with a zero weight.

    DDP waits, after a forward, for a gradient of all its parameters or of none; the penalty's
    own backward reaches only those its gradients depend on (not the biases), and training
    stopped with "Expected to have finished reduction". With the tie, that backward gives each
    parameter a gradient (zero more than the penalty's), so DDP averages the whole gradient
    across ranks. Any other ``model``: ``gradients`` unchanged.
    """
    if not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return gradients
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        return gradients
    zero = sum(p.sum() for p in params) * 0.0
    return type(gradients)(g if g is None else g + zero for g in gradients)


def sync_gradients(model: Any, at_step: bool = False) -> Any:
    """``model`` with its gradients averaged over the processes as backward computes them, and
    no wrapper: for a model trained through its own methods (``loss = wgan.c_loss(x, z)``,
    ``scholar.train_with_replay(data)``), which never run DistributedDataParallel's forward, so a
    DDP around it would average nothing and each process would train its own copy. ``model`` may
    also be a list (or tuple) of tensors that no module holds, as an optimizer is given them
    (``Adam(sync_gradients([log_alpha]))``): the same for each tensor, returned as given.

    The processes start from the main process's parameters and buffers (as under DDP); each
    gradient a backward pass computes for a parameter is summed over the processes and divided
    by their number before it is accumulated (several passes before a step accumulate the
    averages). The model keeps its class, attributes and state-dict keys. Unlike DDP, nothing
    overlaps the backward pass, and buffers (BatchNorm statistics) are shared at the start only.
    A parameter is taken from the main process once more at its first backward: one the first
    batch sets (ActNorm's data-dependent initialization, ``self.s.data = ...`` in its forward) is
    set by each process from its own shard, and the processes would then step different values.
    One process: ``model`` as it is.

    ``at_step=True``: the processes start from the main process's values, and no hook is added:
    the program averages the gradients itself right before each step (``average_gradients(optimizer)``,
    which ddpify inserts there). For tensors the program also differentiates by
    ``torch.autograd.grad`` (a meta-learner's inner loop over the weights a plain dict holds,
    ``Adam(sync_gradients(self.weights.values(), at_step=True))``): a hook would average those
    gradients across the processes' tasks too, where only the step's may be averaged.
    """
    world = get_world_size()
    if world < 2:
        return model
    module = isinstance(model, torch.nn.Module)
    if module:
        _to_process_gpu(model, moves_later=False)  # nccl alone broadcasts no CPU tensors; gloo beside it does
    params = list(model.parameters()) if module else list(model)
    for tensor in [*params, *(model.buffers() if module else ())]:
        dist.broadcast(tensor.data, 0)
    if at_step:
        for param in params:  # averaged by the program's average_gradients() before each step
            param._ddpify_synced = _SYNCED  # type: ignore[attr-defined]
        return model

    for param in params:
        if param.requires_grad and not getattr(param, "_ddpify_synced", False):
            param.register_hook(_averaging_hook(param, world))
            param._ddpify_synced = _SYNCED  # type: ignore[attr-defined]
    if module:
        _remember_wrapped(model)
        _follow_new_tensors(model)
    return model


_GROWN: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()  # the modules of models sync_gradients hooked
_GROWN_HOOKS: list = []


def _follow_new_tensors(model: torch.nn.Module) -> None:
    """Keep hooking what ``model`` takes in later: a model that replaces its parameters in training
    (a network grown or pruned in place, ``self.weight = Parameter(torch.cat([self.weight, new]))``
    in a resize every few steps, new channels drawn by each process's own generator) would otherwise
    train its new parameters unaveraged from values that differ between the processes. Each parameter,
    buffer or sub-module registered on one of its modules from now on takes the main process's values
    (a broadcast: every process registers it at the same point of the same program) and its gradient
    hook. Module-registration hooks of torch (>= 2.0), added once."""
    _GROWN.update(model.modules())
    if _GROWN_HOOKS:
        return
    from torch.nn.modules import module as nn_module
    _GROWN_HOOKS.append(nn_module.register_module_parameter_registration_hook(_grown_parameter))
    _GROWN_HOOKS.append(nn_module.register_module_buffer_registration_hook(_grown_buffer))
    _GROWN_HOOKS.append(nn_module.register_module_module_registration_hook(_grown_module))


def _grown_parameter(module: torch.nn.Module, name: str, param: Any) -> None:
    if param is None or module not in _GROWN or get_world_size() < 2:
        return
    dist.broadcast(param.data, 0)
    if param.requires_grad and not getattr(param, "_ddpify_synced", False):
        param.register_hook(_averaging_hook(param, get_world_size()))
        param._ddpify_synced = _SYNCED  # type: ignore[attr-defined]


def _grown_buffer(module: torch.nn.Module, name: str, buffer: Any) -> None:
    if isinstance(buffer, torch.Tensor) and module in _GROWN and get_world_size() > 1:
        dist.broadcast(buffer, 0)


def _grown_module(module: torch.nn.Module, name: str, sub: Any) -> None:
    if not isinstance(sub, torch.nn.Module) or module not in _GROWN or sub in _GROWN or get_world_size() < 2:
        return
    for inner in sub.modules():
        _GROWN.add(inner)
        for param in inner.parameters(recurse=False):
            _grown_parameter(inner, "", param)
        for buffer in inner.buffers(recurse=False):
            _grown_buffer(inner, "", buffer)


def average_gradients(model: Any) -> None:
    """Average the gradients the program set by hand (``p.grad = g``) over the processes:
    gradients ``torch.autograd.grad`` computed for ``model``'s parameters (a meta-learning
    outer step summing each task's, a first-order update) never reach DistributedDataParallel's
    backward, which averages only what ``.backward()`` accumulates, so each process would step
    its own. So do gradients a program computes with no backward at all and assigns before its
    optimizer steps (contrastive divergence: ``rbm.W.grad = -w_grad``). ``model`` is a module
    (its parameters), an optimizer (the parameters of its groups: ``average_gradients(optimizer)``
    right before ``optimizer.step()``), or the parameters; those without a gradient are left out.
    Averaging is linear: done after each hand-set pass it gives the average of the sum. A
    collective: every process calls it, with gradients for the same parameters. One process:
    nothing to do. Each gradient it averaged is marked (``_ddpify_averaged``): the self-check's
    ``bypassed-wrapper`` does not count it as the bare module's, unaveraged."""
    if isinstance(model, torch.optim.Optimizer):
        params = [p for group in model.param_groups for p in group["params"]]
    else:
        params = list(model.parameters()) if isinstance(model, torch.nn.Module) else list(model)
    for param in params:
        if param.grad is not None:
            param.grad._ddpify_averaged = True  # type: ignore[attr-defined]
    world = get_world_size()
    if world < 2:
        return
    with _waiting("average_gradients()"):
        for param in params:
            if param.grad is not None:
                dist.all_reduce(param.grad)
                param.grad.div_(world)


def _averaging_hook(param: torch.Tensor, world: int, group: Any = None) -> Callable[[torch.Tensor], torch.Tensor]:
    """A gradient hook for ``param``: the gradient summed over the processes of ``group`` (of
    ``world`` processes) and divided by their number; at its first call ``param`` takes the main
    process's value (every process runs the same backward: the same hooks, in the same order)."""
    first = [True]
    source = dist.get_global_rank(group, 0) if group is not None else 0
    among = {} if group is None else {"group": group}

    def averaged(grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        dist.all_reduce(grad, **among)
        if first[0]:
            first[0] = False
            dist.broadcast(param.data, source, **among)
        return grad.div_(world)
    return averaged

def convert_sync_batchnorm(model: torch.nn.Module) -> torch.nn.Module:
    """BatchNorm -> SyncBatchNorm for a CUDA model (call it after ``.to(device)``, before DDP).

    SyncBatchNorm runs on CUDA only; on the CPU the model keeps its BatchNorm layers and the
    main process says so once.
    """
    if any(p.is_cuda for p in model.parameters()):
        return torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    if is_main_process():
        _BUILTIN_PRINT("ddpify: kept BatchNorm: SyncBatchNorm needs CUDA and this model is on the CPU",
                       file=sys.stderr)
    return model


def unwrap(model: Any) -> Any:
    """The user's module inside any nesting of DDP, DataParallel and ``torch.compile``."""
    while True:
        # torch.compile's wrapper class exists only once torch._dynamo has been imported.
        compiled = getattr(sys.modules.get("torch._dynamo.eval_frame"), "OptimizedModule", ())
        if isinstance(model, (torch.nn.parallel.DistributedDataParallel,
                              torch.nn.DataParallel)):
            model = model.module
        elif isinstance(model, compiled):
            model = model._orig_mod
        else:
            return model


def without_module_prefix(state_dict: Any) -> Any:
    """``state_dict`` with the wrapper prefixes ``module.`` (DataParallel, DDP) and ``_orig_mod.``
    (``torch.compile``) removed, in any nesting, for loading into the bare model.

    A prefix is removed only when every key carries it; otherwise, for an empty mapping, a
    non-mapping or non-string keys, ``state_dict`` is returned as is. The result is a new
    ``OrderedDict`` (the same tensors) whose ``_metadata``, if any, is renamed alike.
    """
    if not isinstance(state_dict, Mapping) or not state_dict or \
            not all(isinstance(key, str) for key in state_dict):
        return state_dict
    keys, stripped = list(state_dict), []
    while True:
        prefix = next((p for p in ("module.", "_orig_mod.") if all(k.startswith(p) for k in keys)),
                      None)
        if prefix is None:
            break
        keys = [key[len(prefix):] for key in keys]
        stripped.append(prefix)
    if not stripped:
        return state_dict
    result = OrderedDict(zip(keys, state_dict.values()))
    metadata = getattr(state_dict, "_metadata", None)
    if isinstance(metadata, Mapping):
        for prefix in stripped:  # "module" -> "", "module.fc" -> "fc", the wrapper's own "" goes
            metadata = {name[len(prefix):]: value for name, value in metadata.items()
                        if (name + ".").startswith(prefix)}
        result._metadata = metadata
    return result


# --------------------------------------------------------------------------- data


def endless(loader: Any) -> Iterator[Any]:
    """``iter(loader)`` that starts the loader's next pass, with the next epoch (`set_epoch`),
    where the first one ends, instead of raising StopIteration.

    For a program that draws a fixed number of batches with ``next(it)`` from one
    ``it = iter(loader)`` and never expects it to run out: with the data sharded, each process's
    pass holds 1/N of the batches, and the iterator ran out where the single-GPU pass had enough.
    The first pass is exactly ``iter(loader)``'s. A pass that yields nothing ends it.
    """
    yield from loader
    epoch = 1
    while True:
        set_epoch(loader, epoch)
        drawn = False
        for batch in loader:
            drawn = True
            yield batch
        if not drawn:
            return
        epoch += 1


def shard_batches(batches: Any) -> Any:
    """This process's part of a training loop's batches sliced by hand: items ``rank``,
    ``rank + world_size``, ... of ``batches`` (a range of start offsets, ``range(0, n, bs)``; a
    list or tuple; an iterable, ``zip(X.split(bs), y.split(bs))``, listed first), as a list.

    Every process takes the same number of items, ``ceil(len / world_size)``: the last round, where
    it is incomplete, wraps round to the first items (as ``DistributedSampler`` pads its shards), so
    no batch is left out and every process takes as many optimizer steps (one step more on one
    process would leave it waiting in DDP's all-reduce for the others). Fewer batches than
    processes: each takes one, some the same. With one process (no launcher, or before
    initialisation) ``batches`` comes back as it is, so ``python train_ddp.py`` draws what the
    single-GPU script drew. The order the items come in is the program's: a permutation it draws
    must be the same on every process (``agree_random_state()`` before it), or the parts overlap.
    """
    world = get_world_size()
    if world == 1:
        return batches
    items = batches if isinstance(batches, (range, list, tuple)) else list(batches)
    count = len(items)
    if count == 0:
        return []
    rank = get_rank()
    return [items[(rank + k * world) % count] for k in range(-(-count // world))]


def agree_random_state() -> None:
    """Give every process the main process's random state (torch CPU and CUDA, ``random``, numpy):
    what the program draws next, until the processes' draws part again (dropout over batches of
    their own), is drawn alike on every process. Placed before a permutation that orders the
    batches ``shard_batches`` deals out (``perm = torch.randperm(n)``, ``np.random.shuffle(idx)``,
    drawn at each epoch), so that every process deals from the same order: the main process's,
    the single process's. A collective where there is more than one process (one
    ``broadcast_object_list``); in a training pass (``set_epoch``) it ends the pass, as
    ``end_epoch()`` does; with one process it does nothing.
    """
    if not _initialised() or get_world_size() == 1:
        return
    if _STATE.in_pass:
        _end_pass()
    else:
        _share_random_state()


@contextlib.contextmanager
def own_random_stream() -> Iterator[None]:
    """Run the block on this process's own random stream (torch CPU and CUDA, ``random``, numpy),
    then give the program back the stream it had: around a batch drawn at random offsets into
    the data (nanoGPT's ``X, Y = get_batch("train")``, ``ix = torch.randint(len(data) - block,
    (batch_size,))``), so that every process trains on a batch of its own and DDP averages the
    gradients over distinct draws (the global batch: batch_size x the number of processes), while
    everything else the program draws (dropout, the batches ``estimate_loss()`` draws to decide a
    save) stays alike on every process, as it was before the block.

    Each process's stream is seeded at its first block from ``torch.initial_seed()`` and its rank
    (``_diverge_random_state``: the same in every run with the same seed, another on every rank,
    rank 0's included) and continues where its last block left it. The shared stream does not
    advance in the block on any process, so the processes' shared streams stay alike without a
    collective. With one process (no launcher, or before initialisation) it does nothing: the
    converted script draws what the original draws.
    """
    if not _initialised() or get_world_size() == 1:
        yield
        return
    shared, seed = _random_states(), torch.initial_seed()
    if _STATE.own_draws is None:
        _diverge_random_state(get_rank())
    else:
        _set_random_states(_STATE.own_draws)
    try:
        yield
    finally:
        _STATE.own_draws = _random_states()
        torch.manual_seed(seed)  # torch.initial_seed() as it was (a pass seeds ranks > 0 from it)
        _set_random_states(shared)


def set_epoch(obj: Any, epoch: Optional[int] = None) -> Any:
    """Call ``set_epoch(epoch)`` on every sampler behind ``obj``, and return ``obj``.

    ``obj``: a DataLoader (its ``.sampler`` and ``.batch_sampler.sampler``), a sampler, a batch
    sampler, or a dict/list/tuple of those; a program's object that keeps loaders, and a generator
    over one (``cycle(loader)`` stepped with ``next()``: the loaders its frame holds, each of
    whose passes then starts with the number the step loop last gave). Objects without
    ``set_epoch`` are skipped silently.
    Returning ``obj`` lets a loop that builds its loader in its own header reshuffle it:
    ``for x, y in set_epoch(DataLoader(...), epoch):``.

    A call outside a training pass starts one: in a multi-process run ranks > 0 then draw from
    their own generators (``_start_pass``), so that dropout, augmentation and noise differ across
    ranks, until the ``end_epoch()`` that ends the epoch gives every rank rank 0's state again (so
    what is drawn between trainings is the same everywhere). Rank 0 keeps its stream, and at the
    first pass says once that batch sizes are per process.

    Each pass gets a new order: a sampler asked for an epoch it has already passed (a second
    training that counts its epochs from 0 again) gets the next epoch number after the last it
    was given (``_fresh_epoch``), as a single process draws a new order at every pass. Without
    ``epoch`` (a loop that does not number its passes: ``while True:`` around a generator's
    ``for x in loader: yield x``), each sampler gets the number after the last it was given, 0
    the first time. A ``DistributedSampler`` (or a ``ShardedSampler``) keeps its own first epoch,
    0, for what iterates it before any ``set_epoch`` (``next(iter(loader))`` to look at a batch): its passes are numbered
    from 1 (``set_epoch(loader, 0)`` gives it 1), so the first training pass draws an order of its
    own, as a single process draws a new one at every ``iter()``. An ``epoch`` that is no
    integer (``set_epoch(loader, lr)`` in ``for lr in lrs:``) counts as none (``_pass_number``).
    Without ``epoch``, a sampler this line has not numbered yet, where it numbered another before
    (a loader made anew at each round of the loop: ``loader = DataLoader(...)``, then
    ``set_epoch(loader)``), continues that one's numbers (``_continued``).
    """
    if not _STATE.in_pass and get_world_size() > 1:
        _start_pass()
    epoch = _pass_number(epoch)
    back = _set_epoch(obj, epoch, set(), (_site(), []))
    if _STATE.self_check is not None:  # a new training arms the checks again (_SelfCheck.epoch_set)
        _STATE.self_check.epoch_set(_site(), epoch, back)
    return obj


def end_epoch() -> None:
    """End an epoch: the training pass its ``set_epoch`` started ends, then every process waits
    for the others (a barrier). The last line of an epoch's body in a converted script.

    With more than one process, ranks > 0 keep their own random streams for the next pass and
    take rank 0's states again (torch CPU and CUDA, ``random``, numpy: one
    ``broadcast_object_list``), so what is drawn between two trainings (a permutation, a
    ``random_split``, a new model's weights) is the same on every process, as one process draws
    it once. Outside a pass it is a barrier; before initialisation it does nothing.

    Then every process compares the parameters of its wrapped models with the others': where a
    model's differ (changed outside the optimizer from each process's own values, as a
    re-initialization of the codes its batches left unused), every process takes the main
    process's, and the main process says so once per model.
    """
    if _STATE.in_pass:
        _end_pass()
    _wait_for_all("end_epoch()")
    if _initialised() and get_world_size() > 1:
        _resync_wrapped()


def _resync_wrapped() -> None:
    """At an epoch's end (``end_epoch()``): where the parameters of a DistributedDataParallel
    model still alive on every process differ between the processes, every process takes the
    main process's (one broadcast each, in place), and the main process says so once per model
    (a module ``sync_gradients`` synced too).
    DDP keeps the replicas equal through the optimizer's steps only; a program that changes
    parameters outside them from what each process computed on its own (a VQ-VAE re-initializing
    the codes its batches left unused, ``codes.data[unused] = torch.randn_like(...)``) has each
    process go on with its own model. One ``all_gather_object`` of a checksum per parameter."""
    ddp, live = torch.nn.parallel.DistributedDataParallel, {}
    for number, ref in _STATE.wrapped:
        model = ref()
        if model is not None and (not isinstance(model, ddp)
                                  or model.process_group is dist.distributed_c10d._get_default_group()):
            live[number] = model
    _STATE.wrapped = [(number, ref) for number, ref in _STATE.wrapped if number in live]
    params = {number: [p for key, p in (model.module if isinstance(model, ddp) else model).named_parameters()
                       if key not in set(getattr(model, "parameters_to_ignore", ()) or ())]
              for number, model in live.items()}
    sums = {number: [int(_checksum(p)) for p in tensors] for number, tensors in params.items()}
    parts: List[Any] = [None] * get_world_size()
    with _waiting("end_epoch()"):
        dist.all_gather_object(parts, sums)
    for number in sorted(live):
        if not all(number in part for part in parts) or all(part[number] == sums[number] for part in parts):
            continue
        with torch.no_grad():
            for param in params[number]:
                dist.broadcast(param.data, 0)
        if get_rank() == 0 and number not in _STATE.resynced:
            _STATE.resynced.add(number)
            name = type(unwrap(live[number])).__name__
            _BUILTIN_PRINT(f"ddpify: at an epoch's end the parameters of {name} differed "
                           "between processes (changed outside the optimizer from each process's own batches or random "
                           "numbers, as a re-initialization of unused codes): every process now goes on with the main "
                           "process's", file=sys.stderr)


def _set_epoch(obj: Any, epoch: Optional[int], seen: set, site: "tuple[Any, list]") -> bool:
    """Set the epoch of every sampler behind ``obj``; True where one was asked for an epoch below
    the last it was asked for (its passes counted again: a new training over it). ``site``: the
    ``set_epoch`` call's line and the samplers it numbered so far (``_continued``)."""
    if obj is None or id(obj) in seen:
        return False
    seen.add(id(obj))
    if isinstance(obj, Mapping):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return any([_set_epoch(item, epoch, seen, site) for item in obj])  # a list: every one is set
    if callable(getattr(obj, "set_epoch", None)):
        last = getattr(obj, "_ddpify_epochs", None)
        if epoch is None:  # (numbered passes keep their numbers: `_fresh_epoch` shifts them past the last)
            _continued(obj, site)
        if isinstance(obj, ShardedSampler):
            obj.set_epoch(_fresh_epoch(obj, epoch), asked=epoch)
        else:
            obj.set_epoch(_fresh_epoch(obj, epoch))
        if isinstance(obj, DistributedSampler):  # a loader shard_loader makes over its data later continues it
            _STATE.remade_over[id(obj.dataset)] = obj
        return epoch is not None and last is not None and epoch < last[0]
    if isinstance(obj, types.GeneratorType):  # an endless generator over a loader (`def cycle(dl): while True:
        frame = obj.gi_frame  # for x in dl: yield x`, then `next(gen)` a step): the loaders its frame holds
        return frame is not None and any([_set_epoch(v, epoch, seen, site) for v in list(frame.f_locals.values())
                                          if isinstance(v, DataLoader)])
    if not hasattr(obj, "sampler") and not hasattr(obj, "batch_sampler") and hasattr(obj, "__dict__") \
            and not isinstance(obj, type):  # a program's wrapper of a loader (`DeviceDataLoader(dl)`): the loaders it keeps
        return any([_set_epoch(v, epoch, seen, site) for v in vars(obj).values() if isinstance(v, DataLoader)])
    return any([_set_epoch(getattr(obj, name, None), epoch, seen, site) for name in ("sampler", "batch_sampler")])


def _continued(sampler: Any, site: "tuple[Any, list]") -> None:
    """A sampler no ``set_epoch`` has numbered yet, at a line that numbered another before without
    a number (the n-th sampler of that call), takes that one's numbers as its own last: a loop that makes its
    loader anew each round (``for _ in range(2): loader = DataLoader(...)``, then
    ``set_epoch(loader)``) gave each new DistributedSampler epoch 1, and every pass drew one order,
    where a single process's new RandomSampler draws a new one."""
    line, numbered = site
    key = (line, len(numbered))
    numbered.append(sampler)
    before = _STATE.numbered_at.get(key)
    _STATE.numbered_at[key] = sampler
    epochs = getattr(before, "_ddpify_epochs", None) if before is not None and before is not sampler else None
    if epochs is not None and getattr(sampler, "_ddpify_epochs", None) is None:
        with contextlib.suppress(AttributeError):  # a sampler with __slots__ keeps the plain numbering
            sampler._ddpify_epochs = epochs


def _pass_number(epoch: Any) -> Optional[int]:
    """``epoch`` as an ``int`` (a numpy integer, a 0-d integer tensor), or None where it is no
    number of a pass: the variable of a loop that sweeps settings (``for lr in [1e-4, 1e-3]:``
    around the passes of an LR finder) takes the next number, as a loop without one does (a
    ``DistributedSampler`` seeds with ``seed + epoch`` and refuses a float)."""
    if epoch is None or isinstance(epoch, bool):
        return None
    try:
        return operator.index(epoch)
    except TypeError:
        return None


def _fresh_epoch(sampler: Any, epoch: Optional[int]) -> int:
    """The epoch to give ``sampler``: ``epoch`` while the epochs asked for increase (a resumed
    run that starts at epoch 5 gets 5), and after an epoch that does not increase (a new training
    pass counting from 0) the numbers continue after the last one given: 0, 1, then 2, 3. No
    ``epoch``: the next number after the last one given (0 the first time). A
    ``DistributedSampler`` (or a ``ShardedSampler``) starts as if its epoch 0 was given already
    (``set_epoch``): 1, 2, ..."""
    last = getattr(sampler, "_ddpify_epochs", None)  # (the epoch asked for, the epoch given)
    if last is None and isinstance(sampler, (DistributedSampler, ShardedSampler)):
        # what an iteration before the first set_epoch draws: its own epoch (0, or, for a pass with no number,
        # the one shard_loader continued it at: `_continue_epochs`)
        last = (-1, getattr(sampler, "epoch", 0) if epoch is None else 0)
    if epoch is None:  # taken as asked for: a number of its own after the last
        epoch, shift = (0 if last is None else last[1] + 1), 0
    else:
        shift = 0 if last is None else last[1] - last[0] if epoch > last[0] else last[1] + 1 - epoch
    with contextlib.suppress(AttributeError):  # a sampler with __slots__ keeps the plain numbering
        sampler._ddpify_epochs = (epoch, epoch + shift)
    return epoch + shift


def _placement(num_replicas: Optional[int], rank: Optional[int]) -> "tuple[int, int]":
    """(number of replicas, this rank) of a sampler: the process group's unless given."""
    num_replicas = get_world_size() if num_replicas is None else num_replicas
    rank = get_rank() if rank is None else rank
    if not 0 <= rank < num_replicas:
        raise ValueError(f"rank {rank} is outside num_replicas {num_replicas}")
    return num_replicas, rank


class _InnerSampler(Sampler):
    """A sampler around the program's own (``self.sampler``): what the program reads of the one it
    built and no longer holds (``loader.sampler.indices`` of a ``SubsetRandomSampler``,
    ``.weights``, ``.data_source``) is the inner sampler's."""

    sampler: Any

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("sampler")  # (absent while unpickling: no recursion)
        if inner is None or name.startswith("_"):  # (ddpify's own marks stay the wrapper's)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(inner, name)


class ShardedSampler(_InnerSampler):
    """Shard any sampler (weighted, custom, a batch sampler) across ranks, keeping its draws.

    Every rank draws the same full stream (the sampler's ``generator`` and the global torch,
    ``random`` and numpy RNGs are seeded with ``seed + epoch`` meanwhile, then restored), pads it
    by repetition to a multiple of the world size, and takes ``stream[rank::num_replicas]``: a
    batch sampler of the program gives each rank every ``num_replicas``-th batch of its stream,
    the same number of batches on every rank. A sampler of indices of the program's own that a
    loader batches (its batch size, set by the loader: ``_deal_whole_batches``) is dealt the same
    way, in whole batches of its stream, a partial last one kept last (or dropped with the
    loader's ``drop_last``). A sampler without a length (an endless batch
    sampler) is dealt as it is drawn, its chain's generators seeded alike on every rank. Other
    attributes are the inner sampler's (``loader.sampler.indices``: the whole subset).
    """

    def __init__(self, sampler: Any, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, seed: int = 0) -> None:
        super().__init__()
        self.sampler = sampler
        self.num_replicas, self.rank = _placement(num_replicas, rank)
        self.seed = seed
        self.epoch = 0
        self._batch_size: Optional[int] = None  # whole batches of this size dealt (a loader's, for the program's sampler)
        self._drop_last = False  # (underscored: the inner sampler's own batch_size stays readable)

    def set_epoch(self, epoch: int, asked: Optional[int] = None) -> None:
        """Draw a new stream next time. Forwarded to the inner sampler when it has set_epoch: the
        epoch the program asked for where ``set_epoch(loader, epoch)`` gave one (``asked``; the
        stream's own number is shifted, ``_fresh_epoch``), so a sampler that reads its epoch
        (a curriculum) sees the numbers it saw in one process."""
        self.epoch = epoch
        if callable(getattr(self.sampler, "set_epoch", None)):
            self.sampler.set_epoch(epoch if asked is None else asked)

    def __len__(self) -> int:
        if self._batch_size:
            size = len(self.sampler)
            batches = size // self._batch_size if self._drop_last else math.ceil(size / self._batch_size)
            return math.ceil(batches / self.num_replicas) * self._batch_size
        return math.ceil(len(self.sampler) / self.num_replicas)

    def __iter__(self) -> Iterator:
        try:
            size = len(self.sampler)
        except TypeError:  # no length: an endless stream
            return self._dealt_endlessly()
        if size > MATERIALISE_UP_TO:
            return self._drawn_as_they_go()
        with _seeded(self.sampler, self.seed + self.epoch):
            stream = list(self.sampler)
        if self._batch_size:
            return iter(self._whole_batches(stream, self._batch_size))
        if stream:
            padding = -len(stream) % self.num_replicas
            stream += (stream * math.ceil(padding / len(stream)))[:padding]
        return iter(stream[self.rank::self.num_replicas])

    def _whole_batches(self, stream: List[Any], size: int) -> List[Any]:
        """This rank's whole batches of ``stream`` (every ``num_replicas``-th), padded by repeating
        full batches to the same number on every rank; a partial last batch stays the last one
        (a loader's ``drop_last`` drops it), so that no rank's batches are re-cut."""
        cut = len(stream) - len(stream) % size
        full = [stream[i:i + size] for i in range(0, cut, size)]
        partial = [stream[cut:]] if cut < len(stream) and not self._drop_last else []
        source = full or partial
        padding = -(len(full) + len(partial)) % self.num_replicas
        dealt = full + (source * math.ceil(padding / max(len(source), 1)))[:padding] + partial
        return [index for batch in dealt[self.rank::self.num_replicas] for index in batch]

    def _dealt_endlessly(self) -> Iterator:
        """A sampler without a length (DomainBed's ``_InfiniteSampler``, an endless loop over a
        ``BatchSampler(RandomSampler(data, replacement=True))``): each sampler of its chain that
        draws from a ``generator`` gets one seeded alike on every rank (restored when the stream is
        dropped), and each rank takes its element of every group of ``num_replicas`` draws; a stream
        that ends stops every rank at the same group."""
        chain = [s for s in _sampler_chain([self.sampler]) if hasattr(s, "generator")]
        saved = [s.generator for s in chain]
        for sampler in chain:
            sampler.generator = torch.Generator().manual_seed(self.seed + self.epoch)
        try:
            stream = iter(self.sampler)
            while len(group := list(itertools.islice(stream, self.num_replicas))) == self.num_replicas:
                yield group[self.rank]
        finally:
            for sampler, generator in zip(chain, saved):
                sampler.generator = generator

    def _drawn_as_they_go(self) -> Iterator:
        """A stream too long to hold (minGPT's ``RandomSampler(replacement=True, num_samples=1e10)``):
        drawn lazily from the sampler's own generator, seeded alike on every rank, so that each rank
        takes its element of every group of ``num_replicas`` draws."""
        generator = getattr(self.sampler, "generator", None)
        if hasattr(self.sampler, "generator"):
            self.sampler.generator = torch.Generator().manual_seed(self.seed + self.epoch)
        try:
            stream = iter(self.sampler)
            first = None
            for _ in range(len(self)):
                group = list(itertools.islice(stream, self.num_replicas))
                first = group[0] if first is None and group else first
                yield group[self.rank] if self.rank < len(group) else first
        finally:
            if hasattr(self.sampler, "generator"):
                self.sampler.generator = generator


@contextlib.contextmanager
def _seeded(sampler: Any, seed: int) -> Iterator[None]:
    """Make ``sampler`` draw the same stream on every rank, whatever the global RNG state: its
    ``generator``, torch's, ``random``'s and numpy's global generators (a batch sampler of the
    program that draws with ``np.random.choice``) are seeded with ``seed`` meanwhile, then restored,
    so each rank's own stream for dropout and augmentation goes on where it was."""
    python_state = random.getstate()
    numpy = sys.modules.get("numpy")  # imported by torch when installed; optional here
    numpy_state = numpy.random.get_state() if numpy is not None else None
    has_generator = hasattr(sampler, "generator")
    if has_generator:
        generator = sampler.generator
        sampler.generator = torch.Generator().manual_seed(seed)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            random.seed(seed)
            if numpy is not None:
                numpy.random.seed(seed % 2**32)
            yield
    finally:
        random.setstate(python_state)
        if numpy is not None:
            numpy.random.set_state(numpy_state)
        if has_generator:
            sampler.generator = generator


def shard_loader(loader: DataLoader) -> DataLoader:
    """A copy of ``loader`` whose sampler gives each rank its own shard.

    ``RandomSampler`` -> ``DistributedSampler(shuffle=True)``, ``SequentialSampler`` ->
    ``DistributedSampler(shuffle=False)``, already distributed -> unchanged, anything else ->
    ``ShardedSampler``. A ``BatchSampler`` is rebuilt around the sharded sampler; another batch
    sampler is sharded batch by batch. A loader over an ``IterableDataset`` reads it through
    ``_StreamShard``: each rank takes its item of every round of world-size items of the stream.

    A loader made again at the line that made one before (a factory called for each pass, a loop
    that makes it anew each round), or over the data set a loader made at another line drew
    from, whose samplers no ``set_epoch`` numbers, gets the epoch after the last one's: each pass
    draws a new order, as a single process's new ``RandomSampler`` does.
    """
    if isinstance(loader.dataset, IterableDataset):
        return _streamed_in_turn(loader)
    kwargs = _loader_kwargs(loader)
    batch_sampler = loader.batch_sampler
    if batch_sampler is None or loader.batch_size is not None:
        kwargs.update(sampler=_shard(loader.sampler, loader.dataset),
                      batch_size=loader.batch_size, drop_last=loader.drop_last)
    elif type(batch_sampler) is BatchSampler:
        kwargs["batch_sampler"] = BatchSampler(_shard(batch_sampler.sampler, loader.dataset),
                                               batch_sampler.batch_size, batch_sampler.drop_last)
    else:
        kwargs["batch_sampler"] = _shard(batch_sampler, loader.dataset)
    sharded = DataLoader(loader.dataset, **kwargs) if type(loader) is DataLoader else _resampled(loader, kwargs)
    _continue_epochs(sharded, loader)
    _count_shard_batches(loader, sharded)
    return sharded


def _count_shard_batches(loader: DataLoader, sharded: DataLoader) -> None:
    """Remember how many batches a pass over ``loader`` gave one process and how many its shard
    gives this one (``_schedule_hint`` names them where a learning-rate schedule sized by
    ``len(loader)`` fails on its count). A shard of no batch where the whole had some (fewer
    samples per process than a batch, with ``drop_last=True``) trains no step at all: the main
    process says so once per line."""
    try:
        whole, shard = len(loader), len(sharded)
    except TypeError:  # a sampler without a length
        return
    site = _site()
    said = site in _STATE.shard_batches
    _STATE.shard_batches[site] = (whole, shard)
    if shard == 0 < whole and not said:
        _say(_Finding("empty-shard", *site,
                      f"this training loader gives each of the {get_world_size()} processes no batch per pass "
                      f"(one process had {whole}): each process's share of the data is smaller than a batch of "
                      f"{sharded.batch_size}, and drop_last=True leaves it out, so the training takes no step",
                      "use fewer processes, a smaller batch_size or more data"))


class _StreamShard(IterableDataset):
    """This rank's part of the program's ``IterableDataset`` (``shard_loader``): of every round of
    ``num_replicas`` items its stream yields, the ``rank``-th. An incomplete last round is dropped on
    every rank, so each rank yields as many items, and takes as many steps, where every rank's
    stream is as long (a finite stream: files read in order; an endless one: any); where the
    stream draws at random, each rank takes its items of its own draws. In a loader's worker
    processes each worker's copy splits the part of the stream the dataset gives that worker
    (``get_worker_info()``), or the whole stream where it gives every worker all of it, as the
    single process did. Its length, where the dataset has one, is this rank's whole rounds;
    what the program reads or sets on it (``loader.dataset.files``, a ``worker_init_fn`` that sets
    ``get_worker_info().dataset.start``) is the dataset's."""

    _OWN = ("dataset", "num_replicas", "rank")

    def __init__(self, dataset: IterableDataset, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None) -> None:
        object.__setattr__(self, "dataset", dataset)
        num_replicas, rank = _placement(num_replicas, rank)
        object.__setattr__(self, "num_replicas", num_replicas)
        object.__setattr__(self, "rank", rank)

    def __iter__(self) -> Iterator:
        mine = None
        for i, item in enumerate(self.dataset):
            if i % self.num_replicas == self.rank:
                mine = item
            if i % self.num_replicas == self.num_replicas - 1:
                yield mine
                mine = None

    def __len__(self) -> int:
        return len(self.dataset) // self.num_replicas  # TypeError where the dataset has no length

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("dataset")  # (absent while unpickling: no recursion)
        if inner is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self if name in self._OWN else self.dataset, name, value)


def _streamed_in_turn(loader: DataLoader) -> DataLoader:
    """A copy of ``loader``, over an ``IterableDataset``, that reads this rank's ``_StreamShard`` of
    it (its class, batching and attributes kept); a dataset that is one already is kept."""
    if isinstance(loader.dataset, _StreamShard):
        return loader
    shard = _StreamShard(loader.dataset)
    if type(loader) is DataLoader:
        return DataLoader(shard, batch_size=loader.batch_size, drop_last=loader.drop_last, **_loader_kwargs(loader))
    sharded = copy.copy(loader)
    object.__setattr__(sharded, "dataset", shard)
    object.__setattr__(sharded, "_iterator", None)
    return sharded


def _resampled(loader: DataLoader, kwargs: dict) -> DataLoader:
    """A copy of ``loader``, an instance of the program's own DataLoader subclass (whose
    ``__init__`` takes its own parameters, and whose methods and attributes the program uses:
    ``loader.load_negatives(...)``), drawing from the sharded sampler in ``kwargs``: its class and
    attributes are kept, only its sampling is replaced (DataLoader refuses to set it once made)."""
    sharded = copy.copy(loader)
    if "sampler" in kwargs:
        sampler = kwargs["sampler"]
        batches = None if loader.batch_size is None else BatchSampler(sampler, loader.batch_size, loader.drop_last)
    else:
        sampler, batches = loader.sampler, kwargs["batch_sampler"]
    object.__setattr__(sharded, "sampler", sampler)
    object.__setattr__(sharded, "batch_sampler", batches)
    object.__setattr__(sharded, "_iterator", None)
    return sharded


def _continue_epochs(sharded: DataLoader, loader: DataLoader) -> None:
    """A loader ``shard_loader`` makes again at the line where it made one before (a factory the
    training calls for each pass, ``data_loader = iter(get_data_loader(...))`` when the last
    iterator ran out), or over the data set a loader it made at another line drew from (a
    pre-training loop's loader, then a step loop's made anew on StopIteration), with a sampler of
    its own that no ``set_epoch`` has numbered: the new sampler takes the epoch after the last
    one's there, so each pass draws a new order, as a single process's new ``RandomSampler`` does
    (with epoch 0 each time, every pass repeated one order). Where ``set_epoch`` numbers those
    samplers (``_fresh_epoch``), nothing changes."""
    found = [s for s in (sharded.sampler, getattr(sharded.batch_sampler, "sampler", None), sharded.batch_sampler)
             if isinstance(s, (DistributedSampler, ShardedSampler))]
    if not found or found[0] in (loader.sampler, loader.batch_sampler):  # the program's own, kept
        return
    sampler, site, data = found[0], _site(), id(loader.dataset)
    here, over = _STATE.remade.get(site), _STATE.remade_over.get(data)
    _STATE.remade[site] = _STATE.remade_over[data] = sampler  # the next one made there, or over it, reads its epoch
    if here is None and over is None or getattr(here, "_ddpify_epochs", None) is not None:
        return  # (set_epoch numbers this line's samplers)
    epoch = max((getattr(b, "_ddpify_epochs", None) or (0, getattr(b, "_ddpify_remade", 0)))[1]
                for b in (here, over) if b is not None) + 1
    sampler.set_epoch(epoch)
    with contextlib.suppress(AttributeError):  # a sampler with __slots__: the next one starts again
        sampler._ddpify_remade = epoch


def _loader_kwargs(loader: DataLoader) -> dict:
    """What a rebuilt copy of ``loader`` keeps: everything but the dataset, sampling and batching."""
    kwargs = dict(num_workers=loader.num_workers, collate_fn=loader.collate_fn,
                  pin_memory=loader.pin_memory, pin_memory_device=loader.pin_memory_device,
                  timeout=loader.timeout, worker_init_fn=loader.worker_init_fn,
                  multiprocessing_context=loader.multiprocessing_context,
                  generator=loader.generator, persistent_workers=loader.persistent_workers)
    if loader.num_workers > 0:
        kwargs["prefetch_factor"] = loader.prefetch_factor
    if hasattr(loader, "in_order"):
        kwargs["in_order"] = loader.in_order
    return kwargs


def _shard(sampler: Any, dataset: Any) -> Any:
    if isinstance(sampler, (DistributedSampler, ShardedSampler)):
        return sampler
    world, rank = get_world_size(), get_rank()
    plain_permutation = (type(sampler) is RandomSampler and not sampler.replacement
                         and sampler.num_samples == len(dataset))
    if plain_permutation or type(sampler) is SequentialSampler:
        return DistributedSampler(dataset, num_replicas=world, rank=rank,
                                  shuffle=plain_permutation)
    return ShardedSampler(sampler, num_replicas=world, rank=rank)


# ----------------------------------------------- FSDP2 (``ddpify convert --strategy fsdp``)
#
# ``shard_model`` shards a model with ``fully_shard``; checkpoints go through full state dicts,
# gathered on every rank (a collective) and written by the main process, so the file is the plain
# state dict the single-GPU script wrote. ``torch.distributed.fsdp`` and
# ``torch.distributed.checkpoint`` are imported inside the helpers: ``import ddpify_runtime``
# stays fast for DDP scripts.


def shard_model(model: torch.nn.Module) -> torch.nn.Module:
    """Shard ``model`` across the ranks with FSDP2: the blocks ``sharded_blocks`` finds (the
    layers of its ``nn.ModuleList``/``nn.Sequential`` containers) become units of their own, then
    the root takes the rest. Returns ``model`` (sharded in place, its class kept); build its
    optimizers afterwards, over the sharded parameters.

    Works with one process too (a one-rank mesh), so the converted script runs under plain
    ``python``. The mesh is on the device type of the model's parameters. A model sharded
    already is returned as it is. RNN layers re-read their gathered weights before each forward
    (``_refresh_flat_weights``).
    """
    from torch.distributed.device_mesh import init_device_mesh
    try:
        from torch.distributed.fsdp import FSDPModule, fully_shard
    except ImportError:  # public from torch 2.6 on
        raise RuntimeError(f"ddpify: --strategy fsdp needs torch >= 2.6 (FSDP2's fully_shard); this is "
                           f"torch {torch.__version__}: convert with --strategy ddp") from None

    if isinstance(model, FSDPModule):  # a training function entered a second time with it
        return model
    device = next(model.parameters()).device
    mesh = init_device_mesh(device.type, (get_world_size(),))
    for module in model.modules():
        if isinstance(module, torch.nn.RNNBase):
            module.register_forward_pre_hook(_refresh_flat_weights)
    for block in sharded_blocks(model):
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def _refresh_flat_weights(rnn: torch.nn.RNNBase, args: Any) -> Any:
    """An RNN (``nn.LSTM``, ``nn.GRU``) caches its weights in ``_flat_weights``; FSDP2 swaps in
    the gathered parameters without telling it, so it would run on the shards. A hidden state
    made from a parameter outside the forward (``next(model.parameters()).new_zeros(...)``, the
    word-language-model idiom) is sharded too: it is gathered (every rank runs the forward)."""
    rnn._init_flat_weights()

    def gathered(value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(gathered(v) for v in value)
        return value.full_tensor() if hasattr(value, "full_tensor") else value

    return gathered(args)


def sharded_blocks(model: torch.nn.Module) -> List[torch.nn.Module]:
    """The modules ``shard_model`` shards before the root: the children with parameters of the
    outermost ``nn.ModuleList``/``nn.Sequential`` containers of ``model`` (the model itself
    included), in order; containers inside a block are left to the block's unit."""
    blocks: List[torch.nn.Module] = []

    def visit(module: torch.nn.Module) -> None:
        container = isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential))
        for child in module.children():
            if container and any(True for _ in child.parameters()):
                if all(child is not b for b in blocks):
                    blocks.append(child)
            elif not container:
                visit(child)

    visit(model)
    return blocks


def _full_options(**kwargs: Any) -> Any:
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, **kwargs)


def full_state_dict(model: torch.nn.Module) -> Any:
    """The full (unsharded) state dict of a sharded ``model``, on the CPU, with the single-GPU
    key names: on the main process; ``{}`` elsewhere. A collective: call it on every rank, and
    save what it returns on the main process."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    return get_model_state_dict(model, options=_full_options(cpu_offload=True))


def load_full_state_dict(model: torch.nn.Module, state_dict: Any, strict: bool = True) -> Any:
    """Load a full state dict (a single-GPU checkpoint, or ``full_state_dict``'s) into the
    sharded ``model``; the main process's copy is the one loaded (the others may pass ``{}``).
    A collective. Returns the missing and unexpected keys, as ``load_state_dict``."""
    from torch.distributed.checkpoint.state_dict import set_model_state_dict

    return set_model_state_dict(model, state_dict,
                                options=_full_options(broadcast_from_rank0=True, strict=strict))


def full_optimizer_state_dict(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Any:
    """The full state of ``optimizer`` over the sharded ``model``, on the CPU, in the format of
    ``optimizer.state_dict()`` (parameters numbered across the param groups, in order), so the
    single-GPU script loads it: on the main process; ``{}`` elsewhere. A collective."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    state = get_optimizer_state_dict(model, optimizer, options=_full_options(cpu_offload=True))
    if not state:
        return state
    numbers = {name: i for i, name in enumerate(n for g in state["param_groups"] for n in g["params"])}
    return {"state": {numbers[name]: value for name, value in state["state"].items()},
            "param_groups": [{**g, "params": [numbers[n] for n in g["params"]]}
                             for g in state["param_groups"]]}


def load_full_optimizer_state_dict(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                                   state_dict: Any) -> None:
    """Load a full optimizer state (``optimizer.state_dict()`` of the single-GPU script, or
    ``full_optimizer_state_dict``'s) into ``optimizer`` over the sharded ``model``; the main
    process's copy is the one loaded. A collective."""
    from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

    if state_dict:  # parameter numbers -> names, in the order optimizer.state_dict() numbers them
        names = {id(p): name for name, p in model.named_parameters()}
        ordered = [names[id(p)] for g in optimizer.param_groups for p in g["params"]]
        state_dict = {"state": {ordered[i]: value for i, value in state_dict["state"].items()},
                      "param_groups": [{**g, "params": [ordered[i] for i in g["params"]]}
                                       for g in state_dict["param_groups"]]}
    set_optimizer_state_dict(model, optimizer, state_dict,
                             options=_full_options(broadcast_from_rank0=True))
# --------------------------------------------------------------------------- evaluation
#
# An evaluation pass split across ranks gives the single-process numbers: ``shard_eval`` hands
# every sample to exactly one rank (no padding, nothing dropped), forwards go through the bare
# module (no collective inside the loop, so uneven batch counts cannot hang), and after the loop
# ``reduce_sum`` adds up sums and counts, ``gather_ordered`` puts collected predictions back in the
# loader's order. With one process every helper returns its argument.


class ExactSplitSampler(_InnerSampler):
    """Every item of ``sampler``'s pass to exactly one rank, in the sampler's order.

    Rank r takes the r-th of ``num_replicas`` contiguous blocks, whose sizes differ by at most
    one (101 on 2 ranks: 51 + 50); nothing is padded or dropped, so the ranks' blocks in rank
    order are the whole pass. A random sampler draws the same stream on every rank (seeded with
    ``seed`` + the number of passes so far). ``keep``: only the first ``keep`` items of each pass
    (the full batches of a ``drop_last`` loader). Works for batch samplers too (whole batches).
    Other attributes are the inner sampler's.
    """

    def __init__(self, sampler: Any, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, seed: int = 0, keep: Optional[int] = None) -> None:
        super().__init__()
        self.sampler = sampler
        self.num_replicas, self.rank = _placement(num_replicas, rank)
        self.seed, self.keep, self.passes = seed, keep, 0

    def _block(self, n: int) -> slice:
        base, extra = divmod(n if self.keep is None else min(n, self.keep), self.num_replicas)
        start = self.rank * base + min(self.rank, extra)
        return slice(start, start + base + (self.rank < extra))

    def __len__(self) -> int:
        block = self._block(len(self.sampler))
        return block.stop - block.start

    def __iter__(self) -> Iterator:
        with _seeded(self.sampler, self.seed + self.passes):
            stream = list(self.sampler)
        self.passes += 1
        return iter(stream[self._block(len(stream))])


def shard_eval(loader: DataLoader, *models: Any) -> DataLoader:
    """``loader`` for one evaluation pass split across ranks (``ExactSplitSampler``), keeping its
    batch size and workers; the same copy on every later pass. ``loader`` itself with one process.

    ``models`` (wrapped or not) first get the main process's buffers, such as BatchNorm running
    statistics, as DDP's own forward would broadcast them: every rank evaluates the same model.
    A ``drop_last`` loader keeps the batches the single process would use. A loader over an
    ``IterableDataset`` or one already sharded is refused (its sums would not be the full set's).
    A collective when ``models`` are given: every rank calls it.
    """
    if get_world_size() == 1:
        return loader
    with _waiting("shard_eval()"):
        for model in models:
            for buffer in unwrap(model).buffers():
                dist.broadcast(buffer, src=0)
    splits = _STATE.eval_splits
    if loader not in splits:
        splits[loader] = _split_for_evaluation(loader)
    return splits[loader]


def _split_for_evaluation(loader: DataLoader) -> DataLoader:
    batch_sampler = loader.batch_sampler
    inner = loader.sampler if batch_sampler is None else getattr(batch_sampler, "sampler", batch_sampler)
    if isinstance(loader.dataset, IterableDataset) or isinstance(inner, (DistributedSampler, ShardedSampler)):
        raise TypeError("ddpify: shard_eval() needs a DataLoader over a map-style dataset that no "
                        "sampler shards yet; convert with --no-shard-eval to evaluate it whole")
    kwargs = _loader_kwargs(loader)
    world, rank = get_world_size(), get_rank()
    if batch_sampler is None or loader.batch_size is not None:
        size = loader.batch_size
        keep = len(loader.sampler) // size * size if loader.drop_last else None
        kwargs.update(sampler=ExactSplitSampler(loader.sampler, world, rank, keep=keep), batch_size=size)
    else:  # a batch sampler of the user's: whole batches to each rank
        kwargs["batch_sampler"] = ExactSplitSampler(batch_sampler, world, rank)
    return DataLoader(loader.dataset, **kwargs)


def _collective_device() -> torch.device:
    return local_device() if dist.get_backend() == "nccl" else torch.device("cpu")


def reduce_sum(*values: Any) -> Any:
    """The sum over all ranks of each value, the same on every rank: ints exactly (Python ints),
    floats added in rank order, tensors all-reduced in their dtype and on their device. A rank
    whose value is still a number where another's is a tensor (``total = 0``, no batch read here)
    adds that number to every element. One value in, one out; several in, a tuple out. A
    collective: every rank calls it with as many values."""
    if get_world_size() == 1:
        return values[0] if len(values) == 1 else values
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float, torch.Tensor)):
            raise TypeError(f"ddpify: reduce_sum() adds ints, floats and tensors, not {type(value).__name__}")
    described = [(tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else v for v in values]
    parts: List[Any] = [None] * get_world_size()
    with _waiting("reduce_sum()"):
        dist.all_gather_object(parts, described)
    sums = tuple(_sum_over_ranks(value, [part[i] for part in parts]) for i, value in enumerate(values))
    return sums[0] if len(sums) == 1 else sums


def sum_over_shards(loader: DataLoader, *values: Any) -> Any:
    """``reduce_sum(*values)`` where a sampler gives each process its own part of ``loader``'s data,
    else the values as they are: sums over one pass of ``loader`` made the sums over all of it.
    A loop shared by a sharded training loader and a whole validation one
    (``for x, y in dataloaders[phase]``) calls it after each pass: the training phase's sums are
    added over the processes, the validation phase's are whole already. A collective where the
    loader is sharded (every process passes the same loader there). A ``DistributedSampler``
    pads its shards to equal lengths, so a training sum may count up to world size - 1 samples
    twice. A numpy value (``loss.detach().cpu().numpy() * n``) comes back as numpy. A dict of such
    values (``total_metrics``, one sum per metric, added to item by item: ``total_metrics[k] += n *
    value``) comes back a dict of the same keys, each summed; its keys must be the same on every
    process (a ValueError where they are not)."""
    if not _sharded(loader):
        return values[0] if len(values) == 1 else values
    keys = [list(v.keys()) if isinstance(v, Mapping) else None for v in values]
    if any(k is not None for k in keys):
        parts: List[Any] = [None] * get_world_size()
        with _waiting("sum_over_shards()"):
            dist.all_gather_object(parts, keys)
        if any(part != keys for part in parts):
            raise ValueError("ddpify: sum_over_shards() adds up dicts whose keys are the same on every process; "
                             f"they differ: {parts}")
    flat = [item for v in values for item in (v.values() if isinstance(v, Mapping) else (v,))]
    numpy = sys.modules.get("numpy")
    kinds = (numpy.ndarray, numpy.generic) if numpy is not None else ()
    summed = reduce_sum(*(torch.as_tensor(v) if isinstance(v, kinds) else v for v in flat)) if flat else ()
    summed = summed if len(flat) != 1 else (summed,)
    back = [s if not isinstance(v, kinds) else s.numpy() if isinstance(v, kinds[0]) else type(v)(s.item())
            for v, s in zip(flat, summed)]
    rebuilt = []
    for value, names in zip(values, keys):
        if names is None:
            rebuilt.append(back.pop(0))
        else:
            items = [back.pop(0) for _ in names]
            rebuilt.append((OrderedDict if isinstance(value, OrderedDict) else dict)(zip(names, items)))
    return rebuilt[0] if len(rebuilt) == 1 else tuple(rebuilt)


def mean_over_shards(loader: DataLoader, *values: Any) -> Any:
    """The mean over the processes of each value where a sampler gives each process its own part of
    ``loader``'s data, else the values as they are: a sum over one pass of ``loader`` that the
    program divides by the batches it drew (``total / len(loader)``, the same number on every
    process, as a ``DistributedSampler`` gives each as many) becomes the sum over all of it divided
    by all the batches, the whole set's mean. A collective where the loader is sharded."""
    if not _sharded(loader):
        return values[0] if len(values) == 1 else values
    summed = sum_over_shards(loader, *values)
    size = get_world_size()
    means = tuple(s / size for s in (summed if len(values) > 1 else (summed,)))
    return means[0] if len(means) == 1 else means


def gather_over_shards(loader: DataLoader, *lists: Any) -> Any:
    """``gather_ordered(items)`` of each list where a sampler gives each process its own part of
    ``loader``'s data, else the lists as they are: what one pass over ``loader`` collected (one
    loss per batch, the predictions) becomes what one process reading all of it collects, every
    process's items in rank order, so that a mean over the list is the whole set's. A collective
    where the loader is sharded (every process passes the same loader there)."""
    if not _sharded(loader):
        return lists[0] if len(lists) == 1 else lists
    gathered = tuple(gather_ordered(items) for items in lists)
    return gathered[0] if len(gathered) == 1 else gathered


def _sum_over_ranks(value: Any, seen: List[Any]) -> Any:
    """``value`` summed with the other ranks' (``seen``: each rank's number, or (shape, dtype))."""
    tensors = [s for s in seen if isinstance(s, tuple)]
    if not tensors:
        return sum(seen[1:], seen[0])
    shape, dtype = tensors[0]
    local = value.detach() if isinstance(value, torch.Tensor) else torch.full(shape, value, dtype=dtype)
    total = local.to(_collective_device(), copy=True)
    dist.all_reduce(total)
    return total.to(value.device if isinstance(value, torch.Tensor) else local.device)


def gather_ordered(items: Any) -> List[Any]:
    """Every rank's list, concatenated in rank order: after a ``shard_eval`` pass (contiguous
    blocks), the order one process would have collected. Lists of tensors travel as tensors
    (shapes may differ per item and per rank); anything else is pickled. A collective."""
    items = list(items)
    world = get_world_size()
    if world == 1:
        return items
    tensors = bool(items) and all(isinstance(i, torch.Tensor) for i in items)
    described = [(tuple(t.shape), t.dtype) for t in items] if tensors else items
    parts: List[Any] = [None] * world
    with _waiting("gather_ordered()"):
        dist.all_gather_object(parts, (tensors, described))
    if not any(t for t, _ in parts):
        return [item for _, part in parts for item in part]
    if not all(t or not part for t, part in parts):
        raise TypeError("ddpify: gather_ordered() got tensors on some ranks and other values on others")
    return _gather_tensors(items, [part for _, part in parts])


def _gather_tensors(items: List[torch.Tensor], shapes: List[List[Any]]) -> List[torch.Tensor]:
    """All ranks' tensors, as one flat all_gather padded to the longest rank."""
    dtypes = {dtype for part in shapes for _, dtype in part}
    if len(dtypes) != 1:
        raise TypeError(f"ddpify: gather_ordered() got tensors of several dtypes: {sorted(map(str, dtypes))}")
    dtype, device = dtypes.pop(), items[0].device if items else torch.device("cpu")
    sizes = [sum(math.prod(shape) for shape, _ in part) for part in shapes]
    flat = torch.zeros(max(sizes), dtype=dtype, device=_collective_device())
    if items:
        mine = torch.cat([t.detach().reshape(-1) for t in items])
        flat[:mine.numel()] = mine
    gathered = [torch.empty_like(flat) for _ in shapes]
    dist.all_gather(gathered, flat)
    result = []
    for part, data in zip(shapes, gathered):
        offset = 0
        for shape, _ in part:
            n = math.prod(shape)
            result.append(data[offset:offset + n].reshape(shape).to(device))
            offset += n
    return result
# --------------------------------------------------------------------------- self-check
#
# With more than one process (or ``DDPIFY_VERIFY=1``), ``init_distributed_mode()`` installs hooks
# that watch the first training steps for the mistakes that train on quietly wrong: parameters
# stepped outside DDP/FSDP, a training loader every process reads whole, the same order in two
# training passes, parameters that differ between processes after the 2nd step (exchanged through
# the store with a bounded wait, ``_SelfCheck.exchange``: a process that never steps there is a
# finding, never a hang). Then the per-step hooks remove themselves, and an optimizer built later
# (the next training), or a training that starts over (``set_epoch``'s epoch goes back), arms
# them again. At exit one more exchange compares the models' parameters, the sharded training
# data sets' orders and the files each process wrote (``open`` and torch's writers record them for the whole run). The main process
# prints one block per moment of finding (a fixed header, one ``file:line: check: what; way out``
# line each) and, where ``DDPIFY_VERIFY_JSON`` names a file, writes every finding so far there as
# JSON. ``DDPIFY_VERIFY=strict`` raises ``SelfCheckError`` after the block (at exit: ends the
# process with status 1). A hang names where each process waits (``_Watchdog``).
# docs/runtime.md#self-check and docs/decisions/0010-runtime-self-check.md (and 0031) say why
# and what not.

VERIFY_HEADER = "ddpify self-check: {} problem(s) found"
VERIFY_DOCS = "docs/runtime.md#self-check"
HANG_PREFIX = "ddpify hang:"
HANG_EARLY_S = 30.0  # seconds of waiting after which the watchdog names a hang it can prove (_Watchdog)
SHOWN_NAMES = 4  # parameter names shown per finding, then "(+N more)"
CHECKED_STEPS = 50  # the per-step checks end after this many optimizer steps, or backward passes without one
EXCHANGE_WAIT_S = 30.0  # the longest wait for another process's checksums (less with a short DDPIFY_TIMEOUT)
KEPT_WRITES = 256  # distinct paths each process records as opened for writing (with the first opener's line)
READ_WAIT_S = 20.0  # the longest a process that a missing file ended waits for the main process to write it (early-read)
SHOWN_WRITES = 3  # files written by several processes named at exit, then "and N more"


class SelfCheckError(RuntimeError):
    """Raised under ``DDPIFY_VERIFY=strict`` where the self-check finds a problem (on every
    process that knows it). ``findings``: the block's findings, each with ``check`` (the name of
    the check that found it), ``file``, ``line``, ``message`` and ``fix``. At exit, where an
    exception no longer changes the exit status, the process ends with status 1 instead, this
    error in torchrun's error file."""

    def __init__(self, text: str, findings: List[Any]) -> None:
        super().__init__(text)
        self.findings = findings


@dataclass(frozen=True)
class _Finding:
    """One problem at the user's ``file:line``. ``agree``: reported only where every process
    found it with an equal value (a loader's data: a Subset's indices differ when sharded by hand)."""

    check: str
    file: str
    line: int
    message: str
    fix: str
    agree: Any = None

    def __str__(self) -> str:
        return (f"{self.file}:{self.line}: {self.check}: {self.message}; {self.fix}; "
                f"DDPIFY_VERIFY=0 turns the self-check off ({VERIFY_DOCS})")

    def as_json(self) -> dict:
        return {"check": self.check, "file": self.file, "line": self.line,
                "message": self.message, "fix": self.fix}


def _verify_mode(environ: Mapping[str, str], world_size: int) -> str:
    """"off", "warn" or "strict" from ``DDPIFY_VERIFY`` (unset: "warn" with more than one process)."""
    value = environ.get("DDPIFY_VERIFY", "").strip().lower()
    if value == "":
        return "warn" if world_size > 1 else "off"
    modes = {"0": "off", "off": "off", "1": "warn", "on": "warn", "strict": "strict"}
    if value not in modes:
        raise ValueError(f"ddpify: DDPIFY_VERIFY={environ['DDPIFY_VERIFY']!r} is not 0, 1 or strict")
    return modes[value]


def _check_at_exit(hook: bool = True) -> None:
    """At exit (and once), or where the program destroys the process group itself (``hook``
    False): what the checks still hold (``_SelfCheck.at_exit``: the program ended within a
    training's first steps), then, unless an exception ended the program or one process runs it,
    the comparison of the models and of the files written with the other processes'
    (``_SelfCheck.compare_models``). Under strict, a finding raises ``SelfCheckError`` in the
    program, or in the exit hook ends the process with exit status 1 (``_exit_strictly``): raised
    there, it would not change the exit status."""
    check, _STATE.exit_check = _STATE.exit_check, None
    if check is None:
        return
    strict, check.strict = check.strict, False  # the block is said, then the process ends below
    said = len(check.reported)
    check.at_exit()
    if not _STATE.failed and get_world_size() > 1:
        check.compare_models()
    found = check.reported[said:]
    if strict and found and not _STATE.failed:  # after an exception the exit status is already 1
        error = SelfCheckError("\n".join([VERIFY_HEADER.format(len(found)), *map(str, found)]), found)
        if not hook:
            raise error
        _exit_strictly(error)


def _exit_strictly(error: SelfCheckError) -> None:
    """End the process with exit status 1 from an exit hook, where an exception no longer can
    (Python prints it and keeps the status). The error goes to torchrun's error file, so its
    summary names this process and the findings (``_record_error``); the exit hooks that would
    still run and matter here run now: the runtime's teardown of the process group and logging's
    flush; the files the program left open and the standard streams are flushed (what the
    interpreter's finalization would do for them); then ``os._exit(1)``. The other exit hooks of
    modules imported before ``init_distributed_mode()`` (multiprocessing's, weakref finalizers)
    do not run: running every remaining one (``atexit._run_exitfuncs``) would run again those
    that already ran before this one."""
    _record_error(SelfCheckError, error, None)
    _destroy()
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in gc.get_objects():
        if issubclass(type(stream), (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom)):
            with contextlib.suppress(Exception):  # closed, detached, or a pipe whose reader left
                stream.flush()
    os._exit(1)


def _install_self_check(mode: str, timeout: float) -> None:
    """Called by ``init_distributed_mode()``: unless ``mode`` is "off", install the checks and,
    with more than one process, the hang watchdog."""
    if _STATE.self_check is not None:  # installed again (tests, benchmarks): the new one replaces it
        _STATE.self_check.remove()
    _STATE.exit_check = None
    if mode == "off":
        return
    _STATE.self_check = _STATE.exit_check = _SelfCheck(strict=mode == "strict",
                                                       wait=min(EXCHANGE_WAIT_S, timeout / 20))
    _STATE.self_check.install()
    atexit.unregister(_check_at_exit)
    atexit.register(_check_at_exit)  # after _destroy: runs before it, the process group still there
    if get_world_size() > 1 and _STATE.watchdog is None:
        _STATE.watchdog = _Watchdog.start(timeout)


# Where the user is: the innermost frame outside torch, the standard library and this file

def _is_library(filename: str) -> bool:
    """Not the user's code: this file, torch, the standard library, installed packages, and the
    site hooks Python imports at start (``sitecustomize``/``usercustomize``: a hook that wraps
    ``torch.save`` is not where the program saves)."""
    return filename == __file__ or filename.startswith(_library_dirs()) or filename.startswith("<frozen") \
        or os.path.basename(filename) in ("sitecustomize.py", "usercustomize.py")


@functools.lru_cache(maxsize=None)
def _library_dirs() -> tuple:
    """torch's folder and the standard library's and site-packages' folders, each ending in a separator."""
    import sysconfig
    paths = sysconfig.get_paths()
    dirs = {os.path.dirname(torch.__file__), *(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))}
    return tuple(os.path.join(d, "") for d in dirs)


def _hidden(path: str) -> bool:
    """A hidden folder or file on the way from the working directory to ``path``: a cache's
    (``~/.cache``, ``~/.triton``), an atomic save's temporary file (per process anyway). The
    folders above the working directory do not count: a project under ``~/.work`` is seen."""
    return any(part.startswith(".") and part != ".." for part in os.path.relpath(path).split(os.sep))


def _shown_path(filename: str) -> str:
    """``filename`` relative to the working directory when it lies inside it."""
    shown = _STATE.shown
    if filename not in shown:
        absolute, cwd = os.path.abspath(filename), os.path.join(os.getcwd(), "")
        shown[filename] = os.path.relpath(absolute) if absolute.startswith(cwd) else filename
    return shown[filename]


def _user_frame(frame: Any) -> Any:
    """The innermost frame of the user's code from ``frame`` outwards (``frame`` when none is)."""
    first = frame
    while frame is not None and _is_library(frame.f_code.co_filename):
        frame = frame.f_back
    return frame or first


def _site(frame: Any = None) -> "tuple[str, int]":
    """(file, line) of the user's code that called into here."""
    frame = _user_frame(frame or sys._getframe(1))
    return _shown_path(frame.f_code.co_filename), frame.f_lineno


def _patch(owner: Any, name: str, make: Any) -> Any:
    """Replace ``owner.name`` with ``make(original)``; returns the undo."""
    original = vars(owner)[name]
    setattr(owner, name, functools.wraps(original)(make(original)))
    return lambda: setattr(owner, name, original)


def _optimizer_module() -> Any:
    import torch.optim.optimizer  # noqa: F401 (the module: ``torch.optim.optimizer`` names a function too)
    return sys.modules["torch.optim.optimizer"]


def _remember(table: "weakref.WeakKeyDictionary", obj: Any, value: Any) -> None:
    with contextlib.suppress(TypeError):  # an object that cannot be weakly referenced or hashed
        table[obj] = value


# What a loader and a parameter are

_PLAIN_SAMPLERS = (RandomSampler, SequentialSampler, torch.utils.data.SubsetRandomSampler,
                   torch.utils.data.WeightedRandomSampler)
_SHUFFLING_SAMPLERS = (RandomSampler, torch.utils.data.SubsetRandomSampler,
                       torch.utils.data.WeightedRandomSampler)


def _samplers(loader: DataLoader) -> List[Any]:
    """``loader``'s sampler and batch sampler, and the samplers they wrap (``_sampler_chain``)."""
    return _sampler_chain([loader.sampler, loader.batch_sampler])


def _sampler_chain(roots: List[Any]) -> List[Any]:
    """``roots`` and the samplers they wrap, outermost first: a custom batch sampler around a
    ``BatchSampler`` around a ``DistributedSampler`` (DomainBed's ``_InfiniteSampler``) is
    sharded by the innermost. Wrapped ones are found as attributes that are samplers (or named
    ``sampler``), at most ``SAMPLER_DEPTH`` in all."""
    found: List[Any] = []
    todo = list(roots)
    while todo and len(found) < SAMPLER_DEPTH:
        sampler = todo.pop(0)
        if sampler is None or any(sampler is seen for seen in found):
            continue
        found.append(sampler)
        held = getattr(sampler, "__dict__", {})
        todo.extend(value for name, value in held.items() if name == "sampler" or isinstance(value, Sampler))
    return found


def _sharded(loader: DataLoader) -> Optional[bool]:
    """True: a sampler shards ``loader``; False: a plain torch sampler reads its whole map-style
    data set on every process; None: cannot tell (an IterableDataset, a custom sampler, or no
    DataLoader at all: an ``enumerate`` or a generator over one). An IterableDataset that
    ``shard_loader`` deals out (``_StreamShard``) is sharded. A progress bar over a loader
    (tqdm's, which keeps it as ``iterable``: the program's ``train_bar`` of ``total, n, train_bar
    = 0, 0, tqdm(loader)``) answers for its loader."""
    for _ in range(4):  # a bar over a bar
        if isinstance(loader, DataLoader) or getattr(loader, "iterable", None) is None:
            break
        loader = loader.iterable
    if isinstance(loader, DataLoader) and isinstance(loader.dataset, _StreamShard):
        return True
    if not isinstance(loader, DataLoader) or isinstance(loader.dataset, IterableDataset):
        return None
    samplers = _samplers(loader)
    if any(isinstance(s, (DistributedSampler, ShardedSampler, ExactSplitSampler))
           or (hasattr(s, "num_replicas") and hasattr(s, "rank")) for s in samplers):
        return True
    if type(loader.sampler) in _PLAIN_SAMPLERS and type(loader.batch_sampler) in (BatchSampler, type(None)):
        return False
    return None


def _order(loader: DataLoader) -> Any:
    """What fixes the order of a sharded, shuffling loader's pass: (seed, epoch) of its sampler;
    None for a loader whose order is meant to stay (no shuffle) or is not the sampler's to fix."""
    for sampler in _samplers(loader):
        if type(sampler) is DistributedSampler and sampler.shuffle:
            return (sampler.seed, sampler.epoch)
        if type(sampler) is ShardedSampler:
            inner = getattr(sampler.sampler, "sampler", sampler.sampler)
            return (sampler.seed, sampler.epoch) if type(inner) in _SHUFFLING_SAMPLERS else None
    return None


def _data_fingerprint(loader: DataLoader) -> Any:
    """Equal on every process reading the same data: a Subset's indices (a hand-made shard
    differs), else the data set's class and length."""
    dataset = loader.dataset
    if isinstance(dataset, torch.utils.data.Subset):
        return hashlib.sha256(repr(list(dataset.indices)).encode()).hexdigest()
    return (type(dataset).__name__, len(dataset) if hasattr(dataset, "__len__") else None)


def _batch_fingerprint(batch: Any) -> str:
    """A digest of a batch's values (tensors by shape and ``_checksum``): equal on every process
    that was given the same batch."""
    parts: List[Any] = []

    def visit(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            parts.append((tuple(value.shape), int(_checksum(value))))
        elif isinstance(value, Mapping):
            for item in value.values():
                visit(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        else:
            parts.append(value if isinstance(value, (int, float, str, bytes, bool, type(None)))
                         else type(value).__name__)

    visit(batch)
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _synchronised_elsewhere(param: torch.Tensor) -> bool:
    """A parameter FSDP or tensor parallelism owns (``_held_in_parts``), or one whose gradients
    `sync_gradients` averages: no DDP wrapper needs to hold it."""
    return _held_in_parts(param) or getattr(param, "_ddpify_synced", False)


def _held_in_parts(param: torch.Tensor) -> bool:
    """A parameter each process holds a part of: a DTensor (FSDP2) or a flat parameter (FSDP1).
    Its checksum differs between processes by design; a synced parameter's must not (its
    gradients are averaged, yet the program may still change it apart on each process)."""
    dtensor = getattr(sys.modules.get("torch.distributed.tensor"), "DTensor", ())
    return isinstance(param, dtensor) or getattr(param, "_is_flat_param", False)


def _checksum(param: torch.Tensor) -> torch.Tensor:
    """The sum of the bit patterns of ``param``'s elements, as int64: differs after any bit flip."""
    data = param.detach()
    if data.is_complex():
        data = torch.view_as_real(data)
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[data.element_size()]
    return data.contiguous().reshape(-1).view(as_int).sum(dtype=torch.int64)


def _owners(params: List[torch.Tensor], wrapped: Any) -> "dict[int, tuple[str, str]]":
    """id(param) -> (class of the outermost module holding it, its name there). Only on the way
    to a finding: searches the DDP wrappers, then every live module (the garbage collector's list)."""
    wanted, found = {id(p) for p in params}, {}
    modules = [m.module for m in wrapped]
    ddp = torch.nn.parallel.DistributedDataParallel
    modules += sorted((o for o in gc.get_objects() if issubclass(type(o), torch.nn.Module) and not issubclass(type(o), ddp)),
                      key=lambda m: -sum(1 for _ in m.parameters()))
    for module in modules:
        for name, param in module.named_parameters():
            if id(param) in wanted and id(param) not in found:
                found[id(param)] = (type(unwrap(module)).__name__, name)
        if len(found) == len(wanted):
            break
    return found


def _grad_fns(tensors: Any) -> List[Any]:
    """The autograd nodes of what ``torch.autograd.backward`` is given: a tensor or a sequence of them."""
    given = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors) if isinstance(tensors, (list, tuple)) else []
    return [t.grad_fn for t in given if isinstance(t, torch.Tensor) and t.grad_fn is not None]


def _leaves(nodes: List[Any]) -> "set[int]":
    """id() of the leaf tensors (parameters) an autograd graph from ``nodes`` accumulates into."""
    seen, leaves, stack = set(), set(), list(nodes)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)  # an AccumulateGrad node
        if variable is not None:
            leaves.add(id(variable))
        stack.extend(next_node for next_node, _ in node.next_functions)
    return leaves


def _names(names: List[str]) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    return shown + (f" (+{len(names) - SHOWN_NAMES} more)" if len(names) > SHOWN_NAMES else "")


# The checks

def _settings(optimizer: Any) -> "List[dict]":
    """Each param group's settings but its parameters (``lr``, ``momentum``, ``betas``, ...) that
    are numbers (a one-element tensor read as one), to compare between processes."""
    found = []
    for group in optimizer.param_groups:
        kept = {}
        for name, value in group.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = value.item()
            if name != "params" and isinstance(value, (int, float)) or \
                    isinstance(value, tuple) and all(isinstance(v, (int, float)) for v in value):
                kept[name] = value
        found.append(kept)
    return found


def _differing_settings(record: "_Stepped", settings: "List[Any]") -> "List[_Finding]":
    """A finding where the processes step one optimizer with different settings (an ``lr`` each
    picked from its own shard's losses, as an LR finder does): the same gradients, different
    updates, so the models part. ``settings``: each process's ``_settings`` (None: not known)."""
    known = [s for s in settings if s is not None]
    if len(known) < 2 or all(s == known[0] for s in known) or len({len(s) for s in known}) > 1:
        return []
    named = sorted({name for groups in zip(*known) for name in groups[0]
                    if len({repr(g.get(name)) for g in groups}) > 1})
    values = "; ".join(f"{name}: " + ", ".join(repr(next((g[name] for g in s if name in g), None)) for s in known)
                       for name in named)
    return [_Finding(
        "differing-settings", *record.site,
        f"after this optimizer's 2nd step its settings differ between processes ({values}, in rank "
        f"order): every process steps the averaged gradients with its own {', '.join(named)}, so the "
        f"models part",
        "a manual change: compute the value on the main process (or from numbers added up over the "
        "processes) and give every process the same, e.g. value = from_main_process(lambda: value); a "
        "setting picked from each process's own losses (an LR finder over a sharded loader) differs")]


@dataclass
class _Stepped:
    """An optimizer the checks have seen step: where it was built, the parameters it stepped, the
    name of its exchange (``_SelfCheck.exchange``)."""

    site: "tuple[str, int]"
    params: List[torch.Tensor]
    key: str
    count: int = 0
    settings: Any = None  # its param groups' settings at its 2nd step (``_settings``)


class _SelfCheck:
    """The checks' hooks and what they have seen. Per-step hooks (optimizer steps, backward,
    loader batches) go once every optimizer built since the checks were armed has stepped twice;
    per-pass hooks (a loader's ``iter()``) once every sharded training loader has started its
    second pass. Then the checks are dormant: only the construction hooks of optimizers, DDP and
    loaders stay, and ``destroy_process_group`` (the exit checks run there where the program
    calls it; nothing of them runs in a step), and an optimizer built later at a line where
    none was built before arms them again (``arm``), so each training gets its own check (one
    rebuilt at one line, each round of a loop or each batch of an inner optimisation, arms them
    once, not at every build); so does a training that starts over (``epoch_set``: the epoch
    given to ``set_epoch`` goes back), which checks every optimizer again, a reused one too.
    Every process builds the same optimizers and sets the same epochs, so every process arms at
    the same ones: the exchanges are named by the optimizer and the restart, never by how often
    a process armed."""

    def __init__(self, strict: bool, wait: float = EXCHANGE_WAIT_S) -> None:
        self.strict = strict
        self.wait = wait  # seconds the 2nd step waits for the other processes' checksums
        self.prefix = ""  # of this installation's keys in the store
        self.keys: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # optimizer -> exchange name
        self.built: "dict[tuple[str, int], int]" = {}  # optimizer site -> optimizers built there
        self.named: "dict[str, int]" = {}  # exchange name without its number -> optimizers given it
        self.reported: List[_Finding] = []
        self.pending: List[_Finding] = []
        self.sites: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # optimizer/loader -> site
        self.wrapped: "weakref.WeakSet" = weakref.WeakSet()  # DistributedDataParallel instances
        self.wraps: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # DDP -> (site, name at exit)
        self.wrapped_at: "dict[tuple[str, int], int]" = {}  # DDP site -> models wrapped there
        self.stepped: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # optimizer -> _Stepped
        self.after_steps: "List[Callable[[Any, Any, Any], None]]" = []  # what runs after each step (on_step)
        self.step_dispatch: Any = None  # the one step post hook of torch's that runs them
        self.in_step = False  # run_after_step is running them
        self.training: dict = {}  # loader key -> order at its first training pass (None: nothing to compare)
        self.repeats: dict = {}  # loader key -> [iterator ref, site, batches drawn at the last step] of a pass in that order
        self.forwards: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # DDP -> (forwards, last output's grad_fns)
        self.ran: "weakref.WeakSet" = weakref.WeakSet()  # DDP instances whose forward ran with gradients while checked
        self.late: "weakref.WeakSet" = weakref.WeakSet()  # DDP instances whose late parameters were said
        self.repeat_undo: Optional[Any] = None
        self.lengths: "dict[str, int]" = {}  # "file:line" of a training loader -> its batches per pass
        self.optimizers: "weakref.WeakSet" = weakref.WeakSet()  # built since the checks were armed
        self.backwards = self.steps = 0  # backward passes in all; optimizer steps since armed
        self.armed_at = 0  # backward passes before the checks were armed
        self.armings = 0  # times the checks were armed (the same on every process)
        self.restarts = 0  # trainings started over (epoch_set: the same on every process)
        self.epochs: "dict[tuple[str, int], int]" = {}  # set_epoch site -> the epoch last asked for there
        self.build_undo: List[Any] = []  # construction hooks: stay until remove()
        self.writes: "dict[str, tuple[str, int]]" = {}  # absolute path opened for writing -> first opener's site
        self.orders: "dict[tuple[str, int], dict[str, str]]" = {}  # training loader's site -> _order_fingerprint
        self.write_undo: List[Any] = []
        self.store: Any = None  # where the main process announces its writes (record_writes)
        self.step_undo: List[Any] = []
        self.pass_undo: List[Any] = []

    def install(self) -> None:
        _STATE.installs += 1  # every process installs as often: the same prefix everywhere
        self.prefix = f"ddpify/verify/{_STATE.installs}/"
        check = self

        def loader_init(original: Any) -> Any:
            def __init__(loader: Any, *args: Any, **kwargs: Any) -> None:
                original(loader, *args, **kwargs)
                _remember(check.sites, loader, _site())
            return __init__

        def optimizer_init(original: Any) -> Any:
            def __init__(optimizer: Any, *args: Any, **kwargs: Any) -> None:
                original(optimizer, *args, **kwargs)
                site = _site()
                new_site = site not in check.built
                _remember(check.sites, optimizer, site)
                _remember(check.keys, optimizer, check.exchange_key(site))
                if not check.step_undo and new_site:  # a new training after the checks ended: arm them again
                    check.arm()
                with contextlib.suppress(TypeError):
                    check.optimizers.add(optimizer)
            return __init__

        def ddp_init(original: Any) -> Any:
            def __init__(model: Any, *args: Any, **kwargs: Any) -> None:
                original(model, *args, **kwargs)
                check.wrapped.add(model)
                site = _site()
                number = check.wrapped_at[site] = check.wrapped_at.get(site, -1) + 1
                _remember(check.wraps, model, (site, f"{site[0]}:{site[1]}#{number}"))
            return __init__

        def destroy(original: Any) -> Any:
            def destroy_process_group(group: Any = None, *args: Any, **kwargs: Any) -> Any:
                if group is None or group is dist.group.WORLD:  # the program ends its run: check while the group is there
                    _check_at_exit(hook=False)
                return original(group, *args, **kwargs)
            return destroy_process_group

        self.build_undo = [
            _patch(DataLoader, "__init__", loader_init),
            _patch(torch.optim.Optimizer, "__init__", optimizer_init),
            _patch(torch.nn.parallel.DistributedDataParallel, "__init__", ddp_init),
            _patch(dist, "destroy_process_group", destroy),
        ]
        if get_world_size() > 1:
            self.record_writes()
        self.arm()

    def record_writes(self) -> None:
        """Until ``remove()`` (the whole run: saves come at epoch ends, after the per-step checks),
        record each path opened for writing, with the line of the user's code that led there
        (through PIL's ``Image.save``, a CSV logger...), for ``compare_models``: at most
        ``KEPT_WRITES`` paths, one dict lookup per write. Two kinds of hook: ``open``
        (``builtins.open``, ``io.open``: one object), and the two places where torch hands a path
        to its C++ writer, which bypasses ``open``: ``torch.serialization._open_zipfile_writer``
        (every ``torch.save`` to a path, however the program named ``torch.save``) and
        ``RecursiveScriptModule.save`` (``torch.jit.save`` and a scripted module's ``.save``). Not
        recorded: devices, and paths with a hidden folder or file below the working directory
        (``_hidden``). Also every ``torch.save``'s object (``torch.serialization._save``), for
        ``saved``."""
        check = self
        record = self._record
        self.store = _default_store() if get_rank() == 0 else None

        def opener(original: Any) -> Any:
            def open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
                handle = original(file, mode, *args, **kwargs)
                if isinstance(mode, str) and ("r" not in mode or "+" in mode):
                    record(file, sys._getframe(1))
                return handle
            return open

        def zip_writer(original: Any) -> Any:
            def _open_zipfile_writer(name_or_buffer: Any, *args: Any, **kwargs: Any) -> Any:
                opened = original(name_or_buffer, *args, **kwargs)
                record(name_or_buffer, sys._getframe(1))
                return opened
            return _open_zipfile_writer

        def script_save(original: Any) -> Any:
            def save(module: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
                saved = original(module, f, *args, **kwargs)
                record(f, sys._getframe(1))
                return saved
            return save

        def object_save(original: Any) -> Any:
            def _save(obj: Any, *args: Any, **kwargs: Any) -> Any:
                check.saved(obj, sys._getframe(1))
                return original(obj, *args, **kwargs)
            return _save

        real_open = builtins.open
        builtins.open = io.open = functools.wraps(real_open)(opener(real_open))
        self.write_undo = [lambda: setattr(builtins, "open", real_open), lambda: setattr(io, "open", real_open)]
        for owner, name, make in [(torch.serialization, "_open_zipfile_writer", zip_writer),
                                  (torch.serialization, "_save", object_save),
                                  (getattr(torch.jit, "RecursiveScriptModule", None), "save", script_save)]:
            if name in vars(owner or object):  # private names: where one is gone, that writer is not seen
                self.write_undo.append(_patch(owner, name, make))

    def saved(self, obj: Any, frame: Any) -> None:
        """``torch.save(obj, ...)`` at ``frame``: a finding where ``obj`` holds the wrapper
        (``saved-wrapper``)."""
        what = None
        with contextlib.suppress(Exception):  # a check never breaks the program's save
            what = _saved_wrapper(obj, self.wrapped)
        if what is not None:
            self.report([_Finding(
                "saved-wrapper", *_site(frame),
                f"this save holds {what}: the original script cannot load it as it did",
                "a manual change: save unwrap(model) or unwrap(model).state_dict() (rewrite unwrap-model)")])

    def _record(self, file: Any, frame: Any) -> None:
        if len(self.writes) < KEPT_WRITES and isinstance(file, (str, bytes, os.PathLike)):
            with contextlib.suppress(OSError):  # the working directory is gone: not recorded
                path = os.path.abspath(os.fsdecode(file))
                if path not in self.writes and not path.startswith(("/dev/", "/proc/")) and not _hidden(path):
                    self.writes[path] = _site(frame)
                    self.announce(path)

    def wrote_key(self, path: str) -> str:
        return f"{self.prefix}wrote/{path}"

    def announce(self, path: str) -> None:
        """On the main process, while writes are recorded: ``path`` and its writer's line in the
        store, for another process that a read of it ended before it was written
        (``_early_read_hint``). One ``set`` per path, as many as ``KEPT_WRITES``."""
        if self.store is not None:
            file, line = self.writes[path]
            with contextlib.suppress(Exception):  # the store went away: nothing to tell
                self.store.set(self.wrote_key(path), f"{file}:{line}")

    def wrote(self, file: Any, frame: Any) -> None:
        """``atomic_write(file)`` finished its block at ``frame``: recorded as a write of ``file``
        while writes are recorded (its own temporary file is hidden, and differs per process), so a
        save the conversion meant for the main process that another process reached too (a guard
        missed at one of a helper's calls) is a ``shared-write`` at exit."""
        if self.write_undo:
            self._record(file, frame)

    def stop_recording_writes(self) -> None:
        for undo in self.write_undo:
            undo()
        self.write_undo = []

    def arm(self) -> None:
        """Install the per-step and per-pass hooks (those not in place) for a training that
        starts: what it steps and iterates is checked as the first training's was."""
        from torch.utils.data.dataloader import _BaseDataLoaderIter
        check = self
        self.armings += 1
        self.optimizers = weakref.WeakSet()
        self.steps, self.armed_at, self.lengths = 0, self.backwards, {}

        def loader_iter(original: Any) -> Any:
            def __iter__(loader: Any) -> Any:
                iterator = original(loader)
                check.pass_starts(loader, iterator)
                return iterator
            return __iter__

        def loader_next(original: Any) -> Any:
            def __next__(iterator: Any) -> Any:
                batch = original(iterator)
                check.batch(iterator, batch)
                return batch
            return __next__

        def forward(original: Any) -> Any:
            def forward(model: Any, *args: Any, **kwargs: Any) -> Any:
                output = original(model, *args, **kwargs)
                check.forward_ran(model, output)
                return output
            return forward

        def backward(original: Any) -> Any:
            def backward(*args: Any, **kwargs: Any) -> Any:
                check.backwards += 1
                check.before_backward(args[0] if args else kwargs.get("tensors"))
                result = original(*args, **kwargs)
                if check.backwards - check.armed_at >= CHECKED_STEPS and not check.optimizers and check.step_undo:
                    check.end_without_optimizer()
                return result
            return backward

        if not self.pass_undo:
            self.pass_undo = [_patch(DataLoader, "__iter__", loader_iter)]
        if not self.step_undo:
            self.step_undo = [
                _patch(_BaseDataLoaderIter, "__next__", loader_next),
                _patch(torch.autograd, "backward", backward),
                _patch(torch.nn.parallel.DistributedDataParallel, "forward", forward),
                lambda: self.forwards.clear(),
                _optimizer_module().register_optimizer_step_pre_hook(self.before_step).remove,
                self.on_step(self.after_step),
            ]

    def on_step(self, hook: Callable[[Any, Any, Any], None]) -> Callable[[], None]:
        """Run ``hook(optimizer, args, kwargs)`` after every optimizer step until the function
        returned is called. One step post hook of torch's runs them all: torch loops over its
        hooks' dict while it calls them, and a hook taken out of that dict there (a check that ends
        at the step that completes it, the repeated-order watch at its finding) broke the loop for
        the hooks after it ("OrderedDict mutated during iteration") in the program's step. That one
        hook goes when none is left, after the others (``run_after_step``), or at once outside a step."""
        if self.step_dispatch is None:
            self.step_dispatch = _optimizer_module().register_optimizer_step_post_hook(self.run_after_step)
        self.after_steps.append(hook)

        def undo() -> None:
            if hook in self.after_steps:
                self.after_steps.remove(hook)
            if not self.in_step:
                self.end_dispatch_when_idle()
        return undo

    def run_after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """The step post hook: each hook of ``on_step`` not taken away by one before it in this step."""
        self.in_step = True
        try:
            for hook in list(self.after_steps):
                if hook in self.after_steps:
                    hook(optimizer, args, kwargs)
        finally:
            self.in_step = False
        self.end_dispatch_when_idle()

    def end_dispatch_when_idle(self) -> None:
        if not self.after_steps and self.step_dispatch is not None:
            self.step_dispatch.remove()
            self.step_dispatch = None

    def epoch_set(self, site: "tuple[str, int]", epoch: Optional[int], back: bool) -> None:
        """``set_epoch(loader, epoch)`` at ``site``: a training starts over where the epoch asked
        for goes back, at that line (a loop of folds or settings around the epoch loop, a
        ``train()`` called again) or for a sampler (``back``: the same loader's epochs counted
        again by a later loop). Every process calls it alike."""
        last = self.epochs.get(site)
        if epoch is not None:
            self.epochs[site] = epoch
        if back or (epoch is not None and last is not None and epoch < last):
            self.new_training()

    def new_training(self) -> None:
        """Arm the checks again for a training that starts over, and check every optimizer again
        at its next two steps, those of an earlier training too (a reused optimizer, one rebuilt
        at a line already seen); their exchanges are named by the restart too. The per-step
        checks wait, as at any arming, for the optimizers built since the checks were last armed
        (a fold's, rebuilt at one line; a reused one built before), 50 steps at the latest."""
        self.restarts += 1
        built = list(self.optimizers)
        self.stepped = weakref.WeakKeyDictionary()
        self.arm()
        self.optimizers.update(built)

    # -- forwards

    def forward_ran(self, model: Any, output: Any) -> None:
        """A forward of a DistributedDataParallel built with ``find_unused_parameters=True`` after
        which DDP searches its output's graph for the parameters it used (with gradients, outside
        ``no_sync()``, as DDP's own ``_post_forward`` decides): keep that graph, found as DDP finds
        it, until the next backward. A forward DDP does not search (under ``torch.no_grad()``, in
        ``no_sync()``) changes nothing DDP knows, and is not kept."""
        if torch.is_grad_enabled():
            with contextlib.suppress(TypeError):
                self.ran.add(model)
        find = getattr(sys.modules.get("torch.nn.parallel.distributed"), "_find_tensors", None)  # private: gone, no check
        if find is None or not (getattr(model, "find_unused_parameters", False) and torch.is_grad_enabled()
                                and getattr(model, "require_backward_grad_sync", False)) \
                or any(getattr(model, name, False) for name in ("static_graph", "_use_python_reducer",
                                                                "_delay_all_reduce_all_params")):
            return
        count = self.forwards.get(model, (0, []))[0]
        with contextlib.suppress(TypeError):
            self.forwards[model] = (count + 1, [t.grad_fn for t in find(output) if t.grad_fn is not None])

    def before_backward(self, tensors: Any) -> None:
        """Before a backward (while the per-step checks run): a DDP model built with
        ``find_unused_parameters=True`` whose parameters this backward reaches, some of them not
        through its last forward's output (a sub-module run outside the forward, an earlier
        forward before this backward), is a finding: DDP marked those ready at the end of that
        forward and stops when the backward reaches them ("marked as ready twice")."""
        if not self.forwards:
            return
        ran = list(self.forwards.items())
        self.forwards.clear()
        reached = _leaves(_grad_fns(tensors))
        findings = []
        for model, (count, last) in ran:
            used, ignored = _leaves(last), getattr(model, "parameters_to_ignore", ())
            twice = [n for n, p in model.module.named_parameters()
                     if p.requires_grad and id(p) in reached and id(p) not in used and n not in ignored]
            if not twice:
                continue
            cls = type(model.module).__name__
            how = f"{count} forwards before this backward" if count > 1 else "one forward"
            findings.append(_Finding(
                "outside-forward", *self.wraps.get(model, (_site(), ""))[0],
                f"this backward reaches {len(twice)} parameter(s) of {cls} ({_names(twice)}) that the last "
                f"forward of its DistributedDataParallel did not use ({how}; find_unused_parameters=True): "
                f"they ran outside that forward (a sub-module or method called on the model itself, or an "
                f"earlier forward), and DDP, which took them for unused, stops: \"marked as ready twice\"",
                "a manual change: run the model once per backward, through its forward; or, for a model "
                "trained through its own methods or several forwards, model = sync_gradients(model) "
                "instead of its DistributedDataParallel wrap (rewrite wrap-model)"))
        self.report(findings)

    # -- loaders

    def loader_key(self, loader: DataLoader) -> Any:
        """A loader's identity across passes: its construction site and data set, so a loader
        rebuilt at every epoch (``for x in DataLoader(...)``) is the same loader."""
        return self.sites.get(loader, id(loader)), id(loader.dataset)

    def pass_starts(self, loader: DataLoader, iterator: Any) -> None:
        key = self.loader_key(loader)
        order = _order(loader)
        if key in self.training:
            first = self.training[key]
            if first is not None:
                if order == first:
                    self.watch_repeat(loader, iterator, key)
                else:
                    self.training[key] = None
                    self.repeats.pop(key, None)
                    if not self.repeats:
                        self.end_repeats()
            self.end_passes_when_done()
        if self.step_undo:  # the per-step checks still run: watch this pass's batches
            # The pass holds its loader until it is judged: a program may keep the iterator alone
            # (`self.it = iter(DataLoader(...))`, drawn by next()), and a loader gone before its
            # 2nd batch would never be judged. A persistent-workers loader holds its iterator
            # itself (a strong reference back would be a cycle): a weak one there.
            hold = weakref.ref(loader) if getattr(loader, "_iterator", None) is iterator else (lambda: loader)
            with contextlib.suppress(AttributeError):
                iterator._ddpify_pass = [hold, key, order, 0, 0]

    def watch_repeat(self, loader: DataLoader, iterator: Any, key: Any) -> None:
        """A pass of a training loader starts in its first training pass's order: a finding once
        it proves a training pass itself, an optimizer step between two of its batches
        (``step_in_repeat``). A pass without one is an evaluation over the training loader (in the
        epoch it trained, its order on purpose); the next pass is watched instead. Until then one
        global step hook, of no per-batch cost, reads how many batches the pass has drawn."""
        try:
            self.repeats[key] = [weakref.ref(iterator), self.sites.get(loader, _site()), 0]
        except TypeError:  # an iterator that cannot be weakly referenced: nothing to watch
            return
        if self.repeat_undo is None:
            self.repeat_undo = self.on_step(self.step_in_repeat)

    def step_in_repeat(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """An optimizer step while passes in a repeated order are watched: a pass that has drawn
        a batch since the last step that followed one of its batches is a training pass (a
        finding); one that has ended or is gone is no longer watched."""
        findings = []
        for key, record in list(self.repeats.items()):
            iterator, (file, line), before = record[0](), record[1], record[2]
            drawn = getattr(iterator, "_num_yielded", None)  # torch's count of the pass's batches
            if drawn is None:  # gone, or not torch's iterator
                del self.repeats[key]
            elif before and drawn > before:
                del self.repeats[key]
                self.training[key] = None
                findings.append(_Finding(
                    "same-order", file, line,
                    "this training loader's pass draws the same order as its first training pass "
                    "(its sampler's epoch did not change): every epoch repeats one order",
                    "call set_epoch(loader, epoch) before each pass (rewrite set-epoch)"))
            else:
                record[2] = drawn
                with contextlib.suppress(TypeError):  # no length: watched while it lives
                    if drawn >= len(iterator):  # the pass ended without a step between its batches
                        del self.repeats[key]
        if not self.repeats:
            self.end_repeats()
        self.end_passes_when_done()
        self.report(findings)

    def end_repeats(self) -> None:
        self.repeats = {}
        if self.repeat_undo is not None:
            self.repeat_undo()
            self.repeat_undo = None

    def batch(self, iterator: Any, batch: Any) -> None:
        """A batch: a backward since the pass's previous batch makes the loader a training one."""
        record = getattr(iterator, "_ddpify_pass", None)
        if record is None:
            return
        ref, key, order, batches, backwards = record
        if batches and self.backwards > backwards:
            iterator._ddpify_pass = None
            loader = ref()
            if loader is not None and key not in self.training:
                self.training_loader(loader, key, order, batch)
        else:
            record[3:] = [batches + 1, self.backwards]

    def training_loader(self, loader: DataLoader, key: Any, order: Any, batch: Any) -> None:
        sharded = _sharded(loader)
        self.training[key] = order if sharded else None
        file, line = self.sites.get(loader, _site())
        with contextlib.suppress(TypeError):  # an IterableDataset without __len__
            self.lengths[f"{file}:{line}"] = len(loader)
        if sharded:  # a distributed sampler's indices assume the same data set on every process
            self.orders.setdefault((file, line), _order_fingerprint(loader.dataset))
        if sharded is None and get_world_size() > 1:  # the data set may shard itself: compare a batch
            self.pending.append(_Finding(
                "unsharded-loader", file, line,
                "this training loader gave every process the same batch: every process trains on "
                "all the data",
                "shard the data set across processes (by get_rank() and get_world_size() in its "
                "__iter__), or give a map-style data set a DistributedSampler (rewrite shard-data)",
                agree=_batch_fingerprint(batch)))
        if sharded is False:
            self.pending.append(_Finding(
                "unsharded-loader", file, line,
                f"this training loader's {type(loader.sampler).__name__} reads the whole data set in "
                f"every process: every process trains on all the data",
                "give it a DistributedSampler (rewrite shard-data), or wrap it: "
                "loader = shard_loader(loader)", agree=_data_fingerprint(loader)))

    # -- optimizers

    def before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if optimizer in self.stepped:
            return
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        site = self.sites.get(optimizer) or _site()
        key = self.keys.get(optimizer) or self.exchange_key(site)
        record = _Stepped(site, params, f"{key}~{self.restarts}" if self.restarts else key)
        _remember(self.stepped, optimizer, record)
        synced = {id(p) for model in self.wrapped for p in model.module.parameters()}
        loose = [p for p in params if id(p) not in synced and not _synchronised_elsewhere(p)]
        if loose:
            loose = self.not_in_other_wrappers(loose)
        if loose:
            record.params = [p for p in params if all(p is not q for q in loose)]
            owners = _owners(loose, self.wrapped)
            by_class: "dict[str, List[str]]" = {}
            for p in loose:
                owner, name = owners.get(id(p), (None, f"a {tuple(p.shape)} tensor"))
                by_class.setdefault(owner, []).append(name)
            for owner, names in by_class.items():
                where = "the tensors into a module and wrap it" if owner is None else f"the {owner} in DDP"
                self.pending.append(_Finding(
                    "unwrapped-parameters", *record.site,
                    f"this optimizer steps {len(names)} parameter(s) of {owner or 'a tensor outside any module'} "
                    f"({_names(names)}) that no DistributedDataParallel or FSDP wraps: each process trains its "
                    f"own copy; they diverge",
                    f"put {where} before this optimizer is built: model = DistributedDataParallel("
                    "model, device_ids=device_ids(model)) (rewrite wrap-model), or freeze them "
                    "with requires_grad_(False)"))
        bypassed = self.bypassed(record.params)
        if bypassed:
            record.params = [p for p in record.params if id(p) not in bypassed]
        self.made_late()

    def made_late(self) -> None:
        """Parameters a wrapped module holds that its DistributedDataParallel does not: made after
        the wrap (a layer its forward makes the first time it runs, `if self.fc is None: self.fc =
        nn.Linear(...)`). DDP neither broadcast them nor averages their gradients, and an optimizer
        built before the first forward does not step them: they differ between the processes, and so
        does what is computed over all the parameters (a clipped gradient norm). A finding at the wrap
        line (``late-parameters``), once per model."""
        ddp = torch.nn.parallel.DistributedDataParallel
        for model in [m for m in self.wrapped if isinstance(m, ddp) and m not in self.late]:
            held = {id(p) for p in getattr(model, "_module_parameters", ())}
            ignored = getattr(model, "parameters_to_ignore", set())
            names = [n for n, p in model.module.named_parameters() if id(p) not in held and n not in ignored]
            if not names:
                continue
            self.late.add(model)
            cls = type(model.module).__name__
            self.pending.append(_Finding(
                "late-parameters", *self.wraps.get(model, (_site(), ""))[0],
                f"{len(names)} parameter(s) of {cls} ({_names(names)}) were made after this DistributedDataParallel "
                f"wrapped it (a layer made in the first forward): DDP neither broadcast them nor averages their "
                f"gradients, so each process trains its own copy, and what is computed over all the parameters "
                f"(a clipped gradient norm) differs between the processes",
                "a manual change: make them in __init__, or run one forward pass before the wrap and before the "
                "optimizer is built"))

    def bypassed(self, params: List[torch.Tensor]) -> "set[int]":
        """Of ``params`` (with a gradient, about to be stepped), the ids of those a
        DistributedDataParallel wraps whose forward never ran with gradients while the checks
        watched, that no wrapper whose forward ran holds, and whose gradient ``average_gradients``
        did not average (a meta-gradient set by hand): their gradients came from the bare module
        (an object that kept it before the wrap, ``trainer.model``; ``model.module(x)``), so DDP
        averaged none of them. A finding at the wrap line (``bypassed-wrapper``); those
        parameters are left out of the 2nd step's comparison (their divergence is this finding)."""
        ran = {id(p) for model in self.ran for p in model.module.parameters()}
        averaged = {id(p) for p in params if getattr(p.grad, "_ddpify_averaged", False)}  # average_gradients'
        wanted = {id(p) for p in params} - ran - averaged
        found: "set[int]" = set()
        ddp = torch.nn.parallel.DistributedDataParallel  # whose forward the checks watch
        for model in [m for m in self.wrapped if isinstance(m, ddp)] if wanted else ():
            names = [n for n, p in model.module.named_parameters() if id(p) in wanted and id(p) not in found]
            if not names:
                continue
            found |= {id(p) for p in model.module.parameters()} & wanted
            cls = type(model.module).__name__
            self.pending.append(_Finding(
                "bypassed-wrapper", *self.wraps.get(model, (_site(), ""))[0],
                f"this optimizer steps {len(names)} parameter(s) of {cls} ({_names(names)}) whose gradients "
                f"came from the bare module: the forward of its DistributedDataParallel never ran with "
                f"gradients, so DDP averaged none of them and each process trains its own copy (an object "
                f"that kept the model before this wrap, a trainer's self.model, or a call of model.module)",
                "a manual change: run the model through the wrapper (hand it to that object after the wrap, "
                "or build the object after it), or model = sync_gradients(model) instead of this wrap "
                "(rewrite wrap-model)"))
        return found

    def not_in_other_wrappers(self, loose: List[torch.Tensor]) -> List[torch.Tensor]:
        """Of ``loose``, those no wrapper made before the checks started holds (DDP, FSDP1)."""
        fsdp = getattr(sys.modules.get("torch.distributed.fsdp"), "FullyShardedDataParallel", ())
        kinds = (torch.nn.parallel.DistributedDataParallel, fsdp) if fsdp else torch.nn.parallel.DistributedDataParallel
        held = {id(p) for o in gc.get_objects() if issubclass(type(o), kinds) for p in o.parameters()}
        return [p for p in loose if id(p) not in held]

    def after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        record = self.stepped.get(optimizer)
        if record is None:
            return
        record.count += 1
        self.steps += 1
        if record.count == 2:
            record.settings = _settings(optimizer)
            self.compare(record)
        waiting = [o for o in self.optimizers if o not in self.stepped]  # built, not stepped yet
        if self.step_undo and ((not waiting and all(r.count >= 2 for r in self.stepped.values()))
                               or self.steps >= CHECKED_STEPS):
            self.end_steps()

    def exchange_key(self, site: "tuple[str, int]") -> str:
        """The name of an optimizer's exchange: its site's file name and line, and how many were
        given that name before it (the same on every process that builds the same optimizers,
        whichever of them step). The file's name, not its path: the processes of one job may run
        the program from different folders (each node's ``ddpify run`` converts into a workspace
        of its own, ``/tmp/ddpify-run-x1/train.py`` -> ``train.py:98#0``), and a path would give
        each process exchanges of its own, none complete: a false ``missing-step`` on every
        process after a 30 s wait at the 2nd step."""
        self.built[site] = self.built.get(site, -1) + 1
        name = f"{os.path.basename(site[0])}:{site[1]}"
        number = self.named[name] = self.named.get(name, -1) + 1
        return f"{name}#{number}"

    def exchange(self, key: str, payload: Any) -> "tuple[List[Any], List[int]]":
        """Every process's ``payload`` for ``key``, through the process group's store, not a
        collective: this process sets its own, then waits at most ``self.wait`` seconds for the
        others'. Returns the payloads there (rank order) and the ranks whose payload is not (a
        process that never steps this optimizer twice cannot make the others wait longer).
        Without a store (torch's private accessor gone), this process's payload alone."""
        import pickle
        import time
        world, rank = get_world_size(), get_rank()
        store = _default_store() if world > 1 else None
        if store is None:
            return [payload], []
        keys = [f"{self.prefix}{key}/{r}" for r in range(world)]
        store.set(keys[rank], pickle.dumps(payload))
        deadline, pause = time.monotonic() + self.wait, 0.001
        while not store.check(keys) and time.monotonic() < deadline:  # store.wait would warn in C++
            time.sleep(pause)
            pause = min(2 * pause, 0.05)
        here = [r for r in range(world) if store.check([keys[r]])]
        parts = [payload if r == rank else pickle.loads(store.get(keys[r])) for r in here]
        return parts, [r for r in range(world) if r not in here]

    def compare(self, record: _Stepped) -> None:
        """After an optimizer's 2nd step: exchange every process's findings so far and the
        checksums of the parameters it steps (``exchange``); report the findings, any parameter
        whose checksum differs between processes, and the processes that did not reach this
        step in time."""
        params = [p for p in record.params if not _held_in_parts(p)]
        sums = torch.stack([_checksum(p).cpu() for p in params]).tolist() if params else []
        parts, missing = self.exchange(record.key, (self.pending, sums, self.lengths, record.settings))
        parts = [part for part in parts if len(part[1]) == len(sums)]  # the same parameters
        self.pending = []
        findings = _merge([part[0] for part in parts])
        if missing:
            file, line = _site()
            who = ", ".join(map(str, missing))
            findings.append(_Finding(
                "missing-step", file, line,
                f"process(es) {who} did not reach this optimizer's 2nd step within {self.wait:g} s of "
                f"process {get_rank()}: it steps on some processes only (under a rank test, or a "
                f"condition that differs between processes), so their parameters differ; they were "
                f"not compared", "a manual change: step the optimizer on every process at the same "
                "steps (a condition that may differ between processes goes through agree_on(flag))"))
        for where in set.intersection(*(set(part[2]) for part in parts)):
            counts = [part[2][where] for part in parts]
            if len(set(counts)) > 1:
                file, _, line = where.rpartition(":")
                findings.append(_Finding(
                    "uneven-batches", file, int(line),
                    f"this training loader gives the processes {', '.join(map(str, counts))} batches "
                    f"per pass: at the end of a pass the processes with more wait for the others "
                    f"forever (a hang)",
                    "give every process as many batches: a DistributedSampler pads to equal shards "
                    "(rewrite shard-data); or drop_last=True on equal-sized shards"))
        findings += _differing_settings(record, [part[3] if len(part) > 3 else None for part in parts])
        differ = [p for i, p in enumerate(params) if len({part[1][i] for part in parts}) > 1]
        if differ:
            owners = _owners(differ, self.wrapped)
            names = [owners.get(id(p), ("", f"a {tuple(p.shape)} tensor"))[1] for p in differ]
            findings.append(_Finding(
                "diverged-parameters", *record.site,
                f"after this optimizer's 2nd step {len(differ)} of {len(params)} parameters differ "
                f"between processes ({_names(names)}): the processes now train different models",
                "a manual change: change the weights only by the optimizer's step on the gradients "
                "DDP averages, or alike on every process (noise from a torch.Generator seeded the "
                "same everywhere, no update that depends on the rank)"))
        here = [r for r in range(get_world_size()) if r not in missing]
        self.report(findings, speaker=get_rank() == here[0])

    # -- ending

    def end_without_optimizer(self) -> None:
        """``CHECKED_STEPS`` backward passes and no torch optimizer was built (the update is
        written by hand): exchange what is pending, as an optimizer's 2nd step does, and end the
        per-step checks (a training loader every process reads whole is still said)."""
        parts, missing = self.exchange(f"backward#{self.armings}", (self.pending, [], self.lengths))
        agreed = [] if missing else _merge([part[0] for part in parts])
        if not missing:  # else end_steps says this process's own
            self.pending = []
        self.end_steps()
        self.report(agreed)

    def end_steps(self) -> None:
        for undo in self.step_undo:
            undo()
        self.step_undo = []
        pending, self.pending = _local(self.pending), []
        self.end_passes_when_done()
        self.report(pending)

    def end_passes_when_done(self) -> None:
        """Once the per-step checks ended and every training loader was judged (a new order at a
        later pass, or a training pass found repeating its first one's): the per-pass hooks go
        too, and the checks are dormant until an optimizer is built at a new line."""
        if not self.step_undo and all(order is None for order in self.training.values()):
            for undo in self.pass_undo:
                undo()
            self.pass_undo = []

    def remove(self) -> None:
        """Take every hook away now, the construction hooks too: nothing arms the checks again."""
        self.training = {}
        self.end_repeats()
        if self.step_undo:
            self.end_steps()
        self.end_passes_when_done()
        for undo in self.build_undo:
            undo()
        self.build_undo = []
        self.after_steps = []
        self.end_dispatch_when_idle()
        self.stop_recording_writes()
        if _STATE.self_check is self:
            _STATE.self_check = None

    def at_exit(self) -> None:
        """The program ends (``_check_at_exit``): the hooks go; what is pending (the program ended
        within a training's first steps) is this process's own (no exchange), less what only all
        processes together can confirm."""
        pending, self.pending = _local(self.pending), []
        self.remove()
        self.report(pending)

    def compare_models(self) -> None:
        """At the program's end: one exchange of a checksum per parameter of each live
        DistributedDataParallel model (by its wrap line) and of the files each process opened for
        writing (``record_writes``) and of the training data sets' orders (``_order_fingerprint``),
        then one finding per model whose parameters differ between the processes that took part,
        one per training loader whose data set lists its items in another order on another
        process (``_orders_differ``), and one per file that several processes of one host wrote
        (``_shared_writes``). A process that is not there in time is no finding; nor is a
        divergence the run already reported."""
        import socket
        self.stop_recording_writes()
        said = any(f.check in ("diverged-parameters", "missing-step", "bypassed-wrapper") for f in self.reported)
        models = {}
        for model, (site, name) in list(self.wraps.items()):
            ignored = getattr(model, "parameters_to_ignore", ())
            models[name] = (site, [(n, p) for n, p in model.module.named_parameters()
                                   if n not in ignored and not _synchronised_elsewhere(p)])
        sums = {name: [int(_checksum(p)) for _, p in params] for name, (_, params) in models.items()}
        try:
            parts, missing = self.exchange("exit", (said, sums, socket.gethostname(), self.writes, self.orders))
        except RuntimeError:  # the store went away (its host process ended first): nothing to compare
            return
        here = [r for r in range(get_world_size()) if r not in missing]
        findings = [] if any(part[0] for part in parts) else self.models_differ(models, parts)
        findings += _orders_differ(parts)
        findings += _shared_writes(here, parts)
        self.report(findings, speaker=get_rank() == here[0])

    def models_differ(self, models: dict, parts: List[Any]) -> List[_Finding]:
        findings = []
        for name, (site, params) in models.items():
            if not all(len(part[1].get(name, ())) == len(params) for part in parts):
                continue  # a model another process does not have (or not alike): nothing to compare
            differ = [n for i, (n, _) in enumerate(params) if len({part[1][name][i] for part in parts}) > 1]
            if differ:
                findings.append(_Finding(
                    "diverged-at-exit", *site,
                    f"at the program's end {len(differ)} of {len(params)} parameters of this model "
                    f"differ between processes ({_names(differ)}): the replicas ended different, so "
                    f"what each process evaluates or saves last is its own model",
                    "a manual change: a choice made from a per-process value (a best-weights copy "
                    "chosen by the loss of a sharded validation loader) differs between processes: "
                    "all-reduce the value first (reduce_sum), or evaluate on every process's full "
                    "set; or a load or update on some processes only"))
        return findings

    def report(self, findings: List[_Finding], speaker: Optional[bool] = None, raising: bool = True) -> None:
        """The ``speaker`` (by default the main process; the first process that knows, where the
        main process missed an exchange) prints the new findings as one block and writes every
        finding so far to ``DDPIFY_VERIFY_JSON``; under strict every process that has them raises
        (unless not ``raising``: in an exception hook, where the program ends anyway)."""
        # agreed on by now: two loaders built at one line over two data sets are one line to read
        agreed = _merge([[replace(f, agree=None) for f in _merge([findings])]])
        findings = [f for f in agreed if f not in self.reported]
        if not findings:
            return
        self.reported.extend(findings)
        text = "\n".join([VERIFY_HEADER.format(len(findings)), *map(str, findings)])
        if is_main_process() if speaker is None else speaker:
            _BUILTIN_PRINT(text, file=sys.stderr, flush=True)
            path = os.environ.get("DDPIFY_VERIFY_JSON")
            if path:
                import json
                with atomic_write(path) as tmp:
                    with open(tmp, "w") as out:
                        json.dump([finding.as_json() for finding in self.reported], out, indent=1)
        if self.strict and raising:
            self.remove()
            raise SelfCheckError(text, findings)


def _saved_wrapper(obj: Any, wrapped: Any, depth: int = 3) -> Optional[str]:
    """What of a DDP wrapper ``obj`` holds, for ``torch.save`` (``saved-wrapper``): a wrapper
    pickled whole, or a wrapper's own state dict (every key is ``module.`` and the rest names a
    tensor of its module's state, the same memory), in ``obj`` or in the dicts, lists and tuples it holds (``depth``
    levels); None where it holds neither."""
    if isinstance(obj, torch.nn.parallel.DistributedDataParallel):
        return "the DistributedDataParallel wrapper, pickled whole"
    if isinstance(obj, Mapping):
        keys = list(obj.keys())
        if keys and all(isinstance(key, str) and key.startswith("module.") for key in keys):
            for model in list(wrapped):
                own = model.module.state_dict()
                if all(_same_tensor(obj[key], own.get(key[len("module."):])) for key in keys):
                    return "a wrapper's state dict (keys that start with 'module.')"
        inside = list(obj.values())
    else:
        inside = list(obj) if isinstance(obj, (list, tuple)) else []
    if depth > 0:
        for item in inside:
            what = _saved_wrapper(item, wrapped, depth - 1)
            if what is not None:
                return what
    return None


def _same_tensor(saved: Any, own: Any) -> bool:
    """Is ``saved`` a view of the same memory as ``own``, a tensor of a wrapped model's state?"""
    return isinstance(saved, torch.Tensor) and isinstance(own, torch.Tensor) and saved.data_ptr() == own.data_ptr()


ORDER_ITEMS = (str, bytes, int, float, bool, type(None))  # items whose repr is the same on every process


def _order_fingerprint(dataset: Any) -> "dict[str, str]":
    """Digests of what a map-style data set holds per sample or per class, by attribute: each list,
    tuple or numpy array of as many items as the data set (file names) and each dict (a class
    numbering) whose items are plain values (``ORDER_ITEMS``, or tuples of them) with strings among
    them (str and bytes hashes are salted per process: a set of them lists in another order on each;
    numbers alone, such as random stand-in data, are left out), so that equal contents digest alike
    on every process. A ``Subset``'s own data set is read; a data set it cannot read is none."""
    while isinstance(dataset, torch.utils.data.Subset):
        dataset = dataset.dataset
    try:
        size, fields = len(dataset), dict(vars(dataset))
    except Exception:  # no __len__ (an IterableDataset), no __dict__, or a length it cannot tell
        return {}
    found = {}
    for name, value in fields.items():
        if isinstance(value, dict):
            items: Any = list(value.items())
        elif isinstance(value, (list, tuple)) or type(value).__module__ == "numpy" and hasattr(value, "tolist"):
            items = value.tolist() if hasattr(value, "tolist") else list(value)
            if not isinstance(items, list) or len(items) != size:
                continue
        else:
            continue
        if items and all(map(_plain, items)) and any(map(_stringy, items)):
            digest = hashlib.sha256()
            for start in range(0, len(items), 4096):  # a million file names: no 100 MB string at once
                digest.update(repr(items[start:start + 4096]).encode())
            found[name] = digest.hexdigest()
    return found


def _plain(item: Any) -> bool:
    """A value whose repr is the same on every process: ``ORDER_ITEMS``, or a tuple or list of them."""
    return isinstance(item, ORDER_ITEMS) or isinstance(item, (tuple, list)) and \
        all(isinstance(i, ORDER_ITEMS) for i in item)


def _stringy(item: Any) -> bool:
    """A string, or a tuple or list with one (a file's path and its label)."""
    return isinstance(item, (str, bytes)) or isinstance(item, (tuple, list)) and \
        any(isinstance(i, (str, bytes)) for i in item)


def _orders_differ(parts: List[Any]) -> List[_Finding]:
    """One ``data-order`` finding per training loader (by its site, in every process's exit
    payload, ``parts``) whose data set holds an attribute that digests differently on another
    process (``_order_fingerprint``): the same items in another order, or other items."""
    orders = [part[4] if len(part) > 4 else {} for part in parts]
    findings = []
    for site, mine in orders[0].items():
        differ = [name for name, digest in mine.items()
                  if any(site in other and other[site].get(name, digest) != digest for other in orders[1:])]
        if differ:
            findings.append(_Finding(
                "data-order", *site,
                f"this training loader's data set holds {_names(differ)} differently on each process: a "
                f"distributed sampler's index i names another sample on each process, so the shards overlap "
                f"and miss samples (a class numbering gives each process other labels); a list made from a "
                f"set of strings does this (str hashes are salted per process)",
                "build it in a fixed order: sorted(...), or dict.fromkeys(x) in place of set(x) (rewrite "
                "shard-data does so where it sees the set)"))
    return findings


def _shared_writes(ranks: List[int], parts: List[Any]) -> List[_Finding]:
    """One ``shared-write`` finding per file that more than one process of one host opened for
    writing (``parts``: the exit payloads of ``ranks``, each ending with its host and its
    written paths), at the first writer's line; at most ``SHOWN_WRITES``, the last saying how many
    more. Separate hosts have separate disks: not compared."""
    by_host: "dict[str, List[int]]" = {}
    for rank, part in zip(ranks, parts):
        by_host.setdefault(part[2], []).append(rank)
    shared = []  # (path, its first writer's site, the ranks that wrote it, the ranks on its host)
    for host, on_host in by_host.items():
        writers: "dict[str, List[int]]" = {}
        for rank in on_host:
            for path in parts[ranks.index(rank)][3]:
                writers.setdefault(path, []).append(rank)
        shared += [(path, parts[ranks.index(who[0])][3][path], who, on_host)
                   for path, who in writers.items() if len(who) > 1]
    findings = _own_copies(ranks, parts, by_host)
    for path, site, who, on_host in shared[:SHOWN_WRITES]:
        writers = "every process" if who == on_host else f"processes {', '.join(map(str, who))}"
        findings.append(_Finding(
            "shared-write", *site,
            f"{writers}{' of this host' if len(by_host) > 1 else ''} wrote {_shown_path(path)}: each "
            f"overwrites the others' file (the last one wins, or it ends torn)",
            "a manual change: guard the write with is_main_process() (or give each process its own path, "
            "by get_rank())"))
    if len(shared) > SHOWN_WRITES:
        last = findings[-1]
        more = len(shared) - SHOWN_WRITES
        findings[-1] = _Finding(last.check, last.file, last.line, last.message,
                                f"{last.fix}; and {more} more file(s) written alike")
    return findings


def _own_copies(ranks: List[int], parts: List[Any], by_host: "dict[str, List[int]]") -> List[_Finding]:
    """One ``own-copy`` finding per file that another process of a host wrote under a name of its own
    where the host's first process wrote it under another, the two names alike but for numbers
    (``run_#1.log`` and ``run_#2.log``: a name each process chose by itself, by probing the disk for a
    free one or from its clock), at the other process's line: every process writes a copy of what
    one should. Only where each of the two wrote one file of that shape in that folder (a process's
    share of many files, ``img_2.png`` and ``img_3.png``, is its own), and not where the numbers
    that differ are the processes' ranks (``log_rank0.txt``, ``log_rank1.txt``: named by rank
    on purpose). Round 29's kernelkd (decision 0251): its logger named the run by the lock files
    already there, and the second process, a moment late, found the first one's and took the next
    number: each process appended to a log of its own, and no path was written twice."""
    def shape(path: str) -> str:
        return re.sub(r"\d+", "#", path)

    findings = []
    for on_host in by_host.values():
        first = parts[ranks.index(on_host[0])][3]
        first_shapes: "dict[str, List[str]]" = {}
        for path in first:
            first_shapes.setdefault(shape(path), []).append(path)
        for rank in on_host[1:]:
            written = parts[ranks.index(rank)][3]
            shapes: "dict[str, List[str]]" = {}
            for path in written:
                shapes.setdefault(shape(path), []).append(path)
            for key, paths in shapes.items():
                mains = first_shapes.get(key, [])
                if len(paths) != 1 or len(mains) != 1 or paths[0] == mains[0]:
                    continue
                differ = [(a, b) for a, b in zip(re.findall(r"\d+", mains[0]), re.findall(r"\d+", paths[0])) if a != b]
                if all(int(a) == on_host[0] and int(b) == rank or int(a) == 0 and int(b) == on_host.index(rank)
                       for a, b in differ):
                    continue  # named by rank (or local rank) on purpose
                findings.append(_Finding(
                    "own-copy", *written[paths[0]],
                    f"process {rank} wrote {_shown_path(paths[0])} where the main process wrote "
                    f"{_shown_path(mains[0])}: one file under a name each process chose by itself (a number "
                    f"probed on the disk, a clock), so every process writes its own copy",
                    "a manual change: choose the name on the main process and hand it to the others "
                    "(from_main_process(lambda: name)), or guard the write with is_main_process()"))
                if len(findings) >= SHOWN_WRITES:
                    return findings
    return findings


def _local(findings: List[_Finding]) -> List[_Finding]:
    """The findings one process may report alone: with more than one process, not those that
    need every process's agreement."""
    return [f for f in findings if f.agree is None or get_world_size() == 1]


def _merge(per_process: List[List[_Finding]]) -> List[_Finding]:
    """Every process's findings once, in the main process's order; a finding with ``agree`` only
    where every process has it with the same value."""
    merged: List[_Finding] = []
    for findings in per_process:
        for finding in findings:
            if finding.agree is not None and not all(finding in other for other in per_process):
                continue
            if finding not in merged:
                merged.append(finding)
    return merged


def _default_store() -> Any:
    """The process group's key-value store (torch's private ``_get_default_store``), or None."""
    try:
        return dist.distributed_c10d._get_default_store()
    except (AttributeError, ValueError, RuntimeError):
        return None


# Hangs


@contextlib.contextmanager
def _waiting(what: str) -> Iterator[None]:
    """Mark a collective of the runtime's (``barrier()``...) for the hang watchdog."""
    if _STATE.watchdog is None:
        yield
        return
    import time
    _STATE.waiting = (what, _site(), time.monotonic())
    try:
        yield
    finally:
        _STATE.waiting = None


class _Watchdog:
    """A thread that wakes every ``poll`` seconds. When this process has waited in one of the
    runtime's collectives for nearly the collective timeout, it raises a flag in the process
    group's store; every process that sees the flag prints where its main thread is, user frames
    first, as ``ddpify hang: rank R ...`` lines on stderr, before the timeout ends the job.

    A hang it can prove is named early, after ``early`` seconds (``HANG_EARLY_S``, at most a quarter
    of the timeout), not near the timeout: each process says in the store where it has waited that
    long (``ddpify/at/R``: the collective and the user's line) and when it has left the program (its
    main thread ended, or its exit hooks run); a process that waits sees the others' (``proven``).
    Proven: another process has left the program (the collective waits for every process, and it
    never comes), or every other process waits that long in a collective too and one of them at
    another line (each waits for the others in a collective they never reach: a ``barrier()`` that
    only the main process runs, the others in DistributedDataParallel's first broadcast). Not
    proven: another process runs the program's code (it may come: a download on the main process
    while the others wait in ``main_process_first()``); then only the report near the timeout.
    A proof is taken after two polls in a row that see it (what another process said may be one
    poll old).

    The thread ends at exit (``stop``, an exit hook), before the interpreter finalizes: a daemon
    thread still inside one of the store's C++ calls then is ended mid-call, which aborts the
    process ("terminate called without an active exception", SIGABRT: a run that had succeeded
    exits -6, about 1 launch in 10 on a loaded machine, every other one with ``poll`` near 0)."""

    def __init__(self, timeout: float, store: Any) -> None:
        import threading
        self.poll = min(10.0, max(0.5, timeout / 30))
        self.report_after = timeout - 3 * self.poll
        self.early = min(HANG_EARLY_S, timeout / 4)
        self.store = store
        self.rank, self.world = get_rank(), get_world_size()
        self.said = "running"  # what this process last said of itself in the store (nothing: running)
        self.suspected: Optional[str] = None  # the proof the last poll saw
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ddpify-hang-watchdog", daemon=True)

    @classmethod
    def start(cls, timeout: float) -> Any:
        store = _default_store()
        if store is None:
            return None
        watchdog = cls(timeout, store)
        watchdog.thread.start()
        atexit.register(watchdog.stop)
        return watchdog

    def stop(self) -> None:
        """Say that this process has left the program (unless an exception ended it: the launcher
        stops the others then), wake the thread and wait for it to end (a store call in flight
        finishes first)."""
        if not _STATE.failed:
            with contextlib.suppress(Exception):  # the store went away: the job is ending
                self.say("left")
        self.stopped.set()
        self.thread.join(timeout=self.poll + 5.0)

    def say(self, state: str) -> None:
        """Put this process's ``state`` in the store, where it changed."""
        if state != self.said:
            self.store.set(f"ddpify/at/{self.rank}", state)
            self.said = state

    def run(self) -> None:
        import threading
        import time
        try:
            while not self.stopped.wait(self.poll):
                waiting = _STATE.waiting
                waited = time.monotonic() - waiting[2] if waiting is not None else 0.0
                if not threading.main_thread().is_alive():  # the program ended; a thread of its own keeps the process
                    self.say("left")
                elif waited > self.early:  # (the file's name: the processes may run from different folders)
                    self.say(f"{waiting[0]} at {os.path.basename(waiting[1][0])}:{waiting[1][1]}")
                elif self.said != "left":
                    self.say("running")
                proof = self.proven(waiting, waited) if waited > self.early else None
                confirmed, self.suspected = proof is not None and proof == self.suspected, proof
                if confirmed or waiting is not None and waited > self.report_after:
                    self.store.set("ddpify/hang", str(self.rank))
                if self.store.check(["ddpify/hang"]):
                    sys.stderr.write((proof + "\n" if confirmed else "") + _stack_report(self.rank, _STATE.waiting))
                    sys.stderr.flush()
                    return
        except Exception:  # the store went away: the job is ending
            return

    def proven(self, waiting: Any, waited: float) -> Optional[str]:
        """Why the runtime collective this process has waited in for ``waited`` seconds never
        ends, from what the other processes said (``_Watchdog``); None where it may still end."""
        others = {}
        for rank in range(self.world):
            key = f"ddpify/at/{rank}"
            if rank != self.rank:
                others[rank] = self.store.get(key).decode() if self.store.check([key]) else "running"
        what, (file, line), _ = waiting
        head = f"{HANG_PREFIX} rank {self.rank} waits in {what} at {file}:{line} ({waited:.0f} s)"
        left = [rank for rank, state in others.items() if state == "left"]
        if left:
            who = f"rank {left[0]} has" if len(left) == 1 else f"ranks {', '.join(map(str, left))} have"
            return (f"{head}, and {who} left the program: a collective waits for every process, so it never "
                    f"ends (a collective that some processes never reach: under an `if` whose test differs "
                    f"between them, or after a `break`/`return` taken by some)")
        mine = f"{what} at {os.path.basename(file)}:{line}"
        if others and "running" not in others.values() and any(state != mine for state in others.values()):
            elsewhere = "; ".join(f"rank {rank} in {state}" for rank, state in others.items())
            return (f"{head}, and every other process waits in another collective ({elsewhere}): each waits "
                    f"for the others in a collective they never reach (one that runs on some processes only: "
                    f"under `if is_main_process():` or in a function only the main process calls)")
        return None


def _stack_report(rank: int, waiting: Any) -> str:
    """Where the main thread is: one summary line, then its frames, the user's innermost first,
    then the libraries', each ``ddpify hang: rank R   file:line in function``."""
    import threading
    import time
    frame = sys._current_frames().get(threading.main_thread().ident)
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    user = [f for f in frames if not _is_library(f.f_code.co_filename)]
    library = [f for f in frames if _is_library(f.f_code.co_filename)]
    if waiting is not None:
        what, (file, line), since = waiting
        head = f"{HANG_PREFIX} rank {rank} waits in {what} at {file}:{line} ({time.monotonic() - since:.0f} s)"
    elif user:
        head = f"{HANG_PREFIX} rank {rank} is at {_shown_path(user[0].f_code.co_filename)}:{user[0].f_lineno}"
    else:
        head = f"{HANG_PREFIX} rank {rank} is outside the script's code"
    lines = [head]
    for f in user:
        lines.append(f"{HANG_PREFIX} rank {rank}   {_shown_path(f.f_code.co_filename)}:{f.f_lineno} in {f.f_code.co_name}")
    for f in library:
        lines.append(f"{HANG_PREFIX} rank {rank}   (library) {f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}")
    return "\n".join(lines) + "\n"
