"""`ddpify convert`, `ddpify diff` and `ddpify rewrites`."""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import click

from ddpify.inputs import files, written
from ddpify.output import report
from ddpify.cli.engine import (
    convert_inputs,
    engine_options,
    make_options,
    module_name,
    print_records,
    rewrite_names,
)
from ddpify.cli.shared import EXIT_INPUT, EXIT_WOULD_CHANGE, fail, finish_killed_writes, guard

if TYPE_CHECKING:
    from ddpify.convert import Result
    from ddpify.inputs.notebook import Script


EXIT_CODES = "Exit codes: 0 done, 1 --check: something would change, 2 usage or input error, 123 internal error."


@click.command("convert", epilog=EXIT_CODES)
@engine_options
@click.option("-o", "--output", metavar="DST",
              help="Output file, or directory (DIR/: DIR/NAME.py); the modules of SRC's program that "
                   "the conversion changes go beside it, at their import paths. With several inputs "
                   "or a directory: an output directory that mirrors the inputs' relative paths.")
@click.option("--in-place", is_flag=True,
              help="Rewrite the input files themselves, and the modules of a script's program that the "
                   "conversion changes.")
@click.option("--vendor-runtime", is_flag=True,
              help="Copy the runtime next to each output as ddpify_runtime.py, for machines "
                   "without ddpify installed.")
def convert_command(sources, only, skip, check, as_json, script_args, find_unused_parameters, sync_batchnorm,
                    strategy, no_shard_eval, markdown, jobs, timeout, verbose, output, in_place,
                    vendor_runtime) -> None:
    """Convert SRC (files, directories, or - for stdin) to DDP.

    One input without -o prints the converted code on stdout (refused when its program changes
    other modules too: use -o DIR/). The inputs are never modified unless --in-place. A Jupyter notebook (SRC ending in .ipynb, named explicitly) becomes a
    Python script: on stdout, or -o FILE.py (into -o DIR as NAME.py).

    A script or notebook named alone is converted with the modules of its project that it
    imports (beside it, in a folder it puts on sys.path, a package above its folder such as
    the repository's src/, or a folder of the project on the PYTHONPATH ddpify runs with, as the
    script runs with it: PYTHONPATH=core); several inputs or a directory are converted file by file. With -o,
    each changed module is written beside the output at its import path
    (scripts/../src/data.py -> out/src/data.py) and listed; the run hint names the PYTHONPATH
    that finds the unchanged ones.

    \b
      ddpify convert train.py -o train_ddp.py
      ddpify convert scripts/train.py -o out/     # out/train.py, out/src/data.py, ...
      ddpify convert train.ipynb -o train_ddp.py
      ddpify convert src/ -o src_ddp/ --vendor-runtime
      ddpify convert - < train.py > train_ddp.py
    """
    if in_place and output is not None:
        raise click.UsageError("use either -o or --in-place, not both")
    if in_place and files.STDIN in sources:
        raise click.UsageError("--in-place cannot rewrite standard input")
    if in_place and any(s.endswith(".ipynb") for s in sources):
        raise click.UsageError("--in-place cannot rewrite a notebook: its output is a script, use -o FILE.py")
    to_stdout = not (check or in_place or output is not None)
    if to_stdout and (len(sources) > 1 or any(Path(s).is_dir() for s in sources)):
        raise click.UsageError("several inputs or a directory need -o DIR, --in-place or --check")
    if to_stdout and as_json:
        raise click.UsageError("--json needs -o, --in-place or --check (stdout carries the code)")
    if to_stdout and vendor_runtime:
        raise click.UsageError("--vendor-runtime needs -o or --in-place")

    inputs, dests = _inputs(sources, output, in_place, check)
    if finish_killed_writes([*(s.path for s in inputs.sources), *dests]):
        inputs, dests = _inputs(sources, output, in_place, check)
    skipped: list[files.Source] = []  # files of a tree that ran past --timeout: the others are written
    loaded, results, scripts = convert_inputs(
        inputs, make_options(only, skip, find_unused_parameters, sync_batchnorm, strategy, no_shard_eval,
                             None if script_args is None else tuple(shlex.split(script_args))), jobs,
        verbose, markdown, timeout, skipped if inputs.tree else None)
    if skipped:
        dests = [d for s, d in zip(inputs.sources, dests) if s not in skipped]
        inputs = replace(inputs, sources=[s for s in inputs.sources if s not in skipped])
    runtime = guard(files.runtime_source) if vendor_runtime and not check else None
    results = [_anchored(source, dest, result, in_place) for source, dest, result in zip(inputs.sources, dests, results)]
    modules = [] if check else [_module_dests(source, dest, result, in_place)
                                for source, dest, result in zip(inputs.sources, dests, results)]
    folders = [_folder_dests(source, dest, result) if not in_place and not check else []
               for source, dest, result in zip(inputs.sources, dests, results)]
    if not check:
        _write_outputs(dests, loaded, results, modules, in_place, runtime)
        for path, _ in (made for each in folders for made in each):
            path.mkdir(parents=True, exist_ok=True)
    for source, dest, result, script, program, made in zip(inputs.sources, dests, results, scripts,
                                                           modules or [[]] * len(results), folders or [[]] * len(results)):
        if dest is None and not check:
            click.echo(result.output, nl=False)
        if not as_json:
            _print_outcome(source, dest, result, script, program, in_place, made)
    _finish(inputs, results, check, as_json)
    if skipped:
        fail(EXIT_INPUT, f"{len(skipped)} file(s) skipped after running past --timeout {timeout:g} s")


@click.command("diff", epilog=EXIT_CODES)
@engine_options
def diff_command(sources, only, skip, check, as_json, script_args, find_unused_parameters, sync_batchnorm,
                 strategy, no_shard_eval, markdown, jobs, timeout, verbose) -> None:
    """Show what converting SRC would change, as a unified diff; writes nothing. For a notebook
    (.ipynb), the diff is against its code cells as one script.

    \b
      ddpify diff train.py
      ddpify diff train.ipynb
      ddpify diff --only init-distributed,wrap-model train.py
    """
    inputs = guard(files.collect, sources)
    if finish_killed_writes(s.path for s in inputs.sources):
        inputs = guard(files.collect, sources)
    _, results, scripts = convert_inputs(
        inputs, make_options(only, skip, find_unused_parameters, sync_batchnorm, strategy, no_shard_eval,
                             None if script_args is None else tuple(shlex.split(script_args))), jobs,
        verbose, markdown, timeout)
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for source, result, script in zip(inputs.sources, results, scripts):
        if not as_json:
            for name, each in [(source.name, result), *((module_name(source.name, rel, m), m)
                                                        for rel, m in result.modules.items())]:
                for line in unified_diff(name, each):
                    click.echo(_colour(line) if colour else line, nl=False, color=colour)
            print_records(source.name, result, script)
    _finish(inputs, results, check, as_json)


@click.command("rewrites")
@click.argument("names", metavar="[NAME]...", nargs=-1, callback=rewrite_names)
def rewrites_command(names: frozenset[str]) -> None:
    """List the rewrites in the order they run, or show the full description of NAMEs."""
    print_rewrites(names)


def print_rewrites(names: frozenset[str]) -> None:
    """The full description of each of `names`; with none, one line per rewrite."""
    from ddpify.rewrites import REWRITES

    if names:
        for rewrite in REWRITES:
            if rewrite.name in names:
                needs = f"\n\nrequires: {', '.join(sorted(rewrite.requires))}" if rewrite.requires else ""
                click.echo(f"{rewrite.name}: {rewrite.summary}\n\n{rewrite.doc.strip()}{needs}\n")
        return
    width = max(len(r.name) for r in REWRITES)
    for rewrite in REWRITES:
        click.echo(f"{rewrite.name:<{width}}  {rewrite.summary}")


def unified_diff(name: str, result: Result) -> Iterator[str]:
    """The diff of one result, with `a/NAME` and `b/NAME` headers; lines keep their endings."""
    import difflib  # here: only `diff` needs it

    before = result.source.decode(result.encoding).splitlines(keepends=True)
    after = result.output.decode(result.encoding).splitlines(keepends=True)
    path = name.lstrip("/")  # as git prints an absolute path: a/tmp/train.py
    for line in difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"):
        yield line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"


def _colour(line: str) -> str:
    if line.startswith(("--- a/", "+++ b/")):
        return click.style(line, bold=True)
    if line.startswith("@@"):
        return click.style(line, fg="cyan")
    if line.startswith("+"):
        return click.style(line, fg="green")
    if line.startswith("-"):
        return click.style(line, fg="red")
    return line


def _inputs(sources: tuple[str, ...], output: str | None, in_place: bool, check: bool
            ) -> tuple[files.Inputs, list[Path | None]]:
    """The inputs and where each one's output goes (None: nowhere, or standard output)."""
    inputs = guard(files.collect, sources, Path(output) if output is not None else None)
    dests = [None] * len(inputs.sources) if check else guard(files.destinations, inputs, output, in_place)
    dests = [_script_dest(source, dest) for source, dest in zip(inputs.sources, dests)]
    guard(files.distinct, inputs.sources, dests)
    return inputs, dests


def _anchored(source: files.Source, dest: Path | None, result: Result, in_place: bool) -> Result:
    """`result` with the paths its modules build from `__file__` above their folders naming the
    originals' places (ddpify.output.file_paths), where -o writes them into another folder: the
    entry's output and each changed module's, each such line said in its report. A changed module
    of an unchanged entry too (decision 0265: `scripts/train.py` only calls `pkg.train.main()`, whose
    `src/pkg/data/dataset.py` is written at `out/pkg/data/dataset.py`: its `parents[3]` named
    another folder, and the program stopped at its first read, the report silent)."""
    if dest is None or in_place or source.path is None or files.is_notebook(source.name) or \
            not (result.changed or any(module.changed for module in result.modules.values())):
        return result
    from ddpify.output.file_paths import anchored

    project = Path(os.path.realpath(source.path)).parent

    def one(module: Result, original: Path, target: Path) -> Result:
        output, lines = anchored(module.output, original, target)
        if not lines:
            return module
        _, said = anchored(module.source, original, target)  # the report's lines are the original's
        rel = os.path.relpath(os.path.realpath(original), os.path.realpath(target.parent))
        notes = [report.Change("ddpify", line, f"`__file__` names the original ({rel}) in this path, which climbs "
                                               "above the file's folder, is completed at run time or is handed to a "
                                               "function of the program: the output is written into another folder")
                 for line in said or lines]
        return replace(module, output=output, changes=[*module.changes, *notes])

    modules = {rel: one(module, Path(module.read_from) if module.read_from else project / rel,
                        dest.parent / (module.beside or rel)) if module.changed else module
               for rel, module in result.modules.items()}
    return replace(one(result, source.path, dest), modules=modules)


def _script_dest(source: files.Source, dest: Path | None) -> Path | None:
    """A notebook's output is a script: NAME.ipynb mirrored into an output directory becomes
    NAME.py, or NAME_ddp.py where a module NAME.py lies beside the notebook (`import NAME`
    in the converted script would import the script itself); `-o` naming a notebook is refused."""
    if dest is None or not files.is_notebook(source.name):
        return dest
    if dest.name == source.path.name:
        script = dest.with_suffix(".py")
        if source.path.with_suffix(".py").exists():
            return script.with_name(f"{script.stem}_ddp.py")
        return script
    if files.is_notebook(dest.name):
        fail(EXIT_INPUT, f"-o {dest}: a notebook converts to a Python script: name the output .py")
    return dest


def _module_dests(source: files.Source, dest: Path | None, result: Result, in_place: bool
                  ) -> list[tuple[Result, Path, str]]:
    """Where a program's changed modules go, each with what it is (under -o): at their paths
    beside the entry's output (ddpify.output.packages), with their packages' `__init__.py`; in
    place: their own files. Refuses stdout, an output that would overwrite a module, and one that
    would put a module read elsewhere where the original script imports it."""
    program = _program_files(source, result) if source.path is not None else set()
    if not in_place and dest is not None and dest.resolve() in program:
        fail(EXIT_INPUT, f"{dest}: -o would overwrite a module of the program; write it to "
                         "another file or directory")
    changed = {rel: module for rel, module in result.modules.items() if module.changed}
    entry_reads = [] if in_place else _read_beside_entry(source, dest, result)
    if not changed:
        return entry_reads
    if dest is None:
        fail(EXIT_INPUT, f"{source.name}: the conversion also changes {', '.join(changed)}: "
                         "write the program with -o DIR/ (or --in-place); `ddpify diff` shows every change")
    project = Path(os.path.realpath(source.path)).parent  # where the program was read (past a link to it)
    if in_place:  # beside the entry's real file (one read above it: where it lies)
        return [(module, project / rel, "") for rel, module in changed.items()]
    from ddpify.convert import Result
    from ddpify.output.packages import beside_entry, files_read_beside, init_files_where_read

    placed = beside_entry(result.modules)
    elsewhere = [rel for rel, module in placed.items() if module.read_from is not None]
    if elsewhere and Path(os.path.realpath(dest.parent)) == project:
        fail(EXIT_INPUT, f"-o {dest}: the converted {', '.join(elsewhere)} would go into the script's own "
                         f"folder, where {source.name} would import it too: write the program to another "
                         "directory (-o DIR/)")
    found = []
    for rel, module in placed.items():
        target = dest.parent / rel
        if target.resolve() in program:
            fail(EXIT_INPUT, f"{target}: -o would overwrite a module of the program; write it to "
                             "another directory (-o DIR/) or use --in-place")
        found.append((module, target, module_name(source.name, rel, module)))
    # `out/engine/loop.py` is imported only with `out/engine/__init__.py` beside it
    read = {rel: module.read_from for rel, module in placed.items()}
    inits = init_files_where_read(project, read)
    for rel, (original, code) in inits.items():
        found.append((Result(original.read_bytes(), code), dest.parent / rel,
                      f"{_shown(original)}, one line added: the package's other modules import from "
                      f"{_shown(original.parent)}/"))
    for rel, (original, data) in files_read_beside(project, placed, inits).items():
        found.append((Result(data, data), dest.parent / rel,
                      f"{_shown(original)}, copied: a converted module beside it reads it through its __file__"))
    return found + [entry for entry in entry_reads if entry[1] not in {target for _, target, _ in found}]


def _read_beside_entry(source: files.Source, dest: Path | None, result: Result) -> list[tuple[Result, Path, str]]:
    """The files the entry script reads beside its own file (a path built from its `__file__`, the
    configuration of `@hydra.main(config_path=...)`), copied beside its output in another folder,
    where the output's `__file__` points (ddpify.output.packages `files_read_beside`).

        ddpify convert train.py -o out/     (train.py: @hydra.main(config_path="conf", config_name="config"))
        -> out/train.py, out/conf/config.yaml  <- conf/config.yaml, copied
    """
    if dest is None or source.path is None:
        return []
    project = Path(os.path.realpath(source.path)).parent
    if Path(os.path.realpath(dest.parent)) == project:
        return []
    from ddpify.convert import Result
    from ddpify.output.packages import files_read_beside

    return [(Result(data, data), dest.parent / rel, f"{_shown(original)}, copied: {source.name} reads it beside its own file")
            for rel, (original, data) in files_read_beside(project, {source.path.name: result}, {}).items()]


def _folder_dests(source: files.Source, dest: Path | None, result: Result) -> list[tuple[Path, str]]:
    """The folders a written module builds paths into through its `__file__` (ddpify.output.packages
    `folders_built_beside`), to make empty beside it in the output, each with what it is."""
    from ddpify.output.packages import beside_entry, folders_built_beside, init_files_where_read

    if dest is None or source.path is None:
        return []
    project = Path(os.path.realpath(source.path)).parent
    if Path(os.path.realpath(dest.parent)) == project:  # written beside the original: its folders are there
        return []
    placed = beside_entry(result.modules)
    inits = init_files_where_read(project, {rel: module.read_from for rel, module in placed.items()})
    # the entry's own paths too (its output's `__file__` names the output folder as well)
    return [(dest.parent / rel, f"made empty: a converted module beside it builds paths into {_shown(original)}/ "
             f"through its __file__" + (f" (its {count} file(s) not copied: copy or link them if the program "
                                        "reads them)" if count else ""))
            for rel, (original, count) in folders_built_beside(project, {**placed, source.path.name: result}, inits,
                                                               result.modules).items()]


def _shown(path: Path) -> str:
    """`path` relative to the working directory where it lies under it, else as it is."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


def _program_files(source: files.Source, result: Result) -> set[Path]:
    """The files of the program `source` starts: the entry and every module it reads."""
    project = Path(os.path.realpath(source.path)).parent
    return {(project / rel).resolve() for rel in result.modules} | {source.path.resolve()}


def _write_outputs(dests: list[Path | None], loaded: list[files.Loaded], results: list[Result],
                   modules: list[list[tuple[Result, Path, str]]], in_place: bool, runtime: bytes | None) -> None:
    """Write every input's files, their programs' modules, the output folders' records and the
    runtime's copies (`runtime`: its code, or None) in one two-phase step: all or none. Then remove
    what earlier conversions wrote and these no longer do."""
    records: dict[Path, bytes] = {}  # each output folder's record, as the plans so far leave it
    planned = [_writes(result, dest, load.mode, in_place, program, records)
               for dest, load, result, program in zip(dests, loaded, results, modules)]
    copies = [guard(files.vendor_runtime, folder, runtime) for folder in sorted(
        {d.parent for d, r in zip(dests, results) if d is not None and r.changed})] if runtime else []
    stale = [p for _, paths in planned for p in paths]  # they would shadow this conversion's modules
    entries = {Path(os.path.realpath(d)).parent for d in dests if d is not None} if in_place else set()
    guard(files.write_all_atomic, [*(w for writes, _ in planned for w in writes),
                                   *((path, record, None) for path, record in records.items()),
                                   *((path, runtime, None) for path, _ in filter(None, copies))],
          files.WRITE_ELSEWHERE, stale, entries)  # the journal of a kill also beside the entries
    for path in stale:
        click.echo(f"{path}: removed (written by an earlier conversion, no longer changed)", err=True)
    for _, message in filter(None, copies):
        if message:
            click.echo(message, err=True)


def _writes(result: Result, dest: Path | None, mode: int | None, in_place: bool,
            modules: list[tuple[Result, Path, str]], records: dict[Path, bytes]
            ) -> tuple[list[tuple[Path, bytes, int | None]], list[Path]]:
    """The files one result writes, and the files an earlier conversion into the same folder wrote
    that this one no longer does (see ddpify.inputs.written): `dest` (in place only if it
    changed) and its program's changed `modules`; nothing for standard output (`dest` None).
    The folder's updated record goes into `records`, written with them."""
    if dest is None:
        return [], []
    entry = [(dest, result.output, mode)] if result.changed or not in_place else []
    stale: list[Path] = []
    record = dest.parent / written.RECORD
    if not in_place and (modules or record in records or record.exists()):
        plan = guard(written.plan, dest.parent, dest.name,
                     {str(d.relative_to(dest.parent)): m.output for m, d, _ in modules}, records.get(record))
        records[record], stale = plan.record[1], plan.stale
    return [*entry, *((d, m.output, None) for m, d, _ in modules)], stale


def _print_outcome(source: files.Source, dest: Path | None, result: Result, script: Script | None,
                   modules: list[tuple[Result, Path, str]], in_place: bool,
                   folders: list[tuple[Path, str]]) -> None:
    """On stderr: the records, where a program went under -o (the entry's output, then each
    module written beside it and what it is) and how to run the output."""
    from ddpify.output.packages import original_folders

    print_records(source.name, result, script)
    if dest is not None and (modules or folders) and not in_place:
        click.echo(f"{dest}: written, with " + ("the modules the conversion changed" if modules else "what it needs")
                   + " beside it:", err=True)
        for _, path, what in modules:
            click.echo(f"    {path}  <- {what}", err=True)
        for path, what in folders:
            click.echo(f"    {path}/  <- {what}", err=True)
    if dest is not None and result.changed:
        _print_run_hint(dest, None if in_place or not result.modules else
                        [source.path.parent, *original_folders(source.path.parent, result.modules)],
                        _taken_by_torchrun(result))


def _taken_by_torchrun(result: Result) -> list[str]:
    """The script's options that torchrun's parser would take for abbreviations of its own (the
    launcher-arg warnings "torchrun stops at `--e` ..."), in the entry and its modules."""
    found = [m.group(1) for c in result.changes if c.rewrite == "launcher-arg"
             and (m := re.match(r"torchrun stops at `([^`]+)`", c.message))]
    return list(dict.fromkeys([*found, *(o for sub in result.modules.values() for o in _taken_by_torchrun(sub))]))


def _print_run_hint(dest: Path, folders: list[Path] | None = None, taken: list[str] | None = None) -> None:
    """How to launch the output here: `gpu` only where there is one (torchrun refuses it on
    CPU); with the `folders` whose unchanged modules the output imports (the entry's, then those
    its modules were imported from), those on PYTHONPATH, after the converted ones (first on
    sys.path: beside the script). Where torchrun would take options of the script for its own
    (`taken`), the line ends with `--`, after which the script's arguments go, and says why."""
    from ddpify.run.launch import default_nproc

    path = shlex.quote(str(dest))
    shown = list(dict.fromkeys(str(f.resolve()) for f in folders or () if f.resolve() != dest.parent.resolve()))
    env = f"PYTHONPATH={shlex.quote(os.pathsep.join(shown))} " if shown else ""
    dash = " --" if taken else ""
    click.echo(f"run it: {env}torchrun --standalone --nproc_per_node={default_nproc()} {path}{dash}", err=True)
    click.echo(f"    or: {env}python {path} (one process)", err=True)
    if taken:
        click.echo(f"    the script's arguments go after `--` under torchrun, which would take "
                   f"{', '.join(f'`{o}`' for o in taken)} for its own options", err=True)


def _finish(inputs: files.Inputs, results: list[Result], check: bool, as_json: bool) -> None:
    """Print the JSON report if asked; exit 1 under --check when something would change."""
    files = [(name, r) for s, result in zip(inputs.sources, results)
             for name, r in [(s.name, result), *((module_name(s.name, rel, m), m) for rel, m in result.modules.items()
                                                 if m.changed or m.changes)]]
    if as_json:
        click.echo(report.to_json((name, r.changed, r.changes) for name, r in files))
    if check:
        changed = sum(r.changed for _, r in files)
        if not as_json:
            click.echo(f"--check: {changed} of {len(files)} file(s) would change; nothing written",
                       err=True)
        if changed:
            raise click.exceptions.Exit(EXIT_WOULD_CHANGE)
