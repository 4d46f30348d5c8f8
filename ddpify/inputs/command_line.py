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
        return _from_words(expr, module, argv, calls, assigns)
    if argv is not None and (value := given(option, argv, declared)) is not None:
        raw = [value]
    else:
        raw = [v for v in (option.default, *option.choices) if v is not None]
    if not raw:  # a configuration package's modules, as a command line writes them
        raw = [form for path, name in root_packages() for form in (path, name, name.rpartition(".")[2])]
    return [v for value in raw if (v := _evaluate(expr, module, option, value, assigns)) is not None]


def _from_words(expr: cst.BaseExpression, module: cst.Module, argv: Sequence[str] | None,
                calls: Sequence[cst.Call] | None = None, assigns: Sequence[cst.Assign] | None = None) -> list[str] | None:
    """The string `expr` makes of a word of `argv` read by its place (`sys.argv[1]`), handed down
    through the names and parameters between, where `argv` is known; None where it reads no such
    word, or `argv` is not known:

        def get_everything(config_path):
            module_path = config_path.replace('/', '.').replace('.py', '')
            return importlib.import_module(module_path).everything()
        def main(config_path): ... get_everything(config_path) ...
        main(sys.argv[1])

    with `--args 'config.py ...'`: `config` (before: no value; the import stayed named). `calls`,
    `assigns`: as `values`'."""
    if argv is None:
        return None
    evaluator = _Evaluator(None, "", module, tuple(argv), calls, assigns)
    result = evaluator.of(_resolved(expr, module, assigns))
    return [result] if isinstance(result, str) and evaluator.words else None


def word_read(expr: cst.BaseExpression, module: cst.Module, calls: Sequence[cst.Call] | None = None,
              assigns: Sequence[cst.Assign] | None = None) -> int | None:
    """The place of the command line's word `expr` computes a module name from (1 for `sys.argv[1]`,
    through the names and parameters between, as `_from_words` reads them); None where it reads none."""
    evaluator = _Evaluator(None, "", module, None, calls, assigns)
    evaluator.of(_resolved(expr, module, assigns))
    return evaluator.words[0] if evaluator.words else None


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
    result = _Evaluator(option, value, module, assigns=assigns).of(_resolved(expr, module, assigns))
    return result if isinstance(result, str) else None


class _Evaluator:
    """The values of the expressions a module name is computed with, from one option's value, or
    from the words of the command line (`argv`, where known) read by their place (`sys.argv[1]`);
    a name is the value it is bound to once in the module, a parameter of a function the value every
    call of the function in the module hands it (all alike)."""

    def __init__(self, option: Option | None, value: str, module: cst.Module | None = None,
                 argv: tuple[str, ...] | None = None, calls: Sequence[cst.Call] | None = None,
                 assigns: Sequence[cst.Assign] | None = None) -> None:
        self.option, self.value, self.module, self.argv = option, value, module, argv
        self.calls, self.assigns = calls, assigns  # the module's, where an index has them
        self.words: list[int] = []  # the places of the words of the command line read (`sys.argv[1]`: 1)
        self.asked: set[cst.Name] = set()

    def of(self, node: cst.BaseExpression) -> object:
        if isinstance(node, cst.SimpleString):
            return node.evaluated_value
        if isinstance(node, cst.Integer):
            return int(node.value)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self.of(node.expression)
            return -inner if isinstance(inner, int) else None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and self.option is not None \
                and node.attr.value == self.option.dest:
            return self.value
        if isinstance(node, cst.Name) and self.module is not None and node not in self.asked:
            self.asked.add(node)
            return self._name(node, self.module)
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and self._is_argv(node.value):
            return self._word(node.slice[0].slice)
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

    def _name(self, name: cst.Name, module: cst.Module) -> object:
        """The value of `name`: a parameter of the function around it that the function never binds
        again, the value every call of the function by its name hands it (one value for all); else
        the one value the module binds the name to."""
        around = mt.functions_around(module, name)
        func = around[-1] if around else None
        params = [p.name.value for p in func.params.params] if func is not None else []
        if func is None or name.value not in params:
            resolved = _resolved(name, module, self.assigns)
            return None if resolved is name else self.of(resolved)
        if mt.findall(func, cst.AssignTarget, lambda t: mt.is_name(t.target, name.value)):
            return None
        index = params.index(name.value)
        handed = set()
        for call in [c for c in (mt.findall(module, cst.Call) if self.calls is None else self.calls)
                     if mt.is_name(c.func, func.name.value)]:
            given = [a.value for a in call.args if a.keyword is not None and a.keyword.value == name.value] or \
                [a.value for a in call.args[index:index + 1] if a.keyword is None and not a.star]
            if len(given) != 1:
                return None
            handed.add(self.of(given[0]))
        return handed.pop() if len(handed) == 1 else None

    def _is_argv(self, node: cst.BaseExpression) -> bool:
        """`sys.argv`, or `argv` where the module imports it from `sys`."""
        name = dotted(node)
        return name == "sys.argv" or name == "argv" and self.module is not None and any(
            isinstance(i.module, cst.Name) and i.module.value == "sys" and not isinstance(i.names, cst.ImportStar)
            and any(mt.is_name(a.name, "argv") and a.asname is None for a in i.names)
            for i in mt.findall(self.module, cst.ImportFrom))

    def _word(self, index: cst.BaseSlice) -> str | None:
        """The word of the command line `sys.argv[index]` reads, counted from 1 (`sys.argv[0]`, the
        script, and a place counted from the end are none)."""
        at = self.of(index.value) if isinstance(index, cst.Index) else None
        if not isinstance(at, int) or at < 1:
            return None
        self.words.append(at)
        return self.argv[at - 1] if self.argv is not None and at <= len(self.argv) else None

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
