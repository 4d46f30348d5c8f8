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
    probe = h.Probe(tmp_path / "probe")
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
        assert all(buckets >= 1 and calls == buckets for _, buckets, calls in steps[rank])
    assert leftover == {0: 0, 1: 0}


def test_without_no_sync_every_micro_batch_all_reduces(tmp_path):
    done, steps, leftover = _rounds_per_step(tmp_path, Options(skip=frozenset({"accumulate-no-sync"})))
    print(f"\nskip accumulate-no-sync: (rounds, buckets, python all_reduce calls) per step {steps}, "
          f"{done.wall_s:.1f} s")
    for rank in (0, 1):
        assert [rounds for rounds, _, _ in steps[rank]] == [K] * STEPS_PER_RANK
    assert leftover == {0: 0, 1: 0}
