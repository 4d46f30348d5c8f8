"""The canonical single-GPU script, converted, really trains as DDP under torchrun (CPU, gloo).

fixtures/canonical/before.py stays plain single-GPU code: its training set writes the indices
it serves to ``--log-dir/served-<pid>.jsonl`` (a data-access audit keyed by pid, which any
script may do; it does not read RANK or know about DDP). The probe (probe/sitecustomize.py)
tells which pid is which rank, and records the DataLoader fetches, saves and final parameters.
The audit, written from inside the dataset, is the evidence for sharding; the probe's fetch log
must agree with it, which also validates the probe that test_e2e_corpus.py relies on.

One torchrun launch and one plain-python launch of the converted file, shared by all tests.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from . import harness as h

pytestmark = pytest.mark.slow

BEFORE = h.FIXTURES / "canonical" / "before.py"
EPOCHS, NUM_TRAIN, BATCH = 3, 96, 8
ARGS = ["--epochs", str(EPOCHS), "--num-train", str(NUM_TRAIN), "--batch-size", str(BATCH),
        "--out", "weights.pt", "--log-dir", "audit"]


class Launch:
    """A launch of the converted script plus the training set's audit, per rank."""

    def __init__(self, root: Path, mode: str):
        self.dir = root / mode
        (self.dir / "audit").mkdir(parents=True)
        script = self.dir / "canonical_ddp.py"
        h.convert_to(BEFORE, script)
        start = h.start_torchrun if mode == "torchrun" else h.start_python
        self.pending = start(script, ARGS, self.dir, root / f"probe-{mode}")
        self.world = h.WORLD if mode == "torchrun" else 1

    def wait(self) -> "Launch":
        self.run = self.pending.wait()
        return self

    def require_ok(self):
        assert self.run.ok, f"the converted canonical script failed:\n{self.run.tail()}"

    @property
    def probe(self) -> h.Probe:
        return self.run.probe

    def audit(self) -> dict:
        """rank -> the indices the training set served in that process, in order."""
        rank_of = {e["pid"]: e["rank"] for e in self.probe.of("start")}
        served = {}
        for path in sorted((self.dir / "audit").glob("served-*.jsonl")):
            pid = int(path.stem.split("-")[1])
            assert pid in rank_of, f"{path.name}: a process the probe did not see"
            lines = path.read_text().splitlines()
            served[rank_of[pid]] = [json.loads(line)["idx"] for line in lines]
        return served

    def epochs(self) -> dict:
        """rank -> [indices of epoch 1, epoch 2, ...], cut from the audit by the shard size."""
        shard = -(-NUM_TRAIN // self.world)
        result = {}
        for rank, served in self.audit().items():
            assert len(served) == EPOCHS * shard, (
                f"rank {rank} served {len(served)} samples, expected {EPOCHS} epochs x {shard}")
            result[rank] = [served[i:i + shard] for i in range(0, len(served), shard)]
        return result

    def train_loader(self) -> int:
        loaders = h.sharded_loaders(self.probe, NUM_TRAIN)
        assert len(loaders) == 1, (f"expected one sharded training loader over {NUM_TRAIN} "
                                   f"samples, the probe saw: {self.probe.loaders()}")
        return loaders[0]


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    root = tmp_path_factory.mktemp("canonical")
    started = {mode: Launch(root, mode) for mode in ("torchrun", "python")}  # both at once
    return {mode: launch.wait() for mode, launch in started.items()}


@pytest.fixture(scope="module")
def ddp(launches):
    launches["torchrun"].require_ok()
    return launches["torchrun"]


@pytest.fixture(scope="module")
def single(launches):
    launches["python"].require_ok()
    return launches["python"]


def test_torchrun_both_ranks_exit_zero(launches):
    launch = launches["torchrun"]
    launch.require_ok()
    assert launch.probe.ranks == [0, 1], launch.run.tail()
    assert launch.probe.exited() == {0: 1, 1: 1}, launch.run.tail()


def test_each_epoch_ranks_are_disjoint_and_cover_the_dataset(ddp):
    epochs = ddp.epochs()
    assert sorted(epochs) == [0, 1], "the training set was read by ranks " + str(sorted(epochs))
    for e in range(EPOCHS):
        r0, r1 = epochs[0][e], epochs[1][e]
        assert len(r0) == len(r1) == NUM_TRAIN // 2
        assert not set(r0) & set(r1), f"epoch {e + 1}: both ranks trained on {set(r0) & set(r1)}"
        assert sorted(r0 + r1) == list(range(NUM_TRAIN)), f"epoch {e + 1}: shards miss samples"


def test_each_rank_reshuffles_between_epochs(ddp):
    for rank, epochs in ddp.epochs().items():
        for e in range(1, EPOCHS):
            assert epochs[e] != epochs[e - 1], (
                f"rank {rank}: epochs {e} and {e + 1} used the same order (set_epoch missing?)")
            assert set(epochs[e]) != set(epochs[e - 1]), (
                f"rank {rank}: epochs {e} and {e + 1} drew the same shard (no reshuffle)")


def test_probe_agrees_with_the_dataset_audit(ddp, single):
    for launch in (ddp, single):
        loader = launch.train_loader()
        audit = launch.audit()
        for rank in range(launch.world):
            fetched = [i for p in launch.probe.passes()[(rank, loader)] for i in p.indices]
            assert fetched == audit[rank], f"{launch.dir.name} rank {rank}: probe != audit"
        assert not h.check_sharded_passes(launch.probe, launch.world, loader)
        assert not h.check_reshuffled(launch.probe, launch.world, loader)


def test_parameters_identical_across_ranks(ddp):
    params = ddp.probe.params()
    assert list(params) == [0], f"expected one DDP-wrapped model, got {params}"
    assert not h.check_params_identical(ddp.probe, h.WORLD)


def _plain_net():
    spec = importlib.util.spec_from_file_location("canonical_before", BEFORE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines Net; main() only runs under __main__
    return module.Net()


def test_checkpoint_written_once_and_loads_strictly_into_the_plain_model(ddp):
    import torch

    saves = [e for e in ddp.probe.saves() if e["path"] == "weights.pt"]
    assert [e["rank"] for e in saves] == [0], f"weights.pt saved by ranks {saves}"
    assert not h.prefixed_keys(saves[0]), saves[0]["keys"]
    net = _plain_net()
    state = torch.load(ddp.dir / "weights.pt", map_location="cpu", weights_only=True)
    net.load_state_dict(state, strict=True)
    assert h.digest(net.named_parameters()) == ddp.probe.params()[0][0]["sha256"], (
        "the checkpoint is not rank 0's final model")


def test_plain_python_trains_on_the_full_dataset_each_epoch(single):
    assert single.probe.ranks == [0] and single.probe.exited() == {0: 1}
    epochs = single.epochs()[0]
    for e, order in enumerate(epochs):
        assert sorted(order) == list(range(NUM_TRAIN)), f"epoch {e + 1} is not the full dataset"
    assert all(a != b for a, b in zip(epochs, epochs[1:])), "the order never changes"
    assert [e["rank"] for e in single.probe.saves()] == [0]
    assert (single.dir / "weights.pt").is_file()
