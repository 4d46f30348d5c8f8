"""The answers the analyses ask again and again are found once per program (decision 0027, round 7):
where a name lives (`Facts.ref`), what it may hold (`Facts.sources`), and whether a name holds
the wrapper of a program's one model (`models.holds_wrapper`, one memo for `refs`)."""

from __future__ import annotations

import json
import sys
from collections import Counter

import libcst as cst
import pytest

from ddpify.analysis import models
from ddpify.analysis.result import analyse
from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module
from tests.support.env import FIXTURES


def _analysed(monkeypatch) -> tuple:
    found: Counter = Counter()
    for name in ("_ref", "_find_sources"):
        original = getattr(Facts, name)

        def counted(self, *args, _original=original, _name=name):
            found[(_name, *map(id, args))] += 1
            return _original(self, *args)
        monkeypatch.setattr(Facts, name, counted)
    return analyse(parse_module((FIXTURES / "mnist_style" / "before.py").read_bytes())), found


def test_each_name_is_placed_and_followed_once(monkeypatch):
    """The analyses of one script ask where a name lives and what it holds thousands of times
    (the corpus: 12,655 and 3,196), for a third and a quarter as many names: each is found once."""
    analysis, found = _analysed(monkeypatch)
    assert found and max(found.values()) == 1
    name = next(iter(analysis.facts.names))
    assert analysis.facts.ref(name) is analysis.facts.ref(name)


def test_a_programs_one_model_is_asked_about_with_one_memo(monkeypatch):
    """`_trained_by_methods` asked `holds_wrapper` with a new dict of its model's names, so with a
    fresh memo; for a program's only model that dict is `refs`, whose answers are kept already."""
    analysis, _ = _analysed(monkeypatch)
    assert len(analysis.models.wrapped) == 1
    assert len(analysis.facts.__dict__["_holds_answers"]) == 1


# one unit: a model class with a method of its own, trained in a function of its own, then a call of
# that method (the calls `_trained_by_methods` asks about) and a save (`_unwraps`, `holds_wrapper`)
UNIT = """
class Net{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

    def score(self, x):
        return self.fc(x).sum()


def unwrap{i}(m):
    return m.module if hasattr(m, "module") else m


def main{i}(data):
    model = Net{i}()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in DataLoader(data, batch_size=2):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(model.score(x))
    torch.save(unwrap{i}(model).state_dict(), "m{i}.pt")
"""
HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch.utils.data import DataLoader\n"


def _questions(monkeypatch, units: int, name: str) -> Counter:
    """`models.<name>`'s calls, by argument ids, analysing `units` copies of `UNIT`."""
    found: Counter = Counter()
    original = getattr(models, name)

    def counted(*args):
        found[tuple(map(id, args[1:]))] += 1
        return original(*args)
    monkeypatch.setattr(models, name, counted)
    analyse(parse_module(HEAD + "".join(UNIT.format(i=i) for i in range(units))))
    monkeypatch.setattr(models, name, original)
    return found


def test_what_names_hold_is_asked_linearly_in_the_models(monkeypatch):
    """`_trained_by_methods` asks, for each model, whether each call on any model holds it: each
    model's questions about another's calls were answered model by model (2, 4, 8 units: 80, 200,
    560 answers, quadratic); where a question reads none of the model's names (`_asked`), it is not
    asked (linear)."""
    four, eight = (sum(_questions(monkeypatch, n, "_holds_uncached").values()) for n in (4, 8))
    assert four and eight <= 2 * four


def test_a_helper_is_read_for_an_unwrap_once(monkeypatch):
    """`_unwraps` (is this function the program's unwrap helper) is asked for each call of it that
    a question follows, by every model's questions: it reads the function once."""
    found = _questions(monkeypatch, 4, "_takes_module")
    assert found and max(found.values()) == 1


def test_whether_a_copy_is_a_wrapper_is_read_once_per_refs():
    """`_copies_wrap` (is a copy of a wrapper a wrapper: the program wrote its wraps) is asked in two
    of `holds_wrapper`'s questions, each answered for every name followed: it reads the models of
    `refs` once."""
    class Counted(dict):
        reads = 0

        def values(self):
            Counted.reads += 1
            return super().values()
    analysis = analyse(parse_module(HEAD + UNIT.format(i=0)))
    refs = Counted(analysis.models.refs)
    assert [models._copies_wrap(analysis.facts, refs) for _ in range(3)] == [False] * 3
    assert Counted.reads == 1


def test_what_a_helper_runs_is_walked_once_however_many_calls_run_it(monkeypatch):
    """`writes.preparing` asks of every call of the program what the functions it runs run, three
    calls down (a data set's preparation writes its files on one process): a helper called from
    eight places was walked eight times; it is walked once."""
    from ddpify.analysis import writes
    found: Counter = Counter()
    original = Facts.calls_of

    def counted(self, func):
        found[id(func)] += 1
        return original(self, func)
    monkeypatch.setattr(Facts, "calls_of", counted)
    source = HEAD + "def save(obj, path):\n    torch.save(obj, path)\n\n\n" + "".join(
        f"def step{i}(model):\n    save(model.state_dict(), 'm{i}.pt')\n\n\n" for i in range(8))
    facts = Facts(parse_module(source))
    writes.preparing(facts)
    assert found and max(found.values()) == 1


def test_a_name_no_comprehension_binds_is_not_walked_up(monkeypatch):
    """`Objects.values` asks of every name whether a comprehension around it binds it (`m` of `[m.to(d)
    for m in models]`), walking up its ancestors (large scripts: 2,506 walks); a name that no
    comprehension of the program binds is answered without a walk."""
    from ddpify.analysis import objects
    facts = Facts(parse_module(HEAD + "model = nn.Linear(2, 2)\nnets = [n.cuda() for n in [model]]\nopt = model\n"))
    flow = objects.of(facts)
    names = [n for n in facts.names if n.value in ("model", "opt")]

    def walked(node):
        raise AssertionError(f"walked up from {node.value}")
    monkeypatch.setattr(facts, "ancestors", walked)
    assert names and all(flow._comprehension_item(n) is None for n in names)


def _role_questions(n: int, monkeypatch) -> tuple[int, bool]:
    """How often the shared-value question of `if cfg.ratio > 1:` reads a test for its names
    (`_read_for_rank`), where `cfg` is assigned `n` times from itself; and the answer."""
    import libcst as cst

    from ddpify.analysis.same_values import SameValues, same_everywhere
    from ddpify.syntax import matchers as mt

    code = "import torch\ncfg = load()\n" + "".join(f"cfg = update(cfg, {i})\n" for i in range(n)) \
        + "if cfg.ratio > 1:\n    torch.save(cfg, 'a')\n"
    module = parse_module(code.encode())
    facts = Facts(module)
    asked: list = []
    original = SameValues._read_for_rank

    def counted(self, test):
        asked.append(test)
        return original(self, test)
    monkeypatch.setattr(SameValues, "_read_for_rank", counted)
    answer = same_everywhere(facts, mt.findall(module, cst.If)[0].test)
    monkeypatch.undo()
    return len(asked), answer


def test_a_name_assigned_from_itself_is_read_for_a_rank_once_per_source(monkeypatch):
    """Whether a test reads a rank by role follows its names' sources two deep; a name assigned
    from itself (`cfg = update(cfg, i)`) is met again through each of its sources, and each was
    asked again every time: the square of the sources (111 questions for 10, 421 for 20; RPipe's
    train_model.py: 20,839 questions, 94 distinct, 9x the LibCST floor). Each is now answered
    once per question: twice the sources, twice the questions, the same answer."""
    small, small_answer = _role_questions(10, monkeypatch)
    large, large_answer = _role_questions(20, monkeypatch)
    assert small_answer is large_answer
    assert large <= 2.5 * small


# one unit: a function whose parameter is typed by what its one caller passes (`t = trainer` then
# `t.fit()`: resolving the call asks which calls run `run{i}`, while those calls are being indexed)
TYPED_BY_CALLER = """
class Trainer{i}:
    def fit(self):
        return {i}


def run{i}(trainer):
    t = trainer
    t.fit()


run{i}(Trainer{i}())
"""


def _callers_indexed(monkeypatch, units: int) -> tuple[int, Facts]:
    asked: Counter = Counter()
    original = Facts._named_callees

    def counted(self, call):
        asked["named"] += 1
        return original(self, call)
    monkeypatch.setattr(Facts, "_named_callees", counted)
    facts = Facts(parse_module("".join(TYPED_BY_CALLER.format(i=i) for i in range(units))))
    facts.call_sites(facts.functions["run0"][0])
    return asked["named"], facts


def test_the_callers_of_functions_are_indexed_in_one_pass_however_often_asked_while_indexed(monkeypatch):
    """Typing a parameter by its callers asks for the index of callers while that index is being
    built: each such question started a pass over every call again (the index was a
    `cached_property`, which a question asked while it runs starts anew), one inside another, a
    pass per function so typed: diffusers' consistency-training example, with the 427 files it
    imports, nested 187 passes (8.9 million look-ups; `ddpify check` unfinished after 150 s). The
    question now continues the pass where it stands: what the calls are asked grows with the
    program (60, 216, 816 for 4, 8, 16 units before; 27, 55, 111 now), and each call still
    resolves to its own class's method."""
    small, _ = _callers_indexed(monkeypatch, 4)
    large, facts = _callers_indexed(monkeypatch, 16)
    assert large <= 5 * small
    fits = [c for c in facts.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == "fit"]
    assert len(fits) == 16
    assert all(facts.enclosing_class(f).name.value == f"Trainer{i}"
               for i, call in enumerate(fits) for f in facts.user_functions(call))
    assert all(len(facts.call_sites(run)) == 1 for runs in facts.functions.values() for run in runs
               if run.name.value.startswith("run"))


def test_the_statements_of_a_programs_other_files_are_found_once(tmp_path):
    """Each file's imports ask of every statement whether it is of a file other than the entry
    (`Program.library`): the set of those statements was made anew at each question (diffusers'
    example: 4,533 sets of the 427 files' statements, 18 s of a profiled check); it is made once."""
    from ddpify.inputs.program import load
    (tmp_path / "helpers.py").write_text("import os\n\n\ndef path():\n    return os.getcwd()\n")
    entry = tmp_path / "train.py"
    entry.write_text("import helpers\n\nprint(helpers.path())\n")
    program = load(entry, entry.read_bytes())
    assert len(program.library) == 2 and program.library is program.library


def test_the_asserts_before_a_statement_are_read_without_comparing_the_statements_before_it():
    """Whether a statement runs only undistributed asks, block by block up its ancestors, which
    asserts come before it: each block was searched for the statement and cut there, comparing
    every statement before it (a program's merged module holds all its files' statements: 6,600
    searches, 20 s of a profiled check); each block's statements are placed once, and a statement
    is found by its place (60,900 comparisons of statements for 200 statements before, none now)."""
    from ddpify.analysis.ranks import Ranks
    facts = Facts(parse_module("import torch.distributed as dist\nassert dist.get_world_size() == 1\n"
                               + "".join(f"x{i} = {i}\n" for i in range(200))))
    ranks = Ranks(facts)
    compared = Counter()

    def count(frame, event, arg):
        compared[event == "call" and frame.f_code.co_name == "__eq__"] += 1
    sys.setprofile(count)
    try:
        undistributed = [ranks.undistributed(stmt) for stmt in facts.module.body[2:]]
    finally:
        sys.setprofile(None)
    assert all(undistributed) and compared[True] == 0


class _Scanned(list):
    """A list of the program's nodes that counts the walks over it."""
    walks = 0

    def __iter__(self):
        _Scanned.walks += 1
        return super().__iter__()


def test_which_functions_are_handed_on_or_return_the_options_is_not_a_walk_of_the_program_per_function():
    """Whether a function nobody calls is handed on by name (`mp.spawn(worker, ...)`: `Ranks.entry_point`,
    `SameValues._launched_with`) walked every call of the program, and whether a helper returns
    `parse_args()` every `return` of it, once per function asked; the calls handing each name on
    are indexed once (`Facts.handing_on`) and a function's returns read from their index."""
    from ddpify.analysis import same_values
    facts = Facts(parse_module("import torch.multiprocessing as mp\n" + "".join(
        f"def worker{i}(rank, cfg):\n    return cfg\n\n\n" for i in range(20)) + "mp.spawn(worker0, args=(1,))\n"))
    facts.calls, facts.returns = _Scanned(facts.calls), _Scanned(facts.returns)
    facts.returns_in(facts.functions["worker0"][0])  # (the index of returns by function: one walk)
    values = same_values.values(facts)
    _Scanned.walks = 0
    workers = [f for fs in facts.functions.values() for f in fs]
    handed = [values.ranks.entry_point(f) for f in workers]
    launched = [values._launched_with(f, "cfg") for f in workers]
    parsed = [values._returns_arguments(f) for f in workers]
    assert handed == [True] + [False] * 19 and [len(v) for v in launched] == [1] + [0] * 19 and not any(parsed)
    assert _Scanned.walks <= 2  # (the index of calls handing names on; the classes patched by calls)


def _load_counting(tmp_path, monkeypatch) -> tuple[Counter, Counter]:
    """Load a program of two files that both import ten modules found nowhere, and whose helper
    puts a folder on `sys.path` from a function; count what the file system and the imports are
    asked: `_on_pythonpath` per entry folder, `exists` per path, and each call's name looked up
    (`Imports.qualify`) by the search for `sys.path` calls."""
    from pathlib import Path

    import ddpify.inputs.program as program
    from ddpify.syntax.names import Imports, dotted

    unknown = "".join(f"import alpha{i}\n" for i in range(10))
    (tmp_path / "helper.py").write_text(unknown + "import sys\ndef add(p):\n    print(p)\n    sys.path.insert(0, p)\nadd('lib')\n")
    entry = tmp_path / "train.py"
    entry.write_text("import helper\n" + unknown)
    (tmp_path / "lib").mkdir()
    listed, stats, qualified = Counter(), Counter(), Counter()
    on_pythonpath, exists, qualify = program._on_pythonpath, Path.exists, Imports.qualify

    def counted_listing(root, lookups):
        listed[root] += 1
        return on_pythonpath(root, lookups)

    def counted_exists(self, *args, **kwargs):
        stats[self] += 1
        return exists(self, *args, **kwargs)

    def counted_qualify(self, node, *args, **kwargs):
        qualified[dotted(node)] += 1
        return qualify(self, node, *args, **kwargs)
    monkeypatch.setattr(program, "_on_pythonpath", counted_listing)
    monkeypatch.setattr(Path, "exists", counted_exists)
    monkeypatch.setattr(Imports, "qualify", counted_qualify)
    program.load(entry, entry.read_bytes())
    monkeypatch.undo()
    return listed, stats, qualified


def test_what_the_file_system_holds_is_asked_once_per_program(tmp_path, monkeypatch):
    """An import found nowhere beside the entry is looked for above it and on PYTHONPATH: the
    folders of PYTHONPATH were listed again (each resolved, tested, its parents walked) for every
    such import, and whether the entry's folder holds the name was asked again by every file that
    imports it. Each is now asked at most once per program (`_Lookups.on_pythonpath`, `present`;
    a name absent from the folder's listing is answered without a stat, `_Lookups.absent`)."""
    listed, stats, _ = _load_counting(tmp_path, monkeypatch)
    assert list(listed.values()) == [1]
    assert stats[tmp_path / "alpha3"] <= 1 and stats[tmp_path / "alpha3.py"] <= 1


def test_the_calls_of_a_module_are_searched_for_sys_path_once(tmp_path, monkeypatch):
    """The search for `sys.path.insert`/`append` walked each top-level function, then the whole
    module again, looking up the name of every call inside a function twice: one walk now."""
    _, _, qualified = _load_counting(tmp_path, monkeypatch)
    assert qualified["print"] == qualified["add"] == 1


def test_the_rank_and_shared_value_questions_read_the_index_not_a_walk(monkeypatch):
    """Whether a value differs by process asks which names and calls an expression holds, for
    every test and every source it follows (RPipe's train_model.py: 71,878 searches), and walked
    each subtree for them; the collect pass has indexed every node of the file by type already
    (`Facts.findall` answers as the walk, `tests/test_walk.py`). No search of those questions
    (`ranks`, `same_values`, the unwrap helper's test in `models`) walks a node of the file now."""
    import sys as _sys

    from ddpify.convert import convert
    from ddpify.syntax import matchers as mt

    walked: Counter = Counter()
    findall = mt.findall

    def counted(node, *args, **kwargs):
        walked[_sys._getframe(1).f_globals["__name__"]] += 1
        return findall(node, *args, **kwargs)
    monkeypatch.setattr(mt, "findall", counted)
    for case in ("canonical", "file_read_back", "trainer_before_wrap", "variant_parse_args_helper"):
        convert((FIXTURES / case / "before.py").read_bytes())
    monkeypatch.undo()
    assert walked  # (the fallback for nodes of no tree, and the rewrites' own searches)
    assert not {m: n for m, n in walked.items() if m.endswith((".ranks", ".same_values", ".models"))}


def test_what_prepares_a_data_set_is_asked_once_per_call(monkeypatch):
    """main-process-only and download-first both ask which functions prepare a data set's files
    (`writes.preparing`), each of every call of the program, and download-first again of each
    call (`prepared_by`): whether a call builds a data set is now asked once per call."""
    import sys as _sys

    from ddpify.convert import convert

    asked: Counter = Counter()
    builds = Facts.builds

    def counted(self, call):
        if _sys._getframe(1).f_globals["__name__"] == "ddpify.analysis.writes":
            asked[id(call)] += 1
        return builds(self, call)
    monkeypatch.setattr(Facts, "builds", counted)
    convert((FIXTURES / "canonical" / "before.py").read_bytes())
    monkeypatch.undo()
    assert asked and max(asked.values()) == 1


def test_the_statement_of_a_node_is_found_without_walking_above_it():
    """`Facts.statement` listed every ancestor of a node, up to the module, before it picked the
    nearest statement (sweep 16's 24 programs: 56,168 questions, 493,514 ancestors listed); the
    walk up stops at the statement now."""
    facts = Facts(parse_module(b"def f(y):\n    for x in y:\n        if x:\n            g(x)\n"))
    asked = []

    class Counting(dict):
        def get(self, key, default=None):
            asked.append(key)
            return super().get(key, default)
    facts.parents = Counting(facts.parents)
    call = next(c for c in facts.calls if mt.is_call_of(c, "g"))
    assert type(facts.statement(call)) is cst.SimpleStatementLine
    assert len(asked) == 2  # the call's Expr, then the line holding it


def test_which_calls_build_a_loader_is_asked_once_per_call(monkeypatch):
    """The loaders, the reach warnings, the schedules (twice), the counts and shard-metrics each
    asked of every call of the program whether it builds a DataLoader; it is asked once
    (`Objects.loader_calls`)."""
    from ddpify.analysis import objects
    from ddpify.convert import convert

    asked: Counter = Counter()
    makes_loader = objects.Objects.makes_loader

    def counted(self, call):
        if sys._getframe(1).f_code.co_name == "<listcomp>":  # (a search of every call; not reach's of a name's origins)
            asked[id(call)] += 1
        return makes_loader(self, call)
    monkeypatch.setattr(objects.Objects, "makes_loader", counted)
    most = []
    for case in ("canonical", "explicit_sampler"):
        asked.clear()
        convert((FIXTURES / case / "before.py").read_bytes())
        most.append(max(asked.values()))
    monkeypatch.undo()
    assert most == [1, 1]


READ_BACK = """
import torch
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def save():
    torch.save(model.state_dict(), "model.pt")
def restore():
    model.load_state_dict(torch.load("model.pt"))
def check():
    restore()
def main():
    for step in range(3):
        model(torch.ones(2)).sum().backward()
        optimizer.step()
{saves}
main()
"""


READING = ("_reading_through", "reads_within")


def test_what_a_function_reads_through_its_callees_is_asked_once_however_many_saves_ask(monkeypatch):
    """Whether a save is read back later asks, for every call site of the saving function, which
    calls of the caller read a file through the functions they call (`_reading_through`): each
    site walked the same callees again. Whether a function reads within so many calls is kept per
    function: as many walks of `check()` for eight saves as for two."""
    from ddpify.convert import convert

    walks = []
    for sites in (2, 8):
        asked: Counter = Counter()
        calls_in = Facts.calls_in

        def counted(self, node, asked=asked):
            names = (sys._getframe(1).f_code.co_name, sys._getframe(2).f_code.co_name)
            if names[0] in READING or names[0] in ("<genexpr>", "<listcomp>") and names[1] in READING:
                asked[getattr(getattr(node, "name", None), "value", None)] += 1
            return calls_in(self, node)
        monkeypatch.setattr(Facts, "calls_in", counted)
        converted = convert(READ_BACK.format(saves="        save()\n        check()\n" * sites)).code
        monkeypatch.undo()
        assert "barrier()" in converted  # (the save is read back: the question was asked)
        walks.append(asked["check"])
    assert walks[0] == walks[1] >= 1


def test_the_names_a_later_statement_reads_come_from_the_index(monkeypatch):
    """shard-metrics' names a statement after a loop reads (`_read_in`, asked twice per statement
    by the gather of lists) walked the statement; they are read from the facts' index of the
    tree's nodes."""
    from ddpify.rewrites import shard_metrics
    from ddpify.syntax import matchers

    facts = Facts(parse_module(b"total = total + loss.item() * n\nprint(total / n, key=k)\n"))
    monkeypatch.setattr(matchers, "walk", None)  # a walk would fail
    found = [shard_metrics._read_in(facts, stmt) for stmt in facts.module.body]
    monkeypatch.undo()
    assert found == [{"loss", "item", "n"}, {"print", "total", "n", "key", "k"}]


def test_a_name_of_the_program_is_found_by_its_value_not_by_a_search_of_every_name(monkeypatch):
    """Whether the program names `device_ids` itself (wrap-model) and whether a function is used as
    a value (main-process-only, for each function that writes) searched every Name of the
    program for each question; an index of the names by value answers them
    (`Facts.names_spelled`, `Facts.attributes_named`)."""
    from ddpify.convert import convert

    searched = []
    findall = Facts.findall

    def counted(self, node, kind, *args, **kwargs):
        if node is self.module and kind in (cst.Name, cst.Attribute):
            searched.append(sys._getframe(1).f_globals["__name__"])
        return findall(self, node, kind, *args, **kwargs)
    monkeypatch.setattr(Facts, "findall", counted)
    for case in ("canonical", "file_read_back", "mnist_style"):
        convert((FIXTURES / case / "before.py").read_bytes())
    monkeypatch.undo()
    assert not [m for m in searched if m.endswith((".wrap_model", ".main_process_only"))]


def test_a_library_name_is_not_asked_whether_it_holds_the_wrapper_for_each_attribute(monkeypatch):
    """unwrap-model asked of every attribute `x.y` of the program whether `x` holds the DDP
    wrapper, `torch.nn` and `np.random` included; a name only a library's import binds, never
    assigned (`Facts.library_callee`, as `models._calls_on_models` skips it) holds no model of
    the program and is not asked."""
    from ddpify.convert import convert
    from ddpify.rewrites import unwrap_model

    asked = []
    holds_wrapper = unwrap_model.holds_wrapper

    def counted(facts, refs, expr, *args):
        if sys._getframe(1).f_code.co_name == "_custom_attributes":
            asked.append(facts.library_callee(expr))
        return holds_wrapper(facts, refs, expr, *args)
    monkeypatch.setattr(unwrap_model, "holds_wrapper", counted)
    for case in ("canonical", "mnist_style", "teacher_student"):
        convert((FIXTURES / case / "before.py").read_bytes())
    monkeypatch.undo()
    assert asked and not any(asked)


def test_each_statement_the_edits_insert_is_parsed_once_per_conversion(monkeypatch):
    """The head of the blocks saves are put in (`if is_main_process():`), in every file and loop
    that saves, is parsed once per conversion and shared (LibCST's nodes are immutable; decision
    0145); the output holds it at each place."""
    from ddpify.convert import convert
    from tests.support.snippets import script

    parsed: Counter = Counter()
    original = cst.parse_statement

    def counted(text, *args, **kwargs):
        parsed[text] += 1
        return original(text, *args, **kwargs)
    monkeypatch.setattr(cst, "parse_statement", counted)
    code = convert(script(loop="""
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    torch.save(model.state_dict(), "last.pt")
    print(epoch)
torch.save(model.state_dict(), "final.pt")
""")).code
    assert code.count("if is_main_process():\n") == 2
    assert parsed["if is_main_process():\n    pass\n"] == 1


def test_code_loaded_by_name_is_named_from_the_index_not_a_walk_of_the_program_per_call(tmp_path, monkeypatch):
    """What to say of each call that loads code by a name a command-line option gives
    (`reach.loaded_by_name`) read the options the program declares, and the assignments that may
    name the module, by walking the whole program at each such call (sweep 19's
    demand_pytorch_convlstm_registry: 45 files, 4 such calls, 0.2 floors of its conversion); the
    program's facts have them indexed (decision 0154)."""
    from ddpify.analysis import reach
    from ddpify.inputs.program import load

    entry = tmp_path / "train.py"
    entry.write_text("import argparse\nfrom importlib import import_module\n\n"
                     "parser = argparse.ArgumentParser()\nparser.add_argument('--cfg', type=str)\n"
                     "parser.add_argument('--data-module', type=str)\nargs = parser.parse_args()\n"
                     "name = args.cfg[:-3]\ncfg = import_module(name)\ndata = import_module(args.data_module)\n")
    program = load(entry, entry.read_bytes())
    facts = Facts(program.merged, program)
    loads = [c for c in facts.calls if mt.is_name(c.func, "import_module")]
    walked: list = []
    findall = mt.findall

    def counted(node, *args, **kwargs):
        walked.append(node)
        return findall(node, *args, **kwargs)
    monkeypatch.setattr(mt, "findall", counted)
    said = [reach.loaded_by_name(facts, program, call) for call in loads]
    monkeypatch.undo()
    assert ["`--cfg`" in said[0], "`--data-module`" in said[1]] == [True, True], said
    assert not [node for node in walked if isinstance(node, cst.Module)]


def test_whether_a_model_keeps_an_attribute_is_read_off_one_pass_over_the_assignments():
    """`_submodule_of` (does a class the model may be keep `self.<attr>`: is `model.decoder(z)` a
    sub-module run beside the forward) is asked for each call on a model and each argument read
    off one, and read every assignment of the program each time (sweep 19: 510,214 assignments
    compared for 280 questions); the assignments are grouped by attribute once per program
    (`_kept_attributes`, 4841ce67)."""
    class Counted(list):
        reads = 0

        def __iter__(self):
            Counted.reads += 1
            return super().__iter__()
    facts = analyse(parse_module(HEAD + UNIT.format(i=0) + UNIT.format(i=1))).facts
    facts.assigns = Counted(facts.assigns)
    net0, net1 = facts.classes["Net0"], facts.classes["Net1"]
    asked = [models._submodule_of(facts, [net0], attr) for attr in ("fc", "score", "head")]
    asked.append(models._submodule_of(facts, [net1], "fc"))
    assert asked == [True, False, False, True]
    assert Counted.reads == 1


def test_the_classes_a_lookup_in_a_module_may_give_are_found_once_per_module(tmp_path):
    """`getattr(models, name)(...)` of a module of the program may build any of its classes
    (`_classes_looked_up_in_module`); every call through a name that holds such a lookup asked
    again, each time a pass over every class of the program and the file of each (sweep 19's
    demand_pytorch_convlstm_registry: 322 questions for 32 lookups). The classes of a set of
    modules are found once per program; each question gets its own list."""
    from ddpify.inputs.program import load

    (tmp_path / "nets.py").write_text("import torch\n\n\nclass A(torch.nn.Module):\n    pass\n\n\n"
                                      "class B(torch.nn.Module):\n    pass\n")
    entry = tmp_path / "train.py"
    entry.write_text("import sys\n\nimport nets\n\nfirst = getattr(nets, sys.argv[1])()\n"
                     "second = getattr(nets, sys.argv[2])()\n")
    program = load(entry, entry.read_bytes())
    facts = Facts(program.merged, program)
    lookups = [c for c in facts.calls if mt.is_name(c.func, "getattr")]
    asked: list = []
    part_of = program.part_of
    program.part_of = lambda node, parents: asked.append(node) or part_of(node, parents)  # type: ignore[method-assign]
    found = [facts._classes_looked_up_in_module(c) for c in lookups for _ in range(2)]
    assert [[c.name.value for c in f] for f in found] == [["A", "B"]] * 4
    assert found[0] is not found[1]
    first = len(asked)
    facts._classes_looked_up_in_module(lookups[0])
    assert first and len(asked) == first


def test_whether_a_data_sets_class_mentions_shards_is_read_once_per_class(monkeypatch):
    """Whether a data set of the program's class has the same length on every process reads the
    class's code for the words of ranks and shards (`_whole_data_set`), printing the whole class
    for each save's test that sizes each data set built from it (a notebook's three data sets of
    one class, 0.05 floors of its conversion); it is printed once per class."""
    from ddpify.analysis import same_values

    facts = Facts(parse_module(
        "import torch\n\n\nclass Frames(torch.utils.data.Dataset):\n    def __init__(self, n):\n"
        "        self.n = n\n\n    def __len__(self):\n        return self.n\n\n\n"
        "train, valid, test = Frames(8), Frames(2), Frames(2)\n"))
    built = [c for c in facts.calls if mt.is_name(c.func, "Frames")]
    printed: Counter = Counter()
    code = Facts.code

    def counted(self, node):
        printed[type(node).__name__] += 1
        return code(self, node)
    monkeypatch.setattr(Facts, "code", counted)
    answers = [same_values.values(facts)._whole_data_set(call) for call in built * 2]
    monkeypatch.undo()
    assert answers == [True] * 6
    assert printed["ClassDef"] == 1


NO_CYCLE = """
class Net:
    def __init__(self):
        self.w = 1

    def step(self):
        return self.w


def make():
    return Net()


def train(epochs):
    net = make()
    for _ in range(epochs):
        net.step()


train(3)
"""


def _resolved(monkeypatch, code: str) -> tuple[Counter, Facts]:
    """How many times each call is resolved by its names while the callers of `train`/`run0` are
    indexed and every call is then asked what it runs."""
    found: Counter = Counter()
    original = Facts._resolve_by_name

    def counted(self, call):
        found[id(call)] += 1
        return original(self, call)
    monkeypatch.setattr(Facts, "_resolve_by_name", counted)
    facts = Facts(parse_module(code))
    facts.call_sites(next(f for name in ("train", "run0") for f in facts.functions.get(name, ())))
    for call in facts.calls:
        facts.user_functions(call)
    monkeypatch.setattr(Facts, "_resolve_by_name", original)
    return found, facts


def test_a_call_is_resolved_once_where_the_index_pass_met_no_cycle(monkeypatch):
    """The index of callers resolves every call in a pass apart, and dropped what it found: each call
    was resolved again for the questions after (round 13: 2.96 times per call over sweep 19). Where
    no question has met itself again while it was answered and no index was read half built, the
    pass's answers are kept: once per call. Where either happened (a parameter typed by callers
    inside the pass that lists them), they are found again after, as before."""
    once, facts = _resolved(monkeypatch, NO_CYCLE)
    assert facts._cycles == 0 and facts._partial_reads() == 0
    assert len(once) == len(facts.calls) and set(once.values()) == {1}
    again, facts = _resolved(monkeypatch, "".join(TYPED_BY_CALLER.format(i=i) for i in range(2)))
    assert facts._partial_reads() and min(again.values()) >= 3


PASSED_ON = NO_CYCLE + """

def fit(model):
    return model.step()


fit(Net())
"""


def test_a_pass_in_clean_facts_takes_in_the_answers_found_before_it(monkeypatch):
    """`model.step()` on a parameter asks which calls run `fit` (the index by name: its pass keeps
    what it found), then `call_sites` builds the index by everything in a second pass. That pass
    set aside every answer found so far and resolved each call by its names again (twice per call,
    decision 0172: about twice in the programs whose passes meet no cycle); in facts where no
    question met itself and no index was read half built, it takes them in: once per call."""
    found: Counter = Counter()
    original = Facts._resolve_by_name

    def counted(self, call):
        found[id(call)] += 1
        return original(self, call)
    monkeypatch.setattr(Facts, "_resolve_by_name", counted)
    facts = Facts(parse_module(PASSED_ON))
    step = next(c for c in facts.calls if facts.code(c) == "model.step()")
    assert [f.name.value for f in facts.user_functions(step)] == ["step"]  # through what `fit(Net())` passes
    facts.call_sites(facts.functions["train"][0])
    answers = {facts.code(c): [f.name.value for f in facts.user_functions(c)] for c in facts.calls}
    monkeypatch.undo()
    assert facts._cycles == 0 and facts._partial_reads() == 0
    assert len(found) == len(facts.calls) and set(found.values()) == {1}
    assert answers["fit(Net())"] == ["fit"] and answers["make()"] == ["make"] and answers["Net()"] == ["__init__"]


def test_the_function_around_an_import_by_name_is_found_in_one_walk(monkeypatch):
    """`importlib.import_module(module)` in a helper called with the names written out: the helper
    was found by walking every function of the file for its calls (a walk per function, and one
    more per function it is nested in: 25 walks here); one walk down to the call now, then the
    helper's own walks and the search for its callers."""
    from ddpify.inputs import program

    helpers = "".join(f"def other{i}(x):\n    return print(x)\n\n\n" for i in range(20))
    module = parse_module("import importlib\n\n\n" + helpers + "def get_class(module, name):\n"
                          "    return getattr(importlib.import_module(module), name)\n\n\n"
                          "get_class('pkg.algos', 'A')\nget_class('pkg.data', 'B')\n")
    call = next(c for c in mt.findall(module, cst.Call) if mt.is_attribute(c.func, "import_module"))
    walks: Counter = Counter()
    original = mt.findall

    def counted(node, kind, where=None):
        walks[type(node).__name__] += 1
        return original(node, kind, where)
    monkeypatch.setattr(mt, "findall", counted)
    assert program._literals_for_parameter(module, call, call.args[0].value) == ["pkg.algos", "pkg.data"]
    assert walks == {"Module": 1, "FunctionDef": 2}


def test_a_notebooks_script_is_compiled_once_with_its_cells_together(monkeypatch):
    """`to_script` compiles each cell alone, then the cells together (to name the cell of an error:
    a `from __future__` import in a later cell); the script's parse compiled the same code a third
    time. Now it is compiled twice in all, and anything else as before: the same code parsed
    again, the script with a `display(...)` commented out (other code), or its bytes read by a
    coding declaration on their first two lines."""
    from ddpify.inputs import notebook
    from ddpify.inputs.program import load
    from ddpify.syntax import parse

    compiled: Counter = Counter()
    original = parse.python_compile

    def counted(source):
        compiled[source if isinstance(source, str) else source.decode("utf-8")] += 1
        return original(source)
    monkeypatch.setattr(parse, "python_compile", counted)
    monkeypatch.setattr(notebook, "python_compile", counted)

    def cells(*sources: str) -> bytes:
        return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": s} for s in sources],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()

    script = notebook.to_script("nb.ipynb", cells("x = 1", "print(x)"))
    load(FIXTURES / "nb.py", script.code.encode(), follow=False)
    assert compiled == {"x = 1": 1, "print(x)": 1, script.code: 1}
    parse.parse_module(script.code.encode())
    assert compiled[script.code] == 2  # (taken by the first parse)
    compiled.clear()
    shown = notebook.to_script("nb.ipynb", cells("x = 1", "display(x)"))
    parse.parse_module(shown.code.encode())
    assert len(compiled) == 4 and compiled[shown.code] == 1  # cells, together, the script as parsed
    compiled.clear()
    declared = notebook.to_script("nb.ipynb", cells("# -*- coding: latin-1 -*-\nx = 'é'"))
    parse.parse_module(declared.code.encode())
    assert compiled[declared.code] == 2


def test_the_names_an_edited_file_uses_are_searched_in_its_syntax_and_its_names_only(monkeypatch):
    """Which imports an edited file needs (`edits._names_used`): its new nodes were walked with
    their whitespace and punctuation (no Name lies there), and each statement kept asked the index
    for every name imported, the many that the file never spells included (`is_main_process`)."""
    from ddpify.output import edits

    module = parse_module("import torch\nx = torch.ones(2)\nprint(x)\n")
    facts = Facts(module)
    new = cst.parse_statement("y = is_main_process() and torch.zeros(1)\n")
    tree = module.with_changes(body=[*module.body, new])
    asked: Counter = Counter()
    original = Facts.has_name

    def counted(self, node, value):
        asked[value] += 1
        return original(self, node, value)
    monkeypatch.setattr(Facts, "has_name", counted)
    mt.findall(tree, cst.Name)  # (the fields of each type of node known: `syntax_children` asks `children` once a type)
    monkeypatch.setattr(mt, "children", lambda node: pytest.fail("walked the whitespace"))
    names = {"is_main_process", "DDP", "torch", "print"}
    assert edits._names_used(tree, names, facts) == {"is_main_process", "torch", "print"}
    assert set(asked) <= {"torch", "print"}


def test_the_calls_of_one_callee_are_read_off_an_index_in_source_order():
    """`Facts.calls_to` (by what the callee names through the imports) and `calls_named` (by the
    last name it spells) answer what a filter of every call answers, in source order, for one
    name and for several: an alias (`persist` for `torch.save`), a method of the same last name
    that is not the library's (`ckpt.save`), a call of a call (no name)."""
    facts = Facts(parse_module(b"import torch\nfrom torch import save as persist\nimport copy\n"
                               b"def f(m, ckpt):\n    torch.save(m, 'a')\n    ckpt.save(m)\n"
                               b"    persist(copy.deepcopy(m), 'b')\n    make()(m)\n    copy.copy(m).save(1)\n"))
    for names in [("torch.save",), ("copy.deepcopy", "torch.save", "copy.copy"), ("os.makedirs",)]:
        assert facts.calls_to(*names) == [c for c in facts.calls if facts.qualify(c.func) in names]
    for names in [("save",), ("deepcopy", "save", "persist"), ("missing",)]:
        expected = [c for c in facts.calls if mt.is_call_of(c, *names) or mt.is_method_call(c, *names)]
        assert facts.calls_named(*names) == expected
    assert [facts.code(c) for c in facts.calls_to("torch.save")] == ["torch.save(m, 'a')", "persist(copy.deepcopy(m), 'b')"]
    assert facts.calls_named("save") is not facts.calls_named("save")  # (each caller gets its own list)


def test_questions_about_one_library_function_do_not_walk_every_call(monkeypatch):
    """The rewrites and analyses that ask about the calls of one function (`torch.load`,
    `add_argument`, `len`, the clocks, `requires_grad_`, `parse_args`, `.backward()`) read them off
    the facts' index, built in one pass over the calls, instead of each walking every call of the program."""
    from ddpify.convert import convert

    walked: Counter = Counter()

    class Calls(list):
        def __iter__(self):
            walked[sys._getframe(1).f_globals["__name__"]] += 1
            return super().__iter__()
    collect = Facts.__init__

    def counting(self, *args, **kwargs):
        collect(self, *args, **kwargs)
        self.calls = Calls(self.calls)
    monkeypatch.setattr(Facts, "__init__", counting)
    for case in ("agree_clock", "checkpoint_whole_model", "accumulation"):
        convert((FIXTURES / case / "before.py").read_bytes())
    monkeypatch.undo()
    assert walked["ddpify.syntax.facts"]  # (the index's own pass, and the call graph's)
    modules = ("load_map_location", "agree_clock", "launcher_arg", "counts", "freezing", "shard_metrics", "matchers",
               "accumulate_no_sync")
    assert not {m: n for m, n in walked.items() if m.rsplit(".", 1)[-1] in modules}


def test_the_calls_of_a_helper_are_asked_whether_they_read_once_however_many_calls_run_it(monkeypatch):
    """Which calls read a file (main-process-only's barriers after a save that may be read back)
    asks it of every call and of the own calls of each function a call runs: a helper called at
    four places had its calls asked four times over; now once."""
    from ddpify.convert import convert
    from ddpify.rewrites import main_process_only

    asked: Counter = Counter()
    reads = main_process_only._reads

    def counted(facts, call, *args, **kwargs):
        asked[facts.code(call)] += 1
        return reads(facts, call, *args, **kwargs)
    monkeypatch.setattr(main_process_only, "_reads", counted)
    convert(b"import torch\n\ndef tally(x):\n    return len([x])\n\ndef main():\n"
            b"    model = torch.nn.Linear(2, 2)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            b"    for step in range(3):\n        loss = model(torch.randn(4, 2)).sum()\n        loss.backward()\n"
            b"        opt.step()\n        tally(1)\n        tally(2)\n        tally(3)\n        tally(4)\n"
            b"        torch.save(model.state_dict(), 'm.pt')\n\nmain()\n")
    assert asked["len([x])"] == 2  # as a call of the program, and as tally's own for its four calls (5 before)



HANDED_ON = """
import torch
import torch.nn as nn


def step(optimizer):
    optimizer.step()
    optimizer.zero_grad()
    optimizer.state_dict()


net = nn.Linear(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(3):
    net(torch.randn(8, 4)).sum().backward()
    step(opt)
step(opt)
"""


def test_what_a_parameter_holds_is_followed_once_per_name(monkeypatch):
    """`holds_wrapper` asks of every read of a name whether it may hold the wrapper; for a parameter
    no wrap reaches by name (`_param_holds`) the answer is what its callers pass, the same for every
    read: `optimizer` of `step` was followed through both callers once per read (`optimizer.step()`,
    `.zero_grad()`, `.state_dict()`, each callee and its object asked); now once per depth."""
    import sys as _sys

    from ddpify.convert import convert
    from ddpify.syntax.facts import Facts as _Facts

    asked: Counter = Counter()
    argument_for = _Facts.argument_for

    def counted(self, call, func, name):
        if func.name.value == "step" and name == "optimizer" and \
                _sys._getframe(2).f_code.co_name.startswith("_param_holds"):  # (its list comprehension: 1)
            asked[id(call)] += 1
        return argument_for(self, call, func, name)
    monkeypatch.setattr(_Facts, "argument_for", counted)
    convert(HANDED_ON.encode())
    monkeypatch.undo()
    assert len(asked) == 2 and max(asked.values()) <= 2  # (two depths; five reads before)


def test_what_reaches_a_read_walks_only_the_statements_that_name_it(monkeypatch):
    """`reaching_sources` walked every statement before a read, back to one that always binds the
    name (`_binding`, a walk of the statement for each name asked: 2,072 walks for 668 reads over
    round 24's nine held-out programs, a quarter of `models.find`); a statement with no Name of
    that value binds it in no way, told from the facts' index (`has_name`): only the others are walked."""
    from ddpify.syntax import facts as facts_module
    from ddpify.syntax.names import dotted

    source = ("def train(model, data):\n    opt = torch.optim.SGD\n    if data:\n        opt = torch.optim.Adam\n"
              + "".join(f"    x{i} = [y for y in data if y > {i}]\n" for i in range(20))
              + "    return opt(model.parameters())\n")
    facts = Facts(parse_module(source.encode()))
    walked = []
    binding = facts_module._binding

    def counted(stmt, name):
        walked.append(stmt)
        return binding(stmt, name)
    monkeypatch.setattr(facts_module, "_binding", counted)
    read = next(n for n in facts.names_spelled("opt") if isinstance(facts.parents[n], cst.Call))
    found = facts.reaching_sources(read)
    assert [dotted(v) for v in found] == ["torch.optim.Adam", "torch.optim.SGD"]
    assert len(walked) == 2  # the `if` and `opt = torch.optim.SGD`, not the 20 statements between


def test_a_file_that_imports_by_an_option_is_walked_once_while_loading(tmp_path, monkeypatch):
    """Loading a script whose `import_module` reads a command-line option walked it for its computed
    imports, again for the options it declares and the assignment naming the module (once per
    value of the option), again for `_handed_in`'s imports by name and its calls: each file's calls
    and assignments are found in one walk (`Part.calls`), which every one of those reads."""
    from ddpify.inputs.program import load

    (tmp_path / "cfg1.py").write_text("lr = 0.1\n")
    (tmp_path / "cfg2.py").write_text("lr = 0.2\n")
    entry = tmp_path / "train.py"
    entry.write_text("import argparse\nfrom importlib import import_module\n\n"
                     "parser = argparse.ArgumentParser()\n"
                     "parser.add_argument('--cfg', default='cfg1.py', choices=['cfg1.py', 'cfg2.py'])\n"
                     "args = parser.parse_args()\nname = args.cfg[:-3]\ncfg = import_module(name)\n")
    walked: list = []
    walk = mt.walk

    def counted(node, *args, **kwargs):
        if isinstance(node, cst.Module):
            walked.append(node)
        return walk(node, *args, **kwargs)
    monkeypatch.setattr(mt, "walk", counted)
    program = load(entry, entry.read_bytes())
    monkeypatch.undo()
    assert [part.name for part in program.parts] == ["train", "cfg1", "cfg2"]
    assert len([m for m in walked if m is program.parts[0].module]) == 1


def test_which_functions_are_handed_to_a_call_is_found_in_one_pass_over_the_arguments(monkeypatch):
    """Whether a function runs only where the script is not distributed asks, of each function on the
    way up, whether a call is handed it by name (`launch(main, ...)`), and walked every argument of
    every call of the program for each (`Ranks._handed_on`); now the names handed on are gathered
    once (`_handed_names`), and each function's name is looked up in them."""
    from ddpify.analysis import ranks as ranks_module
    from ddpify.analysis.ranks import Ranks

    source = "".join(f"def f{i}(x):\n    return g(x, {i}, y.z)\n" for i in range(10)) + "launch(f3, cfg)\n"
    facts = Facts(parse_module(source.encode()))
    read: list = []
    dotted = ranks_module.dotted

    def counted(node):
        read.append(node)
        return dotted(node)
    monkeypatch.setattr(ranks_module, "dotted", counted)
    rank_questions = Ranks(facts)
    handed = [f.name.value for f in mt.findall(facts.module, cst.FunctionDef) if rank_questions._handed_on(f)]
    assert handed == ["f3"]
    assert len(read) == 32  # each argument once (3 of each call of `g`, 2 of `launch`), not once per function


def test_whether_a_value_is_the_same_on_every_process_asks_nothing_of_its_whitespace(monkeypatch):
    """The core of `same_everywhere` asked each node's LibCST `children` in turn, whitespace,
    commas and parentheses included, and of each the rank questions (`_per_process`) before it
    answered True; now only the syntax below a node is asked (`syntax_children`): the same answer."""
    from ddpify.analysis.same_values import SameValues, same_everywhere

    facts = Facts(parse_module(b"x = 1\ny = 2\nif ( x + y ) * 2 > max( [x, y][0] , 3 ):\n    print(x)\n"))
    test = mt.findall(facts.module, cst.If)[0].test
    asked: list = []
    core = SameValues._core

    def counted(self, node, proving):
        asked.append(type(node).__name__)
        return core(self, node, proving)
    monkeypatch.setattr(SameValues, "_core", counted)
    assert same_everywhere(facts, test)
    assert not {"SimpleWhitespace", "LeftParen", "RightParen", "Comma", "LeftSquareBracket"} & set(asked), asked
