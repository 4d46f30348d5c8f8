"""The rewrites, in the order they run. Each module's docstring shows its before/after.

Order matters only where one rewrite's edit contains another's (edits compose inside out), and
for the order of statements inserted at the same place:
- `init-distributed` before `wrap-model`: the process group exists before DDP is built;
- `shard-data` before `set-epoch`: `set_epoch` is inserted for the loaders `shard-data` shards;
- `wrap-model` before `unwrap-model`: `.module` is added only where a wrapped model is used;
- `accumulate-no-sync` before `main-process-only`: both may enclose statements in new blocks;
- `shard-eval` before `set-epoch`: an evaluation loop may end an epoch's body, and its
  reductions must come right after it, before the epoch's `end_epoch()`.

A rewrite that builds on another's edits names it in `REQUIRES` (`unwrap-model` and
`accumulate-no-sync` on `wrap-model`: `.module` and `no_sync()` exist only on the wrapper), and
`select` resolves a selection with it: `--only unwrap-model` runs `wrap-model` too, and
`--skip wrap-model` skips the rewrites that require it. A rewrite that only adapts to another
(`main-process-only` leaves out a barrier where set-epoch's `end_epoch()` follows) asks whether that
one runs (`options.runs`), which the driver answers for the resolved selection.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from ddpify.rewrites import (
    accumulate_no_sync,
    agree_clock,
    agree_plateau,
    agree_search,
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
    requires: frozenset[str] = frozenset()  # the rewrites whose edits this one builds on (earlier ones)


def _load(module: ModuleType) -> Rewrite:
    return Rewrite(module.NAME, module.SUMMARY, module.rewrite, module.__doc__ or "",
                   frozenset(getattr(module, "REQUIRES", ())))


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
    agree_plateau,
    agree_clock,
    agree_search,
    shard_metrics,
    main_process_only,
    load_map_location,
))

NAMES = frozenset(r.name for r in REWRITES)


def select(only: frozenset[str] | None = None, skip: frozenset[str] = frozenset()) -> tuple[Rewrite, ...]:
    """The rewrites a selection runs, in order: those of `only` (None: all) with the rewrites they
    require, less those of `skip` and the rewrites that require a skipped one (with nothing to
    build on, they would change nothing)."""
    chosen = set(NAMES if only is None else only)
    for rewrite in reversed(REWRITES):  # a requirement runs earlier: one pass from the end pulls all in
        if rewrite.name in chosen:
            chosen |= rewrite.requires
    dropped = set(skip)
    for rewrite in REWRITES:
        if rewrite.requires & dropped:
            dropped.add(rewrite.name)
    return tuple(r for r in REWRITES if r.name in chosen - dropped)
