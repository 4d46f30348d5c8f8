"""launcher-arg: accept the argument `torch.distributed.launch` passes.

`python -m torch.distributed.launch` passes `--local-rank=N` (torch >= 2.0; `--local_rank`
before), and a parser that does not know it exits with "unrecognized arguments". torchrun
passes nothing. Both spellings go on the parser; the process's GPU is read from `LOCAL_RANK`.

    parser.add_argument("--lr", type=float, default=1.0)
    args = parser.parse_args()
->
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help=...)
    args = parser.parse_args()

An option of the script that abbreviates two or more of torchrun's own (`--log`: `--log-dir`,
`--logs-specs`) is named: launched as `torchrun ... train.py --log d`, torchrun's parser stops at it
("ambiguous option") before the script starts; `ddpify run` passes the script's arguments after `--`.

A parser that knows one spelling gets the other under the same `dest`; a parser built by a
helper (`get_parser().parse_args()`) gets them before the helper's `return parser`. A parser built at
module level and parsed in a function (which may run more than once: `get_args()` called by the
entry and again on import of a logger module) gets them at module level, after its last statement
there: argparse refuses a flag added twice.

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float)
    def get_args():
        return parser.parse_args()
->
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float)
    parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help=...)
    def get_args():
        return parser.parse_args()

A script that reads the parsed namespace as a whole (`cfg = vars(args)`, `args.__dict__`: a
configuration built from every option, which a key it does not know may break, `override_cfg()`
raising on one) gets the option without a default: argparse then leaves it out of the namespace
unless the launcher passes it.

    args = parser.parse_args()
    cfg = vars(args)
->
    parser.add_argument("--local-rank", "--local_rank", type=int, default=SUPPRESS, help=...)
    args = parser.parse_args()
    cfg = vars(args)

Scripts without argparse get nothing: torchrun needs no argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddpify.syntax import matchers as mt
from ddpify.syntax.names import dotted

if TYPE_CHECKING:
    from ddpify.analysis.result import Analysis
    from ddpify.syntax.facts import Facts
    from ddpify.output.edits import Edits
    from ddpify.options import Options

NAME = "launcher-arg"
SUMMARY = "accept --local-rank/--local_rank from torch.distributed.launch on the script's argparse parser"

ADD = ('{parser}.add_argument("--local-rank", "--local_rank", type=int, default=0, '
       'help="set by torch.distributed.launch")')
ABSENT = ('{parser}.add_argument("--local-rank", "--local_rank", type=int, default=SUPPRESS, '
          'help="set by torch.distributed.launch")')
ALIAS = ('{parser}.add_argument("{flag}", dest="local_rank", type=int, '
         'help="set by torch.distributed.launch")')


# torchrun's long options (torch.distributed.run's parser): a script option that starts two or more
# of them, and is none of them, stops torchrun before it starts the script
TORCHRUN_OPTIONS = frozenset(f"--{name}{variant}" for name, variants in {
    "duplicate": ("-stderr-filters", "-stdout-filters", "_stderr_filters", "_stdout_filters"),
    "event": ("-log-handler", "_log_handler"), "help": ("",), "local": ("-addr", "-ranks-filter", "_addr", "_ranks_filter"),
    "log": ("-dir", "_dir", "s-specs", "s_specs"), "master": ("-addr", "-port", "_addr", "_port"),
    "max": ("-restarts", "_restarts"), "module": ("",), "monitor": ("-interval", "_interval"), "nnodes": ("",),
    "no": ("-python", "_python"), "node": ("-rank", "_rank"), "nproc": ("-per-node", "_per_node"),
    "numa": ("-binding", "_binding"), "rdzv": ("-backend", "-conf", "-endpoint", "-id", "_backend", "_conf", "_endpoint", "_id"),
    "redirects": ("",), "role": ("",), "run": ("-path", "_path"), "shutdown": ("-timeout", "_timeout"),
    "signals": ("-to-handle", "_to_handle"), "standalone": ("",), "start": ("-method", "_method"), "tee": ("",),
    "virtual": ("-local-rank", "_local_rank"),
}.items() for variant in variants)


def rewrite(analysis: Analysis, edits: Edits, options: Options) -> None:
    facts = analysis.facts
    _torchrun_abbreviations(facts, edits)
    done: set[str] = set()
    for call in mt.parse_args_calls(facts):
        found = _parser(facts, call)
        if found is None or found[0] in done:
            continue
        parser, stmt = found
        done.add(parser)
        known = _known_flags(facts, parser)
        whole = not known and _read_whole(facts, call)
        if whole:
            line = cst.parse_statement(ABSENT.format(parser=parser) + "\n")
            edits.add_import("argparse", "SUPPRESS")
        elif not known:
            line = cst.parse_statement(ADD.format(parser=parser) + "\n")
        elif len(known) == 1:  # one spelling only: the other joins it under the same dest
            missing = ({"--local-rank", "--local_rank"} - known).pop()
            line = cst.parse_statement(ALIAS.format(parser=parser, flag=missing) + "\n")
        else:
            continue
        top = _module_level_last(facts, call, parser)
        if top is not None:
            edits.insert_after(top, line)
        else:
            edits.insert_before(stmt, line)
        edits.record(stmt, f"`{parser}` accepts --local-rank/--local_rank (passed by torch.distributed.launch)"
                     + (", left out of the namespace unless passed: the script reads it as a whole" if whole else ""))


def _parser(facts: Facts, call: cst.Call) -> tuple[str, cst.CSTNode] | None:
    """The parser's name, and the statement before which it still exists: `parser.parse_args()`,
    or `get_parser().parse_args()` where the helper ends with `return parser`."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    name = dotted(receiver) if receiver is not None else None
    if name is not None:
        return name, facts.statement(call)
    if isinstance(receiver, cst.Call):
        for func in facts.user_functions(receiver):
            for ret in facts.returns:
                if facts.scope(ret) is func and isinstance(ret.value, cst.Name):
                    return ret.value.value, facts.statement(ret)
    return None


def _module_level_last(facts: Facts, call: cst.Call, parser: str) -> cst.CSTNode | None:
    """For a parser of the module parsed inside a function, its last top-level statement in that
    file (its binding or an `add_argument`), after which the arguments go once; else None."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    ref = facts.ref(receiver) if receiver is not None else None
    if type(facts.scope(call)) is not cst.FunctionDef or ref is None or ref.scope is not facts.module:
        return None
    head = parser.split(".")[0]
    program = facts.program
    home = program.part_of(call, facts.parents) if program is not None else None
    top = [stmt for stmt in facts.module.body if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
           and facts.has_name(stmt, head) and facts.before(stmt, call)
           and (program is None or program.part_of(stmt, facts.parents) is home)]
    return top[-1] if top else None


def _torchrun_abbreviations(facts: Facts, edits: Edits) -> None:
    """Warn at each `add_argument` of an option torchrun's parser would take for an abbreviation of
    two or more of its own (and stop on). Where an `add_argument` takes its flags from a starred
    argument (the pytorch-template's `args.add_argument(*opt.flags, ...)` over a list of
    `CustomArgs(['--e', '--epoch'], ...)`), the option strings written in lists and tuples of the
    program stand for them, each named where it is written."""
    adds = [c for c in facts.calls_named("add_argument") if isinstance(c.func, cst.Attribute)]
    flags: list[tuple[cst.SimpleString, cst.CSTNode]] = [
        (a.value, c) for c in adds for a in c.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
    if any(a.star == "*" for c in adds for a in c.args):
        flags += [(e.value, e.value) for seq in facts.findall(facts.module, (cst.List, cst.Tuple))
                  for e in seq.elements if isinstance(e.value, cst.SimpleString)]
    for literal, at in flags:
        flag = literal.evaluated_value
        if not isinstance(flag, str) or not flag.startswith("--") or flag in TORCHRUN_OPTIONS:
            continue
        theirs = sorted(o for o in TORCHRUN_OPTIONS if o.startswith(flag))
        if len(theirs) >= 2:
            edits.warn(facts.statement(at), (
                f"torchrun stops at `{flag}` before it starts the script: its parser takes it for an abbreviation "
                f"of its own {', '.join(theirs)} (\"ambiguous option\"); pass the script's arguments after `--` "
                f"(torchrun ... SCRIPT -- {flag} ...), as `ddpify run` does"))


def _read_whole(facts: Facts, call: cst.Call) -> bool:
    """Does the program read the namespace `call` returns as a whole: `vars(x)` or `x.__dict__`
    where `x` comes from it (by names, calls and returns: `facts.origins`)?"""
    readers = [c.args[0].value for c in facts.calls_named("vars") if len(c.args) == 1 and mt.is_name(c.func, "vars")]
    readers += [a.value for a in facts.attributes_named("__dict__")]
    return any(call in facts.origins(reader) for reader in readers)


def _known_flags(facts: Facts, parser: str) -> set[str]:
    """The spellings of the launcher argument the parser already defines."""
    known: set[str] = set()
    for call in facts.calls_named("add_argument"):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument" \
                and dotted(call.func.value) == parser:
            known |= {flag for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)
                      and isinstance(flag := a.value.evaluated_value, str)}
    return known & {"--local-rank", "--local_rank"}
