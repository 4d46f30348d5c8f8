"""Loaders in a dict keyed by phase (ddpify.analysis.phases): each loader of the dict is its own
object, and the key whose loop steps the optimizer trains, the other evaluates. Table tests
through the analysis (`analyse`): which loader calls train, and which comprehension-built ones
are sharded by key; near misses (two keys that both train, guards that cannot be read) beside
the positives. The conversion of each shape is checked in fixtures/phase_dict_comprehension
(golden) and fixtures/objects_phases (golden, and launched in tests/e2e/test_e2e_objects.py)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddpify.analysis import phases
from ddpify.analysis.result import analyse
from ddpify.syntax import matchers as mt
from ddpify.syntax.parse import parse_module

HEAD = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
a_set = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
b_set = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
sets = {'train': a_set, 'val': b_set}
model = nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""
DISPLAY = "loaders = {'train': DataLoader(a_set, shuffle=True), 'val': DataLoader(b_set, shuffle=True)}\n"
COMPREHENSION = "loaders = {x: DataLoader(sets[x], shuffle=True) for x in ['train', 'val']}\n"
STORED = "loaders = {}\nloaders['train'] = DataLoader(a_set, shuffle=True)\nloaders['val'] = DataLoader(b_set, shuffle=True)\n"
GUARDED = """\
for epoch in range(3):
    for phase in ['train', 'val']:
        for x, y in loaders[phase]:
            with torch.set_grad_enabled(phase == 'train'):
                loss = model(x).sum()
                if phase == 'train':
                    loss.backward()
                    optimizer.step()
"""


def loop(body: str, keys: str = "['train', 'val']", over: str = "loaders[phase]") -> str:
    inner = textwrap.indent(textwrap.dedent(body), " " * 12)
    return f"for epoch in range(3):\n    for phase in {keys}:\n        for x, y in {over}:\n" \
           f"            loss = model(x).sum()\n{inner}"


STEP = "loss.backward()\noptimizer.step()\n"


def found(source: str):
    analysis = analyse(parse_module(HEAD + source))
    f, loaders = analysis.facts, analysis.loaders
    keyed = {f.code(mt.positional(c, 0).value): v for c, v in loaders.by_key.items()}
    return sorted(f.code(mt.positional(c, 0).value) for c in loaders.training), keyed


@pytest.mark.parametrize("source, training, by_key", [
    # positives: the 'val' loader evaluates, though it shuffles and reaches the training loop
    (DISPLAY + GUARDED, ["a_set"], {}),
    (STORED + GUARDED, ["a_set"], {}),
    (COMPREHENSION + GUARDED, ["sets[x]"], {"sets[x]": ("loaders", ("train",))}),
    (DISPLAY + loop("if phase == 'train':\n" + textwrap.indent(STEP, "    ")), ["a_set"], {}),
    (DISPLAY + loop("if phase != 'val':\n" + textwrap.indent(STEP, "    ")), ["a_set"], {}),
    (DISPLAY + loop("if phase in ('train',):\n" + textwrap.indent(STEP, "    ")), ["a_set"], {}),
    (DISPLAY + loop("if phase == 'val':\n    pass\nelse:\n" + textwrap.indent(STEP, "    ")), ["a_set"], {}),
    (DISPLAY + loop("if not phase == 'val' and True:\n" + textwrap.indent(STEP, "    ")), ["a_set"], {}),
    ("phases = ['train', 'val']\n" + DISPLAY + loop("if phase == 'train':\n" + textwrap.indent(STEP, "    "),
                                                     keys="phases"), ["a_set"], {}),
    ("def step(loss):\n    loss.backward()\n    optimizer.step()\n" + DISPLAY +
     loop("if phase == 'train':\n    step(loss)\n"), ["a_set"], {}),  # the backward in a helper
    (DISPLAY + "for epoch in range(3):\n    for phase in ['train', 'val']:\n        loader = loaders[phase]\n"
     "        for x, y in loader:\n            loss = model(x).sum()\n            if phase == 'train':\n"
     "                loss.backward()\n                optimizer.step()\n", ["a_set"], {}),
    # the phase a parameter: every call passes a literal key, or the variable of a loop over them
    ("def run_epoch(phase):\n    for x, y in loaders[phase]:\n        loss = model(x).sum()\n"
     "        if phase == 'train':\n            loss.backward()\n            optimizer.step()\n" + DISPLAY +
     "for epoch in range(3):\n    run_epoch('train')\n    run_epoch(phase='val')\n", ["a_set"], {}),
    ("def run_epoch(phase):\n    for x, y in loaders[phase]:\n        loss = model(x).sum()\n"
     "        if phase == 'train':\n            loss.backward()\n            optimizer.step()\n" + COMPREHENSION +
     "for epoch in range(3):\n    for phase in ['train', 'val']:\n        run_epoch(phase)\n",
     ["sets[x]"], {"sets[x]": ("loaders", ("train",))}),
    # the comprehension's own shuffle says which key trains: sharded in the call, not by key
    ("loaders = {x: DataLoader(sets[x], shuffle=(x == 'train')) for x in ['train', 'val']}\n" + GUARDED,
     ["sets[x]"], {}),
    # near misses: two keys that both train (two tasks, each stepping), and guards not read
    ("loaders = {'mnist': DataLoader(a_set, shuffle=True), 'fashion': DataLoader(b_set, shuffle=True)}\n" +
     loop(STEP, keys="['mnist', 'fashion']", over="loaders[task]").replace("for phase", "for task"),
     ["a_set", "b_set"], {}),
    ("loaders = {x: DataLoader(sets[x], shuffle=True) for x in ['train', 'val']}\n" + loop(STEP),
     ["sets[x]"], {}),
    ("loaders = {'mnist': DataLoader(a_set, shuffle=True), 'fashion': DataLoader(b_set, shuffle=True)}\n" +
     loop("if phase in ['mnist', 'fashion']:\n" + textwrap.indent(STEP, "    "), keys="['mnist', 'fashion']"),
     ["a_set", "b_set"], {}),
    ("is_train = True\n" + DISPLAY + loop("if is_train:\n" + textwrap.indent(STEP, "    ")),
     ["a_set", "b_set"], {}),  # the guard is not the phase: both may train, both shuffle (as before)
    ("def run_epoch(phase):\n    for x, y in loaders[phase]:\n        loss = model(x).sum()\n"
     "        if phase == 'train':\n            loss.backward()\n            optimizer.step()\n" + DISPLAY +
     "for epoch in range(3):\n    run_epoch('train')\n    run_epoch(args.phase)\n",
     ["a_set", "b_set"], {}),  # one call passes what is not a literal key
    (DISPLAY + "for epoch in range(3):\n    for phase in sets:\n        for x, y in loaders[phase]:\n"
     "            loss = model(x).sum()\n            if phase == 'train':\n                loss.backward()\n"
     "                optimizer.step()\n", ["a_set", "b_set"], {}),  # the keys are not literal here
])
def test_the_key_whose_loop_steps_trains_and_the_other_evaluates(source, training, by_key):
    assert found(source) == (training, by_key)


@pytest.mark.parametrize("test, key, value", [
    ("phase == 'train'", "train", True),
    ("phase == 'train'", "val", False),
    ("'train' == phase", "val", False),
    ("phase != 'train'", "val", True),
    ("phase in ('train', 'finetune')", "finetune", True),
    ("phase not in ['train']", "train", False),
    ("not phase == 'val'", "train", True),
    ("phase == 'train' and x", "val", False),  # one side decides
    ("phase == 'train' and x", "train", None),
    ("phase == 'train' or x", "train", True),
    ("phase == 'train' or x", "val", None),
    ("(phase == 'train')", "train", True),
    ("mode == 'train'", "train", None),  # another name: not read
    ("phase", "train", None),
    ("phase == 'train' == other", "train", None),
])
def test_a_guard_is_read_with_the_key_put_in(test, key, value):
    assert phases.evaluate(cst.parse_expression(test), "phase", key) is value
