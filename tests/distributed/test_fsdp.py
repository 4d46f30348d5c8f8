"""`--strategy fsdp` under a real launch (CPU, gloo): exact equivalence, plain checkpoints, shards.

Equivalence, as for DDP (``test_equivalence.py``, whose docstring explains why the orders line
up): ``fixtures/equivalence`` trained in one process with batch 2B and, converted with
``--strategy fsdp``, under ``torchrun --nproc_per_node=2`` with batch B must end with the same
weights (1e-5). FSDP2 reduce-scatters the mean of the two ranks' gradients into each rank's
shard, which is the same batch gradient as DDP's all-reduce; plain SGD keeps no state beyond the
shard. The converted run's checkpoint must come from rank 0 only and be the plain state dict
the single-GPU script writes: plain tensors (no DTensor), loaded strictly into the original
``Regressor``; and it must hold exactly the full parameters both ranks gathered at exit (the
probe's hash). Each rank must have held a shard: its local elements less than the full count,
and the two shards adding up to it. As a check that the comparison can fail, the converted
script run as one plain process with batch B (which also shows it runs without a launcher) must
end measurably far (> 1e-3) from batch 2B.

Memory: ``shard_model`` on a transformer-like model (embedding, a ``ModuleList`` of blocks, a
head) under two processes, then an Adam step: each rank's local parameter and optimizer-state
elements are about half of the full counts.
"""

from __future__ import annotations

import textwrap

import pytest

from ddpify.convert import Options
from tests.e2e.harness import digest
from tests.support.env import torchrun_job

from . import helpers as h
from .test_equivalence import B, EPOCHS, N, TOLERANCE, _max_abs_diff, _weights

pytestmark = pytest.mark.slow

FSDP = Options(strategy="fsdp")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The original (1 x 2B), the fsdp conversion under torchrun (2 x B) and as plain python (1 x B)."""
    import sys

    folder = tmp_path_factory.mktemp("fsdp_equivalence")
    script = h.convert_fixture("equivalence", folder / "after_fsdp.py", FSDP)
    common = ["--epochs", str(EPOCHS), "--num-samples", str(N)]
    original, torchrun, python = h.run_all(
        [[sys.executable, h.FIXTURES / "equivalence" / "before.py", *common, "--batch-size", str(2 * B),
          "--out", folder / "original.pt"],
         h.torchrun(script, *common, "--batch-size", str(B), "--out", str(folder / "torchrun.pt")),
         [sys.executable, script, *common, "--batch-size", str(B), "--out", folder / "python.pt"]],
        folder, [h.env(), h.env(folder / "probe-torchrun"), h.env(folder / "probe-python")])
    return {"original": original, "torchrun": torchrun, "python": python, "folder": folder}


def test_fsdp_two_processes_with_batch_b_match_one_process_with_batch_2b(runs):
    import torch

    folder = runs["folder"]
    for mode in ("original", "torchrun"):
        assert runs[mode].returncode == 0, str(runs[mode])
    probe = h.Probe.read(folder / "probe-torchrun")
    assert probe.saved_paths() == {0: [str(folder / "torchrun.pt")]}, "the checkpoint must come from rank 0 only"
    raw = torch.load(folder / "torchrun.pt", map_location="cpu")
    assert all(type(t) is torch.Tensor for t in raw["model"].values()), \
        {k: type(t).__name__ for k, t in raw["model"].items()}
    _, original = _weights(folder / "original.pt")
    converted, weights = _weights(folder / "torchrun.pt")  # loads strictly into the plain Regressor
    diff = _max_abs_diff(original, weights)
    print(f"\nfsdp: max abs diff, original 1 x {2 * B} vs converted 2 x {B}: {diff:.3g}; steps per epoch "
          f"{converted['steps_per_epoch']}")
    assert diff <= TOLERANCE
    assert converted["steps_per_epoch"] == [N // (2 * B)] * EPOCHS
    assert not h.shard_problems(probe, 2, N)

    params = probe.params()
    assert sorted(params) == [0] and sorted(params[0]) == [0, 1], params
    by_rank = params[0]
    assert by_rank[0]["sha256"] == by_rank[1]["sha256"] == digest(weights.items()), \
        "the ranks' gathered parameters differ from each other or from the checkpoint"
    full = by_rank[0]["full"]
    local = {r: e["local"] for r, e in by_rank.items()}
    print(f"fsdp: parameters per rank {local} of {full}")
    assert max(local.values()) < full and sum(local.values()) == full


def test_fsdp_comparison_can_fail(runs):
    """One plain process with batch B is a different trajectory: the tolerance must notice it."""
    assert runs["python"].returncode == 0, str(runs["python"])
    assert h.Probe.read(runs["folder"] / "probe-python").saved_paths() == {0: [str(runs["folder"] / "python.pt")]}
    _, original = _weights(runs["folder"] / "original.pt")
    _, single = _weights(runs["folder"] / "python.pt")
    diff = _max_abs_diff(original, single)
    print(f"\nfsdp: max abs diff, original 1 x {2 * B} vs 1 x {B}: {diff:.3g}")
    assert diff > 1e-3


SHARD_SIZES = textwrap.dedent("""
    import json, sys
    import torch
    import torch.nn as nn
    from ddpify_runtime import get_rank, init_distributed_mode, shard_model, sharded_blocks

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.attn = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(3 * d, d)
            self.norm = nn.LayerNorm(d)

        def forward(self, x):
            return x + self.proj(torch.relu(self.attn(self.norm(x))))

    class TinyTransformer(nn.Module):
        def __init__(self, vocab=101, d=32, layers=4):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(Block(d) for _ in range(layers))
            self.head = nn.Linear(d, vocab)

        def forward(self, tokens):
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x)
            return self.head(x)

    init_distributed_mode()
    torch.manual_seed(0)
    model = TinyTransformer()
    full = sum(p.numel() for p in model.parameters())
    blocks = [type(b).__name__ for b in sharded_blocks(model)]
    model = shard_model(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 101, (4, 8))
    model(tokens).sum().backward()
    optimizer.step()
    local = sum(p.to_local().numel() for p in model.parameters())
    state = sum(t.to_local().numel() for s in optimizer.state.values() for t in s.values()
                if hasattr(t, "to_local"))
    with open(f"{sys.argv[1]}/rank{get_rank()}.json", "w") as f:
        json.dump({"full": full, "local": local, "state": state, "blocks": blocks,
                   "sharded": type(model).__name__}, f)
""")


def test_each_rank_holds_about_half_of_the_parameters_and_optimizer_state(tmp_path):
    _, ranks = torchrun_job(SHARD_SIZES, tmp_path)
    full = ranks[0]["full"]
    assert ranks[0]["blocks"] == ["Block"] * 4, ranks[0]["blocks"]  # the ModuleList's layers
    print()
    for r in ranks:
        print(f"fsdp rank: parameters {r['local']} / {full} = {r['local'] / full:.3f}, Adam state "
              f"{r['state']} / {2 * full} = {r['state'] / (2 * full):.3f} (DDP: 1.000 and 1.000)")
        assert r["sharded"] == "FSDPTinyTransformer"
        assert 0.45 <= r["local"] / full <= 0.55
        assert 0.45 <= r["state"] / (2 * full) <= 0.55  # exp_avg and exp_avg_sq, per parameter
    assert sum(r["local"] for r in ranks) == full
