"""`ddpify check`: find the classic DDP bugs in scripts that are already distributed.

The driver parses once, builds the facts once (`Facts`, one walk) and the questions the rules
share (`Context`), runs the selected rules, drops what never runs (`branches`: code under a flag
only ever False, a helper's branch that every call's constant arguments leave out) and what `# noqa` silences, and locates what is
left (line and column from one code-generation pass). `fix` applies the safe, mechanical fixes
in one pass over the tree (`ddpify.output.edits`), and checks the result again.

Nothing here reads or writes files; the CLI does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from ddpify.output import edits as edit_set
from ddpify.check.rules import (  # noqa: F401 (importing a rule module registers its rules)
    checkpoints, collectives, devices, interactive, process_group, sampling, wrapper)
from ddpify.check import branches, job
from ddpify.check.context import Context
from ddpify.check.rule import REGISTERED, Hit, Rule
from ddpify.syntax.facts import Facts
from ddpify.syntax.lines import positions
from ddpify.syntax.parse import parse_module
from ddpify.inputs.program import Program

# every rule, in code order (reports list a line's findings in this order); importing the rule
# modules above registers them
RULES: tuple[Rule, ...] = tuple(sorted(REGISTERED.values(), key=lambda r: r.code))
CODES = {r.code: r for r in RULES}

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.I)
NOT_DISTRIBUTED = "not distributed (no torch.distributed): `ddpify convert` makes it a DDP script"
ONE_PROCESS = "one process ({}): rules about several processes skipped"
# programs whose processes a framework runs that `check` does not read (decision 0085): what it
# says instead of "not distributed", by the framework's package
FRAMEWORK_NOTES = {
    "lightning": "run by Lightning, which check does not read: its strategy (chosen by the Trainer's "
                 "arguments) starts the processes, wraps the model and shards the loaders, and it calls the "
                 "hooks and callbacks on every process; check finds bugs in torch.distributed, DDP and "
                 "accelerate code only",
    "ignite": "run by ignite's idist, which check reads only where idist.auto_model wraps a model (a DDP "
              "wrap): idist.Parallel starts the processes and idist.auto_dataloader shards the loaders; check "
              "finds bugs in torch.distributed, DDP and accelerate code only",
}
FRAMEWORK_PACKAGES = {"lightning": "lightning", "pytorch_lightning": "lightning", "ignite.distributed": "ignite"}


@dataclass(frozen=True)
class Finding:
    """One line of the report: `train.py:12:27: DDP001 message`."""

    code: str
    line: int
    column: int
    message: str
    fixable: bool = False

    def render(self, path: str) -> str:
        return f"{path}:{self.line}:{self.column}: {self.code} {self.message}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    note: str | None = None  # about the whole file (a single-GPU script), not a finding
    distributed: bool = False  # checked as DDP code (it uses torch.distributed, or a DDP script imports it)


@dataclass
class Fixed:
    output: bytes
    fixed: int  # findings fixed
    report: Report  # what is left in `output`


def select(codes_in: frozenset[str] | None = None, codes_out: frozenset[str] = frozenset()) -> tuple[Rule, ...]:
    """The rules to run: those of `codes_in` (when None: every bug rule, no advice) but not of
    `codes_out`. A code may be a prefix (`DDP01` selects DDP010 to DDP019, advice included)."""
    def matches(rule: Rule, codes) -> bool:
        return any(rule.code.startswith(c) for c in codes)
    return tuple(r for r in RULES if (r.bug if codes_in is None else matches(r, codes_in))
                 and not matches(r, codes_out))


BUGS = select()


def check(source: str | bytes, rules: tuple[Rule, ...] = BUGS, program: Program | None = None,
          imported_by_ddp: bool = False) -> Report:
    """Check one script; given the `program` it starts (ddpify.inputs.program), with the facts of every
    module it imports (a backward in trainer.py, a DDP wrap in a helper), reporting what is in
    the script itself. `imported_by_ddp`: a distributed script imports this module, so its code
    runs in every process even where it never names torch.distributed (a helper's
    `torch.load`). Raises `libcst.ParserSyntaxError` (or `SyntaxError` for bytes that do not
    decode) on code that does not parse."""
    run = _Run(source, rules, program, imported_by_ddp)
    found = {Finding(code, line, column, hit.message, hit.fix is not None) for code, hit, (line, column) in run.hits}
    return Report(in_order(found), run.note, run.context.script.distributed)


def in_order(found: Iterable[Finding]) -> list[Finding]:
    """By place, then code and message: two findings of one rule at one place (two names a
    wrapper lacks, read in one expression) come out in the same order on every run, where a
    set's order changes with the string hash seed of each process."""
    return sorted(found, key=lambda f: (f.line, f.column, f.code, f.message))


def fix(source: str | bytes, rules: tuple[Rule, ...] = BUGS, program: Program | None = None,
        imported_by_ddp: bool = False) -> Fixed:
    """Apply the fixes of the findings `# noqa` does not silence; the report is of the fixed code.
    With a `program`, `source` is its entry's code and only the entry is fixed. `imported_by_ddp`:
    as for `check`."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    run = _Run(data, rules, program, imported_by_ddp)
    fixes = [(code, hit) for code, hit, _ in run.hits if hit.fix is not None]
    if not fixes:
        return Fixed(data, 0, check(data, rules, program, imported_by_ddp))
    edits = edit_set.Edits(run.module)
    for code, hit in fixes:
        hit.fix(edits.for_rewrite(code))
    if program is None:
        code = edit_set.apply(run.module, edits, run.context.facts.parents).code
    else:
        code = edit_set.apply_part(run.module, edits, run.context.facts).code
    compile(code, "<ddpify check --fix>", "exec")  # a fix that breaks the code is our bug: write nothing
    output = code.encode(run.module.encoding)
    return Fixed(output, len(fixes), check(output, rules, program and program.with_entry(output), imported_by_ddp))


class _Run:
    """One script parsed and checked: its (code, hit, (line, column)) triples that `# noqa`
    does not silence, or the note that it is not distributed."""

    def __init__(self, source: str | bytes, rules: tuple[Rule, ...], program: Program | None = None,
                 imported_by_ddp: bool = False) -> None:
        if program is None:
            self.module = parse_module(source)
            self.context = Context(Facts(self.module), imported_by_ddp)
        else:  # the facts of the whole program; the findings of the entry's own code
            self.module = program.parts[0].module
            self.context = Context(Facts(program.merged, program), imported_by_ddp)
        self.hits: list[tuple[str, Hit, tuple[int, int]]] = []
        self.note = None
        if not self.context.script.distributed:
            imports = self.context.facts.imports
            framework = next((FRAMEWORK_NOTES[name] for package, name in FRAMEWORK_PACKAGES.items()
                              if imports.imports_module(package)), None)
            self.note = framework or (NOT_DISTRIBUTED if self.context.facts.has_training else None)
            return
        if self.context.one_process:  # what only several processes get wrong cannot happen
            self.note = ONE_PROCESS.format(self.context.one_process)
            rules = tuple(r for r in rules if not r.several)
        hits = [(rule.code, hit) for rule in rules for hit in rule.find(self.context)
                if not (rule.several and self.context.script.launcher.only(hit.node))  # one process runs it
                and not branches.never_runs(self.context.facts, hit.node)  # a branch no call takes
                and not job.outside(self.context, program, hit.node)]  # code its importer's job never runs
        if program is not None:
            parents = self.context.facts.parents
            hits = [(code, hit) for code, hit in hits if program.part_of(hit.node, parents) is program.parts[0]]
        if hits:
            located = positions(self.module, {hit.node for _, hit in hits})
            text = source if isinstance(source, str) else source.decode(self.module.encoding)
            lines = text.splitlines()  # the source as parsed: no second codegen for the noqa comments
            self.hits = [(code, hit, located[hit.node]) for code, hit in hits
                         if not _silenced(lines, located[hit.node][0], code)]


def _silenced(lines: list[str], line: int, code: str) -> bool:
    """`# noqa` (everything) or `# noqa: DDP001, DDP004` on the finding's line."""
    match = NOQA.search(lines[line - 1]) if line <= len(lines) else None
    if match is None:
        return False
    codes = match.group("codes")
    return codes is None or code.upper() in {c.strip().upper() for c in codes.split(",")}
