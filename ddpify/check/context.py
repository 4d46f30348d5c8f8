"""What the rules of `ddpify check` ask about a script, answered from one `Facts` walk.

- which expressions are the global rank (`dist.get_rank()`, `os.environ["RANK"]`, `args.rank`,
  and names that only ever hold one of those), and which tests depend on the rank
  (`if rank == 0:`, `if is_main_process():`; not `if args.local_rank != -1:`, which only asks
  whether the run is distributed);
- which statements run on some processes only (under such a test, or in a function whose every
  call is);
- which calls are collectives (`dist.barrier()`, `all_reduce`, ddpify_runtime's `barrier` and
  `agree_on`, or a helper of this file that runs one);
- which values are the same on every process (`Facts.same_everywhere`, plus what a collective
  agreed, counters kept on `self`, checkpoints, config objects);
- which names hold a `DistributedDataParallel` wrapper, and whether on every path: the
  converter's own answer (`ddpify.models.holds_wrapper`) about the wraps the script writes.
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache

import libcst as cst

from ddpify import matchers as mt
from ddpify.facts import Facts, Ref
from ddpify.models import DDP, Model, holds_wrapper, written_wraps
from ddpify.names import CANONICAL, dotted

SAMPLER = "torch.utils.data.DistributedSampler"
INIT = "torch.distributed.init_process_group"
COLLECTIVES = frozenset(f"torch.distributed.{name}" for name in """
    barrier monitored_barrier all_reduce all_gather all_gather_object all_gather_into_tensor reduce
    reduce_scatter reduce_scatter_tensor broadcast broadcast_object_list gather gather_object scatter
    scatter_object_list all_to_all all_to_all_single new_group""".split()) | {
    "ddpify_runtime.barrier", "ddpify_runtime.agree_on"}
# collectives after which the tensor passed first holds the same value on every process
AGREEING = frozenset({"torch.distributed.all_reduce", "torch.distributed.broadcast",
                      "torch.distributed.broadcast_object_list", "torch.distributed.all_gather",
                      "torch.distributed.all_gather_object"})
GLOBAL_RANK_CALLS = frozenset({"torch.distributed.get_rank", "ddpify_runtime.get_rank"})
GLOBAL_RANK_VARIABLES = frozenset({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"})
# spellings of "this is the main process" that carry no `rank` in their name: `is_main_process`,
# `master_process`, `is_root_worker`, `is_global_zero`, `is_local_master`, `am_chief`, `is_primary()`
# (not a bare `main`, `root` or `zero`: a function, a path, a number)
MAIN_PROCESS_WORDS = re.compile(r"(is_|am_|i_am_)?(local_|global_)?(main|master|root|primary|chief|leader|zero)"
                                r"(_(process|proc|worker|node|gpu|device|host))?")
PER_PROCESS_VARIABLES = frozenset({"SLURM_PROCID", "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                   "CUDA_VISIBLE_DEVICES"})
# methods that read a checkpoint: every process reads the same file
LOADS = ("load", "resume", "resume_or_load", "load_checkpoint", "restore", "load_state")
NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})

# what a star import of a project's utilities conventionally brings (see `_assume_star_imports`)
STAR_NAMES = {"torch": "torch", "dist": "torch.distributed", "nn": "torch.nn", "F": "torch.nn.functional",
              "DDP": DDP, "DistributedDataParallel": DDP, "DistributedSampler": SAMPLER,
              "DataLoader": "torch.utils.data.DataLoader", "os": "os"}

SHARED_DEPTH = 12  # names followed to prove a value is the same on every process


class Context:
    """The facts of one script and the questions the rules share (each answered once)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._global: dict[cst.CSTNode, bool] = {}
        self._collective: dict[cst.CSTNode, bool] = {}
        self._rank_tests: dict[cst.If, bool] = {}
        if facts.imports.stars:
            _assume_star_imports(facts)

    # what kind of script ------------------------------------------------------------------------
    @cached_property
    def distributed(self) -> bool:
        """Does the script use torch.distributed, DDP or ddpify_runtime itself?"""
        f = self.facts
        imported = {CANONICAL.get(v, v) for v in f.imports.aliases.values()}
        return f.imports.imports_module("torch.distributed") or f.imports.imports_module("ddpify_runtime") or \
            bool(imported & {DDP, SAMPLER}) or any(f.qualify(c.func) in (DDP, SAMPLER) for c in f.calls)

    def calls_of(self, *qualified: str) -> list[cst.Call]:
        """The calls of these qualified names, in source order."""
        if len(qualified) == 1:
            return self._calls_by_name.get(qualified[0], [])
        calls = [c for name in qualified for c in self._calls_by_name.get(name, [])]
        return sorted(calls, key=lambda c: self.facts.spans[c][0])

    @cached_property
    def _calls_by_name(self) -> dict[str, list[cst.Call]]:
        index: dict[str, list[cst.Call]] = {}
        for call in self.facts.calls:
            index.setdefault(self.facts.qualify(call.func), []).append(call)
        return index

    def spelled(self, qualified: str) -> str | None:
        """How the script spells a module or name it imports (`dist` for torch.distributed)."""
        for local, full in self.facts.own_imports.aliases.items():
            if full == qualified:
                return local
        head, _, rest = qualified.rpartition(".")
        spelled_head = self.spelled(head) if head else None
        return f"{spelled_head}.{rest}" if spelled_head else None

    # ranks --------------------------------------------------------------------------------------
    def is_global_rank(self, expr: cst.CSTNode) -> bool:
        """Is `expr` the process's rank among all processes of the job (not its index on this node)?
        `dist.get_rank()`, `int(os.environ["RANK"])`, `args.rank` from the command line, a name every
        assignment of which is one of those (`rank = dist.get_rank()`, `rank = setup()` where
        `setup` returns one), `args.rank * ngpus + gpu`.
        A parameter no call in this file passes (`def worker(rank, world)` started by
        `mp.spawn`) is not: there it counts the processes of one node."""
        if expr not in self._global:
            self._global[expr] = True  # `args.rank = args.rank * n + gpu` refers to itself
            self._global[expr] = self._global_rank(expr)
        return self._global[expr]

    def _global_rank(self, expr: cst.CSTNode) -> bool:
        f = self.facts
        if mt.is_call_of(expr, "int") and expr.args:
            return self.is_global_rank(expr.args[0].value)
        if isinstance(expr, cst.Call):
            returned = [r for func in f.user_functions(expr) for r in f.returned(func)]
            if returned and dotted(expr.func) not in f.classes:  # `rank = setup()`: what it returns
                return all(self.is_global_rank(r) for r in returned)
            return f.qualify(expr.func) in GLOBAL_RANK_CALLS or self._reads_rank_variable(expr)
        if isinstance(expr, cst.Subscript):
            return self._reads_rank_variable(expr)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Multiply)):
            return self.is_global_rank(expr.left) or self.is_global_rank(expr.right)
        if isinstance(expr, cst.IfExp):  # `dist.get_rank() if dist.is_initialized() else 0`
            return self.is_global_rank(expr.body) or self.is_global_rank(expr.orelse)
        ref = f.ref(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if ref is None:
            return False
        sources = f.sources(ref)
        if sources:  # `rank = int(os.environ["RANK"])` ... else `rank = 0` (one process)
            ranks = [s for s in sources if not isinstance(s, cst.Integer)]
            return bool(ranks) and all(self.is_global_rank(s) for s in ranks)
        return isinstance(expr, cst.Attribute) and expr.attr.value == "rank" and any(
            mt.is_parse_args(o) for o in f.origins(expr.value))

    def _reads_rank_variable(self, expr: cst.CSTNode) -> bool:
        """`os.environ["RANK"]`, `os.environ.get("RANK")`, `os.getenv("RANK", 0)`."""
        f = self.facts
        if isinstance(expr, cst.Subscript):
            key = expr.slice[0].slice if len(expr.slice) == 1 else None
            return f.qualify(expr.value) == "os.environ" and isinstance(key, cst.Index) and string_value(key.value) \
                in GLOBAL_RANK_VARIABLES
        if isinstance(expr, cst.Call) and expr.args and (
                f.qualify(expr.func) == "os.getenv" or mt.is_attribute(expr.func, "get")
                and f.qualify(expr.func.value) == "os.environ"):
            return string_value(expr.args[0].value) in GLOBAL_RANK_VARIABLES
        return False

    def rank_dependent(self, test: cst.CSTNode, depth: int = 2) -> bool:
        """Can `test` come out differently on different processes because it reads the rank?
        `rank == 0`, `dist.get_rank() != 0`, `is_main_process()`, `args.local_rank in [-1, 0]`, a
        name assigned such a test (`master = rank == 0`); not a comparison with -1 or None
        (`args.local_rank != -1` asks whether the run is distributed, the same everywhere)."""
        if isinstance(test, cst.Comparison) and (_rank_word(test.left) or self._reads_rank_environment(test.left)) and all(
                _minus_one_or_none(t.comparator) and isinstance(t.operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot))
                for t in test.comparisons):
            return False
        if isinstance(test, (cst.Name, cst.Attribute)):
            if _rank_word(test):
                return True
            ref = self.facts.ref(test)
            return depth > 0 and ref is not None and any(
                self.rank_dependent(s, depth - 1) for s in self.facts.sources(ref))
        if self._environment_key(test) is not None:  # `os.environ["LOCAL_RANK"]`
            return "RANK" in self._environment_key(test).upper()
        if isinstance(test, cst.Call):
            return _rank_word(test.func) or any(self.rank_dependent(a.value, depth) for a in test.args)
        return any(self.rank_dependent(child, depth) for child in mt.children(test)
                   if isinstance(child, cst.BaseExpression) or isinstance(child, cst.ComparisonTarget))

    def _reads_rank_environment(self, expr: cst.CSTNode) -> bool:
        """`os.environ["LOCAL_RANK"]`, `int(os.environ.get("RANK", -1))`."""
        if mt.is_call_of(expr, "int") and expr.args:
            expr = expr.args[0].value
        key = self._environment_key(expr)
        return key is not None and "RANK" in key.upper()

    def undistributed(self, node: cst.CSTNode) -> bool:
        """Does `node` run only when the script is not distributed: in the branch of
        `if args.local_rank == -1 ...:` (also `and`-ed with more), or the `else` of `!= -1`?"""
        child = node
        for anc in self.facts.ancestors(node):
            if isinstance(anc, cst.If) and child is not anc.test:
                in_body = child is anc.body
                for test in _conjuncts(anc.test) if in_body else [anc.test]:
                    if isinstance(test, cst.Comparison) and (_rank_word(test.left) or self._reads_rank_environment(
                            test.left)) and len(test.comparisons) == 1 \
                            and _minus_one_or_none(test.comparisons[0].comparator) and isinstance(
                                test.comparisons[0].operator, cst.Equal if in_body else cst.NotEqual):
                        return True
            child = anc
        return False

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

    def _rank_test(self, branch: cst.If) -> bool:
        if branch not in self._rank_tests:
            self._rank_tests[branch] = self.rank_dependent(branch.test)
        return self._rank_tests[branch]

    def on_some_ranks(self, node: cst.CSTNode, depth: int = 3) -> bool:
        """Does `node` run on some processes only: under a rank test, after an early `return`
        of its function on a rank test, or in a function every call of which is?"""
        if self.rank_guard(node) is not None or self._after_rank_return(node):
            return True
        func = self.facts.scope(node)
        if not isinstance(func, cst.FunctionDef) or depth == 0:
            return False
        sites = self.facts.call_sites(func)
        return bool(sites) and all(self.on_some_ranks(site, depth - 1) for site in sites)

    def _after_rank_return(self, node: cst.CSTNode) -> bool:
        """`if rank != 0: return` earlier in the same function."""
        func = self.facts.scope(node)
        return any(self.facts.scope(r) is func and self.facts.before(r, node) and self.rank_guard(r) is not None
                   and not self.facts.is_inside(node, self.rank_guard(r)) for r in self.facts.returns)

    def entry_point(self, func: cst.FunctionDef) -> bool:
        """Is `func` run by this script: called here, or handed on by name (`mp.spawn(worker, ...)`)?
        A helper nobody here calls belongs to another file's control flow."""
        name = func.name.value
        return bool(self.facts.call_sites(func)) or any(
            isinstance(a.value, cst.Name) and a.value.value == name for c in self.facts.calls for a in c.args)

    # collectives --------------------------------------------------------------------------------
    def is_collective(self, call: cst.Call, depth: int = 3) -> bool:
        """A call every process must make: a torch.distributed collective, ddpify_runtime's
        `barrier`/`agree_on`, or a function of this file that makes one on every rank (one under
        a rank test of its own, as in "main process first", follows a protocol of its own)."""
        if self.facts.qualify(call.func) in COLLECTIVES:
            return True
        if call in self._collective:
            return self._collective[call]
        self._collective[call] = False  # recursion adds nothing
        found = depth > 0 and any(self.is_collective(c, depth - 1) and self.rank_guard(c) is None
                                  for func in self.facts.user_functions(call) for c in self.facts.calls_in(func.body))
        self._collective[call] = found
        return found

    @cached_property
    def agreed_names(self) -> set[str]:
        """Names whose value was made the same on every process (`dist.all_reduce(loss)`)."""
        names = set()
        for call in self.calls_of(*AGREEING):
            if call.args and dotted(call.args[0].value):
                names.add(dotted(call.args[0].value))
        return names

    def same_everywhere(self, test: cst.BaseExpression) -> bool:
        """`Facts.same_everywhere`, plus values agreed by a collective (`agree_on(...)`, a tensor
        passed to `dist.all_reduce` before), attributes every assignment of which is shared
        (`self.iter_num = 0` ... `self.iter_num += 1`), objects of this file's classes built from
        shared values (a config dataclass), methods of shared values (`args.path.split("-")`),
        and what a checkpoint holds (`torch.load` reads the same file on every process)."""
        f = self.facts
        if f.same_everywhere(test) or self._shared(test, frozenset()):
            return True
        return any(f.qualify(c.func) == "ddpify_runtime.agree_on" for c in mt.findall(test, cst.Call)) or any(
            dotted(n) in self.agreed_names for n in mt.findall(test, (cst.Name, cst.Attribute)))

    def _shared(self, node: cst.CSTNode, proving: frozenset) -> bool:
        f = self.facts
        if f.same_everywhere(node):
            return True
        if len(proving) > SHARED_DEPTH:
            return False
        if isinstance(node, (cst.Name, cst.Attribute)):
            if dotted(node) in self.agreed_names:  # `flags = [stop]; dist.broadcast_object_list(flags)`
                return True
            ref = f.ref(node)
            if ref is None or ref in proving:
                return ref is not None
            proving = proving | {ref}
            if any(dotted(n) in self.agreed_names for _, value, _ in f.writes(ref)
                   for n in mt.findall(value, (cst.Name, cst.Attribute))):
                return True  # `if RANK != 0: stop = broadcast_list[0]` after the broadcast
            if self._counts(node):
                return True
            last = self._last_write(ref, node)
            if last is not None:  # `stop = flags[0]` right before the test: what it holds there
                return self._shared(last, proving)
            writes = f.writes(ref)
            if writes:
                return all(self._shared(value, proving) for _, value, _ in writes)
            if isinstance(node, cst.Attribute):
                return self._shared(node.value, proving)
            return self._shared_parameter(ref, proving)
        if self._environment(node):  # `os.environ.get("MAX_STEPS")`: one job, one environment
            return True
        if isinstance(node, cst.Subscript):  # `checkpoint["iter_num"]`
            return self._shared(node.value, proving)
        if isinstance(node, cst.Call) and mt.is_method_call(node, *LOADS):
            return True  # `checkpointer.resume_or_load(path)`: the same file on every process
        if isinstance(node, cst.Call):
            arguments = all(self._shared(a.value, proving) for a in node.args)
            if mt.is_call_of(node, "len") and len(node.args) == 1 and self._data(node.args[0].value):
                return True  # `len(train_sampler)`: a distributed sampler gives every process as many
            if dotted(node.func) in f.classes or dotted(node.func) in f.PURE_BUILTINS:  # `Config()`, `int(x)`
                return arguments
            funcs = f.user_functions(node)
            if funcs:  # `args = get_args()`: what it returns
                return all(f.returned(func) and all(self._shared(r, proving) for r in f.returned(func))
                           for func in funcs)
            if isinstance(node.func, cst.Attribute) and self._shared(node.func.value, proving) \
                    or (f.qualify(node.func) or "").startswith(("os.path.", "math.")):
                return arguments  # `args.path.split("-")`, `os.path.basename(args.ckpt)`
            return f.qualify(node.func) == "torch.load" or mt.is_parse_args(node)
        if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return False
        return all(self._shared(child, proving) for child in mt.children(node) if isinstance(child, cst.BaseExpression)
                   or isinstance(child, (cst.ComparisonTarget, cst.Arg)))

    def _counts(self, name: cst.CSTNode) -> bool:
        """`idx` of `for idx in pbar` where `pbar` is a `range(...)`, on some ranks wrapped in a
        progress bar (`pbar = tqdm(pbar) if rank == 0 else pbar`): a counter all the same."""
        f = self.facts
        if not isinstance(name, cst.Name):
            return False
        for anc in f.ancestors(name):
            if isinstance(anc, cst.For) and name.value in {n.value for n in mt.findall(anc.target, cst.Name)}:
                target = anc.target
                if isinstance(target, cst.Tuple) and mt.is_call_of(anc.iter, "enumerate"):
                    return target.elements[0].value is not None and mt.is_name(target.elements[0].value, name.value)
                origins = [o for o in f.origins(anc.iter) if dotted(o) != dotted(anc.iter)]
                return isinstance(target, cst.Name) and bool(origins) and all(mt.is_counting(o) for o in origins)
        return False

    def _data(self, expr: cst.BaseExpression) -> bool:
        """A sampler, loader or data set (built by a class so named, or a parameter so named): its
        length is the same on every process, since distributed sampling gives each an equal share."""
        origins = self.facts.origins(expr)
        return bool(origins) and all(
            re.search(r"(sampler|loader|dataset)$", dotted(o.func if isinstance(o, cst.Call) else o) or "", re.I)
            for o in origins)

    def _last_write(self, ref: Ref, use: cst.CSTNode) -> cst.BaseExpression | None:
        """The value of the last assignment to `ref` before `use` in the same loop body or block
        chain, which runs on every path to `use` (None when there is none)."""
        f = self.facts
        for _, value, stmt in reversed(f.writes(ref)):
            if f.scope(stmt) is f.scope(use) and f.before(stmt, use) and not isinstance(stmt, cst.AugAssign):
                if not _conditional(f, stmt, use):
                    return value
        return None

    def _shared_parameter(self, ref: Ref, proving: frozenset) -> bool:
        """A parameter every call of this file passes a shared value (`Trainer(args)`), or one of
        a function that no call of this file reaches (another file's entry point passes it
        configuration: `def train(cfg, max_iter)`), unless its name says it is a rank."""
        f = self.facts
        if not isinstance(ref.scope, cst.FunctionDef):
            return False
        sites = f.call_sites(ref.scope)
        if not sites:
            return not self.entry_point(ref.scope) and not _rank_word(cst.Name(ref.name))
        passed = [f.argument_for(call, ref.scope, ref.name) for call in sites]
        return all(p is not None and self._shared(p, proving) for p in passed)

    def _environment(self, node: cst.CSTNode) -> bool:
        """`os.environ["X"]`, `os.environ.get("X")`, `os.getenv("X")` for a variable other than a
        rank (the launcher gives every process the same environment but those)."""
        key = self._environment_key(node)
        return key is not None and "RANK" not in key.upper() and key not in PER_PROCESS_VARIABLES

    def _environment_key(self, node: cst.CSTNode) -> str | None:
        """"X" for `os.environ["X"]`, `os.environ.get("X", ...)`, `os.getenv("X")`."""
        f = self.facts
        if isinstance(node, cst.Subscript) and f.qualify(node.value) == "os.environ" and len(node.slice) == 1 \
                and isinstance(node.slice[0].slice, cst.Index):
            return string_value(node.slice[0].slice.value)
        if isinstance(node, cst.Call) and node.args and (f.qualify(node.func) == "os.getenv" or mt.is_attribute(
                node.func, "get") and f.qualify(node.func.value) == "os.environ"):
            return string_value(node.args[0].value)
        return None

    def grad_disabled(self, node: cst.CSTNode) -> bool:
        """Inside `with torch.no_grad():` or a function decorated with it."""
        f = self.facts
        for anc in f.ancestors(node):
            if isinstance(anc, cst.With) and any(
                    isinstance(i.item, cst.Call) and f.qualify(i.item.func) in NO_GRAD for i in anc.items):
                return True
            if isinstance(anc, cst.FunctionDef) and any(
                    f.qualify(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) in NO_GRAD
                    for d in anc.decorators):
                return True
        return False

    # the DDP wrapper ----------------------------------------------------------------------------
    @cached_property
    def ddp_refs(self) -> dict[Ref, Model]:
        """Names that hold a `DistributedDataParallel(...)` the script built, with the parameters of
        this file's functions they are passed to (`models.written_wraps`)."""
        return written_wraps(self.facts)

    def holds_ddp(self, expr: cst.BaseExpression) -> str | None:
        """WRAPPER when `expr` holds the wrapper on every path that reaches it, MAYBE when on
        some (`if args.distributed: model = DDP(model)`), None when never: the converter's own
        answer (`models.holds_wrapper`), about the wraps this script writes."""
        return holds_wrapper(self.facts, self.ddp_refs, expr) if self.ddp_refs else None

    @cached_property
    def set_attributes(self) -> set[tuple[Ref | None, str | None]]:
        """(where the object lives, attribute name) for every `obj.x = ...` and
        `setattr(obj, "x", ...)` of the script."""
        f = self.facts
        found = {(f.ref(t.value), t.attr.value) for t, _, _ in f.assigns
                 if isinstance(t, cst.Attribute) and dotted(t.value)}
        return found | {(f.ref(c.args[0].value), string_value(c.args[1].value)) for c in f.calls
                        if mt.is_call_of(c, "setattr") and len(c.args) == 3 and dotted(c.args[0].value)}

    def module_api(self, name: str) -> bool:
        """Does the DDP wrapper itself answer `.name` (nn.Module's API and DDP's own)?"""
        return name in mt.MODULE_API or name in WRAPPER_API or name.startswith("__")


# nn.Module's public API beyond `matchers.MODULE_API`, and DistributedDataParallel's own attributes
WRAPPER_API = frozenset("""
    state_dict load_state_dict register_state_dict_pre_hook register_state_dict_post_hook
    register_load_state_dict_pre_hook register_load_state_dict_post_hook get_extra_state
    set_extra_state set_submodule call_super_init dump_patches T_destination
    broadcast_buffers gather scatter join_device join_process_group register_comm_hook to_kwargs
    will_sync_module_buffers output_device process_group dim device device_type
    find_unused_parameters gradient_as_bucket_view static_graph reducer logger bucket_bytes_cap
    require_backward_grad_sync require_forward_param_sync parameters_to_ignore mixed_precision
""".split())


def _assume_star_imports(f: Facts) -> None:
    """A script that star-imports its project's utilities (`from utils.torch_utils import *`)
    reaches `torch`, `dist` and `DDP` through them: the names of `STAR_NAMES` it uses and binds
    nowhere itself are taken to be what they conventionally are."""
    bound = f.imports.aliases.keys() | f.assigned_names.keys() | f.functions.keys() | f.classes.keys()
    used = {n.value for n in f.names}
    for name, qualified in STAR_NAMES.items():
        if name in used and name not in bound:
            f.imports.aliases[name] = qualified


def string_value(node: cst.CSTNode) -> str | None:
    return node.evaluated_value if isinstance(node, cst.SimpleString) else None


def _rank_word(node: cst.CSTNode) -> bool:
    """`rank`, `args.local_rank`, `dist.get_rank`, `is_main_process`, `master_process`: the last
    name says it is about the rank (`world_size` is not)."""
    name = dotted(node)
    return _rank_name(name.split(".")[-1].lower()) if name else False


@lru_cache(maxsize=4096)
def _rank_name(last: str) -> bool:
    return "rank" in last or MAIN_PROCESS_WORDS.fullmatch(last) is not None and last not in ("main", "root", "zero")


def _minus_one_or_none(node: cst.CSTNode) -> bool:
    return mt.is_name(node, "None") or isinstance(node, cst.UnaryOperation) and isinstance(
        node.operator, cst.Minus) and isinstance(node.expression, cst.Integer) and node.expression.value == "1"


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a and b and c` -> [a, b, c]."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def _conditional(f: Facts, stmt: cst.CSTNode, expr: cst.CSTNode) -> bool:
    """Does `stmt` run on some of the paths to `expr` only (an `if`, `try` or loop that `expr` is
    not in)?"""
    for anc in f.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            return False
        if isinstance(anc, (cst.If, cst.For, cst.While, cst.Try)) and not f.is_inside(expr, anc):
            return True
    return False
