"""Objects, not names: where each value of the program may have been made.

An object is abstracted by the call that constructs it, its *site*: `Net()`, `DataLoader(...)`,
`torch.optim.Adam(...)`, `SummaryWriter(...)`, `torch.load(...)`, and a registry's call that builds an
instance of a class it looks up by name in the module it is handed (pytorch-template's
`config.init_obj('arch', module_arch)`: `Facts.looked_up_in`; of the kind every class of that module is). A container literal
(`[model, opt]`, `{"params": ...}`) or a comprehension is a site of its own, holding its elements
and, bound to a name, what `.append(x)` adds to it. `values(expr)`
gives the sites `expr` may hold, following

- names and `self.x` through every assignment (tuple unpacking and stores by item included);
- `obj.x` on an instance of a class of the program: the class's `self.x`
  (`data.trainloader`, with `data = DataModule(...)` in another module), or what its property
  `x` returns (`@property def train_loader(self): return self._train`); on any object, what
  `obj.x = value` stores through a name that may hold it (`config.tb_logger = SummaryWriter()`);
- calls of the program's functions to what they return, arguments to parameters (and to
  `kwargs["model"]` of a `**kwargs` parameter: the callers' `model=`) (bound
  methods, `__call__` of instances and base classes' methods as `Facts.user_functions` resolves
  them), `with cm as x` to `cm`;
- calls that hand back the object they are given: `model.to(device)`, `.cuda()`, `.train()`,
  `torch.compile(model)`, and iterator adapters (`iter(loader)`, `tqdm(loader)`, rich's `track(loader)`,
  `enumerate`, `filter`, `itertools.chain`, `list`): a loop over `tqdm(loader)` is fed by `loader`; so
  is a generator of the program that hands out the items of what it is given (`self.progress(loader)`
  with `def progress(self, dataloader): ... yield from bar.track(dataloader)`), at each of its calls.

Each node's and each name's value is computed once and memoised, so the cost is linear in the
program. Inside a cycle of assignments (`a = f(b)` ... `b = g(a)`) the value first asked for
sees what the cycle adds on its first pass only.

The questions answered from it: what kind an object is (`kind`), which objects' parameters an
optimizer steps, through derived iterables (`parameter_calls`, `trained`), which parameters
a value reaches through calls at any depth (`receivers`), and whether a name read holds a
given object (`holds`).
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property

import libcst as cst

from ddpify.analysis.module_classes import is_module_class
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref, is_property, unpacking_paths, written_element
from ddpify.syntax.names import dotted

MODEL, LOADER, OPTIMIZER, WRITER = "model", "loader", "optimizer", "writer"

# calls whose value is made of (or iterates) the objects they are given (`torch.compile(model)`: the
# model, its attributes read through)
ADAPTERS = frozenset({"iter", "enumerate", "filter", "list", "tuple", "sorted", "reversed", "zip", "torch.compile",
                      "dict", "collections.OrderedDict", "easydict.EasyDict",  # a dict copied (`EasyDict({"train": loader})`)
                      "itertools.chain", "itertools.cycle", "itertools.chain.from_iterable",
                      "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.rich.tqdm",
                      # the model handed in, its batch norm layers swapped in place (SAFA's `generator_full =
                      # SyncBatchNorm.convert_sync_batchnorm(generator_full)` before its wrap: still the
                      # program's `GeneratorFullModel`, whose attributes DDP008 asks about; decision 0238)
                      "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
                      "torch.nn.modules.batchnorm.SyncBatchNorm.convert_sync_batchnorm",
                      "ddpify_runtime.convert_sync_batchnorm"})
WRITERS = ("torch.utils.tensorboard.SummaryWriter", "tensorboardX.SummaryWriter", "tensorflow.summary.create_file_writer",
           "tensorflow.summary.FileWriter", "tensorflow.compat.v1.summary.FileWriter", "tensorboard_logger.Logger",
           "visdom.Visdom")  # a visdom client draws on a server every process would send to
CONTAINERS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# dicts built from keywords (`Munch(generator=g, discriminator=d)`, `dict(train=loader)`, an empty `Munch()` filled
# by key): a container whose items are the keywords' values; those of ATTRIBUTE_DICTS read them as attributes too
# (`nets.generator`). StarGAN v2 templates keep their networks and loaders so (decision 0261).
ATTRIBUTE_DICTS = frozenset({"munch.Munch", "munch.DefaultMunch", "easydict.EasyDict", "addict.Dict", "box.Box"})
KEYWORD_DICTS = ATTRIBUTE_DICTS | {"dict"}

Sites = frozenset


# calls that start a function handed to them by name in new processes, with `args=(...)` for its last parameters
SPAWNING = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
                      "multiprocessing.Process", "torch.multiprocessing.Process"})


class Objects:
    """The object flow of one module (of a program's merged module)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._values: dict[object, Sites] = {}
        self._open: dict[object, int] = {}  # the keys being computed, by their depth (`_memo`)
        self._low = 0  # the lowest depth of an open key a cycle reached in the computation under way
        self._partial: list[object] = []  # keys kept whose values read an open key (`_memo`)
        self._params: dict[object, tuple[cst.Call, ...]] = {}
        # `x.parameters()` calls an optimizer reaches through an attribute the program stores on an
        # object elsewhere (`model.optim_list`): their names are read where they are written
        self.stored_parameters: set[cst.Call] = set()
        self._names: dict[object, frozenset[Ref]] = {}
        self._loggers: dict[cst.ClassDef, bool] = {}
        self._passing: dict[cst.FunctionDef, str | None] = {}
        self._naming: set[Ref] = set()  # the names `strings` is answering

    # the flow -----------------------------------------------------------------------------------
    def values(self, expr: cst.BaseExpression) -> Sites:
        """The sites of the objects `expr` may hold (empty: made where ddpify does not see)."""
        return self._memo(expr, self._compute)

    def ref_values(self, ref: Ref) -> Sites:
        """The sites of the objects a name (`model` in `main()`, `self.G` of a class) may hold."""
        return self._memo(ref, self._compute_ref)

    def _memo(self, key, compute) -> Sites:
        """`compute(key)`, kept. A cycle back to a key still being computed adds nothing on this
        pass; what was computed inside the cycle from that key's incomplete value is kept while the
        cycle is computed (each once), and dropped when the key that opened the cycle is complete:
        asked again, it is computed from that key's kept value. Before,
        `metrics[name] = metrics[name].cuda()` made `metrics[name]` hold nothing for good where
        `metrics` was asked first (a torchmetrics dict's `compute()` was no collective, decision 0230)."""
        found = self._values.get(key)
        if found is not None:
            return found
        depth = self._open.get(key)
        if depth is not None:  # a cycle back to `key`
            self._low = min(self._low, depth)
            return Sites()
        depth = self._open[key] = len(self._open)
        outer, self._low, mark = self._low, depth, len(self._partial)
        try:
            found = compute(key)
        finally:
            del self._open[key]
        self._values[key] = found
        if self._low < depth:  # it read a key opened before it, still incomplete
            self._partial.append(key)
        else:  # every cycle through it is closed: what read it incomplete is computed again when asked
            for k in self._partial[mark:]:
                del self._values[k]
            del self._partial[mark:]
        self._low = min(outer, self._low)
        return found

    def _compute(self, expr: cst.BaseExpression) -> Sites:
        f = self.facts
        passed = f.keyword_arguments(expr)  # `kwargs["model"]`: what the callers pass as `model=`
        if passed is not None:
            return Sites().union(*(self.values(a) for a in passed))
        if isinstance(expr, cst.Attribute) and dotted(expr.value) != "self":
            held = self._attribute(expr)
            if held:
                return held
        if isinstance(expr, cst.Name) and (drawn := self._comprehension_item(expr)) is not None:
            return drawn
        if mt.is_name(expr, "self") and isinstance(f.parent(expr), cst.Arg):
            return self._handed_self(expr)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            ref = f.ref(expr) if dotted(expr) else None
            if ref is not None and isinstance(expr, cst.Name) and expr.value in f.classes and not f.sources(ref):
                return Sites({f.classes[expr.value]})  # the class itself, handed on as an object (a config class)
            return self.ref_values(ref) if ref is not None else Sites()
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.IfExp):
            return self.values(expr.body) | self.values(expr.orelse)
        if isinstance(expr, cst.BooleanOperation):
            return self.values(expr.left) | self.values(expr.right)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self._joined(expr)
        if isinstance(expr, cst.Subscript):  # an item: what the container holds
            keyed = self._keyed_item(expr)
            if keyed is not None:
                return keyed
            return Sites().union(*(self.elements(s) for s in self.values(expr.value)), self.values(expr.value))
        if isinstance(expr, CONTAINERS):
            return Sites({expr})
        return Sites()

    def _module_attribute(self, ref: Ref) -> Sites:
        """What a module of the program binds at its top level as `name`, read as an attribute of
        the module (`cfg.dataset_loader`, `cfg.trainer_type` of `cfg = import_module(...)` or `import
        cfg1 as cfg`): the program's modules share one top level, the merged module's (a class of
        the program it names, itself)."""
        f = self.facts
        if ref.name in f.classes and not f.sources(ref):
            return Sites({f.classes[ref.name]})
        return self.ref_values(ref)

    def _handed_self(self, name: cst.Name) -> Sites:
        """`self` handed on by a method (`cb.on_epoch_end(self, loss)` in a trainer's loop over its
        callbacks): the instances the program builds of its class and of the classes of its kin
        (`Trainer(model, loader, [Checkpoint(), Printer()])`), so that the callback's
        `trainer.model` is the trainer's `self.model`."""
        f = self.facts
        cls = f.enclosing_class(name)
        if cls is None or not isinstance(f.scope(name), cst.FunctionDef):
            return Sites()
        return Sites(c for c in f.calls if (built := self.constructs(c)) is not None and f.kin_classes(built, cls))

    def _comprehension_item(self, name: cst.Name) -> Sites | None:
        """`m` in `[m.to(device) for m in config.MODELS]`: the items of what the comprehension
        iterates; `v` in `{k: v.compute() for k, v in d.items()}` (or `for v in d.values()`): the
        values of the dict `d` (None where `name` is no target of an enclosing comprehension's `for`)."""
        if name.value not in self._comprehension_targets:
            return None  # (no comprehension binds the name: its ancestors are not walked)
        for anc in self.facts.ancestors(name):
            if isinstance(anc, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                clause: cst.CompFor | None = anc.for_in
                while clause is not None:
                    held = _dict_values_bound(clause.target, clause.iter)
                    if held is not None and mt.is_name(held[0], name.value):
                        return Sites().union(*(self.elements(s) if self.is_container(s) else {s}
                                               for s in self.values(held[1])))
                    if mt.is_name(clause.target, name.value):
                        return Sites().union(*(self.elements(s) for s in self.values(clause.iter)))
                    clause = clause.inner_for_in
            elif isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return None
        return None

    @cached_property
    def _comprehension_targets(self) -> frozenset[str]:
        """The names a comprehension's `for` binds whole (`m` of `for m in ...`)."""
        clauses = self.facts.by_type.get(cst.CompFor, ())
        return frozenset(c.target.value for c in clauses if isinstance(c.target, cst.Name)) | frozenset(
            held[0].value for c in clauses if (held := _dict_values_bound(c.target, c.iter)) is not None
            and isinstance(held[0], cst.Name))

    def _joined(self, expr: cst.BinaryOperation) -> Sites:
        """`self.models + [self.discriminator]`: the containers joined, when one side is a container
        (a number, a string or a tensor added is no object the program tracks)."""
        sides = self.values(expr.left) | self.values(expr.right)
        return sides if any(self.is_container(s) for s in sides) else Sites()

    def _call(self, call: cst.Call) -> Sites:
        f = self.facts
        func = call.func
        if isinstance(func, cst.Attribute) and f.self_returning(call):  # (a program's `trainer.train(net)`: its returns)
            return self.values(func.value)
        qualified = f.qualify(func) or dotted(func)
        if self.keyword_dict(call):  # `Munch(generator=g, discriminator=d)`: a container of its own
            return Sites({call})
        if qualified in ADAPTERS or (dotted(func) or "").rpartition(".")[2] in mt.ITERATION_WRAPPERS:
            return Sites().union(*(self.values(a) for a in mt.iterated(call)))  # (`tqdm(iterable=loader)`)
        if qualified == "getattr" and len(call.args) >= 2:
            if f.classes_looked_up(call):  # `getattr(models, name)`: a class of that module, a site of its own
                return Sites({call})
            return self._getattr(call.args[0].value, call.args[1].value)
        passed = self.passed_through(call)
        if passed is not None:
            return self.values(passed)
        if f.looked_up_in(call) is not None:  # `config.init_obj('arch', module_arch)`: an object made there
            return Sites({call})
        callees = f.user_functions(call) or self.methods(call)
        if callees and not self.classes_built(call):
            generated = self._generated(callees)
            if generated is not None:
                return generated
            return Sites().union(*(self._returned(call, c, r) for c in callees for r in f.returned(c)))
        if not callees and not self.classes_built(call) and (lambdas := self.called_lambdas(func)):
            return Sites().union(*(self.values(lam.body) for lam in lambdas))
        return Sites({call})

    def generated_pass(self, call: cst.Call) -> bool:
        """Is `call` one of generators of the program that hand out the items of one pass over
        something of their own (`self.data.batches()`, `_generated`)? A loop over it passes over that
        loader where the generator's own loop does."""
        f = self.facts
        callees = f.user_functions(call) or self.methods(call)
        return bool(callees) and not self.classes_built(call) and self._generated(callees) is not None

    def _generated(self, callees: list[cst.FunctionDef]) -> Sites | None:
        """What the generators of the program `callees` hand out the items of in one pass over
        something of their own (`def batches(self): for img, _ in self.dataloader: yield img`: what
        `self.dataloader` holds), where each of them is such a generator; else None (a function that
        returns, a generator that makes its items or passes again and again)."""
        f = self.facts
        drawn: list[cst.BaseExpression] = []
        for func in callees:
            yields = f.findall(func, cst.Yield, lambda y: f.scope(y) is func)
            passes = [_one_pass(f, func, y) for y in yields]
            if not yields or None in passes:
                return None
            drawn += [_adapted(d) for d in passes if d is not None]
        return Sites().union(*(self.values(d) for d in drawn))

    def _returned(self, call: cst.Call, callee: cst.FunctionDef, value: cst.BaseExpression) -> Sites:
        """What `call` gets back from `callee`'s `return value`: a method's `return self` (a fluent
        `fit` of an estimator class: `reg = Regressor(d).fit(X, y)`) hands back the object it is
        called on, whatever made it; any other value is followed as it is."""
        if mt.is_name(value, "self") and isinstance(call.func, cst.Attribute) and \
                self.facts.enclosing_class(callee) is not None:
            return self.values(call.func.value)
        return self.values(value)

    def _keyed_item(self, expr: cst.Subscript) -> Sites | None:
        """`self.elements["optimizer"]` where the program stores items into that container by
        literal keys (`self.elements["model_forward"] = model`): what is stored under that key,
        and the container's other sources' items, not what other keys hold. None where the key is
        not a literal or nothing is stored into the container by key."""
        f = self.facts
        key = _literal_key(expr)
        ref = f.ref(expr.value) if key is not None and dotted(expr.value) else None
        stored = self._stored_by_key.get(ref) if ref is not None else None
        if not stored:
            return self._displayed_item(expr, key) if key is not None else None
        others = {id(v) for k, values in stored.items() if k != key for v in values}
        rest = [v for v in f.sources(ref) if id(v) not in others and not any(v is w for w in stored.get(key, ()))]
        containers = Sites().union(*(self.values(v) for v in rest))
        entries = [e.value for c in containers if isinstance(c, cst.Dict) for e in c.elements
                   if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == key]
        unknown = [c for c in containers if not isinstance(c, cst.Dict)]
        return Sites().union(*(self.values(v) for v in stored.get(key, ())), *(self.values(e) for e in entries),
                             *(self.elements(c) for c in unknown), Sites(unknown))

    def _displayed_item(self, expr: cst.Subscript, key: str) -> Sites | None:
        """`self.models["gen"]` where every container the subscripted value may hold is a dict
        display written out with literal keys (`models = {"gen": gen, "dis": dis}`, handed to a
        trainer that keeps it): what the display holds under that key. None otherwise (a key no
        display has, a `**` splat, a container of another kind)."""
        containers = self.values(expr.value)
        if containers and all(self.keyword_dict(c) for c in containers):  # `dict(train=loader)["train"]`
            return Sites().union(*(self._keyword_item(c, key) for c in containers if isinstance(c, cst.Call)))
        if not containers or not all(isinstance(c, cst.Dict) and all(
                isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) for e in c.elements)
                for c in containers):
            return None
        entries = [e.value for c in containers for e in c.elements if e.key.evaluated_value == key]
        return Sites().union(*(self.values(v) for v in entries)) if entries else None

    def _item_under(self, container: cst.BaseExpression, key: str) -> Sites:
        """What the dicts `container` may hold keep under `key`: the entries of a display written out
        with literal keys (`{"trainloader": DataLoader(...), ...}`), and every element of any other."""
        found = Sites()
        for site in self.values(container):
            keyed = isinstance(site, cst.Dict) and all(
                isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) for e in site.elements)
            found |= Sites().union(*(self.values(e.value) for e in site.elements if e.key.evaluated_value == key)) \
                if keyed else self.elements(site)
        return found

    def stored_by_key(self, ref: Ref) -> dict[str, list[cst.BaseExpression]]:
        """What the program stores into the container `ref` under each literal key (`d["k"] = v`)."""
        return self._stored_by_key.get(ref, {})

    @cached_property
    def _stored_by_key(self) -> dict[Ref, dict[str, list[cst.BaseExpression]]]:
        """`d["k"] = v`: for each container, the values stored under each literal key."""
        f = self.facts
        index: dict[Ref, dict[str, list[cst.BaseExpression]]] = defaultdict(dict)
        for target, value, stmt in f.assigns:
            key = _literal_key(target) if isinstance(target, cst.Subscript) and dotted(target.value) else None
            if key is not None and not isinstance(stmt, cst.AugAssign):
                ref = f.ref(target.value, stmt)
                if ref is not None:
                    index[ref].setdefault(key, []).append(value)
        return index

    def passed_through(self, call: cst.Call) -> cst.BaseExpression | None:
        """The argument of `call` whose items the generator of the program it calls hands out:
        `self.progress(zip(src, tgt), epoch=epoch)` with `def progress(self, dataloader, epoch): ...
        yield from bar.track(dataloader)` (or `for batch in tqdm(dataloader): yield batch`) gives
        `zip(src, tgt)`, this call's own argument: a loop over the call draws from it, as a loop over
        `tqdm(loader)` draws from `loader`. None where a callee is no such generator, or the
        callees disagree."""
        f = self.facts
        callees = f.user_functions(call) or self.methods(call)
        params = [self._passing_parameter(func) for func in callees]
        if not callees or None in params:
            return None
        found = {id(a): a for func, name in zip(callees, params) for a in [f.argument_for(call, func, name)]}
        return next(iter(found.values())) if len(found) == 1 else None

    def _passing_parameter(self, func: cst.FunctionDef) -> str | None:
        """The parameter whose items the generator `func` hands out in one pass, through iterator
        adapters (`yield from track(dataloader)`, `for b in tqdm(dataloader): yield b`), where every
        yield of `func` does so; else None (a generator that makes its own items, draws from several,
        or passes over them again and again: `while True: for b in dataloader: yield b`)."""
        if func not in self._passing:
            f = self.facts
            yields = f.findall(func, cst.Yield, lambda y: f.scope(y) is func)
            drawn = [_one_pass(f, func, y) for y in yields]
            names = {_adapted(d).value if isinstance(_adapted(d), cst.Name) else None for d in drawn if d is not None}
            params = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
            self._passing[func] = names.pop() if yields and None not in drawn and len(names) == 1 and \
                names <= params else None
        return self._passing[func]

    def methods(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The methods `obj.f(...)` may run where `obj` holds an instance of a class of the program
        that the name-based resolution does not see (`self.data.train_dataloader()`)."""
        f = self.facts
        if not isinstance(call.func, cst.Attribute):
            return []
        classes = dict.fromkeys(c for s in self.values(call.func.value) for c in self.classes_built(s))
        return [m for c in classes for m in f.method(c, call.func.attr.value) if not is_property(m)]

    def classes_built(self, site: cst.CSTNode) -> list[cst.ClassDef]:
        """The classes of the program a call may build an instance of: `constructs`, those a
        name it calls holds (`checkpointer_class = Distributed if sharded else Single`, then
        `checkpointer_class(path)`), those a registry it calls an item of names
        (`FACTORY = {"mnist": MNIST, "cifar": CIFAR}`, then `FACTORY[name](batch_size)`), or every class
        of the module a configuration's registry builds from by name (`Facts.looked_up_in`), or that a
        lookup by name in modules of the program may give (`Facts.classes_looked_up`)."""
        cls = self.constructs(site)
        if cls is not None or not isinstance(site, cst.Call):
            return [] if cls is None else [cls]
        f = self.facts
        func = site.func
        module = f.looked_up_in(site)
        if module is not None:  # `config.init_obj('arch', module_arch)`: any class of that module
            return f.classes_of_module(module)
        if isinstance(func, cst.Call):  # `get_class("pkg.algos", name)(cfg)`: any class of the modules it looks in
            return f.classes_looked_up(func)
        if isinstance(func, cst.Subscript) and dotted(func.value):
            ref = f.ref(func.value)
            registries = [v for v in (f.sources(ref) if ref is not None else ()) if isinstance(v, (cst.Dict, cst.List, cst.Tuple))]
            named = [e.value for r in registries for e in r.elements if isinstance(e, (cst.DictElement, cst.Element))]
        elif isinstance(func, cst.Name) and func.value not in f.functions:
            ref = f.ref(func)
            named = list(f.sources(ref)) if ref is not None else []
            # `model_cls, params_cls = TASKS[name]`, `model_cls = MODELS[name]`: each class the registry holds there
            # (not what a `getattr(module, name)` may give: a factory's lookup builds objects of every kind)
            held = [site for site in self.values(func) if isinstance(site, cst.ClassDef)]
            return list(dict.fromkeys([*(c for v in named for c in self._named_classes(v)), *held]))
        elif isinstance(func, cst.Attribute) and not f.is_program_module(func.value):
            return self._classes_held(func)
        else:
            return []
        return list(dict.fromkeys(c for v in named for c in self._named_classes(v)))

    def _classes_held(self, func: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of the program the objects `func` may hold are (a call of it builds an
        instance of one): a class handed on as an object (`self.net_class = Net`), a lookup by name
        in a module of the program (`getattr(models, name)`, `Facts.classes_looked_up`), what an
        option's `type=` function returns (`args.model` of `add_argument("--model",
        type=model_class)`, `def model_class(name): return getattr(models, name)`)."""
        found = [c for site in self.values(func) for c in (
            [site] if isinstance(site, cst.ClassDef) else
            self.facts.classes_looked_up(site) if isinstance(site, cst.Call) and mt.is_name(site.func, "getattr") else [])]
        if not found and isinstance(func, cst.Attribute):  # `self.data_handler = self._build_data_handler()`, whose
            found = self.facts.held_classes(func)  # classmethod returns a registry's class (`Facts._held_classes`)
        return list(dict.fromkeys(found))

    def _named_classes(self, expr: cst.BaseExpression) -> list[cst.ClassDef]:
        """The classes of the program an expression names: `Single`, `A if x else B`, `A or B`."""
        if isinstance(expr, cst.IfExp):
            return self._named_classes(expr.body) + self._named_classes(expr.orelse)
        if isinstance(expr, cst.BooleanOperation):
            return self._named_classes(expr.left) + self._named_classes(expr.right)
        cls = self.facts.classes.get(expr.value) if isinstance(expr, cst.Name) else None
        return [cls] if cls is not None else []

    def _attribute(self, expr: cst.Attribute) -> Sites:
        """`obj.x` where `obj` is an instance of a class of the program: that class's `self.x`; on a
        module of the program, what it binds at its top level (`_module_attribute`); and
        on any object, what the program stores into its `x` through a name that may hold it
        (`config.tb_logger = SummaryWriter(...)`, read as `self.config.tb_logger` in another
        module, `config` an `argparse.Namespace` handed to a runner)."""
        f = self.facts
        if (read := f.module_attribute(expr)) is not None:  # `cfg.dataset_loader` of `import cfg1 as cfg`
            return self._module_attribute(read)
        found = Sites()
        held = self.values(expr.value)
        for site in held:
            if isinstance(site, cst.Call) and mt.is_parse_args(site):
                found |= self._converted_option(site, expr.attr.value)
            for cls in self.classes_built(site):
                found |= self.ref_values(Ref(f._root_class(cls), f"self.{expr.attr.value}"))
            found |= self._namedtuple_field(site, expr.attr.value)
            if self.keyword_dict(site) and (f.qualify(site.func) or "") in ATTRIBUTE_DICTS:  # `nets.generator`
                found |= self._keyword_item(site, expr.attr.value)
            if isinstance(site, cst.ClassDef):  # `config.MODELS` of `class CONFIG: MODELS = [Net()]`
                found |= Sites().union(*(self.values(value) for target, value, stmt in f.assigns
                                         if mt.is_name(target, expr.attr.value) and f.enclosing_class(stmt) is site
                                         and not isinstance(f.scope(stmt), cst.FunctionDef)))
        for target, value in self._attribute_stores.get(expr.attr.value, ()) if held else ():
            if target is not expr and self.values(target.value) & held:
                found |= self.values(value)
        for target, value, i in self._unpacked_attribute_stores.get(expr.attr.value, ()) if held else ():
            if target is not expr and self.values(target.value) & held:  # `args.train_loader, args.val_loader = make(args)`
                found |= Sites().union(*(self._element_at(s, i) for s in self.values(value)))
        return found

    def _keyword_item(self, site: cst.Call, key: str) -> Sites:
        """What a dict built from keywords holds under `key`: that keyword's value, or, where no keyword
        names it, what the program stores into it by item (`optims[net] = Adam(...)` of `optims = Munch()`)."""
        named = [a.value for a in site.args if a.keyword is not None and a.keyword.value == key]
        if named:
            return Sites().union(*(self.values(v) for v in named))
        return Sites().union(*(self.values(v) for v in self._stored_into(site)))

    def _converted_option(self, parsed: cst.Call, dest: str) -> Sites:
        """`args.model` of `args = parser.parse_args()` where that parser's option `--model` has a
        `type=` function of the program (`add_argument("--model", type=model_class)`, or a lambda): what
        the function returns (argparse calls it on the option's string, and on a string default)."""
        f = self.facts
        parser = f.ref(parsed.func.value) if isinstance(parsed.func, cst.Attribute) and dotted(parsed.func.value) else None
        if parser is None:
            return Sites()
        found = Sites()
        for call in f.calls_named("add_argument"):
            kind = mt.keyword(call, "type")
            if not (kind is not None and isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"
                    and dotted(call.func.value) and _option_dest(call) == dest and f.ref(call.func.value) == parser):
                continue
            if isinstance(kind.value, cst.Lambda):  # `type=lambda name: getattr(models, name)`
                found |= self.values(kind.value.body)
            elif isinstance(kind.value, cst.Name):
                converters = [c for c in f.functions.get(kind.value.value, ()) if f.enclosing_class(c) is None]
                found |= Sites().union(*(self.values(r) for c in converters for r in f.returned(c)))
        return found

    def option_type(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name of the `type=` an option `expr` reads is converted by (`pathlib.Path`
        for `args.data` of `args = parser.parse_args()` with `parser.add_argument("--data",
        type=Path)`), where every parser it may come from converts it so; else None. Where the
        object is not followed to a parse (`args` handed to a worker through `mp.spawn`'s tuple),
        every option of the program's parsers with that destination must be so converted."""
        f = self.facts
        if not isinstance(expr, cst.Attribute):
            return None
        held = self.values(expr.value)
        parsed = [s for s in held if isinstance(s, cst.Call) and mt.is_parse_args(s)]
        if held and not parsed:
            return None
        options = [c for c in f.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == "add_argument"
                   and dotted(c.func.value) and _option_dest(c) == expr.attr.value]
        parsers = {f.ref(s.func.value) for s in parsed if isinstance(s.func, cst.Attribute) and dotted(s.func.value)}
        if parsed:
            options = [c for c in options if f.ref(c.func.value) in parsers]
        kinds = {f.qualify(kind.value) if (kind := mt.keyword(c, "type")) is not None else None for c in options}
        return kinds.pop() if len(kinds) == 1 else None

    def _namedtuple_field(self, site: cst.CSTNode, attr: str) -> Sites:
        """`loaders.train` of `loaders = Loaders(DataLoader(...), DataLoader(...))` where `Loaders =
        namedtuple("Loaders", ["train", "val"])` (or `"train val"`, or `typing.NamedTuple("Loaders",
        [("train", DataLoader), ...])`): what the construction passes for that field, by keyword or by
        its place. (The class forms, `class Loaders(NamedTuple)` and dataclasses, are the class's
        `self.x`: `Facts.generated_init_arguments`.)"""
        if not isinstance(site, cst.Call) or not isinstance(site.func, (cst.Name, cst.Attribute)):
            return Sites()
        layouts = {tuple(_namedtuple_fields(self.facts, s)) for s in self.values(site.func)}
        fields = layouts.pop() if len(layouts) == 1 else ()
        if attr not in fields:
            return Sites()
        given = next((a.value for a in site.args if a.keyword is not None and a.keyword.value == attr), None)
        positional = [a.value for a in site.args if a.keyword is None and not a.star]
        place = fields.index(attr)
        given = given if given is not None or place >= len(positional) or any(a.star for a in site.args) \
            else positional[place]
        return self.values(given) if given is not None else Sites()

    @cached_property
    def _list_puts(self) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
        """`models.append(model)`, `models.insert(0, model)`: (the list, the item put in), so that an item
        read by index (`self.models[i].state_dict()`, the list filled in a loop: deep mutual learning's
        peers) holds what any put gives it, besides the list display's own elements."""
        puts = []
        for call in self.facts.by_type.get(cst.Call, ()):
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and dotted(call.func.value) \
                    and call.func.attr.value in ("append", "insert") and call.args and not call.args[-1].keyword \
                    and len(call.args) == (1 if call.func.attr.value == "append" else 2):
                puts.append((call.func.value, call.args[-1].value))
        return puts

    @cached_property
    def _attribute_stores(self) -> dict[str, list[tuple[cst.Attribute, cst.BaseExpression]]]:
        """`obj.x = value` outside a class's own `self.x`: by attribute name."""
        stores: dict[str, list[tuple[cst.Attribute, cst.BaseExpression]]] = defaultdict(list)
        for target, value, _ in self.facts.assigns:
            if isinstance(target, cst.Attribute) and dotted(target.value) != "self":
                stores[target.attr.value].append((target, value))
        return stores

    @cached_property
    def _unpacked_attribute_stores(self) -> dict[str, list[tuple[cst.Attribute, cst.BaseExpression, int]]]:
        """`obj.a, obj.b = value` outside a class's own `self.x`: by attribute name, with the value
        unpacked and the element's place (`args.train_loader, args.val_loader = loaders(args)`)."""
        stores: dict[str, list[tuple[cst.Attribute, cst.BaseExpression, int]]] = defaultdict(list)
        for target, value, stmt in self.facts.assigns:
            if isinstance(target, (cst.Tuple, cst.List)) and not isinstance(stmt, cst.AugAssign) \
                    and not any(isinstance(e, cst.StarredElement) for e in target.elements):
                for i, element in enumerate(target.elements):
                    if isinstance(element.value, cst.Attribute) and dotted(element.value.value) != "self":
                        stores[element.value.attr.value].append((element.value, value, i))
        return stores

    def stored_into(self, expr: cst.Attribute | cst.Subscript) -> list[cst.BaseExpression]:
        """What the program stores into `obj.x` of the objects `obj` may hold, through any name
        (`args.model = net`, read as `args.model` in the function `args` is handed to), or under a
        literal key of the dicts it may hold (`state = {"model": net, ...}`, read as `state["model"]`)."""
        held = self.values(expr.value)
        if isinstance(expr, cst.Subscript):
            key = _literal_key(expr)
            lists = [c for c in held if isinstance(c, cst.List)]
            return [e.value for c in held if isinstance(c, cst.Dict) and key is not None for e in c.elements
                    if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == key] \
                + ([e.value for c in lists for e in c.elements if isinstance(e, cst.Element)]
                   + [value for target, value in self._list_puts if self.values(target) & set(lists)] if lists else [])
        return [value for target, value in self._attribute_stores.get(expr.attr.value, ())
                if target is not expr and held and self.values(target.value) & held]

    def instance_stores(self, ref: Ref) -> list[cst.BaseExpression]:
        """What the program stores into `self.x` of a class's instances from outside the class:
        `learner.is_master = (replica_id == 0)` where `learner` holds a `Learner(...)`, besides
        `Learner`'s own `self.is_master = True`. `ref` is the class's `self.x`."""
        cls, (head, _, attr) = ref.scope, ref.name.partition(".")
        if head != "self" or not attr or "." in attr or not isinstance(cls, cst.ClassDef):
            return []
        f = self.facts
        return [value for target, value in self._attribute_stores.get(attr, ())
                if any(f._root_class(c) is cls for site in self.values(target.value) for c in self.classes_built(site))]

    def _getattr(self, obj: cst.BaseExpression, name: cst.BaseExpression) -> Sites:
        """`getattr(self, "net")`: the attribute named; when the name is computed, any attribute of
        the object's class that starts with its literal start (`getattr(self, f"optim{i}")`,
        `getattr(self, "net" + name)`: `self.optim0`, not `self.decoder`)."""
        named = self.strings(name)
        if named is not None:  # `getattr(self, optimizer)` for each name of `for optimizer in ["optim_G", "optim_D"]:`
            return Sites().union(*(self._self_attributes(obj, n) for n in named))
        return self._self_attributes(obj, _literal_start(name), prefix=True)

    def strings(self, expr: cst.BaseExpression) -> list[str] | None:
        """The strings `expr` may be where each is written out: a literal, a name every assignment of
        which is one, a loop variable over containers of them (`for optimizer, losses in
        zip(group.optimizers, group.losses):`, `group` built as `NetworkGroup(optimizers=["optimizer_G"],
        ...)` elsewhere); None where any may be something else."""
        if isinstance(expr, cst.SimpleString):
            return [expr.evaluated_value] if isinstance(expr.evaluated_value, str) else None
        f = self.facts
        ref = f.ref(expr) if isinstance(expr, cst.Name) else None
        if ref is None or ref in self._naming:
            return None
        self._naming.add(ref)
        try:
            items = [e for loop in self._loop_targets(ref) for e in self._written_items(loop.iter)] + \
                [e for iterated in self._paired_loops(ref) for e in self._written_items(iterated)]
            if (self._loop_targets(ref) or self._paired_loops(ref)) and None in items or \
                    len(f.loops_binding(ref)) != len(self._loop_targets(ref)) + len(self._paired_loops(ref)):
                return None
            values = [*(v for _, v, _ in f.writes(ref)), *items]
            found = [self.strings(v) if v is not None else None for v in values]
        finally:
            self._naming.discard(ref)
        return None if not found or None in found else list(dict.fromkeys(n for ns in found if ns for n in ns))

    def _written_items(self, iterated: cst.BaseExpression) -> list[cst.BaseExpression | None]:
        """The items of the containers `iterated` may hold, each as written (a list display's
        elements, what `.append(x)` adds to it); [None] where one is of no container written out."""
        sites = self.values(iterated) if not isinstance(iterated, (cst.List, cst.Tuple, cst.Set)) else Sites({iterated})
        if not sites or not all(isinstance(s, (cst.List, cst.Tuple, cst.Set)) for s in sites):
            return [None]
        found: list[cst.BaseExpression | None] = []
        for site in sites:
            holders = self._bound.get(site, []) if isinstance(site, (cst.List, cst.Set)) else []
            found += [e.value if isinstance(e, cst.Element) else None for e in site.elements]
            found += [x for ref in holders for x in self._appended(ref)]
        return found

    def _self_attributes(self, obj: cst.BaseExpression, name: str | None, prefix: bool = False) -> Sites:
        f = self.facts
        classes = [f._root_class(c) for c in [f.enclosing_class(obj)] if c is not None] if dotted(obj) == "self" \
            else [f._root_class(c) for s in self.values(obj) for c in self.classes_built(s)]
        refs = [r for r in self._class_attributes if r.scope in classes and (
            name is None or (r.name.startswith(f"self.{name}") if prefix else r.name == f"self.{name}"))]
        return Sites().union(*(self.ref_values(r) for r in refs))

    @cached_property
    def _class_attributes(self) -> list[Ref]:
        """Every `self.x` a class of the program assigns."""
        f = self.facts
        refs = [f.ref(t, s) for t, _, s in f.assigns if (dotted(t) or "").count(".") == 1 and dotted(t).startswith("self.")]
        return list(dict.fromkeys(r for r in refs if r is not None))

    def _compute_ref(self, ref: Ref) -> Sites:
        f = self.facts
        found = Sites().union(*(self.values(s) for s in f.sources(ref)))
        for copied in f.keyed_by_name(ref):  # `setattr(self, key, loaders[key])`: `loaders["trainloader"]`
            found |= self._item_under(copied, ref.name.partition(".")[2])
        for loop in self._loop_targets(ref):  # `for net in [self.G, self.D]:`
            found |= Sites().union(*(self.elements(s) for s in self.values(loop.iter)))
        for iterated in self._paired_loops(ref):  # `for i, frame in enumerate(frames):`
            found |= Sites().union(*(self.elements(s) for s in self.values(iterated)))
        for loop in self.facts.loops_binding(ref):  # `for i, (train, test) in enumerate(pairs):`
            found |= Sites().union(*(self._bound_in(pattern, items, ref) for pattern, items in self._loop_items(loop)))
        for held in self._item_loops.get(ref, ()):  # `for k, v in self.writers.items():`
            found |= Sites().union(*(self.elements(s) if self.is_container(s) else {s} for s in self.values(held)))
        for value, path in f._unpacking.get(ref, ()):  # `model, opt = torch.load(f)`: made by the load
            if not f._unpacked(value, path):
                sites = self.values(value)
                for i in path:
                    sites = Sites().union(*(self._element_at(s, i) for s in sites))
                found |= sites
        for item in self.facts.entered(ref):
            found |= self.values(item)
        for given in self._launched_with(ref):  # `mp.spawn(main_worker, nprocs=n, args=(args,))`
            found |= self.values(given)
        return found | self._property_values(ref)

    def _launched_with(self, ref: Ref) -> list[cst.BaseExpression]:
        """What the calls that hand a top-level function on by name with `args=(...)` give its
        parameter `ref` (`mp.spawn(main_worker, nprocs=n, args=(args,))`, `Process(target=run,
        args=(rank, cfg))`): the tuple's items fill its last parameters in order (spawn puts the
        process index before them). Where a worker reads `args.train_loader` that the launching
        code's own `args` never held, the object is the one handed on: before, a worker's parameter
        held nothing, and a loop over `args.train_loader` in a helper it calls (TopDiG, set 28) drew
        from no known loader (decision 0241)."""
        f = self.facts
        func = ref.scope
        if not isinstance(func, cst.FunctionDef) or f.enclosing_class(func) is not None or "." in ref.name \
                or func.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT):
            return []
        params = [p.name.value for p in func.params.params]
        if ref.name not in params:
            return []
        given = []
        for call in f.handing_on(func.name.value):
            items = mt.keyword(call, "args")
            if (f.qualify(call.func) or "") not in SPAWNING or items is None \
                    or not isinstance(items.value, (cst.Tuple, cst.List)) \
                    or any(isinstance(e, cst.StarredElement) for e in items.value.elements):
                continue
            at = params.index(ref.name) - (len(params) - len(items.value.elements))
            if 0 <= at < len(items.value.elements):
                given.append(items.value.elements[at].value)
        return given

    def _element_at(self, site: cst.CSTNode, i: int | None) -> Sites:
        """What element `i` of `site` may be, where a name is unpacked from it: of a tuple or list
        written out, its `i`th element (`model_cls, params_cls = TASKS[name]` of `TASKS = {"copy":
        (CopyTask, CopyParams), ...}`: `CopyTask` of each row, never `CopyParams`; unpacking raises
        unless the row has as many elements as the target, so a row written out is the row; `i`
        negative counts from the end, after a starred part); of any other container, every element;
        else the site itself (a load, a call of a library). A starred part (`i` None) is a list of
        some of the elements: the site, as a container of them."""
        if i is None:
            return Sites({site})
        if isinstance(site, (cst.Tuple, cst.List)) and -len(site.elements) <= i < len(site.elements) \
                and not any(isinstance(e, cst.StarredElement) for e in site.elements):
            return self.values(site.elements[i].value)
        return self.elements(site) if self.is_container(site) else Sites({site})

    def _property_values(self, ref: Ref) -> Sites:
        """`self.x` of a class of the program that defines `x` as a property (`@property def
        train_loader(self): return self._train`): what the getter returns. So `data.train_loader`,
        `data` an instance of that class, is the loader its `__init__` stores in `self._train`."""
        head, _, attr = ref.name.partition(".")
        if head != "self" or not attr or "." in attr or not isinstance(ref.scope, cst.ClassDef):
            return Sites()
        f = self.facts
        getters = [m for m in f.functions.get(attr, ()) if is_property(m)
                   and (cls := f.enclosing_class(m)) is not None and f._root_class(cls) is ref.scope]
        return Sites().union(*(self.values(r) for m in getters for r in f.returned(m)))

    def names_through(self, expr: cst.BaseExpression) -> frozenset[Ref]:
        """The names whose values `expr` may take, by the same paths as `values`: `self.model`
        of `self.model = model.to(gpu)` comes through the parameter `model` and every name the
        callers passed for it. Memoised like `values`."""
        return self._memo_names(expr)

    def _memo_names(self, key) -> frozenset[Ref]:
        found = self._names.get(key)
        if found is None:
            self._names[key] = frozenset()
            found = self._names[key] = self._ref_names(key) if isinstance(key, Ref) else self._expr_names(key)
        return found

    def _expr_names(self, expr: cst.BaseExpression) -> frozenset[Ref]:
        f = self.facts
        passed = f.keyword_arguments(expr)
        if passed is not None:
            return frozenset().union(*(self._memo_names(a) for a in passed))
        if isinstance(expr, (cst.Name, cst.Attribute)) and dotted(expr):
            ref = f.ref(expr)
            return frozenset() if ref is None else frozenset({ref}) | self._memo_names(ref)
        parts: list = []
        if isinstance(expr, cst.Call):
            func = expr.func
            qualified = f.qualify(func) or dotted(func)
            if isinstance(func, cst.Attribute) and func.attr.value in mt.SELF_RETURNING:
                parts = [func.value]
            elif qualified in ADAPTERS or (dotted(func) or "").rpartition(".")[2] in mt.ITERATION_WRAPPERS:
                parts = mt.iterated(expr)
            elif (passed := self.passed_through(expr)) is not None:
                parts = [passed]
            elif not self.classes_built(expr):
                parts = [r for c in f.user_functions(expr) for r in f.returned(c)]
        elif isinstance(expr, cst.IfExp):
            parts = [expr.body, expr.orelse]
        elif isinstance(expr, cst.BooleanOperation):
            parts = [expr.left, expr.right]
        elif isinstance(expr, cst.Subscript):
            parts = [expr.value]
        return frozenset().union(*(self._memo_names(p) for p in parts))

    def _ref_names(self, ref: Ref) -> frozenset[Ref]:
        sources = [*self.facts.sources(ref), *self.facts.entered(ref)]
        return frozenset().union(*(self._memo_names(s) for s in sources))

    def elements(self, site: cst.CSTNode) -> Sites:
        """What a container site holds: its elements' objects (a dict's values), and for a list or
        set bound to a name, what `.append(x)` / `.add(x)` put in it (`ds = []`,
        `ds.append(train_loader)`, `return ds`)."""
        if isinstance(site, (cst.List, cst.Tuple, cst.Set)):
            holders = self._bound.get(site, []) if isinstance(site, (cst.List, cst.Set)) else []  # `ds = []`
            added = [x for ref in holders for x in self._appended(ref)]
            return Sites().union(*(self.values(e.value) for e in site.elements if isinstance(e, cst.Element)),
                                 *(self.values(x) for x in added))
        if isinstance(site, cst.Dict):
            return Sites().union(*(self.values(e.value) for e in site.elements if isinstance(e, cst.DictElement)))
        if isinstance(site, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.values(site.elt)
        if isinstance(site, cst.DictComp):
            return self.values(site.value)
        if self.keyword_dict(site):  # `Munch(generator=g, ...)`: the keywords' values, and what is stored by key
            assert isinstance(site, cst.Call)
            return Sites().union(*(self.values(a.value) for a in site.args if a.keyword is not None),
                                 *(self.values(v) for v in self._stored_into(site)))
        return Sites()

    def keyword_dict(self, site: cst.CSTNode) -> bool:
        """Is `site` a dict built from keywords (`Munch(generator=g)`, `dict(train=loader)`, an empty
        `Munch()`: `KEYWORD_DICTS`)? A container: its items are the keywords' values."""
        if not isinstance(site, cst.Call) or any(a.star for a in site.args) or \
                any(a.keyword is None for a in site.args):
            return False
        qualified = self.facts.qualify(site.func) or dotted(site.func)
        return qualified in ATTRIBUTE_DICTS or qualified == "dict" and bool(site.args)

    def is_container(self, site: cst.CSTNode) -> bool:
        """A container site: a display, a comprehension, or a dict built from keywords."""
        return isinstance(site, CONTAINERS) or self.keyword_dict(site)

    def _stored_into(self, site: cst.Call) -> list[cst.BaseExpression]:
        """What the program stores by item (`optims[net] = Adam(...)`) into the names bound to `site`."""
        return [v for ref in self._bound.get(site, []) for v in self._stored_by_item.get(ref, ())]

    @cached_property
    def _stored_by_item(self) -> dict[Ref, list[cst.BaseExpression]]:
        """`d[k] = v`, any key: for each container name, the values stored into it by item."""
        f = self.facts
        index: dict[Ref, list[cst.BaseExpression]] = defaultdict(list)
        for target, value, stmt in f.assigns:
            if isinstance(target, cst.Subscript) and dotted(target.value) and not isinstance(stmt, cst.AugAssign):
                ref = f.ref(target.value, stmt)
                if ref is not None:
                    index[ref].append(value)
        return index

    @cached_property
    def unpacked_names(self) -> dict[str, list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]]:
        """`self.G, self.D = build_models(cfg)`: (target, value, statement) for each name or `a.x`
        bound by unpacking, by its last name, as `Facts.assigned_names` gives plain assignments; the
        value is the element of a literal tuple, else the whole value."""
        index: dict[str, list] = defaultdict(list)
        for target, value, stmt in self.facts.assigns:
            if not isinstance(target, (cst.Tuple, cst.List)) or isinstance(stmt, cst.AugAssign):
                continue
            for part, path in unpacking_paths(target):  # (also of a nested tuple: `(a, b), c = ...`)
                name = dotted(part)
                if name is None or name.count(".") > 1 or None in path:
                    continue
                index[name.split(".")[-1]].append((part, written_element(value, path), stmt))
        return index

    def _paired_loops(self, ref: Ref) -> list[cst.BaseExpression]:
        """What a loop over `enumerate(...)` or `zip(...)` binds `ref` to an item of, by its place in
        the target: `frames` for `frame` of `for i, frame in enumerate(frames):`, `paths` for `path`
        of `for frame, path in zip(frames, paths):`."""
        found = []
        for loop in self.facts.loops_binding(ref):
            target, iterated = loop.target, loop.iter
            if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(iterated, cst.Call):
                continue
            names = [dotted(e.value) if isinstance(e, cst.Element) else None for e in target.elements]
            if ref.name not in names:
                continue
            args = mt.iterated(iterated, starred=False)
            if mt.is_call_of(iterated, "enumerate") and len(names) == 2 and names.index(ref.name) == 1 and args:
                found.append(args[0])
            elif mt.is_call_of(iterated, "zip") and len(args) == len(names):
                found.append(args[names.index(ref.name)])
        return found

    def _loop_items(self, loop: cst.For) -> list[tuple[cst.BaseExpression, Sites]]:
        """(a part of the target, the items it takes) for a loop that unpacks each item: the item of
        `enumerate(pairs)` for the second part, of each argument of `zip(...)` for its part, of the
        container itself for a whole tuple target (`for train, test in pairs:`)."""
        target, iterated = loop.target, loop.iter
        if not isinstance(target, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in target.elements):
            return []
        args = mt.iterated(iterated, starred=False) if isinstance(iterated, cst.Call) else []
        if mt.is_call_of(iterated, "enumerate") and len(target.elements) == 2 and args:
            return [(target.elements[1].value, self._items(args[0]))]
        if mt.is_call_of(iterated, "zip") and len(args) == len(target.elements):
            return [(e.value, self._items(arg)) for e, arg in zip(target.elements, args)]
        return [(target, self._items(iterated))]

    def _items(self, iterated: cst.BaseExpression) -> Sites:
        return Sites().union(*(self.elements(s) for s in self.values(iterated)))

    def _bound_in(self, pattern: cst.BaseExpression, items: Sites, ref: Ref) -> Sites:
        """What `ref` takes from `items` where a loop's target binds it inside `pattern` (`(train, _)`
        over the tuples `loaders.append((train_loader, test_loader))` put in a list: the first
        elements only); a part that is a name binds nothing deeper (the flat cases above)."""
        if not isinstance(pattern, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in pattern.elements):
            return Sites()
        found = Sites()
        for i, element in enumerate(pattern.elements):
            part = element.value
            if not (isinstance(part, cst.Name) and part.value == ref.name) and not isinstance(part, (cst.Tuple, cst.List)):
                continue
            held = Sites().union(*(self.values(s.elements[i].value) for s in items
                                   if isinstance(s, (cst.Tuple, cst.List)) and len(s.elements) == len(pattern.elements)
                                   and isinstance(s.elements[i], cst.Element)))
            found |= held if isinstance(part, cst.Name) else self._bound_in(part, held, ref)
        return found

    def _loop_targets(self, ref: Ref) -> list[cst.For]:
        """The loops that bind `ref` as their whole target (`for net in nets:`; `Facts.loops_binding`)."""
        return [loop for loop in self.facts.loops_binding(ref) if isinstance(loop.target, cst.Name)]

    @cached_property
    def _item_loops(self) -> dict[Ref, list[cst.BaseExpression]]:
        """The names a loop binds to the values of a dict, by the dict: `v` of `for k, v in
        d.items():` and of `for v in d.values():` -> [`d`] (what `d` holds, its items stored by
        `d[key] = value` among them)."""
        f = self.facts
        index: dict[Ref, list] = defaultdict(list)
        for loop in f.loops:
            if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call) or loop.iter.args \
                    or not isinstance(loop.iter.func, cst.Attribute):
                continue
            method, target = loop.iter.func.attr.value, loop.target
            if method == "items" and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                target = target.elements[1].value
            elif method != "values":
                continue
            ref = f.ref(target, loop) if isinstance(target, cst.Name) else None
            if ref is not None:
                index[ref].append(loop.iter.func.value)
        return index

    def loop_bound(self, ref: Ref) -> bool:
        """Is `ref` the whole target of a `for` loop, or what it binds to a dict's values (`model`
        of `for name, model in models.items():`)?"""
        return bool(self._loop_targets(ref)) or ref in self._item_loops

    # what an object is ------------------------------------------------------------------------
    def constructs(self, call: cst.CSTNode) -> cst.ClassDef | None:
        """The class of the program `call` builds an instance of (`Net()`, `models.Net()`)."""
        return self._class_called(call.func) if isinstance(call, cst.Call) else None

    def _class_called(self, func: cst.BaseExpression) -> cst.ClassDef | None:
        """The class of the program `func` names (`Net`, `models.Net`)."""
        if isinstance(func, cst.Attribute) and self.facts.is_program_module(func.value):
            func = func.attr
        return self.facts.classes.get(func.value) if isinstance(func, cst.Name) else None

    def drawn_from(self, site: cst.CSTNode) -> Sites:
        """What an instance `site` builds draws its items from when iterated, where its class's
        `__iter__` (or `__next__`) hands out another object's: `yield next(self._iterator)`, `for b in
        self.loader: yield b`, `yield from self.loader`, `return iter(self.loader)` give the sites of
        `self._iterator` or `self.loader` (DomainBed's `InfiniteDataLoader`, whose `__init__` keeps
        `iter(DataLoader(...))`); of each class a registry's lookup may build (`Register.get(name)(**cfg)`,
        `classes_built`). Empty for anything else."""
        f = self.facts
        found: list[Sites] = []
        for method in [m for cls in self.classes_built(site) for name in ("__iter__", "__next__")
                       for m in f.method(cls, name)]:
            for call in f.calls_in(method):
                if dotted(call.func) == "next" and call.args:
                    found.append(self.values(call.args[0].value))
            found += [self.values(lp.iter) for lp in f.loops
                      if isinstance(lp, cst.For) and f.scope(lp) is method]
            found += [self.values(y.value.item) for y in f.findall(method, cst.Yield)
                      if isinstance(y.value, cst.From) and f.scope(y) is method]
            found += [self.values(r) for r in f.returned(method)]
        return Sites().union(*found)

    def partial_callee(self, call: cst.Call) -> cst.BaseExpression | None:
        """What `call` really calls where it calls a `functools.partial` object: `make =
        partial(DataLoader, batch_size=16)`, then `make(ds, shuffle=True)` builds a DataLoader
        (`DataLoader` here); `opt_fn = partial(torch.optim.Adam, lr=1e-3)`, then
        `opt_fn(model.parameters())` an optimizer. None where `call.func` may hold anything else
        (or partials of different callables)."""
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        f = self.facts
        sites = self.values(call.func)
        partials = [s for s in sites if isinstance(s, cst.Call) and f.qualify(s.func) == "functools.partial"
                    and s.args and s.args[0].keyword is None and not s.args[0].star]
        callees = {dotted(p.args[0].value) for p in partials}
        return partials[0].args[0].value if partials and len(partials) == len(sites) and len(callees) == 1 \
            and None not in callees else None

    def kind(self, site: cst.CSTNode) -> str | None:
        """MODEL, LOADER, OPTIMIZER or WRITER for a site of one, else None (a call of a
        `functools.partial` object: of what the partial wraps)."""
        if not isinstance(site, cst.Call):
            return None
        f = self.facts
        callee = self.partial_callee(site)
        func = site.func if callee is None else callee
        qualified = f.qualify(func) or ""
        cls = self._class_called(func)
        if cls is not None:
            return self._class_kind(cls)
        module = f.looked_up_in(site) if callee is None else None
        if module is not None:
            return self._registry_kind(module)
        if site in self._optimizer_calls:  # a call of what holds an optimizer class (`OPTS[name](params)`)
            return OPTIMIZER
        if callee is None and isinstance(func, cst.Call) and (looked_up := self._looked_up_kind(site)) is not None:
            return looked_up
        if qualified == "torch.utils.data.DataLoader":
            return LOADER
        if qualified.startswith(WRITERS) or qualified.endswith(".SummaryWriter"):
            return WRITER
        if mt.is_optimizer(f.qualify(func), site if callee is None else site.with_changes(func=callee)):
            return OPTIMIZER
        head, _, last = qualified.rpartition(".")
        if head.startswith(("torch.nn", "torchvision.models")) and last[:1].isupper() or \
                head.startswith("torchvision.models") or qualified == "timm.create_model":
            return MODEL
        return None

    def _class_kind(self, cls: cst.ClassDef) -> str | None:
        """The kind of an instance of the program's class `cls`."""
        f = self.facts
        return LOADER if self.loader_class(cls) else OPTIMIZER if f.is_optimizer_class(cls) else \
            MODEL if is_module_class(f, cls) else WRITER if self.logger_class(cls) else None

    def _looked_up_kind(self, site: cst.Call) -> str | None:
        """The kind of what a call of a registry's lookup builds (`Register.get(name)(**cfg)`, the
        registry filled by a class decorator `@Register.register`, `Facts.classes_looked_up`): the
        kind every class it may build is of; None where they are of none or of several (a registry of
        loader wrappers, data sets and a scheduler). A data set or sampler class (a base of
        `torch.utils.data`'s) is of none: `is_module_class` takes a library base for a module."""
        kinds = {None if self._data_class(c) else self._class_kind(c) for c in self.classes_built(site)}
        return kinds.pop() if len(kinds) == 1 else None

    def _data_class(self, cls: cst.ClassDef) -> bool:
        """Does `cls` derive from a class of `torch.utils.data` (`Dataset`, `Sampler`), through the
        program's own bases too?"""
        f = self.facts
        return any((f.qualify(base.value) or "").startswith("torch.utils.data.") for c in f.lineage(cls) for base in c.bases)

    @cached_property
    def _optimizer_calls(self) -> frozenset[cst.Call]:
        """The optimizer constructions as `Facts.optimizers` finds them, the calls of a value that
        holds an optimizer class among them (an alias, an item of a dict of them, what a function of
        the program returns: `get_optimizer(name)(model.parameters())`): one answer for both."""
        return frozenset(self.facts.optimizers)

    def loader_class(self, cls: cst.ClassDef) -> bool:
        """A DataLoader subclass of the program (`class VADataloader(data.DataLoader)`, whose
        `__init__` hands its own arguments to `super().__init__(...)` and adds methods of its own)."""
        return any(self.facts.qualify(base.value) == "torch.utils.data.DataLoader"
                   for c in self.facts.lineage(cls) for base in c.bases)

    def _registry_kind(self, module: str) -> str | None:
        """The kind of what a registry builds from `module` by a name the configuration gives
        (`Facts.looked_up_in`): OPTIMIZER from `torch.optim`; LOADER or MODEL where every class the
        program's module defines is a DataLoader subclass, or a module (pytorch-template's
        `data_loader/data_loaders.py`, `model/model.py`); else None."""
        if module == "torch.optim" or self.facts.reexported_library(module) == "torch.optim":
            return OPTIMIZER
        classes = self.facts.classes_of_module(module)
        if classes and all(self.loader_class(c) for c in classes):
            return LOADER
        return MODEL if classes and all(is_module_class(self.facts, c) for c in classes) else None

    @cached_property
    def loader_calls(self) -> list[cst.Call]:
        """The calls of the program that build a DataLoader (`makes_loader`), in the program's
        order: the loaders, the reach warnings, the schedules, the counts and shard-metrics each ask
        of every call."""
        return [c for c in self.facts.calls if self.makes_loader(c)]

    def makes_loader(self, call: cst.Call) -> bool:
        """Does `call` build a DataLoader: `DataLoader(...)`, an instance of the program's own
        DataLoader subclass, one a registry builds by name from a module of them
        (`config.init_obj('data_loader', module_data)`), or a call of a `functools.partial` of
        one (`make = partial(DataLoader, batch_size=16)`, then `make(ds, shuffle=True)`)?"""
        if self.facts.qualify(call.func) == "torch.utils.data.DataLoader":
            return True
        callee = self.partial_callee(call)
        if callee is not None:
            cls = self._class_called(callee)
            return self.facts.qualify(callee) == "torch.utils.data.DataLoader" or cls is not None and self.loader_class(cls)
        module = self.facts.looked_up_in(call)
        if module is not None:
            return self._registry_kind(module) == LOADER
        cls = self.constructs(call)
        return cls is not None and self.loader_class(cls)

    def logger_class(self, cls: cst.ClassDef) -> bool:
        """A logger class of the program: its instances hold a writer (`self.writer =
        tf.summary.create_file_writer(log_dir)`, a file opened for writing: a CSV logger) and no model, loader or optimizer, and none of
        its methods trains. (A trainer that keeps a SummaryWriter in `self.writer` is not one.)"""
        root = self.facts._root_class(cls)
        found = self._loggers.get(root)
        if found is None:
            self._loggers[root] = False  # a class that holds an instance of itself adds nothing
            kinds = {WRITER if mt.is_open_for_writing(s) else self.kind(s)  # `self.csv_file = open(p, "w")`
                     for r in self._class_attributes if r.scope is root for s in self.ref_values(r)}
            methods = [m for fs in self.facts.functions.values() for m in fs
                       if (c := self.facts.enclosing_class(m)) is not None and self.facts._root_class(c) is root]
            found = self._loggers[root] = WRITER in kinds and not kinds & {MODEL, LOADER, OPTIMIZER} and \
                not any(self.facts.trains(m) for m in methods) and not self._keeps_figures(root, methods)
        return found

    def _keeps_figures(self, root: cst.ClassDef, methods: list[cst.FunctionDef]) -> bool:
        """Does the class keep figures the program reads back: a method (not `__init__`, nor a
        `__getattr__` handing out the writer's methods) returns a value read off an attribute other than
        its writer's that its methods change after `__init__`? pytorch-template's MetricTracker holds the
        TensorboardWriter and adds a scalar on each `update(key, value)`, but `result()` returns the
        averages it keeps, which the trainer reads for the epoch's log, the best checkpoint and early
        stopping: made on the main process only, the others had no figures (32c's capsule network,
        decision 0268). A logger whose method returns what `__init__` set (`get_log_dir()`) is one still."""
        writers = {r.name for r in self._class_attributes if r.scope is root
                   and any(mt.is_open_for_writing(s) or self.kind(s) == WRITER for s in self.ref_values(r))}
        changed = {name for target, _, stmt in self.facts.assigns
                   if (name := _self_attribute_root(target)) is not None
                   and (m := self.facts.scope(stmt)) in methods and m.name.value != "__init__"}
        return any(mt.is_name(a.value, "self") and f"self.{a.attr.value}" not in writers and a.attr.value in changed
                   for m in methods if m.name.value not in ("__init__", "__getattr__", "__getattribute__")
                   for ret in self.facts.findall(m, cst.Return) if ret.value is not None
                   for a in self.facts.findall(ret.value, cst.Attribute))

    def of_kind(self, expr: cst.BaseExpression, kind: str) -> Sites:
        return Sites(s for s in self.values(expr) if self.kind(s) == kind)

    # which optimizer steps which model's parameters ---------------------------------------------
    def parameter_calls(self, optimizer: cst.Call) -> list[cst.Call]:
        """The `x.parameters()` / `x.named_parameters()` calls whose parameters `optimizer` is
        given, through what derives an iterable from them: `filter(lambda p: ...,
        G.parameters())`, `itertools.chain(a.parameters(), b.parameters())`, param-group dicts,
        comprehensions over `named_parameters()`, names and helpers that build those."""
        found = [c for a in optimizer.args for c in self._parameters_in(a.value)]
        return list(dict.fromkeys(found))

    def _parameters_in(self, node: cst.CSTNode) -> tuple[cst.Call, ...]:
        found = self._params.get(node)
        if found is not None:
            return found
        self._params[node] = ()
        f = self.facts
        calls: list[cst.Call] = []
        for call in f.calls_in(node):
            if mt.is_parameters_attr(call.func):
                calls.append(call)
            elif self._model_method(call):
                calls.append(call)
            elif not self.classes_built(call):
                for callee in f.user_functions(call):  # `get_params(model)`
                    for r in f.returned(callee):
                        calls += self._parameters_in(r)
        for name in f.findall(node, (cst.Name, cst.Attribute), lambda n: dotted(n) is not None):
            handed = self._lambda_arguments(name) if isinstance(name, cst.Name) else None
            if handed is not None:  # `lambda params, lr: Adam(params, lr=lr)`: what its callers pass
                calls += [c for a in handed for c in self._parameters_in(a)]
                continue
            ref = f.ref(name)
            read = ref is not None and (not isinstance(f.parent(name), cst.Attribute) or self._viewed(name))
            sources = self._same_lineage(name, f.sources(ref)) if read else []
            for source in sources:
                calls += self._parameters_in(source)
            if read and not sources and isinstance(name, cst.Attribute):
                # `model.optim_list`, stored on the same object where the model is set up (another function)
                stored = [c for site in self.values(name) for c in self._parameters_in(site)
                          if isinstance(site, CONTAINERS)
                          or (isinstance(site, cst.Call) and mt.is_parameters_attr(site.func))]
                self.stored_parameters.update(stored)
                calls += stored
            if ref is not None:  # `params += list(model.parameters())`, `params.extend(...)`
                calls += [c for stmt in self._growth(ref) for c in self._parameters_in(stmt)]
                # `for name, p in model.named_parameters(): decay.append(p)`
                calls += [c for loop in self.facts.loops_binding(ref) for c in self._parameters_in(loop.iter)]
        self._params[node] = tuple(dict.fromkeys(calls))
        return self._params[node]

    def _same_lineage(self, name: cst.Name | cst.Attribute, sources: list[cst.BaseExpression]
                      ) -> list[cst.BaseExpression]:
        """The sources of `self.x` read in a method of class C that a C object may hold: those bound in
        C, a base of it or a subclass of it, not in a sibling class that shares C's base (the object
        core keys `self.x` by the root class). The machine_learning package's VAE, AutoEncoder,
        PixelCNN and GatedPixelCNN each bind `self.params = chain(self.models["encoder"].parameters(),
        ...)` under one `AlgorithmBase`; the VAE's `Adam(params=self.params)` read all four chains, and
        its networks, of the only class the program builds, were neither wrapped nor named (decision
        0263). Sources outside any class, or a read outside a class, are kept as they are."""
        f = self.facts
        if not isinstance(name, cst.Attribute) or not mt.is_name(name.value, "self"):
            return sources
        cls = f.enclosing_class(name)
        if cls is None:
            return sources
        def related(source: cst.BaseExpression) -> bool:
            other = f.enclosing_class(source)
            return other is None or other is cls or other in f.lineage(cls) or cls in f.lineage(other)
        return [s for s in sources if related(s)]

    def _viewed(self, name: cst.Name | cst.Attribute) -> bool:
        """Is `name` a dict whose values are read here through a view of it (`param_dict.values()`,
        `param_dict.items()`)? nanoGPT's `configure_optimizers` hands AdamW `[p for n, p in
        param_dict.items() if p.dim() >= 2]` of `param_dict = {pn: p for pn, p in
        self.named_parameters()}`: the parameters are the dict's (before, the name was read only
        where no attribute was taken of it, and the optimizer trained no model ddpify could tell)."""
        attr = self.facts.parent(name)
        return isinstance(attr, cst.Attribute) and attr.attr.value in ("values", "items") \
            and isinstance(call := self.facts.parent(attr), cst.Call) and call.func is attr and not call.args

    def _lambda_arguments(self, name: cst.Name) -> list[cst.BaseExpression] | None:
        """What the calls of a lambda pass for its parameter `name` reads, where `name` is one
        (`OPTIMIZERS = {"adam": lambda params, lr: torch.optim.Adam(params, lr=lr)}`, then
        `OPTIMIZERS[name](model.parameters(), 0.01)`: `model.parameters()`), by place or keyword;
        None where `name` is no parameter of a lambda around it."""
        f = self.facts
        lam = next((a for a in f.ancestors(name) if isinstance(a, cst.Lambda)
                    and name.value in [p.name.value for p in a.params.params]), None)
        if lam is None:
            return None
        index = [p.name.value for p in lam.params.params].index(name.value)
        return [a.value for call in self._lambda_calls.get(lam, ()) for a in
                ([a for a in call.args if a.keyword is not None and a.keyword.value == name.value]
                 or [a for a in call.args[index:index + 1] if a.keyword is None and not a.star])]

    @cached_property
    def _lambda_calls(self) -> dict[cst.Lambda, list[cst.Call]]:
        """The calls of each lambda of the program (`called_lambdas`)."""
        found: dict[cst.Lambda, list[cst.Call]] = defaultdict(list)
        for call in self.facts.calls:
            for lam in self.called_lambdas(call.func):
                found[lam].append(call)
        return found

    def called_lambdas(self, func: cst.BaseExpression, depth: int = 3) -> list[cst.Lambda]:
        """The lambdas of the program a call of `func` may run: through a name bound to one (`make =
        lambda p: ...`, then `make(...)`), an item of a registry written out that holds them
        (`OPTS[name](...)`), or a name bound to such an item (a model factory's `build_fn =
        MODEL_REGISTRY[cfg.model_type]`, then `model = build_fn(cfg)`, over `MODEL_REGISTRY = {"ACL":
        lambda cfg: ACLAdapter(ACL(cfg)), ...}`: before, the call's value was a site of its own, and
        the model it builds was of no class of the program, so nothing of its forward was read)."""
        f = self.facts
        if isinstance(func, cst.Lambda):
            return [func]
        if depth <= 0:
            return []
        registry = isinstance(func, cst.Subscript)
        name = func.value if registry else func
        ref = f.ref(name) if dotted(name) else None
        found: list[cst.Lambda] = []
        for source in f.sources(ref) if ref is not None else ():
            if registry and isinstance(source, (cst.Dict, cst.List, cst.Tuple)):
                items = [e.value for e in source.elements if isinstance(e, (cst.DictElement, cst.Element))]
                found += [item for item in items if isinstance(item, cst.Lambda)]
            elif not registry and isinstance(source, (cst.Lambda, cst.Subscript, cst.Name)):
                found += self.called_lambdas(source, depth - 1)
        return list(dict.fromkeys(found))

    def _model_method(self, call: cst.Call) -> bool:
        """`model.weights()`, `model.alphas()`: a method of the model's own class, called on the
        model, handed to an optimizer: the parameters it returns or yields are the model's (a
        DARTS controller's network weights, its architecture's alphas), whichever of its
        attributes it reads them from; the model trains, as for `model.parameters()`."""
        if not isinstance(call.func, cst.Attribute) or not self.of_kind(call.func.value, MODEL):
            return False
        callees = self.facts.user_functions(call) or self.methods(call)
        return bool(callees) and all(self.facts.enclosing_class(c) is not None for c in callees)

    def _appended(self, ref: Ref) -> list[cst.BaseExpression]:
        """What `name.append(x)` / `name.add(x)` puts in a list or set (`Facts.filled`)."""
        return [c.args[0].value for method, c in self.facts.filled(ref) if method in ("append", "add") and len(c.args) == 1]

    def _growth(self, ref: Ref) -> list[cst.CSTNode]:
        """`params += ...`, `params.append(...)` / `.extend(...)`, `opt.add_param_group(...)`: what is
        added to a list by name."""
        return [*self._augmented.get(ref, ()), *(a.value for method, c in self.facts.filled(ref)
                                                 if method in ("append", "extend", "add_param_group") for a in c.args)]

    @cached_property
    def _augmented(self) -> dict[Ref, list[cst.BaseExpression]]:
        """`params += ...`: what an augmented assignment adds, by name."""
        f = self.facts
        index: dict[Ref, list] = defaultdict(list)
        for target, value, stmt in f.assigns:
            if isinstance(stmt, cst.AugAssign) and dotted(target):
                index[f.ref(target, stmt)].append(value)
        return index

    def trained(self, optimizer: cst.Call) -> Sites:
        """The model objects whose parameters `optimizer` steps (a sub-module's parameters count
        for the model it belongs to: `self.G.main.parameters()` for `self.G`)."""
        found = Sites()
        for call in self.parameter_calls(optimizer):
            receiver = call.func.value
            while True:
                models = self.of_kind(receiver, MODEL)
                if models and not (isinstance(receiver, cst.Attribute) and self.of_kind(receiver.value, MODEL)):
                    found |= models
                    break
                if not isinstance(receiver, cst.Attribute):
                    break
                receiver = receiver.value
        return found

    # values handed down calls -----------------------------------------------------------------
    def receivers(self, ref: Ref) -> set[Ref]:
        """The parameters `ref` is passed to, directly or on through further calls, at any depth
        (one visit per parameter)."""
        passed = self.facts._passed_to
        found: set[Ref] = set()
        frontier = [ref]
        while frontier:
            for param in passed.get(frontier.pop(), ()):
                if param not in found:
                    found.add(param)
                    frontier.append(param)
        return found

    def carriers(self, refs: set[Ref]) -> set[Ref]:
        """The names the value `refs` hold is handed on to, at any depth: the parameters it is
        passed to, the `self.x` a method stores it in (`self.eval_dataloader = eval_dataloader`),
        and the names the callers of a function that returns it bind to the call, whole or
        unpacked by its place in a returned tuple (`return train_loader, eval_loader`, then
        `train_dl, eval_dl = build_dataloader(...)` in another module). Names, not objects: one
        call of a factory is followed apart from its other calls."""
        f = self.facts
        found = set(refs)
        frontier = list(refs)
        while frontier:
            ref = frontier.pop()
            for nxt in (*f._passed_to.get(ref, ()), *self._stored_on_self.get(ref, ()), *self._returned_to.get(ref, ())):
                if nxt not in found:
                    found.add(nxt)
                    frontier.append(nxt)
        return found

    def bound_to(self, call: cst.Call) -> list[Ref]:
        """The names a call's value is bound to (`eval_loader = create_loader(...)`)."""
        return self._bound.get(call, [])

    def bound_at(self, call: cst.Call) -> list[Ref]:
        """The names a call's value is bound to, whole or unpacked by place (`loader, n = make(...)`:
        both)."""
        return [r for key, refs in self._bound.items() if key is call or isinstance(key, tuple) and key[0] is call
                for r in refs]

    @cached_property
    def _bound(self) -> dict[cst.CSTNode, list[Ref]]:
        """For each value assigned to a name, the names it is bound to; a tuple's elements unpacked by
        their place (`a, b = f()`: `(f(), 0)` -> `a`) under `(value, i)`."""
        f = self.facts
        index: dict[object, list[Ref]] = defaultdict(list)
        for target, value, stmt in f.assigns:
            if isinstance(stmt, cst.AugAssign):
                continue
            if isinstance(target, (cst.Tuple, cst.List)):
                for i, element in enumerate(target.elements):
                    ref = f.ref(element.value, stmt) if dotted(element.value) else None
                    if ref is not None and not isinstance(element, cst.StarredElement):
                        index[value, i].append(ref)
            elif dotted(target) and (ref := f.ref(target, stmt)) is not None:
                index[value].append(ref)
        return index

    @cached_property
    def _stored_on_self(self) -> dict[Ref, list[Ref]]:
        """`self.x = name` in a method: the name's ref to `self.x`'s."""
        f = self.facts
        index: dict[Ref, list[Ref]] = defaultdict(list)
        for target, value, stmt in f.assigns:
            if isinstance(value, cst.Name) and (dotted(target) or "").startswith("self.") and \
                    dotted(target).count(".") == 1 and not isinstance(stmt, cst.AugAssign):
                source, kept = f.ref(value), f.ref(target, stmt)
                if source is not None and kept is not None:
                    index[source].append(kept)
        return index

    @cached_property
    def _returned_to(self) -> dict[Ref, list[Ref]]:
        """`return name` / `return a, name`: the name's ref to the names each call of its function
        binds to that value, also where a function returns that call as it is (`def
        get_val_loader(cfg): return get_val_loader_inria(cfg)`: the names its callers bind)."""
        f = self.facts
        index: dict[Ref, list[Ref]] = defaultdict(list)
        for ret in f.returns:
            func = f.scope(ret)
            if not isinstance(func, cst.FunctionDef) or ret.value is None:
                continue
            placed = [(None, ret.value)] if isinstance(ret.value, cst.Name) else \
                [(i, e.value) for i, e in enumerate(ret.value.elements) if isinstance(e, cst.Element)
                 and isinstance(e.value, cst.Name)] if isinstance(ret.value, cst.Tuple) else []
            for i, name in placed:
                ref = f.ref(name)
                if ref is None:
                    continue
                for call in self._binding_calls(func):
                    index[ref] += self._bound.get(call if i is None else (call, i), [])
        return index

    def _binding_calls(self, func: cst.FunctionDef, depth: int = 3) -> list[cst.Call]:
        """The calls of `func`, and where one is returned as it is (`return helper(cfg)`), the calls
        of the function returning it, `depth` such functions up: the calls whose value is what
        `func` returns."""
        f = self.facts
        found = []
        for call in f.call_sites(func):
            found.append(call)
            outer = f.scope(call)
            if depth and isinstance(f.parent(call), cst.Return) and isinstance(outer, cst.FunctionDef) and outer is not func:
                found += self._binding_calls(outer, depth - 1)
        return found


def _one_pass(f: Facts, func: cst.FunctionDef, y: cst.Yield) -> cst.BaseExpression | None:
    """What the yield `y` of `func` hands out the items of in one pass: `yield from x` outside any
    loop, or `yield item` in a `for item in x:` that is the only loop of `func` around it."""
    loops = [lp for lp in f.enclosing_loops(y) if f.scope(lp) is func]
    if isinstance(y.value, cst.From):
        return y.value.item if not loops else None
    return loops[0].iter if len(loops) == 1 and isinstance(loops[0], cst.For) else None


def _namedtuple_fields(f: Facts, site: cst.CSTNode) -> list[str]:
    """The fields, in order, of the class a `collections.namedtuple("N", ["a", "b"])` (or `"a b"`,
    `"a, b"`) or `typing.NamedTuple("N", [("a", int), ...])` call makes; [] for anything else or a
    list ddpify cannot read."""
    if not isinstance(site, cst.Call) or f.qualify(site.func) not in ("collections.namedtuple", "typing.NamedTuple"):
        return []
    spec = mt.positional(site, 1) or mt.keyword(site, "field_names") or mt.keyword(site, "fields")
    value = spec.value if spec is not None else None
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        return value.evaluated_value.replace(",", " ").split()
    if not isinstance(value, (cst.List, cst.Tuple)):
        return []
    names = [e.value.elements[0].value if isinstance(e.value, cst.Tuple) and e.value.elements else e.value
             for e in value.elements]
    return [n.evaluated_value for n in names if isinstance(n, cst.SimpleString) and isinstance(n.evaluated_value, str)] \
        if all(isinstance(n, cst.SimpleString) for n in names) else []


def _adapted(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What iterator adapters are given: `enumerate(tqdm(x))` -> `x`, `bar.track(x, total=n)` -> `x`."""
    while isinstance(expr, cst.Call) and mt.iterated(expr) and \
            (dotted(expr.func) or "").rpartition(".")[2] in mt.ITERATION_WRAPPERS - {"zip"}:
        expr = mt.iterated(expr)[0]
    return expr


def _option_dest(call: cst.Call) -> str | None:
    """The attribute argparse stores an `add_argument(...)` option under: its `dest=`, else its
    first long flag (`--batch-size`: `batch_size`), else its first flag or positional name."""
    dest = mt.keyword(call, "dest")
    if dest is not None:
        return dest.value.evaluated_value if isinstance(dest.value, cst.SimpleString) else None
    flags = [a.value.evaluated_value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
    flags = [s for s in flags if isinstance(s, str)]
    name = next((s for s in flags if s.startswith("--")), flags[0] if flags else None)
    return name.lstrip("-").replace("-", "_") if name else None


def _literal_key(expr: cst.Subscript) -> str | None:
    """"k" for `d["k"]`."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    key = expr.slice[0].slice.value
    value = key.evaluated_value if isinstance(key, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def of(facts: Facts) -> Objects:
    """The object flow of `facts`, built once per module."""
    found = facts.__dict__.get("_objects")
    if found is None:
        found = facts.__dict__["_objects"] = Objects(facts)
    return found


def _literal_start(name: cst.BaseExpression) -> str:
    """The text a computed attribute name starts with: `optim` of `f"optim{i}"` and of `"optim" +
    str(i)`; "" when it starts with what is known at run time only."""
    if isinstance(name, cst.FormattedString) and name.parts and isinstance(name.parts[0], cst.FormattedStringText):
        return name.parts[0].value
    if isinstance(name, cst.BinaryOperation) and isinstance(name.operator, cst.Add) \
            and isinstance(name.left, cst.SimpleString) and isinstance(name.left.evaluated_value, str):
        return name.left.evaluated_value
    return ""


def _dict_values_bound(target: cst.BaseExpression, iterated: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(the part of a `for` target bound to a dict's values, the dict): `v` and `d` of `for k, v in
    d.items()` and of `for v in d.values()`; None for any other loop."""
    if not (isinstance(iterated, cst.Call) and not iterated.args and isinstance(iterated.func, cst.Attribute)):
        return None
    method = iterated.func.attr.value
    if method == "items" and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        return target.elements[1].value, iterated.func.value
    return (target, iterated.func.value) if method == "values" else None


def _self_attribute_root(target: cst.BaseExpression) -> str | None:
    """The attribute of `self` an assignment's target changes: `count` of `self.count += n`, `_data` of
    `self._data.loc[key, "total"] += v` and `self._data[col].values[:] = 0`; None for any other target."""
    node = target
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute) and mt.is_name(node.value, "self"):
            return node.attr.value
        node = node.value
    return None
