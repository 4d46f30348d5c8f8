"""The rewrites, in the order they run. Each module's docstring shows its before/after.

Order matters only where one rewrite's edit contains another's (edits compose inside out), and
for the order of statements inserted at the same place:
- `init-distributed` before `wrap-model`: the process group exists before DDP is built;
- `shard-data` before `set-epoch`: `set_epoch` is inserted for the loaders `shard-data` shards;
- `wrap-model` before `unwrap-model`: `.module` is added only where a wrapped model is used;
- `accumulate-no-sync` before `main-process-only`: both may enclose statements in new blocks;
- `shard-eval` before `set-epoch`: an evaluation loop may end an epoch's body, and its
  reductions must come right after it, before the epoch's `end_epoch()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from ddpify.rewrites import (
    accumulate_no_sync,
    agree_stop,
    download_first,
    init_distributed,
    launcher_arg,
    load_map_location,
    local_device,
    main_process_only,
    set_epoch,
    shard_data,
    shard_eval,
    shard_metrics,
    unwrap_model,
    wrap_model,
)


if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options


class RewriteFn(Protocol):
    """The contract of every rewrite module's `rewrite`: read the analysis, record edits (and
    report lines) on `edits`; never transform the tree, never call another rewrite."""

    def __call__(self, analysis: "Analysis", edits: "Edits", options: "Options") -> None: ...


@dataclass(frozen=True)
class Rewrite:
    name: str
    summary: str
    apply: RewriteFn
    doc: str


def _load(module: ModuleType) -> Rewrite:
    return Rewrite(module.NAME, module.SUMMARY, module.rewrite, module.__doc__ or "")


REWRITES: tuple[Rewrite, ...] = tuple(_load(m) for m in (
    launcher_arg,
    init_distributed,
    local_device,
    download_first,
    shard_data,
    wrap_model,
    unwrap_model,
    shard_eval,
    set_epoch,
    accumulate_no_sync,
    agree_stop,
    shard_metrics,
    main_process_only,
    load_map_location,
))

NAMES = frozenset(r.name for r in REWRITES)
