"""accumulate-no-sync: `no_sync()` on the gradient-accumulation micro-steps that provably do not step."""

from __future__ import annotations

import pytest

from tests.support.snippets import ARGS, SCRIPT, TRAINS, pair, rewrite_tests

NAME = "accumulate-no-sync"

# the lines several pairs below share, around theirs
BRANCHED_STEP = ARGS.at_end.enclosing(setup="""\

def sgd_by_hand(net):
    for p in net.parameters():
        p.data.add_(p.grad, alpha=-0.1)
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
""", tail="""\
        optimizer.zero_grad()
        step += 1
""", indent="        ")
ACCUMULATED = ARGS.at_end.enclosing(setup="""\

for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        if (i + 1) % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
""", indent="    ")

PAIRS = [
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = ((model(x) - y) ** 2).mean() / 2
        loss.backward()
        if (i + 1) % 2 == 0:
            opt.step()
            opt.zero_grad()
""", """\
from contextlib import nullcontext
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import device_ids

model = DistributedDataParallel(model, device_ids=device_ids(model))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        sync_step = (i + 1) % 2 == 0
        with nullcontext() if sync_step else model.no_sync():
            loss = ((model(x) - y) ** 2).mean() / 2
            loss.backward()
        if sync_step:
            opt.step()
            opt.zero_grad()
""", "skipped_syncs_between_steps_go_under_no_sync", scaffold=TRAINS.instead_of("opt", "loop")),
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y) / 4
        loss.backward()
        if (i + 1) % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
""", """\
from contextlib import nullcontext
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import device_ids

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        sync_step = (i + 1) % 4 == 0
        with nullcontext() if sync_step else model.no_sync():
            loss = loss_fn(model(x), y) / 4
            loss.backward()
        if sync_step:
            optimizer.step()
            optimizer.zero_grad()
""", "gradient_accumulation_skips_all_reduce_on_micro_steps", scaffold=SCRIPT.instead_of("optimizer", "loop")),
    pair("""\
args = argparse.ArgumentParser().parse_args()
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = torch.nn.MSELoss()

scaler = torch.amp.GradScaler("cuda", enabled=False)
micro_step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        scaler.scale(loss / 4).backward()
        if (micro_step + 1) % 4 == 0 or i + 1 == len(train_loader):
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        micro_step += 1
    scheduler.step()
""", """\
from contextlib import nullcontext
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import device_ids

args = argparse.ArgumentParser().parse_args()
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = torch.nn.MSELoss()

scaler = torch.amp.GradScaler("cuda", enabled=False)
micro_step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        sync_step = (micro_step + 1) % 4 == 0 or i + 1 == len(train_loader)
        with nullcontext() if sync_step else model.no_sync():
            loss = loss_fn(model(x), y)
            scaler.scale(loss / 4).backward()
        if sync_step:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        micro_step += 1
    scheduler.step()
""", "accumulation_that_also_steps_on_the_last_batch_gets_no_sync", scaffold=ARGS.instead_of("setup")),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = ((model(x) - y) ** 2).mean() / 2
        loss.backward()
        if (i + 1) % 2 == 0:
            opt.step()
            opt.zero_grad()
""", """\
from ddpify_runtime import shard_model

model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        sync_step = (i + 1) % 2 == 0
        model.set_requires_gradient_sync(sync_step)
        loss = ((model(x) - y) ** 2).mean() / 2
        loss.backward()
        if sync_step:
            opt.step()
            opt.zero_grad()
""", "fsdp_micro_steps_skip_the_reduce_scatter_with_set_requires_gradient_sync", strategy="fsdp", scaffold=TRAINS.instead_of("opt", "loop")),
]

UNCHANGED = [
    # steps every batch: nothing to skip
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
""", id="steps_every_batch"),
    # the micro-steps left at the end of an epoch step on unsynchronised gradients
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = ((model(x) - y) ** 2).mean() / 2
        loss.backward()
        if (i + 1) % 2 == 0:
            opt.step()
            opt.zero_grad()
    opt.step()
""", id="the_micro_steps_left_at_the_end"),
    pytest.param(SCRIPT.instead_of("loop").around("""\

for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss_fn(model(x), y).backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
"""), id="an_if_that_only_steps_a_scheduler_is_no_accumulation_boundary"),
    # hand-written SGD on the other steps
    pytest.param(BRANCHED_STEP.around("""\
if step >= args.warmup_steps:
    optimizer.step()
else:
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-0.1)
"""), id="no_no_sync_where_warmup_steps_by_hand"),
    pytest.param(BRANCHED_STEP.around("""\
if (i + 1) % 4 == 0:
    optimizer.step()
else:
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-0.1)
"""), id="no_no_sync_where_the_other_path_steps_by_hand"),
    # through a helper
    pytest.param(BRANCHED_STEP.around("""\
if (i + 1) % 4 == 0:
    optimizer.step()
else:
    sgd_by_hand(model)
"""), id="no_no_sync_where_the_other_path_steps_through_a_helper"),
    pytest.param(BRANCHED_STEP.around("""\
if (i + 1) % 4 == 0:
    optimizer.step()
else:
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
"""), id="no_no_sync_where_the_other_path_clips_the_gradients"),
    # reads the gradients
    pytest.param(BRANCHED_STEP.around("""\
if (i + 1) % 4 == 0:
    optimizer.step()
else:
    print(sum(p.grad.norm() for p in model.parameters()))
"""), id="no_no_sync_where_the_other_path_reads_the_gradients"),
    pytest.param(BRANCHED_STEP.around("""\
if (i + 1) % 4 == 0:
    optimizer.step()
else:
    for p in model.parameters():
        p.data -= 0.1 * p.data.sign()
"""), id="no_no_sync_where_the_other_path_updates_weights_by_hand"),
    # not periodic
    pytest.param(BRANCHED_STEP.around("""\
if args.use_optimizer:
    optimizer.step()
else:
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-0.1)
"""), id="no_no_sync_where_the_step_is_not_periodic"),
    # data-dependent
    pytest.param(BRANCHED_STEP.around("""\
if loss.item() < 0.5:
    optimizer.step()
else:
    pass
"""), id="no_no_sync_where_the_step_depends_on_the_data"),
    pytest.param(ACCUMULATED.around("""\
optimizer.step()  # the micro-steps left at the end of an epoch
"""), id="no_no_sync_where_a_step_follows_the_batch_loop"),
    pytest.param(ACCUMULATED.around("""\
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
"""), id="no_no_sync_where_a_gradient_clip_follows_the_batch_loop"),
    pytest.param(ARGS.at_end.around("""\

micro_step = 0
for epoch in range(3):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        micro_step += 1
        if micro_step % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
"""), id="a_counter_changed_between_the_backward_and_the_if_gets_no_no_sync"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)  # with wrap-model, which it requires
