"""Which loaders of a dict keyed by phase train: each loader of the dict is its own object.

    dataloaders = {'train': DataLoader(train_set, shuffle=True), 'val': DataLoader(val_set, shuffle=True)}
    for epoch in range(n):
        for phase in ['train', 'val']:
            for inputs, labels in dataloaders[phase]:
                with torch.set_grad_enabled(phase == 'train'):
                    loss = criterion(model(inputs), labels)
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()

The batch loop iterates `dataloaders[phase]`, and `phase` takes the literal keys of the loop
around it (or, a parameter, what every call passes it: `run_epoch('val')`, or the variable of
such a loop around the call). For each key, the loop trains where a backward (or a call of a function that runs
one) is reached with `phase` bound to that key: the tests guarding it (`if phase == 'train':`,
`with torch.set_grad_enabled(phase == 'train'):`) are read with the key put in. Here 'train'
trains and 'val' does not, so `loaders.find` shards the 'train' loader only; the 'val' loader
stays whole on every process, and what is selected by its loss is the same everywhere.

A key is read as the loader's name: an entry of a dict display (`{'val': DataLoader(...)}`), a
store by key (`loaders['val'] = DataLoader(...)`), or a dict comprehension over literal keys
(`{x: DataLoader(ds[x]) for x in ['train', 'val']}`: one call, one object per key). Where the
keys or the tests are not literal (`for phase in self.phases`, `if is_train:`), `keyed_roles`
answers None and the loader is judged as any other.
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis import objects
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, param_names

def keyed_roles(facts: Facts, loop: cst.For, expr: cst.BaseExpression,
                loader_calls: list[cst.Call]) -> dict[cst.Call, dict[str, bool]] | None:
    """For a batch loop over `d[phase]`: each loader call the dict holds, with each key it is
    held under and whether the loop trains with `phase` bound to that key. None when `expr` is
    not an item of a dict by a loop variable over literal keys, or a key's loader is not seen."""
    item = _item(facts, mt.strip_iteration(expr))
    index = item.slice[0].slice if item is not None else None
    key = index.value if isinstance(index, cst.Index) else None
    keys = _literal_keys(facts, loop, key) if isinstance(key, cst.Name) else None
    if item is None or not isinstance(key, cst.Name) or not keys:
        return None
    held = _held_by_key(facts, item.value, keys, loader_calls)
    if held is None:
        return None
    roles: dict[cst.Call, dict[str, bool]] = {}
    for k in keys:
        trains = _trains_with(facts, loop, key.value, k)
        for call in held[k]:
            roles.setdefault(call, {})[k] = trains
    return roles


def made_per_phase(facts: Facts, call: cst.Call) -> tuple[str, list[str], list[str]] | None:
    """For a loader made anew in a loop over phases (`for split in splits: loader =
    DataLoader(datasets[split], shuffle=True)`, `Facts.over_phases`) where some phases train and
    others do not: (the loop's variable, the phases that train, all the phases). None when every
    phase trains, when no phase does, or when the phases are not all string literals (through
    names, `+` and `x if c else y`)."""
    for loop in facts.enclosing_loops(call):
        if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and facts.over_phases(loop)):
            continue
        keys = _phase_strings(facts, mt.strip_iteration(loop.iter))
        training = [k for k in keys or () if _trains_with(facts, loop, loop.target.value, k)]
        return (loop.target.value, training, keys) if keys and training and len(training) < len(keys) else None
    return None


def _phase_strings(facts: Facts, node: cst.BaseExpression, depth: int = 3) -> list[str] | None:
    """Every string the phases' list may hold (`['train', 'valid'] + (['test'] if args.test else [])`:
    all three), through names bound to such lists; None where one is not a string literal."""
    if isinstance(node, cst.Name):
        ref = facts.ref(node)
        sources = facts.sources(ref) if ref is not None and depth > 0 else []
        parts = [_phase_strings(facts, value, depth - 1) for value in sources]
    elif isinstance(node, cst.BinaryOperation):
        parts = [_phase_strings(facts, node.left, depth), _phase_strings(facts, node.right, depth)]
    elif isinstance(node, cst.IfExp):
        parts = [_phase_strings(facts, node.body, depth), _phase_strings(facts, node.orelse, depth)]
    elif isinstance(node, (cst.List, cst.Tuple)):
        parts = [_strings(node) or ([] if not node.elements else None)]
    else:
        return None
    if not parts or any(part is None for part in parts):
        return None
    return list(dict.fromkeys(k for part in parts for k in part or ()))


def _item(facts: Facts, expr: cst.BaseExpression) -> cst.Subscript | None:
    """`d[phase]`, or the name bound once to it (`loader = dataloaders[phase]`)."""
    if isinstance(expr, cst.Name):
        ref = facts.ref(expr)
        sources = facts.sources(ref) if ref is not None else []
        expr = mt.strip_iteration(sources[0]) if len(sources) == 1 else expr
    return expr if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 else None


def _literal_keys(facts: Facts, at: cst.CSTNode, key: cst.Name, depth: int = 2) -> list[str] | None:
    """The strings `key` takes at `at`: the loop around it that binds `key` iterates a literal list
    of strings, written there or bound once to a name (`phases = ['train', 'val']`); or `key` is a
    parameter of the function around `at`, and every call passes it such a string or such a
    loop's variable (`for phase in ['train', 'val']: run_epoch(phase)`, `run_epoch('val')`)."""
    for outer in facts.enclosing_loops(at):
        if not (isinstance(outer, cst.For) and isinstance(outer.target, cst.Name) and outer.target.value == key.value):
            continue
        listed = outer.iter
        if isinstance(listed, cst.Name):
            ref = facts.ref(listed)
            sources = facts.sources(ref) if ref is not None else []
            listed = sources[0] if len(sources) == 1 else listed
        return _strings(listed)
    func = facts.scope(at)
    if depth == 0 or not isinstance(func, cst.FunctionDef) or key.value not in param_names(func):
        return None
    keys: list[str] = []
    sites = facts.call_sites(func)
    for call in sites:
        passed = facts.argument_for(call, func, key.value)
        if isinstance(passed, cst.SimpleString) and isinstance(passed.evaluated_value, str):
            found: list[str] | None = [passed.evaluated_value]
        elif isinstance(passed, cst.Name):
            found = _literal_keys(facts, call, passed, depth - 1)
        else:
            return None
        if not found:
            return None
        keys += [k for k in found if k not in keys]
    return keys or None


def _strings(node: cst.BaseExpression) -> list[str] | None:
    """The strings of a literal list, tuple or set of string literals only."""
    if not isinstance(node, (cst.List, cst.Tuple, cst.Set)) or not node.elements:
        return None
    found = [e.value.evaluated_value for e in node.elements
             if isinstance(e, cst.Element) and isinstance(e.value, cst.SimpleString)]
    strings = [s for s in found if isinstance(s, str)]
    return strings if len(strings) == len(node.elements) else None


def _held_by_key(facts: Facts, container: cst.BaseExpression, keys: list[str],
                 loader_calls: list[cst.Call]) -> dict[str, list[cst.Call]] | None:
    """key -> the loader calls the dict holds under it; None where a dict it may be is not a
    display, a store by key or a comprehension over literal keys."""
    flow = objects.of(facts)
    held: dict[str, list[cst.Call]] = {k: [] for k in keys}
    ref = facts.ref(container) if container is not None else None
    stored = flow.stored_by_key(ref) if ref is not None else {}
    for k in keys:
        for value in stored.get(k, ()):
            held[k] += _loaders(flow, value, loader_calls)
    stored_sites = frozenset().union(*(flow.values(v) for values in stored.values() for v in values))
    sites = flow.values(container) - stored_sites
    for site in sites:
        if isinstance(site, cst.Dict):
            for entry in site.elements:
                if not (isinstance(entry, cst.DictElement) and isinstance(entry.key, cst.SimpleString)):
                    return None
                if entry.key.evaluated_value in held:
                    held[entry.key.evaluated_value] += _loaders(flow, entry.value, loader_calls)
        elif isinstance(site, cst.DictComp):
            over = _strings(site.for_in.iter)
            if over is None or not isinstance(site.key, cst.Name) or site.for_in.inner_for_in is not None:
                return None
            for k in keys:
                if k in over:
                    held[k] += _loaders(flow, site.value, loader_calls)
        else:
            return None
    if not sites and not stored:
        return None
    return held


def _loaders(flow: objects.Objects, value: cst.BaseExpression, loader_calls: list[cst.Call]) -> list[cst.Call]:
    sites = flow.values(value)
    return [c for c in loader_calls if c in sites]


def _trains_with(facts: Facts, loop: cst.For, var: str, key: str) -> bool:
    """Does some backward in `loop` (or some call of a function that runs one) run with `var`
    bound to `key`? A guard that cannot be read with the key put in may pass."""
    for call in facts.calls_in(loop.body):
        if not (facts.is_backward(call) or any(facts.trains(f) for f in facts.user_functions(call))):
            continue
        if all(value is not False for value in _guards(facts, call, loop, var, key)):
            return True
    return False


def _guards(facts: Facts, node: cst.CSTNode, loop: cst.For, var: str, key: str):
    """The value of each test between `loop` and `node` that must hold for `node` to run, with
    `var` bound to `key` (True, False, or None: not readable)."""
    child = node
    for anc in facts.ancestors(node):
        if anc is loop:
            return
        if isinstance(anc, cst.If) and child is not anc.test:
            value = evaluate(anc.test, var, key)
            yield value if child is anc.body else (None if value is None else not value)
        elif isinstance(anc, cst.With) and child is anc.body:
            for item in anc.items:
                call = item.item
                if isinstance(call, cst.Call) and facts.qualify(call.func) == "torch.set_grad_enabled" and call.args:
                    yield evaluate(call.args[0].value, var, key)
        child = anc


def evaluate(test: cst.BaseExpression, var: str, key: str) -> bool | None:
    """`phase == 'train'` with `phase` = `key`: True, False, or None where the test reads
    anything but `var`, string literals, ==, !=, in, not in, not, and, or."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        value = evaluate(test.expression, var, key)
        return None if value is None else not value
    if isinstance(test, cst.BooleanOperation):
        left, right = evaluate(test.left, var, key), evaluate(test.right, var, key)
        if isinstance(test.operator, cst.And):
            return False if False in (left, right) else None if None in (left, right) else True
        return True if True in (left, right) else None if None in (left, right) else False
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        (target,) = test.comparisons
        lhs, rhs, op = _operand(test.left, var, key), _operand(target.comparator, var, key), target.operator
        if isinstance(op, (cst.Equal, cst.NotEqual)) and isinstance(lhs, str) and isinstance(rhs, str):
            return (lhs == rhs) == isinstance(op, cst.Equal)
        if isinstance(op, (cst.In, cst.NotIn)) and isinstance(lhs, str) and isinstance(rhs, list):
            return (lhs in rhs) == isinstance(op, cst.In)
    return None


def _operand(node: cst.BaseExpression, var: str, key: str) -> str | list[str] | None:
    if isinstance(node, cst.Name) and node.value == var:
        return key
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
    return _strings(node)
