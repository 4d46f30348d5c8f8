"""Numerical equivalence: two processes with batch B train exactly like one process with batch 2B.

How the orders line up. ``fixtures/equivalence`` trains a small regressor with a fixed seed, no
dropout or BatchNorm, plain SGD and an MSE loss averaged over the batch, from a loader with
``shuffle=False`` over 64 samples. The original runs in one process with batch 2B (= 8); the
converted script runs under ``torchrun --standalone --nproc_per_node=2`` with batch B (= 4).

* With shuffle off the converted loader's ``DistributedSampler(shuffle=False)`` gives rank r the
  indices r, r+2, r+4, ...; its k-th batch holds samples 2Bk + r, 2Bk + r + 2, ... So at global
  step k the two ranks together use exactly the 2B samples of the original's step k (the same
  set; the order inside a batch does not matter for a mean).
* Each rank's loss is the mean over its B samples; DDP averages the two ranks' gradients. With
  equal batch sizes the mean of the two per-rank means is the mean over the union, so the
  averaged gradient equals the original's batch gradient, and plain SGD (no momentum, no
  per-sample state) takes the same step. DDP starts both replicas from rank 0's weights, which
  are the original's (same seed, same construction order).
* So the two SGD trajectories coincide up to float32 rounding (summation order): the final
  weights must agree within 1e-5, and the steps per epoch must be equal (8 and 8).

The converted run's checkpoint (saved by rank 0 through the unwrapped model) is the one compared,
loaded with ``strict=True`` into the plain model class. As a check that the comparison can fail,
the converted script run as one plain process with batch B (the same as the original with batch
B) must end measurably far (> 1e-3) from the original with batch 2B.

Evaluation (shard-eval). The fixture evaluates a test set of 101 samples (odd: 51 + 50 on two
ranks, in batches of 10, so the ranks run 6 and 5 batches) before training and after each epoch:
a sum of squared errors over ``len(loader.dataset)``, a count of correct signs, and the median
absolute error over collected predictions and targets. Converted, each rank evaluates its own
contiguous block through the bare module, and ``reduce_sum``/``gather_ordered`` put the numbers
together. What is asserted, and no more: the lines the script prints are equal (6 decimals);
counts are equal exactly; the float values in the checkpoint agree within 1e-6 relative (float
sums grouped per rank, batches of another size and weights equal only within 1e-5 may move the
last bits). The probe shows every evaluation pass fetched each test index exactly once.

The same converted file must also run under ``python -m torch.distributed.launch`` (which passes
``--local-rank=N`` to the script) and as plain ``python``. (A dataset whose size does not divide by
the world size, 101 samples, must train to the end on both ranks: tests/distributed/test_training.py,
in its batch.)
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.e2e.harness import evaluation_loaders, split_problems

from . import helpers as h

pytestmark = pytest.mark.slow

B = 4
EPOCHS = 3
N = 64
TOLERANCE = 1e-5
EVAL_RELATIVE = 1e-6
N_TEST = 101


def _load_fixture_module():
    path = h.FIXTURES / "equivalence" / "before.py"
    spec = importlib.util.spec_from_file_location("equivalence_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _weights(path):
    """The checkpoint at ``path``, its weights loaded strictly into a fresh plain Regressor."""
    import torch

    checkpoint = torch.load(path, map_location="cpu")
    model = _load_fixture_module().Regressor()
    model.load_state_dict(checkpoint["model"], strict=True)
    return checkpoint, {k: v.detach().clone() for k, v in model.state_dict().items()}


def _max_abs_diff(a, b):
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Original (1 process, batch 2B), converted under torchrun (2 x B), under the old launcher
    (2 x B) and as plain python (1 x B). Each writes its own checkpoint."""
    folder = tmp_path_factory.mktemp("equivalence")
    script = h.convert_fixture("equivalence", folder / "after.py")
    common = ["--epochs", str(EPOCHS), "--num-samples", str(N)]
    port = h.free_port()
    # All four at once (each writes only its own checkpoint and probe folder): the one-process
    # runs use the core a launch's start-up leaves idle.
    launches = {
        "original": ([sys.executable, h.FIXTURES / "equivalence" / "before.py", *common, "--batch-size",
                      str(2 * B), "--out", folder / "original.pt"], h.env()),
        "torchrun": (h.torchrun(script, *common, "--batch-size", str(B), "--out", str(folder / "torchrun.pt")),
                     h.env(folder / "probe-torchrun")),
        "launch": ([sys.executable, "-m", "torch.distributed.launch", "--nproc_per_node=2",
                    "--master_addr=127.0.0.1", f"--master_port={port}", script, *common,
                    "--batch-size", str(B), "--out", folder / "launch.pt"], h.env(folder / "probe-launch")),
        "python": ([sys.executable, script, *common, "--batch-size", str(B), "--out", folder / "python.pt"],
                   h.env(folder / "probe-python")),
    }
    done = h.run_all([cmd for cmd, _ in launches.values()], folder, [e for _, e in launches.values()])
    result = dict(zip(launches, done))
    result["folder"] = folder
    return result


def test_two_processes_with_batch_b_match_one_process_with_batch_2b(runs):
    folder = runs["folder"]
    assert runs["original"].returncode == 0, str(runs["original"])
    assert runs["torchrun"].returncode == 0, str(runs["torchrun"])

    probe = h.Probe.read(folder / "probe-torchrun")
    assert sorted(probe.init()) == [0, 1]
    assert probe.saved_paths() == {0: [str(folder / "torchrun.pt")]}, "the checkpoint must come from rank 0 only"
    original, original_weights = _weights(folder / "original.pt")
    converted, converted_weights = _weights(folder / "torchrun.pt")
    steps = N // (2 * B)
    assert original["steps_per_epoch"] == [steps] * EPOCHS
    diff = _max_abs_diff(original_weights, converted_weights)
    print(f"\nmax abs diff, original 1 x {2 * B} vs converted 2 x {B}: {diff:.3g}; steps per epoch "
          f"{original['steps_per_epoch']} vs {converted['steps_per_epoch']}")

    problems = []
    if diff > TOLERANCE:
        problems.append(f"final weights differ by {diff:.3g} (> {TOLERANCE})")
    if converted["steps_per_epoch"] != original["steps_per_epoch"] or \
            probe.batches() != {0: [steps] * EPOCHS, 1: [steps] * EPOCHS}:
        problems.append(f"optimizer steps per epoch: original {original['steps_per_epoch']}, converted "
                        f"{converted['steps_per_epoch']}, batches per rank and epoch {probe.batches()}")
    # the alignment the docstring relies on: rank r reads r, r+2, r+4, ... in every epoch
    passes = probe.indices()
    if sorted(passes) != [0, 1]:
        problems.append(f"ranks that read the training loader: {sorted(passes)}")
    for rank, got in passes.items():
        if got != [list(range(rank, N, 2))] * EPOCHS:
            problems.append(f"rank {rank} did not read its shard r, r+2, ... in order: {len(got)} passes of "
                            f"{[len(p) for p in got]} samples, the first begins {got[0][:6] if got else None}")
    assert not problems, "\n".join(problems)


def _eval_lines(output):
    return [line.strip() for line in output.splitlines() if line.startswith("eval:")]


def test_sharded_evaluation_gives_the_single_process_numbers(runs):
    folder = runs["folder"]
    assert runs["original"].returncode == 0, str(runs["original"])
    assert runs["torchrun"].returncode == 0, str(runs["torchrun"])
    printed = _eval_lines(runs["original"].output), _eval_lines(runs["torchrun"].output)
    print("\n" + "\n".join(f"{a}  |  {b}" for a, b in zip(*printed)))
    assert len(printed[0]) == EPOCHS + 1 and printed[0] == printed[1]
    original, _ = _weights(folder / "original.pt")
    converted, _ = _weights(folder / "torchrun.pt")
    floats = []
    for (mse, correct, total, median), (mse2, correct2, total2, median2) in zip(
            original["evaluations"], converted["evaluations"]):
        assert (correct, total) == (correct2, total2) and total == N_TEST
        floats += [(mse, mse2), (median, median2)]
    worst = max(abs(a - b) / abs(a) for a, b in floats)
    print(f"largest relative difference of the evaluation floats: {worst:.3g}")
    assert len(floats) == 2 * (EPOCHS + 1) and worst <= EVAL_RELATIVE
    probe = h.Probe.read(folder / "probe-torchrun")
    split = [n for n, kind in evaluation_loaders(probe).items() if kind == "split"]
    assert len(split) == 1, evaluation_loaders(probe)
    assert split_problems(probe, 2, split[0]) == []
    shares = {r: [len(p.indices) for p in probe.passes()[(r, split[0])]] for r in range(2)}
    assert shares == {0: [51] * (EPOCHS + 1), 1: [50] * (EPOCHS + 1)}


def test_the_comparison_can_fail(runs):
    """One process with batch B is a different trajectory: the tolerance must notice it."""
    assert runs["original"].returncode == 0, str(runs["original"])
    assert runs["python"].returncode == 0, str(runs["python"])
    _, original_weights = _weights(runs["folder"] / "original.pt")
    single, single_weights = _weights(runs["folder"] / "python.pt")
    assert single["steps_per_epoch"] == [N // B] * EPOCHS
    diff = _max_abs_diff(original_weights, single_weights)
    print(f"\nmax abs diff, original 1 x {2 * B} vs 1 x {B}: {diff:.3g}")
    assert diff > 1e-3


def test_launcher_forms(runs):
    """The same converted file under torchrun, torch.distributed.launch and plain python."""
    folder = runs["folder"]
    for form in ("torchrun", "launch", "python"):
        assert runs[form].returncode == 0, str(runs[form])
        print(f"\n{form}: exit 0 in {runs[form].wall_s:.1f} s", end="")
    # torch.distributed.launch passed --local-rank=N (the script's parser must accept it)
    launch = h.Probe.read(folder / "probe-launch").init()
    assert sorted(launch) == [0, 1]
    for rank, event in launch.items():
        assert f"--local-rank={rank}" in event["argv"], event["argv"]
        assert event["world"] == 2
    # plain python: one process, no launcher, a one-process group
    single = h.Probe.read(folder / "probe-python").init()
    assert list(single) == [0] and single[0]["world"] == 1 and single[0]["env"]["RANK"] is None
    # both two-process launches train the same way
    _, by_torchrun = _weights(folder / "torchrun.pt")
    _, by_launch = _weights(folder / "launch.pt")
    assert _max_abs_diff(by_torchrun, by_launch) <= TOLERANCE
    assert (folder / "python.pt").is_file()

