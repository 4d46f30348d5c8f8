"""Named shapes of code that several rewrites look for, in one place."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from ddpify.names import dotted

# Loops over data are often written through one of these; the loader is the first argument.
ITERATION_WRAPPERS = {"enumerate", "tqdm", "iter", "zip", "list", "trange", "cycle"}

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
    device_ids dtype __call__ __class__
""".split())

RANGE_CALL = m.Call(func=m.Name("range"))
STRING_LIST = m.List() | m.Tuple()
IS_AVAILABLE_TEST = m.Call(func=m.Attribute(attr=m.Name("is_available")))


def strip_iteration(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`enumerate(tqdm(train_loader))` -> `train_loader`."""
    while isinstance(expr, cst.Call) and dotted(expr.func) is not None and expr.args \
            and dotted(expr.func).split(".")[-1] in ITERATION_WRAPPERS:
        expr = expr.args[0].value
    return expr


def is_counting(iter_expr: cst.BaseExpression) -> bool:
    """`range(...)` or a literal list: a loop over numbers or phases, not over data."""
    return m.matches(strip_iteration(iter_expr), RANGE_CALL | STRING_LIST)


def is_epoch_loop(loop: cst.For | cst.While) -> bool:
    """A loop that can repeat passes over the data: `for epoch in range(...)`, any `while`."""
    if isinstance(loop, cst.While):
        return True
    return not m.matches(strip_iteration(loop.iter), STRING_LIST)


def is_optimizer(qualified: str | None, call: cst.Call) -> bool:
    if m.matches(call.func, OPTIMIZER_FACTORY):
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


def has_double_star(call: cst.Call) -> bool:
    return any(a.star == "**" for a in call.args)


def is_simple_reference(expr: cst.BaseExpression) -> bool:
    """A name, attribute or subscript: cheap and safe to evaluate twice."""
    if isinstance(expr, cst.Subscript):
        return is_simple_reference(expr.value)
    return dotted(expr) is not None


PARSE_ARGS = m.Call(func=m.Attribute(attr=m.Name("parse_args") | m.Name("parse_known_args")))


def parse_args_calls(facts) -> list[cst.Call]:
    """`parser.parse_args()` / `parse_known_args()` on a parser of the `argparse` module."""
    if not facts.imports.imports_module("argparse"):
        return []
    return [c for c in facts.calls if m.matches(c, PARSE_ARGS)]


MAIN_GUARD = m.If(test=m.Comparison(left=m.Name("__name__")))
DOCSTRING = m.SimpleStatementLine(body=[m.Expr(m.SimpleString() | m.ConcatenatedString())])
# What may come before a top-level script's first real statement.
PREAMBLE = (m.SimpleStatementLine(body=[m.AtLeastN(m.Import() | m.ImportFrom(), n=1)])
            | DOCSTRING | m.FunctionDef() | m.ClassDef())


PARAMETERS_ATTR = m.Attribute(attr=m.Name("parameters") | m.Name("named_parameters"))
# nanoGPT/minGPT build the optimizer in a method of the model
OPTIMIZER_FACTORY = m.Attribute(attr=m.Name("configure_optimizers"))


def dotted_matcher(name: str) -> m.BaseMatcherNode:
    """Matches the expression `a.b.c` exactly."""
    *base, last = name.split(".")
    if not base:
        return m.Name(last)
    return m.Attribute(value=dotted_matcher(".".join(base)), attr=m.Name(last))


def references(node: cst.CSTNode, name: str) -> list[cst.CSTNode]:
    """Uses of the variable `name` (or dotted `self.x`) in `node`: not `args.model`'s attribute
    name, not the keyword of `f(model=...)`."""
    if "." in name:
        return m.findall(node, dotted_matcher(name))
    return [n for n in variables(node) if n.value == name]


def variables(node: cst.CSTNode) -> list[cst.Name]:
    """The names read as variables in `node` (not attribute names, not keywords)."""
    not_variables = {id(a.attr) for a in m.findall(node, m.Attribute())}
    not_variables |= {id(a.keyword) for a in m.findall(node, m.Arg(keyword=m.Name()))}
    return [n for n in m.findall(node, m.Name()) if id(n) not in not_variables]


def is_device_move(call: cst.Call) -> bool:
    """`Net().to(device)`, `model.cuda()`: the call moves a module to a device."""
    return m.matches(call.func, m.Attribute(attr=m.Name("to") | m.Name("cuda")))


_WRITE_MODE = m.SimpleString(value=m.MatchIfTrue(lambda v: any(c in v.strip("'\"") for c in "wax")))
OPEN_FOR_WRITING = m.Call(func=m.Name("open"), args=[m.Arg(), m.Arg(value=_WRITE_MODE), m.ZeroOrMore()]) | m.Call(
    func=m.Name("open"), args=[m.ZeroOrMore(), m.Arg(keyword=m.Name("mode"), value=_WRITE_MODE), m.ZeroOrMore()])
# `if is_main_process():`, `if rank == 0:`, `if args.local_rank in (-1, 0):` ...
RANK_CHECK = m.Name(value=m.MatchIfTrue(lambda v: "rank" in v or v in ("is_main_process", "is_main"))) | m.Attribute(
    attr=m.Name(value=m.MatchIfTrue(lambda v: "rank" in v or v in ("is_main_process", "is_main"))))

IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
