"""set-epoch: `set_epoch(loader, epoch)` at the top of each epoch loop, `end_epoch()` at its end."""

from __future__ import annotations

import re

import pytest

from tests.support.snippets import ARGS, SCRIPT, TRAINS, kept, only, pair, rewrite_tests, rewritten, run, unchanged

NAME = "set-epoch"

PAIRS = [
    pair("""\
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

for epoch in range(2):
    set_epoch(loader, epoch)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "epoch_loop_sets_the_epoch_and_ends_with_end_epoch", scaffold=TRAINS.instead_of("loop")),
    pair("""\

train_loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_one(loader):
    for x, y in loader:
        loss_fn(model(x), y).backward()
step = 0
while step < 10:
    train_one(train_loader)
    step += 1
""", """\
from ddpify_runtime import end_epoch, set_epoch


train_loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_one(loader):
    for x, y in loader:
        loss_fn(model(x), y).backward()
step = 0
while step < 10:
    set_epoch(train_loader, step)
    train_one(train_loader)
    step += 1
    end_epoch()
""", "set_epoch_names_the_loader_as_the_epoch_loop_sees_it", scaffold=SCRIPT.instead_of("train_loader", "model", "optimizer", "loop")),
    # A batch loop in a function this file never calls may run once per epoch of its caller.
    pair("""\
train_loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_epoch():
    for x, y in train_loader:
        loss_fn(model(x), y).backward()
""", """\
# TODO(ddpify): no epoch loop found for this loader: call set_epoch(loader, epoch) at the start of each epoch, or every epoch draws the same order
train_loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_epoch():
    for x, y in train_loader:
        loss_fn(model(x), y).backward()
""", "loader_without_epoch_loop_gets_a_todo", report=[
        "warning: no epoch loop found for this loader: call set_epoch(loader, epoch) at the start of each epoch, or every epoch draws the same order",
    ], scaffold=SCRIPT.instead_of("train_loader", "model", "optimizer", "loop")),
    # ...but not for a loader that draws in order (the sixteenth sweep's click template, before its
    # loader was traced: an unshuffled loader's DistributedSampler(shuffle=False) gives every epoch the
    # same shard whatever its number; the TODO was a false warning)
    kept("""\
train_loader = DataLoader(ds, batch_size=4)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_epoch():
    for x, y in train_loader:
        loss_fn(model(x), y).backward()
""", "an_unshuffled_loader_without_epoch_loop_gets_no_todo", report=[],
         scaffold=SCRIPT.instead_of("train_loader", "model", "optimizer", "loop")),
    pair("""\
train_loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in train_loader:
    loss_fn(model(x), y).backward()
""", """\
from torch.utils.data.distributed import DistributedSampler

train_loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=True))
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in train_loader:
    loss_fn(model(x), y).backward()
""", "loader_read_in_one_pass_needs_no_set_epoch", also={"shard-data"}, report=[
        "change: training loader sharded with DistributedSampler(ds, shuffle=True)",
        "warning: batch_size is now per process: the global batch is batch_size x the number of processes",
    ], scaffold=SCRIPT.instead_of("train_loader", "model", "optimizer", "loop")),
    pair("""\

it = iter(train_loader)
step = 0
while True:
    step += 1
    try:
        x, y = next(it)
    except StopIteration:
        break
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if loss.item() < args.target:
        break
    if step >= args.max_steps:
        break
""", """\
from ddpify_runtime import end_epoch, set_epoch


it = iter(train_loader)
step = 0
while True:
    set_epoch(train_loader, step)
    step += 1
    try:
        x, y = next(it)
    except StopIteration:
        break
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if loss.item() < args.target:
        break
    if step >= args.max_steps:
        break
    end_epoch()
""", "a_while_true_step_loop_numbers_its_passes_with_its_counter", scaffold=ARGS.at_end),
    # A real script's shape (sweep): `dataloaders["train"] = DataLoader(...)` at top level, read
    # as `dataloaders[phase]` by a `train_model()` that owns the epoch loop.
    pair("""\

def train_model(model, optimizer, num_epochs):
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            for x, y in dataloaders[phase]:
                optimizer.zero_grad()
                loss = ((model(x) - y) ** 2).mean()
                if phase == "train":
                    loss.backward()
                    optimizer.step()

dataloaders = {}
dataloaders["train"] = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
dataloaders["val"] = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)
model = torch.nn.Linear(2, 1)
train_model(model, torch.optim.SGD(model.parameters(), lr=0.1), 3)
""", """\
from ddpify_runtime import end_epoch, set_epoch, shard_loader

def train_model(model, optimizer, num_epochs):
    for epoch in range(num_epochs):
        set_epoch(dataloaders, epoch)
        for phase in ["train", "val"]:
            for x, y in dataloaders[phase]:
                optimizer.zero_grad()
                loss = ((model(x) - y) ** 2).mean()
                if phase == "train":
                    loss.backward()
                    optimizer.step()
        end_epoch()

dataloaders = {}
dataloaders["train"] = shard_loader(DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True))
dataloaders["val"] = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)
model = torch.nn.Linear(2, 1)
train_model(model, torch.optim.SGD(model.parameters(), lr=0.1), 3)
""", "loaders_stored_by_key_in_a_global_dict_get_set_epoch_in_the_function_that_trains", also={"shard-data"}, scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # A real script's shape (sweep, WGAN): `data_iter = iter(loader)` per epoch, `next()` in
    # an inner critic loop.
    pair("""\

for epoch in range(3):
    data_iter = iter(loader)
    for i in range(len(data_iter) // 2):
        for _ in range(2):
            x, y = next(data_iter)
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch


for epoch in range(3):
    set_epoch(loader, epoch)
    data_iter = iter(loader)
    for i in range(len(data_iter) // 2):
        for _ in range(2):
            x, y = next(data_iter)
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
    end_epoch()
""", "an_iterator_made_each_epoch_and_read_with_next_gets_set_epoch_in_that_epoch_loop", report=[
        "change: set_epoch(loader, epoch) reshuffles each epoch; end_epoch() ends it",
    ], scaffold=TRAINS.instead_of("loop")),
    # a loader that draws in order (no shuffle, no sampler of its own): set_epoch starts the pass, and the
    # report says it reshuffles nothing (the nineteenth sweep's seq2seq trainers, 19b: "reshuffles each epoch")
    pair("""\
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=False)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=False)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    set_epoch(loader, epoch)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_loader_that_draws_in_order_is_said_to_start_each_epoch_not_to_reshuffle",
         report=["change: set_epoch(loader, epoch) starts each epoch (the loader draws in order, each process its "
                 "part: the same order every epoch); end_epoch() ends it"],
         scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # a loader the loop builds in its header: set_epoch reaches it where it is built (a second
    # `DataLoader(...)` at the top of the epoch would be another loader, and the one iterated
    # would draw the same order every epoch)
    pair("""\
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in DataLoader(ds, batch_size=4, shuffle=True):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in set_epoch(DataLoader(ds, batch_size=4, shuffle=True), epoch):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_loader_built_in_the_for_statement_is_reshuffled_where_it_is_built",
         report=["change: set_epoch(DataLoader(ds, batch_size=4, shuffle=True), epoch) where the loop builds it "
                 "reshuffles each epoch; end_epoch() ends it"], scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # so is the fresh loader a helper returns
    pair("""\
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def batches():
    return DataLoader(ds, batch_size=4, shuffle=True)


for epoch in range(2):
    for x, y in batches():
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def batches():
    return DataLoader(ds, batch_size=4, shuffle=True)


for epoch in range(2):
    for x, y in set_epoch(batches(), epoch):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_loader_a_helper_builds_in_the_for_statement_is_reshuffled_where_it_is_built", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # a comprehension whose items train (decision 0109's probe: `losses = [self.step(b) for b in
    # dm.train_dataloader()]`) passes over the loader once, as a batch loop does: reshuffled by
    # the epoch loop around it, where it is built or where a name holds it
    pair("""\
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def batches():
    return DataLoader(ds, batch_size=4, shuffle=True)


def step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss.item()


for epoch in range(2):
    losses = [step(x, y) for x, y in batches()]
""", """\
from ddpify_runtime import end_epoch, set_epoch

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def batches():
    return DataLoader(ds, batch_size=4, shuffle=True)


def step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss.item()


for epoch in range(2):
    losses = [step(x, y) for x, y in set_epoch(batches(), epoch)]
    end_epoch()
""", "a_loader_a_comprehension_that_trains_builds_is_reshuffled_where_it_is_built",
         scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    pair("""\
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss.item()


for epoch in range(2):
    losses = list(step(x, y) for x, y in loader)
""", """\
from ddpify_runtime import end_epoch, set_epoch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step(x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss.item()


for epoch in range(2):
    set_epoch(loader, epoch)
    losses = list(step(x, y) for x, y in loader)
    end_epoch()
""", "a_named_loader_a_generator_expression_that_trains_reads_is_reshuffled_by_the_epoch_loop",
         scaffold=TRAINS.instead_of("model", "opt", "loop")),
    # a loader built once before the loop that no name holds: a TODO (naming `DataLoader(...)` again
    # at the top of the epoch would reshuffle another loader)
    pair("""\
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = enumerate(DataLoader(ds, batch_size=4, shuffle=True))
for epoch in range(2):
    for i, (x, y) in batches:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = enumerate(DataLoader(ds, batch_size=4, shuffle=True))
# TODO(ddpify): this loop iterates a loader built once, before it (`DataLoader(ds, batch_size=4, shuffle=True)`), that no name holds: bind it to a name and call set_epoch(name, epoch) here, or every epoch draws the same order
for epoch in range(2):
    for i, (x, y) in batches:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_loader_built_before_the_loop_that_no_name_holds_gets_a_todo",
         report=["warning: this loop iterates a loader built once, before it (`DataLoader(ds, batch_size=4, "
                 "shuffle=True)`), that no name holds: bind it to a name and call set_epoch(name, epoch) here, "
                 "or every epoch draws the same order"], scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
]

# A generator that hands out a loader's batches to a training loop (WGAN-GP's
# `inf_train_gen()`, read with `next()`): each pass of its `for` is a pass over the loader, and
# the `while True` around it numbers none: each pass takes the number after the last one.
PAIRS += [
    pair("""\
def endless_batches():
    while True:
        for x, y in loader:
            yield x, y


batches = endless_batches()
for step in range(8):
    x, y = next(batches)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

def endless_batches():
    while True:
        set_epoch(loader)
        for x, y in loader:
            yield x, y
        end_epoch()


batches = endless_batches()
for step in range(8):
    x, y = next(batches)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", "a_generator_that_hands_out_a_loaders_batches_reshuffles_each_of_its_passes",
         report=["change: set_epoch(loader) reshuffles each epoch; end_epoch() ends it"],
         scaffold=TRAINS.instead_of("loop")),
    # PyTorchStepByStep's StepByStep: the batch loop reads a local that holds the training or the
    # validation loader (`data_loader = self.train_loader` or `self.val_loader`); the epoch loop of
    # the method that calls it reshuffles the training one, as it is named there (`set_epoch(data_loader,
    # epoch)` named the batch loop's local in train(), where it is not bound: a NameError at the first epoch)
    pair("""\
class Runner:
    def set_loaders(self, train_loader, val_loader=None):
        self.train_loader = train_loader
        self.val_loader = val_loader

    def _mini_batch(self, validation=False):
        if validation:
            data_loader = self.val_loader
        else:
            data_loader = self.train_loader
        for x, y in data_loader:
            loss = ((model(x) - y) ** 2).mean()
            if not validation:
                opt.zero_grad()
                loss.backward()
                opt.step()

    def train(self, n_epochs):
        for epoch in range(n_epochs):
            self._mini_batch(validation=False)
            with torch.no_grad():
                self._mini_batch(validation=True)


val_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)
runner = Runner()
runner.set_loaders(loader, val_loader)
runner.train(2)
""", """\
from ddpify_runtime import end_epoch, set_epoch

class Runner:
    def set_loaders(self, train_loader, val_loader=None):
        self.train_loader = train_loader
        self.val_loader = val_loader

    def _mini_batch(self, validation=False):
        if validation:
            data_loader = self.val_loader
        else:
            data_loader = self.train_loader
        for x, y in data_loader:
            loss = ((model(x) - y) ** 2).mean()
            if not validation:
                opt.zero_grad()
                loss.backward()
                opt.step()

    def train(self, n_epochs):
        for epoch in range(n_epochs):
            set_epoch(self.train_loader, epoch)
            self._mini_batch(validation=False)
            with torch.no_grad():
                self._mini_batch(validation=True)
            end_epoch()


val_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)
runner = Runner()
runner.set_loaders(loader, val_loader)
runner.train(2)
""", "a_batch_loop_over_a_local_holding_one_of_two_loaders_is_reshuffled_by_the_training_ones_name",
         scaffold=TRAINS.instead_of("loop")),
    # a local alias of the loader in the method that iterates it (`dl = self.train_loader`) is
    # named in the caller's epoch loop by its source; a local its callers cannot see is never named
    # there (`set_epoch(dl, epoch)` in train(): a NameError at the first epoch)
    pair("""\
class Runner:
    def __init__(self, loader):
        self.train_loader = loader

    def _epoch(self):
        dl = self.train_loader
        for x, y in dl:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

    def train(self, n_epochs):
        for epoch in range(n_epochs):
            self._epoch()


Runner(loader).train(2)
""", """\
from ddpify_runtime import end_epoch, set_epoch

class Runner:
    def __init__(self, loader):
        self.train_loader = loader

    def _epoch(self):
        dl = self.train_loader
        for x, y in dl:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

    def train(self, n_epochs):
        for epoch in range(n_epochs):
            set_epoch(self.train_loader, epoch)
            self._epoch()
            end_epoch()


Runner(loader).train(2)
""", "a_local_alias_of_the_loader_is_named_by_its_source_in_the_callers_epoch_loop", scaffold=TRAINS.instead_of("loop")),
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def get_loader():
    return loader


class Runner:
    def _epoch(self):
        dl = get_loader()
        for x, y in dl:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

    def train(self, n_epochs):
        for epoch in range(n_epochs):
            self._epoch()


Runner().train(2)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
# TODO(ddpify): no epoch loop found for this loader: call set_epoch(loader, epoch) at the start of each epoch, or every epoch draws the same order
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def get_loader():
    return loader


class Runner:
    def _epoch(self):
        dl = get_loader()
        for x, y in dl:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

    def train(self, n_epochs):
        for epoch in range(n_epochs):
            self._epoch()


Runner().train(2)
""", "a_local_the_callers_cannot_name_is_not_named_in_their_epoch_loop"),
    # the real shape (pytorch-wgan): a method generator over its parameter, kept on `self`, read
    # with `__next__()` in the critic loop of the method that trains
    pair("""\
class Trainer:
    def train(self, train_loader):
        self.data = self.get_infinite_batches(train_loader)
        for g_iter in range(4):
            for d_iter in range(2):
                x, y = self.data.__next__()
                opt.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                opt.step()

    def get_infinite_batches(self, data_loader):
        while True:
            for i, (x, y) in enumerate(data_loader):
                yield x, y


Trainer().train(loader)
""", """\
from ddpify_runtime import end_epoch, set_epoch

class Trainer:
    def train(self, train_loader):
        self.data = self.get_infinite_batches(train_loader)
        for g_iter in range(4):
            for d_iter in range(2):
                x, y = self.data.__next__()
                opt.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                opt.step()

    def get_infinite_batches(self, data_loader):
        while True:
            set_epoch(data_loader)
            for i, (x, y) in enumerate(data_loader):
                yield x, y
            end_epoch()


Trainer().train(loader)
""", "a_method_generator_read_through_self_reshuffles_the_loader_it_was_given", scaffold=TRAINS.instead_of("loop")),
    # a generator made anew each epoch: the epoch loop around its call numbers the passes (the
    # `for` that iterates the generator runs its call once: it is no epoch loop)
    pair("""\
def batches():
    for x, y in loader:
        yield x, y


for epoch in range(2):
    for x, y in batches():
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

def batches():
    for x, y in loader:
        yield x, y


for epoch in range(2):
    set_epoch(loader, epoch)
    for x, y in batches():
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_generator_made_each_epoch_is_reshuffled_by_the_epoch_loop_around_its_call", scaffold=TRAINS.instead_of("loop")),
    # an iteration-based loop over Python 2's xrange (six) that takes a fresh iterator each step
    # (zalandoresearch's VQ-VAE: `(data, _) = next(iter(training_loader))`): each step is a pass
    pair("""\
for i in xrange(4):
    (x, y) = next(iter(loader))
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

for i in xrange(4):
    set_epoch(loader, i)
    (x, y) = next(iter(loader))
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
    end_epoch()
""", "a_step_loop_over_xrange_taking_a_new_iterator_each_step_numbers_its_passes", report=[
        "change: set_epoch(loader, i) reshuffles each epoch; end_epoch() ends it",
    ], scaffold=TRAINS.instead_of("loop")),  # xrange counts, as range does: no "cannot trace" warning
    # the same generator written with `yield from`
    pair("""\
def endless_batches():
    while True:
        yield from loader


batches = endless_batches()
for step in range(8):
    x, y = next(batches)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

def endless_batches():
    while True:
        set_epoch(loader)
        yield from loader
        end_epoch()


batches = endless_batches()
for step in range(8):
    x, y = next(batches)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", "a_generator_that_yields_from_a_loader_reshuffles_each_of_its_passes", scaffold=TRAINS.instead_of("loop")),
    # the real shape (fourth sweep, odenet): no `for` over the loader; the generator makes the
    # loader's iterator again on StopIteration, read with `__next__()` on both sides. Each round of
    # its `while True` draws one batch: a pass begins where the iterator is made (first, and again
    # in the handler, where the last one ends), not at every round (a barrier and a parameter
    # comparison per batch).
    pair("""\
def inf_generator(iterable):
    iterator = iterable.__iter__()
    while True:
        try:
            yield iterator.__next__()
        except StopIteration:
            iterator = iterable.__iter__()


data_gen = inf_generator(loader)
for itr in range(8):
    x, y = data_gen.__next__()
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

def inf_generator(iterable):
    set_epoch(iterable)
    iterator = iterable.__iter__()
    while True:
        try:
            yield iterator.__next__()
        except StopIteration:
            end_epoch()
            set_epoch(iterable)
            iterator = iterable.__iter__()


data_gen = inf_generator(loader)
for itr in range(8):
    x, y = data_gen.__next__()
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", "a_generator_that_makes_the_loaders_iterator_again_reshuffles_each_new_one",
         report=["change: set_epoch(iterable) before its iterator is first made: the first pass draws its own order",
                 "change: set_epoch(iterable) before its iterator is made again: each new pass draws a new order; "
                 "end_epoch() ends the pass before it, once per pass over the loader"],
         scaffold=TRAINS.instead_of("loop")),
    # (sweep 10b, discogan) a step loop that makes two loaders' iterators again on StopIteration:
    # one pass per pass over the loaders
    pair("""\
other = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
a_it, b_it = iter(loader), iter(other)
for step in range(8):
    try:
        (x, y), (u, _) = next(a_it), next(b_it)
    except StopIteration:
        a_it, b_it = iter(loader), iter(other)
        (x, y), (u, _) = next(a_it), next(b_it)
    opt.zero_grad()
    ((model(x + u) - y) ** 2).mean().backward()
    opt.step()
print("done")
""", """\
from ddpify_runtime import end_epoch, set_epoch

other = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
set_epoch(loader)
set_epoch(other)
a_it, b_it = iter(loader), iter(other)
for step in range(8):
    try:
        (x, y), (u, _) = next(a_it), next(b_it)
    except StopIteration:
        end_epoch()
        set_epoch(loader)
        set_epoch(other)
        a_it, b_it = iter(loader), iter(other)
        (x, y), (u, _) = next(a_it), next(b_it)
    opt.zero_grad()
    ((model(x + u) - y) ** 2).mean().backward()
    opt.step()
print("done")
""", "a_step_loop_that_makes_its_iterators_again_ends_a_pass_once_per_pass_over_the_loaders",
         scaffold=TRAINS.instead_of("loop")),
    # (the twentieth sweep's torch-associative, decision 0162) the iterator is `zip(loader)`, one
    # loader's batches as 1-tuples (`batch, = next(it)`), made again on StopIteration: as `iter(loader)`
    pair("""\
it = zip(loader)
for step in range(8):
    try:
        (x, y), = next(it)
    except StopIteration:
        it = zip(loader)
        (x, y), = next(it)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

set_epoch(loader)
it = zip(loader)
for step in range(8):
    try:
        (x, y), = next(it)
    except StopIteration:
        end_epoch()
        set_epoch(loader)
        it = zip(loader)
        (x, y), = next(it)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", "an_iterator_zipping_one_loader_made_again_on_stopiteration_is_a_pass_over_it",
         scaffold=TRAINS.instead_of("loop")),
    # (sixth sweep, mimicry) a trainer's method with no loop of its own makes the loader's iterator
    # again on StopIteration; the loop that calls it trains through a model's own method. Each new
    # iterator is a pass: set_epoch right before it (no end_epoch: no epoch boundary is known).
    pair("""\
class Critic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x)

    def train_step(self, x, y, opt):
        opt.zero_grad()
        ((self(x) - y) ** 2).mean().backward()
        opt.step()


class Trainer:
    def __init__(self, net, data):
        self.net = net
        self.data = data

    def _fetch(self, it):
        try:
            batch = next(it)
        except StopIteration:
            it = iter(self.data)
            batch = next(it)
        return it, batch

    def train(self):
        it = iter(self.data)
        for step in range(8):
            it, (x, y) = self._fetch(it)
            self.net.train_step(x, y, self.opt)


net = Critic()
trainer = Trainer(net, loader)
trainer.opt = torch.optim.SGD(net.parameters(), lr=0.1)
trainer.train()
""", """\
from ddpify_runtime import set_epoch

class Critic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x)

    def train_step(self, x, y, opt):
        opt.zero_grad()
        ((self(x) - y) ** 2).mean().backward()
        opt.step()


class Trainer:
    def __init__(self, net, data):
        self.net = net
        self.data = data

    def _fetch(self, it):
        try:
            batch = next(it)
        except StopIteration:
            set_epoch(self.data)
            it = iter(self.data)
            batch = next(it)
        return it, batch

    def train(self):
        it = iter(self.data)
        for step in range(8):
            it, (x, y) = self._fetch(it)
            self.net.train_step(x, y, self.opt)


net = Critic()
trainer = Trainer(net, loader)
trainer.opt = torch.optim.SGD(net.parameters(), lr=0.1)
trainer.train()
""", "an_iterator_made_again_in_a_method_without_a_loop_gets_a_new_epoch_first",
         report=["change: set_epoch(self.data) before its iterator is made again: each new pass draws a new order"],
         scaffold=TRAINS.instead_of("model", "opt", "loop")),
    # the same in a function that takes the loader, its iterator kept in an attribute
    pair("""\
class State:
    pass


def draw(state, data):
    try:
        return next(state.it)
    except StopIteration:
        state.it = data.__iter__()
        return next(state.it)


state = State()
state.it = iter(loader)
for step in range(8):
    x, y = draw(state, loader)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", """\
from ddpify_runtime import set_epoch

class State:
    pass


def draw(state, data):
    try:
        return next(state.it)
    except StopIteration:
        set_epoch(data)
        state.it = data.__iter__()
        return next(state.it)


state = State()
state.it = iter(loader)
for step in range(8):
    x, y = draw(state, loader)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", "an_iterator_made_again_in_a_function_gets_a_new_epoch_first", scaffold=TRAINS.instead_of("loop")),
    # an epoch loop that numbers nothing
    pair("""\
for _ in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
from ddpify_runtime import end_epoch, set_epoch

for _ in range(2):
    set_epoch(loader)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "an_epoch_loop_without_a_number_gives_each_pass_the_next", scaffold=TRAINS.instead_of("loop")),
    # a loader made anew at the top of each epoch (by a helper): set_epoch after it is made
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
def make_loader(data):
    return DataLoader(data, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    print("epoch", epoch)
    loader = make_loader(ds)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
def make_loader(data):
    return DataLoader(data, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    print("epoch", epoch)
    loader = make_loader(ds)
    set_epoch(loader, epoch)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_loader_made_anew_in_the_epoch_is_reshuffled_after_it_is_made", also=set()),
    # a loader made per phase in a loop over a name bound to lists of strings (Sentence-VAE's
    # `splits = ['train', 'valid'] + (['test'] if args.test else [])`): that loop is no epoch loop;
    # set_epoch numbers the pass by the epoch, after the phase's loader is made
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
splits = ['train', 'valid'] + (['test'] if torch.cuda.is_available() else [])
datasets = {s: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for s in ['train', 'valid', 'test']}
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for split in splits:
        loader = DataLoader(datasets[split], batch_size=4, shuffle=split == 'train')
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            if split == 'train':
                opt.zero_grad()
                loss.backward()
                opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

splits = ['train', 'valid'] + (['test'] if torch.cuda.is_available() else [])
datasets = {s: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for s in ['train', 'valid', 'test']}
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for split in splits:
        loader = DataLoader(datasets[split], batch_size=4, shuffle=split == 'train')
        set_epoch(loader, epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            if split == 'train':
                opt.zero_grad()
                loss.backward()
                opt.step()
    end_epoch()
""", "a_loader_made_per_phase_over_named_string_lists_is_reshuffled_by_the_epoch", also=set()),
    # the same with the phases written in the loop: set_epoch where the loader is made, not at the
    # top of the epoch (where `loader` is not bound yet)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
datasets = {s: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for s in ['train', 'valid', 'test']}
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for split in ['train', 'valid']:
        loader = DataLoader(datasets[split], batch_size=4, shuffle=split == 'train')
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            if split == 'train':
                opt.zero_grad()
                loss.backward()
                opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

datasets = {s: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for s in ['train', 'valid', 'test']}
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for split in ['train', 'valid']:
        loader = DataLoader(datasets[split], batch_size=4, shuffle=split == 'train')
        set_epoch(loader, epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            if split == 'train':
                opt.zero_grad()
                loss.backward()
                opt.step()
    end_epoch()
""", "a_loader_made_per_phase_over_a_literal_list_is_reshuffled_where_it_is_made", also=set()),
    # the phases through two names, one a module's constant
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
SPLITS = ('train', 'valid')
datasets = {s: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for s in ['train', 'valid', 'test']}
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
splits = SPLITS
for epoch in range(2):
    for split in splits:
        loader = DataLoader(datasets[split], batch_size=4, shuffle=split == 'train')
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            if split == 'train':
                opt.zero_grad()
                loss.backward()
                opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

SPLITS = ('train', 'valid')
datasets = {s: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for s in ['train', 'valid', 'test']}
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
splits = SPLITS
for epoch in range(2):
    for split in splits:
        loader = DataLoader(datasets[split], batch_size=4, shuffle=split == 'train')
        set_epoch(loader, epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            if split == 'train':
                opt.zero_grad()
                loss.backward()
                opt.step()
    end_epoch()
""", "a_loader_made_per_phase_over_phases_named_twice_is_reshuffled_by_the_epoch", also=set()),
    # issue 27 (sweep 30a's diatoms classifier: `for phase in self.folder_names:` inside `for epoch in
    # range(num_epochs):`, the attribute bound to a parameter its callers give a list of strings): the phases
    # held by an object's attribute split the epoch as a name's do; before, the phase loop took the epoch's
    # place (`set_epoch(dataloaders, phase)` at each phase, `end_epoch()` after each)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, phases=None):
        if phases is None:
            self.phases = ['train', 'val']
        else:
            self.phases = phases

    def fit(self, model, opt, loaders, epochs):
        for epoch in range(epochs):
            for phase in self.phases:
                for x, y in loaders[phase]:
                    loss = ((model(x) - y) ** 2).mean()
                    if phase == 'train':
                        opt.zero_grad()
                        loss.backward()
                        opt.step()


loaders = {p: DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
           for p in ['train', 'val']}
model = torch.nn.Linear(2, 1)
Trainer(phases=['train', 'val']).fit(model, torch.optim.SGD(model.parameters(), lr=0.1), loaders, 2)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch


class Trainer:
    def __init__(self, phases=None):
        if phases is None:
            self.phases = ['train', 'val']
        else:
            self.phases = phases

    def fit(self, model, opt, loaders, epochs):
        for epoch in range(epochs):
            set_epoch(loaders, epoch)
            for phase in self.phases:
                for x, y in loaders[phase]:
                    loss = ((model(x) - y) ** 2).mean()
                    if phase == 'train':
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
            end_epoch()


loaders = {p: DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
           for p in ['train', 'val']}
model = torch.nn.Linear(2, 1)
Trainer(phases=['train', 'val']).fit(model, torch.optim.SGD(model.parameters(), lr=0.1), loaders, 2)
""", "phases_held_by_an_attribute_split_the_epoch_as_a_names_do", also=set()),
    # near miss: an attribute that may hold other than strings (a number of stages) is no list of phases:
    # its loop is the loop of the passes
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, stages):
        self.stages = stages

    def fit(self, model, opt, loader, epochs):
        for epoch in range(epochs):
            for stage in self.stages:
                for x, y in loader:
                    opt.zero_grad()
                    ((model(x) - y) ** 2).mean().backward()
                    opt.step()


loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
Trainer([0.1, 0.01]).fit(model, torch.optim.SGD(model.parameters(), lr=0.1), loader, 2)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch


class Trainer:
    def __init__(self, stages):
        self.stages = stages

    def fit(self, model, opt, loader, epochs):
        for epoch in range(epochs):
            for stage in self.stages:
                set_epoch(loader, stage)
                for x, y in loader:
                    opt.zero_grad()
                    ((model(x) - y) ** 2).mean().backward()
                    opt.step()
                end_epoch()


loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
Trainer([0.1, 0.01]).fit(model, torch.optim.SGD(model.parameters(), lr=0.1), loader, 2)
""", "a_loop_over_an_attribute_of_numbers_inside_the_epoch_loop_is_the_loop_of_the_passes", also=set()),
    # near miss: a loop over phases with no epoch loop around it is the loop of the passes (each phase a
    # pass: set_epoch gives a name that is no number the next number)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
modes = ['warmup', 'main']
for mode in modes:
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
modes = ['warmup', 'main']
for mode in modes:
    set_epoch(loader, mode)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_loop_over_phases_with_no_epoch_loop_around_it_numbers_the_passes", also=set()),
    # a batch loop over zip(cycle(labelled), unlabelled): each loader it draws from
    pair("""\
import itertools
import torch
from torch.utils.data import DataLoader, TensorDataset
labelled = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
unlabelled = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for (x, y), (u, _) in zip(itertools.cycle(labelled), unlabelled):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        (model(u) ** 2).mean().backward()
        opt.step()
""", """\
import itertools
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

labelled = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
unlabelled = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    set_epoch(labelled, epoch)
    set_epoch(unlabelled, epoch)
    for (x, y), (u, _) in zip(itertools.cycle(labelled), unlabelled):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        (model(u) ** 2).mean().backward()
        opt.step()
    end_epoch()
""", "a_loop_over_zipped_loaders_reshuffles_each", also=set()),
    # near miss: the epoch reads the loader made before the loop, then makes the next one at its end
    # (`end_epoch()` before it: what the next loader draws when built, every process draws alike)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
def make_loader(data):
    return DataLoader(data, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = make_loader(ds)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    loader = make_loader(ds)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
def make_loader(data):
    return DataLoader(data, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = make_loader(ds)
for epoch in range(2):
    set_epoch(loader, epoch)
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    end_epoch()
    loader = make_loader(ds)
""", "a_loader_the_epoch_reads_before_it_makes_the_next_is_reshuffled_at_the_top", also=set()),
    # a loader kept by an instance of a data set class built through a registry of classes
    # (pytorch-center-loss: `__factory[name](...)`, then `dataset.trainloader`)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
class Digits:
    def __init__(self, batch_size):
        trainloader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=batch_size, shuffle=True)
        self.trainloader = trainloader
        self.testloader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=batch_size)
FACTORY = {"digits": Digits}
def create(name, batch_size):
    return FACTORY[name](batch_size)
def train(model, opt, trainloader):
    for x, y in trainloader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
dataset = create("digits", 4)
trainloader, testloader = dataset.trainloader, dataset.testloader
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    train(model, opt, trainloader)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

class Digits:
    def __init__(self, batch_size):
        trainloader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=batch_size, shuffle=True)
        self.trainloader = trainloader
        self.testloader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=batch_size)
FACTORY = {"digits": Digits}
def create(name, batch_size):
    return FACTORY[name](batch_size)
def train(model, opt, trainloader):
    for x, y in trainloader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
dataset = create("digits", 4)
trainloader, testloader = dataset.trainloader, dataset.testloader
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    set_epoch(trainloader, epoch)
    train(model, opt, trainloader)
    end_epoch()
""", "a_loader_of_an_instance_built_through_a_registry_is_reshuffled", also=set()),
    # a data set object holding its loader, passed to the method that owns the batch loop and
    # read there through an attribute of the parameter: named as the caller's epoch loop passes it
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
class Points:
    def __init__(self, n):
        self.loader = DataLoader(TensorDataset(torch.randn(n, 2), torch.randn(n, 1)), batch_size=4, shuffle=True)
class Trainer:
    def __init__(self, train):
        self.train = train
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def run(self, epochs):
        for epoch in range(epochs):
            self._run_epoch(epoch, self.train)
    def _run_epoch(self, epoch, dataset):
        dl = dataset.loader
        for x, y in dl:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
Trainer(Points(8)).run(2)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

class Points:
    def __init__(self, n):
        self.loader = DataLoader(TensorDataset(torch.randn(n, 2), torch.randn(n, 1)), batch_size=4, shuffle=True)
class Trainer:
    def __init__(self, train):
        self.train = train
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def run(self, epochs):
        for epoch in range(epochs):
            set_epoch(self.train.loader, epoch)
            self._run_epoch(epoch, self.train)
            end_epoch()
    def _run_epoch(self, epoch, dataset):
        dl = dataset.loader
        for x, y in dl:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
Trainer(Points(8)).run(2)
""", "a_loader_read_through_an_attribute_of_a_parameter_is_named_as_the_caller_passes_it", also=set()),
    # a trainer's method passes over `self.loader`; the epoch loop is a function's, over
    # `trainer.run_epoch()`: `self` there is `trainer` (it named `self.loader`: NameError)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
class Trainer:
    def __init__(self):
        self.loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def run_epoch(self):
        for x, y in self.loader:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
def main():
    trainer = Trainer()
    for epoch in range(2):
        trainer.run_epoch()
main()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

class Trainer:
    def __init__(self):
        self.loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def run_epoch(self):
        for x, y in self.loader:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
def main():
    trainer = Trainer()
    for epoch in range(2):
        set_epoch(trainer.loader, epoch)
        trainer.run_epoch()
        end_epoch()
main()
""", "a_loader_a_method_reads_on_self_is_named_by_the_object_the_epoch_loop_calls_it_on", also=set()),
    # a step object whose `__call__` passes over `self.loader` (round 29's held-out kernelkd, decision 0251:
    # `train_step = TrainStep(model, trainloader, ...)`, `train_step(epoch)`): it runs on the object called,
    # `train_step`; before, no caller named one (a TODO, the same order every epoch), and `self.train_step(epoch)`
    # named `self`, whose `loader` is no attribute (`set_epoch(getattr(self, "loader", None), epoch)`: nothing)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
class TrainStep:
    def __init__(self, model, loader, opt):
        self.model, self.loader, self.opt = model, loader, opt
    def __call__(self, epoch):
        for x, y in self.loader:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
def main():
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    train_step = TrainStep(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))
    for epoch in range(2):
        train_step(epoch)
main()
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

class TrainStep:
    def __init__(self, model, loader, opt):
        self.model, self.loader, self.opt = model, loader, opt
    def __call__(self, epoch):
        for x, y in self.loader:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
def main():
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    train_step = TrainStep(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))
    for epoch in range(2):
        set_epoch(train_step.loader, epoch)
        train_step(epoch)
        end_epoch()
main()
""", "a_loader_the_call_method_of_a_step_object_reads_is_named_by_the_object_called", also=set()),
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
class TrainStep:
    def __init__(self, model, loader, opt):
        self.model, self.loader, self.opt = model, loader, opt
    def __call__(self, epoch):
        for x, y in self.loader:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
class Runner:
    def __init__(self, model, loader):
        self.train_step = TrainStep(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))
    def run(self, epochs):
        for epoch in range(epochs):
            self.train_step(epoch)
model = torch.nn.Linear(2, 1)
Runner(model, DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)).run(2)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import end_epoch, set_epoch

class TrainStep:
    def __init__(self, model, loader, opt):
        self.model, self.loader, self.opt = model, loader, opt
    def __call__(self, epoch):
        for x, y in self.loader:
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()
class Runner:
    def __init__(self, model, loader):
        self.train_step = TrainStep(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))
    def run(self, epochs):
        for epoch in range(epochs):
            set_epoch(self.train_step.loader, epoch)
            self.train_step(epoch)
            end_epoch()
model = torch.nn.Linear(2, 1)
Runner(model, DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)).run(2)
""", "a_loader_the_call_method_of_a_step_object_held_in_an_attribute_reads_is_named_through_it", also=set()),
    # the pass's own method sets the bar it iterates (`self.bar = tqdm(self.train_loader)` or the
    # validation one, sharded too as it reaches the loop that trains): the caller's epoch loop names
    # the loaders, not `self.bar` (still the last pass's bar, or unset, at the top of the epoch)
    pair("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm
class Trainer:
    def __init__(self, train_loader, val_loader):
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def _pass(self, training):
        if training:
            self.bar = tqdm(self.train_loader)
        else:
            self.bar = tqdm(self.val_loader)
        for x, y in self.bar:
            loss = ((self.model(x) - y) ** 2).mean()
            if training:
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
    def train(self, epochs):
        for epoch in range(epochs):
            self._pass(True)
data = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
Trainer(DataLoader(data, batch_size=4, shuffle=True), DataLoader(data, batch_size=4)).train(2)
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm
from ddpify_runtime import end_epoch, set_epoch

class Trainer:
    def __init__(self, train_loader, val_loader):
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def _pass(self, training):
        if training:
            self.bar = tqdm(self.train_loader)
        else:
            self.bar = tqdm(self.val_loader)
        for x, y in self.bar:
            loss = ((self.model(x) - y) ** 2).mean()
            if training:
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
    def train(self, epochs):
        for epoch in range(epochs):
            set_epoch(self.train_loader, epoch)
            set_epoch(self.val_loader, epoch)
            self._pass(True)
            end_epoch()
data = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
Trainer(DataLoader(data, batch_size=4, shuffle=True), DataLoader(data, batch_size=4)).train(2)
""", "a_bar_the_passs_method_sets_before_its_loop_is_named_by_its_loader", also=set()),
]

UNCHANGED = [
    # near misses of the generators above: one that only evaluation reads, and one that passes
    # over the loader once (one pass draws one order)
    unchanged("""\
def endless(data):
    while True:
        for x, y in data:
            yield x, y


def evaluate():
    batches = endless(loader)
    with torch.no_grad():
        for _ in range(4):
            x, y = next(batches)
            print(((model(x) - y) ** 2).mean().item())
""", "a_generator_only_evaluation_reads", TRAINS.at_end),
    unchanged("""\
def endless_iter(data):
    it = iter(data)
    while True:
        try:
            yield next(it)
        except StopIteration:
            it = iter(data)


def evaluate():
    batches = endless_iter(loader)
    with torch.no_grad():
        for _ in range(4):
            x, y = batches.__next__()
            print(((model(x) - y) ** 2).mean().item())
""", "a_generator_making_its_iterator_again_only_evaluation_reads", TRAINS.at_end),
    # an evaluation loader made again on StopIteration, beside the training: not reshuffled
    unchanged("""\
val_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)


def fetch_val(it):
    try:
        return it, next(it)
    except StopIteration:
        it = iter(val_loader)
        return it, next(it)


vit = iter(val_loader)
with torch.no_grad():
    for _ in range(4):
        vit, (x, y) = fetch_val(vit)
        print(((model(x) - y) ** 2).mean().item())
""", "an_evaluation_loaders_iterator_made_again", TRAINS.at_end),
    unchanged("""\
def batches():
    for x, y in loader:
        yield x, y


for x, y in batches():
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", "a_generator_that_passes_over_the_loader_once", TRAINS.at_end),
    # one pass per run: no epoch to number
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", id="one_pass_per_run"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_a_todo_quoting_a_loader_spread_over_lines_is_one_comment_line():
    """DDPM's train_cifar.py: `cycle(DataLoader(\\n  train_dataset,\\n  ...))`, a loader no name holds,
    quoted in the TODO above the loop; a comment with the call's newlines in it made LibCST refuse the
    module (an internal error, nothing converted). The quote is joined with single spaces."""
    code = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = enumerate(DataLoader(
    ds,
    batch_size=4,
    shuffle=True,
))
for epoch in range(2):
    for i, (x, y) in batches:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
"""
    out = only(NAME, code)
    assert "# TODO(ddpify): this loop iterates a loader built once, before it (`DataLoader( ds, batch_size=4, " \
           "shuffle=True, )`), that no name holds" in out


CYCLED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def cycle(dl):
    while True:
        for data in dl:
            yield data


model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = cycle(DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True))
for iteration in range(6):
    x, y = next(batches)
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
"""


def test_a_loop_drawing_from_a_generator_that_passes_over_the_loader_is_no_epoch_loop():
    """DDPM's `train_loader = cycle(DataLoader(...))` drawn by `next()` in `for iteration in
    range(...)`: each round of the generator's `for data in dl` is an epoch (set_epoch there), and
    the drawing loop had an `end_epoch()` per iteration (a barrier and the random states broadcast at
    every step) and a TODO to call set_epoch per iteration. The generator's loop alone is the epoch
    loop; a generator that draws `next()` itself stays a drawing loop's business (tests above)."""
    out = only(NAME, CYCLED)
    assert "        set_epoch(dl)\n        for data in dl:\n            yield data\n        end_epoch()\n" in out
    assert "TODO" not in out and out.count("end_epoch()") == 1


# a loader wrapper keeping a generator over its loader (`cycle`) that its `__next__` draws from; the trainer draws
# from the wrapper with `next()` (round 30's held-out integer flows' `CommonDataLoader`, decision 0261)
WRAPPED_CYCLE = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def cycle(dl):
    while True:
        for data in dl:
            yield data


class Endless:
    def __init__(self, n):
        self.loader = DataLoader(TensorDataset(torch.randn(n, 2), torch.randn(n, 1)), batch_size=4, shuffle=True)
        self.iter = cycle(self.loader)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.iter)


model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = Endless(8)


def train(steps):
    for iteration in range(steps):
        x, y = next(batches)
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


train(6)
"""


def test_a_generator_a_loader_wrapper_draws_from_where_training_draws_from_the_wrapper_passes_the_epochs():
    """Round 30's held-out integer flows (decision 0261): `CommonDataLoader.__init__` keeps
    `self.iter = cycle(self.loader)`, its `__next__` returns `next(self.iter)`, the trainer's step
    loop draws `next(self.trainloader)`. The generator was consumed by no function that trains (its
    call is in `__init__`), so each pass drew the first epoch's order (self-check: same-order). Each
    round of the generator's loop is an epoch, as for a generator the training calls. Near miss: the
    same wrapper drawn only by a function that does not train (an evaluation) keeps its generator bare."""
    out = only(NAME, WRAPPED_CYCLE)
    assert "        set_epoch(dl)\n        for data in dl:\n            yield data\n        end_epoch()\n" in out
    evaluated = WRAPPED_CYCLE.replace("        opt.zero_grad()\n        ((model(x) - y) ** 2).mean().backward()\n"
                                      "        opt.step()\n", "        print(model(x).mean().item())\n")
    assert "backward" not in evaluated
    assert "set_epoch(dl)" not in only(NAME, evaluated)


# a trainer registry: the base class's `train()` runs the epochs and calls `self.train_epoch(epoch)`,
# whose override in one subclass passes over loaders only that subclass sets, through the base's
# generator over a progress bar (`self.progress(zip(...))`); the other subclass has none of them
REGISTRY = """\
import torch
from rich.progress import Progress
from torch.utils.data import DataLoader, TensorDataset


def data():
    return TensorDataset(torch.randn(8, 2), torch.randn(8, 1))


class Base:
    def __init__(self):
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.prepare()

    def prepare(self):
        pass

    def progress(self, dataloader):
        bar = Progress()
        with bar:
            yield from bar.track(dataloader, total=4)

    def train(self):
        for epoch in range(2):
            self.train_epoch(epoch)


class TwoDomains(Base):
    def prepare(self):
        self.source = DataLoader(data(), batch_size=4, shuffle=True)
        self.target = DataLoader(data(), batch_size=4, shuffle=True)

    def train_epoch(self, epoch):
        for (x, y), (u, _) in self.progress(zip(self.source, self.target)):
            self.opt.zero_grad()
            ((self.model(x) - y) ** 2).mean().backward()
            self.opt.step()


class Plain(Base):
    def train_epoch(self, epoch):
        pass


TwoDomains().train()
Plain().train()
"""


def test_a_loader_only_a_subclass_sets_is_named_by_getattr_in_the_base_classs_epoch_loop():
    """The loaders reach the loop through the base's generator over `bar.track(...)` and a `zip`: both
    get `set_epoch` (they were neither sharded nor reshuffled, silently); in the base's `train()`, which
    `Plain` runs too, they are `getattr(self, "source", None)` (`self.source` raised AttributeError there)."""
    out = only(NAME, REGISTRY)
    assert '            set_epoch(getattr(self, "source", None), epoch)\n' \
           '            set_epoch(getattr(self, "target", None), epoch)\n' \
           '            self.train_epoch(epoch)\n            end_epoch()\n' in out
    sharded = only("shard-data", REGISTRY)
    assert "self.source = shard_loader(self.source)" in sharded and "self.target = shard_loader(self.target)" in sharded


# the eighteenth sweep's protonet (part C's tuning half): a sampler that draws its episodes when it is
# built, and the loader over it built again at the end of each epoch, after the validation
REBUILT_SAMPLER = """\
import torch
from torch.utils.data import DataLoader, Sampler


class Episodes(Sampler):
    def __init__(self, n):
        self.order = torch.randperm(n).tolist()

    def __iter__(self):
        return iter(self.order)

    def __len__(self):
        return len(self.order)


data = torch.randn(16, 2)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sampler = Episodes(16)
loader = DataLoader(data, batch_size=4, sampler=sampler)
for epoch in range(2):
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    print(model(data).mean().item())
    sampler = Episodes(16)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
TAIL"""


@pytest.mark.parametrize("tail, before_rebuild", [("", True), ("    print(len(loader))\n", False)])
def test_end_epoch_comes_before_the_statements_that_build_the_next_epochs_loader(tail, before_rebuild):
    """`end_epoch()` went at the end of the epoch's body, after `sampler = Episodes(16)` drew the
    next epoch's order: processes other than the main one draw from their own random streams until
    `end_epoch()`, so from the second epoch on each dealt its batches from another order and the
    shards overlapped (nothing failed). It goes before the sampler now, after the validation; near
    miss: a loader read again after it is built (the statements are no build for the next epoch)."""
    out = only(NAME, REBUILT_SAMPLER.replace("TAIL", tail))
    rebuilt = "    end_epoch()\n    sampler = Episodes(16)\n    loader = DataLoader(data, batch_size=4, sampler=sampler)\n"
    assert (rebuilt in out) is before_rebuild, out
    assert out.count("end_epoch()\n") == 1


ITERATOR_PER_CALL = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2, shuffle=True)


def train_epoch(loader):
    it = iter(loader)
    for _ in range(len(loader)):
        x = next(it)
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


for epoch in range(3):
    train_epoch(loader)
"""

ITERATOR_HANDED_ON = """\
import torch
from torch.utils.data import DataLoader


class Pair:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt

    def train(self, loader_a, loader_b, epochs):
        for epoch in range(epochs):
            self._epoch(loader_a, loader_b)

    def _epoch(self, loader_a, loader_b):
        it_a, it_b = iter(loader_a), iter(loader_b)
        for _ in range(min(len(it_a), len(it_b))):
            self._step(it_a, it_b)

    def _step(self, it_a, it_b):
        xa, xb = next(it_a), next(it_b)
        self.opt.zero_grad()
        (self.model(xa).sum() + self.model(xb).sum()).backward()
        self.opt.step()


model = torch.nn.Linear(2, 1)
a = DataLoader(list(range(8)), batch_size=2, shuffle=True)
b = DataLoader(list(range(8)), batch_size=2, shuffle=True)
Pair(model, torch.optim.SGD(model.parameters(), lr=0.1)).train(a, b, 3)
"""


def test_an_iterator_made_once_per_call_is_a_pass_reshuffled_in_the_epoch_loop_around_the_calls():
    """`it = iter(loader)` above the step loop of a function an epoch loop calls: each call is one
    pass, so `set_epoch(loader, epoch)` goes in the epoch loop; it went in the step loop, with an
    `end_epoch()` (a barrier and a comparison of the parameters) after every step."""
    out = only(NAME, ITERATOR_PER_CALL)
    assert "for epoch in range(3):\n    set_epoch(loader, epoch)\n    train_epoch(loader)\n    end_epoch()\n" in out
    assert out.count("set_epoch(") == 1 and out.count("end_epoch()") == 1


def test_iterators_drawn_by_a_helper_they_are_handed_to_are_passes_reshuffled_in_the_epoch_loop():
    """`next(it_a)` in a method with no loop (`_step(self, it_a, it_b)`), its iterators made in the
    caller's `_epoch()` (axeloh/gan-pytorch's CycleGAN): both loaders are reshuffled where
    `train()` loops over the epochs; they got a TODO, "no epoch loop found", and drew one order
    every epoch."""
    out = only(NAME, ITERATOR_HANDED_ON)
    assert ("        for epoch in range(epochs):\n            set_epoch(loader_a, epoch)\n"
            "            set_epoch(loader_b, epoch)\n            self._epoch(loader_a, loader_b)\n"
            "            end_epoch()\n") in out
    assert "TODO" not in out


SELF_STEPPING_STEPS = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Linear(2, 2)
        self.opt = torch.optim.SGD(self.enc.parameters(), lr=0.1)

    def forward(self, x):
        loss = (self.enc(x) ** 2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss


ds = TensorDataset(torch.randn(8, 2), torch.zeros(8))
loader = DataLoader(ds, batch_size=4, shuffle=True)
net = Net()
it = iter(loader)
for step in range(6):
    try:
        x, y = next(it)
    except StopIteration:
        it = iter(loader)
        x, y = next(it)
    {call}
"""


@pytest.mark.parametrize("call, numbered", [("net(x)", True), ("print(x.sum())", False)])
def test_a_step_loop_that_trains_through_a_modules_self_stepping_forward_reshuffles_each_new_iterator(call, numbered):
    """The twenty-second sweep's IntroVAE (decision 0166): its step loop trains through `vae(x)`, a
    module whose forward steps its own optimizers, and makes the loader's iterator again on
    StopIteration; no training was seen in that loop (`net(x)` runs `Net.forward`, not a method
    called by name), so no set_epoch came before the iterators: every pass drew one order (the
    judge's reshuffled, silently). Near miss: a loop that only reads the batches is no training."""
    code = rewritten(NAME, SELF_STEPPING_STEPS.format(call=call)).code
    assert ("set_epoch(loader)\nit = iter(loader)" in code) is numbered
    assert ("        set_epoch(loader)\n        it = iter(loader)" in code) is numbered


def test_a_batch_loop_whose_backward_is_two_calls_down_is_reshuffled_after_a_deeper_question_was_asked():
    """jmisilo/handwritten-digit-recognition-ml (the twenty-sixth sweep's tuning half, decision
    0202): the script drains `trainer.train()`, a generator whose epoch loop calls
    `training_epoch()`, whose batch loop calls `training_step()`, whose backward and step are in
    `__backprop()`. Asking whether the script's loop trains reached `training_step` with no call left
    to follow and kept "no" for it; the batch loop, asked next, read that "no", so no epoch loop was
    found ("no epoch loop found for this loader") and every epoch drew one order. A "no" found with
    fewer calls left answers no question with more. Near miss: the evaluation loop over the other
    loader, under no_grad, trains nothing and gets no set_epoch."""
    out = only(NAME, """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, data, optimizer, epochs):
        self.model = model
        self.optimizer = optimizer
        self.epochs = epochs
        self.train_loader = DataLoader(data, batch_size=4, shuffle=True)
        self.val_loader = DataLoader(data, batch_size=4)

    def training_epoch(self):
        for x, y in self.train_loader:
            self.training_step(x, y)

    def training_step(self, x, y):
        self.optimizer.zero_grad()
        self.__backprop(torch.nn.functional.mse_loss(self.model(x), y))

    def __backprop(self, loss):
        loss.backward()
        self.optimizer.step()

    def validation_epoch(self):
        with torch.no_grad():
            return sum(float(self.model(x).sum()) for x, _ in self.val_loader)

    def train(self):
        for epoch in range(self.epochs):
            self.training_epoch()
            yield self.validation_epoch()


model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
trainer = Trainer(model, TensorDataset(torch.randn(16, 3), torch.randn(16, 1)), opt, 2)
for epoch, loss in enumerate(trainer.train()):
    print(epoch, loss)
""", also=frozenset({"shard-data"}))
    assert "        for epoch in range(self.epochs):\n            set_epoch(self.train_loader, epoch)\n" in out
    assert "set_epoch(self.val_loader" not in out and "TODO" not in out


def test_a_batch_loop_over_a_bar_given_its_loader_by_keyword_is_found_in_the_epoch_loop_of_its_caller():
    """`tqdm(iterable=train_loader, leave=False)` (29c's DDPM trainer, the loader handed down by
    keyword from `main` to `train_model` to `train_epoch`): the loop trains on `train_loader`, and the
    caller's epoch loop, itself over a bar given `range(...)` by keyword, sets its epoch; before,
    only a positional iterable was followed: no epoch loop was found, every epoch drew one order."""
    out = only(NAME, """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm
def train_epoch(model, train_loader, optimizer):
    bar = tqdm(iterable=train_loader, position=1, leave=False)
    for i, (x, y) in enumerate(bar):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
def train_model(model, optimizer, train_loader, n_epochs):
    for epoch in tqdm(iterable=range(n_epochs), desc="epochs"):
        train_epoch(model=model, train_loader=train_loader, optimizer=optimizer)
model = torch.nn.Linear(3, 1)
loader = DataLoader(TensorDataset(torch.randn(16, 3), torch.randn(16, 1)), batch_size=4, shuffle=True)
train_model(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), train_loader=loader, n_epochs=2)
""", also=frozenset({"shard-data"}))
    assert '    for epoch in tqdm(iterable=range(n_epochs), desc="epochs"):\n        set_epoch(train_loader, epoch)\n' in out
    assert "loader = shard_loader(loader)\n" in out and "TODO" not in out


NESTED_LOADERS = """\
import torch
from torch.utils.data import DataLoader, RandomSampler, TensorDataset


def create_loaders(ds):
    labeled = DataLoader(ds, batch_size=4, sampler=RandomSampler(ds))
    unlabeled = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds))
    valid = DataLoader(ds, batch_size=4, shuffle=True)
    test = DataLoader(ds, batch_size=4)
    return {returned}


def train_epoch(model, opt, first, second):
    for (x, y), (u, _) in zip(first, second):
        loss = ((model(x) - y) ** 2).mean() + model(u).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def train(model, first, second, valid, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        train_epoch(model, opt, first, second)
        with torch.no_grad():
            for x, y in valid:
                model(x)


ds = TensorDataset(torch.randn(32, 3), torch.randn(32, 1))
{unpacked}
train(torch.nn.Linear(3, 1), {first}, {second}, valid, 3)
"""


@pytest.mark.parametrize("returned, unpacked, first, second, trained", [
    ("(labeled, unlabeled), valid, test", "(a, b), valid, test = create_loaders(ds)", "a", "b", ("labeled", "unlabeled")),
    ("(labeled, unlabeled), valid, test", "[a, b], *rest = create_loaders(ds)\nvalid = rest[0]", "a", "b", ("labeled", "unlabeled")),
    ("valid, test, test, labeled, unlabeled", "valid, *_, a, b = create_loaders(ds)", "a", "b", ("labeled", "unlabeled")),
    # near misses: the inner pair is the one not trained; a starred part holds the training pair
    ("(valid, test), (labeled, unlabeled)", "(valid, t), (a, b) = create_loaders(ds)", "a", "b", ("labeled", "unlabeled")),
    ("labeled, unlabeled, test, valid", "a, b, *rest, valid = create_loaders(ds)", "a", "b", ("labeled", "unlabeled")),
], ids=["nested", "nested_list_then_starred", "after_a_star", "trained_pair_second", "star_between"])
def test_loaders_unpacked_from_a_nested_or_starred_tuple_are_reshuffled_where_the_epoch_loop_trains_them(
        returned, unpacked, first, second, trained):
    """Round 28's FixMatch: `(train_loader_labeled, train_loader_unlabeled), validation_loader,
    test_loader = create_loaders(...)`, both handed to `train()`, whose epoch loop calls
    `train_epoch(...)` over `zip(labeled, unlabeled)`. The unpacking was followed one level deep:
    the inner pair held nothing known ("no epoch loop found" at each loader, one order every epoch,
    or no sampler at all), and a name after a starred part took the element at its own place from
    the start (`valid, *_, a, b`: the test loader, sharded in order, the training pair left whole).
    Now each part takes the element at its path, a place counted from the end after a star.
    Near misses: where the inner pair is the one left untrained, or the star sits between, the
    loaders that train are the ones sharded and reshuffled, and the others are left whole."""
    code, _ = run(NESTED_LOADERS.format(returned=returned, unpacked=unpacked, first=first, second=second))
    assert "        set_epoch(first, epoch)\n        set_epoch(second, epoch)\n        train_epoch(" in code, code
    assert "TODO" not in code, code
    for name in trained:
        assert re.search(rf"    {name} = DataLoader\(ds, batch_size=\d, sampler=DistributedSampler\(ds\)\)\n", code), code
    assert code.count("DistributedSampler(ds") == 2, code
    assert "    valid = DataLoader(ds, batch_size=4, shuffle=True)\n" in code, code


WRAPPED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class DeviceLoader:
    def __init__(self, dl, device):
        self.dl = dl
        self.device = device

    def __iter__(self):
        {iterate}


class Data:
    def __init__(self):
        dl = DataLoader(TensorDataset(torch.randn(32, 3)), batch_size=4, shuffle=True)
        self._train = DeviceLoader(dl, "cpu")

    @property
    def train_loader(self):
        return self._train


class Trainer:
    def __init__(self, model, data):
        self.model = model
        self.train_loader = data.train_loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self):
        for epoch in range(2):
            for (x,) in self.train_loader:
                self.opt.zero_grad()
                self.model(x).sum().backward()
                self.opt.step()


Trainer(torch.nn.Linear(3, 1), Data()).train()
"""


@pytest.mark.parametrize("iterate, named", [
    ("for b in self.dl:\n            yield [x.to(self.device) for x in b]", True),  # one pass per iteration
    ("it = iter(self.dl)\n        while True:\n            yield next(it)", False),  # drawn by next(): no pass
])
def test_a_programs_wrapper_whose_iter_passes_over_its_loader_is_reshuffled_through_the_property(iterate, named):
    """rensortino/pytorch-template (decision 0253): a data module keeps `DeviceLoader(DataLoader(...))`
    behind a property the trainer reads; the wrapper's `__iter__` passes once over the loader, so each
    epoch's loop over the wrapper is a pass: `set_epoch(self.train_loader, epoch)`, which the runtime
    follows to the loader the wrapper keeps. A wrapper that draws with `next()` is no pass of it."""
    out = only(NAME, WRAPPED.format(iterate=iterate))
    assert ("set_epoch(self.train_loader, epoch)" in out) is named


FETCHER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class InputFetcher:
    def __init__(self, loader):
        self.loader = loader

    def _fetch(self):
        try:
            x, y = next(self.iter)
        except (AttributeError, StopIteration):
            self.iter = iter(self.loader)
            x, y = next(self.iter)
        return x, y

    def __next__(self):
        return self._fetch()


def train(model, loader, iters):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fetcher = InputFetcher(loader)
    for i in range(iters):
        x, y = next(fetcher)
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()


loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
train(torch.nn.Linear(4, 1), loader, 20)
"""


def test_a_fetcher_whose_next_makes_its_loaders_iterator_again_reshuffles_each_new_pass():
    """StarGAN v2's and DCWP's `InputFetcher` (round 31): its `__next__` calls `_fetch`, which makes
    the loader's iterator again in `except (AttributeError, StopIteration):`, and the step loop draws
    with `next(fetcher)`, no epoch loop: the TODO said to call set_epoch. The builtin `next` of an
    instance runs its class's `__next__`: a training draws through the handler, which gets
    `set_epoch(self.loader)` (each restart the next epoch number). Near miss: a fetcher only an
    evaluation draws from (no optimizer steps in its loop): no set_epoch, no TODO."""
    out = only(NAME, FETCHER)
    assert "        except (AttributeError, StopIteration):\n            set_epoch(self.loader)\n" \
           "            self.iter = iter(self.loader)\n" in out
    assert "TODO" not in out
    near = only(NAME, FETCHER.replace("        optimizer.zero_grad()\n        ((model(x) - y) ** 2).mean().backward()\n"
                                      "        optimizer.step()\n", "        print(model(x))\n"))
    assert "set_epoch(" not in near


HANDLER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class DataHandler:
    def __init__(self, size):
        self.train_data_loader = DataLoader(TensorDataset(torch.randn(size, 4)), batch_size=4, shuffle=True)

    def get_train_loader(self):
        return self.train_data_loader


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.data_handler = DataHandler(32)

    def train(self):
        for epoch in range(2):
            self._train_epoch()

    def _train_epoch(self):
        for (x,) in self.data_handler.get_train_loader():
            self.optimizer.zero_grad()
            self.model(x).sum().backward()
            self.optimizer.step()


Trainer(torch.nn.Linear(4, 1)).train()
"""


def test_a_loader_read_through_a_getter_that_returns_an_attribute_is_named_by_the_getter_in_the_epoch_loop():
    """Round 31's modular framework (31a, decision 0273): the batch loop iterates
    `self.data_handler.get_train_loader()`, whose body is `return self.train_data_loader`: called again
    it hands back the same loader, so the epoch loop names it so (before: a TODO, "a loader built once,
    before it, that no name holds"). Near miss: a method that builds a new loader at each call is no
    getter: naming it would build another, the TODO stays."""
    out = only(NAME, HANDLER)
    assert "        for epoch in range(2):\n            set_epoch(self.data_handler.get_train_loader(), epoch)\n" in out
    assert "TODO" not in out
    near = only(NAME, HANDLER.replace("        return self.train_data_loader\n",
                                      "        return DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4, shuffle=True)\n"))
    assert "set_epoch(self.data_handler.get_train_loader()" not in near
