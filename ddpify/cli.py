"""The command line: `ddpify convert`, `ddpify diff`, `ddpify run`, `ddpify rewrites`.

Code and diffs go to stdout, messages to stderr. Exit codes are black's: 0 success (converted,
nothing to change, or left alone), 1 under `--check` when something would change, 2 usage or
input error, 123 internal error. Every input is converted in memory before anything is
written, so one bad input means nothing is written. Never imports torch (not even through
the runtime), so start-up stays fast.
"""

from __future__ import annotations

import difflib
import functools
import os
import shlex
import sys
import traceback
from dataclasses import dataclass, replace
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import click

from ddpify import __version__, io, report

if TYPE_CHECKING:
    from ddpify.convert import Options, Result
    from ddpify.notebook import Script

# The engine (LibCST's matchers and codemod helpers), notebooks and launching are imported by
# the commands that use them, so that `ddpify --help` starts as fast as click and LibCST themselves.

EXIT_OK, EXIT_WOULD_CHANGE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 123
VERBOSE_HINT = " (rerun with --verbose for the traceback)"

HELP = """Turn a single-GPU PyTorch training script into a DistributedDataParallel script
for torchrun.

\b
  ddpify diff train.py                       preview: unified diff + one line per change
  ddpify convert train.py -o train_ddp.py    write the converted script
  torchrun --nproc_per_node=4 train_ddp.py   run it on 4 GPUs (or: python train_ddp.py)
  ddpify run --nproc-per-node 4 train.py     or convert and launch in one step
  ddpify check ddp_train.py                  find DDP bugs in a script already distributed

Exit codes: 0 success, 1 --check found changes or `check` found problems, 2 usage or input error, 123 internal error.
"""


# ---- conversion, in this process or a pool ---------------------------------------------------

@dataclass
class Outcome:
    """Converting one input: its result, or a one-line error with its exit code."""

    result: Result | None = None
    error: str = ""
    code: int = EXIT_OK
    traceback: str = ""


def convert_one(name: str, data: bytes, options: Options) -> Outcome:
    """Convert, turning every exception into an `Outcome` (exceptions do not cross processes)."""
    import libcst as cst

    from ddpify.convert import RewriteError, convert
    try:
        return Outcome(convert(data, options))
    except cst.ParserSyntaxError as exc:
        return Outcome(error=f"{_syntax_error(name, data, exc)}", code=EXIT_INPUT)
    except (SyntaxError, UnicodeDecodeError) as exc:  # a bad encoding cookie or undecodable bytes
        return Outcome(error=f"{name}: cannot parse: {_one_line(str(exc))}", code=EXIT_INPUT)
    except RewriteError as exc:
        return Outcome(error=f"{name}: internal error in rewrite {exc.rewrite}: {_one_line(exc.detail)}",
                       code=EXIT_INTERNAL, traceback=traceback.format_exc())
    except Exception as exc:
        return Outcome(error=f"{name}: internal error: {type(exc).__name__}: {_one_line(str(exc))}",
                       code=EXIT_INTERNAL, traceback=traceback.format_exc())


def _syntax_error(name: str, data: bytes, exc) -> str:
    """`name:line:col: cannot parse: message` where Python itself reports the error (LibCST's
    parser often points a line or more later); LibCST's words when Python compiles the code."""
    try:
        compile(data, name, "exec", dont_inherit=True)
    except SyntaxError as py:
        if py.lineno is not None:
            return f"{name}:{py.lineno}:{py.offset or 1}: cannot parse: {_one_line(py.msg)}"
    except (ValueError, UnicodeDecodeError):
        pass
    return f"{name}:{exc.raw_line}:{exc.raw_column + 1}: cannot parse: {_one_line(exc.message)}"


def convert_all(items: list[tuple[str, bytes]], options: Options, jobs: int) -> list[Outcome]:
    """Convert (name, data) pairs, with up to `jobs` processes (0: one per core)."""
    jobs = min(jobs or os.cpu_count() or 1, len(items))
    names, datas = [n for n, _ in items], [d for _, d in items]
    if jobs <= 1:
        return list(map(convert_one, names, datas, repeat(options)))
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(convert_one, names, datas, repeat(options)))


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ---- options -----------------------------------------------------------------------------------

def _rewrite_names(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> frozenset[str]:
    names = frozenset(n.strip() for v in values for n in v.split(",") if n.strip())
    from ddpify.rewrites import NAMES, REWRITES

    unknown = sorted(names - NAMES)
    if unknown:
        raise click.BadParameter(f"unknown rewrite(s) {', '.join(unknown)}; valid names: "
                                 + ", ".join(r.name for r in REWRITES))
    return names


def _engine_options(command: Callable) -> Callable:
    """The options `convert` and `diff` share."""
    options = [
        click.argument("sources", metavar="SRC...", nargs=-1, required=True),
        click.option("--only", multiple=True, callback=_rewrite_names, metavar="NAME[,NAME]",
                     help="Run only these rewrites (repeatable; see `ddpify rewrites`)."),
        click.option("--skip", multiple=True, callback=_rewrite_names, metavar="NAME[,NAME]",
                     help="Do not run these rewrites (repeatable)."),
        click.option("--check", is_flag=True,
                     help="Write nothing; exit 1 if anything would change, 0 otherwise."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the change records as JSON on stdout instead of text lines."),
        click.option("--find-unused-parameters", is_flag=True,
                     help="Build DDP with find_unused_parameters=True (models with unused branches)."),
        click.option("--sync-batchnorm", is_flag=True,
                     help="Convert BatchNorm layers to SyncBatchNorm (CUDA only)."),
        click.option("--strategy", type=click.Choice(["ddp", "fsdp"]), default="ddp", show_default=True,
                     help="ddp: a full model per process; fsdp: shard the model with FSDP2 (fully_shard)."),
        click.option("--no-shard-eval", is_flag=True,
                     help="Keep every evaluation loop whole (the same as --skip shard-eval)."),
        click.option("--markdown", is_flag=True,
                     help="Notebooks (.ipynb): keep markdown cells, as comments."),
        click.option("-j", "--jobs", type=click.IntRange(min=0), default=1, show_default=True,
                     help="Convert files in parallel with N processes (0: one per core)."),
        click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors."),
    ]
    return functools.reduce(lambda cmd, option: option(cmd), reversed(options), _internal_errors(command))


def _internal_errors(command: Callable) -> Callable:
    """Any unexpected exception: one line (the traceback with --verbose) and exit 123."""
    @functools.wraps(command)
    def run(**kwargs):
        try:
            return command(**kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            error = f"ddpify: internal error: {type(exc).__name__}: {_one_line(str(exc))}"
            if kwargs["verbose"]:
                _fail(EXIT_INTERNAL, traceback.format_exc().rstrip(), error)
            _fail(EXIT_INTERNAL, error + VERBOSE_HINT)
    return run


def _options(only: frozenset[str], skip: frozenset[str], find_unused_parameters: bool,
             sync_batchnorm: bool, strategy: str, no_shard_eval: bool = False) -> Options:
    from ddpify.convert import Options

    skip = skip | {"shard-eval"} if no_shard_eval else skip
    return Options(only=only or None, skip=skip, find_unused_parameters=find_unused_parameters,
                   sync_batchnorm=sync_batchnorm, strategy=strategy)


def _list_rewrites(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        _print_rewrites(frozenset())
        ctx.exit(EXIT_OK)


# ---- commands ----------------------------------------------------------------------------------

@click.group(help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ddpify")
@click.option("--list-rewrites", is_flag=True, is_eager=True, expose_value=False, callback=_list_rewrites,
              help="List the rewrites and exit (same as `ddpify rewrites`).")
def main() -> None:
    """The `ddpify` command (also `python -m ddpify`)."""


@main.command("convert")
@_engine_options
@click.option("-o", "--output", metavar="DST",
              help="Output file; with several inputs or a directory, an output directory "
                   "that mirrors the inputs' relative paths.")
@click.option("--in-place", is_flag=True, help="Rewrite the input files themselves.")
@click.option("--vendor-runtime", is_flag=True,
              help="Copy the runtime next to each output as ddpify_runtime.py, for machines "
                   "without ddpify installed.")
def convert_command(sources, only, skip, check, as_json, find_unused_parameters, sync_batchnorm, strategy,
                    no_shard_eval, markdown, jobs, verbose, output, in_place, vendor_runtime) -> None:
    """Convert SRC (files, directories, or - for stdin) to DDP.

    One input without -o prints the converted code on stdout. The inputs are never modified
    unless --in-place. A Jupyter notebook (SRC ending in .ipynb, named explicitly) becomes a
    Python script: on stdout, or -o FILE.py (into -o DIR as NAME.py).

    \b
      ddpify convert train.py -o train_ddp.py
      ddpify convert train.ipynb -o train_ddp.py
      ddpify convert src/ -o src_ddp/ --vendor-runtime
      ddpify convert - < train.py > train_ddp.py
    """
    if in_place and output is not None:
        raise click.UsageError("use either -o or --in-place, not both")
    if in_place and io.STDIN in sources:
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

    inputs = _guard(io.collect, sources, Path(output) if output is not None else None)
    dests = [None] * len(inputs.sources) if check else _guard(io.destinations, inputs, output, in_place)
    dests = [_script_dest(source, dest) for source, dest in zip(inputs.sources, dests)]
    loaded, results, scripts = _convert_inputs(
        inputs, _options(only, skip, find_unused_parameters, sync_batchnorm, strategy, no_shard_eval), jobs,
        verbose, markdown)
    runtime = _guard(io.runtime_source) if vendor_runtime and not check else None
    for source, dest, load, result, script in zip(inputs.sources, dests, loaded, results, scripts):
        if not check:
            _deliver(result, dest, load.mode, in_place, runtime)
        if not as_json:
            _print_records(source.name, result, script)
            if dest is not None and result.changed:
                _print_run_hint(dest)
    _finish(inputs, results, check, as_json)


@main.command("diff")
@_engine_options
def diff_command(sources, only, skip, check, as_json, find_unused_parameters, sync_batchnorm, strategy,
                 no_shard_eval, markdown, jobs, verbose) -> None:
    """Show what converting SRC would change, as a unified diff; writes nothing. For a notebook
    (.ipynb), the diff is against its code cells as one script.

    \b
      ddpify diff train.py
      ddpify diff train.ipynb
      ddpify diff --only init-distributed,wrap-model train.py
    """
    inputs = _guard(io.collect, sources)
    _, results, scripts = _convert_inputs(
        inputs, _options(only, skip, find_unused_parameters, sync_batchnorm, strategy, no_shard_eval), jobs,
        verbose, markdown)
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for source, result, script in zip(inputs.sources, results, scripts):
        if not as_json:
            for line in unified_diff(source.name, result):
                click.echo(_colour(line) if colour else line, nl=False, color=colour)
            _print_records(source.name, result, script)
    _finish(inputs, results, check, as_json)


@main.command("run", context_settings={"ignore_unknown_options": True,
                                       "allow_interspersed_args": False})
@click.argument("args", metavar="SCRIPT [ARGS]...", nargs=-1, type=click.UNPROCESSED)
def run_command(args: tuple[str, ...]) -> None:
    """Convert SCRIPT (.py or .ipynb) and launch it with torchrun, in one step; SCRIPT itself is
    not touched.

    The converted copy is written next to SCRIPT as NAME.ddpify.py (so its sibling imports and
    relative paths work) and removed when the job ends, also on Ctrl-C. ARGS go to the script;
    the exit code is the job's (torchrun's: 1 when a worker fails; 130 after Ctrl-C).

    \b
    OPTIONS, before SCRIPT:
      --keep                      keep NAME.ddpify.py (its path is printed)
      --strategy ddp|fsdp         as for `ddpify convert` (default ddp)
      any torchrun option         passed on, e.g. --nproc-per-node N|gpu|cpu|auto, --nnodes,
                                  --rdzv-endpoint, --max-restarts, --log-dir
    Defaults: --nproc-per-node auto (one process per GPU; without CUDA, one per CPU core) and
    --standalone (unless you give --nnodes, --rdzv-* or --master-* options).

    \b
      ddpify run train.py --epochs 3
      ddpify run --nproc-per-node 2 --keep train.py --lr 0.1
    """
    from ddpify import launch

    plan = _guard(launch.parse, list(args))
    if plan.script.is_dir():
        _fail(EXIT_INPUT, f"{plan.script}: is a directory; ddpify run needs one script")
    inputs = _guard(io.collect, [str(plan.script)])
    loaded, results, scripts = _convert_inputs(inputs, _options(frozenset(), frozenset(), False, False, plan.strategy),
                                               1, False, False)
    source, result = inputs.sources[0], results[0]
    target = launch.converted_path(plan.script)
    if not result.changed and scripts[0] is None:  # left alone (already distributed): run it as it is
        _print_records(source.name, result)
        click.echo(f"ddpify run: launching {source.name} as it is", err=True)
        raise click.exceptions.Exit(launch.run_job(launch.torchrun_command(plan, plan.script)))
    if target.exists() and b"ddpify_runtime" not in target.read_bytes():
        _fail(EXIT_INPUT, f"{target}: exists and was not written by ddpify: move it away first")
    click.echo(f"{report.summary(source.name, result.changes, result.changed)} -> {target}", err=True)
    try:
        _guard(io.write_atomic, target, result.output, loaded[0].mode)
        code = launch.run_job(launch.torchrun_command(plan, target))
    finally:
        if not plan.keep:
            target.unlink(missing_ok=True)
    if plan.keep:
        click.echo(f"kept {target}", err=True)
    raise click.exceptions.Exit(code)


@main.command("rewrites")
@click.argument("names", metavar="[NAME]...", nargs=-1, callback=_rewrite_names)
def rewrites_command(names: frozenset[str]) -> None:
    """List the rewrites in the order they run, or show the full description of NAMEs."""
    _print_rewrites(names)


# ---- check: DDP bugs in scripts that are already distributed ----------------------------------

if TYPE_CHECKING:
    from ddpify.check import Report

CHECK_HELP_TAIL = "Exit codes: 0 no findings, 1 findings, 2 usage or input error, 123 internal error."


def _rule_codes(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> frozenset[str]:
    from ddpify.check import RULES

    codes = frozenset(c.strip().upper() for v in values for c in v.split(",") if c.strip())
    unknown = sorted(c for c in codes if not any(r.code.startswith(c) for r in RULES))
    if unknown:
        raise click.BadParameter(f"unknown code(s) {', '.join(unknown)}; valid codes: "
                                 + ", ".join(r.code for r in RULES))
    return codes


@main.command("check", epilog=CHECK_HELP_TAIL)
@click.argument("sources", metavar="PATH...", nargs=-1)
@click.option("--select", multiple=True, callback=_rule_codes, metavar="CODE[,CODE]",
              help="Run only these rules (codes, or prefixes such as DDP00; repeatable).")
@click.option("--ignore", multiple=True, callback=_rule_codes, metavar="CODE[,CODE]",
              help="Do not run these rules (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON on stdout.")
@click.option("--fix", is_flag=True, help="Apply the safe fixes to the files, then report what is left.")
@click.option("--explain", metavar="CODE", help="Show what a rule finds, with a wrong and a right example.")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@_internal_errors
def check_command(sources, select, ignore, as_json, fix, explain, verbose) -> None:
    """Find the classic DDP bugs in PATH (files, directories, or - for stdin): the global rank
    as a GPU index, collectives only some ranks reach, checkpoints from every rank, a
    DistributedSampler without set_epoch, ... (`ddpify check --explain DDP001`).

    Prints `path:line:col: DDP### message` per finding; `# noqa: DDP###` on a line silences it.

    \b
      ddpify check train.py
      ddpify check src/ --ignore DDP011
      ddpify check --fix train.py
    """
    import json
    from dataclasses import asdict

    from ddpify import check

    if explain is not None:
        rule = check.CODES.get(explain.strip().upper())
        if rule is None:
            raise click.BadParameter(f"unknown code {explain}; valid codes: {', '.join(check.CODES)}",
                                     param_hint="--explain")
        click.echo(f"{rule.code} ({rule.name}){' [fixable]' if rule.fixable else ''}\n\n{rule.doc}")
        return
    if not sources:
        raise click.UsageError("name the scripts or directories to check (or --explain CODE)")
    if fix and io.STDIN in sources:
        raise click.UsageError("--fix cannot rewrite standard input")
    rules = check.select(select or None, ignore)
    inputs = _guard(io.collect, sources)
    outcomes = [_check_one(source, rules, fix) for source in inputs.sources]
    errors = [o for o in outcomes if o.error]
    if fix and errors:  # nothing is written: report the files as they are
        outcomes = [o if o.error else _check_one(s, rules, False) for s, o in zip(inputs.sources, outcomes)]
    elif fix:
        for source, outcome in zip(inputs.sources, outcomes):
            if outcome.fixed:
                _guard(io.write_atomic, source.path, outcome.output, outcome.mode)
    good = [(s, o) for s, o in zip(inputs.sources, outcomes) if not o.error]
    if as_json:
        click.echo(json.dumps({"version": 1, "files": [
            {"path": s.name, "note": o.report.note, "fixed": o.fixed,
             "findings": [asdict(f) for f in o.report.findings]} for s, o in good]}, indent=2))
    else:
        for source, outcome in good:
            for finding in outcome.report.findings:
                click.echo(finding.render(source.name))
            if outcome.report.note:
                click.echo(f"{source.name}: note: {outcome.report.note}", err=True)
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
    if not as_json:
        click.echo(_check_summary(good, fix), err=True)
    if left:
        raise click.exceptions.Exit(1)


@dataclass
class _Checked:
    """Checking one input: its report (after the fixes, under --fix), or a one-line error."""

    report: Report | None = None
    output: bytes = b""
    fixed: int = 0
    mode: int | None = None
    error: str = ""
    code: int = EXIT_OK
    traceback: str = ""


def _check_one(source: io.Source, rules, fix: bool) -> _Checked:
    import libcst as cst

    from ddpify import check
    try:
        load = io.read(source)
    except io.InputError as exc:
        return _Checked(error=str(exc), code=EXIT_INPUT)
    name = source.name
    try:
        if fix:
            done = check.fix(load.data, rules)
            return _Checked(done.report, done.output, done.fixed, load.mode)
        return _Checked(check.check(load.data, rules))
    except cst.ParserSyntaxError as exc:
        return _Checked(error=_syntax_error(name, load.data, exc), code=EXIT_INPUT)
    except (SyntaxError, UnicodeDecodeError) as exc:
        return _Checked(error=f"{name}: cannot parse: {_one_line(str(exc))}", code=EXIT_INPUT)
    except Exception as exc:
        return _Checked(error=f"{name}: internal error: {type(exc).__name__}: {_one_line(str(exc))}",
                        code=EXIT_INTERNAL, traceback=traceback.format_exc())


def _check_summary(checked: list, fix: bool) -> str:
    findings = [f for _, o in checked for f in o.report.findings]
    files = len({s for s, o in checked if o.report.findings})
    fixed = sum(o.fixed for _, o in checked)
    done = f"fixed {fixed} problem(s) in {sum(bool(o.fixed) for _, o in checked)} file(s); " if fix else ""
    if not findings:
        return f"{done}no DDP problems found in {len(checked)} file(s)"
    fixable = sum(f.fixable for f in findings)
    hint = f" ({fixable} fixable with --fix)" if fixable and not fix else ""
    return f"{done}{len(findings)} problem(s) in {files} of {len(checked)} file(s){hint}"


# ---- shared steps ------------------------------------------------------------------------------

def _guard(fn: Callable, *args):
    """Call `fn`; an `InputError` becomes its one line on stderr and exit 2."""
    try:
        return fn(*args)
    except io.InputError as exc:
        _fail(EXIT_INPUT, str(exc))


def _fail(code: int, *lines: str):
    for line in lines:
        click.echo(line, err=True)
    raise click.exceptions.Exit(code)


def _convert_inputs(inputs: io.Inputs, options: Options, jobs: int, verbose: bool, markdown: bool
                    ) -> tuple[list[io.Loaded], list[Result], list[Script | None]]:
    """Read and convert every input; on any error print them all and exit (2, or 123 if any is
    ours). Notebooks are converted as the script of their code cells (`markdown`: with their
    markdown cells as comments), returned alongside (None for other inputs); their results
    start with the notebook's own records, on the script's lines."""
    from ddpify import notebook

    loaded, scripts, errors = [], [], []
    for source in inputs.sources:
        try:
            load = io.read(source)
            script = (notebook.to_script(source.name, load.data, markdown)
                      if notebook.is_notebook(source.name) else None)
        except io.InputError as exc:
            errors.append(str(exc))
            continue
        loaded.append(load if script is None else io.Loaded(script.code.encode(), load.mode))
        scripts.append(script)
    if errors:
        _fail(EXIT_INPUT, *errors)
    outcomes = convert_all([(s.name, ld.data) for s, ld in zip(inputs.sources, loaded)], options, jobs)
    failed = [o for o in outcomes if o.code != EXIT_OK]
    if failed:
        lines = []
        for outcome in failed:
            if outcome.code == EXIT_INTERNAL:
                lines += ([outcome.traceback.rstrip(), outcome.error] if verbose
                          else [outcome.error + VERBOSE_HINT])
            else:
                lines.append(outcome.error)
        _fail(max(o.code for o in failed), *lines)
    results = [o.result for o in outcomes]
    for result, script in zip(results, scripts):
        if script is not None:  # the notebook's own records (IPython lines) come first
            result.changes = script.changes + result.changes
    return loaded, results, scripts


def _script_dest(source: io.Source, dest: Path | None) -> Path | None:
    """A notebook's output is a script: NAME.ipynb mirrored into an output directory becomes
    NAME.py, and `-o` naming a notebook is refused."""
    from ddpify import notebook

    if dest is None or not notebook.is_notebook(source.name):
        return dest
    if dest.name == source.path.name:
        return dest.with_suffix(".py")
    if notebook.is_notebook(dest.name):
        _fail(EXIT_INPUT, f"-o {dest}: a notebook converts to a Python script: name the output .py")
    return dest


def _deliver(result: Result, dest: Path | None, mode: int | None, in_place: bool,
             runtime: bytes | None) -> None:
    """Write one result: on stdout (`dest` None) or to `dest` (in place only if it changed),
    with a copy of the `runtime` next to it if given and the code changed."""
    if dest is None:
        click.echo(result.output, nl=False)
    elif result.changed or not in_place:
        _guard(io.write_atomic, dest, result.output, mode)
        if runtime is not None and result.changed:
            message = _guard(io.vendor_runtime, dest.parent, runtime)
            if message:
                click.echo(message, err=True)


def _print_records(name: str, result: Result, script: Script | None = None) -> None:
    """One line per record, then the file's summary, on stderr. A notebook's records name the
    cell: `train.ipynb:cell 4:3: ...` is line 3 of cell 4."""
    for change in result.changes:
        if script is None:
            click.echo(change.render(name), err=True)
        else:
            cell, line = script.locate(change.line)
            click.echo(replace(change, line=line).render(f"{name}:cell {cell}"), err=True)
    click.echo(report.summary(name, result.changes, result.changed), err=True)


def _print_run_hint(dest: Path) -> None:
    path = shlex.quote(str(dest))
    click.echo(f"run it: torchrun --standalone --nproc_per_node=gpu {path}", err=True)
    click.echo(f"    or: python {path} (one process)", err=True)


def _finish(inputs: io.Inputs, results: list[Result], check: bool, as_json: bool) -> None:
    """Print the JSON report if asked; exit 1 under --check when something would change."""
    if as_json:
        click.echo(report.to_json((s.name, r.changed, r.changes) for s, r in zip(inputs.sources, results)))
    if check:
        changed = sum(r.changed for r in results)
        if not as_json:
            click.echo(f"--check: {changed} of {len(results)} file(s) would change; nothing written",
                       err=True)
        if changed:
            raise click.exceptions.Exit(EXIT_WOULD_CHANGE)


def unified_diff(name: str, result: Result) -> Iterator[str]:
    """The diff of one result, with `a/NAME` and `b/NAME` headers; lines keep their endings."""
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


def _print_rewrites(names: frozenset[str]) -> None:
    """The full description of each of `names`; with none, one line per rewrite."""
    from ddpify.rewrites import REWRITES

    if names:
        for rewrite in REWRITES:
            if rewrite.name in names:
                click.echo(f"{rewrite.name}: {rewrite.summary}\n\n{rewrite.doc.strip()}\n")
        return
    width = max(len(r.name) for r in REWRITES)
    for rewrite in REWRITES:
        click.echo(f"{rewrite.name:<{width}}  {rewrite.summary}")
