"""Named shapes of code that several rewrites look for, in one place.

Plain predicates over LibCST nodes rather than `libcst.matchers`, whose import alone costs
more than parsing a typical script: `findall` walks a subtree, the `is_*` functions test one
node.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Iterator, TypeVar

import libcst as cst

from ddpify.syntax.names import dotted

# Loops over data are often written through one of these; the loader is the first argument.
ITERATION_WRAPPERS = {"enumerate", "tqdm", "iter", "zip", "list", "trange", "cycle", "track"}  # `track`: rich.progress

OPTIMIZER_NAMES = {
    "SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "ASGD", "LBFGS", "NAdam", "RAdam",
    "RMSprop", "Rprop", "SparseAdam", "Adafactor", "Lion", "LAMB", "Lamb", "LARS", "Muon",
    "AdamW8bit", "Adam8bit", "PagedAdamW",
}

# Attributes that DistributedDataParallel answers itself (nn.Module's API and DDP's own); any
# other attribute of a wrapped model must go through `.module`.
MODULE_API = frozenset("""
    training train eval forward parameters named_parameters buffers named_buffers children
    named_children modules named_modules to to_empty cuda cpu xpu ipu mtia half float double
    bfloat16 type zero_grad requires_grad_ apply register_buffer register_parameter
    register_module add_module get_submodule get_parameter get_buffer register_forward_hook
    register_forward_pre_hook register_full_backward_hook register_full_backward_pre_hook
    register_backward_hook share_memory extra_repr compile no_sync join join_hook module
    device_ids __call__ __class__
""".split())

# methods that return the object they are called on (`__iter__`: an iterator of it, as `iter(x)` is)
SELF_RETURNING = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "double", "bfloat16",
                            "requires_grad_", "share_memory", "to_empty", "__iter__"})

N = TypeVar("N", bound=cst.CSTNode)


# Node types whose fields are not declared in source order: the order to read them in.
_SOURCE_ORDER = {
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes of `node` in source order (syntax nodes; whitespace may come in any
    order). Read from the node's fields: LibCST's own `children` rebuilds the node to find
    them, at several times the cost."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = _SOURCE_ORDER.get(type(node), ()) + tuple(
            f.name for f in dataclasses.fields(node) if f.name not in _SOURCE_ORDER.get(type(node), ()))
    return _nodes_in(node, names)


# Fields that hold only whitespace, comments and punctuation (LibCST's own names: checked
# against the annotations of every node class, no field mixes them with syntax).
TRIVIA_FIELDS = frozenset({
    "colon", "comma", "comment", "dot", "empty_lines", "equal", "first_colon", "first_line", "footer", "header",
    "last_line", "lbrace", "lbracket", "leading_lines", "leading_whitespace", "lines_after_decorators", "lpar",
    "newline", "rbrace", "rbracket", "relative", "rpar", "second_colon", "semicolon", "trailing_comma",
    "trailing_whitespace", "whitespace",
})
_SYNTAX_FIELDS: dict[type, tuple[str, ...]] = {}


def syntax_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`children(node)` without the whitespace, comments and punctuation: about a third of the
    nodes of a file, and the only ones an analysis never asks about."""
    names = _SYNTAX_FIELDS.get(type(node))
    if names is None:
        children(node)  # fills _FIELDS for this type
        names = _SYNTAX_FIELDS[type(node)] = tuple(
            n for n in _FIELDS[type(node)] if n not in TRIVIA_FIELDS and not n.startswith("whitespace_"))
    return _nodes_in(node, names)


def _nodes_in(node: cst.CSTNode, names: tuple[str, ...]) -> list[cst.CSTNode]:
    """The nodes held by the fields `names` of `node`, in that order (lists flattened)."""
    found = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            found += [v for v in value if _NODE_TYPES.get(type(v)) or _is_node_type(type(v))]
        else:
            is_node = _NODE_TYPES.get(kind)
            if is_node is None:  # (a `str` or a sentinel is known as such after its first time too)
                is_node = _is_node_type(kind)
            if is_node:
                found.append(value)
    return found


# Whether a type is a LibCST node, by type. `isinstance(value, cst.CSTNode)` asks LibCST's
# abstract base class, a Python call each time, and the first time it answers no for a type
# (a `str`, a `MaybeSentinel`) it checks that type against every node class there is.
_NODE_TYPES: dict[type, bool] = {}


def _is_node_type(kind: type) -> bool:
    _NODE_TYPES[kind] = cst.CSTNode in kind.__mro__
    return _NODE_TYPES[kind]


def _subclasses(base: type) -> frozenset[type]:
    found, todo = {base}, [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return frozenset(found)


# A statement as it sits in a block: `type(node) in STATEMENTS` answers as `isinstance(node,
# (cst.SimpleStatementLine, cst.BaseCompoundStatement))` without asking LibCST's abstract classes.
STATEMENTS = frozenset({cst.SimpleStatementLine, *_subclasses(cst.BaseCompoundStatement)})


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and the syntax below it, in source order: not the whitespace, comments and
    punctuation (`syntax_children`), about 60% of a file's nodes, which no question asks about
    (a search for names, calls or statements finds the same nodes in the same order)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(syntax_children(current)))


def findall(node: cst.CSTNode, kind: type[N] | tuple[type, ...],
            where: Callable[[N], bool] | None = None) -> list[N]:
    """The nodes of type `kind` in `node` (itself included) for which `where` holds; `kind` a
    syntax node type (`walk` skips whitespace, comments and punctuation)."""
    return [n for n in walk(node) if isinstance(n, kind) and (where is None or where(n))]


def functions_around(module: cst.Module, node: cst.CSTNode) -> list[cst.FunctionDef]:
    """The functions whose code holds `node` (decorators and defaults included), outermost first:
    one walk down to it, not a walk of every function of the module for its calls."""
    stack: list[tuple[cst.CSTNode, tuple[cst.FunctionDef, ...]]] = [(module, ())]
    while stack:
        current, around = stack.pop()
        if current is node:
            return list(around)
        if type(current) is cst.FunctionDef:
            around = (*around, current)
        stack.extend((child, around) for child in reversed(syntax_children(current)))
    return []


def is_name(node: cst.CSTNode, *values: str) -> bool:
    """A Name (one of `values`, when given)."""
    return type(node) is cst.Name and (not values or node.value in values)


def is_attribute(node: cst.CSTNode, *attrs: str) -> bool:
    """`x.attr` for one of `attrs` (any attribute when none is given)."""
    return type(node) is cst.Attribute and (not attrs or node.attr.value in attrs)


def is_method_call(node: cst.CSTNode, *attrs: str) -> bool:
    """`x.attr(...)` for one of `attrs`."""
    return type(node) is cst.Call and is_attribute(node.func, *attrs)


def is_call_of(node: cst.CSTNode, *names: str) -> bool:
    """`name(...)` for one of `names`."""
    return type(node) is cst.Call and is_name(node.func, *names)


def sole(stmt: cst.CSTNode, kind: type[N] | tuple[type, ...]) -> N | None:
    """The small statement of a one-statement line, when it is of type `kind`: `return x`."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], kind):
        return stmt.body[0]
    return None


def is_literal_true(node: cst.CSTNode) -> bool:
    return is_name(node, "True")


def is_zero(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


def is_string_list(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.List, cst.Tuple))


def is_available_test(node: cst.CSTNode) -> bool:
    """`torch.cuda.is_available()`, `cuda.is_available()`."""
    return is_method_call(node, "is_available")


# the keyword an iterator adapter may be given its iterable by: tqdm's and enumerate's `iterable=`
# (`tqdm(iterable=train_loader, leave=False)`), rich's `track(sequence=...)`
ITERABLE_KEYWORDS = ("iterable", "sequence")


def iterated(call: cst.Call, starred: bool = True) -> list[cst.BaseExpression]:
    """What an iterator adapter's call iterates: its positional arguments (`zip(a, b)`: both;
    `enumerate(loader, start=1)`: `loader`; `zip(*loaders)`: `loaders`, unless not `starred`), or,
    with none, the one given by keyword (`tqdm(iterable=loader, position=1)`: `loader`); a bar given
    no iterable (`tqdm(total=n)`) iterates nothing."""
    given = [a for a in call.args if a.keyword is None]
    if given:
        return [a.value for a in given if starred or not a.star]
    return [a.value for a in call.args if a.keyword is not None and a.keyword.value in ITERABLE_KEYWORDS][:1]


def first_iterated(call: cst.Call) -> cst.BaseExpression | None:
    """The first iterable an adapter's call iterates (`zip(*loaders)`: `loaders`; `tqdm(iterable=
    loader)`: `loader`), None where it is given none."""
    if call.args and call.args[0].keyword is None:
        return call.args[0].value
    found = iterated(call)
    return found[0] if found else None


def strip_iteration(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`enumerate(tqdm(train_loader))` -> `train_loader`, also given by keyword (`tqdm(iterable=
    train_loader)`); `train_loader.__iter__()` -> `train_loader`."""
    while isinstance(expr, cst.Call) and dotted(expr.func) is not None:
        inner = first_iterated(expr) if dotted(expr.func).split(".")[-1] in ITERATION_WRAPPERS else None
        if inner is not None:
            expr = inner
        elif not expr.args and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "__iter__":
            expr = expr.func.value
        else:
            break
    return expr


def is_counting(iter_expr: cst.BaseExpression) -> bool:
    """`range(...)` (or Python 2's `xrange`, through six: `from six.moves import xrange`), tqdm's
    `trange(...)`, or a literal list: a loop over numbers or phases, not over data; also bound by
    an assignment expression in the loop's header (`for i in (pbar := trange(n)):`)."""
    while isinstance(iter_expr, cst.NamedExpr):
        iter_expr = iter_expr.value
    if isinstance(iter_expr, cst.Call) and (dotted(iter_expr.func) or "").rpartition(".")[2] == "trange":
        return True  # tqdm's `trange(n)` is `tqdm(range(n))`
    expr = strip_iteration(iter_expr)
    return is_call_of(expr, "range") or is_call_of(expr, "xrange") or is_string_list(expr)


def is_epoch_loop(loop: cst.For | cst.While) -> bool:
    """A loop that can repeat passes over the data: `for epoch in range(...)`, any `while`."""
    if isinstance(loop, cst.While):
        return True
    return not is_string_list(strip_iteration(loop.iter))


def literal_prefix(node: cst.BaseExpression) -> str:
    """The text a computed string starts with: `f"models.{arch}"`, `"models." + arch`,
    `"optim.{}".format(name)`."""
    if isinstance(node, cst.FormattedString) and node.parts and isinstance(node.parts[0], cst.FormattedStringText):
        return node.parts[0].value
    if isinstance(node, cst.BinaryOperation) and isinstance(node.left, cst.SimpleString):
        return str(node.left.evaluated_value)
    if isinstance(node, cst.Call) and is_attribute(node.func, "format") and isinstance(node.func.value, cst.SimpleString):
        return str(node.func.value.evaluated_value).partition("{")[0]
    return ""


def is_optimizer_factory(func: cst.BaseExpression) -> bool:
    """`model.configure_optimizers`: nanoGPT/minGPT build the optimizer in a method of the model."""
    return is_attribute(func, "configure_optimizers")


def is_optimizer(qualified: str | None, call: cst.Call) -> bool:
    if is_optimizer_factory(call.func):
        return True
    if qualified is None:
        name = dotted(call.func)
        return name is not None and name.split(".")[-1] in OPTIMIZER_NAMES
    if qualified.startswith("torch.optim.") and not qualified.startswith(("torch.optim.lr_scheduler", "torch.optim.swa_utils")):
        return qualified.split(".")[-1][:1].isupper()
    return qualified.split(".")[-1] in OPTIMIZER_NAMES


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index] if index < len(args) else None


# `DataLoader`'s parameters in the order it takes them by place
LOADER_ORDER = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
                "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator")
LOADER_PLACES = {name: i for i, name in enumerate(LOADER_ORDER)}


def loader_arg(call: cst.Call, name: str) -> cst.Arg | None:
    """The argument `name` of a `DataLoader(...)` call, by keyword or by its place:
    `DataLoader(train_set, 64, True)` passes `shuffle`."""
    return keyword(call, name) or (positional(call, LOADER_PLACES[name]) if name in LOADER_PLACES else None)


def has_double_star(call: cst.Call) -> bool:
    return any(a.star == "**" for a in call.args)


def is_simple_reference(expr: cst.BaseExpression) -> bool:
    """A name, attribute or subscript: cheap and safe to evaluate twice."""
    if isinstance(expr, cst.Subscript):
        return is_simple_reference(expr.value)
    return dotted(expr) is not None


def is_parse_args(node: cst.CSTNode) -> bool:
    """`parser.parse_args()`, `parser.parse_known_args()`."""
    return is_method_call(node, "parse_args", "parse_known_args")


def parse_args_calls(facts) -> list[cst.Call]:
    """`parser.parse_args()` / `parse_known_args()` on a parser of the `argparse` module."""
    if not facts.imports.imports_module("argparse"):
        return []
    return [c for c in facts.calls_named("parse_args", "parse_known_args") if is_parse_args(c)]


def is_main_guard(stmt: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":`."""
    return isinstance(stmt, cst.If) and isinstance(stmt.test, cst.Comparison) and is_name(stmt.test.left, "__name__")


def is_docstring(stmt: cst.CSTNode) -> bool:
    expr = sole(stmt, cst.Expr)
    return expr is not None and isinstance(expr.value, (cst.SimpleString, cst.ConcatenatedString))


def is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and bool(stmt.body) and \
        all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def is_preamble(stmt: cst.CSTNode) -> bool:
    """What may come before a top-level script's first real statement."""
    return is_import_line(stmt) or is_docstring(stmt) or isinstance(stmt, (cst.FunctionDef, cst.ClassDef))


def is_parameters_attr(node: cst.CSTNode) -> bool:
    """`model.parameters`, `model.named_parameters`."""
    return is_attribute(node, "parameters", "named_parameters")


def references(node: cst.CSTNode, name: str) -> list[cst.CSTNode]:
    """Uses of the variable `name` (or dotted `self.x`) in `node`: not `args.model`'s attribute
    name, not the keyword of `f(model=...)`."""
    if "." in name:
        return findall(node, cst.Attribute, lambda a: dotted(a) == name)
    return [n for n in variables(node) if n.value == name]


def variables(node: cst.CSTNode) -> list[cst.Name]:
    """The names read as variables in `node` (not attribute names, not keywords)."""
    nodes = list(walk(node))
    not_variables = {id(a.attr) for a in nodes if isinstance(a, cst.Attribute)}
    not_variables |= {id(a.keyword) for a in nodes if isinstance(a, cst.Arg) and a.keyword is not None}
    return [n for n in nodes if isinstance(n, cst.Name) and id(n) not in not_variables]


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier spelled in `node` (variables, attribute names, keywords)."""
    return {n.value for n in findall(node, cst.Name)}


def is_device_move(call: cst.Call) -> bool:
    """`Net().to(device)`, `model.cuda()`: the call moves a module to a device."""
    return is_attribute(call.func, "to", "cuda")


# a mode of `open` that writes: only mode letters (`"w"`, `"wb"`, `"a+"`, not a path: `"data.txt"`)
WRITE_MODE = re.compile(r"[rbt+]*[wax][rwaxbt+]*(?:[:|][a-z0-9]*)?")  # (tarfile's "w:gz")


def opens_for_writing(node: cst.CSTNode) -> bool:
    """`open(p, "w")` and any other opener given a write mode: `PathManager.open(p, "w")`,
    `fs.open(p, mode="wb")`, `gzip.open(p, "wt")`, `Path(p).open("a")`, and the archives and
    array files opened so: `zipfile.ZipFile(p, "w")`, `tarfile.open(p, "w:gz")`, `h5py.File(p, "w")`."""
    if not isinstance(node, cst.Call) or not (is_call_of(node, "open", "ZipFile") or isinstance(
            node.func, cst.Attribute) and node.func.attr.value in ("open", "ZipFile", "File")):
        return False
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    modes = positional[1:2] if is_call_of(node, "open") or len(positional) > 1 else positional[:1]
    return any(WRITE_MODE.fullmatch(string_value(m) or "") for m in modes + [
        a.value for a in node.args if a.keyword is not None and a.keyword.value == "mode"])


def is_open_for_writing(node: cst.CSTNode) -> bool:
    """The builtin `open(path, "w")`, `open(path, mode="a")` (`opens_for_writing`, of `open` only)."""
    return is_call_of(node, "open") and opens_for_writing(node)


def string_value(node: cst.CSTNode) -> str | None:
    """"x" for the literal `"x"`; None for anything else (a bytes literal is no name)."""
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of an `and` chain (`a and b and c` -> [a, b, c]), or `[test]`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return conjuncts(test.left) + conjuncts(test.right)
    return [test]


def disjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of an `or` chain (`a or b or c` -> [a, b, c]), or `[test]`: where the test is
    false, each of them is."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return disjuncts(test.left) + disjuncts(test.right)
    return [test]
