"""What must be the same on every rank and what must differ, under a real two-process launch.

One torchrun launch (CPU, gloo) of an already-converted style script that never seeds checks:
random state made before training is the same on both ranks, draws after the first
``set_epoch`` differ (rank 0's stream untouched) and still do after a plain ``barrier()``, draws
after the ``end_epoch()`` that ends the training pass are the same again, a second training's
passes get new orders, samplers still shard, and only rank 0's standard output reaches the
terminal (forced prints and stderr excepted). One plain-python run
checks the hint after DDP's unused-parameter error.
"""

import subprocess
import sys
import textwrap

import pytest

from tests.support.env import clean_env, torchrun_job

pytestmark = pytest.mark.slow

TIMEOUT_S = 120


RANKS_SCRIPT = textwrap.dedent("""
    import json, logging, os, random, sys
    import numpy
    import torch
    from torch.utils.data import DistributedSampler, random_split
    from ddpify_runtime import barrier, end_epoch, get_rank, init_distributed_mode, set_epoch

    print(f"imported by rank {os.environ['RANK']}")  # before the process group: one voice too
    sys.stderr.write(f"stderr at import of rank {os.environ['RANK']}\\n")
    init_distributed_mode()  # nothing in this script seeds any generator
    rank = get_rank()
    train, val = random_split(range(100), [0.8, 0.2])
    before = {
        "split": list(train.indices), "randperm": torch.randperm(50).tolist(),
        "data": torch.randn(4).tolist(), "random": random.random(),
        "numpy": float(numpy.random.rand()), "initial_seed": torch.initial_seed(),
    }
    sampler = DistributedSampler(range(10), shuffle=True)
    state = torch.get_rng_state()
    set_epoch(sampler, 0)  # training starts here
    untouched = torch.equal(state, torch.get_rng_state())
    orders = [list(sampler)]
    after = {"rand": torch.rand(4).tolist(), "random": random.random(),
             "numpy": float(numpy.random.rand()),
             "dropout": torch.nn.functional.dropout(torch.ones(32)).tolist()}
    set_epoch(sampler, 1)  # the pass runs on (no end_epoch() yet): nothing re-seeds
    again = torch.get_rng_state()
    orders.append(list(sampler))
    set_epoch(sampler, 2)
    second_call_untouched = torch.equal(again, torch.get_rng_state())
    barrier()  # only a barrier (a file written, then read back): the pass runs on
    in_pass = {"rand": torch.rand(4).tolist(), "random": random.random()}
    end_epoch()  # the end of the epoch ends the training pass
    between = {"randperm": torch.randperm(50).tolist(), "random": random.random(),
               "numpy": float(numpy.random.rand()), "init": torch.nn.Linear(3, 2).weight.tolist()}
    for epoch in range(2):  # a second training, counting its epochs from 0 again
        set_epoch(sampler, epoch)
        orders.append(list(sampler))
    second = {"rand": torch.rand(4).tolist(), "random": random.random()}
    end_epoch()

    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    logging.info(f"logged by rank {rank}")
    on_stderr = logging.getLogger("on_stderr")  # a handler of logging's default stream, made after init
    on_stderr.addHandler(logging.StreamHandler())
    on_stderr.propagate = False
    on_stderr.info(f"told on stderr by rank {rank}")
    on_stderr.warning(f"warned on stderr by rank {rank}")
    sys.stdout.write(f"progress of rank {rank}\\n")
    print(f"printed by rank {rank}")
    print(f"forced by rank {rank}", force=True)
    sys.stderr.write(f"stderr of rank {rank}\\n")
    report = {"rank": rank, "before": before, "after": after, "untouched": untouched,
              "in_pass": in_pass, "between": between, "second": second, "orders": orders,
              "second_call_untouched": second_call_untouched,
              "shard": list(sampler)}
    barrier()
    with open(f"{sys.argv[1]}/rank{rank}.json", "w") as f:
        json.dump(report, f)
""")


def test_same_state_before_training_different_streams_and_one_voice(tmp_path):
    proc, (r0, r1) = torchrun_job(RANKS_SCRIPT, tmp_path, timeout=TIMEOUT_S)

    # made once before training: the same on both ranks, though nothing was seeded
    assert r0["before"] == r1["before"]
    assert sorted(r0["before"]["randperm"]) == list(range(50))
    # drawn in training: a different stream on each rank, rank 0's own stream kept
    for name in ("rand", "random", "numpy", "dropout"):
        assert r0["after"][name] != r1["after"][name], name
    assert (r0["untouched"], r1["untouched"]) == (True, False)
    assert r0["second_call_untouched"] and r1["second_call_untouched"]
    for name in ("rand", "random"):  # a barrier() within the pass leaves the streams as they are
        assert r0["in_pass"][name] != r1["in_pass"][name], name
    # drawn between two trainings (a permutation, a new model's weights): the same again
    assert r0["between"] == r1["between"]
    for name in ("rand", "random"):
        assert r0["second"][name] != r1["second"][name], name
    # the second training's passes get new orders, not the first training's again
    for report in (r0, r1):
        first, second = report["orders"][:2], report["orders"][2:]
        assert all(order not in first for order in second), report["orders"]
    # samplers seed themselves: still disjoint shards covering the data set
    assert sorted(r0["shard"] + r1["shard"]) == list(range(10))

    # one voice on stdout; forced prints and stderr from every rank
    for text in ("logged by rank 0", "progress of rank 0", "printed by rank 0",
                 "forced by rank 0", "forced by rank 1"):
        assert text in proc.stdout, text
    for text in ("logged by rank 1", "progress of rank 1", "printed by rank 1", "imported by rank 1"):
        assert text not in proc.stdout + proc.stderr, text
    assert "imported by rank 0" in proc.stdout
    for text in ("stderr of rank 0", "stderr of rank 1", "stderr at import of rank 0", "stderr at import of rank 1",
                 "told on stderr by rank 0", "warned on stderr by rank 0", "warned on stderr by rank 1"):
        assert text in proc.stderr, text
    assert "told on stderr by rank 1" not in proc.stderr  # log records below WARNING: the main process's


UNUSED_SCRIPT = textwrap.dedent("""
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from ddpify_runtime import init_distributed_mode

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)

        def forward(self, x):
            return self.used(x), self.unused(x)

    init_distributed_mode()
    model = DistributedDataParallel(TwoHeads())
    for step in range(2):  # the second forward raises: the unused head got no gradient
        model(torch.ones(3, 2))[0].sum().backward()
""")


def test_unused_parameter_error_names_the_flag(tmp_path):
    script = tmp_path / "unused.py"
    script.write_text(UNUSED_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], env=clean_env(), capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 1
    traceback, _, hint = proc.stderr.rstrip("\n").rpartition("\n")
    assert "Traceback" in traceback
    assert "RuntimeError: Expected to have finished reduction in the prior iteration" in traceback
    assert hint.startswith("ddpify: some parameters of a DistributedDataParallel model got no "
                           "gradient")
    assert "`ddpify convert --find-unused-parameters`" in hint
    assert "find_unused_parameters=True" in hint
