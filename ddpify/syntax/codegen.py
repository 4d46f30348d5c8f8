"""A module's code (or one node's) as LibCST prints it, without the hooks nobody here listens to.

LibCST prints a tree by calling, for each node, `state.before_codegen(node)`, its own
`_codegen_impl`, `state.after_codegen(node)`, each inside `with
state.record_syntactic_position(node)` (a `contextlib.contextmanager`: a generator and its
manager built, entered and left per node), and `state.add_token(text)` per token. Only its
position provider listens to those hooks; `Module.code` pays them all the same, about a third
of its time. `State` is a `CodegenState` whose hooks do nothing and cost (almost) nothing: the
tokens appended by the list's own `append`, the before and after hooks `id` (a builtin that
ignores the node), the position a shared context that enters and leaves doing nothing. The text
is the same token for token (the hooks add none); `tests/test_codegen.py` holds it against
LibCST's own print.

    code(module)              # == module.code
    code_for_node(module, n)  # == module.code_for_node(n)
"""

from __future__ import annotations

import libcst as cst
# LibCST's private API, as its own position providers (and ddpify.syntax.lines) use it:
# pyproject.toml pins the tested range
from libcst._nodes.internal import CodegenState


class _Nothing:
    """A context manager that enters and leaves doing nothing (`contextlib.nullcontext` without
    its state), shared by every node printed."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


NOTHING = _Nothing()


class State(CodegenState):
    """LibCST's print state, its hooks made (almost) free; subclasses that listen to one
    (ddpify.syntax.lines) define it again."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.add_token = self.tokens.append  # type: ignore[method-assign,assignment]
        if type(self).before_codegen is CodegenState.before_codegen:
            self.before_codegen = id  # type: ignore[method-assign,assignment]
        if type(self).after_codegen is CodegenState.after_codegen:
            self.after_codegen = id  # type: ignore[method-assign,assignment]

    def record_syntactic_position(  # type: ignore[override]
            self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
            end_node: cst.CSTNode | None = None) -> _Nothing:
        return NOTHING


def code_for_node(module: cst.Module, node: cst.CSTNode) -> str:
    """`module.code_for_node(node)`: `node` printed with `module`'s indentation and newline."""
    state = State(module.default_indent, module.default_newline)
    node._codegen(state)
    return "".join(state.tokens)


def code(module: cst.Module) -> str:
    """`module.code`."""
    return code_for_node(module, module)
