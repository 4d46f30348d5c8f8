"""The test probe: records what a (converted) training script really does, without editing it.

Python imports ``sitecustomize`` at start-up in every process (torchrun's launcher and workers
included) when this folder is first on ``PYTHONPATH``. The probe never imports torch itself: a
``sys.meta_path`` finder waits for ``import torch`` to finish (torch's ``__init__`` imports
``torch.utils.data`` and ``torch.nn.parallel``), then patches. Two switches:

``DDPIFY_PROBE_DIR=DIR`` (the e2e and distributed suites; ``tests/support/records.py`` reads it):
one JSON-lines file per process, ``DIR/r<RANK>-p<pid>.jsonl`` (RANK from the environment, 0
without a launcher), first event ``start``, last ``exit``. ``rank`` in every event is the process
group's rank once it exists, the environment's before. Events:

* ``start`` (torch imported): argv, cwd, the launcher's WORLD_SIZE and LOCAL_RANK.
* ``init`` (``torch.distributed.init_process_group``): world size, backend and the launch
  variables the process was given.
* ``pass`` (``DataLoader.__iter__``): loaders are numbered in creation order (the same number
  on every rank, since every rank runs the same code); the sampler behind a pass (type, shuffle,
  world size, drop_last, batch size, indices a full pass yields) and the data set.
* ``fetch`` (``_MapDatasetFetcher.fetch``): the indices of every batch, tagged with the loader
  and pass of the iterator that owns the fetcher (num_workers=0 loaders only). A loader over an
  ``IterableDataset`` has no indices: each batch its iterator hands the main process (workers or
  not) is logged so, with a digest of each item in place of its index (``_item_digests``).
* ``save`` (``torch.save``): path as given (the target's, for the temporary file of ``atomic_write``), absolute path, the keys of the saved mapping (and
  of nested mappings), and whether any of their values is sharded (a DTensor: FSDP2's
  ``state_dict()``, not a plain checkpoint).
* ``ddp`` (``DistributedDataParallel.__init__``): model number, module class,
  ``find_unused_parameters``, ``device_ids``, the parameters' devices,
  ``ddpify_runtime.local_rank()``/``local_device()`` and the module classes inside.
* ``step`` (a global optimizer step pre-hook): gradient all-reduce rounds and buckets, and
  ``torch.distributed.all_reduce`` calls (the comm hook's included), since the previous step.
* ``params`` (at exit, per wrapped module): a sha256 of its parameters (names, dtypes, bytes).
* ``optimizer`` (after each optimizer's 2nd step, and at exit): optimizers are numbered in
  creation order; a sha256 of the parameters it trains (as ``params``; None when any is a
  DTensor, whose full value only a collective gives), with ``when`` = ``"step2"`` or ``"exit"``
  and the steps taken. A model an optimizer trains bare on each rank's shard, or trains before
  DDP wraps it (DDP then copies rank 0's weights over the others), shows here.
* ``fsdp`` (``fully_shard``, FSDP2, once ``torch.distributed.fsdp`` is imported): the module's
  class. At exit every root of the sharded modules (one that no other sharded module contains)
  gets a ``params`` event too, numbered after the DDP-wrapped ones: the hash of its FULL
  parameters (gathered from the shards: a collective, run by every rank at exit, before the
  runtime destroys the process group), ``full`` and ``local`` (this rank's shard, once resharded:
  FSDP2 keeps a root gathered after a forward that no backward follows) element counts.
* ``exit``: rounds and buckets left since the last step.

A batch of programs in one launch (``tests/support/batch_job.py``) imports torch, and so installs
the patches, once; each program's process, forked from it, calls ``restart(DIR, argv)`` to record
into its own ``DIR`` as a fresh process would.

With ``DDPIFY_PROBE_COUNT=1`` every DDP also gets a comm hook that counts gradient buckets and
rounds (a round is one backward's buckets, closed by ``bucket.is_last()``), then runs torch's
own ``allreduce_hook``: DDP's all-reduce goes through the C++ reducer, so a Python wrapper of
``all_reduce`` alone would not see it.

``DDPIFY_BENCH_PROBE=DIR`` (``bench/run.py``, axis 5; torchrun workers only, LOCAL_RANK set):
timing, so nothing is written until exit. A global optimizer step post-hook records
``perf_counter()`` and ``process_time()`` after every step; the collectives in the
``torch.distributed`` namespace (the names scripts, ``ddpify_runtime`` and DDP's Python side
look up at call time; not c10d's module globals, so nested calls are not counted twice) are
counted, each tagged with the number of steps done. ``DDPIFY_BENCH_PROBE_HOOK=1`` (the counting
run, not the timing runs: a Python comm hook is slower than DDP's C++ all-reduce) adds the
bucket-counting comm hook; its own ``all_reduce`` is counted as its bucket, once. At exit each
worker writes ``DIR/rank<RANK>.json``.
"""

import atexit
import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import re
import sys
import time

_DIR = os.environ.get("DDPIFY_PROBE_DIR")
ATOMIC_TMP = re.compile(r"\.(.+)\.\d+\.[0-9a-f]{8}\.tmp")
_BENCH_DIR = os.environ.get("DDPIFY_BENCH_PROBE")
_STATE = {"file": None, "rank": None, "rounds": 0, "buckets": 0, "all_reduce": 0, "loaders": 0,
          "in_hook": False}
_WRAPPED = []  # (number, module) of every DistributedDataParallel built in this process
_SHARDED = []  # every module fully_shard was called on, in order
_OPTIMIZERS = []  # every torch.optim.Optimizer built in this process, in order
_BENCH = {"steps": [], "cpu": [], "events": []}  # perf_counter, process_time, (collective, steps)
COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "broadcast",
               "broadcast_object_list", "_broadcast_coalesced", "barrier", "monitored_barrier", "reduce",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather",
               "gather_object", "scatter", "scatter_object_list", "send", "recv", "isend", "irecv")


# --------------------------------------------------------------------------- shared patches

def _after_ddp_init(callback):
    """Call ``callback(ddp)`` after every ``DistributedDataParallel.__init__``."""
    from torch.nn.parallel import DistributedDataParallel

    init = DistributedDataParallel.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        callback(self)

    DistributedDataParallel.__init__ = __init__


def _count_buckets(ddp, count):
    """A comm hook on ``ddp``: ``count(bucket)``, then DDP's default all-reduce."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    def hook(state, bucket):
        count(bucket)
        _STATE["in_hook"] = True
        try:
            return allreduce_hook(state, bucket)
        finally:
            _STATE["in_hook"] = False

    ddp.register_comm_hook(None, hook)


def _wrap_collectives(names, before):
    """``before(name)`` ahead of every call of the ``torch.distributed`` functions ``names``."""
    import torch.distributed as dist

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            before(name)
            return fn(*args, **kwargs)
        return wrapper

    for name in names:
        if callable(getattr(dist, name, None)):
            setattr(dist, name, counted(name, getattr(dist, name)))


# --------------------------------------------------------------------------- DDPIFY_PROBE_DIR

def _rank():
    return _STATE["rank"] if _STATE["rank"] is not None else int(os.environ.get("RANK", "0"))


def _log(event, **fields):
    if _STATE["file"] is None:
        os.makedirs(_DIR, exist_ok=True)
        name = f"r{os.environ.get('RANK', '0')}-p{os.getpid()}.jsonl"
        _STATE["file"] = open(os.path.join(_DIR, name), "a", buffering=1)
    fields.update(ev=event, rank=_rank(), pid=os.getpid())
    _STATE["file"].write(json.dumps(fields, default=str) + "\n")


def _index(i):
    try:
        return int(i)
    except (TypeError, ValueError):
        return repr(i)


def _item_digests(batch):
    """A short sha256 per item of a collated batch: of the bytes of row i of every tensor in it
    whose first dimension is the first tensor's (a batch of ``(x, y)`` pairs: x[i] and y[i]); one
    digest of its ``repr`` where it holds no tensor with rows."""
    import torch

    tensors, todo = [], [batch]
    while todo:
        item = todo.pop(0)
        if isinstance(item, (list, tuple)):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())
        elif hasattr(item, "detach") and getattr(item, "ndim", 0) >= 1:
            tensors.append(item.detach().cpu().contiguous())
    if not tensors:
        return [hashlib.sha256(repr(batch).encode()).hexdigest()[:16]]
    rows = [t for t in tensors if t.shape[0] == tensors[0].shape[0]]
    found = []
    for i in range(tensors[0].shape[0]):
        h = hashlib.sha256()
        for t in rows:
            h.update(t[i].contiguous().view(-1).view(torch.uint8).numpy().tobytes())
        found.append(h.hexdigest()[:16])
    return found


def _subset_digest(dataset):
    """A hash of the indices a `Subset` (from `random_split`) takes, None for other datasets (a
    tensor given straight to the loader has a method `indices`, a sparse tensor's)."""
    indices = getattr(dataset, "indices", None)
    if indices is None or callable(indices):
        return None
    return hashlib.sha256(json.dumps([int(i) for i in indices]).encode()).hexdigest()[:16]


def _sampler_info(loader):
    """What feeds ``loader``: the sampler behind its batch sampler, if any. Its replicas and rank,
    else the batch sampler's own (a custom batch sampler sharded whole, batch by batch:
    ``ShardedSampler(batch_sampler)``)."""
    batch_sampler = loader.batch_sampler
    sampler = getattr(batch_sampler, "sampler", None) if batch_sampler is not None else None
    sampler = sampler if sampler is not None else loader.sampler
    info = {"sampler": type(sampler).__name__,
            "batch_sampler": type(batch_sampler).__name__ if batch_sampler is not None else None,
            "inner": type(getattr(sampler, "sampler", None)).__name__
            if hasattr(sampler, "sampler") else None,
            "num_replicas": getattr(sampler, "num_replicas", getattr(batch_sampler, "num_replicas", None)),
            "sampler_rank": getattr(sampler, "rank", getattr(batch_sampler, "rank", None)),
            "shuffle": getattr(sampler, "shuffle", None),
            "batch_size": getattr(batch_sampler, "batch_size", None),
            "drop_last": bool(getattr(batch_sampler, "drop_last", False))}
    try:
        if batch_sampler is None:
            info["expected"] = len(sampler)
        elif info["drop_last"]:
            info["expected"] = len(batch_sampler) * batch_sampler.batch_size
        else:
            info["expected"] = len(sampler)
    except TypeError:
        info["expected"] = None
    return info


def digest(named_parameters):
    """sha256 over (name, dtype, shape, bytes) of every parameter, in order (tests reuse it); a
    sharded parameter (DTensor) is gathered first, a collective."""
    import torch

    h = hashlib.sha256()
    for name, p in named_parameters:
        t = (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _dump_params():
    for number, module in _WRAPPED:
        _log("params", model=number, module=type(module).__name__,
             sha256=digest(module.named_parameters()),
             names=[name for name, _ in module.named_parameters()],
             sum=float(sum(p.detach().double().sum() for p in module.parameters())))


def _log_optimizer(number, optimizer, when):
    params = [p for group in optimizer.param_groups for p in group["params"]]
    sharded = any(hasattr(p, "to_local") for p in params)
    _log("optimizer", model=number, optimizer=type(optimizer).__name__, when=when,
         steps=optimizer._ddpify_probe_steps,
         sha256=None if sharded else digest((str(i), p) for i, p in enumerate(params)))


def _dump_optimizers():
    for number, optimizer in enumerate(_OPTIMIZERS):
        _log_optimizer(number, optimizer, "exit")


def _sharded_roots():
    """Log ``params`` for each root of the modules fully_shard sharded (see the docstring)."""
    for module in _SHARDED:  # FSDP2 keeps the root gathered after a forward without backward
        module.reshard()
    inner = {id(m) for root in _SHARDED for m in root.modules() if m is not root}
    for number, module in enumerate((m for m in _SHARDED if id(m) not in inner), len(_WRAPPED)):
        params = list(module.named_parameters())
        full = [(name, p.full_tensor() if hasattr(p, "full_tensor") else p) for name, p in params]
        _log("params", model=number, module=type(module).__name__, sha256=digest(full),
             names=[name for name, _ in params], sum=float(sum(t.detach().double().sum() for _, t in full)),
             full=sum(t.numel() for _, t in full),
             local=sum((p.to_local() if hasattr(p, "to_local") else p).numel() for _, p in params))


def _record_fsdp():
    """Patch ``torch.distributed.fsdp.fully_shard`` (the name scripts and the runtime import)."""
    import torch.distributed.fsdp as fsdp

    fully_shard = fsdp.fully_shard

    def probed_fully_shard(module, *args, **kwargs):
        result = fully_shard(module, *args, **kwargs)
        if not _SHARDED:  # after ddpify_runtime's destroy hook, so it runs before it (LIFO)
            atexit.register(_sharded_roots)
        _SHARDED.append(module)
        _log("fsdp", module=type(module).__name__)
        return result

    fsdp.fully_shard = probed_fully_shard


def _record():
    import torch
    import torch.distributed as dist
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from torch.utils.data import DataLoader, IterableDataset
    from torch.utils.data._utils import fetch
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    init_process_group = dist.init_process_group

    def probed_init(*args, **kwargs):
        result = init_process_group(*args, **kwargs)
        _STATE["rank"] = dist.get_rank()
        _log("init", world=dist.get_world_size(), backend=dist.get_backend(),
             argv=getattr(sys, "orig_argv", sys.argv),
             env={k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                 "MASTER_PORT", "GROUP_RANK", "SLURM_PROCID",
                                                 "SLURM_LOCALID", "SLURM_NTASKS")})
        return result

    def count_all_reduce(name):
        _STATE["all_reduce"] += 1

    def count_bucket(bucket):
        _STATE["buckets"] += 1
        if bucket.is_last():
            _STATE["rounds"] += 1

    def after_ddp_init(ddp):
        module = ddp.module
        if not _WRAPPED:
            # Registered after ddpify_runtime's destroy hook, so it runs before it (LIFO); the
            # parameters are local tensors anyway.
            atexit.register(_dump_params)
        _WRAPPED.append((len(_WRAPPED), module))
        runtime = sys.modules.get("ddpify_runtime")
        _log("ddp", model=len(_WRAPPED) - 1, module=type(module).__name__,
             find_unused_parameters=ddp.find_unused_parameters, device_ids=ddp.device_ids,
             param_devices=sorted({str(p.device) for p in module.parameters()}),
             local_rank=runtime.local_rank() if runtime else None,
             local_device=str(runtime.local_device()) if runtime else None,
             classes=sorted({type(m).__name__ for m in module.modules()}))
        if os.environ.get("DDPIFY_PROBE_COUNT") == "1":
            _count_buckets(ddp, count_bucket)

    def step_pre_hook(optimizer, args, kwargs):
        _log("step", rounds=_STATE["rounds"], buckets=_STATE["buckets"], all_reduce=_STATE["all_reduce"])
        _STATE.update(rounds=0, buckets=0, all_reduce=0)

    optimizer_init = torch.optim.Optimizer.__init__

    def probed_optimizer_init(self, *args, **kwargs):
        optimizer_init(self, *args, **kwargs)
        if not hasattr(self, "_ddpify_probe_steps"):  # not again for a subclass's own super() chain
            if not _OPTIMIZERS:  # registered after ddpify_runtime's destroy hook: runs before it
                atexit.register(_dump_optimizers)
            self._ddpify_probe_steps = 0
            _OPTIMIZERS.append(self)

    def step_post_hook(optimizer, args, kwargs):
        if hasattr(optimizer, "_ddpify_probe_steps"):
            optimizer._ddpify_probe_steps += 1
            if optimizer._ddpify_probe_steps == 2:
                _log_optimizer(_OPTIMIZERS.index(optimizer), optimizer, "step2")

    loader_init = DataLoader.__init__

    def probed_loader_init(self, *args, **kwargs):
        loader_init(self, *args, **kwargs)
        _STATE["loaders"] += 1
        self._ddpify_probe_number = _STATE["loaders"]
        self._ddpify_probe_passes = 0

    loader_iter = DataLoader.__iter__

    def probed_iter(self):
        iterator = loader_iter(self)
        number = getattr(self, "_ddpify_probe_number", None)
        self._ddpify_probe_passes = getattr(self, "_ddpify_probe_passes", 0) + 1
        fetcher = getattr(iterator, "_dataset_fetcher", None)
        if fetcher is not None:
            fetcher._ddpify_probe_tag = (number, self._ddpify_probe_passes)
        if isinstance(self.dataset, IterableDataset):
            iterator._ddpify_probe_stream = (number, self._ddpify_probe_passes)
        try:
            dataset_len = len(self.dataset)
        except TypeError:
            dataset_len = None
        _log("pass", loader=number, **{"pass": self._ddpify_probe_passes},
             dataset=type(self.dataset).__name__, dataset_id=id(self.dataset),
             dataset_len=dataset_len, subset=_subset_digest(self.dataset),
             num_workers=self.num_workers, **_sampler_info(self))
        return iterator

    fetch_batch = fetch._MapDatasetFetcher.fetch

    def probed_fetch(self, possibly_batched_index):
        number, pass_ = getattr(self, "_ddpify_probe_tag", (None, None))
        batch = possibly_batched_index if self.auto_collation else [possibly_batched_index]
        _log("fetch", loader=number, **{"pass": pass_}, idx=[_index(i) for i in batch])
        return fetch_batch(self, possibly_batched_index)

    next_batch = _BaseDataLoaderIter.__next__

    def probed_next(self):
        batch = next_batch(self)
        number, pass_ = getattr(self, "_ddpify_probe_stream", (None, None))
        if number is not None:
            _log("fetch", loader=number, **{"pass": pass_}, idx=_item_digests(batch))
        return batch

    save = torch.save

    def probed_save(obj, f, *args, **kwargs):
        path = os.fspath(f) if isinstance(f, (str, bytes, os.PathLike)) else repr(type(f))
        folder, name = os.path.split(str(path))
        atomic = ATOMIC_TMP.fullmatch(name)  # ddpify_runtime.atomic_write's file for `folder/NAME`
        path = os.path.join(folder, atomic.group(1)) if atomic else path
        keys = nested = None
        sharded = False
        if isinstance(obj, dict):
            keys = [str(k) for k in obj]
            nested = {str(k): [str(kk) for kk in v] for k, v in obj.items() if isinstance(v, dict)}
            values = [*obj.values(), *(vv for v in obj.values() if isinstance(v, dict) for vv in v.values())]
            sharded = any(hasattr(v, "to_local") for v in values)
        _log("save", path=str(path), abspath=os.path.abspath(path), type=type(obj).__name__,
             keys=keys, nested=nested, sharded=sharded)
        return save(obj, f, *args, **kwargs)

    dist.init_process_group = probed_init
    _wrap_collectives(("all_reduce",), count_all_reduce)
    _after_ddp_init(after_ddp_init)
    register_optimizer_step_pre_hook(step_pre_hook)
    register_optimizer_step_post_hook(step_post_hook)
    torch.optim.Optimizer.__init__ = probed_optimizer_init
    DataLoader.__init__ = probed_loader_init
    DataLoader.__iter__ = probed_iter
    fetch._MapDatasetFetcher.fetch = probed_fetch
    _BaseDataLoaderIter.__next__ = probed_next
    torch.save = probed_save
    sys.meta_path.insert(0, _AfterImport("torch.distributed.fsdp", _record_fsdp))
    _log("start", argv=getattr(sys, "orig_argv", sys.argv), cwd=os.getcwd(),
         world=os.environ.get("WORLD_SIZE"), local_rank=os.environ.get("LOCAL_RANK"))


def restart(directory, argv):
    """In a process forked to run one program of a batch (``tests/support/batch_job.py``): record
    from here on into ``directory`` as a fresh process would, ``start`` event first. The patches
    stay (installed when the batch's process imported torch); what the probe counted is reset."""
    global _DIR
    _DIR = str(directory)
    _STATE.update(file=None, rank=None, rounds=0, buckets=0, all_reduce=0, loaders=0, in_hook=False)
    del _WRAPPED[:], _SHARDED[:], _OPTIMIZERS[:]
    _log("start", argv=list(argv), cwd=os.getcwd(), world=os.environ.get("WORLD_SIZE"),
         local_rank=os.environ.get("LOCAL_RANK"))


# --------------------------------------------------------------------------- DDPIFY_BENCH_PROBE

def _bench():
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def after_step(optimizer, args, kwargs):
        _BENCH["steps"].append(time.perf_counter())
        _BENCH["cpu"].append(time.process_time())

    def collective(name):
        if not _STATE["in_hook"]:
            _BENCH["events"].append((name, len(_BENCH["steps"])))

    def bucket(bucket):
        _BENCH["events"].append(("ddp_bucket_allreduce", len(_BENCH["steps"])))

    register_optimizer_step_post_hook(after_step)
    _wrap_collectives(COLLECTIVES, collective)
    if os.environ.get("DDPIFY_BENCH_PROBE_HOOK") == "1":
        _after_ddp_init(lambda ddp: _count_buckets(ddp, bucket))


def _bench_dump():
    with open(os.path.join(_BENCH_DIR, f"rank{os.environ.get('RANK', '0')}.json"), "w") as f:
        json.dump(_BENCH, f)


# --------------------------------------------------------------------------- start-up

class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds the module ``name`` like the normal path finder, and runs ``install`` once its
    module has run."""

    def __init__(self, name, install):
        self.name, self.install = name, install

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_install(module):
            exec_module(module)
            self.install()

        spec.loader.exec_module = exec_then_install
        return spec


if __name__ == "sitecustomize":  # not when a test imports this file for digest()
    if _DIR:
        sys.meta_path.insert(0, _AfterImport("torch", _record))
        atexit.register(lambda: _STATE["file"] is not None and _log(
            "exit", rounds=_STATE["rounds"], buckets=_STATE["buckets"]))
    elif _BENCH_DIR and "LOCAL_RANK" in os.environ:
        sys.meta_path.insert(0, _AfterImport("torch", _bench))
        atexit.register(_bench_dump)

