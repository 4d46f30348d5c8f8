"""main-process-only: write files once, from the main process.

    torch.save(model.state_dict(), "model.pt")
    with open("log.csv", "a") as f:
        f.write(row)
    for x, y in tqdm(train_loader):
->
    if is_main_process():
        torch.save(model.state_dict(), "model.pt")
        with open("log.csv", "a") as f:
            f.write(row)
    for x, y in tqdm(train_loader, disable=not is_main_process()):

Guarded: `torch.save`, files opened for writing, json/pickle/numpy dumps, `shutil` copies,
`savefig`, `save_image`, wandb calls and `SummaryWriter` logging (the writer is None elsewhere).
A helper that only writes (`save_checkpoint(...)`) is guarded where it is called, and an `if`
whose body only writes takes the condition (`if args.save_model and is_main_process():`).
`os.makedirs` stays on every process (harmless), as do forward passes: a model call under a
rank guard would deadlock DDP, so one inside a guarded write goes through `.module`. When a
later `torch.load` in the same function reads what was saved, a `barrier()` follows the save.
`print` needs nothing: the runtime silences it off the main process.
"""

from __future__ import annotations

import libcst as cst

from ddpify import build
from ddpify import matchers as mt
from ddpify.models import holds_wrapper
from ddpify.names import dotted

NAME = "main-process-only"
SUMMARY = "run file writes (checkpoints, logs, wandb, TensorBoard) and progress bars on the main process only"

GUARD = "is_main_process()"
WRITERS = {
    "torch.save", "json.dump", "pickle.dump", "numpy.save", "numpy.savez", "numpy.savetxt",
    "numpy.savez_compressed", "shutil.copyfile", "shutil.copy", "shutil.copy2", "shutil.move",
    "torchvision.utils.save_image", "matplotlib.pyplot.savefig", "wandb.init", "wandb.log",
    "wandb.save", "wandb.finish", "wandb.watch", "os.mkdir",
}
WRITER_METHODS = {"savefig", "to_csv", "save_pretrained"}
LOGGERS = {"torch.utils.tensorboard.SummaryWriter", "tensorboardX.SummaryWriter", "wandb.init"}


def rewrite(facts, edits, options) -> None:
    loggers = _logger_refs(facts)
    writes = {stmt: what for stmt in _statements(facts) if (what := _writes(facts, stmt, loggers))}
    writers = _writer_functions(facts, writes)
    for call in facts.calls:  # a helper that only writes files is guarded where it is called
        stmt = facts.statement(call)
        if isinstance(stmt, cst.SimpleStatementLine) and any(f in writers for f in facts.user_functions(call)):
            writes[stmt] = f"{dotted(call.func)}()"
    saves = []
    for stmt, what in list(writes.items()):
        if facts.scope(stmt) in writers or _already_guarded(facts, stmt, writes):
            continue
        needed = _bound_and_used_later(facts, stmt)
        if needed:
            edits.todo(stmt, f"every process writes this file, because the block also sets `{needed}`, used "
                       "below: compute that outside the block and guard the write with is_main_process()")
            continue
        if what == "torch.save" or any(facts.qualify(c.func) == "torch.save" for c in facts.calls_in(stmt)):
            saves.append(stmt)  # also `with open(path, "wb") as f: torch.save(model, f)`
        owner = _sole_body_of_if(facts, stmt, writes)
        if owner is not None:  # `if args.save_model: torch.save(...)` -> `if args.save_model and ...:`
            edits.replace(owner.test, _and_main, f"{what} runs on the main process only")
            writes[owner] = what
            continue
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(assign, cst.Assign) and _is_logger(facts, assign.value):
            edits.replace(assign.value, lambda node: cst.IfExp(
                test=cst.parse_expression(GUARD), body=node, orelse=cst.Name("None")),
                f"{what} created on the main process only (None elsewhere)")
        else:
            edits.guard(stmt, GUARD, f"{what} runs on the main process only")
        _forward_through_module(facts, edits, stmt)
    for stmt in saves:
        if _read_back_later(facts, stmt):
            edits.insert_after(stmt, "barrier()\n")
            edits.add_import("ddpify_runtime", "barrier")
            edits.record(stmt, "barrier() after the save: the file is read back below")
    for call in facts.calls:
        if facts.qualify(call.func) in ("tqdm.tqdm", "tqdm.trange") and not mt.keyword(call, "disable"):
            edits.replace(call, _disable_bar, "progress bar shown on the main process only")
            writes[call] = "tqdm"
    if writes:
        edits.add_import("ddpify_runtime", "is_main_process")


def _statements(facts):
    seen = set()
    for call in facts.calls:
        stmt = facts.statement(call)
        if isinstance(stmt, (cst.With, cst.SimpleStatementLine)) and stmt not in seen:
            seen.add(stmt)
            yield stmt


def _writes(facts, stmt, loggers) -> str | None:
    """What file-writing call `stmt` makes, or None."""
    if isinstance(stmt, cst.With):
        for item in stmt.items:
            if mt.is_open_for_writing(item.item):
                return "writing the file"
        return None
    if len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    call = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
    if not isinstance(call, cst.Call):
        return None
    qualified = facts.qualify(call.func)
    if qualified == "os.makedirs" and not mt.keyword(call, "exist_ok"):  # raced by every process
        return "os.makedirs"
    if qualified in WRITERS or _is_logger(facts, call):
        return dotted(call.func)
    if isinstance(call.func, cst.Attribute):
        if call.func.attr.value in WRITER_METHODS:
            return dotted(call.func) or call.func.attr.value
        if facts.ref(call.func.value) in loggers:
            return dotted(call.func)
    return None


def _is_logger(facts, expr) -> bool:
    return isinstance(expr, cst.Call) and facts.qualify(expr.func) in LOGGERS


def _logger_refs(facts) -> set:
    """Names holding a SummaryWriter or wandb run, also as parameters of the functions they reach."""
    refs = {facts.ref(t, s) for t, v, s in facts.assigns if _is_logger(facts, v)} - {None}
    return refs.union(*(facts.receivers(r) for r in refs))


def _bound_and_used_later(facts, stmt) -> str | None:
    """A name a compound write (`with open(...) as f:`) assigns that code after it reads."""
    if not isinstance(stmt, cst.BaseCompoundStatement):
        return None
    bound = {n.value for t, _, s in facts.assigns if facts.is_inside(s, stmt) for n in mt.findall(t, cst.Name)}
    scope = facts.scope(stmt)
    for target, value, later in facts.assigns:
        if facts.scope(later) is scope and facts.before(stmt, later) and not facts.is_inside(later, stmt):
            used = {n for n in bound if mt.references(later, n)}
            if used:
                return sorted(used)[0]
    for call in facts.calls:
        if facts.scope(call) is scope and facts.before(stmt, call) and not facts.is_inside(call, stmt):
            used = {n for n in bound if mt.references(call, n)}
            if used:
                return sorted(used)[0]
    return None


def _sole_body_of_if(facts, stmt, writes) -> cst.If | None:
    """The `if` (without `else`) whose body is nothing but file writes, `stmt` among them."""
    owner = facts.parent(facts.parent(stmt))
    if isinstance(owner, cst.If) and owner.orelse is None and all(s in writes for s in owner.body.body):
        return owner
    return None


def _and_main(test: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BooleanOperation(test, cst.And(), cst.parse_expression(GUARD))


def _forward_through_module(facts, edits, stmt) -> None:
    """A forward pass inside a statement that now runs on one process must bypass DDP, whose
    forward talks to the other processes (buffers): `torch.save(netG(z), p)` -> `netG.module(z)`."""
    for call in facts.calls_in(stmt):
        name = dotted(call.func)
        holds = holds_wrapper(facts, call.func) if name is not None else None
        if holds is not None:
            edits.replace(call.func, lambda node, holds=holds: build.bare_model(edits, node, holds),
                          f"`{name}(...)` runs on the main process only: through the bare model, "
                          "as DDP's forward would wait for the other processes")


def _already_guarded(facts, stmt, writes) -> bool:
    """Inside a rank check of the user's, or inside another statement being guarded."""
    for anc in facts.ancestors(stmt):
        if anc in writes or isinstance(anc, cst.If) and mt.is_rank_check(anc.test):
            return True
    return False


def _writer_functions(facts, writes) -> set:
    """Functions whose every statement writes, prints or computes a path: `save_checkpoint(...)`."""
    found = set()
    for funcs in facts.functions.values():
        for func in funcs:
            if not any(facts.scope(w) is func for w in writes) or facts.returned(func):
                continue
            if all(_harmless(facts, s, writes) for s in _simple_statements(func.body)):
                found.add(func)
    return found


def _simple_statements(block):
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


def _harmless(facts, stmt, writes) -> bool:
    if stmt in writes:
        return True
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    small = stmt.body[0]
    if isinstance(small, cst.Expr) and mt.is_call_of(small.value, "print"):
        return True
    return isinstance(small, cst.Assign) and not any(
        facts.user_functions(c) or dotted(c.func) and facts.ref(c.func) in facts.wrapped_refs
        for c in facts.calls_in(small))  # a helper that calls the model must run everywhere


def _read_back_later(facts, stmt) -> bool:
    scope = facts.scope(stmt)
    return any(facts.qualify(c.func) == "torch.load" and facts.scope(c) is scope and facts.before(stmt, c)
               for c in facts.calls)



def _disable_bar(node: cst.Call) -> cst.Call:
    return build.append_arg(node, build.keyword("disable", f"not {GUARD}"))
