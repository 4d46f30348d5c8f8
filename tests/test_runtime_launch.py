"""ddpify_runtime under real launches on CPU (gloo): torchrun, and SLURM-style variables only."""

import json
import subprocess
import sys
import textwrap

import pytest

from tests.support.env import clean_env, free_port, torchrun_job

pytestmark = pytest.mark.slow

TIMEOUT_S = 120


def read_reports(out_dir, world):
    return [json.loads((out_dir / f"rank{r}.json").read_text()) for r in range(world)]


TORCHRUN_SCRIPT = textwrap.dedent("""
    import contextlib, io, json, os, sys, time
    import torch, torch.distributed as dist
    from torch.utils.data import WeightedRandomSampler
    import ddpify_runtime as rt

    rt.init_distributed_mode()
    rt.init_distributed_mode()  # a no-op: one group, one banner
    rank = rt.get_rank()
    torch.manual_seed(1000 + rank)  # global RNG differs per rank: the shards must not care
    sampler = WeightedRandomSampler([1.0] * 10, num_samples=11)
    sharded = rt.ShardedSampler(sampler)
    sharded.set_epoch(2)
    full = rt.ShardedSampler(sampler, num_replicas=1, rank=0)
    full.set_epoch(2)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print("plain print")
    marker = f"{sys.argv[1]}/downloaded"
    with rt.main_process_first():  # local rank 0 "downloads"; rank 1 must find the file
        found_download = os.path.exists(marker)
        if rank == 0:
            time.sleep(1)
            torch.rand(5)  # a synthetic set drawn where its file is missing: on the first process only
            open(marker, "w").close()
    after = torch.randperm(10).tolist()  # a random_split after the block: the same on every process
    report = {
        "rank": rank, "local_rank": rt.local_rank(), "world": rt.get_world_size(),
        "backend": dist.get_backend(), "main": rt.is_main_process(),
        "agree": rt.agree_on(rank == 0), "shard": list(sharded), "full": list(full),
        "printed": printed.getvalue(), "found_download": found_download, "after": after,
        "from_main": rt.from_main_process(lambda: f"runs/{rank}"),  # rank 1's writer is None
    }
    rt.set_epoch([], 0)  # the first call says, once, that batch sizes are per process
    rt.set_epoch([], 1)
    rt.barrier()
    with open(f"{sys.argv[1]}/rank{rank}.json", "w") as f:
        json.dump(report, f)
""")


def test_torchrun_two_processes(tmp_path):
    proc, (r0, r1) = torchrun_job(TORCHRUN_SCRIPT, tmp_path, timeout=TIMEOUT_S)
    for r, report in enumerate((r0, r1)):
        assert (report["rank"], report["local_rank"], report["world"], report["backend"],
                report["main"], report["agree"]) == (r, r, 2, "gloo", r == 0, True)
        assert report["from_main"] == "runs/0"
    assert r0["printed"] == "plain print\n" and r1["printed"] == ""
    assert (r0["found_download"], r1["found_download"]) == (False, True), "main_process_first ordering"
    assert r0["after"] == r1["after"], "rank 0's random state after main_process_first"
    assert r0["full"] == r1["full"] and len(r0["full"]) == 11
    assert len(r0["shard"]) == len(r1["shard"]) == 6
    padded = r0["full"] + r0["full"][:1]
    assert r0["shard"] == padded[0::2] and r1["shard"] == padded[1::2]
    banner, batch = "ddpify: 2 processes (torchrun, gloo)\n", \
        "ddpify: batch sizes are per process: global batch = batch_size x 2\n"
    assert (proc.stderr.count(banner), proc.stderr.count(batch)) == (1, 1)
    assert proc.stderr.index(banner) < proc.stderr.index(batch)


NESTED_FIRST_SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    import torch
    import ddpify_runtime as rt

    rt.init_distributed_mode()
    rank = rt.get_rank()
    torch.manual_seed(rank)
    marker = f"{sys.argv[1]}/codec"

    def make_codec():  # an object whose construction holds a block of its own (its download inside it)
        with rt.main_process_first():
            found = os.path.exists(marker)
            if rank == 0:
                time.sleep(1)
                open(marker, "w").close()
        return found

    with rt.main_process_first():  # built under another block where it is called (round 29's transformer)
        found = make_codec()
        torch.rand(3)
    after = torch.randperm(10).tolist()
    with rt.main_process_first():  # a block after them: barriers pair as before
        again = os.path.exists(marker)
    rt.barrier()
    with open(f"{sys.argv[1]}/rank{rank}.json", "w") as f:
        json.dump({"found": found, "after": after, "again": again}, f)
""")


def test_a_main_process_first_block_inside_another_is_part_of_it(tmp_path):
    """A block inside another (the construction of a config whose codec downloads under its own
    block, built under a block where the script calls it; decision 0236): the processes meet at
    the outer block's barriers only. Before, rank 1 waited at the inner block's barrier while rank 0
    broadcast its random state after it, and both hung. The order holds (rank 0 makes the file,
    rank 1 finds it), the random state after the outer block is rank 0's, and a block after them
    pairs its barriers as before."""
    proc, (r0, r1) = torchrun_job(NESTED_FIRST_SCRIPT, tmp_path, timeout=TIMEOUT_S)
    assert (r0["found"], r1["found"]) == (False, True)
    assert r0["after"] == r1["after"]
    assert r0["again"] and r1["again"]


SLURM_SCRIPT = textwrap.dedent("""
    import json, sys
    import torch.distributed as dist
    from torch.utils.data import DistributedSampler
    import ddpify_runtime as rt

    rt.init_distributed_mode()
    report = {"rank": rt.get_rank(), "world": rt.get_world_size(),
              "shard": list(DistributedSampler(range(10), shuffle=True))}
    rt.barrier()
    with open(f"{sys.argv[1]}/rank{dist.get_rank()}.json", "w") as f:
        json.dump(report, f)
""")


def test_slurm_variables_alone_form_the_group(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SLURM_SCRIPT)
    port = str(free_port())
    procs = [subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)],
        env=clean_env(SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank), SLURM_NTASKS="2",
                      SLURM_JOB_NODELIST="localhost", MASTER_PORT=port),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in range(2)]
    try:
        outputs = [proc.communicate(timeout=TIMEOUT_S) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for proc, (_, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
        assert "batch" not in err  # no set_epoch, no sharded loader: no word about batch sizes
    assert "ddpify: 2 processes (slurm, gloo)\n" in outputs[0][1]
    r0, r1 = read_reports(tmp_path, 2)
    assert [(r0["rank"], r0["world"]), (r1["rank"], r1["world"])] == [(0, 2), (1, 2)]
    assert not set(r0["shard"]) & set(r1["shard"])
    assert sorted(r0["shard"] + r1["shard"]) == list(range(10))
    assert "ddpify: 2 processes (slurm, gloo)" in outputs[0][1]
