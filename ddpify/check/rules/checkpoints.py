"""Checkpoints: written once, loadable without the wrapper."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Iterator, NamedTuple

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref, param_names
from ddpify.analysis.call_branches import left_out
from ddpify.analysis.distributed import one_visible_gpu_each
from ddpify.check.branches import never_runs
from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
from ddpify.analysis.same_values import reads_saved_state
from ddpify.syntax.matchers import string_value
from ddpify.analysis import writes
from ddpify.analysis.models import DDP, WRAPPER
from ddpify.analysis.states import holds_no_tensors, loaded_data_set
from ddpify.analysis.tensor_files import saved_on_the_cpu
from ddpify.analysis.wrapped_paths import on_a_wrapping_path
from ddpify.analysis.objects import MODEL, OPTIMIZER, of as objects_of
from ddpify.syntax.names import MAIN_PROCESS_WORDS, dotted, rank_word


@rule("DDP006", fixable=True, several=True)
def save_on_every_rank(ctx: Context) -> Iterator[Hit]:
    """`torch.save` (or another file write) on every rank.

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        torch.save(model.module.state_dict(), "model.pt")

    Right:

        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")

    Every process writes the same file at the same time: N times the I/O, and on a shared file
    system a reader can see a half-written or interleaved checkpoint. Save on rank 0. Found for a
    file write (the list `convert` guards: `torch.save`, `torch.jit.save`, a scripted model's
    `.save(path)`, `save_pretrained(...)`, `np.save`/`np.savez`/`np.savetxt`, `json.dump`,
    `pickle.dump`, `shutil` copies, `save_image`, `savefig`, `to_csv`, pathlib's `write_bytes`/`write_text`,
    a tensorboard `SummaryWriter(log_dir)` made (each process's its own event file: every curve logged N times),
    a link made, `os.symlink(src, dst)` or pathlib's `latest.symlink_to(name)` (all but the first process fail on it),
    a file or folder removed, `shutil.rmtree(d)` or `os.remove(p)` (all but the first process fail on what the first
    removed; not `rmtree(d, ignore_errors=True)`; not fixed: the others must wait for the removal),
    an installed library's `save_json(obj, path)` and its kin; a download that writes its file in place, `urlretrieve(url, path)`,
    torchvision's `download_url`/`download_and_extract_archive` (and a torchvision data set built with
    `download=True`, which calls it), `shutil.unpack_archive`, every process fetching
    into the same file at once (not one that moves a finished temporary file into place, `download_url_to_file`);
    a folder made where it may exist, `os.makedirs(d)` or `os.mkdir(d)` without `exist_ok=True`, also after
    `if not os.path.isdir(d):` (every process may pass the test before any makes it, and the slower fail with
    FileExistsError; not one in a `try` whose handler catches it and goes on, `except OSError: pass`;
    one whose handler exits or raises is, `except FileExistsError: sys.exit(...)`);
    not a save into an in-memory buffer, `torch.save(sd, io.BytesIO())`) that runs on every process, or on every
    process but one (the `else` of `if rank == 0:` or of `if ddp and rank == 0:`, the branch of
    `if rank != 0:` or `if accelerator.is_main_process == 0:`, after an early `return` that rank 0 alone
    may take, `if rank == 0: ... if config is None: return`, also in a helper every call of which is so) (not in a branch of a
    conditional expression on the rank, `SummaryWriter(d) if rank == 0 else None`; not a tensorboard writer
    every use of which, `tb.add_scalar(...)` (followed through names, attributes, returns and parameters; not
    `flush()`/`close()`), is a write not reported here, `if rank == 0: tb.add_scalar(...)`: the other processes
    leave an empty events file, no curve is logged twice; not for a path
    that names the rank, `f"preds_{rank}.npy"` (also a file opened on a name holding such a path, `p =
    f"beta_{i}.pt"` for `i` of this rank's own range of ids, `with open(p, "wb") as f`), nor one made unique per process, `f"batch-{uuid4()}.pt"`,
    `tempfile.mkstemp()`, nor one named after each sample a function is handed where every call of it
    runs in a loop over a loader drawing from a DistributedSampler (`for p in predictions:
    open(os.path.join(out, p["file_name"]), "wb")`: each process writes its own shard's files), nor
    one computed from a batch such a loop draws (`for i, batch in enumerate(loader):` ...
    `open(f"{paths[batch['index']]}.txt", "w")`, also in a helper every call of which the loop hands
    the batch, or from what a method stored on the instance, `self.cache["indexes"] = batch["indexes"]`;
    the sampler also one stored into the loader's `**` mapping, `args["sampler"] = ...`,
    or a sampler class of the program whose constructor reads the rank; the loader also one held on
    the arguments `mp.spawn` hands the worker, `args.val_loader`; not one from the loop's
    count `i` or the epoch), nor `os.devnull`; not a file every process only empties, `with open(log_file, "w") as f: pass`, every
    other write of which comes after a wait of every process (`if ddp: dist.all_reduce(loss)` before
    the main process's `open(log_file, "a")`: all of them have emptied it by then); not a write
    inside the block of an inter-process file lock, `with FileLock(p + ".lock"):` or `portalocker.Lock`, which the processes enter in turn (the first writes,
    the others find the file), also in a helper every call of which is there (`with FileLock(p):
    fit_transforms(...)`, whose helper saves what it fitted); not a write told whether this is the main process,
    `save_pretrained(d, is_main_process=accelerator.is_main_process)`; not a method of an object that every
    rank but one has replaced with an object of another class, `else: saver = NoOp()` of `if rank == 0:`,
    before `saver.save(model)`): not under a rank test (the rank also the parameter a worker is started with
    its index in, `Process(target=partial(train, cfg=cfg), args=(i,))` in `for i in range(n):`; one that every way of holding asks: not
    `save and (epoch + 1 == epochs or rank == 0)`, which every rank passes in the last epoch; nor
    right of one that short-circuits: `rank == 0 and link(p)`; nor under one `or`-ed with the `else` of the flag the script spawns its
    workers under, `not args.multiprocessing_distributed or args.rank == 0` where the script runs
    `mp.spawn(main_worker, ...)` only `if args.multiprocessing_distributed:` and the worker itself
    otherwise: each launch, one a node, runs one process there; nor one `or`-ed with `not flag`
    (also `flag == False`) where every DDP wrap and every DistributedSampler of the program is made
    under that flag, so that where it is off the run is one process: `if self.config["global_rank"]
    == 0 or not config["distributed"]:` beside `if config["distributed"]: self.model = DDP(...)`), not after an early
    `if rank != 0: return`, not under a flag only ever set to `False`, not in a branch that ends the
    process under a test that can differ between processes (a crash dump of a process whose own loss
    is not finite, then `sys.exit(1)`: only the failing processes write it), not where only a run of one process gets (`if args.local_rank == -1:`,
    after `assert opt.local_rank == -1`, where a test holds that the distributed branch asserts
    false: `if opt.evolve:` after `if LOCAL_RANK != -1: assert not opt.evolve`; or the `else` of a flag whose
    body does the same under `if dist.get_rank() == 0:`, where no flag of the program gates its process
    group (`if cfg["DDP"]["flag"]: if dist.get_rank() == 0: save() else: save()`); also in a function every
    call of which is so, in another module too: `train_with_dp(cfg)` in the `else` of `if cfg.DISTRIBUTE:`,
    the flag every process group starts under, also `and`-ed with another; or the main block of a
    file whose run as a program does nothing distributed, its `mp.spawn` commented out: the group's
    code lies in functions that run never enters; or a web server's
    request handler, `@app.post("/model/")` of a FastAPI or Flask app: the server's process), not in a "main
    process first" block (`with
    torch_distributed_zero_first(rank):`, a context manager of the program whose other ranks wait
    before its `yield` and the main process after it, also one handed a rank test for the flag it
    branches on, `with goes_first(LOCAL_RANK == 0):` of `if condition: yield; dist.barrier()` /
    `else: dist.barrier(); yield`, or between `if rank != 0: dist.barrier()`
    and `if rank == 0: dist.barrier()`: a cache the main process writes where it is missing and
    the others find; before Lightning's `Trainer` starts the other processes at `trainer.fit(...)`,
    or Fabric at `fabric.launch(...)`; a download at import (the module's top level, or a function
    only that calls) of a script whose main block starts its workers with `mp.spawn`: the launching
    process fetches it before any worker starts, and each worker's import finds it there; so too a
    cache written at import where a test of that file finds it missing, `if p.exists(): load(p)
    else: ... pickle.dump(x, gzip.open(p, "wb"))`;
    in a Lightning loader hook or `setup`, where `prepare_data` already ran what writes: a data set
    building its cache where it is missing), and in a function that some call reaches on every process (or
    that is handed to `mp.spawn`, or a step or `on_*` hook of a LightningModule, which Lightning runs
    on every process, or that builds the DDP wrapper or starts the process group itself, which every
    process must run: a trainer's `train()` of a class the script loads by name; not in a function decorated by a program decorator whose
    wrapper calls it under a rank test, `@rank0_only`, also one of the method's own class body, `@_main_only`). A write of another module of the
    program is also reported at the call of the checked file that runs it on every process
    (in a function the file runs, as above: not one nothing here calls, a one-process trainer
    another script runs; `self.save_best()` of a base class whose helper calls `torch.save`), through as many modules
    as lie between (`fuse()` of a module whose helper in a third module writes); not where a call
    on the way leaves out the branch that leads to the write (`Samples(rows, find=False)` whose
    constructor calls the writing helper only `if find:`, also `if self.find:` after its `self.find = find`
    of a `find=False` default no call passes), every other call being one that one
    process makes alone (`iterate(model, loader, save_path=d)` in the launcher's own inference
    branch, beside the workers' `iterate(model, loader, optimizer)`); not a call through a
    global name only one rank's branch binds (`global log` ... `if rank == 0: log =
    utils.set_save_path(d)`: the other ranks never hold it). `--fix` puts it under `if not dist.is_initialized() or
    dist.get_rank() == 0:` (not a download: the others read what it fetches, so they must wait for it).
    """
    if not ctx.script.distributed:
        return
    f = ctx.facts
    dist = ctx.script.spelled("torch.distributed")
    reported: set[cst.Call] = set()
    # a folder last: a call of another file that runs both a file write and a folder names the write
    for call, path, what, fetched in sorted(_file_writes(ctx), key=lambda w: writes.raced_folder(f, w[0]) is not None):
        func = f.scope(call)
        if not _on_every_rank(ctx, call, path, fetched) or _logged_on_one_rank(ctx, call):
            continue
        stmt = f.statement(call)
        alone = mt.sole(stmt, cst.Expr) is not None and stmt.body[0].value is call
        if ctx.ranks.all_but_one(call):  # the `else` of `if rank == 0:`: guarding it again would not help
            guard = ctx.ranks.rank_guard(call)
            where = ("after that rank's early return" if ctx.ranks.rank_return_guard(call) is not None else
                     "where every call of its function runs") if guard is None else "in the `else` of that rank test" \
                if guard.orelse is not None and f.is_inside(call, guard.orelse) else "under a test that fails on that rank only"
            yield Hit(call, f"every rank but the one the test above picks runs this {what}, {where}: write it on "
                            "rank 0 only")
        else:
            removes = writes.deletion(f, call) is not None
            folder = writes.raced_folder(f, call) is not None
            fix = _guard(stmt, dist) if alone and dist is not None and not fetched and not removes and not folder else None
            message = f"every rank downloads into this file ({what}): download it on one process first, the others " \
                "waiting for it (a barrier) before they read it" if fetched else \
                f"every rank removes this ({what}): all but the first fail on what the first removed; remove it on " \
                "rank 0 only, the others waiting for it (a barrier)" if removes else \
                f"every rank makes this folder ({what}, no exist_ok): all but the first may find it made and fail " \
                "(FileExistsError), whatever test of it came first; pass exist_ok=True" if folder else \
                "every rank writes this checkpoint: save on rank 0 only" if what == "torch.save" else \
                f"every rank makes this link ({what}): make it on rank 0 only" if writes.link(f, call) else \
                f"every rank writes this file ({what}): write it on rank 0 only"
            yield Hit(call, message, fix)
        for site in _callers_elsewhere(ctx, call):  # `self.save_best()` of base.py's torch.save, in trainer.py
            if site in reported:
                continue
            reported.add(site)
            where = f"{f.program.part_of(call, f.parents).rel} ({what} in `{func.name.value}`) on every rank"
            yield Hit(site, f"`{f.code(site.func)}()` runs a download into a file of {where}: run it on one process "
                            "first, the others waiting for it (a barrier)" if fetched else
                      f"`{f.code(site.func)}()` runs a removal of {where}: call it on rank 0 only, the others waiting "
                      "for it (a barrier)" if writes.deletion(f, call) is not None else
                      f"`{f.code(site.func)}()` makes a folder that may exist, of {where}: all but the first fail on "
                      "it; pass exist_ok=True" if writes.raced_folder(f, call) is not None else
                      f"`{f.code(site.func)}()` runs a file write of {where}: call it on rank 0 only")


def _on_every_rank(ctx: Context, call: cst.Call, path: cst.BaseExpression | None, fetched: bool = False) -> bool:
    """Does the write `call` (to `path`; a download where `fetched`) run on every process, or on
    every process but one: none of the exceptions the docstring of DDP006 lists?"""
    f = ctx.facts
    func = f.scope(call)
    return not (ctx.ranks.on_some_ranks(call) and not ctx.ranks.all_but_one(call)
                or isinstance(func, cst.FunctionDef) and not ctx.ranks.entry_point(func)
                and not ctx.ranks.joins_every_process(func)
                or isinstance(func, cst.FunctionDef) and f.entries(func) and not ctx.ranks.parted_calls(f.entries(func))
                and all(_on_one_rank(ctx, site, func) or _left_out_by(ctx, call, func, site) or ctx.ranks.undistributed(site)
                        or not f.handing_on(func.name.value) and not _run_by_the_file(ctx, f.scope(site))
                        for site in f.entries(func))
                or path is not None and (_per_rank(ctx, path) or _per_sample_of_a_shard(ctx, call, path)
                                         or _drawn_from_a_shard(ctx, call, path)
                                         or _null_device(ctx, path))
                or ctx.ranks.undistributed(call)
                or ctx.ranks.main_first(call, write=call) or ctx.ranks.ends_alone(call) or _told_main_process(ctx, call)
                or writes.locked_on_every_way(f, call)
                or (fetched or writes.written_where_missing(f, call)) and ctx.script.launcher.at_import_first(call)
                or _emptied_before_every_write(ctx, call, path))


def _emptied_before_every_write(ctx: Context, call: cst.Call, path: cst.BaseExpression | None) -> bool:
    """A file every process only empties (`writes.only_empties`: `with open(log_file, "w") as f:
    pass`), every other write of which in the program comes after it with a wait of every process
    between (`Ranks.waits_between`: the main process's `with open(log_file, "a")` after `if ddp:
    dist.all_reduce(loss)`): no process writes into the file before every process has emptied it,
    and all of them leave the same empty file (diixo/build-gpt's log, nanoGPT's, decision 0218).
    Not where another write of the file comes before such a wait, nor where no other write of it
    is found: then what the emptying races with is not known."""
    f = ctx.facts
    if path is None or not writes.only_empties(f, call):
        return False
    others = [c for c in f.calls if c is not call and writes.file_write(f, c) is not None
              and (p := writes.written_file(f, c)) is not None and writes.same_file(f, p, path)]
    return bool(others) and all(ctx.ranks.waits_between(f.statement(call), f.statement(c)) for c in others)


def _left_out_by(ctx: Context, node: cst.CSTNode, func: cst.FunctionDef, site: cst.Call, depth: int = 3) -> bool:
    """Does the call `site` of `func` leave out the branch of `func` holding `node` (`left_out`), or
    is `site` itself so left out by every call of the function around it, `depth` calls up, but
    for calls that one process makes alone (the launching process's own code, never a worker's,
    `launcher.only`: the `else` of the main block's `if mode == "train": mp.spawn(...)`; or a run
    of one process, `Ranks.undistributed`)? A helper's write that only `if find:` of a constructor
    reaches, where every call of the constructor passes `find=False`, never runs (before, only the
    branches of the write's own function were asked); nor, on a rank of the group, a save two
    calls down that only the launcher's inference branch asks for (`iterate(..., save_path=d)`,
    the workers' `iterate(model, loader, optimizer)` passing none: geraseva/masif_npi, decision 0218)."""
    f = ctx.facts
    if left_out(f, node, func, site):
        return True
    outer = f.scope(site)
    entries = f.entries(outer) if isinstance(outer, cst.FunctionDef) and depth else []
    alone = {s for s in entries if ctx.script.launcher.only(s) or ctx.ranks.undistributed(s)}
    return len(alone) < len(entries) and all(s in alone or _left_out_by(ctx, site, outer, s, depth - 1) for s in entries)


def _logged_on_one_rank(ctx: Context, call: cst.Call) -> bool:
    """A tensorboard writer made on every process through which every process but one logs
    nothing: each of its uses (`writes.event_writer_uses`: `tb.add_scalar(...)`, through names,
    attributes and calls) is a write DDP006 would not report. The other processes leave an empty
    events file, no curve logged twice."""
    if (ctx.facts.qualify(call.func) or "") not in writes.EVENT_WRITERS:
        return False
    uses = writes.event_writer_uses(ctx.facts, call)
    return bool(uses) and not any(_on_every_rank(ctx, use, None) for use in uses)


def _told_main_process(ctx: Context, call: cst.Call) -> bool:
    """A write told whether this is the main process and writing there only: `model.save_pretrained(d,
    is_main_process=accelerator.is_main_process)` (Hugging Face's `save_pretrained` writes nothing
    where it is False)."""
    return any(a.keyword is not None and MAIN_PROCESS_WORDS.fullmatch(a.keyword.value) is not None
               and ctx.ranks.rank_dependent(a.value) for a in call.args)


def _callers_elsewhere(ctx: Context, call: cst.CSTNode, write: bool = True) -> list[cst.Call]:
    """The calls of the checked file that run the function holding `call`, a function of another
    file of the program, on every rank, directly or through functions of any file between them
    (a trainer's `self.save_best_checkpoint()` of a base class in another module, whose
    `_save_checkpoint` calls `torch.save`; `fusion()` of a module whose function calls
    `utils/misc.save_hdf5()`, which writes). Each function is asked once for each call in it
    that leads to the write. A call that leaves out the branch of its callee holding the call
    that leads on, at any step (`left_out`: `StockHeadlineDataset(..., find_valid_samples=False)`
    whose `__init__` calls the writing `self._find_valid_samples()` only `if find_valid_samples:`),
    does not run the write; before, only the write's own function's branches were asked. Not
    `write` (a `torch.load` of DDP014, decision 0260): a "main process first" block or a file lock
    orders the processes, and each still runs the call."""
    f = ctx.facts
    if f.program is None:
        return []
    home, entry = f.program.part_of(call, f.parents), f.program.parts[0]
    found: list[cst.Call] = []
    # (a function, the class whose instance must run it, the node in it that leads to the write)
    frontier: list[tuple[cst.CSTNode | None, cst.ClassDef | None, cst.CSTNode]] = [(f.scope(call), None, call)]
    seen: set = set()
    while frontier:
        reached = []
        for func, needed, inner in frontier:
            if not isinstance(func, cst.FunctionDef) or (func, needed, inner) in seen:
                continue
            seen.add((func, needed, inner))
            for site in f.call_sites(func):
                if _on_one_rank(ctx, site, func) or ctx.ranks.undistributed(site) or left_out(f, inner, func, site) \
                        or write and (ctx.ranks.main_first(site, write=call) or writes.under_file_lock(f, site)):
                    continue  # (under a file lock the processes write in turn; a load runs on each all the same)
                runs = _dispatched_to(f, site, func, needed)
                if runs is False:
                    continue  # `trainer.train()` of a `DDPTrainer`: never a sibling subclass's override
                if f.program.part_of(site, f.parents) is entry is not home:
                    if (runs is None or _made_on(f, f.scope(site), runs)) and _run_by_the_file(ctx, f.scope(site)):
                        found.append(site)
                else:
                    reached.append((f.scope(site), runs, site))
        frontier = reached
    return found


def _run_by_the_file(ctx: Context, scope: cst.CSTNode | None) -> bool:
    """Does the checked file run `scope`, the function (or top level) of a call that leads to
    another file's write, as it runs the functions whose own writes DDP006 asks about
    (`_on_every_rank`): the top level, a method (its class may be built by another file: a
    trainer's methods, as before), a decorated function (the decorator may register it: a handler
    of the project's event bus), or a function of the module called or handed on here
    (`ranks.entry_point`) or one that joins every process itself (`joins_every_process`)?

    Before: ACE-LoRA's lora.py holds `run_model`, the single-GPU trainer train.py calls (nothing
    in lora.py does; no process group, no wrap), and `run_model_multi_gpu`, the DDP one: the
    `save_lora(...)` call in `run_model` was "runs a file write of loralib/utils.py on every rank"
    (DDP006), while that function's own `open(..., "w")` writes were rightly left alone; now its
    calls are left alone too, and so is a helper's write that only such calls run (checking the
    helper's module, whose program holds the file that imports it; not a function also handed on
    by name, `mp.spawn(train, ...)` in the same uncalled `main` as `train(0, args)`: the launcher
    runs it)."""
    return not isinstance(scope, cst.FunctionDef) or ctx.facts.enclosing_class(scope) is not None \
        or bool(scope.decorators) or ctx.ranks.entry_point(scope) or ctx.ranks.joins_every_process(scope)


def _made_on(f, func: cst.CSTNode | None, needed: cst.ClassDef, depth: int = 4) -> bool:
    """Is `func`, a method that runs a write only on an instance of the class `needed`, called on
    one: on `self` by a method called so in turn, or on an object that may be of that class
    (`AdversarialDDPTrainer(cfg).train()`)? A method no call of the program reaches is taken to be
    (a framework may call it)."""
    if not isinstance(func, cst.FunctionDef) or not depth:
        return True
    sites = f.call_sites(func)
    runs = [(site, _dispatched_to(f, site, func, needed)) for site in sites]
    return not sites or any(r is None or r is not False and _made_on(f, f.scope(site), r, depth - 1) for site, r in runs)


def _dispatched_to(f, site: cst.Call, func: cst.FunctionDef, needed: cst.ClassDef | None) -> cst.ClassDef | None | bool:
    """Does the call `site` run `func` for the object it is made on? `self._pre_training()` in
    `Trainer.train` runs a subclass's override (`AdversarialTraining._pre_training`) only where
    `self` is an instance of that subclass: the class the walk from the write back to the checked
    file then needs, through the callers of `Trainer.train` on `self` alike, up to a call on an
    object whose classes are known (`trainer = DDPTrainer(cfg)`, `trainer.train()`), which runs it
    only if one of them is that class or below it. The class still needed (None: any), or False
    where the call never runs `func`.

    Before: a base class's method reached every override of its subclasses, so a trainer's
    `train()` reported the image write of a sibling subclass this trainer is not."""
    owner = f.enclosing_class(func)
    receiver = site.func.value if isinstance(site.func, cst.Attribute) else None
    if receiver is not None and dotted(receiver) == "self":
        caller = f.enclosing_class(site)
        if owner is not None and caller is not None and caller is not owner and owner not in f.lineage(caller) \
                and caller in f.lineage(owner):
            needed = owner if needed is None or needed in f.lineage(owner) else needed  # an override below the caller's class
        return needed if needed is None or caller is None or caller in f.lineage(needed) else False
    if needed is None or receiver is None:
        return None
    classes = f._instances_of(receiver)
    return None if not classes or any(needed in f.lineage(cls) for cls in classes) else False


def _on_one_rank(ctx: Context, site: cst.Call, func: cst.FunctionDef) -> bool:
    """Does the call `site` of `func` run it on some ranks only: under a rank test, or through an
    object that every rank but one has rebound to an object of another class of the program
    before the call (`if rank == 0: saver = Saver(d)` / `else: saver = NoOp()`, then
    `saver.save(model)`: the no-op object's method writes nothing)?"""
    if ctx.ranks.on_some_ranks(site):
        return not ctx.ranks.all_but_one(site)
    f = ctx.facts
    if isinstance(site.func, cst.Name) and _bound_on_one_rank(ctx, site):
        return True
    owner = site.func.value if isinstance(site.func, cst.Attribute) and dotted(site.func.value) else None
    ref = f.ref(owner) if owner is not None else None
    if ref is None or (cls := f.enclosing_class(func)) is None:
        return False
    writes = [(value, stmt) for _, value, stmt in f.writes(ref) if f.scope(stmt) is f.scope(site) and f.before(stmt, site)]
    flow = objects_of(f)
    return any(isinstance(value, cst.Call) and ctx.ranks.all_but_one(value) and (other := flow.constructs(value)) is not None
               and other is not cls and not any(f.before(stmt, later) for _, later in writes)
               for value, stmt in writes)


def _bound_on_one_rank(ctx: Context, site: cst.Call) -> bool:
    """Is the name `site` calls a global of its module that only functions declaring it `global`
    bind, each under a rank test that holds on one rank (`global log` ... `if rank == 0: log,
    writer = utils.set_save_path(path)`), and nothing at the module's top level (no `def`, import
    or assignment of it)? Then the other ranks never hold what it calls (they raise NameError)."""
    f = ctx.facts
    name = site.func.value if isinstance(site.func, cst.Name) else None
    part = f.program.part_of(site, f.parents) if f.program is not None else None
    module = part.module if part is not None else None
    if name is None or module is None or any(_binds_at_top(stmt, name) for stmt in module.body):
        return False
    stores = [target for g in mt.findall(module, cst.Global) if any(n.name.value == name for n in g.names)
              for target in mt.findall(f.scope(g) or module, cst.AssignTarget)
              if any(mt.is_name(n, name) for n in mt.findall(target.target, cst.Name))]
    return bool(stores) and all(ctx.ranks.on_some_ranks(t) and not ctx.ranks.all_but_one(t) for t in stores)


def _binds_at_top(stmt: cst.CSTNode, name: str) -> bool:
    """Does a statement of a module's top level bind `name`: a `def` or `class` of it, an import
    of it, an assignment to it (also inside an `if` or `try` there)?"""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return stmt.name.value == name
    for alias in mt.findall(stmt, cst.ImportAlias):
        bound = alias.asname.name if alias.asname is not None else alias.name
        if (dotted(bound) or "").split(".")[0] == name:
            return True
    nested = {id(t) for d in mt.findall(stmt, (cst.FunctionDef, cst.ClassDef)) for t in mt.findall(d, cst.AssignTarget)}
    return any(mt.is_name(n, name) for t in mt.findall(stmt, cst.AssignTarget) if id(t) not in nested
               for n in mt.findall(t.target, cst.Name))


def _file_writes(ctx: Context):
    """(call, the path or file it writes, what it is, whether it downloads) for each call of the
    script that writes a file (`ddpify.analysis.writes`: the list convert's main-process-only
    guards), makes a link (`writes.link`: `os.symlink(src, dst)`, `latest.symlink_to(name)`, which
    main-process-only guards too) or downloads into one (`writes.download`: `urlretrieve(url, path)`, ...)."""
    f = ctx.facts
    for call in f.calls:
        if never_runs(f, call):  # nor its callers elsewhere
            continue
        if (what := writes.file_write(f, call)) is not None:
            yield call, writes.written_path(f, call), what, False
        elif (what := writes.download(f, call)) is not None:
            yield call, writes.download_path(f, call), what, True
        elif (what := writes.link(f, call)) is not None:
            yield call, writes.link_path(f, call), what, False
        elif (what := writes.deletion(f, call)) is not None:
            yield call, writes.deletion_path(call), what, False
        elif (what := writes.raced_folder(f, call)) is not None:
            yield call, writes.raced_folder_path(call), what, False


def _per_rank(ctx: Context, path: cst.BaseExpression) -> bool:
    """A path (or a file opened on one: `with open(f"m_{rank}.json", "w") as f`, also on a name
    that holds such a path: `p = os.path.join(d, f"beta_{i}.pt")` where `i` runs over this rank's
    own range of ids, `with open(p, "wb") as f`) that names this rank: `f"preds_{rank}.npy"`, each
    its own."""
    f = ctx.facts
    opened = [item.item for anc in f.ancestors(path) if isinstance(anc, cst.With) for item in anc.items
              if item.asname is not None and f.code(item.asname.name) == f.code(path)]
    return any(_per_rank(ctx, o) or isinstance(o, cst.Call) and (p := writes.written_path(f, o)) is not None
               and p is not o and _per_rank(ctx, p) for o in opened) or any(ctx.ranks.rank_dependent(o) or any(ctx.ranks.rank_dependent(n) for n in mt.findall(o, (cst.Name, cst.Attribute)))
               or _unique(f, o) for o in ctx.facts.origins(path))


def _null_device(ctx: Context, path: cst.BaseExpression) -> bool:
    """`open(os.devnull, "w")` (a file opened on it too: `with open(os.devnull, "w") as devnull`,
    `redirect_stdout(devnull)`): output thrown away, no file written."""
    f = ctx.facts
    opened = [item.item for anc in f.ancestors(path) if isinstance(anc, cst.With) for item in anc.items
              if item.asname is not None and f.code(item.asname.name) == f.code(path)]
    return any(_null_device(ctx, o) for o in opened) or any(
        f.qualify(o) == "os.devnull" or string_value(o) == "/dev/null" for o in f.origins(path))


def _per_sample_of_a_shard(ctx: Context, call: cst.Call, path: cst.BaseExpression) -> bool:
    """A path named after each item of what the writing function is handed (`for p in predictions:
    open(os.path.join(self.output_dir, p["file_name"]), "wb")`, DETR's `PanopticEvaluator.update`),
    where every call of that function runs inside a loop over a loader drawing from a
    DistributedSampler: each process writes the files of its own shard's samples, not the same
    files (the padding's repeats aside)."""
    f = ctx.facts
    func = f.scope(call)
    if not isinstance(func, cst.FunctionDef) or not f.entries(func):
        return False
    items = {lp.target.value for lp in f.ancestors(call) if isinstance(lp, cst.For) and f.scope(lp) is func
             and isinstance(lp.target, cst.Name) and isinstance(lp.iter, cst.Name)
             and lp.iter.value in param_names(func) and not f.writes(Ref(func, lp.iter.value))}
    named = {n.value for o in f.origins(path) for n in mt.findall(o, cst.Name)}
    return bool(items & named) and all(_in_a_sharded_loop(ctx, site) for site in f.entries(func))


def _in_a_sharded_loop(ctx: Context, node: cst.CSTNode) -> bool:
    """Does `node` run inside a `for` over a loader built with a DistributedSampler (`sampler=` one
    of whose values is one; `ddpify.analysis.shards`)?"""
    return bool(ctx.shards.loops(node))


def _drawn_from_a_shard(ctx: Context, call: cst.Call, path: cst.BaseExpression, depth: int = 2) -> bool:
    """A path computed from a batch that a loop over a sharded loader draws (`Shards.drawn`):
    `for i, batch in enumerate(test_loader): index = batch["indexes"]; scene = paths[index];
    open(f"{scene}.txt", "w")`, where the loader's sampler is a DistributedSampler: each process
    writes the files of its own shard's samples (CPCM's per-scene predictions, decision 0234). Also
    in a helper every call of which (`depth` calls up) passes such a value for the parameter the
    path is computed from (`visualize(batch, out)` in the loop, whose `names = batch["names"]`
    names the files), and from what a method stores on the instance (`self.cache["indexes"] =
    batch["indexes"]` in the step the loop calls, read by the method that saves; decision 0241).
    Not a path from the epoch number, the loop's count (`i`) or a constant (the same on every
    process), nor one from the batch of a loader without such a sampler (every process draws the
    same data)."""
    return ctx.shards.drawn(call, path, depth)


# calls that answer a name no other process gets: a random UUID, a fresh temporary file
UNIQUE_NAMES = frozenset({"uuid1", "uuid4", "mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryDirectory"})


def _unique(f, expr: cst.BaseExpression, depth: int = 2) -> bool:
    """A path made unique per process: `f"batch-{uuid4()}.pt"`, `tempfile.mkstemp()[1]`,
    `tempfile.NamedTemporaryFile()`, the folder of `with tempfile.TemporaryDirectory() as d:` and
    a path built on it (`Path(d)`) (of the `uuid` or `tempfile` module, or a helper so named)."""
    ref = f.ref(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    if ref is not None and depth and any(_unique(f, whole, depth - 1) for whole in [*f.unpacked_from(ref), *f.entered(ref)]):
        return True  # `handle, path = tempfile.mkstemp()`, `with tempfile.TemporaryDirectory() as d:`
    calls = [expr] if isinstance(expr, cst.Call) else []
    return any((f.qualify(c.func) or dotted(c.func) or "").rsplit(".", 1)[-1] in UNIQUE_NAMES
               for c in calls + list(mt.findall(expr, cst.Call))) or depth > 0 and any(
        _unique(f, n, depth - 1) for n in mt.findall(expr, cst.Name) if n is not expr)  # `Path(temp_dir)`


def _guard(stmt: cst.CSTNode, dist: str):
    def fix(edits) -> None:
        edits.guard(stmt, f"not {dist}.is_initialized() or {dist}.get_rank() == 0", "saved on rank 0 only")
    return fix


@rule("DDP007", fixable=True)
def save_wrapper(ctx: Context) -> Iterator[Hit]:
    """A checkpoint of the DDP wrapper (`module.` keys) instead of the model.

    Wrong:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(Net().cuda())
        torch.save(model.state_dict(), "model.pt")

    Right:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(Net().cuda())
        torch.save(model.module.state_dict(), "model.pt")

    The wrapper's `state_dict()` names every weight `module.<name>`: the checkpoint does not load
    into the plain model (evaluation, export, a single-GPU run) without renaming the keys, and
    `torch.save(model)` pickles the wrapper, which needs a process group to load. Save
    `model.module` (of a compiled wrapper, `torch.compile(DDP(model))`, the keys start with
    `_orig_mod.module.`, which the finding names). Also found for a state dict peft's
    `get_peft_model_state_dict(model)` takes of the wrapper (its keys the wrapper's, filtered), and for one handed to any other file write
    (`ddpify.analysis.writes`: safetensors' `save_file(sd, path)`, diffusers'
    `save_lora_weights(dir, unet_lora_layers=sd)`, `pickle.dump`). Also found for a dict keyed by the names the wrapper's `named_modules()` or
    `named_parameters()` gives, as they are (`for name, m in model.named_modules():
    sd.update({f"{name}.lora.{k}": v ...})`, `sd[name] = p`; also in a helper of another module
    that the wrapper is handed to), not for a name with the prefix taken off first (`name[7:]`).
    A save in a helper of another module that the wrapper is handed to (`save_checkpoint(run_dir,
    ddp_model, optimizer)`, whose `save_file(model.state_dict(), path)` is in checkpointing.py) is
    reported at the checked file's call that hands it (at a call that may run any of several
    classes' methods, an object of a class the program picks by name, only where each of them saves it).
    Not reported where the script resumes by loading a checkpoint, as read, back
    into the same wrapper (not a load that runs before the wrap binds it, `self._load_snapshot(path)`
    in `__init__` above `self.model = DDP(self.model, ...)`: it loads into the bare model), in a file that resume may read (its own resume expects the `module.`
    keys; still reported where a one-process script beside it, naming no DistributedDataParallel,
    loads that file by its name, and the entry the save writes, into its model as read:
    `model.load_state_dict(torch.load("./checkpoints/final_model.pt")["model_params"])`; still
    reported for `best_{epoch}.pth` where the resume reads `latest.pth`, and for a bare
    state dict saved beside a dict whose `"model"` entry the resume reads; the load as the last
    assignment before it leaves it, not a dict the same loop builds to save; an entry of the load, a
    comprehension that keeps its keys, a conversion of it, not a dict made later for a save),
    also through a function of the program that does so on a parameter or a `**kwargs` value it
    is given (`restart(path, state_dict=model)`), or
    hands the wrapper to a loader of another module that ddpify does not read
    (`load_checkpoint(path, encoder=encoder)`: what keys it expects is not known here), nor in a
    program whose own loader fits the keys (it asks whether they start with `module.`,
    `k[:7] == "module."` too, itself or in a helper it calls, retries a failed load with the
    prefix taken off, or takes it off every key before loading into the bare model,
    `{k.replace("module.", ""): v ...}`, `k[7:]`, or cuts each key from where the model's own
    names start, `k[k.find("blocks"):]`, or pairs each model key with the saved key that contains
    it, `for k2 in saved.keys(): if k1 in k2:`: the wrapper's checkpoint then loads into it;
    not where another load of the program reads the save's file and entry as is into the bare
    model, `net.load_state_dict(torch.load(path))`, which wants the model's own keys; a load of a
    dict's `"net"` entry as is reads nothing of a bare state dict saved whole), nor for a file a
    script beside the checked one reads by its name and takes the prefix off in the same function,
    as the program's own loaders are asked (an evaluation script's `{k.replace("module.", ""): v ...}`
    of `final_model.pth`), or reads by a path it is given and takes the prefix off the entry the
    save writes (a test script's `torch.load(opt.model_path)` and `k[7:]` over `ckpt["G1"]`), nor
    for another file of the same model as such a file (its per-epoch snapshots,
    `f"model_epoch_{n}.pth"`, which that reader reads in the same way), nor where
    the name is not the wrapper there: the other arm of `hasattr(model, "module")` or of the test
    the script wraps under, the true side of a test every wrap is on the false side of, also around
    the calls of a helper that wraps (`if use_fsdp: save(net)` where only the `else` of `if use_fsdp:`
    calls `load_ddp_model`, which builds the DDP wrapper), the `else` of a test that the run has several processes
    (`dist.is_initialized()`, a flag every process group starts under: no group, no wrapper), the
    true side of `isinstance(model, Net)` (a class of the program no wrapper class derives from),
    the other side of a test that saves `model.module` where every wrap of the script runs on
    every run (`if args.multi_gpu_flag: save(model.module) else: save(model)`: the program's own
    test of the wrap, in a helper a one-process script calls too), after
    `if args.distributed: model = model.module`. `--fix` adds
    `.module` where the name holds the wrapper on every path.
    """
    f = ctx.facts
    if not ctx.ddp_refs or _loader_fits_either_keys(ctx):
        return
    # where a loader takes the prefix off, only the saves a load as read into the bare model may read
    as_read = _bare_loads_as_read(ctx) if _strips_into_bare_model(ctx) else None
    resumed = _resumed_into_wrapper(ctx)
    torch_saves = frozenset(ctx.script.calls_of("torch.save"))
    handed: list[tuple[cst.BaseExpression, str]] = []  # saves of a wrapper a helper of another module is handed
    saves = [(call, saved, path, _saved_state_dicts(ctx, call, saved, torch_saves))
             for call, saved, path in _checkpoint_saves(ctx, torch_saves)]
    # a model one of whose files a script beside reads, taking the prefix off: its other files (per-epoch
    # snapshots of the same model) are read the same way
    stripped = {f.code(expr) for _, _, path, candidates in saves for expr, _, entry in candidates
                if _stripped_by_a_script_beside(f, path, entry)}
    for call, saved, path, candidates in saves:
        for expr, what, entry in candidates:
            holds = ctx.holds_ddp(expr)
            if holds is None or _resumes(f, resumed, expr, path, entry) and not _loaded_bare_beside(f, path, entry) \
                    or ctx.unwrapped_here(expr) \
                    or f.code(expr) in stripped or as_read is not None and not _reads(f, as_read, path, entry):
                continue
            if f.in_library(expr):  # a helper of another module saves the wrapper it is handed
                handed.append((expr, what))
                continue
            if _compiled_wrapper(ctx, expr):  # `torch.compile(DDP(model))`: its keys start with `_orig_mod.module.`
                what = what.replace("start with `module.`", f"start with `{COMPILED}{PREFIX}`")
            yield Hit(expr, f"this checkpoint saves {what}: it does not load into the model itself; save "
                            f"`{f.code(expr)}.module`", _module_of(expr) if holds == WRAPPER else None)
        for expr, method in _keyed_by_wrapper_names(ctx, saved):
            if not _resumes(f, resumed, expr, path, None) and not ctx.unwrapped_here(expr) \
                    and (as_read is None or _reads(f, as_read, path, None)):
                yield Hit(expr, f"this checkpoint's keys are names from `{f.code(expr)}.{method}()` of the DDP wrapper, "
                                f"which start with `{COMPILED if _compiled_wrapper(ctx, expr) else ''}{PREFIX}`: it does "
                                "not load into the model itself; iterate "
                                f"`{f.code(expr)}.module.{method}()`")
    saving = {f.scope(expr) for expr, _ in handed}
    for expr, what in handed:
        for site, arg in _entry_sites(f, expr):
            # a call that may run any of several classes' methods (an object of a class picked by name: a recorder
            # from a registry) saves the wrapper where each of them does, not where one strips `.module` first
            callees = f.user_functions(site)
            if ctx.holds_ddp(arg) is None or ctx.unwrapped_here(arg) or len(callees) > 1 and not saving.issuperset(callees):
                continue
            yield Hit(site, f"`{f.code(site.func)}()` saves the DDP wrapper it is handed ({what}, in "
                            f"`{f.scope(expr).name.value}`): it does not load into the model itself; hand it "
                            "the model (`.module`)")


def _saved_state_dicts(ctx: Context, call: cst.Call, saved: cst.BaseExpression,
                       torch_saves: frozenset[cst.Call]) -> list[tuple[cst.BaseExpression, str, tuple[str, ...] | None]]:
    """(module, what is saved, its entry of the file) for each state dict a save writes: the saved
    object itself (by torch.save), or the state dicts it is made of, followed through names
    (`state = {"model": model.state_dict()}` ... `torch.save(state, path)`), each with the entry of
    the file it is in (`("model",)`; `()` the whole file; None not known)."""
    f = ctx.facts
    candidates = [(saved, "the DDP wrapper", ())] if dotted(saved) and call in torch_saves else []
    plain = _plainly_from(f, saved)
    for built in dict.fromkeys(_made_of(f, saved)):
        candidates += [(model, f"`{f.code(c)}`, whose keys start with `module.`", _entry(f, c, built, plain))
                       for c in f.calls_in(built) if (model := _state_dict_of(f, c)) is not None]
    return list(dict.fromkeys(candidates))



def _stripped_by_a_script_beside(f, path: cst.BaseExpression | None, entry: tuple[str, ...] | None = None) -> bool:
    """Does a script beside the checked one (its folder), outside its program, read the file this
    save writes and take the wrapper's `module.` prefix off the keys (`_takes_prefix_off`, the
    question asked of the program's own loaders), in the same function (or at its top level):
    `torch.load(os.path.join(d, "final_model.pth"))` then `{k.replace("module.", ""): v ...}` in an
    evaluation or plotting script of the project? It reads the file by its literal name, or by a
    path it is given (`torch.load(opt.model_path)`, `torch.load(config["checkpoint_dir"])`: no file
    named in its loads) taking the prefix off the entry this save writes (`ckpt["G1"]` of a save of
    `{"G1": net.state_dict(), ...}`; the whole file where the save is a bare state dict), where no
    script beside names the file (one that reads it by its name as it is decides). The project's
    own reader of the checkpoint then loads it into the bare model."""
    if f.program is None:
        return False
    checked = f.program.parts[0].path.resolve()
    scripts = [script for script in sorted(f.program.root.glob("*.py")) if script.resolve() != checked]
    readers = [r for script in scripts for r in _stripping_scopes(script)]
    pieces = _file_name(f, path) if path is not None else None
    name = "".join(p for p in pieces or [] if p is not None)
    if pieces and None not in pieces and name:
        if any(_names(r.texts, name) for r in readers):
            return True
        if any(_names(_strings(script), name) for script in scripts):
            return False  # read by its name elsewhere, as it is: that reader decides
    if entry is None or len(entry) > 1:
        return False
    return any(not r.named and (not entry or entry[0] in r.entries) for r in readers)


def _loaded_bare_beside(f, path: cst.BaseExpression | None, entry: tuple[str, ...] | None) -> bool:
    """Does a script beside the checked one (its folder), outside its program, that never wraps a
    model in DDP, load the file this save writes by its name and hand what it reads to
    `load_state_dict` as it is, in the same function (or at its top level), reading the entry the
    save writes where the save writes one (`ckpt["model_params"]`)? Its one-process model wants
    the model's own keys, whatever the checked program's own resume into the wrapper reads:

        # main_distributed.py, checked: resumes into the wrapper, saves the wrapper's keys
        model = DDP(model); model.load_state_dict(torch.load(p)["model_params"]) ...
        torch.save({"model_params": model.state_dict()}, "./checkpoints/final_model.pt")
        # main.py beside it, one process:
        model.load_state_dict(torch.load("./checkpoints/final_model.pt")["model_params"])
        before: no finding (the resume reads the `module.` keys back)
        after:  DDP007 at the save (main.py's load fails on them)
    """
    pieces = _file_name(f, path) if f.program is not None and path is not None else None
    name = "".join(p for p in pieces or [] if p is not None)
    if not pieces or None in pieces or not name:
        return False
    checked = f.program.parts[0].path.resolve()
    return any(_names(texts, name) and (not entry or entry[0] in entries)
               for script in sorted(f.program.root.glob("*.py")) if script.resolve() != checked
               for texts, entries in _bare_loading_scopes(script))


@functools.lru_cache(maxsize=256)
def _bare_loading_scopes(script: Path) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """(the strings of its `torch.load`s' files, the keys it reads) of each function of `script`
    (and of its top level) that loads a checkpoint and calls `load_state_dict` without taking the
    `module.` prefix off (`_takes_prefix_off`), where the script never names
    DistributedDataParallel (a one-process script)."""
    module = _parsed(script)
    if module is None or any(n.value == "DistributedDataParallel" for n in mt.findall(module, cst.Name)):
        return ()
    facts = Facts(module)
    found = []
    for scope in _scopes(facts, module):
        loads = [c for node in scope for c in facts.calls_in(node) if facts.qualify(c.func) == "torch.load" and c.args]
        if loads and any(mt.is_method_call(c, "load_state_dict") for node in scope for c in facts.calls_in(node)) \
                and not any(_takes_prefix_off(facts, node) for node in scope):
            found.append((frozenset(_texts([c.args[0].value for c in loads])), _keys_read(scope)))
    return tuple(found)


def _scopes(facts: Facts, module: cst.Module) -> list[list[cst.CSTNode]]:
    """Each function of a script, and its top level with functions and classes left out."""
    scopes: list[list[cst.CSTNode]] = [[func] for func in facts.by_type.get(cst.FunctionDef, [])]
    scopes.append([s for s in module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))])
    return scopes


def _keys_read(scope: list[cst.CSTNode]) -> frozenset[str]:
    """The keys a scope reads by a string (`ckpt["G1"]`)."""
    return frozenset(key for node in scope for sub in mt.findall(node, cst.Subscript) if len(sub.slice) == 1
                     and isinstance(sub.slice[0].slice, cst.Index)
                     and (key := string_value(sub.slice[0].slice.value)) is not None)


def _names(texts: frozenset[str], name: str) -> bool:
    """Is one of `texts` the file name `name`, or a path ending in it?"""
    return any(text == name or text.endswith(("/" + name, "\\" + name)) for text in texts)


class _Reader(NamedTuple):
    texts: frozenset[str]  # the strings written in the function (a file name among them)
    named: bool  # one of its loads names a file (a string with a dot or a slash in its path)
    entries: frozenset[str]  # the keys it reads by a string (`ckpt["G1"]`)


@functools.lru_cache(maxsize=256)
def _stripping_scopes(script: Path) -> tuple[_Reader, ...]:
    """Each function of `script` (and its top level, functions left out) that loads a checkpoint
    (`torch.load`) and takes the `module.` prefix off keys (`_takes_prefix_off`:
    `.replace("module.", "")`, `k[7:]`, `removeprefix("module.")`, a cut from where the model's
    names start) or loads a state dict into a wrapper whose keys have it (`_loads_into_a_wrapper`:
    `model = nn.DataParallel(model)` then `model.load_state_dict(ckpt["state_dict"])`): the
    strings written in it, whether one of its loads names a file (a string with a dot or a slash
    in its first argument; `config["checkpoint_dir"]` names none), and the keys it reads."""
    module = _parsed(script)
    if module is None:
        return ()
    facts = Facts(module)
    readers = []
    for scope in _scopes(facts, module):
        loads = [c for node in scope for c in facts.calls_in(node) if facts.qualify(c.func) == "torch.load" and c.args]
        if loads and any(_takes_prefix_off(facts, node) or _loads_into_a_wrapper(facts, node) for node in scope):
            named = any(re.search(r"[./\\]", text) for c in loads for text in _texts([c.args[0].value]))
            readers.append(_Reader(frozenset(_texts(scope)), named, _keys_read(scope)))
    return tuple(readers)


@functools.lru_cache(maxsize=256)
def _strings(script: Path) -> frozenset[str]:
    """The strings written anywhere in a script beside the checked one."""
    module = _parsed(script)
    return frozenset(_texts([module])) if module is not None else frozenset()


@functools.lru_cache(maxsize=256)
def _parsed(script: Path) -> cst.Module | None:
    """A script beside the checked one, parsed (None where it cannot be read, or names no load)."""
    try:
        source = script.read_bytes()
        return cst.parse_module(source) if b"load" in source else None
    except (OSError, cst.ParserSyntaxError, UnicodeDecodeError):
        return None


def _texts(nodes: list[cst.CSTNode]) -> list[str]:
    """The strings written in `nodes`: each literal, and each literal part of an f-string."""
    return [*(v for n in nodes for s in mt.findall(n, cst.SimpleString) if (v := string_value(s)) is not None),
            *(p.value for n in nodes for s in mt.findall(n, cst.FormattedString) for p in s.parts
              if isinstance(p, cst.FormattedStringText))]


def _entry_sites(f, node: cst.CSTNode, depth: int = 3) -> list[tuple[cst.Call, cst.BaseExpression]]:
    """The checked file's calls (and what each passes) that hand the object `node` names to the function of a module it
    imports that saves it: `node`'s root name is a parameter of the function around it, and a call
    passes it (from the checked file, or through a parameter of the functions between them, at most
    `depth` calls deep) where the call's literal arguments do not skip `node`
    (`call_branches.left_out`)."""
    func = f.scope(node)
    root = (dotted(node) or "").split(".")[0]
    if not isinstance(func, cst.FunctionDef) or depth == 0 or root not in param_names(func):
        return []
    found: list[tuple[cst.Call, cst.BaseExpression]] = []
    for site in f.call_sites(func):
        arg = f.argument_for(site, func, root)
        if arg is None or left_out(f, node, func, site):
            continue
        found += [(site, arg)] if not f.in_library(site) else _entry_sites(f, arg, depth - 1)
    return list(dict.fromkeys(found))


PREFIX = "module."  # what the wrapper's `state_dict()` puts before every key
COMPILED = "_orig_mod."  # what `torch.compile`'s module puts before the keys of the module it compiles


def _compiled_wrapper(ctx: Context, expr: cst.BaseExpression) -> bool:
    """Does the name `expr` hold the DDP wrapper compiled (`model = torch.compile(DDP(model))`, or
    `self.model = DDP(self.model)` then `self.model = torch.compile(self.model)`: the last
    assignment of the name in the function that wraps it)? Its `state_dict()` keys start with
    `_orig_mod.module.`, not `module.` (Zhiyang-Z/Traj-Transformer, decision 0218). Not a wrap of
    a compiled model, `DDP(torch.compile(model))`, whose keys start with `module._orig_mod.`."""
    f = ctx.facts
    ref = f.ref(expr)
    writes_of = f.writes(ref) if ref is not None else []
    wraps = ctx.script.calls_of(DDP)

    def wrapped(value: cst.BaseExpression) -> bool:
        return value in wraps or ref is not None and f.ref(value) == ref
    for _, value, stmt in writes_of:
        if not (isinstance(value, cst.Call) and f.qualify(value.func) == "torch.compile"
                and (arg := mt.positional(value, 0)) is not None and wrapped(arg.value)):
            continue
        if arg.value in wraps:
            return True
        scope = f.scope(stmt)
        later = [s for _, v, s in writes_of if f.scope(s) is scope and f.before(stmt, s)]
        if not later and any(v in wraps and f.scope(s) is scope and f.before(s, stmt) for _, v, s in writes_of):
            return True
    return False
# library functions that take a module's state dict as its `state_dict()` keys it (peft's: the
# adapter's entries of it, the keys kept), the module their first argument
STATE_DICT_OF = frozenset({"peft.get_peft_model_state_dict", "peft.utils.get_peft_model_state_dict",
                           "peft.utils.save_and_load.get_peft_model_state_dict"})


def _checkpoint_saves(ctx: Context, torch_saves: frozenset[cst.Call]) \
        -> Iterator[tuple[cst.Call, cst.BaseExpression, cst.BaseExpression | None]]:
    """(call, what it saves, the path) for each checkpoint save: `torch.save(obj, path)`, and each
    value handed to another file write (`writes.file_write`: safetensors' `save_file(sd, path)`,
    diffusers' `save_lora_weights(dir, unet_lora_layers=sd)`), the path not among them."""
    f = ctx.facts
    for call in f.calls:
        if call in torch_saves:
            saved, path = mt.positional(call, 0), mt.positional(call, 1) or mt.keyword(call, "f")
            if saved is None and call.args and call.args[0].star == "*":
                saved = call.args[0]  # `torch.save(*args, **kwargs)` of a helper: the first thing its callers hand it
            if saved is not None:
                yield call, saved.value, path.value if path else None
        elif writes.file_write(f, call) is not None:
            path = writes.written_path(f, call)
            for arg in call.args:
                if arg.value is not path and not arg.star:
                    yield call, arg.value, path


def _resumes(f, resumed: dict[str, list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]]],
             expr: cst.BaseExpression, path: cst.BaseExpression | None, entry: tuple[str, ...] | None) -> bool:
    """Does the program resume the wrapper `expr` from the file a save writes to `path`, reading the
    entry `entry` of it back (`model.load_state_dict(ckpt["model"])` reads a dict's `"model"`,
    not a bare state dict saved beside it)? A load or a save whose entry is not known fits any."""
    return _reads(f, resumed.get(f.code(expr), []), path, entry)


def _reads(f, loads: list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]], path: cst.BaseExpression | None,
           entry: tuple[str, ...] | None) -> bool:
    """May one of these loads (the path read, the entry taken of it) read what a save writes to
    `path` as the entry `entry`? A load or a save whose entry is not known fits any."""
    paths = [p for p, e in loads if e is None or entry is None or e == entry]
    return bool(paths) and _may_read(f, paths, path)


def _plainly_from(f, saved: cst.BaseExpression, depth: int = 4) -> list[cst.BaseExpression]:
    """`saved` and what it holds as a whole: the values its name is assigned (not items stored
    into it), what a function of the program returns, what every call of a save helper passes
    the parameter it saves (`def save_checkpoint(state, d, epoch): torch.save(state, ...)`,
    `save_checkpoint({"state_dict": model.state_dict(), ...}, d, epoch + 1)`), as deep.

    The parameter: before, the dict a save helper is handed was not held whole, so the entry its
    `model.state_dict()` is was not known (`_entry`: None), and a reader of the `"state_dict"`
    entry beside the script (rxtan2's evaluation script) was not asked; now it is
    `("state_dict",)`."""
    found = [saved]
    if depth and isinstance(saved, cst.Call) and not f.builds(saved):
        found += [p for func in f.user_functions(saved) for r in f.returned(func) for p in _plainly_from(f, r, depth - 1)]
    ref = f.ref(saved) if isinstance(saved, cst.Name) and depth else None
    if ref is not None:
        found += [p for _, value, stmt in f.writes(ref) if not isinstance(stmt, cst.AugAssign)
                  for p in _plainly_from(f, value, depth - 1)]
        func = ref.scope
        if isinstance(func, cst.FunctionDef) and ref.name in param_names(func):
            found += [p for site in f.call_sites(func) if (arg := f.argument_for(site, func, ref.name)) is not None
                      for p in _plainly_from(f, arg, depth - 1)]
    return found


def _entry(f, call: cst.CSTNode, built: cst.BaseExpression, plain: list[cst.BaseExpression]) -> tuple[str, ...] | None:
    """The entry of the saved file that `call` (a state dict) is: the keys of the dicts written out
    around it in `built` (`{"model": model.state_dict()}` or `dict(model=model.state_dict())`:
    `("model",)`; the state dict itself: `()`), where the save holds `built` as a whole (`plain`);
    None where not known (a key not a string, a list, a dict filled item by item)."""
    if not any(b is built for b in plain):
        return None
    keys: list[str] = []
    for anc in [call, *f.ancestors(call)]:
        if anc is built:
            return tuple(reversed(keys))
        parent = f.parent(anc)
        if isinstance(parent, cst.DictElement) and anc is parent.value:
            key = string_value(parent.key)
            if key is None:
                return None
            keys.append(key)
        elif isinstance(parent, cst.Arg) and anc is parent.value and parent.keyword is not None \
                and isinstance(holder := f.parent(parent), cst.Call) and mt.is_name(holder.func, "dict"):
            keys.append(parent.keyword.value)  # `dict(model=model.state_dict())`: its `"model"` entry
        elif isinstance(parent, (cst.Element, cst.StarredDictElement, cst.StarredElement)):
            return None
    return None


def _state_dict_of(f, call: cst.Call) -> cst.BaseExpression | None:
    """The module whose state dict `call` takes: `model` of `model.state_dict()`, of
    `get_peft_model_state_dict(model)` (`STATE_DICT_OF`); None for another call."""
    if mt.is_method_call(call, "state_dict"):
        return call.func.value
    first = mt.positional(call, 0)
    return first.value if first is not None and f.qualify(call.func) in STATE_DICT_OF else None


def _loader_fits_either_keys(ctx: Context) -> bool:
    """Does a function of the program load a state dict (`.load_state_dict(...)`) with or without
    the wrapper's `module.` prefix: one that asks whether the keys have it
    (`list(sd)[0].startswith("module.")`, `"module." in k`, `k[:7] == "module."`), itself or in a
    function of the program it calls, two calls deep, or that renames the keys in the handler of a
    failed load (`try: model.load_state_dict(sd)` `except RuntimeError: ... {k[7:]: v ...}`)? A
    checkpoint with the wrapper's keys loads back wherever the program loads it. Not a loader that
    only puts the prefix on (`f"module.{k}"`: it loads the model's own keys into a wrapper). One
    that takes it off every key (`{k.replace("module.", ""): v ...}`, `k[7:]`,
    `k.removeprefix("module.")`; `model.load_state_dict(read(path))` where `read` returns
    `strip(torch.load(path))`) is `_strips_into_bare_model`'s."""
    f = ctx.facts
    for func in (func for funcs in f.functions.values() for func in funcs):
        if not any(mt.is_method_call(c, "load_state_dict") for c in f.calls_in(func)):
            continue
        retried = [h for t in mt.findall(func, cst.Try) if any(mt.is_method_call(c, "load_state_dict")
                                                                for c in f.calls_in(t.body))
                   for h in t.handlers if _renames_prefix(h)]
        if retried or any(_asks_prefix(f, g) for g in _called_from(f, func, depth=2)):
            return True
    return False


def _strips_into_bare_model(ctx: Context) -> bool:
    """Does a function of the program take the prefix off every key (`_takes_prefix_off`, itself or
    two calls deep) and load into a model that is not the wrapper? The wrapper's checkpoint loads
    there; only a load of the program that reads it as is into the bare model wants other keys
    (`_bare_loads_as_read`)."""
    f = ctx.facts
    return any(_loads_bare_model(ctx, func) and any(_takes_prefix_off(f, g) for g in _called_from(f, func, depth=2))
               for funcs in f.functions.values() for func in funcs
               if any(mt.is_method_call(c, "load_state_dict") for c in f.calls_in(func)))


def _bare_loads_as_read(ctx: Context) -> list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]]:
    """The loads of the program that put a checkpoint as `torch.load` read it, keys unchanged, into
    a model that is not the wrapper (`net.load_state_dict(torch.load(path))`), each with the path
    read and the entry taken of it (`_loaded_paths`). Such a load wants the model's own keys,
    whatever another loader of the program takes off (BiT's weights), of the files it may read:
    not a save of the whole state dict where it reads an entry of a dict
    (`torch.load(f)["net"]`, N4DE's pretrained sphere) nor a file of another name."""
    f = ctx.facts
    flow = objects_of(f)
    found: list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]] = []
    for call in f.calls:
        arg = mt.positional(call, 0)
        if mt.is_method_call(call, "load_state_dict") and arg is not None and _as_read(f, arg.value, call) \
                and ctx.holds_ddp(call.func.value) is None and flow.of_kind(call.func.value, MODEL):
            found += _loaded_paths(f, arg.value, call)
    return found


def _loads_bare_model(ctx: Context, func: cst.FunctionDef) -> bool:
    """Does `func` load a state dict into a model that is not the wrapper: not one that holds it
    there, and no call of `func` hands it the wrapper (`restart(path, state_dict=model)`, whose
    `value.load_state_dict(...)` loads into what it is handed)?"""
    f = ctx.facts
    if any(ctx.holds_ddp(a.value) is not None for site in f.entries(func) for a in site.args):
        return False
    return any(isinstance(c.func, cst.Attribute) and ctx.holds_ddp(c.func.value) is None
               for c in f.calls_in(func) if mt.is_method_call(c, "load_state_dict"))


def _called_from(f, func: cst.FunctionDef, depth: int) -> list[cst.FunctionDef]:
    """`func` and the functions of the program its calls run, `depth` calls deep."""
    found = [func]
    for _ in range(depth):
        found += [callee for g in found for c in f.calls_in(g) for callee in f.user_functions(c) if callee not in found]
    return list(dict.fromkeys(found))


def _asks_prefix(f, func: cst.FunctionDef) -> bool:
    """Does `func` ask whether a key starts with the wrapper's `module.` prefix
    (`k.startswith("module.")`, `"module." in k`, `k[:7] == "module."`), or match the model's keys
    inside the saved ones (`for k2 in saved.keys(): if k1 in k2:`, which finds `x` in `module.x`)?"""
    if _matches_keys_inside_keys(f, func):
        return True
    if any(mt.is_method_call(c, "startswith", "removeprefix") and any((string_value(a.value) or "").startswith(PREFIX)
                                                                       for a in c.args) for c in f.calls_in(func)):
        return True
    return any((string_value(side) or "").startswith(PREFIX) for t in mt.findall(func, cst.Comparison)
               for side in (t.left, *(c.comparator for c in t.comparisons)))


def _takes_prefix_off(f, func: cst.FunctionDef) -> bool:
    """Does `func` take the wrapper's `module.` prefix off a key (`k[7:]`, `k[len("module."):]`,
    `k.replace("module.", "")`, `k.removeprefix("module.")`), or cut every key from where a part of
    the model's own names starts (`k[k.find("blocks"):]`, through a name too), which drops
    whatever comes before it, `module.` included?"""
    cuts = [s for s in mt.findall(func, cst.Slice) if s.upper is None
            and (isinstance(s.lower, cst.Integer) and s.lower.value == str(len(PREFIX))
                 or isinstance(s.lower, cst.Call) and mt.is_name(s.lower.func, "len") and len(s.lower.args) == 1
                 and string_value(s.lower.args[0].value) == PREFIX
                 or s.lower is not None and any(mt.is_method_call(o, "find", "index") and o.args
                                                and string_value(o.args[0].value)
                                                for o in (s.lower, *f.origins(s.lower))))]
    return bool(cuts) or any(mt.is_method_call(c, "replace", "removeprefix") and c.args
                             and (string_value(c.args[0].value) or "").startswith(PREFIX)
                             and (len(c.args) < 2 or not (string_value(c.args[1].value) or "").startswith(PREFIX))
                             for c in f.calls_in(func))


# the wrappers whose `state_dict()` keys start with `module.`, as `Facts.qualify` spells them
PREFIXED_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel"})


def _loads_into_a_wrapper(f, node: cst.CSTNode) -> bool:
    """Does `node` load a state dict into a name that holds a wrapper there (`model =
    nn.DataParallel(model)` ... `model.load_state_dict(checkpoint["state_dict"])`: the last
    assignment of the name before the load is the wrap)? The wrapper's keys start with `module.`,
    as the DDP wrapper's checkpoint has them: it loads as saved.

    Before: rxtan2's evaluation script, which loads the training script's checkpoint into
    `torch.nn.DataParallel(model)`, was no reader that fits the keys, and the DDP wrapper's
    `state_dict()` save was reported (DDP007); now it is one. A load into the bare model
    (wrapped after the load, or never) still wants the model's own keys."""
    for call in f.calls_in(node):
        receiver = call.func.value if mt.is_method_call(call, "load_state_dict") else None
        ref = f.ref(receiver) if isinstance(receiver, cst.Name) else None
        earlier = [s for s in f.sources(ref) if f.before(s, call)] if ref is not None else []
        last = max(earlier, key=lambda s: f.spans[s][0], default=None)
        if isinstance(last, cst.Call) and f.qualify(last.func) in PREFIXED_WRAPPERS:
            return True
    return False


def _matches_keys_inside_keys(f, func: cst.FunctionDef) -> bool:
    """Does `func` test whether a key is contained in another key it iterates, one of a dict's
    `.keys()` or `.items()` (`for k2 in saved.keys(): if k1 in k2:`)? Such a loader pairs each
    model key with the saved key that contains it, whatever prefix the saved one has; not a test
    of a key in a dict (`k in saved`), which wants the same name."""
    iterated = {t.target.value for t in mt.findall(func, cst.For) if isinstance(t.target, cst.Name)
                and any(mt.is_method_call(o, "keys", "items") for o in (t.iter, *f.origins(t.iter)))}
    return any(isinstance(t.left, cst.Name) and isinstance(c.operator, cst.In)
               and isinstance(c.comparator, cst.Name) and c.comparator.value in iterated
               for t in mt.findall(func, cst.Comparison) for c in t.comparisons)


def _renames_prefix(node: cst.CSTNode) -> bool:
    """Does `node` take the `module.` prefix off a key or put it on (`k[7:]`, `k.replace("module.",
    "")`, `f"module.{k}"`)?"""
    cuts = [s for s in mt.findall(node, cst.Slice) if isinstance(s.lower, cst.Integer)
            and s.lower.value == str(len(PREFIX)) and s.upper is None]
    texts = [string_value(s) or "" for s in mt.findall(node, cst.SimpleString)]
    texts += [p.value for s in mt.findall(node, cst.FormattedString) for p in s.parts[:1]
              if isinstance(p, cst.FormattedStringText)]
    return bool(cuts) or any(t.startswith(PREFIX) for t in texts)


def _made_of(f, expr: cst.BaseExpression, depth: int = 2) -> list[cst.BaseExpression]:
    """`expr` and the values it is built from (`Facts.origins`), and, for a parameter of a
    helper that those read (`def save_checkpoint(model_state, ...): torch.save({"model":
    model_state}, path)`), what every call of the helper passes it, as far (`depth` calls up); for
    the `*args` of a helper that hands them on (`torch.save(*args, **kwargs)`), the first
    positional argument each call passes there."""
    found = [expr, *f.origins(expr)]
    if depth:
        for value in list(found):
            for name in mt.findall(value, cst.Name):
                func = f.scope(name)
                if not isinstance(func, cst.FunctionDef) or f.ref(name) != Ref(func, name.value):
                    continue
                if name.value in param_names(func):
                    found += [v for site in f.call_sites(func) if (arg := f.argument_for(site, func, name.value)) is not None
                              for v in _made_of(f, arg, depth - 1)]
                elif isinstance(star := func.params.star_arg, cst.Param) and star.name.value == name.value:
                    # `def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)`: the first
                    # positional argument each call hands past the named ones
                    first = len(func.params.posonly_params) + len(func.params.params)
                    found += [v for site in f.call_sites(func) if (arg := mt.positional(site, first)) is not None
                              for v in _made_of(f, arg.value, depth - 1)]
    return found


# methods of a module whose items are (name, object), the name of each as its `state_dict()` keys it
NAMED = frozenset({"named_modules", "named_parameters", "named_buffers", "named_children"})


def _keyed_by_wrapper_names(ctx: Context, saved: cst.BaseExpression) -> list[tuple[cst.BaseExpression, str]]:
    """The DDP wrappers whose `named_modules()` (or `named_parameters()`, ...) names key the saved
    dict as they are (`for name, m in model.named_modules(): sd.update({f"{name}.lora.{k}": v ...})`,
    `sd[name] = p`), with the method: the dict written out, a comprehension, what `.update(...)`
    or a store by item put in it, through names. Not a name rewritten first (`name[7:]`,
    `name.replace("module.", "")`): that key is the model's own."""
    f = ctx.facts
    ref = f.ref(saved) if isinstance(saved, cst.Name) else None
    built = [saved, *f.origins(saved)]
    if ref is not None:
        filled = [a.value for c in f.calls if mt.is_method_call(c, "update") and isinstance(c.func.value, cst.Name)
                  and f.ref(c.func.value) == ref for a in c.args]
        built += [o for v in filled for o in (v, *f.origins(v))]
    keys = [e.key for b in built if isinstance(b, cst.Dict) for e in b.elements if isinstance(e, cst.DictElement)]
    keys += [b.key for b in built if isinstance(b, cst.DictComp)]
    if ref is not None:
        keys += [t.slice[0].slice.value for t, _, stmt in f.assigns if isinstance(t, cst.Subscript) and len(t.slice) == 1
                 and isinstance(t.slice[0].slice, cst.Index) and dotted(t.value) and f.ref(t.value, stmt) == ref]
    found = []
    for name in (n for key in keys for n in _as_is(key)):
        for loop in f.ancestors(name):
            target = loop.target if isinstance(loop, (cst.For, cst.CompFor)) else None
            first = target.elements[0].value if isinstance(target, cst.Tuple) and target.elements else None
            if mt.is_name(first, name.value) and isinstance(loop.iter, cst.Call) and mt.is_method_call(loop.iter, *NAMED) \
                    and ctx.holds_ddp(loop.iter.func.value) is not None:
                found.append((loop.iter.func.value, loop.iter.func.attr.value))
    return list(dict.fromkeys(found))


def _as_is(key: cst.BaseExpression) -> list[cst.Name]:
    """The names a key reads as they are: `name`, `f"{name}.lora.{k}"`, `name + ".weight"`."""
    if isinstance(key, cst.Name):
        return [key]
    if isinstance(key, cst.FormattedString):
        return [p.expression for p in key.parts
                if isinstance(p, cst.FormattedStringExpression) and isinstance(p.expression, cst.Name)]
    if isinstance(key, cst.BinaryOperation) and isinstance(key.operator, cst.Add):
        return _as_is(key.left) + _as_is(key.right)
    return []


def _resumed_into_wrapper(ctx: Context) -> dict[str, list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]]]:
    """The wrappers the script loads a checkpoint back into as it was read
    (`model.load_state_dict(torch.load(path)["model"])`, `model` being the wrapper, on every path
    or on the same paths as the save: `if world_size > 1: model = DDP(model)`): its own resume
    expects the keys it saves, and saving `.module` would break it (`_as_read`). Not where the
    keys are rewritten first (`{k[7:]: v ...}`): that loader expects the model's own. Each with
    the paths of the files loaded so and the entry of the file loaded (None where not known: a
    library's or a helper's load)."""
    f = ctx.facts
    found: dict[str, list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]]] = {}
    for call in f.calls:
        arg = mt.positional(call, 0)
        if mt.is_method_call(call, "load_state_dict") and arg is not None and ctx.holds_ddp(call.func.value) is not None:
            if _as_read(f, arg.value, call) and not _loaded_before_the_wrap(ctx, call):
                found.setdefault(f.code(call.func.value), []).extend(_loaded_paths(f, arg.value, call))
        elif reads_saved_state(f, call):
            for a in call.args:
                if ctx.holds_ddp(a.value) is not None:
                    found.setdefault(f.code(a.value), []).append((None, None))
        else:
            for a in _loaded_by_callee(ctx, call):
                if ctx.holds_ddp(a) is not None:
                    found.setdefault(f.code(a), []).append((None, None))
    return found


def _reaching_sites(f, node: cst.CSTNode) -> list[cst.Call]:
    """The calls of the method holding `node` that may run it: not one under a test (an `and`-ed
    part of an `if` around the call) that is, with the call's arguments for the method's
    parameters, the very test whose other branch holds `node` (`if args.resume and args.ema:
    self.resume(args)`, where `resume`'s load into the wrapper is the `else` of `if args.ema:`)."""
    func = f.scope(node)
    if not isinstance(func, cst.FunctionDef):
        return []
    tests = [(anc.test, f.is_inside(node, anc.body)) for anc in f.ancestors(node)
             if isinstance(anc, cst.If) and f.scope(anc) is func and not f.is_inside(node, anc.test)]

    def decided_against(site: cst.Call) -> bool:
        passed = {p: f.code(a) for p in param_names(func) if (a := f.argument_for(site, func, p)) is not None}
        held = {f.code(part) for anc in f.ancestors(site) if isinstance(anc, cst.If) and f.is_inside(site, anc.body)
                for part in _and_parts(anc.test)}
        for test, inside in tests:
            names = {n.value for n in mt.findall(test, cst.Name)} & set(param_names(func))
            if inside or not names or any(passed.get(n) != n for n in names):
                continue  # (only a parameter handed the caller's own name of the same spelling)
            if f.code(test) in held:
                return True
        return False
    return [site for site in f.call_sites(func) if not decided_against(site)]


def _and_parts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _and_parts(test.left) + _and_parts(test.right)
    return [test]


def _loaded_before_the_wrap(ctx: Context, call: cst.Call, reaching: list[cst.Call] | None = None) -> bool:
    """Does `x.load_state_dict(...)` run only before `x = DDP(x, ...)` binds the wrapper, in the
    function that wraps: the load itself there above the wrap, or every call of the method that
    loads (`self._load_snapshot(path)` in `__init__` above `self.model = DDP(self.model, ...)`,
    pytorch/examples' multinode trainer)? Then it loads into the bare model, which wants the
    model's own keys, not the `module.` keys of the wrapper's `state_dict()`."""
    f = ctx.facts
    receiver = f.code(call.func.value)  # type: ignore[attr-defined]
    wraps = [w for w in ctx.script.calls_of(DDP) if isinstance(bind := f.parents.get(w), cst.Assign)
             and any(f.code(t.target) == receiver for t in bind.targets)]
    func = f.scope(call)
    sites = (f.call_sites(func) if reaching is None else reaching) if isinstance(func, cst.FunctionDef) and not any(
        f.scope(w) is func for w in wraps) else [call]

    def above_the_wrap(site: cst.CSTNode) -> bool:
        here = [w for w in wraps if f.scope(w) is f.scope(site)]
        return bool(here) and all(f.spans[site][0] < f.spans[w][0] for w in here)
    return bool(wraps) and bool(sites) and all(above_the_wrap(site) for site in sites)


def _loaded_paths(f, expr: cst.BaseExpression, use: cst.CSTNode, depth: int = 3) \
        -> list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]]:
    """The paths of the `torch.load`s state read as it is comes from, each with the entry of the
    file read (`checkpoint["model"]` after `checkpoint = torch.load(path)`: `(path, ("model",))`);
    None for one not followed, for an entry not known."""
    keys: list[str] | None = []
    while isinstance(expr, cst.Subscript):
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        key = string_value(index.value) if isinstance(index, cst.Index) else None
        keys = [key, *keys] if keys is not None and key is not None else None
        expr = expr.value
    if isinstance(expr, cst.Call) and f.qualify(expr.func) == "torch.load":
        path = mt.positional(expr, 0) or mt.keyword(expr, "f")
        return [(path.value if path is not None else None, tuple(keys) if keys is not None else None)]
    ref = f.ref(expr) if isinstance(expr, cst.Name) and depth else None
    sources = [value for value, _ in _reaching(f, ref, use)] if ref is not None else []
    return [(p, (*e, *keys) if e is not None and keys is not None else None)
            for s in sources for p, e in _loaded_paths(f, s, use, depth - 1)] if sources else [(None, None)]


def _may_read(f, loads: list[cst.BaseExpression | None], saved: cst.BaseExpression | None) -> bool:
    """May a resume that loads the files `loads` read the file a save writes to `saved`, or a copy
    the program makes of it? Yes but where the names of both are known and differ
    (`best_{epoch}.pth` and `latest.pth`: a resume of the latest checkpoint expects nothing of
    the best one's keys)."""
    if saved is None:
        return True
    names = [_file_name(f, path) for path in [saved, *_copies(f, saved)]]
    return any(wrote is None or p is None or (read := _file_name(f, p)) is None or _overlap(wrote, read)
               for wrote in names for p in loads)


COPIES = frozenset({"shutil.copyfile", "shutil.copy", "shutil.copy2", "shutil.move", "os.rename", "os.replace"})


def _copies(f, saved: cst.BaseExpression) -> list[cst.BaseExpression]:
    """Where the program copies or moves the file written to `saved` (a name: `shutil.copyfile(
    filename, os.path.join(d, "model_best.pth.tar"))` after `torch.save(state, filename)`)."""
    ref = f.ref(saved) if dotted(saved) else None
    return [call.args[1].value for call in f.calls if ref is not None and f.qualify(call.func) in COPIES
            and len(call.args) >= 2 and dotted(call.args[0].value) and f.ref(call.args[0].value) == ref]


def _file_name(f, path: cst.BaseExpression, depth: int = 2) -> list[str | None] | None:
    """The file name a path ends in, as literal pieces and None for a part not known
    (`args.dir + "/best_" + str(epoch) + ".pth"`: ["best_", None, ".pth"]; `os.path.join(d,
    "latest.pth")`: ["latest.pth"]); None where the name may be anything (`args.ckpt`)."""
    pieces = _pieces(f, path, depth)
    for i in range(len(pieces) - 1, -1, -1):
        piece = pieces[i]
        if piece is not None and "/" in piece:
            return [piece.rsplit("/", 1)[1], *pieces[i + 1:]]
    return None


def _pieces(f, expr: cst.BaseExpression, depth: int) -> list[str | None]:
    """A path expression as literal pieces and None for the parts not known; a join's last part is
    after a separator."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _pieces(f, expr.left, depth) + _pieces(f, expr.right, depth)
    if isinstance(expr, cst.FormattedString):
        return [p.value if isinstance(p, cst.FormattedStringText) else None for p in expr.parts]
    if isinstance(expr, cst.Call) and f.qualify(expr.func) == "os.path.join" and expr.args:
        return [None, "/", *_pieces(f, expr.args[-1].value, depth)]
    if (value := string_value(expr)) is not None:
        return [value]
    ref = f.ref(expr) if isinstance(expr, cst.Name) and depth else None
    sources = f.sources(ref) if ref is not None else []
    return _pieces(f, sources[0], depth - 1) if len(sources) == 1 else [None]


def _overlap(a: list[str | None], b: list[str | None]) -> bool:
    """May two file names, in pieces (`_file_name`), be the same name: equal where both are
    literal, else where the literal one fits the other's pattern (any two patterns may)?"""
    def pattern(pieces: list[str | None]) -> re.Pattern:
        return re.compile("".join(".*" if p is None else re.escape(p) for p in pieces))
    if None not in a:
        return pattern(b).fullmatch("".join(a)) is not None
    if None not in b:
        return pattern(a).fullmatch("".join(b)) is not None
    return True


def _as_read(f, expr: cst.BaseExpression, use: cst.CSTNode, depth: int = 4) -> bool:
    """Does `expr` hold state as `torch.load` read it, keys unchanged: the load, an entry of it
    (`checkpoint["model"]`), a comprehension that keeps each key (`{k: v for k, v in sd.items()
    if "pooler" not in k}`), a name whose assignments that reach `use` all are (not one made
    later for a save: `checkpoint = {"model": model.state_dict()}`; not counting a `None` it is
    set to where no file is found, which nothing loads), a name's own update (`sd = convert(sd)`)
    keeping what it held? Not keys rewritten (`{k[7:]: v ...}`).

    Before: msgc's `load_checkpoint` helper (`state = None`, then `state = torch.load(...)` if the
    file exists, `return state`) made its resume into the DDP wrapper, `model.load_state_dict(
    checkpoint['state_dict'])`, not one as read, so the wrapper's `module.` checkpoint it reads
    back was "does not load into the model itself" (DDP007); now the resume is seen."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Call):  # the load, or a function of the program that returns one
        returned = [r for func in f.user_functions(expr) for r in f.returned(func)] if depth else []
        return f.qualify(expr.func) == "torch.load" or bool(returned) and all(
            _as_read(f, r, r, depth - 1) for r in returned)
    if isinstance(expr, cst.DictComp) and depth:
        loop = expr.for_in
        keys = loop.target.elements[0].value if isinstance(loop.target, cst.Tuple) and loop.target.elements else None
        return mt.is_name(expr.key) and mt.is_name(keys, expr.key.value) and mt.is_method_call(loop.iter, "items") \
            and _as_read(f, loop.iter.func.value, use, depth - 1)
    ref = f.ref(expr) if isinstance(expr, cst.Name) and depth else None
    if ref is None:
        return False
    # `sd = convert(sd)` keeps what it was; `state = None` before `if os.path.exists(p): state = torch.load(p)`
    # holds nothing a load could take (`load_state_dict(None)` fails): only the loads count
    values = [v for v, _ in _reaching(f, ref, use) if not _updates(f, v, ref) and not mt.is_name(v, "None")]
    return bool(values) and all(_as_read(f, v, use, depth - 1) for v in values)


def _updates(f, value: cst.BaseExpression, ref: Ref) -> bool:
    """Does `value`, assigned to `ref`, read `ref` itself (`sd = convert(sd)`)?"""
    return any(isinstance(n, cst.Name) and n.value == ref.name and f.ref(n) == ref for n in mt.findall(value, cst.Name))


def _reaching(f, ref: Ref, use: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.CSTNode]]:
    """The assignments of `ref` whose value `use` may read: those of another function, those before
    it, those later in a loop around it; but none that a later plain assignment on the way to `use`
    replaces (`checkpoint = torch.load(path)` right before `model.load_state_dict(checkpoint["model"])`
    in a loop that also builds `checkpoint = {"model": model.state_dict(), ...}` to save it: the
    load reads what was loaded)."""
    scope = f.scope(use)
    writes = [(value, stmt) for _, value, stmt in f.writes(ref)]
    loops = [lp for lp in f.ancestors(use) if isinstance(lp, (cst.For, cst.While))]
    last = None
    for value, stmt in writes:  # the last plain assignment on every path to `use`
        if isinstance(stmt, (cst.Assign, cst.AnnAssign)) and f.scope(stmt) is scope and f.before(stmt, use) \
                and not _updates(f, value, ref) and f.is_inside(use, f.parent(f.statement(stmt))) \
                and (last is None or f.before(last, stmt)):
            last = stmt
    return [(value, stmt) for value, stmt in writes if f.scope(stmt) is not scope or stmt is last or (
        last is None or f.before(last, stmt)) and (f.before(stmt, use) or any(
            f.is_inside(stmt, lp) and (last is None or not f.is_inside(last, lp)) for lp in loops))]


def _loaded_by_callee(ctx: Context, call: cst.Call) -> list[cst.BaseExpression]:
    """The arguments of `call` that a function of the program it runs loads a checkpoint into,
    as read: `value.load_state_dict(checkpoint[key])` after `checkpoint = torch.load(path)`, on
    a parameter or on a value of its `**kwargs` (SwAV's `restart_from_checkpoint(path,
    state_dict=model)`: `for key, value in kwargs.items(): value.load_state_dict(...)`)."""
    f = ctx.facts
    found = []
    for func in f.user_functions(call):
        star = func.params.star_kwarg.name.value if isinstance(func.params.star_kwarg, cst.Param) else None
        for inner in f.calls_in(func.body):
            arg = mt.positional(inner, 0)
            if not (mt.is_method_call(inner, "load_state_dict") and arg is not None
                    and isinstance(inner.func.value, cst.Name)):
                continue
            if not _as_read(f, arg.value, inner):
                continue  # keys rewritten, or not a checkpoint read here
            receiver = inner.func.value.value
            given = f.argument_for(call, func, receiver)
            if given is not None:
                found.append(given)
            elif star is not None and _iterates_kwargs(f, inner.func.value, star):
                names = {p.name.value for p in (*func.params.posonly_params, *func.params.params,
                                                 *func.params.kwonly_params)}
                found += [a.value for a in call.args if a.keyword is not None and a.keyword.value not in names]
    return found


def _not_strict(load: cst.Call) -> bool:
    """`x.load_state_dict(sd, strict=False)` (or `False` second by place): keys that do not match are skipped."""
    arg = mt.keyword(load, "strict") or mt.positional(load, 1)
    return arg is not None and not mt.is_name(arg.value, "True")


@rule("DDP030")
def bare_checkpoint_into_wrapper(ctx: Context) -> Iterator[Hit]:
    """A checkpoint the program saves from `model.module` loaded back into the DDP wrapper.

    Wrong:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(Net().cuda())
        model.load_state_dict(torch.load("model.pt")["model"])
        torch.save({"model": model.module.state_dict()}, "model.pt")

    Right:

        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(Net().cuda())
        model.module.load_state_dict(torch.load("model.pt")["model"])
        torch.save({"model": model.module.state_dict()}, "model.pt")

    The model's own state dict (`model.module.state_dict()`) names its weights as the model does;
    the wrapper's `load_state_dict` wants them under `module.`: the resume stops with "Missing
    key(s) in state_dict: module....". Load into `model.module`. Found where the program saves a
    state dict taken through the wrapper's `.module` (also in a helper of another module it hands
    the wrapper to, `save_checkpoint(d, acoustic)` whose dict holds `acoustic.module.state_dict()`)
    and loads, as read, into the wrapper a file and entry that save may have written (the same
    entry, `ckpt["model"]`, or one not known; the file's name not known to differ), strictly
    (not `strict=False`), directly or through a function of the program it hands the wrapper to
    (`load_checkpoint(path, acoustic=acoustic)`, reported at that call; its load's file and entry
    asked the same way: not a helper's `resume` of `checkpoint.pth` where the `.module` keys go to
    `best_model.prm`); not a load that runs before the wrap binds it (also where the only calls
    after the wrap sit under the test whose other branch holds the load: `if args.resume and
    args.ema: self.resume(args)` of a `resume` that loads the wrapper in the `else` of `if
    args.ema:`), nor where the name is not the wrapper there (the `else` of
    `hasattr(model, "module")`, as DDP007 asks), nor in a program whose loader fits either keys
    (it asks whether they start with `module.`, DDP007's exception).
    """
    f = ctx.facts
    if not ctx.ddp_refs or _loader_fits_either_keys(ctx):
        return
    bare = _bare_saves(ctx)
    if not bare:
        return
    for call in f.calls:
        arg = mt.positional(call, 0)
        if mt.is_method_call(call, "load_state_dict") and arg is not None:
            if ctx.holds_ddp(call.func.value) is None or ctx.unwrapped_here(call.func.value) or _not_strict(call) \
                    or not _as_read(f, arg.value, call) or _loaded_before_the_wrap(ctx, call) \
                    or _loaded_before_the_wrap(ctx, call, _reaching_sites(f, call)):
                continue
            loads, into, who = _loaded_paths(f, arg.value, call), call.func.value, "this load"
        else:
            handed = [(given, loads) for given, loads in _wrapper_loaded_by_callee(ctx, call)
                      if ctx.holds_ddp(given) is not None and not ctx.unwrapped_here(given)]
            if not handed:
                continue
            into, loads, who = handed[0][0], [load for _, ls in handed for load in ls], f"`{f.code(call.func)}()`"
        if any(_reads(f, loads, path, entry) for path, entry in bare):
            yield Hit(call, f"{who} reads a checkpoint this program saves from `.module` (the model's own keys) into the "
                            f"DDP wrapper `{f.code(into)}`, whose keys start with `module.`: the load fails on missing "
                            f"keys; load into `{f.code(into)}.module`")


def _wrapper_loaded_by_callee(ctx: Context, call: cst.Call) \
        -> list[tuple[cst.BaseExpression, list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]]]]:
    """The arguments of `call` that a function of another module of the program it runs loads a
    checkpoint into, as read and strictly (`value.load_state_dict(checkpoint[key])` on a parameter:
    `_loaded_by_callee`'s first shape), each with the files and entries that load reads
    (`_loaded_paths`, in the callee: `(os.path.join(config.result_path, "checkpoint.pth"),
    ("state_dict",))`). A function of the checked file is not asked: its load is reported itself."""
    f = ctx.facts
    found = []
    for func in f.user_functions(call):
        if f.program is None or f.program.part_of(func, f.parents) is f.program.parts[0]:
            continue  # a load of the checked file itself is reported where it is
        for inner in f.calls_in(func.body):
            arg = mt.positional(inner, 0)
            if not (mt.is_method_call(inner, "load_state_dict") and arg is not None
                    and isinstance(inner.func.value, cst.Name)) or _not_strict(inner) or not _as_read(f, arg.value, inner):
                continue
            given = f.argument_for(call, func, inner.func.value.value)
            if given is not None:
                found.append((given, _loaded_paths(f, arg.value, inner)))
    return found


def _bare_saves(ctx: Context) -> list[tuple[cst.BaseExpression | None, tuple[str, ...] | None]]:
    """(the path, the entry) of each save of a state dict taken through a DDP wrapper's `.module`
    (`{"acoustic-model": acoustic.module.state_dict()}`), where the wrapper may be held."""
    f = ctx.facts
    found = []
    for call, saved, path in _checkpoint_saves(ctx, frozenset(ctx.script.calls_of("torch.save"))):
        plain = _plainly_from(f, saved)
        for built in dict.fromkeys(_made_of(f, saved)):
            for c in f.calls_in(built):
                model = _state_dict_of(f, c)
                if isinstance(model, cst.Attribute) and model.attr.value == "module" \
                        and ctx.holds_ddp(model.value) is not None:
                    found.append((path, _entry(f, c, built, plain)))
    return found


def _iterates_kwargs(f, name: cst.Name, star: str) -> bool:
    """Is `name` bound by a loop over `kwargs.items()` (its values) or `kwargs.values()`?"""
    for anc in f.ancestors(name):
        if isinstance(anc, cst.For) and isinstance(anc.iter, cst.Call) and isinstance(anc.iter.func, cst.Attribute) \
                and mt.is_name(anc.iter.func.value, star) and anc.iter.func.attr.value in ("items", "values"):
            target = anc.target.elements[-1].value if isinstance(anc.target, cst.Tuple) and anc.iter.func.attr.value \
                == "items" else anc.target
            return mt.is_name(target, name.value)
    return False


def _module_of(expr: cst.BaseExpression):
    def fix(edits) -> None:
        edits.replace(expr, lambda node: cst.Attribute(value=node, attr=cst.Name("module")), "saves `.module`")
    return fix


@rule("DDP014", several=True)
def load_without_map_location(ctx: Context) -> Iterator[Hit]:
    """`torch.load` without `map_location` in a DDP script: every rank loads onto GPU 0.

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        state = torch.load("model.pt")

    Right:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        state = torch.load("model.pt", map_location="cpu")

    A checkpoint saved from GPU tensors remembers their device, `cuda:0`: loaded without
    `map_location`, every process allocates its copy on GPU 0 (out of memory there, and a CUDA
    context on GPU 0 for every process). Load to the CPU or to the process's own device. Found
    for a `torch.load` with neither `map_location` nor a second positional argument (and for an
    installed library's loader handed a `map_location` that is None: mmcv's
    `_load_checkpoint(filename, map_location)` in a helper whose `map_location=None` a call
    leaves as it is), in a script that uses torch.distributed; not where the other branch of an `if` on a missing GPU
    index loads with a `map_location` (the script chose: `if args.gpu is None: torch.load(path)
    else: ...`; but `if torch.cuda.is_available(): torch.load(path)` is the bug itself, and so is a
    `map_location` name that holds None wherever CUDA is available), not for
    a file of this rank's own (`f"queue{rank}.pth"`), which comes back on the device it left,
    not under a rank test (`if rank == 0:`): one process loads, onto its own GPU, not where
    only a run of one process gets (the `else` of `if dist.is_initialized():`), and not in a
    data set's own code (a method of a `torch.utils.data.Dataset`, or of a class with
    `__getitem__` and `__len__`: precomputed features a data set serves, CPU tensors that the
    loader's workers hand out), and not for a file the program itself writes with `torch.save`
    only from data it builds on the CPU (a cache: `torch.save(loaded, cached_file)` of a reader's
    tensors or a dict of vocabularies, where a model, its state, an optimizer, a model's output
    or a tensor moved to a device goes into none of them; the same file: the same name, or a folder
    joined to the same file name, `os.path.join(tmp, "progress.pt")` saved and renamed into place,
    `os.path.join(folder, "progress.pt")` loaded), and not for a state that holds no
    tensors (`ddpify.analysis.states`): an LR scheduler's or a GradScaler's `load_state_dict`
    (numbers), the random generators' states handed to their setters (CPU tensors); nor for a
    pickled data set, a load only handed to a DataLoader as its data set and to samplers as their
    data source (`train_set = torch.load("train_dataset.pth")`, then `DistributedSampler(train_set)`,
    `DataLoader(train_set, ...)`: the loader batches it on the CPU); nor in a
    program whose processes each see one GPU, as it shows by wrapping on the device each starts on
    and never picking one (`device_ids=[torch.cuda.current_device()]`, no `set_device`: srun's
    `--gpus-per-task=1`), or on GPU 0 alone (`set_device(0)`, `device_ids=[0]`), where `cuda:0`
    is every process's own, the one it trains on; nor for a file of the project,
    named by a literal path, whose every storage the file itself shows saved on the CPU
    (`torch.load("mean_var/mean.pt")` of a file committed beside the script:
    `ddpify.analysis.tensor_files`); nor for a load no run that wraps a model reaches (`if
    args.mode == "eval": evaluate(args)` beside `elif args.mode == "train": train(args)`, where only
    `train` wraps: `ddpify.analysis.wrapped_paths`), a mode the project runs as one process. A load
    of another module of the program is also reported at the call of the checked file that runs it
    on every process, through as many modules as lie between, as DDP006 reports a write there
    (`criterion = losses.FeatureLoss(path)`, whose `__init__` calls `torch.load(weights)`), where
    the load may read a checkpoint the program
    itself saves from its GPU (a file whose name is not known, or one a `torch.save` of the program
    may write); not a file named by a literal that no save of the program writes (a backbone's
    published weights, `torch.load("pretrained/resnet50.pth")`, `ckpt_dir / "ve.pt"`, also handed
    through parameters and attributes, whose device the code does not show), not the fallback in
    the `except` of a `try` that loads the same path with a map_location, not a call that only one
    process makes (`if rank == 0: evaluate(path)`), nor one whose helper maps.
    """
    if not ctx.script.distributed or one_visible_gpu_each(ctx.facts):  # each process's `cuda:0` its own
        return
    f = ctx.facts
    reported: set[cst.Call] = set()
    for call in ctx.script.calls_of("torch.load"):
        if not _unmapped(ctx, call):
            continue
        yield Hit(call, "torch.load without map_location: every rank puts this checkpoint's GPU tensors on "
                        "GPU 0; pass map_location (\"cpu\" or this process's device)")
        func = f.scope(call)
        if f.program is None or f.program.part_of(call, f.parents) is f.program.parts[0] \
                or _fallback_of_a_mapped_load(f, call) or not _may_read_a_gpu_checkpoint(ctx, call):
            continue
        for site in _callers_elsewhere(ctx, call, write=False):  # `IDLoss(path)` of a loss module's __init__
            if site not in reported:
                reported.add(site)
                yield Hit(site, f"`{f.code(site.func)}()` runs a torch.load without map_location of "
                                f"{f.program.part_of(call, f.parents).rel} (in `{func.name.value}`) on every rank: "
                                "each puts the checkpoint's GPU tensors on GPU 0; pass map_location there (\"cpu\" "
                                "or this process's device)")
    for call in _library_loads_unmapped(ctx):
        if not ctx.ranks.on_some_ranks(call) and not ctx.ranks.undistributed(call):
            yield Hit(call, f"`{ctx.facts.code(call.func)}` is handed a map_location that is None: its torch.load puts "
                            "every rank's copy of the checkpoint on GPU 0; pass \"cpu\" or this process's device")


def _fallback_of_a_mapped_load(f, load: cst.Call) -> bool:
    """Is `load` in an `except` handler of a `try` whose body loads the same path with a
    map_location (`try: model = torch.load(p, map_location=loc)` / `except: model = torch.load(p)`,
    axial-deeplab's `resume_model`)? It runs only where the mapped load raised."""
    path = mt.positional(load, 0)
    for handler in f.ancestors(load):
        if isinstance(handler, cst.ExceptHandler) and isinstance(trying := f.parent(handler), cst.Try):
            return path is not None and any(
                f.qualify(c.func) == "torch.load" and _maps(c) and (other := mt.positional(c, 0)) is not None
                and f.code(other.value) == f.code(path.value) for c in f.calls_in(trying.body))
    return False


def _may_read_a_gpu_checkpoint(ctx: Context, load: cst.Call) -> bool:
    """May `load` read a file the program itself writes with `torch.save` of state not built on
    the CPU (a checkpoint of its GPU training): a save whose file name is not known, or one the
    load's may be (`_may_read`)? Not a file named by a literal that no save of the program writes
    (`torch.load("./model/pvt_v2_b5.pth")` of a backbone's constructor, also a literal it is handed
    through a parameter and an attribute: published weights, whose device the code does not show;
    such a name is asked of the saves whose names are known, `f"epoch_{n}.pth"` but not
    `"net_%s" % epoch`), nor any load of a program that saves no such state."""
    f = ctx.facts
    path = mt.positional(load, 0) or mt.keyword(load, "f")
    if path is None:
        return False
    saves = [c for c in ctx.script.calls_of("torch.save")
             if (arg := mt.positional(c, 0)) is not None and not _built_on_the_cpu(ctx, arg.value, frozenset())]
    # the literal names it is given, where every value it may hold is one (`FCOS(state_dict_path=resnet_dir)`,
    # `resnet_dir = '.../resnet50-19c8e357.pth'`, read as `torch.load(self.state_dict_path)`; `os.path.join(
    # 'features', 'state_dicts', 'BBN.iNaturalist2017.res50.pth')`): only a save whose name is known may write one
    names = [_literal_name(f, o) for o in f.origins(path.value)]
    if names and None not in names:
        written = [w for c in saves if (p := writes.written_path(f, c)) is not None
                   for w in (_file_name(f, q) for q in [p, *_copies(f, p)]) if w is not None and None not in w]
        return any(_overlap(w, [name]) for w in written for name in names if name is not None)
    return any(_may_read(f, [path.value], writes.written_path(f, c)) for c in saves)


def _literal_name(f, path: cst.BaseExpression) -> str | None:
    """The file name a path ends in where each piece of that name is a literal (`"vgg16.pth"`,
    `"pretrained/vgg16.pth"`, `os.path.join(d, "x.bin")`: `"x.bin"`), else None (`f"{args.dir}/{name}"`,
    `os.path.join(d, "{}.pth".format(n))`)."""
    if (value := string_value(path)) is not None:
        return value.rsplit("/", 1)[-1] or None
    if isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Divide):
        return _literal_name(f, path.right)  # pathlib's `ckpt_dir / "ve.pt"`
    pieces = _file_name(f, path)
    return "".join(p for p in pieces if p is not None) or None if pieces and None not in pieces else None


def _unmapped(ctx: Context, call: cst.Call) -> bool:
    """Is the `torch.load` `call` one DDP014 reports: no `map_location` (or one that holds None on
    a GPU), none of the exceptions its docstring lists?"""
    return not (_maps(call) and not _none_on_a_gpu(ctx, call)) and not _chosen(ctx, call) \
        and not _per_rank_file(ctx, call) \
        and not ctx.ranks.on_some_ranks(call) and not ctx.ranks.undistributed(call) \
        and not _in_a_data_set(ctx, call) and not _own_cpu_cache(ctx, call) \
        and not holds_no_tensors(ctx.facts, call) and not loaded_data_set(ctx.facts, call) \
        and not saved_on_the_cpu(ctx.facts, call) and on_a_wrapping_path(ctx.facts, call)


def _library_loads_unmapped(ctx: Context) -> Iterator[cst.Call]:
    """The calls of an installed library's function handed a `map_location` (by that keyword, or a
    name so called) that holds None: `_load_checkpoint(filename, map_location)` of mmcv, where
    `map_location` is a parameter of the program's loader that a call leaves to its default None.
    The library hands it to its `torch.load`, which then maps nothing."""
    f = ctx.facts
    for call in f.calls:
        if f.qualify(call.func) in (None, "torch.load") or f.user_functions(call):
            continue
        arg = mt.keyword(call, "map_location") or next(
            (a for a in call.args if a.keyword is None and mt.is_name(a.value, "map_location")), None)
        if arg is not None and _holds_none(f, arg.value):
            yield call


def _holds_none(f, expr: cst.BaseExpression) -> bool:
    """`None`, or a parameter whose default is None that no statement of its function sets and
    that a call of it leaves out or passes None (or none of the program calls it: its default)."""
    if mt.is_name(expr, "None"):
        return True
    ref = f.ref(expr) if isinstance(expr, cst.Name) else None
    func = ref.scope if ref is not None else None
    if not isinstance(func, cst.FunctionDef) or f.writes(ref):
        return False
    default = next((p.default for p in (*func.params.params, *func.params.kwonly_params) if p.name.value == ref.name), None)
    sites = f.call_sites(func)
    return default is not None and mt.is_name(default, "None") and (not sites or any(
        (a := f.argument_for(c, func, ref.name)) is None and not mt.has_double_star(c) or a is not None and mt.is_name(a, "None")
        for c in sites))


# methods whose value holds, or is put on, the device: a model's state, its tensors moved
GPU_METHODS = frozenset({"state_dict", "cuda", "to", "parameters", "named_parameters", "buffers", "named_buffers"})


def _own_cpu_cache(ctx: Context, load: cst.Call, following: frozenset[cst.Call] = frozenset()) -> bool:
    """Does the program itself write the file `load` reads (`torch.save(x, cached_file)` to the
    same name, or the same path written the same way in the same function), only ever from data
    built in view and on the CPU (`loaded = reader.load(path)`, a dict of vocabularies): a data
    cache, which comes back on the CPU, not a checkpoint of GPU tensors?"""
    f = ctx.facts
    following = following | {load}
    path = mt.positional(load, 0) or mt.keyword(load, "f")
    if path is None:
        return False
    saves = [(c, arg) for c in ctx.script.calls_of("torch.save")
             if (arg := mt.positional(c, 0)) is not None and _same_file(f, writes.written_path(f, c), path.value)]
    return bool(saves) and all(_built_on_the_cpu(ctx, arg.value, following) for _, arg in saves)


def _same_file(f, a: cst.BaseExpression | None, b: cst.BaseExpression) -> bool:
    """The same name (`cached_file` of one function), or the same path spelled the same way in one
    function, or a path of each joined to the same file name (`os.path.join(tmp_dir,
    "training_state.pt")` saved, `os.path.join(checkpoint_dir, "training_state.pt")` loaded after
    the folder is renamed into place)."""
    if a is None:
        return False
    if dotted(a) is not None and dotted(b) is not None:
        return f.ref(a) == f.ref(b)
    named = _joined_file_name(f, a)
    return f.code(a) == f.code(b) and f.scope(a) is f.scope(b) or named is not None and named == _joined_file_name(f, b)


def _joined_file_name(f, path: cst.BaseExpression) -> str | None:
    """The file name a path is joined to last, a string with an extension: `os.path.join(d, "state.pt")`."""
    last = mt.positional(path, len(path.args) - 1) if isinstance(path, cst.Call) and path.args \
        and f.qualify(path.func) == "os.path.join" else None
    name = string_value(last.value) if last is not None and last.keyword is None else None
    return name if name and "." in name.strip(".") and "/" not in name else None


def _built_on_the_cpu(ctx: Context, value: cst.BaseExpression, following: frozenset[cst.Call], depth: int = 4) -> bool:
    """Is every object `value` may hold made in view (some origin is not a name ddpify cannot
    follow), and nothing in what makes it, a few calls deep, a model, an optimizer, a model's
    output, a state_dict, a tensor moved (`.cuda()`, `.to(...)`, `device=`) or a file loaded
    that is not such a cache itself (what it held is not known)? The load being followed is its
    own cache's value."""
    f = ctx.facts
    flow = objects_of(f)
    seen: set[cst.CSTNode] = set()

    def placed(expr: cst.BaseExpression, depth: int) -> bool:
        if expr in seen or depth == 0:
            return False
        seen.add(expr)
        for o in f.origins(expr):
            if o in following:
                continue
            if isinstance(o, cst.Call):
                method = o.func.attr.value if isinstance(o.func, cst.Attribute) else None
                if method in GPU_METHODS or mt.keyword(o, "device") is not None or f.qualify(o.func) == "torch.load" \
                        and not _own_cpu_cache(ctx, o, following) or flow.kind(o) in (MODEL, OPTIMIZER) or flow.of_kind(o.func, MODEL):
                    return True
                parts = [a.value for a in o.args] + ([o.func.value] if isinstance(o.func, cst.Attribute) else [])
            else:
                parts = [n for n in mt.children(o) if isinstance(n, cst.BaseExpression)] + [
                    e.value for e in mt.children(o) if isinstance(e, (cst.Element, cst.DictElement))]
            if any(placed(p, depth - 1) for p in parts):
                return True
        return False

    made = [o for o in f.origins(value) if o not in following and not isinstance(o, (cst.Name, cst.Attribute))]
    return bool(made) and not placed(value, depth)


def _in_a_data_set(ctx: Context, call: cst.Call) -> bool:
    """Is `call` in a method of a data set class (a `torch.utils.data` Dataset, or a class with
    `__getitem__` and `__len__`)?"""
    f = ctx.facts
    cls = next((a for a in f.ancestors(call) if isinstance(a, cst.ClassDef)), None)
    if cls is None:
        return False
    if any((f.qualify(b.value) or "").startswith("torch.utils.data.") and (f.qualify(b.value) or "").endswith("Dataset")
           for b in cls.bases):
        return True
    methods = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
    return {"__getitem__", "__len__"} <= methods


def _maps(call: cst.Call) -> bool:
    return mt.keyword(call, "map_location") is not None or mt.positional(call, 1) is not None \
        or mt.has_double_star(call)


def _none_on_a_gpu(ctx: Context, call: cst.Call) -> bool:
    """Is the map_location a name that holds None wherever CUDA is available (`map_location = None`,
    then `if not torch.cuda.is_available(): map_location = torch.device("cpu")`): no mapping on
    a GPU run?"""
    f = ctx.facts
    arg = mt.keyword(call, "map_location")
    ref = f.ref(arg.value) if arg is not None and isinstance(arg.value, cst.Name) else None
    sources = f.sources(ref) if ref is not None else []
    values = [s for s in sources if not mt.is_name(s, "None")]
    return len(values) < len(sources) and all(_cpu_only(f, v) for v in values)


def _cpu_only(f, node: cst.CSTNode) -> bool:
    """Is `node` in the body of `if not torch.cuda.is_available():` (or the else of `if
    torch.cuda.is_available():`)?"""
    for anc in f.ancestors(node):
        if isinstance(anc, cst.If):
            test, body = anc.test, f.is_inside(node, anc.body)
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, body = test.expression, not body
            if isinstance(test, cst.Call) and f.qualify(test.func) == "torch.cuda.is_available" and not body:
                return True
    return False


def _chosen(ctx: Context, call: cst.Call) -> bool:
    """Is `call` in one branch of an `if` whose other branch loads the same file with a
    map_location?"""
    f = ctx.facts
    path = mt.positional(call, 0)
    for anc in f.ancestors(call):
        if isinstance(anc, cst.If) and anc.orelse is not None and path is not None and _none_test(anc.test):
            other = anc.orelse if f.is_inside(call, anc.body) else anc.body
            if any(f.qualify(c.func) == "torch.load" and _maps(c) and mt.positional(c, 0) is not None
                   and f.code(mt.positional(c, 0).value) == f.code(path.value) for c in f.calls_in(other)):
                return True
    return False


def _none_test(test: cst.BaseExpression) -> bool:
    """`args.gpu is None`, `gpu is not None`: which GPU is not known (one process drives them all)."""
    return isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
        test.comparisons[0].operator, (cst.Is, cst.IsNot)) and mt.is_name(test.comparisons[0].comparator, "None")


def _per_rank_file(ctx: Context, call: cst.Call) -> bool:
    """`torch.load(os.path.join(d, "queue" + str(args.rank) + ".pth"))`: each rank reads its own."""
    path = mt.positional(call, 0)
    return path is not None and _per_rank(ctx, path.value)


@rule("DDP017", bug=False, several=True)
def save_on_local_rank_zero(ctx: Context) -> Iterator[Hit]:
    """`torch.save` under a local-rank test: one writer per node.

    Wrong:

        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        if int(os.environ["LOCAL_RANK"]) == 0:
            torch.save(model.module.state_dict(), "model.pt")

    Right:

        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")

    `LOCAL_RANK` is 0 once on every node: with several nodes, several processes write the same
    file, which a shared file system sees half-written or interleaved. Save on global rank 0.
    Advice, because a job whose nodes each write to their own local disk means it.
    Found for a `torch.save` whose innermost rank test reads a name with `local_rank` in it,
    and not also the global rank (`args.local_rank == 0 and dist.get_rank() == 0` is one writer).
    """
    if not ctx.script.distributed:
        return
    f = ctx.facts
    for call in ctx.script.calls_of("torch.save"):
        guard = _guard_of(ctx, call)
        if guard is not None and (any("local_rank" in (dotted(n) or "").lower()
                                      for n in mt.findall(guard.test, (cst.Name, cst.Attribute))) or any(
                string_value(s) == "LOCAL_RANK" for s in mt.findall(guard.test, cst.SimpleString))) and not _reads_global_rank(ctx, guard.test):
            yield Hit(call, f"saved under `{f.code(guard.test)}`, which holds once per node: on several nodes "
                            "several processes write this file; save on global rank 0")


def _reads_global_rank(ctx: Context, test: cst.BaseExpression) -> bool:
    """Does `test` also read the global rank: `dist.get_rank()`, `args.global_rank`,
    `is_main_process()` (a rank that does not say it is local)?"""
    return any(ctx.ranks.is_global_rank(n) or rank_word(n) and not ctx.ranks.is_local_rank(n)
               for n in mt.findall(test, (cst.Name, cst.Attribute, cst.Call)))


def _guard_of(ctx: Context, node: cst.CSTNode, depth: int = 2) -> cst.If | None:
    """The rank test `node` runs under: its own, or that of every call of its function
    (`if self.local_rank == 0: self._save_snapshot(epoch)`)."""
    guard = ctx.ranks.rank_guard(node)
    func = ctx.facts.scope(node)
    if guard is not None or depth == 0 or not isinstance(func, cst.FunctionDef):
        return guard
    guards = [_guard_of(ctx, site, depth - 1) for site in ctx.facts.entries(func)]
    return guards[0] if guards and all(g is not None for g in guards) else None


@rule("DDP032")
def read_before_the_write_ends(ctx: Context) -> Iterator[Hit]:
    """Every rank loads a file that only rank 0 writes, with nothing to wait for the write.

    Wrong:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1)
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), "best.pt")
        model.load_state_dict(torch.load("best.pt", map_location="cpu"))

    Right:

        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1)
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), "best.pt")
        dist.barrier()
        model.load_state_dict(torch.load("best.pt", map_location="cpu"))

    The processes that skip the save run on at once and load while rank 0 is still writing the
    file (or before it has begun): they read a truncated file ("PytorchStreamReader failed
    reading zip archive") or the one an earlier round left there. Put a barrier between the write
    and the read. Found for a `torch.load` that runs on every rank after a call of the same
    function that saves (`torch.save`, in it or in a function of the program it runs, such as a
    recorder's `__call__` that saves the best model) on some ranks only, where the names of the
    two files are known, each with a literal piece, and may be the same (`best.pt`;
    `os.path.join(path, "checkpoint.pth")` and `path + "/checkpoint.pth"`; not
    `os.path.join(args.out, args.name)`), with nothing on the way between them that makes the
    processes meet (`Ranks.may_wait_between`: a collective, a backward or a forward of the DDP
    wrapper, also in the program's functions called there); not a load on one rank only.
    """
    f = ctx.facts
    if not ctx.script.distributed:
        return
    saves = [(c, name) for c in ctx.script.calls_of("torch.save")
             if (p := writes.written_path(f, c)) is not None and (name := _known_name(f, p)) is not None]
    if not saves:
        return
    def holds(expr: cst.BaseExpression) -> bool:
        return isinstance(expr, (cst.Name, cst.Attribute)) and ctx.holds_ddp(expr) is not None
    for load in ctx.script.calls_of("torch.load"):
        path = mt.positional(load, 0) or mt.keyword(load, "f")
        read = _known_name(f, path.value) if path is not None else None
        if read is None or ctx.ranks.on_some_ranks(load) or ctx.ranks.undistributed(load):
            continue
        func = f.scope(load)
        sites = [site for save, wrote in saves if _overlap(wrote, read)
                 for site in _runs_in(ctx, save, func, load) if f.before(site, load)
                 and (ctx.ranks.on_some_ranks(site) or ctx.ranks.on_some_ranks(save))]
        if sites and not any(ctx.ranks.may_wait_between(f.statement(s), load, holds) for s in sites):
            yield Hit(load, f"every rank loads a file that only some ranks write (`{f.code(sites[-1])}`), and nothing "
                            "between the write and this load makes the processes wait for it: the others may read it "
                            "half written, or before it is there; put dist.barrier() between them")


def _known_name(f, path: cst.BaseExpression) -> list[str | None] | None:
    """The file name a path ends in, in pieces (`_file_name`), a bare literal name too
    (`"best.pt"`), where some piece of it is literal (`"checkpoint.pth"`, `f"epoch_{n}.pth"`); None
    where the name may be anything (`os.path.join(args.out, args.name)`)."""
    name = _file_name(f, path)
    if name is None and (literal := _literal_name(f, path)) is not None:
        name = [literal]
    return name if name is not None and any(name) else None


def _runs_in(ctx: Context, save: cst.Call, func: cst.CSTNode, before: cst.CSTNode, depth: int = 3) -> list[cst.Call]:
    """The calls of `func` (the save itself where it is one) that run `save`, a call of the program:
    directly, or through the program's functions `depth` calls deep (`recorder(loss, model, path)`
    whose `__call__` calls `self.save_checkpoint(...)`, which saves), each before `before`."""
    f = ctx.facts
    if f.scope(save) is func:
        return [save]
    found = []
    for call in f.calls_in(func):
        if f.scope(call) is func and f.before(call, before) and _reaches(ctx, call, save, depth):
            found.append(call)
    return found


def _reaches(ctx: Context, call: cst.Call, target: cst.Call, depth: int) -> bool:
    if depth <= 0:
        return False
    f = ctx.facts
    for func in ctx.ranks.callees(call):
        if f.is_inside(target, func):
            return True
        if any(_reaches(ctx, c, target, depth - 1) for c in f.calls_in(func.body) if f.scope(c) is func):
            return True
    return False
