"""Gradient accumulation: one gradient all-reduce per optimizer step, not one per micro-batch.

``fixtures/accumulation`` accumulates over k = 4 micro-batches (``(loss / k).backward()`` on every
micro-batch; ``optimizer.step()`` and ``zero_grad()`` when ``(i + 1) % k == 0``). The converted
script must run the forward AND the backward of the other micro-steps inside ``model.no_sync()``.

Counting: DDP's gradient all-reduce runs in the C++ reducer, not through Python's
``dist.all_reduce``, so the probe registers a DDP comm hook on every DDP it sees. The hook counts
buckets and rounds (a round: one backward's buckets, closed by ``bucket.is_last()``), then runs
torch's ``allreduce_hook``, which is what DDP does by default. An optimizer step pre-hook logs
the counts since the previous step. Converted normally: exactly 1 round per step. Converted with
``--skip accumulate-no-sync``: k rounds per step, which shows that the count can fail.
"""

from __future__ import annotations

import ast

import pytest

from ddpify.convert import Options, convert

from . import helpers as h

pytestmark = pytest.mark.slow

K = 4
N, B, EPOCHS = 64, 4, 2
STEPS_PER_RANK = EPOCHS * (N // 2 // B) // K  # 8 micro-batches per rank per epoch -> 2 steps


def _no_sync_blocks(code):
    """Every ``with`` that enters ``model.no_sync()`` (in any item, conditional or not)."""
    blocks = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.With):
            for item in node.items:
                for sub in ast.walk(item.context_expr):
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                            sub.func.attr == "no_sync" and ast.unparse(sub.func.value) == "model":
                        blocks.append(node)
    return blocks


def _calls(nodes):
    return [ast.unparse(n.func) for stmt in nodes for n in ast.walk(stmt) if isinstance(n, ast.Call)]


def test_no_sync_encloses_forward_and_backward():
    code = convert((h.FIXTURES / "accumulation" / "before.py").read_bytes()).code
    blocks = _no_sync_blocks(code)
    assert len(blocks) == 1, "expected one `with ... model.no_sync()` block"
    calls = _calls(blocks[0].body)
    assert "model" in calls, "the forward (model(x)) is outside no_sync()"
    assert any(c.endswith(".backward") for c in calls), "the backward is outside no_sync()"
    assert not any(c.endswith("optimizer.step") for c in calls), "the optimizer steps inside no_sync()"
    skipped = convert((h.FIXTURES / "accumulation" / "before.py").read_bytes(),
                        Options(skip=frozenset({"accumulate-no-sync"}))).code
    assert _no_sync_blocks(skipped) == []


def _rounds_per_step(tmp_path, options):
    script = h.convert_fixture("accumulation", tmp_path / "after.py", options)
    done = h.run(h.torchrun(script, "--epochs", str(EPOCHS), "--batch-size", str(B), "--accum-steps", str(K),
                            "--num-samples", str(N), "--out", str(tmp_path / "mlp.pt")),
                 tmp_path, h.env(tmp_path / "probe", count=True))
    assert done.returncode == 0, str(done)
    probe = h.Probe.read(tmp_path / "probe")
    assert sorted(probe.init()) == [0, 1]
    assert h.shard_problems(probe, 2, N) == []
    steps = {r: [(e["rounds"], e["buckets"], e["all_reduce"]) for e in probe.of("step", r)] for r in (0, 1)}
    leftover = {e["rank"]: e["rounds"] for e in probe.of("exit")}
    return done, steps, leftover


def test_one_all_reduce_round_per_optimizer_step(tmp_path):
    done, steps, leftover = _rounds_per_step(tmp_path, Options())
    print(f"\nno_sync: (rounds, buckets, python all_reduce calls) per step {steps}, "
          f"{done.wall_s:.1f} s")
    for rank in (0, 1):
        assert len(steps[rank]) == STEPS_PER_RANK
        assert [rounds for rounds, _, _ in steps[rank]] == [1] * STEPS_PER_RANK, \
            f"rank {rank}: gradient all-reduce rounds per optimizer step {steps[rank]} (expected 1 each)"
        # one Python all_reduce per bucket; the first step also has the runtime's one all_reduce of
        # a flag after the first training forward (did a data-dependent initialization change the
        # parameters? ddpify_runtime._sync_after_first_forward)
        assert [calls - buckets for _, buckets, calls in steps[rank]] == [1] + [0] * (STEPS_PER_RANK - 1), steps[rank]
        assert all(buckets >= 1 for _, buckets, _ in steps[rank])
    assert leftover == {0: 0, 1: 0}


def test_without_no_sync_every_micro_batch_all_reduces(tmp_path):
    done, steps, leftover = _rounds_per_step(tmp_path, Options(skip=frozenset({"accumulate-no-sync"})))
    print(f"\nskip accumulate-no-sync: (rounds, buckets, python all_reduce calls) per step {steps}, "
          f"{done.wall_s:.1f} s")
    for rank in (0, 1):
        assert [rounds for rounds, _, _ in steps[rank]] == [K] * STEPS_PER_RANK
    assert leftover == {0: 0, 1: 0}


# --- only real accumulation gets no_sync (issue #9) -----------------------------------------------
#
# ``fixtures/accum_hand_step`` steps on every batch: by hand (``p.add_(p.grad, alpha=-lr)``) for the
# first --warmup-steps batches, then through Adam, behind ``if step >= args.warmup_steps:``. Before
# issue #9 that ``if`` was taken for an accumulation boundary: the hand steps ran inside
# ``model.no_sync()`` on each process's own gradients, and the replicas drifted apart silently.
# Every batch is a step, so every backward must all-reduce (the optimizer step pre-hook sees only
# Adam's steps: the rounds are summed over the run), and the ranks must end with equal weights:
# a wrapper runs the converted ``main()`` and saves each rank's parameters.
#
# ``fixtures/accum_amp_last_batch`` is real accumulation (k = 3, also stepping on an epoch's last
# batch, a micro-step counter across epochs, GradScaler, clipping inside the ``if``): it keeps its
# no_sync, so exactly 1 round per optimizer step.

HAND_WARMUP = 6
HAND_BATCHES = EPOCHS * (N // 2 // B)  # per rank: every batch is a step
DUMP_PARAMETERS = """
import os, runpy, sys
import torch
script, out = sys.argv[1], sys.argv[2]
sys.argv = [script, *sys.argv[3:]]
model = runpy.run_path(script, run_name="converted")["main"]()
torch.save({k: v.detach().clone() for k, v in model.state_dict().items()},
           os.path.join(out, "params%s.pt" % os.environ["RANK"]))
"""
BEFORE_ISSUE_9 = (  # what accumulate-no-sync made of the hand-step loop before issue #9
    ("            loss = F.cross_entropy(model(x), y)\n            loss.backward()\n"
     "            if step >= args.warmup_steps:\n",
     "            sync_step = step >= args.warmup_steps\n"
     "            with nullcontext() if sync_step else model.no_sync():\n"
     "                loss = F.cross_entropy(model(x), y)\n                loss.backward()\n"
     "            if sync_step:\n"),
    ("import argparse\n", "import argparse\nfrom contextlib import nullcontext\n"),
)


def _hand_step_run(tmp_path, code):
    """Run ``code`` (a converted hand-step script) through the parameter-saving wrapper: the
    rounds each rank all-reduced in total, and the largest difference between the ranks' weights."""
    import torch

    script = tmp_path / "after.py"
    script.write_text(code)
    (tmp_path / "dump.py").write_text(DUMP_PARAMETERS)
    done = h.run(h.torchrun(tmp_path / "dump.py", str(script), str(tmp_path), "--epochs", str(EPOCHS),
                            "--batch-size", str(B), "--num-samples", str(N), "--warmup-steps", str(HAND_WARMUP),
                            "--out", str(tmp_path / "classifier.pt")),
                 tmp_path, h.env(tmp_path / "probe", count=True))
    assert done.returncode == 0, str(done)
    probe = h.Probe.read(tmp_path / "probe")
    rounds = {r: sum(e["rounds"] for e in probe.of("step", r) + probe.of("exit", r)) for r in (0, 1)}
    params = [torch.load(tmp_path / f"params{r}.pt") for r in (0, 1)]
    drift = max(float((params[0][k] - params[1][k]).abs().max()) for k in params[0])
    return done, rounds, drift


def test_hand_steps_are_steps_every_backward_all_reduces(tmp_path):
    code = convert((h.FIXTURES / "accum_hand_step" / "before.py").read_bytes()).code
    assert _no_sync_blocks(code) == []
    done, rounds, drift = _hand_step_run(tmp_path, code)
    print(f"\nhand steps: all-reduce rounds per rank {rounds} for {HAND_BATCHES} steps, "
          f"weights differ by {drift:.2e}, {done.wall_s:.1f} s")
    assert rounds == {0: HAND_BATCHES, 1: HAND_BATCHES}
    assert drift == 0.0


def test_hand_steps_inside_no_sync_train_different_models(tmp_path):
    code = convert((h.FIXTURES / "accum_hand_step" / "before.py").read_bytes()).code
    for old, new in BEFORE_ISSUE_9:
        assert code.count(old) == 1
        code = code.replace(old, new)
    done, rounds, drift = _hand_step_run(tmp_path, code)
    print(f"\nhand steps in no_sync (before issue #9): rounds per rank {rounds}, "
          f"weights differ by {drift:.2e}, {done.wall_s:.1f} s")
    assert rounds == {0: HAND_BATCHES - HAND_WARMUP, 1: HAND_BATCHES - HAND_WARMUP}
    # the replicas trained apart within each epoch; since decision 0064 end_epoch() finds that and
    # gives every process the main process's parameters, saying so, so they end equal
    assert drift == 0.0 and "the parameters of Sequential differed between processes" in done.output


def test_accumulation_that_also_steps_on_the_last_batch_keeps_one_round_per_step(tmp_path):
    script = h.convert_fixture("accum_amp_last_batch", tmp_path / "after.py")
    assert len(_no_sync_blocks(script.read_text())) == 1
    done = h.run(h.torchrun(script, "--epochs", str(EPOCHS), "--batch-size", str(B), "--accum-steps", "3",
                            "--num-samples", str(N), "--out", str(tmp_path / "mlp.pt")),
                 tmp_path, h.env(tmp_path / "probe", count=True))
    assert done.returncode == 0, str(done)
    probe = h.Probe.read(tmp_path / "probe")
    steps = {r: [e["rounds"] for e in probe.of("step", r)] for r in (0, 1)}
    print(f"\nk=3 with last-batch steps: rounds per step {steps}, {done.wall_s:.1f} s")
    expected = 3 + 4  # epoch 0: micro-steps 2, 5 and the last batch; epoch 1 (counter at 8): 8, 11, 14, last
    assert steps == {0: [1] * expected, 1: [1] * expected}
    assert {e["rank"]: e["rounds"] for e in probe.of("exit")} == {0: 0, 1: 0}
