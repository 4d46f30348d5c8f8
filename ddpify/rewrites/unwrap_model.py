"""unwrap-model: reach the user's own module behind the DistributedDataParallel wrapper.

    hidden = model.init_hidden(bsz)           ->  hidden = model.module.init_hidden(bsz)
    loss = criterion(out.view(-1, model.ntoken))  ->  ... model.module.ntoken ...
    torch.save(model.state_dict(), path)      ->  torch.save(model.module.state_dict(), path)
    torch.save(model, path)                   ->  torch.save(model.module, path)
    model.load_state_dict(best_weights)       ->  model.module.load_state_dict(best_weights)

DDP answers nn.Module's own API (forward, train(), eval(), parameters(), to(), ...) but not
the model's custom methods and attributes. State dicts go through the module so checkpoints
keep the single-GPU key names (no `module.` prefix) and load into a plain model. Only uses
that see the wrapper change: after the wrap in its own function, in functions the wrapped
model is passed to, and `self.x` in the class's methods. Where the name may hold the bare
model too (rebound after the wrap: `model = torch.load(path)`, `model = model.module`; a
parameter that some callers pass the wrapper and others the model), the use goes through the
runtime's `unwrap(...)`, which accepts both:

    model = torch.load("best.pt")             ->  model = torch.load("best.pt")
    model.init_hidden(1)                      ->  unwrap(model).init_hidden(1)

A script that used `nn.DataParallel` saved checkpoints with `module.` keys; the converted one
saves without them, and loads both:

    model.load_state_dict(ckpt["model"])      ->  model.module.load_state_dict(without_module_prefix(ckpt["model"]))
"""

from __future__ import annotations

from ddpify import build
from ddpify import matchers as mt
from ddpify.models import WRAPPER, holds_wrapper
from ddpify.names import dotted

NAME = "unwrap-model"
SUMMARY = "send custom attributes and state_dict()/load_state_dict() of wrapped models through .module"

STATE = {"state_dict", "load_state_dict"}


def rewrite(facts, edits, options) -> None:
    if not facts.wrapped_refs:
        return
    for attr in facts.attributes:
        name = attr.attr.value
        if name in mt.MODULE_API and name not in STATE:
            continue
        holds = holds_wrapper(facts, attr.value)  # `model.x`, not `model.fc.x`
        if holds is None:
            continue
        owner = facts.code(attr.value)
        why = "checkpoint keys stay as in the single-GPU script" if name in STATE else \
            "DistributedDataParallel does not forward custom attributes"
        edits.replace(attr, lambda node, holds=holds: node.with_changes(value=build.bare_model(edits, node.value, holds)),
                      f"`{owner}.{name}` -> `{_bare_text(owner, holds)}.{name}` ({why})")
    for call in facts.calls:  # a DataParallel script's old checkpoints have `module.` keys
        if mt.is_method_call(call, "load_state_dict") and call.args:
            model = facts.wrapped_refs.get(facts.ref(call.func.value))
            if model is not None and model.dataparallel is not None:
                edits.replace(call.args[0], lambda arg: arg.with_changes(value=build.call("without_module_prefix",
                                                                                          arg.value)),
                              "checkpoints of the DataParallel script have `module.` keys: without_module_prefix "
                              "loads them as well as the new ones")
                edits.add_import("ddpify_runtime", "without_module_prefix")
    for call in facts.calls:  # `torch.save(model, path)` would pickle the wrapper
        saved = mt.positional(call, 0)
        if facts.qualify(call.func) == "torch.save" and saved is not None and dotted(saved.value):
            holds = holds_wrapper(facts, saved.value)
            if holds is not None:
                edits.replace(saved.value, lambda node, holds=holds: build.bare_model(edits, node, holds),
                              f"torch.save saves `{_bare_text(dotted(saved.value), holds)}`, the model itself: a "
                              "pickled DistributedDataParallel would not load without a process group")


def _bare_text(owner: str, holds: str) -> str:
    return f"{owner}.module" if holds == WRAPPER else f"unwrap({owner})"
