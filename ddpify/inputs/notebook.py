"""Jupyter notebooks (`.ipynb`) as scripts: the code cells in order, one `# %% [cell N]` marker
before each, IPython-only lines turned into comments.

Read with the standard library's `json`, not the Jupyter project's `nbformat`: the nbformat 4
file is plain, stable JSON and only two fields are needed (`cells[].cell_type` and
`cells[].source`, a string or a list of strings), so ddpify keeps no extra dependency and
installs without the network. nbformat 3 and older files (`worksheets`) are refused.

The script keeps one line per line of each cell (the marker adds one line per cell), so any
line of the script maps back to (cell, line) with `Script.locate`. Cells count from 1 and
include markdown cells, as they appear in the notebook.
"""

from __future__ import annotations

import ast
import bisect
import io
import json
import re
import shlex
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from ddpify.inputs.files import InputError
from ddpify.syntax.parse import compiled, one_line, python_compile
from ddpify.output.report import CHANGE, WARNING, Change

REWRITE = "notebook"  # the name on the records of this translation
TODO = "# TODO(ddpify):"

# Magics that only change how the notebook shows things: commented out, no TODO.
DISPLAY_ONLY = frozenset({"matplotlib", "config", "load_ext", "reload_ext", "autoreload", "aimport",
                          "pylab", "precision", "pprint", "xmode", "pdef", "pdoc", "psource", "who",
                          "whos", "lsmagic", "magic"})
# Magics whose argument (line magic) or body (cell magic) is Python: the code is kept.
PYTHON_BODY = frozenset({"time", "timeit", "capture", "prun"})
MAGIC = re.compile(r"(?P<indent>[ \t]*)(?:(?P<target>[\w.]+)\s*=\s*)?(?P<kind>%%|%|!!|!)(?P<name>\w*)")
# IPython's automagic and default aliases: `cd /content/drive/MyDrive/S5`, `ls`, `pip install x` run as
# `%cd ...` where the word names no variable of the notebook (a statement of its own, unindented).
AUTOMAGIC = re.compile(r"(?P<name>cd|ls|ll|pwd|pip|conda|mkdir|rmdir|mv|rm|cp|cat|env)(?=[ \t]|$)")
SHOW_ONLY = frozenset({"ls", "ll", "pwd"})  # automagics that only show the folder: commented out, no TODO


class NotebookError(InputError):
    """The file is not a notebook ddpify can read, or a cell does not parse (exit 2). One line."""


@dataclass
class Script:
    """A notebook as one Python script, and where each cell starts in it."""

    code: str
    starts: list[int] = field(default_factory=list)  # script line of each marker, in order
    cells: list[int] = field(default_factory=list)  # the notebook cell number of each marker
    changes: list[Change] = field(default_factory=list)  # IPython lines commented out

    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, line within that cell) of a script line: a marker, or a line before the
        first (where an added import goes), is the cell's first line; (0, 0) in a notebook
        without code cells, which records name as a whole."""
        if not self.cells:
            return 0, 0
        at = max(bisect.bisect_right(self.starts, line) - 1, 0)
        return self.cells[at], max(line - self.starts[at], 1)

    def where(self, name: str, line: int) -> tuple[str, int]:
        """(`nb.ipynb:cell 4`, line in that cell) for a record of the script's `line`; (`nb.ipynb`,
        0) where there is no cell to name."""
        cell, at = self.locate(line)
        return (f"{name}:cell {cell}", at) if cell else (name, 0)

    def locate_converted(self, converted: str, line: int) -> tuple[int, int]:
        """`locate` for a line of the script's conversion `converted`, which has lines added and
        changed: a kept line maps to itself, a changed one to the line it replaced, an added
        one to the line before it."""
        import difflib  # here: a script's conversion never asks

        matcher = difflib.SequenceMatcher(None, self.code.splitlines(), converted.splitlines(), autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if j1 < line <= j2:
                if tag == "equal":
                    return self.locate(i1 + line - j1)
                return self.locate(i1 + min(line - j1, i2 - i1) if tag == "replace" else max(i1, 1))
        return self.locate(line)


def to_script(name: str, data: bytes, markdown: bool = False) -> Script:
    """The code cells of the notebook `data` as a script (`markdown`: markdown cells kept as
    comments). Raises `NotebookError` naming `name` and, for a cell that does not parse, the
    cell and the line within it."""
    script = Script("")
    lines: list[str] = []
    cells = _cells(name, data)
    code = "\n".join(source for kind, source in cells if kind == "code")
    bound = _bound_words(code)
    runs = _Runs(Path(name).parent, frozenset(re.findall(r"\b_\w+", code)))
    for number, (kind, source) in enumerate(cells, 1):
        if kind == "markdown" and markdown:
            body, notes = [f"# {line}".rstrip() for line in source.splitlines()], []
        elif kind == "code":
            body, notes = _translate(_leading_indent(source.splitlines()), bound, runs)
            _check_cell(name, number, "\n".join(body))
        else:
            continue
        if lines:
            lines.append("")
        marker = len(lines) + 1
        script.starts.append(marker)
        script.cells.append(number)
        lines += [f"# %% [cell {number}]" + (" (markdown)" if kind == "markdown" else ""), *body]
        script.changes += [Change(REWRITE, marker + at, message, k) for at, k, message in notes]
    script.code = "\n".join(lines) + "\n"
    _check_script(name, script)
    script.changes = sorted(script.changes + _comment_display(script.code, lines), key=lambda c: c.line)
    script.code = "\n".join(lines) + "\n"  # with display(...) lines commented out
    return script


def _cells(name: str, data: bytes) -> list[tuple[str, str]]:
    """(cell_type, source) of every cell, in order."""
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"{name}: not a notebook: not UTF-8 text ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{name}: not a notebook: invalid JSON at line {exc.lineno}, "
                            f"column {exc.colno}: {exc.msg}") from exc
    if not isinstance(notebook, dict):
        raise NotebookError(f"{name}: not a notebook: the JSON is not an object")
    version = notebook.get("nbformat", 4)
    if not isinstance(version, int):
        raise NotebookError(f'{name}: not a notebook: "nbformat" is {version!r}, not a number')
    if "worksheets" in notebook or version < 4:
        raise NotebookError(f"{name}: nbformat {version} notebooks are not "
                            "supported: open and save it in Jupyter to upgrade it to version 4")
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise NotebookError(f'{name}: not a notebook: no "cells" list')
    result = []
    for number, cell in enumerate(cells, 1):
        source = cell.get("source", "") if isinstance(cell, dict) else None
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str) or not isinstance(cell.get("cell_type"), str):
            raise NotebookError(f"{name}:cell {number}: not a notebook cell "
                                '(needs "cell_type" and "source" as text)')
        result.append((cell["cell_type"], source))
    return result


def _check_cell(name: str, number: int, code: str) -> None:
    """`NAME:cell N:LINE:COL: cannot parse: ...` (as Python reports it) when the cell does not compile."""
    try:
        python_compile(code)
    except SyntaxError as exc:
        raise NotebookError(f"{name}:cell {number}:{exc.lineno or 1}:{exc.offset or 1}: cannot parse: "
                            f"{one_line(exc.msg)}") from exc


def _check_script(name: str, script: Script) -> None:
    """The cells together must compile too (a `from __future__` import in a later cell does not)."""
    try:
        python_compile(script.code)
    except SyntaxError as exc:
        cell, line = script.locate(exc.lineno or 1)
        raise NotebookError(f"{name}:cell {cell}:{line}:{exc.offset or 1}: cannot parse: {one_line(exc.msg)}") from exc
    compiled(script.code)  # (the script's parse, next, need not compile the same code again)


# ---- IPython-only lines -----------------------------------------------------------------------

def _leading_indent(lines: list[str]) -> list[str]:
    """The cell as IPython runs it: where its first line is indented (` train.data[0].shape`), that
    indentation is taken off every line that starts with it (IPython's `leading_indent`)."""
    indent = re.match(r"[ \t]+", lines[0]) if lines else None
    if indent is None:
        return lines
    return [line[indent.end():] if line.startswith(indent.group()) else line for line in lines]


def _bound_words(code: str) -> frozenset[str]:
    """The automagic words the notebook's code binds (`env = gym.make(...)`, `import cat`, `for ls in ...`,
    `def cd(...)`): there the word is the variable, not IPython's command."""
    found = set()
    for match in re.finditer(r"(?:^|[^\w.])(cd|ls|ll|pwd|pip|conda|mkdir|rmdir|mv|rm|cp|cat|env)\b", code):
        after = code[match.end():match.end() + 3].lstrip(" \t")
        before = code[max(match.start() - 12, 0):match.start(1)]
        if after[:1] == "=" and after[:2] != "==" or re.search(r"(?:\bdef|\bclass|\bimport|\bas|\bfor|,)\s*$", before):
            found.add(match.group(1))
    return frozenset(found)


def _automagic(lines: list[str], i: int, bound: frozenset[str]) -> str | None:
    """The `%`-magic an unindented line runs as by IPython's automagic (`cd /data` -> `%cd /data`), if it
    does: its word names no variable of the notebook, and it starts a statement."""
    match = AUTOMAGIC.match(lines[i])
    if match is None or match.group("name") in bound or _open(lines[:i]):
        return None
    text = lines[i].strip()
    rest = text[len(match.group("name")):].lstrip()
    if _is_python(text) and rest and rest[0] not in "-./~":  # `cat(x)`, `env.step(a)`: Python
        return None
    return "%" + text


@dataclass(frozen=True)
class _Runs:
    """What `%run FILE.py` may become: the notebook's folder, and the `_`-names its code uses."""

    folder: Path | None = None
    private: frozenset[str] = frozenset()

    def as_import(self, command: str) -> tuple[str | None, str]:
        """(`from helper import *`, what it does) for `%run helper.py` where the import runs what
        `%run` does: a file named as a module, given no option, whose definitions a star import
        hands over whole (no `__all__`, no `_`-name the notebook reads) and with no `if __name__ ==
        "__main__":` block (`%run` runs it, an import does not); else (None, why it is left to do
        by hand). A file in another folder (`%run ../src/helper.py`, relative to where the notebook
        runs, as `%run` reads it) puts that folder first on `sys.path` for the import; arguments
        (`%run helper.py --epochs 3`) are its `sys.argv` while it runs, as under `%run`, and the
        notebook's own after it:

            import sys; _ddpify_argv, sys.argv = sys.argv, ["helper.py", "--epochs", "3"]; from helper import *; sys.argv = _ddpify_argv
        """
        words = shlex.split(command) if command.count('"') % 2 == 0 and command.count("'") % 2 == 0 else []
        file = words[1] if len(words) > 1 and not words[1].startswith("-") else ""
        folder, _, name = file.rpartition("/")
        module = name[:-3] if name.endswith(".py") else ""
        if not module.isidentifier() or self.folder is None or folder.startswith(("/", "~", "$")):
            return None, ("an IPython magic, which the script does not run: do it by hand (`%run` of a file "
                          "given no option becomes its import)")
        try:
            tree = ast.parse((self.folder / file).read_bytes())
        except (OSError, SyntaxError, ValueError):
            return None, f"`{file}` is not a Python file beside the notebook that ddpify can read: do it by hand"
        defined = {n.id for node in tree.body for n in ast.walk(node) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Store) and not isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        defined |= {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        if any(isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) for node in tree.body):
            why = f"`{file}` has an `if __name__ == \"__main__\":` block, which `%run` runs and an import does not"
        elif "__all__" in defined:
            why = f"`{file}` sets `__all__`, so `from {module} import *` would not hand over every name `%run` does"
        elif defined & self.private:
            why = f"the notebook reads `{sorted(defined & self.private)[0]}` of `{file}`, which `from {module} import *` leaves out"
        else:
            line, said = f"from {module} import *", ""
            if len(words) > 2:
                line = f"_ddpify_argv, sys.argv = sys.argv, {[file, *words[2:]]!r}; {line}; sys.argv = _ddpify_argv"
                said += f", its arguments {' '.join(words[2:])} its sys.argv while it runs"
            if folder:
                line = f"sys.path.insert(0, {folder!r}); {line}"
                said += f", its folder {folder} first on sys.path"
            line = f"import sys; {line}" if len(words) > 2 or folder else line
            return (line, f"`from {module} import *`{said}: the definitions of {file} are the notebook's as under %run, "
                    "and ddpify reads (and converts) that module with it")
        return None, f"{why}: do it by hand"


def _translate(lines: list[str], bound: frozenset[str] = frozenset(),
               runs: _Runs = _Runs()) -> tuple[list[str], list[tuple[int, str, str]]]:
    """The cell's lines with IPython syntax commented out, line for line, and a note
    (line in the cell, kind, message) for each commented line (`bound`: the automagic words the
    notebook binds as variables; `runs`: what `%run FILE.py` becomes, an import where it can)."""
    out, notes = list(lines), []
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        name = MAGIC.match(first).group("name")
        if name not in PYTHON_BODY:
            out = [f"# {line}".rstrip() for line in lines]
            out[0] = (f"# IPython cell magic: {first}  {TODO} this cell is not Python and does not run: "
                      "do it by hand")
            return out, [(1, WARNING, f"cell magic %%{name}: the cell is commented out and does not run")]
        out[0] = f"# IPython cell magic: {first} (the cell's code runs as is, once)"
        notes.append((1, CHANGE, f"cell magic %%{name} commented out: the cell's code runs as is, once"))
    i = 1 if first.startswith("%%") else 0
    while i < len(out):
        magic = _automagic(out, i, bound)
        if magic is not None:
            word = AUTOMAGIC.match(magic[1:]).group("name")
            kind, what, _ = _describe(magic, magic, continued=False)
            if word in SHOW_ONLY:
                kind, what = CHANGE, "an IPython command that only shows the folder, commented out"
            out[i] = f"# {out[i].strip()}" + (f"  {TODO} {what}" if kind == WARNING else "")
            notes.append((i + 1, kind, f"`{out[i][2:].split('  #')[0]}` (IPython's `{magic.split()[0]}`): {what}"))
            i += 1
            continue
        if not _ipython_line(out, i):
            i += 1
            continue
        end = i
        while out[end].rstrip().endswith("\\") and end + 1 < len(out):
            end += 1
        command = " ".join(line.strip().rstrip("\\").strip() for line in out[i:end + 1])
        kind, what, keep = _describe(out[i], command, continued=end > i)
        run = MAGIC.match(out[i])
        if run is not None and run.group("kind") == "%" and run.group("name") == "run" and not run.group("target") \
                and end == i:
            keep, what = runs.as_import(command)
            kind = CHANGE if keep is not None else WARNING
        indent = re.match(r"[ \t]*", out[i]).group()
        if keep is not None:
            out[i] = f"{indent}{keep}  # IPython: {command}"
        else:
            out[i] = f"{indent}{'pass  ' if indent else ''}# {out[i].strip()}"
            for j in range(i + 1, end + 1):
                out[j] = f"{indent}# {out[j].strip()}"
            if kind == WARNING:
                out[end] += f"  {TODO} {what}"
        notes.append((i + 1, kind, f"`{command}`: {what}"))
        i = end + 1
    return out, notes


def _ipython_line(lines: list[str], i: int) -> bool:
    """Whether line `i` is IPython syntax (a magic, a shell escape, `x?` help) that starts a
    statement, not a line inside a string or a bracket."""
    text = lines[i].strip()
    if not (MAGIC.match(lines[i]) or text.endswith("?")) or _is_python(text):
        return False
    return not _open(lines[:i])


def _is_python(text: str) -> bool:
    """`x = 5 % 2`, `a != b` and friends match the magic pattern but are Python."""
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _open(lines: list[str]) -> bool:
    """Whether these lines end inside a string, a bracket or a backslash continuation."""
    text = "\n".join(lines) + "\n"
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text).readline):
            pass
    except IndentationError:  # a dedent tokenize cannot match: not an open bracket or string
        return False
    except (tokenize.TokenError, SyntaxError):
        return True
    return False


def _describe(line: str, command: str, continued: bool) -> tuple[str, str, str | None]:
    """(kind, what happens to it, Python to keep or None) for the IPython `command` that
    starts on `line` (`continued` on the next lines by backslashes)."""
    match = MAGIC.match(line)
    if match is None:
        return CHANGE, "IPython help, commented out", None
    kind, name, target = match.group("kind"), match.group("name"), match.group("target")
    rest = line.strip()[match.end() - len(match.group("indent")):].strip()
    unset = f"; `{target}` is not set" if target else ""
    if kind.startswith("!"):
        return WARNING, f"a shell command, which the script does not run{unset}: run it before launching", None
    if name in DISPLAY_ONLY and not target:
        return CHANGE, "an IPython display setting, not needed in a script: commented out", None
    if name in PYTHON_BODY and rest and not continued and not target:
        return CHANGE, f"IPython %{name} removed: the code runs as is, once", rest
    if name == "cd" and not target:
        return WARNING, "the script does not change its folder: launch it from that folder (its relative paths are read there)", None
    if name in ("pip", "conda") and not target:
        return WARNING, "a package install, which the script does not run: run it before launching", None
    return WARNING, f"an IPython magic, which the script does not run{unset}: do it by hand", None


def _comment_display(code: str, lines: list[str]) -> list[Change]:
    """`display(...)` statements of `code`, when nothing in it defines `display` (IPython does):
    commented out in `lines` (its lines, a TODO on their first line), one record each."""
    if "display" not in code:  # most notebooks: the tree below costs what the rest of to_script does
        return []
    nodes = list(ast.walk(ast.parse(code)))
    if any(_binds(node, "display") for node in nodes):
        return []
    calls = [node for node in nodes if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id == "display"]
    alone = {id(node.value): node for node in nodes
             if isinstance(node, ast.Expr) and node.value in calls and _alone(lines, node)}
    changes = []
    for call in calls:
        statement = alone.get(id(call))
        if statement is None:
            changes.append(Change(REWRITE, call.lineno, "display(...) is IPython's and is not defined in a "
                                  "script: define it, or remove this call", WARNING))
            continue
        first, last = statement.lineno - 1, statement.end_lineno - 1
        indent = re.match(r"[ \t]*", lines[first]).group()
        for i in range(first, last + 1):
            lines[i] = f"{indent}{'pass  ' if indent and i == first else ''}# {lines[i].strip()}"
        lines[first] += f"  {TODO} display() is IPython's: print() what you want to see"
        changes.append(Change(REWRITE, call.lineno, "display(...) is IPython's and is not defined in a "
                              "script: commented out", WARNING))
    return changes


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.split(".")[0]) == name or alias.name == "*"
                   for alias in node.names)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    return isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name


def _alone(lines: list[str], node: ast.stmt) -> bool:
    """Whether the statement fills its lines alone (no `;` neighbours). Offsets are in bytes."""
    first, last = lines[node.lineno - 1], lines[node.end_lineno - 1].encode()
    after = last[node.end_col_offset:].decode().strip(" \t;").split("#")[0]
    return node.col_offset == len(first) - len(first.lstrip()) and not after
