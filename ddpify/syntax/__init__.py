"""The syntax layer: parsing, names, shapes of code and the facts of one walk."""

from ddpify.syntax import node_hash  # noqa: F401  (nodes hash in C from here on)
