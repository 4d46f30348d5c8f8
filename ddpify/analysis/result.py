"""What trains in one module: its syntax facts and what the analyses found from them, built once.

`analyse(module)` runs the analyses in order, each given what it needs from those before it:
which models train and where they are wrapped or sharded (`models.find`, with
`fsdp.place_shard` under `--strategy fsdp`), which loaders feed training (`loaders.find`),
which loops evaluate (`evaluation.find`), which counts of a sharded loader's batches the program
divides by (`counts.find`). It returns them composed in one frozen `Analysis`,
which the driver hands every rewrite, as LibCST hands a codemod its frozen `CodemodContext`:

    analysis = analyse(module, options)
    analysis.facts.calls            # the syntax (ddpify.syntax.facts)
    analysis.models.wrapped         # the findings
    analysis.loaders.training

Nothing is assigned after construction, and nothing here depends on which rewrites the user
selected: a rewrite that adapts to another asks that one (`wrap_model.wrapped_refs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import libcst as cst

from ddpify.analysis import counts, evaluation, fsdp, loaders, models
from ddpify.analysis.counts import Count
from ddpify.analysis.evaluation import EvalLoop
from ddpify.analysis.loaders import Loaders
from ddpify.analysis.models import Models
from ddpify.syntax.facts import Facts, Files


@dataclass(frozen=True)
class Analysis:
    """The facts of one module and the analyses' findings, which the rewrites read."""

    facts: Facts  # the syntax: calls, loops, assignments, data flow
    models: Models  # the models that train, where each is wrapped (or sharded), the names that hold it
    loaders: Loaders  # the loaders that feed training and their epoch loops
    evaluation: tuple[EvalLoop, ...]  # evaluation loops over loaders the training leaves whole
    counts: tuple[Count, ...] = ()  # counts of a sharded loader's batches, lowered, that the program divides by


def analyse(module: cst.Module, fsdp_strategy: bool = False, program: Files | None = None,
            facts: Facts | None = None) -> Analysis:
    """The analyses of `module` (for the merged module of a `program`, which statements are
    whose); under FSDP2 (`fsdp_strategy`) each sharding is placed before the optimizers over it
    are built, before the names that hold the model are followed from that place. `facts`: those
    of `module`, where the caller has them already."""
    facts = Facts(module, program) if facts is None else facts
    found = models.find(facts, partial(fsdp.place_shard, facts) if fsdp_strategy else None)
    fed = loaders.find(facts, found)
    return Analysis(facts, found, fed, tuple(evaluation.find(facts, found, fed)), counts.find(facts, fed))
