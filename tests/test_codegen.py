"""A module printed without LibCST's per-node hooks (ddpify.syntax.codegen): the same text as
LibCST's own print, and none of the hooks' Python frames on the way."""

from pathlib import Path

import libcst as cst
import pytest
from libcst._nodes.internal import CodegenState

from ddpify.convert import convert
from ddpify.syntax import codegen
from ddpify.syntax.lines import positions

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
