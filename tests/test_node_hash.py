"""LibCST nodes hash by identity, in C (ddpify.syntax.node_hash): every node class, the same
answers as LibCST's own hash gives a dict or a set."""

import libcst as cst

from ddpify.syntax.node_hash import _PYTHON_HASH, node_classes


def test_every_node_class_hashes_in_c():
    python = [cls.__name__ for cls in node_classes() if cls.__hash__ is not object.__hash__]
    assert python == []
    assert len(node_classes()) > 300  # LibCST's node classes, not a part of them


def test_nodes_are_keys_by_identity():
    module = cst.parse_module("model = Net()\nmodel = Net()\n")
    first, second = (stmt.body[0].value for stmt in module.body)
    assert first.deep_equals(second) and first != second
    index = {first: 1, second: 2}
    assert index[first] == 1 and index[second] == 2 and len({first, second, first}) == 2
    assert hash(first) == object.__hash__(first) and _PYTHON_HASH(first) == id(first)


def test_node_classes_answer_instance_checks_by_their_bases_in_c():
    """`isinstance` against a node class ran ABCMeta's Python `__instancecheck__`; the classes
    now check in C, with the answers of their bases for every pair of node classes."""
    from abc import ABCMeta

    classes = node_classes()
    assert not [cls.__name__ for cls in classes if isinstance(cls, ABCMeta)]
    assert all(issubclass(a, b) == (b in a.__mro__) for a in classes for b in classes)
    assert isinstance(cst.Name("x"), cst.BaseExpression) and not isinstance("x", cst.CSTNode)
    assert not isinstance(cst.Name("x"), cst.Call) and isinstance(cst.Name("x"), (cst.Call, cst.Name))
