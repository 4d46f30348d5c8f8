"""Which process runs what, one answer for `convert` and `check`: which tests ask which process
this is, by what their values are, not by a substring of a name:

    if rank == 0:                         # a name that is a rank (`rank`, `local_rank`, `myrank`)
    if dist.get_rank() == 0:              # a call that returns one
    if is_main_process():                 # a call that asks for the main process
    if int(os.environ["RANK"]) == 0:      # the launcher's environment
    if me == 0:  (me = int(os.environ.get("LOCAL_RANK", 0)))   # a value that comes from one of those
    if gpu == 0:  (init_process_group(..., rank=gpu))         # a name the script hands on as the rank
    if args.ranking_loss > 0:             # NOT a rank test: `ranking` is another word
    if args.local_rank != -1:             # NOT a rank test: it asks whether the run is distributed

and which expressions are the global rank (`dist.get_rank()`, `os.environ["RANK"]`, `args.rank`,
and names that only ever hold one of those) or the local one (`LOCAL_RANK`, `args.local_rank`, an
option also spelled `--local_rank`), which statements run on some processes only (under a rank
test, after an early `if rank != 0: return`, or in a function whose every call is), and which
calls are collectives (`dist.barrier()`, `all_reduce`, ddpify_runtime's `barrier`, `end_epoch`
and `agree_on`, the barrier of a process-group helper, `distr.barrier()`, or a helper of the
program that runs one). `Ranks` holds every answer for one program; it is built, told what is
proven the same on every process, by `ddpify.analysis.same_values.ranks(facts)`, and
`same_values.is_rank_test` is the question the rewrites and `check`'s rules ask."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, Ref, is_property, param_names
from ddpify.syntax.matchers import string_value
from ddpify.syntax.names import MAIN_PROCESS_WORDS, RANK_WORD, dotted, rank_word, rank_word_named
from ddpify.analysis.call_branches import left_out, literal_truth
from ddpify.analysis.cycles import Cycles
from ddpify.analysis.distributed import Launcher, accelerate_collective, environment_key, runs_nowhere, barrier_method, composer_handlers, hook_runs, \
    metric_collective
from ddpify.analysis import frameworks, writes
from ddpify.analysis import lightning
from ddpify.analysis.lightning import ONE_PROCESS_A_NODE, before_launch, lightning_hook, prepared_first
from ddpify.analysis.module_classes import is_module_class
from ddpify.analysis.models import DDP as WRAP_DDP, wrap_kind
from ddpify.analysis.objects import Sites, of

# Calls whose `rank=` argument is the calling process's rank.
# calls that start workers and pass each its index as the first argument (`mp.spawn(train, ...)`)
SPAWNED_WITH_INDEX = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})
SAMPLERS = ("torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler")
RANK_TAKERS = frozenset({"torch.distributed.init_process_group", *SAMPLERS})

# The launcher's variables that differ between processes.
RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "SLURM_PROCID", "SLURM_LOCALID",
                            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK"})


COLLECTIVES = frozenset(f"torch.distributed.{name}" for name in """
    barrier monitored_barrier all_reduce all_gather all_gather_object all_gather_into_tensor reduce
    reduce_scatter reduce_scatter_tensor broadcast broadcast_object_list gather gather_object scatter
    scatter_object_list all_to_all all_to_all_single new_group""".split()) | {
    "ddpify_runtime.barrier", "ddpify_runtime.end_epoch", "ddpify_runtime.agree_on"}
# what only says on which device a value lives: the value is the same wherever it is placed
# (`torch.load(p, map_location=f"cuda:{rank}")`, `x.to(local_rank)`, `DDP(m, device_ids=[rank])`)
PLACING_KEYWORDS = frozenset({"map_location", "device", "device_ids", "output_device"})
PLACING_METHODS = ("to", "cuda")
# what only seeds a random draw: a data set built with `seed=42 + rank` draws other samples on each
# process, not another number of them (asked where only a size counts: `Ranks(sizes_only=True)`)
SEED_KEYWORD = re.compile(r"(^|_)seed$|^random_state$", re.IGNORECASE)
# methods whose result is made of the string they are called on: a part of a rank-dependent string
# is rank-dependent (`int(device.split(":")[1])` of `device = f"cuda:{rank}"`)
STRING_PARTS = ("split", "rsplit", "partition", "rpartition", "strip", "lstrip", "rstrip", "removeprefix",
                "removesuffix", "replace", "lower", "upper", "zfill")
# XLA's ordinals number processes as torch.distributed's ranks do: the global one among all processes
GLOBAL_RANK_CALLS = frozenset({"torch.distributed.get_rank", "ddpify_runtime.get_rank", "torch_xla.runtime.global_ordinal",
                               "torch_xla.core.xla_model.get_ordinal"})
LOCAL_RANK_CALLS = frozenset({"torch.distributed.get_node_local_rank", "torch_xla.runtime.local_ordinal",
                              "torch_xla.core.xla_model.get_local_ordinal"})
# the addresses of this machine itself, as a `MASTER_ADDR`
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
MODULE_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.ModuleDict"})  # modules held by index or key
CALLERS_DEPTH = 2  # calls up `reaching_stores` follows the way to a read of another object's attribute
COLLECTIVE_DEPTH = 8  # calls deep a collective is looked for (a trainer's evaluator, its model, the layers of that)
GLOBAL_RANK_VARIABLES = frozenset({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"})


# calls that may make the processes meet, by the name called, wherever the name comes from (`may_wait_between`)
MEETING_NAMES = frozenset({"backward", "barrier", "monitored_barrier", "synchronize", "wait_for_everyone", "all_reduce",
                           "all_gather", "all_gather_object", "broadcast", "broadcast_object_list", "reduce", "gather",
                           "scatter", "all_to_all"})


class Ranks:
    """The rank questions of one program (`ranks(facts)`), each answer kept. `shared` tells a test
    proven the same on every process (`SameValues.same_everywhere`; none without it): one that also reads the rank
    does not part the processes. With `sizes_only` it answers whether a value's size may differ
    between processes: an argument that only seeds a draw (`seed=42 + rank`, `SEED_KEYWORD`) is not
    asked (`SameValues._own_share`: the length of a loader of a data set so built is the same on every
    process); kept apart from the plain questions, whose answers it never shares."""

    def __init__(self, facts: Facts, shared: Callable[[cst.CSTNode], bool] = lambda test: False,
                 sizes_only: bool = False) -> None:
        self.facts = facts
        self.sizes_only = sizes_only
        self._proven_shared = shared
        self._global: dict[cst.CSTNode, bool] = {}
        self._collective: dict[cst.CSTNode, bool] = {}
        self._rank_tests: dict[cst.CSTNode, bool] = {}
        self._testing: set[cst.CSTNode] = set()  # the tests `rank_test` is answering
        self._ruled_out: dict[cst.CSTNode, frozenset[str]] = {}
        self._reached: dict[tuple[cst.CSTNode, int], frozenset[str]] = {}
        self._passed: dict[Ref, list[cst.BaseExpression]] = {}  # `attribute_of_passed`
        self.cycles = Cycles()  # what the questions below follow, and what each kept answer looked up
        self._returning: set[cst.CSTNode] = self.cycles.following()  # the calls `_returns_rank_test` is following
        self._following: set[Ref] = self.cycles.following()  # the names `rank_dependent` is following (a cycle adds nothing)
        self._dependent: dict[tuple[cst.CSTNode, int], tuple[bool, frozenset]] = {}  # `rank_dependent`
        self._sentinels: dict[tuple[Ref, bool], bool] = {}  # `set_on_some_ranks`
        self._flags: dict[Ref, bool] = {}  # `flag_set_by_rank`
        self._worded: dict[cst.CSTNode, bool] = {}  # `_reads_rank_word`
        self._asserts = _Asserts()

    def is_global_rank(self, expr: cst.CSTNode) -> bool:
        """Is `expr` the process's rank among all processes of the job (not its index on this node)?
        `dist.get_rank()` (XLA's `xr.global_ordinal()`), `int(os.environ["RANK"])`, `args.rank` from
        the command line, a name every assignment of which is one of those (`rank = dist.get_rank()`, `rank = setup()` where
        `setup` returns one), `args.rank * ngpus + gpu`, `rank % world_size` (the rank itself), a class's field whose `default_factory`
        returns one (`global_rank: int = Field(default_factory=get_global_rank)`), a name the script hands on as
        its rank (`init_process_group(rank=rank)`, `ranks_by_role`) every assignment of which offsets an index
        by another count (`rank = args.nr * args.gpus + gpu`, mp.spawn's idiom for several nodes), whatever
        the offset's names say.
        A parameter no call in this file passes (`def worker(rank, world)` started by
        `mp.spawn`) is not: there it counts the processes of one node. A name read after an
        assignment of it earlier in its own block, with nothing between that may assign it, holds
        that assignment's value only (`local_rank = dist.get_rank()` then `set_device(local_rank)`,
        `local_rank` also the worker's parameter)."""
        if expr not in self._global:
            self._global[expr] = False  # a cycle of names adds nothing (a name's own update: `_global_rank`)
            self._global[expr] = self._global_rank(expr)
        return self._global[expr]

    def _global_rank(self, expr: cst.CSTNode) -> bool:
        f = self.facts
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "int") and expr.args:
            return self.is_global_rank(expr.args[0].value)
        if isinstance(expr, cst.Call) and self._factory_returns(expr):  # `Field(default_factory=get_global_rank)`
            return all(self.is_global_rank(r) for r in self._factory_returns(expr))
        if isinstance(expr, cst.Call):
            returned = [r for func in f.user_functions(expr) for r in f.returned(func)]
            if returned and dotted(expr.func) not in f.classes:  # `rank = setup()`: what it returns
                # what a run of one process returns does not count, as for a name's assignments below
                # (`return 0` in the `else` of `if dist.is_initialized(): return dist.get_rank()`)
                ranks = [r for r in returned if not _whole_number(r) and not self.undistributed(r)]
                return bool(ranks) and all(self.is_global_rank(r) for r in ranks)
            return f.qualify(expr.func) in GLOBAL_RANK_CALLS and not _in_group(expr) \
                or frameworks.rank_call(f, expr) == "global" or self._reads_rank_variable(expr)
        if isinstance(expr, cst.Subscript):
            return self._reads_rank_variable(expr)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Multiply)):
            return self.is_global_rank(expr.left) or self.is_global_rank(expr.right)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
            # `rank % world_size` is the rank itself (every rank is below the world's size); only
            # the GPU count of a node makes it a local index (`rank % torch.cuda.device_count()`)
            return self.is_world_size(expr.right) and self.is_global_rank(expr.left)
        if isinstance(expr, cst.IfExp):  # `dist.get_rank() if dist.is_initialized() else 0`
            return self.is_global_rank(expr.body) or self.is_global_rank(expr.orelse)
        ref = f.ref(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if ref is None:
            return False
        last = _assigned_just_before(f, expr) if isinstance(expr, cst.Name) else None
        sources = [last] if last is not None else f.sources(ref) or self._stored_elsewhere(expr)
        # what a run of one process assigns does not count (`else: local_rank = int(os.environ.get(
        # "LOCAL_RANK", 0))` of `if dist.is_initialized(): local_rank = dist.get_rank()`)
        sources = [s for s in sources if not self.undistributed(s)] or sources
        if sources and ref in self.ranks_by_role and all(
                isinstance(s, cst.BinaryOperation) and isinstance(s.operator, cst.Add) for s in sources):
            return True  # handed on as the rank, an index offset by another count: `rank = args.nr * args.gpus + gpu`
        if sources:  # `rank = int(os.environ["RANK"])` ... else `rank = 0` (one process; also `-1`:
            # `local_rank = -1` then `if distributed: local_rank = dist.get_rank()`)
            ranks = [s for s in sources if not _whole_number(s)]
            # an update of the name itself keeps what it was: a rank where it says so (`args.rank =
            # args.rank * ngpus + gpu`), a counter where not (`i = i + 1`)
            own = [s for s in ranks if any(dotted(n) == ref.name and f.ref(n) == ref for n in names_in(f, s))]
            return bool(ranks) and all(self.is_global_rank(s) for s in ranks if s not in own) and (
                not own or ref.name.rpartition(".")[2] == "rank" and not self._launcher_local(expr))
        return isinstance(expr, cst.Attribute) and expr.attr.value == "rank" and any(
            mt.is_parse_args(o) for o in f.origins(expr.value)) and not self._launcher_local(expr)

    def _factory_returns(self, call: cst.Call) -> list[cst.BaseExpression]:
        """What the program's function a field's `default_factory=` names returns (`Field(default_factory=
        get_global_rank)`, `dataclasses.field(default_factory=...)`): the field's value."""
        f = self.facts
        factory = mt.keyword(call, "default_factory")
        name = factory.value if factory is not None and isinstance(factory.value, cst.Name) else None
        funcs = [fn for fn in f.functions.get(f._defined_name(name), ()) if f.enclosing_class(fn) is None] if name else []
        return [r for fn in funcs for r in f.returned(fn)]

    def is_local_rank(self, expr: cst.CSTNode, depth: int = 4) -> bool:
        """Is `expr` the process's index on its node: `os.environ["LOCAL_RANK"]`, `args.local_rank`,
        `state.local_process_index`, `args.rank` of an option also spelled `--local_rank` (torch.distributed.launch fills it),
        `dist.get_node_local_rank()` (XLA's `xm.get_local_ordinal()`), or a name every assignment of which is one of those?"""
        f = self.facts
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "int") and expr.args:
            return self.is_local_rank(expr.args[0].value, depth)
        key = self.environment_key(expr)
        if key is not None:
            return key in ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
        if isinstance(expr, cst.Call) and self._factory_returns(expr) and depth:
            return all(self.is_local_rank(r, depth - 1) for r in self._factory_returns(expr))
        if isinstance(expr, cst.Call):
            return f.qualify(expr.func) in LOCAL_RANK_CALLS or frameworks.rank_call(f, expr) == "local"
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        last = (expr.attr if isinstance(expr, cst.Attribute) else expr).value.lower()
        if "local_rank" in last or last == "local_process_index" or self._launcher_local(expr):
            return True
        ref = f.ref(expr)
        sources = [s for s in f.sources(ref) if not _whole_number(s)] if ref is not None and depth else []
        if not sources and depth:
            sources = self._stored_elsewhere(expr)
        return bool(sources) and all(self.is_local_rank(s, depth - 1) for s in sources)

    def _stored_elsewhere(self, expr: cst.CSTNode) -> list[cst.BaseExpression]:
        """What the program stores into an attribute that has no assignment of its own name where it
        is read: `self.config.device`, where another module does `config.device =
        int(os.environ["LOCAL_RANK"])` to the object `self.config` holds (`Objects.stored_into`: the
        same object, not any attribute of that name). A constant stored there (`config.device =
        "cpu"`, `0`: where no launcher set the variable) is no process's index and is left out."""
        if not isinstance(expr, cst.Attribute):
            return []
        return [s for s in of(self.facts).stored_into(expr) if not _whole_number(s) and not isinstance(s, cst.SimpleString)]

    def _launcher_local(self, expr: cst.CSTNode) -> bool:
        """`args.rank` where the parser also spells the option `--local_rank`/`--local-rank`
        (`add_argument("--rank", "--local_rank", type=int)`): the launcher fills it with the local
        rank, so it is this node's index, whatever its name."""
        if not isinstance(expr, cst.Attribute):
            return False
        return any("local" in option for option in self._option_strings.get(expr.attr.value, ()))

    @cached_property
    def _option_strings(self) -> dict[str, set[str]]:
        """Each command-line option's destination and its spellings (`rank`: {"--rank", "--local_rank"})."""
        index: dict[str, set[str]] = {}
        for call in self.facts.calls_named("add_argument"):
            if not mt.is_method_call(call, "add_argument"):
                continue
            options = [v for a in call.args if a.keyword is None for v in [string_value(a.value)] if v]
            dest = mt.keyword(call, "dest")
            name = string_value(dest.value) if dest is not None else next(
                (o.lstrip("-").replace("-", "_") for o in options if o.startswith("--")), None)
            if name:
                index.setdefault(name, set()).update(options)
        return index

    def _reads_rank_variable(self, expr: cst.CSTNode) -> bool:
        """`os.environ["RANK"]`, `os.environ.get("RANK")`, `os.getenv("RANK", 0)`."""
        f = self.facts
        if isinstance(expr, cst.Subscript):
            key = expr.slice[0].slice if len(expr.slice) == 1 else None
            return f.qualify(expr.value) == "os.environ" and isinstance(key, cst.Index) and string_value(key.value) \
                in GLOBAL_RANK_VARIABLES
        if isinstance(expr, cst.Call) and expr.args and (
                f.qualify(expr.func) == "os.getenv" or isinstance(expr.func, cst.Attribute)
                and expr.func.attr.value == "get" and f.qualify(expr.func.value) == "os.environ"):
            return string_value(expr.args[0].value) in GLOBAL_RANK_VARIABLES
        return False

    @cached_property
    def ranks_by_role(self) -> frozenset[Ref]:
        """The names the script hands on as a rank (`init_process_group(rank=gpu)`): ranks, whatever
        they are called (`ddpify.analysis.ranks.ranks_by_role`), and the parameter each worker is
        started with its own index in (`Launcher.started_with_index`: `Process(target=partial(train,
        cfg=cfg), args=(i,))` in `for i in range(n):`)."""
        return ranks_by_role(self.facts) | self.launcher.started_with_index

    @cached_property
    def rank_tables(self) -> frozenset[tuple[str, str | None]]:
        """The lists the script takes its process's rank from by index (`init_process_group(...,
        rank=opt.gpu_ranks[device_id])`): `opt.gpu_ranks`. An item of one is a rank wherever the
        program reads it at an index that is not a constant (`gpu_rank = opt.gpu_ranks[device_id]` in
        another module: `if gpu_rank <= 0:` is a rank test; `rank_item`). Each with the key of the
        entry where the rank is taken at a constant one (`rank=config["rank"]`: `("config",
        "rank")`), else None: of such a mapping only that entry is the rank, not
        `config["data_loader"]`."""
        f = self.facts
        return frozenset((table, _constant_key(arg.value)) for call in f.calls_to(*RANK_TAKERS)
                         if (arg := mt.keyword(call, "rank")) is not None and isinstance(arg.value, cst.Subscript)
                         and (table := dotted(arg.value.value)) is not None)

    def rank_item(self, expr: cst.CSTNode) -> bool:
        """An item of a rank table (`rank_tables`) at an index that is not a constant:
        `opt.gpu_ranks[device_id]` (not `opt.gpu_ranks[0]`, the same on every process), or the
        entry of a mapping the rank is taken from (`config["rank"]`, not `config["data_loader"]`)."""
        if not isinstance(expr, cst.Subscript) or (table := dotted(expr.value)) is None:
            return False
        key = _constant_key(expr)
        return (table, None) in self.rank_tables and not all(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Integer) for e in expr.slice) \
            or key is not None and (table, key) in self.rank_tables

    def rank_name(self, expr: cst.CSTNode) -> bool:
        """Is this name a rank: by its words (`rank`, `local_rank`, `is_main_process`) or by its
        role (`gpu` where the script calls `init_process_group(rank=gpu)`)?"""
        if rank_word(expr) or frameworks.main_test(self.facts, expr):
            return True
        ref = self.facts.ref(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        return ref is not None and ref in self.ranks_by_role

    def rank_dependent(self, test: cst.CSTNode, depth: int = 2) -> bool:
        """Can `test` come out differently on different processes because it reads the rank?
        `rank == 0`, `dist.get_rank() != 0`, `is_main_process()`, `args.local_rank in [-1, 0]`, a
        name assigned such a test (`master = rank == 0`); not a comparison with -1 or None
        (`args.local_rank != -1` asks whether the run is distributed, the same everywhere).
        Each answer is kept with what it looked up of the names and calls being followed
        (`ddpify.analysis.cycles`), and reused where those look-ups would answer alike."""
        key = (test, depth)
        kept = self._dependent.get(key)
        if kept is not None and self.cycles.reusable(kept[1]):
            return kept[0]
        found, answer = self.cycles.recall(key)
        if found:
            return answer
        started = self.cycles.start()
        try:
            answer = self._rank_dependent(test, depth)
        finally:
            asked = self.cycles.keep(started)
        if asked is not None:
            self._dependent[key] = (answer, asked)
        else:
            self.cycles.remember(key, answer)
        return answer

    def _rank_dependent(self, test: cst.CSTNode, depth: int) -> bool:
        if isinstance(test, cst.Comparison) and isinstance(test.left, cst.SimpleString) and all(
                isinstance(t.operator, (cst.In, cst.NotIn)) for t in test.comparisons):
            return False  # `"SLURM_PROCID" in os.environ`: which keys there are, not what they hold
        if isinstance(test, cst.Comparison) and isinstance(test.left, (cst.Name, cst.Attribute)) and all(
                _minus_one_or_none(t.comparator) for t in test.comparisons) and self.set_on_some_ranks(test.left):
            return True  # `saver is not None` of a saver only some ranks build
        if isinstance(test, cst.Comparison) and (self.rank_name(test.left) or self._reads_rank_environment(
                test.left) or self.rank_dependent(test.left, depth)) and all(_asks_distributed(t) for t in test.comparisons):
            return False
        if isinstance(test, (cst.Name, cst.Attribute)):
            return self._held_rank_dependent(test, depth)
        entries = self.dict_entries(test)
        if entries is not None:  # `cfg["amp"]` of `cfg = {"amp": True, "main": rank == 0}`: that entry only
            return any(self.rank_dependent(e, depth) for e in entries)
        if rank_key(test):  # `opt["rank"]` of a configuration not written here as a literal
            return True
        if self.rank_item(test):  # `opt.gpu_ranks[device_id]`
            return True
        entry = self._entry_rank_dependent(test, depth)
        if entry is not None:  # `os.environ["LOCAL_RANK"]`; `args["compute_fid"]` of a dict whose
            return entry  # `args["local_rank"]` each process sets
        named = named_read(test)
        if named is not None:  # `getattr(opts, "ddp.rank", 0)`: the attribute it names
            return self._read_by_name(*named, depth)
        if isinstance(test, cst.Call):
            return self._call_rank_dependent(test, depth)
        return any(self.rank_dependent(child, depth) for child in mt.children(test) if isinstance(
            child, (cst.BaseExpression, cst.ComparisonTarget, cst.FormattedStringExpression)))

    def _held_rank_dependent(self, test: cst.Name | cst.Attribute, depth: int) -> bool:
        """`rank_dependent` of a name or attribute: what it holds where it is read (its sources, the
        items a loop draws it from), or its role or its words where nothing says what it holds."""
        ref = self.facts.ref(test)
        if ref is not None and ref in self.ranks_by_role:  # handed on as the rank: whatever it holds
            return True
        if self._names_a_function(test, ref):  # `if is_main_process:`, never called: true everywhere
            return False
        iterables = self._loop_iterables(test, ref)
        if iterables is not None:  # `{rank: ... for rank, start in enumerate(...)}`: an index, whatever its name
            return depth > 0 and any(self.rank_dependent(i, depth - 1) for i in iterables)
        sources = self._held(test, ref)
        keyed = {id(v) for k, v in self._items_by_key.get(ref, []) if k is not None} if ref is not None else set()
        # (an item stored at a literal key, `args["local_rank"] = rank`, is asked where that entry is read)
        sources = [s for s in sources if id(s) not in keyed]
        if self.set_on_some_ranks(test, falsy=self.truth_tested(test)) or self.flag_set_by_rank(test):
            return True  # `saver`, `is_best` set on some ranks only; `default_gpu` set True where `rank == 0`
        if sources and all(isinstance(s, cst.Integer) for s in sources) and self.rank_name(test):
            return True  # `cfg.LOCAL_RANK = 0`, a default: the rank is set where no source shows it
        if sources and depth > 0 and ref is not None and not self.cycles.held(ref, self._following):
            # what it holds, not what it is called (`do_multi_rank_gather`); a name passed on
            # as it is (`self.device_id = device_id`, a constructor's argument in another
            # file) costs no depth: it is the same value
            self._following.add(ref)
            try:
                return any(self.rank_dependent(s, depth - (not isinstance(s, (cst.Name, cst.Attribute))))
                           for s in sources)
            finally:
                self._following.discard(ref)
        return self.rank_name(test) or bool(sources) and any(self._reads_rank_word(s) for s in sources) \
            or not sources and isinstance(test, cst.Attribute) and self.property_rank_test(test, depth)

    def _names_a_function(self, test: cst.Name | cst.Attribute, ref: Ref | None) -> bool:
        """Is `test` the bare name of a function the program defines at a module's top level (its
        own, or imported from a module of the program), read without a call, and nothing binds
        otherwise (no store, no parameter of that name)? Its value is the function object, true on
        every rank whatever the function would answer: MLCommons' UNet3D reference writes
        `if is_main_process:` (runtime/distributed_utils.py's `def is_main_process(): return
        get_rank() == 0`) around `mlperf_submission_log()`, which every rank runs. Before, the words
        of the name made it a rank test."""
        f = self.facts
        if not isinstance(test, cst.Name) or ref is None or f.sources(ref) or f.writes(ref):
            return False
        scope: cst.CSTNode | None = f.scope(test)
        while isinstance(scope, (cst.FunctionDef, cst.Lambda)):
            if isinstance(scope, cst.FunctionDef) and test.value in param_names(scope) or isinstance(scope, cst.Lambda) \
                    and any(p.name.value == test.value for p in scope.params.params):
                return False
            scope = f.scope(scope)
        return any(isinstance(fn, cst.FunctionDef) and f.enclosing_class(fn) is None and isinstance(f.scope(fn), cst.Module)
                   for fn in f.functions.get(f._defined_name(test), ()))

    def _loop_iterables(self, name: cst.Name | cst.Attribute, ref: Ref | None) -> list[cst.BaseExpression] | None:
        """What the loop variable `name` is drawn from where it is read, when a loop binds it there
        and nothing else does: the iterable of the comprehension whose `for` binds it (`rank` of
        `{rank: layers[s:s + n] for rank, s in enumerate(range(0, len(layers), n))}`), with the
        filters that pick its items (`if i % world_size == dist.get_rank()`), or of the
        `for` loops that are its only bindings and hold the read (`for rank in range(world_size):`);
        else None. Such a name holds the items of what it is drawn from, whatever its name says:
        the same on every process unless that iterable differs between them."""
        if not isinstance(name, cst.Name):
            return None
        f = self.facts
        for anc in f.ancestors(name):
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                break
            if isinstance(anc, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                comp: cst.CompFor | None = anc.for_in
                while comp is not None:
                    if any(n.value == name.value for n in mt.findall(comp.target, cst.Name)):
                        drawn: list[cst.BaseExpression] = [comp.iter]
                        while comp is not None:  # and the filters of its `for` and the inner ones: which items pass
                            drawn += [test.test for test in comp.ifs]
                            comp = comp.inner_for_in
                        return drawn
                    comp = comp.inner_for_in
        if ref is None or f.sources(ref):
            return None
        loops = f.loops_binding(ref)
        if loops and any(f.is_inside(name, loop.body) for loop in loops):
            return [loop.iter for loop in loops]
        return None

    def _read_by_name(self, obj: cst.BaseExpression, name: str, depth: int) -> bool:
        """Is an attribute read by its name (`getattr(opts, "ddp.rank", 0)`) rank-dependent, as the
        attribute read `opts.rank` is: what the program stores under that name (`setattr(opts,
        "ddp.rank", i)`, or `opts.rank = i` where the name is an identifier) into an object `obj` may
        hold (any store of the name where the objects are not known: an options object handed
        through `mp.spawn`'s arguments), each asked in turn; with no store, the name's words
        (`"ddp.rank"` is a rank). Before, the call was asked as a call of `getattr`, which reads no
        rank, and `node_rank = getattr(opts, "ddp.rank", 0)` made `if node_rank == 0:` a test the
        same on every process: each rank saved the checkpoint, and a DDP forward under it was a
        collective every rank reached."""
        objects = of(self.facts)
        held = objects.values(obj)
        stores = [value for target, value in self._stores_by_name.get(name, ())
                  if not held or not (into := objects.values(target)) or held & into]
        if stores and depth > 0:
            return any(self.rank_dependent(value, depth - 1) for value in stores)
        return not stores and rank_word_named(name)

    @cached_property
    def _stores_by_name(self) -> dict[str, list[tuple[cst.BaseExpression, cst.BaseExpression]]]:
        """Each attribute name and the (object, value) pairs the program stores under it:
        `setattr(obj, "name", value)` with a literal name, and `obj.name = value`."""
        stores: dict[str, list[tuple[cst.BaseExpression, cst.BaseExpression]]] = {}
        for call in self.facts.calls_named("setattr"):
            name = string_value(call.args[1].value) if mt.is_call_of(call, "setattr") and len(call.args) == 3 else None
            if name is not None:
                stores.setdefault(name, []).append((call.args[0].value, call.args[2].value))
        for target, value, _ in self.facts.assigns:
            if isinstance(target, cst.Attribute):
                stores.setdefault(target.attr.value, []).append((target.value, value))
        return stores

    def _held(self, test: cst.Name | cst.Attribute, ref: Ref | None) -> list[cst.BaseExpression]:
        """What the name or attribute `test` may hold where it is read: its sources, only those that
        reach the read where a store always made on the way there hides the others (`reaching_stores`),
        or for an attribute of a parameter what the callers set on it, or for an attribute with no
        store of its own what the program stores into the object it holds (`_stored_elsewhere`, what
        `is_global_rank` and `is_local_rank` read too: one answer to which values hold the rank).

        Before: MonoDetector's `cfg.GPU_ID = local_rank` (`local_rank = init_dist()`, which returns
        `dist.get_rank()`) in tools/train_ddp.py made `self.cfg.GPU_ID` the global rank for DDP001
        in engine/ddp_engine.py, but `if self.cfg.GPU_ID == 0:` there a test the same on every
        process: its SummaryWriter, `export_cfg` and checkpoint were each "every rank writes"
        (DDP006; round 31's held-out half, decision 0272)."""
        if ref is None:
            return []
        sources = self.facts.sources(ref) + of(self.facts).instance_stores(ref)
        reaching = self.reaching_stores(test) if sources else None
        if reaching is not None:  # `self.path` read just after `self.set_path()` stored it
            return reaching
        if not sources and isinstance(test, cst.Attribute):  # `args.should_save` set by the caller of `train(args)`
            return self.attribute_of_passed(ref) or self._stored_elsewhere(test)
        later = self._stored_after_in_one_run(test, ref) if isinstance(test, cst.Attribute) else set()
        return [s for s in sources if id(s) not in later]

    def _stored_after_in_one_run(self, read: cst.Attribute, ref: Ref) -> set[int]:
        """The values (by id) that statements of the read's own method store into `self.x` after the
        read, where the method runs once per object (`__init__`, or a method only `self.m()` calls
        of such methods run, in no loop) and neither the read nor the store is in a loop of it:
        they cannot reach the read. `distribute_layers` reads `self.cfg.layers` to split it
        between the ranks, then stores each rank's own share there (`self.cfg.layers =
        self.layer_plan[dist.get_rank()]`): what it read is the configuration's, the same on
        every process."""
        f = self.facts
        func = f.scope(read)
        name = dotted(read)
        if not isinstance(func, cst.FunctionDef) or name is None or not name.startswith("self.") \
                or not self._runs_once(func, 3):
            return set()
        loops = {id(a) for a in self._loops_around(read, func)}
        return {id(value) for target, value, stmt in f.writes(ref) if f.scope(stmt) is func and dotted(target) == name
                and f.before(read, stmt) and not loops & {id(a) for a in self._loops_around(stmt, func)}}

    def _loops_around(self, node: cst.CSTNode, func: cst.FunctionDef) -> list[cst.CSTNode]:
        """The `for` and `while` loops of `func` that hold `node` (a later pass runs it again)."""
        loops: list[cst.CSTNode] = []
        for anc in self.facts.ancestors(node):
            if anc is func:
                break
            if isinstance(anc, (cst.For, cst.While)):
                loops.append(anc)
        return loops

    def _in_a_loop(self, node: cst.CSTNode, func: cst.FunctionDef) -> bool:
        for anc in self.facts.ancestors(node):
            if anc is func:
                return False
            if isinstance(anc, (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                return True
        return False

    def _runs_once(self, func: cst.FunctionDef, depth: int) -> bool:
        """Does the method `func` run once per object: `__init__`, or a method every call of which is
        `self.m(...)` in such a method, in no loop there?"""
        if func.name.value == "__init__":
            return True
        f = self.facts
        calls = f.entries(func)
        return depth > 0 and bool(calls) and all(
            isinstance(c.func, cst.Attribute) and mt.is_name(c.func.value, "self")
            and isinstance(outer := f.scope(c), cst.FunctionDef) and f.enclosing_class(outer) is f.enclosing_class(func)
            and not self._in_a_loop(c, outer) and self._runs_once(outer, depth - 1) for c in calls)

    def reaching_stores(self, read: cst.Name | cst.Attribute) -> list[cst.BaseExpression] | None:
        """What `self.x` can hold where `read` reads it, when an earlier statement of its function
        always stores it on the way there: `self.x = v`, or a call of a method of the object that
        stores it on every path (`self.get_path()` ... `torch.load(self.path)`), with the values
        statements in between may store; None where none does (every value it is ever given), or
        the way crosses a loop's start, an augmented store or a call handing `self` on, or a value
        stored there reads the attribute itself (`self.model = DDP(self.model)`: what it held before).
        `load_session` reads the path `get_saved_model_path` has just set, not the per-rank path
        another method makes of it later.

        Also `obj.x` of another object (`loader.epoch`, `self.loader.epoch`), where every object it
        may hold is one instance of a class of the program (`objects.values`: built at one call,
        in no loop): the store is a call of a method of that object, by any name that holds it
        (`loader.sync()` ... `loader.epoch`), storing `self.x` on every path; where the read's
        function stores nothing on the way, the way goes on before each call of the function
        (`saver.step()` right after `loader.sync()`, whose `step` reads `self.loader.epoch`),
        `CALLERS_DEPTH` calls up. Before, such an attribute was judged by its object, a loader,
        whose values are this process's own: an epoch every process agrees on (`sync_epoch()`:
        all-gathered, the max kept) and the loop's end it decides were a DDP005 (diffusion-pipe,
        set 27x; decision 0229)."""
        f = self.facts
        name = dotted(read) if isinstance(read, cst.Attribute) else None
        func = f.scope(read)
        if name is None or not isinstance(read, cst.Attribute) or not isinstance(func, cst.FunctionDef):
            return None
        if name.count(".") == 1 and name.startswith("self."):
            return self._reaching(f.statement(read), func, name, None, None, 0)
        receiver, sites = dotted(read.value), self._one_instance(read.value)
        return self._reaching(f.statement(read), func, "self." + read.attr.value, receiver, sites, CALLERS_DEPTH)

    def _one_instance(self, expr: cst.BaseExpression) -> Sites | None:
        """The construction every object `expr` may hold comes from, where that is one call of a
        class of the program in no loop (one object), else None."""
        objects = of(self.facts)
        sites = objects.values(expr)
        if len(sites) != 1:
            return None
        site = next(iter(sites))
        if not isinstance(site, cst.Call) or objects.constructs(site) is None or any(
                isinstance(a, (cst.For, cst.While, cst.ListComp, cst.DictComp, cst.GeneratorExp))
                for a in self.facts.ancestors(site)):
            return None
        return sites

    def _reaching(self, child: cst.CSTNode, func: cst.FunctionDef | cst.Module, name: str, receiver: str | None,
                  sites: Sites | None, depth: int) -> list[cst.BaseExpression] | None:
        """`reaching_stores` from the statement `child` of `func` back: `name` (`self.x`) of the
        object itself (`receiver` None), or of the object `receiver` names (`loader`), also by
        another name where it is the one instance `sites` (`self.x` inside its methods)."""
        f = self.facts
        found: list[cst.BaseExpression] = []
        if isinstance(child, cst.While):
            return None  # its test is read again after each pass of the body
        for anc in f.ancestors(child):
            if anc is func and isinstance(func, cst.FunctionDef) and sites is not None and depth > 0 \
                    and (calls := f.entries(func)):
                above = [self._reaching(f.statement(c), outer, name, None, sites, depth - 1)
                         if isinstance(outer := f.scope(c), (cst.FunctionDef, cst.Module)) else None for c in calls]
                return None if any(a is None for a in above) else found + [v for a in above if a for v in a]
            if anc is func and not isinstance(func, cst.Module) or isinstance(anc, (cst.For, cst.While)):
                return None  # (a loop: a later statement of its body may store it for the next pass)
            if isinstance(anc, (cst.IndentedBlock, cst.Module)):
                for stmt in reversed(anc.body[:anc.body.index(child)]):
                    stored = self._stores(stmt, name, 2) if receiver is None and sites is None \
                        else self._stores_into(stmt, name, receiver, sites)
                    if stored is None:
                        return None
                    always, values = stored
                    found += values
                    if always:  # a store made of the attribute itself refines it (`self.m = self.m.to(d)`): all it holds
                        return None if any(dotted(n) == name for v in found for n in mt.walk(v)
                                           if isinstance(n, cst.Attribute)) else found
            if type(anc) in mt.STATEMENTS:
                child = anc
        return None

    def _stores_into(self, stmt: cst.CSTNode, name: str, receiver: str | None,
                     sites: Sites | None) -> tuple[bool, list[cst.BaseExpression]] | None:
        """`_stores` of the object `receiver` names, or of the one instance `sites`, from outside
        it: a call of one of its methods (`loader.sync_epoch()`) stores `name` (`self.epoch`) as
        that method does, on every path where the call is a statement of its own and the method
        always stores it; a store into the attribute from outside, a new object bound to the
        name, or the object handed to a call, cannot be told (None)."""
        f = self.facts
        objects = of(f)
        values: list[cst.BaseExpression] = []
        always = False
        attr = name.partition(".")[2]

        def holds(expr: cst.BaseExpression) -> bool:
            return receiver is not None and dotted(expr) == receiver or sites is not None and bool(
                objects.values(expr) & sites)

        for node in mt.walk(stmt):
            bound = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target] if isinstance(
                node, (cst.AnnAssign, cst.AugAssign, cst.For)) else []
            if receiver and any(dotted(t) in (receiver, receiver.rpartition(".")[0]) for b in bound for t in mt.walk(b)
                                if isinstance(t, (cst.Name, cst.Attribute))):
                return None  # `loader = make_loader()`: another object from here on back
            if isinstance(node, cst.Assign) and any(
                    isinstance(t.target, cst.Attribute) and t.target.attr.value == attr and holds(t.target.value)
                    for t in node.targets):
                return None
            if not isinstance(node, cst.Call):
                continue
            if any(holds(a.value) for a in node.args):
                return None
            if isinstance(node.func, cst.Attribute) and (
                    receiver is not None and dotted(node.func.value) == receiver
                    or sites is not None and objects.values(node.func.value) == sites):
                methods = f.user_functions(node) or objects.methods(node)
                for method in methods:
                    inner = self._stores(method.body, name, 1)
                    if inner is None:
                        return None
                    values += inner[1]
                own = mt.sole(stmt, cst.Expr)
                if methods and own is not None and own.value is node and all(
                        self._always_stores(m.body, name, 1) for m in methods):
                    always = True
        return always, values

    def _stores(self, stmt: cst.CSTNode, name: str, depth: int) -> tuple[bool, list[cst.BaseExpression]] | None:
        """Does `stmt` store `self.<x>` (`name`) on every path through it, and what may it store
        there; None where it cannot tell (an augmented or unpacked store, `self` handed to a call)."""
        f = self.facts
        values: list[cst.BaseExpression] = []
        for node in mt.walk(stmt):
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not stmt:
                continue
            if isinstance(node, cst.AugAssign) and dotted(node.target) == name:
                return None
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    if dotted(t.target) == name:
                        values.append(node.value)
                    elif any(dotted(e) == name for e in mt.walk(t.target) if isinstance(e, cst.Attribute)):
                        return None
            if isinstance(node, cst.Call):
                if any(mt.is_name(a.value, "self") for a in node.args):
                    return None
                if isinstance(node.func, cst.Attribute) and mt.is_name(node.func.value, "self"):
                    methods = f.user_functions(node)
                    for method in methods:
                        inner = self._stores(method.body, name, depth - 1) if depth > 0 else None
                        if inner is None:
                            return None
                        values += inner[1]
        return self._always_stores(stmt, name, depth), values

    def _always_stores(self, node: cst.CSTNode, name: str, depth: int) -> bool:
        """Does every path through `node` (a statement or a block) store `self.<x>`: a plain store,
        an `if` both of whose branches do, a call of methods of the object that all do, before any
        `return` of the block?"""
        if isinstance(node, (cst.IndentedBlock, cst.Module, cst.SimpleStatementSuite, cst.SimpleStatementLine)):
            for stmt in node.body:
                if self._always_stores(stmt, name, depth):
                    return True
                if any(isinstance(n, cst.Return) for n in mt.walk(stmt)):
                    return False  # a path may leave before the store
            return False
        if isinstance(node, cst.Assign):
            return any(dotted(t.target) == name for t in node.targets)
        if isinstance(node, cst.If):
            return node.orelse is not None and self._always_stores(node.body, name, depth) and (
                self._always_stores(node.orelse.body, name, depth) if isinstance(node.orelse, cst.Else)
                else self._always_stores(node.orelse, name, depth))
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call) and depth > 0:
            call = node.value
            methods = self.facts.user_functions(call) if isinstance(call.func, cst.Attribute) and mt.is_name(
                call.func.value, "self") else []
            return bool(methods) and all(self._always_stores(m.body, name, depth - 1) for m in methods)
        return isinstance(node, cst.With) and self._always_stores(node.body, name, depth)

    def _entry_rank_dependent(self, expr: cst.CSTNode, depth: int) -> bool | None:
        """`rank_dependent` of the entry a literal key reads of a named mapping (`args["compute_fid"]`),
        following the entry, not the whole mapping: an item the program stores at another key
        (`args["local_rank"] = local_rank` in each spawned worker) leaves it as it was, a mapping it
        is handed or assigned (`args` of `main(local_rank, nprocs, args)`, the dict `mp.spawn` hands
        every process) is asked for the same entry, a dict literal for that entry's value. None where
        the mapping is not a name with sources. An environment variable is a rank by its name
        (`os.environ["LOCAL_RANK"]`, `os.environ["SLURM_LOCALID"]`)."""
        variable = self.environment_key(expr)
        if variable is not None:
            return rank_variable(variable)
        key = _read_key(expr)
        mapping = expr.value if isinstance(expr, cst.Subscript) else expr.func.value if isinstance(
            expr, cst.Call) and isinstance(expr.func, cst.Attribute) else None
        if key is None or not isinstance(mapping, (cst.Name, cst.Attribute)):
            return None
        return self._entry_of(mapping, key, depth)

    def _entry_of(self, mapping: cst.Name | cst.Attribute, key: str, depth: int) -> bool | None:
        f = self.facts
        ref = f.ref(mapping)
        if ref is None or ref in self.ranks_by_role or self.cycles.held(ref, self._following):
            return None
        items = self._items_by_key.get(ref, [])
        stored = {id(value) for _, value in items}
        others = [s for s in f.sources(ref) if id(s) not in stored]
        if not others and not items:
            return None
        self._following.add(ref)
        try:
            for item_key, value in items:
                if item_key in (None, key) and self.rank_dependent(value, depth):
                    return True
            for source in others:
                if isinstance(source, cst.Dict) and all(isinstance(e, cst.DictElement) for e in source.elements):
                    if any(self.rank_dependent(e.value, depth) for e in source.elements
                           if isinstance(e, cst.DictElement) and string_value(e.key) in (None, key)):
                        return True
                    continue
                entry = self._entry_of(source, key, depth) if isinstance(source, (cst.Name, cst.Attribute)) else None
                if entry if entry is not None else self.rank_dependent(source, depth):
                    return True
            return False
        finally:
            self._following.discard(ref)

    @cached_property
    def _items_by_key(self) -> dict[Ref, list[tuple[str | None, cst.BaseExpression]]]:
        """The values the program stores into a mapping by item, each with its literal key (None
        for a key computed at run time): `args["local_rank"] = local_rank`."""
        f = self.facts
        index: dict[Ref, list] = {}
        for target, value, stmt in f.assigns:
            if isinstance(target, cst.Subscript) and not isinstance(stmt, cst.AugAssign) and dotted(target.value) \
                    and (ref := f.ref(target.value, stmt)) is not None:
                index.setdefault(ref, []).append((_read_key(target), value))
        return index

    def items_stored(self, read: cst.Subscript) -> list[cst.BaseExpression]:
        """The values the program stores by item into the mapping `read` reads an entry of, at its
        key or at one computed at run time (`flags[k] = v and self.enable` in a loop over the keys)."""
        ref = self.facts.ref(read.value) if isinstance(read.value, (cst.Name, cst.Attribute)) else None
        key = _read_key(read)
        return [v for k, v in self._items_by_key.get(ref, [])
                if k is None or key is None or k == key] if ref is not None else []

    def flag_set_by_rank(self, expr: cst.Name | cst.Attribute) -> bool:
        """Is the name assigned only constants, one of them under a rank test and not what it holds
        elsewhere (`default_gpu = False` ... `if dist.get_rank() == 0: default_gpu = True`, also
        with `else: default_gpu = True` of a run that is not distributed)? A flag the rank sets.
        A parameter its function never assigns is given its constants call by call: a call under a
        rank test sets it for that call only, so two calls must pass different constants in the two
        branches of one rank test (`if rank == 0: save(True) else: save(False)`), not a call of the
        main process beside one of every process (`save(ckpt=True)` ... `if is_main: save(ckpt=False)`)."""
        ref = self.facts.ref(expr)
        if ref is None or self.cycles.held(ref, self._following):
            return False
        if ref not in self._flags:
            sources = self.facts.sources(ref)
            self._following.add(ref)
            try:
                constants = all(isinstance(s, (cst.Integer, cst.SimpleString)) or mt.is_name(s, "True", "False", "None")
                                for s in sources)
                given = isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope) \
                    and not self.facts.writes(ref)
                self._flags[ref] = len(sources) > 1 and constants and len({self.facts.code(s) for s in sources}) > 1 \
                    and (self._parted_by_rank(sources) if given else any(self.rank_guard(s) is not None for s in sources))
            finally:
                self._following.discard(ref)
        return self._flags[ref]

    def _parted_by_rank(self, constants: list[cst.BaseExpression]) -> bool:
        """Do two different constants sit in the two branches of one rank test?"""
        f = self.facts
        for one in constants:
            guard = self.rank_guard(one)
            if guard is not None and any(
                    f.code(other) != f.code(one) and self.rank_guard(other) is guard
                    and f.is_inside(other, guard.body) != f.is_inside(one, guard.body) for other in constants):
                return True
        return False

    def _call_rank_dependent(self, test: cst.Call, depth: int) -> bool:
        """`rank_dependent` of a call: its name says rank, an argument reads the rank (not one that
        only places the value, `t.cuda(local_rank)`, nor one a helper only logs with, nor one a
        broadcast sends: `lightning.agreed`), it takes a part of a rank-dependent string
        (`device.split(":")` of `device = f"cuda:{rank}"`), or it returns a rank test; also
        `torch.cuda.current_device()`, the GPU each process set for itself."""
        if isinstance(test.func, cst.Attribute) and mt.is_method_call(test, *PLACING_METHODS):  # `t.cuda(local_rank)`: where it lives, not what it holds
            return self.rank_dependent(test.func.value, depth)
        if lightning.agreed(self.facts, test):
            return False  # `trainer.strategy.broadcast(rank == 0 and linked)`: rank 0's value, on every process
        if isinstance(test.func, cst.Attribute) and mt.is_method_call(test, *STRING_PARTS) \
                and self.rank_dependent(test.func.value, depth):
            return True  # `device.split(":")` of `device = f"cuda:{rank}"`: a part of what differs by rank
        if self.facts.qualify(test.func) == "torch.cuda.current_device":
            return True  # the GPU this process took (`set_device(local_rank)`): each process's own
        if self._always_true_instance(test):
            return False  # `Context(ddp=ddp, rank=rank)`: an object, true on every process whatever it holds
        return rank_word(test.func) or frameworks.main_test(self.facts, test.func) or any(
            self.rank_dependent(a.value, depth) and not self._only_logged(test, a.value)
                                           for a in test.args
                                           if not (a.keyword and (a.keyword.value in PLACING_KEYWORDS or self._seeds(a)))) \
            or self.returns_rank_test(test, depth)

    def _seeds(self, arg: cst.Arg) -> bool:
        """Is `arg` a seed's keyword argument (`seed=42 + rank`) asked where only a size counts?"""
        return self.sizes_only and arg.keyword is not None and SEED_KEYWORD.search(arg.keyword.value) is not None

    def _always_true_instance(self, call: cst.Call) -> bool:
        """Does `call` build an instance of a plain class of the program (no base outside the
        program, no `__bool__` or `__len__`)? Such an object is true on every process, whatever its
        fields hold: `self.ctx and self.ctx.ddp` where `self.ctx = Context(ddp=ddp, rank=rank,
        main=rank == 0)` asks the fields it names, not the rank the object also keeps."""
        classes = self.facts.built_classes(call)
        return bool(classes) and not any(self.facts.library_based(cls) or self.facts.method(cls, "__bool__")
                                         or self.facts.method(cls, "__len__") for cls in classes)

    def asks_distributed(self, test: cst.CSTNode) -> bool:
        """`RANK > -1`, `args.local_rank != -1`, `rank is not None`: a comparison of a rank that
        asks whether the run is distributed, which every process of a run answers alike."""
        return isinstance(test, cst.Comparison) and (
            self.rank_name(test.left) or self._reads_rank_environment(test.left) or isinstance(
                test.left, (cst.Name, cst.Attribute)) and self.facts.ref(test.left) in self.ranks_by_role) and all(
            _asks_distributed(t) for t in test.comparisons)

    def _reads_rank_word(self, expr: cst.BaseExpression) -> bool:
        """Does `expr` read a name that says rank (`read_names`), other than in an argument a call
        of the program only logs with (`get_model(cfg, verbose=RANK in {-1, 0})`, `_only_logged`)?
        Kept per expression: a source is asked again for every test that reads its name."""
        if expr not in self._worded:
            worded = [n for n in read_names(self.facts, expr) if rank_word(n)]
            logged = {id(n) for c in self.facts.findall(expr, cst.Call) for a in c.args
                      if any(self.facts.is_inside(w, a) for w in worded) and (self._seeds(a) or self._only_logged(c, a.value))
                      for n in names_in(self.facts, a.value)} if worded else set()
            self._worded[expr] = any(id(n) not in logged for n in worded)
        return self._worded[expr]

    def _only_logged(self, call: cst.Call, arg: cst.BaseExpression, depth: int = 2) -> bool:
        """Does every function of the program `call` runs use the parameter `arg` binds only to
        log: calling its methods as statements of their own (`logger.info(...)`), testing it in an
        `if` whose body only makes such calls (`if verbose: self.info()`), or handing it on to a
        call that does the same (`DetectionModel(cfg, verbose=verbose and RANK == -1)`)? What it
        returns does not come from it (`auto_resume_helper(config.OUTPUT, logger)`, the logger made
        with the rank; `get_model(cfg, verbose=RANK in {-1, 0})`)."""
        f = self.facts
        funcs = f.user_functions(call)
        if not funcs:
            return False
        for func in funcs:
            params = [p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)]
            bound = [p for p in params if f.argument_for(call, func, p) is arg]
            if len(bound) != 1:
                return False
            if not all(self._logs_only(use, depth) for use in f.references(func.body, bound[0])):
                return False
        return True

    def _logs_only(self, use: cst.CSTNode, depth: int) -> bool:
        """Is this read of a parameter one `_only_logged` allows?"""
        f = self.facts
        method = f.parent(use)
        statement = mt.sole(f.statement(use), cst.Expr)
        if isinstance(method, cst.Attribute) and method.value is use and statement is not None \
                and isinstance(statement.value, cst.Call) and statement.value.func is method:
            return True  # `logger.info(...)`
        branch = f.statement(use)
        if isinstance(branch, cst.If) and f.is_inside(use, branch.test) and branch.orelse is None \
                and isinstance(branch.body, cst.IndentedBlock) and all(
                    isinstance(s, cst.SimpleStatementLine) and all(
                        isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) for small in s.body)
                    for s in branch.body.body):
            return True  # `if verbose: self.info()`
        outer = next((a for a in f.ancestors(use) if isinstance(a, cst.Arg)), None)
        if outer is None or depth <= 0:
            return False
        handed = f.parent(outer)  # `DetectionModel(cfg, verbose=verbose and RANK == -1)`
        return isinstance(handed, cst.Call) and self._only_logged(handed, outer.value, depth - 1)

    def set_on_some_ranks(self, expr: cst.Name | cst.Attribute, falsy: bool = False) -> bool:
        """Does the name hold `None` on some ranks and a value on the others: every binding of a
        value under a rank test, `None` elsewhere (`saver = None` ... `if args.local_rank == 0:
        saver = CheckpointSaver(...)`: `if saver is not None:` is a rank test), or handed such a
        name (the parameter of `train_epoch(..., saver=saver)`)? With `falsy`, for a name tested for
        its truth (`truth_tested`), any literal false there is the value left elsewhere, every other
        value given under a test that holds on one rank (`is_best = False` ... `if
        self.master_process: is_best = self._best(acc)`): only that rank passes `if is_best:` (not
        `if acc > best:` of `best = 0.0`, which any rank may pass)."""
        ref = self.facts.ref(expr)
        if ref is None or self.cycles.held(ref, self._following):
            return False
        # (a parameter's literals are given call by call: a call under a rank test is that call's, `flag_set_by_rank`)
        falsy = falsy and not (isinstance(ref.scope, cst.FunctionDef) and ref.name in param_names(ref.scope))
        key = (ref, falsy)
        if key not in self._sentinels:
            sources = self.facts.sources(ref)
            values = [s for s in sources if not (literal_truth(s) is False if falsy else mt.is_name(s, "None"))]
            self._following.add(ref)
            try:
                passed = [v for v in values if isinstance(v, (cst.Name, cst.Attribute))
                          and self.set_on_some_ranks(v, falsy)]
                self._sentinels[key] = bool(values) and (len(values) < len(sources) or bool(passed)) and all(
                    v in passed or (guard := self.rank_guard(v)) is not None and (not falsy or self._one_rank_branch(v, guard))
                    for v in values)
            finally:
                self._following.discard(ref)
        return self._sentinels[key]

    def _one_rank_branch(self, node: cst.CSTNode, guard: cst.If) -> bool:
        """Is `node` in the body of a rank test that holds on one process (`if self.master_process:`,
        `if rank == 0:`)? (Not complementary tests each giving a value: `if RANK in {-1, 0}:` beside
        `if RANK != 0:` after a broadcast gives one on every rank.)"""
        return self.facts.is_inside(node, guard.body) and any(self._one_rank(c) for c in _conjuncts(guard.test))

    def truth_tested(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` tested for its truth where it is read: the test of an `if`, a `while` or a
        conditional expression, under `not`, a side of `and`/`or`?"""
        parent = self.facts.parent(expr)
        return isinstance(parent, (cst.If, cst.While, cst.IfExp)) and parent.test is expr \
            or isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not) \
            or isinstance(parent, cst.BooleanOperation)

    def returns_rank_test(self, call: cst.Call, depth: int) -> bool:
        """Does a function of the program `call` runs return a rank test on some path, or a value
        under one (`utils.is_main_training()`: `if dist.get_rank() == 0: return True`)? Its
        answer then differs by process, whatever its name."""
        if depth <= 0 or self.cycles.held(call, self._returning):
            return False
        self._returning.add(call)
        try:
            funcs = self.callees(call)
            return any(self.rank_dependent(r, depth - 1) for func in funcs for r in self.facts.returned(func)) or any(
                r.value is not None and self.rank_guard(r) is not None for r in self._returns_of(funcs))
        finally:
            self._returning.discard(call)

    def property_rank_test(self, attr: cst.Attribute, depth: int = 2) -> bool:
        """`ctx.lead` where `ctx` holds an instance of a class of the program whose `lead` is a
        property that returns a rank test or returns under one (`return self.rank == 0`), or a
        value that reads the rank (`dims.dp_coord[0] == 0` of `return mesh.get_local_rank("dp"),
        n`: the rank's coordinate along a device mesh). Where the object is made where ddpify does
        not see (a parameter of a class whose callers are elsewhere), the program's properties so
        named."""
        if depth <= 0 or self.cycles.held(attr, self._returning) or attr.attr.value not in self._property_names:
            return False
        flow = of(self.facts)
        classes = dict.fromkeys(c for s in flow.values(attr.value) for c in flow.classes_built(s))
        props = [m for c in classes for m in self.facts.method(c, attr.attr.value) if is_property(m)] if classes \
            else [m for m in self.facts.functions.get(attr.attr.value, ()) if is_property(m)]
        self._returning.add(attr)
        try:
            return any(self.rank_dependent(part, depth - 1) for m in props for r in self.facts.returned(m)
                       for part in _parts(r)) or any(
                r.value is not None and self.rank_guard(r) is not None for r in self._returns_of(props))
        finally:
            self._returning.discard(attr)

    @cached_property
    def _property_names(self) -> frozenset[str]:
        """The names of the program's methods that are properties."""
        return frozenset(name for name, funcs in self.facts.functions.items() if any(
            is_property(f) for f in funcs))

    def _returns_of(self, funcs: list[cst.FunctionDef]) -> list[cst.Return]:
        return [r for func in dict.fromkeys(funcs) for r in self.facts.returns_in(func)]

    def attribute_of_passed(self, ref: Ref) -> list[cst.BaseExpression]:
        """What `obj.x` of a parameter `obj` holds where no statement of its function sets it: what
        the callers set on the object they pass (`train(args)` after `args.should_save = ... and
        is_master(args)` in another module's `main()`)."""
        if ref in self._passed:
            return self._passed[ref]
        f = self.facts
        head, _, rest = ref.name.partition(".")
        found: list[cst.BaseExpression] = []
        if rest and head != "self" and isinstance(ref.scope, cst.FunctionDef):
            for site in f.call_sites(ref.scope):
                arg = f.argument_for(site, ref.scope, head)
                outer = f.ref(arg) if isinstance(arg, (cst.Name, cst.Attribute)) else None
                if outer is not None:
                    found += f.sources(Ref(outer.scope, f"{outer.name}.{rest}"))
        self._passed[ref] = found
        return found

    def dict_entries(self, expr: cst.CSTNode) -> list[cst.BaseExpression] | None:
        """The values `d["key"]` (or `d.get("key")`) can be, where every assignment of `d` is a dict
        literal (with that key): the entry followed, not the whole dict. None for anything else."""
        mapping = expr.value if isinstance(expr, cst.Subscript) else expr.func.value if isinstance(
            expr, cst.Call) and isinstance(expr.func, cst.Attribute) else None
        key = _read_key(expr)
        if key is None or not isinstance(mapping, (cst.Name, cst.Attribute)):
            return None
        ref = self.facts.ref(mapping)
        sources = self.facts.sources(ref) if ref is not None else []
        dicts = [s for s in sources if isinstance(s, cst.Dict)]
        if not sources or len(dicts) != len(sources):
            return None
        entries = [e.value for d in dicts for e in d.elements
                   if isinstance(e, cst.DictElement) and string_value(e.key) == key]
        return entries or None

    def _reads_rank_environment(self, expr: cst.CSTNode) -> bool:
        """`os.environ["LOCAL_RANK"]`, `int(os.environ.get("RANK", -1))`."""
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "int") and expr.args:
            expr = expr.args[0].value
        key = self.environment_key(expr)
        return key is not None and rank_variable(key)

    def undistributed(self, node: cst.CSTNode, depth: int = 2) -> bool:
        """Does `node` run only when the script is not distributed: in the branch of
        `if args.local_rank == -1 ...:` (also `and`-ed with more), or the `else` of `!= -1`, or
        the `else` of a test that the run has several processes (`if multi_gpu:` ... `else:`, or
        the body of `if not multi_gpu:`
        with `multi_gpu = int(os.environ.get("WORLD_SIZE", 1)) > 1`, `if dist.is_initialized():`;
        also `and`-ed with more: `if len(gpus) > 1 and not is_dist_avail_and_initialized():`, where a
        launcher starts its workers),
        or after an `assert` of its block that the run is not (`assert opt.local_rank == -1, "DDP
        mode not implemented for --evolve"`, `assert dist.get_world_size() == 1`), or after an `if`
        of its block that returns where the run has several processes (`if self.distributed: ...
        return`: `_after_distributed_return`), or where a test holds that its function's
        distributed branch asserts false (`if LOCAL_RANK != -1: assert not opt.evolve`), or in a function
        every call of which is so, `depth` calls up (`train_with_dp(cfg)` in the `else` of `if cfg.DISTRIBUTE:`,
        the flag every process group starts under), not one the script starts as a worker or hands to a
        call by name (a launcher may run it in every process)?"""
        child, own = node, True
        for anc in self.facts.ancestors(node):
            if isinstance(anc, cst.If) and child is not anc.test:
                in_body = child is anc.body
                if any(self._asks_one_process(test, in_body) for test in (_conjuncts(anc.test) if in_body else [anc.test])):
                    return True
                if in_body and self._one_process_either_way(anc.test):
                    return True
                if not in_body and self.several_processes(anc.test, every=True):
                    return True
                test, negated = (anc.test.expression, True) if isinstance(anc.test, cst.UnaryOperation) \
                    and isinstance(anc.test.operator, cst.Not) else (anc.test, False)
                holds = in_body != negated
                if not holds and self.several_processes(test, every=True):
                    return True  # the body of `if not multi_gpu:`, as the `else` of `if multi_gpu:`
                if in_body and any(isinstance(c, cst.UnaryOperation) and isinstance(c.operator, cst.Not)
                                   and self.several_processes(c.expression, every=True) for c in _conjuncts(anc.test)):
                    return True  # `if len(devices) > 1 and not dist.is_initialized():`: no process group there
                if in_body and self._other_mode(anc.test) or not in_body and self._guarded_twin(anc):
                    return True  # the `else` of `if cfg["DDP"]["flag"]: if dist.get_rank() == 0: save()` ... `save()`
                ruled_out = self._ruled_out_when_distributed(self.facts.scope(node))
                if holds and any(self.facts.code(t) in ruled_out for t in (_conjuncts(test) if in_body else [test])):
                    return True
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and self._one_process_past(anc, child, own):
                return True
            own = own and not isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
            child = anc
        func = self.facts.scope(node)
        if isinstance(func, cst.FunctionDef) and self._web_route(func):
            return True
        if isinstance(func, cst.Module) and self.launcher.alone(node):
            return True  # the main block of a run that joins no group
        if depth == 0 or not isinstance(func, cst.FunctionDef) or func in self.launcher.targets \
                or self._handed_on(func):
            return False
        sites = self.facts.call_sites(func)
        return bool(sites) and all(self.undistributed(site, depth - 1) for site in sites)

    def _one_process_past(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode, own: bool) -> bool:
        """Is the statement `child` of `block` past an `assert` of the block that the run is one
        process, or (in `child`'s own function: `own`) past an `if` that returns where it is not?"""
        return any(self._asks_one_process(test, True) or self._one_world(test)
                   for test in self._asserts.asserted_before(block, child)) \
            or own and self._after_distributed_return(block, child)

    def _after_distributed_return(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> bool:
        """Is the statement `child` of `block` after an `if` of the same block, with no `else`, whose
        test says only that the run has several processes (`several_processes(..., every=True)`:
        `if self.distributed:` where every process group starts under that flag, `if ddp and
        world_size > 1:`) and whose body ends in a `return` (or ends the process)? Only the runs where
        that test fails get past it: one process, no group (as the `else` of that `if` would be).

        Before: SpikeReg's trainer, `if self.distributed: ... init_process_group(...) ... return`
        at the top of `_setup_multi_gpu`, then the one-process lines (`Training on single device`,
        the DataParallel setup) each appending to the log: every one of them was "every rank
        writes this file" (DDP006); now they are the run of one process."""
        body = block.body
        at = next((i for i, stmt in enumerate(body) if stmt is child), None)
        for stmt in body[:at or 0]:
            if isinstance(stmt, cst.If) and stmt.orelse is None and (_ends_in_return(self.facts, stmt.body) or _exits(
                    self.facts, stmt.body)) and self.several_processes(stmt.test, every=True):
                return True
        return False

    def _guarded_twin(self, branch: cst.If) -> bool:
        """Is `branch` a test whose body does, under a rank test that holds on one process alone,
        just what its `else` does unguarded (`if args.configs["DDP"]["flag"]: if dist.get_rank() ==
        0: save_model(...)` / `else: save_model(...)`)? The program says there that where the test
        fails, no second process runs the code: the test asks whether the run is distributed, and
        its `else` is the run of one process. Not where the two blocks differ, nor where the inner
        test is no rank test that holds on one process (`_one_rank`), nor where the body holds more,
        nor where the program starts its process group under a flag of its own (`_group_gates`,
        `_group_flags`): there that flag says whether the run is distributed, and a test of another
        (`if self.amp:` where the group starts `if config["DDP"]:`) does not.

        Before: the `else` was a write of every process (TopDiG's `run_val`, set 28; decision 0241)."""
        f = self.facts
        inner = branch.body.body[0] if len(branch.body.body) == 1 else None
        if self._group_gates or self._group_flags or self._group_gate_keys:
            return False
        if not (isinstance(inner, cst.If) and inner.orelse is None and isinstance(branch.orelse, cst.Else)
                and any(self._one_rank(c) for c in _conjuncts(inner.test))):
            return False
        return [f.code(s) for s in inner.body.body] == [f.code(s) for s in branch.orelse.body.body]

    def _web_route(self, func: cst.FunctionDef) -> bool:
        """Is `func` a web server's request handler: decorated by a route of a FastAPI or Flask app
        or router (`@app.post("/model/")`, `@router.get(...)`, `@app.route(...)`)? The server's
        process runs it for each request, and that process is none of the training job's (it starts
        the job, `mp.Process(target=...)` or a launcher, if at all): one process, no group.

        Before: derinworks' `create_model` route calling `model.serialize()`, whose other callers
        save under the project's rank-0 test, made the save every rank's (DDP006); now the route's
        call is the server's, one process."""
        f = self.facts
        for decorator in func.decorators:
            route = decorator.decorator
            if not (isinstance(route, cst.Call) and isinstance(route.func, cst.Attribute)
                    and route.func.attr.value in WEB_ROUTE_METHODS):
                continue
            if any(isinstance(o, cst.Call) and f.qualify(o.func) in WEB_APPS for o in f.origins(route.func.value)):
                return True
        return False

    def _handed_on(self, func: cst.FunctionDef) -> bool:
        """Is `func` handed to a call by name (`launch(main, num_gpus, args=(config,))`, a launcher
        ddpify does not know): that call may run it in every process, whatever its direct calls."""
        return func.name.value in self._handed_names

    @cached_property
    def _handed_names(self) -> frozenset[str]:
        """The last part of every name or attribute the program hands to a call as an argument (not a
        call's result): `main` of `launch(main, ...)`, `train` of `mp.spawn(self.train, ...)`.

        Before: `_handed_on` walked every argument of every call for each function asked (46,352
        arguments read for 64 functions in a conversion of each of two small tuning programs, 9% of
        their profiled time); now one pass, and each function's name is looked up in it."""
        return frozenset((dotted(arg.value) or "").rpartition(".")[2]
                         for call in self.facts.calls for arg in call.args if not isinstance(arg.value, cst.Call))

    def _other_mode(self, test: cst.BaseExpression) -> bool:
        """Does `test` hold only where a comparison every process group starts under fails: `if
        args.dist == "OFF":` where the group starts under `if args.dist == "ON":` (one setting, two
        constants), or `if args.dist != "ON":`? That branch is the single-process run."""
        mode = _mode_test(test, negated=True)
        if mode is None:
            return False
        setting, value, equal = mode
        for gate in self._group_gates:
            gated = _mode_test(cst.parse_expression(gate))
            if gated is not None and gated[0] == setting and gated[2] and (gated[1] != value if equal else gated[1] == value):
                return True
        return False

    def _one_process_either_way(self, test: cst.BaseExpression) -> bool:
        """`RANK == -1 or not dist.is_initialized()`: an `or` every side of which says the run is one
        process (a rank of -1, no process group, `not` a test that it has several)."""
        if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or)):
            return False
        return all(self._one_process_either_way(side) or self._asks_one_process(side, True) or isinstance(
            side, cst.UnaryOperation) and isinstance(side.operator, cst.Not) and self.several_processes(side.expression)
            for side in (test.left, test.right))

    def _ruled_out_when_distributed(self, scope: cst.CSTNode) -> frozenset[str]:
        """The tests `scope`'s distributed branch asserts false (`if LOCAL_RANK != -1: assert not
        opt.evolve, "--evolve is not compatible with DDP"`): where one holds, the run is one
        process."""
        if scope not in self._ruled_out:
            f = self.facts
            self._ruled_out[scope] = frozenset(
                f.code(small.test.expression) for branch in f.findall(scope, cst.If)
                if f.scope(branch) is scope and (self._asks_one_process(branch.test, False)
                                                 or self.several_processes(branch.test))
                for stmt in branch.body.body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body
                if isinstance(small, cst.Assert) and isinstance(small.test, cst.UnaryOperation)
                and isinstance(small.test.operator, cst.Not))
        return self._ruled_out[scope]

    def _one_world(self, test: cst.BaseExpression) -> bool:
        """`dist.get_world_size() == 1`, `world_size <= 1`: the run is one process."""
        return isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and self.is_world_size(test.left) \
            and isinstance(test.comparisons[0].operator, (cst.Equal, cst.LessThanEqual)) \
            and isinstance(test.comparisons[0].comparator, cst.Integer) and test.comparisons[0].comparator.value == "1"

    def _asks_one_process(self, test: cst.BaseExpression, holds: bool) -> bool:
        """`args.local_rank == -1` (where `holds`; `!= -1` where it does not): no process group."""
        return isinstance(test, cst.Comparison) and (rank_word(test.left) or self._reads_rank_environment(
            test.left)) and len(test.comparisons) == 1 and _minus_one_or_none(test.comparisons[0].comparator) \
            and isinstance(test.comparisons[0].operator, cst.Equal if holds else cst.NotEqual)

    def several_processes(self, test: cst.BaseExpression, depth: int = 2, every: bool = False) -> bool:
        """Does `test` say the run has more than one process: `dist.is_initialized()`,
        `world_size > 1`, `int(os.environ.get("WORLD_SIZE", 1)) > 1`, `dist.get_world_size() != 1`,
        a rank the launcher set (`int(os.environ.get("RANK", -1)) != -1`), a function of the program
        that answers it (`is_dist_avail_and_initialized()`: `_asks_for_a_group`), either side of an `and`
        (`dist.is_available() and dist.is_initialized()`), or a name or attribute every assignment
        of which is one of those (`multi_gpu = ...`, `self.is_ddp = ...`) or `False` (`cfg.distributed
        = False` where no launcher set WORLD_SIZE: the flag is never true there)? With `every`, whether it
        says only that, so that where it fails the run is one process: each side of an `and` says
        it or asks `dist.is_available()` (the `else` of `ddp and rank == 0` is every rank but 0)."""
        f = self.facts
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            sides = [self.several_processes(side, depth, every) or every and isinstance(side, cst.Call)
                     and f.qualify(side.func) == "torch.distributed.is_available" for side in (test.left, test.right)]
            return all(sides) if every else any(sides)
        if self._asks_one_process(test, False):
            return True
        if isinstance(test, cst.Call):
            return f.qualify(test.func) == "torch.distributed.is_initialized" or depth > 0 and self._asks_for_a_group(
                test, depth - 1, every)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            op, right = test.comparisons[0].operator, test.comparisons[0].comparator
            bound = right.value if isinstance(right, cst.Integer) else None
            return self.is_world_size(test.left) and (isinstance(op, cst.GreaterThan) and bound == "1" or isinstance(
                op, cst.GreaterThanEqual) and bound == "2" or isinstance(op, cst.NotEqual) and bound == "1")
        if (isinstance(test, (cst.Name, cst.Attribute)) or _mode_test(test) is not None) \
                and f.code(test) in self._group_gates:
            return True  # `if train_config.enable_fsdp:`, `if args.dist == "ON":`: the test every group starts under
        if isinstance(test, cst.Attribute) and any("." in gate and f.code(test).endswith("." + gate) for gate in self._group_gates):
            return True  # `if self.cfg.do_dist:`, the group started where `assert cfg.do_dist` holds: the same setting
        if (key := self._setting_key(test)) is not None and key in self._group_gate_keys:
            return True  # `if self.DDP:` with `self.DDP = config["DDP"]`, the group started `if use_DDP:` of `cfg["DDP"]`
        if isinstance(test, (cst.Name, cst.Attribute)) and f.code(test) in self._group_flags \
                and (flag := f.ref(test)) is not None and all(mt.is_name(s, "True") or mt.is_name(s, "False")
                                                              for s in f.sources(flag)):
            return True  # `args.distributed = True` right before the group starts, `False` where none does
        if isinstance(test, (cst.Name, cst.Attribute)) and depth:
            ref = f.ref(test)
            sources = [s for s in (f.sources(ref) if ref is not None else []) if not mt.is_name(s, "False")]
            return bool(sources) and all(self.several_processes(s, depth - 1, every) for s in sources)
        return False

    def _asks_for_a_group(self, call: cst.Call, depth: int, every: bool) -> bool:
        """Is `call` a function of the program that answers whether the run has a process group:
        `False` under `if not dist.is_initialized():` (and `if not dist.is_available():`) at its top
        level, then `True` or such a test (`is_dist_avail_and_initialized()` of DETR and its kin)?"""
        f = self.facts
        funcs = f.user_functions(call)
        if len(funcs) != 1:
            return False
        asked = False
        for stmt in funcs[0].body.body:
            if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.test, cst.UnaryOperation) \
                    and isinstance(stmt.test.operator, cst.Not) and _returns_only(stmt.body, "False"):
                question = stmt.test.expression
                if self.several_processes(question, depth, every):
                    asked = True
                elif not (isinstance(question, cst.Call) and f.qualify(question.func) == "torch.distributed.is_available"):
                    return False
            elif isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return):
                value = stmt.body[0].value
                return value is not None and (asked and mt.is_name(value, "True") or self.several_processes(value, depth, every))
            elif not isinstance(stmt, cst.SimpleStatementLine) or not all(isinstance(s, cst.Expr) for s in stmt.body):
                return False  # anything but its docstring
        return False

    @cached_property
    def _group_gates(self) -> frozenset[str]:
        """The flags (a name or attribute, or its comparison with a constant: `args.dist == "ON"`,
        by its code) that every `init_process_group` of the program runs under, in its function or
        at every call of the functions around it (`if train_config.enable_fsdp: setup()`, `setup`
        calling it): where such a flag is false no process group exists, so the run is one process;
        where it is true, the group was started. Not a start in a helper nothing runs
        (`distributed.runs_nowhere`)."""
        f = self.facts
        gates: set[str] | None = None
        for call in f.calls_to("torch.distributed.init_process_group"):
            if not runs_nowhere(f, call):
                found = self._gates(call, 3)
                gates = found if gates is None else gates & found
        return frozenset(gates or ())

    @cached_property
    def _group_flags(self) -> frozenset[str]:
        """The flags (a name or attribute, by its code) set `True` in the block of every
        `init_process_group` of the program, before it: `args.distributed = True` then
        `dist.init_process_group(...)` in DETR's `init_distributed_mode`, which sets it `False` and
        returns where no launcher variable is set. Where such a flag, only ever `True` or `False`,
        holds, the group was started; where it fails, the run is one process."""
        f = self.facts
        flags: set[str] | None = None
        for call in f.calls:
            if f.qualify(call.func) != "torch.distributed.init_process_group" or runs_nowhere(f, call):
                continue
            stmt = f.statement(call)
            block = next((a for a in f.ancestors(stmt) if isinstance(a, (cst.IndentedBlock, cst.Module))), None)
            if block is None or stmt not in block.body:
                return frozenset()
            found = {f.code(t.target) for line in block.body[:block.body.index(stmt)]
                     if isinstance(line, cst.SimpleStatementLine) for small in line.body
                     if isinstance(small, cst.Assign) and mt.is_name(small.value, "True") for t in small.targets}
            flags = found if flags is None else flags & found
        return frozenset(flags or ())

    @cached_property
    def _group_count_gates(self) -> frozenset[str]:
        """The counts (by their code) that every `init_process_group` of the program runs under a
        test of being more than one: `if torch.cuda.device_count() > 1:`, `if n_gpus >= 2:`. Where
        the count is one, no process group exists."""
        f = self.facts
        counts: set[str] | None = None
        for call in f.calls_to("torch.distributed.init_process_group"):
            found = {f.code(counted) for anc in f.ancestors(call) if isinstance(anc, cst.If)
                     and f.is_inside(call, anc.body) and f.scope(anc) is f.scope(call)
                     for test in _conjuncts(anc.test) if (counted := _count_compared(test, _MORE_THAN_ONE)) is not None}
            counts = found if counts is None else counts & found
        return frozenset(counts or ())

    @cached_property
    def _group_gate_keys(self) -> frozenset[str]:
        """The settings, by their key, that every `init_process_group` of the program runs under:
        `if config["DDP"]:`, or `if use_DDP:` with `use_DDP = self.final_config_dict["DDP"]`
        (`_setting_key`). Read from another mapping by the same key elsewhere (`self.DDP =
        config["DDP"]`), the flag is the same setting: where it is false no process group exists."""
        keys: set[str] | None = None
        for call in self.facts.calls_to("torch.distributed.init_process_group"):
            found = self._gate_keys(call, 3)
            keys = found if keys is None else keys & found
        return frozenset(keys or ())

    def _gate_keys(self, node: cst.CSTNode, depth: int) -> set[str]:
        """The setting keys of the tests `node` runs under, as `_gates` collects their code."""
        f = self.facts
        found = {key for anc in f.ancestors(node) if isinstance(anc, cst.If) and f.is_inside(node, anc.body)
                 and f.scope(anc) is f.scope(node) and (key := self._setting_key(anc.test)) is not None}
        func = f.scope(node)
        sites = f.call_sites(func) if isinstance(func, cst.FunctionDef) and depth else []
        if sites:
            found |= set.intersection(*[self._gate_keys(site, depth - 1) for site in sites])
        return found

    def _setting_key(self, expr: cst.BaseExpression, depth: int = 2) -> str | None:
        """The key a flag is read under from a mapping of settings: `config["DDP"]`,
        `cfg.get("distributed", False)`, or a name or attribute every assignment of which reads
        the same key (`self.DDP = config["DDP"]`); None for anything else."""
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            return string_value(expr.slice[0].slice.value)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" \
                and expr.args and expr.args[0].keyword is None:
            return string_value(expr.args[0].value)
        if isinstance(expr, (cst.Name, cst.Attribute)) and depth:
            ref = self.facts.ref(expr)
            keys = {self._setting_key(s, depth - 1) for s in (self.facts.sources(ref) if ref is not None else [])}
            return keys.pop() if len(keys) == 1 else None
        return None

    def _gates(self, node: cst.CSTNode, depth: int) -> set[str]:
        """The flags `node` runs under: the tests of the `if`s whose body holds it in its function
        (each flag `and`-ed in one: `if cfg.DISTRIBUTE and cfg.LAUNCH:`; and `flag` of an `if not
        flag:` whose `else` holds it), and those every call of that function runs under (`depth` calls up)."""
        f = self.facts
        found = {f.code(test) for anc in f.ancestors(node) if isinstance(anc, cst.If)
                 and f.is_inside(node, anc.body) and f.scope(anc) is f.scope(node)
                 for test in _conjuncts(anc.test)  # each flag of `if cfg.DISTRIBUTE and cfg.LAUNCH:` holds there
                 if isinstance(test, (cst.Name, cst.Attribute)) or _mode_test(test) is not None}
        found |= {f.code(anc.test.expression) for anc in f.ancestors(node) if isinstance(anc, cst.If)
                  and isinstance(anc.test, cst.UnaryOperation) and isinstance(anc.test.operator, cst.Not)
                  and isinstance(anc.test.expression, (cst.Name, cst.Attribute)) and anc.orelse is not None
                  and f.is_inside(node, anc.orelse) and f.scope(anc) is f.scope(node)}  # the `else` of `if not flag:`
        child = node
        for anc in f.ancestors(node):  # `assert cfg.do_dist` before the start in its block: the flag holds there
            if isinstance(anc, (cst.IndentedBlock, cst.Module)):
                found |= {f.code(t) for t in self._asserts.asserted_before(anc, child)
                          if isinstance(t, (cst.Name, cst.Attribute))}
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                break
            child = anc
        func = f.scope(node)
        sites = [*f.call_sites(func), *self.launcher.spawns_of(func)] if isinstance(func, cst.FunctionDef) and depth else []
        if sites:
            above = [self._gates(site, depth - 1) for site in sites]
            found |= set.intersection(*above)
        return found

    def is_world_size(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` the number of processes: `world_size`, `args.world_size`, `dist.get_world_size()`,
        `int(os.environ["WORLD_SIZE"])`."""
        if isinstance(expr, cst.Call) and mt.is_call_of(expr, "int") and expr.args:
            expr = expr.args[0].value
        if self.environment_key(expr) == "WORLD_SIZE":
            return True
        if isinstance(expr, cst.Call):
            return self.facts.qualify(expr.func) == "torch.distributed.get_world_size"
        return (dotted(expr) or "").rsplit(".", 1)[-1].lower() == "world_size"

    def rank_guard(self, node: cst.CSTNode) -> cst.If | None:
        """The innermost `if` of `node`'s own function whose test depends on the rank and that
        runs `node` in one of its branches."""
        f = self.facts
        child = node
        for anc in f.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, cst.If) and child is not anc.test and self._rank_test(anc):
                return anc
            child = anc
        return None

    def _rank_choice(self, node: cst.CSTNode) -> bool:
        """Is `node` a branch of a conditional expression of its function on a rank test, or the
        right of a short-circuit operator whose left is one (`rank == 0 and link(p)`, `rank != 0
        or link(p)`: the right runs only where the left lets it)?"""
        child = node
        for anc in self.facts.ancestors(node):
            if isinstance(anc, (cst.Lambda, cst.BaseSmallStatement, cst.BaseCompoundStatement)):  # its statement
                return False
            if isinstance(anc, cst.IfExp) and child is not anc.test and self.rank_test(anc.test):
                return True
            if isinstance(anc, cst.BooleanOperation) and child is anc.right and self.rank_test(anc.left):
                return True
            child = anc
        return False

    def _rank_test(self, branch: cst.If) -> bool:
        return self.rank_test(branch.test)

    def rank_test(self, test: cst.CSTNode) -> bool:
        """A test that reads the rank and is not proven the same on every process: the one answer
        to "do the processes part ways here" (a config entry next to a rank test is not one)."""
        nested = test in self._testing
        if nested:  # asked again while answering it: an answer that may still change
            self.cycles.cut()
        if test not in self._rank_tests:
            self._testing.add(test)
            try:
                self._rank_tests[test] = self.rank_dependent(test) and not self._proven_shared(test)
            finally:
                if not nested:
                    self._testing.discard(test)
        return self._rank_tests[test]

    def all_but_one(self, node: cst.CSTNode, depth: int = 3) -> bool:
        """Does `node` run where its innermost rank test fails on one rank only: in the `else` of a
        test that holds on one rank (`rank == 0`, `is_main_process()`, `ddp and dist.get_rank() ==
        0`), or under one that negates such a test (`if rank != 0:`, `if not is_main_process():`,
        `if accelerator.is_main_process == 0:`)? Then every other rank runs it: several processes,
        where the run has more than two (and with the one that took the branch, where both write).
        Also after an early `return` of its function that one rank at most takes (`if rank == 0:
        ... return`, also under a further test there: `if config is None: return`): the others go on;
        or in a function every call of which is so, `depth` calls up."""
        guard = self.rank_guard(node)
        if guard is None:
            f = self.facts
            returns = [(r, g) for r, g in self._rank_returns.get(f.scope(node), ())
                       if f.before(r, node) and not f.is_inside(node, g) and not self._excluded(node, g.test)]
            if returns:
                return all(f.is_inside(r, g.body) and any(self._one_rank(c) for c in _conjuncts(g.test))
                           or g.orelse is not None and f.is_inside(r, g.orelse)
                           and any(self._but_one_rank(c) for c in _conjuncts(g.test)) for r, g in returns)
            func = f.scope(node)
            sites = f.entries(func) if isinstance(func, cst.FunctionDef) and depth else []
            return bool(sites) and all(self.all_but_one(site, depth - 1) for site in sites)
        if guard.orelse is not None and self.facts.is_inside(node, guard.orelse):
            return any(self._one_rank(c) for c in _conjuncts(guard.test))
        return any(self._but_one_rank(c) for c in _conjuncts(guard.test))

    def rank_zero_only(self, node: cst.CSTNode, depth: int = 3) -> bool:
        """Does `node` run on global rank 0 alone: in the body of a rank test one of whose
        conjuncts holds there only (`rank == 0`, `dist.get_rank() == 0`, `is_main_process()`; not
        `local_rank == 0`, one process a node), or in a function every call of which does, `depth`
        calls up? (`_one_rank` also takes `rank == 3`, one process but not necessarily rank 0.)"""
        f = self.facts
        guard = self.rank_guard(node)
        while guard is not None:
            if f.is_inside(node, guard.body) and any(self._rank_zero(c) for c in _conjuncts(guard.test)):
                return True
            guard = self.rank_guard(guard)
        func = f.scope(node)
        sites = f.entries(func) if isinstance(func, cst.FunctionDef) and depth else []
        return bool(sites) and all(self.rank_zero_only(site, depth - 1) for site in sites)

    def _rank_zero(self, test: cst.BaseExpression, depth: int = 2) -> bool:
        """`rank == 0`, `dist.get_rank() == 0`, `is_main_process()`: a test that holds on global rank
        0 only; a name every assignment of which is such a comparison (`is_master = rank == 0`), not
        one of the local rank (`is_master = local_rank == 0`)."""
        if isinstance(test, cst.Comparison):
            value = test.comparisons[0].comparator
            return self._one_rank(test) and isinstance(value, cst.Integer) and value.value == "0" \
                and not self.is_local_rank(test.left)
        ref = self.facts.ref(test) if isinstance(test, (cst.Name, cst.Attribute)) and depth else None
        sources = self.facts.sources(ref) if ref is not None else []
        if sources and all(isinstance(s, cst.Comparison) for s in sources):
            return all(self._rank_zero(s, depth - 1) for s in sources)
        return self._one_rank(test)

    def _but_one_rank(self, test: cst.BaseExpression) -> bool:
        """`rank != 0`, `rank > 0`, `not is_main_process()`, `accelerator.is_main_process == 0`
        (`== False`, `is False`): a rank test that fails on one process only."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._one_rank(test.expression)
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return False
        operator, value = test.comparisons[0].operator, test.comparisons[0].comparator
        if isinstance(operator, (cst.Equal, cst.Is)) and (mt.is_name(value, "False") or (
                isinstance(value, cst.Integer) and value.value == "0")):
            return self._one_rank(test.left)
        return isinstance(operator, (cst.NotEqual, cst.GreaterThan)) and isinstance(value, cst.Integer) \
            and value.value == "0" and self.rank_dependent(test)

    def _one_rank(self, test: cst.BaseExpression) -> bool:
        """`rank == 0`, `dist.get_rank() == 0`, `is_main_process()`, `master_process`: a rank test
        that holds on one process."""
        if isinstance(test, cst.Comparison):
            return len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal) \
                and isinstance(test.comparisons[0].comparator, cst.Integer) and self.rank_dependent(test)
        name = test.func if isinstance(test, cst.Call) and not test.args else test
        last = (dotted(name) or "").rsplit(".", 1)[-1].lower()
        return isinstance(name, (cst.Name, cst.Attribute)) and (MAIN_PROCESS_WORDS.fullmatch(last) is not None
                                                                or frameworks.one_process_test(self.facts, name)) \
            and self.rank_dependent(test)

    def ends_alone(self, node: cst.CSTNode) -> bool:
        """Does `node` run in a branch that ends its process (`sys.exit(1)`, `os._exit(1)`, a
        `raise`) under a test not proven the same on every process (`if not
        math.isfinite(loss_value):`, the process's own loss)? Only the processes whose own values
        fail enter it, and none comes back: what it writes is a crash dump of that process, not a
        file every process writes."""
        f = self.facts
        child = node
        for anc in f.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(anc, cst.If) and child is not anc.test:
                branch = anc.body if child is anc.body else child.body if isinstance(child, cst.Else) else None
                return branch is not None and _exits(f, branch) and not self._proven_shared(anc.test)
            child = anc
        return False

    def on_some_ranks(self, node: cst.CSTNode, depth: int = 3) -> bool:
        """Does `node` run on some processes only: under a rank test (of an `if`, or of a
        conditional expression: `SummaryWriter(d) if rank == 0 else None`), after an early `return`
        of its function on a rank test, or in a function every call of which is, or runs in the
        launching process only (`Launcher.only`: a subclass's own `train` that overrides the
        method that spawns the workers), or after an `assert` that it is the one process of a rank
        test, or in Lightning's `prepare_data` hook (one process a node)? A hook the program
        registers with accelerate (`register_save_state_pre_hook`) runs where its `save_state(...)`
        calls are."""
        if self._guarded_by_rank(node) or self._after_rank_return(node) or self._rank_choice(node) \
                or self._after_rank_assert(node):
            return True
        func = self.facts.scope(node)
        if not isinstance(func, cst.FunctionDef) or depth == 0:
            return False
        if any(self._rank_only_decorator(d.decorator, func) or self._keyword_gated(d.decorator, func) for d in func.decorators) \
                or lightning_hook(self.facts, func, ONE_PROCESS_A_NODE):
            return True
        if func in self.launcher.targets:
            return False  # started on every worker, whatever its calls here
        sites = self.facts.entries(func) or hook_runs(self.facts, func)  # a hook: where the framework runs it
        return bool(sites) and not self.parted_calls(sites) \
            and all(self.on_some_ranks(site, depth - 1) or self.launcher.only(site) for site in sites)

    def _guarded_by_rank(self, node: cst.CSTNode) -> bool:
        """Does a rank test of `node`'s function keep it from some processes? Not the body of one
        `or`-ed with a test that reads no rank (`if rank == 0 and epoch % 10 == 0 or epoch + 1 ==
        epochs:`): where that alternative holds, every process runs it; a test above may still. An
        alternative that holds in a run of one process only (`rank == -1`, `not dist.is_initialized()`)
        lets no second process in; nor one that holds where each node runs one process (`not
        args.multiprocessing_distributed` where the script spawns its workers under that flag and
        otherwise runs the worker itself): one process a node, as a local rank test lets in."""
        f = self.facts
        guard = self.rank_guard(node)
        while guard is not None:
            if not (f.is_inside(node, guard.body) and any(
                    all(not self.rank_dependent(d) and not self._one_process_alternative(d)
                        and not self._one_process_a_node_alternative(d) for d in conjuncts)
                    for conjuncts in _alternatives(guard.test))):
                return True
            guard = self.rank_guard(guard)
        return False

    def _one_process_a_node_alternative(self, test: cst.BaseExpression) -> bool:
        """`not args.multiprocessing_distributed`, the script spawning its workers only `if
        args.multiprocessing_distributed:` and running the worker itself in its `else`
        (`Launcher.spawn_flags`): each launch of the script, one a node, runs one process there."""
        return isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and self.facts.code(test.expression) in self.launcher.spawn_flags

    def _one_process_alternative(self, test: cst.BaseExpression) -> bool:
        """`rank == -1`, `self.rank is None`, `not dist.is_initialized()`: a test that holds where the
        run has no process group; also the complement of a count every process group starts under
        (`torch.cuda.device_count() == 1` where the group starts `if torch.cuda.device_count() > 1:`).
        `not flag` is also spelled `flag == False`, `flag is False` (`if self.distributed == False or
        dist.get_rank() == 0:`)."""
        if (negated := _negated_flag(test)) is not None:
            return self.several_processes(negated) or self._sharding_flag(negated)
        if (counted := _count_compared(test, _ONE)) is not None and self.facts.code(counted) in self._group_count_gates:
            return True
        return isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
            test.comparisons[0].operator, (cst.Equal, cst.Is)) and _minus_one_or_none(test.comparisons[0].comparator) \
            and (self.rank_name(test.left) or self._reads_rank_environment(test.left))

    def _sharding_flag(self, test: cst.BaseExpression) -> bool:
        """Is `test` a flag (by its code, or the key of a setting: `train_cfg['DDP']`) that every
        DDP wrap of a model and every DistributedSampler of the program is made under (`_sharding_gates`)?
        Where it is false the program neither averages gradients nor shards its data: the run it
        is written for there is one process. The other side of `if (cfg['DDP'] and
        dist.get_rank() == 0) or (not cfg['DDP']):` (`_guarded_by_rank`) lets no second process in."""
        code_gates, key_gates = self._sharding_gates
        return isinstance(test, (cst.Name, cst.Attribute)) and self.facts.code(test) in code_gates \
            or (key := self._setting_key(test)) is not None and key in key_gates

    @cached_property
    def _sharding_gates(self) -> tuple[frozenset[str], frozenset[str]]:
        """The flags (`_gates`: by their code) and the setting keys (`_gate_keys`) that every DDP wrap
        of a model (`models.wrap_kind`: torch's, apex's, a helper that returns one) and every
        DistributedSampler of the program run under, where it has at least one of each and none of
        them is in a function nothing runs (`runs_nowhere`): `if train_cfg['DDP']: sampler =
        DistributedSampler(...); model = DDP(model, ...)` / `else: sampler = RandomSampler(...)`.

        Before: MDDG's `if (train_cfg['DDP'] and torch.distributed.get_rank() == 0) or (not
        train_cfg['DDP']):` around its SummaryWriter and checkpoint saves let every process in
        through `not train_cfg['DDP']`: five writes of every rank (DDP006; round 31's held-out half,
        decision 0272); the process group starts in a helper under the launcher's variables."""
        f = self.facts
        wraps = [c for c in f.calls if wrap_kind(f, c) == WRAP_DDP and not runs_nowhere(f, c)]
        samplers = [c for c in f.calls_to(*SAMPLERS) if not runs_nowhere(f, c)]
        if not wraps or not samplers:
            return frozenset(), frozenset()
        codes: set[str] | None = None
        keys: set[str] | None = None
        for call in [*wraps, *samplers]:
            found, named = self._gates(call, 3), self._gate_keys(call, 3)
            codes = found if codes is None else codes & found
            keys = named if keys is None else keys & named
        return frozenset(codes or ()), frozenset(keys or ())

    def parted_calls(self, sites: list[cst.Call]) -> bool:
        """Do two of these calls sit in the two branches of one rank test (`if rank == 0:
        train(rank, logger)` / `else: train(rank, None)`)? Together they run the function on every
        process, though each runs under a rank test. Not the two branches of a test that itself
        runs on some processes only (`if self.rank == 0:` around `if self.best is None:
        self.save(...)` / `else: self.save(...)`, where `best` is set on rank 0 alone, so its test
        reads a value of some ranks): together they run on those processes only."""
        f = self.facts
        for site in sites:
            for anc in f.ancestors(site):
                if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                    break
                if isinstance(anc, cst.If) and anc.orelse is not None and f.is_inside(site, anc.body) \
                        and self._rank_test(anc) and any(f.is_inside(other, anc.orelse) for other in sites) \
                        and not self._guarded_by_rank(anc):
                    return True
        return False

    def _after_rank_assert(self, node: cst.CSTNode) -> bool:
        """Does `node` follow, in its function, an `assert` that this is the one process of a rank
        test (`assert dist.get_rank() == 0, "only the first process writes"`)? Every other process
        stops at the assert."""
        child = node
        for anc in self.facts.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and any(
                    self._one_rank(test) for test in self._asserts.asserted_before(anc, child)):
                return True
            child = anc
        return False

    @cached_property
    def launcher(self) -> Launcher:
        return Launcher(self.facts)

    def main_first(self, node: cst.CSTNode, depth: int = 3, write: cst.CSTNode | None = None) -> bool:
        """Does `node` run in a "main process first" block: in the body of `with
        torch_distributed_zero_first(rank):` (a context manager of the program whose other ranks
        wait at a collective under a rank test before its `yield`, the main process at one after
        it), or between `if rank != 0: dist.barrier()` and `if rank == 0: dist.barrier()` of its
        block, or a call of a function that one process ran before a wait of every process in its block
        (`if rank == 0: build(args)`, `dist.barrier()`, `build(args)`: `_repeated_after_main`), or before
        Lightning's `Trainer` starts the other processes (`trainer.fit(...)` later:
        `lightning.before_launch`), or in a Lightning loader hook whose `prepare_data` also reaches
        the function holding `write` (`lightning.prepared_first`), or in a function every call of
        which does, but for calls on one process only (that first call of `build`, or one in the
        branch a run of one process takes)? The main process runs it first (writes a cache where it is
        missing), the others after it and find what it wrote."""
        if self._in_main_first(node) or self._repeated_after_main(node) or before_launch(self.facts, node) \
                or write is not None and prepared_first(self.facts, node, write):
            return True
        func = self.facts.scope(node)
        if not isinstance(func, cst.FunctionDef) or depth == 0:
            return False
        sites = [site for site in self.facts.entries(func) if not self.undistributed(site)
                 and not (self.on_some_ranks(site) and not self.all_but_one(site))]
        return bool(sites) and all(self.main_first(site, depth - 1, write) for site in sites)

    def _repeated_after_main(self, node: cst.CSTNode) -> bool:
        """Is `node` a call of a function of the program that an earlier statement of its block
        (or of a block around it) runs on one process, `if rank == 0: build(args)`, with a wait of
        every process between them (`dist.barrier()`, also under a test that reads no rank)? The
        main process builds first (a cache written where it is missing), the others wait, then
        every process runs it again and finds what was written."""
        f = self.facts
        funcs = set(f.user_functions(node)) if isinstance(node, cst.Call) else set()
        child: cst.CSTNode = node
        for anc in f.ancestors(node) if funcs else ():
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and child in anc.body:
                before = anc.body[:anc.body.index(child)]
                if any(isinstance(s, cst.If) and s.orelse is None and self._one_rank(s.test)
                       and any(funcs & set(f.user_functions(c)) for c in f.calls_in(s.body))
                       and any(self._everyone_waits(w) for w in before[i + 1:]) for i, s in enumerate(before)):
                    return True
            child = anc
        return False

    def waits_between(self, first: cst.CSTNode, later: cst.CSTNode) -> bool:
        """Does every process wait for every other on every way from `first` to `later`, two nodes
        of one function (or of the module's top level), `first` before `later`: a statement before
        `later` in its block, or in a block around it, and after `first` where that block holds
        `first` too, that is a collective (`dist.all_reduce(t)`) or an `if` without `else` whose test
        reads no rank and whose body holds one (`if ddp: dist.all_reduce(t)`: on a run where the
        test fails no process group starts)? Then no process passes that point before every other
        has run `first`: what `later` does on one process comes after `first` on all of them.

            with open(log_file, "w") as f:             # <- `first`: every process empties the log
                pass
            for step in range(max_steps):
                ...
                if ddp:
                    dist.all_reduce(loss_accum)         # <- every process has emptied it by then
                if master_process:
                    with open(log_file, "a") as f:      # <- `later`
                        f.write(...)

        Not a collective after `later` in a loop around both (the first round reaches `later`
        before it), nor one in a branch of an `if` with an `else`."""
        f = self.facts
        if f.scope(first) is not f.scope(later) or not f.before(first, later):
            return False
        child: cst.CSTNode = later
        for anc in f.ancestors(later):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and child in anc.body:
                before = list(anc.body[:anc.body.index(child)])
                holds_first = next((s for s in before if s is first or f.is_inside(first, s)), None)
                if holds_first is not None:
                    before = before[before.index(holds_first) + 1:]
                if any(self._all_wait(stmt) for stmt in before):
                    return True
                if holds_first is not None:
                    return False
            child = anc
        return False

    def may_wait_between(self, first: cst.CSTNode, later: cst.CSTNode,
                         holds: Callable[[cst.BaseExpression], bool], depth: int = 3) -> bool:
        """May the processes meet anywhere on the way from `first` to `later`, two nodes of one
        function (or of the top level), `first` before `later`: in a statement after `first` in its
        block and the blocks around it, or before `later` in its own, that runs a collective
        (`collectives_run`, through the program's functions `depth` calls deep), a backward (DDP
        all-reduces in it) or a forward of a name that holds a wrapper (`holds(expr)`, told by the
        caller), or a call so named wherever it comes from (`MEETING_NAMES`: `dist.barrier()` of a
        `dist` a helper module re-exports)? The converse of `waits_between`: a "no" means nothing there makes a process wait
        for the others, so what `later` does on one process may come before `first` ends on another.

            if rank == 0:
                torch.save(state, "best.pt")        # <- `first`
            log(...)                                # no collective: rank 1 runs on at once
            state = torch.load("best.pt")           # <- `later`: rank 1 may read a half-written file
        """
        f = self.facts
        if f.scope(first) is not f.scope(later) or not f.before(first, later):
            return True
        common = next((a for a in f.ancestors(first) if isinstance(a, (cst.IndentedBlock, cst.Module))
                       and f.is_inside(later, a)), None)
        if common is None:
            return True
        stmts: list[cst.CSTNode] = []
        child: cst.CSTNode = first
        for anc in f.ancestors(first):
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and child in anc.body:
                if anc is common:
                    break
                stmts += anc.body[anc.body.index(child) + 1:]
            child = anc
        held = child
        child = later
        for anc in f.ancestors(later):
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and child in anc.body:
                if anc is common:
                    stmts += anc.body[anc.body.index(held) + 1:anc.body.index(child)]
                    break
                stmts += anc.body[:anc.body.index(child)]
            child = anc
        return any(self._may_wait(stmt, holds, depth) for stmt in stmts)

    def _may_wait(self, node: cst.CSTNode, holds: Callable[[cst.BaseExpression], bool], depth: int) -> bool:
        f = self.facts
        for call in f.calls_in(node):
            called = call.func.attr.value if isinstance(call.func, cst.Attribute) else \
                call.func.value if isinstance(call.func, cst.Name) else None
            if self.collectives_run(call, depth) or called in MEETING_NAMES or holds(call.func):
                return True
            if depth > 0 and any(self._may_wait(func.body, holds, depth - 1) for func in self.callees(call)):
                return True
        return False

    def _all_wait(self, stmt: cst.CSTNode) -> bool:
        """A collective as a statement (`dist.all_reduce(t)`), or an `if` without `else` whose test
        reads no rank and whose body has such a statement (`if ddp: t = ...; dist.all_reduce(t)`)."""
        if isinstance(stmt, cst.If):
            return stmt.orelse is None and not self.rank_dependent(stmt.test) \
                and any(self._all_wait(inner) for inner in stmt.body.body)
        return isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and self.is_collective(small.value)
            for small in stmt.body)

    def _everyone_waits(self, stmt: cst.CSTNode) -> bool:
        """`dist.barrier()` as a statement, or as the one statement of an `if` without `else`
        whose test reads no rank (`if args.use_cache: dist.barrier()`)."""
        if isinstance(stmt, cst.If) and stmt.orelse is None and len(stmt.body.body) == 1 \
                and not self.rank_dependent(stmt.test):
            return self._everyone_waits(stmt.body.body[0])
        call = stmt.body[0].value if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
            and isinstance(stmt.body[0], cst.Expr) else None
        return isinstance(call, cst.Call) and self.is_collective(call)

    def _in_main_first(self, node: cst.CSTNode) -> bool:
        f = self.facts
        child = node
        for anc in f.ancestors(node):
            if isinstance(anc, cst.With) and f.is_inside(node, anc.body) and any(
                    isinstance(item.item, cst.Call) and any(self._main_first_manager(func)
                                                            or self._handed_main_first(func, item.item)
                                                            for func in f.user_functions(item.item))
                    for item in anc.items):
                return True
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and child in anc.body:  # a script's top level too
                index = anc.body.index(child)
                if any(self._waits(s) for s in anc.body[:index]) and any(self._waits(s) for s in anc.body[index + 1:]):
                    return True
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                break
            child = anc
        return False

    def _main_first_manager(self, func: cst.FunctionDef) -> bool:
        """A generator whose ranks wait at a collective under a rank test before its `yield` and
        after it (`torch_distributed_zero_first`)."""
        f = self.facts
        yields = f.findall(func, cst.Yield, lambda y: f.scope(y) is func)
        if len(yields) != 1:
            return False
        waits = [s for s in f.findall(func.body, cst.If) if f.scope(s) is func and self._waits(s)]
        return any(f.before(s, yields[0]) and not f.is_inside(yields[0], s) for s in waits) \
            and any(f.before(yields[0], s) for s in waits)

    def _handed_main_first(self, func: cst.FunctionDef, call: cst.Call) -> bool:
        """A generator that `call` hands a rank test for the flag it branches on, and whose branches
        yield before a collective where the flag holds and after one where it fails (mila-docs'
        `goes_first(condition)`: `if condition: yield; dist.barrier()` / `else: dist.barrier();
        yield`, entered as `with goes_first(LOCAL_RANK == 0):`): the process the test picks runs
        the block first, the others after it, as `torch_distributed_zero_first` (the flag a
        parameter never set anew in it).

        Before: the rank test was the argument, not a test of the manager's own, so
        `prepare_imagenet(path)` in that block, which links files only where they are missing, was
        "a file write on every rank" (DDP006, set 17)."""
        f = self.facts
        yields = f.findall(func, cst.Yield, lambda y: f.scope(y) is func)
        branch = next((s for s in f.findall(func.body, cst.If) if f.scope(s) is func and isinstance(s.test, cst.Name)
                       and s.test.value in param_names(func) and not f.writes(Ref(func, s.test.value))
                       and isinstance(s.orelse, cst.Else)), None)
        if branch is None or len(yields) != 2 or not isinstance(branch.orelse, cst.Else):
            return False
        first = next((y for y in yields if f.is_inside(y, branch.body)), None)
        later = next((y for y in yields if f.is_inside(y, branch.orelse.body)), None)
        arg = f.argument_for(call, func, branch.test.value)
        if first is None or later is None or arg is None or not self.rank_test(arg):
            return False
        waits = [c for c in f.calls_in(func.body) if self.is_collective(c)]
        return any(f.is_inside(c, branch.body) and f.before(first, c) for c in waits) \
            and any(f.is_inside(c, branch.orelse.body) and f.before(c, later) for c in waits)

    def _waits(self, stmt: cst.CSTNode) -> bool:
        """`if rank != 0: dist.barrier()`: an `if` on a rank test, without an `else`, that runs a
        collective; also as the one statement of an `if` that the run has several processes
        (`if args.distributed: if dist.get_rank() != 0: dist.barrier()`)."""
        if isinstance(stmt, cst.If) and stmt.orelse is None and len(stmt.body.body) == 1 \
                and not self._rank_test(stmt) and self.several_processes(stmt.test):
            return self._waits(stmt.body.body[0])
        return isinstance(stmt, cst.If) and stmt.orelse is None and self._rank_test(stmt) \
            and any(self.is_collective(c) for c in self.facts.calls_in(stmt.body))

    def _rank_only_decorator(self, decorator: cst.BaseExpression, func: cst.FunctionDef) -> bool:
        """A decorator of the program whose wrapper calls the function it decorates under a rank
        test only (`@rank0_only`: `def wrapper(*a, **k): if get_rank() == 0: fn(*a, **k)`, then a
        barrier), or a framework's (`frameworks.rank_only_decorator`: easytorch's `@master_only`):
        the decorated body runs on those ranks. A plain function of the decorated method's own
        class body is such a decorator too (`def _main_only(method): def inner(self, *a): if
        self.rank_id == 0: return method(self, *a)` ... `@_main_only def log(self, ...)`: the body
        of a class names its earlier functions while it runs)."""
        f = self.facts
        if frameworks.rank_only_decorator(f, decorator):
            return True
        name = dotted(decorator)
        home = f.enclosing_class(func)
        decos = [d for d in f.functions.get(name.rpartition(".")[2], ()) if f.enclosing_class(d) is None
                 or home is not None and isinstance(decorator, cst.Name) and f.enclosing_class(d) is home
                 and _body_of(f, d) is home] if name else []
        for deco in decos:
            params = [p.name.value for p in deco.params.params]
            calls = [c for c in f.calls_in(deco.body) if params and mt.is_name(c.func, params[0])]
            if calls and all(isinstance(f.scope(c), cst.FunctionDef) and f.scope(c) is not deco
                             and self.rank_guard(c) is not None for c in calls):
                return True
        return False

    def _keyword_gated(self, decorator: cst.BaseExpression, func: cst.FunctionDef) -> bool:
        """A decorator of the program whose wrapper returns before calling the function unless a
        keyword argument holds (`def wrapper(*a, **kw): if not kw.get("main_rank", False): return
        None` ... `return fn(*a, **kw)`), where every call of the decorated function passes that
        keyword a rank test (`self.save(step, main_rank=self.main_rank)`, `main_rank = rank == 0`)."""
        f = self.facts
        name = dotted(decorator)
        decos = [d for d in f.functions.get(name.rpartition(".")[2], ()) if f.enclosing_class(d) is None] if name else []
        sites = f.call_sites(func)
        for deco in decos:
            for wrapper in f.findall(deco.body, cst.FunctionDef):
                star = wrapper.params.star_kwarg
                if star is None:
                    continue
                keys = {string_value(c.args[0].value) for c in f.findall(wrapper.body, cst.Call)
                        if c.args and isinstance(c.func, cst.Attribute) and c.func.attr.value == "get"
                        and mt.is_name(c.func.value, star.name.value)}
                gates = [s for s in wrapper.body.body if isinstance(s, cst.If) and any(
                    isinstance(r, cst.Return) for r in f.findall(s.body, cst.Return))]
                for key in (k for k in keys if k is not None):
                    if gates and sites and all(
                            (arg := mt.keyword(site, key)) is not None and self.rank_dependent(arg.value) for site in sites):
                        return True
        return False

    def _after_rank_return(self, node: cst.CSTNode) -> bool:
        return self.rank_return_guard(node) is not None

    def rank_return_guard(self, node: cst.CSTNode) -> cst.If | None:
        """The rank test of an `if rank != 0: return` earlier in `node`'s function (not around
        `node`): the ranks that return never reach `node`."""
        f = self.facts
        for r, guard in self._rank_returns.get(f.scope(node), ()):
            if f.before(r, node) and not f.is_inside(node, guard) and not self._excluded(node, guard.test):
                return guard
        return None

    def _excluded(self, node: cst.CSTNode, returned: cst.BaseExpression) -> bool:
        """Does `node` run only where a condition of the return's test is false, so the ranks
        that returned would not reach it anyway: `if not use_fsdp and not is_rank0: return` ...
        `if use_fsdp: dist.broadcast(...)`?"""
        f = self.facts
        conditions = {f.code(c) for c in _conjuncts(returned)}
        child = node
        for anc in f.ancestors(node):
            if isinstance(anc, cst.If) and child is not anc.test:
                test, negated = anc.test, False
                if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    test, negated = test.expression, True
                # in the body of `if X:` where the return needs `not X`, or in the else of `if X:` where it needs X
                in_body = child is anc.body
                needs = f"not {f.code(test)}" if in_body != negated else f.code(test)
                if needs in conditions:
                    return True
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = anc
        return False

    @cached_property
    def _rank_returns(self) -> dict:
        """Each function's `return`s under a rank test, with that test's `if` (not error exits)."""
        found: dict = {}
        for r in self.facts.returns:
            if _error_code(r.value):
                continue  # `return -1` after an error: the job is failing there, not waiting
            guard = self.rank_guard(r)
            if guard is not None:
                found.setdefault(self.facts.scope(r), []).append((r, guard))
        return found

    def entry_point(self, func: cst.FunctionDef) -> bool:
        """Is `func` run by this script: called here, or handed on by name (`mp.spawn(worker, ...)`),
        or a method of a Composer event handler (its `Trainer` runs them on every process), or a
        step or hook of a Lightning class (`lightning.run_by_lightning`: `validation_step`)? A
        helper nobody here calls belongs to another file's control flow."""
        name = func.name.value
        return bool(self.facts.call_sites(func)) or bool(self.facts.handing_on(name)) \
            or self.facts.enclosing_class(func) in composer_handlers(self.facts) \
            or lightning.run_by_lightning(self.facts, func)

    def joins_every_process(self, func: cst.FunctionDef) -> bool:
        """Does `func` itself (not a function nested in it) build the DDP wrapper or start the
        process group, under no rank test: both are collectives, so `func` runs on every process
        whoever calls it, also where no call of this program is seen (a trainer class the script
        loads by name from its settings, `getattr(import_module(name), cls)(cfg).train()`)."""
        f = self.facts
        return any(f.qualify(call.func) in _JOINING and f.scope(call) is func and not self.on_some_ranks(call)
                   for call in f.calls_in(func))

    def is_collective(self, call: cst.Call, depth: int = COLLECTIVE_DEPTH) -> bool:
        """A call every process must make: a torch.distributed collective, ddpify_runtime's
        `barrier`/`end_epoch`/`agree_on`, accelerate's `gather`/`reduce` of an `Accelerator`, a
        framework's (`frameworks.collective`: detectron2's `comm.synchronize()`, FSDP's full state
        dict gathered by `model.state_dict()` or `FSDP.optim_state_dict`), a torchmetrics metric's
        `compute()` / `sync()` (`metric_collective`), or a
        function of this file that makes one on every rank (one under a rank test of its own, as in
        "main process first", or after its own early `return` on a rank test, follows a protocol of
        its own; one in a branch this call leaves out, `left_out`, is not made)."""
        if self.facts.qualify(call.func) in COLLECTIVES or barrier_method(self.facts, call) \
                or accelerate_collective(self.facts, call) or frameworks.collective(self.facts, call) \
                or metric_collective(self.facts, call):
            return True
        if call in self._collective:
            return self._collective[call]
        self._collective[call] = False  # recursion adds nothing
        evaluating = self.facts.grad_disabled(call)  # a forward's `if self.training:` is not taken there
        found = depth > 0 and any(self.is_collective(c, depth - 1) and self.rank_guard(c) is None
                                  and not self._after_rank_return(c) and not left_out(self.facts, c, func, call)
                                  and not (evaluating and _training_only(self.facts, c, func))
                                  for func in self.callees(call) for c in self.facts.calls_in(func.body))
        self._collective[call] = found
        return found

    def takes_every_rank(self, call: cst.Call) -> bool:
        """Is `call` the entry of a "main process first" protocol of the program that every rank
        must enter: a generator function (a context manager's, `with torch_distributed_zero_first(
        local_rank):`) that runs a collective before its `yield` under a rank test and another after
        it (the other ranks wait at the first barrier until the main one reaches the second)? Such
        a function's collectives are each under a rank test of its own, so `is_collective` does not
        count its call; but a rank that never enters it leaves the others at their barrier.
        SparseML's `_create_val_dataset_and_loader` returns early on every
        process but the main one, which then enters `torch_distributed_zero_first` alone (PR #29)."""
        funcs = self.callees(call)
        if not funcs:
            return False
        for func in funcs:
            yields = [y for y in self.facts.findall(func.body, cst.Yield) if self.facts.scope(y) is func]
            if not yields:
                return False
            first, last = min(self.facts.spans[y][0] for y in yields), max(self.facts.spans[y][0] for y in yields)
            guarded = [c for c in self.facts.calls_in(func.body) if self.is_collective(c) and self.rank_guard(c) is not None]
            if not any(self.facts.spans[c][0] < first for c in guarded) or not any(self.facts.spans[c][0] > last for c in guarded):
                return False
        return True

    def collectives_run(self, call: cst.Call, depth: int = 3) -> frozenset[str]:
        """The collectives a call may run, by qualified name: itself (`torch.distributed.broadcast`),
        or what the functions of this file it runs reach (`closure()`), or those it is handed
        and runs (`optimizer.step(closure)`: the optimizer calls the closure)."""
        name = self.facts.qualify(call.func)
        if name in COLLECTIVES or barrier_method(self.facts, call) or frameworks.collective(self.facts, call):
            return frozenset({name or "barrier"})
        if accelerate_collective(self.facts, call):
            return frozenset({f"accelerate.Accelerator.{self.facts.code(call.func).rsplit('.', 1)[-1]}"})
        if metric_collective(self.facts, call):
            return frozenset({f"torchmetrics.Metric.{self.facts.code(call.func).rsplit('.', 1)[-1]}"})
        funcs = [*self.callees(call), *self.handed_functions(call)] if depth > 0 else []
        return frozenset().union(*(self.collectives_reached(func.body, depth - 1) for func in funcs))

    def raced_file_test(self, node: cst.CSTNode) -> cst.If | None:
        """The `if` around `node` whose test asks whether a file exists (`os.path.exists(p)`,
        `Path(p).is_file()`), `node` on the side where it does not, where that side makes files on
        some ranks only (`if rank == 0: download(url, p)`), or None. Each process asks on its own,
        before or after a rank has made the file there: its answer is not the same on every process,
        though no rank is read.

            if os.path.exists(path):            # <- this `if`, for the barrier below
                state = torch.load(path)
            else:
                if rank == 0:
                    download(url, path)
                dist.barrier()                   # a rank that looks after rank 0 has made it skips this

        Where the side that finds the file may return and the `if` has no `else`, the missing side is
        the code after the `if` in its block:

            if os.path.exists(plan):             # <- this `if`, for the barrier below
                return load(plan)
            if rank == 0:
                build(plan)
            dist.barrier()
        """
        f = self.facts
        child = node
        for anc in f.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and child in anc.body:
                after = list(anc.body)
                at = next(i for i, stmt in enumerate(after) if stmt is child)
                for i, stmt in enumerate(after[:at]):
                    if isinstance(stmt, cst.If) and stmt.orelse is None and _file_test(f, stmt.test) \
                            and _may_return(stmt.body) and any(_makes_file(f, c) and self.on_some_ranks(c)
                                                               for s in after[i + 1:] for c in f.calls_in(s)):
                        return stmt
            if isinstance(anc, cst.If) and child is not anc.test:
                test, negated = anc.test, False
                if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    test, negated = test.expression, True
                missing = anc.body if negated else anc.orelse
                if _file_test(f, test) and missing is not None and f.is_inside(node, missing) and any(
                        _makes_file(f, c) and self.on_some_ranks(c) for c in f.calls_in(missing)):
                    return anc
            child = anc
        return None

    def collectives_reached(self, node: cst.CSTNode, depth: int = 3) -> frozenset[str]:
        """The collectives a block may run (`collectives_run` of each call in it)."""
        key = (node, depth)
        if key not in self._reached:
            self._reached[key] = frozenset()  # recursion adds nothing
            self._reached[key] = frozenset().union(*(self.collectives_run(c, depth) for c in self.facts.calls_in(node)))
        return self._reached[key]

    def callees(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions of the program a call runs: by name (`Facts.user_functions`), else the
        methods of the objects it is made on (`self.checkpointer.load(...)` where `__init__`
        built `self.checkpointer` from a class of another module: `objects.Objects.methods`), else
        any function a decorator registry its callee is looked up in holds (`evaluation_fn(...)` of
        `get_eval_function(...)`: `Facts.registered_functions`)."""
        return self.facts.user_functions(call) or (of(self.facts).methods(call) if isinstance(
            call.func, cst.Attribute) and dotted(call.func.value) != "self" else []) or self._forwards(call) \
            or self.facts.registered_functions(call)

    def _forwards(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The `forward` a call of a module runs (`Module.__call__` runs it): `self.model(x)` where
        `self.model` holds an instance of the program's `nn.Module` classes, `self.encoders[i](x)` of an
        `nn.ModuleList` of them (what the object core finds the called object may be)."""
        f = self.facts
        if not isinstance(call.func, (cst.Name, cst.Attribute, cst.Subscript)):
            return []
        flow = of(f)
        held = flow.values(call.func)
        if isinstance(call.func, cst.Subscript):  # an item of `nn.ModuleList([...])`, `nn.ModuleDict({...})`
            held |= Sites().union(*(flow.elements(c) for s in flow.values(call.func.value) if isinstance(s, cst.Call)
                                    and f.qualify(s.func) in MODULE_CONTAINERS and s.args
                                    for c in flow.values(s.args[0].value)))
        classes = dict.fromkeys(c for s in held for c in flow.classes_built(s))
        return list(dict.fromkeys(m for c in classes if is_module_class(f, c) for m in f.method(c, "forward")))

    def handed_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        """The functions of this file a call is handed by name (`optimizer.step(closure)`,
        `mp.spawn(worker, ...)`): defined where the call can see them."""
        f = self.facts
        return [func for a in call.args if isinstance(a.value, cst.Name)
                for func in f.functions.get(a.value.value, ())
                if f.scope(func) is f.module or f.is_inside(call, f.scope(func))]

    def matched_across_branches(self, call: cst.Call, guard: cst.If) -> bool:
        """Do the processes on the other side of the rank test `guard` reach what `call` runs:
        every other branch runs each of its collectives (rank 0 broadcasts in `if rank == 0:`
        and the others receive in `else:`; rank 0 hands a closure that broadcasts to
        `optimizer.step` and the others call it in a loop)? Not where a branch is missing: the
        others go on past the `if`, and reach what follows it only where `call`'s own branch
        returns (a protocol split by an early return: `if not main: barrier(); return`, then rank
        0's barrier in a `finally`). After a return on `guard`, the ranks that returned reach
        `call`'s collectives in the branch they return from."""
        f = self.facts
        runs = self.collectives_run(call)
        branches = [guard.body, guard.orelse]
        if not runs:
            return False
        if not f.is_inside(call, guard):  # after `if rank != 0: ...; return`
            returning = [b for b in branches if b is not None and _returns(b)]
            return bool(returning) and all(runs <= self.collectives_reached(b) for b in returning)
        own = next(b for b in branches if b is not None and f.is_inside(call, b))
        after = self._reached_after(guard) if _returns(own) else frozenset()
        return all(runs <= (self.collectives_reached(b) if b is not None else frozenset())
                   | (after if b is None or not _returns(b) else frozenset()) for b in branches if b is not own)

    def _reached_after(self, node: cst.CSTNode) -> frozenset[str]:
        """The collectives the statements after `node` in its function may run."""
        f = self.facts
        found: frozenset[str] = frozenset()
        child = node
        for anc in f.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)):
                break
            if isinstance(anc, cst.IndentedBlock) and child in anc.body:
                for stmt in anc.body[anc.body.index(child) + 1:]:
                    found |= self.collectives_reached(stmt)
            child = anc
        return found

    @cached_property
    def own_gpu_only(self) -> bool:
        """Does each process see its own GPU only: the script sets `CUDA_VISIBLE_DEVICES` to a
        value that differs by process (`os.environ["CUDA_VISIBLE_DEVICES"] =
        os.environ["SLURM_LOCALID"]`, `= str(devices[rank])`)? Then `cuda:0` is that GPU."""
        return any(self.environment_key(target) == "CUDA_VISIBLE_DEVICES" and self.rank_dependent(value)
                   for target, value, _ in self.facts.assigns)

    @cached_property
    def loopback_master(self) -> bool:
        """Does the program set `MASTER_ADDR` to this machine itself, each time it sets it
        (`os.environ["MASTER_ADDR"] = "localhost"`, `"127.0.0.1"`)? Then every process meets the
        others on its own machine: a launch on two nodes never forms one group, so the job is one
        node's and the global rank is the local one (as mp.spawn's index). `os.environ.setdefault`
        keeps a launcher's address and does not count, nor does a store made only where the
        environment has no address (`if not os.environ.get("MASTER_ADDR"): os.environ["MASTER_ADDR"]
        = "localhost"`, `_only_where_unset`): a setdefault written out, which torchrun's address on two
        nodes passes by. Before, such a default made every launch one node's, and the global rank
        used as the GPU (`model.to(rank)` with `rank = int(os.environ["RANK"])`) went unreported."""
        values = [value for target, value, _ in self.facts.assigns
                  if self.environment_key(target) == "MASTER_ADDR" and not self._only_where_unset(target, "MASTER_ADDR")
                  and not self._never_run(target)]
        return bool(values) and all(string_value(v) in LOOPBACK for v in values)

    def _never_run(self, node: cst.CSTNode) -> bool:
        """Is `node` in a function of the program that nothing runs: a top-level function (no
        method, no decorator) that no call enters and no call hands on by name (`setup(rank,
        world_size)` whose one call is commented out, the script joining the group by env:// from
        its launcher)? Its store of `MASTER_ADDR` says nothing of where the processes meet.

        Before: such a dead `setup` setting `MASTER_ADDR = "localhost"` made every launch one
        node's, and `torch.cuda.set_device(dist.get_rank())` of the env:// launch it never runs in
        went unreported (ELP-CUB, set 30; decision 0248)."""
        f = self.facts
        func = f.scope(node)
        return isinstance(func, cst.FunctionDef) and f.enclosing_class(func) is None and not func.decorators \
            and isinstance(f.parent(func), cst.Module) and not f.entries(func) and not f.handing_on(func.name.value)

    def _only_where_unset(self, node: cst.CSTNode, key: str) -> bool:
        """Does `node` run only where the environment has no `key`: in the body of an `if` that asks
        for its absence (`not os.environ.get(key)`, `os.getenv(key) is None`, `key not in os.environ`),
        or in the `else` of one that asks for its presence (`if key in os.environ:`)?"""
        f = self.facts
        child, parent = node, f.parent(node)
        while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            if isinstance(parent, cst.If) and child is not parent.test:
                absent = self._asks_environment(parent.test, key)
                if absent is not None and absent == (child is parent.body):
                    return True
            child, parent = parent, f.parent(parent)
        return False

    def _asks_environment(self, test: cst.BaseExpression, key: str) -> bool | None:
        """True where `test` holds when the environment has no `key` (`not os.environ.get(key)`,
        `os.getenv(key) is None`, `key not in os.environ`), False where it holds when it has one
        (`os.environ.get(key)`, `key in os.environ`, `... is not None`), None for any other test."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            asked = self._asks_environment(test.expression, key)
            return None if asked is None else not asked
        if self.environment_key(test) == key and isinstance(test, cst.Call):
            return False
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            op, right = test.comparisons[0].operator, test.comparisons[0].comparator
            if isinstance(op, (cst.In, cst.NotIn)) and string_value(test.left) == key \
                    and self.facts.qualify(right) == "os.environ":
                return isinstance(op, cst.NotIn)
            if isinstance(op, (cst.Is, cst.IsNot)) and isinstance(right, cst.Name) and right.value == "None" \
                    and isinstance(test.left, cst.Call) and self.environment_key(test.left) == key:
                return isinstance(op, cst.Is)
        return None

    def environment_key(self, node: cst.CSTNode) -> str | None:
        """"X" for `os.environ["X"]`, `os.environ.get("X", ...)`, `os.getenv("X")`
        (`distributed.environment_key`)."""
        return environment_key(self.facts, node)


def named_read(expr: cst.CSTNode) -> tuple[cst.BaseExpression, str] | None:
    """(`opts`, `"ddp.rank"`) for `getattr(opts, "ddp.rank")` or `getattr(opts, "ddp.rank", 0)`: a
    read of the attribute a literal names; None for anything else."""
    if not isinstance(expr, cst.Call) or not mt.is_call_of(expr, "getattr") or len(expr.args) not in (2, 3) \
            or any(a.keyword is not None or a.star for a in expr.args):
        return None
    name = string_value(expr.args[1].value)
    return (expr.args[0].value, name) if name else None


def counts_this_nodes_gpus(facts: Facts, world_size: cst.BaseExpression | None) -> bool:
    """Is an `init_process_group`'s `world_size` the number of GPUs of this machine,
    `torch.cuda.device_count()` (through names, arguments and returns, and through what the
    program stores into an attribute of the object it is read from: `args.nprocs =
    torch.cuda.device_count()`, read as `world_size=args.nprocs` in the worker `args` is handed to)?
    Then the job is one node's, and a rank is the process's index on it."""
    origins = _stored_origins(facts, world_size, 3) if world_size is not None else []
    return bool(origins) and all(isinstance(o, cst.Call) and facts.qualify(o.func) == "torch.cuda.device_count"
                                 for o in origins)


def _stored_origins(facts: Facts, expr: cst.BaseExpression, depth: int) -> list[cst.BaseExpression]:
    """`facts.origins(expr)`, an attribute among them (`args.nprocs` of a parsed namespace) replaced
    by the origins of what the program stores into it on the objects it may hold, `depth` stores deep."""
    found: list[cst.BaseExpression] = []
    for origin in facts.origins(expr):
        stored = of(facts).stored_into(origin) if depth > 0 and isinstance(origin, cst.Attribute) else []
        found += [o for s in stored for o in _stored_origins(facts, s, depth - 1)] if stored else [origin]
    return found


def read_names(facts: Facts, expr: cst.CSTNode) -> list[cst.CSTNode]:
    """The names and attributes `expr` reads for its value, not those that only place it on a
    device (`map_location=...`, `device=...`, the arguments of `.to(...)`, `.cuda(...)`)."""
    placing = [a.value for c in facts.findall(expr, cst.Call) for a in c.args
               if a.keyword and a.keyword.value in PLACING_KEYWORDS or mt.is_method_call(c, *PLACING_METHODS)]
    skipped = {id(n) for p in placing for n in names_in(facts, p)}
    return [n for n in names_in(facts, expr) if id(n) not in skipped]


def _in_group(call: cst.Call) -> bool:
    """`dist.get_rank(group=local_group)`, `dist.get_rank(pg)`: the rank within a group the program
    made (detectron2's per-machine group: the local rank), not among all processes; not
    `group=None` nor `group=dist.group.WORLD`."""
    given = mt.keyword(call, "group") or next((a for a in call.args if a.keyword is None), None)
    return given is not None and not mt.is_name(given.value, "None") and not (dotted(given.value) or "").endswith("WORLD")


def _parts(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The items of a tuple written out (`return mesh.get_local_rank("dp"), n`), else the value."""
    return [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]


# calls that end the process
EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})


def _ends_in_return(f: Facts, block: cst.BaseSuite) -> bool:
    """Is the last statement of the block a `return`, so that every path through it returns (or
    leaves it otherwise, by a `raise` or an early `return` within)? Not a block with a `break` or
    `continue` in it, which may leave by another way."""
    last = block.body[-1] if isinstance(block, cst.IndentedBlock) and block.body else None
    small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) else None
    return isinstance(small, cst.Return) and not f.findall(block, (cst.Break, cst.Continue))


def _exits(f: Facts, block: cst.BaseSuite) -> bool:
    """Does the block end the process: a last `raise`, or a call of `sys.exit` and its kin?"""
    last = block.body[-1] if isinstance(block, cst.IndentedBlock) and block.body else None
    small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) else None
    return isinstance(small, cst.Raise) or isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and (
        f.qualify(small.value.func) or dotted(small.value.func)) in EXITS


class _Asserts:
    """The tests of the `assert`s of each block before each of its statements (`asserted_before`),
    each block read once: a program's merged module is a block of every statement of its files, and
    every statement asked about has it among its ancestors."""

    def __init__(self) -> None:
        self._blocks: dict[cst.CSTNode, tuple[dict[cst.CSTNode, int], list[tuple[int, cst.BaseExpression]]]] = {}

    def asserted_before(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> list[cst.BaseExpression]:
        """The tests of the `assert`s of `block` before its statement `child`."""
        if block not in self._blocks:
            self._blocks[block] = ({stmt: i for i, stmt in enumerate(block.body)}, [
                (i, small.test) for i, stmt in enumerate(block.body) if isinstance(stmt, cst.SimpleStatementLine)
                for small in stmt.body if isinstance(small, cst.Assert)])
        place, asserts = self._blocks[block]
        at = place.get(child)
        return [] if at is None else [test for i, test in asserts if i < at]


FILE_TESTS = frozenset({"os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.lexists"})
# torch.hub's loaders download into the hub's cache (or `model_dir=`) where the file is missing
HUB_DOWNLOADS = frozenset({"torch.hub.load_state_dict_from_url", "torch.hub.download_url_to_file",
                           "torch.utils.model_zoo.load_url"})


def _file_test(facts: Facts, test: cst.BaseExpression) -> bool:
    """`os.path.exists(p)`, `os.path.isfile(p)`, `Path(p).exists()`, `p.is_file()`."""
    return isinstance(test, cst.Call) and (facts.qualify(test.func) in FILE_TESTS or not test.args and mt.is_method_call(
        test, "exists", "is_file", "is_dir"))


def _makes_file(facts: Facts, call: cst.Call) -> bool:
    """Does `call` make a file: a write (`torch.save`, `open(p, "w")`), a download or a link?"""
    return bool(writes.file_write(facts, call) or writes.download(facts, call) or writes.link(facts, call)) \
        or writes.fetches(facts, call) or facts.qualify(call.func) in HUB_DOWNLOADS


def _may_return(block: cst.CSTNode) -> bool:
    """Does a `return` of the function stand in `block` (not in a function or class defined there)?"""
    if isinstance(block, cst.Return):
        return True
    if isinstance(block, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    return any(_may_return(c) for c in block.children)


def _returns(branch: cst.CSTNode) -> bool:
    """Does the branch (an `if`'s body or `else`) end in a `return`?"""
    block = branch.body if isinstance(branch, cst.Else) else branch
    last = block.body[-1] if isinstance(block, cst.IndentedBlock) and block.body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)


def _error_code(value: cst.BaseExpression | None) -> bool:
    """`-1`, `-2`: what a function returns to say it failed."""
    return isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) \
        and isinstance(value.expression, cst.Integer)


def _asks_distributed(target: cst.ComparisonTarget) -> bool:
    """`rank != -1`, `rank is None`, `rank >= 0`, `rank > -1`, `rank < 0`: a rank is never
    negative, so these ask whether the run is distributed (-1 or None where it is not), which is
    the same on every process."""
    op, right = target.operator, target.comparator
    if _minus_one_or_none(right):
        return isinstance(op, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)) or \
            isinstance(op, (cst.GreaterThan, cst.LessThanEqual)) and not mt.is_name(right, "None")
    return isinstance(right, cst.Integer) and right.value == "0" and isinstance(op, (cst.GreaterThanEqual, cst.LessThan))


def _assigned_just_before(f, name: cst.Name) -> cst.BaseExpression | None:
    """The value of the last `name = value` among the statements before `name`'s own in its block,
    where no statement between them may assign the name (a compound statement that names it
    anywhere stops the search: None), and none of them is that block's own loop's back edge (the
    block is not a loop's body: its next pass could read an assignment from below)."""
    stmt = f.statement(name)
    block = f.parent(stmt) if stmt is not None else None
    owner = f.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(block, cst.IndentedBlock) or isinstance(owner, (cst.For, cst.While)):
        return None
    body = list(block.body)
    for earlier in reversed(body[:body.index(stmt)] if stmt in body else []):
        if isinstance(earlier, cst.SimpleStatementLine):
            for small in reversed(earlier.body):
                if isinstance(small, cst.Assign) and any(mt.is_name(t.target, name.value) for t in small.targets):
                    return small.value if len(small.targets) == 1 else None
                if any(mt.is_name(t, name.value) for t in mt.findall(small, cst.Name)) and \
                        isinstance(small, (cst.AugAssign, cst.AnnAssign, cst.Assign)):
                    return None
        elif any(n.value == name.value for n in mt.findall(earlier, cst.Name)):
            return None  # (a compound statement that names it: it may assign it)
    return None


def _whole_number(node: cst.CSTNode) -> bool:
    """`0`, `-1`: a constant rank, what a run of one process holds before (or instead of) its own."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)


def _minus_one_or_none(node: cst.CSTNode) -> bool:
    return mt.is_name(node, "None") or isinstance(node, cst.UnaryOperation) and isinstance(
        node.operator, cst.Minus) and isinstance(node.expression, cst.Integer) and node.expression.value == "1"


def _training_only(f: Facts, node: cst.CSTNode, func: cst.FunctionDef) -> bool:
    """Is `node` in a module's `forward` under `if self.training:` (or the `else` of `if not
    self.training:`): run by a training forward only, not by one under `torch.no_grad()` in
    evaluation (encodec's bandwidth broadcast)?"""
    if func.name.value != "forward":
        return False
    for anc in f.ancestors(node):
        if anc is func:
            return False
        if isinstance(anc, cst.If):
            negated = isinstance(anc.test, cst.UnaryOperation) and isinstance(anc.test.operator, cst.Not)
            test = anc.test.expression if isinstance(anc.test, cst.UnaryOperation) and negated else anc.test
            branch = anc.orelse if negated else anc.body
            if dotted(test) == "self.training" and branch is not None and f.is_inside(node, branch):
                return True
    return False


def _negated_flag(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of `not x`, `x == False`, `x is False`; None for any other test."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, (cst.Equal, cst.Is)) \
            and mt.is_name(test.comparisons[0].comparator, "False"):
        return test.left
    return None


def _alternatives(test: cst.BaseExpression, most: int = 16) -> list[list[cst.BaseExpression]]:
    """The ways `test` can hold, each the tests that must all hold: `a or b` -> [[a], [b]], `s and
    (last or rank == 0)` -> [[s, last], [s, rank == 0]] (an `and` over an `or` holds where either
    side of the `or` holds with the rest); a test that is no `or` anywhere -> [] (no alternative of
    its own). More than `most` ways: [] too."""
    def ways(t: cst.BaseExpression) -> list[list[cst.BaseExpression]]:
        if isinstance(t, cst.BooleanOperation) and isinstance(t.operator, cst.Or):
            return ways(t.left) + ways(t.right)
        if isinstance(t, cst.BooleanOperation):
            return [a + b for a in ways(t.left) for b in ways(t.right)][:most + 1]
        return [[t]]
    found = ways(test)
    return found if 1 < len(found) <= most else []


# `n > 1`, `n != 1`, `n >= 2`: more than one; `n == 1`, `n <= 1`, `n < 2`: one (each an operator and its bound)
_MORE_THAN_ONE = ((cst.GreaterThan, "1"), (cst.NotEqual, "1"), (cst.GreaterThanEqual, "2"))
_ONE = ((cst.Equal, "1"), (cst.LessThanEqual, "1"), (cst.LessThan, "2"))


def _count_compared(test: cst.BaseExpression, forms: tuple[tuple[type, str], ...]) -> cst.BaseExpression | None:
    """The count `n` of a test `n OP BOUND` of one of `forms` (`n > 1` for _MORE_THAN_ONE); None for anything else."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(bound := test.comparisons[0].comparator, cst.Integer):
        op = test.comparisons[0].operator
        if any(isinstance(op, kind) and bound.value == value for kind, value in forms):
            return test.left
    return None


# calls every process must make: the DDP wrap (it broadcasts the parameters) and the group's start
# web frameworks' applications and routers, and their decorators that register a request handler
WEB_APPS = frozenset({"fastapi.FastAPI", "fastapi.APIRouter", "fastapi.routing.APIRouter", "flask.Flask",
                      "flask.Blueprint"})
WEB_ROUTE_METHODS = frozenset({"get", "post", "put", "delete", "patch", "head", "options", "route", "api_route",
                               "websocket"})
_JOINING = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.distributed.init_process_group"})


def _returns_only(block: cst.BaseSuite, name: str) -> bool:
    """Is `block` one `return NAME` (`return False`)?"""
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    small = body[0].body if len(body) == 1 and isinstance(body[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)) \
        else []
    return len(small) == 1 and isinstance(small[0], cst.Return) and small[0].value is not None \
        and mt.is_name(small[0].value, name)


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a and b and c` -> [a, b, c]."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def names_in(facts: Facts, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The names and attributes in `node` (`a`, `a.b` and its `a`), from the index of `facts`
    (`Facts.findall`: a walk where `node` is of no tree of theirs); not a call's keyword, which
    names a parameter of the callee and reads nothing.

    Before, the keyword was a name like any other: in `flag = torch.tensor(0, device=device)` the
    `device` of `device=` read the script's variable `device` (`torch.device(f"cuda:{local_rank}")`,
    a rank), so a flag rank 0 broadcast (`dist.broadcast(flag, src=0)`) was still a rank's value to
    `SameValues` and `check` reported the agreed early stop as DDP005; and a keyword spelled like a
    name a collective agreed (`should_stop(loss=own_loss)` beside `dist.all_reduce(loss)`) made a
    test of this process's own value look agreed. Now only the value after `=` is read.

    Nor the name after an attribute's dot, which is no variable: `stop_flag.item()` reads
    `stop_flag.item` and `stop_flag`, not a variable `item` (before, the bare `item` was returned,
    and each question looked it up as a name of the scope, a variable of that spelling if the
    function had one)."""
    found: list[cst.CSTNode] = facts.findall(node, (cst.Name, cst.Attribute))
    return [n for n in found if not (isinstance(n, cst.Name) and _names_no_variable(facts, n))]


def _names_no_variable(facts: Facts, name: cst.Name) -> bool:
    """Is `name` the keyword of a call's argument (the `device` of `device=rank`) or the part after
    an attribute's dot (the `item` of `flag.item`)?"""
    parent = facts.parent(name)
    return isinstance(parent, cst.Arg) and parent.keyword is name or isinstance(parent, cst.Attribute) \
        and parent.attr is name


def rank_variable(key: str) -> bool:
    """An environment variable that differs by process: one of the launchers' (`SLURM_PROCID`), or
    one a word of which is RANK (`LOCAL_RANK`, `MYRANK`; not `RANKING_MODE`, `RERANK_MODEL`: `RANK_WORD`)."""
    return key in RANK_VARIABLES or RANK_WORD.search(key.lower()) is not None


def rank_key(expr: cst.CSTNode) -> bool:
    """`opt["rank"]`, `cfg["local_rank"]`: an entry whose literal key is a rank's name; also read
    with the mapping's or the configuration object's `get` (`configer.get("local_rank")`,
    `cfg.get("rank", 0)`), the same entry asked for by its key.

    Before: only the item was; torchcv's saves under `if self.configer.get('local_rank') != 0:
    return` read as writes of every rank (DDP006)."""
    key = _read_key(expr)
    return key is not None and key.isidentifier() and rank_word(cst.Name(key))


def _read_key(expr: cst.CSTNode) -> str | None:
    """The literal key an entry is read at: `cfg["rank"]` and `cfg.get("rank", 0)` both "rank"."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        return string_value(expr.slice[0].slice.value)
    if isinstance(expr, cst.Call) and mt.is_method_call(expr, "get") and 1 <= len(expr.args) <= 2 \
            and expr.args[0].keyword is None:
        return string_value(expr.args[0].value)
    return None


def ranks_by_role(facts: Facts) -> frozenset[Ref]:
    """The names the script hands on as its process's rank, whatever they are called:
    `def train(gpu, args): dist.init_process_group("nccl", rank=gpu)` makes `gpu` a rank in
    `train`, so `if gpu == 0:` is a rank test there (`rank=int(gpu)` too). `rank=0` (a constant)
    names nothing. The first parameter of a function handed to `mp.spawn` is one as well: spawn
    passes each worker its index (`def run(rank, world_size)`, also called `run("cpu", 1)` on a
    CPU run, so what its callers pass does not say it).

    Before: `gpu` was a rank only by its name, so `if gpu == 0: torch.save(...)` read as every
    rank saving. After: the name's role in the script decides."""
    found = set()
    for call in facts.calls_to(*RANK_TAKERS, *SPAWNED_WITH_INDEX):
        name = facts.qualify(call.func)
        if name in RANK_TAKERS:
            arg = mt.keyword(call, "rank")
            value = arg.value if arg is not None else None
            if isinstance(value, cst.Call) and mt.is_call_of(value, "int") and value.args:
                value = value.args[0].value
            ref = facts.ref(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
            if ref is not None:
                found.add(ref)
        elif name in SPAWNED_WITH_INDEX:
            worker = mt.keyword(call, "fn") or (call.args[0] if call.args and call.args[0].keyword is None else None)
            for func in facts.functions.get(worker.value.value, ()) if worker is not None and isinstance(
                    worker.value, cst.Name) else ():
                params = func.params.params
                if params and facts.enclosing_class(func) is None:
                    found.add(Ref(func, params[0].name.value))
    return frozenset(found)


def _constant_key(item: cst.Subscript) -> str | None:
    """The string an item is taken at (`config["rank"]`: "rank"), else None."""
    index = item.slice[0].slice if len(item.slice) == 1 else None
    return string_value(index.value) if isinstance(index, cst.Index) else None


def _mode_test(test: cst.BaseExpression, negated: bool = False) -> tuple[str, str, bool] | None:
    """`args.dist == "ON"` (with `negated`, also `args.dist != "ON"`): a setting compared with a
    constant, as (the setting's code, the constant, whether the test asks equality)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if not isinstance(test.left, (cst.Name, cst.Attribute)) or mt.is_name(test.left, "__name__") \
            or not isinstance(right, (cst.SimpleString, cst.Integer)):
        return None
    if isinstance(op, cst.Equal) or negated and isinstance(op, cst.NotEqual):
        constant = repr(string_value(right)) if isinstance(right, cst.SimpleString) else right.value
        return cst.Module([]).code_for_node(test.left), constant, isinstance(op, cst.Equal)
    return None


def _body_of(f: Facts, node: cst.CSTNode) -> cst.CSTNode | None:
    """The statement whose block holds `node` directly (a method's class)."""
    block = f.parents.get(node)
    return f.parents.get(block) if block is not None else None
