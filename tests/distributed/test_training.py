"""How converted fixtures train under two processes, seven programs in one launch.

Every test here checks what a converted script does while it trains (all-reduce rounds per
optimizer step, the ranks' weights, the data each rank fetched, what the main process says), not
how it is launched: so the seven programs run in one torchrun launch (``harness.start_batch``:
each in a process of its own forked after one ``import torch``), each with its own probe, and
each test reads its program's Run as it read its own launch before (decision 0116, "Not done").
The probe counts DDP's gradient buckets for every program (``count``: a comm hook that counts,
then runs torch's default all-reduce); only the accumulation tests read the counts.

Gradient accumulation: one gradient all-reduce per optimizer step, not one per micro-batch.
``fixtures/accumulation`` accumulates over k = 4 micro-batches (``(loss / k).backward()`` on every
micro-batch; ``optimizer.step()`` and ``zero_grad()`` when ``(i + 1) % k == 0``). The converted
script must run the forward AND the backward of the other micro-steps inside ``model.no_sync()``.
Counting: DDP's gradient all-reduce runs in the C++ reducer, not through Python's
``dist.all_reduce``, so the probe registers a DDP comm hook on every DDP it sees. The hook counts
buckets and rounds (a round: one backward's buckets, closed by ``bucket.is_last()``), then runs
torch's ``allreduce_hook``, which is what DDP does by default. An optimizer step pre-hook logs
the counts since the previous step. Converted normally: exactly 1 round per step. Converted with
``--skip accumulate-no-sync``: k rounds per step, which shows that the count can fail.

Only real accumulation gets no_sync (issue #9). ``fixtures/accum_hand_step`` steps on every
batch: by hand (``p.add_(p.grad, alpha=-lr)``) for the first --warmup-steps batches, then through
Adam, behind ``if step >= args.warmup_steps:``. Before issue #9 that ``if`` was taken for an
accumulation boundary: the hand steps ran inside ``model.no_sync()`` on each process's own
gradients, and the replicas drifted apart silently. Every batch is a step, so every backward must
all-reduce (the optimizer step pre-hook sees only Adam's steps: the rounds are summed over the
run), and the ranks must end with equal weights: a wrapper runs the converted ``main()`` and saves
each rank's parameters. ``fixtures/accum_amp_last_batch`` is real accumulation (k = 3, also
stepping on an epoch's last batch, a micro-step counter across epochs, GradScaler, clipping
inside the ``if``): it keeps its no_sync, so exactly 1 round per optimizer step.

``--sync-batchnorm``: BatchNorm -> SyncBatchNorm after ``.to(device)``, before the DDP wrap. On
the CPU there is no SyncBatchNorm (it needs CUDA): the converted script must still run under
torchrun, keep its BatchNorm layers, and say why on stderr (once, from the main process).
Fixture: ``fixtures/steps_compile_bn`` (a BatchNorm MLP trained for a step budget).

An uneven data set: ``fixtures/equivalence`` (tests/distributed/test_equivalence.py) on 101
samples trains to the end on both ranks.
"""

from __future__ import annotations

import ast

import pytest

from ddpify.convert import Options, convert
from tests.e2e import harness

from . import helpers as h
from .test_equivalence import _weights

pytestmark = pytest.mark.slow

K = 4
N, B, EPOCHS = 64, 4, 2
STEPS_PER_RANK = EPOCHS * (N // 2 // B) // K  # 8 micro-batches per rank per epoch -> 2 steps
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
SYNC_BN_FIXTURE = "steps_compile_bn"
SYNC_BN_MESSAGE = "SyncBatchNorm needs CUDA"
UNEVEN_N, UNEVEN_EPOCHS = 101, 2


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


def _hand_step_code(before_issue_9: bool) -> str:
    code = convert((h.FIXTURES / "accum_hand_step" / "before.py").read_bytes()).code
    for old, new in BEFORE_ISSUE_9 if before_issue_9 else ():
        assert code.count(old) == 1
        code = code.replace(old, new)
    return code


def _sync_bn_code() -> str:
    return convert((h.FIXTURES / SYNC_BN_FIXTURE / "before.py").read_bytes(), Options(sync_batchnorm=True)).code


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (its folder, its Run): the seven programs converted, then run in one launch."""
    root = tmp_path_factory.mktemp("training")
    codes = {
        "no_sync": convert((h.FIXTURES / "accumulation" / "before.py").read_bytes()).code,
        "skip_no_sync": convert((h.FIXTURES / "accumulation" / "before.py").read_bytes(),
                                Options(skip=frozenset({"accumulate-no-sync"}))).code,
        "hand_steps": _hand_step_code(False),
        "hand_steps_in_no_sync": _hand_step_code(True),
        "last_batch": convert((h.FIXTURES / "accum_amp_last_batch" / "before.py").read_bytes()).code,
        "sync_batchnorm": _sync_bn_code(),
        "uneven": convert((h.FIXTURES / "equivalence" / "before.py").read_bytes()).code,
    }
    programs, folders = {}, {}
    for name, code in codes.items():
        folder = folders[name] = root / name
        folder.mkdir()
        script = folder / "after.py"
        script.write_text(code)
        if name.startswith("hand_steps"):
            (folder / "dump.py").write_text(DUMP_PARAMETERS)
            script, args = folder / "dump.py", [str(script), str(folder), "--epochs", str(EPOCHS), "--batch-size",
                                                str(B), "--num-samples", str(N), "--warmup-steps", str(HAND_WARMUP),
                                                "--out", str(folder / "classifier.pt")]
        elif name == "last_batch":
            args = ["--epochs", str(EPOCHS), "--batch-size", str(B), "--accum-steps", "3", "--num-samples", str(N),
                    "--out", str(folder / "mlp.pt")]
        elif name == "sync_batchnorm":
            args = ["--max-steps", "4", "--eval-every", "2", "--log-every", "2", "--batch-size", "16"]
        elif name == "uneven":
            args = ["--epochs", str(UNEVEN_EPOCHS), "--num-samples", str(UNEVEN_N), "--batch-size", "8",
                    "--out", str(folder / "uneven.pt")]
        else:
            args = ["--epochs", str(EPOCHS), "--batch-size", str(B), "--accum-steps", str(K),
                    "--num-samples", str(N), "--out", str(folder / "mlp.pt")]
        programs[name] = harness.Program(script, args, folder, folder / "probe")
    done = harness.start_batch(programs, root / "batch", count=True).wait()
    return {name: (folders[name], run) for name, run in done.items()}


def _output(run) -> str:
    """What the program's processes printed, rank 0's first."""
    return "\n".join(run.rank_output[rank] for rank in sorted(run.rank_output))


# --- gradient accumulation ---------------------------------------------------------------------------


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


def _rounds_per_step(runs, name):
    _, run = runs[name]
    assert run.returncode == 0, run.tail()
    probe = run.probe
    assert sorted(probe.init()) == [0, 1]
    assert h.shard_problems(probe, 2, N) == []
    steps = {r: [(e["rounds"], e["buckets"], e["all_reduce"]) for e in probe.of("step", r)] for r in (0, 1)}
    leftover = {e["rank"]: e["rounds"] for e in probe.of("exit")}
    return run, steps, leftover


def test_one_all_reduce_round_per_optimizer_step(runs):
    run, steps, leftover = _rounds_per_step(runs, "no_sync")
    print(f"\nno_sync: (rounds, buckets, python all_reduce calls) per step {steps}, {run.wall_s:.1f} s")
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


def test_without_no_sync_every_micro_batch_all_reduces(runs):
    run, steps, leftover = _rounds_per_step(runs, "skip_no_sync")
    print(f"\nskip accumulate-no-sync: (rounds, buckets, python all_reduce calls) per step {steps}, "
          f"{run.wall_s:.1f} s")
    for rank in (0, 1):
        assert [rounds for rounds, _, _ in steps[rank]] == [K] * STEPS_PER_RANK
    assert leftover == {0: 0, 1: 0}


def _hand_step_run(runs, name):
    """The hand-step program's run through the parameter-saving wrapper: the rounds each rank
    all-reduced in total, and the largest difference between the ranks' weights."""
    import torch

    folder, run = runs[name]
    assert run.returncode == 0, run.tail()
    probe = run.probe
    rounds = {r: sum(e["rounds"] for e in probe.of("step", r) + probe.of("exit", r)) for r in (0, 1)}
    params = [torch.load(folder / f"params{r}.pt") for r in (0, 1)]
    drift = max(float((params[0][k] - params[1][k]).abs().max()) for k in params[0])
    return run, rounds, drift


def test_hand_steps_are_steps_every_backward_all_reduces(runs):
    assert _no_sync_blocks(_hand_step_code(False)) == []
    run, rounds, drift = _hand_step_run(runs, "hand_steps")
    print(f"\nhand steps: all-reduce rounds per rank {rounds} for {HAND_BATCHES} steps, "
          f"weights differ by {drift:.2e}, {run.wall_s:.1f} s")
    assert rounds == {0: HAND_BATCHES, 1: HAND_BATCHES}
    assert drift == 0.0


def test_hand_steps_inside_no_sync_train_different_models(runs):
    run, rounds, drift = _hand_step_run(runs, "hand_steps_in_no_sync")
    print(f"\nhand steps in no_sync (before issue #9): rounds per rank {rounds}, "
          f"weights differ by {drift:.2e}, {run.wall_s:.1f} s")
    assert rounds == {0: HAND_BATCHES - HAND_WARMUP, 1: HAND_BATCHES - HAND_WARMUP}
    # the replicas trained apart within each epoch; since decision 0064 end_epoch() finds that and
    # gives every process the main process's parameters, saying so, so they end equal
    assert drift == 0.0 and "the parameters of Sequential differed between processes" in _output(run)


def test_accumulation_that_also_steps_on_the_last_batch_keeps_one_round_per_step(runs):
    folder, run = runs["last_batch"]
    assert len(_no_sync_blocks((folder / "after.py").read_text())) == 1
    assert run.returncode == 0, run.tail()
    probe = run.probe
    steps = {r: [e["rounds"] for e in probe.of("step", r)] for r in (0, 1)}
    print(f"\nk=3 with last-batch steps: rounds per step {steps}, {run.wall_s:.1f} s")
    expected = 3 + 4  # epoch 0: micro-steps 2, 5 and the last batch; epoch 1 (counter at 8): 8, 11, 14, last
    assert steps == {0: [1] * expected, 1: [1] * expected}
    assert {e["rank"]: e["rounds"] for e in probe.of("exit")} == {0: 0, 1: 0}


# --- --sync-batchnorm ---------------------------------------------------------------------------------


def test_convert_sync_batchnorm_sits_between_to_device_and_the_wrap():
    lines = {}
    for node in ast.walk(ast.parse(_sync_bn_code())):
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["model"]:
            value = ast.unparse(node.value)
            for key, marker in (("to", ".to(device)"), ("sync", "convert_sync_batchnorm(model)"),
                                ("ddp", "DistributedDataParallel(model")):
                if marker in value:
                    lines.setdefault(key, []).append(node.lineno)
    assert {k: len(v) for k, v in lines.items()} == {"to": 1, "sync": 1, "ddp": 1}, lines
    assert lines["to"][0] < lines["sync"][0] < lines["ddp"][0], lines


def test_sync_batchnorm_on_cpu_keeps_batchnorm_and_says_why(runs):
    _, run = runs["sync_batchnorm"]
    assert run.returncode == 0, run.tail()
    print(f"\nsync-batchnorm on CPU: exit 0 in {run.wall_s:.1f} s")
    assert run.rank_output[0].count(SYNC_BN_MESSAGE) == 1, run.tail()
    assert _output(run).count(SYNC_BN_MESSAGE) == 1, run.tail()  # from the main process only
    wrapped = {e["rank"]: e["classes"] for e in run.probe.of("ddp")}
    assert sorted(wrapped) == [0, 1]
    for classes in wrapped.values():
        assert "BatchNorm1d" in classes and "SyncBatchNorm" not in classes, classes


# --- an uneven data set -------------------------------------------------------------------------------


def test_uneven_dataset_trains_to_the_end_on_both_ranks(runs):
    """101 samples on 2 ranks: DistributedSampler pads to 51 + 51, equal batch counts, no hang."""
    folder, run = runs["uneven"]
    assert run.returncode == 0, run.tail()
    print(f"\n101 samples on 2 ranks: exit 0 in {run.wall_s:.1f} s")
    probe = run.probe
    assert sorted(e["rank"] for e in probe.of("exit")) == [0, 1], "a rank did not reach the end"
    assert h.shard_problems(probe, 2, UNEVEN_N) == []
    assert {r: [len(p) for p in passes] for r, passes in probe.indices().items()} == \
        {0: [51] * UNEVEN_EPOCHS, 1: [51] * UNEVEN_EPOCHS}
    assert probe.batches() == {0: [7] * UNEVEN_EPOCHS, 1: [7] * UNEVEN_EPOCHS}
    checkpoint, _ = _weights(folder / "uneven.pt")
    assert checkpoint["steps_per_epoch"] == [7] * UNEVEN_EPOCHS
