"""Small builders for the nodes rewrites add, formatted as a person would write them."""

from __future__ import annotations

import re

import libcst as cst

NO_SPACE = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def keyword(name: str, code: str) -> cst.Arg:
    """`name=code`."""
    return cst.Arg(keyword=cst.Name(name), value=cst.parse_expression(code), equal=NO_SPACE)


def append_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """Add `arg` last, in the call's layout: after `, ` on one line, on a line of its own when
    the arguments are one per line, and before a trailing comma or a `)` on its own line."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[arg])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        return call.with_changes(args=[*args, arg.with_changes(comma=last.comma)])
    separator = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) \
        else call.whitespace_before_args
    if not isinstance(separator, cst.ParenthesizedWhitespace):
        separator = cst.SimpleWhitespace(" ")
    last = last.with_changes(comma=cst.Comma(whitespace_after=separator),
                             whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args[:-1], last, arg.with_changes(whitespace_after_arg=args[-1].whitespace_after_arg)])


def add_keyword(call: cst.Call, name: str, code: str, spread: bool = False, override: bool = False) -> cst.Call:
    """`name=code` added to a call that gives no `name` for certain, by what the analysis found
    (`Facts.keyword_given`, the one question each rewrite that adds a keyword asks first: a value
    written for it is the rewrite's to keep or to edit where it is written). Where no `**` mapping of
    the call may pass `name` (not `spread`), it goes last (`append_arg`). Where one may, a keyword
    beside it would be given twice, a TypeError ("got multiple values for keyword argument"), so
    it goes into the mapping, a default that the mapping's own entry replaces (the user's value
    wins, as a keyword the call writes out is kept):

        trange(n, **opts)  ->  trange(n, **{"disable": not is_main_process(), **opts})

    or, `override`, a value that replaces the mapping's entry:

        os.makedirs(path, **opts)  ->  os.makedirs(path, **{**opts, "exist_ok": True})

    Several `**` mappings become one, in their order, at the first one's place."""
    stars = [a for a in call.args if a.star == "**"]
    if not spread or not stars:
        return append_arg(call, keyword(name, code))
    unpacked = ", ".join(f"**{cst.Module([]).code_for_node(a.value)}" for a in stars)
    merged = cst.parse_expression(f'{{{unpacked}, "{name}": {code}}}' if override else
                                  f'{{"{name}": {code}, {unpacked}}}')
    args = [a.with_changes(value=merged) if a is stars[0] else a for a in call.args if a.star != "**" or a is stars[0]]
    args[-1] = args[-1].with_changes(comma=call.args[-1].comma)
    return call.with_changes(args=args)


def either(value: cst.BaseExpression, code: str) -> cst.BaseExpression:
    """`value or code`, the program's test kept first (in parentheses where `or` would bind
    tighter than it: `a if b else c`, a lambda, `:=`); `code` alone in place of a literal False."""
    if isinstance(value, cst.Name) and value.value == "False":
        return cst.parse_expression(code)
    if isinstance(value, (cst.IfExp, cst.Lambda, cst.NamedExpr)) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BooleanOperation(left=value, operator=cst.Or(), right=cst.parse_expression(code))


def drop_stale_comment(edits, stmt: cst.CSTNode, stale: re.Pattern, why: str) -> None:
    """Drop the comment at the end of the statement `stmt` when it matches `stale`: it describes
    what an edit in the statement replaced (`device = 0  # shorthand for cuda:0` once 0 is
    `local_rank()`). Call it once per statement."""
    comment = stmt.trailing_whitespace.comment if isinstance(stmt, cst.SimpleStatementLine) else None
    if comment is not None and stale.search(comment.value):
        edits.replace(stmt, _without_comment, f"comment `{comment.value}` dropped: {why}")


def _without_comment(stmt: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    trailing = stmt.trailing_whitespace.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
    return stmt.with_changes(trailing_whitespace=trailing)


def module_of(wrapped: cst.BaseExpression) -> cst.Attribute:
    """`model` -> `model.module`: the user's model behind the DistributedDataParallel wrapper."""
    return cst.Attribute(value=wrapped, attr=cst.Name("module"))


def bare_model(edits, expr: cst.BaseExpression, proven: bool) -> cst.BaseExpression:
    """The user's model behind `expr`: `model.module` where `model` is `proven` to hold the
    wrapper (`models.holds_wrapper` says WRAPPER), `unwrap(model)` where it may also hold the
    bare model."""
    if proven:
        return module_of(expr)
    edits.add_import("ddpify_runtime", "unwrap")
    return call("unwrap", expr)


def call(func: str, *args: cst.BaseExpression) -> cst.Call:
    """`func(args...)` around existing expressions."""
    return cst.Call(cst.Name(func), [cst.Arg(a) for a in args])
