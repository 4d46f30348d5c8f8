"""`ddpify check`: DDP bugs in scripts that are already distributed."""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from ddpify.inputs import files
from ddpify.cli.shared import (EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, VERBOSE_HINT, finish_killed_writes, guard,
                               internal_errors)
from ddpify.syntax.parse import INPUT_ERRORS, input_error, one_line

if TYPE_CHECKING:
    from ddpify.check import Finding, Report
    from ddpify.inputs.notebook import Script

CHECK_HELP_TAIL = "Exit codes: 0 no findings, 1 findings, 2 usage or input error, 123 internal error."
FORMATS = ("text", "json", "github", "sarif")


def _rule_codes(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> frozenset[str]:
    from ddpify.check import RULES

    codes = frozenset(c.strip().upper() for v in values for c in v.split(",") if c.strip())
    unknown = sorted(c for c in codes if not any(r.code.startswith(c) for r in RULES))
    if unknown:
        raise click.BadParameter(f"unknown code(s) {', '.join(unknown)}; valid codes: "
                                 + ", ".join(r.code for r in RULES))
    return codes


@click.command("check", epilog=CHECK_HELP_TAIL)
@click.argument("sources", metavar="PATH...", nargs=-1)
@click.option("--select", multiple=True, callback=_rule_codes, metavar="CODE[,CODE]",
              help="Run only these rules (codes, or prefixes such as DDP00; repeatable).")
@click.option("--ignore", multiple=True, callback=_rule_codes, metavar="CODE[,CODE]",
              help="Do not run these rules (repeatable).")
@click.option("--output-format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="How findings are printed: text lines, JSON, GitHub workflow annotations, or SARIF 2.1.0.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON on stdout (--output-format json).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes to the files, then report what is left.")
@click.option("--diff", is_flag=True, help="With --fix: print the fixes as a unified diff; write nothing.")
@click.option("--explain", metavar="CODE", help="Show what a rule finds, with a wrong and a right example.")
@click.option("-v", "--verbose", is_flag=True,
              help="Say which files each check read (its program), and show tracebacks for internal errors.")
@internal_errors
def check_command(sources, select, ignore, output_format, as_json, fix, diff, explain, verbose) -> None:  # noqa: C901 (28: to split)
    """Find the classic DDP bugs in PATH (files, directories, or - for stdin): the global rank
    as a GPU index, collectives only some ranks reach, checkpoints from every rank, a
    DistributedSampler without set_epoch, ... (`ddpify check --explain DDP001`).

    Prints `path:line:col: DDP### message` per finding; `# noqa: DDP###` on a line silences it.
    Each file is checked in its program, and its findings reported in it: a script with the
    modules of its project that it imports, a module (no `if __name__ == "__main__":` block)
    also with a script that imports it (-v names the files read).

    \b
      ddpify check train.py
      ddpify check src/ --ignore DDP011
      ddpify check --fix train.py
      ddpify check --fix --diff train.py
      ddpify check --output-format github src/
    """
    import json
    from dataclasses import asdict

    from ddpify import check
    from ddpify.check import formats

    if explain is not None:
        rule = check.CODES.get(explain.strip().upper())
        if rule is None:
            raise click.BadParameter(f"unknown code {explain}; valid codes: {', '.join(check.CODES)}",
                                     param_hint="--explain")
        click.echo(f"{rule.code} ({rule.name}){' [fixable]' if rule.fixable else ''}\n\n{rule.doc}")
        return
    if not sources:
        raise click.UsageError("name the scripts or directories to check (or --explain CODE)")
    if as_json:
        if output_format not in ("text", "json"):
            raise click.UsageError("--json is --output-format json: give one of them")
        output_format = "json"
    if diff and not fix:
        raise click.UsageError("--diff shows what --fix would change: use --fix --diff")
    if diff and output_format != "text":
        raise click.UsageError("--diff prints a diff: it takes no --output-format")
    if fix and not diff and files.STDIN in sources:
        raise click.UsageError("--fix cannot rewrite standard input (--fix --diff shows the fixes)")
    if fix and any(files.is_notebook(s) for s in sources):
        raise click.UsageError("--fix cannot rewrite a notebook: convert it to a script first")
    rules = check.select(select or None, ignore)
    inputs = guard(files.collect, sources)
    if finish_killed_writes(s.path for s in inputs.sources):
        inputs = guard(files.collect, sources)
    parsed: dict = {}  # the project modules the files import, each parsed once
    scans: dict = {}  # the scripts of a project folder that may import a checked module, found once
    outcomes = [_check_one(source, rules, fix, parsed, scans) for source in inputs.sources]
    # a module that a distributed script of this run imports runs in every process of its job:
    # checked as DDP code even where it never names torch.distributed (a helper's torch.load)
    imported = {m for o in outcomes if o.report is not None and o.report.distributed for m in o.modules}
    outcomes = [_check_one(s, rules, fix, parsed, scans, imported_by_ddp=True)
                if o.report is not None and not o.report.distributed and s.path is not None
                and s.path.resolve() in imported else o for s, o in zip(inputs.sources, outcomes)]
    errors = [o for o in outcomes if o.error]
    if fix and errors:  # nothing is written: report the files as they are
        outcomes = [o if o.error else _check_one(s, rules, False) for s, o in zip(inputs.sources, outcomes)]
    elif diff:
        for source, outcome in zip(inputs.sources, outcomes):
            if outcome.fixed:
                click.echo(_diff(source.name, outcome.original, outcome.output), nl=False)
    elif fix:  # all files or none: one rename phase after every fixed file is written
        guard(files.write_all_atomic, [(s.path, o.output, o.mode) for s, o in zip(inputs.sources, outcomes) if o.fixed],
              None)  # check has no -o to suggest
    good = [(s, o) for s, o in zip(inputs.sources, outcomes) if not o.error]
    if output_format == "json":
        click.echo(json.dumps({"version": 1, "files": [
            {"path": s.name, "note": o.report.note, "fixed": o.fixed,
             "read": {"files": o.read[0], "lines": o.read[1], "importer": o.importer, "unread": list(o.unread)},
             "findings": [asdict(f) for f in o.report.findings]} for s, o in good]}, indent=2))
    elif output_format == "sarif":
        click.echo(formats.sarif_text(rules, [(*_place(s.name, f, o.script), f.code, f.message)
                                              for s, o in good for f in o.report.findings]))
    elif not diff:
        for source, outcome in good:
            for finding in outcome.report.findings:
                if output_format == "github":
                    click.echo(_annotation(source.name, finding, outcome.script, check.CODES[finding.code].bug))
                else:
                    click.echo(_render(source.name, finding, outcome.script))
            if outcome.report.note:
                click.echo(f"{source.name}: note: {outcome.report.note}", err=True)
            if verbose:
                click.echo(_read_line(source.name, outcome), err=True)
    for source, outcome in good:  # on stderr whatever the format: findings may be missing for it
        for line in outcome.unread:
            click.echo(f"{line} (left out: {source.name} was checked without it)", err=True)
    for outcome in errors:
        if outcome.code != EXIT_INTERNAL:
            click.echo(outcome.error, err=True)
        elif verbose:
            click.echo(f"{outcome.traceback.rstrip()}\n{outcome.error}", err=True)
        else:
            click.echo(outcome.error + VERBOSE_HINT, err=True)
    if errors:
        raise click.exceptions.Exit(max(o.code for o in errors))
    left = sum(len(o.report.findings) for _, o in good)
    if output_format in ("text", "github"):
        click.echo(_check_summary(good, fix, diff), err=True)
    if left or diff and any(o.fixed for _, o in good):
        raise click.exceptions.Exit(1)


@dataclass
class _Checked:
    """Checking one input: its report (after the fixes, under --fix), or a one-line error."""

    report: Report | None = None
    output: bytes = b""  # under --fix: the fixed file
    original: bytes = b""  # under --fix: the file as read
    fixed: int = 0
    mode: int | None = None
    error: str = ""
    code: int = EXIT_OK
    traceback: str = ""
    script: Script | None = None  # a notebook's code cells, as checked
    modules: frozenset = frozenset()  # the resolved paths of the project modules it imports
    read: tuple[int, int] = (0, 0)  # (files, lines) read to check it: itself, its modules, its importer's program
    importer: str | None = None  # the script whose program a module was read in (`load_checked`)
    unread: tuple[str, ...] = ()  # imported files left out as they do not parse (one line each)


def _render(name: str, finding: Finding, script: Script | None) -> str:
    """`train.py:12:5: DDP001 ...`; in a notebook `train.ipynb:cell 4:3:5: ...` (line 3 of cell 4)."""
    path, line, column = _place(name, finding, script)
    return f"{path}:{line}:{column}: {finding.code} {finding.message}"


def _annotation(name: str, finding: Finding, script: Script | None, bug: bool) -> str:
    """A GitHub annotation on the file's line; a notebook's names the cell in its message (the
    annotation's line would count the notebook's JSON lines)."""
    from ddpify.check import formats

    if script is None:
        return formats.github(name, finding.line, finding.column, finding.code, finding.message, bug)
    cell, line = script.locate(finding.line)
    return formats.github(name, None, None, finding.code, f"cell {cell}, line {line}: {finding.message}", bug)


def _place(name: str, finding: Finding, script: Script | None) -> tuple[str, int, int]:
    """(path, line, column) of a finding; in a notebook the path names the cell
    (`train.ipynb:cell 4`) and the line is the cell's."""
    if script is None:
        return name, finding.line, finding.column
    where, line = script.where(name, finding.line)
    return where, line, finding.column


def _diff(name: str, before: bytes, after: bytes) -> str:
    """The fixes of one file as a unified diff (`--- train.py` / `+++ train.py`)."""
    import difflib

    return "".join(difflib.unified_diff(before.decode("utf-8", "surrogateescape").splitlines(keepends=True),
                                        after.decode("utf-8", "surrogateescape").splitlines(keepends=True),
                                        name, name))


def _check_one(source: files.Source, rules, fix: bool, parsed: dict | None = None, scans: dict | None = None,
               imported_by_ddp: bool = False) -> _Checked:
    from ddpify import check
    from ddpify.inputs import notebook
    from ddpify.inputs.program import load_checked
    name = source.name
    try:
        loaded = files.read(source)
        script = notebook.to_script(name, loaded.data) if files.is_notebook(name) else None
    except files.InputError as exc:
        return _Checked(error=str(exc), code=EXIT_INPUT)
    try:
        # a file is checked with the facts of the project modules it imports, and a module with
        # those of a script that imports it (ddpify.inputs.program.load_checked)
        program = load_checked(source.path, loaded.data, parsed, scans) \
            if source.path is not None and name.endswith(".py") else None
        modules = frozenset(p.path.resolve() for p in program.parts[1:] if not p.importer) \
            if program is not None else frozenset()
        read = dict(read=(len(program.parts), program.lines), unread=program.unread,
                    importer=next((os.path.normpath(p.path) for p in program.parts if p.importer), None)) \
            if program is not None else dict(read=(1, _lines(loaded.data)))
        if fix:
            done = check.fix(loaded.data, rules, program, imported_by_ddp)
            return _Checked(done.report, done.output, loaded.data, done.fixed, loaded.mode, modules=modules, **read)
        if script is not None:  # the same cells `convert` reads; findings name the cell
            return _Checked(check.check(script.code.encode(), rules), script=script, **read)
        return _Checked(check.check(loaded.data, rules, program, imported_by_ddp), modules=modules, **read)
    except INPUT_ERRORS as exc:  # in the file, or in a module it imports (`exc.path`)
        return _Checked(error=input_error(name, loaded.data, exc), code=EXIT_INPUT)
    except OSError as exc:
        return _Checked(error=f"{exc.filename or name}: cannot read: {exc.strerror or exc}", code=EXIT_INPUT)
    except Exception as exc:
        return _Checked(error=f"{name}: internal error: {type(exc).__name__}: {one_line(str(exc))}",
                        code=EXIT_INTERNAL, traceback=traceback.format_exc())


def _read_line(name: str, outcome: _Checked) -> str:
    """`trainer.py: read 12 files, 3,400 lines (in the program of train.py, which imports it)`."""
    files, lines = outcome.read
    via = f" (in the program of {outcome.importer}, which imports it)" if outcome.importer else ""
    return f"{name}: read {files} file(s), {lines:,} line(s){via}"


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))


def _check_summary(checked: list, fix: bool, diff: bool = False) -> str:
    findings = [f for _, o in checked for f in o.report.findings]
    files = len({s for s, o in checked if o.report.findings})
    fixed = sum(o.fixed for _, o in checked)
    verb = "would fix" if diff else "fixed"
    done = f"{verb} {fixed} problem(s) in {sum(bool(o.fixed) for _, o in checked)} file(s); " if fix else ""
    if not findings:
        return f"{done}no DDP problems {'would be left' if diff else 'found'} in {len(checked)} file(s)"
    fixable = sum(f.fixable for f in findings)
    hint = f" ({fixable} fixable with --fix)" if fixable and not fix else ""
    return f"{done}{len(findings)} problem(s) {'would be left ' if diff else ''}in {files} of {len(checked)} file(s){hint}"
