"""agree-plateau: a ReduceLROnPlateau stepped on a metric each process computes on its own shard
is stepped on the main process's value (from_main_process); under a test that may differ between
processes, a TODO; a shared metric, another scheduler, a step with no metric: left alone."""

from __future__ import annotations

import pytest

from tests.support.snippets import TRAINS, only, pair, rewrite_tests

NAME = "agree-plateau"

# an epoch loop that sums this process's training loss over its shard
SUMMED = TRAINS.instead_of("loop").enclosing(setup="""\
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
for epoch in range(3):
    running = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        running += loss.item()
""", indent="    ")

TODO = ("# TODO(ddpify): this plateau scheduler steps on `running / len(loader)`, which may differ between processes, "
        "under a test that may too: give every process the same value (from_main_process) where all of them run, "
        "or their learning rates part\n")

PAIRS = [
    pair("""\
scheduler.step(running / len(loader))
""", """\
from ddpify_runtime import from_main_process

scheduler.step(from_main_process(lambda: running / len(loader)))
""", "a_plateau_scheduler_steps_on_the_main_process_s_value_of_a_shard_metric", report=[
        "change: the plateau scheduler steps on the main process's `running / len(loader)` (from_main_process): "
        "each process's own would lower its learning rate at another epoch",
    ], scaffold=SUMMED),
    # a trainer's scheduler, kept on self, stepped with the keyword
    pair("""\

class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.sched = torch.optim.lr_scheduler.ReduceLROnPlateau(self.opt)

    def fit(self):
        for epoch in range(2):
            total = 0.0
            for x, y in self.loader:
                self.opt.zero_grad()
                loss = ((self.model(x) - y) ** 2).mean()
                loss.backward()
                self.opt.step()
                total += loss.item()
            self.sched.step(metrics=total)


Trainer(torch.nn.Linear(2, 1), loader).fit()
""", """\
from ddpify_runtime import from_main_process


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.sched = torch.optim.lr_scheduler.ReduceLROnPlateau(self.opt)

    def fit(self):
        for epoch in range(2):
            total = 0.0
            for x, y in self.loader:
                self.opt.zero_grad()
                loss = ((self.model(x) - y) ** 2).mean()
                loss.backward()
                self.opt.step()
                total += loss.item()
            self.sched.step(metrics=from_main_process(lambda: total))


Trainer(torch.nn.Linear(2, 1), loader).fit()
""", "a_trainer_s_plateau_scheduler_stepped_by_keyword", scaffold=TRAINS.instead_of("model", "opt", "loop")),
    # schedulers in a list, stepped in a loop over it (pettod/pytorch-template's trainer, the list from
    # a config class): the loop's item is a plateau scheduler by its object, not by a name
    pair("""\
schedulers = [torch.optim.lr_scheduler.ReduceLROnPlateau(opt)]
for epoch in range(2):
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    for s in schedulers:
        s.step(total)
""", """\
from ddpify_runtime import from_main_process

schedulers = [torch.optim.lr_scheduler.ReduceLROnPlateau(opt)]
for epoch in range(2):
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    for s in schedulers:
        s.step(from_main_process(lambda: total))
""", "plateau_schedulers_of_a_list_stepped_in_a_loop_over_it", scaffold=TRAINS.instead_of("loop")),
    # under a test each process answers alone: a broadcast there could wait forever
    pair("""\
if running < 100.0:
    scheduler.step(running / len(loader))
""", """\
if running < 100.0:
    """ + TODO + """\
    scheduler.step(running / len(loader))
""", "a_step_under_a_test_that_may_differ_between_processes_gets_a_todo", scaffold=SUMMED),
]

UNCHANGED = [
    pytest.param(SUMMED.around("scheduler.step(0.5)\n"), id="a_metric_the_same_everywhere"),
    pytest.param(SUMMED.around("scheduler.step()\n").replace(
        "ReduceLROnPlateau(opt, patience=0)", "StepLR(opt, step_size=1)"), id="another_scheduler_stepped_without_a_metric"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


HANDED = """\
import torch
from torch.utils.data import DataLoader


def configure():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    scheduler = {scheduler}
    return model, optimizer, scheduler


def train(model, optimizer, scheduler, loader):
    for epoch in range(3):
        total = 0.0
        for x in loader:
            optimizer.zero_grad()
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            total += loss.item()
        if scheduler is not None:
            scheduler.step(total / len(loader))


loader = DataLoader(torch.randn(8, 2), batch_size=4, shuffle=True)
model, optimizer, scheduler = configure()
train(model, optimizer, scheduler, loader)
"""


@pytest.mark.parametrize("scheduler, agreed", [
    ("torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=1)", True),
    ("torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer) if torch.cuda.is_available() else None", False),
])
def test_a_step_under_a_test_whether_a_constructed_scheduler_is_none_is_agreed(scheduler, agreed):
    """The sixteenth sweep's foot-ulcer U-Net (tuning): `Train(..., scheduler, ...)` steps `if scheduler
    is not None: scheduler.step(avg_val_loss)`, the scheduler a parameter handed from the tuple a
    configuration function returns: a TODO, the test taken to differ between processes. Every value the
    scheduler may hold is a construction, so the test is the same everywhere and the step is agreed; a
    scheduler that may be None keeps the TODO."""
    out = only(NAME, HANDED.format(scheduler=scheduler), also=frozenset({"wrap-model", "shard-data"}))
    assert ("scheduler.step(from_main_process(lambda: total / len(loader)))" in out) is agreed, out
    assert ("TODO(ddpify): this plateau scheduler" in out) is not agreed, out


KEPT = """\
import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, optimizer, loader, scheduler=None):
        self.model, self.optimizer, self.loader = model, optimizer, loader
        self.scheduler = scheduler

    def fit(self, epochs):
        for epoch in range(epochs):
            total = 0.0
            for x in self.loader:
                self.optimizer.zero_grad()
                loss = self.model(x).sum()
                loss.backward()
                self.optimizer.step()
                total += loss.item()
            if self.scheduler is not None:
                self.scheduler.step(total / len(self.loader))


model = torch.nn.Linear(2, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
Trainer(model, opt, DataLoader(torch.randn(8, 2), batch_size=4, shuffle=True), {passed}).fit(2)
"""


@pytest.mark.parametrize("passed, agreed", [("scheduler=sched", True), ("sched if epochs_known else None", False)])
def test_a_trainers_step_under_a_test_whether_its_scheduler_attribute_is_none_is_agreed(passed, agreed):
    """The same test on a trainer's attribute (`if self.scheduler is not None:`, stored from the
    constructor's `scheduler=None` parameter every call fills with a construction): agreed; where a
    call may pass None, the TODO stays."""
    out = only(NAME, KEPT.format(passed=passed), also=frozenset({"wrap-model", "shard-data"}))
    assert ("self.scheduler.step(from_main_process(lambda: total / len(self.loader)))" in out) is agreed, out


# the eighteenth sweep's char_rnn_lstm (held out, read after its run): the plateau scheduler stepped every
# 5 epochs on the mean of the losses kept since, under `if scheduler:` (a parameter every call fills with
# a construction)
HISTORY = """\
import numpy as np
import torch
from torch.utils.data import DataLoader


def train(model, optimizer, loader, epochs, scheduler=None):
    history = []
    for epoch in range(epochs):
        for x in loader:
            optimizer.zero_grad()
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
        history.append(loss.item())
        if len(history) >= 5:
            avg = np.mean(history)
            if TEST:
                scheduler.step(avg)
            history = []
        READER


model = torch.nn.Linear(2, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
train(model, opt, DataLoader(torch.randn(8, 2), batch_size=4, shuffle=True), 10,
      scheduler=torch.optim.lr_scheduler.ReduceLROnPlateau(opt))
"""


@pytest.mark.parametrize("test, reader, agreed", [
    ("scheduler", "", True),
    ("not scheduler is None", "", True),
    ("scheduler", "log(history)", False),  # the list handed to a call ddpify does not read: its length not known
    ("scheduler and avg > 1", "", False),  # a test of the metric itself
])
def test_a_step_under_a_count_of_kept_losses_and_a_test_of_a_constructed_scheduler_is_agreed(test, reader, agreed):
    """`if len(history) >= 5:` counts what every process appends alike, though `np.mean(history)`
    reads the list (a numeric reader, as `sum` is), and `if scheduler:` tests an object every call
    constructs: the step is agreed (it was a TODO, "under a test that may too"). Near misses: the list
    handed to an unknown call; a test of the metric."""
    code = HISTORY.replace("TEST", test).replace("READER", reader or "pass")
    out = only(NAME, code, also=frozenset({"wrap-model", "shard-data"}))
    assert ("scheduler.step(from_main_process(lambda: avg))" in out) is agreed, out
    assert ("TODO(ddpify): this plateau scheduler" in out) is not agreed, out
