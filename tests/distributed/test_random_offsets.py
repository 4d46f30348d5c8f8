"""Training on batches drawn at random offsets into one tensor, under two processes (decision 0231).

``fixtures/random_offsets`` is nanoGPT's shape, no DataLoader: ``get_batch`` draws ``ix =
torch.randint(len(d) - block, (batch_size,))``, the first batch before the loop and the next at
each step; ``estimate_loss()`` draws its batches the same way every few steps and decides a
checkpoint; dropout draws at every step. Converted, each training draw runs in ``with
own_random_stream():``. A wrapper runs the converted ``main()`` (which returns the model, the
offsets of every training batch, the parameters after every step and the loss estimates) and saves
each rank's. What is asserted: the two ranks train on other batches at every step, and their
parameters are equal after every step and at exit (DDP averaged the gradients of distinct draws:
without the averaging, other batches would leave them apart); the loss estimates, which decide the
save, are equal on both ranks (their batches come from the shared stream, unmoved by the training
draws). Run as one plain process, the converted script trains on exactly the original's batches.
"""

from __future__ import annotations

import json
import sys

import pytest

from ddpify.convert import convert

from . import helpers as h

pytestmark = pytest.mark.slow

STEPS = 12
DUMP = """
import json, os, runpy, sys
import torch
script, out = sys.argv[1], sys.argv[2]
sys.argv = [script, *sys.argv[3:]]
model, seen, history, estimates = runpy.run_path(script, run_name="converted")["main"]()
rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
torch.save({"history": history, "final": [p.detach().clone() for p in model.parameters()]},
           os.path.join(out, "params%d.pt" % rank))
with open(os.path.join(out, "seen%d.json" % rank), "w") as f:
    json.dump({"seen": seen, "estimates": estimates}, f)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(two-process dumps, one-process dumps of the converted script, dumps of the original)."""
    root = tmp_path_factory.mktemp("random_offsets")
    before = (h.FIXTURES / "random_offsets" / "before.py").read_bytes()
    (root / "after.py").write_bytes(convert(before).output)
    (root / "before.py").write_bytes(before)
    (root / "dump.py").write_text(DUMP)
    args = ["--max-iters", str(STEPS), "--eval-interval", "4"]
    outs = {name: root / name for name in ("two", "one", "original")}
    for out in outs.values():
        out.mkdir()
    done = h.run(h.torchrun(root / "dump.py", str(root / "after.py"), str(outs["two"]), *args), root, h.env())
    assert done.returncode == 0, done
    for name, script in (("one", "after.py"), ("original", "before.py")):
        single = h.run([sys.executable, str(root / "dump.py"), str(root / script), str(outs[name]), *args], root,
                       h.env())
        assert single.returncode == 0, single
    return outs


def _dump(out, rank):
    return json.loads((out / f"seen{rank}.json").read_text())


def test_each_process_trains_on_batches_of_its_own(runs):
    seen = [_dump(runs["two"], rank)["seen"] for rank in (0, 1)]
    assert len(seen[0]) == len(seen[1]) == STEPS
    assert all(a != b for a, b in zip(*seen))


def test_the_parameters_agree_after_every_step_and_the_estimates_on_every_rank(runs):
    import torch

    dumps = [torch.load(runs["two"] / f"params{rank}.pt") for rank in (0, 1)]
    assert len(dumps[0]["history"]) == len(dumps[1]["history"]) == STEPS
    for step in range(STEPS):
        assert all(torch.equal(a, b) for a, b in zip(dumps[0]["history"][step], dumps[1]["history"][step])), step
    assert all(torch.equal(a, b) for a, b in zip(dumps[0]["final"], dumps[1]["final"]))
    estimates = [_dump(runs["two"], rank)["estimates"] for rank in (0, 1)]
    assert len(estimates[0]) == 3 and estimates[0] == estimates[1]


def test_one_process_trains_on_the_originals_batches(runs):
    """``python after.py``: own_random_stream() does nothing with one process."""
    import torch

    assert _dump(runs["one"], 0) == _dump(runs["original"], 0)
    one, original = (torch.load(runs[name] / "params0.pt") for name in ("one", "original"))
    assert all(torch.equal(a, b) for a, b in zip(one["final"], original["final"]))
