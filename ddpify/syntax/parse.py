"""Parsing a script, for `convert` and `check` alike: Python's own judgement first (code that
CPython does not compile is an input error, located where CPython locates it), then LibCST's
parser with room to recurse.

    >>> parse_module("x = 1\\n").code
    'x = 1\\n'
    >>> input_error("t.py", b"x = (\\n", cst.ParserSyntaxError("", lines=["x = (\\n"], raw_line=2, raw_column=0))
    "t.py:1:5: cannot parse: '(' was never closed"
    >>> input_error("t.py", b"return 1\\n", SyntaxError("'return' outside function", ("t.py", 1, 1, "", 1, 9)))
    "t.py:1:1: cannot parse: 'return' outside function"
"""

from __future__ import annotations

import ast
import codecs
import io
import os
import sys
import tokenize
import warnings

import libcst as cst

# LibCST walks the tree recursively: long implicit string concatenations and deeply nested
# expressions (pydoc's topics.py) need more than Python's default limit of 1000 frames.
RECURSION_LIMIT = 20_000
# What `python script.py` compiles under: deeper code does not run, so it is not converted
# (and CPython's compiler, which recurses in C, must not run under RECURSION_LIMIT).
PYTHON_RECURSION_LIMIT = 1000
# LibCST nests `a and b and c` one level per term: past this many, its parser and codegen overflow.
LONGEST_CHAIN = 2000

# Exceptions of `parse_module` that mean "the input is not a script ddpify can read" (exit 2).
INPUT_ERRORS = (cst.ParserSyntaxError, SyntaxError, UnicodeDecodeError)

# The code `compiled` noted (a notebook's cells together, which `notebook.to_script` compiles to
# name the cell of an error), taken by the next `parse_module`: at most one.
_COMPILED: list[str] = []


def parse_module(source: str | bytes) -> cst.Module:
    """Parse `source` with LibCST, once CPython has compiled it. Raises `SyntaxError` (CPython's,
    with its location) for code that does not compile, or that is nested too deeply to;
    `libcst.ParserSyntaxError` for code LibCST cannot parse; `UnicodeDecodeError`."""
    if not _compiled_already(source):
        python_compile(source)
    _refuse_long_chains(source)
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        module = _parse_tabs_expanded(source)
    except cst.CSTLogicError as exc:  # LibCST's own failure on code CPython accepts
        raise SyntaxError(f"not supported: LibCST cannot parse this code ({one_line(str(exc))})") from exc
    except cst.ParserSyntaxError as exc:  # valid Python (CPython compiled it) that LibCST cannot read
        raise SyntaxError(f"not supported: valid Python that LibCST, which ddpify rewrites with, cannot "
                          f"parse ({one_line(exc.message)})", ("", exc.raw_line, exc.raw_column + 1, "", None, None)
                          ) from None
    if source[-1:] in ("\r", b"\r") and not module.has_trailing_newline:
        module = module.with_changes(has_trailing_newline=True)  # LibCST drops a CR-only file's last CR
    if module.default_indent.strip(" \t"):
        raise SyntaxError("a form feed in the indentation, which ddpify cannot rewrite: use spaces",
                          ("", _form_feed_line(module.code), 1, "", None, None))
    return module


def _parse_tabs_expanded(source: str | bytes) -> cst.Module:
    """LibCST's parse of `source`; where it fails and lines are indented with tabs and spaces
    mixed (which Python reads with tabs to the next multiple of 8, and refuses where the width
    would matter), those indentations written with spaces, as Python reads them, and parsed
    again: LibCST's tokenizer finds no block for such a dedent (improved-wgan-pytorch's train.py
    of decision 0046's held-out half). The output keeps the spaces."""
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError:
        expanded = _expand_indentation(source)
        if expanded is None:
            raise
        return cst.parse_module(expanded)


def _expand_indentation(source: str | bytes) -> str | None:
    """`source` with the tabs of each line's indentation expanded to Python's widths, where a line
    mixes tabs and spaces there, outside strings that span lines; None where none does."""
    text = source.decode("utf-8") if isinstance(source, bytes) else source
    inside: set[int] = set()  # lines that continue a string (their whitespace is the string's)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return None
    lines = text.splitlines(keepends=True)
    changed = False
    for number, line in enumerate(lines, 1):
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if number not in inside and "\t" in indent and " " in indent:
            lines[number - 1] = indent.expandtabs(8) + line[len(indent):]
            changed = True
    return "".join(lines) if changed else None


def compiled(code: str) -> None:
    """Note that `code` compiles (`python_compile` raised nothing): the next `parse_module`, of the
    same code, does not compile it again (a notebook's script was compiled twice, its cells
    together to name the cell of an error, then as the script parsed)."""
    _COMPILED[:] = [code]


def _compiled_already(source: str | bytes) -> bool:
    """Is `source` the code `compiled` noted last (taken: asked once), the same to CPython's
    compiler: the same text, or bytes that are its UTF-8 with no BOM and no coding declaration on
    their first two lines (which `compile` would decode them by)?"""
    noted, _COMPILED[:] = _COMPILED[:], []
    if not noted:
        return False
    if isinstance(source, str):
        return source == noted[0]
    if source.startswith(codecs.BOM_UTF8) or b"coding" in b"\n".join(source.split(b"\n", 2)[:2]):
        return False
    try:
        return source.decode("utf-8") == noted[0]
    except UnicodeDecodeError:
        return False


def python_compile(source: str | bytes) -> None:
    """Compile `source` as `python script.py` would; raise its `SyntaxError` (a `RecursionError`
    or `MemoryError` of the compiler becomes one: "too deeply nested")."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(PYTHON_RECURSION_LIMIT)
    try:
        with warnings.catch_warnings():  # the user's code's SyntaxWarnings are not ddpify's to show
            warnings.simplefilter("ignore")
            compile(source, "<input>", "exec", dont_inherit=True)
    except (RecursionError, MemoryError) as exc:
        raise SyntaxError(f"too deeply nested for Python to compile ({type(exc).__name__})") from None
    except ValueError as exc:  # a NUL byte
        raise SyntaxError(one_line(str(exc))) from None
    finally:
        sys.setrecursionlimit(limit)


def _refuse_long_chains(source: str | bytes) -> None:
    """Raise `SyntaxError` for an `and`/`or` chain longer than `LONGEST_CHAIN` terms: CPython
    keeps it flat, LibCST nests it one level per term, and 10,000 levels overflow the C stack
    (a segfault, not an exception). The exact count (`ast`) runs only where a crude one is high."""
    text = source if isinstance(source, bytes) else source.encode("utf-8", "replace")
    if text.count(b" and ") + text.count(b" or ") < LONGEST_CHAIN:
        return
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BoolOp) and len(node.values) > LONGEST_CHAIN:
            raise SyntaxError(f"an `and`/`or` chain of {len(node.values)} terms, longer than ddpify can "
                              f"rewrite ({LONGEST_CHAIN})", ("", node.lineno, node.col_offset + 1, "", None, None))


PYTHON_SUFFIXES = ("", ".py", ".pyw", ".ipynb")  # a file named otherwise that does not parse is no script


def input_error(name: str, data: bytes, exc: Exception) -> str:
    """The one line (`name:line:col: cannot parse: message`) for an exception of `INPUT_ERRORS`;
    located in the imported module that raised it when `exc.path` names one (ddpify.inputs.program)."""
    path = getattr(exc, "path", None)
    if path is not None and str(path) != name:
        name, data = str(path), path.read_bytes()
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in PYTHON_SUFFIXES:  # README.md given by mistake: not a Python error
        return f"{name}: not a Python file ({suffix} does not parse as Python): ddpify converts .py scripts " \
               "and .ipynb notebooks"
    if isinstance(exc, cst.ParserSyntaxError):
        return syntax_error(name, data, exc)
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f"{name}:{exc.lineno}:{exc.offset or 1}: cannot parse: {one_line(exc.msg)}"
    if isinstance(exc, SyntaxError):
        return f"{name}: cannot parse: {one_line(exc.msg or str(exc))}"
    return f"{name}: cannot parse: {one_line(str(exc))}"


def syntax_error(name: str, data: bytes, exc: cst.ParserSyntaxError) -> str:
    """`name:line:col: cannot parse: message` where Python itself reports the error (LibCST's
    parser often points a line or more later); LibCST's words when Python compiles the code."""
    try:
        python_compile(data)
    except SyntaxError as py:
        if py.lineno is not None:
            return f"{name}:{py.lineno}:{py.offset or 1}: cannot parse: {one_line(py.msg)}"
    except UnicodeDecodeError:
        pass
    return f"{name}:{exc.raw_line}:{exc.raw_column + 1}: cannot parse: {one_line(exc.message)}"


def _form_feed_line(code: str) -> int:
    return next((n for n, line in enumerate(code.split("\n"), 1)
                 if "\f" in line[:len(line) - len(line.lstrip())] and line.strip()), 1)


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines too) made one space."""
    return " ".join(text.split())
