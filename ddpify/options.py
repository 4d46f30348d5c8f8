"""What the user chose on the command line: plain data that the driver, the rewrites and the
CLI share (it imports nothing of ddpify, so anything may import it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """What the user chose on the command line."""

    only: frozenset[str] | None = None  # run only these rewrites (names), None for all
    skip: frozenset[str] = frozenset()
    find_unused_parameters: bool = False
    sync_batchnorm: bool = False
    strategy: str = "ddp"  # "ddp": DistributedDataParallel; "fsdp": FSDP2's fully_shard
    # the script's command line, where told (`ddpify run`'s ARGS, `ddpify convert --args`): it names the
    # module a computed import loads (`import_module(args.cfg)`); None where unknown
    argv: tuple[str, ...] | None = None

    @property
    def fsdp(self) -> bool:
        return self.strategy == "fsdp"

    def runs(self, name: str) -> bool:
        """Is the rewrite called `name` selected? The options a rewrite is given answer this for
        the selection the driver resolved (`ddpify.rewrites.select`: with what the selected
        rewrites require, without what requires a skipped one)."""
        return (self.only is None or name in self.only) and name not in self.skip
