"""download-first: `download=True` data sets are fetched by each node's first process first."""

from __future__ import annotations

import pytest

from tests.support.snippets import SCRIPT, TRAINS, pair, rewrite_tests

NAME = "download-first"

PAIRS = [
    # adjacent downloads share one block
    pair("""\
from torchvision import datasets
ds = datasets.MNIST('data', train=True, download=True)
val = datasets.MNIST('data', train=False, download=True)
loader = DataLoader(ds, batch_size=4, shuffle=True)
""", """\
from torchvision import datasets
from ddpify_runtime import main_process_first

with main_process_first():
    ds = datasets.MNIST('data', train=True, download=True)
    val = datasets.MNIST('data', train=False, download=True)
loader = DataLoader(ds, batch_size=4, shuffle=True)
""", "adjacent_downloads_share_one_block", scaffold=TRAINS.instead_of("loader")),
    pair("""\
from torchvision import datasets
ds = datasets.MNIST('data', train=True, download=True)
val = datasets.MNIST('data', train=False, download=True)
""", """\
from ddpify_runtime import main_process_first

from torchvision import datasets
with main_process_first():
    ds = datasets.MNIST('data', train=True, download=True)
    val = datasets.MNIST('data', train=False, download=True)
""", "dataset_downloads_run_on_the_first_process_of_each_node_first", scaffold=SCRIPT.before("train_loader")),
]

UNCHANGED = [
    pytest.param("""\
from torchvision import datasets
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = datasets.MNIST('data', train=True, download=False)
loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_dataset_that_does_not_download"),
    pytest.param("""\
from torchvision import datasets
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = datasets.MNIST('data', train=True)
loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_dataset_without_a_download_argument"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)
