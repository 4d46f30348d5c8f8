"""Benchmark probe for axis 5 (training overhead): times optimizer steps and counts collectives.

Active only in torchrun workers (``LOCAL_RANK`` set) when ``DDPIFY_BENCH_PROBE`` names an output
folder and this folder is on ``PYTHONPATH`` (Python imports ``sitecustomize`` at start-up). It
does not import torch itself: a ``sys.meta_path`` finder waits for ``import torch`` to finish,
then installs:

* a global optimizer step post-hook (``torch.optim.optimizer.register_optimizer_step_post_hook``)
  that records ``time.perf_counter()`` and ``time.process_time()`` after every ``optimizer.step()``;
* wrappers around the collectives in the ``torch.distributed`` namespace (``all_reduce``,
  ``barrier``, ``broadcast``, ``_broadcast_coalesced`` ... the names scripts, ``ddpify_runtime``
  and DDP's Python side look up at call time). Nested calls inside c10d are not counted twice:
  only the namespace attributes are wrapped, not c10d's module globals (and the ``all_reduce``
  that our comm hook below makes is counted as its bucket, not again);
* with ``DDPIFY_BENCH_PROBE_HOOK=1`` only (the counting run, not the timing runs, since a Python
  comm hook is slower than DDP's built-in C++ all-reduce): a DDP comm hook on every
  ``DistributedDataParallel`` that counts gradient buckets, then runs DDP's default all-reduce.

Every collective is tagged with the number of optimizer steps done when it ran. At exit each
worker writes ``$DDPIFY_BENCH_PROBE/rank<RANK>.json``.
"""

import atexit
import importlib.abc
import importlib.machinery
import json
import os
import sys
import time

_DIR = os.environ.get("DDPIFY_BENCH_PROBE")
_STEPS = []  # perf_counter after each optimizer.step()
_CPU = []  # process_time (this process's CPU seconds) after each optimizer.step()
_EVENTS = []  # (collective name, optimizer steps done when it was called)
_IN_HOOK = [False]  # inside our comm hook: its own dist.all_reduce is the bucket, counted once
COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "broadcast",
               "broadcast_object_list", "_broadcast_coalesced", "barrier", "monitored_barrier", "reduce",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather",
               "gather_object", "scatter", "scatter_object_list", "send", "recv", "isend", "irecv")


def _install():
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def after_step(optimizer, args, kwargs):
        _STEPS.append(time.perf_counter())
        _CPU.append(time.process_time())

    register_optimizer_step_post_hook(after_step)

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            if not _IN_HOOK[0]:
                _EVENTS.append((name, len(_STEPS)))
            return fn(*args, **kwargs)
        return wrapper

    for name in COLLECTIVES:
        if callable(getattr(dist, name, None)):
            setattr(dist, name, counted(name, getattr(dist, name)))

    if os.environ.get("DDPIFY_BENCH_PROBE_HOOK") == "1":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

        def counting_hook(state, bucket):
            _EVENTS.append(("ddp_bucket_allreduce", len(_STEPS)))
            _IN_HOOK[0] = True
            try:
                return allreduce_hook(state, bucket)
            finally:
                _IN_HOOK[0] = False

        init = DistributedDataParallel.__init__

        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            self.register_comm_hook(None, counting_hook)

        DistributedDataParallel.__init__ = __init__


def _dump():
    with open(os.path.join(_DIR, f"rank{os.environ.get('RANK', '0')}.json"), "w") as f:
        json.dump({"steps": _STEPS, "cpu": _CPU, "events": _EVENTS}, f)


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Finds ``torch`` like the normal path finder, and installs the probe once it has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_install(module):
            exec_module(module)
            _install()

        spec.loader.exec_module = exec_then_install
        return spec


if _DIR and "LOCAL_RANK" in os.environ and __name__ == "sitecustomize":
    sys.meta_path.insert(0, _AfterTorch())
    atexit.register(_dump)
