"""Which statements run on a path where a model is wrapped for several processes.

A DDP program often has modes that never wrap: `--mode eval` loads a saved model and scores it,
while `--mode train` builds the wrapper. One run takes one of them:

    def evaluate(args):
        model = torch.load(args.eval_model)       # no run that gets here wraps a model
        ...

    def train(args):
        model = DDP(build(args), device_ids=[args.gpu])
        ...

    if args.mode == "eval":
        evaluate(args)
    elif args.mode == "train":
        train(args)

`on_a_wrapping_path(facts, node)` follows `node` up through the calls of its function to the top
level (each call site a place it runs from), and each wrap (`models.wrap_kind`: torch's, apex's,
accelerate's, a helper of the program that returns one; FSDP and DeepSpeed's engine too) up the
same way. A run that reaches `node` may wrap where the two chains meet in one function at two
places that one run may both take (not `Facts.apart`: not the two branches of one `if`, outside a
loop). A call in the main block of a module the program imports runs nowhere here. Where a chain cannot be followed to the top level (a function with no call in the program,
one handed on by name to `mp.spawn`, a method reached through an object, too many calls up), the
answer is yes: nothing is claimed of code whose callers are not all known.
"""

from __future__ import annotations

import libcst as cst

from ddpify.analysis.distributed import runs_nowhere
from ddpify.analysis.models import wrap_kind
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts

# wrappers of the model for several processes that `wrap_kind` does not name
OTHER_WRAPS = frozenset({"torch.distributed.fsdp.FullyShardedDataParallel", "deepspeed.initialize",
                         "torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard"})
DEPTH = 4


def on_a_wrapping_path(facts: Facts, node: cst.CSTNode) -> bool:
    """May a run that reaches `node` also wrap a model (before or after it)? No only where the
    program wraps somewhere, every wrap's callers and `node`'s are known up to the top level, and
    at every function where they meet the two places sit in two branches one run never both takes."""
    wraps = _wraps(facts)
    if not wraps:
        return True  # no wrap known: not a question this can answer
    mine = _places(facts, node)
    if mine is None:
        return True
    for wrap in wraps:
        theirs = _places(facts, wrap)
        if theirs is None:
            return True
        for scope, here in mine:
            for other_scope, there in theirs:
                if scope is other_scope and not facts.apart(here, there):
                    return True
    return False


def _wraps(facts: Facts) -> list[cst.Call]:
    """The wraps of the program, but those in functions nothing that runs calls (`runs_nowhere`: an
    imported module's `main`, run only by that module's own main block)."""
    return [c for c in facts.calls if (wrap_kind(facts, c) is not None or facts.qualify(c.func) in OTHER_WRAPS)
            and not runs_nowhere(facts, c)]


def _places(facts: Facts, node: cst.CSTNode) -> list[tuple[cst.CSTNode, cst.CSTNode]] | None:
    """(function or module, the node or the call in it that leads to `node`) for every function a
    run passes through to reach `node`, from `node`'s own up to the top level; None where some
    function on the way has callers not all known (`DEPTH` calls up at most)."""
    places: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    todo = [(node, 0)]
    seen: set[cst.CSTNode] = set()
    while todo:
        at, depth = todo.pop()
        scope = facts.scope(at)
        places.append((scope, at))
        if isinstance(scope, cst.Module):
            continue
        if not isinstance(scope, cst.FunctionDef) or depth >= DEPTH or scope.decorators \
                or facts.enclosing_class(scope) is not None or _named_elsewhere(facts, scope):
            return None
        if scope in seen:
            continue
        seen.add(scope)
        sites = facts.entries(scope)
        if not sites:
            return None
        todo.extend((site, depth + 1) for site in sites if not _in_an_imported_main_block(facts, site))
    return places


def _in_an_imported_main_block(facts: Facts, node: cst.CSTNode) -> bool:
    """Is `node` in the `if __name__ == "__main__":` block of a module the program imports: code
    that runs only when that module is the script, never in this program?"""
    return facts.in_library(node) and any(isinstance(a, cst.If) and mt.is_main_guard(a) and isinstance(
        facts.parent(a), cst.Module) for a in facts.ancestors(node))


def _named_elsewhere(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` named other than as the function of a call or by its own definition (`mp.spawn(run,
    ...)`, `Thread(target=run)`, a dict of handlers): run from places no call site shows?"""
    own = facts.ref(func.name)
    for name in facts.names_spelled(func.name.value):
        parent = facts.parent(name)
        if name is func.name or isinstance(parent, cst.Call) and parent.func is name \
                or isinstance(parent, cst.Attribute) and parent.attr is name \
                or isinstance(parent, cst.Arg) and parent.keyword is name or isinstance(parent, cst.Param) \
                or any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in facts.ancestors(name)):
            continue  # a call; `x.run`; `run=` or a parameter so named; a module `from train import ...`
        if own is not None and facts.ref(name) != own:
            continue  # another variable spelled the same
        return True
    return False
