"""The sweep of bench/sweep.py over every fixture's single-GPU script, under both strategies: no
internal error, every output compiles, converting it again changes nothing, and `ddpify check`
finds nothing in it but on statements ddpify marked with a TODO. (The standard library goes
through the same sweep in tests/test_stdlib.py; bench/sweep.py takes any checkout.)"""

from __future__ import annotations

import importlib.util
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

from tests.support.env import FIXTURES, REPO

_spec = importlib.util.spec_from_file_location("sweep", REPO / "bench" / "sweep.py")
sweep = sys.modules["sweep"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

SCRIPTS = sorted(str(p) for p in FIXTURES.glob("*/before.py"))


def pool() -> ProcessPoolExecutor:
    """A pool whose workers start as new interpreters: a test process may run threads (pytest-xdist's
    channel, tqdm's monitor), and a worker forked from it can inherit a lock one of them held and
    wait on it for ever (a whole suite hung so once). Each worker imports this module afresh."""
    return ProcessPoolExecutor(mp_context=multiprocessing.get_context("spawn"))


def sweep_one(job: tuple[str, str, float]) -> tuple:
    """bench/sweep.py's sweep_one, named in this importable module for the pool's workers."""
    return sweep.sweep_one(job)


def test_every_fixture_converts_compiles_settles_and_checks_clean_under_both_strategies():
    jobs = [(path, strategy, 120.0) for path in SCRIPTS for strategy in ("ddp", "fsdp")]
    with pool() as workers:
        results = list(workers.map(sweep_one, jobs))
    failures = [f"{path} [{strategy}]: {outcome}: {detail}" for path, strategy, outcome, detail, _ in results
                if outcome in sweep.KINDS]
    assert failures == []
    assert len(SCRIPTS) >= 40 and sum(r[2] == "changed" for r in results) >= 70


def test_the_sweep_catches_what_must_never_happen(tmp_path, monkeypatch):
    """Each kind of failure is reported, not swallowed."""
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "mnist_style" / "before.py").read_text())
    assert sweep.sweep_one((str(script), "ddp", 120.0))[2] == "changed"
    real = sweep.convert
    monkeypatch.setattr(sweep, "convert", lambda data, options: real(data + b"\n# again\n" if b"ddpify_runtime"
                                                                      in data else data, options))
    assert sweep.sweep_one((str(script), "ddp", 120.0))[2] == "not idempotent"
    monkeypatch.setattr(sweep, "convert", lambda data, options: (_ for _ in ()).throw(KeyError("boom")))
    assert sweep.sweep_one((str(script), "ddp", 120.0))[2:4] == ("internal", "KeyError: 'boom'")
    monkeypatch.setattr(sweep, "convert", real)
    monkeypatch.setattr(sweep, "check", lambda output: type("R", (), {"findings": [
        type("F", (), {"line": 3, "code": "DDP006", "message": "m"})()]})())
    assert sweep.sweep_one((str(script), "ddp", 120.0))[2] == "findings"
