"""What trains: the facts of one script plus the models and loaders found from them.

`Facts` (ddpify.facts) knows the syntax: calls, loops, assignments, data flow. `Analysis`
adds, each computed on first use, which models train and where they are wrapped
(ddpify.models) and which loaders feed training (ddpify.loaders). Those two modules read
`Facts`; this one ties them together, so no module imports one that imports it back.
"""

from __future__ import annotations

from functools import cached_property

from ddpify import loaders, models
from ddpify.facts import Facts, Ref


class Analysis(Facts):
    @cached_property
    def models(self) -> models.Models:
        """The models that train and where each is wrapped."""
        return models.find(self)

    @cached_property
    def wrapped_refs(self) -> dict[Ref, models.Model]:
        """The names that hold a wrapper once the wraps have run."""
        return self.models.refs

    @cached_property
    def loaders(self) -> loaders.Loaders:
        """The loaders that feed training and their epoch loops."""
        return loaders.find(self)
