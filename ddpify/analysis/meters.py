"""Meters: objects of the program's own classes that a method called in a loop adds to (an
`AverageMeter` whose `update(val, n)` does `self.sum += val * n; self.count += n`), and when their
figures are plain sums made for one pass, which the processes can add up after it: the one answer
for shard-metrics (a training pass over a sharded loader) and shard-eval (an evaluation split
across the processes).

    losses = AverageMeter()                     # made afresh for the pass (`made_afresh`)
    for x, y in loader:
        losses.update(loss.item(), x.size(0))   # only added to in the loop (`only_added_to`)
    print(losses.avg)                           # `plain_sums`: (["sum", "count"], [self.avg = ...])
"""

from __future__ import annotations

import re

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted


def on_owner(code: str, owner: str) -> str:
    """`self.sum / self.count` read on `owner`: `losses.sum / losses.count`."""
    return re.sub(r"\bself\.", f"{owner}.", code)


def plain_sums(facts: Facts, methods: list[cst.FunctionDef]) -> tuple[list[str], list[cst.Assign]] | None:
    """(the fields the methods add to, the assignments that set fields from those alone) where the
    methods' bodies are nothing but such additions (`self.sum += val * n`), such assignments
    (`self.avg = self.sum / self.count`) and fields kept from arguments (`self.val = val`), and
    every field added to starts as a number in its class (`self.sum = 0`, `self.sum, self.count =
    0.0, 0`); else None."""
    summed: list[str] = []
    derived: list[cst.Assign] = []
    for method in methods:
        for stmt in method.body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                return None
            for small in stmt.body:
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                    continue  # a docstring
                field = _own_field(small.target if isinstance(small, cst.AugAssign) else
                                   small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1
                                   else None)
                if field is None or not isinstance(small, (cst.AugAssign, cst.Assign)):
                    return None
                read = _variables(small.value)
                if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign) and "self" not in read:
                    summed += [field] if field not in summed else []
                elif isinstance(small, cst.Assign) and "self" not in read:
                    continue  # `self.val = val`: the last batch's, this process's own
                elif isinstance(small, cst.Assign) and read == {"self"} and \
                        {_own_field(a) for a in mt.findall(small.value, cst.Attribute)} <= set(summed) and field not in summed:
                    derived.append(small)
                else:
                    return None
    return (summed, derived) if summed and set(summed) <= _numeric_starts(facts, methods) else None


def _variables(node: cst.CSTNode) -> set[str]:
    """The variables `node` reads: its names but attribute and keyword names (`self` and `n` of
    `self.sum / n`)."""
    spelled = {id(a.attr) for a in mt.findall(node, cst.Attribute)} | \
        {id(a.keyword) for a in mt.findall(node, cst.Arg) if a.keyword is not None}
    return {n.value for n in mt.findall(node, cst.Name) if id(n) not in spelled}


def _own_field(node: cst.BaseExpression | None) -> str | None:
    """`sum` of `self.sum`; None for anything else."""
    if isinstance(node, cst.Attribute) and mt.is_name(node.value, "self"):
        return node.attr.value
    return None


def _numeric_starts(facts: Facts, methods: list[cst.FunctionDef]) -> set[str]:
    """The fields the classes of `methods` set to a number literal somewhere (`self.sum = 0`, in
    `reset()` or `__init__`, also in a tuple: `self.sum, self.count = 0.0, 0`)."""
    found: set[str] = set()
    classes = [c for c in (facts.enclosing_class(m) for m in methods) if c is not None]
    for assign in (a for cls in classes for a in mt.findall(cls, cst.Assign)):
        for target in assign.targets:
            left, right = target.target, assign.value
            pairs = [(e.value, v.value) for e, v in zip(left.elements, right.elements)] \
                if isinstance(left, cst.Tuple) and isinstance(right, cst.Tuple) else [(left, right)]
            found |= {field for node, value in pairs
                      if (field := _own_field(node)) is not None and isinstance(value, (cst.Integer, cst.Float))}
    return found


def _assigned_to(assign: cst.Assign, owner: str) -> cst.BaseExpression | None:
    """What `assign` binds the name `owner` to: its value (`meter = AverageMeter()`), or the element
    of a tuple paired with it (`acc, loss = AverageMeter(), AverageMeter()`); None where it does not
    bind `owner` (or binds it to an element of a value that is no tuple written out)."""
    target, value = assign.targets[0].target, assign.value
    if mt.is_name(target, owner):
        return value
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
            len(target.elements) == len(value.elements) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return next((v.value for t, v in zip(target.elements, value.elements) if mt.is_name(t.value, owner)), None)
    return None


def made_afresh(facts: Facts, loop: cst.For | cst.While, owner: str, methods: list[cst.FunctionDef],
                 summed: list[str]) -> bool:
    """Is `owner` made anew, an instance of the class of `methods` (`losses = AverageMeter()`,
    `meter = utils.AverageMeter('loss')`), in a statement before `loop` in its block (or before the
    `with` around it), and not set again between: each pass's figures are that pass's alone. A
    meter made once and reset there (`epoch_loss.reset()` before each epoch's loop, a method of its
    class that sets every field it adds to, `summed`, back to a number) is made anew too."""
    classes = [c for c in (facts.enclosing_class(m) for m in methods) if c is not None]
    names = {c.name.value for c in classes}
    node: cst.CSTNode = loop
    while True:
        block = facts.parent(node)
        body = list(getattr(block, "body", ()))
        for stmt in reversed(body[:body.index(node)] if node in body else ()):
            if _resets(facts, stmt, owner, classes, summed):
                return True
            assign = mt.sole(stmt, cst.Assign)
            value = _assigned_to(assign, owner) if assign is not None and len(assign.targets) == 1 else None
            if value is not None:
                made = (dotted(value.func) or "").rsplit(".", 1)[-1] if isinstance(value, cst.Call) else ""
                return made in names or isinstance(value, cst.Call) and _made_by_each_call(facts, value, names)
            if owner in mt.names_in(stmt):
                return False  # set or handed on between: not plainly this pass's
        above = facts.parent(block) if block is not None else None
        if not isinstance(above, cst.With):
            return False
        node = above


def _made_by_each_call(facts: Facts, call: cst.Call, names: set[str]) -> bool:
    """Does `call` run functions of the program each of whose returns is an instance of a class of
    `names` that the call makes (`def make_meter(): return AverageMeter()`, or `meter =
    AverageMeter('loss'); return meter`): a new one at each call, not one kept elsewhere (`return
    SHARED`)?"""
    funcs = facts.user_functions(call)
    if not funcs or any(f.name.value == "__init__" for f in funcs):
        return False
    for func in funcs:
        returns = facts.returned(func)
        if not returns or not all(_made_here(facts, func, r, names) for r in returns):
            return False
    return True


def _made_here(facts: Facts, func: cst.FunctionDef, value: cst.BaseExpression, names: set[str]) -> bool:
    """Is `value`, returned by `func`, an instance of `names` made in `func`: such a call, or a local
    name every assignment of which is one?"""
    if isinstance(value, cst.Name):
        ref = facts.ref(value)
        writes = facts.writes(ref) if ref is not None and ref.scope is func else []
        return bool(writes) and all(_made_here(facts, func, v, names) for t, v, _ in writes if t is not value)
    return isinstance(value, cst.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] in names


def _resets(facts: Facts, stmt: cst.CSTNode, owner: str, classes: list[cst.ClassDef], summed: list[str]) -> bool:
    """Is `stmt` `owner.reset()`, a call of a method of `classes` that sets every field of `summed`
    back to a number and does nothing else (sets fields to literals, calls such methods of its own:
    `def reset(self): self.__init__()`)?"""
    expr = mt.sole(stmt, cst.Expr)
    call = expr.value if expr is not None else None
    if not isinstance(call, cst.Call) or call.args or not isinstance(call.func, cst.Attribute) \
            or not mt.is_name(call.func.value, owner):
        return False
    reset = _literal_fields(classes, call.func.attr.value, set())
    return reset is not None and set(summed) <= reset


def _literal_fields(classes: list[cst.ClassDef], name: str, seen: set[str]) -> set[str] | None:
    """The fields the method `name` of `classes` sets to a number, where it does nothing but set
    fields to literals and call such methods of its own; else None."""
    method = next((f for c in classes for f in c.body.body if isinstance(f, cst.FunctionDef) and f.name.value == name),
                  None)
    if method is None or name in seen:
        return None
    seen.add(name)
    found: set[str] = set()
    for stmt in method.body.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [None]:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                continue  # a docstring
            call = small.value if isinstance(small, cst.Expr) else None
            if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute) \
                    and mt.is_name(call.func.value, "self") \
                    and (more := _literal_fields(classes, call.func.attr.value, seen)) is not None:
                found |= more
                continue
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                return None
            left, right = small.targets[0].target, small.value
            pairs = [(e.value, v.value) for e, v in zip(left.elements, right.elements)] \
                if isinstance(left, cst.Tuple) and isinstance(right, cst.Tuple) else [(left, right)]
            for node, value in pairs:
                field = _own_field(node)
                if field is None or not isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
                    return None
                found |= {field} if isinstance(value, (cst.Integer, cst.Float)) else set()
    return found


def only_added_to(facts: Facts, loop: cst.For | cst.While, owner: str, adding: set[str]) -> bool:
    """Is `owner`, in the loop, only called by its `adding` methods or read (`losses.avg` on a
    progress line): not reset, set, or handed to anything else?"""
    for name in facts.findall(loop.body, cst.Name, lambda n: n.value == owner):
        parent = facts.parent(name)
        if not (isinstance(parent, cst.Attribute) and parent.value is name):
            return False
        above = facts.parent(parent)
        if isinstance(above, cst.Call) and above.func is parent:
            if parent.attr.value not in adding:
                return False
        elif isinstance(above, (cst.AssignTarget, cst.AugAssign)) or \
                isinstance(above, cst.Attribute) and isinstance(facts.parent(above), (cst.AssignTarget, cst.AugAssign)):
            return False
    return True


def reads_clock(facts: Facts, call: cst.Call) -> bool:
    """`batch_time.update(time.time() - end)`: a meter of this process's own time, not of the data."""
    return any((facts.qualify(c.func) or "").startswith("time.") for c in facts.findall(call, cst.Call) if c is not call)


def adds_to_self(facts: Facts, method: cst.FunctionDef) -> bool:
    """Does the method add figures to what its object keeps: `self.sum += val * n`, `self.total[key]
    += value`, `self.values.append(val)`? Not a step counter that only adds a constant (`self.iter +=
    1` in a scheduler object's `step()`): every process makes as many steps over its shard, and
    counts them alike."""
    def kept(target: cst.BaseExpression) -> bool:
        target = target.value if isinstance(target, cst.Subscript) else target
        return (dotted(target) or "").startswith("self.")
    return any(isinstance(a.operator, cst.AddAssign) and kept(a.target) and not _constant(a.value)
               for a in facts.findall(method, cst.AugAssign)) \
        or any(mt.is_method_call(c, "append", "extend") and kept(c.func.value) for c in facts.findall(method, cst.Call))


def _constant(value: cst.BaseExpression) -> bool:
    """A number written out (`1`, `1.0`, `-1`)."""
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Float))
