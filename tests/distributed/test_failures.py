"""One failing process ends the whole job, soon, and leaves only loadable checkpoints.

``fixtures/failing_rank`` is an ordinary training script that saves a checkpoint after every
epoch, plus the test's fault injection: it raises in epoch 1 (third batch) in the process whose
``RANK`` equals ``FAIL_ON_RANK``. Converted and run under ``torchrun --nproc_per_node=2``, the other
rank is then blocked in a collective (the gradient all-reduce); the runtime's collective
timeout is 10 min (``DDPIFY_TIMEOUT=60`` here as a safety net), so the job ends in time only
because torchrun tears the group down when a worker dies. Rank 0 saves after each epoch
(``epoch0.pt``); it must not have started ``epoch1.pt``, and every checkpoint file present must
load with ``torch.load``.
"""

from __future__ import annotations

import pytest

from . import helpers as h

pytestmark = pytest.mark.slow

BOUND_S = 120


@pytest.mark.parametrize("failing", [1, 0])
def test_a_failing_rank_ends_the_job(tmp_path, failing):
    import torch

    script = h.convert_fixture("failing_rank", tmp_path / "after.py")
    checkpoints = tmp_path / "checkpoints"
    done = h.run(h.torchrun(script, "--epochs", "3", "--checkpoint-dir", str(checkpoints)), tmp_path,
                 h.env(tmp_path / "probe", FAIL_ON_RANK=str(failing), DDPIFY_TIMEOUT="60"),
                 timeout=BOUND_S)
    assert done.returncode is not None, f"the job did not end within {BOUND_S} s\n{done}"
    assert done.returncode != 0, str(done)
    assert "injected failure in epoch 1" in done.output, str(done)
    print(f"\nrank {failing} failed: job exit {done.returncode} after {done.wall_s:.1f} s")

    probe = h.Probe.read(tmp_path / "probe")
    assert sorted(probe.init()) == [0, 1]
    assert probe.saved_paths() == {0: [str(checkpoints / "epoch0.pt")]}
    files = sorted(p.name for p in checkpoints.iterdir())
    assert files == ["epoch0.pt"], files
    for name in files:
        checkpoint = torch.load(checkpoints / name, map_location="cpu")
        assert checkpoint["epoch"] == 0 and not any(k.startswith("module.") for k in checkpoint["model"])
