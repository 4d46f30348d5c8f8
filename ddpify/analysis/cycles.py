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
calls for 398 distinct questions.

A cut at a key the question itself began following is its own (`keep`). An answer cut at a key
followed above it is remembered until the outermost question ends (`remember`, `recall`):
inside a cycle every answer is cut, and without it each question followed every path through
the cycle again, exponential in its size (0027's round 7: pytorch_geometric's checkout). The
outermost answer is then what following each name once gives: a name met again adds nothing
to an "any of these" question, whether it is being followed or was followed."""

from __future__ import annotations

from collections.abc import Hashable


class Cycles:
    """The sets of keys being followed, one per question that follows them, the log of the keys
    looked up (`held`) since the outermost kept question began, and the log of its cuts."""

    def __init__(self) -> None:
        self._sets: list[set] = []
        self._asked: list[Hashable] = []
        self._cuts: list[tuple[Hashable, set] | None] = []  # each cut's key and set; None: no key
        self._open = 0  # questions under way: the logs are cleared when none is
        self._provisional: dict[Hashable, bool] = {}  # answers computed with a cut, for the outermost question only

    def following(self) -> set:
        """A new set of keys being followed, watched by `reusable`."""
        found: set = set()
        self._sets.append(found)
        return found

    def held(self, key: Hashable, following: set) -> bool:
        """Is `key` being followed (in `following`)? The look-up is logged; a yes is a cut."""
        self._asked.append(key)
        if key in following:
            self._cuts.append((key, following))
            return True
        return False

    def cut(self) -> None:
        """A look-up of an answer that is still being computed (it may change): a cut that no
        question below the outermost one closes."""
        self._cuts.append(None)

    def start(self) -> tuple[int, int]:
        """Begin a question: where its look-ups and its cuts begin in the logs."""
        if not self._open:
            self._asked.clear()
            self._cuts.clear()
            self._provisional.clear()
        self._open += 1
        return len(self._asked), len(self._cuts)

    def keep(self, started: tuple[int, int]) -> frozenset | None:
        """End the question begun at `started`: the keys it looked up (those of the questions it
        asked, kept or not, included), or None where it cut a cycle that it did not start, when
        its answer is not kept. A cut at a key the question itself began following (no longer
        followed now that it ends: `x = f(x)` followed from `x`) is its own: asked again where
        none of the keys it looked up is followed, it cuts there again and answers alike."""
        self._open -= 1
        start, cuts = started
        asked = frozenset(self._asked[start:])
        del self._asked[start:]
        self._asked.extend(asked)  # the enclosing questions looked them up too
        own = all(cut is not None and cut[0] not in cut[1] for cut in self._cuts[cuts:])
        return asked if own else None

    def remember(self, key: Hashable, answer: bool) -> None:
        """Keep an answer computed with a cut (`keep` gave None) until the outermost question ends."""
        self._provisional[key] = answer

    def recall(self, key: Hashable) -> tuple[bool, bool]:
        """(True, answer) where `remember` kept one for `key` in this outermost question (the reuse
        counts as a cut: what asks it is not kept past the question either), else (False, False)."""
        if key not in self._provisional:
            return False, False
        self.cut()
        return True, self._provisional[key]

    def reusable(self, asked: frozenset) -> bool:
        """Would the look-ups of a kept answer's question answer as they did: is none of its keys
        being followed now? Then it counts as having looked them up."""
        if not all(asked.isdisjoint(s) for s in self._sets):
            return False
        self._asked.extend(asked)
        return True
