"""The runtime's public API as its source declares it: one `__all__`, grouped by the section each
name is defined in (the `# ---- title` banners that docs/runtime.md is generated from). Read with
`ast`, without importing torch."""

from __future__ import annotations

import ast
import re
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[1] / "runtime" / "__init__.py"


def _source():
    text = RUNTIME.read_text(encoding="utf-8")
    return text, ast.parse(text)


def test_all_is_one_list_naming_every_public_function_and_class_once():
    """A reader (and `from ddpify_runtime import *`) sees the whole API in one place; upper-case
    constants are the runtime's settings, not API."""
    _, tree = _source()
    assignments = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AugAssign))
                   and "__all__" in ast.unparse(n.targets[0] if isinstance(n, ast.Assign) else n.target)]
    assert len(assignments) == 1 and isinstance(assignments[0], ast.Assign)
    names = ast.literal_eval(assignments[0].value)
    public = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(public)


def test_each_name_is_defined_under_the_banner_its_all_group_names():
    """`__all__`'s `# group` comments and the `# ---- title` banners agree: a function under a
    banner that does not describe it (rank queries under "error hints") shows up here and in the
    generated API page."""
    text, tree = _source()
    start = text.index("__all__ = [")
    group = None
    grouped = {}
    for line in text[start:text.index("]\n", start)].splitlines()[1:]:
        comment = re.match(r"\s*# (.+)$", line)
        if comment:
            group = comment.group(1)
            continue
        for name in re.findall(r'"(\w+)"', line):
            grouped[name] = group
    banners = [(n, m.group(1)) for n, line in enumerate(text.splitlines(), 1) if (m := re.match(r"# -{3,} (.+)$", line))]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in grouped:
            banner = [title for line, title in banners if line < node.lineno][-1]
            assert grouped[node.name] is not None and banner.lower().startswith(grouped[node.name]), (node.name, banner)
    assert set(grouped) == set(ast.literal_eval(text[start + len("__all__ = "):text.index("]\n", start) + 1]))
