"""Never silent: what on the training path ddpify cannot follow, named in the report.

ddpify reads the entry script and the project modules it imports (ddpify.inputs.program), never
other code. When training is reached through something else, the report says so with a
warning at the call, so that "0 warning(s)" means the whole training path was read:

    importlib.import_module(name)                 # warning: code loaded by name is not read (unless
                                                  # a package of the project holds every module
                                                  # it may load: `f"trainers.{name}"`, read)
    engine.train_one_epoch(model, loader, opt)    # warning: `engine` is outside the project
    fitter = pl.Trainer(max_epochs=2)
    fitter.fit(model, loader)                     # warning: a method of an object built outside
    from utils import *                           # warning, when no `utils` module was found: the
                                                  # names it brings (torch?) are unknown
    Trainer(model, dataset).run()                 # warning, when nothing trains in what was read:
                                                  # `Trainer` (another package) may train
    TRAINERS[args.trainer](model, opt)            # warning: a callable looked up at run time
    mp.Process(target=train, args=(model,))       # warning: a function that trains, run elsewhere
    for x, y in batches:                          # warning (a loop that trains): `batches` is
                                                  # not traced to a DataLoader: not sharded
    opt = SGD(model.parameters())                 # warning when no `.backward()` was read
    loss.backward()                               # warning when no optimizer was read

Calls into torch, the standard library and libraries that do not train what they are given
(numpy, tqdm, wandb, ...) are not warned about; neither are builtins nor the objects' own
methods (`model.train()`).
"""

from __future__ import annotations

import sys
from typing import Iterator

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.analysis.result import Analysis
from ddpify.analysis import objects
from ddpify.analysis.loaders import loaders_of, unfed_training
from ddpify.analysis.models import Model, looked_up_callee
from ddpify.syntax.facts import Facts, Ref
from ddpify.syntax.names import dotted
from ddpify.inputs import command_line
from ddpify.inputs.program import Program

DYNAMIC = {"importlib.import_module", "importlib.__import__", "__import__", "runpy.run_path",
           "runpy.run_module", "importlib.util.spec_from_file_location", "exec"}
# what lists a folder's files
LISTINGS = frozenset({"glob.glob", "glob.iglob", "os.listdir", "os.scandir"})
# Entry points that call the function they are handed right away, in this process: `app.run(main)`
# runs `main(argv)` after parsing the flags, as a direct call would.
RUNS_NOW = frozenset({"absl.app.run"})
# Packages that do not run a training loop on what they are passed.
PASSIVE = frozenset({"torch", "torchvision", "torchaudio", "torchtext", "numpy", "scipy", "pandas",
                     "sklearn", "matplotlib", "PIL", "tqdm", "wandb", "tensorboardX", "torchinfo",
                     "torchsummary", "thop", "fvcore", "ddpify_runtime"}) | frozenset(sys.stdlib_module_names)


def unseen(analysis: Analysis, program: Program) -> Iterator[tuple[cst.CSTNode, str]]:  # noqa: C901 (16: to split)
    """(node, warning) for every place where training may go through code ddpify does not read."""
    facts, refs = analysis.facts, analysis.models.refs
    local = {p.name.split(".")[0] for p in program.parts}
    seen: set[str] = set()
    for call in facts.calls:
        name = dotted(call.func)
        qualified = facts.qualify(call.func) or name or ""
        if qualified in DYNAMIC and loads_unread(facts, program, call):
            yield facts.statement(call), (f"{loaded_by_name(facts, program, call)}: training code it loads is "
                                          "neither checked nor converted")
            continue
        outside = facts.qualify(call.func) is not None and qualified.split(".")[0] not in PASSIVE | local
        if outside and not facts.has_training and facts.imports.imports_module("torch") \
                and qualified.rpartition(".")[0] not in seen:
            seen.add(qualified.rpartition(".")[0])  # nothing trains here: it may happen in there
            yield facts.statement(call), (f"no training loop in the code ddpify read; `{facts.code(call.func)}(...)` "
                                          f"comes from `{qualified.rpartition('.')[0]}`, outside the project, and "
                                          "may train: that code is not converted")
            continue
        for func in _training_functions_passed(facts, call):
            yield facts.statement(call), (f"`{func}`, which trains, is handed to `{facts.code(call.func)}(...)` "
                                          "to run (a callback, another process, a thread): ddpify cannot follow "
                                          "when or where it runs, and converts it as if called directly")
        looked_up = looked_up_callee(facts, call.func)
        method = not (outside or looked_up) and isinstance(call.func, cst.Attribute) and bool(call.args)
        if not (outside or looked_up or method) or facts.user_functions(call):
            continue  # (cheap tests first: most calls go to torch, builtins, methods, the program)
        if (name or "").rpartition(".")[2] in mt.ITERATION_WRAPPERS:
            continue  # an iterator adapter (`bar.track(loader)`: rich's progress) hands out what it is given
        if qualified in objects.KEYWORD_DICTS:
            continue  # a dict with attribute access (`Munch(generator=generator)`): it holds what it is given
        handed = _training_arguments(facts, refs, call)
        if not handed or _own_method(facts, refs, call) or outside and _schedule_of_optimizers(facts, refs, call):
            continue
        what = ", ".join(f"`{h}`" for h in handed)
        callee = facts.code(call.func)
        if method and isinstance(call.func, cst.Attribute):  # `fitter.fit(model, loader)`, `fitter` built by `pkg.Fitter(...)`, outside the project
            maker = _built_outside(facts, call.func.value, local)
            if maker is not None:
                yield facts.statement(call), (f"`{callee}(...)` is a method of an object built by `{maker}(...)`, "
                                              f"outside the project: ddpify cannot see what it does with {what}; "
                                              "training code there is not converted")
        elif looked_up:
            yield facts.statement(call), (f"`{callee}(...)` is looked up at run time (a registry, a callback, "
                                          f"a parameter): ddpify cannot see what it does with {what}; "
                                          "code it runs is not converted")
        elif outside:
            yield facts.statement(call), (f"`{callee}(...)` comes from `{qualified.rpartition('.')[0]}`, outside "
                                          f"the project: ddpify cannot see what it does with {what}; "
                                          "training code there is not converted")
    backwards = [c for c in facts.calls_named("backward", "grad")
                 if facts.is_backward(c) or facts.parameter_gradients(c) is not None]
    hand_set = [target for target, _, _ in facts.assigns
                if isinstance(target, cst.Attribute) and target.attr.value == "grad"] if not backwards else []
    stepping = [node for node in (*facts.loops, *facts.by_type.get(cst.FunctionDef, ()))] if hand_set else []
    steps = {id(t) for node in stepping for t in facts.gradients_set_by_hand(node)}  # a step of its own, or of
    stepped = [target for target in hand_set if id(target) in steps]  # a caller's after the helper: converted
    unstepped = [target for target in hand_set if target not in stepped]
    if facts.optimizers and unstepped:  # `rbm.W.grad = -w_grad` in a helper, the step elsewhere
        yield facts.statement(unstepped[0]), (
            "gradients set by hand with no `.backward()` (contrastive divergence, an update the program "
            "computes), where no optimizer steps in the same loop or function: ddpify does not read this as a "
            "training step, and DDP, which averages what .backward() accumulates, averages none of them, so the "
            "processes would diverge: average them over the processes before the optimizer steps "
            "(average_gradients(optimizer), from ddpify_runtime), and see that the loop's loader is sharded")
    elif facts.optimizers and not backwards and not stepped:
        yield facts.statement(facts.optimizers[0]), (
            "no `.backward()` in the code ddpify read: the training loop runs elsewhere, "
            "and is not converted (its data is not sharded, its saves run on every process)")
    if backwards and not facts.optimizers and not analysis.models.wrapped:  # not a model stepped by hand
        yield facts.statement(backwards[0]), (
            "this trains, but no optimizer is built in the code ddpify read (built by code it does not "
            "read, or by name): no model is wrapped in DistributedDataParallel")
    yield from star_imports(program)
    loader_calls = objects.of(facts).loader_calls

    def traced(loop: cst.For) -> bool:
        return bool(loaders_of(facts, loop.iter, loader_calls))

    batch_loops = facts.batch_loops()

    def runs_traced(node: cst.CSTNode, depth: int = 3) -> bool:
        """Does `node` call a function of the program whose own batch loop reads a loader (`for
        params in settings(grid): self.train(params)`, `train` looping over `self.loader`)?"""
        return any(any(traced(lp) for lp in batch_loops if facts.scope(lp) is f) or depth and runs_traced(f, depth - 1)
                   for c in facts.calls_in(node) for f in facts.user_functions(c) if f is not node)

    unfed = unfed_training(facts, analysis.models, analysis.loaders)  # shard-data's TODO: no DataLoader feeds it
    dealt = {d.loop for d in analysis.loaders.hand.dealt}  # batches by hand, dealt out (shard_batches)
    for loop in batch_loops:
        if loop in dealt:
            continue
        if unfed is not None and (loop is unfed or facts.is_inside(loop, unfed)) \
                and not _drawn_outside(facts, mt.strip_iteration(loop.iter), local):
            continue
        # `for net, opt in zip(nets, optimizers):` inside `for x, y in loader:` trains on the loader's batch
        if not traced(loop) and not any(isinstance(lp, cst.For) and traced(lp) for lp in facts.enclosing_loops(loop)) \
                and not runs_traced(loop.body):
            data = mt.strip_iteration(loop.iter)
            maker = _batch_maker(facts, data)
            yield loop, (f"this loop trains on `{facts.code(data)}`, " + (
                f"batches that `{maker}`, a generator of the program, makes itself (its loops count; it draws "
                "from no DataLoader nor iterator)" if maker is not None else
                "which ddpify cannot trace to a DataLoader in the code it read") + ": its data is not sharded")


def _drawn_outside(facts: Facts, data: cst.BaseExpression, local: set[str]) -> bool:
    """Does `data` (what a loop iterates), or an object it may hold, come from a call of code
    outside the project (`from engine import batches` of a module ddpify did not read): it may hand
    out a DataLoader's batches, and the loop keeps its own line."""
    sites = [*objects.of(facts).values(data), *mt.findall(data, cst.Call)]
    return any(isinstance(site, cst.Call) and not facts.user_functions(site) and (q := facts.qualify(site.func))
               is not None and q.split(".")[0] not in PASSIVE | local for site in sites)


def _batch_maker(facts: Facts, data: cst.BaseExpression) -> str | None:
    """The name of the generator of the program that makes the batches `data` hands out, where it
    makes them itself: `ground_truth.sample_iter(256, num_batches=n)`, whose loops count (`for _ in
    range(num_batches)`) and which calls no `next()` or `iter()` and delegates to no other iterable
    (`yield from`); None for anything else (a generator over a loader it is given, a function that
    is no generator, one the call graph does not resolve to a single function)."""
    funcs = facts.user_functions(data) if isinstance(data, cst.Call) else []
    if len(funcs) != 1:
        return None
    func = funcs[0]
    yields = facts.findall(func, cst.Yield)
    if not yields or any(isinstance(y.value, cst.From) for y in yields) \
            or any(isinstance(lp, cst.For) and not facts.counts(lp.iter) for lp in facts.loops_in(func)) \
            or any(mt.is_call_of(c, "next", "iter") for c in facts.calls_in(func)):
        return None
    cls = facts.enclosing_class(func)
    return f"{cls.name.value}.{func.name.value}" if cls is not None else func.name.value


def loads_unread(facts: Facts, program: Program, call: cst.Call) -> bool:
    """Does `call`, which loads code by name (`DYNAMIC`), load code ddpify did not read? Not where the
    program read every module it may load (`Program.by_name`), nor a module of a package that runs no
    training loop of the program's, named as written (`importlib.import_module('torch.optim')`, whose
    optimizer a base trainer then picks by a configured name: an import, `Facts.module_named`)."""
    named = facts.module_named(call) or _imported_as_written(facts, call)
    return call not in program.by_name and (named is None or named.split(".")[0] not in PASSIVE)


def _imported_as_written(facts: Facts, call: cst.Call) -> str | None:
    """The module `__import__("statistics")` (or `importlib.__import__`) imports, its name written
    out: the standard library's or a passive package's loads no training code (25c's VAE, whose
    `__import__("statistics").NormalDist(...)` was warned of as code loaded by name; decision 0206)."""
    named = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
    module = mt.string_value(named) if named is not None and \
        (facts.qualify(call.func) or dotted(call.func)) in ("__import__", "importlib.__import__") else None
    return module if module and not module.startswith(".") else None


def loaded_by_name(facts: Facts, program: Program, call: cst.Call) -> str:
    """What to say of `call`, which loads code by a name ddpify did not tell: where the name is a
    command-line option's value (`import_module(args.cfg.replace("/", ".")[:-3])`, of `--cfg`
    with no default and no choices) or a word of the command line read by its place
    (`import_module(sys.argv[1][:-3])`, through the parameters it is handed by: `main(sys.argv[1])`),
    how to tell it, so that the module is read and converted."""
    named = mt.keyword(call, "location") or (call.args[1] if len(call.args) > 1 else None) \
        if (facts.qualify(call.func) or dotted(call.func) or "").endswith("spec_from_file_location") else \
        (call.args[0] if call.args else None)  # the path of a file spec, else the module's name
    assigns = facts.findall(facts.module, cst.Assign) if named is not None else []
    option = command_line.option_read(named.value, facts.module, facts.calls, assigns) if named is not None else None
    word = command_line.word_read(named.value, facts.module, facts.calls, assigns) \
        if named is not None and option is None else None
    if option is None and word is not None:  # (`import_module(sys.argv[1])`)
        script = program.parts[0].path.name
        value = " ".join(["..."] * (word - 1) + ["VALUE"])
        return (f"`{facts.code(call)}` loads the module that the command line's word `sys.argv[{word}]` names, "
                f"which ddpify cannot tell from the code: give it the command line (`ddpify run {script} {value}`, "
                f"or `ddpify convert {script} --args '{value}'`), and that module is read and converted")
    if option is None:
        return f"`{facts.code(call)}` loads code by name, which ddpify does not follow"
    flag, script = option.flags[0] if option.flags else option.dest.upper(), program.parts[0].path.name
    value = f"{flag} VALUE" if option.flags else "VALUE"
    return (f"`{facts.code(call)}` loads the module that `{flag}` names on the command line, which ddpify cannot "
            f"tell from the code: give it the command line (`ddpify run {script} {value}`, or `ddpify convert "
            f"{script} --args '{value}'`), or give `{flag}` a default or choices, and that module is read and "
            "converted")


def loads_by_name(facts: Facts, program: Program) -> Iterator[tuple[cst.CSTNode, str]]:
    """(statement, warning) for a program where nothing trains in the code read but code is loaded
    by name (`DYNAMIC`, not read: `Program.by_name`): at each such call, and at every call of a
    function of the program that makes one, up to the entry, so that the calls on the way to the
    code it loads are named (brainprint's `run.py` -> `build_trainer(cfg)` -> `load_modules(...)`,
    which executes every file of a folder found by `glob`: the trainer, its loaders and saves).

        def load_modules(folder):
            for path in glob.glob(folder + "/*.py"):
                spec = importlib.util.spec_from_file_location("m", path)   # warning
                ...
        def build_trainer(cfg):
            load_modules(FOLDER)                                         # warning: runs load_modules
            return REGISTRY[cfg["trainer"]](cfg)
        trainer = build_trainer(cfg)                                     # warning: runs build_trainer
    """
    dynamic = [c for c in facts.calls
               if (facts.qualify(c.func) or dotted(c.func) or "") in DYNAMIC and loads_unread(facts, program, c)]
    for call in dynamic:
        listing = _listed(facts, call)
        yield facts.statement(call), (f"no training loop in the code ddpify read, and "
                                      f"{loaded_by_name(facts, program, call)}: training code it loads is "
                                      "neither checked nor converted (it runs whole on every process)" + (
                                          f"; it executes each file `{facts.code(listing)}` lists (a registry "
                                          "filled by executing a folder's files): import those modules by name "
                                          "(`from . import name` in the package's `__init__.py`) so that ddpify "
                                          "reads and converts them" if listing is not None else ""))
    pending = [f for f in {facts.scope(c) for c in dynamic} if isinstance(f, cst.FunctionDef)]
    done: set[cst.FunctionDef] = set(pending)
    while pending:
        function = pending.pop()
        for call in facts.calls:
            if function not in facts.user_functions(call):
                continue
            yield facts.statement(call), (f"`{facts.code(call.func)}(...)` runs code loaded by name (in "
                                          f"`{function.name.value}`, or a function it calls): training code it "
                                          "loads is neither checked nor converted (it runs whole on every process)")
            caller = facts.scope(call)
            if isinstance(caller, cst.FunctionDef) and caller not in done:
                done.add(caller)
                pending.append(caller)


def _listed(facts: Facts, call: cst.Call) -> cst.Call | None:
    """The folder listing (`glob.glob(...)`, `os.listdir(...)`) that a loop around `call` walks, handing
    `call` each path it lists (`for path in glob.glob(...)`, also through a list made from it)."""
    for arg in call.args:
        ref = facts.ref(arg.value) if isinstance(arg.value, cst.Name) else None
        for loop in facts.loops_binding(ref) if ref is not None else ():
            for origin in [loop.iter, *facts.origins(loop.iter)]:
                for listing in facts.findall(origin, cst.Call):
                    if facts.qualify(listing.func) in LISTINGS:
                        return listing
    return None


def star_imports(program: Program) -> Iterator[tuple[cst.CSTNode, str]]:
    """(statement, warning) for each `from X import *` whose module ddpify did not find
    (`Program.unresolved_stars`): what it brings may be torch, the model or the training loop,
    and code using it is neither checked nor converted (said whether the file is converted or
    left alone: seq2seq-pytorch's `train.py`, whose torch came through `from utils import *` of a
    module not found, was 'no training loop found', and every process trained alone)."""
    for node, module in program.unresolved_stars():
        yield node, (f"`from {module} import *`: ddpify found no module `{module}` to read (beside the script, "
                     f"in a folder it puts on sys.path, or above it), so the names it brings are unknown: "
                     f"training code that uses them is neither checked nor converted; put its folder on "
                     f"sys.path in the script (sys.path.insert) or convert a copy with the module beside it")


def _built_outside(facts: Facts, obj: cst.BaseExpression, local: set[str]) -> str | None:
    """The callable outside the project (and not a passive library) that built `obj`, if every
    value it may hold comes from a call: `pl.Trainer` for `trainer = pl.Trainer(max_epochs=2)`."""
    for origin in facts.origins(obj):
        qualified = facts.qualify(origin.func) if isinstance(origin, cst.Call) else None
        if qualified is not None and qualified.split(".")[0] not in PASSIVE | local:
            return qualified
    return None


def _training_functions_passed(facts: Facts, call: cst.Call) -> list[str]:
    """Functions of the program that train, passed uncalled to a call that is not theirs
    (`mp.Process(target=train, ...)`, `trainer.register(train_step)`); not a local variable of
    the same name (`super().__init__(root, train=train)` in a data set's `__init__(self, train=True)`)."""
    if not any(isinstance(a.value, cst.Name) and a.value.value in facts.functions for a in call.args) \
            or facts.user_functions(call) and not facts.starts(call) or facts.qualify(call.func) in RUNS_NOW:
        return []
    found = []
    for arg in call.args:
        if _kept_to_be_called_here(facts, call, arg):
            continue
        name = arg.value if isinstance(arg.value, cst.Name) else None
        ref = facts.ref(name, call) if name is not None else None
        if name is not None and ref is not None and ref.scope is facts.module and any(
                facts.trains(f) for f in facts.functions.get(name.value, ()) if facts.enclosing_class(f) is None):
            found.append(name.value)
    return found


def _kept_to_be_called_here(facts: Facts, call: cst.Call, arg: cst.Arg) -> bool:
    """`parser.set_defaults(callback=process_args)`, then `args.callback(args)`: argparse keeps the
    function on the namespace it parses, and the program calls it through that name, in this
    process (a call of an attribute so named, anywhere in the program)."""
    return mt.is_attribute(call.func, "set_defaults") and arg.keyword is not None and any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == arg.keyword.value
        for c in facts.calls_named(arg.keyword.value))


def _training_arguments(facts: Facts, refs: dict[Ref, Model], call: cst.Call) -> list[str]:
    """The arguments of `call` that hold a trained model (`refs`), an optimizer or a DataLoader."""
    return [facts.code(a.value) for a in call.args if _holds_training(facts, refs, a.value)]


def _holds_training(facts: Facts, refs: dict[Ref, Model], expr: cst.BaseExpression) -> bool:
    if dotted(expr) is None:
        return False
    return facts.ref(expr) in refs or any(
        isinstance(o, cst.Call) and (o in facts.optimizers or objects.of(facts).makes_loader(o))
        for o in facts.origins(expr))


def _schedule_of_optimizers(facts: Facts, refs: dict[Ref, Model], call: cst.Call) -> bool:
    """A library's learning-rate schedule built over optimizers only (transformers'
    `get_cosine_schedule_with_warmup(optimizer, ...)`, timm's `create_scheduler(args, optimizer)`,
    `GradualWarmupScheduler(optimizer, ...)`): stepped, it sets the optimizer's learning rate; it is
    handed no model nor loader and trains nothing, so nothing on the training path goes unread."""
    name = (facts.qualify(call.func) or "").rpartition(".")[2].lower()
    held = [a.value for a in call.args if _holds_training(facts, refs, a.value)]
    return "schedul" in name and all(facts.ref(v) not in refs and all(
        isinstance(o, cst.Call) and o in facts.optimizers for o in facts.origins(v)) for v in held)


def _own_method(facts: Facts, refs: dict[Ref, Model], call: cst.Call) -> bool:
    """`model.train()`, `optimizer.step()`: a call on the object itself."""
    return isinstance(call.func, cst.Attribute) and _holds_training(facts, refs, call.func.value)
