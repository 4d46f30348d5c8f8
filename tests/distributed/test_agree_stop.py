"""Data-dependent loop exits: every process leaves a training loop in the same iteration.

``fixtures/agree_loss_target`` trains on readings that alternate between a precise sensor (even
rows) and a noisy one (odd rows), with ``shuffle=False``: after sharding, rank 0 trains on the
precise readings and rank 1 on the noisy ones, so their losses really differ. Two exits depend
on the loss: a ``return`` from the warm-up pass in a helper function, and a ``break`` from a
``while True:`` loop that draws batches with ``next()``.

Converted, both ranks must exit 0 and take the same number of optimizer steps (the probe logs
each step); with the default arguments both exits decide. Converted with ``--skip agree-stop``,
one rank leaves a loop while the other waits in its next gradient all-reduce: the job fails,
and ends on its own (the peer's exit closes the connection, or ``DDPIFY_TIMEOUT=60`` bounds the
wait): a job killed at the test's timeout is a hang, not the expected failure. Each exit is
shown to fail on its own: ``--max-steps 1`` makes the step loop stop after one step on both ranks
(only the warm-up can diverge), and ``--warmup-target 0`` makes the warm-up run its whole pass
(only the step loop can diverge).

``fixtures/agree_replay_guard`` (decision 0175) is an agent that takes a step on each batch of the
same two sensors and keeps the readings whose target is large in a replay memory; its ``train()``
returns early while the memory holds fewer than a batch. Sharded, rank 0 reads the quiet sensor
and rank 1 the loud one, so rank 1's memory fills episodes earlier: converted, the guard is agreed
(``agree_any``) and both ranks take the same steps; with ``--skip agree-stop`` rank 1 runs replay
backwards that rank 0 does not, and the job fails.

``fixtures/agree_buffered_test_episodes`` (decision 0193) trains an actor that holds BatchNorm statistics
for a fixed number of steps, then tests it on greedy episodes of an environment that ends each episode at
a random step of its own (seeded by the OS): `act()` runs the wrapped actor with gradients on, a forward
that broadcasts the buffers from rank 0. Converted, the test episodes' end is agreed (`agree_any`) and both
ranks take the same steps; with ``--skip agree-stop`` a rank whose episode ran longer waits in a broadcast
while the other runs its next backward, and the job fails.

No outcome depends on how fast the machine is. The agreed launch keeps the runtime's default
collective timeout: a short one also bounds the set-up, where one rank waits for the other's
``import torch``, and the hang watchdog's report near it. The two that must fail end by the
peer's exit (the rank that left saves and exits; the other's next collective finds the
connection closed); their 60 s timeout only bounds a wait that would otherwise last 10 min.
Each launch is killed only ``TIMEOUT_S`` after its own start: a safety net for a hang, far past
the 45-54 s the three launches took together at load 17 on 2 cores (9 processes importing
torch at once), where the former deadline, 60 s shared by all three, failed them now and then.
"""

from __future__ import annotations

import time

import pytest

from ddpify.convert import Options

from . import helpers as h

pytestmark = pytest.mark.slow

TIMEOUT_S = 240
ONLY_WARMUP = ("--max-steps", "1")
ONLY_STEP_LOOP = ("--warmup-target", "0")


SKIP = Options(skip=frozenset({"agree-stop"}))
BOUNDED = {"DDPIFY_TIMEOUT": "60"}  # a rank left waiting in a collective fails after 60 s, not 10 min
LAUNCHES = {"agreed": (Options(), (), {}), "warm-up": (SKIP, ONLY_WARMUP, BOUNDED),
            "step-loop": (SKIP, ONLY_STEP_LOOP, BOUNDED), "guard-agreed": (Options(), (), {}),
            "guard": (SKIP, (), BOUNDED), "episodes-agreed": (Options(), (), {}), "episodes": (SKIP, (), BOUNDED)}
FIXTURE = {"guard-agreed": "agree_replay_guard", "guard": "agree_replay_guard",
           "episodes-agreed": "agree_buffered_test_episodes", "episodes": "agree_buffered_test_episodes"}
# else agree_loss_target


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    """name -> (Done, Probe) of each conversion's launch. All three start at once: most of a launch
    is start-up and a rank waiting for the other, which the other launches overlap on 2 cores."""
    jobs = {}
    for name, (options, args, extra) in LAUNCHES.items():
        folder = tmp_path_factory.mktemp(name)
        script = h.convert_fixture(FIXTURE.get(name, "agree_loss_target"), folder / "after.py", options)
        jobs[name] = folder, h.Job(h.torchrun(script, "--out", str(folder / "regressor.pt"), *args), folder,
                                   h.env(folder / "probe", **extra))
    return {name: (job.wait(job.start + TIMEOUT_S - time.monotonic()), h.Probe.read(folder / "probe"))
            for name, (folder, job) in jobs.items()}


@pytest.mark.parametrize("name", ["agreed", "guard-agreed", "episodes-agreed"])
def test_agreed_exits_end_every_rank_after_the_same_steps(launches, name):
    done, probe = launches[name]
    assert done.returncode == 0, str(done)
    assert sorted(probe.init()) == [0, 1]
    steps = {rank: len(probe.of("step", rank)) for rank in (0, 1)}
    print(f"\nagreed exits: optimizer steps per rank {steps}, {done.wall_s:.1f} s")
    assert steps[0] == steps[1] > 0, steps


@pytest.mark.parametrize("name", ["warm-up", "step-loop", "guard", "episodes"])
def test_without_agreement_one_rank_leaves_and_the_job_fails(launches, name):
    done, _ = launches[name]
    print(f"\nskip agree-stop {LAUNCHES[name][1]}: rc={done.returncode} after {done.wall_s:.1f} s")
    assert done.returncode is not None, f"the job hung: killed after {TIMEOUT_S} s, not ended by the " \
        f"collective's timeout or the peer's exit\n{done}"
    assert done.returncode != 0, str(done)
    assert any(call in done.output for call in ("loss.backward()", "barrier()", "end_epoch()")), \
        f"expected the rank left in the loop to fail in a collective (backward, barrier or end_epoch)\n{done}"
