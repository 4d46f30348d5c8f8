"""load-map-location: `torch.load` without `map_location` maps to this process's device."""

from __future__ import annotations

import pytest

from tests.support.snippets import TRAINS, pair, rewrite_tests

NAME = "load-map-location"

PAIRS = [
    pair("""\
model.load_state_dict(torch.load("init.pt"))
""", """\
from ddpify_runtime import local_device

model.load_state_dict(torch.load("init.pt", map_location=local_device()))
""", "torch_load_maps_to_the_local_device", scaffold=TRAINS.before("loop")),
    # weights_only is never touched
    pair("""\
state = torch.load("s.pt", weights_only=True)
""", """\
from ddpify_runtime import local_device

state = torch.load("s.pt", weights_only=True, map_location=local_device())
""", "weights_only_is_never_touched", scaffold=TRAINS.before("loop")),
    # decision 0206: a mapping unpacked into the call, its keys not known (a call's result), may
    # hold `map_location`: `map_location=` beside it would be given twice (a TypeError); it is the
    # mapping's default instead, which the mapping's own entry replaces
    pair("""state = torch.load("s.pt", **load_options())
""", """from ddpify_runtime import local_device

state = torch.load("s.pt", **{"map_location": local_device(), **load_options()})
""", "a_mapping_of_unknown_keys_gets_map_location_as_its_default", scaffold=TRAINS.before("loop")),
    # near miss: a mapping known to lack it: appended beside it
    pair("""load_args = dict(weights_only=True)
state = torch.load("s.pt", **load_args)
""", """from ddpify_runtime import local_device

load_args = dict(weights_only=True)
state = torch.load("s.pt", **load_args, map_location=local_device())
""", "a_mapping_known_to_lack_map_location_gets_it_beside", scaffold=TRAINS.before("loop")),
    # decision 0206 (25b's cyclegan): None given loads where the file was saved, GPU 0 on every process
    pair("""\
def load_checkpoint(ckpt_path, map_location=None):
    return torch.load(ckpt_path, map_location=map_location)
state = load_checkpoint("s.pt")
""", """\
from ddpify_runtime import local_device

def load_checkpoint(ckpt_path, map_location=None):
    return torch.load(ckpt_path, map_location=map_location if map_location is not None else local_device())
state = load_checkpoint("s.pt")
""", "a_map_location_that_may_be_none_maps_to_the_local_device_when_it_is", scaffold=TRAINS.before("loop")),
    pair("""\
state = torch.load("s.pt", None)
""", """\
from ddpify_runtime import local_device

state = torch.load("s.pt", local_device())
""", "a_map_location_of_none_maps_to_the_local_device", scaffold=TRAINS.before("loop")),
]

UNCHANGED = [
    # kept as written
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
state = torch.load("s.pt", map_location="cpu")
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="kept_as_written"),
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
state = torch.load("s.pt", map_location="cuda")
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="an_explicit_map_location_to_cuda_is_kept"),
    # decision 0206: given in a mapping the call unpacks: kept, not given twice
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
load_args = {"map_location": "cpu"}
state = torch.load("s.pt", **load_args)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_map_location_in_a_mapping_the_call_unpacks_is_kept"),
    # near miss: a parameter's default that is a device, not None: kept
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def load_checkpoint(ckpt_path, map_location="cpu"):
    return torch.load(ckpt_path, map_location=map_location)
state = load_checkpoint("s.pt")
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_parameter_whose_default_is_a_device_is_kept"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)



