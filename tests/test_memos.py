"""The answers the analyses ask again and again are found once per program (decision 0027, round 7):
where a name lives (`Facts.ref`), what it may hold (`Facts.sources`), and whether a name holds
the wrapper of a program's one model (`models.holds_wrapper`, one memo for `refs`)."""

from __future__ import annotations

from collections import Counter

from ddpify.analysis.result import analyse
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module
from tests.support.env import FIXTURES


def _analysed(monkeypatch) -> tuple:
    found: Counter = Counter()
    for name in ("_ref", "_find_sources"):
        original = getattr(Facts, name)

        def counted(self, *args, _original=original, _name=name):
            found[(_name, *map(id, args))] += 1
            return _original(self, *args)
        monkeypatch.setattr(Facts, name, counted)
    return analyse(parse_module((FIXTURES / "mnist_style" / "before.py").read_bytes())), found


def test_each_name_is_placed_and_followed_once(monkeypatch):
    """The analyses of one script ask where a name lives and what it holds thousands of times
    (the corpus: 12,655 and 3,196), for a third and a quarter as many names: each is found once."""
    analysis, found = _analysed(monkeypatch)
    assert found and max(found.values()) == 1
    name = next(iter(analysis.facts.names))
    assert analysis.facts.ref(name) is analysis.facts.ref(name)


def test_a_programs_one_model_is_asked_about_with_one_memo(monkeypatch):
    """`_trained_by_methods` asked `holds_wrapper` with a new dict of its model's names, so with a
    fresh memo; for a program's only model that dict is `refs`, whose answers are kept already."""
    analysis, _ = _analysed(monkeypatch)
    assert len(analysis.models.wrapped) == 1
    assert len(analysis.facts.__dict__["_holds_answers"]) == 1
