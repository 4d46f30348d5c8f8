"""ddpify's own import graph has no circle, type-only imports included (issue 22)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ddpify"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the ddpify modules it imports anywhere in its text (under `TYPE_CHECKING` and
    inside functions too). `from ddpify.x import y` counts `ddpify.x.y` when that is a module."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *filter(None, [base])])
                targets |= {base} | {f"{base}.{a.name}" for a in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path that starts and ends at the same module, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_find_cycle_reports_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_graph_sees_type_only_and_relative_imports():
    graph = import_graph()
    assert "ddpify.syntax.facts" in graph["ddpify.analysis.models"]
    assert "ddpify.check.context" in graph["ddpify.check.rule"]  # under TYPE_CHECKING


def test_ddpify_has_no_import_circle():
    assert find_cycle(import_graph()) is None


def test_the_syntax_layer_imports_no_later_stage():
    """syntax/ is the first stage of the pipeline: it reads what it needs of a program through
    `facts.Files`, not by importing the layer that reads files."""
    graph = import_graph()
    syntax = {name for name in graph if name.startswith("ddpify.syntax")}
    later = {name: sorted(t for t in graph[name] if t not in syntax and t != "ddpify") for name in syntax}
    assert {name: targets for name, targets in later.items() if targets} == {}
