"""Converted projects (several modules, ddpify.inputs.program) really train as DDP under torchrun.

fixtures/project_trainer: the entry builds the model (models package) and the optimizer, the
loaders come from data.py, and a Trainer class (trainer.py) that receives model and optimizer
owns the epoch loop, the CSV log and the checkpoint. fixtures/project_shared: utils.py builds
the loader the entry trains on, and is shared with a second entry point, evaluate.py.

Each project is converted as `ddpify convert train.py -o DIR/` does (the changed modules
written over a copy of the project), then launched once with torchrun (2 processes) and once
with plain python, all at the same time (and project_trainer once more through `ddpify run`); the checks read the probe's records (under
torchrun it also counts DDP's gradient all-reduce rounds before each optimizer step).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ddpify.convert import convert_program
from ddpify.inputs.program import load

from . import harness as h

pytestmark = pytest.mark.slow

EPOCHS = 3
PROJECTS = {  # case: (training set size, checkpoint, the line every epoch prints)
    "project_trainer": (96, "trainer_mlp.pt", "train loss"),
    "project_shared": (80, "shared_net.pt", "loss"),
}


def converted(case: str, folder: Path) -> Path:
    """A copy of the project with the converted files over it; the entry's path."""
    shutil.copytree(h.FIXTURES / case / "before", folder)
    entry = folder / "train.py"
    result = convert_program(load(entry, entry.read_bytes()))
    for rel, each in [("train.py", result), *result.modules.items()]:
        if each.changed:
            (folder / rel).write_bytes(each.output)
    return entry


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("projects")
    pending = {}
    for case in PROJECTS:
        for mode in ("torchrun", "python"):
            entry = converted(case, root / case / mode)
            args = (entry, ["--epochs", str(EPOCHS)], entry.parent, root / f"probe-{case}-{mode}")
            pending[case, mode] = h.start_torchrun(*args, count=True) if mode == "torchrun" else h.start_python(*args)
    project = root / "ddpify_run"  # the same project through `ddpify run` (its own run folder)
    shutil.copytree(h.FIXTURES / "project_trainer" / "before", project)
    pending["ddpify run"] = h.Pending([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "2", "train.py",
                                       "--epochs", str(EPOCHS)], project, None, h.TIMEOUT_S)
    return {key: p.wait() for key, p in pending.items()}


@pytest.mark.parametrize("case", PROJECTS)
def test_torchrun_trains_the_converted_project_as_ddp(runs, case):
    size, checkpoint, progress = PROJECTS[case]
    run = runs[case, "torchrun"]
    assert run.ok and run.probe.ranks == [0, 1] and run.probe.exited() == {0: 1, 1: 1}, run.tail()
    loaders = h.sharded_loaders(run.probe, size)
    assert len(loaders) == 1, f"expected one sharded training loader: {run.probe.loaders()}"
    problems = h.check_sharded_passes(run.probe, h.WORLD, loaders[0]) \
        + h.check_reshuffled(run.probe, h.WORLD, loaders[0]) + h.check_params_identical(run.probe, h.WORLD)
    assert not problems, "\n".join(problems)
    assert list(run.probe.params()) == [0], "expected one DDP-wrapped model"
    for rank in range(h.WORLD):  # gradients averaged before every step, the 2nd included: the
        rounds = [e["rounds"] for e in run.probe.of("step", rank)]  # replicas stay identical
        assert len(rounds) >= 2 and all(r >= 1 for r in rounds), f"rank {rank}: all-reduce rounds per step {rounds}"
    saves = [e for e in run.probe.saves() if e["path"] == checkpoint]
    assert [e["rank"] for e in saves] == [0] and not h.prefixed_keys(saves[0]), saves
    assert run.rank_output[0].count(progress) == EPOCHS and progress not in run.rank_output[1], run.tail()


@pytest.mark.parametrize("case", PROJECTS)
def test_plain_python_runs_the_converted_project_on_all_the_data(runs, case):
    size, checkpoint, _ = PROJECTS[case]
    run = runs[case, "python"]
    assert run.ok and run.probe.ranks == [0], run.tail()
    (loader,) = h.sharded_loaders(run.probe, size)
    passes = h.complete_passes(run.probe, 0, loader)
    assert len(passes) == EPOCHS and all(sorted(p.indices) == list(range(size)) for p in passes)
    assert (run.cwd / checkpoint).is_file()


def test_trainer_writes_its_csv_log_once_per_epoch(runs):
    run = runs["project_trainer", "torchrun"]
    assert run.ok, run.tail()
    rows = (run.cwd / "history.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == [str(e) for e in range(EPOCHS)], rows


def test_the_shared_modules_still_serve_the_unconverted_evaluation_entry_point(runs):
    """evaluate.py, not converted, runs with plain python on the converted utils.py and models
    and reads the checkpoint the converted training saved."""
    run = runs["project_shared", "torchrun"]
    assert run.ok, run.tail()
    evaluation = h.run_python(run.cwd / "evaluate.py", [], run.cwd, probe_dir=None)
    assert evaluation.ok and "accuracy" in evaluation.output, evaluation.tail()


def test_ddpify_run_trains_the_project_from_its_own_folder_and_changes_no_file_of_it(runs):
    run = runs["ddpify run"]
    assert run.ok, run.tail()
    before = h.FIXTURES / "project_trainer" / "before"
    for path in before.rglob("*.py"):
        assert (run.cwd / path.relative_to(before)).read_bytes() == path.read_bytes(), path
    rows = (run.cwd / "history.csv").read_text().splitlines()  # written by rank 0 only: the
    assert len(rows) == EPOCHS, rows  # converted trainer.py ran, not the original one
    assert (run.cwd / "trainer_mlp.pt").is_file()  # relative paths: the working directory
