"""Every `--fix`, run: each fixable rule's `fixtures/check/<CODE>/runnable.py` is a script that
runs as one process on CPU without a launcher (no sampler, a group of one where it needs one).
It is fixed with its rule, and the original and the fixed script both run (in one process that
imports torch once). Where the original ran, the fix must not change what it prints (a fix keeps
every other configuration's behaviour); where the original failed (the bug itself), the fixed
script must run and print no `BUG` line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddpify.check import CODES, check, fix, select

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "check"
FIXABLE = sorted(code for code, rule in CODES.items() if rule.fixable)
RUNNER = textwrap.dedent("""\
    import contextlib, io, json, os, runpy, sys, tempfile
    import torch.distributed as dist
    results = {}
    for path in sys.argv[1:]:
        out = io.StringIO()
        os.chdir(tempfile.mkdtemp())
        try:
            with contextlib.redirect_stdout(out):
                runpy.run_path(path, run_name="__main__")
            results[path] = out.getvalue()
        except BaseException as exc:  # the bug a fix removes may be any error
            results[path] = out.getvalue() + f"error: {type(exc).__name__}"
        if dist.is_initialized():  # left open by a script that failed
            dist.destroy_process_group()
    print(json.dumps(results))
    """)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[str, str]]:
    """code -> (what the original printed, what the fixed script printed)."""
    folder = tmp_path_factory.mktemp("fixed")
    paths = []
    for code in FIXABLE:
        fixed = folder / f"{code}.py"
        fixed.write_bytes(fix((CASES / code / "runnable.py").read_bytes(), select(frozenset({code}))).output)
        paths += [str(CASES / code / "runnable.py"), str(fixed)]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, "-c", RUNNER, *paths], capture_output=True, text=True, timeout=300,
                          env={**env, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.splitlines()[-1])
    return {code: (printed[paths[2 * i]], printed[paths[2 * i + 1]]) for i, code in enumerate(FIXABLE)}


def test_every_fixable_rule_has_a_runnable_script_that_it_fixes():
    assert sorted(p.parent.name for p in CASES.glob("*/runnable.py")) == FIXABLE
    for code in FIXABLE:
        source = (CASES / code / "runnable.py").read_bytes()
        rules = select(frozenset({code}))
        assert any(f.code == code and f.fixable for f in check(source, rules).findings), code
        assert not any(f.code == code for f in fix(source, rules).report.findings), code


@pytest.mark.parametrize("code", FIXABLE)
def test_the_fixed_script_runs_on_one_cpu_process(code, runs):
    original, fixed = runs[code]
    assert "error:" not in fixed and "BUG" not in fixed and fixed, fixed
    if "error:" not in original and "BUG" not in original:
        assert fixed == original  # the fix changed a configuration that worked
