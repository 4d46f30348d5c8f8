"""Adversarial sweep of ddpify's file safety, processes and hostile input (issue 30).

Each attempt is a small scenario in a fresh temporary folder: files, links, FIFOs and device nodes
(made with mknod there, never /dev/*), then one ddpify command (or a converted script's save) in a
subprocess with a time limit; where the scenario is a command killed at a fault-injection point
(a write SIGKILLed during its renames, `ddpify run` SIGKILLed), the next ddpify command runs
after it, as a user would run one. Its outcome is classified:

- ok;
- data loss: a file the scenario does not allow to change was changed, removed or replaced (a
  node by a regular file), a temporary file or a journal was left behind, a program left half
  converted after the next command, or a killed run's folder left after the next run;
- wrong program: a .py file ddpify wrote does not compile, or an exit 0 that should not be;
- crash: a traceback, exit 123, or death by a signal;
- hang: the command ran past its limit.

    OMP_NUM_THREADS=1 .venv/bin/python bench/adversarial.py [--jobs 2] [--only AREA]

Prints one line per defect and a table of attempts and defects per area. Runs as root for the
device nodes (skipped otherwise). Not part of the test suite: it takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
TRAIN = (REPO / "fixtures" / "mnist_style" / "before.py").read_text()
PROJECT = REPO / "fixtures" / "project_trainer" / "before"
LIMIT_S = 60
CLASSES = ("ok", "data loss", "wrong program", "crash", "hang")


@dataclass
class Attempt:
    area: str
    name: str
    setup: Callable[[Path], None]
    command: list[str]  # ddpify's arguments, or ["python", ...] for a script
    may_change: tuple[str, ...] = ()  # paths (relative) the command may write or replace
    want_exit: tuple[int, ...] = (0, 1, 2)
    stdout_to: str | None = None  # a shell pipeline's tail: "head -1"
    kill: Callable[[subprocess.Popen, Path], None] | None = None
    check: Callable[[Path], str] | None = None  # extra: returns a class name or ""
    extra: dict = field(default_factory=dict)
    signalled: bool = False  # the command kills itself (a fault-injection point): death by a signal is expected
    then: list[list[str]] = field(default_factory=list)  # the next commands, after it (their stderr: next.err)
    env: dict[str, str] = field(default_factory=dict)  # with "{root}" for the scenario's folder


# ---- building blocks ---------------------------------------------------------------------------

def w(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)


def project(root: Path, at: str = "proj") -> None:
    import shutil
    shutil.copytree(PROJECT, root / at)


def node(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:  # the null, zero and full devices' numbers, in this folder
        minor = {"null": 3, "zero": 5, "full": 7}[kind]
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))


def snapshot(root: Path) -> dict[str, tuple[str, bytes | None]]:
    seen = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        for name in dirs + names:
            p = Path(folder, name)
            rel = str(p.relative_to(root))
            mode = os.lstat(p).st_mode
            if stat.S_ISLNK(mode):
                seen[rel] = ("link", os.readlink(p).encode())
            elif stat.S_ISREG(mode):
                seen[rel] = ("file", p.read_bytes())
            elif stat.S_ISDIR(mode):
                seen[rel] = ("dir", None)
            else:
                seen[rel] = ("node", None)
    return seen


# ---- running and classifying -------------------------------------------------------------------

def run(attempt: Attempt) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix="adv-") as tmp:
        root = Path(tmp)
        attempt.setup(root)
        before = snapshot(root)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO),
               **{k: v.format(root=root) for k, v in attempt.env.items()}}
        argv = _argv(attempt.command)
        started = time.monotonic()
        if attempt.stdout_to:
            shell = " ".join(map(_quote, argv)) + " | " + attempt.stdout_to
            job = subprocess.Popen(["bash", "-o", "pipefail", "-c", shell], cwd=root, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        else:
            job = subprocess.Popen(argv, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
        if attempt.kill:
            attempt.kill(job, root)
        try:
            out, err = job.communicate(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.communicate()
            return "hang", f"ran past {LIMIT_S} s"
        took = time.monotonic() - started
        stderr = err.decode(errors="replace")
        rc = job.returncode
        if attempt.stdout_to and rc == 141:
            rc = 0
        if "Traceback (most recent call last)" in stderr or rc == 123 or (rc < 0 and not (attempt.kill or
                                                                                       attempt.signalled)):
            return "crash", f"exit {rc}: {stderr.strip().splitlines()[-1:] if stderr.strip() else ''}"
        if attempt.signalled and rc >= 0:
            return "wrong program", f"exit {rc}: the fault-injection point was never reached: {stderr.strip()[-300:]}"
        for command in attempt.then:  # the next run on the files the first one left
            try:
                done = subprocess.run(_argv(command), cwd=root, env=env, stdin=subprocess.DEVNULL,
                                      capture_output=True, timeout=LIMIT_S)
            except subprocess.TimeoutExpired:
                return "hang", f"{' '.join(command)} ran past {LIMIT_S} s"
            next_err = done.stderr.decode(errors="replace")
            with open(root / "next.err", "a") as log:
                log.write(next_err)
            if "Traceback (most recent call last)" in next_err or done.returncode not in (0, 1, 2):
                return "crash", f"{' '.join(command)}: exit {done.returncode}: {next_err.strip()[-300:]}"
        after = snapshot(root)
        lost = [rel for rel, (kind, data) in before.items()
                if not _allowed(rel, attempt.may_change) and after.get(rel) != (kind, data)]
        leftovers = [rel for rel in after if rel not in before and ("tmp" in rel.rsplit("/", 1)[-1] or
                                                                    ".ddpify-journal." in rel)]
        if lost:
            return "data loss", f"changed or removed: {', '.join(sorted(lost))}"
        if leftovers:
            return "data loss", f"temporary files left: {', '.join(sorted(leftovers))}"
        for rel, (kind, data) in after.items():
            if kind == "file" and rel.endswith(".py") and before.get(rel) != (kind, data):
                try:
                    compile(data, rel, "exec")
                except (SyntaxError, ValueError) as exc:
                    return "wrong program", f"{rel} does not compile: {exc}"
        if attempt.check:
            verdict = attempt.check(root)
            if verdict:
                return verdict.split(":")[0], verdict
        if not (attempt.kill or attempt.signalled) and rc not in attempt.want_exit:
            return "wrong program", f"exit {rc} (want {attempt.want_exit}): {stderr.strip()[-300:]}"
        return "ok", f"exit {rc} in {took:.1f} s"


def _argv(command: list[str]) -> list[str]:
    return [sys.executable, *command[1:]] if command[0] == "python" else [sys.executable, "-m", "ddpify", *command]


def _allowed(rel: str, may: tuple[str, ...]) -> bool:
    return any(rel == m or rel.startswith(m.rstrip("/") + "/") for m in may)


def _quote(arg: str) -> str:
    import shlex
    return shlex.quote(arg)


# ---- the areas ---------------------------------------------------------------------------------

def special_files() -> list[Attempt]:
    """Devices and FIFOs as outputs and as sources (item 1, 9)."""
    attempts = []
    for kind in ("null", "full", "fifo"):
        attempts.append(Attempt("special files", f"-o onto a {kind} node", lambda r, k=kind: (
            w(r / "train.py", TRAIN), node(r / "out.py", k)), ["convert", "train.py", "-o", "out.py"]))
        attempts.append(Attempt("special files", f"tree -o with a {kind} node at an output name", lambda r, k=kind: (
            w(r / "src/train.py", TRAIN), node(r / "out/train.py", k)), ["convert", "src", "-o", "out"]))
    for kind in ("null", "zero", "fifo"):
        for command in (["convert", "src", "-o", "out"], ["diff", "src"], ["check", "src"],
                        ["convert", "--in-place", "src"]):
            attempts.append(Attempt("special files", f"{kind} named x.py in a folder: {command[0]} {command[1]}",
                                    lambda r, k=kind: (w(r / "src/train.py", TRAIN), node(r / "src/x.py", k)),
                                    command, may_change=("out", "src/train.py")))
        for command in (["convert", "train.py", "-o", "out/"], ["diff", "train.py"], ["check", "train.py"]):
            attempts.append(Attempt("special files", f"{kind} named data.py beside the entry: {command[0]}",
                                    lambda r, k=kind: (w(r / "train.py", TRAIN.replace("import torch\n",
                                                       "import torch\nimport data\n", 1)), node(r / "data.py", k)),
                                    command, may_change=("out",)))
        attempts.append(Attempt("special files", f"{kind} named train.py given as the input", lambda r, k=kind:
                                node(r / "train.py", k), ["convert", "train.py", "-o", "out.py"]))
    return attempts


def links() -> list[Attempt]:
    """Symlinks: a linked entry, loops, dangling links, links out of the project (items 4, 16)."""
    def linked_entry(r: Path) -> None:
        project(r)
        (r / "link").mkdir()
        (r / "link/train.py").symlink_to("../proj/train.py")
        w(r / "link/data.py", "# the user's own\n")

    def loop(r: Path) -> None:
        w(r / "src/train.py", TRAIN)
        (r / "src/a.py").symlink_to("b.py")
        (r / "src/b.py").symlink_to("a.py")
        (r / "src/sub").mkdir()
        (r / "src/sub/up").symlink_to("..")

    def dangling(r: Path) -> None:
        w(r / "src/train.py", TRAIN)
        (r / "src/gone.py").symlink_to("nowhere.py")

    def out_of_project(r: Path) -> None:
        project(r)
        (r / "shared").mkdir()
        (r / "proj/data.py").rename(r / "shared/data.py")
        (r / "proj/data.py").symlink_to("../shared/data.py")

    attempts = [Attempt("links", "--in-place through a linked entry", linked_entry,
                        ["convert", "--in-place", "link/train.py"], may_change=("proj",)),
                Attempt("links", "-o through a linked entry", linked_entry,
                        ["convert", "link/train.py", "-o", "out/"], may_change=("out",)),
                Attempt("links", "a module linked out of the project, --in-place", out_of_project,
                        ["convert", "--in-place", "proj/train.py"], may_change=("proj/train.py", "proj/trainer.py",
                                                                                "proj/models"))]
    for setup, label in ((loop, "a link loop"), (dangling, "a dangling link")):
        for command in (["convert", "src", "-o", "out"], ["diff", "src"], ["check", "src"],
                        ["convert", "--in-place", "src"]):
            attempts.append(Attempt("links", f"{label} in a folder: {' '.join(command[:2])}", setup, command,
                                    may_change=("out", "src/train.py")))
    return attempts


def clobber() -> list[Attempt]:
    """Writes nobody asked for; stale output (items 2, 3, 6 and cosmetics)."""
    def with_user_data(r: Path) -> None:
        project(r)
        w(r / "elsewhere/data.py", "# the user's own\n")

    def converted_twice(r: Path) -> None:
        project(r)
        subprocess.run([sys.executable, "-m", "ddpify", "convert", "proj/train.py", "-o", "out/"], cwd=r,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        w(r / "out/data.py", "# edited by hand\n")

    def notebook(r: Path) -> None:
        cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": TRAIN}
        w(r / "x.ipynb", json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}))

    return [
        Attempt("clobber", "-o naming a module of the program", project, ["convert", "proj/train.py", "-o",
                                                                          "proj/data.py"]),
        Attempt("clobber", "-o naming the entry", project, ["convert", "proj/train.py", "-o", "proj/train.py"]),
        Attempt("clobber", "-o DIR inside the project", project, ["convert", "proj/train.py", "-o", "proj/models/"],
                may_change=("proj/models/train.py",)),
        Attempt("clobber", "-o FILE beside a user's data.py", with_user_data,
                ["convert", "proj/train.py", "-o", "elsewhere/train_ddp.py"], may_change=("elsewhere/train_ddp.py",)),
        Attempt("clobber", "reconvert over a hand-edited module", converted_twice,
                ["convert", "proj/train.py", "-o", "out/"], may_change=("out/train.py", "out/trainer.py",
                                                                       "out/.ddpify-written.json")),
        Attempt("clobber", "tree -o equal to the input", lambda r: w(r / "src/train.py", TRAIN),
                ["convert", "src", "-o", "src"]),
        Attempt("clobber", "tree -o holding the input", lambda r: w(r / "src/train.py", TRAIN),
                ["convert", "src", "-o", "."]),
        Attempt("clobber", "notebook -o .", notebook, ["convert", "x.ipynb", "-o", "."], may_change=("x.py",)),
        Attempt("clobber", "notebook -o itself", notebook, ["convert", "x.ipynb", "-o", "x.ipynb"],
                may_change=("x.py",)),
        Attempt("clobber", "two inputs, one output", lambda r: (w(r / "a/t.py", TRAIN), w(r / "b/t.py", TRAIN)),
                ["convert", "a/t.py", "b/t.py", "-o", "out"], may_change=("out",)),
        Attempt("clobber", "--vendor-runtime beside a user's ddpify_runtime.py",
                lambda r: (w(r / "train.py", TRAIN), w(r / "ddpify_runtime.py", "# mine\n")),
                ["convert", "--in-place", "--vendor-runtime", "train.py"]),
    ]


def all_or_none() -> list[Attempt]:
    """Several files written together (item 5)."""
    def read_only_b(r: Path) -> None:
        w(r / "a.py", TRAIN)
        w(r / "b.py", TRAIN)
        (r / "b.py").chmod(0o444)

    def read_only_module(r: Path) -> None:
        project(r)
        (r / "proj/data.py").chmod(0o444)

    def full_output(r: Path) -> None:
        w(r / "a.py", TRAIN)
        w(r / "b.py", TRAIN)
        node(r / "out/b.py", "full")

    return [
        Attempt("all or none", "--in-place a.py b.py, b read-only", read_only_b,
                ["convert", "--in-place", "a.py", "b.py"]),
        Attempt("all or none", "--in-place a program with a read-only module", read_only_module,
                ["convert", "--in-place", "proj/train.py"]),
        Attempt("all or none", "check --fix a.py b.py, b read-only", read_only_b, ["check", "--fix", "a.py", "b.py"]),
        Attempt("all or none", "-o DIR whose b.py is a full device", full_output,
                ["convert", "a.py", "b.py", "-o", "out"], may_change=("out/a.py",)),
        Attempt("all or none", "--in-place a folder with a read-only file", lambda r: (read_only_b(r / "src")),
                ["convert", "--in-place", "src"]),
    ]


def hostile() -> list[Attempt]:
    """Input that is not a script ddpify can convert (items 11 and the parse cosmetics)."""
    sources = {
        "10,000-term and": "x = " + " and ".join(["a"] * 10_000) + "\n",
        "10,000-term or": "x = " + " or ".join(["a"] * 10_000) + "\n",
        "2,500-term and": "x = " + " and ".join(["a"] * 2_500) + "\n",
        "20,000-term sum": "x = " + " + ".join(["a"] * 20_000) + "\n",
        "3,000 brackets": "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n",
        "NUL byte": "x = 1\0\n",
        "binary garbage": bytes(range(256)) * 4,
        "undecodable latin-1": b"# caf\xe9\nx = 1\n",
        "empty file": "",
        "BOM and CRLF": "\ufeffimport torch\r\nx = 1\r\n",
        "form feed indentation": "if x:\n\f    y = 1\n",
        "from .... beyond the top": "from .... import x\nimport torch\n",
        "relative import in a script": "from . import data\nimport torch\n",
        "a 100,000-character line": "x = '" + "a" * 100_000 + "'\n",
    }
    attempts = []
    for label, text in sources.items():
        for command in (["convert", "t.py", "-o", "out.py"], ["diff", "t.py"], ["check", "t.py"]):
            attempts.append(Attempt("hostile input", f"{label}: {command[0]}", lambda r, t=text: w(r / "t.py", t),
                                    command, may_change=("out.py",)))
    return attempts


def notebooks() -> list[Attempt]:
    def nb(body: object) -> Callable[[Path], None]:
        return lambda r: w(r / "n.ipynb", body if isinstance(body, (str, bytes)) else json.dumps(body))

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "x = 1\n"}
    bodies = {
        '"nbformat": "4"': {"nbformat": "4", "cells": [cell]},
        "nbformat 3": {"nbformat": 3, "worksheets": []},
        "no cells": {"nbformat": 4},
        "markdown only": {"nbformat": 4, "cells": [{"cell_type": "markdown", "metadata": {}, "source": "hi"}]},
        "not JSON": "{",
        "a list": "[]",
        "source a number": {"nbformat": 4, "cells": [{**cell, "source": 5}]},
        "IPython magics": {"nbformat": 4, "cells": [{**cell, "source": "%matplotlib inline\n!ls\nx = 1\n"}]},
    }
    return [Attempt("notebooks", f"{label}: {command[0]}", nb(body), command, may_change=("out.py",))
            for label, body in bodies.items()
            for command in (["convert", "n.ipynb", "-o", "out.py"], ["check", "n.ipynb"])]


def processes() -> list[Attempt]:
    """Killing ddpify, closed pipes (items 8, 17)."""
    slow = ("import os, sys, time\nfrom ddpify.cli import engine, main\n"
            "def stuck(*a, **k):\n    open(f'worker.{os.getpid()}', 'w').close()\n    time.sleep(300)\n"
            "engine.convert_one = stuck\nsys.argv = ['ddpify', 'convert', 'a.py', 'b.py', '-j', '2', '-o', 'out']\n"
            "main()\n")

    def kill_with(sig: int) -> Callable[[subprocess.Popen, Path], None]:
        def kill(job: subprocess.Popen, root: Path) -> None:
            deadline = time.monotonic() + 30
            while len(list(root.glob("worker.*"))) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            job.send_signal(sig)
        return kill

    def workers_gone(root: Path) -> str:
        deadline = time.monotonic() + 10
        pids = [int(p.suffix[1:]) for p in root.glob("worker.*")]
        while time.monotonic() < deadline:
            alive = [p for p in pids if _alive(p)]
            if not alive:
                return ""
            time.sleep(0.2)
        for pid in alive:
            os.kill(pid, signal.SIGKILL)
        return f"hang: workers {alive} outlived their parent"

    def two(r: Path) -> None:
        w(r / "a.py", TRAIN)
        w(r / "b.py", TRAIN)
        w(r / "slow.py", slow)

    attempts = [Attempt("processes", f"convert -j 2, {signal.Signals(s).name} to the main process", two,
                        ["python", "slow.py"], may_change=("worker.",), kill=kill_with(s), check=workers_gone)
                for s in (signal.SIGKILL, signal.SIGTERM)]
    for command in (["diff", "train.py"], ["convert", "train.py"], ["rewrites"], ["check", "train.py"]):
        attempts.append(Attempt("processes", f"{command[0]} into a closed pipe", lambda r: w(r / "train.py", TRAIN),
                                command, stdout_to="head -1"))
    return attempts


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def saves() -> list[Attempt]:
    """The runtime's atomic_write where torch.save works (items 1, 15)."""
    def script(target: str, before: str = "") -> Callable[[Path], None]:
        return lambda r: w(r / "save.py", "import torch\nfrom ddpify_runtime import atomic_write\n" + before
                           + f"with atomic_write({target!r}) as tmp:\n    torch.save({{'a': 1}}, tmp)\n")

    long_name = "c" * 237 + ".pt"
    return [
        Attempt("saves", "into a null device node", lambda r: (node(r / "null", "null"), script("null")(r)),
                ["python", "save.py"]),
        Attempt("saves", "into a FIFO with a reader", lambda r: (node(r / "p", "fifo"), script(
            "p", "import subprocess\nreader = subprocess.Popen(['cat', 'p'], stdout=subprocess.DEVNULL)\n")(r)),
                ["python", "save.py"]),
        Attempt("saves", "a 240-character name", script(long_name), ["python", "save.py"], may_change=(long_name,)),
        Attempt("saves", "over a killed save's temporary file", lambda r: (
            w(r / ".last.pt.999999999.00000000.tmp", b"half"), script("last.pt")(r)), ["python", "save.py"],
            may_change=("last.pt", ".last.pt.999999999.00000000.tmp")),
        Attempt("saves", "through a symlink", lambda r: (w(r / "runs/last.pt", b"old"), (r / "last.pt").symlink_to(
            "runs/last.pt"), script("last.pt")(r)), ["python", "save.py"], may_change=("runs/last.pt",)),
        Attempt("saves", "a write+execute-only folder", lambda r: (w(r / "wx/keep", "x"), (r / "wx").chmod(0o333),
                                                                  script("wx/last.pt")(r)),
                ["python", "save.py"], may_change=("wx/last.pt",)),
    ]


# ddpify, killed by signal SIG from a fault-injection point before rename number AT (0: right
# after the journal is written; AT past the last rename: before the journal is removed)
KILLER = """\
import os, signal, sys
from ddpify.cli import main
from ddpify.inputs import journal
at, sig, renamed, replace, end = int(sys.argv[1]), getattr(signal, sys.argv[2]), [], os.replace, journal.end
def rename(src, dst):
    if len(renamed) == at:
        os.kill(os.getpid(), sig)
    renamed.append(dst)
    replace(src, dst)
def end_journal(paths):
    paths = list(paths)
    if paths and len(renamed) == at:
        os.kill(os.getpid(), sig)
    end(paths)
os.replace, journal.end = rename, end_journal
sys.argv = ["ddpify", *sys.argv[3:]]
main()
"""
# ddpify, SIGKILLed while staging file number AT (before its journal); then the files it staged
# are made two minutes old, as the next command a while later finds them
STAGE_KILLER = """\
import os, signal, sys
from ddpify.cli import main
from ddpify.inputs import files
at, staged, stage = int(sys.argv[1]), [], files._stage
def staging(*args):
    if len(staged) == at:
        os.kill(os.getpid(), signal.SIGKILL)
    staged.append(stage(*args))
    return staged[-1]
files._stage = staging
sys.argv = ["ddpify", *sys.argv[2:]]
main()
"""
AGED = ("import os, pathlib, time\nfor p in pathlib.Path('.').rglob('*.ddpify-tmp'):\n"
        "    os.utime(p, (time.time() - 120,) * 2)\n")
MODULES = 50  # the program of `program51`: an entry and 50 modules, all changed by a conversion


def program51(root: Path, at: str = "p") -> None:
    for i in range(MODULES):
        w(root / at / f"save_{i}.py", f"import torch\n\n\ndef save_{i}(model, path):\n"
                                     f"    torch.save(model.state_dict(), path)\n    print('saved', path)\n")
    w(root / at / "train.py", "".join(f"from save_{i} import save_{i}\n" for i in range(MODULES)) + TRAIN +
      "\n\ndef finish(model):\n" + "".join(f"    save_{i}(model, 'm{i}.pt')\n" for i in range(MODULES)))


def ddpify(root: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "ddpify", *args], cwd=root, capture_output=True, check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})


def same_tree(root: Path, got: str, want: str, said: str | None, edited: str | None = None) -> str:
    """`got` holds what `want` holds (the conversion as a run not killed writes it), but `edited`,
    which kept its edit; the next run's stderr says `said`."""
    for path in sorted((root / want).rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json"):
            rel = path.relative_to(root / want)
            mine = (root / got / rel).read_bytes() if (root / got / rel).is_file() else None
            if str(Path(got, rel)) == edited:
                if not mine or not mine.endswith(b"# edited after the kill\n"):
                    return f"data loss: {got}/{rel}: the edit made after the kill is gone"
            elif mine != path.read_bytes():
                return f"data loss: {got}/{rel} is not the conversion (half-converted program)"
    err = (root / "next.err").read_text() if (root / "next.err").exists() else ""
    if said and said not in err:
        return f"wrong program: the next run did not say '{said}': {err.strip()[-300:]}"
    return ""


def killed_writes() -> list[Attempt]:
    """SIGKILL (and SIGINT) from a fault-injection point during the rename phase of a 51-file
    write, then the next ddpify command on those files (item 5, last bullet)."""
    finished = "finished a ddpify write that was killed during its renames"
    in_place = ["convert", "--in-place", "p/train.py"]

    def with_reference(r: Path) -> None:
        program51(r)
        program51(r, "ref")
        ddpify(r, *in_place[:2], "ref/train.py")
        w(r / "killer.py", KILLER)
        (r / "tmp").mkdir()

    def killed(at: int, command: list[str], sig: str = "SIGKILL") -> list[str]:
        return ["python", "killer.py", str(at), sig, *command]

    attempts = []
    nexts = [["diff", "p/train.py"], ["check", "p/train.py"], in_place, ["convert", "p/train.py", "--check"]]
    for n, at in enumerate((0, 1, 10, 25, 50, 51)):
        for command in (nexts[n % 4], nexts[(n + 1) % 4]):
            attempts.append(Attempt("killed writes", f"--in-place, 51 files, SIGKILL before rename {at}; next: "
                                    f"{' '.join(command[:2])}", with_reference, killed(at, in_place),
                                    may_change=("p", "next.err"), signalled=True, then=[command],
                                    check=lambda r: same_tree(r, "p", "ref", finished)))
    for at in (3, 48):
        attempts.append(Attempt("killed writes", f"--in-place, 51 files, SIGKILL before rename {at}; next: run "
                                "--dry-run", with_reference, killed(at, in_place), may_change=("p", "next.err", "tmp"),
                                signalled=True, then=[["run", "--dry-run", "p/train.py"]], env={"TMPDIR": "{root}/tmp"},
                                check=lambda r: same_tree(r, "p", "ref", finished)))
    edit = ["python", "-c", "open('p/save_40.py', 'a').write('# edited after the kill\\n')"]
    attempts.append(Attempt("killed writes", "--in-place, SIGKILL before rename 10, a pending module edited; next: "
                            "diff", with_reference, killed(10, in_place), may_change=("p", "next.err"), signalled=True,
                            then=[edit, ["diff", "p/train.py"]],
                            check=lambda r: same_tree(r, "p", "ref", "(changed since the kill): p/save_40.py",
                                                      edited="p/save_40.py")))
    def original(r: Path) -> None:
        program51(r)
        program51(r, "ref")
        w(r / "killer.py", STAGE_KILLER)

    for at, command in ((1, ["diff", "p/train.py"]), (30, ["check", "p/train.py"])):
        attempts.append(Attempt("killed writes", f"--in-place, 51 files, SIGKILL while staging file {at}; a while "
                                f"later: {command[0]}", original, ["python", "killer.py", str(at), *in_place],
                                may_change=("next.err",), signalled=True, then=[["python", "-c", AGED], command],
                                check=lambda r: same_tree(r, "p", "ref", None)))
    for at in (1, 25, 51):
        attempts.append(Attempt("killed writes", f"--in-place, 51 files, SIGINT before rename {at} (held)",
                                with_reference, killed(at, in_place, "SIGINT"), may_change=("p",), want_exit=(130,),
                                check=lambda r: same_tree(r, "p", "ref", None)))

    def into_folder(r: Path) -> None:
        program51(r)
        ddpify(r, "convert", "p/train.py", "-o", "ref/")
        w(r / "killer.py", KILLER)

    for at in (0, 26, 52):  # 51 files and the folder's record
        attempts.append(Attempt("killed writes", f"-o out/, 52 files, SIGKILL before rename {at}; next: convert -o out/",
                                into_folder, killed(at, ["convert", "p/train.py", "-o", "out/"]),
                                may_change=("out", "next.err"), signalled=True,
                                then=[["convert", "p/train.py", "-o", "out/"]],
                                check=lambda r: same_tree(r, "out", "ref", finished)))

    def tree(r: Path) -> None:
        for i in range(20):
            w(r / ("src/sub" if i % 2 else "src") / f"t{i}.py", TRAIN)
            w(r / ("ref/sub" if i % 2 else "ref") / f"t{i}.py", TRAIN)
        ddpify(r, "convert", "--in-place", "ref")
        w(r / "killer.py", KILLER)

    for at in (0, 7, 20):
        attempts.append(Attempt("killed writes", f"tree --in-place, 20 files in 2 folders, SIGKILL before rename {at}; "
                                "next: diff of a file in the other folder", tree,
                                killed(at, ["convert", "--in-place", "src"]), may_change=("src", "next.err"),
                                signalled=True, then=[["diff", "src/sub/t1.py"]],
                                check=lambda r: same_tree(r, "src", "ref", finished)))

    def fixable(r: Path) -> None:
        code = (REPO / "fixtures" / "check" / "DDP001" / "trigger.py").read_text()
        for i in range(10):
            w(r / f"src/f{i}.py", code)
            w(r / f"ref/f{i}.py", code)
        ddpify(r, "check", "--fix", "ref")
        w(r / "killer.py", KILLER)

    for at in (0, 5, 10):
        attempts.append(Attempt("killed writes", f"check --fix, 10 files, SIGKILL before rename {at}; next: check",
                                fixable, killed(at, ["check", "--fix", "src"]), may_change=("src", "next.err"),
                                signalled=True, then=[["check", "src"]],
                                check=lambda r: same_tree(r, "src", "ref", finished)))
    return attempts


SLEEPER = "import os, time\nopen('started', 'w').write(str(os.getpid()))\ntime.sleep(300)\n"
# `ddpify run`, SIGKILLed where it launches the job: its run folder made and written
KILLED_AT_LAUNCH = """\
import os, signal, sys
from ddpify.cli import main
from ddpify.run import launch
launch.run_job = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
sys.argv = ["ddpify", "run", "--nproc-per-node", "1", *sys.argv[1:]]
main()
"""


def run_folders() -> list[Attempt]:
    """Run folders that killed `ddpify run`s left in $TMPDIR, removed by the next run; those of
    running jobs, kept for the user, not ddpify's, another user's or behind a link stay (item 7)."""
    tmpdir = {"TMPDIR": "{root}/tmp"}

    def base(r: Path) -> None:
        (r / "tmp").mkdir()
        w(r / "train.py", TRAIN)
        w(r / "killer.py", KILLED_AT_LAUNCH)
        w(r / "sleeper.py", SLEEPER)
        w(r / "fail.py", "raise SystemExit('failing on purpose')\n")

    def folders(r: Path) -> list[Path]:
        return sorted((r / "tmp").glob("ddpify-run-*"))

    def stale_removed(r: Path) -> str:
        left = [f for f in folders(r) if (f / ".ddpify-run.json").exists()]
        if left:
            return f"data loss: run folders of killed runs left: {[f.name for f in left]}"
        if "run folder(s) of earlier runs that were killed" not in (r / "next.err").read_text():
            return "wrong program: the next run did not say it removed a folder"
        return ""

    def dead_marker() -> str:
        child = subprocess.Popen([sys.executable, "-c", ""])
        child.wait()
        return json.dumps({"host": os.uname().nodename, "pid": child.pid, "started": None})

    def others(r: Path) -> None:
        base(r)
        w(r / "tmp/ddpify-run-mine/notes.txt", "the user's own folder\n")
        w(r / "tmp/ddpify-run-bad/.ddpify-run.json", "not JSON")
        w(r / "tmp/ddpify-run-host/.ddpify-run.json", json.dumps({**json.loads(dead_marker()), "host": "elsewhere"}))
        w(r / "keepme/.ddpify-run.json", dead_marker())
        w(r / "keepme/data.txt", "behind a link\n")
        (r / "tmp/ddpify-run-link").symlink_to("../keepme")
        w(r / "tmp/ddpify-run-nobody/.ddpify-run.json", dead_marker())
        os.chown(r / "tmp/ddpify-run-nobody", 65534, 65534)
        w(r / "tmp/ddpify-run-dead/.ddpify-run.json", dead_marker())
        w(r / "tmp/ddpify-run-dead/train.py", "x = 1\n")

    def others_kept(r: Path) -> str:
        names = [f.name for f in folders(r)]
        if "ddpify-run-dead" in names:
            return "data loss: the folder of a run that ended was left (a temporary file of ddpify's)"
        return ""

    def while_running(job: subprocess.Popen, root: Path) -> None:
        deadline = time.monotonic() + 50
        while not (root / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "TMPDIR": str(root / "tmp")}
        live = [f for f in folders(root) if (f / ".ddpify-run.json").exists()]
        subprocess.run([sys.executable, "-m", "ddpify", "run", "--dry-run", "train.py"], cwd=root, env=env,
                       capture_output=True, timeout=LIMIT_S)
        (root / "live.txt").write_text("\n".join(str(f) for f in live if f.exists()) + "\n")
        job.send_signal(signal.SIGINT)

    def live_kept(r: Path) -> str:
        lines = (r / "live.txt").read_text().split()
        if len(lines) != 1:
            return f"data loss: the running job's folder was removed by another run: {lines}"
        if Path(lines[0]).exists():
            return "data loss: the folder of a run stopped by Ctrl-C was left"
        return ""

    def kill_when_started(job: subprocess.Popen, root: Path) -> None:
        deadline = time.monotonic() + 50
        while not (root / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        job.send_signal(signal.SIGKILL)  # ddpify alone, as the OOM killer would

    def workers_and_folder_gone(r: Path) -> str:
        worker = int((r / "started").read_text())
        deadline = time.monotonic() + 20
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)
            return "hang: the worker outlived the killed ddpify run"
        return stale_removed(r)

    def kept_stays(r: Path) -> str:
        kept = [f for f in folders(r) if not (f / ".ddpify-run.json").exists()]
        return "" if len(kept) >= 2 else f"data loss: a folder kept for the user was removed: {folders(r)}"

    return [
        Attempt("run folders", "killed at the launch; next: run --dry-run", base, ["python", "killer.py", "train.py"],
                may_change=("tmp", "next.err"), signalled=True, then=[["run", "--dry-run", "train.py"]], env=tmpdir,
                check=stale_removed),
        Attempt("run folders", "killed at the launch; next: a real run that fails", base,
                ["python", "killer.py", "train.py"], may_change=("tmp", "next.err"), signalled=True,
                then=[["run", "--nproc-per-node", "1", "fail.py"]], env=tmpdir,
                check=lambda r: stale_removed(r) if len(folders(r)) == 1 else
                f"data loss: {len(folders(r))} folders left, want the failed run's"),
        Attempt("run folders", "ddpify run SIGKILLed during the job; next: run --dry-run", base,
                ["run", "--nproc-per-node", "1", "sleeper.py"], may_change=("tmp", "next.err", "started"),
                kill=kill_when_started, then=[["run", "--dry-run", "train.py"]], env=tmpdir,
                check=workers_and_folder_gone),
        Attempt("run folders", "another run while a job runs keeps its folder", base,
                ["run", "--nproc-per-node", "1", "sleeper.py"], may_change=("tmp", "started", "live.txt"),
                kill=while_running, env=tmpdir, check=live_kept),
        Attempt("run folders", "a failed run's and a dry run's folders survive the next run", base,
                ["run", "--nproc-per-node", "1", "fail.py"], may_change=("tmp", "next.err"),
                then=[["run", "--dry-run", "train.py"], ["run", "--dry-run", "train.py"]], env=tmpdir,
                check=kept_stays),
        Attempt("run folders", "folders not ddpify's, another user's, another host's, behind a link, unreadable",
                others, ["run", "--dry-run", "train.py"], may_change=("tmp/ddpify-run-dead",),
                env=tmpdir, check=others_kept),
    ]


AREAS = {"special files": special_files, "links": links, "clobber": clobber, "all or none": all_or_none,
         "hostile input": hostile, "notebooks": notebooks, "processes": processes, "saves": saves,
         "killed writes": killed_writes, "run folders": run_folders}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", choices=sorted(AREAS))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the device nodes need mknod")
    attempts = [a for area, make in AREAS.items() if args.only in (None, area) for a in make()]
    started = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(run, attempts))
    table: dict[str, dict[str, int]] = {}
    for attempt, (verdict, detail) in zip(attempts, outcomes):
        row = table.setdefault(attempt.area, dict.fromkeys(CLASSES, 0))
        row[verdict] += 1
        if verdict != "ok":
            print(f"{verdict}: {attempt.area}: {attempt.name}: {detail}")
    print(f"\n{len(attempts)} attempts in {time.monotonic() - started:.0f} s\n")
    print("| area | attempts | " + " | ".join(CLASSES[1:]) + " |")
    print("|---|---|" + "---|" * (len(CLASSES) - 1))
    for area, row in [*table.items(), ("total", {c: sum(r[c] for r in table.values()) for c in CLASSES})]:
        print(f"| {area} | {sum(row.values())} | " + " | ".join(str(row[c]) for c in CLASSES[1:]) + " |")


if __name__ == "__main__":
    main()
