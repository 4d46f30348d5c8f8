"""What every command shares: exit codes, one-line errors, and the guard that turns an input
error into its line on stderr and exit 2."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from pathlib import Path
from typing import Callable, Iterable, NoReturn

import click

from ddpify.inputs import files
from ddpify.syntax.parse import one_line

EXIT_OK, EXIT_WOULD_CHANGE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 123
EXIT_BROKEN_PIPE = 128 + 13  # as a tool killed by SIGPIPE: the reader of stdout went away
VERBOSE_HINT = " (rerun with --verbose for the traceback)"


def guard(fn: Callable, *args):
    """Call `fn`; an `InputError` becomes its one line on stderr and exit 2."""
    try:
        return fn(*args)
    except files.InputError as exc:
        fail(EXIT_INPUT, str(exc))


def finish_killed_writes(paths: Iterable[Path | None]) -> bool:
    """Finish the writes of earlier ddpify commands killed during their renames in the folders of
    `paths` (see ddpify.inputs.journal), before this command reads them: one line each on stderr;
    remove the temporary files of those killed before. Whether one was finished (the caller lists
    its inputs again)."""
    from ddpify.inputs import journal

    folders = [folder for path in paths if path is not None
               for folder in (path.parent, Path(os.path.realpath(path)).parent)]
    lines = journal.finish(folders)
    for folder in dict.fromkeys(folders):  # and what runs killed while staging left
        files.remove_killed_temporaries(folder)
    for line in lines:
        click.echo(line, err=True)
    return bool(lines)


def fail(code: int, *lines: str) -> NoReturn:
    """Print `lines` on stderr and exit with `code`."""
    for line in lines:
        click.echo(line, err=True)
    raise click.exceptions.Exit(code)


def internal_errors(command: Callable) -> Callable:
    """Any unexpected exception: one line (the traceback with --verbose) and exit 123."""
    @functools.wraps(command)
    def run(**kwargs):
        try:
            return command(**kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # `ddpify diff f | head -1`: the reader has all it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit's flush
            raise click.exceptions.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as exc:
            error = f"ddpify: internal error: {type(exc).__name__}: {one_line(str(exc))}"
            if kwargs["verbose"]:
                fail(EXIT_INTERNAL, traceback.format_exc().rstrip(), error)
            fail(EXIT_INTERNAL, error + VERBOSE_HINT)
    return run
