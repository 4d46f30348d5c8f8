"""Training batched by hand, dealt out to two processes (decision 0217).

``fixtures/hand_batches`` slices its tensors itself, no DataLoader: a warm-up pass over
``zip(X.split(bs), y.split(bs), ids.split(bs))``, then epochs of ``perm = torch.randperm(n)`` and
``perm[i:i + bs]`` in ``for i in range(0, n, bs)``, with dropout (random numbers drawn at every
batch). 100 samples in batches of 16: 7 batches, the last of 4 samples. Converted, each process
takes every 2nd batch (``shard_batches``), 4 each, the 7th round wrapped to the first batch; the
epoch's permutation is drawn after ``agree_random_state()``. A wrapper runs the converted ``main()``
(which returns the model, the indices of every batch it trained on and the parameters after every
step) and saves each rank's. What is asserted: both ranks take the same number of steps; in each
pass the two ranks' batches cover every sample, and they share no more than the one batch the last
round wraps to (dropout left the processes' random states apart after the warm-up's 4-sample batch:
without the agreed state the two permutations differed and the parts overlapped by half); the
parameters are equal after the 2nd step and at exit. Run as one plain process, the converted script
trains on exactly the batches the original does.
"""

from __future__ import annotations

import json
import sys

import pytest

from ddpify.convert import convert

from . import helpers as h

pytestmark = pytest.mark.slow

N, B, EPOCHS = 100, 16, 2
ROUNDS = -(-N // B)  # 7 batches a pass
PER_RANK = -(-ROUNDS // 2)  # 4 each: the 7th round's second batch wraps to the first
DUMP = """
import json, os, runpy, sys
import torch
script, out = sys.argv[1], sys.argv[2]
sys.argv = [script, *sys.argv[3:]]
model, seen, history = runpy.run_path(script, run_name="converted")["main"]()
rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
torch.save({"history": history, "final": [p.detach().clone() for p in model.parameters()]},
           os.path.join(out, "params%d.pt" % rank))
with open(os.path.join(out, "seen%d.json" % rank), "w") as f:
    json.dump([[str(key), ids] for key, ids in seen], f)
"""


def _passes(seen):
    """pass name -> the batches (lists of sample ids) of it, in order."""
    found = {}
    for key, ids in seen:
        found.setdefault(key, []).append(ids)
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(two-process dumps, one-process dumps of the converted script, dumps of the original)."""
    root = tmp_path_factory.mktemp("hand_batches")
    (root / "after.py").write_bytes(convert((h.FIXTURES / "hand_batches" / "before.py").read_bytes()).output)
    (root / "before.py").write_bytes((h.FIXTURES / "hand_batches" / "before.py").read_bytes())
    (root / "dump.py").write_text(DUMP)
    args = ["--epochs", str(EPOCHS), "--batch-size", str(B), "--num-samples", str(N)]
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


def _seen(out, rank):
    return json.loads((out / f"seen{rank}.json").read_text())


def test_each_process_trains_on_its_own_part_as_many_steps(runs):
    ranks = [_passes(_seen(runs["two"], rank)) for rank in (0, 1)]
    assert ranks[0].keys() == ranks[1].keys() == {"warm-up", *map(str, range(EPOCHS))}
    for name in ranks[0]:
        parts = [ranks[r][name] for r in (0, 1)]
        assert [len(p) for p in parts] == [PER_RANK, PER_RANK], name
        ids = [{i for batch in part for i in batch} for part in parts]
        assert ids[0] | ids[1] == set(range(N)), name  # every sample, in every pass
        assert len(ids[0] & ids[1]) <= B, (name, len(ids[0] & ids[1]))  # only the batch the last round wraps to
        assert parts[1][-1] == parts[0][0], name  # which is the pass's first


def test_the_parameters_agree_after_the_second_step_and_at_exit(runs):
    import torch

    dumps = [torch.load(runs["two"] / f"params{rank}.pt") for rank in (0, 1)]
    assert len(dumps[0]["history"]) == len(dumps[1]["history"]) == PER_RANK * (EPOCHS + 1)
    for key in ("second", "final"):
        pick = (lambda d: d["history"][1]) if key == "second" else (lambda d: d["final"])
        assert all(torch.equal(a, b) for a, b in zip(pick(dumps[0]), pick(dumps[1]))), key


def test_one_process_trains_on_the_originals_batches(runs):
    """``python after.py``: shard_batches gives the batches back as they are, and the original's
    random draws are not moved (agree_random_state does nothing there)."""
    import torch

    assert _seen(runs["one"], 0) == _seen(runs["original"], 0)
    one, original = (torch.load(runs[name] / "params0.pt") for name in ("one", "original"))
    assert all(torch.equal(a, b) for a, b in zip(one["final"], original["final"]))
