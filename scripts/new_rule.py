"""Start a new check rule: its function, registered by `@rule`, and its fixtures.

    python scripts/new_rule.py CODE NAME [--module MODULE] [--advice] [--summary TEXT]

CODE is `DDP` and three digits; NAME is the rule's name as `--explain` shows it (`save-twice`),
its function `save_twice`. Created, each a skeleton that says what to write and fails its tests
until written:
  ddpify/check/MODULE.py              the rule function, `@rule(CODE)` (bug, or advice with
                                      --advice), docstring: what it finds, Wrong:, Right:, why;
                                      appended to MODULE when it is a rule module, else a new
                                      module (default: named after the rule)
  fixtures/check/CODE/trigger.py      the bug (its snapshot trigger.txt starts empty)
  fixtures/check/CODE/near_miss.py    the correct shapes closest to it: no finding
Registered by this script (no hand edit): a new module's import in ddpify/check/__init__.py
(importing a rule module registers its rules) and, where it is kept by hand, the README's rules
table. What is left is those three files, written by hand, then
`pytest --update-goldens tests/check/test_rules.py -k CODE` and a look at the new trigger.txt.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

from new_rewrite import with_row, write

ROOT = Path(__file__).resolve().parent.parent

MODULE = '''\
"""{title}."""

from __future__ import annotations

from typing import Iterator

from ddpify.check.context import Context
from ddpify.check.rule import Hit, rule
'''

RULE = '''

@rule("{code}"{advice})
def {function}(ctx: Context) -> Iterator[Hit]:
    """{summary}.

    Wrong:

        import torch.distributed as dist
        dist.init_process_group("gloo")
        bug()  # TODO(new rule): the smallest whole script with the bug

    Right:

        import torch.distributed as dist
        dist.init_process_group("gloo")
        fixed()  # TODO(new rule): the same script, fixed

    What goes wrong when every process runs the wrong example, and what the fix is; which
    shapes are found and which are left alone (tests/check/test_docs.py checks that the wrong
    example is found and the right one is not).
    """
    yield from ()  # TODO(new rule): `yield Hit(node, message)` for each finding in `ctx.facts`
'''

TRIGGER = '''\
"""{name}: the bug, in the shapes people write it (`pytest --update-goldens
tests/check/test_rules.py -k {code}` writes the findings to trigger.txt: read them)."""
import torch.distributed as dist

dist.init_process_group("gloo")
bug()  # TODO(new rule): the bug, as a real script has it
dist.destroy_process_group()
'''

NEAR_MISS = '''\
"""{name}: the correct shapes closest to the bug, which the rule leaves alone."""
import torch.distributed as dist

dist.init_process_group("gloo")
fixed()  # TODO(new rule): the right shape nearest to the bug
dist.destroy_process_group()
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("code", help="DDP and three digits (DDP022)")
    parser.add_argument("name", help="the rule's name, lower case words joined by '-' (save-twice)")
    parser.add_argument("--module", help="the rule module in ddpify/check/ to add it to, or a new one "
                                         "(default: a new module named after the rule)")
    parser.add_argument("--advice", action="store_true", help="advice, found only when --select names it "
                                                                 "(default: a bug, found by default)")
    parser.add_argument("--summary", default="What the rule finds, in one line",
                        help="the docstring's first line: what it finds")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # a copy, for its test
    args = parser.parse_args(argv)
    try:
        created = scaffold(args.root, args.code, args.name, args.module, args.advice, args.summary.rstrip("."))
    except ValueError as exc:
        print(f"new_rule.py: {exc}", file=sys.stderr)
        return 2
    print("created, to write by hand:\n" + "".join(f"  {p}\n" for p in created))
    print(f"then: pytest --update-goldens tests/check/test_rules.py -k {args.code} (and read trigger.txt)")
    return 0


def scaffold(root: Path, code: str, name: str, module: str | None, advice: bool, summary: str) -> list[Path]:
    """Write the rule and its fixtures and register a new module; nothing is written on an error."""
    function = name.replace("-", "_")
    module = module or function
    if not re.fullmatch(r"DDP[0-9]{3}", code):
        raise ValueError(f"{code!r}: a code is DDP and three digits (DDP022)")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name) or keyword.iskeyword(function):
        raise ValueError(f"{name!r}: a name is lower case words joined by '-' (save-twice)")
    check = root / "ddpify" / "check"
    texts = {p.stem: p.read_text() for p in check.glob("*.py")}
    rules = {stem: text for stem, text in texts.items() if "\n@rule(" in text}  # the driver, context, ... hold none
    if not module.isidentifier() or keyword.iskeyword(module) or module in texts.keys() - rules.keys():
        raise ValueError(f"--module {module}: not a rule module name")
    for other, text in rules.items():
        if f'@rule("{code}"' in text:
            raise ValueError(f"{code} is taken (ddpify/check/{other}.py)")
        if re.search(rf"^def {function}\(", text, re.M):
            raise ValueError(f"the rule name {name} is taken (ddpify/check/{other}.py)")
    fixtures = root / "fixtures" / "check" / code
    if fixtures.exists():
        raise ValueError(f"already exists: {fixtures}")
    rule_text = RULE.format(code=code, advice=", bug=False" if advice else "", function=function, summary=summary)
    path = check / f"{module}.py"
    if module in rules:
        missing = [n for n in ("Context", "Hit", "rule", "Iterator") if not re.search(rf"^(from|import) .*\b{n}\b",
                                                                                      rules[module], re.M)]
        if missing:
            raise ValueError(f"ddpify/check/{module}.py does not import {', '.join(missing)}: add them first")
        files = {path: rules[module].rstrip("\n") + "\n" + rule_text}
    else:
        files = {path: MODULE.format(title=summary) + rule_text}
    files[fixtures / "trigger.py"] = TRIGGER.format(name=name, code=code)
    files[fixtures / "trigger.txt"] = ""  # the snapshot: written by --update-goldens
    files[fixtures / "near_miss.py"] = NEAR_MISS.format(name=name)
    updates: dict[Path, str | None] = {root / "README.md": readme_row(
        (root / "README.md").read_text(), code, name, advice, summary)}
    if module not in rules:
        init = check / "__init__.py"
        updates[init] = register(init.read_text(), module)
    write(root, files, updates)
    return [p.relative_to(root) for p in files if p.suffix == ".py"]


def register(text: str, module: str) -> str:
    """ddpify/check/__init__.py importing the rule module `module` too (the list stays sorted)."""
    imports = re.search(r"from ddpify\.check import \(  # noqa[^\n]*\n((?:    [\w, ]+\n?)+?)\)", text)
    if imports is None:
        raise ValueError("ddpify/check/__init__.py: the import of the rule modules has a new shape")
    names = sorted({*re.findall(r"\w+", imports.group(1)), module})
    lines = [""]
    for word in [f"{n}," for n in names[:-1]] + [names[-1]]:
        if len(lines[-1]) + len(word) + 5 > 115:
            lines.append("")
        lines[-1] += f" {word}" if lines[-1] else word
    return text[:imports.start(1)] + "\n".join(f"    {line}" for line in lines) + text[imports.end(1):]


def readme_row(text: str, code: str, name: str, advice: bool, summary: str) -> str | None:
    """README's hand-kept rules table with a row for `code`, in code order (None: no such table)."""
    what = f"advice (`--select {code}`): {summary}" if advice else summary
    return with_row(text, "| code | name | what it finds | fix |\n|---|---|---|---|\n",
                    f"| `{code}` | `{name}` | {what} | |\n", lambda codes: sum(c < code for c in codes))


if __name__ == "__main__":
    sys.exit(main())
