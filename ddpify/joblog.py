"""What a user sees of a job that `ddpify run` launched: rank 0's output as it comes, and when the
job fails, the first failing process's own traceback and one line, instead of every rank's.

torchrun writes each worker's stdout and stderr into `LOG/<run>/attempt_<n>/<local rank>/`
(`--redirects=3 --log-dir LOG`) and its own messages into a file of ddpify's. `Relay` copies
local rank 0's two files to ddpify's stdout and stderr while the job runs; a traceback there is
held back for `HOLD_S` seconds, because when the job is failing it is usually the echo of
another rank's failure ("Connection closed by peer"), and the summary shows the cause instead.
`first_failure` finds the cause: the earliest error file (the runtime writes one per uncaught
exception, with the time to the microsecond), else the rank torchrun names as its root cause.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HOLD_S = 3.0
POLL_S = 0.1
TRACEBACK = "Traceback (most recent call last):"
TRACEBACK_LINE = re.compile(rb"(\[rank\d+\]: )?" + re.escape(TRACEBACK.encode()))  # torch may prefix [rankN]:
RANK_PREFIX = re.compile(r"^\[rank\d+\]: ")
MAX_TRACEBACK_LINES = 26  # with the summary line, a failure reads in at most 30 lines
ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+) \(local_rank: (\d+)\).*?exitcode\s*:\s*(-?\d+)", re.S)
FRAME = re.compile(r'^(\s*File "(?P<file>[^"]+)", line (?P<line>\d+))')


def attempts(log_dir: Path) -> list[Path]:
    """torchrun's attempt folders under `log_dir`, oldest first."""
    found = log_dir.glob("*/attempt_*")
    return sorted(found, key=lambda p: (p.parent.name, int(p.name.rsplit("_", 1)[1])))


class Relay(threading.Thread):
    """Copies local rank 0's output from torchrun's log files to this process's stdout and
    stderr until `finish`."""

    def __init__(self, log_dir: Path) -> None:
        super().__init__(daemon=True)
        self.log_dir = log_dir
        self.offsets: dict[Path, int] = {}
        self.held = b""
        self.held_since: float | None = None
        self.at_line_start = True
        self.done = threading.Event()
        self.muted = False

    def run(self) -> None:
        while not self.done.wait(POLL_S):
            self.pump()

    def finish(self, failed: bool) -> None:
        """Stop, after copying what is left; a held traceback is shown only if the job succeeded."""
        self.done.set()
        self.join()
        self.pump()
        if not failed:
            self._write(sys.stderr, self.held)
        self.held = b""

    def mute(self) -> None:
        """Show nothing more (after Ctrl-C: the workers' last words are the interruption's)."""
        self.muted = True

    def pump(self) -> None:
        for attempt in attempts(self.log_dir):
            for name, stream in (("stdout.log", sys.stdout), ("stderr.log", sys.stderr)):
                data = self._read(attempt / "0" / name)
                if data and not self.muted:
                    self._write(stream, data) if name == "stdout.log" else self._from_stderr(data)
        if self.held_since is not None and time.monotonic() - self.held_since > HOLD_S and not self.muted:
            self._write(sys.stderr, self.held)  # the job lives on: it was no failure
            self.held, self.held_since = b"", None

    def _read(self, path: Path) -> bytes:
        try:
            with open(path, "rb") as f:
                f.seek(self.offsets.get(path, 0))
                data = f.read()
        except OSError:
            return b""
        self.offsets[path] = self.offsets.get(path, 0) + len(data)
        return data

    def _from_stderr(self, data: bytes) -> None:
        for piece in data.splitlines(keepends=True):
            if self.at_line_start and TRACEBACK_LINE.match(piece) and self.held_since is None:
                self.held_since = time.monotonic()
            if self.held_since is not None:
                self.held += piece
            else:
                self._write(sys.stderr, piece)
            self.at_line_start = piece.endswith(b"\n")

    @staticmethod
    def _write(stream, data: bytes) -> None:
        if not data:
            return
        try:
            stream.buffer.write(data)
            stream.flush()
        except (OSError, ValueError):  # the terminal is gone
            pass


@dataclass
class Failure:
    """The first process that failed: its global rank (None if unknown), local rank and exit
    code as torchrun reports them, and its traceback."""

    rank: int | None
    local_rank: int | None
    exitcode: int | None
    traceback: list[str]


def first_failure(log_dir: Path, launcher_log: Path) -> Failure:
    """The failure that came first, from the error files of the last attempt, torchrun's own
    report and the failing worker's stderr; torchrun's last lines when no worker failed (an
    option torchrun refused, say)."""
    report = launcher_log.read_text(errors="replace") if launcher_log.exists() else ""
    attempt = (attempts(log_dir) or [None])[-1]
    match = ROOT_CAUSE.search(report)
    rank, local, code = (int(g) for g in match.groups()) if match else (None, None, None)
    errors = []
    for path in attempt.glob("*/error.json") if attempt is not None else ():
        try:
            extra = json.loads(path.read_text())["message"]["extraInfo"]
            errors.append((float(extra.get("ddpify_time", extra["timestamp"])), int(path.parent.name),
                           extra["py_callstack"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    if errors:
        _, first_local, callstack = min(errors)
        if first_local != local:
            rank = code = None
        return Failure(rank, first_local, code, callstack.rstrip().splitlines())
    if attempt is not None and local is not None:
        stderr = (attempt / str(local) / "stderr.log")
        text = stderr.read_text(errors="replace") if stderr.exists() else ""
        start = text.rfind(TRACEBACK)
        text = text[start:] if start >= 0 else "\n".join(text.splitlines()[-10:])
        lines = [RANK_PREFIX.sub("", line) for line in text.rstrip().splitlines()]
        return Failure(rank, local, code, lines)
    return Failure(None, None, None, report.rstrip().splitlines()[-10:])


def summary(failure: Failure, code: int, where: str, locate: Callable[[str, int], str | None]
            ) -> list[str]:
    """The lines to print for a failed job: the traceback (frames in a converted notebook
    annotated by `locate(file, line)` with their cell), cut to `MAX_TRACEBACK_LINES`, then one line."""
    lines = []
    for line in failure.traceback:
        frame = FRAME.match(line)
        cell = locate(frame.group("file"), int(frame.group("line"))) if frame else None
        lines.append(f"{line} ({cell})" if cell else line)
    if len(lines) > MAX_TRACEBACK_LINES:
        cut = len(lines) - MAX_TRACEBACK_LINES + 2
        lines = [lines[0], f"  ... {cut} more lines (see the log)", *lines[cut + 1:]]
    who = "a process" if failure.local_rank is None else \
        f"rank {failure.rank}" if failure.rank is not None else f"local rank {failure.local_rank}"
    exit_code = f", exit code {failure.exitcode}" if failure.exitcode is not None else ""
    return [*lines, f"ddpify run: {who} failed first{exit_code}; the job exits {code}. {where}"]
