"""Code that never runs: what `ddpify check` does not report.

Seven shapes. Code after a `raise` or `return` of its own block (a method left unfinished,
`raise NotImplementedError` above the code it will run), or after a bare name nothing binds (a
tripwire, `never_tested  # sync the weights first`: NameError), runs on no process:

    def forward(self):
        raise NotImplementedError
        pkg = torch.load(path)                # never runs

Code under an `if` whose test literals make false whatever runs (a branch turned off by hand, `if
False and epoch % 2 == 0:`, `if 0:`), or in the `else` of one they make true, runs on no process.

Code under an `if` whose test reads a name its function binds only later raises before either
branch runs (`if rank == 0:` above `rank = 0`: UnboundLocalError):

    if rank == 0:
        torch.save(model.state_dict(), path)  # never runs
    ...
    rank = 0

Code under `if flag:` where every assignment of `flag` is `False` (a mode left over
from debugging, `extract_boxes = False` and never set again) runs on no process:

    extract_boxes = False
    if extract_boxes:
        cv2.imwrite(f"crop_{i}.png", image)   # never runs

unless an `if flag:` of that flag starts the process group: then the flag is the script's
distributed mode, a setting its user edits to run it distributed (`distributed = False`, "set True
and launch with torchrun"), and the code under it is the distributed path `check` reads.

Code under `if x is None:` (or the `else` of `if x is not None:`) where everything `x` may
hold is an instance the program's classes build (a factory that builds one evaluator or
another and exits otherwise) runs on no process:

    def build(args):
        if args.dataset == "voc":
            evaluator = VOCEvaluator(args)
        else:
            evaluator = COCOEvaluator(args)
        return evaluator

    evaluator = build(args)
    if evaluator is None:
        torch.save(model.state_dict(), path)  # never runs

And a helper's branch that compares a parameter with a constant runs only for the calls that pass a
value making the test true. When every call of the function in the program passes a constant (or
leaves out the parameter, whose default is a constant) that makes the test false, the branch never
runs, nor does a function called only from such a branch:

    def synthesis(model, text, backend="torch"):
        if backend == "torch":
            return run_torch(model, text)
        elif backend == "tflite":
            return run_tflite(model, text)   # never runs: no call passes backend="tflite"

    synthesis(ddp_model, text)               # the program's only call

A command-line option argparse converts with `type=Path` is a path, which equals no string: a call
that passes one (`Indexed(args.data)`, `--data` given `type=Path`) takes no branch of `if name ==
"cifar10":`.

And a function of the checked script whose name says it is the script's own (`_create_data_loader`:
one leading underscore; the file has an `if __name__ == "__main__":` block) that no code of the program
names but its own definition (every call of it commented out) runs on no process
(`ddpify.analysis.distributed.never_called_in_its_script`):

    def _create_data_loader(args):
        sampler = DistributedSampler(dataset)  # never runs
        ...
    # loader = _create_data_loader(args)

Conservative: a method (reached through its class in ways no call site shows: by reference,
by dispatch, `model(x)` running `forward`), a function with no call in the program (called from
outside it, or only by reference), a function also named other than in a call (`mp.spawn(run,
args=(world_size,))` beside `run(0, 1)`), a call with a `*` or `**` argument, a parameter the
function assigns, or a test that is not one parameter compared with constants (`==`, `!=`, `<`,
`<=`, `>`, `>=`, `is`, `is not`, `in`, `not in`; `ddpify.analysis.call_branches`) keeps every
branch.
"""

from __future__ import annotations

import builtins

import libcst as cst

from ddpify.analysis.call_branches import left_out, literal_truth
from ddpify.analysis.distributed import never_called_in_its_script
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, param_names


def never_runs(facts: Facts, node: cst.CSTNode, depth: int = 3) -> bool:
    """Is `node` after a `raise` or `return` of its own block, under a flag that is only ever
    False, or in a branch (of its function, or of a function calling it, `depth` calls up) that no
    call in the program takes?"""
    if _under_false_flag(facts, node) or _after_an_exit(facts, node) or _under_a_none_test_of_an_instance(facts, node) \
            or _in_a_branch_literals_leave_out(facts, node) or _under_a_test_that_reads_an_unbound_name(facts, node) \
            or never_called_in_its_script(facts, node):
        return True
    func = facts.scope(node)
    if depth <= 0 or not isinstance(func, cst.FunctionDef) or facts.enclosing_class(func) is not None:
        return False
    sites = facts.entries(func)
    if not sites or any(any(a.star for a in site.args) for site in sites) or _passed_by_name(facts, func):
        return False
    return all(left_out(facts, node, func, site) or never_runs(facts, site, depth - 1) for site in sites)


def _passed_by_name(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` named other than as the function of a call (`mp.spawn(run, ...)`, `Thread(target=
    run)`): run from there with arguments no call site shows?"""
    name = func.name.value
    return any(n is not func.name and not (isinstance(parent := facts.parent(n), cst.Call) and parent.func is n)
               for n in facts.references(facts.module, name))


def _after_an_exit(facts: Facts, node: cst.CSTNode) -> bool:
    """Does a statement before `node`'s, in a block around it in its function, leave that block
    whatever happens (`raise NotImplementedError`, `return`)?"""
    child = node
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.IndentedBlock):
            for stmt in anc.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.SimpleStatementLine) and any(
                        isinstance(s, (cst.Raise, cst.Return)) or _name_error(facts, s) for s in stmt.body):
                    return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return False
        child = anc
    return False


def _name_error(facts: Facts, stmt: cst.BaseSmallStatement) -> bool:
    """A statement that is a bare name nothing binds (`never_tested1  # must sync weights first`,
    a tripwire left in a branch): no builtin, no name the program spells anywhere else (no
    assignment, parameter, import, function, class nor attribute of that name) and no `from X
    import *` that could bring it: it raises NameError whenever it runs. Before, only `raise` and
    `return` ended a block, and the loads under such a tripwire were each a DDP014
    (balewski/srgan_cosmo2d, set 27; decision 0229)."""
    if not isinstance(stmt, cst.Expr) or not isinstance(stmt.value, cst.Name):
        return False
    name = stmt.value.value
    if name in dir(builtins) or facts.imports.stars or facts.own_imports.stars:
        return False
    return all(n is stmt.value for n in facts.by_type.get(cst.Name, ()) if isinstance(n, cst.Name) and n.value == name)


def _in_a_branch_literals_leave_out(facts: Facts, node: cst.CSTNode) -> bool:
    """In the body of an `if` whose test literals make false (`if False and epoch % 2 == 0:`, `if 0:`),
    or in the `else` of one they make true?"""
    child = node
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.If) and child is not anc.test:
            truth = literal_truth(anc.test)
            if truth is not None and truth is not (child is anc.body):
                return True
        child = anc
    return False


def _under_a_test_that_reads_an_unbound_name(facts: Facts, node: cst.CSTNode) -> bool:
    """Under an `if` (outside loops) of its function whose test reads a name of the function before
    any statement binds it there (`if rank == 0:` where `rank = 0` comes later): the test raises
    UnboundLocalError, and neither branch runs."""
    func = facts.scope(node)
    if not isinstance(func, cst.FunctionDef):
        return False
    for anc in facts.ancestors(node):
        if anc is func or isinstance(anc, (cst.For, cst.While)):
            return False
        if isinstance(anc, cst.If) and not facts.is_inside(node, anc.test) and any(
                _read_unbound(facts, func, name) for name in facts.variables_in(anc.test)):
            return True
    return False


def _read_unbound(facts: Facts, func: cst.FunctionDef, name: cst.Name) -> bool:
    """Is `name` a variable `func` binds (not a parameter, not declared global), met in `func`
    (its own scope) for the first time here?"""
    ref = facts.ref(name)
    if ref is None or ref.scope is not func or name.value in param_names(func):
        return False
    first = next((n for n in facts.references(func, name.value) if facts.scope(n) is func), None)
    return first is name and bool(facts.writes(ref) or facts.loops_binding(ref))


def _under_a_none_test_of_an_instance(facts: Facts, node: cst.CSTNode) -> bool:
    """Under `if x is None:` (the `else` of `if x is not None:`) of its function where every value
    `x` may hold (`Facts.origins`) is an instance built by a class of the program?"""
    child = node
    for anc in facts.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(anc, cst.If) and child is not anc.test and isinstance(anc.test, cst.Comparison) \
                and len(anc.test.comparisons) == 1 and mt.is_name(anc.test.comparisons[0].comparator, "None"):
            op = anc.test.comparisons[0].operator
            taken = isinstance(op, cst.Is) and child is anc.body or isinstance(op, cst.IsNot) and child is not anc.body
            origins = facts.origins(anc.test.left) if isinstance(anc.test.left, (cst.Name, cst.Attribute)) else []
            if taken and origins and all(isinstance(o, cst.Call) and facts.builds(o) for o in origins):
                return True
        child = anc
    return False


def _under_false_flag(facts: Facts, node: cst.CSTNode) -> bool:
    """Under `if flag:` of its function (or of the module) where every assignment of `flag` is
    `False`, and no `if flag:` starts the process group (then the flag is the script's distributed
    mode, which its user sets to run it distributed)."""
    for anc in facts.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            return False
        if isinstance(anc, cst.If) and isinstance(anc.test, cst.Name) and facts.is_inside(node, anc.body):
            ref = facts.ref(anc.test)
            sources = facts.sources(ref) if ref is not None else []
            if sources and all(mt.is_name(s, "False") for s in sources) and not _starts_the_group(facts, sources):
                return True
    return False


def _starts_the_group(facts: Facts, sources: list[cst.BaseExpression]) -> bool:
    """Does an `if flag:` whose flag has these assignments start the process group
    (`distributed = False` ... `if distributed: dist.init_process_group("nccl")`)?"""
    for call in facts.calls:
        if facts.qualify(call.func) != "torch.distributed.init_process_group":
            continue
        for anc in facts.ancestors(call):
            if isinstance(anc, cst.If) and isinstance(anc.test, cst.Name) and facts.is_inside(call, anc.body) \
                    and (ref := facts.ref(anc.test)) is not None \
                    and [id(s) for s in facts.sources(ref)] == [id(s) for s in sources]:
                return True
    return False
