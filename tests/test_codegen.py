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
