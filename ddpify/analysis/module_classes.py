"""Which classes of the program are `torch.nn.Module`s, as their bases show (a question of its own,
asked by the object flow, the forward analysis and the rules alike)."""

from __future__ import annotations

import builtins
import sys

import libcst as cst

from ddpify.syntax.facts import Facts
from ddpify.syntax.names import dotted

# torch's own classes that are no nn.Module, by the package they come from: a learning-rate
# scheduler (`class NoamLR(_LRScheduler)`) or an optimizer
NOT_MODULES = ("torch.optim.",)
# Python's own classes (`Exception`, `dict`, `ValueError`, ...): a class of the program deriving from
# one is no module, though the program does not define its base
BUILTIN_CLASSES = frozenset(name for name, value in vars(builtins).items() if isinstance(value, type))


def is_module_class(facts: Facts, cls: cst.ClassDef, depth: int = 4) -> bool:
    """Does `cls` derive from nn.Module (a base this file cannot see counts as one, unless it is one
    of torch.optim's classes: `NOT_MODULES`)?

        class Net(nn.Module)                  -> True
        class NoamLR(_LRScheduler)            -> False (torch.optim.lr_scheduler's)
        class NotThisMethod(Exception)        -> False (Python's own: BUILTIN_CLASSES)
        class Fitter(ABC)                     -> False (`from abc import ABC`: the standard library's)
        class Block(SomeLibraryLayer)         -> True (not seen: taken for a module)
    """
    for base in cls.bases:
        value = base.value.value if isinstance(base.value, cst.Subscript) else base.value  # `Generic[T]`
        name = dotted(value)
        if name in facts.classes:
            if depth and is_module_class(facts, facts.classes[name], depth - 1):
                return True
        elif name != "object" and not (name in BUILTIN_CLASSES and facts.qualify(value) in (None, name)) \
                and not _of_standard_library(facts.qualify(value)) \
                and not (facts.qualify(value) or "").startswith(NOT_MODULES):
            return True
    return False


def _of_standard_library(qualified: str | None) -> bool:
    """A class of a module of Python's standard library (`abc.ABC`, `typing.Generic`, `enum.Enum`,
    `threading.Thread`), imported by name: never an nn.Module. A course project's trainer and
    evaluator classes deriving from an `AbstractClassificationNN(ABC)` were taken for models, so the
    class body of the fitter holding them (`__networkTrainer = NetworkTrainer()`) was said to build
    a model at import, and its module was given an init_distributed_mode() with that reason."""
    return qualified is not None and "." in qualified and qualified.partition(".")[0] in sys.stdlib_module_names
