"""The `ddpify-check` pre-commit hook, run by the real `pre-commit` tool (`try-repo`, which installs
this working tree, with LibCST and click and no torch, into a fresh environment) in a temporary
git repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BAD = 'import os\nimport torch\nimport torch.distributed as dist\n' \
      'torch.cuda.set_device(int(os.environ["RANK"]))\ndist.init_process_group("nccl")\n' \
      'dist.destroy_process_group()\n'
NO_NETWORK = re.compile(r"No matching distribution|Could not find a version|Network is unreachable|"
                        r"Temporary failure in name resolution|Connection refused")


@pytest.mark.slow
def test_the_hook_reports_findings_and_passes_clean_files(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bad.py").write_text(BAD)
    (repo / "good.py").write_text(BAD.replace('"RANK"', '"LOCAL_RANK"'))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)

    def hook(*files: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "ddpify-check", "--files", *files], cwd=repo,
                              env=env, capture_output=True, text=True, timeout=600)

    bad = hook("bad.py")
    if bad.returncode != 1 and NO_NETWORK.search(bad.stdout + bad.stderr):
        pytest.skip("pre-commit could not install the hook's environment: no package index reachable")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bad.py:4:23: DDP001 " in bad.stdout
    good = hook("good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"ddpify check\.+Passed", good.stdout)


@pytest.mark.slow
def test_the_readme_snippet_works_as_written(tmp_path):
    """README's `.pre-commit-config.yaml`, copied as it is, with the installed `ddpify` on PATH."""
    text = (ROOT / "README.md").read_text()
    start = text.index("```yaml\n", text.index("As a [pre-commit]")) + len("```yaml\n")
    (tmp_path / ".pre-commit-config.yaml").write_text(text[start:text.index("```", start)])
    (tmp_path / "bad.py").write_text(BAD)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_CONFIG_NOSYSTEM": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True, env=env)
    done = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--files", "bad.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "bad.py:4:23: DDP001 " in done.stdout, done.stdout + done.stderr
