"""unwrap-model: reach the user's own module behind the DistributedDataParallel wrapper.

    hidden = model.init_hidden(bsz)           ->  hidden = model.module.init_hidden(bsz)
    loss = criterion(out.view(-1, model.ntoken))  ->  ... model.module.ntoken ...
    torch.save(model.state_dict(), path)      ->  torch.save(model.module.state_dict(), path)
    torch.save(model, path)                   ->  torch.save(model.module, path)
    model.load_state_dict(best_weights)       ->  model.module.load_state_dict(best_weights)

DDP answers nn.Module's own API (forward, train(), eval(), parameters(), to(), ...) but not
the model's custom methods and attributes. State dicts go through the module so checkpoints
keep the single-GPU key names (no `module.` prefix) and load into a plain model. Only uses
that see the wrapper change: after the wrap in its own function (until the name is rebound to
a new model), in functions the wrapped model is passed to, and `self.x` in the class's methods.
"""

from __future__ import annotations


from ddpify import build
from ddpify import matchers as mt
from ddpify.names import dotted

NAME = "unwrap-model"
SUMMARY = "send custom attributes and state_dict()/load_state_dict() of wrapped models through .module"

STATE = {"state_dict", "load_state_dict"}


def rewrite(facts, edits, options) -> None:
    refs = facts.wrapped_refs
    if not refs:
        return
    for attr in facts.attributes:
        name = attr.attr.value
        if name in mt.MODULE_API and name not in STATE:
            continue
        ref = facts.ref(attr.value)
        model = refs.get(ref) if ref is not None else None  # `model.x`, not `model.fc.x`
        if model is None or not _sees_wrapper(facts, attr, model, ref):
            continue
        owner = facts.module.code_for_node(attr.value)
        why = "checkpoint keys stay as in the single-GPU script" if name in STATE else \
            "DistributedDataParallel does not forward custom attributes"
        edits.replace(attr, lambda node: node.with_changes(
            value=build.module_of(node.value)),
            f"`{owner}.{name}` -> `{owner}.module.{name}` ({why})")
    for call in facts.calls:  # `torch.save(model, path)` would pickle the wrapper
        saved = mt.positional(call, 0)
        if facts.qualify(call.func) == "torch.save" and saved is not None and dotted(saved.value):
            ref = facts.ref(saved.value)
            if ref in refs and _sees_wrapper(facts, saved.value, refs[ref], ref):
                edits.replace(saved.value, build.module_of,
                              f"torch.save saves `{dotted(saved.value)}.module`, the model itself: a pickled "
                              "DistributedDataParallel would not load without a process group")


def _sees_wrapper(facts, attr, model, ref) -> bool:
    """In the wrap's own function: after the wrap and before the name is bound to a new model."""
    if facts.scope(attr) is not facts.scope(model.anchor):
        return True
    if not facts.before(model.anchor, attr) or facts.is_inside(attr, model.anchor):
        return False
    for target, value, stmt in facts.writes(ref):
        if facts.before(model.anchor, stmt) and facts.before(stmt, attr) \
                and not facts.is_inside(stmt, model.anchor) and not facts.is_inside(attr, stmt) \
                and not mt.references(value, model.name):
            return False
    return True

