"""Write the generated parts of docs/ (and README.md) from the code.

A page is hand-written prose with generated blocks in it, each between two markers:

    <!-- begin generated: rewrite-table (python scripts/gen_docs.py) -->
    ...
    <!-- end generated -->

The script fills every block from its source: the rewrites' registry and module docstrings
(`ddpify.rewrites.REWRITES`), the TODOs and warnings each rewrite module writes (its
`edits.todo`/`edits.warn` calls), the check rules' registry and docstrings (`ddpify.check.RULES`),
the runtime's `__all__` and docstrings (read with `ast`: no torch import), the commands'
`--help`, the first sentence of every module's docstring (the layout), and the title of every decision
record in docs/decisions/ (the index in docs/design.md). Prose outside the markers is left alone.

    python scripts/gen_docs.py           # rewrite the pages whose generated blocks are stale
    python scripts/gen_docs.py --check   # exit 1, naming the stale pages; write nothing

`pytest tests/test_docs.py` fails while a page is stale; with `--update-goldens` it rewrites it.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List

if TYPE_CHECKING:
    from ddpify.check.rule import Rule
    from ddpify.rewrites import Rewrite

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: import the ddpify of this checkout
    sys.path.insert(0, str(ROOT))

BLOCK = re.compile(r"(?P<begin><!-- begin generated: (?P<name>[a-z-]+) \(python scripts/gen_docs\.py\) -->\n)"
                   r"(?P<body>.*?)(?P<end><!-- end generated -->)", re.S)
RUNTIME = ROOT / "runtime" / "__init__.py"


def pages() -> List[Path]:
    """The files that may hold generated blocks."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def render(text: str) -> str:
    """`text` with every generated block filled from the code."""
    def fill(match: "re.Match[str]") -> str:
        name = match.group("name")
        if name not in GENERATORS:
            raise ValueError(f"unknown generated block {name!r}; known: {', '.join(GENERATORS)}")
        return match.group("begin") + GENERATORS[name]().rstrip("\n") + "\n" + match.group("end")
    return BLOCK.sub(fill, text)


def stale() -> Dict[Path, str]:
    """Each page whose generated blocks differ from the code, with its text as it should be."""
    found = {}
    for page in pages():
        text = page.read_text(encoding="utf-8")
        fresh = render(text)
        if fresh != text:
            found[page] = fresh
    return found


def blocks_used() -> List[str]:
    """The names of the generated blocks the pages hold."""
    return [m.group("name") for page in pages() for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]


# ------------------------------------------------------------------------- docstrings to Markdown

def markdown(doc: str) -> str:
    """A docstring as Markdown: runs of indented lines become fenced Python blocks, a `->` line
    alone between two of them says "becomes", a one-word label right above a block (`Wrong:`) is
    bold; other lines are prose (reStructuredText's ``code`` becomes Markdown's `code`)."""
    out: List[str] = []
    lines = doc.strip("\n").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("    "):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or
                                      (not lines[j].strip() and j + 1 < len(lines) and lines[j + 1].startswith("    "))):
                j += 1
            code = textwrap.dedent("\n".join(lines[i:j]))
            out += ["```" if "  ->  " in code else "```python", *code.splitlines(), "```"]
            i = j
            continue
        if line.strip() == "->":
            out += ["", "becomes", ""]
        elif line.rstrip().endswith(":") and i + 1 < len(lines) and lines[i + 1].startswith("    ") \
                and " " not in line.strip():
            out += [f"**{line.strip()}**", ""]
        else:
            out.append(line.replace("``", "`"))
        i += 1
    return "\n".join(out).replace("\n\n\n", "\n\n")


def cell(text: str) -> str:
    """`text` fit for one cell of a Markdown table."""
    return text.replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------------------------- rewrites

def rewrite_table() -> str:
    from ddpify.rewrites import REWRITES
    rows = [f"| [`{r.name}`](#{r.name}) | {cell(r.summary)} |" for r in REWRITES]
    return "\n".join(["| rewrite | what it does |", "|---|---|", *rows])


def requires(rewrite) -> str:
    """The sentence a rewrite's section ends with when it builds on others (`Rewrite.requires`)."""
    if not rewrite.requires:
        return ""
    names = ", ".join(f"`{n}`" for n in sorted(rewrite.requires))
    return f"\n\nRequires {names}: `--only {rewrite.name}` runs it too, and skipping it skips {rewrite.name}."


def rewrite_sections() -> str:
    from ddpify.rewrites import REWRITES
    parts = []
    for rewrite in REWRITES:
        doc = rewrite.doc.strip()
        first, _, rest = doc.partition("\n")
        title = first.split(":", 1)[1].strip() if first.startswith(f"{rewrite.name}:") else first
        parts.append(f"### {rewrite.name}\n\n{title[:1].upper() + title[1:]}\n\n{markdown(rest)}{requires(rewrite)}")
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------- check rules

def rule_table() -> str:
    from ddpify.check import RULES
    rows = [f"| [`{r.code}`](#{r.code.lower()}-{r.name}) | `{r.name}` | {cell(finds(r))} | {cell(fix_sentence(r))} |"
            for r in RULES]
    return "\n".join(["| code | name | what it finds | `--fix` |", "|---|---|---|---|", *rows])


def finds(rule: "Rule") -> str:
    """The docstring's first line; for advice, which `--select` turns it on."""
    return rule.summary if rule.bug else f"advice (`--select {rule.code}`): {rule.summary}"


def fix_sentence(rule: "Rule") -> str:
    """What `--fix` does for `rule`: the sentence of its docstring that starts with `--fix`
    ("yes" for a fixable rule whose docstring has none; "" for a rule without fixes)."""
    if not rule.fixable:
        return ""
    sentences = re.split(r"(?<=\.)\s+", " ".join(rule.doc.split()))
    found = [s for s in sentences if s.startswith("`--fix` ")]
    return found[0][len("`--fix` "):] if found else "yes"


def rule_sections() -> str:
    from ddpify.check import RULES
    parts = []
    for rule in RULES:
        first, _, rest = rule.doc.strip().partition("\n")
        fix = " (fixable: `ddpify check --fix`)" if rule.fixable else ""
        parts.append(f"### {rule.code} {rule.name}\n\n{first}{fix}\n\n{markdown(rest)}")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- TODOs and warnings

def todos() -> str:
    """Every TODO and warning a rewrite can write, read from the `edits.todo(...)` and
    `edits.warn(...)` calls of its module (`…` stands for what the script supplies)."""
    from ddpify.rewrites import REWRITES
    rows: List[str] = []
    for rewrite in REWRITES:
        for kind, message in messages(rewrite_path(rewrite)):
            shown = _code(f"# TODO(ddpify): {message}") if kind == "todo" else message
            row = f"| `{rewrite.name}` | {'TODO' if kind == 'todo' else 'warning'} | {cell(shown)} |"
            if row not in rows:
                rows.append(row)
    return "\n".join(["| rewrite | kind | message |", "|---|---|---|", *rows])


def rewrite_path(rewrite: "Rewrite") -> Path:
    """The source file of `rewrite`'s module."""
    return Path(sys.modules[rewrite.apply.__module__].__file__)


def _code(text: str) -> str:
    """`text` as a Markdown code span, also when it holds backquotes itself."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def messages(path: Path) -> Iterator["tuple[str, str]"]:
    """(`todo` or `warn`, message) of each such call in the module at `path`, in source order."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name)}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr in ("todo", "warn") and len(n.args) == 2]
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        for text in _texts(call.args[1], constants):
            yield call.func.attr, text


def _texts(node: ast.AST, constants: Dict[str, ast.AST]) -> List[str]:
    """The strings `node` may evaluate to, with `…` for the parts computed at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)]
    if isinstance(node, ast.Name) and node.id in constants:
        return _texts(constants[node.id], constants)
    if isinstance(node, ast.IfExp):
        return _texts(node.body, constants) + _texts(node.orelse, constants)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return [re.sub(r"\{\w*\}", "…", text) for text in _texts(node.func.value, constants)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in _texts(node.left, constants) for b in _texts(node.right, constants)]
    return ["…"]


# -------------------------------------------------------------------------------------- runtime

def runtime_api() -> str:
    """`__all__` of the runtime, by the section (`# ---- title` banner) each name is defined in,
    with its signature and docstring."""
    source = RUNTIME.read_text(encoding="utf-8")
    tree = ast.parse(source)
    public = _all_names(tree)
    banners = [(n, m.group(1).replace("``", "`")) for n, line in enumerate(source.splitlines(), 1)
               if (m := re.match(r"# -{3,} (.+)$", line))]
    defined = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    missing = [name for name in public if name not in defined]
    if missing:
        raise ValueError(f"runtime __all__ names what it does not define: {', '.join(missing)}")
    sections: Dict[str, List[str]] = {}
    for name in sorted(public, key=lambda n: defined[n].lineno):
        node = defined[name]
        title = [t for line, t in banners if line < node.lineno][-1]
        doc = ast.get_docstring(node)
        if not doc:
            raise ValueError(f"runtime: {name} has no docstring")
        sections.setdefault(title, []).append(f"#### `{_signature(node)}`\n\n{markdown(doc)}")
    return "\n\n".join(f"### {title[:1].upper() + title[1:]}\n\n" + "\n\n".join(entries)
                       for title, entries in sections.items())


def _all_names(tree: ast.Module) -> List[str]:
    names: List[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                names += ast.literal_eval(node.value)
    return names


def _signature(node: ast.AST) -> str:
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None:
            return f"class {node.name}"
        args = ast.unparse(init.args).removeprefix("self, ").removeprefix("self")
        return f"class {node.name}({args})"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{node.name}({ast.unparse(node.args)}){returns}"


# ---------------------------------------------------------------------------------- command line

def cli_help() -> str:
    """`ddpify --help` and each command's `--help`, as click prints them at 100 columns."""
    import click

    from ddpify.cli import COMMANDS, main
    width = {"terminal_width": 100, "max_content_width": 100}
    parts = []
    with click.Context(main, info_name="ddpify", **{**main.context_settings, **width}) as ctx:
        parts.append(("ddpify --help", main.get_help(ctx)))
        for name in COMMANDS:
            command = main.get_command(ctx, name)
            with click.Context(command, info_name=name, parent=ctx, **width) as sub:
                parts.append((f"ddpify {name} --help", command.get_help(sub)))
    return "\n\n".join(f"### `{title}`\n\n```\n{text}\n```" for title, text in parts)


# --------------------------------------------------------------------------------------- layout

def layout() -> str:
    """One row per module of ddpify/, the runtime and scripts/: the first sentence of its docstring
    (the rewrite modules, whose docstrings are docs/rewrites.md, as one row)."""
    rows = []
    for path in [*sorted((ROOT / "ddpify").rglob("*.py")), RUNTIME, *sorted((ROOT / "scripts").glob("*.py"))]:
        relative = path.relative_to(ROOT).as_posix()
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not doc:
            raise ValueError(f"{relative} has no docstring")
        if path.parent.name == "rewrites" and path.name != "__init__.py":
            continue
        rows.append(f"| `{relative}` | {cell(_first_sentence(doc))} |")
        if relative == "ddpify/rewrites/__init__.py":
            rows.append("| `ddpify/rewrites/*.py` | One module per rewrite; its docstring is the rewrite's page "
                        "in [rewrites.md](rewrites.md). |")
    return "\n".join(["| module | what it holds |", "|---|---|", *rows])


def _first_sentence(doc: str) -> str:
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    match = re.search(r"\.(\s|$)", paragraph)
    return paragraph[:match.start() + 1] if match else paragraph


# ------------------------------------------------------------------------------------ decisions

def decisions() -> str:
    """One line per decision record in docs/decisions/, in number order: a link and its title
    (the record's first line, without its `# NNNN: `)."""
    lines = []
    for path in sorted((ROOT / "docs" / "decisions").glob("*.md")):
        title = path.read_text(encoding="utf-8").split("\n", 1)[0].lstrip("# ")
        number, _, rest = title.partition(": ")
        lines.append(f"- [{number}](decisions/{path.name}): {rest or number}")
    return "\n".join(lines)


GENERATORS: Dict[str, Callable[[], str]] = {
    "rewrite-table": rewrite_table,
    "rewrites": rewrite_sections,
    "rule-table": rule_table,
    "rules": rule_sections,
    "todos": todos,
    "runtime-api": runtime_api,
    "cli-help": cli_help,
    "layout": layout,
    "decisions": decisions,
}


def main(argv: List[str]) -> int:
    if argv not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    found = stale()
    for page, text in found.items():
        name = page.relative_to(ROOT).as_posix()
        if argv:
            print(f"{name}: stale: run `python scripts/gen_docs.py`", file=sys.stderr)
        else:
            page.write_text(text, encoding="utf-8")
            print(f"{name}: regenerated", file=sys.stderr)
    return 1 if argv and found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
