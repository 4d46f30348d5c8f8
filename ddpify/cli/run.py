"""`ddpify run`: convert a script and launch it with torchrun, in one step."""

from __future__ import annotations

import click

from ddpify import io, report
from ddpify.cli.engine import convert_inputs, make_options, print_records
from ddpify.cli.shared import EXIT_INPUT, fail, guard


@click.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
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

    plan = guard(launch.parse, list(args))
    if plan.script.is_dir():
        fail(EXIT_INPUT, f"{plan.script}: is a directory; ddpify run needs one script")
    inputs = guard(io.collect, [str(plan.script)])
    loaded, results, scripts = convert_inputs(inputs, make_options(frozenset(), frozenset(), False, False,
                                                                   plan.strategy), 1, False, False)
    source, result = inputs.sources[0], results[0]
    target = launch.converted_path(plan.script)
    if not result.changed and scripts[0] is None:  # left alone (already distributed): run it as it is
        print_records(source.name, result)
        click.echo(f"ddpify run: launching {source.name} as it is", err=True)
        raise click.exceptions.Exit(launch.run_job(launch.torchrun_command(plan, plan.script)))
    if target.exists() and b"ddpify_runtime" not in target.read_bytes():
        fail(EXIT_INPUT, f"{target}: exists and was not written by ddpify: move it away first")
    click.echo(f"{report.summary(source.name, result.changes, result.changed)} -> {target}", err=True)
    try:
        guard(io.write_atomic, target, result.output, loaded[0].mode)
        code = launch.run_job(launch.torchrun_command(plan, target))
    finally:
        if not plan.keep:
            target.unlink(missing_ok=True)
    if plan.keep:
        click.echo(f"kept {target}", err=True)
    raise click.exceptions.Exit(code)
