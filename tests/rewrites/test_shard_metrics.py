"""shard-metrics: a TODO where a sum over one process's shard is divided by the full dataset size."""

from __future__ import annotations

import pytest

from tests.support.snippets import SCRIPT, TRAINS, pair, rewrite_tests

NAME = "shard-metrics"

# the lines several pairs below share, around theirs
SUMMED_LOSS = TRAINS.instead_of("loop").enclosing(setup="""\
for epoch in range(2):
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
""", indent="    ")

PAIRS = [
    pair("""\
avg = total / len(loader.dataset)
""", """\
# TODO(ddpify): `total` sums this process's shard only, but is divided by the full dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads about 1/world_size of the true value
avg = total / len(loader.dataset)
""", "shard_total_divided_by_full_dataset_size_gets_a_todo", scaffold=SUMMED_LOSS),
    # the usual "average loss" line (once flagged only when assigned)
    pair("""\
print(total / len(loader.dataset))
""", """\
# TODO(ddpify): `total` sums this process's shard only, but is divided by the full dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads about 1/world_size of the true value
print(total / len(loader.dataset))
""", "the_usual_average_loss_line_once_flagged", scaffold=SUMMED_LOSS),
    pair("""\

for epoch in range(3):
    correct = 0
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        correct += (model(x) > 0).sum().item()
    accuracy = correct / len(train_loader.dataset)
    batches = correct / len(train_loader)
""", """\

for epoch in range(3):
    correct = 0
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        correct += (model(x) > 0).sum().item()
    # TODO(ddpify): `correct` sums this process's shard only, but is divided by the full dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads about 1/world_size of the true value
    accuracy = correct / len(train_loader.dataset)
    batches = correct / len(train_loader)
""", "a_shard_sum_divided_by_the_full_dataset_size_gets_a_todo", report=[
        "warning: `correct` sums this process's shard only, but is divided by the full dataset size: all_reduce it first (torch.distributed.all_reduce), or it reads about 1/world_size of the true value",
    ], scaffold=SCRIPT.instead_of("loop")),
]

UNCHANGED = [
    # a mean over this shard's batches
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    avg = total / len(loader)
""", id="a_mean_over_this_shard_s_batches"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)
