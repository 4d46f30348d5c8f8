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
