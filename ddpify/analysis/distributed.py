"""Is the script already distributed? The one answer `convert` (which leaves such a script
unchanged) and `check` (which checks only such scripts) both use.

A script is distributed when it *does* something distributed, not when it merely imports it:
- it calls anything of `torch.distributed` (`init_process_group`, a collective, `get_rank`,
  the launcher API `torch.distributed.run` / `torch.distributed.launcher`, FSDP), except
  `torch.distributed.is_available()`, which asks what the build supports;
- or it wraps in `DistributedDataParallel` or builds a `DistributedSampler`, called directly,
  picked by a conditional expression (`(DistributedSampler if ddp else RandomSampler)(ds)`)
  or handed to a call (`functools.partial(DDP, device_ids=...)`).

Before (two answers): `import torch.distributed as dist` and no call of it was distributed for
`check` (it ran the rules) and not for `convert` (it converted the script).
After: neither; both treat it as a single-process script.

Near misses, not distributed: the import alone, `dist.is_available()` alone,
`torch.multiprocessing.spawn` alone (Hogwild training shares one model without a group),
a name of the script's own that merely contains "distributed".
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis.models import DDP
from ddpify.syntax.facts import Facts

SAMPLER = "torch.utils.data.DistributedSampler"
WRAPPERS = frozenset({DDP, SAMPLER})
NOT_DISTRIBUTED_CALLS = frozenset({"torch.distributed.is_available"})


def is_distributed(facts: Facts) -> bool:
    """Does the script call torch.distributed, or wrap in DDP, or build a DistributedSampler?"""
    return any(_distributed_call(facts, call) for call in facts.calls)


def _distributed_call(facts: Facts, call: cst.Call) -> bool:
    func = call.func
    callees = [func.body, func.orelse] if isinstance(func, cst.IfExp) else [func]
    if any(_distributed_name(facts.qualify(c), called=True) for c in callees):
        return True
    return any(_distributed_name(facts.qualify(a.value), called=False) for a in call.args
               if isinstance(a.value, (cst.Name, cst.Attribute)))


def _distributed_name(name: str | None, called: bool) -> bool:
    if name is None:
        return False
    if name in WRAPPERS:
        return True
    return called and name.startswith("torch.distributed.") and name not in NOT_DISTRIBUTED_CALLS
