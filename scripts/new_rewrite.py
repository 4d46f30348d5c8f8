"""Start a new rewrite: its module, its place in the registry, its test file, its golden fixture.

    python scripts/new_rewrite.py NAME [--after OTHER] [--summary TEXT]

NAME is the rewrite's name as users type it (`sync-buffers`); the module is `sync_buffers.py`.
Created, each a skeleton that says what to write and fails its tests until written:
  ddpify/rewrites/NAME.py           docstring (before -> after, why), NAME, SUMMARY, typed rewrite()
  tests/rewrites/test_NAME.py       an exact before -> after pair, unchanged inputs
  fixtures/NAME/before.py           a whole script with the shape the rewrite is for
Registered by this script (no hand edit): the module's import and its entry in `REWRITES`
(ddpify/rewrites/__init__.py; after OTHER, or last), the docstring example's context in
tests/test_docs.py, and the rewrite's row and section in docs/rewrites.md (generated from the
registry and the docstring by scripts/gen_docs.py, which this script runs). What is left is those
three files, written by hand, then `python scripts/gen_docs.py` (the docs from the docstring
written), `pytest --update-goldens tests/test_golden.py -k NAME` and a look at the new after.py.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULE = '''\
"""{name}: {summary}.

    model = Net()
->
    model = Net()  # what {name} makes of this line

Why: what goes wrong when several processes run the script unchanged, and what this rewrite
leaves alone (write the example above as a real before -> after: tests/test_docs.py runs it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "{name}"
SUMMARY = "{summary}"


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    """Read `analysis` (`analysis.facts`, `analysis.models`, ...); ask `edits` for each change (`replace`, `insert_before`, `insert_after`,
    `enclose`, `todo`) with its report line; never transform the tree, never call another rewrite."""
'''

SCRIPT = '''\
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
'''

TEST = '''\
"""{name}: what its pairs pin down (each: the lines that change in a script that trains, and
exactly what {name} alone makes of them; the harness writes the rest of the script around them)."""

from __future__ import annotations

from tests.support.snippets import TRAINS, pair, rewrite_tests

NAME = "{name}"

PAIRS = [
    pair("""\\
model = torch.nn.Linear(2, 1)
""", """\\
model = torch.nn.Linear(2, 1)
# TODO(new rewrite): exactly what {name} makes of these lines
""", "what_it_does_name_the_case", scaffold=TRAINS.instead_of("model")),
]

UNCHANGED = [
    # scripts that train, which {name} must leave as they are
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)
'''

FIXTURE = '''\
"""A whole training script with the shape {name} is for (replace this one): its golden
after.py is written by `pytest --update-goldens tests/test_golden.py -k {module}`."""
{script}'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the rewrite's name, lower case words joined by '-' (sync-buffers)")
    parser.add_argument("--after", help="the rewrite it runs after (default: last)")
    parser.add_argument("--summary", default="one line: what it changes, for `ddpify rewrites`")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # a copy, for its test
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", args.name):
        parser.error(f"{args.name!r}: lower case words joined by '-'")
    try:
        created = scaffold(args.root, args.name, args.summary, args.after)
    except ValueError as exc:
        print(f"new_rewrite.py: {exc}", file=sys.stderr)
        return 2
    print("created, to write by hand:\n" + "".join(f"  {p}\n" for p in created))
    print(f"then: python scripts/gen_docs.py (docs/rewrites.md from the docstring), "
          f"pytest --update-goldens tests/test_golden.py -k {_module(args.name)} (and read the diff)")
    return 0


def _module(name: str) -> str:
    return name.replace("-", "_")


def scaffold(root: Path, name: str, summary: str, after: str | None) -> list[Path]:
    """Write the three skeletons and register the rewrite; nothing is written on an error."""
    module = _module(name)
    files = {
        root / "ddpify" / "rewrites" / f"{module}.py": MODULE.format(name=name, summary=summary),
        root / "tests" / "rewrites" / f"test_{module}.py": TEST.format(name=name),
        root / "fixtures" / module / "before.py": FIXTURE.format(name=name, module=module, script=SCRIPT),
    }
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise ValueError(f"already exists: {', '.join(existing)}")
    edited = {
        root / "ddpify" / "rewrites" / "__init__.py": register,
        root / "tests" / "test_docs.py": docs_context,
    }
    write(root, files, {path: edit(path.read_text(), name, summary, after) for path, edit in edited.items()})
    return [p.relative_to(root) for p in files]


def write(root: Path, files: dict[Path, str], updates: dict[Path, str | None]) -> None:
    """Write the new `files` and the `updates` of existing ones (None: nothing to register there,
    e.g. a README whose tables are generated from the registry). Called once every text is
    computed, so that an error writes nothing."""
    for path, text in updates.items():
        if text is None:
            print(f"nothing to register in {path.relative_to(root)}")
    for path, text in [*files.items(), *((p, t) for p, t in updates.items() if t is not None)]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run([sys.executable, str(root / "scripts" / "gen_docs.py")], check=True)  # docs/*.md tables


def register(text: str, name: str, summary: str, after: str | None) -> str:
    """The registry with `module` imported (the import list stays sorted) and placed in `REWRITES`
    after the module of `after` (or last)."""
    module = _module(name)
    imports = re.search(r"from ddpify\.rewrites import \(\n((?:    \w+,\n)+)\)", text)
    order = re.search(r"REWRITES: tuple\[Rewrite, \.\.\.\] = tuple\(_load\(m\) for m in \(\n((?:    \w+,\n)+)\)\)", text)
    if imports is None or order is None:
        raise ValueError("ddpify/rewrites/__init__.py: the import list or the REWRITES tuple has a new shape")
    names = sorted([*re.findall(r"\w+", imports.group(1)), module])
    entries = re.findall(r"\w+", order.group(1))
    at = len(entries) if after is None else _index(entries, _module(after)) + 1
    entries.insert(at, module)
    text = text[:order.start(1)] + "".join(f"    {m},\n" for m in entries) + text[order.end(1):]
    return text[:imports.start(1)] + "".join(f"    {m},\n" for m in names) + text[imports.end(1):]


def _index(entries: list[str], module: str) -> int:
    if module not in entries:
        raise ValueError(f"--after: no rewrite module {module!r} in REWRITES")
    return entries.index(module)


def with_row(text: str, head: str, row: str, at) -> str | None:
    """`text` with `row` added to the hand-kept table under `head`, at the index that `at` gives
    for the table's keys (each row's first `code` cell); None: no such table."""
    start = text.find(head)
    if start < 0:
        return None
    start += len(head)
    end = text.find("\n\n", start)
    end = len(text) if end < 0 else end + 1  # the last row's line end included
    rows = text[start:end].splitlines(keepends=True)
    rows.insert(at([row.split("`")[1] for row in rows]), row)
    return text[:start] + "".join(rows) + text[end:]


def docs_context(text: str, name: str, summary: str, after: str | None) -> str | None:
    """tests/test_docs.py with a context for the example in the new docstring (the smallest
    training script, the example after it); None: no such dict."""
    marker = "\n}\nALSO = "
    if marker not in text:
        return None
    entry = f'\n    "{name}": IMPORTS + TRAIN + "{{example}}\\n",'
    return text.replace(marker, entry + marker, 1)


if __name__ == "__main__":
    sys.exit(main())
