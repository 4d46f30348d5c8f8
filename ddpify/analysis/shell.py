"""Which shell commands a program runs write files? `os.system("mkdir -p out")`,
`subprocess.run(["cp", src, dst])`, `os.system(f"rm -rf {d}")`, `subprocess.call("tar xf a.tar",
shell=True)`: the command's first word is one that writes (`mkdir`, `cp`, `mv`, `rm`, `touch`,
`tar`, `unzip`, `wget`, ...), or it sends its output into a file (`echo done > log.txt`).

Under torchrun every process runs them: `convert` names each with a warning where it is not under
a rank test already (main-process-only); it does not guard them, since what a command writes, and
whether the other processes read it at once (a folder they save into, a file copied into place),
is in a string ddpify does not read.

Near misses: `os.system("nvidia-smi")`, `subprocess.run(["git", "rev-parse", "HEAD"])`,
`subprocess.check_output("ls data", shell=True)`: they read.
"""

from __future__ import annotations

import re

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts

RUNNERS = frozenset({"os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
                     "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput",
                     "subprocess.getstatusoutput"})
WRITING = frozenset({"mkdir", "md", "del", "copy", "move", "cp", "mv", "rm", "rmdir", "touch", "tar", "unzip", "gunzip", "gzip", "zip", "7z",
                     "ln", "rsync", "wget", "curl", "tee", "dd", "chmod", "install"})


def shell_write(facts: Facts, call: cst.Call) -> str | None:
    """The writing command a call of a shell runner runs (`mkdir`, `cp`, `>`), or None."""
    if facts.qualify(call.func) not in RUNNERS or not call.args or call.args[0].keyword is not None:
        return None
    command = call.args[0].value
    if isinstance(command, (cst.List, cst.Tuple)):
        first = command.elements[0].value if command.elements else None
        text = mt.string_value(first) or "" if first is not None else ""
    else:
        text = mt.string_value(command) or mt.literal_prefix(command)
    words = text.split()
    if words and words[0].rsplit("/", 1)[-1] in WRITING:
        return words[0].rsplit("/", 1)[-1]
    return ">" if ">" in re.sub(r"\d?>\s*(/dev/null|&\d)", "", text) else None  # not `2>&1`, `> /dev/null`
