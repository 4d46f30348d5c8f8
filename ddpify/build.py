"""Small builders for the nodes rewrites add, formatted as a person would write them."""

from __future__ import annotations

import libcst as cst

NO_SPACE = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def keyword(name: str, code: str) -> cst.Arg:
    """`name=code`."""
    return cst.Arg(keyword=cst.Name(name), value=cst.parse_expression(code), equal=NO_SPACE)


def append_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """Add `arg` last, keeping a trailing comma (and its line break) if the call has one."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[arg])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        return call.with_changes(args=[*args, arg.with_changes(comma=last.comma)])
    last = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args[:-1], last, arg])


def call(func: str, *args: cst.BaseExpression) -> cst.Call:
    """`func(args...)` around existing expressions."""
    return cst.Call(cst.Name(func), [cst.Arg(a) for a in args])
