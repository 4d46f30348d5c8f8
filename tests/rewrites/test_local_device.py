"""local-device: hard-coded GPU 0 becomes this process's GPU."""

from __future__ import annotations

import pytest

from tests.support.snippets import EPOCHS, IMPORTS, LOADER, lines, rewrite_tests, run, script

NAME = "local-device"

def with_device(lines: str, imports: str = "") -> str:
    return IMPORTS + imports + LOADER + lines + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + EPOCHS


PAIRS = [
    (with_device('device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\n'
                 "model = torch.nn.Linear(2, 1).to(device)\n"),
     with_device('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                 "model = torch.nn.Linear(2, 1).to(device)\n")),
    (with_device('gpu = 0 if torch.cuda.is_available() else "cpu"\nmodel = torch.nn.Linear(2, 1).cuda(0)\n'
                 'other = torch.device("cuda", 0)\n'),
     with_device('gpu = local_rank() if torch.cuda.is_available() else "cpu"\nmodel = torch.nn.Linear(2, 1).cuda()\n'
                 'other = torch.device("cuda")\n', imports="from ddpify_runtime import local_rank\n\n")),
    # a comment that names GPU 0 goes with it; other comments on edited lines stay; a call keeps its layout
    (with_device('gpu = 0  # shorthand for cuda:0\nmodel = torch.nn.Linear(2, 1).cuda(0)  # on the first GPU\n'
                 'device = torch.device("cuda:0")  # where the batches go\nother = torch.device(\n    "cuda",\n    0\n)\n'),
     with_device('gpu = local_rank()\nmodel = torch.nn.Linear(2, 1).cuda()\n'
                 'device = torch.device("cuda")  # where the batches go\nother = torch.device(\n    "cuda"\n)\n',
                 imports="from ddpify_runtime import local_rank\n\n")),
]

UNCHANGED = [
    with_device('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                "model = torch.nn.Linear(2, 1).to(device)\n"),
    with_device('model = torch.nn.Linear(2, 1).to("cuda:1")\n'),  # an explicit other GPU is the user's choice
    with_device('print("cuda:0")\nmodel = torch.nn.Linear(2, 1)\n'),  # a message names no device
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_hard_coded_gpu_zero_becomes_the_local_gpu():
    code, _ = run(script(model="""
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
gpu = 0 if torch.cuda.is_available() else "cpu"
other = torch.device("cuda", 0)
model = torch.nn.Linear(2, 1).cuda(0)"""))
    assert '"cuda:0"' not in code and 'torch.device("cuda" if' in code
    assert 'gpu = local_rank() if torch.cuda.is_available() else "cpu"' in code
    assert 'torch.device("cuda")' in code and ".cuda()" in code


def test_bare_device_index_zero_becomes_the_local_rank():
    code, _ = run(script(model="device = 0\nmodel = torch.nn.Linear(2, 1).to(0)"))
    assert "device = local_rank()" in code and ".to(local_rank())" in code
