"""ddpify installs without torch (LibCST and click only; torch is the `torch` extra), and the one
command that needs torch, `ddpify run`, says so in one line when it is missing."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

from click.testing import CliRunner

from ddpify.run import launch
from ddpify.cli import main


def test_ddpify_requires_no_torch():
    requires = importlib.metadata.requires("ddpify")
    plain = sorted(re.split(r"[<>=\[; ]", r)[0] for r in requires if "extra ==" not in r)
    assert plain == ["click", "libcst"]
    assert any(r.startswith("torch") and 'extra == "torch"' in r for r in requires)


def test_run_without_torch_is_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text("print('never run')\n")
    monkeypatch.setattr(launch, "torch_installed", lambda: False)
    result = CliRunner().invoke(main, ["run", "train.py"])
    assert result.exit_code == 2
    assert result.stderr == "ddpify run: torch is not installed (torchrun comes with it): pip install 'ddpify[torch]'\n"
    assert sorted(p.name for p in Path().iterdir()) == ["train.py"]
