"""`ddpify run` tracebacks name the user's file and line, not the converted copy's (issue 31
item 1): in rank 0's relayed output and in the failure summary."""

from __future__ import annotations

import os
import json
import subprocess
import sys
import textwrap

import pytest

from ddpify.convert import Options, convert
from ddpify.run import joblog
from ddpify.run.frames import Frames, line_map
from tests.support.env import clean_env
from tests.test_run import runs_left

FAILING = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(torch.randn(64, 2)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)


    def check(step):
        if step == 2:
            raise ValueError("bad step")


    for epoch in range(2):
        for step, (x,) in enumerate(loader):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            check(step)
    """)
RAISE_LINE = FAILING.splitlines().index('        raise ValueError("bad step")') + 1
CALL_LINE = FAILING.splitlines().index("        check(step)") + 1


def test_each_converted_line_maps_to_the_line_it_comes_from():
    converted = convert(FAILING.encode(), Options()).code
    lines = converted.splitlines()
    mapped = line_map(FAILING, converted)
    assert len(mapped) == len(lines)
    assert mapped[lines.index('        raise ValueError("bad step")')] == RAISE_LINE
    assert mapped[lines.index("        check(step)")] == CALL_LINE
    assert lines.index("        check(step)") + 1 != CALL_LINE  # the conversion did move it
    added = next(i for i, line in enumerate(lines) if line.startswith("init_distributed_mode("))
    assert FAILING.splitlines()[mapped[added] - 1] in ("", *FAILING.splitlines()[:4])


def test_frames_of_the_private_copy_name_the_users_file_and_only_those():
    converted = convert(FAILING.encode(), Options()).code
    at = converted.splitlines().index("        check(step)") + 1
    frames = Frames({"/tmp/ddpify-run-x/train.py": ("/home/me/train.py", FAILING, converted)})
    assert frames(f'  File "/tmp/ddpify-run-x/train.py", line {at}, in <module>') == \
        f'  File "/home/me/train.py", line {CALL_LINE}, in <module>'
    other = '  File "/usr/lib/torch/nn.py", line 12, in forward'
    assert frames(other) == other
    assert frames.bytes(f'[rank0]:   File "/tmp/ddpify-run-x/train.py", line {at}\n'.encode()) == \
        f'[rank0]:   File "/home/me/train.py", line {CALL_LINE}\n'.encode()
    failure = joblog.Failure(1, 1, 1, ["Traceback (most recent call last):",
                                       f'  File "/tmp/ddpify-run-x/train.py", line {at}, in <module>',
                                       "ValueError: bad step"])
    lines = joblog.summary(failure, 1, "Kept: ...", lambda file, line: None, frames)
    assert lines[1] == f'  File "/home/me/train.py", line {CALL_LINE}, in <module>'



def test_places_named_path_colon_line_in_hang_lines_and_findings_name_the_users_file(tmp_path):
    """The self-check's findings and `ddpify hang:` lines name a place as PATH:LINE (issue 31 items 1, 3)."""
    converted = convert(FAILING.encode(), Options()).code
    at = converted.splitlines().index("        check(step)") + 1
    frames = Frames({"/tmp/ddpify-run-x/train.py": ("/home/me/train.py", FAILING, converted)})
    report = [f"ddpify hang: rank 0 waits in barrier() at /tmp/ddpify-run-x/train.py:{at} (12 s)",
              f"ddpify hang: rank 1 is at /tmp/ddpify-run-x/train.py:{at}"]
    assert joblog.hang_summary(report, 1, "", frames)[:2] == [
        f"ddpify hang: rank 0 waits in barrier() at /home/me/train.py:{CALL_LINE} (12 s)",
        f"ddpify hang: rank 1 is at /home/me/train.py:{CALL_LINE}"]
    (tmp_path / "f.json").write_text(json.dumps([{"check": "c", "file": "/tmp/ddpify-run-x/train.py", "line": at,
                                                  "message": "m", "fix": "f"}]))
    assert joblog.self_check_lines(tmp_path / "f.json", frames)[1] == f"  /home/me/train.py:{CALL_LINE}: c: m; f"
    assert frames("elsewhere.py:3 and /tmp/ddpify-run-x/train.pyc:3") == "elsewhere.py:3 and /tmp/ddpify-run-x/train.pyc:3"
    assert Frames({})("a.py:1") == "a.py:1"

@pytest.mark.slow
def test_a_failing_run_shows_the_users_file_and_lines(tmp_path):
    job, tmp = tmp_path / "job", tmp_path / "tmp"
    job.mkdir()
    tmp.mkdir()
    (job / "train.py").write_text(FAILING)
    done = subprocess.run([sys.executable, "-m", "ddpify", "run", "--nproc-per-node", "2", "train.py"], cwd=job,
                          env=clean_env(TMPDIR=str(tmp)), capture_output=True, text=True, timeout=240)
    assert done.returncode == 1, done.stderr
    user = os.path.join(job, "train.py")
    after = done.stderr.split(" -> ", 1)[1]
    assert f'File "{user}", line {CALL_LINE}, in <module>' in after
    assert f'File "{user}", line {RAISE_LINE}, in check' in after
    assert 'ddpify-run-' not in "\n".join(line for line in after.splitlines() if 'File "' in line)
    assert len(runs_left(tmp)) == 1  # kept: the job failed
