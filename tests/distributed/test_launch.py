"""Multi-node and SLURM launches of a converted script, all on this machine (CPU, gloo).

The script is ``fixtures/canonical`` (a shuffled training loader, a final ``torch.save``) when
present, else ``fixtures/accumulation``. The probe records, in every worker: the global rank and
world size of the process group, ``ddpify_runtime.local_rank()`` (what selects the GPU), the
indices every batch fetched, and every ``torch.save``.

* Multi-node: two ``torchrun --nnodes=2 --node_rank=K --master_addr/--master_port`` launchers
  (static rendezvous: node K's workers get the global ranks K * nproc ...), started together.
  Each node's worker must see LOCAL_RANK 0 (the device comes from LOCAL_RANK, never from RANK),
  the global ranks must be 0 and 1, the shards disjoint, and only global rank 0 may save.
  Two nodes of two processes each (global ranks 0-3, local ranks 0, 1, 0, 1) run only with
  ``DDPIFY_TEST_2X2=1`` (about 30 s on two cores).
* SLURM: two plain ``python`` processes that get only SLURM's variables (``SLURM_PROCID``,
  ``SLURM_LOCALID``, ``SLURM_NTASKS``, ``SLURM_JOB_NODELIST``) and ``MASTER_PORT``: no RANK,
  LOCAL_RANK, WORLD_SIZE or MASTER_ADDR. The master address comes from the node list (its first
  host); with ``localhost,otherhost`` the two tasks play one task per node (SLURM_LOCALID 0 on both).
"""

from __future__ import annotations

import os
import sys

import pytest

from . import helpers as h

pytestmark = pytest.mark.slow

if (h.FIXTURES / "canonical" / "before.py").is_file():
    FIXTURE, SIZE_FLAG = "canonical", "--num-train"
else:
    FIXTURE, SIZE_FLAG = "accumulation", "--num-samples"
N = 48
EPOCHS = 2


def _args(out):
    return ["--epochs", str(EPOCHS), "--batch-size", "8", SIZE_FLAG, str(N), "--out", str(out)]


def _check(probe, world, local_ranks, out, master_addr=None):
    init = probe.init()
    assert sorted(init) == list(range(world)), f"global ranks {sorted(init)}"
    assert {e["world"] for e in init.values()} == {world}
    assert {e["backend"] for e in init.values()} == {"gloo"}
    if master_addr is not None:
        assert {e["env"]["MASTER_ADDR"] for e in init.values()} == {master_addr}
    runtime_local = {e["rank"]: e["local_rank"] for e in probe.of("ddp")}
    assert runtime_local == local_ranks, "ddpify_runtime.local_rank() (the device index) per global rank"
    assert h.shard_problems(probe, world, N) == []
    assert len(probe.indices()[0]) == EPOCHS
    assert probe.saved_paths() == {0: [str(out)]}, f"savers: {probe.saved_paths()}"
    assert out.is_file()


@pytest.mark.parametrize("nproc", [1, pytest.param(2, marks=pytest.mark.skipif(
    os.environ.get("DDPIFY_TEST_2X2") != "1", reason="2 nodes x 2 processes takes ~30 s on 2 cores: "
    "set DDPIFY_TEST_2X2=1"))], ids=["2x1", "2x2"])
def test_two_nodes(tmp_path, nproc):
    script = h.convert_fixture(FIXTURE, tmp_path / "after.py")
    port = h.free_port()
    out = tmp_path / "weights.pt"
    cmds = [h.torchrun(script, *_args(out), nproc=nproc,
                       launcher=["--nnodes=2", f"--node_rank={node}", "--master_addr=127.0.0.1",
                                 f"--master_port={port}"])
            for node in range(2)]
    done = h.run_all(cmds, tmp_path, [h.env(tmp_path / "probe")] * 2)
    for node in done:
        assert node.returncode == 0, str(node)
    print(f"\n2 nodes x {nproc}: exit 0 in {max(d.wall_s for d in done):.1f} s")
    probe = h.Probe.read(tmp_path / "probe")
    world = 2 * nproc
    _check(probe, world, {r: r % nproc for r in range(world)}, out)
    init = probe.init()
    for rank, event in init.items():  # node K's workers hold global ranks K * nproc ...
        assert (event["env"]["GROUP_RANK"], event["env"]["LOCAL_RANK"]) == \
            (str(rank // nproc), str(rank % nproc))


@pytest.mark.parametrize("nodelist", ["localhost", "localhost,otherhost"])
def test_slurm_variables_only(tmp_path, nodelist):
    script = h.convert_fixture(FIXTURE, tmp_path / "after.py")
    port = str(h.free_port())
    out = tmp_path / "weights.pt"
    one_node = "," not in nodelist
    environs = [h.env(tmp_path / "probe", SLURM_PROCID=str(rank), SLURM_NTASKS="2",
                      SLURM_LOCALID=str(rank if one_node else 0), SLURM_JOB_NODELIST=nodelist,
                      MASTER_PORT=port)
                for rank in range(2)]
    for e in environs:
        assert not {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR"} & set(e)
    done = h.run_all([[sys.executable, script, *_args(out)]] * 2, tmp_path, environs)
    for task in done:
        assert task.returncode == 0, str(task)
    print(f"\nSLURM {nodelist}: exit 0 in {max(d.wall_s for d in done):.1f} s")
    probe = h.Probe.read(tmp_path / "probe")
    _check(probe, 2, {0: 0, 1: 1 if one_node else 0}, out, master_addr="localhost")
    assert {r: e["env"]["SLURM_PROCID"] for r, e in probe.init().items()} == {0: "0", 1: "1"}
