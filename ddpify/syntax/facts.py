"""One walk over the script: the facts every analysis and rewrite starts from (a rewrite may still walk the parts of the tree it edits).

What is found:
- the imports (`names.Imports`), each node's parent and its place in source order;
- every call, loop, assignment, function and class, grouped for the rewrites;
- what trains: optimizers and the models they train, `.backward()` calls, the batch loops that
  drive them and the epoch loops around those (through calls into helper functions);
- where values flow: a small name-based data flow (assignments, call arguments to parameters,
  return values to call sites, `self.x` attributes) that tells which `DataLoader(...)` feeds a
  training loop and which functions receive a model.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import defaultdict
from contextlib import contextmanager
from functools import cached_property
from typing import Iterator, NamedTuple, Optional, Protocol, Sequence, Tuple

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.call_index import CallIndex
from ddpify.syntax.codegen import code_for_node
from ddpify.syntax.names import CANONICAL, Imports, dotted, import_nodes

# what returns the module its (computed) name names: `importlib.import_module("data." + name)`
# (`__import__("data.mnist")` returns the top package, `data`)
IMPORTS_MODULE = frozenset({"importlib.import_module", "import_module"})
FROM_SPEC = frozenset({"importlib.util.module_from_spec", "util.module_from_spec", "module_from_spec"})
Scope = cst.CSTNode  # a FunctionDef, a ClassDef (for `self.x`), or the Module
Path = Tuple[Optional[int], ...]  # the place of an unpacked part, level by level (`unpacking_paths`)



DISPLAYS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp)
# nn.Module methods that return the module itself: `model = Net().to(device)` is still a Net
SELF_RETURNING = frozenset({"to", "train", "eval", "cuda", "cpu", "float", "double", "half", "bfloat16",
                            "requires_grad_", "share_memory"})
# a class's own constructors by convention (Hugging Face's, Lightning's): `Net.from_pretrained(path)` is a `Net`
ALTERNATE_CONSTRUCTORS = frozenset({"from_pretrained", "from_config", "load_from_checkpoint"})

class _Cycle(list):
    """What `Facts._instances_of` answers for a name it is already answering: no class of its own,
    left out by the assignments that reach it again (an empty list to any other reader)."""


_CYCLE = _Cycle()


class File(Protocol):
    """What the facts read of one file of a program."""

    @property
    def module(self) -> cst.Module: ...
    @property
    def name(self) -> str: ...  # as imported: `models.resnet`


class Files(Protocol):
    """What the facts read of a program of several files (`ddpify.inputs.program.Program` is one):
    declared here so that the syntax layer imports nothing of the layer that reads files."""

    @property
    def parts(self) -> Sequence[File]: ...  # the entry first
    @property
    def local_names(self) -> frozenset[str]: ...  # names that hold a project module
    @property
    def library(self) -> frozenset[cst.CSTNode]: ...  # the statements of the files other than the entry

    def part_of(self, node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]) -> File: ...


class Ref(NamedTuple):
    """A name in a scope: `model` in `main()`, `self.model` in class `Trainer`. A tuple: a key
    of the analyses' dicts, hashed and compared in C (a frozen dataclass does both in Python)."""

    scope: Scope
    name: str

    def __repr__(self) -> str:
        return f"Ref(name={self.name!r})"


def _collect(facts: "Facts", module: cst.Module) -> None:
    """One walk in source order: each node's parent and pre-order span, and the nodes the
    analyses need (a plain loop over the nodes' fields: LibCST's visitor rebuilds every node).
    Whitespace, comments and punctuation are not walked: no analysis asks about them."""
    f = facts
    handlers = {
        cst.Call: f.calls.append, cst.For: f.loops.append, cst.While: f.loops.append,
        cst.Attribute: f.attributes.append, cst.Break: f.breaks.append, cst.Continue: f.continues.append,
        cst.Return: f.returns.append, cst.SimpleString: f.strings.append, cst.Name: f.names.append,
        cst.FormattedString: f.fstrings.append,
        cst.FunctionDef: lambda n: f.functions[n.name.value].append(n),
        cst.ClassDef: lambda n: f.classes.__setitem__(n.name.value, n),
        cst.Assign: lambda n: f.assigns.extend((t.target, n.value, n) for t in n.targets),
        cst.AnnAssign: lambda n: n.value is not None and f.assigns.append((n.target, n.value, n)),
        cst.AugAssign: lambda n: f.assigns.append((n.target, n.value, n)),
    }
    count = 0
    by_type, spans, parents = f.by_type, f.spans, f.parents
    stack: list = [(module, None)]
    while stack:
        node, parent = stack.pop()
        if parent is _END:  # `node` is the span of a node whose children are done
            node[1] = count
            continue
        if parent is not None:
            parents[node] = parent
        count += 1
        span = spans[node] = [count - 1, count]
        kind = type(node)
        same = by_type.get(kind)
        if same is None:
            by_type[kind] = [node]
        else:
            same.append(node)
        handler = handlers.get(kind)
        if handler is not None:
            handler(node)
        children = mt.syntax_children(node)
        if children:  # (a leaf's span ends where it starts)
            stack.append((span, _END))
            stack += [(child, node) for child in reversed(children)]


class Given(NamedTuple):
    """What a call passes as one keyword (`Facts.keyword_given`)."""

    values: list[cst.BaseExpression]  # the values written for it: in the call, or in a mapping it unpacks
    spread: bool  # a `**` mapping passes it, or may: the same keyword added beside it may be given twice
    known: bool  # every value it may have is among `values` (False: a mapping whose keys are not all known)


_UNSET = object()  # not asked yet
_END = object()  # marks, on the walk's stack, the point where a node's span ends


class Facts:
    def __init__(self, module: cst.Module, program: Files | None = None) -> None:
        """The facts of `module`; of a `program`'s merged module (ddpify.inputs.program) when given."""
        self.module = module
        self.program = program
        # a program's module names (`trainer` in `trainer.fit(...)`), and the statements of the
        # modules other than the entry, which code ddpify does not read may also run
        self.local_modules = program.local_names if program is not None else frozenset()
        self.library = program.library if program is not None else frozenset()
        # of every file of a program: what the program uses (a name the entry imports twice: the later)
        self.imports = Imports(module, None if program is None else
                               lambda stmt: stmt not in program.library)
        # how the entry's own code spells what it imports (code added to it may use only these)
        self.own_imports = Imports(program.parts[0].module) if program is not None else self.imports
        self.calls: list[cst.Call] = []
        self._part_imports: dict[str, Imports] = {}  # a program file's own imports, made when first asked
        self.loops: list[cst.For | cst.While] = []
        self.functions: dict[str, list[cst.FunctionDef]] = defaultdict(list)
        self.classes: dict[str, cst.ClassDef] = {}
        self.assigns: list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]] = []
        self.attributes: list[cst.Attribute] = []
        self.breaks: list[cst.Break] = []
        self.continues: list[cst.Continue] = []
        self.returns: list[cst.Return] = []
        self.strings: list[cst.SimpleString] = []
        self.fstrings: list[cst.FormattedString] = []
        self.names: list[cst.Name] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.spans: dict[cst.CSTNode, list[int]] = {}  # [first, after last] pre-order index
        self.by_type: dict[type, list[cst.CSTNode]] = {}  # every node, by its type, in source order
        _collect(self, module)
        self._orders: dict[type, list[int]] = {}
        self._variable_orders: dict[str, list[int]] = {}
        self._kinds: dict[type | tuple[type, ...], list[type]] = {}
        self._call_order = [self.spans[c][0] for c in self.calls]
        self._trains_memo: dict[cst.CSTNode, tuple[bool, int]] = {}  # (answer, calls it could follow)
        self._bound: dict[cst.FunctionDef, set[str]] = {}
        self._lineages: dict[cst.ClassDef, list[cst.ClassDef]] = {}
        self._fields_memo: dict[cst.ClassDef, list[str]] = {}
        self._scopes: dict[cst.CSTNode, Scope] = {}
        self._classes: dict[cst.CSTNode, cst.ClassDef | None] = {}
        self._callees: dict[cst.Call, list[cst.FunctionDef]] = {}
        self._named: dict[cst.Call, list[cst.FunctionDef]] = {}
        self._calling: dict[cst.Call, int] = {}  # the calls `user_functions` is answering (how many times over)
        self._naming: dict[cst.Call, int] = {}  # the calls `_named_callees` is answering
        self._call_index = CallIndex(self.calls, self.user_functions, self._callees, self._calling,
                                     self._apart)  # `call_sites`
        self._named_index = CallIndex(self.calls, self._named_callees, self._named, self._naming,
                                      self._apart)  # `_named_call_sites`
        self._holding: set[cst.Name] = set()  # the names `_held_functions` is answering
        self._looking_up: set[cst.BaseExpression] = set()  # the values `_looked_up_classes` is answering
        self._itemizing: set[Ref] = set()  # the containers `_item_classes` is answering
        self._instancing: set[Ref | cst.FunctionDef] = set()  # the names (and functions) `_instances_of` is answering
        self._typed_parameters: dict[Ref, list[cst.ClassDef]] = {}
        self._typing: set[Ref] = set()  # the parameters `_parameter_classes` is typing
        # the times a question met itself again while it was answered (a cycle, whose answer depends
        # on which question came first): while none has, and no index of callers was read half built,
        # an index's pass keeps what it found (`_apart`)
        self._cycles = 0
        self._origins: dict[tuple[cst.BaseExpression, int], list[cst.BaseExpression]] = {}
        self._unpacked_memo: dict[tuple[cst.BaseExpression, Path], list[cst.BaseExpression]] = {}
        self._qualified: dict[cst.CSTNode, str | None] = {}  # (the node kept as the key: no id is reused)
        self._looked_up: dict[cst.Call, str | None] = {}  # `looked_up_in`
        self._refs: dict[object, Ref | None] = {}  # `ref`: by the expression, or (expression, place)
        self._binding: dict[tuple[cst.Call, cst.FunctionDef], bool] = {}  # `_misplaced`
        self._sources: dict[Ref, list[cst.BaseExpression]] = {}  # `sources`
        self._module_classes: dict[frozenset[str], list[cst.ClassDef]] = {}  # `_classes_of_modules`

    @contextmanager
    def _apart(self) -> Iterator[None]:
        """Build an index of callers (`CallIndex`) apart from the questions that asked for it: with
        the answers kept and those being answered set aside (restored after: the answers found
        meanwhile, read off an index not complete yet, dropped; `sources` and `origins` keep only
        those that read no index being built, `_partial_reads`). Where no question of these facts
        has yet met itself again while it was answered (`_cycles`) and no index was read half built,
        what the pass found is what any question would find in any order (each answer follows the
        same calls to the same complete data, with no placeholder of a cycle), so it is kept beside
        the answers restored: each call is resolved once, not once more after each pass.

        For the same reason a pass that starts in such facts takes in the answers found before it
        (not the placeholder of a parameter being typed, `_typing`): each was found from nothing,
        meeting no question on its own stack, and without an index (one being built was never read;
        a complete one is the same inside the pass), so the pass, finding it again, would follow the
        same questions to the same answer; and a call the pass itself is resolving is not among
        them, so an answer taken in never stands where finding it again would meet that call (it
        would have met it, and kept its answer, when it was found). The second index's pass then
        resolves only the calls the first left unanswered (about twice per call before, decision
        0172's `countres.py`)."""
        held = [self._callees, self._named, self._typed_parameters, self._calling, self._naming]
        answering = [self._holding, self._looking_up, self._itemizing, self._instancing, self._typing]
        saved = [dict(d) for d in held]
        saved_sets = [set(s) for s in answering]
        clean = not self._cycles and not self._partial_reads()
        for d in (*held, *answering):
            d.clear()
        if clean:  # the answers found so far, taken in
            for d, old in zip(held[:3], saved):
                d.update(old)
            for ref in saved_sets[4]:
                self._typed_parameters.pop(ref, None)
        found: list[dict] = []
        try:
            yield
            if not self._cycles and not self._partial_reads():
                found = [dict(d) for d in held[:3]]  # (the answers, not the calls being answered)
        finally:
            for d, old in zip(held, saved):
                d.clear()
                d.update(old)
            for s, old_set in zip(answering, saved_sets):
                s.clear()
                s.update(old_set)
            for d, more in zip(held, found):
                for key, answer in more.items():
                    d.setdefault(key, answer)

    def _partial_reads(self) -> int:
        """How many times an index of callers was read while it was being built (`CallIndex`)."""
        return self._call_index.partial_reads + self._named_index.partial_reads

    @cached_property
    def _calls_by_func(self) -> dict[cst.CSTNode, list[cst.Call]]:
        return _grouped(self.calls, self.scope)

    def calls_of(self, scope: Scope) -> list[cst.Call]:
        """The calls one function (or the module's top level) runs itself, in source order."""
        return self._calls_by_func.get(scope, [])

    @cached_property
    def _calls_by_callee(self) -> dict[str | None, list[cst.Call]]:
        return _grouped(self.calls, lambda call: self.qualify(call.func))

    @cached_property
    def _calls_by_last_name(self) -> dict[str | None, list[cst.Call]]:
        return _grouped(self.calls, _last_name)

    def calls_to(self, *qualified: str) -> list[cst.Call]:
        """The calls of the program whose callee is one of `qualified` through the imports
        (`qualify`: `torch.save(...)`, `save(...)` after `from torch import save`), in source order:
        a question about one library function reads its calls, not every call of the program."""
        return self._indexed(self._calls_by_callee, qualified)

    def calls_named(self, *names: str) -> list[cst.Call]:
        """The calls of the program whose callee is spelled `name(...)` or `x.name(...)` for one
        of `names` (a superset of the calls `mt.is_call_of` or `mt.is_method_call` accepts), in
        source order."""
        return self._indexed(self._calls_by_last_name, names)

    def _indexed(self, index: dict[str | None, list[cst.Call]], keys: tuple[str, ...]) -> list[cst.Call]:
        found = [c for key in dict.fromkeys(keys) for c in index.get(key, ())]
        if len(keys) > 1:
            spans = self.spans
            found.sort(key=lambda call: spans[call][0])
        return found

    # tree navigation ---------------------------------------------------------------------------
    def code(self, node: cst.CSTNode) -> str:
        """The source text of `node`, as the script spells it."""
        return code_for_node(self.module, node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        node = self.parents.get(node)
        while node is not None:
            yield node
            node = self.parents.get(node)

    def statement(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement (simple line or compound) that holds `node`, as it sits in its block (its
        nearest: the walk up stops there, not at the module)."""
        parents, statements = self.parents, mt.STATEMENTS
        candidate: cst.CSTNode | None = node
        while candidate is not None:
            if type(candidate) in statements:
                return candidate
            candidate = parents.get(candidate)
        raise ValueError("node outside any statement")

    def scope(self, node: cst.CSTNode) -> Scope:
        """The function that runs `node` (lambdas and comprehensions belong to it), or the module."""
        if node not in self._scopes:
            parent = self.parents.get(node)
            self._scopes[node] = self.module if parent is None else \
                parent if type(parent) is cst.FunctionDef else self.scope(parent)
        return self._scopes[node]

    def enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose body holds `node`; for a function the program sets onto a class
        (`_patched`), that class."""
        if node not in self._classes:
            parent = self.parents.get(node)
            self._classes[node] = self._patched[node] if node in self._patched else None if parent is None else \
                parent if type(parent) is cst.ClassDef else self.enclosing_class(parent)
        return self._classes[node]

    @cached_property
    def _patched(self) -> dict[cst.CSTNode, cst.ClassDef]:
        """The top-level functions the program sets onto one of its classes, each then a method of
        that class (`self` an instance): `setattr(Trainer, "hooked", hooked)` or `Trainer.hooked =
        hooked` (a notebook adding methods cell by cell), the function's definition bound there."""
        found: dict[cst.CSTNode, cst.ClassDef] = {}
        pairs = [(call.args[0].value, call.args[2].value, call) for call in self.calls_named("setattr")
                 if isinstance(call.func, cst.Name) and call.func.value == "setattr" and len(call.args) == 3]
        pairs += [(target.value, value, stmt) for target, value, stmt in self.assigns if isinstance(target, cst.Attribute)]
        for owner, func, at in pairs:
            if isinstance(owner, cst.Name) and isinstance(func, cst.Name) and owner.value in self.classes:
                defs = [f for f in self.functions.get(func.value, ())
                        if type(self.parents.get(f)) is cst.Module and self.before(f, at)]
                if defs:
                    found[defs[-1]] = self.classes[owner.value]
        return found

    def block(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, list[cst.CSTNode]]:
        """The block holding `stmt` and its statements."""
        parent = self.parent(stmt)
        return parent, list(parent.body)

    def following(self, stmt: cst.CSTNode) -> list[cst.CSTNode]:
        """The statements after `stmt` in its block; at the top of a program's merged module, those
        of its own file (the next file's statements are not what runs after it)."""
        _, body = self.block(stmt)
        after = body[body.index(stmt) + 1:]
        if self.program is not None and isinstance(self.parents.get(stmt), cst.Module):
            part = self.program.part_of(stmt, self.parents)
            after = list(itertools.takewhile(lambda s: self.program.part_of(s, self.parents) is part, after))
        return after

    def in_library(self, node: cst.CSTNode) -> bool:
        """Is `node` in a module the program's entry imports (code ddpify does not read may call it)?"""
        return bool(self.library) and any(a in self.library for a in (node, *self.ancestors(node)))

    def is_inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        first, end = self.spans[container]
        return first <= self.spans[node][0] < end

    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Does `a` start before `b` in the source?"""
        return self.spans[a][0] < self.spans[b][0]

    def apart(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Do `a` and `b` sit in two branches of one `if` (its body and its `else`, or an `elif`), so
        that one run of their function takes one of them at most (`if not args.infer: save(...)` /
        `else: load(...)`)? Not where a loop of that function holds the `if`: a later round may take
        the other branch, nor where one of them sits in a function defined in a branch."""
        if self.scope(a) is not self.scope(b):
            return False
        for anc in self.ancestors(a):
            if isinstance(anc, cst.If) and self.is_inside(b, anc):
                if self.is_inside(a, anc.body) == self.is_inside(b, anc.body):
                    return False  # one branch holds both (or the test reads one)
                for up in self.ancestors(anc):
                    if isinstance(up, (cst.For, cst.While)):
                        return False
                    if isinstance(up, (cst.FunctionDef, cst.Lambda)):
                        break
                return anc.orelse is not None and self.is_inside(a, anc.orelse) != self.is_inside(b, anc.orelse)
        return False

    def runs_before(self, a: cst.CSTNode, b: cst.CSTNode, depth: int = 3, strict: bool = False) -> bool:
        """Does `a` run before `b`: in one function, in source order; in two functions that one
        function calls in turn (`self._move_to_device()` ... `self._setup_ddp()` in `__init__`,
        whatever order the methods are defined in), in the order of those calls. Each side is
        followed up through the one call of its function; else source order (`strict`: else no)."""
        up_a, up_b = self.callers_up(a, depth), self.callers_up(b, depth)
        for x in up_a:
            for y in up_b:
                if x is not y and self.scope(x) is self.scope(y):
                    return self.before(x, y)
        return not strict and self.before(a, b)

    def callers_up(self, node: cst.CSTNode, depth: int) -> list[cst.CSTNode]:
        """`node`, the one call of its function, the one call of that call's function, ..."""
        chain = [node]
        while depth and isinstance(func := self.scope(chain[-1]), cst.FunctionDef) \
                and len(sites := self.call_sites(func)) == 1:
            chain.append(sites[0])
            depth -= 1
        return chain

    def calls_in(self, node: cst.CSTNode) -> list[cst.Call]:
        """The calls within `node`, itself included (calls were collected in pre-order)."""
        first, end = self.spans[node]
        return self.calls[bisect.bisect_left(self._call_order, first):bisect.bisect_left(self._call_order, end)]

    # the nodes of a subtree, from the collect pass (no walk) -----------------------------------
    def findall(self, node: cst.CSTNode, kind: type | tuple[type, ...], where=None) -> list:
        """`mt.findall(node, kind, where)`, answered from the nodes the collect pass indexed by
        type when `node` is of this tree: the nodes of type `kind` in `node` (itself included),
        in source order."""
        span = self.spans.get(node)
        if span is None:
            return mt.findall(node, kind, where)
        types = self._types_of(kind)
        found = [n for t in types for n in self._within(t, span)]
        if len(types) > 1:
            found.sort(key=lambda n: self.spans[n][0])
        return found if where is None else [n for n in found if where(n)]

    def references(self, node: cst.CSTNode, name: str) -> list[cst.CSTNode]:
        """`mt.references(node, name)` from the index: uses of the variable `name` (or dotted
        `self.x`) in `node`."""
        if "." in name:
            return self.findall(node, cst.Attribute, lambda a: dotted(a) == name)
        if node not in self.spans:
            return mt.references(node, name)
        if isinstance(node, cst.Name):
            return [node] if node.value == name else []
        uses = self._variables.get(name)
        if not uses:
            return []
        order = self._variable_orders.get(name)
        if order is None:
            order = self._variable_orders[name] = [self.spans[n][0] for n in uses]
        first, end = self.spans[node]
        return uses[bisect.bisect_left(order, first):bisect.bisect_left(order, end)]

    def has_name(self, node: cst.CSTNode, value: str) -> bool:
        """Is there a Name `value` in `node` (of this tree; itself included), as a variable, an
        attribute, a keyword or a definition's name alike?"""
        starts = self._name_starts.get(value)
        if not starts:
            return False
        first, end = self.spans[node]
        i = bisect.bisect_left(starts, first)
        return i < len(starts) and starts[i] < end

    def names_spelled(self, value: str) -> list[cst.Name]:
        """Every Name `value` of the tree (a variable, an attribute's name, a keyword, a definition's
        name alike), in source order: `findall(module, cst.Name)` of that value, from an index by
        value rather than a filter of every name for each value asked."""
        return self._names_by_value.get(value, [])

    def attributes_named(self, attr: str) -> list[cst.Attribute]:
        """Every attribute `x.attr` of the tree, in source order (as `names_spelled`)."""
        return self._attributes_by_name.get(attr, [])

    @cached_property
    def _names_by_value(self) -> dict[str, list[cst.Name]]:
        return _grouped(self.names, lambda n: n.value)

    @cached_property
    def _attributes_by_name(self) -> dict[str, list[cst.Attribute]]:
        return _grouped(self.by_type.get(cst.Attribute, ()), lambda a: a.attr.value)

    @cached_property
    def _name_starts(self) -> dict[str, list[int]]:
        """Where each Name starts (pre-order index), by its value, in source order."""
        index: dict[str, list[int]] = defaultdict(list)
        for name in self.names:
            index[name.value].append(self.spans[name][0])
        return index

    def variables_in(self, node: cst.CSTNode) -> list[cst.Name]:
        """`mt.variables(node)` from the index: the names read as variables in `node`."""
        span = self.spans.get(node)
        if span is None:
            return mt.variables(node)
        return [n for n in self._within(cst.Name, span) if n is node or _is_variable(n, self.parents.get(n))]

    def _within(self, kind: type, span: list[int]) -> list[cst.CSTNode]:
        nodes = self.by_type.get(kind)
        if not nodes:
            return []
        order = self._orders.get(kind)
        if order is None:
            order = self._orders[kind] = [self.spans[n][0] for n in nodes]
        return nodes[bisect.bisect_left(order, span[0]):bisect.bisect_left(order, span[1])]

    def _types_of(self, kind: type | tuple[type, ...]) -> list[type]:
        """The node types of this tree that are `kind` (by their bases: no isinstance against
        LibCST's abstract classes)."""
        types = self._kinds.get(kind)
        if types is None:
            wanted = kind if isinstance(kind, tuple) else (kind,)
            types = self._kinds[kind] = [t for t in self.by_type if any(k in t.__mro__ for k in wanted)]
        return types

    # names and data flow ---------------------------------------------------------------------
    def qualify(self, node: cst.CSTNode) -> str | None:
        """What `node` names through the imports (`Imports.qualify`), answered once per node: the
        rewrites ask it of each call in turn."""
        found = self._qualified.get(node, _UNSET)
        if found is _UNSET:
            found = self._reexported(self._imports_binding(node).qualify(node))
            if found is None and type(node) is cst.Attribute:
                found = self._read_off_loaded_module(node)
            self._qualified[node] = found
        return found

    def _imports_binding(self, node: cst.CSTNode) -> Imports:
        """The imports that tell what `node` names: those of the program file it was read from where
        that file binds the name itself (`import utils` in base/base_trainer.py, while the entry's
        trainer.py has `from torchvision import transforms, utils`: the merged imports, the later
        binding kept, read its `utils.optim` as torchvision's; 32c's road segmentation, decision 0268);
        else the program's merged imports (a name a file has through a star import, or the entry's)."""
        name = dotted(node) if self.program is not None and len(self.program.parts) > 1 else None
        if name is None:
            return self.imports
        try:
            part = self.program.part_of(node, self.parents)
        except KeyError:  # (a node made for the question, not the program's)
            return self.imports
        own = self._imports_of(part) if part is not self.program.parts[0] else None
        return own if own is not None and name.partition(".")[0] in own.aliases else self.imports

    def _read_off_loaded_module(self, node: cst.Attribute) -> str | None:
        """What an attribute read off the module an `importlib.import_module` call loads names
        (`module_named`): by a name written out (`importlib.import_module("torch.utils.tensorboard").SummaryWriter`), or by a
        loop variable over names written out that the loop tries in turn, leaving at the first that
        imports (pytorch-template's TensorboardWriter: `for module in ["torch.utils.tensorboard",
        "tensorboardX"]: try: self.writer = importlib.import_module(module).SummaryWriter(log_dir);
        break`), the first named, which the program prefers: `torch.utils.tensorboard.SummaryWriter`
        (32c's capsule network wrote its events on every process; decision 0268). None for a module
        named at run time (`import_module(args.module)`) or relatively."""
        attrs: list[str] = []
        base: cst.BaseExpression = node
        while type(base) is cst.Attribute:
            attrs.append(base.attr.value)
            base = base.value
        module = self.module_named(base) if type(base) is cst.Call else None
        if module is None:
            return None
        full = ".".join([module, *reversed(attrs)])
        return self._reexported(CANONICAL.get(full, full))

    def _loaded_module_names(self, arg: cst.BaseExpression, call: cst.Call) -> list[str]:
        """The module names `import_module(arg)` may load, in the order a loop tries them: a string
        written out; a name bound only as the variable of a `for` over strings written out whose body
        has a `break` (the loop stops at the first module that imports); [] for anything else."""
        if isinstance(arg, cst.SimpleString):
            value = arg.evaluated_value
            return [value] if isinstance(value, str) else []
        ref = self.ref(arg) if type(arg) is cst.Name else None
        if ref is None or self.sources(ref):
            return []
        loops = self.loops_binding(ref)
        loop = loops[0] if len(loops) == 1 else None
        if loop is None or not isinstance(loop.target, cst.Name) or not self.is_inside(call, loop.body) \
                or not isinstance(loop.iter, (cst.List, cst.Tuple)) or not mt.findall(loop.body, cst.Break):
            return []
        values = [e.value.evaluated_value for e in loop.iter.elements
                  if isinstance(e, cst.Element) and isinstance(e.value, cst.SimpleString)]
        return values if len(values) == len(loop.iter.elements) and all(isinstance(v, str) for v in values) else []

    def _reexported(self, name: str | None) -> str | None:
        """A name read off a module of the program that imports it from outside the program, as
        what that import names; any other name as it is. The module is the longest part of the
        name that is a module of the program (`pkg.comm` of `pkg.comm.all_reduce`), followed
        through modules of the program that import it from each other:

            # ddp.py:    from torch.distributed import all_reduce, ReduceOp
            # train.py:  import ddp; ddp.all_reduce(loss)
            before: `ddp.all_reduce`             (no collective: check missed its SUM)
            after:  `torch.distributed.all_reduce`

        A name a module of the program defines (`ddp.ddp_all_reduce`, also through another
        module's import of it) stays as it is read."""
        if name is None or self.program is None or "." not in name:
            return name
        found = name
        for _ in range(len(self.part_names)):
            parts = found.split(".")
            i = next((i for i in range(len(parts) - 1, 0, -1) if ".".join(parts[:i]) in self.part_names), None)
            if i is None:  # outside the program
                return found
            bound = self._imports_of(self._parts_by_name[".".join(parts[:i])]).aliases.get(parts[i])
            if bound is None or bound.startswith("."):
                return name
            found = ".".join([bound, *parts[i + 1:]])
            found = CANONICAL.get(found, found)
        return name

    @cached_property
    def _parts_by_name(self) -> dict[str, File]:
        return {part.name: part for part in self.program.parts} if self.program is not None else {}

    def assume_import(self, name: str, qualified: str) -> None:
        """Read `name` as `qualified` from here on, as if the module imported it."""
        self.imports.aliases[name] = qualified
        self._qualified.clear()
        self.__dict__.pop("_calls_by_callee", None)

    def _bound_names(self, func: cst.FunctionDef) -> set[str]:
        """Names a function binds: parameters, assignment targets and loop targets, but for the
        names it declares `global` (`model_load()` rebinding the script's `model`)."""
        if func not in self._bound:
            stars = [x.name.value for x in (func.params.star_arg, func.params.star_kwarg) if isinstance(x, cst.Param)]
            self._bound[func] = {*param_names(func), *stars, *self._assigned_in[func]} - self._globals[func]
        return self._bound[func]

    @cached_property
    def _globals(self) -> dict[Scope, set[str]]:
        """The names each function declares `global`."""
        index: dict[Scope, set[str]] = defaultdict(set)
        for node in self.by_type.get(cst.Global, ()):
            index[self.scope(node)].update(n.name.value for n in node.names)
        return index

    @cached_property
    def _assigned_in(self) -> dict[Scope, set[str]]:
        """The names each function (or the module) assigns or loops over, from one pass."""
        index: dict[Scope, set[str]] = defaultdict(set)
        for target, _, stmt in self.assigns:
            index[self.scope(stmt)].update(n.value for n in target_names(target))
        for loop in self.loops:
            if isinstance(loop, cst.For):
                index[self.scope(loop)].update(n.value for n in target_names(loop.target))
        return index

    def ref(self, expr: cst.CSTNode, at: cst.CSTNode | None = None) -> Ref | None:
        """Where a Name or dotted expression lives, seen from `at` (default: the expression).
        Kept per expression and place: the analyses ask it again for every question about a name."""
        key = expr if at is None or at is expr else (expr, at)
        if key not in self._refs:
            self._refs[key] = self._ref(expr, at or expr)
        return self._refs[key]

    def _ref(self, expr: cst.CSTNode, at: cst.CSTNode) -> Ref | None:
        name = dotted(expr)
        if name is None:
            return None
        head = name.split(".")[0]
        func = self.scope(at)
        if head == "self" and "." in name:
            cls = self.enclosing_class(at)
            return Ref(self._root_class(cls), name) if cls else None
        while type(func) is cst.FunctionDef:
            if head in self._bound_names(func):
                return Ref(func, name)
            func = self.scope(func)
        return Ref(self.module, name)

    def user_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions of this file a call runs: `f(...)`, `self.f(...)`, `Cls(...)` (`__init__`),
        a method of a parameter by what its callers pass (`_through_parameter`), a function of a
        program module a name holds (`_through_module`, or `getattr(module, name)`: those its arguments
        fit), and the `target=` a process or thread is started with (`_started_target`)."""
        if call not in self._callees:
            self._cycles += call in self._calling
            _enter(self._calling, call)
            try:
                self._callees[call] = self._named_callees(call) or self._through_parameter(call) or \
                    self._through_module(call) or self._kept_inner_functions(call) or self._started_target(call) or \
                    self._through_partial(call)
            finally:
                _leave(self._calling, call)
        return self._callees[call]

    def self_returning(self, call: cst.Call) -> bool:
        """Does `call` hand back the object it is called on, as nn.Module's and a tensor's own
        methods do (`model.to(device)`, `net.train()`, `x.float()`: `SELF_RETURNING`)? Not where it
        runs methods of the program of that name none of which returns its object (`self.ae_trainer.train(
        dataset, self.ae_net)` of a trainer class whose `train` returns the network it trained; Deep
        SVDD's `self.ae_net = self.ae_trainer.train(...)`: before, the trainer was taken for what the
        call returns, the wrapper its `train` returns was not seen in `self.ae_net`, and its
        `state_dict()` kept the wrapper's `module.` keys, which no key of the bare network matched).
        An override that returns `self`, or `super().train(mode)`, still hands back its object."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in SELF_RETURNING:
            return False
        own = [f for f in self.user_functions(call) if self.enclosing_class(f) is not None]
        return not own or any(self._returns_own_object(f) for f in own)

    def _returns_own_object(self, method: cst.FunctionDef) -> bool:
        """Does `method` return `self`, or a self-returning call on `self` or `super()`?"""
        for value in self.returned(method):
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value in SELF_RETURNING:
                value = value.func.value
            if mt.is_name(value, "self") or isinstance(value, cst.Call) and dotted(value.func) == "super":
                return True
        return False

    def _through_partial(self, call: cst.Call) -> list[cst.FunctionDef]:
        """`iter_batches(split="train")` where `iter_batches = functools.partial(Task.iter_batches,
        batch_size=32)`: what the partial calls (`partial_bound`), a function of the program by its
        name or a static or class method on its class (a smolerGPT's training batches drawn from a
        generator made through a partial: before, the call ran nothing, the generator's DataLoader
        fed no training, and every process trained on the whole stream)."""
        found: list[cst.FunctionDef] = []
        for bound in self.partial_bound(call):
            target = bound.args[0].value
            if isinstance(target, cst.Name):
                defs = [f for f in self.functions.get(self._defined_name(target), ()) if self.enclosing_class(f) is None]
            elif isinstance(target, cst.Attribute) and (cls := self.class_named(target.value)) is not None:
                defs = [m for m in self._methods(cls, target.attr.value) if _static_or_class(m)]
            else:
                defs = []
            if not defs:
                return []
            found += [f for f in defs if f not in found]
        return found

    def partial_bound(self, call: cst.Call) -> list[cst.Call]:
        """The `functools.partial(f, ...)` calls the name `call` calls holds, where every value its
        scope (its function, or the top level of its module) gives it is one; [] otherwise."""
        if not isinstance(call.func, cst.Name):
            return []
        ref = self.ref(call.func)
        values = [value for _, value, stmt in self.writes(ref) if not isinstance(stmt, cst.AugAssign)] \
            if ref is not None else []
        if not values or not all(isinstance(v, cst.Call) and self.qualify(v.func) == "functools.partial" and v.args
                                 and v.args[0].keyword is None and not v.args[0].star for v in values):
            return []
        return [v for v in values if isinstance(v, cst.Call)]

    def starts(self, call: cst.Call) -> bool:
        """Does `call` start its `target=` in another process or thread (`STARTERS`)?"""
        return mt.keyword(call, "target") is not None and self.qualify(call.func) in STARTERS

    def _started_target(self, call: cst.Call) -> list[cst.FunctionDef]:
        """`mp.Process(target=batch_auc, args=(queue, rows, model))`, `Thread(target=self.work)`: the
        function it runs, with the arguments of `args=`/`kwargs=` (`argument_for`), as a call would
        (in another process or thread: what it does with a model it is handed is the model's all the
        same: torchmf's metrics called `model.predict` on the wrapper there)."""
        target = mt.keyword(call, "target")
        if target is None or not self.starts(call):
            return []
        if isinstance(target.value, cst.Name):
            return self._same_file([f for f in self.functions.get(target.value.value, ())
                                    if self.enclosing_class(f) is None], call)
        cls = self.enclosing_class(call)
        if isinstance(target.value, cst.Attribute) and dotted(target.value.value) == "self" and cls is not None:
            return self._methods(cls, target.value.attr.value)
        return []

    def _named_callees(self, call: cst.Call) -> list[cst.FunctionDef]:
        """What a call runs by the names it is written with, parameters untyped."""
        if call not in self._named:
            self._cycles += call in self._naming
            _enter(self._naming, call)
            try:
                self._named[call] = self._resolve_call(call)
            finally:
                _leave(self._naming, call)
        return self._named[call]

    def _named_call_sites(self, func: cst.FunctionDef) -> list[cst.Call]:
        """The calls that run `func` by name (`_named_callees`): the callers that type a parameter
        (found in one pass, `CallIndex`, though typing a parameter asks for it while it is found)."""
        return self._named_index.sites(func)

    def _through_parameter(self, call: cst.Call) -> list[cst.FunctionDef]:
        """`saver.save_recovery(...)` (`stopper(loss)`) where `saver` is a parameter its function
        never rebinds: the methods (`__call__`) of the classes of the program every caller's
        argument is an instance of (`train_epoch(..., saver=saver)` after `saver = None` ... `saver =
        CheckpointSaver(...)`), or, called itself, the functions of the program every caller passes
        (`_parameter_functions`); [] where any caller passes something else."""
        func = call.func
        holder = func.value if isinstance(func, cst.Attribute) else func
        if not isinstance(holder, cst.Name) or isinstance(func, cst.Name) and func.value in self.functions \
                and not self._own_parameter(func):
            return []
        classes = self._parameter_classes(holder)
        if not classes and isinstance(func, cst.Name):
            return self._parameter_functions(func)
        method = func.attr.value if isinstance(func, cst.Attribute) else "__call__"
        return [m for cls in classes for m in self._methods(cls, method) if not is_property(m)]

    def _own_parameter(self, name: cst.Name) -> bool:
        """Is `name` a parameter of the function it is read in, never rebound there (where a function
        of the program shares its name: `end_update` of `def _do(self, loader, begin_update, end_update)`)?"""
        ref = self.ref(name)
        return ref is not None and isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope) \
            and not self.writes(ref)

    def _parameter_functions(self, name: cst.Name, seen: frozenset[Ref] = frozenset()) -> list[cst.FunctionDef]:
        """The functions of the program a parameter called as one holds (`loss(netg, netd, x)` in
        `train(loss, ...)`): those every call that runs its function by name passes for it, by name
        (`train(loss_wgan, ...)`), through a local that holds them, or through a parameter of the
        caller in turn (`None`, or an omitted argument whose default is None, adds nothing); [] unless
        every caller passes one."""
        ref = self.ref(name)
        func = ref.scope if ref is not None else None
        if isinstance(func, cst.FunctionDef) and ref in seen:
            self._cycles += 1
            return []
        if not isinstance(func, cst.FunctionDef) or ref.name not in param_names(func) or self.writes(ref):
            return []
        param = next(p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
                     if p.name.value == ref.name)
        sites = self._named_call_sites(func)
        found: list[cst.FunctionDef] = []
        for site in sites:
            arg = self.argument_for(site, func, ref.name)
            if arg is None and (any(a.star for a in site.args) or param.default is None):
                return []
            arg = param.default if arg is None else arg
            if mt.is_name(arg, "None"):
                continue
            # a function of the file, or one the caller defines in its own body (`def end_update(loss):
            # loss.backward(); opt.step()`, then `self._do(loader, begin_update, end_update)`)
            defs = [f for f in self.functions.get(self._defined_name(arg), ())
                    if self.enclosing_class(f) is None or self.scope(f) is self.scope(site)] \
                if isinstance(arg, cst.Name) else []
            defs = defs or (self._held_functions(arg) or self._parameter_functions(arg, seen | {ref})
                            if isinstance(arg, cst.Name) else [])
            if not defs:
                return []
            found += [f for f in defs if f not in found]
        return found

    def _parameter_classes(self, name: cst.Name, seen: frozenset[Ref] = frozenset()) -> list[cst.ClassDef]:
        """The classes of the program a parameter holds an instance of, by what the calls that run
        its function by name pass for it (None, or an omitted argument whose default is None, adds
        nothing; a parameter passed on from a parameter is followed); [] unless every caller
        passes one."""
        ref = self.ref(name)
        func = ref.scope if ref is not None else None
        if isinstance(func, cst.FunctionDef) and ref in seen:
            self._cycles += 1
            return []
        if not isinstance(func, cst.FunctionDef) or ref.name not in param_names(func) or self.writes(ref):
            return []
        if ref not in self._typed_parameters:
            self._typed_parameters[ref] = []  # a cycle of calls adds nothing
            self._typing.add(ref)
            try:
                self._typed_parameters[ref] = self._passed_classes(func, ref, seen | {ref})
            finally:
                self._typing.discard(ref)
        else:
            self._cycles += ref in self._typing
        return self._typed_parameters[ref]

    def _passed_classes(self, func: cst.FunctionDef, ref: Ref, seen: frozenset[Ref]) -> list[cst.ClassDef]:
        param = next(p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
                     if p.name.value == ref.name)
        sites = self._named_call_sites(func)
        found: list[cst.ClassDef] = []
        for site in sites:
            arg = self.argument_for(site, func, ref.name)
            if arg is None and (any(a.star for a in site.args) or param.default is None):
                return []  # passed through `*args`/`**kwargs`, or not at all: unknown
            arg = param.default if arg is None else arg
            if mt.is_name(arg, "None"):
                continue
            if isinstance(arg, cst.Name) and (holder := self._instance_parameter_class(arg)) is not None:
                found += [holder] if holder not in found else []  # `Saver(self)` in a method of `Trainer`
                continue
            reaching = self.reaching_sources(arg) if isinstance(arg, cst.Name) else None
            if reaching and all(isinstance(v, cst.Call) for v in reaching):  # what the name holds at this call
                held = [self._instances_of(v) for v in reaching]
                classes = list(dict.fromkeys(c for cs in held for c in cs)) if all(held) else []
            else:
                classes = self._parameter_classes(arg, seen) if isinstance(arg, cst.Name) and not self.writes(
                    self.ref(arg) or ref) else self._instances_of(arg)
            if not classes:
                return []
            found += [c for c in classes if c not in found]
        return found

    def _instance_parameter_class(self, name: cst.Name) -> cst.ClassDef | None:
        """The class of the method whose instance parameter (`self`) `name` is, never rebound there."""
        func = self.scope(name)
        while isinstance(func, cst.FunctionDef) and name.value not in param_names(func):
            func = self.scope(func)  # a function nested in the method sees its `self`
        first = next(iter((*func.params.posonly_params, *func.params.params)), None) \
            if isinstance(func, cst.FunctionDef) else None
        cls = self.enclosing_class(func) if first is not None and first.name.value == name.value else None
        ref = self.ref(name)
        method = cls is not None and func in getattr(cls.body, "body", ())
        return cls if method and ref is not None and not self.writes(ref) else None

    def _resolve_call(self, call: cst.Call) -> list[cst.FunctionDef]:
        """(A property's name called, `self.model(x)` of `@property def model(self)`, runs what the
        property returns, not its getter with these arguments: not resolved to it.)"""
        return [f for f in self._resolve_by_name(call) if not is_property(f)]

    def _resolve_by_name(self, call: cst.Call) -> list[cst.FunctionDef]:
        func = call.func
        if isinstance(func, cst.Attribute) and self.is_program_module(func.value):
            func = func.attr  # `trainer.Trainer(...)`: a class of the program's module `trainer`
        if isinstance(func, cst.Name):
            name = self._defined_name(func)
            if (cls := self.class_of(func)) is not None:
                return self._constructor(cls)
            if name not in self.functions and (cls := self._instance_of(func)) is not None:
                return self._methods(cls, "__call__")  # `stopper(val_loss, model)`: its `__call__`
            if name not in self.functions and (picked := self._picked_classes(func)):
                return [init for cls in picked for init in self._constructor(cls)]  # `pipeline_class(conf, model)`
            if name not in self.functions:  # (a call its arguments do not fit would raise: not one of them)
                return [f for f in self._held_functions(func) if _accepts(call, f)]
            return self._same_file(self._visible([f for f in self.functions.get(name, ())
                                                  if self.enclosing_class(f) is None], call), call)
        if self._own_globals(func):  # `globals()[task](**kwargs)`: any function of this file its arguments fit
            part = self._part(call)
            return [f for fs in self.functions.values() for f in fs if self.enclosing_class(f) is None
                    and f is not self.scope(call) and self._part(f) == part and _accepts(call, f)]
        if isinstance(func, cst.Subscript) and dotted(func.value):  # `TASK_PIPELINE[task](conf, model)`
            return [init for cls in self._registry_classes(func.value) for init in self._constructor(cls)] or \
                [f for f in self._registry_functions(func.value) if _accepts(call, f)]  # `OPTIMIZERS[name](params)`
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted(func.value.func) == "super":
            cls = self.enclosing_class(call)  # `super().__init__(model, optimizer)`
            base = self._base(cls) if cls is not None else None
            return [] if base is None else self._constructor(base) if func.attr.value == "__init__" else \
                [f for f in self._methods(base, func.attr.value) if self.enclosing_class(f) in self._lineage(base)]
        if isinstance(func, cst.Attribute) and dotted(func.value) == "self":
            cls = self.enclosing_class(call)
            return (self._methods(cls, func.attr.value) if cls is not None else []) or self._called_instances(func) \
                or [init for c in self._held_classes(func) for init in self._constructor(c)]
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and self._own_class(func.value, call):
            cls = self.enclosing_class(call)  # `cls.build(batch)` in a classmethod: the class's own method
            return self._methods(cls, func.attr.value) if cls is not None else []
        if isinstance(func, cst.Call):  # `Stopper(path)(val_loss, model)`: its `__call__`
            return [init for cls in self._registered_classes(func) for init in self._constructor(cls)] or \
                self._called_instances(func)  # `ProjectRegistry.get(name)(config=config)`: the registered `__init__`s
        if isinstance(func, cst.Attribute) and (cls := self.class_named(func.value)) is not None:
            # `DeepSpeech.serialize(model, ...)`: a static or class method, called on the class
            return [m for m in self._methods(cls, func.attr.value) if _static_or_class(m)]
        classes = self._instances_of(func.value) if isinstance(func, cst.Attribute) else []
        # `Trainer(model, opt).fit(loader)`, `trainer.fit(loader)`, `model.train(loader)` where `model`
        # is `GAN(args)` or `DCGAN(args)` by the branch taken (a base's method once for all its subclasses)
        return list(dict.fromkeys(m for cls in classes for m in self._methods(cls, func.attr.value)))

    def _own_class(self, name: cst.Name, call: cst.Call) -> bool:
        """Is `name` the first parameter of the `@classmethod` that makes `call` (`cls` of `def
        for_settings(cls, s): return cls.build(s.batch)`): the class itself, or a subclass it is
        called on?"""
        func = self.scope(call)
        if not isinstance(func, cst.FunctionDef) or not any(dotted(d.decorator) == "classmethod" for d in func.decorators):
            return False
        params = func.params.params
        return bool(params) and params[0].name.value == name.value

    @staticmethod
    def _own_globals(func: cst.BaseExpression) -> bool:
        """`globals()[name]`, `globals().get(name)`: a function of the module looked up by a name
        known at run time only (a task picked on the command line: `globals()[task](**kwargs)`)."""
        if isinstance(func, cst.Subscript):
            lookup = func.value
        elif isinstance(func, cst.Call) and isinstance(func.func, cst.Attribute) and func.func.attr.value == "get":
            lookup = func.func.value
        else:
            return False
        return isinstance(lookup, cst.Call) and mt.is_name(lookup.func, "globals") and not lookup.args

    def imported_top_level(self, first: cst.CSTNode, then: cst.CSTNode) -> bool:
        """Are `first` and `then` both at the top level of the program, `first` in a module other than
        the entry and `then` in another file? `first` then ran when its module was imported, before
        `then`'s file could read what it binds."""
        if self.program is None or self.scope(first) is not self.module or self.scope(then) is not self.module:
            return False
        file = self._part(first)
        return file != self._part(then) and file != self.program.parts[0].name

    def _part(self, node: cst.CSTNode) -> str | None:
        """The name of the program file that holds `node` (None outside a program)."""
        return None if self.program is None else self.program.part_of(node, self.parents).name

    def _through_module(self, call: cst.Call) -> list[cst.FunctionDef]:
        """`self.GAN_type.optimizer(self.D, lr)`, `import_module("data." + name).build(**kwargs)`: the
        function of that name of each program module the name before it holds, or the call before
        it returns (`_held_program_modules`)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or self.program is None or \
                not (dotted(func.value) or isinstance(func.value, cst.Call)) or \
                not any(self.enclosing_class(f) is None for f in self.functions.get(func.attr.value, ())):
            return []
        held = self._held_program_modules(func.value)
        return [f for f in self.functions[func.attr.value] if self.enclosing_class(f) is None
                and self.program.part_of(f, self.parents).name in held]

    def module_classes(self, func: cst.BaseExpression) -> list[cst.ClassDef]:
        """`self.GAN_type.Discriminator`: the classes of that name of the program modules the name
        before it holds (`_held_program_modules`)."""
        if not isinstance(func, cst.Attribute) or self.program is None or func.attr.value not in self.classes \
                or not dotted(func.value):
            return []
        held = self._held_program_modules(func.value)
        return [c for c in self.by_type.get(cst.ClassDef, ()) if c.name.value == func.attr.value
                and held and self.program.part_of(c, self.parents).name in held]

    def _kept_inner_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """`self.train_D(imgs, cls)`, no method of its class, where `self.train_D` is set to the inner
        function a call returns (`self.GAN_type.train_D(self)`, whose `def train` it returns)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or dotted(func.value) != "self":
            return []
        if func in self._holding:
            self._cycles += 1
            return []
        cls = self.enclosing_class(call)
        if cls is None or self._methods(cls, func.attr.value):
            return []
        self._holding.add(func)
        try:
            return self._inner_functions(func)
        finally:
            self._holding.discard(func)

    def _held_program_modules(self, expr: cst.BaseExpression, depth: int = 3) -> frozenset[str]:
        """The program's modules (by their names in it) that a name holds, where every value it is
        given is one: `self.GAN_type`, set from the parameter `GAN_type` for which every caller that
        runs its function by name passes a module (`Trainer(DCGAN, loader)` with `from models import
        DCGAN`: `models.DCGAN`), or what `importlib.import_module` returns, any of the modules of the
        program its computed name may load (`import_module("data." + name)`: `data.mnist`,
        `data.cifar`, `Program.by_name`); empty otherwise."""
        if self.is_program_module(expr):
            return frozenset({self.qualify(expr) or dotted(expr) or ""})
        if isinstance(expr, cst.Call) and (self.qualify(expr.func) or dotted(expr.func)) in IMPORTS_MODULE \
                and self.program is not None:  # `import_module(f"data.{name}")`: any module it may load
            return frozenset(self.program.by_name.get(expr, ()))
        ref = self.ref(expr) if depth and dotted(expr) not in (None, "self") else None
        if ref is None:
            return frozenset()
        values = [value for _, value, stmt in self.writes(ref) if not isinstance(stmt, cst.AugAssign)]
        if isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope) and not values:
            values = [self.argument_for(site, ref.scope, ref.name) for site in self._named_call_sites(ref.scope)]
        found = [self._held_program_modules(v, depth - 1) if v is not None else frozenset() for v in _branches(values)]
        return frozenset().union(*found) if found and all(found) else frozenset()

    def _held_functions(self, name: cst.Name) -> list[cst.FunctionDef]:
        """The functions of the program a local variable (or a name of the top level: `train =
        train_mixup` under an option's `if`, then `train(epoch)`) holds, where every value it is given is one
        of them by name (`train_fn = train_fromp if args.fromp else (train_gen if args.gen else
        train_cl)`), an inner function a call of the program returned (`step_fn = self.train_step_fn`,
        set to `self._make_train_step_fn()`, which returns its inner `def perform_train_step_fn`) or an
        item of a registry of the program's functions (`build = BUILDERS[name]` of `BUILDERS = {"mlp":
        make_mlp}`: `_registry_functions`); [] when any value is something else (a parameter, a lookup)."""
        if name in self._holding:  # asked again while answering: a cycle adds nothing
            self._cycles += 1
            return []
        self._holding.add(name)
        try:
            return self._held_by(name)
        finally:
            self._holding.discard(name)

    def _held_by(self, name: cst.Name) -> list[cst.FunctionDef]:
        ref = self.ref(name)
        writes = self.writes(ref) if ref is not None and type(ref.scope) in (cst.FunctionDef, cst.Module) else []
        leaves: list[cst.BaseExpression] = []
        for _, value, stmt in writes:
            stack = [value]
            while stack:
                node = stack.pop()
                if isinstance(node, cst.IfExp):
                    stack += [node.orelse, node.body]  # in source order
                else:
                    leaves.append(node)
        found: list[cst.FunctionDef] = []
        for leaf in leaves:
            defs = [f for f in self.functions.get(self._defined_name(leaf), ()) if self.enclosing_class(f) is None] \
                if isinstance(leaf, cst.Name) else []
            defs = defs or self._looked_up_in_module(leaf) or self._inner_functions(leaf) or (
                self._registry_functions(leaf.value) if isinstance(leaf, cst.Subscript) and dotted(leaf.value) else [])
            if not defs:
                return []
            found += [f for f in defs if f not in found]
        return found

    def _looked_up_in_module(self, expr: cst.BaseExpression) -> list[cst.FunctionDef]:
        """`getattr(metrics, metric)` of a module of the program: any of its top-level functions
        (which one is known at run time only: torchmf's `func = getattr(metrics, metric)` for each
        name of its `eval_metrics`)."""
        if not isinstance(expr, cst.Call) or not mt.is_name(expr.func, "getattr") or len(expr.args) < 2 \
                or self.program is None:
            return []
        held = self._held_program_modules(expr.args[0].value)
        return [f for fs in self.functions.values() for f in fs if self.enclosing_class(f) is None
                and self.program.part_of(f, self.parents).name in held]

    def _classes_looked_up_in_module(self, expr: cst.Call) -> list[cst.ClassDef]:
        """`getattr(models, opt.model)` of a module or package of the program: any of the top-level
        classes of it and of its submodules (which one is known at run time only: a project's
        `model = getattr(models, opt.model)(nfeat=..., nhid=...)` with `models/__init__.py`
        importing `GCN` and `GAT` from `models/gcn.py` and `models/gat.py`), and the classes of the
        program such a module imports by name from elsewhere (`pkg/data.py`: `from pkg.toy import Toy`)."""
        if not mt.is_name(expr.func, "getattr") or len(expr.args) < 2 or self.program is None:
            return []
        return list(self._classes_of_modules(self._held_program_modules(expr.args[0].value)))

    def _classes_of_modules(self, held: frozenset[str]) -> list[cst.ClassDef]:
        """The top-level classes of the program's modules `held` and of their submodules, and the
        classes of the program those modules import by name (`_classes_looked_up_in_module`): found
        once per set of modules, which every lookup through a name that holds them asks again."""
        found = self._module_classes.get(held)
        if found is None:
            assert self.program is not None
            program = self.program
            imported = {q for part in program.parts if part.name in held for q in _imported_names(part)}
            found = self._module_classes[held] = [
                c for c in self.by_type.get(cst.ClassDef, ()) if held and type(self.scope(c)) is not cst.FunctionDef
                and self.enclosing_class(c) is None
                and any(n == h or n.startswith(h + ".") for h in held for n in [program.part_of(c, self.parents).name])
                or f"{program.part_of(c, self.parents).name}.{c.name.value}" in imported]
        return found

    def _imported_classes(self, name: cst.Name) -> list[cst.ClassDef]:
        """The classes of the program the imports of the function `name` is read in bind to it, one in each branch
        (`from models.dcgan import DCGAN as model_class` or `from models.can import CAN as
        model_class`, then `return model_class`: a model class picked by name, whose instance's
        methods run the training; before, none was known, its batch loop trained nothing, and its
        loader was neither sharded nor reshuffled); [] where any such import binds no class of the
        program."""
        scope = self.scope(name)
        if not isinstance(scope, cst.FunctionDef):
            return []
        found: list[cst.ClassDef] = []
        for node in self.by_type.get(cst.ImportFrom, ()):
            if isinstance(node.names, cst.ImportStar) or self.scope(node) is not scope:
                continue
            for alias in node.names:
                if (alias.asname.name.value if isinstance(alias.asname, cst.AsName) and
                        isinstance(alias.asname.name, cst.Name) else dotted(alias.name)) != name.value:
                    continue
                same = self._same_named.get(dotted(alias.name) or "", [])
                module = "." * len(node.relative) + (dotted(node.module) if node.module is not None else "")
                own = [c for c in same if self.program is not None
                       and self.program.part_of(c, self.parents).name == module]
                cls = own[-1] if own else same[0] if len(same) == 1 else None
                if cls is None:
                    return []
                found.append(cls)
        return list(dict.fromkeys(found))

    def _namespace_classes(self, ref: Ref) -> list[cst.ClassDef]:
        """The classes a loop variable may hold that walks the namespace of modules of the program
        (`for name, cls in modellib.__dict__.items():`, `vars(module).values()`,
        `inspect.getmembers(module)`, the module loaded by a computed name: `modellib =
        importlib.import_module("models." + name + "_model")`): any class of those modules
        (`_classes_of_modules`), and where the loop tests `issubclass(cls, BaseModel)`, those
        deriving from such a base; [] where a loop binding it walks anything else."""
        found: list[cst.ClassDef] = []
        for loop in self.loops_binding(ref):
            module, item = _namespace_walked(loop)
            held = self._held_program_modules(module) if module is not None else frozenset()
            if not held or not (isinstance(item, cst.Name) and self.ref(item, loop) == ref):
                return []
            bases = [cls for test in self.findall(loop.body, cst.Call) if mt.is_name(test.func, "issubclass")
                     and len(test.args) == 2 and mt.is_name(test.args[0].value, ref.name)
                     for cls in _class_names(self.classes, test.args[1].value)]
            found += [c for c in self._classes_of_modules(held) if not bases or any(b in self._lineage(c) for b in bases)]
        return list(dict.fromkeys(found))

    def classes_looked_up(self, call: cst.Call) -> list[cst.ClassDef]:
        """The classes of the program a call that looks one up by name may give: `getattr(models,
        opt.model)` (`_classes_looked_up_in_module`), or a helper that returns such a lookup
        (`_classes_a_lookup_returns`)."""
        return self._classes_looked_up_in_module(call) or self._classes_a_lookup_returns(call) or \
            self._registered_classes(call)

    def _registered_classes(self, lookup: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of the program a lookup in a registry that a decorator enters them into may
        give: `ProjectRegistry.get(name)` (any method of the registry but one that registers) where
        classes are written `@ProjectRegistry.register("clip")` (`@MODELS.register_module()`, a bare
        `@R.register` alike); [] for any other expression. The registry is known by its last name
        (`registry.ProjectRegistry` in one module, `ProjectRegistry` in another)."""
        if not isinstance(lookup, cst.Call) or not isinstance(lookup.func, cst.Attribute) \
                or lookup.func.attr.value.startswith("register") or not dotted(lookup.func.value):
            return []
        return self._decorated_into.get((dotted(lookup.func.value) or "").rpartition(".")[2], [])

    @cached_property
    def _decorated_into(self) -> dict[str, list[cst.ClassDef]]:
        """The classes a decorator `@R.register...(...)` enters into a registry, by its last name,
        and those a decorator function of the program enters (`@register_model('resnet18')` where
        `def register_model(name): def wrapper(cls): MODEL_REGISTRY.register(name.lower(), cls);
        return cls; return wrapper`: every registry its body, nested functions too, calls a
        `register...` method of; round 31's held-out modular framework, decision 0273)."""
        index: dict[str, list[cst.ClassDef]] = defaultdict(list)
        for cls in self.by_type.get(cst.ClassDef, ()):
            assert isinstance(cls, cst.ClassDef)
            for d in cls.decorators:
                dec = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                if isinstance(dec, cst.Attribute) and dec.attr.value.startswith("register") and dotted(dec.value):
                    index[(dotted(dec.value) or "").rpartition(".")[2]].append(cls)
                elif isinstance(d.decorator, cst.Call) and isinstance(dec, cst.Name):
                    for registry in self._registries_entered(d.decorator):
                        index[registry].append(cls)
        return index

    def _registries_entered(self, decorator: cst.Call) -> list[str]:
        """The registries, by last name, that a decorator function of the program called as
        `decorator` enters what it decorates into: each `R.register...(...)` call in its body."""
        return list(dict.fromkeys(
            (dotted(c.func.value) or "").rpartition(".")[2] for func in self._named_callees(decorator)
            if self.enclosing_class(func) is None for c in self.findall(func, cst.Call)
            if isinstance(c.func, cst.Attribute) and c.func.attr.value.startswith("register") and dotted(c.func.value)))

    @cached_property
    def _functions_decorated_into(self) -> dict[str, list[cst.FunctionDef]]:
        """The functions (not methods) a decorator `@R.register...(...)` enters into a registry, by
        the registry's last name (as `_decorated_into` for classes)."""
        index: dict[str, list[cst.FunctionDef]] = defaultdict(list)
        for func in self.by_type.get(cst.FunctionDef, ()):
            assert isinstance(func, cst.FunctionDef)
            for d in func.decorators:
                dec = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                if isinstance(dec, cst.Attribute) and dec.attr.value.startswith("register") and dotted(dec.value) \
                        and self.enclosing_class(func) is None:
                    index[(dotted(dec.value) or "").rpartition(".")[2]].append(func)
        return index

    def registered_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions a call may run where what it calls comes from a lookup in a registry that a
        decorator enters functions into: `evaluation_fn(model, loader)` after `evaluation_fn =
        get_eval_function(...)`, whose `return EVAL_REGISTRY.get(task_type=...)` (any method of the
        registry but one that registers) may give any function written `@EVAL_REGISTRY.register(...)`
        (Deeplite's `classification_eval`, decision 0230). Followed through names and the program's
        helpers that return the lookup, 3 deep; [] unless every origin is such a lookup. Any of them:
        the key is a run's option. Not one of `user_functions` (a question of what a call may run,
        `Ranks.callees`, asks it): a data registry's 30 loaders, each taken for the one a call
        builds, were reported by DDP002, DDP006 and DDP021 (Deeplite's `get_data_splits_by_name`)."""
        if not self._functions_decorated_into or not dotted(call.func) and not isinstance(call.func, cst.Call):
            return []
        return self._registered_functions_held(call.func, 3)

    def _registered_functions_held(self, expr: cst.BaseExpression, depth: int) -> list[cst.FunctionDef]:
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and not func.attr.value.startswith("register") and dotted(func.value):
                found = self._functions_decorated_into.get((dotted(func.value) or "").rpartition(".")[2], [])
                if found:
                    return list(found)
            callees = self._named_callees(expr) if depth else []
            returns = [r for g in callees for r in self.returned(g)]
            held = [self._registered_functions_held(r, depth - 1) for r in returns]
            return list(dict.fromkeys(g for gs in held for g in gs)) if held and all(held) else []
        ref = self.ref(expr) if isinstance(expr, cst.Name) and depth else None
        # its assignments only: a parameter's callers are not asked (their index is built with this)
        sources = [value for _, value, stmt in self.writes(ref) if isinstance(stmt, cst.Assign)] if ref is not None else []
        held = [self._registered_functions_held(v, depth - 1) for v in sources]
        return list(dict.fromkeys(g for gs in held for g in gs)) if held and all(held) else []

    def _classes_a_lookup_returns(self, call: cst.Call) -> list[cst.ClassDef]:
        """The classes a call of the program's helper may return where its every return looks one up
        by name in a module of the program (`get_class('pkg.algos', cfg.algo)` of `def get_class(module,
        name): mod = importlib.import_module(module); return getattr(mod, name)`): any class of the
        modules it may load (`_classes_looked_up_in_module`); [] otherwise."""
        callees = [f for f in self.user_functions(call) if self.enclosing_class(f) is None]
        returns = [r for f in callees for r in self.returned(f)]
        if not returns or not all(isinstance(r, cst.Call) and mt.is_call_of(r, "getattr") for r in returns):
            return []
        found = [self._classes_looked_up_in_module(r) for r in returns if isinstance(r, cst.Call)]
        return [] if not all(found) else list(dict.fromkeys(c for cs in found for c in cs))

    def _inner_functions(self, expr: cst.BaseExpression) -> list[cst.FunctionDef]:
        """The inner functions `expr` comes from (`self.train_step_fn`, set to what
        `self._make_train_step_fn()` returns: its `def perform_train_step_fn`), [] unless every
        origin is one or a lambda of the program, and one is an inner function; the lambdas are not
        returned. A factory may return an inner function for some kinds and a lambda for another:
        oumi's `build_trainer` returns `_create_hf_builder_fn`'s inner `def _init_hf_trainer` for
        three kinds and `lambda *args, **kwargs: LemaTrainer(*args, **kwargs)` for the fourth;
        before, the lambda left `create_trainer_fn(...)` running no function of the program, and
        the barrier in the `save_model` of the trainer it builds was not seen (decision 0270)."""
        found: list[cst.FunctionDef] = []
        for origin in self.origins(expr, depth=3):
            if isinstance(origin, cst.Lambda):
                continue
            scope = self.scope(origin) if isinstance(origin, cst.Name) else None
            defs = [f for f in self.functions.get(origin.value, ()) if self.scope(f) is scope] \
                if type(scope) is cst.FunctionDef else []
            if not defs:
                return []
            found += defs
        return found

    def is_program_module(self, expr: cst.BaseExpression) -> bool:
        """Does `expr` name a module of the program: `trainer` of `import trainer`, or a package's
        module reached through its attributes (`mmc.training` of `import torch_mimicry as mmc`,
        whose `training/__init__.py` re-exports `Trainer` with `from .trainer import *`)? Not a
        function's own variable or parameter that another file's import shares a name with
        (`module = __import__(name)` in a helper, where a test does `import train as module`)."""
        name = dotted(expr)
        if name is None or not (name in self.local_modules or name.split(".")[0] in self.local_modules):
            return False
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        ref = self.ref(root) if isinstance(root, cst.Name) else None
        if ref is not None and ref.scope is self.module and self._assigned_not_imported(root, ref):
            return False  # `trainer = cfg.trainer_type(cfg)` in trainer.py, whose configuration does `import trainer`
        return not (ref is not None and isinstance(ref.scope, cst.FunctionDef)
                    and (ref.name in param_names(ref.scope) or bool(self.writes(ref))))

    def _assigned_not_imported(self, name: cst.Name, ref: Ref) -> bool:
        """Is the top-level `name` a variable of its own file, which assigns it and imports no module
        by that name, though another file of the program imports one (the programs' files share one
        top level)?"""
        if self.program is None or not self.writes(ref):
            return False
        part = self.program.part_of(name, self.parents)
        return any(self.program.part_of(stmt, self.parents) is part for _, _, stmt in self.writes(ref)) \
            and self._imports_of(part).qualify(name) is None

    def module_attribute(self, expr: cst.BaseExpression) -> Ref | None:
        """`cfg.model` read off a module of the program (`import cfg1 as cfg`, or `cfg =
        importlib.import_module(...)`): the name that module binds at its top level, which the
        program's modules share (the merged module's); None for anything else, or a module of a
        package read as its attribute."""
        if not isinstance(expr, cst.Attribute) or self.program is None or not self._holds_module(expr.value) \
                or self.qualify(expr) in self.part_names:
            return None
        return Ref(self.module, expr.attr.value)

    def _holds_module(self, expr: cst.BaseExpression) -> bool:
        """Does `expr` name a module of the program (`is_program_module`), or hold one a computed
        import loads (`_imported_by_name`)?"""
        return self.is_program_module(expr) or isinstance(expr, cst.Name) and self._imported_by_name(expr)

    def _imported_by_name(self, name: cst.Name) -> bool:
        """Does `name` hold a module of the program through an import by a computed name, as an
        import statement's name would (`cfg = importlib.import_module(args.cfg[:-3])`, whose modules
        the program read: `Program.by_name`)? Every assignment of it must be such a call."""
        if self.program is None or not self.program.by_name or name.value in self.local_modules:
            return False
        ref = self.ref(name)
        values = [v for _, v, _ in self.writes(ref)] if ref is not None else []
        return bool(values) and all(isinstance(v, cst.Call) and self._loads_read_module(v) for v in values)

    def _loads_read_module(self, call: cst.Call) -> bool:
        """`importlib.import_module(...)` whose modules the program read, or `module_from_spec(spec)` of
        a `spec = importlib.util.spec_from_file_location(name, path)` whose file it read."""
        assert self.program is not None
        func = self.qualify(call.func) or dotted(call.func)
        if func in IMPORTS_MODULE:
            return bool(self.program.by_name.get(call))
        if func not in FROM_SPEC or not call.args or not isinstance(call.args[0].value, cst.Name):
            return False
        ref = self.ref(call.args[0].value)
        specs = [v for _, v, _ in self.writes(ref)] if ref is not None else []
        return bool(specs) and all(bool(self.program.by_name.get(v)) for v in specs)

    def _defined_name(self, name: cst.Name) -> str:
        """The name a callee has where the program defines it: `train` bound by `from helper.loops
        import train_vanilla as train` is `train_vanilla` of the program's module `helper.loops`;
        any other name as written."""
        if self.program is None or name.value not in self.imports.aliases:  # no file imports the name
            return name.value
        module, _, defined = (self._imports_of(self.program.part_of(name, self.parents)).qualify(name) or "").rpartition(".")
        return defined if module in self.part_names else name.value

    def class_of(self, name: cst.Name) -> cst.ClassDef | None:
        """The class of the program the name `name` holds where it is written: the class of that
        name its own file imports, or else defines (`Runner` of simple_trainer.py, where
        simple_trainer_mcmc.py defines a `Runner` too), or else the program's one of that name."""
        defined = self._defined_name(name)
        if self.program is not None and len(self._same_named.get(defined, ())) > 1:
            part = self.program.part_of(name, self.parents)
            module, _, imported = (self._imports_of(part).qualify(name) or "").rpartition(".")
            home = module if imported == defined and module in self.part_names else part.name
            own = [c for c in self._same_named[defined] if self.program.part_of(c, self.parents).name == home]
            if own:
                return own[-1]
        return self.classes.get(defined)

    def _imports_of(self, part) -> Imports:
        if part.name not in self._part_imports:
            self._part_imports[part.name] = Imports(part.module)
        return self._part_imports[part.name]

    @cached_property
    def _same_named(self) -> dict[str, list[cst.ClassDef]]:
        """The program's classes by name, in source order (several where two files define one)."""
        return _grouped(self.by_type.get(cst.ClassDef, ()), lambda c: c.name.value)

    def library_callee(self, func: cst.BaseExpression) -> bool:
        """Is `func` a dotted name whose root only an import of a module outside the program binds
        (`plt` of `plt.plot(...)`, `transforms` of `transforms.Compose(...)`, `tqdm` of `from tqdm
        import tqdm`), never assigned? Such a call runs no function and builds no class of the
        program, and holds none of its objects; the analyses that follow the program's own
        functions, classes and names skip it."""
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value in self.local_modules or self.assigned_names.get(root.value):
            return False
        qualified = self.imports.aliases.get(root.value)
        if qualified is None or qualified.startswith("."):
            return False
        parts = qualified.split(".")
        return not any(".".join(parts[:i]) in self.part_names for i in range(1, len(parts) + 1))

    @cached_property
    def part_names(self) -> frozenset[str]:
        return frozenset(part.name for part in self.program.parts) if self.program is not None else frozenset()

    def _base(self, cls: cst.ClassDef) -> cst.ClassDef | None:
        """The first base of `cls` that is a class of the program (`BaseTrainer`, `base.BaseTrainer`)."""
        for arg in cls.bases:
            name = (dotted(arg.value) or "").rpartition(".")[2]
            if self.classes.get(name) not in (None, cls):
                return self.classes[name]
        return None

    def _lineage(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """`cls` and its bases in the program, nearest first (found once per class: every `self.x`
        asks for its root class)."""
        line = self._lineages.get(cls)
        if line is None:
            line = self._lineages[cls] = [cls]
            while (base := self._base(line[-1])) is not None and base not in line:
                line.append(base)
        return line

    def lineage(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """`cls` and its bases in the program, nearest first."""
        return self._lineage(cls)

    def library_based(self, cls: cst.ClassDef) -> bool:
        """Does `cls`, or a base of it in the program, derive from a class outside the program (a
        library's: `class Solver(flashy.BaseSolver)`), not `object`?"""
        return any((dotted(b.value) or "object").rpartition(".")[2] not in (*self.classes, "object")
                   for c in self._lineage(cls) for b in c.bases)

    def method(self, cls: cst.ClassDef, name: str) -> list[cst.FunctionDef]:
        """What `obj.name(...)` runs on an instance of `cls` (its own method or the nearest base's),
        and the overrides of its subclasses (`_methods`)."""
        return self._methods(cls, name)

    def kin_classes(self, one: cst.ClassDef, other: cst.ClassDef) -> bool:
        """Is one of the classes the other or a base of it? Siblings under one base share its
        `self.x` (one `Ref`), yet an instance of one never holds what the other builds."""
        return one in self._lineage(other) or other in self._lineage(one)

    def _root_class(self, cls: cst.ClassDef) -> cst.ClassDef:
        """The program's topmost base of `cls`: `self.x` is one attribute in a class and its bases."""
        return self._lineage(cls)[-1]

    def _methods(self, cls: cst.ClassDef, name: str) -> list[cst.FunctionDef]:
        """What `obj.name(...)` may run on an instance of `cls` or of a subclass: the method of
        the nearest class of its lineage that defines it (`BaseTrainer.train`, in another module),
        and the overrides in the subclasses of `cls` (`self._train_epoch()` in a base class runs
        the subclasses'; in one subclass, never a sibling's: `MnistAgent.train` does not run
        `DCGANAgent.train_one_epoch`)."""
        root = self._root_class(cls)
        found = [f for f in self.functions.get(name, ()) if self.enclosing_class(f) is not None
                 and self._root_class(self.enclosing_class(f)) is root]
        lineage = self._lineage(cls)
        own = next(([f for f in found if self.enclosing_class(f) is c] for c in lineage
                    if any(self.enclosing_class(f) is c for f in found)), [])
        below = [f for f in found if self.enclosing_class(f) not in lineage
                 and cls in self._lineage(self.enclosing_class(f))]  # a subclass's, not a sibling's
        return own + below

    def _constructor(self, cls: cst.ClassDef) -> list[cst.FunctionDef]:
        """The `__init__` `Cls(...)` runs: its own, else the nearest base's."""
        for c in self._lineage(cls):
            init = [f for f in self.functions.get("__init__", ()) if self.enclosing_class(f) is c]
            if init:
                return init
        return []

    def _visible(self, funcs: list[cst.FunctionDef], call: cst.Call) -> list[cst.FunctionDef]:
        """Of functions of one name, those the call's name can see: a function defined inside
        another only from within that one, where it hides the others (two trainers, each with its
        own inner `def save_checkpoint():`, each calling its own)."""
        inner = [f for f in funcs if isinstance(self.scope(f), cst.FunctionDef)]
        if not inner:
            return funcs
        enclosing = [f for f in inner if self.is_inside(call, self.scope(f))]
        return enclosing or [f for f in funcs if f not in inner]

    def _same_file(self, funcs: list[cst.FunctionDef], call: cst.Call) -> list[cst.FunctionDef]:
        """In a program, of the functions of one name in several files, those of the file the
        call names through its imports (`from utils import train`), else of the call's own file."""
        if len(funcs) < 2 or self.program is None:
            return funcs
        qualified = self.qualify(call.func)
        wanted = self._imported_from(call) or (qualified.rpartition(".")[0] if qualified else None) or \
            self.program.part_of(call, self.parents).name
        names = {f: self.program.part_of(f, self.parents).name for f in funcs}
        return [f for f in funcs if names[f] == wanted] or \
            [f for f in funcs if names[f].rpartition(".")[2] == wanted.rpartition(".")[2]] or funcs

    def _imported_from(self, call: cst.Call) -> str | None:
        """The module the call's own file imports the called name from, relative imports included:
        `from .engine import evaluate` -> "engine", `from tool.ref.engine import evaluate` ->
        "tool.ref.engine" (a file of the program is named by its stem or, imported through its
        package, its dotted name: `_same_file` matches either, not coco_eval.py's `evaluate(self)`);
        None where that file imports no such name from a module."""
        name = call.func.value if isinstance(call.func, cst.Name) else None
        if name is None:
            return None
        part = self.program.part_of(call, self.parents)
        for node in self.by_type.get(cst.ImportFrom, ()):
            if isinstance(node.names, cst.ImportStar) or node.module is None:
                continue
            bound = [a for a in node.names if (a.asname.name.value if a.asname else dotted(a.name)) == name]
            if bound and self.program.part_of(node, self.parents) is part:
                return dotted(node.module)
        return None

    def built_classes(self, call: cst.Call) -> list[cst.ClassDef]:
        """The classes of the program `call` builds an instance of, by the names it is written with
        (`Net(...)`, `model_cls(...)` of `model_cls = A if c else B`, `Net.from_pretrained(path)`)."""
        return self._instances_of(call)

    def builds(self, call: cst.Call) -> bool:
        """Does the call build an instance of a class of the program (`Net()`, `models.Net()`,
        `pipeline_class(conf)` of `pipeline_class = TASK_PIPELINE[task]`, `TASK_PIPELINE[task](conf)`),
        rather than return what a function returns?"""
        return bool(self._instances_of(call))

    def _called_instances(self, expr: cst.BaseExpression) -> list[cst.FunctionDef]:
        """The `__call__` methods an instance of the program's classes that `expr` holds runs when
        called: `self.early_stopping(val_loss, self.model)` where `__init__` set
        `self.early_stopping = EarlyStopping(path)` (not a method of the class)."""
        return [m for cls in self._instances_of(expr) for m in self._methods(cls, "__call__")]

    def _instance_of(self, expr: cst.BaseExpression) -> cst.ClassDef | None:
        """The class of this file `expr` is an instance of, when it is one class."""
        classes = self._instances_of(expr)
        return classes[0] if len(classes) == 1 else None

    def class_named(self, expr: cst.BaseExpression) -> cst.ClassDef | None:
        """The class of the program `expr` names (`DeepSpeech`, `model.DeepSpeech` of `import
        model`), where no assignment rebinds the name."""
        if isinstance(expr, cst.Attribute) and self.is_program_module(expr.value):
            expr = expr.attr
        if not isinstance(expr, cst.Name) or expr.value in self.functions:
            return None
        ref = self.ref(expr)
        return None if ref is not None and self.writes(ref) else self.class_of(expr)

    def _looks_up_instead(self, cls: cst.ClassDef, name: str) -> bool:
        """Does the program's own `cls.name` (a classmethod `from_config`) build no instance of `cls`,
        each of its returns a class instead, looked up in a registry a decorator fills (`return
        MODEL_REGISTRY.get(model_name)`, round 31's modular framework) or named?"""
        returns = [r for m in self.method(cls, name) for r in self.returned(m)]
        return bool(returns) and all(self._registered_classes(r) or self._classes_named(r) for r in returns)

    def _instances_of(self, expr: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of this file `expr` may be an instance of: `Cls(...)`, or a name every
        assignment of which is `Cls(...)` or None (`model = None`, then `model = GAN(args)` or
        `model = WGAN(args)` by the branch taken), its element of an unpacked tuple included
        (`q1, q2 = QNet(lr), QNet(lr)`, or returned so by a helper), or an item of a list of them
        (`self.agents[i]`, `for agent in self.agents:`, `_item_classes`); [] when some assignment is
        anything else."""
        if isinstance(expr, cst.Subscript) and dotted(expr.value):  # `self.agents[i]`, not `[1:]`
            return self._item_classes(expr.value) if isinstance(expr.slice[0].slice, cst.Index) else []
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SELF_RETURNING:
            return self._instances_of(expr.func.value)  # `Net().to(device)`, `model.train()`: the module itself
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in ALTERNATE_CONSTRUCTORS and isinstance(expr.func.value, cst.Name):
            named = expr.func.value  # `model_cls.from_pretrained(path)`: an instance of the class it is called on
            cls = self.classes.get(named.value)
            if cls is not None and self._looks_up_instead(cls, expr.func.attr.value):
                return []
            return [cls] if cls is not None else self._picked_classes(named)
        if isinstance(expr, cst.Call):  # (`cfg.trainer_type(cfg)`: the class the module `cfg` binds to it)
            func = expr.func.attr if isinstance(expr.func, cst.Attribute) and \
                self._holds_module(expr.func.value) else expr.func
            cls = self.classes.get(func.value) if isinstance(func, cst.Name) else None
            if isinstance(func, cst.Subscript) and dotted(func.value):
                return self._registry_classes(func.value)
            if isinstance(func, cst.Call):
                return self.classes_looked_up(func)
            if cls is None and isinstance(func, cst.Name) and func.value in self.functions:
                return self._returned_instances(expr, func)
            return [cls] if cls is not None else self._picked_classes(func) if isinstance(func, cst.Name) else []
        # a name, or an attribute a class keeps (`self.checkpointer = checkpointer_class(path)` in `__init__`)
        ref = self.ref(expr) if isinstance(expr, cst.Name) or (dotted(expr) or "").startswith("self.") else None
        if ref in self._instancing:  # `b = a.to(d)` and `a = b.float()`: the cycle adds no class
            self._cycles += 1
            return _CYCLE
        values = [v for v in [*(v for _, v, _ in self.writes(ref)), *self.unpacked_elements(ref),
                              *self._entering_themselves(ref), *(self._class_fields.get(ref, ()) if ref else ())]
                  if not mt.is_name(v, "None") and not self._same_module_again(v, ref)] if ref is not None else []
        if ref is not None:
            self._instancing.add(ref)
        try:
            classes = [self._instances_of(v) if isinstance(v, (cst.Call, cst.Attribute)) else
                       self._parameter_classes(v) or self._unpacked_local(v, ref) if isinstance(v, cst.Name) else []
                       for v in values]
        finally:
            self._instancing.discard(ref)
        if classes and all(c is _CYCLE for c in classes):
            return _CYCLE
        classes = [c for c in classes if c is not _CYCLE]
        classes += [self._item_classes(container) for container in self._looped(ref)] if ref else []
        if not classes and ref is not None and ref.name.count(".") == 1 and ref.name.startswith("self."):
            return self._back_references.get(ref.name[len("self."):], [])
        if not classes and isinstance(expr, cst.Attribute):
            return self._kept_by_instances(expr)
        return [] if not classes or not all(classes) else list(dict.fromkeys(c for cs in classes for c in cs))

    def _unpacked_local(self, name: cst.Name, ref: Ref | None) -> list[cst.ClassDef]:
        """The classes of a local of another function that a name unpacked from that function's
        returned tuple holds (`env, agent = env_agent_config(cfg)`, whose `return env, agent` returns
        its `agent = DuelingDQN(...)`): that local's own (`_instances_of`); [] for a name of the same
        scope, or one that is not bound by unpacking."""
        other = self.ref(name)
        if ref is None or other is None or other.scope is ref.scope or not any(
                e is name for e in self.unpacked_elements(ref)):
            return []
        found = self._instances_of(name)
        return [] if found is _CYCLE else found

    def _kept_by_instances(self, expr: cst.Attribute) -> list[cst.ClassDef]:
        """`trainer.model`, `self.model.feature`: the classes of what the instances before the dot
        keep under that attribute (`self.feature = Embed()` in `Net.__init__`, for a `Net` that
        `self.model` holds); [] where one of those is anything else, or where the object before the
        dot is of no known class. A method called on it runs that class's (`cnn_feature.save(path)`,
        `cnn_feature = self.model.cnn_feature`: a few-shot GNN's embedding, saved on its own)."""
        owners = self._instances_of(expr.value)
        if owners is _CYCLE or not owners:
            return []
        found: list[cst.ClassDef] = []
        for owner in owners:
            ref = Ref(self._root_class(owner), f"self.{expr.attr.value}")
            values = [v for _, v, _ in self.writes(ref) if not mt.is_name(v, "None")]
            kept = [self._instances_of(v) if isinstance(v, cst.Call) else [] for v in values]
            if not kept or any(k is _CYCLE or not k for k in kept):
                return []
            found += [c for k in kept for c in k]
        return list(dict.fromkeys(found))

    def _returned_instances(self, call: cst.Call, name: cst.Name) -> list[cst.ClassDef]:
        """The classes a call of the program's functions returns an instance of, where every value
        each returns (but None) is a call of a name that holds classes: a factory building what a
        configuration names (`data = instantiate(cfg["data"])`, whose `return cls(**params)` builds
        any class `cls = getattr(importlib.import_module(module_path), name)` may be), or where every
        value is a construction of a class of the program (`get_trainer(name, **kwargs)`: `return
        BasicTrainer(**kwargs)` or `return NaiveTrainer(**kwargs)` by name, the tda project's trainer
        whose `trainer.build(...)` makes the optimizer: before, `trainer`'s methods ran nothing
        ddpify read), or a local every value of which is one (`_built_local`: `vae = VAE_Dense(...)` or
        `vae = TimeVAE(...)` by branch, then `return vae`; before, `vae.fit_on_data(...)` on what it
        returns ran nothing, and the model was synced after its training); [] otherwise. `name`: the
        function's name as the call spells it, or after the program module it is read from
        (`ptt.create_default_trainer(model, ...)` of `import pytorchtrainer as ptt`, whose package
        re-exports it: before, only a call by the bare name was followed to what it returns, and the
        returned trainer's `trainer.train(loader)` ran nothing ddpify read: its epoch loop got no
        `set_epoch`)."""
        funcs = [f for f in self.functions.get(name.value, ()) if self.enclosing_class(f) is None]
        funcs = self._same_file(funcs, call) if funcs else funcs
        if not funcs:
            return []
        if any(f in self._instancing for f in funcs):
            self._cycles += 1
            return []
        self._instancing.update(funcs)
        try:
            found = [self._picked_instances(r) for f in funcs for r in self.returned(f) if not mt.is_name(r, "None")]
        finally:
            self._instancing.difference_update(funcs)
        found = [c for c in found if c is not _CYCLE]
        built = [[self.classes[r.func.value]] if isinstance(r, cst.Call) and isinstance(r.func, cst.Name)
                 and r.func.value in self.classes else self._built_local(r, f) for f in funcs
                 for r in self.returned(f) if not mt.is_name(r, "None")]
        if built and all(built) and not all(found):
            return list(dict.fromkeys(c for cs in built for c in cs))
        return [] if not found or not all(found) else list(dict.fromkeys(c for cs in found for c in cs))

    def _built_local(self, value: cst.BaseExpression, func: cst.FunctionDef) -> list[cst.ClassDef]:
        """The classes of the program a local name `func` returns holds an instance of, where every
        value `func` gives it (but None) is a construction of one (`if kind == "wide": model =
        WideAE()`, `else: model = AE()`, then `return model`); [] otherwise (a parameter, a value
        of anything else)."""
        ref = self.ref(value) if isinstance(value, cst.Name) else None
        if ref is None or ref.scope is not func or ref.name in param_names(func):
            return []
        values = [v for _, v, _ in self.writes(ref) if not mt.is_name(v, "None")]
        built = [self.class_of(v.func) if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) else None
                 for v in values]
        return [] if not built or not all(built) else list(dict.fromkeys(c for c in built if c is not None))

    def _picked_instances(self, value: cst.BaseExpression, depth: int = 2) -> list[cst.ClassDef]:
        """The classes `value` is an instance of where it is built from a class picked by name: a
        call of a name that holds such classes (`cls(**params)`, `_picked_classes`), of an item of a
        registry of classes (`recorders[config.recorder.name](config)`), of what a lookup by name
        gives (`get_class(module, name)(cfg)`), or a name every value of which is one (`instance =
        model(opt)`, then `return instance`); [] otherwise."""
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Name):
                return [] if func.value in self.classes or func.value in self.functions else self._picked_classes(func)
            if isinstance(func, cst.Subscript) and dotted(func.value):
                return self._registry_classes(func.value)
            return self.classes_looked_up(func) if isinstance(func, cst.Call) else []
        ref = self.ref(value) if isinstance(value, cst.Name) and depth else None
        values = [v for _, v, _ in self.writes(ref) if not mt.is_name(v, "None")] if ref is not None else []
        found = [self._picked_instances(v, depth - 1) for v in values]
        return [] if not found or not all(found) else list(dict.fromkeys(c for cs in found for c in cs))

    def _same_module_again(self, value: cst.BaseExpression, ref: Ref) -> bool:
        """`model = model.to(device)`: what `ref` held already, bound to it again."""
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in SELF_RETURNING and dotted(value.func.value) is not None and \
            self.ref(value.func.value, value) == ref

    def loops_binding(self, ref: Ref) -> list[cst.For]:
        """The `for` loops that bind the name `ref` in their target (`net` of `for net in nets:`, `p`
        of `for n, p in model.named_parameters():`), in source order: the one answer for the object
        core (what a loop variable holds), the call graph (`_looped`) and what is the same on every
        process (an item of a shared list)."""
        return self._loops_binding.get(ref, [])

    @cached_property
    def _back_references(self) -> dict[str, list[cst.ClassDef]]:
        """attribute -> the classes whose methods hand an object of the program themselves under that
        name (`hook.trainer = self` for each hook, `callback.model = self`), where every assignment of
        that attribute on another object is so: what a class that never sets `self.trainer` reads there
        (the hook's `self.trainer.save_ckpt(...)`)."""
        index: dict[str, list[cst.ClassDef]] = defaultdict(list)
        other: set[str] = set()
        for target, value, stmt in self.assigns:
            if not isinstance(target, cst.Attribute) or dotted(target.value) in (None, "self"):
                continue
            cls = self.enclosing_class(stmt)
            if mt.is_name(value, "self") and cls is not None and isinstance(self.scope(stmt), cst.FunctionDef):
                index[target.attr.value].append(cls)
            else:
                other.add(target.attr.value)
        return {attr: list(dict.fromkeys(classes)) for attr, classes in index.items() if attr not in other}

    @cached_property
    def _loops_binding(self) -> dict[Ref, list[cst.For]]:
        index: dict[Ref, list[cst.For]] = defaultdict(list)
        for loop in self.loops:
            if isinstance(loop, cst.For):
                for name in target_names(loop.target):
                    ref = self.ref(name, loop)
                    if ref is not None:
                        index[ref].append(loop)
        return index

    def _looped(self, ref: Ref) -> list[cst.BaseExpression]:
        """`for agent in self.agents:`, `for i, agent in enumerate(self.agents):`, `for agent in
        self.agents.values():`, `for name, agent in self.agents.items():`: the containers the loop
        variable `ref` takes its items from."""
        found = []
        for loop in self.loops_binding(ref):
            target, container = loop.target, loop.iter
            pair = isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
            if isinstance(container, cst.Call) and mt.is_name(container.func, "enumerate") and container.args and pair:
                target, container = target.elements[1].value, container.args[0].value
            elif isinstance(container, cst.Call) and isinstance(container.func, cst.Attribute) and not container.args \
                    and (container.func.attr.value == "values" or container.func.attr.value == "items" and pair):
                target = target.elements[1].value if container.func.attr.value == "items" else target
                container = container.func.value
            if isinstance(target, cst.Name) and dotted(container) and self.ref(target, loop) == ref:
                found.append(container)
        return found

    def item_containers(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The containers `expr` is an item of: `c` for `c[i]` (not a slice), and for a loop
        variable what its loops take items from (`for agent in self.agents:`, `.values()`)."""
        if isinstance(expr, cst.Subscript) and dotted(expr.value):
            return [expr.value] if isinstance(expr.slice[0].slice, cst.Index) else []
        ref = self.ref(expr) if isinstance(expr, cst.Name) else None
        return list(self._looped(ref)) if ref is not None else []

    def items_told(self, container: cst.BaseExpression) -> bool:
        """Is every item of `container` an instance of classes of the program ddpify can tell
        (`_item_classes`)? Not where items come by `extend`, `update` or `+=`, or the container is
        passed in."""
        return bool(self._item_classes(container))

    def _item_classes(self, container: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of the program the items of a list, tuple or dict are instances of (`self.agents
        = [DDPG(...) for _ in range(n)]`, then `self.agents.append(DDPG(...))`; `{"low": DDPG(...)}`):
        every value given to it is written out, or a comprehension, whose items are such instances,
        and so is every item added to it (`append`, `insert`, `setdefault`, `x[i] = ...`); [] when
        any is something else (`extend`, `update`, `+=`)."""
        ref = self.ref(container)
        if ref is None:
            return []
        if ref in self._itemizing:  # asked again while answering: a cycle adds nothing
            self._cycles += 1
            return []
        self._itemizing.add(ref)
        try:
            return self._items_of(ref)
        finally:
            self._itemizing.discard(ref)

    def _items_of(self, ref: Ref) -> list[cst.ClassDef]:
        writes = self.writes(ref)
        if any(isinstance(stmt, cst.AugAssign) for _, _, stmt in writes):
            return []
        # (`self.model, self.callbacks = model, list(callbacks)`: its element of the tuple written out)
        values = [_copied(value) for value in [*(value for _, value, _ in writes), *self.unpacked_from(ref)]]
        if not values:
            return []
        items: list[cst.BaseExpression] = list(self._item_writes.get(ref, []))
        for value in [v for v in values if isinstance(v, cst.Name)]:  # `self.callbacks = callbacks` in `__init__`:
            param = self.ref(value)  # what every call passes for the parameter (`Trainer(..., [Checkpoint(), Printer()])`)
            passed = [self.argument_for(c, param.scope, param.name) for c in self._constructions(param.scope)] \
                if param is not None and isinstance(param.scope, cst.FunctionDef) and param.name in param_names(param.scope) \
                and not self.writes(param) else [None]
            values = [v for v in values if v is not value] + (passed if passed and None not in passed else [value])
        held: list[cst.ClassDef] = []  # the item classes of another container a parameter is given
        for value in values:
            if isinstance(value, cst.Name) and self.ref(value) != ref:  # `Trainer(callbacks=callbacks)`, the caller's list
                classes = self._item_classes(value)
                if not classes:
                    return []
                held += classes
            elif isinstance(value, (cst.List, cst.Tuple)) and all(isinstance(e, cst.Element) for e in value.elements):
                items += [e.value for e in value.elements]
            elif isinstance(value, cst.Dict) and all(isinstance(e, cst.DictElement) for e in value.elements):
                items += [e.value for e in value.elements]
            elif isinstance(value, (cst.ListComp, cst.DictComp)):
                items.append(value.elt if isinstance(value, cst.ListComp) else value.value)
            else:
                return []
        for method, call in self.filled(ref):
            if method not in GROWN:
                continue
            if method in ("extend", "update") or not call.args:
                return []
            items.append(call.args[-1].value)
        classes = [self._instances_of(v) if isinstance(v, cst.Call) else [] for v in items]
        if held:
            classes.append(held)
        return [] if not classes or not all(classes) else list(dict.fromkeys(c for cs in classes for c in cs))

    def _constructions(self, init: cst.FunctionDef) -> list[cst.Call]:
        """The calls that build an instance of the class whose `__init__` is `init`, by its name
        (`Trainer(...)`, `trainer.Trainer(...)`): found without the call graph, which asks for the
        items of containers while it is built."""
        cls = self.enclosing_class(init)
        if init.name.value != "__init__" or cls is None:
            return []
        return [c for c in self.calls if isinstance(func := (c.func.attr if isinstance(c.func, cst.Attribute)
                                                             and self.is_program_module(c.func.value) else c.func), cst.Name)
                and self.class_of(func) is cls]

    def filled(self, ref: Ref) -> list[tuple[str, cst.Call]]:
        """(method, call) for the calls that fill the container `ref` names in place, in source order: `x.append(v)`,
        `.insert(i, v)`, `.appendleft(v)`, `.add(v)`, `.setdefault(k, v)` (one item, the last
        argument), `.extend(vs)`, `.update(d)` (items not written out), and an optimizer's
        `.add_param_group(group)`. The one answer for the object core (what a list holds, what an
        optimizer is given), the call graph (`_items_of`), the wraps of a `ModuleList`'s modules
        and what is the same on every process (a list filled with shared values)."""
        return self._filled.get(ref, [])

    def unpacked_entries(self, call: cst.Call, key: str, stored: bool = False) -> list[cst.BaseExpression]:
        """The values `call` may pass as its keyword `key` through a `**mapping` argument: the entry
        `key` of the dicts the mapping's name is bound to (written out, or `dict(key=...)`), and of
        what `.update(...)`s of that name merge in (a dict written out, a keyword argument, another
        such name): `DataLoader(ds, **train_kwargs)` after `train_kwargs.update(cuda_kwargs)` with
        `cuda_kwargs = {"shuffle": True}`. With `stored`, also the values stored into the name by
        that key (`data_args["sampler"] = DistributedSampler(ds)`, check's DDP006; convert does not
        ask it). Empty where no such entry is written."""
        return [v for arg in call.args if arg.star == "**" for v in self._mapping_entries(arg.value, key, 3, stored)]

    def _mapping_entries(self, expr: cst.BaseExpression, key: str, depth: int,
                         stored: bool = False) -> list[cst.BaseExpression]:
        if isinstance(expr, cst.Dict):
            return [e.value for e in expr.elements if isinstance(e, cst.DictElement) and mt.string_value(e.key) == key]
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "dict"):
            return [a.value for a in expr.args if a.keyword is not None and a.keyword.value == key] + [
                v for a in expr.args if a.keyword is None for v in self._mapping_entries(a.value, key, depth)]
        ref = self.ref(expr) if depth and dotted(expr) else None
        if ref is None:
            return []
        found = [v for source in self.sources(ref) for v in self._mapping_entries(source, key, depth - 1, stored)]
        if stored:
            found += [value for value, stmt in self._item_stores.get(ref, []) if isinstance(stmt, cst.Assign)
                      and any(isinstance(t.target, cst.Subscript) and len(t.target.slice) == 1
                              and isinstance(t.target.slice[0].slice, cst.Index)
                              and mt.string_value(t.target.slice[0].slice.value) == key for t in stmt.targets)]
        for a in (a for method, update in self.filled(ref) if method == "update" for a in update.args):
            if a.keyword is None:
                found += self._mapping_entries(a.value, key, depth - 1)
            elif a.keyword.value == key:
                found.append(a.value)
        return found

    def unpacked_keys(self, call: cst.Call) -> set[str] | None:
        """Every keyword `call` may pass through its `**mapping` arguments, where all of them are
        written out (`train_kwargs = {"batch_size": 64}` and its `.update(cuda_kwargs)` with
        `cuda_kwargs = {"shuffle": True}`: {"batch_size", "shuffle"}); None where a mapping comes
        from elsewhere (a parameter, a call, a `**` inside), so that any keyword may be among them."""
        found: set[str] = set()
        for arg in call.args:
            if arg.star == "**":
                keys = self._mapping_keys(arg.value, 3)
                if keys is None:
                    return None
                found |= keys
        return found

    def keyword_given(self, call: cst.Call, name: str) -> Given:
        """What `call` passes as its keyword `name`: the one question of every rewrite that adds a
        keyword to a call (then `build.add_keyword`). The value written in the call (`disable=...`),
        else the entries `name` of the mappings its `**` arguments unpack where they are written out
        (a dict written out or `dict(...)`, their `.update(...)`s: `unpacked_entries`; their item
        stores, `opts["name"] = ...`), and whether a mapping whose keys are not all known
        (`unpacked_keys` None: a parameter no call fills with one, a call's result) may pass it too.
        disentangling-vae's trainer (25c; decision 0206):

            kwargs = dict(desc="Epoch {}".format(epoch + 1), leave=False, disable=not self.is_progress_bar)
            with trange(len(data_loader), **kwargs) as t:

        passes `disable` through `**kwargs` (values: `not self.is_progress_bar`, spread, known): a
        `disable=` added beside it was a TypeError on every process ("got multiple values for keyword
        argument 'disable'")."""
        arg = mt.keyword(call, name)
        if arg is not None:
            return Given([arg.value], spread=False, known=True)
        if not mt.has_double_star(call):
            return Given([], spread=False, known=True)
        keys = self.unpacked_keys(call)
        values = self.unpacked_entries(call, name)
        spread = {ref for arg in call.args if arg.star == "**" and dotted(arg.value)
                  and (ref := self.ref(arg.value)) is not None}
        for target, value, stmt in self.assigns if spread else ():  # `opts["disable"] = not verbose`
            index = target.slice[0].slice if isinstance(target, cst.Subscript) and len(target.slice) == 1 else None
            if isinstance(index, cst.Index) and mt.string_value(index.value) == name and \
                    not isinstance(stmt, cst.AugAssign) and dotted(target.value) and self.ref(target.value) in spread:
                values.append(value)
        known = keys is not None and (name not in keys or bool(values))
        return Given(values, spread=keys is None or name in keys, known=known)

    def _mapping_keys(self, expr: cst.BaseExpression, depth: int) -> set[str] | None:
        if isinstance(expr, cst.Dict):
            keys = [mt.string_value(e.key) if isinstance(e, cst.DictElement) else None for e in expr.elements]
            return None if None in keys else {k for k in keys if k is not None}
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "dict"):
            found: set[str] = set()
            for a in expr.args:
                more = {a.keyword.value} if a.keyword is not None else None if a.star else self._mapping_keys(a.value, depth)
                if more is None:
                    return None
                found |= more
            return found
        ref = self.ref(expr) if depth and isinstance(expr, (cst.Name, cst.Attribute)) else None
        stored = [(target, value) for target, value, _ in self.assigns if ref is not None and  # `kw["sampler"] = s`
                  isinstance(target, cst.Subscript) and dotted(target.value) == ref.name and self.ref(target.value) == ref]
        items = {id(value) for _, value in stored}  # (what the items hold, not the mapping)
        sources = [s for s in self.sources(ref) if id(s) not in items] if ref is not None else []
        if ref is None or not sources or any(isinstance(stmt, cst.AugAssign) for _, _, stmt in self.writes(ref)):
            return None
        found = set()
        for more in [self._mapping_keys(s, depth - 1) for s in sources]:
            if more is None:
                return None
            found |= more
        for target, _ in stored:
            key = mt.string_value(target.slice[0].slice.value) if isinstance(target.slice[0].slice, cst.Index) else None
            if key is None:
                return None
            found.add(key)
        for method, call in self.filled(ref):
            if method != "update":
                return None
            for a in call.args:
                more = {a.keyword.value} if a.keyword is not None else None if a.star else self._mapping_keys(a.value, depth - 1)
                if more is None:
                    return None
                found |= more
        return found

    @cached_property
    def _filled(self) -> dict[Ref, list[tuple[str, cst.Call]]]:
        index: dict[Ref, list[tuple[str, cst.Call]]] = defaultdict(list)
        for call in self.calls:
            func = call.func
            if type(func) is cst.Attribute and func.attr.value in FILLS and dotted(func.value) and \
                    (ref := self.ref(func.value)) is not None:
                index[ref].append((func.attr.value, call))
        return index

    def _picked_classes(self, name: cst.Name) -> list[cst.ClassDef]:
        """The classes of the program a name that is no function holds where every assignment of
        it names classes: `checkpointer_class = Distributed if sharded else Single`, or takes an
        item of a registry of classes (`task_pipeline = TASK_PIPELINE[task]`), or a class a registry
        function looks up (`_looked_up_classes`), or a class looked up by name in a module of the
        program (`cls = getattr(importlib.import_module(module_path), name)`: any class of the
        modules it may load, `_classes_looked_up_in_module`)."""
        ref = self.ref(name) if name.value not in self.functions else None
        if ref is None:
            return []
        if ref in self._instancing:  # (`model = cls` ... `cls = model`: the cycle adds none)
            self._cycles += 1
            return []
        values = [v.attr if isinstance(v, cst.Attribute) and self.is_program_module(v.value) else v
                  for _, v, _ in self.writes(ref) if not mt.is_name(v, "None")]  # `trainer.Classifier`: `Classifier`
        self._instancing.add(ref)
        try:
            named = [self._registry_classes(v.value) or self._stored_classes(v)
                     if isinstance(v, cst.Subscript) and dotted(v.value)
                     else _class_names(self.classes, v) or self._looked_up_classes(v) or self._registered_classes(v)
                     or self._stored_classes(v)
                     or (self._picked_classes(v) if isinstance(v, cst.Name) and v.value not in self.classes else [])
                     or (self._classes_looked_up_in_module(v) if isinstance(v, cst.Call) and len(v.args) >= 2
                         and not isinstance(v.args[1].value, cst.SimpleString) else []) for v in values]
            if not values and (imported := self._imported_classes(name)):  # `from m import A as cls` in a function
                named = [imported]
            elif not values and type(ref.scope) is cst.FunctionDef:  # `for name, cls in modellib.__dict__.items():`
                named = [self._namespace_classes(ref)]
        finally:
            self._instancing.discard(ref)
        return _every_one_named(named)

    def held_classes(self, attr: cst.Attribute) -> list[cst.ClassDef]:
        """`_held_classes` of `self.x`, for the object core: a call of it builds an instance of one."""
        return self._held_classes(attr) if dotted(attr.value) == "self" else []

    def _held_classes(self, attr: cst.Attribute) -> list[cst.ClassDef]:
        """The classes of the program `self.x` holds where every assignment of it names classes,
        directly or through a call of the program that returns one (`self.evaluator =
        self._build_evaluator()`, whose `return Evaluator`), but one that rebinds it to what calling
        it builds (`self.evaluator = self.evaluator(config, self.visualizer)`): that call runs the
        class's `__init__`. Round 31's held-out modular framework (31a; decision 0264): before, the
        call ran nothing of the program, the TensorBoard writer handed to it was not followed into
        the evaluator's `self.visualizer`, left unguarded there, and was None on every other process."""
        ref = self.ref(attr)
        if ref is None or ref in self._instancing:
            return []
        text = self.code(attr)
        values = [v for _, v, _ in self.writes(ref) if not mt.is_name(v, "None") and not self.instantiated(v, text)]
        self._instancing.add(ref)
        try:
            named = [self._classes_named(v) or self._returned_classes(v) or self._looked_up_classes(v)
                     or self._registered_classes(v) for v in values]
        finally:
            self._instancing.discard(ref)
        return _every_one_named(named)

    def instantiated(self, value: cst.BaseExpression, text: str) -> bool:
        """Is `value` what calling the class `text` holds builds, the attribute rebound to its instance:
        `self.model(...)`, moved (`self.model(...).cuda()`), or such a call on each branch of a
        conditional (`self.model(num_classes=n).cuda() if cuda else self.model(num_classes=n)`)?"""
        if isinstance(value, cst.IfExp):
            return self.instantiated(value.body, text) and self.instantiated(value.orelse, text)
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in mt.SELF_RETURNING and self.code(value.func.value) != text:
            value = value.func.value
        return isinstance(value, cst.Call) and self.code(value.func) == text

    def _classes_named(self, expr: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of the program `expr` names, imported from another module too."""
        return _class_names(self.classes, expr) or ([c] if (c := self.class_named(expr)) is not None else [])

    def _returned_classes(self, value: cst.BaseExpression, depth: int = 3) -> list[cst.ClassDef]:
        """The classes a call of the program returns where its every return names one (`def
        _build_evaluator(self): return Evaluator`), or looks one up in a registry a decorator fills
        (`return MODEL_REGISTRY.get(name)`), or calls the program's function that does so, `depth`
        calls down (`def _build_model(self): return Model.from_config(name)`, a classmethod that
        returns the lookup); [] otherwise."""
        if not isinstance(value, cst.Call):
            return []
        returns = [r for f in self.user_functions(value) for r in self.returned(f) if not mt.is_name(r, "None")]
        named = [self._classes_named(r) or self._registered_classes(r)
                 or (self._returned_classes(r, depth - 1) if depth > 1 else []) for r in returns]
        return _every_one_named(named)

    def _stored_classes(self, read: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of the program a registry read may give where the table is filled by item
        stores (`registered`) and every value stored is a class of the program: `creator =
        self._creators.get(name)` in a callback factory whose `__init__` calls `self.register(
        "Checkpoint", Checkpoint)` (and its base's `register` stores `self._creators[key] = creator`),
        so that `creator(**kwargs)` runs `Checkpoint.__init__` (before: no function of the program,
        and a model handed through it was followed no further); [] for anything else."""
        if not isinstance(read, (cst.Subscript, cst.Call)) or _registry_read(read) is None:
            return []
        named = [_class_names(self.classes, v) for v in self.registered(read)]
        return _every_one_named(named)

    def _registry_classes(self, registry: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of the program a registry names, where every value the program gives it is
        a dict, list or tuple written out whose every item names classes (`TASK_PIPELINE =
        {"detection": DetectionPipeline, "classification": ClassificationPipeline}`, in another
        module); [] otherwise."""
        ref = self.ref(registry)
        values = [v for _, v, _ in self.writes(ref)] if ref is not None else []
        if not values or not all(isinstance(v, (cst.Dict, cst.List, cst.Tuple)) for v in values):
            return []
        items = [e for v in values for e in v.elements]
        if not all(isinstance(e, (cst.DictElement, cst.Element)) for e in items):
            return []  # `**OTHERS`, `*more`: items not written out
        named = [_class_names(self.classes, e.value) for e in items]
        return _every_one_named(named)

    def _registry_functions(self, registry: cst.BaseExpression) -> list[cst.FunctionDef]:
        """The module-level functions of the program a registry names, where every value the program
        gives it is a dict, list or tuple written out whose every item names such a function
        (`OPTIMIZERS = {"adam": adam, "sgd": sgd}` of `def adam(params): return Adam(params, lr=1e-3)`);
        [] otherwise."""
        ref = self.ref(registry)
        values = [v for _, v, _ in self.writes(ref)] if ref is not None else []
        if not values or not all(isinstance(v, (cst.Dict, cst.List, cst.Tuple)) for v in values):
            return []
        items = [e for v in values for e in v.elements]
        if not items or not all(isinstance(e, (cst.DictElement, cst.Element)) and isinstance(e.value, cst.Name)
                                for e in items):
            return []
        named = [[f for f in self.functions.get(e.value.value, ()) if self.enclosing_class(f) is None] for e in items]
        return [] if not all(named) else list(dict.fromkeys(f for fs in named for f in fs))

    def _looked_up_classes(self, value: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes a registry looked up by name may give: a call of the program's function
        whose every return is `globals()[name]` (DomainBed's `algorithms.get_algorithm_class(name)`)
        gives any class of that function's file; [] for anything else, and for a value asked again
        while it is answered (`ctc_loss = F.ctc_loss(...)`, where resolving the call asks what the
        name `ctc_loss` holds)."""
        if not isinstance(value, cst.Call):
            return []
        if value in self._looking_up:
            self._cycles += 1
            return []
        self._looking_up.add(value)
        try:
            callees = self.user_functions(value)
        finally:
            self._looking_up.discard(value)
        returns = [r for f in callees for r in self.returned(f) if not mt.is_name(r, "None")]
        if returns and all(isinstance(r, cst.Name) for r in returns):  # `return model`, a class it looked up
            named = [self._picked_classes(r) for r in returns]
            return [] if not all(named) else list(dict.fromkeys(c for cs in named for c in cs))
        if not returns or not all(isinstance(r, cst.Subscript) and isinstance(r.value, cst.Call)
                                  and mt.is_call_of(r.value, "globals") for r in returns):
            return []
        homes = {self.program.part_of(f, self.parents).name if self.program is not None else None for f in callees}
        return [c for c in self.classes.values() if type(self.scope(c)) is not cst.FunctionDef
                and self.enclosing_class(c) is None
                and (self.program.part_of(c, self.parents).name if self.program is not None else None) in homes]

    def call_sites(self, func: cst.FunctionDef) -> list[cst.Call]:
        """The calls of this file that run `func` (`Cls(...)` for an `__init__`)."""
        return self._call_index.sites(func)

    def handing_on(self, name: str) -> list[cst.Call]:
        """The calls with an argument that is the bare name `name` (`mp.spawn(worker, ...)`,
        `Thread(target=worker)`): where a function may be handed on by name, in source order."""
        return self._handing_on.get(name, [])

    @cached_property
    def _handing_on(self) -> dict[str, list[cst.Call]]:
        index: dict[str, list[cst.Call]] = defaultdict(list)
        for call in self.calls:
            for name in dict.fromkeys(a.value.value for a in call.args if type(a.value) is cst.Name):
                index[name].append(call)
        return index

    def entries(self, func: cst.FunctionDef) -> list[cst.Call]:
        """The calls that enter `func` from outside its own body: where it runs, and so on which
        processes. A recursive call (`update_top_k(mean(metrics), ...)` inside `update_top_k`) runs
        only once `func` has been entered, so it says nothing of where."""
        return [c for c in self.call_sites(func) if not self.is_inside(c, func)]

    def writes_in(self, scope: Scope) -> list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]:
        """The assignments a function (or the module's top level) makes: (target, value, statement)."""
        return self._writes_by_scope.get(scope, [])

    @cached_property
    def _writes_by_scope(self) -> dict[Scope, list]:
        return _grouped(self.assigns, lambda assign: self.scope(assign[2]))

    def writes(self, ref: Ref) -> list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]:
        """The assignments (augmented ones too) whose target is `ref`: (target, value, statement)."""
        return self._writes.get(ref, [])

    @cached_property
    def _writes(self) -> dict[Ref, list]:
        return _grouped(self.assigns, lambda assign: self.ref(assign[0], assign[2]))

    @cached_property
    def _unpacking(self) -> dict[Ref, list[tuple[cst.BaseExpression, Path]]]:
        """`a, b = value`: (value, path) for each name bound by unpacking (`unpacking_paths`): `(0,)`
        for `a`; `(0, 1)` for `b` of `(a, b), c = value`; `(-1,)` for `c` of `*rest, c = value`."""
        index: dict[Ref, list] = defaultdict(list)
        for target, value, stmt in self.assigns:
            if isinstance(target, (cst.Tuple, cst.List)) and not isinstance(stmt, cst.AugAssign):
                for part, path in unpacking_paths(target):
                    index[self.ref(part, stmt)].append((value, path))
        return index

    def keyword_arguments(self, expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """`kwargs["model"]` (or `kwargs.get("model")`, `kwargs.pop("model")`) where `kwargs` is the
        function's `**` parameter: what its callers pass by that keyword (`Trainer(model=model)`);
        None for any other expression."""
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            key, holder = expr.slice[0].slice.value, expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                expr.func.attr.value in ("get", "pop") and expr.args:
            key, holder = expr.args[0].value, expr.func.value
        else:
            return None
        func = self.scope(expr)
        star = func.params.star_kwarg if isinstance(func, cst.FunctionDef) else None
        if not isinstance(key, cst.SimpleString) or not isinstance(holder, cst.Name) or \
                not isinstance(star, cst.Param) or star.name.value != holder.value:
            return None
        name = key.evaluated_value
        return [a.value for call in self.call_sites(func) for a in call.args
                if a.keyword is not None and a.keyword.value == name]

    def unpacked_from(self, ref: Ref) -> list[cst.BaseExpression]:
        """What `ref` is unpacked from: its element of a tuple written out (`save_dir, rank =
        opt.save_dir, opt.global_rank`: `opt.global_rank`), else the whole value (`epoch, var =
        load_state(path)`: `load_state(path)`)."""
        return [written_element(value, path) for value, path in self._unpacking.get(ref, ())]

    def unpacked_parts(self, ref: Ref) -> list[cst.BaseExpression]:
        """What `ref` is unpacked from, as closely as it is known: its element of a tuple written out
        or of the tuples a function of the program returns (`use_ddp, rank = setup()` where `setup`
        returns `use_ddp, rank`: that `rank`), else the whole value (`epoch, var = pair`: `pair`)."""
        return [e for value, i in self._unpacking.get(ref, ()) for e in (self._unpacked(value, i) or [value])]

    def argument_for(self, call: cst.Call, func: cst.FunctionDef, param: str) -> cst.BaseExpression | None:
        """The expression a call passes for `param` of `func`, as the call's own scope may name it (a
        process's or thread's `target`: the element of its `args=` tuple, or the value of its
        `kwargs=` dict, `_started_target`). A `*xs` or `**kw` argument binds the parameters it fills
        where the call's scope writes its items out (`spread_argument`, `local` only): `pair(*(a,
        b))`, or `xs = [a, b]` before `pair(*xs)`, passes `a` for `pair`'s first parameter; the
        places after a `*` whose items are unknown are unknown. A call that cannot bind `func`'s
        parameters and hands an argument in another's place passes nothing (`_misplaced`:
        `train(local_rank, world_size, args)` of `def train(local_rank, global_rank, world_size,
        args)`, a TypeError; `world_size` is no call's global rank)."""
        names = self._positional_names(func)
        if self.starts(call):
            return _started_argument(call, names, param)
        if bound := self.partial_bound(call):
            return _partial_argument(bound, call, names, param)
        if self._misplaced(call, func):
            return None
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == param:
                return arg.value
        spread = self.spread_argument(call, func, param, local=True)
        if spread is not None:
            return spread[2]
        positional = []
        for arg in call.args:
            if arg.keyword is None and not arg.star:
                positional.append(arg.value)
            elif arg.star == "*":
                break  # the places from here on are unknown
        if param in names and names.index(param) < len(positional):
            return positional[names.index(param)]
        return None

    def _misplaced(self, call: cst.Call, func: cst.FunctionDef) -> bool:
        """Does a call that cannot bind `func`'s parameters (a TypeError before `func` runs: more
        places than it has, a keyword it lacks, a parameter without a default left out; no `*` or
        `**` argument, `func` not decorated) hand in an earlier place an argument spelled as a later
        parameter (`train(local_rank, world_size, args)` of `def train(local_rank, global_rank,
        world_size, args)`)? An argument was left out before it, and the places after it do not
        bind what they were meant for. (A call short of its last parameters binds the others as
        meant: `generate_final_report(student, opt)` of `(model, opt, wandb)`.)"""
        key = (call, func)
        if key not in self._binding:
            params = func.params
            names = self._positional_names(func)
            places = [a for a in call.args if a.keyword is None]
            keywords = {a.keyword.value for a in call.args if a.keyword is not None}
            kwonly = [p.name.value for p in params.kwonly_params]
            required = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                        if p.default is None and p.name.value in (*names, *kwonly)]
            binds = bool(func.decorators) or any(a.star for a in call.args) or (
                (len(places) <= len(names) or isinstance(params.star_arg, cst.Param))
                and (keywords <= {*names[len(places):], *kwonly} or isinstance(params.star_kwarg, cst.Param))
                and all(n in keywords or n in names[:len(places)] for n in required))
            spelled = [a.value.value if isinstance(a.value, cst.Name) else None for a in places]
            self._binding[key] = not binds and any(name in names[i + 1:] for i, name in enumerate(spelled) if name)
        return self._binding[key]

    def _positional_names(self, func: cst.FunctionDef) -> list[str]:
        """The parameters of `func` that a call fills by place (not a method's `self`)."""
        names = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
        if names and names[0] in ("self", "cls") and self.enclosing_class(func) is not None:
            names = names[1:]
        return names

    def spread_argument(self, call: cst.Call, func: cst.FunctionDef, param: str, local: bool = False
                        ) -> tuple[cst.BaseExpression, int | str, cst.BaseExpression] | None:
        """Where a `*xs` or `**kw` argument of `call` fills `param` of `func`: (`xs`, the place in it,
        the item), its items known where they are written out (`starred_items`, `starred_keywords`):
        `pair(*loaders)` with `loaders` a parameter that the one call of its function fills with
        `(source, target)` gives (`loaders`, 0, `source`) for `pair`'s first parameter (the item as
        the caller names it: `loaders[0]` where the call is). `local`: the items as the call's own
        scope writes them (a literal in the call, or a name it binds once to one), not through a
        parameter. None where no starred argument fills it, or its items are unknown."""
        if self.starts(call) or not any(a.star for a in call.args):
            return None
        depth = 0 if local else 3
        names = self._positional_names(func)
        if param in names:
            place = names.index(param)
            for arg in call.args:
                if arg.keyword is not None or arg.star == "**":
                    continue
                if not arg.star:
                    place -= 1
                elif (items := self.starred_items(arg.value, depth)) is None:
                    break
                elif place < len(items):
                    return arg.value, place, items[place]
                else:
                    place -= len(items)
                if place < 0:
                    break
        for arg in call.args:
            keywords = self.starred_keywords(arg.value, depth) if arg.star == "**" else None
            if keywords is not None and param in keywords:
                return arg.value, param, keywords[param]
        return None

    def starred_items(self, value: cst.BaseExpression, depth: int = 3) -> list[cst.BaseExpression] | None:
        """The items `*value` passes, where they are written out: a tuple or list (`*(a, b)`), a name
        whose one binding is one (`xs = [a, b]`), or (`depth` steps deep) a parameter that the one
        call of its function fills with one (`fit(model, (source, target))` for `loaders` of `def
        fit(model, loaders)`); None where they are not known."""
        if isinstance(value, (cst.Tuple, cst.List)):
            items: list[cst.BaseExpression] = []
            for element in value.elements:
                inner = self.starred_items(element.value, depth) if isinstance(element, cst.StarredElement) \
                    else [element.value]
                if inner is None:
                    return None
                items += inner
            return items
        bound = self._one_binding(value, depth)
        return self.starred_items(bound, depth - 1) if bound is not None else None

    def starred_keywords(self, value: cst.BaseExpression, depth: int = 3) -> dict[str, cst.BaseExpression] | None:
        """The keywords `**value` passes, where they are written out: a dict of string keys
        (`**{"lr": 0.1}`), `dict(lr=0.1)` (with `**more`: those it names), or a name or parameter
        whose one binding is one (`starred_items`); None where they are not known."""
        if isinstance(value, cst.Dict):
            found: dict[str, cst.BaseExpression] = {}
            for element in value.elements:
                key = element.key.evaluated_value if isinstance(element, cst.DictElement) \
                    and isinstance(element.key, cst.SimpleString) else None
                if not isinstance(key, str):
                    return None
                found[key] = element.value
            return found
        if isinstance(value, cst.Call) and mt.is_name(value.func, "dict"):  # (`**more` beside them adds keys)
            if any(a.keyword is None and not a.star for a in value.args):
                return None
            return {a.keyword.value: a.value for a in value.args if a.keyword is not None}
        bound = self._one_binding(value, depth)
        return self.starred_keywords(bound, depth - 1) if bound is not None else None

    def _one_binding(self, value: cst.BaseExpression, depth: int) -> cst.BaseExpression | None:
        """What the name `value` holds where one assignment binds it, or, `depth` > 0 and the name a
        parameter, what the one call of its function passes for it."""
        ref = self.ref(value) if isinstance(value, cst.Name) and depth >= 0 else None
        if ref is None:
            return None
        bound = [v for _, v, stmt in self.writes(ref) if not isinstance(stmt, cst.AugAssign)]
        func = ref.scope
        if isinstance(func, cst.FunctionDef) and ref.name in param_names(func):
            if depth == 0:
                return None
            sites = self.call_sites(func)
            passed = [self.argument_for(site, func, ref.name) for site in sites]
            if len(sites) != 1 or passed[0] is None:
                return None
            bound += passed
        return bound[0] if len(bound) == 1 else None

    def default_left_out(self, ref: Ref) -> list[cst.BaseExpression]:
        """The default of the parameter `ref` where it is a value the parameter may hold: a call of
        its function leaves the argument out, or no call of it is seen (`def finetune(..., optim=
        torch.optim.SGD)`, called as `finetune(model, X, y)`, or only from a function nobody
        calls); [] for a name that is no parameter, one without a default or with `None` (a
        guard: the program tests it before it calls), or one every call passes (through
        `*args`/`**kwargs` counts as passed: unknown)."""
        func = ref.scope
        if not isinstance(func, cst.FunctionDef) or "." in ref.name:
            return []
        param = next((p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
                      if p.name.value == ref.name), None)
        if param is None or param.default is None or mt.is_name(param.default, "None"):
            return []
        sites = self.call_sites(func)
        left_out = not sites or any(self.argument_for(site, func, ref.name) is None and not any(a.star for a in site.args)
                                    for site in sites)
        return [param.default] if left_out else []

    def unpacked_elements(self, ref: Ref) -> list[cst.BaseExpression]:
        """What `ref` is bound to by unpacking, element by element: `QNet(lr)` for `q1` of `q1, q2 =
        QNet(lr), QNet(lr)`, or of `q1, q2 = make_critics()` whose function returns such a tuple;
        nothing for an element it cannot tell (`a, b = pair`)."""
        return [e for value, i in self._unpacking.get(ref, ()) for e in self._unpacked(value, i)]

    def sources(self, ref: Ref) -> list[cst.BaseExpression]:
        """Expressions whose value `ref` may hold: assignments (tuple unpacking included, also of
        a helper's returned tuple; items stored into it), arguments for a parameter. Found once per
        name (every analysis follows names through it); each caller gets its own list."""
        if ref not in self._sources:
            read = self._partial_reads()
            found = self._find_sources(ref)
            if self._partial_reads() != read:
                return found  # read off an index of callers still being built: not kept
            self._sources[ref] = found
        return list(self._sources[ref])

    def _find_sources(self, ref: Ref) -> list[cst.BaseExpression]:
        found = [value for _, value, stmt in self.writes(ref) if not isinstance(stmt, cst.AugAssign)]
        found += self._item_writes.get(ref, [])
        found += self._class_fields.get(ref, [])
        found += self.generated_init_arguments(ref)
        found += self.unpacked_elements(ref)
        found += self.set_by_name(ref)
        if isinstance(ref.scope, cst.FunctionDef) and "." not in ref.name:
            for call in self.call_sites(ref.scope):
                arg = self.argument_for(call, ref.scope, ref.name)
                spread = self.spread_argument(call, ref.scope, ref.name) if arg is None else None
                if arg is not None or spread is not None:
                    found.append(arg if arg is not None else spread[2])  # an item of `*xs` as its maker names it
                else:
                    found += self.forwarded_keyword(call, ref.name)
        return found

    def forwarded_keyword(self, call: cst.Call, param: str, depth: int = 3) -> list[cst.BaseExpression]:
        """What `call` passes for the keyword `param` through a `**kw` argument that is the `**`
        parameter of the function it is in: what that function's callers pass as `param=` (or
        through a `**` of their own that writes it out, or forwards it again, `depth` steps deep).
        A trainer's `def __init__(self, model, **init_kwargs): super().__init__(**init_kwargs)`,
        built as `AETrainer(model, **{"datamodule": dm, ...})`, passes `dm` for the base class's
        `datamodule`. [] where no such argument is forwarded, or the function binds `param` itself
        (then `kw` never holds it)."""
        func = self.scope(call)
        star = func.params.star_kwarg if isinstance(func, cst.FunctionDef) else None
        if depth <= 0 or not isinstance(func, cst.FunctionDef) or not isinstance(star, cst.Param) \
                or param in param_names(func) or not any(
                    a.star == "**" and mt.is_name(a.value, star.name.value) for a in call.args):
            return []
        found: list[cst.BaseExpression] = []
        for site in self.call_sites(func):
            given = next((a.value for a in site.args if a.keyword is not None and a.keyword.value == param), None)
            if given is None:
                keywords = next((k for a in site.args if a.star == "**"
                                 and (k := self.starred_keywords(a.value)) is not None and param in k), None)
                given = keywords[param] if keywords is not None else None
            if given is not None:
                found.append(given)
            else:
                found += self.forwarded_keyword(site, param, depth - 1)
        return found

    def reaching_sources(self, read: cst.Name) -> list[cst.BaseExpression] | None:
        """What a name of a function may hold where `read` reads it, when an earlier statement on
        the way there always binds it (a plain `name = value` of the same or an enclosing block):
        that value and those the statements in between may bind. A template's `configure_optimizers`
        binds `klass = getattr(torch.optim, name)` just before `self.optimizer = klass(**params)` and
        `klass = getattr(torch.optim.lr_scheduler, name)` after it: the call reads the first only.
        None where no such store is on the way (then it holds any value it is ever bound to), the way
        crosses the start of a loop it is read in or of the function, or a statement on the way binds
        the name otherwise (a loop's target, `with ... as`, an unpacking, an augmented store, `del`,
        a `global` or `nonlocal` declaration). A statement on the way with no Name of that value
        (`has_name`, the index) binds it in no way and is not walked (`_binding`): before, each was
        walked for each read (1,036 walks for 334 reads in one conversion of each of round 24's nine
        held-out programs, a quarter of `models.find`)."""
        func = self.scope(read)
        name = read.value
        if not isinstance(func, cst.FunctionDef):
            return None
        found: list[cst.BaseExpression] = []
        child: cst.CSTNode = self.statement(read)
        if isinstance(child, cst.While):
            return None  # its test is read again after each pass of the body
        for anc in self.ancestors(child):
            if anc is func or isinstance(anc, (cst.For, cst.While)):
                return None
            if isinstance(anc, cst.IndentedBlock):
                for stmt in reversed(anc.body[:anc.body.index(child)]):
                    if not self.has_name(stmt, name):
                        continue  # binds it in no way (`_binding`: (False, [])), told from the index, no walk
                    bound = _binding(stmt, name)
                    if bound is None:
                        return None
                    always, values = bound
                    found += values
                    if always:
                        return found
            if type(anc) in mt.STATEMENTS:
                child = anc
        return None

    def reaching_values(self, read: cst.Name) -> list[cst.BaseExpression] | None:
        """What a name of a function may hold where `read` reads it, as `reaching_sources` answers,
        and further where that gives up: an `if` on the way gives what each of its branches binds
        last (`if model is None: model = get_model(cfg); model = model.backbone` gives
        `model.backbone`, not the whole model the branch built first), a branch that binds nothing
        letting the earlier value through; and the function's start, for a parameter, what each of
        its calls passes it (`_passed_at_start`). None where a statement on the way binds it
        otherwise (a loop, `with ... as`, `try`, an unpacking: as `reaching_sources`), the way
        crosses the start of a loop it is read in, or it is no parameter (then it holds any value
        it is ever bound to)."""
        func = self.scope(read)
        name = read.value
        if not isinstance(func, cst.FunctionDef):
            return None
        found: list[cst.BaseExpression] = []
        child: cst.CSTNode = self.statement(read)
        if isinstance(child, cst.While):
            return None
        for anc in self.ancestors(child):
            if isinstance(anc, (cst.For, cst.While)):
                return None
            if anc is func:
                return self._passed_at_start(func, name, found)
            if isinstance(anc, cst.IndentedBlock):
                for stmt in reversed(anc.body[:anc.body.index(child)]):
                    if not self.has_name(stmt, name):
                        continue
                    bound = self._binding_at_end(stmt, name)
                    if bound is None:
                        return None
                    always, values = bound
                    found += values
                    if always:
                        return found
            if type(anc) in mt.STATEMENTS:
                child = anc
        return None

    def _passed_at_start(self, func: cst.FunctionDef, name: str, found: list) -> list[cst.BaseExpression] | None:
        """`found` and what the calls of `func` pass its parameter `name` (its default where a call
        passes none, or where no call of `func` is known: a worker `mp.spawn` starts with fewer
        arguments); None where `name` is no parameter, or a call passes it nothing it has no default for."""
        param = next((p for p in (*func.params.params, *func.params.kwonly_params) if p.name.value == name), None)
        if param is None:
            return None
        passed = [self.argument_for(call, func, name) or param.default for call in self.call_sites(func)] or [param.default]
        return None if any(v is None for v in passed) else found + [v for v in passed if v is not None]

    def _binding_at_end(self, stmt: cst.CSTNode, name: str) -> tuple[bool, list[cst.BaseExpression]] | None:
        """`_binding`, but for an `if` what each branch binds last (`_block_binding`): always where
        it has an `else` and every branch always binds the name."""
        if not isinstance(stmt, cst.If) or any(isinstance(n, cst.NamedExpr) for n in mt.walk(stmt.test)):
            return _binding(stmt, name)
        branches: list[cst.BaseSuite] = []
        node: cst.If | cst.Else | None = stmt
        while isinstance(node, cst.If):
            branches.append(node.body)
            node = node.orelse
        if node is not None:
            branches.append(node.body)
        values: list[cst.BaseExpression] = []
        always = node is not None
        for block in branches:
            bound = self._block_binding(block, name) if isinstance(block, cst.IndentedBlock) else _binding(block, name)
            if bound is None:
                return None
            always = always and bound[0]
            values += bound[1]
        return always, values

    def _block_binding(self, block: cst.IndentedBlock, name: str) -> tuple[bool, list[cst.BaseExpression]] | None:
        """What the statements of `block` bind `name` to last, read backwards to the nearest store
        that always binds it."""
        found: list[cst.BaseExpression] = []
        for stmt in reversed(block.body):
            if not self.has_name(stmt, name):
                continue
            bound = self._binding_at_end(stmt, name)
            if bound is None:
                return None
            found += bound[1]
            if bound[0]:
                return True, found
        return False, found

    def set_by_name(self, ref: Ref) -> list[cst.BaseExpression]:
        """What the methods of a class store into its `self.x` (`ref`) under a name made at run time:
        `setattr(self, "net" + name, DDP(net))` (or `self.__setattr__(...)`) where the name may be `x`
        (its literal parts in order, `_name_pattern`: `netG_A` for `"net" + name`), and a store by a
        name of no literal part (`setattr(self, name, value)`) into an attribute nothing else makes:
        none the class stores by name, no method or property of it (`self.trainloader` of a trainer
        that copies a dict of loaders onto itself, not its `self.is_rank0` property). Not a dict's
        items copied under their keys (`keyed_by_name`)."""
        return [value for pattern, value, keyed in self._stores_by_name(ref) if keyed is None]

    def keyed_by_name(self, ref: Ref) -> list[cst.BaseExpression]:
        """The dicts whose items the methods of a class copy onto its instances under their keys,
        `setattr(self, key, param_dict[key])` for `key in param_dict` (or `for key, value in
        d.items(): setattr(self, key, value)`), where `self.x` (`ref`) is no method or property of the
        class: it holds the item of such a dict under the key `"x"`."""
        return [keyed for _, _, keyed in self._stores_by_name(ref) if keyed is not None]

    def _stores_by_name(self, ref: Ref) -> list[tuple[re.Pattern, cst.BaseExpression, cst.BaseExpression | None]]:
        head, _, attr = ref.name.partition(".")
        stores = self._set_by_name.get(ref.scope, ()) if isinstance(ref.scope, cst.ClassDef) else ()
        if head != "self" or not attr or "." in attr or not stores:
            return []
        method = any(self._root_class(c) is ref.scope for f in self.functions.get(attr, ())
                     for c in [self.enclosing_class(f)] if c is not None)
        return [(p, v, k) for p, v, k in stores if p.fullmatch(attr) and (
            p.pattern != ".*" or not method and (k is not None or not self.writes(ref)))]

    def names_set(self, value: cst.BaseExpression) -> list[Ref]:
        """The attributes (`self.x`, assigned by name elsewhere in the class and its kin) that a
        store by a name made at run time of `value` may be: `self.netG_A` and `self.netD_A` for
        `setattr(self, "net" + name, DDP(net))` in a base class whose subclasses assign those, not
        one only ever given a display or a constant (`self.networks_groups = []`); none where the
        name has no literal part."""
        for cls, stores in self._set_by_name.items():
            pattern = next((p for p, v, _ in stores if v is value), None)
            if pattern is not None:
                if pattern.pattern == ".*":
                    return []
                refs = [self.ref(t, stmt) for t, _, stmt in self.assigns if isinstance(t, cst.Attribute)
                        and mt.is_name(t.value, "self") and pattern.fullmatch(t.attr.value)]
                return [r for r in dict.fromkeys(refs) if r is not None and r.scope is cls and not all(
                    isinstance(v, (*DISPLAYS, cst.SimpleString, cst.Integer, cst.Float)) or mt.is_name(v, "None", "True", "False")
                    for _, v, _ in self.writes(r))]
        return []

    @cached_property
    def _set_by_name(self) -> dict[cst.ClassDef, list[tuple[re.Pattern, cst.BaseExpression, cst.BaseExpression | None]]]:
        """For each class of the program (its topmost base), the (name pattern, value, the dict whose
        items it copies under their keys or None) of each store its methods make into `self` by a name
        given as a value: `setattr(self, name, value)`, `self.__setattr__(name, value)`."""
        index: dict[cst.ClassDef, list[tuple[re.Pattern, cst.BaseExpression, cst.BaseExpression | None]]] = defaultdict(list)
        for call in self.calls_named("setattr", "__setattr__"):
            args = [a.value for a in call.args if a.keyword is None and not a.star]
            if mt.is_name(call.func, "setattr") and len(args) == 3 and mt.is_name(args[0], "self"):
                name, value = args[1], args[2]
            elif mt.is_attribute(call.func, "__setattr__") and mt.is_name(call.func.value, "self") and len(args) == 2:
                name, value = args
            else:
                continue
            cls = self.enclosing_class(call)
            if cls is not None and isinstance(self.scope(call), cst.FunctionDef):
                index[self._root_class(cls)].append((_name_pattern(name), value, self._copied_dict(call, name, value)))
        return index

    def _copied_dict(self, call: cst.Call, name: cst.BaseExpression, value: cst.BaseExpression) -> cst.BaseExpression | None:
        """The dict a store by name copies an item of under its key: `d` of `setattr(self, key, d[key])`,
        and of `setattr(self, k, v)` in `for k, v in d.items():`; None otherwise."""
        if not isinstance(name, cst.Name):
            return None
        if isinstance(value, cst.Subscript) and dotted(value.value) and len(value.slice) == 1 \
                and isinstance(value.slice[0].slice, cst.Index) and mt.is_name(value.slice[0].slice.value, name.value):
            return value.value
        loop = next(self.enclosing_loops(call), None)
        target = loop.target if isinstance(loop, cst.For) else None
        if isinstance(value, cst.Name) and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2 \
                and mt.is_name(target.elements[0].value, name.value) and mt.is_name(target.elements[1].value, value.value) \
                and mt.is_method_call(loop.iter, "items") and not loop.iter.args:
            return loop.iter.func.value
        return None

    @cached_property
    def _class_fields(self) -> dict[Ref, list[cst.BaseExpression]]:
        """`global_rank: int = Field(default_factory=get_global_rank)`, `epochs = 10` in a class body:
        the default of `self.global_rank` of its instances (a dataclass's, a pydantic model's field, a
        class attribute)."""
        index: dict[Ref, list] = defaultdict(list)
        for target, value, stmt in self.assigns:
            block = self.parents.get(self.parents.get(stmt))  # the statement's line, then its block
            cls = self.parents.get(block) if isinstance(block, cst.IndentedBlock) else None
            if isinstance(cls, cst.ClassDef) and isinstance(target, cst.Name) and not isinstance(stmt, cst.AugAssign):
                index[Ref(self._root_class(cls), f"self.{target.value}")].append(value)
        return index

    def generated_fields(self, cls: cst.ClassDef) -> list[str]:
        """The fields, in order, that the `__init__` Python or a library writes for `cls` stores on
        `self`: a `@dataclass` or `typing.NamedTuple` class (`_generated_fields`), a pydantic
        `BaseModel` or an attrs `@define`/`@frozen` class (`_library_init`), without an `__init__` of
        its own; a subclass of such a class of the program after its base's fields (a pydantic
        model's subclass, its own annotated names fields too; an undecorated dataclass's subclass, its
        base's fields only). [] for any other class."""
        if cls not in self._fields_memo:
            self._fields_memo[cls] = []  # a class among its own bases adds nothing
            base = self._base(cls)
            inherited = self.generated_fields(base) if base is not None else []
            own = _generated_fields(cls, self._library_init(cls))
            body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
            writes_init = any(isinstance(s, cst.FunctionDef) and s.name.value == "__init__" for s in body)
            self._fields_memo[cls] = [] if writes_init else [*inherited, *(f for f in own if f not in inherited)]
        return self._fields_memo[cls]

    def _library_init(self, cls: cst.ClassDef) -> bool:
        """Does a library write `cls`'s `__init__` from its annotated fields: a pydantic `BaseModel`
        among its bases or its program bases' (`class Trainer(BaseModel): model: nn.Module`), or
        attrs' `@define`, `@frozen`, `@mutable` (of `attrs` or `attr`)? Named through the imports of
        each class's own file, so that a program's own `BaseModel` class is not one."""
        decorators = [self._qualify_in_file(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                      for d in cls.decorators]
        return any(d.partition(".")[0] in ("attr", "attrs") and d.rpartition(".")[2] in ("define", "frozen", "mutable")
                   for d in decorators) or any(
            (q := self._qualify_in_file(b.value)).startswith("pydantic") and q.endswith(".BaseModel")
            for c in self._lineage(cls) for b in c.bases)

    def _qualify_in_file(self, node: cst.CSTNode) -> str:
        """What `node` names through the imports of the file it was read from ('' for none)."""
        imports = self._imports_of(self.program.part_of(node, self.parents)) if self.program is not None else self.imports
        return imports.qualify(node) or ""

    def constructed_class(self, call: cst.Call) -> cst.ClassDef | None:
        """The program class `call` builds by its name (`Setup(...)`, `setups.Setup(...)` of a program
        module), if any."""
        func = call.func.attr if isinstance(call.func, cst.Attribute) and self.is_program_module(call.func.value) \
            else call.func
        return self.class_of(func) if isinstance(func, cst.Name) else None

    def generated_init_arguments(self, ref: Ref) -> list[cst.BaseExpression]:
        """What the constructions of a dataclass (or `NamedTuple`) pass for its field `ref` (`self.model`):
        the generated `__init__` stores them there (`_generated_init_arguments`)."""
        return list(self._generated_init_arguments.get(ref, ()))

    def kept_by_generated_init(self, ref: Ref) -> list[Ref]:
        """The fields (`self.model` of `Setup`) a dataclass's constructions store the name `ref` in
        (`Setup(net, loader)`, `Setup(model=net)`)."""
        return [field for field, args in self._generated_init_arguments.items()
                if any(isinstance(a, cst.Name) and self.ref(a) == ref for a in args)]

    @cached_property
    def _generated_init_arguments(self) -> dict[Ref, list[cst.BaseExpression]]:
        """`Setup(model=net, loader=loader)` of `@dataclass class Setup: model: nn.Module; loader:
        DataLoader` (or a `NamedTuple` class): what the generated `__init__` stores in `self.model`,
        `self.loader` of the instance, by keyword or by position in the order the fields are written."""
        fields = {cls: names for cls in self.classes.values() if (names := self.generated_fields(cls))}
        index: dict[Ref, list] = defaultdict(list)
        for call in self.calls if fields else ():
            cls = self.constructed_class(call)
            for i, name in enumerate(fields.get(cls, ())):  # type: ignore[arg-type]
                arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
                positional = [a.value for a in call.args if a.keyword is None and not a.star]
                arg = arg if arg is not None or i >= len(positional) else positional[i]
                if arg is not None:
                    index[Ref(self._root_class(cls), f"self.{name}")].append(arg)
        return index

    @cached_property
    def _item_writes(self) -> dict[Ref, list[cst.BaseExpression]]:
        """`loaders["train"] = DataLoader(...)`: values stored into a container by item."""
        return {ref: [value for value, _ in stores] for ref, stores in self._item_stores.items()}

    def _unpacked(self, value: cst.BaseExpression, path: Path) -> list[cst.BaseExpression]:
        """The element at `path` (`unpacking_paths`) of a tuple value, or of the tuples a helper
        function returns, a level at a time: `lb` for `b` of `(a, b), c = make()` where `make`
        returns `(la, lb), lv`. Nothing for a starred part (a list of some of the elements)."""
        if (value, path) not in self._unpacked_memo:
            self._unpacked_memo[value, path] = []  # a function that returns its own call adds nothing
            read = self._partial_reads()
            found = list(dict.fromkeys(self._unpacked_of(value, path)))
            if self._partial_reads() != read:
                del self._unpacked_memo[value, path]
                return found  # (as `sources`)
            self._unpacked_memo[value, path] = found
        return self._unpacked_memo[value, path]

    def _unpacked_of(self, value: cst.BaseExpression, path: Path) -> list[cst.BaseExpression]:
        i, rest = path[0], path[1:]
        if i is None:
            return []
        if isinstance(value, (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in value.elements) or not -len(value.elements) <= i < len(value.elements):
                return []
            element = value.elements[i].value
            return [element] if not rest else self._unpacked(element, rest)
        if isinstance(value, cst.Call):
            return [e for f in self.user_functions(value) for r in self.returned(f) for e in self._unpacked(r, path)]
        return []

    @cached_property
    def _passed_to(self) -> dict[Ref, set[Ref]]:
        """For each name passed as an argument, the parameters that receive it, also through
        `*args`/`**kwargs` handed on whole (`star_receivers`)."""
        index: dict[Ref, set[Ref]] = defaultdict(set)
        for call in self.calls:
            for func in self.user_functions(call):
                matched = set()
                for param in param_names(func):
                    arg = self.argument_for(call, func, param)
                    ref = self.ref(arg) if arg is not None else None
                    if ref is not None:
                        index[ref].add(Ref(func, param))
                        matched.add(id(arg))
                for arg in call.args if not self.starts(call) else ():  # (`**params`, filled by item before)
                    for key, value in self.stored_keywords(call, arg.value).items() if arg.star == "**" else ():
                        if (ref := self.ref(value)) is not None:
                            index[ref].update(self.star_receivers(func, key))
                if func.params.star_arg is None and func.params.star_kwarg is None or self.starts(call):
                    continue
                for arg in call.args:
                    ref = self.ref(arg.value) if not arg.star and id(arg.value) not in matched else None
                    if ref is not None:
                        index[ref].update(self.star_receivers(func, argument_slot(call, dotted(arg.value))))
        return index

    def stored_keywords(self, call: cst.Call, holder: cst.BaseExpression) -> dict[str, cst.BaseExpression]:
        """The keywords `**holder` passes that the call's own function (or top level) stores into it
        by item before the call, by key: those it is known to hold, whatever else it holds (a dict a
        configuration file gives). tda's callbacks (24a; decision 0198):

            params["parameters"]["model"] = model
            callback = callback_factory.create(name, **params["parameters"])

        passes `model` for `create`'s `model`, or, where `create` takes `**kwargs` and hands them on
        whole, the `model` of what it calls (`star_receivers`); before, nothing was known passed."""
        if not mt.is_simple_reference(holder):
            return {}
        text, found = self.code(holder), {}
        for target, value, stmt in self.writes_in(self.scope(call)):
            key = target.slice[0].slice if isinstance(target, cst.Subscript) and len(target.slice) == 1 else None
            if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) \
                    and not isinstance(stmt, cst.AugAssign) and self.before(stmt, call) \
                    and self.code(target.value) == text and isinstance(name := key.value.evaluated_value, str):
                found[name] = value
        return found

    def star_receivers(self, func: cst.FunctionDef, slot: int | str | None, depth: int = 3) -> list[Ref]:
        """The parameters that get the argument at `slot` of a call of `func` (`argument_slot`),
        where `func` takes it in `*args` or `**kwargs` and hands those on whole
        (`super().__init__(*args, **kwargs)`, `self.setup(loader, *args)`): its position in `*args`
        (or its keyword) is followed into each function called with them, `depth` hand-offs deep,
        to a named parameter there. Nothing where the slot is unknown."""
        if slot is None or depth == 0:
            return []
        p = func.params
        positional = [x.name.value for x in (*p.posonly_params, *p.params)]
        if positional and positional[0] in ("self", "cls") and self.enclosing_class(func) is not None:
            positional = positional[1:]
        if isinstance(slot, int) and slot < len(positional):
            return [Ref(func, positional[slot])]
        if isinstance(slot, str) and slot in param_names(func):
            return [Ref(func, slot)]
        star = p.star_kwarg if isinstance(slot, str) else p.star_arg
        if not isinstance(star, cst.Param):
            return []
        mark = "**" if isinstance(slot, str) else "*"
        found: list[Ref] = []
        for inner in self.calls_in(func):
            at = next((i for i, a in enumerate(inner.args) if a.star == mark and isinstance(a.value, cst.Name)
                       and a.value.value == star.name.value), None)
            if at is None or mark == "*" and any(a.star or a.keyword is not None for a in inner.args[:at]):
                continue
            onward = slot if isinstance(slot, str) else at + slot - len(positional)
            for callee in self.user_functions(inner):
                found += self.star_receivers(callee, onward, depth - 1)
        return found

    @cached_property
    def assigned_names(self) -> dict[str, list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]]:
        """Assignments to `x` or `a.x` (`self.x`), by the last name: where a model may be built."""
        index: dict[str, list] = defaultdict(list)
        for target, value, stmt in self.assigns:
            name = dotted(target)
            if name is not None and name.count(".") <= 1:
                index[name.split(".")[-1]].append((target, value, stmt))
        return index

    def used_inside(self, name: str, node: cst.CSTNode) -> bool:
        """Is the variable `name` read or bound anywhere in `node`, nested functions included?"""
        return any(self.is_inside(n, node) for n in self._variables.get(name, ()))

    def uses(self, name: str, scope: Scope) -> list[cst.Name]:
        """The variable `name` where `scope` reads or binds it (not in nested functions), in source order."""
        return self._variables_by_scope.get((name, scope), [])

    @cached_property
    def _variables_by_scope(self) -> dict[tuple[str, Scope], list[cst.Name]]:
        return _grouped((n for names in self._variables.values() for n in names), lambda n: (n.value, self.scope(n)))

    @cached_property
    def _variables(self) -> dict[str, list[cst.Name]]:
        """Names used as variables (not `a.attr`'s attribute, not `f(key=...)`'s keyword), by name."""
        return _grouped((n for n in self.names if _is_variable(n, self.parents.get(n))), lambda n: n.value)

    def loops_in(self, scope: Scope) -> list[cst.For | cst.While]:
        """The loops of one function (or of the module's top level)."""
        return self._loops_by_scope.get(scope, [])

    @cached_property
    def _loops_by_scope(self) -> dict[Scope, list]:
        return _grouped(self.loops, self.scope)

    def returned(self, func: cst.FunctionDef) -> list[cst.BaseExpression]:
        return self._returned.get(func, [])

    def returns_in(self, func: Scope) -> list[cst.Return]:
        """The `return` statements that end `func` (not those of the functions it defines)."""
        return self._returns_by_scope.get(func, [])

    @cached_property
    def _returns_by_scope(self) -> dict[Scope, list[cst.Return]]:
        return _grouped(self.returns, self.scope)

    @cached_property
    def _returned(self) -> dict[Scope, list[cst.BaseExpression]]:
        return _grouped((r.value for r in self.returns if r.value is not None), self.scope)

    def origins(self, expr: cst.BaseExpression, depth: int = 6) -> list[cst.BaseExpression]:
        """The expressions `expr` ultimately comes from, following names, calls and returns, each
        once. Memoised per (expression, depth), so that each is expanded once however many
        paths reach it: the walk is linear in the program, not in its paths."""
        key = (expr, depth)
        if key not in self._origins:
            read = self._partial_reads()
            found = list(dict.fromkeys(self._origins_of(expr, depth)))
            if self._partial_reads() != read:
                return found  # (as `sources`)
            self._origins[key] = found
        return self._origins[key]

    def _origins_of(self, expr: cst.BaseExpression, depth: int) -> list[cst.BaseExpression]:
        expr = mt.strip_iteration(expr)
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        if depth == 0:
            return [expr]
        if isinstance(expr, cst.Call) and self.user_functions(expr) and not self.builds(expr):
            return [o for f in self.user_functions(expr) for r in self.returned(f) for o in self.origins(r, depth - 1)]
        ref = self.ref(expr)
        if ref is None:
            return [expr]
        srcs = self.sources(ref)
        if not srcs:
            return [expr]
        return [o for s in srcs for o in self.origins(s, depth - 1)]

    # what trains ------------------------------------------------------------------------------
    def is_backward(self, call: cst.Call) -> bool:
        """`loss.backward()`, `scaler.scale(loss).backward(retain_graph=True)`, `out.backward(grad)`
        (a gradient tensor); not `turtle.backward(90)` (a number)."""
        return type(call.func) is cst.Attribute and call.func.attr.value == "backward" \
            and not any(isinstance(a.value, (cst.Integer, cst.Float, cst.UnaryOperation)) for a in call.args)

    def parameter_gradients(self, call: cst.Call) -> cst.BaseExpression | None:
        """`torch.autograd.grad(loss, model.parameters())` (or `list(...)` of them, or a name
        holding either), first order (no `create_graph`): the object whose parameters it
        differentiates (`model`), else None. It trains as a backward does (a meta-learning outer
        step summing each task's gradients into `p.grad` by hand), but no backward runs: nothing
        backpropagates through such gradients, and DDP, which averages what `.backward()`
        accumulates, never sees them."""
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value != "grad" or self.qualify(func) != "torch.autograd.grad":
            return None
        inputs = mt.positional(call, 1) or mt.keyword(call, "inputs")
        graph = mt.keyword(call, "create_graph")
        if inputs is None or graph is not None and not mt.is_name(graph.value, "False"):
            return None
        value = inputs.value
        if isinstance(value, cst.Name) and (ref := self.ref(value)) is not None:
            sources = self.sources(ref)
            value = sources[0] if len(sources) == 1 else value
        return parameters_of(value)

    def trains(self, node: cst.CSTNode, depth: int = 3) -> bool:
        """Does running `node` call `.backward()`, or differentiate a model's parameters by
        `torch.autograd.grad` (`parameter_gradients`), here or in a function of this file it calls?"""
        known = self._trains_memo.get(node)
        if known is not None and (known[0] or known[1] >= depth):
            return known[0]
        # (a False found with fewer calls left to follow answers no question with more: the script's
        # `for m in trainer.train():` reached `training_step` with none left, and the batch loop,
        # whose backward is two calls below it, no longer counted as one that trains)
        self._trains_memo[node] = (False, depth)  # a recursive call of the same function adds nothing
        calls = self._calls_by_func.get(node, []) if isinstance(node, cst.FunctionDef) else self.calls_in(node)
        result = any(self.is_backward(c) or self.parameter_gradients(c) is not None for c in calls) or \
            bool(self.gradients_set_by_hand(node)) or (depth > 0 and any(
                self.trains(f, depth - 1) for c in calls for f in self.user_functions(c)))
        self._trains_memo[node] = (result, depth)
        return result

    def gradients_set_by_hand(self, node: cst.CSTNode) -> list[cst.Attribute]:
        """The gradients `node` (a function or a loop) sets by hand (the targets) where it also
        steps an optimizer itself: a training step with no backward (contrastive divergence, an
        update the program computes), which `trains` counts as one:

            w_grad, v_grad = rbm.contrastive_divergence(v)
            rbm.W.grad = -w_grad            # `rbm.W.grad`, `rbm.v_bias.grad`
            rbm.v_bias.grad = -v_grad
            optimizer.step()                # an optimizer of the program (`optimizers`)

        Not `p.grad = None` (clearing), nor where no optimizer's `.step()` is in `node`. Also those a
        function of the program called in `node` sets (`hand_set_gradients`)."""
        return [target for _, target in self.hand_set_gradients(node)]

    def hand_set_gradients(self, node: cst.CSTNode) -> list[tuple[cst.CSTNode, cst.Attribute]]:
        """(where, target) for each gradient `node` sets by hand where it also steps an optimizer
        itself (`gradients_set_by_hand`): `where` is the target where `node` sets it, or the call in
        `node` of a function of the program that sets it, 2 calls deep (`set_grads(rbm.grads(v))`,
        whose body sets `rbm.W.grad = -g`; then `optimizer.step()`)."""
        scope = node if isinstance(node, cst.FunctionDef) else self.scope(node)
        calls = self._calls_by_func.get(node, []) if isinstance(node, cst.FunctionDef) else self.calls_in(node)
        if not any(self.steps_an_optimizer(c) for c in calls):
            return []
        own: list[tuple[cst.CSTNode, cst.Attribute]] = [
            (target, target) for target, value, stmt in self.writes_in(scope)
            if isinstance(target, cst.Attribute) and target.attr.value == "grad" and not mt.is_name(value, "None")
            and (node is scope or self.is_inside(stmt, node))]
        return own + [(call, target) for call in calls for target in self._gradients_set_in(call, 2)]

    def _gradients_set_in(self, call: cst.Call, depth: int) -> list[cst.Attribute]:
        """The gradients the functions of the program `call` runs set to a value (`p.grad = g`),
        `depth` calls deep."""
        found: list[cst.Attribute] = []
        for func in self.user_functions(call):
            found += [target for target, value, _ in self.writes_in(func) if isinstance(target, cst.Attribute)
                      and target.attr.value == "grad" and not mt.is_name(value, "None")]
            if depth > 1:
                found += [t for inner in self._calls_by_func.get(func, []) for t in self._gradients_set_in(inner, depth - 1)]
        return found

    def steps_an_optimizer(self, call: cst.Call) -> bool:
        """`optimizer.step()` of a name (or `self.x`) that may hold one of `optimizers`."""
        if not mt.is_method_call(call, "step") or not self.optimizers:
            return False
        ref = self.ref(call.func.value)  # type: ignore[attr-defined]
        return ref is not None and any(v in self._optimizer_set for v in (*self.sources(ref), *(
            v for _, v, _ in self.writes(ref))))

    @cached_property
    def _optimizer_set(self) -> frozenset[cst.Call]:
        return frozenset(self.optimizers)

    @property
    def has_training(self) -> bool:
        """Does the script train a torch model: an optimizer or a `.backward()` call?"""
        if not self.imports.imports_module("torch"):
            return False
        return any(self.is_backward(c) for c in self.calls_named("backward")) or bool(self.optimizers)

    @cached_property
    def optimizers(self) -> list[cst.Call]:
        """Optimizer constructions: torch's and the known libraries' (`torch.optim.Adam(...)`), and
        an instance of a class of the program that derives from one (`SAM(model.parameters(),
        torch.optim.SGD, rho=2)` with `class SAM(torch.optim.Optimizer)`), and a call of a name that
        holds an optimizer class (`optimizer = torch.optim.Adam` under a condition, then
        `optimizer(params, lr=lr)`), and a registry's instance of a class of `torch.optim` named by a
        configuration (`config.init_obj('optimizer', torch.optim, params)`, `looked_up_in`). Not a call
        of the program's own function named like one, which
        builds the optimizer inside (`optimizer = Adam(model, lr=1e-3)` with `def Adam(model, lr):
        return torch.optim.Adam(model.parameters(), lr=lr)`): the construction in its body is the
        optimizer, its model found through the callers' arguments."""
        found = [c for c in self.calls if mt.is_optimizer(self.qualify(c.func), c) or not self.library_callee(c.func) and (
                 self._holds_optimizer_class(c.func) or any(self.is_optimizer_class(cls) for cls in self._instances_of(c))
                 or "torch.optim" in (looked := self.looked_up_in(c), self.reexported_library(looked or ""))
                 or self._configured_optimizer(c)
                 or self._registered_optimizer(c))]
        return [c for c in found if not self._builds_optimizer_inside(c, found)]

    def _registered_optimizer(self, call: cst.Call) -> bool:
        """`Register.get(name)(model.parameters(), **cfg)`: a call of what a registry filled by a class
        decorator gives (`_registered_classes`), handed a model's parameters first, where an optimizer
        class is among its entries: a class the decorator registers that derives from one, or one the
        program stores into the registry's table by item (`Register.record['Adamax'] = Adamax`). The
        same lookup builds the loaders and the scheduler, which are not handed parameters; a registry
        with no optimizer class among its entries builds none."""
        func = call.func
        if not isinstance(func, cst.Call) or not call.args or call.args[0].keyword or call.args[0].star \
                or parameters_of(call.args[0].value) is None or not isinstance(func.func, cst.Attribute) \
                or func.func.attr.value.startswith("register") or not dotted(func.func.value):
            return False
        registry = (dotted(func.func.value) or "").rpartition(".")[2]
        if registry not in self._decorated_into:
            return False
        return any(self.is_optimizer_class(c) for c in self._decorated_into[registry]) or any(
            isinstance(v, (cst.Name, cst.Attribute)) and mt.is_optimizer(self.qualify(v), cst.Call(func=v))
            for v in self._stored_into_registry.get(registry, ()))

    @cached_property
    def _stored_into_registry(self) -> dict[str, list[cst.BaseExpression]]:
        """The values the program stores by item into a table of a class, by the class's last name
        (`Register.record['Adamax'] = Adamax`: `{"Register": [Adamax]}`)."""
        index: dict[str, list[cst.BaseExpression]] = defaultdict(list)
        for target, value, _ in self.assigns:
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute) \
                    and dotted(target.value.value) and not mt.is_name(target.value.value, "self"):
                index[(dotted(target.value.value) or "").rpartition(".")[2]].append(value)
        return index

    def _configured_optimizer(self, call: cst.Call) -> bool:
        """`Optim(model.parameters(), **params)` where `Optim = getattr(importlib.import_module(module),
        name)` of a `target:` string, and the project's configuration files name a class of
        `torch.optim` as a target (`target: "torch.optim.Adam"`, `Program.configured`): an optimizer,
        where it is handed a model's parameters first (the same lookup builds the scheduler, handed
        the optimizer, and the model, handed its settings)."""
        if self.program is None or not call.args or parameters_of(call.args[0].value) is None or \
                not any(t.rpartition(".")[0] == "torch.optim" for t in getattr(self.program, "configured", ())):
            return False
        func = call.func
        ref = self.ref(func) if isinstance(func, cst.Name) else None
        values = [func] if isinstance(func, cst.Call) else self.sources(ref) if ref is not None else []
        return bool(values) and all(isinstance(v, cst.Call) and mt.is_call_of(v, "getattr") and len(v.args) >= 2
                                    and self._imports_by_computed_name(v.args[0].value) for v in values)

    def _imports_by_computed_name(self, expr: cst.BaseExpression) -> bool:
        """`importlib.import_module(module_path)` (a name not written out), or a name holding it."""
        ref = self.ref(expr) if isinstance(expr, cst.Name) else None
        values = self.sources(ref) if ref is not None else [expr]
        return bool(values) and all(isinstance(v, cst.Call) and self.qualify(v.func) in IMPORTS_MODULE and v.args
                                    and not isinstance(v.args[0].value, cst.SimpleString) for v in values)

    def _builds_optimizer_inside(self, call: cst.Call, optimizers: list[cst.Call]) -> bool:
        """Does `call` run functions of the program (not a class's constructor) each of which
        constructs one of `optimizers` in its own body?"""
        if not isinstance(call.func, (cst.Name, cst.Attribute)) or mt.is_optimizer_factory(call.func):
            return False
        funcs = self._named_callees(call)
        return bool(funcs) and all(self.enclosing_class(f) is None and
                                   any(o is not call and self.is_inside(o, f) for o in optimizers) for f in funcs)

    def _holds_optimizer_class(self, func: cst.BaseExpression, depth: int = 4,
                               receivers: tuple[cst.ClassDef, ...] = ()) -> bool:
        """Is `func` a name every value of which is an optimizer class, as written where it is bound
        (`optimizer = torch.optim.Adam`, `opt_cls = optim.SGD if args.sgd else optim.Adam`), or an item
        of a dict display of optimizer classes by name (`OPTIMIZERS[name]` after `OPTIMIZERS = {'sgd':
        optim.SGD, 'adam': optim.Adam}`, or in an attribute: `self.optimizers[name]`)? Names and `self.x` are followed through what is bound to them,
        arguments for parameters included: `self.optim(self.model.parameters())` in a trainer whose
        `__init__(self, model, optim)` stores `self.optim = optim`, built as `Trainer(model, optim=optim.Adam)`;
        a `functools.partial` of an optimizer class is one too (`Trainer(net, partial(torch.optim.SGD, lr=0.1))`).
        `receivers`: the classes of the object whose method's return is being read (`registered`)."""
        if isinstance(func, cst.Subscript) and _own_name(func.value):
            items = self.dict_values(func.value) or self.registered(func, receivers)
            return bool(items) and all(isinstance(v, (cst.Name, cst.Attribute))
                                       and mt.is_optimizer(self.qualify(v), cst.Call(func=v)) for v in items)
        if isinstance(func, cst.Call) and (classes := self._registered_classes(func)):
            return all(self.is_optimizer_class(c) for c in classes)  # `OPTIMIZER_REGISTRY.get(name)`, filled by decorators
        if isinstance(func, cst.Call) and _registry_read(func) is not None:  # `self._creators.get(name)`
            items = self.registered(func, receivers)
            return bool(items) and all(isinstance(v, (cst.Name, cst.Attribute))
                                       and mt.is_optimizer(self.qualify(v), cst.Call(func=v)) for v in items)
        if isinstance(func, cst.Call):
            return self._looks_up_optimizer_class(func) or depth > 0 and self._returns_optimizer_class(func, depth - 1)
        if isinstance(func, cst.Subscript):  # `torch.optim.__dict__[name]`
            return self._looks_up_optimizer_class(func)
        ref = self.ref(func) if _own_name(func) else None
        reaching = self.reaching_sources(func) if isinstance(func, cst.Name) else None
        values = [self._partial_of(v) for v in _branches(
            reaching if reaching is not None else self.sources(ref) + self.default_left_out(ref))
            if not self.instantiated(v, self.code(func))] if ref is not None else []  # (`self.opt = self.opt(params)`)
        return bool(values) and all(isinstance(v, (cst.Call, cst.Subscript)) and (
                                        self._looks_up_optimizer_class(v) or _registry_read(v) is not None
                                        and self._holds_optimizer_class(v, 0, receivers) or isinstance(v, cst.Call)
                                        and depth > 0 and self._returns_optimizer_class(v, depth - 1)) or
                                    isinstance(v, (cst.Name, cst.Attribute)) and
                                    (mt.is_optimizer(self.qualify(v), cst.Call(func=v)) or
                                     depth > 0 and self._holds_optimizer_class(v, depth - 1)) for v in values)

    def _returns_optimizer_class(self, call: cst.Call, depth: int) -> bool:
        """Does `call` run functions of the program each of which returns an optimizer class, as
        `_holds_optimizer_class` reads a value (a tutorial's `get_optimizer(config.optimizer)(params,
        lr=lr)` with `def get_optimizer(name): optimizer_dict = {'adam': torch.optim.Adam}; return
        optimizer_dict[name]`; `return optim.SGD if sgd else optim.Adam`)? Not a class's constructor."""
        funcs = self.user_functions(call)
        if not funcs or self._instances_of(call):
            return False
        receivers = tuple(self._instances_of(call.func.value)) if isinstance(call.func, cst.Attribute) else ()
        values = [v for f in funcs for v in _branches(self.returned(f))]
        return bool(values) and all(isinstance(v, (cst.Name, cst.Attribute)) and mt.is_optimizer(self.qualify(v), cst.Call(func=v))
                                    or isinstance(v, (cst.Name, cst.Attribute, cst.Subscript, cst.Call))
                                    and self._holds_optimizer_class(v, depth, receivers) for v in values)

    def dict_values(self, expr: cst.BaseExpression, depth: int = 3) -> list[cst.BaseExpression]:
        """The values of the dict displays a name holds, merged as the program merges them
        (`{**torch_optims, **custom_optims}`, `torch_optims | custom_optims`): [] where any part is
        something else (or nothing is a dict display written out)."""
        ref = self.ref(expr) if _own_name(expr) else None
        sources = self.sources(ref) if ref is not None else [expr] if not _own_name(expr) else []
        values: list[cst.BaseExpression] = []
        for source in sources:
            if isinstance(source, cst.BinaryOperation) and isinstance(source.operator, cst.BitOr):
                merged = [source.left, source.right]
            elif isinstance(source, cst.Dict):
                values += [e.value for e in source.elements if isinstance(e, cst.DictElement)]
                merged = [e.value for e in source.elements if isinstance(e, cst.StarredDictElement)]
            else:
                return []
            for part in merged:
                found = self.dict_values(part, depth - 1) if depth else []
                if not found and not self._empty_dict(part):
                    return []
                values += found
        return values

    def registered(self, read: cst.Subscript | cst.Call, receivers: tuple[cst.ClassDef, ...] = ()
                   ) -> list[cst.BaseExpression]:
        """The values a registry read may give, where the table is filled by item stores: `table[key]`
        or `table.get(key)` of a name or `self.x` bound only to dict displays (their values) and
        stored into by item (`self._creators[key] = creator` in a base class's `register(self, key,
        creator)`), a stored parameter followed to the arguments of its method's calls
        (`self.register("Adam", Adam)` in an `OptimizerFactory.__init__`). A `self.x` is one table
        for a class and its bases (one `Ref`), but an instance of one subclass never holds what a
        sibling stores (`ModelFactory`'s lambdas, `LossFactory`'s losses): stores and calls made in
        the methods of a class that is no kin of the reading one are left out; where the read is a
        method's of a base class that the object it runs on (`receivers`: `OptimizerFactory()` whose
        `create` is `Factory`'s) extends, the kin of that object's class. [] where anything else binds
        the table or fills it (a store of a value it cannot follow)."""
        table = _registry_read(read)
        ref = self.ref(table) if table is not None and _own_name(table) else None
        if ref is None:
            return []
        reader = self.enclosing_class(read)
        readers = [r for r in receivers if reader is not None and reader in self.lineage(r)] or \
            ([reader] if reader is not None else [])

        def kin(node: cst.CSTNode) -> bool:
            cls = self.enclosing_class(node)
            return not readers or cls is None or all(self.kin_classes(cls, r) for r in readers)

        writes, stores = self.writes(ref), self._item_stores.get(ref, [])
        known = {id(value) for _, value, _ in writes} | {id(value) for value, _ in stores}
        if not writes or any(id(value) not in known for value in self.sources(ref)):
            return []  # bound to something else too: a parameter, an unpacked item, a dataclass field
        values: list[cst.BaseExpression] = []
        for _, value, stmt in writes:
            if kin(stmt) and (not isinstance(value, cst.Dict) or isinstance(stmt, cst.AugAssign)
                              or any(isinstance(e, cst.StarredDictElement) for e in value.elements)):
                return []
            values += [e.value for e in value.elements if isinstance(e, cst.DictElement)] if kin(stmt) else []
        for value, stmt in (store for store in stores if kin(store[1])):
            func = self.scope(stmt)
            if isinstance(value, cst.Name) and isinstance(func, cst.FunctionDef) and value.value in param_names(func):
                passed = [self.argument_for(site, func, value.value) for site in self.call_sites(func)
                          if not (isinstance(site.func, cst.Attribute) and mt.is_name(site.func.value, "self"))
                          or kin(site)]
                if not passed or any(arg is None for arg in passed):
                    return []
                values += [arg for arg in passed if arg is not None]
            else:
                values.append(value)
        return values

    @cached_property
    def _item_stores(self) -> dict[Ref, list[tuple[cst.BaseExpression, cst.CSTNode]]]:
        """`table[key] = value` (not augmented): (value, statement) by the table's name."""
        index: dict[Ref, list] = defaultdict(list)
        for target, value, stmt in self.assigns:
            if isinstance(target, cst.Subscript) and not isinstance(stmt, cst.AugAssign) and dotted(target.value):
                index[self.ref(target.value, stmt)].append((value, stmt))
        return index

    def _empty_dict(self, expr: cst.BaseExpression) -> bool:
        """A name bound only to `{}` (a registry of the program's own classes left empty)."""
        ref = self.ref(expr) if _own_name(expr) else None
        sources = self.sources(ref) if ref is not None else []
        return bool(sources) and all(isinstance(v, cst.Dict) and not v.elements for v in sources)

    def _looks_up_optimizer_class(self, call: cst.Call | cst.Subscript) -> bool:
        """A class of `torch.optim` looked up by its name at run time: `getattr(optim, cfg['name'])`
        (RPipe's make_optimizer), `getattr(importlib.import_module('torch.optim'), name)` (a
        traffic-demand framework's base trainer), `torch.optim.__dict__[name]` (`library_lookup`),
        `eval("optim.{}".format(name))` (brainprint's trainer); not `getattr(optim.lr_scheduler,
        name)`, a scheduler."""
        module = self.library_lookup(call)
        if module is not None:
            return module == "torch.optim"
        if not (isinstance(call, cst.Call) and mt.is_call_of(call, "eval") and call.args):
            return False
        owner = mt.literal_prefix(call.args[0].value).rpartition(".")[0]  # "optim.{}" -> `optim`
        return bool(re.fullmatch(r"[A-Za-z_][\w.]*", owner)) and \
            self.imports.qualify(cst.parse_expression(owner)) == "torch.optim"

    def library_lookup(self, expr: cst.BaseExpression) -> str | None:
        """The module, qualified, that `expr` picks a class or function from by a name known at run
        time: `getattr(optim, cfg.optim)`, `getattr(importlib.import_module('torch.optim'), name)`,
        `torch.optim.__dict__[name]`, `vars(models)[arch]` -> "torch.optim", "torchvision.models"
        (the module as `module_named` reads it); None for anything else."""
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "getattr") and len(expr.args) >= 2:
            return self.module_named(expr.args[0].value)
        if not isinstance(expr, cst.Subscript):
            return None
        table = expr.value
        if isinstance(table, cst.Attribute) and table.attr.value == "__dict__":
            return self.module_named(table.value)
        if isinstance(table, cst.Call) and mt.is_call_of(table, "vars") and len(table.args) == 1:
            return self.module_named(table.args[0].value)
        return None

    def module_named(self, expr: cst.BaseExpression, depth: int = 3) -> str | None:
        """The module, qualified, that `expr` is where the code names it: an imported one (`optim` of
        `from torch import optim`: "torch.optim"), what `importlib.import_module('torch.optim')`
        loads by a name written out, or a name (or `self.x`) every value of which is one of them
        (`mod = importlib.import_module('torch.optim')`); None otherwise (a name computed at run
        time, a relative one)."""
        if isinstance(expr, cst.Call):  # (or the first of names written out a loop tries in turn: `_loaded_module_names`)
            named = expr.args[0].value if len(expr.args) == 1 and expr.args[0].keyword is None else None
            if named is None or (self.qualify(expr.func) or dotted(expr.func)) not in IMPORTS_MODULE:
                return None
            names = self._loaded_module_names(named, expr)
            return names[0] if names and all(name[:1] not in ("", ".") for name in names) else None
        qualified = self.qualify(expr)
        if qualified is not None or not depth or not _own_name(expr):
            return qualified
        ref = self.ref(expr)
        found = {self.module_named(v, depth - 1) for v in _branches(self.sources(ref))} if ref is not None else set()
        return found.pop() if len(found) == 1 else None

    def looked_up_in(self, call: cst.Call) -> str | None:
        """The module, qualified, that a call of the program's own registry hands it to build an
        instance of a class it looks up there by name: pytorch-template's
        `config.init_obj('optimizer', torch.optim, params)` -> "torch.optim",
        `config.init_obj('arch', module_arch)` -> "model.model", whose `init_obj` returns
        `getattr(module, module_name)(*args, **module_args)`. A method call whose object ddpify cannot
        follow (a configuration a classmethod returns as `cls(...)`) may run any method of the
        program's classes by that name. None for any other call."""
        found = self._looked_up.get(call, _UNSET)
        if found is _UNSET:
            callees = self.user_functions(call) or (  # `config.init_obj(...)`, `config` from a classmethod's `cls(...)`
                [f for f in self.functions.get(call.func.attr.value, ()) if self.enclosing_class(f) is not None]
                if isinstance(call.func, cst.Attribute) else [])
            found = self._looked_up[call] = next(filter(None, (
                self.qualify(arg) for f in callees for r in self.returned(f)
                if isinstance(r, cst.Call) and isinstance(r.func, cst.Call) and mt.is_call_of(r.func, "getattr")
                and r.func.args and isinstance(r.func.args[0].value, cst.Name)
                and (arg := self.argument_for(call, f, r.func.args[0].value.value)) is not None)), None)
        return found

    def reexported_library(self, qualified: str) -> str | None:
        """The library module a module of the program re-exports whole and is no more than: its only
        statements `from torch.optim import *` (and other imports), no class or function of its own
        (a road-segmentation project's `utils/optim.py`, from which its trainer builds the optimizer
        the configuration names, `getattr(utils.optim, name)(**args)`; decision 0268). None for any
        other module, or where it star-imports several."""
        part = self._parts_by_name.get(qualified)
        if part is None or any(not isinstance(stmt, cst.SimpleStatementLine)
                               or not all(isinstance(s, (cst.Import, cst.ImportFrom, cst.Expr)) for s in stmt.body)
                               for stmt in part.module.body):
            return None
        stars = [m for m in self._imports_of(part).stars if not m.startswith(".")]
        return stars[0] if len(stars) == 1 else None

    def classes_of_module(self, qualified: str) -> list[cst.ClassDef]:
        """The classes a module of the program defines (`model.model`'s), by its qualified name."""
        return [cls for cls in self.classes.values() if self._part(cls) == qualified] if self.program is not None else []

    def _partial_of(self, value: cst.BaseExpression) -> cst.BaseExpression:
        """What `functools.partial(f, ...)` calls (`f`: `partial(torch.optim.SGD, lr=0.1)` builds SGDs),
        else `value` itself."""
        if isinstance(value, cst.Call) and self.qualify(value.func) == "functools.partial" and value.args \
                and value.args[0].keyword is None and not value.args[0].star:
            return value.args[0].value
        return value

    def is_optimizer_class(self, cls: cst.ClassDef, depth: int = 4) -> bool:
        """Does `cls` derive from an optimizer class (`torch.optim.Optimizer`, `optim.SGD`), directly
        or through the program's own bases? A base this program cannot resolve is none."""
        for base in cls.bases:
            name = dotted(base.value)
            if name in self.classes:
                if depth and self.is_optimizer_class(self.classes[name], depth - 1):
                    return True
            elif isinstance(base.value, (cst.Name, cst.Attribute)) and \
                    mt.is_optimizer(self.qualify(base.value), cst.Call(func=base.value)):
                return True
        return False

    def batch_loops(self) -> list[cst.For]:
        """Innermost loops over data that train: `for x, y in loader:` with a backward in reach."""
        loops = [lp for lp in self.loops if isinstance(lp, cst.For) and not self.counts(lp.iter)
                 and self.trains(lp)]
        return [lp for lp in loops if not any(o is not lp and self.is_inside(o, lp) for o in loops)]

    def counts(self, iter_expr: cst.BaseExpression) -> bool:
        """A loop over numbers, not data (`mt.is_counting`), also through a name every value of
        which counts: `with trange(1, steps + 1) as pbar: for step in pbar:` (the batches are
        drawn by `next()` in the body)."""
        if mt.is_counting(iter_expr):
            return True
        ref = self.ref(iter_expr) if isinstance(iter_expr, cst.Name) else None
        if ref is None:
            return False
        values = [*self.sources(ref), *self.entered(ref)]
        return bool(values) and all(mt.is_counting(v) for v in values)

    def grad_disabled(self, node: cst.CSTNode) -> bool:
        """Does `node` run with gradients off: under `with torch.no_grad():` (`inference_mode`), or
        in a function decorated with it (`@torch.no_grad()` on a model's `generate`)?"""
        def off(expr: cst.BaseExpression) -> bool:
            called = expr.func if isinstance(expr, cst.Call) else expr
            return (self.qualify(called) or dotted(called) or "").rpartition(".")[2] in NO_GRAD
        return any(isinstance(a, cst.With) and any(off(i.item) for i in a.items)
                   or isinstance(a, cst.FunctionDef) and any(off(d.decorator) for d in a.decorators)
                   for a in self.ancestors(node))

    def _entering_themselves(self, ref: Ref) -> list[cst.Call]:
        """`with Experiment(out, cfg) as exp:` binds `exp` to the instance itself where every
        `__enter__` of the classes the call builds returns `self` (`exp.checkpoint(model, name)` then
        runs `Experiment.checkpoint`); not a class whose `__enter__` hands back something else."""
        calls = [item for item in self.entered(ref) if isinstance(item, cst.Call)]
        return [call for call in calls if (classes := self._instances_of(call)) and classes is not _CYCLE and all(
            (enters := self._methods(cls, "__enter__")) and all(
                self.returned(m) and all(mt.is_name(r, "self") for r in self.returned(m)) for m in enters)
            for cls in classes)]

    def entered(self, ref: Ref) -> list[cst.BaseExpression]:
        """The context managers `ref` is bound to by `with ... as`."""
        return self._with_targets.get(ref, [])

    @cached_property
    def _with_targets(self) -> dict[Ref, list[cst.BaseExpression]]:
        """`with tqdm(loader) as bar`: `bar` holds what the context manager is (its `__enter__`
        is taken to return itself, as a file's, a progress bar's and a writer's do)."""
        index: dict[Ref, list] = defaultdict(list)
        for node in self.by_type.get(cst.With, ()):
            for item in node.items:
                if item.asname is not None:
                    for name in target_names(item.asname.name):
                        ref = self.ref(name, node)
                        if ref is not None:
                            index[ref].append(item.item)
        return index

    def enclosing_loops(self, node: cst.CSTNode) -> Iterator[cst.For | cst.While]:
        """The loops of `node`'s function whose body holds `node`, innermost first (a loop's `else`
        runs after it, so a `break` there leaves the next loop out)."""
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return
            if isinstance(anc, (cst.For, cst.While)) and child is anc.body:
                yield anc
            child = anc

    def epoch_loop(self, inner: cst.CSTNode) -> cst.For | cst.While | None:
        """The nearest loop around `inner`, in its own function, that repeats passes over data
        (not a `for` whose header holds `inner`: `for x in batches():` calls `batches()` once). A
        loop over phases (`over_phases`) is one only where no such loop is around it there: inside
        `for epoch in range(n):` it splits each epoch into phases."""
        phases = None
        for anc in self.ancestors(inner):
            if isinstance(anc, cst.FunctionDef):
                break
            if isinstance(anc, (cst.For, cst.While)) and anc is not inner and mt.is_epoch_loop(anc) \
                    and not self.in_header(inner, anc):
                if not self.over_phases(anc):
                    return anc
                phases = phases or anc
        return phases

    def over_phases(self, loop: cst.For | cst.While) -> bool:
        """`for split in splits:` where `splits` is only ever bound to lists of strings, written out or
        put together (`splits = ['train', 'valid'] + (['test'] if args.test else [])`), here or through
        other names: a loop over phases inside an epoch, not over epochs; so is `for phase in ['train', 'val']:`,
        and `for phase in self.folder_names:` where every store of the attribute is such a list or a
        parameter every caller gives one (sweep 30a's diatoms classifier, decision 0245)."""
        return isinstance(loop, cst.For) and self._strings_only(mt.strip_iteration(loop.iter))

    def _strings_only(self, node: cst.BaseExpression, depth: int = 3) -> bool:
        """A list or tuple of string literals (empty too), lists of them added or chosen by a test,
        or a name or attribute every binding of which is one (`splits = SPLITS`, `SPLITS = ('train',
        'valid')`, `self.phases = phases` of a parameter its callers give one)."""
        if isinstance(node, (cst.Name, cst.Attribute)):
            ref = self.ref(node)
            sources = self.sources(ref) if ref is not None and depth > 0 else []
            return bool(sources) and all(self._strings_only(value, depth - 1) for value in sources)
        if isinstance(node, (cst.List, cst.Tuple)):
            return all(isinstance(e, cst.Element) and isinstance(e.value, cst.SimpleString) for e in node.elements)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return self._strings_only(node.left, depth) and self._strings_only(node.right, depth)
        if isinstance(node, cst.IfExp):
            return self._strings_only(node.body, depth) and self._strings_only(node.orelse, depth)
        return False

    def in_header(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """Is `node` in the iterable of the `for` statement `loop` (evaluated once, not per pass)?"""
        return isinstance(loop, cst.For) and self.is_inside(node, loop.iter)

    DATA_MODULES = ("torch.utils.data.", "torchvision.datasets.")  # loaders and data sets


def _is_variable(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """Not `a.attr`'s attribute name, not `f(key=...)`'s keyword."""
    kind = type(parent)
    return not (kind is cst.Attribute and parent.attr is name or kind is cst.Arg and parent.keyword is name)


def _last_name(call: cst.Call) -> str | None:
    """The last name a call's callee spells: `f` of `f(x)` and of `a.b.f(x)`; None for any other."""
    func = call.func
    kind = type(func)
    return func.value if kind is cst.Name else func.attr.value if kind is cst.Attribute else None


def _grouped(items, key) -> dict:
    """`items` in lists by `key(item)`, in their order."""
    index: dict = defaultdict(list)
    for item in items:
        index[key(item)].append(item)
    return index


NO_GRAD = frozenset({"no_grad", "inference_mode"})  # torch.no_grad, torch.autograd.no_grad, torch.inference_mode
PROPERTIES = frozenset({"property", "cached_property"})
def _copied(value: cst.BaseExpression) -> cst.BaseExpression:
    """The container a copy is made of (`list(callbacks)`, `tuple(hooks)`, `sorted(cbs)`: the same
    items as `callbacks`), or given unless empty (`callbacks or []`), else `value` itself."""
    if isinstance(value, cst.Call) and dotted(value.func) in COPIES and len(value.args) == 1 \
            and value.args[0].keyword is None and not value.args[0].star and isinstance(value.args[0].value, cst.Name):
        return value.args[0].value
    if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or) \
            and isinstance(value.left, cst.Name) and isinstance(value.right, (cst.List, cst.Tuple, cst.Dict)) \
            and not value.right.elements:
        return value.left  # `self.callbacks = callbacks or []`: the items of `callbacks`, if any
    return value


# what makes a new container of the items of the one it is given
COPIES = frozenset({"list", "tuple", "sorted"})


# methods that fill a container in place (`Facts.filled`)
FILLS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "setdefault", "add_param_group"})
GROWN = frozenset({"append", "insert", "extend", "setdefault", "update"})  # what `_items_of` reads of them  # decorators that make a method an attribute


def is_property(func: cst.FunctionDef) -> bool:
    """`@property`, `@functools.cached_property`: a method read as an attribute."""
    return any((dotted(d.decorator) or "").rpartition(".")[2] in PROPERTIES for d in func.decorators)


def _static_or_class(func: cst.FunctionDef) -> bool:
    """`@staticmethod`, `@classmethod`: a method called on its class, its arguments its parameters
    (after `cls`)."""
    return any(dotted(d.decorator) in ("staticmethod", "classmethod") for d in func.decorators)


def argument_slot(call: cst.Call, name: str | None) -> int | str | None:
    """Where `call` passes the name `name`: its index among the positional arguments (none
    starred before it), or its keyword; None where it does not pass it alone."""
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if name is not None and dotted(arg.value) == name:
            return arg.keyword.value if arg.keyword is not None else i
    return None


def _generated_fields(cls: cst.ClassDef, library: bool = False) -> list[str]:
    """The fields, in order, of a class whose `__init__` Python writes: a `@dataclass` (without an
    `__init__` of its own) or a `typing.NamedTuple` subclass, or a library (`library`: a pydantic
    model, an attrs class); `ClassVar`s are not fields, nor pydantic's `model_config`."""
    generated = library or any((dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or "")
                               .rpartition(".")[2] == "dataclass" for d in cls.decorators) or \
        any((dotted(b.value) or "").rpartition(".")[2] == "NamedTuple" for b in cls.bases)
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    if not generated or any(isinstance(s, cst.FunctionDef) and s.name.value == "__init__" for s in body):
        return []
    return [a.target.value for line in body if isinstance(line, cst.SimpleStatementLine) for a in line.body
            if isinstance(a, cst.AnnAssign) and isinstance(a.target, cst.Name) and a.target.value != "model_config"
            and "ClassVar" not in (dotted(a.annotation.annotation) or dotted(getattr(a.annotation.annotation, "value", None)) or "")]


def parameters_of(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`model.parameters()`, `list(model.parameters())`: `model`; else None."""
    if isinstance(expr, cst.Call) and mt.is_name(expr.func, "list") and len(expr.args) == 1:
        expr = expr.args[0].value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "parameters" \
            and not expr.args and dotted(expr.func.value):
        return expr.func.value
    return None


def param_names(func: cst.FunctionDef) -> list[str]:
    """The names of a function's positional and keyword parameters."""
    p = func.params
    return [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]


FORMAT_FIELD = re.compile(r"%[-#0 +]*[0-9*]*(?:\.[0-9*]+)?[a-zA-Z]|\{[^{}]*\}")


def _name_pattern(expr: cst.BaseExpression) -> re.Pattern:
    """The names a name computed at run time may be, as a pattern of its literal parts in order:
    `"net" + name` and `f"net{name}"` give `net.*`, `"level_%d" % i` and `"layer{}".format(i)`
    `level_.*`, `layer.*`; a name with no literal part (`key`) any name."""
    def parts(node: cst.BaseExpression) -> str:
        if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
            return re.escape(node.evaluated_value)
        if isinstance(node, cst.ConcatenatedString):
            return parts(node.left) + parts(node.right)
        if isinstance(node, cst.FormattedString):
            return "".join(re.escape(p.value) if isinstance(p, cst.FormattedStringText) else ".*" for p in node.parts)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return parts(node.left) + parts(node.right)
        formatted = node.left if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) else \
            node.func.value if isinstance(node, cst.Call) and mt.is_attribute(node.func, "format") else None
        if isinstance(formatted, cst.SimpleString) and isinstance(formatted.evaluated_value, str):
            return ".*".join(re.escape(p) for p in FORMAT_FIELD.split(formatted.evaluated_value))
        return ".*"
    return re.compile(re.sub(r"(?:\.\*)+", ".*", parts(expr)))


def _namespace_walked(loop: cst.For) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """(the module, the loop's item) of a loop over a module's namespace: `for name, cls in
    module.__dict__.items():` and `vars(module).items()` (the value of each pair), `for cls in
    module.__dict__.values():`, `for name, cls in inspect.getmembers(module, ...)`; (None, None) else."""
    walked, target = loop.iter, loop.target
    pair = target.elements[1].value if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2 else None
    if isinstance(walked, cst.Call) and (dotted(walked.func) or "").rpartition(".")[2] == "getmembers" and walked.args:
        return walked.args[0].value, pair
    if not (isinstance(walked, cst.Call) and isinstance(walked.func, cst.Attribute) and not walked.args
            and walked.func.attr.value in ("items", "values")):
        return None, None
    space = walked.func.value
    module = space.value if isinstance(space, cst.Attribute) and space.attr.value == "__dict__" else \
        space.args[0].value if isinstance(space, cst.Call) and mt.is_name(space.func, "vars") and len(space.args) == 1 else None
    return (module, pair) if walked.func.attr.value == "items" else (module, target)


def unpacking_paths(target: cst.BaseExpression) -> list[tuple[cst.BaseExpression, Path]]:
    """Each part an unpacking target binds (a name, `self.x`, `d[k]`), with its path: the place
    of each level, counted from the end after a starred part (`*rest, last = value`: `(-1,)`
    for `last`), and None for the starred part itself (a list of some of the elements). `(a,
    b), c = value`: `a` (0, 0), `b` (0, 1), `c` (1,). Before, only the top level was followed:
    `a` and `b` were bound to nothing and `c` after a star to the element at its own place from
    the start (fixmatch's `(labeled, unlabeled), valid, test = create_loaders(...)`, decision 0242)."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        return [(target, ())]
    elements = target.elements
    star = next((i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)), None)
    found: list[tuple[cst.BaseExpression, Path]] = []
    for i, element in enumerate(elements):
        place = i if star is None or i < star else None if i == star else i - len(elements)
        if isinstance(element.value, (cst.Tuple, cst.List)) and place is not None:
            found += [(part, (place, *path)) for part, path in unpacking_paths(element.value)]
        else:
            found.append((element.value, (place,)))
    return found


def written_element(value: cst.BaseExpression, path: Path) -> cst.BaseExpression:
    """The element at `path` (`unpacking_paths`) of a tuple written out, as deep as it is written
    out (`opt.global_rank` of `save_dir, rank = opt.save_dir, opt.global_rank`), else the value
    it is part of (`load_state(path)` of `epoch, var = load_state(path)`)."""
    for i in path:
        if i is None or not isinstance(value, (cst.Tuple, cst.List)) or not -len(value.elements) <= i < len(value.elements) \
                or any(isinstance(e, cst.StarredElement) for e in value.elements):
            break
        value = value.elements[i].value
    return value


def target_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from target_names(el.value)


def _every_one_named(named: list[list[cst.ClassDef]]) -> list[cst.ClassDef]:
    """The classes of `named` (one list per value), in order and once each, where every value names
    at least one class; [] where any names none (or there is no value)."""
    return [] if not named or not all(named) else list(dict.fromkeys(c for cs in named for c in cs))


def _class_names(classes: dict, expr: cst.BaseExpression) -> list:
    """The classes of `classes` an expression names: `Single`, `A if x else B`, `A or B` ([] if
    some part is not one)."""
    if isinstance(expr, cst.IfExp):
        body, orelse = _class_names(classes, expr.body), _class_names(classes, expr.orelse)
        return body + orelse if body and orelse else []
    if isinstance(expr, cst.BooleanOperation):
        left, right = _class_names(classes, expr.left), _class_names(classes, expr.right)
        return left + right if left and right else []
    cls = classes.get(expr.value) if isinstance(expr, cst.Name) else None
    return [cls] if cls is not None else []


def _branches(values: list[cst.BaseExpression]) -> Iterator[cst.BaseExpression]:
    """Each value as a conditional expression may give it (`a if c else b`: `a`, then `b`)."""
    for value in values:
        if isinstance(value, cst.IfExp):
            yield from _branches([value.body, value.orelse])
        else:
            yield value


# what starts a function in another process or thread: `target=` runs with `args=` and `kwargs=`
STARTERS = frozenset({"multiprocessing.Process", "torch.multiprocessing.Process", "multiprocessing.context.Process",
                      "threading.Thread"})


def _started_argument(call: cst.Call, names: list[str], param: str) -> cst.BaseExpression | None:
    """What a process's `args=(...)` (by place) or `kwargs={...}` (by name) passes for `param`."""
    args, kwargs = mt.keyword(call, "args"), mt.keyword(call, "kwargs")
    if kwargs is not None and isinstance(kwargs.value, cst.Dict):
        for element in kwargs.value.elements:
            key = element.key if isinstance(element, cst.DictElement) else None
            if isinstance(key, cst.SimpleString) and key.evaluated_value == param:
                return element.value
    if args is not None and isinstance(args.value, (cst.Tuple, cst.List)) and param in names:
        values = [e.value for e in args.value.elements if not isinstance(e, cst.StarredElement)]
        if len(values) == len(args.value.elements) and names.index(param) < len(values):
            return values[names.index(param)]
    return None


def _partial_argument(bound: list[cst.Call], call: cst.Call, names: list[str], param: str) -> cst.BaseExpression | None:
    """What a call of a `functools.partial` passes for `param`: by name, the call's keyword, else
    the partial's (the call's overrides it); by place, the partial's arguments after its function,
    then the call's. Where the name holds several partials, or a `*`/`**` leaves places unknown: only
    the call's own keyword."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    if len(bound) != 1 or any(a.star for a in (*bound[0].args, *call.args)):
        return None
    given = [*bound[0].args[1:], *call.args]
    for arg in given:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    positional = [a.value for a in given if a.keyword is None]
    return positional[names.index(param)] if param in names and names.index(param) < len(positional) else None


def _accepts(call: cst.Call, func: cst.FunctionDef) -> bool:
    """Do the arguments of `call` fit the parameters of the plain function `func` (no `self`): not
    more by place than it takes, no keyword it lacks, none it requires left out? (`*args` or
    `**kwargs` in the call: they may.)"""
    if any(a.star for a in call.args):
        return True
    params = func.params
    positional = [*params.posonly_params, *params.params]
    named = {p.name.value for p in (*params.params, *params.kwonly_params)}
    given = [a for a in call.args if a.keyword is None]
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if len(given) > len(positional) and not isinstance(params.star_arg, cst.Param):
        return False
    if not keywords <= named and params.star_kwarg is None:
        return False
    required = [p.name.value for p in positional[len(given):] if p.default is None]
    required += [p.name.value for p in params.kwonly_params if p.default is None]
    return all(name in keywords for name in required)


def _binding(stmt: cst.CSTNode, name: str) -> tuple[bool, list[cst.BaseExpression]] | None:
    """Does `stmt` bind the name `name` as a plain `name = value` of its own (always: True), or in
    statements nested in it (the values they may bind), and how; None where it binds it otherwise
    (a loop's target, `with ... as`, an unpacking, an augmented store, `del`, `global`, `nonlocal`,
    an import, `:=`)."""
    values: list[cst.BaseExpression] = []
    for node in mt.walk(stmt):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not stmt:
            continue  # (their own names: bindings of another scope; walked all the same, which is only cautious)
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in node.names):
            return None
        if isinstance(node, cst.Assign):
            for t in node.targets:
                if mt.is_name(t.target, name):
                    values.append(node.value)
                elif any(mt.is_name(n, name) for n in mt.walk(t.target)) and not isinstance(t.target, cst.Attribute):
                    return None
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName,
                               cst.Del)):
            target = node.name if isinstance(node, cst.AsName) else node.target
            if isinstance(node, cst.AnnAssign) and mt.is_name(target, name) and node.value is not None:
                values.append(node.value)
            elif any(mt.is_name(n, name) for n in mt.walk(target)) and not isinstance(target, cst.Attribute):
                return None
        elif isinstance(node, cst.ImportAlias) and node.asname is None and (dotted(node.name) or "").split(".")[0] == name:
            return None
    always = isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(s, cst.Assign) and any(mt.is_name(t.target, name) for t in s.targets) for s in stmt.body)
    return always, values


def _registry_read(read: cst.BaseExpression) -> cst.BaseExpression | None:
    """The table of `table[key]` or `table.get(key)` (a default beside it: `table.get(key, None)`);
    None for any other expression."""
    if isinstance(read, cst.Subscript) and len(read.slice) == 1 and isinstance(read.slice[0].slice, cst.Index):
        return read.value
    if isinstance(read, cst.Call) and isinstance(read.func, cst.Attribute) and read.func.attr.value == "get" \
            and 1 <= len(read.args) <= 2 and not any(a.star or a.keyword for a in read.args) \
            and (len(read.args) == 1 or mt.is_name(read.args[1].value, "None")):
        return read.func.value
    return None


def _own_name(expr: cst.BaseExpression) -> bool:
    """A name, or an attribute of `self` (`self.optim`): what a value bound to it can be followed through."""
    name = dotted(expr) or ""
    return isinstance(expr, cst.Name) or name.startswith("self.") and name.count(".") == 1


def _enter(answering: dict, key) -> None:
    """`key` is being answered (once more, where a question asks it again while it is answered)."""
    answering[key] = answering.get(key, 0) + 1


def _leave(answering: dict, key) -> None:
    if answering[key] == 1:
        del answering[key]
    else:
        answering[key] -= 1


def _imported_names(part) -> set[str]:
    """The qualified names a file of the program imports by name, relative imports resolved from
    its package (`from .data.toy import Toy` in `pkg/flat.py`: `pkg.data.toy.Toy`)."""
    package = part.name if part.path.name == "__init__.py" else part.name.rpartition(".")[0]
    found = set()
    for node in import_nodes(part.module):
        if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
            continue
        base = package.split(".")[:len(package.split(".")) - len(node.relative) + 1] if node.relative else []
        module = ".".join([*filter(None, base), *([dotted(node.module) or ""] if node.module else [])])
        found.update(f"{module}.{alias.name.value}" for alias in node.names if isinstance(alias.name, cst.Name))
    return found

