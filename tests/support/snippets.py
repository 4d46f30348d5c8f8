"""Small scripts for the rewrite tests, and ways to convert them (like LibCST's ``CodemodTest``).

``assert_rewrites(name, before, after)`` checks an exact before -> after pair with only that
rewrite selected; ``assert_unchanged(name, code)`` checks an input that rewrite must leave as it is;
``rewrite_tests`` makes both tests of a ``tests/rewrites/test_<name>.py`` from its lists, whose
entries are ``(before, after)`` or ``pair(before, after, id, also=..., report=..., scaffold=...,
**options)``. A pair is the few lines that change: its ``scaffold`` (a `Scaffold` of `TRAINS`,
`SCRIPT` or `ARGS`) writes the rest of a script that trains around them, on both sides, and the
rewrite must leave that rest as it is. ``kept(code, id, ...)`` is a pair the rewrite leaves as it
is (written once, for its report); ``unchanged(code, id, scaffold)`` an ``UNCHANGED`` case after a
whole script that trains, which the rewrite may edit while it leaves ``code`` alone (the near
misses of a rewrite that edits every script that trains).
``run``/``converted`` convert with every rewrite, for tests of whole conversions.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from dataclasses import dataclass

import pytest

from ddpify.convert import Options, convert
from ddpify.output.report import WARNING
from ddpify.rewrites import select

# --- a script that trains: loader, model, optimizer, epoch loop ---------------------------------

TRAIN_LOOP = """
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
"""

HEADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
"""

# the same ingredients with parsed arguments, for exits that read them
ARGS_HEADER = """
import argparse
import itertools
import torch
from torch.utils.data import DataLoader, TensorDataset
args = argparse.ArgumentParser().parse_args()
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = torch.nn.MSELoss()
"""

# a step loop that pulls batches by hand; {loop} opens it
STEP_LOOP = """
it = iter(train_loader)
{loop}
    try:
        x, y = next(it)
    except StopIteration:
        break
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if loss.item() < args.target:
        break
    if step >= args.max_steps:
        break
"""

# a loader only, for scripts that bring their own model classes
LOADER_HEADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loader = DataLoader(ds, batch_size=4, shuffle=True)
"""

NET = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)
        self.size = 1

    def forward(self, x):
        return self.fc(x)
"""

STEP = """
    for x, y in loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
"""


def script(loader: str = "train_loader = DataLoader(ds, batch_size=4, shuffle=True)",
           model: str = "model = torch.nn.Linear(2, 1)",
           optimizer: str = "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
           loop: str = TRAIN_LOOP, tail: str = "") -> str:
    return HEADER + "\n".join([loader, model, optimizer]) + "\n" + textwrap.dedent(loop) + textwrap.dedent(tail)


# --- scaffolds: the script that trains around a pair's lines ------------------------------------

IMPORT_LINE = re.compile(r"(import|from \S+ import) ")


@dataclass(frozen=True)
class Scaffold:
    """The lines of a script that trains that the harness writes around a pair's own: ``imports``
    and ``setup`` before them, ``tail`` after, the pair's lines indented by ``indent`` (inside a
    block of the setup). The rewrite must leave all three as they are, but for the imports it adds
    after ``imports``: a pair's ``after`` opens with those, then one empty line (as the rewrite
    writes them above the setup of a whole script)."""

    imports: str
    setup: str = ""
    tail: str = ""
    indent: str = ""

    def enclosing(self, setup: str = "", tail: str = "", indent: str = "") -> Scaffold:
        """This scaffold with ``setup`` after its own and ``tail`` before its own (both as
        written), the pair's lines indented by ``indent``: the lines several pairs of a file share."""
        return Scaffold(self.imports, self.setup + setup, tail + self.tail, indent)

    def around(self, code: str) -> str:
        """The whole script ``code`` (dedented) stands for."""
        return self.imports + self.setup + textwrap.indent(textwrap.dedent(code), self.indent) + self.tail

    def expected(self, after: str) -> str:
        """The whole converted script ``after`` (dedented) stands for: its opening imports go
        after the scaffold's, with an empty line before the code."""
        lines = textwrap.dedent(after).splitlines(keepends=True)
        n = next((i for i, line in enumerate(lines) if not IMPORT_LINE.match(line)), len(lines))
        added, body = ("".join(lines[:n]), "".join(lines[n + 1:])) if n and lines[n:n + 1] == ["\n"] \
            else ("", "".join(lines))
        rest = self.setup + textwrap.indent(body, self.indent) + self.tail
        return self.imports + added + ("\n" if added and not rest.startswith("\n") else "") + rest


class Script:
    """A script that trains, in named parts, the first its imports, the last its loop (but
    `ARGS`'s); `at_end`, `end_of_epoch`, `after_step`, `before` and `instead_of` are the scaffolds
    of pairs written after it, inside its loop, before one of its parts or in place of some."""

    def __init__(self, **parts: str) -> None:
        self.parts = parts

    @property
    def at_end(self) -> Scaffold:
        """The whole script, the pair's lines after it."""
        return self.instead_of()

    @property
    def end_of_epoch(self) -> Scaffold:
        """The whole script, the pair's lines at the end of its epoch loop, after the batch loop."""
        return dataclasses.replace(self.at_end, indent="    ")

    @property
    def after_step(self) -> Scaffold:
        """The whole script, the pair's lines in its batch loop, after the optimizer's step."""
        return dataclasses.replace(self.at_end, indent="        ")

    def before(self, name: str) -> Scaffold:
        """The whole script, the pair's lines before its part ``name``."""
        keys, texts = list(self.parts), list(self.parts.values())
        start = keys.index(name)
        assert start > 0, name
        return Scaffold(texts[0], "".join(texts[1:start]), "".join(texts[start:]))

    def instead_of(self, *names: str) -> Scaffold:
        """The script with the pair's lines in place of the parts ``names`` (adjacent, in order)."""
        keys, texts = list(self.parts), list(self.parts.values())
        start, stop = (keys.index(names[0]), keys.index(names[-1]) + 1) if names else (len(keys), len(keys))
        assert 0 < start and keys[start:stop] == list(names), names
        return Scaffold(texts[0], "".join(texts[1:start]), "".join(texts[stop:]))


# --- converting ---------------------------------------------------------------------------------

RUNTIME_TRY = re.compile(r"^try:\n    from ddpify_runtime import (?P<names>[^)]*?\)?)\n"
                         r"except ModuleNotFoundError as exc:.*\n.*\n.*\n", re.M)


def plain_runtime_import(code: str) -> str:
    """``code`` with the runtime's guarded import as the one line a pair spells out:
    ``from ddpify_runtime import a, b`` (its exact form is tested once, in test_convert)."""
    def one_line(match: re.Match) -> str:
        names = re.findall(r"\w+(?: as \w+)?", match.group("names"))
        return f"from ddpify_runtime import {', '.join(names)}\n"
    return RUNTIME_TRY.sub(one_line, code)


def run(code: str, header: str = "", **options):
    """(converted code, change records) of ``header + code`` (dedented) with every rewrite."""
    result = convert(textwrap.dedent(header + code), Options(**options))
    compile(result.code, "<converted>", "exec")
    return plain_runtime_import(result.code), result.changes


def run_with_loader(code: str, header: str = LOADER_HEADER, **options):
    return run(code, header, **options)


def converted(body: str, header: str = ARGS_HEADER) -> str:
    code = convert(header + textwrap.dedent(body)).code
    compile(code, "<converted>", "exec")
    return plain_runtime_import(code)


def rewritten(name: str, code: str, also: frozenset = frozenset(), **options):
    """The ``Result`` of ``code`` (dedented) converted with the rewrite ``name`` alone (and those in
    ``also``); its output compiles."""
    result = convert(textwrap.dedent(code), Options(only=frozenset({name}) | also, **options))
    compile(result.code, "<converted>", "exec")
    return dataclasses.replace(result, output=plain_runtime_import(result.code).encode(result.encoding))


def only(name: str, code: str, also: frozenset = frozenset(), **options) -> str:
    """``code`` (dedented) converted with the rewrite ``name`` alone (and those in ``also``)."""
    return rewritten(name, code, also, **options).code


def assert_rewrites(name: str, before: str, after: str, also: frozenset = frozenset(),
                    report: list[str] | None = None, scaffold: Scaffold | None = None, **options) -> None:
    """``before`` becomes exactly ``after`` (both dedented, written in ``scaffold`` if given) with
    only ``name`` (and ``also``) selected; with ``report``, the report is exactly those
    ``"kind: message"`` lines (idempotence of whole conversions is the goldens' check)."""
    if scaffold is not None:
        before, after = scaffold.around(before), scaffold.expected(after)
    result = rewritten(name, before, also, **options)
    if scaffold is not None:
        assert result.code.endswith(scaffold.tail) and scaffold.setup in result.code, "the scaffold changed"
    assert result.code == textwrap.dedent(after)
    if report is not None:
        assert [f"{c.kind}: {c.message}" for c in result.changes] == report


def assert_unchanged(name: str, code: str, **options) -> None:
    """``code`` is a script the other rewrites do change (no gate leaves it alone), but ``name``
    alone leaves it as it is."""
    assert convert(textwrap.dedent(code), Options(**options)).changed, "a gate leaves it alone"
    assert only(name, code, **options) == textwrap.dedent(code)


def pair(before: str, after: str, id: str, also: set[str] | None = None, report: list[str] | None = None,
         scaffold: Scaffold | None = None, **options):
    """One exact case of a rewrite's ``PAIRS``: ``before`` becomes ``after`` with the rewrite and
    those in ``also`` selected (default: the file's), under ``options`` (``strategy="fsdp"``);
    ``report``: its exact lines; ``scaffold``: the script around them (else each is whole)."""
    settings = {"report": report, "scaffold": scaffold, **options}
    if also is not None:
        settings["also"] = frozenset(also)
    return pytest.param(before, after, settings, id=id)


def kept(code: str, id: str, **settings):
    """A case of ``PAIRS`` the rewrite leaves as it is, written once: `pair` ``(code, code)``, for
    its ``report`` (a note that says why) or its ``also``."""
    return pair(code, code, id, **settings)


def unchanged(code: str, id: str, scaffold: Scaffold):
    """A case of ``UNCHANGED`` written after a whole script that trains (``scaffold``, a
    `Script.at_end`): the rewrite leaves ``code`` as it is, whatever it makes of the script before
    it, so that a rewrite that edits every script that trains has near misses too."""
    assert not scaffold.tail, "the lines a rewrite must leave alone come last"
    return pytest.param(code, scaffold, id=id)


def _with_settings(case):
    """A ``PAIRS`` entry as ``(before, after, settings)``."""
    if not hasattr(case, "marks"):  # a plain (before, after)
        return pytest.param(*case, {})
    return case if len(case.values) == 3 else pytest.param(*case.values, {}, marks=case.marks, id=case.id)


def lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines()]


def warnings(changes) -> list[str]:
    return [c.message for c in changes if c.kind == WARNING]


def rewrite_tests(name: str, pairs, unchanged, also: frozenset = frozenset()):
    """The two tests of a ``tests/rewrites/test_<name>.py``, as module attributes:
    ``test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)``. ``pairs`` holds
    (before, after) scripts, ``pair(...)``s, ``kept(...)``s, or ``pytest.param``s of them (an xfail
    for a known bug); ``unchanged`` holds scripts, ``pytest.param``s of them, or ``unchanged(...)``s;
    ``also``: rewrites selected with ``name`` in every case that names none itself (what they add is
    all an unchanged input may show)."""
    return pair_tests(name, pairs, also), unchanged_tests(name, unchanged, also)


def pair_tests(name: str, pairs, also: frozenset = frozenset()):
    """The test of ``pairs`` (see `rewrite_tests`)."""
    @pytest.mark.parametrize("before, after, settings", [_with_settings(case) for case in pairs])
    def test_pairs(before, after, settings):
        settings = {"also": also, **settings}  # a pair's own `also` replaces the file's
        assert_rewrites(name, before, after, **settings)

    return test_pairs


def unchanged_tests(name: str, unchanged, also: frozenset = frozenset()):
    """The test that ``name`` leaves each script of ``unchanged`` as it is (see `rewrite_tests`): it
    adds nothing to what ``also`` and the rewrites it requires (`Rewrite.requires`) do."""
    others = also | frozenset(r.name for r in select(frozenset({name}))) - {name}

    @pytest.mark.parametrize("code, scaffold", [_with_scaffold(case) for case in unchanged])
    def test_unchanged(code, scaffold):
        if scaffold is not None:
            assert convert(scaffold.around(code)).changed, "a gate leaves it alone"
            assert only(name, scaffold.around(code), also) == only(name, scaffold.around(""), also) + textwrap.dedent(code)
        elif others:
            assert convert(textwrap.dedent(code)).changed, "a gate leaves it alone"
            assert only(name, code, also) == plain_runtime_import(convert(textwrap.dedent(code), Options(only=others)).code)
        else:
            assert_unchanged(name, code)

    return test_unchanged


def _with_scaffold(case):
    """An ``UNCHANGED`` entry as ``(code, scaffold)``."""
    if not hasattr(case, "values"):  # a plain script
        return pytest.param(case, None)
    return case if len(case.values) == 2 else pytest.param(*case.values, None, marks=case.marks, id=case.id)


# the smallest script that trains, in pieces: imports, a shuffled loader, a model and its optimizer,
# an epoch loop
IMPORTS = "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
LOADER = "loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)\n"
MODEL = "model = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
EPOCHS = """\
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
"""

# the scripts pairs are written in (`Script.at_end`, `Script.instead_of`): the smallest script that
# trains; `script()`'s, with a dataset and a loss function; `ARGS_HEADER`'s, after which a pair
# writes the loop
TRAINS = Script(imports=IMPORTS, loader=LOADER, model="model = torch.nn.Linear(2, 1)\n",
                opt="opt = torch.optim.SGD(model.parameters(), lr=0.1)\n", loop=EPOCHS)
SCRIPT = Script(imports=IMPORTS,
                data="ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))\nloss_fn = torch.nn.MSELoss()\n",
                train_loader="train_loader = DataLoader(ds, batch_size=4, shuffle=True)\n",
                model="model = torch.nn.Linear(2, 1)\n",
                optimizer="optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n", loop=TRAIN_LOOP)
ARGS = Script(imports="import argparse\nimport itertools\n" + IMPORTS, setup=ARGS_HEADER.split(IMPORTS)[1])
