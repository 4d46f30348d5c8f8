"""The values a script's command-line option may take, for a module it imports by that name.

    parser.add_argument("--cfg", default="configs/lenet.py", choices=[...])
    args = parser.parse_args()
    cfg = importlib.import_module(args.cfg.replace("/", ".")[:-3])

The module `cfg` names is one of the values of `--cfg`, passed through the string operations
between: the command line the script is given where ddpify knows it (`ddpify run train.py --cfg
cfg1.py`, `ddpify convert train.py --args "--cfg cfg1.py"`): that value alone; else the option's
`default` and `choices` written out; else, where the program's folder holds a package of
configurations (`configs/`, `config/`, `cfgs/`, `cfg/`), each module of it, written as a command
line writes it (`configs/lenet.py`, `configs.lenet`, `lenet`): those whose value names a module
of the project. Anything else (an option read from a file, a value no string operation below
gives) is unknown: `None`, and the import stays named.

Read from the syntax alone; nothing is imported or run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted

# the folders a project keeps its configuration modules in, one of which a command line names
CONFIG_PACKAGES = ("configs", "config", "cfgs", "cfg")


@dataclass(frozen=True)
class Option:
    """An option `parser.add_argument(...)` declares, as written: its flags (`--cfg`, `-c`), or
    none for a positional one; what it is stored as (`dest`), its `default` and `choices` where
    they are strings written out."""

    flags: tuple[str, ...]
    dest: str
    default: str | None
    choices: tuple[str, ...]


def options(module: cst.Module, calls: Sequence[cst.Call] | None = None) -> dict[str, Option]:
    """The options a module declares, by `dest`: every `*.add_argument(...)` call whose names are
    strings written out. `calls`: the module's calls in source order, where an index has them (a
    program's `Facts`: no walk of the module)."""
    found: dict[str, Option] = {}
    for call in mt.findall(module, cst.Call) if calls is None else calls:
        if not mt.is_attribute(call.func, "add_argument"):
            continue
        names = [a.value for a in call.args if a.keyword is None and not a.star]
        if not names or not all(isinstance(n, cst.SimpleString) for n in names):
            continue
        flags = tuple(str(n.evaluated_value) for n in names if isinstance(n, cst.SimpleString))
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        dest = _string(keywords.get("dest"))
        if dest is None:
            long = next((f for f in flags if f.startswith("--")), flags[0])
            dest = long.lstrip("-").replace("-", "_")
        choices = keywords.get("choices")
        listed = tuple(s for e in choices.elements if (s := _string(e.value)) is not None) \
            if isinstance(choices, (cst.List, cst.Tuple, cst.Set)) else ()
        positional = not flags[0].startswith("-")
        found[dest] = Option(() if positional else flags, dest, _string(keywords.get("default")), listed)
    return found


def given(option: Option, argv: Sequence[str], declared: dict[str, Option]) -> str | None:
    """The value `argv` gives `option` (`--cfg x`, `--cfg=x`, a positional one by its place among
    the words no flag takes); None where it gives none. A flag of another option is taken to be
    followed by its value."""
    flags = {f for o in declared.values() for f in o.flags}
    positional = [o for o in declared.values() if not o.flags]
    value, loose = None, []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        flag, eq, inline = word.partition("=")
        if word.startswith("-") and flag in option.flags:
            value = inline if eq else (words[i + 1] if i + 1 < len(words) else None)
            i += 1 if eq else 2
        elif word.startswith("-") and flag in flags:
            i += 1 if eq else 2
        else:
            loose.append(word)
            i += 1
    if not option.flags and option in positional:
        index = positional.index(option)
        return loose[index] if index < len(loose) else None
    return value


def module_names(expr: cst.BaseExpression, module: cst.Module, argv: Sequence[str] | None,
                 exists: Callable[[str], bool], root_packages: Callable[[], list[tuple[str, str]]],
                 calls: Sequence[cst.Call] | None = None, assigns: Sequence[cst.Assign] | None = None
                 ) -> list[str] | None:
    """The project modules `expr` (the name handed to `import_module`) may be, where it is an option
    of `module`'s command line passed through string operations (`_evaluate`); None where it reads
    no option or cannot be told. `exists`: is a dotted name a module of the project; `root_packages`:
    (folder, dotted name) of each module of the program's configuration packages; `calls`,
    `assigns`: as `values`'."""
    computed = values(expr, module, argv, root_packages, calls, assigns)
    names = [n for value in computed or () for n in _module_forms(value) if exists(n)]
    return list(dict.fromkeys(names)) or None


def values(expr: cst.BaseExpression, module: cst.Module, argv: Sequence[str] | None,
           root_packages: Callable[[], list[tuple[str, str]]], calls: Sequence[cst.Call] | None = None,
           assigns: Sequence[cst.Assign] | None = None) -> list[str] | None:
    """The strings `expr` may be, computed from an option of `module`'s command line (`argv`'s value,
    else its default and choices, else each module of the configuration packages as a command line
    writes it: `configs/a.py`, `configs.a`, `a`); None where it reads no option. `calls`, `assigns`:
    the module's calls and assignments in source order, where the loading has them (`Part.calls`:
    no walk of the module per question)."""
    declared = options(module, calls)
    option = _option_read(expr, module, declared, assigns)
    if option is None:
        return None
    if argv is not None and (value := given(option, argv, declared)) is not None:
        raw = [value]
    else:
        raw = [v for v in (option.default, *option.choices) if v is not None]
    if not raw:  # a configuration package's modules, as a command line writes them
        raw = [form for path, name in root_packages() for form in (path, name, name.rpartition(".")[2])]
    return [v for value in raw if (v := _evaluate(expr, module, option, value, assigns)) is not None]


def option_read(expr: cst.BaseExpression, module: cst.Module, calls: Sequence[cst.Call] | None = None,
                assigns: Sequence[cst.Assign] | None = None) -> Option | None:
    """The option whose value `expr` computes the module name from (`args.cfg`, through string
    operations); None where it reads none. `calls`, `assigns`: the module's calls and assignments in
    source order, where an index has them (a program's `Facts`, asked at each call that loads code
    by name: no walk of the whole program per call)."""
    return _option_read(expr, module, options(module, calls), assigns)


def _option_read(expr: cst.BaseExpression, module: cst.Module, declared: dict[str, Option],
                 assigns: Sequence[cst.Assign] | None = None) -> Option | None:
    if not declared:
        return None
    for attr in mt.findall(_resolved(expr, module, assigns), cst.Attribute):
        if isinstance(attr.value, cst.Name) and attr.attr.value in declared:
            return declared[attr.attr.value]
    return None


def _resolved(expr: cst.BaseExpression, module: cst.Module,
              assigns: Sequence[cst.Assign] | None = None) -> cst.BaseExpression:
    """`expr`, a name bound once in the module to another expression replaced by it (`name =
    args.cfg[:-3]`, then `import_module(name)`); `assigns`: the module's assignments, where an index
    has them."""
    if isinstance(expr, cst.Name):
        values = [a.value for a in (mt.findall(module, cst.Assign) if assigns is None else assigns)
                  if len(a.targets) == 1 and mt.is_name(a.targets[0].target, expr.value)]
        if len(values) == 1:
            return values[0]
    return expr


def _evaluate(expr: cst.BaseExpression, module: cst.Module, option: Option, value: str,
              assigns: Sequence[cst.Assign] | None = None) -> str | None:
    """The string `expr` makes of the option's `value`: string literals, the option itself
    (`args.cfg`), `+`, f-strings, slices and indexes with integers, the methods `replace`, `strip`,
    `lstrip`, `rstrip`, `removeprefix`, `removesuffix`, `split`, `rsplit`, `lower`, and
    `os.path.splitext`, `os.path.basename`, `str`; None for anything else."""
    result = _Evaluator(option, value).of(_resolved(expr, module, assigns))
    return result if isinstance(result, str) else None


class _Evaluator:
    """The values of the expressions a module name is computed with, from one option's value."""

    def __init__(self, option: Option, value: str) -> None:
        self.option, self.value = option, value

    def of(self, node: cst.BaseExpression) -> object:
        if isinstance(node, cst.SimpleString):
            return node.evaluated_value
        if isinstance(node, cst.Integer):
            return int(node.value)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self.of(node.expression)
            return -inner if isinstance(inner, int) else None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.attr.value == self.option.dest:
            return self.value
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            left, right = self.of(node.left), self.of(node.right)
            return left + right if isinstance(left, str) and isinstance(right, str) else None
        if isinstance(node, cst.FormattedString):
            return self._formatted(node)
        if isinstance(node, cst.Subscript) and len(node.slice) == 1:
            return self._item(self.of(node.value), node.slice[0].slice)
        if isinstance(node, cst.Call):
            return self._call(node)
        return None

    def _formatted(self, node: cst.FormattedString) -> str | None:
        pieces = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                pieces.append(part.value)
            elif isinstance(part, cst.FormattedStringExpression) and part.format_spec is None \
                    and part.conversion is None and isinstance(piece := self.of(part.expression), str):
                pieces.append(piece)
            else:
                return None
        return "".join(pieces)

    def _item(self, held: object, index: cst.BaseSlice) -> object:
        if isinstance(index, cst.Index):
            at = self.of(index.value)
            return held[at] if isinstance(held, (str, tuple)) and isinstance(at, int) \
                and -len(held) <= at < len(held) else None
        if not isinstance(index, cst.Slice) or index.step is not None or not isinstance(held, str):
            return None
        bounds = [None if b is None else self.of(b) for b in (index.lower, index.upper)]
        lower, upper = (b if isinstance(b, int) else None for b in bounds)
        if bounds != [lower, upper]:
            return None  # a bound that is no integer
        return held[lower:upper]

    def _call(self, node: cst.Call) -> object:
        arguments = [self.of(a.value) for a in node.args]
        if any(a.keyword is not None or a.star for a in node.args) or not all(isinstance(a, (str, int))
                                                                             for a in arguments):
            return None
        name, first = dotted(node.func), arguments[0] if len(arguments) == 1 else None
        if name in ("os.path.splitext", "path.splitext", "splitext") and isinstance(first, str):
            root, _, ext = first.rpartition(".")
            return (root, "." + ext) if root and "/" not in ext else (first, "")
        if name in ("os.path.basename", "path.basename", "basename") and isinstance(first, str):
            return first.rpartition("/")[2]
        if name == "str" and isinstance(first, str):
            return first
        held = self.of(node.func.value) if isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in STRING_METHODS else None
        if isinstance(held, str) and isinstance(node.func, cst.Attribute):
            try:
                return getattr(held, node.func.attr.value)(*arguments)
            except (TypeError, ValueError):
                return None
        return None


STRING_METHODS = frozenset({"replace", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "split",
                            "rsplit", "lower"})


def _module_forms(name: str | None) -> list[str]:
    """The dotted module name a computed value gives, where it is one (`configs.lenet`; not a path)."""
    return [name] if name and all(p.isidentifier() for p in name.split(".")) else []


def _string(node: cst.BaseExpression | None) -> str | None:
    return str(node.evaluated_value) if isinstance(node, cst.SimpleString) else None
