"""Parsing a script, for `convert` and `check` alike: LibCST's parser with room to recurse, and
syntax errors located where Python itself locates them.

    >>> parse_module("x = 1\\n").code
    'x = 1\\n'
    >>> syntax_error("t.py", b"x = (\\n", cst.ParserSyntaxError("", lines=["x = (\\n"], raw_line=2, raw_column=0))
    "t.py:1:5: cannot parse: '(' was never closed"
"""

from __future__ import annotations

import sys

import libcst as cst

# LibCST walks the tree recursively: long implicit string concatenations and deeply nested
# expressions (pydoc's topics.py) need more than Python's default limit of 1000 frames.
RECURSION_LIMIT = 20_000


def parse_module(source: str | bytes) -> cst.Module:
    """Parse `source` with LibCST; raises `libcst.ParserSyntaxError` (and `SyntaxError` for
    bytes whose encoding cookie is wrong)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    return cst.parse_module(source)


def syntax_error(name: str, data: bytes, exc: cst.ParserSyntaxError) -> str:
    """`name:line:col: cannot parse: message` where Python itself reports the error (LibCST's
    parser often points a line or more later); LibCST's words when Python compiles the code."""
    try:
        compile(data, name, "exec", dont_inherit=True)
    except SyntaxError as py:
        if py.lineno is not None:
            return f"{name}:{py.lineno}:{py.offset or 1}: cannot parse: {one_line(py.msg)}"
    except (ValueError, UnicodeDecodeError):
        pass
    return f"{name}:{exc.raw_line}:{exc.raw_column + 1}: cannot parse: {one_line(exc.message)}"


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines too) made one space."""
    return " ".join(text.split())
