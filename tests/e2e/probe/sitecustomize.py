"""ddpify e2e probe: records what a (converted) training script really does, without editing it.

Active only when ``DDPIFY_PROBE_DIR`` is set and this folder is first on ``PYTHONPATH`` (Python
imports ``sitecustomize`` at start-up in every process, torchrun's workers included). It does not
import torch itself: a ``sys.meta_path`` finder waits for ``import torch`` to finish (torch's
``__init__`` imports ``torch.utils.data`` and ``torch.nn.parallel``), then patches:

* ``DataLoader.__init__``: numbers every loader in creation order (``loader``: the same number
  on every rank, since every rank runs the same code).
* ``DataLoader.__iter__``: counts passes per loader and logs a ``pass`` event describing the
  sampler (type, shuffle, world size, drop_last, batch size, indices a full pass yields).
* ``_MapDatasetFetcher.fetch``: logs the indices of every batch (``fetch``), tagged with the
  loader and pass of the iterator that owns the fetcher (num_workers=0 loaders only).
* ``torch.save``: logs rank, path and the keys of the saved mapping (and of nested mappings),
  then saves.
* ``DistributedDataParallel.__init__``: remembers every wrapped module; at exit a ``params``
  event per wrapped module holds a sha256 of its parameters (names, dtypes, bytes).

One JSON-lines file per process: ``$DDPIFY_PROBE_DIR/r<RANK>-p<pid>.jsonl`` (RANK from the
environment, 0 without a launcher), first event ``start``, last ``exit``.
"""

import atexit
import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import sys

_DIR = os.environ.get("DDPIFY_PROBE_DIR")
_FILE = None
_WRAPPED = []  # (number, module) of every DistributedDataParallel built in this process


def _subset_digest(dataset):
    """A hash of the indices a `Subset` (from `random_split`) takes, None for other datasets."""
    indices = getattr(dataset, "indices", None)
    if indices is None:
        return None
    return hashlib.sha256(json.dumps([int(i) for i in indices]).encode()).hexdigest()[:16]


def _rank():
    return int(os.environ.get("RANK", "0"))


def _log(event, **fields):
    global _FILE
    if _FILE is None:
        os.makedirs(_DIR, exist_ok=True)
        _FILE = open(os.path.join(_DIR, f"r{_rank()}-p{os.getpid()}.jsonl"), "a", buffering=1)
    fields.update(ev=event, rank=_rank(), pid=os.getpid())
    _FILE.write(json.dumps(fields, default=str) + "\n")


def _index(i):
    try:
        return int(i)
    except (TypeError, ValueError):
        return repr(i)


def _sampler_info(loader):
    """What feeds ``loader``: the sampler behind its batch sampler, if any."""
    batch_sampler = loader.batch_sampler
    sampler = getattr(batch_sampler, "sampler", None) if batch_sampler is not None else None
    sampler = sampler if sampler is not None else loader.sampler
    info = {"sampler": type(sampler).__name__,
            "batch_sampler": type(batch_sampler).__name__ if batch_sampler is not None else None,
            "inner": type(getattr(sampler, "sampler", None)).__name__
            if hasattr(sampler, "sampler") else None,
            "num_replicas": getattr(sampler, "num_replicas", None),
            "sampler_rank": getattr(sampler, "rank", None),
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


def _install():
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader
    from torch.utils.data._utils import fetch

    counter = {"loaders": 0}

    init = DataLoader.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        counter["loaders"] += 1
        self._ddpify_probe_number = counter["loaders"]
        self._ddpify_probe_passes = 0

    it = DataLoader.__iter__

    def __iter__(self):
        iterator = it(self)
        number = getattr(self, "_ddpify_probe_number", None)
        self._ddpify_probe_passes = getattr(self, "_ddpify_probe_passes", 0) + 1
        fetcher = getattr(iterator, "_dataset_fetcher", None)
        if fetcher is not None:
            fetcher._ddpify_probe_tag = (number, self._ddpify_probe_passes)
        try:
            dataset_len = len(self.dataset)
        except TypeError:
            dataset_len = None
        _log("pass", loader=number, **{"pass": self._ddpify_probe_passes},
             dataset=type(self.dataset).__name__, dataset_id=id(self.dataset),
             dataset_len=dataset_len, subset=_subset_digest(self.dataset),
             num_workers=self.num_workers, **_sampler_info(self))
        return iterator

    fetch_ = fetch._MapDatasetFetcher.fetch

    def fetch_batch(self, possibly_batched_index):
        number, pass_ = getattr(self, "_ddpify_probe_tag", (None, None))
        batch = possibly_batched_index if self.auto_collation else [possibly_batched_index]
        _log("fetch", loader=number, **{"pass": pass_}, idx=[_index(i) for i in batch])
        return fetch_(self, possibly_batched_index)

    save = torch.save

    def probed_save(obj, f, *args, **kwargs):
        path = os.fspath(f) if isinstance(f, (str, bytes, os.PathLike)) else repr(type(f))
        keys = nested = None
        if isinstance(obj, dict):
            keys = [str(k) for k in obj]
            nested = {str(k): [str(kk) for kk in v] for k, v in obj.items() if isinstance(v, dict)}
        _log("save", path=str(path), abspath=os.path.abspath(path), type=type(obj).__name__,
             keys=keys, nested=nested)
        return save(obj, f, *args, **kwargs)

    ddp_init = DistributedDataParallel.__init__

    def ddp__init__(self, module, *args, **kwargs):
        ddp_init(self, module, *args, **kwargs)
        if not _WRAPPED:
            # Registered after ddpify_runtime's destroy hook, so it runs before it (LIFO); the
            # parameters are local tensors anyway.
            atexit.register(_dump_params)
        _WRAPPED.append((len(_WRAPPED), self.module))
        _log("ddp", model=len(_WRAPPED) - 1, module=type(self.module).__name__,
             find_unused_parameters=self.find_unused_parameters)

    DataLoader.__init__ = __init__
    DataLoader.__iter__ = __iter__
    fetch._MapDatasetFetcher.fetch = fetch_batch
    torch.save = probed_save
    DistributedDataParallel.__init__ = ddp__init__
    _log("start", argv=getattr(sys, "orig_argv", sys.argv), cwd=os.getcwd(),
         world=os.environ.get("WORLD_SIZE"), local_rank=os.environ.get("LOCAL_RANK"))


def digest(named_parameters):
    """sha256 over (name, dtype, shape, bytes) of every parameter, in order (tests reuse it)."""
    import hashlib

    import torch

    h = hashlib.sha256()
    for name, p in named_parameters:
        t = p.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _dump_params():
    for number, module in _WRAPPED:
        _log("params", model=number, module=type(module).__name__,
             sha256=digest(module.named_parameters()),
             names=[name for name, _ in module.named_parameters()],
             sum=float(sum(p.detach().double().sum() for p in module.parameters())))


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Finds ``torch`` like the normal path finder, and patches once its module has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_patch(module):
            exec_module(module)
            _install()

        spec.loader.exec_module = exec_then_patch
        return spec


if _DIR and __name__ == "sitecustomize":  # not when a test imports this file for digest()
    sys.meta_path.insert(0, _AfterTorch())
    atexit.register(lambda: _FILE is not None and _log("exit"))
