"""What every rewrite module owes the driver: it is registered, and its functions are typed
(`rewrite(analysis: Analysis, edits: Edits, options: Options) -> None`, helpers alike), with
annotations that name real types."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

import ddpify.rewrites
from ddpify.convert import Options, selected
from ddpify.rewrites import REWRITES, select

FOLDER = Path(ddpify.rewrites.__file__).parent
MODULES = sorted(p.stem for p in FOLDER.glob("*.py") if p.stem != "__init__")


def test_every_rewrite_module_is_registered():
    assert sorted(r.apply.__module__.rsplit(".", 1)[1] for r in REWRITES) == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_every_function_is_annotated(module):
    tree = ast.parse((FOLDER / f"{module}.py").read_text())
    untyped = [f"{module}.py:{node.lineno} {node.name}" for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and (node.returns is None or any(a.annotation is None for a in _arguments(node.args)))]
    assert not untyped


def _arguments(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, [args.vararg, args.kwarg])]


@pytest.mark.parametrize("module", MODULES)
def test_annotations_name_real_types(module):
    """Every annotation resolves, with the module's TYPE_CHECKING imports run (they are never run
    otherwise, so a typo there would pass unnoticed)."""
    mod = getattr(ddpify.rewrites, module)
    namespace = dict(vars(mod))
    for node in ast.parse(inspect.getsource(mod)).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            exec(compile(ast.Module(node.body, []), module, "exec"), namespace)
    for func in _functions(mod):
        typing.get_type_hints(func, namespace)
    assert str(inspect.signature(mod.rewrite)) == \
        "(analysis: 'Analysis', edits: 'Edits', options: 'Options') -> 'None'"
    hints = typing.get_type_hints(mod.rewrite, namespace)
    assert [h.__name__ for h in hints.values()] == ["Analysis", "Edits", "Options", "NoneType"]


def _functions(mod) -> list:
    """The module's own top-level functions."""
    return [f for f in vars(mod).values() if inspect.isfunction(f) and f.__module__ == mod.__name__]


def test_a_rewrite_requires_registered_rewrites_that_run_before_it():
    order = [r.name for r in REWRITES]
    for rewrite in REWRITES:
        assert all(order.index(n) < order.index(rewrite.name) for n in rewrite.requires), rewrite.name
    assert {r.name: r.requires for r in REWRITES if r.requires} == {
        "unwrap-model": {"wrap-model"}, "accumulate-no-sync": {"wrap-model"}}


@pytest.mark.parametrize("only, skip, runs", [
    ({"unwrap-model"}, set(), ["wrap-model", "unwrap-model"]),  # pulled in
    ({"main-process-only", "accumulate-no-sync"}, set(), ["wrap-model", "accumulate-no-sync", "main-process-only"]),
    ({"unwrap-model"}, {"wrap-model"}, []),  # a skip wins, and takes what requires it along
    ({"wrap-model", "shard-eval"}, {"unwrap-model"}, ["wrap-model", "shard-eval"]),
])
def test_a_selection_runs_what_its_rewrites_require_and_a_skip_drops_what_requires_it(only, skip, runs):
    assert [r.name for r in select(frozenset(only), frozenset(skip))] == runs


def test_skipping_a_required_rewrite_skips_the_rewrites_that_require_it():
    everything = [r.name for r in REWRITES]
    kept = [r.name for r in select(None, frozenset({"wrap-model"}))]
    assert sorted(set(everything) - set(kept)) == ["accumulate-no-sync", "unwrap-model", "wrap-model"]


def test_the_rewrites_are_given_the_resolved_selection():
    """`options.runs` in a rewrite answers for what runs, a pulled-in rewrite included (the
    main-process-only pairs with `also={"unwrap-model"}` show it in the output)."""
    rewrites, options = selected(Options(only=frozenset({"unwrap-model"})))
    assert [r.name for r in rewrites] == ["wrap-model", "unwrap-model"]
    assert options == Options(only=frozenset({"wrap-model", "unwrap-model"}))
    assert options.runs("wrap-model") and not Options(only=frozenset({"unwrap-model"})).runs("wrap-model")
