"""shard-data: every training loader gets a disjoint shard per process; evaluation loaders stay whole."""

from __future__ import annotations

import pytest

from tests.support.snippets import (EPOCHS, IMPORTS, MODEL, lines, rewrite_tests, run, run_with_loader,
                                    script, warnings)

NAME = "shard-data"

DS = "ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))\n"
SAMPLER_IMPORT = "from torch.utils.data.distributed import DistributedSampler\n\n"

PAIRS = [
    (IMPORTS + DS + "loader = DataLoader(ds, batch_size=4, shuffle=True)\n" + MODEL + EPOCHS,
     IMPORTS + SAMPLER_IMPORT + DS + "loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=True))\n"
     + MODEL + EPOCHS),
    # an evaluation loader beside it stays whole
    (IMPORTS + DS + "loader = DataLoader(ds, batch_size=4)\nval_loader = DataLoader(ds, batch_size=4)\n" + MODEL + EPOCHS
     + "for x, y in val_loader:\n    print(model(x))\n",
     IMPORTS + SAMPLER_IMPORT + DS + "loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=False))\n"
     "val_loader = DataLoader(ds, batch_size=4)\n" + MODEL + EPOCHS + "for x, y in val_loader:\n    print(model(x))\n"),
    ("from torch.utils.data import RandomSampler\n" + IMPORTS + DS
     + "loader = DataLoader(ds, batch_size=4, sampler=RandomSampler(ds))\n" + MODEL + EPOCHS,
     "from torch.utils.data import RandomSampler\n" + IMPORTS + SAMPLER_IMPORT + DS
     + "loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))\n" + MODEL + EPOCHS),
    # arguments this file cannot see: the loader is rebuilt at run time
    (IMPORTS + DS + "kwargs = {'batch_size': 4, 'shuffle': True}\nloader = DataLoader(ds, **kwargs)\n" + MODEL + EPOCHS,
     IMPORTS + "from ddpify_runtime import shard_loader\n\n" + DS
     + "kwargs = {'batch_size': 4, 'shuffle': True}\nloader = DataLoader(ds, **kwargs)\nloader = shard_loader(loader)\n"
     + MODEL + EPOCHS),
    # a call over several lines keeps its breaks and its `)` on a line of its own
    (IMPORTS + DS + "loader = DataLoader(\n    ds,\n    batch_size=4,\n    shuffle=True\n    )\n" + MODEL + EPOCHS,
     IMPORTS + SAMPLER_IMPORT + DS + "loader = DataLoader(\n    ds,\n    batch_size=4,\n"
     "    sampler=DistributedSampler(ds, shuffle=True)\n    )\n" + MODEL + EPOCHS),
    (IMPORTS + DS + "loader = DataLoader(\n    ds,\n    batch_size=4\n)\n" + MODEL + EPOCHS,
     IMPORTS + SAMPLER_IMPORT + DS + "loader = DataLoader(\n    ds,\n    batch_size=4,\n"
     "    sampler=DistributedSampler(ds, shuffle=False)\n)\n" + MODEL + EPOCHS),
]

# Every script that trains gets its training data sharded or a TODO saying why not; what stays
# whole (evaluation loaders) is in the pairs above.
UNCHANGED: list = []

test_pairs, _ = rewrite_tests(NAME, PAIRS, UNCHANGED)


@pytest.mark.parametrize("shuffle, sampler", [
    ("shuffle=True", "sampler=DistributedSampler(ds, shuffle=True)"),
    ("shuffle=args_shuffle", "sampler=DistributedSampler(ds, shuffle=args_shuffle)"),
    ("drop_last=True", "drop_last=True, sampler=DistributedSampler(ds, shuffle=False)"),
])
def test_shuffle_moves_into_the_sampler_with_its_original_value(shuffle, sampler):
    code, _ = run("args_shuffle = True\n" + script(loader=f"train_loader = DataLoader(ds, batch_size=4, {shuffle})"))
    assert f"DataLoader(ds, batch_size=4, {sampler})" in code


def test_evaluation_loaders_stay_whole():
    code, _ = run(script(tail="""
        val_loader = DataLoader(ds, batch_size=4)
        test_loader = DataLoader(ds, batch_size=4, shuffle=False)
        for x, y in val_loader:
            print(model(x))
        """))
    assert "val_loader = DataLoader(ds, batch_size=4)\n" in code
    assert "test_loader = DataLoader(ds, batch_size=4, shuffle=False)\n" in code


def test_opaque_loader_arguments_go_through_shard_loader():
    code, _ = run(script(loader="kw = {'batch_size': 4}\nkw.update(shuffle=True)\ntrain_loader = DataLoader(ds, **kw)"))
    assert "train_loader = DataLoader(ds, **kw)\ntrain_loader = shard_loader(train_loader)\n" in code


@pytest.mark.parametrize("sampler, expected", [
    ("RandomSampler(ds)", "DistributedSampler(ds)"),
    ("SequentialSampler(ds)", "DistributedSampler(ds, shuffle=False)"),
    ("WeightedRandomSampler([1.0] * 8, 8)", "ShardedSampler(WeightedRandomSampler([1.0] * 8, 8))"),
])
def test_explicit_samplers_are_replaced_or_sharded(sampler, expected):
    code, _ = run("from torch.utils.data import RandomSampler, SequentialSampler, WeightedRandomSampler\n"
                  + script(loader=f"s = {sampler}\ntrain_loader = DataLoader(ds, batch_size=4, sampler=s)"))
    assert f"s = {expected}\n" in code


def test_batch_sampler_keeps_its_batching_around_a_distributed_sampler():
    code, _ = run("from torch.utils.data import BatchSampler, RandomSampler\n" + script(
        loader="bs = BatchSampler(RandomSampler(ds), 4, drop_last=True)\n"
               "train_loader = DataLoader(ds, batch_sampler=bs)"))
    assert "bs = BatchSampler(DistributedSampler(ds), 4, drop_last=True)" in code
    assert "DataLoader(ds, batch_sampler=bs)" in code


def test_iterable_dataset_and_manual_batching_get_a_todo_and_a_warning():
    code, changes = run("""
        import torch
        from torch.utils.data import DataLoader, IterableDataset
        class Stream(IterableDataset):
            def __iter__(self):
                yield torch.randn(2)
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(Stream(), batch_size=2)
        X = torch.randn(8, 2)
        for epoch in range(2):
            for x in loader:
                model(x).sum().backward()
            for i in range(0, 8, 4):
                model(X[i:i + 4]).sum().backward()
        """)
    assert code.count("# TODO(ddpify):") == 2
    assert any("IterableDataset" in w for w in warnings(changes))
    assert any("sliced by hand" in w for w in warnings(changes))


def test_per_process_batch_size_is_said_once():
    _, changes = run(script(tail="extra = DataLoader(ds, batch_size=2, shuffle=True)\n"
                                 "for x, y in extra:\n    model(x).sum().backward()\n"))
    assert sum("per process" in w for w in warnings(changes)) == 1


def test_without_a_wrapped_model_the_data_stays_whole():
    code, _ = run(script(optimizer="optimizer = torch.optim.SGD(get_params(), lr=0.1)"))
    assert "DistributedSampler" not in code and "shard_loader" not in code
    assert "leaves the training data whole too" in code


def test_training_without_a_dataloader_says_what_each_process_trains_on():
    code, changes = run_with_loader("""
policy = torch.nn.Linear(4, 2)
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(100):
    loss = policy(torch.randn(32, 4)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""", header="import torch\n")
    assert any("no DataLoader feeds this training" in w for w in warnings(changes))
    todo = next(i for i, line in enumerate(lines(code)) if "no DataLoader feeds" in line)
    assert lines(code)[todo + 1] == "for episode in range(100):"
