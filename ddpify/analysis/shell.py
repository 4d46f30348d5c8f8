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

A command may also start the job's processes (`relaunch`): a program that runs itself again
under torchrun (ultralytics' `subprocess.run(generate_ddp_command(world_size, self))`, the list
`[sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", ..., file]` a helper returns)
is its launching process up to that call: what it ran before it ran once, before any worker
started (`lightning.before_launch` takes it for "main process first", as Lightning's own
launch).
"""

from __future__ import annotations

import re

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.facts import Facts

RUNNERS = frozenset({"os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
                     "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput",
                     "subprocess.getstatusoutput"})
# what a command that starts the job's processes names (as a word of a string, or an item of a list)
LAUNCH_WORDS = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch"})
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


def relaunch(facts: Facts, call: cst.Call) -> bool:
    """Does `call` run a command that starts the job's processes (`subprocess.run(["torchrun",
    "--nproc_per_node", "2", "train.py"])`, `os.system(f"python -m torch.distributed.run {args}")`)?
    The command is read where it is written, in the names it is assigned to, and in what the
    program's functions return for it (`command = generate_ddp_command(n, self)`, whose
    `return [sys.executable, "-m", "torch.distributed.run", ...] + sys.argv[1:]`)."""
    if facts.qualify(call.func) not in RUNNERS or not call.args or call.args[0].keyword is not None:
        return False
    return _names_launcher(facts, call.args[0].value, 3)


def _names_launcher(facts: Facts, expr: cst.BaseExpression, depth: int) -> bool:
    """Does a string of `expr`, or of what its names and calls of the program hold (`depth` deep),
    name a launcher (`LAUNCH_WORDS`)?"""
    for node in facts.findall(expr, (cst.BaseExpression, cst.FormattedStringText)):
        if isinstance(node, (cst.SimpleString, cst.FormattedStringText)):
            text = mt.string_value(node) if isinstance(node, cst.SimpleString) else node.value
            if text is not None and LAUNCH_WORDS & set(text.split()):
                return True
        elif depth and isinstance(node, cst.Name) and (ref := facts.ref(node)) is not None:
            if any(_names_launcher(facts, value, depth - 1) for _, value, _ in facts.writes(ref)):
                return True
        elif depth and isinstance(node, cst.Call):
            if any(_names_launcher(facts, r, depth - 1) for func in facts.user_functions(node) for r in facts.returned(func)):
                return True
    return False
