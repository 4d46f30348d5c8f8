"""Whole-script behaviour across rewrites: files left alone, rewrite selection."""

from __future__ import annotations

import pytest

from ddpify.convert import convert
from ddpify.output.report import NOTE
from tests.support.snippets import run, script


@pytest.mark.parametrize("code, reason", [
    ("import torch.distributed as dist\ndist.init_process_group('gloo')\n" + script(), "already distributed"),
    ("from ddpify_runtime import init_distributed_mode\n" + script(), "already converted"),
    ("import torch\nmodel = torch.nn.Linear(2, 1)\nprint(model(torch.randn(1, 2)))\n", "no training loop"),
])
def test_files_left_alone_are_byte_identical_with_a_note(code, reason):
    result = convert(code)
    assert not result.changed
    assert [c.kind for c in result.changes] == [NOTE] and reason in result.changes[0].message


def test_only_and_skip_select_rewrites():
    only, _ = run(script(), only=frozenset({"wrap-model"}))
    assert "DistributedDataParallel(model" in only and "init_distributed_mode" not in only
    skipped, _ = run(script(), skip=frozenset({"wrap-model"}))
    assert "DistributedDataParallel(model" not in skipped and "init_distributed_mode()" in skipped


@pytest.mark.parametrize("framework", ["from accelerate import Accelerator", "import deepspeed",
                                       "import horovod.torch as hvd", "import lightning as L"])
def test_scripts_distributed_by_a_framework_are_left_alone(framework):
    result = convert(framework + "\n" + script())
    assert not result.changed and "distributed by" in result.changes[0].message
