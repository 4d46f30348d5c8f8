"""``--sync-batchnorm``: BatchNorm -> SyncBatchNorm after ``.to(device)``, before the DDP wrap.

On the CPU there is no SyncBatchNorm (it needs CUDA): the converted script must still run under
torchrun, keep its BatchNorm layers, and say why on stderr (once, from the main process).
Fixture: ``fixtures/steps_compile_bn`` (a BatchNorm MLP trained for a step budget).
"""

from __future__ import annotations

import ast

import pytest

from ddpify.convert import Options, convert

from . import helpers as h

pytestmark = pytest.mark.slow

FIXTURE = "steps_compile_bn"
MESSAGE = "SyncBatchNorm needs CUDA"


def _converted():
    return convert((h.FIXTURES / FIXTURE / "before.py").read_bytes(), Options(sync_batchnorm=True)).code


def test_convert_sync_batchnorm_sits_between_to_device_and_the_wrap():
    lines = {}
    for node in ast.walk(ast.parse(_converted())):
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["model"]:
            value = ast.unparse(node.value)
            for key, marker in (("to", ".to(device)"), ("sync", "convert_sync_batchnorm(model)"),
                                ("ddp", "DistributedDataParallel(model")):
                if marker in value:
                    lines.setdefault(key, []).append(node.lineno)
    assert {k: len(v) for k, v in lines.items()} == {"to": 1, "sync": 1, "ddp": 1}, lines
    assert lines["to"][0] < lines["sync"][0] < lines["ddp"][0], lines


def test_sync_batchnorm_on_cpu_keeps_batchnorm_and_says_why(tmp_path):
    script = tmp_path / "after.py"
    script.write_text(_converted())
    done = h.run(h.torchrun(script, "--max-steps", "4", "--eval-every", "2", "--log-every", "2",
                            "--batch-size", "16"), tmp_path, h.env(tmp_path / "probe"))
    assert done.returncode == 0, str(done)
    print(f"\nsync-batchnorm on CPU: exit 0 in {done.wall_s:.1f} s")
    assert done.output.count(MESSAGE) == 1, str(done)
    probe = h.Probe.read(tmp_path / "probe")
    wrapped = {e["rank"]: e["classes"] for e in probe.of("ddp")}
    assert sorted(wrapped) == [0, 1]
    for classes in wrapped.values():
        assert "BatchNorm1d" in classes and "SyncBatchNorm" not in classes, classes
