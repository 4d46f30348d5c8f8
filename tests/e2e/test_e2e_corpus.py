"""Every corpus training script, converted by ddpify, trains correctly as DDP under torchrun.

Each training script (fixtures/<name>/before.py: the corpus files, then fixtures of our own for
failure classes found on real public scripts) is converted
with ``convert()`` and run once under ``torchrun --standalone --nproc_per_node=2`` and once
with plain ``python``, each in a fresh working directory, with the probe
(probe/sitecustomize.py) recording from inside every process: DataLoader fetches per pass,
``torch.save`` calls, DDP-wrapped models and their final parameters. All tests below assert on
those records; each script runs once per mode whatever the number of tests (``launches``
fixture). To keep the suite's time in check the scripts run as two batches, one per mode
(``harness.start_batch``): one torchrun launch whose workers run every script, each in a
process of its own forked after ``import torch``, and one plain-python process doing the same.

already_ddp.py and inference_only.py must come out of ``convert()`` byte-identical.
"""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Sequence

import pytest

from . import harness as h

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Spec:
    """What a correct conversion of one corpus script shows at run time (corpus README)."""

    args: Sequence[str] = ()
    # dataset length -> does the training loader over it shuffle (so must reshuffle per epoch)
    train: Dict[int, bool] = field(default_factory=dict)
    passes: int = 2  # complete training passes at least (per rank, and in the plain run)
    models: int = 1  # DDP-wrapped models
    # dataset length -> how its evaluation runs: "split" (shard-eval) or "whole" (kept, with a note)
    evals: Dict[int, str] = field(default_factory=dict)


SPECS = {
    "mnist_style": Spec(args=["--save-model"], train={1024: False}, evals={500: "split"}),  # shuffles on CUDA only
    "quickstart_toplevel": Spec(train={2048: True}, passes=3),
    "trainer_class": Spec(args=["5", "2"], train={2048: True}, passes=5),
    "gan_two_models": Spec(train={512: True}, passes=2, models=2),
    "explicit_sampler": Spec(train={400: True}, passes=3),
    "dataparallel_legacy": Spec(train={2048: True}, passes=3, evals={512: "split"}),
    "amp_accumulation": Spec(train={1536: True}, passes=3, evals={384: "split"}),
    "resume_early_stop": Spec(train={384: True}, passes=2, evals={256: "whole"}),  # a shared run_epoch
    "rnn_custom_methods": Spec(train={399: True}, passes=3),
    "manual_batching": Spec(train={}),  # slices tensors by hand: no loader to shard
    "dict_loaders": Spec(train={512: True}, passes=4),
    "steps_compile_bn": Spec(train={4000: True}, passes=2),  # WeightedRandomSampler
    # real-world classes found outside the corpus (fixtures of our own)
    "teacher_student": Spec(train={512: True}, passes=6, models=3, evals={256: "split"}),  # train(model, ...) x 3
    "gan_three_heads": Spec(train={320: True}, passes=2, models=2),  # heads unused in some steps
    "rebound_model": Spec(train={256: True}, passes=2),  # a whole model reloaded into the same name
    "step_loop_next": Spec(train={160: True, 192: False}, passes=1),  # next(it), cycle()
    "dataparallel_resume": Spec(train={256: True}, passes=2),  # resumes from `module.` checkpoints
    "rank_seed": Spec(train={800: True}, passes=2),  # unseeded random_split
    "rank_quiet": Spec(train={512: True}, passes=2),  # logging and sys.stdout.write progress
    "critic_iterator": Spec(train={256: True}, passes=2, models=2),  # iter(loader) per epoch, next() inside
    # experiments that train more than once, scripts without main(), files read back (issue 20)
    "toplevel_helper_train": Spec(train={320: True}, passes=2),  # module-level set-up, train() helper
    "retrained_models": Spec(train={256: True}, passes=6, models=3),  # `model = MLP()` rebuilt, retrained
    "trainer_before_wrap": Spec(train={288: True}, passes=4, models=4),  # Trainer(...).train(), aliases, Fitter
    "checkpoint_whole_model": Spec(train={256: True}, passes=2),  # {"model": model} saved, loaded back
    "file_read_back": Spec(train={320: True}, passes=2),  # pickle/json/np/text written, then read
    "permutation_between_trainings": Spec(train={480: True, 240: True}, passes=2, models=2),
    "repeated_passes": Spec(train={240: True}, passes=4),  # two phases, each from epoch 0
    "constructor_flag_branch": Spec(train={300: True}, passes=2),  # `if self.use_norm:` fixed per model
    "data_init": Spec(train={192: True}, passes=2),  # ActNorm set from the first batch (each process's own)
    "unfreeze_backbone": Spec(train={32: True}, passes=3),  # frozen when wrapped, unfrozen at epoch 1
}
UNCHANGED = ["already_ddp", "inference_only"]
NAMES = sorted(SPECS)


class Launches:
    """Both launches of one converted script: ``torchrun`` (2 ranks) and ``python``."""

    def __init__(self, name: str, runs: Dict[str, h.Run]):
        self.name, self.spec, self.runs = name, SPECS[name], runs
        self.dirs = {mode: run.cwd for mode, run in runs.items()}

    def require_ok(self, mode: str = "both") -> None:
        for m in ("torchrun", "python") if mode == "both" else (mode,):
            run = self.runs[m]
            assert run.ok, f"converted {self.name}.py failed under {m}:\n{run.tail()}"

    def probe(self, mode: str) -> h.Probe:
        return self.runs[mode].probe

    def files(self, mode: str):
        return [f for f in h.files_under(self.dirs[mode]) if f != f"{self.name}.py"]


def launch_all(names: Sequence[str], root: Path) -> Dict[str, Launches]:
    """Convert every script of ``names`` twice, then run them all: one torchrun batch and, at the
    same time (on the core torchrun's launcher leaves idle), one plain-python batch."""
    pending = {}
    for mode in ("torchrun", "python"):
        programs = {}
        for name in names:
            folder = root / name / mode
            folder.mkdir(parents=True)
            script = folder / f"{name}.py"
            h.convert_to(h.FIXTURES / name / "before.py", script)
            programs[name] = h.Program(script, SPECS[name].args, folder, root / name / f"probe-{mode}")
        pending[mode] = h.start_batch(programs, root / f"batch-{mode}", h.WORLD if mode == "torchrun" else None)
    runs = {mode: p.wait() for mode, p in pending.items()}
    return {name: Launches(name, {mode: runs[mode][name] for mode in runs}) for name in names}


@pytest.fixture(scope="module")
def launches(request, tmp_path_factory):
    """name -> Launches. The first use launches every script a selected test of this module is
    parametrized with (one batch per mode); a script outside them is launched alone on first use."""
    wanted = sorted({item.callspec.params["name"] for item in request.session.items
                     if item.module is request.module and hasattr(item, "callspec")
                     and item.callspec.params.get("name") in SPECS})
    cache: Dict[str, Launches] = {}

    def get(name: str) -> Launches:
        if name not in cache:
            batch = [n for n in wanted if n not in cache] if name in wanted else [name]
            cache.update(launch_all(batch, tmp_path_factory.mktemp("corpus")))
        return cache[name]

    return get


def train_loader(probe: h.Probe, dataset_len: int, where: str) -> int:
    loaders = h.sharded_loaders(probe, dataset_len)
    assert loaders, (f"{where}: no sharded loader over the {dataset_len}-sample training set; "
                     f"iterated loaders: {probe.loaders()}")
    return loaders[0]


# --------------------------------------------------------------------------- every script


@pytest.mark.parametrize("name", NAMES)
def test_runs_under_torchrun_and_plain_python(launches, name):
    runs = launches(name)
    runs.require_ok()
    assert runs.probe("torchrun").exited() == {0: 1, 1: 1}, runs.runs["torchrun"].tail()
    assert runs.probe("python").exited() == {0: 1}, runs.runs["python"].tail()


@pytest.mark.parametrize("name", NAMES)
def test_training_data_is_sharded_per_epoch(launches, name):
    """Per pass: equal counts per rank, disjoint shards covering the data, reshuffled."""
    runs = launches(name)
    runs.require_ok("torchrun")
    probe = runs.probe("torchrun")
    for dataset_len, shuffles in runs.spec.train.items():
        loader = train_loader(probe, dataset_len, "torchrun")
        info = probe.loaders()[loader]
        problems = h.check_sharded_passes(probe, h.WORLD, loader)
        assert not problems, "\n".join(problems)
        for rank in range(h.WORLD):
            complete = h.complete_passes(probe, rank, loader)
            assert len(complete) >= runs.spec.passes, (
                f"rank {rank}: {len(complete)} complete passes over the training data, "
                f"expected at least {runs.spec.passes}")
        if info["sampler"] == "DistributedSampler":
            assert info["shuffle"] is shuffles, (
                f"DistributedSampler(shuffle={info['shuffle']}), the original "
                f"{'shuffles' if shuffles else 'does not shuffle'} on CPU")
        if shuffles:
            problems = h.check_reshuffled(probe, h.WORLD, loader)
            assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_plain_python_trains_on_the_full_dataset(launches, name):
    runs = launches(name)
    runs.require_ok("python")
    probe = runs.probe("python")
    for dataset_len in runs.spec.train:
        loader = train_loader(probe, dataset_len, "python")
        problems = h.check_sharded_passes(probe, 1, loader)
        assert not problems, "\n".join(problems)
        complete = h.complete_passes(probe, 0, loader)
        assert len(complete) >= runs.spec.passes
        info = probe.loaders()[loader]
        if info["sampler"] == "DistributedSampler" and not info["drop_last"]:
            for p in complete:
                assert sorted(p.indices) == list(range(dataset_len)), f"pass {p.number}"


@pytest.mark.parametrize("name", NAMES)
def test_replicas_stay_identical(launches, name):
    """Every DDP-wrapped model (both GAN nets) ends with the same parameters on every rank, and
    every optimizer's parameters are the same on every rank after its 2nd step and at exit."""
    runs = launches(name)
    runs.require_ok("torchrun")
    probe = runs.probe("torchrun")
    wrapped = {rank: [e["module"] for e in probe.of("ddp", rank)] for rank in range(h.WORLD)}
    assert wrapped[0] == wrapped[1] and len(wrapped[0]) == runs.spec.models, (
        f"DDP-wrapped models per rank: {wrapped}, expected {runs.spec.models}")
    problems = h.check_params_identical(probe, h.WORLD) + h.check_optimizers_identical(probe, h.WORLD)
    assert not problems, "\n".join(problems) + "\n" + runs.runs["torchrun"].tail(8)


@pytest.mark.parametrize("name", NAMES)
def test_side_effects_happen_once_with_clean_checkpoints(launches, name):
    """torch.save on rank 0 only, the same files as one process, no module./_orig_mod. keys."""
    runs = launches(name)
    runs.require_ok()
    ddp, single = runs.probe("torchrun"), runs.probe("python")
    by_rank = {e["rank"] for e in ddp.saves()}
    assert by_rank <= {0}, f"torch.save ran on ranks {sorted(by_rank)}: " + str(
        [(e["rank"], e["path"]) for e in ddp.saves() if e["rank"] != 0])
    assert {e["path"] for e in ddp.saves()} == {e["path"] for e in single.saves()}
    assert runs.files("torchrun") == runs.files("python"), "the two runs wrote different files"
    for mode, probe in (("torchrun", ddp), ("python", single)):
        for e in probe.saves():
            bad = h.prefixed_keys(e)
            assert not bad, f"{mode}: {e['path']} has DDP/compile-prefixed keys {bad}"


@pytest.mark.parametrize("name", NAMES)
def test_evaluation_is_split_exactly_once_or_read_whole(launches, name):
    """Every loader training does not shard: split for evaluation, each sample fetched by exactly
    one rank in every pass (shard-eval), or read whole by every rank."""
    runs = launches(name)
    runs.require_ok("torchrun")
    probe = runs.probe("torchrun")
    found = h.evaluation_loaders(probe)
    problems = []
    for loader, kind in found.items():
        problems += (h.split_problems if kind == "split" else h.whole_problems)(probe, h.WORLD, loader)
    assert not problems, "\n".join(problems)
    by_length = {probe.loaders()[loader]["dataset_len"]: kind for loader, kind in found.items()}
    for length, kind in runs.spec.evals.items():
        assert by_length.get(length) == kind, f"evaluation over {length} samples: {by_length.get(length)}, expected {kind}"


# --------------------------------------------------------------------------- per script


def test_steps_compile_bn_weighted_sampling_keeps_class_balance(launches):
    """Equal per-rank counts per pass, and the 5% class drawn ~1/3 of the time on each rank."""
    import torch

    runs = launches("steps_compile_bn")
    runs.require_ok()
    source = (h.FIXTURES / "steps_compile_bn" / "before.py").read_text()
    func = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == "imbalanced_blobs")
    namespace = {"torch": torch}
    exec(compile(ast.Module([func], []), "imbalanced_blobs", "exec"), namespace)
    labels = namespace["imbalanced_blobs"](4000, seed=1)[1].tolist()
    assert labels.count(2) / len(labels) < 0.08, "the minority class is not rare in the data"
    for mode, world in (("torchrun", h.WORLD), ("python", 1)):
        probe = runs.probe(mode)
        loader = train_loader(probe, 4000, mode)
        for rank in range(world):
            passes = h.complete_passes(probe, rank, loader)
            assert len(passes) >= 2
            for p in passes:
                share = sum(labels[i] == 2 for i in p.indices) / len(p.indices)
                assert share > 0.2, (f"{mode} rank {rank} pass {p.number}: minority class is "
                                     f"{share:.1%} of the draws: the sample weights were lost")
        if world > 1:
            for p0, p1 in zip(*(probe.passes()[(r, loader)] for r in range(world))):
                assert p0.indices != p1.indices, f"pass {p0.number}: both ranks drew the same"


def test_resume_early_stop_chain_under_torchrun(launches, tmp_path):
    """Both ranks stop in the same epoch; then ``--resume last.pt --patience 5`` resumes."""
    runs = launches("resume_early_stop")
    runs.require_ok()
    probe = runs.probe("torchrun")
    loader = train_loader(probe, 384, "torchrun")
    epochs = [len(probe.passes()[(r, loader)]) for r in range(h.WORLD)]
    assert epochs[0] == epochs[1] < 40, f"epochs run per rank: {epochs} (no early stop?)"
    folder = tmp_path / "resume"
    shutil.copytree(runs.dirs["torchrun"], folder)
    resumed = h.run_torchrun(folder / "resume_early_stop.py", ["--resume", "last.pt",
                             "--patience", "5"], folder, tmp_path / "probe-resume")
    assert resumed.ok, resumed.tail()
    assert "=> resumed from epoch" in resumed.rank_output[0], resumed.tail()
    assert resumed.probe.exited() == {0: 1, 1: 1}
    loader = train_loader(resumed.probe, 384, "resume")
    assert not h.check_sharded_passes(resumed.probe, h.WORLD, loader)
    assert not h.check_params_identical(resumed.probe, h.WORLD)
    assert {e["rank"] for e in resumed.probe.saves()} == {0}


def beside_the_run(runs, folder: Path, fixture: str, name: str) -> Path:
    """A copy of the torchrun run's working directory with ``fixtures/<fixture>/before.py`` in it
    as ``name`` (an original script that reads what the converted one wrote)."""
    shutil.copytree(runs.dirs["torchrun"], folder)
    shutil.copy(h.FIXTURES / fixture / "before.py", folder / name)
    return folder


def test_dataparallel_resume_loads_a_checkpoint_of_the_original_script(launches, tmp_path):
    """The single-GPU DataParallel script's checkpoint (`module.` keys) resumes under torchrun."""
    runs = launches("dataparallel_resume")
    runs.require_ok()
    folder = beside_the_run(runs, tmp_path / "resume", "dataparallel_resume", "original.py")
    original = h.run_python(folder / "original.py", ["--epochs", "1"], folder, probe_dir=None)
    assert original.ok, original.tail()
    resumed = h.run_torchrun(folder / "dataparallel_resume.py", ["--resume", "checkpoint.pt", "--epochs", "2"],
                             folder, tmp_path / "probe-resume")
    assert resumed.ok, resumed.tail()
    assert "resumed from epoch 0" in resumed.rank_output[0], resumed.tail()
    assert not h.check_params_identical(resumed.probe, h.WORLD)


def test_step_loop_reshuffles_each_new_pass(launches):
    """`labelled_iter = iter(labelled_loader)` restarts 2+ times in 24 steps: new order each time."""
    runs = launches("step_loop_next")
    runs.require_ok()
    probe = runs.probe("torchrun")
    loader = train_loader(probe, 160, "torchrun")
    problems = h.check_reshuffled(probe, h.WORLD, loader)
    assert not problems, "\n".join(problems)


def test_rank_quiet_progress_and_logging_come_from_rank_0_only(launches):
    runs = launches("rank_quiet")
    runs.require_ok("torchrun")
    out = runs.runs["torchrun"].rank_output
    assert "training on 512 samples" in out[0] and "16/16 loss" in out[0], runs.runs["torchrun"].tail()
    assert "training on" not in out[1] and "loss" not in out[1], out[1]


def test_mnist_style_checkpoint_loads_strictly_in_inference_only(launches, tmp_path):
    """The corpus's inference_only.py loads digits_cnn.pt strictly and gets the same loss."""
    runs = launches("mnist_style")
    runs.require_ok()
    folder = beside_the_run(runs, tmp_path / "inference", "inference_only", "inference_only.py")
    run = h.run_python(folder / "inference_only.py", ["--checkpoint", "digits_cnn.pt"], folder,
                       probe_dir=None)
    assert run.ok, run.tail()
    trained = re.findall(r"Average loss: ([0-9.]+)", runs.runs["torchrun"].rank_output[0])
    evaluated = re.findall(r"mean NLL: ([0-9.]+)", run.output)
    assert trained and evaluated and trained[-1] == evaluated[-1], (
        f"final test loss on rank 0 {trained[-1:]} != inference_only's {evaluated}")


def test_amp_accumulation_writes_one_csv_row_per_epoch(launches):
    runs = launches("amp_accumulation")
    runs.require_ok()
    for mode in ("torchrun", "python"):
        lines = (runs.dirs[mode] / "train_log.csv").read_text().splitlines()
        assert len(lines) == 1 + 3, (f"{mode}: train_log.csv has {len(lines)} lines, expected "
                                     "a header + 3 epochs:\n" + "\n".join(lines))
        assert lines[0].startswith("epoch,")


def test_rnn_custom_methods_generates_through_module(launches):
    runs = launches("rnn_custom_methods")
    runs.require_ok()
    assert "Sample:" in runs.runs["torchrun"].rank_output[0], runs.runs["torchrun"].tail()


def test_quickstart_toplevel_reloads_on_both_ranks(launches):
    runs = launches("quickstart_toplevel")
    runs.require_ok()
    assert "Predicted:" in runs.runs["torchrun"].rank_output[0], runs.runs["torchrun"].tail()
    assert runs.probe("torchrun").exited() == {0: 1, 1: 1}


def test_checkpoint_whole_model_pickles_the_bare_model(launches):
    """`torch.save({"model": model, ...})` and `torch.save([model, ...])` hold the user's module."""
    runs = launches("checkpoint_whole_model")
    runs.require_ok()
    for mode in ("torchrun", "python"):
        assert "restored a Classifier and a Classifier" in runs.runs[mode].rank_output[0], runs.runs[mode].tail()


def test_file_read_back_every_rank_reads_what_the_main_process_wrote(launches):
    runs = launches("file_read_back")
    runs.require_ok()
    for rank in range(h.WORLD):  # rank 1's print is silenced: its reads succeeded if it exited 0
        assert runs.probe("torchrun").exited()[rank] == 1
    assert "vocab 200000, embeddings (400, 16)" in runs.runs["torchrun"].rank_output[0]
    lines = (runs.dirs["torchrun"] / "train_log.txt").read_text().splitlines()
    assert len(lines) == 2, f"train_log.txt has {len(lines)} lines, expected one per epoch"


def test_constructor_flag_branch_needs_no_unused_parameter_search(launches):
    """`if self.use_norm:` with every model built `use_norm=True`: every step uses every parameter."""
    runs = launches("constructor_flag_branch")
    runs.require_ok()
    ddp = runs.probe("torchrun").of("ddp")
    assert ddp and not any(e["find_unused_parameters"] for e in ddp), ddp
    output = runs.runs["torchrun"].output + "".join(runs.runs["torchrun"].rank_output.values())
    assert "did not find any unused parameters" not in output


@pytest.mark.parametrize("name", UNCHANGED)
def test_scripts_without_training_are_left_unchanged(name):
    source = (h.FIXTURES / name / "before.py").read_bytes()
    assert h.convert(source).output == source
