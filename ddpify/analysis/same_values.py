"""Which values are the same on every process: one function, `SameValues.same_everywhere`, for
`convert` and `check`, with one refusal of what differs by process (`_per_process`: a rank, by
its words or its role, the global rank, a call that answers per rank; `ddpify.analysis.ranks`).

Two proofs, one a parameter of the other (`wide`), because the two errors cost differently:
- the core (`wide=False`, what the rewrites ask: `agree_stop`, `accumulate_no_sync`, where a
  barrier goes, the test around an evaluation): literals, arguments (`args.x`, parameters every
  caller passes such values), loop and step counters, `len()` of a torch/torchvision loader or
  data set (not one of this process's own share) or of a loader an `Accelerator` prepared, pure
  builtins and `math` of those, the standard library's holders and copies of those
  (`copy.deepcopy(CONFIG)`, updated by shared values), a test against None of a value that is
  None alike on every process (`_none_alike`), a helper that returns `parse_args()`. For `convert` a value
  wrongly thought shared leaves a stop that some processes take (a hang); one wrongly thought to
  differ costs one `agree_on`, a collective every process reaches.
- the wide answer (`wide=True`, what `check` asks, where a value wrongly thought to differ is a
  false alarm): the core, plus what a collective agreed (`dist.all_reduce(loss)`, `agree_on(...)`),
  counters kept on `self`, the last write before the test, what a checkpoint holds (`torch.load`,
  `.resume_or_load(...)`), configuration objects built from the command line, methods of shared
  values, the environment the launcher gives every process but the rank variables, a parameter of
  a function no call of the program reaches or the items of the `args=(...)` a launcher hands it
  (`mp.spawn(main, args=(cfg,))`; what Fabric's `fabric.launch(main, cfg)` hands it), what a model's own method asked nothing answers
  (`model.num_params()`: the replicas are one model), configuration objects (every object a name
  may hold built by a call that says it makes configuration, `Config()`, from values that read no
  rank, clock or draw), what a decorator passes the entry point it wraps (`main()` of `@hydra_main
  def main(args)`), functions and classes of the program as receivers, and `self.x` that the
  program never assigns in a class with a library base (what that base keeps) or that a property
  answers.

Before: the core was `Facts.same_everywhere` and the wide answer `check/same_values.py`, each
with its own refusal of a rank (the core refused any name or attribute whose words say rank and
accepted `self.rank` through its owner where the script assigned it; check asked `Ranks`)."""

from __future__ import annotations

import re
import sys
from functools import cached_property

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref, is_property, param_names, target_names
from ddpify.syntax.matchers import string_value
from ddpify.syntax.names import dotted, rank_word
from ddpify.analysis.distributed import accelerators, metric_collective, metric_object
from ddpify.analysis.lightning import agreed, fabric_launch, fabric_launch_arguments
from ddpify.analysis.loaders import SHARDING_WORDS
from ddpify.analysis.models import ACCELERATE_PREPARE
from ddpify.analysis.objects import LOADER, MODEL, of as objects_of
from ddpify.analysis.ranks import PLACING_KEYWORDS, Ranks, named_read, names_in, rank_key, rank_variable, read_names

# collectives after which the tensor passed first holds the same value on every process
AGREEING = frozenset({"torch.distributed.all_reduce", "torch.distributed.broadcast",
                      "torch.distributed.broadcast_object_list", "torch.distributed.all_gather",
                      "torch.distributed.all_gather_object"})
PER_PROCESS_VARIABLES = frozenset({"SLURM_PROCID", "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                   "CUDA_VISIBLE_DEVICES"})
# methods that read a checkpoint: every process reads the same file

# what every process of a job answers alike
# what an `Accelerator` answers alike on every process: the job's size and type, and whether this
# step syncs the gradients (every process counts the same accumulation steps)
ACCELERATOR_JOB_STATE = frozenset({"sync_gradients", "num_processes", "distributed_type", "gradient_accumulation_steps",
                                   "mixed_precision", "use_distributed", "step"})
# ddpify_runtime's answers that a collective makes the same on every process (rank 0's flag, or any
# rank's, or every rank's)
RUNTIME_AGREEING = frozenset({"ddpify_runtime.agree_on", "ddpify_runtime.agree_any", "ddpify_runtime.agree_all"})
JOB_QUESTIONS = frozenset({"torch.distributed.get_world_size", "torch.distributed.is_initialized",
                           "torch.distributed.is_available", "torch.distributed.get_backend",
                           "torch.cuda.is_available", "torch.cuda.device_count"})

# modules whose functions answer per process (a draw, a clock, a process id, a host name); numpy
# only for its draws (`np.sort`, `np.ceil` compute from their arguments alone)
PER_PROCESS_MODULES = frozenset({"torch", "random", "numpy.random", "time", "datetime", "os", "socket", "uuid",
                                 "secrets", "tempfile", "subprocess", "psutil", "threading", "multiprocessing",
                                 "platform"})

# libraries that call the function they are handed with the command line's values
COMMAND_LINE_RUNNERS = frozenset({"fire.Fire", "typer.run", "jsonargparse.CLI", "jsonargparse.auto_cli"})
# decorators that call the function they decorate with the run's configuration
CONFIG_DECORATORS = frozenset({"hydra.main"})

SHARED_DEPTH = 12  # names followed to prove a value is the same on every process
PURE_BUILTINS = frozenset({"len", "int", "float", "bool", "abs", "min", "max", "round", "range", "sorted", "str", "any", "all",
                           "list", "tuple", "dict", "vars", "enumerate", "zip", "reversed", "map", "filter"})
# calls whose items are those of the plain values they are given (`enumerate(stages)`, `list(args.stages)`),
# in their order (not `set`: the order of its strings differs by process)
PLAIN_ITERATIONS = frozenset({"list", "tuple", "sorted", "reversed", "enumerate", "zip", "dict"})
# the standard library's holders and copies of values: what they hold is what they are given
HOLDERS = frozenset({"types.SimpleNamespace", "argparse.Namespace", "collections.OrderedDict", "copy.copy",
                     "copy.deepcopy"})
# methods whose items are those of the mapping or string they are called on
PLAIN_METHODS = frozenset({"items", "keys", "values", "split", "splitlines"})
# methods that put their arguments into the container they are called on
FILLING = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "setdefault"})
# a list's methods that add or take one item, and those that leave its length as it is
ONE_ITEM = frozenset({"append", "insert", "appendleft", "pop", "popleft", "remove"})
LENGTH_KEEPING = frozenset({"index", "count", "copy", "sort", "reverse"})
# builtins that read a list they are given and change nothing of it
LIST_READERS = PURE_BUILTINS | {"sum", "print", "iter", "next"}
# what reads a list of numbers into a figure or an array, leaving it as it is (`np.mean(losses_history)`)
NUMERIC_READERS = frozenset({f"numpy.{n}" for n in ("mean", "median", "std", "var", "sum", "max", "min", "average",
                                                     "array", "asarray", "stack", "concatenate")}
                            | {f"statistics.{n}" for n in ("mean", "median", "stdev", "pstdev", "fmean")}
                            | {"torch.tensor", "torch.stack", "torch.cat"})
# what a folder holds: the same for every process of the job, as a file `torch.load` reads is
FOLDER_LISTINGS = frozenset({"os.listdir", "glob.glob", "glob.iglob"})
# a call that reads saved state: a method or a function ddpify does not read, named so
LOAD_WORD = re.compile(r"(?:^|_)(?:load|resume|restore)(?:_|$)")
# a call that builds or returns the run's configuration, by a word of its name or its class's
# (`Config()`, `create_config_instance(...)`, `OmegaConf.merge(...)`, `get_args()`, `HParams(...)`)
# the parses of transformers' `HfArgumentParser`: the command line (or a file it names) read into dataclasses
PARSES_INTO_DATACLASSES = ("parse_args_into_dataclasses", "parse_yaml_file", "parse_json_file", "parse_dict")
CONFIGURING = re.compile(r"conf(ig(uration)?)?s?|cfgs?|settings|options|hparams|hyper_?param(eter)?s|arg(ument)?s",
                         re.I)
DATA_WORD = re.compile(r"(sampler|loader|dataset)s?$", re.I)  # what `len()` of is the same on every process
WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+")  # `DictConfig`: Dict, Config


class SameValues:
    """The shared-value questions of one program, asked of its facts and its `ranks`."""

    def __init__(self, facts: Facts, ranks: Ranks) -> None:
        self.facts, self.ranks = facts, ranks
        self._guarding: set[Ref] = ranks.cycles.following()  # the names `_bound_on_some_ranks` is answering
        self._core_names: dict[Ref, bool] = {}  # `_core_name`'s answers in the question under way (`_core_of`)
        self._sharding: dict[cst.ClassDef, bool] = {}  # `_mentions_sharding`
        self._none_asked: set[object] = set()  # the names and attributes `_none_alike` is answering
        self._by_object: dict[cst.Attribute, bool] = {}  # `_agreed_by_its_object`

    @cached_property
    def agreed(self) -> frozenset[Ref]:
        """The names and attributes whose value a collective made the same on every process
        (`dist.all_reduce(loss)`), each in its scope (`Facts.ref`): a name of that spelling in
        another function (a parameter `elapsed` beside `dist.all_reduce(elapsed)` in `train`) is
        another variable. A parameter agreed in place, never rebound before the collective, is the
        caller's object: what each call passes it is agreed too (`sync(stop)` of `def sync(flag):
        dist.broadcast(flag, 0)`), through helpers that pass it on. What an agreed value flows into
        otherwise (a return, an assignment, a parameter it is passed to) the questions follow as
        they follow any value (`_shared`).

        Before, the collective's argument was kept by its spelling alone (`agreed_names`), and a
        name spelled alike anywhere was taken as agreed: `def out_of_time(elapsed): return elapsed
        > limit`, called with this process's own `time.time() - started`, passed for agreed because
        `mean_elapsed` all-reduced a tensor it called `elapsed`, and the stop it decided went
        unreported (DDP005; with the parameter spelled `seconds` it was reported)."""
        f = self.facts
        found: dict[Ref, None] = {}
        work = [(ref, c) for c in f.calls_to(*AGREEING) if c.args and (ref := f.ref(c.args[0].value)) is not None]
        while work:
            ref, site = work.pop()
            if ref in found:
                continue
            found[ref] = None
            if isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope) and not any(
                    not isinstance(stmt, cst.AugAssign) and f.before(stmt, site) for _, _, stmt in f.writes(ref)):
                work += [(passed, call) for call in f.call_sites(ref.scope)
                         if isinstance(arg := f.argument_for(call, ref.scope, ref.name), (cst.Name, cst.Attribute))
                         and (passed := f.ref(arg)) is not None]
        return frozenset(found)

    def holds_agreed(self, node: cst.CSTNode, part: bool = False) -> bool:
        """Is `node` a name or attribute a collective agreed (`agreed`)? `part`: or an attribute of
        one (`found.item` of an agreed `found`)."""
        ref = self.facts.ref(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        return ref is not None and (ref in self.agreed or part and any(
            a.scope is ref.scope and ref.name.startswith(a.name + ".") for a in self.agreed)) or (
            isinstance(node, cst.Attribute) and self._agreed_by_its_object(node))

    def _agreed_by_its_object(self, node: cst.Attribute) -> bool:
        """`es.early_stop`, read on an object of the program's classes (`es = EarlyStop(...)`) whose
        own methods agree that attribute by a collective after each store of it (`self.early_stop =
        torch.tensor([stop])` on rank 0, `torch.tensor([0])` on the others, then
        `dist.broadcast(self.early_stop, src=0)`): every store of it in the class is followed, in
        its method, by such a collective that is a statement of the method's own body (it runs on
        every path after the store), but for a shared value `__init__` stores (`self.early_stop =
        False`); nothing outside the class stores it. Between the method's calls the object holds
        the value the collective left, the same on every process. Not where the collective runs on
        some paths only (`if self.sync: dist.broadcast(...)`), nor where another method stores the
        attribute and agrees nothing."""
        known = self._by_object.get(node)
        if known is None:
            known = self._by_object[node] = self._agreed_by_its_object_afresh(node)
        return known

    def _agreed_by_its_object_afresh(self, node: cst.Attribute) -> bool:
        f = self.facts
        attr = node.attr.value
        if dotted(node.value) in (None, "self") or any(
                isinstance(t, cst.Attribute) and t.attr.value == attr and not mt.is_name(t.value, "self")
                for t, _, _ in f.assigns):
            return False
        classes = f._instances_of(node.value)
        if not isinstance(classes, list) or not classes:
            return False
        for cls in classes:
            ref = Ref(f._root_class(cls), f"self.{attr}")
            stores = f.writes(ref)
            if ref not in self.agreed or not stores:
                return False
            syncs = [c for c in f.calls_to(*AGREEING) if c.args and f.ref(c.args[0].value) == ref]
            for _, value, stmt in stores:
                method = f.scope(stmt)
                if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__" and self._core_of(value):
                    continue
                if not any(f.scope(c) is method and f.before(stmt, c) and f.parent(f.statement(c)) is method.body
                           for c in syncs):
                    return False
        return True

    def same_everywhere(self, test: cst.CSTNode, wide: bool = True) -> bool:
        """Is `test` the same on every process? `wide=False`: the core alone (literals, arguments,
        counters, sizes of data, pure functions of those), what `convert` asks, where a value
        wrongly proven shared is a hang; `wide=True`: the core, plus values agreed by a collective
        (`agree_on(...)`, `agree_any(...)`, a tensor passed to `dist.all_reduce` before; not a test that also reads
        a rank beside it, `local_rank <= 0 and found.item() != 0`), attributes every
        assignment of which is shared (`self.iter_num = 0` ... `self.iter_num += 1`), objects of
        the program's classes built from shared values (a config dataclass, also by its own
        classmethod: `cls(**yaml_values)`), methods of shared
        values (`args.path.split("-")`), and what a checkpoint holds (`torch.load` reads the
        same file on every process), what `check` asks. Both refuse the same values first
        (`_per_process`)."""
        f = self.facts
        if isinstance(test, (cst.Name, cst.Attribute)) and self._received(test):
            return True  # `self.stop = flags[0]` after `dist.broadcast_object_list(flags, 0)`, whatever rank 0 sent
        if self._reads_rank_by_role(test) or self._set_from_rank_by_caller(test):
            return False  # `gpu == 0` where `gpu` is handed to init_process_group as the rank
        if self._core_of(test):
            return True
        if not wide:
            return False
        if self._shared(test, frozenset()):
            return True
        # a value agreed by a collective makes the test the same everywhere where it reads no
        # process's own value beside it (`local_rank <= 0 and (found.item() != 0 or reload)` after
        # `all_reduce(found)` is still a rank test)
        return (any(f.qualify(c.func) in RUNTIME_AGREEING for c in f.findall(test, cst.Call)) or any(
            self.holds_agreed(n) for n in names_in(f, test))) and not any(
            self._per_process(n) or self.ranks.rank_dependent(n) for n in self._past_agreed_objects(names_in(f, test))
            if not self.holds_agreed(n, part=True))

    def _past_agreed_objects(self, nodes: list[cst.CSTNode]) -> list[cst.CSTNode]:
        """`nodes` less the attributes agreed by their object (`_agreed_by_its_object`) and the
        object they are read on: `es` of `es.early_stop` is built from the rank (`EarlyStop(rank=
        rank)`), but the test reads only the agreed flag it keeps."""
        f = self.facts
        inside = {id(m) for n in nodes if isinstance(n, cst.Attribute) and self._agreed_by_its_object(n)
                  for m in (n, *f.findall(n, (cst.Name, cst.Attribute)))}
        return [n for n in nodes if id(n) not in inside]

    def _per_process(self, node: cst.CSTNode) -> bool:
        """The one refusal of both answers: a value each process has its own of. A name or
        attribute that is a rank by its words or its role (`args.local_rank`, `self.rank`, `gpu`
        handed to `init_process_group(rank=gpu)`; a name the script assigns is judged by what it
        holds instead), a property that returns a rank test, the global rank (`dist.get_rank()`,
        `int(os.environ["RANK"])`, a name holding one), a call whose name says rank
        (`is_main_process()`) or that returns a rank test, a name that only some ranks set (`saver =
        None` ... `if rank == 0: saver = Saver()`; `is_best = False` ... `if rank == 0: is_best =
        better(acc)`, tested for its truth) or a flag the rank sets (`Ranks.flag_set_by_rank`),
        an item of the list the rank is taken from (`opt.gpu_ranks[device_id]`, `Ranks.rank_item`),
        an attribute read by its name that holds a rank (`getattr(opts, "ddp.rank", 0)` where each
        worker did `setattr(opts, "ddp.rank", i)`, `Ranks.rank_dependent`: not a getattr of shared
        arguments, the same everywhere), an entry whose literal key is a rank's name (`params["world_rank"]`,
        `cfg.get("local_rank")`) that nothing the program writes shows otherwise (`Ranks.rank_dependent`:
        `params = {"world_rank": 0}` holds a constant; decision 0229).

        Before, the key was asked only of the test itself (`_set_from_rank_by_caller`): a name or
        attribute assigned from it (`self.isRank0 = params["world_rank"] == 0` in a trainer whose
        caller fills `params["world_rank"] = int(os.environ["RANK"])` in another file) was judged by
        `params`, a parameter no call of the file reaches, and passed for shared: `if self.isRank0:`
        was no rank test and every save under it a write of every rank (DDP006 x9,
        balewski/srgan_cosmo2d, set 27)."""
        if self.ranks.rank_item(node) or named_read(node) is not None and self.ranks.rank_dependent(node):
            return True
        if isinstance(node, (cst.Subscript, cst.Call)) and rank_key(node) and self.ranks.rank_dependent(node):
            return True
        return isinstance(node, (cst.Name, cst.Attribute)) and (
            self.ranks.set_on_some_ranks(node, falsy=self.ranks.truth_tested(node))
            or self.ranks.flag_set_by_rank(node)) or isinstance(
            node, (cst.Name, cst.Attribute)) and (self.ranks.rank_name(node) or isinstance(
            node, cst.Attribute) and self.ranks.property_rank_test(node)) and not (
                isinstance(node, cst.Name) and self._assigned(node)) \
            or self.ranks.is_global_rank(node) or isinstance(node, cst.Call) and (
                rank_word(node.func) or self.ranks.returns_rank_test(node, 2))

    # the core (`wide=False`) -------------------------------------------------------------------
    def _core_of(self, node: cst.CSTNode) -> bool:
        """`_core` of a question asked afresh. Its names' answers are kept until it ends, each
        name answered once (`_core_name`): the question is "is every value it reaches shared", so
        a name met again adds nothing, whether it is being proven (a cycle) or was proven. Kept
        no longer: an answer proven while a cycle was assumed shared holds only inside it. A
        question asked inside another (through `_per_process`) keeps its own."""
        outer, self._core_names = self._core_names, {}
        try:
            return self._core(node, frozenset())
        finally:
            self._core_names = outer

    def _core(self, node: cst.CSTNode, proving: frozenset) -> bool:
        """Computed only from values every process holds alike? Anything not listed in
        `same_everywhere` (a loss, a metric, a random draw, a method call) is taken to differ.
        Anything else is as shared as the syntax below it (`syntax_children`): before, LibCST's
        `children`, whose whitespace, commas and parentheses were each asked the rank questions
        (`_per_process`) and then their own children, to answer True; now they are not asked."""
        if self._per_process(node):
            return False  # `args.local_rank`: an argument, but each process is given its own
        if isinstance(node, cst.Name):
            return self._core_name(node, proving)
        if isinstance(node, cst.Attribute) and mt.is_name(node.value, "self"):
            return self._core_kept(node, proving)
        if isinstance(node, cst.Subscript) and (items := self._display_items(node)) is not None:
            return all(self._core(item, proving) for item in items)
        if isinstance(node, cst.Subscript) and not all(self._core(v, proving) for v in self.ranks.items_stored(node)):
            return False  # `flags["writer"]` after `flags[k] = v and self.enable` at every key: what is stored counts
        if isinstance(node, cst.Attribute) and self._core_module_attribute(node, proving):
            return True  # `cfg.val_freq` of `from config import config as cfg`, bound once to `1` there
        if isinstance(node, cst.Attribute):  # `args.lr`: as shared as `args`, and as what the program sets it to
            return self._core(node.value, proving) and all(
                self._core(value, proving | {("set", id(value))}) for value in self._set_attribute(node)
                if ("set", id(value)) not in proving)
        if isinstance(node, cst.Arg):  # not the keyword's name
            return self._core(node.value, proving)
        if isinstance(node, cst.Call):
            return self._core_call(node, proving)
        if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return False
        if isinstance(node, cst.Comparison) and (held := _tested_for_none(node)) is not None and self._none_alike(held):
            return True  # `testloader != None` of the loader every caller hands it: True on every process
        return all(self._core(child, proving) for child in mt.syntax_children(node))

    def _never_none(self, expr: cst.BaseExpression, depth: int = 4) -> bool:
        """Is `expr` an object on every path, never None, so that a test of it against None is the
        same on every process however its object differs: a construction (`DataLoader(...)`, an
        instance of a class of the program, a library's class: a capitalised name), a display or a
        literal other than None, the item of a dict display under a literal key that holds one
        (`loaders["test"]` of `return {"test": test_loader}`), a name every write of which is one
        (a parameter: what every call passes, its default where a call passes nothing), an attribute
        of `self` that only its class sets, each time to one (`self.val_loader = val_loader` in
        `__init__`). Not a function's return (`re.match(...)`, `d.get(k)` may be None), another
        attribute, a name a loop or an unpacking binds, nor one written on some paths to None
        (`saver = Saver() if rank == 0 else None`: a conditional is none of these)."""
        f = self.facts
        if isinstance(expr, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.Integer, cst.Float, cst.SimpleString,
                             cst.ConcatenatedString, cst.FormattedString)):
            return True
        if isinstance(expr, cst.Call):
            return f.builds(expr) or (f.qualify(expr.func) or dotted(expr.func) or "").rpartition(".")[2][:1].isupper()
        if depth == 0:
            return False
        if isinstance(expr, cst.Subscript):
            items = self._display_items(expr)
            return items is not None and all(self._never_none(item, depth - 1) for item in items)
        if isinstance(expr, cst.Attribute) and mt.is_name(expr.value, "self"):  # `self.val_loader`
            cls = f.enclosing_class(expr)
            stores = [(t, v, stmt) for t, v, stmt in f.assigns if isinstance(t, cst.Attribute) and t.attr.value == expr.attr.value]
            mine = [v for t, v, stmt in stores if mt.is_name(t.value, "self") and f.enclosing_class(stmt) is cls]
            return cls is not None and bool(mine) and len(mine) == len(stores) and all(
                self._never_none(v, depth - 1) for v in mine)
        ref = f.ref(expr) if isinstance(expr, cst.Name) else None
        if ref is None or f.unpacked_from(ref) or f.loops_binding(ref):
            return False
        writes: list[cst.BaseExpression | None] = [v for _, v, _ in f.writes(ref)]
        if isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope):
            sites = f.call_sites(ref.scope)
            default = next((p.default for p in (*ref.scope.params.params, *ref.scope.params.kwonly_params)
                            if p.name.value == ref.name), None)
            writes += [f.argument_for(c, ref.scope, ref.name) or default for c in sites]
            if not sites:
                return False
        return bool(writes) and all(v is not None and self._never_none(v, depth - 1) for v in writes)

    def _none_alike(self, expr: cst.BaseExpression, depth: int = 4) -> bool:
        """Is `expr` None on every process or an object on every process, so that a test of it
        against None is the same on every process: an object on every path (`_never_none`), the
        literal None, a name every write of which is one of those at a statement every process
        runs alike (not under a test that may differ, `_branched`; a parameter: what each call
        passes, its default where a call passes nothing, at a call every process makes), an
        attribute of `self` that only its class sets, each time to such a value, in `__init__`
        (what each construction hands it): a store in another method may run on some processes only.

        Before, the core asked "never None": `Trainer(net, val_loader)` and `Trainer(net)` in one
        program, `self.val_loader = val_loader` tested by `if self.val_loader is not None:` around
        the validation, differed, and the validation was kept whole, though every process makes
        the same two constructions (decision 0174's leftover; 0191). Still refused: a conditional
        (`saver = Saver() if rank == 0 else None`), a write under a rank test, a function's return,
        a None stored by another method (`def drop(self): self.val_loader = None`), or one stored in
        `__init__` beside an object another method stores (`def setup(self): self.val_loader =
        DataLoader(...)`)."""
        f = self.facts
        if mt.is_name(expr, "None") or self._never_none(expr, depth):
            return True
        if depth == 0 or self._per_process(expr):
            return False
        if isinstance(expr, cst.Attribute) and mt.is_name(expr.value, "self"):
            cls = f.enclosing_class(expr)
            stores = [(t, v, stmt) for t, v, stmt in f.assigns if isinstance(t, cst.Attribute) and t.attr.value == expr.attr.value]
            mine = [(v, stmt) for t, v, stmt in stores if mt.is_name(t.value, "self") and f.enclosing_class(stmt) is cls]
            key = (cls, expr.attr.value)
            if cls is None or key in self._none_asked or not mine or len(mine) != len(stores):
                return False
            self._none_asked.add(key)
            try:
                return all(_in_init(f, stmt) and not self._branched(stmt) and self._none_alike(v, depth - 1)
                           for v, stmt in mine)
            finally:
                self._none_asked.discard(key)
        ref = f.ref(expr) if isinstance(expr, cst.Name) else None
        if ref is None or ref in self._none_asked or f.unpacked_from(ref) or f.loops_binding(ref):
            return False  # asked again while answering it (`if loader is None: loader = ...`): not proven
        writes: list[tuple[cst.BaseExpression | None, cst.CSTNode]] = [(v, stmt) for _, v, stmt in f.writes(ref)]
        if isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope):
            sites = f.call_sites(ref.scope)
            default = next((p.default for p in (*ref.scope.params.params, *ref.scope.params.kwonly_params)
                            if p.name.value == ref.name), None)
            writes += [(f.argument_for(c, ref.scope, ref.name) or default, c) for c in sites]
            if not sites:
                return False
        self._none_asked.add(ref)
        try:
            return bool(writes) and all(v is not None and not self._branched(stmt) and self._none_alike(v, depth - 1)
                                        for v, stmt in writes)
        finally:
            self._none_asked.discard(ref)

    def _core_kept(self, node: cst.Attribute, proving: frozenset) -> bool:
        """`self.args` whose every write in its class is shared (`self.args = args` in `__init__`,
        each construction handing it the parsed command line), and that no code outside the class
        sets (`trainer.args = ...`): a trainer's copy of its arguments, read in its loop
        (`if i % self.args.eval_interval == 0:`)."""
        f = self.facts
        ref = f.ref(node)
        if ref is None or any(isinstance(t, cst.Attribute) and t.attr.value == node.attr.value
                              and not mt.is_name(t.value, "self") for t, _, _ in f.assigns):
            return False
        if ref in proving:
            return True
        if ref not in self._core_names:
            self._core_names[ref] = self._core_ref(ref, proving | {ref})
        return self._core_names[ref]

    def _display_items(self, node: cst.Subscript) -> list[cst.BaseExpression] | None:
        """`d["args"]` where every value `d` may hold is a dict display with that key (`trainer_dict =
        {"args": args, "logger": logger}`, handed to `Trainer(trainer_dict)`): each display's item
        under it; None where the key is no literal, or some value is anything else."""
        key = self._display_key(node)
        if key is None or not dotted(node.value) or any(
                isinstance(t, cst.Subscript) and self._display_key(t) == key for t, _, _ in self.facts.assigns) \
                or self.ranks.items_stored(node):
            return None  # `d["args"] = other`: set again somewhere; `d[k] = v and enable` at every key
        items = []
        for origin in self.facts.origins(node.value):
            found = [e.value for e in origin.elements if isinstance(e, cst.DictElement) and
                     isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == key] \
                if isinstance(origin, cst.Dict) else []
            if len(found) != 1:
                return None
            items += found
        return items or None

    @staticmethod
    def _display_key(node: cst.Subscript) -> object:
        """The literal string key of `d["args"]`, or None."""
        index = node.slice[0].slice if len(node.slice) == 1 else None
        return index.value.evaluated_value if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) else None

    def _core_call(self, call: cst.Call, proving: frozenset) -> bool:
        """A pure function of shared values (`int(x)`, `math.ceil(x)`), a holder or copy of them
        (`copy.deepcopy(CONFIG)`, `SimpleNamespace(**cfg)`), or `len(train_loader)`.

        Before, the holders were the wide answer's only: `cfg = copy.deepcopy(CONFIG)` then
        `cfg.update(override)` for each run of a grid differed for the core, and an evaluation
        gated by `cfg["eval_every"]` was kept whole (decision 0174's fx3; 0191)."""
        f = self.facts
        name = dotted(call.func)
        if name == "len" and len(call.args) == 1 and (self._sized_data(call.args[0].value)
                                                      or self._counted_length(call.args[0].value, proving)):
            return True
        if name in PURE_BUILTINS or (f.qualify(call.func) or "").startswith("math.") or f.qualify(call.func) in HOLDERS:
            return all(self._core(a, proving) for a in call.args)
        helpers = [] if f.builds(call) else f.user_functions(call)  # `args = get_args()`
        if helpers and all(_selects_an_argument(f, h) for h in helpers):  # `default(num_steps, len(dataset))`
            return all(self._core(a, proving) for a in call.args)
        return bool(helpers) and all(self._returns_arguments(h) for h in helpers)

    def _returns_arguments(self, func: cst.FunctionDef) -> bool:
        """Does every `return` of `func` return `parser.parse_args()`, or a name of `func` that
        holds nothing else (`args = parser.parse_args()` ... `return args`; what it then sets on
        an attribute, `args.rand_seed = random.randint(...)`, is asked of that attribute)?"""
        f = self.facts
        returns = f.returns_in(func)

        def parsed(value: cst.BaseExpression | None) -> bool:
            if value is None or mt.is_parse_args(value):
                return value is not None
            ref = f.ref(value) if isinstance(value, cst.Name) else None
            if ref is None or ref.scope is not func:
                return False
            writes = f.writes(ref)
            return bool(writes) and not f.unpacked_from(ref) and all(mt.is_parse_args(v) for _, v, _ in writes)
        return bool(returns) and all(parsed(r.value) for r in returns)

    def _set_attribute(self, node: cst.Attribute) -> list[cst.BaseExpression]:
        """What the program assigns to the attribute `node` reads, on the object it reads it from:
        each `x.attr = value` of that attribute's name whose owner comes from where `node`'s does
        (`Facts.origins`: `args = get_args()` in one module, `args.seed = random.randint(...)` in
        the function that made it). An attribute set to a draw, a rank or a clock differs however
        shared the object it hangs on."""
        f = self.facts
        by_name = f.__dict__.get("_set_attributes")
        if by_name is None:
            by_name = f.__dict__["_set_attributes"] = {}
            for target, value, _ in f.assigns:
                if isinstance(target, cst.Attribute) and dotted(target.value) not in (None, "self"):
                    by_name.setdefault(target.attr.value, []).append((target, value))
        candidates = by_name.get(node.attr.value, [])
        if not candidates or dotted(node.value) in (None, "self"):
            return []
        mine = set(map(id, f.origins(node.value)))
        return [value for target, value in candidates
                if target is not node and mine & set(map(id, f.origins(target.value)))]

    def _sized_data(self, expr: cst.BaseExpression) -> bool:
        """A loader or data set from torch or torchvision (`loader.dataset` too), or an item of what
        an `Accelerator`'s `prepare` handed back (`prepared[2]`, whatever else the name held first
        is `None`): its length is the same on every process, since a sharded loader gives each
        process an equal share (a `DistributedSampler`'s padded one, `prepare`'s even batches) and
        an unsharded one the whole data set. Not a loader or data set built from this process's
        own share of the data (`DataLoader(Shards(files[rank::world]))`, `Subset(data,
        ids[rank::world])`): the shares differ by one where the data does not divide."""
        f = self.facts
        if isinstance(expr, cst.Attribute) and expr.attr.value == "dataset":
            expr = expr.value
        origins = [o for o in f.origins(expr) if not (isinstance(o, cst.Name) and o.value == "None")]
        return bool(origins) and all(isinstance(o, cst.Call) and (
            (f.qualify(o.func) or "").startswith(f.DATA_MODULES) and not self._own_share(o)
            or self._whole_data_set(o)
            or isinstance(o.func, cst.Attribute) and o.func.attr.value in ACCELERATE_PREPARE
            and bool(accelerators(f, o.func.value))) for o in origins)

    def _whole_data_set(self, call: cst.Call) -> bool:
        """A data set of a class of the program, sized by its `__len__`, whose code never mentions
        ranks, world sizes or shards (`SHARDING_WORDS`), built from nothing that reads the rank
        (`LibriDataset(val_X, val_y)` over features every process reads alike): each process holds
        the same data, so its length is the same."""
        f = self.facts
        cls = f.classes.get(dotted(call.func) or "")
        return cls is not None and any(isinstance(s, cst.FunctionDef) and s.name.value == "__len__" for s in cls.body.body) \
            and not self._mentions_sharding(cls) and not any(self.ranks.rank_dependent(a.value, 3) for a in call.args)

    def _mentions_sharding(self, cls: cst.ClassDef) -> bool:
        """Does the code of `cls` mention ranks, world sizes or shards (`SHARDING_WORDS`)? Printed
        once per class: each save's test asks of each data set that sizes it."""
        if cls not in self._sharding:
            self._sharding[cls] = SHARDING_WORDS.search(self.facts.code(cls)) is not None
        return self._sharding[cls]

    def _own_share(self, data: cst.Call) -> bool:
        """Does a torch loader or data set hold this process's own share of the data: the data set
        a loader is given (its sampler may read the rank: a `DistributedSampler`'s shares are of
        one length), or any data a data set is built from, reads the rank? Asked of sizes only
        (`_sizes`): a data set built with `seed=42 + rank` draws other samples on each process, as
        many of them (`MaskLevelDatasetDummy(data, seed=42 + rank, count=20)`, `len(loader)` the same)."""
        name = self.facts.qualify(data.func) or ""
        if name.endswith("Sampler"):
            return False
        given = [a.value for a in data.args if a.keyword is None or a.keyword.value in ("dataset", "indices")]
        if name.endswith("DataLoader"):
            given = given[:1]
        return any(self._sizes.rank_dependent(g, 3) for g in given)

    @cached_property
    def _sizes(self) -> Ranks:
        """The rank questions asked of a size (`Ranks(sizes_only=True)`), apart from `self.ranks`."""
        return Ranks(self.facts, shared=self.ranks._proven_shared, sizes_only=True)

    def _counted_length(self, expr: cst.BaseExpression, proving: frozenset) -> bool:
        """A list the program writes out (`val_window = []`) whose length only statements that every
        process runs alike change, one item at a time (`.append(v)`, `.insert(i, v)`, `.pop()`,
        `del window[0]`), under tests and loops of shared values, as a counter `n += 1` is: its
        length counts, whatever its items hold (a sliding window of validation losses), so `len(...)`
        of it is the same on every process. Not a list handed on (returned, bound to another name,
        given to a call that is no builtin reader, or to a function of the program that changes it),
        extended by another (`.extend`, `+=`) or changed where a test of values that differ decides."""
        f = self.facts
        ref = f.ref(expr) if isinstance(expr, cst.Name) else None
        if ref is None or ("len", ref) in proving:
            return ref is not None  # `if len(window) >= n: del window[0]`: shared when every other change is
        writes = f.writes(ref)
        changes = [stmt for _, _, stmt in writes]
        if not writes or f.unpacked_from(ref) or f.loops_binding(ref) or not all(
                isinstance(stmt, cst.Assign) and isinstance(value, (cst.List, cst.Tuple)) and
                not any(isinstance(e, cst.StarredElement) for e in value.elements) for _, value, stmt in writes):
            return False
        for use in f.references(f.module, ref.name):
            if f.ref(use) != ref or any(use is target for target, _, _ in writes):
                continue
            changed = _length_change(f, use)
            if changed is False:
                return False
            if isinstance(changed, cst.CSTNode):
                changes.append(changed)
        proving = proving | {("len", ref)}
        return all(f.scope(stmt) is ref.scope and self._run_alike(stmt, proving) for stmt in changes)

    def _run_alike(self, stmt: cst.CSTNode, proving: frozenset) -> bool:
        """Does every process run `stmt` as often as the others: the tests of the `if`s and `while`s
        around it in its function, and of those that skip the rest of a loop's round before it
        (`continue`) or leave it (`break`, `return`), read shared values only, each `for` around it
        iterates a count, a loader or shared values, and no `except` holds it? A `break` of a loop that
        trains is left out: agree-stop agrees it, so every process leaves in the same round."""
        f = self.facts
        exits = (cst.Continue, cst.Return)
        for anc in f.ancestors(stmt):
            if isinstance(anc, (cst.FunctionDef, cst.Module)):
                return True
            if isinstance(anc, (cst.ExceptHandler, cst.IfExp, cst.Lambda)) or \
                    isinstance(anc, (cst.If, cst.While)) and not self._core(anc.test, proving):
                return False
            if isinstance(anc, cst.For) and not (mt.is_counting(anc.iter) or self._sized_data(mt.strip_iteration(anc.iter))
                                                 or self._plain(anc.iter) and self._core(anc.iter, proving)):
                return False
            if isinstance(anc, (cst.For, cst.While)) and not all(
                    self._core(test.test, proving) for skip in f.findall(anc.body, exits if f.trains(anc) else (*exits, cst.Break))
                    if f.before(skip, stmt) for test in f.ancestors(skip) if isinstance(test, cst.If) and f.is_inside(test, anc)):
                return False
        return True

    def _core_module_attribute(self, node: cst.Attribute, proving: frozenset) -> bool:
        """`cfg.val_freq` read off a module of the program (`from config import config as cfg`,
        `Facts.module_attribute`): the name that module binds at its top level (`val_freq = 1` in
        `config/config.py`), as shared as every value bound to it there (`_core_ref`: a literal, not
        under a test that may differ) and every value the program sets the attribute to
        (`cfg.val_freq = args.val_freq`). Before, the module object itself was asked, a name an
        import binds and no assignment, and `if epoch % cfg.val_freq == 0:` around a validation
        was a test that may differ between processes: the evaluation was kept whole
        (rshwndsz/nuclei-segmentation, set 30c). Still refused: a top-level value drawn, read off
        the rank or the clock (`val_freq = int(os.environ["LOCAL_RANK"]) + 1`), or bound in a branch."""
        ref = self.facts.module_attribute(node)
        if ref is None:
            return False
        if ref not in proving:
            if ref not in self._core_names:
                self._core_names[ref] = self._core_ref(ref, proving | {ref})
            if not self._core_names[ref]:
                return False
        return all(self._core(value, proving | {("set", id(value))}) for value in self._set_attribute(node)
                   if ("set", id(value)) not in proving)

    def _core_name(self, name: cst.Name, proving: frozenset) -> bool:
        f = self.facts
        if name.value in ("True", "False", "None") or self._counter_target(name):
            return True
        ref = f.ref(name)
        if name.value == "__name__" and (ref is None or not f.writes(ref)):
            return True  # `if __name__ == "__main__":`: the module's name, alike on every process
        if ref is None:
            return False
        if ref in proving:  # `step = step + 1`: shared when every other write is
            return True
        if ref not in self._core_names:
            self._core_names[ref] = self._core_ref(ref, proving | {ref})
        return self._core_names[ref]

    def _core_ref(self, ref: Ref, proving: frozenset) -> bool:
        f = self.facts
        if isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope):
            # a parameter the function sets from the rank itself (`if local_rank is None: local_rank =
            # int(os.environ["SLURM_LOCALID"])`) holds each process's own, whatever the callers pass
            return self._core_parameter(ref.scope, ref.name, proving) and not any(
                self.ranks.rank_dependent(v) for _, v, _ in f.writes(ref))
        writes = [(v, s) for _, v, s in f.writes(ref)]
        loops = self._loop_targets(ref)  # `stage` of `for stage in stages:`
        return bool(writes or loops) and not f.unpacked_from(ref) and all(
            self._plain(lp.iter) and self._core(lp.iter, proving) for lp in loops) and all(
            not self._branched(s, proving) and (mt.is_parse_args(v) or self._core(v, proving)) for v, s in writes) \
            and all(self._core(a.value, proving) for a in self._filled_with(ref))  # `losses.append(loss.item())`

    def _counter_target(self, name: cst.Name) -> bool:
        """`i` in `for i in range(...)`, `for i in itertools.count()`, `for i, b in enumerate(...)`."""
        for anc in self.facts.ancestors(name):
            if isinstance(anc, cst.For) and name.value in self._counters(anc):
                return True
        return False

    def _counters(self, loop: cst.For) -> set[str]:
        """The names a loop binds to a count: all its targets over `range(...)` or
        `itertools.count()`, the index over `enumerate(...)`, whether the loop's target unpacks it
        (`for i, batch in enumerate(loader)`) or a statement of its body unpacks the loop's
        variable (`for step_data in train_iter:` ... `step, (x, y) = step_data`).

        Before, only the target's own unpacking counted: `step` unpacked in the body was a value
        of the batch, one that can differ by process, and `if step >= n_steps: break` was a stop
        some processes take (DDP005; EricZhang1412/Training-data-driven-V1-model, set 24)."""
        counting = isinstance(loop.iter, cst.Call) and self.facts.qualify(loop.iter.func) == "itertools.count"
        if counting or mt.is_counting(loop.iter):
            return {n.value for n in target_names(loop.target)}
        if not self._enumerated(loop.iter):
            return set()
        if isinstance(loop.target, cst.Tuple):
            first = loop.target.elements[0].value if loop.target.elements else None
            return {first.value} if isinstance(first, cst.Name) else set()
        if not isinstance(loop.target, cst.Name):
            return set()
        variable = self.facts.ref(loop.target)
        return {target.elements[0].value.value for target, value, stmt in self.facts.assigns
                if isinstance(target, cst.Tuple) and target.elements and isinstance(target.elements[0].value, cst.Name)
                and isinstance(value, cst.Name) and value.value == loop.target.value
                and self.facts.is_inside(stmt, loop.body) and self.facts.ref(value) == variable}

    def _enumerated(self, expr: cst.BaseExpression, depth: int = 3) -> bool:
        """`enumerate(...)`, also inside a progress bar or held in a name first (`pbar =
        tqdm(enumerate(loader))` ... `for i, batch in pbar`), where every value the name may hold
        is so or a count (`train_iter = range(n)` in one branch, `enumerate(loader)` in the
        other): the first item of each pair counts."""
        if mt.is_call_of(expr, "enumerate"):
            return True
        if isinstance(expr, cst.Call) and (dotted(expr.func) or "").split(".")[-1] in ("tqdm", "iter") and expr.args:
            return depth > 0 and self._enumerated(expr.args[0].value, depth - 1)
        ref = self.facts.ref(expr) if isinstance(expr, cst.Name) and depth else None
        sources = self.facts.sources(ref) if ref is not None else []
        return bool(sources) and any(not mt.is_counting(s) for s in sources) and all(
            mt.is_counting(s) or self._enumerated(s, depth - 1) for s in sources)

    def _core_parameter(self, func: cst.FunctionDef, param: str, proving: frozenset) -> bool:
        """Every call of `func` passes (or defaults) a shared value for `param`."""
        f = self.facts
        sites = f.call_sites(func)
        default = next((p.default for p in (*func.params.params, *func.params.kwonly_params)
                        if p.name.value == param), None)
        passed = [(c, f.argument_for(c, func, param) or default or self._from_decorator(c, func, param)) for c in sites]
        return bool(sites) and all(p is not None and (mt.is_parse_args(p) or self._core(p, proving))
                                   or p is None and self._filled_elsewhere(c, func, param) for c, p in passed)

    def _loop_targets(self, ref: Ref) -> list[cst.For]:
        """The loops that bind `ref` in their target, not to a count (`Facts.loops_binding`)."""
        return [loop for loop in self.facts.loops_binding(ref) if ref.name not in self._counters(loop)]

    def _plain(self, expr: cst.BaseExpression, depth: int = 4) -> bool:
        """Does iterating `expr` give the same items wherever its value is the same: a list,
        tuple, dict or string written out, a comprehension over such, the sum of two such
        (`["train"] + list(names)`), `range(...)`, a list,
        tuple, sorted, reversed, enumerate or zip of such (`enumerate(stages)`), a mapping's
        `.items()` or a string's `.split()`, the command line or a part of it (`_command_line`),
        a name every source of which is one? Not a loader, a sampler or any object of a library,
        whose items may differ by process however it was built; not a set, whose strings come out
        in another order in each process."""
        f = self.facts
        if isinstance(expr, (cst.List, cst.Tuple, cst.Dict, cst.SimpleString, cst.ConcatenatedString,
                             cst.FormattedString)) or mt.is_counting(expr) or self._command_line(expr):
            return True
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):  # `["train"] + list(evals)`
            return self._plain(expr.left, depth) and self._plain(expr.right, depth)
        if isinstance(expr, (cst.ListComp, cst.DictComp, cst.GeneratorExp)):
            clause: cst.CompFor | None = expr.for_in
            while clause is not None:
                if not self._plain(clause.iter, depth):
                    return False
                clause = clause.inner_for_in
            return True
        if depth == 0:
            return False
        if isinstance(expr, cst.Call):
            if dotted(expr.func) in PLAIN_ITERATIONS:
                return all(self._plain(a.value, depth - 1) for a in expr.args if not a.keyword)
            return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in PLAIN_METHODS
        ref = f.ref(expr) if isinstance(expr, cst.Name) else None
        if ref is not None and _star_parameter(ref) is not None:
            return True  # `for arg in args:` of `def default(*args)`: the tuple of what the call passes
        sources = [*f.sources(ref), *f.unpacked_from(ref)] if ref is not None else []
        return bool(sources) and all(self._plain(s, depth - 1) for s in sources)

    def _command_line(self, expr: cst.BaseExpression, depth: int = 8) -> bool:
        """The parsed command line or a part of it: `parser.parse_args()`, `vars(args)`,
        `args.stages`, `cfg["stages"]` of a program class whose `__getitem__` returns one (a
        configuration object: `return self.args[key]`, `self.args = vars(parser.parse_args())`), a
        name or attribute every assignment of which is one. Strings, numbers and lists of them:
        never a loader."""
        f = self.facts
        if mt.is_parse_args(expr):
            return True
        if depth == 0:
            return False
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "vars") and len(expr.args) == 1:
            return self._command_line(expr.args[0].value, depth - 1)
        if isinstance(expr, cst.Subscript):
            looked_up = self._looked_up(expr.value)
            return self._command_line(expr.value, depth - 1) or bool(looked_up) and all(
                self._command_line(r, depth - 1) for r in looked_up)
        if isinstance(expr, cst.Attribute) and self._command_line(expr.value, depth - 1):
            return True
        ref = f.ref(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        values = [*(v for _, v, _ in f.writes(ref)), *f.unpacked_from(ref)] if ref is not None else []
        return bool(values) and all(self._command_line(v, depth - 1) for v in values)

    def _looked_up(self, obj: cst.BaseExpression) -> list[cst.BaseExpression]:
        """What `obj[key]` returns where `obj` holds instances of the program's classes only,
        each with a `__getitem__` (`def __getitem__(self, key): return self.args[key]`)."""
        flow = objects_of(self.facts)
        classes = [flow.constructs(site) for site in flow.values(obj)]
        if not classes or None in classes:
            return []
        methods = [m for cls in classes if cls is not None for m in self.facts.method(cls, "__getitem__")]
        return [r for m in methods for r in self.facts.returned(m)] if len(methods) >= len(classes) else []

    def _branched(self, stmt: cst.CSTNode, proving: frozenset = frozenset()) -> bool:
        """Does `stmt` run only on some paths of its function (inside an `if` or an `except`), paths
        that may differ between processes? Not inside an `if` whose test is the same on every process
        (`if __name__ == "__main__":` around `args = parser.parse_args()`): every process takes it."""
        for anc in self.facts.ancestors(stmt):
            if isinstance(anc, cst.FunctionDef):
                return False
            if isinstance(anc, (cst.IfExp, cst.ExceptHandler)) or isinstance(anc, cst.If) and not self._core(anc.test, proving):
                return True
        return False

    # the wide answer (`wide=True`) ---------------------------------------------------------------
    def _set_from_rank_by_caller(self, test: cst.CSTNode) -> bool:
        """Does `test` read an attribute of a parameter that a caller sets from the rank on the
        object it passes (`args.should_save` of `train(args)`, after `args.should_save = ... and
        is_master(args)`)? Or an entry whose key is a rank's name (`opt["rank"]`, `cfg.get("rank")`)?"""
        f = self.facts
        nodes = [test] if isinstance(test, (cst.Attribute, cst.Subscript, cst.Call)) else f.findall(
            test, (cst.Attribute, cst.Subscript, cst.Call))
        return any(rank_key(n) if isinstance(n, (cst.Subscript, cst.Call)) else (ref := f.ref(n)) is not None and any(
            self.ranks.rank_dependent(v) for v in self.ranks.attribute_of_passed(ref)) for n in nodes)

    def _reads_rank_by_role(self, test: cst.CSTNode) -> bool:
        """Does `test` read a rank by role, or a name assigned from one (`is_main = device_id in
        {0, None}` where `init_process_group(rank=device_id)`: `device_id` defaults to None on a
        one-process run, but the flag still differs by process)? A rank that only places a value
        on this process's GPU (`loss.detach().to(rank)`, `torch.tensor(..., device=rank)`) is no
        part of the value (`read_names`): a flag built so and then all-reduced is shared.

        Each expression is answered once per question, at each depth (`_role_read`): the sources
        of a name that reads itself (`cfg = ...`, then `cfg["x"] = f(cfg)` a hundred times) are
        met again through each other, and asking each again multiplied the walks by their number
        per level (RPipe's train_model.py: 20,839 questions, 94 distinct). Kept no longer than
        the question: a `len()` of data inside asks `rank_dependent`, whose answer may differ with
        the names being followed, and those stay the same only while the question lasts."""
        return self._role_read(test, 2, {})

    def _role_read(self, test: cst.CSTNode, depth: int, answers: dict) -> bool:
        key = (test, depth)
        if key not in answers:
            answers[key] = self._role_read_afresh(test, depth, answers)
        return answers[key]

    def _role_read_afresh(self, test: cst.CSTNode, depth: int, answers: dict) -> bool:
        if isinstance(test, cst.BooleanOperation):  # `RANK > -1 and self.world_size > 1`: each side
            return any(self._role_read(side, depth, answers) for side in (test.left, test.right))
        if self.ranks.asks_distributed(test):
            return False  # `RANK > -1`: whether the run is distributed, not which rank this is
        nodes = self._past_agreed_objects([test] if isinstance(test, (cst.Name, cst.Attribute)) else self._read_for_rank(test))
        refs = [r for r in map(self.facts.ref, nodes) if r is not None]
        return any(r in self.ranks.ranks_by_role for r in refs) or depth > 0 and any(
            self._role_read(s, depth - 1, answers) for r in refs for s in self.facts.sources(r)
            if (not isinstance(s, (cst.Name, cst.Attribute)) or self.facts.ref(s) != r) and not self._reads_file(s))

    def _read_for_rank(self, test: cst.CSTNode) -> list[cst.CSTNode]:
        """The names `test` reads for its value (`read_names`), but not a sampler, loader or data
        set it only takes the length of: `len(train_sampler)` of a sampler given this process's
        rank is its share, which distributed sampling makes the same on every process (so is
        `len(loader)` of `DataLoader(data, sampler=DistributedSampler(data, rank=rank))`)."""
        sized = {id(n) for c in self.facts.findall(test, cst.Call) if mt.is_call_of(c, "len") and len(c.args) == 1
                 and (self._data(c.args[0].value) or self._sized_data(c.args[0].value))
                 for n in names_in(self.facts, c.args[0].value)}
        return [n for n in read_names(self.facts, test) if id(n) not in sized]

    def _reads_file(self, node: cst.CSTNode) -> bool:
        """A load of saved state (`trainer.load_checkpoint(path)`, `torch.load(path)` of a path
        that does not name the rank): what it gives is the file's, whatever object reads it."""
        return isinstance(node, cst.Call) and (self._loads_one_file(node) or reads_saved_state(self.facts, node))

    def _shared(self, node: cst.CSTNode, proving: frozenset) -> bool:  # noqa: C901 (22: one case per node type)
        f = self.facts
        if self.ranks.asks_distributed(node):
            return True  # `RANK > -1`: whether the run is distributed, alike everywhere
        if self._per_process(node):
            return False  # `args.local_rank`, `dist.get_rank()`, `backend.is_root_worker()`: each process has its own
        entries = self.ranks.dict_entries(node)
        if entries is not None:
            return all(self._shared(e, proving) for e in entries)
        if self._core_of(node):
            return True
        if isinstance(node, cst.Comparison) and self._drawn_until_spent(node):
            return True  # `while input is not None:` of a prefetcher's batch, None once its loader is spent
        if len(proving) > SHARED_DEPTH:
            return False
        if isinstance(node, (cst.Name, cst.Attribute)):
            if self.holds_agreed(node):  # `flags = [stop]; dist.broadcast_object_list(flags)`
                return True
            if not (isinstance(parent := f.parent(node), cst.Attribute) and parent.value is node) \
                    and metric_object(f, node):
                return True  # `val_loss < best` of a torchmetrics `MeanMetric`: its value is its synced `compute()`
            if isinstance(node, cst.Attribute) and not all(
                    self._shared(value, proving | {("set", id(value))}) for value in self._set_attribute(node)
                    if ("set", id(value)) not in proving):
                return False  # `args.seed = random.randint(...)` wherever `args` is made
            ref = f.ref(node)
            if (ref is None or not f.writes(ref)) and _constant_of_library(f.qualify(node)):
                return True  # `sys.maxsize`, `sys.argv`, `np.inf`: a library module's, one for the whole job
            if ref is None and isinstance(node, cst.Attribute) and dotted(node) is None:
                return self._shared(node.value, proving)  # `main.experiment(sig).cfg`: a part of what the call gives
            if ref is None or ref in proving:
                return ref is not None
            if ref in self.ranks.ranks_by_role:
                return False  # handed to init_process_group as the rank, also where a caller passes it on
            if ref in self._group_sizes:
                return True  # handed to init_process_group as the world size: the group forms only if all agree
            if isinstance(node, cst.Attribute) and node.attr.value in ACCELERATOR_JOB_STATE \
                    and accelerators(f, node.value):
                return True  # `accelerator.sync_gradients`: one answer for the whole job
            if self._configuration_object(node, proving | {ref}):
                return True  # `self.config`, every object of which a `Config()` built: read from one file
            proving = proving | {ref}
            if any(self.holds_agreed(n) for _, value, _ in f.writes(ref)
                   for n in names_in(f, value)):
                return True  # `if RANK != 0: stop = broadcast_list[0]` after the broadcast
            if self._counts(node):
                return True
            if _unpacked_batch_size(f, ref):
                return True  # `n, c, h, w = images.shape`: `n` is `images.shape[0]`, the batch's size
            if self._bound_on_some_ranks(ref, node):
                return False  # `if rank == 0: out_dir = ...` read after the test: the other ranks hold none
            if not all(self._shared(a.value, proving) for a in self._filled_with(ref)):
                return False  # `losses = []` ... `losses.append(loss.item())`: what it holds is what it is given
            if isinstance(node, cst.Attribute) and not mt.is_name(node.value, "self") and not f.writes(ref) \
                    and (reaching := self.ranks.reaching_stores(node)):
                return all(self._shared(v, proving) for v in reaching)  # `loader.epoch` just after `loader.sync_epoch()`
            last = self._last_write(ref, node)
            if last is not None:  # `stop = flags[0]` right before the test: what it holds there; a read of
                # the name in that value is of an earlier write (`dirs = [d for d in dirs if ...]`)
                return self._shared(last, proving - {ref})
            # what the one-process branch assigns does not count (`else: reduced = loss` of `if multi_gpu:`)
            writes = [w for w in f.writes(ref) if not self.ranks.undistributed(w[2])]
            # `epoch, var = load_state(path)`: the part the function returns there (`use_ddp, rank =
            # setup()`: setup's `rank`; `step = ckpt["step"]` of `return optimizer, step`), judged alone:
            # the other parts (an optimizer, a data set) decide nothing of it; the whole value where the
            # part is not known (`epoch, var = pair`)
            unpacked = f.unpacked_parts(ref)
            # what the program stores on its instances from outside (`learner.is_master = rank == 0`)
            stored = objects_of(f).instance_stores(ref)
            loops = self._loop_targets(ref) if isinstance(node, cst.Name) else []
            if loops and not writes and not unpacked and not stored and all(
                    self._plain(lp.iter) and self._shared(lp.iter, proving) for lp in loops):
                return True  # `stage` of `for stage in list(cfg["stages"]):`: an item of a shared list
            if writes or unpacked or stored:
                return all(self._shared(value, proving) for value in [v for _, v, _ in writes] + unpacked + stored) and all(
                    self._shared(test, proving) for _, value, stmt in writes
                    if isinstance(stmt, cst.AugAssign) or _constant(value)
                    for test in self._counted_under(stmt, node)) and (not self._updated_parameter(ref, writes) or
                                                                      self._shared_parameter(ref, proving))
            if isinstance(node, cst.Name) and (node.value in f.functions or node.value in f.classes) and not (
                    isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope)):
                return True  # `main.get_xp_from_sig(sig)`: a function or class of the program, one code everywhere
            if isinstance(node, cst.Attribute):
                if any(self.ranks.rank_dependent(v) for v in self.ranks.attribute_of_passed(ref)):
                    return False  # a caller sets it from the rank on the object it passes (`args.should_save`)
                kept = self._kept_on_self(node, proving)
                return kept if kept is not None else self._shared(node.value, proving)
            return self._shared_parameter(ref, proving)
        if self._environment(node):  # `os.environ.get("MAX_STEPS")`: one job, one environment
            return True
        if _batch_size(node):
            return True  # `batch.shape[0]`: a DistributedSampler gives every process batches of one size
        if isinstance(node, cst.Subscript) and _learning_rate(node):  # `optimizer.param_groups[0]["lr"]`
            return self._stepped_with_shared(None, proving)
        if isinstance(node, cst.Subscript):  # `checkpoint["iter_num"]`, and what the program stores at its key;
            # a stored value being proven holds (`merged[key] = merge(merged[key], value)` reads its own key)
            return self._shared(node.value, proving) and all(
                self._shared(v, proving | {("stored", id(v))}) for v in self.ranks.items_stored(node)
                if ("stored", id(v)) not in proving)
        if isinstance(node, cst.Call) and f.qualify(node.func) == "torch.load":
            return self._loads_one_file(node)  # `torch.load(f)`: the same file everywhere
        if isinstance(node, cst.Call) and reads_saved_state(f, node):
            return True  # `checkpointer.resume_or_load(path)`, `load_state(path)`: the same file everywhere
        if isinstance(node, cst.Call) and (f.qualify(node.func) in JOB_QUESTIONS or agreed(f, node)):
            return True  # `dist.get_world_size()`: one answer for the whole job; `trainer.strategy.broadcast(x)`
        if isinstance(node, cst.Call) and mt.is_method_call(node, "compute") and metric_collective(f, node):
            return True  # a torchmetrics metric's `compute()`: every process's states gathered first
        if isinstance(node, cst.Call):
            named = self._named_attribute(node, proving)
            if named is not None:
                return named  # `getattr(self, "start_step", 0)`: the attribute the literal names, or the default
            arguments = all(self._shared(a.value, proving) for a in node.args)
            if mt.is_call_of(node, "len") and len(node.args) == 1 and self._data(node.args[0].value):
                return True  # `len(train_sampler)`: a distributed sampler gives every process as many
            if dotted(node.func) in f.classes or dotted(node.func) in PURE_BUILTINS or f.qualify(node.func) in HOLDERS \
                    or mt.is_call_of(node, "getattr", "hasattr") or self._own_class(node.func):  # `Config()`, `int(x)`, `getattr(args, "fsdp", False)`
                return arguments  # `SimpleNamespace(**cfg)` too
            if isinstance(node.func, cst.Attribute) and mt.is_method_call(node, "get_last_lr", "get_lr"):  # a scheduler's rate
                return self._stepped_with_shared(node.func.value, proving)
            if self._asks_the_model(node):
                return True  # `model.num_params()`: the replicas are one model
            funcs = f.user_functions(node)
            if funcs and all(_selects_an_argument(f, func) for func in funcs):
                return arguments  # `default(num_train_steps, len(dataset))`: one of its arguments
            if funcs:  # `args = get_args()`: what it returns; a function being proven (recursion) holds
                return all(func in proving or f.returned(func) and all(
                    self._shared(r, proving | {func}) for r in self._distributed_returns(func))
                    and self._return_chosen_alike(func, proving | {func}) for func in funcs)
            qualified = f.qualify(node.func)
            if isinstance(node.func, cst.Attribute) and self._shared(node.func.value, proving) \
                    or (qualified or "").startswith(("os.path.", "math.")) or _torch_function(qualified) \
                    or qualified in FOLDER_LISTINGS:
                return arguments  # `args.path.split("-")`, `os.path.basename(args.ckpt)`, `torch.isnan(reduced)`
            if _computes(qualified, bool(node.args)):  # `np.sort(ckpts)`, `re.search(pattern, path)`
                return arguments and not self._hands_data(node) and not any(
                    self._reads_per_process(a.value) for a in node.args)
            return mt.is_parse_args(node) or self._configuration(node)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda)):
            return self._shared_function_of_shared(node, proving)
        if isinstance(node, cst.NamedExpr):
            return False
        return all(self._shared(child, proving) for child in mt.children(node) if isinstance(child, cst.BaseExpression)
                   or isinstance(child, (cst.ComparisonTarget, cst.Arg, cst.FormattedStringExpression, cst.BaseElement,
                                         cst.BaseDictElement)))  # `{"loss": loss.item()}`, `(out, rank)`: as shared as its entries

    def _drawn_until_spent(self, test: cst.Comparison) -> bool:
        """`input is not None` (or `is None`) where every object `input` may hold is a batch drawn
        by `next(it)` from a loader sized alike on every process (`_sized_data`: a DistributedSampler
        gives each as many batches), and every `None` it may hold is set where that iterator is spent
        (in an `except StopIteration:` handler, one at least): a prefetcher's `next()` gives None at
        the same step everywhere; so is a tensor method's result on such a batch (apex's prefetcher
        keeps `self.next_input.cuda(non_blocking=True)`, then `.float()`, `.sub_(mean).div_(std)`:
        `_drawn_batch`), never None. Not a `None` set on another condition (a batch skipped where this
        process's data is bad), nor a batch that is None itself (a collate function's for a batch
        whose every item failed to load)."""
        f = self.facts
        if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot)) \
                or not mt.is_name(test.comparisons[0].comparator, "None"):
            return False
        sites = objects_of(f).values(test.left)
        nones = [o for o in f.origins(test.left) if mt.is_name(o, "None")]
        return bool(sites) and bool(nones) and all(self._drawn_batch(s, frozenset()) for s in sites) \
            and all(any(isinstance(a, cst.ExceptHandler) and a.type is not None and any(
                mt.is_name(n, "StopIteration") for n in (a.type, *f.findall(a.type, cst.Name))) for a in f.ancestors(o))
                for o in nones)

    def _drawn_batch(self, site: cst.CSTNode, seen: frozenset[cst.CSTNode]) -> bool:
        """Is `site` a batch drawn by `next(it)` from a loader sized alike on every process, or a
        tensor method's result on one (`TENSOR_KEEPS`, or an in-place method: `x.sub_(m)`), whose
        receiver holds nothing else (followed through the names and attributes it is kept in)?"""
        if isinstance(site, cst.Call) and mt.is_call_of(site, "next") and site.args:
            return self._sized_data(site.args[0].value)
        if site in seen or not (isinstance(site, cst.Call) and isinstance(site.func, cst.Attribute)):
            return False
        name = site.func.attr.value
        if name not in TENSOR_KEEPS and not (name.endswith("_") and not name.startswith("_")):
            return False
        receiver, seen = site.func.value, seen | {site}
        if isinstance(receiver, cst.Call):
            return self._drawn_batch(receiver, seen)
        sites = objects_of(self.facts).values(receiver) if dotted(receiver) else []
        return bool(sites) and all(self._drawn_batch(s, seen) for s in sites if s not in seen)

    def _own_class(self, func: cst.BaseExpression) -> bool:
        """`cls` of `cls(**values)` in a `@classmethod` of a class of the program (a configuration's
        `from_yaml_and_cli(cls)`): the class itself, built as `Config(...)` is, from its arguments."""
        f = self.facts
        if not isinstance(func, cst.Name):
            return False
        scope = f.scope(func)
        if not isinstance(scope, cst.FunctionDef) or not scope.params.params:
            return False
        return scope.params.params[0].name.value == func.value and f.enclosing_class(scope) is not None \
            and any(mt.is_name(d.decorator, "classmethod") for d in scope.decorators) \
            and not f.writes(Ref(scope, func.value))

    def _hands_data(self, call: cst.Call) -> bool:
        """Is `call` handed a model or a loader (the object core's `kind`): what a function of
        another module computes from them (`plan_iterations(model, loader)`) is of this process's
        own data, not of the values alone."""
        flow = objects_of(self.facts)
        return any(flow.kind(site) in (MODEL, LOADER) for a in call.args for site in flow.values(a.value))

    def _configuration_object(self, node: cst.Name | cst.Attribute, proving: frozenset) -> bool:
        """Is every object `node` may hold (`objects.values`: followed through assignments,
        parameters and returns) built by a call that says it makes configuration, by its own name
        or its class's (`Config()`, `self.optim.create_config_instance(...)`, `OmegaConf.load(p)`),
        from values that read no rank, clock or draw (`_reads_per_process`)? A configuration object is read from the same files
        and command line on every process; a part of it the program sets from a rank is an
        attribute of its own, judged by what it is set to (`cfg.gpu = local_rank`)."""
        flow = objects_of(self.facts)
        sites = flow.values(node)
        return bool(sites) and all(isinstance(s, cst.Call) and self._configuring(s, flow, proving) for s in sites)

    def _configuring(self, call: cst.Call, flow, proving: frozenset) -> bool:
        cls = flow.constructs(call)
        words = [cls.name.value] if cls is not None else [
            n.value for n in self.facts.findall(call.func, cst.Name)]  # `OmegaConf.merge`, `self.optim.create_config_instance`
        return any(CONFIGURING.fullmatch(part) for w in words for part in (w.replace("_", ""), *WORDS.findall(w))) \
            and all(self._shared(a.value, proving) or not self._reads_per_process(a.value) for a in call.args)

    def _reads_per_process(self, expr: cst.BaseExpression, depth: int = 2) -> bool:
        """Does `expr` read a rank, or call a function of a module that answers per process
        (`time.time()`, `random.random()`, `os.getpid()`; not `os.path`, a folder's listing nor the
        launcher's shared environment), itself or through the assignments of the names it reads (`depth` deep)?"""
        f = self.facts
        if self.ranks.rank_dependent(expr) or any(
                _per_process_module(q := f.qualify(c.func) or "") and not q.startswith(
                    ("os.path.", "os.environ", "os.getenv", "torch.")) and q not in FOLDER_LISTINGS
                for c in f.findall(expr, cst.Call)):
            return True
        refs = {r for n in names_in(f, expr) if (r := f.ref(n)) is not None}
        return depth > 0 and any(self._reads_per_process(v, depth - 1) for r in refs for _, v, _ in f.writes(r))

    def _named_attribute(self, call: cst.Call, proving: frozenset) -> bool | None:
        """`getattr(self, "start_step", 0)` (`named_read`, a literal that is one attribute's name, of a
        dotted object): the attribute it names, where the program assigns it (`self.start_step = 0`,
        `self.start_step = int(ckpt["step"])` of the checkpoint every rank loads), or the default:
        shared where the default and every value assigned to the attribute is, and no assignment is
        made on some ranks only. None where the program never assigns it (the object's own, judged
        by the object: `getattr(args, "fsdp", False)`).

        Before, the call was judged by its arguments, and `self` is no value: a step counter started
        from the attribute (`global_step = getattr(self, "start_step", 0)` ... `while global_step <
        self.cfg.max_steps:`) was one that can differ by rank, and the loop's end a DDP005
        (kjk1208/CatVTON71, set 26); `global_step = self.start_step` was not."""
        f = self.facts
        read = named_read(call)
        if read is None or not read[1].isidentifier() or dotted(read[0]) is None:
            return None
        ref = f.ref(cst.Attribute(value=read[0], attr=cst.Name(read[1])), at=call)
        writes = f.writes(ref) if ref is not None else []
        if not writes:
            return None
        if ref in proving:
            return True  # `self.step = getattr(self, "step", 0) + 1`: shared when every other write is
        default = call.args[2].value if len(call.args) == 3 else None
        return (default is None or self._shared(default, proving)) and all(
            not self.ranks.on_some_ranks(stmt) and self._shared(value, proving | {ref}) for _, value, stmt in writes)

    def _kept_on_self(self, node: cst.Attribute, proving: frozenset) -> bool | None:
        """`self.x` that the program never assigns, read in a method of its class: a property of
        the class is what it returns (`is_training` returning `self.current_stage == "train"`);
        any other is what a base class of a library keeps on the object (flashy's solver stage,
        Lightning's `current_epoch`), which every process builds and drives by the same calls: the
        same everywhere, but for a rank, which its name says (`_per_process`). None where neither
        answers (no class around, or no base outside the program)."""
        f = self.facts
        cls = f.enclosing_class(node) if dotted(node.value) == "self" else None
        if cls is None:
            return None
        properties = [m for m in f.method(cls, node.attr.value) if is_property(m)]
        if properties:
            return all(m in proving or self._shared(r, proving | {m}) for m in properties for r in f.returned(m))
        return True if f.library_based(cls) else None

    def _updated_parameter(self, ref: Ref, writes: list) -> bool:
        """A parameter that an assignment updates from itself (`overrides = cfg2dict(overrides)`):
        what it holds is made of what the callers pass, which must be shared too."""
        f = self.facts
        return isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope) and any(
            f.ref(n) == ref for _, value, _ in writes for n in f.findall(value, cst.Name) if n.value == ref.name)

    @cached_property
    def _group_sizes(self) -> set[Ref]:
        """The names handed to `init_process_group` as the world size (`world_size=self.world_size`):
        every process of the job gives the same, or the group never forms, whatever the value is
        made of (`len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))`)."""
        f = self.facts
        return {ref for c in f.calls_to("torch.distributed.init_process_group")
                for a in c.args if a.keyword is not None and a.keyword.value == "world_size"
                and isinstance(a.value, (cst.Name, cst.Attribute)) and (ref := f.ref(a.value)) is not None}

    def _bound_on_some_ranks(self, ref: Ref, use: cst.CSTNode) -> bool:
        """Is every assignment of `ref` under a rank test that `use` is not under (`if rank == 0:
        experiment_dir = ...`, read after the test)? Only those ranks hold a value there; the others
        hold none (or fail), whatever the value is made of."""
        writes = self.facts.writes(ref)
        if not writes or self.ranks.cycles.held(ref, self._guarding):
            return False
        self._guarding.add(ref)
        try:
            return all((guard := self.ranks.rank_guard(stmt)) is not None and not self.facts.is_inside(use, guard)
                       for _, _, stmt in writes)
        finally:
            self._guarding.discard(ref)

    def _filled_with(self, ref: Ref) -> list[cst.Arg]:
        """The arguments of the calls that fill the container `ref` names in place
        (`losses.append(loss.item())`, `seen.add(x)`, `stats.update(d)`)."""
        return [a for method, c in self.facts.filled(ref) if method in FILLING for a in c.args]

    def _shared_function_of_shared(self, node: cst.ListComp | cst.SetComp | cst.DictComp | cst.GeneratorExp | cst.Lambda,
                                   proving: frozenset) -> bool:
        """A comprehension over shared values (`[d for d in dirs if d.endswith("pt")]` of `dirs =
        os.listdir(args.out)`), or a lambda (`key=lambda x: int(x.split(".")[0])`) that reads only
        its parameters and shared values: the names it binds hold shared values, so what it makes
        is the same on every process."""
        f = self.facts
        if isinstance(node, cst.Lambda):
            bound = [p.name for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)]
            if any(p.default is not None for p in node.params.params) or not isinstance(node.params.star_arg, cst.MaybeSentinel):
                return False
            return self._shared(node.body, proving | {r for r in map(f.ref, bound) if r is not None})
        parts = [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            if not self._shared(clause.iter, proving):
                return False
            proving = proving | {r for r in map(f.ref, f.findall(clause.target, cst.Name)) if r is not None}
            if not all(self._shared(test.test, proving) for test in clause.ifs):
                return False
            clause = clause.inner_for_in
        return all(self._shared(part, proving) for part in parts)

    def _received(self, read: cst.BaseExpression) -> bool:
        """Is `read` given, on every path of a distributed run, what a collective agreed: the
        nearest assignment before it in its function takes an item of a name a collective agreed
        (`self.stop = broadcast_list[0]` after `dist.broadcast_object_list(broadcast_list, 0)`) and
        runs on every path to it, but for tests every distributed run passes (`if RANK != -1:`)?
        Rank 0's value, the same on every process, whatever the list was filled with (`[self.stop
        if RANK == 0 else None]`). Not where another assignment, or one some paths skip, comes
        nearer (a flag a callback may set on rank 0 between)."""
        f = self.facts
        ref = f.ref(read)
        for _, value, stmt in reversed(f.writes(ref) if ref is not None else []):
            if f.scope(stmt) is not f.scope(read) or not f.before(stmt, read) or f.is_inside(read, stmt):
                continue
            return not isinstance(stmt, cst.AugAssign) and not self._conditional_when_distributed(stmt, read) \
                and any(self.holds_agreed(n) for n in names_in(f, value))
        return False

    def _conditional_when_distributed(self, stmt: cst.CSTNode, read: cst.CSTNode) -> bool:
        """Does `stmt` run on some of the paths to `read` only, in a run of several processes (an
        `if`, loop or `try` that `read` is not in, other than a test every such run passes)?"""
        f = self.facts
        for anc in f.ancestors(stmt):
            if isinstance(anc, (cst.FunctionDef, cst.Module)):
                return False
            if isinstance(anc, (cst.If, cst.For, cst.While, cst.Try)) and not f.is_inside(read, anc) and not (
                    isinstance(anc, cst.If) and f.is_inside(stmt, anc.body) and self.ranks.several_processes(anc.test)):
                return True
        return False

    def _distributed_returns(self, func: cst.FunctionDef) -> list[cst.BaseExpression]:
        """What `func` returns in a run of several processes: not what its one-process branch
        returns (`if RANK == -1 or not dist.is_initialized(): return bool(local)` before the
        broadcast of rank 0's decision)."""
        return [r.value for r in self.facts.returns_in(func) if r.value is not None and not self.ranks.undistributed(r)]

    def _return_chosen_alike(self, func: cst.FunctionDef, proving: frozenset) -> bool:
        """Does every process take the same `return` of `func` where it has several (not all one
        constant)? The tests of the `if`s and `while`s each such `return` sits in must be shared: `broken =
        True; return broken` under `if loss_is_nan(loss):`, `return False` at the end, returns two
        constants, each shared, but which one a process gets is decided by its own loss."""
        f = self.facts
        returns = [r.value for r in f.returns_in(func) if r.value is not None and not self.ranks.undistributed(r)]
        if len(returns) <= 1 or len({f.code(r) for r in returns}) == 1 and _constant(returns[0]):
            return True  # (`return broken` twice: the name may hold what each path set)
        return all(self._shared(anc.test, proving) for r in returns for anc in f.ancestors(r)
                   if f.is_inside(anc, func) and anc is not func and isinstance(anc, (cst.If, cst.While)))

    def _asks_the_model(self, call: cst.Call) -> bool:
        """`model.estimate_flops()`, `m.num_scaling_params()`: a method of a model, not its forward,
        asked nothing, on a name every object of which is a model. Every process holds a replica of
        the same model (DDP keeps them identical), so what it answers of itself (its size, its
        shapes) is the same everywhere; a method given data (`model.score(batch)`) is not."""
        func = call.func
        if call.args or not isinstance(func, cst.Attribute) or func.attr.value in ("forward", "__call__") \
                or dotted(func.value) is None:
            return False
        held = objects_of(self.facts).values(func.value)
        return bool(held) and all(objects_of(self.facts).kind(site) == MODEL for site in held)

    def _configuration(self, expr: cst.BaseExpression, depth: int = 12, seen: frozenset = frozenset()) -> bool:
        """Is `expr` the run's configuration: the parsed command line (`args`, `args.config_file`),
        a literal, `__file__`, or what is built from those alone: by a function of another module
        (`cfg = setup(args)`, `Config.fromfile(args.config)`, `OmegaConf.merge(...)`) or a class
        of another module built with its defaults (`config.TrainConfig()`), by a
        function of the program (what it returns), by their methods and operators
        (`Path(__file__).parent / "default.yaml"`)? Not a function of a module that answers per
        process (`random`, `time`, `os`, torch's own are asked elsewhere), nor one whose name says
        rank; not a model or a loader handed on (what `evaluate(model, loader)` returns is that
        process's own)."""
        f = self.facts
        if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float)) or mt.is_name(expr, "True", "False", "None", "__file__"):
            return True
        if depth == 0 or self.ranks.rank_name(expr):
            return False
        parts = _parts(expr)
        if parts is not None:  # `a / b`, `[f"x={args.out}"]`: what it is made of
            return all(self._configuration(p, depth - 1, seen) for p in parts)
        if mt.is_parse_args(expr) or mt.is_method_call(expr, *PARSES_INTO_DATACLASSES):
            return True
        if isinstance(expr, cst.Call):
            arguments = all(self._configuration(a.value, depth - 1, seen) for a in expr.args)
            funcs = f.user_functions(expr)
            if funcs:  # `setup(args)` of the program: what it returns
                returned = [r for func in funcs for r in f.returned(func)]
                return arguments and bool(returned) and all(self._configuration(r, depth - 1, seen) for r in returned)
            qualified = f.qualify(expr.func) or ""
            module = "os.path" if qualified.startswith("os.path.") else qualified.split(".")[0]
            if not module and isinstance(expr.func, cst.Attribute) and not dotted(expr.func):
                return arguments and self._configuration(expr.func.value, depth - 1, seen)  # `Path(p).resolve()`
            built = bool(expr.args) or _class_name(qualified)  # `config.TrainConfig()`: its defaults
            return built and bool(module) and not _per_process_module(qualified) and arguments
        if isinstance(expr, cst.Attribute) and not dotted(expr):  # `Path(__file__).parent`
            return self._configuration(expr.value, depth - 1, seen)
        ref = f.ref(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if ref is None:
            return False
        if ref in seen:  # `cfg = OmegaConf.merge(defaults, cfg)`: an update keeps what it was
            return True
        seen = seen | {ref}
        writes = f.writes(ref)  # `args.gpu = local_rank` is no longer the command line's
        if not all(self._configuration(v, depth - 1, seen) for _, v, _ in writes):
            return False
        if writes and not all(isinstance(stmt, cst.AugAssign) for _, _, stmt in writes):
            return True
        if isinstance(expr, cst.Attribute):  # never set, or only added to (`args.opts += [...]`)
            return self._configuration(expr.value, depth, seen)
        return self._configuration_passed(ref, depth, seen)

    def _configuration_passed(self, ref: Ref, depth: int, seen: frozenset) -> bool:
        """A parameter every caller passes configuration (a name passed on costs no depth), or one
        of a function no call of the program reaches (as `_shared_parameter` reads it)."""
        f = self.facts
        if not isinstance(ref.scope, cst.FunctionDef):
            return False
        if any(f.qualify(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) in CONFIG_DECORATORS
               for d in ref.scope.decorators):
            return True  # `@hydra.main(...) def train(cfg)`: the decorator passes the run's configuration
        sites = f.call_sites(ref.scope)
        if not sites:
            return self._shared_parameter(ref, frozenset())
        passed = [(call, f.argument_for(call, ref.scope, ref.name) or self._from_decorator(call, ref.scope, ref.name))
                  for call in sites]
        return all(p is not None and self._configuration(p, depth if dotted(p) else depth - 1, seen)
                   or p is None and self._filled_elsewhere(call, ref.scope, ref.name, depth - 1, seen)
                   for call, p in passed)

    def _loads_one_file(self, call: cst.Call) -> bool:
        """`torch.load(path)`, `torch.load(f)` of an opened file: every process reads the same
        file, wherever it places it; not a path that names the rank (`f"ckpt_{rank}.pt"`)."""
        return self.facts.qualify(call.func) == "torch.load" and not any(
            self.ranks.rank_name(n) for a in call.args if not (a.keyword and a.keyword.value in PLACING_KEYWORDS)
            for n in names_in(self.facts, a.value))

    def _stepped_with_shared(self, scheduler: cst.BaseExpression | None, proving: frozenset) -> bool:
        """Is the learning rate the same on every process: every `.step(...)` of `scheduler` (of
        every torch.optim.lr_scheduler the script builds, for an optimizer's `param_groups[i]["lr"]`)
        is given shared values (`lr_scheduler.step(val_loss)`, `val_loss` summed by all_reduce) or
        nothing? A plateau scheduler stepped on one process's own loss is not."""
        f = self.facts
        names = {dotted(scheduler)} if scheduler is not None else {
            dotted(target) for target, value, _ in f.assigns
            if isinstance(value, cst.Call) and (f.qualify(value.func) or "").startswith("torch.optim.lr_scheduler.")}
        steps = [c for c in f.calls_named("step") if isinstance(c.func, cst.Attribute) and c.func.attr.value == "step"
                 and dotted(c.func.value) in names - {None}]
        return (bool(steps) or scheduler is None) and all(self._shared(a.value, proving) for c in steps for a in c.args)

    def _assigned(self, node: cst.CSTNode) -> bool:
        """Does the script assign `node` (so what it holds tells, not what it is called)?"""
        ref = self.facts.ref(node)
        return ref is not None and bool(self.facts.sources(ref))

    def _counts(self, name: cst.CSTNode) -> bool:
        """`idx` of `for idx in pbar` where `pbar` is a `range(...)`, on some ranks wrapped in a
        progress bar (`pbar = tqdm(pbar) if rank == 0 else pbar`, `with tqdm(range(n)) as pbar:`,
        what `with` binds being the bar itself): a counter all the same. Not an
        item of a list written out that the program fills in place (`stages = []` ...
        `stages.append(x)`, `Facts.filled`): it holds what it is given."""
        f = self.facts
        if not isinstance(name, cst.Name):
            return False
        for anc in f.ancestors(name):
            if isinstance(anc, cst.For) and name.value in {n.value for n in f.findall(anc.target, cst.Name)}:
                target = anc.target
                if isinstance(target, cst.Tuple) and mt.is_call_of(anc.iter, "enumerate"):
                    return target.elements[0].value is not None and mt.is_name(target.elements[0].value, name.value)
                iterated = f.ref(mt.strip_iteration(anc.iter))
                entered = f.entered(iterated) if iterated is not None else []
                origins = [o for o in [*f.origins(anc.iter), *(o for e in entered for o in f.origins(e))]
                           if dotted(o) != dotted(anc.iter)]
                return isinstance(target, cst.Name) and bool(origins) and all(mt.is_counting(o) for o in origins) \
                    and not (iterated is not None and f.filled(iterated))
        return False

    def _counted_under(self, stmt: cst.CSTNode, use: cst.CSTNode) -> list[cst.BaseExpression]:
        """The tests of the `if`s that a counter's step or a constant's assignment sits under in
        its function, which `use` is not in: what it holds is the same on every process only where
        they are. A counter (`global_step += 1`) counts alike under `if is_update_step:`, not under
        `if torch.isfinite(loss):`; a flag set to a constant (`improved = True` under `if val_loss <
        best:`, then `if not improved: patience += 1`) holds what the test decided, on this
        process's own numbers there (a computed value carries what it is computed from itself)."""
        f = self.facts
        tests = []
        for anc in f.ancestors(stmt):
            if isinstance(anc, (cst.FunctionDef, cst.Module)):
                break
            if isinstance(anc, cst.If) and not f.is_inside(use, anc):
                tests.append(anc.test)
        return tests

    def _data(self, expr: cst.BaseExpression) -> bool:
        """A sampler, loader or data set (built by a class so named, or a parameter so named), or
        one held by a name so named and built from no rank (`len(vectorized_datasets["train"])`,
        filled by `.map`, `.filter` and `partial`s of them): its length is the same on every
        process, since every process reads the same data and distributed sampling gives each an
        equal share. Not a torch loader or data set of this process's own share (`_own_share`)."""
        f = self.facts
        origins = f.origins(expr)
        if any(isinstance(o, cst.Call) and (f.qualify(o.func) or "").startswith(f.DATA_MODULES) and self._own_share(o)
               for o in origins):
            return False
        if bool(origins) and all(DATA_WORD.search(dotted(o.func if isinstance(o, cst.Call) else o) or "")
                                 for o in origins):
            return True
        held = expr
        while isinstance(held, cst.Subscript):
            held = held.value
        return isinstance(held, (cst.Name, cst.Attribute)) and DATA_WORD.search(dotted(held) or "") is not None \
            and not self._reads_per_process(held)

    def _last_write(self, ref: Ref, use: cst.CSTNode) -> cst.BaseExpression | None:
        """The value of the last assignment to `ref` before `use` in the same loop body or block
        chain, which runs on every path to `use` (None when there is none, or when an augmented
        assignment comes after it: `val_loss = 0.0` ... `val_loss += loss.item()` holds both)."""
        f = self.facts
        loops = [lp for lp in f.ancestors(use) if isinstance(lp, (cst.For, cst.While))]
        if any(not f.before(stmt, use) and any(f.is_inside(stmt, lp) for lp in loops) for _, _, stmt in f.writes(ref)):
            return None  # `while loss.item() > t:` ... `loss = ...` in the body: the next test reads that
        for _, value, stmt in reversed(f.writes(ref)):  # not `dirs = [d for d in dirs if ...]` for its own `dirs`
            if f.scope(stmt) is f.scope(use) and f.before(stmt, use) and not f.is_inside(use, stmt):
                if isinstance(stmt, cst.AugAssign):
                    return None
                if not _conditional(f, stmt, use):
                    return value
        return None

    def _shared_parameter(self, ref: Ref, proving: frozenset) -> bool:
        """A parameter every call of this file passes a shared value (`Trainer(args)`; for `*args`,
        every positional argument past the named ones: `default(num_steps, len(dataset))`), or one of
        a function that no call of this file reaches (another file's entry point passes it
        configuration: `def train(cfg, max_iter)`) or that a launcher hands the items of its
        `args=(...)` (`_launched_with`) or that a command-line library runs (`fire.Fire(main)`:
        `_command_line_entry`), unless its name says it is a rank."""
        f = self.facts
        if not isinstance(ref.scope, cst.FunctionDef):
            return False
        if any(f.qualify(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) in CONFIG_DECORATORS
               for d in ref.scope.decorators):
            return True  # `@hydra.main(...) def train(cfg)`: the decorator passes the run's configuration
        sites = f.call_sites(ref.scope)
        named = _star_parameter(ref)
        if sites and named is not None:  # `def default(*args)`: the positional arguments past the named ones
            return all(not any(a.star for a in call.args) and all(
                self._shared(a.value, proving) for a in [a for a in call.args if a.keyword is None][named:])
                for call in sites)
        launched = self._launched_with(ref.scope, ref.name)
        if not sites and launched:
            return not rank_word(cst.Name(ref.name)) and ref not in self.ranks.ranks_by_role \
                and all(self._shared(v, proving) for v in launched)
        if not sites:
            return (not self.ranks.entry_point(ref.scope) or self._command_line_entry(ref.scope)) \
                and not rank_word(cst.Name(ref.name)) and ref not in self.ranks.ranks_by_role
        passed = [(call, self._passed(call, ref.scope, ref.name)) for call in sites
                  if not self._cannot_run(call, ref.scope, ref.name)]
        return bool(passed) and all(p is not None and self._shared(p, proving) or p is None and self._filled_elsewhere(
            call, ref.scope, ref.name) for call, p in passed)

    def _cannot_run(self, call: cst.Call, func: cst.FunctionDef, param: str) -> bool:
        """Does `call` give `param` of `func`, a parameter without a default, no value at all (no
        argument, no `*`/`**`, no decorator that could fill it)? Then it is not a call of `func`
        (it would raise TypeError): a base class's `self._load_model(checkpoint_path=p)` is no
        call of a subclass's `_load_model(self, checkpoint_dir, checkpoint_path=None)`, which
        every call of its own passes `checkpoint_dir`."""
        params = [*func.params.params, *func.params.kwonly_params]
        bound = self.facts.enclosing_class(func) is not None and params[:1] and params[0].name.value == param
        return not bound and not func.decorators and not any(a.star for a in call.args) \
            and self.facts.argument_for(call, func, param) is None and any(
                p.name.value == param and p.default is None for p in params)

    def _command_line_entry(self, func: cst.FunctionDef) -> bool:
        """Is `func` handed on by name only to a library that fills its parameters from the command
        line (`fire.Fire(main)`, `typer.run(main)`, `jsonargparse.CLI(main)`)?"""
        f = self.facts
        handing = f.handing_on(func.name.value)
        return bool(handing) and all(f.qualify(c.func) in COMMAND_LINE_RUNNERS for c in handing)

    def _launched_with(self, func: cst.FunctionDef, param: str) -> list[cst.BaseExpression]:
        """What the calls that hand `func` on by name with `args=(...)` give `param`
        (`mp.spawn(main, nprocs=n, args=(cfg,))`, a launcher's `launch(main, n_gpu, args=(cfg,))`):
        the tuple's items fill its last parameters in order (spawn puts the process index before
        them, and that one no item fills); or what Fabric's `fabric.launch(main, cfg)` hands it
        (`lightning.fabric_launch_arguments`). Empty where a call hands `func` on without such a
        tuple, or gives `param` nothing."""
        f = self.facts
        params = [p.name.value for p in func.params.params]
        if f.enclosing_class(func) is not None or func.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) \
                or param not in params:
            return []
        given = []
        for call in f.handing_on(func.name.value):
            if fabric_launch(f, call):  # `fabric.launch(main, cfg)`: `main(fabric, cfg)` on every process
                if (value := fabric_launch_arguments(f, call, func).get(param)) is None:
                    return []
                given.append(value)
                continue
            items = mt.keyword(call, "args")
            if items is None or not isinstance(items.value, (cst.Tuple, cst.List)) \
                    or any(isinstance(e, cst.StarredElement) for e in items.value.elements):
                return []
            at = params.index(param) - (len(params) - len(items.value.elements))
            if at < 0 or len(items.value.elements) > len(params):
                return []
            given.append(items.value.elements[at].value)
        return given

    def _filled_elsewhere(self, call: cst.Call, func: cst.FunctionDef, param: str, depth: int = 12,
                          seen: frozenset = frozenset()) -> bool:
        """Where `call` names no value for `param`: does the run's configuration fill it, through
        a library decorator of `func` (`_decorator_fills`) or through the call's `**` or `*` of the
        configuration (`main(**OmegaConf.load(args.config))`, `train(**vars(args))`,
        `main(*parser.parse_args_into_dataclasses())`: an item of it, else the parameter's
        default, which must be configuration too)? Asked from `_configuration`, it goes on with
        that question's depth and the references it has seen: a `**` of the configuration that
        reaches the parameter's own function again (`train(**c)`, where `c` is built by a
        function that calls what `train` calls) is answered once, not asked again from the top."""
        if self._decorator_fills(call, func, param):
            return True
        stars = [a.value for a in call.args if a.star]
        default = next((p.default for p in (*func.params.params, *func.params.kwonly_params)
                        if p.name.value == param), None)
        return bool(stars) and self.facts.argument_for(call, func, param) is None \
            and all(self._configuration(v, depth, seen) for v in stars) \
            and (default is None or self._configuration(default, depth, seen))

    def _decorator_fills(self, call: cst.Call, func: cst.FunctionDef, param: str) -> bool:
        """Does the decorator of `func` pass the parameter that `call` leaves out (no argument, no
        default, no `*`/`**` of the call that may hold it): `main()` of `@hydra_main(config_path=...)
        def main(args)`, of click's options? What a decorator gives the entry point it wraps is the
        run's configuration, the same on every process (a rank among it is refused by its name
        first, `_per_process`)."""
        return bool(func.decorators) and not any(a.star for a in call.args) and self.facts.argument_for(
            call, func, param) is None and any(p.name.value == param and p.default is None
                                               for p in (*func.params.params, *func.params.kwonly_params))

    def _passed(self, call: cst.Call, func: cst.FunctionDef, param: str) -> cst.BaseExpression | None:
        """What `call` gives `param` of `func`: its argument, or the parameter's default where the
        call passes it none (`super().__init__(serialization_dir)` of `def __init__(self, ...,
        distributed=False)`); None where a `*args`/`**kwargs` of the call may hold it."""
        found = self.facts.argument_for(call, func, param)
        if found is not None or any(a.star for a in call.args):
            return found
        return next((p.default for p in (*func.params.params, *func.params.kwonly_params)
                     if p.name.value == param), None) or self._from_decorator(call, func, param)

    def _from_decorator(self, call: cst.Call, func: cst.FunctionDef, param: str) -> cst.BaseExpression | None:
        """What a decorator of the program gives `param` of `func` where `call` passes it nothing
        and it has no default (`@launch def main(max_steps)` run as `main()`): the argument of the
        call its wrapper makes of the function it decorates (`entry(budget)`), where that is the
        only such call. A decorator of a library (hydra's, click's) gives nothing known here:
        `_decorator_fills` takes what it gives for the run's configuration."""
        f = self.facts
        names = param_names(func)
        if any(a.star for a in call.args) or param not in names or f.enclosing_class(func) is not None:
            return None
        given = []
        for decorator in func.decorators:
            name = dotted(decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator)
            for deco in f.functions.get((name or "").split(".")[-1], ()):
                wrapped = param_names(deco)[:1]
                if f.enclosing_class(deco) is None and wrapped:
                    given += [mt.keyword(c, param) or mt.positional(c, names.index(param)) for c in f.calls_in(deco)
                              if mt.is_name(c.func, wrapped[0])]
        return given[0].value if len(given) == 1 and given[0] is not None else None

    def _environment(self, node: cst.CSTNode) -> bool:
        """`os.environ["X"]`, `os.environ.get("X")`, `os.getenv("X")` for a variable other than a
        rank (the launcher gives every process the same environment but those); whether a variable
        is set at all, `"RANK" in os.environ`, for any (the launcher sets the same names on every
        process)."""
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 \
                and isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn)) and string_value(node.left) is not None \
                and self.facts.qualify(node.comparisons[0].comparator) == "os.environ":
            return True
        key = self.ranks.environment_key(node)
        return key is not None and not rank_variable(key) and key not in PER_PROCESS_VARIABLES


def _star_parameter(ref: Ref) -> int | None:
    """For the `*args` parameter of a function, how many named positional parameters come before it
    (`def default(*args)`: 0); None for any other name."""
    func = ref.scope
    if not isinstance(func, cst.FunctionDef) or not isinstance(func.params.star_arg, cst.Param) \
            or func.params.star_arg.name.value != ref.name:
        return None
    named = len(func.params.posonly_params) + len(func.params.params)
    return named - 1 if named and func.params.params and func.params.params[0].name.value == "self" else named


def _class_name(qualified: str) -> bool:
    """Does `qualified` end in a class's name (`models.config.TrainConfig`), not a function's
    (`setup`) nor a constant's (`MAX_STEPS`)?"""
    last = qualified.rsplit(".", 1)[-1]
    return last[:1].isupper() and any(c.islower() for c in last)


def _parts(expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The expressions an operator, a container or an f-string is made of; None for anything else."""
    if isinstance(expr, cst.BinaryOperation):
        return [expr.left, expr.right]
    if isinstance(expr, cst.FormattedString):
        return [p.expression for p in expr.parts if isinstance(p, cst.FormattedStringExpression)]
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set, cst.Dict)):
        return [v for e in expr.elements for v in ((e.key, e.value) if isinstance(e, cst.DictElement) else (e.value,))]
    return None


def _length_change(f: Facts, use: cst.CSTNode, depth: int = 2) -> cst.CSTNode | None | bool:
    """What a use of a list does to its length: None where it reads it (`window[-1]`, `len(window)`,
    `for v in window`, `v in window`, `window.index(v)`, a builtin reader, a function of the program
    that only reads its parameter so), the statement where it adds or takes one item
    (`window.append(v)`, `window.pop(0)`, `del window[0]`; `np.mean(window)` reads it too), False where it hands the list on or
    changes it otherwise (`return window`, `other = window`, `window.extend(vs)`, `window += vs`)."""
    parent = f.parent(use)
    if isinstance(parent, cst.Attribute) and parent.value is use:
        call = f.parent(parent)
        if not (isinstance(call, cst.Call) and call.func is parent):
            return False
        method = parent.attr.value
        return f.statement(call) if method in ONE_ITEM else None if method in LENGTH_KEEPING else False
    if isinstance(parent, cst.Subscript) and parent.value is use:
        above = f.parent(parent)
        if isinstance(above, cst.Del):
            index = parent.slice[0].slice if len(parent.slice) == 1 else None
            return f.statement(above) if isinstance(index, cst.Index) else False
        return None  # `window[-1]`, `window[i] = v`
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is use or isinstance(parent, cst.ComparisonTarget):
        return None
    if isinstance(parent, cst.Arg) and parent.value is use and not parent.star and isinstance(call := f.parent(parent), cst.Call):
        if dotted(call.func) in LIST_READERS or f.qualify(call.func) in NUMERIC_READERS:
            return None
        funcs = [] if f.builds(call) else f.user_functions(call)
        return None if depth and funcs and all(_only_reads(f, func, call, use, depth) for func in funcs) else False
    return False


def _only_reads(f: Facts, func: cst.FunctionDef, call: cst.Call, given: cst.CSTNode, depth: int) -> bool:
    """Does `func`, given the list `given` by `call`, only read it (every use of its parameter a read)?"""
    params = [p for p in param_names(func) if f.argument_for(call, func, p) is given]
    return len(params) == 1 and all(_length_change(f, use, depth - 1) is None for use in f.uses(params[0], func)
                                    if not isinstance(f.parent(use), cst.Param))


def _conditional(f: Facts, stmt: cst.CSTNode, expr: cst.CSTNode) -> bool:
    """Does `stmt` run on some of the paths to `expr` only (an `if`, `try` or loop that `expr` is
    not in)?"""
    for anc in f.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            return False
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.Try)) and not f.is_inside(expr, anc):
            return True
    return False


def _learning_rate(node: cst.Subscript) -> bool:
    """`optimizer.param_groups[0]["lr"]` (or `"initial_lr"`)."""
    key = node.slice[0].slice if len(node.slice) == 1 else None
    inner = node.value
    return isinstance(key, cst.Index) and string_value(key.value) in ("lr", "initial_lr") \
        and isinstance(inner, cst.Subscript) and mt.is_attribute(inner.value, "param_groups")


def _per_process_module(qualified: str) -> bool:
    """Is `qualified` of a module whose functions answer per process (`PER_PROCESS_MODULES`:
    `time.time`, `numpy.random.rand`; not `numpy.sort`)?"""
    return any(qualified == m or qualified.startswith(m + ".") for m in PER_PROCESS_MODULES)


def _computes(qualified: str | None, given: bool) -> bool:
    """A function of another module taken to compute its answer from its arguments alone, whatever
    the process: any module's but those that answer per process (`np.sort`, `re.search`,
    transformers' `HfArgumentParser`; not `time.time`, `random.random`, `np.random.rand`), where it
    is `given` arguments or is a class built with its defaults (`DatasetDict()`): a function asked
    nothing answers from state of its own (`should_stop()`, an event a signal handler sets). A
    function whose name says rank is refused before (`SameValues._per_process`); one handed a
    model, a loader or a value read from a rank, after (`SameValues._shared`)."""
    return qualified is not None and not _per_process_module(qualified) and (given or _class_name(qualified))


def _constant_of_library(qualified: str | None) -> bool:
    """An attribute of a module of the standard library, not called: a constant of the module
    (`sys.maxsize`, `math.inf`) or the command line (`sys.argv`), one for the whole job; not of a
    module that answers per process (`os.environ`), nor a name another module holds (an event a
    signal handler sets)."""
    return qualified is not None and "." in qualified and qualified.split(".")[0] in sys.stdlib_module_names \
        and not _per_process_module(qualified)


def _torch_function(name: str | None) -> bool:
    """A function of torch that computes from its arguments alone (`torch.isnan`, `torch.stack`),
    not a random draw nor a question about this process or its device."""
    if name is None or not name.startswith("torch.") or name.startswith(("torch.distributed.", "torch.cuda.")):
        return False
    last = name.rsplit(".", 1)[-1]
    return not last.startswith(("rand", "normal", "bernoulli", "multinomial", "poisson", "manual_seed", "seed"))


def _unpacked_batch_size(f: Facts, ref: Ref) -> bool:
    """Is every value of `ref` the first element unpacked from a batch's shape (`n, c, h, w =
    images.shape`, `b, t = tokens.size()`)? That is `images.shape[0]` (`_batch_size`): a
    DistributedSampler gives every process as many samples, so the i-th batch has one size on
    every process; the other elements (`t`, a padded sequence's length) are the batch's own.

    Before: only `images.shape[0]` written out was the batch's size; unpacked, `n` was a value of
    this process's data, and Person_reID's skip of a short last batch read as a `continue` some
    ranks take (DDP005)."""
    unpacked = f._unpacking.get(ref, ())
    return bool(unpacked) and not f.writes(ref) and all(path == (0,) and (
        mt.is_attribute(value, "shape") or isinstance(value, cst.Call) and mt.is_method_call(value, "size")
        and not value.args) for value, path in unpacked)


def _batch_size(node: cst.CSTNode) -> bool:
    """`x.shape[0]`, `x.size(0)`, `x.size()[0]`: the size of a batch's first dimension."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
            and mt.is_zero(node.slice[0].slice.value):
        inner = node.value
        return mt.is_attribute(inner, "shape") or isinstance(inner, cst.Call) and mt.is_method_call(inner, "size") \
            and not inner.args
    return isinstance(node, cst.Call) and mt.is_method_call(node, "size") and len(node.args) == 1 \
        and mt.is_zero(node.args[0].value)


def reads_saved_state(facts: Facts, call: cst.Call) -> bool:
    """A call that reads saved state ddpify does not follow: a method or an unread function
    (another module's, not torch's) whose name has the word load, resume or restore
    (`checkpointer.resume_or_load(p)`, `load_state(path, model)`, `load_checkpoint(...)`; not
    `DataLoader(...)`, not `get_loader()`). Every process reads the same file; what the loaded
    objects expect is that loader's business."""
    name = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
    if not name or not LOAD_WORD.search(name) or (facts.qualify(call.func) or "").startswith("torch."):
        return False
    return isinstance(call.func, cst.Attribute) or not facts.user_functions(call)


def values(facts: Facts) -> SameValues:
    """The shared-value questions of `facts`, built once per program."""
    found = facts.__dict__.get("_values")
    if found is None:
        found = facts.__dict__["_values"] = SameValues(facts, ranks(facts))
    return found


def same_everywhere(facts: Facts, expr: cst.CSTNode) -> bool:
    """The core answer (`SameValues.same_everywhere(expr, wide=False)`): what the rewrites ask."""
    return values(facts).same_everywhere(expr, wide=False)


def per_process(facts: Facts, expr: cst.BaseExpression) -> bool:
    """Does `expr` read what each process has its own of (a rank, `os.getpid()`, the clock), itself
    or through the names it reads (`SameValues._reads_per_process`)? A path built so names a file
    of each process's own."""
    return values(facts)._reads_per_process(expr)


def is_rank_test(facts: Facts, test: cst.CSTNode) -> bool:
    """Does `test` part the processes: does it read a rank (`Ranks.rank_dependent`) and is it not
    proven the same on every process anyway (`Ranks.rank_test`)? The one answer to "is this the
    user's rank guard", for the rewrites and for `check`."""
    return ranks(facts).rank_test(test)


def ranks(facts: Facts) -> Ranks:
    """The rank questions of `facts`, built once per program, told what is proven the same on
    every process by `values(facts)` (each asks the other)."""
    found = facts.__dict__.get("_ranks")
    if found is None:
        found = facts.__dict__["_ranks"] = Ranks(facts, shared=lambda test: values(facts).same_everywhere(test))
    return found


# what a function that picks one of its arguments may read besides them (`isinstance(d, str)`)
# tensor methods that hand back a tensor of the one they are called on (moved, cast, reshaped): never None
TENSOR_KEEPS = frozenset({"cuda", "cpu", "to", "float", "half", "double", "bfloat16", "long", "int", "bool", "byte",
                          "contiguous", "clone", "detach", "pin_memory", "permute", "view", "reshape", "squeeze",
                          "unsqueeze", "transpose", "flatten", "sub", "div", "mul", "add", "type"})
PICKING_BUILTINS = frozenset({"None", "True", "False", "isinstance", "callable", "len", "type", "hasattr"})


def _selects_an_argument(f: Facts, func: cst.FunctionDef) -> bool:
    """Does `func` return one of its arguments (or None, or a literal), chosen by tests of its
    arguments alone, so that it returns a shared value wherever every argument is one? lucidrains'
    `default`: `def default(*args): for arg in args: if exists(arg): return arg` / `return None`,
    with `def exists(v): return v is not None`; `def default(v, d): return v if exists(v) else d`.
    What it reads is its parameters, the names its loops bind from them, a few builtins
    (`isinstance`) and functions of the program that read their own parameters alone (`exists`):
    no rank, clock or random draw can choose. Not a function that calls what it is given (`d()`)."""
    block = f.parents.get(func)
    if block is not None and isinstance(f.parents.get(block), cst.ClassDef):
        return False  # a method: what it reads of `self` is the object's state, not an argument
    params = {*param_names(func), *(p.name.value for p in (func.params.star_arg, func.params.star_kwarg)
                                    if isinstance(p, cst.Param))}
    assigned: list[cst.BaseExpression] = [
        *(t.target for a in mt.findall(func.body, cst.Assign) for t in a.targets),
        *(a.target for a in mt.findall(func.body, cst.AugAssign)), *(a.target for a in mt.findall(func.body, cst.AnnAssign))]
    if any(t.value in params for target in assigned for t in target_names(target)):
        return False  # `epoch = self.loader.epoch`: a parameter set anew holds something else
    picked = params | {t for loop in mt.findall(func.body, cst.For) if isinstance(loop.iter, cst.Name)
                       and loop.iter.value in params for t in (n.value for n in target_names(loop.target))}
    returns = f.returns_in(func)
    if not returns or not all(r.value is None or mt.is_name(r.value, "None") or isinstance(r.value, cst.BaseNumber)
                              or string_value(r.value) is not None or _picks(r.value, picked) for r in returns):
        return False
    if any(isinstance(c.func, cst.Name) and c.func.value in picked for c in mt.findall(func.body, cst.Call)):
        return False  # `d()`: what a given function returns
    for node in mt.findall(func.body, cst.Name):
        parent = f.parents.get(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return False  # `val.count`: what an object given holds, not the object
        if node.value in picked or node.value in PICKING_BUILTINS or isinstance(parent, cst.Attribute) \
                and parent.attr is node or isinstance(parent, cst.Arg) and parent.keyword is node:
            continue
        helpers = f.user_functions(parent) if isinstance(parent, cst.Call) and parent.func is node else []
        if not (helpers and all(_reads_its_parameters(h) for h in helpers)):
            return False
    return True


def _picks(value: cst.BaseExpression, picked: set[str]) -> bool:
    """A name of `picked`, or `a if test else b` of such names."""
    if isinstance(value, cst.IfExp):
        return _picks(value.body, picked) and _picks(value.orelse, picked)
    return isinstance(value, cst.Name) and value.value in picked


def _reads_its_parameters(func: cst.FunctionDef) -> bool:
    """Does `func` read its parameters alone, and a few builtins (`def exists(v): return v is not None`)?"""
    params = set(param_names(func))
    return all(n.value in params or n.value in PICKING_BUILTINS for n in mt.findall(func.body, cst.Name))


def _tested_for_none(test: cst.Comparison) -> cst.BaseExpression | None:
    """`x` of `x is None`, `x is not None`, `x == None`, `x != None` (either side), else None."""
    if len(test.comparisons) != 1 or not isinstance(
            test.comparisons[0].operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)):
        return None
    left, right = test.left, test.comparisons[0].comparator
    return left if mt.is_name(right, "None") else right if mt.is_name(left, "None") else None


def _in_init(f: Facts, stmt: cst.CSTNode) -> bool:
    """Does `stmt` run in a class's `__init__` (each construction)?"""
    scope = f.scope(stmt)
    return isinstance(scope, cst.FunctionDef) and scope.name.value == "__init__"


def _constant(value: cst.BaseExpression) -> bool:
    """`True`, `False`, `None`, a number or a string: a value that carries nothing it was computed from."""
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return mt.is_name(value, "True", "False", "None") or isinstance(
        value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString))
