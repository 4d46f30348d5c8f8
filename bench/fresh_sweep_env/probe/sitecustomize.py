"""The fresh sweep's probe (bench/fresh_sweep.py puts this folder first on PYTHONPATH): the test
probe (tests/support/probe/sitecustomize.py: loader passes and their indices, optimizer
checksums after the 2nd step and at exit, torch.save paths and keys, DDP wraps), plus, for
judging a program from the outside and naming the code behind a failed check:

* ``made`` (a DataLoader or an optimizer built): its number in the test probe's order and the
  user's stack where it was built (the runtime's ``shard_loader`` rebuilds a loader: its caller);
* ``pass_epoch`` (a loader's pass): its sampler's ``epoch`` (what ``set_epoch`` set), for the
  loaders whose indices the test probe cannot see (worker processes fetch them);
* ``batch`` (a batch the main process takes from a loader's iterator, workers or not): the
  loader it comes from, so a step is told from the loader of its batch, not from the loader whose
  pass began last (an evaluation pass in the middle of a long-lived training iterator's);
* ``coverage`` (an optimizer's 2nd step): how many of the parameters it steps belong to no
  DDP- or FSDP-wrapped module and whose gradients `sync_gradients` does not average (issue 28's
  first check, seen from outside);
* ``save_site`` (torch.save): the user's stack, and whether the object saved holds a
  DistributedDataParallel (a whole-model save of the wrapper);
* ``write`` (a file a program writes itself: ``open`` for writing, called from the user's code,
  and the stand-in writers of ``fresh_stubs``: images, plots, SummaryWriter, loggers);
* ``print`` (``print`` on a process other than rank 0, the first 20): the user's stack.

``FRESH_SWEEP_STAGGER=S`` makes every process but rank 0 wait S seconds once it has joined the
process group (``init_process_group`` returned), so that rank 0 runs ahead to the next collective:
a race between one process making a file or folder and another asking about it (``assert not
os.path.exists(run_dir)`` beside a writer that makes it on the main process only) is lost every
time, not by chance.

``FRESH_SWEEP_CUDA_AS_CPU=1`` makes ``.cuda()`` a no-op (the manifest sets it for a program
that moves to the GPU unconditionally). A user frame is one whose file lies under a folder of ``FRESH_SWEEP_USER_ROOTS`` (the converted
program's folder and the project copy). Events go where the test probe's go
(``DDPIFY_PROBE_DIR``). The stand-in packages (``fresh_stubs``, beside on PYTHONPATH) are
installed in every process, with or without the probe."""

import atexit
import builtins
import contextlib
import functools
import importlib.util
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOTS = tuple(os.path.realpath(p) + os.sep for p in os.environ.get("FRESH_SWEEP_USER_ROOTS", "").split(os.pathsep) if p)
_TEST_PROBE = os.path.join(_HERE, "..", "..", "..", "tests", "support", "probe", "sitecustomize.py")
_PRINTS = {"n": 0}

try:
    import fresh_stubs
    fresh_stubs.install()
except ImportError:
    pass

_spec = importlib.util.spec_from_file_location("ddpify_test_probe", _TEST_PROBE)
_test_probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_test_probe)
probe = _test_probe if os.environ.get("DDPIFY_PROBE_DIR") else None


def _user_stack(skip=1, limit=8):
    """[file, line, qualname] of the user's frames, innermost first."""
    frames, frame = [], sys._getframe(skip)
    while frame is not None and len(frames) < limit:
        path = _user_file(frame)
        if path:
            frames.append([path, frame.f_lineno, getattr(frame.f_code, "co_qualname", frame.f_code.co_name)])
        frame = frame.f_back
    return frames


def _caller_is_user(depth=2):
    """Is the code that called the probed function the user's? The runtime's self-check wraps
    ``open`` too (its record of writes, installed after this one): its frames are passed over, or
    no file the program opened for writing would be seen while it runs."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_globals.get("__name__") == "ddpify_runtime":
        frame = frame.f_back
    return frame is not None and bool(_user_file(frame))


def _user_file(frame):
    """The real path of `frame`'s file where it lies under a user root, else ''. Not the import
    machinery's `<frozen importlib._bootstrap>`, which `realpath` would put in the working folder."""
    name = frame.f_code.co_filename
    path = "" if name.startswith("<") else os.path.realpath(name)
    return path if _ROOTS and path.startswith(_ROOTS) else ""


def record_write(path, what):
    """A file write of the stand-in packages (fresh_stubs, the torchvision stub)."""
    if probe is not None and probe._DIR:
        probe._log("write", path=str(path), what=what, stack=_user_stack(2))


def _extras():
    import torch
    from torch.utils.data import DataLoader

    loader_init = DataLoader.__init__

    def made_loader(self, *args, **kwargs):
        loader_init(self, *args, **kwargs)
        probe._log("made", kind="loader", number=getattr(self, "_ddpify_probe_number", None), stack=_user_stack(2))

    optimizer_init = torch.optim.Optimizer.__init__

    def made_optimizer(self, *args, **kwargs):
        known = hasattr(self, "_ddpify_probe_steps")
        optimizer_init(self, *args, **kwargs)
        if not known and hasattr(self, "_ddpify_probe_steps"):
            probe._log("made", kind="optimizer", number=probe._OPTIMIZERS.index(self), stack=_user_stack(2))

    save = torch.save

    def saved(obj, f, *args, **kwargs):
        probe._log("save_site", path=str(f) if isinstance(f, (str, os.PathLike)) else repr(type(f)),
                   wrapper=_holds_wrapper(obj), stack=_user_stack(2))
        return save(obj, f, *args, **kwargs)

    loader_iter = DataLoader.__iter__

    def epoch_of_pass(self):
        iterator = loader_iter(self)
        sampler = getattr(self.batch_sampler, "sampler", None) or self.sampler
        probe._log("pass_epoch", loader=getattr(self, "_ddpify_probe_number", None),
                   number=getattr(self, "_ddpify_probe_passes", None), epoch=getattr(sampler, "epoch", None),
                   seed=getattr(sampler, "seed", None))
        with contextlib.suppress(AttributeError):
            iterator._ddpify_probe_batches_of = getattr(self, "_ddpify_probe_number", None)
        return iterator

    from torch.utils.data.dataloader import _BaseDataLoaderIter

    next_batch = _BaseDataLoaderIter.__next__

    def batch_of(self):
        batch = next_batch(self)
        probe._log("batch", loader=getattr(self, "_ddpify_probe_batches_of", None))
        return batch

    from torch.optim.optimizer import register_optimizer_step_post_hook

    def coverage(optimizer, args, kwargs):
        if getattr(optimizer, "_ddpify_probe_steps", None) == 2:  # the test probe's hook ran first
            wrapped = {id(p) for _, m in probe._WRAPPED for p in m.parameters()}
            wrapped |= {id(p) for m in probe._SHARDED for p in m.parameters()}
            params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
            bare = [p for p in params if id(p) not in wrapped and not getattr(p, "_ddpify_synced", False)]
            probe._log("coverage", number=probe._OPTIMIZERS.index(optimizer), params=len(params), bare=len(bare),
                       shapes=[list(p.shape) for p in bare[:4]])

    DataLoader.__init__ = made_loader
    DataLoader.__iter__ = epoch_of_pass
    _BaseDataLoaderIter.__next__ = batch_of
    register_optimizer_step_post_hook(coverage)
    torch.optim.Optimizer.__init__ = made_optimizer
    torch.save = saved


def _holds_wrapper(obj, depth=0):
    from torch.nn.parallel import DistributedDataParallel
    if isinstance(obj, DistributedDataParallel):
        return True
    if depth < 2 and isinstance(obj, (list, tuple)):
        return any(_holds_wrapper(o, depth + 1) for o in obj)
    if depth < 2 and isinstance(obj, dict):
        return any(_holds_wrapper(o, depth + 1) for o in obj.values())
    return False


_open = builtins.open


def _probed_open(file, mode="r", *args, **kwargs):
    if isinstance(mode, str) and any(c in mode for c in "wax") and isinstance(file, (str, os.PathLike)) \
            and _caller_is_user():
        probe._log("write", path=os.fspath(file), what="open", stack=_user_stack(2))
    return _open(file, mode, *args, **kwargs)


_print = builtins.print


def _probed_print(*args, **kwargs):
    if probe._rank() != 0 and _PRINTS["n"] < 20 and kwargs.get("file") in (None, sys.stdout):
        _PRINTS["n"] += 1
        probe._log("print", text=" ".join(map(str, args))[:120], stack=_user_stack(2))
    return _print(*args, **kwargs)


def _cuda_as_cpu():
    """``FRESH_SWEEP_CUDA_AS_CPU=1`` (a program that calls ``.cuda()`` unconditionally, on a
    machine without a GPU): ``Tensor.cuda()`` and ``Module.cuda()`` return their object."""
    import torch

    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    torch.nn.Module.cuda = lambda self, *args, **kwargs: self


def _staggered(init, seconds):
    """``init_process_group`` that returns ``seconds`` late on every process but rank 0."""
    @functools.wraps(init)
    def init_process_group(*args, **kwargs):
        result = init(*args, **kwargs)
        if os.environ.get("RANK", "0") != "0":
            time.sleep(seconds)
        return result
    return init_process_group


def _install():
    if os.environ.get("FRESH_SWEEP_CUDA_AS_CPU") == "1":
        _cuda_as_cpu()
    if float(os.environ.get("FRESH_SWEEP_STAGGER") or 0) > 0:
        import torch.distributed as dist

        dist.init_process_group = _staggered(dist.init_process_group, float(os.environ["FRESH_SWEEP_STAGGER"]))
    if probe is not None:
        probe._record()
        _extras()


sys.meta_path.insert(0, _test_probe._AfterImport("torch", _install))
if probe is not None:
    atexit.register(lambda: probe._STATE["file"] is not None and probe._log(
        "exit", rounds=probe._STATE["rounds"], buckets=probe._STATE["buckets"]))
    builtins.open = _probed_open
    builtins.print = _probed_print
