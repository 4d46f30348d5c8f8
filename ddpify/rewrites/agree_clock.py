"""agree-clock: name a run by the main process's clock, on every process.

    run_dir = os.path.join("runs", datetime.now().strftime("%Y%m%d-%H%M%S"))
->
    run_dir = os.path.join("runs", from_main_process(lambda: datetime.now()).strftime("%Y%m%d-%H%M%S"))

A run folder or a file named by the time the program starts is named by each process's own
clock, and the processes do not start at the same instant: the main process writes the
checkpoint into its folder, and another, reading it back, looks in a folder of its own time that
holds nothing (FileNotFoundError), or makes a folder of its own beside the main one. Every
process now takes the main process's reading (`from_main_process`, a broadcast; before the process
group starts it reads its own). Read: a clock call (`time.strftime`, `time.time`, `datetime.now`,
...) in a value assigned to a name, built into a string there (`str(...)`, `.strftime(...)`,
`.format(...)`, an f-string, `%`, `os.path.join`, a `pathlib.Path` of it), at the top level or in a function that trains
(or one that keeps it, returning a value or storing it, or a name of it, in an attribute, as a trainer's `__init__`
does, each of whose calls is so), outside loops and outside tests that may differ between processes (a broadcast there would wait
for processes that never come). A reading a helper returns is followed to the helper's callers
(three helpers deep), each of which must name something so; the reading is then taken in the
helper:

    def stamp():
        return time.strftime("%Y%m%d-%H%M%S")
    run_dir = os.path.join("runs", stamp())
->
    def stamp():
        return from_main_process(lambda: time.strftime("%Y%m%d-%H%M%S"))
    run_dir = os.path.join("runs", stamp())

A run numbered by how many entries its parent folder holds is named so too: the count
(`len(os.listdir(root))`, `len(glob.glob(...))`) is the main process's, taken before it makes its
own folder there; another process, counting after it, would number a second folder (decision 0214):

    save_dir = os.path.join(root, "exp-" + str(len(os.listdir(root))))
->
    save_dir = os.path.join(root, "exp-" + str(from_main_process(lambda: len(os.listdir(root)))))

The next run's number, the count offset by a whole number before it is made text, is a count too
(decision 0235): `"exp" + f"{len(os.listdir(root)) + 1}"` ->
`"exp" + f"{from_main_process(lambda: len(os.listdir(root))) + 1}"`; the count kept as a number
(`n = len(os.listdir(root)) + 1`) is left alone.

A run numbered from a walk of its parent folder's listing by a helper that then makes the folder
(`get_output_folder`: the highest `-runN` found, plus one) lists the main process's entries:
`for folder_name in os.listdir(parent_dir):` becomes
`for folder_name in from_main_process(lambda: os.listdir(parent_dir)):`.

Left alone: a clock read for timing (`start = time.time()`,
`elapsed = time.time() - start`), one in a loop, one handed to another call (a writer made on
the main process only reads it there), and one in the `__init__` of a logger class (main-process-only
makes its instances on the main process only: a broadcast there would wait for the others forever).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis import objects
from ddpify.analysis.same_values import same_everywhere
from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options
    from ddpify.syntax.facts import Facts

NAME = "agree-clock"
SUMMARY = "name a run by the main process's clock (or its count of a folder's entries) on every process (from_main_process)"

CLOCKS = frozenset({"time.time", "time.strftime", "time.ctime", "time.asctime", "time.localtime", "time.gmtime",
                    "datetime.datetime.now", "datetime.datetime.today", "datetime.datetime.utcnow",
                    "datetime.date.today"})
HELPER_DEPTH = 3  # helpers returning a reading, followed to their callers
# a folder's listing whose length numbers a run (`len(os.listdir(root))`): it changes as the main process writes there
COUNTED_LISTINGS = frozenset({"os.listdir", "glob.glob", "glob.iglob", "os.scandir"})
# calls that make text of it, or a path of that text (`Path(f"runs/{time.strftime(...)}")`)
TEXTUAL = frozenset({"str", "format", "strftime", "isoformat", "replace", "join", "ctime", "Path", "PurePath"})


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for call in facts.calls_to(*CLOCKS):
        if not _names_something(facts, call):
            continue
        edits.replace(call, _from_main_process,
            f"`{facts.code(call)}` read from the main process's clock (from_main_process): each process's own "
            "would name another run, where the others look for what the main process writes")
        edits.add_import("ddpify_runtime", "from_main_process")
    for count in _counts(facts):
        if not _named(facts, count, False, HELPER_DEPTH, count=True):
            continue
        edits.replace(count, _from_main_process,
            f"`{facts.code(count)}` counted by the main process (from_main_process): it makes its run's folder "
            "there, and a process counting after it would number another run")
        edits.add_import("ddpify_runtime", "from_main_process")
    for listing in _walked_before_a_folder_is_made(facts):
        edits.replace(listing, _from_main_process,
            f"`{facts.code(listing)}` listed by the main process (from_main_process): the helper numbers a new "
            "folder from what it finds there and makes it, and a process listing after the main process made its "
            "own would number another")
        edits.add_import("ddpify_runtime", "from_main_process")


def _from_main_process(node: cst.CSTNode) -> cst.Call:
    """`from_main_process(lambda: <node>)`: the main process's value of `node`, on every process."""
    assert isinstance(node, cst.BaseExpression)
    return cst.Call(cst.Name("from_main_process"), [cst.Arg(cst.Lambda(cst.Parameters(), node))])


def _counts(facts: Facts) -> list[cst.Call]:
    """`len(os.listdir(root))`, `len(glob.glob(pattern))`: the number of entries a folder holds, the
    `len(...)` call of a listing that is its sole argument."""
    found = []
    for listing in facts.calls_to(*COUNTED_LISTINGS):
        arg = facts.parent(listing)
        outer = facts.parent(arg) if arg is not None else None
        if isinstance(outer, cst.Call) and isinstance(outer.func, cst.Name) and outer.func.value == "len" \
                and len(outer.args) == 1 and outer.args[0].value is listing:
            found.append(outer)
    return found


MAKE_FOLDER = frozenset({"os.makedirs", "os.mkdir"})


def _walked_before_a_folder_is_made(facts: Facts) -> list[cst.Call]:
    """`for folder_name in os.listdir(parent_dir):` in a helper that then makes a folder and returns
    (a DDPG project's `get_output_folder`: the highest `-runN` it finds, plus one, made with
    `os.makedirs` and returned as the run's folder): each process numbering the run from its own
    listing numbers a second folder once the main process made its own (`Pendulum-v0-run1` and
    `-run2`). The listing, walked by a loop at the helper's top level, in a helper that does not
    train, makes a folder after the loop (`os.makedirs`, `os.mkdir`, a path's `.mkdir()`) and returns a value
    every call site of which names something once on every process. A listing walked to
    collect a data set's files (no folder made after it) is left alone."""
    found = []
    for listing in facts.calls_to(*COUNTED_LISTINGS):
        loop = facts.parent(listing)
        if not (isinstance(loop, cst.For) and loop.iter is listing):
            continue
        func = facts.scope(loop)
        if not isinstance(func, cst.FunctionDef) or facts.trains(func) or not facts.returned(func) \
                or not _once_everywhere(facts, loop, func):
            continue
        makes = [c for c in facts.calls_in(func) if facts.qualify(c.func) in MAKE_FOLDER
                 or isinstance(c.func, cst.Attribute) and c.func.attr.value == "mkdir"]
        if not any(facts.runs_before(loop, c, strict=True) for c in makes):
            continue
        sites = facts.call_sites(func)
        if sites and all(_named(facts, site, True, HELPER_DEPTH - 1) for site in sites):
            found.append(listing)
    return found


def _names_something(facts: Facts, clock: cst.Call) -> bool:
    """Is `clock` built into a string assigned to a name (`ts = time.strftime(...)`,
    `run = f"runs/{datetime.now():%H%M}"`), where every process runs the assignment once?"""
    return _named(facts, clock, facts.qualify(clock.func) in ("time.strftime", "time.ctime", "time.asctime"),
                  HELPER_DEPTH)


def _named(facts: Facts, reading: cst.Call, textual: bool, depth: int, count: bool = False) -> bool:
    """`_names_something` for `reading`: a clock call, or a call of a helper that returns one
    (`def stamp(): return time.strftime(...)`, then `run_dir = os.path.join("runs", stamp())`):
    the helper's value is followed to each of its call sites (`depth` helpers deep), every one of
    which must name something once on every process. With `count` (a folder's count of entries),
    the count offset by a whole number before it is made text (`f"exp{len(os.listdir(root)) + 1}"`:
    the next run's number) still numbers the run; a clock's arithmetic measures time."""
    node: cst.CSTNode = reading
    for anc in facts.ancestors(reading):
        if isinstance(anc, cst.Return) and anc.value is node:
            func = facts.scope(anc)
            sites = facts.call_sites(func) if isinstance(func, cst.FunctionDef) and depth > 0 else []
            return bool(sites) and _once_everywhere(facts, anc, func) \
                and all(_named(facts, site, textual, depth - 1, count) for site in sites)
        if isinstance(anc, (cst.Assign, cst.AnnAssign)):
            if node is not anc.value:
                return False  # a target's subscript, not the value
            break
        if isinstance(anc, cst.Call) and facts.qualify(anc.func) in CLOCKS:
            return False  # `time.strftime(fmt, time.gmtime())`: the outer reading is taken whole
        if isinstance(anc, cst.Call) and node is not anc.func:
            name = (dotted(anc.func) or "").rpartition(".")[2]
            if name not in TEXTUAL:
                return False  # handed to another call (a writer, a print)
            textual = True
        elif isinstance(anc, cst.Call):  # `datetime.now().strftime(...)`: a method of the reading
            name = anc.func.attr.value if isinstance(anc.func, cst.Attribute) else ""
            if name not in TEXTUAL and anc.func is not node:
                return False
        elif isinstance(anc, cst.Attribute) and anc.value is node:
            textual = textual or anc.attr.value in TEXTUAL
        elif isinstance(anc, (cst.FormattedString, cst.FormattedStringExpression)):
            textual = True
        elif isinstance(anc, cst.BinaryOperation):
            offset = count and not textual and _offset(anc, node)  # `len(os.listdir(root)) + 1`: still a count
            if not (offset or isinstance(anc.operator, (cst.Modulo, cst.Add)) and (textual or _texts(anc))):
                return False  # arithmetic: `time.time() - start` measures
            textual = textual or not offset
        elif isinstance(anc, cst.IfExp) and node is not anc.test and not same_everywhere(facts, anc.test) or \
                isinstance(anc, (cst.Lambda, cst.BaseComp, cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
        node = anc
    else:
        return False
    return textual and _once_everywhere(facts, reading)


def _offset(op: cst.BinaryOperation, node: cst.CSTNode) -> bool:
    """`node + 1`, `1 + node`, `node - 1`: `node` (a count) offset by a whole number."""
    other = op.right if op.left is node else op.left if op.right is node else None
    return isinstance(op.operator, (cst.Add, cst.Subtract)) and isinstance(other, cst.Integer) \
        and (op.left is node or isinstance(op.operator, cst.Add))


def _texts(op: cst.BinaryOperation) -> bool:
    """`"run-%s" % stamp`, `"runs/" + stamp`: an operation with a string literal on one side."""
    return any(isinstance(side, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
               for side in (op.left, op.right))


def _once_everywhere(facts: Facts, node: cst.CSTNode, helper: cst.CSTNode | None = None,
                     depth: int = HELPER_DEPTH) -> bool:
    """At the top level, or in a function that trains (one the conversion never runs on the main
    process only), outside loops and outside an `if` whose test may differ between processes; with
    `helper`, the function `node` returns from, the same within it (its call sites answer for it).
    A function that does not train answers so where it keeps the reading (`_keeps`) and each of
    its calls is a statement of its own, once on every process (`depth` callers up)."""
    for anc in facts.ancestors(node):
        if anc is helper or isinstance(anc, cst.Module):
            return True
        if isinstance(anc, cst.FunctionDef):
            if facts.trains(anc):
                return True
            if _makes_a_logger(facts, anc):
                return False  # built on the main process only (main-process-only): a broadcast there waits forever
            entries = _entries(facts, anc) if depth > 0 and _keeps(facts, node, anc) else []
            return bool(entries) and all(_called_alone(facts, e) and _once_everywhere(facts, e, None, depth - 1)
                                         for e in entries)
        if isinstance(anc, (cst.For, cst.While)) or isinstance(anc, cst.If) and not same_everywhere(facts, anc.test):
            return False
    return True


def _keeps(facts: Facts, node: cst.CSTNode, func: cst.FunctionDef) -> bool:
    """Does `func` hand on what it computes, so that main-process-only never runs it on the main
    process alone (it guards helpers that only write): it returns a value, or `node` sits in an
    assignment to an attribute (`config.model_name = "{}_{}".format(config.dataset, get_time())`),
    or to a name that the function then stores in an attribute (`logdir = get_logdir(base)`, then
    `self.ckpt = os.path.join(logdir, "model.pt")`), state read later?"""
    assign = mt.sole(facts.statement(node), cst.Assign)
    if facts.returned(func):
        return True
    if assign is None:
        return False
    if any(isinstance(t.target, cst.Attribute) for t in assign.targets):
        return True
    stmt = facts.statement(node)
    names = {facts.ref(t.target, stmt) for t in assign.targets if isinstance(t.target, cst.Name)} - {None}
    return bool(names) and any(isinstance(target, cst.Attribute) and any(facts.ref(n) in names for n in facts.findall(
        value, cst.Name)) for target, value, _ in facts.writes_in(func))


def _entries(facts: Facts, func: cst.FunctionDef) -> list[cst.Call]:
    """Where `func` runs (`Facts.entries`); for an `__init__` no call names, the calls that may
    build its class by a name looked up at run time (`objects.classes_built`: `getattr(trainers,
    config["trainer"])(config)`, a registry's item), each of which runs it where it builds one."""
    entries = facts.entries(func)
    cls = facts.enclosing_class(func)
    if entries or func.name.value != "__init__" or cls is None:
        return entries
    core = objects.of(facts)
    return [c for c in facts.calls if not isinstance(c.func, cst.Name) or c.func.value not in facts.classes
            if cls in core.classes_built(c)]


def _makes_a_logger(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` the `__init__` of a logger class of the program (`objects.logger_class`: its
    instances hold a writer and no model, loader or optimizer), whose instances main-process-only
    makes on the main process only (`Logger(log_dir) if is_main_process() else None`)? Its clock
    reading names nothing the other processes use, and a broadcast there would wait for them."""
    cls = facts.enclosing_class(func)
    return func.name.value == "__init__" and cls is not None and objects.of(facts).logger_class(cls)


def _called_alone(facts: Facts, call: cst.Call) -> bool:
    """Is `call` a statement of its own, or the value a name is bound to (not a write's argument),
    or the object of one that trains (`Trainer(config).fit()`, `fit` a method that trains:
    main-process-only never runs it on the main process alone)?"""
    small = mt.sole(facts.statement(call), (cst.Expr, cst.Assign))
    if small is None:
        return False
    outer = small.value
    return outer is call or isinstance(outer, cst.Call) and isinstance(outer.func, cst.Attribute) and \
        outer.func.value is call and any(facts.trains(f) for f in facts.user_functions(outer))
