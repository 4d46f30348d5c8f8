"""What trains in one module: its syntax facts plus what the analyses found from them.

`Facts` (ddpify.syntax.facts) knows the syntax: calls, loops, assignments, data flow. Each analysis
takes its inputs explicitly and returns its findings: which models train and where they are
wrapped (`models.find(facts)`), which loaders feed training (`loaders.find(facts, models)`),
which loops evaluate (`evaluation.find(facts, models, loaders, wrapped_refs)`). The driver runs
them in that order (`ddpify.convert.analyse`) and stores the findings here for the rewrites.
This module imports those analyses for their types only; none of them imports it.
"""

from __future__ import annotations

from ddpify.analysis.evaluation import EvalLoop
from ddpify.syntax.facts import Facts, Ref
from ddpify.analysis.loaders import Loaders
from ddpify.analysis.models import Model, Models


class Analysis(Facts):
    """The facts of one module and the analyses' findings, which the rewrites read."""

    models: Models  # the models that train and where each is wrapped (or sharded)
    wrapped_refs: dict[Ref, Model]  # names that hold a wrapper once the wraps have run; none
    # when wrap-model is not selected (`.module`, `no_sync()` and bare forwards depend on this)
    loaders: Loaders  # the loaders that feed training and their epoch loops
    evaluation: list[EvalLoop]  # evaluation loops over loaders the training leaves whole
