"""download-first: download a data set once per node, before the other processes read it.

    train_set = datasets.MNIST("data", train=True, download=True, transform=transform)
->
    with main_process_first():
        train_set = datasets.MNIST("data", train=True, download=True, transform=transform)

Every process downloading and unpacking into the same folder at once corrupts it.
`main_process_first()` (runtime) runs the block on each node's local rank 0 first, then on the
other processes, which find the files in place. Adjacent downloads share one block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.syntax import matchers as mt

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "download-first"
SUMMARY = "download data sets on each node's first process before the others read them"

def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    for call in facts.calls:
        download = mt.keyword(call, "download")
        if download is not None and mt.is_literal_true(download.value):
            stmt = facts.statement(call)
            if isinstance(stmt, cst.SimpleStatementLine):
                edits.enclose(stmt, "with main_process_first():")
                edits.record(stmt, "downloaded by each node's first process before the others read it")
                edits.add_import("ddpify_runtime", "main_process_first")
