"""The self-check's cost: a 200-step training run with the checks on vs off, as ratios.

    OMP_NUM_THREADS=1 .venv/bin/python bench/verify_overhead.py              # 5 rounds (~1 min on 2 cores)
    OMP_NUM_THREADS=1 .venv/bin/python bench/verify_overhead.py --rounds 9 --nproc 2
    OMP_NUM_THREADS=1 .venv/bin/python bench/verify_overhead.py --rounds 20 --in-one-job

The model runs on ``local_device()``: a GPU where CUDA is visible (one process per GPU; hide
them with ``CUDA_VISIBLE_DEVICES=`` for CPU processes). A converted training program (written below: an MLP, a DistributedSampler loader, DDP,
``set_epoch`` and an ``end_epoch()`` per epoch, 4 epochs of 50 steps) runs under ``torchrun
--standalone`` with ``DDPIFY_VERIFY=1`` and ``=0``, alternately. Each run times, on the main
process, the whole training (from before the loader is built to the last step: every hook, the
2nd step's gather and the hooks' removal included) and each step. Before the clock starts, the
program imports ``torch._dynamo`` and passes a barrier: DDP's first construction imports it and
the process group connects at its first collective, seconds that are the same with the checks
or without and that otherwise drown the difference (measured on 16 idle cores: 4.6-6.5 s of a
5 s "training" with 2.2 ms steps). Printed per configuration:
the median over rounds of the whole run and of the median step after step 20 (the checks ended
at step 2, the per-pass hooks at the second epoch's start), and the on/off ratios. Goal: the
whole run at most 2 % slower, the steps after the checks the same speed.

``--in-one-job`` runs every training in one launch instead (``DDPIFY_VERIFY=0``, a warm-up
training first): before every other training the program installs the checks as
``init_distributed_mode()`` does, and asserts that by its end only their construction hooks are
left (then removes those: the next training may be one without checks). A launch's
own noise (process start, scheduling of two fresh processes) is then out of the figures, which
measure the checks alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.support.env import clean_env  # noqa: E402

PROGRAM = '''
import json, sys, time
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
import ddpify_runtime
from ddpify_runtime import barrier, device_ids, end_epoch, get_world_size, init_distributed_mode, is_main_process, local_device, set_epoch


def train():
    torch.manual_seed(0)
    start = time.perf_counter()
    n = 50 * 32 * get_world_size()  # 50 steps per epoch on every process
    data = TensorDataset(torch.randn(n, 64), torch.randint(0, 10, (n,)))
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data, shuffle=True))
    device = local_device()
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(device)
    model = DistributedDataParallel(model, device_ids=device_ids(model))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    steps = []
    for epoch in range(4):
        set_epoch(loader, epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            steps.append(time.perf_counter())
        end_epoch()
    return {"total": steps[-1] - start, "steps": [b - a for a, b in zip(steps, steps[1:])]}


init_distributed_mode()
import torch._dynamo  # DDP's first construction imports it: seconds, the same with the checks or without
barrier()  # and the process group connects at its first collective
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 0
if rounds:  # in one job: the checks installed before every other training, as init_distributed_mode does
    results = {"1": [], "0": []}
    train()  # a warm-up training, not counted
    for round_ in range(rounds):
        for verify in ("1", "0") if round_ % 2 == 0 else ("0", "1"):
            if verify == "1":
                ddpify_runtime._install_self_check("warn", 1800.0)
            barrier()
            results[verify].append(train())
            check = ddpify_runtime._STATE.self_check
            if verify == "1":  # dormant by its end (its constructors' hooks only); taken away for the next one
                assert not check.step_undo and not check.pass_undo, "the checks did not end"
                check.remove()
            assert ddpify_runtime._STATE.self_check is None
else:
    results = train()
if is_main_process():
    with open(sys.argv[1], "w") as f:
        json.dump(results, f)
'''


def run(script: Path, out: Path, verify: str, nproc: int, rounds: int = 0) -> dict:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(script), str(out), str(rounds)]
    proc = subprocess.run(cmd, env=clean_env(DDPIFY_VERIFY=verify), capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0 or "self-check" in proc.stderr:
        raise SystemExit(f"run with DDPIFY_VERIFY={verify} failed or found something:\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def per_launch(script: Path, folder: Path, rounds: int, nproc: int) -> dict:
    """Each training its own torchrun launch, DDPIFY_VERIFY=1 and =0 alternately."""
    figures: dict = {"1": [], "0": []}
    for round_ in range(rounds):
        for verify in ("1", "0") if round_ % 2 == 0 else ("0", "1"):
            figures[verify].append(run(script, folder / "times.json", verify, nproc))
    return figures


def in_one_job(script: Path, folder: Path, rounds: int, nproc: int) -> dict:
    """Every training in one torchrun launch (DDPIFY_VERIFY=0): after a warm-up training, the
    checks are installed before every other one, as ``init_distributed_mode()`` installs them,
    and must have ended by its end."""
    return run(script, folder / "times.json", "0", nproc, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--in-one-job", action="store_true",
                        help="run every training in one launch, the checks installed before every other one")
    args = parser.parse_args()
    measure = in_one_job if args.in_one_job else per_launch
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train.py"
        script.write_text(PROGRAM)
        figures = measure(script, Path(folder), args.rounds, args.nproc)
    for results in figures.values():
        assert all(len(result["steps"]) == 199 for result in results)
    totals = {key: [r["total"] for r in results] for key, results in figures.items()}
    after = {key: [statistics.median(r["steps"][20:]) for r in results] for key, results in figures.items()}
    on, off = ({"total": statistics.median(totals[k]), "after": statistics.median(after[k])} for k in ("1", "0"))
    where = "in one launch" if args.in_one_job else "a launch each"
    print(f"{args.rounds} rounds ({where}), {args.nproc} processes, 200 steps (medians)")
    print(f"  whole training   checks on {on['total'] * 1e3:8.1f} ms   off {off['total'] * 1e3:8.1f} ms   "
          f"ratio {on['total'] / off['total']:.3f}")
    print(f"  step after 20    checks on {on['after'] * 1e3:8.3f} ms   off {off['after'] * 1e3:8.3f} ms   "
          f"ratio {on['after'] / off['after']:.3f}")
    for key, name in (("1", "on"), ("0", "off")):
        rounds = " ".join(f"{t * 1e3:.0f}" for t in totals[key])
        print(f"  whole training, checks {name}, each round (ms): {rounds}")


if __name__ == "__main__":
    main()
