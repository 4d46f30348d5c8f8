"""What the recursive rank questions are following, so that an answer can be kept and reused.

`Ranks.rank_dependent` follows a name to what it holds, a call to what its function returns, a
property to what it returns; `SameValues` follows a name to where it is bound. Each keeps the
keys it is following in a set, and a cycle through one of them adds nothing (the key, met again,
answers no). So an answer depends on what is being followed when it is asked: the same test
asked from two places can be answered differently. `Cycles` lets such an answer be kept anyway:

    asked = cycles.start()              # where this question's look-ups begin
    answer = ...                        # every look-up goes through cycles.held(key, following)
    kept = cycles.keep(asked)           # the keys it looked up, or None where one was held (a cut)
    ...
    cycles.reusable(kept)               # later: is none of those keys held now?

An answer computed with no cut, asked again where none of the keys it looked up is being
followed, is what the computation would give again: every look-up answers as it did, every
other kept answer it reads is the same (a kept answer is written once; `Ranks.rank_test`
counts a look-up of its own answer while it is computed as a cut). Before 0027's round 6,
`rank_dependent` re-expanded each name for every test: DomainBed's 54 rank tests made 31,172
calls for 398 distinct questions."""

from __future__ import annotations

from collections.abc import Hashable


class Cycles:
    """The sets of keys being followed, one per question that follows them, and the log of the
    keys looked up (`held`) since the outermost kept question began."""

    def __init__(self) -> None:
        self._sets: list[set] = []
        self._asked: list[Hashable] = []
        self._cuts = 0
        self._open = 0  # questions under way: the log is cleared when none is

    def following(self) -> set:
        """A new set of keys being followed, watched by `reusable`."""
        found: set = set()
        self._sets.append(found)
        return found

    def held(self, key: Hashable, following: set) -> bool:
        """Is `key` being followed (in `following`)? The look-up is logged; a yes is a cut."""
        self._asked.append(key)
        if key in following:
            self._cuts += 1
            return True
        return False

    def cut(self) -> None:
        """A look-up of an answer that is still being computed (it may change): like a cut."""
        self._cuts += 1

    def start(self) -> tuple[int, int]:
        """Begin a question: where its look-ups begin in the log, and the cuts so far."""
        if not self._open:
            self._asked.clear()
        self._open += 1
        return len(self._asked), self._cuts

    def keep(self, started: tuple[int, int]) -> frozenset | None:
        """End the question begun at `started`: the keys it looked up (those of the questions it
        asked, kept or not, included), or None where it cut a cycle, when its answer is not kept."""
        self._open -= 1
        start, cuts = started
        asked = frozenset(self._asked[start:])
        del self._asked[start:]
        self._asked.extend(asked)  # the enclosing questions looked them up too
        return asked if self._cuts == cuts else None

    def reusable(self, asked: frozenset) -> bool:
        """Would the look-ups of a kept answer's question answer as they did: is none of its keys
        being followed now? Then it counts as having looked them up."""
        if not all(asked.isdisjoint(s) for s in self._sets):
            return False
        self._asked.extend(asked)
        return True
