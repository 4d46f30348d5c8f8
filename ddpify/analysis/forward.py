"""What a model's `forward` uses: which outputs are heads of their own, and which parameters
some training steps may leave without a gradient.

DDP (without `find_unused_parameters=True`) waits, after every forward that records a graph,
for a gradient of every parameter; one that gets none stops training at the next step with
"Expected to have finished reduction in the prior iteration". What the source shows of that:

    self.bn1 = nn.BatchNorm2d(64)              # built, never used in forward
    self.dummy = nn.Parameter(torch.empty(0))  # read only for `.device`
    if self.use_aux: out = out + self.aux(h)   # a sub-module used on some paths only
    for block in self.blocks: ...; break       # a loop over sub-modules that may stop early
    return self.adv(h), self.cls(h)            # heads: a step may read one of them only
    self.codebook.weight = nn.Parameter(w / n) # (in forward, here or in a sub-module) a parameter replaced
    out = self.relu(self.bn1(x))               # an output read on some paths only
    out = self.conv(out if self.equal else x)  #   (a wide ResNet's block: bn1 idles where in != out)

The classes of the sub-modules a model builds are read as its own (`self.block1 =
NetworkBlock(n, 16, 32, BasicBlock)`: `BasicBlock`'s forward too). Only classes of the program
ddpify reads count; a model whose class is elsewhere shows nothing here.
"""

from __future__ import annotations

import itertools

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.module_classes import is_module_class
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref, param_names
from ddpify.syntax.names import dotted

# torch.nn modules without parameters: never the reason a gradient is missing
PARAMETERLESS = {
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "ReLU", "ReLU6", "LeakyReLU", "GELU",
    "SiLU", "ELU", "SELU", "CELU", "Mish", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Softplus", "Hardtanh",
    "Hardswish", "Hardsigmoid", "Identity", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Upsample", "PixelShuffle", "ZeroPad2d", "ConstantPad2d",
    "ReflectionPad2d", "Threshold", "Softsign", "Tanhshrink", "LogSigmoid",
    # torch's losses (their weights are buffers): `self.adversarial_loss = nn.BCELoss()` kept by a discriminator
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "HuberLoss",
    "SmoothL1Loss", "CTCLoss", "PoissonNLLLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
    "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "SoftMarginLoss",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss",
}
METADATA = {"device", "dtype", "shape", "size", "ndim", "requires_grad", "is_cuda"}


def classes_of(facts: Facts, built: list[cst.CSTNode]) -> list[cst.ClassDef]:
    """The classes of this file instantiated in `built` (statements or expressions), also through a
    name that holds a program module (`self.GAN_type.Discriminator()`: `Facts.module_classes`)."""
    calls = [c for node in built for c in facts.calls_in(node)]
    names = {dotted(c.func) for c in calls}
    found = [facts.classes[n] for n in sorted(names & facts.classes.keys())]
    return found + [cls for c in calls for cls in facts.module_classes(c.func) if cls not in found]


def wrapped_values(facts: Facts, expr: cst.BaseExpression, depth: int = 4) -> list[cst.CSTNode]:
    """What a module handed to a wrap (`DDP(model)`) may be, with the expressions it comes from: for a
    name of a function, the values that reach the wrap (`Facts.reaching_values`), a move of a name
    followed to what reaches that name (`model = model.to(device)`: the `model` before it), each
    with its origins; else `expr` and all its origins (`Facts.origins`, every store of a name). A
    sub-module taken out of a built model before the wrap (`model = get_model(cfg)`, then `model =
    model.backbone`) is no longer taken for the whole model."""
    values = facts.reaching_values(expr) if isinstance(expr, cst.Name) and depth > 0 else None
    if values is None:
        return [expr, *facts.origins(expr)]
    found: list[cst.CSTNode] = []
    for value in values:
        moved = value.func.value if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and facts.self_returning(value) else None
        found += wrapped_values(facts, moved, depth - 1) if isinstance(moved, cst.Name) else [value, *facts.origins(value)]
    return found


def heads(facts: Facts, cls: cst.ClassDef) -> set[int] | None:
    """Positions of `forward`'s outputs computed by a sub-module that no other output uses
    (`return self.adv(h), self.cls(h)`; names assigned in `forward` are followed, on the path to the
    `return` where a branch assigns them), or that read a parameter of the module no other output
    reads (`return action, Normal(action, self.log_var.exp())`: a policy's distribution), or None
    without a `forward`."""
    forward = _method(facts, cls, "forward")
    if forward is None:
        return None
    found = set()
    held = {name for target, value, _ in _init_writes(facts, cls) if (name := dotted(target)) and name.startswith("self.")
            and name.count(".") == 1 and _has_parameters(facts, value)}
    for value in facts.returned(forward):
        if isinstance(value, cst.Tuple):
            exprs = [_resolved(facts, forward, e.value) for e in value.elements]
            used = [_self_calls(e) | _parameters_read(facts, e, held) for e in exprs]
            for i, mine in enumerate(used):
                others = [e for j, e in enumerate(exprs) if j != i]
                fed = isinstance(value.elements[i].value, cst.Name) and any(
                    facts.references(e, value.elements[i].value.value) for e in others)
                if mine - set().union(*used[:i], *used[i + 1:]) and not fed:  # `loss` computed from `logits`
                    found.add(i)
    return found


def dict_heads(facts: Facts, cls: cst.ClassDef) -> set[str]:
    """The keys of a dict display `forward` returns whose values are computed by a sub-module that
    no other value uses (`return {"logits": self.cls(h), "aux": self.aux(h)}`), as `heads` finds
    the positions of a tuple's."""
    forward = _method(facts, cls, "forward")
    found: set[str] = set()
    for value in facts.returned(forward) if forward is not None else ():
        if not isinstance(value, cst.Dict):
            continue
        items = [(e.key.evaluated_value if isinstance(e.key, cst.SimpleString) else None,
                  _self_calls(_resolved(facts, forward, e.value))) for e in value.elements if isinstance(e, cst.DictElement)]
        for i, (key, mine) in enumerate(items):
            if isinstance(key, str) and mine - set().union(*(used for j, (_, used) in enumerate(items) if j != i)):
                found.add(key)
    return found


def idle_parameters(facts: Facts, cls: cst.ClassDef, depth: int = 4, seen: set | None = None) -> str | None:
    """Why some parameters of `cls`, or of the sub-modules of the program's classes it builds, may
    get no gradient in a step (as the source shows it), or None."""
    seen = set() if seen is None else seen
    if cls in seen:
        return None
    seen.add(cls)
    init = _method(facts, cls, "__init__")
    forward = _method(facts, cls, "forward")
    if init is None or forward is None:
        return None
    reached = _reached(facts, cls, forward)
    replaced = _replaced_parameter(facts, cls)
    if replaced is not None:
        return replaced
    held = set()
    whole = _reads_every_parameter(facts, reached)
    for target, value, _ in _init_writes(facts, cls):
        name = dotted(target)
        if not name or not name.startswith("self.") or name.count(".") != 1 or not _has_parameters(facts, value):
            continue
        held.add(name)
        if (why := _idle_part(facts, cls, forward, reached, name, value, whole)) is not None:
            return why
    dead = _output_read_on_some_paths(facts, cls, reached, held) or _discarded_output(facts, cls, reached) \
        or _outputs_kept_in_part(facts, reached, held)
    if dead is not None:
        return dead
    for sub in _sub_module_classes(facts, cls) if depth else ():
        if (found := idle_parameters(facts, sub, depth - 1, seen)) is not None:
            return f"{found} (`{sub.name.value}`, a sub-module of `{cls.name.value}`)"
    return None


def never_used_in_forward(facts: Facts, cls: cst.ClassDef, depth: int = 4, seen: set | None = None) -> set[str]:
    """The attributes (`X` of `self.X`) that `__init__` of `cls`, or of a sub-module class of it
    (`depth` deep), stores with parameters and its forward never reads (`idle_parameters`' "never
    used in forward()": `ElasticBlock.hidden_channels`, an `nn.Parameter` that only a penalty method
    reads). Empty where the forward reads its module's parameters as a whole."""
    seen = set() if seen is None else seen
    if cls in seen:
        return set()
    seen.add(cls)
    found: set[str] = set()
    init, forward = _method(facts, cls, "__init__"), _method(facts, cls, "forward")
    if init is not None and forward is not None:
        reached = _reached(facts, cls, forward)
        if not _reads_every_parameter(facts, reached):
            for target, value, _ in _init_writes(facts, cls):
                name = dotted(target)
                if name and name.startswith("self.") and name.count(".") == 1 and _has_parameters(facts, value) \
                        and not (_uses(facts, cls, reached, name) or _holders_uses(facts, cls, reached, name)):
                    found.add(name[len("self."):])
    for sub in _sub_module_classes(facts, cls) if depth else ():
        found |= never_used_in_forward(facts, sub, depth - 1, seen)
    return found


def _idle_part(facts: Facts, cls: cst.ClassDef, forward: cst.FunctionDef, reached: list[cst.FunctionDef],
               name: str, value: cst.BaseExpression, whole: bool) -> str | None:
    """Why the sub-module `__init__` stores at `name` (`self.X`, made by `value`) may get no
    gradient in a step, or None. `whole`: forward reads the module's parameters as a whole, so one
    it never calls by name runs there all the same."""
    uses = _uses(facts, cls, reached, name) or _holders_uses(facts, cls, reached, name)
    if not uses:
        return None if whole else f"`{name}` is never used in forward()"
    if all(isinstance(facts.parent(u), cst.Attribute) and facts.parent(u).attr.value in METADATA for u in uses):
        return f"`{name}` is read in forward() for its {facts.parent(uses[0]).attr.value} only"
    made_under = _made_under(facts, cls, value)
    scopes = [facts.scope(u) for u in uses]
    if all(scope in reached for scope in scopes) and all(
            _on_some_paths(facts, cls, u, uses, scope, made_under=made_under) for u, scope in zip(uses, scopes)):
        # (also in a method forward calls: `encode()` runs `self.deri_net` under `if not self.cfg.delay_only:`)
        helpers = [f"{m.name.value}()" for m in dict.fromkeys(scopes) if m is not forward]
        return f"`{name}` is used in forward() on some paths only" if not helpers else \
            f"`{name}` is used on some paths only of {', '.join(helpers)}, which forward() calls"
    if any(_iterated_until_break(facts, u) for u in uses):
        return f"`{name}` is iterated in forward() by a loop that may stop early (`break`)"
    if all(facts.grad_disabled(u) or _detached(facts, u) for u in uses) and not _frozen(facts, cls, name):
        return f"`{name}` runs in forward() without gradients only (`torch.no_grad()` or `.detach()`)"
    picked = _picked_by_key(facts, value, uses, forward)
    if picked is not None:
        return f"`{name}` is a container of modules of which forward() runs the one a key picks (`{picked}`)"
    return None


def _output_read_on_some_paths(facts: Facts, cls: cst.ClassDef, reached: list[cst.FunctionDef],
                               held: set[str]) -> str | None:
    """`out = self.relu(self.bn1(x))` whose value the statements after it read on some paths only
    (`self.conv1(out if self.equal else x)`), or never: `self.bn1` then gets no gradient in the
    steps that take the other path. Not in a loop (a later pass may read it)."""
    for func in reached:
        for target, value, stmt in facts.writes_in(func):
            if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or not isinstance(target, cst.Name):
                continue
            subs = sorted({dotted(c.func) for c in facts.calls_in(value)} & held)
            if not subs or any(isinstance(a, (cst.For, cst.While)) for a in _ancestors_within(facts, stmt, func)):
                continue
            reads = _reads_after(facts, target.value, facts.statement(stmt), func, small=stmt)
            if all(_on_some_paths(facts, cls, r, reads, func, after=stmt) for r in reads):
                return f"the output of `{subs[0]}` (`{target.value}`) is read in {func.name.value}() on some paths only"
    return None


def _discarded_output(facts: Facts, cls: cst.ClassDef, reached: list[cst.FunctionDef]) -> str | None:
    """`_ = self.backbone(x)`, or the call as a statement of its own, in forward: a sub-module whose
    output nothing reads (a forward hook on one of its layers keeps that layer's output instead), so
    its layers after that one get no gradient. The sub-module is anything `__init__` stores on `self`
    but a literal or a parameterless torch layer, also one element of an unpacking (`self.backbone,
    self.layer = get_backbone(name)`: what a helper returns, which ddpify cannot see)."""
    stored = set()
    for target, value, _ in _init_writes(facts, cls):
        elements = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
        if isinstance(value, (cst.BaseString, cst.Integer, cst.Float, cst.Lambda)) or _parameterless(facts, value):
            continue
        stored |= {name for e in elements if (name := dotted(e)) and name.startswith("self.") and name.count(".") == 1}
    for func in reached:
        for stmt in facts.findall(func, cst.SimpleStatementLine):
            small = stmt.body[0] if len(stmt.body) == 1 and facts.scope(stmt) is func else None
            call = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            name = dotted(call.func) if isinstance(call, cst.Call) else None
            if name not in stored or _method(facts, cls, name.split(".", 1)[1]) is not None:
                continue
            if isinstance(small, cst.Expr) or len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                    and not _reads_after(facts, small.targets[0].target.value, stmt, func):
                return f"the output of `{name}` is never read in {func.name.value}()"
    return None


def _outputs_kept_in_part(facts: Facts, reached: list[cst.FunctionDef], held: set[str]) -> str | None:
    """A loop in forward over the layers of a container of modules (`for i in range(len(self.layers)):`,
    `for layer in self.layers:`) that appends what they give to a list (`h_n.append(hn)`), of which
    forward then reads some items only, at fixed places (`h_n[-1]`): the other layers' outputs are
    dropped, and their parameters get no gradient (a GRU stack run on the same input, the last
    hidden state kept)."""
    for func in reached:
        for loop in facts.findall(func, cst.For):
            over = {dotted(a) for a in facts.findall(loop.iter, cst.Attribute)} & held
            if not over:
                continue
            for call in facts.findall(loop.body, cst.Call):
                kept = call.func.value if isinstance(call.func, cst.Attribute) and call.func.attr.value == "append" \
                    and isinstance(call.func.value, cst.Name) else None
                if kept is None:
                    continue
                after = [n for n in facts.findall(func, cst.Name, lambda n: n.value == kept.value)
                         if not facts.is_inside(n, loop) and not _bound_here(facts, n) and facts.before(loop, n)]
                if after and all(_fixed_item(facts.parent(n)) for n in after):
                    return (f"forward() keeps the outputs of `{sorted(over)[0]}`'s layers in `{kept.value}` and reads "
                            f"`{facts.code(facts.parent(after[0]))}` of it only")
    return None


def _bound_here(facts: Facts, name: cst.Name) -> bool:
    """Is `name` an assignment's target (`h_n = []`)?"""
    parent = facts.parent(name)
    return isinstance(parent, cst.AssignTarget)


def _fixed_item(node: cst.CSTNode) -> bool:
    """`h_n[-1]`, `outs[0]`: an item at a place written as a number."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    index = node.slice[0].slice.value
    if isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.Minus):
        index = index.expression
    return isinstance(index, cst.Integer)


def _parameterless(facts: Facts, value: cst.BaseExpression) -> bool:
    """`nn.ReLU()`, `nn.Dropout(p)`: a torch layer without parameters."""
    if not isinstance(value, cst.Call):
        return False
    qualified = facts.qualify(value.func) or ""
    return qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1] in PARAMETERLESS


def _reads_after(facts: Facts, name: str, stmt: cst.CSTNode, func: cst.FunctionDef,
                 small: cst.CSTNode | None = None) -> list[cst.CSTNode]:
    """The reads of `name` in the statements that run after `stmt` in `func`, up to the first one
    that binds it again in the same block (its value's reads included). With `small`, one of the
    statements of the line `stmt`, the ones after it on that line come first (`x = self.features(x);
    x = torch.flatten(x, 1); return self.classifier(x)`)."""
    reads: list[cst.CSTNode] = []
    if isinstance(stmt, cst.SimpleStatementLine) and small in stmt.body:
        for after in stmt.body[stmt.body.index(small) + 1:]:
            if isinstance(after, cst.Assign) and any(mt.is_name(t.target, name) for t in after.targets):
                return reads + facts.references(after.value, name)
            reads += facts.references(after, name)
    node = stmt
    while node is not func:
        parent = facts.parent(node)
        if parent is None:
            break
        if isinstance(getattr(parent, "body", None), (list, tuple)) and node in parent.body:
            for after in facts.following(node):
                rebinds = [a for a in facts.findall(after, cst.Assign) if facts.statement(a) is after
                           and any(mt.is_name(t.target, name) for t in a.targets)]
                if rebinds:
                    reads += facts.references(rebinds[0].value, name)
                    return reads
                reads += facts.references(after, name)
        node = parent
    return reads


def _sub_module_classes(facts: Facts, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """The module classes of the program that `__init__` (and the methods it calls through `self.`)
    names: built (`self.fc = Head()`) or handed on (`NetworkBlock(n, 16, 32, BasicBlock)`); and
    those of the modules it is handed and keeps where the program builds it (`kept_modules`: a
    model factory's `ACLAdapter(ACL(cfg))`, whose `__init__` keeps `self.model = acl_model` and whose
    forward runs it: `ACL` is its sub-module, though its `__init__` never names it)."""
    inits = [i for owner in _lineage(facts, cls) if (i := _own_method(facts, owner, "__init__")) is not None]
    named = {n.value for i in inits for f in _reached(facts, cls, i) for n in facts.findall(f, cst.Name)}
    own = [facts.classes[n] for n in sorted(named & facts.classes.keys())
           if facts.classes[n] is not cls and is_module_class(facts, facts.classes[n])]
    handed = [c for site in _constructions(facts).get(cls, ()) for _, arg in kept_modules(facts, site) or ()
              for c in classes_of(facts, [arg, *facts.origins(arg)])]
    return own + [c for c in dict.fromkeys(handed) if c is not cls and c not in own and is_module_class(facts, c)]


def _constructions(facts: Facts) -> dict[cst.ClassDef, list[cst.Call]]:
    """The calls of the program that build an instance of each class (`Objects.constructs`), found once."""
    index = facts.__dict__.get("_constructions")
    if index is None:
        flow = objects.of(facts)
        index = facts.__dict__["_constructions"] = {}
        for call in facts.calls:
            if (built := flow.constructs(call)) is not None:
                index.setdefault(built, []).append(call)
    return index


def _replaced_parameter(facts: Facts, cls: cst.ClassDef, depth: int = 4) -> str | None:
    """A parameter that `forward` replaces by a new one, in `cls` or a sub-module of the program
    it builds in `__init__` (an EMA codebook: `self._embedding.weight = nn.Parameter(self._ema_w /
    n)`): DDP and the optimizer hold the parameter made at construction, which then gets no
    gradient."""
    init, forward = _method(facts, cls, "__init__"), _method(facts, cls, "forward")
    if init is None or forward is None:
        return None
    for func in _reached(facts, cls, forward):
        for target, value, _ in facts.writes_in(func):
            name = dotted(target) or ""
            if name.startswith("self.") and isinstance(value, cst.Call) and \
                    facts.qualify(value.func) == "torch.nn.Parameter":
                return f"`{name}` of `{cls.name.value}` is replaced by a new nn.Parameter in forward()"
    for target, value, _ in facts.writes_in(init):
        sub = facts.classes.get(dotted(value.func)) if isinstance(value, cst.Call) else None
        if depth and sub is not None and sub is not cls and (found := _replaced_parameter(facts, sub, depth - 1)):
            return found
    return None


def made_in_forward(facts: Facts, cls: cst.ClassDef, depth: int = 4, seen: set | None = None) -> str | None:
    """A sub-module (or a parameter-holding instance of the program) that `forward`, or a method it
    calls through `self.`, makes and keeps on `self`, in `cls` or in a sub-module class of the
    program it builds in `__init__` (an encoder that makes its fully connected layers once it has
    seen the first batch's size: `if self.fc is None: self.fc = nn.Linear(n, h).to(x.device)`, or
    registered by `self.add_module(name, ...)`, `setattr(self, name, ...)`), as "`self.fc` of `Encoder`,
    made in forward()"; or None. Those parameters come after the model is
    wrapped and its optimizer built. A parameter replaced in forward is `_replaced_parameter`'s."""
    seen = set() if seen is None else seen
    forward = _method(facts, cls, "forward")
    if cls in seen or forward is None:
        return None
    seen.add(cls)
    for func in _reached(facts, cls, forward):
        for target, value, _ in facts.writes_in(func):
            name = dotted(target) or ""
            built = _built(value)
            if name.startswith("self.") and name.count(".") == 1 and _has_parameters(facts, built) \
                    and facts.qualify(built.func) != "torch.nn.Parameter":
                return f"`{name}` of `{cls.name.value}`, made in {func.name.value}()"
        for call in facts.calls_in(func):  # `self.add_module(name, nn.Linear(...))`, `setattr(self, name, ...)`
            registers = isinstance(call.func, cst.Attribute) and mt.is_name(call.func.value, "self") and \
                call.func.attr.value in ("add_module", "register_module") or \
                mt.is_call_of(call, "setattr") and bool(call.args) and mt.is_name(call.args[0].value, "self")
            if registers and len(call.args) >= 2 and _has_parameters(facts, _built(call.args[-1].value)):
                return f"a sub-module of `{cls.name.value}` registered by `{facts.code(call.func)}(...)` in {func.name.value}()"
    for sub in _sub_module_classes(facts, cls) if depth else ():
        if (found := made_in_forward(facts, sub, depth - 1, seen)) is not None:
            return found
    return None


def lazy_layers(facts: Facts, cls: cst.ClassDef, depth: int = 4, seen: set | None = None) -> str | None:
    """A lazy layer of torch that `__init__` of `cls` (or a method it calls through `self.`), or of a
    sub-module class of the program it builds, makes (`nn.LazyLinear(128)`, `nn.LazyConv2d(64, 3)`:
    its parameters are made by the first forward, from the input's shape), as "`nn.LazyLinear` of
    `cnn_simCLR`"; or None. DistributedDataParallel refuses a module whose parameters are not made
    yet ("Modules with uninitialized parameters can't be used with `DistributedDataParallel`")."""
    seen = set() if seen is None else seen
    if cls in seen:
        return None
    seen.add(cls)
    for owner in _lineage(facts, cls):
        init = _own_method(facts, owner, "__init__")
        for func in _reached(facts, cls, init) if init is not None else ():
            for call in facts.calls_in(func):
                layer = (facts.qualify(call.func) or "").rpartition(".")[2]
                if layer.startswith("Lazy") and (facts.qualify(call.func) or "").startswith("torch.nn."):
                    return f"`{facts.code(call.func)}` of `{cls.name.value}`"
    for sub in _sub_module_classes(facts, cls) if depth else ():
        if (found := lazy_layers(facts, sub, depth - 1, seen)) is not None:
            return found
    return None


RANDOM_FILLS = frozenset({"normal_", "uniform_", "random_", "bernoulli_", "exponential_", "cauchy_", "log_normal_",
                          "geometric_"})  # in-place draws of a tensor's values


def redrawn_in_forward(facts: Facts, cls: cst.ClassDef, depth: int = 4, seen: set | None = None) -> str | None:
    """A parameter that `forward`, or a method it calls through `self.`, draws again from random
    numbers in place, in `cls` or a sub-module class of the program it builds in `__init__`
    (`torch.nn.init.xavier_uniform_(self.proj.weight)` at every call: a random projection kept as a
    frozen layer), as "`self.proj.weight` of `Net`, drawn again from random numbers in forward()
    (`torch.nn.init.xavier_uniform_(...)`)"; or None. Each process draws its own, so the copies
    differ between the processes in training: DDP averages gradients, it copies no parameter.
    A parameter: a `weight` or `bias` of a sub-module (`self.proj.weight`, `.data` or not), or a
    `self.x` that `__init__` makes an `nn.Parameter`. Not a buffer (DDP broadcasts those at each
    forward), not a draw in `__init__`."""
    seen = set() if seen is None else seen
    forward = _method(facts, cls, "forward")
    if cls in seen or forward is None:
        return None
    seen.add(cls)
    own = {dotted(target) for init in filter(None, [_method(facts, cls, "__init__")])
           for target, value, _ in facts.writes_in(init)
           if isinstance(value, cst.Call) and facts.qualify(value.func) == "torch.nn.Parameter"}
    for func in _reached(facts, cls, forward):
        for call in facts.calls_in(func):
            qualified = facts.qualify(call.func) or ""
            if qualified.startswith("torch.nn.init.") and qualified.endswith("_") and call.args:
                drawn = call.args[0].value
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value in RANDOM_FILLS:
                drawn = call.func.value
            else:
                continue
            name = (dotted(drawn) or "").removesuffix(".data")
            parts = name.split(".")
            if parts[0] == "self" and (len(parts) == 3 and parts[2] in ("weight", "bias") or name in own):
                return f"`{name}` of `{cls.name.value}`, drawn again from random numbers in {func.name.value}() " \
                       f"(`{facts.code(call.func)}(...)`)"
    for sub in _sub_module_classes(facts, cls) if depth else ():
        if (found := redrawn_in_forward(facts, sub, depth - 1, seen)) is not None:
            return found
    return None


def buffer_updated_in_forward(facts: Facts, cls: cst.ClassDef, depth: int = 4,
                              seen: set | None = None) -> str | None:
    """A buffer that `cls` registers (`self.register_buffer("ema_w", ...)`, in it or a base of the
    program) and that `forward`, or a method it calls through `self.`, updates in place from a
    value of the step (`self.ema_w.data.mul_(decay).add_((1 - decay) * dw)`, `self.queue[:, i] =
    keys`, `self.count += x.size(0)`), in `cls` or a sub-module class of the program it builds, as
    "`self.ema_w` of `VQ`, a registered buffer updated in place in forward() (`self.ema_w.data.add_(...)`)";
    or None. DistributedDataParallel (broadcast_buffers=True) copies the main process's buffers to
    every process at each forward, so such a buffer learns from the main process's batches only.
    Not torch's norm layers (their running statistics: not registered by the program), not an
    update outside the forward (an EMA helper called after the step), not a buffer only read, not
    an update from the module's own attributes and literals only (`self.steps += 1`: alike on every
    process), not a buffer registered with `persistent=False` (a cache the module rebuilds, a causal
    mask for the input's length: no statistic, which the state dict would keep), not a buffer the
    program all-reduces or broadcasts itself (`dist.all_reduce(m.running_var_mean)` after the step),
    not a class whose forward all-reduces (`dist.all_reduce(embed_sum)` before the update:
    then every process updates the buffer alike)."""
    seen = set() if seen is None else seen
    forward = _method(facts, cls, "forward")
    if cls in seen or forward is None:
        return None
    seen.add(cls)
    buffers = {a.value.evaluated_value for owner in _lineage(facts, cls) for call in facts.findall(owner, cst.Call)
               if isinstance(call.func, cst.Attribute) and call.func.attr.value == "register_buffer"
               and mt.is_name(call.func.value, "self") and call.args
               and isinstance(a := call.args[0], cst.Arg) and isinstance(a.value, cst.SimpleString)
               and not ((kept := mt.keyword(call, "persistent")) and mt.is_name(kept.value, "False"))}
    reached = _reached(facts, cls, forward) if buffers else []
    if any(_all_reduces(facts, call) for func in reached for call in facts.calls_in(func)):
        reached = []  # the statistics summed over the processes first: the update is the same on each
    for func in reached:
        for node in facts.findall(func, cst.CSTNode):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                name, read = _in_place_of(node), node.args
                shown = f"{facts.code(node.func)}(...)"
            elif isinstance(node, (cst.Assign, cst.AugAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                name = next((n for t in targets if (n := _written_buffer(t))), None)
                read, shown = [node.value], f"{facts.code(targets[0])} {'=' if isinstance(node, cst.Assign) else facts.code(node.operator).strip()} ..."
            else:
                continue
            if name is not None and name.removeprefix("self.") in buffers and _reads_the_step(facts, read) \
                    and not _synced_by_hand(facts, cls, name.removeprefix("self.")):
                return f"`{name}` of `{cls.name.value}`, a registered buffer updated in place in {func.name.value}() " \
                       f"(`{shown}`)"
    for sub in _sub_module_classes(facts, cls) if depth else ():
        if (found := buffer_updated_in_forward(facts, sub, depth - 1, seen)) is not None:
            return found
    return None


def _all_reduces(facts: Facts, call: cst.Call, depth: int = 2) -> bool:
    """`dist.all_reduce(x)`, `torch.distributed.all_gather(out, x)` (`COLLECTS`), or a function of the
    program that makes one (MoCo's `concat_all_gather(keys)` before its queue's update): what the
    update reads is gathered from every process, so it is alike on each."""
    return (facts.qualify(call.func) or "") in COLLECTS or depth > 0 and any(
        _all_reduces(facts, inner, depth - 1) for func in facts.user_functions(call) for inner in facts.calls_in(func))


COLLECTS = ("torch.distributed.all_reduce", "torch.distributed.all_reduce_coalesced", "torch.distributed.all_gather",
            "torch.distributed.all_gather_into_tensor")


def _synced_by_hand(facts: Facts, cls: cst.ClassDef, buffer: str) -> bool:
    """Does the program all-reduce or broadcast the buffer itself, anywhere
    (`dist.all_reduce(module.running_var_mean)` in the training loop after each step), on an
    object that may be an instance of `cls` (`_may_be_of`)? Then every process's update counts
    before DDP's next broadcast. An attribute of the same name of an object of another class
    (`if isinstance(m, Other): dist.all_reduce(m.running_var)`) syncs nothing of `cls`."""
    for call in facts.calls:
        if (facts.qualify(call.func) or "") not in SYNCS:
            continue
        for arg in call.args:
            synced = arg.value.value if isinstance(arg.value, cst.Attribute) and arg.value.attr.value == "data" \
                else arg.value
            if arg.keyword is None and isinstance(synced, cst.Attribute) and synced.attr.value == buffer \
                    and _may_be_of(facts, synced.value, call, cls):
                return True
    return False


def _may_be_of(facts: Facts, owner: cst.BaseExpression, at: cst.CSTNode, cls: cst.ClassDef) -> bool:
    """May `owner`, read at `at`, be an instance of `cls` (of `cls` itself, a base of it in the
    program or a class of the program built on it)? Its classes where they are known: `self` in
    a method of a class, the classes an `isinstance(owner, ...)` test around `at` names, the
    classes of the program whose instances it holds (`objects`: `m = Running()`); an object whose
    class is none of these known (`for m in model.modules():` with no test) may be."""
    def related(name: str) -> bool:
        other = facts.classes.get(name)
        return other is not None and (other in _lineage(facts, cls) or cls in _lineage(facts, other))
    if mt.is_name(owner, "self"):
        home = facts.enclosing_class(facts.scope(at)) if facts.scope(at) is not None else None
        return home is None or related(home.name.value)
    code = facts.code(owner)
    for anc in facts.ancestors(at):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(anc, cst.If) and facts.is_inside(at, anc.body):
            for test in mt.conjuncts(anc.test):
                if mt.is_call_of(test, "isinstance") and len(test.args) == 2 and facts.code(test.args[0].value) == code:
                    kinds = test.args[1].value
                    named = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
                    return any(related((dotted(n) or "").rpartition(".")[2]) for n in named)
    flow = objects.of(facts)
    built = [flow.constructs(site) for site in flow.values(owner)]
    if built and all(b is not None for b in built):
        return any(related(b.name.value) for b in built if b is not None)
    return True


SYNCS = ("torch.distributed.all_reduce", "torch.distributed.broadcast", "torch.distributed.all_reduce_coalesced")


def _in_place_of(call: cst.Call) -> str | None:
    """`self.ema` of `self.ema.data.mul_(d).add_(x)`: the attribute of `self` a chain of in-place
    tensor methods (named with a trailing `_`) updates; or None."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.startswith("_")):
        return None
    if isinstance(func.value, cst.Call):
        return _in_place_of(func.value)
    return _written_buffer(func.value)


def _written_buffer(target: cst.BaseExpression) -> str | None:
    """`self.queue` of `self.queue[:, i]`, `self.ema.data` or `self.ema`: an attribute of `self`
    written, whole or in part; or None."""
    while isinstance(target, cst.Subscript):
        target = target.value
    name = (dotted(target) or "").removesuffix(".data")
    return name if name.count(".") == 1 and name.startswith("self.") else None


def _reads_the_step(facts: Facts, read: list) -> bool:
    """Do `read` (a call's arguments, an assigned value) read a name other than `self` and the
    constants (`x.mean()`, `embed`, `decay`): a value that may differ between the processes."""
    return any(n.value not in ("self", "True", "False", "None") and not _attribute_name(facts, n)
               for r in read for n in facts.findall(r, cst.Name))


def _attribute_name(facts: Facts, name: cst.Name) -> bool:
    parent = facts.parent(name)
    return isinstance(parent, cst.Attribute) and parent.attr is name or isinstance(parent, cst.Arg) and parent.keyword is name


def _built(value: cst.BaseExpression) -> cst.BaseExpression:
    """What a chain of calls that hand back their object was called on: `nn.Linear(n, h)` of
    `nn.Linear(n, h).to(x.device)`."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in mt.SELF_RETURNING:
        value = value.func.value
    return value


def parameters_on_some_paths(facts: Facts, cls: cst.ClassDef) -> str | None:
    """Why an instance of `cls` may have no parameter at all at run time, as the source shows it,
    or None: a direct subclass of `nn.Module` whose `__init__` makes each of its parameters and
    sub-modules under an `if` (`if self.nsplits > 1: self.tail_vectors = nn.Parameter(...)`), or
    none. DistributedDataParallel refuses such a module when it has none. What `__init__` is handed
    and keeps where the class calls it (`self.main = model`, then `self.main(x)`) may be a module
    with parameters, as one it builds may."""
    made = _made_in_init(facts, cls)
    if made is None:
        return None
    init = _method(facts, cls, "__init__")
    unconditional = [stmt for stmt in made if not any(isinstance(a, cst.If) for a in _ancestors_within(facts, stmt, init))]
    if unconditional:
        return None
    if not made:
        return f"`{cls.name.value}` makes no parameter"
    return f"`{cls.name.value}` makes its parameters under an `if` in __init__"


def makes_no_parameter(facts: Facts, value: cst.BaseExpression) -> bool:
    """Is `value` a module that holds no parameter on any path: a torch layer without parameters
    (`nn.ReLU()`), or an instance of a direct subclass of `nn.Module` of the program whose
    `__init__` makes no parameter nor sub-module and keeps none it is handed (a fixed sinusoidal
    time embedding keeping only its width)? Such a module runs in training with nothing to train."""
    if _parameterless(facts, value):
        return True
    cls = facts.classes.get(dotted(value.func) or "") if isinstance(value, cst.Call) else None
    return cls is not None and _made_in_init(facts, cls) == []


def handed_modules(facts: Facts, value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """For an instance of a direct subclass of `nn.Module` of the program whose `__init__` makes no
    parameter nor sub-module of its own and keeps only modules it is handed and calls (a DDPM's
    `GaussianDiffusionTrainer(unet, beta_1, beta_T, T)`: `self.model = model`, buffers, then
    `self.model(x_t, t)` in its forward), the arguments the call hands for them (`unet`): every
    parameter it holds is theirs. None where the class makes one of its own (`self.head =
    nn.Linear(...)`), keeps none, does not show them all (`_made_in_init`), or where an argument is
    not found at the call."""
    kept = kept_modules(facts, value)
    return None if kept is None else [arg for _, arg in kept]


def kept_modules(facts: Facts, value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]] | None:
    """`handed_modules`, each argument with the attribute of the instance that keeps it:
    `[("model", unet)]` for `GaussianDiffusionTrainer(unet, ...)` whose `__init__` keeps `self.model
    = model`."""
    value = _built(value)
    cls = facts.classes.get(dotted(value.func) or "") if isinstance(value, cst.Call) else None
    if cls is None or not _made_in_init(facts, cls):
        return None
    init = _method(facts, cls, "__init__")
    if init is None:
        return None
    received = param_names(init)
    called = {dotted(c.func) for m in facts.findall(cls, cst.FunctionDef) for c in facts.calls_in(m)}
    kept = []
    for target, written, _ in facts.writes_in(init):
        for one, part in _paired(target, written):
            attribute = dotted(one) or ""
            if not attribute.startswith("self."):
                continue
            if _may_hold_parameters(facts, part):
                return None  # made here: a parameter of its own
            if dotted(part) in received and attribute in called:
                kept.append((attribute.removeprefix("self."), dotted(part)))
    args = [(attribute, facts.argument_for(value, init, name)) for attribute, name in kept]
    return None if not args or any(a is None for _, a in args) else \
        [(attribute, a) for attribute, a in args if a is not None]


def _made_in_init(facts: Facts, cls: cst.ClassDef) -> list[cst.CSTNode] | None:
    """The statements of `cls.__init__` that make its parameters and sub-modules (or keep a module it
    is handed and calls), when `cls` is a direct subclass of `nn.Module`; None where the source does
    not show them all: a base of the program or a library's may make parameters this class does not
    show, and `self.register_parameter(...)`, `setattr(self, ...)` and a method `__init__` calls
    (`self.build()`) make them where no write of `__init__` shows."""
    if not cls.bases or any(facts.qualify(b.value) != "torch.nn.Module" for b in cls.bases):
        return None
    init = _method(facts, cls, "__init__")
    if init is None:
        return []
    methods = {f"self.{f.name.value}" for f in cls.body.body if isinstance(f, cst.FunctionDef)}
    if any(isinstance(c.func, cst.Attribute) and c.func.attr.value in REGISTERS or dotted(c.func) == "setattr"
           or dotted(c.func) in methods for c in facts.calls_in(init)):
        return None
    received = param_names(init)
    called = {dotted(c.func) for m in facts.findall(cls, cst.FunctionDef) for c in facts.calls_in(m)}
    return [stmt for target, value, stmt in facts.writes_in(init) for one, part in _paired(target, value)
            if (dotted(one) or "").startswith("self.") and (
                _may_hold_parameters(facts, part) or dotted(part) in received and dotted(one) in called)]


REGISTERS = {"register_parameter", "add_module", "register_module"}


def _paired(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """What each name of an assignment's target is given: `self.l1, self.l2 = nn.Linear(4, 16),
    nn.Linear(16, 2)` pairs its elements; a tuple target given one value (`self.a, self.b =
    make_blocks()`) gives that value to each."""
    if isinstance(target, (cst.Tuple, cst.List)):
        elements = [e.value for e in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
            return list(zip(elements, (e.value for e in value.elements)))
        return [(e, value) for e in elements]
    return [(target, value)]


def _may_hold_parameters(facts: Facts, value: cst.BaseExpression) -> bool:
    """`nn.Linear(...)`, `nn.Parameter(...)`, an instance of a class of the program, what a function
    of the program returns (a built block), a model of a library (`torchvision.models.resnet18()`)."""
    if not isinstance(value, cst.Call):
        return False
    head = (facts.qualify(value.func) or "").rpartition(".")[0] or facts.library_lookup(value.func) or ""
    return _has_parameters(facts, value) or bool(facts.user_functions(value)) or head.startswith(("torchvision", "timm"))


def _ancestors_within(facts: Facts, node: cst.CSTNode, func: cst.FunctionDef) -> list[cst.CSTNode]:
    return list(itertools.takewhile(lambda a: a is not func, facts.ancestors(node)))


def _method(facts: Facts, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method `name` of `cls` or, where `cls` does not define it, of its nearest base in the program."""
    for owner in _lineage(facts, cls):
        found = _own_method(facts, owner, name)
        if found is not None:
            return found
    return None


def _own_method(facts: Facts, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    return next((f for f in facts.functions.get(name, ()) if facts.enclosing_class(f) is cls), None)


def _lineage(facts: Facts, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """`cls` and its bases among the program's classes, nearest first."""
    line = [cls]
    while (base := next((facts.classes[n] for b in line[-1].bases
                         if (n := (dotted(b.value) or "").rpartition(".")[2]) in facts.classes
                         and facts.classes[n] not in line), None)) is not None:
        line.append(base)
    return line


def _init_writes(facts: Facts, cls: cst.ClassDef) -> list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]:
    """What the `__init__` of `cls` and those of its bases in the program assign (a subclass that
    calls `super().__init__()` holds its base's layers too)."""
    return [w for owner in _lineage(facts, cls) if (init := _own_method(facts, owner, "__init__")) is not None
            for w in facts.writes_in(init)]


def _uses(facts: Facts, cls: cst.ClassDef, reached: list[cst.FunctionDef], name: str) -> list[cst.CSTNode]:
    """The reads of `self.X` (`name`) in the methods forward runs, or the calls there of a lambda
    `__init__` stores that reads it (`_closure_calls`)."""
    return [a for f in reached for a in facts.findall(f, cst.Attribute, lambda a: dotted(a) == name)] \
        or _closure_calls(facts, cls, reached, name)


def _holders_uses(facts: Facts, cls: cst.ClassDef, reached: list[cst.FunctionDef], name: str) -> list[cst.CSTNode]:
    """The uses in forward of the modules that hold the sub-module `name`: `__init__` hands it,
    itself, to what it stores on `self` (`self.conv = nn.Sequential(self.conv1, ...)`), or to a
    local list that goes there (`conv_layers += [self.conv1, self.pool1]`, `layers.append(self.conv1)`,
    then `self.conv = nn.Sequential(*conv_layers)`): its parameters run where that one runs."""
    writes = _init_writes(facts, cls)
    inits = {facts.scope(stmt) for _, _, stmt in writes}
    carriers = set()
    for init in inits:
        for read in facts.findall(init, cst.Attribute, lambda a: dotted(a) == name):
            parent = facts.parent(read)
            if isinstance(parent, cst.Attribute) and parent.value is read:  # `self.conv1.weight`: a part of it
                continue
            stmt = facts.statement(read)
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if isinstance(small, (cst.Assign, cst.AugAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                carriers |= {dotted(t) for t in targets if dotted(t) and dotted(t) != name}
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                    mt.is_method_call(small.value, "append", "extend", "insert"):
                carriers.add(dotted(small.value.func.value))
    held = {c for c in carriers if c and c.startswith("self.")}
    local = {c for c in carriers if c and "." not in c}
    held |= {stored for target, value, _ in writes if (stored := dotted(target)) and stored.startswith("self.")
             and any(n.value in local for n in facts.findall(value, cst.Name))}
    return [u for h in sorted(held) if h.count(".") == 1 for u in _uses(facts, cls, reached, h)]


def _closure_calls(facts: Facts, cls: cst.ClassDef, reached: list[cst.FunctionDef], name: str) -> list[cst.Call]:
    """The calls in `reached` of a lambda `__init__` stores on `self` whose body reads `name`, or a
    local of `__init__` bound to it alone (minGPT's block: `m = self.mlp`, `self.mlpf = lambda x:
    m.c_proj(m.act(m.c_fc(x)))`, and `forward` calls `self.mlpf(...)`): where forward uses it."""
    writes = _init_writes(facts, cls)
    aliases = {t.value for t, v, _ in writes if isinstance(t, cst.Name) and dotted(v) == name}
    aliases -= {t.value for t, v, _ in writes if isinstance(t, cst.Name) and dotted(v) != name}
    stored = set()
    for target, value, _ in writes:
        held = dotted(target)
        if isinstance(value, cst.Lambda) and held and held.startswith("self.") and held.count(".") == 1 and \
                any(dotted(n) == name or dotted(n) in aliases for n in facts.findall(value.body, (cst.Name, cst.Attribute))):
            stored.add(held)
    return [c for f in reached for c in facts.calls_in(f) if stored and dotted(c.func) in stored]


def _reads_every_parameter(facts: Facts, reached: list[cst.FunctionDef]) -> bool:
    """Does forward read the module's parameters as a whole (`params = list(self.parameters())`,
    then `F.linear(x, params[0], params[1])`: a functional forward that MAML's adapted parameters can
    replace), so that a sub-module it never calls by name runs there all the same?"""
    return any(mt.is_method_call(c, "parameters", "named_parameters") and mt.is_name(c.func.value, "self")
               and not _first_only(facts, c) for f in reached for c in facts.calls_in(f))


def _first_only(facts: Facts, call: cst.Call) -> bool:
    """`next(self.parameters())`: one parameter, read for its device or dtype."""
    outer = facts.parent(facts.parent(call))
    return isinstance(outer, cst.Call) and mt.is_name(outer.func, "next")


def _reached(facts: Facts, cls: cst.ClassDef, forward: cst.FunctionDef) -> list[cst.FunctionDef]:
    """`forward` and the methods of the class it calls through `self.`, transitively."""
    reached, todo = [], [forward]
    while todo:
        func = todo.pop()
        if func in reached:
            continue
        reached.append(func)
        for call in facts.calls_in(func):
            if isinstance(call.func, cst.Attribute) and mt.is_name(call.func.value, "self"):
                method = _method(facts, cls, call.func.attr.value)
                if method is not None:
                    todo.append(method)
    return reached


def _detached(facts: Facts, use: cst.CSTNode) -> bool:
    """`self.target(x).detach()`: the sub-module's output cut from the graph where it is made; or
    later, on every way it goes on in the function: bound to a name whose every later read is
    detached or goes, as an argument of a call bound to a name, the same way (SimSiam's projector:
    `x = self.backbone(x)`, `z = self.projector(x)`, `z = z.detach()`, `p = self.predictor(z)`,
    `return z, p`: neither the backbone nor the projector gets a gradient). A read that goes
    anywhere else (returned, in a container, an operand) may carry the gradient."""
    call = facts.parent(use)
    return isinstance(call, cst.Call) and call.func is use and _cut(facts, call, 4)


def _cut(facts: Facts, value: cst.BaseExpression, depth: int) -> bool:
    """Is the value of `value` (a call's, or a read of a name) detached on every way it goes on?"""
    holder = facts.parent(value)
    if isinstance(holder, cst.Attribute) and holder.value is value:
        outer = facts.parent(holder)
        return holder.attr.value in ("detach", "detach_") and isinstance(outer, cst.Call) and outer.func is holder
    if isinstance(holder, cst.Arg) and holder.value is value and holder.star == "":
        call = facts.parent(holder)
        return depth > 0 and isinstance(call, cst.Call) and _cut(facts, call, depth - 1)
    if not isinstance(holder, cst.Assign) or holder.value is not value or len(holder.targets) != 1 \
            or not isinstance(holder.targets[0].target, cst.Name) or depth == 0:
        return False
    func = facts.scope(holder)
    if not isinstance(func, cst.FunctionDef) or any(isinstance(a, (cst.For, cst.While))
                                                    for a in _ancestors_within(facts, holder, func)):
        return False  # (in a loop, a read before it in the source may come after it)
    reads = _reads_after(facts, holder.targets[0].target.value, facts.statement(holder), func, small=holder)
    return bool(reads) and all(_cut(facts, read, depth - 1) for read in reads)


def _frozen(facts: Facts, cls: cst.ClassDef, name: str) -> bool:
    """Does the class turn off `requires_grad` of `name`'s parameters (`for p in
    self.encoder_k.parameters(): p.requires_grad = False`, `self.target.requires_grad_(False)`)?
    DDP then expects no gradient of them."""
    for func in (f for f in cls.body.body if isinstance(f, cst.FunctionDef)):
        if any(isinstance(c.func, cst.Attribute) and dotted(c.func.value) == name and c.func.attr.value == "requires_grad_"
               for c in facts.calls_in(func)):
            return True
        for loop in facts.loops_in(func):
            if isinstance(loop, cst.For) and "requires_grad" in facts.code(loop.body) and \
                    any(dotted(a) == name for a in facts.findall(loop.iter, cst.Attribute, lambda a: True)):
                return True
    return False


CONTAINERS = frozenset({"torch.nn.ModuleDict", "torch.nn.ModuleList", "torch.nn.ParameterDict", "torch.nn.ParameterList"})


def _picked_by_key(facts: Facts, value: cst.BaseExpression, uses: list[cst.CSTNode], forward: cst.FunctionDef) -> str | None:
    """`self.heads[task](h)` of `self.heads = nn.ModuleDict(...)` (or a ModuleList), where every use
    in forward() is an item at a key that is no literal, outside any loop: a step runs one head,
    the others get no gradient (a multi-task model given its task). The first use, as written."""
    if not (isinstance(value, cst.Call) and facts.qualify(value.func) in CONTAINERS) or not uses:
        return None
    for use in uses:
        item = facts.parent(use)
        if not (isinstance(item, cst.Subscript) and item.value is use and len(item.slice) == 1
                and isinstance(item.slice[0].slice, cst.Index)):
            return None
        key = item.slice[0].slice.value
        if isinstance(key, (cst.Integer, cst.SimpleString, cst.UnaryOperation)) or any(
                isinstance(a, (cst.For, cst.While, cst.CompFor)) for a in _ancestors_within(facts, use, forward)):
            return None
    return facts.code(facts.parent(uses[0]))


def _has_parameters(facts: Facts, value: cst.BaseExpression) -> bool:
    """`nn.Linear(...)`, `nn.Parameter(...)`, an instance of a class of this file that may be a
    module, a deep copy (`copy.deepcopy(model)`: an EMA model); not `nn.ReLU()`, a number, a
    tensor, or an instance of a plain class of the program (`class EMA:` keeping a decay), whose
    modules, if any, are no sub-modules of the model."""
    if not isinstance(value, cst.Call):
        return False
    qualified = facts.qualify(value.func) or ""
    last = qualified.rsplit(".", 1)[-1]
    if qualified.startswith("torch.nn.") and not qualified.startswith("torch.nn.functional"):
        return last[:1].isupper() and last not in PARAMETERLESS
    if qualified == "copy.deepcopy":
        return True
    cls = facts.classes.get(dotted(value.func) or "")
    return cls is not None and is_module_class(facts, cls)


def _on_some_paths(facts: Facts, cls: cst.ClassDef, node: cst.CSTNode, uses: list, func: cst.FunctionDef,
                   after: cst.CSTNode | None = None, made_under: frozenset[str] = frozenset()) -> bool:
    """Is `node` under an `if` of `func` whose other branch has none of `uses`? Not when the
    test is a flag fixed at construction (`if self.use_bn:`) whose value at every construction
    of the class takes `node`'s branch: every step of every model then uses it; nor when the part
    used was made under the same test, fixed at construction (`made_under`: `if self.head ==
    "cls": self.cls_token = nn.Parameter(...)` in `__init__`, `if self.head == "cls": ...
    self.cls_token ...` in forward): a model that has it uses it in every step. With `after`, the
    statement whose output `node` reads: only the `if`s it is not inside count (`if self.bn is not
    None: x = self.bn(x); x = x.transpose(1, 2)` reads the output on every path that made it)."""
    child = node
    for anc in facts.ancestors(node):
        if anc is func or after is not None and facts.is_inside(after, anc):
            return False
        if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.body and facts.code(anc.test) in made_under:
            child = anc
            continue
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            other = anc.orelse if child is anc.body else anc.body
            taken = _construction_flag(facts, cls, anc.test)
            if taken is not None and taken == (child is anc.body):
                child = anc
                continue
            if other is None or not any(facts.is_inside(u, other) for u in uses):
                return True
        child = anc
    return False


def _iterated_until_break(facts: Facts, use: cst.CSTNode) -> bool:
    """Is `use` (`self.blocks`) what a `for` loop iterates (also through `enumerate(...)`,
    `zip(...)`) whose body may `break` out of it? Its later modules then get no gradient in such a
    step: a progressive GAN's `for i, (conv, to_rgb) in enumerate(zip(self.progression,
    self.to_rgb)): ... if i == step: ...; break`."""
    loop = next((a for a in facts.ancestors(use) if isinstance(a, cst.For) and facts.is_inside(use, a.iter)), None)
    if loop is None:
        return False
    for stop in facts.findall(loop.body, cst.Break):
        if next((a for a in facts.ancestors(stop) if isinstance(a, (cst.For, cst.While))), None) is loop:
            return True
    return False


def _made_under(facts: Facts, cls: cst.ClassDef, value: cst.BaseExpression) -> frozenset[str]:
    """The tests of the `if`s of `__init__` whose body makes `value` (a part of the model), where each
    is fixed at construction (`_fixed_at_construction`): the part exists exactly where they hold."""
    tests = []
    child: cst.CSTNode = value
    for anc in facts.ancestors(value):
        if isinstance(anc, cst.FunctionDef):
            break
        if isinstance(anc, cst.If) and child is anc.body:
            if _fixed_at_construction(facts, cls, anc.test):
                tests.append(facts.code(anc.test))
            elif (kept := _as_kept(facts, anc)) is not None and _fixed_at_construction(facts, cls, kept):
                tests.append(facts.code(kept))  # `if len(splits) > 1:`, `self.splits = splits` kept
        child = anc
    return frozenset(tests)


def _as_kept(facts: Facts, branch: cst.If) -> cst.BaseExpression | None:
    """The test of an `if` of `__init__` read through the attributes its arguments are kept in
    (`len(splits) > 1` as `len(self.splits) > 1`, where `__init__` stores `self.splits = splits`), or
    None where it reads none of them: forward's `if len(self.splits) > 1:` then asks the same."""
    init = facts.scope(branch)
    if not isinstance(init, cst.FunctionDef):
        return None
    params = set(param_names(init))
    kept = {dotted(value): dotted(target) for target, value, _ in facts.writes_in(init)
            if isinstance(value, cst.Name) and value.value in params and (dotted(target) or "").startswith("self.")
            and dotted(target).count(".") == 1}

    class Kept(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
            attr = kept.get(original.value)
            return cst.Attribute(cst.Name("self"), cst.Name(attr[len("self."):])) if attr else updated

    if not any(isinstance(n, cst.Name) and n.value in kept for n in facts.findall(branch.test, cst.Name)):
        return None
    return branch.test.visit(Kept())


def _fixed_at_construction(facts: Facts, cls: cst.ClassDef, test: cst.BaseExpression) -> bool:
    """Does `test` read only literals and attributes of the model that its `__init__` sets once and
    nothing else sets (`self.head == "cls"`, `not self.use_bias`, `self.mode in ("a", "b")`)? Its
    value is then one for the model's whole life, whatever the constructions pass."""
    if isinstance(test, (cst.SimpleString, cst.Integer, cst.Float)) or mt.is_name(test, "True", "False", "None"):
        return True
    if isinstance(test, cst.UnaryOperation):
        return _fixed_at_construction(facts, cls, test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _fixed_at_construction(facts, cls, test.left) and _fixed_at_construction(facts, cls, test.right)
    if isinstance(test, cst.Comparison):
        return _fixed_at_construction(facts, cls, test.left) and all(
            _fixed_at_construction(facts, cls, c.comparator) for c in test.comparisons)
    if isinstance(test, (cst.List, cst.Tuple, cst.Set)):
        return all(_fixed_at_construction(facts, cls, e.value) for e in test.elements)
    if isinstance(test, cst.Call) and mt.is_name(test.func, "len", "bool", "int") and test.args and \
            all(a.keyword is None and not a.star for a in test.args):  # `len(self.splits) > 1`
        return all(_fixed_at_construction(facts, cls, a.value) for a in test.args)
    name = dotted(test)
    if not name or not name.startswith("self.") or name.count(".") != 1:
        return False
    family = {*_lineage(facts, cls), *(c for c in facts.classes.values() if cls in _lineage(facts, c))}
    writes = [(t, stmt) for t, _, stmt in facts.assigns if isinstance(t, cst.Attribute) and t.attr.value == name[5:]]
    mine = [stmt for t, stmt in writes if mt.is_name(t.value, "self") and facts.enclosing_class(stmt) in family]
    others = [t for t, stmt in writes if not mt.is_name(t.value, "self")]  # `model.head = ...` (or `+=`) anywhere
    scope = facts.scope(mine[0]) if len(mine) == 1 else None  # (a subclass's own write is one more)
    return isinstance(scope, cst.FunctionDef) and scope.name.value == "__init__" and not others


def _construction_flag(facts: Facts, cls: cst.ClassDef, test: cst.BaseExpression) -> bool | None:
    """The truth of `self.flag` (or `not self.flag`) in every model of `cls` built in this file,
    where `__init__` sets the flag once, from a literal or a parameter that every construction
    passes (or defaults) as a literal; None when it is not known or differs between models."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    name = dotted(test.expression if negated else test)
    init = _method(facts, cls, "__init__")
    if init is None or not name or not name.startswith("self.") or name.count(".") != 1:
        return None
    writes = [(v, stmt) for t, v, stmt in facts.assigns if dotted(t) == name and facts.enclosing_class(stmt) is cls]
    if len(writes) != 1 or facts.scope(writes[0][1]) is not init:
        return None
    value = writes[0][0]
    if isinstance(value, cst.Name) and value.value in param_names(init):
        default = next((p.default for p in (*init.params.params, *init.params.kwonly_params)
                        if p.name.value == value.value), None)
        sites = facts.call_sites(init)
        values = [facts.argument_for(c, init, value.value) or default for c in sites]
        if any(a.star for c in sites for a in c.args):
            return None
    else:
        values = [value]
    truths = {_literal_truth(v) for v in values}
    if len(truths) != 1 or None in truths:
        return None
    return truths.pop() != negated


def _literal_truth(value: cst.BaseExpression | None) -> bool | None:
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return value.value == "True"
    if isinstance(value, cst.Integer):
        return int(value.value, 0) != 0
    return None


def _resolved(facts: Facts, func: cst.FunctionDef, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`validity` -> `self.adv_layer(out)` when `forward` assigns it once; where it assigns it more
    than once (in each branch of an `if`), the one value that reaches `expr` (`Facts.reaching_values`)."""
    if isinstance(expr, cst.Name):
        writes = facts.writes(Ref(func, expr.value))
        if len(writes) == 1:
            return writes[0][1]
        reaching = facts.reaching_values(expr) if len(writes) > 1 else None
        if reaching is not None and len(reaching) == 1:
            return reaching[0]
    return expr


def _self_calls(expr: cst.CSTNode) -> set[str]:
    return {dotted(c.func) for c in mt.findall(expr, cst.Call, lambda c: isinstance(c.func, cst.Attribute)
                                               and mt.is_name(c.func.value, "self"))}


def _parameters_read(facts: Facts, expr: cst.CSTNode, held: set[str]) -> set[str]:
    """The attributes of `held` (`self.X` that `__init__` stores parameters at) that `expr` reads other
    than by calling them (`self.log_var.exp()`), not for metadata only (`self.log_var.device`)."""
    found = set()
    for attr in mt.findall(expr, cst.Attribute, lambda a: mt.is_name(a.value, "self")):
        name, parent = dotted(attr), facts.parent(attr)
        if name in held and not (isinstance(parent, cst.Call) and parent.func is attr) \
                and not (isinstance(parent, cst.Attribute) and parent.attr.value in METADATA):
            found.add(name)
    return found
