"""ddpify_runtime's evaluation helpers: the exact split, the reductions, the ordered gather.

Without a launcher (one pytest process) every helper is the identity and ``ExactSplitSampler``
is checked rank by rank. One torchrun launch (2 CPU processes) checks the collectives together:
uneven shares (3 samples, and 1 sample: an empty rank), each value type of ``reduce_sum``,
tensors of different shapes and plain values through ``gather_ordered``, and BatchNorm buffers
taken from the main process.
"""

import textwrap

import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, RandomSampler, SequentialSampler

import ddpify_runtime as rt
from ddpify_runtime import ExactSplitSampler, gather_ordered, reduce_sum, shard_eval

from tests.support.env import torchrun_job


def shares(sampler_for_rank, world):
    return [list(sampler_for_rank(rank)) for rank in range(world)]


@pytest.mark.parametrize("n, world, sizes", [(101, 2, [51, 50]), (3, 4, [1, 1, 1, 0]), (8, 2, [4, 4])])
def test_exact_split_gives_each_item_to_one_rank_in_contiguous_blocks(n, world, sizes):
    got = shares(lambda r: ExactSplitSampler(SequentialSampler(range(n)), world, r), world)
    assert [len(s) for s in got] == sizes
    assert [i for s in got for i in s] == list(range(n))  # rank order restores the loader's order
    assert [len(ExactSplitSampler(SequentialSampler(range(n)), world, r)) for r in range(world)] == sizes


def test_a_random_order_is_drawn_alike_on_every_rank_and_changes_per_pass():
    samplers = [ExactSplitSampler(RandomSampler(range(50)), 2, r) for r in range(2)]
    first = [list(s) for s in samplers]
    assert sorted(first[0] + first[1]) == list(range(50))
    second = [list(s) for s in samplers]
    assert sorted(second[0] + second[1]) == list(range(50)) and second != first


def test_keep_and_batch_samplers_split_only_what_one_process_uses():
    kept = shares(lambda r: ExactSplitSampler(SequentialSampler(range(10)), 2, r, keep=8), 2)
    assert kept == [[0, 1, 2, 3], [4, 5, 6, 7]]  # drop_last with batch 4: the tail of 2 is not used
    batches = shares(lambda r: ExactSplitSampler(BatchSampler(SequentialSampler(range(7)), 3, False), 2, r), 2)
    assert batches == [[[0, 1, 2], [3, 4, 5]], [[6]]]


def test_one_process_gets_everything_back_unchanged():
    loader = DataLoader(range(5), batch_size=2)
    assert shard_eval(loader, torch.nn.BatchNorm1d(2)) is loader
    assert reduce_sum(3) == 3 and reduce_sum(1, 2.5) == (1, 2.5)
    items = [torch.ones(2), torch.zeros(1)]
    assert gather_ordered(items) == items


def test_a_drop_last_loader_keeps_the_full_batches_of_one_process(monkeypatch):
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    monkeypatch.setattr(rt, "get_rank", lambda: 1)
    split = rt._split_for_evaluation(DataLoader(range(11), batch_size=4, drop_last=True))
    assert [b.tolist() for b in split] == [[4, 5, 6, 7]]  # rank 1 of the 8 samples in full batches
    with pytest.raises(TypeError, match="--no-shard-eval"):
        rt._split_for_evaluation(DataLoader(range(4), sampler=DistributedSampler(range(4), 2, 0)))


def test_reduce_sum_refuses_what_it_cannot_add(monkeypatch):
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    with pytest.raises(TypeError, match="not str"):
        reduce_sum(1, "3")


def test_sum_over_shards_adds_up_a_sharded_loaders_sums_only(monkeypatch):
    """A loop shared by both phases: the training loader's sums are reduced, the whole one's kept."""
    monkeypatch.setattr(rt, "reduce_sum", lambda *values: ("summed", values))
    sharded = DataLoader(list(range(8)), sampler=DistributedSampler(list(range(8)), num_replicas=2, rank=1))
    whole = DataLoader(list(range(8)), shuffle=True)
    assert rt.sum_over_shards(sharded, 3, 1.5) == ("summed", (3, 1.5))
    assert rt.sum_over_shards(whole, 3, 1.5) == (3, 1.5) and rt.sum_over_shards(whole, 2.5) == 2.5


def test_mean_over_shards_averages_a_sharded_loaders_sums_only(monkeypatch):
    """dcase's `this_epoch_train_loss /= len(train_loader)`: the sum over one shard, averaged over
    the processes (each drew as many batches), is the whole pass's sum over all the batches."""
    monkeypatch.setattr(rt, "reduce_sum", lambda *values: tuple(v + 5 for v in values) if len(values) > 1 else values[0] + 5)
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)  # the other process's sum: 5
    sharded = DataLoader(list(range(8)), sampler=DistributedSampler(list(range(8)), num_replicas=2, rank=1))
    whole = DataLoader(list(range(8)), shuffle=True)
    assert rt.mean_over_shards(sharded, 3.0) == 4.0 and rt.mean_over_shards(sharded, 3, 1.5) == (4.0, 3.25)
    assert rt.mean_over_shards(whole, 2.5) == 2.5 and rt.mean_over_shards(whole, 3, 1.5) == (3, 1.5)


def test_gather_over_shards_gathers_a_sharded_loaders_lists_only(monkeypatch):
    """dc_ddpm's epoch loss, `sum(total_loss) / len(total_loss)` over the batch losses one pass
    collected: gathered from every process where the loader is sharded, kept where it is whole."""
    monkeypatch.setattr(rt, "gather_ordered", lambda items: ["rank 0's", *items])
    sharded = DataLoader(list(range(8)), sampler=DistributedSampler(list(range(8)), num_replicas=2, rank=1))
    whole = DataLoader(list(range(8)), shuffle=True)
    assert rt.gather_over_shards(sharded, [0.5, 0.25]) == ["rank 0's", 0.5, 0.25]
    assert rt.gather_over_shards(sharded, [1], [2]) == (["rank 0's", 1], ["rank 0's", 2])
    assert rt.gather_over_shards(whole, [0.5]) == [0.5] and rt.gather_over_shards(whole, [1], [2]) == ([1], [2])
    assert rt.gather_over_shards(enumerate([1]), [3]) == [3]


def test_sum_over_shards_over_no_loader_keeps_the_values():
    """`sum_over_shards(loop, correct)` with `loop` an `enumerate` of a generator over zipped loaders
    (YannLeo's DANN trainer, ninth fresh sweep) raised AttributeError ('enumerate' object has no
    attribute 'dataset') in every process: what it cannot tell is sharded keeps its values."""
    assert rt.sum_over_shards(enumerate(zip([1], [2])), 3) == 3
    assert rt.sum_over_shards(iter([]), 3, 1.5) == (3, 1.5)


def test_sum_over_shards_gives_numpy_back_as_numpy(monkeypatch):
    """`running_loss += loss.detach().cpu().numpy() * n`: reduce_sum adds tensors; the sum returns
    as the numpy array (or scalar) it was."""
    import numpy as np
    monkeypatch.setattr(rt, "reduce_sum", lambda *values: tuple(v * 2 for v in values) if len(values) > 1 else values[0] * 2)
    sharded = DataLoader(list(range(8)), sampler=DistributedSampler(list(range(8)), num_replicas=2, rank=0))
    array, scalar = rt.sum_over_shards(sharded, np.array([1.5, 2.0]), np.float32(3.0))
    assert isinstance(array, np.ndarray) and array.tolist() == [3.0, 4.0]
    assert type(scalar) is np.float32 and scalar == 6.0
    assert rt.sum_over_shards(sharded, np.array(2.5)).tolist() == 5.0


def test_sum_over_shards_adds_up_a_dict_of_sums_item_by_item(monkeypatch):
    """A template's `total_metrics[k] += n * value` (decision 0198): the dict comes back with the same
    keys, each summed, beside the other values; keys that differ between processes are refused."""
    from collections import OrderedDict
    monkeypatch.setattr(rt, "reduce_sum", lambda *values: tuple(v * 2 for v in values) if len(values) > 1 else values[0] * 2)
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    others: list = []
    monkeypatch.setattr(rt.dist, "all_gather_object", lambda parts, keys: parts.__setitem__(slice(None), [keys, *others]))
    sharded = DataLoader(list(range(8)), sampler=DistributedSampler(list(range(8)), num_replicas=2, rank=0))
    others[:] = [[None, ["mae", "mse"], None]]
    loss, metrics, count = rt.sum_over_shards(sharded, 1.5, {"mae": 0.25, "mse": 1.0}, 4)
    assert (loss, metrics, count) == (3.0, {"mae": 0.5, "mse": 2.0}, 8)
    others[:] = [[["a"]]]
    assert rt.sum_over_shards(sharded, OrderedDict(a=1)) == OrderedDict(a=2)
    others[:] = [[["b"]]]
    with pytest.raises(ValueError, match="keys"):
        rt.sum_over_shards(sharded, {"a": 1})


TWO_RANKS = textwrap.dedent("""
    import json, sys
    import torch
    from torch.utils.data import DataLoader
    from ddpify_runtime import gather_ordered, get_rank, init_distributed_mode, reduce_sum, shard_eval

    init_distributed_mode()
    rank = get_rank()
    report = {"rank": rank}
    for n in (3, 1):
        loader = DataLoader(list(range(n)), batch_size=2)
        seen, count, total, vector, preds, labels = [], 0, 0.0, torch.zeros(2), [], []
        for batch in shard_eval(loader):
            seen += batch.tolist()
            count += len(batch)
            total += float(batch.sum()) + 0.5
            vector += torch.stack([batch.sum(), torch.tensor(len(batch))]).float()
            preds.append(torch.stack([batch, batch * 10], 1))  # shape (batch, 2)
            labels.extend(f"x{i}" for i in batch.tolist())
        count, total, vector = reduce_sum(count, total, vector)
        late = reduce_sum(torch.ones(2) if seen else 0)  # still 0 on a rank that read nothing
        report[str(n)] = {"seen": seen, "count": count, "count_type": type(count).__name__,
                          "total": total, "vector": vector.tolist(), "late": late.tolist(),
                          "preds": [p.tolist() for p in gather_ordered(preds)],
                          "labels": gather_ordered(labels), "same_copy": shard_eval(loader) is shard_eval(loader)}
    norm = torch.nn.BatchNorm1d(2)
    norm.running_mean.fill_(float(rank + 1))
    shard_eval(DataLoader([0]), norm)
    report["running_mean"] = norm.running_mean.tolist()
    with open(f"{sys.argv[1]}/rank{rank}.json", "w") as f:
        json.dump(report, f)
""")


@pytest.mark.slow
def test_two_ranks_split_reduce_and_gather_in_order(tmp_path):
    _, (r0, r1) = torchrun_job(TWO_RANKS, tmp_path)
    assert (r0["3"]["seen"], r1["3"]["seen"]) == ([0, 1], [2])
    assert (r0["1"]["seen"], r1["1"]["seen"]) == ([0], [])  # a rank with nothing to do
    for report in (r0, r1):  # the same numbers on every rank
        assert report["3"]["count"] == 3 and report["3"]["count_type"] == "int"
        assert report["3"]["total"] == 0.0 + 1 + 2 + 0.5 * 2  # two batches: [0, 1] and [2]
        assert report["3"]["vector"] == [3.0, 3.0]
        assert report["3"]["preds"] == [[[0, 0], [1, 10]], [[2, 20]]]
        assert report["3"]["labels"] == ["x0", "x1", "x2"]
        assert report["1"]["count"] == 1 and report["1"]["preds"] == [[[0, 0]]] and report["1"]["labels"] == ["x0"]
        assert report["3"]["late"] == [2.0, 2.0] and report["1"]["late"] == [1.0, 1.0]
        assert report["3"]["same_copy"] is True
        assert report["running_mean"] == [1.0, 1.0]  # rank 0's buffers
