"""What trains: the facts of one script plus the models and loaders found from them.

`Facts` (ddpify.facts) knows the syntax: calls, loops, assignments, data flow. `Analysis`
adds, each computed on first use, which models train and where they are wrapped
(ddpify.models), which loaders feed training (ddpify.loaders) and which loops evaluate
(ddpify.evaluation). Those modules read `Facts`; this one ties them together, so no module
imports one that imports it back.
"""

from __future__ import annotations

from functools import cached_property

from ddpify import evaluation, fsdp, loaders, models
from ddpify.facts import Facts, Ref


class Analysis(Facts):
    def __init__(self, module, wraps: bool = True, fsdp: bool = False) -> None:
        super().__init__(module)
        self.wraps = wraps  # is wrap-model selected? Without it no name holds a wrapper.
        self.fsdp = fsdp  # --strategy fsdp: models are sharded, and optimizers built after that

    @cached_property
    def models(self) -> models.Models:
        """The models that train and where each is wrapped (or sharded)."""
        found = models.find(self)
        for model in found.wrapped if self.fsdp else ():
            fsdp.place_shard(self, model)
        return found

    @cached_property
    def wrapped_refs(self) -> dict[Ref, models.Model]:
        """The names that hold a wrapper once the wraps have run (none when nothing is wrapped:
        `.module`, `no_sync()` and bare forwards depend on this)."""
        return self.models.refs if self.wraps else {}

    @cached_property
    def loaders(self) -> loaders.Loaders:
        """The loaders that feed training and their epoch loops."""
        return loaders.find(self)

    @cached_property
    def evaluation(self) -> list[evaluation.EvalLoop]:
        """The evaluation loops over loaders the training leaves whole: split, or kept whole and why."""
        return evaluation.find(self)
