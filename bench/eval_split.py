"""Evaluation wall time split across processes (shard-eval): 2 processes vs 1, as a ratio.

    OMP_NUM_THREADS=1 .venv/bin/python bench/eval_split.py            # 3 rounds (~2 min on 2 cores)
    OMP_NUM_THREADS=1 .venv/bin/python bench/eval_split.py --rounds 5

A single-GPU script (written below) trains one short epoch, then times a compute-bound
evaluation pass (a wide MLP over 4,000 samples, sums and counts) several times and prints each
time. Three runs per round, alternately: the original under plain `python` (1 process), the
ddpify conversion under `torchrun --standalone --nproc_per_node=2` (evaluation split), and the
conversion with `--no-shard-eval` under the same torchrun (every process evaluates everything,
as before shard-eval). The evaluation time of a run is the median of its passes (the first is a
warm-up and dropped); a configuration's figure is the median over rounds. Printed: each
configuration's time and its ratio to the single process (expect close to 0.5 for the split
on 2 free cores, close to 1.0 without it), and whether the two 2-process runs (the same
training, so the same weights) printed the same evaluation numbers. The single process trains
with other batches, so its numbers differ; the exactness tests compare equal trainings.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ddpify.convert import Options, convert  # noqa: E402
from tests.support.env import clean_env  # noqa: E402

SCRIPT = '''
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def evaluate(model, loader):
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            loss_sum += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
    model.train()
    return loss_sum / len(loader.dataset), correct


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = torch.randn(4256, 256), torch.randint(0, 10, (4256,))
    train_loader = DataLoader(TensorDataset(x[:256], y[:256]), batch_size=64, shuffle=True)
    test_loader = DataLoader(TensorDataset(x[256:], y[256:]), batch_size=200)
    model = nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(1):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
    for _ in range(args.passes):
        start = time.perf_counter()
        loss, correct = evaluate(model, test_loader)
        print(f"eval {time.perf_counter() - start:.4f} s: loss {loss:.5f} correct {correct}")


if __name__ == "__main__":
    main()
'''


def run(cmd, cwd) -> tuple[float, list[str]]:
    out = subprocess.run(cmd, cwd=cwd, env=clean_env(PYTHONPATH=str(REPO / "runtime")), capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{out.stdout[-2000:]}\n{out.stderr[-6000:]}")
    passes = re.findall(r"^eval ([0-9.]+) s: (.*)$", out.stdout, re.M)
    return statistics.median(float(t) for t, _ in passes[1:]), [numbers for _, numbers in passes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "single.py").write_text(SCRIPT)
        (folder / "split.py").write_bytes(convert(SCRIPT).output)
        (folder / "whole.py").write_bytes(convert(SCRIPT, Options(skip=frozenset({"shard-eval"}))).output)
        assert "shard_eval(" in (folder / "split.py").read_text() and "shard_eval(" not in (folder / "whole.py").read_text()
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
        configs = {"1 process (original)": [sys.executable, "single.py"],
                   "2 processes, shard-eval": [*torchrun, "split.py"],
                   "2 processes, --no-shard-eval": [*torchrun, "whole.py"]}
        times = {name: [] for name in configs}
        printed = {}
        for _ in range(args.rounds):
            for name, cmd in configs.items():
                seconds, numbers = run(cmd, folder)
                times[name].append(seconds)
                printed[name] = numbers
    base = statistics.median(times["1 process (original)"])
    print(f"evaluation pass, median of {args.rounds} rounds (OMP_NUM_THREADS=1):")
    for name, values in times.items():
        figure = statistics.median(values)
        print(f"  {name:30s} {figure * 1000:8.1f} ms   ratio {figure / base:.2f}   rounds {[round(v, 3) for v in values]}")
    same = printed["2 processes, shard-eval"] == printed["2 processes, --no-shard-eval"]
    print(f"2 processes: numbers printed with and without shard-eval identical: {same}")


if __name__ == "__main__":
    main()
