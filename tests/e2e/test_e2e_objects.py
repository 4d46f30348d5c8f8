"""Issue 27's object classes, converted and launched under torchrun (2 processes, gloo).

fixtures/objects_solver (classes 1, 2): a solver builds `self.G` and `self.D` in `build_model()`,
each with an optimizer over a derived iterable (`filter(...)`, `itertools.chain(...)`): both
must be wrapped, or one trains bare on each shard and the replicas diverge.
fixtures/objects_stopper (classes 5, 8, 9, 11): the model goes to an early-stopping helper's
`__call__` in a package module and four call levels down to a save (main process only, no
`module.` keys), is traced (the module, not the wrapper), pickled whole and reloaded (the
reloaded model is bare: no `.module`).
fixtures/objects_main_only (classes 10, 13, and the held-out sweep's WGAN-GP): a writer made on
the main process only whose `log_dir` every process reads, a logger class of the project, a file
written line by line, a save under `if args.ranking_loss > 0:`, a gradient penalty with its own
backward.
fixtures/objects_phases (the second sweep's unet_nb): the loaders in a dict keyed by phase, both
shuffled, one loop over the phases that steps on 'train' only and keeps the weights of the best
validation loss: 'train' is sharded, 'val' read whole by every process, the same weights kept.
fixtures/objects_registry (the ninth sweep's YannLeo trainers): two loaders a subclass sets, zipped into
the base class's generator over a progress bar, reshuffled from the base's epoch loop (which names them
by getattr: its other subclass has none); one optimizer over both modules, `itertools.chain`.
fixtures/objects_prepared (the tenth sweep's Sentence-VAE): data sets of the project that write their
file when first built, one per phase of a list put together from the arguments, and a loader made
anew per phase in each epoch: built on the first process first, the training phase's loader sharded
and reshuffled by the epoch, the validation phase's read whole by every process.
fixtures/objects_clock (agree-clock): a run folder named by the time, two clock readings one inside the other,
the main process's checkpoint read back by every process: one folder, the main process's.
fixtures/objects_tee (the eleventh sweep's esc50_crossval): a stdout tee of the project opening its log with
`open(*args, **kwargs)`, seeking and telling it: the log is the main process's, each epoch's line once.
fixtures/objects_ema (the eleventh sweep's EMA helper): `self.shadow = copy.deepcopy(model)` in the helper's
`__init__`, handed the wrapped model: the shadow is a copy of the module, not a second wrapper.
fixtures/objects_stream (the fourteenth sweep's apds_liver_2p5d): a training loader over the program's
IterableDataset, read by two workers that split its parts: each process takes its item of every round of
two, no item on both, the same number of steps on each.
fixtures/objects_stream_partial (the twenty-fourth sweep's smolergpt_accum_gradscaler, decision 0186): the program's
IterableDataset read through a DataLoader inside a generator, a static method of a task class in another module, the
generator reached through a `functools.partial` bound at the top level: each process takes its item of every round
of two, as objects_stream's.
fixtures/objects_datapipe (a library's stream, decision 0115): a training loader over a datapipe bound to a
name (torch's own `IterableWrapper(...).map(...)`, as torchdata's): split in turn by `shard_loader`, as the
program's own IterableDataset is, where a `sampler=` stopped every process.
fixtures/objects_meter (the twelfth to fourteenth sweeps' AverageMeter): meters made afresh in each pass's
function, added to by `update(val, n)` over the sharded loader, printed after it: the whole set's figures.
fixtures/objects_alias (the second sweep's siamese_nb and awd_lm): `model` rebound for three
trainings, two of them through an alias (`model = body`; an optimizer over `net` trained through
`model = net`), a round's batches drawn with numpy by a batch sampler of the project, and a loss
module stepped with the model that has no parameter at this size.
fixtures/objects_inline (a model built inside its holder's construction, decision 0115): `ema = EMA(Net())`, the
optimizer over `ema.model.parameters()`: synced where the optimizer takes it (it was `ema = sync_gradients(ema)`,
a TypeError on every process), saved as it is, the holder's average of it too.
fixtures/objects_config (pytorch-template's registries, decision 0115): the model, the training loader (a DataLoader
subclass of the project's) and the optimizer built by the names a configuration gives (`config.init_obj("arch",
module_arch)`, `getattr(module, type)(*args, **kwargs)` in the configuration's method): each found, wrapped, sharded.
fixtures/objects_holder (the fifteenth sweep's config objects): a model and the training loader in fields
of a dataclass the training function is handed, a second model on the argparse namespace: each
optimizer reads its model off the object; both are wrapped where built, saved without prefix.
fixtures/objects_replaced (the sixteenth sweep's faces_wgan): a critic's `main` rebuilt with a new output
layer under the `if` that trains it, after the wrap, and a second critic's inside a helper it is handed:
each is wrapped again (the second after the helper's call), its new layer averaged.
fixtures/objects_comprehension (decision 0109's probe): an epoch that is a list comprehension over the loader a
data module's hook builds anew: sharded where the hook builds it, reshuffled where the comprehension builds it.
fixtures/objects_meta (decision 0125): a meta-learning outer step whose `torch.autograd.grad` gradients of the
model's parameters are summed over tasks and set into `p.grad` by hand: averaged after the loop that sets them.
fixtures/objects_targets (the sixteenth sweep's train_frame): the data module, model, optimizer class and a callback
built from `target:` strings of the project's YAML: wrapped, sharded where the hook makes the loader, saved once.
fixtures/objects_ensemble (decision 0115's left class): a plain class's list of modules handed to a runner that builds
an optimizer per member: each member synced where its optimizer is built, the loader sharded.
fixtures/objects_logs (decision 0134): the logging configuration read from an INI file (`fileConfig`, a FileHandler)
and a helper appending lines to a log before the corpus is read: each log written once, by the main process.
fixtures/objects_cfg_module (the eighteenth sweep's pytorch_trainer, decision 0144): the configuration a module named
by `--cfg` (`import_module(args.cfg.replace("/", ".")[:-3])`, read by the option's default), which builds the
loaders, the model and its optimizer at import and names the trainer class; the update handed to the trainer's one
pass as closures, the loaders unpacked from the module each epoch: wrapped where the module builds it, sharded,
reshuffled after the unpacking, saved through `cfg.model.module`.
fixtures/objects_lookup (the nineteenth sweep's traffic-demand framework, decision 0153): the trainer and model classes
looked up by the name `--model` gives, the optimizer and scheduler classes picked from torch's modules by configured
names (`getattr(importlib.import_module("torch.optim"), name)`), `self.model` bound by each trainer subclass for the
base class's optimizer: the model of the trainer that runs is wrapped, not only a sibling's.
fixtures/objects_starred (the twentieth sweep's torch-associative, decision 0162): two loaders handed to the solver
as one tuple and walked by a generator that a starred argument fills (`pair(*loaders)`, the second loader drawn
through `zip(other)` made again on StopIteration), and a head trained on a loader passed in `**setting` of a
`dict(...)`: each loader sharded and reshuffled every epoch.
fixtures/objects_hand_grads (the twentieth sweep's rbm_contrastive_divergence, decision 0162): an RBM trained by
contrastive divergence with no backward, its gradients set into `.grad` by hand before Adam steps: the loader
sharded and reshuffled as a training loader's, every process started from the main process's parameters and the
hand-set gradients averaged before every step.
fixtures/objects_episodes (the twentieth sweep's DQNs, decision 0162; 0148's Left): an episode loop that breaks on
the `done` of an environment whose episodes each process draws apart, and which raises where it is stepped past an
episode's end: every process leaves when the first one's episode ends.
fixtures/objects_weight_dict (the twenty-first sweep's mtnet_sinusoid_meta, decision 0171): a meta-learner whose
weights are an OrderedDict of Parameters no module registers, stepped by its own Adam over `self.weights.values()`
inside its forward after an inner `torch.autograd.grad` of them: every process starts from the main process's
weights, the loader is sharded and reshuffled, the meta-gradients averaged before every step.
fixtures/objects_helper_grads (decision 0162's Left, 0171): gradients written out by hand and set into `.grad` by a
helper the loop calls, the loop's optimizer stepping them, no backward: sharded, reshuffled, the gradients averaged
before every step.
fixtures/objects_lazy (the twenty-fifth sweep's simclr_click_lazylinear_ntxent, decision 0194): a model whose sub-module
holds `nn.LazyLinear` layers, made by a dry run on a zero batch under `torch.no_grad()` right after it is built: wrapped
after the dry run (before it, DDP refused the parameters not made yet and every process stopped), sharded, saved once.
fixtures/objects_holder_factory (decision 0207's Left, 0219): a factory returns the model and a trainer module that
keeps it and runs it in its forward, the wrap placed after the factory's call: the trainer is handed the wrapper
(its forward ran the bare model before, no gradient averaged).
"""

from __future__ import annotations

import os

import pytest

from . import harness as h
from .test_e2e_projects import converted

pytestmark = pytest.mark.slow

EPOCHS = 3
CASES = {  # case: (training set sizes, the files main-process saves write)
    "objects_solver": ((64,), {"1-G.ckpt", "1-D.ckpt"}),
    "objects_stopper": ((64,), {"best.pt", "deep.pt"}),
    "objects_loaders": ((64, 48), {"model.pt", "head.pt"}),
    "objects_experiment": ((64,), {"exp.pt"}),
    "objects_cycle": ((64,), {f"1_net_{n}.pth" for n in ("G_A", "G_B", "D_A", "D_B")}),
    "objects_optimizer_factory": ((64,), {"net.pt"}),
    "objects_runner": ((64,), {"r.pt"}),
    "objects_pair": ((64,), {"enc.pt", "gan.pt"}),
    "objects_param_groups": ((64,), {"net.pt"}),
    "objects_main_only": ((64,), {"G.pt", "D.pt"}),
    "objects_alias": ((64,), {"net.pt"}),
    "objects_phases": ((64,), {"model.pt"}),
    "objects_registry": ((64, 48), {"model.pt"}),
    "objects_prepared": ((64,), {"model.pt"}),
    "objects_clock": ((64,), {"model.pt"}),
    "objects_tee": ((64,), {"model.pt"}),
    "objects_ema": ((64,), {"ema.pt"}),
    "objects_holder": ((64,), {"model.pt", "head.pt"}),
    "objects_replaced": ((64,), {"critic.pt", "second.pt"}),
    "objects_config": ((64,), {"checkpoint.pth"}),
    "objects_comprehension": ((64,), {"model.pt"}),
    "objects_meta": ((64,), {"model.pt"}),
    "objects_targets": ((64,), {"best.pt"}),
    "objects_ensemble": ((64,), {"ensemble.pt"}),
    "objects_logs": ((64,), {"model.pt"}),
    "objects_cfg_module": ((64,), {"model.pt"}),
    "objects_lookup": ((64,), {"model.pt"}),
    "objects_starred": ((64, 48, 32), {"model.pt", "head.pt"}),
    "objects_hand_grads": ((64,), {"model.pt"}),
    "objects_weight_dict": ((64,), {"weights.pt"}),
    "objects_helper_grads": ((64,), {"linear.pt"}),
    "objects_lazy": ((64,), {"model.pt"}),
    "objects_holder_factory": ((64,), {"model.pt"}),
}
EXTRA = {"objects_stream", "objects_stream_partial", "objects_datapipe", "objects_meter", "objects_inline", "objects_episodes"}  # cases with checks of their own (objects_stream: no sampler, no indices)
REBUILT = {"objects_runner", "objects_prepared", "objects_comprehension"}
# cases whose gradients the runtime averages with its own all-reduce, no DDP round (average_gradients after
# gradients set by hand; sync_gradients' hooks on an ensemble's members)
RUNTIME_AVERAGED = {"objects_meta", "objects_ensemble", "objects_hand_grads", "objects_weight_dict",
                    "objects_helper_grads"}
SHARED_BACKWARD = {"objects_pair", "objects_holder"}  # cases that step two optimizers after one backward  # cases that build their training loader again every epoch


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """case -> its Run: every case converted, then all run in one torchrun batch (``harness.start_batch``)."""
    root = tmp_path_factory.mktemp("objects")
    programs = {}
    for case in [*CASES, *EXTRA]:
        entry = converted(case, root / case)
        programs[case] = h.Program(entry, ["--epochs", str(EPOCHS)], entry.parent, root / f"probe-{case}")
    return h.start_batch(programs, root / "batch", count=True).wait()


@pytest.mark.parametrize("case", CASES)
def test_every_model_is_wrapped_sharded_and_saved_once_without_prefix(runs, case):
    sizes, saved = CASES[case]
    run = runs[case]
    assert run.ok and run.probe.ranks == [0, 1] and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    problems = h.check_params_identical(run.probe, h.WORLD) + h.check_optimizers_identical(run.probe, h.WORLD)
    assert run.probe.optimizers("step2"), "expected optimizers recorded after their 2nd step"
    for size in sizes:
        loaders = h.sharded_loaders(run.probe, size)
        if case in REBUILT:  # one loader per epoch: each sharded, and each epoch's order new
            assert len(loaders) == EPOCHS, run.probe.loaders()
            problems += [p for lo in loaders for p in h.check_sharded_passes(run.probe, h.WORLD, lo)]
            for rank in range(h.WORLD):
                orders = [tuple(p.indices) for lo in loaders for p in h.complete_passes(run.probe, rank, lo)]
                if len(orders) != EPOCHS or len(set(orders)) != EPOCHS:
                    problems.append(f"rank {rank}: an epoch drew the order of an earlier one: {orders}")
            continue
        (loader,) = loaders
        problems += h.check_sharded_passes(run.probe, h.WORLD, loader) + h.check_reshuffled(run.probe, h.WORLD, loader)
    assert not problems, "\n".join(problems)
    for rank in range(h.WORLD):  # gradients averaged before every step, the 2nd included
        rounds = [e["all_reduce" if case in RUNTIME_AVERAGED else "rounds"]
                  for e in run.probe.of("step", rank)]  # (two optimizers stepped after one
        # backward: the second finds its gradients averaged already, in the rounds counted for the first)
        averaged = [r >= 1 or (case in SHARED_BACKWARD and i and rounds[i - 1] >= 1) for i, r in enumerate(rounds)]
        assert len(rounds) >= 2 and all(averaged), f"rank {rank}: all-reduce rounds per step {rounds}"
    saves = [e for e in run.probe.saves() if os.path.basename(e["path"]) in saved]
    assert {e["rank"] for e in saves} == {0} and {os.path.basename(e["path"]) for e in saves} == saved, saves
    assert not any(h.prefixed_keys(e) for e in saves), saves


def test_both_models_of_the_solver_train_as_ddp(runs):
    run = runs["objects_solver"]
    assert run.ok, run.tail()
    assert len(run.probe.params()) == 2, "expected self.G and self.D wrapped"


def test_both_models_of_each_pair_train_as_ddp(runs):
    run = runs["objects_pair"]
    assert run.ok, run.tail()
    assert len(run.probe.params()) == 4, "expected enc, dec, self.G and self.D wrapped"


def test_all_four_models_of_the_cycle_train_as_ddp(runs):
    run = runs["objects_cycle"]
    assert run.ok, run.tail()
    assert len(run.probe.params()) == 4, "expected netG_A, netG_B, netD_A and netD_B wrapped"


def test_the_trained_model_is_the_wrapped_one(runs):
    run = runs["objects_experiment"]
    assert run.ok, run.tail()
    assert len(run.probe.params()) == 1, "expected the Trainer's model wrapped"
    assert "reloaded 49" in run.rank_output[0], run.tail()  # the helper's model stays bare


def test_the_traced_and_reloaded_model_run_on_every_process(runs):
    run = runs["objects_stopper"]
    assert run.ok, run.tail()
    for rank in range(h.WORLD):
        assert "torch.Size([1, 4])" in run.rank_output[rank] or rank, run.tail()  # rank 0 prints
    assert "traced torch.Size([1, 1])" in run.rank_output[0], run.tail()


def test_what_exists_on_the_main_process_only_is_read_everywhere_and_written_once(runs):
    """Class 10: rank 1 has no SummaryWriter (None), yet reads `self.writer.log_dir` (the main
    process's, broadcast); the project's Logger and `scores.txt` are made on rank 0 only; G.pt lands
    in rank 0's run folder. Class 13: `if args.ranking_loss > 0: torch.save(...)` saves once. The
    gradient penalty's own backward did not stop DDP ("Expected to have finished reduction")."""
    run = runs["objects_main_only"]
    assert run.ok, run.tail()
    folder = run.cwd
    (run_dir,) = (folder / "runs").iterdir()  # one writer: the main process's
    events = {p.name for p in run_dir.iterdir() if p.name.startswith("events.")}
    assert len(events) == 1 and {p.name for p in (folder / "logs").iterdir()} == events, "rank 0's Logger only"
    assert len((folder / "scores.txt").read_text().splitlines()) == EPOCHS
    (g_save,) = [e for e in run.probe.saves() if e["path"].endswith("G.pt")]
    assert (folder / os.path.dirname(g_save["path"])).resolve() == run_dir.resolve()  # rank 0's folder
    assert len(run.probe.params()) == 2, "expected self.G and self.D wrapped"


def test_each_aliased_model_trains_as_ddp_and_a_projects_batch_sampler_is_dealt_out(runs):
    """Each round's model is wrapped (the loss without parameters is left bare: DDP would refuse
    it); the project's batch sampler, drawing with numpy, gives each rank every 2nd batch of one
    stream: the same number of batches, no sample on both ranks, a new stream each epoch."""
    run = runs["objects_alias"]
    assert run.ok, run.tail()
    assert len(run.probe.params()) == 3, "expected the model of each of the three rounds wrapped"
    (loader,) = [n for n, info in run.probe.loaders().items() if info["dataset_len"] == 48]
    passes = run.probe.passes()
    per_rank = [passes.get((rank, loader), []) for rank in range(h.WORLD)]
    assert [len(p) for p in per_rank] == [EPOCHS] * h.WORLD, per_rank
    for first, second in zip(*per_rank):
        assert len(first.indices) == len(second.indices) == 24  # 4 batches of 6 each of 8
        assert not set(first.indices) & set(second.indices), (first.indices, second.indices)
    assert per_rank[0][0].indices != per_rank[0][1].indices


def test_a_phase_dicts_validation_loader_is_read_whole_and_the_same_best_weights_are_kept(runs):
    """unet_nb: the 'val' loader shuffles and reaches the loop that trains, yet no optimizer
    steps in its phase: every rank reads all 40 samples each epoch (not its half), so the
    validation loss that picks the weights reloaded at the end is the same everywhere, and the
    parameters agree at exit (the test above). The sums of each phase divided by its data set's
    size are whole (the training phase's added up over the processes by sum_over_shards). The
    look at one training batch before training draws an order the first epoch does not draw again."""
    run = runs["objects_phases"]
    assert run.ok, run.tail()
    (val,) = [n for n, info in run.probe.loaders().items() if info["dataset_len"] == 40]
    assert not h.is_sharded(run.probe.loaders()[val]), run.probe.loaders()[val]
    for rank in range(h.WORLD):
        passes = h.complete_passes(run.probe, rank, val)
        assert [sorted(p.indices) for p in passes] == [list(range(40))] * EPOCHS, passes
    (train,) = h.sharded_loaders(run.probe, 64)  # the look at a batch before training: another order
    for rank in range(h.WORLD):
        look, *passes = run.probe.passes()[rank, train]
        assert not look.complete and [p.complete for p in passes] == [True] * EPOCHS, (look, passes)
        assert look.indices != passes[0].indices[:len(look.indices)], (look.indices, passes[0].indices)
    lines = run.rank_output[0].splitlines()
    assert sum(line.startswith("val loss") for line in lines) == EPOCHS and "best val loss" in lines[-1], run.tail()
    read = [line.split(", read ")[1] for line in lines if ", read " in line]  # the sums of both phases,
    assert read == ["1.00 of the samples"] * (2 * EPOCHS), run.tail()  # divided by the full sizes: whole


def test_data_sets_that_prepare_their_files_and_loaders_made_per_phase(runs):
    """Sentence-VAE: the data sets write their files on the first process, then the others read
    them (no process reads a file another is writing, and no barrier inside the data set waits for
    a process that found the file); each epoch's 'train' loader is sharded and draws a new order
    (the test above: set_epoch by the epoch, not by the phase's name), and every process reads all
    40 validation samples each epoch, so the printed validation loss is the single-GPU one."""
    run = runs["objects_prepared"]
    assert run.ok, run.tail()
    assert sorted(p.name for p in run.cwd.glob("*.json")) == ["train.json", "valid.json"]
    valid = [n for n, info in run.probe.loaders().items() if info["dataset_len"] == 40]
    assert len(valid) == EPOCHS and not any(h.is_sharded(run.probe.loaders()[n]) for n in valid), valid
    for rank in range(h.WORLD):
        passes = [p for n in valid for p in h.complete_passes(run.probe, rank, n)]
        assert [sorted(p.indices) for p in passes] == [list(range(40))] * EPOCHS, passes
    assert sum("over 40" in line for line in run.rank_output[0].splitlines()) == EPOCHS, run.tail()


def test_a_run_folder_named_by_the_clock_is_the_main_process_s(runs):
    """agree-clock: every process names the run folder by the main process's clock, so all read back
    the checkpoint the main process saved there, and no process makes a folder of its own time."""
    run = runs["objects_clock"]
    assert run.ok, run.tail()
    (folder,) = (run.cwd / "runs").iterdir()
    assert (folder / "model.pt").is_file() and f"reloaded from runs/{folder.name}" in run.rank_output[0], run.tail()


def test_a_kept_log_handle_writes_the_main_process_s_log_only(runs):
    """esc50_crossval's Tee: the handle opened with `open(*args, **kwargs)` is the file on rank 0 and
    os.devnull on rank 1 (`open_on_main`), so the log holds each epoch's line once, and the
    runtime's self-check finds no file both processes wrote (before: `shared-write` of train.log)."""
    run = runs["objects_tee"]
    assert run.ok, run.tail()
    lines = (run.cwd / "train.log").read_text().splitlines()
    assert [line.split(" loss ")[0] for line in lines] == [f"epoch {e}" for e in range(EPOCHS)], lines
    assert "shared-write" not in run.rank_output[0] and lines == [
        line for line in run.rank_output[0].splitlines() if line.startswith("epoch ")], run.tail()


def test_an_ema_helper_copies_the_module_not_the_wrapper(runs):
    """`EMA(model)` after the wrap deep-copied the DistributedDataParallel wrapper: a second wrapper
    (its forward a collective of its own: a buffer broadcast with BatchNorm), its state dict read
    through `.module`. The helper is handed the module (`copy.deepcopy(model.module)`): the shadow is
    the model's class on every process, and its state dict is saved as the single-GPU script's."""
    run = runs["objects_ema"]
    assert run.ok, run.tail()
    lines = [line for line in run.rank_output[0].splitlines() if line.startswith("epoch ")]
    assert len(lines) == EPOCHS and all(line.endswith("shadow Sequential") for line in lines), run.tail()


def test_episodes_that_end_apart_on_each_process_are_left_together(runs):
    """Each process's environment ends its episodes at steps it draws from the OS and raises when it
    is stepped past an end: `if agree_any(done): break` has every process leave at the first end,
    so none raises, every step's backward is matched on the other process, and the replicas agree."""
    run = runs["objects_episodes"]
    assert run.ok and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    assert not any("after the episode ended" in out for out in run.rank_output.values()), run.tail()
    problems = h.check_params_identical(run.probe, h.WORLD) + h.check_optimizers_identical(run.probe, h.WORLD)
    assert not problems and run.probe.optimizers("step2"), problems
    steps = [line for line in run.rank_output[0].splitlines() if line.startswith("episode ")]
    assert len(steps) == 2 * EPOCHS, run.tail()
    saves = [e for e in run.probe.saves() if os.path.basename(e["path"]) == "policy.pt"]
    assert {e["rank"] for e in saves} == {0} and not any(h.prefixed_keys(e) for e in saves), saves


def test_an_iterable_datasets_stream_is_dealt_out_to_the_processes(runs):
    """Two workers read 36 and 27 samples a pass: each process takes its half of every pair, 18 + 13
    (the 27th, a pair short, dropped on both), 31 samples in 3 + 2 batches of 8, none on both
    processes, the same samples each epoch (the parts are read in order); the parameters agree."""
    run = runs["objects_stream"]
    assert run.ok and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    problems = h.check_params_identical(run.probe, h.WORLD) + h.check_optimizers_identical(run.probe, h.WORLD)
    assert not problems, "\n".join(problems)
    (loader,) = {e["loader"] for e in run.probe.of("fetch")}
    passes = run.probe.passes()
    per_rank = [passes.get((rank, loader), []) for rank in range(h.WORLD)]
    assert [len(p) for p in per_rank] == [EPOCHS] * h.WORLD, per_rank
    for rank in range(h.WORLD):
        assert [len(p.indices) for p in per_rank[rank]] == [31] * EPOCHS, per_rank[rank]
        assert len({frozenset(p.indices) for p in per_rank[rank]}) == 1, "a pass read other samples"
        assert len([e for e in run.probe.of("step", rank)]) == 5 * EPOCHS
    assert not set(per_rank[0][0].indices) & set(per_rank[1][0].indices), per_rank
    assert len(set(per_rank[0][0].indices)) == 31
    assert "epoch 2 samples 31" in run.rank_output[0], run.tail()


def test_a_stream_a_generator_reached_through_a_partial_reads_is_dealt_out_to_the_processes(runs):
    """40 samples a pass: each process takes 20 (5 batches of 4), none read by both, the same 20 each
    epoch (read in order); the parameters agree. Before, `iter_batches(...)` of `iter_batches =
    partial(Task.iter_batches, ...)` ran nothing ddpify knew: both processes read all 40."""
    run = runs["objects_stream_partial"]
    assert run.ok and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    problems = h.check_params_identical(run.probe, h.WORLD) + h.check_optimizers_identical(run.probe, h.WORLD)
    assert not problems, "\n".join(problems)
    passes = run.probe.passes()  # a loader made anew by each epoch's call of the generator: one pass each
    per_rank = [[p for (r, _), ps in passes.items() if r == rank for p in ps] for rank in range(h.WORLD)]
    assert [len(p) for p in per_rank] == [EPOCHS] * h.WORLD, per_rank
    for rank in range(h.WORLD):
        assert [len(p.indices) for p in per_rank[rank]] == [20] * EPOCHS, per_rank[rank]
        assert len({frozenset(p.indices) for p in per_rank[rank]}) == 1, "a pass read other samples"
        assert len([e for e in run.probe.of("step", rank)]) == 5 * EPOCHS
    assert not set(per_rank[0][0].indices) & set(per_rank[1][0].indices), per_rank
    assert "epoch 2 samples 20" in run.rank_output[0], run.tail()


def test_a_model_built_inside_its_holders_construction_is_synced_and_saved_once_without_prefix(runs):
    """`EMA(Net())`: the model's gradients are averaged before every step (sync_gradients: all-reduces, no
    DDP rounds), the loader sharded and reshuffled, the parameters the same on every process, the model
    and its average saved by the main process with the single-GPU keys."""
    run = runs["objects_inline"]
    assert run.ok and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    problems = h.check_params_identical(run.probe, h.WORLD) + h.check_optimizers_identical(run.probe, h.WORLD)
    (loader,) = h.sharded_loaders(run.probe, 64)
    problems += h.check_sharded_passes(run.probe, h.WORLD, loader) + h.check_reshuffled(run.probe, h.WORLD, loader)
    assert not problems, "\n".join(problems)
    for rank in range(h.WORLD):
        averaged = [e["all_reduce"] for e in run.probe.of("step", rank)]
        assert len(averaged) == 4 * EPOCHS and all(averaged), f"rank {rank}: all-reduces per step {averaged}"
    saves = [e for e in run.probe.saves() if os.path.basename(e["path"]) in ("model.pt", "ema.pt")]
    assert {e["rank"] for e in saves} == {0} and len(saves) == 2, saves
    assert not any(h.prefixed_keys(e) for e in saves), saves


def test_a_datapipes_stream_is_dealt_out_to_the_processes(runs):
    """40 samples a pass: each process takes 20 (in batches of 8, 8 and 4), none read by both, the
    same 20 each epoch (the pipe is read in order); the parameters agree."""
    run = runs["objects_datapipe"]
    assert run.ok and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    problems = h.check_params_identical(run.probe, h.WORLD) + h.check_optimizers_identical(run.probe, h.WORLD)
    assert not problems, "\n".join(problems)
    (loader,) = {e["loader"] for e in run.probe.of("fetch")}
    passes = run.probe.passes()
    per_rank = [passes.get((rank, loader), []) for rank in range(h.WORLD)]
    assert [len(p) for p in per_rank] == [EPOCHS] * h.WORLD, per_rank
    for rank in range(h.WORLD):
        assert [len(p.indices) for p in per_rank[rank]] == [20] * EPOCHS, per_rank[rank]
        assert len({frozenset(p.indices) for p in per_rank[rank]}) == 1, "a pass read other samples"
        assert len([e for e in run.probe.of("step", rank)]) == 3 * EPOCHS
    assert not set(per_rank[0][0].indices) & set(per_rank[1][0].indices), per_rank
    assert "epoch 2 samples 20" in run.rank_output[0], run.tail()


def test_a_meter_made_for_the_pass_prints_the_whole_sets_figures(runs):
    """The targets are 0..63: each epoch the main process prints the mean target over all 64 samples,
    31.5, not one process's 32 (the meters' sums and counts are added up over the processes after the
    loop); the parameters agree."""
    run = runs["objects_meter"]
    assert run.ok and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    problems = h.check_params_identical(run.probe, h.WORLD) + h.check_optimizers_identical(run.probe, h.WORLD)
    assert not problems, "\n".join(problems)
    lines = [line for line in run.rank_output[0].splitlines() if line.startswith("epoch ")]
    assert len(lines) == EPOCHS and all(line.endswith(" target 31.5000 over 64") for line in lines), run.tail()
    assert all(" over 64 " in line for line in lines), lines  # the loss meter's count too


def test_a_logging_configuration_files_log_and_a_helpers_log_are_written_once(runs):
    """`logging.config.fileConfig("logging.conf", defaults)`'s FileHandler: one line per epoch, the
    main process's (the other's handler a NullHandler); the helper's two lines before and after the
    corpus is read, once; the self-check names no file written by both processes."""
    run = runs["objects_logs"]
    assert run.ok, run.tail()
    logs = run.cwd / "runs"
    assert [line.split()[:2] for line in (logs / "train.log").read_text().splitlines()] == \
        [["epoch", str(e)] for e in range(EPOCHS)]
    assert (logs / "log.txt").read_text().splitlines() == ["reading the corpus", "64 lines, 10 words"]
    assert not any("shared-write" in text for text in [run.output, *run.rank_output.values()]), run.tail()
