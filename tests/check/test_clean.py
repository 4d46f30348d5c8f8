"""What must come out clean: every script ddpify converted (each `fixtures/*/after.py` and
`after_fsdp.py` that differs from its `before.py`, so goldens added later are covered), a careful
hand-written DDP script, and single-GPU scripts (a note suggesting `ddpify convert`, no finding).
The one exception is a statement ddpify itself marked with a `# TODO(ddpify): ...` line: what it
could not convert may well be a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddpify.check import FRAMEWORK_NOTES, NOT_DISTRIBUTED, check

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
CONVERTED = [f"{p.parent.name}/{p.name}" for p in sorted(FIXTURES.glob("*/after*.py"))
             if p.read_bytes() != (p.parent / "before.py").read_bytes()]
SINGLE_GPU = [p.parent.name for p in sorted(FIXTURES.glob("*/before.py"))
              if b"torch.distributed" not in p.read_bytes()]


def test_the_corpus_has_converted_and_single_gpu_scripts():
    assert len(CONVERTED) >= 30 and len(SINGLE_GPU) >= 30


@pytest.mark.parametrize("case", CONVERTED)
def test_ddpify_output_is_clean(case):
    source = (FIXTURES / case).read_bytes()
    report = check(source)
    lines = source.decode().splitlines()
    unmarked = [f for f in report.findings if "TODO(ddpify)" not in lines[f.line - 2]]
    assert unmarked == [] and report.note is None


def test_a_handwritten_ddp_script_is_clean():
    report = check((REPO / "bench" / "handwritten_ddp.py").read_bytes())
    assert report.findings == [] and report.note is None


@pytest.mark.parametrize("case", SINGLE_GPU)
def test_single_gpu_scripts_get_a_note_and_no_finding(case):
    report = check((FIXTURES / case / "before.py").read_bytes())
    assert report.findings == []
    assert report.note == (None if case == "inference_only" else NOT_DISTRIBUTED)  # no note without training


def test_the_already_distributed_fixture_pads_its_validation_set():
    """fixtures/already_ddp is hand-written DDP that ddpify leaves alone: its validation
    DistributedSampler repeats samples whenever 512 does not divide by the number of processes."""
    report = check((FIXTURES / "already_ddp" / "before.py").read_bytes())
    assert [(f.code, f.line, f.column) for f in report.findings] == [("DDP010", 74, 19)]


LIGHTNING_CALLBACK = b"""\
import torch
from pytorch_lightning.callbacks import ModelCheckpoint


class OnnxCheckpoint(ModelCheckpoint):
    def _save_checkpoint(self, trainer, filepath):
        trainer.save_checkpoint(filepath)
        trainer.model.to_onnx(filepath + ".onnx", torch.randn(1, 4))
"""

IGNITE_SCRIPT = b"""\
import ignite.distributed as idist
import torch


def training(local_rank, config):
    model = idist.auto_model(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in idist.auto_dataloader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=8):
        opt.zero_grad()
        model(x[0]).sum().backward()
        opt.step()


with idist.Parallel(backend="nccl") as parallel:
    parallel.run(training, {})
"""


IGNITE_LOADERS_ONLY = IGNITE_SCRIPT.replace(b"idist.auto_model(torch.nn.Linear(4, 2))", b"torch.nn.Linear(4, 2)")


@pytest.mark.parametrize("source, framework", [(LIGHTNING_CALLBACK, "lightning"), (IGNITE_LOADERS_ONLY, "ignite")])
def test_a_program_a_framework_runs_is_named_with_what_check_reads(source, framework):
    """A Lightning callback (no training loop of its own) and an ignite idist script that wraps no
    model are not "not distributed" single-GPU scripts: the note names the framework that runs
    their processes and says what check does not read of it (decision 0085)."""
    report = check(source)
    assert report.findings == [] and report.note == FRAMEWORK_NOTES[framework]


def test_an_ignite_script_that_wraps_with_auto_model_is_checked():
    """`idist.auto_model(model)` is torch's DDP wrap on several processes: the script is checked
    as a distributed one (decision 0107), and this clean one gives no finding and no note."""
    report = check(IGNITE_SCRIPT)
    assert report.distributed and report.findings == [] and report.note is None
