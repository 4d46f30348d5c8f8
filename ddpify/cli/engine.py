"""Converting inputs for the commands that convert (`convert`, `diff`, `run`): their shared
options, reading and converting every input (in this process or a pool), and the report lines."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Iterator

import click

from ddpify.inputs import files
from ddpify.output import report
from ddpify.cli.shared import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, VERBOSE_HINT, fail, internal_errors
from ddpify.options import Options
from ddpify.syntax.parse import INPUT_ERRORS, input_error, one_line

if TYPE_CHECKING:
    from ddpify.convert import Result
    from ddpify.inputs.notebook import Script


@dataclass
class Outcome:
    """Converting one input: its result, or a one-line error with its exit code."""

    result: Result | None = None
    error: str = ""
    code: int = EXIT_OK
    traceback: str = ""
    timed_out: bool = False


# The time one file may take to convert: a generated file or a pathological expression ends with
# one line naming it, instead of stalling a run over a repository.
FILE_TIMEOUT_S = 120.0


class Scope(Enum):
    """What a conversion reads of an input (`convert_one`)."""

    TEXT = "text"      # the text alone (a notebook's code, standard input): not a program
    FILE = "file"      # the script as a program of one file (with ddpify.analysis.reach's warnings)
    FOLLOW = "follow"  # the script with the project modules it imports (ddpify.inputs.program)


class FileTimeout(Exception):
    """Converting one file took longer than its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise `FileTimeout` in the block after `seconds` (a timer signal: only in the main thread,
    and where LibCST's native parser returns to Python; elsewhere, or for None, no limit)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise FileTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def convert_one(name: str, data: bytes, options: Options, scope: Scope = Scope.TEXT,
                timeout: float | None = FILE_TIMEOUT_S) -> Outcome:
    """Convert, turning every exception into an `Outcome` (exceptions do not cross processes).
    `scope`: what is read (`name` is the script's path unless it is `Scope.TEXT`). `timeout`: the
    seconds it may take (with the modules of its program)."""
    from ddpify.convert import RewriteError, convert, convert_program
    from ddpify.inputs.program import load
    try:
        with time_limit(timeout):
            if scope is Scope.TEXT:
                return Outcome(convert(data, options))
            return Outcome(convert_program(load(Path(name), data, follow=scope is Scope.FOLLOW, argv=options.argv),
                                                options))
    except INPUT_ERRORS as exc:  # in the script, or in a module of its program (`exc.path`)
        return Outcome(error=input_error(name, data, exc), code=EXIT_INPUT)
    except FileTimeout:
        return Outcome(error=f"{name}: gave up after {timeout:g} s (the limit per file; --timeout SECONDS "
                             "raises it)", code=EXIT_INPUT, timed_out=True)
    except OSError as exc:
        return Outcome(error=f"{exc.filename or name}: cannot read: {exc.strerror or exc}", code=EXIT_INPUT)
    except RewriteError as exc:
        return Outcome(error=f"{name}: internal error in rewrite {exc.rewrite}: {one_line(exc.detail)}",
                       code=EXIT_INTERNAL, traceback=traceback.format_exc())
    except Exception as exc:
        return Outcome(error=f"{name}: internal error: {type(exc).__name__}: {one_line(str(exc))}",
                       code=EXIT_INTERNAL, traceback=traceback.format_exc())


def convert_all(items: list[tuple[str, bytes, Scope]], options: Options, jobs: int,
                timeout: float | None = FILE_TIMEOUT_S) -> list[Outcome]:
    """Convert (name, data, scope) triples (see `convert_one`), with up to `jobs` processes
    (0: one per core), each within `timeout` seconds. A worker process that dies fails the files
    it had not finished, by name."""
    jobs = min(jobs or os.cpu_count() or 1, len(items))
    if jobs <= 1:
        return [convert_one(name, data, options, scope, timeout) for name, data, scope in items]
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    outcomes = []
    with ProcessPoolExecutor(max_workers=jobs, initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
        futures = [pool.submit(convert_one, name, data, options, scope, timeout) for name, data, scope in items]
        for (name, _, _), future in zip(items, futures):
            try:
                outcomes.append(future.result())
            except BrokenProcessPool as exc:
                outcomes.append(Outcome(error=f"{name}: internal error: the process converting it died "
                                              f"({one_line(str(exc))})", code=EXIT_INTERNAL))
    return outcomes


def _die_with_parent(parent: int) -> None:
    """In each worker of `convert -j N`: exit as soon as the main process is gone (SIGKILL, or a
    SIGTERM that ends it without closing the pool), instead of waiting forever for more work."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="ddpify-parent-watch", daemon=True).start()


def _notebook_script(name: str, data: bytes, markdown: bool) -> Script:
    from ddpify.inputs import notebook

    return notebook.to_script(name, data, markdown)


def convert_inputs(inputs: files.Inputs, options: Options, jobs: int, verbose: bool, markdown: bool,
                   timeout: float | None = FILE_TIMEOUT_S, skipped: list[files.Source] | None = None
                   ) -> tuple[list[files.Loaded], list[Result], list[Script | None]]:
    """Read and convert every input; on any error print them all and exit (2, or 123 if any is
    ours). Notebooks are converted as the script of their code cells (`markdown`: with their
    markdown cells as comments), with the project modules they import as a script's are, returned alongside (None for other inputs); their results
    start with the notebook's own records, on the script's lines.

    `skipped`: where given, inputs that run past `timeout` are reported (one line each), left out
    of the lists returned and added to it, so that the others are still written, as long as no
    input failed otherwise; the caller exits 2 at the end."""
    loaded, scripts, errors = [], [], []
    for source in inputs.sources:
        try:
            load = files.read(source)
            script = _notebook_script(source.name, load.data, markdown) if files.is_notebook(source.name) else None
        except files.InputError as exc:
            errors.append(str(exc))
            continue
        loaded.append(load if script is None else files.Loaded(script.code.encode(), load.mode))
        scripts.append(script)
    if errors:
        fail(EXIT_INPUT, *errors)
    # A script named alone is converted with the project modules it imports; the files of a
    # directory or a list, each on its own (each may be an entry point of its own).
    follow = Scope.FILE if inputs.tree else Scope.FOLLOW
    # A notebook is converted as a program exactly as a script is: its code with the modules it imports.
    outcomes = convert_all([(s.name, ld.data, Scope.TEXT if s.path is None else follow)
                            for s, ld, sc in zip(inputs.sources, loaded, scripts)], options, jobs, timeout)
    failed = [o for o in outcomes if o.code != EXIT_OK]
    if skipped is not None and failed and all(o.timed_out for o in failed):
        for outcome in failed:
            click.echo(outcome.error + "; skipped, the other files are written", err=True)
        kept = [i for i, o in enumerate(outcomes) if not o.timed_out]
        skipped += [s for s, o in zip(inputs.sources, outcomes) if o.timed_out]
        outcomes, loaded, scripts = [outcomes[i] for i in kept], [loaded[i] for i in kept], [scripts[i] for i in kept]
        failed = []
    if failed:
        lines = []
        for outcome in failed:
            if outcome.code == EXIT_INTERNAL:
                lines += ([outcome.traceback.rstrip(), outcome.error] if verbose
                          else [outcome.error + VERBOSE_HINT])
            else:
                lines.append(outcome.error)
        fail(max(o.code for o in failed), *lines)
    results = [o.result for o in outcomes]
    for result, script in zip(results, scripts):
        if script is not None:  # the notebook's own records (IPython lines) come first
            result.changes = script.changes + result.changes
    return loaded, results, scripts


def print_records(name: str, result: Result, script: Script | None = None,
                  kinds: Collection[str] | None = None) -> None:
    """One line per record (of `kinds`, default all), then the file's summary, on stderr. A
    notebook's records name the cell: `train.ipynb:cell 4:3: ...` is line 3 of cell 4."""
    for change in result.changes:
        if kinds is not None and change.kind not in kinds:
            continue
        if script is None:
            click.echo(change.render(name), err=True)
        else:
            where, line = script.where(name, change.line)
            click.echo(replace(change, line=line).render(where), err=True)
    click.echo(report.summary(name, result.changes, result.changed), err=True)
    for rel, module in result.modules.items():
        if module.changed or module.changes:
            print_records(module_name(name, rel, module), module, kinds=kinds)


def module_name(entry: str, rel: str, module: "Result | None" = None) -> str:
    """How the report names a program's module: its path beside the entry as given
    (`proj/train.py`, `models/net.py` -> `proj/models/net.py`), or where it was read through a
    folder on sys.path (`proj/../helper_train.py`)."""
    if module is not None and module.read_from is not None:
        return module.read_from
    return os.path.join(os.path.dirname(entry), rel)


# ---- options -----------------------------------------------------------------------------------

def rewrite_names(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> frozenset[str]:
    """The click callback of --only/--skip: rewrite names, comma-separated or repeated."""
    names = frozenset(n.strip() for v in values for n in v.split(",") if n.strip())
    from ddpify.rewrites import NAMES, REWRITES

    unknown = sorted(names - NAMES)
    if unknown:
        raise click.BadParameter(f"unknown rewrite(s) {', '.join(unknown)}; valid names: "
                                 + ", ".join(r.name for r in REWRITES))
    return names


def conversion_options(command: Callable) -> Callable:
    """The options that choose what a conversion does: `convert`, `diff` and `run` share them."""
    options = [
        click.option("--only", multiple=True, callback=rewrite_names, metavar="NAME[,NAME]",
                     help="Run only these rewrites and those they require (repeatable; see `ddpify rewrites`)."),
        click.option("--skip", multiple=True, callback=rewrite_names, metavar="NAME[,NAME]",
                     help="Do not run these rewrites, nor those that require them (repeatable)."),
        click.option("--find-unused-parameters", is_flag=True,
                     help="Build DDP with find_unused_parameters=True (models with unused branches)."),
        click.option("--sync-batchnorm", is_flag=True,
                     help="Convert BatchNorm layers to SyncBatchNorm (CUDA only)."),
        click.option("--strategy", type=click.Choice(["ddp", "fsdp"]), default="ddp", show_default=True,
                     help="ddp: a full model per process; fsdp: shard the model with FSDP2 (fully_shard)."),
        click.option("--no-shard-eval", is_flag=True,
                     help="Keep every evaluation loop whole (the same as --skip shard-eval)."),
    ]
    return functools.reduce(lambda cmd, option: option(cmd), reversed(options), command)


def engine_options(command: Callable) -> Callable:
    """The options `convert` and `diff` share."""
    options = [
        click.argument("sources", metavar="SRC...", nargs=-1, required=True),
        conversion_options,
        click.option("--check", is_flag=True,
                     help="Exit 1 if anything would change, 0 otherwise; convert writes nothing."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the change records as JSON on stdout instead of text lines."),
        click.option("--args", "script_args", metavar="'ARGS'",
                     help="The script's command line, quoted (--args '--cfg cfg1.py'): tells which module a "
                          "name given on it imports (`import_module(args.cfg)`), as `ddpify run` does."),
        click.option("--markdown", is_flag=True,
                     help="Notebooks (.ipynb): keep markdown cells, as comments."),
        click.option("-j", "--jobs", type=click.IntRange(min=0), default=1, show_default=True,
                     help="Convert files in parallel with N processes (0: one per core)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=FILE_TIMEOUT_S,
                     show_default=True, metavar="SECONDS",
                     help="Give up on a file whose conversion (with its program's modules) takes longer: "
                          "exit 2 (the other files of a directory are still written)."),
        click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors."),
    ]
    return functools.reduce(lambda cmd, option: option(cmd), reversed(options), internal_errors(command))


def make_options(only: frozenset[str], skip: frozenset[str], find_unused_parameters: bool,
                 sync_batchnorm: bool, strategy: str, no_shard_eval: bool = False,
                 argv: tuple[str, ...] | None = None) -> Options:
    """The `Options` of the command-line flags (--no-shard-eval is --skip shard-eval; `argv`: the
    script's command line, where told)."""
    skip = skip | {"shard-eval"} if no_shard_eval else skip
    return Options(only=only or None, skip=skip, find_unused_parameters=find_unused_parameters,
                   sync_batchnorm=sync_batchnorm, strategy=strategy, argv=argv)
