"""local-device: hard-coded GPU 0 becomes this process's GPU."""

from __future__ import annotations

import pytest

from tests.support.snippets import pair, rewrite_tests

NAME = "local-device"

PAIRS = [
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", "cuda_0_string_becomes_cuda"),
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
gpu = 0 if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(2, 1).cuda(0)
other = torch.device("cuda", 0)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import local_rank

loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
gpu = local_rank() if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(2, 1).cuda()
other = torch.device("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", "gpu_index_0_becomes_local_rank_or_the_current_device"),
    pair("""\

import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
train_loader = DataLoader(ds, batch_size=4, shuffle=True)

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
gpu = 0 if torch.cuda.is_available() else "cpu"
other = torch.device("cuda", 0)
model = torch.nn.Linear(2, 1).cuda(0)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""", """\

import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import local_rank

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
train_loader = DataLoader(ds, batch_size=4, shuffle=True)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gpu = local_rank() if torch.cuda.is_available() else "cpu"
other = torch.device("cuda")
model = torch.nn.Linear(2, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""", "hard_coded_gpu_zero_becomes_the_local_gpu"),
    pair("""\

import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
train_loader = DataLoader(ds, batch_size=4, shuffle=True)
device = 0
model = torch.nn.Linear(2, 1).to(0)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""", """\

import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import local_rank

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
train_loader = DataLoader(ds, batch_size=4, shuffle=True)
device = local_rank()
model = torch.nn.Linear(2, 1).to(local_rank())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""", "bare_device_index_zero_becomes_the_local_rank"),
    # a comment that names GPU 0 goes with it; other comments on edited lines stay; a call keeps its layout
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
gpu = 0  # shorthand for cuda:0
model = torch.nn.Linear(2, 1).cuda(0)  # on the first GPU
device = torch.device("cuda:0")  # where the batches go
other = torch.device(
    "cuda",
    0
)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import local_rank

loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
gpu = local_rank()
model = torch.nn.Linear(2, 1).cuda()
device = torch.device("cuda")  # where the batches go
other = torch.device(
    "cuda"
)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", "stale_gpu0_comment_dropped"),
]

UNCHANGED = [
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="unchanged-1"),
    # an explicit other GPU is the user's choice
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1).to("cuda:1")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="an_explicit_other_gpu_is_the_user"),
    # a message names no device
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
print("cuda:0")
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_message_names_no_device"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)
