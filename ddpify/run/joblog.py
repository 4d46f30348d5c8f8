"""What a user sees of a job that `ddpify run` launched: rank 0's output as it comes, and when the
job fails, the first failing process's own traceback and one line, instead of every rank's.

torchrun writes each worker's stdout and stderr into `LOG/<run>/attempt_<n>/<local rank>/`
(`--redirects=3 --log-dir LOG`) and its own messages into a file of ddpify's. `Relay` copies
local rank 0's two files to ddpify's stdout and stderr while the job runs. A traceback there is
held back: when the job is failing it is usually the echo of another rank's failure
("Connection closed by peer"), and the summary shows the cause instead. It is shown after all
when the worker lives on: when it writes a line after the exception's, when `HOLD_S` seconds
pass without a line, or when the job succeeds.
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

HOLD_S = 60.0
SILENT_S = 120.0  # rank 0 quiet this long: say so, once per quiet stretch
POLL_S = 0.1
TRACEBACK = "Traceback (most recent call last):"
CHAINED = (b"During handling of the above exception", b"The above exception was the direct cause")
TRACEBACK_LINE = re.compile(rb"(\[rank\d+\]: )?" + re.escape(TRACEBACK.encode()))  # torch may prefix [rankN]:
RANK_PREFIX = re.compile(r"^\[rank\d+\]: ")
RANK_PREFIX_BYTES = re.compile(rb"\[rank\d+\]: ")
MAX_TRACEBACK_LINES = 26  # with the summary line, a failure reads in at most 30 lines
ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+) \(local_rank: (\d+)\).*?exitcode\s*:\s*(-?\d+)", re.S)
FRAME = re.compile(r'^(\s*File "(?P<file>[^"]+)", line (?P<line>\d+))')


def attempts(log_dir: Path, earlier: frozenset[Path] = frozenset()) -> list[Path]:
    """torchrun's attempt folders under `log_dir`, oldest first, but those of the run folders
    in `earlier` (there before this job: a `--log-dir` of the user's may hold other jobs')."""
    found = [p for p in log_dir.glob("*/attempt_*") if p.parent not in earlier]
    return sorted(found, key=lambda p: (p.parent.name, int(p.name.rsplit("_", 1)[1])))


class Relay(threading.Thread):
    """Copies local rank 0's output from torchrun's log files to this process's stdout and
    stderr until `finish`."""

    def __init__(self, log_dir: Path, rewrite: Callable[[bytes], bytes] = lambda line: line) -> None:
        super().__init__(daemon=True)
        self.log_dir = log_dir
        self.rewrite = rewrite  # a traceback frame of the private copy -> the user's file and line
        self.earlier = frozenset(log_dir.glob("*"))  # other jobs' folders: made before this one starts
        self.offsets: dict[Path, int] = {}
        self.held = b""
        self.held_since: float | None = None  # when the last line was held
        self.raised = False  # the held traceback has reached its exception line
        self.at_line_start = True
        self.pending = b""  # the start of a line whose end has not come yet
        self.done = threading.Event()
        self.muted = False
        self.last_output = time.monotonic()
        self.stalled = False  # rank 0 has been quiet for SILENT_S (said once; kept if then stopped)

    def run(self) -> None:
        while not self.done.wait(POLL_S):
            self.pump()

    def finish(self, failed: bool) -> None:
        """Stop, after copying what is left; a held traceback is shown only if the job succeeded."""
        self.done.set()
        if self.ident is not None:
            self.join()
        self.pump()
        self._line(self.pending)
        if not failed:
            self._write(sys.stderr, self.held)
        self.held = self.pending = b""

    def mute(self, signum: int) -> None:
        """Show nothing more: after signal `signum` (Ctrl-C) the workers' last words are the
        interruption's."""
        self.muted = True

    def pump(self) -> None:
        got, printed = b"", False
        for attempt in attempts(self.log_dir, self.earlier):
            out, err = self._read(attempt / "0" / "stdout.log"), self._read(attempt / "0" / "stderr.log")
            if not self.muted:
                self._write(sys.stdout, out)
                self._from_stderr(err)
            got, printed = got + err, printed or bool(out)
        if self.muted:
            return
        self._note_silence(printed or bool(got))
        if not got and self.pending and not _may_begin_traceback(self.pending):
            self._line(self.pending)  # a line in the making (a progress bar): show it now
            self.pending = b""
        if self.held_since is not None and time.monotonic() - self.held_since > HOLD_S:
            self._write(sys.stderr, self.held)  # the job lives on, silent: it was no failure
            self.held, self.held_since = b"", None

    def _note_silence(self, spoke: bool) -> None:
        """After `SILENT_S` seconds without a byte from rank 0, one line saying so."""
        now = time.monotonic()
        if spoke:
            self.last_output, self.stalled = now, False
        elif not self.stalled and now - self.last_output >= SILENT_S:
            self.stalled = True
            self._write(sys.stderr, f"ddpify run: no output for {now - self.last_output:.0f} s; the job is still "
                                    f"running (every process's output: {self.log_dir})\n".encode())

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
        """Show whole lines (a worker writes a line in several pieces); keep the rest pending."""
        lines = (self.pending + data).splitlines(keepends=True)
        self.pending = lines.pop() if lines and not lines[-1].endswith((b"\n", b"\r")) else b""
        for line in lines:
            self._line(line)

    def _line(self, piece: bytes) -> None:
        piece = self.rewrite(piece)
        if self.at_line_start and self.held_since is None and TRACEBACK_LINE.match(piece):
            self.held_since, self.raised = time.monotonic(), False
        elif self.at_line_start and self.held_since is not None:
            text = piece[m.end():] if (m := RANK_PREFIX_BYTES.match(piece)) else piece
            if self.raised and text.strip() and not text[:1].isspace() and not TRACEBACK_LINE.match(text) \
                    and not text.startswith(CHAINED):  # output after the exception: the worker lives on
                self._write(sys.stderr, self.held)
                self.held, self.held_since = b"", None
            self.raised = self.raised or bool(text.strip()) and not text[:1].isspace()
            if self.held_since is not None:
                self.held_since = time.monotonic()
        if self.held_since is not None:
            self.held += piece
        else:
            self._write(sys.stderr, piece)
        if piece:
            self.at_line_start = piece.endswith((b"\n", b"\r"))

    @staticmethod
    def _write(stream, data: bytes) -> None:
        if not data:
            return
        try:
            stream.buffer.write(data)
            stream.flush()
        except (OSError, ValueError):  # the terminal is gone
            pass


def _may_begin_traceback(data: bytes) -> bool:
    """Whether `data`, the start of a line, may grow into a traceback's first line."""
    rest = data[prefix.end():] if (prefix := RANK_PREFIX_BYTES.match(data)) else data
    return TRACEBACK.encode().startswith(rest) or re.fullmatch(rb"\[(r(a(n(k\d*(\]:? ?)?)?)?)?)?", data) is not None


@dataclass
class Failure:
    """The first process that failed: its global rank (None if unknown), local rank and exit
    code as torchrun reports them, and its traceback."""

    rank: int | None
    local_rank: int | None
    exitcode: int | None
    traceback: list[str]


def first_failure(log_dir: Path, launcher_log: Path, earlier: frozenset[Path] = frozenset()) -> Failure:
    """The failure that came first, from the error files of the last attempt (the run folders
    in `earlier` are other jobs'), torchrun's own report and the failing worker's stderr;
    torchrun's last lines when no worker failed (an option torchrun refused, say)."""
    report = launcher_log.read_text(errors="replace") if launcher_log.exists() else ""
    attempt = (attempts(log_dir, earlier) or [None])[-1]
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


def summary(failure: Failure, code: int, where: str, locate: Callable[[str, int], str | None],
            rewrite: Callable[[str], str] = lambda line: line) -> list[str]:
    """The lines to print for a failed job: the traceback (frames of a converted copy named by
    `rewrite` as the user's file and line, frames in a converted notebook annotated by
    `locate(file, line)` with their cell), cut to `MAX_TRACEBACK_LINES`, then one line."""
    lines = []
    for line in map(rewrite, failure.traceback):
        frame = FRAME.match(line)
        cell = locate(frame.group("file"), int(frame.group("line"))) if frame else None
        lines.append(f"{line} ({cell})" if cell else line)
    if len(lines) > MAX_TRACEBACK_LINES:
        tail = lines[2 - MAX_TRACEBACK_LINES:]
        lines = [lines[0], f"  ... {len(lines) - 1 - len(tail)} more lines (see the log)", *tail]
    who = "a process" if failure.local_rank is None else \
        f"rank {failure.rank}" if failure.rank is not None else f"local rank {failure.local_rank}"
    exit_code = f", exit code {failure.exitcode}" if failure.exitcode is not None else ""
    return [*lines, f"ddpify run: {who} failed first{exit_code}; the job exits {code}." + (f" {where}" if where else "")]


HANG_HEAD = re.compile(r"ddpify hang: rank (?P<rank>\d+) (?P<state>waits in|is at) .*")


def hang_report(log_dir: Path, earlier: frozenset[Path] = frozenset()) -> list[str]:
    """The self-check's `ddpify hang: rank R waits in ... / is at ...` lines of every process of
    the last attempt, by rank: each process writes its own into its own stderr, and only rank
    0's is shown live. Empty when the job did not hang in a collective."""
    attempt = (attempts(log_dir, earlier) or [None])[-1]
    found = {}
    for path in attempt.glob("*/stderr.log") if attempt is not None else ():
        for line in path.read_text(errors="replace").splitlines():
            head = HANG_HEAD.fullmatch(RANK_PREFIX.sub("", line))
            if head:
                found.setdefault(int(head.group("rank")), head.group(0))
    return [found[rank] for rank in sorted(found)]


def hang_summary(report: list[str], code: int, where: str, rewrite: Callable[[str], str] = lambda line: line
                 ) -> list[str]:
    """The lines to print for a job that hung: where each process was, then one line naming the
    ranks that never reached the collective the others waited in (not the rank whose timeout
    ended the job, nor the echo of its closed connection)."""
    late = [HANG_HEAD.fullmatch(line).group("rank") for line in report if " is at " in line]
    who = f"rank {', '.join(late)} never reached the collective the others waited in" if late else \
        "every process waited in a collective"
    return [*map(rewrite, report), f"ddpify run: the job hung: {who}; the job exits {code}." +
            (f" {where}" if where else "")]


def self_check_lines(path: Path, rewrite: Callable[[str], str] = lambda line: line) -> list[str]:
    """The converted program's self-check findings (the runtime writes them to
    `DDPIFY_VERIFY_JSON`), repeated at the job's end, where the block printed during training
    may have scrolled away: a heading, then one line each. Empty when there were none."""
    try:
        findings = json.loads(path.read_text())
        shown = [rewrite(f"  {f['file']}:{f['line']}: {f['check']}: {f['message']}; {f['fix']}") for f in findings]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [f"ddpify run: the self-check found {len(shown)} problem(s) during the job:", *shown] if shown else []
