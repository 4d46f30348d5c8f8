"""load-map-location: load checkpoints onto this process's device.

    checkpoint = torch.load(args.resume)
->
    checkpoint = torch.load(args.resume, map_location=local_device())

Without `map_location`, tensors saved from GPU 0 load onto GPU 0 in every process. An
existing `map_location` is kept (`"cuda"` already means this process's GPU once
`init_distributed_mode()` has run), in the call or in a mapping it unpacks
(`torch.load(path, **load_args)` with `load_args = dict(map_location="cpu")`); where the
mapping's keys are not known, `map_location` becomes its default (`build.add_keyword`):

    checkpoint = torch.load(path, **load_args)
->
    checkpoint = torch.load(path, **{"map_location": local_device(), **load_args})

`weights_only` is never touched.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from ddpify.output import build
from ddpify.syntax import matchers as mt

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "load-map-location"
SUMMARY = "give torch.load a map_location to this process's device"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for call in facts.calls_to("torch.load"):
        given = facts.keyword_given(call, "map_location")
        if given.values or mt.positional(call, 1):
            continue
        edits.replace(call, partial(_map_location, spread=given.spread), "torch.load maps to this process's device")
        edits.add_import("ddpify_runtime", "local_device")


def _map_location(node: cst.Call, spread: bool) -> cst.Call:
    return build.add_keyword(node, "map_location", "local_device()", spread)
