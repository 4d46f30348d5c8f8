"""The runtime's defaults, as docs/runtime.md documents them: the collective timeout."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.support.env import REPO, clean_env
from tests.test_runtime import PLAIN_SCRIPT


def test_a_stopped_process_fails_the_job_after_ten_minutes_unless_told_otherwise(tmp_path):
    documented = re.search(r"`DDPIFY_TIMEOUT` \(seconds, default (\d+)\)", (REPO / "docs" / "runtime.md").read_text())
    assert documented is not None and documented.group(1) == "600"
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[1])["timeout_s"] == 600.0
