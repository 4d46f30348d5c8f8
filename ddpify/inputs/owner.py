"""Which process left a file behind, and whether it is still running.

A ddpify process killed by SIGKILL cannot clean up after itself: a rename phase cut short leaves
its journal (`ddpify.inputs.journal`), a `ddpify run` its private folder. Each records its owner,

    {"host": "node7", "pid": 4242, "started": 1718233}

so that a later command can tell a dead owner's leftovers, which it finishes or removes, from a
live one's, which it leaves alone. `started` is the process's start time (Linux's
/proc/PID/stat, in clock ticks since boot), so that a new process that reuses the pid is not
taken for the owner; elsewhere it is None and the pid alone decides.
"""

from __future__ import annotations

import os


def me() -> dict:
    """This process, as a record's owner."""
    return {"host": os.uname().nodename, "pid": os.getpid(), "started": _started(os.getpid())}


def gone(owner: object) -> bool:
    """Whether the process `owner` (as `me` wrote it) has ended. One of another machine (a shared
    folder) is never taken for ended: nothing here can tell."""
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int) or owner["pid"] <= 0:
        return False
    if owner.get("host") != os.uname().nodename:
        return False
    pid = owner["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: running
        pass
    started = _started(pid)
    return started == "zombie" or (started is not None and owner.get("started") not in (None, started))


def _started(pid: int) -> int | str | None:
    """The start time of `pid` from /proc ("zombie" for one that has ended, not yet waited for);
    None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # the name in brackets may hold spaces
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return "zombie"
    return int(fields[19])  # field 22 of proc(5); the split starts at field 3
