"""shard-metrics: a TODO where a sum over one process's shard is divided by the full dataset size."""

from __future__ import annotations

import pytest

from tests.support.snippets import IMPORTS, LOADER, MODEL, rewrite_tests, run, script, warnings

NAME = "shard-metrics"

SUM = """\
for epoch in range(2):
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
"""
TODO = ("    # TODO(ddpify): `total` sums this process's shard only, but is divided by the full dataset size: "
        "all_reduce it first (torch.distributed.all_reduce), or it reads about 1/world_size of the true value\n")

PAIRS = [
    (IMPORTS + LOADER + MODEL + SUM + "    avg = total / len(loader.dataset)\n",
     IMPORTS + LOADER + MODEL + SUM + TODO + "    avg = total / len(loader.dataset)\n"),
    # the usual "average loss" line (once flagged only when assigned)
    (IMPORTS + LOADER + MODEL + SUM + "    print(total / len(loader.dataset))\n",
     IMPORTS + LOADER + MODEL + SUM + TODO + "    print(total / len(loader.dataset))\n"),
]

UNCHANGED = [
    IMPORTS + LOADER + MODEL + SUM + "    avg = total / len(loader)\n",  # a mean over this shard's batches
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_a_shard_sum_divided_by_the_full_dataset_size_gets_a_todo():
    code, changes = run(script(loop="""
for epoch in range(3):
    correct = 0
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        correct += (model(x) > 0).sum().item()
    accuracy = correct / len(train_loader.dataset)
    batches = correct / len(train_loader)
"""))
    assert code.count("# TODO(ddpify): `correct` sums this process's shard only") == 1
    assert any("divided by the full dataset size" in w for w in warnings(changes))
