"""What the rules of `ddpify check` ask about a script, answered from one `Facts` walk.

`Context` is the one object a rule receives; it is composed of the questions by concern:
- `ctx.script` (`check/script.py`, `Script`): whether the script is distributed, its calls by
  qualified name, how it spells an import, code under `torch.no_grad()`;
- `ctx.ranks` (`analysis/ranks.py`, `Ranks`, the one `convert` asks too): which expressions are
  the global rank, which tests depend on it, which statements run on some processes only, which
  calls are collectives;
- `ctx.values` (`analysis/same_values.py`, `SameValues`, the one `convert` asks too, here with
  `wide=True`): which values are the same on every process;
- `ctx.facts`, and here: which names hold a `DistributedDataParallel` wrapper, and whether on
  every path: the converter's own answer (`ddpify.analysis.models.holds_wrapper`) about the wraps
  the script writes; which `DataLoader(...)` each loop iterates and each call is handed: the
  converter's `loaders.loaders_of`.

Each part holds what it asks (`SameValues` asks the facts and the ranks), none is another's
subclass; a rank test parts the processes unless the values prove it the same on every one,
which `Ranks` is told by the function it is given. The ranks and values are built once per
program (`ranks(facts)`, `values(facts)`), so a rewrite and a rule asking of the same facts get
the same answer.
"""

from __future__ import annotations

from functools import cached_property
from itertools import takewhile

import libcst as cst

from ddpify.analysis import frameworks, objects
from ddpify.analysis.loaders import loaders_of
from ddpify.syntax import matchers as mt
from ddpify.analysis.ranks import _conjuncts as conjuncts
from ddpify.analysis.same_values import ranks, values
from ddpify.analysis.shards import Shards
from ddpify.check.script import INIT, SAMPLER, Script
from ddpify.syntax.matchers import string_value
from ddpify.syntax.facts import Facts, Ref, is_property
from ddpify.analysis.models import (DDP, IGNITE_AUTO_MODEL, Holds, Model, alone_in_its_group, holds_wrapper,
                                     never_a_wrapper, own_wrapper_classes, prepares, written_wraps)
from ddpify.syntax.names import dotted


class Context:
    """The facts of one script and the questions the rules share (each answered once)."""

    def __init__(self, facts: Facts, imported_by_ddp: bool = False) -> None:
        self.script = Script(facts, imported_by_ddp)  # first: it completes a star import's names
        self.facts = facts
        self.ranks = ranks(facts)
        self.values = values(facts)

    @cached_property
    def ddp_refs(self) -> dict[Ref, Model]:
        """Names that hold a `DistributedDataParallel(...)` the script built, with the parameters of
        this file's functions they are passed to (`models.written_wraps`)."""
        return written_wraps(self.facts)

    @cached_property
    def ddp_alone(self) -> bool:
        """Is every wrapper the script holds a `DistributedDataParallel(...)` it writes over a
        process group of one process (`models.alone_in_its_group`: `process_group=new_group(ranks=
        [rank])`)? Then no DDP forward or backward is a collective across processes: a rank that
        runs one alone, or leaves the loop of them early, leaves no other waiting."""
        wraps = self.script.calls_of(DDP)
        return bool(wraps) and all(alone_in_its_group(self.facts, w) for w in wraps) and all(
            isinstance(m.defined, (cst.Assign, cst.AnnAssign)) and m.defined.value in wraps for m in self.ddp_refs.values())

    @cached_property
    def one_process(self) -> str | None:
        """Why the program runs as one process, or None: its process group is hard-coded to one
        (`Script.one_process`), or it is an accelerate program that spreads its models over the
        GPUs itself with `nn.DataParallel` (or a subclass of it) and wraps none in DDP, neither by
        its own wrap nor through `prepare` (a dict of DataParallel networks is handed back as it
        is): DataParallel in each of several processes would put every process on every GPU."""
        f = self.facts
        if self.script.one_process:
            return "init_process_group(world_size=1)"
        spread = [c for name in DATA_PARALLEL for c in (*self.script.calls_of(name), *self.script.subclass_calls(name))]
        if spread and f.imports.imports_module("accelerate") and not self.ddp_refs \
                and not self.script.calls_of(INIT) and not self.script.calls_of(DDP):
            return "an accelerate program whose models nn.DataParallel spreads over the GPUs, none wrapped in DDP"
        return None

    @cached_property
    def loader_reads(self) -> tuple[dict[cst.For, frozenset[cst.Call]], dict[cst.Call, frozenset[cst.Call]]]:
        """Which of the script's `DataLoader(...)` calls each `for` loop may iterate (past iterator
        adapters), and which each call may be handed in an argument (a name or an attribute), as
        the object core finds them (`loaders.loaders_of`, `convert`'s answer): asked once, for the
        loaders of every sampler (DDP002, DDP010)."""
        f = self.facts
        loaders = self.script.calls_of("torch.utils.data.DataLoader")
        if not loaders:
            return {}, {}
        loops = {lp: found for lp in f.loops if isinstance(lp, cst.For)
                 and (found := frozenset(loaders_of(f, mt.strip_iteration(lp.iter), loaders)))}
        handed = {c: found for c in f.calls if (found := frozenset(
            x for a in c.args if dotted(a.value) for x in loaders_of(f, a.value, loaders, drawn=False)))}
        return loops, handed

    @cached_property
    def shards(self) -> Shards:
        """Which loaders shard the data between the processes, and which values are drawn from a
        process's own shard (`ddpify.analysis.shards`), over the loops `loader_reads` finds."""
        return Shards(self.facts, self.script.calls_of("torch.utils.data.DataLoader"), self.script.calls_of(SAMPLER),
                      self.loader_reads[0], self.ranks.rank_dependent, self.ranks.entry_point)

    @cached_property
    def wrapped_on_several_only(self) -> bool:
        """Is every wrap the script writes one that wraps only on a run of several processes
        (accelerate's `prepare`, pytorch-ignite's `idist.auto_model`: on one process the model
        itself, or a DataParallel)? There a `.module` added by `--fix` would fail on one process."""
        return bool(self.ddp_refs) and all(
            isinstance(m.defined, (cst.Assign, cst.AnnAssign)) and isinstance(m.defined.value, cst.Call)
            and (prepares(self.facts, m.defined.value) or self.facts.qualify(m.defined.value.func) in IGNITE_AUTO_MODEL)
            or m.defined in self._framework_given for m in self.ddp_refs.values())

    @cached_property
    def _framework_given(self) -> frozenset[cst.CSTNode]:
        """The first statements of the methods a framework's trainer calls with the model it wrapped
        (`compute_loss(self, model, ...)` of a `transformers.Trainer` subclass,
        `frameworks.wrapped_parameters`): where their `Model`s start. Trainer wraps through
        accelerate, on a run of several processes only."""
        return frozenset(func.body.body[0] for func, _ in frameworks.wrapped_parameters(self.facts)
                         if isinstance(func.body, cst.IndentedBlock) and func.body.body)

    @cached_property
    def prepared_only(self) -> bool:
        """Is every wrap the script writes accelerate's (`model = accelerator.prepare(model)`, no
        `DistributedDataParallel(...)` of its own)? `prepare` wraps only where there are several
        processes: the bare model is reached through `accelerator.unwrap_model(model)`, which
        works on one process too, not through `.module`."""
        return bool(self.ddp_refs) and all(
            isinstance(m.defined, (cst.Assign, cst.AnnAssign)) and m.defined.value is not None
            and prepares(self.facts, m.defined.value) or m.defined in self._framework_given for m in self.ddp_refs.values())

    @cached_property
    def _wraps_unguarded(self) -> bool:
        """Does every wrap of the script run on every run of it (no `if` or conditional expression
        around it in its function: `D_A = DDP(D_A, device_ids=[rank])` in the spawned worker)? Then
        a test the program reads the same object's `.module` on one side of (`if
        args.multi_gpu_flag: D_A.module.state_dict() else: D_A.state_dict()`, in a helper the
        one-process script calls too) is the program's own test of whether it is wrapped: every
        run of this script is on the `.module` side."""
        f = self.facts
        return bool(self.ddp_refs) and all(
            not any(isinstance(a, (cst.If, cst.IfExp)) for a in takewhile(
                lambda a: not isinstance(a, (cst.FunctionDef, cst.Module)), f.ancestors(m.defined)))
            for m in self.ddp_refs.values())

    @cached_property
    def optimizer_steps(self) -> frozenset[cst.Call]:
        """The `.step()` calls that step an optimizer: of an object the object core finds an
        optimizer among (`opt_g.step()` of `opt_g = Adam(...)`, `self.opt.step()` of a trainer whose
        `__init__` builds it, one handed in as an argument), or of a name bound to one of
        `Facts.optimizers`; a GradScaler's `scaler.step(opt)` of one. Where the core finds no
        object of a kind it knows (a library's factory, a parameter no caller passes), a name that
        says "optim" (`optimizer = create_optimizer(cfg)`); not where it finds only models, loaders or
        writers (`self.optim_net.step()` of a module).

            opt.step()                 # opt = torch.optim.Adam(...): a step
            scaler.step(self.opt)      # a step of self.opt
            optimizer.step()           # optimizer = accelerator.prepare(optimizer): a step, by name
            scheduler.step()           # no step of an optimizer
        """
        f = self.facts
        flow = objects.of(f)
        named = {f.ref(t, s) for t, v, s in f.assigns if v in f.optimizers}

        def optimizer(expr: cst.BaseExpression) -> bool:
            kinds = {flow.kind(site) for site in flow.values(expr)}
            if objects.OPTIMIZER in kinds or f.ref(expr) in named:
                return True
            return kinds <= {None} and "optim" in (dotted(expr) or "").lower()
        return frozenset(c for c in f.calls if mt.is_method_call(c, "step") and isinstance(c.func, cst.Attribute)
                         and (optimizer(c.func.value) or any(optimizer(a.value) for a in c.args)))

    def holds_ddp(self, expr: cst.BaseExpression) -> Holds | None:
        """WRAPPER when `expr` holds the wrapper on every path that reaches it, MAYBE when on
        some (`if args.distributed: model = DDP(model)`), None when never: the converter's own
        answer (`models.holds_wrapper`), about the wraps this script writes."""
        return holds_wrapper(self.facts, self.ddp_refs, expr) if self.ddp_refs else None

    @cached_property
    def wrap_tests(self) -> set[str]:
        """The tests the script wraps its models under (`if args.distributed: model = DDP(model)`)."""
        f = self.facts
        tests = set()
        for wrap in self.script.calls_of(DDP):
            guard = next((a for a in f.ancestors(wrap) if isinstance(a, cst.If)), None)
            if guard is not None and f.is_inside(wrap, guard.body):
                tests.add(f.code(guard.test))
        return tests

    @cached_property
    def other_engine_tests(self) -> set[str]:
        """The tests every wrap under them is on the false side of (`if self.use_deepspeed: ...
        elif self.use_ddp: model = DDP(model)`), also around the calls of a function that wraps
        (`if use_fsdp: net = load_fsdp_model(...)` / `else: net = load_ddp_model(...)`, whose
        helper builds the DDP wrapper), two calls up: their true side is another engine's, where
        no DDP wrap runs."""
        f = self.facts
        sides: dict[str, set[bool]] = {}

        def walk(node: cst.CSTNode, depth: int) -> None:
            child = node
            for anc in f.ancestors(node):
                if isinstance(anc, cst.FunctionDef) and depth:
                    for site in f.call_sites(anc):
                        walk(site, depth - 1)
                if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                    return
                if isinstance(anc, cst.If) and child is not anc.test:
                    test, negated = _negation(anc.test)
                    sides.setdefault(f.code(test), set()).add((child is anc.body) != negated)
                child = anc

        for wrap in self.script.calls_of(DDP):
            walk(wrap, 2)
        return {test for test, side in sides.items() if side == {False}}

    @cached_property
    def _wrap_choices(self) -> tuple[str, frozenset[str]] | None:
        """(the option, its values) where every wrap runs in the body of `option == "value"` (`if
        args.train_engine == "torch_ddp": model = DDP(model)`); None otherwise."""
        f = self.facts
        options, chosen = set(), set()
        for wrap in self.script.calls_of(DDP):
            guard = next((a for a in f.ancestors(wrap) if isinstance(a, cst.If)), None)
            choice = self._choice(guard.test) if guard is not None and f.is_inside(wrap, guard.body) else None
            if choice is None:
                return None
            options.add(choice[0])
            chosen.add(choice[1])
        return (options.pop(), frozenset(chosen)) if len(options) == 1 else None

    def _other_choice(self, test: cst.BaseExpression) -> bool:
        """Does `test` pick another value of the option every wrap is chosen by (`if
        info_dict["train_engine"] == "deepspeed":`, the wraps under `args.train_engine ==
        "torch_ddp"`)? Its body runs where no wrap did."""
        wraps, choice = self._wrap_choices, self._choice(test)
        return wraps is not None and choice is not None and choice[0] == wraps[0] and choice[1] not in wraps[1]

    def _choice(self, test: cst.BaseExpression) -> tuple[str, str] | None:
        """`option == "value"`: the option (`_option`) and the value."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Equal)):
            return None
        value = string_value(test.comparisons[0].comparator)
        return (self._option(test.left), value) if value is not None else None

    def _option(self, expr: cst.BaseExpression, depth: int = 3) -> str:
        """The option `expr` reads, spelled as the program sets it: `args.train_engine` also for
        `info_dict["train_engine"]` and `info_dict.get("train_engine", "torch_ddp")` where every value
        the program stores under that key is `args.train_engine` (`configs["train_engine"] =
        args.train_engine`, `{"train_engine": args.train_engine}`), and for a name that holds one."""
        f = self.facts
        ref = f.ref(expr) if isinstance(expr, cst.Name) and depth > 0 else None
        sources = f.sources(ref) if ref is not None else []
        if len(sources) == 1:
            return self._option(sources[0], depth - 1)
        stored = {f.code(v) for v in self._stored_by_key.get(_key(expr) or "", ())}
        return stored.pop() if len(stored) == 1 else f.code(expr)

    @cached_property
    def _stored_by_key(self) -> dict[str, list[cst.BaseExpression]]:
        """The values the program stores under each string key: `d["k"] = v`, `{"k": v}`."""
        f = self.facts
        index: dict[str, list[cst.BaseExpression]] = {}
        for target, value, _ in f.assigns:
            if (key := _key(target)) is not None:
                index.setdefault(key, []).append(value)
        for literal in f.findall(f.module, cst.Dict):
            for e in literal.elements:
                if isinstance(e, cst.DictElement) and (key := string_value(e.key)) is not None:
                    index.setdefault(key, []).append(e.value)
        return index

    def unwrapped_here(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` read where it is not the wrapper: on the `else` of `isinstance(model, DDP)` (or
        of `hasattr(model, "module")`), or of the very test the script wraps under (`model.module.x
        if args.distributed else model.x`), or of a test that the run has several processes
        (`ranks.several_processes`: `dist.is_initialized()`, a flag every process group starts
        under, `self.ddp = config["DDP"]`; no group, no wrapper), or of an `or` one of whose
        operands is such a test (`if args.gpus > 1 or args.distributed:`), on the true side of a test every wrap is on the false
        side of (`if self.use_deepspeed: model.backward(loss)`, the wrap under `elif
        self.use_ddp:`; or under the `else` that calls a helper that wraps: `other_engine_tests`), or that picks another value of the option every wrap is chosen by
        (`_other_choice`), or, where every wrap is accelerate's `prepare` (no test of the
        program's own guards it: it wraps where there are several processes), opposite a branch
        that reads its `.module` (`vae.module.discr if self.is_distributed else vae.discr`), or after the function unwrapped it under the wrap's test (`if args.distributed: model =
        model.module`; for a read in a closure, before each of the closure's calls)? A test about an object `expr` is read from counts too (`model.base_model` on
        the else of `hasattr(model, "module")`)."""
        f = self.facts
        owner = f.code(expr)
        # the object read and those it is read from: the else of `hasattr(model, "module")` holds the
        # bare `model`, and its `model.base_model` too
        owners = [owner, *_prefixes(dotted(expr))]
        child: cst.CSTNode = expr
        for anc in f.ancestors(expr):
            if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.body and self._excludes_every_wrap(anc.test):
                return True  # `if cf.with_ddp and cf.with_fsdp:` where every wrap runs under `... and not cf.with_fsdp`
            if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
                test, negated = _negation(anc.test)
                in_else = (child is not anc.body) != negated
                # where `a or b` is false each of its operands is: the else of `if args.gpus > 1 or
                # args.distributed:` runs where the wrap's `if args.distributed:` did not
                if in_else and any(self._is_wrap_test(t) or any(self._wrapper_test(t, o) for o in owners)
                                   or self._implied_by_wrap_tests(t) or self.ranks.several_processes(t, every=True)
                                   for t in mt.disjuncts(test)):
                    return True  # (no process group on the else of `if dist.is_initialized():`: no wrapper)
                if not in_else and (f.code(test) in self.other_engine_tests or self._other_choice(test)
                                    or any(self._container_test(t, o) for t in conjuncts(test) for o in owners)):
                    return True
                other = anc.orelse if child is anc.body else anc.body
                if (self.prepared_only or self._wraps_unguarded) and other is not None and any(
                        f.code(a.value) == owner and a.attr.value == "module" for a in mt.findall(other, cst.Attribute)):
                    return True  # the program's own unwrapping: `vae.module.discr if distributed else vae.discr`
            if isinstance(anc, cst.IndentedBlock) and self._left_if_wrapper(anc, child, owner):
                return True
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                break
            child = anc
        ref = f.ref(expr) if dotted(expr) else None
        return ref is not None and any(
            f.code(value) == f"{owner}.module" and (reads := self._read_in(expr, f.scope(stmt)))
            and all(f.before(stmt, r) for r in reads) and self._under_wrap_test(stmt, owner)
            for _, value, stmt in f.writes(ref))

    def _excludes_every_wrap(self, held: cst.BaseExpression) -> bool:
        """Does the test `held`, true where a read runs, contradict a test every wrap of the script
        runs under: a conjunct of it that one of the wrap's tests negates (`if cf.with_ddp and
        cf.with_fsdp:` against the wrap's `if cf.with_ddp and not cf.with_fsdp:`, `if use_fsdp:`
        against `if not use_fsdp:`)? Then no wrap has run where the test holds, on any path: the
        FSDP branch shards the bare model, whose own attributes it reads (WeatherGenerator)."""
        wraps = self.script.calls_of(DDP)
        if not wraps:
            return False
        f = self.facts

        def literal(test: cst.BaseExpression) -> tuple[str, bool]:  # `not x` -> ("x", True)
            inner, negated = _negation(test)
            return f.code(inner), negated

        here = {literal(c) for c in mt.conjuncts(held)}
        for wrap in wraps:
            tests = [a.test for a in f.ancestors(wrap) if isinstance(a, cst.If) and f.is_inside(wrap, a.body)]
            if not any((code, not negated) in here for t in tests for code, negated in map(literal, mt.conjuncts(t))):
                return False
        return True

    def _read_in(self, expr: cst.BaseExpression, scope) -> list[cst.CSTNode]:
        """Where `expr` is read in the function `scope`: `expr` itself, or, read in a
        closure of `scope` (`def time_ids(): return unet.config.dim`), every call of the closure
        there: the closure sees the name as it is at its call."""
        f = self.facts
        inner = f.scope(expr)
        if inner is scope:
            return [expr]
        sites: list[cst.CSTNode] = list(f.call_sites(inner)) if isinstance(inner, cst.FunctionDef) \
            and f.scope(inner) is scope else []
        return sites if sites and all(f.scope(site) is scope for site in sites) else []

    def _is_wrap_test(self, test: cst.BaseExpression) -> bool:
        """The script's wrap test, or a parameter every call passes it (`def run_step(x, model,
        distributed)` called `run_step(x, model, args.distributed)` under `if args.distributed:
        model = DDP(model)`)."""
        f = self.facts
        if f.code(test) in self.wrap_tests:
            return True
        ref = f.ref(test) if isinstance(test, cst.Name) else None
        if ref is None or not isinstance(ref.scope, cst.FunctionDef):
            return False
        passed = f.sources(ref)
        return bool(passed) and all(f.code(p) in self.wrap_tests for p in passed)

    def _left_if_wrapper(self, block: cst.IndentedBlock, child: cst.CSTNode, owner: str) -> bool:
        """Is there, in `block` before the statement `child`, an `if` that asks whether `owner` is
        the wrapper and leaves the function when it is (`if hasattr(model, "module"): return
        model.module.train_step(batch)`)? After it, `owner` is the bare model."""
        for stmt in block.body:
            if stmt is child:
                return False
            if isinstance(stmt, cst.If) and stmt.orelse is None and self._wrapper_test(stmt.test, owner) \
                    and isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body \
                    and isinstance(last := stmt.body.body[-1], cst.SimpleStatementLine) \
                    and isinstance(last.body[-1], (cst.Return, cst.Raise)):
                return True
        return False

    def _implied_by_wrap_tests(self, test: cst.BaseExpression) -> bool:
        """Is `test` implied by every test the script wraps under: a conjunct of it, also through
        the property or the name it reads (`if self.use_pt_ddp: self.model = DDP(self.model)` with
        `use_pt_ddp` returning `self.num_gpus > 1 and not self.use_accelerate`), also spelled with
        a parameter every call passes the same (`if num_gpus > 1:` of `get_loader(...,
        self.num_gpus)`)? Its `else` then runs where no wrap did."""
        tests = self._wrap_test_nodes
        return bool(tests) and all(self._spelled(test) in self._conjuncts(t, 3) for t in tests)

    @cached_property
    def _wrap_test_nodes(self) -> list[cst.BaseExpression]:
        f = self.facts
        tests = []
        for wrap in self.script.calls_of(DDP):
            guard = next((a for a in f.ancestors(wrap) if isinstance(a, cst.If)), None)
            if guard is None or not f.is_inside(wrap, guard.body):
                return []  # a wrap under no test: its else is no evidence
            tests.append(guard.test)
        return tests

    def _conjuncts(self, test: cst.BaseExpression, depth: int) -> set[str]:
        """The codes of what `test` implies: itself, its `and` operands, and theirs through the one
        value a name holds or a property of the program returns."""
        f = self.facts
        found = {f.code(test)}
        if depth <= 0:
            return found
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return found | self._conjuncts(test.left, depth - 1) | self._conjuncts(test.right, depth - 1)
        held: list[cst.BaseExpression] = []
        if isinstance(test, (cst.Name, cst.Attribute)):
            ref = f.ref(test)
            held = list(f.sources(ref)) if ref is not None else []
            if not held and isinstance(test, cst.Attribute) and dotted(test.value) == "self":
                props = [m for m in f.functions.get(test.attr.value, []) if is_property(m)]
                held = [r for m in props for r in f.returned(m)]
        if len(held) == 1:
            found |= self._conjuncts(held[0], depth - 1)
        return found

    def _spelled(self, test: cst.BaseExpression) -> str:
        """The code of `test`, with a parameter it compares that every call passes the same
        expression for spelled as that expression (`num_gpus > 1` -> `self.num_gpus > 1`)."""
        f = self.facts
        if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name):
            ref = f.ref(test.left)
            passed = f.sources(ref) if ref is not None and isinstance(ref.scope, cst.FunctionDef) else []
            codes = {f.code(p) for p in passed}
            if len(codes) == 1 and all(isinstance(p, (cst.Name, cst.Attribute)) for p in passed):
                return f.code(test).replace(test.left.value, codes.pop(), 1)
        return f.code(test)

    def _under_wrap_test(self, stmt: cst.CSTNode, owner: str) -> bool:
        """Is `stmt` in the body of an `if` that asks whether `owner` is wrapped: the script's wrap
        test, `isinstance(owner, DDP)`, `hasattr(owner, "module")`?"""
        f = self.facts
        return any(isinstance(anc, cst.If) and f.is_inside(stmt, anc.body) and (
            f.code(anc.test) in self.wrap_tests or self._wrapper_test(anc.test, owner)) for anc in f.ancestors(stmt))

    def _wrapper_test(self, test: cst.BaseExpression, owner: str, depth: int = 1) -> bool:
        """`isinstance(model, DDP)` (also with a tuple of wrappers), `hasattr(model, "module")`,
        `type(model) in (DataParallel, DistributedDataParallel)`, or a call of a program function
        that returns one of its parameter (`is_parallel(model)`, yolov5's helper)."""
        f = self.facts
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
                test.comparisons[0].operator, (cst.In, cst.Is, cst.Equal)) and isinstance(test.left, cst.Call) \
                and mt.is_call_of(test.left, "type") and len(test.left.args) == 1 \
                and f.code(test.left.args[0].value) == owner:
            kinds = test.comparisons[0].comparator
            names = [e.value for e in kinds.elements] if isinstance(kinds, (cst.Tuple, cst.List, cst.Set)) else [kinds]
            return any(f.qualify(n) == DDP for n in names)
        if isinstance(test, cst.Call) and len(test.args) == 1 and f.code(test.args[0].value) == owner and depth > 0:
            return any(self._returns_wrapper_test(func, depth) for func in f.user_functions(test))
        if not (isinstance(test, cst.Call) and len(test.args) == 2 and f.code(test.args[0].value) == owner):
            return False
        if mt.is_call_of(test, "hasattr"):
            return string_value(test.args[1].value) == "module"
        kinds = test.args[1].value
        names = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
        return mt.is_call_of(test, "isinstance") and any(f.qualify(n) == DDP for n in names)

    def _container_test(self, test: cst.BaseExpression, owner: str) -> bool:
        """`isinstance(model, dict)`, `isinstance(model, GFV)` (the model's own class): where it
        holds, `model` is of a kind no DDP wrapper is (`models.never_a_wrapper`: a builtin
        container, a class of the program no wrapper derives from), so no wrapper there; Amphion's
        `if isinstance(self.model, dict): for key in self.model.keys():`, AdaFocus's `if
        isinstance(model, GFV): model.glancer ... else: model.module.glancer`."""
        f = self.facts
        if not (isinstance(test, cst.Call) and mt.is_call_of(test, "isinstance") and len(test.args) == 2
                and f.code(test.args[0].value) == owner):
            return False
        kinds = test.args[1].value
        names = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
        return all(never_a_wrapper(f, n) for n in names)

    def _returns_wrapper_test(self, func: cst.FunctionDef, depth: int) -> bool:
        """Is `func`'s body one `return` of a wrapper test of its first parameter?"""
        params = func.params.params
        body = func.body.body if isinstance(func.body, cst.IndentedBlock) else []
        stmts = [s for s in body if not (isinstance(s, cst.SimpleStatementLine) and mt.sole(s, cst.Expr))]
        ret = mt.sole(stmts[0], cst.Return) if len(stmts) == 1 and isinstance(stmts[0], cst.SimpleStatementLine) else None
        return bool(params) and ret is not None and ret.value is not None and self._wrapper_test(
            ret.value, params[0].name.value, depth - 1)

    @cached_property
    def set_attributes(self) -> set[tuple[Ref | None, str | None]]:
        """(where the object lives, attribute name) for every `obj.x = ...` and
        `setattr(obj, "x", ...)` of the script where `obj` may hold the wrapper: one made on the
        bare model before the wrap (`model.num_param = n` ... `model = DDP(model)`) stays on the
        model, and the wrapper built around it has no `num_param`."""
        f = self.facts
        found = {(f.ref(t.value), t.attr.value) for t, _, _ in f.assigns
                 if isinstance(t, cst.Attribute) and dotted(t.value) and self._set_on_wrapper(t.value)}
        return found | {(f.ref(c.args[0].value), string_value(c.args[1].value)) for c in f.calls
                        if mt.is_call_of(c, "setattr") and len(c.args) == 3 and dotted(c.args[0].value)
                        and self._set_on_wrapper(c.args[0].value)}

    def _set_on_wrapper(self, obj: cst.BaseExpression) -> bool:
        """May `obj` hold the wrapper where an attribute is set on it? Not a name of the wrapper
        set before every wrap of it, where `holds_ddp` answers None."""
        return self.holds_ddp(obj) is not None

    def module_api(self, name: str) -> bool:
        """Does the DDP wrapper itself answer `.name` (nn.Module's API and DDP's own, and what the
        program's own DDP classes define or keep: `LM.gradient_synchronization()`)?"""
        return name in mt.MODULE_API or name in WRAPPER_API or name.startswith("__") or name in self._own_wrapper_api

    @cached_property
    def _own_wrapper_api(self) -> frozenset[str]:
        """The methods and `self.x` attributes of the program's own DDP classes and their bases."""
        f = self.facts
        lineage = {c for cls in own_wrapper_classes(f) for c in f.lineage(cls)}
        methods = {fn.name.value for fns in f.functions.values() for fn in fns if f.enclosing_class(fn) in lineage}
        kept = {t.attr.value for t, _, stmt in f.assigns if isinstance(t, cst.Attribute) and mt.is_name(t.value, "self")
                and f.enclosing_class(stmt) in lineage}
        return frozenset(methods | kept)


def _prefixes(name: str | None) -> list[str]:
    """The objects a dotted name is read from: `a.b.c` -> `a.b`, `a`."""
    parts = (name or "").split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def _key(expr: cst.BaseExpression) -> str | None:
    """The string key `expr` reads or stores: `d["k"]`, `d.get("k", default)`."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        return string_value(expr.slice[0].slice.value)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" \
            and (first := mt.positional(expr, 0)) is not None:
        return string_value(first.value)
    return None


def _negation(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """`not x`: (x, True); any other test: (test, False)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression, True
    return test, False


# nn.Module's public API beyond `matchers.MODULE_API`, and DistributedDataParallel's own attributes
# (with the private methods scripts call on the wrapper, as torch's errors advise: `_set_static_graph()`)
# nn.DataParallel, as torch spells it
DATA_PARALLEL = ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                 "torch.nn.parallel.data_parallel.DataParallel")
WRAPPER_API = frozenset("""
    state_dict load_state_dict register_state_dict_pre_hook register_state_dict_post_hook
    register_load_state_dict_pre_hook register_load_state_dict_post_hook get_extra_state
    set_extra_state set_submodule call_super_init dump_patches T_destination
    broadcast_buffers gather scatter join_device join_process_group register_comm_hook to_kwargs
    will_sync_module_buffers output_device process_group dim device device_type
    find_unused_parameters gradient_as_bucket_view static_graph reducer logger bucket_bytes_cap
    require_backward_grad_sync require_forward_param_sync parameters_to_ignore mixed_precision
    _set_static_graph _get_ddp_logging_data _set_ddp_runtime_logging_sample_rate _register_builtin_comm_hook
    _register_fused_optim _set_params_and_buffers_to_ignore_for_model _update_process_group
    _set_sparse_metadata _remove_autograd_hooks _check_reducer_finalized _delay_all_reduce_params
""".split())
