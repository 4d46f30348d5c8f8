"""download-first: download a data set once per node, before the other processes read it.

    train_set = datasets.MNIST("data", train=True, download=True, transform=transform)
->
    with main_process_first():
        train_set = datasets.MNIST("data", train=True, download=True, transform=transform)

Every process downloading and unpacking into the same folder at once corrupts it.
`main_process_first()` (runtime) runs the block on each node's local rank 0 first, then on the
other processes, which find the files in place. Adjacent downloads share one block.

A data set of the program that prepares its own files when it is built (a `Dataset` subclass, or
a class with `__getitem__` and `__len__`, whose `__init__`, or what it calls, writes a file:
`ddpify.analysis.writes.prepared_by`) is built
the same way, and its writes stay as they are (main-process-only leaves them to this block);
here `PTB.__init__` writes ptb.train.json and the vocabulary where they are missing:

    datasets[split] = PTB(data_dir, split)
->
    with main_process_first():
        datasets[split] = PTB(data_dir, split)

Built by every process at once, one reads the file another is still writing; with a write
guarded to the main process inside it, the others would read what is not there yet.

So is a call of a function of the program that fetches its data and writes it, and trains
nothing (`writes.prepared_by`: torchmf's `ratings = read_ratings("data")`, whose `download(dest)`
runs `requests.get(url)`, writes the zip and `.extractall(dest)`s it where it is missing, then reads
the ratings back): under `with main_process_first():` where it is called, not inside it; but where
all its writing and fetching is one call of its own on a line of its own (`ds = make_set(root)`,
then a `random_split` it draws), around that call inside it (`_inner_preparation`), so that what
it draws after comes from the random state every process shares past the block.

So is an object of the program built, or a function of it called, that keeps a cache of its data
(writes a file where a test of that file's existence finds it missing, and reads it), training
nothing: `loader = MNISTLoader()`, whose `__init__` pickles the arrays it parses from CSV files
where the pickles are missing and loads them where they are there. Built by every process at once,
one starting late finds a pickle the first is still writing.

Where the statement sits in a `with` that holds an inter-process lock (`writes.lock_around`),
the block goes around that `with`, not inside it: inside, the first process would wait for the
others while holding the lock they wait for (Ray's tutorials download under one):

    with FileLock(os.path.expanduser("~/data.lock")):
        train_set = datasets.FashionMNIST("~/data", train=True, download=True)
->
    with main_process_first():
        with FileLock(os.path.expanduser("~/data.lock")):
            train_set = datasets.FashionMNIST("~/data", train=True, download=True)

A fetch under a test that asks whether its files exist, which each process answers on its own
(some may not run it), runs under the block with its test, where the `if` leaves nothing but files
behind (`_file_tested`): the others then ask, find the files in place and skip it.

    if not os.path.isdir(root):
        self.download()
->
    with main_process_first():
        if not os.path.isdir(root):
            self.download()

A data set built as an argument of a statement that also trains (`fit(model, DataModule("data"))`)
is built on a line of its own first, its value handed on by a name: the whole statement in the
block would train on the first process while the others wait at its barrier:

    fit(model, datasets.MNIST("data", train=True, download=True))
->
    with main_process_first():
        mnist = datasets.MNIST("data", train=True, download=True)
    fit(model, mnist)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.analysis import writes
from ddpify.analysis.ranks import FILE_TESTS
from ddpify.analysis.same_values import ranks, same_everywhere
from ddpify.syntax import matchers as mt

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "download-first"
SUMMARY = "download or prepare data sets on each node's first process before the others read them"

def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    enclosed: set[cst.CSTNode] = set()
    fetching = writes.preparing(facts)  # run by a call that prepares: its own calls run inside that block
    inner = {call: found for call in facts.calls if (found := _inner_preparation(facts, call)) is not None}
    innermost = set(inner.values())
    for call in facts.calls:
        if call in inner:  # the block goes around the one call inside it that prepares
            continue
        download = mt.keyword(call, "download")
        downloads = download is not None and mt.is_literal_true(download.value)
        write = None if downloads else writes.prepared_by(facts, call)
        stmt = facts.statement(call)
        if not (downloads or write is not None) or not isinstance(stmt, cst.SimpleStatementLine):
            continue
        stmt = writes.lock_around(facts, stmt) or stmt
        if stmt in enclosed:
            continue
        built = downloads or facts.builds(call)
        if not built and facts.scope(stmt) in fetching and call not in innermost:
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and facts.trains(stmt):
            _build_apart(facts, edits, call, stmt, write, built)
            continue
        tested = _file_tested(facts, stmt) if write is not None and not _reached_alike(facts, stmt) else None
        if tested is not None and write is not None:  # the whole `if` first, its test asked again by the others
            if tested not in enclosed:
                enclosed.add(tested)
                edits.enclose(tested, "with main_process_first():")
                edits.record(tested, f"run by each node's first process before the others, test and all: they then "
                             f"find the files in place and skip it (it {'builds a data set that ' if built else ''}"
                             f"fetches data and writes: `{facts.code(write)}`)")
                edits.add_import("ddpify_runtime", "main_process_first")
            continue
        enclosed.add(stmt)
        if write is not None and not _reached_alike(facts, stmt):
            edits.todo(stmt, f"{'building this data set' if built else 'this call fetches data and'} writes its "
                       f"files (`{facts.code(write)}`), and some processes may not {'build it' if built else 'run it'} "
                       f"here (a test that may differ between them): {'build' if built else 'run'} it on every "
                       "process under `with main_process_first():` (ddpify_runtime), or one process reads what "
                       "another is still writing")
            continue
        edits.enclose(stmt, "with main_process_first():")
        edits.record(stmt, "downloaded by each node's first process before the others read it" if write is None else
                     f"built by each node's first process before the others, which find its files in place "
                     f"(building it writes: `{facts.code(write)}`)" if built else
                     f"run by each node's first process before the others, which find its files in place (it "
                     f"fetches data and writes: `{facts.code(write)}`)")
        edits.add_import("ddpify_runtime", "main_process_first")


def _inner_preparation(facts: Facts, call: cst.Call) -> cst.Call | None:
    """The one call inside the function of the program `call` runs that prepares (`prepared_by`) and
    does all of its writing and fetching, on a line every process that runs the function reaches;
    or None. `make_loaders()` calls `make_set()`, which saves a synthetic set where it is missing,
    then draws a `random_split` itself: only `make_set()` runs first under the block, and the split
    is drawn after it, from the random state every process then shares, not inside the block by the
    first process after its generation and by the others without it."""
    functions = facts.user_functions(call)
    if len(functions) != 1 or facts.builds(call) or writes.prepared_by(facts, call) is None or \
            not _reached_alike(facts, facts.statement(call)):
        return None
    own = facts.calls_of(functions[0])
    preparing = [c for c in own if writes.prepared_by(facts, c) is not None]
    if len(preparing) != 1:
        return None
    found = preparing[0]
    stmt = facts.statement(found)
    line = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    if not (isinstance(line, (cst.Assign, cst.AnnAssign, cst.Expr)) and line.value is found):
        return None  # a statement that does more than the call (`random_split(make_set(root), ...)`) stays whole
    rest = [c for c in own if c is not found and not facts.is_inside(c, found)]
    if any(writes.file_write(facts, c) is not None or mt.opens_for_writing(c) or writes.fetches(facts, c)
           or any(writes.writes_files(facts, f) for f in facts.user_functions(c)) for c in rest) or \
            facts.trains(stmt) or not _reached_alike(facts, stmt) or writes.lock_around(facts, stmt) is not None:
        return None
    return _inner_preparation(facts, found) or found


def _build_apart(facts: Facts, edits: Edits, call: cst.Call, stmt: cst.SimpleStatementLine,
                 write: cst.Call | None, built: bool) -> None:
    """The data set (or the fetch) `call` is an argument of a statement that also trains
    (`fit(cfg, DataModule("data"))`): built on a line of its own under `with main_process_first():`
    before it, its value handed on by a name, so that the training runs on every process at once
    (the whole statement in the block would train on the first process while the others wait at
    its barrier, a hang)."""
    if write is not None and not _reached_alike(facts, stmt):
        edits.todo(stmt, f"{'building this data set' if built else 'this call fetches data and'} writes its files "
                   f"(`{facts.code(write)}`), and some processes may not {'build it' if built else 'run it'} here (a "
                   "test that may differ between them): build it on a line of its own, on every process, under "
                   "`with main_process_first():` (ddpify_runtime), or one process reads what another is still writing")
        return
    name = _free_name(facts, call)
    edits.insert_before(stmt, f"with main_process_first():\n    {name} = {facts.code(call)}\n")
    edits.replace(call, lambda node: cst.Name(name),
                  f"`{facts.code(call.func)}(...)` {'built' if built else 'run'} on a line of its own first, by each "
                  "node's first process before the others (which find its files in place), and handed on as "
                  f"`{name}`: the rest of the statement trains, on every process at once")
    edits.add_import("ddpify_runtime", "main_process_first")


def _free_name(facts: Facts, call: cst.Call) -> str:
    """A name for what `call` returns, free in the program: the callee's, in snake case
    (`DataModule(...)` -> `data_module`, `datasets.MNIST(...)` -> `mnist`), numbered where taken."""
    callee = call.func.attr.value if isinstance(call.func, cst.Attribute) else \
        call.func.value if isinstance(call.func, cst.Name) else "prepared"
    base = "".join(f"_{c.lower()}" if c.isupper() and i and not callee[i - 1].isupper() else c.lower()
                   for i, c in enumerate(callee)).lstrip("_") or "prepared"
    name, number = base, 1
    while facts.names_spelled(name):
        number += 1
        name = f"{base}_{number}"
    return name


def _file_tested(facts: Facts, stmt: cst.CSTNode) -> cst.If | None:
    """The outermost `if` around `stmt` (a preparation some processes may not run) whose test may
    differ between processes only by asking whether files exist (`if not os.path.isdir(root):`, each
    test `and`-ed with values the same everywhere: `if download and not os.path.isdir(d):`), where
    every process reaches that `if`, nothing in it trains or runs a collective: under `with
    main_process_first():` whole, the first process of each node fetches, the others then ask and
    find the files in place. disentangling-vae's `Chairs.__init__` (25c; decision 0206):

        if not os.path.isdir(root):
            self.download()
    ->
        with main_process_first():
            if not os.path.isdir(root):
                self.download()

    (before: a TODO saying to do so). None where any other test may differ on the way."""
    found = None
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            break
        if isinstance(anc, cst.If) and not same_everywhere(facts, anc.test):
            if not all(same_everywhere(facts, part) or _asks_files(facts, part) for part in _conjuncts(anc.test)):
                return None
            found = anc
    if found is None or not _reached_alike(facts, found) or facts.trains(found) or \
            writes.lock_around(facts, found) is not None or not _files_only(facts, found) or \
            any(ranks(facts).is_collective(call) for call in facts.calls_in(found)):
        return None
    return found


def _files_only(facts: Facts, block: cst.CSTNode, depth: int = 3) -> bool:
    """Does `block` leave nothing but files behind: it binds no name, attribute or item (nor do the
    functions of the program it calls, `depth` calls deep, bind an attribute, an item or a global)?
    A process that skips it, finding the files in place, then holds what one that ran it holds;
    `if not os.path.exists(p): datasets[split] = Prepared(p)` binds what the others would lack."""
    if any(facts.is_inside(stmt, block) for _, _, stmt in facts.assigns) or facts.findall(block, cst.AsName):
        return False
    fetches = [c for c in facts.calls_in(block) if writes.prepared_by(facts, c) is not None]
    if any(_writes(facts, c) for c in facts.calls_in(block)
           if c not in fetches and not any(facts.is_inside(c, f) for f in fetches)):
        return False  # (a write of its own, which main-process-only may guard and follow by a barrier)
    seen: set[cst.FunctionDef] = set()
    todo = [(f, depth) for call in facts.calls_in(block) for f in facts.user_functions(call)]
    while todo:
        func, left = todo.pop()
        if func in seen:
            continue
        seen.add(func)
        if facts.findall(func, (cst.Global, cst.Nonlocal)) or any(
                isinstance(target, (cst.Attribute, cst.Subscript)) for target, _, _ in facts.writes_in(func)):
            return False
        if left > 1:
            todo += [(f, left - 1) for call in facts.calls_in(func) for f in facts.user_functions(call)]
    return True


# what writes or removes files and folders beside a fetch (main-process-only's to guard)
FILE_OPS = frozenset({"os.makedirs", "os.mkdir", "shutil.rmtree", "os.remove", "os.unlink", "os.rmdir", "os.removedirs",
                      "os.rename", "os.replace"})


def _writes(facts: Facts, call: cst.Call) -> bool:
    return writes.file_write(facts, call) is not None or mt.opens_for_writing(call) or \
        writes.link(facts, call) is not None or facts.qualify(call.func) in FILE_OPS or \
        mt.is_method_call(call, "mkdir") or any(writes.writes_files(facts, f) for f in facts.user_functions(call))


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and not test.lpar:
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _asks_files(facts: Facts, test: cst.BaseExpression) -> bool:
    """`os.path.isdir(root)`, `not path.exists()`: does the file system answer it alone?"""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    return isinstance(test, cst.Call) and (facts.qualify(test.func) in FILE_TESTS or not test.args and
                                           mt.is_method_call(test, "exists", "is_file", "is_dir"))


def _reached_alike(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Does every process that runs the function (or the module) around `stmt` reach it: no `if`
    on the way whose test may differ between processes (`if is_main_process():`, a test on a
    shard's loss)? `main_process_first()` waits for every process of the node."""
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            return True
        if isinstance(anc, cst.If) and not same_everywhere(facts, anc.test):
            return False
    return True
