"""Training loops that batch their data by hand, and which of them shard-data deals out to the processes.

    for i in range(0, len(X), bs):                  # a stride through the data
        xb, yb = X[i:i + bs], y[i:i + bs]
    for b in range(n_batches):                      # batch numbers
        idx = perm[b * bs:(b + 1) * bs]
    for xb, yb in zip(X.split(bs), y.split(bs)):    # splits: torch.split, .chunk, np.array_split

`Dealt`: such a loop that trains (a backward in reach, `Facts.trains`), where the data would be
sharded at all (a model wrapped: `loaders.find`), batched in one of two shapes the analysis can
read whole:
- a `range(...)` (under `enumerate`/`tqdm` maybe) whose variable bounds a window `[a:b]` sliced in
  the loop's body, no `%` in that bound (`data[(step * bs) % n:...]` counts steps round the data: a number of steps
  the program chose, which dealing would divide by the processes);
- splits of tensors or arrays, one or a zip of them (`X.split(bs)`, `torch.chunk(X, k)`,
  `np.array_split(X, k)`), the split's size no string (`line.split(",")`).
shard-data passes the range or the splits through `shard_batches` (runtime): each process takes its
part, all the same number of batches. Left whole with shard-data's TODO (`Hand.whole`, the reason):
- a loop that carries a value from one batch to the next (`output, hidden = model(x, hidden)`,
  truncated backpropagation through time over one long sequence: dealt out, each process's hidden
  state would skip world_size - 1 chunks; an accumulator `total = total + loss` carries nothing);
- a loop whose body draws the batch's indices at random itself (`idx = torch.randint(...)`):
  every process would draw the same ones, now in 1/world_size of the steps;
- a loop whose variable bounds no window in its body (`step(i)`, a function slices; `values[:epoch]`);
- a loop whose body leaves it or skips a step (`break`, `continue`, `return`): decided on each
  process's own batches (`if b * bs > limit: break`, `if len(xb) < bs: continue`), the processes
  would take different numbers of steps, and one would wait in DDP's all-reduce for the others;
- one of two such loops nested in each other.
A random draw before the loop, in the body of the loop around it (an epoch's) or of its function
where a loop calls that function (`perm = torch.randperm(n)`, `np.random.shuffle(idx)`, in a
function it calls too): `agree_at`, the first statement that draws, before which every process
takes the main process's random state (`agree_random_state()`), so that the permutation is the same
everywhere and the parts disjoint (dropout over batches of different sizes, the last one, leaves
the processes' states apart after a pass). A body that runs once (the module's top level, `main()`)
needs none: every process has the main process's state from `init_distributed_mode()` on.

Batches drawn at random offsets into the data, in a loop that trains with no DataLoader
(`random_offset_draws`: nanoGPT's `X, Y = get_batch("train")`, whose function draws `ix =
torch.randint(len(data) - block, (batch_size,))`, or such a draw in the loop's own body): no loop
of batches to deal; shard-data runs each such statement on the process's own random stream
(`own_random_stream()`), so every process trains on a batch of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts, target_names
from ddpify.syntax.names import dotted

PEELED = ("enumerate", "tqdm", "track")  # what may wrap the batches in the loop's header
SPLITS = {"torch.split", "torch.chunk", "torch.tensor_split", "numpy.array_split", "numpy.split"}
SPLIT_METHODS = ("split", "chunk", "tensor_split")
# draws of indices in the loop's own body: a batch drawn at random, which every process would draw alike
INDEX_DRAWS = {"torch.randperm", "torch.randint", "torch.multinomial", "numpy.random.choice", "numpy.random.randint",
               "numpy.random.permutation", "numpy.random.shuffle", "random.sample", "random.choice",
               "random.choices", "random.randint", "random.randrange", "random.shuffle"}
RANDOM_MODULES = ("torch.rand", "torch.multinomial", "torch.normal", "torch.bernoulli", "numpy.random.", "random.",
                  "sklearn.utils.shuffle")


@dataclass
class Dealt:
    loop: cst.For
    batches: cst.BaseExpression  # the `range(...)` or splits to pass through shard_batches
    agree_at: cst.BaseStatement | None = None  # the statement before which the random state is agreed


@dataclass
class Hand:
    dealt: list[Dealt] = field(default_factory=list)
    whole: dict[cst.For, str] = field(default_factory=dict)  # sliced by hand, left whole: why


def find(facts: Facts, sliced: list[cst.For], drawing: set, deals: bool) -> Hand:
    """`sliced`: the loops `loaders._slices_by_hand` found (range strides); with them the loops
    over splits that train and draw from no loader. `deals`: the training data is sharded at all."""
    candidates = {lp: batches for lp in sliced if (batches := _range_of(lp)) is not None}
    for lp in facts.loops:
        if isinstance(lp, cst.For) and lp not in drawing and lp not in candidates \
                and (batches := _splits_of(facts, lp)) is not None and facts.trains(lp):
            candidates[lp] = batches
    found = Hand()
    for lp in sliced:
        if lp not in candidates:
            found.whole[lp] = "its batches are not a `range(...)` of its own"
    for lp, batches in sorted(candidates.items(), key=lambda item: facts.spans[item[0]][0]):
        why = _why_whole(facts, lp, batches, candidates)
        if why is None and deals:
            found.dealt.append(Dealt(lp, batches, _agree_at(facts, lp)))
        elif lp in sliced:
            found.whole[lp] = why or ""
    return found


def _peel(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Call) and (dotted(expr.func) or "").split(".")[-1] in PEELED:
        inner = mt.first_iterated(expr)
        if inner is None:
            break
        expr = inner
    return expr


def _range_of(loop: cst.For) -> cst.Call | None:
    batches = _peel(loop.iter)
    return batches if isinstance(batches, cst.Call) and mt.is_name(batches.func, "range") and batches.args else None


def _splits_of(facts: Facts, loop: cst.For) -> cst.Call | None:
    batches = _peel(loop.iter)
    if not isinstance(batches, cst.Call):
        return None
    if mt.is_name(batches.func, "zip"):
        ok = bool(batches.args) and all(a.keyword is None and not a.star and _is_split(facts, a.value)
                                        for a in batches.args)
    else:
        ok = _is_split(facts, batches)
    return batches if ok else None


def _is_split(facts: Facts, expr: cst.BaseExpression) -> bool:
    """`X.split(bs)`, `X.chunk(k)`, `torch.split(X, bs)`, `np.array_split(X, k)`; no string's split."""
    if not isinstance(expr, cst.Call) or not expr.args:
        return False
    if facts.qualify(expr.func) in SPLITS:
        return len(expr.args) >= 2
    strings = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)
    return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SPLIT_METHODS \
        and not isinstance(expr.func.value, strings) and not any(isinstance(a.value, strings) for a in expr.args)


def _why_whole(facts: Facts, loop: cst.For, batches: cst.Call, candidates: dict) -> str | None:
    """Why `loop` stays whole (None: it is dealt)."""
    if mt.is_call_of(batches, "range"):
        names = [n.value for n in target_names(loop.target)]
        bounds = [b for n in names for s in windows(facts, loop.body, n) for b in (s.lower, s.upper) if b is not None]
        if not bounds:
            return "its variable bounds no window `[a:b]` sliced in its body (a function it calls may slice)"
        if any(facts.findall(b, cst.BinaryOperation, lambda o: isinstance(o.operator, cst.Modulo)) for b in bounds):
            return "its slices count round the data (`%`): a number of steps the program chose"
    if any(o is not loop and (facts.is_inside(o, loop) or facts.is_inside(loop, o)) for o in candidates):
        return "it is nested with another loop that batches by hand"
    if any(facts.qualify(c.func) in INDEX_DRAWS for c in facts.calls_in(loop.body)):
        return "its body draws indices at random, which every process would draw alike"
    if _leaves_early(facts, loop):
        return "its body leaves it or skips a step (`break`, `continue`, `return`), which the processes, each on " \
            "batches of its own, would decide apart"
    carried = _carried(facts, loop)
    if carried:
        return f"it carries `{carried}` from one batch to the next, which dealt out would skip batches"
    return None


def _leaves_early(facts: Facts, loop: cst.For) -> bool:
    """Does `loop`'s body break out of it, skip to its next round or return (not a loop within it)?"""
    for node in facts.findall(loop.body, (cst.Break, cst.Continue, cst.Return)):
        if facts.scope(node) is facts.scope(loop) and (isinstance(node, cst.Return) or
                                                       next(facts.enclosing_loops(node), None) is loop):
            return True
    return False


def windows(facts: Facts, body: cst.CSTNode, name: str) -> list[cst.Slice]:
    """The slices in `body` with both bounds, one of them reading `name`: `X[i:i + bs]`, `perm[b * bs:(b + 1)
    * bs]` (not `values[:epoch]`, an epoch loop's list of metrics)."""
    return facts.findall(body, cst.Slice, lambda s: s.lower is not None and s.upper is not None and any(
        facts.references(b, name) for b in (s.lower, s.upper)))


def _carried(facts: Facts, loop: cst.For) -> str | None:
    """A name the loop's body assigns and reads before its first assignment there (in the order of
    the source), or in that assignment's own value (`output, hidden = model(x, hidden)`): a value
    one batch hands the next; not an accumulator (`total = total + loss.item()`, any augmented
    assignment), nor a name written before it is read (`d_gene = critic(fake)` in an inner loop,
    again after it)."""
    first: dict[str, tuple[cst.Name, cst.Assign]] = {}
    written: set[cst.Name] = set()
    for assign in facts.findall(loop.body, cst.Assign):
        for target in assign.targets:
            for node in target_names(target.target):
                written.add(node)
                if node.value not in first or facts.before(node, first[node.value][0]):
                    first[node.value] = (node, assign)
    for name, (target, assign) in sorted(first.items()):
        if _accumulates(assign, name):
            continue
        if facts.references(assign.value, name) or any(
                r not in written and facts.before(r, target) for r in facts.references(loop.body, name)):
            return name
    return None


def _accumulates(assign: cst.Assign, name: str) -> bool:
    value = assign.value
    return len(assign.targets) == 1 and mt.is_name(assign.targets[0].target, name) and \
        isinstance(value, cst.BinaryOperation) and mt.is_name(value.left, name)


def _agree_at(facts: Facts, loop: cst.For) -> cst.BaseStatement | None:
    """The first statement that draws random numbers (here or in a function of the program it
    calls) before `loop` in the body of the loop around it, or of its function where a loop runs
    that function (`train_epoch()` called at each epoch); None where none draws, or where the body
    runs once (the module's top level, `main()`): there every process has the main process's state
    from `init_distributed_mode()` on."""
    block = next(facts.enclosing_loops(loop), None) or facts.scope(loop)
    if isinstance(block, cst.FunctionDef) and not any(next(facts.enclosing_loops(site), None) is not None
                                                      for site in facts.call_sites(block)):
        return None
    if not isinstance(block, (cst.For, cst.While, cst.FunctionDef)) or not isinstance(block.body, cst.IndentedBlock):
        return None
    for stmt in block.body.body:
        if stmt is loop or facts.is_inside(loop, stmt):
            return None
        if _draws(facts, stmt, 2):
            return stmt
    return None


def _draws(facts: Facts, node: cst.CSTNode, depth: int) -> bool:
    """Does running `node` draw random numbers, here or in a function of the program it calls?"""
    for call in facts.calls_in(node):
        if (facts.qualify(call.func) or "").startswith(RANDOM_MODULES):
            return True
        if depth and any(_draws(facts, f, depth - 1) for f in facts.user_functions(call)):
            return True
    return False


# draws of a batch of indices, with the position of their size argument: `torch.randint(high, (bs,))`
# (or `torch.randint(low, high, (bs,))`), `np.random.randint(low, high, bs)`, `np.random.choice(n, bs)`,
# `random.sample(population, k)`; with `size=` (or `k=`) by keyword too
SIZED_DRAWS = {"torch.randint": None, "numpy.random.randint": 2, "numpy.random.choice": 1, "random.sample": 1}


def random_offset_draws(facts: Facts, loop: cst.For | cst.While) -> list[cst.SimpleStatementLine]:
    """The statements that draw a training batch at random offsets into the data, where `loop` trains
    and no DataLoader feeds it (`loaders.unfed_training`): in the loop's body (in its own function),
    an assignment of a draw of a batch of indices (`ix = torch.randint(len(data) - block, (bs,))`)
    or of a call of a function of the program that draws one and returns (nanoGPT's `X, Y =
    get_batch("train")`); and, before the loop in its function, the same call written again (the
    first batch, drawn before the loop: `X, Y = get_batch("train")`). Shard-data runs each on the
    process's own random stream (`own_random_stream()`): every process trains on a batch of its own.
    None for a draw from a generator the program makes (`generator=g`: the block swaps the global
    streams, not that one), nor a call in a function the loop calls (`train_step()`: not read)."""
    scope = facts.scope(loop)
    found: list[cst.SimpleStatementLine] = []
    calls: set[str] = set()  # the program's functions' calls that draw one, as written
    for stmt in facts.findall(loop.body, cst.SimpleStatementLine, lambda s: facts.scope(s) is scope):
        value = _assigned_call(stmt)
        if value is None:
            continue
        if _sized_draw(facts, value):
            found.append(stmt)
        elif any(_draws_a_batch(facts, func) for func in facts.user_functions(value)):
            found.append(stmt)
            calls.add(facts.code(value))
    if calls and scope is not None:
        found += [stmt for stmt in facts.findall(scope, cst.SimpleStatementLine, lambda s: facts.scope(s) is scope)
                  if (value := _assigned_call(stmt)) is not None and facts.code(value) in calls
                  and facts.before(stmt, loop) and not facts.is_inside(stmt, loop)]
    return found


def _assigned_call(stmt: cst.SimpleStatementLine) -> cst.Call | None:
    small = stmt.body[0] if len(stmt.body) == 1 else None
    value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
    return value if isinstance(value, cst.Call) else None


def _sized_draw(facts: Facts, call: cst.Call) -> bool:
    """A draw of a batch of indices (`SIZED_DRAWS`) from the global random streams: given its size."""
    qualified = facts.qualify(call.func)
    if qualified not in SIZED_DRAWS or mt.keyword(call, "generator") is not None:
        return False
    if mt.keyword(call, "size") is not None or mt.keyword(call, "k") is not None:
        return True
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    place = SIZED_DRAWS[qualified]
    if place is None:  # torch.randint: the size is the tuple after the bounds
        return bool(positional) and isinstance(positional[-1], (cst.Tuple, cst.List)) and len(positional) in (2, 3)
    return len(positional) > place


def _draws_a_batch(facts: Facts, func: cst.FunctionDef) -> bool:
    """Does the program's function `func` draw a batch of indices in its own body and return a value?"""
    return bool(facts.returned(func)) and any(
        _sized_draw(facts, c) for c in facts.findall(func.body, cst.Call, lambda c: facts.scope(c) is func))
