"""Converting a project (ddpify.inputs.program): in-process `load` + `convert_program` of an entry
script against LibCST's own parse + codegen of the same files, alternately, ratio of medians.

    python bench/program.py [ENTRY] [--reps N]

Without ENTRY, a 20-module project is generated in a temporary folder: an entry script, a
trainer class, a data module and a `models` package of 17 modules (each ~150 lines: a model
class plus helper functions), with the imports between them a real project has.
Target (issue 19): ratio <= 3.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import libcst

from ddpify.convert import convert_program
from ddpify.inputs.program import load

MODEL = '''\
"""Model {i} of the generated project."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import Block


class Net{i}(nn.Module):
    def __init__(self, width={w}):
        super().__init__()
        self.stem = nn.Linear(2, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(3)])
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        x = F.relu(self.stem(x))
        for block in self.blocks:
            x = block(x)
        return self.head(x)

''' + "".join(f'''

def helper_{{i}}_{k}(values, scale={k}):
    """A helper of the kind model files accumulate."""
    total = 0.0
    for v in values:
        if v > scale:
            total += v * scale
        else:
            total -= v / (scale + 1)
    result = [total * j for j in range(scale)]
    return {{{{"total": total, "result": result, "name": "helper_{{i}}_{k}"}}}}
''' for k in range(1, 11))

COMMON = '''\
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + F.relu(self.fc(x))
'''

DATA = '''\
import torch
from torch.utils.data import DataLoader, TensorDataset


def build_loaders(batch_size):
    x, y = torch.randn(256, 2), torch.randint(0, 4, (256,))
    train = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)
    val = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=64)
    return train, val
'''

TRAINER = '''\
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                F.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()
            torch.save(self.model.state_dict(), "last.pt")
'''

ENTRY = '''\
import argparse

import torch

from data import build_loaders
from models import build_model
from trainer import Trainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="net0")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    train_loader, val_loader = build_loaders(32)
    model = build_model(args.model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    Trainer(model, optimizer).fit(train_loader, args.epochs)


if __name__ == "__main__":
    main()
'''


def generate(folder: Path, models: int = 15) -> Path:
    """An entry script + trainer.py + data.py + models/ (__init__, common, `models` model files)."""
    (folder / "models").mkdir(parents=True)
    (folder / "train.py").write_text(ENTRY)
    (folder / "trainer.py").write_text(TRAINER)
    (folder / "data.py").write_text(DATA)
    (folder / "models" / "common.py").write_text(COMMON)
    imports = "".join(f"from .net{i} import Net{i}\n" for i in range(models))
    table = ", ".join(f'"net{i}": Net{i}' for i in range(models))
    (folder / "models" / "__init__.py").write_text(
        imports + f"\nMODELS = {{{table}}}\n\n\ndef build_model(name):\n    return MODELS[name]()\n")
    for i in range(models):
        (folder / "models" / f"net{i}.py").write_text(MODEL.format(i=i, w=16 + i))
    return folder / "train.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entry", nargs="?")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(args.entry) if args.entry else generate(Path(tmp))
        data = entry.read_bytes()
        files = [p.path for p in load(entry, data).parts]
        lines = sum(len(p.read_bytes().splitlines()) for p in files)

        def ours():
            convert_program(load(entry, entry.read_bytes()))

        def libcst_alone():
            for path in files:
                libcst.parse_module(path.read_bytes()).code

        ours(), libcst_alone()  # warm-up
        times: dict = {ours: [], libcst_alone: []}
        for _ in range(args.reps):
            for fn in times:
                start = time.perf_counter()
                fn()
                times[fn].append(time.perf_counter() - start)
        a, b = statistics.median(times[ours]), statistics.median(times[libcst_alone])
        print(f"{len(files)} modules, {lines} lines: convert_program {a:.3f} s, LibCST parse+codegen "
              f"{b:.3f} s, ratio {a / b:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
