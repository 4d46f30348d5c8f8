"""Small scripts for the rewrite tests, and ways to convert them (like LibCST's ``CodemodTest``).

``assert_rewrites(name, before, after)`` checks an exact before -> after pair with only that
rewrite selected; ``assert_unchanged(name, code)`` checks an input that rewrite must leave as it is;
``rewrite_tests`` makes both tests of a ``tests/rewrites/test_<name>.py`` from its lists, whose
entries are ``(before, after)`` or ``pair(before, after, id, also=..., report=..., **options)``.
``run``/``converted`` convert with every rewrite, for tests of whole conversions.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap

import pytest

from ddpify.convert import Options, convert
from ddpify.output.report import WARNING

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


# --- converting ---------------------------------------------------------------------------------

RUNTIME_TRY = re.compile(r"^try:\n    from ddpify_runtime import (?P<names>[^)]*?\)?)\n"
                         r"except ModuleNotFoundError as exc:.*\n.*\n.*\n", re.M)


def plain_runtime_import(code: str) -> str:
    """``code`` with the runtime's guarded import as the one line a pair spells out:
    ``from ddpify_runtime import a, b`` (its exact form is tested once, in test_convert)."""
    def one_line(match: re.Match) -> str:
        names = re.findall(r"\w+", match.group("names"))
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
                    report: list[str] | None = None, **options) -> None:
    """``before`` becomes exactly ``after`` (both dedented) with only ``name`` (and ``also``)
    selected; with ``report``, the report is exactly those ``"kind: message"`` lines (idempotence
    of whole conversions is the goldens' check)."""
    result = rewritten(name, before, also, **options)
    assert result.code == textwrap.dedent(after)
    if report is not None:
        assert [f"{c.kind}: {c.message}" for c in result.changes] == report


def assert_unchanged(name: str, code: str, **options) -> None:
    """``code`` is a script the other rewrites do change (no gate leaves it alone), but ``name``
    alone leaves it as it is."""
    assert convert(textwrap.dedent(code), Options(**options)).changed, "a gate leaves it alone"
    assert only(name, code, **options) == textwrap.dedent(code)


def pair(before: str, after: str, id: str, also: set[str] | None = None, report: list[str] | None = None,
         **options):
    """One exact case of a rewrite's ``PAIRS``: ``before`` becomes ``after`` with the rewrite and
    those in ``also`` selected (default: the file's), under ``options`` (``strategy="fsdp"``);
    ``report``: its exact lines."""
    settings = {"report": report, **options} if also is None else {"also": frozenset(also), "report": report, **options}
    return pytest.param(before, after, settings, id=id)


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
    (before, after) scripts, ``pair(...)``s, or ``pytest.param``s of them (an xfail for a known bug);
    ``also``: rewrites selected with ``name`` in every case that names none itself (what they add is
    all an unchanged input may show)."""
    return pair_tests(name, pairs, also), unchanged_tests(name, unchanged, also)


def pair_tests(name: str, pairs, also: frozenset = frozenset()):
    """The test of ``pairs`` alone (see `rewrite_tests`): for a rewrite that edits, or writes a TODO
    in, every script that trains, so that no script it leaves unchanged passes the gate."""
    @pytest.mark.parametrize("before, after, settings", [_with_settings(case) for case in pairs])
    def test_pairs(before, after, settings):
        settings = {"also": also, **settings}  # a pair's own `also` replaces the file's
        assert_rewrites(name, before, after, **settings)

    return test_pairs


def unchanged_tests(name: str, unchanged, also: frozenset = frozenset()):
    """The test that ``name`` leaves each script of ``unchanged`` as it is (see `rewrite_tests`)."""
    @pytest.mark.parametrize("code", unchanged)
    def test_unchanged(code):
        if also:
            assert only(name, code, also) == plain_runtime_import(convert(textwrap.dedent(code), Options(only=also)).code)
        else:
            assert_unchanged(name, code)

    return test_unchanged


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
