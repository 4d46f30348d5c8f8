"""shard-eval: evaluation loops split across processes where the numbers stay exact, kept whole
(with a note) where a split would change them."""

from __future__ import annotations

import pytest

from ddpify.report import NOTE
from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, rewrite_tests, run

NAME = "shard-eval"

TEST_LOADER = ("from tqdm import tqdm\n"
               "test_loader = DataLoader(TensorDataset(torch.randn(9, 2), torch.randn(9, 1)), batch_size=4)\n")
HEAD = IMPORTS + LOADER + MODEL + EPOCHS + TEST_LOADER


def imported(names: str) -> str:
    """HEAD with `from ddpify_runtime import names` after its imports, as the rewrite adds it."""
    return HEAD.replace(IMPORTS, IMPORTS + f"from ddpify_runtime import {names}\n\n")


SUMS = """\
total, correct, n = 0.0, 0, 0
with torch.no_grad():
    for x, y in {loader}:
        out = model(x)
        total += ((out - y) ** 2).sum().item()
        correct += (out.sign() == y.sign()).sum().item()
        n += y.size(0)
{reduced}print(total / len(test_loader.dataset), correct / n)
"""
LISTS = """\
preds, targets = [], []
with torch.no_grad():
    for x, y in {loader}:
        preds.append(model(x))
        targets.extend(y.view(-1).tolist())
{reduced}error = (torch.cat(preds).view(-1) - torch.tensor(targets)).abs().median()
"""
PER_CLASS = """\
seen = torch.zeros(2)
hits = 0
for x, y in {loader}:
    pred = model(x).view(-1) > 0
    for c in range(2):
        seen[c] += (pred == c).sum()
    for p, t in zip(pred, y.view(-1)):
        hits += int(p == (t > 0))
{reduced}print(seen.tolist(), hits / len(test_loader.dataset))
"""

PAIRS = [
    (HEAD + SUMS.format(loader="test_loader", reduced=""),
     imported("reduce_sum, shard_eval") + SUMS.format(
         loader="shard_eval(test_loader)", reduced="    total, correct, n = reduce_sum(total, correct, n)\n")),
    (HEAD + LISTS.format(loader="test_loader", reduced=""),
     imported("gather_ordered, shard_eval") + LISTS.format(
         loader="shard_eval(test_loader)",
         reduced="    preds = gather_ordered(preds)\n    targets = gather_ordered(targets)\n")),
    (HEAD + PER_CLASS.format(loader="test_loader", reduced=""),
     imported("reduce_sum, shard_eval") + PER_CLASS.format(
         loader="shard_eval(test_loader)", reduced="seen, hits = reduce_sum(seen, hits)\n")),
]


def whole(loop: str) -> str:
    return HEAD + loop


# each form a split would change, and the reason the note gives
KEPT = [
    ("total = 0.0\nfor x, y in test_loader:\n    total += ((model(x) - y) ** 2).mean().item()\n"
     "print(total / len(test_loader))\n", "the loss is averaged per batch (`total / len(test_loader)`)"),
    ("total = 0.0\nfor x, y in tqdm(test_loader, total=len(test_loader)):\n    total += ((model(x) - y) ** 2).sum().item()\n"
     "print(total)\n", "it reads `len(test_loader)`, the number of batches"),
    ("total = 0.0\nfor x, y in test_loader:\n    total += ((model(x) - y) ** 2).mean().item()\n"
     "print(total / len(test_loader.dataset))\n", "`total` adds one value per batch"),
    ("total, batches = 0.0, 0\nfor x, y in test_loader:\n    total += ((model(x) - y) ** 2).sum().item()\n"
     "    batches += 1\nprint(total / batches)\n", "`batches` counts batches"),
    ("best = 0.0\nfor x, y in test_loader:\n    best = max(best, model(x).max().item())\nprint(best)\n",
     "`best` is carried out of the loop by `best = max(best, model(x).max().item())`"),
    ("avg = 0.0\nfor x, y in test_loader:\n    avg = 0.9 * avg + 0.1 * ((model(x) - y) ** 2).mean().item()\n"
     "print(avg)\n", "`avg` is carried out of the loop"),
    ("for x, y in test_loader:\n    meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))\nprint(meter.avg)\n",
     "`meter.update(((model(x) - y) ** 2).mean().item(), x.size(0))` may accumulate where ddpify cannot reduce it"),
    ("total = 0.0\nfor x, y in test_loader:\n    total += ((model(x) - y) ** 2).sum().item()\n    if total > 5:\n"
     "        break\nprint(total)\n", "the loop may stop early (`break`)"),
    ("def first_bad(model, test_loader):\n    bad = 0\n    for x, y in test_loader:\n        for o, t in zip(model(x), y):\n"
     "            bad += int(o.item() > t.item())\n            if bad > 3:\n                return bad\n    return bad\n\n\n"
     "print(first_bad(model, test_loader))\n", "the loop may stop early (`return bad`)"),
    ("try:\n    print(len(test_loader))\nexcept RuntimeError:\n    total = 0.0\n    for x, y in test_loader:\n"
     "        total += ((model(x) - y) ** 2).sum().item()\n    print(total)\n", "it runs in an `except` block"),
    ("total = 0.0\nfor x, y in test_loader:\n    total += ((model(x) - y) ** 2).sum().item()\nelse:\n    print(total)\n",
     "its `else` block runs before"),
    ("print(sum(((model(x) - y) ** 2).sum().item() for x, y in test_loader))\n", "it runs in a comprehension"),
    ("correct, n = 0, 0\nfor x, y in test_loader:\n    correct += (model(x).sign() == y.sign()).sum().item()\n"
     "    n += y.size(0)\n    running = correct / n\n", "`correct` is read inside the loop"),
    ("total = 0.0\nfor x, y in test_loader:\n    loss = ((model(x) - y) ** 2).sum().item()\n    total += loss\n"
     "    print(loss)\nprint(total)\n", "it prints inside the loop"),
    ("accs = []\nfor x, y in test_loader:\n    accs.append((model(x).sign() == y.sign()).float().mean().item())\n"
     "print(sum(accs) / len(accs))\n", "`accs` holds one item per batch"),
    ("accs = []\nfor x, y in test_loader:\n    accs += [(model(x).sign() == y.sign()).float().mean().item()]\n"
     "print(sum(accs) / len(accs))\n", "`accs` holds one item per batch"),
    ("if ((model(torch.randn(2)) - 1) ** 2).item() < 1:\n    total = 0.0\n    for x, y in test_loader:\n"
     "        total += ((model(x) - y) ** 2).sum().item()\n    print(total)\n", "which may differ between processes"),
    ("total = 0.0\nfor i, (x, y) in enumerate(test_loader):\n    total += ((model(x) - y) ** 2).sum().item()\n"
     "print(total / (i + 1))\n", "`i` (the batch) is read after the loop"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, [whole(code) for code, _ in KEPT])


@pytest.mark.parametrize("code, reason", KEPT)
def test_a_form_a_split_would_change_keeps_the_loader_whole_with_a_note(code, reason):
    _, changes = run(whole(code))
    notes = [c.message for c in changes if c.rewrite == NAME]
    assert len(notes) == 1 and notes[0].startswith("evaluation of `test_loader` kept whole: ") and reason in notes[0], notes
    assert [c.kind for c in changes if c.rewrite == NAME] == [NOTE]


def test_forwards_go_through_the_bare_module_and_its_buffers_come_from_the_main_process():
    code, changes = run(HEAD + SUMS.format(loader="test_loader", reduced=""))
    assert "    for x, y in shard_eval(test_loader, model):\n        out = model.module(x)\n" in code
    assert "    total, correct, n = reduce_sum(total, correct, n)\n" in code
    assert any(c.rewrite == NAME and "runs the bare module" in c.message for c in changes)


def test_no_shard_eval_keeps_today_s_whole_evaluation():
    code, changes = run(HEAD + SUMS.format(loader="test_loader", reduced=""), skip=frozenset({NAME}))
    assert "shard_eval" not in code and "reduce_sum" not in code and "model.module(x)" not in code
    assert not any(c.rewrite == NAME for c in changes)


def test_fsdp_keeps_every_evaluation_whole_with_a_note():
    """Under FSDP2 each forward gathers the parameters from every process: a split evaluation
    (uneven batch counts, forwards on some processes only) would hang."""
    code, changes = run(HEAD + SUMS.format(loader="test_loader", reduced=""), strategy="fsdp")
    assert "shard_eval" not in code and "reduce_sum" not in code and "shard_model(model)" in code
    assert [c.message for c in changes if c.rewrite == NAME] == [
        "evaluation of `test_loader` kept whole: under FSDP every forward gathers the parameters from all "
        "processes, so each runs every batch"]


def test_a_training_loader_evaluated_again_is_no_evaluation_loader():
    """Accuracy over the (sharded) training loader is shard-metrics' business: no shard_eval on it."""
    code, _ = run(HEAD.replace("loader =", "train_loader =").replace("in loader", "in train_loader")
                  + "correct = 0\nfor x, y in train_loader:\n    correct += (model(x).sign() == y.sign()).sum().item()\n"
                  "print(correct)\n")
    assert "shard_eval" not in code


def test_an_evaluation_through_a_loop_that_also_trains_stays_whole_with_a_note():
    _, changes = run(IMPORTS + TEST_LOADER + LOADER + MODEL + """
def run_epoch(data, train):
    total = 0.0
    for x, y in data:
        loss = ((model(x) - y) ** 2).mean()
        if train:
            opt.zero_grad()
            loss.backward()
            opt.step()
        total += loss.item()
    return total


for epoch in range(2):
    run_epoch(loader, True)
    print(run_epoch(test_loader, False))
""")
    notes = [c.message for c in changes if c.rewrite == NAME]
    assert notes == ["evaluation of `data` kept whole: it runs through a loop that also trains"]
