"""agree-stop: data-dependent exits of loops that train are agreed across processes (`agree_on`)."""

from __future__ import annotations

import pytest

from tests.support.snippets import ARGS, SCRIPT, TRAINS, kept, only, pair, rewrite_tests, unchanged

NAME = "agree-stop"

# the lines several pairs below share, around theirs
COUNTED_STEPS = ARGS.at_end.enclosing(setup="""\

step = 0
for epoch in range(3):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
""", indent="        ")

PAIRS = [
    # the loss target is agreed; the counter test is the same everywhere and stays
    pair("""\
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if loss.item() < 0.01:
        break
    if epoch == 5:
        break
""", """\
from ddpify_runtime import agree_on

for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if agree_on(loss.item() < 0.01):
        break
    if epoch == 5:
        break
""", "the_loss_target_is_agreed_the_counter", scaffold=TRAINS.instead_of("loop")),
    # (the twentieth sweep's DQNs, decision 0162) the end of an episode of each process's own
    # environment: all leave when any has ended (`agree_any`), and a `while` over the episode goes
    # on while none has (`agree_all`); a test of the model's weights beside it follows the main process
    pair("""\
for episode in range(10):
    state = env.reset()
    while not finished:
        action = int(model(state).argmax())
        state, reward, terminated, truncated = env.step(action)
        finished = terminated or truncated
        opt.zero_grad()
        (-model(state).sum() * reward).backward()
        opt.step()
        if finished:
            break
        if model.weight.norm() > 10:
            break
""", """\
from ddpify_runtime import agree_all, agree_any, agree_on

for episode in range(10):
    state = env.reset()
    while agree_all(not finished):
        action = int(model(state).argmax())
        state, reward, terminated, truncated = env.step(action)
        finished = terminated or truncated
        opt.zero_grad()
        (-model(state).sum() * reward).backward()
        opt.step()
        if agree_any(finished):
            break
        if agree_on(model.weight.norm() > 10):
            break
""", "the_end_of_an_episode_is_agreed_when_any_process_s_environment_ends", scaffold=TRAINS.instead_of("loop")),
    pair("""\
if loss_fn(model(x), y) < 0.1:
    break
""", """\
from ddpify_runtime import agree_on

if agree_on(loss_fn(model(x), y) < 0.1):
    break
""", "early_stop_is_agreed_across_processes", scaffold=SCRIPT.end_of_epoch),
    pair("""\
import argparse
args = argparse.ArgumentParser().parse_args()

step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        step += 1
        if loss.item() < 0.5:
            break
        if args.dry_run or step >= 100 or i == 3:
            break
""", """\
from ddpify_runtime import agree_on

import argparse
args = argparse.ArgumentParser().parse_args()

step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        step += 1
        if agree_on(loss.item() < 0.5):
            break
        if args.dry_run or step >= 100 or i == 3:
            break
""", "a_data_dependent_break_in_a_sharded_batch_loop_is_agreed_but_shared_conditions_are_not", scaffold=SCRIPT.instead_of("loop")),
    pair("""\

it = iter(train_loader)
for step in itertools.count():
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
from ddpify_runtime import agree_on


it = iter(train_loader)
for step in itertools.count():
    try:
        x, y = next(it)
    except StopIteration:
        break
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if agree_on(loss.item() < args.target):
        break
    if step >= args.max_steps:
        break
""", "a_loss_target_in_a_counted_step_loop_is_agreed_but_the_step_limit_and_stop_iteration_are_not", scaffold=ARGS.at_end),
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
from ddpify_runtime import agree_on


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
    if agree_on(loss.item() < args.target):
        break
    if step >= args.max_steps:
        break
""", "a_loss_target_in_a_while_loop_is_agreed_but_the_step_limit_and_stop_iteration_are_not", scaffold=ARGS.at_end),
    pair("""\

for epoch in range(3):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        if torch.isnan(loss):
            continue
        loss.backward()
        optimizer.step()
""", """\
from ddpify_runtime import agree_on


for epoch in range(3):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        if agree_on(torch.isnan(loss)):
            continue
        loss.backward()
        optimizer.step()
""", "a_continue_that_skips_the_backward_is_agreed", scaffold=ARGS.at_end),
    pair("""\

loss = torch.tensor(1.0)
while loss > 0.01:
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
""", """\
from ddpify_runtime import agree_on


loss = torch.tensor(1.0)
while agree_on(loss > 0.01):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
""", "a_data_dependent_while_condition_is_agreed", scaffold=ARGS.at_end),
    pair("""\

def train(model, loader, target):
    for epoch in range(10):
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if loss.item() < target:
                return epoch
        if epoch == args.epochs:
            return epoch
    return 10
train(model, train_loader, args.target)
""", """\
from ddpify_runtime import agree_on


def train(model, loader, target):
    for epoch in range(10):
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if agree_on(loss.item() < target):
                return epoch
        if epoch == args.epochs:
            return epoch
    return 10
train(model, train_loader, args.target)
""", "a_return_from_inside_a_training_loop_is_agreed", scaffold=ARGS.at_end),
    # a counter and a loss: agreed whole
    pair("""\
step += 1
if loss < 1e-3 or step >= args.max_steps:
    break
""", """\
from ddpify_runtime import agree_on

step += 1
if agree_on(loss < 1e-3 or step >= args.max_steps):
    break
""", "a_loss_or_step_limit_is_agreed_whole", scaffold=COUNTED_STEPS),
    # a counter written from data or on some paths only
    pair("""\
if x.sum() > 0:
    step += 1
if step >= 100:
    break
""", """\
from ddpify_runtime import agree_on

if x.sum() > 0:
    step += 1
if agree_on(step >= 100):
    break
""", "a_step_count_that_depends_on_the_batches_is_agreed", scaffold=COUNTED_STEPS),
    pair("""\
step = int(loss.item())
if step >= 100:
    break
""", """\
from ddpify_runtime import agree_on

step = int(loss.item())
if agree_on(step >= 100):
    break
""", "a_step_count_read_from_the_loss_is_agreed", scaffold=COUNTED_STEPS),
    pair("""\

for epoch in range(3):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    if loss.item() > 10:
        print("diverged")
        break
    elif loss.item() < 0.1:
        if args.stop_early:
            break
        return_value = epoch
        break
""", """\
from ddpify_runtime import agree_on


for epoch in range(3):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    if agree_on(loss.item() > 10):
        print("diverged")
        break
    elif agree_on(loss.item() < 0.1):
        if args.stop_early:
            break
        return_value = epoch
        break
""", "every_if_between_the_loop_and_the_exit_is_agreed_once", scaffold=ARGS.at_end),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = 1.0
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if loss.item() < best:
        torch.save(model.state_dict(), 'best.pt')
    if epoch == 1:
        torch.save(model.state_dict(), 'last.pt')
    if x.sum() > 0:
        print(model(x))
    if epoch == 5:
        break
""", """\
from ddpify_runtime import agree_on, shard_model

model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = 1.0
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if agree_on(loss.item() < best):
        torch.save(model.state_dict(), 'best.pt')
    if epoch == 1:
        torch.save(model.state_dict(), 'last.pt')
    if agree_on(x.sum() > 0):
        print(model(x))
    if epoch == 5:
        break
""", "fsdp_branches_around_a_gather_or_a_forward_are_agreed_unless_shared", also={"wrap-model"}, strategy="fsdp", scaffold=TRAINS.instead_of("opt", "loop")),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = 1.0
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if loss.item() < best:
        torch.save(model.state_dict(), 'best.pt')
    if epoch == 1:
        torch.save(model.state_dict(), 'last.pt')
    if x.sum() > 0:
        print(model(x))
    if epoch == 5:
        break
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import device_ids

model = DistributedDataParallel(model, device_ids=device_ids(model))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = 1.0
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if loss.item() < best:
        torch.save(model.state_dict(), 'best.pt')
    if epoch == 1:
        torch.save(model.state_dict(), 'last.pt')
    if x.sum() > 0:
        print(model(x))
    if epoch == 5:
        break
""", "ddp_branches_around_a_save_or_a_forward_are_left_alone", also={"wrap-model"}, scaffold=TRAINS.instead_of("opt", "loop")),
    # a handler that swallows every error of the training (issue 27's fifteenth sweep, soothsayer's main):
    # an error on one process would leave the others waiting in their next collective (decision 0115)
    kept("""\
def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

def main():
    try:
        train()
    except Exception as e:
        print(f"failed: {e}")
    try:
        train()
    except:
        pass
    try:
        train()
    except (ValueError, BaseException):
        print("stopped")

main()
""", "a_handler_that_swallows_every_error_of_the_training_is_named", report=[
        "warning: this handler catches every error of the training in its `try` and goes on: under several "
        "processes an error on one (its crash, the runtime's self-check, a collective's) is swallowed here while "
        "the others wait in their next collective until its timeout: re-raise it (`raise`) when get_world_size() > 1",
    ] * 3, scaffold=TRAINS.instead_of("loop")),
    # near misses: a handler of some errors, one that raises again, a `try` that does not train
    kept("""\
def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

try:
    train()
except KeyboardInterrupt:
    print("interrupted")
try:
    train()
except Exception:
    print("failed")
    raise
try:
    import yaml
except Exception:
    yaml = None
""", "handlers_of_some_errors_or_that_raise_or_around_no_training_are_not_named", report=[],
         scaffold=TRAINS.instead_of("loop")),
]

UNCHANGED = [
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_loop_without_an_exit"),
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if epoch == 5:
        break
""", id="a_break_on_the_epoch_count"),
    unchanged("""\

limit = args.max_steps * 2
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        step = step + 1
        if args.dry_run:
            break
""", "a_dry_run_flag_stays", ARGS.at_end),
    unchanged("""\

limit = args.max_steps * 2
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        step = step + 1
        if i == 3:
            break
""", "a_batch_index_stays", ARGS.at_end),
    unchanged("""\

limit = args.max_steps * 2
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        step = step + 1
        if i + 1 == len(train_loader):
            break
""", "the_last_batch_by_len_of_the_loader_stays", ARGS.at_end),
    unchanged("""\

limit = args.max_steps * 2
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        step = step + 1
        if epoch >= args.epochs - 1 and i > len(train_loader.dataset) // 8:
            break
""", "an_epoch_and_dataset_size_condition_stays", ARGS.at_end),
    unchanged("""\

limit = args.max_steps * 2
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        step = step + 1
        if step >= limit:
            break
""", "a_step_limit_from_the_arguments_stays", ARGS.at_end),
    unchanged("""\

limit = args.max_steps * 2
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        step = step + 1
        if step >= max(limit, 1):
            break
""", "a_step_limit_through_max_stays", ARGS.at_end),
    unchanged("""\

def fit(model, loader, max_steps, epochs=3):
    step = 0
    while step < max_steps:
        for x, y in loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
            step += 1
            if step == max_steps or step > epochs * len(loader):
                return step
fit(model, train_loader, args.max_steps)
""", "a_parameter_every_caller_passes_from_the_arguments_stays", ARGS.at_end),
    # a loop that does not train: leaving it decides nothing about collectives
    unchanged("""\

for epoch in range(3):
    for x, y in train_loader:
        loss_fn(model(x), y).backward()
        optimizer.step()
        for p in model.parameters():
            if p.grad is None:
                break
""", "a_break_out_of_a_loop_over_parameters_stays", ARGS.at_end),
    # a return in a function defined inside the loop leaves that function only
    unchanged("""\

for epoch in range(3):
    def check(v):
        if v.item() > 1:
            return True
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        check(loss)
""", "a_return_from_a_nested_function_stays", ARGS.at_end),
    pytest.param("""\

import argparse
import itertools
import torch
from torch.utils.data import DataLoader, TensorDataset
args = argparse.ArgumentParser().parse_args()
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(get_params(), lr=0.1)
loss_fn = torch.nn.MSELoss()

for x, y in train_loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    if loss.item() < 0.1:
        break
""", id="without_a_wrapped_model_nothing_is_agreed"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


GUARDED_AGENT = """\
import random
import torch

WARM_UP = 2


class Agent:
    def __init__(self):
        self.net = torch.nn.Linear(4, 2)
        self.optimizer = torch.optim.Adam(self.net.parameters())
        self.memory = []
        self.batch_size = 16

    def play(self):
        for _ in range(random.randint(3, 9)):
            self.memory.append(torch.randn(4))

    def train(self):
        GUARD
        x = torch.stack(random.sample(self.memory, self.batch_size))
        loss = self.net(x).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        AFTER


agent = Agent()
for episode in range(8):
    agent.play()
    agent.train()
"""


@pytest.mark.parametrize("guard, after, agreed", [
    ("if len(self.memory) < self.batch_size:\n            return", "", "agree_any(len(self.memory) < self.batch_size)"),
    ("if len(self.memory) >= self.batch_size:\n            pass\n        else:\n            return", "",
     "agree_all(len(self.memory) >= self.batch_size)"),  # its falsehood returns: all go on only while all would
    ("if WARM_UP > 3:\n            return", "", None),  # the same on every process: left as it is
    ("pass", "if len(self.memory) < self.batch_size:\n            return", None),  # after the step: skips no backward
])
def test_an_early_return_before_the_backward_of_a_training_function_is_agreed(guard, after, agreed):
    """The twenty-third sweep's CartPole DQN agent (decision 0175): `train()`, called once per
    episode, begins with `if len(self.replay_memory) < self.batch_size: return`. Each process plays
    its own episodes, of their own lengths, so its memory reaches the batch size at another episode:
    one process returned while the other ran its backward, and the all-reduces paired across
    iterations until the last one waited for a peer that had left (the judge's environment, whose
    episodes all last 20 steps, did not show it; an own fixture whose episode lengths differ crashed
    with "Connection closed by peer"). Such a guard is agreed: all return while any one would (none
    samples a memory too short); near misses: a test of values every process shares, and a return
    after the step."""
    code = only(NAME, GUARDED_AGENT.replace("GUARD", guard).replace("AFTER", after))
    if agreed is None:
        assert "agree_" not in code
    else:
        assert f"if {agreed}:" in code


TESTED_AGENT = """\
import random
import torch


class Environment:
    def __init__(self):
        self.rng = random.Random()

    def reset(self):
        return torch.randn(1, 3)

    def step(self, action):
        return torch.randn(1, 3), float(action.sum()), self.rng.random() < 0.3, {}


class Actor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 8)
        self.norm = NORM
        self.out = torch.nn.Linear(8, 1)

    def forward(self, x):
        return self.out(self.norm(self.fc(x)))


class Agent:
    def __init__(self):
        self.actor = Actor()
        self.optimizer = torch.optim.Adam(self.actor.parameters())

    def act(self, state):
        self.actor.eval()
        ACT
        self.actor.train()
        return action.detach()

    def learn(self, states):
        loss = self.actor(states).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


env = Environment()
agent = Agent()
for epoch in range(3):
    for step in range(4):
        agent.learn(torch.randn(8, 3))
    for episode in range(2):
        state = env.reset()
        while True:
            state, reward, done, _ = env.step(agent.act(state))
            if done:
                break
"""


@pytest.mark.parametrize("norm, act, agreed", [
    ("torch.nn.BatchNorm1d(8)", "action = self.actor(state)", True),
    ("torch.nn.LayerNorm(8)", "action = self.actor(state)", False),  # no buffers: its forward broadcasts nothing
    ("torch.nn.BatchNorm1d(8)", "with torch.no_grad():\n            action = self.actor(state)", False),  # gradients off
])
def test_the_end_of_a_test_episode_is_agreed_where_its_forward_broadcasts_buffers(norm, act, agreed):
    """The twenty-fifth sweep's DDPG (decision 0193) tests its actor on greedy episodes between
    training steps: `act()` runs the wrapped actor in eval mode with gradients on. Where the actor
    holds buffers (BatchNorm), each such DDP forward broadcasts them from rank 0, a collective; the
    test loop trains nothing, so its `if done: break` was left each process's own, and a process
    whose episode ran longer waited in a broadcast the others never made (an own fixture under
    torchrun: rank 0 in `act()`'s forward, rank 1 in the next backward, until the timeout). Such a
    loop's exits are agreed now as a training loop's are; near misses: an actor without buffers
    (LayerNorm), and the forward under `torch.no_grad()`."""
    code = only(NAME, TESTED_AGENT.replace("NORM", norm).replace("ACT", act), also=frozenset({"wrap-model"}))
    assert ("if agree_any(done):" in code) is agreed
    assert code.count("agree_") == (2 if agreed else 0)  # the import and the test
