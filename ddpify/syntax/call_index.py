"""The calls of a program by the functions each runs, found in one pass however often the pass is
asked for while it runs.

Resolving a call can ask which calls run a function: a parameter is typed by what its callers
pass (`def fit(trainer): trainer.step()`, `fit(Trainer())`), and a name's sources include the
arguments of its function's calls. So the index of callers is asked for while it is being built.
A pass started anew at each such question re-reads every call, kept answers included: on a large
program (diffusers' consistency-training example with the 427 files it imports) 187 passes
nested one in another, 8.9 million look-ups. Here a question asked while a pass runs continues
that pass from where it stands: it answers again only the calls whose answer is still being
found (higher on the stack, as a pass started anew would, each call's answer being kept once
found), then the calls not reached yet; the first pass to reach the end gives the index that
every later question reads, as before. Each call is answered once, whatever the nesting.

The first pass runs apart from the question that asked for it (`apart`): as if asked first, with
no answer found yet and none being found, in source order; and the answers found while it runs
(read off an index not yet complete) are dropped when it ends, so that a later question finds
them again over the whole index. Otherwise what a call runs depended on which question came
first: a parameter typed while its function's callers were still being listed, and that partial
answer kept (decision 0136)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from typing import Generic, TypeVar

Call = TypeVar("Call", bound=Hashable)
Func = TypeVar("Func", bound=Hashable)


class CallIndex(Generic[Call, Func]):
    """The calls that run each function, in source order (a call that runs a function twice is
    listed twice). `resolve(call)` answers what a call runs and keeps its answer in `kept`;
    `answering` holds the calls it is answering now; the first pass runs inside `apart()`, which
    sets aside the answers kept and being found and drops those found inside it."""

    def __init__(self, calls: Sequence[Call], resolve: Callable[[Call], list[Func]], kept: dict[Call, object],
                 answering: dict[Call, int], apart: Callable[[], AbstractContextManager[object]]) -> None:
        self._calls = calls
        self._apart = apart
        self._resolve = resolve
        self._kept = kept
        self._answering = answering
        self._position: dict[Call, int] = {call: i for i, call in enumerate(calls)}
        self._index: dict[Func, list[Call]] = {}
        self._recorded: dict[Call, list[Func]] = {}
        self._next = 0  # the first call no pass has reached
        self._passes = 0  # the passes running, one in another
        self._done = False  # a pass reached the end
        self.partial_reads = 0  # the questions answered while a pass runs (with an index not complete)

    def sites(self, func: Func) -> list[Call]:
        """The calls that run `func` (a copy while a pass still runs: it may record more)."""
        if not self._done and not self._passes:
            with self._apart():
                self._run()
        elif not self._done:
            self._run()
        found = self._index.get(func, [])
        if self._passes:
            self.partial_reads += 1
            return list(found)
        return found

    def _run(self) -> None:
        self._passes += 1
        try:
            # the calls reached whose answer is still being found (on the stack above: none kept yet),
            # then those not reached yet
            again = sorted(self._position[c] for c in self._answering
                           if c not in self._kept and self._position.get(c, self._next) < self._next)
            for i in again:
                self._record(self._calls[i])
            while self._next < len(self._calls):
                self._next += 1
                self._record(self._calls[self._next - 1])
            self._done = True
        finally:
            self._passes -= 1

    def _record(self, call: Call) -> None:
        funcs = self._resolve(call)
        old = self._recorded.get(call)
        if old == funcs:
            return
        for func in old or ():
            self._index[func].remove(call)
        for func in funcs:
            sites = self._index.setdefault(func, [])
            sites.append(call)
            if len(sites) > 1 and self._position[sites[-2]] > self._position[call]:
                sites.sort(key=self._position.__getitem__)  # (stable: a call listed twice stays together)
        self._recorded[call] = list(funcs)
