"""agree-stop: leave a training loop in the same iteration on every process.

    while loss_ema > args.tol:
        loss = criterion(model(x), y)
        loss.backward()
        ...
        if loss.item() < args.target or step >= args.max_steps:
            break
        if step == args.max_steps:
            return step
->
    while agree_on(loss_ema > args.tol):
        loss = criterion(model(x), y)
        loss.backward()
        ...
        if agree_on(loss.item() < args.target or step >= args.max_steps):
            break
        if step == args.max_steps:
            return step

Every backward through a wrapped model is a collective: all processes must run the same
number of them. A loop exit decided from numbers each process computed on its own shard (a
loss target, early stopping, a NaN check) can differ between processes; the one that keeps
training then waits forever in its next all-reduce. `agree_on` (runtime) broadcasts the main
process's decision, so all leave together.

What is agreed, in every loop that trains (its body, or a function it calls, runs
`.backward()`; epoch loops and batch loops over sharded loaders included) when a model is
wrapped, and in every loop that runs, with gradients on, the forward of a wrapped model that
may hold buffers (BatchNorm statistics: DDP broadcasts them from rank 0 in such a forward, so
an agent's greedy test episodes, `act()` outside `torch.no_grad()`, reach a collective too;
`ddpify.analysis.buffers`): the test of a `while`, and every `if` between the loop and a `break` that leaves it, a
`continue` that skips the rest of an iteration (`if torch.isnan(loss): continue` before the
backward), or a `return` from inside it. An early `return` of a function that trains, before
its backward (`if len(self.memory) < self.batch_size: return` in an agent's `train()`), is agreed
too, with `agree_any` (all return while any one would: none samples a memory it lacks, and every
process runs the same backwards). Conditions that read only values all processes share
are left as they are (`ddpify.analysis.same_values`, its core): arguments, loop and step counters, literals,
`len()` of a loader or data set, as in `if args.dry_run:` or `if step >= args.max_steps:`.

The end of an episode is agreed the other way round. A test that reads what an environment's
`step(action)` returned (`state, reward, done, _ = env.step(action)`, or a name set from those) is
a fact of each process's own environment, which a real gym seeds from the OS: following the main
process's `done`, another process would step its environment past the end of its episode (gym
warns; the transitions it stores are not the game's). All leave when the first one's has ended
(`while not done:` becomes `while agree_all(not done):`, going on while none has):

    state, reward, done, _ = env.step(action)
    if done:
        break
->
    state, reward, done, _ = env.step(action)
    if agree_any(done):
        break

With `--strategy fsdp` a forward and a full state dict are collectives too (FSDP2 gathers the
shards), so every `if` around one, in any loop or none, is agreed unless its test reads only
values all processes share:

    if val_loss < best_val_loss:
        torch.save(model.state_dict(), "best.pt")
->
    if agree_on(val_loss < best_val_loss):
        torch.save(model.state_dict(), "best.pt")

A `try` around training (its body trains, here or in a function it calls) whose handler catches
every error and goes on (a bare `except:`, `except Exception:` or `except BaseException:` that
never raises) cannot be agreed: an error on one process (its own crash, the runtime's self-check,
a collective that timed out) is swallowed there while the others wait in their next collective.
It is named with a warning at the handler:

    try:
        train(model, loader)
    except Exception as e:  # warning: re-raise it when get_world_size() > 1
        logger.error(e)

Not agreed: `except StopIteration: break` after `next(it)` on a loader. The sharded loaders
give every process the same number of batches (DistributedSampler pads the last shard), so
all processes run out in the same iteration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

import libcst as cst

from ddpify.output import build
from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted
from ddpify.analysis import fsdp
from ddpify.analysis.buffers import may_hold_buffers
from ddpify.analysis.models import holds_wrapper
from ddpify.analysis.objects import of
from ddpify.analysis.same_values import same_everywhere
from ddpify.rewrites.wrap_model import wrapped_refs

if TYPE_CHECKING:
    from ddpify.analysis.models import Model
    from ddpify.analysis.result import Analysis
    from ddpify.analysis.loaders import Loaders
    from ddpify.syntax.facts import Facts, Ref
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "agree-stop"
SUMMARY = "make data-dependent loop exits the same on every process (agree_on)"

MESSAGE = "loop exit agreed across processes (agree_on): all leave in the same iteration"
SWALLOWED = ("this handler catches every error of the training in its `try` and goes on: under several processes an "
             "error on one (its crash, the runtime's self-check, a collective's) is swallowed here while the others "
             "wait in their next collective until its timeout: re-raise it (`raise`) when get_world_size() > 1")
_BROAD = frozenset({"Exception", "BaseException", "builtins.Exception", "builtins.BaseException"})
BRANCH = "condition agreed across processes (agree_on): under FSDP2 the forward or state dict in it is a collective"
GUARD = ("condition agreed across processes ({agree}): it returns before the training step below, and each process "
         "tests its own values (a replay memory's length, a counter): all skip the step while any one would, so every "
         "process runs the same backwards, and none trains on what it lacks")
EPISODE = ("the end of an episode agreed across processes ({agree}): each process steps its own environment, whose "
           "episodes may end at other steps (seeded from the OS): all leave when the first one's has ended, and none "
           "steps an environment past its end")


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    if not analysis.models.wrapped:
        return  # no DDP, no collective to wait in
    loops = _training_loops(facts, analysis.loaders) | _broadcasting_loops(facts, wrapped_refs(analysis, options))
    tests = [lp.test for lp in facts.loops if lp in loops and isinstance(lp, cst.While)]
    exits: list[cst.Break | cst.Continue | cst.Return] = [*facts.breaks, *facts.continues, *facts.returns]
    leaving: dict[cst.BaseExpression, set[bool | None]] = {}  # an `if` test: does its truth lead to a break or return?
    for exit_ in exits:
        left = _loop_left(facts, exit_, loops)
        if left is not None:
            ifs = [anc for anc in _between(facts, exit_, left) if isinstance(anc, cst.If)]
            tests += [anc.test for anc in ifs]
            for anc in ifs:
                leaving.setdefault(anc.test, set()).add(
                    facts.is_inside(exit_, anc.body) if not isinstance(exit_, cst.Continue) else None)
    guards: dict[cst.BaseExpression, set[bool]] = {}  # an `if` of a training function's early return before its backward: does its truth return?
    for exit_ in facts.returns:
        for anc in _guarding(facts, exit_):
            guards.setdefault(anc.test, set()).add(facts.is_inside(exit_, anc.body))
    tests += [t for t in guards if t not in tests]
    branches = []
    for call in fsdp.collectives(facts, analysis.models, wrapped_refs(analysis, options)) if options.fsdp else ():
        branches += [a.test for a in facts.ancestors(call) if isinstance(a, cst.If) and a.test not in tests
                     and not facts.is_inside(call, a.test) and facts.scope(a) is facts.scope(call)]
    for handler in _swallowing(facts):
        edits.warn(handler, SWALLOWED)
    while_tests = {lp.test for lp in facts.loops if isinstance(lp, cst.While)}
    for test in dict.fromkeys(tests):  # an `if` above two exits is agreed once
        if same_everywhere(facts, test):
            continue
        if test in guards and test not in leaving:
            agree = "agree_any" if guards[test] == {True} else "agree_all" if guards[test] == {False} else "agree_on"
            message = GUARD.format(agree=agree)
        else:
            agree = _agreement(facts, test, test in while_tests, leaving.get(test, {None}))
            message = MESSAGE if agree == "agree_on" else EPISODE.format(agree=agree)
        edits.replace(test, _agreed(agree), message)
        edits.add_import("ddpify_runtime", agree)
    for test in dict.fromkeys(branches):
        if not same_everywhere(facts, test):
            edits.replace(test, lambda node: build.call("agree_on", node), BRANCH)
            edits.add_import("ddpify_runtime", "agree_on")


def _agreed(agree: str) -> Callable[[cst.BaseExpression], cst.BaseExpression]:
    """The edit that puts a test inside `agree(...)`."""
    return lambda node: build.call(agree, node)


def _agreement(facts: Facts, test: cst.BaseExpression, kept_while: bool, leaves: set[bool | None]) -> str:
    """How a test is agreed: `agree_on` (the main process's truth), but for the end of an episode
    (`_ends_episode`): `agree_any` where its truth leaves the loop (`if done: break`), `agree_all`
    where its truth keeps the loop going (`while not done:`, `if alive: ... else: break`)."""
    if not _ends_episode(facts, test):
        return "agree_on"
    if kept_while or leaves == {False}:
        return "agree_all"
    return "agree_any" if leaves == {True} else "agree_on"


def _ends_episode(facts: Facts, test: cst.BaseExpression, depth: int = 2) -> bool:
    """Does `test` read what an environment's `step(action)` returned (`next_state, reward, done, _ =
    env.step(action)`, also through a name set from such values, `done = terminated or truncated`)?
    Each process steps its own environment, which may end its episode at another step. Not an
    optimizer's `step()` (`Facts.steps_an_optimizer`), nor a `step()` given no argument."""
    for name in facts.variables_in(test):
        ref = facts.ref(name)
        if ref is None:
            continue
        for value in (*facts.sources(ref), *facts.unpacked_from(ref)):
            if any(mt.is_method_call(c, "step") and c.args and not facts.steps_an_optimizer(c)
                   for c in [*mt.walk(value)] if isinstance(c, cst.Call)):
                return True
            if depth and not isinstance(value, cst.Call) and _ends_episode(facts, value, depth - 1):
                return True
    return False


def _guarding(facts: Facts, ret: cst.Return) -> list[cst.If]:
    """The `if`s around a `return` of a function, outside any loop of it, whose statement in the
    function's body comes before a backward there (or in a function it calls): a guard that skips
    the training step (`if len(self.memory) < self.batch_size: return` in a DQN agent's `train()`).
    Empty for any other return."""
    func = facts.scope(ret)
    if not isinstance(func, cst.FunctionDef) or next(facts.enclosing_loops(ret), None) is not None \
            or not isinstance(func.body, cst.IndentedBlock):
        return []
    ifs = [anc for anc in _between(facts, ret, func) if isinstance(anc, cst.If)]
    body = list(func.body.body)
    top = next((i for i, stmt in enumerate(body) if ifs and stmt is ifs[-1]), None)
    if top is None or not any(facts.trains(stmt) for stmt in body[top + 1:]):
        return []
    return ifs


def _swallowing(facts: Facts) -> list[cst.ExceptHandler]:
    """The handlers that catch every error of a `try` whose body trains (`.backward()` there or in a
    function it calls) and never raise: `except:`, `except Exception as e:`, `except (ValueError,
    BaseException):`."""
    found = []
    for stmt in facts.findall(facts.module, cst.Try):
        broad = [h for h in stmt.handlers if _catches_everything(facts, h) and not facts.findall(h.body, cst.Raise)]
        if broad and facts.trains(stmt.body):
            found += broad
    return found


def _catches_everything(facts: Facts, handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    caught = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((facts.qualify(c) or "") in _BROAD or isinstance(c, cst.Name) and c.value in _BROAD for c in caught)


def _training_loops(facts: Facts, loaders: Loaders) -> set[cst.For | cst.While]:
    """Loops whose iterations run a backward: found by `trains`, or driving a sharded loader of
    `loaders` (also when the backward sits behind a call `trains` cannot follow)."""
    loops = {lp for lp in facts.loops if facts.trains(lp)}
    return loops | {entry.loop for entry in loaders.epoch_loops} | set(loaders.sharded_loops)


def _broadcasting_loops(facts: Facts, refs: dict[Ref, Model]) -> set[cst.For | cst.While]:
    """Loops whose iterations run, with gradients on, the forward of a wrapped model that may hold
    buffers (BatchNorm statistics): DDP broadcasts them from rank 0 in such a forward, a collective,
    also where nothing trains (a greedy test episode of an agent, `mu = self.actor(state)` in its
    `act()`, outside `torch.no_grad()`). Before, only loops that train were agreed: the test
    episodes' `if done: break` stayed each process's own, and a process whose episode ran longer
    waited in a broadcast the others never made."""
    return {lp for lp in facts.loops if _broadcasts(facts, lp, refs, 3, {})}


def _broadcasts(facts: Facts, node: cst.CSTNode, refs: dict[Ref, Model], depth: int,
                seen: dict[cst.CSTNode, bool]) -> bool:
    """Does running `node` (a loop, or a function of the program it calls, `depth` calls deep) call
    the forward of a wrapped model that may hold buffers with gradients on?"""
    if node in seen:
        return seen[node]
    seen[node] = False  # a recursive call adds nothing
    found = False
    for call in facts.calls_in(node):
        if facts.grad_disabled(call):
            continue
        if dotted(call.func) and holds_wrapper(facts, refs, call.func) is not None \
                and may_hold_buffers(facts, [v for v in of(facts).values(call.func) if isinstance(v, cst.Call)]):
            found = True
        elif depth and any(_broadcasts(facts, f, refs, depth - 1, seen) for f in facts.user_functions(call)):
            found = True
        if found:
            break
    seen[node] = found
    return found


def _loop_left(facts: Facts, exit_: cst.Break | cst.Continue | cst.Return, loops: set[cst.For | cst.While]
               ) -> cst.For | cst.While | None:
    """The training loop an exit leaves: a `break` its own loop (a `continue` skips the rest of
    its iteration, and the backward in it), a `return` the outermost loop of its function around it."""
    left = None
    for loop in facts.enclosing_loops(exit_):
        if isinstance(exit_, (cst.Break, cst.Continue)):
            return loop if loop in loops else None
        if loop in loops:
            left = loop
    return left


def _between(facts: Facts, node: cst.CSTNode, loop: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes from `node` up to, not including, `loop`."""
    for anc in facts.ancestors(node):
        if anc is loop:
            return
        yield anc
