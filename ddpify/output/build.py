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
