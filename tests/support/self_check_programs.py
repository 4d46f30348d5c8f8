"""Programs for the runtime's self-check: one converted training script (as ddpify writes it)
with slots, a correct filling, and for each check a trigger (exactly one gap) and a near miss (a
correct program of the same shape, which prints nothing).

``program(name)`` is the source of ``correct``, ``<check>`` (the trigger), ``<check>-near`` or
``at-exit`` (both triggers of the checks at exit);
``gap_line(name)`` is the line a trigger's finding must name: the line of the one slot it fills
differently (for "unwrapped-parameters", the optimizer's line, where the finding points).
"""

from __future__ import annotations

from typing import Dict

TEMPLATE = '''\
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, Subset, TensorDataset
from ddpify_runtime import (device_ids, end_epoch, get_rank, get_world_size, init_distributed_mode,
                            set_epoch, shard_loader)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Stream(IterableDataset):
    """The points in order; with ``shard``, every get_world_size()-th from get_rank() on."""

    def __init__(self, points, targets, shard):
        self.points, self.targets, self.shard = points, targets, shard

    def __iter__(self):
        start, step = (get_rank(), get_world_size()) if self.shard else (0, 1)
        for i in range(start, len(self.points), step):
            yield self.points[i], self.targets[i]


init_distributed_mode()
torch.manual_seed(0)
points, targets = torch.randn(32, 4), torch.randn(32, 1)
train_set = TensorDataset(points, targets)
train_loader = {loader}
model = Net()
model = {wrap}
{extra}
optimizer = torch.optim.SGD({params}, lr=0.1)
for epoch in range(2):
    {set_epoch}
    total = 0.0
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model({input}), y)
        loss.backward()
        {step}
        {after_step}
        total += loss.item()
    end_epoch()
    print(f"epoch {{epoch}}: loss {{total:.4f}}")
{after}'''

# a second training after the first one's checks ended (a notebook's next section)
_SECOND_TRAINING = """\
model2 = Net()
model2 = {}
optimizer2 = torch.optim.SGD(model2.parameters(), lr=0.1)
for epoch in range(2):
    set_epoch(train_loader, epoch)
    for x, y in train_loader:
        optimizer2.zero_grad()
        F.mse_loss(model2(x), y).backward()
        optimizer2.step()
    end_epoch()
"""

# a second training that reuses the first one's optimizer, a head added to it (fine-tuning)
_REUSED = """\
head = {}
optimizer.add_param_group({{"params": head.parameters()}})
for epoch in range(2):
    set_epoch(train_loader, epoch)
    for x, y in train_loader:
        optimizer.zero_grad()
        F.mse_loss(head(model(x)), y).backward()
        optimizer.step()
    end_epoch()
"""

_WRITE = "{}with open({}, 'w') as f: f.write(f'{{total:.4f}}')\n"
_RELOAD = "model.module.load_state_dict({}{{k: v.clone() for k, v in model.module.state_dict().items()}})\n"

CORRECT = dict(
    loader="DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set, shuffle=True))",
    wrap="DistributedDataParallel(model, device_ids=device_ids(model))",
    extra="embed = torch.nn.Identity()",
    params="[*model.parameters(), *embed.parameters()]",
    set_epoch="set_epoch(train_loader, epoch)",
    input="embed(x)",
    step="optimizer.step()",
    after_step="pass",
    after="",
)

_SHUFFLED = "DataLoader(train_set, batch_size=8, shuffle=True)"
_ITERABLE = "DataLoader(Stream(points, targets, shard={}), batch_size=8)"
_HALVES = "DataLoader(Subset(train_set, range(16 * get_rank(), 16 * get_rank() + 16)), batch_size=8, shuffle=True)"

# check -> (the trigger's slots, the near miss's slots): each differs from CORRECT in one place
# (the unwrapped module and its near miss add a module in `extra`, stepped through `params`; the
# second training's pair adds a training after the first, its model bare or wrapped; the pair
# of the check at exit reloads weights after the training).
CASES: Dict[str, tuple] = {
    "unwrapped-parameters": (dict(extra="embed = torch.nn.Linear(4, 4)"),
                             dict(extra="embed = torch.nn.Linear(4, 4).requires_grad_(False)")),
    "unsharded-loader": (dict(loader=_SHUFFLED), dict(loader=f"shard_loader({_SHUFFLED})")),
    "unsharded-iterable": (dict(loader=_ITERABLE.format(False)), dict(loader=_ITERABLE.format(True))),
    "same-order": (dict(set_epoch="pass"),
                   dict(set_epoch="pass", loader="DataLoader(train_set, batch_size=8, "
                                                 "sampler=DistributedSampler(train_set, shuffle=False))")),
    "diverged-parameters": (dict(after_step="model.module.fc1.weight.data.add_(torch.randn(8, 4) * 1e-3)"),
                            dict(input="embed(x + torch.randn_like(x) * 1e-3)")),
    "uneven-batches": (dict(loader="DataLoader(Subset(train_set, range(0, 20) if get_rank() == 0 else "
                                   "range(20, 32)), batch_size=8, shuffle=True)"),
                       dict(loader=_HALVES)),
    "missing-step": (dict(step="if get_rank() == 0: optimizer.step()"),
                     dict(step="if torch.isfinite(loss): optimizer.step()")),
    # the checks arm again at the second training's optimizer: its bare model is found there
    "second-training": (dict(after=_SECOND_TRAINING.format("model2")),
                        dict(after=_SECOND_TRAINING.format("DistributedDataParallel(model2, device_ids=device_ids(model2))"))),
    # the training that starts over (set_epoch's epoch goes back) arms the checks again and checks
    # the reused optimizer again: its bare head is found there
    "restarted-training": (dict(after=_REUSED.format("torch.nn.Linear(1, 1)")),
                           dict(after=_REUSED.format("DistributedDataParallel(torch.nn.Linear(1, 1))"))),
    # each process loads its own weights after training (unet_nb: the best weights by the loss of
    # its own half of a sharded validation loader); the near miss reloads the same on all
    "diverged-at-exit": (dict(after=_RELOAD.format("Net().state_dict() if get_rank() == 1 else ")),
                         dict(after=_RELOAD.format(""))),
    # every process writes one file after training through plain open() (ddpm's sample images
    # through PIL); the near miss writes it on the main process only, and a file per process
    "shared-write": (dict(after=_WRITE.format("", '"out.txt"')),
                     dict(after=_WRITE.format("if get_rank() == 0:\n    ", '"out.txt"')
                           + _WRITE.format("", 'f"out_{get_rank()}.txt"'))),
}

# both checks at exit in one program (not a trigger: two gaps), for the exit status under strict;
# its file is written by torch.save (torch's C++ writer, not open)
AT_EXIT = dict(after=_RELOAD.format("Net().state_dict() if get_rank() == 1 else ")
               + "torch.save(model.module.state_dict(), 'out.pt')\n")

# the check whose name a trigger's finding carries (the iterable case is an unsharded loader)
CHECK = {**{name: name for name in CASES}, "unsharded-iterable": "unsharded-loader",
         "second-training": "unwrapped-parameters", "restarted-training": "unwrapped-parameters"}

# the slot whose line a finding names
WHERE = {"unwrapped-parameters": "optimizer = ", "unsharded-loader": "train_loader = ",
         "unsharded-iterable": "train_loader = ", "same-order": "train_loader = ",
         "diverged-parameters": "optimizer = ", "uneven-batches": "train_loader = ",
         "missing-step": "if get_rank() == 0: ", "second-training": "optimizer2 = ",
         "restarted-training": "optimizer = ",
         "diverged-at-exit": "model = DistributedDataParallel(", "shared-write": "with open("}


def slots(name: str) -> dict:
    if name == "correct":
        return dict(CORRECT)
    if name == "at-exit":
        return {**CORRECT, **AT_EXIT}
    check, near = name[:-len("-near")], True
    if not name.endswith("-near"):
        check, near = name, False
    return {**CORRECT, **CASES[check][near]}


def program(name: str) -> str:
    return TEMPLATE.format(**slots(name))


def gap_line(name: str) -> int:
    """The 1-based line of ``program(name)`` that its finding names."""
    lines = program(name).splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.lstrip().startswith(WHERE[name]))


NAMES = ["correct", *CASES, *(f"{name}-near" for name in CASES)]
