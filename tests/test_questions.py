"""The questions `convert` and `check` both ask, answered once (`ddpify.analysis`): table tests
of positives and near misses, asked directly, and each answer as both commands see it."""

import pytest

from ddpify.analysis.distributed import is_distributed
from ddpify.check import NOT_DISTRIBUTED, check
from ddpify.convert import convert
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module

TRAIN = "\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nloss = model(x).sum()\nloss.backward()\nopt.step()\n"

DISTRIBUTED = {
    "init": "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
    "init_via_torch": "import torch\ntorch.distributed.init_process_group('nccl')\n",
    "collective": "import torch.distributed as dist\ndist.all_reduce(t)\n",
    "get_rank": "from torch.distributed import get_rank\nr = get_rank()\n",
    "ddp_wrap": "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n",
    "ddp_partial": "import functools\nfrom torch.nn.parallel import DistributedDataParallel\n"
                   "wrap = functools.partial(DistributedDataParallel, device_ids=[0])\n",
    "sampler": "from torch.utils.data import DistributedSampler\ns = DistributedSampler(ds)\n",
    "sampler_picked": "from torch.utils.data import DistributedSampler, RandomSampler\n"
                      "s = (DistributedSampler if ddp else RandomSampler)(ds)\n",
    "launcher_api": "from torch.distributed.launcher.api import elastic_launch, LaunchConfig\n"
                    "elastic_launch(LaunchConfig(1, 2, 2), main)()\n",
    "fsdp": "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n",
}

NOT_DISTRIBUTED_SCRIPTS = {
    "import_only": "import torch.distributed as dist\n",
    "wrapper_imported_only": "from torch.nn.parallel import DistributedDataParallel as DDP\n",
    "is_available_only": "import torch.distributed as dist\nok = dist.is_available()\n",
    "spawn_only": "import torch.multiprocessing as mp\nmp.spawn(train, nprocs=2)\n",
    "own_name": "def distributed_sampler(ds):\n    return ds\ns = distributed_sampler(ds)\n",
    "data_parallel": "import torch.nn as nn\nmodel = nn.DataParallel(model)\n",
}


def _facts(code):
    return Facts(parse_module("import torch\n" + code))


@pytest.mark.parametrize("name", sorted(DISTRIBUTED))
def test_distributed(name):
    assert is_distributed(_facts(DISTRIBUTED[name]))


@pytest.mark.parametrize("name", sorted(NOT_DISTRIBUTED_SCRIPTS))
def test_not_distributed(name):
    assert not is_distributed(_facts(NOT_DISTRIBUTED_SCRIPTS[name]))


@pytest.mark.parametrize("name", sorted(DISTRIBUTED) + sorted(NOT_DISTRIBUTED_SCRIPTS))
def test_convert_and_check_agree(name):
    """convert leaves a distributed script unchanged and check checks it; a script that is not
    distributed is converted and check says convert makes it a DDP script."""
    code = "import torch\nmodel = torch.nn.Linear(2, 2)\n" + {**DISTRIBUTED, **NOT_DISTRIBUTED_SCRIPTS}[name] + TRAIN
    distributed = name in DISTRIBUTED
    converted = convert(code)
    assert converted.changed is not distributed
    assert any("already distributed" in c.message for c in converted.changes) is distributed
    report = check(code)
    assert report.distributed is distributed
    assert (report.note == NOT_DISTRIBUTED) is not distributed
