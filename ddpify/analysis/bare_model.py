"""Does the model inside a wrapper answer an attribute at all? Asked by `ddpify check` before it
blames the wrapper for a read.

A read of the wrapper that the bare model fails too (`self.cfm_wrapper.generate` where the
wrapped class defines `sample`, not `generate`) is a wrong name, not a read to move onto
`.module`: `model.module.generate` raises the same AttributeError. That is known only where every
object the name may hold before its wrap is an instance of the program's classes (built there,
or a parameter annotated with one: `cfm_wrapper: ConditionalFlowMatcherWrapper`), each derived,
through the program's classes, from `torch.nn.Module` alone, and where none of those classes or
their subclasses in the program defines the name (a method, a property, a class attribute, a
`self.name = ...`), answers any name (`__getattr__`, `setattr` of a computed name), and no code
of the program sets that attribute on some object (`model.generate = ...`).

    class Flow(nn.Module):
        def sample(self, x): ...
    model = accelerator.prepare(Flow())
    model.generate(x)        -> the bare Flow lacks `generate` too
    model.sample(x)          -> Flow answers `sample`: the wrapper's read to blame
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.models import is_wrap
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted

MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")


def lacks(facts: Facts, wrapper: cst.BaseExpression, name: str) -> bool:
    """Is it known that no model `wrapper` may wrap answers `.name`?"""
    classes = _classes(facts, wrapper)
    return bool(classes) and name not in _set_anywhere(facts) and not any(_answers(facts, c, name) for c in classes)


def a_model_defines(facts: Facts, name: str) -> bool:
    """Does a class of the program derived from `nn.Module` (itself or through the program's
    classes) define `name`, a method or a class attribute (`PI052Policy.debug_text_predictions`):
    a model the program may wrap answers it, where the wrapper does not?"""
    return any(name in _defined(facts, c) and any(facts.qualify(b.value) in MODULE_BASES
                                                  for k in facts.lineage(c) for b in k.bases if b.keyword is None)
               for c in facts.classes.values())


def _classes(facts: Facts, wrapper: cst.BaseExpression) -> list[cst.ClassDef]:
    """The program's classes of every object the name `wrapper` reads may hold besides its
    wraps; empty where one of them is not known."""
    ref = facts.ref(wrapper) if dotted(wrapper) else None
    if ref is None:
        return []
    flow = objects.of(facts)
    found: list[cst.ClassDef] = []
    for value in facts.sources(ref):
        if is_wrap(facts, value) or facts.code(value) == facts.code(wrapper):
            continue
        held = _annotated(facts, value)
        sites = [s for s in flow.values(value) if not is_wrap(facts, s)]
        built = [flow.constructs(s) for s in sites]
        if held is None and (not built or None in built):
            return []  # made where the program does not show
        found += [c for c in [held, *built] if c is not None]
    return list(dict.fromkeys(found))


def _annotated(facts: Facts, value: cst.BaseExpression) -> cst.ClassDef | None:
    """The program's class a parameter `value` names is annotated with (`cfm_wrapper:
    ConditionalFlowMatcherWrapper`)."""
    if not isinstance(value, cst.Name):
        return None
    ref = facts.ref(value)
    func = ref.scope if ref is not None else None
    if not isinstance(func, cst.FunctionDef):
        return None
    param = next((p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
                  if p.name.value == value.value), None)
    hint = param.annotation.annotation if param is not None and param.annotation is not None else None
    return facts.classes.get((dotted(hint) or "").rpartition(".")[2]) if hint is not None else None


def _answers(facts: Facts, cls: cst.ClassDef, name: str) -> bool:
    """May an instance of `cls` (or of a subclass of it in the program) answer `.name`: defined by
    it or a base, or not known (a base outside the program other than nn.Module, `__getattr__`,
    `setattr` of a computed name)?"""
    family = [*facts.lineage(cls), *(c for c in facts.classes.values() if cls in facts.lineage(c) and c is not cls)]
    for c in family:
        if any(b.keyword is None and (dotted(b.value) or "").rpartition(".")[2] not in facts.classes
               and facts.qualify(b.value) not in MODULE_BASES for b in c.bases):
            return True
        if {name, "__getattr__", "__getattribute__"} & _defined(facts, c):
            return True
    return False


def _defined(facts: Facts, cls: cst.ClassDef) -> set[str]:
    """The names a class defines: its methods and class attributes, `setattr(self, "x", ...)` (a
    computed name: `__getattr__`, any name). (`self.x = ...` is `_set_anywhere`'s.)"""
    names = set()
    for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
                [small.target] if isinstance(small, cst.AnnAssign) else []
            names.update(t.value for t in targets if isinstance(t, cst.Name))
    for call in mt.findall(cls, cst.Call):
        if mt.is_call_of(call, "setattr") and len(call.args) >= 2:
            key = mt.string_value(call.args[1].value)
            names.add(key if key is not None else "__getattr__")
    return names


def _set_anywhere(facts: Facts) -> set[str]:
    """The attribute names the program sets on some object (`self.generate = fn` in a method,
    `model.generate = fn`, `setattr(model, "generate", fn)`)."""
    names = {t.attr.value for t, _, _ in facts.assigns if isinstance(t, cst.Attribute)}
    return names | {key for c in facts.calls_named("setattr") if mt.is_call_of(c, "setattr") and len(c.args) >= 2
                    and (key := mt.string_value(c.args[1].value)) is not None}
