"""load-map-location: load checkpoints onto this process's device.

    checkpoint = torch.load(args.resume)
->
    checkpoint = torch.load(args.resume, map_location=local_device())

Without `map_location`, tensors saved from GPU 0 load onto GPU 0 in every process. An
existing `map_location` is kept (`"cuda"` already means this process's GPU once
`init_distributed_mode()` has run); `weights_only` is never touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
        if mt.keyword(call, "map_location") or mt.positional(call, 1):
            continue
        edits.replace(call, lambda node: build.append_arg(node, build.keyword("map_location", "local_device()")),
                      "torch.load maps to this process's device")
        edits.add_import("ddpify_runtime", "local_device")
