"""local-device: hard-coded GPU 0 becomes this process's GPU."""

from __future__ import annotations

import pytest

from tests.support.snippets import SCRIPT, TRAINS, pair, rewrite_tests

NAME = "local-device"

PAIRS = [
    pair("""\
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 1).to(device)
""", """\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 1).to(device)
""", "cuda_0_string_becomes_cuda", scaffold=TRAINS.instead_of("model")),
    pair("""\
gpu = 0 if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(2, 1).cuda(0)
other = torch.device("cuda", 0)
""", """\
from ddpify_runtime import local_rank

gpu = local_rank() if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(2, 1).cuda()
other = torch.device("cuda")
""", "gpu_index_0_becomes_local_rank_or_the_current_device", scaffold=TRAINS.instead_of("model")),
    pair("""\

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
gpu = 0 if torch.cuda.is_available() else "cpu"
other = torch.device("cuda", 0)
model = torch.nn.Linear(2, 1).cuda(0)
""", """\
from ddpify_runtime import local_rank


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gpu = local_rank() if torch.cuda.is_available() else "cpu"
other = torch.device("cuda")
model = torch.nn.Linear(2, 1).cuda()
""", "hard_coded_gpu_zero_becomes_the_local_gpu", scaffold=SCRIPT.instead_of("model")),
    # the twenty-sixth sweep's wavenet amp emulator (decision 0203): `--device` with `default=0`, then
    # `.to(args.device)` and `device=args.device`, put every process on GPU 0; an option read only as a switch
    # (`if args.gpu:`) and a string default (`"cpu"`) stay
    pair("""\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default=0, help="Pytorch device")
parser.add_argument("--gpu", type=int, default=0)
parser.add_argument("--eval_device", default="cpu")
args = parser.parse_args()
model = torch.nn.Linear(2, 1).to(args.device)
batch = torch.zeros(4, 2, device=args.device)
if args.gpu:
    model = model.cuda()
probe = torch.nn.Linear(2, 1).to(args.eval_device)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x.to(args.device)) - y.to(args.device)) ** 2).mean().backward()
        opt.step()
""", """\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import local_rank

parser = argparse.ArgumentParser()
parser.add_argument("--device", default=local_rank(), help="Pytorch device")
parser.add_argument("--gpu", type=int, default=0)
parser.add_argument("--eval_device", default="cpu")
args = parser.parse_args()
model = torch.nn.Linear(2, 1).to(args.device)
batch = torch.zeros(4, 2, device=args.device)
if args.gpu:
    model = model.cuda()
probe = torch.nn.Linear(2, 1).to(args.eval_device)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x.to(args.device)) - y.to(args.device)) ** 2).mean().backward()
        opt.step()
""", "an_options_integer_default_device_becomes_the_local_rank"),
    pair("""\
device = 0
model = torch.nn.Linear(2, 1).to(0)
""", """\
from ddpify_runtime import local_rank

device = local_rank()
model = torch.nn.Linear(2, 1).to(local_rank())
""", "bare_device_index_zero_becomes_the_local_rank", scaffold=SCRIPT.instead_of("model")),
    # a comment that names GPU 0 goes with it; other comments on edited lines stay; a call keeps its layout
    pair("""\
gpu = 0  # shorthand for cuda:0
model = torch.nn.Linear(2, 1).cuda(0)  # on the first GPU
device = torch.device("cuda:0")  # where the batches go
other = torch.device(
    "cuda",
    0
)
""", """\
from ddpify_runtime import local_rank

gpu = local_rank()
model = torch.nn.Linear(2, 1).cuda()
device = torch.device("cuda")  # where the batches go
other = torch.device(
    "cuda"
)
""", "stale_gpu0_comment_dropped", scaffold=TRAINS.instead_of("model")),
    # the seventeenth sweep (decision 0121): a GPU the single-GPU script picks by number, written in or
    # taken from its options, would be every process's GPU (NCCL refuses two processes on one GPU; with
    # fewer GPUs the index does not exist): this process's GPU, the GPUs picked with CUDA_VISIBLE_DEVICES
    pair("""\
device = 'cuda:3' if torch.cuda.is_available() else 'cpu'
gpu = torch.device("cuda:" + args.device if torch.cuda.is_available() else "cpu")
args.device = f"cuda:{args.gpu}"
model = torch.nn.Linear(2, 1).to("cuda:1")
other = model.to("cuda:{}".format(args.gpu))
""", """\
device = 'cuda' if torch.cuda.is_available() else 'cpu'
gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
args.device = "cuda"
model = torch.nn.Linear(2, 1).to("cuda")
other = model.to("cuda")
""", "a_gpu_the_script_picks_by_number_becomes_this_processes", scaffold=TRAINS.instead_of("model")),
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
""", id="a_device_chosen_by_availability_is_kept"),
    # a GPU picked by number in a string that is no device: a list of names, a message
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
names = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
print("cuda:3 is free", "cuda:" + str(len(names)))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_gpu_number_that_makes_no_device_is_kept"),
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
