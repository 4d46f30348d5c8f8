"""load-map-location: load checkpoints onto this process's device.

    checkpoint = torch.load(args.resume)
->
    checkpoint = torch.load(args.resume, map_location=local_device())

Without `map_location`, tensors saved from GPU 0 load onto GPU 0 in every process. An
existing `map_location` is kept (`"cuda"` already means this process's GPU once
`init_distributed_mode()` has run), written in the call or in a mapping it unpacks
(`torch.load(path, **load_args)` with `load_args = dict(map_location="cpu")`); where the
mapping's keys are not known, `map_location` becomes its default (`build.add_keyword`):

    checkpoint = torch.load(path, **load_args)
->
    checkpoint = torch.load(path, **{"map_location": local_device(), **load_args})

None given is no map: `map_location=None` becomes `local_device()`, and a name that may hold
None (a parameter of that default) is `local_device()` where it does:

    def load_checkpoint(path, map_location=None):
        return torch.load(path, map_location=map_location)
->
    def load_checkpoint(path, map_location=None):
        return torch.load(path, map_location=map_location if map_location is not None else local_device())

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
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "load-map-location"
SUMMARY = "give torch.load a map_location to this process's device"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for call in facts.calls_to("torch.load"):
        given = facts.keyword_given(call, "map_location")
        place = mt.positional(call, 1)
        values = [place.value] if place is not None else given.values
        for value in values:
            if mt.is_name(value, "None"):
                edits.replace(value, lambda node: cst.parse_expression("local_device()"),
                              "torch.load maps to this process's device (map_location=None loads where it was saved)")
                edits.add_import("ddpify_runtime", "local_device")
            elif _none_by_default(facts, value):
                edits.replace(value, lambda node: cst.parse_expression(
                    f"{cst.Module([]).code_for_node(node)} if {cst.Module([]).code_for_node(node)} is not None "
                    "else local_device()"), "torch.load maps to this process's device where no map_location "
                    "is given (None, its default, loads where it was saved)")
                edits.add_import("ddpify_runtime", "local_device")
        if values:
            continue
        edits.replace(call, partial(_map_location, spread=given.spread), "torch.load maps to this process's device")
        edits.add_import("ddpify_runtime", "local_device")


def _map_location(node: cst.Call, spread: bool) -> cst.Call:
    return build.add_keyword(node, "map_location", "local_device()", spread)


def _none_by_default(facts: Facts, value: cst.BaseExpression) -> bool:
    """Is `value` a name that may hold None: a parameter whose default is None (cyclegan's
    `def load_checkpoint(ckpt_path, map_location=None): torch.load(ckpt_path,
    map_location=map_location)`, called without it: 25b; decision 0206), or a name bound to None?"""
    ref = facts.ref(value) if isinstance(value, cst.Name) else None
    if ref is None:
        return False
    func = ref.scope
    params = func.params if isinstance(func, cst.FunctionDef) else None
    default = next((p.default for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                    if p.name.value == ref.name), None) if params is not None else None
    return (default is not None and mt.is_name(default, "None")) or \
        any(mt.is_name(source, "None") for source in facts.sources(ref))
