"""The command line: `ddpify convert`, `diff`, `run`, `check` and `rewrites`, one module each.

Code and diffs go to stdout, messages to stderr. Exit codes are black's: 0 success (converted,
nothing to change, or left alone), 1 under `--check` when something would change (or `check`
found problems), 2 usage or input error, 123 internal error. Never imports torch (not even
through the runtime), and the engine only inside the commands that use it, so that
`ddpify --help` starts as fast as click and LibCST themselves.
"""

from __future__ import annotations

import gc
import importlib

import click

from ddpify import __version__
from ddpify.cli.convert import print_rewrites, unified_diff
from ddpify.cli.shared import EXIT_OK

EXIT_INTERRUPTED = 128 + 2  # SIGINT

__all__ = ["main", "unified_diff"]

HELP = """Turn a single-GPU PyTorch training script into a DistributedDataParallel script
for torchrun.

\b
  ddpify diff train.py                       preview: unified diff + one line per change
  ddpify convert train.py -o train_ddp.py    write the converted script
  torchrun --nproc_per_node=4 train_ddp.py   run it on 4 GPUs (or: python train_ddp.py)
  ddpify run --nproc-per-node 4 train.py     or convert and launch in one step
  ddpify check ddp_train.py                  find DDP bugs in a script already distributed

Exit codes: 0 success, 1 --check found changes or `check` found problems, 2 usage or input error, 123 internal error,
130 interrupted (Ctrl-C).
"""


def _list_rewrites(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        print_rewrites(frozenset())
        ctx.exit(EXIT_OK)


# The commands, in the order the docs show them: (module, attribute), each imported when asked
# for, so that `ddpify convert` does not import (nor, without bytecode, compile) `run` and `check`.
COMMANDS = {
    "convert": ("ddpify.cli.convert", "convert_command"),
    "diff": ("ddpify.cli.convert", "diff_command"),
    "run": ("ddpify.cli.run", "run_command"),
    "rewrites": ("ddpify.cli.convert", "rewrites_command"),
    "check": ("ddpify.cli.check", "check_command"),
}


class Group(click.Group):
    """ddpify's command group: Ctrl-C during any command exits 130 (128 + SIGINT, as `run` and
    shells do) without click's `Aborted!`; each command's module is imported when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, attribute = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None


@click.group(cls=Group, help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ddpify")
@click.option("--list-rewrites", is_flag=True, is_eager=True, expose_value=False, callback=_list_rewrites,
              help="List the rewrites and exit (same as `ddpify rewrites`).")
def main() -> None:
    """The `ddpify` command (also `python -m ddpify`)."""
    collect_less()


def collect_less() -> None:
    """The garbage collector as a command runs under (`bench/real_speed.py` measures under it too)."""
    # What is loaded by now (click, LibCST's hundreds of node classes) lives as long as the process:
    # frozen, it is no longer walked by every full garbage collection that parsing a script triggers.
    gc.freeze()
    # A conversion allocates some hundred thousand objects, nearly all freed by their reference
    # counts: a young-generation collection every 10,000 allocations instead of every 700 finds
    # the same cycles, and a typical conversion runs ~5% faster (docs/decisions/0027-speed.md).
    # The middle generation every 100 young collections instead of 10: what survives a young one is
    # the conversion's own trees and answers, alive until it ends, which a middle collection walks
    # in full (~45-70 ms each); a folder or a large program converted in one command met one every
    # few files (decision 0181: 63 scripts -4 to -6% CPU, peak RSS 44 -> 49 MB; 3,326 lines -2%).
    gc.set_threshold(10_000, 100, 10)

