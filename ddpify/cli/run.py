"""`ddpify run`: convert a script into a folder of the run's own and launch it with torchrun."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ddpify.inputs import files
from ddpify.output import report
from ddpify.cli.engine import conversion_options, convert_inputs, make_options, print_records
from ddpify.cli.shared import EXIT_INPUT, EXIT_OK, fail, finish_killed_writes, guard

if TYPE_CHECKING:
    from ddpify.convert import Result
    from ddpify.run.launch import Plan
    from ddpify.inputs.notebook import Script


@click.command("ddpify run", context_settings={"help_option_names": ["-h", "--help"]})
@conversion_options
@click.option("--keep", is_flag=True, help="Keep the run's folder (the converted script, the logs) and print its path.")
@click.option("--strict", is_flag=True,
              help="Launch nothing when the conversion has warnings or shards no training loader (exit 2).")
@click.option("--dry-run", is_flag=True,
              help="Convert, print the torchrun command, the environment it sets and the run's folder "
                   "(kept), and launch nothing.")
@click.option("--sbatch", is_flag=True,
              help="Print a SLURM batch script that runs this command on --nnodes nodes (default 1), "
                   "--nproc-per-node GPUs each, and exit.")
@click.option("-v", "--verbose", is_flag=True,
              help="Print every change, and all of torchrun's and every process's output.")
def own_options(**options):
    """ddpify's own options of `ddpify run` (those before SCRIPT that are not torchrun's)."""
    return options


OWN = {name: not (isinstance(p, click.Option) and p.is_flag)
       for p in own_options.params for name in [*p.opts, *p.secondary_opts]}


class RunCommand(click.Command):
    """Its arguments are split by `launch.parse`; --help lists ddpify's own options from `own_options`."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = [p.get_help_record(ctx) for p in own_options.params]
        with formatter.section("Options of ddpify (before SCRIPT; all others go to torchrun)"):
            formatter.write_dl([r for r in records if r] + [("-h, --help", "Show this message and exit.")])


@click.command("run", cls=RunCommand, add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("args", metavar="SCRIPT [ARGS]...", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run_command(ctx: click.Context, args: tuple[str, ...]) -> None:
    """Convert SCRIPT (.py or .ipynb) and launch it with torchrun, in one step; SCRIPT itself is
    not touched, and nothing is written next to it.

    The converted script, with the modules of its project that the conversion changes (laid out
    as `ddpify convert -o DIR/` lays them out), goes into a new private folder of this run's
    (under $TMPDIR), which comes first on the script's sys.path, before SCRIPT's own folder
    (sibling imports work); the working directory stays yours (relative paths work). The folder
    is removed when the job succeeds or is stopped (Ctrl-C, SIGTERM, SIGHUP), and kept when it
    fails. The conversion's warnings are printed before the launch.

    Options before SCRIPT other than ddpify's own (below) go to torchrun (--nnodes,
    --max-restarts, ...); ARGS go to the script. The exit code is the job's (1 when a process
    fails; 128 + N after signal N), or 2 when nothing is launched (bad input, --strict).

    Defaults, unless given: --nproc-per-node: one process per GPU, or min(4, cores)
    without a GPU; OMP_NUM_THREADS: the cores shared between the processes;
    --standalone, or under `srun` (one task per node) --nnodes, --node-rank,
    --master-addr (the node list's first host), --master-port and --rdzv-id (the job
    id) from SLURM's variables.

    \b
      ddpify run train.py --epochs 3
      ddpify run --nproc-per-node 2 --keep train.py --lr 0.1
      ddpify run --sbatch --nnodes 2 --nproc-per-node 8 train.py > job.sh && sbatch job.sh
    """
    if any(a in ("-h", "--help") for a in args[:1]):
        click.echo(ctx.get_help())
        ctx.exit(EXIT_OK)
    from ddpify.run import launch

    plan = guard(launch.parse, list(args), OWN)
    try:
        options = own_options.make_context("ddpify run", list(plan.own_args)).params
    except click.UsageError as exc:
        fail(EXIT_INPUT, f"ddpify run: {exc.format_message()}")
    if plan.script.is_dir():
        fail(EXIT_INPUT, f"{plan.script}: is a directory; ddpify run needs one script")
    if options["sbatch"]:
        if not plan.script.is_file():
            fail(EXIT_INPUT, f"{plan.script}: no such file or directory")
        own = [a for a in plan.own_args if a != "--sbatch"]
        click.echo(guard(launch.sbatch_script, plan, own), nl=False)
        return
    if not launch.torch_installed():
        fail(EXIT_INPUT, "ddpify run: torch is not installed (torchrun comes with it): pip install 'ddpify[torch]'")
    nproc = plan.given(launch.NPROC) or os.environ.get("PET_NPROC_PER_NODE") or \
        os.environ.get("SLURM_GPUS_ON_NODE") or launch.default_nproc()
    too_many = guard(launch.check_nproc, nproc)  # before converting: a mistake shows at once
    if too_many:
        click.echo(too_many, err=True)
    inputs = guard(files.collect, [str(plan.script)])
    finish_killed_writes([inputs.sources[0].path])
    conversion = make_options(options["only"], options["skip"], options["find_unused_parameters"],
                              options["sync_batchnorm"], options["strategy"], options["no_shard_eval"],
                              tuple(plan.script_args))
    loaded, results, scripts = convert_inputs(inputs, conversion, 1, False, False)
    source, result, script = inputs.sources[0], results[0], scripts[0]
    print_records(source.name, result, script, kinds=None if options["verbose"] else {report.WARNING})
    warnings = [c for r in (result, *result.modules.values()) for c in r.changes if c.kind == report.WARNING]
    file_note = _file_warning(source.name, loaded[0].data.decode("utf-8", "replace"), script)
    if file_note:
        click.echo(file_note, err=True)
    unsharded = result.changed and not any(c.rewrite == "shard-data" and c.kind == report.CHANGE
                                           for r in (result, *result.modules.values()) for c in r.changes)
    if unsharded:
        click.echo(click.style(NO_SPEEDUP, bold=True), err=True)
    if options["strict"] and (warnings or file_note or unsharded):
        count = len(warnings) + bool(file_note) + unsharded
        fail(EXIT_INPUT, f"ddpify run: --strict: {count} warning(s) above; nothing launched")
    code = _launch(plan, nproc, options, source.name, result, script)
    raise click.exceptions.Exit(code)


NO_SPEEDUP = ("ddpify run: NO SPEED-UP: no training loader could be sharded, so every process trains on all "
              "the data (see the warnings above); --strict refuses to launch")


def _launch(plan: Plan, nproc: str, options: dict[str, Any], name: str, result: Result, script: Script | None) -> int:
    """Write the converted script into a new run folder, run torchrun on it, report the end."""
    from ddpify.output.file_paths import anchored
    from ddpify.output.packages import (beside_entry, files_read_beside, folders_built_beside, init_files_where_read,
                                        original_folders)
    from ddpify.run import joblog, launch

    workspace = _new_workspace()
    keep = options["keep"]
    try:
        project = Path(launch.script_folder(plan))
        placed = beside_entry(result.modules)
        # a path built from `__file__` above a module's folder names the original's place (ddpify.output.file_paths)
        modules = {rel: anchored(module.output, Path(module.read_from) if module.read_from else project / rel,
                                 workspace.path / rel)[0] for rel, module in placed.items()}
        inits = init_files_where_read(project,  # so that they are the ones imported
                                      {rel: module.read_from for rel, module in placed.items()})
        modules |= {rel: code for rel, (_, code) in inits.items()}
        modules |= {rel: data for rel, (_, data) in files_read_beside(project, placed, inits).items()}
        # what the script reads beside its own file (its `__file__`'s paths, hydra's configuration)
        modules |= {rel: data for rel, (_, data) in files_read_beside(project, {plan.script.name: result}, {}).items()}
        if result.changed or script is not None or modules:
            # a project's changed modules too, at their paths beside the script (ddpify.output.packages):
            # the run's folder comes first on sys.path, the script's own folder (its unchanged modules)
            # after it, and the folders its modules were imported from at the end of PYTHONPATH
            name_in_run = launch.script_name(plan.script)
            entry = result.output if script is not None else \
                anchored(result.output, Path(plan.script), workspace.path / name_in_run)[0]
            files = {name_in_run: entry, **modules}
            target = _private(workspace.add, files)[0]
            linked = _link_folders(workspace.path, folders_built_beside(project, {**placed, name_in_run: result}, inits,
                                                                        result.modules))
            click.echo(f"{name}: converted -> {target}" + "".join(f", {rel}" for rel in modules)
                       + "".join(f", {rel}/ (linked to {original}/: a converted module builds paths into it "
                                 "through its __file__)" for rel, original in linked.items()), err=True)
        else:  # left alone (already distributed): run it as it is
            target = plan.script
            click.echo(f"ddpify run: launching {name} as it is", err=True)
        capture = launch.captures_output(plan, options["verbose"])
        log_dir = Path(plan.given(launch.LOG_DIR) or workspace.path / "logs")
        env = launch.job_env(plan, nproc, workspace=workspace.path, folders=original_folders(project, result.modules))
        env.setdefault("DDPIFY_VERIFY_JSON", str(workspace.path / "self-check.json"))  # repeated at the end
        findings = Path(env["DDPIFY_VERIFY_JSON"])
        command = guard(launch.torchrun_command, plan, target, log_dir, capture, env)
        if options["dry_run"]:
            _dry_run(command, env, workspace.path)
            workspace.keep()
            return 0
        count = launch.local_processes(nproc, env)
        _say(f"ddpify run: starting {count} process{'es' if count > 1 else ''} with torchrun; each imports torch "
             "before its first line (a few seconds)")
        frames = _frames(plan, target, result, script)
        relay = joblog.Relay(log_dir, frames.bytes) if capture else None
        if relay is not None:
            relay.start()
        finished = launch.run_job(command, env, workspace.path / "torchrun.log" if capture else None,
                                  on_signal=relay.mute if relay is not None else None)
        if relay is not None:
            relay.finish(failed=finished.code != 0)
    except BaseException:
        workspace.remove()
        raise
    kept = f"kept {workspace.path} (the converted script: {target})"
    if finished.signal:
        stalled = relay is not None and relay.stalled  # stopped while quiet: its logs say where it was
        if not keep and not stalled:
            workspace.remove()
        _say(f"ddpify run: stopped by {signal.Signals(finished.signal).name}; torchrun and its processes "
             f"have ended" + (f"; {kept}" if keep else f"; kept its logs: {log_dir}" if stalled else ""))
    elif finished.code == 0:
        for line in joblog.self_check_lines(findings, frames):
            _say(line)
        if keep:
            _say(kept)
        else:
            workspace.remove()
    else:
        kept_parts = [f"the converted script {target}" if target != plan.script else "",  # none: run as it is
                      f"every process's output under {log_dir}" if capture else ""]
        where = "Kept: " + ", ".join(filter(None, kept_parts)) if any(kept_parts) else ""
        if capture:
            hang = joblog.hang_report(log_dir, relay.earlier)
            if hang:
                lines = joblog.hang_summary(hang, finished.code, where, frames)
            else:
                failure = joblog.first_failure(log_dir, workspace.path / "torchrun.log", relay.earlier)
                lines = joblog.summary(failure, finished.code, where, _locator(target, name, script, result.code),
                                       frames)
        else:
            lines = [f"ddpify run: the job failed (exit {finished.code})." + (f" {where}" if where else "")]
        for line in [*lines[:-1], *joblog.self_check_lines(findings, frames), lines[-1]]:
            _say(line)
    if workspace.path.exists():
        workspace.keep()
    return finished.code


def _new_workspace():
    """This run's folder, made after removing those of earlier runs that were killed (SIGKILL
    leaves them: ddpify cannot clean up), one line naming them."""
    from ddpify.run import launch

    stale = launch.remove_stale()
    if stale:
        click.echo(f"ddpify run: removed {len(stale)} run folder(s) of earlier runs that were killed: "
                   f"{', '.join(map(str, stale))}", err=True)
    return _private(launch.Workspace)


def _dry_run(command: list[str], env: dict[str, str], folder: Path) -> None:
    """`--dry-run`: the command, the variables it sets or changes, the folder; stdout."""
    import shlex

    changed = {k: v for k, v in env.items() if os.environ.get(k) != v}
    click.echo("# the run's folder (kept): " + str(folder))
    click.echo(" ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(changed.items())) + " \\")
    click.echo("  " + shlex.join(command))


def _link_folders(folder: Path, built: dict[str, tuple[Path, int]]) -> dict[str, Path]:
    """Link each folder a converted module builds paths into through its `__file__` (its saves:
    ddpify.output.packages `folders_built_beside`) to the original's, from the run's private
    folder (removed after the run), where the single-process program reads and writes it."""
    linked = {rel: original for rel, (original, _) in built.items()}
    for rel, original in linked.items():
        _private(lambda rel=rel, original=original: folder.joinpath(rel).symlink_to(original, target_is_directory=True))
    return linked


def _private(make, *args):
    """`make(*args)`, which writes the run's private folder under $TMPDIR; where that cannot be
    written (a full disk, no permission) one line and exit 2 (the caller removes the folder)."""
    try:
        return make(*args)
    except OSError as exc:
        import tempfile

        fail(EXIT_INPUT, f"ddpify run: cannot write the run's folder in {tempfile.gettempdir()}: "
                         f"{exc.strerror or exc}: free space there, or set TMPDIR to another folder")


def _frames(plan: Plan, target: Path, result: Result, script: Script | None):
    """Traceback frames of the converted copies in the run's folder, named as the user's files
    and lines (a notebook's frames are located by cell instead: `_locator`)."""
    from ddpify.output.packages import beside_entry
    from ddpify.run.frames import Frames

    copies = {}
    folder = Path(os.path.realpath(plan.script)).parent
    if script is None and target != plan.script:
        copies[str(target)] = (os.path.abspath(plan.script), result.source.decode(result.encoding, "replace"),
                               result.code)
    for rel, module in beside_entry(result.modules).items():
        original = os.path.abspath(module.read_from) if module.read_from is not None else str(folder / rel)
        copies[str(target.parent / rel)] = (original, module.source.decode(module.encoding, "replace"), module.code)
    return Frames(copies)


def _locator(target: Path, name: str, script: Script | None, converted: str):
    """`locate(file, line)` for the failure summary: a notebook's cell and line for a frame in
    its converted script."""
    def locate(file: str, line: int) -> str | None:
        if script is None or os.path.abspath(file) != os.path.abspath(target):
            return None
        cell, at = script.locate_converted(converted, line)
        return f"{name}: cell {cell}, line {at}"
    return locate


def _file_warning(name: str, code: str, script: Script | None) -> str | None:
    """A warning when the script reads `__file__`: it names the converted copy in the run's
    folder, so paths built from it point there, not next to the script."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    line = next((n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "__file__"), None)
    if line is None:
        return None
    where = f"{name}:{line}" if script is None else "{}:cell {}:{}".format(name, *script.locate(line))
    return (f"{where}: warning: [run] __file__ names the converted copy in the run's own folder, so paths "
            "built from it point there, not next to the script: to keep them, convert with `ddpify convert "
            "-o` into the script's folder and launch that with torchrun")


def _say(line: str) -> None:
    try:
        click.echo(line, err=True)
    except OSError:  # the terminal is gone (SIGHUP)
        pass
