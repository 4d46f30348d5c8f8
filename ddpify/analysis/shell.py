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

One command is read: a lone `mkdir` (`os.system('mkdir {0}'.format(opt.outf))`, `f"mkdir {d}"`,
`["mkdir", d]`; `shell_folder`) makes a folder, as `os.makedirs(d)` does: without `-p` it is
guarded as `os.makedirs(d)` is (the processes race to make it, and the slower ones fail); with
`-p` it runs on every process as `os.makedirs(d, exist_ok=True)` does (harmless).
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


def shell_folder(facts: Facts, call: cst.Call) -> tuple[bool, cst.BaseExpression | None] | None:
    """(whether it accepts a folder that exists, the folder's expression where the call names it)
    for a shell runner's call that runs one `mkdir` and nothing else (no `;`, `&&`, `|`, `>`):
    `os.system('mkdir {0}'.format(d))`, `os.system(f"mkdir -p {d}")`, `os.system("mkdir " + d)`,
    `subprocess.run(["mkdir", "-p", d])`. None for any other command."""
    if shell_write(facts, call) != "mkdir":
        return None
    command = call.args[0].value
    if isinstance(command, (cst.List, cst.Tuple)):
        parts = [e.value for e in command.elements if isinstance(e, cst.Element)]
        flags = [mt.string_value(v) for v in parts[1:]]
        named = [v for v, f in zip(parts[1:], flags) if f is None or not f.startswith("-")]
        return "-p" in flags or "--parents" in flags, named[0] if len(named) == 1 else None
    text = _template(command)
    if re.search(r"[;&|<>]", text):
        return None
    tolerant = bool(re.search(r"\s(-p|--parents)\b", text))
    folder = None
    if isinstance(command, cst.Call) and isinstance(command.func, cst.Attribute) and command.func.attr.value == "format" \
            and len(command.args) == 1 and command.args[0].keyword is None and not command.args[0].star:
        folder = command.args[0].value  # 'mkdir {0}'.format(d)
    elif isinstance(command, cst.FormattedString):
        exprs = [p for p in command.parts if isinstance(p, cst.FormattedStringExpression)]
        folder = exprs[0].expression if len(exprs) == 1 else None  # f"mkdir {d}"
    elif isinstance(command, cst.BinaryOperation) and isinstance(command.operator, cst.Add):
        folder = command.right  # "mkdir " + d
    elif mt.string_value(command) is not None and len(text.split()) == 2 + tolerant:
        folder = cst.SimpleString(repr(text.split()[-1]))  # "mkdir out"
    return tolerant, folder


def _template(command: cst.BaseExpression) -> str:
    """The literal text of a command built from a string: the whole of a literal, of a
    `.format()` template and of an f-string's text parts, the start of `"mkdir " + d`."""
    if isinstance(command, cst.Call) and mt.is_attribute(command.func, "format"):
        command = command.func.value  # type: ignore[attr-defined]
    if isinstance(command, cst.FormattedString):
        return "".join(p.value for p in command.parts if isinstance(p, cst.FormattedStringText))
    return mt.string_value(command) or mt.literal_prefix(command)
