"""main-process-only: write files once, from the main process.

    torch.save(model.state_dict(), "model.pt")
    with open("log.csv", "a") as f:
        f.write(row)
    for x, y in tqdm(train_loader):
->
    if is_main_process():
        with atomic_write("model.pt") as tmp_path:
            torch.save(model.state_dict(), tmp_path)
        with open("log.csv", "a") as f:
            f.write(row)
    for x, y in tqdm(train_loader, disable=not is_main_process()):

A progress bar whose count the program reads (`while pbar.n < total_steps:`, also in a function the
bar is handed to) is not disabled on the other processes, where a disabled bar counts nothing
(`pbar.n` stays 0): it is written into their silenced standard output instead, `tqdm(total=n,
file=bar_file())`, and counts on every process.

A `torch.save` to a path it guards (also inside a helper that only writes) goes through
`atomic_write`: the file is written next to its target, synced, and renamed over it, so a kill
during the save (preemption, an OOM kill, a restart) leaves the previous checkpoint whole
instead of a truncated one. The script's own `torch.save` call stays as it was, but for its path.

Guarded: the file writes `ddpify.analysis.writes` lists (the ones `ddpify check` looks for:
`torch.save`, `torch.jit.save`, a scripted model's `.save(path)`, `save_pretrained`,
json/pickle/numpy dumps, `shutil` copies, `savefig`, `save_image`, `to_csv`), files opened for
writing, wandb calls and `SummaryWriter` logging (the writer is None elsewhere), and removing or
renaming files and folders (`shutil.rmtree`, `os.remove`, `os.rename`, `os.replace`, ...), which
would race the main process's writes (`if os.path.exists(d): shutil.rmtree(d)` then
`os.makedirs(d)`: a slower process deletes the folder the main process has just filled), and
links made or removed (`os.symlink`, pathlib's `latest.unlink()` and `latest.symlink_to(name)`: a
'latest' checkpoint link replaced on every process, one unlinking the link another has just made).
A helper that ends by returning what a file write returns (`return imageio.imwrite(path, img)`)
has that statement guarded: the other processes return None. A helper that only writes
(`save_checkpoint(...)`, a method of an item of a list or dict of the program's instances,
`self.agents[i].save(path)` or `for agent in self.agents: agent.save(path)`) is guarded where it
is called, and an `if`
whose body only writes takes the condition (`if args.save_model and is_main_process():`), one
written on one line too (`if args.save_model and is_main_process(): policy.save(path)`).
A function that sets an attribute (`__init__` building `self.writer`) is not such a helper: other
code reads that state. A logger (a SummaryWriter, TensorFlow's summary writer, a wandb run, a ClearML
task (`Task.init`, also of `trains`), an
instance of a logger class of the program such as `Logger(log_dir)` whose `__init__` makes a
writer, a file opened for writing that is only written, printed into and closed, here or by
a function it is handed to, or by a `csv.writer` over it that only writes rows) exists on the main process
only, None elsewhere (each item of a list, dict or comprehension built of loggers:
`[SummaryWriter(d) if is_main_process() else None for d in dirs]`); its method calls are guarded, and a read of its attribute outside a guard
takes the main process's value on every process: `run_dir = self.writer.log_dir` becomes
`run_dir = from_main_process(lambda: self.writer.log_dir)` (a broadcast; where some processes
may not reach the read, a TODO instead).
`os.makedirs(..., exist_ok=True)` stays on every process (harmless; so does `if not
os.path.exists(d): os.makedirs(d)`, given `exist_ok=True`; any other `os.makedirs` is
guarded, `exist_ok=False` included (or a name set to a test: `exist_ok = run_id == ''`), and so is
pathlib's `out_dir.mkdir(parents=True)` (its `exist_ok` False unless given), as the processes would race to create the folder and the
slower one fail (`try: os.makedirs(out, exist_ok=False)` / `except FileExistsError: sys.exit(...)`); a folder whose name every process
chose by probing for a free one, `while os.path.exists(base_dir): run += 1`, is made after a
`barrier()`, once all have probed; so is one made in a branch of an `if`/`else` that asks
whether it exists, `if os.path.isdir(d): input(...)` / `else: os.makedirs(d)`, so that every
process takes the branch the main process takes, and one, or a logger's, that every process first
insists does not exist yet, `assert not os.path.exists(run_dir)` before `SummaryWriter(run_dir)`),
as do forward passes: a model call under a
rank guard would deadlock DDP, so one inside a guarded write goes through `.module`. When a
later read in the same function (`torch.load`, `pickle.load`, `json.load`, `np.load`, `open(path)`,
...) may read what was written, or a read that runs after a call of the writing function (below
the call in its caller, or in the caller's caller, or above it in a loop around both: `save()`
then `restore()`; not any read of the program, such as a data set's `Image.open`), a `barrier()`
follows the write, whatever wrote it (where the write and the read sit in an `if` whose test may
differ between processes, `if epoch % k == 0 or time.time() - last >= every:`, the test is agreed,
`agree_on(...)`, and the barrier follows the write inside it: after the `if` is too late for the
read, and a barrier inside an `if` that some processes skip waits for them). A barrier is never
placed in a function that some processes may not call (a checkpoint helper called under such a test,
three callers up): the save gets a warning that names the read that may race it instead. After a picture
(`plt.savefig`, `save_image`) only where a picture reader (`Image.open`, `plt.imread`) or a file
opened in binary may read it (a data set's own reads are of its samples). A read whose path ends
in another name than every file the save writes reads another file, whatever the folders, and
waits for nothing (a log appended to `os.path.join(ckpt, 'log.txt')`, then a corpus opened at
`os.path.join(data, 'train.txt')`; followed through names and every call's argument for a
parameter; `ddpify.analysis.writes.other_files`).
A temporary file that one function writes, reads back and removes under a name of its own, bound
once at its top to text, and read nowhere else (a copy of an object through the disk), stays on
every process, each under a name of its own:

    filename = f'{get_timestamp()}.tmp'
    torch.save(obj, filename)
->
    filename = f'{get_timestamp()}.tmp'
    filename = f"{filename}.{get_rank()}"
    torch.save(obj, filename)
A file opened for writing whose handle the program keeps and uses for more than writing it (a
stdout tee that points `sys.stdout` at itself and tells its position, a handle handed to a
`csv.writer` or read for its `.name`), or opened with a mode its call leaves to starred arguments,
is opened on every process, the file on the main process only (`open_on_main`: `os.devnull`
elsewhere, where the mode the runtime reads writes):

    class Tee:
        def __init__(self, *args, **kwargs):
            self.file = open(*args, **kwargs)
->
    class Tee:
        def __init__(self, *args, **kwargs):
            self.file = open_on_main(*args, **kwargs)

`print` needs nothing: the runtime silences it off the main process. A logging handler that
opens a file is made on the main process only, a `NullHandler` elsewhere:

    file_handler = logging.FileHandler(log_file_name)
->
    file_handler = logging.FileHandler(log_file_name) if is_main_process() else NullHandler()

and `logging.basicConfig`'s file (the root logger's handler, which it opens) likewise, `os.devnull`
elsewhere, so that every process keeps the level and format it sets (`from os import devnull`):

    logging.basicConfig(filename="train.log", level=logging.INFO)
->
    logging.basicConfig(filename="train.log" if is_main_process() else devnull, level=logging.INFO)

A logging configuration's dict (pytorch-template's `logger_config.json`) keeps its file handlers
on the main process; elsewhere they are `NullHandler`s with the same level and formatter:

    logging.config.dictConfig(config)
->
    logging.config.dictConfig(log_config_on_main(config))

and so does a logging configuration file's (an INI file, read elsewhere with the same `defaults`):

    logging.config.fileConfig("logging.conf", defaults={"logdir": out})
->
    logging.config.fileConfig(log_config_on_main("logging.conf", {"logdir": out}), defaults={"logdir": out})

With `--strategy fsdp` a forward and a full state dict are collectives (FSDP2 all-gathers the
shards), so they run on every process, before the guard, and only the write is guarded:

    torch.save(model.state_dict(), "model.pt")
    save_image(netG(fixed_noise), "sample.png")
->
    model_state = full_state_dict(model)
    netG_output = netG(fixed_noise)
    if is_main_process():
        with atomic_write("model.pt") as tmp_path:
            torch.save(model_state, tmp_path)
        save_image(netG_output, "sample.png")

They go before the run of writes they belong to, which stays one guarded block. An `if` whose
body writes such a checkpoint keeps its condition and guards the write inside it;
a helper that gathers or runs the model is not guarded at its call but inside, statement by
statement. A collective that reads a name the write itself binds (`with open(...) as f:`) gets a
TODO.

A shell command that writes files (`subprocess.run(["cp", src, dst])`, `os.system(f"tar xf {a}")`,
ddpify.analysis.shell) is named with a warning where every process runs it, not guarded: what it
writes, and whether the other processes read it at once, is in a string ddpify does not read. A
lone `mkdir` is read (`shell_folder`): `os.system('mkdir {0}'.format(opt.outf))` is guarded as
`os.makedirs(opt.outf)` is (`if is_main_process():` around it), and `os.system(f"mkdir -p {d}")`
stays on every process, as `os.makedirs(d, exist_ok=True)` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AbstractSet, Callable, Iterator, NamedTuple

import libcst as cst

from ddpify.output import build
from ddpify.analysis import fsdp, objects, writes
from ddpify.analysis.shell import shell_folder, shell_write
from ddpify.analysis.writes import lock_around, made_where_missing, preparing, tolerates_existing
from ddpify.syntax import matchers as mt
from ddpify.analysis.models import WRAPPER, holds_wrapper
from ddpify.analysis.same_values import is_rank_test, per_process, ranks, same_everywhere
from ddpify.rewrites.set_epoch import NAME as SET_EPOCH
from ddpify.rewrites.wrap_model import wrapped_refs
from ddpify.syntax.facts import param_names
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.output.edits import Edits
    from ddpify.analysis.loaders import EpochLoop
    from ddpify.analysis.models import Model, Models
    from ddpify.syntax.facts import Facts, Given, Ref
    from ddpify.options import Options

NAME = "main-process-only"
SUMMARY = "run file writes (checkpoints, logs, wandb, TensorBoard) and progress bars on the main process only"

GUARD = "is_main_process()"
# once only, though not a file write (`ddpify.analysis.writes` says what is)
ONCE = {"wandb.init", "wandb.log", "wandb.save", "wandb.finish", "wandb.watch",
        # removing or renaming files and folders: every process would race the main process's
        # writes there (one deletes the folder another has just made and written into)
        "shutil.rmtree", "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.replace"}
# MLflow's tracking calls (the module's own active run): each process would start a run of its own
# and log every metric again into it (the twenty-first sweep's WGAN-GP, whose logger class calls them)
TRACKERS = frozenset(f"mlflow.{name}" for name in (
    "start_run", "end_run", "log_metric", "log_metrics", "log_param", "log_params", "log_artifact", "log_artifacts",
    "log_dict", "log_figure", "log_image", "log_text", "log_table", "set_tag", "set_tags", "set_experiment",
    "autolog", "pytorch.log_model", "pytorch.autolog"))
ONCE |= TRACKERS
# tensorboard_logger's module-level writer (`configure(logdir)` opens its event file, `log_value` writes
# to it): each process would write its own event file into the same folder, as a Logger of its own does
# (deep mutual learning's trainer, round 31)
ONCE |= {f"tensorboard_logger.{name}" for name in ("configure", "log_value", "log_histogram", "log_images")}
DELETIONS = writes.DELETIONS  # nothing to read back
# links made or removed: `os.symlink(src, dst)`, and pathlib's methods of these names, found on no
# other common object (`latest.unlink()`, `latest.symlink_to(ckpt.name)`: a 'latest' checkpoint
# link replaced on every process, one process unlinking the link another has just made)
LINKS = frozenset(writes.LINKS)
PATH_METHODS = writes.LINK_METHODS | {"unlink"}
# a ClearML task (`trains` its former name) logs to its server like a wandb run: one, from the main process
LOGGERS = {"wandb.init", "clearml.Task.init", "trains.Task.init", "mlflow.start_run"}  # and what `objects` calls a writer
# (SummaryWriter, a logger class of the program)
FILE_METHODS = {"write", "writelines", "flush", "close"}
CSV_WRITERS = {"csv.writer", "csv.DictWriter"}
ROW_METHODS = {"writerow", "writerows", "writeheader"}
EARLY_READ = "this save runs on the main process only and `{read}` reads the file back before any barrier every " \
    "process reaches: another process may read it before it is written, or an older one; both lie in {why}; save " \
    "and read it outside that statement, with a barrier() between them"
AGREED = "condition agreed across processes (agree_on): the file saved in it is read back in it, after a barrier " \
    "that every process must reach"
UNWAITED_LOGGER = ("no barrier after this save, which is read back later: `{func}` makes a logger that runs on the "
                   "main process only, and a barrier in it would wait for processes that never come; a reader on "
                   "another process may read the file before the main process has written it")
UNWAITED = "no barrier after this save, which is read back later: `{func}` is called where some processes may " \
    "not call it (a test that may differ between them), and a barrier in it would wait for them; a reader on " \
    "another process may read the file before the main process has written it"
FOLDER_MAKERS = ("os.mkdir", "os.makedirs", "Path.mkdir", "mkdir")  # mkdir: a shell's (`shell_folder`)
LOG_FILE_HANDLERS = frozenset({"logging.FileHandler", "logging.handlers.RotatingFileHandler",
                               "logging.handlers.TimedRotatingFileHandler", "logging.handlers.WatchedFileHandler"})


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:  # noqa: C901 (18: to split)
    facts, models, refs = analysis.facts, analysis.models, wrapped_refs(analysis, options)
    opened = _opened_for_writing(facts)
    loggers = _loggers(facts, opened)
    prepared = preparing(facts)  # a data set's own files: built on each node's first process first
    writes = {stmt: what for stmt in _statements(facts) if facts.scope(stmt) not in prepared
              and (what := _writes(facts, stmt, loggers, opened))}
    writers = _writer_functions(facts, models, refs, writes, options)
    makers = {f for f in writers if all(what in FOLDER_MAKERS for s, what in writes.items() if facts.scope(s) is f)}
    folders: set[cst.CSTNode] = set()  # calls of a helper that only makes folders (`mkdir(args.log_root)`)
    for call in facts.calls:  # a helper that only writes files is guarded where it is called
        stmt = facts.statement(call)
        callees = facts.user_functions(call)
        if facts.scope(stmt) not in prepared and (isinstance(stmt, cst.SimpleStatementLine) or _one_line_if(stmt)) and \
                _writes_only(callees, writers):
            writes[stmt] = f"{dotted(call.func) or facts.code(call.func)}()"
            if all(f in makers for f in callees):
                folders.add(stmt)
    for stmt in _own_round_trips(facts, edits, writes):  # a temporary file each process writes, reads and removes
        writes.pop(stmt, None)
    _name_untold_items(facts, edits, writers)
    _name_shell_writes(facts, edits, writes, prepared)
    saves, guarded, files, owners = [], [], [], []
    tests: list[tuple[cst.If, Callable[[cst.BaseExpression], cst.BaseExpression], str]] = []
    for stmt, what in list(writes.items()):
        if facts.scope(stmt) in writers or _already_guarded(facts, stmt, writes):
            if any(facts.is_inside(stmt, owner) for owner in owners):
                files.append(stmt)  # a second save in the `if` whose test this extends: written atomically too
            continue
        needed = _bound_and_used_later(facts, stmt)
        kept = _state_set_in(facts, stmt) if needed else []
        if needed and (not kept or _bound_and_used_later(facts, stmt, skip=kept)):
            edits.todo(stmt, f"every process writes this file, because the block also sets `{needed}`, used "
                       "below: compute that outside the block and guard the write with is_main_process()")
            continue
        for line in kept:  # `self.headers_written = True` in the header's `with open(...)`: set on every process
            edits.replace(line, lambda node: cst.RemoveFromParent())
        if kept:
            edits.insert_after(stmt, *kept)
            edits.record(kept[0], f"`{facts.code(kept[0].body[0])}` set on every process after the write "
                                  "(it reads nothing the write makes), the write on the main process only")
        files.append(stmt)  # `torch.save(state, path)` among them is written atomically
        owner = stmt if _one_line_if(stmt) else None if kept else _sole_body_of_if(facts, stmt, writes)
        if owner is not None and options.fsdp and _collectives(facts, models, refs, owner):
            owner = None  # the gathers stay on every process: the write is guarded inside the `if`
        returns = isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return)
        if not what.startswith(("wandb.", "mlflow.")) and what not in DELETIONS and not what.endswith(".unlink") \
                and not _logs(facts, stmt, loggers) and not returns:
            saves.append(owner or stmt)  # every process waits there when the file is read back below
            # (not after a guarded `return <write>`: the main process leaves there, the others would wait)
        if owner is not None:  # `if args.save_model: torch.save(...)` -> `if args.save_model and ...:`
            reads_logger = any(_on_logger(facts, a.value, loggers) for a in facts.findall(owner.test, cst.Attribute))
            tests.append((owner, _main_and if reads_logger else _and_main, f"{what} runs on the main process only"))
            writes[owner] = what
            owners.append(owner)
            if not options.fsdp:  # its body runs on one process now (its test still on every one)
                _forward_through_module(facts, refs, edits, owner.body)
            continue
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(assign, (cst.Assign, cst.AnnAssign)) and _is_logger(facts, assign.value, opened):
            made = "file opened for writing" if assign.value in opened else f"{what} created"
            stream = _standard_stream(assign)
            edits.replace(assign.value, lambda node, stream=stream: cst.IfExp(
                test=cst.parse_expression(GUARD), body=node, orelse=cst.parse_expression(stream or "None")),
                f"{made} on the main process only ({'the console stream kept' if stream else 'None'} elsewhere)")
            _barrier_before_made(facts, edits, stmt, mt.keyword(assign.value, "log_dir") or
                                 mt.keyword(assign.value, "logdir") or mt.positional(assign.value, 0))
        else:
            edits.guard(stmt, GUARD, f"{what} runs on the main process only")
            guarded.append(stmt)
            if what in FOLDER_MAKERS:
                call = next(iter(facts.calls_in(stmt)), None)
                made = mt.positional(call, 0) if what != "Path.mkdir" or call is None else \
                    cst.Arg(cst.ensure_type(call.func, cst.Attribute).value)
                if what == "mkdir" and call is not None:
                    folder = (shell_folder(facts, call) or (True, None))[1]
                    made = cst.Arg(folder) if folder is not None else None
                _barrier_before_made(facts, edits, stmt, made)
            else:
                _barrier_before_asked(facts, edits, stmt)
        if not options.fsdp:
            _forward_through_module(facts, refs, edits, stmt)
    for owner, guard, message in tests:  # an `if` inside another so guarded needs no guard of its own (the
        # outer `if`'s body, the inner `if` among its writes: `if not isdir(d) and is_main_process(): if not
        # isdir(parent): os.mkdir(parent)`, 25b's DCGAN; decision 0206)
        if not any(other is not owner and facts.is_inside(owner, other) for other in owners):
            edits.replace(owner.test, guard, message)
    taken: dict = {}
    for stmt in guarded if options.fsdp else ():
        _hoist_collectives(facts, models, refs, edits, stmt, guarded, taken)
    for stmt in [*files, *(s for s in writes if facts.scope(s) in writers)]:
        _write_atomically(facts, edits, stmt)
    inside: dict = {}  # (what each function's own calls read, asked once per function)
    readers = [c for c in facts.calls if _reads(facts, c, inside=inside)] if saves else []
    main_only = {*guarded, *owners}  # a barrier inside them would wait for processes that never come
    for stmt in guarded:
        if writes.get(stmt) not in FOLDER_MAKERS:
            _barrier_before_probed(facts, edits, stmt, main_only)
    reading = {stmt: _may_read_back(facts, stmt, readers) for stmt in saves}
    points = {stmt: _reached_by_all(facts, stmt, main_only) for stmt in saves
              if _read_back_later(facts, stmt, reading[stmt])}
    for stmt, point in points.items():
        if _called_by_all(facts, facts.scope(point), main_only) and \
                (tests := _agreeable_tests(facts, stmt, point, reading[stmt])):
            points[stmt] = stmt  # the tests agreed, every process reaches the save: the barrier goes right after it
            for test in tests:
                edits.replace(test, lambda node: build.call("agree_on", node), AGREED)
            edits.add_import("ddpify_runtime", "agree_on")
    placed: set[cst.CSTNode] = set()
    for stmt, point in points.items():
        if point is not stmt and (early := _read_before_the_point(facts, stmt, point, reading[stmt])) is not None:
            lock = lock_around(facts, stmt)
            edits.warn(stmt, EARLY_READ.format(read=facts.code(early), why=(
                "an inter-process lock: a barrier inside it would wait there for processes that wait for the lock"
                if lock is not None and facts.is_inside(early, lock) else
                "a statement some processes may leave early (a `try`, a `with`, an `if` whose test may differ): a "
                "barrier inside it could wait for processes that never come")))
        if _barrier_follows(facts, point, set(points.values()) - {point},
                            analysis.loaders.epoch_loops if options.runs(SET_EPOCH) else []):
            continue
        if _guarded_where_called(facts, scope := facts.scope(point), main_only):
            continue  # every call of the helper is guarded itself: the barrier goes after that call, for every process
        if isinstance(scope, cst.FunctionDef) and any(
                _made_on_main_only(facts, facts.statement(call)) for call in facts.call_sites(scope)):
            edits.warn(stmt, UNWAITED_LOGGER.format(func=scope.name.value))
            continue
        if not _called_by_all(facts, scope, main_only) and isinstance(scope, cst.FunctionDef):
            edits.warn(stmt, UNWAITED.format(func=scope.name.value))
            continue
        if point not in placed:  # several saves that every process reaches at one point: one barrier there
            placed.add(point)
            edits.insert_after(point, "barrier()\n")
            edits.add_import("ddpify_runtime", "barrier")
        made = _saved(stmt)
        folder = all(writes.get(s) in FOLDER_MAKERS or s in folders for s in made)
        edits.record(stmt, "barrier() after it: the folder is used below" if folder else
                     "barrier() after the save: the file is read back below")
    for _, value, stmt in facts.assigns:
        for made in _logger_elements(facts, value, opened):
            edits.replace(made, lambda node: cst.IfExp(test=cst.parse_expression(GUARD), body=node, orelse=cst.Name("None")),
                          f"{dotted(made.func) or facts.code(made.func)} created on the main process only (None elsewhere)")
    _reads_of_main_only(facts, edits, loggers, writes)
    _kept_handles(facts, edits, opened, writes, prepared)
    _runs_opened_by_with(facts, edits)
    for call in facts.calls_to("os.makedirs"):
        if not tolerates_existing(facts, call) and made_where_missing(facts, call):
            edits.replace(call, lambda node, spread=facts.keyword_given(call, "exist_ok").spread: _exist_ok(
                node, spread), "every process makes the folder if it is missing (exist_ok=True): "
                          "no race, and no barrier that some callers may not reach")
    bars, combined = [], set()
    for call in facts.calls_to("tqdm.tqdm", "tqdm.trange"):
        disable, file = facts.keyword_given(call, "disable"), facts.keyword_given(call, "file")
        if not file.values and _counts_read(facts, call):
            edits.replace(call, lambda node, spread=file.spread: build.add_keyword(node, "file", "bar_file()", spread),
                          "progress bar shown on the main process only; the others draw it into their silenced "
                          "standard output (bar_file()), so that it still counts: the program reads what it has "
                          "counted, and a disabled bar counts nothing")
            edits.add_import("ddpify_runtime", "bar_file")
            bars.append(call)
            continue
        if not _disable_bar(facts, edits, call, disable, combined):
            continue
        bars.append(call)
        writes[call] = "tqdm"
        for stmt in _drawing_on_bar(facts, call):
            if not _already_guarded(facts, stmt, writes):
                edits.guard(stmt, GUARD, "a disabled progress bar has no display: drawn on the main process only")
    if _log_file_handlers(facts, edits) or files or bars:  # not for writes the user's code guards already
        edits.add_import("ddpify_runtime", "is_main_process")


def _log_file_handlers(facts: Facts, edits: Edits) -> bool:
    """`logging.FileHandler(path)` (and the rotating ones) opens its file where it is made:
    made on the main process only, a `NullHandler` elsewhere, which takes the same calls
    (`setFormatter`, `addHandler`) and writes nothing; `logging.basicConfig(filename=...)`'s file
    likewise (`_basic_config_file`); `logging.config.dictConfig(config)`'s and
    `logging.config.fileConfig(path, defaults)`'s handlers that write a file are NullHandlers off
    the main process (`log_config_on_main`, given the file's `defaults` and `encoding` too, with
    which it reads the file there). True if a guard is imported for any of them."""
    found = configured = False
    for call in facts.calls_to("logging.basicConfig", "logging.config.dictConfig", "logging.config.fileConfig",
                               *LOG_FILE_HANDLERS):
        made = facts.qualify(call.func)
        if made == "logging.basicConfig" and not _already_guarded(facts, call, {}):
            configured = _basic_config_file(call, edits) or configured
        if made in ("logging.config.dictConfig", "logging.config.fileConfig") and call.args and \
                not call.args[0].star and not _already_guarded(facts, call, {}):
            defaults, encoding = mt.keyword(call, "defaults") or mt.positional(call, 1), mt.keyword(call, "encoding")
            given = [*([cst.Arg(defaults.value)] if defaults is not None else []),
                     *([encoding.with_changes(comma=cst.MaybeSentinel.DEFAULT)] if encoding is not None else [])] \
                if made == "logging.config.fileConfig" else []
            edits.replace(call.args[0].value,
                          lambda node, given=given: cst.Call(cst.Name("log_config_on_main"), [cst.Arg(node), *given]),
                          "the configuration's log files opened on the main process only (NullHandlers elsewhere)")
            edits.add_import("ddpify_runtime", "log_config_on_main")
        if made in LOG_FILE_HANDLERS and not _already_guarded(facts, call, {}):
            parent = facts.parent(call)
            enclose = isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is call
            edits.replace(call, lambda node, enclose=enclose: _main_or_null(node, enclose),
                          f"{made.rpartition('.')[2]} opened on the main process only (a NullHandler elsewhere)")
            found = True
    if found:
        edits.add_import("logging", "NullHandler")
    return found or configured


def _basic_config_file(call: cst.Call, edits: Edits) -> bool:
    """`logging.basicConfig(filename=path, ...)`: the file opened on the main process only,
    `os.devnull` elsewhere (the level and format stay every process's). True if it named one."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "filename":
            edits.replace(arg.value, _main_or_devnull, "logging.basicConfig's file opened on the main process only "
                                                       "(os.devnull elsewhere)")
            edits.add_import("os", "devnull")
            return True
    return False


def _main_or_devnull(value: cst.BaseExpression) -> cst.IfExp:
    if isinstance(value, (cst.IfExp, cst.Lambda)):
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.IfExp(test=cst.parse_expression(GUARD), body=value, orelse=cst.Name("devnull"))


def _main_or_null(call: cst.Call, enclose: bool) -> cst.IfExp:
    parens = {"lpar": [cst.LeftParen()], "rpar": [cst.RightParen()]} if enclose else {}
    return cst.IfExp(test=cst.parse_expression(GUARD), body=call, orelse=cst.parse_expression("NullHandler()"),
                     **parens)


def _statements(facts: Facts) -> Iterator[cst.With | cst.SimpleStatementLine | cst.If]:
    seen = set()
    for call in facts.calls:
        stmt = facts.statement(call)
        if (isinstance(stmt, (cst.With, cst.SimpleStatementLine)) or _one_line_if(stmt)) and stmt not in seen:
            seen.add(stmt)
            yield stmt


def _saved(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """The writes a barrier after `stmt` follows, as `writes` lists them: the statements of the `if`
    holding saves (its test extended by the guard), else `stmt`, a save or a one-line `if cond:
    os.mkdir(d)`, which is itself the write (`_statements`). The one-line `if`'s expression was
    taken for its write before: found in no write, its barrier was recorded as "after the save:
    the file is read back below" where the folder it makes is what is used below."""
    if isinstance(stmt, cst.If) and not _one_line_if(stmt):
        return list(stmt.body.body)
    return [stmt]


def _one_line_if(stmt: cst.CSTNode) -> cst.Expr | None:
    """The one expression of `if cond: save(...)` written on one line (no `else`): such an `if`
    is the write, guarded by its own condition (`if cond and is_main_process(): save(...)`)."""
    if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.SimpleStatementSuite) \
            and len(stmt.body.body) == 1 and isinstance(stmt.body.body[0], cst.Expr):
        return stmt.body.body[0]
    return None


def _writes(facts: Facts, stmt: cst.With | cst.SimpleStatementLine | cst.If, loggers: Loggers,
            opened: frozenset[cst.Call]) -> str | None:
    """What file-writing call `stmt` makes, or None."""
    if isinstance(stmt, cst.With):  # `open(p, "w")`, `gzip.open(p, "wt")`, `zipfile.ZipFile(p, "w")`, ...
        for item in stmt.items:
            if mt.opens_for_writing(item.item) and not writes.in_memory(facts, _opened_path(item.item)):
                return "writing the file"
        return None
    small = _one_line_if(stmt) or (stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                                   else None)
    if small is None:
        return None
    # `return scipy.misc.imsave(path, image)` ending a helper: guarded, the others return None
    ends = isinstance(small, cst.Return) and isinstance(scope := facts.scope(stmt), cst.FunctionDef) \
        and isinstance(scope.body, cst.IndentedBlock) and scope.body.body[-1] is stmt
    call = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) or ends else None
    if isinstance(small, cst.Expr) and isinstance(call, cst.Tuple) and len(call.elements) == 1:
        call = call.elements[0].value  # `torch.save(state, path),`: a stray comma makes a tuple of the call
    if not isinstance(call, cst.Call):
        return None
    if ends and (writes.file_write(facts, call) is None or _is_logger(facts, call, opened)):
        return None  # (a helper's `return SummaryWriter(d)`: its callers hold the writer)
    qualified = facts.qualify(call.func)
    if (folder := _raced_folder(facts, call)) is not None:
        return folder
    if qualified in ONCE or qualified in LINKS or _is_logger(facts, call, opened):
        return dotted(call.func) or qualified  # (`importlib.import_module(m).SummaryWriter(d)`: no dotted name)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in PATH_METHODS and qualified is None:
        return dotted(call.func) or facts.code(call.func)  # `latest.unlink()`, `(d / "latest").symlink_to(p)`
    if (what := writes.file_write(facts, call)) is not None:
        return dotted(call.func) or what.strip(".()")
    if isinstance(call.func, cst.Attribute) and _on_logger(facts, call.func.value, loggers):
        return dotted(call.func) or facts.code(call.func)  # `self.writer[tag].add_scalar`: no dotted name
    if _prints_to(call) is not None and _on_logger(facts, _prints_to(call), loggers):
        return "print(file=...)"  # print(s, file=None) would write to stdout
    return None


def _raced_folder(facts: Facts, call: cst.Call) -> str | None:
    """The folder maker `call` is where every process would race to make the folder and the slower
    ones fail (`FOLDER_MAKERS`), or None: `writes.raced_folder`, the answer check's DDP006 asks too
    (`os.mkdir(d)`, `os.makedirs(d)` and pathlib's `d.mkdir()` without `exist_ok`; not one in a `try`
    whose handler catches FileExistsError, where the slower process goes on), but for an
    `os.makedirs(d)` made where a test found it missing (`writes.made_where_missing`: every process
    passes it `exist_ok=True` instead, below), and a shell's lone `mkdir` without `-p`
    (`shell_folder`: `os.system('mkdir {0}'.format(d))`, guarded as `os.makedirs(d)` is; check does
    not read shell commands)."""
    if (what := writes.raced_folder(facts, call)) is not None:
        return None if what == "os.makedirs" and made_where_missing(facts, call) else what
    if (shell := shell_folder(facts, call)) is not None and not shell[0]:
        return "mkdir"  # `os.system('mkdir {0}'.format(d))`: as os.makedirs(d)
    return None


PROBES = writes.FOLDER_PROBES


def _exist_ok(node: cst.Call, spread: bool = False) -> cst.Call:
    """`exist_ok=True`, in place of a given one (by keyword or third positional); into the `**`
    mapping the call unpacks where that may pass one too (`build.add_keyword`, `override`):
    `os.makedirs(d, **opts)` -> `os.makedirs(d, **{**opts, "exist_ok": True})`."""
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    given = mt.keyword(node, "exist_ok") or mt.positional(node, 2)  # by keyword or third positional
    kept = [a for a in node.args if a is not given]
    if spread:
        return build.add_keyword(node.with_changes(args=kept), "exist_ok", "True", spread=True, override=True)
    args = [*kept[:-1], kept[-1].with_changes(comma=comma)] if kept else []
    return node.with_changes(args=[*args, cst.Arg(cst.Name("True"), keyword=cst.Name("exist_ok"),
                                                  equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))])


TEXT_PATHS = frozenset({"os.path.join", "str"})  # what makes a path as text (`str(p)`, `os.path.join(d, f)`)


def _own_round_trips(facts: Facts, edits: Edits, written: dict[cst.CSTNode, str]) -> list[cst.CSTNode]:
    """The statements of temporary files each process writes, reads back and removes in one
    function, under a name of the function's own bound once at its top to text (PointNet's
    `clone_object`: `filename = f'{get_timestamp()}.tmp'`, `torch.save(obj, filename)`, `new =
    torch.load(filename)`, `os.remove(filename)`, `return new`): a copy of an object through the
    disk, which no other code reads. They stay on every process, each under a name of its own
    (`filename = f"{filename}.{get_rank()}"` after the binding): guarded, with a barrier between the
    save and the loads, every process loaded the main process's object, and the main process removed
    the file while another still read it or had not yet come to it (a clock-named path: a slower
    process's own name named no file); round 28's PointNet stopped there, and nothing named it
    (decision 0242). Not where the name is read otherwise (returned, handed on, stored), bound more
    than once or not at the top, or where the file is not both read back and removed after its write."""
    found: list[cst.CSTNode] = []
    for target, value, assign in facts.assigns:
        scope, bound = facts.scope(assign), facts.statement(assign)
        if not isinstance(target, cst.Name) or not isinstance(scope, cst.FunctionDef) or not _text(facts, value) \
                or not isinstance(assign, cst.Assign) or bound is None or facts.parent(bound) is not scope.body:
            continue
        ref = facts.ref(target, assign)
        if ref is None or len(facts.writes(ref)) != 1 or ref.name in param_names(scope):
            continue
        saved, read, removed = [], [], []
        for name in facts.names:
            if name.value != ref.name or name is target or facts.scope(name) is not scope:
                continue
            call = facts.parent(facts.parent(name))  # the call whose argument it is
            stmt = facts.statement(name)
            if not isinstance(call, cst.Call) or not isinstance(stmt, cst.SimpleStatementLine) or facts.ref(name) != ref:
                break
            qualified = facts.qualify(call.func) or ""
            if qualified in ("os.remove", "os.unlink") and mt.positional(call, 0) is facts.parent(name):
                removed.append(stmt)
            elif written.get(stmt) and writes.written_path(facts, call) is name:
                saved.append(stmt)
            elif qualified in READERS and writes.read_path(facts, call) is name:
                read.append(stmt)
            else:
                break
        else:
            if saved and read and removed and all(facts.before(w, r) for w in saved for r in read) \
                    and all(facts.before(r, d) for r in read for d in removed):
                edits.insert_after(bound, f'{ref.name} = f"{{{ref.name}}}.{{get_rank()}}"\n')
                edits.add_import("ddpify_runtime", "get_rank")
                edits.record(bound, f"`{ref.name}` names a temporary file this function writes, reads back and "
                             "removes: each process makes its own (its rank added to the name), on every process")
                for stmt in saved:  # (a file every process writes: said where it is written)
                    edits.warn(stmt, f"every process writes its own copy of this temporary file (`{ref.name}`, its "
                               "rank in the name), reads it back and removes it: to write nothing off the main "
                               "process, copy the object in memory instead (copy.deepcopy)")
                found += [*saved, *removed]
    return found


def _text(facts: Facts, value: cst.BaseExpression) -> bool:
    """Is `value` a path written as text: a string (an f-string too), text joined by `+`, or
    `os.path.join(...)`/`str(...)`?"""
    if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _text(facts, value.left) or _text(facts, value.right)
    return isinstance(value, cst.Call) and facts.qualify(value.func) in TEXT_PATHS


def _barrier_before_made(facts: Facts, edits: Edits, stmt: cst.CSTNode, path: cst.Arg | None) -> None:
    """`barrier()` before a folder (or a logger's folder) the main process makes, where every
    process asks the file system about it first: a process that asked after the main process
    made it would choose another name, take another branch, or fail an assertion."""
    if path is None or not isinstance(stmt, cst.SimpleStatementLine):
        return
    if _probed_path(facts, stmt) and _reached_by_all(facts, stmt) is stmt:
        why = "every process has chosen its name by looking for one that does not exist yet"
    elif _branch_of_probe(facts, stmt):
        why = "every process has asked whether it exists, so all take the same branch"
    elif _asked_before(facts, stmt, path.value):
        if _reached_by_all(facts, stmt) is not stmt:
            edits.todo(stmt, f"every process asks whether `{facts.code(path.value)}` exists before the main "
                       "process makes it here: a process that asks after it is made fails; put a barrier() "
                       "between the question and this line, where every process passes")
            return
        why = f"every process has asked whether `{facts.code(path.value)}` exists (the main process makes it here)"
    else:
        return
    edits.insert_before(stmt, "barrier()\n")
    edits.add_import("ddpify_runtime", "barrier")
    edits.record(stmt, f"barrier() before the folder is made: {why}")


def _barrier_before_asked(facts: Facts, edits: Edits, stmt: cst.CSTNode) -> None:
    """`barrier()` before a file the main process writes in a branch of an `if` that asks whether
    that file exists and reads it in the other (`if os.path.exists(p): configs = json.load(open(p))`
    / `else: ...; json.dump(configs, open(p, "w"))`): a process that asked after the main process
    had written it, or while it wrote, would take the other branch and read it (half of it, maybe).
    Every process asks, then the barrier, then the write: all take the same branch (as a folder
    made in such a branch, `_branch_of_probe`; where the file is there before the run, no process
    reaches the barrier)."""
    asked = _probe_around(facts, stmt)
    if asked is None or facts.code(asked[1]) not in facts.code(stmt) or _reached_by_all(facts, asked[0]) is not asked[0]:
        return
    edits.insert_before(stmt, "barrier()\n")
    edits.add_import("ddpify_runtime", "barrier")
    edits.record(stmt, "barrier() before the file is written: every process has asked whether it exists, so all "
                 "take the same branch")


def _barrier_before_probed(facts: Facts, edits: Edits, stmt: cst.CSTNode, main_only: AbstractSet[cst.CSTNode]) -> None:
    """`barrier()` before a file the main process writes (`open(p, "w")`, `torch.save(obj, p)`) at a
    path named by probing the file system for a free name (`_chosen_by_probing`): every process must
    probe before the main process writes it, or a process that probes later finds the file and takes
    the next name. Round 29's held-out kernelkd (decision 0251): its Logger's `__init__` names the run
    by `self.run_name = self._get_run_name()`, whose `while os.path.exists(os.path.join(self.run_lock_dir,
    f"{run_name}.lock")):` takes the next number, then writes that lock file; the second process, a
    moment late, found the main process's lock and named its run `_#2` (its own log, its own paths).
    Only where every process reaches the write's place and calls its function (no barrier that some
    never meet: `_called_by_all`, not a logger made on the main process only)."""
    call = next(iter(facts.calls_in(stmt)), None)
    if call is None:
        return
    path = _opened_path(call) if dotted(call.func) == "open" or facts.qualify(call.func) in ("io.open", "builtins.open") else \
        (arg.value if facts.qualify(call.func) == "torch.save" and (arg := _save_target(call)) is not None else None)
    if path is None or not _chosen_by_probing(facts, path, stmt) or _reached_by_all(facts, stmt, main_only) is not stmt:
        return
    scope = facts.scope(stmt)
    if isinstance(scope, cst.FunctionDef) and (not _called_by_all(facts, scope, main_only) or any(
            _made_on_main_only(facts, facts.statement(site)) for site in facts.call_sites(scope))):
        return
    edits.insert_before(stmt, "barrier()\n")
    edits.add_import("ddpify_runtime", "barrier")
    edits.record(stmt, "barrier() before the file is written: every process has chosen its name by looking "
                 "for one that does not exist yet")


def _chosen_by_probing(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 3) -> bool:
    """Does `expr` take its value from one bound in a `while` loop whose test asks whether a path exists
    (`while os.path.exists(f"run_{n}.lock"): n += 1`), through the names and `self.` attributes it reads
    (their assignments) and the returns of the program's functions it calls, `depth` steps deep?"""
    if depth < 0:
        return False
    for node in facts.findall(expr, (cst.Name, cst.Attribute)):
        ref = facts.ref(node, at) if dotted(node) is not None else None
        for _, value, assigned in facts.writes(ref) if ref is not None else ():
            if any(isinstance(lp, cst.While) and any(facts.qualify(c.func) in PROBES for c in facts.calls_in(lp.test))
                   for lp in facts.enclosing_loops(assigned)) or _chosen_by_probing(facts, value, assigned, depth - 1):
                return True
    for call in facts.findall(expr, cst.Call):
        for func in facts.user_functions(call):
            if any(_chosen_by_probing(facts, r, r, depth - 1) for r in facts.returned(func)):
                return True
    return False


def _asked_before(facts: Facts, stmt: cst.CSTNode, path: cst.BaseExpression) -> bool:
    """Does the function insist, before `stmt`, that `path` does not exist yet (`assert not
    os.path.exists(run_dir)`, or `if os.path.exists(run_dir): raise ...` / `sys.exit(...)`)
    before `SummaryWriter(run_dir)` makes it? (A question whose answer only the main process acts
    on, `if os.path.exists(d): shutil.rmtree(d)` guarded, needs no barrier.)"""
    code = facts.code(path)
    return any(facts.qualify(c.func) in PROBES and c.args and facts.code(c.args[0].value) == code
               and facts.before(c, stmt) and facts.scope(c) is facts.scope(stmt) and _insists(facts, c)
               for c in facts.calls_in(facts.scope(stmt)))


def _insists(facts: Facts, probe: cst.Call) -> bool:
    """Is `probe` asserted, or the test of an `if` that raises or exits?"""
    owner = facts.statement(probe)
    if isinstance(owner, cst.SimpleStatementLine):
        return any(isinstance(small, cst.Assert) for small in owner.body)
    return isinstance(owner, cst.If) and facts.is_inside(probe, owner.test) and (
        bool(facts.findall(owner.body, cst.Raise)) or
        any(facts.qualify(c.func) in ("sys.exit", "exit", "quit") for c in facts.calls_in(owner.body)))


def _probed_path(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Is the folder `os.mkdir(base_dir)` makes named by a probe of the file system: `base_dir`
    set in a `while os.path.exists(base_dir):` loop (run-0, run-1, ... until a free one)? Each
    process must probe before the main process makes it, or the others pick the next name."""
    call = next(iter(facts.calls_in(stmt)), None)
    arg = mt.positional(call, 0) if call is not None else None
    for name in facts.findall(arg.value, cst.Name) if arg is not None else ():
        ref = facts.ref(name)
        for _, _, write in facts.writes(ref) if ref is not None else ():
            if any(isinstance(lp, cst.While) and any(facts.qualify(c.func) in PROBES for c in facts.calls_in(lp.test))
                   for lp in facts.enclosing_loops(write)):
                return True
    return False


def _branch_of_probe(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Is the folder `os.makedirs(d)` makes the one the `if` around it asks about, with something
    else to do where it exists (`if os.path.isdir(d): input("overwrite?")` / `else: os.makedirs(d)`)?
    A process that asked after the main process made it would take the other branch: every
    process asks, then a barrier, then the folder is made (both branches are taken alike)."""
    call = next(iter(facts.calls_in(stmt)), None)
    target = mt.positional(call, 0) if call is not None else None
    asked = _probe_around(facts, stmt)
    return target is not None and asked is not None and facts.code(asked[1]) == facts.code(target.value)


def _probe_around(facts: Facts, stmt: cst.CSTNode) -> tuple[cst.If, cst.BaseExpression] | None:
    """The `if` with an `else` whose branch holds `stmt` and whose test asks whether a path exists
    (`if os.path.exists(p):`, `if not os.path.isdir(d):`), or such an `if` before `stmt` in its block
    whose body leaves it (`if os.path.isfile(p): return np.load(p)`, then `np.save(p, ...)`: the
    other branch, written as the rest of the block), with the path asked about; else None."""
    block = facts.parent(stmt)
    owner = facts.parent(block)
    if isinstance(owner, cst.Else):
        owner = facts.parent(owner)
    if not isinstance(owner, cst.If) or owner.orelse is None or \
            not any(b is block for b in (owner.body, getattr(owner.orelse, "body", None))):
        owner = _leaving_if_before(facts, stmt)
    return _asks_about(facts, owner) if owner is not None else None


def _leaving_if_before(facts: Facts, stmt: cst.CSTNode) -> cst.If | None:
    """The nearest `if` without `else` before `stmt` in its block whose body may leave it (return,
    raise, continue, break, sys.exit(), also in a branch of an `if` inside: `if os.path.exists(p):`
    / `if overwrite: os.remove(p)` / `else: return`), whose test asks about a path; else None."""
    body = list(getattr(facts.parent(stmt), "body", ()))
    for before in reversed(body[:body.index(stmt)] if stmt in body else []):
        if isinstance(before, cst.If) and before.orelse is None and _may_leave(facts, before.body) \
                and _asks_about(facts, before) is not None:
            return before
    return None


def _may_leave(facts: Facts, block: cst.BaseSuite) -> bool:
    """Does a statement of `block`, or of a branch of an `if` in it (an `elif` or `else` too),
    leave it: after it nothing below the block runs? PointNet's `preprocess_model_net` (28c) asks
    `if os.path.exists(output_path):`, then returns in the inner `else` of `if overwrite:` and
    makes the folder below: with only a block that ends by leaving counted, no barrier went before
    the `os.mkdir`, and a process that asked after the main process made it returned early and
    left the others waiting at the barriers below (a hang under gloo; decision 0242). Not the
    statements of a loop or a function inside (a `break` there leaves that loop)."""
    for stmt in block.body if isinstance(block, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.SimpleStatementLine) and any(_leaves_here(facts, small) for small in stmt.body):
            return True
        while isinstance(stmt, cst.If):
            if _may_leave(facts, stmt.body):
                return True
            orelse = stmt.orelse
            if isinstance(orelse, cst.Else):
                if _may_leave(facts, orelse.body):
                    return True
                break
            stmt = orelse
    return False


def _leaves_here(facts: Facts, small: cst.BaseSmallStatement) -> bool:
    """Is `small` a statement after which nothing below it in its block runs?"""
    if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
        return True
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
        facts.qualify(small.value.func) in ("sys.exit", "exit", "quit")


def _asks_about(facts: Facts, owner: cst.If) -> tuple[cst.If, cst.BaseExpression] | None:
    """`owner` and the path its test asks about (`os.path.exists(p)`, `not os.path.isdir(d)`), else None."""
    test = owner.test
    probe = test.expression if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) else test
    if not (isinstance(probe, cst.Call) and facts.qualify(probe.func) in PROBES and probe.args):
        return None
    return owner, probe.args[0].value


def _prints_to(call: cst.Call) -> cst.BaseExpression | None:
    """The file of `print(..., file=f)`, else None."""
    arg = mt.keyword(call, "file") if mt.is_name(call.func, "print") else None
    return arg.value if arg is not None else None


def _on_logger(facts: Facts, expr: cst.BaseExpression, loggers: Loggers) -> bool:
    """Is `expr` a logger or reached through one (`self.logger.writer` of `self.logger.writer.flush()`):
    a name holding one, or an expression whose object may be one (`self.config.tb_logger`, stored
    as `config.tb_logger = SummaryWriter(...)` in another module)?"""
    flow = objects.of(facts)
    while True:
        if facts.ref(expr) in loggers.refs or loggers.sites & flow.values(expr):
            return True
        if not isinstance(expr, cst.Attribute):
            return False
        expr = expr.value


def _logs(facts: Facts, stmt: cst.CSTNode, loggers: Loggers) -> bool:
    """A SummaryWriter or wandb run made or used: no file that the script reads back."""
    return any(_is_logger(facts, c) or isinstance(c.func, cst.Attribute) and _on_logger(facts, c.func.value, loggers)
               or (f := _prints_to(c)) is not None and _on_logger(facts, f, loggers) for c in facts.calls_in(stmt))


def _is_logger(facts: Facts, expr: cst.CSTNode, opened: frozenset[cst.Call] = frozenset()) -> bool:
    """A call that makes a logger: a SummaryWriter, TensorFlow's summary writer, a wandb run, an
    instance of a logger class of the program (`Logger(log_dir)`, whose `__init__` makes a writer:
    its methods log), a file opened for writing that is only written and closed (`opened`)."""
    return isinstance(expr, cst.Call) and (facts.qualify(expr.func) in LOGGERS or expr in opened
                                           or objects.of(facts).kind(expr) == objects.WRITER
                                           or _csv_writer_over(facts, expr, opened))


def _logger_elements(facts: Facts, value: cst.BaseExpression, opened: frozenset[cst.Call]) -> list[cst.Call]:
    """The loggers a container or comprehension is built of (`[SummaryWriter(d) for d in dirs]`,
    `{"train": SummaryWriter(a), "val": SummaryWriter(b)}`): each is made on the main process only,
    None elsewhere, and the container keeps its shape."""
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        items = [value.elt]
    elif isinstance(value, cst.DictComp):
        items = [value.value]
    elif isinstance(value, (cst.List, cst.Tuple)):
        items = [e.value for e in value.elements if isinstance(e, cst.Element)]
    elif isinstance(value, cst.Dict):
        items = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    else:
        return []
    return [i for i in items if isinstance(i, cst.Call) and _is_logger(facts, i, opened)]


def _csv_writer_over(facts: Facts, call: cst.Call, opened: frozenset[cst.Call]) -> bool:
    """`csv.writer(log)` (or `csv.DictWriter(log, ...)`) over a file that is a logger (`opened`)."""
    if facts.qualify(call.func) not in CSV_WRITERS or not call.args or not opened:
        return False
    return bool(objects.of(facts).values(call.args[0].value) & opened)


def _rows_written(facts: Facts, node: cst.CSTNode) -> bool:
    """`writer = csv.writer(f)` (`node` is `f`) whose every use is a statement of its own writing rows
    (`writer.writerow(row)`, `writeheader()`, `writerows(rows)`): the file is only written."""
    arg, call = facts.parent(node), facts.parent(facts.parent(node))
    if not isinstance(arg, cst.Arg) or arg.value is not node or not isinstance(call, cst.Call) or \
            facts.qualify(call.func) not in CSV_WRITERS or call.args[0] is not arg:
        return False
    assign = facts.parent(call)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or dotted(assign.targets[0].target) is None:
        return False
    target = assign.targets[0].target
    ref = facts.ref(target, facts.statement(assign))
    uses = [n for n in facts.uses(dotted(target), ref.scope) if n is not target and facts.ref(n) == ref] \
        if ref is not None else []
    return bool(uses) and all(isinstance(a := facts.parent(n), cst.Attribute) and a.attr.value in ROW_METHODS
                              and isinstance(c := facts.parent(a), cst.Call) and c.func is a
                              and isinstance(facts.parent(c), cst.Expr) for n in uses)


class Loggers(NamedTuple):
    """The loggers the program makes (each on the main process only, None elsewhere)."""

    refs: set[Ref]  # names holding one, also as parameters of the functions they reach
    sites: frozenset[cst.CSTNode]  # the calls that make them, for the objects that reach them otherwise


def _loggers(facts: Facts, opened: frozenset[cst.Call]) -> Loggers:
    made = [(t, v, s) for t, v, s in facts.assigns if _is_logger(facts, v, opened)]
    made += [(t, e, s) for t, v, s in facts.assigns for e in _logger_elements(facts, v, opened)]
    made += [(item.asname.name, item.item, stmt) for stmt in facts.by_type.get(cst.With, ()) for item in stmt.items
             if isinstance(item.item, cst.Call) and facts.qualify(item.item.func) in RUNS_OPENED
             and item.asname is not None and isinstance(item.asname.name, cst.Name)]  # `with mlflow.start_run() as run:`
    refs = {facts.ref(t, s) for t, _, s in made} - {None}
    return Loggers(refs.union(*(objects.of(facts).receivers(r) for r in refs)), frozenset(v for _, v, _ in made))


def _opened_path(opener: cst.BaseExpression) -> cst.BaseExpression | None:
    """What `open(p, "w")`, `gzip.open(p, "wt")`, `zipfile.ZipFile(p, "w")` open: `p` (none for
    `Path(p).open("w")`, whose path is its object)."""
    first = mt.positional(opener, 0) if isinstance(opener, cst.Call) else None
    return first.value if first is not None and not mt.WRITE_MODE.fullmatch(mt.string_value(first.value) or "") \
        else None


def _opened_for_writing(facts: Facts) -> frozenset[cst.Call]:
    """`self.file = open(path, "w")` whose every later use is a statement of its own writing to it or
    closing it (`self.file.write(line)`, `self.file.close()`): a logger like any other, made on the
    main process only. (One handed to `csv.writer(f)` stays on every process.)"""
    found = []
    attributes: dict[str | None, list[cst.Attribute]] | None = None  # by dotted name, made for the first file
    for target, value, stmt in facts.assigns:
        writing = mt.is_open_for_writing(value) or _opened_with_write_default(facts, value)
        ref = facts.ref(target, stmt) if writing and dotted(target) else None
        if ref is None:
            continue
        if attributes is None:
            attributes = {}
            for attribute in facts.attributes:
                attributes.setdefault(dotted(attribute), []).append(attribute)
        uses = [n for n in (*attributes.get(dotted(target), ()), *facts.uses(dotted(target), ref.scope))
                if n is not target and dotted(n) == dotted(target) and facts.ref(n) == ref]
        if all(_file_method_statement(facts, n) or _passed_to_writer(facts, n) or _rows_written(facts, n) for n in uses):
            found.append(value)
    return frozenset(found)


def _kept_handles(facts: Facts, edits: Edits, opened: frozenset[cst.Call], writes: dict[cst.CSTNode, str],
                  prepared: frozenset[cst.FunctionDef]) -> None:
    """A file opened for writing whose handle the program keeps (`self.file = open(path, "w")`,
    read later for more than writes: `self.file.tell()`, `sys.stdout = self` in a `Tee`), or opened
    with a mode the call does not spell out (`open(*args, **kwargs)`): `open_on_main(...)`, the
    file on the main process, `os.devnull` on the others where the mode writes (the runtime reads
    the mode), so the handle works everywhere and one process writes. A handle only written and
    closed is a logger (`_opened_for_writing`: None elsewhere); a data set's own files stay each
    node's (`preparing`), and a path each process names its own (`os.getpid()`, a rank) its own."""
    found = False
    for _, value, _ in facts.assigns:
        if not mt.is_call_of(value, "open") or value in opened or facts.scope(value) in prepared:
            continue
        stmt = facts.statement(value)
        if stmt in writes or _already_guarded(facts, stmt, writes):
            continue
        path = mt.positional(value, 0) or mt.keyword(value, "file")
        if path is not None and per_process(facts, path.value):
            continue  # each process's own file (`f"served-{os.getpid()}.jsonl"`)
        if mt.is_open_for_writing(value) or _opened_with_write_default(facts, value) or _mode_unsaid(value):
            edits.replace(value.func, lambda _: cst.Name("open_on_main"), "file opened for writing on the main "
                          "process only, os.devnull on the others: its handle is kept and used on every process")
            found = True
    if found:
        edits.add_import("ddpify_runtime", "open_on_main")


def _mode_unsaid(call: cst.Call) -> bool:
    """`open(*args, **kwargs)`: the mode may come in the starred arguments (no `mode=`, and a star
    where the path or the mode would be)."""
    if mt.keyword(call, "mode") is not None:
        return False
    said = 0
    for arg in call.args:
        if arg.star:
            return said < 2
        said += arg.keyword is None
    return False


def _opened_with_write_default(facts: Facts, value: cst.BaseExpression) -> bool:
    """`open(fname, mode)` in `def __init__(self, fname, mode="a")` (DomainBed's `Tee`, made as
    `sys.stdout = Tee(path)` on every process): the mode is a parameter whose default writes, and
    no call of the function gives it another."""
    if not mt.is_call_of(value, "open") or len(value.args) < 2 and mt.keyword(value, "mode") is None:
        return False
    mode = (mt.keyword(value, "mode") or value.args[1]).value
    func = facts.scope(value)
    if not isinstance(mode, cst.Name) or not isinstance(func, cst.FunctionDef):
        return False
    param = next((p for p in (*func.params.params, *func.params.kwonly_params) if p.name.value == mode.value), None)
    if param is None or param.default is None or not mt.is_open_for_writing(
            cst.Call(cst.Name("open"), [cst.Arg(cst.Name("f")), cst.Arg(param.default)])):
        return False
    return all(facts.argument_for(call, func, mode.value) is None for call in facts.call_sites(func))


def _passed_to_writer(facts: Facts, node: cst.CSTNode) -> bool:
    """`train(args, net, loader, trainF)` where every use of the parameter that receives the file,
    in the function called, is a statement writing to it (`trainF.write(line)`, `trainF.flush()`)."""
    arg, call = facts.parent(node), facts.parent(facts.parent(node))
    if not isinstance(node, cst.Name) or not isinstance(arg, cst.Arg) or arg.value is not node or \
            not isinstance(call, cst.Call) or arg.star:
        return False
    callees = facts.user_functions(call)
    received = objects.of(facts).receivers(facts.ref(node))
    mine = [r for r in received if any(r.scope is f for f in callees)]
    return bool(callees) and len(mine) == len(callees) and all(
        all(_file_method_statement(facts, n) or _none_test(facts, n) for n in facts.uses(r.name, r.scope)
            if facts.ref(n) == r and not isinstance(facts.parent(n), cst.Param))
        for r in mine)


def _none_test(facts: Facts, node: cst.CSTNode) -> bool:
    """`if log is not None:` (`is None`): a test that a file made on the main process only, None
    elsewhere, passes there and fails elsewhere, as it should."""
    test = facts.parent(node)
    return isinstance(test, cst.Comparison) and test.left is node and len(test.comparisons) == 1 and \
        isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot)) and mt.is_name(test.comparisons[0].comparator, "None")


def _file_method_statement(facts: Facts, node: cst.CSTNode) -> bool:
    """`f.write(line)`, `f.close()` as a statement of its own, or `print(line, file=f)`."""
    attr, call = facts.parent(node), facts.parent(facts.parent(node))
    if isinstance(call, cst.Call) and _prints_to(call) is node:
        return isinstance(facts.parent(call), cst.Expr)
    return isinstance(attr, cst.Attribute) and attr.attr.value in FILE_METHODS and isinstance(call, cst.Call) \
        and call.func is attr and isinstance(facts.parent(call), cst.Expr)


def _reads_of_main_only(facts: Facts, edits: Edits, loggers: Loggers, writes: dict[cst.CSTNode, str]) -> None:
    """A read of a logger's attribute outside a guard (`run_dir = self.writer.log_dir`), or of what
    its method returns (`print(logger.write('train'))`): the logger exists on the main process only
    (None elsewhere), so every process takes the main process's value,
    `from_main_process(lambda: self.writer.log_dir)` (a broadcast). Where some processes may
    not reach the read (under a test that may differ between them, in a `try`, in a function called
    under a guard), a broadcast could wait forever: the read runs on the main process only, None
    elsewhere (`logger.state_dict() if is_main_process() else None`, saved there only), with a
    warning. A print of the logger's value alone is guarded (the runtime silences print elsewhere)."""
    done: set[cst.CSTNode] = set()
    for attr in facts.attributes:
        if not _on_logger(facts, attr.value, loggers):
            continue
        stmt = facts.statement(attr)
        if stmt in writes or _already_guarded(facts, stmt, writes) or any(
                c.func is attr and isinstance(facts.parent(c), cst.Expr) for c in facts.calls_in(stmt)):
            continue  # a method call of the logger as a statement is guarded with it; one whose value is
            # used (`print(logger.write('train'))`, `{'logger': logger.state_dict()}`) is a read
        read = _whole_read(facts, attr)
        if read in done or any(facts.is_inside(read, d) for d in done):
            continue
        done.add(read)
        if stmt not in done and _prints_only_the_logger(facts, stmt, loggers):
            done.add(stmt)  # printed on the main process only anyway: no broadcast
            edits.guard(stmt, GUARD, f"`{facts.code(read)}` printed on the main process only "
                        f"(`{facts.code(attr.value)}` exists there only: None elsewhere)")
            continue
        if stmt in done:
            continue
        if _reached_by_all(facts, stmt) is stmt and _callers_unguarded(facts, stmt, writes):
            edits.replace(read, lambda node: cst.Call(cst.Name("from_main_process"), [cst.Arg(cst.Lambda(
                cst.Parameters(), node))]), f"`{facts.code(read)}` is the main process's on every process "
                f"(`{facts.code(attr.value)}` exists there only: None elsewhere)")
            edits.add_import("ddpify_runtime", "from_main_process")
            continue
        edits.replace(read, lambda node: cst.IfExp(test=cst.parse_expression(GUARD), body=node, orelse=cst.Name("None")),
                      f"`{facts.code(read)}` read on the main process only")
        edits.warn(stmt, f"`{facts.code(read)}` is the main process's value there and None on the others: "
                   f"`{facts.code(attr.value)}` exists on the main process only, and not every process may reach "
                   "this line to share it; where the others use the value, compute it without the logger")


RUNS_OPENED = frozenset({"mlflow.start_run", "wandb.init"})  # a tracker's run, as a context manager too


def _runs_opened_by_with(facts: Facts, edits: Edits) -> None:
    """`with mlflow.start_run():` around the training (MLflow's own idiom; `with wandb.init(...):`):
    every process opened a run of its own. The run is opened on the main process only, a null
    context elsewhere, so the block runs everywhere and its tracking calls (guarded) log once:

        with mlflow.start_run(run_name="r"):     ->   with (mlflow.start_run(run_name="r") if is_main_process() else nullcontext()):

    What `as` binds (`with mlflow.start_run() as run:`) is None elsewhere, a logger as any other
    (`_loggers`): its method calls are guarded, and a read of its attributes takes the main
    process's value on every process (`run_id = from_main_process(lambda: run.info.run_id)`). Not
    where `as` binds anything but a name."""
    for stmt in facts.by_type.get(cst.With, ()):
        for item in stmt.items:
            call = item.item
            if not (isinstance(call, cst.Call) and facts.qualify(call.func) in RUNS_OPENED):
                continue
            if item.asname is not None and not isinstance(item.asname.name, cst.Name):
                continue
            edits.replace(call, lambda node: cst.IfExp(test=cst.parse_expression(GUARD), body=node, orelse=cst.parse_expression(
                "nullcontext()"), lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
                f"{dotted(call.func)}() opened on the main process only (a null context elsewhere): one run, "
                "whose tracking calls are guarded")
            edits.add_import("contextlib", "nullcontext")
            edits.add_import("ddpify_runtime", "is_main_process")


def _prints_only_the_logger(facts: Facts, stmt: cst.CSTNode, loggers: Loggers) -> bool:
    """`print(logger.write('train'))`: a print statement whose other calls are all the logger's
    methods (the runtime silences print off the main process: guarded, it changes nothing else)."""
    line = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(line, cst.Expr) and isinstance(line.value, cst.Call) and mt.is_call_of(line.value, "print")):
        return False
    return all(c is line.value or isinstance(c.func, cst.Attribute) and _on_logger(facts, c.func.value, loggers)
               for c in facts.calls_in(stmt))


def _whole_read(facts: Facts, attr: cst.Attribute) -> cst.BaseExpression:
    """The chain `attr` starts: `self.writer.file_writer.get_logdir()` for `self.writer.file_writer`."""
    node: cst.BaseExpression = attr
    while True:
        parent = facts.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node or isinstance(parent, cst.Call) and \
                parent.func is node or isinstance(parent, cst.Subscript) and parent.value is node:
            node = parent
        else:
            return node


def _callers_unguarded(facts: Facts, stmt: cst.CSTNode, writes: dict[cst.CSTNode, str]) -> bool:
    """Does every call of the function around `stmt` run on every process (none is guarded)?"""
    scope = facts.scope(stmt)
    if not isinstance(scope, cst.FunctionDef):
        return True
    sites = [facts.statement(c) for c in facts.call_sites(scope)]
    return not any(site in writes or _already_guarded(facts, site, writes) for site in sites)


def _bound_and_used_later(facts: Facts, stmt: cst.CSTNode, skip: list[cst.SimpleStatementLine] = ()) -> str | None:
    """A name a compound write (`with open(...) as f:`) assigns that code after it reads (not in
    the statements `skip`)."""
    if not isinstance(stmt, cst.BaseCompoundStatement):
        return None
    bound = {n.value for t, _, s in facts.assigns if facts.is_inside(s, stmt)
             and not any(facts.is_inside(s, line) for line in skip) for n in facts.findall(t, cst.Name)}
    scope = facts.scope(stmt)

    def reads(node: cst.CSTNode, name: str) -> bool:  # a read the block's binding may reach
        return any(not _rebound_first(facts, stmt, name, use) for use in facts.references(node, name)
                   if not isinstance(facts.parent(use), cst.AssignTarget))

    for target, value, later in facts.writes_in(scope):
        if facts.before(stmt, later) and not facts.is_inside(later, stmt):
            used = {n for n in bound if reads(later, n)}
            if used:
                return sorted(used)[0]
    for call in facts.calls_of(scope):
        if facts.before(stmt, call) and not facts.is_inside(call, stmt):
            used = {n for n in bound if reads(call, n)}
            if used:
                return sorted(used)[0]
    return None


def _state_set_in(facts: Facts, stmt: cst.BaseCompoundStatement) -> list[cst.SimpleStatementLine]:
    """The statements of a compound write's own block that only set state, from values made before
    it: `self.headers_written = True` in a CSV logger's `with open(path, "w") as f: w = csv.writer(f);
    w.writerow(headers); self.headers_written = True`, where `on_epoch_end` tests the flag next
    epoch. Before, the whole block ran on every process ("because the block also sets `self`"), each
    writing the file; these are set after the block instead, on every process, and the block runs on
    the main process only. A plain store directly in the block, its value and target reading nothing
    the block binds (its `as f`, its `w`) and calling nothing, and no later statement of the block
    reading what it stores; [] where any statement the block binds a name in is not one."""
    block = stmt.body if isinstance(stmt, cst.With) else None
    if not isinstance(block, cst.IndentedBlock):
        return []

    def named(node: cst.CSTNode) -> set[str]:  # the names and `self.x`s `node` mentions
        return {name for n in mt.walk(node) if isinstance(n, (cst.Name, cst.Attribute)) and (name := dotted(n))}

    made = {name for item in stmt.items if item.asname is not None for name in named(item.asname.name)}
    kept: list[cst.SimpleStatementLine] = []
    for i, line in enumerate(block.body):
        store = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        if not isinstance(store, (cst.Assign, cst.AnnAssign)) or store.value is None:
            if any(facts.is_inside(s, line) for _, _, s in facts.assigns):
                return []  # a binding inside a nested statement, or beside another on one line
            continue
        targets = [t.target for t in store.targets] if isinstance(store, cst.Assign) else [store.target]
        stored = {dotted(t) for t in targets}
        reads = named(store.value) | {n for t in targets if isinstance(t, (cst.Attribute, cst.Subscript))
                                      for n in named(t.value)}
        if None in stored or reads & made or facts.findall(store.value, cst.Call):
            made |= {d for t in targets for d in ([dotted(t)] if dotted(t) else named(t))}  # its own: `w = csv.writer(f)`
            continue
        if any(stored & named(later) for later in block.body[i + 1:]):
            return []
        kept.append(line)
    return kept


def _rebound_first(facts: Facts, stmt: cst.CSTNode, name: str, use: cst.CSTNode) -> bool:
    """Is `name` bound again after `stmt` by a statement that always runs before `use` (one of
    the statements of a block that holds `use`, ahead of it)? Then `use` reads that binding, not
    the one `stmt` makes: `with open(p, 'a') as f: w = csv.writer(f); w.writerow(row)` in the epoch
    loop reads its own `w`, not the header block's."""
    for target, _, assign in facts.assigns:
        if name not in {n.value for n in facts.findall(target, cst.Name)} or facts.is_inside(assign, stmt):
            continue
        line = facts.statement(assign)
        block = facts.parent(line)
        if facts.before(stmt, line) and facts.before(line, use) and not facts.is_inside(use, line) \
                and facts.is_inside(use, block):
            return True
    return False


def _sole_body_of_if(facts: Facts, stmt: cst.CSTNode, writes: dict[cst.CSTNode, str]) -> cst.If | None:
    """The `if` (without `else`) whose body is nothing but file writes, `stmt` among them."""
    owner = facts.parent(facts.parent(stmt))
    if isinstance(owner, cst.If) and owner.orelse is None and all(s in writes for s in owner.body.body):
        return owner
    return None


def _and_main(test: cst.BaseExpression) -> cst.BaseExpression:
    return cst.BooleanOperation(_parenthesized(test), cst.And(), cst.parse_expression(GUARD))


def _main_and(test: cst.BaseExpression) -> cst.BaseExpression:
    """`if logger.compare('test'): save(...)` -> `if is_main_process() and logger.compare('test'):`:
    the guard first where the test reads a logger, which is None off the main process."""
    return cst.BooleanOperation(cst.parse_expression(GUARD), cst.And(), _parenthesized(test))


def _parenthesized(test: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar:
        return test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return test


def _forward_through_module(facts: Facts, refs: dict[Ref, Model], edits: Edits, stmt: cst.CSTNode) -> None:
    """A forward pass inside a statement that now runs on one process must bypass DDP, whose
    forward talks to the other processes (buffers): `torch.save(netG(z), p)` -> `netG.module(z)`."""
    for call in facts.calls_in(stmt):
        name = dotted(call.func)
        holds = holds_wrapper(facts, refs, call.func) if name is not None else None
        if holds is not None:
            edits.replace(call.func, lambda node, holds=holds: build.bare_model(edits, node, holds is WRAPPER),
                          f"`{name}(...)` runs on the main process only: through the bare model, "
                          "as DDP's forward would wait for the other processes")


def _collectives(facts: Facts, models: Models, refs: dict[Ref, Model], node: cst.CSTNode
                 ) -> list[tuple[cst.Call, str]]:
    """The outermost FSDP2 collectives in `node`: (call, the code that computes it) for a full
    state dict (`full_state_dict(model)`) or a forward of a sharded model (`netG(z)`)."""
    found: list[tuple[cst.Call, str]] = []
    for call in facts.calls_in(node):
        code = fsdp.gather(facts, models, refs, call) or (
            facts.code(call) if fsdp.sharded_forward(facts, models, refs, call) else None)
        if code is not None and not any(facts.is_inside(call, c) for c, _ in found):
            found.append((call, code))
    return found


def _hoist_collectives(facts: Facts, models: Models, refs: dict[Ref, Model], edits: Edits, stmt: cst.CSTNode,
                       guarded: list[cst.CSTNode], taken: dict[cst.CSTNode, set[str]]) -> None:
    """`torch.save(model.state_dict(), p)` -> `model_state = full_state_dict(model)` on every
    process and `torch.save(model_state, p)` under the guard. The collectives go before the run
    of guarded statements `stmt` ends, so that the run stays one `if is_main_process():` block."""
    _, body = facts.block(stmt)
    start = body.index(stmt)
    while start and body[start - 1] in guarded:
        start -= 1
    for call, code in _collectives(facts, models, refs, stmt):
        reads = {n.value for n in facts.variables_in(call)}
        if reads & _bound_inside(stmt):
            edits.todo(stmt, f"`{facts.code(call)}` is a collective under FSDP2 (every process must run it), but "
                       "it reads a name this write binds: compute it before the write, on every process")
            continue
        first = next(s for s in body[start:] if s is stmt or not reads & _bound_inside(s))
        names = taken.setdefault(first, set())
        name = _fresh(facts, stmt, _result_name(facts, call), names)
        hoisted = cst.parse_statement(f"{name} = {code}\n")
        if len(names) == 1:  # the first one takes the blank lines and comments above the run
            hoisted = hoisted.with_changes(leading_lines=first.leading_lines)
            edits.replace(first, lambda node: node.with_changes(leading_lines=()))
        edits.insert_before(first, hoisted)
        edits.replace(call, lambda node, name=name: cst.Name(name),
                      f"`{code}` runs on every process before the write (a collective under FSDP2)")
        if code.startswith("full_"):
            edits.add_import("ddpify_runtime", code.split("(")[0])


def _result_name(facts: Facts, call: cst.Call) -> str:
    """`model_state` for `model.state_dict()`, `netG_output` for `netG(z)`."""
    if mt.is_method_call(call, "state_dict"):
        receiver = call.func.value
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "module":
            receiver = receiver.value
        return f"{dotted(receiver).rsplit('.', 1)[-1]}_state"
    return f"{dotted(call.func).rsplit('.', 1)[-1]}_output"


def _fresh(facts: Facts, stmt: cst.CSTNode, name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, ... when the function already uses it (or this statement took it)."""
    scope, candidate, n = facts.scope(stmt), name, 1
    while candidate in taken or facts.used_inside(candidate, scope):
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate)
    return candidate


def _bound_inside(stmt: cst.CSTNode) -> set[str]:
    """The names a statement binds in itself: `with ... as f`, loop and comprehension targets,
    assignments in its block."""
    targets = [a.name for a in mt.findall(stmt, cst.AsName)]
    targets += [t.target for t in mt.findall(stmt, (cst.AssignTarget, cst.For, cst.CompFor))]
    return {n.value for t in targets for n in mt.findall(t, cst.Name)}


def _name_shell_writes(facts: Facts, edits: Edits, writes: dict[cst.CSTNode, str], prepared: AbstractSet[cst.CSTNode]) -> None:
    """Name with a warning a shell command that writes files (`os.system(f"mkdir -p {d}")`,
    `subprocess.run(["cp", src, dst])`, `ddpify.analysis.shell`) where every process runs it: not
    guarded, for what it writes and who reads it at once are in a string ddpify does not read."""
    for call in facts.calls:
        stmt = facts.statement(call)
        if (what := shell_write(facts, call)) and facts.scope(stmt) not in prepared and shell_folder(facts, call) is None \
                and not _already_guarded(facts, stmt, writes):
            edits.warn(stmt, f"`{facts.code(call.func)}(...)` runs a shell command that writes files (`{what}`) on "
                       "every process: they race each other over the same files; run it on the main process only "
                       "(`if is_main_process():`, with barrier() after it where the others read what it writes), "
                       "or make it safe to run several times at once")


def _already_guarded(facts: Facts, stmt: cst.CSTNode, writes: dict[cst.CSTNode, str]) -> bool:
    """Inside a rank check of the user's, or inside another statement being guarded, or on some
    processes only by the user's code anyway (`Ranks.on_some_ranks`, the answer `check` asks:
    after `if rank != 0: return` in its function, in a function every call of which is under a
    rank test). Before, a save after such an early return was guarded again and a barrier put
    after it, which the processes that returned never reach: a hang."""
    for anc in facts.ancestors(stmt):
        if anc in writes or isinstance(anc, cst.If) and is_rank_test(facts, anc.test):
            return True
    return ranks(facts).on_some_ranks(stmt)


def _writer_functions(facts: Facts, models: Models, refs: dict[Ref, Model], writes: dict[cst.CSTNode, str],
                      options: Options) -> set[cst.FunctionDef]:
    """Functions whose every statement writes, prints or computes a path: `save_checkpoint(...)`;
    one that ends returning a value every call drops too (`def save(self): ...; return name`,
    called as `model.save()`: `_dropped_return`); under FSDP2 not one that gathers a state dict or runs a model (every
    process must). Not one the program never calls (a trainer's `save_model(epoch)` left for the
    user to call): with no call to guard, its writes are guarded inside it."""
    found = set()
    for funcs in facts.functions.values():
        for func in funcs:
            last = _dropped_return(facts, func)
            if not any(facts.scope(w) is func for w in writes) or facts.trains(func) or \
                    facts.returned(func) and last is None or _handed_out(facts, func) or not facts.entries(func):
                continue  # (one that trains runs on every process: DDP's backward is a collective)
            if options.fsdp and _collectives(facts, models, refs, func):
                continue
            if all(_harmless(facts, refs, s, writes) for s in _simple_statements(func.body) if s is not last):
                found.add(func)
    return found


def _writes_only(callees: list[cst.FunctionDef], writers: set[cst.FunctionDef]) -> bool:
    """Is a call of `callees` one that only writes, to be guarded where it is called? A call of a
    helper that writes (any of the functions it may run: an override of a method that only writes is
    guarded at the call); a construction only where every class it may build is one whose `__init__`
    only writes (a logger class): the object it makes is kept, and a registry by name that may also
    build a trainer must build it on every process (`trainer = trainer_class(model_class, config,
    args)`, among every class of the trainer modules a logger class that only makes its SummaryWriter:
    guarded at the call, the other processes had no `trainer`, UnboundLocalError at `return trainer`)."""
    if callees and all(f.name.value == "__init__" for f in callees):
        return all(f in writers for f in callees)
    return any(f in writers for f in callees)


def _handed_out(facts: Facts, func: cst.FunctionDef) -> bool:
    """Is `func` used as a value as well as called: handed to code that calls it where ddpify does
    not follow (`trainer.set_callback("on_batch_end", log_row)`, `hooks = [log_row]`,
    `self.callbacks.append(self.save)`), so that guarding its calls would miss those? Its writes are
    then guarded inside it. Any name, or `self.` attribute, of its name that is not a callee counts
    (one of another function of that name too: guarding inside is right wherever it is called)."""
    name = func.name.value

    def used_as_value(node: cst.CSTNode) -> bool:
        parent = facts.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            return False  # a call of it
        part = VALUELESS_PARTS.get(type(parent))
        return part is None or getattr(parent, part) is not node  # not `x.name`, `f(name=...)`, a `def name`, ...

    methods = [a for a in facts.attributes_named(name) if mt.is_name(a.value, "self")]
    return any(used_as_value(n) for n in [*facts.names_spelled(name), *methods])


# the parts of a node where a function's name is no use of the function: an attribute's name, a keyword, ...
VALUELESS_PARTS = {cst.Attribute: "attr", cst.Arg: "keyword", cst.Param: "name", cst.ImportAlias: "name",
                   cst.FunctionDef: "name", cst.ClassDef: "name"}


def _dropped_return(facts: Facts, func: cst.FunctionDef) -> cst.SimpleStatementLine | None:
    """`func`'s only `return`, its last statement, computing nothing (`return name`), where `func`
    is called and every call is a statement of its own, its result unused; else None."""
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else []
    last = body[-1] if body else None
    sites = facts.call_sites(func)
    if not isinstance(last, cst.SimpleStatementLine) or not isinstance(last.body[0], cst.Return) or \
            facts.returns_in(func) != [last.body[0]] or facts.calls_in(last) or not sites:
        return None
    return last if all(isinstance(facts.parent(c), cst.Expr) for c in sites) else None


def _simple_statements(block: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """The statements of a function body, looking into `if`/`else`; a `with` (a file write, or
    not) and loops come whole."""
    for stmt in block.body:
        if isinstance(stmt, cst.If):
            yield from _simple_statements(stmt.body)
            if stmt.orelse is not None:
                yield from _simple_statements(stmt.orelse.body if isinstance(stmt.orelse, cst.Else) else
                                              cst.IndentedBlock([stmt.orelse]))
        else:
            yield stmt


def _harmless(facts: Facts, refs: dict[Ref, Model], stmt: cst.CSTNode, writes: dict[cst.CSTNode, str]) -> bool:
    if stmt in writes:
        return True
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    small = stmt.body[0]
    if isinstance(small, cst.Expr) and mt.is_call_of(small.value, "print"):
        return True
    return isinstance(small, cst.Assign) and not any(
        facts.user_functions(c) or dotted(c.func) and facts.ref(c.func) in refs
        for c in facts.calls_in(small)) and not any(  # a helper that calls the model must run everywhere
        isinstance(t.target, cst.Attribute) for t in small.targets)  # `self.writer = ...`: state read later


def _write_atomically(facts: Facts, edits: Edits, stmt: cst.CSTNode) -> None:
    """`torch.save(state, path)` -> `with atomic_write(path) as tmp_path: torch.save(state, tmp_path)`:
    the runtime renames the finished file over `path`, so a kill during the save keeps the last one.
    A one-line `if cond: torch.save(state, path)` (the `if` is the write, `_statements`) gets the same
    `with` in a block of its own: it was guarded but left a plain save, where the same `if` on two
    lines was written atomically."""
    one_line = _one_line_if(stmt)
    small = one_line if one_line is not None else mt.sole(stmt, cst.Expr)
    if small is None or not isinstance(small.value, cst.Call) or facts.qualify(small.value.func) != "torch.save":
        return
    target = _save_target(small.value)
    if target is None or _opened_handle(facts, target.value, stmt):
        return
    name = _fresh(facts, stmt, "tmp_path", set())
    edits.replace(stmt, (lambda node: _atomic_body(node, name)) if one_line is not None else
                  (lambda node: _atomic(node, name)),
                  f"`{facts.code(target.value)}` written whole or not at all (a temporary file renamed over it)")
    edits.add_import("ddpify_runtime", "atomic_write")


def _atomic_body(node: cst.If, name: str) -> cst.If:
    """`if cond: torch.save(state, path)` -> `if cond:` and `with atomic_write(path) as tmp_path:
    torch.save(state, tmp_path)` as its block (a comment after the save stays on the `if` line)."""
    suite = cst.ensure_type(node.body, cst.SimpleStatementSuite)
    line = cst.SimpleStatementLine(body=[suite.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
    return node.with_changes(body=cst.IndentedBlock(header=suite.trailing_whitespace, body=[_atomic(line, name)]))


def _opened_handle(facts: Facts, target: cst.BaseExpression, stmt: cst.CSTNode) -> bool:
    """Is the file `torch.save` writes a handle the program opened (`with open(fn, 'wb') as f:
    torch.save([model, criterion, optimizer], f)`, AWD-LSTM's `model_save`; `f = open(p, 'wb')`)?
    The file is then made by that `open`, before the save: a temporary file renamed over it cannot
    be had by handing `atomic_write` the handle (it writes into it as it is), so the save is left as
    written and nothing is claimed of it."""
    ref = facts.ref(target, stmt) if isinstance(target, cst.Name) else None
    made = [*facts.entered(ref), *facts.sources(ref)] if ref is not None else [target]
    return any(mt.opens_for_writing(m) for m in made)


def _save_target(call: cst.Call) -> cst.Arg | None:
    """The file argument of `torch.save(obj, f)`."""
    return mt.positional(call, 1) or mt.keyword(call, "f")


def _atomic(node: cst.SimpleStatementLine, name: str) -> cst.With:
    save = node.body[0]
    target = _save_target(save.value)
    call = save.value.with_changes(args=[a.with_changes(value=cst.Name(name)) if a is target else a
                                         for a in save.value.args])
    shell = cst.parse_statement(f"with atomic_write(PATH) as {name}:\n    pass\n")
    opener = shell.items[0].item.with_changes(args=[cst.Arg(target.value)])
    inner = node.with_changes(body=[save.with_changes(value=call)], leading_lines=())
    return shell.with_changes(items=[shell.items[0].with_changes(item=opener)],
                              body=shell.body.with_changes(body=[inner]), leading_lines=node.leading_lines)


def _reached_by_all(facts: Facts, stmt: cst.CSTNode, main_only: AbstractSet[cst.CSTNode] = frozenset()) -> cst.CSTNode:
    """Where every process passes after `stmt`: `stmt`, or the outermost statement around it (in
    its loop or function) that some processes may leave early: an `if` whose test may differ
    between processes (`if val_loss < best:` on a shard), a `try` (`try: os.makedirs(out)` /
    `except OSError: pass`: the main process raises, the others do not) or a `with` (which may
    swallow what its body raises, `contextlib.suppress`). Past a loop, an `if` or a `try` around
    the whole loop still counts (`if not os.path.exists(d): for f in files: copy; barrier()`: a
    process that finds the folder the main process made skips the loop and its barriers). A
    statement this rewrite runs on the main process only (`main_only`: guarded, or an `if` whose
    test it extends) is left by the others too. torch's own `with` blocks (`torch.no_grad()`) let
    everything raised through."""
    point, looped = stmt, False
    for anc in facts.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.Module)):
            break
        if anc in main_only:
            point = anc
            continue
        if isinstance(anc, (cst.For, cst.While)):
            looped = True
            continue
        if isinstance(anc, (cst.Try, cst.TryStar)) or isinstance(anc, cst.With) and not looped and not _torch_with(facts, anc) \
                or isinstance(anc, cst.If) and not same_everywhere(facts, anc.test):
            point = anc
    return point


def _guarded_where_called(facts: Facts, scope: cst.CSTNode, main_only: AbstractSet[cst.CSTNode]) -> bool:
    """Is `scope` a function every call of which is a statement this rewrite runs on the main process
    only (`if is_main_process(): self.save_weights(model_dir)`, a helper that writes files, guarded where
    it is called, and guarded inside too)? A barrier in it would wait for processes that never call it
    (timeVAE's `save()`: the main process waited in `save_weights` while the other left; round 26,
    decision 0209); the barrier after the guarded call, which every process passes, waits for the file."""
    sites = facts.call_sites(scope) if isinstance(scope, cst.FunctionDef) else []
    return bool(sites) and all(facts.statement(c) in main_only for c in sites)


def _called_by_all(facts: Facts, scope: cst.CSTNode, main_only: AbstractSet[cst.CSTNode], depth: int = 3) -> bool:
    """Does every process make every call of `scope` (a function; the module's own code: yes), so that a
    barrier in it waits for all of them: each call is reached by all in its own function
    (`_reached_by_all`), and that function is called so in turn (`depth` callers up). A checkpoint
    helper called under `if epoch % k == 0 or time.time() - last >= every:` (each process's clock)
    or `if val_loss < best:` (a shard's loss) is called by some processes only: a barrier in it would
    wait for the others, or meet their next collective."""
    if not isinstance(scope, cst.FunctionDef) or depth == 0:
        return True
    for call in facts.call_sites(scope):
        site = facts.statement(call)
        if site in main_only or _made_on_main_only(facts, site) or _reached_by_all(facts, site, main_only) is not site \
                or not _called_by_all(facts, facts.scope(site), main_only, depth - 1):
            return False
    return True


def _made_on_main_only(facts: Facts, site: cst.CSTNode) -> bool:
    """`sys.stdout = Tee(path)`, `writer = Logger(log_dir)`: a logger this rewrite makes on the main
    process only (`Tee(path) if is_main_process() else sys.stdout`), so its `__init__` runs there
    alone, wherever the call is (another module's conversion guards it): a barrier in that
    `__init__` would wait for processes that never come (round 29's held-out DCGAN hung there)."""
    assign = site.body[0] if isinstance(site, cst.SimpleStatementLine) else None
    return isinstance(assign, (cst.Assign, cst.AnnAssign)) and assign.value is not None \
        and _is_logger(facts, assign.value)


def _agreeable_tests(facts: Facts, stmt: cst.CSTNode, point: cst.CSTNode, readers: list[cst.Call]) -> list[cst.BaseExpression]:
    """The tests to agree (`agree_on`) so that every process reaches the save `stmt` and waits there
    for the file it reads back inside the same `if`: `point` (`_reached_by_all`) is an `if` whose test
    may differ between processes (a clock, `if epoch % k == 0 or time.time() - last >= every:`) and
    the file is read in it, after the save. A barrier after the `if` comes too late for that read,
    and one inside it would wait for processes that skipped it. Only `if`s lie between `stmt` and
    `point` (no loop, `try` or `with`, and nothing this rewrite guards: their tests alone decide);
    the tests of those that may differ are returned, or none where agreeing cannot help."""
    if point is stmt or not isinstance(point, cst.If) or not any(
            facts.is_inside(c, point) and facts.before(stmt, c) and not facts.is_inside(c, stmt)
            and _same_file(facts, stmt, c) for c in readers):
        return []
    tests = []
    for anc in facts.ancestors(stmt):
        if isinstance(anc, cst.If):
            if not same_everywhere(facts, anc.test):
                tests.append(anc.test)
        elif isinstance(anc, (cst.For, cst.While, cst.Try, cst.TryStar, cst.With, cst.FunctionDef)):
            return []
        if anc is point:
            return tests
    return []


def _torch_with(facts: Facts, block: cst.With) -> bool:
    """`with torch.no_grad():` (`torch.autocast(...)`, `torch.inference_mode()`): torch's context
    managers swallow nothing that their body raises; nor does a tracker's run (`with
    mlflow.start_run() as run:`, `RUNS_OPENED`: ended, and the exception raised on)."""
    return all(isinstance(item.item, cst.Call) and ((facts.qualify(item.item.func) or "").startswith("torch.")
                                                    or facts.qualify(item.item.func) in RUNS_OPENED)
               for item in block.items)


def _barrier_follows(facts: Facts, point: cst.CSTNode, others: set[cst.CSTNode], epoch_loops: list[EpochLoop]) -> bool:
    """Does a barrier come right after `point` anyway: another write's, or the `end_epoch()` that
    ends the body of one of the `epoch_loops` set-epoch edits?"""
    owner = facts.parent(facts.parent(point))
    body = list(facts.parent(point).body)
    if body.index(point) + 1 < len(body):
        return body[body.index(point) + 1] in others
    return any(entry.loop is owner for entry in epoch_loops)


PICTURE_READERS = frozenset({"PIL.Image.open", "matplotlib.pyplot.imread", "cv2.imread", "imageio.imread",
                             "imageio.v2.imread", "imageio.v3.imread", "skimage.io.imread", "torchvision.io.read_image"})
READERS = {"torch.load", "pickle.load", "json.load", "numpy.load", "numpy.loadtxt", "pandas.read_csv",
           "pandas.read_json", "pandas.read_pickle", "yaml.safe_load", "yaml.load", *PICTURE_READERS,
           # archives, tables, arrays, audio and models read from a path the program may have just written
           "zipfile.ZipFile", "tarfile.open", "joblib.load", "numpy.genfromtxt", "pandas.read_excel",
           "pandas.read_parquet", "pandas.read_table", "pandas.read_feather", "scipy.io.loadmat", "h5py.File",
           "soundfile.read", "librosa.load", "torchaudio.load", "torch.jit.load"}
PICTURE_WRITES = frozenset({"torchvision.utils.save_image", "matplotlib.pyplot.savefig", "matplotlib.pyplot.imsave",
                            "imageio.imwrite", "imageio.imsave", "imageio.mimwrite", "imageio.mimsave",
                            "imageio.v2.imwrite", "imageio.v2.mimwrite", "imageio.v3.imwrite", "scipy.misc.imsave",
                            "skimage.io.imsave", "cv2.imwrite"})


def _name_untold_items(facts: Facts, edits: Edits, writers: AbstractSet[cst.FunctionDef]) -> None:
    """A TODO where a method is called on an item of a container whose items ddpify cannot tell
    (`self.agents.extend(make_agents())`, `self.agents += [...]`, a list passed in), the call runs
    no function ddpify can name, and a class of the program has a method of that name that only
    writes files (`DDPG.save`): if that is what runs, every process writes the files."""
    for call in facts.calls:
        func = call.func
        if not isinstance(func, cst.Attribute) or facts.user_functions(call):
            continue
        saving = [f for f in writers if f.name.value == func.attr.value and facts.enclosing_class(f) is not None]
        untold = [c for c in facts.item_containers(func.value) if not facts.items_told(c)] if saving else []
        if untold:
            cls = facts.enclosing_class(saving[0])
            edits.todo(facts.statement(call), f"ddpify cannot tell what every item of `{facts.code(untold[0])}` is "
                       f"(items added by extend, update or +=, or a container passed in): if this runs "
                       f"{cls.name.value if cls else ''}.{func.attr.value}, which writes files, every process writes "
                       "them: guard the call with is_main_process()")


def _draws(facts: Facts, stmt: cst.CSTNode) -> bool:
    """Are the files `stmt` writes pictures only (`plt.savefig(p)`, `fig.savefig(p)`, `save_image(x, p)`)?"""
    found = [c for c in facts.calls_in(stmt) if writes.file_write(facts, c) is not None]
    return bool(found) and all(facts.qualify(c.func) in PICTURE_WRITES or
                               isinstance(c.func, cst.Attribute) and c.func.attr.value == "savefig" for c in found)


def _picture_readers(facts: Facts, readers: list[cst.Call]) -> list[cst.Call]:
    """The `readers` that may read a picture back: a picture reader (`Image.open`, `plt.imread`),
    or a file opened in binary, itself or in a function it calls, outside the methods of a data set
    and the functions only they call (`__getitem__` reads the samples the program trains on); a
    plot nothing reads so needs
    no barrier after it (a `torch.load` or a text file read later reads another file)."""
    inside: dict = {}
    return [c for c in readers if not _data_sets_own(facts, c) and _reads(facts, c, only=_reads_picture, inside=inside)]


def _data_sets_own(facts: Facts, call: cst.Call) -> bool:
    """Is `call` in a method of a data set, or in a function that only data sets' methods call
    (DiscoGAN's `pix2pix_split_images(self.root)` from its data set's `__init__`)?"""
    if writes.is_data_set(facts, facts.enclosing_class(call)):
        return True
    func = facts.scope(call)
    sites = facts.call_sites(func) if isinstance(func, cst.FunctionDef) else []
    return bool(sites) and all(writes.is_data_set(facts, facts.enclosing_class(site)) for site in sites)


# readers of what only a binary file holds: a text file written line by line is never what they read
BINARY_READERS = frozenset({"torch.load", "torch.jit.load", "pickle.load", "joblib.load", "numpy.load",
                            "pandas.read_pickle", "pandas.read_parquet", "pandas.read_feather", "zipfile.ZipFile",
                            "tarfile.open", "h5py.File", "scipy.io.loadmat", "soundfile.read", "librosa.load",
                            "torchaudio.load", *PICTURE_READERS})


def _writes_text(facts: Facts, stmt: cst.CSTNode, depth: int = 2) -> bool:
    """Does `stmt` write text files only: `with open(p, "a") as f:` (text mode), or a call of a
    helper of the program whose every file write is one (AWD-LSTM's `logging(s)`, which appends a
    line to save/log.txt)?"""
    opens = [item.item for item in stmt.items] if isinstance(stmt, cst.With) else []
    if opens:
        return all(isinstance(o, cst.Call) and mt.is_open_for_writing(o) and not _binary_mode(o) for o in opens)
    helpers = [f for c in facts.calls_in(stmt) for f in facts.user_functions(c)]
    if not helpers or depth == 0 or any(writes.file_write(facts, c) is not None for c in facts.calls_in(stmt)):
        return False
    inner = [w for f in helpers for w in facts.findall(f, (cst.With, cst.SimpleStatementLine))
             if isinstance(w, cst.With) and any(mt.opens_for_writing(i.item) for i in w.items)
             or isinstance(w, cst.SimpleStatementLine) and any(writes.file_write(facts, c) is not None
                                                               for c in facts.calls_in(w))]
    return bool(inner) and all(_writes_text(facts, w, depth - 1) for w in inner)


def _binary_mode(call: cst.Call) -> bool:
    mode = mt.keyword(call, "mode") or mt.positional(call, 1)
    return mode is None or not isinstance(mode.value, cst.SimpleString) or "b" in mode.value.value


def _text_readers(facts: Facts, readers: list[cst.Call]) -> list[cst.Call]:
    """The `readers` that may read a text file back: all but the readers of a binary file only
    (`torch.load`, `pickle.load`, ...: `BINARY_READERS`) and `open(p, "rb")`, itself or in the
    functions it calls. A log appended to line by line (`logging(s)`) needs no barrier where the
    program only reads checkpoints after it."""
    inside: dict = {}
    return [c for c in readers if _reads(facts, c, only=_reads_text, inside=inside)]


def _reads_text(facts: Facts, call: cst.Call) -> bool:
    if facts.qualify(call.func) in BINARY_READERS:
        return False
    if mt.is_call_of(call, "open"):
        mode = mt.keyword(call, "mode") or mt.positional(call, 1)
        return not mt.is_open_for_writing(call) and not (
            mode is not None and isinstance(mode.value, cst.SimpleString) and "b" in mode.value.value)
    return facts.qualify(call.func) in READERS


def _reads_picture(facts: Facts, call: cst.Call) -> bool:
    mode = mt.keyword(call, "mode") or mt.positional(call, 1)
    return facts.qualify(call.func) in PICTURE_READERS or mt.is_call_of(call, "open") and mode is not None \
        and isinstance(mode.value, cst.SimpleString) and "b" in mode.value.value and not mt.is_open_for_writing(call)


def _may_read_back(facts: Facts, stmt: cst.CSTNode, readers: list[cst.Call]) -> list[cst.Call]:
    """The `readers` that may read what the save `stmt` writes: of a picture, the picture readers;
    of a text file written line by line, the text readers; and of those, the ones whose path may name
    a file `stmt` writes (`writes.other_files`: AWD-LSTM's `logging(s)`, appending to
    `os.path.join(CKPT_DIR, 'log.txt')`, is never what its corpus's `open(path)` reads, given
    `os.path.join(path, 'train.txt')`)."""
    chosen = _picture_readers(facts, readers) if _draws(facts, stmt) else \
        _text_readers(facts, readers) if _writes_text(facts, stmt) else readers
    written = writes.written_paths(facts, stmt)
    return chosen if written is None else [c for c in chosen if not _reads_other_files(facts, written, c)]


def _reads_other_files(facts: Facts, written: list[cst.BaseExpression], call: cst.Call, depth: int = 1) -> bool:
    """Does the read `call` read none of the files at the paths `written`: a read whose path names
    another file, or a call of the program's functions whose every read does (`depth` calls deep)?"""
    if _reads(facts, call, 0):
        return writes.other_files(facts, written, writes.read_path(facts, call))
    inner = [c for f in facts.user_functions(call) for c in facts.calls_in(f) if _reads(facts, c, depth - 1)] \
        if depth > 0 else []
    return bool(inner) and all(_reads_other_files(facts, written, c, depth - 1) for c in inner)


def _standard_stream(assign: cst.Assign | cst.AnnAssign) -> str | None:
    """`sys.stdout` (or `sys.stderr`) where `assign` replaces it (`sys.stdout = Logger(path)`, a tee
    into a log file): the other processes keep that stream, not None, which every later
    `sys.stdout.write()` or `.flush()` (tqdm's, a logging handler's) would crash on."""
    targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
    names = {dotted(t) for t in targets}
    return next((n for n in ("sys.stdout", "sys.stderr") if names == {n}), None)


def _read_before_the_point(facts: Facts, stmt: cst.CSTNode, point: cst.CSTNode,
                           readers: list[cst.Call]) -> cst.Call | None:
    """A read of what the save `stmt` writes that runs after it but inside `point`, the statement
    around it after which the barrier goes (`_reached_by_all`): `with FileLock(...): torch.save(state,
    path); model.load_state_dict(torch.load(path))`. The barrier after `point` comes after that read,
    so another process may read the file before the main process writes it. None where no such read."""
    return next((c for c in readers if facts.is_inside(c, point) and not facts.is_inside(c, stmt)
                 and facts.before(stmt, c) and _same_file(facts, stmt, c) and not facts.apart(stmt, c)), None)


def _read_back_later(facts: Facts, stmt: cst.CSTNode, readers: list[cst.Call]) -> bool:
    """Does the write's function read a file after it (`torch.load`, `pickle.load`, `open(path)`,
    ...; `readers`: the calls that read one)? The other processes must then wait for the main
    process's write. Not a read in another branch of an `if` around the write (`Facts.apart`: a
    training run saves, an inference run of the same script loads)."""
    scope = facts.scope(stmt)
    if any(facts.scope(c) is scope and facts.before(stmt, c) and not facts.is_inside(c, stmt) and _same_file(facts, stmt, c)
           and not facts.apart(stmt, c) for c in [*readers, *_reading_through(facts, scope, readers)]):
        return True
    # `def save(): torch.save(net, "net.pkl")` and `def restore(): torch.load("net.pkl")`, called in
    # turn: a read in another function, where every call of the writing one runs on every process,
    # called after a call of the writing one (`restore()` reads through its body), or before it in a
    # loop around both (the next round reads it). Not any read of the program (a data set's
    # `Image.open` in `__getitem__` after a save in `main()`: nothing waits for that file)
    sites = [facts.statement(c) for c in facts.call_sites(scope)] if isinstance(scope, cst.FunctionDef) else []
    return bool(sites) and all(_reached_by_all(facts, site) is site for site in sites) and \
        _read_after_a_call(facts, scope, readers)


def _read_after_a_call(facts: Facts, func: cst.FunctionDef, readers: list[cst.Call], depth: int = 4) -> bool:
    """Does a read run after a call of `func`: in the caller's function, after the call (`_runs_after`),
    or after a call of that function in turn (an early stopper's `__call__` saving through
    `save_checkpoint()`, the script reloading the best weights after the training function returns)?"""
    for site in (facts.statement(c) for c in facts.call_sites(func)):
        if any(_runs_after(facts, site, c) for c in [*readers, *_reading_through(facts, facts.scope(site), readers)]):
            return True
        caller = facts.scope(site)
        if depth > 0 and isinstance(caller, cst.FunctionDef) and caller is not func \
                and _read_after_a_call(facts, caller, readers, depth - 1):
            return True
    return False


def _reading_through(facts: Facts, scope: cst.CSTNode, readers: list[cst.Call], depth: int = 3) -> list[cst.Call]:
    """The calls `scope` runs itself that reach one of `readers` through the program's functions
    they call, up to `depth` calls deep (`train()` after `make_vocab()`, whose body calls
    `get_vocab()`, which opens the vocabulary `make_vocab` wrote): a read below the call too.
    Whether a function reads within so many calls is kept per function for the same `readers`:
    every save of a function, and every caller of it (`_read_after_a_call`), asks of its calls again."""
    reading = frozenset(readers)
    memo: dict[tuple[cst.FunctionDef, int], bool] = facts.__dict__.setdefault("_reads_within", {}).setdefault(reading, {})

    def reads_within(func: cst.FunctionDef, calls: int) -> bool:
        """Does `func` read itself, or through the functions it calls, within `calls` calls?"""
        if (func, calls) not in memo:
            memo[func, calls] = any(c in reading for c in facts.calls_in(func)) or calls > 1 and any(
                reads_within(g, calls - 1) for c in facts.calls_in(func) for g in facts.user_functions(c))
        return memo[func, calls]
    return [call for call in facts.calls_of(scope) if any(reads_within(f, depth) for f in facts.user_functions(call))]


def _runs_after(facts: Facts, site: cst.CSTNode, call: cst.Call) -> bool:
    """Does `call` run after the statement `site` in its function: below it, or anywhere in a loop
    of that function around both?"""
    if facts.scope(call) is not facts.scope(site) or facts.is_inside(call, site) or not _same_file(facts, site, call) \
            or facts.apart(site, call):
        return False
    return facts.before(site, call) or any(isinstance(loop, (cst.For, cst.While)) and facts.is_inside(call, loop)
                                           for loop in facts.ancestors(site))


def _same_file(facts: Facts, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """Are `a` and `b` in one file of the program? At the top of its merged module a module the
    entry imports comes after the entry's code, but its top level runs at the import, before."""
    program = facts.program
    return program is None or program.part_of(a, facts.parents) is program.part_of(b, facts.parents)


def _reads(facts: Facts, call: cst.Call, depth: int = 1,
           only: Callable[[Facts, cst.Call], bool] | None = None, inside: dict | None = None) -> bool:
    """A call that reads a file, itself or in a function of this file it calls (`restore()`);
    with `only`, a read that `only(facts, call)` accepts. Not a read of an in-memory buffer
    (`Image.open(buf)` after `plt.savefig(buf)`, `buf = io.BytesIO()`): no file. `inside`: where
    the caller asks of many calls, what it found of each function's own calls, kept there (a
    helper that every step calls is read once, not once per call of it)."""
    source = mt.positional(call, 0)
    if source is not None and writes.in_memory(facts, source.value):
        return False
    if only(facts, call) if only is not None else \
            facts.qualify(call.func) in READERS and not mt.opens_for_writing(call) or \
            mt.is_call_of(call, "open") and not mt.is_open_for_writing(call):
        return True
    return depth > 0 and any(_reads_inside(facts, f, depth - 1, only, inside) for f in facts.user_functions(call))


def _reads_inside(facts: Facts, func: cst.FunctionDef, depth: int, only: Callable[[Facts, cst.Call], bool] | None,
                  inside: dict | None) -> bool:
    """Does a call of `func`'s own read a file (`_reads`, `depth` calls deeper), kept in `inside`?"""
    known = inside.get((func, depth)) if inside is not None else None
    if known is None:
        known = any(_reads(facts, c, depth, only, inside) for c in facts.calls_in(func))
        if inside is not None:
            inside[func, depth] = known
    return known


# what a disabled tqdm bar still answers (its __init__ returns before it sets up the rest: `display()`
# reads `self.nrows`, which a disabled bar lacks)
BAR_SAFE = frozenset({"update", "close", "set_description", "set_description_str", "set_postfix", "set_postfix_str",
                      "refresh", "clear", "reset", "unpause", "write", "__iter__", "__enter__", "__exit__"})


def _drawing_on_bar(facts: Facts, bar: cst.Call) -> list[cst.CSTNode]:
    """The statements that call a method a disabled bar lacks on the name `bar` is bound to
    (`progress_bar = trange(n)`, then `progress_bar.display(text, 1)`): each is a statement of its own."""
    assign = facts.parent(bar)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or dotted(assign.targets[0].target) is None:
        return []
    ref = facts.ref(assign.targets[0].target, assign)
    found = []
    for call in facts.calls_in(facts.scope(bar)):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value not in BAR_SAFE and dotted(func.value) is not None \
                and facts.ref(func.value) == ref and ref is not None:
            stmt = facts.statement(call)
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
                    and stmt.body[0].value is call:
                found.append(stmt)
    return found


def _disable_bar(facts: Facts, edits: Edits, bar: cst.Call, disable: Given, combined: set[cst.CSTNode]) -> bool:
    """Show the bar `bar` makes on the main process only; True where it is edited. A bar the program
    passes no `disable` gets `disable=not is_main_process()`; a `disable` it passes is kept and
    combined with it where it is written, in the call or in the mapping the call unpacks (`disable`
    given twice was a TypeError on every process: disentangling-vae's trainer, 25c; decision 0206):

        kwargs = dict(leave=False, disable=not self.is_progress_bar)
        with trange(len(data_loader), **kwargs) as t:
    ->
        kwargs = dict(leave=False, disable=not self.is_progress_bar or not is_main_process())
        with trange(len(data_loader), **kwargs) as t:

    (a value the program writes out is edited where it is written: the least surprising place, the
    one a reader looks at). A `**` mapping whose keys are not all known may pass one too: the call
    then unpacks `{"disable": not is_main_process(), **opts}` in its place, a default its own entry
    replaces (`build.add_keyword`): no second `disable`, and the program's wins where it has one.
    Left as they are: a bar the program disables everywhere (`disable=True`), or by its own rank
    test (`disable=rank != 0`)."""
    told = [v for v in disable.values if not mt.is_literal_true(v) and not is_rank_test(facts, v)]
    if disable.values and not told and disable.known:
        return False
    for value in told:
        if value not in combined:
            combined.add(value)
            edits.replace(value, lambda node: build.either(node, f"not {GUARD}"),
                          "progress bar shown on the main process only: the program's `disable` and not "
                          "is_main_process()")
    if not disable.known:
        edits.replace(bar, lambda node: build.add_keyword(node, "disable", f"not {GUARD}", spread=True),
                      "progress bar shown on the main process only, unless the mapping it unpacks says otherwise "
                      "(its keys are not known here)")
    elif not disable.values:
        edits.replace(bar, lambda node: build.add_keyword(node, "disable", f"not {GUARD}"),
                      "progress bar shown on the main process only")
    return True


# what a bar has counted: a disabled bar's `update()` returns before it counts, so `pbar.n` stays at its start
BAR_COUNTS = frozenset({"n", "last_print_n", "format_dict"})


def _counts_read(facts: Facts, bar: cst.Call) -> bool:
    """Does the program read what the bar `bar` makes has counted (`while pbar.n < total_steps:`,
    `if (pbar.n + 1) % log_every == 0:`, in a function the bar is handed to)? Disabled on the
    other processes, it would read its start there for ever."""
    return any(node.attr.value in BAR_COUNTS and _holds(facts, node.value, bar)
               for node in facts.by_type.get(cst.Attribute, ()))


def _holds(facts: Facts, expr: cst.BaseExpression, made: cst.Call, depth: int = 4) -> bool:
    """May the name `expr` hold what the call `made` returns: bound to it, or a parameter given a
    name bound to it? (The objects core reads a bar as the iterable it wraps, not as an object.)"""
    if expr is made:
        return True
    ref = facts.ref(expr) if dotted(expr) is not None else None
    return ref is not None and depth > 0 and any(_holds(facts, s, made, depth - 1) for s in facts.sources(ref))


