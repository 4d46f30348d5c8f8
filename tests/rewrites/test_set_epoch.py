"""set-epoch: `set_epoch(loader, epoch)` at the top of each epoch loop, `barrier()` at its end."""

from __future__ import annotations

from tests.support.snippets import (EPOCHS, HEADER, IMPORTS, LOADER, MODEL, STEP_LOOP, converted, lines,
                                    rewrite_tests, run, script, warnings)

NAME = "set-epoch"

PAIRS = [
    (IMPORTS + LOADER + MODEL + EPOCHS,
     IMPORTS + "from ddpify_runtime import barrier, set_epoch\n\n" + LOADER + MODEL
     + "for epoch in range(2):\n    set_epoch(loader, epoch)\n" + EPOCHS.split("\n", 1)[1] + "    barrier()\n"),
]

UNCHANGED = [
    # one pass per run: no epoch to number
    IMPORTS + LOADER + MODEL + "\n".join(line[4:] for line in EPOCHS.splitlines()[1:]) + "\n",
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_set_epoch_names_the_loader_as_the_epoch_loop_sees_it():
    code, _ = run(HEADER + """
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
""")
    assert "while step < 10:\n    set_epoch(train_loader, step)\n" in code
    assert "    step += 1\n    barrier()\n" in code


def test_loader_without_epoch_loop_gets_a_todo():
    """A batch loop in a function this file never calls may run once per epoch of its caller."""
    loop = "def train_epoch():\n    for x, y in train_loader:\n        loss_fn(model(x), y).backward()\n"
    code, changes = run(script(loop=loop))
    assert any("no epoch loop found" in w for w in warnings(changes))


def test_loader_read_in_one_pass_needs_no_set_epoch():
    code, changes = run(script(loop="for x, y in train_loader:\n    loss_fn(model(x), y).backward()\n"))
    assert "DistributedSampler(ds, shuffle=True)" in code
    assert "set_epoch" not in code and not any("epoch" in w for w in warnings(changes))


def test_a_while_true_step_loop_numbers_its_passes_with_its_counter():
    code = lines(converted(STEP_LOOP.format(loop="step = 0\nwhile True:\n    step += 1")))
    assert code[code.index("while True:") + 1] == "set_epoch(train_loader, step)"


def test_loaders_stored_by_key_in_a_global_dict_get_set_epoch_in_the_function_that_trains():
    """A real script's shape (sweep): `dataloaders["train"] = DataLoader(...)` at top level, read
    as `dataloaders[phase]` by a `train_model()` that owns the epoch loop."""
    code, _ = run("""
import torch
from torch.utils.data import DataLoader, TensorDataset

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
""")
    body = lines(code)
    assert body[body.index("for epoch in range(num_epochs):") + 1] == "set_epoch(dataloaders, epoch)"
    assert 'dataloaders["train"] = shard_loader(DataLoader(' in code
    assert 'dataloaders["val"] = DataLoader(' in code, "the evaluation loader stays whole"


def test_an_iterator_made_each_epoch_and_read_with_next_gets_set_epoch_in_that_epoch_loop():
    """A real script's shape (sweep, WGAN): `data_iter = iter(loader)` per epoch, `next()` in
    an inner critic loop."""
    code, changes = run(IMPORTS + LOADER + MODEL + """
for epoch in range(3):
    data_iter = iter(loader)
    for i in range(len(data_iter) // 2):
        for _ in range(2):
            x, y = next(data_iter)
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""")
    body = lines(code)
    assert body[body.index("for epoch in range(3):") + 1] == "set_epoch(loader, epoch)"
    assert not any("epoch" in w for w in warnings(changes))
