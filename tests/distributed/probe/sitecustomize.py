"""tests/distributed probe: records what a converted script does in each worker process.

Active only when ``DDPIFY_DIST_PROBE_DIR`` is set and this folder is on ``PYTHONPATH`` (Python
imports ``sitecustomize`` at start-up in every process, launchers' workers included). It does not
import torch itself: a ``sys.meta_path`` finder waits for ``import torch`` to finish, then patches:

* ``torch.distributed.init_process_group``: logs ``init`` (global rank, world size, backend and
  the launch variables the process was given). Nothing is written before this event, so a
  launcher process (which never joins a group) leaves no file.
* ``DistributedDataParallel.__init__``: logs ``ddp`` (``device_ids``, the parameters' device,
  ``ddpify_runtime.local_rank()``/``local_device()``, the module classes inside). With
  ``DDPIFY_DIST_PROBE_COUNT=1`` it also registers a comm hook that counts gradient buckets and
  all-reduce rounds (a round is one backward's set of buckets, closed by ``bucket.is_last()``)
  and then runs torch's own ``allreduce_hook``; DDP's gradient all-reduce goes through the C++
  reducer, so a Python-level wrapper of ``all_reduce`` alone would not see it.
* ``torch.distributed.all_reduce``: counts Python-level calls (the hook's included).
* a global optimizer step pre-hook: logs ``step`` with the rounds, buckets and all_reduce calls
  since the previous step.
* ``DataLoader.__iter__`` and ``_MapDatasetFetcher.fetch``: logs ``fetch`` with the indices of
  every batch, tagged with the loader's creation number and its pass number.
* ``torch.save``: logs ``save`` (path), then saves.

One JSON-lines file per worker: ``$DDPIFY_DIST_PROBE_DIR/p<pid>.jsonl``; ``rank`` in every event is
the process group's rank once it exists.
"""

import atexit
import importlib.abc
import importlib.machinery
import json
import os
import sys

_DIR = os.environ.get("DDPIFY_DIST_PROBE_DIR")
_STATE = {"file": None, "rank": None, "rounds": 0, "buckets": 0, "all_reduce": 0, "loaders": 0}


def _log(event, **fields):
    if _STATE["file"] is None:
        os.makedirs(_DIR, exist_ok=True)
        _STATE["file"] = open(os.path.join(_DIR, f"p{os.getpid()}.jsonl"), "a", buffering=1)
    fields.update(ev=event, rank=_STATE["rank"], pid=os.getpid())
    _STATE["file"].write(json.dumps(fields, default=str) + "\n")


def _install():
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    from torch.utils.data._utils import fetch

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

    all_reduce = dist.all_reduce

    def probed_all_reduce(*args, **kwargs):
        _STATE["all_reduce"] += 1
        return all_reduce(*args, **kwargs)

    def counting_hook(state, bucket):
        _STATE["buckets"] += 1
        if bucket.is_last():
            _STATE["rounds"] += 1
        return allreduce_hook(state, bucket)

    ddp_init = DistributedDataParallel.__init__

    def probed_ddp_init(self, module, *args, **kwargs):
        ddp_init(self, module, *args, **kwargs)
        runtime = sys.modules.get("ddpify_runtime")
        _log("ddp", device_ids=self.device_ids,
             param_devices=sorted({str(p.device) for p in module.parameters()}),
             local_rank=runtime.local_rank() if runtime else None,
             local_device=str(runtime.local_device()) if runtime else None,
             classes=sorted({type(m).__name__ for m in module.modules()}))
        if os.environ.get("DDPIFY_DIST_PROBE_COUNT") == "1":
            self.register_comm_hook(None, counting_hook)

    def step_pre_hook(optimizer, args, kwargs):
        _log("step", rounds=_STATE["rounds"], buckets=_STATE["buckets"], all_reduce=_STATE["all_reduce"])
        _STATE.update(rounds=0, buckets=0, all_reduce=0)

    loader_init = DataLoader.__init__

    def probed_loader_init(self, *args, **kwargs):
        loader_init(self, *args, **kwargs)
        _STATE["loaders"] += 1
        self._dist_probe_number = _STATE["loaders"]
        self._dist_probe_passes = 0

    loader_iter = DataLoader.__iter__

    def probed_iter(self):
        iterator = loader_iter(self)
        self._dist_probe_passes = getattr(self, "_dist_probe_passes", 0) + 1
        fetcher = getattr(iterator, "_dataset_fetcher", None)
        if fetcher is not None:
            fetcher._dist_probe_tag = (getattr(self, "_dist_probe_number", None), self._dist_probe_passes)
        return iterator

    fetch_batch = fetch._MapDatasetFetcher.fetch

    def probed_fetch(self, possibly_batched_index):
        loader, pass_ = getattr(self, "_dist_probe_tag", (None, None))
        batch = possibly_batched_index if self.auto_collation else [possibly_batched_index]
        _log("fetch", loader=loader, **{"pass": pass_}, idx=[int(i) for i in batch])
        return fetch_batch(self, possibly_batched_index)

    save = torch.save

    def probed_save(obj, f, *args, **kwargs):
        path = os.fspath(f) if isinstance(f, (str, bytes, os.PathLike)) else repr(type(f))
        _log("save", path=os.path.abspath(path))
        return save(obj, f, *args, **kwargs)

    dist.init_process_group = probed_init
    dist.all_reduce = probed_all_reduce
    DistributedDataParallel.__init__ = probed_ddp_init
    register_optimizer_step_pre_hook(step_pre_hook)
    DataLoader.__init__ = probed_loader_init
    DataLoader.__iter__ = probed_iter
    fetch._MapDatasetFetcher.fetch = probed_fetch
    torch.save = probed_save
    atexit.register(lambda: _STATE["file"] is not None and _log(
        "exit", rounds=_STATE["rounds"], buckets=_STATE["buckets"]))


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


if _DIR:
    sys.meta_path.insert(0, _AfterTorch())
