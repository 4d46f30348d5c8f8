"""A module printed without LibCST's per-node hooks (ddpify.syntax.codegen): the same text as
LibCST's own print, and none of the hooks' Python frames on the way."""

from pathlib import Path

import libcst as cst
import pytest
from libcst._nodes.internal import CodegenState

from ddpify.convert import convert
from ddpify.syntax import codegen
from ddpify.syntax.lines import positions, statement_lines

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCES = sorted(FIXTURES.glob("*/before*.py"))[:40]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_text_is_libcsts_own(path):
    module = cst.parse_module(path.read_bytes())
    assert codegen.code(module) == module.code
    for stmt in module.body:
        assert codegen.code_for_node(module, stmt) == module.code_for_node(stmt)


@pytest.mark.parametrize("source", [
    "x = 1",  # no trailing newline
    "\r\n\r\n# header\r\nif x:\r\n\tpass\r\n",  # CRLF, tabs, a header comment
    "def f():\n    return (\n        1  # one\n    )\n\n\n# footer\n",
    "",
])
def test_the_text_is_libcsts_own_whatever_the_layout(source):
    module = cst.parse_module(source)
    assert codegen.code(module) == module.code == source


def test_no_hook_runs_python(monkeypatch):
    """LibCST's hooks (a generator-based context manager per node, the before and after calls)
    are never entered: a conversion prints its output, its report's lines and its messages' code
    with them raising."""
    def refuse(*args, **kwargs):
        raise AssertionError("a LibCST codegen hook ran")

    for hook in ("record_syntactic_position", "before_codegen", "after_codegen", "add_token"):
        monkeypatch.setattr(CodegenState, hook, refuse)
    source = (FIXTURES / "canonical" / "before.py").read_text()
    result = convert(source)
    assert result.changed and result.changes
    module = cst.parse_module(source)
    assert positions(module, [module.body[-1]])


KEPT_CASES = [  # (source, whether the kept statements' lines are copied)
    ("import os\n\nx = 1\n\n\ndef main():\n    return x\n", True),
    ("#!/usr/bin/env python\n# header\n\nimport os\n# above\nx = 1  # here\n\n# footer\n\n", True),
    ("import os\r\n\r\n@dec  # one\r\n# between\r\n@dec2\r\nclass A:\r\n    pass\r\n    # block's\r\n# next's\r\ny = 2\r\n", True),
    ("import os\nx = 1; y = 2\nif x:\n    pass\nelse:\n    pass\ns = '''\n\nz = 3\n'''\n", True),
    ("import os\nx = 1", True),  # no final newline
    ("import os\r\nx = 1  # c", True),
    ("import os\nx = 1\r", False),  # a lone carriage return at the end
    ("import os\nif x:\n\t  y = 1\n", False),  # tabs and spaces mixed in an indentation
    ("import os\nx = 1 + \\\n    2\n", True),
    ("import os\n\\\n\nx = 1\n", False),  # a line continued by a backslash before a statement
    ("import os\n@(\n  dec\n)\ndef f():\n    pass\n", False),  # ast's line of the decorator is not the `@`'s
]


def _edited(module: cst.Module) -> cst.Module:
    """`module` with its first statement replaced and a statement appended: the rest kept."""
    return module.with_changes(body=[cst.parse_statement("import sys\n"), *module.body[1:],
                                     cst.parse_statement("print(sys.argv)\n")])


@pytest.mark.parametrize("source, copied", KEPT_CASES)
def test_an_edited_module_keeps_the_text_of_what_it_kept(source, copied):
    data = source.encode()
    module = cst.parse_module(data)
    starts = statement_lines(module, data)
    output = _edited(module)
    assert codegen.code(output, module, data, starts) == output.code
    assert (codegen._kept(module, data, starts) is not None) == copied
    assert codegen.code(module, module, data, starts) == module.code


def test_a_kept_statement_is_not_printed_again(monkeypatch):
    """The kept function's lines are copied from the source: printing one raises here."""
    data = b"import os\n\n\n# the helper\ndef helper(a):\n    return (a +\n            1)\n\n\nmain()\n"
    module = cst.parse_module(data)
    starts = statement_lines(module, data)
    output = _edited(module)
    expected = output.code

    def refuse(*args, **kwargs):
        raise AssertionError("a kept statement was printed")

    monkeypatch.setattr(cst.FunctionDef, "_codegen_impl", refuse)
    assert codegen.code(output, module, data, starts) == expected


NESTED_CASES = [  # (source, whether a statement inside the edited one is copied)
    ("def main():\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n", True),
    ("class A:\n    x = 1\n    y = 2\n    # a comment\n\n    @property\n    # between\n    @dec\n    def f(self):\n"
     "        pass\n        # the block's footer\n    # the next's\n    def g(self):\n        return (1 +\n"
     "                2)\n", True),
    ("def main():\r\n    a = 1\r\n    b = 2\r\n    for i in x:\r\n        y = 2  # c\r\n        z = 3\r\n    else:\r\n"
     "        w = 4\r\n        v = 5\r\n    return a\r\n", True),
    ("def main():\n\ta = 1\n\tb = 2\n\tif x:\n\t\tb = 2\n\t\tc = 3\n\telif y:\n\t\td = 4\n\t\te = 5\n\treturn a\n",
     True),
    ("def main():\n  a = 1\n  b = 2\n  try:\n    b = 2\n    c = 3\n  except E:\n    d = 4\n    e = 5\n  finally:\n"
     "    f = 6\n    g = 7\n  return a\n", True),
    ("def main():\n    a = 1\n    b = 2\n    s = \'\'\'\n    b = 2\n\'\'\'\n    c = 3\n    d = 4\n", True),
    ("def main():\n    a = 1\n    b = 2\n    x = 1 + \\\n        2\n    c = 3\n    d = 4\n", True),
    ("def main():\n    a = 1\n    b = 2\n    \\\n\n    c = 3\n    d = 4\n", False),  # a backslash before a statement
    ("def main():\n    a = 1\n    b = 2\n    match x:\n        case 1:\n            b = 2\n            c = 3\n    return a\n",
     True),
    ("def main():\n    a = 1\n    b = 2\n    with f() as g:\n        b = 2; c = 3\n        d = 4\n    while x: y = 1\n"
     "    return a\n", True),
    ("def main():\n    a = 1\n    b = 2\n    for x in y:\n        c = 3\n        d = 4\n", True),  # inside the last
    ("def main():\n    a = 1\n    b = 2\n    c = 3\n", False),  # the edited statement's block keeps its last only
]


def _edited_inside(module: cst.Module) -> cst.Module:
    """`module` with the first statement inside its first compound statement replaced and the
    second moved into a new `if` block (one level deeper: printed, not copied), the rest kept."""
    first = module.body[0]
    body = list(first.body.body)
    moved = [cst.If(test=cst.Name("flag"), body=cst.IndentedBlock([body[1]]))] if len(body) > 2 else body[1:2]
    block = first.body.with_changes(body=[cst.parse_statement("x = 0\n"), *moved, *body[2:]])
    return module.with_changes(body=[first.with_changes(body=block), *module.body[1:]])


@pytest.mark.parametrize("source, copied", NESTED_CASES)
def test_an_edited_statement_keeps_the_text_of_the_statements_it_kept(source, copied):
    data = source.encode()
    module = cst.parse_module(data)
    starts = statement_lines(module, data)
    output = _edited_inside(module)
    assert codegen.code(output, module, data, starts) == output.code
    cut = codegen._kept(module, data, starts)[3]
    cut.edited = module.body
    kept: list = []
    printed = codegen.code_for_node(output, codegen._with_markers(output.body[0], cut, kept))
    assert bool(kept) == copied  # and copied: each marker alone on its line, at its statement's indentation
    assert [m.group(1) for m in codegen._MARKER_LINE.finditer(printed)] == [indent for indent, _ in kept]


def test_a_kept_statement_inside_an_edited_one_is_not_printed_again(monkeypatch):
    """`main`'s loop is kept while the statement above it is edited: its lines are copied from the
    source (printing a `for` raises here); the one moved into a new block is printed."""
    data = (b"import os\n\n\ndef main():\n    model = Net()\n    save(model)\n    # train\n    for x in loader:\n"
            b"        step(x)\n    return model\n")
    module = cst.parse_module(data)
    starts = statement_lines(module, data)
    output = _edited_inside(module.with_changes(body=module.body[1:]))
    output = module.with_changes(body=[module.body[0], *output.body])
    expected = output.code
    assert "    if flag:\n        save(model)\n" in expected

    def refuse(*args, **kwargs):
        raise AssertionError("a kept statement was printed")

    monkeypatch.setattr(cst.For, "_codegen_impl", refuse)
    assert codegen.code(output, module, data, starts) == expected


def test_a_kept_statement_moved_into_a_new_block_is_printed():
    """`save(model)` kept, but moved one level deeper, into a new `if` before another statement:
    its source lines have the old indentation, so the statement is printed whole."""
    data = b"def main():\n    model = Net()\n    save(model)\n    # train\n    for x in loader:\n        step(x)\n"
    module = cst.parse_module(data)
    starts = statement_lines(module, data)
    main = module.body[0]
    moved = cst.If(test=cst.Name("flag"), body=cst.IndentedBlock([main.body.body[1], cst.parse_statement("pass\n")]))
    output = module.with_changes(body=[main.with_changes(body=main.body.with_changes(
        body=[cst.parse_statement("x = 0\n"), moved, *main.body.body[1:]]))])
    assert "    if flag:\n        save(model)\n        pass\n    save(model)\n" in output.code
    assert codegen.code(output, module, data, starts) == output.code


def test_a_copied_statement_keeps_the_source_where_libcst_does_not_round_trip():
    """LibCST parses `except (E, F) :` with the space before the colon nowhere in its tree (its
    print says `except (E, F):`; the standard library's webbrowser.py): a kept statement is copied
    as the user wrote it, as a kept top-level statement is."""
    data = b"def main():\n    a = 1\n    b = 2\n    try:\n        b = 2\n    except (E, F) :\n        pass\n    c = 3\n"
    module = cst.parse_module(data)
    assert module.code.encode() != data
    starts = statement_lines(module, data)
    output = _edited_inside(module)
    assert codegen.code(output, module, data, starts) == output.code.replace("except (E, F):", "except (E, F) :")
