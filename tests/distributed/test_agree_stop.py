"""Data-dependent loop exits: every process leaves a training loop in the same iteration.

``fixtures/agree_loss_target`` trains on readings that alternate between a precise sensor (even
rows) and a noisy one (odd rows), with ``shuffle=False``: after sharding, rank 0 trains on the
precise readings and rank 1 on the noisy ones, so their losses really differ. Two exits depend
on the loss: a ``return`` from the warm-up pass in a helper function, and a ``break`` from a
``while True:`` loop that draws batches with ``next()``.

Converted, both ranks must exit 0 and take the same number of optimizer steps (the probe logs
each step); with the default arguments both exits decide. Converted with ``--skip agree-stop``,
one rank leaves a loop while the other waits in its next gradient all-reduce: the job fails,
and ends on its own (``DDPIFY_TIMEOUT=20`` bounds the wait, or the peer's exit closes the
connection): a job killed at the test's timeout is a hang, not the expected failure. Each exit is
shown to fail on its own: ``--max-steps 1`` makes the step loop stop after one step on both ranks
(only the warm-up can diverge), and ``--warmup-target 0`` makes the warm-up run its whole pass
(only the step loop can diverge).
"""

from __future__ import annotations

import pytest

from ddpify.convert import Options

from . import helpers as h

pytestmark = pytest.mark.slow

TIMEOUT_S = 60
ONLY_WARMUP = ("--max-steps", "1")
ONLY_STEP_LOOP = ("--warmup-target", "0")


def _launch(tmp_path, options, *args):
    script = h.convert_fixture("agree_loss_target", tmp_path / "after.py", options)
    done = h.run(h.torchrun(script, "--out", str(tmp_path / "regressor.pt"), *args), tmp_path,
                 h.env(tmp_path / "probe", DDPIFY_TIMEOUT="20"), timeout=TIMEOUT_S)
    return done, h.Probe.read(tmp_path / "probe")


def test_agreed_exits_end_every_rank_after_the_same_steps(tmp_path):
    done, probe = _launch(tmp_path, Options())
    assert done.returncode == 0, str(done)
    assert sorted(probe.init()) == [0, 1]
    steps = {rank: len(probe.of("step", rank)) for rank in (0, 1)}
    print(f"\nagreed exits: optimizer steps per rank {steps}, {done.wall_s:.1f} s")
    assert steps[0] == steps[1] > 0, steps


@pytest.mark.parametrize("args", [ONLY_WARMUP, ONLY_STEP_LOOP], ids=["warm-up", "step-loop"])
def test_without_agreement_one_rank_leaves_and_the_job_fails(tmp_path, args):
    done, _ = _launch(tmp_path, Options(skip=frozenset({"agree-stop"})), *args)
    print(f"\nskip agree-stop {args}: rc={done.returncode} after {done.wall_s:.1f} s")
    assert done.returncode is not None, f"the job hung: killed after {TIMEOUT_S} s, not ended by the " \
        f"collective's timeout or the peer's exit\n{done}"
    assert done.returncode != 0, str(done)
    assert "loss.backward()" in done.output or "barrier()" in done.output, \
        f"expected the rank left in the loop to fail in a collective (backward or barrier)\n{done}"
