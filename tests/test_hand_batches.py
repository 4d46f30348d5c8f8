"""Training batched by hand (ddpify.analysis.hand_batches, decision 0217): which loops are dealt out
to the processes (`Hand.dealt`: the batches passed through `shard_batches`, and where the random
state is agreed), and which stay whole with shard-data's TODO (`Hand.whole`, the reason). Table
tests through the analysis (`analyse`), positives beside their near misses. The conversion is
checked in tests/rewrites/test_shard_data.py, the golden fixtures/hand_batches, and launched under
two processes in tests/distributed/test_hand_batches.py."""

from __future__ import annotations

import textwrap

import pytest

from ddpify.analysis.result import analyse
from ddpify.syntax.parse import parse_module

HEAD = """\
import random
import numpy as np
import torch
X, y = torch.randn(64, 4), torch.randn(64, 1)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
bs = 8
"""
STEP = "    opt.zero_grad()\n    ((model(xb) - yb) ** 2).mean().backward()\n    opt.step()\n"


def _found(source: str, head: str = HEAD):
    analysis = analyse(parse_module(head + textwrap.dedent(source)))
    hand, facts = analysis.loaders.hand, analysis.facts
    dealt = [(facts.code(d.batches), facts.code(d.agree_at).strip() if d.agree_at is not None else None)
             for d in hand.dealt]
    return dealt, sorted(hand.whole.values())


@pytest.mark.parametrize("source, batches", [
    ("for i in range(0, len(X), bs):\n    xb, yb = X[i:i + bs], y[i:i + bs]\n" + STEP, "range(0, len(X), bs)"),
    ("for b in range(len(X) // bs):\n    xb, yb = X[b * bs:(b + 1) * bs], y[b * bs:(b + 1) * bs]\n" + STEP,
     "range(len(X) // bs)"),
    ("for xb, yb in zip(X.split(bs), y.split(bs)):\n" + STEP, "zip(X.split(bs), y.split(bs))"),
    ("for k, (xb, yb) in enumerate(zip(torch.split(X, bs), torch.split(y, bs))):\n" + STEP,
     "zip(torch.split(X, bs), torch.split(y, bs))"),
    ("for xb, yb in zip(np.array_split(X, 8), np.array_split(y, 8)):\n" + STEP,
     "zip(np.array_split(X, 8), np.array_split(y, 8))"),
    ("for xb in X.chunk(8):\n    yb = xb.sum(1, keepdim=True)\n" + STEP, "X.chunk(8)"),
    ("total = 0.0\nfor i in range(0, 64, bs):\n    xb, yb = X[i:i + bs], y[i:i + bs]\n" + STEP +
     "    total = total + 1.0\n", "range(0, 64, bs)"),  # an accumulator carries nothing to the next batch
    # a name written in an inner loop before it is read there, then again (round 26's WGAN-GP critic steps)
    ("for b in range(len(X) // bs):\n    xb, yb = X[b * bs:(b + 1) * bs], y[b * bs:(b + 1) * bs]\n"
     "    for j in range(2):\n        out = model(xb)\n        print(out.sum())\n    out = model(xb)\n"
     "    opt.zero_grad()\n    ((out - yb) ** 2).mean().backward()\n    opt.step()\n", "range(len(X) // bs)"),
])
def test_batches_sliced_by_hand_are_dealt(source, batches):
    assert _found(source) == ([(batches, None)], [])


@pytest.mark.parametrize("source, why", [
    # truncated backpropagation through time over one long sequence: the hidden state goes on
    ("h = torch.zeros(1, 1)\nfor i in range(0, 64, bs):\n    out = model(X[i:i + bs]) + h\n    h = out.detach()[-1:]\n"
     "    out.sum().backward()\n    opt.step()\n", "it carries `h`"),
    ("for step in range(100):\n    xb = X[(step * bs) % 64:(step * bs) % 64 + bs]\n    yb = y[:bs]\n" + STEP,
     "count round the data"),  # a number of steps the program chose
    ("for i in range(0, 64, bs):\n    xb, yb = X[i:i + bs], y[i:i + bs]\n" + STEP + "    if i > 20:\n        break\n",
     "leaves it or skips a step"),  # an exit decided by the batch each process takes
    ("for i in range(0, 64, bs):\n    xb, yb = X[i:i + bs], y[i:i + bs]\n    if len(xb) < bs:\n        continue\n"
     + STEP, "leaves it or skips a step"),
    ("def step(i):\n    xb, yb = X[i:i + bs], y[i:i + bs]\n" + STEP + "for i in range(0, 64, bs):\n    step(i)\n",
     "bounds no window"),  # a function slices: not read here
    ("for i in range(0, 64, bs):\n    idx = torch.randint(0, 64, (bs,))\n    xb, yb = X[idx], y[idx]\n"
     "    print(X[i:i + bs].shape)\n" + STEP, "draws indices at random"),
])
def test_near_misses_stay_whole_and_say_why(source, why):
    dealt, whole = _found(source)
    assert dealt == [] and len(whole) == 1 and why in whole[0], whole


@pytest.mark.parametrize("source", [
    # an evaluation loop batched by hand: no backward, nothing to deal (it stays whole, untouched)
    "with torch.no_grad():\n    for i in range(0, 64, bs):\n        print(model(X[i:i + bs]).sum())\n",
    # a string's split
    "for word in 'a b'.split(' '):\n    xb, yb = X, y\n" + STEP,
    # an epoch loop slicing a list of metrics
    "values = [0.0]\nfor epoch in range(3):\n    xb, yb = X, y\n" + STEP + "    print(values[:epoch])\n",
    # batches drawn at random offsets (get_batch): no loop of batches to deal
    "def get_batch():\n    ix = torch.randint(0, 56, (bs,))\n    return X[ix], y[ix]\n"
    "for it in range(10):\n    xb, yb = get_batch()\n" + STEP,
])
def test_what_is_no_batch_loop_by_hand_is_neither_dealt_nor_named(source):
    assert _found(source) == ([], [])


def test_no_model_wrapped_leaves_the_batches_whole():
    """An optimizer over a model ddpify cannot find: nothing is sharded, the TODO says what it says."""
    head = HEAD.replace("opt = torch.optim.SGD(model.parameters(), lr=0.1)", "opt = make_optimizer()")
    dealt, whole = _found("for i in range(0, 64, bs):\n    xb, yb = X[i:i + bs], y[i:i + bs]\n" + STEP, head)
    assert dealt == [] and whole == [""]


@pytest.mark.parametrize("draw", ["perm = torch.randperm(64)", "perm = np.random.permutation(64)",
                                  "perm = list(range(64)); random.shuffle(perm)"])
def test_a_permutation_drawn_at_each_epoch_is_agreed_before_it(draw):
    dealt, whole = _found(f"""\
        for epoch in range(3):
            print(epoch)
            {draw}
            for i in range(0, 64, bs):
                idx = perm[i:i + bs]
                xb, yb = X[idx], y[idx]
                opt.zero_grad()
                ((model(xb) - yb) ** 2).mean().backward()
                opt.step()
        """)
    assert dealt == [("range(0, 64, bs)", draw)] and whole == []


def test_a_permutation_in_a_function_each_epoch_calls_is_agreed_there_and_not_in_main():
    """`train_epoch()` draws its permutation at every call, from a loop: agreed at its draw.
    `main()` runs once, after init_distributed_mode(): every process has the main process's
    state there already, nothing agreed."""
    body = ("    perm = torch.randperm(64)\n    for i in range(0, 64, bs):\n        idx = perm[i:i + bs]\n"
            "        xb, yb = X[idx], y[idx]\n" + STEP.replace("\n    ", "\n        ").replace("    opt.zero", "        opt.zero", 1))
    dealt, _ = _found("def train_epoch():\n" + body + "for epoch in range(2):\n    train_epoch()\n")
    assert dealt == [("range(0, 64, bs)", "perm = torch.randperm(64)")]
    dealt, _ = _found("def main():\n" + body + "main()\n")
    assert dealt == [("range(0, 64, bs)", None)]


GET_BATCH = """\
def get_batch(split):
    ix = torch.randint(len(X) - bs, (bs,))
    return X[ix], y[ix]


"""


def _drawn(source: str, head: str = HEAD) -> list[str]:
    from ddpify.analysis.hand_batches import random_offset_draws
    from ddpify.analysis.loaders import unfed_training

    analysis = analyse(parse_module(head + textwrap.dedent(source)))
    loop = unfed_training(analysis.facts, analysis.models, analysis.loaders)
    return [analysis.facts.code(s).strip() for s in random_offset_draws(analysis.facts, loop)] if loop else []


@pytest.mark.parametrize("source, drawn", [
    # nanoGPT's get_batch, its first batch drawn before the loop and the next at each step
    (GET_BATCH + "xb, yb = get_batch('train')\nfor it in range(10):\n" + STEP + "    xb, yb = get_batch('train')\n",
     ["xb, yb = get_batch('train')", "xb, yb = get_batch('train')"]),
    # the draw in the loop itself
    ("for it in range(10):\n    ix = torch.randint(0, len(X) - bs, (bs,))\n    xb, yb = X[ix], y[ix]\n" + STEP,
     ["ix = torch.randint(0, len(X) - bs, (bs,))"]),
    ("for it in range(10):\n    ix = np.random.choice(len(X), bs)\n    xb, yb = X[ix], y[ix]\n" + STEP,
     ["ix = np.random.choice(len(X), bs)"]),
    ("for it in range(10):\n    ix = random.sample(range(len(X)), k=bs)\n    xb, yb = X[ix], y[ix]\n" + STEP,
     ["ix = random.sample(range(len(X)), k=bs)"]),
    # near misses: a draw from a generator of the program's own (the block swaps the global streams only)
    ("g = torch.Generator().manual_seed(0)\nfor it in range(10):\n"
     "    ix = torch.randint(len(X) - bs, (bs,), generator=g)\n    xb, yb = X[ix], y[ix]\n" + STEP, []),
    # one number drawn (a scalar: no batch of indices), and a batch taken in order by a helper
    ("for it in range(10):\n    k = random.randint(0, 7)\n    xb, yb = X[k * bs:(k + 1) * bs], y[k * bs:(k + 1) * bs]\n"
     + STEP, []),
    ("def get_batch(i):\n    return X[i:i + bs], y[i:i + bs]\n\n\nfor it in range(10):\n    xb, yb = get_batch(it)\n" + STEP, []),
])
def test_batches_drawn_at_random_offsets_are_drawn_on_each_processs_own_stream(source, drawn):
    """Training on batches drawn at random offsets into the data, no DataLoader (nanoGPT's `get_batch`,
    decision 0217's Left; decision 0231): the statements that draw them, which shard-data runs on each
    process's own random stream (`own_random_stream()`); the near misses keep the TODO."""
    assert _drawn(source) == drawn
